/* Complex restarted GMRES(m), right-preconditioned (A M^-1 u = b,
 * x = M^-1 u) so the minimised residual is the true one: modified
 * Gram-Schmidt Arnoldi with the Hermitian inner product (one
 * re-orthogonalisation pass when a vector loses most of its norm) and
 * complex Givens rotations [c s; -conj(s) c] with c real, which keep the
 * least-squares residual |g_k| at hand. */
#include "zsolver.h"

#include <math.h>

/* The rotation that maps (a, b) to (r, 0), r = (a / |a|) sqrt(|a|^2 + |b|^2):
 * c = |a| / d, s = (a / |a|) conj(b) / d (a = 0: c = 0, s = conj(b) / |b|). */
static void zrotg(sla__z a, sla__z b, double *c, sla__z *s, sla__z *r)
{
    double aa = cabs(a), ab = cabs(b);
    double d = hypot(aa, ab);
    if (d == 0.0) {
        *c = 1.0;
        *s = 0.0;
        *r = 0.0;
    } else if (aa == 0.0) {
        *c = 0.0;
        *s = conj(b) / ab;
        *r = ab;
    } else {
        sla__z ph = a / aa;
        *c = aa / d;
        *s = ph * conj(b) / d;
        *r = ph * d;
    }
}

sla_status sla__zgmres(sla_ctx *ctx, const sla__zop *A, const sla__zpc *M, const sla__z *b,
                       sla__z *x, const sla__kopts *o, sla_solve_info *info)
{
    sla_int n = A->n;
    int nt = A->nt;
    int m = o->restart > 0 ? o->restart : 30;
    if (m > n && n > 0) m = (int)n;
    if (m < 1) m = 1;
    sla_allocator al = sla__ctx_alloc(ctx);
    sla__z *V = sla__malloc(&al, (size_t)n * (size_t)(m + 3), sizeof(sla__z));
    sla__z *H = sla__malloc(&al, (size_t)(m + 1) * (size_t)m, sizeof(sla__z));
    sla__z *g = sla__malloc(&al, (size_t)(3 * m + 3), sizeof(sla__z));
    double *cs = sla__malloc(&al, (size_t)m + 1, sizeof(double));
    sla_status st = SLA_OK;
    if (!V || !H || !g || !cs) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "gmres: out of memory for %d+3 complex %lld-vectors", m, (long long)n);
        goto out;
    }
    sla__z *u = V + (size_t)(m + 1) * (size_t)n, *mu = u + n; /* scratch */
    sla__z *sn = g + m + 1, *y = sn + m + 1;

    double bnorm = sla__znrm2(n, b, nt);
    double tol = sla__ktol(o, bnorm);
    if (!o->use_x0)
        for (sla_int i = 0; i < n; i++) x[i] = 0.0;
    double rnorm = sla__ztrue_residual(A, b, x, V); /* v_0 = r */
    sla_int it = 0;
    sla_reason stop = SLA_DIVERGED_MAXITER;
    const size_t ld = (size_t)(m + 1);

    while (rnorm > tol && it < o->maxiter && isfinite(rnorm)) {
        for (sla_int i = 0; i < n; i++) V[i] /= rnorm;
        g[0] = rnorm;
        int k = 0;
        bool done = false;
        while (k < m && it < o->maxiter) {
            sla__z *w = V + (size_t)(k + 1) * (size_t)n;
            sla__z *hk = H + (size_t)k * ld;
            if ((st = sla__zpc_run(A, M, V + (size_t)k * (size_t)n, mu))) goto pc_fail;
            A->apply(A->data, mu, w, nt); /* w = A M^-1 v_k */
            double wnorm0 = sla__znrm2(n, w, nt);
            double wn = 0.0;
            for (int pass = 0; pass < 2; pass++) { /* MGS, repeated if needed */
                for (int j = 0; j <= k; j++) {
                    const sla__z *vj = V + (size_t)j * (size_t)n;
                    sla__z h = sla__zdotc(n, vj, w, nt); /* h_jk = v_j^H w */
                    hk[j] = (pass ? hk[j] : 0.0) + h;
                    sla__zaxpy(n, -h, vj, w, nt);
                }
                wn = sla__znrm2(n, w, nt);
                if (wn > 0.5 * wnorm0) break;
            }
            hk[k + 1] = wn;
            for (int j = 0; j < k; j++) { /* the earlier rotations */
                sla__z t = cs[j] * hk[j] + sn[j] * hk[j + 1];
                hk[j + 1] = -conj(sn[j]) * hk[j] + cs[j] * hk[j + 1];
                hk[j] = t;
            }
            sla__z r;
            zrotg(hk[k], hk[k + 1], &cs[k], &sn[k], &r);
            if (!isfinite(creal(r)) || !isfinite(cimag(r))) {
                stop = SLA_DIVERGED_NAN;
                done = true;
                break;
            }
            hk[k] = r;
            hk[k + 1] = 0.0;
            g[k + 1] = -conj(sn[k]) * g[k]; /* |g_{k+1}| = least-squares residual */
            g[k] = cs[k] * g[k];
            k++;
            it++;
            double est = cabs(g[k]);
            if (sla__kmonitor(o, it, bnorm > 0 ? est / bnorm : est)) {
                stop = sla__kstop_reason(o);
                done = true;
                break;
            }
            if (est <= tol) break;
            if (wn == 0.0 || r == 0.0) { /* happy breakdown, or a singular H */
                if (r == 0.0) {
                    stop = SLA_DIVERGED_BREAKDOWN;
                    done = true;
                }
                break;
            }
            for (sla_int i = 0; i < n; i++) w[i] /= wn;
        }
        for (int i = k - 1; i >= 0; i--) { /* y = R^-1 g */
            sla__z s = g[i];
            for (int j = i + 1; j < k; j++) s -= H[(size_t)j * ld + i] * y[j];
            sla__z rii = H[(size_t)i * ld + i];
            y[i] = rii != 0.0 ? s / rii : 0.0;
        }
        if (k > 0) { /* x += M^-1 V y */
            for (sla_int i = 0; i < n; i++) u[i] = 0.0;
            for (int j = 0; j < k; j++) sla__zaxpy(n, y[j], V + (size_t)j * (size_t)n, u, nt);
            if ((st = sla__zpc_run(A, M, u, mu))) goto pc_fail;
            sla__zaxpy(n, 1.0, mu, x, nt);
        }
        rnorm = sla__ztrue_residual(A, b, x, V);
        if (done) break;
    }
    sla__kinfo_finish(info, it, rnorm, bnorm, o, stop);
    st = info->converged ? SLA_OK : SLA_NOT_CONVERGED;
    goto out;
pc_fail:
    st = sla__kpc_error(ctx, st, "gmres");
out:
    sla__free(&al, V);
    sla__free(&al, H);
    sla__free(&al, g);
    sla__free(&al, cs);
    return st;
}
