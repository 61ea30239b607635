/* The VJP of sla_eigsh_generalized's eigenpairs (K x = lambda M x, M-
 * orthonormal eigenvectors): eigenvalues by d lambda = x^T (dK - lambda dM)
 * x, eigenvectors by first-order perturbation with one M-projected MINRES
 * solve per vector; needs only K, M and the forward eigenpairs, not ARPACK.
 *
 * Derivation. For a simple eigenvalue lambda_i with x_i^T M x_i = 1
 * (its sign locally constant), differentiating K x_i = lambda_i M x_i and
 * the normalization gives
 *   (K - lambda_i M) dx_i = -(dK - lambda_i dM) x_i + d lambda_i M x_i,
 *   x_i^T M dx_i = -x_i^T dM x_i / 2.
 * Expanding dx_i in the M-orthonormal eigenbasis (x_j^T M dx_i = c_j, and
 * x_j^T (K - lambda_i M) = (lambda_j - lambda_i) x_j^T M):
 *   c_j = x_j^T (dK - lambda_i dM) x_i / (lambda_i - lambda_j)  (j != i),
 *   c_i = -x_i^T dM x_i / 2
 * (in a degenerate cluster, j != i in it: only the part the loss sees,
 * c_j = -x_j^T dM x_i / 2 from x_j^T M x_i = 0, the rest being a rotation
 * within the cluster that an invariant loss ignores).
 * For L with cotangent g_i on x_i, g_i^T dx_i = u_i^T (dK - lambda_i dM) x_i
 * - (g_i . x_i) x_i^T dM x_i / 2 with u_i = sum_{j != i} x_j (x_j . g_i) /
 * (lambda_i - lambda_j), so on the patterns (p = (r, c))
 *   gK[p] += (gl_i x_i[r] + u_i[r]) x_i[c],
 *   gM[p] -= (lambda_i (gl_i x_i[r] + u_i[r]) + h_i[r] / 2) x_i[c],
 * h_i = sum_j x_j (x_j . g_i) over j in lambda_i's cluster (j = i alone
 * when lambda_i is simple; u_i then leaves the cluster out).
 * u_i over the computed pairs is the sum itself; over the others (P = I -
 * X X^T M, the M-orthogonal projector onto their span, X the computed
 * vectors) it is the w in range(P) with (K - lambda_i M) w = -P^T g_i
 * (sum_j M x_j x_j^T = I), found as w = P z from the symmetric singular but
 * consistent system P^T (K - lambda_i M) P z = -P^T g_i by MINRES. Valid
 * for any (also unsymmetric) dK, dM, as the left eigenvectors of the
 * symmetric pencil are the right ones. */
#include "../solvers/krylov.h"
#include "eigs_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* P^T (K - lambda M) P x with P = I - X X^T M, MX = M X precomputed. */
typedef struct gproj_op {
    const sla_matrix *K, *M;
    const double *X, *MX;
    sla_int ldv, k;
    double lambda;
    double *t, *s; /* n each */
} gproj_op;

/* x <- P x = x - X (X^T (M x)); s: n of scratch. */
static void proj_p(const gproj_op *G, double *x, int nt)
{
    const sla_int n = G->K->nrows;
    sla__spmv(G->M, 0, x, G->s, nt);
    for (sla_int j = 0; j < G->k; j++) {
        const double *xj = G->X + (size_t)j * (size_t)G->ldv;
        sla__axpy(n, -sla__dot(n, xj, G->s, nt), xj, x, nt);
    }
}

/* y <- P^T y = y - M X (X^T y). */
static void proj_pt(const gproj_op *G, double *y, int nt)
{
    const sla_int n = G->K->nrows;
    for (sla_int j = 0; j < G->k; j++) {
        const double *xj = G->X + (size_t)j * (size_t)G->ldv;
        sla__axpy(n, -sla__dot(n, xj, y, nt), G->MX + (size_t)j * (size_t)n, y, nt);
    }
}

