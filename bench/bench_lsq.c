/* bench_lsq — sla's LSQR and LSMR against SciPy's on one large generated
 * least-squares problem, a fixed number of iterations each, and the direct
 * method (SuiteSparseQR) at a smaller size.
 *
 *   sla_bench_lsq [--rows 1000000] [--grid P] [--seg 8] [--noise 0.01] [--seed 1]
 *                 [--iters 100] [--reps 3] [--threads 1,2] [--methods lsqr,lsmr]
 *                 [--retries 1] [--quiet-pct 15] [--quiet-wait 30]
 *                 [--qr-rows 250000] [--qr-tol 1e-10]
 *                 [--python /usr/bin/python3] [--script bench/scipy_lsq.py]
 *                 [--tmp bench/out] [--json bench/out/lsq.json] [--no-scipy]
 *                 [--transpose-reps 3]
 *
 * Run it from the repository root (the default paths are relative to it).
 * The problem (bench/bench_tomo.h): short-ray tomography on a P x P grid,
 * m = --rows rays (P defaults to sqrt(m / 4), so n = P^2 is about m / 4:
 * 1e6 x 2.5e5 by default), b = A x_phantom + noise (Gaussian, --noise times
 * the RMS of A x), so the system is incompatible and ||b - A x|| settles
 * at the noise level. The matrix and b go to a binary file that SciPy
 * reads (bench/scipy_lsq.py, started once and kept running).
 *
 * Fixed iterations: sla_lsq with atol = btol = conlim = 0 and maxiter =
 * --iters (it returns SLA_NOT_CONVERGED, reason maxiter, as intended), and
 * scipy.sparse.linalg.lsqr / lsmr with atol = btol = conlim = 0 and
 * iter_lim / maxiter = --iters, on the same A and b. Time per iteration is
 * the whole call over the iterations; sla's call also validates the values
 * and computes the true ||b - A x|| and ||A^T r|| at the end (one more
 * product with A and one with A^T). Both runs must end at the same
 * ||b - A x|| (relative difference reported; 1e-8 is the bar) and x is
 * compared too. Measurements alternate, sla (each thread count) then
 * SciPy, --reps times (ABAB...), medians reported.
 *
 * Load policy (as bench/run_all.sh): before each measurement wait up to
 * --quiet-wait seconds for the machine to go below --quiet-pct % busy;
 * a measurement during which other processes took more than --quiet-pct %
 * of the machine is taken again (up to --retries times) and the least
 * disturbed one kept; each keeps its other-load percentage, and the
 * tables mark the disturbed ones (*).
 *
 * A^T products (--transpose-reps R, 0 skips it): sla's fixed-iteration
 * runs with transpose = scatter and transpose = explicit (the CSR of A^T
 * built once per solve, sla/matrix.h), alternating in this one process R
 * times per method and thread count: wall and CPU seconds
 * (CLOCK_PROCESS_CPUTIME_ID), medians, CPU scatter / explicit, ||b - A x||
 * of both (they must agree), and the transpose's extra memory. The main
 * table's sla rows use the default (transpose = auto).
 *
 * QR (--qr-rows > 0; 0 skips it): the same kind of problem with that many
 * rows. sla's method qr (SuiteSparseQR, the exact least-squares solution),
 * then sla's LSQR and SciPy's lsqr run to atol = btol = --qr-tol: time to
 * an accurate solution, and ||b - A x|| and x against QR's.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_tomo.h"

#define MAXT 4
#define MAXR 16
#define MAXM 2

static struct {
    long rows, grid, qr_rows;
    double seg, noise, qr_tol;
    unsigned long long seed;
    int iters, reps, retries, threads[MAXT], nthreads, scipy, treps;
    double quiet_pct, quiet_wait, waited;
    const char *methods, *python, *script, *tmp, *json;
} G = {
    .rows = 1000000,
    .grid = 0,
    .qr_rows = 250000,
    .seg = 8.0,
    .noise = 0.01,
    .qr_tol = 1e-10,
    .seed = 1,
    .iters = 100,
    .reps = 3,
    .treps = 3,
    .retries = 1,
    .threads = {1, 2},
    .nthreads = 2,
    .scipy = 1,
    .quiet_pct = 15.0,
    .quiet_wait = 30.0,
    .methods = "lsqr,lsmr",
    .python = "/usr/bin/python3",
    .script = "bench/scipy_lsq.py",
    .tmp = "bench/out",
    .json = "bench/out/lsq.json",
};

/* One configuration (method, solver, threads): every repetition. */
typedef struct {
    char method[8], solver[8];
    int threads, nrep;
    double t[MAXR], load[MAXR];
    int tries[MAXR];
    long iterations;
    double rnorm_est, true_rnorm, true_arnorm, xnorm;
    double median_s, max_load;
    int disturbed; /* repetitions still above quiet_pct after the retries */
    int failed;
    char why[200];
} config;

