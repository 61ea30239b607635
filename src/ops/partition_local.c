/* One part of a row partition as its owner would hold it: the owned rows
 * with their columns renumbered (owned unknowns first, then the ghosts,
 * grouped by owning part), and the halo, i.e. which ghosts come from which
 * part and which owned rows every other part reads. A_local [x_owned;
 * x_ghost] = (A x)[owned]: the local half of a distributed SpMV. */
#include "../core/internal.h"

#include <stdlib.h>
#include <string.h>

/* The public struct and the allocator that made its arrays. */
typedef struct {
    sla_partition_local pub;
    sla_allocator alloc;
} local_priv;

typedef struct {
    sla_int a, b;
} pair;

static int cmp_pair(const void *x, const void *y)
{
    const pair *p = x, *q = y;
    if (p->a != q->a) return (p->a > q->a) - (p->a < q->a);
    return (p->b > q->b) - (p->b < q->b);
}

void sla_partition_local_destroy(sla_partition_local **p)
{
    if (!p || !*p) return;
    local_priv *L = (local_priv *)*p;
    sla_allocator a = L->alloc;
    sla_partition_local *P = &L->pub;
    sla__free(&a, P->owned);
    sla__free(&a, P->ghost);
    sla__free(&a, P->ghost_owner);
    sla__free(&a, P->recv_ptr);
    sla__free(&a, P->send_ptr);
    sla__free(&a, P->send_rows);
    sla__free(&a, P->src);
    sla_matrix_destroy(&P->A);
    sla__free(&a, L);
    *p = NULL;
}

/* The local matrix: owned rows, columns through loc[], each row sorted;
 * values of every array copied from A's positions src[]. */
static sla_status local_matrix(sla_ctx *ctx, const sla_matrix *A, const sla_int *loc,
                               sla_partition_local *P, const sla_allocator *a)
{
    sla_int nl = P->nowned, nnzl = 0, maxrow = 0;
    for (sla_int t = 0; t < nl; t++) {
        sla_int i = P->owned[t], len = A->rowptr[i + 1] - A->rowptr[i];
        nnzl += len;
        if (len > maxrow) maxrow = len;
    }
    size_t es = sla__dtype_size(A->dtype);
    sla_int *rp = sla__malloc(a, (size_t)nl + 1, sizeof *rp);
    sla_int *ci = sla__malloc(a, (size_t)nnzl, sizeof *ci);
    pair *row = sla__malloc(a, (size_t)maxrow, sizeof *row);
    unsigned char *v = sla__malloc(a, (size_t)(nnzl * A->nbatch), es);
    P->src = sla__malloc(a, (size_t)nnzl, sizeof(sla_int));
    sla_status st = SLA_OK;
    if (!rp || !ci || !row || !v || !P->src) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "sla_partition_extract: out of memory for the local matrix");
        goto done;
    }
    sla_int w = 0;
    rp[0] = 0;
    for (sla_int t = 0; t < nl; t++) {
        sla_int i = P->owned[t], b = A->rowptr[i], e = A->rowptr[i + 1];
        for (sla_int p = b; p < e; p++) row[p - b] = (pair){loc[A->colind[p]], p};
        qsort(row, (size_t)(e - b), sizeof *row, cmp_pair);
        for (sla_int s = 0; s < e - b; s++, w++) {
            ci[w] = row[s].a;
            P->src[w] = row[s].b;
        }
        rp[t + 1] = w;
    }
    const unsigned char *av = A->values;
    for (sla_int ib = 0; ib < A->nbatch; ib++)
        for (sla_int q = 0; q < nnzl; q++)
            memcpy(v + (size_t)(ib * nnzl + q) * es, av + (size_t)(ib * A->nnz + P->src[q]) * es, es);
    st = sla_matrix_from_csr(ctx, nl, nl + P->nghost, rp, ci, A->dtype, A->nbatch, v, SLA_COPY, &P->A);
done:
    sla__free(a, rp);
    sla__free(a, ci);
    sla__free(a, row);
    sla__free(a, v);
    return st;
}

/* Ghosts: the columns of the owned rows that other parts own, sorted by
 * (owner, global number); loc[] gets their local numbers nowned + g. */
static sla_status find_ghosts(sla_ctx *ctx, const sla_matrix *A, const sla_int *part, sla_int *loc,
                              sla_partition_local *P, const sla_allocator *a)
{
    sla_int ng = 0;
    for (sla_int t = 0; t < P->nowned; t++) {
        sla_int i = P->owned[t];
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sla_int j = A->colind[p];
            if (loc[j] == -1) { /* not owned, not seen yet */
                loc[j] = -2;
                ng++;
            }
        }
    }
    pair *g = sla__malloc(a, (size_t)ng, sizeof *g);
    P->ghost = sla__malloc(a, (size_t)ng, sizeof(sla_int));
    P->ghost_owner = sla__malloc(a, (size_t)ng, sizeof(sla_int));
    P->recv_ptr = sla__calloc(a, (size_t)P->nparts + 1, sizeof(sla_int));
    if (!g || !P->ghost || !P->ghost_owner || !P->recv_ptr) {
        sla__free(a, g);
        return sla__error(ctx, SLA_ERR_NOMEM, "sla_partition_extract: out of memory for the ghosts");
    }
    sla_int c = 0;
    for (sla_int t = 0; t < P->nowned; t++) {
        sla_int i = P->owned[t];
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sla_int j = A->colind[p];
            if (loc[j] == -2) {
                loc[j] = -3;
                g[c++] = (pair){part[j], j};
            }
        }
    }
    qsort(g, (size_t)ng, sizeof *g, cmp_pair);
    for (sla_int t = 0; t < ng; t++) {
        P->ghost_owner[t] = g[t].a;
        P->ghost[t] = g[t].b;
        loc[g[t].b] = P->nowned + t;
        P->recv_ptr[g[t].a + 1]++;
    }
    for (sla_int q = 0; q < P->nparts; q++) P->recv_ptr[q + 1] += P->recv_ptr[q];
    P->nghost = ng;
    sla__free(a, g);
    return SLA_OK;
}

