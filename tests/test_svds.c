/* svds (ARPACK on the normal operator, shift-invert through the augmented
 * matrix for the smallest), cond2 and the svds VJP: against dense LAPACK
 * dgesvd (dsyevd on the Gram matrix for the 10592 x 3016 Franz6), central
 * finite differences and the directional-derivative (dot-product)
 * identity with sign-invariant losses, rank deficiency, degenerate pairs,
 * options and bad input. */
#include "test_util.h"

/* A random m x n matrix with ~per_row entries per row and every row and
 * column touched. */
static sla_matrix *rand_rect(sla_ctx *ctx, sla_int m, sla_int n, int per_row, unsigned long long seed)
{
    sla_int cap = m * per_row + m + n, c = 0;
    sla_int *ri = malloc((size_t)cap * sizeof *ri), *ci = malloc((size_t)cap * sizeof *ci);
    double *v = malloc((size_t)cap * sizeof *v);
    unsigned long long s = seed;
    for (sla_int i = 0; i < (m > n ? m : n); i++, c++) {
        ri[c] = i % m;
        ci[c] = i % n;
        v[c] = 1.0 + tu_rand(&s);
    }
    for (sla_int i = 0; i < m; i++)
        for (int t = 0; t < per_row; t++, c++) {
            ri[c] = i;
            ci[c] = (sla_int)((tu_rand(&s) * 0.5 + 0.5) * (double)n) % n;
            v[c] = tu_rand(&s);
        }
    sla_matrix *A = NULL;
    sla_status st = sla_matrix_from_coo(ctx, m, n, c, ri, ci, SLA_F64, 1, v, NULL, &A);
    CHECK(st == SLA_OK);
    free(ri);
    free(ci);
    free(v);
    return A;
}

/* All singular values of A (descending), dense dgesvd. */
static void dense_sv(const sla_matrix *A, double *sv)
{
    lapack_int m = (lapack_int)sla_matrix_nrows(A), n = (lapack_int)sla_matrix_ncols(A);
    double *D = malloc((size_t)m * (size_t)n * sizeof *D), *sup = malloc((size_t)(m < n ? m : n) * sizeof *sup);
    sla_matrix_to_dense(NULL, A, 0, D, m);
    LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'N', 'N', m, n, D, m, sv, NULL, 1, NULL, 1, sup);
    free(D);
    free(sup);
}

/* The triplets are singular triplets: orthonormal, A v = s u, A^T u = s v. */
static void check_triplets(const sla_matrix *A, int k, const double *s, const double *U, const double *V,
                           double tol)
{
    long long m = sla_matrix_nrows(A), n = sla_matrix_ncols(A);
    double *r = malloc((size_t)(m + n) * sizeof *r);
    double smax = 0.0;
    for (int i = 0; i < k; i++) smax = fmax(smax, s[i]);
    for (int i = 0; i < k; i++) {
        for (int j = 0; j < k; j++) {
            double du = 0.0, dv = 0.0;
            for (long long q = 0; q < m; q++) du += U[i * m + q] * U[j * m + q];
            for (long long q = 0; q < n; q++) dv += V[i * n + q] * V[j * n + q];
            CHECK(fabs(du - (i == j)) < 1e-10 && fabs(dv - (i == j)) < 1e-10);
        }
        sla_matvec(NULL, A, 0, 1, V + i * n, n, r, m);
        double e = 0.0;
        for (long long q = 0; q < m; q++) e = fmax(e, fabs(r[q] - s[i] * U[i * m + q]));
        sla_matvec_transpose(NULL, A, 0, 1, U + i * m, m, r, n);
        for (long long q = 0; q < n; q++) e = fmax(e, fabs(r[q] - s[i] * V[i * n + q]));
        CHECK(e <= tol * smax);
        if (!(e <= tol * smax)) fprintf(stderr, "  triplet %d residual %.3g (s = %.17g)\n", i, e, s[i]);
    }
    free(r);
}

