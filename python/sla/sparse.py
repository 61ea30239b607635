"""The user-facing API: SparseTensor, SparseTensorList and functions."""

import ctypes
import math
import threading

import torch

from . import _lib as L
from . import _core
from . import _config
from . import _factories
from . import _structure
from ._core import SolveInfo, options_string
from . import _functions
from . import _algebra
from . import _complex
from . import _list
from . import _partition
from ._functions import Diffusion2dFn, ListSolveFn, LogdetFn, MatvecFn, SolveFn


_WHICH = {"LA": 0, "SA": 1, "LM": 2, "SM": 3}
# eigsh's factorizations: auto and the direct methods, with their sla_method
# values from libsla's method registry
_FACTOR_METHODS = {"auto": 0, None: 0}
_FACTOR_METHODS.update((d.name, d.value) for d in L.METHODS if d.kind == L.SLA_KIND_DIRECT)


def _prod(shape):
    return int(math.prod(shape)) if shape else 1


def _out_dtype(vdtype, other):
    if other.dtype.is_floating_point:
        return torch.promote_types(vdtype, other.dtype)
    return vdtype


def _connected(out, *inputs):
    """out (a constant result of a degenerate case: a 0-size batch, a matrix
    without entries) joined to the autograd graph of inputs, which must have
    no elements (their sum is exactly 0), so backward gives them empty
    gradients of their own shapes instead of failing."""
    for t in inputs:
        if isinstance(t, torch.Tensor) and t.requires_grad and torch.is_grad_enabled():
            out = out + (t.sum() * 0).to(out.dtype)
    return out


def _check_cpu(t, name):
    if t.device.type != "cpu":
        raise ValueError("%s must be a CPU tensor (sla runs on the CPU; use .cpu())" % name)


def _canonical_rhs(b, batch_shape, n, name="b", dtype=torch.float64):
    """b -> ([B, k, n] contiguous of dtype (float64; complex128 for the
    complex path), unflatten(y3) -> user shape).

    Accepted: batch + (n,) (one vector per value array), batch + (n, k)
    (k columns), and, for a batched matrix, (n,) or (n, k) shared by the
    whole batch. The reshapes and the cast are torch ops, so autograd sums
    the gradient of a shared right-hand side over the batch."""
    if not isinstance(b, torch.Tensor):
        b = torch.as_tensor(b, dtype=torch.float64)
    _check_cpu(b, name)
    if b.is_complex() and not dtype.is_complex:
        raise TypeError("%s: a complex tensor for a real-only operation" % name)
    bs = tuple(batch_shape)
    B = _prod(bs)
    shape = tuple(b.shape)
    if len(shape) >= 1 and shape[-1] == n and shape[:-1] == bs:
        b3 = b.reshape(B, 1, n)
        vec = True
    elif len(shape) >= 2 and shape[-2] == n and shape[:-2] == bs:
        b3 = b.reshape(B, n, shape[-1]).transpose(1, 2)
        vec = False
    elif bs and shape == (n,):
        b3 = b.reshape(1, 1, n).expand(B, 1, n)
        vec = True
    elif bs and len(shape) == 2 and shape[0] == n:
        b3 = b.t().reshape(1, shape[1], n).expand(B, shape[1], n)
        vec = False
    else:
        want = "%s or %s" % (bs + (n,), bs + (n, "k"))
        if bs:
            want += ", or (%d,) / (%d, k) shared by the batch" % (n, n)
        raise ValueError("%s has shape %s; expected %s" % (name, shape, want))
    b3 = _complex.c_ready(b3, dtype) if dtype.is_complex else b3.to(dtype).contiguous()

    def unflatten(y3):
        r = y3.shape[-1]
        if vec:
            return y3.reshape(bs + (r,))
        return y3.transpose(1, 2).reshape(bs + (r, y3.shape[1]))

    return b3, unflatten


def _checked_values(values, shape):
    """SparseTensor's checks of values and shape: (values as a tensor, its
    batch shape, shape as a tuple of ints)."""
    if not isinstance(values, torch.Tensor):
        values = torch.as_tensor(values, dtype=torch.float64)
    _check_cpu(values, "values")
    if values.dtype not in (torch.float64, torch.float32, torch.complex128, torch.complex64):
        raise TypeError("values must be float64 or float32 (real), complex128 or complex64 "
                        "(got %s)" % values.dtype)
    if values.dim() < 1:
        raise ValueError("values must have shape [*batch, nnz] (got a scalar)")
    shape = tuple(int(s) for s in shape)
    if len(shape) < 2:
        raise ValueError("shape must be (M, N) or (*batch, M, N) (got %s)" % (shape,))
    batch = tuple(values.shape[:-1])
    if len(shape) > 2 and shape[:-2] != batch:
        raise ValueError("shape %s says batch %s but values have shape %s"
                         % (shape, shape[:-2], tuple(values.shape)))
    if min(shape) < 0:
        raise ValueError("shape must be non-negative (got %s)" % (shape,))
    return values, batch, shape


