"""Tests of SparseTensor.eigsh and sla.nonlinear_solve (the binding of
include/sla/eig.h and include/sla/nonlinear.h): results against NumPy /
SciPy and the C library's built-in Bratu problem, gradients with
torch.autograd.gradcheck in float64."""

import ctypes
import os
import sys
import unittest
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch
import torch.nn.functional as Fn
from torch.autograd import gradcheck

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sla  # noqa: E402
from sla import _lib  # noqa: E402

F64 = torch.float64
HAVE_EIG = True  # every C symbol is required by sla._lib
HAVE_NL = True


def sym_parts(n, per_row, seed, shift=0.0):
    """A random symmetric n x n matrix given by its diagonal d and strict
    upper triangle o: (row, col, d, o, scipy matrix), values = cat(d, o, o)."""
    rng = np.random.default_rng(seed)
    R = sp.random(n, n, density=min(1.0, per_row / n), random_state=rng, format="coo")
    R.data = rng.uniform(-1, 1, R.nnz)
    U = sp.triu(R + R.T, k=1).tocoo()
    d = rng.uniform(-3, 3, n) + shift
    row = torch.from_numpy(np.concatenate([np.arange(n), U.row, U.col]).astype(np.int64))
    col = torch.from_numpy(np.concatenate([np.arange(n), U.col, U.row]).astype(np.int64))
    M = (U + U.T + sp.diags(d)).tocsr()
    return row, col, torch.tensor(d, dtype=F64), torch.tensor(U.data, dtype=F64), M


