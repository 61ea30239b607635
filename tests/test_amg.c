/* The BoomerAMG preconditioner (precond amg): mesh-independent iteration
 * counts on 2D/3D Poisson and anisotropic diffusion, nonsymmetric
 * convection-diffusion with GMRES and BiCGStab, the exact transpose of the
 * cycle (dot-product identity) for every supported smoother, adjoint
 * solves against dense LAPACK and the VJP against finite differences,
 * refresh with and without reuse of the hierarchy, batches from several
 * threads, options and errors. Without hypre in the build only the
 * SLA_ERR_UNAVAILABLE answer is checked. */
#include "test_util.h"

#include "test_pc_util.h"

#include "solvers/krylov.h"

#include <time.h>

/* Process CPU time (all threads): the kept-vs-rebuilt comparison below
 * holds on a loaded machine, where wall-clock ratios do not. */
static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static sla_solver_options amg_opts(sla_method m, double rtol)
{
    return pc_opts(m, SLA_PRECOND_AMG, rtol);
}

static void test_poisson(sla_ctx *ctx)
{
    check_scaling(ctx, SLA_PRECOND_AMG, 0.0, 30);

    /* auto picks a Krylov method when a preconditioner is given */
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 100, &A));
    sla_solver_options a = amg_opts(SLA_METHOD_AUTO, 1e-10);
    CHECK(solve_ones(ctx, A, &a, "poisson2d, method auto") > 0);
    sla_matrix_destroy(&A);
    /* a W-cycle and the other smoothers converge too */
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 60, &A));
    const int relax[] = {6, 3, 13, 18};
    for (int k = 0; k < 4; k++) {
        sla_solver_options w = amg_opts(SLA_METHOD_CG, 1e-8);
        w.amg.relax_type = relax[k];
        w.amg.cycle_type = k == 0 ? 2 : 1;
        char what[64];
        snprintf(what, sizeof what, "poisson2d, relax %d %s", relax[k], k == 0 ? "W" : "V");
        CHECK(solve_ones(ctx, A, &w, what) > 0);
    }
    sla_matrix_destroy(&A);
}

/* Nonsymmetric convection-diffusion: GMRES and BiCGStab with AMG, and the
 * transposed solve against LAPACK. */
static void test_convdiff(sla_ctx *ctx)
{
    printf("convection-diffusion (b = (20, 10)), nonsymmetric:\n");
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 40, 20.0, 10.0, &A));
    sla_int n = sla_matrix_nrows(A);
    const sla_method ms[] = {SLA_METHOD_GMRES, SLA_METHOD_BICGSTAB};
    for (int k = 0; k < 2; k++) {
        sla_solver_options o = amg_opts(ms[k], 1e-10);
        CHECK(solve_ones(ctx, A, &o, "convdiff2d") > 0);
    }
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    double *xr = malloc((size_t)n * sizeof *xr);
    tu_fill(b, n, 7);
    CHECK(tu_dense_solve(A, 1, b, xr) == 0);
    for (int k = 0; k < 2; k++) {
        sla_solver_options o = amg_opts(ms[k], 1e-12);
        sla_solver *S = NULL;
        sla_solve_info info;
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
        CHECK_OK(ctx, sla_solver_solve_transpose(ctx, S, 0, 1, b, n, x, n, &info));
        double e = tu_reldiff(n, x, xr);
        printf("  transposed solve, %-8s %3lld iterations, error vs LAPACK %.2e\n", info.method,
               (long long)info.iterations, e);
        CHECK(e < 1e-9);
        CHECK(tu_relres(A, 0, b, x, 1) < 1e-12);
        sla_solver_destroy(&S);
    }
    free(b);
    free(x);
    free(xr);
    sla_matrix_destroy(&A);
}

/* <M^-1 r, s> = <r, M^-T s> for the pc itself, for symmetric and
 * nonsymmetric A and each smoother whose transpose is implemented. */
