"""nonlinear_solve: torch residuals bridged to the C nonlinear solver.

The user writes F(u, *params) in torch. The C solver (sla_nlsolver_*,
include/sla/nonlinear.h) runs Newton (or Anderson / Picard on request) and
calls back into Python through ctypes callbacks for:

* residual  F(u, theta): residual_fn under torch.no_grad();
* jacobian  dF/du values on a fixed sparse pattern, one of
  - a callable ``jacobian(u, *params) -> SparseTensor`` (its values on the
    pattern of its first result; later results must keep that pattern);
  - a pattern (a SparseTensor, whose values are ignored, or ``(row, col)``):
    the values come from torch autograd, one reverse pass of F per colour
    of a greedy row colouring (rows that share no column share a colour, so
    one pass gives all their entries: about 13 passes for a 5-point
    stencil). The pattern must contain every structural nonzero of dF/du;
  - None: matrix-free Newton-Krylov, J v and J^T v by autograd (jvp by
    the double-backward trick);
* vjp_theta lambda^T dF/dtheta: torch.autograd.grad of F with respect to
  the parameters (for the backward pass);
* vjp_u (matrix-free only) J^T v for the adjoint solve.

A Python exception raised inside a callback is stored, the callback
returns an error status (the C solve then fails with SLA_ERR_CALLBACK),
and the stored exception is re-raised once the C call has returned, with
the C error as its context.
"""

import ctypes
import warnings
import weakref

import torch
from torch.autograd.function import once_differentiable

from . import _lib as L

_CB_ERROR = -13  # SLA_ERR_CALLBACK (any error status aborts the C solve)


def _view(ptr, n):
    """A float64 tensor over n doubles at ptr (no copy; writes go through)."""
    if n == 0:
        return torch.empty(0, dtype=torch.float64)
    return torch.frombuffer((ctypes.c_double * n).from_address(ptr), dtype=torch.float64)


class NonlinearInfo:
    """Report of a nonlinear solve (sla_nl_info): method, iterations,
    residual (||F(u)||_2 at return), residual0 (||F(u0)||_2), converged,
    reason ("converged_rtol", "diverged_linesearch", ...), residual_evals,
    jacobian_evals, linear_solves, linear_iterations, line_search_cuts,
    chord_steps, history (||F|| per iteration), seconds, note, linear (the
    last linear solve's SolveInfo). After backward, ``adjoint`` holds the
    adjoint linear solve's SolveInfo."""

    def __init__(self, c, reason_name):
        from ._core import SolveInfo
        s = lambda b: b.decode("utf-8", "replace")  # noqa: E731
        self.method = s(c.method)
        self.iterations = int(c.iterations)
        self.residual = float(c.residual)
        self.residual0 = float(c.residual0)
        self.converged = bool(c.converged)
        r = reason_name(c.reason)
        self.reason = s(r) if r else str(c.reason)
        for f in ("residual_evals", "jacobian_evals", "linear_solves", "linear_iterations",
                  "line_search_cuts", "chord_steps"):
            setattr(self, f, int(getattr(c, f)))
        self.history = [float(c.history[i]) for i in range(int(c.history_len))] \
            if c.history else []
        self.seconds = float(c.seconds)
        self.note = s(c.note)
        self.linear = SolveInfo.from_c(c.linear)
        self.adjoint = None

    def __repr__(self):
        return ("NonlinearInfo(method=%r, iterations=%d, residual=%.3e, residual0=%.3e, "
                "converged=%r, reason=%r, jacobian_evals=%d%s)" % (
                    self.method, self.iterations, self.residual, self.residual0,
                    self.converged, self.reason, self.jacobian_evals,
                    ", note=%r" % self.note if self.note else ""))


def _row_colouring(rowptr, colind, n):
    """Greedy colouring of the rows so that rows of one colour share no
    column: colour[i] (int64 tensor) and the number of colours."""
    rp = rowptr.tolist()
    ci = colind.tolist()
    col_rows = [[] for _ in range(n)]
    for i in range(n):
        for p in range(rp[i], rp[i + 1]):
            col_rows[ci[p]].append(i)
    colour = [-1] * n
    ncol = 0
    for i in range(n):
        used = set()
        for p in range(rp[i], rp[i + 1]):
            for r in col_rows[ci[p]]:
                if colour[r] >= 0:
                    used.add(colour[r])
        c = 0
        while c in used:
            c += 1
        colour[i] = c
        ncol = max(ncol, c + 1)
    return torch.tensor(colour, dtype=torch.int64), ncol


