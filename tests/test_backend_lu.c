/* The LU direct backends (UMFPACK and KLU) through the private
 * sla__direct_ops table: plain and transposed solves (several right-hand
 * sides, ld > n) and log-determinants against LAPACK on generated and real
 * matrices, every ordering, one analysis for a batch of value arrays,
 * refactorization, structural and numerical singularity, float32, n = 0,
 * concurrent solves and allocation failure at every allocation.
 *
 * Compiled twice (tests/CMakeLists.txt): SLA_TEST_KLU selects KLU, which
 * refuses the metis ordering. Neither refines here (UMFPACK_IRSTEP = 0). */
#ifdef SLA_TEST_KLU
#define BACKEND_NAME "klu"
#define BACKEND_OPS() sla__backend_klu()
#define BACKWARD_TOL 1e-12 /* no refinement, diagonal-preferring pivoting */
#define BACKEND_HAS_METIS 0
#else
#define BACKEND_NAME "umfpack"
#define BACKEND_OPS() sla__backend_umfpack()
/* the backend alone, no refinement: the solver object refines for every
 * backend (test_direct checks the refined backward error) */
#define BACKWARD_TOL 1e-12
#define BACKEND_HAS_METIS 1
#endif

#include "test_util.h"

#include "solvers/direct.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static const sla__direct_ops *OPS;

/* ---- dense references ------------------------------------------------- */

/* Dense copy of value array ib, column-major, n x n (malloc'ed). */
static double *dense_of(const sla_matrix *A, sla_int ib)
{
    sla_int n = sla_matrix_nrows(A);
    double *D = malloc((size_t)(n * n + 1) * sizeof *D);
    if (D) sla_matrix_to_dense(NULL, A, ib, D, n);
    return D;
}

/* x = op(A_ib)^-1 b for nrhs columns by LAPACK dgesv; 0 on success. */
static int ref_solve(const sla_matrix *A, sla_int ib, int transpose, sla_int nrhs, const double *b,
                     sla_int ldb, double *x, sla_int ldx)
{
    sla_int n = sla_matrix_nrows(A);
    double *D = dense_of(A, ib);
    lapack_int *ipiv = malloc((size_t)(n + 1) * sizeof *ipiv);
    int info = -1;
    if (D && ipiv) {
        for (sla_int j = 0; j < nrhs; j++) memcpy(x + j * ldx, b + j * ldb, (size_t)n * sizeof *x);
        info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, D, (lapack_int)n, ipiv);
        if (info == 0)
            info = LAPACKE_dgetrs(LAPACK_COL_MAJOR, transpose ? 'T' : 'N', (lapack_int)n,
                                  (lapack_int)nrhs, D, (lapack_int)n, ipiv, x, (lapack_int)ldx);
    }
    free(D);
    free(ipiv);
    return info;
}

/* sign and log|det A_ib| from LAPACK dgetrf (sign from the pivots and U). */
static void ref_logdet(const sla_matrix *A, sla_int ib, double *sign, double *logabs)
{
    sla_int n = sla_matrix_nrows(A);
    double *D = dense_of(A, ib);
    lapack_int *ipiv = malloc((size_t)(n + 1) * sizeof *ipiv);
    *sign = 1.0;
    *logabs = 0.0;
    if (!D || !ipiv) {
        *sign = NAN;
        goto done;
    }
    LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, D, (lapack_int)n, ipiv);
    for (sla_int i = 0; i < n; i++) {
        double u = D[i * n + i];
        if (ipiv[i] != i + 1) *sign = -*sign;
        if (u < 0) *sign = -*sign;
        if (u == 0) {
            *sign = 0.0;
            *logabs = -INFINITY;
            goto done;
        }
        *logabs += log(fabs(u));
    }
done:
    free(D);
    free(ipiv);
}

