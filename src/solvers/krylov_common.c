/* Pieces every Krylov method shares: the true residual, the report,
 * the tolerance and the monitor. */
#include "krylov.h"
#include "methods.h"

#include <math.h>

double sla__true_residual(const sla__op *A, const double *b, const double *x, double *r)
{
    A->apply(A->data, x, r, A->nt);
    sla_int n = A->n;
    double rr = 0.0;
    int nt = A->nt;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : rr) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        double ri = b[i] - r[i]; /* r = b - A x */
        r[i] = ri;
        rr += ri * ri;
    }
    sla__op_sum(A, &rr, 1);
    if (sla__nrm2_fast_ok(rr) || isnan(rr)) return sqrt(rr);
    return sla__op_nrm2(A, r); /* underflowed or overflowed: scaled sum */
}

double sla__ktol(const sla__kopts *o, double bnorm) { return fmax(o->rtol * bnorm, o->atol); }

double sla__kstart(const sla__op *A, const sla__kopts *o, const double *b, double *x, double *r,
                   double *bnorm, double *tol)
{
    *bnorm = sla__op_nrm2(A, b);
    *tol = sla__ktol(o, *bnorm);
    if (o->use_x0) return sla__true_residual(A, b, x, r);
    sla__zero(A->n, x);
    sla__copy(A->n, b, r);
    return *bnorm;
}

void sla__kinfo_finish(sla_solve_info *info, sla_int iterations, double res_abs, double bnorm,
                       const sla__kopts *o, sla_reason reason_if_not_converged)
{
    info->iterations = iterations;
    info->residual_abs = res_abs;
    info->rhs_norm = bnorm;
    info->residual = bnorm > 0.0 ? res_abs / bnorm : res_abs;
    if (!isfinite(res_abs))
        info->reason = SLA_DIVERGED_NAN;
    else if (bnorm > 0.0 && res_abs <= o->rtol * bnorm)
        info->reason = SLA_CONVERGED_RTOL;
    else if (res_abs <= o->atol || res_abs == 0.0)
        info->reason = SLA_CONVERGED_ATOL;
    else
        info->reason = reason_if_not_converged;
    info->converged = info->reason > 0;
}

bool sla__kmonitor(const sla__kopts *o, sla_int it, double rel)
{
    if (o->deadline > 0.0 && sla__now() > o->deadline) return true;
    if (!o->monitor) return false;
    sla_int every = o->monitor_every > 0 ? o->monitor_every : 1;
    if (it % every) return false;
    return o->monitor(o->monitor_user, it, rel) != 0;
}

sla_reason sla__kstop_reason(const sla__kopts *o)
{
    return o->deadline > 0.0 && sla__now() > o->deadline ? SLA_DIVERGED_TIME : SLA_DIVERGED_USER;
}

sla_status sla__kpc_error(sla_ctx *ctx, sla_status st, const char *method)
{
    return sla__error(ctx, st, "%s: the preconditioner failed (%s)", method, sla_status_name(st));
}

/* The iteration is the registry's (src/solvers/methods.c): one place says
 * which methods are Krylov methods and what runs them. */
sla__krylov_fn sla__krylov_method(sla_method m)
{
    const sla__method_entry *e = sla__method_find(m);
    return e ? e->krylov : NULL;
}
