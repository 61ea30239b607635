/* The graph of a square sparse matrix: connected components of its
 * pattern (union-find with path halving over A + A^T), vertex degrees,
 * and the graph Laplacian L = diag(rowsum(A)) - A with its VJP. */
#include "algebra_internal.h"

#include <string.h>

static sla_status check_square(sla_ctx *ctx, const char *who, const sla_matrix *A)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: matrix is NULL", who);
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "%s: matrix is %lld x %lld, not square", who,
                          (long long)A->nrows, (long long)A->ncols);
    return SLA_OK;
}

static sla_int root(sla_int *parent, sla_int x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

sla_status sla_graph_components(sla_ctx *ctx, const sla_matrix *A, sla_int *labels,
                                sla_int *count)
{
    sla_status st = check_square(ctx, "sla_graph_components", A);
    if (st) return st;
    sla_int n = A->nrows;
    sla_int *parent = sla__ctx_malloc(ctx, (size_t)(n > 0 ? n : 1), sizeof *parent,
                                      "connected components");
    if (!parent) return SLA_ERR_NOMEM;
    for (sla_int i = 0; i < n; i++) parent[i] = i;
    for (sla_int i = 0; i < n; i++)
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sla_int ri = root(parent, i), rj = root(parent, A->colind[p]);
            if (ri == rj) continue;
            if (ri < rj) parent[rj] = ri; /* the lowest vertex is the root */
            else parent[ri] = rj;
        }
    /* every root is its component's lowest vertex (a union keeps the
     * lower root): point each vertex at its root, then number the roots in
     * order; a vertex's root comes before it, so its label is known. */
    for (sla_int i = 0; i < n; i++) parent[i] = root(parent, i);
    sla_int c = 0;
    for (sla_int i = 0; i < n; i++) {
        sla_int r = parent[i]; /* parent[r] is already r's label when r < i */
        parent[i] = r == i ? c++ : parent[r];
        if (labels) labels[i] = parent[i];
    }
    sla_free(ctx, parent);
    if (count) *count = c;
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_graph_degree(sla_ctx *ctx, const sla_matrix *A, sla_int ib, bool weighted,
                            double *deg)
{
    if (weighted && sla__require_real(ctx, A, "sla_graph_degree (weighted)")) return SLA_ERR_UNSUPPORTED;
    sla_status st = check_square(ctx, "sla_graph_degree", A);
    if (st) return st;
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "value array %lld out of range [0, %lld)",
                          (long long)ib, (long long)A->nbatch);
    if (!deg && A->nrows > 0) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_graph_degree: deg is NULL");
    sla_int n = A->nrows;
    int nt = sla__threads(ctx);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        double s = 0.0;
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (A->colind[p] != i) s += weighted ? sla__val(A, ib, p) : 1.0;
        deg[i] = s;
    }
    return sla__ok(ctx, SLA_OK);
}

/* Position of the diagonal in L's row i (always stored). */
static sla_int diag_of(const sla_matrix *L, sla_int i)
{
    return sla__find(L, i, i);
}

sla_status sla_graph_laplacian(sla_ctx *ctx, const sla_matrix *A, sla_matrix **L)
{
    if (!L) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_graph_laplacian: L is NULL");
    *L = NULL;
    if (sla__require_real(ctx, A, "sla_graph_laplacian")) return SLA_ERR_UNSUPPORTED;
    sla_status st = check_square(ctx, "sla_graph_laplacian", A);
    if (st) return st;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_int n = A->nrows;
    sla_int *rp = sla__calloc(&a, (size_t)n + 1, sizeof *rp);
    if (!rp) return sla__error(ctx, SLA_ERR_NOMEM, "sla_graph_laplacian: out of memory");
    for (sla_int i = 0; i < n; i++)
        rp[i + 1] = rp[i] + (A->rowptr[i + 1] - A->rowptr[i]) + (sla__find(A, i, i) < 0);
    int32_t *ci = sla__malloc(&a, (size_t)(rp[n] > 0 ? rp[n] : 1), sizeof *ci);
    if (!ci) {
        sla__free(&a, rp);
        return sla__error(ctx, SLA_ERR_NOMEM, "sla_graph_laplacian: out of memory");
    }
    for (sla_int i = 0; i < n; i++) {
        sla_int c = rp[i];
        bool put = false;
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            if (!put && A->colind[p] > i) {
                ci[c++] = (int32_t)i;
                put = true;
            }
            if (A->colind[p] == i) put = true;
            ci[c++] = A->colind[p];
        }
        if (!put) ci[c++] = (int32_t)i;
    }
    sla_matrix *M = NULL;
    if ((st = sla__alg_wrap(ctx, n, n, A->nbatch, rp, ci, &M))) return st;
    double *lv = M->values;
    for (sla_int b = 0; b < A->nbatch; b++) {
        double *v = lv + b * M->nnz;
        for (sla_int i = 0; i < n; i++) {
            sla_int q = M->rowptr[i], d = diag_of(M, i);
            double s = 0.0;
            for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++, q++) {
                if (M->colind[q] != A->colind[p]) q++; /* L's inserted diagonal */
                if (A->colind[p] == i) continue;        /* A's diagonal cancels */
                double x = sla__val(A, b, p);
                v[q] = -x;
                s += x;
            }
            v[d] = s;
        }
    }
    *L = M;
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_graph_laplacian_vjp(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *L,
                                   const double *gL, double *gA)
{
    if (sla__require_real(ctx, A, "sla_graph_laplacian_vjp")) return SLA_ERR_UNSUPPORTED;
    if (sla__require_real(ctx, L, "sla_graph_laplacian_vjp")) return SLA_ERR_UNSUPPORTED;
    sla_status st = check_square(ctx, "sla_graph_laplacian_vjp", A);
    if (st) return st;
    if (!L || (!gL && L->nnz > 0) || (!gA && A->nnz > 0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_graph_laplacian_vjp: NULL argument");
    if (L->nrows != A->nrows || L->ncols != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "sla_graph_laplacian_vjp: L is not A's size");
    sla_int n = A->nrows;
    for (sla_int b = 0; b < A->nbatch; b++) {
        const double *g = gL + b * L->nnz;
        double *ga = gA + b * A->nnz;
        for (sla_int i = 0; i < n; i++) {
            sla_int d = diag_of(L, i);
            for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                sla_int j = A->colind[p];
                sla_int q = j == i ? d : sla__find(L, i, j);
                if (q < 0 || d < 0)
                    return sla__error(ctx, SLA_ERR_INDEX,
                                      "sla_graph_laplacian_vjp: L is not A's Laplacian (row %lld)",
                                      (long long)i);
                ga[p] = j == i ? 0.0 : g[d] - g[q];
            }
        }
    }
    return sla__ok(ctx, SLA_OK);
}
