"""Tests of the PyTorch binding (run with /usr/bin/python3 -m unittest).

Every result is compared with SciPy / NumPy on the same inputs, every
gradient with torch.autograd.gradcheck (central finite differences in
float64)."""

import os
import sys
import threading
import unittest
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch
from torch.autograd import gradcheck

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sla  # noqa: E402
from sla import _core, _lib  # noqa: E402

F64 = torch.float64


def rand_pattern(n, per_row, seed, spd=False, nonsym_shift=0.0):
    """A random sparse n x n scipy matrix: SPD (symmetric, dominant
    diagonal) or general (nonsymmetric, nonsingular)."""
    rng = np.random.default_rng(seed)
    R = sp.random(n, n, density=min(1.0, per_row / n), random_state=rng, format="coo")
    R.data = rng.uniform(-1, 1, R.nnz)
    if spd:
        S = (R + R.T).tocsr()
        d = np.asarray(abs(S).sum(axis=1)).ravel() + 1.0
        return (S + sp.diags(d)).tocsr()
    d = np.asarray(abs(R).sum(axis=1)).ravel() + 1.0 + nonsym_shift
    return (R + sp.diags(d)).tocsr()


def coo_parts(M, shuffle_seed=None, duplicate=False):
    """(values, row, col) of a scipy matrix, optionally shuffled and with
    one entry split into two duplicates."""
    c = M.tocoo()
    v, r, k = c.data.copy(), c.row.astype(np.int64), c.col.astype(np.int64)
    if duplicate:
        v = np.concatenate([v, [0.25 * v[0]]])
        v[0] *= 0.75
        r = np.concatenate([r, [r[0]]])
        k = np.concatenate([k, [k[0]]])
    if shuffle_seed is not None:
        p = np.random.default_rng(shuffle_seed).permutation(len(v))
        v, r, k = v[p], r[p], k[p]
    return torch.tensor(v, dtype=F64), torch.from_numpy(r), torch.from_numpy(k)


