"""Distributed sparse matrices from Python: ``sla.DSparseTensor`` over the C
MPI layer (include/sla/dist.h), with mpi4py communicators.

    from mpi4py import MPI
    import sla
    D = sla.DSparseTensor.scatter(A if rank == 0 else None, MPI.COMM_WORLD)  # METIS
    D = sla.DSparseTensor.from_local_rows(vals, row, col, n, row_start, comm)
    x = D.solve(b_local, method="cg", preconditioner="jacobi", rtol=1e-10)
    y = D @ x_local
    loss = (w_local * x).sum(); loss.backward()   # on every rank: collective VJPs
    A0 = D.gather()                                # a SparseTensor on rank 0, None elsewhere

Layout (as in the C layer). Rank r owns the rows [row_start, row_start +
nlocal) of the *distributed numbering* and the same entries of every
distributed vector; a matrix partitioned by METIS (``scatter``) is
permuted, and ``global_rows`` gives the original index of each owned row
(``scatter_vector`` / ``gather_vector`` translate). ``values`` are the
rank's own entries: for ``scatter`` and ``load`` in the local CSR order
(row by row, columns increasing; ``pattern()`` gives rowptr and global
columns), for ``from_local_rows`` in the caller's COO order (duplicates
summed).

Collective calls. Everything that touches the C matrix (construction,
``solve``, ``@``, their backward passes, ``save``, ``gather``, the vector
helpers, ``close``) is collective over the communicator: every rank calls
it, in the same order. Autograd follows: ``backward`` must run on every rank
through the same distributed operations, and whether the values and the
right-hand sides require grad must agree across ranks (otherwise one rank
waits in a backward pass another never starts). Each rank's backward on its
local loss gives the gradient of the *sum* of the ranks' losses with respect
to its own values and vector entries. Input errors found in Python on one
rank are agreed on (every rank raises; the others name the failing rank),
as the C layer does, so a bad argument never leaves the other ranks waiting.

mpi4py is imported only when a DSparseTensor is made (``import sla`` never
imports it). libsla must be built with MPI (``sla.has_feature("mpi")``) and
with the same MPI library as mpi4py (checked by the version strings).
"""

import ctypes

import torch
from torch.autograd.function import once_differentiable

from . import _lib as L
from . import _config
from ._core import Pattern, SolveInfo, options_string

c_int64, c_int, c_void_p, c_char_p = L.c_int64, L.c_int, L.c_void_p, L.c_char_p
P = c_void_p
PP = ctypes.POINTER(c_void_p)

_PARTITIONS = {"rows": 0, "block": 0, "metis": 1}


class CDistStats(ctypes.Structure):
    """Mirror of sla_dist_stats (include/sla/dist.h)."""
    _fields_ = [("halo_exchanges", ctypes.c_int64), ("messages", ctypes.c_int64),
                ("bytes_sent", ctypes.c_int64), ("allreduces", ctypes.c_int64),
                ("allreduce_doubles", ctypes.c_int64), ("halo_wait_seconds", ctypes.c_double),
                ("allreduce_seconds", ctypes.c_double)]


# ---- mpi4py and the C functions, found on first use ------------------------

_state = {}