/* Normwise backward error ||b - op(A) x||_inf / (||A||_inf ||x||_inf + ||b||_inf). */
static double backward_error(const double *D, sla_int n, int transpose, const double *x,
                             const double *b)
{
    double rmax = 0.0, anorm = 0.0, xmax = 0.0, bmax = 0.0;
    for (sla_int i = 0; i < n; i++) {
        double r = b[i], rowsum = 0.0;
        for (sla_int j = 0; j < n; j++) {
            double a = transpose ? D[i * n + j] : D[j * n + i];
            r -= a * x[j];
            rowsum += fabs(a);
        }
        rmax = fmax(rmax, fabs(r));
        anorm = fmax(anorm, rowsum);
        xmax = fmax(xmax, fabs(x[i]));
        bmax = fmax(bmax, fabs(b[i]));
    }
    return rmax / fmax(anorm * xmax + bmax, 1e-300);
}

/* ---- helpers ------------------------------------------------------------ */

static sla_matrix *read_mtx(sla_ctx *ctx, const char *name, sla_dtype dtype)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", SLA_TEST_DATA, name);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_mm_read(ctx, path, dtype, &A));
    return A;
}

static sla_matrix *from_dense(sla_ctx *ctx, sla_int n, const double *rowmajor)
{
    sla_int *r = malloc((size_t)(n * n + 1) * sizeof *r), *c = malloc((size_t)(n * n + 1) * sizeof *c);
    double *v = malloc((size_t)(n * n + 1) * sizeof *v);
    sla_int k = 0;
    for (sla_int i = 0; i < n; i++)
        for (sla_int j = 0; j < n; j++)
            if (rowmajor[i * n + j] != 0.0) {
                r[k] = i;
                c[k] = j;
                v[k++] = rowmajor[i * n + j];
            }
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, n, n, k, r, c, SLA_F64, 1, v, NULL, &A));
    free(r);
    free(c);
    free(v);
    return A;
}

/* The graph Laplacian of an N x N grid plus shift * I. */
static sla_matrix *grid_laplacian(sla_ctx *ctx, sla_int N, double shift)
{
    sla_int n = N * N, k = 0;
    sla_int *r = malloc(5 * (size_t)n * sizeof *r), *c = malloc(5 * (size_t)n * sizeof *c);
    double *v = malloc(5 * (size_t)n * sizeof *v);
    for (sla_int y = 0; y < N; y++)
        for (sla_int x = 0; x < N; x++) {
            sla_int i = y * N + x, deg = 0;
            const sla_int nb[4][2] = {{x - 1, y}, {x + 1, y}, {x, y - 1}, {x, y + 1}};
            for (int q = 0; q < 4; q++)
                if (nb[q][0] >= 0 && nb[q][0] < N && nb[q][1] >= 0 && nb[q][1] < N) {
                    r[k] = i;
                    c[k] = nb[q][1] * N + nb[q][0];
                    v[k++] = -1.0;
                    deg++;
                }
            r[k] = i;
            c[k] = i;
            v[k++] = (double)deg + shift;
        }
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, n, n, k, r, c, SLA_F64, 1, v, NULL, &A));
    free(r);
    free(c);
    free(v);
    return A;
}

/* Analyze (and factor value array 0): the first error, SLA_OK if none. */
static sla_status analyze_factor(sla_ctx *ctx, const sla_matrix *A, sla_ordering ord)
{
    sla__direct_opts o = {.ordering = ord, .ldlt = false, .nthreads = 1};
    sla__direct_stats stats;
    void *sym = NULL, *num = NULL;
    sla_status st = OPS->analyze(ctx, A, &o, &sym, &stats);
    if (st) {
        CHECK(sym == NULL);
        return st;
    }
    st = OPS->factor(ctx, sym, A, 0, &num);
    if (st) CHECK(num == NULL);
    if (num) OPS->free_num(num);
    OPS->free_sym(sym);
    return st;
}

/* Factor value array ib with sym and check solves (3 right-hand sides,
 * ldb = n + 2, ldx = n + 3, plain and transposed) and the log-determinant
 * against LAPACK. rtol: relative error bound against LAPACK's solution;
 * every solve must also be backward stable. */
