/* bench_nl — nonlinear solve F(u, mu) = 0 (Bratu 2D, -Laplace u = mu e^u)
 * and its implicit-function gradient dL/dmu, L = sum(u), side by side for
 * several linear-solver configurations.
 *
 *   sla_bench_nl [--sizes 128,500,1000] [--mu 1] [--reps 3] [--reps-large 1]
 *                [--configs chol-reuse,chol-refactor,chol-chord,amg,amg-reuse] [--threads T] [--json FILE]
 *
 * Configurations (Newton with the backtracking line search, rtol 1e-10 on
 * ||F||, u0 = 0):
 *   chol-reuse     linear method auto (CHOLMOD Cholesky here); the gradient
 *                  reuses the last Newton factorization for iterative
 *                  refinement on J(u*)^T (the default, adjoint_reuse = true)
 *   chol-refactor  the same, but the gradient refactors J at u* first
 *                  (adjoint_reuse = false)
 *   chol-chord     chol-reuse with chord steps (chord_ratio 0.1): the last
 *                  factorization is kept while each step reduces ||F|| tenfold
 *   amg            CG + BoomerAMG (rtol 1e-10) for the Newton steps and
 *                  the adjoint
 *   amg-reuse      the same, keeping the AMG hierarchy across the Jacobians
 *                  of one solver (amg_reuse = 20: only the values change)
 *
 * Times, each the median over the repetitions:
 *   forward   nlsolver create + solve from u0 = 0 (includes the symbolic
 *             analysis of the Jacobian pattern, done once)
 *   gradient  sla_nlsolver_solve_vjp with dL/du = 1
 *   warm      a second solve at mu (1 + 1e-3) with the same solver (the
 *             analysis is reused: the training-loop case) + its gradient
 * The gradient is checked at the smallest size against central
 * differences (two more solves, eps = 1e-6 mu). "load" is the share of
 * the machine other processes used during the measurement.
 */
#include <sla.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

typedef struct {
    const char *name;
    const char *linear; /* sla_solver_options_parse string */
    bool reuse;
    double chord;
} config;

static const config configs[] = {
    {"chol-reuse", "method=auto", true, 0.0},
    {"chol-refactor", "method=auto", false, 0.0},
    {"chol-chord", "method=auto", true, 0.1},
    {"amg", "method=cg,precond=amg,rtol=1e-10", true, 0.0},
    {"amg-reuse", "method=cg,precond=amg,rtol=1e-10,amg_reuse=20", true, 0.0},
};
#define NCONFIGS ((int)(sizeof configs / sizeof configs[0]))

typedef struct {
    double fwd, grad, warm_fwd, warm_grad;
    long long its, warm_its, linear_its, chord_steps;
    double residual, L, g;
    char linear[48], note[256];
} run_result;

