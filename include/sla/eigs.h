/* sla/eigs.h — eigenvalues of nonsymmetric sparse matrices (ARPACK's
 * implicitly restarted Arnoldi) and of symmetric-definite pencils
 * K x = lambda M x, with gradients of the eigenvalues with respect to the
 * stored values.
 *
 * Gradients are, as everywhere in sla, arrays of nnz values in the
 * matrix's CSR order (every stored value an independent real variable).
 * Complex eigenvalues of a real matrix: the gradient of a real loss L of
 * (Re lambda, Im lambda) with respect to the real entry a_pq, i.e.
 * dL/da_pq = gr dRe(lambda)/da_pq + gi dIm(lambda)/da_pq (the convention of
 * PyTorch for a real input and a complex intermediate). */
#ifndef SLA_EIGS_H
#define SLA_EIGS_H

#include "eig.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which eigenvalues (ARPACK's names): largest / smallest magnitude,
 * largest / smallest real part, largest / smallest imaginary part (in
 * magnitude). With a shift sigma they apply, as in SciPy, to the
 * shift-inverted values nu = 1 / (lambda - sigma): LM gives the
 * eigenvalues nearest sigma. */
typedef enum sla_eigs_which {
    SLA_EIGS_LM = 0,
    SLA_EIGS_SM,
    SLA_EIGS_LR,
    SLA_EIGS_SR,
    SLA_EIGS_LI,
    SLA_EIGS_SI
} sla_eigs_which;

SLA_API const char *sla_eigs_which_name(sla_eigs_which w);

typedef struct sla_eigs_options {
    sla_int k;                 /* eigenvalues wanted, 1 <= k < n - 1; default 6 */
    sla_eigs_which which;      /* default SLA_EIGS_LM */
    bool shift_invert;         /* use sigma; default false */
    double sigma;              /* the real shift: Arnoldi on (A - sigma I)^-1 */
    double tol;                /* ARPACK's relative accuracy; default 0 = machine epsilon */
    sla_int ncv;               /* Arnoldi basis size, k + 2 <= ncv <= n; default 0 =
                                  min(n, max(2k + 1, 20)) */
    sla_int maxiter;           /* ARPACK restarts; default 0 = max(1000, 10 n) */
    sla_method factor_method;  /* shift-invert factorization of A - sigma I: lu (default),
                                  umfpack, klu or superlu */
    const double *v0;          /* start vector (n); default NULL = a seeded random vector */
    /* gradients (sla_eigs_vjp) */
    double max_condition;      /* refuse the VJP of an eigenvalue whose condition number
                                  ||x|| ||y|| / |y^H x| exceeds this (a multiple or nearly
                                  multiple eigenvalue); default 1e10 */
} sla_eigs_options;

SLA_API void sla_eigs_options_default(sla_eigs_options *opts);

/* Parse "key=value,key=value" into opts (starting from its current
 * contents). Keys: k (>= 1), which (LM, SM, LR, SR, LI, SI; any case),
 * shift_invert (true/false), sigma (finite; also sets shift_invert),
 * tol (>= 0), ncv (0 .. 46340), maxiter (>= 0), factor_method (lu,
 * umfpack, klu, superlu), max_condition (> 1). An unknown key or a value
 * out of range is SLA_ERR_ARGUMENT naming the key; opts is then unchanged. */
SLA_API sla_status sla_eigs_options_parse(sla_ctx *ctx, const char *str, sla_eigs_options *opts);

typedef struct sla_eigs_info {
    char method[40];           /* "arnoldi", "arnoldi shift-invert (lu)" */
    bool converged;            /* all k eigenvalues converged */
    sla_int nconv;             /* eigenvalues converged */
    sla_int iterations;        /* ARPACK restarts */
    sla_int nops;              /* operator applications (solves in shift-invert) */
    double max_residual;       /* max of the residuals below over the converged ones */
    double max_condition;      /* vjp: the largest eigenvalue condition number met */
    double seconds;
    char note[192];            /* "" or e.g. a conjugate pair cut at position k */
} sla_eigs_info;

/* k eigenvalues of the (general, real, square) value array ib of A by
 * ARPACK dnaupd/dneupd (regular mode on A, or mode 3 on (A - sigma I)^-1
 * through the library's LU when opts->shift_invert).
 * wr, wi (k each): real and imaginary parts, best first by `which`; a
 * complex conjugate pair occupies two adjacent slots, positive imaginary
 * part first. vr (n x k, leading dimension ldv >= n; may be NULL): the
 * eigenvectors in LAPACK dgeev's convention: a real eigenvalue j has
 * column j; a pair j, j+1 has x_j = vr[:, j] + i vr[:, j+1] and
 * x_{j+1} = conj(x_j). Gauge: unit 2-norm, and the component of largest
 * magnitude (the first of equal ones) real and positive, as dgeev makes
 * it real (sla_eigs_pairs_vjp differentiates in this gauge). When the k-th eigenvalue is complex
 * and its conjugate would be the (k+1)-th, it is returned alone: wr, wi
 * hold it, vr's last column holds only the real part of its eigenvector,
 * and info.note says so (ask for k + 1 to get the whole pair).
 * residuals (k, may be NULL): ||A x - lambda x|| / (|lambda| ||x||)
 * (divided by ||x|| only when lambda = 0).
 * Returns SLA_OK, SLA_NOT_CONVERGED (a warning: the first info.nconv are
 * the converged ones, the rest NaN) or an error: SLA_ERR_ARGUMENT
 * (options; k not in [1, n - 1), ncv not in [k + 2, n]), SLA_ERR_DIMENSION
 * (A not square, ldv < n), SLA_ERR_INDEX, SLA_ERR_VALUE, SLA_ERR_SINGULAR
 * (A - sigma I singular), SLA_ERR_UNAVAILABLE (no ARPACK; with a shift,
 * no sparse LU), SLA_ERR_NOMEM. ARPACK calls are serialized process-wide
 * (shared with sla_eigsh). */
