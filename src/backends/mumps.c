/* MUMPS real backend: multifrontal sparse LDL^T / LU in float64 from
 * Debian's sequential MUMPS (dmumps_c, libdmumps_seq). The real
 * counterpart of mumps_z.c, which holds what both share (mumps.h): the
 * symbolic object, the controls, the error mapping and the lock.
 *
 * Per value array: exactly symmetric values on a symmetric pattern ->
 * SYM = 2 (general symmetric LDL^T with 1x1 and 2x2 pivots, from the lower
 * triangle; SPD matrices too: SYM = 1 would skip pivoting but fails on an
 * indefinite matrix, and the factor is the same cost), else SYM = 0 (LU).
 * Each numeric object owns one MUMPS instance. A^T x = b by ICNTL(9) = 0.
 * sign and log|det A| from ICNTL(33): RINFOG(12) 2^INFOG(34). Thread
 * safety and BLAS threads: as mumps_z.c (one process-wide lock around
 * every call; the factorization with at most the context's BLAS threads,
 * each solve with one).
 */
#include "mumps.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <dmumps_c.h>

/* One MUMPS phase under the lock, with at most blas_threads BLAS threads
 * (0: as they are; mumps.h). */
static void dmumps_call_nt(DMUMPS_STRUC_C *id, int job, int blas_threads)
{
    pthread_mutex_lock(&sla__mumps_lock);
    int old = blas_threads > 0 ? sla__mumps_blas_limit(blas_threads) : 0;
    id->job = job;
    dmumps_c(id);
    sla__mumps_blas_restore(old);
    pthread_mutex_unlock(&sla__mumps_lock);
}

static void dmumps_call(DMUMPS_STRUC_C *id, int job) { dmumps_call_nt(id, job, 0); }

typedef struct mumd_num {
    sla_allocator alloc;
    DMUMPS_STRUC_C id;
    bool live; /* JOB = -1 done: JOB = -2 owed */
    sla_int n;
    double detm; /* det A = detm 2^dete */
    int dete;
} mumd_num;

static void mumd_free_num(void *p)
{
    mumd_num *N = p;
    if (!N) return;
    sla_allocator a = N->alloc;
    if (N->live) dmumps_call(&N->id, -2);
    sla__free(&a, N);
}

static sla_status mumd_analyze(sla_ctx *ctx, const sla_matrix *A, const sla__direct_opts *o, void **sym,
                               sla__direct_stats *stats)
{
    sla_status st = sla__mumps_analyze(ctx, A, o, sym);
    if (!st && stats) {
        memset(stats, 0, sizeof *stats); /* MUMPS's analysis runs per value array, in factor */
        const sla__mumps_sym *S = *sym; /* the one asked for (MUMPS falls back where it lacks it) */
        snprintf(stats->ordering, sizeof stats->ordering, "%s", sla__mumps_ordering_name(S, S->ordering));
    }
    return st;
}

static sla_status mumd_factor(sla_ctx *ctx, void *sym, const sla_matrix *A, sla_int ib, void **num)
{
    sla__mumps_sym *S = sym;
    if (!num) return sla__error(ctx, SLA_ERR_ARGUMENT, "mumps factor: num is NULL");
    *num = NULL;
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "mumps factor: symbolic object is NULL");
    sla_status st = sla__check_factor_args(ctx, "mumps", A, ib, S->n, S->nnz, S->rowptr, S->colind);
    if (st) return st;
    mumd_num *N = sla__ctx_calloc(ctx, 1, sizeof *N, "mumps numeric object");
    if (!N) return SLA_ERR_NOMEM;
    N->alloc = sla__ctx_alloc(ctx);
    N->n = S->n;
    N->detm = 1.0;
    double *ax = NULL, *al = NULL;
    if (S->n == 0) goto done;
    ax = sla__values_f64(ctx, A, ib, "mumps values");
    if (!ax) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    st = sla__check_finite_values(ctx, "mumps", S->nnz, ax, ib);
    if (st) goto done;
    bool symmetric = S->tpos != NULL;
    for (sla_int k = 0; k < S->nnz && symmetric; k++) symmetric = ax[k] == ax[S->tpos[k]];
    DMUMPS_STRUC_C *id = &N->id;
    memset(id, 0, sizeof *id);
    id->par = 1;
    id->sym = symmetric ? 2 : 0;
    id->comm_fortran = MUMPS_USE_COMM_WORLD;
    dmumps_call(id, -1);
    if (id->INFOG(1) < 0) {
        st = sla__mumps_error(ctx, "initialization", id->infog);
        goto done;
    }
    N->live = true;
    sla__mumps_controls(id->icntl, S->ordering);
    id->n = (MUMPS_INT)S->n;
    if (symmetric) {
        al = sla__ctx_malloc(ctx, (size_t)S->nlow, sizeof *al, "mumps lower triangle values");
        if (!al) {
            st = SLA_ERR_NOMEM;
            goto done;
        }
        for (int64_t q = 0; q < S->nlow; q++) al[q] = ax[S->ltk[q]];
        id->nnz = S->nlow, id->irn = S->lirn, id->jcn = S->ljcn, id->a = al;
    } else {
        id->nnz = S->nnz, id->irn = S->irn, id->jcn = S->jcn, id->a = ax;
    }
    id->perm_in = S->perm_in;
    dmumps_call(id, 1);
    id->perm_in = NULL;
    if (id->INFOG(1) < 0) {
        st = sla__mumps_error(ctx, "analysis", id->infog);
        goto done;
    }
    if ((st = sla__mumps_check_memory(ctx, S, id->infog))) goto done;
    for (int tries = 0;; tries++) {
        dmumps_call_nt(id, 2, S->nthreads);
        if (!sla__mumps_workspace_short(id->INFOG(1)) || tries == 3) break;
        id->ICNTL(14) = id->ICNTL(14) > 0 ? 2 * id->ICNTL(14) : 40;
    }
    if (id->INFOG(1) < 0) {
        st = sla__mumps_error(ctx, "factorization", id->infog);
        goto done;
    }
    if (id->INFOG(28) > 0) {
        st = sla__error(ctx, SLA_ERR_SINGULAR,
                        "mumps: matrix is numerically singular (%d null pivots at the level of rounding "
                        "noise, INFOG(28))", id->INFOG(28));
        goto done;
    }
    N->detm = id->RINFOG(12);
    N->dete = id->INFOG(34);
    id->a = NULL;
    id->irn = id->jcn = NULL;
