/* The SuperLU direct backend through its private interface: solves (plain,
 * transposed, several right-hand sides with padded leading dimensions) and
 * log-determinants against dense LAPACK, every ordering, several value
 * arrays on one analysis, refactorization, singular matrices, float32,
 * n = 0, and factorizations running concurrently on one analysis. */
#include "test_util.h"

#include "solvers/direct.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static const sla__direct_ops *ops;

/* Dense reference log|det| and sign by LAPACK dgetrf (value array 0). */
static int dense_logdet(const sla_matrix *A, double *sign, double *logabs)
{
    long long n = sla_matrix_nrows(A);
    double *D = malloc((size_t)(n * n + 1) * sizeof *D);
    lapack_int *ipiv = malloc((size_t)(n + 1) * sizeof *ipiv);
    if (!D || !ipiv) { free(D); free(ipiv); return -1; }
    sla_matrix_to_dense(NULL, A, 0, D, n);
    int info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, D, (lapack_int)n, ipiv);
    double s = 1.0, l = 0.0;
    for (long long i = 0; i < n; i++) {
        double u = D[i * n + i];
        if (ipiv[i] != i + 1) s = -s;
        if (u < 0) s = -s;
        if (u == 0) s = 0;
        l += log(fabs(u));
    }
    *sign = s;
    *logabs = l;
    free(D);
    free(ipiv);
    return info;
}

/* ||b - op(A) x|| / (||b|| + ||A||_F ||x||), op(A) = A or A^T. */
static double rel_residual(const sla_matrix *A, sla_int ib, int transpose, const double *b,
                           const double *x)
{
    sla_int n = sla_matrix_nrows(A);
    double *r = malloc((size_t)(n + 1) * sizeof *r);
    if (transpose)
        sla_matvec_transpose(NULL, A, ib, 1, x, n, r, n);
    else
        sla_matvec(NULL, A, ib, 1, x, n, r, n);
    double rr = 0, bb = 0, xx = 0, aa = 0;
    for (sla_int i = 0; i < n; i++) {
        rr += (b[i] - r[i]) * (b[i] - r[i]);
        bb += b[i] * b[i];
        xx += x[i] * x[i];
    }
    sla_int nnz = sla_matrix_nnz(A);
    for (sla_int k = 0; k < nnz; k++) {
        double v = sla_matrix_dtype(A) == SLA_F64 ? ((const double *)sla_matrix_values(A, ib))[k]
                                                  : ((const float *)sla_matrix_values(A, ib))[k];
        aa += v * v;
    }
    free(r);
    return sqrt(rr) / (sqrt(bb) + sqrt(aa) * sqrt(xx));
}

/* Factor value array 0 of A with the given ordering and check plain and
 * transposed solves (one and several right-hand sides) and the logdet
 * against LAPACK. ill: compare residuals instead of solutions. */
