/* cmd_logdet.c — `sla logdet A.mtx`: sign and log|det A| from a sparse
 * factorization or stochastic Lanczos quadrature, and optionally its
 * gradient on A's pattern (--grad-A), reported as text or JSON. Part of
 * the CLI, not the library. */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_logdet_help[] =
    "usage: sla logdet A.mtx [options]\n"
    "\n"
    "sign and log|det A| from a sparse factorization (never det itself), and\n"
    "optionally its exact gradient d log|det A| / dA_ij = (A^-1)_ji on A's\n"
    "pattern (selected inversion on the Cholesky, LDL^T or LU factor).\n"
    "\n"
    "  --method M         auto|cholesky|ldlt|lu|slq (default auto: cholesky for symmetric\n"
    "                     matrices, ldlt if not positive definite, else lu; slq:\n"
    "                     stochastic Lanczos quadrature for SPD matrices, matrix-vector\n"
    "                     products only, with a standard error; its gradient is\n"
    "                     Hutchinson's estimate with CG solves)\n"
    "  --probes P         slq: Rademacher probes (default 32)\n"
    "  --steps M          slq: Lanczos steps per probe (default 50)\n"
    "  --seed S           slq: probe seed (default 1)\n"
    "  --grad-A G.mtx     write the gradient (coordinate, A's full stored pattern)\n"
    "  --threads T        number of threads (0 = OpenMP default)\n"
    "  --json             print one JSON object with the report\n"
    "\n"
    "A singular matrix gives sign 0 and log|det| = -inf (JSON null); its gradient\n"
    "does not exist (exit 2 with --grad-A). --grad-A is checked before any work\n"
    "and replaced atomically (temporary file, fsync, rename); a gradient with\n"
    "NaN/Inf is not written (\"files_written\":false, exit 3).\n";

/* The logdet gradient g on A's pattern to outs[0]: written (all checks
 * passed), or, when it holds Inf/NaN, not written with a note. Returns 0 or
 * the exit code of a failed write. */
static int write_gradient(sla_ctx *ctx, cli_output *outs, const sla_matrix *A, const double *g,
                          int *written, char *note, size_t len, int *nonfinite)
{
    outs[0].A = A;
    outs[0].data = g;
    char why[200];
    if (cli_outputs_nonfinite(outs, 1, why, sizeof why) >= 0) {
        snprintf(note, len, "no file written: %s", why);
        *nonfinite = 1;
        return 0;
    }
    int rc = cli_outputs_write(ctx, outs, 1);
    if (!rc) *written = 1;
    return rc;
}

