/* The CHOLMOD direct backend against dense LAPACK references: solves with
 * several right-hand sides and leading dimensions, every ordering, LL^T and
 * LDL^T, log-determinants, batches and refactorization, float32 input,
 * n == 0, errors, and concurrent solves on different factors. */
#include "test_util.h"

#include "solvers/direct.h"

static const sla__direct_ops *ops;

/* Dense column-major copy of value array ib (caller frees). */
static double *dense_of(const sla_matrix *A, sla_int ib)
{
    sla_int n = sla_matrix_nrows(A);
    double *D = malloc((size_t)(n * n + 1) * sizeof *D);
    if (D) sla_matrix_to_dense(NULL, A, ib, D, n > 0 ? n : 1);
    return D;
}

/* X (ld n) = A_ib^-1 B (ld ldb) by dgesv; returns LAPACK's info. */
static int ref_solve(const sla_matrix *A, sla_int ib, int nrhs, const double *B, sla_int ldb,
                     double *X)
{
    sla_int n = sla_matrix_nrows(A);
    double *D = dense_of(A, ib);
    lapack_int *ipiv = malloc((size_t)(n + 1) * sizeof *ipiv);
    for (int j = 0; j < nrhs; j++) memcpy(X + j * n, B + j * ldb, (size_t)n * sizeof *X);
    int info = LAPACKE_dgesv(LAPACK_COL_MAJOR, (lapack_int)n, nrhs, D, (lapack_int)n, ipiv, X,
                             (lapack_int)n);
    free(D);
    free(ipiv);
    return info;
}

/* sign and log|det| of A_ib from dense LU (dgetrf): U's diagonal and the
 * row swaps of ipiv. */
static int ref_logdet_lu(const sla_matrix *A, sla_int ib, double *sign, double *la)
{
    sla_int n = sla_matrix_nrows(A);
    double *D = dense_of(A, ib);
    lapack_int *ipiv = malloc((size_t)(n + 1) * sizeof *ipiv);
    int info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, D, (lapack_int)n, ipiv);
    double s = 1.0, l = 0.0;
    for (sla_int i = 0; i < n; i++) {
        double u = D[i * n + i];
        if (u < 0) s = -s;
        l += log(fabs(u));
        if (ipiv[i] != (lapack_int)(i + 1)) s = -s;
    }
    *sign = s;
    *la = l;
    free(D);
    free(ipiv);
    return info;
}

/* log det of SPD A_ib from dense Cholesky (dpotrf): 2 sum log L_ii. */
static int ref_logdet_chol(const sla_matrix *A, sla_int ib, double *la)
{
    sla_int n = sla_matrix_nrows(A);
    double *D = dense_of(A, ib);
    int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, D, (lapack_int)n);
    double l = 0.0;
    for (sla_int i = 0; i < n; i++) l += log(D[i * n + i]);
    *la = 2.0 * l;
    free(D);
    return info;
}

static double frob(const sla_matrix *A, sla_int ib)
{
    double s = 0.0;
    for (sla_int k = 0; k < sla_matrix_nnz(A); k++) {
        double v = sla_matrix_dtype(A) == SLA_F64 ? ((const double *)sla_matrix_values(A, ib))[k]
                                                  : ((const float *)sla_matrix_values(A, ib))[k];
        s += v * v;
    }
    return sqrt(s);
}

static const char *expected_ordering(sla_ordering o)
{
    switch (o) {
    case SLA_ORDER_METIS: return "metis";
    case SLA_ORDER_NATURAL: return "natural";
    default: return "amd";
    }
}

/* Analyze + factor value array ib + solve 3 right-hand sides with padded
 * leading dimensions, compared with LAPACK; the transposed solve must equal
 * the plain one; logdet against dpotrf (LL^T) or dgetrf (LDL^T). The first
 * solution column goes to x0 (n entries) when not NULL. */
