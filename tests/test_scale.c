/* Scale safety (issue 21): the same problem multiplied by powers of two
 * must give the same relative answer, converged, with every method; the
 * nonlinear solver must survive a residual norm beyond DBL_MAX; SLQ must
 * be scale-invariant and refuse a singular matrix; equilibration must keep
 * solves, transposed solves and VJPs consistent with the unscaled A. */
#include "test_util.h"

#include <float.h>

static sla_matrix *scaled_copy(sla_ctx *ctx, const sla_matrix *A, int k)
{
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_matrix_copy(ctx, A, &B));
    sla_int nnz = sla_matrix_nnz(A);
    const double *v = sla_matrix_values(A, 0);
    double *w = malloc((size_t)nnz * sizeof *w);
    for (sla_int p = 0; p < nnz; p++) w[p] = ldexp(v[p], k);
    CHECK_OK(ctx, sla_matrix_set_values(ctx, B, 0, w));
    free(w);
    return B;
}

/* max |v|, min nonzero |v| */
static void range(sla_int n, const double *v, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = 0.0;
    for (sla_int i = 0; i < n; i++) {
        double a = fabs(v[i]);
        if (a > *hi) *hi = a;
        if (a > 0.0 && a < *lo) *lo = a;
    }
}

/* Whether values in [lo, hi] times 2^k stay normal with room for sums of n terms. */
static bool representable(double lo, double hi, int k, sla_int n)
{
    return ldexp(lo, k) >= 0x1p-1000 && ldexp(hi, k) <= DBL_MAX / (double)(4 * n);
}

static double rel_diff(sla_int n, const double *x, const double *y)
{
    double d = 0.0, s = 0.0;
    for (sla_int i = 0; i < n; i++) {
        d = fmax(d, fabs(x[i] - y[i]));
        s = fmax(s, fabs(y[i]));
    }
    return s > 0.0 ? d / s : d;
}

/* The sweep: A 2^ka x = b 2^kb has the solution x_ref 2^(kb - ka). */
static void sweep(sla_ctx *ctx, const char *name, const sla_matrix *A, const sla_method *methods,
                  int nmethods, double tol)
{
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *xt = malloc((size_t)n * sizeof *xt), *b = malloc((size_t)n * sizeof *b);
    double *bs = malloc((size_t)n * sizeof *bs), *x = malloc((size_t)n * sizeof *x);
    double *xref = malloc((size_t)n * sizeof *xref), *xs = malloc((size_t)n * sizeof *xs);
    for (sla_int i = 0; i < n; i++) xt[i] = 1.0 + 0.5 * sin(0.7 * (double)i);
    CHECK_OK(ctx, sla_matvec(ctx, A, 0, 1, xt, n, b, n));
    double alo, ahi, blo, bhi, xlo, xhi;
    range(nnz, sla_matrix_values(A, 0), &alo, &ahi);
    range(n, b, &blo, &bhi);
    for (int im = 0; im < nmethods; im++) {
        sla_solver_options o;
        sla_solver_options_default(&o);
        o.method = methods[im];
        o.restart = 200;
        o.maxiter = 20000;
        sla_solve_info info;
        sla_status st = sla_solve(ctx, A, &o, b, xref, &info);
        CHECK(st == SLA_OK);
        if (st != SLA_OK) {
            fprintf(stderr, "  %s %s at scale 1: %s\n", name, sla_method_name(methods[im]), sla_ctx_message(ctx));
            continue;
        }
        range(n, xref, &xlo, &xhi);
        int fails = 0, runs = 0;
        for (int mode = 0; mode < 3; mode++) {
            for (int k = -1000; k <= 1000; k += 50) {
                int ka = mode == 2 ? 0 : k, kb = mode == 1 ? 0 : k, kx = kb - ka;
                if (!representable(alo, ahi, ka, n) || !representable(blo, bhi, kb, n) ||
                    !representable(xlo, xhi, kx, n))
                    continue;
                sla_matrix *As = scaled_copy(ctx, A, ka);
                for (sla_int i = 0; i < n; i++) bs[i] = ldexp(b[i], kb);
                st = sla_solve(ctx, As, &o, bs, x, &info);
                for (sla_int i = 0; i < n; i++) xs[i] = ldexp(x[i], -kx);
                double e = rel_diff(n, xs, xref);
                runs++;
                if (st != SLA_OK || !info.converged || !(e <= tol) || !(info.residual <= 1e-6)) {
                    if (fails++ < 3)
                        fprintf(stderr, "  %s %s A*2^%d b*2^%d: %s converged %d reason %s residual %.3g, "
                                "error %.3g vs scale 1: %s\n", name, sla_method_name(methods[im]), ka, kb,
                                sla_status_name(st), info.converged, sla_reason_name(info.reason),
                                info.residual, e, sla_ctx_message(ctx));
                }
                sla_matrix_destroy(&As);
            }
        }
        tu_checks++;
        if (fails) tu_failures++;
        printf("  %-10s %-9s %3d scaled solves, %d wrong\n", name, sla_method_name(methods[im]), runs, fails);
    }
    free(xt);
    free(b);
    free(bs);
    free(x);
    free(xref);
    free(xs);
}

