/* Matrix-free solves: the Krylov methods (written over sla__op) on an
 * operator the caller applies through a callback, with an optional user
 * preconditioner, and the transposed solve for adjoints.
 *
 * A callback that fails cannot stop a method mid-product (sla__op's apply
 * returns nothing), so the wrapper records the failure, fills y with NaN
 * and makes no further calls; a monitor installed for the run stops the
 * iteration at the next check, and the solve returns SLA_ERR_CALLBACK. */
#include "krylov.h"
#include "methods.h"
#include "sla/linop.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct linop_run {
    sla_linop_fn fn;
    void *user;
    sla_int n;
    const char *name;      /* "apply" or "apply_transpose", for the message */
    sla_int calls;
    int rc;                /* the failing callback's return value */
    bool failed;
    sla_user_precond pc;   /* when precond = user */
    bool pc_failed;
    sla_monitor_fn monitor; /* the caller's monitor, if any */
    void *monitor_user;
    sla_int monitor_every;
} linop_run;

static void fill_nan(sla_int n, double *y)
{
    for (sla_int i = 0; i < n; i++) y[i] = NAN;
}

/* y = A x through the callback; after a failure, y = NaN and no call. */
static void op_apply(void *data, const double *x, double *y, int nt)
{
    (void)nt;
    linop_run *r = data;
    if (r->failed) {
        fill_nan(r->n, y);
        return;
    }
    r->calls++;
    int rc = r->fn(r->user, r->n, x, y);
    if (rc != 0) {
        r->failed = true;
        r->rc = rc;
        fill_nan(r->n, y);
    }
}

/* z = M^-1 r (M^-T r when transpose; M symmetric when apply_transpose is NULL). */
static sla_status pc_apply(const sla__pc *pc, bool transpose, const double *rv, double *z, int nt)
{
    (void)nt;
    linop_run *r = pc->fact;
    sla_status st = (transpose && r->pc.apply_transpose)
                        ? r->pc.apply_transpose(r->pc.user, pc->n, rv, z)
                        : r->pc.apply(r->pc.user, pc->n, rv, z);
    if (st != SLA_OK) r->pc_failed = true;
    return st == SLA_OK ? SLA_OK : SLA_ERR_CALLBACK;
}

/* Stops the iteration once the operator failed, else the caller's monitor. */
static int run_monitor(void *user, sla_int it, double rel)
{
    linop_run *r = user;
    if (r->failed) return 1;
    if (!r->monitor) return 0;
    sla_int every = r->monitor_every > 0 ? r->monitor_every : 1;
    return it % every ? 0 : r->monitor(r->monitor_user, it, rel);
}

static sla_status check_opts(sla_ctx *ctx, const sla_solver_options *o, bool transpose,
                             bool have_tr)
{
    /* the registry says which methods iterate (cocg too: CG on a real operator) */
    const sla__method_entry *e = sla__method_find(o->method);
    if (!e || (o->method != SLA_METHOD_AUTO && (e->desc.kind != SLA_KIND_KRYLOV || !e->krylov)))
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "matrix-free solve: method %s needs a matrix; an operator runs cg, "
                          "minres, cocg (cg on a real operator), bicgstab, gmres or auto (gmres)",
                          sla_method_name(o->method));
    if (o->precond != SLA_PRECOND_NONE && o->precond != SLA_PRECOND_USER)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "matrix-free solve: precond %s needs a matrix; an operator takes "
                          "precond none or user (options.user_precond)",
                          sla_precond_name(o->precond));
    if (o->precond == SLA_PRECOND_USER && !o->user_precond.apply)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "precond=user needs options.user_precond.apply");
    if (!(o->rtol >= 0.0) || !(o->atol >= 0.0) || !isfinite(o->rtol) || !isfinite(o->atol))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "rtol and atol must be finite and >= 0 (got %g, %g)",
                          o->rtol, o->atol);
    if (o->maxiter < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "maxiter must be >= 0 (got %lld)", (long long)o->maxiter);
    if (o->restart < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "restart must be >= 0 (got %d)", o->restart);
    if (!(o->max_seconds >= 0.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "max_seconds must be >= 0 (got %g)", o->max_seconds);
    bool symmetric = o->method != SLA_METHOD_AUTO && (e->desc.flags & SLA_CAP_SYMMETRIC);
    if (transpose && !have_tr && !symmetric)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "matrix-free transposed solve with method %s needs apply_transpose "
                          "(only cg, minres and cocg, for a symmetric A, use apply)",
                          sla_method_name(o->method == SLA_METHOD_AUTO ? SLA_METHOD_GMRES : o->method));
    return SLA_OK;
}