SLA_API sla_status sla_eigs(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_eigs_options *opts,
                            double *wr, double *wi, double *vr, sla_int ldv, double *residuals,
                            sla_eigs_info *info);

/* VJP of the eigenvalues from sla_eigs: given the k eigenvalues (wr, wi)
 * and eigenvectors vr (as sla_eigs wrote them, ld ldv) and the cotangents
 * gwr = dL/d Re(lambda), gwi = dL/d Im(lambda) (k each; either may be
 * NULL = 0), writes gA (nnz, overwritten):
 *   d lambda = y^H dA x / (y^H x)  (y the left eigenvector),
 *   gA[p] = sum_j gwr_j Re(w_r x_c) + gwi_j Im(w_r x_c),  p = (r, c),
 * where w = conj(y) / conj(y^H x) solves A^T w = lambda w with w^T x = 1;
 * it comes from one sparse LU solve with the transposed bordered Jacobian
 * of sla_eigs_pairs_vjp (this is that function with gvr = NULL; a
 * conjugate pair is one solve), which is nonsingular exactly when lambda
 * is a simple eigenvalue; no shift is perturbed and no iteration is
 * needed. Eigenvalues with zero cotangents
 * are skipped. A multiple eigenvalue (singular bordered matrix) or a
 * nearly multiple one (||x|| ||w|| > opts->max_condition) is refused with
 * SLA_ERR_UNSUPPORTED naming it; so is a lone complex eigenvalue at
 * position k (its eigenvector's imaginary part is not in vr).
 * info (may be NULL): max_condition receives the largest ||x|| ||w||. */
SLA_API sla_status sla_eigs_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_eigs_options *opts,
                                sla_int k, const double *wr, const double *wi, const double *vr, sla_int ldv,
                                const double *gwr, const double *gwi, double *gA, sla_eigs_info *info);

/* VJP of the eigenpairs from sla_eigs: as sla_eigs_vjp, plus eigenvector
 * cotangents gvr (n x k, ld ldgv >= n, in vr's dgeev layout: for a pair
 * j, j + 1, gvr[:, j] = dL/d Re x_j and gvr[:, j+1] = dL/d Im x_j; for a
 * real eigenvalue gvr[:, j] = dL/d x_j; NULL = 0). The eigenvector is
 * differentiated in sla_eigs's gauge: ||x|| = 1 held, and the phase of its
 * largest-magnitude component x_m held (real x: its sign is constant).
 * With the left eigenvector, the first-order change solves
 *   (A - lambda I) dx - d lambda x = -dA x,  Re(x^H dx) = 0,  Im(dx_m) = 0,
 * whose real form (order n + 1, or 2n + 2 for a complex pair, bordered by
 * x and e_m) is nonsingular exactly for a simple eigenvalue; its transpose
 * is factored by sparse LU once per eigenvalue (a pair once), and
 *   gA[p] = -(z_r Re x_c + z'_r Im x_c),  p = (r, c),
 * with (z, z') the first 2n unknowns of the transposed solve whose
 * right-hand side holds the cotangents (see eigs_vjp.c). A loss that does
 * not depend on the gauge (|x_i|^2, |c^H x|^2, ...) gets the gradient of
 * any gauge. Refusals and info as sla_eigs_vjp; a cotangent on a lone
 * complex eigenvector at position k is refused too. */
SLA_API sla_status sla_eigs_pairs_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_eigs_options *opts,
                                      sla_int k, const double *wr, const double *wi, const double *vr, sla_int ldv,
                                      const double *gwr, const double *gwi, const double *gvr, sla_int ldgv,
                                      double *gA, sla_eigs_info *info);

/* ---- generalized symmetric-definite eigenproblems K x = lambda M x ---- */

