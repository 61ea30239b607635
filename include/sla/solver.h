/* sla/solver.h — linear solvers, their options and reports, and the
 * differentiable solve.
 *
 * Lifecycle (PETSc's KSP in small): fill an sla_solver_options (defaults
 * from sla_solver_options_default, or a string through
 * sla_solver_options_parse), create a solver for a matrix (this does the
 * set-up: structure checks and one preconditioner per value array), solve
 * any number of times, take VJPs with the same object, destroy it.
 *
 * The solver keeps a pointer to the matrix: the matrix must outlive it. If
 * the values of a borrowed matrix change, call sla_solver_refresh.
 *
 * Non-convergence is not an error: the solve returns SLA_NOT_CONVERGED (a
 * positive warning), x holds the last iterate, and info.reason says why.
 */
#ifndef SLA_SOLVER_H
#define SLA_SOLVER_H

#include "matrix.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sla_method {
    SLA_METHOD_AUTO = 0, /* chosen from structure and the symbolic analysis; see docs/dispatch.md */
    SLA_METHOD_CG,
    SLA_METHOD_BICGSTAB,
    SLA_METHOD_GMRES,
    SLA_METHOD_MINRES,
    SLA_METHOD_CHOLESKY, /* CHOLMOD supernodal LL^T (SPD matrices) */
    SLA_METHOD_LDLT,     /* CHOLMOD simplicial LDL^T (symmetric; no pivoting) */
    SLA_METHOD_LU,       /* general sparse LU (UMFPACK) */
    SLA_METHOD_UMFPACK,  /* UMFPACK multifrontal LU */
    SLA_METHOD_KLU,      /* KLU left-looking LU for very sparse (circuit-like) matrices */
    SLA_METHOD_SUPERLU,  /* SuperLU supernodal LU (SciPy's spsolve engine) */
    SLA_METHOD_COCG,     /* conjugate orthogonal CG for complex symmetric A = A^T (on a
                            real symmetric matrix it is CG) */
    SLA_METHOD_MUMPS     /* MUMPS multifrontal LDL^T (symmetric A = A^T) or LU (sequential) */
} sla_method;

/* Fill-reducing ordering for the direct methods. */
typedef enum sla_ordering {
    SLA_ORDER_AUTO = 0, /* the backend's choice, tuned per method (see docs/direct.md) */
    SLA_ORDER_AMD,      /* approximate minimum degree (COLAMD for unsymmetric LU) */
    SLA_ORDER_METIS,    /* nested dissection by METIS */
    SLA_ORDER_NATURAL   /* no reordering */
} sla_ordering;

typedef enum sla_precond_kind {
    SLA_PRECOND_NONE = 0,
    SLA_PRECOND_JACOBI,
    SLA_PRECOND_SSOR,   /* symmetric successive over-relaxation, weight omega */
    SLA_PRECOND_IC0,    /* incomplete Cholesky, zero fill (symmetric A) */
    SLA_PRECOND_ILU0,   /* incomplete LU, zero fill */
    SLA_PRECOND_USER,   /* the callbacks in options.user_precond */
    SLA_PRECOND_AMG,    /* algebraic multigrid: one hypre BoomerAMG cycle */
    SLA_PRECOND_SAAMG,  /* sla's own smoothed-aggregation AMG, one V(1,1) cycle (lean memory) */
    SLA_PRECOND_ILUT    /* threshold incomplete LU with a fill limit and threshold
                           column pivoting (Saad's ILUT/ILUTP, SciPy spilu's
                           defaults): options ilut_droptol, ilut_fill, ilut_pivot */
} sla_precond_kind;

/* Why an iterative solve stopped. Positive: converged; negative: not. */
typedef enum sla_reason {
    SLA_REASON_NONE = 0,           /* no solve was run */
    SLA_CONVERGED_RTOL = 1,        /* ||b - A x|| <= rtol ||b|| */
    SLA_CONVERGED_ATOL = 2,        /* ||b - A x|| <= atol (includes b = 0) */
    SLA_DIVERGED_MAXITER = -1,     /* iteration limit reached */
    SLA_DIVERGED_BREAKDOWN = -2,   /* a Krylov recurrence broke down */
    SLA_DIVERGED_NAN = -3,         /* NaN or Inf appeared */
    SLA_DIVERGED_INDEFINITE = -4,  /* CG/MINRES met an indefinite operator or preconditioner */
    SLA_DIVERGED_USER = -5,        /* the monitor callback asked to stop */
    SLA_DIVERGED_ACCURACY = -6,    /* direct solve: residual above tolerance after
                                      iterative refinement (ill-conditioned A) */
    SLA_DIVERGED_TIME = -7         /* the time budget options.max_seconds ran out */
} sla_reason;

