/* logdet and its gradient by selected inversion / solves: against dense
 * LAPACK (dgetrf for the determinant, dgetri for the inverse), central
 * finite differences, singular and overflow cases, batches, the solver
 * form, and an allocation-failure sweep. */
#include "test_util.h"

#include "solvers/direct.h" /* sla__backend_umfpack, sla__umfpack_selinv: both selinv paths */

/* Dense sign and log|det| by LU (dgetrf); returns the LAPACK info. */
static int dense_logdet(const sla_matrix *A, sla_int ib, double *sign, double *lad, double *inv)
{
    long long n = sla_matrix_nrows(A);
    double *D = malloc((size_t)(n * n + 1) * sizeof *D);
    lapack_int *ipiv = malloc((size_t)(n + 1) * sizeof *ipiv);
    sla_matrix_to_dense(NULL, A, ib, D, n);
    int info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, D, (lapack_int)n, ipiv);
    double s = 1.0, l = 0.0;
    for (long long i = 0; i < n; i++) {
        double u = D[i * n + i];
        if (ipiv[i] != i + 1) s = -s;
        if (u < 0) s = -s;
        l += log(fabs(u));
    }
    *sign = s;
    *lad = l;
    if (inv && info == 0) {
        LAPACKE_dgetri(LAPACK_COL_MAJOR, (lapack_int)n, D, (lapack_int)n, ipiv);
        memcpy(inv, D, (size_t)(n * n) * sizeof *D);
    }
    free(D);
    free(ipiv);
    return info;
}

/* Max relative difference of grad against (A^-1)[col_k, row_k] (dense). */
static double grad_vs_dense(const sla_matrix *A, const double *inv, const double *grad)
{
    long long n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    sla_int *ri = malloc((size_t)nnz * sizeof *ri), *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_rowind(A, ri);
    sla_matrix_get_colind(A, ci);
    double err = 0.0, scale = 0.0;
    for (long long k = 0; k < nnz; k++) {
        double ref = inv[ri[k] * n + ci[k]]; /* column-major: (ci, ri) is inv[ri * n + ci] */
        err = fmax(err, fabs(grad[k] - ref));
        scale = fmax(scale, fabs(ref));
    }
    free(ri);
    free(ci);
    return err / fmax(scale, 1e-300);
}

/* Central difference of log|det| along D (nnz values; a symmetric
 * direction for symmetric methods) against <grad, D>. */
static double fd_check(sla_ctx *ctx, const sla_matrix *A, sla_logdet_method m, const double *grad,
                       const double *D)
{
    long long nnz = sla_matrix_nnz(A);
    sla_matrix *B = NULL;
    sla_matrix_copy(ctx, A, &B);
    const double *v0 = sla_matrix_values(A, 0);
    double *v = malloc((size_t)nnz * sizeof *v);
    /* relative steps (entries of very different sizes, as in bcsstk01);
     * the best of four step sizes balances truncation against rounding on
     * ill-conditioned matrices (494_bus) */
    double *Ds = malloc((size_t)nnz * sizeof *Ds);
    for (long long k = 0; k < nnz; k++) Ds[k] = D[k] * fabs(v0[k]);
    double an = 0.0;
    for (long long k = 0; k < nnz; k++) an += grad[k] * Ds[k];
    double best = INFINITY;
    for (double h = 1e-5; h > 1e-9; h /= 10) {
        double f[2];
        for (int s = 0; s < 2; s++) {
            for (long long k = 0; k < nnz; k++) v[k] = v0[k] + (s ? -h : h) * Ds[k];
            sla_matrix_set_values(ctx, B, 0, v);
            double sg;
            sla_logdet(ctx, B, 0, m, &sg, &f[s], NULL, NULL);
        }
        double fd = (f[0] - f[1]) / (2 * h);
        best = fmin(best, fabs(fd - an) / fmax(fabs(an), 1e-12));
    }
    free(v);
    free(Ds);
    sla_matrix_destroy(&B);
    return best;
}

