/* cmd_eig.c — `sla eigsh A.mtx -k K`: k eigenpairs of a symmetric matrix
 * (ARPACK Lanczos, shift-invert with a factorization the library picks or
 * --method names; --method lobpcg: LOBPCG, with --M on the pencil with
 * B = M), or of a complex Hermitian one (sla_zeigsh, ARPACK's
 * complex Arnoldi), reported as text or JSON, the eigenvectors optionally
 * written. Part of the CLI, not the library. */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#include "cli.h"

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_eigsh_help[] =
    "usage: sla eigsh A.mtx -k K [options]\n"
    "\n"
    "k eigenpairs of a symmetric matrix by ARPACK's implicitly restarted Lanczos,\n"
    "eigenvalues in ascending order, each with its residual ||A v - l v||.\n"
    "\n"
    "  -k K, --k K        number of eigenpairs (default 6)\n"
    "  --which W          LA|SA|LM|SM: largest/smallest algebraic, largest/smallest\n"
    "                     magnitude (default LM). SA runs shift-invert below the\n"
    "                     spectrum (sigma certified by a trial Cholesky), SM around\n"
    "                     0, LA plain Lanczos and, if that stalls, shift-invert above\n"
    "                     the spectrum; plain Lanczos where A cannot be factored.\n"
    "                     The report's method and note name the path and sigma.\n"
    "  --sigma S          shift-invert around S: the eigenvalues nearest S (with\n"
    "                     --which LA/SA: nearest above/below S); S moves off an\n"
    "                     eigenvalue by 1e-8 ||A|| when A - S I is singular\n"
    "  --method M         factorization of A - sigma I: auto|cholesky|ldlt|lu|umfpack|\n"
    "                     klu|superlu (default auto: cholesky, then ldlt, then lu);\n"
    "                     or lobpcg: the k smallest eigenpairs (--which SA, the\n"
    "                     default then) by LOBPCG, no factorization (A SPD, or\n"
    "                     with --M the pencil A x = l M x with B = M); --tol is\n"
    "                     then LOBPCG's (default 1e-8, relative to ||A||_1 +\n"
    "                     |l| ||M||_1), --maxiter its iterations (default 500);\n"
    "                     --sigma, --ncv and --memory-limit do not apply\n"
    "  --precond P        with --method lobpcg: the preconditioner built from A:\n"
    "                     none|jacobi|ssor|ic0|amg (default amg with hypre,\n"
    "                     else jacobi)\n"
    "  --memory-limit B   bytes the factorization may use (default 0 = half the\n"
    "                     available memory); past it SA uses LOBPCG, LA and SM\n"
    "                     plain Lanczos\n"
    "  --tol T            ARPACK's relative accuracy (default 0 = machine epsilon)\n"
    "  --ncv M            Lanczos basis size (default max(2k+1, 20))\n"
    "  --maxiter K        ARPACK restarts (default max(1000, 10 n))\n"
    "  --M M.mtx          the generalized problem A x = l M x (M symmetric positive\n"
    "                     definite; shift-invert around --sigma, default 0: the\n"
    "                     eigenvalues nearest it, or LOBPCG with --method lobpcg;\n"
    "                     eigenvectors M-orthonormal, residuals ||A v - l M v||)\n"
    "  --out V.mtx        write the eigenvectors (n x k Matrix Market array;\n"
    "                     checked first, replaced atomically; not written when\n"
    "                     they hold NaN/Inf: \"files_written\":false, exit 3)\n"
    "  --threads T        number of threads (0 = OpenMP default)\n"
    "  --json             print one JSON object with the report\n"
    "\n"
    "A complex Hermitian A (a \"hermitian\" or \"complex\" Matrix Market file)\n"
    "runs ARPACK's complex Arnoldi (znaupd) with the same flags but --M: real\n"
    "eigenvalues, complex unit eigenvectors (each scaled so that its largest\n"
    "entry is real and positive; --out writes \"array complex\"). A complex A\n"
    "that is not Hermitian is refused with its measured error.\n"
    "\n"
    "Exit status: 0 converged, 2 bad input, 3 not converged.\n";

/* The library's option parser: names and ranges of -k, --which, ... */
static sla_status parse_eigsh(sla_ctx *ctx, const char *str, void *opts)
{
    return sla_eigsh_options_parse(ctx, str, (sla_eigsh_options *)opts);
}

/* eigsh of the complex Hermitian A with options o: w real, V complex,
 * residuals ||A v - l v|| measured here. Returns the exit status. */
