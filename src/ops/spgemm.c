/* Sparse-sparse matrix product C = A B (SpGEMM): a symbolic
 * phase that builds C's pattern once (sorted columns), a numeric phase
 * (Gustavson's row-by-row product into a per-thread dense accumulator,
 * gathered along C's known pattern) for every batch of values, the two
 * together (sla_spgemm) for a product needed once (a counting pass, then
 * columns and values in one pass; on one thread no counting pass, on two
 * only over a middle band of rows; a row whose products are the row
 * before's shifted, as a grid stencil's, reuses that row's ranks and
 * product map instead of marking and ranking). OpenMP over row chunks of
 * about equal work; the products' marks are zero (calloc: fresh pages need
 * no write pass) and their stamps row + 1 (or -1 - row), never 0. Its VJP:
 * spgemm_vjp.c. */
#include "algebra_internal.h"

#include <string.h>

/* Number of row chunks for nt threads: several per thread, so that a
 * thread slowed by other load hands its share to the others. */
static int nchunks(int nt, sla_int m)
{
    if (nt <= 1 || m < 1024) return 1;
    return 8 * nt;
}

/* bounds[0..nch]: rows split so that each chunk holds about 1/nch of
 * work[m] (a prefix sum over rows: work[i] = work of rows < i). */
static void split_rows(const sla_int *work, sla_int m, int nch, sla_int *bounds)
{
    bounds[0] = 0;
    for (int c = 1; c < nch; c++) {
        sla_int goal = (sla_int)((double)work[m] * c / nch), lo = bounds[c - 1], hi = m;
        while (lo < hi) { /* the first row whose prefix reaches goal */
            sla_int mid = lo + (hi - lo) / 2;
            if (work[mid] < goal) lo = mid + 1;
            else hi = mid;
        }
        bounds[c] = lo;
    }
    bounds[nch] = m;
}

/* Ranks of the 16 (32) columns buf[0..16) (distinct, padded with
 * INT32_MAX): r[k] = #{j < cnt : buf[j] < buf[k]}, accumulated for all k at
 * once, one broadcast and 2 (4) vector compares and subtractions per
 * column, so no branch depends on the data (an insertion sort mispredicts
 * one for nearly every column: 2-D Poisson squared, 1e6 rows of 13, 19 ms
 * against 10 ms here). GNU C vectors (split into SSE2 halves on a plain
 * x86-64 build); a scalar loop elsewhere. */
#if defined(__GNUC__)
typedef int32_t v8i __attribute__((vector_size(32)));

static inline void ranks16(const int32_t *buf, sla_int cnt, int32_t *r)
{
    v8i b0, b1, r0 = {0}, r1 = {0};
    memcpy(&b0, buf, sizeof b0);
    memcpy(&b1, buf + 8, sizeof b1);
    for (sla_int j = 0; j < cnt; j++) {
        v8i v = r0 * 0 + buf[j]; /* buf[j] in every lane */
        r0 -= b0 > v;            /* a true compare is -1 */
        r1 -= b1 > v;
    }
    memcpy(r, &r0, sizeof r0);
    memcpy(r + 8, &r1, sizeof r1);
}

static inline void ranks32(const int32_t *buf, sla_int cnt, int32_t *r)
{
    v8i b[4], q[4] = {{0}};
    memcpy(b, buf, sizeof b);
    for (sla_int j = 0; j < cnt; j++) {
        v8i v = q[0] * 0 + buf[j];
        for (int t = 0; t < 4; t++) q[t] -= b[t] > v;
    }
    memcpy(r, q, sizeof q);
}
#else
static inline void ranks_w(const int32_t *buf, sla_int cnt, int32_t *r, int w)
{
    for (int k = 0; k < w; k++) r[k] = 0;
    for (sla_int j = 0; j < cnt; j++)
        for (int k = 0; k < w; k++) r[k] += buf[k] > buf[j];
}
static inline void ranks16(const int32_t *buf, sla_int cnt, int32_t *r) { ranks_w(buf, cnt, r, 16); }
static inline void ranks32(const int32_t *buf, sla_int cnt, int32_t *r) { ranks_w(buf, cnt, r, 32); }
#endif

/* One thread's row buffers (each with room for the longest row and at
 * least 32 columns): the row being placed and the one placed before it,
 * with the ranks of that one's columns (last: its number of entries, -1
 * when no ranks are kept). */
#define MAP_MAX 64
typedef struct {
    int32_t *b[2];
    int32_t r[32];
    sla_int last;
    int cur;
    /* A row's product map (map_row): np products (0: none kept) from la
     * entries of A with lb[k] products each, their columns pc, each one's
     * place in the row, and the row's nc sorted columns cc */
    int np, la, nc;
    int32_t lb[MAP_MAX], pc[MAP_MAX], cc[32];
    uint8_t place[MAP_MAX];
} row_ws;

static void row_ws_init(row_ws *w, int32_t *space, size_t len)
{
    w->b[0] = space;
    w->b[1] = space + len;
    w->last = -1;
    w->cur = 0;
    w->np = 0;
}

/* Whether b[0..cnt) is p[0..cnt) shifted by one offset (b[k] - p[k] the
 * same for every k; both padded to 16 when cnt <= 16): then the two rows'
 * columns have the same ranks. Wrapping unsigned differences. */
