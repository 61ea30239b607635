/* Smoothed-aggregation AMG coarse operators: the Galerkin product P^T A P and the
 * dense factor of the coarsest level. Part of precond=saamg (precond_saamg.c
 * gives the whole design):
 *  - Galerkin A_c = P^T (A P) over the transpose of P, in a few large
 *    blocks of coarse rows, each forming the rows of A P it needs once
 *    (a row-wise triple product forms row i of A P again for every coarse
 *    row that reaches i: 91e6 multiply-adds against 65e6 on the finest
 *    level of 3-D Poisson 1e6), accumulated in double, stored in float32: the same
 *    iteration counts as float64 coarse levels on 2D/3D Poisson and
 *    anisotropic diffusion, at half the memory). When A is exactly
 *    symmetric, A_c is symmetrized exactly (both mirrored entries get
 *    their rounded mean), so every level is exactly symmetric and the
 *    cycle is a symmetric operator;
 *  - the coarsest level (at most SAAMG_DENSE_MAX rows) is factorized densely:
 *    Cholesky, LU with partial pivoting when Cholesky breaks down or A is
 *    not symmetric. */
#include "saamg.h"

#include <math.h>
#include <string.h>

/* Sort one row's columns (rows are short: insertion sort). */
static void sort_cols(int32_t *c, sla_int m)
{
    for (sla_int i = 1; i < m; i++) {
        int32_t cc = c[i];
        sla_int j = i - 1;
        while (j >= 0 && c[j] > cc) {
            c[j + 1] = c[j];
            j--;
        }
        c[j + 1] = cc;
    }
}

/* P^T (nc rows) into trp (zeroed), tci, tv. */
static void transpose_p(const sa_level *L, sla_int nc, sla_int *trp, int32_t *tci, sa_real *tv)
{
    sla_int n = L->n, pnnz = L->prp[n];
    for (sla_int k = 0; k < pnnz; k++) trp[L->pci[k] + 1]++;
    for (sla_int I = 0; I < nc; I++) trp[I + 1] += trp[I];
    for (sla_int i = 0; i < n; i++)
        for (sla_int k = L->prp[i]; k < L->prp[i + 1]; k++) {
            sla_int q = trp[L->pci[k]]++;
            tci[q] = (int32_t)i;
            tv[q] = L->pval[k];
        }
    for (sla_int I = nc; I > 0; I--) trp[I] = trp[I - 1];
    trp[0] = 0;
}

/* Exact symmetry: both mirrored entries of C get their rounded mean. The
 * mirror (J, I) of an upper entry (I, J) is found by a cursor per row
 * (C->n entries of scratch): rows I are visited in increasing order, so
 * row J's lower entries are met in increasing column order and the cursors
 * only advance (O(nnz) instead of a binary search per entry, which took
 * 8 % of a refresh of diffusion2d 1e6). */
static sla_status symmetrize(sla_ctx *ctx, const sla_allocator *a, const sa_level *C, sa_real *vv, int l)
{
    sla_int *cur = sla__malloc(a, (size_t)(C->n > 0 ? C->n : 1), sizeof *cur);
    if (!cur) return sla__saamg_nomem(ctx, l);
    for (sla_int I = 0; I < C->n; I++) cur[I] = C->rp[I];
    for (sla_int I = 0; I < C->n; I++)
        for (sla_int k = C->rp[I]; k < C->rp[I + 1]; k++) {
            sla_int J = C->ci[k];
            if (J <= I) continue;
            sla_int c = cur[J], e = C->rp[J + 1];
            while (c < e && C->ci[c] < I) c++;
            cur[J] = c;
            if (c == e || C->ci[c] != I) continue; /* cannot happen for a symmetric pattern */
            sa_real m = (sa_real)(0.5 * ((double)vv[k] + (double)vv[c]));
            vv[k] = vv[c] = m;
        }
    sla__free(a, cur);
    return SLA_OK;
}

/* The Galerkin product's output, a block of consecutive coarse rows
 * [lo, hi): rows [lo, done) computed, their sorted columns and values in
 * ci, v (len of cap used); need: the length that row `done` needed when
 * it did not fit; need_ap: the AP entries the block needed when they did
 * not fit in its thread's buffer. */
typedef struct ga_chunk {
    sla_int lo, hi, done, len, cap, need, need_ap;
    sla_int fbase; /* the first fine row its P^T rows reach (fmark's origin) */
    int32_t *ci;
    sa_real *v;
} ga_chunk;