/* svds against dgesvd: k largest (descending) or smallest (ascending). */
static void check_vs_dense(sla_ctx *ctx, const sla_matrix *A, int k, sla_svds_which which, double tol)
{
    long long m = sla_matrix_nrows(A), n = sla_matrix_ncols(A), q = m < n ? m : n;
    double *sv = malloc((size_t)q * sizeof *sv), *s = malloc((size_t)k * sizeof *s);
    double *U = malloc((size_t)(m * k) * sizeof *U), *V = malloc((size_t)(n * k) * sizeof *V);
    dense_sv(A, sv);
    sla_svds_options o;
    sla_svds_options_default(&o);
    o.k = k;
    o.which = which;
    sla_svds_info info;
    CHECK_OK(ctx, sla_svds(ctx, A, 0, &o, s, U, V, &info));
    CHECK(info.converged && info.nconv == k && strcmp(info.reason, "converged") == 0);
    for (int i = 0; i < k; i++) CHECK_CLOSE(s[i], which == SLA_SVDS_LM ? sv[i] : sv[q - 1 - i], tol);
    check_triplets(A, k, s, U, V, 1e-9);
    CHECK(info.max_residual_v <= 1e-9 * sv[0] && info.max_residual_u <= 1e-9 * sv[0]);
    free(sv);
    free(s);
    free(U);
    free(V);
}

/* L = sum_i w_i s_i + (u_i . a_i)^2 + (v_i . b_i)^2: sign invariant. */
static double loss(long long m, long long n, int k, const double *s, const double *U, const double *V,
                   const double *W, double *gs, double *gU, double *gV)
{
    double L = 0.0;
    for (int i = 0; i < k; i++) {
        const double *a = W + 1 + i * (m + n), *b = a + m;
        double du = 0.0, dv = 0.0;
        for (long long r = 0; r < m; r++) du += a[r] * U[i * m + r];
        for (long long r = 0; r < n; r++) dv += b[r] * V[i * n + r];
        double w = 1.0 + 0.5 * i + W[0];
        L += w * s[i] + du * du + dv * dv;
        if (gs) gs[i] = w;
        if (gU)
            for (long long r = 0; r < m; r++) gU[i * m + r] = 2.0 * du * a[r];
        if (gV)
            for (long long r = 0; r < n; r++) gV[i * n + r] = 2.0 * dv * b[r];
    }
    return L;
}

static double eval_loss(sla_ctx *ctx, const sla_matrix *A, const sla_svds_options *o, const double *W)
{
    long long m = sla_matrix_nrows(A), n = sla_matrix_ncols(A);
    int k = (int)o->k;
    double *s = malloc((size_t)k * sizeof *s), *U = malloc((size_t)(m * k) * sizeof *U);
    double *V = malloc((size_t)(n * k) * sizeof *V);
    sla_status st = sla_svds(ctx, A, 0, o, s, U, V, NULL);
    double L = st == SLA_OK ? loss(m, n, k, s, U, V, W, NULL, NULL, NULL) : NAN;
    free(s);
    free(U);
    free(V);
    return L;
}

/* The VJP against central differences on every stored entry, and the
 * directional derivative along a random direction. */
