/* sla/complex.h — complex-valued matrices: products, solves, log-determinant
 * and Hermitian eigenpairs, with their VJPs.
 *
 * A complex matrix is an sla_matrix of dtype SLA_C128 (or SLA_C64, stored
 * in single precision and computed in complex128): the same CSR pattern,
 * batches and lists as real matrices. Vectors are arrays of sla_complex
 * (real part first, then imaginary), the layout of C's double _Complex,
 * NumPy's and PyTorch's complex128.
 *
 * Gradient convention (PyTorch's). For a real loss L of a complex input
 * z = u + i v, the gradient sla returns is
 *
 *     grad_z = dL/du + i dL/dv      (= 2 dL/d conj(z), conjugate Wirtinger),
 *
 * the steepest-ascent direction, which is what torch.autograd stores in
 * z.grad. VJPs take the output's gradient in the same form and return the
 * inputs'. For a linear map y = A x this gives grad_x = A^H grad_y, and for
 * a pattern entry k = (i, j) of A, grad_A[k] = grad_y[i] conj(x[j]); for
 * x = A^-1 b, grad_b = A^-H grad_x and grad_A[k] = -grad_b[i] conj(x[j]).
 * A real matrix's gradient is the real part of its complex counterpart.
 */
#ifndef SLA_COMPLEX_H
#define SLA_COMPLEX_H

#include "matrix.h"
#include "solver.h"
#include "eig.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which operator a product or a solve applies: A, its transpose A^T, or its
 * conjugate transpose A^H. */
typedef enum sla_op { SLA_OP_N = 0, SLA_OP_T = 1, SLA_OP_H = 2 } sla_op;

/* ---- products ------------------------------------------------------------ */

/* y = op(A_ib) x for a complex (or real) A. x has ncols entries (nrows for
 * op T, H), y nrows (ncols). x and y may not alias. */
SLA_API sla_status sla_zmatvec(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla_op op,
                               const sla_complex *x, sla_complex *y);

/* VJP of y = A_ib x: gx = A^H gy (ncols entries), gA[k] = gy[row_k]
 * conj(x[col_k]) (nnz entries). gx or gA may be NULL (not wanted). */
SLA_API sla_status sla_zmatvec_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                                   const sla_complex *x, const sla_complex *gy,
                                   sla_complex *gx, sla_complex *gA);

/* ---- solves -------------------------------------------------------------
 * sla_solver_create accepts a complex A: the methods whose registry entry
 * carries SLA_CAP_COMPLEX (`sla methods`) run in complex arithmetic: cg
 * (Hermitian positive definite), minres (Hermitian), cocg (complex
 * symmetric, A = A^T, e.g. Helmholtz), bicgstab and gmres (general), with
 * jacobi, ic0 (Hermitian) or ilu0; cholesky (CHOLMOD, Hermitian positive
 * definite), lu/umfpack, klu and superlu; auto chooses among them from the
 * structure (Hermitian, complex symmetric, general) as for real matrices.
 * A method that needs a structure A lacks (cg on a non-Hermitian A) is
 * refused at set-up with a message naming the method that fits. Krylov
 * methods equilibrate a badly scaled A as for real matrices
 * (options.equilibrate; D A D when A is Hermitian or complex symmetric;
 * docs/complex.md). The real solve calls (sla_solver_solve, ...) refuse a
 * complex solver and the complex ones a real solver (SLA_ERR_ARGUMENT). */

/* x = op(A_ib)^-1 b (b, x: n entries each, may not alias). For op T and H
 * a direct method reuses its factor; a Krylov method solves with A^T or
 * A^H. info may be NULL. Returns SLA_OK, SLA_NOT_CONVERGED (x holds the
 * last iterate) or an error. */
SLA_API sla_status sla_zsolver_solve(sla_ctx *ctx, sla_solver *S, sla_int ib, sla_op op,
                                     const sla_complex *b, sla_complex *x, sla_solve_info *info);

