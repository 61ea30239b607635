"""Nonsymmetric eigenvalues (sla_eigs) and the generalized symmetric-definite
problem K x = lambda M x (sla_eigsh_generalized), differentiable in the
eigenvalues, bound through ctypes (include/sla/eigs.h).

* ``eigs(A, k, which, sigma)`` returns complex eigenvalues [*batch, k] and
  complex eigenvectors [*batch, n, k] as SciPy's ``eigs`` does. Gradients
  flow to A's values through the eigenvalues (sla_eigs_vjp: d lambda =
  y^H dA x / y^H x, with PyTorch's convention for a real input: the
  gradient of a real loss with respect to each real stored value) and
  through the eigenvectors (sla_eigs_pairs_vjp), which are in sla_eigs's
  gauge: unit norm, largest-magnitude component real and positive (as
  LAPACK's dgeev makes it real). A loss that does not depend on the phase
  of the vectors (|x_i|^2, ...) gets the same gradient in any gauge.
* ``eigsh_generalized(K, M, k, ...)`` returns ascending eigenvalues and
  M-orthonormal eigenvectors; gradients to K's and M's values through the
  eigenvalues (d lambda = x^T (dK - lambda dM) x) and the eigenvectors
  (M-normalized, sign held; one M-projected MINRES solve per vector in C).
"""

import ctypes

import torch
from torch.autograd.function import once_differentiable

from . import _lib as L

_P = ctypes.c_void_p
_I = ctypes.c_int64
_EIGS_WHICH = {"LM": 0, "SM": 1, "LR": 2, "SR": 3, "LI": 4, "SI": 5}
_EIGSH_WHICH = {"LA": 0, "SA": 1, "LM": 2, "SM": 3}


class CEigsOptions(ctypes.Structure):
    _fields_ = [("k", _I), ("which", ctypes.c_int), ("shift_invert", ctypes.c_bool),
                ("sigma", ctypes.c_double), ("tol", ctypes.c_double), ("ncv", _I),
                ("maxiter", _I), ("factor_method", ctypes.c_int), ("v0", _P),
                ("max_condition", ctypes.c_double)]


class CEigsInfo(ctypes.Structure):
    _fields_ = [("method", ctypes.c_char * 40), ("converged", ctypes.c_bool), ("nconv", _I),
                ("iterations", _I), ("nops", _I), ("max_residual", ctypes.c_double),
                ("max_condition", ctypes.c_double), ("seconds", ctypes.c_double),
                ("note", ctypes.c_char * 192)]


_api = {}


def _fns():
    """The C functions, prototyped and size-checked once."""
    if _api:
        return _api
    lib = L.lib
    need = ["sla_eigs", "sla_eigs_vjp", "sla_eigs_options_default", "sla_eigs_options_size",
            "sla_eigs_info_size", "sla_eigsh_generalized", "sla_eigsh_generalized_vjp",
            "sla_eigs_pairs_vjp", "sla_eigsh_generalized_batch", "sla_eigsh_generalized_batch_vjp"]
    missing = [s for s in need if not hasattr(lib, s)]
    if missing:
        raise NotImplementedError("sla: this libsla lacks %s (%s)" % (", ".join(missing),
                                                                     L.library_path))
    f = {}
    f["eigs"] = L._proto("sla_eigs", ctypes.c_int, _P, _P, _I, _P, L.PTR, L.PTR, L.PTR, _I, L.PTR, _P)
    f["eigs_vjp"] = L._proto("sla_eigs_vjp", ctypes.c_int, _P, _P, _I, _P, _I, L.PTR, L.PTR, L.PTR, _I,
                             L.PTR, L.PTR, L.PTR, _P)
    f["pairs_vjp"] = L._proto("sla_eigs_pairs_vjp", ctypes.c_int, _P, _P, _I, _P, _I, L.PTR, L.PTR, L.PTR,
                              _I, L.PTR, L.PTR, L.PTR, _I, L.PTR, _P)
    f["default"] = L._proto("sla_eigs_options_default", None, _P)
    f["gen"] = L._proto("sla_eigsh_generalized", ctypes.c_int, _P, _P, _I, _P, _I, _P, L.PTR, L.PTR,
                        _I, L.PTR, _P)
    f["gen_vjp"] = L._proto("sla_eigsh_generalized_vjp", ctypes.c_int, _P, _P, _I, _P, _I, _I, L.PTR,
                            L.PTR, _I, L.PTR, L.PTR, _I, L.PTR, L.PTR)
    f["gen_batch"] = L._proto("sla_eigsh_generalized_batch", ctypes.c_int, _P, _P, _P, _P, L.PTR, L.PTR,
                              L.PTR, _P)
    f["gen_batch_vjp"] = L._proto("sla_eigsh_generalized_batch_vjp", ctypes.c_int, _P, _P, _P, _I, L.PTR,
                                  L.PTR, L.PTR, L.PTR, L.PTR, L.PTR)
    L.check_size(L._proto("sla_eigs_options_size", ctypes.c_size_t), CEigsOptions, "sla_eigs_options")
    L.check_size(L._proto("sla_eigs_info_size", ctypes.c_size_t), CEigsInfo, "sla_eigs_info")
    _api.update(f)
    return _api