class SolveTests(unittest.TestCase):
    def setUp(self):
        warnings.simplefilter("error", sla.SlaConvergenceWarning)

    def check_vs_scipy(self, M, method, tol, **kw):
        A = sla.SparseTensor.from_scipy(M)
        rng = np.random.default_rng(3)
        b = rng.standard_normal(M.shape[0])
        x, info = A.solve(torch.tensor(b), method=method, return_info=True, **kw)
        ref = spla.spsolve(M.tocsc(), b)
        err = np.linalg.norm(x.numpy() - ref) / np.linalg.norm(ref)
        self.assertLess(err, tol, "%s %s: %r" % (method, kw, info))
        self.assertTrue(info.converged)
        self.assertLess(info.residual, 1e-8)
        # the report's true residual is ||b - A x|| / ||b||
        r = np.linalg.norm(b - M @ x.numpy()) / np.linalg.norm(b)
        self.assertLess(abs(r - info.residual), 1e-12 + 1e-3 * r)
        self.assertAlmostEqual(info.rhs_norm, np.linalg.norm(b), places=10)
        return info

    def test_methods_spd_vs_scipy(self):
        M = rand_pattern(60, 4, 1, spd=True)
        for method, pc in [("auto", None), ("cg", None), ("cg", "jacobi"), ("cg", "ssor"),
                           ("cg", "ic0"), ("cg", "amg"), ("cg", "saamg"), ("minres", None),
                           ("gmres", "ilu0"), ("bicgstab", "ilu0")]:
            info = self.check_vs_scipy(M, method, 1e-9, preconditioner=pc, rtol=1e-12)
            if method != "auto":
                self.assertEqual(info.method, method)
            self.assertEqual(info.preconditioner, pc or ("none" if method != "auto" else info.preconditioner))
        for method in ["cholesky", "ldlt", "lu", "umfpack", "klu", "superlu"]:
            info = self.check_vs_scipy(M, method, 1e-12)
            self.assertNotEqual(info.backend, "krylov")
            # iterations of a direct solve are refinement steps (dgerfs rule: at most 5)
            self.assertLessEqual(info.iterations, 5)
            self.assertGreaterEqual(info.backward_error, 0.0)
            self.assertLess(info.backward_error, 1e-15)

    def test_methods_nonsymmetric_vs_scipy(self):
        M = rand_pattern(70, 5, 2)
        for method, pc in [("auto", None), ("gmres", None), ("gmres", "ilu0"),
                           ("bicgstab", "jacobi"), ("gmres", "amg"), ("gmres", "ilut"),
                           ("bicgstab", "ilut")]:
            self.check_vs_scipy(M, method, 1e-9, preconditioner=pc, rtol=1e-12, restart=80)
        for method in ["lu", "umfpack", "klu", "superlu"]:
            self.check_vs_scipy(M, method, 1e-12)

    def test_multiple_rhs_and_shapes(self):
        M = rand_pattern(30, 4, 4)
        A = sla.SparseTensor.from_scipy(M)
        B = torch.randn(30, 3, dtype=F64)
        X = A.solve(B, method="lu")
        self.assertEqual(X.shape, (30, 3))
        ref = spla.spsolve(M.tocsc(), B.numpy())
        self.assertLess(np.abs(X.numpy() - ref).max(), 1e-12)
        with self.assertRaisesRegex(ValueError, "shape"):
            A.solve(torch.ones(29, dtype=F64))

    def test_gradcheck_solve_values_and_b(self):
        # unsorted COO with a duplicate entry: the COO -> CSR map is exercised
        M = rand_pattern(8, 3, 5)
        v, r, c = coo_parts(M, shuffle_seed=1, duplicate=True)
        v.requires_grad_(True)
        b = torch.randn(8, dtype=F64, requires_grad=True)
        for kw in [dict(method="lu"), dict(method="klu"), dict(method="superlu"),
                   dict(method="gmres", preconditioner="ilu0", rtol=1e-13),
                   dict(method="gmres", preconditioner="ilut", rtol=1e-13),
                   dict(method="gmres", rtol=1e-13)]:
            f = lambda v_, b_: sla.spsolve(v_, r, c, (8, 8), b_, **kw)  # noqa: E731
            self.assertTrue(gradcheck(f, (v, b), eps=1e-6, atol=1e-8, rtol=1e-6), kw)
        # several right-hand sides
        B = torch.randn(8, 2, dtype=F64, requires_grad=True)
        f = lambda v_, B_: sla.spsolve(v_, r, c, (8, 8), B_, method="lu")  # noqa: E731
        self.assertTrue(gradcheck(f, (v, B), eps=1e-6, atol=1e-8, rtol=1e-6))

    def test_partial_gradients(self):
        """Only values or only b requiring grad (NULL outputs in the C VJP)
        give the same gradients as both, on the per-matrix and batch paths."""
        M = rand_pattern(10, 3, 18)
        v0, r, c = coo_parts(M)
        for vals, b in [(v0, torch.randn(10, dtype=F64)),
                        (v0 * (1 + 0.1 * torch.rand(3, v0.numel(), dtype=F64)),
                         torch.randn(3, 10, dtype=F64))]:
            for kw in [dict(method="lu"), dict(method="gmres", rtol=1e-13)]:
                w = torch.randn(b.shape, dtype=F64)
                va, ba = vals.clone().requires_grad_(True), b.clone().requires_grad_(True)
                (sla.spsolve(va, r, c, (10, 10), ba, **kw) * w).sum().backward()
                vv = vals.clone().requires_grad_(True)
                (sla.spsolve(vv, r, c, (10, 10), b, **kw) * w).sum().backward()
                bb = b.clone().requires_grad_(True)
                (sla.spsolve(vals, r, c, (10, 10), bb, **kw) * w).sum().backward()
                self.assertLess((vv.grad - va.grad).abs().max().item(), 1e-12)
                self.assertLess((bb.grad - ba.grad).abs().max().item(), 1e-12)
                xa = torch.randn(vals.shape[:-1] + (10,), dtype=F64)
                va.grad = None
                xg = xa.clone().requires_grad_(True)
                (sla.SparseTensor(va, r, c, (10, 10)) @ xg * w).sum().backward()
                vv.grad = None
                (sla.SparseTensor(vv, r, c, (10, 10)) @ xa * w).sum().backward()
                self.assertLess((vv.grad - va.grad).abs().max().item(), 1e-12)

    def test_index_types(self):
        M = rand_pattern(6, 2, 19)
        v, r, c = coo_parts(M)
        b = torch.randn(6, dtype=F64)
        x = sla.spsolve(v, r, c, (6, 6), b, method="lu")
        x32 = sla.spsolve(v, r.to(torch.int32), c.to(torch.int32), (6, 6), b, method="lu")
        xl = sla.spsolve(v.tolist(), r.tolist(), c.tolist(), (6, 6), b.tolist(), method="lu")
        self.assertLess((x - x32).abs().max().item(), 1e-15)
        self.assertLess((x - xl).abs().max().item(), 1e-15)
        with self.assertRaisesRegex(TypeError, "integer"):
            sla.spsolve(v, r.double(), c, (6, 6), b)

    def test_gradcheck_solve_symmetric_parametrisation(self):
        # CG / Cholesky need symmetric values: parametrise the two triangles together
        M = sp.triu(rand_pattern(9, 3, 6, spd=True)).tocoo()
        off = M.row != M.col
        ri, ci = M.row[off], M.col[off]
        di = M.row[~off]
        row = torch.from_numpy(np.concatenate([di, ri, ci]).astype(np.int64))
        col = torch.from_numpy(np.concatenate([di, ci, ri]).astype(np.int64))
        d = torch.tensor(M.data[~off], dtype=F64, requires_grad=True)
        o = torch.tensor(M.data[off], dtype=F64, requires_grad=True)
        b = torch.randn(9, dtype=F64, requires_grad=True)
        for kw in [dict(method="cg", preconditioner="ic0", rtol=1e-13), dict(method="cholesky"),
                   dict(method="ldlt"), dict(method="minres", rtol=1e-13)]:
            def f(d_, o_, b_):
                return sla.spsolve(torch.cat([d_, o_, o_]), row, col, (9, 9), b_, **kw)
            self.assertTrue(gradcheck(f, (d, o, b), eps=1e-6, atol=1e-8, rtol=1e-6), kw)

    def test_batched_values(self):
        M = rand_pattern(20, 4, 7)
        v0, r, c = coo_parts(M)
        torch.manual_seed(0)
        vals = v0 * (1 + 0.1 * torch.rand(2, 3, v0.numel(), dtype=F64))
        A = sla.SparseTensor(vals, r, c, (2, 3, 20, 20))
        self.assertEqual(A.batch_shape, (2, 3))
        b = torch.randn(2, 3, 20, dtype=F64)
        x, info = A.solve(b, method="lu", return_info=True)
        self.assertEqual(x.shape, (2, 3, 20))
        self.assertEqual(len(info.items), 6)
        for i in range(2):
            for j in range(3):
                Mij = sp.coo_matrix((vals[i, j].numpy(), (r.numpy(), c.numpy())), shape=(20, 20))
                ref = spla.spsolve(Mij.tocsc(), b[i, j].numpy())
                self.assertLess(np.abs(x[i, j].numpy() - ref).max(), 1e-12)
        # shared right-hand side, and k columns per matrix
        xs = A.solve(b[0, 0], method="gmres", rtol=1e-13)
        self.assertEqual(xs.shape, (2, 3, 20))
        self.assertLess((A @ xs - b[0, 0]).abs().max().item(), 1e-10)
        Bk = torch.randn(2, 3, 20, 2, dtype=F64)
        Xk = A.solve(Bk, method="lu")
        self.assertLess((A @ Xk - Bk).abs().max().item(), 1e-12)

    def test_gradcheck_batched(self):
        M = rand_pattern(7, 3, 8)
        v0, r, c = coo_parts(M, shuffle_seed=2)
        vals = (v0 * (1 + 0.1 * torch.rand(3, v0.numel(), dtype=F64))).requires_grad_(True)
        b = torch.randn(3, 7, dtype=F64, requires_grad=True)
        b1 = torch.randn(7, dtype=F64, requires_grad=True)
        Bk = torch.randn(3, 7, 2, dtype=F64, requires_grad=True)
        for kw in [dict(method="lu"), dict(method="gmres", rtol=1e-13)]:
            f = lambda v_, b_: sla.spsolve(v_, r, c, (7, 7), b_, **kw)  # noqa: E731
            self.assertTrue(gradcheck(f, (vals, b), eps=1e-6, atol=1e-8, rtol=1e-6))  # batch path
            self.assertTrue(gradcheck(f, (vals, b1), eps=1e-6, atol=1e-8, rtol=1e-6))  # shared b
            self.assertTrue(gradcheck(f, (vals, Bk), eps=1e-6, atol=1e-8, rtol=1e-6))  # k columns

    def test_float32(self):
        M = rand_pattern(40, 4, 9, spd=True)
        A64 = sla.SparseTensor.from_scipy(M)
        A32 = sla.SparseTensor.from_scipy(M, dtype=torch.float32)
        b = torch.randn(40)
        x32 = A32.solve(b, method="cg", rtol=1e-10)
        self.assertEqual(x32.dtype, torch.float32)
        x64 = A64.solve(b.double(), method="cg", rtol=1e-12)
        ref = spla.spsolve(M.astype(np.float32).astype(np.float64).tocsc(), b.double().numpy())
        self.assertLess(np.abs(x32.double().numpy() - ref).max() / np.abs(ref).max(), 1e-6)
        self.assertLess((x64 - x32.double()).abs().max().item(), 1e-5)
        # the float32 values go to C by pointer, no copy
        v = A32.values
        s = A32.pattern.solver(_core.options_string("cg", None, 1e-10, None, None),
                               torch.float32, 1)
        self.assertEqual(s.matrix.values.data_ptr(), v.data_ptr())
        # gradients come back as float32
        v = A32.values.clone().requires_grad_(True)
        y = A32.with_values(v).solve(b, method="cholesky")
        y.sum().backward()
        self.assertEqual(v.grad.dtype, torch.float32)
        v64 = A64.values.clone().requires_grad_(True)
        A64.with_values(v64).solve(b.double(), method="cholesky").sum().backward()
        self.assertLess((v.grad.double() - v64.grad).abs().max().item(), 1e-5)
        # batched float32 matvec
        vb = torch.stack([A32.values, 2 * A32.values])
        Ab = A32.with_values(vb)
        y = Ab @ torch.ones(40)
        self.assertEqual(y.dtype, torch.float32)
        ref = M @ np.ones(40)
        self.assertLess(np.abs(y[1].double().numpy() - 2 * ref).max(), 1e-4)

    def test_zero_copy_vectors(self):
        M = rand_pattern(25, 3, 10)
        A = sla.SparseTensor.from_scipy(M)
        v = A.values
        A.solve(torch.ones(25, dtype=F64), method="lu")
        s = A.pattern.solver(_core.options_string("lu", None, None, None, None), F64, 1)
        self.assertEqual(s.matrix.values.data_ptr(), v.data_ptr())

    def test_cache_reuse_and_refresh(self):
        """New values on a cached solver refactor; in-place changes are seen."""
        M = rand_pattern(30, 4, 11, spd=True)
        A = sla.SparseTensor.from_scipy(M)
        b = torch.randn(30, dtype=F64)
        for method in ["cholesky", "lu", "cg"]:
            v = A.values.clone()
            x1 = A.with_values(v).solve(b, method=method, rtol=1e-13)
            v.mul_(2.0)  # in place: the version counter changes, the solver refactors
            x2 = A.with_values(v).solve(b, method=method, rtol=1e-13)
            self.assertLess((x2 - 0.5 * x1).abs().max().item(), 1e-10, method)
            # symmetric -> nonsymmetric values on the same pattern: the refresh re-dispatches
            w = v.clone()
            w[0] += 0.3 if A.row[0] != A.col[0] else 0.0
            w[1] -= 0.2
            x3 = A.with_values(w).solve(b, method="auto", rtol=1e-13)
            Mw = sp.coo_matrix((w.numpy(), (A.row.numpy(), A.col.numpy())), shape=M.shape)
            self.assertLess(np.abs(x3.numpy() - spla.spsolve(Mw.tocsc(), b.numpy())).max(),
                            1e-10)

    def test_value_check_modes(self):
        """set_value_check: "compare" sees writes that bypass the version
        counter (a numpy view); "version" sees in-place torch ops but not
        those writes, until sla.clear_cache()."""
        P = sla.poisson(2, 5)
        b = torch.ones(25, dtype=F64)
        v = P.values.detach().clone()
        A = sla.SparseTensor(v, P.row, P.col, P.shape)
        x1 = A.solve(b, method="cholesky")
        old = sla.set_value_check("version")
        try:
            self.assertEqual(old, "compare")
            v.mul_(2.0)  # bumps the version: seen
            torch.testing.assert_close(A.solve(b, method="cholesky"), x1 / 2)
            v.numpy()[:] *= 2.0  # bypasses the version counter: not seen
            x, info = A.solve(b, method="cholesky", return_info=True)  # no warning
            # the factorization is the stale one of 2 P while the borrowed
            # matrix reads 4 P: not the answer, and C's accuracy check says so
            self.assertFalse(info.converged)
            sla.clear_cache()  # the documented way to force a refresh
            A = sla.SparseTensor(v, P.row, P.col, P.shape)
            torch.testing.assert_close(A.solve(b, method="cholesky"), x1 / 4)
            with self.assertRaises(ValueError):
                sla.set_value_check("never")
        finally:
            sla.set_value_check(old)
        v.numpy()[:] *= 2.0  # "compare": the same write is seen
        torch.testing.assert_close(A.solve(b, method="cholesky"), x1 / 8)

    def test_cached_solver_recovers_after_errors(self):
        """A failed set-up (NaN values, a singular matrix) leaves the cached
        solver usable for the next good values on the same pattern."""
        M = rand_pattern(15, 3, 21, spd=True)
        A = sla.SparseTensor.from_scipy(M)
        b = torch.randn(15, dtype=F64)
        ref = spla.spsolve(M.tocsc(), b.numpy())
        for method in ["cholesky", "lu", "cg"]:
            x = A.solve(b, method=method, rtol=1e-13)
            bad = A.values.clone()
            bad[2] = float("inf")
            with self.assertRaisesRegex(sla.SlaValueError, "not finite"):
                A.with_values(bad).solve(b, method=method, rtol=1e-13)
            if method != "cg":
                with self.assertRaises((sla.SlaSingularError, sla.SlaNotSPDError)):
                    A.with_values(torch.zeros_like(A.values)).solve(b, method=method)
            x = A.with_values(A.values.clone()).solve(b, method=method, rtol=1e-13)
            self.assertLess(np.abs(x.numpy() - ref).max(), 1e-10, method)

    def test_two_solves_same_pattern_one_graph(self):
        """Both backward passes see their own forward's values."""
        M = rand_pattern(12, 3, 12)
        v, r, c = coo_parts(M)
        v1 = v.clone().requires_grad_(True)
        v2 = (1.5 * v).requires_grad_(True)
        b = torch.randn(12, dtype=F64)
        x1 = sla.spsolve(v1, r, c, (12, 12), b, method="lu")
        x2 = sla.spsolve(v2, r, c, (12, 12), b, method="lu")
        (x1.sum() + (x2 ** 2).sum()).backward()
        g1, g2 = v1.grad.clone(), v2.grad.clone()
        v1.grad = v2.grad = None
        sla.spsolve(v1, r, c, (12, 12), b, method="lu").sum().backward()
        sla.spsolve(v2, r, c, (12, 12), b, method="lu").pow(2).sum().backward()
        self.assertLess((g1 - v1.grad).abs().max().item(), 1e-13)
        self.assertLess((g2 - v2.grad).abs().max().item(), 1e-13)

    def test_threads_share_a_pattern(self):
        M = rand_pattern(200, 5, 13, spd=True)
        v, r, c = coo_parts(M)
        out, errs = {}, []

        def work(i):
            try:
                vi = v * (1 + i)
                b = torch.full((200,), float(i + 1), dtype=F64)
                for _ in range(5):
                    x = sla.spsolve(vi, r, c, (200, 200), b, method="cholesky")
                out[i] = x
            except Exception as e:  # pragma: no cover
                errs.append(e)

        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errs, [])
        ref = spla.spsolve(M.tocsc(), np.ones(200))
        for i in range(4):
            self.assertLess(np.abs(out[i].numpy() - ref).max(), 1e-12)

    def test_hierarchy(self):
        """info.hierarchy: saamg's levels (sla_solver_hierarchy), None for
        other preconditioners and once the solver's values changed."""
        P = sla.poisson(2, 60)  # 3600 rows: two levels
        v = P.values.detach().clone()
        A = sla.SparseTensor(v, P.row, P.col, P.shape)
        b = torch.ones(3600, dtype=F64)
        x, info = A.solve(b, method="cg", preconditioner="saamg", return_info=True)
        h = info.hierarchy
        self.assertGreaterEqual(h["levels"], 2)
        self.assertEqual(len(h["rows"]), h["levels"])
        self.assertEqual(h["rows"][0], 3600)
        self.assertEqual(h["nnz"][0], P.values.shape[0])
        self.assertEqual(h["p_nnz"][-1], 0)
        self.assertAlmostEqual(h["operator_complexity"], sum(h["nnz"]) / h["nnz"][0], places=12)
        self.assertAlmostEqual(h["grid_complexity"], sum(h["rows"]) / h["rows"][0], places=12)
        self.assertTrue(h["coarse_direct"])
        _, i2 = A.solve(b, method="cg", preconditioner="jacobi", return_info=True)
        self.assertIsNone(i2.hierarchy)
        _, i3 = A.solve(b, method="cg", preconditioner="saamg", return_info=True)
        A2 = sla.SparseTensor(v * 2.0, P.row, P.col, P.shape)  # the same pattern: the same solver
        A2.solve(b, method="cg", preconditioner="saamg")
        self.assertIsNone(i3.hierarchy)  # read after the solver moved on to other values
        _, i4 = A2.solve(b, method="cg", preconditioner="saamg", return_info=True, saamg_theta=0.08)
        self.assertEqual(i4.hierarchy, h)  # the default's threshold: the same hierarchy

    def test_saamg_reuse_hierarchy(self):
        """saamg_reuse="hierarchy" across value changes of one pattern: the
        coarse levels kept for a 1 % change, recomputed when an entry moves
        past 25 % (the note says which); solutions against SciPy, and the
        gradient through the kept hierarchy against dense LAPACK."""
        P = sla.poisson(2, 60)
        v = P.values.detach().clone()
        b = torch.ones(3600, dtype=F64)
        kw = dict(method="cg", preconditioner="saamg", rtol=1e-12, saamg_reuse="hierarchy")
        rng = np.random.default_rng(5)
        for scale, want in [(None, None), (1.01, "kept the coarse levels"),
                            (1.6, "recomputed the coarse levels")]:
            w = v.clone()
            if scale is not None:  # a diagonal scaling D A D keeps A SPD
                d = torch.from_numpy(1.0 + (scale - 1.0) * rng.random(3600))
                w = v * d[P.row.long()] * d[P.col.long()]
            A = sla.SparseTensor(w, P.row, P.col, P.shape)
            x, info = A.solve(b, return_info=True, **kw)
            if want:
                self.assertIn(want, info.note)
            M = sp.csr_matrix((w.numpy(), (P.row.numpy(), P.col.numpy())), shape=(3600, 3600))
            ref = spla.spsolve(M.tocsc(), b.numpy())
            self.assertLess(np.abs(x.numpy() - ref).max() / np.abs(ref).max(), 1e-9)
        # the gradient with the kept hierarchy (a 1 % change from the last values)
        wv = (w * 1.01).requires_grad_(True)
        bb = b.clone().requires_grad_(True)
        A = sla.SparseTensor(wv, P.row, P.col, P.shape)
        x, info = A.solve(bb, return_info=True, **kw)
        self.assertIn("kept the coarse levels", info.note)
        (x * torch.arange(3600, dtype=F64)).sum().backward()
        D = sp.csr_matrix((wv.detach().numpy(), (P.row.numpy(), P.col.numpy())),
                          shape=(3600, 3600)).toarray()
        lam = np.linalg.solve(D.T, np.arange(3600, dtype=np.float64))
        xd = np.linalg.solve(D, b.numpy())
        self.assertLess(np.abs(bb.grad.numpy() - lam).max() / np.abs(lam).max(), 1e-9)
        ga = -lam[P.row.numpy()] * xd[P.col.numpy()]
        self.assertLess(np.abs(wv.grad.numpy() - ga).max() / np.abs(ga).max(), 1e-9)

    def test_initial_guess(self):
        M = rand_pattern(100, 5, 17, spd=True)
        A = sla.SparseTensor.from_scipy(M)
        b = torch.randn(100, dtype=F64)
        x, i0 = A.solve(b, method="cg", rtol=1e-12, return_info=True)
        x1, i1 = A.solve(b, method="cg", rtol=1e-12, x0=x, return_info=True)
        self.assertLessEqual(i1.iterations, 1)
        self.assertGreater(i0.iterations, 5)
        self.assertLess((x1 - x).abs().max().item(), 1e-10)
        with self.assertRaisesRegex(ValueError, "x0"):
            A.solve(b, use_x0=True)

    def test_solve_info_and_nonconvergence(self):
        M = rand_pattern(300, 6, 14, spd=True)
        A = sla.SparseTensor.from_scipy(M)
        b = torch.randn(300, dtype=F64)
        x, info = A.solve(b, method="cg", maxiter=2, rtol=1e-14, return_info=True)
        self.assertFalse(info.converged)
        self.assertEqual(info.reason, "diverged_maxiter")
        self.assertEqual(info.iterations, 2)
        with self.assertWarns(sla.SlaConvergenceWarning):
            A.solve(b, method="cg", maxiter=2, rtol=1e-14)
        v = A.values.clone().requires_grad_(True)
        x, info = A.with_values(v).solve(b, method="cg", preconditioner="jacobi", rtol=1e-12,
                                         return_info=True)
        self.assertIsNone(info.adjoint)
        x.sum().backward()
        self.assertIsNotNone(info.adjoint)
        self.assertTrue(info.adjoint.converged)
        self.assertGreater(info.adjoint.iterations, 0)
        self.assertIn("SolveInfo(", repr(info))

    def test_rcond_reported(self):
        M = rand_pattern(200, 5, 21, spd=True)
        A = sla.SparseTensor.from_scipy(M)
        b = torch.randn(200, dtype=F64)
        _, info = A.solve(b, method="lu", return_info=True)
        cond = np.linalg.cond(M.toarray())
        self.assertGreater(info.rcond, 0.0)
        # a pivot-ratio estimate: within a few orders of the true 1/cond
        self.assertLess(abs(np.log10(info.rcond * cond)), 4.0)
        _, info = A.solve(b, method="cg", rtol=1e-10, return_info=True)
        self.assertEqual(info.rcond, -1.0)
        # nearly singular (not by scaling: UMFPACK scales rows first): the note warns
        D = sp.csr_matrix(np.array([[1.0, 1.0, 0.0], [1.0, 1.0 + 1e-14, 0.0], [0.0, 0.0, 1.0]]))
        Ad = sla.SparseTensor.from_scipy(D)
        x, info = Ad.solve(torch.ones(3, dtype=F64), method="lu", return_info=True)
        self.assertLess(info.rcond, 1e-12)
        self.assertTrue(info.note.startswith("warning: nearly singular"), info.note)