static inline bool shifted(const int32_t *b, const int32_t *p, sla_int cnt)
{
    uint32_t d = (uint32_t)b[0] - (uint32_t)p[0];
#if defined(__GNUC__)
    if (cnt <= 16) {
        typedef uint32_t v8u __attribute__((vector_size(32)));
        v8u b0, b1, p0, p1, i0 = {0, 1, 2, 3, 4, 5, 6, 7}, i1 = i0 + 8;
        memcpy(&b0, b, sizeof b0);
        memcpy(&b1, b + 8, sizeof b1);
        memcpy(&p0, p, sizeof p0);
        memcpy(&p1, p + 8, sizeof p1);
        v8u c = i0 * 0 + (uint32_t)cnt, dv = i0 * 0 + d;
        v8i t = (((b0 - p0) == dv) | (i0 >= c)) & (((b1 - p1) == dv) | (i1 >= c));
        uint64_t x[4];
        memcpy(x, &t, sizeof x);
        return (x[0] & x[1] & x[2] & x[3]) == ~(uint64_t)0;
    }
#endif
    for (sla_int k = 1; k < cnt; k++)
        if ((uint32_t)b[k] - (uint32_t)p[k] != d) return false;
    return true;
}

/* Write the cnt distinct columns of w's current row of C ascending to out
 * and, with vals, their values ac[col] to vals (clearing ac). Rows of up to
 * 32 by rank: the last row's ranks when this row's columns are the last
 * row's shifted (a stencil's rows: 2-D Poisson 1e6 squared, best of 9-15,
 * 3 interleaved rounds: 1 thread 0.084-0.086 -> 0.077-0.078 s, 2 threads
 * 0.046-0.047 -> 0.043 s), else computed; longer rows sorted. Returns
 * whether the ranks were the last row's. */
static inline bool place_row(row_ws *w, sla_int cnt, int32_t *out, double *vals, double *ac)
{
    int32_t *buf = w->b[w->cur], *r = w->r;
    if (cnt <= 32) {
        for (sla_int k = cnt; k < (cnt <= 16 ? 16 : 32); k++) buf[k] = INT32_MAX;
        bool same = cnt == w->last && shifted(buf, w->b[w->cur ^ 1], cnt);
        if (!same) {
            if (cnt <= 16) ranks16(buf, cnt, r);
            else ranks32(buf, cnt, r);
        }
        w->last = cnt;
        w->cur ^= 1;
        for (sla_int k = 0; k < cnt; k++) out[r[k]] = buf[k];
        if (vals)
            for (sla_int k = 0; k < cnt; k++) {
                vals[r[k]] = ac[buf[k]];
                ac[buf[k]] = 0.0;
            }
        return same;
    }
    w->last = -1;
    memcpy(out, buf, (size_t)cnt * sizeof *out);
    sla__alg_sort(out, cnt);
    if (vals)
        for (sla_int p = 0; p < cnt; p++) {
            vals[p] = ac[out[p]];
            ac[out[p]] = 0.0;
        }
    return false;
}

/* Keep row i's product map in w (its sorted columns out[0..cnt) just
 * placed): for each product a_ij b_jk, in the order the gather meets them,
 * its column and the place of that column in the row; none (np = 0) when
 * the row has more than MAP_MAX products or more than 32 entries. */
static void map_row(const sla_matrix *A, const sla_matrix *B, sla_int i, row_ws *w,
                    const int32_t *out, sla_int cnt)
{
    const sla_int *arp = A->rowptr, *brp = B->rowptr;
    const int32_t *aci = A->colind, *bci = B->colind;
    int t = 0, k = 0;
    w->np = 0;
    if (cnt > 32 || arp[i + 1] - arp[i] > MAP_MAX) return;
    for (sla_int p = arp[i]; p < arp[i + 1]; p++, k++) {
        int32_t j = aci[p];
        if (t + (brp[j + 1] - brp[j]) > MAP_MAX) return;
        w->lb[k] = (int32_t)(brp[j + 1] - brp[j]);
        for (sla_int q = brp[j]; q < brp[j + 1]; q++, t++) {
            int lo = 0, hi = (int)cnt - 1; /* out holds bci[q]: find it */
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (out[mid] < bci[q]) lo = mid + 1;
                else hi = mid;
            }
            w->pc[t] = bci[q];
            w->place[t] = (uint8_t)lo;
        }
    }
    memcpy(w->cc, out, (size_t)cnt * sizeof *out);
    w->np = t;
    w->la = k;
    w->nc = (int)cnt;
}

/* Row i by w's product map, when row i's products are the mapped row's
 * shifted: as many entries of A, as many products from each, and every
 * product's column the mapped one's plus one offset e (a stencil's rows).
 * Then its columns are the mapped row's plus e, each product lands in the
 * mapped place, and no stamp, dense row or ranking is needed; the values
 * are the same sums in the same order as gather_row's (from +0.0, in
 * product order), bit for bit. Checked before anything is written;
 * returns the row's entries, or -1 (nothing written) when it differs. */
