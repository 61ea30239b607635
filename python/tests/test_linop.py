"""Matrix-free solves (sla.solve on a matvec callable, sla.LinearOperator):
results against torch.linalg.solve on the dense matrix, gradients to b and
to the parameters of the matvec's torch code by gradcheck and gradgradcheck,
a Hessian-vector product against finite differences of gradients, and the
error paths of the callbacks."""

import os
import sys
import unittest
import warnings

import numpy as np
import torch
from torch.autograd import gradcheck, gradgradcheck

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sla  # noqa: E402

F64 = torch.float64


def dense_problem(n, seed, spd=True):
    """K(theta) = base + 0.3 theta (theta n x n), b; base SPD or nonsymmetric."""
    g = torch.Generator().manual_seed(seed)
    K0 = torch.randn(n, n, generator=g, dtype=F64)
    base = K0 @ K0.T + n * torch.eye(n, dtype=F64) if spd else K0 + 2 * n * torch.eye(n, dtype=F64)
    theta = 0.1 * torch.randn(n, n, generator=g, dtype=F64)
    b = torch.randn(n, generator=g, dtype=F64)
    return base, theta, b


class TestForward(unittest.TestCase):
    def test_methods_against_dense(self):
        n = 12
        for spd, methods in ((True, ("cg", "minres", "bicgstab", "gmres", "auto")),
                             (False, ("bicgstab", "gmres", "auto"))):
            base, _, b = dense_problem(n, 1, spd)
            ref = torch.linalg.solve(base, b)
            for m in methods:
                x, info = sla.solve(lambda v: base @ v, b, shape=(n, n), method=m, rtol=1e-12,
                                    return_info=True)
                self.assertLess(float((x - ref).norm() / ref.norm()), 1e-9, m)
                self.assertTrue(info.converged)
                self.assertEqual(info.backend, "matrix-free")
                self.assertEqual(info.method, "gmres" if m == "auto" else m)
                self.assertLess(info.residual, 1e-11)
                # the reported residual is the true one
                self.assertAlmostEqual(info.residual, float((b - base @ x).norm() / b.norm()),
                                       delta=1e-13)

    def test_columns_dtype_x0(self):
        n = 9
        base, _, _ = dense_problem(n, 2, False)
        B = torch.randn(n, 3, generator=torch.Generator().manual_seed(3), dtype=F64)
        X = sla.solve(lambda v: base @ v, B, shape=(n, n), method="gmres", rtol=1e-12)
        self.assertEqual(tuple(X.shape), (n, 3))
        self.assertTrue(torch.allclose(X, torch.linalg.solve(base, B), atol=1e-10))
        x32 = sla.solve(lambda v: base @ v, B[:, 0].float(), shape=(n, n), method="bicgstab")
        self.assertEqual(x32.dtype, torch.float32)
        x, info = sla.solve(lambda v: base @ v, B[:, 0], shape=(n, n), method="gmres",
                            x0=X[:, 0], return_info=True)
        self.assertEqual(info.iterations, 0)

    def test_linear_operator(self):
        n = 10
        base, _, b = dense_problem(n, 4, False)
        A = sla.LinearOperator((n, n), lambda v: base @ v, lambda v: base.T @ v)
        self.assertTrue(torch.allclose(A @ b, base @ b))
        self.assertTrue(torch.allclose(A.T @ b, base.T @ b))
        x = A.solve(b, method="gmres", rtol=1e-12)
        self.assertTrue(torch.allclose(x, torch.linalg.solve(base, b), atol=1e-10))
        xt = sla.solve(A.T, b, method="bicgstab", rtol=1e-12)
        self.assertTrue(torch.allclose(xt, torch.linalg.solve(base.T, b), atol=1e-10))
        S = sla.LinearOperator((n, n), lambda v: (base + base.T) @ v, symmetric=True)
        self.assertTrue(torch.allclose(S.T @ b, (base + base.T) @ b))
        self.assertIn("symmetric", repr(S))

    def test_preconditioner(self):
        # a badly scaled SPD diagonal-plus-coupling operator: Jacobi helps
        n = 60
        rng = np.random.default_rng(5)
        d = torch.tensor(10.0 ** rng.uniform(0, 4, n), dtype=F64)
        K = torch.diag(d) + 0.1 * torch.ones(n, n, dtype=F64)
        b = torch.tensor(rng.standard_normal(n), dtype=F64)
        x0, i0 = sla.solve(lambda v: K @ v, b, shape=(n, n), method="cg", rtol=1e-10,
                           return_info=True)
        x1, i1 = sla.solve(lambda v: K @ v, b, shape=(n, n), method="cg", rtol=1e-10,
                           M=lambda r: r / d, return_info=True)
        ref = torch.linalg.solve(K, b)
        self.assertLess(float((x1 - ref).norm() / ref.norm()), 1e-8)
        self.assertEqual(i1.preconditioner, "user")
        self.assertLess(i1.iterations, i0.iterations)

    def test_sparse_tensor_passthrough(self):
        A = sla.poisson(2, 5)
        b = torch.ones(25, dtype=F64)
        self.assertTrue(torch.allclose(sla.solve(A, b, method="cg"), A.solve(b, method="cg")))