static void gproj_apply(void *data, const double *x, double *y, int nt)
{
    gproj_op *G = data;
    const sla_int n = G->K->nrows;
    sla__copy(n, x, G->t);
    proj_p(G, G->t, nt);
    sla__spmv(G->K, 0, G->t, y, nt);
    sla__spmv(G->M, 0, G->t, G->s, nt);
    sla__axpy(n, -G->lambda, G->s, y, nt);
    proj_pt(G, y, nt);
}

/* gX[p] += cr[r] x[c] on X's pattern. */
static void rank1_on_pattern(const sla_matrix *X, const double *cr, const double *x, double *gX)
{
    for (sla_int r = 0; r < X->nrows; r++) {
        if (cr[r] == 0.0) continue;
        for (sla_int p = X->rowptr[r]; p < X->rowptr[r + 1]; p++) gX[p] += cr[r] * x[X->colind[p]];
    }
}

sla_status sla_eigsh_generalized_vjp(sla_ctx *ctx, const sla_matrix *K, sla_int ibK, const sla_matrix *M,
                                     sla_int ibM, sla_int k, const double *evals, const double *evecs,
                                     sla_int ldv, const double *gl, const double *gv, sla_int ldgv, double *gK,
                                     double *gM)
{
    if (sla__require_real(ctx, K, "sla_eigsh_generalized_vjp")) return SLA_ERR_UNSUPPORTED;
    if (sla__require_real(ctx, M, "sla_eigsh_generalized_vjp")) return SLA_ERR_UNSUPPORTED;
    const char *who = "eigsh generalized vjp";
    sla_matrix VK, VM;
    sla_status st = sla__eig_check_pencil(ctx, who, K, ibK, M, ibM, &VK, &VM);
    if (st) return st;
    const sla_int n = K->nrows;
    if (k < 1 || k > n) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: k = %lld out of [1, n]", who, (long long)k);
    if (!evals || !evecs) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: NULL evals or evecs", who);
    if (ldv < n || (gv && ldgv < n))
        return sla__error(ctx, SLA_ERR_DIMENSION, "%s: leading dimensions %lld, %lld < n = %lld", who,
                          (long long)ldv, (long long)ldgv, (long long)n);
    double scale = 0.0;
    for (sla_int i = 0; i < k; i++) {
        if (!isfinite(evals[i]) || !sla__all_finite(n, evecs + (size_t)i * (size_t)ldv))
            return sla__error(ctx, SLA_ERR_VALUE, "%s: eigenpair %lld is not finite", who, (long long)i);
        scale = fmax(scale, fabs(evals[i]));
    }
    if (gl && !sla__all_finite(k, gl)) return sla__error(ctx, SLA_ERR_VALUE, "%s: gl has NaN/Inf", who);
    if (gv)
        for (sla_int i = 0; i < k; i++)
            if (!sla__all_finite(n, gv + (size_t)i * (size_t)ldgv))
                return sla__error(ctx, SLA_ERR_VALUE, "%s: gv has NaN/Inf", who);
    sla_eigsh_options o;
    sla_eigsh_options_default(&o);
    const int nt = sla__threads(ctx);
    const double dtol = o.degenerate_tol * fmax(scale, 1e-300);
    /* degenerate clusters: the loss must be invariant within them (under
     * M-orthogonal rotations of their vectors) */
    for (sla_int i = 0; i < k; i++)
        for (sla_int j = i + 1; j < k; j++) {
            if (fabs(evals[i] - evals[j]) > dtol) continue;
            if (gl && fabs(gl[i] - gl[j]) > 1e-8 * fmax(fabs(gl[i]), fabs(gl[j])) + 1e-300)
                return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                                  "%s: eigenvalues %lld and %lld are degenerate (%.17g, %.17g) but dL/dl differs "
                                  "(%g vs %g): the loss is not invariant within the cluster, so its gradient is "
                                  "not defined",
                                  who, (long long)i, (long long)j, evals[i], evals[j], gl[i], gl[j]);
            if (gv) {
                const double *xi = evecs + (size_t)i * (size_t)ldv, *xj = evecs + (size_t)j * (size_t)ldv;
                const double *gi = gv + (size_t)i * (size_t)ldgv, *gj = gv + (size_t)j * (size_t)ldgv;
                double asym = sla__dot(n, xj, gi, nt) - sla__dot(n, xi, gj, nt);
                double mag = sla__nrm2(n, gi, nt) * sla__nrm2(n, xj, nt) + sla__nrm2(n, gj, nt) * sla__nrm2(n, xi, nt);
                if (fabs(asym) > 1e-8 * mag)
                    return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                                      "%s: eigenvalues %lld and %lld are degenerate (%.17g, %.17g) and the loss is "
                                      "not invariant under rotations of their eigenvectors (x_%lld . g_%lld - "
                                      "x_%lld . g_%lld = %.3g): the gradient is not defined",
                                      who, (long long)i, (long long)j, evals[i], evals[j], (long long)j,
                                      (long long)i, (long long)i, (long long)j, asym);
            }
        }
    if (gK) memset(gK, 0, (size_t)K->nnz * sizeof *gK);
    if (gM) memset(gM, 0, (size_t)M->nnz * sizeof *gM);
    if (!gl && !gv) return sla__ok(ctx, SLA_OK);
    sla_allocator a = sla__ctx_alloc(ctx);
    double *MX = NULL, *wk = sla__ctx_malloc(ctx, (size_t)n, 7 * sizeof *wk, "eigsh generalized vjp work space");
    if (wk && gv) MX = sla__ctx_malloc(ctx, (size_t)n * (size_t)k, sizeof *MX, "eigsh generalized vjp M X");
    if (!wk || (gv && !MX)) {
        sla__free(&a, wk);
        return SLA_ERR_NOMEM;
    }
    double *u = wk, *b = wk + n, *w = wk + 2 * n, *t = wk + 3 * n, *s = wk + 4 * n, *cr = wk + 5 * n, *hc = wk + 6 * n;
    if (MX)
        for (sla_int j = 0; j < k; j++) sla__spmv(&VM, 0, evecs + (size_t)j * (size_t)ldv, MX + (size_t)j * (size_t)n, nt);
    sla__vjp_solves T = {.iterations = 0, .worst = 0.0, .converged = true};
    for (sla_int i = 0; i < k; i++) {
        const double *xi = evecs + (size_t)i * (size_t)ldv;
        const double *gi = gv ? gv + (size_t)i * (size_t)ldgv : NULL;
        const double li = evals[i], gli = gl ? gl[i] : 0.0;
        sla__zero(n, u);
        sla__zero(n, hc);
        bool any = gli != 0.0;
        if (gi && sla__nrm2(n, gi, nt) > 0.0) {
            any = true;
            /* the computed pairs: sum_j x_j (x_j . g_i) / (l_i - l_j); in
             * l_i's cluster (i too) the normalization's hc = sum_j x_j (x_j . g_i) */
            for (sla_int j = 0; j < k; j++) {
                const double *xj = evecs + (size_t)j * (size_t)ldv;
                if (fabs(li - evals[j]) <= dtol) sla__axpy(n, sla__dot(n, xj, gi, nt), xj, hc, nt);
                else sla__axpy(n, sla__dot(n, xj, gi, nt) / (li - evals[j]), xj, u, nt);
            }
            /* the others: P^T (K - l_i M) P z = -P^T g_i, w = P z */
            gproj_op G = {.K = &VK, .M = &VM, .X = evecs, .MX = MX, .ldv = ldv, .k = k, .lambda = li, .t = t, .s = s};
            for (sla_int r = 0; r < n; r++) b[r] = -gi[r];
            proj_pt(&G, b, nt);
            if (sla__nrm2(n, b, nt) > 1e-14 * sla__nrm2(n, gi, nt)) {
                sla__op op = {.n = n, .nt = nt, .data = &G, .apply = gproj_apply};
                if ((st = sla__vjp_minres(ctx, &op, b, w, o.grad_rtol, o.grad_maxiter, &T)) < 0) break;
                proj_p(&G, w, nt);
                sla__axpy(n, 1.0, w, u, nt);
            }
        }
        if (!any) continue;
        for (sla_int r = 0; r < n; r++) cr[r] = gli * xi[r] + u[r];
        if (gK) rank1_on_pattern(&VK, cr, xi, gK);
        if (gM) {
            for (sla_int r = 0; r < n; r++) cr[r] = -li * cr[r] - 0.5 * hc[r];
            rank1_on_pattern(&VM, cr, xi, gM);
        }
    }
    sla__free(&a, wk);
    sla__free(&a, MX);
    if (st < 0) return st;
    if (!T.converged)
        return sla__error(ctx, SLA_NOT_CONVERGED,
                          "%s: a projected solve missed grad_rtol = %g (relative residual %.3g): an eigenvalue left "
                          "out may equal a computed one",
                          who, o.grad_rtol, T.worst);
    return sla__ok(ctx, SLA_OK);
}

