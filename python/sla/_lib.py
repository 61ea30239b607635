"""Loading libsla and calling it through ctypes.

Everything that touches the C library's symbols lives here: where the
library is found, the prototypes of the functions the binding calls, the
mirror of ``sla_solve_info``, the per-thread ``sla_ctx`` and the translation
of C statuses into Python exceptions that carry the context's message.

Every symbol is required: a libsla that lacks one fails at import
(AttributeError naming the symbol), not at the first call.
"""

import ctypes
import ctypes.util
import os
import threading

c_int64 = ctypes.c_int64
c_double = ctypes.c_double
c_void_p = ctypes.c_void_p
c_int = ctypes.c_int
c_char_p = ctypes.c_char_p
c_bool = ctypes.c_bool
PTR = c_void_p  # data pointers are passed as integers (tensor.data_ptr())

SLA_F64, SLA_F32, SLA_C128, SLA_C64 = 0, 1, 2, 3
SLA_OP_N, SLA_OP_T, SLA_OP_H = 0, 1, 2
SLA_COPY, SLA_BORROW = 0, 1

STATUS_NAMES = {
    0: "SLA_OK",
    1: "SLA_NOT_CONVERGED",
    -1: "SLA_ERR_ARGUMENT",
    -2: "SLA_ERR_NOMEM",
    -3: "SLA_ERR_DIMENSION",
    -4: "SLA_ERR_INDEX",
    -5: "SLA_ERR_VALUE",
    -6: "SLA_ERR_FORMAT",
    -7: "SLA_ERR_IO",
    -8: "SLA_ERR_SINGULAR",
    -9: "SLA_ERR_NOT_SPD",
    -10: "SLA_ERR_UNAVAILABLE",
    -11: "SLA_ERR_TOO_LARGE",
    -12: "SLA_ERR_UNSUPPORTED",
    -13: "SLA_ERR_CALLBACK",
    -14: "SLA_ERR_COMM",
}


# ---- exceptions ------------------------------------------------------------


class SlaError(RuntimeError):
    """An error status from libsla. ``status`` is the numeric sla_status,
    ``status_name`` its name ("SLA_ERR_INDEX"), ``message`` the context's
    message (what went wrong, with the offending index or value)."""

    def __init__(self, status, message, where=""):
        self.status = status
        self.status_name = STATUS_NAMES.get(status, "status %d" % status)
        self.message = message
        text = "%s%s: %s" % (where + ": " if where else "", self.status_name,
                             message or "(no message)")
        super().__init__(text)


class SlaValueError(SlaError, ValueError):
    """Bad input: SLA_ERR_ARGUMENT, _DIMENSION, _INDEX, _VALUE, _FORMAT."""


class SlaSingularError(SlaError):
    """SLA_ERR_SINGULAR: a zero pivot or a structurally singular matrix."""


class SlaNotSPDError(SlaError):
    """SLA_ERR_NOT_SPD: the matrix (or preconditioner) is not positive definite."""


class SlaUnavailableError(SlaError):
    """SLA_ERR_UNAVAILABLE / SLA_ERR_UNSUPPORTED: not possible with this build or solver."""


class SlaMemoryError(SlaError, MemoryError):
    """SLA_ERR_NOMEM / SLA_ERR_TOO_LARGE."""


_ERROR_CLASSES = {
    -1: SlaValueError, -3: SlaValueError, -4: SlaValueError, -5: SlaValueError,
    -6: SlaValueError, -8: SlaSingularError, -9: SlaNotSPDError,
    -10: SlaUnavailableError, -12: SlaUnavailableError, -2: SlaMemoryError,
    -11: SlaMemoryError,
}


class SlaConvergenceWarning(UserWarning):
    """A solve stopped before reaching its tolerance (SLA_NOT_CONVERGED); the
    result is the last iterate and the SolveInfo says why."""


# ---- finding and loading the library --------------------------------------


def _candidates():
    """Where libsla is looked for, in order: the copy inside the package
    (sla/lib/libsla.so, put there by `pip install ./python`), $SLA_LIBRARY,
    the build tree (build/lib/libsla.so next to python/), the system's."""
    here = os.path.dirname(os.path.abspath(__file__))
    bundled = os.path.join(here, "lib", "libsla.so")
    if os.path.exists(bundled):
        return [bundled], False
    env = os.environ.get("SLA_LIBRARY")
    if env:
        return [env], True
    root = os.path.dirname(os.path.dirname(here))  # python/sla -> repository root
    c = [os.path.join(root, "build", "lib", "libsla.so")]
    found = ctypes.util.find_library("sla")
    if found:
        c.append(found)
    c.append("libsla.so.0")
    return c, False


