/* bench_spgemm — the C floor of SpGEMM C = A A (issue 19): the symbolic
 * phase (C's pattern), the numeric phase on that pattern (the cached,
 * training-loop case), the two together, and sla_spgemm (both in one
 * pass over the products, the first product's path), timed at each
 * thread count, so the Python binding's time (bench/bench_spgemm.py) can be
 * split into kernel and overhead.
 *
 *   sla_bench_spgemm [--N 1000] [--reps 5] [--threads 1,2] [--scipy S]
 *
 * --scipy S: SciPy's time for A @ A in seconds (bench/bench_spgemm.py
 * prints it), to print the ratios SciPy / sla of the fused product and of
 * the numeric phase (above 1: sla is faster).
 *
 * Problem: 2-D Poisson on an N x N grid (n = N^2, nnz(A) = 5n - 4N). The
 * numeric phase writes into a caller's array (as Python does). Prints a
 * table (medians and minima over reps, and the other processes' share of
 * the CPUs while measured) and one JSON line per thread count.
 */
#include <sla.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define MAX_REPS 64

static int fail(sla_ctx *ctx, const char *what, sla_status st)
{
    fprintf(stderr, "bench_spgemm: %s: %s: %s\n", what, sla_status_name(st), sla_ctx_message(ctx));
    return 1;
}

int main(int argc, char **argv)
{
    long N = 1000;
    int reps = 5;
    const char *threads = "1,2";
    double scipy = 0.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--N")) N = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = argv[i + 1];
        else if (!strcmp(argv[i], "--scipy")) scipy = atof(argv[i + 1]);
        else {
            fprintf(stderr, "bench_spgemm: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (N < 2 || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "bench_spgemm: need --N >= 2 and 1 <= --reps <= %d\n", MAX_REPS);
        return 2;
    }
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    sla_matrix *A = NULL, *C = NULL;
    sla_status st = sla_gen_poisson(ctx, 2, N, &A);
    if (st != SLA_OK) return fail(ctx, "poisson", st);
    st = sla_spgemm_symbolic(ctx, A, A, &C);
    if (st != SLA_OK) return fail(ctx, "symbolic", st);
    sla_int n = sla_matrix_nrows(A), nnzC = sla_matrix_nnz(C);
    double *cv = malloc(sizeof(double) * (size_t)(nnzC > 0 ? nnzC : 1));
    if (!cv) return 1;
    sla_matrix_destroy(&C);
    printf("SpGEMM C = A A, 2-D Poisson N=%ld: n=%lld nnz(A)=%lld nnz(C)=%lld, %d reps\n", N,
           (long long)n, (long long)sla_matrix_nnz(A), (long long)nnzC, reps);
    printf("| threads | symbolic med (min) s | numeric med (min) s | symbolic+numeric med (min) s"
           " | sla_spgemm (fused) med (min) s | CPU s: symbolic, numeric, fused | other load %% |\n"
           "|---|---|---|---|---|---|---|\n");
    for (const char *tok = threads; *tok;
         tok += strcspn(tok, ",") + (tok[strcspn(tok, ",")] != 0)) {
        int nt = atoi(tok);
        if (nt < 1) continue;
        sla_ctx_set_threads(ctx, nt);
        double ts[MAX_REPS], tn[MAX_REPS], tf[MAX_REPS], tu[MAX_REPS];
        double cs[MAX_REPS], cn[MAX_REPS], cu[MAX_REPS]; /* CPU seconds */
        load_mark l0 = load_now();
        for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
            double c0 = cpu_now(), t0 = now();
            st = sla_spgemm_symbolic(ctx, A, A, &C);
            double t1 = now(), c1 = cpu_now();
            if (st != SLA_OK) return fail(ctx, "symbolic", st);
            st = sla_spgemm_numeric(ctx, A, A, C, cv);
            double t2 = now();
            if (st != SLA_OK) return fail(ctx, "numeric", st);
            double c3 = cpu_now(), t3 = now();
            st = sla_spgemm_numeric(ctx, A, A, C, cv);
            double t4 = now(), c4 = cpu_now();
            if (st != SLA_OK) return fail(ctx, "numeric", st);
            sla_matrix_destroy(&C);
            double c5 = cpu_now(), t5 = now();
            st = sla_spgemm(ctx, A, A, &C);
            double t6 = now(), c6 = cpu_now();
            if (st != SLA_OK) return fail(ctx, "sla_spgemm", st);
            sla_matrix_destroy(&C);
            if (r >= 0) {
                tu[r] = t6 - t5;
                cs[r] = c1 - c0;
                cn[r] = c4 - c3;
                cu[r] = c6 - c5;
                ts[r] = t1 - t0;
                tf[r] = t2 - t0;
                tn[r] = t4 - t3;
            }
        }
        double other = other_load_pct(l0, load_now());
        double mins[4] = {ts[0], tn[0], tf[0], tu[0]};
        for (int r = 1; r < reps; r++) {
            mins[3] = fmin(mins[3], tu[r]);
            mins[0] = fmin(mins[0], ts[r]);
            mins[1] = fmin(mins[1], tn[r]);
            mins[2] = fmin(mins[2], tf[r]);
        }
        printf("| %d | %.4f (%.4f) | %.4f (%.4f) | %.4f (%.4f) | %.4f (%.4f) | %.4f, %.4f, %.4f"
               " | %.0f |\n", nt, median(ts, reps), mins[0], median(tn, reps), mins[1],
               median(tf, reps), mins[2], median(tu, reps), mins[3], median(cs, reps),
               median(cn, reps), median(cu, reps), other);
        printf("{\"bench\": \"spgemm\", \"N\": %ld, \"n\": %lld, \"nnzC\": %lld, \"threads\": %d, "
               "\"symbolic_s\": %.5f, \"numeric_s\": %.5f, \"full_s\": %.5f, "
               "\"fused_s\": %.5f, \"cpu_symbolic_s\": %.5f, \"cpu_numeric_s\": %.5f, "
               "\"cpu_fused_s\": %.5f, \"other_load_pct\": %.0f}\n",
               N, (long long)n, (long long)nnzC, nt, median(ts, reps), median(tn, reps),
               median(tf, reps), median(tu, reps), median(cs, reps), median(cn, reps),
               median(cu, reps), other);
        if (scipy > 0)
            printf("SciPy %.4f s / sla, %d thread%s: fused (first product) %.2fx, numeric %.2fx\n",
                   scipy, nt, nt > 1 ? "s" : "", scipy / median(tu, reps),
                   scipy / median(tn, reps));
    }
    free(cv);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
    return 0;
}
