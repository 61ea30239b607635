"""torch.autograd.Function wrappers: each forward calls a C operation and
each backward its C VJP. Inputs arrive in canonical form (prepared by
sparse.py with differentiable torch reshapes and casts):

* values: [B, nnz] contiguous, float64 or float32, in the pattern's CSR order
* right-hand sides / vectors: [B, k, n] contiguous float64 (k columns per
  value array; each column contiguous, i.e. column-major n x k as C wants)

Pointers of these tensors go to C directly (data_ptr()); nothing is copied.
"""

import ctypes
import warnings

import torch
from torch.autograd.function import once_differentiable

from . import _lib as L
from ._core import SolveInfo

_INFO_SIZE = ctypes.sizeof(L.CSolveInfo)


def _info_at(infos, i):
    return ctypes.addressof(infos) + i * _INFO_SIZE


def _ptr(t, offset_elems=0):
    return t.data_ptr() + offset_elems * t.element_size()


def _warn_if_not_converged(st, info, what, stacklevel=4):
    if st == 1 and info is not None and not info.converged:
        warnings.warn("sla: %s did not converge: %r" % (what, info), L.SlaConvergenceWarning,
                      stacklevel=stacklevel)


def c_solve_history(solver, b3, x3):
    """c_solve one right-hand side at a time, recording each one's monitor
    history (solver made with monitor=True): info.items[i].history, and
    info.history that of the worst item."""
    B, k, n = b3.shape
    infos = (L.CSolveInfo * max(B * k, 1))()
    hist, st = [], 0
    try:
        for ib in range(B):
            for j in range(k):
                solver.sink[0] = h = []
                off = (ib * k + j) * n
                st = max(st, L.check(L.sla_solver_solve(L.ctx(), solver.ptr, ib, 1, _ptr(b3, off), n,
                                                        _ptr(x3, off), n,
                                                        _info_at(infos, ib * k + j)), "solve"))
                hist.append(h)
    finally:
        solver.sink[0] = None
    info = SolveInfo.combine(infos[:B * k])
    if info.preconditioner == "saamg" and info.backend == "krylov":
        info.hierarchy = solver.hierarchy()
    for it, h in zip(info.items, hist):
        it.history = h
    worst = max(range(len(hist)), key=lambda i: (not info.items[i].converged,
                                                  info.items[i].residual), default=None)
    info.history = hist[worst] if worst is not None else []
    return st, info


def c_solve(solver, b3, x3):
    """x3 = A^-1 b3 for every value array and column (lock held, prepared)."""
    B, k, n = b3.shape
    if solver._monitor is not None:  # solve(..., history=True)
        return c_solve_history(solver, b3, x3)
    infos = (L.CSolveInfo * max(B * k, 1))()
    c = L.ctx()
    if k == 1 and B > 1:
        st = L.check(L.sla_solver_solve_batch(c, solver.ptr, b3.data_ptr(), x3.data_ptr(),
                                              _info_at(infos, 0)), "solve")
    else:
        st = 0
        for ib in range(B):
            st = max(st, L.check(L.sla_solver_solve(c, solver.ptr, ib, k, _ptr(b3, ib * k * n), n,
                                                    _ptr(x3, ib * k * n), n,
                                                    _info_at(infos, ib * k)), "solve"))
    return st, SolveInfo.lazy(infos, B * k, solver)


def c_solve_vjp(solver, x3, gx3, gb3, gA):
    """gb3 = A^-T gx3, gA = -sum gb x^T on the pattern (lock held, prepared)."""
    B, k, n = x3.shape
    nnz = solver.nnz
    infos = (L.CSolveInfo * max(B * k, 1))()
    c = L.ctx()
    if k == 1 and B > 1:
        st = L.check(L.sla_solver_solve_batch_vjp(
            c, solver.ptr, x3.data_ptr(), gx3.data_ptr(),
            gb3.data_ptr() if gb3 is not None else None,
            gA.data_ptr() if gA is not None else None, _info_at(infos, 0)), "solve backward")
    else:
        st = 0
        for ib in range(B):
            off = ib * k * n
            st = max(st, L.check(L.sla_solver_solve_vjp(
                c, solver.ptr, ib, k, _ptr(x3, off), n, _ptr(gx3, off), n,
                _ptr(gb3, off) if gb3 is not None else None, n,
                _ptr(gA, ib * nnz) if gA is not None else None, _info_at(infos, ib * k)),
                "solve backward"))
    return st, SolveInfo.lazy(infos, B * k, solver)


