/* The ARPACK driving that eigsh, its generalized form, eigs and svds share:
 * the process-wide lock around ARPACK's Fortran SAVE state, the messages of
 * its info codes, and one symmetric Lanczos run (dsaupd/dseupd in reverse
 * communication over a caller's operator) from workspace to the sorted
 * eigenpairs. The callers keep their operators and what they make of the
 * pairs. */
#include "eigs_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLA_HAVE_ARPACK
#include <arpack.h>

/* ARPACK keeps its state between reverse-communication calls in Fortran
 * SAVE variables: one ARPACK run at a time in the process. */
pthread_mutex_t sla__arpack_lock = PTHREAD_MUTEX_INITIALIZER;

const char *sla__arpack_message(int info, bool arnoldi)
{
    switch (info) {
    case 3: return "no shifts could be applied during the implicit restart (try a larger ncv)";
    case -1: return "n must be positive";
    case -2: return "nev must be positive";
    case -3: return "ncv must be in (nev, n]";
    case -4: return "maxiter must be positive";
    case -5: return "unknown which";
    case -7: return "workspace too small";
    case -9: return "the starting vector is zero";
    case -9999:
        return arnoldi ? "could not build an Arnoldi factorization (the start vector may be in an invariant "
                         "subspace)"
                       : "could not build a Lanczos factorization (the start vector may be in an invariant "
                         "subspace)";
    default: return "ARPACK error";
    }
}

sla_status sla__arpack_fail(sla_ctx *ctx, const char *who, const char *routine, int info)
{
    return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: ARPACK %s failed (info %d): %s", who, routine, info,
                      sla__arpack_message(info, routine[1] == 'n'));
}

typedef struct sort_item {
    double v;
    int i;
} sort_item;

static int cmp_up(const void *a, const void *b)
{
    double x = ((const sort_item *)a)->v, y = ((const sort_item *)b)->v;
    return x < y ? -1 : x > y;
}

static int cmp_down(const void *a, const void *b) { return cmp_up(b, a); }

/* The reverse-communication loop and the extraction; lock held. */
static sla_status lanczos(sla_ctx *ctx, const sla__lanczos *L, double *evals, double *Z, sla__lanczos_out *out)
{
    const int n = L->n, nev = L->nev;
    const size_t nn = (size_t)n;
    const int ncv = sla__arpack_ncv(L->ncv, nev, n);
    const int lworkl = ncv * (ncv + 8);
    char lw[48], lb[48], lv[48];
    snprintf(lw, sizeof lw, "%s work space", L->tag);
    snprintf(lb, sizeof lb, "%s Lanczos basis", L->tag);
    snprintf(lv, sizeof lv, "%s %s", L->tag, L->vectors ? L->vectors : "eigenvectors");
    sla_allocator a = sla__ctx_alloc(ctx);
    double *resid = sla__ctx_malloc(ctx, nn, sizeof *resid, lw);
    double *V = resid ? sla__ctx_malloc(ctx, nn * (size_t)ncv, sizeof *V, lb) : NULL;
    double *workd = V ? sla__ctx_malloc(ctx, (L->generalized ? 4 : 3) * nn, sizeof *workd, lw) : NULL;
    double *workl = workd ? sla__ctx_malloc(ctx, (size_t)lworkl, sizeof *workl, lw) : NULL;
    double *d = workl ? sla__ctx_malloc(ctx, (size_t)ncv, sizeof *d, lw) : NULL;
    int *select = d ? sla__ctx_calloc(ctx, (size_t)ncv, sizeof *select, lw) : NULL;
    double *Zt = select ? sla__ctx_malloc(ctx, nn * (size_t)nev, sizeof *Zt, lv) : NULL;
    sort_item *it = Zt ? sla__ctx_malloc(ctx, (size_t)nev, sizeof *it, lw) : NULL;
    sla_status st = SLA_OK;
    if (!it) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    const char *bmat = L->generalized ? "G" : "I";
    double *scratch = L->generalized ? workd + 3 * nn : NULL; /* the operator's own n doubles */
    sla__eig_start(n, L->v0, resid);
    int iparam[11] = {0}, ipntr[14] = {0};
    iparam[0] = 1;
    iparam[2] = sla__arpack_maxiter(L->maxiter, n);
    iparam[6] = L->mode;
    int ido = 0, info = 1;
    out->nops = 0;
    for (;;) {
        dsaupd_c(&ido, bmat, n, L->which, nev, L->tol, resid, ncv, V, n, iparam, ipntr, workd, workl, lworkl,
                 &info);
        if (ido != -1 && ido != 1 && !(ido == 2 && L->generalized)) break;
        const double *x = workd + ipntr[0] - 1;
        double *y = workd + ipntr[1] - 1;
        const double *bx = L->generalized ? workd + ipntr[2] - 1 : NULL;
        if (ido != 2) out->nops++;
        if ((st = L->apply(ctx, L->op, ido, x, y, bx, scratch))) goto done;
        if (!sla__all_finite(n, y)) {
            st = sla__error(ctx, SLA_ERR_VALUE, "%s: the operator produced NaN/Inf", L->who);
            goto done;
        }
    }
    out->iters = iparam[2];
    out->maxit = info == 1;
    if (info < 0 || info == 3) {
        st = sla__arpack_fail(ctx, L->who, "dsaupd", info);
        goto done;
    }
    int nconv = iparam[4];
    if (nconv > 0) {
        int info2 = 0;
        dseupd_c(1, "A", select, d, Zt, n, L->sigma, bmat, n, L->which, nev, L->tol, resid, ncv, V, n, iparam,
                 ipntr, workd, workl, lworkl, &info2);
        if (info2 != 0) {
            st = sla__error(ctx, SLA_ERR_ARGUMENT, "%s: ARPACK dseupd failed (info %d)", L->who, info2);
            goto done;
        }
        nconv = iparam[4] < nev ? iparam[4] : nev;
    }
    for (int i = 0; i < nconv; i++) it[i] = (sort_item){d[i], i};
    qsort(it, (size_t)nconv, sizeof *it, L->descending ? cmp_down : cmp_up);
    for (int i = 0; i < nev; i++) {
        double *zi = Z + (size_t)i * nn;
        if (i < nconv) {
            evals[i] = it[i].v;
            memcpy(zi, Zt + (size_t)it[i].i * nn, nn * sizeof *Z);
        } else {
            evals[i] = NAN;
            for (int r = 0; r < n; r++) zi[r] = NAN;
        }
    }
    out->nconv = nconv;
done:
    sla__free(&a, resid);
    sla__free(&a, V);
    sla__free(&a, workd);
    sla__free(&a, workl);
    sla__free(&a, d);
    sla__free(&a, select);
    sla__free(&a, Zt);
    sla__free(&a, it);
    return st;
}

int sla__arpack_enter(sla_ctx *ctx)
{
    pthread_mutex_lock(&sla__arpack_lock);
    return sla__threads(ctx) > 1 ? sla__blas_threads_one() : 0;
}

void sla__arpack_leave(int blas_threads)
{
    sla__blas_threads_restore(blas_threads);
    pthread_mutex_unlock(&sla__arpack_lock);
}

sla_status sla__lanczos_run(sla_ctx *ctx, const sla__lanczos *L, double *evals, double *Z, sla__lanczos_out *out)
{
    int bt = sla__arpack_enter(ctx);
    sla_status st = lanczos(ctx, L, evals, Z, out);
    sla__arpack_leave(bt);
    return st;
}

#else
typedef int sla__arpack_util_empty; /* ISO C: no empty translation unit */
#endif