static void check_factor(sla_ctx *ctx, void *sym, const sla_matrix *A, sla_int ib, double rtol,
                         const char *label)
{
    sla_int n = sla_matrix_nrows(A), nrhs = 3, ldb = n + 2, ldx = n + 3;
    void *num = NULL;
    CHECK_OK(ctx, OPS->factor(ctx, sym, A, ib, &num));
    if (!num) {
        fprintf(stderr, "  (%s, value array %lld)\n", label, (long long)ib);
        return;
    }
    double *b = malloc((size_t)(ldb * nrhs) * sizeof *b);
    double *x = malloc((size_t)(ldx * nrhs) * sizeof *x);
    double *xr = malloc((size_t)(ldx * nrhs) * sizeof *xr);
    double *D = dense_of(A, ib);
    tu_fill(b, ldb * nrhs, 17 + (unsigned long long)ib);
    for (int tr = 0; tr < 2; tr++) {
        for (sla_int k = 0; k < ldx * nrhs; k++) x[k] = 777.0;
        CHECK_OK(ctx, OPS->solve(ctx, sym, num, tr, nrhs, b, ldb, x, ldx));
        CHECK(ref_solve(A, ib, tr, nrhs, b, ldb, xr, ldx) == 0);
        for (sla_int j = 0; j < nrhs; j++) {
            double rd = tu_reldiff(n, x + j * ldx, xr + j * ldx);
            double be = backward_error(D, n, tr, x + j * ldx, b + j * ldb);
            if (!(rd <= rtol) || !(be <= BACKWARD_TOL))
                fprintf(stderr, "  %s: ib %lld %s rhs %lld: reldiff %.3g (bound %.1g), backward "
                                "error %.3g\n",
                        label, (long long)ib, tr ? "A^T" : "A", (long long)j, rd, rtol, be);
            CHECK(rd <= rtol);
            CHECK(be <= BACKWARD_TOL);
            for (sla_int i = n; i < ldx; i++) CHECK(x[j * ldx + i] == 777.0); /* padding untouched */
        }
    }
    double s, l, rs, rl;
    CHECK_OK(ctx, OPS->logdet(ctx, sym, num, &s, &l));
    ref_logdet(A, ib, &rs, &rl);
    CHECK(s == rs);
    CHECK_CLOSE(l, rl, 1e-10);
    if (s != rs || !(fabs(l - rl) <= 1e-10 * fmax(1.0, fabs(rl))))
        fprintf(stderr, "  %s: logdet %g %.17g vs LAPACK %g %.17g\n", label, s, l, rs, rl);
    OPS->free_num(num);
    free(b);
    free(x);
    free(xr);
    free(D);
}

/* Analyze once with ordering ord, then check every value array. */
static void check_matrix(sla_ctx *ctx, const sla_matrix *A, sla_ordering ord, double rtol,
                         const char *label)
{
    sla__direct_opts o = {.ordering = ord, .ldlt = false, .nthreads = 2};
    sla__direct_stats stats;
    memset(&stats, 0xff, sizeof stats);
    void *sym = NULL;
    CHECK_OK(ctx, OPS->analyze(ctx, A, &o, &sym, &stats));
    if (!sym) {
        fprintf(stderr, "  (%s, ordering %s)\n", label, sla_ordering_name(ord));
        return;
    }
    /* KLU predicts nothing for the natural ordering (0 = unknown) */
    bool known = !(strcmp(BACKEND_NAME, "klu") == 0 && ord == SLA_ORDER_NATURAL);
    CHECK(stats.factor_nnz >= (known ? (double)sla_matrix_nrows(A) : 0.0));
    CHECK(stats.flops >= 0.0);
    CHECK(known ? stats.bytes > 0.0 : stats.bytes >= 0.0);
    CHECK(memchr(stats.ordering, 0, sizeof stats.ordering) != NULL);
    CHECK(stats.ordering[0] != 0);
    if (ord == SLA_ORDER_NATURAL) CHECK(strcmp(stats.ordering, "natural") == 0);
    if (ord == SLA_ORDER_METIS) CHECK(strcmp(stats.ordering, "metis") == 0);
    if (ord == SLA_ORDER_AMD || ord == SLA_ORDER_AUTO)
        CHECK(strcmp(stats.ordering, "amd") == 0 || strcmp(stats.ordering, "colamd") == 0);
    for (sla_int ib = 0; ib < sla_matrix_nbatch(A); ib++) check_factor(ctx, sym, A, ib, rtol, label);
    OPS->free_sym(sym);
}

