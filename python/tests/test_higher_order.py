"""Second derivatives of SparseTensor.solve and matvec (create_graph=True):
torch.autograd.gradgradcheck on values and b, and a Hessian-vector product
against central differences of gradients and against the dense torch
reference."""

import os
import sys
import unittest

import numpy as np
import scipy.sparse as sp
import torch
from torch.autograd import gradcheck, gradgradcheck

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sla  # noqa: E402

F64 = torch.float64


def problem(n, seed, spd=False):
    rng = np.random.default_rng(seed)
    R = sp.random(n, n, density=0.3, random_state=rng, format="coo")
    R.data = rng.uniform(-1, 1, R.nnz)
    if spd:
        R = (R + R.T).tocoo()
    M = (R + sp.diags(np.asarray(abs(R).sum(1)).ravel() + 1.0)).tocoo()
    return (torch.tensor(M.data, dtype=F64), torch.tensor(M.row).long(), torch.tensor(M.col).long(),
            torch.tensor(rng.standard_normal(n), dtype=F64))


class TestGradGrad(unittest.TestCase):
    def test_solve(self):
        n = 8
        for spd, method in ((False, "lu"), (False, "gmres"), (True, "cg"), (True, "cholesky"),
                            (False, "auto")):
            v, row, col, b = problem(n, 1, spd)
            v.requires_grad_()
            b.requires_grad_()

            if spd:  # A = (S + S^T) / 2 on the symmetric pattern: symmetric for any values
                v = (v / 2).detach().requires_grad_()
                rr, cc = torch.cat([row, col]), torch.cat([col, row])

                def f(vv, bb):
                    return sla.SparseTensor(torch.cat([vv, vv]), rr, cc, (n, n)).solve(
                        bb, method=method, rtol=1e-13)
            else:
                def f(vv, bb):
                    return sla.SparseTensor(vv, row, col, (n, n)).solve(bb, method=method,
                                                                        rtol=1e-13)
            self.assertTrue(gradcheck(f, (v, b)), method)
            self.assertTrue(gradgradcheck(f, (v, b)), method)

    def test_solve_batch_and_columns(self):
        n = 6
        v, row, col, b = problem(n, 2)
        V = torch.stack([v, v * 1.1]).requires_grad_()
        B = torch.randn(2, n, 2, generator=torch.Generator().manual_seed(3), dtype=F64,
                        requires_grad=True)

        def f(vv, bb):
            return sla.SparseTensor(vv, row, col, (2, n, n)).solve(bb, method="lu")
        self.assertTrue(gradgradcheck(f, (V, B)))

    def test_matvec(self):
        n = 7
        v, row, col, b = problem(n, 4)
        v.requires_grad_()
        X = torch.randn(n, 3, generator=torch.Generator().manual_seed(5), dtype=F64,
                        requires_grad=True)
        b.requires_grad_()
        for x in (b, X):
            self.assertTrue(gradgradcheck(lambda vv, xx: sla.SparseTensor(vv, row, col, (n, n)) @ xx,
                                          (v, x)))
            self.assertTrue(gradgradcheck(
                lambda vv, xx: sla.SparseTensor(vv, row, col, (n, n)).T @ xx, (v, x)))
        V = torch.stack([v.detach(), 2 * v.detach()]).requires_grad_()
        self.assertTrue(gradgradcheck(
            lambda vv, xx: sla.SparseTensor(vv, row, col, (2, n, n)) @ xx, (V, b)))
        # a rectangular matrix
        r2, c2 = torch.tensor([0, 1, 2, 2, 0]), torch.tensor([3, 0, 1, 4, 4])
        w = torch.randn(5, generator=torch.Generator().manual_seed(6), dtype=F64,
                        requires_grad=True)
        x5 = torch.randn(5, generator=torch.Generator().manual_seed(7), dtype=F64,
                         requires_grad=True)
        self.assertTrue(gradgradcheck(lambda ww, xx: sla.SparseTensor(ww, r2, c2, (3, 5)) @ xx,
                                      (w, x5)))

    def test_hessian_vector_product(self):
        # L(values) = sum w x^2, x = A(values)^-1 b: H u by double backward,
        # by central differences of the gradient and by the dense reference
        n = 10
        v0, row, col, b = problem(n, 8)
        w = torch.linspace(0.5, 1.5, n, dtype=F64)
        u = torch.randn(v0.shape, generator=torch.Generator().manual_seed(9), dtype=F64)

        def grad(vals, create_graph=False):
            if not vals.requires_grad:
                vals = vals.clone().requires_grad_()
            x = sla.SparseTensor(vals, row, col, (n, n)).solve(b, method="lu")
            return torch.autograd.grad((w * x * x).sum(), vals, create_graph=create_graph)[0]

        v = v0.clone().requires_grad_()
        g = grad(v, create_graph=True)
        hu = torch.autograd.grad((g * u).sum(), v)[0]
        eps = 1e-6
        fd = (grad(v0 + eps * u) - grad(v0 - eps * u)) / (2 * eps)
        self.assertLess(float((hu - fd).norm() / fd.norm()), 1e-6)
        vd = v0.clone().requires_grad_()
        D = torch.zeros(n, n, dtype=F64).index_put((row, col), vd, accumulate=True)
        xr = torch.linalg.solve(D, b)
        gr = torch.autograd.grad((w * xr * xr).sum(), vd, create_graph=True)[0]
        hr = torch.autograd.grad((gr * u).sum(), vd)[0]
        self.assertTrue(torch.allclose(hu, hr, atol=1e-10))

    def test_first_order_unchanged(self):
        # without create_graph the backward is the C VJP: no graph on the gradients
        n = 8
        v, row, col, b = problem(n, 10)
        v.requires_grad_()
        b.requires_grad_()
        x, info = sla.SparseTensor(v, row, col, (n, n)).solve(b, method="gmres", rtol=1e-12,
                                                              return_info=True)
        gv, gb = torch.autograd.grad(x.sum(), (v, b))
        self.assertFalse(gv.requires_grad or gb.requires_grad)
        self.assertTrue(info.adjoint.converged)
        D = torch.zeros(n, n, dtype=F64).index_put((row, col), v.detach(), accumulate=True)
        lam = torch.linalg.solve(D.T, torch.ones(n, dtype=F64))
        self.assertTrue(torch.allclose(gb, lam, atol=1e-9))
        self.assertTrue(torch.allclose(gv, -lam[row] * x.detach()[col], atol=1e-9))


if __name__ == "__main__":
    unittest.main()
