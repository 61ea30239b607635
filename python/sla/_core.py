"""C objects behind the Python API: patterns, borrowed matrices, cached solvers.

A *pattern* (``Pattern``) is the (row, col) structure of a SparseTensor,
turned into CSR by the C library once (``sla_matrix_from_coo`` gives the CSR
arrays and the COO -> CSR position of every entry). Patterns are cached
(``PATTERN_CACHE_SIZE`` of them, least recently used dropped first), so
building ``SparseTensor(new_values, row, col, shape)`` every training step
finds the same pattern.

What is cached and what is checked: the cache is *found* by the identity of
the row/col tensors (data pointer, version counter, shape, strides, dtype)
and the matrix shape, but a hit is *trusted* only after the row and col
tensors hold the same bytes (``same_bytes``: libc memcmp for contiguous
int64 indices, torch.equal otherwise) as copies of the indices taken when
the pattern was built. The identity alone can alias: indices rewritten
without a version bump (through the numpy array of ``torch.from_numpy``,
through ``.data``, by a loader refilling its buffers) keep the key, and a
stale pattern would silently give wrong answers. The check costs O(nnz) per
lookup (about 1.5 ms for a million entries: 0.65 ms per int64 index
tensor, data in cache), as much as the values check of CMatrix.bind: it can
dominate a matvec on a large pattern (a 1e6-entry matvec call measured 1.6
ms before, 6.3 ms after on a loaded 2-core machine) and is small next to
any factorization or Krylov solve; the copies cost 16 bytes per entry per
cached pattern. A SparseTensor also keeps the Pattern it
used and checks it the same way before each operation (``Pattern.matches``),
so a SparseTensor whose index tensors were rewritten in place follows them.
A pattern that no longer matches is rebuilt (with new solvers).

A pattern keeps the C matrices and solvers made for it:

* ``CMatrix``: an ``sla_matrix`` that *borrows* a values tensor [B, nnz]
  (CSR order, float64, float32, complex128 or complex64) by pointer. New values are bound with
  ``sla_matrix_borrow_values``: no copy.
* ``Solver``: a ``CMatrix`` plus an ``sla_solver`` for one options string.
  ``prepare(values)`` makes the solver hold the factorization (or the
  preconditioner) of exactly those values: when they are the values it was
  last prepared for (same tensor storage, same version counter and, in the
  default "compare" mode of ``set_value_check``, bitwise equal to a copy
  taken at binding (memcmp): O(nnz) per call; "version" mode skips the copy and trusts the
  version counter, so writes that bypass it need ``clear_cache()``) nothing is
  done; otherwise the new values are bound and the solver refreshed (new
  numeric factorization, same symbolic analysis), or re-created when the
  structural facts the solver was set up with (exact symmetry, positive
  diagonal) changed. The backward pass of a solve calls ``prepare_again``
  with the forward's values and the binding ``epoch`` the forward saw: when
  no other values were bound since (the usual case), the forward's
  factorization is reused without the O(nnz) compare; otherwise (another
  solve on the same pattern and options ran in between with other values,
  as gradcheck's perturbations do) ``prepare`` checks and refactors.

Solvers are kept per pattern in a small LRU (``SOLVERS_PER_PATTERN``) keyed
by (options, dtype, batch size); ``clear_cache()`` drops every C object.
Each solver has a lock: calls into C release the GIL, and a solver (its
factorization) must not be refreshed while another thread solves with it.
"""

import collections
import ctypes
import threading

import torch

from . import _lib as L

SOLVERS_PER_PATTERN = 4
PATTERN_CACHE_SIZE = 16

_patterns = collections.OrderedDict()
_patterns_lock = threading.Lock()


def tensor_key(t):
    """Identity of a tensor's contents while we hold a reference to it."""
    return (t.data_ptr(), t._version, tuple(t.shape), tuple(t.stride()), t.dtype)


def libc_function(name, restype, argtypes):
    """The C library's function `name` through ctypes, or None where the
    process's symbols do not have it."""
    try:
        f = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    f.restype = restype
    f.argtypes = argtypes
    return f


_memcmp = libc_function("memcmp", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t])