static int zeigsh(sla_ctx *ctx, const sla_matrix *A, const char *path, const sla_eigsh_options *o,
                  cli_output *outs, int json)
{
    const sla_int n = sla_matrix_nrows(A), k = o->k;
    const char *out_path = outs[0].path;
    double *l = xcalloc((size_t)k, sizeof *l), *res = xcalloc((size_t)k, sizeof *res);
    sla_complex *V = xcalloc((size_t)n * (size_t)k, sizeof *V), *r = xcalloc((size_t)n, sizeof *r);
    int rc = 0, written = 0, nonfinite = 0;
    char files_note[256] = "";
    sla_eigsh_info info;
    memset(&info, 0, sizeof info);
    if (!l || !res || !V || !r) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    double t0 = now_seconds();
    sla_status st = sla_zeigsh(ctx, A, 0, o, k, l, V, &info);
    double secs = now_seconds() - t0;
    if (st < 0) {
        rc = lib_fail(ctx, st, path);
        goto done;
    }
    for (sla_int j = 0; j < k; j++) { /* ||A v_j - l_j v_j|| */
        const sla_complex *v = V + j * n;
        sla_status ms = sla_zmatvec(ctx, A, 0, SLA_OP_N, v, r);
        if (ms < 0) {
            rc = lib_fail(ctx, ms, path);
            goto done;
        }
        double ss = 0.0;
        for (sla_int i = 0; i < n; i++) {
            sla_complex d = r[i] - l[j] * v[i];
            ss += creal(d) * creal(d) + cimag(d) * cimag(d);
        }
        res[j] = sqrt(ss);
    }
    if (out_path) { /* non-finite vectors (not converged) are reported, not written */
        outs[0].kind = CLI_OUT_DENSE_Z;
        outs[0].nrows = n;
        outs[0].ncols = k;
        outs[0].zdata = V;
        char why[200];
        if (cli_outputs_nonfinite(outs, 1, why, sizeof why) >= 0) {
            snprintf(files_note, sizeof files_note, "no file written: %s", why);
            nonfinite = 1;
        } else {
            if ((rc = cli_outputs_write(ctx, outs, 1))) goto done;
            written = 1;
        }
    }
    if (json) {
        printf("{\"n\":%lld,\"nnz\":%lld,\"dtype\":", (long long)n, (long long)sla_matrix_nnz(A));
        cli_json_string(stdout, sla_dtype_name(sla_matrix_dtype(A)));
        printf(",\"k\":%lld,\"which\":", (long long)k);
        cli_json_string(stdout, sla_eig_which_name(o->which));
        printf(",\"sigma\":");
        if (o->shift_invert) json_number(stdout, "%.17g", o->sigma);
        else printf("null");
        printf(",\"eigenvalues\":");
        json_numbers(stdout, "%.17g", l, k);
        printf(",\"residuals\":");
        json_numbers(stdout, "%.6e", res, k);
        printf(",\"converged\":%s,\"nconv\":%lld,\"method\":", info.converged ? "true" : "false",
               (long long)info.nconv);
        cli_json_string(stdout, info.method);
        printf(",\"note\":");
        cli_json_string(stdout, info.note);
        printf(",\"iterations\":%lld,\"operator_applications\":%lld,\"factor_seconds\":",
               (long long)info.iterations, (long long)info.nops);
        json_number(stdout, "%.6g", info.factor_seconds);
        printf(",\"seconds\":");
        json_number(stdout, "%.6g", secs);
        print_files_json(out_path != NULL, written, files_note);
        printf("}\n");
    } else {
        printf("%s: n = %lld, complex Hermitian, %lld eigenpairs (%s%s), %s\n", path, (long long)n,
               (long long)k, sla_eig_which_name(o->which), o->shift_invert ? ", shift-invert" : "",
               info.method);
        for (sla_int i = 0; i < k; i++)
            printf("  %3lld  %24.17g  residual %.3e\n", (long long)i, l[i], res[i]);
        printf("  %lld restarts, %lld operator applications, %.3f s (factorization %.3f s)\n",
               (long long)info.iterations, (long long)info.nops, secs, info.factor_seconds);
        if (info.note[0]) printf("  note: %s\n", info.note);
        if (written) printf("  wrote the eigenvectors to %s\n", out_path);
        if (out_path && !written) printf("  %s\n", files_note);
    }
    fflush(stdout);
    if (st == SLA_NOT_CONVERGED) {
        err("%s", sla_ctx_message(ctx));
        rc = EXIT_NOCONV;
    }
    if (nonfinite) {
        err("%s", files_note);
        rc = EXIT_NOCONV;
    }
done:
    free(l);
    free(res);
    free(V);
    free(r);
    return rc;
}

/* The library's LOBPCG option parser (--k, --tol, --maxiter, --precond). */
static sla_status parse_lobpcg(sla_ctx *ctx, const char *str, void *opts)
{
    return sla_lobpcg_options_parse(ctx, str, (sla_lobpcg_options *)opts);
}

