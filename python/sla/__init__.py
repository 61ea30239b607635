"""sla: differentiable sparse linear algebra for PyTorch, a thin layer over
the C library libsla (ctypes; no numerical algorithm is written in Python).

    import torch, sla
    A = sla.SparseTensor(values, row, col, (n, n))   # values [*batch, nnz], requires_grad ok
    x = A.solve(b, method="cg", preconditioner="ic0", rtol=1e-10)
    x, info = A.solve(b, return_info=True)           # info: iterations, residual, converged, ...
    y = A @ x
    loss.backward()                                  # gradients to values and b via the C VJPs
    lam, V = A.eigsh(4, which="SA")                  # ARPACK, gradients via sla_eigsh_batch_vjp
    Z = sla.SparseTensor(zvalues, row, col, (n, n))  # complex128/complex64 values: @, solve,
    z = Z.solve(zb); sign, lad = Z.slogdet()         # slogdet, eigsh (Hermitian), Z.H, Z.conj()
    u = sla.nonlinear_solve(F, u0, *params, jacobian=A)  # F written in torch; Newton in C

The library is the package's own copy (sla/lib/libsla.so, built by
``pip install ./python``), else $SLA_LIBRARY, else the build tree
(build/lib/libsla.so next to this package's python/ directory), else the
system's libsla.so.
"""

from ._lib import (SlaConvergenceWarning, SlaError, SlaMemoryError, SlaNotSPDError,
                   SlaSingularError, SlaUnavailableError, SlaValueError, get_num_threads,
                   has_feature, library_path, set_num_threads, version)
from ._core import SolveInfo, clear_cache
from ._core import set_value_check
from ._config import SolverConfig
from ._functions import EigshInfo
from ._nonlinear import NonlinearInfo, nonlinear_solve
from ._lsq import LsqInfo, lsmr, lsqr, lstsq
from ._eigs import eigs, eigsh_generalized
from ._svds import svds
from ._io import load, load_mtx, save, save_mtx
from .sparse import SparseTensor, SparseTensorList, diffusion2d, poisson, spsolve
from ._complex import helmholtz2d
from ._dist import DSparseTensor
from ._plot import plot_history
from ._linop import LinearOperator, solve

__all__ = [
    "SparseTensor", "SparseTensorList", "SolverConfig", "svds", "load_mtx", "save_mtx", "load", "save", "SolveInfo", "EigshInfo", "NonlinearInfo", "spsolve", "nonlinear_solve",
    "poisson", "diffusion2d", "helmholtz2d", "clear_cache", "set_value_check", "set_num_threads", "get_num_threads",
    "version", "has_feature", "library_path", "SlaError", "SlaValueError", "SlaSingularError",
    "SlaNotSPDError", "SlaUnavailableError", "SlaMemoryError", "SlaConvergenceWarning",
    "lsqr", "lsmr", "lstsq", "LsqInfo",
    "DSparseTensor",
    "plot_history",
    "LinearOperator", "solve",
]
