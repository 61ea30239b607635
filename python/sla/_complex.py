"""Complex values (complex128 / complex64) in the binding (issue 17).

A SparseTensor whose values are complex128 or complex64 is an sla_matrix
of dtype SLA_C128 / SLA_C64 borrowing the values tensor as it is (torch's
complex layout is the C library's: (re, im) pairs). Its operations call
include/sla/complex.h: ``A @ x`` sla_zmatvec, ``solve`` sla_zsolver_solve
(the pattern's cached sla_solver, created on the complex matrix), a
SparseTensorList of complex matrices ``solve`` sla_zsolver_solve_list, ``slogdet``
sla_zsolver_logdet, ``eigsh`` (Hermitian A) sla_zeigsh, each with its VJP.

Gradients: the library's convention is PyTorch's (grad_z = dL/dRe + i
dL/dIm), so what a C VJP writes is what autograd wants, with no conjugation
here. The VJPs of slogdet take the gradient of the phase (torch's ``sign``)
as g_theta = Im(conj(sign) grad_sign), as include/sla/complex.h asks.

Mixed operands: a complex A with a real right-hand side promotes b to
complex; a real A with a complex b (or x) is solved (multiplied) as two real
problems, the real and the imaginary part as two columns, by the real path:
every real method works, and the gradient to the real values is real (the
real part of its complex counterpart).

Operations without a complex path in libsla (lsqr, lsmr, svds, eigs, the
generalized eigsh, SpGEMM and the other sparse-sparse operations, the graph
tools, the nonlinear solve) refuse complex inputs through :func:`refuse`
with a TypeError naming the operation.
"""

import ctypes
import math
import warnings

import torch
from torch.autograd.function import once_differentiable

from . import _lib as L
from ._core import SolveInfo

C128 = torch.complex128
_REAL_OF = {torch.complex128: torch.float64, torch.complex64: torch.float32}
_COMPLEX_OF = {torch.float64: torch.complex128, torch.float32: torch.complex64}
_INFO_SIZE = ctypes.sizeof(L.CSolveInfo)


def real_dtype(dtype):
    """float64 for complex128, float32 for complex64 (real dtypes as they are)."""
    return _REAL_OF.get(dtype, dtype)


def complex_dtype(dtype):
    """complex128 for float64, complex64 for float32 (complex dtypes as they are)."""
    return _COMPLEX_OF.get(dtype, dtype)


def is_complex_input(x):
    """A complex tensor, NumPy array or number."""
    if isinstance(x, torch.Tensor):
        return x.is_complex()
    if isinstance(x, complex):
        return True
    kind = getattr(getattr(x, "dtype", None), "kind", None)  # NumPy arrays
    return kind == "c"


def refuse(op, *objs):
    """TypeError when any of objs (SparseTensors, tensors) is complex: op
    has no complex path in libsla."""
    from .sparse import SparseTensor
    for o in objs:
        if isinstance(o, SparseTensor):
            o = o.values
        if is_complex_input(o):
            raise TypeError("%s: complex values are not supported (libsla has no complex path "
                            "for it; complex matrices support A @ x, solve, slogdet, eigsh "
                            "(Hermitian), conj, H, to_dense and the structure queries)" % op)


def _ptr(t, offset_elems=0):
    return t.data_ptr() + offset_elems * t.element_size()


def _info_at(infos, i):
    return ctypes.addressof(infos) + i * _INFO_SIZE


def c_ready(t, dtype=C128):
    """t as a contiguous `dtype` tensor C can read (conjugate and negative
    views resolved; differentiable)."""
    t = t.to(dtype)
    if t.is_complex():
        t = t.resolve_conj()
    return t.resolve_neg().contiguous()


def _g(t):
    return None if t is None else c_ready(t)


# ---- y = A x --------------------------------------------------------------


