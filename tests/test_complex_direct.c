/* The complex direct backends (UMFPACK, KLU, SuperLU, CHOLMOD) against dense
 * LAPACK references: solves with A, A^T and A^H for several right-hand
 * sides, the log-determinant (phase and log|det|) against zgetrf, its
 * gradient against central finite differences (real and imaginary parts
 * perturbed separately) and a dense inverse, the one-shot sla_zlogdet and
 * sla_zlogdet_vjp, and the refusals: singular, not Hermitian positive
 * definite, NaN values, a pattern other than the analysed one. */
#include "test_util.h"

#include <complex.h>

#include "solvers/zsolver.h"

typedef double _Complex zc;

/* A square test matrix: dense column-major D (zeros off the pattern) and
 * its CSR form. */
typedef struct {
    sla_int n, nnz;
    zc *D;
    sla_int *rowptr, *colind;
    zc *vals;
} tmat;

enum { GEN_GENERAL, GEN_SYMMETRIC, GEN_HPD, GEN_HERM_INDEF };

static void tmat_csr(tmat *M)
{
    const sla_int n = M->n;
    M->rowptr = calloc((size_t)n + 1, sizeof *M->rowptr);
    M->nnz = 0;
    for (sla_int i = 0; i < n; i++)
        for (sla_int j = 0; j < n; j++)
            if (M->D[i + j * n] != 0.0) M->nnz++;
    M->colind = malloc((size_t)M->nnz * sizeof *M->colind);
    M->vals = malloc((size_t)M->nnz * sizeof *M->vals);
    sla_int k = 0;
    for (sla_int i = 0; i < n; i++) {
        for (sla_int j = 0; j < n; j++)
            if (M->D[i + j * n] != 0.0) {
                M->colind[k] = j;
                M->vals[k++] = M->D[i + j * n];
            }
        M->rowptr[i + 1] = k;
    }
}

/* Random sparse complex matrices of order n with about 20 % off-diagonal
 * entries: general (diagonal not dominant, so LU pivots), complex
 * symmetric, Hermitian positive definite (dominant real diagonal) and
 * Hermitian indefinite (one negative diagonal entry). */
static tmat gen(int kind, sla_int n, unsigned long long seed)
{
    tmat M = {.n = n};
    M.D = calloc((size_t)n * (size_t)n, sizeof *M.D);
    unsigned long long s = seed;
    for (sla_int j = 0; j < n; j++)
        for (sla_int i = 0; i < n; i++) {
            if (i == j || fabs(tu_rand(&s)) > 0.2) continue;
            zc v = tu_rand(&s) + tu_rand(&s) * _Complex_I;
            if (kind == GEN_GENERAL) M.D[i + j * n] = v;
            else if (i > j) {
                M.D[i + j * n] = v;
                M.D[j + i * n] = kind == GEN_SYMMETRIC ? v : conj(v);
            }
        }
    for (sla_int i = 0; i < n; i++) {
        double rs = 0.0;
        for (sla_int j = 0; j < n; j++) rs += cabs(M.D[i + j * n]);
        if (kind == GEN_GENERAL || kind == GEN_SYMMETRIC)
            M.D[i + i * n] = 0.5 + tu_rand(&s) + (0.5 + tu_rand(&s)) * _Complex_I;
        else
            M.D[i + i * n] = rs + 0.5 + 0.5 * fabs(tu_rand(&s));
    }
    if (kind == GEN_HERM_INDEF) M.D[(n / 2) * (n + 1)] = -M.D[(n / 2) * (n + 1)];
    tmat_csr(&M);
    return M;
}

static void tmat_free(tmat *M)
{
    free(M->D);
    free(M->rowptr);
    free(M->colind);
    free(M->vals);
}

