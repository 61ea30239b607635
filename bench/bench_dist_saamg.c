/* bench_dist_saamg — CG + the distributed smoothed-aggregation AMG
 * (sla_dist_solver with precond=saamg: one hierarchy over the ranks,
 * src/dist/dist_saamg.c) against one process with T threads (sla_solver
 * with precond=saamg) in the same run, with the messages per iteration.
 *
 *   mpiexec -n P sla_bench_dist_saamg [--problems p2d-1m,p2d-4m] [--reps 3]
 *                                     [--rtol 1e-8] [--serial-threads 2]
 *
 * For each problem, every rank assembles its own contiguous block of rows
 * of 2-D Poisson (or 3-D: p3d-1m) and creates the distributed matrix from
 * them, as a distributed application does (not timed; before 2026-12-05
 * rank 0 generated the whole matrix and scattered it, which left rank 0's
 * heap warm and the others' cold: rank 1's set-ups took 4700-7800 minor
 * page faults and up to 0.19 s of system time each, rank 0's none, and
 * rank 0 waited for it). Then, --reps times: create
 * the distributed solver (the saamg set-up, collective) and solve A x =
 * ones to --rtol, one thread per rank. Reported: wall set-up and solve
 * (maximum over ranks, medians), CPU seconds of all ranks together (note:
 * OpenMPI polls while it waits, so a rank's CPU includes its waits, given
 * separately as "MPI wait": halo waits + allreduces + coarse gathers,
 * summed over ranks), iterations, true residual. Per level of the
 * hierarchy, from the last solve's counters: global rows, halo exchanges
 * per CG iteration, bytes sent per exchange (all ranks together) and
 * the largest neighbour count; then the allreduces per iteration and the
 * coarse gather's bytes. Then rank 0 generates the whole matrix
 * (sla_gen_poisson) and runs the single-process solver with
 * --serial-threads threads while the other ranks wait in a barrier
 * (OpenMPI told to yield: run with OMPI_MCA_mpi_yield_when_idle=1).
 * The polling still takes a core's share, so bench/run_all.sh runs the
 * serial comparison as a job of its own (mpiexec -n 1, --bind-to none:
 * the default binds a rank to one core, its 2 threads with it).
 */
#define _POSIX_C_SOURCE 200809L
#include <sla.h>
#include <sla/dist.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anchors/anchor_gen.h"
#include "bench_util.h"
#include "dist/dist_internal.h"

static int rank_, size_;

typedef struct {
    const char *name;
    int dim;
    long N;
} problem;

static const problem problems[] = {
    {"p2d-1m", 2, 1000}, {"p2d-4m", 2, 2000}, {"p3d-1m", 3, 100}, {"p2d-64k", 2, 256},
};

