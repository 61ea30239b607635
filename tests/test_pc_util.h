/* Shared by the multigrid preconditioner tests (test_amg: hypre's
 * BoomerAMG; test_saamg: sla's smoothed aggregation): the true residual,
 * solves of A x = ones with a report line, the flatness check of iteration
 * counts under refinement, and the VJP of a preconditioned solve against
 * finite differences and dense LAPACK. Include after test_util.h. */
#ifndef SLA_TEST_PC_UTIL_H
#define SLA_TEST_PC_UTIL_H

/* ||b - A x|| / ||b|| (or with A^T) computed here, independently of the solver. */
static sla_solver_options pc_opts(sla_method m, sla_precond_kind pc, double rtol)
{
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = m;
    o.precond = pc;
    o.rtol = rtol;
    return o;
}

/* Solve A x = ones with the options (the info must name their
 * preconditioner); returns the iterations, -1 on failure. */
static long long solve_ones(sla_ctx *ctx, const sla_matrix *A, const sla_solver_options *o,
                            const char *what)
{
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    for (sla_int i = 0; i < n; i++) b[i] = 1.0;
    sla_solve_info info;
    long long its = -1;
    sla_status st = sla_solve(ctx, A, o, b, x, &info);
    CHECK_OK(ctx, st);
    if (st == SLA_OK) {
        double res = tu_relres(A, 0, b, x, 0);
        CHECK(info.converged);
        CHECK(res < o->rtol);
        CHECK(strcmp(info.precond, sla_precond_name(o->precond)) == 0);
        its = info.iterations;
        printf("  %-28s n %8lld  %-8s %3lld iterations, true residual %.2e, setup %.3f s, "
               "solve %.3f s\n",
               what, (long long)n, info.method, its, res, info.setup_seconds, info.solve_seconds);
    }
    free(b);
    free(x);
    return its;
}

/* Iteration counts over a refinement sequence: nearly flat (max <= ratio
 * min + slack) and at most maxits. */
static void check_flat(const long long *its, int count, double ratio, double slack, long long maxits)
{
    long long lo = its[0], hi = its[0];
    for (int k = 0; k < count; k++) {
        CHECK(its[k] > 0);
        lo = its[k] < lo ? its[k] : lo;
        hi = its[k] > hi ? its[k] : hi;
    }
    CHECK(lo > 0 && (double)hi <= ratio * (double)lo + slack);
    CHECK(hi <= maxits);
}

/* CG + pc on 2D Poisson 64^2..512^2, 3D Poisson 12^3..40^3 and
 * anisotropic diffusion (eps 0.01) 64^2..256^2: each family's iteration
 * counts nearly flat (check_flat with 1.5, slack, maxits). */
static void check_scaling(sla_ctx *ctx, sla_precond_kind pc, double slack, long long maxits)
{
    const char *name = sla_precond_name(pc);
    const sla_int N2[] = {64, 128, 256, 512}, N3[] = {12, 24, 40};
    long long its[4];
    sla_solver_options o = pc_opts(SLA_METHOD_CG, pc, 1e-8);
    for (int fam = 0; fam < 3; fam++) {
        printf("%s, CG + %s:\n",
               fam == 0 ? "2D Poisson" : fam == 1 ? "3D Poisson" : "anisotropic diffusion (eps 0.01)", name);
        int count = fam == 0 ? 4 : 3;
        for (int k = 0; k < count; k++) {
            sla_matrix *A = NULL;
            CHECK_OK(ctx, fam == 0   ? sla_gen_poisson(ctx, 2, N2[k], &A)
                          : fam == 1 ? sla_gen_poisson(ctx, 3, N3[k], &A)
                                     : sla_gen_aniso2d(ctx, N2[k], 0.01, &A));
            its[k] = solve_ones(ctx, A, &o, fam == 0 ? "poisson2d" : fam == 1 ? "poisson3d" : "aniso2d");
            sla_matrix_destroy(&A);
        }
        check_flat(its, count, 1.5, slack, maxits);
    }
}

