"""sla.lsqr / sla.lsmr / SparseTensor.lsqr against SciPy's lsqr and lsmr
and the dense minimum-norm solution, gradients by torch.autograd.gradcheck
(values and b), batches, x0 and errors."""

import os
import unittest
import warnings

import numpy as np
import scipy.io
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch

import sla

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data")


def random_sparse(m, n, density, seed):
    rng = np.random.default_rng(seed)
    M = sp.random(m, n, density=density, random_state=rng, format="coo")
    k = min(m, n)
    M = (M + sp.coo_matrix((rng.uniform(0.5, 1.0, k), (np.arange(k), np.arange(k))), shape=(m, n))).tocoo()
    return M


class TestLsq(unittest.TestCase):
    def test_against_scipy(self):
        for (m, n) in [(40, 25), (25, 40)]:
            M = random_sparse(m, n, 0.2, m)
            A = sla.SparseTensor.from_scipy(M)
            b = np.sin(np.arange(m) + 1.0)
            for damp in (0.0, 0.3):
                ref = spla.lsqr(M, b, damp=damp, atol=1e-14, btol=1e-14, iter_lim=10000)[0]
                x, info = sla.lsqr(A, torch.tensor(b), damp=damp, atol=1e-14, btol=1e-14, return_info=True)
                self.assertTrue(info.converged)
                np.testing.assert_allclose(x.numpy(), ref, rtol=1e-8, atol=1e-10)
                ref2 = spla.lsmr(M, b, damp=damp, atol=1e-14, btol=1e-14, maxiter=10000)[0]
                x2 = sla.lsmr(A, torch.tensor(b), damp=damp, atol=1e-14, btol=1e-14)
                np.testing.assert_allclose(x2.numpy(), ref2, rtol=1e-8, atol=1e-10)
                x3 = A.lsqr(torch.tensor(b), damp=damp, atol=1e-14, btol=1e-14, method="lsmr")
                np.testing.assert_allclose(x3.numpy(), ref2, rtol=1e-8, atol=1e-10)

    def test_minimum_norm(self):
        rng = np.random.default_rng(5)
        D = rng.standard_normal((30, 8)) @ rng.standard_normal((8, 20))  # rank 8
        b = rng.standard_normal(30)
        ref = np.linalg.lstsq(D, b, rcond=1e-10)[0]
        A = sla.SparseTensor.from_scipy(sp.coo_matrix(D))
        for f in (sla.lsqr, sla.lsmr):
            x = f(A, torch.tensor(b), atol=1e-14, btol=1e-14)
            np.testing.assert_allclose(x.numpy(), ref, rtol=1e-8, atol=1e-10)

    def test_lstsq_qr(self):
        """The direct SuiteSparseQR path against NumPy's lstsq: over- and
        underdetermined (minimum norm), damped, a rank-deficient fallback,
        and its gradient by gradcheck."""
        if not sla.has_feature("suitesparse"):
            self.skipTest("SuiteSparse not in this build")
        for (m, n) in [(40, 25), (25, 40), (30, 30)]:
            M = random_sparse(m, n, 0.2, 100 + m)
            D = M.toarray()
            b = np.cos(np.arange(m) + 0.5)
            A = sla.SparseTensor.from_scipy(M)
            x, info = sla.lstsq(A, torch.tensor(b), return_info=True)
            self.assertEqual(info.method, "qr")
            np.testing.assert_allclose(x.numpy(), np.linalg.lstsq(D, b, rcond=None)[0], rtol=1e-9, atol=1e-11)
            damp = 0.4
            Dd = np.vstack([D, damp * np.eye(n)])
            ref = np.linalg.lstsq(Dd, np.concatenate([b, np.zeros(n)]), rcond=None)[0]
            x2 = A.lsqr(torch.tensor(b), damp=damp, method="qr")
            np.testing.assert_allclose(x2.numpy(), ref, rtol=1e-9, atol=1e-11)
        rng = np.random.default_rng(9)
        D = rng.standard_normal((20, 5)) @ rng.standard_normal((5, 12))
        b = rng.standard_normal(20)
        x, info = sla.lstsq(sla.SparseTensor.from_scipy(sp.coo_matrix(D)), torch.tensor(b), return_info=True)
        self.assertEqual(info.method, "lsmr")
        self.assertIn("rank deficient", info.note)
        np.testing.assert_allclose(x.numpy(), np.linalg.lstsq(D, b, rcond=1e-10)[0], rtol=1e-7, atol=1e-9)
        M = random_sparse(12, 7, 0.3, 3).tocsr()
        M.sort_indices()
        idx = torch.tensor(np.vstack(M.nonzero()))
        vals = torch.tensor(M.data, requires_grad=True)
        bt = torch.tensor(np.sin(np.arange(12.0)), requires_grad=True)

        def f(v, bb):
            return sla.lstsq(sla.SparseTensor(v, idx[0], idx[1], (12, 7)), bb, damp=0.2)
        self.assertTrue(torch.autograd.gradcheck(f, (vals, bt), eps=1e-6, atol=1e-6))

    def test_lp_e226(self):
        M = scipy.io.mmread(os.path.join(DATA, "lp_e226.mtx")).tocoo()
        b = M @ np.ones(M.shape[1])
        ref = spla.lsqr(M, b, damp=1.0, atol=1e-14, btol=1e-14, iter_lim=20000)[0]
        x, info = sla.lsqr(M, torch.tensor(b), damp=1.0, atol=1e-14, btol=1e-14, iter_lim=20000,
                           return_info=True)
        np.testing.assert_allclose(x.numpy(), ref, rtol=1e-7, atol=1e-9)
        self.assertEqual(info.reason, "normal")

    def test_gradcheck(self):
        for (m, n, damp) in [(9, 6, 0.0), (6, 9, 0.0), (8, 7, 0.4)]:
            M = random_sparse(m, n, 0.3, 10 + m)
            row = torch.tensor(M.row, dtype=torch.int64)
            col = torch.tensor(M.col, dtype=torch.int64)
            vals = torch.tensor(M.data, dtype=torch.float64, requires_grad=True)
            b = torch.tensor(np.cos(np.arange(m) + 0.5), requires_grad=True)

            def f(v, bb):
                A = sla.SparseTensor(v, row, col, (m, n))
                return sla.lsqr(A, bb, damp=damp, atol=1e-15, btol=1e-15, conlim=0, iter_lim=2000,
                                grad_rtol=1e-13)

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sla.SlaConvergenceWarning)
                self.assertTrue(torch.autograd.gradcheck(f, (vals, b), eps=1e-6, atol=1e-6, rtol=1e-5))

    def test_batch_and_x0(self):
        M = random_sparse(20, 12, 0.3, 3)
        row = torch.tensor(M.row, dtype=torch.int64)
        col = torch.tensor(M.col, dtype=torch.int64)
        V = torch.stack([torch.tensor(M.data), 2.0 * torch.tensor(M.data)])
        A = sla.SparseTensor(V, row, col, (20, 12))
        b = torch.randn(20, dtype=torch.float64)
        x, infos = sla.lsqr(A, b, damp=0.1, atol=1e-14, btol=1e-14, return_info=True)
        self.assertEqual(tuple(x.shape), (2, 12))
        self.assertEqual(len(infos), 2)
        for i in range(2):
            ref = spla.lsqr((i + 1.0) * M, b.numpy(), damp=0.1, atol=1e-14, btol=1e-14)[0]
            np.testing.assert_allclose(x[i].numpy(), ref, rtol=1e-8, atol=1e-10)
        A1 = sla.SparseTensor.from_scipy(M)
        x1 = sla.lsqr(A1, b, damp=0.1, atol=1e-14, btol=1e-14)
        x2 = sla.lsqr(A1, b, damp=0.1, atol=1e-14, btol=1e-14, x0=torch.ones(12))
        np.testing.assert_allclose(x2.numpy(), x1.numpy(), rtol=1e-8, atol=1e-10)

    def test_batch_grad_vs_items(self):
        """values [2, 3, nnz], b [2, 3, m] (sla_lsq_batch / _batch_vjp in C):
        x and both gradients equal those of per-item calls; x0 broadcast."""
        M = random_sparse(15, 9, 0.35, 4)
        row = torch.tensor(M.row, dtype=torch.int64)
        col = torch.tensor(M.col, dtype=torch.int64)
        g = torch.Generator().manual_seed(3)
        V = (torch.tensor(M.data) * (1 + 0.3 * torch.rand(2, 3, 1, generator=g, dtype=torch.float64))
             + 0.05 * torch.randn(2, 3, M.nnz, generator=g, dtype=torch.float64))
        b = torch.randn(2, 3, 15, generator=g, dtype=torch.float64)
        w = torch.randn(2, 3, 9, generator=g, dtype=torch.float64)
        kw = dict(damp=0.2, atol=1e-14, btol=1e-14, conlim=0, iter_lim=500, grad_rtol=1e-13)
        Vb, bb = V.clone().requires_grad_(True), b.clone().requires_grad_(True)
        x = sla.lsqr(sla.SparseTensor(Vb, row, col, (15, 9)), bb, **kw)
        self.assertEqual(tuple(x.shape), (2, 3, 9))
        (w * x).sum().backward()
        for i in range(2):
            for j in range(3):
                v1, b1 = V[i, j].clone().requires_grad_(True), b[i, j].clone().requires_grad_(True)
                x1 = sla.lsqr(sla.SparseTensor(v1, row, col, (15, 9)), b1, **kw)
                (w[i, j] * x1).sum().backward()
                np.testing.assert_allclose(x[i, j].detach().numpy(), x1.detach().numpy(), rtol=1e-10, atol=1e-12)
                np.testing.assert_allclose(Vb.grad[i, j].numpy(), v1.grad.numpy(), rtol=1e-8, atol=1e-10)
                np.testing.assert_allclose(bb.grad[i, j].numpy(), b1.grad.numpy(), rtol=1e-8, atol=1e-10)
        x0 = sla.lsqr(sla.SparseTensor(V, row, col, (15, 9)), b, x0=torch.ones(9), **kw)
        np.testing.assert_allclose(x0.numpy(), x.detach().numpy(), rtol=1e-8, atol=1e-10)

    def test_transpose_option(self):
        """transpose="explicit" and "scatter" (how A^T u is formed) give the
        same x and gradients as each other and as SciPy; a bad name is refused."""
        for (m, n) in [(60, 30), (30, 60)]:
            M = random_sparse(m, n, 0.15, 7 + m)
            b = torch.tensor(np.cos(np.arange(m) + 0.5))
            ref = spla.lsqr(M, b.numpy(), atol=1e-14, btol=1e-14, iter_lim=10000)[0]
            xs, grads = [], []
            for t in ("scatter", "explicit", "auto"):
                A = sla.SparseTensor.from_scipy(M)
                A.values.requires_grad_(True)
                x = sla.lsqr(A, b, atol=1e-14, btol=1e-14, transpose=t)
                (x * torch.arange(n, dtype=torch.float64)).sum().backward()
                xs.append(x.detach().numpy())
                grads.append(A.values.grad.numpy().copy())
                np.testing.assert_allclose(xs[-1], ref, rtol=1e-8, atol=1e-10)
            for i in (1, 2):
                np.testing.assert_allclose(xs[i], xs[0], rtol=1e-12, atol=1e-14)
                np.testing.assert_allclose(grads[i], grads[0], rtol=1e-10, atol=1e-12)
            x2 = sla.lsmr(sla.SparseTensor.from_scipy(M), b, atol=1e-14, btol=1e-14, transpose="explicit")
            np.testing.assert_allclose(x2.numpy(), ref, rtol=1e-8, atol=1e-10)
        with self.assertRaisesRegex(ValueError, "explicit"):
            sla.lsqr(sla.SparseTensor.from_scipy(M), b, transpose="gather")

    def test_errors(self):
        A = sla.SparseTensor.from_scipy(random_sparse(10, 5, 0.3, 1))
        with self.assertRaises(ValueError):
            sla.lsqr(A, torch.ones(7))
        with self.assertRaises(sla.SlaError):
            sla.lsqr(A, torch.ones(10), damp=-1.0)
        with self.assertRaises(ValueError):
            sla.lsqr(A, torch.ones(10), x0=torch.ones(3))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            _, info = sla.lsqr(A, torch.ones(10), iter_lim=1, return_info=True)
            self.assertEqual(info.reason, "maxiter")
            self.assertTrue(any(issubclass(x.category, sla.SlaConvergenceWarning) for x in w))


class TestLsqShapeMessage(unittest.TestCase):
    def test_b_shape_named(self):
        A = sla.SparseTensor.from_scipy(random_sparse(12, 7, 0.4, 3))
        with self.assertRaisesRegex(ValueError, r"b must have shape \(12,\) \(got \(7,\)\)"):
            A.lsqr(torch.zeros(7, dtype=torch.float64))
        Ab = sla.SparseTensor(torch.stack([A.values, A.values]), A.row, A.col, (2, 12, 7))
        with self.assertRaisesRegex(ValueError, r"\(12,\) or \(2, 12\)"):
            Ab.lsqr(torch.zeros(3, 12, dtype=torch.float64))


if __name__ == "__main__":
    unittest.main()
