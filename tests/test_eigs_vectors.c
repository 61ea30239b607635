/* Eigenvector VJPs of the nonsymmetric eigs (sla_eigs_pairs_vjp, in the
 * gauge ||x|| = 1, largest component real positive) and of the generalized
 * symmetric-definite eigsh (sla_eigsh_generalized_vjp with gv): against
 * central differences of dense LAPACK dgeev / dsygvd eigenvectors put in
 * the same gauge (sign), with eigenvalue and eigenvector cotangents
 * together, real and complex eigenvalues; refusals of multiple eigenvalues,
 * lone complex vectors and non-invariant losses on degenerate clusters. */
#include "test_util.h"

#include <complex.h>

/* A random n x n sparse nonsymmetric matrix: diagonal + about `per` entries a row. */
static sla_matrix *random_matrix(int n, int per, unsigned long long seed)
{
    unsigned long long s = seed * 7919 + 3;
    int cap = n * (per + 1), q = 0;
    sla_int *ri = malloc((size_t)cap * sizeof *ri), *ci = malloc((size_t)cap * sizeof *ci);
    double *v = malloc((size_t)cap * sizeof *v);
    for (int i = 0; i < n; i++) {
        ri[q] = i, ci[q] = i, v[q++] = 2.0 * tu_rand(&s);
        for (int t = 0; t < per; t++) {
            int j = (int)((tu_rand(&s) + 1.0) * 0.5 * n);
            ri[q] = i, ci[q] = j >= n ? n - 1 : j, v[q++] = tu_rand(&s);
        }
    }
    sla_matrix *A = NULL;
    sla_matrix_from_coo(NULL, n, n, q, ri, ci, SLA_F64, 1, v, NULL, &A);
    free(ri);
    free(ci);
    free(v);
    return A;
}

/* Dense A + h D (D on A's pattern, NULL: none), column-major n x n. */
static double *dense_plus(const sla_matrix *A, const double *D, double h)
{
    int n = (int)sla_matrix_nrows(A);
    long long nnz = sla_matrix_nnz(A);
    double *a = malloc((size_t)n * (size_t)n * sizeof *a);
    sla_matrix_to_dense(NULL, A, 0, a, n);
    if (D) {
        sla_int *ri = malloc((size_t)nnz * sizeof *ri), *ci = malloc((size_t)nnz * sizeof *ci);
        sla_matrix_get_rowind(A, ri);
        sla_matrix_get_colind(A, ci);
        for (long long p = 0; p < nnz; p++) a[(size_t)ci[p] * (size_t)n + (size_t)ri[p]] += h * D[p];
        free(ri);
        free(ci);
    }
    return a;
}

/* The eigenpair of dense A + h D nearest z, its vector in the gauge: unit
 * norm, component m real positive (m fixed by the caller). */
static double complex dense_pair(const sla_matrix *A, const double *D, double h, double complex z, int m,
                                 double complex *x)
{
    int n = (int)sla_matrix_nrows(A);
    double *a = dense_plus(A, D, h), *wr = malloc((size_t)n * sizeof *wr), *wi = malloc((size_t)n * sizeof *wi),
           *V = malloc((size_t)n * (size_t)n * sizeof *V);
    LAPACKE_dgeev(LAPACK_COL_MAJOR, 'N', 'V', n, a, n, wr, wi, NULL, 1, V, n);
    int best = 0;
    for (int i = 1; i < n; i++)
        if (cabs(wr[i] + I * wi[i] - z) < cabs(wr[best] + I * wi[best] - z)) best = i;
    double complex lam = wr[best] + I * wi[best];
    int col = best, sgn = 1; /* a pair: columns (first, first + 1), the second member conjugated */
    if (wi[best] != 0.0 && best > 0 && wi[best - 1] == -wi[best] && wr[best - 1] == wr[best] && wi[best] < 0)
        col = best - 1, sgn = -1;
    double nrm = 0.0;
    for (int i = 0; i < n; i++) {
        x[i] = V[(size_t)col * n + i] + (wi[best] != 0.0 ? sgn * I * V[(size_t)(col + 1) * n + i] : 0.0);
        nrm += creal(x[i] * conj(x[i]));
    }
    double complex ph = conj(x[m]) / cabs(x[m]) / sqrt(nrm);
    for (int i = 0; i < n; i++) x[i] *= ph;
    free(a);
    free(wr);
    free(wi);
    free(V);
    return lam;
}