def same_bytes(a, b):
    """Whether two contiguous tensors of one dtype and shape hold the same
    bytes: libc memcmp (about 1 us for 5,000 doubles against 2.8 us for
    torch.equal, most of which is dispatch). Bitwise, so NaN equals the
    same NaN (a cache never refreshes for an unchanged NaN) and -0.0 is not
    0.0 (a refresh, harmless). torch.equal where memcmp is unavailable or a
    tensor is not contiguous."""
    if _memcmp is None or not (a.is_contiguous() and b.is_contiguous()):
        return bool(torch.equal(a, b))
    nbytes = a.numel() * a.element_size()
    if nbytes != b.numel() * b.element_size():
        return False
    return nbytes == 0 or _memcmp(a.data_ptr(), b.data_ptr(), nbytes) == 0


_VALUE_CHECK = ["compare"]


def set_value_check(mode):
    """How a cached matrix or solver decides that its values changed.

    "compare" (the default): the values tensor's identity (data pointer,
    version counter, size, dtype) must match the one last bound *and* the
    values must be bitwise equal to a copy taken then. Every write is seen,
    also those that bypass autograd's version counter (``.data``, which
    torch.autograd.gradcheck uses, a numpy view, C code). Cost: one O(nnz)
    copy each time new values are bound and one O(nnz) comparison (libc
    memcmp) per forward call (about 1 us at 5,000 entries). A backward pass
    compares nothing when no other values were bound since its forward
    (Solver.prepare_again), so a write through ``.data`` between a forward
    and its backward is not seen (as torch's saved tensors do not see it).

    "version": the identity alone; no copy, no comparison. In-place torch
    operations (``v.mul_(2)``, ``v[0] = 1``, ``v.copy_(w)``) bump the version
    counter and are seen; writes that bypass it (``v.data``, a numpy view
    of v, gradcheck's perturbations) are NOT: the cached factorization or
    preconditioner stays that of the old values while the borrowed matrix
    reads the new ones (a direct solve then usually fails its accuracy check
    and warns; a Krylov solve converges slowly or not at all). Call
    ``sla.clear_cache()`` after such a write (a new values tensor is always
    seen). Use "version" in hot loops whose values change only through torch
    ops; keep "compare" for gradcheck and code that writes through aliases.

    Returns the previous mode."""
    if mode not in ("compare", "version"):
        raise ValueError("set_value_check: mode must be 'compare' or 'version' (got %r)" % (mode,))
    old, _VALUE_CHECK[0] = _VALUE_CHECK[0], mode
    return old


def clear_cache():
    """Drop every cached pattern, matrix and solver (their C objects are
    freed when no autograd graph refers to them any more)."""
    with _patterns_lock:
        _patterns.clear()


def _as_index(t, name):
    if not isinstance(t, torch.Tensor):
        t = torch.as_tensor(t)
    if t.dim() != 1:
        raise ValueError("%s must be a 1-D index tensor (got shape %s)" % (name, tuple(t.shape)))
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
        raise TypeError("%s must be an integer tensor (got %s)" % (name, t.dtype))
    if t.device.type != "cpu":
        raise ValueError("%s must be a CPU tensor (sla runs on the CPU)" % name)
    return t.to(torch.int64).contiguous()


def get_pattern(row, col, nrows, ncols):
    """The cached Pattern for these row/col tensors (created on first use).
    A cached pattern is returned only when its copy of the indices equals
    row and col now (see the module docstring)."""
    if not isinstance(row, torch.Tensor) or not isinstance(col, torch.Tensor):
        return Pattern(row, col, nrows, ncols)
    key = (tensor_key(row), tensor_key(col), int(nrows), int(ncols))
    with _patterns_lock:
        hit = _patterns.get(key)
        if hit is not None:
            _patterns.move_to_end(key)
    if hit is not None and hit[2].matches(row, col, nrows, ncols):
        return hit[2]
    p = Pattern(row, col, nrows, ncols)
    with _patterns_lock:
        _patterns[key] = (row, col, p)  # the references keep the keys' pointers unique
        while len(_patterns) > PATTERN_CACHE_SIZE:
            _patterns.popitem(last=False)
    return p


