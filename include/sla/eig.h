/* sla/eig.h — log-determinants and symmetric eigenpairs, with gradients
 * with respect to the stored values.
 *
 * Gradients with respect to a matrix are, as everywhere in sla, arrays of
 * nnz values in the matrix's CSR order: entry k is the derivative with
 * respect to stored value k, every stored value being an independent
 * variable (for a symmetric matrix whose two triangles are tied, the
 * derivative along a symmetric change of a_ij = a_ji is g[k_ij] + g[k_ji]).
 */
#ifndef SLA_EIG_H
#define SLA_EIG_H

#include "solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- determinants ------------------------------------------------------ */

typedef enum sla_logdet_method {
    SLA_LOGDET_AUTO = 0, /* symmetric: Cholesky, then LDL^T if not positive definite,
                            then LU if LDL^T meets a zero pivot; otherwise LU */
    SLA_LOGDET_CHOLESKY, /* CHOLMOD LL^T (SPD) */
    SLA_LOGDET_LDLT,     /* CHOLMOD LDL^T without pivoting (symmetric) */
    SLA_LOGDET_LU        /* UMFPACK LU (any square matrix) */
} sla_logdet_method;

SLA_API const char *sla_logdet_method_name(sla_logdet_method m);

typedef struct sla_logdet_info {
    char method[16];        /* the factorization used: "cholesky", "ldlt", "lu" */
    char grad_method[16];   /* "selinv" (Takahashi recurrences on the factor's pattern:
                               Cholesky, LDL^T and LU), "solves" (one solve per
                               column: LU factors when UMFPACK is not in the
                               build), "" when no gradient was asked for */
    double factor_seconds;  /* analysis + numeric factorization */
    double grad_seconds;    /* the gradient alone */
    double factor_nnz;      /* entries in the factors predicted by the analysis */
    char note[192];         /* dispatch decisions and fallbacks, "" if none */
} sla_logdet_info;

/* sign (+1 or -1) and log|det A_ib| from a sparse factorization, never
 * forming det itself (no overflow). grad, if not NULL, receives
 * d log|det A| / dA_k = (A^-1)[col_k, row_k] for every stored entry k (nnz
 * values): by selected inversion (Takahashi recurrences on the Cholesky,
 * LDL^T or LU factor's pattern; the LU form is the unsymmetric
 * Erisman-Tinney one on UMFPACK's L and U): about the cost of the
 * factorization, up to ten times it for LU factors with little supernodal
 * structure.
 * sla_solver_logdet_vjp on a KLU or SuperLU solver refactors with UMFPACK
 * for the gradient (the note says so); one solve per column (blocked)
 * remains only where UMFPACK is missing. The
 * derivative of sign * exp(logabsdet) is det * grad.
 * Cholesky and LDL^T need an exactly symmetric A (SLA_ERR_ARGUMENT
 * otherwise). info may be NULL.
 * A singular matrix: sign = 0, logabsdet = -inf, and SLA_ERR_SINGULAR with
 * the failing pivot in the message (its gradient does not exist).
 * Errors: SLA_ERR_ARGUMENT, SLA_ERR_DIMENSION (not square), SLA_ERR_INDEX
 * (ib), SLA_ERR_VALUE (NaN/Inf), SLA_ERR_NOT_SPD (method cholesky),
 * SLA_ERR_SINGULAR, SLA_ERR_UNAVAILABLE (no SuiteSparse), SLA_ERR_NOMEM. */
SLA_API sla_status sla_logdet(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                      sla_logdet_method method, double *sign,
                      double *logabsdet, double *grad,
                      sla_logdet_info *info);

/* Every value array of A: sign, logabsdet [nbatch], grad [nbatch][nnz]
 * (may be NULL), info [nbatch] (may be NULL). One analysis of the pattern
 * is not shared here (each array is factored on its own, so a singular
 * array does not stop the others: its sign is 0 and the first error, by
 * index, is returned after all arrays are done). */
SLA_API sla_status sla_logdet_batch(sla_ctx *ctx, const sla_matrix *A,
                            sla_logdet_method method, double *sign,
                            double *logabsdet, double *grad,
                            sla_logdet_info *info);

