/* Restarted GMRES(m), right-preconditioned (A M^-1 u = b, x = M^-1 u) so
 * the minimised residual is the true one. Modified Gram-Schmidt Arnoldi
 * with one re-orthogonalisation pass when a vector loses most of its norm;
 * Givens rotations keep the least-squares residual at hand. */
#include "krylov.h"

#include <math.h>

/* x += M^-1 (V y) for the first k basis vectors. */
static sla_status update_solution(const sla__op *A, const sla__pc *M, bool tr, const double *V,
                                  const double *y, int k, double *u, double *mu, double *x)
{
    sla_int n = A->n;
    sla__zero(n, u);
    for (int j = 0; j < k; j++) sla__axpy(n, y[j], V + (size_t)j * (size_t)n, u, A->nt);
    sla_status st = sla__pc_run(A, M, tr, u, mu);
    if (st) return st;
    sla__axpy(n, 1.0, mu, x, A->nt);
    return SLA_OK;
}

sla_status sla__gmres(sla_ctx *ctx, const sla__op *A, const sla__pc *M, const double *b,
                      double *x, const sla__kopts *o, sla_solve_info *info)
{
    sla_int n = A->n;
    int nt = A->nt;
    int m = o->restart > 0 ? o->restart : 30;
    sla_int ng = A->n_global > 0 ? A->n_global : n; /* the same m on every process */
    if (m > ng && ng > 0) m = (int)ng;
    if (m < 1) m = 1;
    sla_allocator al = sla__ctx_alloc(ctx);
    double *V = sla__malloc(&al, (size_t)n * (size_t)(m + 3), sizeof(double));
    double *H = sla__malloc(&al, (size_t)(m + 1) * (size_t)m, sizeof(double));
    double *g = sla__malloc(&al, (size_t)(4 * m + 4), sizeof(double));
    if (!V || !H || !g) {
        sla__free(&al, V);
        sla__free(&al, H);
        sla__free(&al, g);
        return sla__error(ctx, SLA_ERR_NOMEM, "gmres: out of memory for %d+3 %lld-vectors", m,
                          (long long)n);
    }
    double *u = V + (size_t)(m + 1) * (size_t)n, *mu = u + n; /* scratch */
    double *cs = g + m + 1, *sn = cs + m + 1, *y = sn + m + 1;
    bool tr = o->pc_transpose;
    sla_status st = SLA_OK;

    double bnorm = sla__op_nrm2(A, b);
    double tol = sla__ktol(o, bnorm);
    if (!o->use_x0) sla__zero(n, x);
    double rnorm = sla__true_residual(A, b, x, V); /* v_0 = r */
    sla_int it = 0;
    sla_reason stop = SLA_DIVERGED_MAXITER;

    while (rnorm > tol && it < o->maxiter && isfinite(rnorm)) {
        for (sla_int i = 0; i < n; i++) V[i] /= rnorm;
        g[0] = rnorm;
        int k = 0;
        bool done = false;
        while (k < m && it < o->maxiter) {
            double *w = V + (size_t)(k + 1) * (size_t)n;
            if ((st = sla__pc_run(A, M, tr, V + (size_t)k * (size_t)n, mu))) goto pc_fail;
            A->apply(A->data, mu, w, nt); /* w = A M^-1 v_k */
            double wnorm0 = sla__op_nrm2(A, w);
            for (int pass = 0; pass < 2; pass++) { /* MGS, repeated if needed */
                for (int j = 0; j <= k; j++) {
                    const double *vj = V + (size_t)j * (size_t)n;
                    double h = sla__op_dot(A, vj, w);
                    H[(size_t)k * (size_t)(m + 1) + j] = (pass ? H[(size_t)k * (size_t)(m + 1) + j] : 0.0) + h;
                    sla__axpy(n, -h, vj, w, nt);
                }
                double wn = sla__op_nrm2(A, w);
                H[(size_t)k * (size_t)(m + 1) + k + 1] = wn;
                if (wn > 0.5 * wnorm0) break;
            }
            double *hk = H + (size_t)k * (size_t)(m + 1);
            double hnext = hk[k + 1];
            for (int j = 0; j < k; j++) { /* apply the earlier rotations */
                double t = cs[j] * hk[j] + sn[j] * hk[j + 1];
                hk[j + 1] = -sn[j] * hk[j] + cs[j] * hk[j + 1];
                hk[j] = t;
            }
            double d = hypot(hk[k], hk[k + 1]);
            if (!isfinite(d)) {
                stop = SLA_DIVERGED_NAN;
                done = true;
                break;
            }
            cs[k] = d > 0 ? hk[k] / d : 1.0;
            sn[k] = d > 0 ? hk[k + 1] / d : 0.0;
            hk[k] = d;
            hk[k + 1] = 0.0;
            g[k + 1] = -sn[k] * g[k]; /* |g_{k+1}| = least-squares residual */
            g[k] = cs[k] * g[k];
            k++;
            it++;
            double est = fabs(g[k]);
            if (sla__kmonitor(o, it, bnorm > 0 ? est / bnorm : est)) {
                stop = sla__kstop_reason(o);
                done = true;
                break;
            }
            if (est <= tol) break;
            if (hnext == 0.0 || d == 0.0) { /* happy breakdown or singular H */
                if (d == 0.0) {
                    stop = SLA_DIVERGED_BREAKDOWN;
                    done = true;
                }
                break;
            }
            for (sla_int i = 0; i < n; i++) w[i] /= hnext;
        }
        /* y = R^-1 g by back substitution, then x += M^-1 V y */
        for (int i = k - 1; i >= 0; i--) {
            double s = g[i];
            for (int j = i + 1; j < k; j++) s -= H[(size_t)j * (size_t)(m + 1) + i] * y[j];
            double rii = H[(size_t)i * (size_t)(m + 1) + i];
            y[i] = rii != 0.0 ? s / rii : 0.0;
        }
        if (k > 0 && (st = update_solution(A, M, tr, V, y, k, u, mu, x))) goto pc_fail;
        rnorm = sla__true_residual(A, b, x, V);
        if (done) break;
    }
    sla__kinfo_finish(info, it, rnorm, bnorm, o, stop);
    sla__free(&al, V);
    sla__free(&al, H);
    sla__free(&al, g);
    return info->converged ? SLA_OK : SLA_NOT_CONVERGED;

pc_fail:
    sla__free(&al, V);
    sla__free(&al, H);
    sla__free(&al, g);
    return sla__kpc_error(ctx, st, "gmres");
}
