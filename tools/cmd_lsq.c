/* cmd_lsq.c — `sla lsqr A.mtx`: damped least squares min ||A x - b||^2 +
 * damp^2 ||x||^2 for a rectangular (or square) A by LSQR or LSMR, the VJP
 * of L = w . x on request (--adjoint, --grad-b, --grad-A), reported as text
 * or JSON. The numeric flags go through the library's option parser
 * (sla_lsq_options_parse), which checks names and ranges. Part of the CLI,
 * not the library. */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_lsqr_help[] =
    "usage: sla lsqr A.mtx [options]\n"
    "\n"
    "Damped least squares, x = argmin ||A x - b||^2 + damp^2 ||x||^2, for an m x n\n"
    "A of any shape, by LSQR (Paige-Saunders) or LSMR (Fong-Saunders). With damp 0\n"
    "a rank-deficient or underdetermined A gives the minimum-norm solution.\n"
    "\n"
    "  --rhs b.mtx        right-hand side, Matrix Market array m x 1 (default b = A*1)\n"
    "  --damp L           damping lambda >= 0 (default 0)\n"
    "  --method M         lsqr|lsmr|qr (default lsqr; qr: SuiteSparseQR, direct)\n"
    "  --atol T, --btol T stopping tolerances (default 1e-8)\n"
    "  --conlim C         stop when the cond(A) estimate reaches C (default 1e8; 0: none)\n"
    "  --maxiter K        iterations (default 2 n, at least 20)\n"
    "  --out x.mtx        write x (n x 1 Matrix Market array)\n"
    "  --adjoint w.mtx    also differentiate L = w . x (n x 1 seed)\n"
    "  --grad-b gb.mtx    write dL/db (needs --adjoint)\n"
    "  --grad-A gA.mtx    write dL/dA on A's pattern (coordinate; needs --adjoint)\n"
    "  --transpose T      products with A^T: auto|explicit|scatter. explicit: A^T\n"
    "                     built once per solve (about the matrix's memory again),\n"
    "                     then gathered by rows; scatter: no extra memory. auto\n"
    "                     (default): scatter (explicit measured no faster)\n"
    "  --threads T        number of threads (0 = OpenMP default)\n"
    "  --json             print one JSON object with the report\n"
    "\n"
    "Output files are checked before any work and written only on success.\n"
    "Exit status: 0 converged, 2 bad input, 3 not converged (conlim or maxiter).\n";

/* The flags that are library option keys. */
static const cli_flag_key lsq_flags[] = {
    {"--damp", "damp"},     {"--method", "method"},   {"--atol", "atol"},
    {"--btol", "btol"},     {"--conlim", "conlim"},   {"--maxiter", "maxiter"},
    {"--transpose", "transpose"},
};

