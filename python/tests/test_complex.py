"""Complex SparseTensor (issue 17): A @ x, solve, slogdet, eigsh, conj / H,
scipy and Matrix Market interop, structure queries and refusals.

Every result is compared with a dense NumPy / SciPy reference
(numpy.linalg.solve, slogdet, eigh; scipy.sparse.linalg.spsolve), every
gradient with torch.autograd.gradcheck on complex inputs (central finite
differences of the real and imaginary parts in float64). Operations whose C
part is missing from this libsla, and methods the build lacks, are skipped
with the reason. Random numbers come from seeded numpy Generators only, so
the global RNG state other test modules use is untouched."""

import os
import sys
import tempfile
import unittest
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch
from torch.autograd import gradcheck

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sla  # noqa: E402
from sla import _lib  # noqa: E402

C128, C64, F64 = torch.complex128, torch.complex64, torch.float64


def zmatrix(n, kind, seed, per_row=3):
    """A random sparse complex n x n scipy matrix, nonsingular:
    "hpd" Hermitian positive definite, "csym" complex symmetric (A = A^T,
    not Hermitian), "general" (no symmetry), "herm" Hermitian indefinite."""
    rng = np.random.default_rng(seed)
    R = sp.random(n, n, density=min(1.0, per_row / n), random_state=rng, format="coo")
    R.data = rng.uniform(-1, 1, R.nnz) + 1j * rng.uniform(-1, 1, R.nnz)
    R = R.tocsr()
    if kind in ("hpd", "herm"):
        S = (R + R.conj().T).tocsr()
        d = np.asarray(abs(S).sum(axis=1)).ravel() + 1.0
        if kind == "herm":
            d = d * np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
        return (S + sp.diags(d)).tocsr()
    if kind == "csym":
        S = (R + R.T).tocsr()
        d = np.asarray(abs(S).sum(axis=1)).ravel() + 1.0
        return (S + sp.diags(d * (1.0 + 0.5j))).tocsr()
    d = np.asarray(abs(R).sum(axis=1)).ravel() + 1.0
    return (R + sp.diags(d * np.exp(0.3j))).tocsr()


def zvec(shape, seed):
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.standard_normal(shape) + 1j * rng.standard_normal(shape))


def hermitian_part(A, conj=True):
    """v -> the values of (B + B^H) / 2 (conj=False: (B + B^T) / 2) on A's
    pattern, B = A with values v: exactly Hermitian (complex symmetric), so
    a finite-difference perturbation of one entry keeps that structure.
    A's pattern must be symmetric."""
    pos = {(int(r), int(c)): k for k, (r, c) in enumerate(zip(A.row, A.col))}
    perm = torch.tensor([pos[(int(c), int(r))] for r, c in zip(A.row, A.col)])
    if conj:
        return lambda v: 0.5 * (v + v[..., perm].conj())
    return lambda v: 0.5 * (v + v[..., perm])


def have(*names):
    """None when libsla exports the C functions behind _lib.API[names]
    (always: sla._lib requires them at import), else the reason to skip."""
    missing = [n for n in names if n not in _lib.API]
    return ("libsla lacks %s (issue 17, not merged yet)" % ", ".join(missing)) if missing else None


def complex_method(name):
    """None when the method is in this build's registry with SLA_CAP_COMPLEX,
    else the reason to skip."""
    for d in _lib.METHODS:
        if d.name == name:
            if not d.available:
                return "method %s is not available in this build" % name
            if not d.flags & _lib.SLA_CAP_COMPLEX:
                return "method %s has no complex path in this libsla (SLA_CAP_COMPLEX)" % name
            return None
    return "method %s is not in this libsla's registry" % name


def any_complex_method():
    return any(d.flags & _lib.SLA_CAP_COMPLEX and d.available for d in _lib.METHODS
               if d.kind != _lib.SLA_KIND_PRECOND)


