/* bench_helmholtz — complex solves on 2-D Helmholtz with absorption, sla's
 * methods against SciPy's spsolve, in one run.
 *
 *   sla_bench_helmholtz [--sizes 316,1000] [--ppw 10] [--alpha 0.1]
 *                       [--methods auto,umfpack,superlu,klu,gmres:ilu0,cocg:ilu0,bicgstab:ilu0]
 *                       (method[:precond][@ordering], e.g. umfpack@metis)
 *                       [--reps 3] [--max-run 60] [--rtol 1e-8] [--threads 2]
 *                       [--scipy 1] [--python /usr/bin/python3]
 *                       [--scipy-script bench/scipy_helmholtz.py] [--json FILE]
 *
 * Problem: sla_gen_helmholtz2d(N, k, alpha), the 5-point Laplacian minus
 * (k h)^2 (1 + i alpha) on an N x N grid (n = N^2, complex symmetric, not
 * Hermitian), with k chosen for --ppw grid points per wavelength (k h =
 * 2 pi / ppw, so the problem stays equally resolved as N grows), b = ones.
 * Each row: time to solution (sla_solver_create, i.e. analysis and
 * factorization or preconditioner set-up, plus one sla_zsolver_solve;
 * generation excluded), median of --reps, the true relative residual
 * ||b - A x|| / ||b||, iterations (refinement steps for direct methods),
 * what auto chose (with the ordering a direct method used, e.g.
 * mumps@amf), the process's CPU seconds (CLOCK_PROCESS_CPUTIME_ID, all its
 * threads; less sensitive to other load than the time, for A/B
 * comparisons on a busy machine), and the share of the CPUs other
 * processes used meanwhile; factor nnz: the entries in the factors the
 * backend reports (0 where it does not; mumps: INFOG(29)). A Krylov configuration that has not
 * converged within --max-run seconds is stopped (time budget) and reported
 * as such. SciPy (bench/scipy_helmholtz.py: the same matrix from kron,
 * spsolve on CSC with default options, i.e. SuperLU with COLAMD) runs at
 * each size right after sla's rows; the table gives sla's ratio to it.
 */
#include <sla.h>

#include <complex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

#define MAXS 16
#define MAXM 16

static int parse_list(const char *s, long *v, int max)
{
    int k = 0;
    while (s && *s && k < max) {
        v[k++] = strtol(s, (char **)&s, 10);
        if (*s == ',') s++;
    }
    return k;
}

typedef struct {
    char name[32];
    char opts[128];
} config;

static int parse_methods(const char *s, config *c, int max)
{
    int k = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *t = strtok(buf, ","); t && k < max; t = strtok(NULL, ",")) {
        snprintf(c[k].name, sizeof c[k].name, "%s", t);
        char *at = strchr(t, '@'); /* method@ordering */
        if (at) *at++ = 0;
        char *colon = strchr(t, ':');
        if (colon) {
            *colon = 0;
            snprintf(c[k].opts, sizeof c[k].opts, "method=%s,precond=%s", t, colon + 1);
        } else {
            snprintf(c[k].opts, sizeof c[k].opts, "method=%s", t);
        }
        if (at) {
            size_t l = strlen(c[k].opts);
            snprintf(c[k].opts + l, sizeof c[k].opts - l, ",ordering=%s", at);
        }
        k++;
    }
    return k;
}