class ZMatvecFn(torch.autograd.Function):
    """y = A(values) x by sla_zmatvec, VJP by sla_zmatvec_vjp. values [B, nnz]
    complex (CSR order), x3 [B, k, m] complex128."""

    @staticmethod
    def forward(ctx, values, x3, cmat, api):
        B, k, m = x3.shape
        n = cmat.pattern.nrows
        y3 = torch.empty((B, k, n), dtype=C128)
        c = L.ctx()
        with cmat.lock:
            cmat.bind(values)
            for ib in range(B):
                for j in range(k):
                    L.check(api["zmatvec"](c, cmat.ptr, ib, L.SLA_OP_N, _ptr(x3, (ib * k + j) * m),
                                           _ptr(y3, (ib * k + j) * n)), "matvec")
        ctx.cmat, ctx.api = cmat, api
        ctx.save_for_backward(values, x3)
        return y3

    @staticmethod
    @once_differentiable
    def backward(ctx, gy3):
        values, x3 = ctx.saved_tensors
        cmat, api = ctx.cmat, ctx.api
        B, k, m = x3.shape
        n, nnz = cmat.pattern.nrows, cmat.pattern.nnz
        gy3 = c_ready(gy3)
        need_v, need_x = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        gx3 = torch.empty_like(x3) if need_x else None
        gA = torch.zeros((B, nnz), dtype=C128) if need_v else None
        tmp = torch.empty(nnz, dtype=C128) if need_v and k > 1 else None
        c = L.ctx()
        with cmat.lock:
            cmat.bind(values)
            for ib in range(B):
                for j in range(k):
                    col = ib * k + j
                    ga = (_ptr(gA, ib * nnz) if k == 1 else tmp.data_ptr()) if need_v else None
                    L.check(api["zmatvec_vjp"](c, cmat.ptr, ib, _ptr(x3, col * m),
                                               _ptr(gy3, col * n),
                                               _ptr(gx3, col * m) if need_x else None, ga),
                            "matvec backward")
                    if need_v and k > 1:
                        gA[ib] += tmp
        return (gA.to(values.dtype) if need_v else None), gx3, None, None


def matvec(A, x, canonical_rhs):
    """A @ x with A or x complex (see the module docstring for the mixed cases)."""
    if not A.values.is_complex():  # real A, complex x: two real products
        return torch.complex(*(A.matvec(p) for p in _parts(x, A.dtype)))
    api = L.API
    x = x if isinstance(x, torch.Tensor) else torch.as_tensor(x)
    x3, unflatten = canonical_rhs(x, A.batch_shape, A.shape[-1], "x", C128)
    B = x3.shape[0]
    if B == 0 or 0 in A.shape[-2:] or x3.shape[1] == 0:
        from .sparse import _connected
        y3 = _connected(x3.new_zeros(x3.shape[:2] + (A.shape[-2],)), A.values, x3)
    else:
        pat = A.pattern
        vals = A._csr_values(pat)
        y3 = ZMatvecFn.apply(vals, x3, pat.matrix(vals.dtype, vals.shape[0]), api)
    return unflatten(y3).to(_out_dtype(A.dtype, x))


def _out_dtype(vdtype, other):
    if isinstance(other, torch.Tensor) and (other.is_complex() or other.is_floating_point()):
        return complex_dtype(torch.promote_types(vdtype, other.dtype))
    return complex_dtype(vdtype)


def _parts(x, vdtype):
    """(Re x, Im x) of a complex tensor, each of the real dtype it promotes
    to with vdtype (differentiable)."""
    x = torch.as_tensor(x)
    rd = torch.promote_types(vdtype, real_dtype(x.dtype))
    if not x.is_complex():
        return x.to(rd), torch.zeros_like(x, dtype=rd)
    return x.real.to(rd), x.imag.to(rd)


# ---- x = A^-1 b -------------------------------------------------------------