class Problem:
    """The Python side of one sla_nl_problem: callbacks, the C pattern, the
    C solver. Kept alive by the autograd graph until backward is done."""

    def __init__(self, api, residual_fn, u0, specs, theta0, jacobian, jacobian_symmetric,
                 opts_string):
        self.solver = ctypes.c_void_p()
        self.pattern_M = ctypes.c_void_p()
        self.api = api
        self.fn = residual_fn
        self.u_shape = tuple(u0.shape)
        self.n = 1
        for s in self.u_shape:
            self.n *= int(s)
        self.specs = specs  # per parameter: ("t", shape, dtype, numel) or ("c", value)
        self.ntheta = sum(s[3] for s in specs if s[0] == "t")
        self.udtype = torch.float64
        self.error = None
        self.pattern = None
        # the callable-Jacobian mode reads the pattern at the start point
        self.u0_for_pattern = u0.detach().to(torch.float64)
        self.theta_for_pattern = self.params(theta0)
        self.jac_fn = None
        self.mode = None
        self._cbs = []

        self.copts = ctypes.create_string_buffer(int(api["nl_options_size"]()))
        api["nl_options_default"](self.copts)
        L.check(api["nl_options_parse"](L.ctx(), opts_string.encode(), self.copts),
                "nonlinear_solve options")

        prob = L.CNlProblem()
        prob.n, prob.ntheta = self.n, self.ntheta
        prob.residual = self._cb(L.NL_CB3, "residual", self._residual)
        prob.vjp_theta = self._cb(L.NL_CB4, "vjp_theta", self._vjp_theta)
        prob.jacobian_symmetric = bool(jacobian_symmetric)
        if jacobian is None:
            self.mode = "matrix_free"
            prob.jvp = self._cb(L.NL_CB4, "jvp", self._jvp)
            prob.vjp_u = self._cb(L.NL_CB4, "vjp_u", self._vjp_u)
        else:
            self._set_pattern(jacobian)
            prob.jac_pattern = self.pattern_M.value
            prob.jacobian = self._cb(L.NL_CB3, "jacobian", self._jacobian)
        self.cprob = prob
        L.check(api["nlsolver_create"](L.ctx(), ctypes.byref(prob), self.copts,
                                       ctypes.byref(self.solver)), "nonlinear_solve set-up")

    # ---- set-up ----------------------------------------------------------

    def _set_pattern(self, jacobian):
        from .sparse import SparseTensor
        if isinstance(jacobian, SparseTensor):
            pat, self.mode = jacobian, "autograd"
        elif isinstance(jacobian, (tuple, list)) and len(jacobian) == 2:
            row, col = jacobian
            row = torch.as_tensor(row)
            pat = SparseTensor(torch.zeros(row.numel(), dtype=torch.float64), row, col,
                               (self.n, self.n))
            self.mode = "autograd"
        elif callable(jacobian):
            self.jac_fn, self.mode = jacobian, "callable"
            # The pattern of the Jacobian at the start point (only its
            # structure is kept; C asks for the values again).
            pat = self._call_jacobian_fn(self.u0_for_pattern, self.theta_for_pattern)
        else:
            raise TypeError("nonlinear_solve: jacobian must be a callable returning a "
                            "SparseTensor, a SparseTensor or (row, col) pattern, or None "
                            "(matrix-free); got %r" % (type(jacobian),))
        if pat.is_batched or tuple(pat.shape) != (self.n, self.n):
            raise ValueError("nonlinear_solve: the Jacobian pattern must be an unbatched "
                             "%d x %d matrix (got shape %s)" % (self.n, self.n, pat.shape))
        p = self.pattern = pat.pattern
        zeros = torch.zeros(max(p.nnz, 1), dtype=torch.float64)
        L.check(L.sla_matrix_from_csr(L.ctx(), p.nrows, p.ncols, p.rowptr.data_ptr(),
                                      p.colind.data_ptr(), L.SLA_F64, 1, zeros.data_ptr(),
                                      L.SLA_COPY, ctypes.byref(self.pattern_M)),
                "nonlinear_solve Jacobian pattern")
        if self.mode == "autograd":
            self.colour, self.ncolours = _row_colouring(p.rowptr, p.colind, self.n)
            self.entry_colour = self.colour[p.rowind]

    def _cb(self, ftype, name, f):
        # The closure holds a weak reference, so the Problem (and its C
        # solver) is freed as soon as the autograd graph lets it go, not at
        # the next garbage collection.
        me = weakref.ref(self)
        method = f.__func__

        def wrapped(*args):
            self_ = me()
            if self_ is None:
                return _CB_ERROR
            try:
                method(self_, *args)
                return 0
            except BaseException as e:  # noqa: B902 (kept and re-raised after C returns)
                if self_.error is None:
                    self_.error = (name, e)
                return _CB_ERROR
        c = ftype(wrapped)
        self._cbs.append(c)  # the C struct holds the pointer only
        return c

    # ---- callbacks -------------------------------------------------------

    def params(self, theta, requires_grad=False):
        """The user's parameter list from theta (float64 tensor)."""
        out, off = [], 0
        for s in self.specs:
            if s[0] == "c":
                out.append(s[1])
                continue
            _, shape, dtype, numel = s
            p = theta[off:off + numel].reshape(shape).to(dtype)
            off += numel
            if requires_grad:
                p = p.detach().requires_grad_(True)
            out.append(p)
        return out

    def _u(self, ptr, requires_grad=False):
        u = _view(ptr, self.n).clone().reshape(self.u_shape).to(self.udtype)
        return u.requires_grad_(True) if requires_grad else u

    def _F(self, u, ps):
        F = self.fn(u, *ps)
        if not isinstance(F, torch.Tensor):
            raise TypeError("residual_fn must return a tensor (got %r)" % (type(F),))
        if F.numel() != self.n:
            raise ValueError("residual_fn returned %d values for %d unknowns (shape %s); "
                             "F(u) needs one equation per unknown"
                             % (F.numel(), self.n, tuple(F.shape)))
        return F.reshape(self.n)

    def _theta(self, ptr):
        return _view(ptr, self.ntheta).clone() if self.ntheta else torch.empty(0, dtype=torch.float64)

    def _residual(self, user, u, theta, F):
        with torch.no_grad():
            f = self._F(self._u(u), self.params(self._theta(theta)))
            _view(F, self.n).copy_(f.to(torch.float64))

    def _call_jacobian_fn(self, u, ps):
        from .sparse import SparseTensor
        with torch.no_grad():
            J = self.jac_fn(u, *ps)
        if not isinstance(J, SparseTensor):
            raise TypeError("jacobian(u, *params) must return an sla.SparseTensor (got %r)"
                            % (type(J),))
        return J

    def _jacobian(self, user, u, theta, vals):
        p = self.pattern
        out = _view(vals, p.nnz)
        if self.mode == "callable":
            J = self._call_jacobian_fn(self._u(u), self.params(self._theta(theta)))
            Jp = J.pattern  # checked against J's indices once (O(nnz))
            if Jp is not p and not (
                    Jp.nnz == p.nnz and torch.equal(Jp.rowptr, p.rowptr)
                    and torch.equal(Jp.colind, p.colind)):
                raise ValueError("jacobian(u, *params) returned a SparseTensor with another "
                                 "pattern than its first result (the pattern must stay fixed)")
            out.copy_(J.detach()._csr_values(Jp).reshape(p.nnz).to(torch.float64))
            return
        # autograd: one reverse pass per row colour
        uu = self._u(u, requires_grad=True)
        with torch.enable_grad():
            F = self._F(uu, self.params(self._theta(theta)))
            G = torch.zeros((self.ncolours, self.n), dtype=torch.float64)
            for c in range(self.ncolours):
                seed = (self.colour == c).to(F.dtype)
                g, = torch.autograd.grad(F, uu, seed, retain_graph=c + 1 < self.ncolours,
                                         allow_unused=True)
                if g is not None:
                    G[c] = g.reshape(self.n).to(torch.float64)
        out.copy_(G[self.entry_colour, p.colind])

    def _vjp_theta(self, user, u, theta, lam, g):
        ps = self.params(self._theta(theta), requires_grad=True)
        tens = [p for p, s in zip(ps, self.specs) if s[0] == "t"]
        lamt = _view(lam, self.n).clone()
        with torch.enable_grad():
            F = self._F(self._u(u), ps)
            grads = torch.autograd.grad(F, tens, lamt.to(F.dtype), allow_unused=True)
        out = _view(g, self.ntheta)
        off = 0
        for t, gr in zip(tens, grads):
            m = t.numel()
            if gr is None:
                out[off:off + m] = 0
            else:
                out[off:off + m] = gr.reshape(m).to(torch.float64)
            off += m

    def _jvp(self, user, u, theta, v, Jv):
        ps = self.params(self._theta(theta))
        vv = _view(v, self.n).clone().reshape(self.u_shape).to(self.udtype)
        with torch.enable_grad():
            _, jv = torch.autograd.functional.jvp(lambda x: self._F(x, ps), self._u(u), vv)
        _view(Jv, self.n).copy_(jv.reshape(self.n).to(torch.float64))

    def _vjp_u(self, user, u, theta, v, Jtv):
        ps = self.params(self._theta(theta))
        uu = self._u(u, requires_grad=True)
        vv = _view(v, self.n).clone()
        with torch.enable_grad():
            F = self._F(uu, ps)
            g, = torch.autograd.grad(F, uu, vv.to(F.dtype), allow_unused=True)
        out = _view(Jtv, self.n)
        if g is None:
            out.zero_()
        else:
            out.copy_(g.reshape(self.n).to(torch.float64))

    # ---- C calls ---------------------------------------------------------

    def raise_if_callback_failed(self, st, where):
        """After a C call: re-raise a stored callback exception, else check st."""
        if self.error is not None:
            name, e = self.error
            self.error = None
            try:
                L.check(st, where)
            except L.SlaError as ce:
                raise e from ce
            raise e
        return L.check(st, where)

    def __del__(self):
        api = getattr(self, "api", None)
        if api is None:
            return
        if self.solver.value:
            api["nlsolver_destroy"](ctypes.byref(self.solver))
        if self.pattern_M.value and L.sla_matrix_destroy:
            L.sla_matrix_destroy(ctypes.byref(self.pattern_M))


