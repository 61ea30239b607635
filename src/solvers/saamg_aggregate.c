/* Smoothed-aggregation AMG set-up: strength of connection, aggregation and the
 * smoothed prolongator of one level, and their re-smoothing at refresh. Part of
 * precond=saamg (precond_saamg.c gives the whole design); per level (Vanek,
 * Mandel, Brezina 1996):
 *  - strength: j is a strong neighbour of i when |a_ij| >= theta_l
 *    sqrt(|a_ii a_jj|), theta_l = SAAMG_THETA / 2^l on level l (with a
 *    fixed 0.08 the 27-point Galerkin operators of 3D Poisson fell below
 *    it, most coarse nodes stayed unaggregated and CG went 9, 15, 23
 *    iterations for N = 12, 24, 40; halved per level: 9, 10, 11);
 *  - greedy aggregation in the standard three phases: (1) a node whose
 *    strong neighbours are all free forms an aggregate with them; (2) a
 *    still free node joins the phase-1 aggregate of its strongest aggregated
 *    neighbour; (3) the rest form aggregates with their free strong
 *    neighbours. Nodes without strong neighbours stay out of every aggregate
 *    (their tentative prolongator row is zero; the smoother handles them);
 *  - tentative prolongator P0 piecewise constant on the aggregates, smoothed
 *    P = (I - omega D_F^-1 A_F) P0 with the filtered matrix A_F (weak
 *    couplings lumped onto the diagonal, so anisotropic problems keep sparse
 *    coarse operators), omega = 4 / (3 rho), rho the Gershgorin (l1) bound
 *    of D_F^-1 A_F (no power iterations: one pass, deterministic). */
#include "saamg.h"

#include <math.h>
#include <string.h>

/* theta_l = SAAMG_THETA / 2^l on level l (Vanek, Mandel, Brezina): the
 * Galerkin operators spread their couplings over more, weaker entries. */
static inline bool strong_t(double th2, double aij, double di, double dj)
{
    return aij * aij >= th2 * fabs(di * dj);
}

/* a_ii, as the strength test sees it (from the stored 1 / a_ii: the same
 * value everywhere) */
#define DG(i) (1.0 / L->dinv[i])

/* Whether entry k (row i, column j != i, value v) is a strong coupling:
 * the test on the current values, or (mask, saamg_reuse=full at refresh)
 * the set-up's verdict. */
#define STRONG(mask, k, v, i, j) ((mask) ? (mask)[k] != 0 : strong_t(th2, v, DG(i), DG(j)))

/* The filtered diagonal of row i (weak couplings lumped onto a_ii; a_ii if
 * that sum is 0) and, in *s, the sum of |a_ij| over the strong ones. */
static double filtered_diag(const sa_level *L, sla_int i, double th2, const uint8_t *mask, double *s)
{
    double df = DG(i), sum = 0.0;
    for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
        sla_int j = L->ci[k];
        if (j == i) continue;
        double v = AVAL(L, k);
        if (STRONG(mask, k, v, i, j)) sum += fabs(v);
        else df += v;
    }
    *s = sum;
    return df == 0.0 ? DG(i) : df;
}

/* 1 / a_ii of level l (allocated at set-up, overwritten at refresh). */
sla_status sla__saamg_set_diag(sla_ctx *ctx, const sla_allocator *a, sa_level *L, int l)
{
    if (!L->dinv) L->dinv = sla__malloc(a, (size_t)(L->n > 0 ? L->n : 1), sizeof *L->dinv);
    if (!L->dinv) return sla__saamg_nomem(ctx, l);
    int nt = sla__threads(ctx);
    sla_int n = L->n, bad = n; /* the first bad row, whatever the thread count */
#pragma omp parallel for num_threads(nt) schedule(static) reduction(min : bad) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        sla_int p = L->dpos ? L->dpos[i] : find_in_row(L, i, i);
        double d = p >= 0 ? AVAL(L, p) : 0.0;
        if (d == 0.0 || !isfinite(d)) {
            if (i < bad) bad = i;
            d = 1.0;
        }
        L->dinv[i] = 1.0 / d;
    }
    return bad < n ? sla__saamg_bad_diag(ctx, bad, l) : SLA_OK;
}

