/* Damped least squares (sla_lsq, LSQR and LSMR) and its VJP: against the
 * dense minimum-norm solution of LAPACK dgelsd (overdetermined,
 * underdetermined, rank-deficient, lp_e226) and a dense Cholesky solve of
 * (A^T A + l^2 I) x = A^T b (damped, Franz6); gradients against central
 * differences and the dot-product identity; stopping reasons, x0, options
 * and bad input. */
#include "test_util.h"

static const sla_lsq_method methods[] = {SLA_LSQ_LSQR, SLA_LSQ_LSMR};

/* Random m x n with about density * m * n entries (values in [-1, 1)); when
 * rank > 0 the dense product of random m x rank and rank x n factors. */
static sla_matrix *random_matrix(sla_ctx *ctx, long long m, long long n, double density, long long rank,
                                 unsigned long long seed)
{
    long long cap = m * n;
    sla_int *ri = malloc((size_t)cap * sizeof *ri), *ci = malloc((size_t)cap * sizeof *ci);
    double *v = malloc((size_t)cap * sizeof *v);
    unsigned long long s = seed * 7919 + 3;
    long long nnz = 0;
    if (rank > 0) {
        double *B = malloc((size_t)(m * rank) * sizeof *B), *C = malloc((size_t)(rank * n) * sizeof *C);
        tu_fill(B, m * rank, seed);
        tu_fill(C, rank * n, seed + 1);
        for (long long i = 0; i < m; i++)
            for (long long j = 0; j < n; j++) {
                double a = 0.0;
                for (long long k = 0; k < rank; k++) a += B[i * rank + k] * C[k * n + j];
                ri[nnz] = (sla_int)i, ci[nnz] = (sla_int)j, v[nnz++] = a;
            }
        free(B);
        free(C);
    } else {
        for (long long i = 0; i < m; i++)
            for (long long j = 0; j < n; j++)
                if (0.5 * (tu_rand(&s) + 1.0) < density || i == j % m || j == i % n)
                    ri[nnz] = (sla_int)i, ci[nnz] = (sla_int)j, v[nnz++] = tu_rand(&s);
    }
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, (sla_int)m, (sla_int)n, (sla_int)nnz, ri, ci, SLA_F64, 1, v, NULL, &A));
    free(ri);
    free(ci);
    free(v);
    return A;
}

/* Minimum-norm least-squares solution by dgelsd (rcond 1e-10). */
static void ref_minnorm(const sla_matrix *A, const double *b, double *x)
{
    lapack_int m = sla_matrix_nrows(A), n = sla_matrix_ncols(A), ld = m > n ? m : n;
    double *D = malloc((size_t)m * (size_t)n * sizeof *D), *bb = calloc((size_t)ld, sizeof *bb);
    double *sv = malloc((size_t)(m < n ? m : n) * sizeof *sv);
    sla_matrix_to_dense(NULL, A, 0, D, m);
    memcpy(bb, b, (size_t)m * sizeof *bb);
    lapack_int rank;
    CHECK(LAPACKE_dgelsd(LAPACK_COL_MAJOR, m, n, 1, D, m, bb, ld, sv, 1e-10, &rank) == 0);
    memcpy(x, bb, (size_t)n * sizeof *x);
    free(D);
    free(bb);
    free(sv);
}

