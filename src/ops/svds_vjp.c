/* The VJP of the truncated SVD (sla_svds): singular values by
 * ds_i = u_i^T dA v_i, singular vectors by first-order perturbation of the
 * eigenvector [u_i; v_i] / sqrt(2) of H = [0, A; A^T, 0]: explicit terms
 * for the computed triplets (the eigenvectors [u_j; +-v_j] of H) and one
 * projected MINRES solve per triplet for the rest; needs only A and the
 * forward triplets, not ARPACK. */
#include "sla/svd.h"
#include "../solvers/krylov.h"
#include "ops_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Q (H - s I) Q z on z = [zu (m); zv (n)], Q = I - diag(U U^T, V V^T). */
typedef struct aug_op {
    const sla_matrix *A; /* one-array view */
    const double *U, *V; /* m x k, n x k */
    sla_int m, n, k;
    double sigma;
    double *t;     /* m + n */
    double *twork; /* nt * n or NULL */
} aug_op;

static void project(const aug_op *P, double *z, int nt)
{
    for (sla_int j = 0; j < P->k; j++) {
        const double *u = P->U + (size_t)j * (size_t)P->m, *v = P->V + (size_t)j * (size_t)P->n;
        sla__axpy(P->m, -sla__dot(P->m, u, z, nt), u, z, nt);
        sla__axpy(P->n, -sla__dot(P->n, v, z + P->m, nt), v, z + P->m, nt);
    }
}

static void aug_apply(void *data, const double *x, double *y, int nt)
{
    aug_op *P = data;
    const sla_int m = P->m, n = P->n;
    sla__copy(m + n, x, P->t);
    project(P, P->t, nt);
    sla__spmv(P->A, 0, P->t + m, y, nt);                 /* A zv */
    sla__spmv_t(P->A, 0, P->t, y + m, nt, P->twork);     /* A^T zu */
    sla__axpy(m + n, -P->sigma, P->t, y, nt);
    project(P, y, nt);
}

static double col_dot(sla_int len, const double *M, sla_int j, const double *x, int nt)
{
    return x ? sla__dot(len, M + (size_t)j * (size_t)len, x, nt) : 0.0;
}