SLA_API const char *sla_reason_name(sla_reason r);
SLA_API const char *sla_method_name(sla_method m);
SLA_API const char *sla_precond_name(sla_precond_kind p);
SLA_API const char *sla_ordering_name(sla_ordering o);

/* Whether a direct method's library was compiled into this build. */
SLA_API bool sla_method_available(sla_method m);

/* ---- the method registry ------------------------------------------------
 * One table lists every method and every preconditioner once, with the
 * names the option parser accepts, what it is and what it needs. Bindings
 * and front ends read it instead of keeping their own lists. */

/* What an entry of the registry is. */
typedef enum sla_method_kind {
    SLA_KIND_AUTO = 0,  /* method=auto: picks one of the others */
    SLA_KIND_KRYLOV,    /* an iterative method (sla_method) */
    SLA_KIND_DIRECT,    /* a factorization (sla_method) with a library backend */
    SLA_KIND_PRECOND    /* a preconditioner (sla_precond_kind) */
} sla_method_kind;

/* Capability flags of an entry (sla_method_desc.flags). */
enum {
    SLA_CAP_SYMMETRIC = 1 << 0,   /* needs a symmetric matrix */
    SLA_CAP_SPD = 1 << 1,         /* needs a symmetric positive definite matrix */
    SLA_CAP_TRANSPOSE = 1 << 2,   /* can apply A^-T (M^-T) for adjoint solves of
                                     nonsymmetric systems */
    SLA_CAP_COMPLEX = 1 << 3,     /* runs on complex matrices (sla/complex.h); a
                                     direct method also needs its complex backend
                                     in this build */
    SLA_CAP_DISTRIBUTED = 1 << 4  /* available to sla_dist_solver (MPI) */
};

typedef struct sla_method_desc {
    const char *name;             /* the public name: "cg", "cholesky", "ilu0", ... */
    const char *const *aliases;   /* other names sla_method_from_name and
                                     sla_precond_from_name accept (the options
                                     string takes public names only), NULL-
                                     terminated, never NULL: "cholmod" for cholesky */
    int value;                    /* the sla_method value, or the sla_precond_kind
                                     value for kind SLA_KIND_PRECOND */
    sla_method_kind kind;
    unsigned flags;               /* SLA_CAP_* */
    bool available;               /* its library was compiled into this build */
    const char *backend;          /* the backend a solve reports in
                                     sla_solve_info.backend ("krylov", "cholmod",
                                     "umfpack", ...), or the library a
                                     preconditioner needs ("hypre"); "" if none */
    const char *summary;          /* one line for help texts */
} sla_method_desc;

/* The number of entries in the registry, and entry i (0 <= i < count;
 * NULL otherwise): methods first in sla_method order, then preconditioners
 * in sla_precond_kind order. The entries are static and never change. */
SLA_API int sla_method_count(void);
SLA_API const sla_method_desc *sla_method_at(int i);

/* The method (or preconditioner) named `name`, a public name or an alias
 * (what front ends translate; sla_solver_options_parse takes public names
 * only).
 * An unknown name is SLA_ERR_ARGUMENT with a message naming the nearest
 * valid one ("unknown method 'cgg' (did you mean 'cg'?)"); *m is then left
 * unchanged. ctx may be NULL, as everywhere. */
SLA_API sla_status sla_method_from_name(sla_ctx *ctx, const char *name, sla_method *m);
SLA_API sla_status sla_precond_from_name(sla_ctx *ctx, const char *name, sla_precond_kind *p);

/* A user preconditioner z = M^-1 r (and z = M^-T r for adjoint solves of
 * nonsymmetric systems; NULL apply_transpose means M is symmetric).
 * Return SLA_OK, or any error status to abort the solve. */