static const sla_ordering ORDERINGS[] = {SLA_ORDER_AUTO, SLA_ORDER_AMD, SLA_ORDER_METIS,
                                         SLA_ORDER_NATURAL};

static void check_all_orderings(sla_ctx *ctx, const sla_matrix *A, double rtol, const char *label)
{
    for (size_t i = 0; i < sizeof ORDERINGS / sizeof *ORDERINGS; i++) {
        if (ORDERINGS[i] == SLA_ORDER_METIS && !BACKEND_HAS_METIS) {
            CHECK_ERR(ctx, analyze_factor(ctx, A, SLA_ORDER_METIS), SLA_ERR_UNSUPPORTED, "metis");
            continue;
        }
        check_matrix(ctx, A, ORDERINGS[i], rtol, label);
    }
}

/* ---- scenarios ------------------------------------------------------------ */

static void test_generated(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 12, 30.0, -12.0, &A));
    if (A) check_all_orderings(ctx, A, 1e-10, "convdiff2d");
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_random(ctx, 250, 4, SLA_GEN_GENERAL, 7, &A));
    if (A) check_all_orderings(ctx, A, 1e-10, "random");
    sla_matrix_destroy(&A);
}

static void test_files(sla_ctx *ctx)
{
    sla_matrix *A = read_mtx(ctx, "west0067.mtx", SLA_F64);
    if (A) check_all_orderings(ctx, A, 1e-10, "west0067");
    sla_matrix_destroy(&A);
    A = read_mtx(ctx, "cage5.mtx", SLA_F64);
    if (A) check_all_orderings(ctx, A, 1e-10, "cage5");
    sla_matrix_destroy(&A);
    /* cond ~ 2e11: the forward error is bounded only by cond * eps; the
     * backward error (checked in check_factor) is the real test */
    A = read_mtx(ctx, "fs_183_6.mtx", SLA_F64);
    if (A) check_all_orderings(ctx, A, 1e-3, "fs_183_6");
    sla_matrix_destroy(&A);
}

/* float32 storage: the factorization works on the float values widened to
 * double, which is exactly what the dense reference sees. */
static void test_float32(sla_ctx *ctx)
{
    sla_matrix *A = read_mtx(ctx, "west0067.mtx", SLA_F32);
    if (A) {
        CHECK(sla_matrix_dtype(A) == SLA_F32);
        check_matrix(ctx, A, SLA_ORDER_AUTO, 1e-10, "west0067 float32");
    }
    sla_matrix_destroy(&A);
}

/* One analysis, several value arrays on the pattern: each factor right. */
static void test_batch(sla_ctx *ctx)
{
    sla_matrix *W = read_mtx(ctx, "west0067.mtx", SLA_F64);
    if (!W) return;
    sla_int n = sla_matrix_nrows(W), nnz = sla_matrix_nnz(W);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    double *v = malloc(3 * (size_t)nnz * sizeof *v), *p = malloc((size_t)nnz * sizeof *p);
    sla_matrix_get_colind(W, ci);
    memcpy(v, sla_matrix_values(W, 0), (size_t)nnz * sizeof *v);
    tu_fill(p, nnz, 99);
    for (sla_int k = 0; k < nnz; k++) {
        v[nnz + k] = v[k] * (1.0 + 0.3 * p[k]);
        v[2 * nnz + k] = -2.0 * v[k] + 0.01 * p[k]; /* det flips sign: n = 67 is odd */
    }
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(W), ci, SLA_F64, 3, v, SLA_COPY, &B));
    if (B) check_matrix(ctx, B, SLA_ORDER_AUTO, 1e-10, "west0067 batch of 3");
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&W);
    free(ci);
    free(v);
    free(p);
}

