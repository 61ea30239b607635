/* Batches and lists: many independent solves or VJPs in one call, items
 * in parallel with one thread each (src/core/parallel.c). A batch is one
 * solver over all value arrays of its matrix; a list is any solvers, one
 * item each, run one after another when a solver appears twice. Batch and
 * list items never take method=auto's switch to the direct method (which
 * would change the solver under the other items). Complex solvers have
 * their list calls too (sla_zsolver_solve_list, _vjp). */
#include "solver_internal.h"

#include "sla/complex.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    sla_solver *S;
    sla_solver *const *list;
    const double *b;
    const double *const *bl;
    double *x;
    double *const *xl;
    const double *xin;
    const double *const *xinl;
    const double *gx;
    const double *const *gxl;
    double *gb;
    double *const *gbl;
    double *gA;
    double *const *gAl;
    sla_solve_info *info;
} batch_job;

static sla_status batch_solve_item(sla_ctx *lctx, void *job, sla_int i, int nt)
{
    batch_job *J = job;
    sla_int n = J->S->A->nrows;
    sla_solve_info tmp;
    return sla__solver_solve_one(lctx, J->S, i, false, J->b + i * n, J->x + i * n, J->S->opts.use_x0,
                     J->info ? &J->info[i] : &tmp, nt, 0);
}

static sla_status batch_vjp_item(sla_ctx *lctx, void *job, sla_int i, int nt)
{
    batch_job *J = job;
    sla_int n = J->S->A->nrows, nnz = J->S->A->nnz;
    return sla__solver_vjp_one(lctx, J->S, NULL, i, 1, J->xin + i * n, n, J->gx + i * n, n,
                   J->gb ? J->gb + i * n : NULL, n, J->gA ? J->gA + i * nnz : NULL,
                   J->info ? &J->info[i] : NULL, nt);
}

sla_status sla_solver_solve_batch(sla_ctx *ctx, sla_solver *S, const double *b, double *x,
                                  sla_solve_info *info)
{
    if (!S || (S->A->nrows > 0 && (!b || !x)))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_solve_batch: NULL argument");
    if (S->z) return sla__solver_require_real(ctx, S, "sla_solver_solve_batch");
    sla_status st = sla__check_extent(ctx, S->A->nbatch, S->A->nrows, "nbatch x n");
    if (st) return st;
    batch_job J = {.S = S, .b = b, .x = x, .info = info};
    return sla__run_items(ctx, S->A->nbatch, batch_solve_item, &J);
}

sla_status sla_solver_solve_batch_vjp(sla_ctx *ctx, sla_solver *S, const double *x,
                                      const double *gx, double *gb, double *gA,
                                      sla_solve_info *info)
{
    if (!S || (S->A->nrows > 0 && (!x || !gx)))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_solve_batch_vjp: NULL argument");
    if (S->z) return sla__solver_require_real(ctx, S, "sla_solver_solve_batch_vjp");
    sla_status st = sla__check_extent(ctx, S->A->nbatch, S->A->nrows, "nbatch x n");
    if (st) return st;
    batch_job J = {.S = S, .xin = x, .gx = gx, .gb = gb, .gA = gA, .info = info};
    return sla__run_items(ctx, S->A->nbatch, batch_vjp_item, &J);
}

static sla_status list_solve_item(sla_ctx *lctx, void *job, sla_int i, int nt)
{
    batch_job *J = job;
    sla_solver *S = J->list[i];
    if (!S || !J->bl[i] || !J->xl[i])
        return sla__error(lctx, SLA_ERR_ARGUMENT, "NULL solver, right-hand side or solution");
    if (S->z)
        return sla__error(lctx, SLA_ERR_ARGUMENT,
                          "sla_solver_solve_list: complex solver: use sla_zsolver_solve_list (sla/complex.h)");
    sla_solve_info tmp;
    return sla__solver_solve_one(lctx, S, 0, false, J->bl[i], J->xl[i], S->opts.use_x0,
                     J->info ? &J->info[i] : &tmp, nt, 0);
}