/* L = sum_j gwr_j Re l_j + gwi_j Im l_j + gvr_j . vr_j (dgeev layout) of the
 * dense eigenpairs of A + h D tracking the computed ones. */
static double eigs_loss(const sla_matrix *A, const double *D, double h, int k, const double *wr, const double *wi,
                        const double *vr, const double *gwr, const double *gwi, const double *gvr)
{
    int n = (int)sla_matrix_nrows(A);
    double complex *x = malloc((size_t)n * sizeof *x);
    double L = 0.0;
    for (int j = 0; j < k;) {
        const double *xr = vr + (size_t)j * n, *xi = wi[j] != 0.0 ? xr + n : NULL;
        int m = 0;
        double bm = -1;
        for (int i = 0; i < n; i++) {
            double am = xr[i] * xr[i] + (xi ? xi[i] * xi[i] : 0.0);
            if (am > bm) bm = am, m = i;
        }
        double complex l = dense_pair(A, D, h, wr[j] + I * wi[j], m, x);
        L += gwr[j] * creal(l) + gwi[j] * cimag(l);
        for (int i = 0; i < n; i++) L += gvr[(size_t)j * n + i] * creal(x[i]);
        if (xi) { /* the conjugate: l_{j+1} = conj(l), its vector conj(x) */
            L += gwr[j + 1] * creal(l) - gwi[j + 1] * cimag(l);
            for (int i = 0; i < n; i++) L += gvr[(size_t)(j + 1) * n + i] * cimag(x[i]);
        }
        j += xi ? 2 : 1;
    }
    free(x);
    return L;
}

static void check_eigs_vectors(sla_ctx *ctx, const char *name, const sla_matrix *A, sla_eigs_which which, int k)
{
    int n = (int)sla_matrix_nrows(A);
    long long nnz = sla_matrix_nnz(A);
    sla_eigs_options o;
    sla_eigs_options_default(&o);
    o.k = k;
    o.which = which;
    double *wr = malloc((size_t)k * sizeof *wr), *wi = malloc((size_t)k * sizeof *wi),
           *vr = malloc((size_t)n * (size_t)k * sizeof *vr), *gvr = malloc((size_t)n * (size_t)k * sizeof *gvr),
           *gwr = malloc((size_t)k * sizeof *gwr), *gwi = malloc((size_t)k * sizeof *gwi),
           *gA = malloc((size_t)nnz * sizeof *gA), *D = malloc((size_t)nnz * sizeof *D);
    CHECK_OK(ctx, sla_eigs(ctx, A, 0, &o, wr, wi, vr, n, NULL, NULL));
    if (wi[k - 1] > 0.0) k--; /* a lone complex eigenvalue at the end: leave it out */
    /* the gauge */
    int ncomplex = 0;
    for (int j = 0; j < k; j++) {
        const double *xr = vr + (size_t)j * n, *xi = wi[j] > 0.0 ? xr + n : NULL;
        if (wi[j] < 0.0) continue;
        ncomplex += xi != NULL;
        double nrm = 0.0, bm = -1.0;
        int m = 0;
        for (int i = 0; i < n; i++) {
            double am = xr[i] * xr[i] + (xi ? xi[i] * xi[i] : 0.0);
            nrm += am;
            if (am > bm) bm = am, m = i;
        }
        CHECK_CLOSE(nrm, 1.0, 1e-12);
        CHECK(xr[m] > 0.0 && (!xi || xi[m] == 0.0));
    }
    tu_fill(gvr, (long long)n * k, 11);
    tu_fill(gwr, k, 12);
    tu_fill(gwi, k, 13);
    tu_fill(D, nnz, 14);
    sla_eigs_info info;
    CHECK_OK(ctx, sla_eigs_pairs_vjp(ctx, A, 0, &o, k, wr, wi, vr, n, gwr, gwi, gvr, n, gA, &info));
    const double h = 1e-6;
    double fd = (eigs_loss(A, D, h, k, wr, wi, vr, gwr, gwi, gvr) - eigs_loss(A, D, -h, k, wr, wi, vr, gwr, gwi, gvr)) /
                (2 * h);
    double dot = 0.0, mag = 0.0;
    for (long long p = 0; p < nnz; p++) dot += gA[p] * D[p], mag += fabs(gA[p] * D[p]);
    if (!(fabs(dot - fd) <= 1e-6 * fmax(mag, 1e-3))) fprintf(stderr, "%s: vjp %.12g fd %.12g\n", name, dot, fd);
    CHECK(fabs(dot - fd) <= 1e-6 * fmax(mag, 1e-3));
    /* single entries */
    for (long long p = 0; p < nnz; p += nnz / 5 + 1) {
        memset(D, 0, (size_t)nnz * sizeof *D);
        D[p] = 1.0;
        fd = (eigs_loss(A, D, h, k, wr, wi, vr, gwr, gwi, gvr) - eigs_loss(A, D, -h, k, wr, wi, vr, gwr, gwi, gvr)) /
             (2 * h);
        CHECK(fabs(gA[p] - fd) <= 1e-6 * fmax(fabs(fd), 1.0));
    }
    /* eigenvalue cotangents alone: the same as sla_eigs_vjp */
    double *gA2 = malloc((size_t)nnz * sizeof *gA2);
    memset(gvr, 0, (size_t)n * (size_t)k * sizeof *gvr);
    CHECK_OK(ctx, sla_eigs_pairs_vjp(ctx, A, 0, &o, k, wr, wi, vr, n, gwr, gwi, gvr, n, gA, NULL));
    CHECK_OK(ctx, sla_eigs_vjp(ctx, A, 0, &o, k, wr, wi, vr, n, gwr, gwi, gA2, NULL));
    for (long long p = 0; p < nnz; p++) CHECK(gA[p] == gA2[p]);
    printf("%s eigs vectors which=%s k=%d (%d complex pairs): vjp vs central differences ok, condition %.3g\n",
           name, sla_eigs_which_name(which), k, ncomplex, info.max_condition);
    free(gA2);
    free(wr);
    free(wi);
    free(vr);
    free(gvr);
    free(gwr);
    free(gwi);
    free(gA);
    free(D);
}