def _load():
    cands, from_env = _candidates()
    errors = []
    for path in cands:
        if os.sep in path and not os.path.exists(path):
            errors.append("%s: no such file" % path)
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append("%s: %s" % (path, e))
    hint = ("SLA_LIBRARY=%s could not be loaded" % cands[0]) if from_env else (
        "pip install ./python (which builds it into the package), build it with `make` "
        "(build/lib/libsla.so), install it, or point SLA_LIBRARY at libsla.so")
    raise ImportError("sla: cannot load libsla (%s): %s" % (hint, "; ".join(errors)))


lib, library_path = _load()


def _proto(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


# Prototypes of the C functions the binding calls (include/sla/*.h).
P = c_void_p
sla_status_name = _proto("sla_status_name", c_char_p, c_int)
sla_version = _proto("sla_version", c_char_p)
sla_ctx_create = _proto("sla_ctx_create", c_int, ctypes.POINTER(c_void_p))
sla_ctx_destroy = _proto("sla_ctx_destroy", None, ctypes.POINTER(c_void_p))
sla_ctx_message = _proto("sla_ctx_message", c_char_p, P)
sla_ctx_clear = _proto("sla_ctx_clear", None, P)
sla_ctx_set_threads = _proto("sla_ctx_set_threads", None, P, c_int)
sla_ctx_threads = _proto("sla_ctx_threads", c_int, P)

sla_matrix_from_coo = _proto("sla_matrix_from_coo", c_int, P, c_int64, c_int64, c_int64, PTR,
                             PTR, c_int, c_int64, PTR, PTR, ctypes.POINTER(c_void_p))
sla_matrix_from_csr = _proto("sla_matrix_from_csr", c_int, P, c_int64, c_int64, PTR, PTR,
                             c_int, c_int64, PTR, c_int, ctypes.POINTER(c_void_p))
sla_matrix_destroy = _proto("sla_matrix_destroy", None, ctypes.POINTER(c_void_p))
sla_matrix_nnz = _proto("sla_matrix_nnz", c_int64, P)
sla_matrix_dtype = _proto("sla_matrix_dtype", c_int, P)
sla_matrix_ncols = _proto("sla_matrix_ncols", c_int64, P)
sla_matrix_nrows = _proto("sla_matrix_nrows", c_int64, P)
sla_matrix_rowptr = _proto("sla_matrix_rowptr", c_void_p, P)
sla_matrix_get_colind = _proto("sla_matrix_get_colind", None, P, PTR)
sla_matrix_get_rowind = _proto("sla_matrix_get_rowind", None, P, PTR)
sla_matrix_values = _proto("sla_matrix_values", c_void_p, P, c_int64)
sla_matrix_borrow_values = _proto("sla_matrix_borrow_values", c_int, P, P, PTR)


class MatrixProps(ctypes.Structure):
    """Mirror of sla_matrix_props (include/sla/matrix.h)."""
    _fields_ = [("square", c_bool), ("structurally_symmetric", c_bool), ("symmetric", c_bool),
                ("positive_diagonal", c_bool), ("diagonally_dominant", c_bool),
                ("symmetry_error", c_double), ("max_abs", c_double),
                ("is_complex", c_bool), ("hermitian", c_bool), ("hermitian_error", c_double)]


sla_matrix_properties = _proto("sla_matrix_properties", c_int, P, P, c_int64, c_double,
                               ctypes.POINTER(MatrixProps))

sla_matvec = _proto("sla_matvec", c_int, P, P, c_int64, c_int64, PTR, c_int64, PTR, c_int64)
sla_matvec_vjp = _proto("sla_matvec_vjp", c_int, P, P, c_int64, c_int64, PTR, c_int64, PTR,
                        c_int64, PTR, c_int64, PTR)
sla_matvec_batch = _proto("sla_matvec_batch", c_int, P, P, PTR, PTR)
sla_matvec_batch_vjp = _proto("sla_matvec_batch_vjp", c_int, P, P, PTR, PTR, PTR, PTR)


class CSolveInfo(ctypes.Structure):
    """Mirror of sla_solve_info (include/sla/solver.h)."""
    _fields_ = [("method", ctypes.c_char * 16), ("precond", ctypes.c_char * 16),
                ("backend", ctypes.c_char * 16), ("iterations", c_int64),
                ("residual", c_double), ("residual_abs", c_double), ("rhs_norm", c_double),
                ("reason", c_int), ("converged", c_bool), ("setup_seconds", c_double),
                ("factor_nnz", c_double), ("ordering", ctypes.c_char * 16),
                ("solve_seconds", c_double), ("note", ctypes.c_char * 256),
                ("rcond", c_double), ("backward_error", c_double)]


_info_size = _proto("sla_solve_info_size", ctypes.c_size_t)()
if _info_size != ctypes.sizeof(CSolveInfo):
    raise ImportError(f"sla: this binding's copy of sla_solve_info has {ctypes.sizeof(CSolveInfo)} "
                      f"bytes but libsla's has {_info_size}: the package and the library come "
                      "from different versions (update python/sla/_lib.py CSolveInfo)")


INFO_P = c_void_p  # pass ctypes.addressof(info array) (+ offset)

HIERARCHY_MAX_LEVELS = 32  # SLA_HIERARCHY_MAX_LEVELS


class CHierarchyInfo(ctypes.Structure):
    """sla_hierarchy_info (sla_solver_hierarchy: precond saamg's levels)."""
    _fields_ = [("levels", ctypes.c_int),
                ("rows", c_int64 * HIERARCHY_MAX_LEVELS), ("nnz", c_int64 * HIERARCHY_MAX_LEVELS),
                ("p_nnz", c_int64 * HIERARCHY_MAX_LEVELS),
                ("operator_complexity", c_double), ("grid_complexity", c_double),
                ("coarse_direct", ctypes.c_bool)]


_hier_size = _proto("sla_hierarchy_info_size", ctypes.c_size_t)()
if _hier_size != ctypes.sizeof(CHierarchyInfo):
    raise ImportError(f"sla: this binding's copy of sla_hierarchy_info has {ctypes.sizeof(CHierarchyInfo)} "
                      f"bytes but libsla's has {_hier_size}: the package and the library come from "
                      "different versions (update python/sla/_lib.py CHierarchyInfo)")

# sla_solver_options is treated as an opaque block filled by
# sla_solver_options_default and sla_solver_options_parse (the binding
# passes options as the C library's own "key=value,..." string); the block
# is far larger than the struct (about 200 bytes).
OPTIONS_BYTES = 4096
_options_size = _proto("sla_solver_options_size", ctypes.c_size_t)()
if _options_size > OPTIONS_BYTES:
    raise ImportError(f"sla: libsla's sla_solver_options has {_options_size} bytes, more than the "
                      f"{OPTIONS_BYTES} this binding reserves for it: the package and the library "
                      "come from different versions (raise OPTIONS_BYTES in python/sla/_lib.py)")
sla_solver_options_default = _proto("sla_solver_options_default", None, P)
sla_solver_options_parse = _proto("sla_solver_options_parse", c_int, P, c_char_p, P)
sla_solver_create = _proto("sla_solver_create", c_int, P, P, P, ctypes.POINTER(c_void_p))
sla_solver_refresh = _proto("sla_solver_refresh", c_int, P, P)
sla_solver_hierarchy = _proto("sla_solver_hierarchy", c_int, P, P, c_int64, P)
sla_solver_destroy = _proto("sla_solver_destroy", None, ctypes.POINTER(c_void_p))
sla_solver_solve = _proto("sla_solver_solve", c_int, P, P, c_int64, c_int64, PTR, c_int64, PTR,
                          c_int64, INFO_P)
sla_solver_solve_vjp = _proto("sla_solver_solve_vjp", c_int, P, P, c_int64, c_int64, PTR, c_int64,
                              PTR, c_int64, PTR, c_int64, PTR, INFO_P)
sla_solver_solve_batch = _proto("sla_solver_solve_batch", c_int, P, P, PTR, PTR, INFO_P)
sla_solver_solve_batch_vjp = _proto("sla_solver_solve_batch_vjp", c_int, P, P, PTR, PTR, PTR, PTR,
                                    INFO_P)
sla_solver_solve_list = _proto("sla_solver_solve_list", c_int, P, c_int64, P, P, P, INFO_P)
sla_solver_solve_list_vjp = _proto("sla_solver_solve_list_vjp", c_int, P, c_int64, P, P, P, P, P, INFO_P)
sla_solver_logdet = _proto("sla_solver_logdet", c_int, P, P, c_int64, ctypes.POINTER(c_double),
                           ctypes.POINTER(c_double))
sla_reason_name = _proto("sla_reason_name", c_char_p, c_int)


# ---- the method registry (include/sla/solver.h) ---------------------------
# Method and preconditioner names, aliases and enum values come from the
# library's one table, never from copies here.

SLA_KIND_AUTO, SLA_KIND_KRYLOV, SLA_KIND_DIRECT, SLA_KIND_PRECOND = 0, 1, 2, 3
SLA_CAP_SYMMETRIC, SLA_CAP_SPD, SLA_CAP_TRANSPOSE, SLA_CAP_COMPLEX, SLA_CAP_DISTRIBUTED = (
    1, 2, 4, 8, 16)


class CMethodDesc(ctypes.Structure):
    """Mirror of sla_method_desc (include/sla/solver.h)."""
    _fields_ = [("name", c_char_p), ("aliases", ctypes.POINTER(c_char_p)), ("value", c_int),
                ("kind", c_int), ("flags", ctypes.c_uint), ("available", c_bool),
                ("backend", c_char_p), ("summary", c_char_p)]


sla_method_count = _proto("sla_method_count", c_int)
sla_method_at = _proto("sla_method_at", ctypes.POINTER(CMethodDesc), c_int)
sla_method_from_name = _proto("sla_method_from_name", c_int, P, c_char_p, ctypes.POINTER(c_int))
sla_precond_from_name = _proto("sla_precond_from_name", c_int, P, c_char_p,
                               ctypes.POINTER(c_int))


class MethodDesc:
    """One entry of libsla's method registry: ``name``, ``aliases`` (a
    tuple), ``value`` (the sla_method, or sla_precond_kind for
    preconditioners), ``kind`` (SLA_KIND_*), ``flags`` (SLA_CAP_*),
    ``available`` (in this build), ``backend`` and ``summary``."""

    __slots__ = ("name", "aliases", "value", "kind", "flags", "available", "backend", "summary")

    def __init__(self, d):
        aliases = []
        while d.aliases[len(aliases)] is not None:
            aliases.append(d.aliases[len(aliases)].decode())
        self.name, self.aliases, self.value = d.name.decode(), tuple(aliases), int(d.value)
        self.kind, self.flags, self.available = int(d.kind), int(d.flags), bool(d.available)
        self.backend, self.summary = d.backend.decode(), d.summary.decode()

    def __repr__(self):
        return "MethodDesc(%r, value=%d, kind=%d)" % (self.name, self.value, self.kind)


METHODS = tuple(MethodDesc(sla_method_at(i).contents) for i in range(sla_method_count()))
if not METHODS or METHODS[0].name != "auto" or METHODS[0].value != 0:
    raise ImportError("sla: libsla's method registry does not start with method auto: this "
                      "binding's CMethodDesc does not match the library's sla_method_desc")

sla_gen_poisson = _proto("sla_gen_poisson", c_int, P, c_int, c_int64, ctypes.POINTER(c_void_p))
sla_gen_diffusion2d = _proto("sla_gen_diffusion2d", c_int, P, c_int64, PTR,
                             ctypes.POINTER(c_void_p))
sla_gen_diffusion2d_values = _proto("sla_gen_diffusion2d_values", c_int, P, c_int64, PTR, PTR)
sla_gen_diffusion2d_vjp = _proto("sla_gen_diffusion2d_vjp", c_int, P, c_int64, PTR, PTR)


# ---- the eigensolver, the logdet gradient, the nonlinear solver, complex values
# (include/sla/eig.h, nonlinear.h, complex.h): required like the prototypes
# above. API maps the binding's short name to the C function; callers index
# it (L.API["zmatvec"]).

_API_PROTOS = {
    # sla_solver_logdet_vjp(ctx, S, ib, double g, double *sign, double *logabsdet, double *gA,
    #                       sla_logdet_info *info)
    "logdet_vjp": ("sla_solver_logdet_vjp", c_int, [P, P, c_int64, c_double, PTR, PTR, PTR, P]),
    # sla_eigsh(ctx, A, ib, opts, evals, evecs, ldv, residuals, info)
    "eigsh": ("sla_eigsh", c_int, [P, P, c_int64, P, PTR, PTR, c_int64, PTR, P]),
    # sla_eigsh_batch(ctx, A, opts, evals, evecs, residuals, info)
    "eigsh_batch": ("sla_eigsh_batch", c_int, [P, P, P, PTR, PTR, PTR, P]),
    # sla_eigsh_vjp(ctx, A, ib, opts, k, evals, evecs, ldv, gl, gv, ldgv, gA, info)
    "eigsh_vjp": ("sla_eigsh_vjp", c_int,
                  [P, P, c_int64, P, c_int64, PTR, PTR, c_int64, PTR, PTR, c_int64, PTR, P]),
    # sla_eigsh_batch_vjp(ctx, A, opts, k, evals, evecs, gl, gv, gA, info)
    "eigsh_batch_vjp": ("sla_eigsh_batch_vjp", c_int, [P, P, P, c_int64, PTR, PTR, PTR, PTR, PTR, P]),
    "eigsh_options_default": ("sla_eigsh_options_default", None, [P]),
    "eigsh_options_size": ("sla_eigsh_options_size", ctypes.c_size_t, []),
    "eigsh_info_size": ("sla_eigsh_info_size", ctypes.c_size_t, []),
    "eig_which_name": ("sla_eig_which_name", c_char_p, [c_int]),
    # sla_nlsolver_create(ctx, const sla_nl_problem *, const sla_nl_options *, sla_nlsolver **)
    "nlsolver_create": ("sla_nlsolver_create", c_int, [P, P, P, ctypes.POINTER(c_void_p)]),
    # sla_nlsolver_solve(ctx, S, const double *theta, double *u, sla_nl_info *info)
    "nlsolver_solve": ("sla_nlsolver_solve", c_int, [P, P, PTR, PTR, P]),
    # sla_nlsolver_solve_vjp(ctx, S, gu, gtheta, lambda, sla_solve_info *info)
    "nlsolver_solve_vjp": ("sla_nlsolver_solve_vjp", c_int, [P, P, PTR, PTR, PTR, P]),
    "nlsolver_destroy": ("sla_nlsolver_destroy", None, [ctypes.POINTER(c_void_p)]),
    "nl_options_default": ("sla_nl_options_default", None, [P]),
    "nl_options_parse": ("sla_nl_options_parse", c_int, [P, c_char_p, P]),
    "nl_reason_name": ("sla_nl_reason_name", c_char_p, [c_int]),
    "nl_problem_size": ("sla_nl_problem_size", ctypes.c_size_t, []),
    "nl_options_size": ("sla_nl_options_size", ctypes.c_size_t, []),
    "nl_info_size": ("sla_nl_info_size", ctypes.c_size_t, []),
    # sla_zmatvec(ctx, A, ib, op, const sla_complex *x, sla_complex *y)
    "zmatvec": ("sla_zmatvec", c_int, [P, P, c_int64, c_int, PTR, PTR]),
    # sla_zmatvec_vjp(ctx, A, ib, x, gy, gx, gA)
    "zmatvec_vjp": ("sla_zmatvec_vjp", c_int, [P, P, c_int64, PTR, PTR, PTR, PTR]),
    # sla_zsolver_solve(ctx, S, ib, op, b, x, sla_solve_info *info)
    "zsolver_solve": ("sla_zsolver_solve", c_int, [P, P, c_int64, c_int, PTR, PTR, INFO_P]),
    # sla_zsolver_solve_vjp(ctx, S, ib, x, gx, gb, gA, sla_solve_info *info)
    "zsolver_solve_vjp": ("sla_zsolver_solve_vjp", c_int,
                          [P, P, c_int64, PTR, PTR, PTR, PTR, INFO_P]),
    # sla_zsolver_solve_list(ctx, count, solvers, b[], x[], sla_solve_info *info)
    "zsolver_solve_list": ("sla_zsolver_solve_list", c_int, [P, c_int64, P, P, P, INFO_P]),
    # sla_zsolver_solve_list_vjp(ctx, count, solvers, x[], gx[], gb[], gA[], info)
    "zsolver_solve_list_vjp": ("sla_zsolver_solve_list_vjp", c_int, [P, c_int64, P, P, P, P, P, INFO_P]),
    # sla_zsolver_logdet(ctx, S, ib, sla_complex *phase, double *logabs)
    "zsolver_logdet": ("sla_zsolver_logdet", c_int, [P, P, c_int64, PTR, PTR]),
    # sla_zsolver_logdet_vjp(ctx, S, ib, double g_logabs, double g_theta, sla_complex *gA)
    "zsolver_logdet_vjp": ("sla_zsolver_logdet_vjp", c_int,
                           [P, P, c_int64, c_double, c_double, PTR]),
    # sla_zeigsh(ctx, A, ib, const sla_eigsh_options *, k, double *w, sla_complex *V, info)
    "zeigsh": ("sla_zeigsh", c_int, [P, P, c_int64, P, c_int64, PTR, PTR, P]),
    # sla_zeigsh_vjp(ctx, A, ib, k, w, V, gw, gV, gA)
    "zeigsh_vjp": ("sla_zeigsh_vjp", c_int, [P, P, c_int64, c_int64, PTR, PTR, PTR, PTR, PTR]),
    # sla_gen_helmholtz2d(ctx, N, double k, double alpha, sla_matrix **out)
    "gen_helmholtz2d": ("sla_gen_helmholtz2d", c_int,
                        [P, c_int64, c_double, c_double, ctypes.POINTER(c_void_p)]),
}

API = {name: _proto(sym, res, *args) for name, (sym, res, args) in _API_PROTOS.items()}


def check_size(fn, cls, cname):
    """Compare a ctypes mirror with the C library's sizeof (a *_size function)."""
    size = fn()
    if size != ctypes.sizeof(cls):
        raise ImportError(f"sla: this binding's copy of {cname} has {ctypes.sizeof(cls)} bytes "
                          f"but libsla's has {size}: the package and the library come from "
                          f"different versions (update python/sla/_lib.py {cls.__name__})")


# Mirrors of the eigensolver's and the nonlinear solver's structs
# (include/sla/eig.h, include/sla/nonlinear.h), checked against the C sizes
# (sla_eigsh_options_size, ...) at import. sla_nl_options is opaque here
# (filled by sla_nl_options_default and _parse, like sla_solver_options).


class CEigshOptions(ctypes.Structure):
    _fields_ = [("k", c_int64), ("which", c_int), ("shift_invert", c_bool), ("sigma", c_double),
                ("tol", c_double), ("ncv", c_int64), ("maxiter", c_int64),
                ("factor_method", c_int), ("memory_limit", c_double), ("v0", c_void_p),
                ("degenerate_tol", c_double),
                ("grad_rtol", c_double), ("grad_maxiter", c_int64)]


class CEigshInfo(ctypes.Structure):
    _fields_ = [("method", ctypes.c_char * 40), ("converged", c_bool), ("nconv", c_int64),
                ("iterations", c_int64), ("nops", c_int64), ("max_residual", c_double),
                ("factor_seconds", c_double), ("seconds", c_double),
                ("note", ctypes.c_char * 192)]


# sla_status (*)(void *user, const double *u, const double *theta, double *out)
NL_CB3 = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, c_void_p)
# sla_status (*)(void *user, const double *u, const double *theta, const double *v, double *out)
NL_CB4 = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p)
NL_CB4B = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p)  # picard