typedef struct sla_user_precond {
    sla_status (*apply)(void *user, sla_int n, const double *r, double *z);
    sla_status (*apply_transpose)(void *user, sla_int n, const double *r,
                                  double *z);
    void *user;
} sla_user_precond;

/* Called every monitor_every iterations with the current (recursive)
 * relative residual; a nonzero return stops the solve (SLA_DIVERGED_USER). */
typedef int (*sla_monitor_fn)(void *user, sla_int iteration,
                              double rel_residual);

/* BoomerAMG settings (hypre's numbering); defaults tuned on 2D/3D Poisson
 * and anisotropic diffusion on this machine class (see docs/dispatch.md). */
typedef struct sla_amg_options {
    double strong_threshold;  /* strength of connection; default 0.25 */
    int coarsen_type;         /* default 10 (HMIS) */
    int interp_type;          /* default 6 (extended+i) */
    int pmax;                 /* interpolation entries per row; default 4 */
    int agg_levels;           /* levels of aggressive coarsening; default 1 */
    int relax_type;           /* smoother; default 13 (l1 Gauss-Seidel, forward on the way
                                 down, backward (14) on the way up: a symmetric cycle) */
    int cycle_type;           /* 1 V-cycle, 2 W-cycle; default 1 */
    int max_levels;           /* default 25 */
    int reuse;                /* refreshes that keep the hierarchy (values only
                                 change): 0 rebuilds every time; default 0 */
    int agg_interp;           /* interpolation on the aggressive levels: default 1
                                 (two-stage extended+i, truncated to pmax); 4
                                 (multipass) needs ~45 bytes less per unknown on 2D
                                 Poisson for ~60 % more iterations */
} sla_amg_options;

/* The default of sla_solver_options.auto_direct_seconds (method=auto's
 * accuracy-first rule; measured in bench/RESULTS.md, "real matrices"). */
#define SLA_AUTO_DIRECT_SECONDS_DEFAULT 0.05

