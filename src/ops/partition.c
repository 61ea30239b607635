/* Partitions of the rows of a square matrix into P parts, serially: METIS
 * k-way on the graph of A + A^T, recursive coordinate bisection and a
 * Hilbert-curve order of point coordinates, contiguous row blocks; and the
 * edge cut of a partition. Part sizes of the geometric and block methods
 * are those of the blocks, floor(n / P) or ceil(n / P). */
#include "../core/internal.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLA_HAVE_METIS
#include <metis.h>
#endif

/* The first row of part q in the block sizes: floor(n q / P), without
 * overflow (n = a P + r: n q / P = a q + r q / P). */
static sla_int block_start(sla_int n, sla_int P, sla_int q)
{
    return n / P * q + (n % P) * q / P;
}

static void contiguous_parts(sla_int n, sla_int P, sla_int *part)
{
    for (sla_int q = 0; q < P; q++)
        for (sla_int i = block_start(n, P, q); i < block_start(n, P, q + 1); i++) part[i] = q;
}

/* ---- METIS ---------------------------------------------------------------- */

#ifdef SLA_HAVE_METIS
/* The adjacency of A + A^T without the diagonal, sorted and without
 * repeats, then METIS_PartGraphKway (seed fixed: deterministic). */
static sla_status metis_parts(sla_ctx *ctx, const sla_matrix *A, sla_int P, sla_int *part)
{
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_int n = A->nrows, nnz = A->nnz;
    if (n > INT32_MAX || 2 * nnz > INT32_MAX || P > INT32_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "sla_partition: the graph is too large for 32-bit METIS");
    idx_t *xadj = sla__calloc(&a, (size_t)n + 1, sizeof(idx_t));
    idx_t *adj = sla__malloc(&a, (size_t)(2 * nnz), sizeof(idx_t));
    idx_t *fill = sla__malloc(&a, (size_t)n, sizeof(idx_t));
    idx_t *pt = sla__malloc(&a, (size_t)n, sizeof(idx_t));
    sla_status st = SLA_OK;
    if (!xadj || !adj || !fill || !pt) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "sla_partition: out of memory for the METIS graph");
        goto done;
    }
    for (sla_int i = 0; i < n; i++)
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (A->colind[p] != i) {
                xadj[i + 1]++;
                xadj[A->colind[p] + 1]++;
            }
    for (sla_int i = 0; i < n; i++) xadj[i + 1] += xadj[i];
    for (sla_int i = 0; i < n; i++) fill[i] = xadj[i];
    for (sla_int i = 0; i < n; i++)
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            idx_t j = A->colind[p];
            if (j != i) {
                adj[fill[i]++] = j;
                adj[fill[j]++] = (idx_t)i;
            }
        }
    idx_t w = 0; /* sort each list and drop repeats (an entry and its transpose) */
    for (sla_int i = 0; i < n; i++) {
        idx_t b = xadj[i], e = xadj[i + 1];
        for (idx_t p = b + 1; p < e; p++) { /* insertion sort: rows are short */
            idx_t v = adj[p], q = p;
            while (q > b && adj[q - 1] > v) {
                adj[q] = adj[q - 1];
                q--;
            }
            adj[q] = v;
        }
        xadj[i] = w;
        for (idx_t p = b; p < e; p++)
            if (p == b || adj[p] != adj[p - 1]) adj[w++] = adj[p];
    }
    xadj[n] = w;
    idx_t nv = (idx_t)n, ncon = 1, np = (idx_t)P, objval = 0;
    idx_t opt[METIS_NOPTIONS];
    METIS_SetDefaultOptions(opt);
    opt[METIS_OPTION_SEED] = 1;
    int rc = METIS_PartGraphKway(&nv, &ncon, xadj, adj, NULL, NULL, NULL, &np, NULL, NULL, opt, &objval, pt);
    if (rc != METIS_OK)
        st = sla__error(ctx, rc == METIS_ERROR_MEMORY ? SLA_ERR_NOMEM : SLA_ERR_ARGUMENT,
                        "sla_partition: METIS_PartGraphKway failed (%d)", rc);
    else
        for (sla_int i = 0; i < n; i++) part[i] = pt[i];
