/* cmd_svds.c — `sla svds A.mtx -k K`: the k largest or smallest singular
 * triplets of a (rectangular) sparse matrix by ARPACK, reported as text or
 * JSON, the singular vectors optionally written. Part of the CLI, not the
 * library. */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_svds_help[] =
    "usage: sla svds A.mtx -k K [options]\n"
    "\n"
    "k singular triplets (s, u, v) of an m x n matrix by ARPACK's Lanczos on the\n"
    "normal operator (A^T A or A A^T, the smaller). Singular values in\n"
    "descending order for LM, ascending for SM (the most wanted first).\n"
    "\n"
    "  -k K, --k K        number of triplets, 1 <= K < min(m, n) (default 6)\n"
    "  --which W          LM|SM: largest (default) or smallest singular values.\n"
    "                     SM runs shift-invert through an LU factorization of the\n"
    "                     augmented matrix [alpha I, A; A^T, 0]; plain Lanczos when\n"
    "                     that is singular (rank-deficient A: s = 0 reported)\n"
    "  --tol T            ARPACK's relative accuracy (default 0 = machine epsilon)\n"
    "  --ncv M            Lanczos basis size (default max(2k+1, 20))\n"
    "  --maxiter K        ARPACK restarts (default max(1000, 10 min(m, n)))\n"
    "  --out-u U.mtx      write the left singular vectors (m x k array)\n"
    "  --out-v V.mtx      write the right singular vectors (n x k array)\n"
    "                     (checked first, replaced atomically; not written when\n"
    "                     they hold NaN/Inf: \"files_written\":false, exit 3)\n"
    "  --transpose T      products with A^T: auto|explicit|scatter. explicit: A^T\n"
    "                     built once per call (about the matrix's memory again),\n"
    "                     then gathered by rows; scatter: no extra memory. auto\n"
    "                     (default): scatter (explicit measured no faster)\n"
    "  --threads T        number of threads (0 = OpenMP default)\n"
    "  --json             print one JSON object with the report\n"
    "\n"
    "Exit status: 0 converged, 2 bad input, 3 not converged.\n";

/* The library's option parser: names and ranges of -k, --which, ... */
static sla_status parse_svds(sla_ctx *ctx, const char *str, void *opts)
{
    return sla_svds_options_parse(ctx, str, (sla_svds_options *)opts);
}