static inline sla_int mapped_row(const sla_matrix *A, const sla_matrix *B, const double *av,
                                 const double *bv, sla_int i, const row_ws *w, int32_t *ci,
                                 double *vals, sla_int at, bool down)
{
    const sla_int *arp = A->rowptr, *brp = B->rowptr;
    const int32_t *aci = A->colind, *bci = B->colind;
    if (arp[i + 1] - arp[i] != w->la) return -1;
    uint32_t e = 0, bad = 0;
    int t = 0, k = 0;
    for (sla_int p = arp[i]; p < arp[i + 1]; p++, k++) {
        int32_t j = aci[p];
        if (brp[j + 1] - brp[j] != w->lb[k]) return -1;
        for (sla_int q = brp[j]; q < brp[j + 1]; q++, t++) {
            uint32_t d = (uint32_t)bci[q] - (uint32_t)w->pc[t];
            e = t == 0 ? d : e;
            bad |= d ^ e;
        }
    }
    if (bad) return -1;
    sla_int nc = w->nc, o = down ? at - nc : at;
    int32_t *out = ci + o;
    for (sla_int c = 0; c < nc; c++) out[c] = (int32_t)((uint32_t)w->cc[c] + e);
    if (vals) {
        double *v = vals + o;
        for (sla_int c = 0; c < nc; c++) v[c] = 0.0;
        t = 0;
        for (sla_int p = arp[i]; p < arp[i + 1]; p++) {
            double x = av[p];
            int32_t j = aci[p];
            for (sla_int q = brp[j]; q < brp[j + 1]; q++, t++) v[w->place[t]] += x * bv[q];
        }
    }
    return nc;
}

/* Row i of C = A B (Gustavson): its distinct columns gathered into buf
 * (every column is written, the cursor advances only for one without this
 * row's stamp in mk), with ac (a zero dense row) and av, bv its values
 * accumulated there. Returns the row's number of entries; place_row then
 * writes them sorted (and ac zero again). */
static inline sla_int gather_row(const sla_matrix *A, const sla_matrix *B, const double *av,
                                 const double *bv, sla_int i, int32_t stamp, int32_t *mk,
                                 int32_t *buf, double *ac)
{
    const sla_int *arp = A->rowptr, *brp = B->rowptr;
    const int32_t *aci = A->colind, *bci = B->colind;
    sla_int cnt = 0;
    for (sla_int p = arp[i]; p < arp[i + 1]; p++) {
        int32_t j = aci[p];
        if (ac) {
            double x = av[p];
            for (sla_int q = brp[j]; q < brp[j + 1]; q++) {
                int32_t col = bci[q];
                buf[cnt] = col;
                cnt += mk[col] != stamp;
                mk[col] = stamp;
                ac[col] += x * bv[q]; /* c_i,col += a_ij b_j,col */
            }
            continue;
        }
        for (sla_int q = brp[j]; q < brp[j + 1]; q++) {
            int32_t col = bci[q];
            buf[cnt] = col;
            cnt += mk[col] != stamp;
            mk[col] = stamp;
        }
    }
    return cnt;
}

/* Row i placed sorted at entry at of ci (values at vals, when given), or,
 * down, ending at entry at: by w's product map when the row's products are
 * the mapped row's shifted (mapped_row), else gathered into w's current
 * buffer and placed; a gathered row whose columns are the last row's
 * shifted becomes the map (a run of a stencil's rows). 2-D Poisson 1e6
 * squared, best of 9-15, 3 interleaved rounds: 1 thread 0.077-0.078 ->
 * 0.067-0.068 s, 2 threads 0.043 -> 0.037 s; 3-D 1e6 (25 columns from 49
 * products per row), 2 threads 0.098-0.104 -> 0.067-0.078 s; a random
 * matrix (4e5 rows of 5, no map ever kept) level within the noise
 * (1 thread, best of 7, 5 rounds: medians of the bests 0.362 / 0.365 s).
 * Returns its number of entries. */
static sla_int fill_row(const sla_matrix *A, const sla_matrix *B, const double *av,
                        const double *bv, sla_int i, int32_t stamp, int32_t *mk, row_ws *w,
                        double *ac, int32_t *ci, double *vals, sla_int at, bool down)
{
    if (w->np > 0) {
        sla_int nc = mapped_row(A, B, av, bv, i, w, ci, vals, at, down);
        if (nc >= 0) return nc;
    }
    sla_int cnt = gather_row(A, B, av, bv, i, stamp, mk, w->b[w->cur], ac);
    at -= down ? cnt : 0;
    if (place_row(w, cnt, ci + at, vals ? vals + at : NULL, ac)) map_row(A, B, i, w, ci + at, cnt);
    return cnt;
}

static const double *f64_values(sla_ctx *ctx, const sla_matrix *M, sla_int ib, double **tmp);

/* The number of distinct columns of row i of C = A B (the counting pass:
 * stamp marks only, nothing written). */
static inline sla_int count_row(const sla_matrix *A, const sla_matrix *B, sla_int i,
                                int32_t stamp, int32_t *mk)
{
    const sla_int *arp = A->rowptr, *brp = B->rowptr;
    const int32_t *aci = A->colind, *bci = B->colind;
    sla_int cnt = 0;
    for (sla_int p = arp[i]; p < arp[i + 1]; p++) {
        int32_t j = aci[p];
        for (sla_int q = brp[j]; q < brp[j + 1]; q++) {
            int32_t col = bci[q];
            cnt += mk[col] != stamp;
            mk[col] = stamp;
        }
    }
    return cnt;
}