/* --method lobpcg: the flags into *lo (k, tol, maxiter, pc.precond by the
 * library's parser), the ones that do not apply refused. Returns 0 or the
 * exit status. */
static int lobpcg_flags(optdef *defs, int nd, sla_lobpcg_options *lo)
{
    static const char *const not_here[] = {"--sigma", "--ncv", "--memory-limit"};
    for (int i = 0; i < 3; i++)
        if (optseen(defs, nd, not_here[i])) {
            err("eigsh: %s does not apply to --method lobpcg (LOBPCG computes the smallest eigenvalues "
                "without a shift or a factorization)", not_here[i]);
            return EXIT_BAD;
        }
    const char *w = optval(defs, nd, "--which");
    if (w && strcmp(w, "SA") && strcmp(w, "sa")) {
        err("eigsh: --method lobpcg computes the smallest eigenvalues: --which must be SA (got '%s'); "
            "use the default ARPACK path for %s", w, w);
        return EXIT_BAD;
    }
    sla_lobpcg_options_default(lo);
    static const cli_flag_key keys[] = {
        {"--k", "k"}, {"--tol", "tol"}, {"--maxiter", "maxiter"}, {"--precond", "pc.precond"},
    };
    return cli_option_flags("eigsh", defs, nd, keys, (int)(sizeof keys / sizeof keys[0]), parse_lobpcg, lo);
}