/* k eigenpairs of the pencil (K_ibK, M_ibM), K symmetric and M symmetric
 * positive definite (same order n; the patterns may differ), by ARPACK's
 * Lanczos in mode 3: shift-invert on (K - sigma M)^-1 M with M-inner
 * products, K - sigma M factored by the library's direct solver (Cholesky,
 * then LDL^T, then LU), M checked positive definite by a Cholesky
 * factorization. Options as sla_eigsh_options: sigma (default 0 when
 * shift_invert is false, so the eigenvalues nearest 0: the smallest for
 * K positive definite), which: LM and SM the eigenvalues nearest sigma, LA
 * those nearest above it, SA those nearest below it; k, tol, ncv, maxiter,
 * factor_method, v0 as for sla_eigsh.
 * evals (k) ascending; evecs (n x k, ld ldv, may be NULL) M-orthonormal
 * (x_i^T M x_j = delta_ij); residuals (k, may be NULL)
 * ||K x - lambda M x||. info as sla_eigsh's.
 * Errors: SLA_ERR_ARGUMENT (options, NULL, K or M not symmetric),
 * SLA_ERR_DIMENSION (K or M not square, different orders), SLA_ERR_INDEX,
 * SLA_ERR_VALUE, SLA_ERR_NOT_SPD (M not positive definite),
 * SLA_ERR_SINGULAR (K - sigma M singular), SLA_ERR_UNAVAILABLE (no ARPACK or
 * no direct solver), SLA_ERR_NOMEM; SLA_NOT_CONVERGED as sla_eigsh. */
SLA_API sla_status sla_eigsh_generalized(sla_ctx *ctx, const sla_matrix *K, sla_int ibK, const sla_matrix *M,
                                         sla_int ibM, const sla_eigsh_options *opts, double *evals,
                                         double *evecs, sla_int ldv, double *residuals, sla_eigsh_info *info);

/* VJP of the eigenpairs of sla_eigsh_generalized (simple eigenvalues,
 * M-normalized eigenvectors x_i, each with its sign held): given gl =
 * dL/d evals (k, may be NULL) and gv = dL/d evecs (n x k, ld ldgv, may be
 * NULL), with u_i = sum_{j != i} x_j (x_j . g_i) / (l_i - l_j) over all
 * eigenpairs of the pencil,
 *   gK[p] = sum_i (gl_i x_i[r] + u_i[r]) x_i[c]                 (p = (r, c) in K's pattern)
 *   gM[q] = -sum_i (l_i (gl_i x_i[r] + u_i[r]) + (g_i . x_i) x_i[r] / 2) x_i[c]
 * (in a degenerate cluster u_i leaves the cluster out and (g_i . x_i) x_i
 * becomes sum_j (g_i . x_j) x_j over it)
 * (d lambda_i = x_i^T (dK - lambda_i dM) x_i; the eigenvector term from
 * first-order perturbation with x_i^T M x_i = 1 held). The part of u_i on
 * the eigenpairs not computed comes from one MINRES solve per vector on
 * P^T (K - l_i M) P, P = I - X X^T M (derivation in eigsh_gen_vjp.c),
 * with sla_eigsh_options_default's grad_rtol, grad_maxiter and
 * degenerate_tol. A degenerate cluster is handled as in sla_eigsh_vjp (a
 * loss not invariant within it: SLA_ERR_UNSUPPORTED). gK, gM (nnz of K,
 * of M; either may be NULL) are overwritten. Returns SLA_OK,
 * SLA_NOT_CONVERGED (a projected solve missed grad_rtol; gK, gM are still
 * written) or an error. */
SLA_API sla_status sla_eigsh_generalized_vjp(sla_ctx *ctx, const sla_matrix *K, sla_int ibK,
                                             const sla_matrix *M, sla_int ibM, sla_int k, const double *evals,
                                             const double *evecs, sla_int ldv, const double *gl,
                                             const double *gv, sla_int ldgv, double *gK, double *gM);

/* Every value array of K (nbatch B) with M's: M->nbatch 1 (one M for
 * every K_b) or B (M_b with K_b). evals [B][k], evecs [B][n * k] (ld n,
 * may be NULL), residuals [B][k] (may be NULL), info [B] (may be NULL);
 * each array as sla_eigsh_generalized, one after the other (ARPACK is
 * serialized). An error names the value array; SLA_NOT_CONVERGED when
 * some array fell short (see info). SLA_ERR_DIMENSION when M's nbatch is
 * neither 1 nor B. */
SLA_API sla_status sla_eigsh_generalized_batch(sla_ctx *ctx, const sla_matrix *K, const sla_matrix *M,
                                               const sla_eigsh_options *opts, double *evals, double *evecs,
                                               double *residuals, sla_eigsh_info *info);

/* Batched VJP of sla_eigsh_generalized_batch: evals, gl [B][k]; evecs, gv
 * [B][n * k] (ld n); gl or gv may be NULL; gK [B][nnz of K] and gM
 * [M->nbatch][nnz of M] (either may be NULL) are overwritten; with one M
 * (M->nbatch 1) gM is the sum over the batch. Per array as
 * sla_eigsh_generalized_vjp. */
SLA_API sla_status sla_eigsh_generalized_batch_vjp(sla_ctx *ctx, const sla_matrix *K, const sla_matrix *M,
                                                   sla_int k, const double *evals, const double *evecs,
                                                   const double *gl, const double *gv, double *gK, double *gM);

/* sizeof(sla_eigs_options) and sizeof(sla_eigs_info), for bindings. */
SLA_API size_t sla_eigs_options_size(void);
SLA_API size_t sla_eigs_info_size(void);

#ifdef __cplusplus
}
#endif
#endif