static void check_vjp(sla_ctx *ctx, sla_matrix *A, int k, sla_svds_which which, bool values_only)
{
    long long m = sla_matrix_nrows(A), n = sla_matrix_ncols(A), nnz = sla_matrix_nnz(A);
    sla_svds_options o;
    sla_svds_options_default(&o);
    o.k = k;
    o.which = which;
    double *W = malloc((size_t)(1 + k * (m + n)) * sizeof *W);
    tu_fill(W, 1 + k * (m + n), 77 + (unsigned long long)k);
    W[0] = 0.0;
    double *s = malloc((size_t)k * sizeof *s), *U = malloc((size_t)(m * k) * sizeof *U);
    double *V = malloc((size_t)(n * k) * sizeof *V), *gs = malloc((size_t)k * sizeof *gs);
    double *gU = malloc((size_t)(m * k) * sizeof *gU), *gV = malloc((size_t)(n * k) * sizeof *gV);
    double *gA = malloc((size_t)nnz * sizeof *gA), *x = malloc((size_t)nnz * sizeof *x);
    double *D = malloc((size_t)nnz * sizeof *D);
    CHECK_OK(ctx, sla_svds(ctx, A, 0, &o, s, U, V, NULL));
    loss(m, n, k, s, U, V, W, gs, gU, gV);
    sla_svds_info info;
    CHECK_OK(ctx, sla_svds_vjp(ctx, A, 0, &o, k, s, U, V, gs, values_only ? NULL : gU, values_only ? NULL : gV,
                               gA, &info));
    if (values_only) memset(W + 1, 0, (size_t)(k * (m + n)) * sizeof *W); /* the loss of the values alone */
    memcpy(x, sla_matrix_values(A, 0), (size_t)nnz * sizeof *x);
    const double h = 1e-6;
    double gmax = 0.0, err = 0.0;
    for (long long p = 0; p < nnz; p++) gmax = fmax(gmax, fabs(gA[p]));
    for (long long p = 0; p < nnz; p++) {
        double x0 = x[p];
        x[p] = x0 + h;
        sla_matrix_set_values(ctx, A, 0, x);
        double Lp = eval_loss(ctx, A, &o, W);
        x[p] = x0 - h;
        sla_matrix_set_values(ctx, A, 0, x);
        double Lm = eval_loss(ctx, A, &o, W);
        x[p] = x0;
        err = fmax(err, fabs((Lp - Lm) / (2 * h) - gA[p]));
    }
    sla_matrix_set_values(ctx, A, 0, x);
    CHECK(err <= 1e-6 * gmax);
    if (getenv("SVDS_VERBOSE")) fprintf(stderr, "vjp k=%d which=%d vo=%d err %.3g gmax %.3g minres %lld\n", k, (int)which, (int)values_only, err, gmax, (long long)info.iterations);
    if (!(err <= 1e-6 * gmax))
        fprintf(stderr, "  vjp %s k=%d %s: FD error %.3g, max |gA| %.3g\n", which == SLA_SVDS_LM ? "LM" : "SM", k,
                values_only ? "values" : "values+vectors", err, gmax);
    /* <gA, D> = d/dt L(A + t D) */
    tu_fill(D, nnz, 5);
    double dot = 0.0, *y = malloc((size_t)nnz * sizeof *y);
    for (long long p = 0; p < nnz; p++) dot += gA[p] * D[p];
    for (long long p = 0; p < nnz; p++) y[p] = x[p] + h * D[p];
    sla_matrix_set_values(ctx, A, 0, y);
    double Lp = eval_loss(ctx, A, &o, W);
    for (long long p = 0; p < nnz; p++) y[p] = x[p] - h * D[p];
    sla_matrix_set_values(ctx, A, 0, y);
    double Lm = eval_loss(ctx, A, &o, W);
    sla_matrix_set_values(ctx, A, 0, x);
    CHECK_CLOSE(dot, (Lp - Lm) / (2 * h), 1e-6);
    free(y);
    free(W);
    free(s);
    free(U);
    free(V);
    free(gs);
    free(gU);
    free(gV);
    free(gA);
    free(x);
    free(D);
}

/* Franz6 (10592 x 3016): the 4 largest against dsyevd on A^T A. */
static void check_franz6(sla_ctx *ctx)
{
    sla_matrix *F = NULL;
    CHECK_OK(ctx, sla_mm_read(ctx, SLA_TEST_DATA "/Franz6_id1959_aug.mtx", SLA_F64, &F));
    if (!F) return;
    long long m = sla_matrix_nrows(F), n = sla_matrix_ncols(F), nnz = sla_matrix_nnz(F);
    CHECK(m == 10592 && n == 3016);
    sla_int *ri = malloc((size_t)nnz * sizeof *ri), *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_rowind(F, ri);
    sla_matrix_get_colind(F, ci);
    const double *v = sla_matrix_values(F, 0);
    double *G = calloc((size_t)(n * n), sizeof *G), *w = malloc((size_t)n * sizeof *w);
    long long p0 = 0;
    while (p0 < nnz) { /* rows are contiguous in CSR order */
        long long p1 = p0;
        while (p1 < nnz && ri[p1] == ri[p0]) p1++;
        for (long long a = p0; a < p1; a++)
            for (long long b = p0; b < p1; b++) G[ci[a] * n + ci[b]] += v[a] * v[b];
        p0 = p1;
    }
    LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'N', 'U', (lapack_int)n, G, (lapack_int)n, w);
    sla_svds_options o;
    sla_svds_options_default(&o);
    o.k = 4;
    double s[4], *U = malloc((size_t)(m * 4) * sizeof *U), *V = malloc((size_t)(n * 4) * sizeof *V);
    sla_svds_info info;
    CHECK_OK(ctx, sla_svds(ctx, F, 0, &o, s, U, V, &info));
    for (int i = 0; i < 4; i++) CHECK_CLOSE(s[i], sqrt(w[n - 1 - i]), 1e-10);
    check_triplets(F, 4, s, U, V, 1e-9);
    free(ri);
    free(ci);
    free(G);
    free(w);
    free(U);
    free(V);
    sla_matrix_destroy(&F);
}