static void test_sweeps(sla_ctx *ctx)
{
    sla_matrix *P = NULL, *C = NULL, *R = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 12, &P));
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 12, 5.0, -3.0, &C));
    CHECK_OK(ctx, sla_mm_read(ctx, SLA_TEST_DATA "/bcsstk01.mtx", SLA_F64, &R));
    const sla_method spd[] = {SLA_METHOD_CG, SLA_METHOD_MINRES, SLA_METHOD_GMRES, SLA_METHOD_BICGSTAB,
                              SLA_METHOD_LU, SLA_METHOD_CHOLESKY, SLA_METHOD_AUTO};
    const sla_method gen[] = {SLA_METHOD_GMRES, SLA_METHOD_BICGSTAB, SLA_METHOD_LU, SLA_METHOD_AUTO};
    const sla_method real[] = {SLA_METHOD_CG, SLA_METHOD_MINRES, SLA_METHOD_GMRES, SLA_METHOD_LU,
                               SLA_METHOD_CHOLESKY, SLA_METHOD_AUTO};
    sweep(ctx, "poisson2d", P, spd, 7, 1e-6);
    sweep(ctx, "convdiff2d", C, gen, 4, 1e-6);
    if (R) sweep(ctx, "bcsstk01", R, real, 6, 1e-5);
    sla_matrix_destroy(&P);
    sla_matrix_destroy(&C);
    sla_matrix_destroy(&R);
}

/* F(u) = u - theta, Jacobian I: the solution is theta at any scale. */
static sla_status id_residual(void *user, const double *u, const double *th, double *F)
{
    sla_int n = *(const sla_int *)user;
    for (sla_int i = 0; i < n; i++) F[i] = u[i] - th[i];
    return SLA_OK;
}

static sla_status id_jacobian(void *user, const double *u, const double *th, double *vals)
{
    (void)u;
    (void)th;
    sla_int n = *(const sla_int *)user;
    for (sla_int i = 0; i < n; i++) vals[i] = 1.0;
    return SLA_OK;
}

