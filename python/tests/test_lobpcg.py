"""SparseTensor.eigsh(method="lobpcg"), with and without M (sla_lobpcg,
sla_lobpcg_generalized): results against dense scipy.linalg.eigh(K, M) and
numpy.linalg.eigh, gradients with torch.autograd.gradcheck (symmetric
parametrisations) and against central differences of the dense
eigendecomposition."""

import os
import sys
import unittest

import numpy as np
import torch
from torch.autograd import gradcheck

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sla  # noqa: E402

try:
    import scipy.linalg as sla_dense
    import scipy.sparse as sp
    HAVE_SCIPY = True
except ImportError:
    HAVE_SCIPY = False

F64 = torch.float64


def have_lobpcg():
    try:
        from sla import _lobpcg
        _lobpcg._fns()
        return True
    except NotImplementedError:
        return False


def tridiag(n, seed):
    """A pencil K, M on one tridiagonal pattern (diagonal first, then the
    upper and the lower off-diagonal): K a perturbed 1D Laplacian (distinct
    eigenvalues), M a mass matrix."""
    g = np.random.default_rng(seed)
    i = np.arange(n)
    row = torch.from_numpy(np.concatenate([i, i[:-1], i[1:]]).astype(np.int64))
    col = torch.from_numpy(np.concatenate([i, i[1:], i[:-1]]).astype(np.int64))
    kd, ko = torch.tensor(2.0 + g.uniform(0, 1, n)), torch.tensor(-1.0 + 0.2 * g.uniform(-1, 1, n - 1))
    md, mo = torch.tensor(1.0 + g.uniform(0, 1, n)), torch.tensor(0.1 * g.uniform(-1, 1, n - 1))
    return row, col, kd, ko, md, mo


def dense(vals, row, col, n):
    D = np.zeros((n, n))
    np.add.at(D, (row.numpy(), col.numpy()), vals.detach().numpy())
    return D