class SparseTensor:
    """A sparse matrix, or a batch of matrices on one pattern, for PyTorch.

    ``SparseTensor(values, row, col, shape)``: COO entries (row[k], col[k])
    with values[..., k]; duplicates are summed. ``values`` is float64,
    float32, complex128 or complex64 (see sla._complex for what complex
    matrices support) with shape [*batch, nnz]; ``shape`` is (M, N) or
    (*batch, M, N).
    Gradients flow to ``values`` (and to right-hand sides) through solve,
    matvec and the other operations, computed by the C library's VJPs.

    row and col are kept by reference and read as they are at each
    operation: the C analysis of the pattern is cached, but every use
    checks it against the current indices (O(nnz), see sla._core), so
    indices rewritten in place (even through a numpy view) are followed.
    A matrix without stored entries is the zero matrix; a 0-size batch
    gives empty results (see docs/python.md, "Degenerate sizes").
    """

    def __init__(self, values, row, col, shape):
        values, batch, shape = _checked_values(values, shape)
        nrow = row.numel() if isinstance(row, torch.Tensor) else len(row)
        ncol = col.numel() if isinstance(col, torch.Tensor) else len(col)
        if values.shape[-1] != nrow or nrow != ncol:
            raise ValueError("values (last dim %d), row (%d) and col (%d) must have the same "
                             "number of entries" % (values.shape[-1], nrow, ncol))
        self.values = values
        self._row = row if isinstance(row, torch.Tensor) else torch.as_tensor(row)
        self._col = col if isinstance(col, torch.Tensor) else torch.as_tensor(col)
        self._src = None
        self.shape = batch + shape[-2:]
        self._pattern = None

    @classmethod
    def _on_result(cls, values, res, shape):
        """A SparseTensor with values [*batch, nnz] on the pattern of a
        C-made result (sla._algebra._Result: sorted CSR, valid), adopted as
        it is: row and col are made from it when first read (res.coo(),
        shared by every SparseTensor on res), not before."""
        out = cls.__new__(cls)
        out.values = values
        out._row = out._col = None
        out._src = res
        out.shape = tuple(values.shape[:-1]) + tuple(int(s) for s in shape[-2:])
        out._pattern = res.pattern()
        return out

    # ---- structure ----------------------------------------------------

    def _indices(self):
        """(row, col), made from the C result they come from on first use."""
        if self._row is None:
            self._row, self._col = self._src.coo()
        return self._row, self._col

    @property
    def row(self):
        """Row indices [nnz] (a product's: int64 in CSR order, made on first read)."""
        return self._indices()[0]

    @row.setter
    def row(self, t):
        self._col = self._indices()[1]
        self._row = t if isinstance(t, torch.Tensor) else torch.as_tensor(t)

    @property
    def col(self):
        """Column indices [nnz] (a product's: made on first read, as row)."""
        return self._indices()[1]

    @col.setter
    def col(self, t):
        self._row = self._indices()[0]
        self._col = t if isinstance(t, torch.Tensor) else torch.as_tensor(t)

    @property
    def pattern(self):
        """The C analysis of (row, col): cached (see sla._core), and checked
        against the current contents of row and col on every use (O(nnz)),
        so indices rewritten in place, even without a version bump (through
        a numpy view), are never served a stale pattern. A product's result
        whose index tensors were never made (nobody can have written them)
        is its C pattern without a check."""
        p = self._pattern
        if self._row is None and p is not None and not self._src.coo_made():
            return p
        if p is None or not p.matches(self.row, self.col, self.shape[-2], self.shape[-1]):
            p = self._pattern = _core.get_pattern(self.row, self.col, self.shape[-2],
                                                  self.shape[-1])
        return p

    @property
    def batch_shape(self):
        return self.shape[:-2]

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def device(self):
        return self.values.device

    @property
    def nnz(self):
        return self.values.shape[-1]

    @property
    def requires_grad(self):
        return self.values.requires_grad

    @property
    def is_complex(self):
        """Whether the values are complex (complex128 or complex64)."""
        return self.values.is_complex()

    @property
    def is_batched(self):
        return len(self.batch_shape) > 0

    def __repr__(self):
        return "SparseTensor(shape=%s, nnz=%d, dtype=%s%s)" % (
            self.shape, self.nnz, self.dtype, ", requires_grad=True" if self.requires_grad else "")

    def with_values(self, values):
        """The same pattern (and its cached C analysis) with new values."""
        if self._row is None:  # a product's indices, still to be made: share them
            values = _checked_values(values, self.shape[-2:])[0]
            if values.shape[-1] != self._src.nnz:
                raise ValueError("values (last dim %d) must have the pattern's %d entries"
                                 % (values.shape[-1], self._src.nnz))
            out = SparseTensor._on_result(values, self._src, self.shape[-2:])
        else:
            out = SparseTensor(values, self.row, self.col, self.shape[-2:])
        out._pattern = self._pattern
        return out

    def detach(self):
        return self.with_values(self.values.detach())

    def to(self, dtype):
        return self.with_values(self.values.to(dtype))

    def __getitem__(self, i):
        """Index the batch dimensions: A[i] is a SparseTensor on the same pattern."""
        if not self.is_batched:
            raise IndexError("an unbatched SparseTensor has no batch dimension to index")
        v = self.values[i]
        if v.dim() < 1 or v.shape[-1] != self.nnz:
            raise IndexError("index the batch dimensions only")
        return self.with_values(v)

    def _csr_values(self, pattern=None):
        """[B, nnz_csr] values in the C pattern's order (differentiable).
        pattern: self.pattern, when the caller already holds it (each
        self.pattern checks the indices again, O(nnz))."""
        B = _prod(self.batch_shape)
        v2 = self.values.reshape(B, self.nnz)
        v = (pattern or self.pattern).csr_values(v2)
        return _complex.c_ready(v, v.dtype) if v.is_complex() else v.contiguous()

    # ---- linear algebra -----------------------------------------------

    def solve(self, b, method=None, preconditioner=None, rtol=None, atol=None, maxiter=None,
              return_info=False, x0=None, history=False, **options):
        """x with A x = b (a batch: A_i x_i = b_i).

        b: [*batch, n] or [*batch, n, k] (or [n] / [n, k] shared by a batch).
        Arguments left at None (method included: None means auto) take
        the values of the active ``sla.SolverConfig`` (a ``with`` block on
        this thread), if any.
        method: auto, cg, bicgstab, gmres, minres, cocg (complex symmetric
        A = A^T; cg on a real A), cholesky, ldlt, lu, umfpack, klu, superlu. preconditioner: None, jacobi, ssor, ic0, ilu0,
        ilut (threshold ILU with fill limit and column pivoting, like SciPy's
        spilu), amg (hypre BoomerAMG), saamg (sla's smoothed aggregation).
        rtol (relative to ||b||), atol, maxiter; further keys of the C
        options string as keywords (restart, omega, ordering, memory_limit,
        amg_threshold, ilu_shift="off", ilut_droptol, ilut_fill, ilut_pivot,
        equilibrate="auto"|"on"|"off", ...). Unknown names are refused by the C library,
        which names the nearest valid one.

        x0: initial guess of an iterative method (the shape of b's
        solution; not differentiated: the solution does not depend on it).

        return_info: also return a SolveInfo (after backward, its
        ``adjoint`` holds the report of the adjoint solves). A solve that
        stops short of its tolerance warns with SlaConvergenceWarning unless
        return_info is set.

        history: record the Krylov method's (iteration, relative residual)
        through the C monitor callback into info.history (each right-hand
        side's in info.items[i].history, solved one at a time; a direct
        solve records none); implies return_info. sla.plot_history draws it.

        The solver (factorization or preconditioner) is cached on the
        pattern: a backward pass reuses the forward's, and a later solve
        with new values on the same pattern refactors without re-analysis.
        """
        if x0 is None and not history and not options:
            x = self._solve_fast(b, method, preconditioner, rtol, atol, maxiter, return_info)
            if x is not None:
                return x
        if history:
            if self.is_complex or _complex.is_complex_input(b):
                raise ValueError("solve: history=True is for real solves")
            return_info = True
        if not self.is_complex and _complex.is_complex_input(b):
            return _complex.solve_real_complex(self, b, x0, dict(
                options, method=method, preconditioner=preconditioner, rtol=rtol, atol=atol,
                maxiter=maxiter, return_info=return_info))
        method, preconditioner, rtol, atol, maxiter, options = _config.resolve(
            method, preconditioner, rtol, atol, maxiter, options)
        if self.shape[-2] != self.shape[-1]:
            raise ValueError("solve needs a square matrix (shape %s)" % (self.shape,))
        if "use_x0" in options:
            raise ValueError("solve: pass the initial guess as x0=..., not use_x0")
        if x0 is not None:
            options["use_x0"] = True
        opts = options_string(method, preconditioner, rtol, atol, maxiter, **options)
        if self.is_complex:
            box = {"quiet": return_info}
            x = _complex.solve(self, b, opts, box, x0, _canonical_rhs)
            return (x, box["info"]) if return_info else x
        if _prod(self.batch_shape) == 0:  # a 0-size batch: nothing to solve
            b3, unflatten = _canonical_rhs(b, self.batch_shape, self.shape[-1])
            x = unflatten(_connected(torch.zeros_like(b3), self.values, b3))
            x = x.to(_out_dtype(self.dtype, b if isinstance(b, torch.Tensor) else x))
            return (x, SolveInfo(items=[])) if return_info else x
        pat = self.pattern
        if self.shape[-1] > 0 and pat.nnz == 0:
            raise L.SlaSingularError(
                -8, "the %d x %d matrix has no stored entries (it is zero), so it is "
                "singular" % (self.shape[-2], self.shape[-1]), "solve")
        vals = self._csr_values(pat)
        b3, unflatten = _canonical_rhs(b, self.batch_shape, self.shape[-1])
        if x0 is not None:
            x03, _ = _canonical_rhs(torch.as_tensor(x0).detach(), self.batch_shape,
                                    self.shape[-1], "x0")
            if x03.shape != b3.shape:
                raise ValueError("x0 has shape %s; it must match the solution's"
                                 % (tuple(torch.as_tensor(x0).shape),))
            box = {"quiet": return_info, "x0": x03}
        else:
            box = {"quiet": return_info}
        solver = pat.solver(opts, vals.dtype, vals.shape[0], monitor=bool(history))
        x3 = SolveFn.apply(vals, b3, solver, box)
        x = unflatten(x3).to(_out_dtype(self.dtype, b if isinstance(b, torch.Tensor) else x3))
        if return_info:
            return x, box["info"]
        return x

    def _solve_fast(self, b, method, preconditioner, rtol, atol, maxiter, return_info):
        """solve's lean path for its most common call (issue 19: the
        binding's per-call overhead): one float64 matrix without a batch
        whose COO entries are in CSR order, one contiguous float64 vector
        b of length n, no x0, history or extra option keywords, no active
        SolverConfig. SolveFn then takes the values and b as they are, so
        the autograd graph holds the solve alone (no reshape or cast nodes)
        and the options string comes from a cache. The result is that of
        the general path. None when the call is not such a call."""
        v = self.values
        if (type(b) is not torch.Tensor or b.dtype != torch.float64 or b.dim() != 1
                or v.dtype != torch.float64 or v.dim() != 1 or b.device.type != "cpu"
                or not b.is_contiguous() or not v.is_contiguous() or _config.active()):
            return None
        n = self.shape[1]
        if self.shape[0] != n or b.shape[0] != n or n == 0:
            return None
        pat = self.pattern
        if not pat.identity or pat.nnz == 0:
            return None
        opts = _core.cached_options_string(method, preconditioner, rtol, atol, maxiter)
        box = {"quiet": return_info}
        solver = pat.solver(opts, torch.float64, 1)
        if (v.requires_grad or b.requires_grad) and torch.is_grad_enabled():
            x = SolveFn.apply(v, b, solver, box)
        else:  # no gradient asked: the C call without an autograd node
            x = _functions.solve_vector(solver, v, b, box, 5)[0]
        return (x, box["info"]) if return_info else x

    def matvec(self, x):
        """A @ x: x of shape [*batch, N] or [*batch, N, k] (or shared).
        Complex A or x: sla_zmatvec (see sla._complex)."""
        if self.is_complex or _complex.is_complex_input(x):
            return _complex.matvec(self, x, _canonical_rhs)
        x3, unflatten = _canonical_rhs(x, self.batch_shape, self.shape[-1], "x")
        if _prod(self.batch_shape) == 0:  # a 0-size batch: empty products
            y3 = _connected(x3.new_zeros(x3.shape[:2] + (self.shape[-2],)), self.values, x3)
            return unflatten(y3).to(_out_dtype(self.dtype, x if isinstance(x, torch.Tensor)
                                               else y3))
        pat = self.pattern
        vals = self._csr_values(pat)
        cmat = pat.matrix(vals.dtype, vals.shape[0])
        y3 = MatvecFn.apply(vals, x3, cmat)
        return unflatten(y3).to(_out_dtype(self.dtype, x if isinstance(x, torch.Tensor) else y3))

    def __matmul__(self, x):
        """A @ x: the matvec for a dense x, SpGEMM for a SparseTensor x."""
        return _algebra.matmul(self, x)

    # sparse algebra and graph tools (sla._algebra, libsla's algebra.h and graph.h)
    T = property(lambda self: _algebra.transpose(self), doc="The transpose (a property).")
    H = property(lambda self: _algebra.transpose(self).conj(),
                 doc="The conjugate transpose (real: A.T).")
    __add__ = lambda self, o: _algebra.add(self, o)  # noqa: E731
    __sub__ = lambda self, o: _algebra.sub(self, o)  # noqa: E731
    __rsub__ = lambda self, o: _algebra.rsub(self, o)  # noqa: E731
    __mul__ = __rmul__ = lambda self, o: _algebra.mul(self, o)  # noqa: E731
    __truediv__ = lambda self, o: _algebra.div(self, o)  # noqa: E731
    __neg__ = lambda self: _algebra.neg(self)  # noqa: E731
    norm = lambda self, ord="fro": _algebra.norm(self, ord)  # noqa: E731
    sum = lambda self, dim=None: _algebra.sum(self, dim)  # noqa: E731
    diagonal = lambda self: _algebra.diagonal(self)  # noqa: E731
    connected_components = lambda self: _algebra.connected_components(self)  # noqa: E731
    has_isolated_components = lambda self: _algebra.has_isolated_components(self)  # noqa: E731
    to_connected_components = lambda self: _algebra.to_connected_components(self)  # noqa: E731
    laplacian = lambda self: _algebra.laplacian(self)  # noqa: E731
    degree = lambda self, weighted=True: _algebra.degree(self, weighted)  # noqa: E731

    def transpose(self):
        """The transpose (as the property A.T)."""
        return self.T

    def conj(self):
        """The complex conjugate (same pattern; a real matrix is returned as
        it is). Differentiable."""
        return self.with_values(self.values.conj()) if self.is_complex else self

    def to_dense(self):
        """Dense [*batch, M, N] tensor (duplicates summed; differentiable)."""
        M, N = self.shape[-2:]
        B = _prod(self.batch_shape)
        idx = self.row.to(torch.int64) * N + self.col.to(torch.int64)
        d = self.values.new_zeros(B, M * N).index_add(1, idx, self.values.reshape(B, self.nnz))
        return d.reshape(self.batch_shape + (M, N))

    def _logdet_solver(self, method, options):
        if self.shape[-2] != self.shape[-1]:
            raise ValueError("logdet needs a square matrix (shape %s)" % (self.shape,))
        opts = options_string(method, None, None, None, None, **options)
        pat = self.pattern
        vals = self._csr_values(pat)
        return vals, pat.solver(opts, vals.dtype, vals.shape[0])

    def slogdet(self, method="lu", **options):
        """(sign, log|det A|) per matrix of the batch, from a sparse
        factorization (method lu, cholesky or ldlt; never det itself, so no
        overflow). The factorization is the cached solver's: solve(b,
        method=...) with the same method reuses it.

        A singular matrix (a zero pivot, or no stored entries) gives
        (0, -inf), as numpy.linalg.slogdet and torch.linalg.slogdet do: alone
        or in a batch (where the others keep their values), with or without
        gradients. A 0 x 0 matrix gives (1, 0); a 0-size batch empty
        tensors. (method="cholesky" on a singular positive semidefinite
        matrix raises SlaNotSPDError, as for any matrix that is not
        positive definite.)

        Gradient: d log|det A| / dA_k = (A^-1)[col_k, row_k], from the C
        library's selected inversion (sla_solver_logdet_vjp). At a singular
        matrix it does not exist: backward raises SlaSingularError when the
        loss depends on that matrix's log|det| (a matrix without stored
        entries has an empty gradient, which is returned). A libsla
        without sla_solver_logdet_vjp raises NotImplementedError when
        values require grad; compute the value under torch.no_grad() or on
        A.detach()."""
        if self.is_complex:  # sign complex (|sign| = 1), log|det A| real
            return _complex.slogdet(self, method, options, options_string)
        if self.shape[-2] != self.shape[-1]:
            raise ValueError("logdet needs a square matrix (shape %s)" % (self.shape,))
        bs = self.batch_shape
        if _prod(bs) == 0:
            z = _connected(torch.zeros(bs, dtype=self.dtype), self.values)
            return z.detach(), z
        vals, solver = self._logdet_solver(method, options)
        opts = solver.opts
        pattern = solver.matrix.pattern

        def item_solver():
            return pattern.solver(opts, vals.dtype, 1)

        if torch.is_grad_enabled() and vals.requires_grad:
            sign, lad = LogdetFn.apply(vals, solver, item_solver, L.API["logdet_vjp"])
        else:
            sign, lad, _, _ = _functions.c_slogdet(vals.detach(), solver, item_solver)
        return sign.reshape(bs).to(self.dtype), lad.reshape(bs).to(self.dtype)

    def logdet(self, method="lu", **options):
        """log det A as torch.logdet defines it: nan when det < 0, -inf when
        singular (complex A: log|det A| + i arg det A). See slogdet for the
        factorization and the gradient."""
        sign, lad = self.slogdet(method, **options)
        if self.is_complex:
            return torch.log(sign) + lad
        nan = torch.full_like(lad, math.nan)
        return torch.where(sign > 0, lad, torch.where(sign < 0, nan, -torch.ones_like(lad) * math.inf))

    def det(self, method="lu", **options):
        """det A = sign * exp(log|det A|) (overflows to inf where det does)."""
        sign, lad = self.slogdet(method, **options)
        return sign * torch.exp(lad)

    def eigs(self, k=6, which="LM", sigma=None, return_eigenvectors=True, **kw):
        """k eigenvalues of a general square matrix, as SciPy's eigs (see sla._eigs.eigs)."""
        _complex.refuse("eigs", self)
        from ._eigs import eigs
        return eigs(self, k, which, sigma, return_eigenvectors, **kw)

    def svds(self, k=6, which="LM", **kw):
        """(U, S, Vh) as scipy.sparse.linalg.svds; see sla._svds.svds."""
        _complex.refuse("svds", self)
        from ._svds import svds
        return svds(self, k, which, **kw)

    def cond(self, **kw):
        """2-norm condition number s_max / s_min (sla_cond2); see sla._svds.cond."""
        _complex.refuse("cond", self)
        from ._svds import cond
        return cond(self, **kw)

    def eigsh(self, k=6, which=None, sigma=None, return_eigenvectors=True, tol=0.0, ncv=0,
              maxiter=0, v0=None, factor_method="auto", degenerate_tol=1e-9, grad_rtol=1e-12,
              grad_maxiter=0, return_info=False, M=None, method="arpack", preconditioner=None,
              seed=None):
        """k eigenpairs of a symmetric matrix (every matrix of a batch), by
        the C library's ARPACK Lanczos (sla_eigsh / sla_eigsh_batch).

        which: "LA" / "SA" (largest / smallest algebraic), "LM" / "SM"
        (largest / smallest magnitude). sigma: shift-invert around sigma
        (a sparse factorization of A - sigma I, factor_method auto /
        cholesky / ldlt / lu / umfpack / klu / superlu); then LM and SM give
        the eigenvalues nearest sigma, LA those nearest above, SA below.
        tol, ncv, maxiter, v0 (start vector, [n]): ARPACK's settings
        (0: the C defaults). A must be symmetric (checked by C).
        A complex A must be Hermitian (sla_zeigsh, ARPACK's complex Arnoldi;
        checked by C): eigenvalues real, eigenvectors complex, each scaled
        so that its largest-magnitude entry is real and positive; a loss
        that depends on that phase is refused by the C VJP.

        Returns eigenvalues [*batch, k] in ascending order and, when
        return_eigenvectors, orthonormal eigenvectors [*batch, n, k] (column
        i belongs to eigenvalue i; each one's sign is arbitrary). With
        return_info, also a list of EigshInfo (one per matrix).

        Gradients to values by sla_eigsh_batch_vjp: eigenvalues by
        Hellmann-Feynman, eigenvectors by first-order perturbation with one
        projected MINRES solve per vector (grad_rtol, grad_maxiter). Every
        stored value is an independent variable (the gradient of a_ij and
        a_ji are separate entries). A loss that depends on the basis chosen
        inside a degenerate cluster (|l_i - l_j| <= degenerate_tol max |l|)
        is refused by C (SlaUnavailableError naming the pair).

        M: the generalized problem A x = l M x (see sla._eigs.eigsh_generalized).

        which defaults to "LM" (as SciPy's eigsh) with method="arpack" and to
        "SA" with method="lobpcg": LOBPCG (sla_lobpcg, or
        sla_lobpcg_generalized with M) computes the k smallest eigenpairs
        (3 k < n) without factorizing A, preconditioned by `preconditioner`
        (none, jacobi, ssor, ic0, amg; default amg when the build has
        hypre); tol (0: 1e-8) is relative to ||A||_1 + |l| ||M||_1, maxiter
        (0: 500), v0 a start block [n, k], seed the random start's seed.
        A may be a batch (one M for all of it). Differentiable as the
        ARPACK paths, by the same C VJPs (see sla._lobpcg)."""
        if method not in ("arpack", "lobpcg"):
            raise ValueError("eigsh: method must be 'arpack' or 'lobpcg' (got %r)" % (method,))
        if method == "lobpcg":
            if sigma is not None:
                raise ValueError("eigsh: method='lobpcg' takes no sigma (it computes the smallest "
                                 "eigenvalues without a factorization)")
            from . import _lobpcg
            return _lobpcg.eigsh(self, k, which, M, return_eigenvectors, tol, maxiter, v0,
                                 preconditioner, seed, degenerate_tol, grad_rtol, grad_maxiter,
                                 return_info)
        if preconditioner is not None or seed is not None:
            raise ValueError("eigsh: preconditioner and seed are LOBPCG's (method='lobpcg')")
        if which is None:
            which = "LM"
        if M is not None:
            _complex.refuse("eigsh with M (generalized)", self, M)
            from ._eigs import eigsh_generalized
            return eigsh_generalized(self, M, k, which, sigma, return_eigenvectors, tol, ncv,
                                     maxiter, factor_method)
        api = L.API
        if self.shape[-2] != self.shape[-1]:
            raise ValueError("eigsh needs a square matrix (shape %s)" % (self.shape,))
        n = self.shape[-1]
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
            # checked here, before any tensor of k columns is allocated (C
            # names k = n itself: ARPACK needs k < n)
            raise ValueError("eigsh: k must be an integer with 1 <= k < n = %d (got %r)" % (n, k))
        w = str(which).upper()
        if w not in _WHICH:
            raise ValueError("eigsh: which must be one of LA, SA, LM, SM (got %r)" % (which,))
        fm = _FACTOR_METHODS.get(factor_method)
        if fm is None:
            raise ValueError("eigsh: factor_method must be one of %s (got %r)"
                             % (", ".join(k for k in _FACTOR_METHODS if k), factor_method))
        copts = L.CEigshOptions()
        api["eigsh_options_default"](ctypes.byref(copts))
        copts.k = int(k)
        copts.which = _WHICH[w]
        if sigma is not None:
            copts.shift_invert = True
            copts.sigma = float(sigma)
        copts.tol, copts.ncv, copts.maxiter = float(tol), int(ncv), int(maxiter)
        copts.factor_method = fm
        copts.degenerate_tol, copts.grad_rtol = float(degenerate_tol), float(grad_rtol)
        copts.grad_maxiter = int(grad_maxiter)
        box = {}
        if v0 is not None:
            v0 = torch.as_tensor(v0).detach().to(torch.float64).contiguous().reshape(-1)
            if v0.numel() != n:
                raise ValueError("eigsh: v0 must have %d entries (got %d)" % (n, v0.numel()))
            copts.v0 = v0.data_ptr()
            box["v0"] = v0  # alive while the options are
        if self.is_complex:  # (v0 real there too)
            return _complex.eigsh(self, copts, box, return_eigenvectors, return_info)
        bs = self.batch_shape
        B = _prod(bs)
        pat = self.pattern if B > 0 else None
        if B == 0 or pat.nnz == 0:
            evals, evecs3 = self._eigsh_trivial(k, n, B, box)
        else:
            vals = self._csr_values(pat).to(torch.float64).contiguous()
            cmat = pat.matrix(torch.float64, vals.shape[0])
            evals, evecs3 = _functions.EigshFn.apply(vals, cmat, copts, api, box)
        kk = evals.shape[-1]
        lam = evals.reshape(bs + (kk,)).to(self.dtype)
        out = (lam, evecs3.transpose(1, 2).reshape(bs + (n, kk)).to(self.dtype)) \
            if return_eigenvectors else lam
        if return_info:
            return (out + (box["info"],)) if return_eigenvectors else (out, box["info"])
        return out

    def lsqr(self, b, **kw):
        """Damped least squares argmin ||A x - b||^2 + damp^2 ||x||^2 (sla.lsqr; method="lsmr" for LSMR,
        method="qr" for the direct SuiteSparseQR path, sla.lstsq)."""
        _complex.refuse("lsqr", self, b)
        from ._lsq import lsmr, lsqr, lstsq
        method = kw.pop("method", "lsqr")
        fns = {"lsqr": lsqr, "lsmr": lsmr, "qr": lstsq}
        if method not in fns:
            raise ValueError("lsqr: method %r is not one of lsqr, lsmr, qr" % (method,))
        return fns[method](self, b, **kw)

    def _eigsh_trivial(self, k, n, B, box):
        """eigsh without ARPACK: a 0-size batch (empty results) or a matrix
        without stored entries (the zero matrix: eigenvalues 0, eigenvectors
        the first k unit vectors, an orthonormal basis like any other; the
        gradient to the empty values is empty). k is checked as C does."""
        k = int(k)
        if not 1 <= k < n:
            raise L.SlaValueError(-1, "k = %d must be in [1, n) with n = %d (use a dense "
                                  "eigensolver for all eigenpairs)" % (k, n), "eigsh")
        evals = _connected(torch.zeros((B, k), dtype=torch.float64), self.values)
        evecs = torch.eye(n, dtype=torch.float64)[:k].expand(B, k, n).contiguous()
        evecs = _connected(evecs, self.values)
        box["info"] = [_functions.EigshInfo(
            method="zero matrix", converged=True, nconv=k, iterations=0, nops=0,
            max_residual=0.0, factor_seconds=0.0, seconds=0.0,
            note="no stored entries: the zero matrix's eigenpairs, no ARPACK")
            for _ in range(B)]
        return evals, evecs

    # ---- conversions --------------------------------------------------

    @classmethod
    def from_scipy(cls, M, dtype=torch.float64, requires_grad=False):
        """From any scipy.sparse matrix (converted to COO; values copied
        once into a tensor of `dtype`). A complex M gives complex values of
        dtype's precision (float64: complex128, float32: complex64)."""
        coo = M.tocoo()
        if coo.dtype.kind == "c":
            dtype = _complex.complex_dtype(dtype)
        vals = torch.tensor(coo.data, dtype=dtype, requires_grad=requires_grad)
        row = torch.from_numpy(coo.row.astype("int64"))
        col = torch.from_numpy(coo.col.astype("int64"))
        return cls(vals, row, col, coo.shape)

    def to_scipy(self):
        """scipy.sparse.csr_matrix (unbatched matrices; index a batch first)."""
        import scipy.sparse as sp
        if self.is_batched:
            raise ValueError("to_scipy: a batched SparseTensor %s; convert A[i]" % (self.shape,))
        v = self.values.detach().cpu().numpy()
        return sp.coo_matrix((v, (self.row.cpu().numpy(), self.col.cpu().numpy())),
                             shape=self.shape).tocsr()

    @classmethod
    def from_dense(cls, D, requires_grad=False):
        """The nonzeros of a dense [M, N] tensor (differentiable in them when
        D requires grad; see sla._factories.from_dense)."""
        return _factories.from_dense(cls, D, requires_grad)

    # ---- factories, torch sparse interop, structure queries (issue 19;
    # sla._factories, sla._structure) ---------------------------------------
    eye = classmethod(_factories.eye)
    diag = classmethod(_factories.diag)
    tridiagonal = classmethod(_factories.tridiagonal)
    random = classmethod(_factories.random)
    poisson = classmethod(_factories.poisson)
    diffusion2d = classmethod(_factories.diffusion2d)
    convdiff2d = classmethod(_factories.convdiff2d)
    aniso2d = classmethod(_factories.aniso2d)
    arrow = classmethod(_factories.arrow)
    from_torch = classmethod(_factories.from_torch)
    to_torch_sparse = _factories.to_torch_sparse
    is_symmetric = _structure.is_symmetric
    is_hermitian = _structure.is_hermitian
    is_positive_definite = _structure.is_positive_definite
    has_positive_diagonal = _structure.has_positive_diagonal
    density = property(_structure.density)
    sparsity_pattern_equal = _structure.sparsity_pattern_equal
    # row partitions (sla_partition, sla_partition_extract; sla._partition)
    partition = _partition.partition
    extract_partition = _partition.extract_partition

    def spy(self, ax=None, markersize=None, **kw):
        """The sparsity pattern with matplotlib (sla._plot.spy); returns the Axes."""
        from ._plot import spy
        return spy(self, ax, markersize, **kw)