static int run_once(sla_ctx *ctx, const sla_nl_problem *P, const config *c, double mu,
                    run_result *r)
{
    sla_nl_options o;
    sla_nl_options_default(&o);
    o.adjoint_reuse = c->reuse;
    o.chord_ratio = c->chord;
    if (sla_solver_options_parse(ctx, c->linear, &o.linear)) return -1;
    sla_int n = P->n;
    double *u = calloc((size_t)n, sizeof *u), *gu = malloc((size_t)n * sizeof *gu);
    if (!u || !gu) return -1;
    for (sla_int i = 0; i < n; i++) gu[i] = 1.0;
    sla_nlsolver *S = NULL;
    sla_nl_info info;
    sla_solve_info ai;
    int rc = -1;
    double t0 = now();
    if (sla_nlsolver_create(ctx, P, &o, &S) || sla_nlsolver_solve(ctx, S, &mu, u, &info)) goto done;
    double t1 = now();
    if (sla_nlsolver_solve_vjp(ctx, S, gu, &r->g, NULL, &ai) < 0) goto done;
    double t2 = now();
    r->fwd = t1 - t0;
    r->grad = t2 - t1;
    r->its = info.iterations;
    r->linear_its = info.linear_iterations;
    r->chord_steps = info.chord_steps;
    r->residual = info.residual;
    r->L = 0;
    for (sla_int i = 0; i < n; i++) r->L += u[i];
    snprintf(r->linear, sizeof r->linear, "%s+%s", info.linear.method, info.linear.precond);
    snprintf(r->note, sizeof r->note, "%s", ai.note);
    /* warm: same solver, new mu, u0 = 0 again */
    double mu2 = mu * (1 + 1e-3), g2;
    memset(u, 0, (size_t)n * sizeof *u);
    t0 = now();
    if (sla_nlsolver_solve(ctx, S, &mu2, u, &info)) goto done;
    t1 = now();
    if (sla_nlsolver_solve_vjp(ctx, S, gu, &g2, NULL, NULL) < 0) goto done;
    t2 = now();
    r->warm_fwd = t1 - t0;
    r->warm_grad = t2 - t1;
    r->warm_its = info.iterations;
    rc = 0;
done:
    if (rc) fprintf(stderr, "bench_nl: %s: %s\n", c->name, sla_ctx_message(ctx));
    sla_nlsolver_destroy(&S);
    free(u);
    free(gu);
    return rc;
}

/* L(mu) from u0 = 0 with a tight tolerance (for the FD check). */
static double L_of(sla_ctx *ctx, const sla_nl_problem *P, double mu)
{
    sla_nl_options o;
    sla_nl_options_default(&o);
    o.rtol = 0;
    o.atol = 1e-14;
    sla_nlsolver *S = NULL;
    double *u = calloc((size_t)P->n, sizeof *u), L = NAN;
    if (u && !sla_nlsolver_create(ctx, P, &o, &S) && !sla_nlsolver_solve(ctx, S, &mu, u, NULL)) {
        L = 0;
        for (sla_int i = 0; i < P->n; i++) L += u[i];
    }
    sla_nlsolver_destroy(&S);
    free(u);
    return L;
}

/* Is name one of the comma-separated items of list? */
static int in_list(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == len && !strncmp(p, name, len)) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

static int parse_list(const char *s, long *out, int max)
{
    int k = 0;
    while (s && *s && k < max) {
        out[k++] = strtol(s, (char **)&s, 10);
        if (*s == ',') s++;
    }
    return k;
}

