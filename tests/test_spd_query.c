/* sla_matrix_is_spd, the positive-definiteness query by trial Cholesky:
 * SPD generators (Poisson, random SPD) say yes; indefinite, negative
 * definite, singular semidefinite, nonsymmetric, nonsquare matrices and a
 * missing or nonpositive diagonal say no, without an error status; each
 * value array of a batch is answered on its own; bad arguments are errors;
 * the answers agree with a dense LAPACK Cholesky (dpotrf). Complex
 * matrices: random Hermitian ones with shifted diagonals (some positive
 * definite, some indefinite) agree with zpotrf; complex symmetric (not
 * Hermitian) and complex-diagonal ones say no. */
#include "test_util.h"

/* Dense dpotrf on value array ib: 1 when it succeeds. */
static int dense_spd(const sla_matrix *A, sla_int ib)
{
    long long n = sla_matrix_nrows(A);
    double *D = malloc((size_t)(n * n + 1) * sizeof *D);
    sla_matrix_to_dense(NULL, A, ib, D, n);
    int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, D, (lapack_int)n);
    free(D);
    return info == 0;
}

static int answer(sla_ctx *ctx, const sla_matrix *A, sla_int ib)
{
    bool yes = true;
    CHECK_OK(ctx, sla_matrix_is_spd(ctx, A, ib, &yes));
    return yes ? 1 : 0;
}

/* A from COO triplets, one value array. */
static sla_matrix *coo(sla_ctx *ctx, sla_int m, sla_int n, sla_int nnz, const sla_int *r,
                       const sla_int *c, const double *v)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, m, n, nnz, r, c, SLA_F64, 1, v, NULL, &A));
    return A;
}

/* Dense zpotrf on value array ib of a complex A: 1 when it succeeds. */
static int dense_zspd(const sla_matrix *A, sla_int ib)
{
    long long n = sla_matrix_nrows(A);
    sla_complex *D = malloc((size_t)(n * n + 1) * sizeof *D);
    sla_matrix_to_dense_z(NULL, A, ib, D, n);
    int info = LAPACKE_zpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, (lapack_complex_double *)D,
                              (lapack_int)n);
    free(D);
    return info == 0;
}

/* Complex matrices: Hermitian random ones with a shifted diagonal against
 * zpotrf, and the structural "no"s. */
static void complex_cases(sla_ctx *ctx)
{
    enum { N = 40, PER = 4 };
    sla_int r[N * (2 * PER + 1)], c[N * (2 * PER + 1)];
    double v[2 * N * (2 * PER + 1) * 4];
    const double shifts[4] = {-1.0, 0.5, 2.0, 8.0};
    int yes = 0, no = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        unsigned long long st = seed * 0x9E3779B97F4A7C15ull;
        sla_int nnz = 0;
        for (sla_int i = 0; i < N; i++) { /* the diagonal first, real */
            r[nnz] = c[nnz] = i;
            nnz++;
        }
        for (sla_int i = 0; i < N; i++)
            for (int t = 0; t < PER / 2; t++) {
                sla_int j = (sla_int)((tu_rand(&st) + 1.0) * 0.5 * N) % N;
                if (j == i) continue;
                r[nnz] = i, c[nnz] = j, nnz++;
                r[nnz] = j, c[nnz] = i, nnz++;
            }
        /* four value arrays: H + shift I (duplicates sum, each pair conjugate) */
        for (int b = 0; b < 4; b++) {
            double *vb = v + 2 * (size_t)b * nnz;
            unsigned long long vs = seed * 77 + 1;
            for (sla_int k = 0; k < N; k++) vb[2 * k] = shifts[b] + 0.5 * tu_rand(&vs), vb[2 * k + 1] = 0.0;
            for (sla_int k = N; k < nnz; k += 2) {
                double re = 0.5 * tu_rand(&vs), im = 0.5 * tu_rand(&vs);
                vb[2 * k] = re, vb[2 * k + 1] = im;
                vb[2 * k + 2] = re, vb[2 * k + 3] = -im;
            }
        }
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, N, N, nnz, r, c, SLA_C128, 4, v, NULL, &A));
        for (sla_int b = 0; b < 4; b++) {
            int a = answer(ctx, A, b), want = dense_zspd(A, b);
            CHECK(a == want);
            CHECK(sla_ctx_message(ctx)[0] == '\0');
            yes += a, no += !a;
        }
        sla_matrix_destroy(&A);
    }
    CHECK(yes > 0 && no > 0); /* both answers were exercised */

    /* complex symmetric, not Hermitian (Helmholtz): no */
    sla_matrix *H = NULL;
    CHECK_OK(ctx, sla_gen_helmholtz2d(ctx, 6, 1.0, 0.5, &H));
    CHECK(answer(ctx, H, 0) == 0);
    sla_matrix_destroy(&H);

    /* 2x2 Hermitian: [[2, 1+i], [1-i, 2]] yes (det 2), [[1, 1+i], [1-i, 1]] no
     * (det -1), a complex diagonal entry no */
    const sla_int r2[4] = {0, 0, 1, 1}, c2[4] = {0, 1, 0, 1};
    const double pd[8] = {2, 0, 1, 1, 1, -1, 2, 0}, ind[8] = {1, 0, 1, 1, 1, -1, 1, 0};
    const double cdiag[8] = {2, 0.1, 1, 1, 1, -1, 2, -0.1};
    const struct {
        const double *v;
        int want;
    } cases[] = {{pd, 1}, {ind, 0}, {cdiag, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, 2, 2, 4, r2, c2, SLA_C128, 1, cases[i].v, NULL, &A));
        CHECK(answer(ctx, A, 0) == cases[i].want);
        sla_matrix_destroy(&A);
    }
}