class ZSolveFn(torch.autograd.Function):
    """x = A(values)^-1 b by sla_zsolver_solve, VJP by sla_zsolver_solve_vjp
    (one adjoint solve with A^H per column, reusing the factorization)."""

    @staticmethod
    def forward(ctx, values, b3, solver, api, box):
        x0 = box.pop("x0", None)
        x3 = x0.clone() if x0 is not None else torch.zeros_like(b3)
        B, k, n = b3.shape
        infos = (L.CSolveInfo * max(B * k, 1))()
        st = 0
        with solver.lock:
            solver.prepare(values)
            for ib in range(B):
                for j in range(k):
                    col = ib * k + j
                    st = max(st, L.check(api["zsolver_solve"](
                        L.ctx(), solver.ptr, ib, L.SLA_OP_N, _ptr(b3, col * n), _ptr(x3, col * n),
                        _info_at(infos, col)), "solve"))
        box["info"] = info = SolveInfo.combine(infos[:B * k])
        if st == 1 and not box.get("quiet") and not info.converged:
            warnings.warn("sla: solve did not converge: %r" % (info,), L.SlaConvergenceWarning,
                          stacklevel=4)
        ctx.solver, ctx.api, ctx.box = solver, api, box
        ctx.save_for_backward(values, x3)
        return x3

    @staticmethod
    @once_differentiable
    def backward(ctx, gx3):
        values, x3 = ctx.saved_tensors
        solver, api = ctx.solver, ctx.api
        B, k, n = x3.shape
        nnz = solver.nnz
        gx3 = c_ready(gx3)
        need_v = ctx.needs_input_grad[0]
        gb3 = torch.empty_like(x3)  # C needs it even when b does not require grad
        gA = torch.zeros((B, nnz), dtype=C128) if need_v else None
        tmp = torch.empty(nnz, dtype=C128) if need_v and k > 1 else None
        infos = (L.CSolveInfo * max(B * k, 1))()
        st = 0
        with solver.lock:
            solver.prepare(values)  # no-op unless another solve re-bound the solver
            for ib in range(B):
                for j in range(k):
                    col = ib * k + j
                    ga = (_ptr(gA, ib * nnz) if k == 1 else tmp.data_ptr()) if need_v else None
                    st = max(st, L.check(api["zsolver_solve_vjp"](
                        L.ctx(), solver.ptr, ib, _ptr(x3, col * n), _ptr(gx3, col * n),
                        _ptr(gb3, col * n), ga, _info_at(infos, col)), "solve backward"))
                    if need_v and k > 1:
                        gA[ib] += tmp
        adj = SolveInfo.combine(infos[:B * k])
        fwd = ctx.box.get("info")
        if fwd is not None:
            fwd.adjoint = adj
        if st == 1 and not adj.converged:
            warnings.warn("sla: adjoint solve did not converge: %r" % (adj,),
                          L.SlaConvergenceWarning, stacklevel=3)
        return (gA.to(values.dtype) if need_v else None,
                gb3 if ctx.needs_input_grad[1] else None, None, None, None)


def solve(A, b, opts, box, x0, canonical_rhs):
    """x with A x = b for a complex A (b real or complex); x0 an initial
    guess (options carry use_x0). Returns x (and leaves the SolveInfo in box)."""
    from .sparse import _connected, _prod
    api = L.API
    b = b if isinstance(b, torch.Tensor) else torch.as_tensor(b)
    n = A.shape[-1]
    b3, unflatten = canonical_rhs(b, A.batch_shape, n, "b", C128)
    out = _out_dtype(A.dtype, b)
    if _prod(A.batch_shape) == 0 or n == 0 or b3.shape[1] == 0:
        box["info"] = SolveInfo(items=[])
        return unflatten(_connected(torch.zeros_like(b3), A.values, b3)).to(out)
    pat = A.pattern
    if pat.nnz == 0:
        raise L.SlaSingularError(-8, "the %d x %d matrix has no stored entries (it is zero), so "
                                 "it is singular" % (n, n), "solve")
    vals = A._csr_values(pat)
    if x0 is not None:
        x03, _ = canonical_rhs(torch.as_tensor(x0).detach(), A.batch_shape, n, "x0", C128)
        if x03.shape != b3.shape:
            raise ValueError("x0 has shape %s; it must match the solution's"
                             % (tuple(torch.as_tensor(x0).shape),))
        box["x0"] = x03
    solver = pat.solver(opts, vals.dtype, vals.shape[0])
    return unflatten(ZSolveFn.apply(vals, b3, solver, api, box)).to(out)



def _ptr_array(tensors):
    arr = (ctypes.c_void_p * max(len(tensors), 1))()
    for i, t in enumerate(tensors):
        arr[i] = t.data_ptr() if t is not None else None
    return arr


