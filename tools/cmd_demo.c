/* cmd_demo.c — `sla demo`: dispatch to the inverse demo (demo_inverse.c)
 * and the Poisson demo, which solves 2D Poisson, differentiates L = sum(x)
 * with one adjoint solve and checks dL/db and dL/dA against central finite
 * differences. Its solver flags are checked by the library's option
 * parser. Part of the CLI, not the library. */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#include "cli.h"
#include "demo_inverse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_demo_help[] =
    "usage: sla demo [inverse|poisson] [options]\n"
    "\n"
    "  sla demo                  the inverse demo with its defaults, then the Poisson\n"
    "                            demo with its defaults (what 'make run' runs)\n"
    "  sla demo inverse [opts]   recover a conductivity field by gradient descent\n"
    "                            through the differentiable solve (see\n"
    "                            'sla demo inverse --help')\n"
    "  sla demo poisson [opts]   the Poisson demo alone; options without a\n"
    "                            subcommand also run it alone:\n"
    "\n"
    "      [--n N] [--method M] [--precond P] [--rtol R] [--threads T]\n"
    "\n"
    "Poisson demo: solve the 2D Poisson problem (N x N interior grid, default\n"
    "N = 256) with b = h^2 * ones, differentiate L = sum(x) with one adjoint\n"
    "solve, and check dL/db and dL/dA at one entry each against central finite\n"
    "differences (perturb, re-solve, compare). Defaults: method auto with no\n"
    "preconditioner (auto dispatch chooses a direct or a Krylov solver and the\n"
    "report's note says which and why), rtol 1e-12.\n";

static double vsum(const double *v, sla_int n)
{
    double s = 0.0;
    for (sla_int i = 0; i < n; i++) s += v[i];
    return s;
}

static int demo_solve(sla_ctx *ctx, sla_solver *S, sla_int n, const double *b, double *x,
                      double *L, const char *what)
{
    sla_solve_info inf;
    sla_status st = sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &inf);
    if (st < 0) return lib_fail(ctx, st, what);
    if (!inf.converged) {
        char r[48];
        reason_string(inf.reason, r, sizeof r);
        err("demo: %s did not converge (%s)", what, r);
        return EXIT_NOCONV;
    }
    *L = vsum(x, n);
    return 0;
}