_solve_t = L._proto("sla_solver_solve_transpose", ctypes.c_int, L.P, L.P, ctypes.c_int64,
                    ctypes.c_int64, L.PTR, ctypes.c_int64, L.PTR, ctypes.c_int64, L.INFO_P)
_matvec_t = L._proto("sla_matvec_transpose", ctypes.c_int, L.P, L.P, ctypes.c_int64,
                     ctypes.c_int64, L.PTR, ctypes.c_int64, L.PTR, ctypes.c_int64)


def c_solve_transpose(solver, b3, x3):
    """x3 = A^-T b3 for every value array and column (lock held, prepared)."""
    B, k, n = b3.shape
    infos = (L.CSolveInfo * max(B * k, 1))()
    st = 0
    for ib in range(B):
        st = max(st, L.check(_solve_t(L.ctx(), solver.ptr, ib, k, _ptr(b3, ib * k * n), n,
                                      _ptr(x3, ib * k * n), n, _info_at(infos, ib * k)),
                             "transposed solve"))
    return st, SolveInfo.lazy(infos, B * k, solver)


def _outer_on_pattern(pattern, u3, v3):
    """sum over columns of u[row_p] v[col_p] for every stored entry p: [B, nnz]
    from u3, v3 [B, k, n] (torch ops: differentiable to any order)."""
    return (u3[:, :, pattern.rowind] * v3[:, :, pattern.colind]).sum(1)


def solve_vector(solver, values, b, box, stacklevel=6):
    """x = A^-1 b for one matrix ([nnz] float64 values) and one contiguous
    float64 vector b: one sla_solver_solve on the pointers. Sets box["info"]
    (and warns unless box["quiet"]); returns (x, the binding epoch the
    solver was prepared at). No autograd: SolveFn's forward, and
    SparseTensor.solve's fast path when no gradient is asked (stacklevel:
    the warning's, pointing at the caller of SparseTensor.solve)."""
    x = torch.empty_like(b)
    n = b.shape[0]
    infos = L.CSolveInfo()
    with solver.lock:
        solver.prepare(values)
        st = L.check(L.sla_solver_solve(L.ctx(), solver.ptr, 0, 1, b.data_ptr(), n, x.data_ptr(),
                                        n, ctypes.addressof(infos)), "solve")
        epoch = solver.matrix.epoch
    info = box["info"] = SolveInfo.lazy((infos,), 1, solver)
    if st == 1 and not box.get("quiet"):
        _warn_if_not_converged(st, info, box.get("what", "solve"), stacklevel)
    return x, epoch


def _as3(t):
    """[B, k, n] view of a right-hand side or solution ([n]: one vector)."""
    return t if t.dim() == 3 else t.view(1, 1, t.shape[-1])


def _as2(values):
    """[B, nnz] view of the values ([nnz]: one matrix)."""
    return values if values.dim() == 2 else values.view(1, values.shape[-1])