class Pattern:
    """A COO pattern analysed by sla_matrix_from_coo: CSR arrays and the
    COO -> CSR map (duplicates are summed into one CSR entry)."""

    def __init__(self, row, col, nrows, ncols):
        row_ptr0 = row.data_ptr() if isinstance(row, torch.Tensor) else None
        col_ptr0 = col.data_ptr() if isinstance(col, torch.Tensor) else None
        row = _as_index(row, "row")
        col = _as_index(col, "col")
        if row.numel() != col.numel():
            raise ValueError("row and col must have the same length (%d vs %d)"
                             % (row.numel(), col.numel()))
        self.nrows, self.ncols = int(nrows), int(ncols)
        self.nnz_in = row.numel()
        # the indices this pattern was built from, compared by matches();
        # int64 copies (never views of the caller's memory)
        self.row_in = row.clone() if row.data_ptr() == row_ptr0 else row
        self.col_in = col.clone() if col.data_ptr() == col_ptr0 else col
        self._row_in_ptr, self._col_in_ptr = self.row_in.data_ptr(), self.col_in.data_ptr()
        coo_map = torch.empty(self.nnz_in, dtype=torch.int64)
        M = ctypes.c_void_p()
        L.check(L.sla_matrix_from_coo(L.ctx(), self.nrows, self.ncols, self.nnz_in,
                                      row.data_ptr(), col.data_ptr(), L.SLA_F64, 1, None,
                                      coo_map.data_ptr(), ctypes.byref(M)), "pattern")
        try:
            self.nnz = int(L.sla_matrix_nnz(M))
            rp = L.sla_matrix_rowptr(M)
            self.rowptr = torch.empty(self.nrows + 1, dtype=torch.int64)
            ctypes.memmove(self.rowptr.data_ptr(), rp, 8 * (self.nrows + 1))
            self.colind = torch.empty(self.nnz, dtype=torch.int64)
            self.rowind = torch.empty(self.nnz, dtype=torch.int64)
            L.sla_matrix_get_colind(M, self.colind.data_ptr())
            L.sla_matrix_get_rowind(M, self.rowind.data_ptr())
        finally:
            L.sla_matrix_destroy(ctypes.byref(M))
        self.coo_map = coo_map
        self.identity = self.nnz == self.nnz_in and bool(
            torch.equal(coo_map, torch.arange(self.nnz_in, dtype=torch.int64)))
        self._solvers = collections.OrderedDict()
        self._matrices = {}
        self._lock = threading.Lock()

    def matches(self, row, col, nrows, ncols):
        """True when this pattern was built from indices equal to row, col
        (any integer dtype) and the shape (nrows, ncols). O(nnz)."""
        if nrows != self.nrows or ncols != self.ncols:
            return False
        if not isinstance(row, torch.Tensor) or not isinstance(col, torch.Tensor):
            return False
        if row.dim() != 1 or col.dim() != 1 or row.numel() != self.nnz_in \
                or col.numel() != self.nnz_in:
            return False
        if row.dtype != torch.int64:
            row = row.to(torch.int64)
        if col.dtype != torch.int64:
            col = col.to(torch.int64)
        if _memcmp is not None and row.is_contiguous() and col.is_contiguous():
            # the common case, without same_bytes' generality (every
            # SparseTensor operation passes here)
            nb = 8 * self.nnz_in
            return nb == 0 or (_memcmp(row.data_ptr(), self._row_in_ptr, nb) == 0
                               and _memcmp(col.data_ptr(), self._col_in_ptr, nb) == 0)
        return same_bytes(row, self.row_in) and same_bytes(col, self.col_in)

    def csr_values(self, values2d):
        """[B, nnz_in] COO values -> [B, nnz] CSR values (differentiable;
        a view when the COO entries are already in CSR order)."""
        if self.identity:
            return values2d
        out = values2d.new_zeros(values2d.shape[0], self.nnz)
        return out.index_add(1, self.coo_map, values2d)  # duplicates summed

    def solver(self, opts, dtype, nbatch, monitor=False):
        key = (opts, dtype, nbatch) + (("monitor",) if monitor else ())
        with self._lock:
            s = self._solvers.get(key)
            if s is None:
                s = self._solvers[key] = Solver(self, opts, dtype, nbatch, monitor)
                while len(self._solvers) > SOLVERS_PER_PATTERN:
                    self._solvers.popitem(last=False)
            else:
                self._solvers.move_to_end(key)
            return s

    def matrix(self, dtype, nbatch):
        """A CMatrix for matrix-vector products (with its lock)."""
        key = (dtype, nbatch)
        with self._lock:
            m = self._matrices.get(key)
            if m is None:
                m = self._matrices[key] = CMatrix(self, dtype, nbatch)
            return m