/* G = A^T A + l^2 I (n x n dense), from the sparse rows. */
static double *normal_matrix(const sla_matrix *A, double damp)
{
    long long m = sla_matrix_nrows(A), n = sla_matrix_ncols(A), nnz = sla_matrix_nnz(A);
    const sla_int *rp = sla_matrix_rowptr(A);
    sla_int *ci = malloc((size_t)(nnz + 1) * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    const double *v = sla_matrix_values(A, 0);
    double *G = calloc((size_t)(n * n), sizeof *G);
    for (long long i = 0; i < m; i++)
        for (sla_int p = rp[i]; p < rp[i + 1]; p++)
            for (sla_int q = rp[i]; q < rp[i + 1]; q++) G[(long long)ci[q] * n + ci[p]] += v[p] * v[q];
    for (long long j = 0; j < n; j++) G[j * n + j] += damp * damp;
    free(ci);
    return G;
}

/* x = (A^T A + l^2 I)^-1 c by dense Cholesky. */
static void ref_normal_solve(const sla_matrix *A, double damp, const double *c, double *x)
{
    lapack_int n = sla_matrix_ncols(A);
    double *G = normal_matrix(A, damp);
    memcpy(x, c, (size_t)n * sizeof *x);
    CHECK(LAPACKE_dposv(LAPACK_COL_MAJOR, 'L', n, 1, G, n, x, n) == 0);
    free(G);
}

static void ref_damped(const sla_matrix *A, double damp, const double *b, double *x)
{
    long long n = sla_matrix_ncols(A), m = sla_matrix_nrows(A);
    double *c = malloc((size_t)n * sizeof *c);
    sla_matvec_transpose(NULL, A, 0, 1, b, m, c, n);
    ref_normal_solve(A, damp, c, x);
    free(c);
}

/* Both methods against the reference xr, to tol (relative). */
static void check_forward(sla_ctx *ctx, const char *name, const sla_matrix *A, double damp, const double *b,
                          const double *xr, double tol, double atol)
{
    long long n = sla_matrix_ncols(A);
    double *x = malloc((size_t)n * sizeof *x);
    for (int k = 0; k < 2; k++) {
        sla_lsq_options o;
        sla_lsq_options_default(&o);
        o.method = methods[k];
        o.damp = damp;
        o.atol = o.btol = atol;
        o.maxiter = 20 * (sla_int)n;
        sla_lsq_info info;
        CHECK_OK(ctx, sla_lsq(ctx, A, 0, &o, b, x, &info));
        double e = tu_reldiff(n, x, xr);
        if (getenv("TEST_LSQ_VERBOSE") || !(e <= tol))
            fprintf(stderr, "%s %s damp %g: forward error %.3g (iterations %lld, reason %s)\n", name,
                    info.method, damp, e, (long long)info.iterations, sla_lsq_reason_name(info.reason));
        CHECK(e <= tol);
        CHECK(info.converged);
        CHECK(strcmp(info.method, sla_lsq_method_name(methods[k])) == 0);
        /* the estimates against the computed norms */
        double rbar = sqrt(info.true_rnorm * info.true_rnorm + damp * damp * info.xnorm * info.xnorm);
        CHECK(fabs(info.rnorm - rbar) <= 1e-6 * fmax(rbar, 1e-3 * info.anorm * info.xnorm));
        CHECK(info.true_arnorm <= 1e-5 * info.anorm * fmax(rbar, 1e-6 * info.anorm * info.xnorm));
        CHECK(info.acond >= 1.0);
    }
    free(x);
}

static void test_random(sla_ctx *ctx)
{
    struct { long long m, n, rank; double density; const char *name; } cases[] = {
        {60, 30, 0, 0.2, "overdetermined"}, {30, 60, 0, 0.2, "underdetermined"},
        {50, 40, 15, 0, "rank-deficient 50x40"}, {30, 45, 12, 0, "rank-deficient 30x45"}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sla_matrix *A = random_matrix(ctx, cases[c].m, cases[c].n, cases[c].density, cases[c].rank, 10 + c);
        long long m = cases[c].m, n = cases[c].n;
        double *b = malloc((size_t)m * sizeof *b), *xr = malloc((size_t)n * sizeof *xr);
        tu_fill(b, m, 20 + c);
        ref_minnorm(A, b, xr);
        check_forward(ctx, cases[c].name, A, 0.0, b, xr, 1e-8, 1e-14);
        ref_damped(A, 0.7, b, xr);
        check_forward(ctx, cases[c].name, A, 0.7, b, xr, 1e-8, 1e-14);
        ref_damped(A, 1e-3, b, xr);
        check_forward(ctx, cases[c].name, A, 1e-3, b, xr, 1e-6, 1e-14);
        free(b);
        free(xr);
        sla_matrix_destroy(&A);
    }
}

static void test_real(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_mm_read(ctx, SLA_TEST_DATA "/lp_e226.mtx", SLA_F64, &A));
    if (A) {
        long long m = sla_matrix_nrows(A), n = sla_matrix_ncols(A);
        CHECK(m == 223 && n == 472);
        double *one = malloc((size_t)n * sizeof *one), *b = malloc((size_t)m * sizeof *b);
        double *xr = malloc((size_t)n * sizeof *xr);
        for (long long j = 0; j < n; j++) one[j] = 1.0;
        sla_matvec(ctx, A, 0, 1, one, n, b, m);
        ref_minnorm(A, b, xr);
        check_forward(ctx, "lp_e226", A, 0.0, b, xr, 1e-6, 1e-14);
        ref_damped(A, 1.0, b, xr);
        check_forward(ctx, "lp_e226", A, 1.0, b, xr, 1e-6, 1e-14);
        free(one);
        free(b);
        free(xr);
        sla_matrix_destroy(&A);
    }
    CHECK_OK(ctx, sla_mm_read(ctx, SLA_TEST_DATA "/Franz6_id1959_aug.mtx", SLA_F64, &A));
    if (A) {
        long long m = sla_matrix_nrows(A), n = sla_matrix_ncols(A);
        CHECK(m == 10592 && n == 3016);
        double *b = malloc((size_t)m * sizeof *b), *xr = malloc((size_t)n * sizeof *xr);
        for (long long i = 0; i < m; i++) b[i] = sin((double)i + 1.0);
        /* full column rank (A^T A has eigenvalues in [1444, 1532]): the
         * normal equations are a sound dense reference */
        ref_damped(A, 0.0, b, xr);
        check_forward(ctx, "Franz6", A, 0.0, b, xr, 1e-8, 1e-12);
        ref_damped(A, 5.0, b, xr);
        check_forward(ctx, "Franz6", A, 5.0, b, xr, 1e-8, 1e-12);
        free(b);
        free(xr);
        sla_matrix_destroy(&A);
    }
}

