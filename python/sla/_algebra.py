"""Sparse-sparse algebra and graph tools of SparseTensor (thin bindings).

The numerical work is libsla's (include/sla/algebra.h, include/sla/graph.h):
``A @ B`` is sla_spgemm_*, ``A + B`` / ``A - B`` sla_spadd_* (union of the
patterns), ``A * B`` sla_spmul_* (intersection), ``laplacian()``
sla_graph_laplacian, ``connected_components()`` sla_graph_components. Each
binary operation's result pattern (the symbolic phase) is cached per pair
of operand patterns, so a training loop computes it once; the numeric phase
and the VJP run on every call. Gradients flow to both operands' values
through the C VJPs (torch.autograd.Function); batched operands (same batch
shape, or one of them unbatched: broadcast) are handled by C in one call.

Scalar scaling, negation and the reductions (sum, norm, diagonal, degree)
are elementwise or index_add operations on the values tensor, which torch
differentiates directly.
"""

import collections
import ctypes
import os
import sys
import threading
import weakref

import torch
from torch.autograd.function import once_differentiable

from . import _lib as L
from . import _core

P, PTR, D = ctypes.c_void_p, ctypes.c_void_p, ctypes.c_double
_VPP = ctypes.POINTER(ctypes.c_void_p)
_spgemm_symbolic = L._proto("sla_spgemm_symbolic", ctypes.c_int, P, P, P, _VPP)
_spgemm_numeric = L._proto("sla_spgemm_numeric", ctypes.c_int, P, P, P, P, PTR)
_spgemm_vjp = L._proto("sla_spgemm_vjp", ctypes.c_int, P, P, P, P, PTR, PTR, PTR)
_spadd_symbolic = L._proto("sla_spadd_symbolic", ctypes.c_int, P, P, P, _VPP)
_spadd_numeric = L._proto("sla_spadd_numeric", ctypes.c_int, P, D, P, D, P, P, PTR)
_spadd_vjp = L._proto("sla_spadd_vjp", ctypes.c_int, P, D, P, D, P, P, PTR, PTR, PTR)
_spmul_symbolic = L._proto("sla_spmul_symbolic", ctypes.c_int, P, P, P, _VPP)
_spmul_numeric = L._proto("sla_spmul_numeric", ctypes.c_int, P, P, P, P, PTR)
_spmul_vjp = L._proto("sla_spmul_vjp", ctypes.c_int, P, P, P, P, PTR, PTR, PTR)
_components = L._proto("sla_graph_components", ctypes.c_int, P, P, PTR,
                       ctypes.POINTER(ctypes.c_int64))
_laplacian = L._proto("sla_graph_laplacian", ctypes.c_int, P, P, _VPP)
_laplacian_vjp = L._proto("sla_graph_laplacian_vjp", ctypes.c_int, P, P, P, PTR, PTR)
_transpose = L._proto("sla_matrix_transpose", ctypes.c_int, P, P, PTR, _VPP)
_ncols = L._proto("sla_matrix_ncols", ctypes.c_int64, P)
_spgemm = L._proto("sla_spgemm", ctypes.c_int, P, P, P, _VPP)
_nbatch = L._proto("sla_matrix_nbatch", ctypes.c_int64, P)
_get_coo = L._proto("sla_matrix_get_coo", ctypes.c_int, P, P, PTR, PTR)
_coo_equal = L._proto("sla_matrix_coo_equal", ctypes.c_int, P, P, PTR, PTR)


class _Pool:
    """Idle sla_matrix objects on one Pattern for one (dtype, nbatch): made
    once by sla_matrix_from_csr (which validates the pattern), then pointed
    at each call's values tensor by sla_matrix_borrow_values (which checks
    the values finite), so an operand's pattern is not converted and
    checked again on every product. Each matrix serves one call at a time."""

    KEEP = 4

    def __init__(self):
        self.free = []
        self.lock = threading.Lock()

    def take(self):
        with self.lock:
            return self.free.pop() if self.free else None

    def give(self, ptr):
        with self.lock:
            if len(self.free) < self.KEEP:
                self.free.append(ptr)
                return
        L.sla_matrix_destroy(ctypes.byref(ptr))

    def __del__(self):
        if L.sla_matrix_destroy:
            for ptr in getattr(self, "free", ()):
                L.sla_matrix_destroy(ctypes.byref(ptr))


