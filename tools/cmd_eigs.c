/* cmd_eigs.c — `sla eigs A.mtx -k K`: k eigenvalues of a general
 * (nonsymmetric) square matrix by ARPACK's implicitly restarted Arnoldi
 * (shift-invert through a sparse LU with --sigma), reported as text or
 * JSON with complex eigenvalues as [re, im] pairs. Part of the CLI, not
 * the library. */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_eigs_help[] =
    "usage: sla eigs A.mtx -k K [options]\n"
    "\n"
    "k eigenvalues of a general square matrix by ARPACK's implicitly restarted\n"
    "Arnoldi, best first; complex conjugate pairs adjacent (positive imaginary\n"
    "part first), each with its residual ||A x - l x|| / |l|.\n"
    "\n"
    "  -k K, --k K        number of eigenvalues, 1 <= k < n - 1 (default 6)\n"
    "  --which W          LM|SM|LR|SR|LI|SI: largest/smallest magnitude, real part,\n"
    "                     imaginary part (default LM); with --sigma they apply to\n"
    "                     1 / (l - sigma), so LM gives the eigenvalues nearest sigma\n"
    "  --sigma S          shift-invert around the real shift S (sparse LU of A - S I)\n"
    "  --method M         the LU of A - sigma I: lu|umfpack|klu|superlu (default lu)\n"
    "  --tol T            ARPACK's relative accuracy (default 0 = machine epsilon)\n"
    "  --ncv M            Arnoldi basis size, k + 2 <= M <= n (default max(2k+1, 20))\n"
    "  --maxiter K        ARPACK restarts (default max(1000, 10 n))\n"
    "  --threads T        number of threads (0 = OpenMP default)\n"
    "  --json             print one JSON object with the report\n"
    "\n"
    "Exit status: 0 converged, 2 bad input, 3 not converged.\n";

/* The library's option parser: names and ranges of -k, --which, ... */
static sla_status parse_eigs(sla_ctx *ctx, const char *str, void *opts)
{
    return sla_eigs_options_parse(ctx, str, (sla_eigs_options *)opts);
}

int cmd_eigs(int argc, char **argv)
{
    optdef defs[] = {
        {"--k", "-k", 1, NULL, 0},      {"--which", NULL, 1, NULL, 0},   {"--sigma", NULL, 1, NULL, 0},
        {"--method", NULL, 1, NULL, 0}, {"--tol", NULL, 1, NULL, 0},     {"--ncv", NULL, 1, NULL, 0},
        {"--maxiter", NULL, 1, NULL, 0}, {"--threads", NULL, 1, NULL, 0}, {"--json", NULL, 0, NULL, 0},
        {"--help", "-h", 0, NULL, 0},
    };
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[1];
    int rc;
    if (command_args("eigs", cli_eigs_help, "expected a matrix file", argc, argv, defs, nd, pos, 1, &rc)) return rc;
    sla_eigs_options o;
    sla_eigs_options_default(&o);
    long long threads = 0;
    static const cli_flag_key keys[] = {
        {"--k", "k"},     {"--which", "which"},     {"--sigma", "sigma"},
        {"--method", "factor_method"}, {"--tol", "tol"}, {"--ncv", "ncv"}, {"--maxiter", "maxiter"},
    };
    if ((rc = cli_option_flags("eigs", defs, nd, keys, (int)(sizeof keys / sizeof keys[0]),
                               parse_eigs, &o)))
        return rc;
    if (opt_threads(defs, nd, &threads)) return EXIT_BAD;
    const int json = optseen(defs, nd, "--json");

    sla_ctx *ctx = NULL;
    sla_matrix *A = NULL;
    double *wr = NULL, *wi = NULL, *res = NULL;
    rc = open_matrix(pos[0], threads, &ctx, &A);
    if (rc) goto done;
    if ((rc = cli_refuse_complex("eigs", pos[0], A))) goto done;
    sla_int n = sla_matrix_nrows(A);
    wr = xcalloc((size_t)o.k, sizeof *wr);
    wi = xcalloc((size_t)o.k, sizeof *wi);
    res = xcalloc((size_t)o.k, sizeof *res);
    if (!wr || !wi || !res) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    sla_eigs_info info;
    double t0 = now_seconds();
    sla_status st = sla_eigs(ctx, A, 0, &o, wr, wi, NULL, n, res, &info);
    double secs = now_seconds() - t0;
    if (st < 0) {
        rc = lib_fail(ctx, st, pos[0]);
        goto done;
    }
    if (json) {
        printf("{\"n\":%lld,\"nnz\":%lld,\"k\":%lld,\"which\":", (long long)n, (long long)sla_matrix_nnz(A),
               (long long)o.k);
        cli_json_string(stdout, sla_eigs_which_name(o.which));
        printf(",\"sigma\":");
        if (o.shift_invert) json_number(stdout, "%.17g", o.sigma);
        else printf("null");
        printf(",\"eigenvalues\":[");
        for (sla_int i = 0; i < o.k; i++) {
            printf(i ? ",[" : "[");
            json_number(stdout, "%.17g", wr[i]);
            printf(",");
            json_number(stdout, "%.17g", wi[i]);
            printf("]");
        }
        printf("],\"residuals\":");
        json_numbers(stdout, "%.6e", res, o.k);
        printf(",\"converged\":%s,\"nconv\":%lld,\"method\":", info.converged ? "true" : "false",
               (long long)info.nconv);
        cli_json_string(stdout, info.method);
        printf(",\"note\":");
        cli_json_string(stdout, info.note);
        printf(",\"iterations\":%lld,\"operator_applications\":%lld,\"seconds\":", (long long)info.iterations,
               (long long)info.nops);
        json_number(stdout, "%.6g", secs);
        printf("}\n");
    } else {
        printf("%s: n = %lld, %lld eigenvalues (%s%s), %s\n", pos[0], (long long)n, (long long)o.k,
               sla_eigs_which_name(o.which), o.shift_invert ? ", shift-invert" : "", info.method);
        for (sla_int i = 0; i < o.k; i++)
            printf("  %3lld  %24.17g %+24.17gi  residual %.3e\n", (long long)i, wr[i], wi[i], res[i]);
        printf("  %lld restarts, %lld operator applications, %.3f s\n", (long long)info.iterations,
               (long long)info.nops, secs);
        if (info.note[0]) printf("  note: %s\n", info.note);
    }
    fflush(stdout);
    rc = EXIT_OK;
    if (st == SLA_NOT_CONVERGED) {
        err("%s", sla_ctx_message(ctx));
        rc = EXIT_NOCONV;
    }
done:
    free(wr);
    free(wi);
    free(res);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
    return rc;
}