int main(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);

    sla_matrix *P = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 12, &P));
    CHECK(answer(ctx, P, 0) == 1);
    CHECK(dense_spd(P, 0) == 1);
    sla_matrix_destroy(&P);

    /* random matrices of every kind, against dpotrf */
    for (int kind = 0; kind < 3; kind++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            sla_matrix *R = NULL;
            CHECK_OK(ctx, sla_gen_random(ctx, 40, 3, (sla_gen_kind)kind, seed, &R));
            int a = answer(ctx, R, 0);
            if (kind == SLA_GEN_SPD) CHECK(a == 1);
            if (kind == SLA_GEN_GENERAL) CHECK(a == 0); /* nonsymmetric */
            if (kind != SLA_GEN_GENERAL) CHECK(a == dense_spd(R, 0));
            sla_matrix_destroy(&R);
        }
    }

    /* 2x2 cases: [[d0, o], [o, d1]] */
    const sla_int r[4] = {0, 0, 1, 1}, c[4] = {0, 1, 0, 1};
    const double spd[4] = {2, -1, -1, 2}, indef[4] = {1, 2, 2, 1}, semi[4] = {1, 1, 1, 1};
    const double negdef[4] = {-2, 1, 1, -2}, nonsym[4] = {2, -1, 0.5, 2};
    const struct {
        const double *v;
        int want;
    } cases[] = {{spd, 1}, {indef, 0}, {semi, 0}, {negdef, 0}, {nonsym, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sla_matrix *A = coo(ctx, 2, 2, 4, r, c, cases[i].v);
        CHECK(answer(ctx, A, 0) == cases[i].want);
        CHECK(sla_ctx_message(ctx)[0] == '\0'); /* a "no" leaves no message */
        sla_matrix_destroy(&A);
    }

    /* a diagonal entry not stored: no */
    {
        const sla_int r2[3] = {0, 0, 1}, c2[3] = {0, 1, 0};
        const double v2[3] = {1, 0.1, 0.1};
        sla_matrix *A = coo(ctx, 2, 2, 3, r2, c2, v2);
        CHECK(answer(ctx, A, 0) == 0);
        sla_matrix_destroy(&A);
    }

    /* nonsquare: no; 0 x 0: yes */
    {
        const sla_int r2[2] = {0, 1}, c2[2] = {0, 2};
        const double v2[2] = {1, 1};
        sla_matrix *A = coo(ctx, 2, 3, 2, r2, c2, v2);
        CHECK(answer(ctx, A, 0) == 0);
        sla_matrix_destroy(&A);
        sla_matrix *E = coo(ctx, 0, 0, 0, r2, c2, v2);
        CHECK(answer(ctx, E, 0) == 1);
        sla_matrix_destroy(&E);
    }

    /* a batch: each value array answered on its own */
    {
        double vb[12];
        memcpy(vb, spd, sizeof spd);
        memcpy(vb + 4, indef, sizeof indef);
        memcpy(vb + 8, semi, sizeof semi);
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, 2, 2, 4, r, c, SLA_F64, 3, vb, NULL, &A));
        CHECK(answer(ctx, A, 0) == 1);
        CHECK(answer(ctx, A, 1) == 0);
        CHECK(answer(ctx, A, 2) == 0);
        bool yes = false;
        CHECK_ERR(ctx, sla_matrix_is_spd(ctx, A, 3, &yes), SLA_ERR_INDEX, "out of range");
        CHECK_ERR(ctx, sla_matrix_is_spd(ctx, A, 0, NULL), SLA_ERR_ARGUMENT, "NULL");
        sla_matrix_destroy(&A);
    }

    complex_cases(ctx);

    sla_ctx_destroy(&ctx);
    return tu_finish("test_spd_query");
}