_pools_lock = threading.Lock()


def _pool(pat, key):
    with _pools_lock:
        pools = pat.__dict__.setdefault("_alg_pools", {})
        p = pools.get(key)
        if p is None:
            p = pools[key] = _Pool()
        return p


class _CMat:
    """An sla_matrix on a Pattern borrowing a values tensor [B, nnz] (or,
    values None, a pattern-only matrix with zero values): private to one
    call, so two operands on one pattern never share it. Taken from and
    given back to the pattern's pool (_Pool)."""

    def __init__(self, pat, values=None):
        if values is None:
            values = torch.zeros((1, pat.nnz), dtype=torch.float64)
        self.values = values  # kept alive while C reads it
        self.pool = _pool(pat, (values.dtype, values.shape[0]))
        ptr = self.pool.take()
        if ptr is not None:
            st = L.sla_matrix_borrow_values(L.ctx(), ptr, values.data_ptr())
            if st:
                self.pool.give(ptr)
                L.check(st, "matrix")
            self.ptr = ptr
            return
        self.ptr = ctypes.c_void_p()
        L.check(L.sla_matrix_from_csr(L.ctx(), pat.nrows, pat.ncols, pat.rowptr.data_ptr(),
                                      pat.colind.data_ptr(), _core.c_dtype(values.dtype),
                                      values.shape[0], values.data_ptr(), L.SLA_BORROW,
                                      ctypes.byref(self.ptr)), "matrix")

    def __del__(self):
        ptr = getattr(self, "ptr", None)
        if ptr is not None and ptr.value and L.sla_matrix_destroy:
            self.pool.give(ptr)


class _Result:
    """An owned sla_matrix made by C (a symbolic phase or sla_spgemm). Its
    pattern as int64 index tensors (rowind and colind in CSR order, the
    row and col of the SparseTensors made on it) is made from C's int32
    CSR arrays only when first asked for (coo(); sla_matrix_get_coo,
    threaded), then kept and shared by every SparseTensor on this result:
    a product whose indices nobody reads never writes those 16 bytes per
    entry (2-D Poisson 1e6 squared: 208 MB, about 25 ms)."""

    def __init__(self, ptr):
        self.ptr = ptr
        self.nrows = int(L.sla_matrix_nrows(ptr))
        self.ncols = int(_ncols(ptr))
        self.nnz = int(L.sla_matrix_nnz(ptr))
        self._coo = None
        self._coo_lock = threading.Lock()

    def coo(self):
        """(rowind, colind): int64 tensors of the pattern, made on first use."""
        with self._coo_lock:
            if self._coo is None:
                rowind = torch.empty(self.nnz, dtype=torch.int64)
                colind = torch.empty(self.nnz, dtype=torch.int64)
                L.check(_get_coo(L.ctx(), self.ptr, rowind.data_ptr(), colind.data_ptr()),
                        "result pattern")
                self._coo = (rowind, colind)
            return self._coo

    def coo_made(self):
        """Whether coo() has made the index tensors (someone may hold them)."""
        return self._coo is not None

    rowind = property(lambda self: self.coo()[0])
    colind = property(lambda self: self.coo()[1])

    def values(self):
        """C's own value arrays [nbatch, nnz] as a tensor sharing their
        memory (no copy; the tensor keeps this result alive)."""
        nb = int(_nbatch(self.ptr))
        if nb * self.nnz == 0:
            return torch.zeros((nb, self.nnz), dtype=torch.float64)
        buf = (ctypes.c_double * (nb * self.nnz)).from_address(
            L.sla_matrix_values(self.ptr, 0))
        buf.owner = self  # torch.frombuffer keeps buf, buf keeps the C matrix
        return torch.frombuffer(buf, dtype=torch.float64).reshape(nb, self.nnz)

    def pattern(self):
        """The result's Pattern (_ResultPattern), shared while one lives. A
        weak reference: the pattern holds this result, and a cycle would
        keep hundreds of MB alive until the cyclic garbage collector runs."""
        ref = getattr(self, "_pattern", None)
        p = ref() if ref is not None else None
        if p is None:
            p = _ResultPattern(self)
            self._pattern = weakref.ref(p)
        return p

    def __del__(self):
        if getattr(self, "ptr", None) is not None and self.ptr.value and L.sla_matrix_destroy:
            L.sla_matrix_destroy(ctypes.byref(self.ptr))