static void dot_test(sla_ctx *ctx, const sla_matrix *A, int relax, int cycle, const char *what)
{
    sla_solver_options o = amg_opts(SLA_METHOD_GMRES, 1e-8);
    o.amg.relax_type = relax;
    o.amg.cycle_type = cycle;
    sla__pc *pc = NULL;
    CHECK_OK(ctx, sla__pc_create(ctx, SLA_PRECOND_AMG, A, 0, &o, &pc));
    if (!pc) return;
    sla_int n = sla_matrix_nrows(A);
    double *r = malloc((size_t)n * sizeof *r), *s = malloc((size_t)n * sizeof *s);
    double *mr = malloc((size_t)n * sizeof *mr), *ms = malloc((size_t)n * sizeof *ms);
    double *r0 = malloc((size_t)n * sizeof *r0);
    tu_fill(r, n, 11);
    tu_fill(s, n, 12);
    memcpy(r0, r, (size_t)n * sizeof *r);
    CHECK_OK(ctx, sla__pc_apply(pc, false, r, mr, 1));
    CHECK(memcmp(r, r0, (size_t)n * sizeof *r) == 0); /* r is not touched */
    CHECK_OK(ctx, sla__pc_apply(pc, true, s, ms, 1));
    double a = 0.0, c = 0.0, na = 0.0;
    for (sla_int i = 0; i < n; i++) {
        a += mr[i] * s[i];
        c += r[i] * ms[i];
        na += fabs(mr[i] * s[i]);
    }
    double rel = fabs(a - c) / na;
    printf("  dot test %-34s relax %2d %s: |<M^-1 r, s> - <r, M^-T s>| / sum = %.1e\n", what,
           relax, cycle == 1 ? "V" : "W", rel);
    CHECK(rel < 1e-12);
    /* applying in place (z aliases r) gives the same result */
    memcpy(r0, r, (size_t)n * sizeof *r);
    CHECK_OK(ctx, sla__pc_apply(pc, true, r0, r0, 1));
    CHECK_OK(ctx, sla__pc_apply(pc, true, r, mr, 1));
    CHECK(tu_reldiff(n, r0, mr) < 1e-14);
    free(r);
    free(s);
    free(mr);
    free(ms);
    free(r0);
    sla__pc_destroy(&pc);
}

/* Matrices too small for hypre to coarsen (one level): the cycle is an
 * exact solve, so CG converges at once and the transpose is exact. Before,
 * hypre's single forward l1-Gauss-Seidel sweep made CG stall on random
 * SPD matrices of 2-15 rows. */
static void test_one_level(sla_ctx *ctx)
{
    int fails = 0;
    for (int n = 2; n <= 15; n++)
        for (uint64_t seed = 1; seed <= 8; seed++) {
            sla_matrix *A = NULL;
            CHECK_OK(ctx, sla_gen_random(ctx, n, 3, SLA_GEN_SPD, seed, &A));
            double b[16], x[16];
            tu_fill(b, n, (int)seed);
            sla_solver_options o = amg_opts(SLA_METHOD_CG, 1e-10);
            sla_solve_info info;
            sla_status st = sla_solve(ctx, A, &o, b, x, &info);
            if (st != SLA_OK || !info.converged || info.iterations > 20) fails++;
            if (n == 3 || n == 9) dot_test(ctx, A, 13, 1, "one level, SPD");
            sla_matrix_destroy(&A);
            CHECK_OK(ctx, sla_gen_random(ctx, n, 3, SLA_GEN_GENERAL, seed, &A));
            if (n == 3 || n == 9) dot_test(ctx, A, 13, 1, "one level, general");
            sla_matrix_destroy(&A);
        }
    printf("  one-level hierarchies: CG+AMG failed on %d of %d small SPD matrices\n", fails, 14 * 8);
    CHECK(fails == 0);
}

static void test_transpose_identity(sla_ctx *ctx)
{
    printf("transpose of the cycle:\n");
    sla_matrix *P = NULL, *C = NULL, *T = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 48, &P));
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 48, 30.0, -15.0, &C));
    CHECK_OK(ctx, sla_gen_poisson(ctx, 1, 5, &T)); /* too small to coarsen: one level */
    dot_test(ctx, P, 8, 1, "poisson2d (M^-T = M^-1)");
    dot_test(ctx, P, 13, 2, "poisson2d, W-cycle (not self-adjoint)");
    dot_test(ctx, P, 16, 1, "poisson2d, Chebyshev (self-adjoint)");
    const int relax[] = {8, 13, 14, 6, 3, 4, 0, 7, 18};
    for (int k = 0; k < 9; k++) dot_test(ctx, C, relax[k], 1, "convdiff2d");
    dot_test(ctx, C, 8, 2, "convdiff2d");
    dot_test(ctx, C, 13, 2, "convdiff2d");
    dot_test(ctx, T, 13, 1, "poisson1d n = 5 (one level)");

    /* a smoother whose transpose is not implemented: forward works, the
     * transposed apply says so */
    sla_solver_options o = amg_opts(SLA_METHOD_GMRES, 1e-8);
    o.amg.relax_type = 16; /* Chebyshev */
    sla__pc *pc = NULL;
    CHECK_OK(ctx, sla__pc_create(ctx, SLA_PRECOND_AMG, C, 0, &o, &pc));
    if (pc) {
        sla_int n = sla_matrix_nrows(C);
        double *r = malloc((size_t)n * sizeof *r), *z = malloc((size_t)n * sizeof *z);
        tu_fill(r, n, 3);
        CHECK(sla__pc_apply(pc, false, r, z, 1) == SLA_OK);
        CHECK(sla__pc_apply(pc, true, r, z, 1) == SLA_ERR_UNSUPPORTED);
        free(r);
        free(z);
        sla__pc_destroy(&pc);
    }
    sla_matrix_destroy(&P);
    sla_matrix_destroy(&C);
    sla_matrix_destroy(&T);
}