class ZListSolveFn(torch.autograd.Function):
    """x_i = A_i^-1 b_i for complex matrices with different patterns, all at
    once by sla_zsolver_solve_list (items in parallel over the C context's
    threads), VJP by sla_zsolver_solve_list_vjp."""

    @staticmethod
    def forward(ctx, solvers, api, box, *tensors):
        from ._functions import _lock_all, _unlock_all
        N = len(solvers)
        values, bs = tensors[:N], tensors[N:]
        xs = [torch.zeros_like(b) for b in bs]
        infos = (L.CSolveInfo * max(N, 1))()
        locks = _lock_all(solvers)
        try:
            for s, v in zip(solvers, values):
                s.prepare(v)
            sp = (ctypes.c_void_p * max(N, 1))(*[s.ptr.value for s in solvers])
            st = L.check(api["zsolver_solve_list"](L.ctx(), N, sp, _ptr_array(bs), _ptr_array(xs),
                                                   _info_at(infos, 0)), "list solve")
        finally:
            _unlock_all(locks)
        box["infos"] = [SolveInfo.combine(infos[i:i + 1]) for i in range(N)]
        if st == 1 and not box.get("quiet"):
            for inf in box["infos"]:
                if not inf.converged:
                    warnings.warn("sla: list solve did not converge: %r" % (inf,),
                                  L.SlaConvergenceWarning, stacklevel=4)
        ctx.solvers, ctx.api, ctx.box = solvers, api, box
        ctx.save_for_backward(*values, *xs)
        return tuple(xs)

    @staticmethod
    @once_differentiable
    def backward(ctx, *gxs):
        from ._functions import _lock_all, _unlock_all
        solvers, api = ctx.solvers, ctx.api
        N = len(solvers)
        saved = ctx.saved_tensors
        values, xs = saved[:N], saved[N:]
        gxs = [torch.zeros_like(x) if g is None else c_ready(g) for g, x in zip(gxs, xs)]
        need = ctx.needs_input_grad[3:]
        gAs = [torch.empty(v.shape[-1], dtype=C128) if need[i] else None
               for i, v in enumerate(values)]
        gbs = [torch.empty_like(x) if need[N + i] else None for i, x in enumerate(xs)]
        infos = (L.CSolveInfo * max(N, 1))()
        locks = _lock_all(solvers)
        try:
            for s, v in zip(solvers, values):
                s.prepare(v)
            sp = (ctypes.c_void_p * max(N, 1))(*[s.ptr.value for s in solvers])
            st = L.check(api["zsolver_solve_list_vjp"](
                L.ctx(), N, sp, _ptr_array(xs), _ptr_array(gxs), _ptr_array(gbs),
                _ptr_array(gAs), _info_at(infos, 0)), "list solve backward")
        finally:
            _unlock_all(locks)
        adj = [SolveInfo.combine(infos[i:i + 1]) for i in range(N)]
        for f, a in zip(ctx.box.get("infos", []), adj):
            f.adjoint = a
            if st == 1 and not a.converged:
                warnings.warn("sla: adjoint list solve did not converge: %r" % (a,),
                              L.SlaConvergenceWarning, stacklevel=3)
        gAs = [g.to(v.dtype).reshape(v.shape) if g is not None else None
               for g, v in zip(gAs, values)]
        return (None, None, None, *gAs, *gbs)