static void run_case_tol(sla_ctx *ctx, const char *label, const sla_matrix *A, sla_int ib,
                         sla_ordering ord, bool ldlt, double *x0, double tol)
{
    sla_int n = sla_matrix_nrows(A);
    const int nrhs = 3;
    const sla_int ldb = n + 2, ldx = n + 3;
    sla__direct_opts o = {.ordering = ord, .ldlt = ldlt, .nthreads = 1};
    sla__direct_stats stats;
    memset(&stats, 0, sizeof stats);
    void *sym = NULL, *num = NULL;
    double *B = malloc((size_t)(ldb * nrhs) * sizeof *B);
    double *X = malloc((size_t)(ldx * nrhs) * sizeof *X);
    double *X2 = malloc((size_t)(ldx * nrhs) * sizeof *X2);
    double *R = malloc((size_t)(n * nrhs + 1) * sizeof *R);
    tu_fill(B, ldb * nrhs, 11);
    for (sla_int k = 0; k < ldx * nrhs; k++) X[k] = X2[k] = 777.0;

    int before = tu_failures;
    CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, &stats));
    if (!sym) goto out;
    CHECK(stats.factor_nnz >= (double)n && stats.factor_nnz > 0);
    CHECK(stats.flops > 0);
    CHECK(stats.bytes > 0);
    CHECK(strcmp(stats.ordering, expected_ordering(ord)) == 0);
    CHECK_OK(ctx, ops->factor(ctx, sym, A, ib, &num));
    if (!num) goto out;
    CHECK_OK(ctx, ops->solve(ctx, sym, num, false, nrhs, B, ldb, X, ldx));
    CHECK_OK(ctx, ops->solve(ctx, sym, num, true, nrhs, B, ldb, X2, ldx));
    CHECK(ref_solve(A, ib, nrhs, B, ldb, R) == 0);
    for (int j = 0; j < nrhs; j++) {
        double e = tu_reldiff(n, X + j * ldx, R + j * n);
        CHECK(e < tol);
        if (!(e < tol)) fprintf(stderr, "  %s rhs %d: rel error %.3g\n", label, j, e);
        /* normwise backward error ||b - A x|| / (||A||_F ||x|| + ||b||) */
        double *res = malloc((size_t)(n + 1) * sizeof *res);
        double rr = sqrt(sla__residual(A, ib, X + j * ldx, B + j * ldb, res, 1));
        double be = rr / (frob(A, ib) * sla__nrm2(n, X + j * ldx, 1) + sla__nrm2(n, B + j * ldb, 1));
        CHECK(be < 1e-14);
        if (!(be < 1e-14)) fprintf(stderr, "  %s rhs %d: backward error %.3g\n", label, j, be);
        free(res);
        CHECK(tu_reldiff(n, X2 + j * ldx, X + j * ldx) == 0.0);
        for (sla_int i = n; i < ldx; i++) CHECK(X[j * ldx + i] == 777.0); /* padding untouched */
    }
    double sg = 0, la = 0, rs = 1, rl = 0;
    CHECK_OK(ctx, ops->logdet(ctx, sym, num, &sg, &la));
    if (ldlt) {
        CHECK(ref_logdet_lu(A, ib, &rs, &rl) == 0);
    } else {
        CHECK(ref_logdet_chol(A, ib, &rl) == 0);
    }
    CHECK(sg == rs);
    CHECK_CLOSE(la, rl, 1e-10);
    if (x0) memcpy(x0, X, (size_t)n * sizeof *x0);
out:
    if (tu_failures != before)
        fprintf(stderr, "  in case %s (n %lld, %s, ordering %d)\n", label, (long long)n,
                ldlt ? "ldlt" : "llt", (int)ord);
    ops->free_num(num);
    ops->free_sym(sym);
    free(B);
    free(X);
    free(X2);
    free(R);
}

static void run_case(sla_ctx *ctx, const char *label, const sla_matrix *A, sla_int ib,
                     sla_ordering ord, bool ldlt, double *x0)
{
    run_case_tol(ctx, label, A, ib, ord, ldlt, x0, 1e-10);
}