static double all_sum_d(double v)
{
    double s = 0.0;
    MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

static double all_max_d(double v)
{
    double s = 0.0;
    MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return s;
}

/* This rank's rows of the problem's matrix (contiguous blocks of n r /
 * size rows, as SLA_PART_BLOCK splits them), assembled here and handed to
 * sla_dist_matrix_create, as a distributed application assembles its own
 * rows: the same stencil, ordering and values as sla_gen_poisson
 * (anchors/anchor_gen.h; tests/test_anchor_gen.c). NULL after a message. */
static sla_dist_matrix *assemble_local(sla_ctx *ctx, const problem *p)
{
    anchor_grid g = anchor_grid_make(p->dim, p->N);
    long long r0 = g.n * rank_ / size_, r1 = g.n * (rank_ + 1) / size_;
    sla_int nl = (sla_int)(r1 - r0);
    sla_int *rp = malloc((size_t)(nl + 1) * sizeof *rp), *ci = malloc((size_t)(7 * nl + 1) * sizeof *ci);
    double *v = malloc((size_t)(7 * nl + 1) * sizeof *v);
    sla_dist_matrix *D = NULL;
    if (rp && ci && v) {
        long long cols[7];
        double vals[7];
        rp[0] = 0;
        for (long long q = r0; q < r1; q++) {
            int m = anchor_row(&g, NULL, q, cols, vals);
            sla_int at = rp[q - r0];
            for (int k = 0; k < m; k++) ci[at + k] = (sla_int)cols[k], v[at + k] = vals[k];
            rp[q - r0 + 1] = at + m;
        }
        if (sla_dist_matrix_create(ctx, MPI_COMM_WORLD, nl, rp, ci, v, &D) && rank_ == 0)
            fprintf(stderr, "assemble %s: %s\n", p->name, sla_ctx_message(ctx));
    } else {
        fprintf(stderr, "assemble %s: out of memory on rank %d\n", p->name, rank_);
    }
    free(rp);
    free(ci);
    free(v);
    return D;
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    const char *plist = "p2d-1m,p2d-4m";
    int reps = 3, sthreads = 2;
    double rtol = 1e-8;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--problems") && a + 1 < argc) plist = argv[++a];
        else if (!strcmp(argv[a], "--reps") && a + 1 < argc) reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--rtol") && a + 1 < argc) rtol = atof(argv[++a]);
        else if (!strcmp(argv[a], "--serial-threads") && a + 1 < argc) sthreads = atoi(argv[++a]);
        else {
            if (rank_ == 0)
                fprintf(stderr, "usage: sla_bench_dist_saamg [--problems p2d-1m,p2d-4m,p3d-1m,p2d-64k] [--reps 3] "
                                "[--rtol 1e-8] [--serial-threads 2 (0: no serial run)]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (reps > 32) reps = 32;
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    sla_ctx_set_threads(ctx, 1);
    char *list = strdup(plist);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        const problem *p = NULL;
        for (size_t k = 0; k < sizeof problems / sizeof problems[0]; k++)
            if (!strcmp(problems[k].name, tok)) p = &problems[k];
        if (!p) {
            if (rank_ == 0) fprintf(stderr, "unknown problem %s\n", tok);
            continue;
        }
        sla_dist_matrix *D = assemble_local(ctx, p);
        if (!D) MPI_Abort(MPI_COMM_WORLD, 1);
        sla_int n = sla_dist_matrix_n(D), nl = sla_dist_matrix_nlocal(D);
        double *b = malloc((size_t)(nl + 1) * sizeof *b), *x = malloc((size_t)(nl + 1) * sizeof *x);
        for (sla_int i = 0; i < nl; i++) b[i] = 1.0;
        sla_solver_options o;
        sla_solver_options_default(&o);
        o.method = SLA_METHOD_CG;
        o.precond = SLA_PRECOND_SAAMG;
        o.rtol = rtol;
        double su[32], so[32], cu[32], co[32], wt[32];
        sla_solve_info inf;
        memset(&inf, 0, sizeof inf);
        load_mark l0 = load_now();
        int nlev = 0;
        char lines[48][220];
        int nlines = 0;
        double ar_per_it = 0.0, gath_bytes = 0.0, gath_per_it = 0.0;
        for (int k = 0; k < reps; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime(), c0 = cpu_now();
            sla_dist_solver *S = NULL;
            sla_status st = sla_dist_solver_create(ctx, D, &o, &S);
            double t1 = MPI_Wtime(), c1 = cpu_now();
            const struct sla__pc *pc = sla__dist_solver_pc(S);
            nlev = sla__dist_saamg_levels(pc);
            for (int l = 0; l < nlev; l++) {
                sla_dist_matrix *Pl = NULL;
                sla_dist_matrix_stats_reset(sla__dist_saamg_level(pc, l, &Pl));
                sla_dist_matrix_stats_reset(Pl);
            }
            int64_t g0c = 0, g0b = 0, g1c = 0, g1b = 0;
            if (pc) sla__dist_saamg_gathers(pc, &g0c, &g0b);
            if (!st) st = sla_dist_solver_solve(ctx, S, b, x, &inf);
            double t2 = MPI_Wtime(), c2 = cpu_now();
            if (st && rank_ == 0) fprintf(stderr, "%s: %s\n", p->name, sla_ctx_message(ctx));
            /* the messages of this solve, per level */
            double waits = 0.0, its = inf.iterations > 0 ? (double)inf.iterations : 1.0;
            nlines = 0;
            for (int l = 0; l < nlev && pc; l++) {
                sla_dist_matrix *Pl = NULL, *Al = sla__dist_saamg_level(pc, l, &Pl);
                for (int w = 0; w < 2; w++) { /* the level's own exchanges, then P's coarse plan's */
                    sla_dist_matrix *M = w ? Pl : Al;
                    int have = M != NULL, any = 0;
                    MPI_Allreduce(&have, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
                    if (!any) continue;
                    sla_dist_stats s;
                    sla_dist_matrix_stats(M, &s);
                    waits += s.halo_wait_seconds + s.allreduce_seconds;
                    double ex = all_max_d((double)s.halo_exchanges), by = all_sum_d((double)s.bytes_sent);
                    double msg = all_sum_d((double)s.messages);
                    double nb = all_max_d((double)sla_dist_matrix_neighbours(M));
                    if (l == 0 && !w) ar_per_it = (double)s.allreduces / its;
                    if (nlines < 48)
                        snprintf(lines[nlines++], sizeof lines[0],
                                 "|   level %d %s | %lld rows | %.1f exchanges/it | %.0f B/exchange (all ranks) | "
                                 "%.1f messages/exchange | max %d neighbours |",
                                 l, w ? "P (restrict/prolong)" : "A (SpMV/smoother)",
                                 (long long)sla_dist_matrix_n(M), ex / its, ex > 0 ? by / ex : 0.0,
                                 ex > 0 ? msg / ex : 0.0, (int)nb);
                }
            }
            if (pc) sla__dist_saamg_gathers(pc, &g1c, &g1b);
            gath_per_it = (double)(g1c - g0c) / its;
            gath_bytes = g1c > g0c ? all_sum_d((double)(g1b - g0b)) / (double)(g1c - g0c) : all_sum_d(0.0);
            sla_dist_solver_destroy(&S);
            su[k] = all_max_d(t1 - t0);
            so[k] = all_max_d(t2 - t1);
            cu[k] = all_sum_d(c1 - c0);
            co[k] = all_sum_d(c2 - c1);
            wt[k] = all_sum_d(waits);
        }
        double other = other_load_pct(l0, load_now());
        if (rank_ == 0) {
            printf("%s, n = %lld, %d ranks x 1 thread: set-up %.3f s (CPU %.2f s), solve %.3f s (CPU %.2f s, MPI "
                   "wait %.2f s), %lld iterations, residual %.2e, %d levels; other load %.0f %%\n",
                   p->name, (long long)n, size_, median(su, reps), median(cu, reps), median(so, reps),
                   median(co, reps), median(wt, reps), (long long)inf.iterations, inf.residual, nlev, other);
            for (int t = 0; t < nlines; t++) printf("%s\n", lines[t]);
            printf("|   per iteration | %.1f allreduces | %.1f coarse MPI_Allgatherv of %.0f B (all ranks) |\n",
                   ar_per_it, gath_per_it, gath_bytes);
            fflush(stdout);
        }
        { /* refresh: values scaled by 1.01 and 1 / 1.01 in turn, P kept (saamg_reuse
           * interpolation), against a rebuild (saamg_reuse none) */
            sla_int nzl = sla_dist_matrix_nnz_local(D);
            double *v = malloc((size_t)(nzl + 1) * sizeof *v);
            sla_dist_matrix_get_values(D, v);
            double tr[2][32];
            long long itr[2] = {0, 0};
            for (int mode = 0; mode < 2; mode++) {
                sla_solver_options orf = o;
                orf.saamg_reuse = mode == 0 ? 0 : 2;
                sla_dist_solver *S = NULL;
                if (sla_dist_solver_create(ctx, D, &orf, &S)) break;
                for (int k = 0; k < reps; k++) {
                    double f = k % 2 ? 1.0 / 1.01 : 1.01;
                    for (sla_int q = 0; q < nzl; q++) v[q] *= f;
                    sla_dist_matrix_set_values(ctx, D, v);
                    MPI_Barrier(MPI_COMM_WORLD);
                    double t0 = MPI_Wtime();
                    sla_status st = sla_dist_solver_refresh(ctx, S);
                    tr[mode][k] = all_max_d(MPI_Wtime() - t0);
                    if (!st) st = sla_dist_solver_solve(ctx, S, b, x, &inf);
                    if (st && rank_ == 0) fprintf(stderr, "%s refresh: %s\n", p->name, sla_ctx_message(ctx));
                    itr[mode] = (long long)inf.iterations;
                }
                sla_dist_solver_destroy(&S);
            }
            if (rank_ == 0)
                printf("%s, %d ranks: refresh keeping P %.3f s (%lld iterations after), rebuilding %.3f s (%lld)\n",
                       p->name, size_, median(tr[0], reps), itr[0], median(tr[1], reps), itr[1]);
            free(v);
        }
        sla_dist_matrix_destroy(&D);
        free(b);
        free(x);
        sla_matrix *A = NULL; /* the single process's: the whole matrix, generated here */
        if (sthreads > 0 && rank_ == 0 && sla_gen_poisson(ctx, p->dim, p->N, &A))
            fprintf(stderr, "generate %s: %s\n", p->name, sla_ctx_message(ctx));
        if (sthreads > 0 && rank_ == 0 && A) {
            double *bs = malloc((size_t)n * sizeof *bs), *xs = malloc((size_t)n * sizeof *xs);
            for (sla_int i = 0; i < n; i++) bs[i] = 1.0;
            sla_ctx_set_threads(ctx, sthreads);
            load_mark m0 = load_now();
            for (int k = 0; k < reps; k++) {
                double t0 = now(), c0 = cpu_now();
                sla_solver *S = NULL;
                sla_status st = sla_solver_create(ctx, A, &o, &S);
                double t1 = now(), c1 = cpu_now();
                memset(&inf, 0, sizeof inf);
                if (!st) st = sla_solver_solve(ctx, S, 0, 1, bs, n, xs, n, &inf);
                double t2 = now(), c2 = cpu_now();
                if (st) fprintf(stderr, "%s serial: %s\n", p->name, sla_ctx_message(ctx));
                sla_solver_destroy(&S);
                su[k] = t1 - t0;
                so[k] = t2 - t1;
                cu[k] = c1 - c0;
                co[k] = c2 - c1;
            }
            sla_ctx_set_threads(ctx, 1);
            double oth = other_load_pct(m0, load_now());
            printf("%s, n = %lld, 1 process x %d threads: set-up %.3f s (CPU %.2f s), solve %.3f s (CPU %.2f s), "
                   "%lld iterations, residual %.2e; other load %.0f %%\n",
                   p->name, (long long)n, sthreads, median(su, reps), median(cu, reps), median(so, reps),
                   median(co, reps), (long long)inf.iterations, inf.residual, oth);
            fflush(stdout);
            free(bs);
            free(xs);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        sla_matrix_destroy(&A);
    }
    free(list);
    sla_ctx_destroy(&ctx);
    MPI_Finalize();
    return 0;
}