class EigsFn(torch.autograd.Function):
    """(wr, wi [B, k], vr [B, k, n]) = eigs(A(values)) per value array, with
    the eigenpair VJP of sla_eigs_pairs_vjp (vr in the dgeev layout)."""

    @staticmethod
    def forward(ctx, values, cmat, copts):
        f = _fns()
        B = values.shape[0]
        k, n = int(copts.k), cmat.pattern.nrows
        wr = torch.empty((B, k), dtype=torch.float64)
        wi = torch.empty((B, k), dtype=torch.float64)
        vr = torch.empty((B, k, n), dtype=torch.float64)
        with cmat.lock:
            cmat.bind(values)
            for b in range(B):
                L.check(f["eigs"](L.ctx(), cmat.ptr, b, ctypes.byref(copts), wr[b].data_ptr(),
                                  wi[b].data_ptr(), vr[b].data_ptr(), n, None, None), "eigs")
        ctx.cmat, ctx.copts = cmat, copts
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(values, wr, wi, vr)
        return wr, wi, vr

    @staticmethod
    @once_differentiable
    def backward(ctx, gwr, gwi, gvr):
        f = _fns()
        values, wr, wi, vr = ctx.saved_tensors
        cmat = ctx.cmat
        B, k, n = vr.shape
        gA = torch.zeros(values.shape, dtype=torch.float64)
        if gwr is None and gwi is None and gvr is None:
            return gA, None, None
        gwr = gwr.to(torch.float64).contiguous() if gwr is not None else torch.zeros_like(wr)
        gwi = gwi.to(torch.float64).contiguous() if gwi is not None else torch.zeros_like(wi)
        gvr = gvr.to(torch.float64).contiguous() if gvr is not None else None
        with cmat.lock:
            cmat.bind(values)
            for b in range(B):
                L.check(f["pairs_vjp"](L.ctx(), cmat.ptr, b, ctypes.byref(ctx.copts), k,
                                       wr[b].data_ptr(), wi[b].data_ptr(), vr[b].data_ptr(), n,
                                       gwr[b].data_ptr(), gwi[b].data_ptr(),
                                       gvr[b].data_ptr() if gvr is not None else None, n,
                                       gA[b].data_ptr(), None), "eigs backward")
        return gA, None, None


def _complex_vectors(wr, wi, vr, k):
    """dgeev-layout real vectors [B, kk, n] -> complex [B, n, k]."""
    B, kk, n = vr.shape
    out = torch.zeros((B, n, k), dtype=torch.complex128)
    for b in range(B):
        j = 0
        while j < k:
            if wi[b, j] != 0 and j + 1 < kk:
                x = torch.complex(vr[b, j], vr[b, j + 1])
                out[b, :, j] = x
                if j + 1 < k:
                    out[b, :, j + 1] = x.conj()
                j += 2
            else:
                out[b, :, j] = vr[b, j].to(torch.complex128)
                j += 1
    return out