/* ---- the same from a solver object's factorization --------------------
 * (sla_solver_logdet, _vjp and _grad: the solver-object logdet family,
 * declared here next to the other logdet functions; solver.h includes this
 * header, so code that includes only solver.h still sees them.) */

/* sign (+1, -1, or 0 when singular) and log|det A_ib| from the solver's
 * factorization, never forming det itself. Krylov solvers have none:
 * SLA_ERR_UNSUPPORTED. */
SLA_API sla_status sla_solver_logdet(sla_ctx *ctx, sla_solver *S, sla_int ib, double *sign,
                             double *logabsdet);

/* VJP of log|det A_ib| with the factorization a direct solver already
 * holds (create it with method cholesky, ldlt, lu, or auto when it chose a
 * direct method): given the scalar cotangent g = dL/d log|det A_ib|,
 * gA[k] = g (A^-1)[col_k, row_k] (nnz values, overwritten; may be NULL,
 * then only sign and logabsdet are computed). sign and logabsdet may be
 * NULL. Krylov solvers: SLA_ERR_UNSUPPORTED. */
SLA_API sla_status sla_solver_logdet_vjp(sla_ctx *ctx, sla_solver *S, sla_int ib, double g,
                                 double *sign, double *logabsdet, double *gA,
                                 sla_logdet_info *info);

/* Deprecated spelling, kept as a convenience: sla_solver_logdet_vjp with
 * g = 1, i.e. grad[k] = (A^-1)[col_k, row_k]. */
SLA_API sla_status sla_solver_logdet_grad(sla_ctx *ctx, sla_solver *S, sla_int ib,
                                  double *sign, double *logabsdet,
                                  double *grad, sla_logdet_info *info);

/* det A_ib = sign * exp(log|det|) on request. When it does not fit a
 * double, *det is +-inf (overflow) or +-0 (underflow) and the call returns
 * SLA_ERR_TOO_LARGE with log|det| in the message: use sla_logdet. A
 * singular matrix gives *det = 0 and SLA_ERR_SINGULAR. */
SLA_API sla_status sla_det(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                   sla_logdet_method method, double *det);

/* ---- stochastic log-determinant (SPD matrices too large to factor) ---- */

typedef struct sla_slq_options {
    sla_int probes;             /* Rademacher probe vectors; default 32 */
    sla_int lanczos_steps;      /* Lanczos steps per probe (quadrature nodes); default 50 */
    uint64_t seed;              /* probe generator seed; default 1 */
    sla_solver_options solver;  /* the gradient's solves A x = z, one per probe: default
                                   method cg, rtol 1e-10 (set precond = amg for large
                                   problems) */
} sla_slq_options;

SLA_API void sla_slq_options_default(sla_slq_options *opts);

/* Parse "key=value,key=value" into opts (starting from its current
 * contents; "" leaves it as it is). Keys: probes (1 .. 1e8), lanczos_steps
 * (1 .. 10000), seed (0 .. 2^64 - 1), and solver.<key> for every key of
 * sla_solver_options_parse (solver.method=cg, solver.precond=amg,
 * solver.rtol=1e-8, ...). An unknown key or a value out of range is
 * SLA_ERR_ARGUMENT naming the key (and the nearest valid one); opts is then
 * unchanged. */
SLA_API sla_status sla_slq_options_parse(sla_ctx *ctx, const char *str, sla_slq_options *opts);

typedef struct sla_slq_info {
    sla_int probes, lanczos_steps;
    double std_error;          /* standard error of the logdet estimate (the probes' spread
                                  / sqrt(probes)) */
    double ritz_min, ritz_max; /* extreme Ritz values met (a check on positive definiteness) */
    sla_int solve_iterations;  /* gradient: the most Krylov iterations of one solve */
    double seconds;
    char note[192];
} sla_slq_info;