class MatvecTests(unittest.TestCase):
    def test_matvec_vs_scipy_and_gradcheck(self):
        M = sp.random(9, 6, density=0.4, random_state=15, format="coo")
        v, r, c = coo_parts(M, shuffle_seed=3, duplicate=True)
        A = sla.SparseTensor(v, r, c, (9, 6))
        x = torch.randn(6, dtype=F64)
        self.assertLess(np.abs((A @ x).numpy() - M @ x.numpy()).max(), 1e-14)
        X = torch.randn(6, 3, dtype=F64)
        self.assertLess(np.abs((A @ X).numpy() - M @ X.numpy()).max(), 1e-14)
        vv = v.clone().requires_grad_(True)
        xx = x.clone().requires_grad_(True)
        XX = X.clone().requires_grad_(True)
        f = lambda v_, x_: sla.SparseTensor(v_, r, c, (9, 6)) @ x_  # noqa: E731
        self.assertTrue(gradcheck(f, (vv, xx)))
        self.assertTrue(gradcheck(f, (vv, XX)))
        vb = (v * torch.rand(2, v.numel(), dtype=F64)).requires_grad_(True)
        xb = torch.randn(2, 6, dtype=F64, requires_grad=True)
        self.assertTrue(gradcheck(f, (vb, xb)))  # batch path
        self.assertTrue(gradcheck(f, (vb, xx)))  # shared x

    def test_transpose_dense_scipy_roundtrip(self):
        M = sp.random(7, 5, density=0.5, random_state=16, format="csr")
        A = sla.SparseTensor.from_scipy(M)
        np.testing.assert_allclose(A.to_dense().numpy(), M.toarray())
        np.testing.assert_allclose(A.T.to_dense().numpy(), M.T.toarray())
        x = torch.randn(7, dtype=F64)
        np.testing.assert_allclose((A.T @ x).numpy(), M.T @ x.numpy(), atol=1e-14)
        self.assertEqual((A.to_scipy() != M).nnz, 0)
        D = torch.tensor([[2.0, 0, 1], [0, 3, 0], [1, 0, 4]], dtype=F64)
        B = sla.SparseTensor.from_dense(D)
        self.assertEqual(B.nnz, 5)
        np.testing.assert_allclose(B.to_dense().numpy(), D.numpy())
        vb = torch.stack([B.values, 2 * B.values])
        Bb = B.with_values(vb)
        self.assertEqual(Bb.to_dense().shape, (2, 3, 3))
        np.testing.assert_allclose(Bb[1].to_dense().numpy(), 2 * D.numpy())