/* method qr (SuiteSparseQR): the same references, to near machine precision;
 * a rank-deficient A without damping falls back to LSMR and says so. */
static void check_qr(sla_ctx *ctx, const char *name, const sla_matrix *A, double damp, const double *b,
                     const double *xr, double tol, bool expect_fallback)
{
    long long n = sla_matrix_ncols(A);
    double *x = malloc((size_t)n * sizeof *x);
    sla_lsq_options o;
    sla_lsq_options_default(&o);
    CHECK_OK(ctx, sla_lsq_options_parse(ctx, "method=qr", &o));
    CHECK(o.method == SLA_LSQ_QR);
    o.damp = damp;
    o.atol = o.btol = 1e-14;
    o.maxiter = 20 * (sla_int)n;
    sla_lsq_info info;
    CHECK_OK(ctx, sla_lsq(ctx, A, 0, &o, b, x, &info));
    double e = tu_reldiff(n, x, xr);
    if (getenv("TEST_LSQ_VERBOSE") || !(e <= tol) || expect_fallback != (info.note[0] != 0))
        fprintf(stderr, "%s qr damp %g: forward error %.3g, method %s, note '%s'\n", name, damp, e, info.method,
                info.note);
    CHECK(e <= tol);
    CHECK(info.converged);
    CHECK(strcmp(info.method, expect_fallback ? "lsmr" : "qr") == 0);
    CHECK(expect_fallback == (strstr(info.note, "rank deficient") != NULL));
    double rbar = sqrt(info.true_rnorm * info.true_rnorm + damp * damp * info.xnorm * info.xnorm);
    CHECK(fabs(info.rnorm - rbar) <= 1e-6 * fmax(rbar, 1e-12));
    free(x);
}

static void test_qr(sla_ctx *ctx)
{
#if SLA_HAS_SUITESPARSE
    struct { long long m, n, rank; double density; const char *name; } cases[] = {
        {60, 30, 0, 0.3, "overdetermined"}, {30, 60, 0, 0.3, "underdetermined"},
        {50, 40, 15, 0, "rank-deficient 50x40"}, {40, 40, 0, 0.3, "square"}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sla_matrix *A = random_matrix(ctx, cases[c].m, cases[c].n, cases[c].density, cases[c].rank, 40 + c);
        long long m = cases[c].m, n = cases[c].n;
        double *b = malloc((size_t)m * sizeof *b), *xr = malloc((size_t)n * sizeof *xr);
        tu_fill(b, m, 50 + c);
        ref_minnorm(A, b, xr);
        check_qr(ctx, cases[c].name, A, 0.0, b, xr, cases[c].rank ? 1e-6 : 1e-10, cases[c].rank > 0);
        ref_damped(A, 0.7, b, xr);
        check_qr(ctx, cases[c].name, A, 0.7, b, xr, 1e-10, false);
        free(b);
        free(xr);
        sla_matrix_destroy(&A);
    }
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_mm_read(ctx, SLA_TEST_DATA "/Franz6_id1959_aug.mtx", SLA_F64, &A));
    if (A) {
        long long m = sla_matrix_nrows(A), n = sla_matrix_ncols(A);
        double *b = malloc((size_t)m * sizeof *b), *xr = malloc((size_t)n * sizeof *xr);
        for (long long i = 0; i < m; i++) b[i] = sin((double)i + 1.0);
        ref_damped(A, 0.0, b, xr);
        check_qr(ctx, "Franz6", A, 0.0, b, xr, 1e-10, false);
        ref_damped(A, 5.0, b, xr);
        check_qr(ctx, "Franz6", A, 5.0, b, xr, 1e-10, false);
        free(b);
        free(xr);
        sla_matrix_destroy(&A);
    }
#else
    sla_lsq_options o;
    sla_lsq_options_default(&o);
    o.method = SLA_LSQ_QR;
    sla_matrix *A = random_matrix(ctx, 6, 4, 0.8, 0, 1);
    double b[6] = {1, 2, 3, 4, 5, 6}, x[4];
    CHECK(sla_lsq(ctx, A, 0, &o, b, x, NULL) == SLA_ERR_UNAVAILABLE);
    sla_matrix_destroy(&A);
