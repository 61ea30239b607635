/* bench_direct — direct solvers against Krylov, factorization reuse, batches
 * and SciPy's spsolve, all in one run.
 *
 *   sla_bench_direct [--parts sweep,scipy,batch,reuse] [--threads 2]
 *                    [--problems poisson2d,poisson3d,convdiff2d]
 *                    [--sizes2d 32,100,178,316,562,1000,2000]
 *                    [--sizes3d 10,16,22,32,46,68,100,159]
 *                    [--sizescd 32,100,178,316,562,1000,2000]
 *                    [--only auto,cholesky,...] [--max-run 25] [--stop-after 15]
 *                    [--mem-gb 8] [--convdiff-b 10] [--scipy-sizes 316,1000]
 *                    [--batch 1000] [--batch-N 50] [--reuse-sizes 316,1000]
 *                    [--quiet-wait 10] [--quiet-budget 60] [--quiet-pct 15]
 *                    [--python /usr/bin/python3]
 *                    [--scipy-script bench/scipy_direct.py] [--tmp /tmp]
 *                    [--json bench/out/direct.json]
 *
 * Run it from the repository root (the default paths are relative to it).
 * The machine is shared: before each measurement the benchmark waits (up to
 * --quiet-wait s, --quiet-budget s in all) for other processes to use less
 * than --quiet-pct % of the CPUs, and a short point measured while others
 * used more than a quarter of the machine is measured again; the quieter
 * result is kept. Every row records the load seen.
 *
 * Parts (each prints a markdown table on stdout; progress goes to stderr):
 *
 * sweep   Time to solution (sla_solver_create = analysis + factorization or
 *         preconditioner set-up, plus one sla_solver_solve; matrix generation
 *         excluded) for 2D Poisson (N^2), 3D Poisson (N^3) and upwind
 *         convection-diffusion (N^2, bx = by = 10), b = ones, rtol 1e-8, with
 *         every direct backend, method=auto and the Krylov alternatives
 *         (CG+IC(0), and plain CG as auto's own Krylov choice, for the SPD
 *         problems; GMRES(30)+ILU(0), BiCGStab+ILU(0) and plain GMRES for
 *         convection-diffusion). Median of up to 9 repetitions (fewer for
 *         slow runs). A configuration is not run at a size when it took more
 *         than --stop-after seconds at the previous size, when the
 *         extrapolation from the previous size (time ~ n^1.25 for 2D direct,
 *         n^2 for 3D direct, n^1.5 for 2D and n^1.34 for 3D Krylov) exceeds
 *         --max-run, or when a direct
 *         factorization would exceed --mem-gb (opts.memory_limit). Krylov
 *         solves are stopped by a monitor after --max-run seconds. For
 *         method=auto the choice (info.method, info.note) is recorded, and
 *         the flop count of the symbolic analysis is read from the note; for
 *         cholesky the refactorization time (sla_solver_refresh) is also
 *         measured, which gives CHOLMOD's effective flop rate.
 * scipy   2D Poisson at --scipy-sizes: sla auto and cholesky, then
 *         bench/scipy_direct.py (SciPy spsolve on the CSC matrix, default
 *         options) in the same run.
 * batch   --batch systems of 2D diffusion on an --batch-N grid with random
 *         kappa per system, one pattern: sla_solver_create + solve_batch +
 *         solve_batch_vjp (gx = ones) with 1 and 2 threads, method auto and
 *         cholesky; then the SciPy loop (spsolve, spsolve with A.T, gradient
 *         on the pattern with numpy) on the same values, which also checks
 *         sla's x and gradient against its own.
 * reuse   2D diffusion with random kappa at --reuse-sizes, CHOLMOD:
 *         fresh sla_solver_create vs sla_solver_refresh after new values,
 *         forward solve vs VJP (gx = ones, gb and gA).
 */
#include <sla/gen.h>
#include <sla/solver.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAXV 32

#include "bench_util.h"

static double loadavg1(void)
{
    double l = -1.0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1.0;
        fclose(f);
    }
    return l;
}

/* Busy share of all CPUs (percent) over `span` seconds, this process
 * included (call it while idle). */
static double busy_pct(double span)
{
    load_mark a = load_now();
    struct timespec ts = {(time_t)span, (long)((span - (double)(time_t)span) * 1e9)};
    nanosleep(&ts, NULL);
    load_mark b = load_now();
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (b.busy <= 0 || ncpu <= 0) return 0.0;
    return 100.0 * (b.busy - a.busy) / ((b.wall - a.wall) * (double)ncpu);
}

static double wait_quiet(void);

/* ---- small helpers ------------------------------------------------------ */

static int parse_list(const char *s, long *out, int max)
{
    int k = 0;
    while (*s && k < max) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v <= 0) return -1;
        out[k++] = v;
        s = end;
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return k;
}

static bool in_list(const char *list, const char *name)
{
    if (!list) return true;
    size_t len = strlen(name);
    const char *p = list;
    while ((p = strstr(p, name))) {
        bool start = p == list || p[-1] == ',';
        bool end = p[len] == '\0' || p[len] == ',';
        if (start && end) return true;
        p += len;
    }
    return false;
}

/* The number before " flops" in an auto note ("... 1.23e+09 flops ..."). */
static double note_flops(const char *note)
{
    const char *p = strstr(note, " flops");
    if (!p) return 0.0;
    const char *q = p;
    while (q > note && q[-1] != '(' && q[-1] != ' ') q--;
    return strtod(q, NULL);
}

/* A number field of a one-line JSON object ("key": value). */
static double json_num(const char *line, const char *key)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p) return NAN;
    return strtod(p + strlen(pat), NULL);
}

/* JSON string escaping (notes hold plain ASCII; quotes/backslashes only). */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc((unsigned char)*s >= 32 ? *s : ' ', f);
    }
    fputc('"', f);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static double urand(void) /* uniform in [0, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- options ------------------------------------------------------------ */

static struct {
    const char *parts, *only, *json, *python, *script, *tmp;
    long sizes2d[MAXV], sizes3d[MAXV], sizescd[MAXV], scipy_sizes[MAXV], reuse_sizes[MAXV];
    int n2d, n3d, ncd, nscipy, nreuse;
    int threads;
    double max_run, stop_after, mem_gb, conv_b;
    double quiet_wait, quiet_budget, quiet_pct, waited;
    long batch, batch_N;
} G = {
    .parts = "sweep,scipy,batch,reuse",
    .only = NULL,
    .json = "bench/out/direct.json",
    .python = "/usr/bin/python3",
    .script = "bench/scipy_direct.py",
    .tmp = "/tmp",
    .sizes2d = {32, 100, 178, 316, 562, 1000, 2000},
    .n2d = 7,
    .sizes3d = {10, 16, 22, 32, 46, 68, 100, 159},
    .n3d = 8,
    .sizescd = {32, 100, 178, 316, 562, 1000, 2000},
    .ncd = 7,
    .scipy_sizes = {316, 1000},
    .nscipy = 2,
    .reuse_sizes = {316, 1000},
    .nreuse = 2,
    .threads = 2,
    .max_run = 25.0,
    .stop_after = 15.0,
    .mem_gb = 8.0,
    .conv_b = 10.0,
    .quiet_wait = 10.0,
    .quiet_budget = 60.0,
    .quiet_pct = 15.0,
    .batch = 1000,
    .batch_N = 50,
};

