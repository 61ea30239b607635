/* Independent items in parallel: the runner behind batched factorizations,
 * batch and list solves (and anything else in the library with a set of
 * independent jobs), and the guard that keeps OpenBLAS to one thread while
 * the items run one per thread. Each item gets a private context; the first
 * error (lowest index) is reported through the caller's context. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* OpenBLAS (the BLAS under CHOLMOD's supernodal kernel) starts its own
 * pthreads in every call; inside the parallel item loop that oversubscribes
 * the cores: 6.3 ms per n = 2500 factorization against 1.7 ms with one BLAS
 * thread. Weak references: other BLAS builds link and skip this. The
 * setting is process-wide, so it is restored after the loop. */
extern void openblas_set_num_threads(int n) __attribute__((weak));
extern int openblas_get_num_threads(void) __attribute__((weak));

int sla__blas_threads_one(void)
{
    int blas_threads = 0;
    if (openblas_set_num_threads && openblas_get_num_threads) {
        blas_threads = openblas_get_num_threads();
        if (blas_threads > 1) openblas_set_num_threads(1);
    }
    return blas_threads;
}

void sla__blas_threads_restore(int blas_threads)
{
    if (blas_threads > 1 && openblas_set_num_threads) openblas_set_num_threads(blas_threads);
}

sla_status sla__run_items(sla_ctx *ctx, sla_int count, sla__item_fn item, void *job)
{
    return sla__run_items_mode(ctx, count, item, job, false);
}

sla_status sla__run_items_mode(sla_ctx *ctx, sla_int count, sla__item_fn item, void *job,
                               bool serial_items)
{
    int nt = sla__threads(ctx);
    bool outer = count >= nt && nt > 1 && !serial_items;
    sla_status first_err = SLA_OK, worst = SLA_OK;
    sla_int err_index = count;
    char msg[sizeof ctx->message] = "";
    /* Serial case: a plain loop, no OpenMP construct around the items. An
     * `omp parallel if (false)` region is still a (one-thread) team, and
     * CHOLMOD's own parallel regions inside it then start a fresh nested
     * team at every supernode: 1000 factorizations of n = 2500 took
     * 10 ms each instead of 1.7 ms. */
    if (!outer) {
        for (sla_int i = 0; i < count; i++) {
            sla_ctx local;
            memset(&local, 0, sizeof local);
            local.alloc = sla__ctx_alloc(ctx);
            sla_status st = item(&local, job, i, nt);
            if (st < 0 && i < err_index) {
                err_index = i;
                first_err = st;
                snprintf(msg, sizeof msg, "item %lld: %.480s", (long long)i, local.message);
            }
            if (st > 0) worst = st;
        }
        count = 0; /* skip the parallel loop below */
    }
    int blas_threads = outer ? sla__blas_threads_one() : 0;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (outer)
    for (sla_int i = 0; i < count; i++) {
        sla_ctx local;
        memset(&local, 0, sizeof local);
        local.alloc = sla__ctx_alloc(ctx);
        sla_status st = item(&local, job, i, outer ? 1 : nt);
#pragma omp critical(sla_run_items)
        {
            if (st < 0 && i < err_index) {
                err_index = i;
                first_err = st;
                snprintf(msg, sizeof msg, "item %lld: %.480s", (long long)i, local.message);
            }
            if (st > 0) worst = st;
        }
    }
    sla__blas_threads_restore(blas_threads);
    if (first_err) return sla__error(ctx, first_err, "%s", msg);
    if (worst) return sla__error(ctx, worst, "some items did not converge (see their info)");
    return sla__ok(ctx, SLA_OK);
}