static void check_matrix(sla_ctx *ctx, const sla_matrix *A, sla_ordering ord, const char *label,
                         int ill)
{
    sla_int n = sla_matrix_nrows(A);
    sla__direct_opts o = {.ordering = ord, .ldlt = false, .nthreads = 1};
    sla__direct_stats stats;
    memset(&stats, 0, sizeof stats);
    void *sym = NULL, *num = NULL;
    CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, &stats));
    if (!sym) {
        fprintf(stderr, "  (%s: analyze failed)\n", label);
        return;
    }
    const char *expect = ord == SLA_ORDER_AMD ? "mmd_at_plus_a"
                         : ord == SLA_ORDER_NATURAL ? "natural" : "colamd";
    CHECK(strcmp(stats.ordering, expect) == 0);
    CHECK_OK(ctx, ops->factor(ctx, sym, A, 0, &num));
    if (!num) {
        fprintf(stderr, "  (%s: factor failed)\n", label);
        ops->free_sym(sym);
        return;
    }

    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    double *xr = malloc((size_t)n * sizeof *xr);
    for (int t = 0; t < 2; t++) {
        tu_fill(b, n, 17 + t);
        CHECK_OK(ctx, ops->solve(ctx, sym, num, t, 1, b, n, x, n));
        CHECK(tu_dense_solve(A, t, b, xr) == 0);
        double d = tu_reldiff(n, x, xr), res = rel_residual(A, 0, t, b, x);
        if (ill) {
            CHECK(res < 1e-13);
        } else {
            CHECK(d < 1e-10);
            CHECK(res < 1e-13);
        }
        if (d >= 1e-10 || res >= 1e-13)
            fprintf(stderr, "  %s (%s, %s): reldiff %.3g, residual %.3g\n", label, expect,
                    t ? "transposed" : "plain", d, res);
    }

    /* several right-hand sides, padded leading dimensions: each column must
     * equal the single solve */
    sla_int nrhs = 3, ldb = n + 3, ldx = n + 5;
    double *B = malloc((size_t)(ldb * nrhs) * sizeof *B);
    double *X = malloc((size_t)(ldx * nrhs) * sizeof *X);
    tu_fill(B, ldb * nrhs, 99);
    for (sla_int i = 0; i < ldx * nrhs; i++) X[i] = -12345.0;
    for (int t = 0; t < 2; t++) {
        CHECK_OK(ctx, ops->solve(ctx, sym, num, t, nrhs, B, ldb, X, ldx));
        for (sla_int j = 0; j < nrhs; j++) {
            CHECK_OK(ctx, ops->solve(ctx, sym, num, t, 1, B + j * ldb, n, x, n));
            CHECK(tu_reldiff(n, X + j * ldx, x) < 1e-14);
            CHECK(X[j * ldx + n] == -12345.0 && X[j * ldx + ldx - 1] == -12345.0);
        }
    }

    double sg, la, rsg, rla;
    CHECK_OK(ctx, ops->logdet(ctx, sym, num, &sg, &la));
    CHECK(dense_logdet(A, &rsg, &rla) == 0);
    CHECK(sg == rsg);
    CHECK_CLOSE(la, rla, 1e-10);

    free(b);
    free(x);
    free(xr);
    free(B);
    free(X);
    ops->free_num(num);
    ops->free_sym(sym);
}

static void check_all_orderings(sla_ctx *ctx, const sla_matrix *A, const char *label, int ill)
{
    check_matrix(ctx, A, SLA_ORDER_AUTO, label, ill);
    check_matrix(ctx, A, SLA_ORDER_AMD, label, ill);
    check_matrix(ctx, A, SLA_ORDER_NATURAL, label, ill);
}

static void test_generated(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 12, 30.0, -10.0, &A));
    if (A) check_all_orderings(ctx, A, "convdiff2d", 0);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_random(ctx, 300, 4, SLA_GEN_GENERAL, 7, &A));
    if (A) check_all_orderings(ctx, A, "random", 0);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 15, &A));
    if (A) check_all_orderings(ctx, A, "poisson2d", 0);
    sla_matrix_destroy(&A);
}

static void test_files(sla_ctx *ctx)
{
    const char *names[] = {"west0067", "cage5", "fs_183_6"};
    for (int i = 0; i < 3; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.mtx", SLA_TEST_DATA, names[i]);
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_mm_read(ctx, path, SLA_F64, &A));
        if (A) check_all_orderings(ctx, A, names[i], i == 2);
        sla_matrix_destroy(&A);
    }
}

/* Float32 values: the reference is the same float matrix read in double. */
static void test_float32(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_mm_read(ctx, SLA_TEST_DATA "/west0067.mtx", SLA_F32, &A));
    if (!A) return;
    CHECK(sla_matrix_dtype(A) == SLA_F32);
    check_matrix(ctx, A, SLA_ORDER_AUTO, "west0067 f32", 0);
    sla_matrix_destroy(&A);
}