class ListTests(unittest.TestCase):
    def test_list_solve_vs_scipy_and_gradcheck(self):
        Ms = [rand_pattern(n, 3, 20 + n) for n in (5, 8, 6)]
        L = sla.SparseTensorList.from_scipy(Ms)
        self.assertEqual(len(L), 3)
        bs = [torch.randn(M.shape[0], dtype=F64) for M in Ms]
        xs, infos = L.solve(bs, method="lu", return_info=True)
        self.assertEqual(len(infos), 3)
        for M, b, x in zip(Ms, bs, xs):
            self.assertLess(np.abs(x.numpy() - spla.spsolve(M.tocsc(), b.numpy())).max(), 1e-12)
        parts = [coo_parts(M, shuffle_seed=5) for M in Ms]
        vals = [p[0].requires_grad_(True) for p in parts]
        bsg = [b.clone().requires_grad_(True) for b in bs]

        def f(*t):
            v, b = t[:3], t[3:]
            lst = sla.SparseTensorList([sla.SparseTensor(v[i], parts[i][1], parts[i][2], Ms[i].shape)
                                        for i in range(3)])
            return tuple(lst.solve(list(b), method="gmres", rtol=1e-13))

        self.assertTrue(gradcheck(f, (*vals, *bsg), eps=1e-6, atol=1e-8, rtol=1e-6))
        # two items on one pattern get their own solvers
        M = Ms[0]
        A1 = sla.SparseTensor.from_scipy(M)
        A2 = A1.with_values(2 * A1.values)
        x1, x2 = sla.SparseTensorList([A1, A2]).solve([bs[0], bs[0]], method="lu")
        self.assertLess((x1 - 2 * x2).abs().max().item(), 1e-12)
        with self.assertRaisesRegex(ValueError, "right-hand sides"):
            L.solve(bs[:2])


