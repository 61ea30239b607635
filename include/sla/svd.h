/* sla/svd.h — truncated singular value decomposition of a sparse m x n
 * matrix (k singular triplets by ARPACK), its VJP, and the 2-norm
 * condition number.
 *
 * Gradients with respect to the matrix are, as everywhere in sla, arrays
 * of nnz values in the matrix's CSR order (one per stored entry).
 * Singular vectors are column-major blocks: U (m x k, leading dimension m)
 * and V (n x k, leading dimension n), so that A ~ U diag(s) V^T.
 */
#ifndef SLA_SVD_H
#define SLA_SVD_H

#include "solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which singular values: the k largest (LM) or the k smallest (SM). */
typedef enum sla_svds_which { SLA_SVDS_LM = 0, SLA_SVDS_SM } sla_svds_which;

SLA_API const char *sla_svds_which_name(sla_svds_which w);

typedef struct sla_svds_options {
    sla_int k;                 /* singular triplets wanted, 1 <= k < min(m, n); default 6 */
    sla_svds_which which;      /* default SLA_SVDS_LM */
    double tol;                /* ARPACK's relative accuracy of the Ritz values (of the
                                  normal operator); default 0 = machine epsilon */
    sla_int maxiter;           /* ARPACK restarts; default 0 = max(1000, 10 min(m, n)) */
    sla_int ncv;               /* Lanczos basis size; default 0 = min(q, max(2k + 1, 20)),
                                  q = min(m, n) */
    const double *v0;          /* start vector of the Lanczos run (length min(m, n): a
                                  right vector when m >= n, a left one otherwise);
                                  default NULL = a seeded pseudo-random vector */
    double memory_limit;       /* bytes the SM factorization may use (the solver's
                                  memory_limit); default 0 = the solver's default */
    /* gradients (sla_svds_vjp) */
    double degenerate_tol;     /* |s_i - s_j| <= degenerate_tol * max s makes i, j a
                                  degenerate pair; default 1e-9 */
    double grad_rtol;          /* MINRES tolerance of the projected solves; default 1e-12 */
    sla_int grad_maxiter;      /* default 0 = max(1000, 10 (m + n)) */
    sla_transpose_mode transpose; /* products with A^T (sla/matrix.h): auto (default),
                                  explicit (A^T built once per call, about the matrix's
                                  memory again), scatter */
} sla_svds_options;

SLA_API void sla_svds_options_default(sla_svds_options *opts);

/* Parse "key=value,key=value" into opts (starting from its current
 * contents; "" leaves it as it is). Keys: k (>= 1), which (LM, SM; any
 * case), tol (>= 0), maxiter (>= 0), ncv (0 .. 46340), memory_limit
 * (bytes, >= 0), degenerate_tol (>= 0), grad_rtol (> 0), grad_maxiter
 * (>= 0), transpose (auto, explicit, scatter). v0 is a pointer and has no key. An unknown key or a value out of
 * range is SLA_ERR_ARGUMENT naming the key (and the nearest valid one);
 * opts is then unchanged. */
SLA_API sla_status sla_svds_options_parse(sla_ctx *ctx, const char *str, sla_svds_options *opts);

typedef struct sla_svds_info {
    char method[48];           /* "arpack on A^T A", "arpack shift-invert (ldlt) on ..." */
    char reason[32];           /* "converged", "maxiter", "rank deficient", ... */
    bool converged;            /* all k triplets converged */
    sla_int nconv;             /* triplets that converged */
    sla_int iterations;        /* ARPACK restarts (MINRES iterations, the most, for vjp) */
    sla_int nops;              /* operator applications (products with A^T A or solves) */
    double max_residual_v;     /* max_i ||A v_i - s_i u_i||  (unit u_i, v_i) */
    double max_residual_u;     /* max_i ||A^T u_i - s_i v_i|| */
    double factor_seconds;     /* SM: the factorization of the augmented matrix */
    double seconds;            /* the whole call */
    char note[192];            /* dispatch decisions and fallbacks, "" if none */
} sla_svds_info;