/* New values on a borrowed matrix: with reuse the hierarchy is kept for
 * `reuse` refreshes (cheap), then rebuilt; without, rebuilt every time. */
static void test_refresh(sla_ctx *ctx)
{
    printf("refresh after new values:\n");
    const sla_int N = 160;
    sla_int nk = (N + 1) * (N + 1);
    double *kappa = malloc((size_t)nk * sizeof *kappa);
    for (sla_int c = 0; c < nk; c++) kappa[c] = 1.0;
    sla_matrix *A0 = NULL;
    CHECK_OK(ctx, sla_gen_diffusion2d(ctx, N, kappa, &A0));
    sla_int n = sla_matrix_nrows(A0), nnz = sla_matrix_nnz(A0);
    double *vals = malloc((size_t)nnz * sizeof *vals);
    memcpy(vals, sla_matrix_values(A0, 0), (size_t)nnz * sizeof *vals);
    sla_int *colind = malloc((size_t)nnz * sizeof *colind);
    sla_matrix_get_colind(A0, colind);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(A0), colind, SLA_F64, 1, vals,
                                      SLA_BORROW, &A));
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    for (sla_int i = 0; i < n; i++) b[i] = 1.0;
    for (int reuse = 0; reuse <= 3; reuse += 3) {
        memcpy(vals, sla_matrix_values(A0, 0), (size_t)nnz * sizeof *vals); /* kappa = 1 */
        sla_solver_options o = amg_opts(SLA_METHOD_CG, 1e-9);
        o.amg.reuse = reuse;
        sla_solver *S = NULL;
        double tc = cpu_now();
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
        double t_create = cpu_now() - tc;
        for (int round = 1; round <= 4; round++) {
            for (sla_int c = 0; c < nk; c++) /* smooth, growing variation of kappa */
                kappa[c] = 1.0 + 0.15 * round * sin(0.05 * (double)(c % (N + 1))) *
                                     cos(0.03 * (double)(c / (N + 1)));
            CHECK_OK(ctx, sla_gen_diffusion2d_values(ctx, N, kappa, vals));
            double t0 = cpu_now();
            CHECK_OK(ctx, sla_solver_refresh(ctx, S));
            double t_refresh = cpu_now() - t0;
            sla_solve_info info;
            CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
            double res = tu_relres(A, 0, b, x, 0);
            CHECK(res < 1e-9);
            bool kept = reuse > 0 && round <= reuse;
            printf("  reuse %d, refresh %d: %-7s %.4f s (set-up %.4f s), %lld iterations, "
                   "residual %.1e\n",
                   reuse, round, kept ? "kept" : "rebuilt", t_refresh, t_create,
                   (long long)info.iterations, res);
            /* kept or rebuilt: the solve info's note says which (times are
             * printed above, not asserted: a loaded machine bends them) */
            if (reuse > 0) CHECK(strstr(info.note, kept ? "hierarchy kept" : "hierarchy rebuilt") != NULL);
            else CHECK(strstr(info.note, "hierarchy") == NULL);
        }
        sla_solver_destroy(&S);
    }
    free(b);
    free(x);
    free(kappa);
    free(vals);
    free(colind);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&A0);
}

/* Two value arrays solved in parallel (the batch runs items on several
 * threads; hypre calls are serialized), against one-at-a-time solves. */
