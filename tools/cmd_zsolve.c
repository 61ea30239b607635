/* cmd_zsolve.c — the complex path of `sla solve`: A x = b for a complex A
 * (sla_zsolver_solve, one right-hand side at a time), the VJP of
 * L = Re(sum_i conj(w_i) x_i) in PyTorch's convention (--adjoint, --grad-b,
 * --grad-A), the report as text or JSON ("dtype":"complex128") and the
 * files, all or none. cmd_solve.c parses the flags, checks the outputs and
 * reads A; this file does the rest. Part of the CLI, not the library. */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* b = A 1, the default right-hand side (as for a real A). */
static int default_rhs(sla_ctx *ctx, const sla_matrix *A, const char *apath, sla_complex **b)
{
    const sla_int n = sla_matrix_nrows(A);
    sla_complex *ones = xcalloc((size_t)n, sizeof *ones);
    *b = xcalloc((size_t)n, sizeof **b);
    if (!ones || !*b) {
        free(ones);
        return EXIT_INTERNAL;
    }
    for (sla_int i = 0; i < n; i++) ones[i] = 1.0;
    sla_status st = sla_zmatvec(ctx, A, 0, SLA_OP_N, ones, *b);
    free(ones);
    return st < 0 ? lib_fail(ctx, st, apath) : 0;
}

/* The adjoint seed w, n x nrhs (one column is used for every right-hand
 * side). */
static int read_seed(sla_ctx *ctx, const char *path, sla_int n, sla_int nrhs, sla_complex **w)
{
    sla_int nr = 0, nc = 0;
    sla_complex *wr = NULL;
    int rc = read_dense_z(ctx, path, &nr, &nc, &wr);
    *w = NULL;
    if (rc) return rc;
    if (nr != n || (nc != 1 && nc != nrhs)) {
        err("%s: adjoint seed is %lld x %lld but the solution is %lld x %lld", path,
            (long long)nr, (long long)nc, (long long)n, (long long)nrhs);
        free(wr);
        return EXIT_BAD;
    }
    if (nc == nrhs) {
        *w = wr;
        return 0;
    }
    *w = xcalloc((size_t)n * (size_t)nrhs, sizeof **w);
    if (*w)
        for (sla_int j = 0; j < nrhs; j++) memcpy(*w + j * n, wr, (size_t)n * sizeof **w);
    free(wr);
    return *w ? 0 : EXIT_INTERNAL;
}

/* The text report (the JSON one is in cli_zsolve). */
static void print_text(const cli_solve_args *a, sla_int n, sla_int nnz, sla_int nrhs,
                       const sla_solve_info *fw, int direct, double setup, int adjoint_run,
                       const sla_solve_info *aw, double t_adj, const char *adj_skipped,
                       int want_files, int files_written, const char *files_note)
{
    char reason[48];
    reason_string(fw->reason, reason, sizeof reason);
    printf("%s: n = %lld, nnz = %lld, complex128", a->apath, (long long)n, (long long)nnz);
    if (nrhs > 1) printf(", %lld right-hand sides (worst shown)", (long long)nrhs);
    printf("\n  method %s, precond %s, backend %s\n", fw->method, direct ? "none" : fw->precond,
           fw->backend[0] ? fw->backend : "krylov");
    printf("  iterations %lld, residual %.3e, %s\n", (long long)fw->iterations, fw->residual,
           reason);
    printf("  setup %.3f s, solve %.3f s\n", setup, fw->solve_seconds);
    if (fw->note[0]) printf("  note: %s\n", fw->note);
    if (a->adj_path && !adjoint_run) {
        printf("adjoint skipped: %s\n", adj_skipped);
    } else if (a->adj_path) {
        reason_string(aw->reason, reason, sizeof reason);
        printf("adjoint (L = Re(w^H x)): iterations %lld, residual %.3e, %s, %.3f s\n",
               (long long)aw->iterations, aw->residual, reason, t_adj);
    }
    if (files_written && a->out_path) printf("  wrote x to %s\n", a->out_path);
    if (files_written && a->gb_path) printf("  wrote dL/db to %s\n", a->gb_path);
    if (files_written && a->ga_path) printf("  wrote dL/dA to %s\n", a->ga_path);
    if (want_files && !files_written) printf("  %s\n", files_note);
}