class SparseTensorList:
    """Matrices with different patterns (a batch of graphs or meshes),
    solved together by sla_solver_solve_list (in parallel over the C context's
    threads), with gradients through sla_solver_solve_list_vjp; a list of
    complex matrices by sla_zsolver_solve_list and its VJP."""

    def __init__(self, tensors):
        self.tensors = list(tensors)
        for i, t in enumerate(self.tensors):
            if not isinstance(t, SparseTensor):
                raise TypeError("SparseTensorList item %d is not a SparseTensor" % i)
            if t.is_batched:
                raise ValueError("SparseTensorList item %d is batched %s; use one SparseTensor "
                                 "for a batch on one pattern" % (i, t.shape))

    def __len__(self):
        return len(self.tensors)

    def __getitem__(self, i):
        return self.tensors[i]

    def __iter__(self):
        return iter(self.tensors)

    def __repr__(self):
        return "SparseTensorList(%d matrices)" % len(self.tensors)

    @classmethod
    def from_scipy(cls, mats, dtype=torch.float64):
        return cls([SparseTensor.from_scipy(m, dtype) for m in mats])

    # structure queries per item (issue 19, sla._structure)
    def is_symmetric(self, tol=0.0):
        return _structure.is_symmetric(self.tensors, tol)

    def is_hermitian(self, tol=0.0):
        return _structure.is_hermitian(self.tensors, tol)

    def is_positive_definite(self):
        return _structure.is_positive_definite(self.tensors)

    def has_positive_diagonal(self):
        return _structure.has_positive_diagonal(self.tensors)

    def solve(self, bs, method=None, preconditioner=None, rtol=None, atol=None, maxiter=None,
              return_info=False, **options):
        """[x_i] with A_i x_i = b_i (each b_i of shape (n_i,)); the options as
        in SparseTensor.solve. return_info: also a list of SolveInfo."""
        method, preconditioner, rtol, atol, maxiter, options = _config.resolve(
            method, preconditioner, rtol, atol, maxiter, options)
        bs = list(bs)
        if len(bs) != len(self.tensors):
            raise ValueError("SparseTensorList.solve: %d matrices but %d right-hand sides"
                             % (len(self.tensors), len(bs)))
        if self.tensors and all(A.is_complex for A in self.tensors):
            # complex matrices: one sla_zsolver_solve_list call
            opts = options_string(method, preconditioner, rtol, atol, maxiter, **options)
            box = {"quiet": return_info}
            xs = _complex.solve_list(self.tensors, bs, opts, box)
            return (xs, box["infos"]) if return_info else xs
        if any(A.is_complex or _complex.is_complex_input(b) for A, b in zip(self.tensors, bs)):
            # real and complex matrices mixed, or a real A with a complex b:
            # one (cached) solve per item
            r = [A.solve(b, method=method, preconditioner=preconditioner, rtol=rtol, atol=atol,
                         maxiter=maxiter, return_info=return_info, **options)
                 for A, b in zip(self.tensors, bs)]
            return ([x for x, _ in r], [i for _, i in r]) if return_info else r
        opts = options_string(method, preconditioner, rtol, atol, maxiter, **options)
        solvers, vals, b1s, seen = [], [], [], set()
        for i, (A, b) in enumerate(zip(self.tensors, bs)):
            n = A.shape[-1]
            if A.shape[-2] != n:
                raise ValueError("SparseTensorList item %d is not square %s" % (i, A.shape))
            b = torch.as_tensor(b)
            if tuple(b.shape) != (n,):
                raise ValueError("right-hand side %d has shape %s; expected (%d,)"
                                 % (i, tuple(b.shape), n))
            _check_cpu(b, "right-hand side %d" % i)
            pat = A.pattern
            v = A._csr_values(pat)
            s = pat.solver(opts, v.dtype, 1)
            if id(s) in seen:  # two items share a pattern: a private solver for this one
                s = _core.Solver(pat, opts, v.dtype, 1)
            seen.add(id(s))
            solvers.append(s)
            vals.append(v)
            b1s.append(b.to(torch.float64).contiguous())
        box = {"quiet": return_info}
        xs = ListSolveFn.apply(solvers, box, *vals, *b1s)
        xs = [x.to(_out_dtype(A.dtype, b)) for x, A, b in zip(xs, self.tensors, bs)]
        if return_info:
            return xs, box["infos"]
        return xs

    def matvec(self, xs):
        return [A @ x for A, x in zip(self.tensors, xs)]

    def __matmul__(self, xs):
        return self.matvec(xs)

    # algebra over the block diagonal, one C call where it matters (sla._list)
    block_sizes = property(_list.block_sizes, doc="[(m_i, n_i)] of the items.")
    total_nnz = property(_list.total_nnz, doc="Stored entries of all items.")
    total_shape = property(_list.total_shape, doc="Shape of the block-diagonal matrix.")
    to_block_diagonal = _list.to_block_diagonal
    from_block_diagonal = classmethod(_list.from_block_diagonal)
    __add__ = _list.add
    __sub__ = _list.sub
    __mul__ = __rmul__ = _list.mul
    __truediv__ = _list.div
    __neg__ = _list.neg
    sum = _list.sum_
    norm = _list.norm
    eigsh = _list.eigsh
    slogdet = _list.slogdet
    logdet = _list.logdet

    # the inverse of SparseTensor.to_connected_components (sla._algebra)
    block_diag = lambda self, nodes=None, n=None: _algebra.block_diag(  # noqa: E731
        self, getattr(self, "nodes", None) if nodes is None else nodes, n)


