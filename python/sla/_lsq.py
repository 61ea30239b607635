"""Damped sparse least squares, differentiable: sla.lsqr, sla.lsmr and
SparseTensor.lsqr, over the C library's sla_lsq (LSQR, LSMR) and its VJP
sla_lsq_vjp (include/sla/lsq.h). Names and arguments follow SciPy's
scipy.sparse.linalg.lsqr / lsmr where they make sense; no numerical
algorithm is written here."""

import ctypes
import warnings

import torch
from torch.autograd.function import once_differentiable

from . import _lib as L

c_int64, c_double, c_int, c_bool, c_void_p = L.c_int64, L.c_double, L.c_int, L.c_bool, L.c_void_p

LSQR, LSMR, QR = 0, 1, 2
REASONS = {0: "zero", 1: "compatible", 2: "normal", 3: "conlim", 4: "maxiter"}


class CLsqOptions(ctypes.Structure):
    _fields_ = [("method", c_int), ("damp", c_double), ("atol", c_double), ("btol", c_double),
                ("conlim", c_double), ("maxiter", c_int64), ("x0", c_void_p),
                ("grad_rtol", c_double), ("grad_maxiter", c_int64), ("transpose", c_int)]


class CLsqInfo(ctypes.Structure):
    _fields_ = [("method", ctypes.c_char * 8), ("reason", c_int), ("converged", c_bool),
                ("iterations", c_int64), ("rnorm", c_double), ("arnorm", c_double),
                ("anorm", c_double), ("acond", c_double), ("xnorm", c_double),
                ("true_rnorm", c_double), ("true_arnorm", c_double),
                ("adjoint_iterations", c_int64), ("adjoint_residual", c_double),
                ("seconds", c_double), ("note", ctypes.c_char * 160)]


_P = c_void_p
sla_lsq_options_default = L._proto("sla_lsq_options_default", None, _P)
sla_lsq = L._proto("sla_lsq", c_int, _P, _P, c_int64, _P, L.PTR, L.PTR, _P)
sla_lsq_vjp = L._proto("sla_lsq_vjp", c_int, _P, _P, c_int64, _P, L.PTR, L.PTR, L.PTR, L.PTR, L.PTR, _P)
# the batch entry points (value arrays in parallel in C); a loop over sla_lsq without them
sla_lsq_batch = (L._proto("sla_lsq_batch", c_int, _P, _P, _P, L.PTR, L.PTR, _P)
                 if hasattr(L.lib, "sla_lsq_batch") else None)
sla_lsq_batch_vjp = (L._proto("sla_lsq_batch_vjp", c_int, _P, _P, _P, L.PTR, L.PTR, L.PTR, L.PTR, L.PTR, _P)
                     if hasattr(L.lib, "sla_lsq_batch_vjp") else None)


class LsqInfo:
    """Report of one solve (sla_lsq_info): method, reason ("compatible",
    "normal", "conlim", "maxiter", "zero"), converged, iterations (SciPy's
    itn), rnorm / arnorm / anorm / acond / xnorm (the estimates, SciPy's
    r1norm-with-damping r2norm, arnorm, anorm, acond, xnorm), true_rnorm
    (||b - A x||) and true_arnorm (||A^T r - damp^2 x||) computed at the
    end, seconds; after backward, adjoint (a dict: iterations, residual,
    converged, note)."""

    def __init__(self, c):
        self.method = c.method.decode()
        self.reason = REASONS.get(c.reason, str(c.reason))
        self.istop = int(c.reason)
        self.converged = bool(c.converged)
        for k in ("iterations",):
            setattr(self, k, int(getattr(c, k)))
        for k in ("rnorm", "arnorm", "anorm", "acond", "xnorm", "true_rnorm", "true_arnorm", "seconds"):
            setattr(self, k, float(getattr(c, k)))
        self.note = c.note.decode(errors="replace")
        self.adjoint = None

    def __repr__(self):
        return ("LsqInfo(method=%r, reason=%r, converged=%r, iterations=%d, true_rnorm=%.3e, "
                "true_arnorm=%.3e, acond=%.3e)" % (self.method, self.reason, self.converged,
                                                   self.iterations, self.true_rnorm,
                                                   self.true_arnorm, self.acond))


