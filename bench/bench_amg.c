/* bench_amg — the AMG preconditioners (hypre BoomerAMG, one V-cycle; sla's
 * own smoothed aggregation, precond saamg) in CG, against CG + Jacobi and
 * CHOLMOD, side by side.
 *
 *   sla_bench_amg [--problems p2d-1m,p2d-4m,p3d-1m,aniso-1m]
 *                 [--methods amg,saamg,jacobi,cholmod] [--reps 3] [--reps-slow 1] [--threads T]
 *                 [--opts "amg_relax=13,..."] [--timeout 600] [--json FILE]
 *                 [--largest N [--largest-f32] [--largest-method amg|saamg]
 *                  [--largest-bpd B] [--force]]
 *
 * Problems (b = ones, x0 = 0, rtol 1e-8): 2D Poisson with 1M and 4M
 * unknowns (N = 1000, 2000), 3D Poisson with 1M (N = 100), anisotropic
 * diffusion -(0.01 u_xx + u_yy) with 1M (N = 1000). Methods: "amg" (CG +
 * AMG with the library's defaults, changed by --opts), "saamg" (CG + sla's
 * smoothed-aggregation AMG, also changed by --opts, e.g. saamg_smoother), "jacobi" (CG +
 * Jacobi), "cholmod" (method cholesky; skipped when the factor would not
 * fit in memory: sla's memory_limit).
 *
 * Each (problem, method) runs in a child process of its own, so its peak
 * RSS (getrusage ru_maxrss: the matrix, the solver and its vectors) is its
 * own. The child solves `reps` times (`--reps-slow` for jacobi and cholmod,
 * whose runs take tens of seconds at 4M) (create = setup, solve, destroy)
 * and reports the medians; the AMG child first runs one tiny AMG solve so the
 * one-time MPI initialization is not counted in the set-up (it is reported
 * as "mpi_init_s"). "cpu set", "cpu sol": the process CPU seconds (all
 * threads, CLOCK_PROCESS_CPUTIME_ID) of the set-up and the solve, and
 * "ms/it" the solve's per iteration: on a loaded machine with --threads 1
 * the measure that other processes disturb least. The residual is sla's true ||b - A x|| / ||b||. The
 * load column is the share of the machine's CPUs other processes used
 * during the child's run (/proc/stat), to tell a noisy measurement.
 *
 * --largest N: 2D Poisson N x N with CG + AMG to rtol 1e-6, once, if the
 * memory it would need (bytes per unknown measured here on smaller grids,
 * times n) fits in MemAvailable (--force runs it anyway); --largest-f32
 * stores the matrix in float32 (values 4 bytes) to save memory, built
 * directly in float32 (borrowed row pointers and values: no float64 copy on
 * the way). The preconditioner is --largest-method (default: saamg when
 * --methods names saamg and not amg, else amg); --largest-bpd B takes the
 * bytes per unknown for the estimate from an earlier measurement (e.g. the
 * same command at a smaller N) instead of this run's 2D Poisson rows.
 */
#include <sla.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "bench_util.h"

static double mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = -1.0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024.0;
}

/* ---- problems and methods ------------------------------------------------ */

typedef struct {
    const char *name, *desc;
    int kind; /* 0 poisson2d, 1 poisson3d, 2 aniso2d */
    long N;
} problem;

static const problem problems[] = {
    {"p2d-1m", "2D Poisson 1000^2", 0, 1000},
    {"p2d-4m", "2D Poisson 2000^2", 0, 2000},
    {"p3d-1m", "3D Poisson 100^3", 1, 100},
    {"aniso-1m", "aniso 2D eps=0.01 1000^2", 2, 1000},
};
#define NPROB ((int)(sizeof problems / sizeof problems[0]))
static const char *const methods[] = {"amg", "jacobi", "cholmod", "saamg"};
#define NMETH 4
static const int method_order[NMETH] = {0, 3, 1, 2}; /* table order */

/* Whether the comma-separated list names `name` exactly. */
static int in_list(const char *list, const char *name)
{
    size_t k = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == k && !strncmp(p, name, k)) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

