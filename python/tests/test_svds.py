"""sla.svds / SparseTensor.svds / SparseTensor.cond against SciPy and
NumPy, and torch.autograd.gradcheck of the values and vectors."""

import os
import sys
import unittest

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sla  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data")


def rand_rect(m, n, seed):
    g = np.random.default_rng(seed)
    rows = list(range(max(m, n)))
    r = np.array([i % m for i in rows] + list(g.integers(0, m, 2 * m)))
    c = np.array([i % n for i in rows] + list(g.integers(0, n, 2 * m)))
    keys = np.unique(r * n + c)
    r, c = keys // n, keys % n
    v = g.uniform(0.5, 2.0, len(r))
    return torch.tensor(r), torch.tensor(c), torch.tensor(v)


class TestSvds(unittest.TestCase):
    def test_vs_scipy(self):
        try:
            import scipy.io
            import scipy.sparse.linalg as sl
        except ImportError:
            self.skipTest("no scipy")
        M = scipy.io.mmread(os.path.join(DATA, "lp_e226.mtx")).tocoo()
        A = sla.SparseTensor(torch.tensor(M.data), torch.tensor(M.row), torch.tensor(M.col), M.shape)
        U, S, Vh = A.svds(6)
        self.assertEqual(tuple(U.shape), (223, 6))
        self.assertEqual(tuple(Vh.shape), (6, 472))
        ref = sl.svds(M.tocsc(), 6)[1]
        np.testing.assert_allclose(S.numpy(), np.sort(ref), rtol=1e-10)
        U2, S2, Vh2 = sla.svds(A, 2, which="SM")
        sv = np.linalg.svd(M.toarray(), compute_uv=False)
        np.testing.assert_allclose(S2.numpy(), np.sort(sv)[:2], rtol=1e-8)
        self.assertAlmostEqual(float(A.cond()) / (sv[0] / sv[-1]), 1.0, places=8)

    def test_gradcheck(self):
        r, c, v = rand_rect(9, 6, 3)
        a = torch.tensor(np.random.default_rng(1).standard_normal(9))
        b = torch.tensor(np.random.default_rng(2).standard_normal(6))

        def f(vals, which):
            A = sla.SparseTensor(vals, r, c, (9, 6))
            U, S, Vh = A.svds(2, which=which)
            # sign-invariant in each (u_i, v_i)
            return (S * torch.tensor([1.0, 0.5], dtype=torch.float64)).sum() + ((a @ U) ** 2).sum() \
                + ((Vh @ b) ** 2).sum()

        for which in ("LM", "SM"):
            x = v.clone().requires_grad_(True)
            self.assertTrue(torch.autograd.gradcheck(lambda t: f(t, which), (x,), eps=1e-6, atol=1e-6,
                                                     rtol=1e-5))

    def test_errors(self):
        r, c, v = rand_rect(9, 6, 4)
        A = sla.SparseTensor(v, r, c, (9, 6))
        with self.assertRaises(ValueError):
            A.svds(6)
        with self.assertRaises(ValueError):
            A.svds(2, which="LA")


if __name__ == "__main__":
    unittest.main()