/* Stochastic Lanczos quadrature estimate of log det A_ib for a symmetric
 * positive definite A, from matrix-vector products only:
 *   log det A = tr log A ~ (1/P) sum_p z_p^T log(A) z_p,
 * each quadratic form by m-point Gauss quadrature from m Lanczos steps
 * started at the Rademacher probe z_p (||z_p||^2 = n). *std_error (may be
 * NULL) receives the standard error over the probes (the estimate's own
 * spread; the quadrature error is not included and falls fast with m).
 * grad (nnz, may be NULL) receives Hutchinson's unbiased estimate of
 * d log det A / dA_k = (A^-1)[col_k, row_k]:
 *   (1/P) sum_p (A^-1 z_p)[col_k] z_p[row_k],
 * one solve per probe with opts->solver (same probes). Deterministic for a
 * given seed. Errors: SLA_ERR_ARGUMENT (options, A not symmetric),
 * SLA_ERR_NOT_SPD (a Ritz value <= 0), SLA_ERR_DIMENSION, SLA_ERR_INDEX,
 * SLA_ERR_VALUE, SLA_ERR_UNAVAILABLE (no LAPACK in this build),
 * SLA_ERR_NOMEM; SLA_NOT_CONVERGED (a warning) when a gradient solve missed
 * its tolerance. */
SLA_API sla_status sla_logdet_slq(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                          const sla_slq_options *opts, double *logdet,
                          double *std_error, double *grad,
                          sla_slq_info *info);

/* ---- symmetric eigenpairs ---------------------------------------------- */

/* Which eigenvalues. Without a shift: largest / smallest algebraic (LA /
 * SA), largest / smallest magnitude (LM / SM).
 *  - SA runs shift-invert below the spectrum: sigma is the smallest Ritz
 *    value of a 40-step Lanczos run moved down by twice its residual,
 *    certified below the spectrum by a Cholesky factorization of
 *    A - sigma I succeeding (further down, ten times as far each time, at
 *    most to just past the Gershgorin bound, then two bisections back
 *    toward the spectrum), and Lanczos on (A - sigma I)^-1 (with
 *    factor_method when that is not auto or cholesky). Where no
 *    factorization is possible (over memory_limit, no SuiteSparse in this
 *    build) it falls back to LOBPCG (sla_lobpcg, default preconditioner)
 *    on A, then on A - sigma I with sigma just below the Gershgorin bound,
 *    accepted when all k pairs converge (residuals within 1e-8 ||A||_1),
 *    then to plain Lanczos with ncv = max(4k + 1, 64) (when ncv is 0);
 *    info.method ("lobpcg", "arpack") and the note say which.
 *  - LA runs plain Lanczos, and when that leaves pairs unconverged after
 *    50 restarts (or maxiter, if smaller), the same shift-invert from above
 *    the spectrum (where that cannot factor, plain Lanczos again with the
 *    larger ncv and the full maxiter).
 *  - SM runs shift-invert around 0 (a factorization of A); around
 *    1e-8 ||A|| (then 1e-6, 1e-4) when A is singular; plain Lanczos when A
 *    cannot be factored.
 *  - LM runs plain Lanczos.
 * With a shift sigma (shift-invert on (A - sigma I)^-1): LM and SM give
 * the eigenvalues nearest sigma, LA those nearest above it, SA those
 * nearest below it. When A - sigma I is singular (sigma an eigenvalue),
 * sigma moves by 1e-8 ||A|| (then 1e-6, 1e-4; downward for LA, upward
 * otherwise, so that the eigenvalue at sigma stays in the set asked for)
 * and the note says so. ||A|| here is the Gershgorin bound of the
 * spectral radius. info.method and info.note report the path taken and
 * the sigma used. */
typedef enum sla_eig_which {
    SLA_EIG_LA = 0,
    SLA_EIG_SA,
    SLA_EIG_LM,
    SLA_EIG_SM
} sla_eig_which;

SLA_API const char *sla_eig_which_name(sla_eig_which w);