/* C's pattern (sorted columns) in two passes over row chunks of about equal
 * nnz(A) (Gustavson, a per-thread marker keyed by column, no global flop
 * count): pass 1 counts the distinct columns of each row, a prefix sum over
 * chunks and rows places them, pass 2 gathers each row's columns (every
 * column is written, the cursor advances only for a new one) and places
 * them sorted (place_row). With av, bv (one value array each, float64)
 * pass 2 also accumulates the row's values in a per-thread dense row and
 * writes them with the columns: the fused product. Without, nbC zero value
 * arrays. The large arrays are first written by the threads that fill
 * them, and backed by huge pages where the allocator allows
 * (sla__advise_huge): their page faults cost as much as pass 1 else. */
static sla_status symbolic(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B, sla_int nbC,
                           const double *av, const double *bv, sla_matrix **C)
{
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_status st;
    sla_int m = A->nrows, n = B->ncols, nw = n > 0 ? n : 1;
    int nt = sla__threads(ctx), nch = nchunks(nt, m);
    const sla_int *arp = A->rowptr;
    sla_int *rp = sla__malloc(&a, (size_t)m + 1, sizeof *rp);
    sla_int *bounds = sla__malloc(&a, 3 * (size_t)nch + 2, sizeof *bounds);
    int32_t *mark = sla__calloc(&a, (size_t)nt * (size_t)nw, sizeof *mark); /* 0: no stamp */
    double *acc = av ? sla__calloc(&a, (size_t)nt * (size_t)nw, sizeof *acc) : NULL;
    int32_t *ci = NULL, *scratch = NULL;
    if (!rp || !bounds || !mark || (av && !acc)) goto nomem;
    sla__advise_huge(&a, rp, ((size_t)m + 1) * sizeof *rp);
    sla__advise_huge(&a, mark, (size_t)nt * (size_t)nw * sizeof *mark);
    if (acc) sla__advise_huge(&a, acc, (size_t)nt * (size_t)nw * sizeof *acc);
    sla_int *off = bounds + nch + 1;  /* off[c]: first entry of chunk c */
    sla_int *wide = off + nch + 1;    /* wide[c]: chunk c's longest row of C */
    split_rows(arp, m, nch, bounds); /* A's rowptr: nnz(A) before each row */
    /* pass 1: rp[i + 1] = the number of distinct columns of row i, off[c + 1] the chunk's */
#pragma omp parallel num_threads(nt) if (nch > 1)
    {
        int32_t *mk = mark + (size_t)sla__alg_tid() * (size_t)nw;
#pragma omp for schedule(dynamic, 1)
        for (int c = 0; c < nch; c++) {
            sla_int tot = 0, w = 0;
            for (sla_int i = bounds[c]; i < bounds[c + 1]; i++) {
                sla_int cnt = count_row(A, B, i, (int32_t)(i + 1), mk);
                rp[i + 1] = cnt;
                tot += cnt;
                w = cnt > w ? cnt : w;
            }
            off[c + 1] = tot;
            wide[c] = w;
        }
    }
    off[0] = 0;
    sla_int wmax = 0;
    for (int c = 0; c < nch; c++) {
        off[c + 1] += off[c];
        wmax = wide[c] > wmax ? wide[c] : wmax;
    }
    sla_int nnzC = off[nch];
    /* each thread's buffer: the longest row (at least 32), on cache lines of its own */
    sla_int sw = ((wmax > 32 ? wmax : 32) + 1 + 15) & ~(sla_int)15;
    ci = sla__malloc(&a, (size_t)(nnzC > 0 ? nnzC : 1), sizeof *ci);
    scratch = sla__malloc(&a, 2 * (size_t)nt * (size_t)sw + 16, sizeof *scratch);
    if (!ci || !scratch) goto nomem;
    sla__advise_huge(&a, ci, (size_t)nnzC * sizeof *ci);
    rp[0] = 0;
    rp[m] = nnzC; /* the count wrap reads; pass 2 writes the rest */
    if ((st = sla__alg_wrap_as(ctx, m, n, nbC, rp, ci, false, C))) { /* frees rp and ci */
        sla__free(&a, mark);
        sla__free(&a, acc);
        sla__free(&a, scratch);
        sla__free(&a, bounds);
        return st;
    }
    double *vals = (double *)(*C)->values;
    sla__advise_huge(&a, vals, (size_t)nbC * (size_t)nnzC * sizeof *vals);
    /* pass 2: row starts, and each row's columns (and values) in place */
#pragma omp parallel num_threads(nt) if (nch > 1)
    {
        int tid = sla__alg_tid();
        int32_t *mk = mark + (size_t)tid * (size_t)nw;
        row_ws w;
        row_ws_init(&w, scratch + 2 * (size_t)tid * (size_t)sw, (size_t)sw);
        double *ac = acc ? acc + (size_t)tid * (size_t)nw : NULL;
#pragma omp for schedule(dynamic, 1)
        for (int c = 0; c < nch; c++) {
            sla_int at = off[c];
            for (sla_int i = bounds[c]; i < bounds[c + 1]; i++) {
                /* stamp -1 - i: not pass 1's, not 0 */
                sla_int cnt = fill_row(A, B, av, bv, i, (int32_t)(-1 - i), mk, &w, ac, ci,
                                       ac ? vals : NULL, at, false);
                if (!ac) /* the symbolic C's values are zero */
                    for (sla_int b = 0; b < nbC; b++)
                        memset(vals + b * nnzC + at, 0, (size_t)cnt * sizeof *vals);
                at += cnt;
                rp[i + 1] = at;
            }
        }
    }
    sla__free(&a, mark);
    sla__free(&a, acc);
    sla__free(&a, scratch);
    sla__free(&a, bounds);
    return sla__ok(ctx, SLA_OK);
nomem:
    sla__free(&a, rp);
    sla__free(&a, bounds);
    sla__free(&a, mark);
    sla__free(&a, acc);
    sla__free(&a, scratch);
    sla__free(&a, ci);
    return sla__error(ctx, SLA_ERR_NOMEM, "sla_spgemm_symbolic: out of memory");
}

