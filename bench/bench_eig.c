/* Benchmark: log-determinant + exact gradient (selected inversion) and
 * eigsh on 2D Poisson.
 *
 *   sla_bench_eig [--logdet-sizes 128,316,1000] [--reps 3] [--cols 64]
 *                 [--eig-N 350] [--eig-k 6] [--eig-reps 3]
 *                 [--python /usr/bin/python3] [--script bench/scipy_eig.py]
 *                 [--threads 1] [--json out.json] [--no-scipy]
 *
 * logdet: per size, median of reps of (a) the Cholesky factorization
 * (analysis + numeric, sla_solver_create with method=cholesky), (b) the
 * gradient by selected inversion (sla_solver_logdet_vjp), and at the
 * smallest size (c) one solve per column with the same factor, timed on
 * --cols columns and scaled to n columns (the naive gradient), checked
 * against the selected inverse on those columns.
 * eigsh: the 6 smallest eigenpairs of 2D Poisson at N = 350 (n = 122,500)
 * by shift-invert around 0 (sla_eigsh, which = SM), and SciPy's
 * eigsh(A, k=6, sigma=0) in the same run (bench/scipy_eig.py), eigenvalues
 * compared to the analytic ones; and sla_lobpcg (AMG preconditioner, no
 * factorization) on the same problem.
 * Prints a table and, with --json, writes one JSON object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "sla.h"

#define MAXS 8

static int parse_list(const char *s, long *v, int max)
{
    int n = 0;
    while (*s && n < max) {
        v[n++] = strtol(s, (char **)&s, 10);
        if (*s == ',') s++;
    }
    return n;
}

typedef struct {
    long N, n, nnz;
    double factor_s, grad_s, logdet_s, ratio, factor_nnz, logabsdet, other_load;
    double percol_s, naive_s, naive_ratio, naive_err;
    int cols;
} ld_row;

static int bench_logdet(sla_ctx *ctx, long N, int reps, int cols, ld_row *r)
{
    memset(r, 0, sizeof *r);
    sla_matrix *A = NULL;
    if (sla_gen_poisson(ctx, 2, N, &A)) return -1;
    r->N = N;
    r->n = (long)sla_matrix_nrows(A);
    r->nnz = (long)sla_matrix_nnz(A);
    double *g = malloc((size_t)r->nnz * sizeof *g);
    double tf[16], tg[16], tl[16];
    load_mark l0 = load_now();
    for (int k = 0; k < reps; k++) {
        sla_solver_options o;
        sla_solver_options_default(&o);
        o.method = SLA_METHOD_CHOLESKY;
        sla_solver *S = NULL;
        double t0 = now();
        if (sla_solver_create(ctx, A, &o, &S)) {
            fprintf(stderr, "factor failed: %s\n", sla_ctx_message(ctx));
            return -1;
        }
        double t1 = now();
        double sg, lad;
        sla_solver_logdet(ctx, S, 0, &sg, &lad);
        double t2 = now();
        sla_logdet_info info;
        if (sla_solver_logdet_vjp(ctx, S, 0, 1.0, NULL, NULL, g, &info)) {
            fprintf(stderr, "grad failed: %s\n", sla_ctx_message(ctx));
            return -1;
        }
        double t3 = now();
        tf[k] = t1 - t0;
        tl[k] = t2 - t1;
        tg[k] = t3 - t2;
        r->logabsdet = lad;
        if (k == 0 && cols > 0) {
            /* the naive gradient: column i of A^-1 for `cols` columns */
            long n = r->n, c = cols < n ? cols : n;
            double *E = calloc((size_t)(n * c), sizeof *E), *X = malloc((size_t)(n * c) * sizeof *X);
            long stride = n / c;
            for (long j = 0; j < c; j++) E[j * n + j * stride] = 1.0;
            double s0 = now();
            for (long j = 0; j < c; j++) sla_solver_solve(ctx, S, 0, 1, E + j * n, n, X + j * n, n, NULL);
            double s1 = now();
            r->cols = (int)c;
            r->percol_s = (s1 - s0) / (double)c;
            r->naive_s = r->percol_s * (double)n;
            /* the diagonal entries of those columns against the selected inverse */
            const sla_int *rp = sla_matrix_rowptr(A);
            sla_int *ci = malloc((size_t)r->nnz * sizeof *ci);
            sla_matrix_get_colind(A, ci);
            double err = 0.0;
            for (long j = 0; j < c; j++) {
                long i = j * stride;
                for (sla_int p = rp[i]; p < rp[i + 1]; p++)
                    err = fmax(err, fabs(g[p] - X[j * n + ci[p]]) / fabs(X[j * n + i]));
            }
            r->naive_err = err;
            free(ci);
            free(E);
            free(X);
        }
        r->factor_nnz = info.factor_nnz;
        sla_solver_destroy(&S);
    }
    load_mark l1 = load_now();
    r->factor_s = median(tf, reps);
    r->grad_s = median(tg, reps);
    r->logdet_s = median(tl, reps);
    r->ratio = r->grad_s / r->factor_s;
    if (r->naive_s > 0) r->naive_ratio = r->naive_s / r->grad_s;
    r->other_load = other_load_pct(l0, l1);
    free(g);
    sla_matrix_destroy(&A);
    return 0;
}

