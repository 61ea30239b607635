/* The VJP of the sparse-sparse product C = A B (sla_spgemm_vjp): the
 * gradients gA = (gC B^T) on A's pattern and gB = (A^T gC) on B's pattern,
 * computed on the patterns (never densely), OpenMP over rows. The product
 * itself: spgemm.c. */
#include "algebra_internal.h"

#include <string.h>

/* Per-thread int32 workspace of n entries each, all -1 (the positions of
 * a row of C's columns). */
static int32_t *marks(sla_ctx *ctx, int nt, sla_int n)
{
    size_t len = (size_t)nt * (size_t)(n > 0 ? n : 1);
    int32_t *w = sla__ctx_malloc(ctx, len, sizeof *w, "a product's workspace");
    if (w) memset(w, 0xff, len * sizeof *w);
    return w;
}

/* pos[col] = offset in C's row i of each of its columns (or back to -1). */
static inline void set_row(const sla_matrix *C, sla_int i, int32_t *pos, bool on)
{
    for (sla_int p = C->rowptr[i]; p < C->rowptr[i + 1]; p++)
        pos[C->colind[p]] = on ? (int32_t)(p - C->rowptr[i]) : -1;
}

/* gA = (gC B^T) on A's pattern, row-parallel over A. */
static sla_int vjp_a(const sla_matrix *A, const sla_matrix *B, const sla_matrix *C,
                     const double *gC, double *gA, sla_int nbC, int32_t *pos, int nt)
{
    sla_int m = A->nrows, bad = -1;
    const sla_int *arp = A->rowptr, *brp = B->rowptr, *crp = C->rowptr;
    const int32_t *aci = A->colind, *bci = B->colind;
    for (sla_int b = 0; b < nbC; b++) {
        sla_int ib = B->nbatch == 1 ? 0 : b;
        double *ga = gA + (A->nbatch == 1 ? 0 : b) * A->nnz;
        const double *gc = gC + b * C->nnz;
        bool acc = A->nbatch == 1 && b > 0;
#pragma omp parallel num_threads(nt) if (nt > 1 && m >= 256)
        {
            int32_t *ps = pos + (size_t)sla__alg_tid() * (size_t)C->ncols;
#pragma omp for schedule(dynamic, 256)
            for (sla_int i = 0; i < m; i++) {
                set_row(C, i, ps, true);
                const double *grow = gc + crp[i];
                for (sla_int p = arp[i]; p < arp[i + 1]; p++) {
                    int32_t j = aci[p];
                    double s = 0.0;
                    for (sla_int q = brp[j]; q < brp[j + 1]; q++) {
                        int32_t o = ps[bci[q]];
                        if (o < 0) {
#pragma omp atomic write
                            bad = i;
                            continue;
                        }
                        s += grow[o] * sla__val(B, ib, q);
                    }
                    ga[p] = acc ? ga[p] + s : s;
                }
                set_row(C, i, ps, false);
            }
        }
    }
    return bad;
}

/* Position of column l in C's row i at or after *lo (columns sorted). */
static inline sla_int find_from(const sla_matrix *C, sla_int i, sla_int *lo, int32_t l)
{
    sla_int a = *lo, z = C->rowptr[i + 1];
    while (a < z) {
        sla_int mid = a + (z - a) / 2;
        if (C->colind[mid] < l) a = mid + 1;
        else z = mid;
    }
    *lo = a;
    return a < C->rowptr[i + 1] && C->colind[a] == l ? a : -1;
}

/* gB = (A^T gC) on B's pattern, row-parallel over B with AT = A^T. */
static sla_int vjp_b(const sla_matrix *AT, const sla_matrix *B, const sla_matrix *C,
                     const double *gC, double *gB, sla_int nbC, int nt)
{
    sla_int k = B->nrows, bad = -1;
    const sla_int *trp = AT->rowptr, *brp = B->rowptr;
    const int32_t *tci = AT->colind, *bci = B->colind;
    for (sla_int b = 0; b < nbC; b++) {
        sla_int ia = AT->nbatch == 1 ? 0 : b;
        double *gb = gB + (B->nbatch == 1 ? 0 : b) * B->nnz;
        const double *gc = gC + b * C->nnz;
        bool acc = B->nbatch == 1 && b > 0;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 256) if (nt > 1 && k >= 256)
        for (sla_int j = 0; j < k; j++) {
            if (!acc)
                for (sla_int q = brp[j]; q < brp[j + 1]; q++) gb[q] = 0.0;
            for (sla_int t = trp[j]; t < trp[j + 1]; t++) {
                sla_int i = tci[t], lo = C->rowptr[i];
                double av = sla__val(AT, ia, t);
                for (sla_int q = brp[j]; q < brp[j + 1]; q++) {
                    sla_int p = find_from(C, i, &lo, bci[q]);
                    if (p < 0) {
#pragma omp atomic write
                        bad = i;
                        continue;
                    }
                    gb[q] += av * gc[p];
                }
            }
        }
    }
    return bad;
}

sla_status sla_spgemm_vjp(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                          const sla_matrix *C, const double *gC, double *gA, double *gB)
{
    if (sla__require_real(ctx, A, "sla_spgemm_vjp")) return SLA_ERR_UNSUPPORTED;
    if (sla__require_real(ctx, B, "sla_spgemm_vjp")) return SLA_ERR_UNSUPPORTED;
    if (sla__require_real(ctx, C, "sla_spgemm_vjp")) return SLA_ERR_UNSUPPORTED;
    const char *who = "sla_spgemm_vjp";
    sla_int nbC = 1;
    double *unused;
    sla_status st = sla__alg_product_shapes(ctx, who, A, B, &nbC);
    if (st) return st;
    if (!gC && C && C->nnz > 0) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: gC is NULL", who);
    if ((st = sla__alg_result(ctx, who, C, A->nrows, B->ncols, nbC, (double *)gC, &unused)))
        return st;
    int nt = sla__threads(ctx);
    sla_int bad = -1;
    if (gA) {
        int32_t *pos = marks(ctx, nt, C->ncols);
        if (!pos) return SLA_ERR_NOMEM;
        bad = vjp_a(A, B, C, gC, gA, nbC, pos, nt);
        sla_free(ctx, pos);
    }
    if (gB && bad < 0) {
        sla_matrix *AT = NULL;
        if ((st = sla_matrix_transpose(ctx, A, NULL, &AT))) return st;
        bad = vjp_b(AT, B, C, gC, gB, nbC, nt);
        sla_matrix_destroy(&AT);
    }
    if (bad >= 0)
        return sla__error(ctx, SLA_ERR_INDEX,
                          "%s: C's pattern misses entries of row %lld of A B (use the C of "
                          "sla_spgemm_symbolic)", who, (long long)bad);
    return sla__ok(ctx, SLA_OK);
}
