"""SparseTensorList algebra: many matrices with different patterns (a batch
of graphs or meshes) handled as one block-diagonal matrix, so an operation
is one C call and a few torch ops whatever the number of items.

``to_block_diagonal()`` concatenates the items into diag(A_1, ..., A_m)
(values concatenated: differentiable); its index tensors are cached on the
list and reused while the items' indices are equal, so the C analysis of
the block-diagonal pattern (and of a binary operation's result pattern) is
done once. ``from_block_diagonal(A, block_sizes)`` splits a block-diagonal
SparseTensor back (differentiable).

What is one C call: ``L1 + L2``, ``L1 - L2`` (sla_spadd on the block
diagonals), ``L1 * L2`` (sla_spmul), ``norm`` (sla_matrix_from_coo's
duplicate summing once, then segment reductions in torch); ``solve`` is
sla_solver_solve_list (in SparseTensorList.solve). Scalar and per-item
scaling, ``sum`` and negation are torch ops on the concatenated values.
``eigsh`` and ``logdet`` are a loop over the items in Python: libsla has no
list (many-pattern) entry point for them (sla_eigsh_batch and
sla_logdet_batch take many value arrays on one pattern), and on the
block-diagonal matrix the eigenpairs of different items would mix.
"""

import math
import warnings

import torch

from . import _algebra
from ._core import tensor_key


def _items(L):
    return L.tensors


def block_sizes(L):
    """[(m_i, n_i)] of the items."""
    return [tuple(int(s) for s in A.shape[-2:]) for A in _items(L)]


def total_nnz(L):
    return sum(int(A.nnz) for A in _items(L))


def total_shape(L):
    bs = block_sizes(L)
    return (sum(m for m, _ in bs), sum(n for _, n in bs))


def _offsets(sizes):
    ro, co = [0], [0]
    for m, n in sizes:
        ro.append(ro[-1] + m)
        co.append(co[-1] + n)
    return ro, co


def _block_indices(L):
    """(row, col) int64 of diag(A_1, ..., A_m), cached on the list while
    equal (so the pattern cache of sla._core finds the same tensors)."""
    items = _items(L)
    key = tuple((tensor_key(A.row), tensor_key(A.col), A.shape[-2:]) for A in items)
    hit = getattr(L, "_bd_cache", None)
    if hit is not None and hit[0] == key:
        return hit[1], hit[2]
    ro, co = _offsets(block_sizes(L))
    rows = [A.row.to(torch.int64) + ro[i] for i, A in enumerate(items)]
    cols = [A.col.to(torch.int64) + co[i] for i, A in enumerate(items)]
    row = torch.cat(rows) if rows else torch.zeros(0, dtype=torch.int64)
    col = torch.cat(cols) if cols else torch.zeros(0, dtype=torch.int64)
    if hit is not None and torch.equal(hit[1], row) and torch.equal(hit[2], col):
        row, col = hit[1], hit[2]
    L._bd_cache = (key, row, col)
    return row, col


def _dtype(L):
    dts = [A.dtype for A in _items(L)]
    d = dts[0] if dts else torch.float64
    for t in dts[1:]:
        d = torch.promote_types(d, t)
    return d


def to_block_diagonal(L):
    """diag(A_1, ..., A_m) as one SparseTensor of shape total_shape
    (differentiable in every item's values)."""
    from .sparse import SparseTensor
    row, col = _block_indices(L)
    d = _dtype(L)
    vals = [A.values.to(d) for A in _items(L)]
    v = torch.cat(vals) if vals else torch.zeros(0, dtype=d)
    return SparseTensor(v, row, col, total_shape(L))