/* The machine is shared: before a measurement, wait (up to --quiet-wait
 * seconds, --quiet-budget in all) until other processes use less than
 * --quiet-pct of the CPUs. Returns the busy share seen last. */
static double wait_quiet(void)
{
    if (G.quiet_wait <= 0) return -1.0;
    double t0 = now(), pct = busy_pct(0.25);
    while (pct > G.quiet_pct && now() - t0 < G.quiet_wait && G.waited + (now() - t0) < G.quiet_budget)
        pct = busy_pct(0.5);
    G.waited += now() - t0;
    return pct;
}

/* ---- the sweep ---------------------------------------------------------- */

typedef struct {
    const char *name;
    sla_method method;
    sla_precond_kind pc;
} variant;

static const variant V_SPD[] = {
    {"auto", SLA_METHOD_AUTO, SLA_PRECOND_NONE},
    {"cholesky", SLA_METHOD_CHOLESKY, SLA_PRECOND_NONE},
    {"ldlt", SLA_METHOD_LDLT, SLA_PRECOND_NONE},
    {"umfpack", SLA_METHOD_UMFPACK, SLA_PRECOND_NONE},
    {"klu", SLA_METHOD_KLU, SLA_PRECOND_NONE},
    {"superlu", SLA_METHOD_SUPERLU, SLA_PRECOND_NONE},
    {"cg+ic0", SLA_METHOD_CG, SLA_PRECOND_IC0},
    {"cg", SLA_METHOD_CG, SLA_PRECOND_NONE},
};
static const variant V_UNS[] = {
    {"auto", SLA_METHOD_AUTO, SLA_PRECOND_NONE},
    {"umfpack", SLA_METHOD_UMFPACK, SLA_PRECOND_NONE},
    {"klu", SLA_METHOD_KLU, SLA_PRECOND_NONE},
    {"superlu", SLA_METHOD_SUPERLU, SLA_PRECOND_NONE},
    {"gmres+ilu0", SLA_METHOD_GMRES, SLA_PRECOND_ILU0},
    {"bicgstab+ilu0", SLA_METHOD_BICGSTAB, SLA_PRECOND_ILU0},
    {"gmres", SLA_METHOD_GMRES, SLA_PRECOND_NONE},
};
#define NV_SPD ((int)(sizeof V_SPD / sizeof V_SPD[0]))
#define NV_UNS ((int)(sizeof V_UNS / sizeof V_UNS[0]))

typedef struct {
    const char *name; /* "poisson2d", "poisson3d", "convdiff2d" */
    int dim;
    bool spd;
    const long *sizes;
    int nsizes;
} problem;

typedef enum { RS_OK = 0, RS_SKIPPED, RS_FAILED, RS_TIMEOUT } rstate;

typedef struct {
    const char *problem, *variant;
    long N, n, nnz;
    rstate state;
    char why[200];
    int reps;
    double total_s, setup_s, solve_s, min_total_s;
    double residual;
    long iterations;
    bool converged;
    char method[16], backend[16], precond[16], ordering[16], note[256];
    double factor_nnz;
    double flops;      /* auto: from the note */
    double refactor_s; /* cholesky: sla_solver_refresh, factorization only */
    double loadavg, other_pct, busy_before;
    int tries;
} rec;

static rec *recs;
static int nrecs, caprecs;

static rec *new_rec(void)
{
    if (nrecs == caprecs) {
        caprecs = caprecs ? 2 * caprecs : 256;
        recs = realloc(recs, (size_t)caprecs * sizeof *recs);
        if (!recs) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
    }
    rec *r = &recs[nrecs++];
    memset(r, 0, sizeof *r);
    return r;
}

typedef struct {
    double deadline;
} tmon;

static int time_monitor(void *user, sla_int it, double rel)
{
    (void)it;
    (void)rel;
    return now() > ((tmon *)user)->deadline;
}

static void opts_for(sla_solver_options *o, const variant *v, tmon *mon)
{
    sla_solver_options_default(o);
    o->method = v->method;
    o->precond = v->pc;
    o->rtol = 1e-8;
    o->restart = 30;
    o->memory_limit = G.mem_gb * 1e9;
    o->monitor = time_monitor;
    o->monitor_user = mon;
    o->monitor_every = 5;
    o->auto_solves = 1; /* the sweep times one forward solve; the batch sets 2 */
}

/* One time to solution: create + solve (destroy untimed). */
static sla_status one_run(sla_ctx *ctx, const sla_matrix *A, const variant *v, const double *b,
                          double *x, rec *R, double *t_setup, double *t_solve, bool refactor)
{
    sla_int n = sla_matrix_nrows(A);
    sla_solver_options o;
    tmon mon;
    opts_for(&o, v, &mon);
    sla_solver *S = NULL;
    sla_solve_info info;
    mon.deadline = now() + G.max_run;
    double t0 = now();
    sla_status st = sla_solver_create(ctx, A, &o, &S);
    double t1 = now();
    if (st) {
        snprintf(R->why, sizeof R->why, "%s: %.170s", sla_status_name(st), sla_ctx_message(ctx));
        return st;
    }
    mon.deadline = now() + G.max_run;
    st = sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info);
    double t2 = now();
    *t_setup = t1 - t0;
    *t_solve = t2 - t1;
    R->residual = info.residual;
    R->iterations = (long)info.iterations;
    R->converged = info.converged;
    snprintf(R->method, sizeof R->method, "%s", info.method);
    snprintf(R->backend, sizeof R->backend, "%s", info.backend);
    snprintf(R->precond, sizeof R->precond, "%s", info.precond);
    snprintf(R->ordering, sizeof R->ordering, "%s", info.ordering);
    snprintf(R->note, sizeof R->note, "%s", info.note);
    R->factor_nnz = info.factor_nnz;
    if (v->method == SLA_METHOD_AUTO) R->flops = note_flops(info.note);
    if (st < 0) {
        snprintf(R->why, sizeof R->why, "solve %s: %.170s", sla_status_name(st), sla_ctx_message(ctx));
    } else if (st == SLA_NOT_CONVERGED) {
        snprintf(R->why, sizeof R->why, "%s after %ld iterations, residual %.2e",
                 info.reason == SLA_DIVERGED_USER ? "stopped at the time limit"
                                                  : sla_reason_name(info.reason),
                 R->iterations, info.residual);
    }
    if (st == SLA_OK && refactor) {
        double t3 = now();
        if (sla_solver_refresh(ctx, S) == SLA_OK) R->refactor_s = now() - t3;
    }
    sla_solver_destroy(&S);
    if (st == SLA_NOT_CONVERGED && info.reason == SLA_DIVERGED_USER) return SLA_NOT_CONVERGED;
    return st;
}