#endif
}

/* ---- gradients ---------------------------------------------------------------------- */

/* L = w . x(A, b) with the forward to full accuracy. */
static double loss(sla_ctx *ctx, const sla_matrix *A, double damp, const double *b, const double *w)
{
    long long n = sla_matrix_ncols(A);
    double *x = malloc((size_t)n * sizeof *x);
    sla_lsq_options o;
    sla_lsq_options_default(&o);
    o.damp = damp;
    o.atol = o.btol = 1e-15;
    o.conlim = 0.0;
    o.maxiter = 50 * (sla_int)n;
    sla_status st = sla_lsq(ctx, A, 0, &o, b, x, NULL);
    CHECK(st == SLA_OK || st == SLA_NOT_CONVERGED);
    double L = 0.0;
    for (long long j = 0; j < n; j++) L += w[j] * x[j];
    free(x);
    return L;
}

static void check_vjp(sla_ctx *ctx, const char *name, sla_matrix *A, double damp)
{
    long long m = sla_matrix_nrows(A), n = sla_matrix_ncols(A), nnz = sla_matrix_nnz(A);
    double *b = malloc((size_t)m * sizeof *b), *w = malloc((size_t)n * sizeof *w), *x = malloc((size_t)n * sizeof *x);
    double *gb = malloc((size_t)m * sizeof *gb), *gA = malloc((size_t)nnz * sizeof *gA);
    double *vals = malloc((size_t)nnz * sizeof *vals);
    tu_fill(b, m, 31);
    tu_fill(w, n, 32);
    memcpy(vals, sla_matrix_values(A, 0), (size_t)nnz * sizeof *vals);
    sla_lsq_options o;
    sla_lsq_options_default(&o);
    o.damp = damp;
    o.atol = o.btol = 1e-15;
    o.conlim = 0.0;
    o.maxiter = 50 * (sla_int)n;
    o.grad_rtol = 1e-13;
    sla_status st = sla_lsq(ctx, A, 0, &o, b, x, NULL);
    CHECK(st == SLA_OK || st == SLA_NOT_CONVERGED);
    sla_lsq_info info;
    st = sla_lsq_vjp(ctx, A, 0, &o, b, x, w, gb, gA, &info);
    CHECK(st == SLA_OK || st == SLA_NOT_CONVERGED);
    CHECK(info.adjoint_iterations > 0);
    CHECK(info.adjoint_residual < 1e-9);
    const double h = 1e-6;
    double err_b = 0.0, err_A = 0.0, nb = 0.0, nA = 0.0;
    for (long long i = 0; i < m; i++) {
        double bi = b[i];
        b[i] = bi + h;
        double Lp = loss(ctx, A, damp, b, w);
        b[i] = bi - h;
        double Lm = loss(ctx, A, damp, b, w);
        b[i] = bi;
        double fd = (Lp - Lm) / (2 * h);
        err_b = fmax(err_b, fabs(fd - gb[i]));
        nb = fmax(nb, fabs(fd));
    }
    for (long long k = 0; k < nnz; k++) {
        double a = vals[k];
        vals[k] = a + h;
        sla_matrix_set_values(ctx, A, 0, vals);
        double Lp = loss(ctx, A, damp, b, w);
        vals[k] = a - h;
        sla_matrix_set_values(ctx, A, 0, vals);
        double Lm = loss(ctx, A, damp, b, w);
        vals[k] = a;
        sla_matrix_set_values(ctx, A, 0, vals);
        double fd = (Lp - Lm) / (2 * h);
        err_A = fmax(err_A, fabs(fd - gA[k]));
        nA = fmax(nA, fabs(fd));
    }
    if (getenv("TEST_LSQ_VERBOSE") || !(err_b <= 1e-6 * nb && err_A <= 1e-6 * nA))
        fprintf(stderr, "%s damp %g: FD errors b %.3g (of %.3g), A %.3g (of %.3g)\n", name, damp, err_b, nb,
                err_A, nA);
    CHECK(err_b <= 1e-6 * nb);
    CHECK(err_A <= 1e-6 * nA);
    /* dot-product identity for b: x is linear in b, dx = lsq(A, db) */
    double *db = malloc((size_t)m * sizeof *db), *dx = malloc((size_t)n * sizeof *dx);
    tu_fill(db, m, 33);
    CHECK(sla_lsq(ctx, A, 0, &o, db, dx, NULL) >= 0);
    double lhs = 0.0, rhs = 0.0;
    for (long long j = 0; j < n; j++) lhs += w[j] * dx[j];
    for (long long i = 0; i < m; i++) rhs += gb[i] * db[i];
    CHECK_CLOSE(lhs, rhs, 1e-9);
    /* for A (damp > 0): dx = M^-1 (dA^T r - A^T dA x), dense */
    if (damp > 0.0) {
        double *dA = malloc((size_t)nnz * sizeof *dA), *r = malloc((size_t)m * sizeof *r);
        double *c = malloc((size_t)n * sizeof *c), *t = malloc((size_t)m * sizeof *t);
        tu_fill(dA, nnz, 34);
        sla_matrix *D = NULL;
        CHECK_OK(ctx, sla_matrix_copy(ctx, A, &D));
        CHECK_OK(ctx, sla_matrix_set_values(ctx, D, 0, dA));
        sla_matvec(ctx, A, 0, 1, x, n, r, m);
        for (long long i = 0; i < m; i++) r[i] = b[i] - r[i];
        sla_matvec(ctx, D, 0, 1, x, n, t, m);            /* dA x */
        sla_matvec_transpose(ctx, A, 0, 1, t, m, c, n);  /* A^T dA x */
        sla_matvec_transpose(ctx, D, 0, 1, r, m, dx, n); /* dA^T r */
        for (long long j = 0; j < n; j++) c[j] = dx[j] - c[j];
        ref_normal_solve(A, damp, c, dx);
        lhs = rhs = 0.0;
        for (long long j = 0; j < n; j++) lhs += w[j] * dx[j];
        for (long long k = 0; k < nnz; k++) rhs += gA[k] * dA[k];
        CHECK_CLOSE(lhs, rhs, 1e-9);
        sla_matrix_destroy(&D);
        free(dA);
        free(r);
        free(c);
        free(t);
    }
    free(db);
    free(dx);
    free(b);
    free(w);
    free(x);
    free(gb);
    free(gA);
    free(vals);
}