class SolveFn(torch.autograd.Function):
    """x = A(values)^-1 b (transpose: A^-T b) with the VJP of
    sla_solver_solve_vjp. Under create_graph=True the backward is written
    in differentiable operations: the adjoint solve is SolveFn of the
    transpose and gA = -lambda[row] x[col] a product of gathered vectors,
    so second derivatives (gradgradcheck, Hessian-vector products) work;
    the first-order backward stays the one C call.

    values: [B, nnz] contiguous, or [nnz] (one matrix); b3: [B, k, n]
    contiguous float64, or [n] with 1-D values (one vector: the fast path
    of SparseTensor.solve, whose autograd graph then holds no reshapes).
    x has b3's shape, the gradients those of values and b3."""

    @staticmethod
    def forward(ctx, values, b3, solver, box, transpose=False):
        if values.dim() == 1 and not transpose and solver._monitor is None \
                and "x0" not in box:
            # one matrix, one vector (SparseTensor.solve's fast path): the C
            # call on the tensors' pointers, no views, no batch loop
            x, ctx.epoch = solve_vector(solver, values, b3, box)
            ctx.solver, ctx.box, ctx.transpose = solver, box, False
            ctx.save_for_backward(values, x)
            return x
        x0 = box.pop("x0", None)  # initial guess (options carry use_x0=1)
        x3 = x0.view(b3.shape).clone() if x0 is not None else torch.empty_like(b3)
        with solver.lock:
            solver.prepare(_as2(values))
            st, info = (c_solve_transpose if transpose else c_solve)(solver, _as3(b3), _as3(x3))
            ctx.epoch = solver.matrix.epoch
        box["info"] = info
        if not box.get("quiet"):
            _warn_if_not_converged(st, info, box.get("what", "solve"))
        ctx.solver, ctx.box, ctx.transpose = solver, box, transpose
        ctx.save_for_backward(values, x3)
        return x3

    @staticmethod
    def backward(ctx, gx3):
        values, x3 = ctx.saved_tensors
        solver, transpose = ctx.solver, ctx.transpose
        need_v, need_b = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        fwd = ctx.box.get("info")
        if torch.is_grad_enabled():  # create_graph: a differentiable backward
            pattern = solver.matrix.pattern
            adj = {"what": "adjoint solve"}
            lam = SolveFn.apply(values, gx3.to(torch.float64).contiguous(), solver, adj,
                                not transpose)
            if fwd is not None:
                fwd.adjoint = adj.get("info")
            gA = None
            if need_v:  # A x = b: -lam[row] x[col]; A^T x = b: -x[row] lam[col]
                x3v, lamv = _as3(x3), _as3(lam)
                gA = -(_outer_on_pattern(pattern, x3v, lamv) if transpose
                       else _outer_on_pattern(pattern, lamv, x3v)).to(values.dtype)
                gA = gA.view(values.shape)
            return gA, lam if need_b else None, None, None, None
        if gx3.dtype != torch.float64 or not gx3.is_contiguous():
            gx3 = gx3.to(torch.float64).contiguous()
        if values.dim() == 1 and not transpose and values.dtype == torch.float64:
            # the forward's fast path: one sla_solver_solve_vjp on the pointers
            n = x3.shape[0]
            gb3 = torch.empty_like(x3) if need_b else None
            gA = torch.empty_like(values) if need_v else None
            infos = L.CSolveInfo()
            with solver.lock:
                solver.prepare_again(values, ctx.epoch)
                st = L.check(L.sla_solver_solve_vjp(
                    L.ctx(), solver.ptr, 0, 1, x3.data_ptr(), n, gx3.data_ptr(), n,
                    gb3.data_ptr() if need_b else None, n, gA.data_ptr() if need_v else None,
                    ctypes.addressof(infos)), "solve backward")
            info = SolveInfo.lazy((infos,), 1, solver)
            if fwd is not None:
                fwd.adjoint = info
            if st == 1:
                _warn_if_not_converged(st, info, "adjoint solve")
            return gA, gb3, None, None, None
        if transpose:  # lambda = A^-1 gx, gA = -x[row] lam[col]
            lam = torch.empty_like(x3)
            with solver.lock:
                solver.prepare_again(_as2(values), ctx.epoch)
                st, info = c_solve(solver, _as3(gx3), _as3(lam))
            gA = -_outer_on_pattern(solver.matrix.pattern, _as3(x3), _as3(lam)).to(
                values.dtype).view(values.shape) if need_v else None
            gb3 = lam if need_b else None
        else:
            gb3 = torch.empty_like(x3) if need_b else None
            gA = torch.empty(values.shape, dtype=torch.float64) if need_v else None
            with solver.lock:
                # no-op unless another solve re-bound the solver since the forward
                solver.prepare_again(_as2(values), ctx.epoch)
                st, info = c_solve_vjp(solver, _as3(x3), _as3(gx3),
                                       _as3(gb3) if gb3 is not None else None,
                                       _as2(gA) if gA is not None else None)
            if gA is not None and values.dtype != torch.float64:
                gA = gA.to(values.dtype)
        if fwd is not None:
            fwd.adjoint = info
        if st == 1:
            _warn_if_not_converged(st, info, "adjoint solve")
        return gA, gb3, None, None, None