typedef struct sla_solver_options {
    sla_method method;
    sla_precond_kind precond;
    double rtol;              /* relative to ||b||; default 1e-8 */
    double atol;              /* absolute; default 0 */
    sla_int maxiter;          /* default 0 = 10 n (at least 1000) */
    int restart;              /* GMRES restart length; default 30 */
    bool use_x0;              /* x holds the initial guess (default: x0 = 0) */
    double omega;             /* SSOR weight in (0, 2); default 1 */
    sla_ordering ordering;    /* direct methods; default auto */
    sla_amg_options amg;      /* precond = amg */
    double memory_limit;      /* bytes a direct factorization may use; default 0 =
                                 half of the memory available at set-up */
    int auto_solves;          /* method=auto plans for this many solves per value
                                 array: 2 = forward + adjoint (0, the default, means
                                 2: sla is for differentiation); 1 = forward only */
    sla_user_precond user_precond;
    sla_monitor_fn monitor;
    void *monitor_user;
    sla_int monitor_every;    /* default 0 = every iteration when monitor set */
    double max_seconds;       /* time budget of each Krylov solve (each right-hand
                                 side, forward or adjoint): past it the solve stops
                                 with SLA_NOT_CONVERGED, reason SLA_DIVERGED_TIME and
                                 the last iterate; checked every iteration. A
                                 factorization is not interrupted. Default 0 = none */
    double auto_direct_seconds; /* method=auto, accuracy first: factor whenever the
                                 factorization (with the planned solves) is predicted
                                 to take less than this, whatever Krylov would cost;
                                 default 0.05 (set by sla_solver_options_default);
                                 0: the cost model alone decides */
    int ilu_shift;            /* zero or tiny pivots in ilu0, ic0 and ilut (|pivot| <=
                                 1e-12 ||row i of A||_2, or a diagonal not stored): 1
                                 (the default) replaces each by 1e-1 ||row i||_2 (sign
                                 kept; ic0: positive) and the solve info's note counts
                                 them; 0 stops with SLA_ERR_SINGULAR naming the row.
                                 A clearly negative IC(0) pivot is still SLA_ERR_NOT_SPD */
    double ilut_droptol;      /* ilut: fill entries at or below droptol ||row i of A||_2
                                 are dropped (entries of A's own pattern are kept);
                                 default 1e-4 (SciPy spilu's drop_tol) */
    double ilut_fill;         /* ilut: each row of L and of U keeps at most
                                 ceil(fill * nnz(row i of A) / 2) entries (the largest) besides
                                 the diagonal, so nnz(L + U) <= fill nnz(A) + n;
                                 default 10 (SciPy spilu's fill_factor); 0 means 10 */
    double ilut_pivot;        /* ilut: threshold column pivoting (ILUTP): when the
                                 pivot of row i is below ilut_pivot times the largest
                                 entry of U's row, that entry's column takes its place;
                                 in [0, 1], 0 = never; default 0.1 (SciPy spilu's
                                 diag_pivot_thresh) */
    int equilibrate;          /* Krylov methods: row/column scaling by powers of two
                                 (as LAPACK's dgeequb; D A D for symmetric, Hermitian
                                 or complex symmetric A, iterated until every row
                                 maximum is in [1, 4), which keeps CG, MINRES and COCG
                                 applicable) before the solve and
                                 the preconditioner, undone on x; transposed solves
                                 and VJPs use the same scaling, and gradients are for
                                 the unscaled A. SLA_EQUILIBRATE_AUTO (0, the default):
                                 only for badly scaled matrices (entries beyond
                                 2^+-300 or row maxima spread over more than 2^200);
                                 _ON always; _OFF never. A right-hand side near
                                 overflow or underflow is always scaled by a power of
                                 two. Direct backends scale rows themselves (UMFPACK,
                                 KLU) or need none (Cholesky) */
    int saamg_reuse;          /* precond=saamg at sla_solver_refresh (new values, same
                                 pattern): 0 = interpolation (the default): keep the
                                 aggregates and the prolongators, recompute the
                                 Galerkin operators on their patterns, the diagonals
                                 and the coarse factor; 1 = full: also re-smooth P
                                 with the new values on its pattern (aggregates and
                                 strength kept); 2 = none: rebuild everything;
                                 3 = hierarchy: keep every coarse level (only the
                                 fine level takes the new values) while every entry
                                 of A stays within 25 % of its value when the
                                 coarse levels were computed, else as interpolation,
                                 and rebuild past 300 % (the solve's note says
                                 which; 2 B per entry of A) */
    int saamg_smoother;       /* precond=saamg's smoother: 0 = gs (the default):
                                 Gauss-Seidel, forward down and backward up (hybrid
                                 blocks with threads); 1 = cheby: Chebyshev degree 2
                                 in D^-1 A on [lmax/30, lmax], lmax from power
                                 iterations at the set-up; 2 = spai0: x += M (b - A x)
                                 with M = diag(a_ii / sum_j a_ij^2). All three give a
                                 symmetric cycle for symmetric A */
    double saamg_theta;       /* precond=saamg: the strength threshold of the fine
                                 level, in [0, 1): a_ij couples i and j strongly when
                                 |a_ij| >= theta sqrt(|a_ii a_jj|); weak couplings are
                                 left out of the aggregates and lumped onto the
                                 diagonal when P is smoothed. 0 (the default) means
                                 0.08, which anisotropic problems need (eps 0.03-0.1:
                                 11-14 CG iterations against 17-23 at 0.01); on
                                 diffusion with a random coefficient (kappa = 10^u,
                                 u uniform in [-1, 1)) 0.01 gave 18 iterations instead
                                 of 17, smaller coarse levels (operator complexity
                                 1.39 against 1.52) and a 22-25 % cheaper training
                                 step (docs/amg.md). The coarse levels keep
                                 0.08 / 2^l (3-D Poisson needs it there) */
} sla_solver_options;

/* Values of sla_solver_options.equilibrate. */
enum { SLA_EQUILIBRATE_AUTO = 0, SLA_EQUILIBRATE_ON = 1, SLA_EQUILIBRATE_OFF = 2 };

SLA_API void sla_solver_options_default(sla_solver_options *opts);

/* sizeof(sla_solver_options) of this build, for bindings that mirror the
 * struct or pass a block of their own to be filled. */
SLA_API size_t sla_solver_options_size(void);

