"""Matrix-free solves: ``sla.solve(matvec, b, shape=(n, n), method=...)`` and
``sla.LinearOperator`` (SciPy's idea: an operator known by its products).

The Krylov iteration runs in C (sla_linop_solve, include/sla/linop.h); it
calls back into Python for every product, through a ctypes CFUNCTYPE that
views the C vector as a float64 tensor. An exception raised by matvec,
rmatvec or the preconditioner stops the solve (the C side answers
SLA_ERR_CALLBACK) and is raised again here, unchanged.

Gradients (the adjoint method, O(n) memory whatever the iteration count):

* to b: grad_b = lambda = A^-T grad_x, one transposed solve through rmatvec
  (methods cg and minres vouch that A is symmetric: rmatvec = matvec);
* to parameters theta that matvec's torch code depends on:
  grad_theta = -lambda^T d(A x)/d theta, one torch.autograd.grad of
  matvec(x) with grad_outputs = -lambda. The parameters are found in the
  autograd graph of one product matvec(x) (the leaves it reaches), so any
  torch code works: a dense K(theta) @ v, a SparseTensor matvec, a
  network's Jacobian-vector product.

With create_graph=True the backward is itself differentiable (the adjoint
solve is this differentiable solve again, with the transposed operator, and
the theta term is taken on the differentiable x), so Hessian-vector products
and gradgradcheck work.
"""

import ctypes

import torch

from . import _lib as L
from ._core import SolveInfo, options_string

# int (*)(void *user, sla_int n, const double *x, double *y)
_OP_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                          ctypes.c_void_p)
_PROTO = [L.P, ctypes.c_int64, _OP_FN, _OP_FN, ctypes.c_void_p, L.P, L.PTR, L.PTR, L.INFO_P]
_solve = L._proto("sla_linop_solve", ctypes.c_int, *_PROTO)
_solve_t = L._proto("sla_linop_solve_transpose", ctypes.c_int, *_PROTO)
_set_pc = L._proto("sla_solver_options_set_user_precond", None, L.P, _OP_FN, _OP_FN,
                   ctypes.c_void_p)

_SYMMETRIC_METHODS = ("cg", "minres", "cocg")  # cocg on a real operator is cg


def _view(ptr, n):
    """The C vector at ptr as a float64 tensor (no copy; valid during the call)."""
    return torch.frombuffer((ctypes.c_double * n).from_address(ptr), dtype=torch.float64)


class _Callback:
    """A Python function v -> A v as a C callback. The first exception it
    raises is kept in .error (the C solve then stops); later calls are not
    made by C (it fills NaN instead)."""

    def __init__(self, fn, n, what):
        self.fn, self.n, self.what = fn, n, what
        self.error = None
        self.c = _OP_FN(self._call)

    def _call(self, user, n, xp, yp):
        try:
            x = _view(xp, n).clone()  # the callee may keep it: never hand out C memory
            with torch.no_grad():
                y = self.fn(x)
            if not isinstance(y, torch.Tensor):
                y = torch.as_tensor(y)
            if y.is_complex():
                raise TypeError("%s returned a complex tensor; matrix-free solves are real"
                                % self.what)
            if y.numel() != n:
                raise ValueError("%s returned shape %s for a vector of length %d (expected (%d,))"
                                 % (self.what, tuple(y.shape), n, n))
            _view(yp, n).copy_(y.detach().reshape(n))
            return 0
        except BaseException as e:  # noqa: B902 - everything must stay in Python
            if self.error is None:
                self.error = e
            return 1