/* The problem and its sla copy. */
typedef struct {
    tomo_csr T;
    sla_matrix *A;
    double *b;
    char file[512];
} problem;

static double quiet(void)
{
    double t0 = now(), b = tomo_wait_quiet(G.quiet_wait, G.quiet_pct);
    G.waited += now() - t0;
    return b;
}

static int make_problem(sla_ctx *ctx, long m, const char *tag, problem *Pb)
{
    memset(Pb, 0, sizeof *Pb);
    long P = G.grid > 0 && m == G.rows ? G.grid : (long)llround(sqrt((double)m / 4.0));
    if (P < 2) P = 2;
    double t0 = now();
    if (tomo_generate(m, P, G.seg, G.seed, &Pb->T)) {
        fprintf(stderr, "bench_lsq: out of memory generating %ld rays\n", m);
        return -1;
    }
    double *xt = malloc((size_t)Pb->T.n * sizeof *xt);
    Pb->b = malloc((size_t)m * sizeof *Pb->b);
    if (!xt || !Pb->b) return -1;
    tomo_phantom(P, xt);
    tomo_matvec(&Pb->T, xt, Pb->b);
    double rms = 0.0;
    for (long i = 0; i < m; i++) rms += Pb->b[i] * Pb->b[i];
    rms = sqrt(rms / (double)m);
    tomo_rng g = {G.seed ^ 0x5bd1e995ULL};
    for (long i = 0; i < m; i++) Pb->b[i] += G.noise * rms * tomo_normal(&g);
    free(xt);
    if (tomo_to_sla(ctx, &Pb->T, &Pb->A)) {
        fprintf(stderr, "bench_lsq: %s\n", sla_ctx_message(ctx));
        return -1;
    }
    snprintf(Pb->file, sizeof Pb->file, "%s/lsq_%s.bin", G.tmp, tag);
    if (G.scipy && tomo_write(Pb->file, &Pb->T, Pb->b, m)) {
        fprintf(stderr, "bench_lsq: cannot write %s\n", Pb->file);
        return -1;
    }
    fprintf(stderr, "problem %s: %ld x %ld (grid %ld^2), nnz %ld (%.1f a row), seg %g, noise %g: %.1f s\n", tag,
            Pb->T.m, Pb->T.n, P, Pb->T.nnz, (double)Pb->T.nnz / (double)m, G.seg, G.noise, now() - t0);
    return 0;
}

static void free_problem(problem *Pb)
{
    if (Pb->file[0]) remove(Pb->file);
    sla_matrix_destroy(&Pb->A);
    tomo_free(&Pb->T);
    free(Pb->b);
}

static sla_lsq_method method_of(const char *name)
{
    return !strcmp(name, "lsmr") ? SLA_LSQ_LSMR : !strcmp(name, "qr") ? SLA_LSQ_QR : SLA_LSQ_LSQR;
}

/* One sla_lsq run into C (repetition r) and x. */
static int sla_once(sla_ctx *ctx, const problem *Pb, config *C, int r, double atol, double btol, long maxiter,
                    double *x)
{
    sla_ctx_set_threads(ctx, C->threads);
    sla_lsq_options o;
    sla_lsq_options_default(&o);
    o.method = method_of(C->method);
    o.atol = atol;
    o.btol = btol;
    o.conlim = 0.0;
    o.maxiter = (sla_int)maxiter;
    sla_lsq_info info;
    load_mark l0 = load_now();
    double t0 = now();
    sla_status st = sla_lsq(ctx, Pb->A, 0, &o, Pb->b, x, &info);
    double t = now() - t0;
    double load = other_load_pct(l0, load_now());
    if (st < 0) {
        C->failed = 1;
        snprintf(C->why, sizeof C->why, "%s: %.170s", sla_status_name(st), sla_ctx_message(ctx));
        return -1;
    }
    C->t[r] = t;
    C->load[r] = load;
    C->iterations = (long)info.iterations;
    C->rnorm_est = info.rnorm;
    C->true_rnorm = info.true_rnorm;
    C->true_arnorm = info.true_arnorm;
    C->xnorm = info.xnorm;
    if (info.note[0]) fprintf(stderr, "  sla %s: %s\n", C->method, info.note);
    return 0;
}

