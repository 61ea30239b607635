/* bench_zequil — what complex equilibration costs: set-up (sla_solver_create)
 * of complex Krylov solvers with equilibrate=auto against equilibrate=off,
 * side by side, on the 2-D Helmholtz matrix as generated (no scaling
 * needed: auto only scans the values and keeps K = A) and with its rows
 * and columns scaled D A D by 2^{-250, 0, 250} (auto builds K), plus one
 * solve of the scaled problem each way (time, iterations, true residual).
 *
 *   sla_bench_zequil [--sizes 1000] [--methods cocg:jacobi,cocg:ilu0,gmres:ilu0]
 *                    [--reps 5] [--threads 1] [--json FILE]
 *
 * Each time is the median of --reps; "other" is the share of the CPUs other
 * processes used meanwhile (a loaded machine makes small differences
 * meaningless).
 */
#include <sla.h>

#include <complex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

typedef double _Complex zc;

static double create_time(sla_ctx *ctx, const sla_matrix *A, const char *spec, int reps)
{
    double *t = malloc((size_t)reps * sizeof *t);
    for (int r = 0; r < reps; r++) {
        sla_solver_options o;
        sla_solver_options_default(&o);
        sla_solver *S = NULL;
        if (sla_solver_options_parse(ctx, spec, &o)) return -1.0;
        double t0 = now();
        sla_status st = sla_solver_create(ctx, A, &o, &S);
        t[r] = now() - t0;
        sla_solver_destroy(&S);
        if (st) {
            fprintf(stderr, "%s: %s\n", spec, sla_ctx_message(ctx));
            free(t);
            return -1.0;
        }
    }
    double m = median(t, reps);
    free(t);
    return m;
}

int main(int argc, char **argv)
{
    const char *sizes = "1000", *methods = "cocg:jacobi,cocg:ilu0,gmres:ilu0", *json = NULL;
    int reps = 5, threads = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--sizes")) sizes = argv[i + 1];
        else if (!strcmp(argv[i], "--methods")) methods = argv[i + 1];
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--json")) json = argv[i + 1];
        else {
            fprintf(stderr, "unknown flag %s\n", argv[i]);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx)) return 1;
    sla_ctx_set_threads(ctx, threads);
    FILE *jf = json ? fopen(json, "w") : NULL;
    if (jf) fprintf(jf, "[\n");
    int first = 1;
    printf("%8s %10s %-14s %-9s | %12s %12s %7s | %10s %6s %9s | %10s %6s %9s | %6s\n", "n", "nnz", "method",
           "matrix", "create auto", "create off", "ratio", "solve auto", "its", "residual", "solve off",
           "its", "residual", "other");
    char sz[256];
    snprintf(sz, sizeof sz, "%s", sizes);
    for (char *s = strtok(sz, ","); s; s = strtok(NULL, ",")) {
        sla_int N = atoll(s);
        sla_matrix *A = NULL;
        if (sla_gen_helmholtz2d(ctx, N, 20.0, 0.1, &A)) {
            fprintf(stderr, "%s\n", sla_ctx_message(ctx));
            return 1;
        }
        sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
        const sla_int *rp = sla_matrix_rowptr(A);
        sla_int *ci = malloc((size_t)nnz * sizeof *ci);
        sla_matrix_get_colind(A, ci);
        zc *v0 = malloc((size_t)nnz * sizeof *v0), *v = malloc((size_t)nnz * sizeof *v);
        memcpy(v0, sla_matrix_values(A, 0), (size_t)nnz * sizeof *v0);
        for (sla_int i = 0; i < n; i++) /* D A D, d_i = 2^{-250, 0, 250} */
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) {
                int e = (int)(i % 3 - 1) * 250 + (int)(ci[p] % 3 - 1) * 250;
                v[p] = ldexp(creal(v0[p]), e) + ldexp(cimag(v0[p]), e) * I;
            }
        zc *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
        for (sla_int i = 0; i < n; i++) b[i] = ldexp(1.0, (int)(i % 3 - 1) * 250);
        char ms[256];
        snprintf(ms, sizeof ms, "%s", methods);
        char *save = NULL;
        for (char *m = strtok_r(ms, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
            char meth[64], pc[64] = "none";
            if (sscanf(m, "%63[^:]:%63s", meth, pc) < 1) continue;
            for (int scaled = 0; scaled < 2; scaled++) {
                sla_matrix_set_values(ctx, A, 0, scaled ? v : v0);
                char spec[2][160];
                for (int e = 0; e < 2; e++)
                    snprintf(spec[e], sizeof spec[e], "method=%s,precond=%s,rtol=1e-10,maxiter=2000,equilibrate=%s",
                             meth, pc, e ? "off" : "auto");
                load_mark l0 = load_now();
                double ta = create_time(ctx, A, spec[0], reps), to = create_time(ctx, A, spec[1], reps);
                double st_[2] = {-1, -1}, res[2] = {-1, -1};
                long long its[2] = {-1, -1};
                for (int e = 0; scaled && e < 2; e++) {
                    sla_solver_options o;
                    sla_solver_options_default(&o);
                    sla_solver_options_parse(ctx, spec[e], &o);
                    sla_solver *S = NULL;
                    if (sla_solver_create(ctx, A, &o, &S)) continue;
                    sla_solve_info info;
                    double t0 = now();
                    sla_zsolver_solve(ctx, S, 0, SLA_OP_N, (const sla_complex *)b, (sla_complex *)x, &info);
                    st_[e] = now() - t0;
                    its[e] = (long long)info.iterations;
                    res[e] = info.residual;
                    sla_solver_destroy(&S);
                }
                double other = other_load_pct(l0, load_now());
                printf("%8lld %10lld %-14s %-9s | %11.4fs %11.4fs %7.3f | ", (long long)n, (long long)nnz, m,
                       scaled ? "D A D" : "as is", ta, to, to > 0 ? ta / to : 0.0);
                if (scaled)
                    printf("%9.3fs %6lld %9.2e | %9.3fs %6lld %9.2e | ", st_[0], its[0], res[0], st_[1], its[1], res[1]);
                else
                    printf("%10s %6s %9s | %10s %6s %9s | ", "-", "-", "-", "-", "-", "-");
                printf("%5.0f%%\n", other);
                if (jf) {
                    fprintf(jf, "%s  {\"n\":%lld,\"nnz\":%lld,\"method\":\"%s\",\"scaled\":%s,\"create_auto\":%.6g,"
                            "\"create_off\":%.6g,\"solve_auto\":%.6g,\"its_auto\":%lld,\"residual_auto\":%.6g,"
                            "\"solve_off\":%.6g,\"its_off\":%lld,\"residual_off\":%.6g,\"other_load_pct\":%.1f}",
                            first ? "" : ",\n", (long long)n, (long long)nnz, m, scaled ? "true" : "false", ta, to,
                            st_[0], its[0], res[0], st_[1], its[1], res[1], other);
                    first = 0;
                }
            }
        }
        free(ci);
        free(v0);
        free(v);
        free(b);
        free(x);
        sla_matrix_destroy(&A);
    }
    if (jf) {
        fprintf(jf, "\n]\n");
        fclose(jf);
    }
    sla_ctx_destroy(&ctx);
    return 0;
}