/* Set the monitor callback of opts (fn NULL removes it), called every
 * `every` iterations (0: each) of the Krylov methods, forward and adjoint;
 * for bindings that keep sla_solver_options opaque. */
SLA_API void sla_solver_options_set_monitor(sla_solver_options *opts, sla_monitor_fn fn, void *user,
                                            sla_int every);

/* Parse "key=value,key=value" into opts (starting from its current
 * contents). Keys: method, precond, rtol, atol, maxiter, restart, omega,
 * use_x0, ordering, memory_limit, amg_threshold, amg_coarsen, amg_interp,
 * amg_pmax, amg_agg_levels, amg_relax, amg_cycle, amg_max_levels, amg_reuse,
 * auto_solves, max_seconds, amg_agg_interp, auto_direct_seconds, ilu_shift (on|off),
 * ilut_droptol, ilut_fill, ilut_pivot, equilibrate (auto|on|off),
 * saamg_reuse (interpolation|full|none|hierarchy), saamg_smoother (gs|cheby|spai0),
 * saamg_theta.
 * An unknown key or value is SLA_ERR_ARGUMENT, naming the nearest valid one. */
SLA_API sla_status sla_solver_options_parse(sla_ctx *ctx, const char *str,
                                    sla_solver_options *opts);

/* The report of one solve (forward or adjoint). */
typedef struct sla_solve_info {
    char method[16];          /* "cg", "bicgstab", "gmres", "minres", "cholesky", "ldlt", "lu", "klu", "superlu" */
    char precond[16];         /* "none", "jacobi", "ssor", "ic0", "ilu0", "user", "amg", "saamg", "ilut" */
    char backend[16];         /* "krylov", "cholmod", "umfpack", "klu", "superlu" */
    sla_int iterations;
    double residual;          /* true ||b - A x|| / ||b|| (||b - A x|| if b = 0) */
    double residual_abs;      /* true ||b - A x|| */
    double rhs_norm;          /* ||b|| */
    sla_reason reason;
    bool converged;
    double setup_seconds;     /* analysis + preconditioner or factorization, shared by all solves */
    double factor_nnz;        /* direct: entries in the factors predicted by the analysis
                                 (0 for Krylov, or when the backend cannot predict) */
    char ordering[16];        /* direct: the fill-reducing ordering used ("" for Krylov) */
    double solve_seconds;
    char note[256];           /* dispatch decisions and fallbacks, "" if none */
    double rcond;             /* direct: the backend's reciprocal condition estimate
                                 of the factor: a pivot ratio min/max |u_jj| (CHOLMOD:
                                 of L's diagonal, squared), O(n); SuperLU refines it
                                 with dgscon's 1-norm estimate when it is below 1e-6;
                                 -1 when unknown (Krylov). Below 1e-12 the note
                                 starts with a "warning: nearly singular" (the status
                                 stays SLA_OK when the residual meets the tolerance) */
    double backward_error;    /* direct: componentwise (Oettli-Prager) backward error
                                 max_i |b - A x|_i / (|A| |x| + |b|)_i of the returned x,
                                 after iterative refinement with the same factor
                                 (LAPACK dgerfs-style: up to 5 steps while it is above
                                 eps and halves each step); -1 for Krylov */
} sla_solve_info;

/* sizeof(sla_solve_info) of this build, for bindings that mirror the struct
 * (the Python package checks its copy against it at import). */
SLA_API size_t sla_solve_info_size(void);

typedef struct sla_solver sla_solver;

/* Create a solver for every value array of A and set it up (structure
 * checks for method=auto, one preconditioner per value array).
 * Errors: SLA_ERR_ARGUMENT, SLA_ERR_DIMENSION (A not square),
 * SLA_ERR_VALUE (NaN/Inf in A), SLA_ERR_SINGULAR (zero diagonal for
 * Jacobi/SSOR, zero pivot in ILU(0)/IC(0)/ILUT with ilu_shift = 0),
 * SLA_ERR_NOT_SPD (IC(0) breakdown: a negative pivot),
 * SLA_ERR_NOMEM. */
SLA_API sla_status sla_solver_create(sla_ctx *ctx, const sla_matrix *A,
                             const sla_solver_options *opts,
                             sla_solver **out);

