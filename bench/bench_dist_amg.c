/* bench_dist_amg — CG + BoomerAMG over MPI ranks: one hierarchy across all
 * ranks (sla_dist_solver with precond amg), against the single-process
 * solver in the same run.
 *
 *   mpiexec -n P sla_bench_dist_amg [--problems p2d-1m,p2d-4m,p3d-1m,aniso-1m]
 *                                   [--reps 3] [--rtol 1e-8] [--threads 1]
 *                                   [--serial 1] [--json FILE]
 *
 * For each problem, rank 0 generates the matrix (sla_gen_poisson /
 * sla_gen_aniso2d) and scatters contiguous row blocks (SLA_PART_BLOCK); the
 * generation and scatter are not timed. Then, --reps times: create the
 * distributed solver (the AMG set-up, collective) and solve A x = ones to
 * --rtol. Times are the maximum over ranks, reported as medians; the
 * residual is the true one (||b - A x|| / ||b||, from the Krylov method's
 * final product). With --serial 1 (the default), rank 0 then runs the
 * single-process solver (sla_solver_create + sla_solver_solve, the serial
 * precond amg) on the same matrix while the other ranks wait in a barrier
 * (OpenMPI is told to yield when idle, so they leave the core to rank 0).
 * Threads: 1 per rank by default, so that P ranks use P cores; the
 * AMG cycle itself is single-threaded in Debian's hypre.
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

typedef struct {
    const char *name, *label;
    int kind; /* 0 poisson2d, 1 poisson3d, 2 aniso2d (eps 0.01) */
    long N;
} problem;

static const problem problems[] = {
    {"p2d-1m", "2D Poisson 1000^2", 0, 1000},
    {"p2d-4m", "2D Poisson 2000^2", 0, 2000},
    {"p3d-1m", "3D Poisson 100^3", 1, 100},
    {"aniso-1m", "aniso 2D eps=0.01 1000^2", 2, 1000},
    {"p2d-64k", "2D Poisson 256^2", 0, 256},
};