class MatvecFn(torch.autograd.Function):
    """y = A(values) x (transpose: A^T x) with the VJP of sla_matvec_vjp;
    under create_graph=True the backward is MatvecFn of the transpose and
    gA = gy[row] x[col] in torch ops (differentiable to any order)."""

    @staticmethod
    def forward(ctx, values, x3, cmat, transpose=False):
        B, k, m = x3.shape
        p = cmat.pattern
        n = p.ncols if transpose else p.nrows
        y3 = torch.empty((B, k, n), dtype=torch.float64)
        c = L.ctx()
        with cmat.lock:
            cmat.bind(values)
            if transpose:
                for ib in range(B):
                    L.check(_matvec_t(c, cmat.ptr, ib, k, _ptr(x3, ib * k * m), m,
                                      _ptr(y3, ib * k * n), n), "transposed matvec")
            elif k == 1 and B > 1:
                L.check(L.sla_matvec_batch(c, cmat.ptr, x3.data_ptr(), y3.data_ptr()), "matvec")
            else:
                for ib in range(B):
                    L.check(L.sla_matvec(c, cmat.ptr, ib, k, _ptr(x3, ib * k * m), m,
                                         _ptr(y3, ib * k * n), n), "matvec")
        ctx.cmat, ctx.transpose = cmat, transpose
        ctx.save_for_backward(values, x3)
        return y3

    @staticmethod
    def backward(ctx, gy3):
        values, x3 = ctx.saved_tensors
        cmat, transpose = ctx.cmat, ctx.transpose
        B, k, m = x3.shape
        pattern = cmat.pattern
        need_v, need_x = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        if torch.is_grad_enabled() or transpose:  # differentiable (and the transposed op)
            gy3 = gy3.to(torch.float64).contiguous()
            gx3 = MatvecFn.apply(values, gy3, cmat, not transpose) if need_x else None
            gA = None
            if need_v:  # y = A x: gy[row] x[col]; y = A^T x: x[row] gy[col]
                gA = (_outer_on_pattern(pattern, x3, gy3) if transpose
                      else _outer_on_pattern(pattern, gy3, x3)).to(values.dtype)
            return gA, gx3, None, None
        n = pattern.nrows
        nnz = pattern.nnz
        gy3 = gy3.to(torch.float64).contiguous()
        gx3 = torch.empty_like(x3) if need_x else None
        gA = torch.empty(values.shape, dtype=torch.float64) if need_v else None
        c = L.ctx()
        with cmat.lock:
            cmat.bind(values)
            if k == 1 and B > 1:
                L.check(L.sla_matvec_batch_vjp(c, cmat.ptr, x3.data_ptr(), gy3.data_ptr(),
                                               gx3.data_ptr() if need_x else None,
                                               gA.data_ptr() if need_v else None),
                        "matvec backward")
            else:
                for ib in range(B):
                    L.check(L.sla_matvec_vjp(
                        c, cmat.ptr, ib, k, _ptr(x3, ib * k * m), m, _ptr(gy3, ib * k * n), n,
                        _ptr(gx3, ib * k * m) if need_x else None, m,
                        _ptr(gA, ib * nnz) if need_v else None), "matvec backward")
        if gA is not None and values.dtype != torch.float64:
            gA = gA.to(values.dtype)
        return gA, gx3, None, None


