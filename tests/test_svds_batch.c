/* Batched truncated SVD (sla_svds_batch, sla_svds_batch_vjp): every value
 * array of one pattern against dense LAPACK dgesvd of that array, the
 * batched VJP against the single-array VJP on the same triplets and
 * against a central difference along a random direction (sign-invariant
 * loss), start vectors per array, and the errors of one array reported by
 * index without stopping the others. */
#include "test_util.h"

#define NB 5

/* An m x n pattern with NB value arrays, each a different matrix (every
 * row and column touched). */
static sla_matrix *rand_batch(sla_ctx *ctx, sla_int m, sla_int n, int per_row, unsigned long long seed)
{
    sla_int cap = m * per_row + m + n, c = 0;
    sla_int *ri = malloc((size_t)cap * sizeof *ri), *ci = malloc((size_t)cap * sizeof *ci);
    double *v = malloc((size_t)(NB * cap) * sizeof *v);
    unsigned long long s = seed;
    for (sla_int i = 0; i < (m > n ? m : n); i++, c++) {
        ri[c] = i % m;
        ci[c] = i % n;
    }
    for (sla_int i = 0; i < m; i++)
        for (int t = 0; t < per_row; t++, c++) {
            ri[c] = i;
            ci[c] = (sla_int)((tu_rand(&s) * 0.5 + 0.5) * (double)n) % n;
        }
    for (int b = 0; b < NB; b++)
        for (sla_int p = 0; p < c; p++) v[b * c + p] = p < (m > n ? m : n) ? 1.0 + tu_rand(&s) : tu_rand(&s);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, m, n, c, ri, ci, SLA_F64, NB, v, NULL, &A));
    free(ri);
    free(ci);
    free(v);
    return A;
}

/* All singular values of array ib (descending), dense dgesvd. */
static void dense_sv(const sla_matrix *A, sla_int ib, double *sv)
{
    lapack_int m = (lapack_int)sla_matrix_nrows(A), n = (lapack_int)sla_matrix_ncols(A);
    double *D = malloc((size_t)m * (size_t)n * sizeof *D), *sup = malloc((size_t)(m < n ? m : n) * sizeof *sup);
    sla_matrix_to_dense(NULL, A, ib, D, m);
    LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'N', 'N', m, n, D, m, sv, NULL, 1, NULL, 1, sup);
    free(D);
    free(sup);
}

/* Largest residual of A_ib v = s u, A_ib^T u = s v, and orthonormality. */
static double triplet_error(const sla_matrix *A, sla_int ib, int k, const double *s, const double *U,
                            const double *V)
{
    long long m = sla_matrix_nrows(A), n = sla_matrix_ncols(A);
    double *r = malloc((size_t)(m + n) * sizeof *r), e = 0.0;
    for (int i = 0; i < k; i++) {
        for (int j = 0; j < k; j++) {
            double du = 0.0, dv = 0.0;
            for (long long q = 0; q < m; q++) du += U[i * m + q] * U[j * m + q];
            for (long long q = 0; q < n; q++) dv += V[i * n + q] * V[j * n + q];
            e = fmax(e, fmax(fabs(du - (i == j)), fabs(dv - (i == j))));
        }
        sla_matvec(NULL, A, ib, 1, V + i * n, n, r, m);
        for (long long q = 0; q < m; q++) e = fmax(e, fabs(r[q] - s[i] * U[i * m + q]) / s[0]);
        sla_matvec_transpose(NULL, A, ib, 1, U + i * m, m, r, n);
        for (long long q = 0; q < n; q++) e = fmax(e, fabs(r[q] - s[i] * V[i * n + q]) / s[0]);
    }
    free(r);
    return e;
}

/* L = sum_b sum_i w_i s_bi + (a_i . u_bi)^2 + (c_i . v_bi)^2 (sign invariant);
 * the cotangents when gs is not NULL. */
static double loss(long long m, long long n, int k, const double *s, const double *U, const double *V,
                   const double *W, double *gs, double *gU, double *gV)
{
    double L = 0.0;
    for (int b = 0; b < NB; b++)
        for (int i = 0; i < k; i++) {
            const double *a = W + i * (m + n), *c = a + m, *u = U + (b * k + i) * m, *v = V + (b * k + i) * n;
            double du = 0.0, dv = 0.0, w = 1.0 + 0.25 * i + 0.1 * b;
            for (long long r = 0; r < m; r++) du += a[r] * u[r];
            for (long long r = 0; r < n; r++) dv += c[r] * v[r];
            L += w * s[b * k + i] + du * du + dv * dv;
            if (!gs) continue;
            gs[b * k + i] = w;
            for (long long r = 0; r < m; r++) gU[(b * k + i) * m + r] = 2.0 * du * a[r];
            for (long long r = 0; r < n; r++) gV[(b * k + i) * n + r] = 2.0 * dv * c[r];
        }
    return L;
}

