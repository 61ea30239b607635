/* cmd_info.c — `sla info A.mtx`: the size, dtype and structure of a Matrix
 * Market matrix (symmetry; for a complex one Hermitian and complex
 * symmetric; positive diagonal, diagonal dominance) as text or JSON. Part
 * of the CLI, not the library. */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_info_help[] =
    "usage: sla info A.mtx [--json] [--cond]\n"
    "\n"
    "Size, dtype and structure of a Matrix Market matrix: symmetry (relative\n"
    "tolerance 1e-12), structural symmetry, positive diagonal, diagonal\n"
    "dominance. A complex matrix (dtype complex128) reports both Hermitian\n"
    "(A = A^H, real diagonal) and complex symmetric (A = A^T, e.g. Helmholtz),\n"
    "each with its relative error; its positive diagonal means real and > 0.\n"
    "\n"
    "  --json   one JSON object: \"m\" rows and \"n\" columns (as sla lsqr and\n"
    "           sla svds name them; also \"nrows\", \"ncols\"), \"nnz\", \"dtype\", the\n"
    "           structure flags and errors\n"
    "  --cond   also the 2-norm condition number s_max / s_min (ARPACK: svds LM\n"
    "           and SM; inf when A is rank deficient; real matrices only)\n";

int cmd_info(int argc, char **argv)
{
    optdef defs[] = {{"--json", NULL, 0, NULL, 0}, {"--help", "-h", 0, NULL, 0}, {"--cond", NULL, 0, NULL, 0}};
    const int nd = 3;
    const char *pos[1];
    int rc;
    if (command_args("info", cli_info_help, "expected a matrix file", argc, argv, defs, nd, pos, 1,
                     &rc))
        return rc;
    sla_ctx *ctx = NULL;
    sla_matrix *A = NULL;
    rc = open_matrix(pos[0], 0, &ctx, &A);
    if (rc) goto done;
    const int want_cond = optseen(defs, nd, "--cond");
    const bool cplx = sla_matrix_is_complex(A);
    if (want_cond && cplx) { /* svds has no complex path */
        err("info: --cond: %s holds complex values (%s); the condition number is computed "
            "for real matrices only", pos[0], sla_dtype_name(sla_matrix_dtype(A)));
        rc = EXIT_BAD;
        goto done;
    }
    sla_matrix_props p;
    sla_status st = sla_matrix_properties(ctx, A, 0, 1e-12, &p);
    if (st < 0) {
        rc = lib_fail(ctx, st, pos[0]);
        goto done;
    }
    double cond = NAN, smax = NAN, smin = NAN;
    if (want_cond && (st = sla_cond2(ctx, A, 0, NULL, &cond, &smax, &smin, NULL)) < 0 && st != SLA_ERR_SINGULAR) {
        rc = lib_fail(ctx, st, pos[0]);
        goto done;
    }
    long long nr = (long long)sla_matrix_nrows(A), nc = (long long)sla_matrix_ncols(A),
              nnz = (long long)sla_matrix_nnz(A);
#define TF(v) ((v) ? "true" : "false")
    if (optseen(defs, nd, "--json")) {
        printf("{\"file\":");
        cli_json_string(stdout, pos[0]);
        /* "m" rows and "n" columns, as `sla lsqr`/`sla svds --json` name them;
         * "nrows" and "ncols" spelled out too (before the rectangular names,
         * "n" was the row count: the same number for a square matrix) */
        printf(",\"m\":%lld,\"n\":%lld,\"nrows\":%lld,\"ncols\":%lld,\"nnz\":%lld,\"dtype\":\"%s\","
               "\"square\":%s,"
               "\"symmetric\":%s,\"hermitian\":%s,"
               "\"structurally_symmetric\":%s,\"positive_diagonal\":%s,"
               "\"diagonally_dominant\":%s,\"symmetry_error\":",
               nr, nc, nr, nc, nnz, sla_dtype_name(sla_matrix_dtype(A)), TF(p.square), TF(p.symmetric),
               TF(p.hermitian), TF(p.structurally_symmetric), TF(p.positive_diagonal),
               TF(p.diagonally_dominant));
        json_number(stdout, "%.6e", p.symmetry_error);
        printf(",\"hermitian_error\":");
        json_number(stdout, "%.6e", p.hermitian_error);
        printf(",\"max_abs\":");
        json_number(stdout, "%.17g", p.max_abs);
        if (want_cond) {
            printf(",\"cond2\":");
            if (isinf(cond)) printf("\"inf\"");
            else json_number(stdout, "%.17g", cond);
            printf(",\"smax\":");
            json_number(stdout, "%.17g", smax);
            printf(",\"smin\":");
            json_number(stdout, "%.17g", smin);
        }
        printf("}\n");
    } else {
#define YN(v) ((v) ? "yes" : "no")
        printf("%s: %lld x %lld, nnz %lld (%.2f per row)%s%s\n", pos[0], nr, nc, nnz,
               nr ? (double)nnz / (double)nr : 0.0, cplx ? ", " : "",
               cplx ? sla_dtype_name(sla_matrix_dtype(A)) : "");
        if (p.square && cplx) {
            printf("  hermitian              %s (relative error %.3e)\n", YN(p.hermitian),
                   p.hermitian_error);
            printf("  complex symmetric      %s (relative error %.3e)\n", YN(p.symmetric),
                   p.symmetry_error);
        } else if (p.square) {
            printf("  symmetric              %s (relative error %.3e)\n", YN(p.symmetric),
                   p.symmetry_error);
        }
        if (p.square) {
            printf("  structurally symmetric %s\n", YN(p.structurally_symmetric));
            printf("  positive diagonal      %s\n", YN(p.positive_diagonal));
            printf("  diagonally dominant    %s\n", YN(p.diagonally_dominant));
        } else {
            printf("  not square\n");
        }
        printf("  max |a_ij|             %.6g\n", p.max_abs);
        if (want_cond) {
            if (isinf(cond)) printf("  cond2                  inf (rank deficient; s_max %.6g)\n", smax);
            else printf("  cond2                  %.6g (s_max %.6g, s_min %.6g)\n", cond, smax, smin);
        }
#undef YN
    }
#undef TF
    rc = EXIT_OK;
done:
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
    return rc;
}

