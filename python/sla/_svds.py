"""Truncated SVD and the 2-norm condition number through libsla
(sla_svds, sla_svds_vjp, sla_cond2; include/sla/svd.h), differentiable in
the stored values. The prototypes live here, on the helpers of _lib.py."""

import ctypes

import torch
from torch.autograd.function import once_differentiable

from . import _lib as L

c_int64, c_double, c_int, c_bool, P = L.c_int64, L.c_double, L.c_int, L.c_bool, L.c_void_p


class CSvdsOptions(ctypes.Structure):
    _fields_ = [("k", c_int64), ("which", c_int), ("tol", c_double), ("maxiter", c_int64),
                ("ncv", c_int64), ("v0", ctypes.c_void_p), ("memory_limit", c_double),
                ("degenerate_tol", c_double), ("grad_rtol", c_double), ("grad_maxiter", c_int64),
                ("transpose", c_int)]


class CSvdsInfo(ctypes.Structure):
    _fields_ = [("method", ctypes.c_char * 48), ("reason", ctypes.c_char * 32), ("converged", c_bool),
                ("nconv", c_int64), ("iterations", c_int64), ("nops", c_int64),
                ("max_residual_v", c_double), ("max_residual_u", c_double),
                ("factor_seconds", c_double), ("seconds", c_double), ("note", ctypes.c_char * 192)]


_api = {}


def _get():
    if not _api:
        try:
            _api["default"] = L._proto("sla_svds_options_default", None, P)
            _api["svds"] = L._proto("sla_svds", c_int, P, P, c_int64, P, L.PTR, L.PTR, L.PTR, P)
            _api["vjp"] = L._proto("sla_svds_vjp", c_int, P, P, c_int64, P, c_int64, L.PTR, L.PTR, L.PTR,
                                   L.PTR, L.PTR, L.PTR, L.PTR, P)
            if hasattr(L.lib, "sla_svds_batch"):
                _api["batch"] = L._proto("sla_svds_batch", c_int, P, P, P, L.PTR, L.PTR, L.PTR, P)
                _api["batch_vjp"] = L._proto("sla_svds_batch_vjp", c_int, P, P, P, c_int64, L.PTR, L.PTR,
                                             L.PTR, L.PTR, L.PTR, L.PTR, L.PTR, P)
            _api["cond2"] = L._proto("sla_cond2", c_int, P, P, c_int64, P, ctypes.POINTER(c_double),
                                     ctypes.POINTER(c_double), ctypes.POINTER(c_double), P)
        except AttributeError as e:
            raise NotImplementedError("sla: this libsla has no svds (%s)" % e)
    return _api


def _ptr(t):
    return t.data_ptr() if t is not None else None


class SvdsFn(torch.autograd.Function):
    """(s [B, k], U [B, k, m], V [B, k, n]) = svds(A(values)) in C's order
    (LM descending, SM ascending); the VJP by sla_svds_vjp."""

    @staticmethod
    def forward(ctx, values, cmat, copts, m, n):
        api = _get()
        B = values.shape[0]
        k = int(copts.k)
        s = torch.empty((B, k), dtype=torch.float64)
        U = torch.empty((B, k, m), dtype=torch.float64)
        V = torch.empty((B, k, n), dtype=torch.float64)
        infos = (CSvdsInfo * B)()
        with cmat.lock:
            cmat.bind(values)
            if "batch" in api:  # one C call: the arrays as parallel items
                L.check(api["batch"](L.ctx(), cmat.ptr, ctypes.byref(copts), s.data_ptr(), U.data_ptr(),
                                     V.data_ptr(), infos), "svds")
            else:
                for b in range(B):
                    L.check(api["svds"](L.ctx(), cmat.ptr, b, ctypes.byref(copts), s[b].data_ptr(),
                                        U[b].data_ptr(), V[b].data_ptr(), ctypes.byref(infos[b])), "svds")
        for b in range(B):
            if infos[b].nconv < k:
                import warnings
                warnings.warn("sla: svds: only %d of %d triplets converged%s"
                              % (infos[b].nconv, k, " (matrix %d of the batch)" % b if B > 1 else ""),
                              L.SlaConvergenceWarning, stacklevel=4)
        ctx.cmat, ctx.copts = cmat, copts
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(values, s, U, V)
        return s, U, V

    @staticmethod
    @once_differentiable
    def backward(ctx, gs, gU, gV):
        values, s, U, V = ctx.saved_tensors
        api = _get()
        B, k = s.shape
        gA = torch.zeros(values.shape, dtype=torch.float64)
        if gs is None and gU is None and gV is None:
            return gA, None, None, None, None
        c = lambda t: t.to(torch.float64).contiguous() if t is not None else None
        gs, gU, gV = c(gs), c(gU), c(gV)
        with ctx.cmat.lock:
            ctx.cmat.bind(values)
            if "batch_vjp" in api:
                L.check(api["batch_vjp"](L.ctx(), ctx.cmat.ptr, ctypes.byref(ctx.copts), k, s.data_ptr(),
                                         U.data_ptr(), V.data_ptr(), _ptr(gs), _ptr(gU), _ptr(gV),
                                         gA.data_ptr(), None), "svds backward")
                return gA, None, None, None, None
            for b in range(B):
                L.check(api["vjp"](L.ctx(), ctx.cmat.ptr, b, ctypes.byref(ctx.copts), k, s[b].data_ptr(),
                                   U[b].data_ptr(), V[b].data_ptr(), _ptr(gs[b] if gs is not None else None),
                                   _ptr(gU[b] if gU is not None else None),
                                   _ptr(gV[b] if gV is not None else None), gA[b].data_ptr(), None),
                        "svds backward")
        return gA, None, None, None, None