int cli_zsolve(sla_ctx *ctx, const sla_matrix *A, sla_solver_options *opts,
               const cli_solve_args *a, cli_output *outs)
{
    const sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    const int want_files = a->out_path || a->gb_path || a->ga_path;
    int files_written = 0, rc = 0;
    char files_note[256] = "", adj_skipped[200] = "";
    sla_solver *S = NULL;
    sla_complex *b = NULL, *x = NULL, *w = NULL, *gb = NULL, *gA = NULL, *gAj = NULL;
    sla_solve_info *info = NULL, *ainfo = NULL;
    sla_status st;

    /* Right-hand side(s): a real or complex array file, else A 1. */
    sla_int nrhs = 1;
    if (a->rhs_path) {
        sla_int nr = 0, nc = 0;
        if ((rc = read_dense_z(ctx, a->rhs_path, &nr, &nc, &b))) goto done;
        if (nr != n || nc < 1) {
            err("%s: right-hand side is %lld x %lld but the matrix %s is %lld x %lld",
                a->rhs_path, (long long)nr, (long long)nc, a->apath, (long long)n, (long long)n);
            rc = EXIT_BAD;
            goto done;
        }
        nrhs = nc;
    } else if ((rc = default_rhs(ctx, A, a->apath, &b))) {
        goto done;
    }
    if (a->adj_path && (rc = read_seed(ctx, a->adj_path, n, nrhs, &w))) goto done;

    /* auto plans for the solves this command runs: nrhs, twice with --adjoint */
    const sla_int solves = nrhs * (a->adj_path ? 2 : 1);
    opts->auto_solves = (int)(solves < 1000000 ? solves : 1000000);
    if ((st = sla_solver_create(ctx, A, opts, &S)) < 0) {
        rc = lib_fail(ctx, st, a->apath);
        goto done;
    }
    x = xcalloc((size_t)n * (size_t)nrhs, sizeof *x);
    info = xcalloc((size_t)nrhs, sizeof *info);
    if (!x || !info) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    for (sla_int j = 0; j < nrhs; j++) {
        st = sla_zsolver_solve(ctx, S, 0, SLA_OP_N, b + j * n, x + j * n, &info[j]);
        if (st < 0) {
            rc = lib_fail(ctx, st, a->apath);
            goto done;
        }
    }
    sla_solve_info fw = cli_worst_info(info, nrhs);
    int ok = fw.converged;

    /* A non-finite x (a diverged iterate) has no adjoint: skip it, report. */
    if (a->adj_path) {
        cli_output xo = {.path = "x", .what = "x", .kind = CLI_OUT_DENSE_Z, .nrows = n,
                         .ncols = nrhs, .zdata = x};
        if (cli_outputs_nonfinite(&xo, 1, adj_skipped, sizeof adj_skipped) >= 0) ok = 0;
    }

    /* L = Re(sum conj(w) x): grad_x = w, so gb = A^-H w and
     * gA[k] = -sum_j gb_j[row_k] conj(x_j[col_k]) (summed over the columns). */
    sla_solve_info aw;
    memset(&aw, 0, sizeof aw);
    double t_adj = 0.0;
    if (a->adj_path && !adj_skipped[0]) {
        gb = xcalloc((size_t)n * (size_t)nrhs, sizeof *gb);
        gA = xcalloc((size_t)nnz, sizeof *gA);
        gAj = nrhs > 1 ? xcalloc((size_t)nnz, sizeof *gAj) : NULL;
        ainfo = xcalloc((size_t)nrhs, sizeof *ainfo);
        if (!gb || !gA || (nrhs > 1 && !gAj) || !ainfo) {
            rc = EXIT_INTERNAL;
            goto done;
        }
        t_adj = now_seconds();
        for (sla_int j = 0; j < nrhs; j++) {
            st = sla_zsolver_solve_vjp(ctx, S, 0, x + j * n, w + j * n, gb + j * n,
                                       nrhs > 1 ? gAj : gA, &ainfo[j]);
            if (st < 0) {
                rc = lib_fail(ctx, st, a->adj_path);
                goto done;
            }
            if (nrhs > 1)
                for (sla_int k = 0; k < nnz; k++) gA[k] += gAj[k];
        }
        t_adj = now_seconds() - t_adj;
        aw = cli_worst_info(ainfo, nrhs);
        if (!aw.converged) ok = 0;
    }

    /* Every result is in hand: write the files, all or none (non-finite
     * results are reported, not written). */
    if (want_files) {
        outs[0].kind = outs[1].kind = CLI_OUT_DENSE_Z;
        outs[2].kind = CLI_OUT_PATTERN_Z;
        outs[0].nrows = outs[1].nrows = n;
        outs[0].ncols = outs[1].ncols = nrhs;
        outs[0].zdata = x;
        outs[1].zdata = gb;
        outs[2].A = A;
        outs[2].zdata = gA;
        char why[200];
        if (adj_skipped[0]) {
            snprintf(files_note, sizeof files_note,
                     "no file written: %s (the adjoint was skipped)", adj_skipped);
        } else if (cli_outputs_nonfinite(outs, 3, why, sizeof why) >= 0) {
            snprintf(files_note, sizeof files_note, "no file written: %s", why);
            ok = 0;
        } else {
            if ((rc = cli_outputs_write(ctx, outs, 3))) goto done;
            files_written = 1;
        }
    }

    const double setup = sla_solver_setup_seconds(S);
    const int direct = fw.backend[0] && strcmp(fw.backend, "krylov") != 0;
    if (a->json) {
        printf("{\"n\":%lld,\"nnz\":%lld,\"dtype\":", (long long)n, (long long)nnz);
        cli_json_string(stdout, sla_dtype_name(sla_matrix_dtype(A)));
        printf(",\"nrhs\":%lld,\"backend\":", (long long)nrhs);
        cli_json_string(stdout, fw.backend[0] ? fw.backend : "krylov");
        printf(",\"method\":");
        cli_json_string(stdout, fw.method);
        printf(",\"precond\":");
        cli_json_string(stdout, direct ? "none" : fw.precond);
        if (fw.ordering[0]) {
            printf(",\"ordering\":");
            cli_json_string(stdout, fw.ordering);
            printf(",\"factor_nnz\":%.0f", fw.factor_nnz);
            if (fw.rcond >= 0) printf(",\"rcond\":%.3e", fw.rcond);
            if (fw.backward_error >= 0) printf(",\"backward_error\":%.3e", fw.backward_error);
        }
        printf(",\"note\":");
        cli_json_string(stdout, fw.note);
        printf(",");
        cli_print_solve_info_json(stdout, &fw);
        printf(",\"setup_seconds\":");
        json_number(stdout, "%.6g", setup);
        printf(",\"solve_seconds\":");
        json_number(stdout, "%.6g", fw.solve_seconds);
        if (a->adj_path && !ainfo) {
            printf(",\"adjoint\":null");
        } else if (a->adj_path) {
            printf(",\"adjoint\":{");
            cli_print_solve_info_json(stdout, &aw);
            printf(",\"seconds\":");
            json_number(stdout, "%.6g", t_adj);
            printf("}");
        }
        print_files_json(want_files, files_written, files_note);
        printf("}\n");
    } else {
        print_text(a, n, nnz, nrhs, &fw, direct, setup, ainfo != NULL, &aw, t_adj, adj_skipped,
                   want_files, files_written, files_note);
    }
    fflush(stdout);
    if (!ok) {
        char reason[48];
        const sla_solve_info *bad = fw.converged ? &aw : &fw;
        reason_string(bad->reason, reason, sizeof reason);
        if (!fw.converged || (ainfo && !aw.converged))
            err("%s did not converge: %s after %lld iterations (residual %.3e)",
                fw.converged ? "adjoint solve" : "solve", reason, (long long)bad->iterations,
                bad->residual);
        if (a->adj_path && !ainfo) err("adjoint solve skipped: %s", adj_skipped);
        if (want_files && !files_written) err("%s", files_note);
    }
    rc = ok ? EXIT_OK : EXIT_NOCONV;

done:
    sla_solver_destroy(&S);
    free(b);
    free(x);
    free(w);
    free(gb);
    free(gA);
    free(gAj);
    free(info);
    free(ainfo);
    return rc;
}