def spsolve(val, row, col, shape, b, **kwargs):
    """x with A x = b for A = SparseTensor(val, row, col, shape); keyword
    arguments as SparseTensor.solve. Differentiable in val and b."""
    return SparseTensor(val, row, col, shape).solve(b, **kwargs)


# ---- generators (the C library's test problems) --------------------------

_gen_lock = threading.Lock()
_diffusion_patterns = {}


def poisson(dim, N, dtype=torch.float64):
    """The dim-D Poisson matrix on N^dim interior points (3-, 5- or 7-point
    stencil, unscaled: 2*dim on the diagonal, -1 off it)."""
    M = ctypes.c_void_p()
    L.check(L.sla_gen_poisson(L.ctx(), int(dim), int(N), ctypes.byref(M)), "poisson")
    try:
        return _sparse_from_c(M, dtype)
    finally:
        L.sla_matrix_destroy(ctypes.byref(M))


def _sparse_from_c(M, dtype):
    """SparseTensor copy of a square C matrix (value array 0)."""
    n = int(L.sla_matrix_nrows(M))
    nnz = int(L.sla_matrix_nnz(M))
    row = torch.empty(nnz, dtype=torch.int64)
    col = torch.empty(nnz, dtype=torch.int64)
    L.sla_matrix_get_rowind(M, row.data_ptr())
    L.sla_matrix_get_colind(M, col.data_ptr())
    vals = torch.empty(nnz, dtype=torch.float64)
    ctypes.memmove(vals.data_ptr(), L.sla_matrix_values(M, 0), 8 * nnz)
    return SparseTensor(vals.to(dtype), row, col, (n, n))