/* One SciPy run (repetition r); xfile (may be NULL) receives its x. */
static int scipy_once(tomo_coproc *py, config *C, int r, double atol, double btol, long maxiter,
                      const char *xfile)
{
    char cmd[700], line[4096];
    snprintf(cmd, sizeof cmd, "%s %ld %.17g %.17g%s%s", C->method, maxiter, atol, btol, xfile ? " " : "",
             xfile ? xfile : "");
    if (tomo_coproc_ask(py, cmd, line, sizeof line) || strstr(line, "\"error\"")) {
        C->failed = 1;
        snprintf(C->why, sizeof C->why, "scipy: %.180s", line);
        return -1;
    }
    C->t[r] = tomo_json_num(line, "seconds");
    C->load[r] = tomo_json_num(line, "other_load_pct");
    C->iterations = (long)tomo_json_num(line, "iterations");
    C->rnorm_est = tomo_json_num(line, "rnorm_est");
    C->true_rnorm = tomo_json_num(line, "true_rnorm");
    C->true_arnorm = tomo_json_num(line, "true_arnorm");
    C->xnorm = tomo_json_num(line, "xnorm");
    if (!isfinite(C->t[r]) || !isfinite(C->true_rnorm) || !isfinite(C->true_arnorm) || !isfinite(C->xnorm)) {
        C->failed = 1;
        snprintf(C->why, sizeof C->why, "scipy: incomplete answer %.150s", line);
        return -1;
    }
    if (!isfinite(C->load[r])) C->load[r] = -1.0;
    return 0;
}

/* Repetition r of C under the load policy: wait for quiet, measure, and
 * measure again (up to --retries times) while others took more than
 * --quiet-pct %; the least disturbed measurement is kept. */
static int measure(sla_ctx *ctx, tomo_coproc *py, const problem *Pb, config *C, int r, double atol, double btol,
                   long maxiter, double *x, const char *xfile)
{
    double best_t = 0, best_load = INFINITY;
    int tries = 0;
    for (;;) {
        quiet();
        int rc = py ? scipy_once(py, C, r, atol, btol, maxiter, xfile) : sla_once(ctx, Pb, C, r, atol, btol, maxiter, x);
        if (rc) return -1;
        tries++;
        if (C->load[r] < best_load) best_t = C->t[r], best_load = C->load[r];
        if (best_load <= G.quiet_pct || tries > G.retries) break;
        fprintf(stderr, "  %s %s %dT: %.1f %% other load, measuring again\n", C->solver, C->method, C->threads,
                C->load[r]);
    }
    C->t[r] = best_t;
    C->load[r] = best_load;
    C->tries[r] = tries;
    C->nrep = r + 1;
    return 0;
}

static void finish(config *C)
{
    C->median_s = median(C->t, C->nrep);
    C->max_load = 0;
    C->disturbed = 0;
    for (int r = 0; r < C->nrep; r++) {
        C->max_load = fmax(C->max_load, C->load[r]);
        C->disturbed += C->load[r] > G.quiet_pct;
    }
}

static double rel_diff(const double *a, const double *b, long n)
{
    double d = 0.0, s = 0.0;
    for (long i = 0; i < n; i++) d += (a[i] - b[i]) * (a[i] - b[i]), s += b[i] * b[i];
    return s > 0 ? sqrt(d / s) : sqrt(d);
}

static int read_vec(const char *path, double *x, long n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t k = fread(x, sizeof *x, (size_t)n, f);
    fclose(f);
    remove(path);
    return k == (size_t)n ? 0 : -1;
}

static int start_scipy(tomo_coproc *py, const problem *Pb, char *ready, size_t cap)
{
    char *argv[] = {(char *)G.python, (char *)G.script, "serve", "--file", (char *)Pb->file, NULL};
    if (tomo_coproc_start(py, argv) || tomo_coproc_ask(py, NULL, ready, cap)) {
        fprintf(stderr, "bench_lsq: %s %s did not start (SciPy left out)\n", G.python, G.script);
        tomo_coproc_stop(py);
        return -1;
    }
    return 0;
}

/* ---- the fixed-iteration comparison ------------------------------------------ */

typedef struct {
    config c[MAXM][MAXT + 1]; /* [method][threads..., scipy] */
    int nm, have_scipy;
    double x_rel[MAXM][MAXT]; /* ||x_sla - x_scipy|| / ||x_scipy||, sla at each thread count */
    double r_rel[MAXM][MAXT]; /* |rnorm_sla - rnorm_scipy| / rnorm_scipy */
    char ready[1024];
} fixed_res;