int cmd_svds(int argc, char **argv)
{
    optdef defs[] = {
        {"--k", "-k", 1, NULL, 0},         {"--which", NULL, 1, NULL, 0},   {"--tol", NULL, 1, NULL, 0},
        {"--ncv", NULL, 1, NULL, 0},       {"--maxiter", NULL, 1, NULL, 0}, {"--out-u", NULL, 1, NULL, 0},
        {"--out-v", NULL, 1, NULL, 0},     {"--threads", NULL, 1, NULL, 0}, {"--json", NULL, 0, NULL, 0},
        {"--help", "-h", 0, NULL, 0},      {"--transpose", NULL, 1, NULL, 0},
    };
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[1];
    int rc;
    if (command_args("svds", cli_svds_help, "expected a matrix file", argc, argv, defs, nd, pos, 1, &rc))
        return rc;
    sla_svds_options o;
    sla_svds_options_default(&o);
    long long threads = 0;
    static const cli_flag_key keys[] = {
        {"--k", "k"}, {"--which", "which"}, {"--tol", "tol"}, {"--ncv", "ncv"}, {"--maxiter", "maxiter"},
        {"--transpose", "transpose"},
    };
    if ((rc = cli_option_flags("svds", defs, nd, keys, (int)(sizeof keys / sizeof keys[0]),
                               parse_svds, &o)))
        return rc;
    if (opt_threads(defs, nd, &threads)) return EXIT_BAD;
    const int json = optseen(defs, nd, "--json");
    const char *pu = optval(defs, nd, "--out-u"), *pv = optval(defs, nd, "--out-v");
    /* the output files are checked before any work and written at the end */
    cli_output outs[2];
    int nout = 0;
    if (pu) outs[nout++] = (cli_output){.opt = "--out-u", .path = pu, .what = "left singular vector", .kind = CLI_OUT_DENSE};
    if (pv) outs[nout++] = (cli_output){.opt = "--out-v", .path = pv, .what = "right singular vector", .kind = CLI_OUT_DENSE};
    if (nout && (rc = cli_outputs_check(outs, nout, (const char *const *)pos, 1))) {
        cli_outputs_free(outs, nout);
        return rc;
    }
    int files_written = 0;
    char files_note[256] = "";

    sla_ctx *ctx = NULL;
    sla_matrix *A = NULL;
    double *sv = NULL, *U = NULL, *V = NULL;
    rc = open_matrix(pos[0], threads, &ctx, &A);
    if (rc) goto done;
    if ((rc = cli_refuse_complex("svds", pos[0], A))) goto done;
    sla_int m = sla_matrix_nrows(A), n = sla_matrix_ncols(A);
    sv = xcalloc((size_t)o.k, sizeof *sv);
    U = xcalloc((size_t)m * (size_t)o.k, sizeof *U);
    V = xcalloc((size_t)n * (size_t)o.k, sizeof *V);
    if (!sv || !U || !V) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    sla_svds_info info;
    double t0 = now_seconds();
    sla_status st = sla_svds(ctx, A, 0, &o, sv, U, V, &info);
    double secs = now_seconds() - t0;
    if (st < 0) {
        rc = lib_fail(ctx, st, pos[0]);
        goto done;
    }
    int nonfinite = 0;
    if (nout) { /* non-finite vectors (not converged) are reported, not written */
        for (int i = 0; i < nout; i++) {
            bool left = outs[i].path == pu;
            outs[i].nrows = left ? m : n;
            outs[i].ncols = o.k;
            outs[i].data = left ? U : V;
        }
        char why[200];
        if (cli_outputs_nonfinite(outs, nout, why, sizeof why) >= 0) {
            snprintf(files_note, sizeof files_note, "no file written: %s", why);
            nonfinite = 1;
        } else {
            if ((rc = cli_outputs_write(ctx, outs, nout))) goto done;
            files_written = 1;
        }
    }
    if (json) {
        printf("{\"m\":%lld,\"n\":%lld,\"nnz\":%lld,\"k\":%lld,\"which\":", (long long)m, (long long)n,
               (long long)sla_matrix_nnz(A), (long long)o.k);
        cli_json_string(stdout, sla_svds_which_name(o.which));
        printf(",\"singular_values\":");
        json_numbers(stdout, "%.17g", sv, o.k);
        printf(",\"residual_v\":");
        json_number(stdout, "%.6e", info.max_residual_v);
        printf(",\"residual_u\":");
        json_number(stdout, "%.6e", info.max_residual_u);
        printf(",\"converged\":%s,\"nconv\":%lld,\"reason\":", info.converged ? "true" : "false",
               (long long)info.nconv);
        cli_json_string(stdout, info.reason);
        printf(",\"method\":");
        cli_json_string(stdout, info.method);
        printf(",\"note\":");
        cli_json_string(stdout, info.note);
        printf(",\"iterations\":%lld,\"operator_applications\":%lld,\"factor_seconds\":",
               (long long)info.iterations, (long long)info.nops);
        json_number(stdout, "%.6g", info.factor_seconds);
        printf(",\"seconds\":");
        json_number(stdout, "%.6g", secs);
        print_files_json(nout, files_written, files_note);
        printf("}\n");
    } else {
        printf("%s: %lld x %lld, %lld singular values (%s), %s\n", pos[0], (long long)m, (long long)n,
               (long long)o.k, sla_svds_which_name(o.which), info.method);
        for (sla_int i = 0; i < o.k; i++) printf("  %3lld  %24.17g\n", (long long)i, sv[i]);
        printf("  max ||A v - s u|| = %.3e, max ||A^T u - s v|| = %.3e (%s)\n", info.max_residual_v,
               info.max_residual_u, info.reason);
        printf("  %lld restarts, %lld operator applications, %.3f s (factorization %.3f s)\n",
               (long long)info.iterations, (long long)info.nops, secs, info.factor_seconds);
        if (info.note[0]) printf("  note: %s\n", info.note);
        if (files_written) printf("  wrote the singular vectors%s%s%s%s\n", pu ? " U to " : "", pu ? pu : "",
                                  pv ? " V to " : "", pv ? pv : "");
        if (nout && !files_written) printf("  %s\n", files_note);
    }
    fflush(stdout);
    rc = EXIT_OK;
    if (st == SLA_NOT_CONVERGED) {
        err("%s", sla_ctx_message(ctx));
        rc = EXIT_NOCONV;
    }
    if (nonfinite) {
        err("%s", files_note);
        rc = EXIT_NOCONV;
    }
done:
    free(sv);
    free(U);
    free(V);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
    cli_outputs_free(outs, nout);
    return rc;
}
