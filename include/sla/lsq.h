/* sla/lsq.h — damped sparse least squares by LSQR and LSMR, with the VJP.
 *
 *   x = argmin_x ||A x - b||^2 + damp^2 ||x||^2      (A: m x n, any shape)
 *
 * from products with A and A^T only (Golub-Kahan bidiagonalization). For
 * damp = 0 and x0 = NULL the iterates stay in range(A^T), so a rank-
 * deficient or underdetermined A gives the minimum-norm least-squares
 * solution A^+ b. Gradients with respect to A are, as everywhere in sla,
 * arrays of nnz values in the matrix's CSR order.
 */
#ifndef SLA_LSQ_H
#define SLA_LSQ_H

#include "matrix.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sla_lsq_method {
    SLA_LSQ_LSQR = 0, /* Paige & Saunders (1982): CG on the normal equations, stably */
    SLA_LSQ_LSMR = 1, /* Fong & Saunders (2011): MINRES on the normal equations
                         (||A^T r|| decreases monotonically) */
    SLA_LSQ_QR = 2    /* direct: SuiteSparseQR of [A; damp I] (full column rank or
                         damp > 0), or of A^T for the minimum-norm solution of an
                         underdetermined A of full row rank. A rank-deficient A
                         without damping falls back to LSMR (said in info.note).
                         x0, conlim and maxiter do not apply (atol, btol only name
                         the reason: compatible or normal); acond is not estimated
                         (0); the VJP's
                         adjoint solves stay iterative (LSQR/CG). */
} sla_lsq_method;

SLA_API const char *sla_lsq_method_name(sla_lsq_method m);

/* Which stopping test fired (Paige & Saunders' istop, the machine-precision
 * variants folded into their tests). */
typedef enum sla_lsq_reason {
    SLA_LSQ_ZERO = 0,       /* x = x0 is exact: A^T (b - A x0) - damp^2 x0 = 0 */
    SLA_LSQ_COMPATIBLE = 1, /* test 1: ||rbar|| <= btol ||b|| + atol ||Abar|| ||x||
                               (a compatible system, solved to atol/btol) */
    SLA_LSQ_NORMAL = 2,     /* test 2: ||Abar^T rbar|| <= atol ||Abar|| ||rbar||
                               (a least-squares solution to atol) */
    SLA_LSQ_CONLIM = 3,     /* cond(Abar) estimate >= conlim */
    SLA_LSQ_MAXITER = 4     /* maxiter iterations */
} sla_lsq_reason;

SLA_API const char *sla_lsq_reason_name(sla_lsq_reason r);

typedef struct sla_lsq_options {
    sla_lsq_method method; /* default SLA_LSQ_LSQR */
    double damp;           /* lambda >= 0; default 0 */
    double atol, btol;     /* stopping tolerances (relative errors of A and b);
                              default 1e-8 each (SciPy: 1e-6) */
    double conlim;         /* stop when the estimate of cond(Abar) reaches it;
                              0 = no limit; default 1e8 */
    sla_int maxiter;       /* default 0 = 2 n, at least 20, for both methods (SciPy's
                              lsqr default; min(m, n) steps suffice in exact
                              arithmetic, but without reorthogonalization an
                              ill-conditioned A needs more: lp_e226, 223 x 472,
                              takes about 1100 to 1e-14) */
    const double *x0;      /* start (n), default NULL = 0. With x0 the problem
                              is the same (damping acts on x, not x - x0) */
    /* the VJP (sla_lsq_vjp) */
    double grad_rtol;      /* relative residual of the adjoint solves; default 1e-10 */
    sla_int grad_maxiter;  /* default 0 = max(1000, 4 n) */
    sla_transpose_mode transpose; /* products with A^T (sla/matrix.h): auto (default),
                              explicit (A^T built once per solve, about the matrix's
                              memory again), scatter; LSQR and LSMR only */
} sla_lsq_options;

SLA_API void sla_lsq_options_default(sla_lsq_options *opts);

/* Parse "key=value,key=value" into opts (starting from its current
 * contents; "" leaves it as it is). Keys: method (lsqr, lsmr), damp (>= 0),
 * atol, btol (>= 0), conlim (>= 0), maxiter (>= 0), grad_rtol (> 0),
 * grad_maxiter (>= 0), transpose (auto, explicit, scatter). x0 is a pointer and has no key. An unknown key or a
 * value out of range is SLA_ERR_ARGUMENT naming the key (and the nearest
 * valid one); opts is then unchanged. */
