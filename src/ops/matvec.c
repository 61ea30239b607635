/* y = A x and its VJP. */
#include "../core/internal.h"

static sla_status check(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla_int nrhs,
                        const void *x, sla_int ldx, sla_int nx, const void *y, sla_int ldy,
                        sla_int ny)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "matrix is NULL");
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "value array %lld out of range [0, %lld)",
                          (long long)ib, (long long)A->nbatch);
    if (nrhs < 0) return sla__error(ctx, SLA_ERR_DIMENSION, "nrhs = %lld < 0", (long long)nrhs);
    if (nrhs > 0 && ((nx > 0 && !x) || (ny > 0 && !y)))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "NULL vector");
    if (ldx < nx || ldy < ny)
        return sla__error(ctx, SLA_ERR_DIMENSION,
                          "leading dimensions %lld, %lld too small for %lld, %lld rows",
                          (long long)ldx, (long long)ldy, (long long)nx, (long long)ny);
    sla_status st = sla__check_extent(ctx, nrhs, ldx, "nrhs x leading dimension of x");
    if (!st) st = sla__check_extent(ctx, nrhs, ldy, "nrhs x leading dimension of y");
    return st;
}

sla_status sla_matvec(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla_int nrhs, const double *x,
                      sla_int ldx, double *y, sla_int ldy)
{
    if (sla__require_real(ctx, A, "sla_matvec")) return SLA_ERR_UNSUPPORTED;
    sla_status st = check(ctx, A, ib, nrhs, x, ldx, A ? A->ncols : 0, y, ldy, A ? A->nrows : 0);
    if (st) return st;
    int nt = sla__threads(ctx);
    for (sla_int r = 0; r < nrhs; r++) sla__spmv(A, ib, x + r * ldx, y + r * ldy, nt);
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_matvec_transpose(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla_int nrhs,
                                const double *x, sla_int ldx, double *y, sla_int ldy)
{
    if (sla__require_real(ctx, A, "sla_matvec_transpose")) return SLA_ERR_UNSUPPORTED;
    sla_status st = check(ctx, A, ib, nrhs, x, ldx, A ? A->nrows : 0, y, ldy, A ? A->ncols : 0);
    if (st) return st;
    int nt = sla__threads(ctx);
    double *work = NULL;
    if (nt > 1 && nrhs > 0) {
        work = sla__ctx_malloc(ctx, (size_t)nt * (size_t)A->ncols, sizeof *work,
                               "a transposed product");
        if (!work) return SLA_ERR_NOMEM;
    }
    for (sla_int r = 0; r < nrhs; r++) sla__spmv_t(A, ib, x + r * ldx, y + r * ldy, nt, work);
    sla_free(ctx, work);
    return sla__ok(ctx, SLA_OK);
}

/* gA[k] = sum_r gy[row_k, r] x[col_k, r] */
static void outer_on_pattern(const sla_matrix *A, sla_int nrhs, const double *x, sla_int ldx,
                             const double *gy, sla_int ldgy, double *gA, int nt)
{
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    sla_int n = A->nrows;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        for (sla_int p = rp[i]; p < rp[i + 1]; p++) {
            double s = 0.0;
            for (sla_int r = 0; r < nrhs; r++) s += gy[r * ldgy + i] * x[r * ldx + ci[p]];
            gA[p] = s;
        }
    }
}

sla_status sla_matvec_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla_int nrhs,
                          const double *x, sla_int ldx, const double *gy, sla_int ldgy, double *gx,
                          sla_int ldgx, double *gA)
{
    if (sla__require_real(ctx, A, "sla_matvec_vjp")) return SLA_ERR_UNSUPPORTED;
    sla_status st = check(ctx, A, ib, nrhs, x, ldx, A ? A->ncols : 0, gy, ldgy, A ? A->nrows : 0);
    if (st) return st;
    if (gx && (st = sla_matvec_transpose(ctx, A, ib, nrhs, gy, ldgy, gx, ldgx))) return st;
    if (gA) outer_on_pattern(A, nrhs, x, ldx, gy, ldgy, gA, sla__threads(ctx));
    return sla__ok(ctx, SLA_OK);
}

/* nbatch x (rows or columns) must be addressable */
static sla_status check_batch_extent(sla_ctx *ctx, const sla_matrix *A)
{
    sla_int m = A->nrows > A->ncols ? A->nrows : A->ncols;
    return sla__check_extent(ctx, A->nbatch, m, "nbatch x vector length");
}

sla_status sla_matvec_batch(sla_ctx *ctx, const sla_matrix *A, const double *x, double *y)
{
    if (sla__require_real(ctx, A, "sla_matvec_batch")) return SLA_ERR_UNSUPPORTED;
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "matrix is NULL");
    if (check_batch_extent(ctx, A)) return SLA_ERR_TOO_LARGE;
    for (sla_int b = 0; b < A->nbatch; b++) {
        sla_status st = sla_matvec(ctx, A, b, 1, x + b * A->ncols, A->ncols, y + b * A->nrows, A->nrows);
        if (st) return st;
    }
    return SLA_OK;
}

sla_status sla_matvec_batch_vjp(sla_ctx *ctx, const sla_matrix *A, const double *x,
                                const double *gy, double *gx, double *gA)
{
    if (sla__require_real(ctx, A, "sla_matvec_batch_vjp")) return SLA_ERR_UNSUPPORTED;
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "matrix is NULL");
    if (check_batch_extent(ctx, A)) return SLA_ERR_TOO_LARGE;
    for (sla_int b = 0; b < A->nbatch; b++) {
        sla_status st = sla_matvec_vjp(ctx, A, b, 1, x + b * A->ncols, A->ncols, gy + b * A->nrows,
                                       A->nrows, gx ? gx + b * A->ncols : NULL, A->ncols,
                                       gA ? gA + b * A->nnz : NULL);
        if (st) return st;
    }
    return SLA_OK;
}
