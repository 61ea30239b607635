/* VJPs of matvec and solve against central finite differences (float64)
 * and the adjoint dot-product identity. */
#include "test_util.h"

static sla_ctx *ctx;

static double dot(sla_int n, const double *a, const double *b)
{
    double s = 0;
    for (sla_int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* A copy of A's pattern with value array `vals` (nnz), owned by the caller. */
static sla_matrix *with_values(const sla_matrix *A, const double *vals)
{
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    sla_matrix *B = NULL;
    sla_matrix_from_csr(ctx, n, sla_matrix_ncols(A), sla_matrix_rowptr(A), ci, SLA_F64, 1, vals,
                        SLA_COPY, &B);
    free(ci);
    return B;
}

static void test_matvec_vjp(void)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_random(ctx, 40, 4, SLA_GEN_GENERAL, 3, &A));
    if (!A) return;
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    const sla_int nr = 2;
    double *x = malloc((size_t)(nr * n) * sizeof *x), *gy = malloc((size_t)(nr * n) * sizeof *gy);
    double *gx = malloc((size_t)(nr * n) * sizeof *gx), *gA = malloc((size_t)nnz * sizeof *gA);
    double *y = malloc((size_t)(nr * n) * sizeof *y), *v = malloc((size_t)nnz * sizeof *v);
    tu_fill(x, nr * n, 1);
    tu_fill(gy, nr * n, 2);
    CHECK_OK(ctx, sla_matvec_vjp(ctx, A, 0, nr, x, n, gy, n, gx, n, gA));
    /* L = <gy, A x> is bilinear: central differences are exact up to rounding */
    memcpy(v, sla_matrix_values(A, 0), (size_t)nnz * sizeof *v);
    double h = 1e-3, maxerr = 0;
    for (sla_int k = 0; k < nnz; k += 7) {
        double v0 = v[k], L[2];
        for (int s = 0; s < 2; s++) {
            v[k] = v0 + (s ? -h : h);
            sla_matrix *B = with_values(A, v);
            sla_matvec(ctx, B, 0, nr, x, n, y, n);
            L[s] = dot(nr * n, gy, y);
            sla_matrix_destroy(&B);
        }
        v[k] = v0;
        maxerr = fmax(maxerr, fabs((L[0] - L[1]) / (2 * h) - gA[k]) / fmax(1.0, fabs(gA[k])));
    }
    CHECK(maxerr < 1e-9);
    /* dot-product identity: <A dx, gy> = <dx, A^T gy>, <dA x, gy> = <dA, gA> */
    double *dx = malloc((size_t)(nr * n) * sizeof *dx), *dA = malloc((size_t)nnz * sizeof *dA);
    tu_fill(dx, nr * n, 5);
    tu_fill(dA, nnz, 6);
    sla_matvec(ctx, A, 0, nr, dx, n, y, n);
    CHECK_CLOSE(dot(nr * n, y, gy), dot(nr * n, dx, gx), 1e-12);
    sla_matrix *D = with_values(A, dA);
    sla_matvec(ctx, D, 0, nr, x, n, y, n);
    CHECK_CLOSE(dot(nr * n, y, gy), dot(nnz, dA, gA), 1e-12);
    sla_matrix_destroy(&D);
    /* batched matvec VJP equals the per-array one */
    free(dx);
    free(dA);
    free(x);
    free(gy);
    free(gx);
    free(gA);
    free(y);
    free(v);
    sla_matrix_destroy(&A);
}

/* L(b, A) = <w, A^-1 b>: check gb and gA from the VJP against central
 * differences (every gb entry, a spread of gA entries) and check the
 * linearisation identity <w, dx> = <db, gb> + <dA, gA> with
 * dx = A^-1 (db - dA x). */