done:
    sla__free(&a, xadj);
    sla__free(&a, adj);
    sla__free(&a, fill);
    sla__free(&a, pt);
    return st;
}
#endif

/* ---- geometric partitions --------------------------------------------------- */

typedef struct {
    double key;
    sla_int i;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i); /* ties by row: deterministic */
}

/* Recursive coordinate bisection of the points w[0..m) into parts
 * [q0, q0 + p): cut across the longest extent so that the first p / 2
 * parts get exactly their block sizes. */
static void rcb(const double *coords, int dim, sla_int n, sla_int P, keyed *w, sla_int m,
                sla_int q0, sla_int p, sla_int *part)
{
    if (p == 1 || m == 0) {
        for (sla_int t = 0; t < m; t++) part[w[t].i] = q0;
        return;
    }
    int best = 0;
    double ext = -1.0;
    for (int d = 0; d < dim; d++) {
        double lo = INFINITY, hi = -INFINITY;
        for (sla_int t = 0; t < m; t++) {
            double c = coords[w[t].i * dim + d];
            lo = fmin(lo, c);
            hi = fmax(hi, c);
        }
        if (hi - lo > ext) {
            ext = hi - lo;
            best = d;
        }
    }
    for (sla_int t = 0; t < m; t++) w[t].key = coords[w[t].i * dim + best];
    qsort(w, (size_t)m, sizeof *w, cmp_keyed);
    sla_int p1 = p / 2;
    sla_int m1 = block_start(n, P, q0 + p1) - block_start(n, P, q0);
    rcb(coords, dim, n, P, w, m1, q0, p1, part);
    rcb(coords, dim, n, P, w + m1, m - m1, q0 + p1, p - p1, part);
}

/* Skilling's transform ("Programming the Hilbert curve", 2004): the
 * coordinates X[0..nd) of b bits become the transposed Hilbert index. */
static void hilbert_transpose(uint32_t *X, int b, int nd)
{
    uint32_t M = 1u << (b - 1), t;
    for (uint32_t Q = M; Q > 1; Q >>= 1) { /* inverse undo */
        uint32_t P = Q - 1;
        for (int i = 0; i < nd; i++) {
            if (X[i] & Q) {
                X[0] ^= P;
            } else {
                t = (X[0] ^ X[i]) & P;
                X[0] ^= t;
                X[i] ^= t;
            }
        }
    }
    for (int i = 1; i < nd; i++) X[i] ^= X[i - 1]; /* Gray encode */
    t = 0;
    for (uint32_t Q = M; Q > 1; Q >>= 1)
        if (X[nd - 1] & Q) t ^= Q - 1;
    for (int i = 0; i < nd; i++) X[i] ^= t;
}

/* The Hilbert index of each point on a 2^b grid over the bounding box (one
 * scale for every axis, so the curve follows the shape), sorted, cut into
 * the block sizes. */
static void hilbert_parts(const double *coords, int dim, sla_int n, sla_int P, keyed *w, sla_int *part)
{
    int b = dim == 1 ? 53 : dim == 2 ? 26 : 17; /* key below 2^53: exact in a double */
    double lo[3] = {0, 0, 0}, ext = 0.0;
    for (int d = 0; d < dim; d++) {
        double l = INFINITY, h = -INFINITY;
        for (sla_int i = 0; i < n; i++) {
            l = fmin(l, coords[i * dim + d]);
            h = fmax(h, coords[i * dim + d]);
        }
        lo[d] = l;
        ext = fmax(ext, h - l);
    }
    double top = ldexp(1.0, dim == 1 ? 52 : b) - 1.0;
    for (sla_int i = 0; i < n; i++) {
        if (dim == 1) {
            w[i].key = ext > 0 ? (coords[i] - lo[0]) / ext * top : 0.0;
        } else {
            uint32_t X[3] = {0, 0, 0};
            for (int d = 0; d < dim; d++)
                X[d] = ext > 0 ? (uint32_t)((coords[i * dim + d] - lo[d]) / ext * top) : 0u;
            hilbert_transpose(X, b, dim);
            uint64_t key = 0;
            for (int j = b - 1; j >= 0; j--)
                for (int d = 0; d < dim; d++) key = (key << 1) | ((X[d] >> j) & 1u);
            w[i].key = (double)key;
        }
        w[i].i = i;
    }
    qsort(w, (size_t)n, sizeof *w, cmp_keyed);
    for (sla_int q = 0; q < P; q++)
        for (sla_int t = block_start(n, P, q); t < block_start(n, P, q + 1); t++) part[w[t].i] = q;
}