def from_block_diagonal(cls, A, block_sizes):
    """Split a block-diagonal SparseTensor (unbatched) into a SparseTensorList;
    block_sizes: ints (square blocks) or (m, n) pairs adding up to A's shape.
    An entry outside the diagonal blocks raises ValueError. Differentiable."""
    from .sparse import SparseTensor
    if A.is_batched:
        raise ValueError("from_block_diagonal: a batched SparseTensor %s; index it first"
                         % (A.shape,))
    sizes = [(int(s), int(s)) if not isinstance(s, (tuple, list)) else (int(s[0]), int(s[1]))
             for s in block_sizes]
    if any(m < 0 or n < 0 for m, n in sizes):
        raise ValueError("from_block_diagonal: negative block size in %s" % (sizes,))
    ro, co = _offsets(sizes)
    if (ro[-1], co[-1]) != tuple(A.shape):
        raise ValueError("from_block_diagonal: blocks %s add up to %s, A is %s"
                         % (sizes, (ro[-1], co[-1]), tuple(A.shape)))
    r, c = A.row.to(torch.int64), A.col.to(torch.int64)
    rstart = torch.tensor(ro[1:], dtype=torch.int64)
    cstart = torch.tensor(co[1:], dtype=torch.int64)
    br = torch.searchsorted(rstart, r, right=True)
    bc = torch.searchsorted(cstart, c, right=True)
    bad = (br != bc).nonzero()
    if bad.numel():
        k = int(bad[0, 0])
        raise ValueError("from_block_diagonal: entry (%d, %d) lies outside the diagonal blocks"
                         % (int(r[k]), int(c[k])))
    order = torch.sort(br, stable=True).indices
    counts = torch.bincount(br, minlength=len(sizes)).tolist() if sizes else []
    ro_t = torch.tensor(ro[:-1], dtype=torch.int64)
    co_t = torch.tensor(co[:-1], dtype=torch.int64)
    out, p = [], 0
    vals = A.values.index_select(0, order)
    rs = (r - ro_t[br] if sizes else r).index_select(0, order)
    cs = (c - co_t[br] if sizes else c).index_select(0, order)
    for i, (m, n) in enumerate(sizes):
        q = p + counts[i]
        out.append(SparseTensor(vals[p:q], rs[p:q], cs[p:q], (m, n)))
        p = q
    return cls(out)


def _check_pair(L, M, what):
    if len(L) != len(M):
        raise ValueError("%s: lists of %d and %d matrices" % (what, len(L), len(M)))
    if block_sizes(L) != block_sizes(M):
        raise ValueError("%s: block sizes differ (%s vs %s)" % (what, block_sizes(L),
                                                               block_sizes(M)))


def _per_item_scale(L, s):
    """Item i scaled by s[i] (s a [len] tensor or a sequence of numbers)."""
    s = torch.as_tensor(s)
    if s.dim() != 1 or s.shape[0] != len(L):
        raise ValueError("per-item scalars: expected shape (%d,), got %s"
                         % (len(L), tuple(s.shape)))
    return type(L)([A.with_values(A.values * s[i]) for i, A in enumerate(_items(L))])


def _combine(L, M, op, alpha=1.0, beta=1.0):
    if len(L) == 0:
        return type(L)([])
    C = _algebra._binary(op, to_block_diagonal(L), to_block_diagonal(M), alpha, beta)
    return from_block_diagonal(type(L), C, block_sizes(L))


def add(L, M, alpha=1.0, beta=1.0):
    """alpha L_i + beta M_i for every i, on the union of each pair's patterns
    (one sla_spadd call on the block diagonals)."""
    from .sparse import SparseTensorList
    if not isinstance(M, SparseTensorList):
        return NotImplemented
    _check_pair(L, M, "SparseTensorList +")
    return _combine(L, M, "add", alpha, beta)


def sub(L, M):
    return add(L, M, 1.0, -1.0)


def mul(L, other):
    """L_i * M_i elementwise (intersection of the patterns; one sla_spmul
    call) for a SparseTensorList M; a number or 0-d tensor scales every
    item; a 1-D tensor of len(L) scales item i by other[i]. Differentiable."""
    from .sparse import SparseTensorList
    if isinstance(other, SparseTensorList):
        _check_pair(L, other, "SparseTensorList *")
        return _combine(L, other, "mul")
    if _algebra._is_scalar(other):
        return type(L)([A * other for A in _items(L)])
    if isinstance(other, (torch.Tensor, list, tuple)):
        return _per_item_scale(L, other)
    return NotImplemented


