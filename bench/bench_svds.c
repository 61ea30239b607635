/* bench_svds — sla_svds against SciPy's svds (ARPACK) for the k largest
 * singular triplets of one generated sparse matrix.
 *
 *   sla_bench_svds [--rows 100000] [--grid P] [--seg 8] [--seed 1] [--k 10]
 *                  [--tol 0] [--reps 3] [--threads 1,2] [--retries 1]
 *                  [--quiet-pct 15] [--quiet-wait 30]
 *                  [--python /usr/bin/python3] [--script bench/scipy_svds.py]
 *                  [--tmp bench/out] [--json bench/out/svds.json] [--no-scipy]
 *
 * Run it from the repository root. The matrix is bench/bench_tomo.h's
 * short-ray tomography with m = --rows rays on a P x P grid (P defaults to
 * sqrt(m / 2): 1e5 x 5e4 by default). Both sides run ARPACK's implicitly
 * restarted Lanczos on A^T A (the smaller normal operator) from the same
 * start vector v0 (seeded, normal; written to the file with the matrix),
 * with the same tolerance (--tol, 0 = machine precision) and ARPACK's
 * default basis size (ncv = max(2k + 1, 20)): sla_svds (which LM) and
 * scipy.sparse.linalg.svds(A, k, which='LM', tol, v0, solver='arpack'),
 * kept running in bench/scipy_svds.py. Reported: median time of --reps
 * alternating runs (sla at each thread count, then SciPy), the largest
 * relative difference of the singular values (1e-8 is the bar), and each
 * side's largest residuals ||A v - s u|| and ||A^T u - s v||.
 * Load policy as bench_lsq (and bench/run_all.sh): wait for a quiet
 * machine, measure again when other processes took more than --quiet-pct
 * % meanwhile (up to --retries times), keep the least disturbed run, and
 * report the other load of each.
 *
 * A^T products (--transpose-reps R, 0 skips it): sla_svds with transpose =
 * scatter and transpose = explicit (the CSR of A^T built once per call,
 * sla/matrix.h), alternating in this one process R times at each thread
 * count, wall and CPU seconds (CLOCK_PROCESS_CPUTIME_ID, less sensitive to
 * other processes on a loaded machine than wall time) and their medians,
 * the ratio scatter / explicit, and the extra memory of the transpose.
 * The main table's sla rows use the default (transpose = auto).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_tomo.h"

#define MAXT 4
#define MAXR 16
#define MAXK 64

static struct {
    long rows, grid;
    double seg, tol, quiet_pct, quiet_wait, waited;
    unsigned long long seed;
    int k, reps, retries, threads[MAXT], nthreads, scipy, treps;
    const char *python, *script, *tmp, *json;
} G = {
    .rows = 100000,
    .seg = 8.0,
    .seed = 1,
    .k = 10,
    .reps = 3,
    .treps = 3,
    .retries = 1,
    .threads = {1, 2},
    .nthreads = 2,
    .scipy = 1,
    .quiet_pct = 15.0,
    .quiet_wait = 30.0,
    .python = "/usr/bin/python3",
    .script = "bench/scipy_svds.py",
    .tmp = "bench/out",
    .json = "bench/out/svds.json",
};

typedef struct {
    char solver[8], method[48], why[200];
    int threads, nrep, failed, disturbed, tries[MAXR];
    double t[MAXR], load[MAXR], median_s, max_load;
    double s[MAXK], max_res_v, max_res_u, s_rel_diff;
    long iterations, nops;
} config;

static int sla_once(sla_ctx *ctx, const sla_matrix *A, const double *v0, config *C, int r)
{
    sla_ctx_set_threads(ctx, C->threads);
    sla_svds_options o;
    sla_svds_options_default(&o);
    o.k = G.k;
    o.which = SLA_SVDS_LM;
    o.tol = G.tol;
    o.v0 = v0;
    sla_svds_info info;
    load_mark l0 = load_now();
    double t0 = now();
    sla_status st = sla_svds(ctx, A, 0, &o, C->s, NULL, NULL, &info);
    double t = now() - t0;
    C->load[r] = other_load_pct(l0, load_now());
    if (st < 0) {
        C->failed = 1;
        snprintf(C->why, sizeof C->why, "%s: %.170s", sla_status_name(st), sla_ctx_message(ctx));
        return -1;
    }
    if (st == SLA_NOT_CONVERGED) {
        C->failed = 1;
        snprintf(C->why, sizeof C->why, "not converged: %lld of %d triplets (%s)", (long long)info.nconv, G.k,
                 info.reason);
        return -1;
    }
    C->t[r] = t;
    C->iterations = (long)info.iterations;
    C->nops = (long)info.nops;
    C->max_res_v = info.max_residual_v;
    C->max_res_u = info.max_residual_u;
    snprintf(C->method, sizeof C->method, "%s", info.method);
    return 0;
}

static int scipy_once(tomo_coproc *py, config *C, int r)
{
    char cmd[128], line[16384];
    snprintf(cmd, sizeof cmd, "svds %d %.17g", G.k, G.tol);
    if (tomo_coproc_ask(py, cmd, line, sizeof line) || strstr(line, "\"error\"")) {
        C->failed = 1;
        snprintf(C->why, sizeof C->why, "scipy: %.180s", line);
        return -1;
    }
    C->t[r] = tomo_json_num(line, "seconds");
    C->load[r] = tomo_json_num(line, "other_load_pct");
    C->max_res_v = tomo_json_num(line, "max_residual_v");
    C->max_res_u = tomo_json_num(line, "max_residual_u");
    if (!isfinite(C->load[r])) C->load[r] = -1.0;
    if (!isfinite(C->t[r]) || tomo_json_list(line, "s", C->s, MAXK) != G.k) {
        C->failed = 1;
        snprintf(C->why, sizeof C->why, "scipy: incomplete answer %.150s", line);
        return -1;
    }
    snprintf(C->method, sizeof C->method, "svds arpack on A^T A");
    return 0;
}

static int measure(sla_ctx *ctx, tomo_coproc *py, const sla_matrix *A, const double *v0, config *C, int r)
{
    double best_t = 0, best_load = INFINITY;
    int tries = 0;
    for (;;) {
        double w0 = now();
        tomo_wait_quiet(G.quiet_wait, G.quiet_pct);
        G.waited += now() - w0;
        if (py ? scipy_once(py, C, r) : sla_once(ctx, A, v0, C, r)) return -1;
        tries++;
        if (C->load[r] < best_load) best_t = C->t[r], best_load = C->load[r];
        if (best_load <= G.quiet_pct || tries > G.retries) break;
        fprintf(stderr, "  %s %dT: %.1f %% other load, measuring again\n", C->solver, C->threads, C->load[r]);
    }
    C->t[r] = best_t;
    C->load[r] = best_load;
    C->tries[r] = tries;
    C->nrep = r + 1;
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: sla_bench_svds [--rows 100000] [--grid P] [--seg 8] [--seed 1] [--k 10] [--tol 0]\n"
                    "  [--reps 3] [--threads 1,2] [--retries 1] [--quiet-pct 15] [--quiet-wait 30]\n"
                    "  [--python /usr/bin/python3] [--script bench/scipy_svds.py] [--tmp bench/out]\n"
                    "  [--json bench/out/svds.json] [--no-scipy] [--transpose-reps 3]\n");
}

static int parse_args(int argc, char **argv)
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
        else if (!strcmp(a, "--seed")) G.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--k")) G.k = atoi(v), bad = G.k < 1 || G.k > MAXK;
        else if (!strcmp(a, "--tol")) G.tol = atof(v), bad = !(G.tol >= 0);
        else if (!strcmp(a, "--reps")) G.reps = atoi(v), bad = G.reps < 1 || G.reps > MAXR;
        else if (!strcmp(a, "--retries")) G.retries = atoi(v), bad = G.retries < 0;
        else if (!strcmp(a, "--transpose-reps")) G.treps = atoi(v), bad = G.treps < 0 || G.treps > MAXR;
        else if (!strcmp(a, "--quiet-pct")) G.quiet_pct = atof(v);
        else if (!strcmp(a, "--quiet-wait")) G.quiet_wait = atof(v);
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
            return -1;
        }
        i++;
    }
    return 0;
}

static void json_config(FILE *f, const config *C)
{
    fprintf(f, "  {\"solver\": \"%s\", \"threads\": %d, \"failed\": %s", C->solver, C->threads,
            C->failed ? "true" : "false");
    if (C->failed) {
        fprintf(f, ", \"why\": \"");
        for (const char *s = C->why; *s; s++) fputc(*s == '"' || *s == '\\' ? '\'' : *s, f);
        fprintf(f, "\"}");
        return;
    }
    fprintf(f, ", \"method\": \"%s\", \"median_s\": %.6g, \"times_s\": [", C->method, C->median_s);
    for (int r = 0; r < C->nrep; r++) fprintf(f, "%s%.6g", r ? ", " : "", C->t[r]);
    fprintf(f, "], \"other_load_pct\": [");
    for (int r = 0; r < C->nrep; r++) fprintf(f, "%s%.1f", r ? ", " : "", C->load[r]);
    fprintf(f, "], \"tries\": [");
    for (int r = 0; r < C->nrep; r++) fprintf(f, "%s%d", r ? ", " : "", C->tries[r]);
    fprintf(f, "], \"max_other_load_pct\": %.1f, \"disturbed\": %d, \"restarts\": %ld, \"operator_applications\": %ld, "
               "\"max_residual_v\": %.3g, \"max_residual_u\": %.3g, \"s_max_rel_diff\": %.3g, \"s\": [",
            C->max_load, C->disturbed, C->iterations, C->nops, C->max_res_v, C->max_res_u, C->s_rel_diff);
    for (int i = 0; i < G.k; i++) fprintf(f, "%s%.17g", i ? ", " : "", C->s[i]);
    fprintf(f, "]}");
}

/* ---- A^T products: explicit transpose against scatter ------------------------- */