/* Every ordering, LL^T and LDL^T; all solutions agree. */
static void test_matrix_all(sla_ctx *ctx, const char *label, const sla_matrix *A)
{
    sla_int n = sla_matrix_nrows(A);
    const sla_ordering ords[] = {SLA_ORDER_AUTO, SLA_ORDER_AMD, SLA_ORDER_METIS, SLA_ORDER_NATURAL};
    double *ref = malloc((size_t)(n + 1) * sizeof *ref);
    double *x = malloc((size_t)(n + 1) * sizeof *x);
    run_case(ctx, label, A, 0, SLA_ORDER_AUTO, false, ref);
    for (int ldlt = 0; ldlt <= 1; ldlt++)
        for (int k = 0; k < 4; k++) {
            if (!ldlt && k == 0) continue;
            run_case(ctx, label, A, 0, ords[k], ldlt, x);
            CHECK(tu_reldiff(n, x, ref) < 1e-10);
        }
    free(ref);
    free(x);
}

/* Copy of A with s added to every diagonal entry (all stored). */
static sla_matrix *shifted(sla_ctx *ctx, const sla_matrix *A, double s)
{
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    const sla_int *rp = sla_matrix_rowptr(A);
    sla_int *ci = malloc((size_t)(nnz + 1) * sizeof *ci);
    double *v = malloc((size_t)(nnz + 1) * sizeof *v);
    sla_matrix_get_colind(A, ci);
    memcpy(v, sla_matrix_values(A, 0), (size_t)nnz * sizeof *v);
    for (sla_int i = 0; i < n; i++)
        for (sla_int k = rp[i]; k < rp[i + 1]; k++)
            if (ci[k] == i) v[k] += s;
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, rp, ci, SLA_F64, 1, v, SLA_COPY, &B));
    free(ci);
    free(v);
    return B;
}

static void test_generated_and_files(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 12, &A));
    if (A) test_matrix_all(ctx, "poisson2d", A);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_poisson(ctx, 3, 6, &A));
    if (A) test_matrix_all(ctx, "poisson3d", A);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_random(ctx, 300, 6, SLA_GEN_SPD, 7, &A));
    if (A) test_matrix_all(ctx, "random-spd", A);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_mm_read(ctx, SLA_TEST_DATA "/bcsstk01.mtx", SLA_F64, &A));
    if (A) test_matrix_all(ctx, "bcsstk01", A);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_mm_read(ctx, SLA_TEST_DATA "/494_bus.mtx", SLA_F64, &A));
    if (A) test_matrix_all(ctx, "494_bus", A);
    sla_matrix_destroy(&A);
}

/* float32 input is converted to double for the factorization. */
static void test_float32(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_mm_read(ctx, SLA_TEST_DATA "/bcsstk01.mtx", SLA_F32, &A));
    if (A) {
        CHECK(sla_matrix_dtype(A) == SLA_F32);
        run_case(ctx, "bcsstk01-f32", A, 0, SLA_ORDER_AUTO, false, NULL);
        run_case(ctx, "bcsstk01-f32", A, 0, SLA_ORDER_AUTO, true, NULL);
    }
    sla_matrix_destroy(&A);
}