def div(L, other):
    if _algebra._is_scalar(other):
        return type(L)([A / other for A in _items(L)])
    if isinstance(other, (torch.Tensor, list, tuple)):
        return _per_item_scale(L, 1.0 / torch.as_tensor(other, dtype=torch.float64))
    return NotImplemented


def neg(L):
    return type(L)([-A for A in _items(L)])


def _amax(m, idx, v):
    """Per-segment max of v >= 0 (0 for an empty segment)."""
    with warnings.catch_warnings():  # scatter_reduce is "beta" in older torch
        warnings.simplefilter("ignore", UserWarning)
        return v.new_zeros(m).scatter_reduce(0, idx, v, "amax", include_self=True)


def _segments(L):
    """Item id of every stored COO entry of the concatenation."""
    n = [int(A.nnz) for A in _items(L)]
    return torch.repeat_interleave(torch.arange(len(n)), torch.tensor(n, dtype=torch.int64))


def sum_(L):
    """Sum of each item's entries: a [len] tensor (one segment sum)."""
    if len(L) == 0:
        return torch.zeros(0, dtype=torch.float64)
    v = to_block_diagonal(L).values
    return v.new_zeros(len(L)).index_add(0, _segments(L), v)


def norm(L, ord="fro"):
    """Each item's norm ("fro", 1 or inf, as SparseTensor.norm) as a [len]
    tensor: duplicates summed by one C analysis of the block diagonal, then
    segment reductions. Differentiable."""
    if len(L) == 0:
        return torch.zeros(0, dtype=torch.float64)
    B = to_block_diagonal(L)
    pat = B.pattern
    v = B._csr_values(pat)[0]
    a = v.abs()
    ro, co = _offsets(block_sizes(L))
    rstart = torch.tensor(ro[1:], dtype=torch.int64)
    m = len(L)
    if ord in ("fro", "f", None):
        blk = torch.searchsorted(rstart, pat.rowind, right=True)
        s = _amax(m, blk, a.detach())
        s = torch.where(s > 0, s, torch.ones_like(s))
        sq = a.new_zeros(m).index_add(0, blk, (a / s[blk]) ** 2)
        return s * sq.sqrt()
    if ord in (1, math.inf, float("inf"), "inf"):
        if ord == 1:
            idx, n, start = pat.colind, co[-1], torch.tensor(co[1:], dtype=torch.int64)
        else:
            idx, n, start = pat.rowind, ro[-1], rstart
        sums = a.new_zeros(max(n, 1)).index_add(0, idx, a)[:n]
        blk = torch.searchsorted(start, torch.arange(n), right=True)
        return _amax(m, blk, sums)
    raise ValueError("norm: ord must be 'fro', 1 or inf (got %r)" % (ord,))


def eigsh(L, k=6, which="LM", **kw):
    """SparseTensor.eigsh of every item (a loop: see the module docstring):
    a list of what each call returns."""
    return [A.eigsh(k, which, **kw) for A in _items(L)]


def slogdet(L, method="lu", **options):
    """(sign [len], log|det| [len]) of the items (a loop of cached
    factorizations; differentiable as SparseTensor.slogdet)."""
    if len(L) == 0:
        z = torch.zeros(0, dtype=torch.float64)
        return z, z
    r = [A.slogdet(method, **options) for A in _items(L)]
    return torch.stack([s for s, _ in r]), torch.stack([d for _, d in r])


def logdet(L, method="lu", **options):
    """log det of every item, a [len] tensor (see SparseTensor.logdet)."""
    if len(L) == 0:
        return torch.zeros(0, dtype=torch.float64)
    return torch.stack([A.logdet(method, **options) for A in _items(L)])
