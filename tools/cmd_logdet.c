/* cmd_logdet.c — `sla logdet A.mtx`: sign and log|det A| from a sparse
 * factorization or stochastic Lanczos quadrature, and optionally its
 * gradient on A's pattern (--grad-A), reported as text or JSON; a complex
 * A gives the phase of det A and the complex gradient of log|det A| from a
 * complex direct solver (sla_zsolver_logdet). Part of the CLI, not the
 * library. */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#include "cli.h"

#include <complex.h>
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
    "NaN/Inf is not written (\"files_written\":false, exit 3).\n"
    "\n"
    "A complex A (method auto: cholesky when Hermitian with a positive\n"
    "diagonal, falling back to lu; or cholesky|lu) gives det A = sign *\n"
    "exp(logabsdet) with a complex sign of modulus 1, in JSON \"sign\":[re,im].\n"
    "--grad-A writes the complex gradient of log|det A| in PyTorch's convention\n"
    "(dRe + i dIm): conj((A^-1)_ji) on A's pattern, \"coordinate complex\".\n";

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

/* logdet of the complex A (method index k of cmd_logdet's names: 0 auto,
 * 1 cholesky, 3 lu; ldlt and slq have no complex path). Returns the exit
 * status. */
static int zlogdet(sla_ctx *ctx, const sla_matrix *A, const char *path, int k, cli_output *outs,
                   int json)
{
    if (k != 0 && k != 1 && k != 3) {
        err("logdet: --method %s has no complex path (%s holds complex values; use auto, "
            "cholesky or lu)", k == 2 ? "ldlt" : "slq", path);
        return EXIT_BAD;
    }
    const char *gpath = outs[0].path;
    const sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    sla_solver *S = NULL;
    sla_complex *g = NULL, phase = 0;
    double logabs = 0.0, t_grad = 0.0;
    char note[320] = "", files_note[256] = "";
    int rc = 0, written = 0, nonfinite = 0;
    sla_solver_options so;
    sla_solver_options_default(&so);
    sla_matrix_props p;
    sla_status st = sla_matrix_properties(ctx, A, 0, 1e-12, &p);
    if (st < 0) return lib_fail(ctx, st, path);
    if (!p.square) {
        err("%s: matrix is not square (%lld x %lld); logdet needs a square matrix", path,
            (long long)n, (long long)sla_matrix_ncols(A));
        return EXIT_BAD;
    }
    const int try_chol = k == 1 || (k == 0 && p.hermitian && p.positive_diagonal);
    so.method = try_chol ? SLA_METHOD_CHOLESKY : SLA_METHOD_LU;
    const double t0 = now_seconds();
    st = sla_solver_create(ctx, A, &so, &S);
    if (st < 0 && k == 0 && try_chol && st != SLA_ERR_NOMEM) { /* not positive definite */
        snprintf(note, sizeof note, "cholesky refused (%s); lu", sla_ctx_message(ctx));
        so.method = SLA_METHOD_LU;
        st = sla_solver_create(ctx, A, &so, &S);
    }
    bool singular = st == SLA_ERR_SINGULAR;
    if (st < 0 && !singular) {
        rc = lib_fail(ctx, st, path);
        goto done;
    }
    if (singular) {
        logabs = -INFINITY;
        snprintf(note, sizeof note, "%s", sla_ctx_message(ctx));
    } else if ((st = sla_zsolver_logdet(ctx, S, 0, &phase, &logabs)) < 0) {
        if (st != SLA_ERR_SINGULAR) {
            rc = lib_fail(ctx, st, path);
            goto done;
        }
        singular = true;
        phase = 0;
        logabs = -INFINITY;
        snprintf(note, sizeof note, "%s", sla_ctx_message(ctx));
    }
    if (!singular && creal(phase) == 0.0 && cimag(phase) == 0.0) singular = true;
    const double t_factor = now_seconds() - t0;
    if (gpath && singular) {
        snprintf(files_note, sizeof files_note, "no file written: singular matrix");
    } else if (gpath) { /* d log|det A| (g_logabs = 1, g_theta = 0) */
        if (!(g = xcalloc((size_t)nnz, sizeof *g))) {
            rc = EXIT_INTERNAL;
            goto done;
        }
        t_grad = now_seconds();
        st = sla_zsolver_logdet_vjp(ctx, S, 0, 1.0, 0.0, g);
        t_grad = now_seconds() - t_grad;
        if (st < 0) {
            rc = lib_fail(ctx, st, path);
            goto done;
        }
        outs[0].kind = CLI_OUT_PATTERN_Z;
        outs[0].A = A;
        outs[0].zdata = g;
        char why[200];
        if (cli_outputs_nonfinite(outs, 1, why, sizeof why) >= 0) {
            snprintf(files_note, sizeof files_note, "no file written: %s", why);
            nonfinite = 1;
        } else if ((rc = cli_outputs_write(ctx, outs, 1))) {
            goto done;
        } else {
            written = 1;
        }
    }
    const char *method = sla_method_name(S ? sla_solver_method(S) : so.method);
    if (json) {
        printf("{\"n\":%lld,\"nnz\":%lld,\"dtype\":", (long long)n, (long long)nnz);
        cli_json_string(stdout, sla_dtype_name(sla_matrix_dtype(A)));
        printf(",\"sign\":[%.17g,%.17g],\"logabsdet\":", creal(phase), cimag(phase));
        json_number(stdout, "%.17g", logabs);
        printf(",\"singular\":%s,\"method\":", singular ? "true" : "false");
        cli_json_string(stdout, method);
        printf(",\"note\":");
        cli_json_string(stdout, note);
        printf(",\"factor_seconds\":");
        json_number(stdout, "%.6g", t_factor);
        printf(",\"grad_seconds\":");
        json_number(stdout, "%.6g", t_grad);
        print_files_json(gpath != NULL, written, files_note);
        printf("}\n");
    } else {
        printf("%s: n = %lld, complex, sign %.17g%+.17gi, log|det| = %.17g (%s)\n", path,
               (long long)n, creal(phase), cimag(phase), logabs, method);
        printf("  factorization %.3f s", t_factor);
        if (written) printf(", gradient %.3f s; wrote it to %s", t_grad, gpath);
        printf("\n");
        if (nonfinite) printf("  %s\n", files_note);
        if (note[0]) printf("  note: %s\n", note);
    }
    fflush(stdout);
    if (singular) {
        err("%s: singular matrix%s%s", path, note[0] ? ": " : "", note);
        rc = gpath ? EXIT_BAD : EXIT_OK;
    } else if (nonfinite) {
        err("%s", files_note);
        rc = EXIT_NOCONV;
    }
done:
    sla_solver_destroy(&S);
    free(g);
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
    int mk = 0; /* the index in mn */
    const char *s;
    long long threads = 0, lv = 0;
    int slq = 0;
    sla_slq_options so;
    sla_slq_options_default(&so);
    if ((s = optval(defs, nd, "--method"))) {
        int k = lookup_name("--method", s, mn, 5);
        if (k < 0) return EXIT_BAD;
        mk = k;
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
    if (sla_matrix_is_complex(A)) {
        rc = zlogdet(ctx, A, pos[0], mk, outs, json);
        goto done;
    }
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