def _lock_all(solvers):
    locks = sorted({id(s.lock): s.lock for s in solvers}.items())
    for _, lk in locks:
        lk.acquire()
    return [lk for _, lk in locks]


def _unlock_all(locks):
    for lk in reversed(locks):
        lk.release()


def _ptr_array(tensors):
    arr = (ctypes.c_void_p * max(len(tensors), 1))()
    for i, t in enumerate(tensors):
        arr[i] = t.data_ptr() if t is not None else None
    return arr


class ListSolveFn(torch.autograd.Function):
    """x_i = A_i^-1 b_i for matrices with different patterns (sla_solver_solve_list)."""

    @staticmethod
    def forward(ctx, solvers, box, *tensors):
        N = len(solvers)
        values, bs = tensors[:N], tensors[N:]
        xs = [torch.empty_like(b) for b in bs]
        infos = (L.CSolveInfo * max(N, 1))()
        locks = _lock_all(solvers)
        try:
            for s, v in zip(solvers, values):
                s.prepare(v)
            sp = (ctypes.c_void_p * max(N, 1))(*[s.ptr.value for s in solvers])
            st = L.check(L.sla_solver_solve_list(L.ctx(), N, sp, _ptr_array(bs), _ptr_array(xs),
                                          _info_at(infos, 0)),
                         "list solve")
        finally:
            _unlock_all(locks)
        box["infos"] = [SolveInfo.combine(infos[i:i + 1]) for i in range(N)]
        if not box.get("quiet"):
            for inf in box["infos"]:
                _warn_if_not_converged(st, inf, "list solve")
        ctx.solvers, ctx.box = solvers, box
        ctx.save_for_backward(*values, *xs)
        return tuple(xs)

    @staticmethod
    @once_differentiable
    def backward(ctx, *gxs):
        solvers = ctx.solvers
        N = len(solvers)
        saved = ctx.saved_tensors
        values, xs = saved[:N], saved[N:]
        gxs = [torch.zeros_like(x) if g is None else g.to(torch.float64).contiguous()
               for g, x in zip(gxs, xs)]
        need = ctx.needs_input_grad[2:]
        gAs = [torch.empty(v.shape[-1], dtype=torch.float64) if need[i] else None
               for i, v in enumerate(values)]
        gbs = [torch.empty_like(x) if need[N + i] else None for i, x in enumerate(xs)]
        infos = (L.CSolveInfo * max(N, 1))()
        locks = _lock_all(solvers)
        try:
            for s, v in zip(solvers, values):
                s.prepare(v)
            sp = (ctypes.c_void_p * max(N, 1))(*[s.ptr.value for s in solvers])
            st = L.check(L.sla_solver_solve_list_vjp(L.ctx(), N, sp, _ptr_array(xs), _ptr_array(gxs),
                                              _ptr_array(gbs), _ptr_array(gAs),
                                              _info_at(infos, 0)),
                         "list solve backward")
        finally:
            _unlock_all(locks)
        adj = [SolveInfo.combine(infos[i:i + 1]) for i in range(N)]
        for f, a in zip(ctx.box.get("infos", []), adj):
            f.adjoint = a
            _warn_if_not_converged(st, a, "adjoint list solve")
        gAs = [g.to(v.dtype).reshape(v.shape) if g is not None else None
               for g, v in zip(gAs, values)]
        return (None, None, *gAs, *gbs)