/* Where the two threads of fused_onepass split the rows: where the
 * products a_ij b_jk before the row reach half of all, counted on a
 * sample of about SPLIT_SAMPLE rows (every stride-th) and summed in
 * SPLIT_BLOCKS blocks of rows, the split interpolated inside its block.
 * The split is fixed before the work, so it holds only where the rows
 * cost alike: -1 (count every row first, in chunks that the threads share
 * as they go) when the blocks' sampled products per row differ by more
 * than half (a grid's border rows: ~0.7 of the others'). A row's cost is
 * not its products alone (its entries of C weigh too): A (2-D Poisson 1e6)
 * times a B whose first half of rows holds only a diagonal took 0.052 s
 * split by nnz(A) and 0.053 s by products, against 0.044 s counted
 * first. */
#define SPLIT_SAMPLE 16384
#define SPLIT_BLOCKS 64
static sla_int split_at(const sla_matrix *A, const sla_matrix *B)
{
    sla_int m = A->nrows, stride = m / SPLIT_SAMPLE > 1 ? m / SPLIT_SAMPLE : 1;
    double blk[SPLIT_BLOCKS] = {0.0}, rows[SPLIT_BLOCKS] = {0.0}, tot = 0.0;
    for (sla_int i = 0; i < m; i += stride) {
        sla_int w = 0;
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            w += B->rowptr[A->colind[p] + 1] - B->rowptr[A->colind[p]];
        int b = (int)((double)i * SPLIT_BLOCKS / (double)m);
        blk[b] += (double)w;
        rows[b] += 1.0;
        tot += (double)w;
    }
    double lo = -1.0, hi = 0.0;
    for (int b = 0; b < SPLIT_BLOCKS; b++) {
        if (rows[b] == 0.0) continue;
        double avg = blk[b] / rows[b];
        lo = lo < 0.0 || avg < lo ? avg : lo;
        hi = avg > hi ? avg : hi;
    }
    if (!(tot > 0.0) || hi > 1.5 * lo) return -1;
    double goal = tot / 2.0, sum = 0.0;
    for (int b = 0; b < SPLIT_BLOCKS; b++) {
        if (sum + blk[b] < goal) {
            sum += blk[b];
            continue;
        }
        double r0 = (double)m * b / SPLIT_BLOCKS, r1 = (double)m * (b + 1) / SPLIT_BLOCKS;
        return (sla_int)(r0 + (r1 - r0) * (goal - sum) / blk[b]);
    }
    return m;
}

/* Rows [lo, hi) of the fused product written from entry at on (their row
 * pointers too: rp[i + 1] = where row i ends); returns where the last one
 * ended. */
static sla_int write_rows(const sla_matrix *A, const sla_matrix *B, const double *av,
                          const double *bv, sla_int lo, sla_int hi, sla_int at, int32_t *mk,
                          row_ws *w, double *ac, int32_t *ci, double *vals, sla_int *rp)
{
    for (sla_int i = lo; i < hi; i++) {
        at += fill_row(A, B, av, bv, i, (int32_t)(i + 1), mk, w, ac, ci, vals, at, false);
        rp[i + 1] = at;
    }
    return at;
}

/* The middle rows around the split, +-m / MID_DIV, in MID_CHUNKS chunks:
 * counted first, then written by whichever thread is free. */
#define MID_DIV 12
#define MID_CHUNKS 32

/* Where middle chunk c of rows [s0, s1) starts. */
static sla_int mid_row(sla_int s0, sla_int s1, int c)
{
    return s0 + (sla_int)((double)(s1 - s0) * c / MID_CHUNKS);
}

/* Rows [lo, hi) written downward: row hi - 1 ends at entry at, each row
 * before it ends where the next one starts (rp[i] = where row i starts);
 * returns where row lo starts. */
static sla_int write_rows_down(const sla_matrix *A, const sla_matrix *B, const double *av,
                               const double *bv, sla_int lo, sla_int hi, sla_int at,
                               int32_t *mk, row_ws *w, double *ac, int32_t *ci, double *vals,
                               sla_int *rp)
{
    for (sla_int i = hi; i-- > lo;) {
        at -= fill_row(A, B, av, bv, i, (int32_t)(i + 1), mk, w, ac, ci, vals, at, true);
        rp[i] = at;
    }
    return at;
}