static void test_vjp(sla_ctx *ctx)
{
    sla_matrix *A = random_matrix(ctx, 14, 8, 0.3, 0, 41);
    check_vjp(ctx, "overdetermined", A, 0.0);
    check_vjp(ctx, "overdetermined", A, 0.5);
    sla_matrix_destroy(&A);
    A = random_matrix(ctx, 8, 13, 0.3, 0, 42);
    check_vjp(ctx, "underdetermined", A, 0.0);
    check_vjp(ctx, "underdetermined", A, 0.3);
    sla_matrix_destroy(&A);
    A = random_matrix(ctx, 10, 9, 0.0, 4, 43);
    check_vjp(ctx, "rank-deficient", A, 0.4);
    sla_matrix_destroy(&A);
    /* gb and gA may be NULL */
    A = random_matrix(ctx, 9, 6, 0.3, 0, 44);
    double b[9], x[6], g[6], gb[9];
    tu_fill(b, 9, 1);
    tu_fill(g, 6, 2);
    CHECK_OK(ctx, sla_lsq(ctx, A, 0, NULL, b, x, NULL));
    CHECK_OK(ctx, sla_lsq_vjp(ctx, A, 0, NULL, b, x, g, NULL, NULL, NULL));
    CHECK_OK(ctx, sla_lsq_vjp(ctx, A, 0, NULL, b, x, g, gb, NULL, NULL));
    sla_matrix_destroy(&A);
}

/* ---- the rest ---------------------------------------------------------------------------- */

