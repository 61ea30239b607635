/* bench_selinv — the log-determinant gradient by selected inversion on
 * UMFPACK's LU factor, real and complex, against one solve per column.
 *
 *   sla_bench_selinv [--sizes 100,316] [--ppw 10] [--alpha 0.1] [--reps 3]
 *                    [--cols 64] [--complex-max 0] [--full-max 20000]
 *                    [--threads 2] [--json FILE]
 *
 * Per grid size N (n = N^2), two problems, each factored by UMFPACK
 * (sla_solver_create with method umfpack):
 *  - real: sla_gen_convdiff2d(N, 10, 10) (nonsymmetric), the gradient of
 *    log|det A| by sla_solver_logdet_vjp;
 *  - complex: sla_gen_helmholtz2d(N, k, alpha) with k h = 2 pi / ppw
 *    (complex symmetric), the gradient of log det A by
 *    sla_zsolver_logdet_vjp (selected inversion when the complex backend
 *    has it, else n solves in blocks of 32).
 * Columns: factorization seconds, gradient seconds, their ratio (medians
 * of --reps), and for the complex problem the gradient it replaced, n
 * solves with the same factor (sla__zinv_by_solves, blocks of 32
 * columns): measured in full for n <=
 * --full-max (and its normwise relative difference from the selected
 * inverse's gradient), else --cols columns solved in blocks of 32 and
 * scaled to n ("est."). The last column is the share of the CPUs other
 * processes used meanwhile. --complex-max M skips the complex problem
 * above n = M (0: never). Uses private headers (src/ on the include path).
 */
#include <sla.h>

#include "solvers/zsolver.h" /* the n-solve gradient: sla__zinv_by_solves */

#include <complex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define MAXS 16

typedef struct {
    long N, n, nnz;
    double factor_s, grad_s, naive_s, naive_err, load;
    int naive_measured;
} row;

static int parse_list(const char *s, long *v, int max)
{
    int k = 0;
    while (s && *s && k < max) {
        v[k++] = strtol(s, (char **)&s, 10);
        if (*s == ',') s++;
    }
    return k;
}

static int real_row(sla_ctx *ctx, long N, int reps, row *r)
{
    memset(r, 0, sizeof *r);
    sla_matrix *A = NULL;
    if (sla_gen_convdiff2d(ctx, N, 10.0, 10.0, &A)) return -1;
    r->N = N;
    r->n = (long)sla_matrix_nrows(A);
    r->nnz = (long)sla_matrix_nnz(A);
    double *g = malloc((size_t)r->nnz * sizeof *g), tf[16], tg[16];
    load_mark l0 = load_now();
    for (int k = 0; k < reps; k++) {
        sla_solver_options o;
        sla_solver_options_default(&o);
        o.method = SLA_METHOD_UMFPACK;
        sla_solver *S = NULL;
        double t0 = now();
        double sg, lad;
        if (sla_solver_create(ctx, A, &o, &S) || sla_solver_logdet(ctx, S, 0, &sg, &lad)) {
            fprintf(stderr, "real factor failed: %s\n", sla_ctx_message(ctx));
            return -1;
        }
        double t1 = now();
        if (sla_solver_logdet_vjp(ctx, S, 0, 1.0, NULL, NULL, g, NULL)) {
            fprintf(stderr, "real gradient failed: %s\n", sla_ctx_message(ctx));
            return -1;
        }
        tg[k] = now() - t1;
        tf[k] = t1 - t0;
        sla_solver_destroy(&S);
    }
    r->load = other_load_pct(l0, load_now());
    r->factor_s = median(tf, reps);
    r->grad_s = median(tg, reps);
    free(g);
    sla_matrix_destroy(&A);
    return 0;
}