/* A random direction on the pattern, symmetric (d_ij = d_ji) when sym. */
static void direction(const sla_matrix *A, int sym, unsigned long long seed, double *D)
{
    long long n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    tu_fill(D, nnz, seed);
    if (!sym) return;
    sla_int *ri = malloc((size_t)nnz * sizeof *ri), *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_rowind(A, ri);
    sla_matrix_get_colind(A, ci);
    (void)n;
    for (long long k = 0; k < nnz; k++)
        if (ri[k] < ci[k]) {
            /* find the partner (ci, ri) */
            for (long long q = 0; q < nnz; q++)
                if (ri[q] == ci[k] && ci[q] == ri[k]) { D[q] = D[k]; break; }
        }
    free(ri);
    free(ci);
}

/* logdet + gradient of value array 0 of A with method m against LAPACK and
 * finite differences. */
static void check_one(sla_ctx *ctx, const char *name, const sla_matrix *A, sla_logdet_method m,
                      const char *expect_method, const char *expect_grad)
{
    long long n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *grad = malloc((size_t)nnz * sizeof *grad), *D = malloc((size_t)nnz * sizeof *D);
    double *inv = malloc((size_t)(n * n) * sizeof *inv);
    double sg, lad, sref, lref;
    sla_logdet_info info;
    CHECK(dense_logdet(A, 0, &sref, &lref, inv) == 0);
    CHECK_OK(ctx, sla_logdet(ctx, A, 0, m, &sg, &lad, grad, &info));
    CHECK(sg == sref);
    CHECK_CLOSE(lad, lref, 1e-10);
    CHECK(strcmp(info.method, expect_method) == 0);
    CHECK(strcmp(info.grad_method, expect_grad) == 0);
    double ge = grad_vs_dense(A, inv, grad);
    CHECK(ge < 1e-9);
    int sym = strcmp(expect_method, "lu") != 0;
    direction(A, sym, 7, D);
    double fe = fd_check(ctx, A, m, grad, D);
    CHECK(fe < 1e-6);
    printf("  %-22s %-8s n=%-4lld sign %+g logdet %.6f (ref %.6f) grad err %.1e fd err %.1e [%s/%s]%s%s\n",
           name, sla_logdet_method_name(m), n, sg, lad, lref, ge, fe, info.method, info.grad_method,
           info.note[0] ? " note: " : "", info.note);
    free(grad);
    free(D);
    free(inv);
}

/* The LU gradient (selected inversion on UMFPACK's factor) of a real
 * unsymmetric matrix against the dense inverse. The reference is LAPACK's
 * dgetri inverse X improved by one step of iterative refinement on the
 * pattern, X + X (I - A X) with the residual accumulated in long double:
 * for the very ill-conditioned matrices (nnc1374, temp: dgetri's own
 * inverse is then wrong in its leading digits on part of the pattern) this
 * is the honest reference. Reported: the error relative to max |ref| on
 * the pattern (must be < 1e-8), the same for dgetri's unrefined inverse
 * (what a dense solver achieves), and the median per-entry relative error.
 * Returns the first error. */