@unittest.skipUnless(HAVE_EIG, "libsla without the eigensolver")
class EigshTests(unittest.TestCase):
    def setUp(self):
        warnings.simplefilter("error", sla.SlaConvergenceWarning)

    def test_vs_numpy_and_scipy(self):
        n = 40
        row, col, d, o, M = sym_parts(n, 4, 1)
        A = sla.SparseTensor(torch.cat([d, o, o]), row, col, (n, n))
        ref = np.linalg.eigvalsh(M.toarray())  # ascending
        k = 4
        cases = {"LA": ref[-k:], "SA": ref[:k],
                 "LM": np.sort(ref[np.argsort(-abs(ref))[:k]]),
                 "SM": np.sort(ref[np.argsort(abs(ref))[:k]])}
        for which, want in cases.items():
            lam, V = A.eigsh(k, which)
            self.assertEqual(tuple(lam.shape), (k,))
            self.assertEqual(tuple(V.shape), (n, k))
            np.testing.assert_allclose(lam.numpy(), want, rtol=1e-10, atol=1e-10, err_msg=which)
            # eigenpairs and orthonormality
            R = M @ V.numpy() - V.numpy() * lam.numpy()
            self.assertLess(np.abs(R).max(), 1e-8, which)
            np.testing.assert_allclose(V.numpy().T @ V.numpy(), np.eye(k), atol=1e-10)
        # shift-invert around sigma, against scipy's
        sigma = 0.3
        lam = A.eigsh(k, "LM", sigma=sigma, return_eigenvectors=False)
        ref_si = np.sort(spla.eigsh(M, k, sigma=sigma, which="LM",
                                    return_eigenvectors=False))
        np.testing.assert_allclose(lam.numpy(), ref_si, rtol=1e-10, atol=1e-10)
        want = np.sort(ref[np.argsort(abs(ref - sigma))[:k]])
        np.testing.assert_allclose(lam.numpy(), want, rtol=1e-10, atol=1e-10)
        lam, V, info = A.eigsh(k, "SA", return_info=True)
        self.assertTrue(info[0].converged)
        self.assertEqual(info[0].nconv, k)
        self.assertIn("arpack", info[0].method)

    def test_gradcheck_eigenvalues(self):
        n = 12
        row, col, d, o, _ = sym_parts(n, 3, 2)
        d.requires_grad_(True)
        o.requires_grad_(True)
        for which, sigma in [("SA", None), ("LA", None), ("LM", 0.1)]:
            def f(d_, o_):
                A = sla.SparseTensor(torch.cat([d_, o_, o_]), row, col, (n, n))
                return A.eigsh(3, which, sigma=sigma, return_eigenvectors=False)
            self.assertTrue(gradcheck(f, (d, o), eps=1e-6, atol=1e-7, rtol=1e-6), which)

    def test_gradcheck_sign_invariant_eigenvector_loss(self):
        n = 12
        row, col, d, o, _ = sym_parts(n, 3, 4)
        d.requires_grad_(True)
        o.requires_grad_(True)
        w = torch.linspace(-1, 2, n, dtype=F64)
        c = torch.tensor([1.0, -0.5, 2.0], dtype=F64)

        def f(d_, o_):
            A = sla.SparseTensor(torch.cat([d_, o_, o_]), row, col, (n, n))
            lam, V = A.eigsh(3, "SA", grad_rtol=1e-13)
            return ((V.T @ w) ** 2 * c).sum() + lam.sum()
        self.assertTrue(gradcheck(f, (d, o), eps=1e-6, atol=1e-6, rtol=1e-5))

    def test_gradient_on_every_stored_value(self):
        # gA[p] = v[r] v[c] for an eigenvalue: compare with the dense formula
        n = 15
        row, col, d, o, M = sym_parts(n, 3, 5)
        vals = torch.cat([d, o, o]).requires_grad_(True)
        lam, V = sla.SparseTensor(vals, row, col, (n, n)).eigsh(2, "LA")
        lam[1].backward()
        w, U = np.linalg.eigh(M.toarray())
        u = U[:, -1]
        np.testing.assert_allclose(vals.grad.numpy(), u[row.numpy()] * u[col.numpy()],
                                   atol=1e-10)

    def test_batched_and_float32(self):
        n = 20
        row, col, d, o, _ = sym_parts(n, 3, 6)
        d2 = torch.stack([d, d + 0.5 * torch.linspace(0, 1, n, dtype=F64)])
        o2 = torch.stack([o, 0.7 * o])
        vals = torch.cat([d2, o2, o2], dim=1)
        A = sla.SparseTensor(vals, row, col, (2, n, n))
        lam, V = A.eigsh(3, "SA")
        self.assertEqual(tuple(lam.shape), (2, 3))
        self.assertEqual(tuple(V.shape), (2, n, 3))
        for i in range(2):
            ref = np.linalg.eigvalsh(A[i].to_dense().numpy())[:3]
            np.testing.assert_allclose(lam[i].numpy(), ref, rtol=1e-10, atol=1e-10)
            li = A[i].eigsh(3, "SA")[0]
            np.testing.assert_allclose(lam[i].numpy(), li.numpy(), rtol=1e-12, atol=1e-12)
        # batched gradient
        d2.requires_grad_(True)
        o2.requires_grad_(True)

        def f(d_, o_):
            B = sla.SparseTensor(torch.cat([d_, o_, o_], dim=1), row, col, (2, n, n))
            return B.eigsh(2, "LA", return_eigenvectors=False)
        self.assertTrue(gradcheck(f, (d2, o2), eps=1e-6, atol=1e-7, rtol=1e-6))
        # float32 values: float32 results of the float64 computation
        A32 = A.to(torch.float32)
        lam32, V32 = A32.eigsh(3, "SA")
        self.assertEqual(lam32.dtype, torch.float32)
        self.assertEqual(V32.dtype, torch.float32)
        np.testing.assert_allclose(lam32.numpy(), lam.numpy(), rtol=1e-5, atol=1e-5)

    def test_errors_carry_the_c_message(self):
        A = sla.poisson(2, 5)
        with self.assertRaisesRegex(sla.SlaValueError, "k = 25 must be in"):
            A.eigsh(25)
        M = sp.random(10, 10, density=0.3, random_state=1).tocsr() + sp.eye(10)
        with self.assertRaisesRegex(sla.SlaValueError, "not symmetric"):
            sla.SparseTensor.from_scipy(M).eigsh(2)
        with self.assertRaisesRegex(ValueError, "which"):
            A.eigsh(2, "XX")
        with self.assertRaisesRegex(ValueError, "v0"):
            A.eigsh(2, v0=torch.ones(3))
        # 2-D Poisson has a double eigenvalue: an eigenvector loss that is
        # not invariant inside the pair is refused, an invariant one is not
        v = A.values.clone().requires_grad_(True)
        lam, V = A.with_values(v).eigsh(3, "SA")
        w = torch.arange(25, dtype=F64)
        with self.assertRaisesRegex(sla.SlaUnavailableError, "degenerate"):
            (V[:, 1] @ w).pow(2).backward(retain_graph=True)
        lam[1:].sum().backward()
        self.assertTrue(torch.isfinite(v.grad).all())


# ---- nonlinear solve ---------------------------------------------------------

N = 7
H = 1.0 / (N + 1)


def bratu(u, mu, f):
    """Bratu with a source: 5-point -Laplace u - mu e^u - f, times h^2
    (sla_nl_bratu2d's scaling), zero Dirichlet boundary, x fastest."""
    u2 = u.reshape(N, N)
    up = Fn.pad(u2, (1, 1, 1, 1))
    lap = 4 * u2 - up[:-2, 1:-1] - up[2:, 1:-1] - up[1:-1, :-2] - up[1:-1, 2:]
    return (lap - H * H * mu * torch.exp(u2) - H * H * f.reshape(N, N)).reshape(-1)