static int part_fixed(sla_ctx *ctx, const problem *Pb, fixed_res *F)
{
    tomo_coproc py_, *py = NULL;
    memset(F, 0, sizeof *F);
    if (G.scipy && !start_scipy(&py_, Pb, F->ready, sizeof F->ready)) py = &py_, F->have_scipy = 1;
    long n = Pb->T.n;
    double *x = malloc((size_t)n * sizeof *x), *xs = malloc((size_t)n * sizeof *xs),
           *xsla = malloc((size_t)MAXT * (size_t)n * sizeof *xsla);
    char xfile[600];
    snprintf(xfile, sizeof xfile, "%s/lsq_x_scipy.bin", G.tmp);
    const char *p = G.methods;
    while (*p && F->nm < MAXM) {
        char name[8];
        size_t len = strcspn(p, ",");
        snprintf(name, sizeof name, "%.*s", (int)(len < 7 ? len : 7), p);
        p += len + (p[len] == ',');
        int im = F->nm++;
        int xs_ok = 0;
        int nc = G.nthreads + (py != NULL);
        for (int k = 0; k < nc; k++) {
            config *C = &F->c[im][k];
            snprintf(C->method, sizeof C->method, "%s", name);
            snprintf(C->solver, sizeof C->solver, "%s", k < G.nthreads ? "sla" : "scipy");
            C->threads = k < G.nthreads ? G.threads[k] : 1;
        }
        fprintf(stderr, "== %s, %d iterations, %d repetitions (sla %s, SciPy, alternating) ==\n", name, G.iters,
                G.reps, G.nthreads > 1 ? "at each thread count" : "");
        for (int r = 0; r < G.reps; r++)
            for (int k = 0; k < nc; k++) {
                config *C = &F->c[im][k];
                bool is_py = k == G.nthreads;
                if (C->failed) continue;
                if (measure(ctx, is_py ? py : NULL, Pb, C, r, 0.0, 0.0, G.iters, is_py ? xs : x,
                            is_py && r == 0 ? xfile : NULL))
                    fprintf(stderr, "  %s %s failed: %s\n", C->solver, name, C->why);
                else if (!is_py && r == 0)
                    memcpy(xsla + (size_t)k * (size_t)n, x, (size_t)n * sizeof *x);
                else if (is_py && r == 0 && !(xs_ok = !read_vec(xfile, xs, n)))
                    fprintf(stderr, "  could not read SciPy's x from %s\n", xfile);
                if (!C->failed)
                    fprintf(stderr, "  rep %d %-5s %-4s %dT: %.3f s, %ld its, ||r|| %.12e, other load %.0f %%\n", r,
                            C->solver, name, C->threads, C->t[r], C->iterations, C->true_rnorm, C->load[r]);
            }
        for (int k = 0; k < nc; k++) finish(&F->c[im][k]);
        if (py && !F->c[im][G.nthreads].failed)
            for (int k = 0; k < G.nthreads; k++) {
                config *S = &F->c[im][G.nthreads];
                F->x_rel[im][k] = xs_ok ? rel_diff(xsla + (size_t)k * (size_t)n, xs, n) : -1.0;
                F->r_rel[im][k] = fabs(F->c[im][k].true_rnorm - S->true_rnorm) / S->true_rnorm;
            }
    }
    if (py) tomo_coproc_stop(py);
    free(x);
    free(xs);
    free(xsla);
    return 0;
}

static void print_fixed(const problem *Pb, const fixed_res *F)
{
    printf("## LSQR / LSMR, %d iterations (atol = btol = conlim = 0): %ld x %ld, nnz %ld\n\n", G.iters, Pb->T.m,
           Pb->T.n, Pb->T.nnz);
    printf("| method | solver | threads | iterations | median s | ms / iteration | SciPy / sla | ||b - A x|| | "
           "rel. diff to SciPy | ||x - x_scipy|| / ||x_scipy|| | ||A^T r|| | other load | tries |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int im = 0; im < F->nm; im++) {
        const config *S = F->have_scipy && !F->c[im][G.nthreads].failed ? &F->c[im][G.nthreads] : NULL;
        for (int k = 0; k < G.nthreads + F->have_scipy; k++) {
            const config *C = &F->c[im][k];
            if (C->failed) {
                printf("| %s | %s | %d | failed: %s |\n", C->method, C->solver, C->threads, C->why);
                continue;
            }
            int tries = 0;
            for (int r = 0; r < C->nrep; r++) tries += C->tries[r];
            char ratio[32] = "-", rd[32] = "-", xd[32] = "-";
            if (S && k < G.nthreads) {
                snprintf(ratio, sizeof ratio, "%.2fx", S->median_s / C->median_s);
                snprintf(rd, sizeof rd, "%.1e", F->r_rel[im][k]);
                if (F->x_rel[im][k] >= 0) snprintf(xd, sizeof xd, "%.1e", F->x_rel[im][k]);
            }
            printf("| %s | %s | %d | %ld | %.3f | %.2f | %s | %.10e | %s | %s | %.3e | %.0f %%%s | %d/%d |\n",
                   C->method, C->solver, C->threads, C->iterations, C->median_s,
                   1e3 * C->median_s / (double)(C->iterations > 0 ? C->iterations : 1), ratio, C->true_rnorm, rd,
                   xd, C->true_arnorm, C->max_load, C->disturbed ? "*" : "", tries, C->nrep);
        }
    }
    printf("\n");
}

/* ---- A^T products: explicit transpose against scatter -------------------------- */

typedef struct {
    int done, nm;
    char method[MAXM][8];
    double wall[MAXM][MAXT][2], cpu[MAXM][MAXT][2], load[MAXM][MAXT][2], rnorm[MAXM][MAXT][2];
    long its[MAXM][MAXT][2];
    int failed[MAXM][MAXT][2];
    double extra_mb;
} tr_res;

static const char *const tr_names[2] = {"scatter", "explicit"};