class LogdetTests(unittest.TestCase):
    def test_logdet_vs_numpy(self):
        M = rand_pattern(30, 4, 30, spd=True)
        A = sla.SparseTensor.from_scipy(M)
        s_ref, l_ref = np.linalg.slogdet(M.toarray())
        for method in ["cholesky", "ldlt", "lu"]:
            s, l = A.slogdet(method=method)
            self.assertEqual(s.item(), s_ref)
            self.assertAlmostEqual(l.item(), l_ref, places=10)
        self.assertAlmostEqual(A.logdet().item(), l_ref, places=10)
        # a negative determinant (LU) and a batch
        N = rand_pattern(25, 4, 31).toarray()
        N[0, :] *= -1
        An = sla.SparseTensor.from_dense(torch.tensor(N))
        s, l = An.slogdet()
        s_ref, l_ref = np.linalg.slogdet(N)
        self.assertEqual(s.item(), -1.0)
        self.assertAlmostEqual(l.item(), l_ref, places=10)
        self.assertTrue(torch.isnan(An.logdet()))
        self.assertAlmostEqual(An.det().item() / np.linalg.det(N), 1.0, places=10)
        Ab = An.with_values(torch.stack([An.values, 2 * An.values]))
        s, l = Ab.slogdet()
        self.assertAlmostEqual(l[1].item() - l[0].item(), 25 * np.log(2.0), places=9)
        # singular: sign 0, log|det| = -inf
        Z = torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=F64)
        s, l = sla.SparseTensor.from_dense(Z).slogdet()
        self.assertEqual(s.item(), 0.0)
        self.assertEqual(l.item(), -np.inf)
        # a Krylov solver has no factorization: the C message says so
        with self.assertRaisesRegex(sla.SlaUnavailableError, "direct factorization"):
            A.slogdet(method="cg")

    def test_logdet_gradient(self):
        M = rand_pattern(10, 3, 32)
        v, r, c = coo_parts(M)
        v.requires_grad_(True)
        f = lambda v_: sla.SparseTensor(v_, r, c, (10, 10)).logdet()  # noqa: E731
        self.assertTrue(gradcheck(f, (v,), eps=1e-6, atol=1e-8, rtol=1e-6))