static void test_misc(sla_ctx *ctx)
{
    sla_matrix *A = random_matrix(ctx, 40, 25, 0.2, 0, 51);
    double b[40], x[25], x2[25], x0[25];
    tu_fill(b, 40, 52);
    tu_fill(x0, 25, 53);
    sla_lsq_options o;
    sla_lsq_options_default(&o);
    o.damp = 0.2;
    o.atol = o.btol = 1e-14;
    sla_lsq_info info;
    for (int k = 0; k < 2; k++) {
        o.method = methods[k];
        o.x0 = NULL;
        CHECK_OK(ctx, sla_lsq(ctx, A, 0, &o, b, x, &info));
        o.x0 = x0; /* the same problem from another start */
        CHECK_OK(ctx, sla_lsq(ctx, A, 0, &o, b, x2, &info));
        CHECK(tu_reldiff(25, x2, x) < 1e-9);
        o.x0 = x; /* from the solution: nothing to do */
        CHECK_OK(ctx, sla_lsq(ctx, A, 0, &o, b, x2, &info));
        CHECK(info.iterations <= 2);
        o.x0 = NULL;
        o.maxiter = 3;
        CHECK_ST(ctx, sla_lsq(ctx, A, 0, &o, b, x, &info), SLA_NOT_CONVERGED);
        CHECK(info.reason == SLA_LSQ_MAXITER && !info.converged && info.iterations == 3);
        o.maxiter = 0;
        o.conlim = 1.5;
        CHECK_ST(ctx, sla_lsq(ctx, A, 0, &o, b, x, &info), SLA_NOT_CONVERGED);
        CHECK(info.reason == SLA_LSQ_CONLIM);
        o.conlim = 1e8;
    }
    /* b = 0: x = 0 at once */
    double z[40] = {0};
    CHECK_OK(ctx, sla_lsq(ctx, A, 0, NULL, z, x, &info));
    CHECK(info.reason == SLA_LSQ_ZERO && info.iterations == 0 && info.xnorm == 0.0);
    /* a compatible system stops by test 1 */
    double xt[25];
    tu_fill(xt, 25, 54);
    sla_matvec(ctx, A, 0, 1, xt, 25, b, 40);
    CHECK_OK(ctx, sla_lsq(ctx, A, 0, NULL, b, x, &info));
    CHECK(info.reason == SLA_LSQ_COMPATIBLE);
    CHECK(tu_reldiff(25, x, xt) < 1e-6);
    /* options */
    sla_lsq_options_default(&o);
    CHECK_OK(ctx, sla_lsq_options_parse(ctx, "method=lsmr, damp=0.5,atol=1e-9,maxiter=7,grad_rtol=1e-6", &o));
    CHECK(o.method == SLA_LSQ_LSMR && o.damp == 0.5 && o.atol == 1e-9 && o.maxiter == 7 && o.grad_rtol == 1e-6);
    CHECK_ERR(ctx, sla_lsq_options_parse(ctx, "dmap=1", &o), SLA_ERR_ARGUMENT, "damp");
    CHECK_ERR(ctx, sla_lsq_options_parse(ctx, "damp=-1", &o), SLA_ERR_ARGUMENT, "damp");
    CHECK_ERR(ctx, sla_lsq_options_parse(ctx, "method=svd", &o), SLA_ERR_ARGUMENT, "lsqr, lsmr or qr");
    CHECK_ERR(ctx, sla_lsq_options_parse(ctx, "maxiter=1.5", &o), SLA_ERR_ARGUMENT, "maxiter");
    CHECK(o.method == SLA_LSQ_LSMR && o.damp == 0.5); /* unchanged by the failures */
    CHECK(strcmp(sla_lsq_reason_name(SLA_LSQ_NORMAL), "normal") == 0);
    /* bad input */
    CHECK_ERR(ctx, sla_lsq(ctx, NULL, 0, NULL, b, x, NULL), SLA_ERR_ARGUMENT, "A is NULL");
    CHECK_ERR(ctx, sla_lsq(ctx, A, 1, NULL, b, x, NULL), SLA_ERR_INDEX, "value array 1");
    CHECK_ERR(ctx, sla_lsq(ctx, A, 0, NULL, NULL, x, NULL), SLA_ERR_ARGUMENT, "NULL");
    sla_lsq_options_default(&o);
    o.damp = -1.0;
    CHECK_ERR(ctx, sla_lsq(ctx, A, 0, &o, b, x, NULL), SLA_ERR_ARGUMENT, "out of range");
    o.damp = 0.0;
    o.method = (sla_lsq_method)7;
    CHECK_ERR(ctx, sla_lsq(ctx, A, 0, &o, b, x, NULL), SLA_ERR_ARGUMENT, "method");
    b[3] = NAN;
    CHECK_ERR(ctx, sla_lsq(ctx, A, 0, NULL, b, x, NULL), SLA_ERR_VALUE, "b has");
    b[3] = 1.0;
    CHECK_ERR(ctx, sla_lsq_vjp(ctx, A, 0, NULL, b, x, NULL, NULL, NULL, NULL), SLA_ERR_ARGUMENT, "gx");
    sla_matrix_destroy(&A);
}

/* sla_lsq_batch / sla_lsq_batch_vjp on 6 value arrays (one pattern, both
 * shapes, damped and not) against sla_lsq / sla_lsq_vjp per array. */