class NonlinearSolveFn(torch.autograd.Function):
    """u* with F(u*, theta) = 0 by sla_nlsolver_solve; backward by
    sla_nlsolver_solve_vjp (one adjoint linear solve + vjp_theta)."""

    @staticmethod
    def forward(ctx, prob, box, u0, *thetas):
        api = prob.api
        theta = torch.cat([t.detach().reshape(-1).to(torch.float64) for t in thetas]) \
            if thetas else torch.empty(0, dtype=torch.float64)
        theta = theta.contiguous()
        u = u0.detach().reshape(-1).to(torch.float64).clone().contiguous()
        info = L.CNlInfo()
        st = api["nlsolver_solve"](L.ctx(), prob.solver, theta.data_ptr() if prob.ntheta else None,
                                   u.data_ptr(), ctypes.byref(info))
        st = prob.raise_if_callback_failed(st, "nonlinear_solve")
        box["info"] = NonlinearInfo(info, api["nl_reason_name"])
        if st == 1 and not box.get("quiet"):
            warnings.warn("sla: nonlinear_solve did not converge: %r" % box["info"],
                          L.SlaConvergenceWarning, stacklevel=4)
        ctx.prob, ctx.box = prob, box
        ctx.shapes = [(t.shape, t.dtype) for t in thetas]
        return u

    @staticmethod
    @once_differentiable
    def backward(ctx, gu):
        prob = ctx.prob
        ntheta = prob.ntheta
        if not any(ctx.needs_input_grad[3:]):
            return (None, None, None) + (None,) * len(ctx.shapes)
        gu = gu.to(torch.float64).reshape(-1).contiguous()
        gtheta = torch.empty(max(ntheta, 1), dtype=torch.float64)
        cinfo = L.CSolveInfo()
        st = prob.api["nlsolver_solve_vjp"](L.ctx(), prob.solver, gu.data_ptr(),
                                            gtheta.data_ptr(), None, ctypes.byref(cinfo))
        st = prob.raise_if_callback_failed(st, "nonlinear_solve backward")
        from ._core import SolveInfo
        adj = SolveInfo.from_c(cinfo)
        if ctx.box.get("info") is not None:
            ctx.box["info"].adjoint = adj
        if st == 1:
            warnings.warn("sla: nonlinear_solve backward: the adjoint solve did not converge: %r"
                          % adj, L.SlaConvergenceWarning, stacklevel=3)
        out, off = [], 0
        for (shape, dtype) in ctx.shapes:
            m = 1
            for s in shape:
                m *= int(s)
            out.append(gtheta[off:off + m].reshape(shape).to(dtype))
            off += m
        return (None, None, None) + tuple(out)