static void check_batch(sla_ctx *ctx, sla_matrix *A, int k, sla_svds_which which)
{
    const long long m = sla_matrix_nrows(A), n = sla_matrix_ncols(A), nnz = sla_matrix_nnz(A);
    const long long q = m < n ? m : n;
    const char *wn = which == SLA_SVDS_LM ? "LM" : "SM";
    sla_svds_options o;
    sla_svds_options_default(&o);
    o.k = k;
    o.which = which;
    double *s = malloc((size_t)(NB * k) * sizeof *s), *U = malloc((size_t)(NB * k * m) * sizeof *U);
    double *V = malloc((size_t)(NB * k * n) * sizeof *V), *sv = malloc((size_t)q * sizeof *sv);
    double *gs = malloc((size_t)(NB * k) * sizeof *gs), *gU = malloc((size_t)(NB * k * m) * sizeof *gU);
    double *gV = malloc((size_t)(NB * k * n) * sizeof *gV), *gA = malloc((size_t)(NB * nnz) * sizeof *gA);
    double *g1 = malloc((size_t)nnz * sizeof *g1), *W = malloc((size_t)(k * (m + n)) * sizeof *W);
    sla_svds_info info[NB];
    CHECK_OK(ctx, sla_svds_batch(ctx, A, &o, s, U, V, info));
    for (int b = 0; b < NB; b++) {
        CHECK(info[b].converged && info[b].nconv == k);
        dense_sv(A, b, sv);
        double e = 0.0;
        for (int i = 0; i < k; i++) {
            double ref = which == SLA_SVDS_LM ? sv[i] : sv[q - 1 - i];
            e = fmax(e, fabs(s[b * k + i] - ref) / sv[0]);
        }
        double et = triplet_error(A, b, k, s + b * k, U + b * k * m, V + b * k * n);
        CHECK(e <= 1e-11 && et <= 1e-9);
        if (!(e <= 1e-11 && et <= 1e-9))
            fprintf(stderr, "  %lldx%lld %s array %d: values vs dgesvd %.3g, triplets %.3g\n", m, n, wn, b, e, et);
    }
    /* the VJP: batched against the single-array one on the same triplets */
    tu_fill(W, k * (m + n), 31);
    loss(m, n, k, s, U, V, W, gs, gU, gV);
    CHECK_OK(ctx, sla_svds_batch_vjp(ctx, A, &o, k, s, U, V, gs, gU, gV, gA, info));
    double gmax = 0.0, diff = 0.0;
    for (int b = 0; b < NB; b++) {
        CHECK_OK(ctx, sla_svds_vjp(ctx, A, b, &o, k, s + b * k, U + b * k * m, V + b * k * n, gs + b * k,
                                   gU + b * k * m, gV + b * k * n, g1, NULL));
        for (long long p = 0; p < nnz; p++) {
            gmax = fmax(gmax, fabs(g1[p]));
            diff = fmax(diff, fabs(g1[p] - gA[b * nnz + p]));
        }
    }
    CHECK(diff <= 1e-10 * gmax);
    /* <gA, D> against a central difference of the whole batch's loss */
    double *x = malloc((size_t)(NB * nnz) * sizeof *x), *D = malloc((size_t)(NB * nnz) * sizeof *D);
    double *y = malloc((size_t)nnz * sizeof *y), dot = 0.0, Lpm[2];
    for (int b = 0; b < NB; b++) memcpy(x + b * nnz, sla_matrix_values(A, b), (size_t)nnz * sizeof *x);
    tu_fill(D, NB * nnz, 7);
    for (long long p = 0; p < NB * nnz; p++) dot += gA[p] * D[p];
    const double h = 1e-6;
    for (int t = 0; t < 2; t++) {
        for (int b = 0; b < NB; b++) {
            for (long long p = 0; p < nnz; p++) y[p] = x[b * nnz + p] + (t ? -h : h) * D[b * nnz + p];
            sla_matrix_set_values(ctx, A, b, y);
        }
        CHECK_OK(ctx, sla_svds_batch(ctx, A, &o, s, U, V, NULL));
        Lpm[t] = loss(m, n, k, s, U, V, W, NULL, NULL, NULL);
    }
    for (int b = 0; b < NB; b++) sla_matrix_set_values(ctx, A, b, x + b * nnz);
    double fd = (Lpm[0] - Lpm[1]) / (2 * h);
    CHECK(fabs(dot - fd) <= 1e-6 * fmax(1.0, fabs(fd)));
    if (!(fabs(dot - fd) <= 1e-6 * fmax(1.0, fabs(fd))) || !(diff <= 1e-10 * gmax))
        fprintf(stderr, "  %lldx%lld %s vjp: <gA, D> %.12g vs FD %.12g; batch vs single %.3g (max %.3g)\n", m, n,
                wn, dot, fd, diff, gmax);
    free(x);
    free(D);
    free(y);
    free(s);
    free(U);
    free(V);
    free(sv);
    free(gs);
    free(gU);
    free(gV);
    free(gA);
    free(g1);
    free(W);
}