def solve_list(tensors, bs, opts, box):
    """[x_i] with A_i x_i = b_i for complex matrices A_i (b_i of shape (n_i,),
    real or complex) by one sla_zsolver_solve_list call; the SolveInfos are
    left in box["infos"]."""
    from . import _core
    from .sparse import _check_cpu
    api = L.API
    solvers, vals, b1s, seen = [], [], [], set()
    for i, (A, b) in enumerate(zip(tensors, bs)):
        n = A.shape[-1]
        if A.shape[-2] != n:
            raise ValueError("SparseTensorList item %d is not square %s" % (i, A.shape))
        b = torch.as_tensor(b)
        if tuple(b.shape) != (n,):
            raise ValueError("right-hand side %d has shape %s; expected (%d,)" % (i, tuple(b.shape), n))
        _check_cpu(b, "right-hand side %d" % i)
        pat = A.pattern
        if n > 0 and pat.nnz == 0:
            raise L.SlaSingularError(-8, "SparseTensorList item %d (%d x %d) has no stored entries, "
                                     "so it is singular" % (i, n, n), "solve")
        v = A._csr_values(pat)
        s = pat.solver(opts, v.dtype, 1)
        if id(s) in seen:  # two items share a pattern: a private solver for this one
            s = _core.Solver(pat, opts, v.dtype, 1)
        seen.add(id(s))
        solvers.append(s)
        vals.append(v)
        b1s.append(c_ready(b))
    xs = ZListSolveFn.apply(solvers, api, box, *vals, *b1s)
    return [x.to(_out_dtype(A.dtype, b)) for x, A, b in zip(xs, tensors, bs)]

def solve_real_complex(A, b, x0, kwargs):
    """x = A^-1 b for a real A and a complex b: Re b and Im b as two real
    columns of one real solve (any real method; real gradient to A)."""
    b = torch.as_tensor(b)
    n = A.shape[-1]
    vec = b.shape[-1:] == (n,) and (b.dim() == 1 or tuple(b.shape[:-1]) == A.batch_shape)
    re, im = _parts(b, A.dtype)

    def join(u, v):  # [..., n] pair -> [..., n, 2]; [..., n, k] pair -> [..., n, 2k]
        return torch.stack([u, v], -1) if vec else torch.cat([u, v], -1)

    if x0 is not None:
        xr, xi = _parts(x0, A.dtype)
        kwargs = dict(kwargs, x0=join(xr, xi))
    r = A.solve(join(re, im), **kwargs)
    x, info = r if kwargs.get("return_info") else (r, None)
    k = 1 if vec else b.shape[-1]
    x = torch.complex(x[..., 0], x[..., 1]) if vec else torch.complex(x[..., :k], x[..., k:])
    return (x, info) if info is not None else x


# ---- (sign, log|det A|) -------------------------------------------------------


class _SolverLogdet:
    """slogdet through the pattern's cached direct solver (method as asked):
    sla_zsolver_logdet / sla_zsolver_logdet_vjp reuse its factorization."""

    def __init__(self, api, solver, item_solver):
        self.api, self.solver, self.item_solver = api, solver, item_solver
        self.single = False

    def _run(self, slv, v, ib0, phase, lad):
        with slv.lock:
            slv.prepare(v)
            for j in range(v.shape[0]):
                L.check(self.api["zsolver_logdet"](L.ctx(), slv.ptr, j, _ptr(phase, ib0 + j),
                                                   _ptr(lad, ib0 + j)), "logdet")

    def forward(self, values, phase, lad):
        try:
            self._run(self.solver, values, 0, phase, lad)
        except L.SlaSingularError:  # factor the items one by one: only some are singular
            self.single = True
            for ib in range(values.shape[0]):
                try:
                    self._run(self.item_solver(), values[ib:ib + 1], ib, phase, lad)
                except L.SlaSingularError:
                    phase[ib], lad[ib] = 0.0, -math.inf

    def vjp(self, values, ib, gl, gt, gA_ptr):
        slv, v, j = ((self.item_solver(), values[ib:ib + 1], 0) if self.single
                     else (self.solver, values, ib))
        with slv.lock:
            slv.prepare(v)
            L.check(self.api["zsolver_logdet_vjp"](L.ctx(), slv.ptr, j, gl, gt, gA_ptr),
                    "slogdet backward")