/* Refactorization: new values in a borrowed matrix, same symbolic object. */
static void test_refactor(sla_ctx *ctx)
{
    sla_matrix *C = NULL, *A = NULL;
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 9, 5.0, 3.0, &C));
    if (!C) return;
    sla_int n = sla_matrix_nrows(C), nnz = sla_matrix_nnz(C);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    double *v = malloc((size_t)nnz * sizeof *v), *p = malloc((size_t)nnz * sizeof *p);
    sla_matrix_get_colind(C, ci);
    memcpy(v, sla_matrix_values(C, 0), (size_t)nnz * sizeof *v);
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(C), ci, SLA_F64, 1, v, SLA_BORROW, &A));
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .nthreads = 1};
    sla__direct_stats stats;
    void *sym = NULL;
    if (A) CHECK_OK(ctx, OPS->analyze(ctx, A, &o, &sym, &stats));
    if (sym) {
        check_factor(ctx, sym, A, 0, 1e-10, "refactor, first values");
        tu_fill(p, nnz, 5);
        for (sla_int k = 0; k < nnz; k++) v[k] = v[k] * (1.0 + 0.5 * p[k]) + 0.2 * p[k];
        check_factor(ctx, sym, A, 0, 1e-10, "refactor, new values (borrowed)");
        for (sla_int k = 0; k < nnz; k++) p[k] = -v[k];
        CHECK_OK(ctx, sla_matrix_set_values(ctx, A, 0, p));
        check_factor(ctx, sym, A, 0, 1e-10, "refactor, negated values");
        OPS->free_sym(sym);
    }
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&C);
    free(ci);
    free(v);
    free(p);
}