static sla_status list_vjp_item(sla_ctx *lctx, void *job, sla_int i, int nt)
{
    batch_job *J = job;
    sla_solver *S = J->list[i];
    if (!S || !J->xinl[i] || !J->gxl[i])
        return sla__error(lctx, SLA_ERR_ARGUMENT, "NULL solver, solution or cotangent");
    if (S->z)
        return sla__error(lctx, SLA_ERR_ARGUMENT, "sla_solver_solve_list_vjp: complex solver: use "
                          "sla_zsolver_solve_list_vjp (sla/complex.h)");
    sla_int n = S->A->nrows;
    return sla__solver_vjp_one(lctx, S, NULL, 0, 1, J->xinl[i], n, J->gxl[i], n, J->gbl ? J->gbl[i] : NULL, n,
                   J->gAl ? J->gAl[i] : NULL, J->info ? &J->info[i] : NULL, nt);
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}

/* Whether a solver appears twice in a list: its items then run one after
 * another (solving twice at once with one solver object is not safe). */
static sla_status list_has_repeats(sla_ctx *ctx, sla_int count, sla_solver *const *solvers,
                                   bool *repeats)
{
    *repeats = false;
    if (count < 2 || sla__threads(ctx) < 2) return SLA_OK;
    if (count <= 64) {
        for (sla_int i = 1; i < count && !*repeats; i++)
            for (sla_int j = 0; j < i; j++)
                if (solvers[i] == solvers[j]) *repeats = true;
        return SLA_OK;
    }
    sla_solver **copy = sla__ctx_malloc(ctx, (size_t)count, sizeof *copy, "the solver list check");
    if (!copy) return SLA_ERR_NOMEM;
    memcpy(copy, solvers, (size_t)count * sizeof *copy);
    qsort(copy, (size_t)count, sizeof *copy, cmp_ptr);
    for (sla_int i = 1; i < count; i++)
        if (copy[i] == copy[i - 1]) *repeats = true;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__free(&a, copy);
    return SLA_OK;
}

sla_status sla_solver_solve_list(sla_ctx *ctx, sla_int count, sla_solver *const *solvers,
                          const double *const *b, double *const *x, sla_solve_info *info)
{
    if (count < 0 || (count > 0 && (!solvers || !b || !x)))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_solve_list: NULL argument or negative count");
    batch_job J = {.list = solvers, .bl = b, .xl = x, .info = info};
    bool rep;
    sla_status st = list_has_repeats(ctx, count, solvers, &rep);
    return st ? st : sla__run_items_mode(ctx, count, list_solve_item, &J, rep);
}

sla_status sla_solver_solve_list_vjp(sla_ctx *ctx, sla_int count, sla_solver *const *solvers,
                              const double *const *x, const double *const *gx,
                              double *const *gb, double *const *gA, sla_solve_info *info)
{
    if (count < 0 || (count > 0 && (!solvers || !x || !gx)))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_solve_list_vjp: NULL argument or negative count");
    batch_job J = {.list = solvers, .xinl = x, .gxl = gx, .gbl = gb, .gAl = gA, .info = info};
    bool rep;
    sla_status st = list_has_repeats(ctx, count, solvers, &rep);
    return st ? st : sla__run_items_mode(ctx, count, list_vjp_item, &J, rep);
}

/* The earlier spellings, kept as conveniences. */
sla_status sla_solve_list(sla_ctx *ctx, sla_int count, sla_solver *const *solvers,
                          const double *const *b, double *const *x, sla_solve_info *info)
{
    return sla_solver_solve_list(ctx, count, solvers, b, x, info);
}

sla_status sla_solve_list_vjp(sla_ctx *ctx, sla_int count, sla_solver *const *solvers,
                              const double *const *x, const double *const *gx,
                              double *const *gb, double *const *gA, sla_solve_info *info)
{
    return sla_solver_solve_list_vjp(ctx, count, solvers, x, gx, gb, gA, info);
}

