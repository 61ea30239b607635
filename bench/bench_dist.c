/* bench_dist — the distributed layer on 2D Poisson: time per CG iteration,
 * bytes per DOF, the share of time spent communicating, and iteration
 * counts against the single-process solver.
 *
 *   mpiexec -n P sla_bench_dist [--N 2048] [--iters 200] [--reps 3]
 *                               [--conv-N 512] [--json FILE]
 *
 * Each rank assembles its own rows of the 5-point Laplacian on an N x N grid
 * (contiguous blocks of the lexicographic numbering, i.e. horizontal strips;
 * no global matrix exists anywhere) and runs CG + Jacobi through
 * sla_dist_solver_solve for exactly --iters iterations (rtol 0), --reps
 * times; the median is reported. From the layer's counters (halo waits,
 * allreduce time, messages and bytes) come the per-iteration message sizes,
 * allreduce counts and the communication share:
 *   comm share = (time blocked in MPI_Waitall + time in MPI_Allreduce) / solve
 * taken as the maximum over ranks (allreduce time includes waiting for the
 * slowest rank, i.e. load imbalance and, when oversubscribed, descheduling).
 * The convergence part solves an --conv-N grid to rtol 1e-8 distributed and
 * with the single-process sla_solver (on rank 0) and compares iterations.
 */
#define _POSIX_C_SOURCE 200809L
#include <sla.h>
#include <sla/dist.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

static int rank_, size_;

/* Rows [r0, r1) of the 5-point Laplacian on an N x N grid (x fastest). */
static void poisson_rows(sla_int N, sla_int r0, sla_int r1, sla_int **rp, sla_int **ci, double **v)
{
    sla_int nl = r1 - r0;
    *rp = malloc((size_t)(nl + 1) * sizeof **rp);
    *ci = malloc((size_t)(5 * nl) * sizeof **ci);
    *v = malloc((size_t)(5 * nl) * sizeof **v);
    sla_int k = 0;
    (*rp)[0] = 0;
    for (sla_int i = r0; i < r1; i++) {
        sla_int x = i % N, y = i / N;
        if (y > 0) { (*ci)[k] = i - N; (*v)[k++] = -1.0; }
        if (x > 0) { (*ci)[k] = i - 1; (*v)[k++] = -1.0; }
        (*ci)[k] = i; (*v)[k++] = 4.0;
        if (x < N - 1) { (*ci)[k] = i + 1; (*v)[k++] = -1.0; }
        if (y < N - 1) { (*ci)[k] = i + N; (*v)[k++] = -1.0; }
        (*rp)[i - r0 + 1] = k;
    }
}