def c_bratu(mu):
    """u* and du*/dmu . 1 from the C library's built-in sla_nl_bratu2d."""
    lib, P = _lib.lib, ctypes.c_void_p
    lib.sla_nl_bratu2d.restype = ctypes.c_int
    lib.sla_nl_bratu2d.argtypes = [P, ctypes.c_int64, ctypes.c_int, ctypes.POINTER(P)]
    lib.sla_nl_builtin_problem.restype = P
    lib.sla_nl_builtin_problem.argtypes = [P]
    lib.sla_nl_builtin_destroy.restype = None
    lib.sla_nl_builtin_destroy.argtypes = [ctypes.POINTER(P)]
    api = _lib.API
    B, S = P(), P()
    _lib.check(lib.sla_nl_bratu2d(_lib.ctx(), N, 0, ctypes.byref(B)))
    opts = ctypes.create_string_buffer(int(api["nl_options_size"]()))
    api["nl_options_default"](opts)
    _lib.check(api["nl_options_parse"](_lib.ctx(), b"rtol=1e-13", opts))
    try:
        _lib.check(api["nlsolver_create"](_lib.ctx(), lib.sla_nl_builtin_problem(B), opts,
                                          ctypes.byref(S)))
        theta = torch.tensor([mu], dtype=F64)
        u = torch.zeros(N * N, dtype=F64)
        _lib.check(api["nlsolver_solve"](_lib.ctx(), S, theta.data_ptr(), u.data_ptr(), None))
        g = torch.empty(1, dtype=F64)
        ones = torch.ones(N * N, dtype=F64)
        _lib.check(api["nlsolver_solve_vjp"](_lib.ctx(), S, ones.data_ptr(), g.data_ptr(), None,
                                             None))
        return u, float(g[0])
    finally:
        api["nlsolver_destroy"](ctypes.byref(S))
        lib.sla_nl_builtin_destroy(ctypes.byref(B))


def bratu_jacobian(A):
    """A callable Jacobian: the Laplacian's values minus h^2 mu e^u on the diagonal."""
    diag = A.row == A.col

    def jac(u, mu, f):
        v = A.values.clone()
        v[diag] = v[diag] - H * H * mu * torch.exp(u[A.row[diag]])
        return A.with_values(v)
    return jac


