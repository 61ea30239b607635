/* Batches of truncated SVDs: sla_svds and sla_svds_vjp over every value
 * array of one pattern, one C call per batch, the arrays as independent
 * items (sla__run_items, src/core/parallel.c). The VJPs (projected MINRES,
 * no ARPACK) run in parallel one thread each; the forward runs in parallel
 * only for SM, whose factorizations of the augmented matrix are outside
 * ARPACK's process-wide lock: LM runs nothing but Lanczos, which that lock
 * serializes, so its arrays run one after another with all threads each. */
#include "ops_internal.h"
#include "sla/svd.h"

#include <string.h>

typedef struct svds_job {
    const sla_matrix *A;
    sla_svds_options o;
    const double *v0; /* [nbatch][min(m, n)] or NULL */
    sla_int k;
    const double *sin, *Uin, *Vin, *gs, *gU, *gV;
    double *s, *U, *V, *gA;
    sla_svds_info *info;
} svds_job;

static sla_status svds_item(sla_ctx *lctx, void *job, sla_int i, int nt)
{
    sla_ctx_set_threads(lctx, nt); /* the threads the runner gives the item */
    const svds_job *J = job;
    const size_t m = (size_t)J->A->nrows, n = (size_t)J->A->ncols, k = (size_t)J->k, ii = (size_t)i;
    sla_svds_options o = J->o;
    if (J->v0) o.v0 = J->v0 + ii * (m < n ? m : n);
    return sla_svds(lctx, J->A, i, &o, J->s + ii * k, J->U ? J->U + ii * m * k : NULL,
                    J->V ? J->V + ii * n * k : NULL, J->info ? J->info + i : NULL);
}

static sla_status svds_vjp_item(sla_ctx *lctx, void *job, sla_int i, int nt)
{
    sla_ctx_set_threads(lctx, nt);
    const svds_job *J = job;
    const size_t m = (size_t)J->A->nrows, n = (size_t)J->A->ncols, k = (size_t)J->k, ii = (size_t)i;
    return sla_svds_vjp(lctx, J->A, i, &J->o, J->k, J->sin + ii * k, J->Uin + ii * m * k, J->Vin + ii * n * k,
                        J->gs ? J->gs + ii * k : NULL, J->gU ? J->gU + ii * m * k : NULL,
                        J->gV ? J->gV + ii * n * k : NULL, J->gA + ii * (size_t)J->A->nnz,
                        J->info ? J->info + i : NULL);
}

/* The shared checks; J->o from opts (or the defaults), J->v0 taken out of
 * it (one start vector per array). */
static sla_status batch_setup(sla_ctx *ctx, const char *who, const sla_matrix *A, const sla_svds_options *opts,
                              sla_int k, svds_job *J)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: A is NULL", who);
    if (sla__require_real(ctx, A, who)) return SLA_ERR_UNSUPPORTED;
    const sla_int big = A->nrows > A->ncols ? A->nrows : A->ncols;
    if (k < 1 || k > big) /* the exact range is the item's to check and name */
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: k = %lld must be in [1, min(m, n)) with m = %lld, n = %lld",
                          who, (long long)k, (long long)A->nrows, (long long)A->ncols);
    sla_status st = sla__check_extent(ctx, A->nbatch, big * k, "nbatch x max(m, n) x k");
    if (!st) st = sla__check_extent(ctx, A->nbatch, A->nnz, "nbatch x nnz");
    if (st) return st;
    memset(J, 0, sizeof *J);
    J->A = A;
    if (opts) J->o = *opts;
    else sla_svds_options_default(&J->o);
    J->v0 = J->o.v0;
    J->o.v0 = NULL;
    J->k = k;
    return SLA_OK;
}

sla_status sla_svds_batch(sla_ctx *ctx, const sla_matrix *A, const sla_svds_options *opts, double *s, double *U,
                          double *V, sla_svds_info *info)
{
    sla_svds_options o;
    if (opts) o = *opts;
    else sla_svds_options_default(&o);
    svds_job J;
    sla_status st = batch_setup(ctx, "sla_svds_batch", A, &o, o.k, &J);
    if (st) return st;
    if (!s) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_svds_batch: s is NULL");
    if (info) memset(info, 0, (size_t)A->nbatch * sizeof *info);
    J.s = s;
    J.U = U;
    J.V = V;
    J.info = info;
    return sla__run_items_mode(ctx, A->nbatch, svds_item, &J, o.which == SLA_SVDS_LM);
}

sla_status sla_svds_batch_vjp(sla_ctx *ctx, const sla_matrix *A, const sla_svds_options *opts, sla_int k,
                              const double *s, const double *U, const double *V, const double *gs,
                              const double *gU, const double *gV, double *gA, sla_svds_info *info)
{
    svds_job J;
    sla_status st = batch_setup(ctx, "sla_svds_batch_vjp", A, opts, k, &J);
    if (st) return st;
    if (!s || !U || !V || !gA)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_svds_batch_vjp: NULL s, U, V or gA");
    if (info) memset(info, 0, (size_t)A->nbatch * sizeof *info);
    J.sin = s;
    J.Uin = U;
    J.Vin = V;
    J.gs = gs;
    J.gU = gU;
    J.gV = gV;
    J.gA = gA;
    J.info = info;
    return sla__run_items(ctx, A->nbatch, svds_vjp_item, &J);
}
