/* saamg's polynomial smoothers (saamg_smoother = cheby | spai0; the
 * default, Gauss-Seidel, is in precond_saamg.c with the cycle): the
 * residual kernel they share (r = b - A x, optionally fused with the
 * restriction P^T r), Chebyshev degree 2 in D^-1 A, SPAI0, and their
 * set-up (the spectral bound, the SPAI0 diagonal) from a level's current
 * values. Part of precond saamg (saamg.h). */
#include "saamg.h"

#include <math.h>
#include <string.h>

#define SA_RAMUL(T, S)                                                                        \
    /* r = b - A x on rows [lo, hi) (b NULL: r -= A x); bc != NULL: also  \
     * bc += P^T r on those rows (serial callers only). */                 \
    static void ramul_blk_##S(const sa_level *L, const T *v, const double *b, const double *x,\
                              double *r, double *bc, sla_int lo, sla_int hi)                  \
    {                                                                                         \
        const sla_int *rp = L->rp;                                                            \
        const int32_t *ci = L->ci;                                                            \
        for (sla_int i = lo; i < hi; i++) {                                                   \
            double s = b ? b[i] : r[i];                                                       \
            for (sla_int k = rp[i]; k < rp[i + 1]; k++) s -= (double)v[k] * x[ci[k]];         \
            r[i] = s;                                                                         \
            if (bc)                                                                           \
                for (sla_int q = L->prp[i]; q < L->prp[i + 1]; q++)                           \
                    bc[L->pci[q]] += (double)L->pval[q] * s;                                  \
        }                                                                                     \
    }

SA_RAMUL(double, d)
SA_RAMUL(float, f)

/* r = b - A x (b NULL: r -= A x), threaded on large levels; with bc
 * also bc = P^T r (in the same pass serially). */
static void ramul(const sa_level *L, const double *b, const double *x, double *r, double *bc,
                  sla_int nc, int nt)
{
    sla_int n = L->n;
    bool par = nt > 1 && n >= SLA_PAR_MIN;
    if (bc && !par) memset(bc, 0, (size_t)nc * sizeof *bc);
#pragma omp parallel for num_threads(nt) schedule(static, 1) if (par)
    for (int t = 0; t < (par ? nt : 1); t++) {
        sla_int lo = par ? n * t / nt : 0, hi = par ? n * (t + 1) / nt : n;
        double *bt = par ? NULL : bc;
        if (L->f32) ramul_blk_f(L, L->val, b, x, r, bt, lo, hi);
        else ramul_blk_d(L, L->val, b, x, r, bt, lo, hi);
    }
    if (bc && par) sla__saamg_restrict(L, nc, r, bc);
}

/* The Chebyshev smoother (degree SA_CHEBY_DEG) on D^-1 A over [lmax /
 * SA_CHEBY_RATIO, lmax]: x += p(D^-1 A) D^-1 (b - A x); from x = 0
 * (zero) x is written. r ends as b - A x, and with bc (pre-smoothing) bc
 * = P^T r; d is a work vector. The polynomial does not depend on x or b,
 * so pre- and post-smoothing are the same symmetric operator. */
#define SA_CHEBY_DEG 2
#define SA_CHEBY_RATIO 30.0
void sla__saamg_cheby(const sa_level *L, const double *b, double *x, double *r, double *d,
                  bool zero, double *bc, sla_int nc, int nt)
{
    sla_int n = L->n;
    double hi = L->lmax, lo = hi / SA_CHEBY_RATIO;
    double theta = 0.5 * (hi + lo), delta = 0.5 * (hi - lo), sigma = theta / delta, rho = 1.0 / sigma;
    const double *rr = r;
    if (zero) rr = b;
    else ramul(L, b, x, r, NULL, 0, nt);
    bool par = nt > 1 && n >= SLA_PAR_MIN;
#pragma omp parallel for num_threads(nt) schedule(static) if (par)
    for (sla_int i = 0; i < n; i++) {
        d[i] = L->dinv[i] * rr[i] / theta;
        x[i] = zero ? d[i] : x[i] + d[i];
    }
    for (int k = 2; k <= SA_CHEBY_DEG; k++) {
        if (zero && k == 2) ramul(L, b, x, r, NULL, 0, nt); /* A d = A x */
        else ramul(L, NULL, d, r, NULL, 0, nt);
        double rn = 1.0 / (2.0 * sigma - rho), c1 = rn * rho, c2 = 2.0 * rn / delta;
#pragma omp parallel for num_threads(nt) schedule(static) if (par)
        for (sla_int i = 0; i < n; i++) {
            d[i] = c1 * d[i] + c2 * L->dinv[i] * r[i];
            x[i] += d[i];
        }
        rho = rn;
    }
    if (bc) ramul(L, NULL, d, r, bc, nc, nt); /* the residual after the last step */
}