class ComplexBasics(unittest.TestCase):
    """What needs only the core (complex dtypes, properties)."""

    def test_dense_conj_H_scipy(self):
        M = zmatrix(7, "general", 1)
        A = sla.SparseTensor.from_scipy(M)
        self.assertEqual(A.dtype, C128)
        self.assertTrue(A.is_complex)
        D = torch.from_numpy(M.toarray())
        self.assertTrue(torch.equal(A.to_dense(), D))
        self.assertTrue(torch.equal(A.conj().to_dense(), D.conj()))
        self.assertTrue(torch.equal(A.H.to_dense(), D.conj().T))
        self.assertTrue(torch.equal(A.T.to_dense(), D.T))
        back = A.to_scipy()
        self.assertEqual(back.dtype, np.complex128)
        self.assertEqual(abs(back - M).max(), 0.0)
        A64 = sla.SparseTensor.from_scipy(M, dtype=torch.float32)
        self.assertEqual(A64.dtype, C64)
        self.assertTrue(torch.equal(A64.to_dense(), D.to(C64)))
        # a real matrix: conj is itself, H is T
        R = sla.SparseTensor.from_scipy(M.real)
        self.assertIs(R.conj(), R)
        self.assertTrue(torch.equal(R.H.to_dense(), R.T.to_dense()))

    def test_structure_queries(self):
        H = sla.SparseTensor.from_scipy(zmatrix(9, "hpd", 2))
        S = sla.SparseTensor.from_scipy(zmatrix(9, "csym", 3))
        G = sla.SparseTensor.from_scipy(zmatrix(9, "general", 4))
        self.assertTrue(H.is_hermitian())
        self.assertFalse(H.is_symmetric())  # Hermitian, complex off-diagonal
        self.assertTrue(S.is_symmetric())
        self.assertFalse(S.is_hermitian())
        self.assertFalse(G.is_hermitian())
        self.assertFalse(G.is_symmetric())
        self.assertTrue(H.has_positive_diagonal())
        self.assertFalse(S.has_positive_diagonal())  # complex diagonal
        # a batch: answers per matrix
        v = torch.stack([H.values, 1j * H.values])  # 1j H is skew-Hermitian
        B = sla.SparseTensor(v, H.row, H.col, H.shape)
        self.assertEqual(B.is_hermitian().tolist(), [True, False])
        self.assertEqual(sla.SparseTensorList([H, S]).is_hermitian(), [True, False])

    def test_positive_definite(self):
        why = complex_method("cholesky")
        if why:
            self.skipTest(why)
        self.assertTrue(sla.SparseTensor.from_scipy(zmatrix(12, "hpd", 5)).is_positive_definite())
        self.assertFalse(sla.SparseTensor.from_scipy(zmatrix(12, "herm", 5)).is_positive_definite())
        self.assertFalse(sla.SparseTensor.from_scipy(zmatrix(12, "csym", 5)).is_positive_definite())
        # Hermitian with a positive diagonal, definite or not (by the shift):
        # the C query (trial complex Cholesky) against NumPy's eigenvalues
        H = zmatrix(30, "hpd", 8)
        lo = np.linalg.eigvalsh(H.toarray()).min()
        seen = set()
        for shift in (lo - 0.5, lo - 1e-3 * abs(lo), lo + 1e-3 * abs(lo), lo + 0.5, 0.0):
            M = (H - sp.diags(np.full(30, shift))).tocsr()
            if (M.diagonal().real <= 0).any():
                continue
            want = bool(np.linalg.eigvalsh(M.toarray()).min() > 0)
            seen.add(want)
            for dt in (torch.complex128, torch.complex64):
                with self.subTest(shift=shift, dtype=dt):
                    A = sla.SparseTensor.from_scipy(M).to(dt)
                    self.assertEqual(A.is_positive_definite(), want)
        self.assertEqual(seen, {True, False})
        # a batch of two value arrays: one definite, one not
        A = sla.SparseTensor.from_scipy(H)
        Mi = (H - sp.diags(np.full(30, lo + 1e-3 * abs(lo)))).tocsr()
        Bi = sla.SparseTensor.from_scipy(Mi)
        self.assertTrue(torch.equal(A.row, Bi.row) and torch.equal(A.col, Bi.col))
        B = sla.SparseTensor(torch.stack([A.values, Bi.values]), A.row, A.col, A.shape)
        self.assertEqual(B.is_positive_definite().tolist(), [True, False])

    def test_refusals(self):
        A = sla.SparseTensor.from_scipy(zmatrix(8, "general", 6))
        b = zvec(8, 7)
        R = sla.SparseTensor.from_scipy(zmatrix(8, "general", 6).real)
        cases = [("svds", lambda: A.svds(2)), ("svds", lambda: sla.svds(A, 2)),
                 ("eigs", lambda: A.eigs(2)), ("cond", lambda: A.cond()),
                 ("lsqr", lambda: A.lsqr(b)), ("lsqr", lambda: sla.lsqr(A, b)),
                 ("lsqr", lambda: R.lsqr(b)), ("lsmr", lambda: sla.lsmr(R, b)),
                 ("SpGEMM", lambda: A @ A), ("A \\+ B", lambda: A + R), ("A \\* B", lambda: R * A),
                 ("laplacian", lambda: A.laplacian()),
                 ("eigsh with M", lambda: A.eigsh(2, M=R)),
                 ("nonlinear_solve", lambda: sla.nonlinear_solve(lambda u: u, b))]
        for name, f in cases:
            with self.subTest(op=name):
                with self.assertRaisesRegex(TypeError, name + ".*complex"):
                    f()

    def test_values_dtype_checked(self):
        with self.assertRaisesRegex(TypeError, "float64 or float32.*complex128 or complex64"):
            sla.SparseTensor(torch.ones(2, dtype=torch.int32), [0, 1], [0, 1], (2, 2))

    def test_real_matrix_complex_rhs(self):
        """A real A with a complex b or x: two real problems (real path)."""
        M = zmatrix(10, "general", 8).real.tocsr() + sp.eye(10) * 3
        A = sla.SparseTensor.from_scipy(M)
        b = zvec(10, 9)
        x = A.solve(b)
        self.assertEqual(x.dtype, C128)
        ref = np.linalg.solve(M.toarray(), b.numpy())
        self.assertLess(np.abs(x.numpy() - ref).max(), 1e-12)
        X = A.solve(zvec((10, 3), 10))
        refX = np.linalg.solve(M.toarray(), zvec((10, 3), 10).numpy())
        self.assertLess(np.abs(X.numpy() - refX).max(), 1e-12)
        y = A @ b
        self.assertLess(np.abs(y.numpy() - M @ b.numpy()).max(), 1e-12)
        # gradients: real values get a real gradient (Re of the complex one)
        v = A.values.clone().requires_grad_(True)
        bb = b.clone().requires_grad_(True)
        self.assertTrue(gradcheck(
            lambda v, bb: sla.SparseTensor(v, A.row, A.col, A.shape).solve(bb, method="lu"),
            (v, bb)))
        self.assertTrue(gradcheck(lambda v, bb: sla.SparseTensor(v, A.row, A.col, A.shape) @ bb,
                                  (v, bb)))