static void check_errors(sla_ctx *ctx, sla_matrix *A)
{
    sla_svds_options o;
    sla_svds_options_default(&o);
    double s[40], c;
    long long m = sla_matrix_nrows(A), n = sla_matrix_ncols(A);
    o.k = (sla_int)(m < n ? m : n);
    CHECK_ERR(ctx, sla_svds(ctx, A, 0, &o, s, NULL, NULL, NULL), SLA_ERR_ARGUMENT, "min(m, n)");
    o.k = 0;
    CHECK_ERR(ctx, sla_svds(ctx, A, 0, &o, s, NULL, NULL, NULL), SLA_ERR_ARGUMENT, "k = 0");
    o.k = 2;
    CHECK_ERR(ctx, sla_svds(ctx, NULL, 0, &o, s, NULL, NULL, NULL), SLA_ERR_ARGUMENT, "A is NULL");
    CHECK_ERR(ctx, sla_svds(ctx, A, 0, &o, NULL, NULL, NULL, NULL), SLA_ERR_ARGUMENT, "s is NULL");
    CHECK_ERR(ctx, sla_svds(ctx, A, 3, &o, s, NULL, NULL, NULL), SLA_ERR_INDEX, "value array 3");
    o.ncv = 2;
    CHECK_ERR(ctx, sla_svds(ctx, A, 0, &o, s, NULL, NULL, NULL), SLA_ERR_ARGUMENT, "ncv");
    o.ncv = 0;
    double v0[40];
    for (int i = 0; i < 40; i++) v0[i] = i == 3 ? NAN : 1.0;
    o.v0 = v0;
    CHECK_ERR(ctx, sla_svds(ctx, A, 0, &o, s, NULL, NULL, NULL), SLA_ERR_VALUE, "v0");
    o.v0 = NULL;
    CHECK_ERR(ctx, sla_cond2(ctx, A, 0, NULL, NULL, NULL, NULL, NULL), SLA_ERR_ARGUMENT, "cond is NULL");
    CHECK_ERR(ctx, sla_cond2(ctx, NULL, 0, NULL, &c, NULL, NULL, NULL), SLA_ERR_ARGUMENT, "A is NULL");
    double U[4000], V[4000], gs[2] = {1, 1}, gA[4000];
    CHECK_ERR(ctx, sla_svds_vjp(ctx, A, 0, NULL, 0, s, U, V, gs, NULL, NULL, gA, NULL), SLA_ERR_ARGUMENT,
              "k = 0");
    CHECK_ERR(ctx, sla_svds_vjp(ctx, A, 0, NULL, 1000, s, U, V, gs, NULL, NULL, gA, NULL), SLA_ERR_ARGUMENT,
              "out of [1, min(m, n)]");
    CHECK_ERR(ctx, sla_svds_vjp(ctx, A, 0, NULL, 2, s, NULL, V, gs, NULL, NULL, gA, NULL), SLA_ERR_ARGUMENT,
              "NULL s, U, V or gA");
    /* options strings */
    sla_svds_options_default(&o);
    CHECK_OK(ctx, sla_svds_options_parse(ctx, "k=3, which=sm, tol=1e-12, ncv=30, grad_rtol=1e-10", &o));
    CHECK(o.k == 3 && o.which == SLA_SVDS_SM && o.tol == 1e-12 && o.ncv == 30 && o.grad_rtol == 1e-10);
    CHECK_ERR(ctx, sla_svds_options_parse(ctx, "wich=LM", &o), SLA_ERR_ARGUMENT, "which");
    CHECK_ERR(ctx, sla_svds_options_parse(ctx, "which=LA", &o), SLA_ERR_ARGUMENT, "LM or SM");
    CHECK_ERR(ctx, sla_svds_options_parse(ctx, "k=0", &o), SLA_ERR_ARGUMENT, "k");
    CHECK(o.k == 3);
    CHECK(strcmp(sla_svds_which_name(SLA_SVDS_SM), "SM") == 0);
}

/* Rank deficiency: a repeated column. cond2 is inf with SLA_ERR_SINGULAR;
 * svds SM falls back to Lanczos and reports s = 0. */