@unittest.skipUnless(HAVE_SCIPY and have_lobpcg(), "no scipy, or a libsla without LOBPCG")
class TestLobpcg(unittest.TestCase):
    n = 30

    def mats(self, row, col, kd, ko, md, mo):
        n = self.n
        return (sla.SparseTensor(torch.cat([kd, ko, ko], -1), row, col, kd.shape[:-1] + (n, n)),
                sla.SparseTensor(torch.cat([md, mo, mo]), row, col, (n, n)))

    def test_generalized_vs_scipy(self):
        n, k = self.n, 4
        row, col, *v = tridiag(n, 1)
        K, M = self.mats(row, col, *v)
        Kd, Md = dense(K.values, row, col, n), dense(M.values, row, col, n)
        w, V = sla_dense.eigh(Kd, Md)
        for pc in (None, "none", "jacobi", "ic0"):
            lam, X, info = K.eigsh(k, M=M, method="lobpcg", preconditioner=pc, return_info=True)
            self.assertTrue(info[0].converged, info)
            self.assertIn("lobpcg", info[0].method)
            self.assertEqual(tuple(X.shape), (n, k))
            np.testing.assert_allclose(lam.numpy(), w[:k], rtol=1e-10)
            Xn = X.numpy()
            np.testing.assert_allclose(Xn.T @ Md @ Xn, np.eye(k), atol=1e-9)
            sgn = np.sign(np.sum(V[:, :k] * (Md @ Xn), axis=0))
            np.testing.assert_allclose(Xn, V[:, :k] * sgn, atol=1e-6)
        # the default which is SA here; ARPACK's default (LM) stays as it was
        lam_a = K.eigsh(k, M=M, return_eigenvectors=False)
        np.testing.assert_allclose(lam_a.numpy(), w[:k], rtol=1e-10)  # around sigma = 0: the smallest

    def test_plain_batch_vs_numpy(self):
        n, k = self.n, 3
        row, col, kd, ko, _, _ = tridiag(n, 2)
        g = np.random.default_rng(3)
        kdb = torch.stack([kd, kd + torch.tensor(g.uniform(0, 1, n))])
        kob = torch.stack([ko, ko * 0.5])
        A = sla.SparseTensor(torch.cat([kdb, kob, kob], -1), row, col, (2, n, n))
        lam, X = A.eigsh(k, which="SA", method="lobpcg")
        self.assertEqual(tuple(lam.shape), (2, k))
        self.assertEqual(tuple(X.shape), (2, n, k))
        for b in range(2):
            w, V = np.linalg.eigh(dense(A.values[b], row, col, n))
            np.testing.assert_allclose(lam[b].numpy(), w[:k], rtol=1e-10)
            np.testing.assert_allclose(np.abs(np.sum(X[b].numpy() * V[:, :k], axis=0)), 1.0, atol=1e-8)

    def test_gradcheck_values(self):
        row, col, *v = tridiag(self.n, 4)
        wts = torch.tensor([1.0, -0.5, 0.25], dtype=F64)

        def f(kd, ko, md, mo):
            K, M = self.mats(row, col, kd, ko, md, mo)
            return (K.eigsh(3, M=M, method="lobpcg", return_eigenvectors=False) * wts).sum()

        ins = tuple(t.clone().requires_grad_(True) for t in v)
        self.assertTrue(gradcheck(f, ins, eps=1e-6, atol=1e-6, rtol=1e-5))

    def test_gradcheck_vectors(self):
        n = self.n
        row, col, *v = tridiag(n, 5)
        W = torch.rand(n, 2, generator=torch.Generator().manual_seed(7), dtype=F64)
        c = torch.randn(n, generator=torch.Generator().manual_seed(8), dtype=F64)

        def f(kd, ko, md, mo):
            K, M = self.mats(row, col, kd, ko, md, mo)
            lam, X = K.eigsh(2, M=M, method="lobpcg", tol=1e-12, maxiter=300, preconditioner="none")
            return (X ** 2 * W).sum(), ((c @ X) ** 2 * lam).sum()  # invariant to each vector's sign

        ins = tuple(t.clone().requires_grad_(True) for t in v)
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sla.SlaConvergenceWarning)  # tol below the stall level
            # eps 1e-3: LOBPCG's vectors stall near 1e-8 (residual / gap), noise of 1e-5 at this
            # step; test_vector_grad_vs_scipy checks the same VJP to 1e-5 against dense eigh
            self.assertTrue(gradcheck(f, ins, eps=1e-3, atol=1e-4, rtol=1e-3))

    def test_vector_grad_vs_scipy(self):
        """dL/dvalues of L = sum W * X (signs aligned) against central
        differences of scipy.linalg.eigh(K, M), along symmetric directions."""
        n, k = self.n, 3
        row, col, kd, ko, md, mo = tridiag(n, 6)
        kv = torch.cat([kd, ko, ko]).requires_grad_(True)
        mv = torch.cat([md, mo, mo]).requires_grad_(True)
        K, M = sla.SparseTensor(kv, row, col, (n, n)), sla.SparseTensor(mv, row, col, (n, n))
        lam, X = K.eigsh(k, M=M, method="lobpcg")
        Kd, Md = dense(kv, row, col, n), dense(mv, row, col, n)
        _, V = sla_dense.eigh(Kd, Md)
        sgn = np.sign(np.sum(V[:, :k] * (Md @ X.detach().numpy()), axis=0))
        rng = np.random.default_rng(9)
        Wt = rng.standard_normal((n, k))
        ((torch.from_numpy(Wt) * X).sum() + (lam * torch.tensor([1.0, 2.0, 3.0], dtype=F64)).sum()).backward()

        def loss(Kx, Mx):
            wx, Vx = sla_dense.eigh(Kx, Mx)
            return np.sum(Wt * Vx[:, :k] * sgn) + wx[0] + 2 * wx[1] + 3 * wx[2]

        h = 1e-6
        for which, grad, Dm in (("K", kv.grad, Kd), ("M", mv.grad, Md)):
            Dv = rng.standard_normal(3 * n - 2)
            D = dense(torch.from_numpy(Dv), row, col, n)
            D = (D + D.T) / 2
            Dsym = D[row.numpy(), col.numpy()]
            p = (Kd + h * D, Md) if which == "K" else (Kd, Md + h * D)
            m = (Kd - h * D, Md) if which == "K" else (Kd, Md - h * D)
            fd = (loss(*p) - loss(*m)) / (2 * h)
            self.assertAlmostEqual(float(grad.numpy() @ Dsym), fd, delta=1e-5 * max(1.0, abs(fd)))

    def test_errors(self):
        n = self.n
        row, col, *v = tridiag(n, 7)
        K, M = self.mats(row, col, *v)
        with self.assertRaises(ValueError):
            K.eigsh(3, M=M, method="lobpcg", which="LA")  # LOBPCG: the smallest only
        with self.assertRaises(ValueError):
            K.eigsh(10, M=M, method="lobpcg")  # 3 k < n
        with self.assertRaises(ValueError):
            K.eigsh(3, M=M, method="lobpcg", sigma=1.0)
        with self.assertRaises(ValueError):
            K.eigsh(3, M=M, method="lanczos")
        with self.assertRaises(ValueError):
            K.eigsh(3, preconditioner="amg")  # LOBPCG's keyword on the ARPACK path
        with self.assertRaises(ValueError):
            K.eigsh(3, M=M, method="lobpcg", v0=torch.zeros(n))  # a block [n, k]
        with self.assertRaises(sla.SlaError):
            K.eigsh(3, M=M, method="lobpcg", preconditioner="nosuch")
        Kb = sla.SparseTensor(torch.stack([K.values, K.values]), row, col, (2, n, n))
        with self.assertRaises(ValueError):
            K.eigsh(3, M=Kb, method="lobpcg")  # one M for the batch
        # a start block is used (converged from the answer itself at once)
        lam, X = K.eigsh(3, M=M, method="lobpcg")
        lam2, _, info = K.eigsh(3, M=M, method="lobpcg", v0=X, return_info=True)
        self.assertLessEqual(info[0].iterations, 2)
        np.testing.assert_allclose(lam2.numpy(), lam.numpy(), rtol=1e-12)


if __name__ == "__main__":
    unittest.main()