/* LDL^T of symmetric indefinite matrices; Cholesky refuses them. */
static void test_indefinite(sla_ctx *ctx)
{
    sla_matrix *P = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 10, &P));
    sla_matrix *A = P ? shifted(ctx, P, -1.3) : NULL;
    if (A) {
        double sg, la;
        CHECK(ref_logdet_lu(A, 0, &sg, &la) == 0);
        CHECK(sg != 0);
        run_case(ctx, "poisson2d-1.3I", A, 0, SLA_ORDER_AUTO, true, NULL);
        run_case(ctx, "poisson2d-1.3I", A, 0, SLA_ORDER_METIS, true, NULL);
        run_case(ctx, "poisson2d-1.3I", A, 0, SLA_ORDER_NATURAL, true, NULL);

        /* Cholesky: the analysis works, the factorization reports a column */
        sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = 1};
        sla__direct_stats stats;
        void *sym = NULL, *num = (void *)&o;
        CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, &stats));
        if (sym) {
            CHECK_ERR(ctx, ops->factor(ctx, sym, A, 0, &num), SLA_ERR_NOT_SPD, "column");
            CHECK(num == NULL);
            CHECK(strstr(sla_ctx_message(ctx), "not positive definite") != NULL);
        }
        ops->free_sym(sym);
    }
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&P);

    /* tumorAntiAngiogenesis_2: symmetric indefinite with 122 zero diagonal
     * entries (saddle-point structure). Without pivoting, LDL^T meets a zero
     * pivot under AMD; in the natural order every pivot is nonzero. */
    CHECK_OK(ctx, sla_mm_read(ctx, SLA_TEST_DATA "/tumorAntiAngiogenesis_2.mtx", SLA_F64, &A));
    if (A) {
        double sg, la;
        CHECK(ref_logdet_lu(A, 0, &sg, &la) == 0);
        CHECK(sg != 0);
        /* condition number ~2e10 (dgecon): the forward error scales with it */
        run_case_tol(ctx, "tumorAntiAngiogenesis_2", A, 0, SLA_ORDER_NATURAL, true, NULL, 1e-5);
        sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = true, .nthreads = 1};
        void *sym = NULL, *num = NULL;
        CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, NULL));
        if (sym) CHECK_ERR(ctx, ops->factor(ctx, sym, A, 0, &num), SLA_ERR_SINGULAR, "ldlt: zero pivot at column");
        CHECK(num == NULL);
        ops->free_num(num);
        ops->free_sym(sym);
        sym = NULL;
        o.ldlt = false;
        CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, NULL));
        if (sym) CHECK_ERR(ctx, ops->factor(ctx, sym, A, 0, &num), SLA_ERR_NOT_SPD, "column");
        CHECK(num == NULL);
        ops->free_num(num);
        ops->free_sym(sym);
    }
    sla_matrix_destroy(&A);

    /* [[0 1] [1 0]]: LDL^T without pivoting meets a zero pivot */
    const sla_int rp[] = {0, 1, 2}, ci[] = {1, 0};
    const double v[] = {1.0, 1.0};
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 2, 2, rp, ci, SLA_F64, 1, v, SLA_COPY, &A));
    if (A) {
        sla__direct_opts o = {.ordering = SLA_ORDER_NATURAL, .ldlt = true, .nthreads = 1};
        void *sym = NULL, *num = NULL;
        CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, NULL));
        if (sym) CHECK_ERR(ctx, ops->factor(ctx, sym, A, 0, &num), SLA_ERR_SINGULAR, "zero pivot at column");
        CHECK(num == NULL);
        ops->free_num(num);
        ops->free_sym(sym);
        o.ldlt = false;
        CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, NULL));
        if (sym) CHECK_ERR(ctx, ops->factor(ctx, sym, A, 0, &num), SLA_ERR_NOT_SPD, "column 0");
        ops->free_num(num);
        ops->free_sym(sym);
    }
    sla_matrix_destroy(&A);
}

