"""SparseTensorList algebra over the block diagonal against per-item and
dense (torch / NumPy / SciPy) references; gradients by gradcheck."""

import math
import os
import sys
import unittest

import numpy as np
import scipy.sparse as sp
import torch
from torch.autograd import gradcheck

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sla  # noqa: E402

F64 = torch.float64


def spd_list(sizes, seed, requires_grad=False):
    """SPD matrices with different random patterns (a diagonal shift makes
    them definite), with duplicates in item 0's COO entries."""
    rng = np.random.default_rng(seed)
    out = []
    for i, n in enumerate(sizes):
        M = sp.random(n, n, density=0.3, random_state=rng)
        M = (M + M.T + 2.0 * n * sp.eye(n)).tocoo()
        row, col, val = M.row, M.col, M.data
        if i == 0:  # a duplicate of entry 0, split in halves
            row, col = np.r_[row, row[0]], np.r_[col, col[0]]
            val = np.r_[val, val[0] / 2]
            val[0] /= 2
        out.append(sla.SparseTensor(torch.tensor(val, dtype=F64, requires_grad=requires_grad),
                                    torch.from_numpy(row.astype(np.int64)),
                                    torch.from_numpy(col.astype(np.int64)), (n, n)))
    return sla.SparseTensorList(out)


class TestListAlgebra(unittest.TestCase):
    def setUp(self):
        self.L = spd_list([5, 8, 3, 6], 1)
        self.M = spd_list([5, 8, 3, 6], 2)

    def test_sizes_and_block_diagonal(self):
        L = self.L
        self.assertEqual(L.block_sizes, [(5, 5), (8, 8), (3, 3), (6, 6)])
        self.assertEqual(L.total_shape, (22, 22))
        self.assertEqual(L.total_nnz, sum(A.nnz for A in L))
        B = L.to_block_diagonal()
        torch.testing.assert_close(B.to_dense(), torch.block_diag(*[A.to_dense() for A in L]))
        # the cached indices are reused: one C analysis of the pattern
        self.assertIs(L.to_block_diagonal().row, B.row)
        back = sla.SparseTensorList.from_block_diagonal(B, [5, 8, 3, 6])
        for a, b in zip(back, L):
            torch.testing.assert_close(a.to_dense(), b.to_dense())
        R = sla.SparseTensorList([sla.SparseTensor(torch.ones(2, dtype=F64), [0, 1], [2, 0], (2, 3)),
                                  sla.SparseTensor(torch.ones(1, dtype=F64), [0], [0], (1, 1))])
        self.assertEqual(R.total_shape, (3, 4))
        back = sla.SparseTensorList.from_block_diagonal(R.to_block_diagonal(), [(2, 3), (1, 1)])
        torch.testing.assert_close(back[0].to_dense(), R[0].to_dense())
        with self.assertRaises(ValueError):  # an entry off the diagonal blocks
            sla.SparseTensorList.from_block_diagonal(B, [6, 7, 3, 6])
        with self.assertRaises(ValueError):
            sla.SparseTensorList.from_block_diagonal(B, [5, 8, 3])

    def test_binary_vs_dense(self):
        L, M = self.L, self.M
        for got, op in ((L + M, lambda a, b: a + b), (L - M, lambda a, b: a - b),
                        (L * M, lambda a, b: a * b)):
            self.assertEqual(len(got), len(L))
            for g, a, b in zip(got, L, M):
                torch.testing.assert_close(g.to_dense(), op(a.to_dense(), b.to_dense()))
                self.assertEqual(g.shape, a.shape)
        s = torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=F64)
        for got, ref in ((L * 2.5, [2.5 * a.to_dense() for a in L]),
                         (2.5 * L, [2.5 * a.to_dense() for a in L]),
                         (L / 4, [a.to_dense() / 4 for a in L]),
                         (-L, [-a.to_dense() for a in L]),
                         (L * s, [s[i] * a.to_dense() for i, a in enumerate(L)])):
            for g, r in zip(got, ref):
                torch.testing.assert_close(g.to_dense(), r)
        with self.assertRaises(ValueError):
            L + spd_list([5, 8, 3], 3)
        with self.assertRaises(ValueError):
            L * torch.ones(3, dtype=F64)

    def test_reductions(self):
        L = self.L
        dense = [a.to_dense().numpy() for a in L]
        np.testing.assert_allclose(L.sum().numpy(), [d.sum() for d in dense], rtol=1e-14)
        np.testing.assert_allclose(L.norm().numpy(), [np.linalg.norm(d) for d in dense], rtol=1e-14)
        np.testing.assert_allclose(L.norm(1).numpy(), [np.linalg.norm(d, 1) for d in dense], rtol=1e-14)
        np.testing.assert_allclose(L.norm(math.inf).numpy(),
                                   [np.linalg.norm(d, np.inf) for d in dense], rtol=1e-14)
        self.assertEqual(sla.SparseTensorList([]).sum().shape, (0,))

    def test_structure_and_solves(self):
        L = self.L
        self.assertEqual(L.is_symmetric(), [True] * 4)
        self.assertEqual(L.is_positive_definite(), [True] * 4)
        g = torch.Generator().manual_seed(4)
        bs = [torch.randn(A.shape[-1], dtype=F64, generator=g) for A in L]
        xs = L.solve(bs)
        for x, A, b in zip(xs, L, bs):
            np.testing.assert_allclose(x.numpy(), np.linalg.solve(A.to_dense().numpy(), b.numpy()),
                                       rtol=1e-9, atol=1e-12)
        ld = L.logdet()
        np.testing.assert_allclose(ld.numpy(), [np.linalg.slogdet(A.to_dense().numpy())[1] for A in L],
                                   rtol=1e-12)
        sign, lad = L.slogdet(method="cholesky")
        np.testing.assert_allclose(sign.numpy(), 1.0)
        np.testing.assert_allclose(lad.numpy(), ld.numpy(), rtol=1e-12)
        big = spd_list([30, 40], 5)
        res = big.eigsh(3, which="SA")
        for (lam, V), A in zip(res, big):
            ref = np.linalg.eigvalsh(A.to_dense().numpy())[:3]
            np.testing.assert_allclose(lam.numpy(), ref, rtol=1e-9)

    def test_gradients(self):
        L = spd_list([4, 6, 3], 6, requires_grad=True)
        M = spd_list([4, 6, 3], 7, requires_grad=True)
        vals = [A.values for A in L] + [A.values for A in M]
        w = torch.tensor([0.7, -1.3, 2.0], dtype=F64)

        def f(*v):
            LL = sla.SparseTensorList([A.with_values(x) for A, x in zip(L, v[:3])])
            MM = sla.SparseTensorList([A.with_values(x) for A, x in zip(M, v[3:])])
            S = (LL + MM * 0.5) * LL - MM * w
            return torch.cat([S.norm(), S.sum(), (LL - MM).norm(1)])

        self.assertTrue(gradcheck(f, vals, eps=1e-6, atol=1e-7))

        def g(*v):
            LL = sla.SparseTensorList([A.with_values(x) for A, x in zip(L, v)])
            return LL.logdet(method="lu")  # gradcheck breaks the symmetry

        self.assertTrue(gradcheck(g, vals[:3], eps=1e-6, atol=1e-7))
        # the list's logdet gradient is the per-item one
        ld = L.logdet(method="cholesky").sum()
        gl = torch.autograd.grad(ld, vals[:3])
        for A, gi in zip(L, gl):
            gi_ref, = torch.autograd.grad(A.logdet(method="cholesky"), A.values)
            torch.testing.assert_close(gi, gi_ref)


if __name__ == "__main__":
    unittest.main()