class TestErrors(unittest.TestCase):
    def test_callback_exception_is_raised_again(self):
        n = 8
        base, _, b = dense_problem(n, 6)
        calls = [0]

        def bad(v):
            calls[0] += 1
            if calls[0] == 3:
                raise KeyError("boom")
            return base @ v
        with self.assertRaises(KeyError):
            sla.solve(bad, b, shape=(n, n), method="cg")
        self.assertEqual(calls[0], 3)  # no call after the failure
        with self.assertRaisesRegex(ValueError, "returned shape"):
            sla.solve(lambda v: v[:3], b, shape=(n, n))
        with self.assertRaisesRegex(TypeError, "complex"):
            sla.solve(lambda v: v.to(torch.complex128), b, shape=(n, n))
        # the binding is usable afterwards
        x = sla.solve(lambda v: base @ v, b, shape=(n, n), method="cg", rtol=1e-12)
        self.assertTrue(torch.allclose(x, torch.linalg.solve(base, b), atol=1e-10))
        # a failing preconditioner
        with self.assertRaisesRegex(RuntimeError, "pc"):
            sla.solve(lambda v: base @ v, b, shape=(n, n), method="gmres",
                      M=lambda r: (_ for _ in ()).throw(RuntimeError("pc")))

    def test_arguments(self):
        n = 5
        base, _, b = dense_problem(n, 7, False)
        with self.assertRaisesRegex(ValueError, "shape"):
            sla.solve(lambda v: base @ v, b)
        with self.assertRaisesRegex(ValueError, "expected"):
            sla.solve(lambda v: base @ v, b[:3], shape=(n, n))
        with self.assertRaises(sla.SlaValueError):
            sla.solve(lambda v: base @ v, b, shape=(n, n), method="lu")
        with self.assertRaises(sla.SlaValueError):
            sla.solve(lambda v: base @ v, b, shape=(n, n), method="cgg")
        with self.assertRaises(TypeError):
            sla.solve(3, b, shape=(n, n))
        # no rmatvec: the forward works, the gradient to b needs A^T
        bb = b.clone().requires_grad_()
        x = sla.solve(lambda v: base @ v, bb, shape=(n, n), method="gmres")
        with self.assertRaisesRegex(ValueError, "rmatvec"):
            x.sum().backward()

    def test_not_converged_warns(self):
        n = 30
        base, _, b = dense_problem(n, 8, False)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            sla.solve(lambda v: base @ v, b, shape=(n, n), method="bicgstab", maxiter=1)
        self.assertTrue(any(issubclass(x.category, sla.SlaConvergenceWarning) for x in w))
        x, info = sla.solve(lambda v: base @ v, b, shape=(n, n), method="bicgstab", maxiter=1,
                            return_info=True)
        self.assertFalse(info.converged)
        self.assertEqual(info.reason, "diverged_maxiter")