def eigs(A, k=6, which="LM", sigma=None, return_eigenvectors=True, tol=0.0, ncv=0, maxiter=0,
         factor_method="lu"):
    """k eigenvalues of a general square SparseTensor A (every matrix of a
    batch) by ARPACK's Arnoldi (sla_eigs), as scipy.sparse.linalg.eigs:
    complex eigenvalues [*batch, k] and eigenvectors [*batch, n, k]
    (conjugate pairs adjacent, positive imaginary part first). which: LM,
    SM, LR, SR, LI, SI; sigma: shift-invert around a real shift through a
    sparse LU (factor_method lu, umfpack, klu, superlu). Differentiable in
    the eigenvalues and eigenvectors (simple eigenvalues; a multiple
    eigenvalue's backward raises). Eigenvectors: unit norm, largest-
    magnitude component real positive (the gauge their gradient assumes)."""
    from ._complex import refuse
    refuse("eigs", A)
    f = _fns()
    if A.shape[-2] != A.shape[-1]:
        raise ValueError("eigs needs a square matrix (shape %s)" % (A.shape,))
    n = A.shape[-1]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k < n - 1:
        raise ValueError("eigs: k must be an integer with 1 <= k < n - 1 = %d (got %r)" % (n - 1, k))
    w = str(which).upper()
    if w not in _EIGS_WHICH:
        raise ValueError("eigs: which must be one of %s (got %r)" % (", ".join(_EIGS_WHICH), which))
    fm = {"lu": 7, "umfpack": 8, "klu": 9, "superlu": 10}.get(factor_method)
    if fm is None:
        raise ValueError("eigs: factor_method must be lu, umfpack, klu or superlu")
    copts = CEigsOptions()
    f["default"](ctypes.byref(copts))
    # one more than asked, when ARPACK allows it: a conjugate pair cut at
    # position k then still has its whole eigenvector
    kk = k + 1 if k + 1 < n - 1 and (ncv == 0 or ncv >= k + 3) else k
    copts.k = kk
    copts.which = _EIGS_WHICH[w]
    if sigma is not None:
        copts.shift_invert = True
        copts.sigma = float(sigma)
    copts.tol, copts.ncv, copts.maxiter, copts.factor_method = float(tol), int(ncv), int(maxiter), fm
    bs = A.batch_shape
    pat = A.pattern
    vals = A._csr_values(pat).to(torch.float64).contiguous()
    cmat = pat.matrix(torch.float64, vals.shape[0])
    wr, wi, vr = EigsFn.apply(vals, cmat, copts)
    lam = torch.complex(wr[:, :k], wi[:, :k]).reshape(bs + (k,))
    if not return_eigenvectors:
        return lam
    vecs = _complex_vectors(wr.detach(), wi.detach(), vr, k).reshape(bs + (n, k))
    return lam, vecs


class GenEigshFn(torch.autograd.Function):
    """(evals [B, k], evecs [B, k, n]) of K_b x = l M_b x for every value
    array b of K (kv [B, nnz]) with M's (mv [1, nnz]: one M for the batch,
    or [B, nnz]), by sla_eigsh_generalized_batch; VJPs by
    sla_eigsh_generalized_batch_vjp (with one M, its gradient sums over
    the batch)."""

    @staticmethod
    def forward(ctx, kv, mv, kmat, mmat, copts):
        f = _fns()
        B, k, n = kv.shape[0], int(copts.k), kmat.pattern.nrows
        evals = torch.empty((B, k), dtype=torch.float64)
        evecs = torch.empty((B, k, n), dtype=torch.float64)
        infos = (L.CEigshInfo * B)()
        with kmat.lock, mmat.lock:
            kmat.bind(kv)
            mmat.bind(mv)
            L.check(f["gen_batch"](L.ctx(), kmat.ptr, mmat.ptr, ctypes.byref(copts), evals.data_ptr(),
                                   evecs.data_ptr(), None, infos), "eigsh generalized")
        ctx.kmat, ctx.mmat = kmat, mmat
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(kv, mv, evals, evecs)
        return evals, evecs

    @staticmethod
    @once_differentiable
    def backward(ctx, gl, gv):
        f = _fns()
        kv, mv, evals, evecs = ctx.saved_tensors
        B, k, n = evecs.shape
        gK = torch.zeros(kv.shape, dtype=torch.float64)
        gM = torch.zeros(mv.shape, dtype=torch.float64)
        if gl is None and gv is None:
            return gK, gM, None, None, None
        gl = gl.to(torch.float64).contiguous() if gl is not None else torch.zeros_like(evals)
        gv = gv.to(torch.float64).contiguous() if gv is not None else None
        with ctx.kmat.lock, ctx.mmat.lock:
            ctx.kmat.bind(kv)
            ctx.mmat.bind(mv)
            L.check(f["gen_batch_vjp"](L.ctx(), ctx.kmat.ptr, ctx.mmat.ptr, k, evals.data_ptr(),
                                       evecs.data_ptr(), gl.data_ptr(),
                                       gv.data_ptr() if gv is not None else None, gK.data_ptr(),
                                       gM.data_ptr()), "eigsh generalized backward")
        return gK, gM, None, None, None