int cmd_logdet(int argc, char **argv)
{
    optdef defs[] = {
        {"--method", NULL, 1, NULL, 0}, {"--grad-A", NULL, 1, NULL, 0}, {"--threads", NULL, 1, NULL, 0},
        {"--json", NULL, 0, NULL, 0},   {"--help", "-h", 0, NULL, 0},    {"--probes", NULL, 1, NULL, 0},
        {"--steps", NULL, 1, NULL, 0},  {"--seed", NULL, 1, NULL, 0},
    };
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[1];
    int rc;
    if (command_args("logdet", cli_logdet_help, "expected a matrix file", argc, argv, defs, nd, pos, 1,
                     &rc))
        return rc;
    static const char *const mn[] = {"auto", "cholesky", "ldlt", "lu", "slq"};
    sla_logdet_method m = SLA_LOGDET_AUTO;
    const char *s;
    long long threads = 0, lv = 0;
    int slq = 0;
    sla_slq_options so;
    sla_slq_options_default(&so);
    if ((s = optval(defs, nd, "--method"))) {
        int k = lookup_name("--method", s, mn, 5);
        if (k < 0) return EXIT_BAD;
        if (k == 4) slq = 1;
        else m = (sla_logdet_method)k;
    }
    if ((s = optval(defs, nd, "--probes"))) {
        if (parse_int("--probes", s, 1, 100000000, &lv)) return EXIT_BAD;
        so.probes = lv;
    }
    if ((s = optval(defs, nd, "--steps"))) {
        if (parse_int("--steps", s, 1, 10000, &lv)) return EXIT_BAD;
        so.lanczos_steps = lv;
    }
    if ((s = optval(defs, nd, "--seed"))) {
        if (parse_int("--seed", s, 0, 1000000000000LL, &lv)) return EXIT_BAD;
        so.seed = (uint64_t)lv;
    }
    if (opt_threads(defs, nd, &threads)) return EXIT_BAD;
    const char *gpath = optval(defs, nd, "--grad-A");
    const int json = optseen(defs, nd, "--json");
    /* the output file is checked before any work and written at the end */
    cli_output outs[1] = {{.opt = "--grad-A", .path = gpath, .what = "the gradient", .kind = CLI_OUT_PATTERN}};
    if ((rc = cli_outputs_check(outs, 1, (const char *const *)pos, 1))) {
        cli_outputs_free(outs, 1);
        return rc;
    }
    int files_written = 0, nonfinite = 0;
    char files_note[256] = "";

    sla_ctx *ctx = NULL;
    sla_matrix *A = NULL;
    double *g = NULL;
    rc = open_matrix(pos[0], threads, &ctx, &A);
    if (rc) goto done;
    if (gpath && !(g = xcalloc((size_t)sla_matrix_nnz(A), sizeof *g))) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    double sign = 0, lad = 0;
    sla_logdet_info info;
    double t0 = now_seconds();
    if (slq) {
        sla_slq_info si;
        double se = 0.0;
        sla_status st = sla_logdet_slq(ctx, A, 0, &so, &lad, &se, g, &si);
        double secs = now_seconds() - t0;
        if (st < 0) {
            rc = lib_fail(ctx, st, pos[0]);
            goto done;
        }
        if (gpath && (rc = write_gradient(ctx, outs, A, g, &files_written, files_note,
                                          sizeof files_note, &nonfinite)))
            goto done;
        if (json) {
            printf("{\"n\":%lld,\"nnz\":%lld,\"sign\":1,\"logabsdet\":", (long long)sla_matrix_nrows(A),
                   (long long)sla_matrix_nnz(A));
            json_number(stdout, "%.17g", lad);
            printf(",\"std_error\":");
            json_number(stdout, "%.6g", se);
            printf(",\"method\":\"slq\",\"grad_method\":\"%s\",\"probes\":%lld,\"lanczos_steps\":%lld,"
                   "\"seconds\":", gpath ? "hutchinson" : "", (long long)si.probes, (long long)si.lanczos_steps);
            json_number(stdout, "%.6g", secs);
            print_files_json(gpath != NULL, files_written, files_note);
            printf("}\n");
        } else {
            printf("%s: n = %lld, log det = %.10g +- %.3g (slq, %lld probes x %lld Lanczos steps), %.3f s\n",
                   pos[0], (long long)sla_matrix_nrows(A), lad, se, (long long)si.probes,
                   (long long)si.lanczos_steps, secs);
            if (files_written) printf("  wrote Hutchinson's gradient estimate to %s\n", gpath);
            if (nonfinite) printf("  %s\n", files_note);
        }
        fflush(stdout);
        rc = st == SLA_NOT_CONVERGED || nonfinite ? EXIT_NOCONV : EXIT_OK;
        if (st == SLA_NOT_CONVERGED) err("%s", sla_ctx_message(ctx));
        if (nonfinite) err("%s", files_note);
        goto done;
    }
    sla_status st = sla_logdet(ctx, A, 0, m, &sign, &lad, g, &info);
    double secs = now_seconds() - t0;
    bool singular = st == SLA_ERR_SINGULAR && sign == 0.0;
    if (st < 0 && !singular) {
        rc = lib_fail(ctx, st, pos[0]);
        goto done;
    }
    if (gpath && !singular &&
        (rc = write_gradient(ctx, outs, A, g, &files_written, files_note, sizeof files_note,
                             &nonfinite)))
        goto done;
    if (gpath && singular) snprintf(files_note, sizeof files_note, "no file written: singular matrix");
    if (json) {
        printf("{\"n\":%lld,\"nnz\":%lld,\"sign\":%g,\"logabsdet\":", (long long)sla_matrix_nrows(A),
               (long long)sla_matrix_nnz(A), sign);
        json_number(stdout, "%.17g", lad);
        printf(",\"singular\":%s,\"method\":", singular ? "true" : "false");
        cli_json_string(stdout, info.method[0] ? info.method : sla_logdet_method_name(m));
        printf(",\"grad_method\":");
        cli_json_string(stdout, info.grad_method);
        printf(",\"note\":");
        cli_json_string(stdout, singular ? sla_ctx_message(ctx) : info.note);
        printf(",\"factor_seconds\":");
        json_number(stdout, "%.6g", info.factor_seconds);
        printf(",\"grad_seconds\":");
        json_number(stdout, "%.6g", info.grad_seconds);
        printf(",\"seconds\":");
        json_number(stdout, "%.6g", secs);
        print_files_json(gpath != NULL, files_written, files_note);
        printf("}\n");
    } else {
        printf("%s: n = %lld, sign %+g, log|det| = %.17g (%s)\n", pos[0], (long long)sla_matrix_nrows(A), sign,
               lad, info.method[0] ? info.method : sla_logdet_method_name(m));
        printf("  factorization %.3f s", info.factor_seconds);
        if (files_written) printf(", gradient (%s) %.3f s; wrote it to %s", info.grad_method,
                                  info.grad_seconds, gpath);
        printf("\n");
        if (nonfinite) printf("  %s\n", files_note);
        if (info.note[0]) printf("  note: %s\n", info.note);
    }
    fflush(stdout);
    if (singular) {
        err("%s", sla_ctx_message(ctx));
        rc = gpath ? EXIT_BAD : EXIT_OK;
    } else if (nonfinite) {
        err("%s", files_note);
        rc = EXIT_NOCONV;
    } else {
        rc = EXIT_OK;
    }
done:
    free(g);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
    cli_outputs_free(outs, 1);
    return rc;
}