static void check_solve_vjp(const sla_matrix *A, sla_method m, sla_precond_kind pc)
{
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = m;
    o.precond = pc;
    o.rtol = 1e-13;
    o.maxiter = 20 * n;
    double *b = malloc((size_t)n * sizeof *b), *w = malloc((size_t)n * sizeof *w);
    double *x = malloc((size_t)n * sizeof *x), *xp = malloc((size_t)n * sizeof *xp);
    double *gb = malloc((size_t)n * sizeof *gb), *gA = malloc((size_t)nnz * sizeof *gA);
    double *v = malloc((size_t)nnz * sizeof *v);
    tu_fill(b, n, 31);
    tu_fill(w, n, 32);
    memcpy(v, sla_matrix_values(A, 0), (size_t)nnz * sizeof *v);
    sla_solver *S = NULL;
    sla_solve_info fi, ai;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    if (!S) goto out;
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &fi));
    CHECK_OK(ctx, sla_solver_solve_vjp(ctx, S, 0, 1, x, n, w, n, gb, n, gA, &ai));
    CHECK(ai.converged && ai.residual <= 1e-12 && ai.iterations > 0);
    CHECK(strcmp(ai.method, fi.method) == 0 && strcmp(ai.precond, fi.precond) == 0);

    /* perturbing one entry of a symmetric A makes it nonsymmetric: the
     * finite-difference solves use full GMRES, valid for any A */
    sla_solver_options fo = o;
    fo.method = SLA_METHOD_GMRES;
    fo.precond = SLA_PRECOND_ILU0;
    fo.restart = (int)n;
    double h = 1e-6, err_b = 0, err_A = 0;
    for (sla_int i = 0; i < n; i += (n > 40 ? 3 : 1)) { /* dL/db_i */
        double L[2], b0 = b[i];
        for (int s = 0; s < 2; s++) {
            b[i] = b0 + (s ? -h : h);
            sla_solver_solve(ctx, S, 0, 1, b, n, xp, n, NULL);
            L[s] = dot(n, w, xp);
        }
        b[i] = b0;
        double fd = (L[0] - L[1]) / (2 * h);
        err_b = fmax(err_b, fabs(fd - gb[i]) / fmax(fabs(gb[i]), 1e-2));
    }
    for (sla_int k = 0; k < nnz; k += (nnz > 100 ? 5 : 1)) { /* dL/dA_k on the pattern */
        double L[2], v0 = v[k];
        for (int s = 0; s < 2; s++) {
            v[k] = v0 + (s ? -h : h);
            sla_matrix *B = with_values(A, v);
            sla_solve(ctx, B, &fo, b, xp, NULL);
            L[s] = dot(n, w, xp);
            sla_matrix_destroy(&B);
        }
        v[k] = v0;
        double fd = (L[0] - L[1]) / (2 * h);
        err_A = fmax(err_A, fabs(fd - gA[k]) / fmax(fabs(gA[k]), 1e-2));
    }
    if (!(err_b < 1e-6 && err_A < 1e-6))
        fprintf(stderr, "  %s+%s: fd error gb %.2e gA %.2e\n", sla_method_name(m),
                sla_precond_name(pc), err_b, err_A);
    CHECK(err_b < 1e-6);
    CHECK(err_A < 1e-6);

    /* linearisation identity */
    double *db = malloc((size_t)n * sizeof *db), *dA = malloc((size_t)nnz * sizeof *dA);
    double *t = malloc((size_t)n * sizeof *t), *dx = malloc((size_t)n * sizeof *dx);
    tu_fill(db, n, 41);
    tu_fill(dA, nnz, 42);
    sla_matrix *D = with_values(A, dA);
    sla_matvec(ctx, D, 0, 1, x, n, t, n);
    for (sla_int i = 0; i < n; i++) t[i] = db[i] - t[i];
    sla_solver_solve(ctx, S, 0, 1, t, n, dx, n, NULL);
    CHECK_CLOSE(dot(n, w, dx), dot(n, db, gb) + dot(nnz, dA, gA), 1e-9);
    sla_matrix_destroy(&D);
    free(db);
    free(dA);
    free(t);
    free(dx);
