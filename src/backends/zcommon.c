/* Helpers shared by the complex direct backends (zbackend.h): complex value
 * arrays, the finite-value, pivot and solve checks, and the running
 * product of pivots for the log-determinant. They need no backend library,
 * so this file is always compiled. */
#include "zbackend.h"

#include <math.h>
#include <stdio.h>

sla__z *sla__zvalues(sla_ctx *ctx, const sla_matrix *A, sla_int ib, bool conjugate, const char *what)
{
    sla__z *x = sla__ctx_malloc(ctx, (size_t)A->nnz, sizeof *x, what);
    if (!x) return NULL;
    for (sla_int k = 0; k < A->nnz; k++) {
        sla__z v = sla__zval(A, ib, k);
        x[k] = conjugate ? conj(v) : v;
    }
    return x;
}

sla_status sla__zcheck_finite_values(sla_ctx *ctx, const char *who, sla_int nnz, const sla__z *ax,
                                     sla_int ib)
{
    for (sla_int k = 0; k < nnz; k++) {
        double re = creal(ax[k]), im = cimag(ax[k]);
        if (!isfinite(re) || !isfinite(im))
            return sla__error(ctx, SLA_ERR_VALUE, "%s: value %lld of array %lld has a%s %s part (%g%+gi)",
                              who, (long long)k, (long long)ib,
                              isnan(isfinite(re) ? im : re) ? " nan" : "n infinite",
                              isfinite(re) ? "imaginary" : "real", re, im);
    }
    return SLA_OK;
}

sla_status sla__zpivot_check(sla_ctx *ctx, const char *who, const sla_matrix *A, const sla__z *ax,
                             const double *rs, bool rs_recip, const sla__z *udiag,
                             const sla_int *q)
{
    const sla_int n = A->nrows, nnz = A->nnz;
    char what[64];
    snprintf(what, sizeof what, "%s pivot check", who);
    double *aa = sla__ctx_malloc(ctx, (size_t)nnz, sizeof *aa, what);
    double *ud = aa ? sla__ctx_malloc(ctx, (size_t)n, sizeof *ud, what) : NULL;
    sla_status st = SLA_ERR_NOMEM;
    if (ud) {
        for (sla_int k = 0; k < nnz; k++) aa[k] = cabs(ax[k]);
        for (sla_int k = 0; k < n; k++) ud[k] = cabs(udiag[k]);
        st = sla__pivot_check(ctx, who, A, aa, rs, rs_recip, ud, q);
    }
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__free(&a, aa);
    sla__free(&a, ud);
    return st;
}

sla_status sla__zcheck_solve_args(sla_ctx *ctx, const char *who, int op, sla_int n, sla_int nrhs,
                                  const sla__z *b, sla_int ldb, const sla__z *x, sla_int ldx)
{
    if (op < 0 || op > 2)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s solve: op %d is not 0 (A), 1 (A^T) or 2 (A^H)",
                          who, op);
    return sla__check_solve_args(ctx, who, n, nrhs, (const double *)b, ldb, (const double *)x, ldx);
}

sla_status sla__zcheck_solution(sla_ctx *ctx, const char *who, sla_int n, sla_int nrhs,
                                const sla__z *b, sla_int ldb, const sla__z *x, sla_int ldx)
{
    for (sla_int j = 0; j < nrhs; j++) {
        if (sla__zall_finite(n, x + j * ldx)) continue;
        if (!sla__zall_finite(n, b + j * ldb))
            return sla__error(ctx, SLA_ERR_VALUE, "%s: right-hand side %lld contains NaN or Inf", who,
                              (long long)j);
        return sla__error(ctx, SLA_ERR_SINGULAR,
                          "%s: solution %lld is not finite (matrix numerically singular)", who,
                          (long long)j);
    }
    return SLA_OK;
}

void sla__zconj(sla_int n, sla__z *x)
{
    for (sla_int i = 0; i < n; i++) x[i] = conj(x[i]);
}

void sla__zlogdet_acc(sla__z u, sla__z *phase, double *logabs)
{
    double m = cabs(u);
    if (m == 0.0 || *phase == 0.0) {
        *phase = 0.0;
        *logabs = -INFINITY;
        return;
    }
    /* det = prod u = prod |u| * prod (u / |u|); renormalize the phase so
     * that rounding in the product of unit numbers does not drift */
    sla__z p = *phase * (u / m);
    *phase = p / cabs(p);
    *logabs += log(m);
}