static sla_matrix *tmat_sla(sla_ctx *ctx, const tmat *M, sla_dtype dt)
{
    sla_matrix *A = NULL;
    if (dt == SLA_C128) {
        CHECK_OK(ctx, sla_matrix_from_csr(ctx, M->n, M->n, M->rowptr, M->colind, SLA_C128, 1, M->vals,
                                          SLA_COPY, &A));
    } else {
        float *v = malloc(2 * (size_t)M->nnz * sizeof *v);
        for (sla_int k = 0; k < M->nnz; k++) {
            v[2 * k] = (float)creal(M->vals[k]);
            v[2 * k + 1] = (float)cimag(M->vals[k]);
        }
        CHECK_OK(ctx, sla_matrix_from_csr(ctx, M->n, M->n, M->rowptr, M->colind, SLA_C64, 1, v, SLA_COPY, &A));
        free(v);
    }
    return A;
}

/* Dense op(D) (op 0, 1 = T, 2 = H) and X = op(D)^-1 B by zgesv. */
static void dense_solve(const zc *D, sla_int n, int op, sla_int nrhs, const zc *B, zc *X)
{
    zc *W = malloc((size_t)n * (size_t)n * sizeof *W);
    lapack_int *ipiv = malloc((size_t)n * sizeof *ipiv);
    for (sla_int j = 0; j < n; j++)
        for (sla_int i = 0; i < n; i++)
            W[i + j * n] = op == 0 ? D[i + j * n] : op == 1 ? D[j + i * n] : conj(D[j + i * n]);
    memcpy(X, B, (size_t)n * (size_t)nrhs * sizeof *X);
    lapack_int info = LAPACKE_zgesv(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)nrhs, W, (lapack_int)n, ipiv,
                                    X, (lapack_int)n);
    CHECK(info == 0);
    free(W);
    free(ipiv);
}

/* det D = phase e^logabs by zgetrf. */
static void dense_logdet(const zc *D, sla_int n, zc *phase, double *logabs)
{
    zc *W = malloc((size_t)n * (size_t)n * sizeof *W);
    lapack_int *ipiv = malloc((size_t)n * sizeof *ipiv);
    memcpy(W, D, (size_t)n * (size_t)n * sizeof *W);
    lapack_int info = LAPACKE_zgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, W, (lapack_int)n, ipiv);
    CHECK(info == 0);
    zc ph = 1.0;
    double la = 0.0;
    for (sla_int i = 0; i < n; i++) {
        zc u = W[i + i * n];
        ph *= u / cabs(u);
        if (ipiv[i] != i + 1) ph = -ph;
        la += log(cabs(u));
    }
    *phase = ph / cabs(ph);
    *logabs = la;
    free(W);
    free(ipiv);
}

static double zrelerr(sla_int m, const zc *x, const zc *y)
{
    double num = 0.0, den = 0.0;
    for (sla_int i = 0; i < m; i++) {
        num += cabs(x[i] - y[i]) * cabs(x[i] - y[i]);
        den += cabs(y[i]) * cabs(y[i]);
    }
    return sqrt(num / (den > 0.0 ? den : 1.0));
}

/* L = g1 logabs + g2 theta of value array 0 of A with the factor of ops,
 * reusing the analysis sym; theta relative to ph0 (unwrapped). */
static double loss(sla_ctx *ctx, const sla__zdirect_ops *ops, void *sym, const sla_matrix *A, double g1,
                   double g2, zc ph0)
{
    void *num = NULL;
    zc ph = 0.0;
    double la = 0.0;
    CHECK_OK(ctx, ops->factor(ctx, sym, A, 0, &num));
    if (num) CHECK_OK(ctx, ops->logdet(ctx, sym, num, &ph, &la));
    ops->free_num(num);
    return g1 * la + g2 * carg(ph / ph0);
}

/* The gradient of L = g1 logabs + g2 theta against central differences:
 * every stored value's real and imaginary part alone (an LU backend), or
 * Hermitian pairs (a Hermitian backend: a_ij and a_ji = conj(a_ij) moved
 * together, the diagonal's real part alone). */
