/* saamg's hybrid Gauss-Seidel blocks for a thread count: per large level
 * one contiguous row block per thread, the columns each block reads
 * outside itself, and the coarse rows the blocks' P rows share (the
 * sweeps over them are in saamg_cycle.c). */
#include "saamg_split.h"

#include <string.h>

static void hyb_free(const sla_allocator *a, sa_hyb *H)
{
    sla__free(a, H->h);
    sla__free(a, H->hj);
    sla__free(a, H->hx);
    sla__free(a, H->full);
    sla__free(a, H->sbit);
    sla__free(a, H->srank);
    sla__free(a, H->sj);
    sla__free(a, H->acc);
    sla__free(a, H->dfr);
    memset(H, 0, sizeof *H);
}

void sla__saamg_split_two_pass(struct sa_split *sp, bool on)
{
    for (int l = 0; sp && l < SAAMG_MAX_LEV; l++) sp->lev[l].two = on;
}

void sla__saamg_split_free(const sla_allocator *a, struct sa_split **sp)
{
    if (!*sp) return;
    for (int l = 0; l < SAAMG_MAX_LEV; l++) hyb_free(a, &(*sp)->lev[l]);
    sla__free(a, *sp);
    *sp = NULL;
}

static sla_int bits_count(const uint64_t *w, size_t nw)
{
    sla_int c = 0;
    for (size_t i = 0; i < nw; i++)
        for (uint64_t u = w[i]; u; u &= u - 1) c++;
    return c;
}

/* The set bits of w, ascending, into out. */
static void bits_list(const uint64_t *w, size_t nw, int32_t *out)
{
    sla_int m = 0;
    for (size_t i = 0; i < nw; i++)
        for (uint64_t u = w[i]; u; u &= u - 1) {
            int b = 0;
            while (!(u >> b & 1u)) b++;
            out[m++] = (int32_t)(i * 64 + (size_t)b);
        }
}

/* Level L's nt blocks (rows n t / nt ..), the columns each reads outside
 * itself and the coarse rows shared between blocks, from per-block
 * bitmaps over the rows and the coarse rows (transient, nt (n + nc) / 8
 * bytes). The lists take (12 nh + (4 + 8 nt) ns + nc / 8) bytes; when
 * that is more than 8 n (orderings without locality), one vector of n
 * instead (full). */
