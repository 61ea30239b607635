/* The explicit transpose of one value array of a CSR matrix (the CSR of
 * A^T, values in double), built once by a counting sort, so that products
 * y = A^T x become a gather (one row of A^T per entry of y, threaded by
 * rows without reductions) instead of the scatter of sla__spmv_t, whose
 * threaded form needs nt private copies of y and a final sum. Costs nnz
 * doubles and ints plus ncols + 1 row pointers: about the matrix again.
 * Row j of A^T lists the rows i of A in ascending order, so the serial
 * gather adds the same terms in the same order as the serial scatter:
 * the two agree bit for bit. Used by svds and LSQR/LSMR (their
 * `transpose` option). */
#include "internal.h"

#include <string.h>

sla_status sla__csrt_build(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla__csrt *T)
{
    memset(T, 0, sizeof *T);
    const sla_int m = A->nrows, n = A->ncols, nnz = A->nnz;
    if (m > INT32_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "explicit transpose: %lld rows do not fit 32-bit column indices",
                          (long long)m);
    T->nrows = n;
    T->ncols = m;
    T->rowptr = sla__ctx_malloc(ctx, (size_t)n + 1, sizeof *T->rowptr, "the explicit transpose's row pointers");
    T->colind = T->rowptr ? sla__ctx_malloc(ctx, nnz ? (size_t)nnz : 1, sizeof *T->colind,
                                            "the explicit transpose's indices")
                          : NULL;
    T->vals = T->colind ? sla__ctx_malloc(ctx, nnz ? (size_t)nnz : 1, sizeof *T->vals,
                                          "the explicit transpose's values")
                        : NULL;
    if (!T->vals) {
        sla__csrt_free(ctx, T);
        return SLA_ERR_NOMEM;
    }
    sla_int *rp = T->rowptr;
    memset(rp, 0, ((size_t)n + 1) * sizeof *rp);
    for (sla_int p = 0; p < nnz; p++) rp[A->colind[p] + 1]++;
    for (sla_int j = 0; j < n; j++) rp[j + 1] += rp[j];
    /* rp[j] is the next free slot of row j while filling; shifted back after */
    for (sla_int i = 0; i < m; i++)
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sla_int q = rp[A->colind[p]]++;
            T->colind[q] = (int32_t)i;
            T->vals[q] = sla__val(A, ib, p);
        }
    for (sla_int j = n; j > 0; j--) rp[j] = rp[j - 1];
    rp[0] = 0;
    return SLA_OK;
}

void sla__csrt_free(sla_ctx *ctx, sla__csrt *T)
{
    if (!T) return;
    sla_free(ctx, T->rowptr);
    sla_free(ctx, T->colind);
    sla_free(ctx, T->vals);
    memset(T, 0, sizeof *T);
}

void sla__csrt_spmv(const sla__csrt *T, const double *x, double *y, int nt)
{
    const sla_int *rp = T->rowptr, n = T->nrows;
    const int32_t *ci = T->colind;
    const double *v = T->vals;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int j = 0; j < n; j++) {
        double s = 0.0;
        for (sla_int q = rp[j]; q < rp[j + 1]; q++) s += v[q] * x[ci[q]];
        y[j] = s;
    }
}

/* Measured on a quiet machine (2026-12-04, bench_svds and bench_lsq's A/B
 * part: scatter and explicit alternating in one process, wall seconds,
 * other load 0-2 %): LSQR 1e6 x 2.5e5 (nnz 1.1e7), 100 iterations: one
 * thread 6.14 s scatter / 6.20 s explicit, two threads 3.14 / 3.34 s;
 * LSMR 6.12 / 6.15 and 3.13 / 3.38 s; svds k = 10 on 1e5 x 5e4: 1.52 /
 * 1.46 s on one thread, 1.22 / 1.25 s on two. The transpose's build and
 * its second copy of the matrix (135 MB for the LSQR problem) buy
 * nothing on this machine class (the threaded scatter's private copies of
 * y are small against the matrix), so auto scatters; explicit stays an
 * option (the earlier rule, explicit on more than one thread, came from
 * runs under 50-80 % other load, where spinning waits blurred it): svds
 * and LSQR/LSMR build the transpose only for SLA_TRANSPOSE_EXPLICIT. */