static int reps_for(double t)
{
    if (t < 0.05) return 9;
    if (t < 0.5) return 5;
    if (t < 3.0) return 3;
    return 1;
}

static void run_case_once(sla_ctx *ctx, const sla_matrix *A, const variant *v, const double *b,
                          double *x, rec *R)
{
    double ts[16], tset[16], tsol[16];
    R->loadavg = loadavg1();
    load_mark l0 = load_now();
    bool refactor = v->method == SLA_METHOD_CHOLESKY;
    sla_status st = one_run(ctx, A, v, b, x, R, &tset[0], &tsol[0], refactor);
    if (st < 0) {
        R->state = RS_FAILED;
        return;
    }
    if (st == SLA_NOT_CONVERGED) {
        R->state = R->iterations > 0 && strstr(R->why, "time limit") ? RS_TIMEOUT : RS_FAILED;
        R->total_s = tset[0] + tsol[0];
        R->setup_s = tset[0];
        R->solve_s = tsol[0];
        R->reps = 1;
        R->other_pct = other_load_pct(l0, load_now());
        return;
    }
    ts[0] = tset[0] + tsol[0];
    int reps = reps_for(ts[0]);
    double refs[16];
    int nref = 0;
    if (R->refactor_s > 0) refs[nref++] = R->refactor_s;
    for (int r = 1; r < reps; r++) {
        rec tmp = *R;
        tmp.refactor_s = 0;
        if (one_run(ctx, A, v, b, x, &tmp, &tset[r], &tsol[r], refactor) != SLA_OK) {
            reps = r;
            break;
        }
        if (tmp.refactor_s > 0) refs[nref++] = tmp.refactor_s;
        ts[r] = tset[r] + tsol[r];
    }
    R->other_pct = other_load_pct(l0, load_now());
    R->reps = reps;
    R->total_s = median(ts, reps);
    R->setup_s = median(tset, reps);
    R->solve_s = median(tsol, reps);
    double mn = ts[0];
    for (int r = 1; r < reps; r++) mn = fmin(mn, ts[r]);
    R->min_total_s = mn;
    if (nref) R->refactor_s = median(refs, nref);
    R->state = RS_OK;
}

/* Measure after waiting for quiet; a point measured while other processes
 * used more than a quarter of the machine is measured again (when that is
 * cheap) and the quieter of the two is kept. */
static void run_case(sla_ctx *ctx, const sla_matrix *A, const variant *v, const double *b,
                     double *x, rec *R)
{
    rec save = *R;
    R->busy_before = wait_quiet();
    run_case_once(ctx, A, v, b, x, R);
    R->tries = 1;
    if (R->state == RS_OK && R->other_pct > 25.0 && R->total_s * R->reps < 8.0) {
        rec R2 = save;
        R2.busy_before = wait_quiet();
        run_case_once(ctx, A, v, b, x, &R2);
        R2.tries = 2;
        if (R2.state == RS_OK && R2.other_pct < R->other_pct) *R = R2;
        else R->tries = 2;
    }
}

static sla_status gen_problem(sla_ctx *ctx, const problem *P, long N, sla_matrix **A)
{
    if (!strcmp(P->name, "convdiff2d")) return sla_gen_convdiff2d(ctx, N, G.conv_b, G.conv_b, A);
    return sla_gen_poisson(ctx, P->dim, N, A);
}

static bool is_direct_variant(const variant *v)
{
    return v->method >= SLA_METHOD_CHOLESKY && v->method <= SLA_METHOD_SUPERLU;
}

static void sweep_problem(sla_ctx *ctx, const problem *P)
{
    const variant *V = P->spd ? V_SPD : V_UNS;
    int nv = P->spd ? NV_SPD : NV_UNS;
    double last_t[MAXV], last_n[MAXV];
    bool stopped[MAXV];
    char stop_why[MAXV][120];
    for (int i = 0; i < nv; i++) last_t[i] = last_n[i] = 0, stopped[i] = false, stop_why[i][0] = 0;

    for (int s = 0; s < P->nsizes; s++) {
        long N = P->sizes[s];
        sla_matrix *A = NULL;
        sla_status st = gen_problem(ctx, P, N, &A);
        if (st) {
            fprintf(stderr, "%s N=%ld: %s: %s\n", P->name, N, sla_status_name(st), sla_ctx_message(ctx));
            continue;
        }
        long n = (long)sla_matrix_nrows(A), nnz = (long)sla_matrix_nnz(A);
        double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
        for (long i = 0; i < n; i++) b[i] = 1.0;
        for (int iv = 0; iv < nv; iv++) {
            const variant *v = &V[iv];
            if (!in_list(G.only, v->name)) continue;
            rec *R = new_rec();
            R->problem = P->name;
            R->variant = v->name;
            R->N = N;
            R->n = n;
            R->nnz = nnz;
            if (!sla_method_available(v->method)) {
                R->state = RS_SKIPPED;
                snprintf(R->why, sizeof R->why, "not in this build");
                continue;
            }
            /* growth of time with n used to predict the next size: direct
             * 2D ~ n^1.25 (measured 1e6 -> 4e6), 3D ~ n^2; Krylov 2D ~ n^1.5,
             * 3D ~ n^1.34 */
            double expo = is_direct_variant(v) ? (P->dim == 3 ? 2.0 : 1.25) : (P->dim == 3 ? 1.34 : 1.5);
            if (!stopped[iv] && last_t[iv] > 0) {
                double pred = last_t[iv] * pow((double)n / last_n[iv], expo);
                if (last_t[iv] > G.stop_after) {
                    stopped[iv] = true;
                    snprintf(stop_why[iv], sizeof stop_why[iv], "%.3g s at n = %.0f (> %.0f s)",
                             last_t[iv], last_n[iv], G.stop_after);
                } else if (pred > G.max_run) {
                    stopped[iv] = true;
                    snprintf(stop_why[iv], sizeof stop_why[iv],
                             "predicted %.0f s from %.3g s at n = %.0f", pred, last_t[iv],
                             last_n[iv]);
                }
            }
            if (stopped[iv]) {
                R->state = RS_SKIPPED;
                snprintf(R->why, sizeof R->why, "%.120s", stop_why[iv]);
                fprintf(stderr, "  %-10s n=%-8ld %-14s skipped (%s)\n", P->name, n, v->name, R->why);
                continue;
            }
            run_case(ctx, A, v, b, x, R);
            fprintf(stderr, "  %-10s n=%-8ld %-14s %s %8.4f s (setup %.4f, solve %.4f, %d reps) "
                            "%s%s%s its=%ld res=%.1e loadavg %.2f busy-before %.0f%% other %.0f%% "
                            "tries %d %s%s\n",
                    P->name, n, v->name,
                    R->state == RS_OK ? "ok  " : R->state == RS_TIMEOUT ? "t/o " : "FAIL",
                    R->total_s, R->setup_s, R->solve_s, R->reps, R->method,
                    R->precond[0] && strcmp(R->precond, "none") ? "+" : "",
                    R->precond[0] && strcmp(R->precond, "none") ? R->precond : "", R->iterations,
                    R->residual, R->loadavg, R->busy_before, R->other_pct, R->tries, R->note,
                    R->why[0] ? R->why : "");
            if (R->state == RS_OK) {
                last_t[iv] = R->total_s;
                last_n[iv] = (double)n;
            } else {
                stopped[iv] = true;
                snprintf(stop_why[iv], sizeof stop_why[iv], "%s at n = %ld",
                         R->state == RS_TIMEOUT ? "time limit" : "failed", n);
            }
        }
        free(b);
        free(x);
        sla_matrix_destroy(&A);
    }
}