static void test_nonlinear_scale(sla_ctx *ctx)
{
    /* defect 1: ||F(u0)|| overflows while every entry is finite (Bratu with a
     * huge mu): no read before the work buffer, no "entry -1" */
    const double mus[] = {1e200, 1e308};
    for (int t = 0; t < 2; t++) {
        sla_nl_builtin *B = NULL;
        CHECK_OK(ctx, sla_nl_bratu2d(ctx, 16, SLA_NL_BRATU_MU, &B));
        sla_nl_options o;
        sla_nl_options_default(&o);
        sla_nlsolver *S = NULL;
        CHECK_OK(ctx, sla_nlsolver_create(ctx, sla_nl_builtin_problem(B), &o, &S));
        double *u = calloc(256, sizeof *u);
        sla_nl_info info;
        sla_status st = sla_nlsolver_solve(ctx, S, &mus[t], u, &info);
        CHECK(st != SLA_OK || info.converged);
        CHECK(!strstr(sla_ctx_message(ctx), "entry -1"));
        free(u);
        sla_nlsolver_destroy(&S);
        sla_nl_builtin_destroy(&B);
    }
    /* F = u - p at p = 1e200 (||F(u0)|| overflows unscaled) and 1e-170
     * (||F(u0)||^2 underflows): u = p, converged */
    sla_int n = 4;
    sla_int rp[5] = {0, 1, 2, 3, 4}, ci[4] = {0, 1, 2, 3};
    sla_matrix *Id = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, rp, ci, SLA_F64, 1, NULL, SLA_COPY, &Id));
    sla_nl_problem P = {.n = n, .ntheta = n, .residual = id_residual, .jac_pattern = Id,
                        .jacobian = id_jacobian, .jacobian_symmetric = true, .user = &n};
    const double ps[] = {1e200, 1e-170, 1e300, 1e-300};
    for (int t = 0; t < 4; t++) {
        sla_nl_options o;
        sla_nl_options_default(&o);
        sla_nlsolver *S = NULL;
        CHECK_OK(ctx, sla_nlsolver_create(ctx, &P, &o, &S));
        double th[4], u[4] = {0, 0, 0, 0};
        for (int i = 0; i < 4; i++) th[i] = ps[t] * (1.0 + i);
        sla_nl_info info;
        CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, th, u, &info));
        CHECK(info.converged);
        for (int i = 0; i < 4; i++) CHECK_CLOSE(u[i] / th[i], 1.0, 1e-12);
        sla_nlsolver_destroy(&S);
    }
    sla_matrix_destroy(&Id);
}

static void test_slq_scale(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 1, 50, &A));
    sla_slq_options o;
    sla_slq_options_default(&o);
    double ref = 0.0;
    CHECK_OK(ctx, sla_logdet_slq(ctx, A, 0, &o, &ref, NULL, NULL, NULL));
    const int ks[] = {-1000, -700, -664, -531, -300, 300, 531, 664, 900, 1000};
    for (int t = 0; t < 10; t++) {
        sla_matrix *As = scaled_copy(ctx, A, ks[t]);
        double ld = NAN;
        sla_status st = sla_logdet_slq(ctx, As, 0, &o, &ld, NULL, NULL, NULL);
        CHECK(st == SLA_OK);
        if (st) fprintf(stderr, "  slq at 2^%d: %s\n", ks[t], sla_ctx_message(ctx));
        /* log det(2^k A) = log det A + n k log 2 */
        CHECK_CLOSE(ld - 50.0 * ks[t] * log(2.0), ref, 1e-9);
        sla_matrix_destroy(&As);
    }
    sla_matrix_destroy(&A);
    /* singular PSD [[1, 2], [2, 4]]: no finite estimate */
    sla_int rp[3] = {0, 2, 4}, ci[4] = {0, 1, 0, 1};
    double v[4] = {1, 2, 2, 4};
    sla_matrix *Z = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 2, 2, rp, ci, SLA_F64, 1, v, SLA_COPY, &Z));
    double ld = 0.0;
    CHECK_ERR(ctx, sla_logdet_slq(ctx, Z, 0, &o, &ld, NULL, NULL, NULL), SLA_ERR_SINGULAR, "singular");
    sla_matrix_destroy(&Z);
}

/* Explicit cholesky / ldlt on a nonsymmetric matrix: refused at create and
 * at refresh, naming the symmetry. */
