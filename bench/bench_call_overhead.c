/* bench_call_overhead — the C side of bench_py_overhead.py: the time of one
 * call of sla_solver_solve (+ sla_solver_solve_vjp) on a cached solver,
 * the floor the Python binding's per-call time is compared with.
 *
 *   sla_bench_call_overhead [--N 32] [--opts method=cholesky] [--calls 200]
 *                           [--warmup 20] [--threads 1]
 *
 * Problem: 2-D Poisson on an N x N grid (n = N^2), b = ones. The solver is
 * set up once (factorization or preconditioner); each call then does
 *   forward:  x = A^-1 b                                (sla_solver_solve)
 *   backward: gA = -(A^-T 1) x^T on the pattern          (sla_solver_solve_vjp,
 *             gx = ones as x.sum().backward() gives it, gb not asked)
 * and the medians over `calls` calls are printed as one JSON line:
 * {"n", "nnz", "opts", "calls", "solve_us", "solve_vjp_us", "step_us", "step_cpu_us"}
 * (step = solve + vjp measured together, the Python loop's counterpart;
 * step_cpu_us: the thread's CPU time over the timed calls / calls, which
 * other processes on a loaded machine disturb less than the wall time).
 */
#include <sla.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

/* CPU seconds of the calling thread (the solves run on it: --threads 1). */
static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(sla_ctx *ctx, const char *what, sla_status st)
{
    fprintf(stderr, "bench_call_overhead: %s: %s: %s\n", what, sla_status_name(st),
            sla_ctx_message(ctx));
    return 1;
}

int main(int argc, char **argv)
{
    long N = 32, calls = 200, warmup = 20;
    int threads = 1;
    const char *opts = "method=cholesky";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--N")) N = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--opts")) opts = argv[i + 1];
        else if (!strcmp(argv[i], "--calls")) calls = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup")) warmup = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "bench_call_overhead: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (N < 2 || calls < 1 || warmup < 0) {
        fprintf(stderr, "bench_call_overhead: need --N >= 2, --calls >= 1, --warmup >= 0\n");
        return 2;
    }
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    sla_ctx_set_threads(ctx, threads);
    sla_matrix *A = NULL;
    sla_solver *S = NULL;
    sla_solver_options o;
    sla_solver_options_default(&o);
    sla_status st = sla_gen_poisson(ctx, 2, N, &A);
    if (st != SLA_OK) return fail(ctx, "poisson", st);
    st = sla_solver_options_parse(ctx, opts, &o);
    if (st != SLA_OK) return fail(ctx, "options", st);
    st = sla_solver_create(ctx, A, &o, &S);
    if (st != SLA_OK) return fail(ctx, "solver set-up", st);
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *b = malloc(sizeof(double) * (size_t)n), *x = malloc(sizeof(double) * (size_t)n);
    double *gx = malloc(sizeof(double) * (size_t)n), *gA = malloc(sizeof(double) * (size_t)nnz);
    double *t_solve = malloc(sizeof(double) * (size_t)calls);
    double *t_vjp = malloc(sizeof(double) * (size_t)calls);
    double *t_step = malloc(sizeof(double) * (size_t)calls);
    if (!b || !x || !gx || !gA || !t_solve || !t_vjp || !t_step) return 1;
    for (sla_int i = 0; i < n; i++) b[i] = gx[i] = 1.0;
    sla_solve_info info;
    double cpu0 = 0.0;
    for (long c = 0; c < warmup + calls; c++) {
        if (c == warmup) cpu0 = thread_cpu();
        double t0 = now();
        st = sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info);
        double t1 = now();
        if (st < 0) return fail(ctx, "solve", st);
        st = sla_solver_solve_vjp(ctx, S, 0, 1, x, n, gx, n, NULL, n, gA, &info);
        double t2 = now();
        if (st < 0) return fail(ctx, "solve_vjp", st);
        if (c >= warmup) {
            t_solve[c - warmup] = 1e6 * (t1 - t0);
            t_vjp[c - warmup] = 1e6 * (t2 - t1);
            t_step[c - warmup] = 1e6 * (t2 - t0);
        }
    }
    double step_cpu_us = 1e6 * (thread_cpu() - cpu0) / (double)calls;
    printf("{\"n\": %lld, \"nnz\": %lld, \"opts\": \"%s\", \"calls\": %ld, \"solve_us\": %.3f, "
           "\"solve_vjp_us\": %.3f, \"step_us\": %.3f, \"step_cpu_us\": %.3f, "
           "\"iterations\": %lld}\n",
           (long long)n, (long long)nnz, opts, calls, median(t_solve, (int)calls),
           median(t_vjp, (int)calls), median(t_step, (int)calls), step_cpu_us,
           (long long)info.iterations);
    free(b); free(x); free(gx); free(gA); free(t_solve); free(t_vjp); free(t_step);
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
    return 0;
}
