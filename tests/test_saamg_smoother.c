/* precond saamg's smoother option (saamg_smoother = gs | cheby | spai0):
 * each converges with mesh-independent CG iterations on 2D/3D Poisson,
 * matches dense LAPACK, gives a symmetric positive definite cycle (the
 * dot-product identity, 1 and 2 threads, the transposed apply equal),
 * survives a refresh (the Chebyshev bound and the SPAI0 diagonal follow
 * the new values), and a bad value is refused by the parser and by the
 * solver. */
#include "test_util.h"

#include "test_pc_util.h"

#include "solvers/krylov.h"

static const char *const names[] = {"gs", "cheby", "spai0"};

static sla_solver_options sm_opts(int sm, double rtol)
{
    sla_solver_options o = pc_opts(SLA_METHOD_CG, SLA_PRECOND_SAAMG, rtol);
    o.saamg_smoother = sm;
    return o;
}

static void test_iterations(sla_ctx *ctx, int sm)
{
    const sla_int N2[] = {64, 128, 256}, N3[] = {16, 32};
    long long its[3];
    sla_solver_options o = sm_opts(sm, 1e-8);
    for (int k = 0; k < 3; k++) {
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_gen_poisson(ctx, 2, N2[k], &A));
        its[k] = solve_ones(ctx, A, &o, names[sm]);
        CHECK(its[k] > 0 && its[k] <= 22);
        sla_matrix_destroy(&A);
    }
    CHECK(its[2] <= its[0] + 6); /* flat in the mesh size */
    for (int k = 0; k < 2; k++) {
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_gen_poisson(ctx, 3, N3[k], &A));
        long long it = solve_ones(ctx, A, &o, names[sm]);
        CHECK(it > 0 && it <= 20);
        sla_matrix_destroy(&A);
    }
}

/* Against dense LAPACK (rtol 1e-12, two levels), float64 and float32. */
static void test_reference(sla_ctx *ctx, int sm)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 45, &A));
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    double *xr = malloc((size_t)n * sizeof *xr);
    tu_fill(b, n, 5);
    sla_solver_options o = sm_opts(sm, 1e-12);
    sla_solve_info info;
    CHECK_OK(ctx, sla_solve(ctx, A, &o, b, x, &info));
    CHECK(tu_dense_solve(A, 0, b, xr) == 0);
    double d = tu_reldiff(n, x, xr);
    sla_matrix *F = tu_to_f32(ctx, A);
    CHECK(F != NULL);
    double *x2 = calloc((size_t)n, sizeof *x2);
    sla_solve_info i2;
    CHECK_OK(ctx, sla_solve(ctx, F, &o, b, x2, &i2));
    double d2 = tu_reldiff(n, x2, xr);
    printf("  %-6s poisson2d 45^2 rtol 1e-12: %lld iterations, vs LAPACK %.1e; float32 values %lld, %.1e\n",
           names[sm], (long long)info.iterations, d, (long long)i2.iterations, d2);
    CHECK(d < 1e-9 && d2 < 1e-9);
    CHECK(info.iterations == i2.iterations);
    sla_matrix_destroy(&F);
    sla_matrix_destroy(&A);
    free(b);
    free(x);
    free(x2);
    free(xr);
}

/* <M r, s> = <r, M s>, <M r, r> > 0, transposed apply equal, 1 and 2
 * threads (100^2 rows: the finest level is threaded). */