static sla_status hyb_build(const sla_allocator *a, const sa_level *L, sla_int nc, int nt, sa_hyb *H)
{
    sla_int n = L->n;
    size_t wn = ((size_t)n + 63) / 64, wc = ((size_t)nc + 63) / 64, per = wn + wc;
    uint64_t *bits = sla__calloc(a, (size_t)nt * per + wc, sizeof *bits);
    sla_int *nh = sla__calloc(a, (size_t)nt, sizeof *nh);
    H->h = sla__calloc(a, (size_t)nt, sizeof *H->h);
    H->sbit = sla__calloc(a, wc > 0 ? wc : 1, sizeof *H->sbit);
    if (!L->dpos) H->dfr = sla__calloc(a, wn > 0 ? wn : 1, sizeof *H->dfr);
    sla_status st = SLA_ERR_NOMEM;
    if (!bits || !nh || !H->h || !H->sbit || (!L->dpos && !H->dfr)) goto out;
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; t++) {
        sla_int lo = n * t / nt, hi = n * (t + 1) / nt;
        uint64_t *hb = bits + (size_t)t * per, *cb = hb + wn;
        for (sla_int i = lo; i < hi; i++) {
            sla_int k = L->rp[i], e = L->rp[i + 1];
            if (k < e && (L->ci[k] < lo || L->ci[e - 1] >= hi)) {
                if (H->dfr) { /* (a word may hold two blocks' rows) */
                    uint64_t bit = (uint64_t)1 << (i & 63);
#pragma omp atomic
                    H->dfr[i >> 6] |= bit;
                }
                for (; k < e; k++) {
                    sla_int j = L->ci[k];
                    if (j < lo || j >= hi) hb[j >> 6] |= (uint64_t)1 << (j & 63);
                }
            }
            for (sla_int q = L->prp[i]; q < L->prp[i + 1]; q++)
                cb[L->pci[q] >> 6] |= (uint64_t)1 << (L->pci[q] & 63);
        }
        nh[t] = bits_count(hb, wn);
        H->h[t] = (sa_halo){lo, hi, 0, NULL, NULL, NULL};
    }
    uint64_t *once = bits + (size_t)nt * per;
    for (int t = 0; t < nt; t++) { /* shared: reached by two blocks or more */
        const uint64_t *cb = bits + (size_t)t * per + wn;
        for (size_t i = 0; i < wc; i++) {
            H->sbit[i] |= once[i] & cb[i];
            once[i] |= cb[i];
        }
    }
    H->ns = bits_count(H->sbit, wc);
    double tot = (4.0 + 8.0 * nt) * (double)H->ns + 12.0 * (double)wc;
    for (int t = 0; t < nt; t++) tot += 12.0 * (double)nh[t];
    if (tot > 8.0 * (double)n) {
        sla__free(a, H->sbit);
        H->sbit = NULL;
        H->ns = 0;
        H->full = sla__malloc(a, (size_t)n, sizeof *H->full);
        if (!H->full) goto out;
        for (int t = 0; t < nt; t++) H->h[t].full = H->full;
        st = SLA_OK;
        goto out;
    }
    size_t sum = 0;
    for (int t = 0; t < nt; t++) sum += (size_t)nh[t];
    H->hj = sla__malloc(a, sum > 0 ? sum : 1, sizeof *H->hj);
    H->hx = sla__malloc(a, sum > 0 ? sum : 1, sizeof *H->hx);
    H->sj = sla__malloc(a, H->ns > 0 ? (size_t)H->ns : 1, sizeof *H->sj);
    H->acc = sla__malloc(a, H->ns > 0 ? (size_t)H->ns * (size_t)nt : 1, sizeof *H->acc);
    H->srank = sla__malloc(a, wc > 0 ? wc : 1, sizeof *H->srank);
    if (!H->hj || !H->hx || !H->sj || !H->acc || !H->srank) goto out;
    bits_list(H->sbit, wc, H->sj);
    for (size_t i = 0, r = 0; i < wc; i++) {
        H->srank[i] = (int32_t)r;
        r += (size_t)pop64(H->sbit[i]);
    }
    size_t at = 0;
    for (int t = 0; t < nt; t++) {
        H->h[t].nh = nh[t];
        H->h[t].hj = H->hj + at;
        H->h[t].hx = H->hx + at;
        bits_list(bits + (size_t)t * per, wn, H->hj + at);
        at += (size_t)nh[t];
    }
    st = SLA_OK;
out:
    sla__free(a, bits);
    sla__free(a, nh);
    if (st != SLA_OK) hyb_free(a, H);
    return st;
}

/* The hybrid blocks of every large level for nt threads (Gauss-Seidel
 * smoother), or NULL with *sp when no level is large. */
sla_status sla__saamg_split_build(const sla_allocator *a, const saamg *g, int nt, struct sa_split **sp)
{
    *sp = NULL;
    if (nt <= 1 || g->nlev < 2 || g->lev[0].n < SLA_PAR_MIN) return SLA_OK;
    struct sa_split *s = sla__calloc(a, 1, sizeof *s);
    if (!s) return SLA_ERR_NOMEM;
    s->nt = nt;
    for (int l = 0; l < g->nlev - 1; l++)
        if (g->lev[l].n >= SLA_PAR_MIN && hyb_build(a, &g->lev[l], g->lev[l + 1].n, nt, &s->lev[l])) {
            sla__saamg_split_free(a, &s);
            return SLA_ERR_NOMEM;
        }
    *sp = s;
    return SLA_OK;
}