def diffusion2d(N, kappa):
    """The matrix of -div(kappa grad u) on an N x N interior grid of the
    unit square (sla_gen_diffusion2d: finite volumes, kappa on the (N+1)^2
    cells, a fastest; homogeneous Dirichlet boundary; unscaled, so the
    right-hand side is h^2 f with h = 1/(N+1)).

    Differentiable in kappa through the C generator's exact VJP. The
    pattern is cached per N, so a training loop reuses one symbolic
    analysis."""
    N = int(N)
    kappa = torch.as_tensor(kappa)
    ncell = (N + 1) * (N + 1)
    if kappa.numel() != ncell:
        raise ValueError("diffusion2d: kappa needs (N+1)^2 = %d values (got shape %s)"
                         % (ncell, tuple(kappa.shape)))
    _check_cpu(kappa, "kappa")
    with _gen_lock:
        pat = _diffusion_patterns.get(N)
    if pat is None:
        M = ctypes.c_void_p()
        ones = torch.ones(ncell, dtype=torch.float64)
        L.check(L.sla_gen_diffusion2d(L.ctx(), N, ones.data_ptr(), ctypes.byref(M)),
                "diffusion2d")
        try:
            A0 = _sparse_from_c(M, torch.float64)
        finally:
            L.sla_matrix_destroy(ctypes.byref(M))
        pat = (A0.row, A0.col, A0.nnz, N * N)
        with _gen_lock:
            _diffusion_patterns[N] = pat
    row, col, nnz, n = pat
    vals = Diffusion2dFn.apply(kappa.reshape(ncell).to(torch.float64).contiguous(), N, nnz)
    return SparseTensor(vals.to(kappa.dtype) if kappa.dtype == torch.float32 else vals,
                        row, col, (n, n))