/* A copy of A's pattern with nbatch value arrays: array 0 is A's values,
 * array k > 0 perturbs every entry by a seeded factor in [0.7, 1.3]. */
static sla_matrix *batch_copy(sla_ctx *ctx, const sla_matrix *A, sla_int nbatch)
{
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    sla_int *ci = malloc((size_t)(nnz + 1) * sizeof *ci);
    double *v = malloc((size_t)(nbatch * nnz + 1) * sizeof *v);
    double *r = malloc((size_t)(nnz + 1) * sizeof *r);
    sla_matrix_get_colind(A, ci);
    const double *a = sla_matrix_values(A, 0);
    for (sla_int k = 0; k < nbatch; k++) {
        tu_fill(r, nnz, 1000 + (unsigned long long)k);
        for (sla_int j = 0; j < nnz; j++) v[k * nnz + j] = a[j] * (k ? 1.0 + 0.3 * r[j] : 1.0);
    }
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(A), ci, SLA_F64, nbatch, v,
                                      SLA_COPY, &B));
    free(ci);
    free(v);
    free(r);
    return B;
}

/* Value array ib of B as a one-array matrix (for the dense reference). */
static sla_matrix *single(sla_ctx *ctx, const sla_matrix *B, sla_int ib)
{
    sla_int n = sla_matrix_nrows(B), nnz = sla_matrix_nnz(B);
    sla_int *ci = malloc((size_t)(nnz + 1) * sizeof *ci);
    sla_matrix_get_colind(B, ci);
    sla_matrix *S = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(B), ci, SLA_F64, 1,
                                      sla_matrix_values(B, ib), SLA_COPY, &S));
    free(ci);
    return S;
}

/* x = A_ib^-1 b by the backend vs LAPACK on value array ib. */
static void check_solve_vs_dense(sla_ctx *ctx, void *sym, void *num, const sla_matrix *B,
                                 sla_int ib, unsigned long long seed)
{
    sla_int n = sla_matrix_nrows(B);
    sla_matrix *S = single(ctx, B, ib);
    if (!S) return;
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    double *xr = malloc((size_t)n * sizeof *xr);
    tu_fill(b, n, seed);
    for (int t = 0; t < 2; t++) {
        CHECK_OK(ctx, ops->solve(ctx, sym, num, t, 1, b, n, x, n));
        CHECK(tu_dense_solve(S, t, b, xr) == 0);
        CHECK(tu_reldiff(n, x, xr) < 1e-10);
    }
    double sg, la, rsg, rla;
    CHECK_OK(ctx, ops->logdet(ctx, sym, num, &sg, &la));
    CHECK(dense_logdet(S, &rsg, &rla) == 0);
    CHECK(sg == rsg);
    CHECK_CLOSE(la, rla, 1e-10);
    free(b);
    free(x);
    free(xr);
    sla_matrix_destroy(&S);
}

/* Two value arrays on one analysis, then a refactorization after the
 * values of array 0 change. */