/* ---- generalized ------------------------------------------------------- */

static sla_matrix *random_spd(int n, int per, unsigned long long seed, double shift)
{
    unsigned long long s = seed * 104729 + 7;
    int cap = n * (2 * per + 1), q = 0;
    sla_int *ri = malloc((size_t)cap * sizeof *ri), *ci = malloc((size_t)cap * sizeof *ci);
    double *v = malloc((size_t)cap * sizeof *v), *rs = calloc((size_t)n, sizeof *rs);
    for (int i = 0; i < n; i++)
        for (int t = 0; t < per; t++) {
            int j = (int)((tu_rand(&s) + 1.0) * 0.5 * n);
            if (j >= n) j = n - 1;
            if (j == i) continue;
            double x = tu_rand(&s);
            ri[q] = i, ci[q] = j, v[q++] = x;
            ri[q] = j, ci[q] = i, v[q++] = x;
            rs[i] += fabs(x);
            rs[j] += fabs(x);
        }
    for (int i = 0; i < n; i++) ri[q] = i, ci[q] = i, v[q++] = rs[i] + shift * (1.5 + tu_rand(&s));
    sla_matrix *A = NULL;
    sla_matrix_from_coo(NULL, n, n, q, ri, ci, SLA_F64, 1, v, NULL, &A);
    free(ri);
    free(ci);
    free(v);
    free(rs);
    return A;
}

/* A symmetric random direction on a symmetric matrix's pattern. */
static void sym_direction(const sla_matrix *A, unsigned long long seed, double *D)
{
    long long nnz = sla_matrix_nnz(A);
    tu_fill(D, nnz, seed);
    sla_int *ri = malloc((size_t)nnz * sizeof *ri), *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_rowind(A, ri);
    sla_matrix_get_colind(A, ci);
    for (long long p = 0; p < nnz; p++)
        if (ri[p] < ci[p])
            for (long long q = 0; q < nnz; q++)
                if (ri[q] == ci[p] && ci[q] == ri[p]) D[q] = D[p];
    free(ri);
    free(ci);
}