static void check_grad_fd(sla_ctx *ctx, const sla__zdirect_ops *ops, void *sym, const tmat *M, const zc *gA,
                          double g1, double g2, zc ph0)
{
    const double h = 1e-6;
    zc *v = malloc((size_t)M->nnz * sizeof *v);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, M->n, M->n, M->rowptr, M->colind, SLA_C128, 1, M->vals, SLA_COPY, &A));
    double gmax = 0.0, errmax = 0.0;
    for (sla_int k = 0; k < M->nnz; k++) gmax = fmax(gmax, cabs(gA[k]));
    sla_int *row = malloc((size_t)M->nnz * sizeof *row);
    for (sla_int i = 0; i < M->n; i++)
        for (sla_int k = M->rowptr[i]; k < M->rowptr[i + 1]; k++) row[k] = i;
    for (sla_int k = 0; k < M->nnz; k++) {
        sla_int i = row[k], j = M->colind[k], kt = -1;
        if (ops->hermitian) {
            if (i > j) continue;
            for (sla_int q = M->rowptr[j]; q < M->rowptr[j + 1]; q++)
                if (M->colind[q] == i) kt = q;
        }
        for (int part = 0; part < 2; part++) {
            if (ops->hermitian && i == j && part == 1) continue; /* a real diagonal */
            zc d = part ? h * _Complex_I : h;
            double lp, lm;
            memcpy(v, M->vals, (size_t)M->nnz * sizeof *v);
            v[k] += d;
            if (kt >= 0 && kt != k) v[kt] += conj(d);
            sla_matrix_set_values(ctx, A, 0, v);
            lp = loss(ctx, ops, sym, A, g1, g2, ph0);
            v[k] -= 2.0 * d;
            if (kt >= 0 && kt != k) v[kt] -= 2.0 * conj(d);
            sla_matrix_set_values(ctx, A, 0, v);
            lm = loss(ctx, ops, sym, A, g1, g2, ph0);
            double fd = (lp - lm) / (2.0 * h);
            /* dL = Re(conj(gA_k) dA_k) (+ the partner's term) */
            double an = part ? cimag(gA[k]) : creal(gA[k]);
            if (kt >= 0 && kt != k) an += part ? -cimag(gA[kt]) : creal(gA[kt]);
            errmax = fmax(errmax, fabs(fd - an));
        }
    }
    printf("%s: finite-difference gradient, max error %.2g (max |g| %.2g)\n", ops->name, errmax, gmax);
    CHECK(errmax <= 1e-6 * fmax(gmax, 1.0));
    sla_matrix_destroy(&A);
    free(v);
    free(row);
}

/* gA against the dense inverse: (g1 + i g2) conj(inv(D)[col_k, row_k]). */
static void check_grad_dense(const tmat *M, const zc *gA, double g1, double g2)
{
    const sla_int n = M->n;
    zc *I = calloc((size_t)n * (size_t)n, sizeof *I), *Z = malloc((size_t)n * (size_t)n * sizeof *Z);
    for (sla_int i = 0; i < n; i++) I[i + i * n] = 1.0;
    dense_solve(M->D, n, 0, n, I, Z);
    zc *ref = malloc((size_t)M->nnz * sizeof *ref);
    for (sla_int i = 0; i < n; i++)
        for (sla_int k = M->rowptr[i]; k < M->rowptr[i + 1]; k++)
            ref[k] = (g1 + g2 * _Complex_I) * conj(Z[M->colind[k] + i * n]);
    CHECK(zrelerr(M->nnz, gA, ref) < 1e-10);
    free(I);
    free(Z);
    free(ref);
}