class ComplexMatvec(unittest.TestCase):
    def setUp(self):
        why = have("zmatvec", "zmatvec_vjp")
        if why:
            self.skipTest(why)

    def test_values(self):
        M = zmatrix(11, "general", 11)
        A = sla.SparseTensor.from_scipy(M)
        x = zvec(11, 12)
        self.assertLess(np.abs((A @ x).numpy() - M @ x.numpy()).max(), 1e-13)
        X = zvec((11, 3), 13)
        self.assertLess(np.abs((A @ X).numpy() - M @ X.numpy()).max(), 1e-13)
        xr = torch.from_numpy(np.random.default_rng(14).standard_normal(11))
        y = A @ xr  # a real x is promoted
        self.assertEqual(y.dtype, C128)
        self.assertLess(np.abs(y.numpy() - M @ xr.numpy()).max(), 1e-13)
        self.assertLess(np.abs((A.H @ x).numpy() - M.conj().T @ x.numpy()).max(), 1e-13)
        # complex64 storage (computed in complex128, returned as complex64)
        A64 = A.to(C64)
        y64 = A64 @ x.to(C64)
        self.assertEqual(y64.dtype, C64)
        self.assertLess(np.abs(y64.numpy() - M.astype(np.complex64) @ x.numpy()).max(), 1e-5)

    def test_batch(self):
        M = zmatrix(9, "general", 15)
        A = sla.SparseTensor.from_scipy(M)
        v = torch.stack([A.values, 2 * A.values, A.values.conj()])
        B = sla.SparseTensor(v, A.row, A.col, (3, 9, 9))
        x = zvec((3, 9), 16)
        y = B @ x
        for i, Mi in enumerate([M, 2 * M, M.conj()]):
            self.assertLess(np.abs(y[i].numpy() - Mi @ x[i].numpy()).max(), 1e-13)

    def test_gradcheck(self):
        M = zmatrix(6, "general", 17)
        A = sla.SparseTensor.from_scipy(M)
        v = A.values.clone().requires_grad_(True)
        x = zvec(6, 18).requires_grad_(True)
        X = zvec((6, 2), 19).requires_grad_(True)

        def f(v, x):
            return sla.SparseTensor(v, A.row, A.col, A.shape) @ x

        self.assertTrue(gradcheck(f, (v, x)))
        self.assertTrue(gradcheck(f, (v, X)))
        vb = torch.stack([A.values, 1j * A.values]).requires_grad_(True)
        self.assertTrue(gradcheck(lambda vb, x: sla.SparseTensor(vb, A.row, A.col, (2, 6, 6)) @ x,
                                  (vb, x)))