/* One analysis, two value arrays, then a refactorization with new values. */
static void test_batch_refactor(sla_ctx *ctx)
{
    sla_matrix *P = NULL, *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 9, &P));
    if (!P) return;
    sla_int n = sla_matrix_nrows(P), nnz = sla_matrix_nnz(P);
    const sla_int *rp = sla_matrix_rowptr(P);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    double *v = malloc((size_t)(2 * nnz) * sizeof *v);
    sla_matrix_get_colind(P, ci);
    const double *pv = sla_matrix_values(P, 0);
    for (sla_int i = 0; i < n; i++)
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) {
            v[k] = pv[k];
            v[nnz + k] = 2.0 * pv[k] + (ci[k] == i ? 0.5 + 0.01 * (double)i : 0.0);
        }
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, rp, ci, SLA_F64, 2, v, SLA_COPY, &A));
    double *b = malloc((size_t)n * sizeof *b), *x[2], *r = malloc((size_t)n * sizeof *r);
    x[0] = malloc((size_t)n * sizeof *x[0]);
    x[1] = malloc((size_t)n * sizeof *x[1]);
    tu_fill(b, n, 5);
    for (int ldlt = 0; ldlt <= 1 && A; ldlt++) {
        sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = ldlt, .nthreads = 1};
        void *sym = NULL, *num[2] = {NULL, NULL};
        CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, NULL));
        if (!sym) continue;
        for (int ib = 0; ib < 2; ib++) CHECK_OK(ctx, ops->factor(ctx, sym, A, ib, &num[ib]));
        /* solve in the other order than factored: each factor is its own */
        for (int ib = 1; ib >= 0; ib--) {
            if (!num[ib]) continue;
            CHECK_OK(ctx, ops->solve(ctx, sym, num[ib], false, 1, b, n, x[ib], n));
            CHECK(ref_solve(A, ib, 1, b, n, r) == 0);
            CHECK(tu_reldiff(n, x[ib], r) < 1e-10);
        }
        CHECK(tu_reldiff(n, x[0], x[1]) > 0.1);

        /* refactor value array 0 after changing it */
        double *w = malloc((size_t)nnz * sizeof *w);
        for (sla_int i = 0; i < n; i++)
            for (sla_int k = rp[i]; k < rp[i + 1]; k++)
                w[k] = 3.0 * pv[k] + (ci[k] == i ? 1.0 : 0.0) + (ldlt ? 0.0 : 0.0);
        CHECK_OK(ctx, sla_matrix_set_values(ctx, A, 0, w));
        ops->free_num(num[0]);
        num[0] = NULL;
        CHECK_OK(ctx, ops->factor(ctx, sym, A, 0, &num[0]));
        if (num[0]) {
            CHECK_OK(ctx, ops->solve(ctx, sym, num[0], false, 1, b, n, x[0], n));
            CHECK(ref_solve(A, 0, 1, b, n, r) == 0);
            CHECK(tu_reldiff(n, x[0], r) < 1e-10);
            double sg, la, rl;
            CHECK_OK(ctx, ops->logdet(ctx, sym, num[0], &sg, &la));
            CHECK(ref_logdet_chol(A, 0, &rl) == 0);
            CHECK(sg == 1.0);
            CHECK_CLOSE(la, rl, 1e-10);
        }
        /* restore the original values for the next mode */
        CHECK_OK(ctx, sla_matrix_set_values(ctx, A, 0, v));
        free(w);
        ops->free_num(num[0]);
        ops->free_num(num[1]);
        ops->free_sym(sym);
    }
    free(b);
    free(r);
    free(x[0]);
    free(x[1]);
    free(ci);
    free(v);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&P);
}

/* Solves on different numeric objects from several threads at once. */
static void test_concurrent(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_random(ctx, 400, 5, SLA_GEN_SPD, 3, &A));
    if (!A) return;
    sla_int n = sla_matrix_nrows(A);
    enum { NT = 4 };
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = 1};
    void *sym = NULL, *num[NT] = {NULL};
    CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, NULL));
    for (int t = 0; t < NT && sym; t++) CHECK_OK(ctx, ops->factor(ctx, sym, A, 0, &num[t]));
    double *b = malloc((size_t)n * sizeof *b), *r = malloc((size_t)n * sizeof *r);
    double *x = malloc((size_t)(n * NT) * sizeof *x);
    tu_fill(b, n, 9);
    CHECK(ref_solve(A, 0, 1, b, n, r) == 0);
    int bad = 0;
    if (sym && num[NT - 1]) {
#ifdef _OPENMP
#pragma omp parallel for num_threads(NT) reduction(+ : bad)
#endif
        for (int t = 0; t < NT; t++) {
            for (int rep = 0; rep < 20; rep++) {
                sla_ctx *c = NULL;
                if (sla_ctx_create(&c) != SLA_OK) { bad++; continue; }
                if (ops->solve(c, sym, num[t], false, 1, b, n, x + t * n, n) != SLA_OK) bad++;
                sla_ctx_destroy(&c);
            }
        }
        CHECK(bad == 0);
        for (int t = 0; t < NT; t++) CHECK(tu_reldiff(n, x + t * n, r) < 1e-10);
    }
    for (int t = 0; t < NT; t++) ops->free_num(num[t]);
    ops->free_sym(sym);
    free(b);
    free(r);
    free(x);
    sla_matrix_destroy(&A);
}

