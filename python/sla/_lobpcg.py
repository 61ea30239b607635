"""LOBPCG through libsla (sla_lobpcg, sla_lobpcg_generalized;
include/sla/eig.h): the k smallest eigenpairs of a symmetric matrix A, or of
the pencil A x = l M x with M symmetric positive definite, without
factorizing A, differentiable in A's (and M's) values.

``SparseTensor.eigsh(k, which="SA", M=M, method="lobpcg")`` lands here.
Gradients: without M, sla_eigsh_vjp (Hellmann-Feynman for the eigenvalues,
first-order perturbation for the orthonormal eigenvectors); with M,
sla_eigsh_generalized_vjp (d lambda = x^T (dA - lambda dM) x, eigenvectors
M-normalized) -- the same VJPs as the ARPACK paths, as they need only the
computed pairs.
"""

import ctypes
import warnings

import torch
from torch.autograd.function import once_differentiable

from . import _lib as L

_P = ctypes.c_void_p
_I = ctypes.c_int64

_api = {}


def _solver_words():
    n = L._options_size
    if n % 8:
        raise ImportError("sla: sla_solver_options has %d bytes, not a multiple of 8" % n)
    return n // 8


class CLobpcgOptions(ctypes.Structure):
    # sla_lobpcg_options: k, tol, maxiter, pc (sla_solver_options, opaque
    # here: filled by sla_lobpcg_options_default and _parse), x0, seed
    _fields_ = [("k", _I), ("tol", ctypes.c_double), ("maxiter", _I),
                ("pc", ctypes.c_uint64 * _solver_words()), ("x0", _P), ("seed", ctypes.c_uint64)]


def _fns():
    if _api:
        return _api
    f = {}
    f["default"] = L._proto("sla_lobpcg_options_default", None, _P)
    f["parse"] = L._proto("sla_lobpcg_options_parse", ctypes.c_int, _P, ctypes.c_char_p, _P)
    f["lobpcg"] = L._proto("sla_lobpcg", ctypes.c_int, _P, _P, _I, _P, L.PTR, L.PTR, _I, L.PTR, _P)
    f["gen"] = L._proto("sla_lobpcg_generalized", ctypes.c_int, _P, _P, _I, _P, _I, _P, L.PTR, L.PTR, _I,
                        L.PTR, _P)
    f["gen_vjp"] = L._proto("sla_eigsh_generalized_vjp", ctypes.c_int, _P, _P, _I, _P, _I, _I, L.PTR,
                            L.PTR, _I, L.PTR, L.PTR, _I, L.PTR, L.PTR)
    L.check_size(L._proto("sla_lobpcg_options_size", ctypes.c_size_t), CLobpcgOptions, "sla_lobpcg_options")
    _api.update(f)
    return _api


class LobpcgFn(torch.autograd.Function):
    """(evals [B, k], evecs [B, k, n]) of A_b (x = l M x) for every value
    array b of A (M: one value array, or None), by LOBPCG; VJPs by
    sla_eigsh_vjp (no M) or sla_eigsh_generalized_vjp (M)."""

    @staticmethod
    def forward(ctx, av, mv, amat, mmat, lopts, eopts, box):
        f = _fns()
        B = av.shape[0]
        k, n = int(lopts.k), amat.pattern.nrows
        evals = torch.empty((B, k), dtype=torch.float64)
        evecs = torch.empty((B, k, n), dtype=torch.float64)
        infos = (L.CEigshInfo * B)()
        worst = 0
        with amat.lock:
            amat.bind(av)
            if mmat is not None:
                with mmat.lock:
                    mmat.bind(mv)
                    for b in range(B):
                        worst = max(worst, L.check(f["gen"](
                            L.ctx(), amat.ptr, b, mmat.ptr, 0, ctypes.byref(lopts), evals[b].data_ptr(),
                            evecs[b].data_ptr(), n, None, ctypes.byref(infos[b])), "eigsh (lobpcg)"))
            else:
                for b in range(B):
                    worst = max(worst, L.check(f["lobpcg"](
                        L.ctx(), amat.ptr, b, ctypes.byref(lopts), evals[b].data_ptr(), evecs[b].data_ptr(),
                        n, None, ctypes.byref(infos[b])), "eigsh (lobpcg)"))
        from ._functions import _eig_info
        box["info"] = [_eig_info(i) for i in infos]
        if worst == 1:
            warnings.warn("sla: eigsh (lobpcg): not all %d eigenpairs within tol: %r" % (k, box["info"]),
                          L.SlaConvergenceWarning, stacklevel=4)
        ctx.amat, ctx.mmat, ctx.eopts = amat, mmat, eopts
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(av, mv, evals, evecs)
        return evals, evecs

    @staticmethod
    @once_differentiable
    def backward(ctx, gl, gv):
        f = _fns()
        av, mv, evals, evecs = ctx.saved_tensors
        B, k, n = evecs.shape
        gA = torch.zeros(av.shape, dtype=torch.float64)
        gM = torch.zeros(mv.shape, dtype=torch.float64) if ctx.mmat is not None else None
        if gl is None and gv is None:
            return gA, gM, None, None, None, None, None
        gl = gl.to(torch.float64).contiguous() if gl is not None else torch.zeros_like(evals)
        gv = gv.to(torch.float64).contiguous() if gv is not None else None
        amat, mmat = ctx.amat, ctx.mmat
        with amat.lock:
            amat.bind(av)
            if mmat is None:
                api = L.API
                for b in range(B):
                    L.check(api["eigsh_vjp"](L.ctx(), amat.ptr, b, ctypes.byref(ctx.eopts), k,
                                             evals[b].data_ptr(), evecs[b].data_ptr(), n, gl[b].data_ptr(),
                                             gv[b].data_ptr() if gv is not None else None, n,
                                             gA[b].data_ptr(), None), "eigsh (lobpcg) backward")
                return gA, None, None, None, None, None, None
            with mmat.lock:
                mmat.bind(mv)
                gMb = torch.empty(mv.shape[-1], dtype=torch.float64)
                for b in range(B):
                    L.check(f["gen_vjp"](L.ctx(), amat.ptr, b, mmat.ptr, 0, k, evals[b].data_ptr(),
                                         evecs[b].data_ptr(), n, gl[b].data_ptr(),
                                         gv[b].data_ptr() if gv is not None else None, n, gA[b].data_ptr(),
                                         gMb.data_ptr()), "eigsh (lobpcg) backward")
                    gM[0] += gMb  # one M for every A_b
        return gA, gM, None, None, None, None, None


