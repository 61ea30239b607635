/* Complex log-determinant: det A = phase * exp(logabs) from a sparse LU
 * (UMFPACK, else KLU, else SuperLU) or, for a Hermitian positive definite
 * A, Cholesky (CHOLMOD) factor, and its VJP
 *     d log det A = sum_k (A^-1)[col_k, row_k] dA_k   (log det = logabs + i theta),
 * so for L(logabs, theta) with real gradients g_logabs, g_theta
 *     dL = Re((g_logabs - i g_theta) d log det A),
 *     grad_A[k] = (g_logabs + i g_theta) conj((A^-1)[col_k, row_k])
 * in PyTorch's convention (sla/complex.h). (A^-1)[col_k, row_k] comes from
 * the backend's selected inversion when it has one (UMFPACK: the LU
 * recurrences of src/backends/lu_selinv.c, about a factorization's cost);
 * a backend without one (CHOLMOD, KLU, SuperLU) refactors with UMFPACK for
 * it, as the real logdet does; only without UMFPACK do columns of A^-1
 * come from n solves with the factor (column i gives the entries of row i).
 * sla_zsolver_logdet and its VJP (zsolver_logdet.c) use the factor of a
 * solver object through the same sla__zlogdet_grad_factor. */
#include "../solvers/zsolver.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Columns of A^-1 solved together for the gradient. */
#define ZLOGDET_BLOCK 32

sla_status sla__zinv_by_solves(sla_ctx *ctx, const sla__zdirect_ops *ops, void *sym, void *num,
                                 const sla_matrix *A, sla__z *z)
{
    const sla_int n = A->nrows;
    const sla_int bs = n < ZLOGDET_BLOCK ? n : ZLOGDET_BLOCK;
    if (n == 0) return SLA_OK;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__z *E = sla__ctx_calloc(ctx, (size_t)n * (size_t)bs, sizeof *E, "logdet gradient block");
    sla__z *X = E ? sla__ctx_malloc(ctx, (size_t)n * (size_t)bs, sizeof *X, "logdet gradient block") : NULL;
    sla_status st = X ? SLA_OK : SLA_ERR_NOMEM;
    for (sla_int i0 = 0; i0 < n && !st; i0 += bs) {
        sla_int m = n - i0 < bs ? n - i0 : bs;
        for (sla_int c = 0; c < m; c++) E[c * n + i0 + c] = 1.0;
        st = ops->solve(ctx, sym, num, 0, m, E, n, X, n); /* X = A^-1 E */
        for (sla_int c = 0; c < m; c++) E[c * n + i0 + c] = 0.0;
        for (sla_int c = 0; c < m && !st; c++) {
            const sla_int i = i0 + c;
            for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) z[k] = X[c * n + A->colind[k]];
        }
    }
    sla__free(&a, E);
    sla__free(&a, X);
    return st;
}

/* z[k] = (A^-1)[col_k, row_k] by UMFPACK's selected inversion (u) on a
 * factorization of value array ib of its own. */
static sla_status zinv_by_umfpack(sla_ctx *ctx, const sla__zdirect_ops *u, const sla_matrix *A, sla_int ib,
                                  sla__z *z)
{
    const sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = sla__threads(ctx)};
    void *sym = NULL, *num = NULL;
    sla_status st = u->analyze(ctx, A, &o, &sym);
    if (!st) st = u->factor(ctx, sym, A, ib, &num);
    if (!st) st = u->selinv(ctx, sym, num, A, z);
    if (num) u->free_num(num);
    if (sym) u->free_sym(sym);
    return st;
}

sla_status sla__zlogdet_grad_factor(sla_ctx *ctx, const sla__zdirect_ops *ops, void *sym, void *num,
                                    const sla_matrix *A, sla_int ib, double g_logabs, double g_theta,
                                    sla__z *gA)
{
    if (!ops || !A || !gA) return sla__error(ctx, SLA_ERR_ARGUMENT, "logdet gradient: NULL argument");
    if (!isfinite(g_logabs) || !isfinite(g_theta))
        return sla__error(ctx, SLA_ERR_VALUE, "logdet gradient: g_logabs = %g, g_theta = %g is not finite",
                          g_logabs, g_theta);
    sla__z phase;
    double logabs;
    sla_status st = ops->logdet(ctx, sym, num, &phase, &logabs);
    if (st) return st;
    if (phase == 0.0)
        return sla__error(ctx, SLA_ERR_SINGULAR,
                          "logdet gradient: value array %lld is singular (a zero pivot), so log|det| = "
                          "-inf has no gradient",
                          (long long)ib);
    const sla__zdirect_ops *u = sla__zdirect_backend(SLA_METHOD_UMFPACK);
    if (ops->selinv) st = ops->selinv(ctx, sym, num, A, gA);
    else if (u && u->selinv) st = zinv_by_umfpack(ctx, u, A, ib, gA);
    else st = sla__zinv_by_solves(ctx, ops, sym, num, A, gA);
    if (st) return st;
    const sla__z g = g_logabs + g_theta * _Complex_I;
    for (sla_int k = 0; k < A->nnz; k++) gA[k] = g * conj(gA[k]);
    return SLA_OK;
}