sla_status sla__saamg_bad_diag(sla_ctx *ctx, sla_int row, int l)
{
    return sla__error(ctx, SLA_ERR_SINGULAR, "precond saamg: zero or missing diagonal at row %lld of level %d",
                      (long long)row, l);
}

/* omega = 4 / (3 rho), rho the l1 (Gershgorin) bound of D_F^-1 A_F (a
 * maximum: the same with any thread count). */
double sla__saamg_smoothing_weight(const sa_level *L, double th2, const uint8_t *mask, int nt)
{
    double rho = 0.0;
    sla_int n = L->n;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(max : rho) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        double s, df = filtered_diag(L, i, th2, mask, &s);
        double q = (fabs(df) + s) / fabs(df);
        if (q > rho) rho = q;
    }
    return 4.0 / (3.0 * rho);
}

/* The values of P = (I - omega D_F^-1 A_F) P0 on its pattern (set up by
 * build_p: in each row the own aggregate first, then the strong
 * neighbours' aggregates in the order of first appearance). lv: scratch,
 * the longest row of P. */
void sla__saamg_smooth_p(sa_level *L, const int32_t *agg, double th2, const uint8_t *mask,
                         double omega, double *lv)
{
    for (sla_int i = 0; i < L->n; i++) {
        sla_int p0 = L->prp[i], m = 0, len = L->prp[i + 1] - p0;
        const int32_t *lc = L->pci + p0;
        double s_unused, w = omega / filtered_diag(L, i, th2, mask, &s_unused);
        for (sla_int q = 0; q < len; q++) lv[q] = 0.0;
        if (agg[i] >= 0) { /* (I - w D_F^-1 A_F) P0 on the diagonal: 1 - w */
            lv[0] = 1.0 - omega;
            m = 1;
        }
        for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
            sla_int j = L->ci[k];
            if (j == i || agg[j] < 0) continue;
            double v = AVAL(L, k);
            if (!STRONG(mask, k, v, i, j)) continue;
            sla_int q = 0;
            while (q < m && lc[q] != agg[j]) q++;
            if (q == m) m++; /* lc[q] == agg[j]: the pattern was built this way */
            lv[q] -= w * v;
        }
        for (sla_int q = 0; q < len; q++) L->pval[p0 + q] = (sa_real)lv[q];
    }
}

/* Diagonal, strength and aggregation of level l (the first half of
 * sla__saamg_build_p): *sg_out the strength of each entry (one byte per
 * entry: j != i and strong; the caller frees it), *na_out the number of
 * aggregates, agg[i] row i's (-2: no strong neighbour, outside every
 * aggregate). */
