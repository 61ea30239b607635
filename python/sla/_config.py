"""SolverConfig: scoped defaults for ``solve`` and named presets.

A ``SolverConfig`` holds the arguments of ``SparseTensor.solve`` (method,
preconditioner, rtol, atol, maxiter) and a dict of further keys of the C
library's options string (``restart``, ``amg_reuse``, ``saamg_reuse``, ...).
Used as a context manager it makes them the defaults of every solve in the
``with`` block on this thread::

    with sla.SolverConfig(method="cg", preconditioner="ic0", rtol=1e-10):
        x = A.solve(b)                  # cg + ic0 to 1e-10
        y = A.solve(b, rtol=1e-6)       # an explicit argument wins

Configurations nest (a stack per thread): a field left at None in the inner
one falls through to the outer one, and the option dicts are merged with the
inner keys winning. Other threads are not affected. Nothing here computes:
the resolved arguments are passed to the C library as before, which checks
every name and value.
"""

import dataclasses
import threading
from typing import Any, Dict, Optional

_FIELDS = ("method", "preconditioner", "rtol", "atol", "maxiter")
_tls = threading.local()


def _stack():
    s = getattr(_tls, "stack", None)
    if s is None:
        s = _tls.stack = []
    return s


def active():
    """Whether a SolverConfig is active on this thread (cheap: solve's fast
    path asks on every call)."""
    return bool(getattr(_tls, "stack", None))