static void part_transpose(sla_ctx *ctx, const problem *Pb, tr_res *R)
{
    static const sla_transpose_mode modes[2] = {SLA_TRANSPOSE_SCATTER, SLA_TRANSPOSE_EXPLICIT};
    memset(R, 0, sizeof *R);
    R->extra_mb = ((double)Pb->T.nnz * 12.0 + (double)(Pb->T.n + 1) * 8.0) / 1e6;
    double *x = malloc((size_t)Pb->T.n * sizeof *x);
    const char *p = G.methods;
    while (*p && R->nm < MAXM) {
        size_t len = strcspn(p, ",");
        int im = R->nm++;
        snprintf(R->method[im], sizeof R->method[im], "%.*s", (int)(len < 7 ? len : 7), p);
        p += len + (p[len] == ',');
        for (int it = 0; it < G.nthreads; it++) {
            double w[2][MAXR], c[2][MAXR];
            sla_ctx_set_threads(ctx, G.threads[it]);
            for (int r = 0; r < G.treps; r++)
                for (int mi = 0; mi < 2; mi++) {
                    if (R->failed[im][it][mi]) continue;
                    sla_lsq_options o;
                    sla_lsq_options_default(&o);
                    o.method = method_of(R->method[im]);
                    o.atol = o.btol = o.conlim = 0.0;
                    o.maxiter = G.iters;
                    o.transpose = modes[mi];
                    sla_lsq_info info;
                    tomo_wait_quiet(G.quiet_wait, G.quiet_pct);
                    load_mark l0 = load_now();
                    double w0 = now(), c0 = cpu_now();
                    sla_status st = sla_lsq(ctx, Pb->A, 0, &o, Pb->b, x, &info);
                    c[mi][r] = cpu_now() - c0;
                    w[mi][r] = now() - w0;
                    R->load[im][it][mi] = fmax(R->load[im][it][mi], other_load_pct(l0, load_now()));
                    if (st < 0) {
                        R->failed[im][it][mi] = 1;
                        fprintf(stderr, "  %s transpose=%s failed: %s\n", R->method[im], tr_names[mi],
                                sla_ctx_message(ctx));
                        continue;
                    }
                    R->its[im][it][mi] = (long)info.iterations;
                    R->rnorm[im][it][mi] = info.true_rnorm;
                    fprintf(stderr, "  rep %d %s %dT transpose=%-8s: %.3f s wall, %.3f s CPU\n", r, R->method[im],
                            G.threads[it], tr_names[mi], w[mi][r], c[mi][r]);
                }
            for (int mi = 0; mi < 2; mi++) {
                R->wall[im][it][mi] = median(w[mi], G.treps);
                R->cpu[im][it][mi] = median(c[mi], G.treps);
            }
        }
    }
    free(x);
    R->done = 1;
}

static void print_transpose(const tr_res *R)
{
    printf("## LSQR / LSMR A^T products: explicit transpose against scatter (%d iterations, %d alternating runs "
           "each, one process)\n\n",
           G.iters, G.treps);
    printf("| method | threads | A^T by | median wall s | median CPU s | CPU ms / iteration | CPU scatter / explicit | "
           "||b - A x|| | max other load |\n|---|---|---|---|---|---|---|---|---|\n");
    for (int im = 0; im < R->nm; im++)
        for (int it = 0; it < G.nthreads; it++)
            for (int mi = 0; mi < 2; mi++) {
                if (R->failed[im][it][mi]) {
                    printf("| %s | %d | %s | failed |\n", R->method[im], G.threads[it], tr_names[mi]);
                    continue;
                }
                char ratio[32] = "-";
                if (mi == 1 && !R->failed[im][it][0])
                    snprintf(ratio, sizeof ratio, "%.2fx", R->cpu[im][it][0] / R->cpu[im][it][1]);
                long its = R->its[im][it][mi] > 0 ? R->its[im][it][mi] : 1;
                printf("| %s | %d | %s | %.3f | %.3f | %.2f | %s | %.10e | %.0f %% |\n", R->method[im], G.threads[it],
                       tr_names[mi], R->wall[im][it][mi], R->cpu[im][it][mi], 1e3 * R->cpu[im][it][mi] / (double)its,
                       ratio, R->rnorm[im][it][mi], R->load[im][it][mi]);
            }
    printf("\nThe explicit transpose holds %.1f MB more (nnz values and indices, n + 1 row pointers).\n\n",
           R->extra_mb);
}

/* ---- QR at a smaller size ------------------------------------------------------ */

typedef struct {
    int done;
    long m, n, nnz;
    config qr, lsqr, sp;
    double lsqr_x_rel, sp_x_rel, lsqr_r_rel, sp_r_rel;
} qr_res;

