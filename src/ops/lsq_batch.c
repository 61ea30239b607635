/* Batches of damped least-squares problems: sla_lsq and sla_lsq_vjp over
 * every value array of one pattern, the arrays in parallel with one thread
 * each (sla__run_items, src/core/parallel.c). */
#include "ops_internal.h"
#include "sla/lsq.h"

#include <string.h>

typedef struct lsq_job {
    const sla_matrix *A;
    sla_lsq_options o;
    const double *x0, *b, *xin, *gx;
    double *x, *gb, *gA;
    sla_lsq_info *info;
} lsq_job;

static sla_status lsq_item(sla_ctx *lctx, void *job, sla_int i, int nt)
{
    (void)nt;
    const lsq_job *J = job;
    const size_t m = (size_t)J->A->nrows, n = (size_t)J->A->ncols, ii = (size_t)i;
    sla_lsq_options o = J->o;
    if (J->x0) o.x0 = J->x0 + ii * n;
    return sla_lsq(lctx, J->A, i, &o, J->b + ii * m, J->x + ii * n, J->info ? J->info + i : NULL);
}

static sla_status lsq_vjp_item(sla_ctx *lctx, void *job, sla_int i, int nt)
{
    (void)nt;
    const lsq_job *J = job;
    const size_t m = (size_t)J->A->nrows, n = (size_t)J->A->ncols, ii = (size_t)i;
    return sla_lsq_vjp(lctx, J->A, i, &J->o, J->b + ii * m, J->xin + ii * n, J->gx + ii * n,
                       J->gb ? J->gb + ii * m : NULL, J->gA ? J->gA + ii * (size_t)J->A->nnz : NULL,
                       J->info ? J->info + i : NULL);
}

/* The shared checks; J->o from opts (or the defaults). */
static sla_status batch_setup(sla_ctx *ctx, const char *who, const sla_matrix *A, const sla_lsq_options *opts,
                              const double *b, const double *x, lsq_job *J)
{
    if (!A || !b || !x) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: NULL A, b or x", who);
    if (sla__require_real(ctx, A, who)) return SLA_ERR_UNSUPPORTED;
    sla_status st = sla__check_extent(ctx, A->nbatch, A->nrows > A->ncols ? A->nrows : A->ncols, "nbatch x max(m, n)");
    if (st) return st;
    memset(J, 0, sizeof *J);
    J->A = A;
    if (opts) J->o = *opts;
    else sla_lsq_options_default(&J->o);
    J->x0 = J->o.x0;
    J->o.x0 = NULL;
    return SLA_OK;
}

sla_status sla_lsq_batch(sla_ctx *ctx, const sla_matrix *A, const sla_lsq_options *opts, const double *b, double *x,
                         sla_lsq_info *info)
{
    lsq_job J;
    sla_status st = batch_setup(ctx, "sla_lsq_batch", A, opts, b, x, &J);
    if (st) return st;
    J.b = b;
    J.x = x;
    J.info = info;
    return sla__run_items(ctx, A->nbatch, lsq_item, &J);
}

sla_status sla_lsq_batch_vjp(sla_ctx *ctx, const sla_matrix *A, const sla_lsq_options *opts, const double *b,
                             const double *x, const double *gx, double *gb, double *gA, sla_lsq_info *info)
{
    lsq_job J;
    sla_status st = batch_setup(ctx, "sla_lsq_batch_vjp", A, opts, b, x, &J);
    if (st) return st;
    if (!gx) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_lsq_batch_vjp: gx is NULL");
    J.b = b;
    J.xin = x;
    J.gx = gx;
    J.gb = gb;
    J.gA = gA;
    J.info = info;
    return sla__run_items(ctx, A->nbatch, lsq_vjp_item, &J);
}