def eigsh(A, k, which, M, return_eigenvectors, tol, maxiter, v0, preconditioner, seed, degenerate_tol,
          grad_rtol, grad_maxiter, return_info):
    """The k smallest (which "SA") eigenpairs of A (every matrix of a batch),
    or of A x = l M x (M one unbatched matrix of A's order), by LOBPCG.
    Eigenvalues [*batch, k] ascending, eigenvectors [*batch, n, k]
    (orthonormal, or M-orthonormal with M). tol (0: the C default 1e-8)
    bounds ||A x - l M x|| <= tol (||A||_1 + |l| ||M||_1); maxiter (0: 500);
    v0: a start block [n, k]; preconditioner: built from A (none, jacobi,
    ssor, ic0, amg; None: the C default, amg when hypre is in the build)."""
    from ._complex import refuse
    refuse("eigsh (lobpcg)", A, M)
    f = _fns()
    n = A.shape[-1]
    if A.shape[-2] != n:
        raise ValueError("eigsh needs a square matrix (shape %s)" % (tuple(A.shape),))
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k or 3 * k >= n:
        raise ValueError("eigsh (lobpcg): k must be an integer with 1 <= k and 3 k < n = %d (got %r)"
                         % (n, k))
    w = "SA" if which is None else str(which).upper()
    if w != "SA":
        raise ValueError("eigsh (lobpcg): LOBPCG computes the smallest eigenvalues: which must be 'SA' "
                         "(got %r); use method='arpack' for %s" % (which, w))
    if M is not None:
        if M.batch_shape:
            raise ValueError("eigsh (lobpcg) with M: one M for the batch (M has batch shape %s)"
                             % (tuple(M.batch_shape),))
        if tuple(M.shape[-2:]) != (n, n):
            raise ValueError("eigsh: A %s and M %s must be square of one order" % (tuple(A.shape), tuple(M.shape)))
    lopts = CLobpcgOptions()
    f["default"](ctypes.byref(lopts))
    if preconditioner is not None:
        L.check(f["parse"](L.ctx(), ("pc.precond=%s" % preconditioner).encode(), ctypes.byref(lopts)),
                "eigsh (lobpcg) preconditioner")
    lopts.k = k
    if tol:
        lopts.tol = float(tol)
    if maxiter:
        lopts.maxiter = int(maxiter)
    if seed is not None:
        lopts.seed = int(seed)
    box = {}
    if v0 is not None:
        x0 = torch.as_tensor(v0).detach().to(torch.float64)
        if tuple(x0.shape) != (n, k):
            raise ValueError("eigsh (lobpcg): v0 must be a start block [n, k] = [%d, %d] (got %s)"
                             % (n, k, tuple(x0.shape)))
        x0 = x0.t().contiguous()  # column-major n x k
        lopts.x0 = x0.data_ptr()
        box["x0"] = x0  # alive while the options are
    api = L.API
    eopts = L.CEigshOptions()  # the VJP's settings (sla_eigsh_vjp)
    api["eigsh_options_default"](ctypes.byref(eopts))
    eopts.k = k
    eopts.degenerate_tol, eopts.grad_rtol = float(degenerate_tol), float(grad_rtol)
    eopts.grad_maxiter = int(grad_maxiter)
    bs = A.batch_shape
    pa = A.pattern
    av = A._csr_values(pa).to(torch.float64).contiguous().reshape(-1, pa.nnz)
    amat = pa.matrix(torch.float64, av.shape[0])
    if M is not None:
        from ._core import CMatrix
        pm = M.pattern
        mv = M._csr_values(pm).to(torch.float64).contiguous().reshape(1, pm.nnz)
        mmat = CMatrix(pm, torch.float64, 1)  # M's own: A and M may share a pattern (and its cache)
    else:
        mv, mmat = torch.zeros((1, 0), dtype=torch.float64), None
    evals, evecs = LobpcgFn.apply(av, mv, amat, mmat, lopts, eopts, box)
    lam = evals.reshape(bs + (k,)).to(A.dtype)
    out = (lam, evecs.transpose(1, 2).reshape(bs + (n, k)).to(A.dtype)) if return_eigenvectors else lam
    if return_info:
        return (out + (box["info"],)) if return_eigenvectors else (out, box["info"])
    return out