static void test_batch(sla_ctx *ctx)
{
    sla_matrix *A1 = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 60, &A1));
    sla_int n = sla_matrix_nrows(A1), nnz = sla_matrix_nnz(A1);
    const int nb = 4;
    double *vals = malloc((size_t)(nb * nnz) * sizeof *vals);
    for (int q = 0; q < nb; q++)
        for (sla_int k = 0; k < nnz; k++)
            vals[q * nnz + k] = ((const double *)sla_matrix_values(A1, 0))[k] * (1.0 + q);
    sla_int *colind = malloc((size_t)nnz * sizeof *colind);
    sla_matrix_get_colind(A1, colind);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(A1), colind, SLA_F64, nb, vals,
                                      SLA_COPY, &A));
    double *b = malloc((size_t)(nb * n) * sizeof *b), *x = calloc((size_t)(nb * n), sizeof *x);
    tu_fill(b, nb * n, 5);
    sla_solver_options o = amg_opts(SLA_METHOD_CG, 1e-10);
    sla_solver *S = NULL;
    sla_solve_info info[4];
    sla_ctx_set_threads(ctx, 2);
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    CHECK_OK(ctx, sla_solver_solve_batch(ctx, S, b, x, info));
    for (int q = 0; q < nb; q++) CHECK(tu_relres(A, q, b + q * n, x + q * n, 0) < 1e-10);
    printf("batch of %d value arrays on 2 threads: %lld %lld %lld %lld iterations\n", nb,
           (long long)info[0].iterations, (long long)info[1].iterations,
           (long long)info[2].iterations, (long long)info[3].iterations);
    sla_ctx_set_threads(ctx, 0);
    sla_solver_destroy(&S);
    free(b);
    free(x);
    free(vals);
    free(colind);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&A1);
}

static void test_options_errors(sla_ctx *ctx)
{
    sla_solver_options o;
    sla_solver_options_default(&o);
    CHECK(o.amg.cycle_type == 1 && o.amg.max_levels == 25 && o.amg.reuse == 0);
    CHECK(strcmp(sla_precond_name(SLA_PRECOND_AMG), "amg") == 0);
    CHECK_OK(ctx, sla_solver_options_parse(ctx,
                                           "precond=amg,amg_threshold=0.5,amg_coarsen=8,"
                                           "amg_interp=0,amg_pmax=3,amg_agg_levels=0,amg_relax=6,"
                                           "amg_cycle=2,amg_max_levels=10,amg_reuse=4",
                                           &o));
    CHECK(o.precond == SLA_PRECOND_AMG && o.amg.strong_threshold == 0.5 &&
          o.amg.coarsen_type == 8 && o.amg.interp_type == 0 && o.amg.pmax == 3 &&
          o.amg.agg_levels == 0 && o.amg.relax_type == 6 && o.amg.cycle_type == 2 &&
          o.amg.max_levels == 10 && o.amg.reuse == 4);
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "amg_cycle=3", &o), SLA_ERR_ARGUMENT, "amg_cycle");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "amg_relx=6", &o), SLA_ERR_ARGUMENT, "amg_relax");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "amg_threshold=2", &o), SLA_ERR_ARGUMENT,
              "amg_threshold");

    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 8, &A));
    sla_solver *S = NULL;
    sla_solver_options bad = amg_opts(SLA_METHOD_CG, 1e-8);
    bad.amg.relax_type = 42;
    CHECK_ERR(ctx, sla_solver_create(ctx, A, &bad, &S), SLA_ERR_ARGUMENT, "relax_type");
    CHECK(S == NULL);
    bad = amg_opts(SLA_METHOD_CG, 1e-8);
    bad.amg.max_levels = 0;
    CHECK_ERR(ctx, sla_solver_create(ctx, A, &bad, &S), SLA_ERR_ARGUMENT, "max_levels");
    sla_matrix_destroy(&A);

    /* a zero diagonal */
    const sla_int rp[] = {0, 2, 4}, ci[] = {0, 1, 0, 1};
    const double v[] = {1.0, 2.0, 3.0, 0.0};
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 2, 2, rp, ci, SLA_F64, 1, v, SLA_COPY, &A));
    sla_solver_options z = amg_opts(SLA_METHOD_GMRES, 1e-8);
    CHECK_ERR(ctx, sla_solver_create(ctx, A, &z, &S), SLA_ERR_SINGULAR, "row 1");
    sla_matrix_destroy(&A);

    /* float32 values and n = 1 */
    const sla_int rp1[] = {0, 1}, ci1[] = {0};
    const float v1[] = {4.0f};
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 1, 1, rp1, ci1, SLA_F32, 1, v1, SLA_COPY, &A));
    double b1 = 2.0, x1 = 0.0;
    sla_solve_info info;
    CHECK_OK(ctx, sla_solve(ctx, A, &z, &b1, &x1, &info));
    CHECK_CLOSE(x1, 0.5, 1e-12);
    sla_matrix_destroy(&A);
}