typedef struct sla_eigsh_options {
    sla_int k;                 /* eigenpairs wanted, 1 <= k < n; default 6 */
    sla_eig_which which;       /* default SLA_EIG_LM */
    bool shift_invert;         /* use sigma; default false */
    double sigma;              /* the shift (when shift_invert) */
    double tol;                /* ARPACK's relative accuracy of the Ritz values;
                                  default 0 = machine epsilon */
    sla_int ncv;               /* Lanczos basis size; default 0 = min(n, max(2k + 1, 20)) */
    sla_int maxiter;           /* ARPACK restarts; default 0 = max(1000, 10 n) */
    sla_method factor_method;  /* shift-invert factorization of A - sigma I: auto tries
                                  cholesky, then ldlt, then lu; or cholesky/ldlt/lu/klu/
                                  umfpack/superlu */
    double memory_limit;       /* bytes a shift-invert factorization may use (the solver's
                                  memory_limit); default 0 = half of the memory available.
                                  SA and LA fall back to plain Lanczos, SM too, past it */
    const double *v0;          /* start vector (n), default NULL = a seeded random vector */
    /* gradients (sla_eigsh_vjp) */
    double degenerate_tol;     /* |l_i - l_j| <= degenerate_tol * max |l| makes i, j a
                                  degenerate cluster; default 1e-9 */
    double grad_rtol;          /* MINRES tolerance of the projected solves; default 1e-12 */
    sla_int grad_maxiter;      /* default 0 = max(1000, 10 n) */
} sla_eigsh_options;

SLA_API void sla_eigsh_options_default(sla_eigsh_options *opts);

/* Parse "key=value,key=value" into opts (starting from its current
 * contents; "" leaves it as it is). Keys, one per field: k (>= 1), which
 * (LA, SA, LM, SM; any case), shift_invert (true/false, on/off, 1/0),
 * sigma (a finite number; also sets shift_invert = true, as giving a shift
 * does everywhere else), tol (>= 0), ncv (0 .. 46340), maxiter (>= 0),
 * factor_method (auto, cholesky, ldlt, lu, umfpack, klu, superlu),
 * memory_limit (bytes, >= 0), degenerate_tol (>= 0), grad_rtol (> 0),
 * grad_maxiter (>= 0). v0 is a pointer and has no key. An unknown key or a
 * value out of range is SLA_ERR_ARGUMENT naming the key (and the nearest
 * valid one); opts is then unchanged. */
SLA_API sla_status sla_eigsh_options_parse(sla_ctx *ctx, const char *str, sla_eigsh_options *opts);

/* sizeof(sla_eigsh_options) and sizeof(sla_eigsh_info) of this build, for
 * bindings that mirror the structs (the Python package checks at import). */
SLA_API size_t sla_eigsh_options_size(void);
SLA_API size_t sla_eigsh_info_size(void);

typedef struct sla_eigsh_info {
    char method[40];           /* "arpack", "arpack shift-invert (cholesky)" ... */
    bool converged;            /* all k pairs converged */
    sla_int nconv;             /* pairs that converged */
    sla_int iterations;        /* ARPACK restarts (Lanczos iterations for vjp) */
    sla_int nops;              /* operator applications (solves in shift-invert) */
    double max_residual;       /* max_i ||A v_i - l_i v_i|| over the converged pairs */
    double factor_seconds;     /* shift-invert: the factorization (SA, LA: with the search
                                  for sigma, its Lanczos run and trial factorizations) */
    double seconds;            /* the whole call */
    char note[192];            /* dispatch decisions, "" if none */
} sla_eigsh_info;

/* k eigenpairs of the symmetric value array ib of A (only the matrix's
 * action is used; A must be symmetric, checked to 1e-12 relative), with
 * ARPACK's implicitly restarted Lanczos (dsaupd/dseupd).
 * evals (k) receives the eigenvalues in ascending algebraic order; evecs
 * (n x k, column-major, leading dimension ldv >= n; may be NULL) the
 * orthonormal eigenvectors in the same order; residuals (k, may be NULL)
 * ||A v_i - l_i v_i|| with ||v_i|| = 1. info may be NULL.
 * Returns SLA_OK, or SLA_NOT_CONVERGED (a warning) when fewer than k pairs
 * converged within maxiter: the first info.nconv entries (ascending) hold
 * the converged pairs, the rest are NaN.
 * ARPACK keeps state in Fortran SAVE variables, so sla serializes its
 * calls with a process-wide mutex (the one exception to "no global
 * state"); the matrix products and solves are the library's own.
 * Errors: SLA_ERR_ARGUMENT (options, A not symmetric), SLA_ERR_DIMENSION,
 * SLA_ERR_INDEX, SLA_ERR_VALUE, SLA_ERR_SINGULAR (with a shift: A - sigma I
 * singular even after moving sigma), SLA_ERR_NOT_SPD (with a shift and
 * factor_method cholesky), SLA_ERR_UNAVAILABLE (no ARPACK in this build;
 * with a shift, no direct solver), SLA_ERR_NOMEM (an allocation failed;
 * with a shift, also a factorization over the solver's memory_limit). */