/* Solves, logdet and its gradient of one backend on one matrix. */
static void check_backend(sla_ctx *ctx, const sla__zdirect_ops *ops, const tmat *M, sla_dtype dt, bool fd)
{
    const sla_int n = M->n, nrhs = 3, ld = n + 2;
    sla_matrix *A = tmat_sla(ctx, M, dt);
    /* the reference is of the values the backend sees (rounded to complex64) */
    tmat R = *M;
    R.D = malloc((size_t)n * (size_t)n * sizeof *R.D);
    for (sla_int q = 0; q < n * n; q++)
        R.D[q] = dt == SLA_C128 ? M->D[q] : (double)(float)creal(M->D[q]) + (double)(float)cimag(M->D[q]) * _Complex_I;
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = 1};
    void *sym = NULL, *num = NULL;
    CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym));
    CHECK_OK(ctx, ops->factor(ctx, sym, A, 0, &num));
    if (!num) {
        fprintf(stderr, "%s: no factor: %s\n", ops->name, sla_ctx_message(ctx));
        if (sym) ops->free_sym(sym);
        sla_matrix_destroy(&A);
        free(R.D);
        return;
    }
    unsigned long long s = 99;
    zc *B = malloc((size_t)ld * (size_t)nrhs * sizeof *B), *X = malloc((size_t)ld * (size_t)nrhs * sizeof *X);
    zc *Bc = malloc((size_t)n * (size_t)nrhs * sizeof *Bc), *Xr = malloc((size_t)n * (size_t)nrhs * sizeof *Xr);
    zc *Xc = malloc((size_t)n * (size_t)nrhs * sizeof *Xc);
    for (sla_int q = 0; q < ld * nrhs; q++) B[q] = tu_rand(&s) + tu_rand(&s) * _Complex_I;
    for (sla_int j = 0; j < nrhs; j++) memcpy(Bc + j * n, B + j * ld, (size_t)n * sizeof *Bc);
    zc *xs[3] = {NULL, NULL, NULL};
    for (int op = 0; op < 3; op++) {
        CHECK_OK(ctx, ops->solve(ctx, sym, num, op, nrhs, B, ld, X, ld));
        dense_solve(R.D, n, op, nrhs, Bc, Xr);
        for (sla_int j = 0; j < nrhs; j++) memcpy(Xc + j * n, X + j * ld, (size_t)n * sizeof *Xc);
        double e = zrelerr(n * nrhs, Xc, Xr);
        if (!(e < 1e-10)) fprintf(stderr, "%s: op %d solve error %.3g\n", ops->name, op, e);
        CHECK(e < 1e-10);
        xs[op] = malloc((size_t)n * sizeof *xs[op]);
        memcpy(xs[op], X, (size_t)n * sizeof *xs[op]);
    }
    /* adjoint identities on column 0: b^H (A^-1 b') = (A^-H b)^H b' and
     * b^T (A^-1 b') = (A^-T b)^T b', with b' = b here */
    zc l0 = 0.0, r2 = 0.0, l1 = 0.0, r1 = 0.0;
    for (sla_int i = 0; i < n; i++) {
        l0 += conj(B[i]) * xs[0][i];
        r2 += conj(xs[2][i]) * B[i];
        l1 += B[i] * xs[0][i];
        r1 += xs[1][i] * B[i];
    }
    CHECK(cabs(l0 - r2) <= 1e-11 * cabs(l0));
    CHECK(cabs(l1 - r1) <= 1e-11 * cabs(l1));
    for (int op = 0; op < 3; op++) free(xs[op]);

    zc ph = 0.0, phr = 0.0;
    double la = 0.0, lar = 0.0;
    CHECK_OK(ctx, ops->logdet(ctx, sym, num, &ph, &la));
    dense_logdet(R.D, n, &phr, &lar);
    CHECK(cabs(ph - phr) < 1e-10);
    CHECK_CLOSE(la, lar, 1e-11);
    if (!(cabs(ph - phr) < 1e-10))
        fprintf(stderr, "%s: phase %.15g%+.15gi vs %.15g%+.15gi\n", ops->name, creal(ph), cimag(ph), creal(phr),
                cimag(phr));

    const double g1 = 0.7, g2 = -1.3;
    zc *gA = malloc((size_t)M->nnz * sizeof *gA);
    CHECK_OK(ctx, sla__zlogdet_grad_factor(ctx, ops, sym, num, A, 0, g1, g2, gA));
    check_grad_dense(&R, gA, g1, g2);
    if (fd && dt == SLA_C128) check_grad_fd(ctx, ops, sym, M, gA, g1, g2, ph);

    CHECK_ERR(ctx, ops->solve(ctx, sym, num, 3, 1, B, ld, X, ld), SLA_ERR_ARGUMENT, "op 3");
    ops->free_num(num);
    ops->free_sym(sym);
    sla_matrix_destroy(&A);
    free(gA);
    free(B);
    free(X);
    free(Bc);
    free(Xr);
    free(Xc);
    free(R.D);
}