static int part_qr(sla_ctx *ctx, qr_res *Q)
{
    memset(Q, 0, sizeof *Q);
    problem Pb;
    if (make_problem(ctx, G.qr_rows, "qr", &Pb)) return -1;
    Q->m = Pb.T.m, Q->n = Pb.T.n, Q->nnz = Pb.T.nnz;
    long n = Pb.T.n, big = 20 * n;
    int tmax = G.threads[G.nthreads - 1];
    double *xq = malloc((size_t)n * sizeof *xq), *x = malloc((size_t)n * sizeof *x);
    snprintf(Q->qr.method, 8, "qr");
    snprintf(Q->qr.solver, 8, "sla");
    Q->qr.threads = tmax;
    Q->lsqr = Q->qr;
    snprintf(Q->lsqr.method, 8, "lsqr");
    Q->sp = Q->lsqr;
    snprintf(Q->sp.solver, 8, "scipy");
    Q->sp.threads = 1;
    fprintf(stderr, "== qr (%d threads) against lsqr to atol = btol = %g ==\n", tmax, G.qr_tol);
    if (measure(ctx, NULL, &Pb, &Q->qr, 0, G.qr_tol, G.qr_tol, 0, xq, NULL))
        fprintf(stderr, "  sla qr failed: %s\n", Q->qr.why);
    if (measure(ctx, NULL, &Pb, &Q->lsqr, 0, G.qr_tol, G.qr_tol, big, x, NULL))
        fprintf(stderr, "  sla lsqr failed: %s\n", Q->lsqr.why);
    else if (!Q->qr.failed) {
        Q->lsqr_x_rel = rel_diff(x, xq, n);
        Q->lsqr_r_rel = fabs(Q->lsqr.true_rnorm - Q->qr.true_rnorm) / Q->qr.true_rnorm;
    }
    finish(&Q->qr);
    finish(&Q->lsqr);
    tomo_coproc py;
    char ready[1024], xfile[600];
    snprintf(xfile, sizeof xfile, "%s/lsq_x_scipy.bin", G.tmp);
    if (G.scipy && !start_scipy(&py, &Pb, ready, sizeof ready)) {
        if (measure(ctx, &py, &Pb, &Q->sp, 0, G.qr_tol, G.qr_tol, big, NULL, xfile) || read_vec(xfile, x, n))
            fprintf(stderr, "  scipy lsqr failed: %s\n", Q->sp.why), Q->sp.failed = 1;
        else if (!Q->qr.failed) {
            Q->sp_x_rel = rel_diff(x, xq, n);
            Q->sp_r_rel = fabs(Q->sp.true_rnorm - Q->qr.true_rnorm) / Q->qr.true_rnorm;
        }
        finish(&Q->sp);
        tomo_coproc_stop(&py);
    } else {
        Q->sp.failed = 1;
        snprintf(Q->sp.why, sizeof Q->sp.why, "SciPy not run");
    }
    Q->done = 1;
    free(xq);
    free(x);
    free_problem(&Pb);
    return 0;
}

static void print_qr(const qr_res *Q)
{
    printf("## Exact least squares: sla qr (SuiteSparseQR) against LSQR to atol = btol = %g: %ld x %ld, nnz %ld\n\n",
           G.qr_tol, Q->m, Q->n, Q->nnz);
    printf("| method | solver | threads | iterations | s | ||b - A x|| | rel. diff to qr | ||x - x_qr|| / ||x_qr|| | "
           "||A^T r|| | other load |\n|---|---|---|---|---|---|---|---|---|---|\n");
    const config *C3[3] = {&Q->qr, &Q->lsqr, &Q->sp};
    double rr[3] = {0, Q->lsqr_r_rel, Q->sp_r_rel}, xr[3] = {0, Q->lsqr_x_rel, Q->sp_x_rel};
    for (int i = 0; i < 3; i++) {
        const config *C = C3[i];
        if (C->failed) {
            printf("| %s | %s | %d | failed: %s |\n", C->method, C->solver, C->threads, C->why);
            continue;
        }
        printf("| %s | %s | %d | %ld | %.3f | %.10e | %.1e | %.1e | %.3e | %.0f %%%s |\n", C->method, C->solver,
               C->threads, C->iterations, C->median_s, C->true_rnorm, rr[i], xr[i], C->true_arnorm, C->max_load,
               C->disturbed ? "*" : "");
    }
    printf("\n");
}

/* ---- JSON ------------------------------------------------------------------------ */