/* Recompute the value-dependent set-up after the values of A changed:
 * preconditioners, or numeric factorizations reusing the symbolic analysis
 * (no new ordering). What the set-up assumed is checked again (exact
 * symmetry, which lets transposed solves and VJPs reuse A, and a positive
 * diagonal; O(nnz)): method=auto re-dispatches when it changed or when its
 * choice fails on the new values (a trial Cholesky meets an indefinite
 * matrix: LU), an explicit method keeps its choice; the solves' note says
 * so. */
SLA_API sla_status sla_solver_refresh(sla_ctx *ctx, sla_solver *S);

SLA_API void sla_solver_destroy(sla_solver **S);

/* The method actually used (after auto dispatch) and the set-up time. */
SLA_API sla_method sla_solver_method(const sla_solver *S);
SLA_API double sla_solver_setup_seconds(const sla_solver *S);

/* The multigrid hierarchy of a solver's preconditioner (precond=saamg,
 * also when method=auto chose it): what AMG users compare hierarchies by.
 * Level 0 is A itself; level l + 1 = P_l^T A_l P_l. */
#define SLA_HIERARCHY_MAX_LEVELS 32
typedef struct sla_hierarchy_info {
    int levels;                   /* number of levels (0: no hierarchy, e.g. after a
                                     failed refresh) */
    sla_int rows[SLA_HIERARCHY_MAX_LEVELS];   /* rows of A_l */
    sla_int nnz[SLA_HIERARCHY_MAX_LEVELS];    /* stored entries of A_l */
    sla_int p_nnz[SLA_HIERARCHY_MAX_LEVELS];  /* stored entries of the prolongator
                                     P_l (rows[l] x rows[l + 1]); 0 on the coarsest */
    double operator_complexity;   /* sum_l nnz[l] / nnz[0] */
    double grid_complexity;       /* sum_l rows[l] / rows[0] */
    bool coarse_direct;           /* the coarsest level is solved by a dense
                                     factorization (else only smoothed) */
} sla_hierarchy_info;

/* The hierarchy of the preconditioner of value array ib of S, as it stands
 * (after the last set-up or refresh), into *out (zeroed first).
 * Errors: SLA_ERR_ARGUMENT (NULL S or out, ib out of range),
 * SLA_ERR_UNSUPPORTED (S has no multigrid hierarchy of sla's own: a direct
 * method, another preconditioner, a complex solver; hypre's precond=amg
 * keeps its hierarchy inside hypre). */
SLA_API sla_status sla_solver_hierarchy(sla_ctx *ctx, const sla_solver *S, sla_int ib,
                                        sla_hierarchy_info *out);

/* sizeof(sla_hierarchy_info) of this build, for bindings that mirror it. */
SLA_API size_t sla_hierarchy_info_size(void);

/* Solve A_ib X = B for nrhs right-hand sides (column-major, leading
 * dimensions ldb, ldx >= n). info receives nrhs reports (may be NULL).
 * Returns SLA_OK when every column converged, SLA_NOT_CONVERGED when some
 * did not, an error otherwise. */
SLA_API sla_status sla_solver_solve(sla_ctx *ctx, sla_solver *S, sla_int ib,
                            sla_int nrhs, const double *b, sla_int ldb,
                            double *x, sla_int ldx, sla_solve_info *info);

/* Solve A_ib^T X = B with the transposed operator and preconditioner. */
SLA_API sla_status sla_solver_solve_transpose(sla_ctx *ctx, sla_solver *S,
                                      sla_int ib, sla_int nrhs,
                                      const double *b, sla_int ldb,
                                      double *x, sla_int ldx,
                                      sla_solve_info *info);

/* VJP of X = A_ib^-1 B. Given the solution X and gx = dL/dX, solves
 * A^T L = gx once per column (same method, transposed preconditioner) and
 * writes gb = dL/dB = L (may be NULL) and gA[k] = -sum_r L[row_k, r]
 * X[col_k, r] over the stored entries (nnz values, overwritten; may be
 * NULL). Extra memory O(n + nnz), whatever the iteration count.
 * info receives nrhs adjoint reports. */
SLA_API sla_status sla_solver_solve_vjp(sla_ctx *ctx, sla_solver *S, sla_int ib,
                                sla_int nrhs, const double *x, sla_int ldx,
                                const double *gx, sla_int ldgx, double *gb,
                                sla_int ldgb, double *gA,
                                sla_solve_info *info);