static void test_cholesky_unsymmetric(sla_ctx *ctx)
{
    sla_int rp[3] = {0, 2, 3}, ci[3] = {0, 1, 1};
    double v[3] = {4, 1, 3};
    sla_matrix *U = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 2, 2, rp, ci, SLA_F64, 1, v, SLA_COPY, &U));
    const sla_method ms[] = {SLA_METHOD_CHOLESKY, SLA_METHOD_LDLT};
    for (int t = 0; t < 2; t++) {
        if (!sla_method_available(ms[t])) continue;
        sla_solver_options o;
        sla_solver_options_default(&o);
        o.method = ms[t];
        sla_solver *S = NULL;
        CHECK_ERR(ctx, sla_solver_create(ctx, U, &o, &S), SLA_ERR_ARGUMENT, "not symmetric");
        CHECK(S == NULL);
    }
    sla_matrix_destroy(&U);
    /* symmetric at create, nonsymmetric at refresh */
    sla_int rp2[3] = {0, 2, 4}, ci2[4] = {0, 1, 0, 1};
    double v2[4] = {4, 1, 1, 3};
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 2, 2, rp2, ci2, SLA_F64, 1, v2, SLA_BORROW, &A));
    if (sla_method_available(SLA_METHOD_CHOLESKY)) {
        sla_solver_options o;
        sla_solver_options_default(&o);
        o.method = SLA_METHOD_CHOLESKY;
        sla_solver *S = NULL;
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
        v2[1] = 1.5;
        CHECK_ERR(ctx, sla_solver_refresh(ctx, S), SLA_ERR_ARGUMENT, "not symmetric");
        v2[1] = 1.0 + 1e-14; /* symmetric to rounding: accepted */
        CHECK_OK(ctx, sla_solver_refresh(ctx, S));
        sla_solver_destroy(&S);
    }
    sla_matrix_destroy(&A);
}

/* Rows of a nonsymmetric matrix scaled over 2^+-300: equilibrate=auto
 * (and on) must give LU's answer with GMRES, and the transposed solve and
 * the VJP must be those of the unscaled A (finite differences). */