static void test_batch_and_refactor(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_mm_read(ctx, SLA_TEST_DATA "/west0067.mtx", SLA_F64, &A));
    if (!A) return;
    sla_matrix *B = batch_copy(ctx, A, 2);
    sla_matrix_destroy(&A);
    if (!B) return;
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .nthreads = 1};
    sla__direct_stats stats;
    void *sym = NULL, *num0 = NULL, *num1 = NULL;
    CHECK_OK(ctx, ops->analyze(ctx, B, &o, &sym, &stats));
    CHECK_OK(ctx, ops->factor(ctx, sym, B, 0, &num0));
    CHECK_OK(ctx, ops->factor(ctx, sym, B, 1, &num1));
    if (sym && num0 && num1) {
        check_solve_vs_dense(ctx, sym, num0, B, 0, 5);
        check_solve_vs_dense(ctx, sym, num1, B, 1, 6);
        /* the two factors really differ */
        sla_int n = sla_matrix_nrows(B);
        double *b = malloc((size_t)n * sizeof *b), *x0 = malloc((size_t)n * sizeof *x0);
        double *x1 = malloc((size_t)n * sizeof *x1);
        tu_fill(b, n, 8);
        CHECK_OK(ctx, ops->solve(ctx, sym, num0, false, 1, b, n, x0, n));
        CHECK_OK(ctx, ops->solve(ctx, sym, num1, false, 1, b, n, x1, n));
        CHECK(tu_reldiff(n, x0, x1) > 1e-3);
        free(b);
        free(x0);
        free(x1);

        /* new values in array 0: refactor with the same analysis */
        sla_int nnz = sla_matrix_nnz(B);
        double *v = malloc((size_t)nnz * sizeof *v), *r = malloc((size_t)nnz * sizeof *r);
        memcpy(v, sla_matrix_values(B, 0), (size_t)nnz * sizeof *v);
        tu_fill(r, nnz, 77);
        for (sla_int k = 0; k < nnz; k++) v[k] *= 1.0 + 0.5 * r[k];
        CHECK_OK(ctx, sla_matrix_set_values(ctx, B, 0, v));
        ops->free_num(num0);
        num0 = NULL;
        CHECK_OK(ctx, ops->factor(ctx, sym, B, 0, &num0));
        if (num0) check_solve_vs_dense(ctx, sym, num0, B, 0, 9);
        free(v);
        free(r);
    }
    ops->free_num(num0);
    ops->free_num(num1);
    ops->free_sym(sym);
    sla_matrix_destroy(&B);
}

/* Factorizations of several value arrays in parallel on one analysis
 * (each thread its own context), then parallel solves. */
static void test_concurrent(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 20, 15.0, 5.0, &A));
    if (!A) return;
    enum { NB = 6 };
    sla_matrix *B = batch_copy(ctx, A, NB);
    sla_matrix_destroy(&A);
    if (!B) return;
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .nthreads = 1};
    sla__direct_stats stats;
    void *sym = NULL, *num[NB] = {0};
    sla_status st[NB];
    CHECK_OK(ctx, ops->analyze(ctx, B, &o, &sym, &stats));
    if (sym) {
#pragma omp parallel for num_threads(3) schedule(static, 1)
        for (int k = 0; k < NB; k++) {
            sla_ctx *c = NULL;
            st[k] = sla_ctx_create(&c);
            if (st[k] == SLA_OK) st[k] = ops->factor(c, sym, B, k, &num[k]);
            sla_ctx_destroy(&c);
        }
        for (int k = 0; k < NB; k++) {
            CHECK(st[k] == SLA_OK);
            if (num[k]) check_solve_vs_dense(ctx, sym, num[k], B, k, 200 + (unsigned)k);
        }
    }
    for (int k = 0; k < NB; k++) ops->free_num(num[k]);
    ops->free_sym(sym);
    sla_matrix_destroy(&B);
}

/* Build an n x n matrix from dense row-major values (zeros not stored). */
static sla_matrix *from_dense(sla_ctx *ctx, int n, const double *d)
{
    sla_int rows[64], cols[64];
    double v[64];
    int nz = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (d[i * n + j] != 0.0) {
                rows[nz] = i;
                cols[nz] = j;
                v[nz++] = d[i * n + j];
            }
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, n, n, nz, rows, cols, SLA_F64, 1, v, NULL, &A));
    return A;
}