out:
    sla_solver_destroy(&S);
    free(b);
    free(w);
    free(x);
    free(xp);
    free(gb);
    free(gA);
    free(v);
}

static void test_solve_vjp(void)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 7, &A));
    if (A) {
        check_solve_vjp(A, SLA_METHOD_CG, SLA_PRECOND_NONE);
        check_solve_vjp(A, SLA_METHOD_CG, SLA_PRECOND_IC0);
        check_solve_vjp(A, SLA_METHOD_MINRES, SLA_PRECOND_JACOBI);
        check_solve_vjp(A, SLA_METHOD_CG, SLA_PRECOND_SSOR);
        sla_matrix_destroy(&A);
    }
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 6, 15.0, -5.0, &A));
    if (A) { /* nonsymmetric: the adjoint needs A^T and M^-T */
        check_solve_vjp(A, SLA_METHOD_GMRES, SLA_PRECOND_ILU0);
        check_solve_vjp(A, SLA_METHOD_BICGSTAB, SLA_PRECOND_ILU0);
        check_solve_vjp(A, SLA_METHOD_GMRES, SLA_PRECOND_SSOR);
        check_solve_vjp(A, SLA_METHOD_BICGSTAB, SLA_PRECOND_NONE);
        sla_matrix_destroy(&A);
    }
    CHECK_OK(ctx, sla_gen_random(ctx, 30, 3, SLA_GEN_GENERAL, 77, &A));
    if (A) {
        check_solve_vjp(A, SLA_METHOD_GMRES, SLA_PRECOND_JACOBI);
        sla_matrix_destroy(&A);
    }
}

/* Multi-rhs VJP sums the per-column gradients; batched VJP equals per-array. */
static void test_multi_and_batch_vjp(void)
{
    sla_matrix *P = NULL;
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 6, 4.0, 2.0, &P));
    if (!P) return;
    sla_int n = sla_matrix_nrows(P), nnz = sla_matrix_nnz(P);
    const sla_int B = 3;
    double *vals = malloc((size_t)(B * nnz) * sizeof *vals);
    for (sla_int b = 0; b < B; b++)
        for (sla_int k = 0; k < nnz; k++)
            vals[b * nnz + k] = ((const double *)sla_matrix_values(P, 0))[k] * (1.0 + 0.5 * b);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_colind(P, ci);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(P), ci, SLA_F64, B, vals, SLA_COPY, &A));
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_GMRES;
    o.precond = SLA_PRECOND_ILU0;
    o.rtol = 1e-13;
    sla_solver *S = NULL;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    double *b = malloc((size_t)(B * n) * sizeof *b), *x = malloc((size_t)(B * n) * sizeof *x);
    double *g = malloc((size_t)(B * n) * sizeof *g), *gb = malloc((size_t)(B * n) * sizeof *gb);
    double *gA = malloc((size_t)(B * nnz) * sizeof *gA), *g1 = malloc((size_t)nnz * sizeof *g1);
    double *gb1 = malloc((size_t)n * sizeof *gb1), *acc = calloc((size_t)nnz, sizeof *acc);
    tu_fill(b, B * n, 8);
    tu_fill(g, B * n, 9);
    sla_solve_info info[3];
    /* multi-rhs on value array 1 */
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 1, B, b, n, x, n, info));
    CHECK_OK(ctx, sla_solver_solve_vjp(ctx, S, 1, B, x, n, g, n, gb, n, gA, info));
    for (sla_int r = 0; r < B; r++) {
        CHECK_OK(ctx, sla_solver_solve_vjp(ctx, S, 1, 1, x + r * n, n, g + r * n, n, gb1, n, g1, NULL));
        CHECK(tu_reldiff(n, gb + r * n, gb1) < 1e-14);
        for (sla_int k = 0; k < nnz; k++) acc[k] += g1[k];
    }
    CHECK(tu_reldiff(nnz, gA, acc) < 1e-13);
    /* batch */
    CHECK_OK(ctx, sla_solver_solve_batch(ctx, S, b, x, info));
    CHECK_OK(ctx, sla_solver_solve_batch_vjp(ctx, S, x, g, gb, gA, info));
    for (sla_int ib = 0; ib < B; ib++) {
        CHECK(info[ib].converged);
        CHECK_OK(ctx, sla_solver_solve_vjp(ctx, S, ib, 1, x + ib * n, n, g + ib * n, n, gb1, n, g1, NULL));
        CHECK(tu_reldiff(n, gb + ib * n, gb1) < 1e-14);
        CHECK(tu_reldiff(nnz, gA + ib * nnz, g1) < 1e-14);
    }
    /* list VJP equals per-solver VJP */
    sla_solver *SL[1] = {S};
    const double *xl[1] = {x}, *gl[1] = {g};
    double *gbl[1] = {gb}, *gAl[1] = {gA};
    CHECK_OK(ctx, sla_solver_solve_list_vjp(ctx, 1, SL, xl, gl, gbl, gAl, info));
    CHECK_OK(ctx, sla_solver_solve_vjp(ctx, S, 0, 1, x, n, g, n, gb1, n, g1, NULL));
    CHECK(tu_reldiff(nnz, gA, g1) < 1e-14);
    sla_solver_destroy(&S);
    free(vals);
    free(ci);
    free(b);
    free(x);
    free(g);
    free(gb);
    free(gA);
    free(g1);
    free(gb1);
    free(acc);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&P);
}