class _ResultPattern(_core.Pattern):
    """The Pattern of a C-made result (a _Result), adopted instead of
    analysed again by sla_matrix_from_coo: C built it sorted and valid, and
    it is already in CSR order (the COO -> CSR map is the identity). The
    result's row and col tensors belong to the user, who may write them in
    place, so matches() compares them with the C matrix's own (private)
    pattern, and the index tensors a Pattern holds are private copies,
    made from C on first use."""

    def __init__(self, res):  # not Pattern.__init__, which would analyse the indices
        self._res = res
        self.nrows, self.ncols = res.nrows, res.ncols
        self.nnz_in = self.nnz = res.nnz
        self.identity = True
        self._idx = None
        self._idx_lock = threading.Lock()  # not _lock: held by solver() while it builds one
        self._solvers = collections.OrderedDict()
        self._matrices = {}
        self._lock = threading.Lock()

    def _indices(self):
        with self._idx_lock:
            if self._idx is None:
                res = self._res
                rowptr = torch.empty(res.nrows + 1, dtype=torch.int64)
                ctypes.memmove(rowptr.data_ptr(), L.sla_matrix_rowptr(res.ptr),
                               8 * (res.nrows + 1))
                rowind = torch.empty(res.nnz, dtype=torch.int64)
                colind = torch.empty(res.nnz, dtype=torch.int64)
                L.check(_get_coo(L.ctx(), res.ptr, rowind.data_ptr(), colind.data_ptr()),
                        "result pattern")
                self._idx = (rowptr, rowind, colind)
            return self._idx

    rowptr = property(lambda self: self._indices()[0])
    rowind = property(lambda self: self._indices()[1])
    colind = property(lambda self: self._indices()[2])
    row_in = rowind
    col_in = colind
    coo_map = property(lambda self: torch.arange(self.nnz, dtype=torch.int64))

    def matches(self, row, col, nrows, ncols):
        if (int(nrows), int(ncols)) != (self.nrows, self.ncols):
            return False
        if not isinstance(row, torch.Tensor) or not isinstance(col, torch.Tensor):
            return False
        if row.dim() != 1 or col.dim() != 1 or row.numel() != self.nnz \
                or col.numel() != self.nnz:
            return False
        row = row.to(torch.int64).contiguous()
        col = col.to(torch.int64).contiguous()
        return bool(_coo_equal(L.ctx(), self._res.ptr, row.data_ptr(), col.data_ptr()))


_madvise = (_core.libc_function("madvise", ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int])
            if sys.platform.startswith("linux") else None)
_MADV_HUGEPAGE = 14  # Linux
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _empty_values(nb, nnz):
    """torch.empty((nb, nnz), float64) for a numeric phase to write: of 4 MB
    or more, its pages hinted to the kernel as transparent huge pages (Linux
    madvise, as NumPy does for its large arrays and libsla for the product
    it allocates itself), so that writing it costs one page fault per 2 MB
    instead of one per 4 kB (2-D Poisson 1e6 squared, 104 MB: the numeric
    phase through Python 0.044 -> 0.040 s CPU). Only a hint: nothing changes
    where it is refused."""
    t = torch.empty((nb, nnz), dtype=torch.float64)
    n = 8 * t.numel()
    if _madvise is not None and n >= (4 << 20):
        a = t.data_ptr()
        lo, hi = (a + _PAGE - 1) // _PAGE * _PAGE, (a + n) // _PAGE * _PAGE
        if hi > lo:
            _madvise(lo, hi - lo, _MADV_HUGEPAGE)
    return t