static void test_empty_and_errors(sla_ctx *ctx)
{
    /* n == 0 */
    const sla_int rp0[] = {0};
    const sla_int ci0[] = {0};
    const double v0[] = {0.0};
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 0, 0, rp0, ci0, SLA_F64, 1, v0, SLA_COPY, &A));
    if (A) {
        for (int ldlt = 0; ldlt <= 1; ldlt++) {
            sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = ldlt, .nthreads = 1};
            sla__direct_stats stats;
            void *sym = NULL, *num = NULL;
            double b = 1.0, x = 2.0, sg = 0, la = 1;
            CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, &stats));
            CHECK(stats.factor_nnz == 0);
            if (sym) CHECK_OK(ctx, ops->factor(ctx, sym, A, 0, &num));
            if (num) {
                CHECK_OK(ctx, ops->solve(ctx, sym, num, false, 1, &b, 1, &x, 1));
                CHECK_OK(ctx, ops->logdet(ctx, sym, num, &sg, &la));
                CHECK(sg == 1.0 && la == 0.0);
            }
            ops->free_num(num);
            ops->free_sym(sym);
        }
    }
    sla_matrix_destroy(&A);

    /* argument errors */
    CHECK_OK(ctx, sla_gen_poisson(ctx, 1, 5, &A));
    if (!A) return;
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = 1};
    void *sym = (void *)&o, *num = NULL;
    CHECK_ST(ctx, ops->analyze(ctx, NULL, &o, &sym, NULL), SLA_ERR_ARGUMENT);
    CHECK(sym == NULL);
    sla__direct_opts bad = o;
    bad.ordering = (sla_ordering)42;
    CHECK_ERR(ctx, ops->analyze(ctx, A, &bad, &sym, NULL), SLA_ERR_ARGUMENT, "ordering");
    CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, NULL));
    if (sym) {
        CHECK_ST(ctx, ops->factor(ctx, sym, A, 1, &num), SLA_ERR_ARGUMENT);
        CHECK_OK(ctx, ops->factor(ctx, sym, A, 0, &num));
        double b[5] = {1, 2, 3, 4, 5}, x[5];
        if (num) {
            CHECK_ST(ctx, ops->solve(ctx, sym, num, false, 1, b, 4, x, 5), SLA_ERR_ARGUMENT);
            CHECK_ST(ctx, ops->solve(ctx, sym, num, false, -1, b, 5, x, 5), SLA_ERR_ARGUMENT);
            CHECK_OK(ctx, ops->solve(ctx, sym, num, false, 0, b, 5, x, 5));
        }
        sla_matrix *B = NULL;
        CHECK_OK(ctx, sla_gen_poisson(ctx, 1, 6, &B));
        void *num2 = NULL;
        if (B) CHECK_ST(ctx, ops->factor(ctx, sym, B, 0, &num2), SLA_ERR_ARGUMENT);
        CHECK(num2 == NULL);
        sla_matrix_destroy(&B);
    }
    ops->free_num(num);
    ops->free_sym(sym);
    ops->free_num(NULL);
    ops->free_sym(NULL);
    sla_matrix_destroy(&A);
}

/* A counting allocator that fails after `budget` allocations. */
typedef struct {
    long live, total, budget;
} count_alloc;

static void *ca_malloc(size_t size, void *user)
{
    count_alloc *c = user;
    if (c->total >= c->budget) return NULL;
    c->total++;
    c->live++;
    return malloc(size);
}