static void json_config(FILE *f, const config *C, const char *extra)
{
    fprintf(f, "{\"method\": \"%s\", \"solver\": \"%s\", \"threads\": %d, \"failed\": %s", C->method, C->solver,
            C->threads, C->failed ? "true" : "false");
    if (C->failed) {
        fprintf(f, ", \"why\": \"");
        for (const char *s = C->why; *s; s++) fputc(*s == '"' || *s == '\\' ? '\'' : *s, f);
        fprintf(f, "\"}");
        return;
    }
    fprintf(f, ", \"iterations\": %ld, \"median_s\": %.6g, \"ms_per_iteration\": %.6g, \"times_s\": [", C->iterations,
            C->median_s, 1e3 * C->median_s / (double)(C->iterations > 0 ? C->iterations : 1));
    for (int r = 0; r < C->nrep; r++) fprintf(f, "%s%.6g", r ? ", " : "", C->t[r]);
    fprintf(f, "], \"other_load_pct\": [");
    for (int r = 0; r < C->nrep; r++) fprintf(f, "%s%.1f", r ? ", " : "", C->load[r]);
    fprintf(f, "], \"tries\": [");
    for (int r = 0; r < C->nrep; r++) fprintf(f, "%s%d", r ? ", " : "", C->tries[r]);
    fprintf(f, "], \"max_other_load_pct\": %.1f, \"disturbed\": %d, \"true_rnorm\": %.17g, \"true_arnorm\": %.6g, "
               "\"rnorm_est\": %.17g, \"xnorm\": %.17g%s}",
            C->max_load, C->disturbed, C->true_rnorm, C->true_arnorm, C->rnorm_est, C->xnorm, extra);
}

static void write_json(const problem *Pb, const fixed_res *F, const qr_res *Q, const tr_res *R, double total)
{
    FILE *f = fopen(G.json, "w");
    if (!f) {
        fprintf(stderr, "bench_lsq: cannot write %s\n", G.json);
        return;
    }
    char ver[64] = "";
    tomo_json_str(F->ready, "scipy", ver, sizeof ver);
    fprintf(f, "{\"problem\": {\"kind\": \"short-ray tomography\", \"m\": %ld, \"n\": %ld, \"grid\": %ld, "
               "\"nnz\": %ld, \"seg\": %g, \"noise\": %g, \"seed\": %llu},\n \"iters\": %d, \"reps\": %d, "
               "\"retries\": %d, \"quiet_pct\": %g, \"scipy_version\": \"%s\", \"total_s\": %.1f, "
               "\"waited_s\": %.1f,\n \"fixed\": [\n",
            Pb->T.m, Pb->T.n, Pb->T.P, Pb->T.nnz, G.seg, G.noise, G.seed, G.iters, G.reps, G.retries, G.quiet_pct, ver,
            total, G.waited);
    int first = 1;
    for (int im = 0; im < F->nm; im++)
        for (int k = 0; k < G.nthreads + F->have_scipy; k++) {
            const config *C = &F->c[im][k];
            const config *S = F->have_scipy ? &F->c[im][G.nthreads] : NULL;
            char extra[200] = "";
            if (S && !S->failed && k < G.nthreads && !C->failed)
                snprintf(extra, sizeof extra,
                         ", \"scipy_over_sla\": %.6g, \"rnorm_rel_diff\": %.3g, \"x_rel_diff\": %.3g, "
                         "\"rnorm_agree_1e-8\": %s",
                         S->median_s / C->median_s, F->r_rel[im][k], F->x_rel[im][k] >= 0 ? F->x_rel[im][k] : -1.0,
                         F->r_rel[im][k] <= 1e-8 ? "true" : "false");
            fprintf(f, "%s  ", first ? "" : ",\n");
            json_config(f, C, extra);
            first = 0;
        }
    fprintf(f, "\n ]");
    if (Q->done) {
        fprintf(f, ",\n \"qr\": {\"m\": %ld, \"n\": %ld, \"nnz\": %ld, \"tol\": %g, \"runs\": [\n  ", Q->m, Q->n, Q->nnz,
                G.qr_tol);
        json_config(f, &Q->qr, "");
        char extra[160];
        snprintf(extra, sizeof extra, ", \"rnorm_rel_diff_qr\": %.3g, \"x_rel_diff_qr\": %.3g", Q->lsqr_r_rel,
                 Q->lsqr_x_rel);
        fprintf(f, ",\n  ");
        json_config(f, &Q->lsqr, extra);
        snprintf(extra, sizeof extra, ", \"rnorm_rel_diff_qr\": %.3g, \"x_rel_diff_qr\": %.3g", Q->sp_r_rel,
                 Q->sp_x_rel);
        fprintf(f, ",\n  ");
        json_config(f, &Q->sp, extra);
        fprintf(f, "]}");
    }
    if (R->done) {
        fprintf(f, ",\n \"transpose\": {\"extra_memory_mb\": %.3f, \"runs\": [", R->extra_mb);
        int first = 1;
        for (int im = 0; im < R->nm; im++)
            for (int it = 0; it < G.nthreads; it++)
                for (int mi = 0; mi < 2; mi++, first = 0)
                    fprintf(f, "%s\n  {\"method\": \"%s\", \"threads\": %d, \"transpose\": \"%s\", \"failed\": %s, "
                               "\"median_wall_s\": %.6g, \"median_cpu_s\": %.6g, \"iterations\": %ld, "
                               "\"true_rnorm\": %.17g, \"max_other_load_pct\": %.1f}",
                            first ? "" : ",", R->method[im], G.threads[it], tr_names[mi],
                            R->failed[im][it][mi] ? "true" : "false", R->wall[im][it][mi], R->cpu[im][it][mi],
                            R->its[im][it][mi], R->rnorm[im][it][mi], R->load[im][it][mi]);
        fprintf(f, "\n ]}");
    }
    fprintf(f, "\n}\n");
    fclose(f);
    fprintf(stderr, "wrote %s\n", G.json);
}