/* L(A) = g . x with A x = b on an N x N variable-coefficient diffusion
 * matrix, CG + preconditioner pc: dL/dA by the adjoint against central
 * differences of single entries (which make A nonsymmetric: the
 * differences solve with GMRES, alternating pc and fd_alt), and
 * dL/db = A^-T g against dense LAPACK. */
static void check_vjp(sla_ctx *ctx, sla_precond_kind pc, sla_int N, sla_precond_kind fd_alt)
{
    printf("VJP through a CG + %s solve:\n", sla_precond_name(pc));
    double *kappa = malloc((size_t)((N + 1) * (N + 1)) * sizeof *kappa);
    for (sla_int c = 0; c < (N + 1) * (N + 1); c++) kappa[c] = 1.0 + 0.5 * sin(0.7 * (double)c);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_diffusion2d(ctx, N, kappa, &A));
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *b = malloc((size_t)n * sizeof *b), *g = malloc((size_t)n * sizeof *g);
    double *x = calloc((size_t)n, sizeof *x), *gb = malloc((size_t)n * sizeof *gb);
    double *gA = malloc((size_t)nnz * sizeof *gA), *xp = calloc((size_t)n, sizeof *xp);
    tu_fill(b, n, 21);
    tu_fill(g, n, 22);
    sla_solver_options o = pc_opts(SLA_METHOD_CG, pc, 1e-13);
    sla_solver *S = NULL;
    sla_solve_info info;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
    CHECK_OK(ctx, sla_solver_solve_vjp(ctx, S, 0, 1, x, n, g, n, gb, n, gA, &info));
    CHECK(strcmp(info.precond, sla_precond_name(pc)) == 0);
    sla_solver_destroy(&S);

    /* finite differences on a borrowed copy of the values */
    double *vals = malloc((size_t)nnz * sizeof *vals);
    memcpy(vals, sla_matrix_values(A, 0), (size_t)nnz * sizeof *vals);
    sla_int *colind = malloc((size_t)nnz * sizeof *colind);
    sla_matrix_get_colind(A, colind);
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(A), colind, SLA_F64, 1, vals,
                                      SLA_BORROW, &B));
    const sla_int picks[] = {0, 7, nnz / 3, nnz / 2 + 1, nnz - 1};
    const sla_precond_kind pcs[] = {pc, fd_alt};
    double worst = 0.0;
    for (int q = 0; q < 5; q++) {
        sla_int k = picks[q];
        double h = 1e-5 * fmax(1.0, fabs(vals[k])), Lp = 0.0, Lm = 0.0, v0 = vals[k];
        sla_solver_options f = pc_opts(SLA_METHOD_GMRES, pcs[q % 2], 1e-13);
        for (int side = 0; side < 2; side++) {
            vals[k] = v0 + (side ? -h : h);
            CHECK_OK(ctx, sla_solve(ctx, B, &f, b, xp, &info));
            double L = 0.0;
            for (sla_int i = 0; i < n; i++) L += g[i] * xp[i];
            if (side) Lm = L;
            else Lp = L;
        }
        vals[k] = v0;
        double fd = (Lp - Lm) / (2.0 * h);
        double err = fabs(fd - gA[k]) / fmax(1.0, fabs(gA[k]));
        worst = fmax(worst, err);
        CHECK(err < 1e-6);
    }
    printf("  dL/dA vs central differences (5 entries): worst error %.1e\n", worst);
    double *lr = malloc((size_t)n * sizeof *lr);
    CHECK(tu_dense_solve(A, 1, g, lr) == 0);
    double d = tu_reldiff(n, gb, lr);
    printf("  dL/db vs LAPACK: %.1e\n", d);
    CHECK(d < 1e-10);
    free(lr);
    sla_matrix_destroy(&B);
    free(colind);
    free(vals);
    free(kappa);
    free(b);
    free(g);
    free(x);
    free(gb);
    free(gA);
    free(xp);
    sla_matrix_destroy(&A);
}

#endif