static void test_symmetry(sla_ctx *ctx, int sm)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 100, &A));
    sla_solver_options o = sm_opts(sm, 1e-8);
    sla__pc *pc = NULL;
    CHECK_OK(ctx, sla__pc_create(ctx, SLA_PRECOND_SAAMG, A, 0, &o, &pc));
    sla_int n = sla_matrix_nrows(A);
    double *r = malloc((size_t)n * sizeof *r), *s = malloc((size_t)n * sizeof *s);
    double *mr = malloc((size_t)n * sizeof *mr), *ms = malloc((size_t)n * sizeof *ms);
    double *mt = malloc((size_t)n * sizeof *mt), *m1 = malloc((size_t)n * sizeof *m1);
    tu_fill(r, n, 11);
    tu_fill(s, n, 12);
    for (int nt = 1; pc && nt <= 2; nt++) {
        CHECK_OK(ctx, sla__pc_apply(pc, false, r, mr, nt));
        CHECK_OK(ctx, sla__pc_apply(pc, false, s, ms, nt));
        CHECK_OK(ctx, sla__pc_apply(pc, true, s, mt, nt));
        double a = 0.0, c = 0.0, na = 0.0, rr = 0.0;
        for (sla_int i = 0; i < n; i++) {
            a += mr[i] * s[i];
            c += r[i] * ms[i];
            na += fabs(mr[i] * s[i]);
            rr += mr[i] * r[i];
        }
        double rel = fabs(a - c) / na;
        printf("  %-6s dot test %d thread%s |<M r, s> - <r, M s>| / sum = %.1e, <M r, r> = %.3g\n",
               names[sm], nt, nt > 1 ? "s" : " ", rel, rr);
        CHECK(rel < 1e-14 && rr > 0.0);
        CHECK(tu_reldiff(n, ms, mt) == 0.0);
        /* cheby and spai0 have no hybrid blocks: 2 threads give 1 thread's result */
        if (nt == 1) memcpy(m1, mr, (size_t)n * sizeof *m1);
        else if (sm != 0) CHECK(tu_reldiff(n, m1, mr) == 0.0);
    }
    sla__pc_destroy(&pc);
    sla_matrix_destroy(&A);
    free(r);
    free(s);
    free(mr);
    free(ms);
    free(mt);
    free(m1);
}

/* Refresh to values scaled by 3 on every row (the cycle's bound and
 * diagonal must follow): the same iterations as the first solve, and the
 * solution of the new system against LAPACK. */
static void test_refresh(sla_ctx *ctx, int sm)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 60, &A));
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *vals = malloc((size_t)nnz * sizeof *vals);
    memcpy(vals, sla_matrix_values(A, 0), (size_t)nnz * sizeof *vals);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(A), ci, SLA_F64, 1, vals, SLA_BORROW, &B));
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    double *xr = malloc((size_t)n * sizeof *xr);
    tu_fill(b, n, 8);
    sla_solver_options o = sm_opts(sm, 1e-11);
    sla_solver *S = NULL;
    sla_solve_info i0, i1;
    CHECK_OK(ctx, sla_solver_create(ctx, B, &o, &S));
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &i0));
    for (sla_int k = 0; k < nnz; k++) vals[k] *= 3.0;
    CHECK_OK(ctx, sla_solver_refresh(ctx, S));
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &i1));
    CHECK(tu_dense_solve(B, 0, b, xr) == 0);
    double d = tu_reldiff(n, x, xr);
    printf("  %-6s refresh (A * 3): %lld -> %lld iterations, vs LAPACK %.1e\n", names[sm],
           (long long)i0.iterations, (long long)i1.iterations, d);
    CHECK(d < 1e-8);
    CHECK(i1.iterations <= i0.iterations + 1);
    sla_solver_destroy(&S);
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&A);
    free(vals);
    free(ci);
    free(b);
    free(x);
    free(xr);
}

static void test_errors(sla_ctx *ctx)
{
    sla_solver_options p;
    sla_solver_options_default(&p);
    CHECK(p.saamg_smoother == 0);
    CHECK_OK(ctx, sla_solver_options_parse(ctx, "saamg_smoother=cheby", &p));
    CHECK(p.saamg_smoother == 1);
    CHECK_OK(ctx, sla_solver_options_parse(ctx, "saamg_smoother=spai0", &p));
    CHECK(p.saamg_smoother == 2);
    CHECK_OK(ctx, sla_solver_options_parse(ctx, "saamg_smoother=gs", &p));
    CHECK(p.saamg_smoother == 0);
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "saamg_smoother=chebyshev", &p), SLA_ERR_ARGUMENT, "cheby");
    CHECK(p.saamg_smoother == 0);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 20, &A));
    sla_solver_options o = sm_opts(3, 1e-8);
    sla_solver *S = NULL;
    CHECK_ERR(ctx, sla_solver_create(ctx, A, &o, &S), SLA_ERR_ARGUMENT, "saamg_smoother");
    CHECK(S == NULL);
    sla_matrix_destroy(&A);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    for (int sm = 0; sm < 3; sm++) {
        printf("saamg_smoother=%s:\n", names[sm]);
        test_iterations(ctx, sm);
        test_reference(ctx, sm);
        test_symmetry(ctx, sm);
        test_refresh(ctx, sm);
    }
    test_errors(ctx);
    (void)check_scaling; /* test_pc_util.h's helpers this file does not use */
    (void)check_vjp;
    sla_ctx_destroy(&ctx);
    return tu_finish("test_saamg_smoother");
}