class ErrorTests(unittest.TestCase):
    def test_c_messages_reach_python(self):
        r = torch.tensor([0, 1, 5])
        c = torch.tensor([0, 1, 1])
        v = torch.ones(3, dtype=F64)
        with self.assertRaises(sla.SlaValueError) as cm:
            sla.SparseTensor(v, r, c, (3, 3)).solve(torch.ones(3, dtype=F64))
        self.assertEqual(cm.exception.status_name, "SLA_ERR_INDEX")
        self.assertIn("out of range", str(cm.exception))
        self.assertIsInstance(cm.exception, ValueError)
        A = sla.poisson(1, 5)
        bad = A.values.clone()
        bad[3] = float("nan")
        with self.assertRaisesRegex(sla.SlaValueError, "not finite") as cm:
            A.with_values(bad).solve(torch.ones(5, dtype=F64))
        self.assertEqual(cm.exception.status_name, "SLA_ERR_VALUE")
        with self.assertRaisesRegex(sla.SlaValueError, "not finite"):
            A.with_values(bad) @ torch.ones(5, dtype=F64)
        with self.assertRaisesRegex(sla.SlaValueError, "cholesky"):  # the nearest valid name
            A.solve(torch.ones(5, dtype=F64), method="cholesk")
        with self.assertRaisesRegex(sla.SlaValueError, "precond"):
            A.solve(torch.ones(5, dtype=F64), preconditioner="ilu7")
        with self.assertRaisesRegex(sla.SlaValueError, "restart"):
            A.solve(torch.ones(5, dtype=F64), restrat=5)
        with self.assertRaisesRegex(sla.SlaValueError, "rtol"):
            A.solve(torch.ones(5, dtype=F64), rtol=-1.0)
        S = torch.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=F64)
        with self.assertRaises(sla.SlaSingularError) as cm:
            sla.SparseTensor.from_dense(S).solve(torch.ones(2, dtype=F64), method="lu")
        self.assertTrue(cm.exception.message)
        Ind = torch.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=F64)
        with self.assertRaisesRegex(sla.SlaNotSPDError, "positive definite"):
            sla.SparseTensor.from_dense(Ind).solve(torch.ones(2, dtype=F64), method="cholesky")
        # auto falls back from the trial Cholesky and says so (a 1D Laplacian
        # shifted to be indefinite: its diameter makes auto factor it)
        n = 2000
        i = torch.arange(n)
        row = torch.cat([i, i[1:], i[:-1]])
        col = torch.cat([i, i[:-1], i[1:]])
        val = torch.cat([torch.full((n,), 2.0 - 1.3, dtype=F64), -torch.ones(2 * n - 2, dtype=F64)])
        Sh = sla.SparseTensor(val, row, col, (n, n))
        x, info = Sh.solve(torch.ones(n, dtype=F64), return_info=True)
        self.assertIn("fell back", info.note)
        self.assertTrue(info.converged)
        M = sp.coo_matrix((val.numpy(), (row.numpy(), col.numpy())), shape=(n, n)).tocsc()
        np.testing.assert_allclose(x.numpy(), spla.spsolve(M, np.ones(n)), rtol=1e-6, atol=1e-8)
        with self.assertRaisesRegex(ValueError, "square"):
            sla.SparseTensor(torch.ones(2, dtype=F64), [0, 1], [0, 1], (2, 3)).solve(
                torch.ones(2, dtype=F64))
        with self.assertRaisesRegex(ValueError, "same number of entries"):
            sla.SparseTensor(torch.ones(3, dtype=F64), [0, 1], [0, 1], (2, 2))
        with self.assertRaisesRegex(TypeError, "float64 or float32"):
            sla.SparseTensor(torch.ones(2, dtype=torch.int64), [0, 1], [0, 1], (2, 2))
        with self.assertRaisesRegex(ValueError, "batch"):
            sla.SparseTensor(torch.ones(2, 2, dtype=F64), [0, 1], [0, 1], (3, 2, 2))