/* LAPACK's 1-norm reciprocal condition estimate of the dense A. */
static double dense_rcond(const sla_matrix *A)
{
    long long n = sla_matrix_nrows(A);
    double *D = malloc((size_t)(n * n + 1) * sizeof *D), rc = 0.0;
    lapack_int *ipiv = malloc((size_t)(n + 1) * sizeof *ipiv);
    sla_matrix_to_dense(NULL, A, 0, D, n);
    double anorm = LAPACKE_dlange(LAPACK_COL_MAJOR, '1', (lapack_int)n, (lapack_int)n, D, (lapack_int)n);
    if (LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, D, (lapack_int)n, ipiv) == 0)
        LAPACKE_dgecon(LAPACK_COL_MAJOR, '1', (lapack_int)n, D, (lapack_int)n, anorm, &rc);
    free(D);
    free(ipiv);
    return rc;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double check_lu_real(sla_ctx *ctx, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", SLA_TEST_DATA, file);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_mm_read(ctx, path, SLA_F64, &A));
    if (!A) return INFINITY;
    long long n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    const sla_int *rp = sla_matrix_rowptr(A);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    const double *av = sla_matrix_values(A, 0);
    double *inv = malloc((size_t)(n * n) * sizeof *inv), *g = malloc((size_t)nnz * sizeof *g);
    double *ref = malloc((size_t)nnz * sizeof *ref), *rel = malloc((size_t)nnz * sizeof *rel);
    long double *r = malloc((size_t)n * sizeof *r);
    double sref, lref, sg, lad;
    sla_logdet_info info;
    CHECK(dense_logdet(A, 0, &sref, &lref, inv) == 0);
    CHECK_OK(ctx, sla_logdet(ctx, A, 0, SLA_LOGDET_LU, &sg, &lad, g, &info));
    CHECK(sg == sref);
    CHECK(fabs(lad - lref) <= 1e-9 * fmax(1.0, fabs(lref)));
    CHECK(strcmp(info.grad_method, "selinv") == 0);
    /* X = inv column-major: X[a, b] = inv[b * n + a]; entry k = (i, j)
     * needs X[j, i] + sum_m X[j, m] R[m, i], R[:, i] = e_i - A X[:, i] */
    for (long long i = 0; i < n; i++) {
        const double *xi = inv + i * n;
        for (long long m = 0; m < n; m++) {
            long double acc = m == i ? 1.0L : 0.0L;
            for (sla_int k = rp[m]; k < rp[m + 1]; k++) acc -= (long double)av[k] * xi[ci[k]];
            r[m] = acc;
        }
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) {
            long long j = ci[k];
            long double acc = xi[j];
            for (long long m = 0; m < n; m++) acc += (long double)inv[m * n + j] * r[m];
            ref[k] = (double)acc;
        }
    }
    double scale = 0.0, err = 0.0, errd = 0.0;
    for (long long k = 0; k < nnz; k++) scale = fmax(scale, fabs(ref[k]));
    long long i = 0;
    for (long long k = 0; k < nnz; k++) {
        while (rp[i + 1] <= k) i++;
        err = fmax(err, fabs(g[k] - ref[k]));
        errd = fmax(errd, fabs(inv[i * n + ci[k]] - ref[k]));
        rel[k] = ref[k] != 0.0 ? fabs(g[k] - ref[k]) / fabs(ref[k]) : fabs(g[k]) / scale;
    }
    err /= scale;
    errd /= scale;
    /* each path forced: per-pivot scalar, supernodal with dense blocks
     * everywhere, supernodal without dense blocks */
    double errm[3] = {0.0, 0.0, 0.0};
    {
        const sla__direct_ops *d = sla__backend_umfpack();
        void *sym = NULL, *num = NULL;
        sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = 1};
        double *gm = malloc((size_t)nnz * sizeof *gm);
        CHECK_OK(ctx, d->analyze(ctx, A, &o, &sym, NULL));
        CHECK_OK(ctx, d->factor(ctx, sym, A, 0, &num));
        for (int mode = 1; mode <= 3; mode++) {
            CHECK_OK(ctx, sla__umfpack_selinv(ctx, sym, num, A, gm, mode));
            for (long long k = 0; k < nnz; k++) errm[mode - 1] = fmax(errm[mode - 1], fabs(gm[k] - ref[k]));
            errm[mode - 1] /= scale;
            CHECK(errm[mode - 1] < 1e-8);
        }
        d->free_num(num);
        d->free_sym(sym);
        free(gm);
    }
    qsort(rel, (size_t)nnz, sizeof *rel, cmp_dbl);
    CHECK(err < 1e-8);
    printf("  %-16s lu n=%-5lld nnz=%-6lld selinv err %.1e (scalar %.1e, blocks %.1e / %.1e; dgetri %.1e) median %.1e, "
           "rcond %.1e, factor %.2g s grad %.2g s\n",
           file, n, nnz, err, errm[0], errm[1], errm[2], errd, rel[nnz / 2], dense_rcond(A), info.factor_seconds,
           info.grad_seconds);
    free(ci);
    free(inv);
    free(g);
    free(ref);
    free(rel);
    free(r);
    sla_matrix_destroy(&A);
    return err;
}

