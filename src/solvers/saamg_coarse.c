/* Smoothed-aggregation AMG coarse operators: the Galerkin product P^T A P and the
 * dense factor of the coarsest level. Part of precond=saamg (precond_saamg.c
 * gives the whole design):
 *  - Galerkin A_c = P^T A P by a row-wise sparse triple product over the
 *    transpose of P (accumulated in double, stored in float32: the same
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

/* Exact symmetry: both mirrored entries of C get their rounded mean. */
static void symmetrize(const sa_level *C, sa_real *vv)
{
    for (sla_int I = 0; I < C->n; I++)
        for (sla_int k = C->rp[I]; k < C->rp[I + 1]; k++) {
            sla_int J = C->ci[k];
            if (J <= I) continue;
            sla_int q = find_in_row(C, J, I);
            if (q < 0) continue; /* cannot happen for a symmetric pattern */
            sa_real m = (sa_real)(0.5 * ((double)vv[k] + (double)vv[q]));
            vv[k] = vv[q] = m;
        }
}

/* The Galerkin product's output, a block of consecutive coarse rows
 * [lo, hi): rows [lo, done) computed, their sorted columns and values in
 * ci, v (len of cap used); need: the length that row `done` needed when
 * it did not fit. */
typedef struct ga_chunk {
    sla_int lo, hi, done, len, cap, need;
    int32_t *ci;
    sa_real *v;
} ga_chunk;

/* Coarse rows of chunk c from c->done on, with one thread's marks mk,
 * accumulator ac and row scratch rc (nc each): row I of P^T A P is
 * accumulated in double in the order P^T row I, A row i, P row j (the
 * order galerkin_numeric repeats); its columns sorted and its values
 * rounded to sa_real are appended to the chunk. Stops at a row that does
 * not fit in c->cap (its marks cleared, so that the row can be redone). */
static void galerkin_rows(const sa_level *L, const sla_int *trp, const int32_t *tci,
                          const sa_real *tv, int32_t *mk, double *ac, int32_t *rc, sla_int *cnt,
                          ga_chunk *c)
{
    for (sla_int I = c->done; I < c->hi; I++) {
        sla_int m = 0;
        for (sla_int p = trp[I]; p < trp[I + 1]; p++) {
            sla_int i = tci[p];
            double pi = (double)tv[p];
            for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
                sla_int j = L->ci[k];
                double pa = pi * AVAL(L, k);
                for (sla_int q = L->prp[j]; q < L->prp[j + 1]; q++) {
                    int32_t J = L->pci[q];
                    if (mk[J] != (int32_t)I) {
                        mk[J] = (int32_t)I;
                        ac[J] = 0.0;
                        rc[m++] = J;
                    }
                    ac[J] += pa * (double)L->pval[q];
                }
            }
        }
        if (c->len + m > c->cap) { /* redo this row with a larger buffer */
            c->need = c->len + m;
            for (sla_int q = 0; q < m; q++) mk[rc[q]] = -1;
            break;
        }
        sort_cols(rc, m);
        for (sla_int q = 0; q < m; q++) {
            c->ci[c->len + q] = rc[q];
            c->v[c->len + q] = (sa_real)ac[rc[q]];
        }
        c->len += m;
        cnt[I + 1] = m;
        c->done = I + 1;
    }
}

/* C = P^T A P for level l (P, A in L), into level l + 1 (nc rows): one
 * pass (symbolic and numeric together) over blocks of coarse rows, each
 * into a buffer of its own (allocated here, outside the threads; a block
 * that outgrows its buffer stops, and is continued after the buffer
 * doubled), then the blocks concatenated into C. The values are those of
 * the former two-pass product (count, then fill), bitwise: the same
 * traversal and summation order. */