done:
    {
        sla_allocator a = sla__ctx_alloc(ctx);
        sla__free(&a, ax);
        sla__free(&a, al);
    }
    if (st) mumd_free_num(N);
    else *num = N;
    return st;
}

static sla_status mumd_solve(sla_ctx *ctx, void *sym, void *num, bool transpose, sla_int nrhs, const double *b,
                             sla_int ldb, double *x, sla_int ldx)
{
    sla__mumps_sym *S = sym;
    mumd_num *N = num;
    if (!S || !N) return sla__error(ctx, SLA_ERR_ARGUMENT, "mumps solve: NULL factor");
    sla_status st = sla__check_solve_args(ctx, "mumps", S->n, nrhs, b, ldb, x, ldx);
    if (st || S->n == 0 || nrhs == 0) return st;
    if (ldx >= INT_MAX || nrhs >= INT_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "mumps solve: ldx = %lld or nrhs = %lld exceeds 32 bits",
                          (long long)ldx, (long long)nrhs);
    for (sla_int j = 0; j < nrhs; j++)
        if (x + j * ldx != b + j * ldb) memcpy(x + j * ldx, b + j * ldb, (size_t)S->n * sizeof *x);
    DMUMPS_STRUC_C *id = &N->id;
    id->ICNTL(9) = transpose ? 0 : 1;
    id->ICNTL(20) = 0;
    id->ICNTL(21) = 0;
    id->nrhs = (MUMPS_INT)nrhs;
    id->lrhs = (MUMPS_INT)ldx;
    id->rhs = x;
    dmumps_call_nt(id, 3, 1);
    id->rhs = NULL;
    if (id->INFOG(1) < 0) return sla__mumps_error(ctx, "solve", id->infog);
    for (sla_int j = 0; j < nrhs; j++)
        for (sla_int i = 0; i < S->n; i++)
            if (!isfinite(x[j * ldx + i]))
                return sla__error(ctx, SLA_ERR_SINGULAR,
                                  "mumps: solution %lld is not finite (matrix numerically singular)",
                                  (long long)j);
    return SLA_OK;
}

static sla_status mumd_logdet(sla_ctx *ctx, void *sym, void *num, double *sign, double *logabs)
{
    mumd_num *N = num;
    if (!sym || !N || !sign || !logabs) return sla__error(ctx, SLA_ERR_ARGUMENT, "mumps logdet: NULL argument");
    *sign = 1.0;
    *logabs = 0.0;
    if (N->n == 0) return SLA_OK;
    if (N->detm == 0.0) {
        *sign = 0.0;
        *logabs = -INFINITY;
        return SLA_OK;
    }
    *sign = N->detm > 0.0 ? 1.0 : -1.0;
    *logabs = log(fabs(N->detm)) + N->dete * log(2.0);
    return SLA_OK;
}

static double mumd_rcond(const void *num) { return -1.0; }

static const sla__direct_ops mumd_ops = {
    .name = "mumps",
    .analyze = mumd_analyze,
    .factor = mumd_factor,
    .solve = mumd_solve,
    .logdet = mumd_logdet,
    .free_num = mumd_free_num,
    .free_sym = sla__mumps_free_sym,
    .rcond = mumd_rcond,
};

const sla__direct_ops *sla__backend_mumps(void) { return &mumd_ops; }