class LinearOperator:
    """A square or rectangular operator known by its products, for
    ``sla.solve``: ``LinearOperator((n, n), matvec, rmatvec=None,
    symmetric=False)``. matvec(v) returns A v and rmatvec(v) A^T v, both as
    torch tensors of shape (n,) given a float64 tensor of shape (n,); they
    may be torch code that depends on tensors requiring grad (gradients
    then flow to them through ``solve``). symmetric=True says A^T = A
    (rmatvec defaults to matvec). ``A @ v``, ``A.T`` and ``A.solve(b)`` as
    for a matrix."""

    def __init__(self, shape, matvec, rmatvec=None, symmetric=False):
        shape = tuple(int(s) for s in shape)
        if len(shape) != 2 or min(shape) < 0:
            raise ValueError("LinearOperator: shape must be (m, n) (got %s)" % (shape,))
        if not callable(matvec):
            raise TypeError("LinearOperator: matvec must be callable")
        if rmatvec is not None and not callable(rmatvec):
            raise TypeError("LinearOperator: rmatvec must be callable or None")
        if symmetric and shape[0] != shape[1]:
            raise ValueError("LinearOperator: a symmetric operator is square (got %s)" % (shape,))
        self.shape = shape
        self._matvec, self._rmatvec = matvec, rmatvec
        self.symmetric = bool(symmetric)

    def matvec(self, v):
        return self._matvec(v)

    def rmatvec(self, v):
        if self._rmatvec is not None:
            return self._rmatvec(v)
        if self.symmetric:
            return self._matvec(v)
        raise ValueError("this LinearOperator has no rmatvec (A^T v), which a transposed or "
                         "adjoint solve with a nonsymmetric method needs: pass rmatvec=... or "
                         "symmetric=True")

    @property
    def has_rmatvec(self):
        return self._rmatvec is not None or self.symmetric

    def __matmul__(self, v):
        if v.dim() == 1:
            return self.matvec(v)
        return torch.stack([self.matvec(v[:, j]) for j in range(v.shape[1])], 1)

    @property
    def T(self):
        """A^T (matvec and rmatvec swapped)."""
        return LinearOperator(self.shape[::-1], self.rmatvec if self.has_rmatvec else _no_rmatvec,
                              self._matvec, self.symmetric)

    def solve(self, b, **kw):
        """x with A x = b: ``sla.solve(self, b, **kw)``."""
        return solve(self, b, **kw)

    def __repr__(self):
        return "LinearOperator(shape=%s%s%s)" % (
            self.shape, ", symmetric=True" if self.symmetric else "",
            "" if self.has_rmatvec else ", no rmatvec")


def _no_rmatvec(v):
    raise ValueError("the transpose of a LinearOperator without rmatvec has no matvec")


