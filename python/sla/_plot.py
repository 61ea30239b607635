"""Pictures with matplotlib (imported only when a picture is asked for):
``SparseTensor.spy`` (the sparsity pattern) and ``sla.plot_history`` (the
residual history that ``solve(..., history=True)`` records through the C
monitor callback)."""

import torch


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError("sla plotting needs matplotlib (Debian: apt-get install "
                          "python3-matplotlib; pip: pip install matplotlib): %s" % e) from None
    return plt


def _axes(ax):
    if ax is not None:
        return ax
    return _pyplot().subplots()[1]


def spy(A, ax=None, markersize=None, precision=0.0, **kw):
    """Plot the sparsity pattern of A (the first matrix of a batch) as
    matplotlib's spy does: one marker per stored entry with |a_ij| >
    precision (duplicates summed first; precision=None: every stored entry,
    zeros included), row 0 at the top. Returns the Axes; its single Line2D
    holds the points (len(ax.lines[0].get_xdata()) of them). markersize
    defaults to a size that suits the matrix's dimension."""
    ax = _axes(ax)
    pat = A.pattern
    v = A._csr_values(pat).detach()[0] if A.nnz else torch.zeros(0)
    keep = torch.ones(pat.nnz, dtype=torch.bool) if precision is None else v.abs() > precision
    r, c = pat.rowind[keep].numpy(), pat.colind[keep].numpy()
    m, n = A.shape[-2:]
    if markersize is None:
        markersize = max(0.5, min(6.0, 300.0 / max(m, n, 1)))
    kw.setdefault("linestyle", "none")
    kw.setdefault("marker", "s")
    kw.setdefault("color", "k")
    ax.plot(c, r, markersize=markersize, **kw)
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(m - 0.5, -0.5)
    ax.set_aspect("equal")
    ax.xaxis.tick_top()
    ax.set_title("%d x %d, %d stored entries" % (m, n, int(keep.sum())), fontsize="small")
    return ax


def plot_history(info, ax=None, label=None, **kw):
    """Plot relative residual against iteration (log scale) from a SolveInfo
    of solve(..., history=True): one line per right-hand side (info.items).
    Returns the Axes. ValueError when the info has no history (a solve
    without history=True); a direct solve's history is empty (no line)."""
    items = info.items if len(getattr(info, "items", []) or []) > 1 else [info]
    if any(getattr(i, "history", None) is None for i in items):
        raise ValueError("plot_history: this SolveInfo has no residual history; solve with "
                         "history=True")
    ax = _axes(ax)
    for j, it in enumerate(items):
        if not it.history:
            continue
        x = [h[0] for h in it.history]
        y = [h[1] for h in it.history]
        lab = label if label is not None else (
            "%s+%s" % (it.method, it.preconditioner) if len(items) == 1 else "rhs %d" % j)
        ax.semilogy(x, y, label=lab, **kw)
    ax.set_xlabel("iteration")
    ax.set_ylabel("relative residual")
    if ax.lines:
        ax.legend(fontsize="small")
    return ax