typedef struct {
    double wall[MAXR], cpu[MAXR], load[MAXR], s0;
    long nops;
    int failed;
} tcase;

/* Scatter and explicit alternating (ABAB) at each thread count; the table
 * to stdout, the rows into f (JSON, may be NULL). */
static void part_transpose(sla_ctx *ctx, const sla_matrix *A, const double *v0, long nnz, long ncols, FILE *f)
{
    static const sla_transpose_mode modes[2] = {SLA_TRANSPOSE_SCATTER, SLA_TRANSPOSE_EXPLICIT};
    static const char *const names[2] = {"scatter", "explicit"};
    double extra_mb = ((double)nnz * 12.0 + (double)(ncols + 1) * 8.0) / 1e6;
    printf("\n## svds A^T products: explicit transpose against scatter (%d alternating runs each, one process)\n\n",
           G.treps);
    printf("| threads | A^T by | median wall s | median CPU s | CPU scatter / explicit | products | s_max | "
           "max other load |\n|---|---|---|---|---|---|---|---|\n");
    if (f) fprintf(f, ",\n \"transpose\": {\"extra_memory_mb\": %.3f, \"runs\": [\n", extra_mb);
    for (int it = 0; it < G.nthreads; it++) {
        tcase T[2];
        memset(T, 0, sizeof T);
        sla_ctx_set_threads(ctx, G.threads[it]);
        for (int r = 0; r < G.treps; r++)
            for (int mi = 0; mi < 2; mi++) {
                if (T[mi].failed) continue;
                sla_svds_options o;
                sla_svds_options_default(&o);
                o.k = G.k;
                o.tol = G.tol;
                o.v0 = v0;
                o.transpose = modes[mi];
                double s[MAXK];
                sla_svds_info info;
                tomo_wait_quiet(G.quiet_wait, G.quiet_pct);
                load_mark l0 = load_now();
                double w0 = now(), c0 = cpu_now();
                sla_status st = sla_svds(ctx, A, 0, &o, s, NULL, NULL, &info);
                T[mi].cpu[r] = cpu_now() - c0;
                T[mi].wall[r] = now() - w0;
                T[mi].load[r] = other_load_pct(l0, load_now());
                if (st != SLA_OK) {
                    T[mi].failed = 1;
                    fprintf(stderr, "  svds transpose=%s failed: %s\n", names[mi], sla_ctx_message(ctx));
                    continue;
                }
                T[mi].s0 = s[0];
                T[mi].nops = (long)info.nops;
                fprintf(stderr, "  rep %d %dT transpose=%-8s: %.3f s wall, %.3f s CPU, other load %.0f %%\n", r,
                        G.threads[it], names[mi], T[mi].wall[r], T[mi].cpu[r], T[mi].load[r]);
            }
        for (int mi = 0; mi < 2; mi++) {
            if (T[mi].failed) {
                printf("| %d | %s | failed |\n", G.threads[it], names[mi]);
                continue;
            }
            double mw = median(T[mi].wall, G.treps), mc = median(T[mi].cpu, G.treps), ml = 0.0;
            for (int r = 0; r < G.treps; r++) ml = fmax(ml, T[mi].load[r]);
            char ratio[32] = "-";
            if (mi == 1 && !T[0].failed) snprintf(ratio, sizeof ratio, "%.2fx", median(T[0].cpu, G.treps) / mc);
            printf("| %d | %s | %.3f | %.3f | %s | %ld | %.12g | %.0f %% |\n", G.threads[it], names[mi], mw, mc, ratio,
                   T[mi].nops, T[mi].s0, ml);
            if (f)
                fprintf(f, "%s  {\"threads\": %d, \"transpose\": \"%s\", \"median_wall_s\": %.6g, "
                           "\"median_cpu_s\": %.6g, \"products\": %ld, \"max_other_load_pct\": %.1f}",
                        it || mi ? ",\n" : "", G.threads[it], names[mi], mw, mc, T[mi].nops, ml);
        }
    }
    printf("\nThe explicit transpose holds %.1f MB more (nnz values and indices, n + 1 row pointers).\n", extra_mb);
    if (f) fprintf(f, "\n ]}");
}