static const rec *find_rec(const char *problem, const char *variant, long N)
{
    for (int i = 0; i < nrecs; i++)
        if (!strcmp(recs[i].problem, problem) && !strcmp(recs[i].variant, variant) &&
            recs[i].N == N)
            return &recs[i];
    return NULL;
}

static void print_sweep_table(const problem *P)
{
    const variant *V = P->spd ? V_SPD : V_UNS;
    int nv = P->spd ? NV_SPD : NV_UNS;
    printf("\n### %s: time to solution (s), %d thread%s\n\n", P->name, G.threads,
           G.threads > 1 ? "s" : "");
    printf("| n |");
    for (int iv = 0; iv < nv; iv++)
        if (in_list(G.only, V[iv].name)) printf(" %s |", V[iv].name);
    printf(" best | auto / best | auto chose | load |\n|---|");
    for (int iv = 0; iv < nv; iv++)
        if (in_list(G.only, V[iv].name)) printf("---|");
    printf("---|---|---|---|\n");
    for (int s = 0; s < P->nsizes; s++) {
        long N = P->sizes[s];
        const rec *a = find_rec(P->name, "auto", N);
        const rec *any = NULL;
        for (int iv = 0; iv < nv && !any; iv++) any = find_rec(P->name, V[iv].name, N);
        if (!any) continue;
        printf("| %ld |", any->n);
        double best = INFINITY;
        const char *bestname = "-";
        double maxload = 0;
        for (int iv = 0; iv < nv; iv++) {
            if (!in_list(G.only, V[iv].name)) continue;
            const rec *r = find_rec(P->name, V[iv].name, N);
            if (!r || r->state == RS_SKIPPED) {
                printf(" skip |");
                continue;
            }
            maxload = fmax(maxload, r->other_pct);
            if (r->state == RS_FAILED) {
                printf(" %s |", strstr(r->why, "NOMEM") ? "no fit" : "fail");
                continue;
            }
            if (r->state == RS_TIMEOUT) {
                printf(" >%.0f |", r->total_s);
                continue;
            }
            printf(" %.3g |", r->total_s);
            /* "best backend": every explicit method, not auto itself */
            if (strcmp(V[iv].name, "auto") && r->total_s < best) {
                best = r->total_s;
                bestname = V[iv].name;
            }
        }
        if (a && a->state == RS_OK && isfinite(best))
            printf(" %s | %.2f | %s%s%s | %.0f%% |\n", bestname, a->total_s / best, a->method,
                   strcmp(a->precond, "none") && a->precond[0] ? "+" : "",
                   strcmp(a->precond, "none") && a->precond[0] ? a->precond : "", maxload);
        else
            printf(" %s | - | %s | %.0f%% |\n", bestname, a ? a->method : "-", maxload);
    }
    /* auto's notes and the direct analysis */
    printf("\n%s: what auto chose, and CHOLMOD/UMFPACK analysis\n\n", P->name);
    printf("| n | auto note | flops (analysis) | factor nnz | %s |\n|---|---|---|---|---|\n",
           P->spd ? "cholesky set-up / refactor s, GF/s (flops / refactor)" : "umfpack set-up s, GF/s (flops / set-up)");
    for (int s = 0; s < P->nsizes; s++) {
        long N = P->sizes[s];
        const rec *a = find_rec(P->name, "auto", N);
        if (!a) continue;
        const rec *c = find_rec(P->name, P->spd ? "cholesky" : "umfpack", N);
        printf("| %ld | %s | %.3g | %.3g |", a->n, a->note[0] ? a->note : a->why, a->flops,
               c && c->state == RS_OK ? c->factor_nnz : a->factor_nnz);
        if (c && c->state == RS_OK) {
            if (P->spd && c->refactor_s > 0)
                printf(" %.3g / %.3g, %.2f |\n", c->setup_s, c->refactor_s,
                       a->flops / c->refactor_s / 1e9);
            else
                printf(" %.3g, %.2f |\n", c->setup_s, a->flops / c->setup_s / 1e9);
        } else {
            printf(" - |\n");
        }
    }
}

/* ---- python ------------------------------------------------------------- */

/* Run a command, keep the lines that start with '{' (JSON objects). */
static int run_python(const char *cmd, char lines[][2048], int maxlines)
{
    fprintf(stderr, "  $ %s\n", cmd);
    fflush(stderr);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    int k = 0;
    char buf[4096];
    while (fgets(buf, sizeof buf, p)) {
        if (buf[0] == '{' && k < maxlines) {
            buf[strcspn(buf, "\n")] = 0;
            snprintf(lines[k++], 2048, "%.2040s", buf);
        }
        fputs(buf, stderr);
    }
    int rc = pclose(p);
    return rc == 0 ? k : -1;
}

static char scipy_lines[MAXV][2048];
static int nscipy_lines;
static char batch_line[2][2048];
static int nbatch_lines;

typedef struct {
    long N, n;
    double auto_s, auto_setup, auto_solve, chol_s, chol_setup, chol_solve, load;
    char auto_method[16];
} scipy_cmp;
static scipy_cmp scmp[MAXV];

