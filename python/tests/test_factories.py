"""SparseTensor factories (eye, diag, tridiagonal, random and the C
generators), from_dense and the torch sparse conversions (against dense
torch / SciPy, gradients by torch.autograd.gradcheck), and the structure
queries (is_symmetric, is_hermitian, is_positive_definite with its cache,
has_positive_diagonal, density, sparsity_pattern_equal) against NumPy."""

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
ST = sla.SparseTensor


def dense_spd(D):
    """NumPy's answer: symmetric and Cholesky succeeds."""
    D = np.asarray(D)
    if D.shape[0] != D.shape[1] or not np.array_equal(D, D.T):
        return False
    try:
        np.linalg.cholesky(D)
        return True
    except np.linalg.LinAlgError:
        return False


class TestFactories(unittest.TestCase):
    def test_eye(self):
        I = ST.eye(5)
        self.assertTrue(torch.equal(I.to_dense(), torch.eye(5, dtype=F64)))
        self.assertEqual(ST.eye(0).shape, (0, 0))

    def test_diag_and_tridiagonal_vs_scipy(self):
        g = torch.Generator().manual_seed(1)
        a, b, c = (torch.rand(n, generator=g, dtype=F64) for n in (5, 6, 5))
        T = ST.tridiagonal(a, b, c)
        ref = sp.diags([a.numpy(), b.numpy(), c.numpy()], [-1, 0, 1]).toarray()
        np.testing.assert_array_equal(T.to_dense().numpy(), ref)
        D = ST.diag(b)
        np.testing.assert_array_equal(D.to_dense().numpy(), np.diag(b.numpy()))
        U = ST.diag(a, 2)  # n = 7
        np.testing.assert_array_equal(U.to_dense().numpy(), np.diag(a.numpy(), 2))
        W = ST.diag([b, a], [0, -1], shape=(6, 6))
        np.testing.assert_array_equal(W.to_dense().numpy(),
                                      sp.diags([b.numpy(), a.numpy()], [0, -1]).toarray())
        with self.assertRaises(ValueError):
            ST.diag([b, b], [0, 1])  # diagonal 1 of a 6 x 6 matrix has 5 entries
        # batched diagonals
        bb = torch.rand(3, 6, generator=g, dtype=F64)
        Bt = ST.diag(bb)
        self.assertEqual(Bt.shape, (3, 6, 6))
        self.assertTrue(torch.equal(Bt.to_dense(), torch.diag_embed(bb)))

    def test_diag_gradcheck(self):
        g = torch.Generator().manual_seed(2)
        a = torch.rand(4, generator=g, dtype=F64).requires_grad_()
        b = (torch.rand(5, generator=g, dtype=F64) + 4).requires_grad_()
        c = torch.rand(4, generator=g, dtype=F64).requires_grad_()
        rhs = torch.linspace(1, 2, 5, dtype=F64)
        self.assertTrue(gradcheck(lambda a, b, c: ST.tridiagonal(a, b, c).solve(rhs), (a, b, c)))
        self.assertTrue(gradcheck(lambda b, c: ST.diag([b, c], [0, 1]) @ rhs, (b, c)))

    def test_random_square_kinds(self):
        for seed in (1, 2):
            G = ST.random(40, density=0.1, seed=seed)
            S = ST.random(40, density=0.1, symmetric=True, seed=seed)
            P = ST.random(40, density=0.1, spd=True, seed=seed)
            for M in (G, S, P):
                self.assertEqual(M.shape, (40, 40))
            Gd, Sd, Pd = (M.to_dense().numpy() for M in (G, S, P))
            self.assertFalse(np.array_equal(Gd, Gd.T))
            self.assertTrue(np.array_equal(Sd, Sd.T))
            self.assertTrue(dense_spd(Pd))
            # seeded: the same matrix again
            self.assertTrue(torch.equal(ST.random(40, density=0.1, seed=seed).to_dense(),
                                        G.to_dense()))

    def test_random_rectangular(self):
        R = ST.random(30, 20, density=0.2, seed=5)
        self.assertEqual(R.shape, (30, 20))
        self.assertTrue(0.1 < R.density < 0.3)
        self.assertTrue(bool((R.values.abs() <= 1).all()))
        with self.assertRaises(ValueError):
            ST.random(30, 20, symmetric=True)

    def test_generators_as_classmethods(self):
        self.assertTrue(torch.equal(ST.poisson(2, 4).to_dense(), sla.poisson(2, 4).to_dense()))
        kappa = torch.ones(36, dtype=F64)
        self.assertTrue(torch.allclose(ST.diffusion2d(5, kappa).to_dense(),
                                       sla.poisson(2, 5).to_dense()))
        C = ST.convdiff2d(5, 1.0, 0.5)
        self.assertEqual(C.shape, (25, 25))
        self.assertFalse(C.is_symmetric())
        A = ST.aniso2d(5, 0.01)
        self.assertTrue(A.is_symmetric() and A.is_positive_definite())
        W = ST.arrow(20, 2, 1, seed=3)
        self.assertEqual(W.shape, (20, 20))

    def test_from_dense_differentiable(self):
        g = torch.Generator().manual_seed(4)
        D0 = torch.rand(5, 5, generator=g, dtype=F64) + 5 * torch.eye(5, dtype=F64)
        D0[0, 3] = 0.0
        D = D0.clone().requires_grad_()
        A = ST.from_dense(D)
        self.assertEqual(A.nnz, 24)
        b = torch.linspace(0, 1, 5, dtype=F64)
        # gradcheck in the nonzeros (a finite difference at a zero entry would
        # change the pattern: the gradient is that of the stored entries)
        mask = D0 != 0
        w = D0[mask].clone().requires_grad_()
        self.assertTrue(gradcheck(
            lambda w: ST.from_dense(torch.zeros(5, 5, dtype=F64).masked_scatter(mask, w)).solve(b),
            (w,)))
        # the gradient lands on the nonzeros only
        ST.from_dense(D).solve(b).sum().backward()
        self.assertEqual(float(D.grad[0, 3]), 0.0)
        # without grad: a leaf as before
        L0 = ST.from_dense(D0, requires_grad=True)
        self.assertTrue(L0.values.is_leaf and L0.values.requires_grad)
        self.assertTrue(torch.equal(L0.to_dense(), D0))

    def test_torch_coo_roundtrip_and_grad(self):
        P = ST.poisson(2, 4)
        T = P.to_torch_sparse()
        self.assertEqual(T.layout, torch.sparse_coo)
        self.assertTrue(torch.equal(T.to_dense(), P.to_dense()))
        Q = ST.from_torch(T)
        self.assertTrue(Q.sparsity_pattern_equal(P))
        self.assertTrue(torch.equal(Q.to_dense(), P.to_dense()))
        # duplicates are summed by coalesce
        i = torch.tensor([[0, 0, 1, 1], [0, 0, 1, 0]])
        U = torch.sparse_coo_tensor(i, torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64), (2, 2))
        np.testing.assert_array_equal(ST.from_torch(U).to_dense().numpy(), [[3, 0], [4, 3]])
        # differentiable: through from_torch and through to_torch_sparse
        b = torch.linspace(1, 2, 16, dtype=F64)
        v = P.values.clone().requires_grad_()
        self.assertTrue(gradcheck(
            lambda v: ST.from_torch(torch.sparse_coo_tensor(torch.stack([P.row, P.col]), v,
                                                            (16, 16))).solve(b), (v,)))
        self.assertTrue(gradcheck(
            lambda v: torch.sparse.mm(P.with_values(v).to_torch_sparse(), b.unsqueeze(1)), (v,)))

    def test_torch_batched_coo(self):
        P = ST.poisson(1, 4)
        vb = torch.stack([P.values, 2 * P.values])
        Pb = P.with_values(vb)
        T = Pb.to_torch_sparse()
        self.assertEqual(tuple(T.shape), (2, 4, 4))
        self.assertTrue(torch.equal(T.to_dense(), Pb.to_dense()))
        Q = ST.from_torch(T)
        self.assertEqual(Q.shape, (2, 4, 4))
        self.assertTrue(torch.equal(Q.to_dense(), Pb.to_dense()))

    def test_torch_csr(self):
        S = sp.random(6, 8, density=0.3, random_state=np.random.default_rng(0), format="csr")
        A = ST.from_scipy(S)
        C = A.to_torch_sparse(torch.sparse_csr)
        self.assertEqual(C.layout, torch.sparse_csr)
        np.testing.assert_array_equal(C.to_dense().numpy(), S.toarray())
        B = ST.from_torch(C)
        np.testing.assert_array_equal(B.to_dense().numpy(), S.toarray())
        self.assertTrue(B.sparsity_pattern_equal(A))
        with self.assertRaises(ValueError):
            A.to_torch_sparse(torch.strided)
        with self.assertRaises(TypeError):
            ST.from_torch(torch.ones(2, 2))