static void test_equilibrate(sla_ctx *ctx)
{
    sla_matrix *C = NULL;
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 8, 3.0, 1.0, &C));
    sla_int n = sla_matrix_nrows(C), nnz = sla_matrix_nnz(C);
    /* reference: LU on the unscaled matrix (row i of the test system is row
     * i of C times 2^s_i, b too: the same x; lambda and dL/dA scale by 2^-s_i) */
    double *b0 = malloc((size_t)n * sizeof *b0);
    for (sla_int i = 0; i < n; i++) b0[i] = 1.0 + 0.1 * (double)(i % 7);
    const sla_int *rp = sla_matrix_rowptr(C);
    double *vals = malloc((size_t)nnz * sizeof *vals);
    memcpy(vals, sla_matrix_values(C, 0), (size_t)nnz * sizeof *vals);
    for (sla_int i = 0; i < n; i++)
        for (sla_int p = rp[i]; p < rp[i + 1]; p++) vals[p] = ldexp(vals[p], (int)(i % 3) * 300 - 300);
    CHECK_OK(ctx, sla_matrix_set_values(ctx, C, 0, vals));
    double *b = malloc((size_t)n * sizeof *b), *xl = malloc((size_t)n * sizeof *xl);
    double *x = malloc((size_t)n * sizeof *x), *g = malloc((size_t)n * sizeof *g);
    double *gb = malloc((size_t)n * sizeof *gb), *gbl = malloc((size_t)n * sizeof *gbl);
    double *gA = malloc((size_t)nnz * sizeof *gA), *gAl = malloc((size_t)nnz * sizeof *gAl);
    for (sla_int i = 0; i < n; i++) {
        b[i] = ldexp(1.0 + 0.1 * (double)(i % 7), (int)(i % 3) * 300 - 300);
        g[i] = cos((double)i);
    }
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_LU;
    sla_matrix *C0 = NULL;
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 8, 3.0, 1.0, &C0));
    sla_solver *L = NULL;
    CHECK_OK(ctx, sla_solver_create(ctx, C0, &o, &L));
    CHECK_OK(ctx, sla_solver_solve(ctx, L, 0, 1, b0, n, xl, n, NULL));
    CHECK_OK(ctx, sla_solver_solve_vjp(ctx, L, 0, 1, xl, n, g, n, gbl, n, gAl, NULL));
    sla_solver_destroy(&L);
    sla_matrix_destroy(&C0);
    for (sla_int i = 0; i < n; i++) {
        int s = (int)(i % 3) * 300 - 300;
        gbl[i] = ldexp(gbl[i], -s);
        for (sla_int p = rp[i]; p < rp[i + 1]; p++) gAl[p] = ldexp(gAl[p], -s);
    }
    const char *modes[] = {"method=gmres,rtol=1e-12,restart=100", "method=gmres,rtol=1e-12,restart=100,equilibrate=on",
                           "method=bicgstab,rtol=1e-12,equilibrate=auto"};
    for (int t = 0; t < 3; t++) {
        sla_solver_options_default(&o);
        CHECK_OK(ctx, sla_solver_options_parse(ctx, modes[t], &o));
        sla_solver *S = NULL;
        CHECK_OK(ctx, sla_solver_create(ctx, C, &o, &S));
        sla_solve_info info;
        CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
        CHECK(strstr(info.note, "equilibrated") != NULL);
        CHECK(rel_diff(n, x, xl) <= 1e-8);
        CHECK_OK(ctx, sla_solver_solve_vjp(ctx, S, 0, 1, x, n, g, n, gb, n, gA, NULL));
        for (sla_int i = 0; i < n; i++) CHECK_CLOSE(gb[i] / gbl[i], 1.0, 1e-6);
        for (sla_int p = 0; p < nnz; p++)
            if (gAl[p] != 0.0) CHECK_CLOSE(gA[p] / gAl[p], 1.0, 1e-6);
        sla_solver_destroy(&S);
    }
    /* finite differences of L(A) = g . x(A) for a few entries, with the
     * equilibrated GMRES gradient */
    sla_solver_options_default(&o);
    CHECK_OK(ctx, sla_solver_options_parse(ctx, "method=gmres,rtol=1e-13,restart=100,equilibrate=on", &o));
    sla_solver *S = NULL;
    CHECK_OK(ctx, sla_solver_create(ctx, C, &o, &S));
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, NULL));
    CHECK_OK(ctx, sla_solver_solve_vjp(ctx, S, 0, 1, x, n, g, n, gb, n, gA, NULL));
    sla_solver_destroy(&S);
    const sla_int ks[] = {0, 7, nnz / 2, nnz - 1};
    for (int t = 0; t < 4; t++) {
        sla_int k = ks[t];
        double v0 = vals[k], h = 1e-6 * fabs(v0), Lp = 0.0, Lm = 0.0;
        for (int s = 0; s < 2; s++) {
            vals[k] = v0 + (s ? -h : h);
            CHECK_OK(ctx, sla_matrix_set_values(ctx, C, 0, vals));
            CHECK_OK(ctx, sla_solver_create(ctx, C, &o, &S));
            CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, xl, n, NULL));
            sla_solver_destroy(&S);
            double Lv = 0.0;
            for (sla_int i = 0; i < n; i++) Lv += g[i] * xl[i];
            if (s) Lm = Lv;
            else Lp = Lv;
        }
        vals[k] = v0;
        CHECK_CLOSE((Lp - Lm) / (2.0 * h) / gA[k], 1.0, 1e-5);
    }
    CHECK_OK(ctx, sla_matrix_set_values(ctx, C, 0, vals));
    free(b);
    free(b0);
    free(xl);
    free(x);
    free(g);
    free(gb);
    free(gbl);
    free(gA);
    free(gAl);
    free(vals);
    sla_matrix_destroy(&C);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    test_nonlinear_scale(ctx);
    test_slq_scale(ctx);
    test_cholesky_unsymmetric(ctx);
    test_equilibrate(ctx);
    test_sweeps(ctx);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_scale");
}