_SYMBOLIC = {"matmul": _spgemm_symbolic, "add": _spadd_symbolic, "mul": _spmul_symbolic}
_cache = collections.OrderedDict()
_cache_lock = threading.Lock()
CACHE_SIZE = 16


def _cached(op, pa, pb):
    """The cached result pattern of op on patterns pa, pb, or None."""
    key = (op, id(pa), id(pb))
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit[2]
    return None


def _store(op, pa, pb, res):
    with _cache_lock:
        _cache[(op, id(pa), id(pb))] = (pa, pb, res)  # the references keep the ids unique
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)


def _symbolic(op, pa, pb, ma=None, mb=None):
    """The cached result pattern of op on patterns pa, pb (a _Result);
    ma, mb: C matrices on pa, pb when the caller has them."""
    hit = _cached(op, pa, pb)
    if hit is not None:
        return hit
    ma = ma or _CMat(pa)
    mb = mb or _CMat(pb)
    out = ctypes.c_void_p()
    L.check(_SYMBOLIC[op](L.ctx(), ma.ptr, mb.ptr, ctypes.byref(out)), op)
    res = _Result(out)
    _store(op, pa, pb, res)
    return res


def _numeric(op, ma, mb, res, cv, alpha, beta):
    c = L.ctx()
    if op == "matmul":
        return L.check(_spgemm_numeric(c, ma.ptr, mb.ptr, res.ptr, cv.data_ptr()), "A @ B")
    if op == "add":
        return L.check(_spadd_numeric(c, alpha, ma.ptr, beta, mb.ptr, res.ptr, cv.data_ptr()),
                       "A + B")
    return L.check(_spmul_numeric(c, ma.ptr, mb.ptr, res.ptr, cv.data_ptr()), "A * B")


def _vjp(op, ma, mb, res, gc, ga, gb, alpha, beta):
    c = L.ctx()
    pa = ga.data_ptr() if ga is not None else None
    pb = gb.data_ptr() if gb is not None else None
    if op == "matmul":
        return L.check(_spgemm_vjp(c, ma.ptr, mb.ptr, res.ptr, gc.data_ptr(), pa, pb),
                       "A @ B backward")
    if op == "add":
        return L.check(_spadd_vjp(c, alpha, ma.ptr, beta, mb.ptr, res.ptr, gc.data_ptr(), pa, pb),
                       "A + B backward")
    return L.check(_spmul_vjp(c, ma.ptr, mb.ptr, res.ptr, gc.data_ptr(), pa, pb),
                   "A * B backward")