def c_slogdet(vals, solver, item_solver, grad_fn=None):
    """(sign [B], log|det| [B], grad [B, nnz] or None, singular [B] bool) of
    every value array of vals ([B, nnz], the pattern's CSR order).

    The batch is factored once by `solver`. When that set-up (or a logdet)
    reports SLA_ERR_SINGULAR, each value array is factored on its own with
    item_solver() (the pattern's solver for batch size 1), so the singular
    ones get (0, -inf) and the others their value: the same answer for a
    matrix alone or in a batch, with or without a gradient. A singular item's
    gradient row is NaN (it does not exist); LogdetFn.backward refuses it.
    grad_fn: L.API['logdet_vjp'] to compute the gradient too (cotangent 1)."""
    B, nnz = vals.shape
    sign = torch.empty(B, dtype=torch.float64)
    lad = torch.empty(B, dtype=torch.float64)
    grad = torch.empty((B, nnz), dtype=torch.float64) if grad_fn is not None else None
    singular = torch.zeros(B, dtype=torch.bool)

    def run(slv, v, ib0):
        """Factor v ([b, nnz]) with slv and fill items ib0.. (lock taken here)."""
        with slv.lock:
            slv.prepare(v)
            for j in range(v.shape[0]):
                ib = ib0 + j
                if grad_fn is not None:
                    L.check(grad_fn(L.ctx(), slv.ptr, j, 1.0, _ptr(sign, ib), _ptr(lad, ib),
                                    _ptr(grad, ib * nnz), None), "logdet gradient")
                else:
                    s, d = ctypes.c_double(), ctypes.c_double()
                    L.check(L.sla_solver_logdet(L.ctx(), slv.ptr, j, ctypes.byref(s),
                                                ctypes.byref(d)), "logdet")
                    sign[ib], lad[ib] = s.value, d.value

    def mark_singular(ib):
        sign[ib], lad[ib] = 0.0, -float("inf")
        singular[ib] = True
        if grad is not None:
            grad[ib] = float("nan")

    try:
        run(solver, vals, 0)
    except L.SlaSingularError:
        if B == 1:
            mark_singular(0)
        else:
            one = item_solver()
            for ib in range(B):
                try:
                    run(one, vals[ib:ib + 1], ib)
                except L.SlaSingularError:
                    mark_singular(ib)
    return sign, lad, grad, singular


class LogdetFn(torch.autograd.Function):
    """log|det A(values)| per value array, with the gradient from the C
    function L.API['logdet_vjp'] (selected inversion). Values as
    c_slogdet: a singular matrix gives (0, -inf) in the forward pass; its
    gradient does not exist, and backward raises SlaSingularError when the
    loss depends on it (a zero incoming gradient, e.g. masked by
    torch.where, contributes nothing)."""

    @staticmethod
    def forward(ctx, values, solver, item_solver, grad_fn):
        sign, lad, grad, singular = c_slogdet(values, solver, item_solver, grad_fn)
        ctx.save_for_backward(grad)
        ctx.singular = singular
        ctx.vdtype = values.dtype
        ctx.mark_non_differentiable(sign)
        return sign, lad

    @staticmethod
    @once_differentiable
    def backward(ctx, gsign, glad):
        (grad,) = ctx.saved_tensors
        glad = glad.to(torch.float64)
        sing = ctx.singular
        if grad.shape[1] > 0 and bool(sing.any()):
            bad = sing & (glad != 0)
            if bool(bad.any()):
                ib = int(bad.nonzero()[0, 0])
                raise L.SlaSingularError(
                    -8, "matrix %d of the batch is singular (log|det A| = -inf): the gradient "
                    "of log|det A|, (A^-1)^T, does not exist there" % ib, "slogdet backward")
            glad = torch.where(sing, torch.zeros_like(glad), glad)
            grad = torch.where(sing[:, None], torch.zeros_like(grad), grad)
        return (glad[:, None] * grad).to(ctx.vdtype), None, None, None


class Diffusion2dFn(torch.autograd.Function):
    """values of sla_gen_diffusion2d's matrix from kappa, with its exact VJP."""

    @staticmethod
    def forward(ctx, kappa, N, nnz):
        vals = torch.empty(nnz, dtype=torch.float64)
        L.check(L.sla_gen_diffusion2d_values(L.ctx(), N, kappa.data_ptr(), vals.data_ptr()),
                "diffusion2d")
        ctx.N, ctx.ncell = N, kappa.numel()
        return vals

    @staticmethod
    @once_differentiable
    def backward(ctx, gvals):
        gvals = gvals.to(torch.float64).contiguous()
        gk = torch.empty(ctx.ncell, dtype=torch.float64)
        L.check(L.sla_gen_diffusion2d_vjp(L.ctx(), ctx.N, gvals.data_ptr(), gk.data_ptr()),
                "diffusion2d backward")
        return gk, None, None


