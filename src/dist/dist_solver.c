/* Distributed Krylov solves: the library's own CG, BiCGStab, GMRES and
 * MINRES over an operator whose product is the distributed SpMV (or its
 * transpose) and whose reductions go through MPI_Allreduce; Jacobi and
 * block-Jacobi preconditioners from the local diagonal block; the solve VJP
 * as one adjoint solve with the transposed operator. */
#include "../solvers/krylov.h"
#include "../solvers/methods.h"
#include "dist_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct sla_dist_solver {
    sla_allocator alloc;
    sla_dist_matrix *D;
    sla_solver_options opts;
    sla__pc *pc; /* on the diagonal block */
};

/* The Krylov operator's data: the matrix, the direction, the first MPI
 * error met (the operator table has no error return). */
typedef struct {
    sla_dist_matrix *D;
    bool transpose;
    int rc;
} dist_op;

static void op_apply(void *data, const double *x, double *y, int nt)
{
    dist_op *o = data;
    int rc = o->transpose ? sla__dist_spmv_t(o->D, x, y, nt) : sla__dist_spmv(o->D, x, y, nt);
    if (rc && !o->rc) o->rc = rc;
}

static double op_apply_dot(void *data, const double *x, double *y, int nt)
{
    dist_op *o = data;
    if (o->transpose) {
        op_apply(data, x, y, nt);
        return sla__dot(o->D->nlocal, x, y, nt); /* local part; CG sums it through allreduce */
    }
    double dot = 0.0;
    int rc = sla__dist_spmv_dot(o->D, x, y, nt, &dot);
    if (rc && !o->rc) o->rc = rc;
    return dot;
}

static void op_allreduce(void *comm, double *vals, int count)
{
    dist_op *o = comm;
    double t0 = MPI_Wtime();
    int rc = MPI_Allreduce(MPI_IN_PLACE, vals, count, MPI_DOUBLE, MPI_SUM, o->D->comm);
    o->D->stats.allreduce_seconds += MPI_Wtime() - t0;
    o->D->stats.allreduces++;
    o->D->stats.allreduce_doubles += count;
    if (rc && !o->rc) o->rc = rc;
}

static sla_status check_options(sla_ctx *ctx, const sla_solver_options *o)
{
    /* what the distributed layer runs: SLA_CAP_DISTRIBUTED in the method
     * registry (src/solvers/methods.c) */
    const sla__method_entry *m = sla__method_find(o->method);
    if (!m || !(m->desc.flags & SLA_CAP_DISTRIBUTED) || !m->krylov)
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "distributed solver: method %s is not available distributed (use cg, bicgstab, "
                          "gmres or minres)",
                          sla_method_name(o->method));
    const sla__method_entry *p = sla__precond_find(o->precond);
    if (!p || !(p->desc.flags & SLA_CAP_DISTRIBUTED))
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "distributed solver: precond %s is not available distributed (use none, jacobi, "
                          "amg, saamg, or block Jacobi with ilu0, ilut, ic0 or ssor)",
                          sla_precond_name(o->precond));
    if (!(o->rtol >= 0.0) || !(o->atol >= 0.0) || !isfinite(o->rtol) || !isfinite(o->atol))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "rtol and atol must be finite and >= 0 (got %g, %g)", o->rtol,
                          o->atol);
    if (o->maxiter < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "maxiter must be >= 0 (got %lld)", (long long)o->maxiter);
    if (o->restart < 0) return sla__error(ctx, SLA_ERR_ARGUMENT, "restart must be >= 0 (got %d)", o->restart);
    return SLA_OK;
}

/* The preconditioner, agreed across ranks: AMG is one BoomerAMG hierarchy
 * over all ranks; the others act on each rank's diagonal block (block
 * Jacobi). With refresh, an AMG hierarchy may be kept (options amg.reuse). */
static sla_status setup_pc(sla_ctx *ctx, sla_dist_solver *S, bool refresh)
{
    sla_dist_matrix *D = S->D;
    if (S->opts.precond == SLA_PRECOND_AMG) {
        if (refresh && S->pc && S->pc->refresh) return S->pc->refresh(ctx, S->pc, NULL, 0);
        sla__pc_destroy(&S->pc);
        bool sym = S->opts.method == SLA_METHOD_CG || S->opts.method == SLA_METHOD_MINRES;
        sla__amg_comm cm = {.comm = D->comm, .agree = sla__dist_agree};
        return sla__amg_create_dist(ctx, &cm, D->n, D->row_start, D->diag, D->offd, D->ghosts, sym,
                                    &S->opts.amg, &S->pc);
    }
    if (S->opts.precond == SLA_PRECOND_SAAMG) { /* one hierarchy over the ranks (options saamg_reuse) */
        if (refresh && S->pc && S->pc->refresh) return S->pc->refresh(ctx, S->pc, NULL, 0);
        sla__pc_destroy(&S->pc);
        return sla__dist_saamg_create(ctx, D, S->opts.saamg_reuse, S->opts.saamg_theta, &S->pc);
    }
    sla__pc_destroy(&S->pc);
    sla_status st = sla__pc_create(ctx, S->opts.precond, S->D->diag, 0, &S->opts, &S->pc);
    if (st) sla__error(ctx, st, "rank %d (global rows from %lld): %s", S->D->rank, (long long)S->D->row_start,
                       sla_ctx_message(ctx));
    return sla__dist_agree(ctx, S->D->comm, st);
}