/* One thread's scratch: marks and accumulator over the coarse columns
 * (mk, -1 between rows: a row of A P marks with 0, a coarse row with its
 * number; ac, the row's column list rc), the slot of
 * each fine row in the block's rows of A P (fmark, -1 when absent; over a
 * window of fine rows from the chunk's fbase, as wide as the widest
 * chunk's range: n/nch + a border with locality, n without), and
 * those rows: fine row srow[s] in apc/apv[sst[s] .. sst[s + 1]). */
typedef struct ga_thread {
    int32_t *mk, *rc, *fmark, *srow;
    double *ac, *apv;
    int32_t *apc;
    sla_int *sst;
    sla_int cap_s, cap_e;
} ga_thread;

/* Rows of A P (double) for the fine rows that the P^T rows [c->done, c->hi)
 * reach, each once, in the order first met; returns the number of rows, or
 * -1 when they do not fit in w's buffer (c->need_ap set, w cleared). Row i
 * of A P is summed over A's row in column order, then P's row: the same
 * for every block, so the product does not depend on the blocking. */
static sla_int ap_rows(const sa_level *L, const sla_int *trp, const int32_t *tci, ga_thread *w,
                       ga_chunk *c)
{
    /* locals, so that the stores below cannot alias the arrays' addresses */
    const sla_int *restrict rp = L->rp;
    const int32_t *restrict prp = L->prp;
    const int32_t *restrict ci = L->ci, *restrict pci = L->pci;
    const sa_real *restrict pval = L->pval;
    const double *restrict ad = L->f32 ? NULL : (const double *)L->val;
    const float *restrict af = L->f32 ? (const float *)L->val : NULL;
    int32_t *restrict amk = w->mk, *restrict rc = w->rc, *restrict apc = w->apc;
    int32_t *restrict fmark = w->fmark, *restrict srow = w->srow;
    double *restrict apv = w->apv;
    sla_int *restrict sst = w->sst;
    const sla_int cap_e = w->cap_e;
    double *restrict acc = w->ac; /* zero between rows */
    const sla_int fb = c->fbase;
    sla_int ns = 0, ne = 0;
    sst[0] = 0;
    for (sla_int p = trp[c->done]; p < trp[c->hi]; p++) {
        sla_int i = tci[p];
        if (fmark[i - fb] >= 0) continue;
        sla_int m = 0;
        /* branch-free gathering of the row's columns: a new column is
         * appended to rc and counted, an old one overwritten past the end
         * (about a third of the terms open a new column on 3-D Poisson:
         * a branch there is mispredicted often) */
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) {
            sla_int j = ci[k];
            double a = ad ? ad[k] : (double)af[k];
            for (sla_int q = prp[j]; q < prp[j + 1]; q++) {
                int32_t J = pci[q];
                sla_int nw = amk[J] < 0;
                rc[m] = J;
                amk[J] = 0;
                m += nw;
                acc[J] += a * (double)pval[q];
            }
        }
        if (ne + m > cap_e) { /* does not fit: clear and report */
            for (sla_int t = 0; t < m; t++) {
                amk[rc[t]] = -1;
                acc[rc[t]] = 0.0;
            }
            for (sla_int t = 0; t < ns; t++) fmark[srow[t] - fb] = -1;
            c->need_ap = 2 * (ne + m + 1) + (trp[c->hi] - p) * 8;
            return -1;
        }
        for (sla_int t = 0; t < m; t++) {
            int32_t J = rc[t];
            apc[ne + t] = J;
            apv[ne + t] = acc[J];
            acc[J] = 0.0;
            amk[J] = -1;
        }
        fmark[i - fb] = (int32_t)ns;
        srow[ns] = (int32_t)i;
        ne += m;
        sst[++ns] = ne;
    }
    return ns;
}

/* Coarse rows of chunk c from c->done on, as P^T (A P): the rows of A P
 * the block needs first (ap_rows), then row I of the coarse operator
 * accumulated in double over P^T's row I. Set-up (C NULL): columns
 * gathered with marks, sorted, values rounded to sa_real appended to the
 * chunk; stops at a row that does not fit in c->cap (its marks cleared, so
 * that the row can be redone). Refresh (C given): the values on C's
 * existing pattern, into vv. Either way the sums are taken in the same
 * order, so equal values give bitwise equal operators. */