/* The refusals every backend shares. */
static void check_refusals(sla_ctx *ctx, const sla__zdirect_ops *ops)
{
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = 1};
    const int kind = ops->hermitian ? GEN_HPD : GEN_GENERAL;
    void *sym = NULL, *num = NULL;

    /* a structurally empty row (LU backends: refused by the analysis) */
    if (!ops->hermitian) {
        tmat M = gen(kind, 10, 5);
        for (sla_int q = 0; q < 10; q++) M.D[3 + q * 10] = 0.0;
        tmat_free(&(tmat){.rowptr = M.rowptr, .colind = M.colind, .vals = M.vals});
        tmat_csr(&M);
        sla_matrix *A = tmat_sla(ctx, &M, SLA_C128);
        CHECK_ERR(ctx, ops->analyze(ctx, A, &o, &sym), SLA_ERR_SINGULAR, "row 3 is empty");
        CHECK(sym == NULL);
        sla_matrix_destroy(&A);
        tmat_free(&M);
    }
    /* a row of stored zeros: singular at factor time */
    {
        tmat M = gen(kind, 10, 6);
        for (sla_int k = M.rowptr[4]; k < M.rowptr[5]; k++) M.vals[k] = 0.0;
        if (ops->hermitian) /* keep it Hermitian: column 4 too */
            for (sla_int i = 0; i < 10; i++)
                for (sla_int k = M.rowptr[i]; k < M.rowptr[i + 1]; k++)
                    if (M.colind[k] == 4) M.vals[k] = 0.0;
        sla_matrix *A = tmat_sla(ctx, &M, SLA_C128);
        CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym));
        if (ops->hermitian)
            CHECK_ERR(ctx, ops->factor(ctx, sym, A, 0, &num), SLA_ERR_NOT_SPD, "column 4");
        else
            CHECK_ERR(ctx, ops->factor(ctx, sym, A, 0, &num), SLA_ERR_SINGULAR, "singular");
        CHECK(num == NULL);
        if (sym) ops->free_sym(sym);
        sym = NULL;
        sla_matrix_destroy(&A);
        tmat_free(&M);
    }
    /* NaN in a value (a borrowed matrix whose caller changed it) */
    {
        tmat M = gen(kind, 8, 7);
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_matrix_from_csr(ctx, 8, 8, M.rowptr, M.colind, SLA_C128, 1, M.vals, SLA_BORROW, &A));
        CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym));
        M.vals[2] = NAN * _Complex_I + 1.0;
        CHECK_ERR(ctx, ops->factor(ctx, sym, A, 0, &num), SLA_ERR_VALUE, "value 2 of array 0");
        if (sym) ops->free_sym(sym);
        sym = NULL;
        sla_matrix_destroy(&A);
        tmat_free(&M);
    }
    /* a matrix with another pattern (same n and nnz) than the analysed one */
    {
        tmat M = gen(kind, 12, 8), M2 = gen(kind, 12, 9);
        sla_matrix *A = tmat_sla(ctx, &M, SLA_C128), *A2 = NULL;
        /* A2: M's row pointers with column indices shifted in one row */
        sla_int *ci = malloc((size_t)M.nnz * sizeof *ci);
        memcpy(ci, M.colind, (size_t)M.nnz * sizeof *ci);
        sla_int r = 0;
        while (M.rowptr[r + 1] - M.rowptr[r] == 12 || M.colind[M.rowptr[r + 1] - 1] == 11) r++;
        ci[M.rowptr[r + 1] - 1] = 11; /* the row's last entry moves to column 11 */
        CHECK_OK(ctx, sla_matrix_from_csr(ctx, 12, 12, M.rowptr, ci, SLA_C128, 1, M.vals, SLA_COPY, &A2));
        CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym));
        CHECK_ERR(ctx, ops->factor(ctx, sym, A2, 0, &num), SLA_ERR_ARGUMENT, "does not match the analysis");
        CHECK(num == NULL);
        sla_matrix *A3 = tmat_sla(ctx, &M2, SLA_C128);
        if (M2.nnz != M.nnz)
            CHECK_ERR(ctx, ops->factor(ctx, sym, A3, 0, &num), SLA_ERR_ARGUMENT, "does not match the analysis");
        CHECK_ERR(ctx, ops->factor(ctx, sym, A, 1, &num), SLA_ERR_ARGUMENT, "value array 1");
        if (sym) ops->free_sym(sym);
        sym = NULL;
        sla_matrix_destroy(&A);
        sla_matrix_destroy(&A2);
        sla_matrix_destroy(&A3);
        free(ci);
        tmat_free(&M);
        tmat_free(&M2);
    }
    if (ops->hermitian) {
        /* Hermitian indefinite, and not Hermitian at all */
        tmat M = gen(GEN_HERM_INDEF, 12, 10), G = gen(GEN_GENERAL, 12, 11);
        sla_matrix *A = tmat_sla(ctx, &M, SLA_C128), *B = tmat_sla(ctx, &G, SLA_C128);
        CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym));
        CHECK_ERR(ctx, ops->factor(ctx, sym, A, 0, &num), SLA_ERR_NOT_SPD, "not Hermitian positive definite");
        ops->free_sym(sym);
        CHECK_OK(ctx, ops->analyze(ctx, B, &o, &sym));
        CHECK_ERR(ctx, ops->factor(ctx, sym, B, 0, &num), SLA_ERR_NOT_SPD, "not Hermitian");
        ops->free_sym(sym);
        sym = NULL;
        sla_matrix_destroy(&A);
        sla_matrix_destroy(&B);
        tmat_free(&M);
        tmat_free(&G);
    }
}