class LsqFn(torch.autograd.Function):
    """x [B, n] = argmin ||A_b x - b_b||^2 + damp^2 ||x||^2 for each value
    array b of A, by sla_lsq; gradients to values [B, nnz] and b [B, m] by
    sla_lsq_vjp."""

    @staticmethod
    def forward(ctx, values, b, cmat, copts, box):
        B = values.shape[0]
        n = cmat.pattern.ncols
        x = torch.empty((B, n), dtype=torch.float64)
        infos = []
        worst = 0
        with cmat.lock:
            cmat.bind(values)
            if B > 1 and sla_lsq_batch is not None:
                cinfo = (CLsqInfo * B)()
                bo = copts
                if copts.x0:  # one start for every array: [B, n] for C
                    box["x0b"] = box["x0"].expand(B, n).contiguous()
                    bo = CLsqOptions.from_buffer_copy(copts)
                    bo.x0 = box["x0b"].data_ptr()
                worst = L.check(sla_lsq_batch(L.ctx(), cmat.ptr, ctypes.byref(bo), b.data_ptr(),
                                              x.data_ptr(), cinfo), "lsqr")
                infos = [LsqInfo(ci) for ci in cinfo]
            for i in range(B if not infos else 0):
                ci = CLsqInfo()
                st = L.check(sla_lsq(L.ctx(), cmat.ptr, i, ctypes.byref(copts), b[i].data_ptr(),
                                     x[i].data_ptr(), ctypes.byref(ci)), "lsqr")
                worst = max(worst, st)
                infos.append(LsqInfo(ci))
        box["info"] = infos
        if worst == 1:
            warnings.warn("sla: lsqr/lsmr stopped before convergence: %r" % infos,
                          L.SlaConvergenceWarning, stacklevel=4)
        ctx.cmat, ctx.copts, ctx.box = cmat, copts, box
        ctx.save_for_backward(values, b, x)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, gx):
        values, b, x = ctx.saved_tensors
        cmat, copts = ctx.cmat, ctx.copts
        B, m = b.shape
        gx = gx.to(torch.float64).contiguous()
        want_A, want_b = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        gA = torch.zeros(values.shape, dtype=torch.float64) if want_A else None
        gb = torch.zeros((B, m), dtype=torch.float64) if want_b else None
        adj = []
        worst = 0
        with cmat.lock:
            cmat.bind(values)
            if B > 1 and sla_lsq_batch_vjp is not None:
                cinfo = (CLsqInfo * B)()
                worst = L.check(sla_lsq_batch_vjp(L.ctx(), cmat.ptr, ctypes.byref(copts), b.data_ptr(),
                                                  x.data_ptr(), gx.data_ptr(),
                                                  gb.data_ptr() if want_b else None,
                                                  gA.data_ptr() if want_A else None, cinfo),
                                "lsqr backward")
                adj = [dict(iterations=int(ci.adjoint_iterations), residual=float(ci.adjoint_residual),
                            converged=bool(ci.converged), note=ci.note.decode(errors="replace"))
                       for ci in cinfo]
            for i in range(B if not adj else 0):
                ci = CLsqInfo()
                st = L.check(sla_lsq_vjp(L.ctx(), cmat.ptr, i, ctypes.byref(copts), b[i].data_ptr(),
                                         x[i].data_ptr(), gx[i].data_ptr(),
                                         gb[i].data_ptr() if want_b else None,
                                         gA[i].data_ptr() if want_A else None, ctypes.byref(ci)),
                             "lsqr backward")
                worst = max(worst, st)
                adj.append(dict(iterations=int(ci.adjoint_iterations),
                                residual=float(ci.adjoint_residual), converged=bool(ci.converged),
                                note=ci.note.decode(errors="replace")))
        for info, a in zip(ctx.box.get("info", []), adj):
            info.adjoint = a
        if worst == 1:
            warnings.warn("sla: lsqr backward: an adjoint solve missed grad_rtol: %r" % adj,
                          L.SlaConvergenceWarning, stacklevel=3)
        return gA, gb, None, None, None


_TRANSPOSE = {"auto": 0, "explicit": 1, "scatter": 2}  # sla_transpose_mode


def _transpose_mode(transpose, who):
    if transpose not in _TRANSPOSE:
        raise ValueError("%s: transpose must be 'auto', 'explicit' or 'scatter' (got %r)" % (who, transpose))
    return _TRANSPOSE[transpose]