/* L = sum_i gl_i l_i + gv_i . x_i over the dense eigenpairs (dsygvd,
 * M-normalized) of (K + h DK, M + h DM) at positions a .. a + k - 1, each
 * vector's sign that of the computed X. */
static double gen_loss(const sla_matrix *K, const sla_matrix *M, const double *DK, const double *DM, double h, int a,
                       int k, const double *X, const double *gl, const double *gv)
{
    int n = (int)sla_matrix_nrows(K);
    double *ka = dense_plus(K, DK, h), *ma = dense_plus(M, DM, h), *w = malloc((size_t)n * sizeof *w);
    double *m0 = dense_plus(M, NULL, 0.0);
    LAPACKE_dsygvd(LAPACK_COL_MAJOR, 1, 'V', 'U', n, ka, n, ma, n, w);
    double L = 0.0;
    for (int i = 0; i < k; i++) {
        const double *z = ka + (size_t)(a + i) * n, *x = X + (size_t)i * n;
        double s = 0.0;
        for (int r = 0; r < n; r++)
            for (int c = 0; c < n; c++) s += z[r] * m0[(size_t)c * n + r] * x[c];
        s = s < 0 ? -1.0 : 1.0;
        L += gl[i] * w[a + i];
        for (int r = 0; r < n; r++) L += gv[(size_t)i * n + r] * s * z[r];
    }
    free(ka);
    free(ma);
    free(m0);
    free(w);
    return L;
}

static void check_gen_vectors(sla_ctx *ctx, const char *name, const sla_matrix *K, const sla_matrix *M, int k)
{
    int n = (int)sla_matrix_nrows(K);
    long long nk = sla_matrix_nnz(K), nm = sla_matrix_nnz(M);
    sla_eigsh_options o;
    sla_eigsh_options_default(&o);
    o.k = k; /* nearest 0: the smallest for SPD K */
    double *l = malloc((size_t)k * sizeof *l), *X = malloc((size_t)n * (size_t)k * sizeof *X),
           *gl = malloc((size_t)k * sizeof *gl), *gv = malloc((size_t)n * (size_t)k * sizeof *gv),
           *gK = malloc((size_t)nk * sizeof *gK), *gM = malloc((size_t)nm * sizeof *gM),
           *DK = malloc((size_t)nk * sizeof *DK), *DM = malloc((size_t)nm * sizeof *DM),
           *zK = calloc((size_t)nk, sizeof *zK), *zM = calloc((size_t)nm, sizeof *zM);
    CHECK_OK(ctx, sla_eigsh_generalized(ctx, K, 0, M, 0, &o, l, X, n, NULL, NULL));
    tu_fill(gl, k, 21);
    tu_fill(gv, (long long)n * k, 22);
    sym_direction(K, 23, DK);
    sym_direction(M, 24, DM);
    CHECK_OK(ctx, sla_eigsh_generalized_vjp(ctx, K, 0, M, 0, k, l, X, n, gl, gv, n, gK, gM));
    const double h = 1e-6;
    for (int part = 0; part < 2; part++) {
        const double *dk = part ? zK : DK, *dm = part ? DM : zM, *g = part ? gM : gK, *D = part ? DM : DK;
        double fd = (gen_loss(K, M, dk, dm, h, 0, k, X, gl, gv) - gen_loss(K, M, dk, dm, -h, 0, k, X, gl, gv)) / (2 * h);
        double dot = 0.0, mag = 0.0;
        for (long long p = 0; p < (part ? nm : nk); p++) dot += g[p] * D[p], mag += fabs(g[p] * D[p]);
        if (!(fabs(dot - fd) <= 1e-6 * fmax(mag, 1e-3)))
            fprintf(stderr, "%s: gradient %s: vjp %.12g fd %.12g\n", name, part ? "M" : "K", dot, fd);
        CHECK(fabs(dot - fd) <= 1e-6 * fmax(mag, 1e-3));
    }
    printf("%s generalized eigenvectors k=%d: K and M gradients vs central differences ok\n", name, k);
    free(l);
    free(X);
    free(gl);
    free(gv);
    free(gK);
    free(gM);
    free(DK);
    free(DM);
    free(zK);
    free(zM);
}