/* A factor of value array ib of A for the one-shot calls: CHOLMOD when A
 * is exactly Hermitian with a positive diagonal and the Cholesky succeeds,
 * else the first LU backend in the build. On success the caller frees
 * *sym and *num with (*ops)->free_num / free_sym. */
static sla_status oneshot_factor(sla_ctx *ctx, const char *who, const sla_matrix *A, sla_int ib,
                                 const sla__zdirect_ops **ops, void **sym, void **num)
{
    *ops = NULL;
    *sym = *num = NULL;
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: matrix is NULL", who);
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "%s: logdet of a non-square %lld x %lld matrix", who,
                          (long long)A->nrows, (long long)A->ncols);
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "%s: value array %lld out of range [0, %lld)", who,
                          (long long)ib, (long long)A->nbatch);
    const sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = sla__threads(ctx)};
    sla_status st;
    const sla__zdirect_ops *chol = sla__zdirect_backend(SLA_METHOD_CHOLESKY);
    if (chol) {
        sla_matrix_props pr;
        if ((st = sla_matrix_properties(ctx, A, ib, 0.0, &pr))) return st;
        if (pr.hermitian && pr.positive_diagonal) {
            /* a trial: a Hermitian A with a positive diagonal is often positive definite */
            st = chol->analyze(ctx, A, &o, sym);
            if (!st) st = chol->factor(ctx, *sym, A, ib, num);
            if (!st) {
                *ops = chol;
                return SLA_OK;
            }
            chol->free_sym(*sym);
            *sym = NULL;
            if (st != SLA_ERR_NOT_SPD) return st;
        }
    }
    static const sla_method lu[] = {SLA_METHOD_UMFPACK, SLA_METHOD_KLU, SLA_METHOD_SUPERLU};
    const sla__zdirect_ops *d = NULL;
    for (size_t i = 0; i < sizeof lu / sizeof *lu && !d; i++) d = sla__zdirect_backend(lu[i]);
    if (!d)
        return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                          "%s: no sparse LU (UMFPACK, KLU or SuperLU) is available in this build", who);
    st = d->analyze(ctx, A, &o, sym);
    if (!st) st = d->factor(ctx, *sym, A, ib, num);
    if (st) {
        if (*sym) d->free_sym(*sym);
        *sym = NULL;
        return st;
    }
    *ops = d;
    return SLA_OK;
}

/* sla_zlogdet and sla_zlogdet_vjp (gA NULL: no gradient). */
static sla_status zlogdet(sla_ctx *ctx, const char *who, const sla_matrix *A, sla_int ib, double g_logabs,
                          double g_theta, sla__z *phase, double *logabs, sla__z *gA)
{
    if (gA && (!isfinite(g_logabs) || !isfinite(g_theta)))
        return sla__error(ctx, SLA_ERR_VALUE, "%s: g_logabs = %g, g_theta = %g is not finite", who,
                          g_logabs, g_theta);
    const sla__zdirect_ops *ops;
    void *sym, *num;
    sla_status st = oneshot_factor(ctx, who, A, ib, &ops, &sym, &num);
    if (st == SLA_ERR_SINGULAR) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s", sla_ctx_message(ctx));
        if (phase) *phase = 0.0;
        if (logabs) *logabs = -INFINITY;
        return sla__error(ctx, st, "%s: the matrix is singular (phase 0, log|det| = -inf): %s", who, msg);
    }
    if (st) return st;
    sla__z ph;
    double la;
    st = ops->logdet(ctx, sym, num, &ph, &la);
    if (!st) {
        if (phase) *phase = ph;
        if (logabs) *logabs = la;
    }
    if (!st && gA) st = sla__zlogdet_grad_factor(ctx, ops, sym, num, A, ib, g_logabs, g_theta, gA);
    ops->free_num(num);
    ops->free_sym(sym);
    return st ? st : sla__ok(ctx, SLA_OK);
}

sla_status sla_zlogdet(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla_complex *phase, double *logabs)
{
    if (!phase || !logabs) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zlogdet: phase or logabs is NULL");
    return zlogdet(ctx, "sla_zlogdet", A, ib, 0.0, 0.0, phase, logabs, NULL);
}

sla_status sla_zlogdet_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, double g_logabs, double g_theta,
                           sla_complex *phase, double *logabs, sla_complex *gA)
{
    if (!gA) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zlogdet_vjp: gA is NULL");
    return zlogdet(ctx, "sla_zlogdet_vjp", A, ib, g_logabs, g_theta, phase, logabs, gA);
}