static void galerkin_rows(const sa_level *L, const sla_int *trp, const int32_t *tci,
                          const sa_real *tv, ga_thread *w, sla_int *cnt, ga_chunk *c,
                          const sa_level *C, sa_real *vv)
{
    sla_int ns = ap_rows(L, trp, tci, w, c);
    if (ns < 0) return;
    double *restrict ac = w->ac;
    const double *restrict apv = w->apv;
    const int32_t *restrict apc = w->apc, *restrict fmark = w->fmark;
    const sla_int *restrict sst = w->sst;
    int32_t *restrict mk = w->mk, *restrict rc = w->rc;
    for (sla_int I = c->done; I < c->hi; I++) {
        sla_int m = 0;
        for (sla_int p = trp[I]; p < trp[I + 1]; p++) {
            double pi = (double)tv[p];
            sla_int s = fmark[tci[p] - c->fbase];
            if (C) {
                for (sla_int q = sst[s]; q < sst[s + 1]; q++) ac[apc[q]] += pi * apv[q];
                continue;
            }
            for (sla_int q = sst[s]; q < sst[s + 1]; q++) { /* branch-free, as in ap_rows */
                int32_t J = apc[q];
                sla_int nw = mk[J] != (int32_t)I;
                rc[m] = J;
                mk[J] = (int32_t)I;
                m += nw;
                ac[J] += pi * apv[q];
            }
        }
        if (C) {
            for (sla_int k = C->rp[I]; k < C->rp[I + 1]; k++) {
                vv[k] = (sa_real)ac[C->ci[k]];
                ac[C->ci[k]] = 0.0;
            }
            c->done = I + 1;
            continue;
        }
        if (c->len + m > c->cap) { /* redo this row with a larger buffer */
            c->need = c->len + m;
            for (sla_int q = 0; q < m; q++) {
                mk[rc[q]] = -1;
                ac[rc[q]] = 0.0;
            }
            break;
        }
        sort_cols(rc, m);
        for (sla_int q = 0; q < m; q++) {
            c->ci[c->len + q] = rc[q];
            c->v[c->len + q] = (sa_real)ac[rc[q]];
            ac[rc[q]] = 0.0;
            mk[rc[q]] = -1; /* for the next chunk's rows of A P */
        }
        c->len += m;
        cnt[I + 1] = m;
        c->done = I + 1;
    }
    for (sla_int s = 0; s < ns; s++) w->fmark[w->srow[s] - c->fbase] = -1;
}

/* The per-thread scratch (nt of them) for a product over P^T (nc rows) of
 * level L in chunks ch: marks and the fine-row slots cleared, the rows of
 * A P sized for the largest chunk (at least cap_e entries). */
static void ga_threads_free(const sla_allocator *a, ga_thread *w, int nt)
{
    for (int t = 0; w && t < nt; t++) {
        sla__free(a, w[t].mk);
        sla__free(a, w[t].rc);
        sla__free(a, w[t].fmark);
        sla__free(a, w[t].srow);
        sla__free(a, w[t].ac);
        sla__free(a, w[t].apv);
        sla__free(a, w[t].apc);
        sla__free(a, w[t].sst);
    }
    sla__free(a, w);
}

static bool ga_threads_init(const sla_allocator *a, ga_thread *w, int nt, sla_int fwin, sla_int nc,
                            sla_int cap_s, sla_int cap_e)
{
    size_t nn = (size_t)(fwin > 0 ? fwin : 1), ncc = (size_t)(nc > 0 ? nc : 1);
    for (int t = 0; t < nt; t++) {
        ga_thread *x = &w[t];
        x->mk = sla__malloc(a, ncc, sizeof *x->mk);
        x->rc = sla__malloc(a, ncc + 1, sizeof *x->rc); /* + 1: the branch-free gathering writes one past the columns found */
        x->ac = sla__calloc(a, ncc, sizeof *x->ac);
        x->fmark = sla__malloc(a, nn, sizeof *x->fmark);
        x->srow = sla__malloc(a, (size_t)cap_s, sizeof *x->srow);
        x->sst = sla__malloc(a, (size_t)cap_s + 1, sizeof *x->sst);
        x->apc = sla__malloc(a, (size_t)cap_e, sizeof *x->apc);
        x->apv = sla__malloc(a, (size_t)cap_e, sizeof *x->apv);
        if (!x->mk || !x->rc || !x->ac || !x->fmark || !x->srow || !x->sst || !x->apc ||
            !x->apv)
            return false;
        x->cap_s = cap_s;
        x->cap_e = cap_e;
        for (sla_int J = 0; J < nc; J++) x->mk[J] = -1;
        for (sla_int i = 0; i < fwin; i++) x->fmark[i] = -1;
    }
    return true;
}