static void test_batch(sla_ctx *ctx)
{
    const int nb = 6;
    for (int shape = 0; shape < 2; shape++) {
        long long m = shape ? 40 : 90, n = shape ? 90 : 40;
        sla_matrix *A1 = random_matrix(ctx, m, n, 0.1, 0, 31 + (unsigned long long)shape), *A = NULL;
        sla_int nnz = sla_matrix_nnz(A1);
        sla_int *ri = malloc((size_t)nnz * sizeof *ri), *ci = malloc((size_t)nnz * sizeof *ci);
        sla_matrix_get_rowind(A1, ri);
        sla_matrix_get_colind(A1, ci);
        double *v = malloc((size_t)nb * nnz * sizeof *v), *b = malloc((size_t)nb * m * sizeof *b),
               *x = malloc((size_t)nb * n * sizeof *x), *x1 = malloc((size_t)n * sizeof *x1),
               *gx = malloc((size_t)nb * n * sizeof *gx), *gb = malloc((size_t)nb * m * sizeof *gb),
               *gA = malloc((size_t)nb * nnz * sizeof *gA), *gb1 = malloc((size_t)m * sizeof *gb1),
               *gA1 = malloc((size_t)nnz * sizeof *gA1);
        const double *v1 = sla_matrix_values(A1, 0);
        tu_fill(v, (long long)nb * nnz, 41);
        for (int ib = 0; ib < nb; ib++)
            for (sla_int p = 0; p < nnz; p++) v[(size_t)ib * nnz + p] = v1[p] * (1.0 + 0.2 * ib) + 0.05 * v[(size_t)ib * nnz + p];
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, (sla_int)m, (sla_int)n, nnz, ri, ci, SLA_F64, nb, v, NULL, &A));
        tu_fill(b, (long long)nb * m, 42);
        tu_fill(gx, (long long)nb * n, 43);
        for (int damped = 0; damped < 2; damped++) {
            sla_lsq_options o;
            sla_lsq_options_default(&o);
            o.damp = damped ? 0.3 : 0.0;
            o.atol = o.btol = 1e-12;
            o.maxiter = 2000;
            sla_lsq_info info[6];
            CHECK_OK(ctx, sla_lsq_batch(ctx, A, &o, b, x, info));
            CHECK_OK(ctx, sla_lsq_batch_vjp(ctx, A, &o, b, x, gx, gb, gA, info));
            double ex = 0.0, eg = 0.0;
            for (int ib = 0; ib < nb; ib++) {
                CHECK_OK(ctx, sla_lsq(ctx, A, ib, &o, b + (size_t)ib * m, x1, NULL));
                CHECK_OK(ctx, sla_lsq_vjp(ctx, A, ib, &o, b + (size_t)ib * m, x + (size_t)ib * n,
                                          gx + (size_t)ib * n, gb1, gA1, NULL));
                for (long long i = 0; i < n; i++)
                    ex = fmax(ex, fabs(x1[i] - x[(size_t)ib * n + i]) / (1.0 + fabs(x1[i])));
                for (long long i = 0; i < m; i++)
                    eg = fmax(eg, fabs(gb1[i] - gb[(size_t)ib * m + i]) / (1.0 + fabs(gb1[i])));
                for (sla_int p = 0; p < nnz; p++)
                    eg = fmax(eg, fabs(gA1[p] - gA[(size_t)ib * nnz + p]) / (1.0 + fabs(gA1[p])));
            }
            CHECK(ex < 1e-10);
            CHECK(eg < 1e-8);
            printf("lsq batch %lldx%lld damp %.1f: %d arrays, x vs per-array %.1e, gradients %.1e\n", m, n, o.damp,
                   nb, ex, eg);
        }
        /* a bad right-hand side in one array: its error comes back */
        b[(size_t)3 * m + 1] = NAN;
        CHECK_ERR(ctx, sla_lsq_batch(ctx, A, NULL, b, x, NULL), SLA_ERR_VALUE, "");
        CHECK_ERR(ctx, sla_lsq_batch(ctx, A, NULL, NULL, x, NULL), SLA_ERR_ARGUMENT, "NULL");
        sla_matrix_destroy(&A);
        sla_matrix_destroy(&A1);
        free(ri), free(ci), free(v), free(b), free(x), free(x1), free(gx), free(gb), free(gA), free(gb1), free(gA1);
    }
}

/* An m x n matrix with `per` random entries a row plus a diagonal-ish
 * entry (no dense intermediate: m or n may be large). */
static sla_matrix *sparse_rect(sla_ctx *ctx, sla_int m, sla_int n, int per, unsigned long long seed)
{
    size_t cap = (size_t)m * (size_t)(per + 1);
    sla_int *ri = malloc(cap * sizeof *ri), *ci = malloc(cap * sizeof *ci);
    double *v = malloc(cap * sizeof *v);
    unsigned long long s = seed * 104729 + 1;
    size_t c = 0;
    for (sla_int i = 0; i < m; i++) {
        ri[c] = i, ci[c] = (sla_int)(((long long)i * n) / m), v[c++] = 2.0 + tu_rand(&s);
        for (int t = 0; t < per; t++) {
            sla_int j = (sla_int)((0.5 * tu_rand(&s) + 0.5) * (double)n);
            ri[c] = i, ci[c] = j < n ? j : n - 1, v[c++] = tu_rand(&s);
        }
    }
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, m, n, (sla_int)c, ri, ci, SLA_F64, 1, v, NULL, &A));
    free(ri);
    free(ci);
    free(v);
    return A;
}