static int complex_row(sla_ctx *ctx, long N, double ppw, double alpha, int reps, int cols, long full_max,
                       row *r)
{
    memset(r, 0, sizeof *r);
    sla_matrix *A = NULL;
    const double h = 1.0 / (double)(N + 1), kw = 2.0 * 3.141592653589793 / ppw / h;
    if (sla_gen_helmholtz2d(ctx, N, kw, alpha, &A)) return -1;
    r->N = N;
    r->n = (long)sla_matrix_nrows(A);
    r->nnz = (long)sla_matrix_nnz(A);
    const long n = r->n;
    sla_complex *g = malloc((size_t)r->nnz * sizeof *g);
    double tf[16], tg[16];
    load_mark l0 = load_now();
    for (int k = 0; k < reps; k++) {
        sla_solver_options o;
        sla_solver_options_default(&o);
        o.method = SLA_METHOD_UMFPACK;
        sla_solver *S = NULL;
        sla_complex ph;
        double lad;
        double t0 = now();
        if (sla_solver_create(ctx, A, &o, &S) || sla_zsolver_logdet(ctx, S, 0, &ph, &lad)) {
            fprintf(stderr, "complex factor failed: %s\n", sla_ctx_message(ctx));
            return -1;
        }
        double t1 = now();
        if (sla_zsolver_logdet_vjp(ctx, S, 0, 1.0, 0.0, g)) {
            fprintf(stderr, "complex gradient failed: %s\n", sla_ctx_message(ctx));
            return -1;
        }
        tg[k] = now() - t1;
        tf[k] = t1 - t0;
        if (k == 0 && (cols > 0 || n <= full_max)) {
            /* the gradient without selected inversion: n solves with the
             * same factor in blocks of 32 columns (what it did before) */
            const sla__zdirect_ops *ops = NULL;
            void *sym = NULL, *num = NULL;
            if (sla__zsolver_factor(ctx, S, 0, &ops, &sym, &num)) {
                fprintf(stderr, "complex factor failed: %s\n", sla_ctx_message(ctx));
                return -1;
            }
            if (n <= full_max) {
                sla_complex *gn = malloc((size_t)r->nnz * sizeof *gn);
                double s0 = now();
                if (sla__zinv_by_solves(ctx, ops, sym, num, A, gn)) {
                    fprintf(stderr, "n-solve gradient failed: %s\n", sla_ctx_message(ctx));
                    return -1;
                }
                r->naive_s = now() - s0;
                r->naive_measured = 1;
                double num2 = 0.0, den2 = 0.0;
                for (long q = 0; q < r->nnz; q++) {
                    gn[q] = conj(gn[q]); /* the gradient for g_logabs = 1 */
                    num2 += cabs(gn[q] - g[q]) * cabs(gn[q] - g[q]);
                    den2 += cabs(gn[q]) * cabs(gn[q]);
                }
                r->naive_err = sqrt(num2 / den2);
                free(gn);
            } else {
                /* blocks of 32 unit columns as that path solves them,
                 * cols of them (at least one block), scaled to n */
                const long bs = 32, nb = (cols + bs - 1) / bs, stride = n / (nb * bs);
                sla_complex *E = calloc((size_t)(n * bs), sizeof *E), *X = malloc((size_t)(n * bs) * sizeof *X);
                double tsum = 0.0;
                for (long b = 0; b < nb; b++) {
                    for (long c = 0; c < bs; c++) E[c * n + (b * bs + c) * stride] = 1.0;
                    double s0 = now();
                    if (ops->solve(ctx, sym, num, 0, (sla_int)bs, E, (sla_int)n, X, (sla_int)n)) {
                        fprintf(stderr, "solve failed: %s\n", sla_ctx_message(ctx));
                        return -1;
                    }
                    tsum += now() - s0;
                    for (long c = 0; c < bs; c++) E[c * n + (b * bs + c) * stride] = 0.0;
                }
                r->naive_s = tsum / (double)(nb * bs) * (double)n;
                free(E);
                free(X);
            }
        }
        sla_solver_destroy(&S);
    }
    r->load = other_load_pct(l0, load_now());
    r->factor_s = median(tf, reps);
    r->grad_s = median(tg, reps);
    free(g);
    sla_matrix_destroy(&A);
    return 0;
}

