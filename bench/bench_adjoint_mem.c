/* bench_adjoint_mem — peak memory of a solve and its VJP against the
 * iteration count.
 *
 *   sla_bench_adjoint_mem K [N] [THREADS]
 *
 * Builds the 2D Poisson matrix on an N x N grid (default 1000: 1e6
 * unknowns), solves A x = ones with unpreconditioned CG for exactly K
 * iterations (rtol 0, maxiter K: the solve returns SLA_NOT_CONVERGED, as
 * expected) and takes the VJP with gx = ones (gb and gA both computed).
 * The adjoint method needs O(n + nnz) extra memory whatever K is; an
 * unrolled (taped) gradient would grow with K. Run one process per K and
 * compare the peak RSS.
 *
 * Prints a human summary on stderr and one JSON line on stdout. RSS values
 * are in MiB: "after_matrix" is the resident size once the matrix exists,
 * "after_vectors" once b, x, gx, gb, gA are allocated and touched,
 * "after_create" once the solver is set up (with the peak so far), "peak"
 * is getrusage's ru_maxrss after the VJP (the high-water mark of the whole
 * process). Blocks of 1 MiB or more are mmapped (mallopt, see main), so
 * freed work arrays leave the resident set.
 */
#include <sla/gen.h>
#include <sla/solver.h>

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Current resident set in MiB (from /proc/self/statm), -1 if unknown. */
static double rss_now_mib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1.0;
    long size = 0, res = 0;
    int ok = fscanf(f, "%ld %ld", &size, &res) == 2;
    fclose(f);
    return ok ? (double)res * (double)sysconf(_SC_PAGESIZE) / 1048576.0 : -1.0;
}

/* VmHWM of /proc/self/status in MiB (the kernel's high-water mark; a
 * cross-check of ru_maxrss), -1 if unknown. */
static double hwm_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1.0;
    char line[256];
    double v = -1.0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) {
            v = atof(line + 6) / 1024.0;
            break;
        }
    fclose(f);
    return v;
}