static sla_status check_vec(sla_ctx *ctx, sla_int n, const double *v, const char *what)
{
    for (sla_int i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return sla__error(ctx, SLA_ERR_VALUE, "matrix-free solve: %s[%lld] = %g is not finite",
                              what, (long long)i, v[i]);
    return SLA_OK;
}

static sla_status linop_solve(sla_ctx *ctx, bool transpose, sla_int n, sla_linop_fn apply,
                              sla_linop_fn apply_transpose, void *user,
                              const sla_solver_options *opts, const double *b, double *x,
                              sla_solve_info *info)
{
    sla_solve_info local;
    if (!info) info = &local;
    memset(info, 0, sizeof *info);
    info->rcond = -1.0;
    info->backward_error = -1.0;
    if (n < 0) return sla__error(ctx, SLA_ERR_ARGUMENT, "matrix-free solve: n = %lld < 0", (long long)n);
    if (!apply || (n > 0 && (!b || !x)))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "matrix-free solve: apply, b and x must not be NULL");
    sla_solver_options o;
    if (opts) o = *opts;
    else sla_solver_options_default(&o);
    sla_status st = check_opts(ctx, &o, transpose, apply_transpose != NULL);
    if (st) return st;
    sla_method m = o.method == SLA_METHOD_AUTO ? SLA_METHOD_GMRES : o.method;
    snprintf(info->method, sizeof info->method, "%s", sla_method_name(m));
    snprintf(info->precond, sizeof info->precond, "%s", sla_precond_name(o.precond));
    snprintf(info->backend, sizeof info->backend, "matrix-free");
    if (o.method == SLA_METHOD_AUTO)
        snprintf(info->note, sizeof info->note,
                 "auto: gmres (an operator has no structure to inspect; method cg or minres "
                 "for a symmetric one)");
    if ((st = check_vec(ctx, n, b, "b"))) return st;
    if (o.use_x0 && (st = check_vec(ctx, n, x, "x0"))) return st;

    if (n == 0) { /* nothing to solve, nothing to call */
        info->reason = SLA_CONVERGED_ATOL;
        info->converged = true;
        return sla__ok(ctx, SLA_OK);
    }
    double t0 = sla__now();
    linop_run run = {.fn = transpose && apply_transpose ? apply_transpose : apply, .user = user, .n = n,
                     .name = transpose && apply_transpose ? "apply_transpose" : "apply",
                     .monitor = o.monitor, .monitor_user = o.monitor_user,
                     .monitor_every = o.monitor_every};
    sla__op op = {.n = n, .n_global = n, .nt = sla__threads(ctx), .data = &run,
                  .apply = op_apply, .apply_dot = NULL, .allreduce = NULL, .comm = NULL};
    sla__pc pc;
    memset(&pc, 0, sizeof pc);
    bool user_pc = o.precond == SLA_PRECOND_USER;
    if (user_pc) {
        run.pc = o.user_precond;
        pc.kind = SLA_PRECOND_USER;
        pc.n = n;
        pc.user = o.user_precond;
        pc.fact = &run;
        pc.apply = pc_apply;
    }
    sla__kopts ko = {.rtol = o.rtol, .atol = o.atol,
                     .maxiter = o.maxiter > 0 ? o.maxiter : (n * 10 > 1000 ? n * 10 : 1000),
                     .restart = o.restart, .use_x0 = o.use_x0, .pc_transpose = transpose,
                     .monitor = run_monitor, .monitor_user = &run, .monitor_every = 1,
                     .deadline = o.max_seconds > 0.0 ? t0 + o.max_seconds : 0.0};
    st = sla__krylov_method(m)(ctx, &op, user_pc ? &pc : NULL, b, x, &ko, info);
    info->solve_seconds = sla__now() - t0;
    if (run.failed) {
        info->converged = false;
        info->reason = SLA_DIVERGED_USER;
        return sla__error(ctx, SLA_ERR_CALLBACK,
                          "matrix-free %s: the operator callback (%s) returned %d on call %lld",
                          info->method, run.name, run.rc, (long long)run.calls);
    }
    if (st < 0) {
        if (run.pc_failed)
            return sla__error(ctx, SLA_ERR_CALLBACK,
                              "matrix-free %s: the preconditioner callback (%s) failed",
                              info->method, transpose && o.user_precond.apply_transpose
                                                ? "apply_transpose" : "apply");
        return st;
    }
    if (st == SLA_NOT_CONVERGED)
        return sla__error(ctx, st, "matrix-free %s did not converge: %s after %lld iterations, "
                          "relative residual %.3e", info->method, sla_reason_name(info->reason),
                          (long long)info->iterations, info->residual);
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_linop_solve(sla_ctx *ctx, sla_int n, sla_linop_fn apply,
                           sla_linop_fn apply_transpose, void *user,
                           const sla_solver_options *opts, const double *b, double *x,
                           sla_solve_info *info)
{
    return linop_solve(ctx, false, n, apply, apply_transpose, user, opts, b, x, info);
}

sla_status sla_linop_solve_transpose(sla_ctx *ctx, sla_int n, sla_linop_fn apply,
                                     sla_linop_fn apply_transpose, void *user,
                                     const sla_solver_options *opts, const double *b, double *x,
                                     sla_solve_info *info)
{
    return linop_solve(ctx, true, n, apply, apply_transpose, user, opts, b, x, info);
}

void sla_solver_options_set_user_precond(
    sla_solver_options *opts, sla_status (*apply)(void *user, sla_int n, const double *r, double *z),
    sla_status (*apply_transpose)(void *user, sla_int n, const double *r, double *z), void *user)
{
    if (!opts) return;
    opts->precond = SLA_PRECOND_USER;
    opts->user_precond = (sla_user_precond){apply, apply_transpose, user};
}