/* What a child reports back through its pipe. */
typedef struct {
    int status;            /* sla_status of the last call */
    char msg[200];
    long long n, nnz, iterations;
    double setup, solve, total, residual, mpi_init;
    double setup_cpu, solve_cpu; /* process CPU seconds (all threads): the loaded machine's measure */
    double rss_matrix, rss_peak; /* bytes: after building the matrix, at the end */
    int converged;
} result;

/* Arrays a borrowed float32 matrix points into (freed after it). */
static sla_int *big_rowptr;
static float *big_vals;

/* 2D Poisson N x N directly in float32, borrowing the row pointers and
 * values: the peak while building is the 64-bit column indices passed in
 * (freed at once) beside sla's 32-bit copy. */
static sla_status poisson2d_f32(sla_ctx *ctx, long N, sla_matrix **out)
{
    sla_int n = (sla_int)N * N, nnz = 5 * n - 4 * (sla_int)N;
    big_rowptr = malloc((size_t)(n + 1) * sizeof *big_rowptr);
    big_vals = malloc((size_t)nnz * sizeof *big_vals);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    if (!big_rowptr || !big_vals || !ci) {
        free(ci);
        return SLA_ERR_NOMEM;
    }
    sla_int k = 0;
    for (sla_int i = 0; i < n; i++) {
        sla_int x = i % N, y = i / N;
        big_rowptr[i] = k;
        if (y > 0) ci[k] = i - N, big_vals[k++] = -1.0f;
        if (x > 0) ci[k] = i - 1, big_vals[k++] = -1.0f;
        ci[k] = i, big_vals[k++] = 4.0f;
        if (x < N - 1) ci[k] = i + 1, big_vals[k++] = -1.0f;
        if (y < N - 1) ci[k] = i + N, big_vals[k++] = -1.0f;
    }
    big_rowptr[n] = k;
    sla_status st = sla_matrix_from_csr(ctx, n, n, big_rowptr, ci, SLA_F32, 1, big_vals,
                                        SLA_BORROW, out);
    free(ci);
    return st;
}

static sla_status make_matrix(sla_ctx *ctx, const problem *p, long N, int f32, sla_matrix **out)
{
    sla_status st;
    if (p->kind == 0 && f32) return poisson2d_f32(ctx, N, out);
    if (p->kind == 0) st = sla_gen_poisson(ctx, 2, N, out);
    else if (p->kind == 1) st = sla_gen_poisson(ctx, 3, N, out);
    else st = sla_gen_aniso2d(ctx, N, 0.01, out);
    if (st || !f32) return st;
    /* the same matrix with float32 values */
    sla_matrix *A = *out;
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    float *v = malloc((size_t)nnz * sizeof *v);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    if (!v || !ci) {
        free(v);
        free(ci);
        return SLA_ERR_NOMEM;
    }
    const double *d = sla_matrix_values(A, 0);
    for (sla_int k = 0; k < nnz; k++) v[k] = (float)d[k];
    sla_matrix_get_colind(A, ci);
    sla_matrix *B = NULL;
    st = sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(A), ci, SLA_F32, 1, v, SLA_COPY, &B);
    free(v);
    free(ci);
    sla_matrix_destroy(out);
    *out = B;
    return st;
}