class RegistryTests(unittest.TestCase):
    def test_names_come_from_the_library(self):
        import ctypes
        from sla import sparse
        methods = [d.name for d in _lib.METHODS if d.kind != _lib.SLA_KIND_PRECOND]
        self.assertEqual(methods[:11], ["auto", "cg", "bicgstab", "gmres", "minres", "cholesky", "ldlt",
                                   "lu", "umfpack", "klu", "superlu"])
        pcs = [d.name for d in _lib.METHODS if d.kind == _lib.SLA_KIND_PRECOND]
        self.assertEqual(pcs[:9], ["none", "jacobi", "ssor", "ic0", "ilu0", "user", "amg", "saamg",
                               "ilut"])
        self.assertEqual(_core._METHOD_ALIASES, {None: "auto", "cholmod": "cholesky", "ldl": "ldlt"})
        self.assertEqual(_core._PRECOND_ALIASES, {None: "none", False: "none", "ilu": "ilu0",
                                                  "ic": "ic0", "diag": "jacobi", "boomeramg": "amg"})
        self.assertEqual(sparse._FACTOR_METHODS, {"auto": 0, None: 0, "cholesky": 5, "ldlt": 6,
                                                  "lu": 7, "umfpack": 8, "klu": 9, "superlu": 10,
                                                  "mumps": 12})
        v = ctypes.c_int(-1)
        self.assertEqual(_lib.sla_method_from_name(None, b"ldl", ctypes.byref(v)), 0)
        self.assertEqual(v.value, 6)
        self.assertEqual(_lib.sla_precond_from_name(None, b"boomeramg", ctypes.byref(v)), 0)
        self.assertEqual(v.value, 6)
        self.assertEqual(_lib.sla_method_from_name(None, b"nope", ctypes.byref(v)), -1)
        self.assertEqual(_core.options_string("cholmod", "ic"), "method=cholesky,precond=ic0")
        A = sla.poisson(1, 6)
        b = torch.ones(6, dtype=F64)
        ref = A.solve(b, method="cg", rtol=1e-12)
        if _lib.METHODS[5].available:  # cholesky and ldlt: CHOLMOD
            for m in ("cholmod", "ldl"):
                torch.testing.assert_close(A.solve(b, method=m), ref, rtol=1e-9, atol=1e-12)
        with self.assertRaisesRegex(ValueError, "factor_method must be one of auto, cholesky"):
            A.eigsh(1, sigma=0.5, factor_method="qr")