/* sla_zlogdet and sla_zlogdet_vjp against zgetrf and the dense inverse. */
static void check_oneshot(sla_ctx *ctx)
{
    const int kinds[3] = {GEN_GENERAL, GEN_SYMMETRIC, GEN_HPD};
    for (int t = 0; t < 3; t++) {
        tmat M = gen(kinds[t], 40, 20 + t);
        sla_matrix *A = tmat_sla(ctx, &M, SLA_C128);
        zc ph = 0.0, phr = 0.0, ph2 = 0.0;
        double la = 0.0, lar = 0.0, la2 = 0.0;
        CHECK_OK(ctx, sla_zlogdet(ctx, A, 0, &ph, &la));
        dense_logdet(M.D, M.n, &phr, &lar);
        CHECK(cabs(ph - phr) < 1e-10);
        CHECK_CLOSE(la, lar, 1e-11);
        zc *gA = malloc((size_t)M.nnz * sizeof *gA);
        CHECK_OK(ctx, sla_zlogdet_vjp(ctx, A, 0, 1.5, 0.25, &ph2, &la2, gA));
        CHECK(ph2 == ph && la2 == la);
        check_grad_dense(&M, gA, 1.5, 0.25);
        CHECK_ERR(ctx, sla_zlogdet_vjp(ctx, A, 0, NAN, 0.0, NULL, NULL, gA), SLA_ERR_VALUE, "not finite");
        CHECK_ERR(ctx, sla_zlogdet(ctx, A, 1, &ph, &la), SLA_ERR_INDEX, "value array 1");
        free(gA);
        sla_matrix_destroy(&A);
        tmat_free(&M);
    }
    /* singular: phase 0, log|det| = -inf */
    tmat M = gen(GEN_GENERAL, 10, 30);
    for (sla_int k = M.rowptr[2]; k < M.rowptr[3]; k++) M.vals[k] = 0.0;
    sla_matrix *A = tmat_sla(ctx, &M, SLA_C128);
    zc ph = 1.0;
    double la = 0.0;
    CHECK_ERR(ctx, sla_zlogdet(ctx, A, 0, &ph, &la), SLA_ERR_SINGULAR, "singular");
    CHECK(ph == 0.0 && la == -INFINITY);
    sla_matrix_destroy(&A);
    tmat_free(&M);
    /* non-square */
    sla_int rp[3] = {0, 1, 2}, ci[2] = {0, 2};
    zc v[2] = {1.0, 2.0};
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 2, 3, rp, ci, SLA_C128, 1, v, SLA_COPY, &A));
    CHECK_ERR(ctx, sla_zlogdet(ctx, A, 0, &ph, &la), SLA_ERR_DIMENSION, "non-square");
    sla_matrix_destroy(&A);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    const sla_method methods[] = {SLA_METHOD_UMFPACK, SLA_METHOD_KLU, SLA_METHOD_SUPERLU, SLA_METHOD_CHOLESKY,
                                  SLA_METHOD_MUMPS};
    int nb = 0;
    CHECK(sla__zdirect_backend(SLA_METHOD_LU) == sla__zdirect_backend(SLA_METHOD_UMFPACK));
    CHECK(sla__zdirect_backend(SLA_METHOD_LDLT) == NULL && sla__zdirect_backend(SLA_METHOD_CG) == NULL);
    for (size_t m = 0; m < sizeof methods / sizeof *methods; m++) {
        const sla__zdirect_ops *ops = sla__zdirect_backend(methods[m]);
        CHECK((ops != NULL) == sla_method_available(methods[m]));
        if (!ops) continue;
        nb++;
        if (ops->hermitian) {
            tmat H = gen(GEN_HPD, 60, 3), h = gen(GEN_HPD, 12, 4);
            check_backend(ctx, ops, &H, SLA_C128, false);
            check_backend(ctx, ops, &H, SLA_C64, false);
            check_backend(ctx, ops, &h, SLA_C128, true);
            tmat_free(&H);
            tmat_free(&h);
        } else {
            const int kinds[3] = {GEN_GENERAL, GEN_SYMMETRIC, GEN_HPD};
            for (int t = 0; t < 3; t++) {
                tmat M = gen(kinds[t], 60, 10 * m + t), s = gen(kinds[t], 12, 10 * m + t + 5);
                check_backend(ctx, ops, &M, SLA_C128, false);
                if (t == 0) check_backend(ctx, ops, &M, SLA_C64, false);
                check_backend(ctx, ops, &s, SLA_C128, true);
                tmat_free(&M);
                tmat_free(&s);
            }
        }
        check_refusals(ctx, ops);
    }
    if (nb > 0) check_oneshot(ctx);
    else {
        sla_matrix *A = NULL;
        sla_int rp[2] = {0, 1}, ci[1] = {0};
        zc v[1] = {2.0};
        zc ph;
        double la;
        CHECK_OK(ctx, sla_matrix_from_csr(ctx, 1, 1, rp, ci, SLA_C128, 1, v, SLA_COPY, &A));
        CHECK_ST(ctx, sla_zlogdet(ctx, A, 0, &ph, &la), SLA_ERR_UNAVAILABLE);
        sla_matrix_destroy(&A);
    }
    printf("complex direct backends tested: %d\n", nb);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_complex_direct");
}