static void test_singular(sla_ctx *ctx)
{
    /* an empty row (and so an empty column in a square matrix) */
    const double empty_row[16] = {2, 1, 0, 0, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 1, 4};
    sla_matrix *A = from_dense(ctx, 4, empty_row);
    if (A) {
        for (size_t i = 0; i < sizeof ORDERINGS / sizeof *ORDERINGS; i++)
            if (ORDERINGS[i] != SLA_ORDER_METIS || BACKEND_HAS_METIS)
                CHECK_ERR(ctx, analyze_factor(ctx, A, ORDERINGS[i]), SLA_ERR_SINGULAR, "row 2 is empty");
        CHECK(strstr(sla_ctx_message(ctx), BACKEND_NAME) != NULL);
    }
    sla_matrix_destroy(&A);
    /* an empty column only */
    const double empty_col[16] = {2, 0, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0, 0, 0, 4};
    A = from_dense(ctx, 4, empty_col);
    if (A) CHECK_ERR(ctx, analyze_factor(ctx, A, SLA_ORDER_AUTO), SLA_ERR_SINGULAR, "column 2 is empty");
    sla_matrix_destroy(&A);
    /* no empty row or column, structural rank 2: columns 1 and 2 only in row 2 */
    const double rank2[9] = {1, 0, 0, 2, 0, 0, 3, 4, 5};
    A = from_dense(ctx, 3, rank2);
    if (A) {
        CHECK_ERR(ctx, analyze_factor(ctx, A, SLA_ORDER_AUTO), SLA_ERR_SINGULAR, "structural rank 2");
        CHECK_ERR(ctx, analyze_factor(ctx, A, SLA_ORDER_NATURAL), SLA_ERR_SINGULAR, "structurally singular");
    }
    sla_matrix_destroy(&A);
    /* GD97_b (symmetric pattern graph matrix) is singular */
    A = read_mtx(ctx, "GD97_b.mtx", SLA_F64);
    if (A) CHECK_ERR(ctx, analyze_factor(ctx, A, SLA_ORDER_AUTO), SLA_ERR_SINGULAR, "singular");
    sla_matrix_destroy(&A);
    /* numerically singular: rows 1 and 3 equal, full structural rank */
    const double twin[25] = {4, 1, 0, 2, 0, 1, 5, 2, 0, 1, 0, 2, 6, 1, 0,
                             1, 5, 2, 0, 1, 3, 0, 1, 0, 7};
    A = from_dense(ctx, 5, twin);
    if (A) {
        /* rounding may leave a pivot of ~eps instead of 0: either is singular */
        for (size_t i = 0; i < sizeof ORDERINGS / sizeof *ORDERINGS; i++)
            if (ORDERINGS[i] != SLA_ORDER_METIS || BACKEND_HAS_METIS)
                CHECK_ERR(ctx, analyze_factor(ctx, A, ORDERINGS[i]), SLA_ERR_SINGULAR, "singular");
    }
    sla_matrix_destroy(&A);
    /* row 1 = 2 * row 0: rank 2 with a full pattern */
    const double zero_det[9] = {1, 2, 3, 2, 4, 6, 1, 1, 1};
    A = from_dense(ctx, 3, zero_det);
    if (A) CHECK_ERR(ctx, analyze_factor(ctx, A, SLA_ORDER_AUTO), SLA_ERR_SINGULAR, "singular");
    sla_matrix_destroy(&A);
    /* the Laplacian of a 30 x 30 grid graph (pure Neumann): singular, rows
     * sum to zero; its pivots come out as rounding noise, not zeros */
    A = grid_laplacian(ctx, 30, 0.0);
    if (A)
        for (size_t i = 0; i < sizeof ORDERINGS / sizeof *ORDERINGS; i++)
            if (ORDERINGS[i] != SLA_ORDER_METIS || BACKEND_HAS_METIS)
                CHECK_ERR(ctx, analyze_factor(ctx, A, ORDERINGS[i]), SLA_ERR_SINGULAR, "singular");
    sla_matrix_destroy(&A);
    /* shifted by 1e-6 it is nonsingular (cond ~ 1e7) and solves fine */
    A = grid_laplacian(ctx, 30, 1e-6);
    if (A) check_matrix(ctx, A, SLA_ORDER_AUTO, 1e-6, "shifted Neumann Laplacian");
    sla_matrix_destroy(&A);
}

/* Row and column scaling over 16 orders of magnitude: the factorization
 * (row-scaled, partial pivoting) is unaffected, and so is the singularity
 * test, which is relative to each row's scale. */
static void test_badly_scaled(sla_ctx *ctx)
{
    sla_matrix *W = read_mtx(ctx, "west0067.mtx", SLA_F64), *B = NULL;
    if (!W) return;
    sla_int n = sla_matrix_nrows(W), nnz = sla_matrix_nnz(W);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    double *v = malloc((size_t)nnz * sizeof *v);
    const sla_int *rp = sla_matrix_rowptr(W);
    sla_matrix_get_colind(W, ci);
    memcpy(v, sla_matrix_values(W, 0), (size_t)nnz * sizeof *v);
    for (sla_int i = 0; i < n; i++)
        for (sla_int k = rp[i]; k < rp[i + 1]; k++)
            v[k] *= pow(10.0, (double)(i % 9 - 4)) * pow(10.0, (double)(ci[k] % 7 - 3));
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, rp, ci, SLA_F64, 1, v, SLA_COPY, &B));
    if (B) check_matrix(ctx, B, SLA_ORDER_AUTO, 1e-8, "west0067 scaled by 1e-7..1e7");
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&W);
    free(ci);
    free(v);
}