static void check_rank_deficient(sla_ctx *ctx)
{
    sla_int ri[] = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 2, 4, 1, 3, 5, 5};
    sla_int ci[] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 3, 2};
    double v[] = {1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, -1, 2, 3, 1, 2, 0.5};
    sla_matrix *R = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 6, 4, 17, ri, ci, SLA_F64, 1, v, NULL, &R));
    double c = 0.0, smin = -1.0;
    CHECK_ERR(ctx, sla_cond2(ctx, R, 0, NULL, &c, NULL, &smin, NULL), SLA_ERR_SINGULAR, "rank deficient");
    CHECK(isinf(c) && c > 0 && smin == 0.0);
    sla_svds_options o;
    sla_svds_options_default(&o);
    o.k = 1;
    o.which = SLA_SVDS_SM;
    double s[1], U[6], V[4];
    sla_svds_info info;
    CHECK_OK(ctx, sla_svds(ctx, R, 0, &o, s, U, V, &info));
    CHECK(s[0] < 1e-7);
    CHECK(strstr(info.note, "no factorization") != NULL);
    sla_matrix_destroy(&R);
}

/* Equal singular values (a diagonal block): the VJP refuses a loss that is
 * not invariant within the pair, and accepts one that is. */
static void check_degenerate(sla_ctx *ctx)
{
    sla_int ri[] = {0, 1, 2, 3, 4}, ci[] = {0, 1, 2, 3, 3};
    double v[] = {3, 3, 1, 0.5, 0.25};
    sla_matrix *Dg = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 5, 4, 5, ri, ci, SLA_F64, 1, v, NULL, &Dg));
    sla_svds_options o;
    sla_svds_options_default(&o);
    o.k = 2;
    double s[2], U[10], V[8], gA[5], gs[2] = {1.0, 2.0};
    CHECK_OK(ctx, sla_svds(ctx, Dg, 0, &o, s, U, V, NULL));
    CHECK_CLOSE(s[0], 3.0, 1e-12);
    CHECK_CLOSE(s[1], 3.0, 1e-12);
    CHECK_ERR(ctx, sla_svds_vjp(ctx, Dg, 0, &o, 2, s, U, V, gs, NULL, NULL, gA, NULL), SLA_ERR_UNSUPPORTED,
              "degenerate");
    gs[1] = 1.0; /* s_1 + s_2: invariant; d/dA_00 = d/dA_11 = 1 */
    CHECK_OK(ctx, sla_svds_vjp(ctx, Dg, 0, &o, 2, s, U, V, gs, NULL, NULL, gA, NULL));
    CHECK_CLOSE(gA[0], 1.0, 1e-10);
    CHECK_CLOSE(gA[1], 1.0, 1e-10);
    CHECK(fabs(gA[2]) < 1e-10);
    sla_matrix_destroy(&Dg);
}

/* The transpose option: explicit and scatter give the same triplets (bit
 * for bit on one thread), and agree to rounding on two threads, tall and
 * wide (for a wide A the Lanczos operator is A A^T: A^T applies first);
 * the option's names. */
static void check_transpose(sla_ctx *ctx)
{
    const sla_int shapes[3][2] = {{60, 25}, {12000, 300}, {300, 12000}};
    for (int sh = 0; sh < 3; sh++) {
        const sla_int m = shapes[sh][0], n = shapes[sh][1], q = m < n ? m : n;
        sla_matrix *A = rand_rect(ctx, m, n, 3, 80 + sh);
        const int k = 4;
        double s[2][4], *U[2], *V[2];
        for (int e = 0; e < 2; e++) {
            U[e] = malloc((size_t)m * k * sizeof **U);
            V[e] = malloc((size_t)n * k * sizeof **V);
        }
        (void)q;
        for (int nt = 1; nt <= 2; nt++) {
            sla_ctx_set_threads(ctx, nt);
            sla_svds_info info[2];
            for (int e = 0; e < 2; e++) {
                sla_svds_options o;
                sla_svds_options_default(&o);
                o.k = k;
                o.transpose = e ? SLA_TRANSPOSE_EXPLICIT : SLA_TRANSPOSE_SCATTER;
                CHECK_OK(ctx, sla_svds(ctx, A, 0, &o, s[e], U[e], V[e], &info[e]));
            }
            if (nt == 1) {
                CHECK(memcmp(s[0], s[1], sizeof s[0]) == 0);
                CHECK(memcmp(U[0], U[1], (size_t)m * k * sizeof **U) == 0);
                CHECK(memcmp(V[0], V[1], (size_t)n * k * sizeof **V) == 0);
                CHECK(info[0].nops == info[1].nops);
            } else {
                double d = 0.0;
                for (int i = 0; i < k; i++) d = fmax(d, fabs(s[0][i] - s[1][i]) / s[0][0]);
                CHECK(d <= 1e-12);
                printf("svds transpose %lld x %lld: explicit vs scatter on 2 threads, s differs by %.1e (relative)\n",
                       (long long)m, (long long)n, d);
            }
        }
        sla_ctx_set_threads(ctx, 0);
        for (int e = 0; e < 2; e++) {
            free(U[e]);
            free(V[e]);
        }
        sla_matrix_destroy(&A);
    }
    sla_svds_options o;
    sla_svds_options_default(&o);
    CHECK(o.transpose == SLA_TRANSPOSE_AUTO);
    CHECK_OK(ctx, sla_svds_options_parse(ctx, "transpose=explicit", &o));
    CHECK(o.transpose == SLA_TRANSPOSE_EXPLICIT);
    CHECK_OK(ctx, sla_svds_options_parse(ctx, "transpose=SCATTER", &o));
    CHECK(o.transpose == SLA_TRANSPOSE_SCATTER);
    CHECK_ERR(ctx, sla_svds_options_parse(ctx, "transpose=gather", &o), SLA_ERR_ARGUMENT, "transpose");
}