int main(int argc, char **argv)
{
    const char *sizes = "100,316", *json = NULL;
    double ppw = 10.0, alpha = 0.1;
    int reps = 3, cols = 64, threads = 2;
    long complex_max = 0, full_max = 20000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "%s: %s needs a value\n", argv[0], a);
            return 2;
        }
        if (!strcmp(a, "--sizes")) sizes = v;
        else if (!strcmp(a, "--ppw")) ppw = atof(v);
        else if (!strcmp(a, "--alpha")) alpha = atof(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--cols")) cols = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--complex-max")) complex_max = atol(v);
        else if (!strcmp(a, "--full-max")) full_max = atol(v);
        else if (!strcmp(a, "--json")) json = v;
        else {
            fprintf(stderr, "usage: %s [--sizes N,N] [--ppw P] [--alpha A] [--reps R] [--cols C] "
                            "[--complex-max M] [--full-max M] [--threads T] [--json F]\n", argv[0]);
            return 2;
        }
        i++;
    }
    if (reps < 1) reps = 1;
    if (reps > 16) reps = 16;
    long Ns[MAXS];
    int ns = parse_list(sizes, Ns, MAXS);
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx)) return 1;
    sla_ctx_set_threads(ctx, threads);
    row rr[MAXS], rz[MAXS];
    printf("logdet gradient on UMFPACK's LU factor, %d threads, median of %d\n", threads, reps);
    printf("| problem | n | nnz | factor s | grad s | grad/factor | n solves s | solves/grad | "
           "rel diff | load %% |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (int s = 0; s < ns; s++) {
        if (real_row(ctx, Ns[s], reps, &rr[s])) return 1;
        const row *r = &rr[s];
        printf("| convdiff2d (real) | %ld | %ld | %.3f | %.3f | %.2f | - | - | - | %.0f |\n", r->n, r->nnz,
               r->factor_s, r->grad_s, r->grad_s / r->factor_s, r->load);
        fflush(stdout);
        rz[s].n = 0;
        if (complex_max > 0 && Ns[s] * Ns[s] > complex_max) continue;
        if (complex_row(ctx, Ns[s], ppw, alpha, reps, cols, full_max, &rz[s])) return 1;
        r = &rz[s];
        char diff[32] = "-";
        if (r->naive_measured) snprintf(diff, sizeof diff, "%.1e", r->naive_err);
        printf("| helmholtz2d (complex) | %ld | %ld | %.3f | %.3f | %.2f | %.2f%s | %.1f | %s | %.0f |\n", r->n,
               r->nnz, r->factor_s, r->grad_s, r->grad_s / r->factor_s, r->naive_s,
               r->naive_measured ? "" : " (est.)", r->naive_s / r->grad_s, diff, r->load);
        fflush(stdout);
    }
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "cannot write %s\n", json);
            return 1;
        }
        fprintf(f, "{\"threads\": %d, \"reps\": %d, \"ppw\": %g, \"alpha\": %g, \"rows\": [", threads, reps, ppw,
                alpha);
        int first = 1;
        for (int s = 0; s < ns; s++)
            for (int t = 0; t < 2; t++) {
                const row *r = t ? &rz[s] : &rr[s];
                if (r->n == 0) continue;
                fprintf(f,
                        "%s{\"problem\": \"%s\", \"n\": %ld, \"nnz\": %ld, \"factor_s\": %.6g, \"grad_s\": %.6g, "
                        "\"naive_s\": %.6g, \"naive_measured\": %d, \"naive_err\": %.3e, \"other_load_pct\": %.1f}",
                        first ? "" : ", ", t ? "helmholtz2d" : "convdiff2d", r->n, r->nnz, r->factor_s,
                        r->grad_s, r->naive_s, r->naive_measured, r->naive_err, r->load);
                first = 0;
            }
        fprintf(f, "]}\n");
        fclose(f);
    }
    sla_ctx_destroy(&ctx);
    return 0;
}
