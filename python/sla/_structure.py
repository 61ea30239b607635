"""Structure queries on SparseTensor and SparseTensorList.

``is_symmetric``, ``is_hermitian`` and ``has_positive_diagonal`` read the C
library's ``sla_matrix_properties``; ``is_positive_definite`` calls
``sla_matrix_is_spd`` (structural checks, then a trial sparse Cholesky:
a nonpositive pivot answers "no") and is cached on the SparseTensor per
values version. ``density`` and ``sparsity_pattern_equal`` compare the C
pattern (CSR after summing duplicates). An unbatched SparseTensor answers
a bool, a batched one a bool tensor of its batch shape, a SparseTensorList
a list (one answer per matrix).
"""

import ctypes

import torch

from . import _lib as L
from ._core import tensor_key

_is_spd = None


def _spd_fn():
    global _is_spd
    if _is_spd is None:
        f = getattr(L.lib, "sla_matrix_is_spd", None)
        if f is None:
            raise NotImplementedError("is_positive_definite needs the C function sla_matrix_is_spd, "
                                      "which this libsla (%s) does not export" % L.library_path)
        f.restype = ctypes.c_int
        f.argtypes = [L.P, L.P, ctypes.c_int64, ctypes.POINTER(ctypes.c_bool)]
        _is_spd = f
    return _is_spd


def _per_item(A, fn):
    """fn(cmat, ib) -> bool for each value array of A, shaped as A's batch
    (a bool for an unbatched matrix). cmat: the pattern's float64 (complex:
    complex128) C matrix bound to A's values in CSR order."""
    from .sparse import _prod
    bs = A.batch_shape
    B = _prod(bs)
    if B == 0:
        return torch.zeros(bs, dtype=torch.bool)
    pat = A.pattern
    dt = torch.complex128 if A.values.is_complex() else torch.float64
    vals = A._csr_values(pat).detach().to(dt).contiguous()
    cmat = pat.matrix(dt, B)
    out = []
    with cmat.lock:
        cmat.bind(vals)
        for ib in range(B):
            out.append(bool(fn(cmat, ib)))
    if not bs:
        return out[0]
    return torch.tensor(out, dtype=torch.bool).reshape(bs)


def _props(cmat, ib, tol):
    p = L.MatrixProps()
    L.check(L.sla_matrix_properties(L.ctx(), cmat.ptr, ib, float(tol), ctypes.byref(p)),
            "matrix properties")
    return p


def is_symmetric(A, tol=0.0):
    """A == A^T: |a_ij - a_ji| <= tol * max|a| for every stored pair (a
    missing partner counts as 0; duplicates summed first); tol = 0: exactly.
    A rectangular matrix is not symmetric. For a complex A this is complex
    symmetry (A = A^T, e.g. Helmholtz), not A = A^H (is_hermitian)."""
    if isinstance(A, list):
        return [is_symmetric(t, tol) for t in A]
    tol = float(tol)
    if not tol >= 0.0:
        raise ValueError("is_symmetric: tol must be >= 0 (got %r)" % tol)
    if A.shape[-2] != A.shape[-1]:
        return _const(A, False)
    return _per_item(A, lambda cmat, ib: _props(cmat, ib, tol).symmetric)


def is_hermitian(A, tol=0.0):
    """A == A^H: |a_ij - conj(a_ji)| <= tol * max|a| (the diagonal real);
    for real values the same as is_symmetric."""
    if isinstance(A, list):
        return [is_hermitian(t, tol) for t in A]
    if not A.values.is_complex():
        return is_symmetric(A, tol)
    tol = float(tol)
    if not tol >= 0.0:
        raise ValueError("is_hermitian: tol must be >= 0 (got %r)" % tol)
    if A.shape[-2] != A.shape[-1]:
        return _const(A, False)
    return _per_item(A, lambda cmat, ib: _props(cmat, ib, tol).hermitian)


def has_positive_diagonal(A):
    """Every diagonal entry stored and > 0 (a square matrix)."""
    if isinstance(A, list):
        return [has_positive_diagonal(t) for t in A]
    if A.shape[-2] != A.shape[-1]:
        return _const(A, False)
    if A.shape[-1] == 0:
        return _const(A, True)
    return _per_item(A, lambda cmat, ib: _props(cmat, ib, 0.0).positive_diagonal)


def _const(A, value):
    bs = A.batch_shape
    return value if not bs else torch.full(bs, value, dtype=torch.bool)


def is_positive_definite(A):
    """A symmetric (to 1e-12 relative) and positive definite, decided in C
    by a trial sparse Cholesky factorization (sla_matrix_is_spd; nothing of
    it is kept). A complex A: Hermitian (to 1e-12 relative), a real
    positive diagonal and a trial complex Cholesky (also sla_matrix_is_spd). The answer is cached on the SparseTensor until its values
    or indices change (checked by torch's version counters and a copy of the
    values, so writes through .data are seen too)."""
    if isinstance(A, list):
        return [is_positive_definite(t) for t in A]
    key = (tensor_key(A.values), tensor_key(A.row), tensor_key(A.col), A.shape)
    cache = getattr(A, "_spd_cache", None)
    if cache is not None and cache[0] == key and torch.equal(cache[1], A.values.detach()):
        return cache[2]
    if A.shape[-2] != A.shape[-1]:
        ans = _const(A, False)
    elif A.shape[-1] == 0:
        ans = _const(A, True)
    else:
        f = _spd_fn()

        def one(cmat, ib):
            yes = ctypes.c_bool(False)
            L.check(f(L.ctx(), cmat.ptr, ib, ctypes.byref(yes)), "is_positive_definite")
            return yes.value

        ans = _per_item(A, one)
    A._spd_cache = (key, A.values.detach().clone(), ans)
    return ans


def density(A):
    """Stored entries (distinct positions, duplicates summed) over M N; 0
    for an empty shape."""
    M, N = A.shape[-2:]
    if M * N == 0:
        return 0.0
    return A.pattern.nnz / float(M * N)


def sparsity_pattern_equal(A, other):
    """The same shape (M, N) and the same set of stored positions
    (duplicates and entry order do not matter; values are not compared, so
    an explicitly stored zero counts as stored)."""
    if A.shape[-2:] != other.shape[-2:]:
        return False
    p, q = A.pattern, other.pattern
    if p is q:
        return True
    return p.nnz == q.nnz and torch.equal(p.rowptr, q.rowptr) and torch.equal(p.colind, q.colind)