SLA_API sla_status sla_eigsh(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                     const sla_eigsh_options *opts, double *evals,
                     double *evecs, sla_int ldv, double *residuals,
                     sla_eigsh_info *info);

/* Every value array: evals [nbatch][k], evecs [nbatch][n * k] (ld n, may
 * be NULL), residuals [nbatch][k] (may be NULL), info [nbatch] (may be
 * NULL). The arrays run one after the other (ARPACK is serialized). */
SLA_API sla_status sla_eigsh_batch(sla_ctx *ctx, const sla_matrix *A,
                           const sla_eigsh_options *opts, double *evals,
                           double *evecs, double *residuals,
                           sla_eigsh_info *info);

/* VJP of (evals, evecs) = eigsh(A_ib): given the k computed pairs and
 * gl = dL/d evals (k, may be NULL) and gv = dL/d evecs (n x k, leading
 * dimension ldgv, may be NULL), writes gA (nnz, overwritten):
 *   gA[p] = sum_i gl_i v_i[r] v_i[c] + u_i[r] v_i[c]     (p = (r, c))
 * with u_i = sum_{j != i} v_j (v_j . g_i) / (l_i - l_j) over the computed
 * pairs, plus the component on the complement of the computed eigenspace,
 * -(A - l_i I)^+ Q g_i, from one projected MINRES solve per vector
 * (Q = I - V V^T). Eigenvalues: Hellmann-Feynman; eigenvectors:
 * first-order perturbation of the unit eigenvector.
 * A degenerate cluster (|l_i - l_j| <= degenerate_tol max |l|) has no
 * unique eigenvectors: a loss that is not invariant within it (gl_i !=
 * gl_j, or v_j . g_i != v_i . g_j) is refused with SLA_ERR_UNSUPPORTED
 * naming the pair; an invariant one gets the gradient along symmetric
 * perturbations. info (may be NULL): iterations = the most MINRES
 * iterations, max_residual = the largest relative MINRES residual.
 * The cluster must not straddle the k-th eigenvalue (an eigenvalue left
 * out equal to a computed one): that makes the projected solve singular,
 * reported as SLA_NOT_CONVERGED.
 * Returns SLA_OK, SLA_NOT_CONVERGED (a projected solve missed grad_rtol;
 * gA is still written), or an error. */
SLA_API sla_status sla_eigsh_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                         const sla_eigsh_options *opts, sla_int k,
                         const double *evals, const double *evecs,
                         sla_int ldv, const double *gl, const double *gv,
                         sla_int ldgv, double *gA, sla_eigsh_info *info);

/* Batched VJP: evals, gl [nbatch][k]; evecs, gv [nbatch][n * k] (ld n);
 * gl or gv may be NULL; gA [nbatch][nnz]; info [nbatch] (may be NULL). */
SLA_API sla_status sla_eigsh_batch_vjp(sla_ctx *ctx, const sla_matrix *A,
                               const sla_eigsh_options *opts, sla_int k,
                               const double *evals, const double *evecs,
                               const double *gl, const double *gv,
                               double *gA, sla_eigsh_info *info);

/* ---- LOBPCG: smallest eigenpairs of large SPD matrices ------------------ */