def _leaves(t):
    """The tensors requiring grad at the leaves of t's autograd graph."""
    out, seen, stack = [], {}, [t.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen[id(fn)] = fn  # the reference keeps the id unique during the walk
        var = getattr(fn, "variable", None)  # AccumulateGrad
        if var is not None:
            out.append(var)
        stack.extend(nxt for nxt, _ in fn.next_functions)
    return out


class _Plan:
    """Everything one matrix-free solve needs besides the vectors: the
    operator, the options block (with the preconditioner's callbacks set),
    the method's symmetry."""

    def __init__(self, op, method, M, rtol, atol, maxiter, options):
        self.op, self.n = op, op.shape[0]
        self.symmetric = op.symmetric or method in _SYMMETRIC_METHODS
        self.M = M
        self.opts_str = options_string(method, "user" if M is not None else None, rtol, atol,
                                       maxiter, **options)
        self.copts = ctypes.create_string_buffer(L.OPTIONS_BYTES)
        L.sla_solver_options_default(self.copts)
        L.check(L.sla_solver_options_parse(L.ctx(), self.opts_str.encode(), self.copts),
                "solve options")

    def apply(self, transpose):
        """The torch function of A (transpose: A^T)."""
        if not transpose:
            return self.op.matvec
        if self.op.has_rmatvec:
            return self.op.rmatvec
        if self.symmetric:
            return self.op.matvec
        return self.op.rmatvec  # raises the explanatory ValueError

    def c_solve(self, b2, transpose, use_x0=None):
        """x2 [k, n] with A x = b (A^T x = b) for each row of b2 (no graph).
        Returns (x2, SolveInfo, status)."""
        n = self.n
        k = b2.shape[0]
        if transpose and not self.op.has_rmatvec and not self.symmetric:
            self.op.rmatvec(None)  # raises: which argument is missing, and why
        b2 = b2.detach().to(torch.float64).contiguous()
        x2 = use_x0.detach().to(torch.float64).clone() if use_x0 is not None else \
            torch.zeros((k, n), dtype=torch.float64)
        fwd = _Callback(self.op.matvec, n, "matvec")
        has_t = self.op.has_rmatvec
        tr = _Callback(self.op.rmatvec, n, "rmatvec") if has_t else None
        pcs = []
        if self.M is not None:
            Mop = self.M if isinstance(self.M, LinearOperator) else LinearOperator((n, n), self.M)
            pcs = [_Callback(Mop.matvec, n, "preconditioner M")]
            pcs.append(_Callback(Mop.rmatvec, n, "preconditioner M (transposed)")
                       if Mop.has_rmatvec else None)
            _set_pc(self.copts, pcs[0].c, pcs[1].c if pcs[1] else _OP_FN(), None)
        infos = (L.CSolveInfo * max(k, 1))()
        fn = _solve_t if transpose else _solve
        st = 0
        for j in range(k):
            raw = fn(L.ctx(), n, fwd.c, tr.c if tr else _OP_FN(), None, self.copts,
                     b2[j].data_ptr(), x2[j].data_ptr(),
                     ctypes.addressof(infos) + j * ctypes.sizeof(L.CSolveInfo))
            for cb in [fwd, tr] + pcs:
                if cb is not None and cb.error is not None:
                    raise cb.error
            st = max(st, L.check(raw, "matrix-free solve"))
        return x2, SolveInfo.combine(infos[:k]), st


def _warn(st, info, what):
    if st == 1 and not info.converged:
        import warnings
        warnings.warn("sla: %s did not converge: %r" % (what, info), L.SlaConvergenceWarning,
                      stacklevel=5)


def _solve_diff(plan, b2, transpose, box, x0=None):
    """x2 = A^-1 b2 (A^-T b2), differentiable in b2 and in the parameters of
    the operator's torch code."""
    xs, info, st = plan.c_solve(b2, transpose, x0)
    if "info" not in box:
        box["info"] = info
    if not box.get("quiet"):
        _warn(st, info, box.get("what", "matrix-free solve"))
    if not torch.is_grad_enabled():
        return xs
    f = plan.apply(transpose)
    with torch.enable_grad():
        y = _products(f, xs, plan.n)
    params = _leaves(y) if y.requires_grad else []
    if not params and not b2.requires_grad:
        return xs
    return _MatrixFreeSolveFn.apply(plan, transpose, box, [y if params else None], xs, b2,
                                    *params)


def _products(f, X, n):
    """[k, n]: f applied to each row of X (a graph when X or f's tensors need one)."""
    return torch.stack([torch.as_tensor(f(X[j])).reshape(n) for j in range(X.shape[0])])


class _MatrixFreeSolveFn(torch.autograd.Function):
    """x = A^-1 b (transpose: A^-T b) for an operator given by torch code.
    Inputs: b2 [k, n] and the leaves `params` of one product's graph;
    holder[0] = A(params) x* (that product, built in forward) serves the
    first-order theta term, so the common backward makes no extra product."""

    @staticmethod
    def forward(ctx, plan, transpose, box, holder, xs, b2, *params):
        ctx.plan, ctx.transpose, ctx.box, ctx.holder = plan, transpose, box, holder
        x = xs.clone()
        ctx.save_for_backward(x, *params)
        return x

    @staticmethod
    def backward(ctx, gx):
        saved = ctx.saved_tensors
        x, params = saved[0], saved[1:]
        plan, transpose = ctx.plan, ctx.transpose
        adj = {"quiet": False, "what": "adjoint matrix-free solve"}
        create_graph = torch.is_grad_enabled()
        gx = gx.to(torch.float64)
        if create_graph:  # lambda = A^-T gx as a differentiable solve
            lam = _solve_diff(plan, gx, not transpose, adj)
        else:
            lam, info, st = plan.c_solve(gx, not transpose)
            adj["info"] = info
            _warn(st, info, "adjoint matrix-free solve")
        fwd = ctx.box.get("info")
        if fwd is not None and fwd.adjoint is None:
            fwd.adjoint = adj.get("info")
        need = ctx.needs_input_grad[6:]
        gparams = [None] * len(params)
        if params and any(need):
            if create_graph:  # -d/dtheta <lambda, A x>, differentiable in x, lambda, theta
                gparams = list(_ThetaTermFn.apply(plan.apply(transpose), plan.n, x, -lam,
                                                  *params))
            else:
                # the product's graph is kept (retain_graph): another backward
                # through this node (gradcheck, retain_graph=True) uses it again,
                # and parameters computed outside matvec (theta = softplus(raw))
                # share their upstream nodes with it
                y = ctx.holder[0]
                want = [p for p, nd in zip(params, need) if nd]
                g = iter(torch.autograd.grad(y, want, grad_outputs=-lam.to(y.dtype),
                                             retain_graph=True, allow_unused=True))
                gparams = [next(g) if nd else None for nd in need]
        gb = lam if ctx.needs_input_grad[5] else None
        return (None, None, None, None, None, gb, *gparams)


def _zero_if_none(g, like):
    return torch.zeros_like(like) if g is None else g


class _ThetaTermFn(torch.autograd.Function):
    """g = d/dtheta <w, A(theta) x>, the partial derivative (x and w held
    fixed), as a function of (x, w, theta) whose own VJP is exact: the
    theta term of the matrix-free solve's backward under create_graph=True.
    (autograd.grad of A(theta) x on the differentiable x would also follow
    x's dependence on theta: the total derivative, not this partial.)"""

    @staticmethod
    def forward(ctx, f, n, x, w, *params):
        ctx.f, ctx.n = f, n
        ctx.save_for_backward(x, w, *params)
        with torch.enable_grad():
            s = (w.detach() * _products(f, x.detach(), n)).sum()
            g = torch.autograd.grad(s, params, retain_graph=True, allow_unused=True)
        return tuple(_zero_if_none(gi, p).detach() for gi, p in zip(g, params))

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *ggs):
        saved = ctx.saved_tensors
        x, w, params = saved[0], saved[1], saved[2:]
        with torch.enable_grad():
            xl = x.detach().requires_grad_()
            wl = w.detach().requires_grad_()
            s = (wl * _products(ctx.f, xl, ctx.n)).sum()
            g = torch.autograd.grad(s, params, create_graph=True, allow_unused=True)
            for gi in g:
                if gi is not None and not gi.requires_grad:
                    raise RuntimeError(
                        "sla.solve: a second derivative through the matrix-free operator needs "
                        "matvec's torch code to be differentiable twice (its first derivative "
                        "came back without a graph: a once_differentiable Function or no_grad "
                        "code inside matvec)")
            h = sum((gg * gi).sum() for gg, gi in zip(ggs, g) if gg is not None and gi is not None)
            if not isinstance(h, torch.Tensor):  # theta unused by matvec
                return (None, None, torch.zeros_like(x), torch.zeros_like(w),
                        *[None] * len(params))
            out = torch.autograd.grad(h, [xl, wl, *params], retain_graph=True,
                                      allow_unused=True)
        gx, gw = _zero_if_none(out[0], x), _zero_if_none(out[1], w)
        return (None, None, gx, gw, *out[2:])