static void test_singular(sla_ctx *ctx)
{
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .nthreads = 1};
    sla__direct_stats stats;
    void *sym = NULL, *num = NULL;

    /* two equal rows, structurally nonsingular: a tridiagonal block and a
     * decoupled 2 x 2 block [2 1; 2 1]. With pivot 2 and multiplier 0.5 the
     * elimination of that block is exact in any order, so U gets an exact
     * zero whatever the ordering. (Singular matrices whose elimination only
     * produces rounding-level pivots are not detected: SuperLU, like UMFPACK
     * and KLU, reports exact zeros only.) */
    enum { NS = 12 };
    sla_int rr[3 * NS], cc[3 * NS];
    double vv[3 * NS];
    int nz = 0;
    for (int i = 0; i < NS - 2; i++) {
        rr[nz] = i; cc[nz] = i; vv[nz++] = 2.5;
        if (i > 0) { rr[nz] = i; cc[nz] = i - 1; vv[nz++] = -1.0; }
        if (i < NS - 3) { rr[nz] = i; cc[nz] = i + 1; vv[nz++] = -1.2; }
    }
    for (int i = NS - 2; i < NS; i++) {
        rr[nz] = i; cc[nz] = NS - 2; vv[nz++] = 2.0;
        rr[nz] = i; cc[nz] = NS - 1; vv[nz++] = 1.0;
    }
    sla_ordering ords[3] = {SLA_ORDER_AUTO, SLA_ORDER_AMD, SLA_ORDER_NATURAL};
    for (int k = 0; k < 3; k++) {
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, NS, NS, nz, rr, cc, SLA_F64, 1, vv, NULL, &A));
        if (!A) return;
        o.ordering = ords[k];
        CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, &stats));
        if (sym) {
            num = (void *)1;
            CHECK_ERR(ctx, ops->factor(ctx, sym, A, 0, &num), SLA_ERR_SINGULAR, "exactly zero");
            CHECK(num == NULL);
            ops->free_sym(sym);
        }
        sym = NULL;
        sla_matrix_destroy(&A);
    }

    /* a dense 2 x 2 of ones */
    const double ones[4] = {1, 1, 1, 1};
    sla_matrix *A = from_dense(ctx, 2, ones);
    o.ordering = SLA_ORDER_AUTO;
    if (A) {
        CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, &stats));
        if (sym) {
            CHECK_ERR(ctx, ops->factor(ctx, sym, A, 0, &num), SLA_ERR_SINGULAR, "superlu");
            ops->free_sym(sym);
        }
        sym = NULL;
        sla_matrix_destroy(&A);
    }

    /* an empty row: refused (structurally singular) before SuperLU runs */
    const double er[16] = {2, 1, 0, 0,
                           0, 0, 0, 0,
                           0, 1, 3, 0,
                           1, 0, 0, 4};
    A = from_dense(ctx, 4, er);
    if (A) {
        sym = (void *)1;
        CHECK_ERR(ctx, ops->analyze(ctx, A, &o, &sym, &stats), SLA_ERR_SINGULAR,
                  "structurally singular");
        CHECK(sym == NULL);
        sla_matrix_destroy(&A);
    }

    /* no empty row or column, but rows 0 and 1 only touch column 0 */
    const double sr[16] = {2, 0, 0, 0,
                           3, 0, 0, 0,
                           1, 1, 3, 0,
                           1, 2, 0, 4};
    A = from_dense(ctx, 4, sr);
    if (A) {
        CHECK_ERR(ctx, ops->analyze(ctx, A, &o, &sym, &stats), SLA_ERR_SINGULAR,
                  "structural rank 3");
        sla_matrix_destroy(&A);
    }

    /* a stored zero on the diagonal needs pivoting, not an error */
    const double pv[9] = {0, 1, 0,
                          1, 0, 1,
                          0, 1, 1};
    sla_int rows[6] = {0, 0, 1, 1, 2, 2}, cols[6] = {0, 1, 0, 2, 1, 2};
    double v[6] = {0.0, pv[1], pv[3], pv[5], pv[7], pv[8]};
    A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 3, 3, 6, rows, cols, SLA_F64, 1, v, NULL, &A));
    if (A) check_all_orderings(ctx, A, "zero diagonal", 0);
    sla_matrix_destroy(&A);
}