class EigshFn(torch.autograd.Function):
    """(evals [B, k], evecs [B, k, n]) = eigsh(A(values)) by sla_eigsh_batch
    (ARPACK), with the VJP of sla_eigsh_batch_vjp. evecs3[b, i] is the i-th
    eigenvector (column-major n x k per value array, as C writes it)."""

    @staticmethod
    def forward(ctx, values, cmat, copts, api, box):
        B, nnz = values.shape
        k, n = int(copts.k), cmat.pattern.nrows
        evals = torch.empty((B, k), dtype=torch.float64)
        evecs = torch.empty((B, k, n), dtype=torch.float64)
        infos = (L.CEigshInfo * B)()
        with cmat.lock:
            cmat.bind(values)
            st = L.check(api["eigsh_batch"](L.ctx(), cmat.ptr, ctypes.byref(copts),
                                            evals.data_ptr(), evecs.data_ptr(), None,
                                            ctypes.addressof(infos)), "eigsh")
        box["info"] = [_eig_info(i) for i in infos]
        if st == 1:
            warnings.warn("sla: eigsh: not all %d eigenpairs converged: %r" % (k, box["info"]),
                          L.SlaConvergenceWarning, stacklevel=4)
        ctx.cmat, ctx.copts, ctx.api, ctx.box = cmat, copts, api, box
        ctx.set_materialize_grads(False)  # an unused output: NULL to the C VJP
        ctx.save_for_backward(values, evals, evecs)
        return evals, evecs

    @staticmethod
    @once_differentiable
    def backward(ctx, gl, gv):
        values, evals, evecs = ctx.saved_tensors
        cmat, copts, api = ctx.cmat, ctx.copts, ctx.api
        B, k, n = evecs.shape
        gl = gl.to(torch.float64).contiguous() if gl is not None else None
        gv = gv.to(torch.float64).contiguous() if gv is not None else None
        gA = torch.zeros(values.shape, dtype=torch.float64)
        if gl is None and gv is None:
            return gA, None, None, None, None
        infos = (L.CEigshInfo * B)()
        with cmat.lock:
            cmat.bind(values)
            st = L.check(api["eigsh_batch_vjp"](
                L.ctx(), cmat.ptr, ctypes.byref(copts), k, evals.data_ptr(), evecs.data_ptr(),
                gl.data_ptr() if gl is not None else None,
                gv.data_ptr() if gv is not None else None, gA.data_ptr(),
                ctypes.addressof(infos)), "eigsh backward")
        ctx.box["adjoint"] = [_eig_info(i) for i in infos]
        if st == 1:
            warnings.warn("sla: eigsh backward: a projected MINRES solve missed grad_rtol: %r"
                          % ctx.box["adjoint"], L.SlaConvergenceWarning, stacklevel=3)
        return gA, None, None, None, None


class EigshInfo:
    """Report of one eigsh (sla_eigsh_info): method, converged, nconv,
    iterations, nops, max_residual, factor_seconds, seconds, note."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        return "EigshInfo(method=%r, converged=%r, nconv=%d, iterations=%d, max_residual=%.3e%s)" % (
            self.method, self.converged, self.nconv, self.iterations, self.max_residual,
            ", note=%r" % self.note if self.note else "")


def _eig_info(c):
    return EigshInfo(method=c.method.decode("utf-8", "replace"), converged=bool(c.converged),
                     nconv=int(c.nconv), iterations=int(c.iterations), nops=int(c.nops),
                     max_residual=float(c.max_residual), factor_seconds=float(c.factor_seconds),
                     seconds=float(c.seconds), note=c.note.decode("utf-8", "replace"))