/* The fused product in one pass: the columns and values arrays are
 * allocated for `cap` entries (nnz(A) x B's longest row, at least nnz(C);
 * the pages never written cost address space only). wbound bounds a row's
 * entries. On one thread each row is written where the last one ended,
 * nothing counted (2-D Poisson 1e6: the counting pass it saves is 14 of 85
 * ms). On two, around the split s (split_at): thread 0 writes rows
 * [0, s0) downward from entry P = nnz(A's rows [0, s0)) x B's longest row
 * (at least their entries of C; row s0 - 1 first), thread 1 rows [s1, m)
 * upward from P + the entries of the middle rows [s0, s1) (s -+ m / 12,
 * counted first by both threads, in 32 chunks), and then each thread
 * writes middle chunks at their counted places until none is left, so the
 * rows' costs need not be known beforehand to keep the threads busy alike.
 * C's arrays start where row 0 landed, inside the allocations (colind_mem,
 * values_mem; the untouched pages before it cost address space only), and
 * the row pointers move by that offset. Against thread 1 counting rows
 * [0, s) first to know where row s starts (commit d5523e2), 2 threads,
 * interleaved: 2-D Poisson 1e6 squared 0.054 -> 0.045 s, 3-D 0.104-0.106
 * -> 0.099-0.102 s (best of 15); through Python 0.048 -> 0.042 s (before
 * the rank reuse and the product map, which came after). The same rows,
 * columns and sums as one thread, bit for bit. */
static sla_status fused_onepass(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                                const double *av, const double *bv, sla_int cap,
                                sla_int wbound, int nt, sla_int s, sla_matrix **C)
{
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_int m = A->nrows, n = B->ncols, nw = n > 0 ? n : 1;
    size_t sb = (size_t)wbound + 33; /* one thread's row buffer */
    sla_int *rp = sla__malloc(&a, (size_t)m + 1, sizeof *rp);
    int32_t *ci = sla__malloc(&a, (size_t)(cap > 0 ? cap : 1), sizeof *ci);
    double *vals = sla__malloc(&a, (size_t)(cap > 0 ? cap : 1), sizeof *vals);
    int32_t *mark = sla__calloc(&a, (size_t)nt * (size_t)nw, sizeof *mark); /* 0: no stamp */
    double *acc = sla__calloc(&a, (size_t)nt * (size_t)nw, sizeof *acc);
    int32_t *buf = sla__malloc(&a, 2 * (size_t)nt * sb, sizeof *buf);
    sla_matrix *M = NULL;
    int bad = 0;
    if (rp && ci && vals && mark && acc && buf) {
        sla__advise_huge(&a, rp, ((size_t)m + 1) * sizeof *rp);
        sla__advise_huge(&a, ci, (size_t)cap * sizeof *ci);
        sla__advise_huge(&a, vals, (size_t)cap * sizeof *vals);
        sla__advise_huge(&a, mark, (size_t)nt * (size_t)nw * sizeof *mark);
        sla__advise_huge(&a, acc, (size_t)nt * (size_t)nw * sizeof *acc);
        sla_int end = 0, off = 0; /* C's entries: [off, end) of the allocations */
        rp[0] = 0;
        if (nt == 1) {
            row_ws w;
            row_ws_init(&w, buf, sb);
            end = write_rows(A, B, av, bv, 0, m, 0, mark, &w, acc, ci, vals, rp);
        }
        else {
            /* the middle rows [s0, s1) in MID_CHUNKS chunks, counted first */
            sla_int s0 = s - m / MID_DIV > 0 ? s - m / MID_DIV : 0;
            sla_int s1 = s + m / MID_DIV < m ? s + m / MID_DIV : m;
            sla_int piv = A->rowptr[s0] * (cap / (A->nnz > 0 ? A->nnz : 1));
            sla_int moff[MID_CHUNKS + 1];
            int next = 0;
#pragma omp parallel num_threads(2)
            {
                int tid = sla__alg_tid(), got = 1;
#ifdef _OPENMP
                got = omp_get_num_threads();
#endif
                int32_t *mk = mark + (size_t)tid * (size_t)nw;
                row_ws w;
                row_ws_init(&w, buf + 2 * (size_t)tid * sb, sb);
                double *ac = acc + (size_t)tid * (size_t)nw;
                if (got == 1) /* one thread granted: all rows, upward from 0 (off stays 0) */
                    end = write_rows(A, B, av, bv, 0, m, 0, mk, &w, ac, ci, vals, rp);
                else {
                    for (int c = tid; c < MID_CHUNKS; c += 2) { /* stamps -1 - i: not a write's */
                        sla_int r1 = mid_row(s0, s1, c + 1), k = 0;
                        for (sla_int i = mid_row(s0, s1, c); i < r1; i++)
                            k += count_row(A, B, i, (int32_t)(-1 - i), mk);
                        moff[c + 1] = k;
                    }
#pragma omp barrier
#pragma omp single
                    {
                        moff[0] = rp[s0] = piv;
                        for (int c = 0; c < MID_CHUNKS; c++) moff[c + 1] += moff[c];
                    }
                    if (tid == 0)
                        off = write_rows_down(A, B, av, bv, 0, s0, piv, mk, &w, ac, ci, vals, rp);
                    else
                        end = write_rows(A, B, av, bv, s1, m, moff[MID_CHUNKS], mk, &w, ac, ci,
                                         vals, rp);
                    for (;;) { /* then the middle's chunks, whoever is free */
                        int c;
#pragma omp atomic capture
                        c = next++;
                        if (c >= MID_CHUNKS) break;
                        sla_int e = write_rows(A, B, av, bv, mid_row(s0, s1, c),
                                               mid_row(s0, s1, c + 1), moff[c], mk, &w, ac, ci,
                                               vals, rp);
                        if (e != moff[c + 1]) {
#pragma omp atomic write
                            bad = 1;
                        }
                    }
#pragma omp barrier
                    if (off > 0) /* row pointers from where row 0 starts */
                        for (sla_int i = tid * (m + 1) / 2; i < (tid + 1) * (m + 1) / 2; i++)
                            rp[i] -= off;
                }
            }
        }
        /* (bad: a middle chunk wrote other than it counted) */
        if (!bad) M = sla__matrix_wrap(&a, m, n, end - off, 1, SLA_F64, rp, ci + off, vals + off);
        if (M) {
            M->colind_mem = ci;
            M->values_mem = vals;
        }
    }
    sla__free(&a, mark);
    sla__free(&a, acc);
    sla__free(&a, buf);
    if (!M) {
        sla__free(&a, rp);
        sla__free(&a, ci);
        sla__free(&a, vals);
        if (bad)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_spgemm: rows counted and written "
                              "differ (an operand changed during the call?)");
        return sla__error(ctx, SLA_ERR_NOMEM, "sla_spgemm: out of memory for a product of up "
                          "to %lld entries", (long long)cap);
    }
    *C = M;
    return sla__ok(ctx, SLA_OK);
}

