"""Factories of SparseTensor (its classmethods delegate here) and the
conversions to and from torch's own sparse layouts.

Built from torch ops on the values, so gradients flow where the values come
from a tensor that requires grad: ``diag``/``tridiagonal`` (the diagonals),
``from_dense`` (D's nonzeros), ``from_torch`` for COO tensors and
``to_torch_sparse(layout=torch.sparse_coo)``. torch 1.13 does not
differentiate through CSR tensors, so the CSR conversions carry values only.
The test-problem generators (``poisson``, ``diffusion2d``, ``convdiff2d``,
``aniso2d``, ``random``, ``arrow``) are the C library's (include/sla/gen.h).
"""

import ctypes
import warnings

import torch

from . import _lib as L

_protos = {}


def _gen(name, *argtypes):
    """A C generator's function (prototype set once)."""
    f = _protos.get(name)
    if f is None:
        f = _protos[name] = L._proto(name, ctypes.c_int, L.P, *argtypes,
                                     ctypes.POINTER(ctypes.c_void_p))
    return f


def _from_c(cls, call, where, dtype):
    from .sparse import _sparse_from_c
    M = ctypes.c_void_p()
    L.check(call(M), where)
    try:
        return _sparse_from_c(M, dtype)
    finally:
        L.sla_matrix_destroy(ctypes.byref(M))


def _index(x):
    return torch.as_tensor(x, dtype=torch.int64)


# ---- simple structures -----------------------------------------------------


def eye(cls, n, dtype=torch.float64, requires_grad=False):
    """The n x n identity (n stored ones)."""
    n = int(n)
    if n < 0:
        raise ValueError("eye: n must be >= 0 (got %d)" % n)
    i = torch.arange(n, dtype=torch.int64)
    return cls(torch.ones(n, dtype=dtype, requires_grad=requires_grad), i, i.clone(), (n, n))


def diag(cls, v, offsets=0, shape=None):
    """A matrix from diagonals: v a tensor [*batch, len] (or a list of them,
    one per entry of offsets); offset k > 0 above the main diagonal, k < 0
    below. Diagonal k of an n x n matrix has n - |k| entries (each v_i must
    have that length; n is taken from the first, or from shape). Values are
    the concatenation of the v_i (differentiable; batch dimensions shared)."""
    if isinstance(offsets, int):
        vs, offs = [v], [offsets]
    else:
        vs, offs = list(v), [int(k) for k in offsets]
        if len(vs) != len(offs):
            raise ValueError("diag: %d diagonals but %d offsets" % (len(vs), len(offs)))
    if not offs:
        raise ValueError("diag: no diagonals given")
    if len(set(offs)) != len(offs):
        raise ValueError("diag: offsets repeat (%s)" % (offs,))
    vs = [x if isinstance(x, torch.Tensor) else torch.as_tensor(x, dtype=torch.float64)
          for x in vs]
    if shape is None:
        n = vs[0].shape[-1] + abs(offs[0])
        shape = (n, n)
    M, N = (int(s) for s in shape[-2:])
    rows, cols = [], []
    for x, k in zip(vs, offs):
        length = max(0, min(M, N - k) if k >= 0 else min(M + k, N))
        if x.dim() < 1 or x.shape[-1] != length:
            raise ValueError("diag: diagonal %d of a %d x %d matrix has %d entries (got shape %s)"
                             % (k, M, N, length, tuple(x.shape)))
        r = torch.arange(length, dtype=torch.int64) + max(0, -k)
        rows.append(r)
        cols.append(r + k)
    dtype = torch.float32 if all(x.dtype == torch.float32 for x in vs) else torch.float64
    batch = torch.broadcast_shapes(*[tuple(x.shape[:-1]) for x in vs])
    vals = torch.cat([x.to(dtype).expand(batch + (x.shape[-1],)) for x in vs], dim=-1)
    return cls(vals, torch.cat(rows), torch.cat(cols), (M, N))


def tridiagonal(cls, a, b, c):
    """The tridiagonal matrix with sub-diagonal a (n-1 entries), diagonal b
    (n) and super-diagonal c (n-1), as LAPACK's gtsv (dl, d, du) and
    scipy.sparse.diags([a, b, c], [-1, 0, 1]); differentiable in a, b, c."""
    n = torch.as_tensor(b).shape[-1]
    return diag(cls, [a, b, c], [-1, 0, 1], shape=(n, n))


# ---- generators (C) ----------------------------------------------------------