sla_status sla__saamg_galerkin(sla_ctx *ctx, const sla_allocator *a, const sa_level *L, int l,
                               sla_int nc, bool symmetric, int nt, sa_level *C)
{
    sla_status st = SLA_OK;
    sla_int n = L->n, pnnz = L->prp[n];
    /* blocks: enough for dynamic load balance, at least 64 rows each */
    sla_int nch = nc < 64 ? 1 : (nc + 63) / 64;
    if (nch > 16 * (sla_int)nt) nch = 16 * (sla_int)nt;
    sla_int *trp = sla__calloc(a, (size_t)nc + 1, sizeof *trp);
    int32_t *tci = sla__malloc(a, (size_t)(pnnz > 0 ? pnnz : 1), sizeof *tci);
    sa_real *tv = sla__malloc(a, (size_t)(pnnz > 0 ? pnnz : 1), sizeof *tv);
    int32_t *mark = sla__malloc(a, (size_t)nt * (size_t)(nc > 0 ? nc : 1), 2 * sizeof *mark);
    double *acc = sla__malloc(a, (size_t)nt * (size_t)(nc > 0 ? nc : 1), sizeof *acc);
    ga_chunk *ch = sla__calloc(a, (size_t)nch, sizeof *ch);
    if (!trp || !tci || !tv || !mark || !acc || !ch) {
        st = sla__saamg_nomem(ctx, l + 1);
        goto out;
    }
    transpose_p(L, nc, trp, tci, tv);
    C->n = nc;
    C->own_rp = sla__malloc(a, (size_t)nc + 1, sizeof *C->own_rp);
    if (!C->own_rp) {
        st = sla__saamg_nomem(ctx, l + 1);
        goto out;
    }
    for (sla_int k = 0; k < (sla_int)nt * nc; k++) mark[k] = -1;
    /* first guess of the entries per coarse row: (entries of A per row) x
     * (entries of P per row), enough for 2D and 3D Poisson's first levels */
    double guess = n > 0 ? (double)L->rp[n] / (double)n * ((double)pnnz / (double)n) : 1.0;
    if (guess < 8.0) guess = 8.0;
    for (sla_int c = 0; c < nch; c++) {
        ch[c].lo = ch[c].done = nc * c / nch;
        ch[c].hi = nc * (c + 1) / nch;
        ch[c].cap = (sla_int)(guess * (double)(ch[c].hi - ch[c].lo)) + 16;
    }
    for (;;) {
        for (sla_int c = 0; c < nch; c++) { /* the unfinished blocks' buffers */
            ga_chunk *b = &ch[c];
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
#pragma omp parallel num_threads(nt) if (nt > 1 && nch > 1)
        {
            int t = 0;
#ifdef _OPENMP
            t = omp_get_thread_num();
#endif
            int32_t *mk = mark + (size_t)t * (size_t)nc; /* last coarse row that met J */
            double *ac = acc + (size_t)t * (size_t)nc;  /* its sum in that row */
            int32_t *rc = mark + (size_t)nt * (size_t)nc + (size_t)t * (size_t)nc;
#pragma omp for schedule(dynamic, 1)
            for (sla_int c = 0; c < nch; c++)
                if (ch[c].done < ch[c].hi) galerkin_rows(L, trp, tci, tv, mk, ac, rc, C->own_rp, &ch[c]);
        }
        bool more = false;
        for (sla_int c = 0; c < nch; c++) more = more || ch[c].done < ch[c].hi;
        if (!more) break;
    }
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
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && nch > 1)
    for (sla_int c = 0; c < nch; c++) {
        sla_int base = C->own_rp[ch[c].lo];
        memcpy(C->own_ci + base, ch[c].ci, (size_t)ch[c].len * sizeof *C->own_ci);
        memcpy(vv + base, ch[c].v, (size_t)ch[c].len * sizeof *vv);
    }
    C->rp = C->own_rp;
    C->ci = C->own_ci;
    if (symmetric) symmetrize(C, vv);
    C->val = vv;
    C->f32 = sizeof(sa_real) == sizeof(float);
out:
    if (ch)
        for (sla_int c = 0; c < nch; c++) {
            sla__free(a, ch[c].ci);
            sla__free(a, ch[c].v);
        }
    sla__free(a, ch);
    sla__free(a, trp);
    sla__free(a, tci);
    sla__free(a, tv);
    sla__free(a, mark);
    sla__free(a, acc);
    return st;
}