typedef struct {
    long N, n;
    int k, reps;
    double median_s, factor_s, max_res, max_err, other_load;
    long nops;
    double l[16];
    char method[48];
    int ok;
    /* SciPy */
    int have_scipy;
    double sp_median_s, sp_max_res, sp_max_err, sp_l[16];
    char sp_version[32];
    /* LOBPCG with AMG */
    int have_lobpcg;
    double lob_median_s, lob_max_err, lob_max_res;
    long lob_its, lob_nops;
    char lob_method[80];
} eig_row;

/* The k smallest analytic eigenvalues of 2D Poisson N x N. */
static void poisson_ref(long N, int k, double *ref)
{
    double h = 3.14159265358979323846 / (double)(N + 1);
    long m = N < 64 ? N : 64; /* the k smallest use small modes only */
    double *all = malloc((size_t)(m * m) * sizeof *all);
    for (long i = 0; i < m; i++)
        for (long j = 0; j < m; j++) all[i * m + j] = 4.0 - 2.0 * cos((double)(i + 1) * h) - 2.0 * cos((double)(j + 1) * h);
    qsort(all, (size_t)(m * m), sizeof *all, bench_cmp_double);
    memcpy(ref, all, (size_t)k * sizeof *ref);
    free(all);
}

/* A number after "key": in a one-line JSON object. */
static double json_num(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(line, pat);
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

static int bench_eigsh(sla_ctx *ctx, long N, int k, int reps, const char *python, const char *script, eig_row *r)
{
    memset(r, 0, sizeof *r);
    sla_matrix *A = NULL;
    if (sla_gen_poisson(ctx, 2, N, &A)) return -1;
    r->N = N;
    r->n = (long)sla_matrix_nrows(A);
    r->k = k;
    r->reps = reps;
    sla_eigsh_options o;
    sla_eigsh_options_default(&o);
    o.k = k;
    o.which = SLA_EIG_SM; /* shift-invert around 0 */
    double t[16], tf[16], res[16], ref[16];
    poisson_ref(N, k, ref);
    load_mark l0 = load_now();
    for (int i = 0; i < reps; i++) {
        sla_eigsh_info info;
        double t0 = now();
        sla_status st = sla_eigsh(ctx, A, 0, &o, r->l, NULL, 0, res, &info);
        t[i] = now() - t0;
        if (st) {
            fprintf(stderr, "eigsh failed: %s\n", sla_ctx_message(ctx));
            return -1;
        }
        tf[i] = info.factor_seconds;
        r->nops = (long)info.nops;
        snprintf(r->method, sizeof r->method, "%s", info.method);
        r->max_res = info.max_residual;
    }
    r->other_load = other_load_pct(l0, load_now());
    r->median_s = median(t, reps);
    r->factor_s = median(tf, reps);
    for (int i = 0; i < k; i++) r->max_err = fmax(r->max_err, fabs(r->l[i] - ref[i]));
    /* LOBPCG (no factorization), default preconditioner (AMG when built with hypre) */
    {
        sla_lobpcg_options lo;
        sla_lobpcg_options_default(&lo);
        lo.k = k;
        double tl[16], ll[16], lr[16];
        int okl = 1;
        for (int i = 0; i < reps && okl; i++) {
            sla_eigsh_info info;
            double t0 = now();
            sla_status st = sla_lobpcg(ctx, A, 0, &lo, ll, NULL, 0, lr, &info);
            tl[i] = now() - t0;
            if (st < 0) {
                fprintf(stderr, "lobpcg: %s\n", sla_ctx_message(ctx));
                okl = 0;
                break;
            }
            r->lob_its = (long)info.iterations;
            r->lob_nops = (long)info.nops;
            r->lob_max_res = info.max_residual;
            snprintf(r->lob_method, sizeof r->lob_method, "%s%s", info.method, st ? " NOT CONVERGED" : "");
        }
        if (okl) {
            r->have_lobpcg = 1;
            r->lob_median_s = median(tl, reps);
            for (int i = 0; i < k; i++) r->lob_max_err = fmax(r->lob_max_err, fabs(ll[i] - ref[i]));
        }
    }
    sla_matrix_destroy(&A);
    if (python && script) {
        char cmd[1024], line[8192];
        snprintf(cmd, sizeof cmd, "%s %s --N %ld --k %d --reps %d", python, script, N, k, reps);
        FILE *p = popen(cmd, "r");
        if (p && fgets(line, sizeof line, p)) {
            r->have_scipy = 1;
            r->sp_median_s = json_num(line, "median_s");
            r->sp_max_err = json_num(line, "max_abs_err");
            const char *e = strstr(line, "\"eigenvalues\": [");
            if (e) {
                e += strlen("\"eigenvalues\": [");
                for (int i = 0; i < k; i++) {
                    r->sp_l[i] = strtod(e, (char **)&e);
                    if (*e == ',') e++;
                }
            }
            const char *q = strstr(line, "\"residuals\": [");
            if (q) {
                q += strlen("\"residuals\": [");
                for (int i = 0; i < k; i++) {
                    r->sp_max_res = fmax(r->sp_max_res, strtod(q, (char **)&q));
                    if (*q == ',') q++;
                }
            }
            const char *v = strstr(line, "\"scipy\": \"");
            if (v) sscanf(v + strlen("\"scipy\": \""), "%31[^\"]", r->sp_version);
        }
        if (p) pclose(p);
    }
    r->ok = 1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *sizes = "128,316,1000", *json = NULL, *python = "/usr/bin/python3", *script = "bench/scipy_eig.py";
    int reps = 3, cols = 64, threads = 1, eigN = 350, eigk = 6, eigreps = 3, scipy = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--logdet-sizes") && i + 1 < argc) sizes = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cols") && i + 1 < argc) cols = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--eig-N") && i + 1 < argc) eigN = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--eig-k") && i + 1 < argc) eigk = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--eig-reps") && i + 1 < argc) eigreps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--python") && i + 1 < argc) python = argv[++i];
        else if (!strcmp(argv[i], "--script") && i + 1 < argc) script = argv[++i];
        else if (!strcmp(argv[i], "--no-scipy")) scipy = 0;
        else {
            fprintf(stderr, "usage: %s [--logdet-sizes N,N] [--reps R] [--cols C] [--threads T] [--json F]\n"
                    "          [--eig-N N] [--eig-k K] [--eig-reps R] [--python P] [--script S] [--no-scipy]\n",
                    argv[0]);
            return 2;
        }
    }
    if (reps < 1 || reps > 16) reps = 3;
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    sla_ctx_set_threads(ctx, threads);

    long Ns[MAXS];
    int ns = parse_list(sizes, Ns, MAXS);
    ld_row rows[MAXS];
    printf("logdet + exact gradient, 2D Poisson, Cholesky (CHOLMOD, AMD), %d threads, median of %d\n", threads,
           reps);
    printf("%9s %10s %12s %10s %10s %10s %8s %12s %12s %8s\n", "n", "nnz", "factor nnz", "factor s",
           "logdet s", "grad s", "grad/fac", "1 solve/col", "naive/grad", "load %");
    for (int s = 0; s < ns; s++) {
        if (bench_logdet(ctx, Ns[s], reps, s == 0 ? cols : 0, &rows[s])) return 1;
        ld_row *r = &rows[s];
        char naive[32] = "-", nr[32] = "-";
        if (r->naive_s > 0) {
            snprintf(naive, sizeof naive, "%.3g s", r->naive_s);
            snprintf(nr, sizeof nr, "%.0fx", r->naive_ratio);
        }
        printf("%9ld %10ld %12.4g %10.3f %10.4f %10.3f %8.2f %12s %12s %8.0f\n", r->n, r->nnz, r->factor_nnz,
               r->factor_s, r->logdet_s, r->grad_s, r->ratio, naive, nr, r->other_load);
        fflush(stdout);
    }
    if (eigk < 1 || eigk > 16) eigk = 6;
    if (eigreps < 1 || eigreps > 16) eigreps = 3;
    eig_row er;
    memset(&er, 0, sizeof er);
    if (eigN > 0) {
        printf("\neigsh: %d smallest eigenpairs of 2D Poisson, N = %d (n = %ld), median of %d\n", eigk, eigN,
               (long)eigN * eigN, eigreps);
        fflush(stdout);
        if (bench_eigsh(ctx, eigN, eigk, eigreps, scipy ? python : NULL, scipy ? script : NULL, &er)) return 1;
        printf("%-34s %10s %10s %12s %12s %8s\n", "", "time s", "factor s", "max |l-ref|", "max resid", "load %");
        printf("%-34s %10.3f %10.3f %12.2e %12.2e %8.0f\n", er.method, er.median_s, er.factor_s, er.max_err,
               er.max_res, er.other_load);
        if (er.have_lobpcg)
            printf("%-34s %10.3f %10s %12.2e %12.2e   (%ld iterations, %ld products, tol 1e-8 ||A||_1)\n",
                   er.lob_method, er.lob_median_s, "-", er.lob_max_err, er.lob_max_res, er.lob_its, er.lob_nops);
        if (er.have_scipy) {
            printf("%-34s %10.3f %10s %12.2e %12.2e\n", "scipy eigsh(sigma=0) (SuperLU)", er.sp_median_s, "-",
                   er.sp_max_err, er.sp_max_res);
            printf("scipy / sla = %.2fx\n", er.sp_median_s / er.median_s);
        }
        printf("eigenvalues (sla):  ");
        for (int i = 0; i < eigk; i++) printf(" %.12g", er.l[i]);
        printf("\n");
    }
    if (json) {
        FILE *f = fopen(json, "w");
        if (f) {
            fprintf(f, "{\"threads\": %d, \"reps\": %d, \"logdet\": [", threads, reps);
            for (int s = 0; s < ns; s++) {
                ld_row *r = &rows[s];
                fprintf(f,
                        "%s{\"N\": %ld, \"n\": %ld, \"nnz\": %ld, \"factor_nnz\": %.0f, \"factor_s\": %.6g, "
                        "\"logdet_s\": %.6g, \"grad_s\": %.6g, \"grad_over_factor\": %.4g, \"logabsdet\": %.17g, "
                        "\"naive_cols\": %d, \"naive_per_col_s\": %.6g, \"naive_s\": %.6g, "
                        "\"naive_over_grad\": %.4g, \"naive_max_rel_diff\": %.3g, \"other_load_pct\": %.1f}",
                        s ? ", " : "", r->N, r->n, r->nnz, r->factor_nnz, r->factor_s, r->logdet_s, r->grad_s,
                        r->ratio, r->logabsdet, r->cols, r->percol_s, r->naive_s, r->naive_ratio, r->naive_err,
                        r->other_load);
            }
            fprintf(f, "]");
            if (er.ok) {
                fprintf(f, ", \"eigsh\": {\"N\": %ld, \"n\": %ld, \"k\": %d, \"reps\": %d, \"method\": \"%s\", "
                           "\"median_s\": %.6g, \"factor_s\": %.6g, \"operator_applications\": %ld, "
                           "\"max_abs_err\": %.3g, \"max_residual\": %.3g, \"other_load_pct\": %.1f, \"eigenvalues\": [",
                        er.N, er.n, er.k, er.reps, er.method, er.median_s, er.factor_s, er.nops, er.max_err,
                        er.max_res, er.other_load);
                for (int i = 0; i < er.k; i++) fprintf(f, "%s%.17g", i ? ", " : "", er.l[i]);
                fprintf(f, "]");
                if (er.have_lobpcg)
                    fprintf(f, ", \"lobpcg\": {\"method\": \"%s\", \"median_s\": %.6g, \"iterations\": %ld, "
                               "\"products\": %ld, \"max_abs_err\": %.3g, \"max_residual\": %.3g}",
                            er.lob_method, er.lob_median_s, er.lob_its, er.lob_nops, er.lob_max_err, er.lob_max_res);
                if (er.have_scipy)
                    fprintf(f, ", \"scipy\": {\"version\": \"%s\", \"median_s\": %.6g, \"max_abs_err\": %.3g, "
                               "\"max_residual\": %.3g}, \"scipy_over_sla\": %.4g",
                            er.sp_version, er.sp_median_s, er.sp_max_err, er.sp_max_res, er.sp_median_s / er.median_s);
                fprintf(f, "}");
            }
            fprintf(f, "}\n");
            fclose(f);
        }
    }
    sla_ctx_destroy(&ctx);
    return 0;
}
