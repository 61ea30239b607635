/* bench_history — residual against iteration for each preconditioner.
 *
 *   sla_bench_history [--N 512] [--rtol 1e-8] [--threads T] [--json FILE]
 *
 * Two problems, b = ones, x0 = 0:
 *   diffusion2d: -div(kappa grad u) on an N x N grid with
 *                kappa = 1 + 0.5 sin(2 pi x) sin(2 pi y) (SPD): CG with
 *                none, jacobi, ssor, ic0 and amg; MINRES with jacobi;
 *   convdiff2d:  upwind convection-diffusion, b = (10, 10) (nonsymmetric):
 *                GMRES(30) and BiCGStab with none, jacobi, ilu0 and amg.
 * The monitor records the solver's own (recursive, preconditioned where the
 * method uses it) relative residual at every iteration; the last point is
 * the true residual sla reports. One JSON object per line (problem, method,
 * precond, setup_s, solve_s, iterations, residual, history: [[it, rel], ...])
 * goes to FILE (default bench/out/history.jsonl); a table to stdout.
 */
#include <sla.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846

typedef struct {
    long n, cap;
    long *it;
    double *rel;
} hist;

static int record(void *user, sla_int it, double rel)
{
    hist *h = user;
    if (h->n == h->cap) {
        long cap = h->cap ? 2 * h->cap : 1024;
        long *i2 = realloc(h->it, (size_t)cap * sizeof *i2);
        if (!i2) return 1;
        h->it = i2;
        double *r2 = realloc(h->rel, (size_t)cap * sizeof *r2);
        if (!r2) return 1;
        h->rel = r2;
        h->cap = cap;
    }
    h->it[h->n] = (long)it;
    h->rel[h->n] = rel;
    h->n++;
    return 0;
}

static void run(sla_ctx *ctx, FILE *jf, const char *prob, const sla_matrix *A, const char *opts,
                double rtol)
{
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    for (sla_int i = 0; i < n; i++) b[i] = 1.0;
    sla_solver_options o;
    sla_solver_options_default(&o);
    hist h = {0};
    if (sla_solver_options_parse(ctx, opts, &o)) {
        fprintf(stderr, "%s: %s\n", opts, sla_ctx_message(ctx));
        exit(2);
    }
    o.rtol = rtol;
    o.maxiter = 5000;
    o.monitor = record;
    o.monitor_user = &h;
    o.monitor_every = 1;
    sla_solver *S = NULL;
    sla_solve_info info;
    memset(&info, 0, sizeof info);
    sla_status st = sla_solver_create(ctx, A, &o, &S);
    if (st == SLA_OK) st = sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info);
    printf("%-12s %-28s %6lld its  true residual %.2e  setup %.3f s  solve %.3f s  %s\n", prob,
           opts, (long long)info.iterations, info.residual, info.setup_seconds, info.solve_seconds,
           st < 0 ? sla_ctx_message(ctx) : sla_reason_name(info.reason));
    fprintf(jf,
            "{\"problem\": \"%s\", \"n\": %lld, \"options\": \"%s\", \"method\": \"%s\", "
            "\"precond\": \"%s\", \"status\": \"%s\", \"reason\": \"%s\", \"iterations\": %lld, "
            "\"residual\": %.6e, \"setup_s\": %.6g, \"solve_s\": %.6g, \"history\": [",
            prob, (long long)n, opts, info.method, info.precond, sla_status_name(st),
            sla_reason_name(info.reason), (long long)info.iterations, info.residual,
            info.setup_seconds, info.solve_seconds);
    for (long k = 0; k < h.n; k++)
        fprintf(jf, "%s[%ld, %.6e]", k ? ", " : "", h.it[k], h.rel[k]);
    fprintf(jf, "]}\n");
    fflush(jf);
    sla_solver_destroy(&S);
    free(h.it);
    free(h.rel);
    free(b);
    free(x);
}

int main(int argc, char **argv)
{
    long N = 512;
    double rtol = 1e-8;
    int threads = 0;
    const char *json = "bench/out/history.jsonl";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "usage: sla_bench_history [--N 512] [--rtol 1e-8] [--threads T] [--json FILE]\n");
            return 2;
        }
        if (!strcmp(a, "--N")) N = atol(v);
        else if (!strcmp(a, "--rtol")) rtol = atof(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--json")) json = v;
        else {
            fprintf(stderr, "sla_bench_history: unknown option %s\n", a);
            return 2;
        }
        i++;
    }
    if (N < 2) {
        fprintf(stderr, "sla_bench_history: --N must be >= 2\n");
        return 2;
    }
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx)) return 1;
    if (threads > 0) sla_ctx_set_threads(ctx, threads);
    FILE *jf = fopen(json, "w");
    if (!jf) {
        fprintf(stderr, "sla_bench_history: cannot write %s\n", json);
        return 1;
    }

    long nc = (N + 1) * (N + 1);
    double *kappa = malloc((size_t)nc * sizeof *kappa);
    double h = 1.0 / (double)(N + 1);
    for (long c = 0; c < nc; c++) {
        double x = ((double)(c % (N + 1)) + 0.5) * h, y = ((double)(c / (N + 1)) + 0.5) * h;
        kappa[c] = 1.0 + 0.5 * sin(2.0 * PI * x) * sin(2.0 * PI * y);
    }
    sla_matrix *A = NULL, *C = NULL;
    if (sla_gen_diffusion2d(ctx, N, kappa, &A) || sla_gen_convdiff2d(ctx, N, 10.0, 10.0, &C)) {
        fprintf(stderr, "sla_bench_history: %s\n", sla_ctx_message(ctx));
        return 1;
    }
    free(kappa);
    printf("sla_bench_history: N = %ld (n = %ld), rtol %g\n", N, N * N, rtol);
    const char *spd[] = {"method=cg,precond=none",  "method=cg,precond=jacobi",
                         "method=cg,precond=ssor",  "method=cg,precond=ic0",
                         "method=cg,precond=amg",   "method=minres,precond=jacobi"};
    const char *ns[] = {"method=gmres,precond=none",     "method=gmres,precond=jacobi",
                        "method=gmres,precond=ilu0",     "method=gmres,precond=amg",
                        "method=bicgstab,precond=none",  "method=bicgstab,precond=jacobi",
                        "method=bicgstab,precond=ilu0",  "method=bicgstab,precond=amg"};
    for (size_t k = 0; k < sizeof spd / sizeof *spd; k++) {
        run(ctx, jf, "diffusion2d", A, spd[k], rtol);
    }
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        run(ctx, jf, "convdiff2d", C, ns[k], rtol);
    }
    fclose(jf);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&C);
    sla_ctx_destroy(&ctx);
    return 0;
}