def random(cls, n, m=None, density=0.01, symmetric=False, spd=False, seed=0,
           dtype=torch.float64):
    """A seeded random sparse matrix, values uniform in [-1, 1].

    Square (m None or n): the C generator sla_gen_random with about
    ``density * n`` off-diagonal entries per row (at least 1): spd=True an
    SPD matrix (symmetric, strictly dominant positive diagonal),
    symmetric=True a symmetric one (random diagonal, in general
    indefinite), else a nonsymmetric one with a strictly dominant diagonal
    (so nonsingular). Rectangular (m != n): each position is stored with
    probability ``density`` (torch's generator seeded with ``seed``; no
    structure)."""
    n = int(n)
    m = n if m is None else int(m)
    if not 0.0 <= float(density) <= 1.0:
        raise ValueError("random: density must be in [0, 1] (got %r)" % (density,))
    if m == n:
        kind = 2 if spd else (1 if symmetric else 0)
        per_row = max(1, int(round(float(density) * n)))
        f = _gen("sla_gen_random", ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_uint64)
        return _from_c(cls, lambda M: f(L.ctx(), n, per_row, kind, int(seed), ctypes.byref(M)),
                       "random", dtype)
    if symmetric or spd:
        raise ValueError("random: a %d x %d matrix cannot be symmetric" % (n, m))
    g = torch.Generator().manual_seed(int(seed))
    mask = torch.rand((n, m), generator=g) < float(density)
    r, c = torch.nonzero(mask, as_tuple=True)
    vals = torch.rand(r.numel(), generator=g, dtype=torch.float64) * 2 - 1
    return cls(vals.to(dtype), r, c, (n, m))


def poisson(cls, dim, N, dtype=torch.float64):
    from .sparse import poisson as p
    return p(dim, N, dtype)


def diffusion2d(cls, N, kappa):
    from .sparse import diffusion2d as d
    return d(N, kappa)


def convdiff2d(cls, N, bx, by, dtype=torch.float64):
    """sla_gen_convdiff2d: -Laplace(u) + (bx, by) . grad u on an N x N grid
    (first-order upwind, times h^2): nonsymmetric, an M-matrix."""
    f = _gen("sla_gen_convdiff2d", ctypes.c_int64, ctypes.c_double, ctypes.c_double)
    return _from_c(cls, lambda M: f(L.ctx(), int(N), float(bx), float(by), ctypes.byref(M)),
                   "convdiff2d", dtype)


def aniso2d(cls, N, eps, dtype=torch.float64):
    """sla_gen_aniso2d: -(eps u_xx + u_yy), 5-point, unscaled."""
    f = _gen("sla_gen_aniso2d", ctypes.c_int64, ctypes.c_double)
    return _from_c(cls, lambda M: f(L.ctx(), int(N), float(eps), ctypes.byref(M)),
                   "aniso2d", dtype)


def arrow(cls, n, ndense=1, band=1, seed=0, dtype=torch.float64):
    """sla_gen_arrow: a banded body bordered by ndense dense rows and
    columns, nonsymmetric values, strictly dominant diagonal."""
    f = _gen("sla_gen_arrow", ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint64)
    return _from_c(cls, lambda M: f(L.ctx(), int(n), int(ndense), int(band), int(seed),
                                    ctypes.byref(M)), "arrow", dtype)


# ---- dense and torch sparse ------------------------------------------------


def from_dense(cls, D, requires_grad=False):
    """The nonzeros of a dense [M, N] tensor. When D requires grad the values
    are D[r, c] in D's graph (gradients flow back to D's nonzero entries);
    otherwise a new leaf (requires_grad as asked)."""
    D = torch.as_tensor(D)
    if D.dim() != 2:
        raise ValueError("from_dense takes a 2-D tensor (got shape %s)" % (tuple(D.shape),))
    r, c = torch.nonzero(D.detach(), as_tuple=True)
    if D.requires_grad and torch.is_grad_enabled():
        v = D[r, c]
        if not (v.dtype.is_floating_point or v.dtype.is_complex):
            v = v.to(torch.float64)
        return cls(v, r, c, D.shape)
    v = D[r, c].detach().clone()
    if not (v.dtype.is_floating_point or v.dtype.is_complex):
        v = v.to(torch.float64)
    return cls(v.requires_grad_(requires_grad), r, c, D.shape)