_C_DTYPES = {torch.float64: L.SLA_F64, torch.float32: L.SLA_F32,
             torch.complex128: L.SLA_C128, torch.complex64: L.SLA_C64}


def c_dtype(dtype):
    """The sla_dtype of a torch dtype (complex values are interleaved (re,
    im) pairs, torch's own layout, so they are borrowed as they are)."""
    d = _C_DTYPES.get(dtype)
    if d is None:
        raise TypeError("sla matrices hold float64, float32, complex128 or complex64 values "
                        "(got %s)" % dtype)
    return d


class CMatrix:
    """An sla_matrix on a pattern that borrows a values tensor [B, nnz]."""

    def __init__(self, pattern, dtype, nbatch):
        self.pattern = pattern
        self.dtype = dtype
        self.nbatch = nbatch
        self.ptr = ctypes.c_void_p()
        self.values = None  # the tensor the C matrix reads (kept alive here)
        self.key = None
        self.snapshot = None
        self.epoch = 0  # bumped by every bind that changed the values
        self.lock = threading.RLock()

    def bind(self, values):
        """Make the C matrix read `values` ([B, nnz] contiguous, this
        matrix's dtype; [nnz] for one matrix). Returns True when the values
        changed."""
        assert values.dtype == self.dtype and values.is_contiguous()
        assert values.numel() == self.nbatch * self.pattern.nnz
        # a contiguous tensor's identity: its memory, version counter and
        # size (the shape does not matter: [nnz] and its [1, nnz] view are
        # the same values, so SolveFn's 1-D fast path and the general path
        # share one binding instead of refactoring in turn)
        key = (values.data_ptr(), values._version, values.numel(), values.dtype)
        # The tensor and its version counter are not enough: writes through
        # .data (torch.autograd.gradcheck perturbs its inputs that way) or a
        # numpy view do not bump the version. In "compare" mode (the default)
        # a copy of the values bound last settles it; "version" mode trusts
        # the key alone (see set_value_check).
        compare = _VALUE_CHECK[0] == "compare"
        if key == self.key and self.ptr.value:
            snap = self.snapshot
            if not compare:
                return False
            if snap is not None and (
                    _memcmp(key[0], snap.data_ptr(), self.nbytes) == 0 if _memcmp is not None
                    else torch.equal(values.view(snap.shape), snap)):
                return False
        p = self.pattern
        if not self.ptr.value:
            L.check(L.sla_matrix_from_csr(L.ctx(), p.nrows, p.ncols, p.rowptr.data_ptr(),
                                          p.colind.data_ptr(), c_dtype(self.dtype), self.nbatch,
                                          values.data_ptr(), L.SLA_BORROW,
                                          ctypes.byref(self.ptr)), "matrix")
        else:
            self.key = None
            L.check(L.sla_matrix_borrow_values(L.ctx(), self.ptr, values.data_ptr()), "matrix")
        self.values, self.key = values, key
        self.snapshot = values.detach().clone() if compare else None
        self.nbytes = values.numel() * values.element_size()
        self.epoch += 1
        return True

    def __del__(self):
        if getattr(self, "ptr", None) is not None and self.ptr.value and L.sla_matrix_destroy:
            L.sla_matrix_destroy(ctypes.byref(self.ptr))


_MONITOR_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int64, ctypes.c_double)