int main(int argc, char **argv)
{
    if (parse_args(argc, argv)) return 2;
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx)) return 1;
    double t_start = now();
    long P = G.grid > 0 ? G.grid : (long)llround(sqrt((double)G.rows / 2.0));
    tomo_csr T;
    if (tomo_generate(G.rows, P, G.seg, G.seed, &T)) return 1;
    long q = T.m < T.n ? T.m : T.n;
    if (G.k >= q) {
        fprintf(stderr, "bench_svds: k = %d must be below min(m, n) = %ld\n", G.k, q);
        return 2;
    }
    double *v0 = malloc((size_t)q * sizeof *v0);
    tomo_rng g = {G.seed ^ 0x2545f4914f6cdd1dULL};
    for (long i = 0; i < q; i++) v0[i] = tomo_normal(&g);
    sla_matrix *A = NULL;
    if (tomo_to_sla(ctx, &T, &A)) {
        fprintf(stderr, "bench_svds: %s\n", sla_ctx_message(ctx));
        return 1;
    }
    fprintf(stderr, "problem: %ld x %ld (grid %ld^2), nnz %ld, k = %d\n", T.m, T.n, P, T.nnz, G.k);
    char file[600], ready[1024] = "";
    snprintf(file, sizeof file, "%s/svds_A.bin", G.tmp);
    tomo_coproc py_, *py = NULL;
    if (G.scipy) {
        char *pargv[] = {(char *)G.python, (char *)G.script, "serve", "--file", file, NULL};
        if (tomo_write(file, &T, v0, q)) fprintf(stderr, "bench_svds: cannot write %s (SciPy left out)\n", file);
        else if (tomo_coproc_start(&py_, pargv) || tomo_coproc_ask(&py_, NULL, ready, sizeof ready)) {
            fprintf(stderr, "bench_svds: %s %s did not start (SciPy left out)\n", G.python, G.script);
            tomo_coproc_stop(&py_);
        } else py = &py_;
    }
    config C[MAXT + 1];
    memset(C, 0, sizeof C);
    int nc = G.nthreads + (py != NULL);
    for (int c = 0; c < nc; c++) {
        snprintf(C[c].solver, sizeof C[c].solver, "%s", c < G.nthreads ? "sla" : "scipy");
        C[c].threads = c < G.nthreads ? G.threads[c] : 1;
    }
    for (int r = 0; r < G.reps; r++)
        for (int c = 0; c < nc; c++) {
            if (C[c].failed) continue;
            if (measure(ctx, c < G.nthreads ? NULL : py, A, v0, &C[c], r))
                fprintf(stderr, "  %s failed: %s\n", C[c].solver, C[c].why);
            else
                fprintf(stderr, "  rep %d %-5s %dT: %.3f s, s_max %.15g, other load %.0f %%\n", r, C[c].solver,
                        C[c].threads, C[c].t[r], C[c].s[0], C[c].load[r]);
        }
    if (py) tomo_coproc_stop(py);
    if (G.scipy) remove(file);
    const config *S = py && !C[G.nthreads].failed ? &C[G.nthreads] : NULL;
    for (int c = 0; c < nc; c++) {
        config *X = &C[c];
        X->median_s = median(X->t, X->nrep);
        for (int r = 0; r < X->nrep; r++) {
            X->max_load = fmax(X->max_load, X->load[r]);
            X->disturbed += X->load[r] > G.quiet_pct;
        }
        if (S && c < G.nthreads)
            for (int i = 0; i < G.k; i++) X->s_rel_diff = fmax(X->s_rel_diff, fabs(X->s[i] - S->s[i]) / S->s[i]);
    }
    printf("## svds, the %d largest singular triplets (ARPACK on A^T A, same v0, tol %g): %ld x %ld, nnz %ld\n\n",
           G.k, G.tol, T.m, T.n, T.nnz);
    printf("| solver | threads | median s | SciPy / sla | restarts | products | s_max | s_%d | max rel. diff of s to "
           "SciPy | max ||A v - s u|| | max ||A^T u - s v|| | other load | tries |\n",
           G.k);
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    int agree = 1;
    for (int c = 0; c < nc; c++) {
        const config *X = &C[c];
        if (X->failed) {
            printf("| %s | %d | failed: %s |\n", X->solver, X->threads, X->why);
            continue;
        }
        int tries = 0;
        for (int r = 0; r < X->nrep; r++) tries += X->tries[r];
        char ratio[32] = "-", sd[32] = "-", its[32] = "-", ops[32] = "-";
        if (S && c < G.nthreads) {
            snprintf(ratio, sizeof ratio, "%.2fx", S->median_s / X->median_s);
            snprintf(sd, sizeof sd, "%.1e", X->s_rel_diff);
            agree &= X->s_rel_diff <= 1e-8;
        }
        if (c < G.nthreads) snprintf(its, sizeof its, "%ld", X->iterations), snprintf(ops, sizeof ops, "%ld", X->nops);
        printf("| %s | %d | %.3f | %s | %s | %s | %.12g | %.12g | %s | %.2e | %.2e | %.0f %%%s | %d/%d |\n", X->solver,
               X->threads, X->median_s, ratio, its, ops, X->s[0], X->s[G.k - 1], sd, X->max_res_v, X->max_res_u,
               X->max_load, X->disturbed ? "*" : "", tries, X->nrep);
    }
    FILE *tf = NULL;
    char tjson[700] = "";
    if (G.treps > 0 && G.json) {
        snprintf(tjson, sizeof tjson, "%s.transpose", G.json);
        tf = fopen(tjson, "w+");
    }
    if (G.treps > 0) part_transpose(ctx, A, v0, T.nnz, T.n, tf);
    double total = now() - t_start;
    printf("\nWhole run: %.0f s (of which %.0f s waiting for other processes to go quiet)\n", total, G.waited);
    if (!agree) fprintf(stderr, "bench_svds: sla and SciPy singular values differ by more than 1e-8\n");
    if (G.json) {
        FILE *f = fopen(G.json, "w");
        if (f) {
            char ver[64] = "";
            tomo_json_str(ready, "scipy", ver, sizeof ver);
            fprintf(f, "{\"problem\": {\"kind\": \"short-ray tomography\", \"m\": %ld, \"n\": %ld, \"grid\": %ld, "
                       "\"nnz\": %ld, \"seg\": %g, \"seed\": %llu},\n \"k\": %d, \"tol\": %g, \"reps\": %d, "
                       "\"retries\": %d, \"quiet_pct\": %g, \"scipy_version\": \"%s\", \"agree_1e-8\": %s, "
                       "\"total_s\": %.1f, \"waited_s\": %.1f,\n \"runs\": [\n",
                    T.m, T.n, P, T.nnz, G.seg, G.seed, G.k, G.tol, G.reps, G.retries, G.quiet_pct, ver,
                    S ? (agree ? "true" : "false") : "null", total, G.waited);
            for (int c = 0; c < nc; c++) {
                json_config(f, &C[c]);
                fprintf(f, "%s\n", c + 1 < nc ? "," : "");
            }
            fprintf(f, " ]");
            if (tf) { /* the A^T part, held in a side file until here */
                rewind(tf);
                int ch;
                while ((ch = fgetc(tf)) != EOF) fputc(ch, f);
            }
            fprintf(f, "\n}\n");
            fclose(f);
            fprintf(stderr, "wrote %s\n", G.json);
        }
    }
    if (tf) {
        fclose(tf);
        remove(tjson);
    }
    free(v0);
    sla_matrix_destroy(&A);
    tomo_free(&T);
    sla_ctx_destroy(&ctx);
    return 0;
}