class BinaryFn(torch.autograd.Function):
    """C values [nbC, nnzC] of op(A, B) from CSR values va [nbA, nnzA] and
    vb [nbB, nnzB], with the C VJP to both."""

    @staticmethod
    def forward(ctx, va, vb, op, pa, pb, res, alpha, beta, box=None):
        # res None: no cached pattern yet; the result pattern is made here
        # (for a product, with its values in one pass: sla_spgemm) and
        # handed back in box["res"]
        # ma, mb: C matrices _binary made while checking the operands' indices
        ma = (box.pop("ma", None) if box else None) or _CMat(pa, va)
        mb = (box.pop("mb", None) if box else None)
        mb = ma if (vb is va and pb is pa) else (mb or _CMat(pb, vb))
        nbc = max(va.shape[0], vb.shape[0])
        cv = None
        if res is None:
            res = _cached(op, pa, pb)
        if res is None and op == "matmul":
            out = ctypes.c_void_p()
            L.check(_spgemm(L.ctx(), ma.ptr, mb.ptr, ctypes.byref(out)), "A @ B")
            res = _Result(out)
            cv = res.values()  # the product's values, in C's array (no copy)
            _store(op, pa, pb, res)
        elif res is None:
            res = _symbolic(op, pa, pb, ma, mb)
        if box is not None:
            box["res"] = res
        if cv is None:
            cv = _empty_values(nbc, res.nnz)
            _numeric(op, ma, mb, res, cv, alpha, beta)
        ctx.args = (op, pa, pb, res, alpha, beta)
        ctx.save_for_backward(va, vb)
        return cv

    @staticmethod
    @once_differentiable
    def backward(ctx, gc):
        va, vb = ctx.saved_tensors
        op, pa, pb, res, alpha, beta = ctx.args
        need_a, need_b = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        ga = torch.empty(va.shape, dtype=torch.float64) if need_a else None
        gb = torch.empty(vb.shape, dtype=torch.float64) if need_b else None
        if need_a or need_b:
            _vjp(op, _CMat(pa, va), _CMat(pb, vb), res, gc.to(torch.float64).contiguous(),
                 ga, gb, alpha, beta)
        return (ga.to(va.dtype) if need_a else None, gb.to(vb.dtype) if need_b else None,
                None, None, None, None, None, None, None)