def from_torch(cls, t):
    """From a torch sparse tensor: COO (``torch.sparse_coo_tensor``, 2-D, or
    3-D [B, M, N] whose items share one pattern; coalesced here, which sums
    duplicates; differentiable through its values) or CSR
    (``torch.sparse_csr_tensor``, 2-D; torch 1.13 does not differentiate
    CSR tensors, so the values are copied)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("from_torch takes a torch sparse tensor (got %s)" % type(t).__name__)
    if t.layout == torch.sparse_coo:
        if t.sparse_dim() != t.dim():
            raise ValueError("from_torch: hybrid COO tensors (dense dimensions) are not supported")
        t = t.coalesce()
        idx, vals = t.indices(), t.values()
        if not (vals.dtype.is_floating_point or vals.dtype.is_complex):
            vals = vals.to(torch.float64)
        if t.dim() == 2:
            return cls(vals, idx[0].clone(), idx[1].clone(), tuple(t.shape))
        if t.dim() == 3:
            B, M, N = t.shape
            nnz = idx.shape[1] // B if B else 0
            if B == 0 or idx.shape[1] != B * nnz:
                raise ValueError("from_torch: the batch items of a 3-D COO tensor must share "
                                 "one pattern")
            ib = idx[0].reshape(B, nnz)
            r, c = idx[1].reshape(B, nnz), idx[2].reshape(B, nnz)
            if not (torch.equal(ib, torch.arange(B).unsqueeze(1).expand(B, nnz))
                    and torch.equal(r, r[:1].expand(B, nnz)) and torch.equal(c, c[:1].expand(B, nnz))):
                raise ValueError("from_torch: the batch items of a 3-D COO tensor must share "
                                 "one pattern (store explicit zeros to align them)")
            return cls(vals.reshape(B, nnz), r[0].clone(), c[0].clone(), (B, M, N))
        raise ValueError("from_torch: a COO tensor of %d dimensions (2 or 3)" % t.dim())
    if t.layout == torch.sparse_csr:
        if t.dim() != 2:
            raise ValueError("from_torch: batched CSR tensors are not supported (use COO)")
        crow, col, vals = t.crow_indices(), t.col_indices(), t.values()
        M, N = t.shape
        row = torch.repeat_interleave(torch.arange(M, dtype=torch.int64),
                                      (crow[1:] - crow[:-1]).to(torch.int64))
        vals = vals.detach().clone()
        if not (vals.dtype.is_floating_point or vals.dtype.is_complex):
            vals = vals.to(torch.float64)
        return cls(vals, row, col.to(torch.int64).clone(), (M, N))
    raise TypeError("from_torch: layout %s (expected torch.sparse_coo or torch.sparse_csr; a "
                    "dense tensor: SparseTensor.from_dense)" % (t.layout,))


def to_torch_sparse(A, layout=torch.sparse_coo):
    """A torch sparse tensor of A. sparse_coo: A's entries as they are
    (duplicates kept, uncoalesced), [*batch, M, N] for a batch, differentiable
    in A's values. sparse_csr: an unbatched A in the C pattern's CSR order
    (duplicates summed; not differentiable in torch 1.13)."""
    M, N = A.shape[-2:]
    bs = A.batch_shape
    if layout == torch.sparse_coo:
        r, c = A.row.to(torch.int64), A.col.to(torch.int64)
        if not bs:
            return torch.sparse_coo_tensor(torch.stack([r, c]), A.values, (M, N))
        from .sparse import _prod
        B, nnz = _prod(bs), A.nnz
        bidx = torch.stack(torch.meshgrid(*[torch.arange(s) for s in bs], indexing="ij"),
                           dim=-1).reshape(B, len(bs))
        bidx = bidx.unsqueeze(1).expand(B, nnz, len(bs)).reshape(B * nnz, len(bs)).t()
        rc = torch.stack([r, c]).repeat(1, B)
        return torch.sparse_coo_tensor(torch.cat([bidx, rc]), A.values.reshape(B * nnz),
                                       bs + (M, N))
    if layout == torch.sparse_csr:
        if bs:
            raise ValueError("to_torch_sparse: sparse_csr for a batched SparseTensor %s; "
                             "convert A[i], or use sparse_coo" % (A.shape,))
        pat = A.pattern
        vals = A._csr_values(pat).reshape(pat.nnz).detach().clone()
        with warnings.catch_warnings():  # torch 1.13: "Sparse CSR tensor support is in beta"
            warnings.simplefilter("ignore", UserWarning)
            return torch.sparse_csr_tensor(pat.rowptr.clone(), pat.colind.clone(), vals, (M, N))
    raise ValueError("to_torch_sparse: layout must be torch.sparse_coo or torch.sparse_csr "
                     "(got %s)" % (layout,))