/* VJP of x = A_ib^-1 b given x and gx = grad_x: gb = A^-H gx (one adjoint
 * solve reusing the factor or preconditioner) and gA[k] = -gb[row_k]
 * conj(x[col_k]) on the pattern. gb may not be NULL; gA may be NULL.
 * info (may be NULL) reports the adjoint solve. */
SLA_API sla_status sla_zsolver_solve_vjp(sla_ctx *ctx, sla_solver *S, sla_int ib,
                                         const sla_complex *x, const sla_complex *gx,
                                         sla_complex *gb, sla_complex *gA, sla_solve_info *info);

/* A list of independent complex solves x_i = A_i^-1 b_i, one per solver
 * (value array 0 of each; n_i entries each), in parallel as
 * sla_solver_solve_list (items one after another when a solver appears
 * twice). info (may be NULL): count entries. A real solver in the list is
 * SLA_ERR_ARGUMENT. Returns the first error (lowest index), else
 * SLA_NOT_CONVERGED when any item did not converge, else SLA_OK. */
SLA_API sla_status sla_zsolver_solve_list(sla_ctx *ctx, sla_int count, sla_solver *const *solvers,
                                          const sla_complex *const *b, sla_complex *const *x,
                                          sla_solve_info *info);

/* The VJPs of such a list: for each item, gb_i = A_i^-H gx_i and gA_i[k] =
 * -gb_i[row_k] conj(x_i[col_k]) as sla_zsolver_solve_vjp. gb and gA may be
 * NULL (not wanted), as may their entries. */
SLA_API sla_status sla_zsolver_solve_list_vjp(sla_ctx *ctx, sla_int count, sla_solver *const *solvers,
                                              const sla_complex *const *x, const sla_complex *const *gx,
                                              sla_complex *const *gb, sla_complex *const *gA,
                                              sla_solve_info *info);

/* One-shot: create a solver with opts (NULL: defaults), solve A_ib x = b,
 * destroy it. */
SLA_API sla_status sla_zsolve(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                              const sla_solver_options *opts, const sla_complex *b,
                              sla_complex *x, sla_solve_info *info);

/* ---- log-determinant ------------------------------------------------------ */

/* det A_ib = phase * exp(logabs): |phase| = 1 (0 when A is singular, with
 * logabs = -inf), from an LU (or, Hermitian positive definite, Cholesky)
 * factor of the direct solver S (a Krylov solver: SLA_ERR_ARGUMENT). */
SLA_API sla_status sla_zsolver_logdet(sla_ctx *ctx, sla_solver *S, sla_int ib,
                                      sla_complex *phase, double *logabs);

/* VJP of (logabs, theta), theta = arg det A (phase = e^{i theta}), given
 * their real gradients g_logabs and g_theta: gA[k] = (g_logabs + i g_theta)
 * conj((A^-1)[col_k, row_k]) on the pattern (nnz entries), by selected
 * inversion from the factor (UMFPACK's LU; a CHOLMOD, KLU or SuperLU
 * solver refactors with UMFPACK for it). A caller holding the gradient g_phase of
 * phase itself (PyTorch's slogdet sign) passes g_theta = Im(conj(phase)
 * g_phase): dL = Re(conj(g_phase) d phase) and d phase = i phase d theta. */
SLA_API sla_status sla_zsolver_logdet_vjp(sla_ctx *ctx, sla_solver *S, sla_int ib,
                                          double g_logabs, double g_theta, sla_complex *gA);

/* One-shot log|det A_ib| and phase with a factorization auto chooses. */
SLA_API sla_status sla_zlogdet(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                               sla_complex *phase, double *logabs);

/* One-shot VJP: factor A_ib as sla_zlogdet does, return phase and logabs
 * (each may be NULL) and gA (nnz entries) = (g_logabs + i g_theta)
 * conj((A^-1)[col_k, row_k]), as sla_zsolver_logdet_vjp. The gradient is
 * a selected inversion of UMFPACK's LU factor (about the factorization's
 * cost; a Cholesky or KLU/SuperLU factor is redone by UMFPACK for it);
 * only a build without UMFPACK takes n solves with the factor. A singular A:
 * SLA_ERR_SINGULAR (phase 0, logabs -inf). */
