/* Concurrency: several pthreads solving different systems at once, and
 * several threads sharing one read-only matrix (products, VJPs and their
 * own solver objects on it), each with its own context. Every result must
 * equal the serial run bit for bit (one kernel thread per context makes
 * every method deterministic). Built with ThreadSanitizer by
 * `make check-tsan` (README "Thread safety"). */
#include "test_util.h"

#include <pthread.h>

#define NTHREADS 4
#define REPEAT 3

typedef struct {
    sla_method m;
    sla_precond_kind p;
    int problem; /* 0: poisson2d, 1: convdiff2d, 2: aniso2d */
    sla_int N;
} job_desc;

static const job_desc jobs[] = {
    {SLA_METHOD_CG, SLA_PRECOND_IC0, 0, 14},
    {SLA_METHOD_GMRES, SLA_PRECOND_ILU0, 1, 12},
    {SLA_METHOD_BICGSTAB, SLA_PRECOND_JACOBI, 1, 11},
    {SLA_METHOD_MINRES, SLA_PRECOND_SSOR, 2, 10},
    {SLA_METHOD_CHOLESKY, SLA_PRECOND_NONE, 0, 16},
    {SLA_METHOD_LU, SLA_PRECOND_NONE, 1, 15},
    {SLA_METHOD_KLU, SLA_PRECOND_NONE, 1, 13},
    {SLA_METHOD_SUPERLU, SLA_PRECOND_NONE, 2, 12},
    {SLA_METHOD_AUTO, SLA_PRECOND_NONE, 0, 12},
    {SLA_METHOD_AUTO, SLA_PRECOND_NONE, 1, 9},
};
#define NJOBS (int)(sizeof jobs / sizeof jobs[0])

/* What one job computes: x = A^-1 b, gb, gA = VJP(ones). */
typedef struct {
    sla_int n, nnz;
    double *x, *gb, *gA;
    sla_status st;
    char msg[256];
} job_result;

static void result_free(job_result *r)
{
    free(r->x);
    free(r->gb);
    free(r->gA);
    memset(r, 0, sizeof *r);
}

static void run_job(const job_desc *j, job_result *r)
{
    sla_ctx *c = NULL;
    sla_ctx_create(&c);
    sla_ctx_set_threads(c, 1);
    sla_matrix *A = NULL;
    sla_solver *S = NULL;
    memset(r, 0, sizeof *r);
    sla_status st = j->problem == 0   ? sla_gen_poisson(c, 2, j->N, &A)
                    : j->problem == 1 ? sla_gen_convdiff2d(c, j->N, 2.0, -1.0, &A)
                                      : sla_gen_aniso2d(c, j->N, 0.1, &A);
    if (st) goto out;
    r->n = sla_matrix_nrows(A);
    r->nnz = sla_matrix_nnz(A);
    r->x = malloc((size_t)r->n * sizeof(double));
    r->gb = malloc((size_t)r->n * sizeof(double));
    r->gA = malloc((size_t)r->nnz * sizeof(double));
    double *b = malloc((size_t)r->n * sizeof *b), *gx = malloc((size_t)r->n * sizeof *gx);
    tu_fill(b, r->n, 11);
    for (sla_int i = 0; i < r->n; i++) gx[i] = 1.0;
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = j->m;
    o.precond = j->p;
    o.rtol = 1e-10;
    if ((st = sla_solver_create(c, A, &o, &S)) == SLA_OK &&
        (st = sla_solver_solve(c, S, 0, 1, b, r->n, r->x, r->n, NULL)) == SLA_OK)
        st = sla_solver_solve_vjp(c, S, 0, 1, r->x, r->n, gx, r->n, r->gb, r->n, r->gA, NULL);
    free(b);
    free(gx);
out:
    r->st = st;
    snprintf(r->msg, sizeof r->msg, "%s", sla_ctx_message(c));
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&c);
}

static bool same(const job_result *a, const job_result *b)
{
    return a->st == b->st && a->n == b->n && a->nnz == b->nnz &&
           (a->st != SLA_OK ||
            (!memcmp(a->x, b->x, (size_t)a->n * sizeof(double)) &&
             !memcmp(a->gb, b->gb, (size_t)a->n * sizeof(double)) &&
             !memcmp(a->gA, b->gA, (size_t)a->nnz * sizeof(double))));
}

static job_result serial[NJOBS];

typedef struct {
    int tid;
    int mismatches, runs;
} worker_arg;

/* Thread tid runs jobs tid, tid + NTHREADS, ... REPEAT times, each time
 * in a different order than the other threads. */
static void *worker_jobs(void *p)
{
    worker_arg *w = p;
    for (int rep = 0; rep < REPEAT; rep++)
        for (int k = 0; k < NJOBS; k++) {
            int j = (k + w->tid * 3 + rep) % NJOBS;
            if (!sla_method_available(jobs[j].m)) continue;
            job_result r;
            run_job(&jobs[j], &r);
            w->runs++;
            if (!same(&r, &serial[j])) {
                w->mismatches++;
                fprintf(stderr, "thread %d job %d: differs from the serial run (%s: %s)\n", w->tid,
                        j, sla_status_name(r.st), r.msg);
            }
            result_free(&r);
        }
    return NULL;
}