class TestGradients(unittest.TestCase):
    def test_gradcheck_dense_parameters(self):
        n = 6
        for spd, method in ((True, "cg"), (True, "minres"), (False, "gmres"),
                            (False, "bicgstab")):
            base, theta, b = dense_problem(n, 10, spd)
            theta.requires_grad_()
            b.requires_grad_()

            def K(t):
                return base + 0.3 * (t + t.T if spd else t)

            def f(t, bb):
                return sla.solve(lambda v: K(t) @ v, bb, shape=(n, n), method=method,
                                 rmatvec=lambda v: K(t).T @ v, rtol=1e-13)
            self.assertTrue(gradcheck(f, (theta, b)), method)
            self.assertTrue(gradgradcheck(f, (theta, b)), method)
            # the same gradient as the dense reference
            x = f(theta, b)
            w = torch.linspace(-1, 1, n, dtype=F64)
            gt, gb = torch.autograd.grad((w * x).sum(), (theta, b))
            xr = torch.linalg.solve(K(theta), b)
            rt, rb = torch.autograd.grad((w * xr).sum(), (theta, b))
            self.assertTrue(torch.allclose(gt, rt, atol=1e-10) and torch.allclose(gb, rb,
                                                                                  atol=1e-10))

    def test_columns_and_nonleaf_parameter(self):
        n = 5
        base, theta, _ = dense_problem(n, 11, False)
        raw = theta.clone().requires_grad_()
        B = torch.randn(n, 2, generator=torch.Generator().manual_seed(2), dtype=F64,
                        requires_grad=True)

        def f(r, bb):
            s = torch.nn.functional.softplus(r)  # a non-leaf parameter
            return sla.solve(sla.LinearOperator((n, n), lambda v: (base + s) @ v,
                                                lambda v: (base + s).T @ v), bb,
                             method="gmres", rtol=1e-13)
        self.assertTrue(gradcheck(f, (raw, B)))
        self.assertTrue(gradgradcheck(f, (raw, B)))

    def test_sparse_tensor_matvec(self):
        # matvec through a SparseTensor whose values depend on theta
        M = sla.poisson(2, 4)
        n = 16
        vals0 = M.values.detach()
        g = torch.Generator().manual_seed(12)
        v = (0.1 * torch.randn(vals0.shape, generator=g, dtype=F64)).requires_grad_()
        b = torch.randn(n, generator=g, dtype=F64, requires_grad=True)

        def f(dv, bb):
            A = M.with_values(vals0 + dv)
            return sla.solve(lambda u: A @ u, bb, shape=(n, n), method="gmres",
                             rmatvec=lambda u: A.T @ u, rtol=1e-13)
        self.assertTrue(gradcheck(f, (v, b)))
        self.assertTrue(gradgradcheck(f, (v, b)))
        D = M.with_values(vals0 + v).to_dense()
        x = f(v, b)
        self.assertTrue(torch.allclose(x, torch.linalg.solve(D, b), atol=1e-10))

    def test_hessian_vector_product(self):
        # L(theta) = sum w x(theta)^2; H v by double backward vs central
        # differences of the gradient
        n = 7
        base, theta0, b = dense_problem(n, 13, False)
        w = torch.linspace(0.5, 1.5, n, dtype=F64)

        def grad_at(t, create_graph=False):
            t = t if t.requires_grad else t.clone().requires_grad_()
            x = sla.solve(lambda u: (base + t) @ u, b, shape=(n, n), method="gmres",
                          rmatvec=lambda u: (base + t).T @ u, rtol=1e-14)
            return torch.autograd.grad((w * x * x).sum(), t, create_graph=create_graph)[0], t

        vdir = torch.randn(n, n, generator=torch.Generator().manual_seed(14), dtype=F64)
        g, t = grad_at(theta0.clone().requires_grad_(), create_graph=True)
        hv = torch.autograd.grad((g * vdir).sum(), t)[0]
        eps = 1e-5
        gp, _ = grad_at(theta0 + eps * vdir)
        gm, _ = grad_at(theta0 - eps * vdir)
        fd = (gp - gm) / (2 * eps)
        self.assertLess(float((hv - fd).norm() / fd.norm()), 1e-6)
        # and the dense reference's H v
        tr = theta0.clone().requires_grad_()
        xr = torch.linalg.solve(base + tr, b)
        gr = torch.autograd.grad((w * xr * xr).sum(), tr, create_graph=True)[0]
        hr = torch.autograd.grad((gr * vdir).sum(), tr)[0]
        self.assertTrue(torch.allclose(hv, hr, atol=1e-9))

    def test_adjoint_info_and_no_grad(self):
        n = 6
        base, _, b = dense_problem(n, 15, False)
        bb = b.clone().requires_grad_()
        x, info = sla.solve(lambda v: base @ v, bb, shape=(n, n), method="gmres",
                            rmatvec=lambda v: base.T @ v, return_info=True)
        self.assertIsNone(info.adjoint)
        x.sum().backward()
        self.assertIsNotNone(info.adjoint)
        self.assertTrue(info.adjoint.converged)
        self.assertTrue(torch.allclose(bb.grad, torch.linalg.solve(base.T, torch.ones(n,
                                                                                    dtype=F64))))
        with torch.no_grad():
            x = sla.solve(lambda v: base @ v, bb, shape=(n, n))
        self.assertFalse(x.requires_grad)


if __name__ == "__main__":
    unittest.main()