sla_status sla_svds_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_svds_options *opts, sla_int k,
                        const double *s, const double *U, const double *V, const double *gs, const double *gU,
                        const double *gV, double *gA, sla_svds_info *info)
{
    double t0 = sla__now();
    if (info) memset(info, 0, sizeof *info);
    if (sla__require_real(ctx, A, "sla_svds_vjp")) return SLA_ERR_UNSUPPORTED;
    sla_svds_options o;
    if (opts) o = *opts;
    else sla_svds_options_default(&o);
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "svds vjp: A is NULL");
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "value array %lld out of range [0, %lld)", (long long)ib,
                          (long long)A->nbatch);
    const sla_int m = A->nrows, n = A->ncols, q = m < n ? m : n;
    if (k < 1 || k > q)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "svds vjp: k = %lld out of [1, min(m, n)] = [1, %lld]",
                          (long long)k, (long long)q);
    if (!s || !U || !V || !gA) return sla__error(ctx, SLA_ERR_ARGUMENT, "svds vjp: NULL s, U, V or gA");
    if (!(o.degenerate_tol >= 0.0) || !(o.grad_rtol > 0.0) || o.grad_maxiter < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "svds vjp: bad degenerate_tol, grad_rtol or grad_maxiter");
    sla_matrix Av;
    sla__single_view(A, ib, &Av);
    sla_status st = sla_matrix_check_values(ctx, &Av, 0);
    if (st) return st;
    double smax = 0.0;
    for (sla_int i = 0; i < k; i++) {
        if (!isfinite(s[i]) || s[i] < 0.0)
            return sla__error(ctx, SLA_ERR_VALUE, "svds vjp: singular value %lld = %g is not finite and >= 0",
                              (long long)i, s[i]);
        smax = fmax(smax, s[i]);
    }
    if (!sla__all_finite(m * k, U) || !sla__all_finite(n * k, V))
        return sla__error(ctx, SLA_ERR_VALUE, "svds vjp: U or V has NaN/Inf");
    if ((gs && !sla__all_finite(k, gs)) || (gU && !sla__all_finite(m * k, gU)) ||
        (gV && !sla__all_finite(n * k, gV)))
        return sla__error(ctx, SLA_ERR_VALUE, "svds vjp: a cotangent has NaN/Inf");
    const int nt = sla__threads(ctx);
    const double dtol = o.degenerate_tol * fmax(smax, 1e-300);
    const bool vec = gU || gV;

    /* refuse what has no gradient: degenerate pairs with a loss that is not
     * invariant within them, and vectors of a zero singular value */
    for (sla_int i = 0; i < k; i++) {
        if (vec && s[i] <= dtol) {
            double mag = (gU ? sla__nrm2(m, gU + (size_t)i * (size_t)m, nt) : 0.0) +
                         (gV ? sla__nrm2(n, gV + (size_t)i * (size_t)n, nt) : 0.0);
            if (mag > 0.0)
                return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                                  "svds vjp: singular value %lld is %.3g <= degenerate_tol * s_max: its singular "
                                  "vectors are not unique, so a loss of them has no gradient",
                                  (long long)i, s[i]);
        }
        for (sla_int j = i + 1; j < k; j++) {
            if (fabs(s[i] - s[j]) > dtol) continue;
            if (gs && fabs(gs[i] - gs[j]) > 1e-8 * fmax(fabs(gs[i]), fabs(gs[j])) + 1e-300)
                return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                                  "svds vjp: singular values %lld and %lld are degenerate (%.17g, %.17g) but dL/ds "
                                  "differs (%g vs %g): the loss is not invariant within the pair, so its gradient "
                                  "is not defined",
                                  (long long)i, (long long)j, s[i], s[j], gs[i], gs[j]);
            if (vec) {
                const double *gui = gU ? gU + (size_t)i * (size_t)m : NULL;
                const double *guj = gU ? gU + (size_t)j * (size_t)m : NULL;
                const double *gvi = gV ? gV + (size_t)i * (size_t)n : NULL;
                const double *gvj = gV ? gV + (size_t)j * (size_t)n : NULL;
                double asym = col_dot(m, U, j, gui, nt) + col_dot(n, V, j, gvi, nt) - col_dot(m, U, i, guj, nt) -
                              col_dot(n, V, i, gvj, nt);
                double mag = (gui ? sla__nrm2(m, gui, nt) + sla__nrm2(m, guj, nt) : 0.0) +
                             (gvi ? sla__nrm2(n, gvi, nt) + sla__nrm2(n, gvj, nt) : 0.0);
                if (fabs(asym) > 1e-8 * mag)
                    return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                                      "svds vjp: singular values %lld and %lld are degenerate (%.17g, %.17g) and "
                                      "the loss is not invariant under rotations of their singular vectors "
                                      "(asymmetry %.3g): the vectors are not unique, so the gradient is not "
                                      "defined",
                                      (long long)i, (long long)j, s[i], s[j], asym);
            }
        }
    }

    sla_allocator a = sla__ctx_alloc(ctx);
    const sla_int mn = m + n;
    double *z = sla__ctx_malloc(ctx, (size_t)mn, 4 * sizeof *z, "svds vjp work space");
    double *twork = z && nt > 1 ? sla__ctx_malloc(ctx, (size_t)nt * (size_t)n, sizeof *twork, "svds vjp work space")
                                : NULL;
    if (!z || (nt > 1 && !twork)) {
        sla__free(&a, z);
        return SLA_ERR_NOMEM;
    }
    double *b = z + mn, *w = z + 2 * mn, *t = z + 3 * mn;
    for (sla_int pp = 0; pp < Av.nnz; pp++) gA[pp] = 0.0;
    sla__vjp_solves T = {.iterations = 0, .worst = 0.0, .converged = true};
    for (sla_int i = 0; i < k && st >= 0; i++) {
        const double *ui = U + (size_t)i * (size_t)m, *vi = V + (size_t)i * (size_t)n;
        const double *gui = gU ? gU + (size_t)i * (size_t)m : NULL;
        const double *gvi = gV ? gV + (size_t)i * (size_t)n : NULL;
        double gsi = gs ? gs[i] : 0.0;
        sla__zero(mn, z);
        if (vec) {
            /* the computed triplets: eigenvectors [u_j; +-v_j] / sqrt(2) of H */
            for (sla_int j = 0; j < k; j++) {
                double aj = col_dot(m, U, j, gui, nt), bj = col_dot(n, V, j, gvi, nt);
                double cp = (j == i || fabs(s[i] - s[j]) <= dtol) ? 0.0 : (aj + bj) / (2.0 * (s[i] - s[j]));
                double cm = (aj - bj) / (2.0 * (s[i] + s[j]));
                sla__axpy(m, cp + cm, U + (size_t)j * (size_t)m, z, nt);
                sla__axpy(n, cp - cm, V + (size_t)j * (size_t)n, z + m, nt);
            }
            /* the complement: Q (H - s_i I) Q y = -Q g, y in range(Q) */
            aug_op P = {.A = &Av, .U = U, .V = V, .m = m, .n = n, .k = k, .sigma = s[i], .t = t, .twork = twork};
            for (sla_int r = 0; r < m; r++) b[r] = gui ? -gui[r] : 0.0;
            for (sla_int r = 0; r < n; r++) b[m + r] = gvi ? -gvi[r] : 0.0;
            project(&P, b, nt);
            if (sla__nrm2(mn, b, nt) > 0.0) {
                sla__op op = {.n = mn, .nt = nt, .data = &P, .apply = aug_apply};
                if ((st = sla__vjp_minres(ctx, &op, b, w, o.grad_rtol, o.grad_maxiter, &T)) < 0) break;
                project(&P, w, nt);
                sla__axpy(mn, 1.0, w, z, nt);
            }
        }
        /* gA[p] += gs_i u_i[r] v_i[c] + zu[r] v_i[c] + u_i[r] zv[c] */
        for (sla_int r = 0; r < m; r++) {
            double cr = gsi * ui[r] + z[r], ur = ui[r];
            for (sla_int pp = Av.rowptr[r]; pp < Av.rowptr[r + 1]; pp++) {
                sla_int c = Av.colind[pp];
                gA[pp] += cr * vi[c] + ur * z[m + c];
            }
        }
    }
    sla__free(&a, z);
    sla__free(&a, twork);
    if (st < 0) return st;
    if (info) {
        snprintf(info->method, sizeof info->method, "%s", vec ? "projected minres" : "explicit");
        snprintf(info->reason, sizeof info->reason, "%s", T.converged ? "converged" : "grad_rtol missed");
        info->converged = T.converged;
        info->nconv = k;
        info->iterations = T.iterations;
        info->max_residual_v = T.worst;
        info->seconds = sla__now() - t0;
    }
    if (!T.converged)
        return sla__error(ctx, SLA_NOT_CONVERGED,
                          "svds vjp: a projected solve missed grad_rtol = %g (relative residual %.3g): a singular "
                          "value left out may equal a computed one, or raise grad_maxiter",
                          o.grad_rtol, T.worst);
    return sla__ok(ctx, SLA_OK);
}