SOLVE_CASES = [  # (matrix kind, method, preconditioner, tolerance against the reference)
    ("hpd", "auto", None, 1e-9), ("csym", "auto", None, 1e-9), ("general", "auto", None, 1e-9),
    ("hpd", "cg", "jacobi", 1e-8), ("hpd", "cg", "ic0", 1e-8), ("herm", "minres", None, 1e-8),
    ("csym", "cocg", "jacobi", 1e-8), ("general", "gmres", "ilu0", 1e-8),
    ("general", "bicgstab", "jacobi", 1e-8), ("general", "lu", None, 1e-11),
    ("general", "umfpack", None, 1e-11), ("general", "klu", None, 1e-11),
    ("general", "superlu", None, 1e-11), ("hpd", "cholesky", None, 1e-11),
]


class ComplexSolve(unittest.TestCase):
    def setUp(self):
        warnings.simplefilter("error", sla.SlaConvergenceWarning)
        why = have("zsolver_solve", "zsolver_solve_vjp")
        if why:
            self.skipTest(why)

    def _skip_method(self, method, pc=None):
        why = complex_method(method) if method != "auto" else (
            None if any_complex_method() else "no method has a complex path in this libsla")
        if why is None and pc is not None:
            why = complex_method(pc)
        return why

    def test_methods_vs_numpy(self):
        for kind, method, pc, tol in SOLVE_CASES:
            with self.subTest(kind=kind, method=method, precond=pc):
                why = self._skip_method(method, pc)
                if why:
                    self.skipTest(why)
                M = zmatrix(40, kind, 20)
                A = sla.SparseTensor.from_scipy(M)
                b = zvec(40, 21)
                kw = {} if method in ("auto", "lu", "umfpack", "klu", "superlu", "cholesky") \
                    else {"rtol": 1e-12, "maxiter": 2000}
                x, info = A.solve(b, method=method, preconditioner=pc, return_info=True, **kw)
                self.assertTrue(info.converged, info)
                ref = np.linalg.solve(M.toarray(), b.numpy())
                self.assertLess(np.abs(x.numpy() - ref).max() / np.abs(ref).max(), tol, info)
                ref2 = spla.spsolve(M.tocsc(), b.numpy())
                self.assertLess(np.abs(x.numpy() - ref2).max() / np.abs(ref2).max(), tol)

    def test_structure_mismatch_refused(self):
        if self._skip_method("cg"):
            self.skipTest(self._skip_method("cg"))
        A = sla.SparseTensor.from_scipy(zmatrix(20, "general", 22))
        with self.assertRaises(sla.SlaError):
            A.solve(zvec(20, 23), method="cg")

    def test_shapes_batches_complex64_real_rhs(self):
        if self._skip_method("lu"):
            self.skipTest(self._skip_method("lu"))
        M = zmatrix(15, "general", 24)
        A = sla.SparseTensor.from_scipy(M)
        X = A.solve(zvec((15, 3), 25), method="lu")
        ref = np.linalg.solve(M.toarray(), zvec((15, 3), 25).numpy())
        self.assertLess(np.abs(X.numpy() - ref).max(), 1e-11)
        br = torch.from_numpy(np.random.default_rng(26).standard_normal(15))
        x = A.solve(br, method="lu")  # real b promoted
        self.assertEqual(x.dtype, C128)
        self.assertLess(np.abs(x.numpy() - np.linalg.solve(M.toarray(), br.numpy())).max(), 1e-11)
        v = torch.stack([A.values, A.values.conj(), 3 * A.values])
        B = sla.SparseTensor(v, A.row, A.col, (3, 15, 15))
        b = zvec((3, 15), 27)
        xb = B.solve(b, method="lu")
        for i, Mi in enumerate([M, M.conj(), 3 * M]):
            self.assertLess(np.abs(xb[i].numpy() - np.linalg.solve(Mi.toarray(), b[i].numpy()))
                            .max(), 1e-11)
        x64 = A.to(C64).solve(b[0].to(C64), method="lu")
        self.assertEqual(x64.dtype, C64)
        ref64 = np.linalg.solve(M.toarray().astype(np.complex64).astype(np.complex128), b[0].numpy())
        self.assertLess(np.abs(x64.numpy() - ref64).max() / np.abs(ref64).max(), 1e-5)
        # a list of matrices with different patterns (one solve each)
        M2 = zmatrix(12, "hpd", 28)
        xs = sla.SparseTensorList([A, sla.SparseTensor.from_scipy(M2)]).solve(
            [b[0], zvec(12, 29)], method="lu")
        self.assertLess(np.abs(xs[1].numpy() - np.linalg.solve(M2.toarray(), zvec(12, 29).numpy()))
                        .max(), 1e-11)

    def test_list_solve(self):
        # complex matrices with different patterns (two share one): one
        # sla_zsolver_solve_list call, against NumPy; the gradients through
        # sla_zsolver_solve_list_vjp against the single solves' and gradcheck
        Ms = [zmatrix(9, "general", 40), zmatrix(12, "hpd", 41), zmatrix(9, "general", 40) * 2,
              zmatrix(7, "csym", 42)]
        Ts = [sla.SparseTensor.from_scipy(M) for M in Ms]
        bs = [zvec(M.shape[0], 43 + i) for i, M in enumerate(Ms)]
        bs[1] = bs[1].real.clone()  # a real b is promoted
        for method in ("lu", "gmres"):
            with self.subTest(method=method):
                why = self._skip_method(method, None)
                if why:
                    self.skipTest(why)
                kw = {} if method == "lu" else {"rtol": 1e-13, "maxiter": 400}
                xs, infos = sla.SparseTensorList(Ts).solve(bs, method=method, return_info=True, **kw)
                self.assertEqual(len(infos), 4)
                for x, M, b, inf in zip(xs, Ms, bs, infos):
                    self.assertEqual(x.dtype, C128)
                    self.assertTrue(inf.converged)
                    ref = np.linalg.solve(M.toarray(), b.numpy())
                    self.assertLess(np.abs(x.numpy() - ref).max() / np.abs(ref).max(), 1e-10)
        # gradients: list vs one solve per item
        w = [zvec(M.shape[0], 60 + i) for i, M in enumerate(Ms)]

        def grads(listed):
            vs = [T.values.clone().requires_grad_(True) for T in Ts]
            bb = [b.clone().to(C128).requires_grad_(True) for b in bs]
            As = [sla.SparseTensor(v, T.row, T.col, T.shape) for v, T in zip(vs, Ts)]
            xs = (sla.SparseTensorList(As).solve(bb, method="lu") if listed
                  else [A.solve(b, method="lu") for A, b in zip(As, bb)])
            loss = sum((wi.conj() * x).real.sum() for wi, x in zip(w, xs))
            loss.backward()
            return [v.grad for v in vs] + [b.grad for b in bb]

        for g1, g2 in zip(grads(True), grads(False)):
            self.assertLess((g1 - g2).abs().max().item(), 1e-10 * max(1.0, g2.abs().max().item()))
        # gradcheck on two small items
        A1 = sla.SparseTensor.from_scipy(zmatrix(5, "general", 70))
        A2 = sla.SparseTensor.from_scipy(zmatrix(6, "general", 71))

        def f(v1, v2, b1, b2):
            L = sla.SparseTensorList([sla.SparseTensor(v1, A1.row, A1.col, A1.shape),
                                      sla.SparseTensor(v2, A2.row, A2.col, A2.shape)])
            return tuple(L.solve([b1, b2], method="lu"))

        args = (A1.values.clone().requires_grad_(True), A2.values.clone().requires_grad_(True),
                zvec(5, 72).requires_grad_(True), zvec(6, 73).requires_grad_(True))
        self.assertTrue(torch.autograd.gradcheck(f, args, eps=1e-6, atol=1e-7, rtol=1e-6))
        # real and complex matrices mixed: still answered (one solve per item)
        R = sla.SparseTensor.from_scipy(zmatrix(9, "general", 40).real)
        xs = sla.SparseTensorList([Ts[0], R]).solve([bs[0], bs[0]], method="lu")
        ref = np.linalg.solve(zmatrix(9, "general", 40).real.toarray(), bs[0].numpy())
        self.assertLess(np.abs(xs[1].numpy() - ref).max(), 1e-10)

    def test_gradcheck(self):
        cases = [("general", "lu", None), ("hpd", "cg", "jacobi"), ("general", "gmres", None),
                 ("csym", "cocg", None), ("hpd", "cholesky", None)]
        M0 = {k: zmatrix(7, k, 30) for k in ("general", "hpd", "csym")}
        for kind, method, pc in cases:
            with self.subTest(kind=kind, method=method):
                why = self._skip_method(method, pc)
                if why:
                    self.skipTest(why)
                A = sla.SparseTensor.from_scipy(M0[kind])
                kw = {} if method in ("lu", "cholesky") else {"rtol": 1e-14, "maxiter": 500}
                v = A.values.clone().requires_grad_(True)
                b = zvec((7, 2), 31).requires_grad_(True)

                # keep A Hermitian (complex symmetric) under the perturbation
                keep = (hermitian_part(A, conj=kind == "hpd") if kind in ("hpd", "csym")
                        else (lambda v: v))

                def f(v, b):
                    v = keep(v)
                    return sla.SparseTensor(v, A.row, A.col, A.shape).solve(
                        b, method=method, preconditioner=pc, **kw)

                self.assertTrue(gradcheck(f, (v, b), atol=1e-6, rtol=1e-5))

    def test_adjoint_identity(self):
        """<w, A^-1 b> consistency: the VJP gb of x = A^-1 b with cotangent w
        is A^-H w, so <gb, b> = <w, x> (complex inner products)."""
        if self._skip_method("lu"):
            self.skipTest(self._skip_method("lu"))
        M = zmatrix(25, "general", 32)
        A = sla.SparseTensor.from_scipy(M)
        b = zvec(25, 33).requires_grad_(True)
        w = zvec(25, 34)
        x = A.solve(b, method="lu")
        (gb,) = torch.autograd.grad(x, b, w)
        lhs = torch.vdot(gb, b.detach())
        rhs = torch.vdot(w, x.detach())
        self.assertLessEqual(abs(complex(lhs - rhs)), 1e-10 * abs(complex(rhs)))


