/* sla_matrix_is_spd, the positive-definiteness query by trial Cholesky:
 * SPD generators (Poisson, random SPD) say yes; indefinite, negative
 * definite, singular semidefinite, nonsymmetric, nonsquare matrices and a
 * missing or nonpositive diagonal say no, without an error status; each
 * value array of a batch is answered on its own; bad arguments are errors;
 * the answers agree with a dense LAPACK Cholesky (dpotrf). */
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

    sla_ctx_destroy(&ctx);
    return tu_finish("test_spd_query");
}