/* The k largest (LM) or smallest (SM) singular triplets of the m x n value
 * array ib of A, by ARPACK's implicitly restarted Lanczos (dsaupd/dseupd)
 * on the normal operator B^T B, where B = A when m >= n and B = A^T when
 * m < n (B is p x q with p >= q, so the operator is the smaller one).
 *  - LM: regular mode on B^T B (products with A and A^T only). The normal
 *    equations square the condition number, which only harms the small
 *    singular values: the largest ones are accurate to about
 *    eps * s_max^2 / s_i.
 *  - SM: shift-invert around 0, (B^T B)^-1 y applied by solving the
 *    augmented system [alpha I, B; B^T, 0] [r; x] = [0; -y] (then
 *    B^T B x = alpha y) with the library's direct solver (method auto:
 *    symmetric indefinite, LDL^T, else LU), never forming B^T B;
 *    alpha = min_j ||B e_j|| / sqrt(2), an upper bound of s_min / sqrt(2),
 *    which keeps the augmented matrix about as well conditioned as A.
 *    When that matrix is singular (A rank deficient: a zero column of B or
 *    a zero pivot) or cannot be factored (memory_limit, no SuiteSparse),
 *    plain Lanczos for the smallest eigenvalues of B^T B takes over (the
 *    note says so): singular values at the level of eps * s_max are then
 *    reported as 0 and their other-side vectors are B x normalized, which
 *    is only as good as its residual.
 * The other side's vectors are recovered as B x_i / s_i and
 * re-orthonormalized (Gram-Schmidt, twice).
 * s (k) receives the singular values in DESCENDING order for LM
 * (s[0] = s_max, as LAPACK) and ASCENDING order for SM (s[0] = s_min): the
 * most wanted one first in both cases (SciPy's svds returns ascending
 * order; the Python binding reverses to match it). U (m x k, ld m) and V
 * (n x k, ld n) may be NULL. Singular vectors are defined up to a common
 * sign (u_i, v_i) -> (-u_i, -v_i); sla does not fix it.
 * info (may be NULL) reports restarts, the largest residuals
 * ||A v - s u|| and ||A^T u - s v||, the reason and the path taken.
 * Returns SLA_OK, or SLA_NOT_CONVERGED (a warning) when fewer than k
 * triplets converged: the first info.nconv are valid, the rest NaN.
 * Errors: SLA_ERR_ARGUMENT (NULL A or s, options, k not in [1, min(m, n))
 * as in SciPy), SLA_ERR_INDEX (ib), SLA_ERR_VALUE (NaN/Inf in A or v0),
 * SLA_ERR_TOO_LARGE (beyond ARPACK's 32-bit indices), SLA_ERR_UNAVAILABLE
 * (no ARPACK in this build), SLA_ERR_NOMEM. */
SLA_API sla_status sla_svds(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_svds_options *opts,
                            double *s, double *U, double *V, sla_svds_info *info);

/* VJP of (s, U, V) = svds(A_ib): given the k computed triplets (as
 * sla_svds returns them, any order) and gs = dL/ds (k, may be NULL),
 * gU = dL/dU (m x k, ld m, may be NULL), gV = dL/dV (n x k, ld n, may be
 * NULL), writes gA (nnz, overwritten) on the stored pattern of A:
 *   singular values: ds_i = u_i^T dA v_i, so gA[p] += gs_i u_i[r] v_i[c];
 *   singular vectors: by first-order perturbation of the eigenvector
 *   w_i = [u_i; v_i] / sqrt(2) of H = [0, A; A^T, 0] (eigenvalue s_i).
 *   The known eigenvectors of H are [u_j; +-v_j] / sqrt(2) with
 *   eigenvalues +-s_j; their terms are explicit,
 *     (u_j.gu_i + v_j.gv_i) / (s_i - s_j)  and  (u_j.gu_i - v_j.gv_i) / (s_i + s_j)
 *   (the F_ij = 1/(s_j^2 - s_i^2) terms of the full-SVD formula in this
 *   form), and the component in the complement of span(U) x span(V) is
 *   one projected MINRES solve per triplet with Q (H - s_i I) Q,
 *   Q = I - diag(U U^T, V V^T) (the (I - U U^T) gU / s terms of the
 *   thin SVD formula, which are exact only when k = min(m, n)).
 * Gauge: a loss of the vectors must be invariant under
 * (u_i, v_i) -> (-u_i, -v_i) (e.g. sum (u_i^T a)^2), as the vectors are
 * defined only up to that sign. Degenerate pairs (|s_i - s_j| <=
 * degenerate_tol s_max) with a loss that is not invariant within the pair
 * (gs_i != gs_j, or vector cotangents not rotation-invariant), and s_i <=
 * degenerate_tol s_max with vector cotangents (u_i, v_i not unique), are
 * refused with SLA_ERR_UNSUPPORTED naming the pair. opts may be NULL
 * (degenerate_tol, grad_rtol, grad_maxiter are read). info (may be NULL):
 * iterations = the most MINRES iterations, max_residual_v = the largest
 * relative MINRES residual.
 * Returns SLA_OK, SLA_NOT_CONVERGED (a projected solve missed grad_rtol,
 * e.g. a singular value left out equals a computed one; gA is still
 * written), or an error: SLA_ERR_ARGUMENT, SLA_ERR_INDEX, SLA_ERR_VALUE,
 * SLA_ERR_UNSUPPORTED, SLA_ERR_NOMEM. */
