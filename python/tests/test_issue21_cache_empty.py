"""Regression tests of issue 21 (reliability probe), defects 6 and 10 and the
slogdet inconsistency of section 11:

* 6: the pattern cache served a stale pattern when the row/col tensors were
  rewritten without a version bump (through torch.from_numpy's numpy array);
* 10: a SparseTensor without stored entries failed every C operation with
  "a borrowed matrix needs a values array", and a 0-size batch was refused;
* 11: slogdet of a singular matrix gave (0, -inf) alone without gradients
  but raised SlaSingularError with requires_grad or in a batch.

Results are compared with NumPy / SciPy, gradients with gradcheck."""

import math
import os
import sys
import unittest
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch
from torch.autograd import gradcheck

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sla  # noqa: E402
from sla import _core  # noqa: E402

F64 = torch.float64
LONG = torch.int64


def scipy_solve(vals, row, col, n, b):
    M = sp.coo_matrix((vals.detach().numpy(), (np.asarray(row), np.asarray(col))),
                      shape=(n, n)).tocsc()
    return spla.spsolve(M, b.detach().numpy())


class PatternCacheTests(unittest.TestCase):
    """Defect 6: index tensors rewritten in place without a version bump."""

    def setUp(self):
        warnings.simplefilter("error", sla.SlaConvergenceWarning)
        self.buf_r = np.zeros(6, dtype=np.int64)
        self.buf_c = np.zeros(6, dtype=np.int64)
        self.row = torch.from_numpy(self.buf_r)  # shares the numpy buffers
        self.col = torch.from_numpy(self.buf_c)
        self.vals = torch.tensor([4., 1., 4., 1., 4., 4.], dtype=F64)
        self.b = torch.tensor([1., 2., 3., 4.], dtype=F64)
        self.graphs = [([0, 0, 1, 2, 2, 3], [0, 1, 1, 2, 3, 3]),
                       ([0, 1, 1, 2, 3, 3], [0, 0, 1, 2, 2, 3])]

    def load(self, g):
        self.buf_r[:], self.buf_c[:] = self.graphs[g]

    def test_new_sparse_tensor_on_rewritten_buffers(self):
        """The probe's reproduction: max error 4.0 before the fix."""
        for method in ("lu", "auto", "gmres"):
            for g in (0, 1, 0, 1):
                self.load(g)
                A = sla.SparseTensor(self.vals, self.row, self.col, (4, 4))
                x = A.solve(self.b, method=method, rtol=1e-13)
                ref = scipy_solve(self.vals, self.buf_r, self.buf_c, 4, self.b)
                np.testing.assert_allclose(x.numpy(), ref, rtol=1e-10, atol=1e-12,
                                           err_msg="%s graph %d" % (method, g))
                y = A @ torch.ones(4, dtype=F64)
                np.testing.assert_allclose(y.numpy(), A.to_dense().sum(1).numpy(), rtol=1e-14)

    def test_same_sparse_tensor_follows_its_indices(self):
        """A SparseTensor (and with_values of it) reads its row/col tensors
        as they are now, like to_dense() does, not as they were."""
        self.load(0)
        A = sla.SparseTensor(self.vals, self.row, self.col, (4, 4))
        A.solve(self.b, method="lu")
        A2 = A.with_values(self.vals * 2)
        self.load(1)
        for M, scale in ((A, 1.0), (A2, 2.0)):
            x = M.solve(self.b, method="lu")
            ref = scipy_solve(self.vals * scale, self.buf_r, self.buf_c, 4, self.b)
            np.testing.assert_allclose(x.numpy(), ref, rtol=1e-12)
            s, lad = M.slogdet()
            np.testing.assert_allclose(lad.item(), np.linalg.slogdet(M.to_dense().numpy())[1],
                                       rtol=1e-12)

    def test_gradient_after_rewrite(self):
        self.load(0)
        sla.SparseTensor(self.vals, self.row, self.col, (4, 4)).solve(self.b, method="lu")
        self.load(1)
        v = self.vals.clone().requires_grad_(True)
        b = self.b.clone().requires_grad_(True)

        def f(v, b):
            return sla.SparseTensor(v, self.row, self.col, (4, 4)).solve(b, method="lu")

        self.assertTrue(gradcheck(f, (v, b), eps=1e-6, atol=1e-8))
        # the gradient against dense torch on the current pattern
        x = f(v, b)
        x.pow(2).sum().backward()
        v2 = self.vals.clone().requires_grad_(True)
        D = torch.zeros(4, 4, dtype=F64).index_put((self.row, self.col), v2, accumulate=True)
        torch.linalg.solve(D, self.b).pow(2).sum().backward()
        np.testing.assert_allclose(v.grad.numpy(), v2.grad.numpy(), rtol=1e-10, atol=1e-12)

    def test_unchanged_indices_still_hit_the_cache(self):
        self.load(0)
        A = sla.SparseTensor(self.vals, self.row, self.col, (4, 4))
        p = A.pattern
        self.assertIs(sla.SparseTensor(self.vals * 3, self.row, self.col, (4, 4)).pattern, p)
        self.assertIs(A.pattern, p)
        self.load(1)
        q = sla.SparseTensor(self.vals, self.row, self.col, (4, 4)).pattern
        self.assertIsNot(q, p)
        self.assertTrue(q.matches(self.row, self.col, 4, 4))
        self.assertFalse(p.matches(self.row, self.col, 4, 4))
        # int32 indices with the same contents match the int64 copy
        self.assertTrue(q.matches(self.row.to(torch.int32), self.col.to(torch.int32), 4, 4))

    def test_rewrite_through_data(self):
        """.data writes do not bump the version counter either."""
        row = torch.tensor(self.graphs[0][0])
        col = torch.tensor(self.graphs[0][1])
        A = sla.SparseTensor(self.vals, row, col, (4, 4))
        A.solve(self.b, method="lu")
        row.data[:] = torch.tensor(self.graphs[1][0])
        col.data[:] = torch.tensor(self.graphs[1][1])
        x = sla.SparseTensor(self.vals, row, col, (4, 4)).solve(self.b, method="lu")
        ref = scipy_solve(self.vals, row.numpy(), col.numpy(), 4, self.b)
        np.testing.assert_allclose(x.numpy(), ref, rtol=1e-12)