static sla_status aggregate(sla_ctx *ctx, const sla_allocator *a, sa_level *L, int l, int32_t *agg,
                            int ntp, uint8_t **sg_out, sla_int *na_out)
{
    sla_int n = L->n, nnz = L->rp[n];
    double th = sla__saamg_theta(L, l), th2 = th * th;
    *sg_out = NULL;
    *na_out = 0;
    sla_status st = sla__saamg_set_diag(ctx, a, L, l);
    if (st) return st;
    uint8_t *sg = sla__malloc(a, (size_t)(nnz > 0 ? nnz : 1), sizeof *sg);
    if (!sg) return sla__saamg_nomem(ctx, l);
    *sg_out = sg;
#pragma omp parallel for num_threads(ntp) schedule(static) if (ntp > 1)
    for (sla_int i = 0; i < n; i++)
        for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
            sla_int j = L->ci[k];
            sg[k] = j != i && strong_t(th2, AVAL(L, k), DG(i), DG(j));
        }
    /* aggregation: -1 free, -2 no strong neighbour, >= 0 aggregate */
    for (sla_int i = 0; i < n; i++) {
        agg[i] = -2;
        for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++)
            if (sg[k]) {
                agg[i] = -1;
                break;
            }
    }
    sla_int na = 0;
    for (sla_int i = 0; i < n; i++) { /* phase 1 */
        if (agg[i] != -1) continue;
        bool ok = true;
        for (sla_int k = L->rp[i]; k < L->rp[i + 1] && ok; k++)
            if (sg[k] && agg[L->ci[k]] >= 0) ok = false;
        if (!ok) continue;
        if (na >= INT32_MAX) break;
        agg[i] = (int32_t)na;
        for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++)
            if (sg[k] && agg[L->ci[k]] < 0) agg[L->ci[k]] = (int32_t)na;
        na++;
    }
    for (sla_int i = 0; i < n; i++) { /* phase 2: join the strongest phase-1 neighbour */
        if (agg[i] != -1) continue;
        double best = -1.0;
        int32_t ba = -1;
        for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
            sla_int j = L->ci[k];
            if (!sg[k] || agg[j] < 0) continue;
            double s = fabs(AVAL(L, k)) / sqrt(fabs(DG(i) * DG(j)));
            if (s > best) best = s, ba = agg[j];
        }
        if (ba >= 0) agg[i] = -3 - ba; /* marked: not a phase-1 member for later rows */
    }
    for (sla_int i = 0; i < n; i++)
        if (agg[i] <= -3) agg[i] = -3 - agg[i];
    for (sla_int i = 0; i < n; i++) { /* phase 3: the rest */
        if (agg[i] != -1) continue;
        if (na >= INT32_MAX) break;
        agg[i] = (int32_t)na;
        for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++)
            if (sg[k] && agg[L->ci[k]] == -1) agg[L->ci[k]] = (int32_t)na;
        na++;
    }
    *na_out = na;
    return SLA_OK;
}

/* Whether na aggregates of n rows coarsen the level. */
static inline bool coarsens(sla_int na, sla_int n) { return na > 0 && na <= (sla_int)(0.85 * (double)n); }

/* The diagonal and the aggregates of level l, without a prolongator (the
 * distributed saamg smooths P across ranks itself): *nagg_out 0 when the
 * level does not coarsen. */
sla_status sla__saamg_aggregates(sla_ctx *ctx, const sla_allocator *a, sa_level *L, int l,
                                 int32_t *agg, int nt, sla_int *nagg_out)
{
    uint8_t *sg = NULL;
    sla_int na = 0;
    sla_status st = aggregate(ctx, a, L, l, agg, nt > 1 && L->n >= SLA_PAR_MIN ? nt : 1, &sg, &na);
    sla__free(a, sg);
    *nagg_out = !st && coarsens(na, L->n) ? na : 0;
    return st;
}

/* Diagonal, aggregation and the smoothed prolongator of level l; sets
 * *nagg (0: the level does not coarsen). agg: n scratch entries. keep
 * (saamg_reuse=full): P's aggregates and the strength of A's entries are
 * kept in L->agg, L->strong, to re-smooth P at refresh. The strength of
 * each entry is tested once (aggregate's sg), and P's rows are counted and
 * filled by nt threads; the aggregation is serial (greedy: each node
 * depends on the ones before it). */
