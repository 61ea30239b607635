"""Tests of SparseTensor.eigs (nonsymmetric, sla_eigs) and
SparseTensor.eigsh(M=...) (generalized symmetric-definite): results against
SciPy, eigenvalue and eigenvector gradients with torch.autograd.gradcheck in
float64 and against central differences of dense SciPy / NumPy references."""

import os
import sys
import unittest

import numpy as np
import scipy.linalg as sla_dense
import scipy.sparse as sp
import torch
from torch.autograd import gradcheck

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sla  # noqa: E402
from sla import _lib  # noqa: E402

F64 = torch.float64
HAVE = hasattr(_lib.lib, "sla_eigs")


def random_nonsym(n, per_row, seed):
    rng = np.random.default_rng(seed)
    R = sp.random(n, n, density=min(1.0, per_row / n), random_state=rng, format="coo")
    R = (R + sp.eye(n) * 0.5).tocoo()
    R.data = rng.uniform(-1, 1, R.nnz)
    row = torch.from_numpy(R.row.astype(np.int64))
    col = torch.from_numpy(R.col.astype(np.int64))
    return row, col, torch.tensor(R.data, dtype=F64), R.tocsr()


def match(a, b):
    """max over a of the distance to the nearest of b."""
    return max(np.min(np.abs(b - z)) for z in a)


@unittest.skipUnless(HAVE, "libsla without eigs or ARPACK")
class TestEigs(unittest.TestCase):
    def test_values_vectors_vs_dense(self):
        n = 60
        row, col, v, R = random_nonsym(n, 4, 1)
        A = sla.SparseTensor(v, row, col, (n, n))
        ref = np.linalg.eigvals(R.toarray())
        for which, key in (("LM", np.abs), ("LR", np.real)):
            lam, X = A.eigs(k=5, which=which)
            self.assertEqual(lam.dtype, torch.complex128)
            lam = lam.numpy()
            self.assertLess(match(lam, ref), 1e-9)
            best = np.sort(key(ref))[::-1][:5]
            np.testing.assert_allclose(np.sort(key(lam))[::-1], best, rtol=1e-9, atol=1e-12)
            Xn = X.numpy()
            for j in range(5):  # A x = l x, complex vectors as SciPy's
                r = R @ Xn[:, j] - lam[j] * Xn[:, j]
                self.assertLess(np.linalg.norm(r), 1e-9 * max(1, abs(lam[j])))
        lam = A.eigs(k=3, sigma=0.2, return_eigenvectors=False).numpy()
        np.testing.assert_allclose(np.sort(np.abs(lam - 0.2)), np.sort(np.abs(ref - 0.2))[:3],
                                   rtol=1e-9)

    def test_gradcheck(self):
        n = 30
        row, col, v, _ = random_nonsym(n, 3, 2)

        def f(vals):
            lam = sla.SparseTensor(vals, row, col, (n, n)).eigs(k=4, return_eigenvectors=False)
            w = torch.tensor([1.0, 0.7, -0.4, 0.3], dtype=F64)
            return (w * lam.real).sum() + (w.flip(0) * lam.imag).sum(), (lam.abs() ** 2).sum()

        vals = v.clone().requires_grad_(True)
        self.assertTrue(gradcheck(f, (vals,), eps=1e-6, atol=1e-6, rtol=1e-5))

    def test_vectors_gauge_vs_numpy(self):
        n = 50
        row, col, v, R = random_nonsym(n, 4, 4)
        lam, X = sla.SparseTensor(v, row, col, (n, n)).eigs(k=4)
        wd, Vd = np.linalg.eig(R.toarray())
        for j in range(4):
            x = X[:, j].numpy()
            m = int(np.argmax(np.abs(x)))
            self.assertAlmostEqual(np.linalg.norm(x), 1.0, places=12)
            self.assertGreater(x[m].real, 0.0)
            self.assertEqual(x[m].imag, 0.0)
            i = int(np.argmin(np.abs(wd - lam[j].item())))
            y = Vd[:, i] * np.conj(Vd[m, i]) / abs(Vd[m, i]) / np.linalg.norm(Vd[:, i])
            np.testing.assert_allclose(x, y, atol=1e-9)

    def test_vector_gradcheck(self):
        n = 30
        row, col, v, _ = random_nonsym(n, 3, 2)
        c = torch.randn(n, generator=torch.Generator().manual_seed(5), dtype=F64)
        W = torch.rand(n, 4, generator=torch.Generator().manual_seed(6), dtype=F64)

        def f(vals):
            lam, X = sla.SparseTensor(vals, row, col, (n, n)).eigs(k=4)
            inv = ((X.abs() ** 2) * W).sum() + (torch.abs(c.to(X.dtype) @ X) ** 2).sum()
            gauge = X.real.sum() + (X.imag * W).sum()  # depends on the gauge sla fixes
            return inv, gauge, (lam.real * X.real[0]).sum()

        vals = v.clone().requires_grad_(True)
        self.assertTrue(gradcheck(f, (vals,), eps=1e-6, atol=1e-6, rtol=1e-5))

    def test_errors(self):
        n = 20
        row, col, v, _ = random_nonsym(n, 3, 3)
        A = sla.SparseTensor(v, row, col, (n, n))
        with self.assertRaises(ValueError):
            A.eigs(k=n - 1)
        with self.assertRaises(ValueError):
            A.eigs(k=2, which="LA")