static sla_dist_matrix *make(sla_ctx *ctx, sla_int N)
{
    sla_int n = N * N, r0 = n * rank_ / size_, r1 = n * (rank_ + 1) / size_;
    sla_int *rp, *ci;
    double *v;
    poisson_rows(N, r0, r1, &rp, &ci, &v);
    sla_dist_matrix *D = NULL;
    if (sla_dist_matrix_create(ctx, MPI_COMM_WORLD, r1 - r0, rp, ci, v, &D) != SLA_OK && rank_ == 0)
        fprintf(stderr, "create: %s\n", sla_ctx_message(ctx));
    free(rp);
    free(ci);
    free(v);
    return D;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    sla_int N = 2048, convN = 512;
    int iters = 200, reps = 3;
    const char *json = NULL;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--N") && a + 1 < argc) N = atoll(argv[++a]);
        else if (!strcmp(argv[a], "--iters") && a + 1 < argc) iters = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--reps") && a + 1 < argc) reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--conv-N") && a + 1 < argc) convN = atoll(argv[++a]);
        else if (!strcmp(argv[a], "--json") && a + 1 < argc) json = argv[++a];
        else {
            if (rank_ == 0) fprintf(stderr, "usage: sla_bench_dist [--N 2048] [--iters 200] [--reps 3] [--conv-N 512] [--json FILE]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (reps > 15) reps = 15;
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    int threads = sla_ctx_threads(ctx);

    /* ---- time per iteration ---------------------------------------------------------- */
    sla_dist_matrix *D = make(ctx, N);
    if (!D) MPI_Abort(MPI_COMM_WORLD, 1);
    sla_int n = N * N, nl = sla_dist_matrix_nlocal(D);
    double *b = malloc((size_t)nl * sizeof *b), *x = malloc((size_t)nl * sizeof *x);
    for (sla_int i = 0; i < nl; i++) b[i] = 1.0;
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    o.precond = SLA_PRECOND_JACOBI;
    o.rtol = 0.0;
    o.maxiter = iters;
    sla_dist_solver *S = NULL;
    sla_dist_solver_create(ctx, D, &o, &S);
    double per_it[16], share[16], wait_s[16], ared_s[16];
    sla_dist_stats st = {0};
    load_mark l0 = load_now();
    for (int r = 0; r < reps; r++) {
        sla_solve_info inf;
        sla_dist_matrix_stats_reset(D);
        sla_dist_solver_solve(ctx, S, b, x, &inf);
        sla_dist_matrix_stats(D, &st);
        per_it[r] = inf.solve_seconds / (double)inf.iterations;
        wait_s[r] = all_max(st.halo_wait_seconds) / (double)inf.iterations;
        ared_s[r] = all_max(st.allreduce_seconds) / (double)inf.iterations;
        share[r] = all_max((st.halo_wait_seconds + st.allreduce_seconds) / inf.solve_seconds);
    }
    load_mark l1 = load_now();
    double other = other_load_pct(l0, l1);
    double sorted[16];
    memcpy(sorted, per_it, (size_t)reps * sizeof(double));
    qsort(sorted, (size_t)reps, sizeof(double), bench_cmp_double);
    double med = sorted[reps / 2];
    int mi = 0;
    for (int r = 0; r < reps; r++)
        if (per_it[r] == med) mi = r;
    /* per-iteration communication from the last repetition's counters */
    double its = (double)iters + 1.0; /* + the final true residual's product */
    double msgs = all_sum((double)st.messages) / its, bytes = all_sum((double)st.bytes_sent) / its;
    double max_msg_bytes = all_max(st.messages ? (double)st.bytes_sent / (double)st.messages : 0.0);
    double ared = (double)st.allreduces / (double)iters, ared_d = (double)st.allreduce_doubles / (double)iters;
    /* memory per DOF: the two blocks (rowptr, 32-bit colind, values), the
     * halo plan and ghost buffer, and CG's vectors (x, b, r, p, q, z) */
    double mem = 2.0 * 8.0 * (double)(nl + 1) + 12.0 * (double)sla_dist_matrix_nnz_local(D) +
                 8.0 * (double)sla_dist_matrix_nghost(D) * 3.0 + 8.0 * 6.0 * (double)nl;
    /* plus the local pattern as given (kept for gradients and save): rowptr, int64 colind, positions */
    double mem_pattern = 8.0 * (double)(nl + 1) + 16.0 * (double)sla_dist_matrix_nnz_local(D);
    mem = all_sum(mem) / (double)n;
    mem_pattern = all_sum(mem_pattern) / (double)n;
    int nb = sla_dist_matrix_neighbours(D), nbmax = (int)all_max(nb);
    sla_dist_solver_destroy(&S);
    sla_dist_matrix_destroy(&D);
    free(b);
    free(x);

    /* ---- iterations against the single-process solver ------------------------------- */
    D = make(ctx, convN);
    sla_int cn = convN * convN, cnl = sla_dist_matrix_nlocal(D);
    b = malloc((size_t)cnl * sizeof *b);
    x = malloc((size_t)cnl * sizeof *x);
    for (sla_int i = 0; i < cnl; i++) b[i] = 1.0;
    o.rtol = 1e-8;
    o.maxiter = 0;
    sla_dist_solver_create(ctx, D, &o, &S);
    sla_solve_info dinf, sinf;
    memset(&sinf, 0, sizeof sinf);
    sla_dist_solver_solve(ctx, S, b, x, &dinf);
    if (rank_ == 0) {
        sla_matrix *A = NULL;
        sla_gen_poisson(ctx, 2, convN, &A);
        double *bs = malloc((size_t)cn * sizeof *bs), *xs = malloc((size_t)cn * sizeof *xs);
        for (sla_int i = 0; i < cn; i++) bs[i] = 1.0;
        sla_solve(ctx, A, &o, bs, xs, &sinf);
        free(bs);
        free(xs);
        sla_matrix_destroy(&A);
    }
    sla_dist_solver_destroy(&S);
    sla_dist_matrix_destroy(&D);
    free(b);
    free(x);

    if (rank_ == 0) {
        printf("ranks threads      n  ms/iter  halo_wait_ms  allreduce_ms  comm%%  msgs/it  bytes/it  max_msg_B  "
               "allreduce/it  doubles/it  neighbours  mem_B/DOF  other_load%%\n");
        printf("%5d %7d %7lld %8.3f %13.3f %13.3f %6.1f %8.1f %9.0f %10.0f %13.2f %11.2f %11d %10.1f %12.1f\n", size_,
               threads, (long long)n, 1e3 * med, 1e3 * wait_s[mi], 1e3 * ared_s[mi], 100.0 * share[mi], msgs, bytes,
               max_msg_bytes, ared, ared_d, nbmax, mem, other);
        printf("convergence N=%lld (n=%lld), cg+jacobi rtol 1e-8: distributed %lld iterations (residual %.3e), "
               "serial %lld iterations (residual %.3e): %s\n",
               (long long)convN, (long long)cn, (long long)dinf.iterations, dinf.residual,
               (long long)sinf.iterations, sinf.residual, dinf.iterations == sinf.iterations ? "equal" : "DIFFERENT");
        printf("memory per DOF: %.1f B (blocks, halo, 6 CG vectors) + %.1f B (the local pattern as given, kept for "
               "gradients and save)\n",
               mem, mem_pattern);
        if (json) {
            FILE *f = fopen(json, "w");
            if (f) {
                fprintf(f,
                        "{\"ranks\": %d, \"threads\": %d, \"n\": %lld, \"iters\": %d, \"reps\": %d, "
                        "\"ms_per_iter\": %.6f, \"ms_per_iter_all\": [",
                        size_, threads, (long long)n, iters, reps, 1e3 * med);
                for (int r = 0; r < reps; r++) fprintf(f, "%s%.6f", r ? ", " : "", 1e3 * per_it[r]);
                fprintf(f,
                        "], \"halo_wait_ms\": %.6f, \"allreduce_ms\": %.6f, \"comm_share\": %.4f, "
                        "\"messages_per_iter\": %.2f, \"bytes_per_iter\": %.1f, \"max_message_bytes\": %.0f, "
                        "\"allreduces_per_iter\": %.3f, \"allreduce_doubles_per_iter\": %.3f, "
                        "\"neighbours_max\": %d, \"mem_bytes_per_dof\": %.2f, \"pattern_bytes_per_dof\": %.2f, "
                        "\"other_load_pct\": %.1f, \"conv_n\": %lld, \"conv_iters_dist\": %lld, "
                        "\"conv_iters_serial\": %lld}\n",
                        1e3 * wait_s[mi], 1e3 * ared_s[mi], share[mi], msgs, bytes, max_msg_bytes, ared, ared_d,
                        nbmax, mem, mem_pattern, other, (long long)cn, (long long)dinf.iterations,
                        (long long)sinf.iterations);
                fclose(f);
            }
        }
    }
    sla_ctx_destroy(&ctx);
    MPI_Finalize();
    return 0;
}