/* ---- allocation failures: every allocation of the AMG paths fails once ---- */


/* Set-up, forward and transposed solves, refresh, on a nonsymmetric matrix. */
static sla_status amg_scenario(sla_ctx *c, const sla_matrix *A)
{
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    for (sla_int i = 0; i < n; i++) b[i] = 1.0;
    sla_solver_options o = amg_opts(SLA_METHOD_GMRES, 1e-8);
    sla_solver *S = NULL;
    sla_status st = sla_solver_create(c, A, &o, &S);
    if (st >= 0) st = sla_solver_solve(c, S, 0, 1, b, n, x, n, NULL);
    if (st >= 0) st = sla_solver_solve_transpose(c, S, 0, 1, b, n, x, n, NULL);
    if (st >= 0) st = sla_solver_refresh(c, S);
    if (st >= 0) st = sla_solver_solve_transpose(c, S, 0, 1, b, n, x, n, NULL);
    sla_solver_destroy(&S);
    free(b);
    free(x);
    return st;
}

static void test_alloc_failures(void)
{
    sla_matrix *A = NULL;
    CHECK_OK(NULL, sla_gen_convdiff2d(NULL, 12, 10.0, 5.0, &A));
    counter cnt = {0, -1, 0, 0};
    sla_allocator a = {count_malloc, count_free, &cnt};
    sla_ctx *c = NULL;
    sla_ctx_create(&c);
    sla_ctx_set_allocator(c, &a);
    sla_ctx_set_threads(c, 1);
    CHECK(amg_scenario(c, A) >= 0);
    CHECK(cnt.live == 0);
    long total = cnt.calls, points = 0;
    for (long k = 0; k < total; k++) {
        cnt.calls = 0;
        cnt.fail_at = k;
        cnt.failures = 0;
        sla_status st = amg_scenario(c, A);
        if (cnt.failures == 0) continue;
        points++;
        if (st != SLA_ERR_NOMEM || cnt.live != 0)
            fprintf(stderr, "  failing allocation %ld -> %s, %ld live: %s\n", k,
                    sla_status_name(st), cnt.live, sla_ctx_message(c));
        CHECK(st == SLA_ERR_NOMEM);
        CHECK(cnt.live == 0);
    }
    printf("allocation failures: %ld points checked\n", points);
    CHECK(points > 10);
    sla_ctx_destroy(&c);
    sla_matrix_destroy(&A);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 4, &A));
    sla_solver_options o = amg_opts(SLA_METHOD_CG, 1e-8);
    sla__pc *pc = NULL;
    sla_status st = sla__pc_create(ctx, SLA_PRECOND_AMG, A, 0, &o, &pc);
    sla__pc_destroy(&pc);
    if (st == SLA_ERR_UNAVAILABLE) {
        CHECK(strstr(sla_ctx_message(ctx), "hypre was not found") != NULL);
        sla_solver *S = NULL;
        CHECK_ERR(ctx, sla_solver_create(ctx, A, &o, &S), SLA_ERR_UNAVAILABLE, "hypre");
        CHECK(S == NULL);
        printf("test_amg: hypre is not in this build; only the unavailable answer checked\n");
    }
    sla_matrix_destroy(&A);
    if (st != SLA_ERR_UNAVAILABLE) {
        CHECK_OK(ctx, st);
        double t0 = now();
        test_options_errors(ctx);
        test_transpose_identity(ctx);
        test_one_level(ctx);
        double t1 = now();
        test_poisson(ctx);
        double t2 = now();
        test_convdiff(ctx);
        check_vjp(ctx, SLA_PRECOND_AMG, 12, SLA_PRECOND_ILU0);
        test_refresh(ctx);
        test_batch(ctx);
        double t3 = now();
        test_alloc_failures();
        printf("sections: transposes %.1f s, convergence %.1f s, nonsymmetric/VJP/refresh/batch "
               "%.1f s, allocation failures %.1f s\n",
               t1 - t0, t2 - t1, t3 - t2, now() - t3);
    }
    sla_ctx_destroy(&ctx);
    return tu_finish("test_amg");
}