SLA_API sla_status sla_lsq_options_parse(sla_ctx *ctx, const char *str, sla_lsq_options *opts);

/* Abar = [A; damp I] and rbar = [b - A x; -damp x] below. */
typedef struct sla_lsq_info {
    char method[8];          /* "lsqr", "lsmr" */
    sla_lsq_reason reason;
    bool converged;          /* reason ZERO, COMPATIBLE or NORMAL */
    sla_int iterations;
    double rnorm;            /* estimate of ||rbar|| = sqrt(||b - A x||^2 + damp^2 ||x||^2) */
    double arnorm;           /* estimate of ||A^T (b - A x) - damp^2 x|| */
    double anorm;            /* estimate of ||Abar||_F */
    double acond;            /* estimate of cond(Abar) */
    double xnorm;            /* ||x|| */
    double true_rnorm;       /* ||b - A x||, computed at the end */
    double true_arnorm;      /* ||A^T (b - A x) - damp^2 x||, computed at the end */
    /* sla_lsq_vjp: the adjoint solves (CG on A^T A + damp^2 I) */
    sla_int adjoint_iterations; /* all CG and LSQR iterations of the adjoint */
    double adjoint_residual;    /* the largest true relative residual of its solves */
    double seconds;
    char note[160];
} sla_lsq_info;

/* x (n) = argmin ||A_ib x - b||^2 + damp^2 ||x||^2 for the value array ib
 * of A (m x n, any shape), b (m), by opts->method (opts NULL: the
 * defaults). info may be NULL. Returns SLA_OK (reason ZERO, COMPATIBLE or
 * NORMAL), SLA_NOT_CONVERGED (a warning: conlim or maxiter stopped it; x is
 * the last iterate), or an error: SLA_ERR_ARGUMENT (NULL, options),
 * SLA_ERR_INDEX (ib), SLA_ERR_VALUE (NaN/Inf in A, b or x0),
 * SLA_ERR_NOMEM. */
SLA_API sla_status sla_lsq(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_lsq_options *opts,
                           const double *b, double *x, sla_lsq_info *info);

/* VJP of x = sla_lsq(A_ib, b): given the forward's x (n) and gx = dL/dx
 * (n), writes gb = dL/db (m, may be NULL) and gA = dL/dA (nnz, may be
 * NULL, overwritten) from one adjoint solve (A^T A + damp^2 I) y = gx:
 *   gb = A y,   gA[k] = r_i y_j - (A y)_i x_j   (k = (i, j), r = b - A x).
 * For damp = 0 x = A^+ b; y is then the minimum-norm solution on range(A^T)
 * and, when A has a null space (underdetermined), the pseudo-inverse's
 * extra term z_i q_j is added (q = the part of gx in null(A), z = A^+T x):
 * two more solves. Exact where the rank of A is locally constant (always
 * for damp > 0). info (may be NULL) reports the adjoint's iterations and
 * residual. Returns SLA_OK, SLA_NOT_CONVERGED (an adjoint solve missed
 * grad_rtol; the gradients are still written), or an error as sla_lsq. */
SLA_API sla_status sla_lsq_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_lsq_options *opts,
                               const double *b, const double *x, const double *gx, double *gb, double *gA,
                               sla_lsq_info *info);

/* Every value array of A, in parallel (one thread each when there are at
 * least as many arrays as threads): b [nbatch][m], x [nbatch][n], info
 * [nbatch] (may be NULL). opts->x0, when not NULL, is [nbatch][n] (one
 * start per array). Each array is sla_lsq on its own; the first error by
 * index is returned (its message prefixed by nothing more than sla_lsq's),
 * else SLA_NOT_CONVERGED when any array stopped early, else SLA_OK. */
SLA_API sla_status sla_lsq_batch(sla_ctx *ctx, const sla_matrix *A, const sla_lsq_options *opts,
                                 const double *b, double *x, sla_lsq_info *info);

/* sla_lsq_vjp over every value array, in parallel: b [nbatch][m], x and gx
 * [nbatch][n], gb [nbatch][m] (may be NULL), gA [nbatch][nnz] (may be NULL),
 * info [nbatch] (may be NULL). Statuses as sla_lsq_batch. */
SLA_API sla_status sla_lsq_batch_vjp(sla_ctx *ctx, const sla_matrix *A, const sla_lsq_options *opts,
                                     const double *b, const double *x, const double *gx, double *gb,
                                     double *gA, sla_lsq_info *info);

#ifdef __cplusplus
}
#endif
#endif