struct sla__pc *sla__dist_solver_pc(const sla_dist_solver *S) { return S ? S->pc : NULL; }

void sla_dist_solver_destroy(sla_dist_solver **Sp)
{
    if (!Sp || !*Sp) return;
    sla_dist_solver *S = *Sp;
    sla_allocator a = S->alloc;
    sla__pc_destroy(&S->pc);
    sla__free(&a, S);
    *Sp = NULL;
}

sla_status sla_dist_solver_create(sla_ctx *ctx, sla_dist_matrix *D, const sla_solver_options *opts,
                                  sla_dist_solver **out)
{
    if (out) *out = NULL;
    if (!D) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_solver_create: D is NULL");
    sla_solver_options o;
    if (opts) o = *opts;
    else sla_solver_options_default(&o);
    sla_status st = out ? check_options(ctx, &o) : sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_solver_create: out is NULL");
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_dist_solver *S = NULL;
    if (!st) {
        S = sla__calloc(&a, 1, sizeof *S);
        if (!S) st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory for a distributed solver");
    }
    if ((st = sla__dist_agree(ctx, D->comm, st))) {
        sla__free(&a, S);
        return st;
    }
    S->alloc = a;
    S->D = D;
    S->opts = o;
    if (S->opts.maxiter == 0) S->opts.maxiter = D->n * 10 > 1000 ? D->n * 10 : 1000;
    if ((st = setup_pc(ctx, S, false))) {
        sla_dist_solver_destroy(&S);
        return st;
    }
    *out = S;
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_dist_solver_refresh(sla_ctx *ctx, sla_dist_solver *S)
{
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_solver_refresh: S is NULL");
    sla_status st = setup_pc(ctx, S, true);
    return st ? st : sla__ok(ctx, SLA_OK);
}

static sla_status check_finite(sla_ctx *ctx, const sla_dist_matrix *D, const double *v, const char *what)
{
    if (!v) return sla__error(ctx, SLA_ERR_ARGUMENT, "distributed solve: %s is NULL on rank %d", what, D->rank);
    for (sla_int i = 0; i < D->nlocal; i++)
        if (!isfinite(v[i]))
            return sla__error(ctx, SLA_ERR_VALUE, "distributed solve: %s entry %lld (global row %lld) is %g, not finite",
                              what, (long long)i, (long long)(D->row_start + i), v[i]);
    return SLA_OK;
}

/* One solve, forward or transposed, with the agreed checks first. */
static sla_status solve_one(sla_ctx *ctx, sla_dist_solver *S, bool transpose, const double *b, double *x,
                            sla_solve_info *info)
{
    sla_dist_matrix *D = S->D;
    sla_solve_info tmp;
    if (!info) info = &tmp;
    memset(info, 0, sizeof *info);
    snprintf(info->method, sizeof info->method, "%s", sla_method_name(S->opts.method));
    snprintf(info->precond, sizeof info->precond, "%s", sla_precond_name(S->opts.precond));
    snprintf(info->backend, sizeof info->backend, "mpi");
    if (S->opts.precond == SLA_PRECOND_AMG)
        snprintf(info->note, sizeof info->note, "BoomerAMG: one hierarchy over %d ranks%s", D->size,
                 transpose && !(S->opts.method == SLA_METHOD_CG || S->opts.method == SLA_METHOD_MINRES)
                     ? " (transposed solve: a second hierarchy, built from A^T)"
                     : "");
    else if (S->opts.precond == SLA_PRECOND_SAAMG)
        snprintf(info->note, sizeof info->note, "%s", S->pc ? S->pc->note : "saamg");
    else if (S->opts.precond >= SLA_PRECOND_SSOR)
        snprintf(info->note, sizeof info->note, "block Jacobi: %s on each rank's diagonal block (%d ranks)%s%s",
                 info->precond, D->size, S->pc && S->pc->note[0] ? "; this rank: " : "",
                 S->pc ? S->pc->note : "");
    else
        snprintf(info->note, sizeof info->note, "%d ranks", D->size);
    sla_status st = check_finite(ctx, D, b, "right-hand side");
    if (!st && !x) st = sla__error(ctx, SLA_ERR_ARGUMENT, "distributed solve: x is NULL on rank %d", D->rank);
    if (!st && S->opts.use_x0) st = check_finite(ctx, D, x, "initial guess");
    if ((st = sla__dist_agree(ctx, D->comm, st))) return st;

    int nt = sla__threads(ctx);
    if (transpose && nt > 1 && D->nlocal >= SLA_PAR_MIN && !(D->work && D->work_nt >= nt)) {
        sla__free(&D->alloc, D->work); /* scratch of the threaded A_dd^T product; serial without it */
        D->work = sla__malloc(&D->alloc, (size_t)nt * (size_t)D->nlocal, sizeof(double));
        D->work_nt = D->work ? nt : 0;
    }
    dist_op od = {.D = D, .transpose = transpose, .rc = 0};
    sla__op op = {.n = D->nlocal, .n_global = D->n, .nt = nt, .data = &od, .apply = op_apply,
                  .apply_dot = op_apply_dot, .allreduce = op_allreduce, .comm = &od};
    sla__kopts ko = {.rtol = S->opts.rtol, .atol = S->opts.atol, .maxiter = S->opts.maxiter,
                     .restart = S->opts.restart, .use_x0 = S->opts.use_x0, .pc_transpose = transpose,
                     .monitor = S->opts.monitor, .monitor_user = S->opts.monitor_user,
                     .monitor_every = S->opts.monitor_every};
    double t0 = MPI_Wtime();
    st = sla__krylov_method(S->opts.method)(ctx, &op, S->pc, b, x, &ko, info);
    double dt = MPI_Wtime() - t0;
    if (od.rc) st = sla__mpi_error(ctx, od.rc, "distributed solve");
    st = sla__dist_agree(ctx, D->comm, st);
    int rc = MPI_Allreduce(&dt, &info->solve_seconds, 1, MPI_DOUBLE, MPI_MAX, D->comm);
    if (rc && st >= 0) st = sla__mpi_error(ctx, rc, "distributed solve");
    if (st == SLA_NOT_CONVERGED)
        sla__error(ctx, st, "%s did not converge: %s after %lld iterations, relative residual %.3e", info->method,
                   sla_reason_name(info->reason), (long long)info->iterations, info->residual);
    return st;
}

sla_status sla_dist_solver_solve(sla_ctx *ctx, sla_dist_solver *S, const double *b, double *x,
                                 sla_solve_info *info)
{
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_solver_solve: S is NULL");
    sla_status st = solve_one(ctx, S, false, b, x, info);
    return st == SLA_OK ? sla__ok(ctx, SLA_OK) : st;
}

sla_status sla_dist_solver_solve_transpose(sla_ctx *ctx, sla_dist_solver *S, const double *b, double *x,
                                           sla_solve_info *info)
{
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_solver_solve_transpose: S is NULL");
    sla_status st = solve_one(ctx, S, true, b, x, info);
    return st == SLA_OK ? sla__ok(ctx, SLA_OK) : st;
}

sla_status sla_dist_solver_solve_vjp(sla_ctx *ctx, sla_dist_solver *S, const double *x, const double *gx,
                                     double *gb, double *gvals, sla_solve_info *info)
{
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_solver_solve_vjp: S is NULL");
    sla_dist_matrix *D = S->D;
    sla_status st = check_finite(ctx, D, x, "solution x");
    double *lam = gb, *buf = NULL;
    if (!st && !gb) {
        buf = sla__malloc(&S->alloc, (size_t)D->nlocal, sizeof(double));
        if (!buf) st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the adjoint vector");
        lam = buf;
    }
    if ((st = sla__dist_same(ctx, D->comm, st, gvals != NULL, "sla_dist_solver_solve_vjp: gvals"))) goto done;
    bool use_x0 = S->opts.use_x0;
    S->opts.use_x0 = false; /* the adjoint starts from zero */
    st = solve_one(ctx, S, true, gx, lam, info); /* A^T lambda = gx */
    S->opts.use_x0 = use_x0;
    if (st < 0) goto done;
    if (gvals) {
        int rc = sla__halo_forward_begin(D, x, D->ghostbuf); /* the ghost values of x */
        int rc2 = sla__halo_end(D);
        if (rc || rc2) {
            st = sla__mpi_error(ctx, rc ? rc : rc2, "distributed solve VJP");
            goto done;
        }
        sla__dist_pattern_outer(D, -1.0, lam, x, gvals); /* dL/dA_k = -lambda_row x_col */
    }
done:
    sla__free(&S->alloc, buf);
    return st == SLA_OK ? sla__ok(ctx, SLA_OK) : st;
}
