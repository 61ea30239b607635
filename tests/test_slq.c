/* Stochastic Lanczos quadrature logdet and its Hutchinson gradient:
 * against the exact logdet (sla_logdet, itself checked against LAPACK) and
 * the exact gradient by selected inversion, within the reported standard
 * error; the error falls like 1/sqrt(probes); determinism; errors. */
#include "test_util.h"

static void shift_diag(sla_matrix *A, double s)
{
    long long nnz = sla_matrix_nnz(A), n = sla_matrix_nrows(A);
    double *v = malloc((size_t)nnz * sizeof *v);
    memcpy(v, sla_matrix_values(A, 0), (size_t)nnz * sizeof *v);
    const sla_int *rp = sla_matrix_rowptr(A);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    for (long long i = 0; i < n; i++)
        for (sla_int k = rp[i]; k < rp[i + 1]; k++)
            if (ci[k] == i) v[k] += s;
    sla_matrix_set_values(NULL, A, 0, v);
    free(v);
    free(ci);
}

static void check_matrix(sla_ctx *ctx, const char *name, const sla_matrix *A)
{
    long long nnz = sla_matrix_nnz(A);
    double sg, exact, *gx = malloc((size_t)nnz * sizeof *gx), *g = malloc((size_t)nnz * sizeof *g);
    CHECK_OK(ctx, sla_logdet(ctx, A, 0, SLA_LOGDET_CHOLESKY, &sg, &exact, gx, NULL));
    sla_slq_options o;
    sla_slq_options_default(&o);
    o.probes = 64;
    o.lanczos_steps = 40;
    double est, se;
    sla_slq_info info;
    CHECK_OK(ctx, sla_logdet_slq(ctx, A, 0, &o, &est, &se, g, &info));
    CHECK(fabs(est - exact) <= 4.0 * se);
    CHECK(se < 0.01 * fabs(exact));
    CHECK(info.ritz_min > 0 && info.probes == 64 && info.solve_iterations > 0);
    double e64 = tu_reldiff(nnz, g, gx);
    /* deterministic for a seed */
    double est2;
    CHECK_OK(ctx, sla_logdet_slq(ctx, A, 0, &o, &est2, NULL, NULL, NULL));
    CHECK(est2 == est);
    /* Hutchinson's error falls like 1/sqrt(probes): 16x the probes, ~4x smaller */
    o.probes = 1024;
    double est3, se3;
    CHECK_OK(ctx, sla_logdet_slq(ctx, A, 0, &o, &est3, &se3, g, NULL));
    double e1024 = tu_reldiff(nnz, g, gx);
    CHECK(e1024 < e64 / 2.0);
    CHECK(e1024 < 0.2);
    CHECK(fabs(est3 - exact) <= 4.0 * se3);
    /* the diagonal of A^-1 (the largest entries) is estimated well */
    const sla_int *rp = sla_matrix_rowptr(A);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    double tr = 0.0, trx = 0.0;
    for (long long i = 0; i < sla_matrix_nrows(A); i++)
        for (sla_int k = rp[i]; k < rp[i + 1]; k++)
            if (ci[k] == i) { tr += g[k]; trx += gx[k]; }
    CHECK(fabs(tr - trx) < 0.02 * trx);
    printf("  %-18s logdet %.6f exact %.6f (se %.2g; 1024 probes: %.6f se %.2g), grad rel err %.3f (64) %.3f "
           "(1024), tr A^-1 %.4f vs %.4f\n",
           name, est, exact, se, est3, se3, e64, e1024, tr, trx);
    free(ci);
    free(gx);
    free(g);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    sla_matrix *P = NULL, *R = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 20, &P));
    CHECK_OK(ctx, sla_gen_random(ctx, 300, 5, SLA_GEN_SPD, 17, &R));
    {
        double l;
        sla_status st = sla_logdet_slq(ctx, P, 0, NULL, &l, NULL, NULL, NULL);
        if (st == SLA_ERR_UNAVAILABLE || !sla_method_available(SLA_METHOD_CHOLESKY)) {
            printf("slq or cholesky unavailable in this build: %s\n", sla_ctx_message(ctx));
            sla_matrix_destroy(&P);
            sla_matrix_destroy(&R);
            sla_ctx_destroy(&ctx);
            return tu_finish("test_slq (skipped)");
        }
    }
    check_matrix(ctx, "poisson2d 20", P);
    check_matrix(ctx, "random spd 300", R);

    /* errors */
    double l, se;
    CHECK_ST(ctx, sla_logdet_slq(ctx, P, 0, NULL, NULL, &se, NULL, NULL), SLA_ERR_ARGUMENT);
    CHECK_ST(ctx, sla_logdet_slq(ctx, P, 2, NULL, &l, &se, NULL, NULL), SLA_ERR_INDEX);
    sla_slq_options o;
    sla_slq_options_default(&o);
    o.probes = 0;
    CHECK_ERR(ctx, sla_logdet_slq(ctx, P, 0, &o, &l, &se, NULL, NULL), SLA_ERR_ARGUMENT, "probes");
    sla_matrix *C = NULL;
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 6, 20, 0, &C));
    CHECK_ERR(ctx, sla_logdet_slq(ctx, C, 0, NULL, &l, &se, NULL, NULL), SLA_ERR_ARGUMENT, "not symmetric");
    shift_diag(P, -5.0); /* indefinite */
    CHECK_ERR(ctx, sla_logdet_slq(ctx, P, 0, NULL, &l, &se, NULL, NULL), SLA_ERR_NOT_SPD, "positive definite");

    /* allocation failures */
    shift_diag(P, 5.0);
    int ok = 0, nomem = 0;
    double *g = malloc((size_t)sla_matrix_nnz(P) * sizeof *g);
    o.probes = 3;
    for (long fail = 0; fail < 500 && !ok; fail++) {
        counter cnt = {0, fail, 0, 0};
        sla_allocator al = {count_malloc, count_free, &cnt};
        sla_ctx *c2 = NULL;
        sla_ctx_create(&c2);
        sla_ctx_set_allocator(c2, &al);
        sla_status st = sla_logdet_slq(c2, P, 0, &o, &l, &se, g, NULL);
        CHECK(cnt.live == 0);
        sla_ctx_destroy(&c2);
        if (cnt.failures == 0) {
            CHECK(st == SLA_OK);
            ok = 1;
        } else {
            CHECK(st == SLA_ERR_NOMEM);
            nomem++;
        }
    }
    CHECK(ok && nomem >= 2);
    free(g);
    sla_matrix_destroy(&C);
    sla_matrix_destroy(&P);
    sla_matrix_destroy(&R);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_slq");
}