/* Grow every thread's rows of A P to at least need entries. */
static bool ga_threads_grow(const sla_allocator *a, ga_thread *w, int nt, sla_int need)
{
    for (int t = 0; t < nt; t++) {
        if (w[t].cap_e >= need) continue;
        sla_int cap = 2 * w[t].cap_e > need ? 2 * w[t].cap_e : need;
        int32_t *c = sla__malloc(a, (size_t)cap, sizeof *c);
        double *v = sla__malloc(a, (size_t)cap, sizeof *v);
        if (!c || !v) {
            sla__free(a, c);
            sla__free(a, v);
            return false;
        }
        sla__free(a, w[t].apc);
        sla__free(a, w[t].apv);
        w[t].apc = c;
        w[t].apv = v;
        w[t].cap_e = cap;
    }
    return true;
}

/* The chunks of coarse rows (enough for dynamic load balance, at least
 * 64 rows each), the thread scratch for them, and P^T: what both products
 * share. Returns false when out of memory. */
typedef struct ga_plan {
    sla_int nch;
    ga_chunk *ch;
    ga_thread *w;
    sla_int *trp;
    int32_t *tci;
    sa_real *tv;
} ga_plan;

static void ga_plan_free(const sla_allocator *a, ga_plan *g, int nt)
{
    if (g->ch)
        for (sla_int c = 0; c < g->nch; c++) {
            sla__free(a, g->ch[c].ci);
            sla__free(a, g->ch[c].v);
        }
    sla__free(a, g->ch);
    ga_threads_free(a, g->w, nt);
    sla__free(a, g->trp);
    sla__free(a, g->tci);
    sla__free(a, g->tv);
}

static bool ga_plan_init(const sla_allocator *a, const sa_level *L, sla_int nc, int nt, ga_plan *g)
{
    sla_int n = L->n, pnnz = L->prp[n];
    memset(g, 0, sizeof *g);
    /* blocks: two per thread for the load balance, more only to bound a
     * block's rows of A P (at most 2^17 fine rows' worth): the rows of A P
     * on a block's border are formed by both blocks, so few large blocks
     * form fewer (3-D Poisson 1e6: 1.79 rows of A P per fine row with 16
     * blocks, 1.33 with 4). Each running block holds its rows of A P, which
     * set the solve's peak: 2^18 rows took 2-D Poisson 4e6 to 170.7 / 181.6
     * bytes per unknown (1 / 2 threads), 2^17 165.8 / 175.4, the set-up's
     * time unchanged there and on 3-D Poisson 1e6 (0.61-0.65 s, 1 thread;
     * 0.38-0.42 s, 2; interleaved, 3 runs each) */
    g->nch = 2 * (sla_int)nt;
    if (n / 131072 + 1 > g->nch) g->nch = n / 131072 + 1;
    if (g->nch > nc / 64) g->nch = nc / 64;
    if (g->nch < 1) g->nch = 1;
    g->trp = sla__calloc(a, (size_t)nc + 1, sizeof *g->trp);
    g->tci = sla__malloc(a, (size_t)(pnnz > 0 ? pnnz : 1), sizeof *g->tci);
    g->tv = sla__malloc(a, (size_t)(pnnz > 0 ? pnnz : 1), sizeof *g->tv);
    g->ch = sla__calloc(a, (size_t)g->nch, sizeof *g->ch);
    g->w = sla__calloc(a, (size_t)nt, sizeof *g->w);
    if (!g->trp || !g->tci || !g->tv || !g->ch || !g->w) return false;
    transpose_p(L, nc, g->trp, g->tci, g->tv);
    /* slots: at most the entries of the chunk's P^T rows; entries of A P:
     * a first guess of twice A's entries per row for each slot, grown when
     * a chunk needs more */
    sla_int cap_s = 1, fwin = 1;
    for (sla_int c = 0; c < g->nch; c++) {
        ga_chunk *ch = &g->ch[c];
        ch->lo = ch->done = nc * c / g->nch;
        ch->hi = nc * (c + 1) / g->nch;
        sla_int e = g->trp[ch->hi] - g->trp[ch->lo];
        if (e > cap_s) cap_s = e;
        /* the fine rows the chunk reaches: fmark's window (2-D Poisson 4e6,
         * 2 threads: 2 x 16 MB of n-long marks before, 2 x ~0.6 MB now) */
        sla_int fmin = n, fmax = -1;
        for (sla_int p = g->trp[ch->lo]; p < g->trp[ch->hi]; p++) {
            sla_int i = g->tci[p];
            fmin = i < fmin ? i : fmin;
            fmax = i > fmax ? i : fmax;
        }
        ch->fbase = fmax >= fmin ? fmin : 0;
        if (fmax - fmin + 1 > fwin) fwin = fmax - fmin + 1;
    }
    double per_row = n > 0 ? 2.0 * (double)L->rp[n] / (double)n : 8.0;
    double ce = per_row * (double)(n / g->nch + 16) * 1.5;
    if (ce > 1e9) ce = 1e9;
    return ga_threads_init(a, g->w, nt, fwin, nc, cap_s, (sla_int)ce + 64);
}