sla_status sla__saamg_build_p(sla_ctx *ctx, const sla_allocator *a, sa_level *L, int l,
                              int32_t *agg, bool keep, int nt, sla_int *nagg_out)
{
    sla_int n = L->n;
    double th = sla__saamg_theta(L, l), th2 = th * th;
    int ntp = nt > 1 && n >= SLA_PAR_MIN ? nt : 1;
    *nagg_out = 0;
    uint8_t *sg = NULL;
    sla_int na = 0;
    sla_status st = aggregate(ctx, a, L, l, agg, ntp, &sg, &na);
    if (st) {
        sla__free(a, sg);
        return st;
    }
    double *lv = NULL;
    if (!coarsens(na, n)) goto out;

    double omega = sla__saamg_smoothing_weight(L, th2, sg, ntp);

    /* P = (I - omega D_F^-1 A_F) P0: count, then fill; in each row the own
     * aggregate first, then the strong neighbours' aggregates in the order
     * of first appearance */
    L->prp = sla__malloc(a, (size_t)n + 1, sizeof *L->prp);
    if (!L->prp) {
        st = sla__saamg_nomem(ctx, l);
        goto out;
    }
    L->prp[0] = 0;
#pragma omp parallel for num_threads(ntp) schedule(static) if (ntp > 1)
    for (sla_int i = 0; i < n; i++) {
        sla_int c = agg[i] >= 0 ? 1 : 0;
        for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
            sla_int j = L->ci[k];
            if (!sg[k] || agg[j] < 0 || agg[j] == agg[i]) continue;
            bool seen = false; /* distinct aggregates among the earlier neighbours */
            for (sla_int q = L->rp[i]; q < k && !seen; q++)
                if (sg[q] && agg[L->ci[q]] == agg[j]) seen = true;
            if (!seen) c++;
        }
        L->prp[i + 1] = (int32_t)c;
    }
    sla_int pnnz = 0;
    for (sla_int i = 0; i < n; i++) {
        pnnz += L->prp[i + 1];
        if (pnnz > INT32_MAX) {
            st = sla__error(ctx, SLA_ERR_TOO_LARGE,
                            "precond saamg: the prolongator of level %d has more than 2^31 - 1 "
                            "entries (its 32-bit row pointers)", l);
            goto out;
        }
        L->prp[i + 1] = (int32_t)pnnz;
    }
    L->pci = sla__malloc(a, (size_t)(pnnz > 0 ? pnnz : 1), sizeof *L->pci);
    L->pval = sla__malloc(a, (size_t)(pnnz > 0 ? pnnz : 1), sizeof *L->pval);
    if (!L->pci || !L->pval) {
        st = sla__saamg_nomem(ctx, l);
        goto out;
    }
    sla_int maxlen = 1;
    for (sla_int i = 0; i < n; i++) maxlen = L->rp[i + 1] - L->rp[i] + 1 > maxlen ? L->rp[i + 1] - L->rp[i] + 1 : maxlen;
    lv = sla__malloc(a, (size_t)ntp * (size_t)maxlen, sizeof *lv);
    if (!lv) {
        st = sla__saamg_nomem(ctx, l);
        goto out;
    }
    if (keep) {
        L->agg = sla__malloc(a, (size_t)(n > 0 ? n : 1), sizeof *L->agg);
        if (!L->agg) {
            st = sla__saamg_nomem(ctx, l);
            goto out;
        }
        memcpy(L->agg, agg, (size_t)n * sizeof *agg);
    }
#pragma omp parallel num_threads(ntp) if (ntp > 1)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        double *tlv = lv + (size_t)t * (size_t)maxlen;
#pragma omp for schedule(static)
        for (sla_int i = 0; i < n; i++) {
            sla_int p0 = L->prp[i], m = 0;
            int32_t *lc = L->pci + p0;
            double s_unused, w = omega / filtered_diag(L, i, th2, sg, &s_unused);
            if (agg[i] >= 0) { /* (I - w D_F^-1 A_F) P0 on the diagonal: 1 - w */
                lc[0] = agg[i];
                tlv[0] = 1.0 - omega;
                m = 1;
            }
            for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
                sla_int j = L->ci[k];
                if (!sg[k] || agg[j] < 0) continue;
                sla_int q = 0;
                while (q < m && lc[q] != agg[j]) q++;
                if (q == m) {
                    lc[m] = agg[j];
                    tlv[m] = 0.0;
                    m++;
                }
                tlv[q] -= w * AVAL(L, k);
            }
            for (sla_int q = 0; q < m; q++) L->pval[p0 + q] = (sa_real)tlv[q];
        }
    }
    *nagg_out = na;
    if (keep) { /* the strength verdicts, for re-smoothing at refresh */
        L->strong = sg;
        sg = NULL;
    }
out:
    sla__free(a, lv);
    sla__free(a, sg);
    return st;
}