class ComplexSlogdet(unittest.TestCase):
    """Through the complex solver object (sla_zsolver_logdet, method as
    asked) or, in a libsla without it, the one-shot sla_zlogdet."""

    def setUp(self):
        self.solver = have("zsolver_logdet", "zsolver_logdet_vjp") is None
        if not self.solver:
            why = have("zlogdet", "zlogdet_vjp")
            if why:
                self.skipTest(why)
        elif complex_method("lu"):
            self.skipTest(complex_method("lu"))

    def test_values(self):
        for kind, method in [("general", "lu"), ("csym", "lu"), ("hpd", "cholesky"),
                             ("general", "umfpack"), ("hpd", "lu")]:
            with self.subTest(kind=kind, method=method):
                if self.solver and complex_method(method):
                    self.skipTest(complex_method(method))
                M = zmatrix(30, kind, 40)
                sign, lad = sla.SparseTensor.from_scipy(M).slogdet(method=method)
                s_ref, l_ref = np.linalg.slogdet(M.toarray())
                self.assertEqual(sign.dtype, C128)
                self.assertEqual(lad.dtype, F64)
                self.assertLess(abs(complex(sign) - s_ref), 1e-10)
                self.assertLess(abs(float(lad) - l_ref), 1e-10 * max(1.0, abs(l_ref)))

    def test_batch_singular(self):
        M = zmatrix(8, "general", 41)
        A = sla.SparseTensor.from_scipy(M)
        sing = A.values.clone()
        sing[A.row == 0] = 0  # a zero row
        v = torch.stack([A.values, sing, 2j * A.values])
        sign, lad = sla.SparseTensor(v, A.row, A.col, (3, 8, 8)).slogdet()
        self.assertEqual(complex(sign[1]), 0)
        self.assertEqual(float(lad[1]), -float("inf"))
        for i, Mi in [(0, M), (2, 2j * M)]:
            s_ref, l_ref = np.linalg.slogdet(Mi.toarray())
            self.assertLess(abs(complex(sign[i]) - s_ref), 1e-10)
            self.assertLess(abs(float(lad[i]) - l_ref), 1e-10)

    def test_gradcheck(self):
        M = zmatrix(6, "general", 42)
        A = sla.SparseTensor.from_scipy(M)
        w = complex(0.3, -0.7)

        def f(v):
            sign, lad = sla.SparseTensor(v, A.row, A.col, A.shape).slogdet()
            return lad, (sign * w).real, sign  # both outputs, and the phase itself

        v = A.values.clone().requires_grad_(True)
        self.assertTrue(gradcheck(f, (v,)))
        # against torch's dense slogdet
        v2 = A.values.clone().requires_grad_(True)
        s, l = sla.SparseTensor(v2, A.row, A.col, A.shape).slogdet()
        (l + (s * w).real).backward()
        D = sla.SparseTensor(A.values.clone().requires_grad_(True), A.row, A.col, A.shape)
        sd, ld = torch.linalg.slogdet(D.to_dense())
        (ld + (sd * w).real).backward()
        self.assertLess((v2.grad - D.values.grad).abs().max().item(), 1e-10)
        # logdet / det of a complex matrix
        self.assertLess(abs(complex(sla.SparseTensor.from_scipy(M).det())
                            - np.linalg.det(M.toarray())), 1e-9 * abs(np.linalg.det(M.toarray())))