/* Refresh: the values of C = P^T A P on C's existing pattern (the
 * symbolic product of the set-up), one numeric pass: per coarse row, the
 * same traversal and summation order as the set-up (so equal values give
 * bitwise equal operators) into a dense accumulator that C's own column
 * list reads and clears; no marks, no counting pass, no sort. P^T is
 * rebuilt here as a transient (20 B per fine unknown on 2D Poisson that
 * the solve need not hold). */
sla_status sla__saamg_galerkin_numeric(sla_ctx *ctx, const sla_allocator *a, const sa_level *L,
                                       int l, bool symmetric, int nt, sa_level *C)
{
    sla_status st = SLA_OK;
    sla_int nc = C->n, pnnz = L->prp[L->n];
    sla_int *trp = sla__calloc(a, (size_t)nc + 1, sizeof *trp);
    int32_t *tci = sla__malloc(a, (size_t)(pnnz > 0 ? pnnz : 1), sizeof *tci);
    sa_real *tv = sla__malloc(a, (size_t)(pnnz > 0 ? pnnz : 1), sizeof *tv);
    double *acc = sla__calloc(a, (size_t)nt * (size_t)(nc > 0 ? nc : 1), sizeof *acc);
    if (!trp || !tci || !tv || !acc) {
        st = sla__saamg_nomem(ctx, l + 1);
        goto out;
    }
    transpose_p(L, nc, trp, tci, tv);
    sa_real *vv = C->own_val;
#pragma omp parallel num_threads(nt) if (nt > 1 && nc >= 256)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        double *ac = acc + (size_t)t * (size_t)nc;
#pragma omp for schedule(dynamic, 64)
        for (sla_int I = 0; I < nc; I++) {
            for (sla_int p = trp[I]; p < trp[I + 1]; p++) {
                sla_int i = tci[p];
                double pi = (double)tv[p];
                for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
                    sla_int j = L->ci[k];
                    double pa = pi * AVAL(L, k);
                    for (sla_int q = L->prp[j]; q < L->prp[j + 1]; q++)
                        ac[L->pci[q]] += pa * (double)L->pval[q];
                }
            }
            for (sla_int k = C->rp[I]; k < C->rp[I + 1]; k++) {
                vv[k] = (sa_real)ac[C->ci[k]];
                ac[C->ci[k]] = 0.0;
            }
        }
    }
    if (symmetric) symmetrize(C, vv);
out:
    sla__free(a, trp);
    sla__free(a, tci);
    sla__free(a, tv);
    sla__free(a, acc);
    return st;
}

/* Dense factor of the coarsest level. */
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
            bool ok = true;
            for (sla_int j = 0; j < n && ok; j++) {
                double d = F[j + j * n];
                for (sla_int k = 0; k < j; k++) d -= F[j + k * n] * F[j + k * n];
                if (!(d > 0.0)) {
                    ok = false;
                    break;
                }
                d = sqrt(d);
                F[j + j * n] = d;
                for (sla_int i = j + 1; i < n; i++) {
                    double s = F[i + j * n];
                    for (sla_int k = 0; k < j; k++) s -= F[i + k * n] * F[j + k * n];
                    F[i + j * n] = s / d;
                }
            }
            if (ok) {
                sla__free(a, g->piv); /* an earlier LU's */
                g->piv = NULL;
                return SLA_OK;
            }
            chol = false;
            continue;
        }
        if (!g->piv) g->piv = sla__malloc(a, (size_t)n, sizeof *g->piv);
        if (!g->piv) return sla__saamg_nomem(ctx, g->nlev - 1);
        double amax = 0.0;
        for (sla_int k = 0; k < n * n; k++) amax = fmax(amax, fabs(F[k]));
        for (sla_int j = 0; j < n; j++) {
            sla_int p = j;
            for (sla_int i = j + 1; i < n; i++)
                if (fabs(F[i + j * n]) > fabs(F[p + j * n])) p = i;
            g->piv[j] = (int)p;
            if (!(fabs(F[p + j * n]) > 1e-14 * amax))
                return sla__error(ctx, SLA_ERR_SINGULAR,
                                  "precond saamg: the coarsest operator (%lld rows, level %d) is "
                                  "singular (is A singular, e.g. a pure Neumann problem?)",
                                  (long long)n, g->nlev - 1);
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
        return SLA_OK;
    }
    return SLA_OK;
}