/* Run the chunks that are not done, in parallel (one thread's scratch
 * each), until a pass leaves none that ran out of room in its A P rows
 * (those grow between passes; set-up chunks that outgrow their output
 * stop too, and the caller grows them). */
static void ga_pass(const sa_level *L, ga_plan *g, int nt, sla_int *cnt, const sa_level *C,
                    sa_real *vv)
{
#pragma omp parallel num_threads(nt) if (nt > 1 && g->nch > 1)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
#pragma omp for schedule(dynamic, 1)
        for (sla_int c = 0; c < g->nch; c++)
            if (g->ch[c].done < g->ch[c].hi)
                galerkin_rows(L, g->trp, g->tci, g->tv, &g->w[t], cnt, &g->ch[c], C, vv);
    }
}

/* The largest A P need of the chunks that stopped for it (0: none), reset. */
static sla_int ga_need_ap(ga_plan *g)
{
    sla_int need = 0;
    for (sla_int c = 0; c < g->nch; c++) {
        if (g->ch[c].need_ap > need) need = g->ch[c].need_ap;
        g->ch[c].need_ap = 0;
    }
    return need;
}

/* Where row i's columns reach i (sorted columns: the diagonal, if the
 * row has one; a scan, as rows are short). */
static sla_int diag_at(const sa_level *L, sla_int i)
{
    sla_int k = L->rp[i], e = L->rp[i + 1];
    while (k < e && L->ci[k] < i) k++;
    return k;
}

/* L->dpos, where each row's diagonal is (4 B per row): 2-D diffusion 1e6
 * with random kappa, level 1 (195694 rows of 4 to 18 entries), 1 thread:
 * the residual with the restriction 4.3 -> 3.1 ms, as the scan over the
 * lower part is gone (its exit mispredicted where the rows vary), and the
 * backward sweep runs each row in one loop instead of two around the
 * diagonal; the whole V-cycle -8.3 to -8.5 % on 1 thread, -6.2 to -8.4 %
 * on 2 (best of 20 rounds of 5 applies, interleaved); 2-D Poisson within
 * noise; the same iterates bit for bit (bench/SAAMG_RESULTS.md). Coarse
 * levels always; level 0 (the caller's A: only_irregular) only when in
 * more than 1 row in 8 the length or the diagonal's offset differs from
 * the row before (a stencil on a grid: neither; its rows' loops are
 * predicted, and the 4 B per unknown would count against the memory
 * budget); an unstructured matrix of 782664 rows x 11.1 (diffusion's
 * level 1 taken as A): V-cycle -17 to -25 % on 1 thread, -12 to -18 %
 * on 2 (level 0's positions alone, interleaved in one process). No
 * diagonal in some row: NULL (the set-up refuses such a level). false:
 * out of memory. */
bool sla__saamg_set_dpos(const sla_allocator *a, sa_level *L, bool only_irregular)
{
    sla__free(a, L->dpos);
    L->dpos = NULL;
    if (only_irregular) {
        sla_int changes = 0, plen = -1, poff = -1;
        for (sla_int i = 0; i < L->n; i++) {
            sla_int len = L->rp[i + 1] - L->rp[i], off = diag_at(L, i) - L->rp[i];
            changes += (len != plen) | (off != poff);
            plen = len;
            poff = off;
        }
        if (8 * changes <= L->n) return true;
    }
    L->dpos = sla__malloc(a, (size_t)(L->n > 0 ? L->n : 1), sizeof *L->dpos);
    if (!L->dpos) return false;
    for (sla_int I = 0; I < L->n; I++) {
        sla_int k = diag_at(L, I);
        if (k < L->rp[I + 1] && L->ci[k] == I && k <= INT32_MAX) {
            L->dpos[I] = (int32_t)k;
            continue;
        }
        sla__free(a, L->dpos); /* no diagonal (the set-up refuses it next): the scans */
        L->dpos = NULL;
        break;
    }
    return true;
}