/* Batched: one right-hand side per value array, b and x [nbatch][n],
 * info [nbatch]. The batch runs in parallel over the context's threads. */
SLA_API sla_status sla_solver_solve_batch(sla_ctx *ctx, sla_solver *S,
                                  const double *b, double *x,
                                  sla_solve_info *info);

/* Batched VJP: x, gx, gb [nbatch][n]; gA [nbatch][nnz]. */
SLA_API sla_status sla_solver_solve_batch_vjp(sla_ctx *ctx, sla_solver *S,
                                      const double *x, const double *gx,
                                      double *gb, double *gA,
                                      sla_solve_info *info);

/* A list of solvers for matrices with different patterns (a batch of
 * graphs), each with one right-hand side: b[i], x[i] have the size of
 * solver i's matrix. Runs in parallel over the context's threads (a list
 * that names one solver more than once runs one item at a time: one
 * solver object never solves twice at once; see docs/reliability.md,
 * "Thread safety"). */
SLA_API sla_status sla_solver_solve_list(sla_ctx *ctx, sla_int count,
                                         sla_solver *const *solvers,
                                         const double *const *b, double *const *x,
                                         sla_solve_info *info);

/* The VJPs of the same list: x[i], gx[i] in, gb[i], gA[i] out. */
SLA_API sla_status sla_solver_solve_list_vjp(sla_ctx *ctx, sla_int count,
                                             sla_solver *const *solvers,
                                             const double *const *x,
                                             const double *const *gx, double *const *gb,
                                             double *const *gA, sla_solve_info *info);

/* Earlier spellings of the two above, kept as conveniences. */
SLA_API sla_status sla_solve_list(sla_ctx *ctx, sla_int count, sla_solver *const *solvers,
                                  const double *const *b, double *const *x, sla_solve_info *info);
SLA_API sla_status sla_solve_list_vjp(sla_ctx *ctx, sla_int count, sla_solver *const *solvers,
                                      const double *const *x, const double *const *gx,
                                      double *const *gb, double *const *gA, sla_solve_info *info);

/* sla_solver_logdet, sla_solver_logdet_vjp (and the deprecated
 * sla_solver_logdet_grad): declared in eig.h with the other logdet
 * functions, which is included at the end of this header. */

/* Is value array ib of A symmetric positive definite? *answer is true when
 * A is square, symmetric (|a_ij - a_ji| <= 1e-12 max|a|: the symmetry
 * method=cholesky accepts), every diagonal entry is stored and positive,
 * and a trial Cholesky factorization (method=cholesky, CHOLMOD) succeeds;
 * false when any of them fails (a factorization that meets a nonpositive
 * pivot, SLA_ERR_NOT_SPD or SLA_ERR_SINGULAR, is a "no", not an error).
 * A 0 x 0 matrix is SPD. Costs one sparse Cholesky factorization of the
 * matrix (nothing is kept). Errors: SLA_ERR_ARGUMENT, SLA_ERR_INDEX,
 * SLA_ERR_UNAVAILABLE (a build without CHOLMOD),
 * SLA_ERR_NOMEM / _TOO_LARGE (the factor does not fit the memory limit).
 * A complex A (SLA_C128, SLA_C64): Hermitian positive definite, asked the
 * same way: Hermitian (|a_ij - conj(a_ji)| <= 1e-12 max|a|), a real
 * positive diagonal, and a trial complex Cholesky (CHOLMOD's; a build
 * without it factors densely up to order 1500, past that
 * SLA_ERR_UNAVAILABLE). */
SLA_API sla_status sla_matrix_is_spd(sla_ctx *ctx, const sla_matrix *A, sla_int ib, bool *answer);

/* One-shot: create a solver, solve A_0 x = b, destroy it. */
SLA_API sla_status sla_solve(sla_ctx *ctx, const sla_matrix *A,
                     const sla_solver_options *opts, const double *b,
                     double *x, sla_solve_info *info);

#ifdef __cplusplus
}
#endif

/* the solver-object logdet family (eig.h includes this header first; the
 * guards make either order of inclusion work) */
#include "eig.h"

#endif