class ComplexEigsh(unittest.TestCase):
    def setUp(self):
        why = have("zeigsh", "zeigsh_vjp")
        if why:
            self.skipTest(why)

    def test_values_and_vectors(self):
        M = zmatrix(40, "herm", 50)
        A = sla.SparseTensor.from_scipy(M)
        ref = np.linalg.eigh(M.toarray())[0]
        for which, sel in [("LA", ref[-4:]), ("SA", ref[:4]),
                           ("LM", np.sort(ref[np.argsort(-np.abs(ref))[:4]]))]:
            with self.subTest(which=which):
                lam, V = A.eigsh(4, which=which)
                self.assertEqual(lam.dtype, F64)
                self.assertEqual(V.dtype, C128)
                self.assertLess(np.abs(lam.numpy() - sel).max(), 1e-9)
                R = M @ V.numpy() - V.numpy() * lam.numpy()
                self.assertLess(np.abs(R).max(), 1e-8)
                self.assertLess(np.abs(V.numpy().conj().T @ V.numpy() - np.eye(4)).max(), 1e-9)
                big = V.abs().argmax(0)
                top = V[big, torch.arange(4)]
                self.assertLess(top.imag.abs().max().item(), 1e-12)  # the gauge C promises
                self.assertTrue(bool((top.real > 0).all()))

    def test_batch_complex64_gauge(self):
        M = zmatrix(30, "hpd", 56)
        A = sla.SparseTensor.from_scipy(M)
        v = torch.stack([A.values, 2 * A.values])
        lam, V = sla.SparseTensor(v, A.row, A.col, (2, 30, 30)).eigsh(3, which="SA")
        ref = np.linalg.eigh(M.toarray())[0][:3]
        self.assertLess(np.abs(lam[0].numpy() - ref).max(), 1e-9)
        self.assertLess(np.abs(lam[1].numpy() - 2 * ref).max(), 1e-9)
        lam64, V64 = A.to(C64).eigsh(3, which="SA")
        self.assertEqual((lam64.dtype, V64.dtype), (torch.float32, C64))
        self.assertLess(np.abs(lam64.numpy() - ref).max(), 1e-4)
        # a loss that depends on the arbitrary phase of an eigenvector is refused
        vv = A.values.clone().requires_grad_(True)
        lam, V = sla.SparseTensor(vv, A.row, A.col, A.shape).eigsh(2, which="SA")
        c = zvec((30, 2), 57)
        with self.assertRaises(sla.SlaError):
            (V * c).real.sum().backward()

    def test_arpack_path(self):
        """n > 200: ARPACK's complex Arnoldi (the dense path serves smaller n)."""
        M = zmatrix(400, "herm", 58)
        A = sla.SparseTensor.from_scipy(M)
        ref = np.linalg.eigh(M.toarray())[0]
        v = A.values.clone().requires_grad_(True)
        lam, V, info = sla.SparseTensor(v, A.row, A.col, A.shape).eigsh(
            3, which="LA", return_info=True, v0=np.ones(400))
        self.assertNotIn("dense", info[0].method)
        self.assertLess(np.abs(lam.detach().numpy() - ref[-3:]).max(), 1e-8)
        self.assertLess(np.abs(M @ V.detach().numpy() - V.detach().numpy() * lam.detach().numpy())
                        .max(), 1e-8)
        # Hellmann-Feynman: d(sum lam)/dA[k] = sum_j v_j[r] conj(v_j[c])
        lam.sum().backward()
        Vd = V.detach().numpy()
        r, c = A.row.numpy(), A.col.numpy()
        hf = (Vd[r] * Vd[c].conj()).sum(1)
        self.assertLess(np.abs(v.grad.numpy() - hf).max(), 1e-8)

    def test_not_hermitian_refused(self):
        A = sla.SparseTensor.from_scipy(zmatrix(20, "csym", 51))
        with self.assertRaises(sla.SlaError):
            A.eigsh(2, which="LA")

    def test_gradcheck(self):
        M = zmatrix(10, "hpd", 52)
        A = sla.SparseTensor.from_scipy(M)
        wv = torch.from_numpy(np.random.default_rng(53).standard_normal((10, 2)))

        herm = hermitian_part(A)

        def f(v):
            v = herm(v)
            lam, V = sla.SparseTensor(v, A.row, A.col, A.shape).eigsh(2, which="LA")
            # gauge invariant: eigenvalues and |v_j[i]|^2
            return lam, (V.abs() ** 2 * wv).sum(0)

        v = A.values.clone().requires_grad_(True)
        self.assertTrue(gradcheck(f, (v,), atol=1e-6, rtol=1e-5))