static void part_scipy(sla_ctx *ctx)
{
    printf("\n## SciPy spsolve vs sla, 2D Poisson, b = ones\n\n");
    char sizes[256] = "";
    for (int i = 0; i < G.nscipy; i++) {
        long N = G.scipy_sizes[i];
        snprintf(sizes + strlen(sizes), sizeof sizes - strlen(sizes), "%s%ld", i ? "," : "", N);
        sla_matrix *A = NULL;
        if (sla_gen_poisson(ctx, 2, N, &A)) continue;
        long n = (long)sla_matrix_nrows(A);
        double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
        for (long k = 0; k < n; k++) b[k] = 1.0;
        scipy_cmp *c = &scmp[i];
        c->N = N;
        c->n = n;
        for (int w = 0; w < 2; w++) {
            const variant *v = &V_SPD[w]; /* auto, cholesky */
            rec R;
            memset(&R, 0, sizeof R);
            R.problem = "poisson2d";
            R.variant = v->name;
            run_case(ctx, A, v, b, x, &R);
            if (w == 0) {
                c->auto_s = R.total_s, c->auto_setup = R.setup_s, c->auto_solve = R.solve_s;
                snprintf(c->auto_method, sizeof c->auto_method, "%s", R.method);
            } else {
                c->chol_s = R.total_s, c->chol_setup = R.setup_s, c->chol_solve = R.solve_s;
            }
            c->load = fmax(c->load, R.other_pct);
            fprintf(stderr, "  scipy-cmp n=%ld sla %s: %.4f s (%d reps, other load %.0f%%)\n", n,
                    v->name, R.total_s, R.reps, R.other_pct);
        }
        free(b);
        free(x);
        sla_matrix_destroy(&A);
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s poisson --sizes %s", G.python, G.script, sizes);
    wait_quiet();
    nscipy_lines = run_python(cmd, scipy_lines, MAXV);
    if (nscipy_lines < 0) {
        fprintf(stderr, "scipy_direct.py failed\n");
        nscipy_lines = 0;
    }
    printf("| n | SciPy build (kron) s | CSR->CSC s | spsolve s | SciPy residual | sla auto s "
           "(set-up + solve) | sla cholesky s | spsolve / auto | spsolve / cholesky | other load "
           "(sla, SciPy) |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < G.nscipy; i++) {
        const char *line = NULL;
        for (int k = 0; k < nscipy_lines; k++)
            if ((long)json_num(scipy_lines[k], "N") == scmp[i].N) line = scipy_lines[k];
        if (!line) continue;
        double sp = json_num(line, "spsolve_s");
        printf("| %ld | %.3g | %.3g | %.3g | %.1e | %.3g (%.3g + %.3g, %s) | %.3g | %.1fx | %.1fx | "
               "%.0f%%, %.0f%% |\n",
               scmp[i].n, json_num(line, "build_s"), json_num(line, "convert_s"), sp,
               json_num(line, "residual"), scmp[i].auto_s, scmp[i].auto_setup, scmp[i].auto_solve,
               scmp[i].auto_method, scmp[i].chol_s, sp / scmp[i].auto_s, sp / scmp[i].chol_s,
               scmp[i].load, json_num(line, "other_load_pct"));
    }
}

/* ---- batch -------------------------------------------------------------- */

typedef struct {
    int threads;
    const char *method;
    double create_s, solve_s, vjp_s, total_s, load;
    char chose[16];
} batch_res;
static batch_res bres[8];
static int nbres;

static void part_batch(sla_ctx *ctx)
{
    long N = G.batch_N, count = G.batch;
    long ncell = (N + 1) * (N + 1);
    double *kappa = malloc((size_t)ncell * sizeof *kappa);
    for (long c = 0; c < ncell; c++) kappa[c] = 1.0;
    sla_matrix *A0 = NULL;
    if (sla_gen_diffusion2d(ctx, N, kappa, &A0)) {
        fprintf(stderr, "batch: %s\n", sla_ctx_message(ctx));
        return;
    }
    long n = (long)sla_matrix_nrows(A0), nnz = (long)sla_matrix_nnz(A0);
    sla_int *colind = malloc((size_t)nnz * sizeof *colind);
    sla_matrix_get_colind(A0, colind);
    const sla_int *rowptr = sla_matrix_rowptr(A0);
    double *vals = malloc((size_t)count * (size_t)nnz * sizeof *vals);
    for (long i = 0; i < count; i++) {
        for (long c = 0; c < ncell; c++) kappa[c] = exp(2.0 * urand() - 1.0); /* e^U(-1,1) */
        sla_gen_diffusion2d_values(ctx, N, kappa, vals + (size_t)i * (size_t)nnz);
    }
    sla_matrix *A = NULL;
    if (sla_matrix_from_csr(ctx, n, n, rowptr, colind, SLA_F64, count, vals, SLA_COPY, &A)) {
        fprintf(stderr, "batch: %s\n", sla_ctx_message(ctx));
        return;
    }
    size_t nb = (size_t)count * (size_t)n, na = (size_t)count * (size_t)nnz;
    double *b = malloc(nb * sizeof *b), *x = malloc(nb * sizeof *x), *gx = malloc(nb * sizeof *gx),
           *gb = malloc(nb * sizeof *gb), *gA = malloc(na * sizeof *gA);
    sla_solve_info *info = malloc((size_t)count * sizeof *info);
    for (size_t k = 0; k < nb; k++) b[k] = gx[k] = 1.0;

    const int thr[2] = {1, 2};
    const variant *vs[2] = {&V_SPD[0], &V_SPD[1]};
    for (int t = 0; t < 2; t++) {
        sla_ctx_set_threads(ctx, thr[t]);
        for (int w = 0; w < 2; w++) {
            double tc[5], tsv[5], tv[5], tt[5];
            int reps = 3;
            batch_res *B = &bres[nbres++];
            B->threads = thr[t];
            B->method = vs[w]->name;
            wait_quiet();
            load_mark l0 = load_now();
            for (int r = 0; r < reps; r++) {
                sla_solver_options o;
                tmon mon = {1e300};
                opts_for(&o, vs[w], &mon);
                o.monitor = NULL;
                o.auto_solves = 2; /* solve + VJP */
                sla_solver *S = NULL;
                double t0 = now();
                sla_status st = sla_solver_create(ctx, A, &o, &S);
                double t1 = now();
                if (!st) st = sla_solver_solve_batch(ctx, S, b, x, info);
                double t2 = now();
                if (!st) st = sla_solver_solve_batch_vjp(ctx, S, x, gx, gb, gA, NULL);
                double t3 = now();
                if (st) {
                    fprintf(stderr, "batch %s: %s: %s\n", vs[w]->name, sla_status_name(st),
                            sla_ctx_message(ctx));
                    return;
                }
                snprintf(B->chose, sizeof B->chose, "%s", info[0].method);
                sla_solver_destroy(&S);
                tc[r] = t1 - t0, tsv[r] = t2 - t1, tv[r] = t3 - t2, tt[r] = t3 - t0;
            }
            B->load = other_load_pct(l0, load_now());
            B->create_s = median(tc, reps);
            B->solve_s = median(tsv, reps);
            B->vjp_s = median(tv, reps);
            B->total_s = median(tt, reps);
            fprintf(stderr, "  batch %ld x n=%ld, %d thread(s), %s (%s): create %.3f solve %.3f "
                            "vjp %.3f total %.3f s (other load %.0f%%)\n",
                    count, n, thr[t], vs[w]->name, B->chose, B->create_s, B->solve_s, B->vjp_s,
                    B->total_s, B->load);
        }
    }
    sla_ctx_set_threads(ctx, G.threads);

    /* the same systems, and sla's answers, for SciPy */
    char path[512];
    snprintf(path, sizeof path, "%s/sla_bench_direct_batch_%ld.bin", G.tmp, (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", path);
        return;
    }
    int64_t hdr[4] = {n, nnz, count, N};
    fwrite(hdr, sizeof hdr[0], 4, f);
    fwrite(rowptr, sizeof *rowptr, (size_t)n + 1, f);
    fwrite(colind, sizeof *colind, (size_t)nnz, f);
    fwrite(vals, sizeof *vals, na, f);
    fwrite(x, sizeof *x, nb, f);
    fwrite(gA, sizeof *gA, na, f);
    fclose(f);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s batch --file %s", G.python, G.script, path);
    wait_quiet();
    nbatch_lines = run_python(cmd, batch_line, 2);
    if (nbatch_lines < 0) nbatch_lines = 0;
    remove(path);

    printf("\n## Batched solve + VJP: %ld systems of 2D diffusion, %ld x %ld grid (n = %ld, nnz = "
           "%ld), one pattern\n\n",
           count, N, N, n, nnz);
    printf("| what | threads | set-up s | solve s | VJP s | total s | SciPy loop / sla | other load |\n"
           "|---|---|---|---|---|---|---|---|\n");
    double sp_total = nbatch_lines ? json_num(batch_line[0], "loop_s") : NAN;
    for (int i = 0; i < nbres; i++) {
        batch_res *B = &bres[i];
        printf("| sla %s (%s) | %d | %.3f | %.3f | %.3f | %.3f | %.1fx | %.0f%% |\n", B->method,
               B->chose, B->threads, B->create_s, B->solve_s, B->vjp_s, B->total_s,
               sp_total / B->total_s, B->load);
    }
    if (nbatch_lines) {
        const char *l = batch_line[0];
        printf("| SciPy loop: spsolve(A, b) + spsolve(A.T, gx) + gradient | 1 | - | %.3f | %.3f | "
               "%.3f | 1.0x | %.0f%% |\n",
               json_num(l, "solve_s"), json_num(l, "adjoint_s") + json_num(l, "grad_s"), sp_total,
               json_num(l, "other_load_pct"));
        printf("| SciPy loop with splu reuse: splu(A), solve(b), solve(gx, 'T') + gradient | 1 | "
               "%.3f | %.3f | %.3f | %.3f | %.1fx | %.0f%% |\n",
               json_num(l, "splu_factor_s"), json_num(l, "splu_solve_s"),
               json_num(l, "splu_adjoint_s") + json_num(l, "grad_s"), json_num(l, "splu_loop_s"),
               sp_total / json_num(l, "splu_loop_s"), json_num(l, "other_load_pct"));
        printf("\nSciPy: CSR->CSC conversion of all systems %.3f s (not in the loop times); "
               "max relative difference sla vs SciPy: x %.1e, dL/dA %.1e.\n",
               json_num(l, "convert_s"), json_num(l, "max_rel_err_x"),
               json_num(l, "max_rel_err_gA"));
    }
    free(b), free(x), free(gx), free(gb), free(gA), free(info), free(vals), free(colind),
        free(kappa);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&A0);
}

/* ---- refactorization reuse ---------------------------------------------- */

typedef struct {
    long N, n;
    double create_s, refresh_s, solve_s, vjp_s, tsolve_s, flops, load;
    double refresh_over_create, vjp_over_solve;
} reuse_res;
static reuse_res rres[MAXV];
static int nrres;

static void part_reuse(sla_ctx *ctx)
{
    for (int i = 0; i < G.nreuse; i++) {
        long N = G.reuse_sizes[i], ncell = (N + 1) * (N + 1);
        double *kappa = malloc((size_t)ncell * sizeof *kappa);
        for (long c = 0; c < ncell; c++) kappa[c] = exp(2.0 * urand() - 1.0);
        sla_matrix *A = NULL;
        if (sla_gen_diffusion2d(ctx, N, kappa, &A)) continue;
        long n = (long)sla_matrix_nrows(A), nnz = (long)sla_matrix_nnz(A);
        double *vals = malloc((size_t)nnz * sizeof *vals);
        double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x),
               *gb = malloc((size_t)n * sizeof *gb), *lam = malloc((size_t)n * sizeof *lam),
               *gA = malloc((size_t)nnz * sizeof *gA);
        for (long k = 0; k < n; k++) b[k] = 1.0;
        reuse_res *R = &rres[nrres++];
        R->N = N;
        R->n = n;
        sla_solver_options o;
        tmon mon = {1e300};
        opts_for(&o, &V_SPD[1], &mon);
        o.monitor = NULL;
        int reps = n > 300000 ? 3 : 5;
        double tc[8], tr[8], ts[16], tv[16], tt[16];
        wait_quiet();
        load_mark l0 = load_now();
        sla_solver *S = NULL;
        for (int r = 0; r < reps; r++) {
            sla_solver_destroy(&S);
            double t0 = now();
            if (sla_solver_create(ctx, A, &o, &S)) {
                fprintf(stderr, "reuse: %s\n", sla_ctx_message(ctx));
                return;
            }
            tc[r] = now() - t0;
        }
        for (int r = 0; r < reps; r++) {
            for (long c = 0; c < ncell; c++) kappa[c] = exp(2.0 * urand() - 1.0);
            sla_gen_diffusion2d_values(ctx, N, kappa, vals);
            sla_matrix_set_values(ctx, A, 0, vals);
            double t0 = now();
            if (sla_solver_refresh(ctx, S)) {
                fprintf(stderr, "reuse refresh: %s\n", sla_ctx_message(ctx));
                return;
            }
            tr[r] = now() - t0;
        }
        int sreps = 2 * reps + 1;
        wait_quiet();
        sla_solve_info info, vinfo;
        for (int r = 0; r < sreps; r++) {
            double t0 = now();
            sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info);
            double t1 = now();
            sla_solver_solve_vjp(ctx, S, 0, 1, x, n, b, n, gb, n, gA, &vinfo);
            double t2 = now();
            sla_solver_solve_transpose(ctx, S, 0, 1, b, n, lam, n, NULL);
            double t3 = now();
            ts[r] = t1 - t0, tv[r] = t2 - t1, tt[r] = t3 - t2;
        }
        R->load = other_load_pct(l0, load_now());
        /* the analysis' flops, from an auto note on this matrix */
        {
            sla_solver_options oa;
            tmon m2 = {1e300};
            opts_for(&oa, &V_SPD[0], &m2);
            oa.monitor = NULL;
            sla_solver *Sa = NULL;
            sla_solve_info ia;
            if (!sla_solver_create(ctx, A, &oa, &Sa) &&
                !sla_solver_solve(ctx, Sa, 0, 1, b, n, x, n, &ia))
                R->flops = note_flops(ia.note);
            sla_solver_destroy(&Sa);
        }
        R->create_s = median(tc, reps);
        R->refresh_s = median(tr, reps);
        R->solve_s = median(ts, sreps);
        R->vjp_s = median(tv, sreps);
        R->tsolve_s = median(tt, sreps);
        fprintf(stderr, "  reuse n=%ld: create %.4f refresh %.4f solve %.5f vjp %.5f transpose %.5f "
                        "(res %.1e / %.1e, other load %.0f%%)\n",
                n, R->create_s, R->refresh_s, R->solve_s, R->vjp_s, R->tsolve_s, info.residual,
                vinfo.residual, R->load);
        sla_solver_destroy(&S);
        sla_matrix_destroy(&A);
        free(kappa), free(vals), free(b), free(x), free(gb), free(lam), free(gA);
    }
    printf("\n## Refactorization reuse and VJP cost, 2D diffusion (random kappa), CHOLMOD, %d "
           "thread%s\n\n",
           G.threads, G.threads > 1 ? "s" : "");
    printf("| n | fresh create s | refresh s | refresh / create | GF/s (flops / refresh) | solve s | "
           "VJP s | VJP / solve | transposed solve s | other load |\n"
           "|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nrres; i++) {
        reuse_res *R = &rres[i];
        printf("| %ld | %.4g | %.4g | %.2f | %.2f | %.4g | %.4g | %.2f | %.4g | %.0f%% |\n", R->n,
               R->create_s, R->refresh_s, R->refresh_s / R->create_s, R->flops / R->refresh_s / 1e9,
               R->solve_s, R->vjp_s, R->vjp_s / R->solve_s, R->tsolve_s, R->load);
    }
}