/* 1D stiffness and consistent mass of linear elements on n interior nodes. */
static void fem_1d(int n, sla_matrix **K, sla_matrix **M)
{
    double h = 1.0 / (n + 1);
    sla_int *ri = malloc(3 * (size_t)n * sizeof *ri), *ci = malloc(3 * (size_t)n * sizeof *ci);
    double *vk = malloc(3 * (size_t)n * sizeof *vk), *vm = malloc(3 * (size_t)n * sizeof *vm);
    int q = 0;
    for (int i = 0; i < n; i++)
        for (int j = i - 1; j <= i + 1; j++) {
            if (j < 0 || j >= n) continue;
            ri[q] = i, ci[q] = j;
            vk[q] = (i == j ? 2.0 : -1.0) / h;
            vm[q++] = (i == j ? 4.0 : 1.0) * h / 6.0;
        }
    sla_matrix_from_coo(NULL, n, n, q, ri, ci, SLA_F64, 1, vk, NULL, K);
    sla_matrix_from_coo(NULL, n, n, q, ri, ci, SLA_F64, 1, vm, NULL, M);
    free(ri);
    free(ci);
    free(vk);
    free(vm);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    CHECK_OK(ctx, sla_ctx_create(&ctx));
    if (!sla_has_feature("arpack")) {
        printf("test_eigs_vectors: ARPACK not in this build, skipped\n");
        sla_ctx_destroy(&ctx);
        return 0;
    }
    for (unsigned long long seed = 1; seed <= 3; seed++) {
        sla_matrix *A = random_matrix(60, 3, seed);
        char name[32];
        snprintf(name, sizeof name, "random60/%llu", seed);
        check_eigs_vectors(ctx, name, A, SLA_EIGS_LM, 5);
        check_eigs_vectors(ctx, name, A, SLA_EIGS_LR, 4);
        sla_matrix_destroy(&A);
    }
    {
        char path[512];
        snprintf(path, sizeof path, "%s/west0067.mtx", SLA_TEST_DATA);
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_mm_read(ctx, path, SLA_F64, &A));
        if (A) check_eigs_vectors(ctx, "west0067", A, SLA_EIGS_LM, 4);
        sla_matrix_destroy(&A);
    }
    /* refusals: a lone complex vector, a multiple eigenvalue */
    {
        sla_matrix *A = random_matrix(60, 3, 1);
        sla_eigs_options o;
        sla_eigs_options_default(&o);
        double wr[12], wi[12], vr[60 * 13], gvr[60 * 12] = {0}, gA[400];
        int found = 0;
        for (int k = 1; k <= 10 && !found; k++) {
            o.k = k;
            CHECK_OK(ctx, sla_eigs(ctx, A, 0, &o, wr, wi, vr, 60, NULL, NULL));
            int j = 0;
            while (j < k - 1) j += wi[j] != 0.0 ? 2 : 1;
            if (j == k - 1 && wi[k - 1] > 0.0) {
                found = 1;
                gvr[(size_t)(k - 1) * 60 + 2] = 1.0;
                CHECK_ERR(ctx, sla_eigs_pairs_vjp(ctx, A, 0, &o, k, wr, wi, vr, 60, NULL, NULL, gvr, 60, gA, NULL),
                          SLA_ERR_UNSUPPORTED, "ask eigs for k + 1");
            }
        }
        printf("lone complex eigenvector refused: %s\n", found ? "checked" : "none met");
        sla_matrix_destroy(&A);
        /* diag(10, 10, ...) + strictly upper: a double eigenvalue 10 */
        sla_int ri[90], ci[90];
        double v[90];
        int q = 0;
        for (int i = 0; i < 30; i++) {
            ri[q] = i, ci[q] = i, v[q++] = i < 2 ? 10.0 : 1.0 + 5.0 * i / 30;
            if (i + 3 < 30) ri[q] = i, ci[q] = i + 3, v[q++] = -0.2;
        }
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, 30, 30, q, ri, ci, SLA_F64, 1, v, NULL, &A));
        o.k = 2;
        CHECK_OK(ctx, sla_eigs(ctx, A, 0, &o, wr, wi, vr, 30, NULL, NULL));
        memset(gvr, 0, sizeof gvr);
        gvr[5] = 1.0;
        CHECK_ERR(ctx, sla_eigs_pairs_vjp(ctx, A, 0, &o, 2, wr, wi, vr, 30, NULL, NULL, gvr, 30, gA, NULL),
                  SLA_ERR_UNSUPPORTED, "multiple");
        gvr[5] = NAN;
        CHECK_ERR(ctx, sla_eigs_pairs_vjp(ctx, A, 0, &o, 2, wr, wi, vr, 30, NULL, NULL, gvr, 30, gA, NULL),
                  SLA_ERR_VALUE, "NaN");
        CHECK_ERR(ctx, sla_eigs_pairs_vjp(ctx, A, 0, &o, 2, wr, wi, vr, 30, NULL, NULL, gvr, 29, gA, NULL),
                  SLA_ERR_DIMENSION, "ldgv");
        sla_matrix_destroy(&A);
    }
    /* generalized */
    {
        sla_matrix *K = random_spd(60, 3, 3, 1.0), *M = random_spd(60, 2, 4, 2.0);
        check_gen_vectors(ctx, "random60", K, M, 4);
        sla_matrix_destroy(&K);
        sla_matrix_destroy(&M);
        fem_1d(80, &K, &M);
        check_gen_vectors(ctx, "fem1d80", K, M, 3);
        /* a degenerate pencil: K = diag(1, 1, 2, 3, ...), M = I */
        sla_int ri[40], ci[40];
        double vk[40], vm[40];
        for (int i = 0; i < 40; i++) ri[i] = ci[i] = i, vk[i] = i < 2 ? 1.0 : (double)i, vm[i] = 1.0;
        sla_matrix *Kd = NULL, *Md = NULL;
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, 40, 40, 40, ri, ci, SLA_F64, 1, vk, NULL, &Kd));
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, 40, 40, 40, ri, ci, SLA_F64, 1, vm, NULL, &Md));
        sla_eigsh_options o;
        sla_eigsh_options_default(&o);
        o.k = 3;
        double l[3], X[120], gl[3] = {0}, gv[120] = {0}, gK[40], gM[40];
        CHECK_OK(ctx, sla_eigsh_generalized(ctx, Kd, 0, Md, 0, &o, l, X, 40, NULL, NULL));
        for (int r = 0; r < 40; r++) gv[r] = X[40 + r]; /* g_0 = x_1: x_1 . g_0 != x_0 . g_1 */
        CHECK_ERR(ctx, sla_eigsh_generalized_vjp(ctx, Kd, 0, Md, 0, 3, l, X, 40, gl, gv, 40, gK, gM),
                  SLA_ERR_UNSUPPORTED, "not invariant");
        for (int r = 0; r < 40; r++) gv[r] = X[r], gv[40 + r] = X[40 + r]; /* |x_0|^2 + |x_1|^2: invariant */
        CHECK_OK(ctx, sla_eigsh_generalized_vjp(ctx, Kd, 0, Md, 0, 3, l, X, 40, gl, gv, 40, gK, gM));
        /* L = (|x_0|^2 + |x_1|^2) / 2 = trace(M_c^-1) / 2 on the cluster's block M_c = diag(m_00, m_11):
         * dL/dm_ii = -1 / (2 m_ii^2) = -1/2 = -(x_0[i]^2 + x_1[i]^2) / 2 */
        for (int i = 0; i < 40; i++) {
            double e = -0.5 * (X[i] * X[i] + X[40 + i] * X[40 + i]);
            if (!(fabs(gM[i] - e) < 1e-8)) fprintf(stderr, "gM[%d] = %.15g, expected %.15g (l = %g %g %g)\n", i, gM[i], e, l[0], l[1], l[2]);
            CHECK(fabs(gM[i] - e) < 1e-8);
            CHECK(fabs(gK[i]) < 1e-8);
        }
        sla_matrix_destroy(&Kd);
        sla_matrix_destroy(&Md);
        sla_matrix_destroy(&K);
        sla_matrix_destroy(&M);
    }
    sla_ctx_destroy(&ctx);
    return tu_finish("test_eigs_vectors");
}