static void ca_free(void *p, void *user)
{
    count_alloc *c = user;
    if (p) c->live--;
    free(p);
}

/* sla-owned memory goes through the ctx allocator, all of it is freed, and
 * a failure at any allocation is SLA_ERR_NOMEM without leaks. */
static void test_allocator(void)
{
    sla_matrix *A = NULL;
    CHECK_OK(NULL, sla_mm_read(NULL, SLA_TEST_DATA "/bcsstk01.mtx", SLA_F32, &A));
    if (!A) return;
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    tu_fill(b, n, 4);
    bool completed = false;
    for (long budget = 0; budget < 20 && !completed; budget++) {
        count_alloc c = {0, 0, budget};
        sla_allocator al = {ca_malloc, ca_free, &c};
        sla_ctx *ctx = NULL;
        if (sla_ctx_create(&ctx) != SLA_OK) break;
        sla_ctx_set_allocator(ctx, &al);
        sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = 1};
        void *sym = NULL, *num = NULL;
        sla_status st = ops->analyze(ctx, A, &o, &sym, NULL);
        if (st == SLA_OK) st = ops->factor(ctx, sym, A, 0, &num);
        if (st == SLA_OK) st = ops->solve(ctx, sym, num, false, 1, b, n, x, n);
        CHECK(st == SLA_OK || st == SLA_ERR_NOMEM);
        if (st == SLA_OK) {
            completed = true;
            CHECK(c.total >= 3); /* symbolic object, its indices, numeric object (+ f32 copy) */
        } else {
            CHECK(sym == NULL || num == NULL);
        }
        ops->free_num(num);
        ops->free_sym(sym);
        CHECK(c.live == 0);
        sla_ctx_destroy(&ctx);
    }
    CHECK(completed);
    free(b);
    free(x);
    sla_matrix_destroy(&A);
}

/* A larger problem, timed (informational). */
static void test_timed(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    const sla_int N = 200;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, N, &A));
    if (!A) return;
    sla_int n = sla_matrix_nrows(A);
    for (int ldlt = 0; ldlt <= 1; ldlt++) {
        sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = ldlt, .nthreads = 1};
        sla__direct_stats stats;
        void *sym = NULL, *num = NULL;
        double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
        double *r = malloc((size_t)n * sizeof *r);
        tu_fill(b, n, 2);
        double t0 = sla__now();
        CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, &stats));
        double t1 = sla__now();
        if (sym) CHECK_OK(ctx, ops->factor(ctx, sym, A, 0, &num));
        double t2 = sla__now();
        if (num) CHECK_OK(ctx, ops->solve(ctx, sym, num, false, 1, b, n, x, n));
        double t3 = sla__now();
        if (num) {
            double rr = sqrt(sla__residual(A, 0, x, b, r, 1)) / sla__nrm2(n, b, 1);
            CHECK(rr < 1e-12);
            printf("poisson2d n=%lld %s: analyze %.3f s, factor %.3f s, solve %.4f s, nnz(L) %.3g, "
                   "%.3g flops, %.3g MB, ordering %s, residual %.2g\n",
                   (long long)n, ldlt ? "ldlt" : "llt", t1 - t0, t2 - t1, t3 - t2, stats.factor_nnz,
                   stats.flops, stats.bytes / 1e6, stats.ordering, rr);
        }
        ops->free_num(num);
        ops->free_sym(sym);
        free(b);
        free(x);
        free(r);
    }
    sla_matrix_destroy(&A);
}

int main(void)
{
    ops = sla__backend_cholmod();
    CHECK(ops != NULL);
    if (!ops) return tu_finish("test_backend_cholmod");
    CHECK(strcmp(ops->name, "cholmod") == 0);
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    test_generated_and_files(ctx);
    test_float32(ctx);
    test_indefinite(ctx);
    test_batch_refactor(ctx);
    test_concurrent(ctx);
    test_empty_and_errors(ctx);
    test_allocator();
    test_timed(ctx);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_backend_cholmod");
}