/* One (problem, method) in this (child) process. */
static void run_child(const problem *p, long N, int method, int reps, int threads, const char *opts,
                      double rtol, int f32, result *r)
{
    memset(r, 0, sizeof *r);
#ifdef __GLIBC__
    /* libsuperlu_dist (brought in by HYPRE) calls mallopt(M_MMAP_MAX, 0)
     * when loaded, so every block comes from the brk heap and freed set-up
     * work arrays stay resident; mmapped large blocks (as without it) make
     * the peak RSS the memory actually in use (see bench_adjoint_mem.c). */
    mallopt(M_MMAP_MAX, 65536);
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) {
        r->status = SLA_ERR_NOMEM;
        return;
    }
    if (threads > 0) sla_ctx_set_threads(ctx, threads);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.rtol = rtol;
    if (method == 0) {
        o.method = SLA_METHOD_CG;
        o.precond = SLA_PRECOND_AMG;
        if (opts && (r->status = sla_solver_options_parse(ctx, opts, &o))) goto out;
    } else if (method == 3) {
        o.method = SLA_METHOD_CG;
        o.precond = SLA_PRECOND_SAAMG;
        if (opts && (r->status = sla_solver_options_parse(ctx, opts, &o))) goto out;
    } else if (method == 1) {
        o.method = SLA_METHOD_CG;
        o.precond = SLA_PRECOND_JACOBI;
    } else {
        o.method = SLA_METHOD_CHOLESKY;
    }
    if (method == 0) { /* MPI's one-time start-up, outside the timings */
        sla_matrix *T = NULL;
        double t0 = now(), bt[16], xt[16];
        for (int i = 0; i < 16; i++) bt[i] = 1.0;
        sla_solve_info it;
        if (!sla_gen_poisson(ctx, 2, 4, &T)) sla_solve(ctx, T, &o, bt, xt, &it);
        r->mpi_init = now() - t0;
        sla_matrix_destroy(&T);
    }
    sla_matrix *A = NULL;
    if ((r->status = make_matrix(ctx, p, N, f32, &A))) goto out;
    r->n = sla_matrix_nrows(A);
    r->nnz = sla_matrix_nnz(A);
    double *b = malloc((size_t)r->n * sizeof *b), *x = malloc((size_t)r->n * sizeof *x);
    if (!b || !x) {
        r->status = SLA_ERR_NOMEM;
        goto out_m;
    }
    for (long long i = 0; i < r->n; i++) b[i] = 1.0;
    r->rss_matrix = peak_rss_bytes();
    double su[32], so[32], to[32], cu[32], co[32];
    if (reps > 32) reps = 32;
    for (int k = 0; k < reps; k++) {
        sla_solver *S = NULL;
        sla_solve_info info;
        double c0 = cpu_now(), t0 = now();
        if ((r->status = sla_solver_create(ctx, A, &o, &S))) break;
        double c1 = cpu_now(), t1 = now();
        r->status = sla_solver_solve(ctx, S, 0, 1, b, r->n, x, r->n, &info);
        double t2 = now(), c2 = cpu_now();
        cu[k] = c1 - c0;
        co[k] = c2 - c1;
        sla_solver_destroy(&S);
        if (r->status < 0) break;
        su[k] = t1 - t0;
        so[k] = t2 - t1;
        to[k] = t2 - t0;
        r->iterations = info.iterations;
        r->residual = info.residual;
        r->converged = info.converged;
    }
    if (r->status >= 0) {
        r->setup = median(su, reps);
        r->solve = median(so, reps);
        r->total = median(to, reps);
        r->setup_cpu = median(cu, reps);
        r->solve_cpu = median(co, reps);
    }
out_m:
    free(b);
    free(x);
    sla_matrix_destroy(&A);
    free(big_rowptr);
    free(big_vals);
out:
    if (r->status < 0) snprintf(r->msg, sizeof r->msg, "%s", sla_ctx_message(ctx));
    r->rss_peak = peak_rss_bytes();
    sla_ctx_destroy(&ctx);
}

/* Fork, run, collect. Returns 0, or -1 when the child died (msg says why). */
static int run_forked(const problem *p, long N, int method, int reps, int threads,
                      const char *opts, double rtol, int f32, int timeout, result *r,
                      double *load)
{
    int fd[2];
    if (pipe(fd)) return -1;
    fflush(stdout);
    load_mark a = load_now();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        close(fd[0]);
        if (timeout > 0) alarm((unsigned)timeout);
        result res;
        run_child(p, N, method, reps, threads, opts, rtol, f32, &res);
        ssize_t w = write(fd[1], &res, sizeof res);
        _exit(w == (ssize_t)sizeof res ? 0 : 1);
    }
    close(fd[1]);
    memset(r, 0, sizeof *r);
    ssize_t got = 0;
    while (got < (ssize_t)sizeof *r) {
        ssize_t k = read(fd[0], (char *)r + got, sizeof *r - (size_t)got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += k;
    }
    close(fd[0]);
    int ws = 0;
    waitpid(pid, &ws, 0);
    *load = other_load_pct(a, load_now());
    if (got != (ssize_t)sizeof *r) {
        r->status = SLA_ERR_CALLBACK;
        if (WIFSIGNALED(ws) && WTERMSIG(ws) == SIGALRM)
            snprintf(r->msg, sizeof r->msg, "timed out after %d s", timeout);
        else if (WIFSIGNALED(ws))
            snprintf(r->msg, sizeof r->msg, "killed by signal %d (out of memory?)", WTERMSIG(ws));
        else snprintf(r->msg, sizeof r->msg, "child failed");
        return -1;
    }
    return 0;
}