def _set_monitor():
    f = getattr(L.lib, "sla_solver_options_set_monitor", None)
    if f is None:
        raise NotImplementedError("solve(history=True) needs sla_solver_options_set_monitor "
                                  "(include/sla/solver.h), which this libsla (%s) does not "
                                  "export" % L.library_path)
    f.restype = None
    f.argtypes = [ctypes.c_void_p, _MONITOR_FN, ctypes.c_void_p, ctypes.c_int64]
    return f


def _monitor_callback(box):
    """The C monitor: records into box[0] (a list, or None: not recording)."""
    def cb(user, it, rel):
        sink = box[0]
        if sink is not None:
            sink.append((int(it), float(rel)))
        return 0
    return _MONITOR_FN(cb)


class Solver:
    """An sla_solver for one pattern, options string, dtype and batch size."""

    _monitor = None  # the C monitor callback of a solver made with monitor=True

    def __init__(self, pattern, opts, dtype, nbatch, monitor=False):
        self.opts = opts
        self.matrix = CMatrix(pattern, dtype, nbatch)
        self.ptr = ctypes.c_void_p()
        self.lock = self.matrix.lock
        self.nbatch = nbatch
        self.n = pattern.nrows
        self.nnz = pattern.nnz
        self._copts = ctypes.create_string_buffer(L.OPTIONS_BYTES)
        L.sla_solver_options_default(self._copts)
        L.check(L.sla_solver_options_parse(L.ctx(), opts.encode(), self._copts), "options")
        # monitor: a C callback that appends (iteration, relative residual)
        # to self.sink[0] when that is a list (solve(..., history=True))
        self.sink = [None]
        if monitor:
            self._monitor = _monitor_callback(self.sink)
            _set_monitor()(self._copts, self._monitor, None, 0)

    def _create(self):
        self._destroy()
        L.check(L.sla_solver_create(L.ctx(), self.matrix.ptr, self._copts,
                                    ctypes.byref(self.ptr)), "solver set-up")

    def _destroy(self):
        if self.ptr.value:
            L.sla_solver_destroy(ctypes.byref(self.ptr))

    def prepare(self, values):
        """Hold the set-up (factorization / preconditioner) of `values`.
        Call with self.lock held."""
        changed = self.matrix.bind(values)
        if not changed and self.ptr.value:
            return
        try:
            if self.ptr.value:
                # the C refresh checks symmetry and the positive diagonal
                # again and, with method=auto, re-dispatches (a Cholesky that
                # meets an indefinite matrix falls back to LU); an explicit
                # method reports its error
                L.check(L.sla_solver_refresh(L.ctx(), self.ptr), "solver refresh")
            else:
                self._create()
        except BaseException:
            self._destroy()
            self.matrix.key = None  # force a full set-up next time
            raise

    def prepare_again(self, values, epoch):
        """prepare(values) for the backward pass of a forward that prepared
        the same values tensor when self.matrix.epoch was `epoch`. When no
        other values were bound since, the set-up is still that of the
        forward's values and nothing is compared (no O(nnz) check): a write
        through ``.data`` between a forward and its backward is not seen,
        as torch's own saved tensors do not see it, and the backward is
        that of the values the forward solved with. Otherwise prepare(values).
        Call with self.lock held."""
        if self.ptr.value and self.matrix.epoch == epoch:
            return
        self.prepare(values)

    def hierarchy(self, epoch=None, ib=0):
        """The multigrid hierarchy of value array ib's preconditioner
        (sla_solver_hierarchy; precond saamg, also when method auto chose
        it) as a dict, or None: no set-up, another preconditioner or a
        direct method, or (epoch given) values bound since that epoch."""
        h = L.CHierarchyInfo()
        with self.lock:
            if not self.ptr.value or (epoch is not None and self.matrix.epoch != epoch):
                return None
            if L.sla_solver_hierarchy(L.ctx(), self.ptr, ib, ctypes.byref(h)) != 0:
                return None
        n = h.levels
        return {"levels": n, "rows": list(h.rows[:n]), "nnz": list(h.nnz[:n]),
                "p_nnz": list(h.p_nnz[:n]), "operator_complexity": h.operator_complexity,
                "grid_complexity": h.grid_complexity, "coarse_direct": bool(h.coarse_direct)}

    def __del__(self):
        if getattr(self, "ptr", None) is not None and self.ptr.value and L.sla_solver_destroy:
            L.sla_solver_destroy(ctypes.byref(self.ptr))


