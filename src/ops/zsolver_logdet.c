/* The log-determinant of a complex direct solver object and its VJP
 * (sla_zsolver_logdet, sla_zsolver_logdet_vjp): the factor of value array
 * ib comes from the solver (sla__zsolver_factor, zsolver.c: factored on
 * first use, reused after), the phase and log|det| from the backend, the
 * gradient from sla__zlogdet_grad_factor (zlogdet.c). */
#include "../solvers/zsolver.h"

#include <math.h>
#include <stdio.h>

/* The factor of S for value array ib, or an error naming who. */
static sla_status solver_factor(sla_ctx *ctx, const char *who, sla_solver *S, sla_int ib,
                                const sla__zdirect_ops **ops, void **sym, void **num)
{
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: S is NULL", who);
    if (!sla__solver_is_complex(S))
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "%s: the solver is real; use sla_solver_logdet (sla/eig.h)", who);
    const sla_matrix *A = sla__zsolver_matrix(S);
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "%s: value array %lld out of range [0, %lld)", who,
                          (long long)ib, (long long)A->nbatch);
    return sla__zsolver_factor(ctx, S, ib, ops, sym, num);
}

sla_status sla_zsolver_logdet(sla_ctx *ctx, sla_solver *S, sla_int ib, sla_complex *phase, double *logabs)
{
    if (!phase || !logabs)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zsolver_logdet: phase or logabs is NULL");
    const sla__zdirect_ops *ops;
    void *sym, *num;
    sla_status st = solver_factor(ctx, "sla_zsolver_logdet", S, ib, &ops, &sym, &num);
    if (st == SLA_ERR_SINGULAR) {
        *phase = 0.0;
        *logabs = -INFINITY;
    }
    if (st) return st;
    st = ops->logdet(ctx, sym, num, phase, logabs);
    return st ? st : sla__ok(ctx, SLA_OK);
}

sla_status sla_zsolver_logdet_vjp(sla_ctx *ctx, sla_solver *S, sla_int ib, double g_logabs, double g_theta,
                                  sla_complex *gA)
{
    if (!gA) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zsolver_logdet_vjp: gA is NULL");
    const sla__zdirect_ops *ops;
    void *sym, *num;
    sla_status st = solver_factor(ctx, "sla_zsolver_logdet_vjp", S, ib, &ops, &sym, &num);
    if (st) return st;
    st = sla__zlogdet_grad_factor(ctx, ops, sym, num, sla__zsolver_matrix(S), ib, g_logabs, g_theta, gA);
    return st ? st : sla__ok(ctx, SLA_OK);
}