/* The transpose option: explicit and scatter give the same x (bit for bit
 * on one thread: the gather adds the same terms in the same order), the
 * same VJP, and agree to rounding on two threads, tall and wide, with and
 * without damping; the option's names. */
static void test_transpose(sla_ctx *ctx)
{
    const sla_int shapes[3][2] = {{40, 25}, {12000, 500}, {500, 12000}};
    for (int sh = 0; sh < 3; sh++) {
        const sla_int m = shapes[sh][0], n = shapes[sh][1];
        sla_matrix *A = sparse_rect(ctx, m, n, 3, 50 + sh);
        double *b = malloc((size_t)m * sizeof *b), *x[2], *gA[2], *gb[2], *gx = malloc((size_t)n * sizeof *gx);
        tu_fill(b, m, 60 + sh);
        tu_fill(gx, n, 70 + sh);
        long long nnz = sla_matrix_nnz(A);
        for (int i = 0; i < 2; i++) {
            x[i] = malloc((size_t)n * sizeof **x);
            gA[i] = malloc((size_t)nnz * sizeof **gA);
            gb[i] = malloc((size_t)m * sizeof **gb);
        }
        for (int nt = 1; nt <= 2; nt++)
            for (int mi = 0; mi < 2; mi++)
                for (int d = 0; d < 2; d++) {
                    sla_ctx_set_threads(ctx, nt);
                    sla_lsq_info info[2];
                    for (int e = 0; e < 2; e++) {
                        sla_lsq_options o;
                        sla_lsq_options_default(&o);
                        o.method = methods[mi];
                        o.damp = d ? 0.3 : 0.0;
                        o.atol = o.btol = 0.0;
                        o.conlim = 0.0;
                        o.maxiter = 40;
                        o.transpose = e ? SLA_TRANSPOSE_EXPLICIT : SLA_TRANSPOSE_SCATTER;
                        sla_status st = sla_lsq(ctx, A, 0, &o, b, x[e], &info[e]);
                        CHECK(st == SLA_OK || st == SLA_NOT_CONVERGED);
                        o.grad_rtol = 1e-10;
                        st = sla_lsq_vjp(ctx, A, 0, &o, b, x[e], gx, gb[e], gA[e], NULL);
                        CHECK(st == SLA_OK || st == SLA_NOT_CONVERGED);
                    }
                    CHECK(info[0].iterations == info[1].iterations);
                    double dx = 0.0, nx = 0.0, dg = 0.0, ng = 0.0;
                    for (sla_int j = 0; j < n; j++) dx = fmax(dx, fabs(x[0][j] - x[1][j])), nx = fmax(nx, fabs(x[0][j]));
                    for (long long p = 0; p < nnz; p++) dg = fmax(dg, fabs(gA[0][p] - gA[1][p])), ng = fmax(ng, fabs(gA[0][p]));
                    if (nt == 1) {
                        CHECK(memcmp(x[0], x[1], (size_t)n * sizeof **x) == 0);
                        CHECK(memcmp(gA[0], gA[1], (size_t)nnz * sizeof **gA) == 0);
                        CHECK(memcmp(gb[0], gb[1], (size_t)m * sizeof **gb) == 0);
                    } else {
                        CHECK(dx <= 1e-9 * nx);
                        CHECK(dg <= 1e-8 * ng);
                    }
                    if (nt == 2 && mi == 0 && d == 0)
                        printf("transpose %lld x %lld: explicit vs scatter on 2 threads, x differs by %.1e, gA by %.1e "
                               "(relative)\n", (long long)m, (long long)n, dx / nx, dg / ng);
                }
        sla_ctx_set_threads(ctx, 0);
        for (int i = 0; i < 2; i++) {
            free(x[i]);
            free(gA[i]);
            free(gb[i]);
        }
        free(b);
        free(gx);
        sla_matrix_destroy(&A);
    }
    sla_lsq_options o;
    sla_lsq_options_default(&o);
    CHECK(o.transpose == SLA_TRANSPOSE_AUTO);
    CHECK_OK(ctx, sla_lsq_options_parse(ctx, "transpose=explicit", &o));
    CHECK(o.transpose == SLA_TRANSPOSE_EXPLICIT);
    CHECK_OK(ctx, sla_lsq_options_parse(ctx, "transpose=scatter", &o));
    CHECK(o.transpose == SLA_TRANSPOSE_SCATTER);
    CHECK_ERR(ctx, sla_lsq_options_parse(ctx, "transpose=gather", &o), SLA_ERR_ARGUMENT, "transpose");
    CHECK(o.transpose == SLA_TRANSPOSE_SCATTER);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    test_random(ctx);
    test_real(ctx);
    test_qr(ctx);
    test_vjp(ctx);
    test_misc(ctx);
    test_batch(ctx);
    test_transpose(ctx);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_lsq");
}