def empty(n, m=None, batch=(), dtype=F64, requires_grad=False):
    m = n if m is None else m
    v = torch.zeros(batch + (0,), dtype=dtype, requires_grad=requires_grad)
    return sla.SparseTensor(v, torch.zeros(0, dtype=LONG), torch.zeros(0, dtype=LONG),
                            (n, m))


class EmptyPatternTests(unittest.TestCase):
    """Defect 10: no stored entries, and 0-size batches."""

    def test_matvec_is_zero_with_zero_gradients(self):
        for (n, m) in ((3, 3), (2, 5), (4, 1)):
            for batch in ((), (2,)):
                E = empty(n, m, batch, requires_grad=True)
                x = torch.randn(batch + (m,), dtype=F64, requires_grad=True)
                y = E @ x
                ref = sp.csr_matrix((n, m)) @ np.ones(m)  # SciPy: zeros
                self.assertEqual(tuple(y.shape), batch + (n,))
                self.assertTrue(torch.equal(y, torch.zeros_like(y)))
                np.testing.assert_array_equal(y.detach().reshape(-1, n)[0].numpy(), ref)
                y.sum().backward()
                self.assertEqual(tuple(E.values.grad.shape), batch + (0,))
                self.assertTrue(torch.equal(x.grad, torch.zeros_like(x)))
                Xk = torch.randn(batch + (m, 3), dtype=F64)
                self.assertEqual(tuple((E @ Xk).shape), batch + (n, 3))
        E = empty(3)
        self.assertTrue(gradcheck(lambda v, x: sla.SparseTensor(
            v, E.row, E.col, (3, 3)).matvec(x),
            (torch.zeros(0, dtype=F64, requires_grad=True),
             torch.randn(3, dtype=F64, requires_grad=True))))
        self.assertEqual(tuple(empty(3).T.matvec(torch.ones(3, dtype=F64)).shape), (3,))

    def test_solve_is_singular(self):
        b = torch.ones(3, dtype=F64)
        for method in ("auto", "lu", "cholesky", "ldlt", "cg", "gmres", "minres", "klu"):
            with self.assertRaises(sla.SlaSingularError) as cm:
                empty(3).solve(b, method=method)
            self.assertIn("singular", str(cm.exception))
        with self.assertRaises(sla.SlaSingularError):
            empty(3, batch=(2,)).solve(torch.ones(2, 3, dtype=F64))
        # the same error as an all-zero matrix with a stored pattern
        Z = sla.SparseTensor(torch.zeros(3, dtype=F64), torch.arange(3), torch.arange(3), (3, 3))
        for method in ("auto", "lu"):
            with self.assertRaises(sla.SlaSingularError):
                Z.solve(b, method=method)

    def test_slogdet_is_singular(self):
        for method in ("lu", "ldlt"):
            s, lad = empty(3).slogdet(method=method)
            self.assertEqual((s.item(), lad.item()), (0.0, -math.inf))
            ns, nlad = np.linalg.slogdet(np.zeros((3, 3)))
            self.assertEqual((s.item(), lad.item()), (ns, nlad))
        s, lad = empty(3, batch=(2,)).slogdet()
        self.assertEqual(s.tolist(), [0.0, 0.0])
        self.assertEqual(lad.tolist(), [-math.inf, -math.inf])
        self.assertEqual(empty(3).logdet().item(), -math.inf)
        self.assertEqual(empty(3).det().item(), 0.0)
        # with gradients: the same values, and an empty gradient
        E = empty(3, requires_grad=True)
        s, lad = E.slogdet()
        self.assertEqual((s.item(), lad.item()), (0.0, -math.inf))
        lad.backward()
        self.assertEqual(tuple(E.values.grad.shape), (0,))

    def test_eigsh_of_the_zero_matrix(self):
        E = empty(5, requires_grad=True)
        lam, V = E.eigsh(2, which="SA")
        np.testing.assert_array_equal(lam.detach().numpy(), [0.0, 0.0])
        self.assertEqual(tuple(V.shape), (5, 2))
        np.testing.assert_allclose((V.T @ V).detach().numpy(), np.eye(2), atol=1e-15)
        np.testing.assert_allclose((E @ V.detach()).detach().numpy(), np.zeros((5, 2)))
        (lam.sum() + V.sum()).backward()
        self.assertEqual(tuple(E.values.grad.shape), (0,))
        lam2 = empty(5, batch=(3,)).eigsh(1, return_eigenvectors=False)
        self.assertEqual(tuple(lam2.shape), (3, 1))
        with self.assertRaises(ValueError):
            empty(5).eigsh(5)

    def test_zero_by_zero(self):
        O = empty(0)
        self.assertEqual(tuple((O @ torch.ones(0, dtype=F64)).shape), (0,))
        self.assertEqual(tuple(O.solve(torch.ones(0, dtype=F64)).shape), (0,))
        s, lad = O.slogdet()
        self.assertEqual((s.item(), lad.item()), tuple(np.linalg.slogdet(np.zeros((0, 0)))))

    def test_zero_size_batch(self):
        row, col = torch.tensor([0, 1, 2, 0]), torch.tensor([0, 1, 2, 2])
        v = torch.ones(0, 4, dtype=F64, requires_grad=True)
        A = sla.SparseTensor(v, row, col, (3, 3))
        x = torch.ones(0, 3, dtype=F64, requires_grad=True)
        y = A @ x
        self.assertEqual(tuple(y.shape), (0, 3))
        self.assertEqual(tuple((A @ torch.ones(0, 3, 2, dtype=F64)).shape), (0, 3, 2))
        sol = A.solve(x)
        self.assertEqual(tuple(sol.shape), (0, 3))
        sol2, info = A.solve(x, method="cg", return_info=True)
        self.assertEqual(tuple(sol2.shape), (0, 3))
        self.assertEqual(info.items, [])
        s, lad = A.slogdet()
        self.assertEqual((tuple(s.shape), tuple(lad.shape)), ((0,), (0,)))
        lam, V = A.eigsh(1)
        self.assertEqual((tuple(lam.shape), tuple(V.shape)), ((0, 1), (0, 3, 1)))
        (y.sum() + sol.sum() + lad.sum() + lam.sum() + V.sum()).backward()
        self.assertEqual(tuple(v.grad.shape), (0, 4))
        self.assertEqual(tuple(x.grad.shape), (0, 3))
        # float32 values give float32 results, as for a non-empty batch
        A32 = A.to(torch.float32)
        self.assertEqual((A32 @ torch.ones(0, 3, dtype=torch.float32)).dtype, torch.float32)