class CNlProblem(ctypes.Structure):
    _fields_ = [("n", c_int64), ("ntheta", c_int64), ("residual", NL_CB3),
                ("jac_pattern", c_void_p), ("jacobian", NL_CB3),
                ("jacobian_symmetric", c_bool), ("vjp_theta", NL_CB4), ("jvp", NL_CB4),
                ("vjp_u", NL_CB4), ("fixed_point", NL_CB3), ("picard", NL_CB4B),
                ("user", c_void_p)]


class CNlInfo(ctypes.Structure):
    _fields_ = [("method", ctypes.c_char * 16), ("iterations", c_int64), ("residual", c_double),
                ("residual0", c_double), ("converged", c_bool), ("reason", c_int),
                ("residual_evals", c_int64), ("jacobian_evals", c_int64),
                ("linear_solves", c_int64), ("linear_iterations", c_int64),
                ("line_search_cuts", c_int64), ("chord_steps", c_int64),
                ("history", ctypes.POINTER(c_double)), ("history_len", c_int64),
                ("linear", CSolveInfo), ("seconds", c_double), ("note", ctypes.c_char * 192)]


check_size(API["eigsh_options_size"], CEigshOptions, "sla_eigsh_options")
check_size(API["eigsh_info_size"], CEigshInfo, "sla_eigsh_info")
check_size(API["nl_problem_size"], CNlProblem, "sla_nl_problem")
check_size(API["nl_info_size"], CNlInfo, "sla_nl_info")