int cmd_eigsh(int argc, char **argv)
{
    optdef defs[] = {
        {"--k", "-k", 1, NULL, 0},       {"--which", NULL, 1, NULL, 0},  {"--sigma", NULL, 1, NULL, 0},
        {"--method", NULL, 1, NULL, 0},  {"--tol", NULL, 1, NULL, 0},    {"--ncv", NULL, 1, NULL, 0},
        {"--maxiter", NULL, 1, NULL, 0}, {"--out", "-o", 1, NULL, 0},    {"--threads", NULL, 1, NULL, 0},
        {"--json", NULL, 0, NULL, 0},    {"--help", "-h", 0, NULL, 0},    {"--memory-limit", NULL, 1, NULL, 0},
        {"--M", NULL, 1, NULL, 0},       {"--precond", NULL, 1, NULL, 0},
    };
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[1];
    int rc;
    if (command_args("eigsh", cli_eigsh_help, "expected a matrix file", argc, argv, defs, nd, pos, 1,
                     &rc))
        return rc;
    sla_eigsh_options o;
    sla_eigsh_options_default(&o);
    long long threads = 0;
    static const cli_flag_key keys[] = {
        {"--k", "k"},     {"--which", "which"},     {"--sigma", "sigma"},
        {"--method", "factor_method"}, {"--tol", "tol"}, {"--memory-limit", "memory_limit"},
        {"--ncv", "ncv"}, {"--maxiter", "maxiter"},
    };
    const char *meth = optval(defs, nd, "--method");
    const int lobpcg = meth && !strcmp(meth, "lobpcg");
    sla_lobpcg_options lo;
    if (lobpcg) {
        if ((rc = lobpcg_flags(defs, nd, &lo))) return rc;
        o.k = lo.k;
        o.which = SLA_EIG_SA;
    } else if ((rc = cli_option_flags("eigsh", defs, nd, keys, (int)(sizeof keys / sizeof keys[0]),
                                      parse_eigsh, &o))) {
        return rc;
    } else if (optseen(defs, nd, "--precond")) {
        err("eigsh: --precond applies to --method lobpcg only");
        return EXIT_BAD;
    }
    if (opt_threads(defs, nd, &threads)) return EXIT_BAD;
    const int json = optseen(defs, nd, "--json");
    const char *out_path = optval(defs, nd, "--out");
    /* the output file is checked before any work and written at the end */
    cli_output outs[1] = {{.opt = "--out", .path = out_path, .what = "eigenvector", .kind = CLI_OUT_DENSE}};
    if ((rc = cli_outputs_check(outs, 1, (const char *const *)pos, 1))) {
        cli_outputs_free(outs, 1);
        return rc;
    }
    int files_written = 0;
    char files_note[256] = "";

    sla_ctx *ctx = NULL;
    sla_matrix *A = NULL, *M = NULL;
    const char *m_path = optval(defs, nd, "--M");
    double *l = NULL, *V = NULL, *res = NULL;
    rc = open_matrix(pos[0], threads, &ctx, &A);
    if (rc) goto done;
    if (sla_matrix_is_complex(A)) {
        if (lobpcg) {
            err("eigsh: --method lobpcg: %s holds complex values; LOBPCG here is real (the complex "
                "Hermitian path is ARPACK's: leave out --method)", pos[0]);
            rc = EXIT_BAD;
        } else if (m_path) {
            err("eigsh: --M: the generalized problem has no complex path (%s holds complex "
                "values)", pos[0]);
            rc = EXIT_BAD;
        } else {
            rc = zeigsh(ctx, A, pos[0], &o, outs, json);
        }
        goto done;
    }
    sla_status mst = m_path ? sla_mm_read(ctx, m_path, SLA_F64, &M) : SLA_OK;
    if (mst) {
        rc = lib_fail(ctx, mst, m_path);
        goto done;
    }
    if ((rc = cli_refuse_complex("eigsh --M", m_path, M))) goto done;
    sla_int n = sla_matrix_nrows(A);
    l = xcalloc((size_t)o.k, sizeof *l);
    res = xcalloc((size_t)o.k, sizeof *res);
    V = xcalloc((size_t)n * (size_t)o.k, sizeof *V);
    if (!l || !res || !V) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    sla_eigsh_info info;
    double t0 = now_seconds();
    sla_status st = lobpcg ? (M ? sla_lobpcg_generalized(ctx, A, 0, M, 0, &lo, l, V, n, res, &info)
                                : sla_lobpcg(ctx, A, 0, &lo, l, V, n, res, &info))
                    : M ? sla_eigsh_generalized(ctx, A, 0, M, 0, &o, l, V, n, res, &info)
                        : sla_eigsh(ctx, A, 0, &o, l, V, n, res, &info);
    double secs = now_seconds() - t0;
    if (st < 0) {
        rc = lib_fail(ctx, st, pos[0]);
        goto done;
    }
    char noconv[512]; /* the library's message, before writing --out replaces it */
    snprintf(noconv, sizeof noconv, "%s", sla_ctx_message(ctx));
    int nonfinite = 0;
    if (out_path) { /* non-finite vectors (not converged) are reported, not written */
        outs[0].nrows = n;
        outs[0].ncols = o.k;
        outs[0].data = V;
        char why[200];
        if (cli_outputs_nonfinite(outs, 1, why, sizeof why) >= 0) {
            snprintf(files_note, sizeof files_note, "no file written: %s", why);
            nonfinite = 1;
        } else {
            if ((rc = cli_outputs_write(ctx, outs, 1))) goto done;
            files_written = 1;
        }
    }
    if (json) {
        printf("{\"n\":%lld,\"nnz\":%lld,\"k\":%lld,\"which\":", (long long)n, (long long)sla_matrix_nnz(A),
               (long long)o.k);
        cli_json_string(stdout, sla_eig_which_name(o.which));
        printf(",\"sigma\":");
        if (o.shift_invert) json_number(stdout, "%.17g", o.sigma);
        else printf("null");
        printf(",\"eigenvalues\":");
        json_numbers(stdout, "%.17g", l, o.k);
        printf(",\"residuals\":");
        json_numbers(stdout, "%.6e", res, o.k);
        printf(",\"converged\":%s,\"nconv\":%lld,\"method\":", info.converged ? "true" : "false",
               (long long)info.nconv);
        cli_json_string(stdout, info.method);
        printf(",\"note\":");
        cli_json_string(stdout, info.note);
        printf(",\"iterations\":%lld,\"operator_applications\":%lld,\"factor_seconds\":",
               (long long)info.iterations, (long long)info.nops);
        json_number(stdout, "%.6g", info.factor_seconds);
        printf(",\"seconds\":");
        json_number(stdout, "%.6g", secs);
        print_files_json(out_path != NULL, files_written, files_note);
        printf("}\n");
    } else {
        printf("%s: n = %lld, %lld eigenpairs (%s%s), %s\n", pos[0], (long long)n, (long long)o.k,
               sla_eig_which_name(o.which), o.shift_invert ? ", shift-invert" : "", info.method);
        for (sla_int i = 0; i < o.k; i++) printf("  %3lld  %24.17g  residual %.3e\n", (long long)i, l[i], res[i]);
        if (lobpcg)
            printf("  %lld iterations, %lld products with A, %.3f s\n", (long long)info.iterations,
                   (long long)info.nops, secs);
        else
            printf("  %lld restarts, %lld operator applications, %.3f s (factorization %.3f s)\n",
                   (long long)info.iterations, (long long)info.nops, secs, info.factor_seconds);
        if (info.note[0]) printf("  note: %s\n", info.note);
        if (files_written) printf("  wrote the eigenvectors to %s\n", out_path);
        if (out_path && !files_written) printf("  %s\n", files_note);
    }
    fflush(stdout);
    rc = EXIT_OK;
    if (st == SLA_NOT_CONVERGED) {
        err("%s", noconv);
        rc = EXIT_NOCONV;
    }
    if (nonfinite) {
        err("%s", files_note);
        rc = EXIT_NOCONV;
    }
done:
    free(l);
    free(V);
    free(res);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&M);
    sla_ctx_destroy(&ctx);
    cli_outputs_free(outs, 1);
    return rc;
}