def nonlinear_solve(residual_fn, u0, *params, jacobian=None, method="newton", rtol=None,
                    atol=None, maxiter=None, jacobian_symmetric=False, return_info=False,
                    **options):
    """u with residual_fn(u, *params) = 0, differentiable in params.

    residual_fn(u, *params) -> F: written in torch, F with one value per
    entry of u (u has u0's shape and float64 entries). params: tensors
    (scalars or any shape; floating-point ones are the differentiable
    parameters theta, passed to residual_fn in their own dtype) and other Python objects passed through unchanged.

    jacobian: how Newton gets dF/du (see the module's docstring):
      * a callable jacobian(u, *params) -> SparseTensor: its values on a
        fixed pattern (the pattern of its first result), written by you;
      * a SparseTensor (values ignored) or (row, col): the pattern; the
        values are computed with torch autograd from residual_fn (one
        reverse pass per colour of the rows);
      * None (default): matrix-free Newton-Krylov (J v, J^T v by autograd;
        set a Krylov linear method, e.g. linear_method="gmres").
    jacobian_symmetric: every Jacobian is exactly symmetric (lets the C
    solver skip its check and use symmetric solvers).

    method: newton (backtracking line search), anderson, picard (the last
    two need a fixed-point map, which this binding does not expose: use
    newton). rtol, atol, maxiter and the other keys of the C options string
    as keywords: stol, line_search, ls_alpha, ls_shrink, ls_maxsteps,
    chord_ratio, adjoint_reuse, and linear_* for the linear solves
    (linear_method="cg", linear_precond="amg", linear_rtol=...). Unknown
    keys are refused by sla_nl_options_parse, naming the nearest.

    Gradient: by the implicit function theorem, dL/dtheta = -lambda^T
    dF/dtheta with J(u*)^T lambda = dL/du: one adjoint linear solve
    (sla_nlsolver_solve_vjp) and one torch.autograd.grad of F with respect
    to the parameters, whatever the number of Newton steps. No gradient
    flows to u0.

    A solve that stops short of its tolerance warns (SlaConvergenceWarning)
    unless return_info; its gradient is then refused by C. return_info:
    also return a NonlinearInfo. An exception raised by residual_fn or
    jacobian propagates unchanged (its context: the C error).
    """
    api = L.API
    from ._complex import refuse
    refuse("nonlinear_solve", u0, *params)
    if not isinstance(u0, torch.Tensor):
        u0 = torch.as_tensor(u0, dtype=torch.float64)
    if u0.device.type != "cpu":
        raise ValueError("u0 must be a CPU tensor (sla runs on the CPU)")
    if not u0.dtype.is_floating_point:
        u0 = u0.to(torch.float64)
    if u0.numel() == 0:
        raise ValueError("nonlinear_solve: u0 is empty")
    specs, thetas = [], []
    for p in params:
        if isinstance(p, torch.Tensor) and p.dtype.is_floating_point:
            if p.device.type != "cpu":
                raise ValueError("nonlinear_solve: parameters must be CPU tensors")
            specs.append(("t", tuple(p.shape), p.dtype, p.numel()))
            thetas.append(p)
        else:
            specs.append(("c", p, None, 0))
    items = [("method", method)]
    for k, v in (("rtol", rtol), ("atol", atol), ("maxiter", maxiter)):
        if v is not None:
            items.append((k, v))
    items += sorted(options.items())
    parts = []
    for k, v in items:
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, float):
            v = repr(v)
        v = str(v)
        if any(c in v for c in ",= ") or not v:
            raise ValueError("nonlinear_solve option %s: bad value %r" % (k, v))
        parts.append("%s=%s" % (k, v))
    opts = ",".join(parts)

    theta0 = torch.cat([t.detach().reshape(-1).to(torch.float64) for t in thetas]) \
        if thetas else torch.empty(0, dtype=torch.float64)
    prob = Problem(api, residual_fn, u0, specs, theta0, jacobian, jacobian_symmetric, opts)
    box = {"quiet": return_info}
    u = NonlinearSolveFn.apply(prob, box, u0, *thetas)
    u = u.reshape(u0.shape).to(u0.dtype)
    if return_info:
        return u, box["info"]
    return u