/* The inverse-problem chain: kappa -> A(kappa) -> x = A^-1 b -> L = <w, x>. */
static void test_diffusion_chain(void)
{
    const sla_int N = 6, nc = (N + 1) * (N + 1);
    double *kappa = malloc((size_t)nc * sizeof *kappa), *dk = malloc((size_t)nc * sizeof *dk);
    for (sla_int c = 0; c < nc; c++) kappa[c] = 1.0 + 0.4 * sin(0.7 * (double)c);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_diffusion2d(ctx, N, kappa, &A));
    if (!A) return;
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *b = malloc((size_t)n * sizeof *b), *w = malloc((size_t)n * sizeof *w);
    double *x = malloc((size_t)n * sizeof *x), *gA = malloc((size_t)nnz * sizeof *gA);
    for (sla_int i = 0; i < n; i++) b[i] = 1.0 / ((N + 1.0) * (N + 1.0));
    tu_fill(w, n, 3);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.precond = SLA_PRECOND_IC0;
    o.rtol = 1e-13;
    sla_solver *S = NULL;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, NULL));
    CHECK_OK(ctx, sla_solver_solve_vjp(ctx, S, 0, 1, x, n, w, n, NULL, n, gA, NULL));
    CHECK_OK(ctx, sla_gen_diffusion2d_vjp(ctx, N, gA, dk));
    double h = 1e-6, err = 0;
    for (sla_int c = 0; c < nc; c += 2) {
        double L[2], k0 = kappa[c];
        for (int s = 0; s < 2; s++) {
            kappa[c] = k0 + (s ? -h : h);
            sla_matrix *B = NULL;
            sla_gen_diffusion2d(ctx, N, kappa, &B);
            sla_solve(ctx, B, &o, b, x, NULL);
            L[s] = dot(n, w, x);
            sla_matrix_destroy(&B);
        }
        kappa[c] = k0;
        err = fmax(err, fabs((L[0] - L[1]) / (2 * h) - dk[c]) / fmax(fabs(dk[c]), 1e-4));
    }
    CHECK(err < 1e-6);
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
    free(kappa);
    free(dk);
    free(b);
    free(w);
    free(x);
    free(gA);
}

int main(void)
{
    sla_ctx_create(&ctx);
    test_matvec_vjp();
    test_solve_vjp();
    test_multi_and_batch_vjp();
    test_diffusion_chain();
    sla_ctx_destroy(&ctx);
    return tu_finish("test_ad");
}