/* ---- complex lists ----------------------------------------------------------- */

typedef struct {
    sla_solver *const *list;
    const sla_complex *const *b;
    sla_complex *const *x;
    const sla_complex *const *xin;
    const sla_complex *const *gx;
    sla_complex *const *gb;
    sla_complex *const *gA;
    sla_solve_info *info;
} zlist_job;

static sla_status zlist_solve_item(sla_ctx *lctx, void *job, sla_int i, int nt)
{
    lctx->nthreads = nt; /* the complex solve reads its threads from the context */
    zlist_job *J = job;
    sla_solver *S = J->list[i];
    if (!S || !J->b[i] || !J->x[i])
        return sla__error(lctx, SLA_ERR_ARGUMENT, "NULL solver, right-hand side or solution");
    if (!S->z)
        return sla__error(lctx, SLA_ERR_ARGUMENT, "sla_zsolver_solve_list: real solver (created on a %s "
                          "matrix): use sla_solver_solve_list", sla_dtype_name(S->A->dtype));
    return sla_zsolver_solve(lctx, S, 0, SLA_OP_N, J->b[i], J->x[i], J->info ? &J->info[i] : NULL);
}

static sla_status zlist_vjp_item(sla_ctx *lctx, void *job, sla_int i, int nt)
{
    lctx->nthreads = nt;
    zlist_job *J = job;
    sla_solver *S = J->list[i];
    if (!S || !J->xin[i] || !J->gx[i])
        return sla__error(lctx, SLA_ERR_ARGUMENT, "NULL solver, solution or cotangent");
    if (!S->z)
        return sla__error(lctx, SLA_ERR_ARGUMENT, "sla_zsolver_solve_list_vjp: real solver (created on a "
                          "%s matrix): use sla_solver_solve_list_vjp", sla_dtype_name(S->A->dtype));
    sla_complex *gb = J->gb ? J->gb[i] : NULL, *own = NULL;
    if (!gb && S->A->nrows > 0) { /* not wanted: a scratch for the adjoint solve */
        own = sla__ctx_malloc(lctx, (size_t)S->A->nrows, sizeof *own, "the adjoint solution");
        if (!own) return SLA_ERR_NOMEM;
        gb = own;
    }
    sla_status st = sla_zsolver_solve_vjp(lctx, S, 0, J->xin[i], J->gx[i], gb, J->gA ? J->gA[i] : NULL,
                                          J->info ? &J->info[i] : NULL);
    sla_allocator a = sla__ctx_alloc(lctx);
    sla__free(&a, own);
    return st;
}

sla_status sla_zsolver_solve_list(sla_ctx *ctx, sla_int count, sla_solver *const *solvers,
                                  const sla_complex *const *b, sla_complex *const *x, sla_solve_info *info)
{
    if (count < 0 || (count > 0 && (!solvers || !b || !x)))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zsolver_solve_list: NULL argument or negative count");
    zlist_job J = {.list = solvers, .b = b, .x = x, .info = info};
    bool rep;
    sla_status st = list_has_repeats(ctx, count, solvers, &rep);
    return st ? st : sla__run_items_mode(ctx, count, zlist_solve_item, &J, rep);
}

sla_status sla_zsolver_solve_list_vjp(sla_ctx *ctx, sla_int count, sla_solver *const *solvers,
                                      const sla_complex *const *x, const sla_complex *const *gx,
                                      sla_complex *const *gb, sla_complex *const *gA, sla_solve_info *info)
{
    if (count < 0 || (count > 0 && (!solvers || !x || !gx)))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zsolver_solve_list_vjp: NULL argument or negative count");
    zlist_job J = {.list = solvers, .xin = x, .gx = gx, .gb = gb, .gA = gA, .info = info};
    bool rep;
    sla_status st = list_has_repeats(ctx, count, solvers, &rep);
    return st ? st : sla__run_items_mode(ctx, count, zlist_vjp_item, &J, rep);
}