/* C = P^T A P for level l (P, A in L), into level l + 1 (nc rows), as
 * P^T (A P) (the rows of A P are formed once per block of coarse rows, not
 * once per coarse row that reaches them, as a row-wise triple product
 * does: about half the multiply-adds on 3-D Poisson). One pass (symbolic
 * and numeric together) over blocks of coarse rows, each into a buffer of
 * its own (allocated here, outside the threads; a block that outgrows its
 * buffer or its thread's A P rows stops, and is continued after they
 * grew), then the blocks concatenated into C. */
sla_status sla__saamg_galerkin(sla_ctx *ctx, const sla_allocator *a, const sa_level *L, int l,
                               sla_int nc, bool symmetric, int nt, sa_level *C)
{
    sla_status st = SLA_OK;
    sla_int n = L->n, pnnz = L->prp[n];
    ga_plan g;
    /* C's row pointers first: allocated after the plan's transients they
     * would stay above the holes those leave when freed (4e6 2D Poisson,
     * 1 thread: 173.4 -> 170.0 bytes per unknown peak) */
    C->n = nc;
    C->own_rp = sla__calloc(a, (size_t)nc + 1, sizeof *C->own_rp);
    if (!C->own_rp) return sla__saamg_nomem(ctx, l + 1);
    if (!ga_plan_init(a, L, nc, nt, &g)) {
        st = sla__saamg_nomem(ctx, l + 1);
        goto out;
    }
    /* first guess of the entries per coarse row: (entries of A per row) x
     * (entries of P per row), enough for 2D and 3D Poisson's first levels */
    double guess = n > 0 ? (double)L->rp[n] / (double)n * ((double)pnnz / (double)n) : 1.0;
    if (guess < 8.0) guess = 8.0;
    for (sla_int c = 0; c < g.nch; c++)
        g.ch[c].cap = (sla_int)(guess * (double)(g.ch[c].hi - g.ch[c].lo)) + 16;
    for (;;) {
        for (sla_int c = 0; c < g.nch; c++) { /* the unfinished blocks' buffers */
            ga_chunk *b = &g.ch[c];
            if (b->done == b->hi || (b->ci && b->need <= b->cap)) continue;
            if (b->ci) b->cap = 2 * b->cap > b->need ? 2 * b->cap : b->need;
            int32_t *ci = sla__malloc(a, (size_t)b->cap, sizeof *ci);
            sa_real *v = sla__malloc(a, (size_t)b->cap, sizeof *v);
            if (!ci || !v) {
                sla__free(a, ci);
                sla__free(a, v);
                st = sla__saamg_nomem(ctx, l + 1);
                goto out;
            }
            if (b->len) {
                memcpy(ci, b->ci, (size_t)b->len * sizeof *ci);
                memcpy(v, b->v, (size_t)b->len * sizeof *v);
            }
            sla__free(a, b->ci);
            sla__free(a, b->v);
            b->ci = ci;
            b->v = v;
        }
        ga_pass(L, &g, nt, C->own_rp, NULL, NULL);
        sla_int need = ga_need_ap(&g);
        if (need && !ga_threads_grow(a, g.w, nt, need)) {
            st = sla__saamg_nomem(ctx, l + 1);
            goto out;
        }
        bool more = false;
        for (sla_int c = 0; c < g.nch; c++) more = more || g.ch[c].done < g.ch[c].hi;
        if (!more) break;
    }
    /* P^T and the threads' scratch are done with: freed before C's arrays,
     * which can then take their place (on level 0 of 2D Poisson they are
     * 25 B per fine row, C 12) */
    ga_threads_free(a, g.w, nt);
    g.w = NULL;
    sla__free(a, g.trp);
    sla__free(a, g.tci);
    sla__free(a, g.tv);
    g.trp = NULL;
    g.tci = NULL;
    g.tv = NULL;
    C->own_rp[0] = 0;
    for (sla_int I = 0; I < nc; I++) C->own_rp[I + 1] += C->own_rp[I];
    sla_int cnnz = C->own_rp[nc];
    C->nnz = cnnz;
    C->own_ci = sla__malloc(a, (size_t)(cnnz > 0 ? cnnz : 1), sizeof *C->own_ci);
    sa_real *vv = sla__malloc(a, (size_t)(cnnz > 0 ? cnnz : 1), sizeof *vv);
    C->own_val = vv;
    if (!C->own_ci || !vv) {
        st = sla__saamg_nomem(ctx, l + 1);
        goto out;
    }
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && g.nch > 1)
    for (sla_int c = 0; c < g.nch; c++) {
        sla_int base = C->own_rp[g.ch[c].lo];
        memcpy(C->own_ci + base, g.ch[c].ci, (size_t)g.ch[c].len * sizeof *C->own_ci);
        memcpy(vv + base, g.ch[c].v, (size_t)g.ch[c].len * sizeof *vv);
    }
    C->rp = C->own_rp;
    C->ci = C->own_ci;
    if (!sla__saamg_set_dpos(a, C, false)) {
        st = sla__saamg_nomem(ctx, l + 1);
        goto out;
    }
    if (symmetric && (st = symmetrize(ctx, a, C, vv, l + 1))) goto out;
    C->val = vv;
    C->f32 = sizeof(sa_real) == sizeof(float);
