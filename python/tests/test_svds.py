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

    def test_transpose_option(self):
        """transpose="explicit" / "scatter" / "auto": the same triplets (A^T
        applied by a gather over the explicit transpose or by a scatter)."""
        for (m, n) in [(40, 25), (25, 40)]:
            r, c, v = rand_rect(m, n, 5 + m)
            A = sla.SparseTensor(v, r, c, (m, n))
            dense = torch.sparse_coo_tensor(torch.stack([r, c]), v, (m, n)).to_dense().numpy()
            sv = np.linalg.svd(dense, compute_uv=False)
            outs = [sla.svds(A, 3, transpose=t) for t in ("scatter", "explicit", "auto")]
            for U, S, Vh in outs:
                np.testing.assert_allclose(S.numpy(), np.sort(sv[:3]), rtol=1e-11)
                np.testing.assert_allclose(np.abs(U.numpy()), np.abs(outs[0][0].numpy()), atol=1e-10)
        with self.assertRaisesRegex(ValueError, "explicit"):
            sla.svds(A, 3, transpose="gather")

    def test_errors(self):
        r, c, v = rand_rect(9, 6, 4)
        A = sla.SparseTensor(v, r, c, (9, 6))
        with self.assertRaises(ValueError):
            A.svds(6)
        with self.assertRaises(ValueError):
            A.svds(2, which="LA")

class TestSvdsBatch(unittest.TestCase):
    """A batch of value arrays on one pattern: one C call (sla_svds_batch)
    forward and one (sla_svds_batch_vjp) backward."""

    def batch(self, m, n, shape, seed):
        r, c, v = rand_rect(m, n, seed)
        g = np.random.default_rng(seed + 100)
        vals = torch.tensor(g.uniform(0.5, 2.0, tuple(shape) + (len(v),)))
        return r, c, vals

    def test_vs_numpy_per_item(self):
        for (m, n) in ((12, 8), (7, 11)):
            r, c, vals = self.batch(m, n, (2, 3), 5)
            A = sla.SparseTensor(vals, r, c, (2, 3, m, n))
            for which in ("LM", "SM"):
                U, S, Vh = A.svds(3, which=which)
                self.assertEqual(tuple(U.shape), (2, 3, m, 3))
                self.assertEqual(tuple(S.shape), (2, 3, 3))
                self.assertEqual(tuple(Vh.shape), (2, 3, 3, n))
                for i in range(2):
                    for j in range(3):
                        D = np.zeros((m, n))
                        np.add.at(D, (r.numpy(), c.numpy()), vals[i, j].numpy())
                        Ur, sr, Vr = np.linalg.svd(D)
                        idx = np.argsort(sr)[-3:] if which == "LM" else np.argsort(sr)[:3]
                        idx = idx[np.argsort(sr[idx])]  # ascending, as SciPy
                        np.testing.assert_allclose(S[i, j].numpy(), sr[idx], rtol=1e-10, atol=1e-12)
                        # vectors up to a common sign per triplet
                        cu = np.abs(np.sum(U[i, j].numpy() * Ur[:, idx], axis=0))
                        cv = np.abs(np.sum(Vh[i, j].numpy() * Vr[idx, :], axis=1))
                        np.testing.assert_allclose(cu, 1.0, atol=1e-8)
                        np.testing.assert_allclose(cv, 1.0, atol=1e-8)
                        s = np.sum(U[i, j].numpy() * Ur[:, idx], axis=0)
                        np.testing.assert_allclose(np.sign(s) * np.sum(Vh[i, j].numpy() * Vr[idx, :], axis=1),
                                                   1.0, atol=1e-8)

    def test_gradcheck_batch(self):
        r, c, vals = self.batch(9, 6, (2,), 7)
        a = torch.tensor(np.random.default_rng(3).standard_normal(9))
        b = torch.tensor(np.random.default_rng(4).standard_normal(6))
        w = torch.tensor([[1.0, 0.5], [0.3, 2.0]], dtype=torch.float64)

        def f(t, which):
            U, S, Vh = sla.SparseTensor(t, r, c, (2, 9, 6)).svds(2, which=which)
            return (S * w).sum() + ((a @ U) ** 2).sum() + ((Vh @ b) ** 2).sum()

        for which in ("LM", "SM"):
            x = vals.clone().requires_grad_(True)
            self.assertTrue(torch.autograd.gradcheck(lambda t: f(t, which), (x,), eps=1e-6, atol=1e-6,
                                                     rtol=1e-5))
            # the batch's gradient is each matrix's own
            f(x, which).backward()
            for i in range(2):
                xi = vals[i].clone().requires_grad_(True)
                U, S, Vh = sla.SparseTensor(xi, r, c, (9, 6)).svds(2, which=which)
                ((S * w[i]).sum() + ((a @ U) ** 2).sum() + ((Vh @ b) ** 2).sum()).backward()
                np.testing.assert_allclose(x.grad[i].numpy(), xi.grad.numpy(), rtol=1e-9, atol=1e-12)

    def test_batch_errors(self):
        r, c, vals = self.batch(9, 6, (3,), 8)
        A = sla.SparseTensor(vals, r, c, (3, 9, 6))
        with self.assertRaises(ValueError):
            A.svds(6)
        with self.assertRaises(ValueError):
            A.svds(0)