class ZLogdetFn(torch.autograd.Function):
    """(phase, log|det A|) per value array (engine: _SolverLogdet), with the VJP (g_logabs + i g_theta) conj(A^-T) on the
    pattern. A singular matrix gives (0, -inf) alone or in a batch; its
    gradient does not exist (backward raises SlaSingularError when the loss
    depends on it)."""

    @staticmethod
    def forward(ctx, values, eng):
        B = values.shape[0]
        phase = torch.zeros(B, dtype=C128)
        lad = torch.zeros(B, dtype=torch.float64)
        eng.forward(values, phase, lad)
        ctx.singular = (lad == -math.inf) | (phase == 0)
        ctx.eng = eng
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(values, phase)
        return phase, lad

    @staticmethod
    @once_differentiable
    def backward(ctx, gphase, glad):
        values, phase = ctx.saved_tensors
        B, nnz = values.shape
        gl = glad.to(torch.float64) if glad is not None else torch.zeros(B, dtype=torch.float64)
        # dL = Re(conj(g_phase) d phase), d phase = i phase d theta
        gt = (phase.conj() * c_ready(gphase)).imag if gphase is not None else torch.zeros_like(gl)
        gA = torch.zeros((B, nnz), dtype=C128)
        for ib in range(B):
            if float(gl[ib]) == 0.0 and float(gt[ib]) == 0.0:
                continue
            if bool(ctx.singular[ib]):
                raise L.SlaSingularError(
                    -8, "matrix %d of the batch is singular (log|det A| = -inf): the gradient "
                    "of log|det A|, conj(A^-T), does not exist there" % ib, "slogdet backward")
            ctx.eng.vjp(values, ib, float(gl[ib]), float(gt[ib]), _ptr(gA, ib * nnz))
        return gA.to(values.dtype), None


def slogdet(A, method, options, options_string):
    """(sign [*batch] complex, log|det A| [*batch] real) of a complex A: by
    the pattern's cached solver for `method` (sla_zsolver_logdet), or, in a
    libsla without the complex solver object, by the one-shot sla_zlogdet
    (its own choice of factorization; method is then not used)."""
    from .sparse import _connected, _prod
    if A.shape[-2] != A.shape[-1]:
        raise ValueError("logdet needs a square matrix (shape %s)" % (A.shape,))
    bs = A.batch_shape
    rd = real_dtype(A.dtype)
    if _prod(bs) == 0 or A.shape[-1] == 0:
        z = _connected(torch.zeros(bs, dtype=rd), A.values)
        return torch.ones(bs, dtype=A.dtype), z
    if A.pattern.nnz == 0:
        return torch.zeros(bs, dtype=A.dtype), _connected(torch.full(bs, -math.inf, dtype=rd),
                                                          A.values)
    opts = options_string(method, None, None, None, None, **options)
    pat = A.pattern
    vals = A._csr_values(pat)
    solver = pat.solver(opts, vals.dtype, vals.shape[0])
    eng = _SolverLogdet(L.API, solver, lambda: pat.solver(opts, vals.dtype, 1))
    phase, lad = ZLogdetFn.apply(vals, eng)
    return phase.reshape(bs).to(A.dtype), lad.reshape(bs).to(rd)


# ---- Hermitian eigenpairs ------------------------------------------------------


class ZEigshFn(torch.autograd.Function):
    """(w [B, k] real, V [B, k, n] complex) = zeigsh(A(values)), VJP by
    sla_zeigsh_vjp. V[b, i] is the i-th eigenvector (column-major n x k)."""

    @staticmethod
    def forward(ctx, values, cmat, copts, api, box):
        B = values.shape[0]
        k, n = int(copts.k), cmat.pattern.nrows
        w = torch.empty((B, k), dtype=torch.float64)
        V = torch.empty((B, k, n), dtype=C128)
        infos = (L.CEigshInfo * B)()
        st = 0
        with cmat.lock:
            cmat.bind(values)
            for ib in range(B):
                st = max(st, L.check(api["zeigsh"](L.ctx(), cmat.ptr, ib, ctypes.byref(copts), k,
                                                   _ptr(w, ib * k), _ptr(V, ib * k * n),
                                                   ctypes.addressof(infos[ib])), "eigsh"))
        from ._functions import _eig_info
        box["info"] = [_eig_info(i) for i in infos]
        if st == 1:
            warnings.warn("sla: eigsh: not all %d eigenpairs converged: %r" % (k, box["info"]),
                          L.SlaConvergenceWarning, stacklevel=4)
        ctx.cmat, ctx.api = cmat, api
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(values, w, V)
        return w, V

    @staticmethod
    @once_differentiable
    def backward(ctx, gw, gV):
        values, w, V = ctx.saved_tensors
        cmat, api = ctx.cmat, ctx.api
        B, k, n = V.shape
        nnz = values.shape[1]
        gA = torch.zeros((B, nnz), dtype=C128)
        if gw is None and gV is None:
            return gA.to(values.dtype), None, None, None, None
        gw = gw.to(torch.float64).contiguous() if gw is not None else None
        gV = c_ready(gV) if gV is not None else None
        st = 0
        with cmat.lock:
            cmat.bind(values)
            for ib in range(B):
                st = max(st, L.check(api["zeigsh_vjp"](
                    L.ctx(), cmat.ptr, ib, k, _ptr(w, ib * k), _ptr(V, ib * k * n),
                    _ptr(gw, ib * k) if gw is not None else None,
                    _ptr(gV, ib * k * n) if gV is not None else None, _ptr(gA, ib * nnz)),
                    "eigsh backward"))
        if st == 1:
            warnings.warn("sla: eigsh backward: a projected MINRES solve missed its tolerance",
                          L.SlaConvergenceWarning, stacklevel=3)
        return gA.to(values.dtype), None, None, None, None