# ---- options -------------------------------------------------------------

# The friendlier names the binding accepts besides the C library's own
# ("cholmod" for cholesky, "ilu" for ilu0, ...): the aliases of libsla's
# method registry.
def _registry_aliases(precond, defaults):
    out = dict(defaults)
    for d in L.METHODS:
        if (d.kind == L.SLA_KIND_PRECOND) == precond:
            out.update((a, d.name) for a in d.aliases)
    return out


_METHOD_ALIASES = _registry_aliases(False, {None: "auto"})
_PRECOND_ALIASES = _registry_aliases(True, {None: "none", False: "none"})


def options_string(method="auto", preconditioner=None, rtol=None, atol=None, maxiter=None,
                   **extra):
    """The C library's "key=value,..." options string. Unknown keys and
    values are refused by sla_solver_options_parse, naming the nearest."""
    m = _METHOD_ALIASES.get(method, method)
    pc = _PRECOND_ALIASES.get(preconditioner, preconditioner)
    items = [("method", m), ("precond", pc)]
    if rtol is not None:
        items.append(("rtol", float(rtol)))
    if atol is not None:
        items.append(("atol", float(atol)))
    if maxiter is not None:
        items.append(("maxiter", int(maxiter)))
    for k in sorted(extra):
        items.append((k, extra[k]))
    parts = []
    for k, v in items:
        if isinstance(v, bool):
            v = int(v)
        elif isinstance(v, float):
            v = repr(v)
        v = str(v)
        if any(c in v for c in ",= ") or not v:
            raise ValueError("solver option %s: bad value %r" % (k, v))
        parts.append("%s=%s" % (k, v))
    return ",".join(parts)


_OPTIONS_CACHE = {}


def cached_options_string(method, preconditioner, rtol, atol, maxiter):
    """options_string(method or "auto", preconditioner, rtol, atol, maxiter)
    from a small cache (SparseTensor.solve's fast path: the string is built
    once per distinct set of arguments). Unhashable arguments are not
    cached; errors are raised as options_string raises them."""
    if method is None:
        method = "auto"
    key = (method, preconditioner, rtol, atol, maxiter)
    try:
        s = _OPTIONS_CACHE.get(key)
    except TypeError:  # an unhashable argument
        return options_string(method, preconditioner, rtol, atol, maxiter)
    if s is None:
        s = options_string(method, preconditioner, rtol, atol, maxiter)
        if len(_OPTIONS_CACHE) >= 256:
            _OPTIONS_CACHE.clear()
        _OPTIONS_CACHE[key] = s
    return s


# ---- solve reports -------------------------------------------------------


def _s(b):
    return b.decode("utf-8", "replace")


