/* cmd_nlsolve.c — `sla nlsolve bratu2d N --mu M`: the library's nonlinear
 * solver on the Bratu problem and the gradient of L = sum(u) with respect
 * to mu by one adjoint solve. Its flags become the library's nonlinear
 * option string, so the library checks names and ranges. Part of the CLI,
 * not the library. */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_nlsolve_help[] =
    "usage: sla nlsolve bratu2d N --mu M [options]\n"
    "\n"
    "Solve the Bratu problem -Laplace u = mu e^u on the unit square (N x N\n"
    "interior grid, 5-point, Dirichlet 0) and the gradient of L = sum(u) with\n"
    "respect to mu by the implicit-function theorem (one adjoint solve).\n"
    "\n"
    "options:\n"
    "  --mu M            the parameter (solutions exist up to about 6.808)\n"
    "  --method KIND     newton (default, backtracking line search), anderson, picard\n"
    "  --rtol R          ||F(u)|| <= max(atol, rtol ||F(u0)||) (default 1e-10)\n"
    "  --atol A          (default 0)\n"
    "  --maxiter K       nonlinear iterations (default 50 newton, 1000 others)\n"
    "  --depth M         Anderson depth (default 5)\n"
    "  --beta B          Anderson/Picard mixing in (0, 1] (default 1)\n"
    "  --no-line-search  plain Newton steps\n"
    "  --chord R         keep the Newton factorization while each step reduces ||F||\n"
    "                    to R times its value (0 < R < 1; default: refactor every step)\n"
    "  --linear OPTS     linear solver options, e.g. method=cg,precond=amg,rtol=1e-10\n"
    "                    (default: auto)\n"
    "  --opts OPTS       nonlinear options as key=value,... (ls_alpha, ls_shrink,\n"
    "                    ls_maxsteps, stol, adjoint_reuse, ...; after the flags above)\n"
    "  --json            one JSON object: iterations, residual, converged, reason, L,\n"
    "                    dL_dmu, seconds (forward + gradient) and details\n"
    "\n"
    "Exit status: 0 converged, 2 bad input, 3 not converged (dL_dmu is null).\n";