def svds(A, k=6, which="LM", tol=0.0, ncv=0, maxiter=0, degenerate_tol=1e-9, grad_rtol=1e-12,
         transpose="auto"):
    """(U [*, m, k], S [*, k], Vh [*, k, n]) as scipy.sparse.linalg.svds
    returns them: singular values in ASCENDING order (C's LM order is
    reversed here). Differentiable in A's values; losses of U, Vh must be
    invariant under the sign of each (u_i, v_i) pair. transpose: how the
    products with A^T are formed ("auto", "explicit": A^T built once per
    call, about the matrix's memory again; "scatter": no extra memory)."""
    from ._complex import refuse
    refuse("svds", A)
    api = _get()
    m, n = A.shape[-2], A.shape[-1]
    w = str(which).upper()
    if w not in ("LM", "SM"):
        raise ValueError("svds: which must be LM or SM (got %r)" % (which,))
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k < min(m, n):
        raise ValueError("svds: k must be an integer with 1 <= k < min(m, n) = %d (got %r)" % (min(m, n), k))
    copts = CSvdsOptions()
    api["default"](ctypes.byref(copts))
    copts.k, copts.which = k, 0 if w == "LM" else 1
    copts.tol, copts.ncv, copts.maxiter = float(tol), int(ncv), int(maxiter)
    copts.degenerate_tol, copts.grad_rtol = float(degenerate_tol), float(grad_rtol)
    from ._lsq import _transpose_mode
    copts.transpose = _transpose_mode(transpose, "svds")
    bs = A.batch_shape
    pat = A.pattern
    vals = A._csr_values(pat).to(torch.float64).contiguous()
    vals = vals.reshape(-1, vals.shape[-1])
    cmat = pat.matrix(torch.float64, vals.shape[0])
    s, U, V = SvdsFn.apply(vals, cmat, copts, m, n)
    if w == "LM":
        s, U, V = s.flip(-1), U.flip(-2), V.flip(-2)
    S = s.reshape(bs + (k,)).to(A.dtype)
    Uo = U.transpose(1, 2).reshape(bs + (m, k)).to(A.dtype)
    Vh = V.reshape(bs + (k, n)).to(A.dtype)
    return Uo, S, Vh


def cond(A, tol=0.0):
    """The 2-norm condition number s_max / s_min of A (every matrix of a
    batch: a tensor of batch_shape, float64); inf when A is rank deficient.
    Differentiable in A's values: when they require a gradient, s_max and
    s_min come from svds (LM and SM, k = 1: the same ARPACK runs as
    sla_cond2's), whose VJP gives d cond = (u_1^T dA v_1 - cond u_n^T dA v_n)
    / s_min; otherwise sla_cond2 alone."""
    from ._complex import refuse
    refuse("cond", A)
    api = _get()
    pat = A.pattern
    vals = A._csr_values(pat)
    if torch.is_grad_enabled() and vals.requires_grad:
        m, n = A.shape[-2], A.shape[-1]
        if min(m, n) < 2:
            raise ValueError("cond: A is %d x %d; ARPACK needs min(m, n) >= 2 (use a dense SVD)" % (m, n))
        smax = svds(A, 1, "LM", tol=tol)[1][..., 0].to(torch.float64)
        smin = svds(A, 1, "SM", tol=tol)[1][..., 0].to(torch.float64)
        # rank deficient: svds reports s_min = 0 (cond2's inf) or at the rounding level
        eps = torch.finfo(torch.float64).eps
        return torch.where(smin > eps * smax, smax / smin, torch.full_like(smax, float("inf")))
    vals = vals.detach().to(torch.float64).contiguous()
    vals = vals.reshape(-1, vals.shape[-1])
    cmat = pat.matrix(torch.float64, vals.shape[0])
    copts = CSvdsOptions()
    api["default"](ctypes.byref(copts))
    copts.tol = float(tol)
    out = torch.empty(vals.shape[0], dtype=torch.float64)
    with cmat.lock:
        cmat.bind(vals)
        for b in range(vals.shape[0]):
            c = c_double()
            st = api["cond2"](L.ctx(), cmat.ptr, b, ctypes.byref(copts), ctypes.byref(c), None, None, None)
            if st != -8:  # SLA_ERR_SINGULAR: rank deficient, c = inf
                L.check(st, "cond")
            out[b] = c.value
    return out.reshape(A.batch_shape) if A.batch_shape else out[0]