/* Reference structural rank: Kuhn's augmenting paths, recursive. */
static int kuhn_try(int r, int n, const unsigned char *pat, int *match_col, unsigned char *seen)
{
    for (int c = 0; c < n; c++)
        if (pat[r * n + c] && !seen[c]) {
            seen[c] = 1;
            if (match_col[c] < 0 || kuhn_try(match_col[c], n, pat, match_col, seen)) {
                match_col[c] = r;
                return 1;
            }
        }
    return 0;
}

static int ref_sprank(int n, const unsigned char *pat)
{
    int match_col[64], rank = 0;
    unsigned char seen[64];
    for (int c = 0; c < n; c++) match_col[c] = -1;
    for (int r = 0; r < n; r++) {
        memset(seen, 0, sizeof seen);
        rank += kuhn_try(r, n, pat, match_col, seen);
    }
    return rank;
}

/* Random patterns, many of them structurally singular: analyze refuses
 * exactly those with structural rank < n (naming the rank), and the others
 * factor and solve (SuperLU is never handed a structurally singular
 * matrix, which its 5.3 pivoting code cannot handle). */
static void test_structural_fuzz(sla_ctx *ctx)
{
    unsigned long long seed = 4242;
    int nsing = 0, nfull = 0;
    for (int trial = 0; trial < 300; trial++) {
        int n = 2 + (int)((tu_rand(&seed) + 1.0) * 0.5 * 38); /* 2..40 */
        double dens = 0.02 + 0.15 * (tu_rand(&seed) + 1.0) * 0.5;
        unsigned char pat[64 * 64];
        sla_int rows[64 * 64], cols[64 * 64];
        double vals[64 * 64];
        int nz = 0;
        /* a random permutation (nonsingular skeleton) in half the trials,
         * with a few of its entries dropped */
        int perm[64];
        for (int i = 0; i < n; i++) perm[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = (int)((tu_rand(&seed) + 1.0) * 0.5 * (i + 1)) % (i + 1);
            int t = perm[i]; perm[i] = perm[j]; perm[j] = t;
        }
        int skeleton = trial % 2 == 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                int on = (tu_rand(&seed) + 1.0) * 0.5 < dens;
                if (skeleton && perm[i] == j) on = (tu_rand(&seed) + 1.0) * 0.5 < 0.97;
                pat[i * n + j] = (unsigned char)on;
                if (on) {
                    rows[nz] = i;
                    cols[nz] = j;
                    vals[nz++] = tu_rand(&seed) + (perm[i] == j ? 3.0 : 0.0);
                }
            }
        int rank = ref_sprank(n, pat);
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, n, n, nz, rows, cols, SLA_F64, 1, vals, NULL, &A));
        if (!A) continue;
        sla__direct_opts o = {.ordering = (sla_ordering)(trial % 3 == 2 ? SLA_ORDER_NATURAL : trial % 3),
                              .nthreads = 1};
        sla__direct_stats stats;
        void *sym = NULL, *num = NULL;
        sla_status st = ops->analyze(ctx, A, &o, &sym, &stats);
        if (rank < n) {
            nsing++;
            char frag[64];
            snprintf(frag, sizeof frag, "structural rank %d < n = %d", rank, n);
            CHECK(st == SLA_ERR_SINGULAR && sym == NULL);
            CHECK(strstr(sla_ctx_message(ctx), frag) != NULL);
        } else {
            nfull++;
            CHECK(st == SLA_OK);
            if (sym) {
                st = ops->factor(ctx, sym, A, 0, &num);
                CHECK(st == SLA_OK || st == SLA_ERR_SINGULAR);
                if (num) {
                    double b[64], x[64];
                    tu_fill(b, n, (unsigned long long)trial);
                    if (ops->solve(ctx, sym, num, trial % 2, 1, b, n, x, n) == SLA_OK)
                        CHECK(rel_residual(A, 0, trial % 2, b, x) < 1e-12);
                }
            }
        }
        ops->free_num(num);
        ops->free_sym(sym);
        sla_matrix_destroy(&A);
    }
    CHECK(nsing > 30 && nfull > 30); /* both kinds were exercised */
}