out:
    ga_plan_free(a, &g, nt);
    return st;
}

/* Refresh: the values of C = P^T A P on C's existing pattern (the
 * symbolic product of the set-up), with the set-up's blocks, rows of A P
 * and summation order (so equal values give bitwise equal operators) into
 * a dense accumulator that C's own column list reads and clears; no marks,
 * no sort. P^T is rebuilt here as a transient (20 B per fine unknown on
 * 2D Poisson that the solve need not hold). */
sla_status sla__saamg_galerkin_numeric(sla_ctx *ctx, const sla_allocator *a, const sa_level *L,
                                       int l, bool symmetric, int nt, sa_level *C)
{
    sla_status st = SLA_OK;
    ga_plan g;
    if (!ga_plan_init(a, L, C->n, nt, &g)) {
        st = sla__saamg_nomem(ctx, l + 1);
        goto out;
    }
    sa_real *vv = C->own_val;
    for (;;) {
        ga_pass(L, &g, nt, NULL, C, vv);
        sla_int need = ga_need_ap(&g);
        if (!need) break;
        if (!ga_threads_grow(a, g.w, nt, need)) {
            st = sla__saamg_nomem(ctx, l + 1);
            goto out;
        }
    }
    if (symmetric && (st = symmetrize(ctx, a, C, vv, l + 1))) goto out;
out:
    ga_plan_free(a, &g, nt);
    return st;
}

#ifdef SLA_HAVE_LAPACK
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
#endif

/* F = L L^T in F's lower triangle (column major, n x n); false: not
 * positive definite. LAPACK's blocked dpotrf on one BLAS thread (every
 * rank of the distributed saamg factors the same matrix and must get the
 * same bits); without LAPACK a right-looking loop with unit-stride inner
 * loops. The left-looking loop before read rows of F at stride n: the
 * 938-row coarsest level of 2-D Poisson 4e6 took about 0.12 s per set-up
 * and per refresh, dpotrf takes ~0.01 s. */
static bool chol_factor(double *F, sla_int n)
{
#ifdef SLA_HAVE_LAPACK
    int ni = (int)n, info = 0, bt = sla__blas_threads_one();
    dpotrf_("L", &ni, F, &ni, &info, 1);
    sla__blas_threads_restore(bt);
    return info == 0;
#else
    for (sla_int j = 0; j < n; j++) {
        double d = F[j + j * n];
        if (!(d > 0.0)) return false;
        d = sqrt(d);
        F[j + j * n] = d;
        for (sla_int i = j + 1; i < n; i++) F[i + j * n] /= d;
        for (sla_int k = j + 1; k < n; k++) {
            double f = F[k + j * n];
            if (f == 0.0) continue;
            for (sla_int i = k; i < n; i++) F[i + k * n] -= F[i + j * n] * f;
        }
    }
    return true;
#endif
}

/* P F = L U (L unit lower, U upper, in F; piv[j]: the row swapped with
 * row j at step j, 0-based); false: a pivot below 1e-14 of F's largest
 * entry (singular). LAPACK's dgetrf (one BLAS thread), or partial
 * pivoting in a right-looking loop. */