/* ---- the public entry points -------------------------------------------------- */

sla_status sla_partition(sla_ctx *ctx, const sla_matrix *A, sla_int nparts,
                         sla_partition_method method, const double *coords, int dim, sla_int *part)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_partition: A is NULL");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "sla_partition: A is %lld x %lld, not square",
                          (long long)A->nrows, (long long)A->ncols);
    sla_int n = A->nrows;
    if (!part && n > 0) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_partition: part is NULL");
    if (nparts < 1 || (n > 0 && nparts > n))
        return sla__error(ctx, SLA_ERR_DIMENSION, "sla_partition: nparts = %lld must be in [1, n = %lld]",
                          (long long)nparts, (long long)n);
    bool geometric = method == SLA_PARTITION_RCB || method == SLA_PARTITION_HILBERT;
    if (!geometric && method != SLA_PARTITION_METIS && method != SLA_PARTITION_CONTIGUOUS)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "sla_partition: unknown method %d (metis 0, rcb 1, hilbert 2, contiguous 3)",
                          (int)method);
    if (geometric) {
        const char *name = method == SLA_PARTITION_RCB ? "rcb" : "hilbert";
        if (dim < 1 || dim > 3)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_partition %s: dim = %d must be 1, 2 or 3", name, dim);
        if (!coords && n > 0)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_partition %s: needs point coordinates (coords is NULL)",
                              name);
        for (sla_int t = 0; t < n * dim; t++)
            if (!isfinite(coords[t]))
                return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_partition %s: coordinate %lld of point %lld is %g",
                                  name, (long long)(t % dim), (long long)(t / dim), coords[t]);
    }
    if (n == 0) return sla__ok(ctx, SLA_OK);
    if (nparts == 1 || method == SLA_PARTITION_CONTIGUOUS) {
        if (method == SLA_PARTITION_METIS) { /* the same answer, but only where METIS is */
#ifndef SLA_HAVE_METIS
            goto no_metis;
#endif
        }
        contiguous_parts(n, nparts, part);
        return sla__ok(ctx, SLA_OK);
    }
    if (method == SLA_PARTITION_METIS) {
#ifdef SLA_HAVE_METIS
        sla_status st = metis_parts(ctx, A, nparts, part);
        return st ? st : sla__ok(ctx, SLA_OK);
#else
        goto no_metis;
#endif
    }
    keyed *w = sla__ctx_malloc(ctx, (size_t)n, sizeof *w, "sla_partition: points");
    if (!w) return SLA_ERR_NOMEM;
    if (method == SLA_PARTITION_RCB) {
        for (sla_int i = 0; i < n; i++) w[i].i = i;
        rcb(coords, dim, n, nparts, w, n, 0, nparts, part);
    } else {
        hilbert_parts(coords, dim, n, nparts, w, part);
    }
    sla_free(ctx, w);
    return sla__ok(ctx, SLA_OK);
#ifndef SLA_HAVE_METIS
no_metis:
    return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                      "sla_partition: metis is not available in this build: METIS was not found when sla "
                      "was configured (apt-get install libmetis-dev and reconfigure)");
#endif
}

sla_status sla_partition_edge_cut(sla_ctx *ctx, const sla_matrix *A, const sla_int *part, sla_int *cut)
{
    if (!A || !cut || (!part && A->nrows > 0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_partition_edge_cut: NULL argument");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "sla_partition_edge_cut: A is %lld x %lld, not square",
                          (long long)A->nrows, (long long)A->ncols);
    sla_int c = 0;
    for (sla_int i = 0; i < A->nrows; i++)
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) c += part[A->colind[p]] != part[i];
    *cut = c;
    return sla__ok(ctx, SLA_OK);
}