static void test_options_and_empty(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    sla__direct_stats stats;
    void *sym = (void *)1, *num = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 4, &A));
    if (A) {
        sla__direct_opts o = {.ordering = SLA_ORDER_METIS, .nthreads = 1};
        CHECK_ERR(ctx, ops->analyze(ctx, A, &o, &sym, &stats), SLA_ERR_UNSUPPORTED, "METIS");
        CHECK(sym == NULL);
    }
    sla_matrix_destroy(&A);

    /* a NaN slipped into a borrowed value array; a NaN right-hand side */
    sla_int rp3[4] = {0, 2, 4, 5}, ci3[5] = {0, 1, 0, 1, 2};
    double v3[5] = {4, 1, 1, 3, 2};
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 3, 3, rp3, ci3, SLA_F64, 1, v3, SLA_BORROW, &A));
    if (A) {
        sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .nthreads = 1};
        sym = NULL;
        CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, &stats));
        CHECK_OK(ctx, ops->factor(ctx, sym, A, 0, &num));
        if (num) {
            double b[3] = {1, NAN, 2}, x[3];
            CHECK_ERR(ctx, ops->solve(ctx, sym, num, false, 1, b, 3, x, 3), SLA_ERR_VALUE,
                      "NaN");
            ops->free_num(num);
            num = NULL;
        }
        v3[3] = NAN;
        if (sym) {
            CHECK_ERR(ctx, ops->factor(ctx, sym, A, 0, &num), SLA_ERR_VALUE, "value 3");
            CHECK(num == NULL);
        }
        /* a factor call with a matrix that is not the analysed one */
        sla_matrix *P = NULL;
        CHECK_OK(ctx, sla_gen_poisson(ctx, 1, 4, &P));
        if (P && sym) CHECK_ERR(ctx, ops->factor(ctx, sym, P, 0, &num), SLA_ERR_DIMENSION, "analysis");
        sla_matrix_destroy(&P);
        ops->free_sym(sym);
        sym = NULL;
    }
    sla_matrix_destroy(&A);

    /* n = 0 */
    sla_int rp[1] = {0};
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 0, 0, rp, NULL, SLA_F64, 1, NULL, SLA_COPY, &A));
    if (!A) return;
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .nthreads = 1};
    sym = NULL;
    CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym, &stats));
    CHECK_OK(ctx, ops->factor(ctx, sym, A, 0, &num));
    if (sym && num) {
        double b[1] = {1.0}, x[1] = {2.0}, sg = 0, la = 1;
        CHECK_OK(ctx, ops->solve(ctx, sym, num, false, 1, b, 0, x, 0));
        CHECK_OK(ctx, ops->solve(ctx, sym, num, true, 1, b, 0, x, 0));
        CHECK(x[0] == 2.0);
        CHECK_OK(ctx, ops->logdet(ctx, sym, num, &sg, &la));
        CHECK(sg == 1.0 && la == 0.0);
    }
    ops->free_num(num);
    ops->free_sym(sym);
    sla_matrix_destroy(&A);
}

int main(void)
{
    ops = sla__backend_superlu();
    if (!ops) {
        printf("test_backend_superlu: SuperLU not compiled in, skipped\n");
        return tu_finish("test_backend_superlu");
    }
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx)) return 1;
    CHECK(strcmp(ops->name, "superlu") == 0);
    test_generated(ctx);
    test_files(ctx);
    test_float32(ctx);
    test_batch_and_refactor(ctx);
    test_concurrent(ctx);
    test_singular(ctx);
    test_structural_fuzz(ctx);
    test_options_and_empty(ctx);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_backend_superlu");
}