static bool lu_factor(double *F, sla_int n, int *piv)
{
    double amax = 0.0;
    for (sla_int k = 0; k < n * n; k++) amax = fmax(amax, fabs(F[k]));
#ifdef SLA_HAVE_LAPACK
    int ni = (int)n, info = 0, bt = sla__blas_threads_one();
    dgetrf_(&ni, &ni, F, &ni, piv, &info);
    sla__blas_threads_restore(bt);
    if (info < 0) return false;
    for (sla_int j = 0; j < n; j++) {
        piv[j]--;
        if (!(fabs(F[j + j * n]) > 1e-14 * amax)) return false;
    }
    return true;
#else
    for (sla_int j = 0; j < n; j++) {
        sla_int p = j;
        for (sla_int i = j + 1; i < n; i++)
            if (fabs(F[i + j * n]) > fabs(F[p + j * n])) p = i;
        piv[j] = (int)p;
        if (!(fabs(F[p + j * n]) > 1e-14 * amax)) return false;
        if (p != j)
            for (sla_int k = 0; k < n; k++) {
                double t = F[j + k * n];
                F[j + k * n] = F[p + k * n];
                F[p + k * n] = t;
            }
        double d = F[j + j * n];
        for (sla_int i = j + 1; i < n; i++) F[i + j * n] /= d;
        for (sla_int k = j + 1; k < n; k++) {
            double f = F[j + k * n];
            if (f == 0.0) continue;
            for (sla_int i = j + 1; i < n; i++) F[i + k * n] -= F[i + j * n] * f;
        }
    }
    return true;
#endif
}

/* Dense factor of the coarsest level: Cholesky when A is symmetric, LU
 * with partial pivoting when that breaks down or A is not symmetric. */
sla_status sla__saamg_factor_coarse(sla_ctx *ctx, const sla_allocator *a, saamg *g,
                                    const sa_level *L)
{
    sla_int n = L->n;
    double *F = g->dense; /* kept across refreshes */
    if (!F) F = sla__calloc(a, (size_t)n * (size_t)n, sizeof *F);
    if (!F) return sla__saamg_nomem(ctx, g->nlev - 1);
    g->dense = F;
    bool chol = g->symmetric;
    for (int attempt = 0; attempt < 2; attempt++) {
        memset(F, 0, (size_t)n * (size_t)n * sizeof *F);
        for (sla_int i = 0; i < n; i++)
            for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) F[i + (sla_int)L->ci[k] * n] = AVAL(L, k);
        if (chol) {
            if (chol_factor(F, n)) {
                sla__free(a, g->piv); /* an earlier LU's */
                g->piv = NULL;
                return SLA_OK;
            }
            chol = false;
            continue;
        }
        if (!g->piv) g->piv = sla__malloc(a, (size_t)n, sizeof *g->piv);
        if (!g->piv) return sla__saamg_nomem(ctx, g->nlev - 1);
        if (!lu_factor(F, n, g->piv))
            return sla__error(ctx, SLA_ERR_SINGULAR,
                              "precond saamg: the coarsest operator (%lld rows, level %d) is "
                              "singular (is A singular, e.g. a pure Neumann problem?)",
                              (long long)n, g->nlev - 1);
        return SLA_OK;
    }
    return SLA_OK;
}

bool sla__saamg_transpose_p(const sla_allocator *a, sa_level *L, sla_int nc)
{
    sla_int n = L->n;
    int32_t nnz = L->prp[n];
    L->trp = sla__calloc(a, (size_t)nc + 1, sizeof *L->trp);
    L->tci = sla__malloc(a, nnz > 0 ? (size_t)nnz : 1, sizeof *L->tci);
    L->tval = sla__malloc(a, nnz > 0 ? (size_t)nnz : 1, sizeof *L->tval);
    if (!L->trp || !L->tci || !L->tval) {
        sla__free(a, L->trp);
        sla__free(a, L->tci);
        sla__free(a, L->tval);
        L->trp = L->tci = NULL;
        L->tval = NULL;
        return false;
    }
    for (int32_t q = 0; q < nnz; q++) L->trp[L->pci[q] + 1]++;
    for (sla_int c = 0; c < nc; c++) L->trp[c + 1] += L->trp[c];
    /* rows in increasing order, so each coarse row's entries are sorted by
     * fine row; the row pointers shifted by one while filling */
    for (sla_int i = 0; i < n; i++)
        for (int32_t q = L->prp[i]; q < L->prp[i + 1]; q++) {
            int32_t at = L->trp[L->pci[q]]++;
            L->tci[at] = (int32_t)i;
            L->tval[at] = L->pval[q];
        }
    for (sla_int c = nc; c > 0; c--) L->trp[c] = L->trp[c - 1];
    L->trp[0] = 0;
    return true;
}