@unittest.skipUnless(HAVE, "libsla without eigs or ARPACK")
class TestGeneralized(unittest.TestCase):
    def setUp(self):
        n = self.n = 40
        h = 1.0 / (n + 1)
        i = np.arange(n)
        rows = np.concatenate([i, i[:-1], i[1:]])
        cols = np.concatenate([i, i[1:], i[:-1]])
        self.row = torch.from_numpy(rows.astype(np.int64))
        self.col = torch.from_numpy(cols.astype(np.int64))
        self.kv = torch.tensor(np.concatenate([np.full(n, 2 / h), np.full(2 * n - 2, -1 / h)]), dtype=F64)
        self.mv = torch.tensor(np.concatenate([np.full(n, 4 * h / 6), np.full(2 * n - 2, h / 6)]),
                               dtype=F64)

    def mats(self, kv, mv):
        n = self.n
        return (sla.SparseTensor(kv, self.row, self.col, (n, n)),
                sla.SparseTensor(mv, self.row, self.col, (n, n)))

    def test_vs_scipy(self):
        K, M = self.mats(self.kv, self.mv)
        lam, X = K.eigsh(k=4, M=M)
        Kd = sp.csr_matrix((self.kv.numpy(), (self.row.numpy(), self.col.numpy()))).toarray()
        Md = sp.csr_matrix((self.mv.numpy(), (self.row.numpy(), self.col.numpy()))).toarray()
        ref = sla_dense.eigh(Kd, Md, eigvals_only=True)
        np.testing.assert_allclose(lam.numpy(), ref[:4], rtol=1e-10)
        np.testing.assert_allclose(X.numpy().T @ Md @ X.numpy(), np.eye(4), atol=1e-10)
        lam = K.eigsh(k=2, M=M, sigma=500.0, return_eigenvectors=False).numpy()
        near = ref[np.argsort(np.abs(ref - 500.0))[:2]]
        np.testing.assert_allclose(np.sort(lam), np.sort(near), rtol=1e-10)

    def test_gradcheck(self):
        n = self.n

        def f(kd, ko, md, mo):  # symmetric by construction: (diagonal, off-diagonal)
            K, M = self.mats(torch.cat([kd, ko, ko]), torch.cat([md, mo, mo]))
            lam = K.eigsh(k=3, M=M, return_eigenvectors=False)
            return (lam * torch.tensor([1.0, -0.5, 0.25], dtype=F64)).sum()

        kd, ko = self.kv[:n].clone(), self.kv[n:2 * n - 1].clone()
        md, mo = self.mv[:n].clone(), self.mv[n:2 * n - 1].clone()
        ins = tuple(t.requires_grad_(True) for t in (kd, ko, md, mo))
        self.assertTrue(gradcheck(f, ins, eps=1e-7, atol=1e-5, rtol=1e-5))

    def test_eigenvector_gradcheck(self):
        n = self.n
        W = torch.rand(n, 3, generator=torch.Generator().manual_seed(7), dtype=F64)
        c = torch.randn(n, generator=torch.Generator().manual_seed(8), dtype=F64)

        def f(kd, ko, md, mo):
            K, M = self.mats(torch.cat([kd, ko, ko]), torch.cat([md, mo, mo]))
            lam, X = K.eigsh(k=3, M=M)
            return (X ** 2 * W).sum(), ((c @ X) ** 2 * lam).sum()  # invariant to each vector's sign

        kd, ko = self.kv[:n].clone(), self.kv[n:2 * n - 1].clone()
        md, mo = self.mv[:n].clone(), self.mv[n:2 * n - 1].clone()
        ins = tuple(t.requires_grad_(True) for t in (kd, ko, md, mo))
        # eps 1e-5: ARPACK's vectors are accurate to ~1e-11, too coarse for 1e-7 steps
        self.assertTrue(gradcheck(f, ins, eps=1e-5, atol=1e-4, rtol=1e-4))

    def _batch_vals(self, B, seed):
        """B symmetric perturbations of K's values and of M's (M_b stays SPD)."""
        n, g = self.n, torch.Generator().manual_seed(seed)
        dk = torch.rand(B, 2 * n - 1, generator=g, dtype=F64)
        dm = torch.rand(B, 2 * n - 1, generator=g, dtype=F64)
        kb = self.kv + 0.3 * torch.cat([dk, dk[:, n:]], 1) * self.kv.abs()
        mb = self.mv + 0.2 * torch.cat([dm[:, :n], 0.1 * dm[:, n:], 0.1 * dm[:, n:]], 1) * self.mv.abs()
        return kb, mb

    def test_batch_vs_scipy(self):
        """A batch of K (one M, then a batch of M) against scipy.linalg.eigh
        per member; a wrong M batch is refused."""
        n, B, k = self.n, 3, 3
        kb, mb = self._batch_vals(B, 31)
        r, c = self.row.numpy(), self.col.numpy()
        dense = lambda v: sp.csr_matrix((v.numpy(), (r, c)), shape=(n, n)).toarray()  # noqa: E731
        for batched_m in (False, True):
            K = sla.SparseTensor(kb, self.row, self.col, (B, n, n))
            M = sla.SparseTensor(mb if batched_m else self.mv, self.row, self.col,
                                 (B, n, n) if batched_m else (n, n))
            lam, X = K.eigsh(k=k, M=M)
            self.assertEqual(tuple(lam.shape), (B, k))
            self.assertEqual(tuple(X.shape), (B, n, k))
            for b in range(B):
                Md = dense(mb[b] if batched_m else self.mv)
                ref = sla_dense.eigh(dense(kb[b]), Md, eigvals_only=True)
                np.testing.assert_allclose(lam[b].numpy(), ref[:k], rtol=1e-10)
                Xb = X[b].numpy()
                np.testing.assert_allclose(Xb.T @ Md @ Xb, np.eye(k), atol=1e-10)
        M2 = sla.SparseTensor(mb[:2], self.row, self.col, (2, n, n))
        with self.assertRaisesRegex(ValueError, "batch shape"):
            K.eigsh(k=k, M=M2)

    def test_batch_gradcheck(self):
        """Gradients of a batched K with one M (M's gradient sums over the
        batch) and with a batch of M, eigenvalues and vectors."""
        n, B = self.n, 2
        kb, mb = self._batch_vals(B, 32)
        W = torch.rand(B, n, 2, generator=torch.Generator().manual_seed(33), dtype=F64)

        def f(kd, ko, md, mo):
            K = sla.SparseTensor(torch.cat([kd, ko, ko], -1), self.row, self.col, (B, n, n))
            mv = torch.cat([md, mo, mo], -1)
            M = sla.SparseTensor(mv, self.row, self.col, tuple(mv.shape[:-1]) + (n, n))
            lam, X = K.eigsh(k=2, M=M)
            return (lam * torch.tensor([1.0, -0.5], dtype=F64)).sum(), (X ** 2 * W).sum()

        kd, ko = kb[:, :n].clone(), kb[:, n:2 * n - 1].clone()
        for md, mo in ((self.mv[:n].clone(), self.mv[n:2 * n - 1].clone()),
                       (mb[:, :n].clone(), mb[:, n:2 * n - 1].clone())):
            ins = tuple(t.clone().requires_grad_(True) for t in (kd, ko, md, mo))
            # eps 1e-6: M's entries are ~h/6 = 4e-3, so 1e-5 steps leave a
            # central-difference truncation error near 1e-3 (it falls as eps^2)
            self.assertTrue(gradcheck(f, ins, eps=1e-6, atol=1e-4, rtol=1e-4))

    def test_eigenvector_grad_vs_scipy(self):
        """dL/dvalues of L = sum W * X (signs aligned) against central
        differences of scipy.linalg.eigh(K, M) on a random SPD pencil."""
        rng = np.random.default_rng(9)
        n, k = 30, 3
        B = sp.random(n, n, density=0.1, random_state=rng, format="csr")
        Kd = (B + B.T).toarray() + np.diag(rng.uniform(3, 6, n))
        C = sp.random(n, n, density=0.05, random_state=rng, format="csr")
        Md = 0.1 * (C + C.T).toarray() + np.diag(rng.uniform(1, 2, n))
        Kc, Mc = sp.coo_matrix(Kd), sp.coo_matrix(Md)
        kv = torch.tensor(Kc.data, dtype=F64, requires_grad=True)
        mv = torch.tensor(Mc.data, dtype=F64, requires_grad=True)
        K = sla.SparseTensor(kv, torch.from_numpy(Kc.row.astype(np.int64)),
                             torch.from_numpy(Kc.col.astype(np.int64)), (n, n))
        M = sla.SparseTensor(mv, torch.from_numpy(Mc.row.astype(np.int64)),
                             torch.from_numpy(Mc.col.astype(np.int64)), (n, n))
        lam, X = K.eigsh(k=k, M=M)
        w, V = sla_dense.eigh(Kd, Md)
        X0 = X.detach().numpy()
        sgn = np.sign(np.sum(V[:, :k] * (Md @ X0), axis=0))
        np.testing.assert_allclose(X0, V[:, :k] * sgn, atol=1e-9)
        W = rng.standard_normal((n, k))
        (torch.from_numpy(W) * X).sum().backward()

        def loss(Kx, Mx):
            _, Vx = sla_dense.eigh(Kx, Mx)
            return np.sum(W * Vx[:, :k] * sgn)

        h = 1e-6
        for which, coo, grad, dense in (("K", Kc, kv.grad, Kd), ("M", Mc, mv.grad, Md)):
            D = np.zeros((n, n))
            Dv = rng.standard_normal(coo.nnz)
            np.add.at(D, (coo.row, coo.col), Dv)
            D = (D + D.T) / 2  # a symmetric direction: <grad, sym(D)> on the pattern
            Dsym = D[coo.row, coo.col]
            args_p = (dense + h * D, Md) if which == "K" else (Kd, dense + h * D)
            args_m = (dense - h * D, Md) if which == "K" else (Kd, dense - h * D)
            fd = (loss(*args_p) - loss(*args_m)) / (2 * h)
            self.assertAlmostEqual(float(grad.numpy() @ Dsym), fd, delta=1e-6 * max(1.0, abs(fd)))


if __name__ == "__main__":
    unittest.main()