def eigsh(A, copts, box, return_eigenvectors, return_info):
    """k eigenpairs of a Hermitian complex A (every matrix of a batch)."""
    from .sparse import _prod
    api = L.API
    bs, n, k = A.batch_shape, A.shape[-1], int(copts.k)
    B = _prod(bs)
    if B == 0:
        w, V = torch.zeros((0, k), dtype=torch.float64), torch.zeros((0, k, n), dtype=C128)
        box["info"] = []
    else:
        pat = A.pattern
        vals = A._csr_values(pat)
        w, V = ZEigshFn.apply(vals, pat.matrix(vals.dtype, B), copts, api, box)
    lam = w.reshape(bs + (k,)).to(real_dtype(A.dtype))
    out = (lam, V.transpose(1, 2).reshape(bs + (n, k)).to(A.dtype)) if return_eigenvectors \
        else lam
    if return_info:
        return (out + (box["info"],)) if return_eigenvectors else (out, box["info"])
    return out


# ---- generators and structure -----------------------------------------------------


def sparse_from_c(M, dtype=None):
    """SparseTensor copy of value array 0 of a C matrix (real or complex).
    dtype: the precision wanted (float64/float32 or complex128/complex64);
    a complex matrix stays complex (of that precision)."""
    from .sparse import SparseTensor
    m, n = int(L.sla_matrix_nrows(M)), int(L.sla_matrix_ncols(M))
    nnz = int(L.sla_matrix_nnz(M))
    row = torch.empty(nnz, dtype=torch.int64)
    col = torch.empty(nnz, dtype=torch.int64)
    L.sla_matrix_get_rowind(M, row.data_ptr())
    L.sla_matrix_get_colind(M, col.data_ptr())
    cd = int(L.sla_matrix_dtype(M))
    have = {L.SLA_F64: torch.float64, L.SLA_F32: torch.float32, L.SLA_C128: torch.complex128,
            L.SLA_C64: torch.complex64}[cd]
    vals = torch.empty(nnz, dtype=have)
    if nnz:
        ctypes.memmove(vals.data_ptr(), L.sla_matrix_values(M, 0), nnz * vals.element_size())
    if dtype is not None:
        dtype = complex_dtype(dtype) if have.is_complex else dtype
        vals = vals.to(dtype)
    return SparseTensor(vals, row, col, (m, n))


def helmholtz2d(N, k, alpha=0.0, dtype=torch.complex128):
    """The complex symmetric 2-D Helmholtz matrix of sla_gen_helmholtz2d:
    the 5-point Laplacian minus (k h)^2 (1 + i alpha) on the diagonal on an
    N x N interior grid, h = 1/(N+1) (A = A^T, not Hermitian; alpha > 0
    damps). dtype complex128 or complex64."""
    f = L.API["gen_helmholtz2d"]
    M = ctypes.c_void_p()
    L.check(f(L.ctx(), int(N), float(k), float(alpha), ctypes.byref(M)), "helmholtz2d")
    try:
        return sparse_from_c(M, complex_dtype(dtype))
    finally:
        L.sla_matrix_destroy(ctypes.byref(M))