static void test_empty(sla_ctx *ctx)
{
    const sla_int rowptr[1] = {0};
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 0, 0, rowptr, NULL, SLA_F64, 1, NULL, SLA_COPY, &A));
    if (!A) return;
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .nthreads = 1};
    sla__direct_stats stats;
    void *sym = NULL, *num = NULL;
    double b[1] = {3}, x[1] = {5}, s = 0, l = 1;
    CHECK_OK(ctx, OPS->analyze(ctx, A, &o, &sym, &stats));
    if (sym) CHECK_OK(ctx, OPS->factor(ctx, sym, A, 0, &num));
    if (num) {
        CHECK_OK(ctx, OPS->solve(ctx, sym, num, false, 1, b, 1, x, 1));
        CHECK_OK(ctx, OPS->solve(ctx, sym, num, true, 1, b, 1, x, 1));
        CHECK(x[0] == 5);
        CHECK_OK(ctx, OPS->logdet(ctx, sym, num, &s, &l));
        CHECK(s == 1.0 && l == 0.0);
        OPS->free_num(num);
    }
    if (sym) OPS->free_sym(sym);
    sla_matrix_destroy(&A);
}

/* Value arrays of a batch solved from several threads at once (different
 * numeric objects, one symbolic object), and one numeric object shared by
 * all threads: the results match serial solves bit for bit. */
static void test_concurrent(sla_ctx *ctx)
{
    sla_matrix *R = NULL, *B = NULL;
    CHECK_OK(ctx, sla_gen_random(ctx, 300, 5, SLA_GEN_GENERAL, 11, &R));
    if (!R) return;
    enum { NB = 6, NT = 12 };
    sla_int n = sla_matrix_nrows(R), nnz = sla_matrix_nnz(R);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    double *v = malloc(NB * (size_t)nnz * sizeof *v), *p = malloc((size_t)nnz * sizeof *p);
    sla_matrix_get_colind(R, ci);
    for (int ib = 0; ib < NB; ib++) {
        tu_fill(p, nnz, 40 + (unsigned long long)ib);
        for (sla_int k = 0; k < nnz; k++)
            v[ib * nnz + k] = ((const double *)sla_matrix_values(R, 0))[k] * (1.0 + 0.2 * p[k]);
    }
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(R), ci, SLA_F64, NB, v, SLA_COPY, &B));
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .nthreads = 1};
    sla__direct_stats stats;
    void *sym = NULL, *num[NB] = {0};
    double *b = malloc((size_t)n * NT * sizeof *b);
    double *xs = malloc((size_t)n * NT * sizeof *xs), *xp = malloc((size_t)n * NT * sizeof *xp);
    tu_fill(b, n * NT, 3);
    if (B) CHECK_OK(ctx, OPS->analyze(ctx, B, &o, &sym, &stats));
    bool ok = sym != NULL;
    for (int ib = 0; ok && ib < NB; ib++) {
        CHECK_OK(ctx, OPS->factor(ctx, sym, B, ib, &num[ib]));
        ok = num[ib] != NULL;
    }
    if (ok) {
        for (int t = 0; t < NT; t++) /* serial: thread t solves array t % NB, transposed if odd */
            CHECK_OK(ctx, OPS->solve(ctx, sym, num[t % NB], t & 1, 1, b + t * n, n, xs + t * n, n));
        for (int rep = 0; rep < 2; rep++) {
            int fails = 0;
            /* rep 0: different numeric objects; rep 1: all threads on num[0] */
#pragma omp parallel for num_threads(NT) schedule(static, 1) reduction(+ : fails)
            for (int t = 0; t < NT; t++) {
                void *nm = rep ? num[0] : num[t % NB];
                if (OPS->solve(NULL, sym, nm, t & 1, 1, b + t * n, n, xp + t * n, n)) fails++;
            }
            CHECK(fails == 0);
            if (rep == 1) /* the serial reference for num[0] */
                for (int t = 0; t < NT; t++)
                    CHECK_OK(ctx, OPS->solve(ctx, sym, num[0], t & 1, 1, b + t * n, n, xs + t * n, n));
            CHECK(memcmp(xs, xp, (size_t)n * NT * sizeof *xs) == 0);
        }
    }
    for (int ib = 0; ib < NB; ib++)
        if (num[ib]) OPS->free_num(num[ib]);
    if (sym) OPS->free_sym(sym);
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&R);
    free(ci);
    free(v);
    free(p);
    free(b);
    free(xs);
    free(xp);
}