int cmd_lsqr(int argc, char **argv)
{
    optdef defs[] = {
        {"--rhs", NULL, 1, NULL, 0},     {"--damp", NULL, 1, NULL, 0},    {"--method", NULL, 1, NULL, 0},
        {"--atol", NULL, 1, NULL, 0},    {"--btol", NULL, 1, NULL, 0},    {"--conlim", NULL, 1, NULL, 0},
        {"--maxiter", NULL, 1, NULL, 0}, {"--out", "-o", 1, NULL, 0},     {"--adjoint", NULL, 1, NULL, 0},
        {"--grad-b", NULL, 1, NULL, 0},  {"--grad-A", NULL, 1, NULL, 0},  {"--threads", NULL, 1, NULL, 0},
        {"--json", NULL, 0, NULL, 0},    {"--help", "-h", 0, NULL, 0},    {"--transpose", NULL, 1, NULL, 0},
    };
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[1];
    int rc;
    if (command_args("lsqr", cli_lsqr_help, "expected a matrix file", argc, argv, defs, nd, pos, 1, &rc))
        return rc;
    long long threads = 0;
    if (opt_threads(defs, nd, &threads)) return EXIT_BAD;
    sla_lsq_options o;
    sla_lsq_options_default(&o);
    {
        sla_ctx *pctx = NULL;
        if ((rc = new_ctx(0, &pctx))) return rc;
        for (size_t i = 0; i < sizeof lsq_flags / sizeof lsq_flags[0]; i++) {
            const char *v = optval(defs, nd, lsq_flags[i].flag);
            char kv[160];
            if (!v) continue;
            if ((rc = cli_flag_pair("lsqr", lsq_flags[i].flag, lsq_flags[i].key, v, kv, sizeof kv))) break;
            sla_status st = sla_lsq_options_parse(pctx, kv, &o);
            if (st) {
                rc = cli_flag_fail(pctx, st, "lsqr", lsq_flags[i].flag, lsq_flags[i].key, v);
                break;
            }
        }
        sla_ctx_destroy(&pctx);
        if (rc) return rc;
    }
    const int json = optseen(defs, nd, "--json");
    const char *rhs_path = optval(defs, nd, "--rhs"), *out_path = optval(defs, nd, "--out");
    const char *adj_path = optval(defs, nd, "--adjoint"), *gb_path = optval(defs, nd, "--grad-b");
    const char *ga_path = optval(defs, nd, "--grad-A");
    if ((gb_path || ga_path) && !adj_path) {
        err("lsqr: %s needs --adjoint w.mtx", gb_path ? "--grad-b" : "--grad-A");
        return EXIT_BAD;
    }
    cli_output outs[3] = {
        {.opt = "--out", .path = out_path, .what = "x", .kind = CLI_OUT_DENSE},
        {.opt = "--grad-b", .path = gb_path, .what = "dL/db", .kind = CLI_OUT_DENSE},
        {.opt = "--grad-A", .path = ga_path, .what = "dL/dA", .kind = CLI_OUT_PATTERN},
    };
    const char *inputs[3] = {pos[0], rhs_path, adj_path};
    if ((rc = cli_outputs_check(outs, 3, inputs, 3))) {
        cli_outputs_free(outs, 3);
        return rc;
    }
    sla_ctx *ctx = NULL;
    sla_matrix *A = NULL;
    double *b = NULL, *x = NULL, *w = NULL, *gb = NULL, *gA = NULL;
    rc = open_matrix(pos[0], threads, &ctx, &A);
    if (rc) goto done;
    if ((rc = cli_refuse_complex("lsqr", pos[0], A))) goto done;
    const sla_int m = sla_matrix_nrows(A), n = sla_matrix_ncols(A);
    sla_status st;
    if (rhs_path) {
        sla_int nr = 0, nc = 0;
        if ((rc = read_dense(ctx, rhs_path, &nr, &nc, &b))) goto done;
        if (nr != m || nc != 1) {
            err("%s: right-hand side is %lld x %lld but the matrix %s is %lld x %lld", rhs_path, (long long)nr,
                (long long)nc, pos[0], (long long)m, (long long)n);
            rc = EXIT_BAD;
            goto done;
        }
    } else {
        double *ones = xcalloc((size_t)n, sizeof *ones);
        b = xcalloc((size_t)m, sizeof *b);
        if (!ones || !b) {
            free(ones);
            rc = EXIT_INTERNAL;
            goto done;
        }
        for (sla_int j = 0; j < n; j++) ones[j] = 1.0;
        st = sla_matvec(ctx, A, 0, 1, ones, n, b, m);
        free(ones);
        if (st) {
            rc = lib_fail(ctx, st, pos[0]);
            goto done;
        }
    }
    if (adj_path) {
        sla_int nr = 0, nc = 0;
        if ((rc = read_dense(ctx, adj_path, &nr, &nc, &w))) goto done;
        if (nr != n || nc != 1) {
            err("%s: adjoint seed is %lld x %lld but x is %lld x 1", adj_path, (long long)nr, (long long)nc,
                (long long)n);
            rc = EXIT_BAD;
            goto done;
        }
    }
    x = xcalloc((size_t)n, sizeof *x);
    gb = xcalloc((size_t)m, sizeof *gb);
    gA = xcalloc((size_t)sla_matrix_nnz(A), sizeof *gA);
    if (!x || !gb || !gA) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    sla_lsq_info info, ainfo;
    memset(&ainfo, 0, sizeof ainfo);
    double t0 = now_seconds();
    st = sla_lsq(ctx, A, 0, &o, b, x, &info);
    double secs = now_seconds() - t0;
    if (st < 0) {
        rc = lib_fail(ctx, st, pos[0]);
        goto done;
    }
    sla_status ast = SLA_OK;
    double asecs = 0.0;
    if (adj_path) {
        t0 = now_seconds();
        ast = sla_lsq_vjp(ctx, A, 0, &o, b, x, w, gb, gA, &ainfo);
        asecs = now_seconds() - t0;
        if (ast < 0) {
            rc = lib_fail(ctx, ast, pos[0]);
            goto done;
        }
    }
    int files_written = 0;
    if (out_path || gb_path || ga_path) {
        outs[0].nrows = n;
        outs[0].ncols = 1;
        outs[0].data = x;
        outs[1].nrows = m;
        outs[1].ncols = 1;
        outs[1].data = gb;
        outs[2].A = A;
        outs[2].data = gA;
        if ((rc = cli_outputs_write(ctx, outs, 3))) goto done;
        files_written = 1;
    }
    if (json) {
        printf("{\"m\":%lld,\"n\":%lld,\"nnz\":%lld,\"method\":", (long long)m, (long long)n,
               (long long)sla_matrix_nnz(A));
        cli_json_string(stdout, info.method);
        printf(",\"damp\":");
        json_number(stdout, "%.17g", o.damp);
        printf(",\"iterations\":%lld,\"converged\":%s,\"reason\":", (long long)info.iterations,
               info.converged ? "true" : "false");
        cli_json_string(stdout, sla_lsq_reason_name(info.reason));
        printf(",\"residual_norm\":");
        json_number(stdout, "%.17g", info.true_rnorm);
        printf(",\"normal_residual\":");
        json_number(stdout, "%.17g", info.true_arnorm);
        printf(",\"rnorm_estimate\":");
        json_number(stdout, "%.17g", info.rnorm);
        printf(",\"arnorm_estimate\":");
        json_number(stdout, "%.17g", info.arnorm);
        printf(",\"anorm_estimate\":");
        json_number(stdout, "%.17g", info.anorm);
        printf(",\"cond_estimate\":");
        json_number(stdout, "%.17g", info.acond);
        printf(",\"xnorm\":");
        json_number(stdout, "%.17g", info.xnorm);
        printf(",\"seconds\":");
        json_number(stdout, "%.6g", secs);
        if (adj_path) {
            printf(",\"adjoint\":{\"iterations\":%lld,\"residual\":", (long long)ainfo.adjoint_iterations);
            json_number(stdout, "%.6e", ainfo.adjoint_residual);
            printf(",\"converged\":%s,\"note\":", ainfo.converged ? "true" : "false");
            cli_json_string(stdout, ainfo.note);
            printf(",\"seconds\":");
            json_number(stdout, "%.6g", asecs);
            printf("}");
        }
        if (out_path || gb_path || ga_path) printf(",\"files_written\":%s", files_written ? "true" : "false");
        printf("}\n");
    } else {
        printf("%s: %lld x %lld, %s, damp %g\n", pos[0], (long long)m, (long long)n, info.method, o.damp);
        printf("  %lld iterations, stopped by %s (%s)\n", (long long)info.iterations,
               sla_lsq_reason_name(info.reason), info.converged ? "converged" : "not converged");
        printf("  ||b - A x|| = %.6e, ||A^T r - damp^2 x|| = %.6e, ||x|| = %.6e\n", info.true_rnorm,
               info.true_arnorm, info.xnorm);
        printf("  estimates: ||A||_F %.4e, cond(A) %.4e; %.3f s\n", info.anorm, info.acond, secs);
        if (adj_path)
            printf("  adjoint: %lld iterations, relative residual %.3e, %.3f s (%s)\n",
                   (long long)ainfo.adjoint_iterations, ainfo.adjoint_residual, asecs, ainfo.note);
        if (files_written) printf("  wrote the output files\n");
    }
    fflush(stdout);
    rc = EXIT_OK;
    if (st == SLA_NOT_CONVERGED || ast == SLA_NOT_CONVERGED) {
        err("lsqr: %s", st == SLA_NOT_CONVERGED ? info.note : "the adjoint solve did not converge");
        rc = EXIT_NOCONV;
    }
done:
    free(b);
    free(x);
    free(w);
    free(gb);
    free(gA);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
    cli_outputs_free(outs, 3);
    return rc;
}
