"""SparseTensor.solve's lean path (issue 19, the binding's per-call
overhead): one float64 matrix in CSR order and one contiguous float64
vector go to SolveFn as they are (no reshape nodes), the C solve and its
VJP are called on the tensors' pointers, the value and index checks are
libc memcmp, and the backward skips the value check when no other values
were bound since its forward.

Checked against SciPy / dense NumPy, torch.autograd.gradcheck and
gradgradcheck, and the general path (which a [n, 1] right-hand side takes).
"""

import os
import sys
import unittest
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch
from torch.autograd import gradcheck, gradgradcheck

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sla  # noqa: E402
from sla import _core  # noqa: E402

F64 = torch.float64


def spd_csr(n, seed):
    """A random SPD matrix (diagonally dominant) as CSR-ordered COO tensors."""
    rng = np.random.default_rng(seed)
    M = sp.random(n, n, density=0.3, random_state=rng, format="csr")
    M = M + M.T + sp.identity(n) * (2.0 * n)
    M = M.tocsr()
    M.sort_indices()
    coo = M.tocoo()
    return (torch.tensor(coo.data, dtype=F64), torch.tensor(coo.row, dtype=torch.int64),
            torch.tensor(coo.col, dtype=torch.int64), M)


def dense(vals, row, col, n):
    A = np.zeros((n, n))
    np.add.at(A, (row.numpy(), col.numpy()), vals.detach().numpy())
    return A