/* ---- output -------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc((unsigned char)*s < 32 ? ' ' : *s, f);
    }
    fputc('"', f);
}

static void print_row(const char *prob, const char *meth, const result *r, double load)
{
    if (r->status < 0) {
        printf("%-26s %-8s skipped: %.90s\n", prob, meth, r->msg);
        return;
    }
    printf("%-26s %-8s %9lld %8.3f %8.3f %8.3f %6lld %9.2e %8.2f %7.0f %5.0f%% %8.3f %8.3f %7.2f%s\n",
           prob, meth, r->n, r->setup, r->solve, r->total, r->iterations, r->residual,
           r->rss_peak / 1e9, r->rss_peak / (double)r->n, load, r->setup_cpu, r->solve_cpu,
           r->iterations > 0 ? 1e3 * r->solve_cpu / (double)r->iterations : 0.0,
           r->converged ? "" : "  NOT CONVERGED");
}

static void json_row(FILE *f, int first, const char *prob, const char *meth, const result *r,
                     double load, int reps, double rtol, const char *opts)
{
    fprintf(f, "%s\n  {\"problem\":", first ? "" : ",");
    json_str(f, prob);
    fprintf(f, ",\"method\":");
    json_str(f, meth);
    fprintf(f, ",\"opts\":");
    json_str(f, opts ? opts : "");
    fprintf(f, ",\"status\":");
    json_str(f, sla_status_name((sla_status)r->status));
    if (r->status < 0) {
        fprintf(f, ",\"message\":");
        json_str(f, r->msg);
    } else {
        fprintf(f,
                ",\"n\":%lld,\"nnz\":%lld,\"rtol\":%g,\"reps\":%d,\"setup_s\":%.4f,"
                "\"solve_s\":%.4f,\"total_s\":%.4f,\"iterations\":%lld,\"residual\":%.3e,"
                "\"converged\":%s,\"peak_rss_bytes\":%.0f,\"matrix_rss_bytes\":%.0f,"
                "\"bytes_per_dof\":%.1f,\"mpi_init_s\":%.3f,\"setup_cpu_s\":%.4f,\"solve_cpu_s\":%.4f",
                r->n, r->nnz, rtol, reps, r->setup, r->solve, r->total, r->iterations,
                r->residual, r->converged ? "true" : "false", r->rss_peak, r->rss_matrix,
                r->rss_peak / (double)r->n, r->mpi_init, r->setup_cpu, r->solve_cpu);
    }
    fprintf(f, ",\"other_load_pct\":%.1f}", load);
}

int main(int argc, char **argv)
{
    const char *plist = "p2d-1m,p2d-4m,p3d-1m,aniso-1m", *mlist = "amg,saamg,jacobi,cholmod";
    const char *lmethod = NULL;
    double lbpd = 0.0;
    const char *opts = NULL, *json = "bench/out/amg.json";
    int reps = 3, reps_slow = 1, threads = 0, timeout = 600, f32 = 0, force = 0;
    long largest = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--largest-f32")) f32 = 1;
        else if (!strcmp(a, "--force")) force = 1;
        else if (!v) {
            fprintf(stderr, "usage: see the comment at the top of bench/bench_amg.c\n");
            return 2;
        } else if (!strcmp(a, "--problems")) plist = argv[++i];
        else if (!strcmp(a, "--methods")) mlist = argv[++i];
        else if (!strcmp(a, "--reps")) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--reps-slow")) reps_slow = atoi(argv[++i]);
        else if (!strcmp(a, "--threads")) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--opts")) opts = argv[++i];
        else if (!strcmp(a, "--timeout")) timeout = atoi(argv[++i]);
        else if (!strcmp(a, "--json")) json = argv[++i];
        else if (!strcmp(a, "--largest")) largest = atol(argv[++i]);
        else if (!strcmp(a, "--largest-method")) lmethod = argv[++i];
        else if (!strcmp(a, "--largest-bpd")) lbpd = atof(argv[++i]);
        else {
            fprintf(stderr, "sla_bench_amg: unknown option %s\n", a);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (reps_slow < 1) reps_slow = 1;
    FILE *jf = fopen(json, "w");
    if (!jf) fprintf(stderr, "sla_bench_amg: cannot write %s (continuing)\n", json);
    if (jf) fprintf(jf, "[");
    int first = 1;
    double bpd[NMETH] = {0}; /* largest bytes per unknown measured on 2D Poisson, per method */
    printf("rtol 1e-8, b = ones, medians of %d (amg, saamg) and %d (jacobi, cholmod) runs; times in s; "
           "peak RSS of the whole process\n",
           reps, reps_slow);
    printf("%-26s %-8s %9s %8s %8s %8s %6s %9s %8s %7s %6s %8s %8s %7s\n", "problem", "method", "n",
           "setup", "solve", "total", "iters", "residual", "peak GB", "B/DOF", "load", "cpu set",
           "cpu sol", "ms/it");
    for (int pi = 0; pi < NPROB; pi++) {
        if (!strstr(plist, problems[pi].name)) continue;
        for (int mo = 0; mo < NMETH; mo++) {
            int mi = method_order[mo];
            if (!in_list(mlist, methods[mi])) continue;
            result r;
            double load = -1.0;
            int k = (mi == 0 || mi == 3) ? reps : reps_slow;
            run_forked(&problems[pi], problems[pi].N, mi, k, threads, opts, 1e-8, 0, timeout, &r,
                       &load);
            print_row(problems[pi].desc, methods[mi], &r, load);
            if (r.status >= 0 && problems[pi].kind == 0)
                bpd[mi] = fmax(bpd[mi], r.rss_peak / (double)r.n);
            if (mi == 0 && r.status >= 0 && r.mpi_init > 0.0 && first)
                printf("  (MPI initialization on first AMG use, not in the set-up: %.3f s)\n",
                       r.mpi_init);
            if (jf) json_row(jf, first, problems[pi].name, methods[mi], &r, load, k, 1e-8, opts);
            first = 0;
        }
    }
    if (largest > 0) {
        problem big = {"p2d-largest", "2D Poisson (largest)", 0, largest};
        int lm = 0;
        if (lmethod) lm = !strcmp(lmethod, "saamg") ? 3 : 0;
        else if (in_list(mlist, "saamg") && !in_list(mlist, "amg")) lm = 3;
        double n = (double)largest * (double)largest;
        double per = lbpd > 0.0 ? lbpd : bpd[lm] > 0.0 ? bpd[lm] * (f32 ? 0.9 : 1.0) : 330.0;
        double need = per * n;
        double avail = mem_available();
        printf("\nlargest: 2D Poisson N = %ld (n = %.3g), CG + %s, rtol 1e-6, %s values: needs "
               "about %.1f GB (%.0f B/DOF%s), %.1f GB available\n",
               largest, n, methods[lm], f32 ? "float32" : "float64", need / 1e9, need / n,
               lbpd > 0.0 ? ", given" : bpd[lm] > 0.0 ? ", measured above" : ", default guess",
               avail / 1e9);
        if (need > 0.92 * avail && !force) {
            long fit = (long)sqrt(0.92 * avail / (need / n));
            printf("  not run: it would not fit (the largest N that would is about %ld, n = "
                   "%.3g; --force runs it anyway)\n",
                   fit, (double)fit * (double)fit);
        } else {
            result r;
            double load = -1.0;
            run_forked(&big, largest, lm, 1, threads, opts, 1e-6, f32, timeout, &r, &load);
            print_row(big.desc, methods[lm], &r, load);
            if (r.status >= 0)
                printf("  matrix built: peak RSS %.2f GB (%.0f B/DOF) before the solver\n",
                       r.rss_matrix / 1e9, r.rss_matrix / n);
            if (jf) json_row(jf, first, "p2d-largest", methods[lm], &r, load, 1, 1e-6, opts);
            first = 0;
        }
    }
    if (jf) {
        fprintf(jf, "\n]\n");
        fclose(jf);
    }
    return 0;
}