/* sla_eigsh_generalized_vjp per value array of K (M_b, or the one M whose
 * gradient sums over the batch). */
sla_status sla_eigsh_generalized_batch_vjp(sla_ctx *ctx, const sla_matrix *K, const sla_matrix *M, sla_int k,
                                           const double *evals, const double *evecs, const double *gl,
                                           const double *gv, double *gK, double *gM)
{
    static const char who[] = "sla_eigsh_generalized_batch_vjp";
    if (sla__require_real(ctx, K, who)) return SLA_ERR_UNSUPPORTED;
    if (M && sla__require_real(ctx, M, who)) return SLA_ERR_UNSUPPORTED;
    if (!K || !M || !evals || !evecs) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: NULL argument", who);
    if (k < 1 || k > K->nrows)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: k = %lld out of [1, n]", who, (long long)k);
    if (M->nbatch != 1 && M->nbatch != K->nbatch)
        return sla__error(ctx, SLA_ERR_DIMENSION, "%s: M has %lld value arrays; it needs 1 (shared) or K's %lld",
                          who, (long long)M->nbatch, (long long)K->nbatch);
    const bool shared = M->nbatch == 1 && K->nbatch > 1;
    const size_t n = (size_t)K->nrows, nk = (size_t)k, mnz = (size_t)M->nnz;
    sla_allocator a = sla__ctx_alloc(ctx);
    double *gMb = NULL; /* one M: each array's gradient, summed into gM */
    if (gM && shared) {
        if (!(gMb = sla__ctx_malloc(ctx, mnz ? mnz : 1, sizeof *gMb, "eigsh generalized batch vjp gM")))
            return SLA_ERR_NOMEM;
        sla__zero((sla_int)mnz, gM);
    }
    sla_status worst = SLA_OK, st = SLA_OK;
    for (sla_int b = 0; b < K->nbatch; b++) {
        double *gm = !gM ? NULL : shared ? gMb : gM + (size_t)b * mnz;
        st = sla_eigsh_generalized_vjp(ctx, K, b, M, M->nbatch == 1 ? 0 : b, k, evals + (size_t)b * nk,
                                       evecs + (size_t)b * n * nk, K->nrows, gl ? gl + (size_t)b * nk : NULL,
                                       gv ? gv + (size_t)b * n * nk : NULL, K->nrows,
                                       gK ? gK + (size_t)b * (size_t)K->nnz : NULL, gm);
        if (st < 0) {
            st = sla__batch_error(ctx, st, b);
            break;
        }
        if (st > 0) worst = st;
        if (gMb)
            for (size_t q = 0; q < mnz; q++) gM[q] += gMb[q];
        st = SLA_OK;
    }
    sla__free(&a, gMb);
    if (st < 0) return st;
    if (worst)
        return sla__error(ctx, worst, "eigsh generalized batch vjp: a projected solve missed its tolerance");
    return sla__ok(ctx, SLA_OK);
}