/* ---- main ------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: sla_bench_lsq [--rows 1000000] [--grid P] [--seg 8] [--noise 0.01] [--seed 1]\n"
                    "  [--iters 100] [--reps 3] [--threads 1,2] [--methods lsqr,lsmr] [--retries 1]\n"
                    "  [--quiet-pct 15] [--quiet-wait 30] [--qr-rows 250000] [--qr-tol 1e-10]\n"
                    "  [--python /usr/bin/python3] [--script bench/scipy_lsq.py] [--tmp bench/out]\n"
                    "  [--json bench/out/lsq.json] [--no-scipy] [--transpose-reps 3]\n");
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--no-scipy")) {
            G.scipy = 0;
            continue;
        }
        if (!v) bad = 1;
        else if (!strcmp(a, "--rows")) G.rows = atol(v), bad = G.rows < 4;
        else if (!strcmp(a, "--grid")) G.grid = atol(v), bad = G.grid < 2;
        else if (!strcmp(a, "--seg")) G.seg = atof(v), bad = !(G.seg > 0 && G.seg <= 40);
        else if (!strcmp(a, "--noise")) G.noise = atof(v), bad = !(G.noise >= 0);
        else if (!strcmp(a, "--seed")) G.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--iters")) G.iters = atoi(v), bad = G.iters < 1;
        else if (!strcmp(a, "--reps")) G.reps = atoi(v), bad = G.reps < 1 || G.reps > MAXR;
        else if (!strcmp(a, "--retries")) G.retries = atoi(v), bad = G.retries < 0;
        else if (!strcmp(a, "--transpose-reps")) G.treps = atoi(v), bad = G.treps < 0 || G.treps > MAXR;
        else if (!strcmp(a, "--quiet-pct")) G.quiet_pct = atof(v);
        else if (!strcmp(a, "--quiet-wait")) G.quiet_wait = atof(v);
        else if (!strcmp(a, "--qr-rows")) G.qr_rows = atol(v), bad = G.qr_rows < 0;
        else if (!strcmp(a, "--qr-tol")) G.qr_tol = atof(v), bad = !(G.qr_tol > 0);
        else if (!strcmp(a, "--methods")) G.methods = v;
        else if (!strcmp(a, "--python")) G.python = v;
        else if (!strcmp(a, "--script")) G.script = v;
        else if (!strcmp(a, "--tmp")) G.tmp = v;
        else if (!strcmp(a, "--json")) G.json = v;
        else if (!strcmp(a, "--threads")) {
            G.nthreads = 0;
            for (const char *p = v; *p && G.nthreads < MAXT;) {
                char *e;
                long t = strtol(p, &e, 10);
                if (e == p || t < 1) {
                    bad = 1;
                    break;
                }
                G.threads[G.nthreads++] = (int)t;
                p = *e == ',' ? e + 1 : e;
            }
            bad |= G.nthreads == 0;
        } else bad = 1;
        if (bad) {
            usage();
            return 2;
        }
        i++;
    }
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx)) return 1;
    double t_start = now();
    problem Pb;
    if (make_problem(ctx, G.rows, "A", &Pb)) return 1;
    fixed_res *F = calloc(1, sizeof *F);
    qr_res *Q = calloc(1, sizeof *Q);
    tr_res *R = calloc(1, sizeof *R);
    if (!F || !Q || !R) return 1;
    part_fixed(ctx, &Pb, F);
    print_fixed(&Pb, F);
    fflush(stdout);
    if (G.treps > 0) {
        part_transpose(ctx, &Pb, R);
        print_transpose(R);
        fflush(stdout);
    }
    if (G.qr_rows > 0) {
        part_qr(ctx, Q);
        if (Q->done) print_qr(Q);
    }
    double total = now() - t_start;
    printf("Whole run: %.0f s (of which %.0f s waiting for other processes to go quiet)\n", total, G.waited);
    if (G.json) write_json(&Pb, F, Q, R, total);
    int bad = 0;
    for (int im = 0; im < F->nm; im++)
        for (int k = 0; k < G.nthreads; k++)
            if (F->have_scipy && F->r_rel[im][k] > 1e-8) bad = 1;
    if (bad) fprintf(stderr, "bench_lsq: sla and SciPy did NOT reach the same ||b - A x|| to 1e-8\n");
    free_problem(&Pb);
    free(F);
    free(Q);
    free(R);
    sla_ctx_destroy(&ctx);
    return 0;
}