typedef struct {
    double setup, solve, total, residual;
    long long iterations;
    int converged;
} result;

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    const char *plist = "p2d-1m,p2d-4m,p3d-1m,aniso-1m", *json = NULL;
    int reps = 3, threads = 1, serial = 1;
    double rtol = 1e-8;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--problems") && a + 1 < argc) plist = argv[++a];
        else if (!strcmp(argv[a], "--reps") && a + 1 < argc) reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--rtol") && a + 1 < argc) rtol = atof(argv[++a]);
        else if (!strcmp(argv[a], "--threads") && a + 1 < argc) threads = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--serial") && a + 1 < argc) serial = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--json") && a + 1 < argc) json = argv[++a];
        else {
            if (rank_ == 0)
                fprintf(stderr, "usage: sla_bench_dist_amg [--problems p2d-1m,p2d-4m,p3d-1m,aniso-1m,p2d-64k] "
                                "[--reps 3] [--rtol 1e-8] [--threads 1] [--serial 1] [--json FILE]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (reps > 32) reps = 32;
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    if (threads > 0) sla_ctx_set_threads(ctx, threads);
    FILE *jf = NULL;
    if (rank_ == 0 && json) {
        jf = fopen(json, "w");
        if (jf) fprintf(jf, "[");
    }
    if (rank_ == 0)
        printf("| problem | ranks | solver | n | set-up s | solve s | total s | iterations | residual | peak GB "
               "(all ranks) | other load |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    int first = 1;
    char *list = strdup(plist);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        const problem *p = NULL;
        for (size_t k = 0; k < sizeof problems / sizeof problems[0]; k++)
            if (!strcmp(problems[k].name, tok)) p = &problems[k];
        if (!p) {
            if (rank_ == 0) fprintf(stderr, "unknown problem %s\n", tok);
            continue;
        }
        sla_matrix *A = NULL;
        if (rank_ == 0) {
            sla_status st = p->kind == 2 ? sla_gen_aniso2d(ctx, p->N, 0.01, &A)
                                         : sla_gen_poisson(ctx, p->kind == 0 ? 2 : 3, p->N, &A);
            if (st) fprintf(stderr, "generate %s: %s\n", p->name, sla_ctx_message(ctx));
        }
        sla_dist_matrix *D = NULL;
        if (sla_dist_matrix_scatter(ctx, MPI_COMM_WORLD, 0, A, SLA_PART_BLOCK, &D)) {
            if (rank_ == 0) fprintf(stderr, "scatter: %s\n", sla_ctx_message(ctx));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        sla_int n = sla_dist_matrix_n(D), nl = sla_dist_matrix_nlocal(D);
        double *b = malloc((size_t)(nl + 1) * sizeof *b), *x = malloc((size_t)(nl + 1) * sizeof *x);
        for (sla_int i = 0; i < nl; i++) b[i] = 1.0;
        sla_solver_options o;
        sla_solver_options_default(&o);
        o.method = SLA_METHOD_CG;
        o.precond = SLA_PRECOND_AMG;
        o.rtol = rtol;
        double su[32], so[32], to[32];
        result r = {0};
        load_mark l0 = load_now();
        for (int k = 0; k < reps; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            sla_dist_solver *S = NULL;
            sla_status st = sla_dist_solver_create(ctx, D, &o, &S);
            double t1 = MPI_Wtime();
            sla_solve_info inf;
            memset(&inf, 0, sizeof inf);
            if (!st) st = sla_dist_solver_solve(ctx, S, b, x, &inf);
            double t2 = MPI_Wtime();
            if (st && rank_ == 0) fprintf(stderr, "%s: %s\n", p->name, sla_ctx_message(ctx));
            sla_dist_solver_destroy(&S);
            su[k] = all_max(t1 - t0);
            so[k] = all_max(t2 - t1);
            to[k] = all_max(t2 - t0);
            r.iterations = (long long)inf.iterations;
            r.residual = inf.residual;
            r.converged = inf.converged;
        }
        double other = other_load_pct(l0, load_now());
        r.setup = median(su, reps);
        r.solve = median(so, reps);
        r.total = median(to, reps);
        double rss = all_sum(peak_rss_bytes());
        if (rank_ == 0) {
            printf("| %s | %d | dist cg+amg | %lld | %.3f | %.3f | **%.3f** | %lld | %.2e | %.2f | %.0f %% |\n",
                   p->name, size_, (long long)n, r.setup, r.solve, r.total, r.iterations, r.residual, rss / 1e9,
                   other);
            fflush(stdout);
            if (jf) {
                fprintf(jf,
                        "%s\n {\"problem\":\"%s\",\"ranks\":%d,\"threads\":%d,\"solver\":\"dist\",\"n\":%lld,"
                        "\"rtol\":%g,\"reps\":%d,\"setup_s\":%.4f,\"solve_s\":%.4f,\"total_s\":%.4f,"
                        "\"iterations\":%lld,\"residual\":%.3e,\"converged\":%s,\"peak_rss_all_ranks\":%.0f,"
                        "\"other_load_pct\":%.1f}",
                        first ? "" : ",", p->name, size_, threads, (long long)n, rtol, reps, r.setup, r.solve,
                        r.total, r.iterations, r.residual, r.converged ? "true" : "false", rss, other);
                first = 0;
            }
        }
        sla_dist_matrix_destroy(&D);
        free(b);
        free(x);
        /* the single-process solver on rank 0, the other ranks idle */
        if (serial && rank_ == 0 && A) {
            double *bs = malloc((size_t)n * sizeof *bs), *xs = malloc((size_t)n * sizeof *xs);
            for (sla_int i = 0; i < n; i++) bs[i] = 1.0;
            result s = {0};
            load_mark m0 = load_now();
            for (int k = 0; k < reps; k++) {
                double t0 = MPI_Wtime();
                sla_solver *S = NULL;
                sla_status st = sla_solver_create(ctx, A, &o, &S);
                double t1 = MPI_Wtime();
                sla_solve_info inf;
                memset(&inf, 0, sizeof inf);
                if (!st) st = sla_solver_solve(ctx, S, 0, 1, bs, n, xs, n, &inf);
                double t2 = MPI_Wtime();
                if (st) fprintf(stderr, "%s serial: %s\n", p->name, sla_ctx_message(ctx));
                sla_solver_destroy(&S);
                su[k] = t1 - t0;
                so[k] = t2 - t1;
                to[k] = t2 - t0;
                s.iterations = (long long)inf.iterations;
                s.residual = inf.residual;
                s.converged = inf.converged;
            }
            double oth = other_load_pct(m0, load_now());
            s.setup = median(su, reps);
            s.solve = median(so, reps);
            s.total = median(to, reps);
            printf("| %s | 1 | serial cg+amg | %lld | %.3f | %.3f | %.3f | %lld | %.2e | - | %.0f %% |\n", p->name,
                   (long long)n, s.setup, s.solve, s.total, s.iterations, s.residual, oth);
            fflush(stdout);
            if (jf)
                fprintf(jf,
                        ",\n {\"problem\":\"%s\",\"ranks\":1,\"threads\":%d,\"solver\":\"serial\",\"n\":%lld,"
                        "\"rtol\":%g,\"reps\":%d,\"setup_s\":%.4f,\"solve_s\":%.4f,\"total_s\":%.4f,"
                        "\"iterations\":%lld,\"residual\":%.3e,\"converged\":%s,\"other_load_pct\":%.1f}",
                        p->name, threads, (long long)n, rtol, reps, s.setup, s.solve, s.total, s.iterations,
                        s.residual, s.converged ? "true" : "false", oth);
            free(bs);
            free(xs);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        sla_matrix_destroy(&A);
    }
    free(list);
    if (jf) {
        fprintf(jf, "\n]\n");
        fclose(jf);
    }
    sla_ctx_destroy(&ctx);
    MPI_Finalize();
    return 0;
}