/* ---- allocation failure at every allocation ---------------------------- */


/* analyze, factor, solve both ways, logdet; the first error */
static sla_status full_cycle(sla_ctx *c, const sla_matrix *A, sla_ordering ord)
{
    sla_int n = sla_matrix_nrows(A);
    sla__direct_opts o = {.ordering = ord, .nthreads = 1};
    sla__direct_stats stats;
    void *sym = NULL, *num = NULL;
    double *b = malloc(2 * (size_t)n * sizeof *b), *x = malloc(2 * (size_t)n * sizeof *x), s, l;
    tu_fill(b, 2 * n, 1);
    sla_status st = OPS->analyze(c, A, &o, &sym, &stats);
    if (!st) st = OPS->factor(c, sym, A, 0, &num);
    if (!st) st = OPS->solve(c, sym, num, false, 2, b, n, x, n);
    if (!st) st = OPS->solve(c, sym, num, true, 2, b, n, x, n);
    if (!st) st = OPS->logdet(c, sym, num, &s, &l);
    if (num) OPS->free_num(num);
    if (sym) OPS->free_sym(sym);
    free(b);
    free(x);
    return st;
}

static void test_alloc_failures(sla_ctx *ctx)
{
    sla_matrix *A32 = read_mtx(ctx, "west0067.mtx", SLA_F32);
    const sla_ordering ords[2] = {SLA_ORDER_AUTO, SLA_ORDER_NATURAL};
    for (int oi = 0; A32 && oi < 2; oi++) {
        counter cnt = {0, -1, 0, 0};
        sla_allocator a = {count_malloc, count_free, &cnt};
        sla_ctx *c = NULL;
        sla_ctx_create(&c);
        sla_ctx_set_allocator(c, &a);
        CHECK_OK(c, full_cycle(c, A32, ords[oi]));
        CHECK(cnt.live == 0);
        long total = cnt.calls, points = 0;
        for (long k = 0; k < total; k++) {
            cnt.calls = 0;
            cnt.fail_at = k;
            cnt.failures = 0;
            sla_status st = full_cycle(c, A32, ords[oi]);
            if (cnt.failures == 0) continue;
            points++;
            if (st != SLA_ERR_NOMEM || cnt.live != 0)
                fprintf(stderr, "  failing allocation %ld -> %s, %ld live: %s\n", k,
                        sla_status_name(st), cnt.live, sla_ctx_message(c));
            CHECK(st == SLA_ERR_NOMEM);
            CHECK(cnt.live == 0);
            CHECK(strstr(sla_ctx_message(c), "memory") != NULL);
        }
        CHECK(points >= 5);
        sla_ctx_destroy(&c);
    }
    sla_matrix_destroy(&A32);
}

int main(void)
{
    OPS = BACKEND_OPS();
    if (!OPS) {
        printf("test_backend_%s: backend not compiled in, skipped\n", BACKEND_NAME);
        return tu_finish("test_backend_" BACKEND_NAME);
    }
    CHECK(strcmp(OPS->name, BACKEND_NAME) == 0);
    sla_ctx *ctx = NULL;
    CHECK_OK(ctx, sla_ctx_create(&ctx));
    test_generated(ctx);
    test_files(ctx);
    test_float32(ctx);
    test_batch(ctx);
    test_refactor(ctx);
    test_singular(ctx);
    test_badly_scaled(ctx);
    test_empty(ctx);
    test_concurrent(ctx);
    test_alloc_failures(ctx);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_backend_" BACKEND_NAME);
}