def _solve(method, A, b, damp, atol, btol, conlim, maxiter, x0, grad_rtol, grad_maxiter,
           return_info, who, transpose="auto"):
    from .sparse import SparseTensor
    if not isinstance(A, SparseTensor):
        A = SparseTensor.from_scipy(A)
    from ._complex import refuse
    refuse(who, A, b)
    m, n = A.shape[-2], A.shape[-1]
    bs = A.batch_shape
    B = 1
    for s in bs:
        B *= s
    b = torch.as_tensor(b)
    if b.shape[-1:] != (m,) or b.dim() not in (1, 1 + len(bs)) or (b.dim() > 1 and tuple(b.shape[:-1]) != bs):
        want = "(%d,)" % m + (" or %s" % (bs + (m,),) if bs else "")
        raise ValueError("%s: b must have shape %s (got %s)" % (who, want, tuple(b.shape)))
    out_dtype = torch.promote_types(A.dtype, b.dtype) if b.is_floating_point() else A.dtype
    b2 = b.to(torch.float64).expand(bs + (m,)).reshape(B, m).contiguous()
    copts = CLsqOptions()
    sla_lsq_options_default(ctypes.byref(copts))
    copts.method = method
    copts.damp, copts.atol, copts.btol, copts.conlim = float(damp), float(atol), float(btol), float(conlim)
    copts.maxiter = 0 if maxiter is None else int(maxiter)
    copts.grad_rtol, copts.grad_maxiter = float(grad_rtol), int(grad_maxiter)
    copts.transpose = _transpose_mode(transpose, who)
    box = {}
    if x0 is not None:
        x0 = torch.as_tensor(x0).detach().to(torch.float64).contiguous().reshape(-1)
        if x0.numel() != n:
            raise ValueError("%s: x0 must have %d entries (got %d)" % (who, n, x0.numel()))
        copts.x0 = x0.data_ptr()
        box["x0"] = x0  # alive while the options are
    pat = A.pattern
    vals = A._csr_values(pat).to(torch.float64).contiguous()
    cmat = pat.matrix(torch.float64, vals.shape[0])
    x = LsqFn.apply(vals, b2, cmat, copts, box)
    x = x.reshape(bs + (n,)).to(out_dtype)
    if return_info:
        infos = box["info"]
        return x, (infos[0] if not bs else infos)
    return x


def lsqr(A, b, damp=0.0, atol=1e-8, btol=1e-8, conlim=1e8, iter_lim=None, x0=None,
         grad_rtol=1e-10, grad_maxiter=0, return_info=False, transpose="auto"):
    """x = argmin ||A x - b||^2 + damp^2 ||x||^2 by LSQR (C: sla_lsq), for a
    SparseTensor (any shape m x n, batches too) or a scipy.sparse matrix.
    b: [m] or [*batch, m]. Arguments as scipy.sparse.linalg.lsqr (iter_lim
    None: 2 n); the default tolerances are 1e-8 (SciPy: 1e-6), conlim 0
    means no limit. With damp = 0 and no x0 the result is the minimum-norm
    least-squares solution. Differentiable in A's values and b (the C VJP:
    one CG solve with A^T A + damp^2 I; grad_rtol, grad_maxiter). transpose:
    how the products with A^T are formed ("auto", "explicit": A^T built once
    per solve, about the matrix's memory again; "scatter": no extra memory).
    Returns x, or (x, LsqInfo) with return_info (a list of them for a batch)."""
    return _solve(LSQR, A, b, damp, atol, btol, conlim, iter_lim, x0, grad_rtol, grad_maxiter,
                  return_info, "lsqr", transpose)


def lsmr(A, b, damp=0.0, atol=1e-8, btol=1e-8, conlim=1e8, maxiter=None, x0=None,
         grad_rtol=1e-10, grad_maxiter=0, return_info=False, transpose="auto"):
    """As :func:`lsqr`, by LSMR (Fong & Saunders: ||A^T r|| decreases
    monotonically); maxiter as scipy.sparse.linalg.lsmr's (None: 2 n)."""
    return _solve(LSMR, A, b, damp, atol, btol, conlim, maxiter, x0, grad_rtol, grad_maxiter,
                  return_info, "lsmr", transpose)


def lstsq(A, b, damp=0.0, grad_rtol=1e-10, grad_maxiter=0, return_info=False):
    """x = argmin ||A x - b||^2 + damp^2 ||x||^2 directly, by SuiteSparseQR
    (C: sla_lsq with method qr): a QR of [A; damp I] for full column rank
    or damp > 0, of A^T for the minimum-norm solution of an underdetermined
    A of full row rank; a rank-deficient A without damping falls back to
    LSMR (info.note says so). Differentiable as :func:`lsqr` (the VJP's
    adjoint solves are iterative). Returns x, or (x, LsqInfo)."""
    return _solve(QR, A, b, damp, 1e-8, 1e-8, 0.0, None, None, grad_rtol, grad_maxiter,
                  return_info, "lstsq")