/* The longest row of M (its rowptr's largest step). */
static sla_int longest_row(const sla_matrix *M)
{
    sla_int w = 0;
    for (sla_int i = 0; i < M->nrows; i++) {
        sla_int d = M->rowptr[i + 1] - M->rowptr[i];
        w = d > w ? d : w;
    }
    return w;
}

/* The one-pass product's sizes: *cap = nnz(A) x (B's longest row) >=
 * nnz(C), *wide = a bound on a row's entries. False when *cap exceeds
 * 4 (nnz(A) + nnz(B)) + nrows(A): then counting first is the better use
 * of memory. */
static bool one_pass_bound(const sla_matrix *A, const sla_matrix *B, sla_int *cap, sla_int *wide)
{
    sla_int wb = longest_row(B), wa = longest_row(A);
    sla_int lim = 4 * (A->nnz + B->nnz) + A->nrows;
    if (wb > 0 && A->nnz > lim / wb) return false;
    *cap = A->nnz * wb;
    *wide = wa > 0 && wb > B->ncols / wa ? B->ncols : wa * wb;
    return true;
}

sla_status sla_spgemm_symbolic(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                               sla_matrix **C)
{
    if (!C) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_spgemm_symbolic: C is NULL");
    *C = NULL;
    if (sla__require_real(ctx, A, "sla_spgemm_symbolic")) return SLA_ERR_UNSUPPORTED;
    if (sla__require_real(ctx, B, "sla_spgemm_symbolic")) return SLA_ERR_UNSUPPORTED;
    sla_int nbC = 1;
    sla_status st = sla__alg_product_shapes(ctx, "sla_spgemm_symbolic", A, B, &nbC);
    if (st) return st;
    return symbolic(ctx, A, B, nbC, NULL, NULL, C);
}

sla_status sla_spgemm(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B, sla_matrix **C)
{
    const char *who = "sla_spgemm";
    if (!C) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: C is NULL", who);
    *C = NULL;
    if (sla__require_real(ctx, A, who)) return SLA_ERR_UNSUPPORTED;
    if (sla__require_real(ctx, B, who)) return SLA_ERR_UNSUPPORTED;
    sla_int nbC = 1;
    sla_status st = sla__alg_product_shapes(ctx, who, A, B, &nbC);
    if (st) return st;
    if (nbC > 1) { /* a batch: the pattern, then every value array */
        if ((st = symbolic(ctx, A, B, nbC, NULL, NULL, C))) return st;
        if ((st = sla_spgemm_numeric(ctx, A, B, *C, NULL))) sla_matrix_destroy(C);
        return st;
    }
    double *ta = NULL, *tb = NULL;
    const double *av = f64_values(ctx, A, 0, &ta);
    const double *bv = av ? f64_values(ctx, B, 0, &tb) : NULL;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_int cap, wide, nt = sla__threads(ctx), s = -1;
    if (!bv)
        st = sla__error(ctx, SLA_ERR_NOMEM, "%s: out of memory for the workspace", who);
    else if (nt == 1 && one_pass_bound(A, B, &cap, &wide))
        st = fused_onepass(ctx, A, B, av, bv, cap, wide, 1, A->nrows, C);
    else if (nt == 2 && A->nrows >= 1024 && one_pass_bound(A, B, &cap, &wide) &&
             (s = split_at(A, B)) >= 0)
        st = fused_onepass(ctx, A, B, av, bv, cap, wide, 2, s, C);
    else /* more threads, few rows, rows of unlike cost or a loose bound: count every row first */
        st = symbolic(ctx, A, B, 1, av, bv, C);
    sla__free(&a, ta);
    sla__free(&a, tb);
    return st;
}

/* Value array ib of M as float64: M's own (float64), or converted into
 * *tmp (float32; *tmp allocated on first use, nnz entries). NULL: no memory. */