class SlogdetConsistencyTests(unittest.TestCase):
    """Section 11: slogdet of a singular matrix, alone / batched / with
    gradients, gives the same values."""

    row = torch.tensor([0, 0, 1, 1])
    col = torch.tensor([0, 1, 0, 1])
    sing = [1., 2., 2., 4.]      # det 0
    good = [2., 1., 1., 3.]      # det 5
    neg = [1., 3., 3., 1.]       # det -8

    def slogdet(self, vals, grad, method):
        v = torch.tensor(vals, dtype=F64, requires_grad=grad)
        s, lad = sla.SparseTensor(v, self.row, self.col, (2, 2)).slogdet(method=method)
        return s.detach(), lad.detach()

    def test_values_agree(self):
        for method in ("lu", "ldlt", "klu"):
            for vals in ([self.sing], [self.good], [self.sing, self.good],
                         [self.good, self.neg, self.sing], [self.sing, self.sing]):
                v = vals[0] if len(vals) == 1 else vals
                ref = np.linalg.slogdet(np.array(vals).reshape(-1, 2, 2))
                plain = self.slogdet(v, False, method)
                withgrad = self.slogdet(v, True, method)
                for out in (plain, withgrad):
                    np.testing.assert_array_equal(out[0].numpy().ravel(), ref[0],
                                                  err_msg="%s %s" % (method, vals))
                    np.testing.assert_allclose(out[1].numpy().ravel(), ref[1], rtol=1e-13,
                                               err_msg="%s %s" % (method, vals))
                self.assertTrue(torch.equal(plain[0], withgrad[0]))
                self.assertTrue(torch.equal(plain[1], withgrad[1]))
                with torch.no_grad():
                    ng = self.slogdet(v, True, method)
                self.assertTrue(torch.equal(plain[1], ng[1]))

    def test_gradient_of_a_batch_with_a_singular_member(self):
        v = torch.tensor([self.good, self.sing, self.neg], dtype=F64, requires_grad=True)
        A = sla.SparseTensor(v, self.row, self.col, (2, 2))
        s, lad = A.slogdet()
        # the singular member's log|det| is -inf; its gradient does not exist
        with self.assertRaises(sla.SlaSingularError) as cm:
            lad.sum().backward(retain_graph=True)
        self.assertIn("matrix 1", str(cm.exception))
        # masked out, the others get the dense gradient inv(A)^T
        mask = torch.isfinite(lad)
        torch.where(mask, lad, torch.zeros_like(lad)).sum().backward()
        dense = v.detach().reshape(3, 2, 2)
        for i in (0, 2):
            g = torch.linalg.inv(dense[i]).T.reshape(4)
            np.testing.assert_allclose(v.grad[i].numpy(), g.numpy(), rtol=1e-12)
        np.testing.assert_array_equal(v.grad[1].numpy(), np.zeros(4))

    def test_gradcheck_nonsingular_batch(self):
        v = torch.tensor([self.good, self.neg], dtype=F64, requires_grad=True)
        self.assertTrue(gradcheck(
            lambda v: sla.SparseTensor(v, self.row, self.col, (2, 2)).slogdet()[1], (v,)))


class EigshArgumentTests(unittest.TestCase):
    """Section 11: a bad k is refused with a clear message before anything
    of k columns is allocated (k = -1 gave a torch "negative dimension"
    error, k = 2**40 tried to allocate 8 TB)."""

    def test_bad_k(self):
        A = sla.SparseTensor.from_scipy(sp.diags([2.0, 3.0, 4.0, 5.0]).tocsr())
        for k in (0, -1, 2 ** 40, 1.5, True):
            with self.assertRaisesRegex(ValueError, "k must be"):
                A.eigsh(k=k)
        with self.assertRaisesRegex(sla.SlaValueError, "k = 4 must be in"):
            A.eigsh(k=4)  # k = n: the C library's message
        self.assertEqual(A.eigsh(k=2, which="LA", return_eigenvectors=False).shape[-1], 2)


if __name__ == "__main__":
    unittest.main()