/* Peak resident set in MiB (ru_maxrss is in KiB on Linux). */
static double rss_peak_mib(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru)) return -1.0;
    return (double)ru.ru_maxrss / 1024.0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: sla_bench_adjoint_mem K [N=1000] [THREADS=0 (OpenMP default)]\n");
        return 2;
    }
    long K = atol(argv[1]);
    long N = argc > 2 ? atol(argv[2]) : 1000;
    int nt = argc > 3 ? atoi(argv[3]) : 0;
    if (K <= 0 || N <= 0 || nt < 0) {
        fprintf(stderr, "K and N must be positive, THREADS >= 0\n");
        return 2;
    }
    /* Blocks of 1 MiB and more come from mmap and go back to the system
     * when freed, so the RSS follows what the library holds rather than
     * the heap's history. Re-enabling mmap matters: a library that sla can
     * link (libsuperlu_dist, through HYPRE) calls mallopt(M_MMAP_MAX, 0)
     * when loaded, which sends every allocation to the brk heap. */
    mallopt(M_MMAP_MAX, 65536);
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    double rss_start = rss_now_mib();

    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx)) return 1;
    sla_ctx_set_threads(ctx, nt);
    sla_matrix *A = NULL;
    sla_status st = sla_gen_poisson(ctx, 2, N, &A);
    if (st) {
        fprintf(stderr, "sla_gen_poisson: %s: %s\n", sla_status_name(st), sla_ctx_message(ctx));
        return 1;
    }
    double rss_matrix = rss_now_mib();
    long n = (long)sla_matrix_nrows(A), nnz = (long)sla_matrix_nnz(A);

    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    double *gx = malloc((size_t)n * sizeof *gx), *gb = malloc((size_t)n * sizeof *gb);
    double *gA = malloc((size_t)nnz * sizeof *gA);
    if (!b || !x || !gx || !gb || !gA) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    /* Touch every page (nonzero: malloc + zero fill could become calloc,
     * whose fresh pages stay unmapped until the library writes them). */
    for (long i = 0; i < n; i++) b[i] = gx[i] = 1.0, x[i] = gb[i] = -1.0;
    for (long k = 0; k < nnz; k++) gA[k] = -1.0;
    double rss_vectors = rss_now_mib();

    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    o.precond = SLA_PRECOND_NONE;
    o.rtol = 0.0;
    o.atol = 0.0;
    o.maxiter = K;
    sla_solver *S = NULL;
    if ((st = sla_solver_create(ctx, A, &o, &S))) {
        fprintf(stderr, "sla_solver_create: %s: %s\n", sla_status_name(st), sla_ctx_message(ctx));
        return 1;
    }
    double rss_create = rss_now_mib(), peak_create = rss_peak_mib();
    sla_solve_info fwd, adj;
    double t0 = now();
    st = sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &fwd);
    double t_solve = now() - t0;
    if (st < 0) {
        fprintf(stderr, "solve: %s: %s\n", sla_status_name(st), sla_ctx_message(ctx));
        return 1;
    }
    sla_status st_fwd = st;
    double rss_solve = rss_now_mib();
    t0 = now();
    st = sla_solver_solve_vjp(ctx, S, 0, 1, x, n, gx, n, gb, n, gA, &adj);
    double t_vjp = now() - t0;
    if (st < 0) {
        fprintf(stderr, "vjp: %s: %s\n", sla_status_name(st), sla_ctx_message(ctx));
        return 1;
    }
    double rss_vjp = rss_now_mib();
    double peak = rss_peak_mib(), hwm = hwm_mib();

    fprintf(stderr,
            "k=%ld n=%ld nnz=%ld threads=%d: RSS after matrix %.1f MiB, after vectors %.1f, "
            "after solver create %.1f (peak so far %.1f), after solve %.1f, after VJP %.1f; "
            "peak %.1f MiB (solve+VJP increment over the "
            "vectors %.1f MiB)\n"
            "  solve: %s, %lld iterations, residual %.2e, %.2f s; "
            "VJP: %s, %lld iterations, residual %.2e, %.2f s\n",
            K, n, nnz, sla_ctx_threads(ctx), rss_matrix, rss_vectors, rss_create, peak_create,
            rss_solve, rss_vjp, peak,
            peak - rss_vectors, sla_status_name(st_fwd), (long long)fwd.iterations, fwd.residual,
            t_solve, sla_status_name(st), (long long)adj.iterations, adj.residual, t_vjp);
    printf("{\"k\": %ld, \"N\": %ld, \"n\": %ld, \"nnz\": %ld, \"threads\": %d, "
           "\"rss_start_mib\": %.1f, \"rss_after_matrix_mib\": %.1f, "
           "\"rss_after_vectors_mib\": %.1f, \"rss_after_create_mib\": %.1f, "
           "\"peak_after_create_mib\": %.1f, \"rss_after_solve_mib\": %.1f, "
           "\"rss_after_vjp_mib\": %.1f, \"peak_rss_mib\": %.1f, \"vmhwm_mib\": %.1f, "
           "\"solve_status\": \"%s\", \"solve_iterations\": %lld, \"solve_residual\": %.3e, "
           "\"solve_s\": %.3f, \"vjp_status\": \"%s\", \"vjp_iterations\": %lld, "
           "\"vjp_residual\": %.3e, \"vjp_s\": %.3f}\n",
           K, N, n, nnz, sla_ctx_threads(ctx), rss_start, rss_matrix, rss_vectors, rss_create,
           peak_create, rss_solve,
           rss_vjp, peak, hwm, sla_status_name(st_fwd), (long long)fwd.iterations, fwd.residual,
           t_solve, sla_status_name(st), (long long)adj.iterations, adj.residual, t_vjp);

    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
    free(b);
    free(x);
    free(gx);
    free(gb);
    free(gA);
    sla_ctx_destroy(&ctx);
    return 0;
}