static int demo_poisson(int argc, char **argv, int start)
{
    optdef defs[] = {
        {"--n", "-N", 1, NULL, 0},       {"--method", NULL, 1, NULL, 0},
        {"--precond", NULL, 1, NULL, 0}, {"--rtol", NULL, 1, NULL, 0},
        {"--threads", NULL, 1, NULL, 0}, {"--help", "-h", 0, NULL, 0},
    };
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[1];
    int npos = 0;
    int rc = parse_args("demo", argc, argv, start, defs, nd, pos, 0, &npos);
    if (rc) return rc;
    if (optseen(defs, nd, "--help")) {
        fputs(cli_demo_help, stdout);
        return EXIT_OK;
    }
    long long N = 256, threads = 0;
    sla_solver_options opts;
    sla_solver_options_default(&opts);
    opts.method = SLA_METHOD_AUTO;
    opts.precond = SLA_PRECOND_NONE;
    opts.rtol = 1e-12;
    const int precond_given = optseen(defs, nd, "--precond");
    const char *s;
    if ((s = optval(defs, nd, "--n")) && parse_int("--n", s, 2, 4000, &N)) return EXIT_BAD;
    if (opt_threads(defs, nd, &threads)) return EXIT_BAD;

    sla_ctx *ctx = NULL;
    if ((rc = new_ctx(threads, &ctx))) return rc;
    /* the solver flags are the library's options, checked by it */
    static const cli_flag_key demo_flags[] = {
        {"--method", "method"}, {"--precond", "precond"}, {"--rtol", "rtol"}};
    rc = cli_solver_flags(ctx, "demo", defs, nd, demo_flags, 3, &opts);
    if (!rc && (s = optval(defs, nd, "--rtol")) && !(opts.rtol > 0)) {
        /* the finite-difference tolerance scales with rtol */
        fprintf(stderr, "sla demo: --rtol: must be > 0 (got %s)\n", s);
        rc = EXIT_BAD;
    }
    if (rc) {
        sla_ctx_destroy(&ctx);
        return rc;
    }

    sla_matrix *A = NULL, *Ap = NULL;
    sla_solver *S = NULL, *Sp = NULL;
    double *b = NULL, *x = NULL, *gx = NULL, *gb = NULL, *gA = NULL, *bp = NULL, *xp = NULL,
           *vals = NULL;
    sla_int *colind = NULL;
    sla_status st;

    double t = now_seconds();
    st = sla_gen_poisson(ctx, 2, (sla_int)N, &A);
    if (st < 0) {
        rc = lib_fail(ctx, st, "poisson2d");
        goto done;
    }
    t = now_seconds() - t;
    const sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    const double h = 1.0 / (double)(N + 1);
    printf("sla %s demo: 2D Poisson, 5-point stencil, N = %lld interior points per side\n",
           sla_version(), N);
    printf("  n = %lld unknowns, nnz = %lld, generated in %.3f s\n", (long long)n,
           (long long)nnz, t);
    printf("  b = h^2 * ones (h = 1/%lld), x0 = 0, rtol = %.0e, threads = %d\n", N + 1,
           opts.rtol, sla_ctx_threads(ctx));

    b = xcalloc((size_t)n, sizeof *b);
    x = xcalloc((size_t)n, sizeof *x);
    gx = xcalloc((size_t)n, sizeof *gx);
    gb = xcalloc((size_t)n, sizeof *gb);
    gA = xcalloc((size_t)nnz, sizeof *gA);
    bp = xcalloc((size_t)n, sizeof *bp);
    xp = xcalloc((size_t)n, sizeof *xp);
    vals = xcalloc((size_t)nnz, sizeof *vals);
    colind = xcalloc((size_t)nnz, sizeof *colind);
    if (!b || !x || !gx || !gb || !gA || !bp || !xp || !vals || !colind) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    for (sla_int i = 0; i < n; i++) {
        b[i] = h * h;
        gx[i] = 1.0;
    }

    st = sla_solver_create(ctx, A, &opts, &S);
    if (st == SLA_ERR_NOT_SPD && !precond_given) {
        printf("  note: ic0 failed (%s); falling back to jacobi\n", sla_ctx_message(ctx));
        opts.precond = SLA_PRECOND_JACOBI;
        st = sla_solver_create(ctx, A, &opts, &S);
    }
    if (st < 0) {
        rc = lib_fail(ctx, st, "demo");
        goto done;
    }

    /* Forward solve. */
    sla_solve_info fi, ai;
    char reason[48];
    st = sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &fi);
    if (st < 0) {
        rc = lib_fail(ctx, st, "demo solve");
        goto done;
    }
    reason_string(fi.reason, reason, sizeof reason);
    const double L = vsum(x, n);
    printf("\nforward solve  A x = b\n");
    printf("  method %s, precond %s, backend %s\n", fi.method, fi.precond, fi.backend);
    printf("  iterations %lld, residual %.3e (true, relative), reason %s\n",
           (long long)fi.iterations, fi.residual, reason);
    printf("  setup %.4f s, solve %.4f s\n", sla_solver_setup_seconds(S), fi.solve_seconds);
    if (fi.note[0]) printf("  note: %s\n", fi.note);
    printf("  L = sum(x) = %.12g, max x = %.6g (at the grid centre)\n", L,
           x[(N / 2) * N + N / 2]);

    /* Adjoint solve: gx = dL/dx = ones. */
    t = now_seconds();
    st = sla_solver_solve_vjp(ctx, S, 0, 1, x, n, gx, n, gb, n, gA, &ai);
    t = now_seconds() - t;
    if (st < 0) {
        rc = lib_fail(ctx, st, "demo adjoint");
        goto done;
    }
    reason_string(ai.reason, reason, sizeof reason);
    printf("\nadjoint solve  A^T lambda = dL/dx = ones  (VJP of L = sum(x))\n");
    printf("  iterations %lld, residual %.3e, reason %s, %.4f s (total VJP)\n",
           (long long)ai.iterations, ai.residual, reason, t);
    printf("  dL/db = lambda, dL/dA = -lambda x^T on the %lld stored entries\n",
           (long long)nnz);
    if (!fi.converged || !ai.converged) {
        err("demo: %s solve did not converge", fi.converged ? "adjoint" : "forward");
        rc = EXIT_NOCONV;
        goto done;
    }

    /* Finite-difference spot checks at the grid centre. */
    const sla_int i = (N / 2) * N + N / 2;
    const sla_int *rowptr = sla_matrix_rowptr(A);
    sla_matrix_get_colind(A, colind);
    sla_int kd = -1;
    for (sla_int p = rowptr[i]; p < rowptr[i + 1]; p++)
        if (colind[p] == i) kd = p;
    if (kd < 0) {
        err("demo: row %lld has no diagonal entry", (long long)i);
        rc = EXIT_INTERNAL;
        goto done;
    }
    printf("\nfinite-difference check (central differences, each a fresh re-solve)\n");
    double tfd = now_seconds();

    /* dL/db_i: L is linear in b, so a step the size of b_i is safe. */
    double Lp, Lm, db = h * h;
    memcpy(bp, b, (size_t)n * sizeof *bp);
    bp[i] = b[i] + db;
    if ((rc = demo_solve(ctx, S, n, bp, xp, &Lp, "FD solve (b + db)"))) goto done;
    bp[i] = b[i] - db;
    if ((rc = demo_solve(ctx, S, n, bp, xp, &Lm, "FD solve (b - db)"))) goto done;
    const double fd_b = (Lp - Lm) / (2 * db);
    const double rel_b = fabs(fd_b - gb[i]) / fmax(fabs(gb[i]), 1e-300);

    /* dL/dA_ii: perturbing a diagonal entry keeps A symmetric positive
     * definite, so the same method and preconditioner apply. */
    st = sla_matrix_copy(ctx, A, &Ap);
    if (st < 0) {
        rc = lib_fail(ctx, st, "demo");
        goto done;
    }
    memcpy(vals, sla_matrix_values(A, 0), (size_t)nnz * sizeof *vals);
    const double aii = vals[kd], da = 1e-4 * fabs(aii);
    vals[kd] = aii + da;
    st = sla_matrix_set_values(ctx, Ap, 0, vals);
    if (st >= 0) st = sla_solver_create(ctx, Ap, &opts, &Sp);
    if (st < 0) {
        rc = lib_fail(ctx, st, "demo");
        goto done;
    }
    if ((rc = demo_solve(ctx, Sp, n, b, xp, &Lp, "FD solve (A + dA)"))) goto done;
    vals[kd] = aii - da;
    st = sla_matrix_set_values(ctx, Ap, 0, vals);
    if (st >= 0) st = sla_solver_refresh(ctx, Sp);
    if (st < 0) {
        rc = lib_fail(ctx, st, "demo");
        goto done;
    }
    if ((rc = demo_solve(ctx, Sp, n, b, xp, &Lm, "FD solve (A - dA)"))) goto done;
    const double fd_a = (Lp - Lm) / (2 * da);
    const double rel_a = fabs(fd_a - gA[kd]) / fmax(fabs(gA[kd]), 1e-300);
    tfd = now_seconds() - tfd;

    /* The solves are accurate to about rtol * cond(A) ~ rtol * (N+1)^2. */
    const double tol = fmax(1e-6, 1e3 * opts.rtol * (double)(N + 1) * (double)(N + 1));
    char lb[64], la[64];
    snprintf(lb, sizeof lb, "dL/db[%lld]", (long long)i);
    snprintf(la, sizeof la, "dL/dA[%lld,%lld]", (long long)i, (long long)i);
    printf("  %-20s adjoint %+.10e  fd %+.10e  rel. diff %.2e  (step %.1e)\n", lb, gb[i], fd_b,
           rel_b, db);
    printf("  %-20s adjoint %+.10e  fd %+.10e  rel. diff %.2e  (step %.1e)\n", la, gA[kd], fd_a,
           rel_a, da);
    printf("  4 re-solves in %.3f s; tolerance %.1e\n", tfd, tol);
    if (rel_b <= tol && rel_a <= tol) {
        printf("\nresult: OK (adjoint gradients match finite differences)\n");
        rc = EXIT_OK;
    } else {
        printf("\nresult: FAILED (adjoint and finite differences disagree)\n");
        err("demo: finite-difference check failed (rel. diff %.2e / %.2e > %.1e)", rel_b,
            rel_a, tol);
        rc = EXIT_INTERNAL;
    }

done:
    fflush(stdout);
    sla_solver_destroy(&Sp);
    sla_solver_destroy(&S);
    sla_matrix_destroy(&Ap);
    sla_matrix_destroy(&A);
    free(b);
    free(x);
    free(gx);
    free(gb);
    free(gA);
    free(bp);
    free(xp);
    free(vals);
    free(colind);
    sla_ctx_destroy(&ctx);
    return rc;
}

/* sla demo: no arguments runs the inverse demo and then the Poisson demo;
 * "inverse" / "poisson" runs one; options alone run the Poisson demo. */
int cmd_demo(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[2], "inverse")) return sla_demo_inverse(argc, argv, 3);
    if (argc > 2 && !strcmp(argv[2], "poisson")) return demo_poisson(argc, argv, 3);
    if (argc > 2) return demo_poisson(argc, argv, 2);
    int rc = sla_demo_inverse(argc, argv, 2);
    printf("\n");
    fflush(stdout);
    int rc2 = demo_poisson(argc, argv, 2);
    return rc ? rc : rc2;
}