def _prod(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _operand(T):
    """(pattern, CSR values [B, nnz], a _CMat of them or None) of an operand.
    The pattern T.pattern would give, checked against T's indices in C
    when T's cached pattern is an analysed COO pattern already in CSR order
    (identity) and the indices are contiguous int64: the C matrix the
    operation needs anyway is made on that pattern, and
    sla_matrix_coo_equal compares the indices with its CSR arrays, over
    the context's threads, reading 12 bytes per entry less than the
    memcmp with the pattern's copies in Pattern.matches (2-D Poisson 1e6:
    about 9 of 13 ms, which were serial). The same answer: for an identity
    pattern the copies are the CSR arrays expanded. Otherwise (or when
    the indices changed) T.pattern as always."""
    p, row, col = T._pattern, T._row, T._col
    if (type(p) is _core.Pattern and p.identity and isinstance(row, torch.Tensor)
            and isinstance(col, torch.Tensor) and (p.nrows, p.ncols) == tuple(T.shape[-2:])
            and row.dtype == torch.int64 and col.dtype == torch.int64
            and row.dim() == 1 and col.dim() == 1 and row.numel() == p.nnz
            and col.numel() == p.nnz and row.is_contiguous() and col.is_contiguous()
            and row.device.type == "cpu" and col.device.type == "cpu"):
        v = T._csr_values(p).contiguous()
        m = _CMat(p, v)
        if _coo_equal(L.ctx(), m.ptr, row.data_ptr(), col.data_ptr()):
            return p, v, m
    p = T.pattern
    return p, T._csr_values(p).contiguous(), None


def _binary(op, A, B, alpha=1.0, beta=1.0):
    from .sparse import SparseTensor
    if not isinstance(B, SparseTensor):
        return NotImplemented
    from ._complex import refuse
    refuse({"matmul": "SpGEMM (A @ B)", "add": "A + B", "mul": "A * B"}[op], A, B)
    if op == "matmul":
        if A.shape[-1] != B.shape[-2]:
            raise ValueError("A @ B: A is %s but B is %s" % (A.shape, B.shape))
        shape = (A.shape[-2], B.shape[-1])
    else:
        if A.shape[-2:] != B.shape[-2:]:
            raise ValueError("%s: shapes %s and %s differ" % (op, A.shape, B.shape))
        shape = A.shape[-2:]
    ba, bb = A.batch_shape, B.batch_shape
    if ba and bb and ba != bb:
        raise ValueError("%s: batch shapes %s and %s differ (equal, or one matrix unbatched)"
                         % (op, ba, bb))
    bs = ba or bb
    dtype = torch.promote_types(A.dtype, B.dtype)
    if _prod(bs) == 0:
        from .sparse import _connected
        pa = A.pattern  # each .pattern compares the indices with the pattern's (O(nnz))
        pb = pa if B is A else B.pattern
        res = _symbolic(op, pa, pb)
        cv = _connected(torch.zeros((0, res.nnz), dtype=torch.float64), A.values, B.values)
    else:
        pa, va, ma = _operand(A)
        pb, vb, mb = (pa, va, ma) if B is A else _operand(B)
        box = {"ma": ma, "mb": mb}
        cv = BinaryFn.apply(va, vb, op, pa, pb, None, float(alpha), float(beta), box)
        res = box["res"]
    # C's pattern adopted (no second analysis), the index tensors made on first use
    return SparseTensor._on_result(cv.reshape(tuple(bs) + (res.nnz,)).to(dtype), res, shape)


def matmul(A, B):
    """A @ B for a SparseTensor B (SpGEMM); anything else is A.matvec(B)."""
    from .sparse import SparseTensor
    if isinstance(B, SparseTensor):
        return _binary("matmul", A, B)
    return A.matvec(B)


def add(A, B, alpha=1.0, beta=1.0):
    """alpha A + beta B on the union of the patterns."""
    return _binary("add", A, B, alpha, beta)


def sub(A, B):
    return _binary("add", A, B, 1.0, -1.0)


def rsub(A, B):
    return _binary("add", A, B, -1.0, 1.0)


def _is_scalar(s):
    if isinstance(s, torch.Tensor):
        return s.dim() == 0
    return isinstance(s, (int, float, complex)) and not isinstance(s, bool)


def mul(A, other):
    """A * B: elementwise on the intersection of the patterns for a
    SparseTensor B; A * alpha scales the values (alpha a number or a 0-d
    tensor, differentiable)."""
    from .sparse import SparseTensor
    if isinstance(other, SparseTensor):
        return _binary("mul", A, other)
    if _is_scalar(other):
        return A.with_values(A.values * other)
    return NotImplemented


def div(A, other):
    if _is_scalar(other):
        return A.with_values(A.values / other)
    return NotImplemented


def neg(A):
    return A.with_values(-A.values)


# ---- transposes and reductions -------------------------------------------

def transpose(A):
    """The transpose (same values, row and col exchanged)."""
    from .sparse import SparseTensor
    return SparseTensor(A.values, A.col, A.row, A.shape[:-2] + (A.shape[-1], A.shape[-2]))


def _v2(A):
    return A.values.reshape(_prod(A.batch_shape), A.nnz)


def _index(t):
    return t.to(torch.int64)


def sum(A, dim=None):
    """Sum of all entries ([*batch]), of each column (dim=0: [*batch, N]) or
    of each row (dim=1: [*batch, M])."""
    bs = A.batch_shape
    v = _v2(A)
    if dim is None:
        return v.sum(-1).reshape(bs)
    if dim in (0, -2):
        idx, n = _index(A.col), A.shape[-1]
    elif dim in (1, -1):
        idx, n = _index(A.row), A.shape[-2]
    else:
        raise ValueError("sum: dim must be None, 0 or 1 (got %r)" % (dim,))
    out = v.new_zeros(v.shape[0], n).index_add(1, idx, v)
    return out.reshape(tuple(bs) + (n,))


def _csr_abs(A):
    """|a_ij| of the entries with duplicates summed first, [B, nnz_csr]."""
    pat = A.pattern
    return A._csr_values(pat).abs(), pat


def norm(A, ord="fro"):
    """The Frobenius norm ("fro"), the 1-norm (1: max column sum of |a_ij|)
    or the infinity norm (inf: max row sum), per matrix of a batch."""
    import math
    bs = A.batch_shape
    if ord in ("fro", "f", None):
        v = A._csr_values()
        if v.is_complex():
            v = v.abs()
        # scaled, so that huge or tiny values neither overflow nor underflow
        s = v.abs().amax(-1, keepdim=True).detach()
        s = torch.where(s > 0, s, torch.ones_like(s))
        return (s.squeeze(-1) * ((v / s) ** 2).sum(-1).sqrt()).reshape(bs)
    if ord in (1, math.inf, float("inf"), "inf"):
        a, pat = _csr_abs(A)
        if ord == 1:
            idx, n = pat.colind, A.shape[-1]
        else:
            idx, n = pat.rowind, A.shape[-2]
        sums = a.new_zeros(a.shape[0], max(n, 1)).index_add(1, idx, a)
        return sums.amax(-1).reshape(bs)
    raise ValueError("norm: ord must be 'fro', 1 or inf (got %r)" % (ord,))


def diagonal(A):
    """The diagonal [*batch, min(M, N)] (0 where not stored; duplicates summed)."""
    bs = A.batch_shape
    k = min(A.shape[-2], A.shape[-1])
    r, c = _index(A.row), _index(A.col)
    on = (r == c).nonzero().reshape(-1)
    v = _v2(A).index_select(1, on)
    out = v.new_zeros(v.shape[0], k).index_add(1, r.index_select(0, on), v)
    return out.reshape(tuple(bs) + (k,))


# ---- graphs ---------------------------------------------------------------

def connected_components(A):
    """(count, labels): the connected components of the pattern read as an
    undirected graph (a stored a_ij joins i and j; stored zeros count);
    labels [n] int64 numbered in the order of each component's lowest
    vertex. One answer for a whole batch (the pattern is shared)."""
    if A.shape[-2] != A.shape[-1]:
        raise ValueError("connected_components needs a square matrix (shape %s)" % (A.shape,))
    m = _CMat(A.pattern)
    labels = torch.empty(A.shape[-1], dtype=torch.int64)
    count = ctypes.c_int64()
    L.check(_components(L.ctx(), m.ptr, labels.data_ptr(), ctypes.byref(count)),
            "connected_components")
    return int(count.value), labels


def has_isolated_components(A):
    """True when the graph of A falls apart into more than one connected
    component (some vertices cannot reach the others)."""
    return connected_components(A)[0] > 1


def to_connected_components(A):
    """The diagonal blocks of A on its connected components, as a
    SparseTensorList (unbatched A); the list's ``nodes`` holds, for each
    block, the vertices (ascending) it is made of, and
    ``from_connected_components`` puts them back. Differentiable."""
    from .sparse import SparseTensor, SparseTensorList
    if A.is_batched:
        raise ValueError("to_connected_components: a batched SparseTensor %s; index it first"
                         % (A.shape,))
    count, labels = connected_components(A)
    r, c = _index(A.row), _index(A.col)
    local = torch.empty_like(labels)
    comp = labels.index_select(0, r)
    blocks, nodes = [], []
    for k in range(count):
        nk = (labels == k).nonzero().reshape(-1)
        local[nk] = torch.arange(nk.numel(), dtype=torch.int64)
        sel = (comp == k).nonzero().reshape(-1)
        blocks.append(SparseTensor(A.values.index_select(0, sel), local[r[sel]], local[c[sel]],
                                   (nk.numel(), nk.numel())))
        nodes.append(nk)
    out = SparseTensorList(blocks)
    out.nodes = nodes
    return out


def block_diag(mats, nodes=None, n=None):
    """One SparseTensor from matrices [A_0, A_1, ...] (a SparseTensorList or
    a list of unbatched SparseTensors): block-diagonal, A_k on rows and
    columns nodes[k] (default: consecutive blocks). With the ``nodes`` of
    to_connected_components it is that function's inverse. Differentiable."""
    from .sparse import SparseTensor
    mats = list(mats)
    if nodes is None:
        rows, cols, vals = [], [], []
        ro = co = 0
        for M in mats:
            if M.is_batched:
                raise ValueError("block_diag: batched matrices are not supported")
            rows.append(_index(M.row) + ro)
            cols.append(_index(M.col) + co)
            vals.append(M.values)
            ro += M.shape[-2]
            co += M.shape[-1]
        shape = (ro, co)
    else:
        if len(nodes) != len(mats):
            raise ValueError("block_diag: %d matrices but %d node lists" % (len(mats), len(nodes)))
        rows, cols, vals = [], [], []
        for M, nk in zip(mats, nodes):
            nk = torch.as_tensor(nk, dtype=torch.int64)
            if M.shape[-2] != nk.numel() or M.shape[-1] != nk.numel():
                raise ValueError("block_diag: a %s block on %d nodes" % (M.shape, nk.numel()))
            rows.append(nk[_index(M.row)])
            cols.append(nk[_index(M.col)])
            vals.append(M.values)
        if n is None:
            n = 1 + max((int(nk.max()) for nk in nodes if len(nk) > 0), default=-1)
        shape = (n, n)
    if not vals:
        return SparseTensor(torch.zeros(0, dtype=torch.float64), torch.zeros(0, dtype=torch.int64),
                            torch.zeros(0, dtype=torch.int64), shape)
    dtype = vals[0].dtype
    for v in vals:
        dtype = torch.promote_types(dtype, v.dtype)
    return SparseTensor(torch.cat([v.to(dtype) for v in vals]), torch.cat(rows),
                        torch.cat(cols), shape)


class LaplacianFn(torch.autograd.Function):
    """L's values [B, nnzL] from A's CSR values [B, nnzA] (sla_graph_laplacian
    and its VJP)."""

    @staticmethod
    def forward(ctx, va, pat, box):
        m = _CMat(pat, va)
        out = ctypes.c_void_p()
        L.check(_laplacian(L.ctx(), m.ptr, ctypes.byref(out)), "laplacian")
        res = _Result(out)
        lv = torch.empty((va.shape[0], res.nnz), dtype=torch.float64)
        if res.nnz:
            ctypes.memmove(lv.data_ptr(), L.sla_matrix_values(res.ptr, 0), 8 * lv.numel())
        ctx.args = (pat, res)
        ctx.save_for_backward(va)
        box["res"] = res
        return lv

    @staticmethod
    @once_differentiable
    def backward(ctx, gl):
        (va,) = ctx.saved_tensors
        pat, res = ctx.args
        ga = torch.empty(va.shape, dtype=torch.float64)
        gl = gl.to(torch.float64).contiguous()
        m = _CMat(pat, va)  # alive through the call
        L.check(_laplacian_vjp(L.ctx(), m.ptr, res.ptr, gl.data_ptr(),
                               ga.data_ptr()), "laplacian backward")
        return ga.to(va.dtype), None, None


def laplacian(A):
    """The graph Laplacian L = diag(rowsum(A)) - A (see sla_graph_laplacian:
    for a symmetric weighted adjacency A, L = D - A; A's diagonal cancels, so
    L 1 = 0; symmetrize first, (A + A.T) * 0.5, for a directed pattern).
    Batched; differentiable in A's values."""
    from .sparse import SparseTensor
    from ._complex import refuse
    refuse("laplacian", A)
    if A.shape[-2] != A.shape[-1]:
        raise ValueError("laplacian needs a square matrix (shape %s)" % (A.shape,))
    bs = A.batch_shape
    if _prod(bs) == 0:
        raise ValueError("laplacian: a 0-size batch")
    pat = A.pattern
    va = A._csr_values(pat).contiguous()
    box = {}
    lv = LaplacianFn.apply(va, pat, box)
    res = box["res"]
    return SparseTensor(lv.reshape(tuple(bs) + (lv.shape[-1],)).to(A.dtype), res.rowind,
                        res.colind, A.shape[-2:])


def degree(A, weighted=True):
    """Vertex degrees [*batch, n]: the sum of the off-diagonal entries of each
    row (weighted) or their number (weighted=False)."""
    bs = A.batch_shape
    r, c = _index(A.row), _index(A.col)
    off = (r != c).to(A.dtype)
    v = _v2(A) * off if weighted else off.expand(_v2(A).shape)
    out = v.new_zeros(v.shape[0], A.shape[-2]).index_add(1, r, v)
    return out.reshape(tuple(bs) + (A.shape[-2],))