int main(int argc, char **argv)
{
    long sizes[8] = {128, 500, 1000};
    int nsizes = 3, reps = 3, reps_large = 1, threads = 0;
    double mu = 1.0;
    const char *json = NULL, *cfg = "chol-reuse,chol-refactor,chol-chord,amg,amg-reuse";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--sizes") && v) nsizes = parse_list(argv[++i], sizes, 8);
        else if (!strcmp(a, "--mu") && v) mu = atof(argv[++i]);
        else if (!strcmp(a, "--reps") && v) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--reps-large") && v) reps_large = atoi(argv[++i]);
        else if (!strcmp(a, "--threads") && v) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--configs") && v) cfg = argv[++i];
        else if (!strcmp(a, "--json") && v) json = argv[++i];
        else {
            fprintf(stderr, "usage: sla_bench_nl [--sizes 128,500,1000] [--mu 1] [--reps 3] "
                            "[--reps-large 1] [--configs chol-reuse,chol-refactor,chol-chord,amg,amg-reuse] "
                            "[--threads T] [--json FILE]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (reps_large < 1) reps_large = 1;
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    if (threads > 0) sla_ctx_set_threads(ctx, threads);
    FILE *jf = json ? fopen(json, "w") : NULL;
    printf("Bratu 2D, mu = %g, Newton + line search, rtol 1e-10, L = sum(u), %d threads\n", mu,
           sla_ctx_threads(ctx));
    printf("%-9s %-14s %-16s %4s %9s %9s %9s %9s %9s %10s %5s  %s\n", "n", "config", "linear",
           "its", "forward", "gradient", "fwd+grad", "warm fwd", "warm grad", "||F||", "load",
           "gradient note");
    for (int is = 0; is < nsizes; is++) {
        long N = sizes[is];
        sla_nl_builtin *B = NULL;
        if (sla_nl_bratu2d(ctx, N, SLA_NL_BRATU_MU, &B)) {
            fprintf(stderr, "bench_nl: %s\n", sla_ctx_message(ctx));
            return 1;
        }
        const sla_nl_problem *P = sla_nl_builtin_problem(B);
        int k = N * N >= 500000 ? reps_large : reps;
        double fd_err = NAN;
        for (int ic = 0; ic < NCONFIGS; ic++) {
            const config *c = &configs[ic];
            if (!in_list(cfg, c->name)) continue;
            double f[16], g[16], wf[16], wg[16], tot[16];
            run_result r = {0};
            load_mark l0 = load_now();
            int ok = 1;
            for (int rep = 0; rep < k && rep < 16; rep++) {
                if (run_once(ctx, P, c, mu, &r)) {
                    ok = 0;
                    break;
                }
                f[rep] = r.fwd;
                g[rep] = r.grad;
                wf[rep] = r.warm_fwd;
                wg[rep] = r.warm_grad;
                tot[rep] = r.fwd + r.grad;
            }
            load_mark l1 = load_now();
            if (!ok) continue;
            if (is == 0 && ic == 0) {
                double eps = 1e-6 * mu;
                double fd = (L_of(ctx, P, mu + eps) - L_of(ctx, P, mu - eps)) / (2 * eps);
                fd_err = fabs(fd - r.g) / fabs(fd);
            }
            double mf = median(f, k), mg = median(g, k), mwf = median(wf, k), mwg = median(wg, k),
                   mt = median(tot, k), load = other_load_pct(l0, l1);
            printf("%-9ld %-14s %-16s %4lld %8.3fs %8.3fs %8.3fs %8.3fs %8.3fs %10.2e %4.0f%%  %s\n",
                   N * N, c->name, r.linear, r.its, mf, mg, mt, mwf, mwg, r.residual, load, r.note);
            fflush(stdout);
            char fd_txt[32] = "null"; /* JSON has no NaN */
            if (is == 0 && ic == 0 && isfinite(fd_err)) snprintf(fd_txt, sizeof fd_txt, "%.3e", fd_err);
            if (jf)
                fprintf(jf,
                        "{\"N\":%ld,\"n\":%ld,\"config\":\"%s\",\"linear\":\"%s\",\"mu\":%g,"
                        "\"iterations\":%lld,\"chord_steps\":%lld,\"linear_iterations\":%lld,\"warm_iterations\":%lld,"
                        "\"residual\":%.3e,\"L\":%.17g,\"dL_dmu\":%.17g,\"reps\":%d,"
                        "\"forward_s\":%.6f,\"gradient_s\":%.6f,\"total_s\":%.6f,"
                        "\"warm_forward_s\":%.6f,\"warm_gradient_s\":%.6f,\"other_load_pct\":%.1f,"
                        "\"fd_relerr\":%s,\"threads\":%d}\n",
                        N, N * N, c->name, r.linear, mu, r.its, r.chord_steps, r.linear_its, r.warm_its,
                        r.residual, r.L, r.g, k, mf, mg, mt, mwf, mwg, load,
                        fd_txt, sla_ctx_threads(ctx));
        }
        if (is == 0 && isfinite(fd_err))
            printf("  gradient check at n = %ld: |dL/dmu - central FD| / |FD| = %.2e\n", N * N,
                   fd_err);
        sla_nl_builtin_destroy(&B);
    }
    printf("reference (issue 6): 18.8 s forward + 29.3 s backward at 16K DOF with a dense "
           "Jacobian\n");
    if (jf) fclose(jf);
    sla_ctx_destroy(&ctx);
    return 0;
}