class ComplexGeneratorsAndFiles(unittest.TestCase):
    def test_helmholtz(self):
        why = have("gen_helmholtz2d")
        if why:
            self.skipTest(why)
        N, k, alpha = 6, 9.0, 0.5
        A = sla.helmholtz2d(N, k, alpha)
        self.assertEqual(A.dtype, C128)
        h = 1.0 / (N + 1)
        T = sp.diags([-1, 2, -1], [-1, 0, 1], shape=(N, N))
        ref = (sp.kron(sp.eye(N), T) + sp.kron(T, sp.eye(N))
               - (k * h) ** 2 * (1 + 1j * alpha) * sp.eye(N * N)).toarray()
        self.assertLess(np.abs(A.to_dense().numpy() - ref).max(), 1e-14)
        self.assertTrue(A.is_symmetric())
        self.assertFalse(A.is_hermitian())
        if have("zsolver_solve") is None and complex_method("lu") is None:
            b = zvec(N * N, 54)
            x = A.solve(b, method="lu")
            self.assertLess(np.abs(x.numpy() - np.linalg.solve(ref, b.numpy())).max(), 1e-11)

    def test_load_mtx_complex(self):
        text = ("%%MatrixMarket matrix coordinate complex hermitian\n"
                "3 3 4\n1 1 2.0 0\n2 1 1.5 -0.5\n3 2 0.25 2\n3 3 -1 0\n")
        ref = np.array([[2, 1.5 + 0.5j, 0], [1.5 - 0.5j, 0, 0.25 - 2j], [0, 0.25 + 2j, -1]])
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "h.mtx")
            with open(p, "w") as f:
                f.write(text)
            try:
                A = sla.load_mtx(p)
            except sla.SlaError as e:
                self.skipTest("this libsla's Matrix Market reader has no complex files: %s" % e)
            self.assertEqual(A.dtype, C128)
            self.assertTrue(np.array_equal(A.to_dense().numpy(), ref))
            self.assertEqual(sla.load_mtx(p, dtype=torch.float32).dtype, C64)
            # a round trip through the writer
            q = os.path.join(d, "g.mtx")
            G = sla.SparseTensor.from_scipy(zmatrix(6, "general", 55))
            sla.save_mtx(q, G)
            with open(q) as f:
                head = f.readline()
            if "complex" not in head:
                self.skipTest("this libsla's Matrix Market writer has no complex files")
            G2 = sla.load_mtx(q)
            self.assertTrue(torch.equal(G2.to_dense(), G.to_dense()))


if __name__ == "__main__":
    unittest.main()