static const double *f64_values(sla_ctx *ctx, const sla_matrix *M, sla_int ib, double **tmp)
{
    if (M->dtype == SLA_F64) return (const double *)M->values + ib * M->nnz;
    if (!*tmp) *tmp = sla__ctx_malloc(ctx, (size_t)(M->nnz > 0 ? M->nnz : 1), sizeof **tmp,
                                      "float64 copies of a product's values");
    if (!*tmp) return NULL;
    const float *v = (const float *)M->values + ib * M->nnz;
    for (sla_int p = 0; p < M->nnz; p++) (*tmp)[p] = (double)v[p];
    return *tmp;
}

/* Rows [r0, r1) of C = A B (Gustavson): stamp C's columns of row i in mk,
 * accumulate a_il b_lj into the dense acc[j] (a column without C's stamp
 * is reported as bad), gather acc into out along C's pattern and clear it. */
static sla_int numeric_rows(const sla_matrix *A, const sla_matrix *B, const sla_matrix *C,
                            const double *av, const double *bv, double *out, sla_int r0,
                            sla_int r1, int32_t *mk, double *acc)
{
    const sla_int *arp = A->rowptr, *brp = B->rowptr, *crp = C->rowptr;
    const int32_t *aci = A->colind, *bci = B->colind, *cci = C->colind;
    sla_int bad = -1;
    for (sla_int i = r0; i < r1; i++) {
        int32_t stamp = (int32_t)(i + 1);
        for (sla_int p = crp[i]; p < crp[i + 1]; p++) mk[cci[p]] = stamp;
        for (sla_int p = arp[i]; p < arp[i + 1]; p++) {
            double a = av[p];
            int32_t j = aci[p];
            for (sla_int q = brp[j]; q < brp[j + 1]; q++) {
                int32_t col = bci[q];
                if (mk[col] != stamp) bad = i;
                acc[col] += a * bv[q];
            }
        }
        for (sla_int p = crp[i]; p < crp[i + 1]; p++) {
            out[p] = acc[cci[p]];
            acc[cci[p]] = 0.0;
        }
        if (bad >= 0) return bad;
    }
    return bad;
}

sla_status sla_spgemm_numeric(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                              sla_matrix *C, double *cvals)
{
    if (sla__require_real(ctx, A, "sla_spgemm_numeric")) return SLA_ERR_UNSUPPORTED;
    if (sla__require_real(ctx, B, "sla_spgemm_numeric")) return SLA_ERR_UNSUPPORTED;
    if (sla__require_real(ctx, C, "sla_spgemm_numeric")) return SLA_ERR_UNSUPPORTED;
    const char *who = "sla_spgemm_numeric";
    sla_int nbC = 1;
    double *cv = NULL;
    sla_status st = sla__alg_product_shapes(ctx, who, A, B, &nbC);
    if (!st) st = sla__alg_result(ctx, who, C, A->nrows, B->ncols, nbC, cvals, &cv);
    if (st) return st;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_int m = A->nrows, n = C->ncols > 0 ? C->ncols : 1, bad = -1;
    int nt = sla__threads(ctx), nch = nchunks(nt, m);
    int32_t *mark = sla__calloc(&a, (size_t)nt * (size_t)n, sizeof *mark); /* 0: no stamp */
    double *acc = sla__calloc(&a, (size_t)nt * (size_t)n, sizeof *acc);
    sla_int *bounds = sla__malloc(&a, (size_t)nch + 1, sizeof *bounds);
    double *ta = NULL, *tb = NULL;
    if (!mark || !acc || !bounds) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "%s: out of memory for the workspace", who);
        goto done;
    }
    split_rows(C->rowptr, m, nch, bounds); /* about equal nnz(C) per chunk */
    const double *av = NULL, *bv = NULL;
    for (sla_int b = 0; b < nbC && bad < 0; b++) {
        /* float64 values are read in place; float32 ones converted once per array */
        if (b == 0 || A->nbatch > 1) av = f64_values(ctx, A, A->nbatch == 1 ? 0 : b, &ta);
        if (b == 0 || B->nbatch > 1) bv = f64_values(ctx, B, B->nbatch == 1 ? 0 : b, &tb);
        if (!av || !bv) {
            st = SLA_ERR_NOMEM;
            goto done;
        }
        double *out = cv + b * C->nnz;
#pragma omp parallel num_threads(nt) if (nch > 1)
        {
            int tid = sla__alg_tid();
            int32_t *mk = mark + (size_t)tid * (size_t)n;
            double *ac = acc + (size_t)tid * (size_t)n;
#pragma omp for schedule(dynamic, 1)
            for (int c = 0; c < nch; c++) {
                sla_int r = numeric_rows(A, B, C, av, bv, out, bounds[c], bounds[c + 1], mk, ac);
                if (r >= 0) {
#pragma omp critical(sla_spgemm_bad)
                    if (bad < 0 || r < bad) bad = r;
                }
            }
        }
    }
    if (bad >= 0)
        st = sla__error(ctx, SLA_ERR_INDEX,
                        "%s: C's pattern misses entries of row %lld of A B (use the C of "
                        "sla_spgemm_symbolic)", who, (long long)bad);
    else
        st = sla__ok(ctx, SLA_OK);
done:
    sla__free(&a, mark);
    sla__free(&a, acc);
    sla__free(&a, bounds);
    sla__free(&a, ta);
    sla__free(&a, tb);
    return st;
}