def eigsh_generalized(K, M, k=6, which="LM", sigma=None, return_eigenvectors=True, tol=0.0, ncv=0,
                      maxiter=0, factor_method="auto"):
    """k eigenpairs of K x = l M x (K symmetric, M symmetric positive
    definite, SparseTensors of one order) by shift-invert Lanczos around
    sigma (default 0: the eigenvalues nearest 0). K may be a batch; M is
    one matrix for the whole batch or a batch of K's shape (K_b with M_b).
    Ascending eigenvalues [*batch, k] and M-orthonormal eigenvectors
    [*batch, n, k]; differentiable in both with respect to K's and M's
    values (simple eigenvalues, or a loss invariant within a degenerate
    cluster)."""
    from ._complex import refuse
    refuse("eigsh_generalized", K, M)
    from .sparse import _FACTOR_METHODS
    f = _fns()
    bs = tuple(K.batch_shape)
    if M.batch_shape and tuple(M.batch_shape) != bs:
        raise ValueError("eigsh with M: M's batch shape %s must be () (one M for the batch) or K's %s"
                         % (tuple(M.batch_shape), bs))
    n = K.shape[-1]
    if K.shape[-2] != n or tuple(M.shape[-2:]) != (n, n):
        raise ValueError("eigsh: K %s and M %s must be square of one order"
                         % (tuple(K.shape), tuple(M.shape)))
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k < n:
        raise ValueError("eigsh: k must be an integer with 1 <= k < n = %d (got %r)" % (n, k))
    w = str(which).upper()
    if w not in _EIGSH_WHICH:
        raise ValueError("eigsh: which must be one of LA, SA, LM, SM (got %r)" % (which,))
    api = L.API
    copts = L.CEigshOptions()
    api["eigsh_options_default"](ctypes.byref(copts))
    copts.k, copts.which = int(k), _EIGSH_WHICH[w]
    if sigma is not None:
        copts.shift_invert, copts.sigma = True, float(sigma)
    copts.tol, copts.ncv, copts.maxiter = float(tol), int(ncv), int(maxiter)
    copts.factor_method = _FACTOR_METHODS[factor_method]
    pk, pm = K.pattern, M.pattern
    kv = K._csr_values(pk).to(torch.float64).contiguous().reshape(-1, pk.nnz)
    mv = M._csr_values(pm).to(torch.float64).contiguous().reshape(-1, pm.nnz)
    # M's own C matrix: K and M may share a pattern (and so its cached matrix)
    from ._core import CMatrix
    evals, evecs = GenEigshFn.apply(kv, mv, pk.matrix(torch.float64, kv.shape[0]),
                                    CMatrix(pm, torch.float64, mv.shape[0]), copts)
    lam = evals.reshape(bs + (k,)).to(K.dtype)
    if not return_eigenvectors:
        return lam
    return lam, evecs.transpose(1, 2).reshape(bs + (n, k)).to(K.dtype)