static void test_different_systems(void)
{
    for (int j = 0; j < NJOBS; j++) {
        if (!sla_method_available(jobs[j].m)) continue;
        run_job(&jobs[j], &serial[j]);
        if (serial[j].st) fprintf(stderr, "job %d: %s\n", j, serial[j].msg);
        CHECK(serial[j].st == SLA_OK);
        /* serial twice: deterministic at all? */
        job_result again;
        run_job(&jobs[j], &again);
        CHECK(same(&again, &serial[j]));
        result_free(&again);
    }
    pthread_t th[NTHREADS];
    worker_arg w[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        w[t] = (worker_arg){t, 0, 0};
        CHECK(pthread_create(&th[t], NULL, worker_jobs, &w[t]) == 0);
    }
    int runs = 0;
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        CHECK(w[t].mismatches == 0);
        runs += w[t].runs;
    }
    printf("  different systems: %d threads, %d solves+VJPs in all (10 systems, 9 methods), "
           "identical to serial\n", NTHREADS, runs);
    CHECK(runs > 0);
    for (int j = 0; j < NJOBS; j++) result_free(&serial[j]);
}

/* ---- one shared matrix, read by every thread ----------------------------- */

static const sla_matrix *shared_A;
static const double *shared_x;
static double *ref_y, *ref_yt, *ref_gA, *ref_sol[3];
static const sla_method shared_methods[3] = {SLA_METHOD_GMRES, SLA_METHOD_LU, SLA_METHOD_AUTO};

static sla_status shared_solve(sla_ctx *c, sla_method m, double *x)
{
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = m;
    o.precond = m == SLA_METHOD_GMRES ? SLA_PRECOND_ILU0 : SLA_PRECOND_NONE;
    o.rtol = 1e-10;
    sla_solver *S = NULL;
    sla_int n = sla_matrix_nrows(shared_A);
    sla_status st = sla_solver_create(c, shared_A, &o, &S);
    if (!st) st = sla_solver_solve(c, S, 0, 1, shared_x, n, x, n, NULL);
    sla_solver_destroy(&S);
    return st;
}

static void *worker_shared(void *p)
{
    worker_arg *w = p;
    sla_ctx *c = NULL;
    sla_ctx_create(&c);
    sla_ctx_set_threads(c, 1);
    sla_int n = sla_matrix_nrows(shared_A), nnz = sla_matrix_nnz(shared_A);
    double *y = malloc((size_t)n * sizeof *y), *g = malloc((size_t)nnz * sizeof *g);
    for (int rep = 0; rep < 2 * REPEAT; rep++) {
        bool ok = sla_matvec(c, shared_A, 0, 1, shared_x, n, y, n) == SLA_OK &&
                  !memcmp(y, ref_y, (size_t)n * sizeof *y);
        ok = ok && sla_matvec_transpose(c, shared_A, 0, 1, shared_x, n, y, n) == SLA_OK &&
             !memcmp(y, ref_yt, (size_t)n * sizeof *y);
        ok = ok && sla_matvec_vjp(c, shared_A, 0, 1, shared_x, n, shared_x, n, NULL, n, g) == SLA_OK &&
             !memcmp(g, ref_gA, (size_t)nnz * sizeof *g);
        int k = (rep + w->tid) % 3;
        if (sla_method_available(shared_methods[k]))
            ok = ok && shared_solve(c, shared_methods[k], y) == SLA_OK &&
                 !memcmp(y, ref_sol[k], (size_t)n * sizeof *y);
        w->runs++;
        if (!ok) w->mismatches++;
    }
    free(y);
    free(g);
    sla_ctx_destroy(&c);
    return NULL;
}

static void test_shared_matrix(void)
{
    sla_ctx *c = NULL;
    sla_ctx_create(&c);
    sla_ctx_set_threads(c, 1);
    sla_matrix *A = NULL;
    CHECK_OK(c, sla_gen_convdiff2d(c, 20, 1.0, 3.0, &A));
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *x = malloc((size_t)n * sizeof *x);
    tu_fill(x, n, 5);
    shared_A = A;
    shared_x = x;
    ref_y = malloc((size_t)n * sizeof(double));
    ref_yt = malloc((size_t)n * sizeof(double));
    ref_gA = malloc((size_t)nnz * sizeof(double));
    CHECK_OK(c, sla_matvec(c, A, 0, 1, x, n, ref_y, n));
    CHECK_OK(c, sla_matvec_transpose(c, A, 0, 1, x, n, ref_yt, n));
    CHECK_OK(c, sla_matvec_vjp(c, A, 0, 1, x, n, x, n, NULL, n, ref_gA));
    for (int k = 0; k < 3; k++) {
        ref_sol[k] = malloc((size_t)n * sizeof(double));
        if (sla_method_available(shared_methods[k])) CHECK_OK(c, shared_solve(c, shared_methods[k], ref_sol[k]));
    }
    /* the reference itself against dense LAPACK */
    double *xd = malloc((size_t)n * sizeof *xd);
    CHECK(tu_dense_solve(A, 0, x, xd) == 0);
    CHECK(tu_reldiff(n, ref_sol[0], xd) < 1e-7);
    free(xd);
    pthread_t th[NTHREADS];
    worker_arg w[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        w[t] = (worker_arg){t, 0, 0};
        CHECK(pthread_create(&th[t], NULL, worker_shared, &w[t]) == 0);
    }
    int runs = 0;
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        CHECK(w[t].mismatches == 0);
        runs += w[t].runs;
    }
    printf("  one shared matrix: %d threads x %d rounds (matvec, transpose, VJP, own solver), "
           "identical to serial\n", NTHREADS, runs / NTHREADS);
    for (int k = 0; k < 3; k++) free(ref_sol[k]);
    free(ref_y);
    free(ref_yt);
    free(ref_gA);
    free(x);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&c);
}

int main(void)
{
    test_different_systems();
    test_shared_matrix();
    return tu_finish("test_threads");
}