/* ---- JSON --------------------------------------------------------------- */

static const char *state_name(rstate s)
{
    switch (s) {
    case RS_OK: return "ok";
    case RS_SKIPPED: return "skipped";
    case RS_TIMEOUT: return "timeout";
    default: return "failed";
    }
}

static void write_json(double t_total)
{
    FILE *f = fopen(G.json, "w");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", G.json);
        return;
    }
    char cpu[256] = "?";
    FILE *c = fopen("/proc/cpuinfo", "r");
    if (c) {
        char line[512];
        while (fgets(line, sizeof line, c))
            if (!strncmp(line, "model name", 10)) {
                char *p = strchr(line, ':');
                if (p) {
                    p += 2;
                    p[strcspn(p, "\n")] = 0;
                    snprintf(cpu, sizeof cpu, "%s", p);
                }
                break;
            }
        fclose(c);
    }
    time_t tt = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&tt));
    fprintf(f, "{\n  \"date\": \"%s\", \"nproc\": %ld, \"cpu\": ", date, sysconf(_SC_NPROCESSORS_ONLN));
    json_str(f, cpu);
    fprintf(f, ", \"threads\": %d, \"max_run_s\": %g, \"stop_after_s\": %g, \"mem_limit_gb\": %g, "
               "\"convdiff_b\": %g, \"total_s\": %.1f, \"waited_s\": %.1f,\n  \"sweep\": [\n",
            G.threads, G.max_run, G.stop_after, G.mem_gb, G.conv_b, t_total, G.waited);
    for (int i = 0; i < nrecs; i++) {
        rec *R = &recs[i];
        fprintf(f, "    {\"problem\": \"%s\", \"variant\": \"%s\", \"N\": %ld, \"n\": %ld, "
                   "\"nnz\": %ld, \"state\": \"%s\"",
                R->problem, R->variant, R->N, R->n, R->nnz, state_name(R->state));
        if (R->state != RS_SKIPPED)
            fprintf(f, ", \"total_s\": %.6g, \"min_total_s\": %.6g, \"setup_s\": %.6g, "
                       "\"solve_s\": %.6g, \"reps\": %d, \"iterations\": %ld, \"residual\": %.3e, "
                       "\"converged\": %s, \"method\": \"%s\", \"precond\": \"%s\", \"backend\": "
                       "\"%s\", \"ordering\": \"%s\", \"factor_nnz\": %.6g, \"flops\": %.6g, "
                       "\"refactor_s\": %.6g, \"loadavg\": %.2f, \"other_load_pct\": %.1f, "
                       "\"busy_before_pct\": %.1f, \"tries\": %d, \"note\": ",
                    R->total_s, R->min_total_s, R->setup_s, R->solve_s, R->reps, R->iterations,
                    R->residual, R->converged ? "true" : "false", R->method, R->precond,
                    R->backend, R->ordering, R->factor_nnz, R->flops, R->refactor_s, R->loadavg,
                    R->other_pct, R->busy_before, R->tries),
                json_str(f, R->note);
        if (R->why[0]) fprintf(f, ", \"why\": "), json_str(f, R->why);
        fprintf(f, "}%s\n", i + 1 < nrecs ? "," : "");
    }
    fprintf(f, "  ],\n  \"scipy_poisson2d\": [\n");
    for (int i = 0; i < G.nscipy && in_list(G.parts, "scipy"); i++) {
        scipy_cmp *s = &scmp[i];
        const char *line = "null";
        for (int k = 0; k < nscipy_lines; k++)
            if ((long)json_num(scipy_lines[k], "N") == s->N) line = scipy_lines[k];
        fprintf(f, "    {\"N\": %ld, \"n\": %ld, \"sla_auto_s\": %.6g, \"sla_auto_setup_s\": %.6g, "
                   "\"sla_auto_solve_s\": %.6g, \"sla_auto_method\": \"%s\", "
                   "\"sla_cholesky_s\": %.6g, \"sla_cholesky_setup_s\": %.6g, "
                   "\"sla_cholesky_solve_s\": %.6g, \"sla_other_load_pct\": %.1f, \"scipy\": %s}%s\n",
                s->N, s->n, s->auto_s, s->auto_setup, s->auto_solve, s->auto_method, s->chol_s,
                s->chol_setup, s->chol_solve, s->load, line, i + 1 < G.nscipy ? "," : "");
    }
    fprintf(f, "  ],\n  \"batch\": {\"sla\": [\n");
    for (int i = 0; i < nbres; i++) {
        batch_res *B = &bres[i];
        fprintf(f, "    {\"threads\": %d, \"method\": \"%s\", \"chose\": \"%s\", \"create_s\": %.6g, "
                   "\"solve_s\": %.6g, \"vjp_s\": %.6g, \"total_s\": %.6g, \"other_load_pct\": %.1f}%s\n",
                B->threads, B->method, B->chose, B->create_s, B->solve_s, B->vjp_s, B->total_s,
                B->load, i + 1 < nbres ? "," : "");
    }
    fprintf(f, "  ], \"scipy\": %s},\n  \"reuse\": [\n", nbatch_lines ? batch_line[0] : "null");
    for (int i = 0; i < nrres; i++) {
        reuse_res *R = &rres[i];
        fprintf(f, "    {\"N\": %ld, \"n\": %ld, \"create_s\": %.6g, \"refresh_s\": %.6g, "
                   "\"solve_s\": %.6g, \"vjp_s\": %.6g, \"transpose_solve_s\": %.6g, "
                   "\"flops\": %.6g, \"other_load_pct\": %.1f}%s\n",
                R->N, R->n, R->create_s, R->refresh_s, R->solve_s, R->vjp_s, R->tsolve_s, R->flops,
                R->load, i + 1 < nrres ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    fclose(f);
    fprintf(stderr, "wrote %s\n", G.json);
}

/* ---- main --------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: sla_bench_direct [--parts sweep,scipy,batch,reuse] [--threads 2]\n"
            "  [--sizes2d LIST] [--sizes3d LIST] [--sizescd LIST] [--problems poisson2d,...]\n"
            "  [--only auto,cholesky,...] [--max-run 25] [--stop-after 15] [--mem-gb 8]\n"
            "  [--scipy-sizes 316,1000] [--batch 1000] [--batch-N 50] [--reuse-sizes 316,1000]\n"
            "  [--python /usr/bin/python3] [--scipy-script bench/scipy_direct.py] [--tmp /tmp]\n"
            "  [--quiet-wait 10] [--quiet-budget 60] [--quiet-pct 15] [--convdiff-b 10]\n"
            "  [--json bench/out/direct.json]\n");
}

int main(int argc, char **argv)
{
    const char *problems = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!v) bad = 1;
        else if (!strcmp(a, "--parts")) G.parts = v;
        else if (!strcmp(a, "--only")) G.only = v;
        else if (!strcmp(a, "--problems")) problems = v;
        else if (!strcmp(a, "--json")) G.json = v;
        else if (!strcmp(a, "--python")) G.python = v;
        else if (!strcmp(a, "--scipy-script")) G.script = v;
        else if (!strcmp(a, "--tmp")) G.tmp = v;
        else if (!strcmp(a, "--threads")) G.threads = atoi(v), bad = G.threads < 1;
        else if (!strcmp(a, "--max-run")) G.max_run = atof(v);
        else if (!strcmp(a, "--stop-after")) G.stop_after = atof(v);
        else if (!strcmp(a, "--mem-gb")) G.mem_gb = atof(v);
        else if (!strcmp(a, "--convdiff-b")) G.conv_b = atof(v);
        else if (!strcmp(a, "--quiet-wait")) G.quiet_wait = atof(v);
        else if (!strcmp(a, "--quiet-budget")) G.quiet_budget = atof(v);
        else if (!strcmp(a, "--quiet-pct")) G.quiet_pct = atof(v);
        else if (!strcmp(a, "--batch")) G.batch = atol(v), bad = G.batch < 1;
        else if (!strcmp(a, "--batch-N")) G.batch_N = atol(v), bad = G.batch_N < 1;
        else if (!strcmp(a, "--sizes2d")) bad = (G.n2d = parse_list(v, G.sizes2d, MAXV)) <= 0;
        else if (!strcmp(a, "--sizes3d")) bad = (G.n3d = parse_list(v, G.sizes3d, MAXV)) <= 0;
        else if (!strcmp(a, "--sizescd")) bad = (G.ncd = parse_list(v, G.sizescd, MAXV)) <= 0;
        else if (!strcmp(a, "--scipy-sizes")) bad = (G.nscipy = parse_list(v, G.scipy_sizes, MAXV)) <= 0;
        else if (!strcmp(a, "--reuse-sizes")) bad = (G.nreuse = parse_list(v, G.reuse_sizes, MAXV)) <= 0;
        else bad = 1;
        if (bad) {
            usage();
            return 2;
        }
        i++;
    }
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx)) return 1;
    sla_ctx_set_threads(ctx, G.threads);
    double t_start = now();
    fprintf(stderr, "sla_bench_direct: %d thread(s), loadavg %.2f\n", G.threads, loadavg1());

    problem P[3] = {{"poisson2d", 2, true, G.sizes2d, G.n2d},
                    {"poisson3d", 3, true, G.sizes3d, G.n3d},
                    {"convdiff2d", 2, false, G.sizescd, G.ncd}};
    if (in_list(G.parts, "sweep")) {
        printf("## Crossover sweep: time to solution = sla_solver_create + sla_solver_solve "
               "(b = ones, rtol 1e-8)\n");
        for (int p = 0; p < 3; p++) {
            if (!in_list(problems, P[p].name)) continue;
            fprintf(stderr, "== sweep %s ==\n", P[p].name);
            sweep_problem(ctx, &P[p]);
            print_sweep_table(&P[p]);
            fflush(stdout);
        }
    }
    if (in_list(G.parts, "scipy")) {
        fprintf(stderr, "== scipy ==\n");
        part_scipy(ctx);
        fflush(stdout);
    }
    if (in_list(G.parts, "batch")) {
        fprintf(stderr, "== batch ==\n");
        part_batch(ctx);
        fflush(stdout);
    }
    if (in_list(G.parts, "reuse")) {
        fprintf(stderr, "== reuse ==\n");
        part_reuse(ctx);
        fflush(stdout);
    }
    double t_total = now() - t_start;
    printf("\nWhole run: %.0f s (of which %.0f s waiting for other processes to go quiet)\n",
           t_total, G.waited);
    if (G.json) write_json(t_total);
    free(recs);
    sla_ctx_destroy(&ctx);
    return 0;
}