SLA_API sla_status sla_svds_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_svds_options *opts,
                                sla_int k, const double *s, const double *U, const double *V, const double *gs,
                                const double *gU, const double *gV, double *gA, sla_svds_info *info);

/* sla_svds over every value array of A (one pattern, nbatch arrays), in
 * one call: s [nbatch][k], U [nbatch][m * k] (ld m, may be NULL), V
 * [nbatch][n * k] (ld n, may be NULL), info [nbatch] (may be NULL);
 * k = opts->k. opts->v0, when not NULL, is [nbatch][min(m, n)] (one start
 * vector per array). The arrays are independent items (parallel, one
 * thread each, when there are at least as many as threads): SM's
 * factorizations of the augmented matrix run in parallel, the Lanczos runs
 * themselves one at a time (ARPACK's lock), so LM runs the arrays one
 * after another with all threads each. Each array is sla_svds on its own
 * (an array that fails does not stop the others); the first error by
 * index is returned ("item i: " + sla_svds's message), else
 * SLA_NOT_CONVERGED when any array left triplets unconverged (see its
 * info), else SLA_OK. */
SLA_API sla_status sla_svds_batch(sla_ctx *ctx, const sla_matrix *A, const sla_svds_options *opts, double *s,
                                  double *U, double *V, sla_svds_info *info);

/* sla_svds_vjp over every value array, in parallel (one thread each when
 * there are at least as many arrays as threads): s, gs [nbatch][k]; U, gU
 * [nbatch][m * k]; V, gV [nbatch][n * k] (gs, gU, gV may be NULL); gA
 * [nbatch][nnz] (overwritten); info [nbatch] (may be NULL). Statuses as
 * sla_svds_batch. */
SLA_API sla_status sla_svds_batch_vjp(sla_ctx *ctx, const sla_matrix *A, const sla_svds_options *opts, sla_int k,
                                      const double *s, const double *U, const double *V, const double *gs,
                                      const double *gU, const double *gV, double *gA, sla_svds_info *info);

/* The 2-norm condition number s_max / s_min of the m x n value array ib
 * of A (any shape: s_min is the min(m, n)-th singular value), s_max by
 * svds LM and s_min by svds SM (shift-invert on the augmented matrix, not
 * from the top singular values), k = 1 each. opts (may be NULL) gives tol,
 * maxiter, ncv and memory_limit; k and which are ignored. smax and smin
 * may be NULL. A rank-deficient A (the augmented matrix singular, or s_min
 * <= eps s_max): *cond = +inf, *smin = 0, and SLA_ERR_SINGULAR with a
 * message saying so (the same convention as sla_logdet's -inf). Other
 * errors as sla_svds (k is not checked), and SLA_ERR_ARGUMENT for
 * min(m, n) < 2 (ARPACK needs k < min(m, n)). info (may be NULL) is the
 * SM run's. */
SLA_API sla_status sla_cond2(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_svds_options *opts,
                             double *cond, double *smax, double *smin, sla_svds_info *info);

#ifdef __cplusplus
}
#endif
#endif