class SolveInfo:
    """The report of a solve (from the C library's sla_solve_info).

    iterations, residual (true ||b - A x|| / ||b||), residual_abs, rhs_norm,
    converged, reason ("converged_rtol", "diverged_maxiter", ...), method,
    preconditioner, backend ("krylov", "cholmod", "umfpack", "klu",
    "superlu"), ordering, factor_nnz, setup_seconds, solve_seconds, rcond
    (direct solves: the backend's reciprocal condition estimate, -1 when
    unknown), backward_error (direct solves: the componentwise backward error
    max_i |b - A x|_i / (|A| |x| + |b|)_i after iterative refinement, -1
    for Krylov), note (dispatch decisions, fallbacks, "warning: nearly
    singular"), hierarchy (precond saamg: a dict of levels, rows, nnz and
    p_nnz per level, operator_complexity, grid_complexity, coarse_direct
    from sla_solver_hierarchy, of the first value array; read from the
    solver when the report is first looked at, None when its values have
    changed since the solve, and for other preconditioners).

    For several right-hand sides or a batch, the fields summarise the worst
    item (largest residual and iteration count, converged only if all did)
    and ``items`` holds one SolveInfo per right-hand side. After a backward
    pass, ``adjoint`` holds the report of the adjoint solves.
    """

    _fields = ("method", "preconditioner", "backend", "iterations", "residual",
               "residual_abs", "rhs_norm", "converged", "reason", "setup_seconds",
               "solve_seconds", "factor_nnz", "ordering", "rcond", "backward_error", "note")

    def __init__(self, **kw):
        for f in self._fields:
            setattr(self, f, kw.get(f))
        self.items = kw.get("items", [])
        self.adjoint = None
        self.hierarchy = kw.get("hierarchy")
        self.history = kw.get("history")  # solve(..., history=True): [(iteration, rel. residual)]

    @classmethod
    def from_c(cls, c):
        return cls(method=_s(c.method), preconditioner=_s(c.precond), backend=_s(c.backend),
                   iterations=int(c.iterations), residual=float(c.residual),
                   residual_abs=float(c.residual_abs), rhs_norm=float(c.rhs_norm),
                   converged=bool(c.converged), reason=_s(L.sla_reason_name(c.reason)),
                   setup_seconds=float(c.setup_seconds), solve_seconds=float(c.solve_seconds),
                   factor_nnz=float(c.factor_nnz), ordering=_s(c.ordering), rcond=float(c.rcond),
                   backward_error=float(c.backward_error), note=_s(c.note))

    @classmethod
    def lazy(cls, cinfos, count, solver=None):
        """combine(cinfos[:count]), built on first access to a field (most
        solves never look at their report: this keeps the per-call cost of
        decoding the C structs out of the hot path). solver: the Solver
        whose hierarchy the report gives (read then, if its values are
        still those of the solve)."""
        return _LazySolveInfo(cinfos, count, solver)

    @classmethod
    def combine(cls, cinfos):
        items = [cls.from_c(c) for c in cinfos]
        if not items:
            return cls(items=[])
        if len(items) == 1:
            one = items[0]
            one.items = [items[0]]
            return one
        worst = max(items, key=lambda i: (not i.converged, i.residual))
        kw = {f: getattr(items[0], f) for f in cls._fields}
        kw.update(iterations=max(i.iterations for i in items), residual=worst.residual,
                  residual_abs=max(i.residual_abs for i in items),
                  rhs_norm=max(i.rhs_norm for i in items),
                  converged=all(i.converged for i in items), reason=worst.reason,
                  rcond=min(i.rcond for i in items),
                  backward_error=max(i.backward_error for i in items),
                  solve_seconds=sum(i.solve_seconds for i in items), items=items)
        return cls(**kw)

    def __repr__(self):
        self.iterations  # noqa: B018 (a lazy report builds itself here)
        s = ("SolveInfo(method=%r, preconditioner=%r, backend=%r, iterations=%d, "
             "residual=%.3e, converged=%r, reason=%r" % (
                 self.method, self.preconditioner, self.backend, self.iterations or 0,
                 self.residual or 0.0, self.converged, self.reason))
        if len(self.items) > 1:
            s += ", items=%d" % len(self.items)
        if self.note:
            s += ", note=%r" % self.note
        return s + ")"


class _LazySolveInfo(SolveInfo):
    """A SolveInfo that decodes its C structs on first access of a field.
    Attributes set before that (``adjoint``) are kept."""

    def __init__(self, cinfos, count, solver=None):
        self.__dict__["_c"] = (cinfos, count)
        if solver is not None:
            self.__dict__["_h"] = (solver, solver.matrix.epoch)

    def __getattr__(self, name):  # only called for attributes not set yet
        c = self.__dict__.pop("_c", None)
        if c is None or name.startswith("__"):
            raise AttributeError(name)
        full = SolveInfo.combine(c[0][:c[1]])
        h = self.__dict__.pop("_h", None)
        if h is not None and full.preconditioner == "saamg" and full.backend == "krylov":
            full.hierarchy = h[0].hierarchy(h[1])
        for k, v in full.__dict__.items():
            self.__dict__.setdefault(k, v)
        if full.items and full.items[0] is full:  # one item: the report is its own item
            self.items = [self]
        return getattr(self, name)