def _mpi():
    """mpi4py's MPI module, or ImportError saying how to get it."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError(
            "sla.DSparseTensor needs mpi4py, which is not importable here (%s): install "
            "Debian's python3-mpi4py (apt-get install python3-mpi4py), or pip's mpi4py "
            "built against the MPI library libsla uses" % e) from e
    return MPI


def _protos(comm_t):
    f = {}

    def proto(name, restype, *argtypes):
        fn = getattr(L.lib, name)
        fn.restype = restype
        fn.argtypes = list(argtypes)
        f[name[4:]] = fn

    proto("sla_dist_matrix_create", c_int, P, comm_t, c_int64, P, P, P, PP)
    proto("sla_dist_matrix_scatter", c_int, P, comm_t, c_int, P, c_int, PP)
    proto("sla_dist_matrix_destroy", None, PP)
    for name in ("n", "nlocal", "row_start", "nnz_local", "nghost"):
        proto("sla_dist_matrix_" + name, c_int64, P)
    proto("sla_dist_matrix_neighbours", c_int, P)
    proto("sla_dist_matrix_global_rows", c_void_p, P)
    proto("sla_dist_matrix_get_pattern", None, P, P, P)
    proto("sla_dist_matrix_get_values", None, P, P)
    proto("sla_dist_matrix_set_values", c_int, P, P, P)
    proto("sla_dist_matvec", c_int, P, P, P, P)
    proto("sla_dist_matvec_transpose", c_int, P, P, P, P)
    proto("sla_dist_matvec_vjp", c_int, P, P, P, P, P, P)
    proto("sla_dist_scatter_vector", c_int, P, P, c_int, P, P)
    proto("sla_dist_gather_vector", c_int, P, P, c_int, P, P)
    proto("sla_dist_gather_values", c_int, P, P, c_int, P, P)
    proto("sla_dist_matrix_stats", None, P, P)
    proto("sla_dist_matrix_stats_reset", None, P)
    proto("sla_dist_solver_create", c_int, P, P, P, PP)
    proto("sla_dist_solver_refresh", c_int, P, P)
    proto("sla_dist_solver_destroy", None, PP)
    proto("sla_dist_solver_solve", c_int, P, P, P, P, P)
    proto("sla_dist_solver_solve_vjp", c_int, P, P, P, P, P, P, P)
    proto("sla_dist_matrix_save", c_int, P, P, c_char_p)
    proto("sla_dist_matrix_load", c_int, P, comm_t, c_char_p, PP)
    return f


def _api():
    """(MPI, the C functions, handle(comm)): mpi4py, libsla's distributed
    layer and the check that both use the same MPI library."""
    if "api" in _state:
        return _state["api"]
    if not L.has_feature("mpi") or getattr(L.lib, "sla_dist_matrix_create", None) is None:
        raise L.SlaUnavailableError(
            -10, "this libsla (%s) was built without MPI, so it has no distributed layer "
            "(include/sla/dist.h): install libopenmpi-dev and rebuild (CMake finds MPI; "
            "SLA_WITH_MPI=ON)" % L.library_path, "sla.DSparseTensor")
    MPI = _mpi()
    theirs = MPI.Get_library_version().strip("\x00 \n")
    buf = ctypes.create_string_buffer(8192)
    blen = ctypes.c_int(0)
    getver = getattr(L.lib, "MPI_Get_library_version", None)
    if getver is not None:
        getver.restype = c_int
        getver.argtypes = [c_char_p, ctypes.POINTER(c_int)]
        getver(buf, ctypes.byref(blen))
        ours = buf.value.decode("utf-8", "replace").strip("\x00 \n")
        if ours != theirs:
            raise L.SlaUnavailableError(
                -10, "libsla (%s) uses the MPI library %r but mpi4py uses %r: both must use "
                "the same MPI (Debian's python3-mpi4py and libopenmpi-dev do)"
                % (L.library_path, ours[:80], theirs[:80]), "sla.DSparseTensor")
    # MPI_Comm is a pointer in Open MPI, an int in MPICH and its relatives
    comm_t = c_int if theirs.startswith(("MPICH", "Intel", "MVAPICH", "CRAY")) else c_void_p
    api = (MPI, _protos(comm_t), comm_t)
    _state["api"] = api
    return api


def _handle(comm):
    """The C MPI_Comm of an mpi4py communicator, as the ctypes value C takes."""
    MPI, _, comm_t = _api()
    if not isinstance(comm, MPI.Comm):
        raise TypeError("comm must be an mpi4py communicator (got %r)" % type(comm).__name__)
    return comm_t(MPI._handleof(comm))


def _agree(comm, err):
    """Raise on every rank when err (an exception, or None) is set on any:
    the failing rank raises its own, the others the lowest failing rank's
    kind of error with its message prefixed by "rank r: "."""
    mine = None
    if err is not None:
        mine = (type(err), getattr(err, "status", None), getattr(err, "message", None) or str(err))
    errs = comm.allgather(mine)
    if err is not None:
        raise err
    for r, e in enumerate(errs):
        if e is None:
            continue
        cls, status, msg = e
        msg = "rank %d: %s" % (r, msg)
        if issubclass(cls, L.SlaError):
            raise cls(status, msg)
        if issubclass(cls, (ValueError, TypeError, IndexError)):
            raise cls(msg)
        raise RuntimeError(msg)


def _try(fn):
    """(fn(), None) or (None, the exception fn raised)."""
    try:
        return fn(), None
    except (ValueError, TypeError, IndexError, L.SlaError) as e:
        return None, e


def _i64(ptr_fn, D, count):
    out = torch.empty(count, dtype=torch.int64)
    if count:
        ctypes.memmove(out.data_ptr(), ptr_fn(D), 8 * count)
    return out


# ---- the C objects ---------------------------------------------------------


class _DCore:
    """One sla_dist_matrix (its pattern is fixed), the values it holds and
    the distributed solvers made on it (one per options string)."""

    def __init__(self, comm, ptr, src_nnz=None):
        self.comm = comm
        self.ptr = ptr
        self.f = _api()[1]
        f, D = self.f, ptr
        self.n = int(f["dist_matrix_n"](D))
        self.nlocal = int(f["dist_matrix_nlocal"](D))
        self.row_start = int(f["dist_matrix_row_start"](D))
        self.nnz_local = int(f["dist_matrix_nnz_local"](D))
        self.global_rows = _i64(f["dist_matrix_global_rows"], D, self.nlocal)
        self.rowptr = torch.empty(self.nlocal + 1, dtype=torch.int64)
        self.colind = torch.empty(self.nnz_local, dtype=torch.int64)
        f["dist_matrix_get_pattern"](D, self.rowptr.data_ptr(), self.colind.data_ptr())
        self.src_nnz = src_nnz
        self.snapshot = torch.empty(self.nnz_local, dtype=torch.float64)
        f["dist_matrix_get_values"](D, self.snapshot.data_ptr())
        self.solvers = {}  # opts -> [sla_dist_solver*, options block, stale]
        self.auto = None   # method=auto's choice for the values held

    def initial_values(self):
        return self.snapshot.clone()

    def bind(self, vals):
        """Make the C matrix hold vals (nnz_local float64 contiguous, local
        CSR order). Collective: the ranks agree whether any value changed."""
        changed = not torch.equal(vals, self.snapshot)
        MPI = _api()[0]
        if not self.comm.allreduce(int(changed), op=MPI.MAX):
            return
        L.check(self.f["dist_matrix_set_values"](L.ctx(), self.ptr, vals.data_ptr()),
                "DSparseTensor values")
        self.snapshot = vals.detach().clone()
        self.auto = None
        for s in self.solvers.values():
            s[2] = True

    def solver(self, opts):
        """The sla_dist_solver for opts, holding the bound values (collective)."""
        s = self.solvers.get(opts)
        if s is None:
            copts = ctypes.create_string_buffer(L.OPTIONS_BYTES)
            L.sla_solver_options_default(copts)
            # the same string on every rank, so the same verdict
            L.check(L.sla_solver_options_parse(L.ctx(), opts.encode(), copts),
                    "DSparseTensor.solve options")
            p = c_void_p()
            L.check(self.f["dist_solver_create"](L.ctx(), self.ptr, copts, ctypes.byref(p)),
                    "DSparseTensor.solve set-up")
            s = self.solvers[opts] = [p, copts, False]
        elif s[2]:
            st = self.f["dist_solver_refresh"](L.ctx(), s[0])
            if st < 0:
                self.f["dist_solver_destroy"](ctypes.byref(s[0]))
                del self.solvers[opts]
                L.check(st, "DSparseTensor.solve refresh")
            s[2] = False
        return s[0]

    def close(self):
        """Free the C objects (collective: the communicator duplicate).
        After MPI_Finalize (interpreter exit: mpi4py finalizes first) they
        are left to the process's end: hypre's clean-up may call MPI."""
        f = getattr(self, "f", None)
        ptr = getattr(self, "ptr", None)
        if f is None or ptr is None or not ptr.value:
            return
        st = _state.get("api")
        if st is None or st[0].Is_finalized():
            return
        for s in getattr(self, "solvers", {}).values():
            if s[0].value:
                f["dist_solver_destroy"](ctypes.byref(s[0]))
        self.solvers = {}
        f["dist_matrix_destroy"](ctypes.byref(ptr))

    __del__ = close


def _cols(t, nlocal, name):
    """A local vector (nlocal,) or block (nlocal, k) -> ([k, nlocal] float64
    contiguous, unflatten)."""
    if not isinstance(t, torch.Tensor):
        t = torch.as_tensor(t, dtype=torch.float64)
    if t.device.type != "cpu":
        raise ValueError("%s must be a CPU tensor" % name)
    if t.is_complex():
        raise TypeError("%s: the distributed layer is real (float64); got %s" % (name, t.dtype))
    if t.dim() == 1 and t.shape[0] == nlocal:
        return t.reshape(1, nlocal).to(torch.float64).contiguous(), lambda y: y.reshape(nlocal)
    if t.dim() == 2 and t.shape[0] == nlocal:
        return t.t().to(torch.float64).contiguous(), lambda y: y.t()
    raise ValueError("%s has shape %s; expected this rank's (%d,) or (%d, k)"
                     % (name, tuple(t.shape), nlocal, nlocal))


def _warn(st, info, what):
    from ._functions import _warn_if_not_converged
    _warn_if_not_converged(st, info, what)


# ---- autograd functions ------------------------------------------------------


class _DSolveFn(torch.autograd.Function):
    """x = A^-1 b on every rank, VJP by sla_dist_solver_solve_vjp."""

    @staticmethod
    def forward(ctx, vals, b2, core, opts, box):
        core.bind(vals)
        S = core.solver(opts)
        k, nl = b2.shape
        x2 = torch.empty_like(b2)
        infos = (L.CSolveInfo * k)()
        st = 0
        for j in range(k):
            st = max(st, L.check(core.f["dist_solver_solve"](
                L.ctx(), S, b2[j].data_ptr(), x2[j].data_ptr(), ctypes.byref(infos[j])),
                "DSparseTensor.solve"))
        info = SolveInfo.combine(infos[:k])
        if box.get("note"):
            info.note = (box["note"] + "; " + info.note) if info.note else box["note"]
        box["info"] = info
        if not box.get("quiet"):
            _warn(st, info, "distributed solve")
        ctx.core, ctx.opts, ctx.box = core, opts, box
        ctx.save_for_backward(vals, x2)
        return x2

    @staticmethod
    @once_differentiable
    def backward(ctx, gx2):
        vals, x2 = ctx.saved_tensors
        core = ctx.core
        gx2 = gx2.to(torch.float64).contiguous()
        core.bind(vals)  # no-op unless the matrix took other values since the forward
        S = core.solver(ctx.opts)
        k = x2.shape[0]
        # both gradients on every rank: the C VJP wants an output given on all
        # ranks or on none, and needs_input_grad may differ between ranks
        gb2 = torch.empty_like(x2)
        gA = torch.zeros(core.nnz_local, dtype=torch.float64)
        g1 = torch.empty_like(gA) if k > 1 else gA
        infos = (L.CSolveInfo * k)()
        st = 0
        for j in range(k):
            st = max(st, L.check(core.f["dist_solver_solve_vjp"](
                L.ctx(), S, x2[j].data_ptr(), gx2[j].data_ptr(), gb2[j].data_ptr(),
                g1.data_ptr(), ctypes.byref(infos[j])), "DSparseTensor.solve backward"))
            if k > 1:
                gA += g1
        info = SolveInfo.combine(infos[:k])
        fwd = ctx.box.get("info")
        if fwd is not None:
            fwd.adjoint = info
        _warn(st, info, "distributed adjoint solve")
        return gA, gb2, None, None, None


def _matvec_vjp(core, x2, gy2):
    """gvals = sum_j gy_j[row] x_j[col] on the local pattern (collective)."""
    k = x2.shape[0]
    gA = torch.zeros(core.nnz_local, dtype=torch.float64)
    g1 = torch.empty_like(gA) if k > 1 else gA
    for j in range(k):
        L.check(core.f["dist_matvec_vjp"](L.ctx(), core.ptr, x2[j].data_ptr(), gy2[j].data_ptr(),
                                          None, g1.data_ptr()), "DSparseTensor matvec backward")
        if k > 1:
            gA += g1
    return gA


def _products(core, x2, transpose):
    y2 = torch.empty_like(x2)
    fn = core.f["dist_matvec_transpose" if transpose else "dist_matvec"]
    for j in range(x2.shape[0]):
        L.check(fn(L.ctx(), core.ptr, x2[j].data_ptr(), y2[j].data_ptr()), "DSparseTensor matvec")
    return y2


class _DMatvecFn(torch.autograd.Function):
    """y = A x (or A^T x) on every rank; VJPs by sla_dist_matvec_vjp."""

    @staticmethod
    def forward(ctx, vals, x2, core, transpose):
        core.bind(vals)
        y2 = _products(core, x2, transpose)
        ctx.core, ctx.transpose = core, transpose
        ctx.save_for_backward(vals, x2)
        return y2

    @staticmethod
    @once_differentiable
    def backward(ctx, gy2):
        vals, x2 = ctx.saved_tensors
        core = ctx.core
        gy2 = gy2.to(torch.float64).contiguous()
        core.bind(vals)
        if ctx.transpose:
            # y = A^T x: gx = A gy, gA[k] = x[row_k] gy[col_k]
            gx2 = _products(core, gy2, False)
            gA = _matvec_vjp(core, gy2, x2)
        else:
            gx2 = _products(core, gy2, True)
            gA = _matvec_vjp(core, x2, gy2)
        return gA, gx2, None, None


# ---- the user-facing class ---------------------------------------------------


class DSparseTensor:
    """A square sparse matrix distributed by rows over the ranks of an
    mpi4py communicator (the C layer's sla_dist_matrix). See the module
    docstring for the layout and the collective-call rules.

    Make one with ``from_local_rows``, ``scatter`` or ``load``; each rank's
    ``values`` (float64, differentiable) are its own entries. ``solve`` and
    ``@`` take and return this rank's part of a distributed vector: shape
    (nlocal,) or (nlocal, k).
    """

    def __init__(self, core, values, pattern=None):
        self._core = core
        self._pattern = pattern  # COO -> local CSR (from_local_rows), else None
        self.values = values

    # ---- construction ---------------------------------------------------

    @classmethod
    def from_local_rows(cls, values, row, col, n_global, row_start, comm):
        """This rank's rows of an n_global x n_global matrix, as COO entries
        (values[k] at (row[k], col[k]); duplicates summed) with *global* row
        indices in [row_start, row_start + nlocal) and global columns.
        Rank r owns the rows from its row_start up to the next rank's
        (n_global for the last rank): row_start is 0 on rank 0 and
        increases with the rank; every rank owns at least one row.
        values (float64 or float32, any requires_grad) are kept: gradients
        flow to them."""
        _api()
        rank, size = comm.Get_rank(), comm.Get_size()
        starts = comm.allgather((int(row_start), int(n_global)))
        err = None
        if any(s[1] != starts[0][1] for s in starts):
            err = ValueError("from_local_rows: n_global differs between ranks (%s)"
                             % [s[1] for s in starts])
        elif starts[0][0] != 0 or any(starts[r + 1][0] < starts[r][0] for r in range(size - 1)) \
                or starts[-1][0] > starts[0][1]:
            err = ValueError("from_local_rows: row_start must be 0 on rank 0 and increase with "
                             "the rank up to n_global = %d (got %s)"
                             % (starts[0][1], [s[0] for s in starts]))
        _agree(comm, err if rank == 0 else None)
        n = int(n_global)
        lo = int(row_start)
        hi = starts[rank + 1][0] if rank + 1 < size else n
        nlocal = hi - lo

        def build():
            v = values if isinstance(values, torch.Tensor) else torch.as_tensor(
                values, dtype=torch.float64)
            if v.dtype not in (torch.float64, torch.float32) or v.dim() != 1:
                raise TypeError("from_local_rows: values must be a 1-D float64 or float32 "
                                "tensor (got %s of shape %s)" % (v.dtype, tuple(v.shape)))
            r = torch.as_tensor(row)
            c = torch.as_tensor(col)
            if r.dim() != 1 or c.dim() != 1 or r.numel() != v.numel() or c.numel() != v.numel():
                raise ValueError("from_local_rows: values, row and col must be 1-D of one "
                                 "length (got %s, %s, %s)" % (tuple(v.shape), tuple(r.shape),
                                                              tuple(c.shape)))
            r = r.to(torch.int64)
            if r.numel() and (int(r.min()) < lo or int(r.max()) >= hi):
                bad = r[(r < lo) | (r >= hi)][0]
                raise IndexError("from_local_rows: row %d is not one of this rank's rows "
                                 "[%d, %d)" % (int(bad), lo, hi))
            pat = Pattern(r - lo, c, max(nlocal, 0), n) if nlocal > 0 else None
            return v, pat

        got, err = _try(build)
        _agree(comm, err)
        v, pat = got
        csr = (pat.csr_values(v.detach().to(torch.float64).reshape(1, -1))[0].contiguous()
               if pat is not None else torch.zeros(0, dtype=torch.float64))
        rowptr = pat.rowptr if pat is not None else torch.zeros(1, dtype=torch.int64)
        colind = pat.colind if pat is not None else torch.zeros(0, dtype=torch.int64)
        p = c_void_p()
        f = _api()[1]
        L.check(f["dist_matrix_create"](L.ctx(), _handle(comm), nlocal, rowptr.data_ptr(),
                                        colind.data_ptr(), csr.data_ptr(), ctypes.byref(p)),
                "DSparseTensor.from_local_rows")
        return cls(_DCore(comm, p), v, pat)

    @classmethod
    def scatter(cls, A, comm, partition="metis", root=0):
        """Partition the square real matrix A (a SparseTensor or a
        scipy.sparse matrix, read on `root` only; pass None elsewhere) and
        distribute its rows: partition "metis" (METIS on the graph of
        A + A^T; the rows are renumbered part by part) or "rows" (contiguous
        blocks, no renumbering). The local values are a fresh leaf tensor:
        set requires_grad on them for gradients (``gather_values`` brings a
        gradient back to root in A's CSR order)."""
        _api()
        rank = comm.Get_rank()
        part = _PARTITIONS.get(partition)
        err = None
        if part is None:
            err = ValueError("scatter: partition must be 'metis' or 'rows' (got %r)" % (partition,))
        elif not 0 <= int(root) < comm.Get_size():
            err = ValueError("scatter: root %r is not a rank of the communicator" % (root,))
        _agree(comm, err if rank == 0 else None)
        M = c_void_p()
        keep = None

        def prepare():
            from .sparse import SparseTensor
            S = A
            if S is None:
                raise ValueError("scatter: A is None on the root (rank %d)" % root)
            if not isinstance(S, SparseTensor):
                S = SparseTensor.from_scipy(S)
            if S.is_batched or S.is_complex or S.shape[0] != S.shape[1]:
                raise ValueError("scatter: A must be one square real matrix (got shape %s, %s)"
                                 % (S.shape, S.dtype))
            pat = S.pattern
            v = pat.csr_values(S.values.detach().to(torch.float64).reshape(1, -1)).contiguous()
            L.check(L.sla_matrix_from_csr(L.ctx(), pat.nrows, pat.ncols, pat.rowptr.data_ptr(),
                                          pat.colind.data_ptr(), L.SLA_F64, 1, v.data_ptr(),
                                          L.SLA_COPY, ctypes.byref(M)), "scatter")
            return (pat, v)

        if rank == root:
            keep, err = _try(prepare)
        else:
            err = None
        _agree(comm, err)
        try:
            p = c_void_p()
            st = _api()[1]["dist_matrix_scatter"](L.ctx(), _handle(comm), int(root),
                                                 M if rank == root else None, part,
                                                 ctypes.byref(p))
        finally:
            if M.value:
                L.sla_matrix_destroy(ctypes.byref(M))
        L.check(st, "DSparseTensor.scatter")
        src_nnz = comm.bcast(keep[0].nnz if keep is not None else None, root=root)
        core = _DCore(comm, p, src_nnz)
        return cls(core, core.initial_values())

    @classmethod
    def load(cls, prefix, comm):
        """A matrix saved by ``save`` (or the C sla_dist_matrix_save), onto
        the ranks of comm (their number may differ from the saving run's):
        contiguous blocks of the saved numbering, original rows kept."""
        f = _api()[1]
        p = c_void_p()
        L.check(f["dist_matrix_load"](L.ctx(), _handle(comm), str(prefix).encode(),
                                      ctypes.byref(p)), "DSparseTensor.load")
        core = _DCore(comm, p)
        return cls(core, core.initial_values())

    def with_values(self, values):
        """The same distributed pattern (and C matrix, solvers) with new
        local values (the shape of ``values``)."""
        if tuple(values.shape) != tuple(self.values.shape):
            raise ValueError("with_values: shape %s, expected %s"
                             % (tuple(values.shape), tuple(self.values.shape)))
        return DSparseTensor(self._core, values, self._pattern)

    def detach(self):
        return self.with_values(self.values.detach())

    def close(self):
        """Free the C matrix and solvers now (collective). Also happens when
        the last DSparseTensor on them is garbage collected; call close()
        where ranks could collect at different times."""
        self._core.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- structure ------------------------------------------------------

    @property
    def comm(self):
        return self._core.comm

    @property
    def shape(self):
        return (self._core.n, self._core.n)

    @property
    def n(self):
        return self._core.n

    @property
    def nlocal(self):
        return self._core.nlocal

    @property
    def row_start(self):
        return self._core.row_start

    @property
    def nnz_local(self):
        return self._core.nnz_local

    @property
    def global_rows(self):
        """The original (pre-partition) index of each owned row."""
        return self._core.global_rows

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def requires_grad(self):
        return self.values.requires_grad

    @property
    def nghost(self):
        return int(self._core.f["dist_matrix_nghost"](self._core.ptr))

    @property
    def neighbours(self):
        return int(self._core.f["dist_matrix_neighbours"](self._core.ptr))

    def pattern(self):
        """(rowptr (nlocal + 1), global columns (nnz_local)) of the local CSR,
        in the distributed numbering."""
        return self._core.rowptr, self._core.colind

    def stats(self, reset=False):
        """The C layer's communication counters of this matrix (a dict)."""
        s = CDistStats()
        self._core.f["dist_matrix_stats"](self._core.ptr, ctypes.byref(s))
        if reset:
            self._core.f["dist_matrix_stats_reset"](self._core.ptr)
        return {k: getattr(s, k) for k, _ in CDistStats._fields_}

    def __repr__(self):
        return "DSparseTensor(shape=%s, rank=%d/%d, nlocal=%d, nnz_local=%d%s)" % (
            self.shape, self.comm.Get_rank(), self.comm.Get_size(), self.nlocal,
            self.nnz_local, ", requires_grad=True" if self.requires_grad else "")

    def _csr(self):
        """The local values in the C matrix's order, float64 (differentiable)."""
        v = self.values
        if self._pattern is not None:
            return self._pattern.csr_values(v.reshape(1, -1))[0].to(torch.float64).contiguous()
        if tuple(v.shape) != (self._core.nnz_local,):
            raise ValueError("DSparseTensor values have shape %s, expected (%d,)"
                             % (tuple(v.shape), self._core.nnz_local))
        return v.to(torch.float64).contiguous()

    # ---- operations -------------------------------------------------------

    def _auto(self, vals):
        """method=auto: cg for a symmetric matrix with a positive diagonal,
        minres for another symmetric one, gmres otherwise. Symmetry is
        tested by ||A x - A^T x|| <= 1e-12 ||A x|| for a random x (a
        nonsymmetric A fails it with probability 1); collective."""
        core = self._core
        core.bind(vals)
        if core.auto is None:
            MPI = _api()[0]
            g = torch.Generator().manual_seed(20240 + self.comm.Get_rank())
            x = torch.rand(1, core.nlocal, generator=g, dtype=torch.float64) + 0.5
            d = _products(core, x, False) - _products(core, x, True)
            a = _products(core, x, False)
            num, den = self.comm.allreduce(
                torch.stack([(d * d).sum(), (a * a).sum()]).numpy(), op=MPI.SUM)
            sym = bool(num <= (1e-12 ** 2) * den)
            rows = torch.repeat_interleave(torch.arange(core.nlocal),
                                           core.rowptr[1:] - core.rowptr[:-1])
            on = core.colind == rows + core.row_start
            diag = torch.zeros(core.nlocal, dtype=torch.float64).index_add_(
                0, rows[on], core.snapshot[on])
            pos = self.comm.allreduce(bool((diag > 0).all()), op=MPI.LAND)
            method = "cg" if sym and pos else "minres" if sym else "gmres"
            what = ("symmetric, positive diagonal" if sym and pos else
                    "symmetric" if sym else "nonsymmetric")
            core.auto = (method, "auto: %s -> %s (distributed)" % (what, method))
        return core.auto

    def solve(self, b, method=None, preconditioner=None, rtol=None, atol=None, maxiter=None,
              return_info=False, **options):
        """x with A x = b (collective): b and x are this rank's parts,
        (nlocal,) or (nlocal, k). method: cg, bicgstab, gmres, minres or
        auto (None; cg / minres / gmres from a symmetry test and the
        diagonal, see the info's note); preconditioner: None, jacobi, amg
        (hypre BoomerAMG over all ranks), saamg (sla's smoothed
        aggregation as one hierarchy over all ranks; symmetric matrices),
        ilu0 / ilut / ic0 / ssor (block
        Jacobi on each rank's diagonal block); rtol, atol, maxiter and
        further keys of the C options string, as SparseTensor.solve (and
        the active sla.SolverConfig). Differentiable in values and b
        through sla_dist_solver_solve_vjp (backward on every rank)."""
        method, preconditioner, rtol, atol, maxiter, options = _config.resolve(
            method, preconditioner, rtol, atol, maxiter, options)
        vals = self._csr()
        b2, unflatten = _cols(b, self.nlocal, "b")
        box = {"quiet": return_info}
        if method == "auto":
            method, box["note"] = self._auto(vals.detach())
        opts = options_string(method, preconditioner, rtol, atol, maxiter, **options)
        x2 = _DSolveFn.apply(vals, b2, self._core, opts, box)
        x = unflatten(x2)
        return (x, box["info"]) if return_info else x

    def matvec(self, x, transpose=False):
        """A x (or A^T x) for this rank's part x, (nlocal,) or (nlocal, k);
        collective, differentiable in values and x."""
        x2, unflatten = _cols(x, self.nlocal, "x")
        return unflatten(_DMatvecFn.apply(self._csr(), x2, self._core, bool(transpose)))

    def __matmul__(self, x):
        return self.matvec(x)

    def eigsh(self, k=6, **kw):
        """Not available: the C distributed layer (include/sla/dist.h) has no
        eigensolver."""
        raise NotImplementedError(
            "DSparseTensor.eigsh: libsla's distributed layer (include/sla/dist.h) has no "
            "eigensolver; gather() the matrix to one rank and use SparseTensor.eigsh there")

    # ---- between the root and the distributed numbering -------------------

    def scatter_vector(self, x, root=0):
        """This rank's part of the global vector x (n,), given on root (the
        original numbering; None elsewhere). Collective, not differentiable."""
        core = self._core
        rank = self.comm.Get_rank()
        xg = None
        if rank == root:
            xg, err = _try(lambda: _global_vector(x, core.n))
        else:
            err = None
        _agree(self.comm, err)
        out = torch.empty(core.nlocal, dtype=torch.float64)
        L.check(core.f["dist_scatter_vector"](L.ctx(), core.ptr, int(root),
                                              xg.data_ptr() if xg is not None else None,
                                              out.data_ptr()), "scatter_vector")
        return out

    def gather_vector(self, x_local, root=0):
        """The global vector (n,) in the original numbering on root (None
        elsewhere) from each rank's part. Collective, not differentiable."""
        core = self._core
        xl, err = _try(lambda: _cols(x_local.detach() if isinstance(x_local, torch.Tensor)
                                     else x_local, core.nlocal, "x_local")[0])
        if err is None and xl.shape[0] != 1:
            err = ValueError("gather_vector: one vector (nlocal,), got %d columns" % xl.shape[0])
        _agree(self.comm, err)
        is_root = self.comm.Get_rank() == root
        out = torch.empty(core.n if is_root else 0, dtype=torch.float64)
        L.check(core.f["dist_gather_vector"](L.ctx(), core.ptr, int(root), xl.data_ptr(),
                                             out.data_ptr() if is_root else None),
                "gather_vector")
        return out if is_root else None

    def gather_values(self, vals=None, root=0):
        """Local pattern values (default: this matrix's; e.g. a gradient)
        onto root: for a scattered matrix in the CSR order of the source
        matrix, otherwise the ranks' local CSR arrays one after another.
        None elsewhere. Collective, not differentiable."""
        core = self._core
        v = self._csr().detach() if vals is None else vals.detach().to(torch.float64).contiguous()
        err = None
        if tuple(v.shape) != (core.nnz_local,):
            err = ValueError("gather_values: shape %s, expected (%d,) (the local CSR order)"
                             % (tuple(v.shape), core.nnz_local))
        _agree(self.comm, err)
        MPI = _api()[0]
        total = core.src_nnz if core.src_nnz is not None else self.comm.allreduce(
            core.nnz_local, op=MPI.SUM)
        is_root = self.comm.Get_rank() == root
        out = torch.empty(total if is_root else 0, dtype=torch.float64)
        L.check(core.f["dist_gather_values"](L.ctx(), core.ptr, int(root), v.data_ptr(),
                                             out.data_ptr() if is_root else None),
                "gather_values")
        return out if is_root else None

    def gather(self, root=0):
        """The whole matrix on root as a SparseTensor in the original
        numbering (entries in CSR order), None elsewhere. Collective; the
        values are a copy (not differentiable)."""
        import numpy as np
        core = self._core
        comm = self.comm
        vals = self._csr().detach().numpy()
        rows = torch.repeat_interleave(core.global_rows,
                                       core.rowptr[1:] - core.rowptr[:-1]).numpy()
        perm = comm.gather(core.global_rows.numpy(), root=root)  # distributed -> original
        parts = comm.gather((rows, core.colind.numpy(), vals), root=root)
        if comm.Get_rank() != root:
            return None
        from .sparse import SparseTensor
        perm = np.concatenate(perm)
        r = np.concatenate([p[0] for p in parts])
        c = perm[np.concatenate([p[1] for p in parts])]
        v = np.concatenate([p[2] for p in parts])
        order = np.lexsort((c, r))
        return SparseTensor(torch.from_numpy(np.ascontiguousarray(v[order])),
                            torch.from_numpy(np.ascontiguousarray(r[order])),
                            torch.from_numpy(np.ascontiguousarray(c[order])), (core.n, core.n))

    # ---- files --------------------------------------------------------------

    def save(self, prefix):
        """``prefix.meta`` plus one Matrix Market piece per rank (the C
        layer's sla_dist_matrix_save; the current values). Collective."""
        core = self._core
        core.bind(self._csr().detach())
        L.check(core.f["dist_matrix_save"](L.ctx(), core.ptr, str(prefix).encode()),
                "DSparseTensor.save")


def _global_vector(x, n):
    x = torch.as_tensor(x).detach()
    if x.is_complex() or tuple(x.shape) != (n,):
        raise ValueError("scatter_vector: x must be a real vector of shape (%d,) on the root "
                         "(got %s)" % (n, tuple(x.shape)))
    return x.to(torch.float64).contiguous()
