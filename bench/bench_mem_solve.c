/* bench_mem_solve — peak resident memory (and time) of reading a Matrix
 * Market file, and of the library path of a solve, in bytes per unknown.
 *
 *   sla_bench_mem_solve gen N [METHOD PRECOND]      2D Poisson on an N x N grid made in
 *                                                  memory, b = A 1, solved (library path)
 *   sla_bench_mem_solve solve FILE [METHOD PRECOND] FILE read with sla_mm_read, then the same
 *   sla_bench_mem_solve read FILE                   sla_mm_read only (the two-pass reader)
 *   sla_bench_mem_solve read-pipe FILE              FILE through a pipe: sla_mm_read_stream's
 *                                                  one-pass COO path (the reader before it)
 *
 * METHOD and PRECOND default to cg and saamg, as `sla solve A.mtx --method
 * cg --precond saamg` runs them. Prints one JSON line on stdout: n, nnz,
 * seconds to read or generate (wall and CPU), set up and solve, iterations, the peak
 * resident set (getrusage ru_maxrss, the process's high-water mark) in MiB
 * and per unknown. bench/mem_solve.sh runs it next to `sla solve`.
 *
 * SLA_BENCH_MMAP=1 in the environment: blocks of 1 MiB or more are
 * mmapped (mallopt, as bench_amg does), undoing the mallopt(M_MMAP_MAX, 0)
 * that libsuperlu_dist (linked through HYPRE) makes when it is loaded;
 * without it every block comes from the brk heap and freed set-up arrays
 * stay resident, so the peak also holds the heap's holes. With it the
 * peak is the memory in use (the footprint of the library itself).
 */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double peak_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* KiB on Linux */
}

/* CPU seconds of this process so far (user + system): less sensitive than
 * wall time to other jobs on a loaded machine. */
static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* The resident set now (/proc/self/statm), MiB; 0 where unreadable. */
static double rss_mib(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0.0;
    if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
    fclose(f);
    return (double)res * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

static int fail(sla_ctx *ctx, const char *what)
{
    fprintf(stderr, "bench_mem_solve: %s: %s\n", what, sla_ctx_message(ctx));
    return 1;
}

/* FILE through `cat` and a pipe: a stream that cannot be read twice. */
static sla_status read_pipe(sla_ctx *ctx, const char *path, sla_matrix **A)
{
    char cmd[4200];
    if (strchr(path, '\'') || strlen(path) > 4096) return SLA_ERR_ARGUMENT;
    snprintf(cmd, sizeof cmd, "cat '%s'", path);
    FILE *f = popen(cmd, "r");
    if (!f) return SLA_ERR_IO;
    sla_status st = sla_mm_read_stream(ctx, f, path, SLA_F64, A);
    pclose(f);
    return st;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s gen N | solve FILE [METHOD PRECOND] | read FILE | "
                        "read-pipe FILE\n", argv[0]);
        return 2;
    }
#ifdef __GLIBC__
    const char *mm = getenv("SLA_BENCH_MMAP");
    if (mm && *mm && strcmp(mm, "0") != 0) {
        mallopt(M_MMAP_MAX, 65536);
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
    }
#endif
    const char *mode = argv[1];
    const bool gen = !strcmp(mode, "gen"), solve = gen || !strcmp(mode, "solve");
    const char *method = argc > 3 ? argv[3] : "cg", *precond = argc > 4 ? argv[4] : "saamg";
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    sla_matrix *A = NULL;
    double t0 = now(), c0 = cpu_seconds();
    sla_status st;
    if (gen) st = sla_gen_poisson(ctx, 2, atoll(argv[2]), &A);
    else if (!strcmp(mode, "read-pipe")) st = read_pipe(ctx, argv[2], &A);
    else st = sla_mm_read(ctx, argv[2], SLA_F64, &A);
    if (st != SLA_OK) return fail(ctx, argv[2]);
    const double t_in = now() - t0, c_in = cpu_seconds() - c0;
    const sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double t_setup = 0.0, t_solve = 0.0, peak_in = peak_mib(), peak_setup = 0.0,
           rss_setup = 0.0;
    long long iters = -1;
    if (solve) {
        double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
        if (!b || !x) return 1;
        for (sla_int i = 0; i < n; i++) x[i] = 1.0;
        if (sla_matvec(ctx, A, 0, 1, x, n, b, n) != SLA_OK) return fail(ctx, "matvec");
        memset(x, 0, (size_t)n * sizeof *x);
        char o[256];
        snprintf(o, sizeof o, "method=%s,precond=%s", method, precond);
        sla_solver_options opts;
        sla_solver_options_default(&opts);
        if (sla_solver_options_parse(ctx, o, &opts) != SLA_OK) return fail(ctx, o);
        sla_solver *S = NULL;
        t0 = now();
        if (sla_solver_create(ctx, A, &opts, &S) != SLA_OK) return fail(ctx, "set-up");
        t_setup = now() - t0;
        peak_setup = peak_mib();
        rss_setup = rss_mib();
        sla_solve_info info;
        t0 = now();
        st = sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info);
        t_solve = now() - t0;
        if (st < 0) return fail(ctx, "solve");
        iters = (long long)info.iterations;
        sla_solver_destroy(&S);
        free(b);
        free(x);
    }
    const double peak = peak_mib();
    printf("{\"mode\":\"%s\",\"n\":%lld,\"nnz\":%lld,\"%s_s\":%.3f,\"%s_cpu_s\":%.3f,\"setup_s\":%.3f,"
           "\"solve_s\":%.3f,\"iterations\":%lld,\"peak_mib\":%.1f,\"bytes_per_unknown\":%.1f,"
           "\"peak_input_mib\":%.1f,\"peak_setup_mib\":%.1f,\"rss_after_setup_mib\":%.1f}\n",
           mode, (long long)n, (long long)nnz, gen ? "gen" : "read", t_in, gen ? "gen" : "read",
           c_in, t_setup, t_solve,
           iters, peak, n > 0 ? peak * 1048576.0 / (double)n : 0.0, peak_in, peak_setup, rss_setup);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
    return 0;
}