class TestStructure(unittest.TestCase):
    def test_symmetric_and_hermitian(self):
        P = ST.poisson(2, 4)
        self.assertTrue(P.is_symmetric() and P.is_hermitian())
        D = P.to_dense()
        D[0, 1] += 1e-9
        Q = ST.from_dense(D)
        self.assertFalse(Q.is_symmetric())
        self.assertTrue(Q.is_symmetric(tol=1e-8))  # relative to max |a| = 4
        self.assertFalse(ST.random(5, 7, density=0.5, seed=1).is_symmetric())
        # duplicates summed before the comparison: (0,1) = 1 + 1, (1,0) = 2
        A = ST(torch.tensor([1.0, 1.0, 2.0], dtype=F64), [0, 0, 1], [1, 1, 0], (2, 2))
        self.assertTrue(A.is_symmetric())

    def test_positive_definite_vs_numpy(self):
        cases = [ST.poisson(2, 5), ST.random(30, density=0.1, spd=True, seed=2),
                 ST.random(30, density=0.1, symmetric=True, seed=2),
                 ST.random(30, density=0.1, seed=2),
                 ST.from_dense(torch.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=F64)),
                 ST.from_dense(torch.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=F64)),
                 ST.from_dense(torch.tensor([[-2.0, 0.0], [0.0, -1.0]], dtype=F64)),
                 ST.random(4, 6, density=0.5, seed=0)]
        for A in cases:
            with self.subTest(A=A):
                self.assertEqual(A.is_positive_definite(), dense_spd(A.to_dense().numpy()))

    def test_positive_definite_batch_list_and_cache(self):
        P = ST.poisson(1, 5)
        vb = torch.stack([P.values, -P.values, P.values * 3])
        Pb = P.with_values(vb)
        self.assertEqual(Pb.is_positive_definite().tolist(), [True, False, True])
        self.assertEqual(Pb.is_symmetric().tolist(), [True, True, True])
        self.assertEqual(Pb.has_positive_diagonal().tolist(), [True, False, True])
        L = sla.SparseTensorList([P, P.with_values(-P.values), ST.random(6, density=0.3, seed=1)])
        self.assertEqual(L.is_positive_definite(), [True, False, False])
        self.assertEqual(L.is_symmetric(), [True, True, False])
        self.assertEqual(L.is_hermitian(), [True, True, False])
        self.assertEqual(L.has_positive_diagonal(), [True, False, True])
        # cached per values version: an in-place change is seen
        v = P.values.clone()
        A = P.with_values(v)
        self.assertTrue(A.is_positive_definite())
        key = A._spd_cache[0]
        self.assertTrue(A.is_positive_definite())
        self.assertEqual(A._spd_cache[0], key)
        v.neg_()
        self.assertFalse(A.is_positive_definite())
        v.data.neg_()  # a write without a version bump is seen too
        self.assertTrue(A.is_positive_definite())

    def test_positive_diagonal_density_pattern(self):
        P = ST.poisson(2, 3)
        self.assertTrue(P.has_positive_diagonal())
        self.assertAlmostEqual(P.density, P.nnz / 81.0)
        Z = ST(torch.tensor([1.0], dtype=F64), [0], [1], (2, 2))
        self.assertFalse(Z.has_positive_diagonal())
        self.assertEqual(ST.eye(0).density, 0.0)
        # the same positions in another order (and a duplicate) are the same pattern
        perm = torch.randperm(P.nnz, generator=torch.Generator().manual_seed(0))
        Q = ST(P.values[perm], P.row[perm], P.col[perm], P.shape)
        self.assertTrue(P.sparsity_pattern_equal(Q))
        R = ST(torch.cat([P.values, P.values[:1]]), torch.cat([P.row, P.row[:1]]),
               torch.cat([P.col, P.col[:1]]), P.shape)
        self.assertTrue(P.sparsity_pattern_equal(R))
        self.assertFalse(P.sparsity_pattern_equal(ST.eye(9)))
        self.assertFalse(P.sparsity_pattern_equal(ST.poisson(2, 4)))


if __name__ == "__main__":
    unittest.main()