class TestCondGrad(unittest.TestCase):
    """A.cond() is differentiable when the values require a gradient (the
    issue's "all differentiable"): value as sla_cond2's, gradient against
    gradcheck and against central differences of numpy.linalg.cond."""

    def test_cond_grad(self):
        for (m, n) in ((9, 6), (5, 8)):
            r, c, v = rand_rect(m, n, 11)
            A0 = sla.SparseTensor(v, r, c, (m, n))
            x = v.clone().requires_grad_(True)
            A = sla.SparseTensor(x, r, c, (m, n))
            k = A.cond()
            self.assertEqual(k.shape, torch.Size([]))
            self.assertAlmostEqual(float(k) / float(A0.cond()), 1.0, places=10)

            def dense(vals):
                D = np.zeros((m, n))
                np.add.at(D, (r.numpy(), c.numpy()), vals)
                return D

            self.assertAlmostEqual(float(k) / np.linalg.cond(dense(v.numpy())), 1.0, places=9)
            k.backward()
            rng = np.random.default_rng(12)
            d = rng.standard_normal(len(v))
            h = 1e-6
            fd = (np.linalg.cond(dense(v.numpy() + h * d)) - np.linalg.cond(dense(v.numpy() - h * d))) / (2 * h)
            self.assertAlmostEqual(float(x.grad @ torch.tensor(d)), fd, delta=1e-6 * max(1.0, abs(fd)))
            self.assertTrue(torch.autograd.gradcheck(lambda t: sla.SparseTensor(t, r, c, (m, n)).cond(),
                                                     (v.clone().requires_grad_(True),), eps=1e-6, atol=1e-6,
                                                     rtol=1e-5))

    def test_cond_batch_and_rank_deficient(self):
        r, c, v = rand_rect(9, 6, 13)
        vals = torch.stack([v, 2 * v + 0.1]).requires_grad_(True)
        k = sla.SparseTensor(vals, r, c, (2, 9, 6)).cond()
        self.assertEqual(tuple(k.shape), (2,))
        for b in range(2):
            self.assertAlmostEqual(float(k[b]) / float(sla.SparseTensor(vals[b].detach(), r, c, (9, 6)).cond()),
                                   1.0, places=10)
        # a zero column: rank deficient, inf with or without a gradient
        keep = c != 5
        A = sla.SparseTensor(v[keep].clone().requires_grad_(True), r[keep], c[keep], (9, 6))
        self.assertEqual(float(A.cond()), float("inf"))
        with torch.no_grad():
            self.assertEqual(float(A.cond()), float("inf"))


if __name__ == "__main__":
    unittest.main()