/* Send lists: (q, local row of k) for every entry a_jc with part[j] = q != k
 * and part[c] = k, sorted and without repeats. */
static sla_status find_sends(sla_ctx *ctx, const sla_matrix *A, const sla_int *part, const sla_int *loc,
                             sla_partition_local *P, const sla_allocator *a)
{
    sla_int k = P->k, m = 0;
    for (sla_int j = 0; j < A->nrows; j++)
        if (part[j] != k)
            for (sla_int p = A->rowptr[j]; p < A->rowptr[j + 1]; p++) m += part[A->colind[p]] == k;
    pair *s = sla__malloc(a, (size_t)m, sizeof *s);
    P->send_ptr = sla__calloc(a, (size_t)P->nparts + 1, sizeof(sla_int));
    if (!s || !P->send_ptr) {
        sla__free(a, s);
        return sla__error(ctx, SLA_ERR_NOMEM, "sla_partition_extract: out of memory for the send lists");
    }
    sla_int c = 0;
    for (sla_int j = 0; j < A->nrows; j++)
        if (part[j] != k)
            for (sla_int p = A->rowptr[j]; p < A->rowptr[j + 1]; p++)
                if (part[A->colind[p]] == k) s[c++] = (pair){part[j], loc[A->colind[p]]};
    qsort(s, (size_t)m, sizeof *s, cmp_pair);
    sla_int w = 0;
    for (sla_int t = 0; t < m; t++)
        if (t == 0 || s[t].a != s[t - 1].a || s[t].b != s[t - 1].b) s[w++] = s[t];
    P->send_rows = sla__malloc(a, (size_t)w, sizeof(sla_int));
    if (!P->send_rows) {
        sla__free(a, s);
        return sla__error(ctx, SLA_ERR_NOMEM, "sla_partition_extract: out of memory for the send lists");
    }
    for (sla_int t = 0; t < w; t++) {
        P->send_rows[t] = s[t].b;
        P->send_ptr[s[t].a + 1]++;
    }
    for (sla_int q = 0; q < P->nparts; q++) P->send_ptr[q + 1] += P->send_ptr[q];
    sla__free(a, s);
    return SLA_OK;
}

sla_status sla_partition_extract(sla_ctx *ctx, const sla_matrix *A, sla_int nparts, const sla_int *part,
                                 sla_int k, sla_partition_local **out)
{
    if (out) *out = NULL;
    if (!A || !out || (!part && A->nrows > 0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_partition_extract: NULL argument");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "sla_partition_extract: A is %lld x %lld, not square",
                          (long long)A->nrows, (long long)A->ncols);
    if (nparts < 1 || k < 0 || k >= nparts)
        return sla__error(ctx, SLA_ERR_INDEX, "sla_partition_extract: part %lld is not in [0, nparts = %lld)",
                          (long long)k, (long long)nparts);
    sla_int n = A->nrows;
    for (sla_int i = 0; i < n; i++)
        if (part[i] < 0 || part[i] >= nparts)
            return sla__error(ctx, SLA_ERR_INDEX, "sla_partition_extract: row %lld has part %lld, not in [0, %lld)",
                              (long long)i, (long long)part[i], (long long)nparts);
    sla_allocator a = sla__ctx_alloc(ctx);
    local_priv *L = sla__calloc(&a, 1, sizeof *L);
    sla_int *loc = sla__malloc(&a, (size_t)n, sizeof *loc);
    sla_status st = SLA_OK;
    if (!L || !loc) {
        sla__free(&a, L);
        sla__free(&a, loc);
        return sla__error(ctx, SLA_ERR_NOMEM, "sla_partition_extract: out of memory");
    }
    L->alloc = a;
    sla_partition_local *P = &L->pub;
    P->nparts = nparts;
    P->k = k;
    for (sla_int i = 0; i < n; i++) P->nowned += part[i] == k;
    P->owned = sla__malloc(&a, (size_t)P->nowned, sizeof(sla_int));
    if (!P->owned) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "sla_partition_extract: out of memory");
        goto done;
    }
    for (sla_int i = 0, t = 0; i < n; i++) {
        loc[i] = part[i] == k ? t : -1;
        if (part[i] == k) P->owned[t++] = i;
    }
    if ((st = find_ghosts(ctx, A, part, loc, P, &a))) goto done;
    if ((st = find_sends(ctx, A, part, loc, P, &a))) goto done;
    st = local_matrix(ctx, A, loc, P, &a);
done:
    sla__free(&a, loc);
    if (st) {
        sla_partition_local_destroy(&P);
        return st;
    }
    *out = P;
    return sla__ok(ctx, SLA_OK);
}
