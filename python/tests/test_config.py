"""SolverConfig: scoped defaults of solve (thread-local, nestable, explicit
arguments winning), the presets (every one accepted by the C library and
solving to its tolerance, checked against SciPy), and the hook in
SparseTensorList.solve."""

import os
import sys
import threading
import unittest

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sla  # noqa: E402
from sla import _config  # noqa: E402

F64 = torch.float64


def poisson_scipy(N):
    T = sp.diags([-np.ones(N - 1), 2 * np.ones(N), -np.ones(N - 1)], [-1, 0, 1])
    I = sp.identity(N)
    return (sp.kron(I, T) + sp.kron(T, I)).tocsr()


class TestSolverConfig(unittest.TestCase):
    def setUp(self):
        self.A = sla.SparseTensor.poisson(2, 10)
        self.b = torch.linspace(-1, 1, 100, dtype=F64)
        self.xref = spla.spsolve(poisson_scipy(10).tocsc(), self.b.numpy())

    def test_no_config_is_auto(self):
        self.assertEqual(_config.resolve(None, None, None, None, None, {}),
                         ("auto", None, None, None, None, {}))
        cur = sla.SolverConfig.current()
        self.assertEqual(cur, sla.SolverConfig())

    def test_scope_sets_defaults_and_explicit_wins(self):
        with sla.SolverConfig(method="cg", preconditioner="jacobi", rtol=1e-10, maxiter=500):
            x, info = self.A.solve(self.b, return_info=True)
            self.assertEqual(info.method, "cg")
            self.assertEqual(info.preconditioner, "jacobi")
            self.assertLessEqual(info.residual, 1e-10)
            np.testing.assert_allclose(x.numpy(), self.xref, rtol=1e-8)
            x2, info2 = self.A.solve(self.b, method="minres", rtol=1e-4, return_info=True)
            self.assertEqual(info2.method, "minres")
            self.assertGreater(info2.residual, 1e-10)  # rtol 1e-4 won
            self.assertLessEqual(info2.residual, 1e-4)
        _, info3 = self.A.solve(self.b, return_info=True)  # outside: auto again
        self.assertNotEqual(info3.method, "cg")

    def test_nesting_and_options(self):
        outer = sla.SolverConfig(method="gmres", rtol=1e-9, options={"restart": 7})
        inner = sla.SolverConfig(preconditioner="ilu0", options={"restart": 11})
        with outer:
            with inner:
                cur = sla.SolverConfig.current()
                self.assertEqual((cur.method, cur.preconditioner, cur.rtol),
                                 ("gmres", "ilu0", 1e-9))
                self.assertEqual(cur.options, {"restart": 11})
                m, p, r, a, it, o = _config.resolve(None, None, None, None, None,
                                                    {"restart": 3})
                self.assertEqual(o, {"restart": 3})  # explicit option keyword wins
                x, info = self.A.solve(self.b, return_info=True)
                self.assertEqual((info.method, info.preconditioner), ("gmres", "ilu0"))
                np.testing.assert_allclose(x.numpy(), self.xref, rtol=1e-7)
            self.assertEqual(sla.SolverConfig.current().preconditioner, None)
            self.assertEqual(sla.SolverConfig.current().options, {"restart": 7})
        self.assertEqual(sla.SolverConfig.current(), sla.SolverConfig())

    def test_exception_pops(self):
        with self.assertRaises(RuntimeError):
            with sla.SolverConfig(method="cg"):
                raise RuntimeError("x")
        self.assertIsNone(sla.SolverConfig.current().method)

    def test_bad_option_refused_by_c(self):
        with sla.SolverConfig(options={"restrat": 5}):
            with self.assertRaises(sla.SlaValueError) as cm:
                self.A.solve(self.b)
        self.assertIn("restart", str(cm.exception))

    def test_thread_local(self):
        seen = {}

        def worker():
            seen["method"] = sla.SolverConfig.current().method
            _, info = self.A.solve(self.b, return_info=True)
            seen["used"] = info.method

        with sla.SolverConfig(method="bicgstab"):
            t = threading.Thread(target=worker)
            t.start()
            t.join()
            _, info = self.A.solve(self.b, return_info=True)
            self.assertEqual(info.method, "bicgstab")
        self.assertIsNone(seen["method"])
        self.assertNotEqual(seen["used"], "bicgstab")

    def test_presets_solve(self):
        G = sp.random(60, 60, density=0.08, random_state=np.random.default_rng(3), format="csr")
        G = (G + sp.diags(np.asarray(abs(G).sum(axis=1)).ravel() + 1.0)).tocsr()
        Ag = sla.SparseTensor.from_scipy(G)
        bg = torch.linspace(0, 1, 60, dtype=F64)
        xg = spla.spsolve(G.tocsc(), bg.numpy())
        presets = [("auto", {}), ("high_accuracy", {}), ("fast", {}), ("for_spd", {}),
                   ("for_spd", {"iterative": True}), ("for_nonsymmetric", {}),
                   ("for_nonsymmetric", {"iterative": True}), ("for_training", {})]
        for name, kw in presets:
            cfg = getattr(sla.SolverConfig, name)(**kw)
            self.assertIsInstance(cfg, sla.SolverConfig)
            self.assertTrue(getattr(sla.SolverConfig, name).__doc__)
            with self.subTest(preset=name, **kw), cfg:
                rt = cfg.rtol or 1e-8
                if name != "for_spd":  # G is nonsymmetric
                    x = Ag.solve(bg)
                    np.testing.assert_allclose(x.numpy(), xg, rtol=100 * rt, atol=100 * rt)
                x = self.A.solve(self.b)
                np.testing.assert_allclose(x.numpy(), self.xref, rtol=100 * rt, atol=100 * rt)

    def test_training_preset_gradients(self):
        # for_training keeps the analysis across value changes; gradients still exact
        A0 = sla.SparseTensor.poisson(2, 6)
        with sla.SolverConfig.for_training():
            for step in range(3):
                v = (A0.values * (1 + 0.01 * step)).requires_grad_(True)
                b = torch.ones(36, dtype=F64, requires_grad=True)
                x = A0.with_values(v).solve(b)
                x.sum().backward()
                D = A0.with_values(v.detach()).to_dense()
                lam = torch.linalg.solve(D.t(), torch.ones(36, dtype=F64))
                np.testing.assert_allclose(b.grad.numpy(), lam.numpy(), rtol=1e-7)
                xd = torch.linalg.solve(D, torch.ones(36, dtype=F64))
                np.testing.assert_allclose(v.grad.numpy(), (-lam[A0.row] * xd[A0.col]).numpy(),
                                           rtol=1e-6, atol=1e-12)

    def test_list_solve_reads_config(self):
        mats = [sla.SparseTensor.poisson(1, 5), sla.SparseTensor.poisson(2, 3)]
        bs = [torch.ones(5, dtype=F64), torch.ones(9, dtype=F64)]
        with sla.SolverConfig(method="cg", rtol=1e-11):
            xs, infos = sla.SparseTensorList(mats).solve(bs, return_info=True)
        self.assertEqual([i.method for i in infos], ["cg", "cg"])
        for A, b, x in zip(mats, bs, xs):
            np.testing.assert_allclose(x.numpy(), spla.spsolve(A.to_scipy().tocsc(), b.numpy()),
                                       rtol=1e-9)

    def test_replace_and_kwargs(self):
        cfg = sla.SolverConfig.for_nonsymmetric(iterative=True).replace(rtol=1e-6,
                                                                         options={"omega": 1.2})
        self.assertEqual(cfg.solve_kwargs(), {"method": "gmres", "preconditioner": "ilut",
                                              "rtol": 1e-6, "restart": 50, "omega": 1.2})

    def test_cocg_accepted(self):
        # method="cocg" (complex symmetric; cg on a real A) in every front
        # end: SparseTensor.solve, SolverConfig, the matrix-free sla.solve
        x, info = self.A.solve(self.b, method="cocg", rtol=1e-12, return_info=True)
        self.assertEqual(info.method, "cocg")
        self.assertLess(np.abs(x.numpy() - self.xref).max(), 1e-9)
        xcg, icg = self.A.solve(self.b, method="cg", rtol=1e-12, return_info=True)
        self.assertEqual(info.iterations, icg.iterations)
        with sla.SolverConfig(method="cocg", rtol=1e-12):
            x2, i2 = self.A.solve(self.b, return_info=True)
        self.assertEqual(i2.method, "cocg")
        self.assertLess(np.abs(x2.numpy() - self.xref).max(), 1e-9)
        # matrix-free: symmetric, so the gradient to b needs no rmatvec
        b = self.b.clone().requires_grad_(True)
        A = self.A
        x3 = sla.solve(lambda v: A @ v, b, shape=(100, 100), method="cocg", rtol=1e-12)
        self.assertLess(np.abs(x3.detach().numpy() - self.xref).max(), 1e-9)
        w = torch.cos(torch.arange(100, dtype=F64))
        (w * x3).sum().backward()
        gref = spla.spsolve(poisson_scipy(10).tocsc(), w.numpy())  # A^-T w, A symmetric
        self.assertLess(np.abs(b.grad.numpy() - gref).max(), 1e-8)


if __name__ == "__main__":
    unittest.main()