/* Start vectors per array; an array that fails is named by index, and the
 * others are still computed. */
static void check_v0_and_errors(sla_ctx *ctx, sla_matrix *A)
{
    const long long m = sla_matrix_nrows(A), n = sla_matrix_ncols(A), q = m < n ? m : n;
    sla_svds_options o;
    sla_svds_options_default(&o);
    o.k = 2;
    double *v0 = malloc((size_t)(NB * q) * sizeof *v0), s[NB * 2], sv[64];
    tu_fill(v0, NB * q, 3);
    o.v0 = v0;
    CHECK_OK(ctx, sla_svds_batch(ctx, A, &o, s, NULL, NULL, NULL));
    for (int b = 0; b < NB; b++) {
        dense_sv(A, b, sv);
        CHECK_CLOSE(s[b * 2], sv[0], 1e-11);
    }
    v0[2 * q + 1] = NAN;
    for (int i = 0; i < NB * 2; i++) s[i] = -1.0;
    CHECK_ERR(ctx, sla_svds_batch(ctx, A, &o, s, NULL, NULL, NULL), SLA_ERR_VALUE, "item 2: svds: v0 has NaN");
    dense_sv(A, 4, sv);
    CHECK_CLOSE(s[8], sv[0], 1e-11); /* array 4 still done */
    o.v0 = NULL;
    o.k = (sla_int)q;
    CHECK_ERR(ctx, sla_svds_batch(ctx, A, &o, s, NULL, NULL, NULL), SLA_ERR_ARGUMENT, "min(m, n)");
    o.k = 0;
    CHECK_ERR(ctx, sla_svds_batch(ctx, A, &o, s, NULL, NULL, NULL), SLA_ERR_ARGUMENT, "k = 0");
    o.k = 2;
    CHECK_ERR(ctx, sla_svds_batch(ctx, A, &o, NULL, NULL, NULL, NULL), SLA_ERR_ARGUMENT, "s is NULL");
    CHECK_ERR(ctx, sla_svds_batch(ctx, NULL, &o, s, NULL, NULL, NULL), SLA_ERR_ARGUMENT, "A is NULL");
    CHECK_ERR(ctx, sla_svds_batch_vjp(ctx, A, &o, 2, s, NULL, NULL, NULL, NULL, NULL, NULL, NULL), SLA_ERR_ARGUMENT,
              "NULL s, U, V or gA");
    free(v0);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    sla_ctx_set_threads(ctx, 2); /* NB >= threads: the items run in parallel */
    sla_matrix *T = rand_batch(ctx, 40, 24, 3, 21), *Wd = rand_batch(ctx, 24, 40, 4, 22);
    {
        double s[NB];
        sla_svds_options o;
        sla_svds_options_default(&o);
        o.k = 1;
        if (sla_svds_batch(ctx, T, &o, s, NULL, NULL, NULL) == SLA_ERR_UNAVAILABLE) {
            printf("test_svds_batch: ARPACK not in this build, skipped\n");
            goto out;
        }
    }
    check_batch(ctx, T, 3, SLA_SVDS_LM);
    check_batch(ctx, T, 2, SLA_SVDS_SM);
    check_batch(ctx, Wd, 3, SLA_SVDS_LM);
    check_batch(ctx, Wd, 2, SLA_SVDS_SM);
    check_v0_and_errors(ctx, T);
    sla_ctx_set_threads(ctx, 1); /* the serial path */
    check_batch(ctx, Wd, 2, SLA_SVDS_SM);
out:
    sla_matrix_destroy(&T);
    sla_matrix_destroy(&Wd);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_svds_batch");
}