typedef struct sla_lobpcg_options {
    sla_int k;                  /* eigenpairs wanted (the smallest), 1 <= k, 3 k < n; default 6 */
    double tol;                 /* stop when ||A x_i - l_i x_i|| <= tol ||A||_1 for every i
                                   (||A||_1: the largest absolute row sum); default 1e-8.
                                   Residuals stall near 1e-10 ||A||_1; the eigenvalues
                                   are then accurate to about (residual)^2 / gap */
    sla_int maxiter;            /* default 500 */
    sla_solver_options pc;      /* the preconditioner: pc.precond (none, jacobi, ssor, ic0,
                                   amg, user with pc.user_precond) and its settings
                                   (pc.amg, pc.omega); default amg when this build has
                                   hypre, else jacobi */
    const double *x0;           /* start block (n x k, ld n), default NULL = seeded random */
    uint64_t seed;              /* default 1 */
} sla_lobpcg_options;

SLA_API void sla_lobpcg_options_default(sla_lobpcg_options *opts);

/* sizeof(sla_lobpcg_options) of this build, for bindings that mirror it. */
SLA_API size_t sla_lobpcg_options_size(void);

/* Parse "key=value,key=value" into opts (starting from its current
 * contents; "" leaves it as it is). Keys: k (1 .. 10000), tol (> 0),
 * maxiter (>= 1), seed (0 .. 2^64 - 1), and pc.<key> for every key of
 * sla_solver_options_parse (pc.precond=ic0, pc.omega=1.2, pc.amg_relax=6,
 * ...). x0 is a pointer and has no key. An unknown key or a value out of
 * range is SLA_ERR_ARGUMENT naming the key (and the nearest valid one);
 * opts is then unchanged. */
SLA_API sla_status sla_lobpcg_options_parse(sla_ctx *ctx, const char *str, sla_lobpcg_options *opts);

/* The k smallest eigenpairs of the symmetric positive definite value array
 * ib of A by LOBPCG (Knyazev's locally optimal block preconditioned
 * conjugate gradient), without factorizing A: per iteration one
 * preconditioner application and two products with A per vector, and a
 * Rayleigh-Ritz step on [X, W, P] orthonormalized by SVQB. Results as for
 * sla_eigsh (ascending, orthonormal, residuals); info->iterations counts
 * LOBPCG iterations, info->nops the products with A.
 * Returns SLA_OK, SLA_NOT_CONVERGED (the best iterate is returned, nconv
 * counts the pairs within tol), or an error: SLA_ERR_ARGUMENT,
 * SLA_ERR_NOT_SPD (a preconditioner breakdown), SLA_ERR_UNAVAILABLE (no
 * LAPACK in this build), SLA_ERR_NOMEM. */
SLA_API sla_status sla_lobpcg(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                      const sla_lobpcg_options *opts, double *evals,
                      double *evecs, sla_int ldv, double *residuals,
                      sla_eigsh_info *info);

/* The k smallest eigenpairs of the symmetric-definite pencil A x = l B x
 * (A = value array ibA of A, symmetric; B = value array ibB of B,
 * symmetric positive definite, same order, any pattern) by LOBPCG with
 * B-orthonormal blocks: the Gram matrices of the Rayleigh-Ritz step are
 * S^T B S, the residuals A x - l B x, each iteration adds k products with
 * B. The preconditioner (opts->pc) is built from A. Results as sla_lobpcg
 * with eigenvectors B-orthonormal (x_i^T B x_j = delta_ij) and residuals
 * ||A x_i - l_i B x_i||; a pair has converged when its residual is at most
 * tol (||A||_1 + |l_i| ||B||_1). Errors as sla_lobpcg, plus
 * SLA_ERR_DIMENSION (orders differ), SLA_ERR_ARGUMENT (B NULL or not
 * symmetric) and SLA_ERR_NOT_SPD (x^T B x < 0 met: B not positive
 * definite; an indefinite B is not always detected). */
SLA_API sla_status sla_lobpcg_generalized(sla_ctx *ctx, const sla_matrix *A, sla_int ibA, const sla_matrix *B,
                                          sla_int ibB, const sla_lobpcg_options *opts, double *evals,
                                          double *evecs, sla_int ldv, double *residuals, sla_eigsh_info *info);

#ifdef __cplusplus
}
#endif
#endif