SLA_API sla_status sla_zlogdet_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, double g_logabs,
                                   double g_theta, sla_complex *phase, double *logabs,
                                   sla_complex *gA);

/* ---- Hermitian eigenpairs ------------------------------------------------- */

/* The k eigenpairs (1 <= k < n; the argument k, opts->k is not read) of
 * the Hermitian A_ib that opts->which selects: largest or smallest
 * algebraic (LA, SA: ARPACK's LR, SR), largest or smallest magnitude (LM,
 * SM); with opts->shift_invert, those nearest sigma (LM, SM), nearest
 * above (LA) or below (SA) it. ARPACK's complex Arnoldi (znaupd/zneupd)
 * in regular mode, then a Rayleigh-Ritz step on the converged vectors;
 * SM and sigma in shift-invert mode on (A - sigma I)^-1 (sigma = 0 for SM)
 * through the complex LU backend (or opts->factor_method's), sigma moved
 * by 1e-8 ||A|| (then 1e-6, 1e-4) when A - sigma I is singular. A dense
 * LAPACK zheevd serves n <= 200, a basis that would span the whole space
 * (ncv >= n), and shift-invert without a complex factorization up to
 * n = 1000; past that SM runs regular mode with a larger basis (the note
 * says so) and sigma is SLA_ERR_UNAVAILABLE. Also read: tol, ncv, maxiter,
 * v0 (a real start vector); memory_limit is not applied.
 * w: k real eigenvalues in ascending order; V: n x k column-major complex
 * unit eigenvectors (orthonormal), each scaled so that its
 * largest-magnitude entry (the first of equals) is real and positive.
 * info (may be NULL): method ("dense zheevd", "arpack", "arpack
 * shift-invert (NAME)"), nconv, iterations, nops, max_residual (max
 * ||A v - l v||), note. A non-Hermitian A (also a real nonsymmetric one)
 * is refused with SLA_ERR_ARGUMENT and the measured max |a_ij -
 * conj(a_ji)| / max |a| (checked to 1e-12; the message says when A is
 * complex symmetric instead). SLA_NOT_CONVERGED (a warning): only
 * info.nconv pairs converged; the rest of w and V is NaN. opts NULL:
 * defaults. */
SLA_API sla_status sla_zeigsh(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                              const sla_eigsh_options *opts, sla_int k, double *w,
                              sla_complex *V, sla_eigsh_info *info);

/* VJP of (w, V) = zeigsh(A): gw (k reals) and gV (n x k) may each be NULL
 * (zero). gA (nnz, overwritten): grad_A[p] = sum_j (gw_j v_j[r] + u_j[r])
 * conj(v_j[c]) at p = (r, c), with u_j = sum_{m != j} v_m (v_m^H gV_j) /
 * (l_j - l_m) over all eigenpairs: the computed ones directly, the rest by
 * one projected MINRES solve per vector (rtol 1e-12). Every stored value
 * is an independent variable: along a Hermitian change of the pair a_ij =
 * conj(a_ji) = z the gradient is grad_A[ij] + conj(grad_A[ji]). A loss
 * that depends on the arbitrary phase of an eigenvector (|Im(v_j^H gV_j)|
 * > 1e-6 ||gV_j||) is refused (SLA_ERR_UNSUPPORTED), as is one that is not
 * invariant within a degenerate cluster (|l_i - l_j| <= 1e-9 max |l|:
 * gw_i != gw_j, or v_j^H gV_i != conj(v_i^H gV_j)). SLA_NOT_CONVERGED
 * when a projected solve missed its tolerance (gA is still written). */
SLA_API sla_status sla_zeigsh_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla_int k,
                                  const double *w, const sla_complex *V, const double *gw,
                                  const sla_complex *gV, sla_complex *gA);

#ifdef __cplusplus
}
#endif
#endif