# ---- contexts and errors ----------------------------------------------------

_tls = threading.local()
_default_threads = [None]  # None: follow torch (_auto_threads); else set_num_threads' n


def _usable_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


try:
    import torch as _torch
    _TORCH_DEFAULT = _torch.get_num_threads()  # torch's own choice, before any user's
except ImportError:  # the ctypes layer alone (sla needs torch for everything else)
    _torch = None
    _TORCH_DEFAULT = 0
_THREAD_ENV = any(os.environ.get(v) for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"))
_CPUS = _usable_cpus()


def _auto_threads():
    """The C kernels' thread count when set_num_threads was not called:
    torch's intra-op count (torch.get_num_threads(), which follows
    torch.set_num_threads and OMP_NUM_THREADS), except that a count of 1
    that torch chose itself (unchanged since sla was imported, no
    OMP_NUM_THREADS / MKL_NUM_THREADS) on a machine where this process may
    use more CPUs is taken as a miscount and replaced by those CPUs: torch
    counts physical cores through cpuinfo, which finds one core on some
    virtual machines (2 vCPUs, 1 thread per core: torch says 1) and made
    every sla kernel single-threaded there. A deliberate
    torch.set_num_threads(1) made before importing sla looks the same: use
    sla.set_num_threads(1) (or OMP_NUM_THREADS=1) for that."""
    if _torch is None:
        return 0
    t = _torch.get_num_threads()
    if t == 1 and t == _TORCH_DEFAULT and not _THREAD_ENV and _CPUS > 1:
        return _CPUS
    return t


class _Ctx:
    def __init__(self):
        p = c_void_p()
        st = sla_ctx_create(ctypes.byref(p))
        if st != 0 or not p.value:
            raise MemoryError("sla_ctx_create failed")
        self.ptr = p
        self.nthreads = _default_threads[0]
        if self.nthreads is None:
            self.nthreads = _auto_threads()
        sla_ctx_set_threads(p, self.nthreads)

    def __del__(self):
        if sla_ctx_destroy is not None and self.ptr:
            sla_ctx_destroy(ctypes.byref(self.ptr))


def ctx():
    """This thread's sla_ctx (one per thread, as the C library asks), its
    thread count kept equal to _auto_threads() unless set_num_threads set one."""
    c = getattr(_tls, "ctx", None)
    if c is None:
        c = _tls.ctx = _Ctx()
    elif _default_threads[0] is None:
        t = _auto_threads()
        if t != c.nthreads:
            c.nthreads = t
            sla_ctx_set_threads(c.ptr, t)
    return c.ptr


def set_num_threads(n):
    """Threads the C kernels use, for this thread's context now and for
    contexts created later: n >= 1, 0 for the OpenMP default of the calling
    thread (OMP_NUM_THREADS, or what torch set it to), None to follow torch
    again (the default; see _auto_threads: torch.get_num_threads(), or the
    usable CPUs when torch's own default is a miscounted 1)."""
    if n is not None:
        n = int(n)
        if n < 0:
            raise ValueError("set_num_threads: n must be >= 0 or None (got %d)" % n)
    _default_threads[0] = n
    c = getattr(_tls, "ctx", None)
    if c is None:
        ctx()
        return
    c.nthreads = _auto_threads() if n is None else n
    sla_ctx_set_threads(c.ptr, c.nthreads)


def get_num_threads():
    """The number of threads the C kernels use on this thread's context."""
    return int(sla_ctx_threads(ctx()))


def message():
    m = sla_ctx_message(ctx())
    return m.decode("utf-8", "replace") if m else ""


def check(st, where=""):
    """Raise the SlaError subclass for an error status; return st (0 or a
    positive warning such as SLA_NOT_CONVERGED) otherwise."""
    if st < 0:
        cls = _ERROR_CLASSES.get(st, SlaError)
        raise cls(st, message(), where)
    return st


def version():
    return sla_version().decode()


_sla_has_feature = _proto("sla_has_feature", c_int, c_char_p)


def has_feature(name):
    """Whether this build of libsla has a feature ("suitesparse", "superlu",
    "hypre", "arpack", "lapack", "mpi", "metis"; C: sla_has_feature)."""
    return bool(_sla_has_feature(str(name).encode()))