class FastPathTests(unittest.TestCase):
    def setUp(self):
        self.n = 12
        self.vals, self.row, self.col, self.M = spd_csr(self.n, 7)
        self.b = torch.tensor(np.random.default_rng(8).standard_normal(self.n), dtype=F64)

    def A(self, vals=None):
        return sla.SparseTensor(self.vals if vals is None else vals, self.row, self.col,
                                (self.n, self.n))

    def solver(self, A, opts):
        return A.pattern.solver(opts, F64, 1)

    def test_taken_and_equal_to_scipy_and_general_path(self):
        v = self.vals.clone().requires_grad_(True)
        A = self.A(v)
        self.assertTrue(A.pattern.identity)
        for method in ("cholesky", "lu", "cg"):
            x = A.solve(self.b, method=method, rtol=1e-12)
            # the lean path: the solve is the only autograd node
            self.assertEqual(type(x.grad_fn).__name__, "SolveFnBackward")
            self.assertEqual(tuple(x.shape), (self.n,))
            ref = spla.spsolve(self.M.tocsc(), self.b.numpy())
            np.testing.assert_allclose(x.detach().numpy(), ref, rtol=1e-9, atol=1e-12)
            xg = A.solve(self.b.view(self.n, 1), method=method, rtol=1e-12)  # general path
            np.testing.assert_allclose(x.detach().numpy(), xg.detach().numpy()[:, 0],
                                       rtol=1e-9, atol=1e-12)

    def test_gradients_against_dense_reference(self):
        v = self.vals.clone().requires_grad_(True)
        b = self.b.clone().requires_grad_(True)
        g = torch.tensor(np.random.default_rng(9).standard_normal(self.n), dtype=F64)
        x = self.A(v).solve(b, method="cholesky")
        (x * g).sum().backward()
        Ad = dense(self.vals, self.row, self.col, self.n)
        xd = np.linalg.solve(Ad, self.b.numpy())
        lam = np.linalg.solve(Ad.T, g.numpy())
        np.testing.assert_allclose(b.grad.numpy(), lam, rtol=1e-10, atol=1e-12)
        gA = -lam[self.row.numpy()] * xd[self.col.numpy()]
        np.testing.assert_allclose(v.grad.numpy(), gA, rtol=1e-10, atol=1e-12)

    def test_gradcheck_and_gradgradcheck(self):
        v = self.vals.clone().requires_grad_(True)
        b = self.b.clone().requires_grad_(True)
        # lu: gradcheck perturbs one entry at a time (the matrix is then not
        # symmetric, which cholesky refuses)
        def f(v, b):
            return self.A(v).solve(b, method="lu")
        self.assertTrue(gradcheck(f, (v, b), eps=1e-6, atol=1e-7))
        self.assertTrue(gradgradcheck(f, (v, b), eps=1e-6, atol=1e-6))

    def test_backward_after_data_writes_and_other_solves(self):
        """gradcheck's order: forward at v, forwards at other values written
        through .data, v restored, then the first graph's backward: its
        adjoint must use the factorization of v, not of the last values."""
        v = self.vals.clone().requires_grad_(True)
        A = self.A(v)
        x = A.solve(self.b, method="cholesky")
        orig = v.detach().clone()
        # other values, far enough that iterative refinement against the
        # restored values cannot hide a factorization of the wrong ones
        for s in (3.0, 0.5):
            v.data.copy_(orig * s)
            A.solve(self.b, method="cholesky")
        v.data.copy_(orig)
        x.sum().backward()
        Ad = dense(orig, self.row, self.col, self.n)
        xd = np.linalg.solve(Ad, self.b.numpy())
        lam = np.linalg.solve(Ad.T, np.ones(self.n))
        np.testing.assert_allclose(v.grad.numpy(), -lam[self.row.numpy()] * xd[self.col.numpy()],
                                   rtol=1e-10, atol=1e-12)

    def test_data_write_seen_by_the_next_solve(self):
        v = self.vals.clone()
        A = self.A(v)
        x1 = A.solve(self.b, method="cholesky")
        v.data.mul_(2.0)  # no version bump
        x2 = A.solve(self.b, method="cholesky")
        np.testing.assert_allclose(x2.numpy(), 0.5 * x1.numpy(), rtol=1e-10, atol=1e-13)
        v.numpy()[0] += 1.0  # through a numpy view
        Ad = dense(v, self.row, self.col, self.n)
        x3 = A.solve(self.b, method="cholesky")
        np.testing.assert_allclose(x3.numpy(), np.linalg.solve(Ad, self.b.numpy()), rtol=1e-10)

    def test_unchanged_values_not_rebound(self):
        """The memcmp value check: unchanged values are not re-bound (no
        refactorization); an in-place write is."""
        v = self.vals.clone()
        A = self.A(v)
        A.solve(self.b, method="lu")
        m = self.solver(A, _core.options_string("lu")).matrix
        e = m.epoch
        A.solve(self.b, method="lu")
        self.assertEqual(m.epoch, e)
        v[0] = v[0]  # an in-place write bumps the version: re-bound
        A.solve(self.b, method="lu")
        self.assertEqual(m.epoch, e + 1)

    def test_fast_and_general_paths_share_one_binding(self):
        v = self.vals.clone().requires_grad_(True)
        A = self.A(v)
        A.solve(self.b, method="cholesky").sum().backward()
        m = self.solver(A, _core.options_string("cholesky")).matrix
        e = m.epoch
        for _ in range(3):
            A.solve(self.b, method="cholesky").sum().backward()             # fast path
            A.solve(self.b.view(-1, 1), method="cholesky").sum().backward()  # general path
        self.assertEqual(m.epoch, e)  # no re-binding (no refactorization) in turn

    def test_no_grad_path(self):
        A = self.A(self.vals.clone().requires_grad_(True))
        with torch.no_grad():
            x, info = A.solve(self.b, method="cholesky", return_info=True)
        self.assertIsNone(x.grad_fn)
        self.assertFalse(x.requires_grad)
        self.assertTrue(info.converged)
        self.assertEqual(info.method, "cholesky")
        x2 = self.A().solve(self.b, method="cholesky")  # nothing requires grad
        self.assertIsNone(x2.grad_fn)
        np.testing.assert_allclose(x.numpy(), spla.spsolve(self.M.tocsc(), self.b.numpy()),
                                   rtol=1e-10)
        np.testing.assert_allclose(x2.numpy(), x.numpy(), rtol=0, atol=0)

    def test_info_and_adjoint_info(self):
        v = self.vals.clone().requires_grad_(True)
        x, info = self.A(v).solve(self.b, method="cg", rtol=1e-10, return_info=True)
        self.assertIsNone(info.adjoint)
        x.sum().backward()
        self.assertEqual(info.method, "cg")
        self.assertTrue(info.converged)
        self.assertTrue(info.adjoint.converged)
        self.assertGreater(info.adjoint.iterations, 0)

    def test_warning_when_not_converged(self):
        A = self.A()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            A.solve(self.b, method="cg", maxiter=1)
        self.assertTrue(any(issubclass(x.category, sla.SlaConvergenceWarning) for x in w))
        self.assertTrue(any(x.filename == __file__ for x in w))  # points at the caller

    def test_not_taken_keeps_general_semantics(self):
        A = self.A()
        ref = spla.spsolve(self.M.tocsc(), self.b.numpy())
        # a SolverConfig is honoured (the lean path steps aside)
        with sla.SolverConfig(method="cg", rtol=1e-12):
            x, info = A.solve(self.b, return_info=True)
        self.assertEqual(info.method, "cg")
        np.testing.assert_allclose(x.numpy(), ref, rtol=1e-8)
        # float32 and non-contiguous right-hand sides
        x32 = A.solve(self.b.float(), method="cholesky")
        self.assertEqual(x32.dtype, F64)
        np.testing.assert_allclose(x32.numpy(), spla.spsolve(self.M.tocsc(),
                                                             self.b.float().double().numpy()),
                                   rtol=1e-10)
        bb = torch.stack([self.b, self.b], 1)[:, 0]
        self.assertFalse(bb.is_contiguous())
        np.testing.assert_allclose(A.solve(bb, method="cholesky").numpy(), ref, rtol=1e-10)
        # entries not in CSR order (the pattern is not the identity)
        perm = torch.tensor(np.random.default_rng(3).permutation(self.vals.numel()))
        Ap = sla.SparseTensor(self.vals[perm], self.row[perm], self.col[perm], (self.n, self.n))
        self.assertFalse(Ap.pattern.identity)
        np.testing.assert_allclose(Ap.solve(self.b, method="cholesky").numpy(), ref, rtol=1e-10)

    def test_indices_rewritten_in_place_are_followed(self):
        row, col = self.row.clone(), self.col.clone()
        v = self.vals.clone()
        A = sla.SparseTensor(v, row, col, (self.n, self.n))
        A.solve(self.b, method="lu")
        # swap the row and col arrays' contents through numpy (no version
        # bump): A^T, the same matrix for this symmetric one; then break the
        # symmetry with a value and compare with the dense transpose
        rn, cn = row.numpy(), col.numpy()
        tmp = rn.copy()
        rn[:] = cn
        cn[:] = tmp
        v2 = v.clone()
        v2[0] += 3.0
        A2 = sla.SparseTensor(v2, row, col, (self.n, self.n))
        A2._pattern = A._pattern  # the old analysis, which must be re-checked
        x = A2.solve(self.b, method="lu")
        Ad = dense(v2, row, col, self.n)
        np.testing.assert_allclose(x.numpy(), np.linalg.solve(Ad, self.b.numpy()), rtol=1e-10)


if __name__ == "__main__":
    unittest.main()