class GeneratorTests(unittest.TestCase):
    def test_diffusion2d_values_and_gradcheck(self):
        N = 4
        P = sla.poisson(2, N)
        A1 = sla.diffusion2d(N, torch.ones((N + 1) ** 2, dtype=F64))
        np.testing.assert_allclose(A1.to_dense().numpy(), P.to_dense().numpy(), atol=1e-15)
        k = (1 + torch.rand((N + 1) ** 2, dtype=F64)).requires_grad_(True)
        b = torch.ones(N * N, dtype=F64)
        self.assertTrue(gradcheck(lambda k_: sla.diffusion2d(N, k_).values, (k,)))
        # A Krylov solve to rtol 1e-13 puts noise of about rtol / eps (1e-7
        # at eps = 1e-6) into the finite-difference Jacobian, which failed the
        # 1e-8 tolerance for some draws of k; eps = 1e-5 keeps that noise at
        # 1e-8 (the truncation error, eps^2, stays far below). A wrong
        # gradient is off by O(1), not 1e-7.
        for kw, eps, atol in [(dict(method="cholesky"), 1e-6, 1e-8),
                              (dict(method="cg", preconditioner="amg", rtol=1e-13), 1e-5, 1e-7),
                              (dict(method="cg", preconditioner="saamg", rtol=1e-13), 1e-5, 1e-7)]:
            self.assertTrue(gradcheck(lambda k_: sla.diffusion2d(N, k_).solve(b, **kw),
                                      (k,), eps=eps, atol=atol, rtol=1e-6), kw)


if __name__ == "__main__":
    unittest.main()