static sla_matrix *shifted(sla_ctx *ctx, const sla_matrix *A, double sigma)
{
    sla_matrix *B = NULL;
    sla_matrix_copy(ctx, A, &B);
    long long n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *v = malloc((size_t)nnz * sizeof *v);
    memcpy(v, sla_matrix_values(A, 0), (size_t)nnz * sizeof *v);
    sla_int *ri = malloc((size_t)nnz * sizeof *ri), *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_rowind(A, ri);
    sla_matrix_get_colind(A, ci);
    for (long long k = 0; k < nnz; k++)
        if (ri[k] == ci[k]) v[k] -= sigma;
    (void)n;
    sla_matrix_set_values(ctx, B, 0, v);
    free(v);
    free(ri);
    free(ci);
    return B;
}

int main(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    if (!sla_method_available(SLA_METHOD_CHOLESKY) || !sla_method_available(SLA_METHOD_LU)) {
        sla_matrix *P = NULL;
        sla_gen_poisson(ctx, 1, 4, &P);
        double sg, lad;
        CHECK_ST(ctx, sla_logdet(ctx, P, 0, SLA_LOGDET_CHOLESKY, &sg, &lad, NULL, NULL),
                 SLA_ERR_UNAVAILABLE);
        sla_matrix_destroy(&P);
        sla_ctx_destroy(&ctx);
        return tu_finish("test_logdet (no SuiteSparse)");
    }

    /* SPD: Poisson 2D, random SPD, real SPD matrices */
    sla_matrix *P = NULL, *R = NULL, *C = NULL, *G = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 12, &P));
    CHECK_OK(ctx, sla_gen_random(ctx, 150, 4, SLA_GEN_SPD, 11, &R));
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 10, 30.0, -20.0, &C));
    CHECK_OK(ctx, sla_gen_random(ctx, 120, 3, SLA_GEN_GENERAL, 5, &G));
    check_one(ctx, "poisson2d 12", P, SLA_LOGDET_AUTO, "cholesky", "selinv");
    check_one(ctx, "poisson2d 12", P, SLA_LOGDET_CHOLESKY, "cholesky", "selinv");
    check_one(ctx, "poisson2d 12", P, SLA_LOGDET_LDLT, "ldlt", "selinv");
    check_one(ctx, "poisson2d 12", P, SLA_LOGDET_LU, "lu", "selinv");
    check_one(ctx, "random spd 150", R, SLA_LOGDET_AUTO, "cholesky", "selinv");
    {
        /* larger supernodes (3D separators) */
        sla_matrix *P3 = NULL;
        CHECK_OK(ctx, sla_gen_poisson(ctx, 3, 8, &P3));
        check_one(ctx, "poisson3d 8", P3, SLA_LOGDET_CHOLESKY, "cholesky", "selinv");
        check_one(ctx, "poisson3d 8", P3, SLA_LOGDET_LDLT, "ldlt", "selinv");
        sla_matrix_destroy(&P3);
    }
    check_one(ctx, "convdiff 10", C, SLA_LOGDET_AUTO, "lu", "selinv");
    check_one(ctx, "random general 120", G, SLA_LOGDET_AUTO, "lu", "selinv");

    const char *files[] = {"bcsstk01.mtx", "494_bus.mtx", "mesh1e1.mtx", "west0067.mtx", "fs_183_6.mtx"};
    for (int f = 0; f < 5; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", SLA_TEST_DATA, files[f]);
        sla_matrix *M = NULL;
        CHECK_OK(ctx, sla_mm_read(ctx, path, SLA_F64, &M));
        if (!M) continue;
        sla_matrix_props pr;
        sla_matrix_properties(ctx, M, 0, 0.0, &pr);
        check_one(ctx, files[f], M, SLA_LOGDET_AUTO, pr.symmetric ? "cholesky" : "lu",
                  "selinv");
        sla_matrix_destroy(&M);
    }
    /* symmetric indefinite real matrices: auto tries Cholesky, then LDL^T
     * without pivoting meets a zero pivot, LU (selected inversion) */
    const char *sym_indef[] = {"can_24.mtx", "tumorAntiAngiogenesis_2.mtx", "reorientation_1.mtx"};
    for (int f = 0; f < 3; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", SLA_TEST_DATA, sym_indef[f]);
        sla_matrix *M = NULL;
        CHECK_OK(ctx, sla_mm_read(ctx, path, SLA_F64, &M));
        if (!M) continue;
        check_one(ctx, sym_indef[f], M, SLA_LOGDET_AUTO, "lu", "selinv");
        sla_matrix_destroy(&M);
    }

    /* unsymmetric real matrices: LU selected inversion against the
     * (refined) dense inverse */
    {
        const char *lu_files[] = {"cage5.mtx",   "west0067.mtx", "west0497.mtx",      "olm500.mtx",
                                  "bp_1200.mtx", "fs_183_6.mtx", "rajat19.mtx",       "watt_2.mtx",
                                  "adder_dcop_05.mtx", "temp.mtx", "nnc1374.mtx"};
        for (size_t f = 0; f < sizeof lu_files / sizeof lu_files[0]; f++) check_lu_real(ctx, lu_files[f]);
    }

    /* the arrowhead generator: unsymmetric, nonsingular, dense border */
    {
        sla_matrix *W = NULL;
        CHECK_OK(ctx, sla_gen_arrow(ctx, 300, 6, 2, 3, &W));
        sla_matrix_props pr;
        CHECK_OK(ctx, sla_matrix_properties(ctx, W, 0, 0.0, &pr));
        CHECK(!pr.symmetric && pr.structurally_symmetric);
        CHECK(sla_matrix_nnz(W) == 294 * (5 + 6) - 6 + 6 * 300);
        check_one(ctx, "arrow 300", W, SLA_LOGDET_AUTO, "lu", "selinv");
        sla_matrix_destroy(&W);
        CHECK_ERR(ctx, sla_gen_arrow(ctx, 10, 11, 2, 1, &W), SLA_ERR_ARGUMENT, "ndense");
        CHECK_ERR(ctx, sla_gen_arrow(ctx, 10, 2, 2, 1, NULL), SLA_ERR_ARGUMENT, "NULL");
    }

    /* symmetric indefinite: negative determinant through LDL^T (auto falls
     * back and says so), against LU */
    sla_matrix *Pi = shifted(ctx, P, 1.3);
    check_one(ctx, "poisson2d 12 - 1.3 I", Pi, SLA_LOGDET_AUTO, "ldlt", "selinv");
    check_one(ctx, "poisson2d 12 - 1.3 I", Pi, SLA_LOGDET_LU, "lu", "selinv");
    {
        double sg, lad;
        CHECK_ERR(ctx, sla_logdet(ctx, Pi, 0, SLA_LOGDET_CHOLESKY, &sg, &lad, NULL, NULL),
                  SLA_ERR_NOT_SPD, "not positive definite");
        CHECK_ERR(ctx, sla_logdet(ctx, C, 0, SLA_LOGDET_CHOLESKY, &sg, &lad, NULL, NULL),
                  SLA_ERR_ARGUMENT, "symmetric");
    }

    /* singular: the 1D Neumann Laplacian (rows sum to zero) */
    {
        sla_int rows[] = {0, 0, 1, 1, 1, 2, 2, 2, 3, 3};
        sla_int cols[] = {0, 1, 0, 1, 2, 1, 2, 3, 2, 3};
        double vals[] = {1, -1, -1, 2, -1, -1, 2, -1, -1, 1};
        sla_matrix *N = NULL;
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, 4, 4, 10, rows, cols, SLA_F64, 1, vals, NULL, &N));
        double sg = 5, lad = 5, g[10];
        for (int m = 0; m <= 3; m++) {
            sg = 5;
            lad = 5;
            sla_status st = sla_logdet(ctx, N, 0, (sla_logdet_method)m, &sg, &lad, g, NULL);
            /* Cholesky of a semidefinite matrix: not SPD; others singular */
            if (m == SLA_LOGDET_CHOLESKY) {
                CHECK(st == SLA_ERR_NOT_SPD || st == SLA_ERR_SINGULAR);
            } else {
                CHECK_ERR(ctx, st, SLA_ERR_SINGULAR, "singular");
                CHECK(sg == 0.0 && isinf(lad) && lad < 0);
            }
        }
        double det = 1;
        CHECK_ST(ctx, sla_det(ctx, N, 0, SLA_LOGDET_AUTO, &det), SLA_ERR_SINGULAR);
        CHECK(det == 0.0);
        sla_matrix_destroy(&N);
    }

    /* det on request, and overflow reported */
    {
        double det, sg, lad;
        CHECK_OK(ctx, sla_det(ctx, R, 0, SLA_LOGDET_AUTO, &det));
        CHECK_OK(ctx, sla_logdet(ctx, R, 0, SLA_LOGDET_AUTO, &sg, &lad, NULL, NULL));
        CHECK_CLOSE(det, exp(lad), 1e-10);
        sla_matrix *B = NULL;
        CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 30, &B)); /* det ~ e^1050 */
        CHECK_ERR(ctx, sla_det(ctx, B, 0, SLA_LOGDET_AUTO, &det), SLA_ERR_TOO_LARGE, "overflows");
        CHECK(isinf(det) && det > 0);
        CHECK_OK(ctx, sla_logdet(ctx, B, 0, SLA_LOGDET_AUTO, &sg, &lad, NULL, NULL));
        CHECK(sg == 1.0 && lad > 1000.0);
        sla_matrix_destroy(&B);
    }

    /* batch: three value arrays on one pattern (P, 2P, P - 1.3 I) */
    {
        long long nnz = sla_matrix_nnz(P), n = sla_matrix_nrows(P);
        double *vals = malloc((size_t)(3 * nnz) * sizeof *vals);
        const double *p = sla_matrix_values(P, 0), *pi = sla_matrix_values(Pi, 0);
        for (long long k = 0; k < nnz; k++) {
            vals[k] = p[k];
            vals[nnz + k] = 2 * p[k];
            vals[2 * nnz + k] = pi[k];
        }
        sla_int *rp = malloc((size_t)(n + 1) * sizeof *rp), *ci = malloc((size_t)nnz * sizeof *ci);
        memcpy(rp, sla_matrix_rowptr(P), (size_t)(n + 1) * sizeof *rp);
        sla_matrix_get_colind(P, ci);
        sla_matrix *B = NULL;
        CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, rp, ci, SLA_F64, 3, vals, SLA_COPY, &B));
        double sg[3], lad[3], *g = malloc((size_t)(3 * nnz) * sizeof *g), *g1 = malloc((size_t)nnz * sizeof *g1);
        sla_logdet_info info[3];
        CHECK_OK(ctx, sla_logdet_batch(ctx, B, SLA_LOGDET_AUTO, sg, lad, g, info));
        double s0, l0;
        CHECK_OK(ctx, sla_logdet(ctx, P, 0, SLA_LOGDET_AUTO, &s0, &l0, g1, NULL));
        CHECK_CLOSE(lad[0], l0, 1e-12);
        CHECK_CLOSE(lad[1], l0 + (double)n * log(2.0), 1e-12); /* det(2A) = 2^n det A */
        double e = 0;
        for (long long k = 0; k < nnz; k++) e = fmax(e, fabs(g[nnz + k] - 0.5 * g1[k])); /* (2A)^-1 */
        CHECK(e < 1e-12);
        CHECK(sg[2] == -1.0 && strcmp(info[2].method, "ldlt") == 0);
        free(g);
        free(g1);
        free(vals);
        free(rp);
        free(ci);
        sla_matrix_destroy(&B);
    }

    /* solver form: the factor of a user's solver; Krylov refused */
    {
        long long nnz = sla_matrix_nnz(P), n = sla_matrix_nrows(P);
        double *g = malloc((size_t)nnz * sizeof *g), *inv = malloc((size_t)(n * n) * sizeof *inv);
        double sref, lref, sg, lad;
        dense_logdet(P, 0, &sref, &lref, inv);
        for (int m = 0; m < 4; m++) {
            sla_method ms[] = {SLA_METHOD_CHOLESKY, SLA_METHOD_LDLT, SLA_METHOD_KLU, SLA_METHOD_SUPERLU};
            if (!sla_method_available(ms[m])) continue;
            sla_solver_options o;
            sla_solver_options_default(&o);
            o.method = ms[m];
            sla_solver *S = NULL;
            CHECK_OK(ctx, sla_solver_create(ctx, P, &o, &S));
            sla_logdet_info info;
            CHECK_OK(ctx, sla_solver_logdet_grad(ctx, S, 0, &sg, &lad, g, &info));
            CHECK_CLOSE(lad, lref, 1e-10);
            CHECK(grad_vs_dense(P, inv, g) < 1e-9);
            CHECK(strcmp(info.grad_method, "selinv") == 0);
            if (m >= 2) CHECK(strstr(info.note, "refactored with umfpack") != NULL);
            sla_solver_destroy(&S);
        }
        /* an unsymmetric matrix through every LU backend */
        {
            long long nc = sla_matrix_nnz(C), ncn = sla_matrix_nrows(C);
            double *gc = malloc((size_t)nc * sizeof *gc), *invc = malloc((size_t)(ncn * ncn) * sizeof *invc);
            dense_logdet(C, 0, &sref, &lref, invc);
            sla_method lm[] = {SLA_METHOD_LU, SLA_METHOD_UMFPACK, SLA_METHOD_KLU, SLA_METHOD_SUPERLU};
            for (int m = 0; m < 4; m++) {
                if (!sla_method_available(lm[m])) continue;
                sla_solver_options o;
                sla_solver_options_default(&o);
                o.method = lm[m];
                sla_solver *S = NULL;
                CHECK_OK(ctx, sla_solver_create(ctx, C, &o, &S));
                sla_logdet_info info;
                CHECK_OK(ctx, sla_solver_logdet_grad(ctx, S, 0, &sg, &lad, gc, &info));
                CHECK_CLOSE(lad, lref, 1e-10);
                CHECK(grad_vs_dense(C, invc, gc) < 1e-9);
                CHECK(strcmp(info.grad_method, "selinv") == 0);
                CHECK((m >= 2) == (strstr(info.note, "refactored with umfpack") != NULL));
                sla_solver_destroy(&S);
            }
            free(gc);
            free(invc);
        }
        /* the VJP spelling: gA = g * grad for a scalar cotangent g; _grad is g = 1 */
        if (sla_method_available(SLA_METHOD_LU)) {
            sla_solver_options o;
            sla_solver_options_default(&o);
            o.method = SLA_METHOD_LU;
            sla_solver *S = NULL;
            double *gv = malloc((size_t)nnz * sizeof *gv), sv, lv;
            CHECK_OK(ctx, sla_solver_create(ctx, P, &o, &S));
            CHECK_OK(ctx, sla_solver_logdet_grad(ctx, S, 0, &sg, &lad, g, NULL));
            CHECK_OK(ctx, sla_solver_logdet_vjp(ctx, S, 0, 1.0, &sv, &lv, gv, NULL));
            CHECK(sv == sg && lv == lad && memcmp(g, gv, (size_t)nnz * sizeof *g) == 0);
            sla_logdet_info info;
            CHECK_OK(ctx, sla_solver_logdet_vjp(ctx, S, 0, -2.5, &sv, &lv, gv, &info));
            double err = 0.0;
            for (long long k = 0; k < nnz; k++) err = fmax(err, fabs(gv[k] + 2.5 * g[k]));
            CHECK(err <= 1e-12 * (1.0 + fabs(lad)));
            CHECK(lv == lad && strcmp(info.grad_method, "selinv") == 0);
            /* no gA: the value alone; a non-finite cotangent is refused */
            CHECK_OK(ctx, sla_solver_logdet_vjp(ctx, S, 0, 3.0, &sv, &lv, NULL, NULL));
            CHECK(lv == lad);
            CHECK_ERR(ctx, sla_solver_logdet_vjp(ctx, S, 0, NAN, &sv, &lv, gv, NULL), SLA_ERR_VALUE,
                      "cotangent");
            CHECK_ERR(ctx, sla_solver_logdet_vjp(ctx, NULL, 0, 1.0, &sv, &lv, gv, NULL), SLA_ERR_ARGUMENT,
                      "sla_solver_logdet_vjp");
            CHECK_ERR(ctx, sla_solver_logdet_grad(ctx, NULL, 0, &sv, &lv, gv, NULL), SLA_ERR_ARGUMENT,
                      "sla_solver_logdet_grad");
            sla_solver_destroy(&S);
            free(gv);
        }
        sla_solver_options o;
        sla_solver_options_default(&o);
        o.method = SLA_METHOD_CG;
        sla_solver *S = NULL;
        CHECK_OK(ctx, sla_solver_create(ctx, P, &o, &S));
        CHECK_ERR(ctx, sla_solver_logdet_grad(ctx, S, 0, &sg, &lad, g, NULL), SLA_ERR_UNSUPPORTED,
                  "direct factorization");
        CHECK_ERR(ctx, sla_solver_logdet_grad(ctx, S, 3, &sg, &lad, g, NULL), SLA_ERR_INDEX, "out of range");
        sla_solver_destroy(&S);
        free(g);
        free(inv);
    }

    /* argument errors */
    {
        double sg, lad;
        sla_matrix *Rect = NULL;
        sla_int r[] = {0, 1}, c[] = {0, 2};
        double v[] = {1, 2};
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, 2, 3, 2, r, c, SLA_F64, 1, v, NULL, &Rect));
        CHECK_ERR(ctx, sla_logdet(ctx, Rect, 0, SLA_LOGDET_AUTO, &sg, &lad, NULL, NULL), SLA_ERR_DIMENSION,
                  "non-square");
        CHECK_ERR(ctx, sla_logdet(ctx, P, 1, SLA_LOGDET_AUTO, &sg, &lad, NULL, NULL), SLA_ERR_INDEX, "out of range");
        CHECK_ST(ctx, sla_logdet(ctx, P, 0, SLA_LOGDET_AUTO, NULL, &lad, NULL, NULL), SLA_ERR_ARGUMENT);
        CHECK_ST(ctx, sla_logdet(ctx, P, 0, (sla_logdet_method)9, &sg, &lad, NULL, NULL), SLA_ERR_ARGUMENT);
        sla_matrix_destroy(&Rect);
    }

    /* allocation failures: every allocation of the Cholesky + selected
     * inverse path and of the LU + solves path fails in turn */
    for (int path = 0; path < 2; path++) {
        const sla_matrix *M = path ? C : P;
        long long nnz = sla_matrix_nnz(M);
        double *g = malloc((size_t)nnz * sizeof *g);
        int nomem = 0, ok = 0;
        for (long fail = 0; fail < 2000; fail++) {
            counter cnt = {0, fail, 0, 0};
            sla_allocator al = {count_malloc, count_free, &cnt};
            sla_ctx *c2 = NULL;
            sla_ctx_create(&c2);
            sla_ctx_set_allocator(c2, &al);
            double sg, lad;
            sla_status st = sla_logdet(c2, M, 0, SLA_LOGDET_AUTO, &sg, &lad, g, NULL);
            CHECK(cnt.live == 0);
            sla_ctx_destroy(&c2);
            if (cnt.failures == 0) {
                CHECK(st == SLA_OK);
                ok = 1;
                break;
            }
            CHECK(st == SLA_ERR_NOMEM);
            nomem += st == SLA_ERR_NOMEM;
        }
        CHECK(ok && nomem > 3);
        if (!ok) fprintf(stderr, "path %d: no success after 200 (nomem %d)\n", path, nomem);
        free(g);
    }

    sla_matrix_destroy(&P);
    sla_matrix_destroy(&Pi);
    sla_matrix_destroy(&R);
    sla_matrix_destroy(&C);
    sla_matrix_destroy(&G);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_logdet");
}