@unittest.skipUnless(HAVE_NL, "libsla without the nonlinear solver")
class NonlinearTests(unittest.TestCase):
    def setUp(self):
        warnings.simplefilter("error", sla.SlaConvergenceWarning)
        self.A = sla.poisson(2, N)  # the Jacobian's pattern (values ignored)
        self.u0 = torch.zeros(N * N, dtype=F64)
        self.modes = {"autograd pattern": dict(jacobian=self.A),
                      "callable": dict(jacobian=bratu_jacobian(self.A),
                                       jacobian_symmetric=True),
                      "matrix-free": dict(jacobian=None, linear_method="gmres",
                                          linear_rtol=1e-13)}

    def test_vs_c_builtin_bratu(self):
        mu = torch.tensor(3.0, dtype=F64, requires_grad=True)
        f = torch.zeros(N * N, dtype=F64)
        u_c, g_c = c_bratu(3.0)
        for name, kw in self.modes.items():
            u, info = sla.nonlinear_solve(bratu, self.u0, mu, f, rtol=1e-13, return_info=True,
                                          **kw)
            self.assertTrue(info.converged, name)
            self.assertLess(info.residual, 1e-12, name)
            self.assertGreater(info.iterations, 1, name)
            self.assertEqual(len(info.history), info.iterations + 1, name)
            np.testing.assert_allclose(u.detach().numpy(), u_c.numpy(), rtol=1e-10, atol=1e-12,
                                       err_msg=name)
            mu.grad = None
            u.sum().backward()
            self.assertAlmostEqual(float(mu.grad), g_c, delta=1e-9 * abs(g_c), msg=name)
            self.assertIsNotNone(info.adjoint)
        self.assertEqual(info.method, "newton-krylov")

    def test_gradcheck_scalar_and_vector_parameter(self):
        mu = torch.tensor(2.5, dtype=F64, requires_grad=True)
        f = torch.linspace(-1, 2, N * N, dtype=F64).requires_grad_(True)
        for name, kw in self.modes.items():
            def solve(m, ff):
                return sla.nonlinear_solve(bratu, self.u0, m, ff, rtol=1e-13, **kw)
            self.assertTrue(gradcheck(solve, (mu, f), eps=1e-6, atol=1e-8, rtol=1e-6), name)

    def test_shapes_dtypes_and_constants(self):
        # u0 of shape (N, N), a float32 parameter, a Python constant
        def F(u, mu, scale):
            return bratu(u.reshape(-1), mu, torch.zeros(N * N, dtype=F64)).reshape(N, N) * scale
        mu32 = torch.tensor(1.5, dtype=torch.float32, requires_grad=True)
        u = sla.nonlinear_solve(F, torch.zeros(N, N, dtype=F64), mu32, 2.0, jacobian=self.A)
        self.assertEqual(tuple(u.shape), (N, N))
        u.sum().backward()
        self.assertEqual(mu32.grad.dtype, torch.float32)
        u_c, g_c = c_bratu(1.5)
        np.testing.assert_allclose(u.detach().reshape(-1).numpy(), u_c.numpy(), atol=1e-10)
        self.assertAlmostEqual(float(mu32.grad), g_c, delta=1e-5 * abs(g_c))

    def test_callback_exceptions_propagate(self):
        mu = torch.tensor(1.0, dtype=F64)
        f = torch.zeros(N * N, dtype=F64)

        class Boom(Exception):
            pass

        def bad_residual(u, mu, f):
            raise Boom("from the residual")
        with self.assertRaises(Boom) as cm:
            sla.nonlinear_solve(bad_residual, self.u0, mu, f, jacobian=self.A)
        self.assertIsInstance(cm.exception.__cause__, sla.SlaError)
        self.assertIn("callback", str(cm.exception.__cause__))

        calls = [0]

        def bad_jacobian(u, mu, f):
            calls[0] += 1
            if calls[0] > 1:  # the first call (the pattern) succeeds
                raise Boom("from the jacobian")
            return bratu_jacobian(self.A)(u, mu, f)
        with self.assertRaisesRegex(Boom, "from the jacobian"):
            sla.nonlinear_solve(bratu, self.u0, mu, f, jacobian=bad_jacobian)
        # the next solve is not affected
        u = sla.nonlinear_solve(bratu, self.u0, mu, f, jacobian=self.A)
        self.assertLess(float(bratu(u, mu, f).norm()), 1e-12)

        def wrong_size(u, mu, f):
            return u[:-1]
        with self.assertRaisesRegex(ValueError, "equation per unknown"):
            sla.nonlinear_solve(wrong_size, self.u0, mu, f, jacobian=self.A)

        calls[0] = 0

        def changing(u, mu, f):
            calls[0] += 1
            if calls[0] == 1:
                return bratu_jacobian(self.A)(u, mu, f)
            return sla.SparseTensor.from_dense(torch.eye(N * N, dtype=F64))
        with self.assertRaisesRegex(ValueError, "pattern"):
            sla.nonlinear_solve(bratu, self.u0, mu, f, jacobian=changing)

    def test_options_and_nonconvergence(self):
        mu = torch.tensor(1.0, dtype=F64)
        f = torch.zeros(N * N, dtype=F64)
        with self.assertRaisesRegex(sla.SlaValueError, "rtol"):
            sla.nonlinear_solve(bratu, self.u0, mu, f, jacobian=self.A, rtoll=1e-3)
        with self.assertRaisesRegex(TypeError, "jacobian"):
            sla.nonlinear_solve(bratu, self.u0, mu, f, jacobian=3)
        # beyond the turning point (mu > 6.81) there is no solution
        mu_big = torch.tensor(20.0, dtype=F64, requires_grad=True)
        with self.assertWarns(sla.SlaConvergenceWarning):
            u = sla.nonlinear_solve(bratu, self.u0, mu_big, f, jacobian=self.A, maxiter=20)
        u, info = sla.nonlinear_solve(bratu, self.u0, mu_big, f, jacobian=self.A, maxiter=20,
                                      return_info=True)
        self.assertFalse(info.converged)
        self.assertTrue(info.reason.startswith("diverged"), info.reason)
        with self.assertRaises(sla.SlaError):  # no gradient without a converged solve
            u.sum().backward()


class RequiredSymbolsTests(unittest.TestCase):
    def test_every_symbol_is_prototyped_at_import(self):
        # sla._lib requires every C function it calls when it is imported:
        # no optional (looked up later, maybe missing) symbols remain
        self.assertFalse(hasattr(_lib, "optional") or hasattr(_lib, "OPTIONAL"))
        for name in ("eigsh_batch_vjp", "nlsolver_solve_vjp", "logdet_vjp", "zsolver_solve"):
            f = _lib.API[name]
            self.assertTrue(callable(f) and f.argtypes is not None, name)


if __name__ == "__main__":
    unittest.main()