@dataclasses.dataclass
class SolverConfig:
    """Defaults for ``solve`` (see the module docstring); every field None
    means "not set here". ``options``: further keys of the C options string
    (``SparseTensor.solve``'s keyword arguments), e.g. ``{"restart": 50}``.

    Presets (classmethods, each returns a new SolverConfig that can be
    changed with ``dataclasses.replace`` or ``cfg.replace(...)``): ``auto``,
    ``high_accuracy``, ``fast``, ``for_spd``, ``for_nonsymmetric``,
    ``for_training``."""

    method: Optional[str] = None
    preconditioner: Optional[str] = None
    rtol: Optional[float] = None
    atol: Optional[float] = None
    maxiter: Optional[int] = None
    options: Dict[str, Any] = dataclasses.field(default_factory=dict)

    # ---- scope --------------------------------------------------------

    def __enter__(self):
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        s = _stack()
        # pop this config (the innermost occurrence): with-blocks nest, so it
        # is the top of the stack unless a caller entered one by hand
        for i in range(len(s) - 1, -1, -1):
            if s[i] is self:
                del s[i]
                break
        return False

    def replace(self, **changes):
        """A copy with some fields changed (options given here are merged
        into a copy of this config's options)."""
        opts = dict(self.options)
        opts.update(changes.pop("options", {}) or {})
        return dataclasses.replace(self, options=opts, **changes)

    def solve_kwargs(self):
        """The keyword arguments of solve this config sets (None fields left out)."""
        kw = {f: getattr(self, f) for f in _FIELDS if getattr(self, f) is not None}
        kw.update(self.options)
        return kw

    @staticmethod
    def current():
        """The effective configuration on this thread: every active config
        merged (inner over outer); an empty SolverConfig outside any."""
        out = SolverConfig()
        for cfg in _stack():
            for f in _FIELDS:
                v = getattr(cfg, f)
                if v is not None:
                    setattr(out, f, v)
            out.options.update(cfg.options)
        return out

    # ---- presets ------------------------------------------------------

    @classmethod
    def auto(cls):
        """method="auto": the C library's dispatch chooses (a sparse
        factorization when it is predicted cheap, else a preconditioned
        Krylov method; a trial Cholesky for symmetric matrices with a
        positive diagonal, LU otherwise), default tolerance rtol=1e-8. The
        same as no config; useful to reset inside an outer config."""
        return cls(method="auto", preconditioner="none")

    @classmethod
    def high_accuracy(cls):
        """Accuracy first: method="auto" with rtol=1e-12, atol=0, and
        ``auto_direct_seconds=1.0`` (factor whenever the factorization is
        predicted to take under a second, instead of 0.05 s): direct solves
        are refined to a componentwise backward error near machine epsilon,
        and an iterative fallback runs to 1e-12 (maxiter left at the C
        default, 10 n)."""
        return cls(method="auto", rtol=1e-12, atol=0.0, options={"auto_direct_seconds": 1.0})

    @classmethod
    def fast(cls):
        """Speed first: method="auto" with rtol=1e-6 and
        ``auto_direct_seconds=0`` (the cost model alone picks between
        factorization and Krylov, with no bias towards factoring). For
        losses that do not need more than ~6 digits of x."""
        return cls(method="auto", rtol=1e-6, options={"auto_direct_seconds": 0.0})

    @classmethod
    def for_spd(cls, iterative=False):
        """Symmetric positive definite matrices. Default: method="cholesky"
        (CHOLMOD): the factor serves the forward and the adjoint solve (A^T
        = A) and refreshes reuse its symbolic analysis. iterative=True (for
        matrices whose factor does not fit, e.g. 3-D meshes of millions of
        unknowns): method="cg" with preconditioner="saamg" (sla's smoothed
        aggregation AMG, symmetric V-cycle) to rtol=1e-8."""
        if iterative:
            return cls(method="cg", preconditioner="saamg", rtol=1e-8)
        return cls(method="cholesky")

    @classmethod
    def for_nonsymmetric(cls, iterative=False):
        """Nonsymmetric matrices. Default: method="lu" (the library's sparse
        LU, UMFPACK when built): one factorization answers the forward
        solve and, transposed, the adjoint. iterative=True: method="gmres"
        with preconditioner="ilut" (threshold ILU with pivoting, like
        SciPy's spilu) and restart=50 (fewer stagnating restarts than the
        default 30), rtol=1e-8."""
        if iterative:
            return cls(method="gmres", preconditioner="ilut", rtol=1e-8, options={"restart": 50})
        return cls(method="lu")

    @classmethod
    def for_training(cls, reuse=10):
        """Training loops (the same pattern, values changing a little each
        step): method="auto" (the choice is made once per pattern and kept
        across value changes: direct methods refactor numerically on the
        kept symbolic analysis), ``amg_reuse=reuse`` (a hypre BoomerAMG
        hierarchy is kept for that many value refreshes: a stale hierarchy
        is still a valid preconditioner, it only costs iterations) and
        ``saamg_reuse="hierarchy"`` (saamg keeps its whole hierarchy and
        takes only the fine level's new values while every entry of A stays
        within 25 % of the values its coarse levels came from, recomputes
        those, as ``"interpolation"`` does, past that, and rebuilds past
        300 %: a refresh
        of diffusion2d 1e6 took 0.019 s instead of 0.14 s with the same 17
        CG iterations, docs/amg.md). On
        diffusion with a strongly varying random coefficient,
        ``config.replace(options={"saamg_theta": 0.01})`` (a lower strength
        threshold on the fine level) made a step 17-25 % cheaper at 1e6
        unknowns; anisotropic problems need the default (docs/amg.md).
        Passing the last step's solution as ``x0=`` (a warm start) is the
        caller's to do: on the same diffusion problem it took the solve
        from 17 to 11 CG iterations (0.455 -> 0.308 s on 2 threads,
        bench/RESULTS.md, the anchors' training step)."""
        return cls(method="auto", options={"amg_reuse": int(reuse),
                                           "saamg_reuse": "hierarchy"})


def resolve(method, preconditioner, rtol, atol, maxiter, options):
    """solve's arguments with those left at None taken from the active
    SolverConfig (explicit arguments and explicit option keywords win);
    method still None becomes "auto". Returns the same tuple shape."""
    s = _stack()
    if s:
        cur = SolverConfig.current()
        method = cur.method if method is None else method
        preconditioner = cur.preconditioner if preconditioner is None else preconditioner
        rtol = cur.rtol if rtol is None else rtol
        atol = cur.atol if atol is None else atol
        maxiter = cur.maxiter if maxiter is None else maxiter
        if cur.options:
            merged = dict(cur.options)
            merged.update(options)
            options = merged
    if method is None:
        method = "auto"
    return method, preconditioner, rtol, atol, maxiter, options
