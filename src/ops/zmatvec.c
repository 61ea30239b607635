/* Complex products y = op(A) x (op N, T or H) for a complex or real A, and
 * the VJP of y = A x in PyTorch's convention (sla/complex.h): gx = A^H gy,
 * gA[k] = gy[row_k] conj(x[col_k]). */
#include "../core/internal.h"

#include <stdint.h>

/* Whether [a, a + na) and [b, b + nb) (complex entries) share memory. */
static bool overlap(const sla_complex *a, sla_int na, const sla_complex *b, sla_int nb)
{
    uintptr_t a0 = (uintptr_t)a, a1 = a0 + (uintptr_t)na * sizeof *a;
    uintptr_t b0 = (uintptr_t)b, b1 = b0 + (uintptr_t)nb * sizeof *b;
    return na > 0 && nb > 0 && a0 < b1 && b0 < a1;
}

static sla_status check_args(sla_ctx *ctx, const char *fname, const sla_matrix *A, sla_int ib)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: A is NULL", fname);
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "%s: value array %lld out of range [0, %lld)", fname,
                          (long long)ib, (long long)A->nbatch);
    return SLA_OK;
}

sla_status sla_zmatvec(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla_op op,
                       const sla_complex *x, sla_complex *y)
{
    sla_status st = check_args(ctx, "sla_zmatvec", A, ib);
    if (st) return st;
    if (op != SLA_OP_N && op != SLA_OP_T && op != SLA_OP_H)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zmatvec: unknown op %d (SLA_OP_N, "
                          "SLA_OP_T or SLA_OP_H)", (int)op);
    sla_int nx = op == SLA_OP_N ? A->ncols : A->nrows, ny = op == SLA_OP_N ? A->nrows : A->ncols;
    if ((nx > 0 && !x) || (ny > 0 && !y))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zmatvec: %s is NULL", !y ? "y" : "x");
    if (overlap(x, nx, y, ny))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zmatvec: x and y overlap (they may not alias)");
    sla__zspmv(A, ib, (int)op, (const sla__z *)x, (sla__z *)y, sla__threads(ctx));
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_zmatvec_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_complex *x,
                           const sla_complex *gy, sla_complex *gx, sla_complex *gA)
{
    sla_status st = check_args(ctx, "sla_zmatvec_vjp", A, ib);
    if (st) return st;
    const sla_int n = A->nrows, m = A->ncols;
    if ((gx || gA) && n > 0 && !gy)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zmatvec_vjp: gy is NULL");
    if (gA && m > 0 && !x)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zmatvec_vjp: x is NULL (needed for gA)");
    if (gx && overlap(gx, m, gy, n))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zmatvec_vjp: gx and gy overlap");
    const int nt = sla__threads(ctx);
    /* gx = A^H gy */
    if (gx) sla__zspmv(A, ib, SLA_OP_H, (const sla__z *)gy, (sla__z *)gx, nt);
    if (gA) {
        /* gA[k] = gy[i] conj(x[j]) for the entry k = (i, j) */
        const sla__z *zx = (const sla__z *)x, *zg = (const sla__z *)gy;
        sla__z *g = (sla__z *)gA;
        const sla_int *rp = A->rowptr;
        const int32_t *ci = A->colind;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
        for (sla_int i = 0; i < n; i++)
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) g[p] = zg[i] * conj(zx[ci[p]]);
    }
    return sla__ok(ctx, SLA_OK);
}