/* SPAI0: x += M (b - A x), M = diag(a_ii / sum_j a_ij^2); from x = 0 x =
 * M b. Pre-smoothing (bc): then r = b - A x and bc = P^T r. */
void sla__saamg_spai0(const sa_level *L, const double *b, double *x, double *r, bool zero, double *bc,
                  sla_int nc, int nt)
{
    sla_int n = L->n;
    bool par = nt > 1 && n >= SLA_PAR_MIN;
    if (!zero) ramul(L, b, x, r, NULL, 0, nt);
#pragma omp parallel for num_threads(nt) schedule(static) if (par)
    for (sla_int i = 0; i < n; i++) x[i] = zero ? L->sm[i] * b[i] : x[i] + L->sm[i] * r[i];
    if (bc) ramul(L, b, x, r, bc, nc, nt);
}

/* The smoother's data on the levels with a P, from their current values:
 * spai0 its diagonal; cheby the bound lmax of the spectrum of D^-1 A:
 * 1.1 times the Rayleigh quotient (v, A v) / (v, D v) after 12 power
 * iterations with D^-1 A (a deterministic start), at most the Gershgorin
 * bound max_i sum_j |a_ij| / a_ii. Uses the levels' r (and wd) as work. */
sla_status sla__saamg_smoother_setup(sla_ctx *ctx, const sla_allocator *a, saamg *g, int nt, int upto)
{
    for (int l = 0; l < upto && l < g->nlev - 1 && g->smoother != 0; l++) {
        sa_level *L = &g->lev[l];
        sla_int n = L->n;
        if (g->smoother == 2) {
            if (!L->sm && !(L->sm = sla__malloc(a, (size_t)(n > 0 ? n : 1), sizeof *L->sm)))
                return sla__saamg_nomem(ctx, l);
            for (sla_int i = 0; i < n; i++) {
                double s2 = 0.0;
                for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) s2 += AVAL(L, k) * AVAL(L, k);
                L->sm[i] = s2 > 0.0 ? (1.0 / L->dinv[i]) / s2 : 0.0;
            }
            continue;
        }
        if (!L->wd && !(L->wd = sla__malloc(a, (size_t)(n > 0 ? n : 1), sizeof *L->wd)))
            return sla__saamg_nomem(ctx, l);
        double gersh = 0.0;
        for (sla_int i = 0; i < n; i++) {
            double s = 0.0;
            for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) s += fabs(AVAL(L, k));
            if (s * L->dinv[i] > gersh) gersh = s * L->dinv[i];
        }
        double *v = L->wd, *y = L->r, lam = 0.0;
        uint32_t h = 2463534242u;
        for (sla_int i = 0; i < n; i++) { /* xorshift: a start with every eigencomponent */
            h ^= h << 13, h ^= h >> 17, h ^= h << 5;
            v[i] = (double)(h >> 8) / 16777216.0 - 0.5;
        }
        for (int it = 0; it < 12; it++) {
            memset(y, 0, (size_t)n * sizeof *y);
            ramul(L, NULL, v, y, NULL, 0, nt); /* y = -A v */
            double vav = 0.0, vdv = 0.0, yy = 0.0;
            for (sla_int i = 0; i < n; i++) {
                vav -= v[i] * y[i];
                vdv += v[i] * v[i] / L->dinv[i];
                y[i] *= L->dinv[i];
                yy += y[i] * y[i];
            }
            lam = vdv > 0.0 ? vav / vdv : 0.0;
            if (!(yy > 0.0)) break;
            double sc = 1.0 / sqrt(yy);
            for (sla_int i = 0; i < n; i++) v[i] = y[i] * sc;
        }
        L->lmax = 1.1 * lam < gersh && lam > 0.0 ? 1.1 * lam : gersh;
        if (!(L->lmax > 0.0)) L->lmax = 1.0;
    }
    return SLA_OK;
}