def solve(A, b, shape=None, method="auto", rmatvec=None, M=None, rtol=None, atol=None,
          maxiter=None, x0=None, return_info=False, **options):
    """x with A x = b for an operator A known by its products.

    A: a callable matvec(v) -> A v (then ``shape=(n, n)`` is required), a
    ``LinearOperator``, or a ``SparseTensor`` (then ``A.solve(b, ...)``).
    b: (n,) or (n, k). method: "auto" (GMRES), "cg" (A symmetric positive
    definite), "minres" (A symmetric), "cocg" (cg on a real operator),
    "bicgstab", "gmres" (any nonsingular
    A; option restart=m). rmatvec(v) -> A^T v: needed by the gradient to b
    and to parameters (one adjoint solve with A^T) for bicgstab, gmres and
    auto; cg, minres and cocg use matvec. M: a preconditioner, a callable r ->
    M^-1 r (or a LinearOperator whose rmatvec is M^-T r; otherwise M is taken
    as symmetric). rtol, atol, maxiter (0: 10 n, at least 1000), x0 (an
    initial guess, not differentiated) and further keys of the options
    string (restart, max_seconds) as for ``SparseTensor.solve``;
    SolverConfig's defaults do not apply here.

    Differentiable in b and, when matvec is torch code depending on tensors
    that require grad, in those tensors (see the module docstring): twice
    (create_graph=True; a third derivative through the parameters is not
    supported, one through b alone is). return_info: also return a SolveInfo (backend "matrix-free";
    after backward, ``adjoint`` holds the adjoint solve's report). A
    solve that stops short of its tolerance warns with SlaConvergenceWarning
    unless return_info is set. An exception raised by a callback is raised
    again, as it is.
    """
    from .sparse import SparseTensor
    if isinstance(A, SparseTensor):
        if rmatvec is not None or M is not None:
            raise ValueError("solve: rmatvec and M are for matrix-free operators; a SparseTensor "
                             "takes preconditioner=...")
        return A.solve(b, method=method, rtol=rtol, atol=atol, maxiter=maxiter, x0=x0,
                       return_info=return_info, **options)
    if isinstance(A, LinearOperator):
        op = A
        if rmatvec is not None:
            raise ValueError("solve: pass rmatvec to the LinearOperator, not to solve")
        if shape is not None and tuple(shape) != A.shape:
            raise ValueError("solve: shape %s differs from the operator's %s" % (shape, A.shape))
    elif callable(A):
        if shape is None:
            raise ValueError("solve: a matvec callable needs shape=(n, n)")
        op = LinearOperator(shape, A, rmatvec)
    else:
        raise TypeError("solve: A must be a callable matvec, a LinearOperator or a SparseTensor "
                        "(got %s)" % type(A).__name__)
    n = op.shape[0]
    if op.shape[0] != op.shape[1]:
        raise ValueError("solve needs a square operator (shape %s)" % (op.shape,))
    if method is None:
        method = "auto"
    if "use_x0" in options:
        raise ValueError("solve: pass the initial guess as x0=..., not use_x0")
    if x0 is not None:
        options["use_x0"] = True
    b = b if isinstance(b, torch.Tensor) else torch.as_tensor(b, dtype=torch.float64)
    if b.is_complex():
        raise TypeError("solve: matrix-free solves are real (b is %s)" % b.dtype)
    if b.device.type != "cpu":
        raise ValueError("b must be a CPU tensor (sla runs on the CPU; use .cpu())")
    if b.dim() == 1 and b.shape[0] == n:
        b2, vec = b.reshape(1, n), True
    elif b.dim() == 2 and b.shape[0] == n:
        b2, vec = b.t(), False
    else:
        raise ValueError("b has shape %s; expected (%d,) or (%d, k)" % (tuple(b.shape), n, n))
    x02 = None
    if x0 is not None:
        x0 = torch.as_tensor(x0, dtype=torch.float64)
        if tuple(x0.shape) != tuple(b.shape):
            raise ValueError("x0 has shape %s; it must match b's %s"
                             % (tuple(x0.shape), tuple(b.shape)))
        x02 = x0.reshape(1, n) if vec else x0.t()
    plan = _Plan(op, str(method), M, rtol, atol, maxiter, options)
    box = {"quiet": return_info}
    x2 = _solve_diff(plan, b2.to(torch.float64), False, box, x02)
    x = x2.reshape(n) if vec else x2.t()
    if b.dtype != torch.float64 and b.dtype.is_floating_point:
        x = x.to(b.dtype)
    return (x, box["info"]) if return_info else x