int main(int argc, char **argv)
{
    long sizes[MAXS];
    int ns = parse_list("316,1000", sizes, MAXS);
    double ppw = 10.0, alpha = 0.1, rtol = 1e-8, max_run = 60.0;
    int reps = 3, threads = 2, scipy = 1;
    const char *methods = "auto,umfpack,superlu,klu,gmres:ilu0,cocg:ilu0,bicgstab:ilu0";
    const char *python = "/usr/bin/python3", *script = "bench/scipy_helmholtz.py", *json = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) break;
        if (!strcmp(a, "--sizes")) ns = parse_list(v, sizes, MAXS);
        else if (!strcmp(a, "--ppw")) ppw = atof(v);
        else if (!strcmp(a, "--alpha")) alpha = atof(v);
        else if (!strcmp(a, "--rtol")) rtol = atof(v);
        else if (!strcmp(a, "--max-run")) max_run = atof(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--scipy")) scipy = atoi(v);
        else if (!strcmp(a, "--methods")) methods = v;
        else if (!strcmp(a, "--python")) python = v;
        else if (!strcmp(a, "--scipy-script")) script = v;
        else if (!strcmp(a, "--json")) json = v;
        else {
            fprintf(stderr, "bench_helmholtz: unknown option %s\n", a);
            return 2;
        }
        i++;
    }
    if (reps < 1) reps = 1;
    if (reps > 64) reps = 64;
    config cfg[MAXM];
    int nm = parse_methods(methods, cfg, MAXM);
    FILE *jf = json ? fopen(json, "w") : NULL;
    if (json && !jf) {
        fprintf(stderr, "bench_helmholtz: cannot write %s\n", json);
        return 1;
    }
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx)) return 1;
    sla_ctx_set_threads(ctx, threads);
    printf("| n | k | method | chose | time (s) | vs SciPy | CPU (s) | factor nnz | iterations | rel. residual | other load %% |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int is = 0; is < ns; is++) {
        sla_int N = sizes[is], n = N * N;
        double h = 1.0 / (double)(N + 1), k = 2.0 * 3.141592653589793 / ppw / h;
        sla_matrix *A = NULL;
        if (sla_gen_helmholtz2d(ctx, N, k, alpha, &A)) {
            fprintf(stderr, "gen: %s\n", sla_ctx_message(ctx));
            return 1;
        }
        sla_complex *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
        sla_complex *r = malloc((size_t)n * sizeof *r);
        if (!b || !x || !r) return 1;
        for (sla_int i = 0; i < n; i++) b[i] = 1.0;
        double t_sla[MAXM], res_sla[MAXM], load_sla[MAXM], cpu_sla[MAXM], fnnz_sla[MAXM];
        sla_int it_sla[MAXM];
        char chose[MAXM][64];
        for (int im = 0; im < nm; im++) {
            double t[64], tc[64];
            double load = 0.0;
            int done = 0;
            res_sla[im] = NAN;
            it_sla[im] = -1;
            fnnz_sla[im] = 0.0;
            snprintf(chose[im], sizeof chose[im], "-");
            for (int rr = 0; rr < reps; rr++) {
                sla_solver_options o;
                sla_solver_options_default(&o);
                if (sla_solver_options_parse(ctx, cfg[im].opts, &o)) {
                    fprintf(stderr, "%s: %s\n", cfg[im].name, sla_ctx_message(ctx));
                    break;
                }
                o.rtol = rtol;
                o.max_seconds = max_run;
                load_mark a = load_now();
                double t0 = now(), c0 = cpu_now();
                sla_solver *S = NULL;
                sla_solve_info info;
                sla_status st = sla_solver_create(ctx, A, &o, &S);
                if (st >= 0) st = sla_zsolver_solve(ctx, S, 0, SLA_OP_N, b, x, &info);
                double t1 = now(), c1 = cpu_now();
                load_mark bm = load_now();
                if (st < 0) {
                    fprintf(stderr, "n=%lld %s: %s\n", (long long)n, cfg[im].name, sla_ctx_message(ctx));
                    sla_solver_destroy(&S);
                    break;
                }
                tc[done] = c1 - c0;
                t[done++] = t1 - t0;
                load = fmax(load, other_load_pct(a, bm));
                sla_zmatvec(ctx, A, 0, SLA_OP_N, x, r);
                double rn = 0.0, bn = 0.0;
                for (sla_int i = 0; i < n; i++) {
                    double complex d = b[i] - r[i];
                    rn += creal(d * conj(d));
                    bn += creal(b[i] * conj(b[i]));
                }
                res_sla[im] = sqrt(rn / bn);
                it_sla[im] = info.iterations;
                fnnz_sla[im] = info.factor_nnz;
                snprintf(chose[im], sizeof chose[im], "%s%s%s%s%s", info.method,
                         info.precond[0] && strcmp(info.precond, "none") ? "+" : "",
                         info.precond[0] && strcmp(info.precond, "none") ? info.precond : "",
                         info.ordering[0] ? "@" : "", info.ordering);
                sla_solver_destroy(&S);
                if (st == SLA_NOT_CONVERGED || t1 - t0 > max_run) break; /* one run is enough */
            }
            t_sla[im] = done ? median(t, done) : NAN;
            cpu_sla[im] = done ? median(tc, done) : NAN;
            load_sla[im] = load;
            fprintf(stderr, "n=%lld %-16s %8.3f s  res %.2e  it %lld\n", (long long)n, cfg[im].name,
                    t_sla[im], res_sla[im], (long long)it_sla[im]);
        }
        double t_sp = NAN, res_sp = NAN, load_sp = -1;
        if (scipy) {
            char cmd[1024];
            snprintf(cmd, sizeof cmd, "%s %s --N %lld --k %.17g --alpha %.17g --reps %d", python, script,
                     (long long)N, k, alpha, reps);
            FILE *p = popen(cmd, "r");
            char line[1024];
            if (p) {
                while (fgets(line, sizeof line, p)) {
                    char *q;
                    if ((q = strstr(line, "\"seconds\":"))) t_sp = atof(q + 10);
                    if ((q = strstr(line, "\"residual\":"))) res_sp = atof(q + 11);
                    if ((q = strstr(line, "\"other_load_pct\":"))) load_sp = atof(q + 17);
                }
                pclose(p);
            }
        }
        for (int im = 0; im < nm; im++) {
            printf("| %lld | %.0f | %s | %s | %.3f | %.2fx | %.2f | %.3g | %lld | %.1e | %.0f |\n", (long long)n, k,
                   cfg[im].name, chose[im], t_sla[im], t_sp / t_sla[im], cpu_sla[im], fnnz_sla[im],
                   (long long)it_sla[im],
                   res_sla[im], load_sla[im]);
            if (jf)
                fprintf(jf,
                        "{\"n\": %lld, \"k\": %.6g, \"alpha\": %g, \"method\": \"%s\", \"chose\": \"%s\", "
                        "\"seconds\": %.6g, \"scipy_seconds\": %.6g, \"cpu_seconds\": %.6g, \"factor_nnz\": %.6g, \"iterations\": %lld, "
                        "\"residual\": %.3e, \"other_load_pct\": %.1f}\n",
                        (long long)n, k, alpha, cfg[im].name, chose[im], t_sla[im], t_sp, cpu_sla[im],
                        fnnz_sla[im], (long long)it_sla[im], res_sla[im], load_sla[im]);
        }
        if (scipy) {
            printf("| %lld | %.0f | SciPy spsolve | superlu (colamd) | %.3f | 1.00x | - | - | - | %.1e | %.0f |\n",
                   (long long)n, k, t_sp, res_sp, load_sp);
            if (jf)
                fprintf(jf,
                        "{\"n\": %lld, \"k\": %.6g, \"alpha\": %g, \"method\": \"scipy_spsolve\", "
                        "\"seconds\": %.6g, \"residual\": %.3e, \"other_load_pct\": %.1f}\n",
                        (long long)n, k, alpha, t_sp, res_sp, load_sp);
        }
        fflush(stdout);
        free(b);
        free(x);
        free(r);
        sla_matrix_destroy(&A);
    }
    if (jf) fclose(jf);
    sla_ctx_destroy(&ctx);
    return 0;
}