int cmd_nlsolve(int argc, char **argv)
{
    optdef defs[] = {{"--mu", NULL, 1, NULL, 0},      {"--method", NULL, 1, NULL, 0},
                     {"--rtol", NULL, 1, NULL, 0},    {"--atol", NULL, 1, NULL, 0},
                     {"--maxiter", NULL, 1, NULL, 0}, {"--depth", NULL, 1, NULL, 0},
                     {"--beta", NULL, 1, NULL, 0},    {"--no-line-search", NULL, 0, NULL, 0},
                     {"--linear", NULL, 1, NULL, 0},  {"--json", NULL, 0, NULL, 0},
                     {"--chord", NULL, 1, NULL, 0},   {"--opts", NULL, 1, NULL, 0},
                     {"--help", "-h", 0, NULL, 0}};
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[2];
    int rc;
    if (command_args("nlsolve", cli_nlsolve_help,
                     "expected a problem and a grid size, e.g. 'sla nlsolve bratu2d 128 --mu 1'",
                     argc, argv, defs, nd, pos, 2, &rc))
        return rc;
    static const char *const kinds[] = {"bratu2d"};
    if (lookup_name("problem", pos[0], kinds, 1) < 0) return EXIT_BAD;
    long long N = 0;
    if ((rc = parse_int("N", pos[1], 1, 46340, &N))) return rc;
    if (!optseen(defs, nd, "--mu")) {
        err("nlsolve: --mu is required");
        return EXIT_BAD;
    }
    double mu = 0;
    if ((rc = parse_double("--mu", optval(defs, nd, "--mu"), &mu))) return rc;

    sla_nl_options o;
    sla_nl_options_default(&o);
    const char *s;
    int json = optseen(defs, nd, "--json");

    sla_ctx *ctx = NULL;
    if ((rc = new_ctx(0, &ctx))) return rc;
    /* The flags become the library's nonlinear options: it checks the names
     * here and the ranges in sla_nlsolver_create. */
    static const cli_flag_key nl_flags[] = {
        {"--method", "method"}, {"--rtol", "rtol"},       {"--atol", "atol"},
        {"--beta", "beta"},     {"--chord", "chord_ratio"}, {"--maxiter", "maxiter"},
        {"--depth", "anderson_depth"},
    };
    for (int i = 0; i < (int)(sizeof nl_flags / sizeof nl_flags[0]); i++) {
        char pair[320];
        if (!(s = optval(defs, nd, nl_flags[i].flag))) continue;
        if ((rc = cli_flag_pair("nlsolve", nl_flags[i].flag, nl_flags[i].key, s, pair,
                                sizeof pair))) {
            sla_ctx_destroy(&ctx);
            return rc;
        }
        sla_status sp = sla_nl_options_parse(ctx, pair, &o);
        if (sp != SLA_OK) {
            rc = cli_flag_fail(ctx, sp, "nlsolve", nl_flags[i].flag, nl_flags[i].key, s);
            sla_ctx_destroy(&ctx);
            return rc;
        }
    }
    if ((s = optval(defs, nd, "--maxiter")) && o.maxiter < 1) {
        /* the library reads 0 as "the method's default": leave the flag out */
        fprintf(stderr, "sla nlsolve: --maxiter: must be >= 1 (got %s)\n", s);
        sla_ctx_destroy(&ctx);
        return EXIT_BAD;
    }
    if (optseen(defs, nd, "--no-line-search")) o.line_search = false;
    sla_nl_builtin *B = NULL;
    sla_nlsolver *S = NULL;
    double *u = NULL, *gu = NULL;
    sla_status st;
    if ((s = optval(defs, nd, "--linear")) &&
        (st = sla_solver_options_parse(ctx, s, &o.linear)) != SLA_OK) {
        rc = lib_fail(ctx, st, "--linear");
        goto done;
    }
    if ((s = optval(defs, nd, "--opts")) && (st = sla_nl_options_parse(ctx, s, &o)) != SLA_OK) {
        rc = lib_fail(ctx, st, "--opts");
        goto done;
    }
    double t0 = now_seconds();
    if ((st = sla_nl_bratu2d(ctx, (sla_int)N, SLA_NL_BRATU_MU, &B)) ||
        (st = sla_nlsolver_create(ctx, sla_nl_builtin_problem(B), &o, &S))) {
        rc = lib_fail(ctx, st, "nlsolve");
        goto done;
    }
    sla_int n = (sla_int)(N * N);
    u = xcalloc((size_t)n, sizeof *u);
    gu = xcalloc((size_t)n, sizeof *gu);
    if (!u || !gu) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    sla_nl_info info;
    st = sla_nlsolver_solve(ctx, S, &mu, u, &info);
    if (st < 0) {
        rc = lib_fail(ctx, st, "nlsolve");
        goto done;
    }
    char why[256] = "";
    if (st != SLA_OK) snprintf(why, sizeof why, "%s", sla_ctx_message(ctx));
    double t_fwd = now_seconds() - t0, t_grad = 0.0, L = 0.0, dmu = NAN;
    for (sla_int i = 0; i < n; i++) L += u[i];
    sla_solve_info ai;
    memset(&ai, 0, sizeof ai);
    if (st == SLA_OK) {
        double t1 = now_seconds();
        for (sla_int i = 0; i < n; i++) gu[i] = 1.0; /* dL/du for L = sum(u) */
        sla_status sg = sla_nlsolver_solve_vjp(ctx, S, gu, &dmu, NULL, &ai);
        t_grad = now_seconds() - t1;
        if (sg < 0) {
            rc = lib_fail(ctx, sg, "nlsolve gradient");
            goto done;
        }
        if (sg != SLA_OK) {
            snprintf(why, sizeof why, "%s", sla_ctx_message(ctx));
            st = sg;
        }
    }
    if (json) {
        printf("{\"problem\":\"bratu2d\",\"N\":%lld,\"n\":%lld,\"mu\":", N, (long long)n);
        json_number(stdout, "%.17g", mu);
        printf(",\"method\":");
        cli_json_string(stdout, info.method);
        printf(",\"iterations\":%lld,\"residual\":", (long long)info.iterations);
        json_number(stdout, "%.6e", info.residual);
        printf(",\"residual0\":");
        json_number(stdout, "%.6e", info.residual0);
        printf(",\"converged\":%s,\"reason\":", info.converged ? "true" : "false");
        cli_json_string(stdout, sla_nl_reason_name(info.reason));
        printf(",\"L\":");
        json_number(stdout, "%.17g", L);
        printf(",\"dL_dmu\":");
        json_number(stdout, "%.17g", dmu);
        printf(",\"seconds\":%.6f,\"forward_seconds\":%.6f,\"gradient_seconds\":%.6f",
               t_fwd + t_grad, t_fwd, t_grad);
        printf(",\"linear_solves\":%lld,\"chord_steps\":%lld,\"line_search_cuts\":%lld,"
               "\"linear\":{\"method\":",
               (long long)info.linear_solves, (long long)info.chord_steps,
               (long long)info.line_search_cuts);
        cli_json_string(stdout, info.linear.method);
        printf(",\"backend\":");
        cli_json_string(stdout, info.linear.backend);
        printf("},\"adjoint_note\":");
        cli_json_string(stdout, ai.note);
        printf(",\"history\":[");
        for (sla_int k = 0; k < info.history_len; k++) {
            if (k) putchar(',');
            json_number(stdout, "%.6e", info.history[k]);
        }
        printf("],\"message\":");
        cli_json_string(stdout, why);
        printf("}\n");
    } else {
        printf("bratu2d N = %lld (n = %lld), mu = %g: %s, %lld iterations, ||F|| = %.3e "
               "(from %.3e), %s\n",
               N, (long long)n, mu, info.method, (long long)info.iterations, info.residual,
               info.residual0, sla_nl_reason_name(info.reason));
        if (why[0]) printf("  %s\n", why);
        printf("  L = sum(u) = %.12g\n", L);
        if (isfinite(dmu)) printf("  dL/dmu = %.12g\n", dmu);
        printf("  forward %.3f s, gradient %.3f s\n", t_fwd, t_grad);
    }
    rc = st == SLA_OK ? EXIT_OK : EXIT_NOCONV;
done:
    free(u);
    free(gu);
    sla_nlsolver_destroy(&S);
    sla_nl_builtin_destroy(&B);
    sla_ctx_destroy(&ctx);
    return rc;
}