int main(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    sla_matrix *T = rand_rect(ctx, 60, 25, 3, 11), *Wd = rand_rect(ctx, 25, 60, 6, 12);
    sla_matrix *Ts = rand_rect(ctx, 14, 8, 2, 13), *Ws = rand_rect(ctx, 7, 13, 3, 14);
    {
        double s[2];
        sla_svds_options o;
        sla_svds_options_default(&o);
        o.k = 2;
        if (sla_svds(ctx, T, 0, &o, s, NULL, NULL, NULL) == SLA_ERR_UNAVAILABLE) {
            printf("test_svds: ARPACK not in this build, only the errors checked\n");
            check_errors(ctx, T);
            goto out;
        }
    }
    /* random tall and wide, both ends */
    check_vs_dense(ctx, T, 4, SLA_SVDS_LM, 1e-11);
    check_vs_dense(ctx, T, 3, SLA_SVDS_SM, 1e-10);
    check_vs_dense(ctx, Wd, 5, SLA_SVDS_LM, 1e-11);
    check_vs_dense(ctx, Wd, 3, SLA_SVDS_SM, 1e-10);
    /* lp_e226 (223 x 472) */
    {
        sla_matrix *L = NULL;
        CHECK_OK(ctx, sla_mm_read(ctx, SLA_TEST_DATA "/lp_e226.mtx", SLA_F64, &L));
        if (L) {
            check_vs_dense(ctx, L, 6, SLA_SVDS_LM, 1e-10);
            check_vs_dense(ctx, L, 2, SLA_SVDS_SM, 1e-8);
            double sv[223], c = 0.0;
            dense_sv(L, sv);
            CHECK_OK(ctx, sla_cond2(ctx, L, 0, NULL, &c, NULL, NULL, NULL));
            CHECK_CLOSE(c, sv[0] / sv[222], 1e-8);
        }
        sla_matrix_destroy(&L);
    }
    check_franz6(ctx);
    /* cond2 against the dense ratio */
    {
        double sv[25], c = 0.0, hi = 0.0, lo = 0.0;
        dense_sv(T, sv);
        sla_svds_info info;
        CHECK_OK(ctx, sla_cond2(ctx, T, 0, NULL, &c, &hi, &lo, &info));
        CHECK_CLOSE(c, sv[0] / sv[24], 1e-10);
        CHECK_CLOSE(hi, sv[0], 1e-12);
        CHECK_CLOSE(lo, sv[24], 1e-10);
        CHECK(strstr(info.method, "shift-invert") != NULL);
        dense_sv(Wd, sv);
        CHECK_OK(ctx, sla_cond2(ctx, Wd, 0, NULL, &c, NULL, NULL, NULL));
        CHECK_CLOSE(c, sv[0] / sv[24], 1e-10);
    }
    /* the VJP: values alone, values and vectors; both ends, tall and wide */
    check_vjp(ctx, Ts, 3, SLA_SVDS_LM, true);
    check_vjp(ctx, Ts, 3, SLA_SVDS_LM, false);
    check_vjp(ctx, Ts, 2, SLA_SVDS_SM, false);
    check_vjp(ctx, Ws, 3, SLA_SVDS_LM, false);
    check_vjp(ctx, Ws, 2, SLA_SVDS_SM, false);
    check_rank_deficient(ctx);
    check_degenerate(ctx);
    check_errors(ctx, T);
    check_transpose(ctx);
out:
    sla_matrix_destroy(&T);
    sla_matrix_destroy(&Wd);
    sla_matrix_destroy(&Ts);
    sla_matrix_destroy(&Ws);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_svds");
}
