/* eigs (nonsymmetric, ARPACK dnaupd) and the generalized symmetric-definite
 * eigsh K x = lambda M x, with their eigenvalue VJPs: against dense LAPACK
 * dgeev / dsygvd, central finite differences on Re and Im separately, the
 * dot-product identity, multiple eigenvalues refused, options and bad
 * input. */
#include "test_util.h"

#include <complex.h>

/* A random n x n sparse nonsymmetric matrix: diagonal + about `per` entries a row. */
static sla_matrix *random_matrix(int n, int per, unsigned long long seed, double diag_spread)
{
    unsigned long long s = seed * 7919 + 3;
    int cap = n * (per + 1);
    sla_int *ri = malloc((size_t)cap * sizeof *ri), *ci = malloc((size_t)cap * sizeof *ci);
    double *v = malloc((size_t)cap * sizeof *v);
    int q = 0;
    for (int i = 0; i < n; i++) {
        ri[q] = i;
        ci[q] = i;
        v[q++] = diag_spread * tu_rand(&s);
        for (int t = 0; t < per; t++) {
            int j = (int)((tu_rand(&s) + 1.0) * 0.5 * n);
            if (j >= n) j = n - 1;
            ri[q] = i;
            ci[q] = j;
            v[q++] = tu_rand(&s);
        }
    }
    sla_matrix *A = NULL;
    sla_matrix_from_coo(NULL, n, n, q, ri, ci, SLA_F64, 1, v, NULL, &A);
    free(ri);
    free(ci);
    free(v);
    return A;
}

/* All eigenvalues of value array 0 by dgeev. */
static void dense_eigs(const sla_matrix *A, const double *dir, double h, double complex *lam)
{
    int n = (int)sla_matrix_nrows(A);
    long long nnz = sla_matrix_nnz(A);
    double *D = malloc((size_t)n * (size_t)n * sizeof *D), *wr = malloc((size_t)n * sizeof *wr),
           *wi = malloc((size_t)n * sizeof *wi);
    sla_matrix_to_dense(NULL, A, 0, D, n);
    if (dir) {
        sla_int *ri = malloc((size_t)nnz * sizeof *ri), *ci = malloc((size_t)nnz * sizeof *ci);
        sla_matrix_get_rowind(A, ri);
        sla_matrix_get_colind(A, ci);
        for (long long p = 0; p < nnz; p++) D[(size_t)ci[p] * (size_t)n + (size_t)ri[p]] += h * dir[p];
        free(ri);
        free(ci);
    }
    LAPACKE_dgeev(LAPACK_COL_MAJOR, 'N', 'N', n, D, n, wr, wi, NULL, 1, NULL, 1);
    for (int i = 0; i < n; i++) lam[i] = wr[i] + I * wi[i];
    free(D);
    free(wr);
    free(wi);
}

static double complex nearest(int n, const double complex *lam, double complex z)
{
    double complex best = lam[0];
    for (int i = 1; i < n; i++)
        if (cabs(lam[i] - z) < cabs(best - z)) best = lam[i];
    return best;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x > y ? -1 : x < y;
}

/* The k best scores of the dense spectrum equal those of the computed
 * eigenvalues (score: |l| for LM, Re l for LR, -|l - sigma| shift-invert). */
static double score(int kind, double complex l, double sigma)
{
    return kind == 0 ? cabs(l) : kind == 1 ? creal(l) : -cabs(l - sigma);
}

static void check_eigs(sla_ctx *ctx, const char *name, const sla_matrix *A, sla_eigs_which which, int k,
                       bool si, double sigma, int kind)
{
    int n = (int)sla_matrix_nrows(A);
    double complex *lam = malloc((size_t)n * sizeof *lam);
    dense_eigs(A, NULL, 0.0, lam);
    sla_eigs_options o;
    sla_eigs_options_default(&o);
    o.k = k;
    o.which = which;
    o.shift_invert = si;
    o.sigma = sigma;
    double *wr = malloc((size_t)k * sizeof *wr), *wi = malloc((size_t)k * sizeof *wi),
           *res = malloc((size_t)k * sizeof *res), *vr = malloc((size_t)n * (size_t)k * sizeof *vr);
    sla_eigs_info info;
    CHECK_OK(ctx, sla_eigs(ctx, A, 0, &o, wr, wi, vr, n, res, &info));
    CHECK(info.converged && info.nconv == k);
    double *s1 = malloc((size_t)n * sizeof *s1), *s2 = malloc((size_t)k * sizeof *s2);
    double scale = 0.0;
    for (int i = 0; i < n; i++) {
        s1[i] = score(kind, lam[i], sigma);
        scale = fmax(scale, cabs(lam[i]));
    }
    for (int j = 0; j < k; j++) {
        double complex z = wr[j] + I * wi[j];
        double err = cabs(nearest(n, lam, z) - z) / scale;
        if (!(err < 1e-9)) fprintf(stderr, "%s: eigenvalue %d = %g%+gi off by %g\n", name, j, wr[j], wi[j], err);
        CHECK(err < 1e-9);
        CHECK(res[j] < 1e-8);
        s2[j] = score(kind, z, sigma);
        if (j > 0 && wi[j] < 0) CHECK(wr[j] == wr[j - 1] && wi[j] == -wi[j - 1]); /* pairs adjacent */
    }
    qsort(s1, (size_t)n, sizeof *s1, cmp_desc);
    qsort(s2, (size_t)k, sizeof *s2, cmp_desc);
    for (int j = 0; j < k; j++) CHECK_CLOSE(s2[j], s1[j], 1e-8);
    printf("%s which=%s k=%d%s: max residual %.2e, %lld iterations, %s\n", name, sla_eigs_which_name(which), k,
           si ? " shift-invert" : "", info.max_residual, (long long)info.iterations, info.method);
    free(lam);
    free(wr);
    free(wi);
    free(res);
    free(vr);
    free(s1);
    free(s2);
}

/* VJP of Re and of Im of eigenvalue j against central differences (dense
 * dgeev tracking the nearest eigenvalue) along a random direction, and of
 * single entries. */
static void check_vjp(sla_ctx *ctx, const char *name, const sla_matrix *A, sla_eigs_which which, int k)
{
    int n = (int)sla_matrix_nrows(A);
    long long nnz = sla_matrix_nnz(A);
    sla_eigs_options o;
    sla_eigs_options_default(&o);
    o.k = k;
    o.which = which;
    double *wr = malloc((size_t)k * sizeof *wr), *wi = malloc((size_t)k * sizeof *wi),
           *vr = malloc((size_t)n * (size_t)k * sizeof *vr), *gA = malloc((size_t)nnz * sizeof *gA),
           *D = malloc((size_t)nnz * sizeof *D), *g = calloc((size_t)k, sizeof *g);
    double complex *lp = malloc((size_t)n * sizeof *lp), *lm = malloc((size_t)n * sizeof *lm);
    CHECK_OK(ctx, sla_eigs(ctx, A, 0, &o, wr, wi, vr, n, NULL, NULL));
    tu_fill(D, nnz, 99);
    const double h = 1e-6;
    dense_eigs(A, D, h, lp);
    dense_eigs(A, D, -h, lm);
    int ncomplex = 0;
    for (int j = 0; j < k; j++) {
        double complex z = wr[j] + I * wi[j];
        double complex d = (nearest(n, lp, z) - nearest(n, lm, z)) / (2 * h);
        if (wi[j] != 0.0) ncomplex++;
        for (int part = 0; part < 2; part++) {
            memset(g, 0, (size_t)k * sizeof *g);
            g[j] = 1.0;
            CHECK_OK(ctx, sla_eigs_vjp(ctx, A, 0, &o, k, wr, wi, vr, n, part ? NULL : g, part ? g : NULL, gA, NULL));
            double dot = 0.0, gn = 0.0;
            for (long long p = 0; p < nnz; p++) {
                dot += gA[p] * D[p];
                gn += fabs(gA[p] * D[p]);
            }
            double fd = part ? cimag(d) : creal(d);
            if (!(fabs(dot - fd) <= 1e-6 * fmax(gn, 1e-3)))
                fprintf(stderr, "%s: eigenvalue %d %s: vjp %.12g fd %.12g\n", name, j, part ? "Im" : "Re", dot, fd);
            CHECK(fabs(dot - fd) <= 1e-6 * fmax(gn, 1e-3));
        }
    }
    /* the sum over all with weights: linearity of the VJP (the adjoint
     * identity <gA, D> = <g, J D> for gr = 1, gi = 0.5 on every eigenvalue) */
    double *gi = malloc((size_t)k * sizeof *gi);
    for (int j = 0; j < k; j++) {
        g[j] = 1.0;
        gi[j] = 0.5;
    }
    CHECK_OK(ctx, sla_eigs_vjp(ctx, A, 0, &o, k, wr, wi, vr, n, g, gi, gA, NULL));
    double dot = 0.0, jd = 0.0, scale = 0.0;
    for (long long p = 0; p < nnz; p++) {
        dot += gA[p] * D[p];
        scale += fabs(gA[p] * D[p]);
    }
    for (int j = 0; j < k; j++) {
        double complex z = wr[j] + I * wi[j];
        double complex d = (nearest(n, lp, z) - nearest(n, lm, z)) / (2 * h);
        jd += creal(d) + 0.5 * cimag(d);
    }
    CHECK(fabs(dot - jd) <= 1e-6 * fmax(scale, 1e-3));
    printf("%s vjp: %d eigenvalues (%d complex) checked against central differences\n", name, k, ncomplex);
    free(wr);
    free(wi);
    free(vr);
    free(gA);
    free(D);
    free(g);
    free(gi);
    free(lp);
    free(lm);
}

/* ---- generalized ------------------------------------------------------- */

/* Symmetric random direction on the pattern of a symmetric matrix. */
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
                if (ri[q] == ci[p] && ci[q] == ri[p]) {
                    D[q] = D[p];
                    break;
                }
    free(ri);
    free(ci);
}

/* All eigenvalues of (K + h DK, M + h DM) by dsygvd, ascending. */
static void dense_gen(const sla_matrix *K, const sla_matrix *M, const double *DK, const double *DM, double h,
                      double *w)
{
    int n = (int)sla_matrix_nrows(K);
    double *a = malloc((size_t)n * (size_t)n * sizeof *a), *b = malloc((size_t)n * (size_t)n * sizeof *b);
    sla_matrix_to_dense(NULL, K, 0, a, n);
    sla_matrix_to_dense(NULL, M, 0, b, n);
    for (int t = 0; t < 2 && DK; t++) {
        const sla_matrix *X = t ? M : K;
        const double *Dx = t ? DM : DK;
        double *y = t ? b : a;
        long long nnz = sla_matrix_nnz(X);
        sla_int *ri = malloc((size_t)nnz * sizeof *ri), *ci = malloc((size_t)nnz * sizeof *ci);
        sla_matrix_get_rowind(X, ri);
        sla_matrix_get_colind(X, ci);
        for (long long p = 0; p < nnz; p++) y[(size_t)ci[p] * (size_t)n + (size_t)ri[p]] += h * Dx[p];
        free(ri);
        free(ci);
    }
    LAPACKE_dsygvd(LAPACK_COL_MAJOR, 1, 'N', 'U', n, a, n, b, n, w);
    free(a);
    free(b);
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
            ri[q] = i;
            ci[q] = j;
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

/* A random sparse SPD matrix: symmetric random off-diagonals, diagonal
 * dominant by `shift`. */
static sla_matrix *random_spd(int n, int per, unsigned long long seed, double shift)
{
    unsigned long long s = seed * 104729 + 7;
    int cap = n * (2 * per + 1);
    sla_int *ri = malloc((size_t)cap * sizeof *ri), *ci = malloc((size_t)cap * sizeof *ci);
    double *v = malloc((size_t)cap * sizeof *v), *rs = calloc((size_t)n, sizeof *rs);
    int q = 0;
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

static void check_gen(sla_ctx *ctx, const char *name, const sla_matrix *K, const sla_matrix *M, int k, bool si,
                      double sigma)
{
    int n = (int)sla_matrix_nrows(K);
    double *w = malloc((size_t)n * sizeof *w), *l = malloc((size_t)k * sizeof *l),
           *X = malloc((size_t)n * (size_t)k * sizeof *X), *res = malloc((size_t)k * sizeof *res);
    dense_gen(K, M, NULL, NULL, 0.0, w);
    sla_eigsh_options o;
    sla_eigsh_options_default(&o);
    o.k = k;
    o.shift_invert = si;
    o.sigma = sigma;
    sla_eigsh_info info;
    CHECK_OK(ctx, sla_eigsh_generalized(ctx, K, 0, M, 0, &o, l, X, n, res, &info));
    /* the k nearest sigma (0 without a shift), ascending */
    double c = si ? sigma : 0.0;
    int lo = 0;
    while (lo < n && w[lo] < c) lo++;
    int a = lo, b = lo; /* window [a, b) grown toward the nearer side */
    while (b - a < k) {
        if (a > 0 && (b >= n || c - w[a - 1] < w[b] - c)) a--;
        else b++;
    }
    double scale = fmax(fabs(w[0]), fabs(w[n - 1]));
    for (int i = 0; i < k; i++) {
        CHECK_CLOSE(l[i] / scale, w[a + i] / scale, 1e-10);
        CHECK(res[i] < 1e-8 * scale);
    }
    /* M-orthonormal */
    double *t = malloc((size_t)n * sizeof *t), orth = 0.0;
    for (int i = 0; i < k; i++) {
        sla_matvec(ctx, M, 0, 1, X + (size_t)i * n, n, t, n);
        for (int j = 0; j < k; j++) {
            double d = 0.0;
            for (int r = 0; r < n; r++) d += X[(size_t)j * n + r] * t[r];
            orth = fmax(orth, fabs(d - (i == j)));
        }
    }
    CHECK(orth < 1e-10);
    /* VJP of L = sum_i a_i l_i against central differences, K and M */
    long long nk = sla_matrix_nnz(K), nm = sla_matrix_nnz(M);
    double *DK = malloc((size_t)nk * sizeof *DK), *DM = malloc((size_t)nm * sizeof *DM),
           *gK = malloc((size_t)nk * sizeof *gK), *gM = malloc((size_t)nm * sizeof *gM),
           *al = malloc((size_t)k * sizeof *al), *wp = malloc((size_t)n * sizeof *wp),
           *wm = malloc((size_t)n * sizeof *wm);
    sym_direction(K, 5, DK);
    sym_direction(M, 6, DM);
    tu_fill(al, k, 7);
    CHECK_OK(ctx, sla_eigsh_generalized_vjp(ctx, K, 0, M, 0, k, l, X, n, al, NULL, 0, gK, gM));
    for (int part = 0; part < 2; part++) { /* K alone, then M alone */
        double h = 1e-6 * scale / fmax(1.0, scale);
        if (part) { /* one matrix moves, the other's direction is zero */
            double *z = calloc((size_t)nk, sizeof *z);
            dense_gen(K, M, z, DM, h, wp);
            dense_gen(K, M, z, DM, -h, wm);
            free(z);
        } else {
            double *z = calloc((size_t)nm, sizeof *z);
            dense_gen(K, M, DK, z, h, wp);
            dense_gen(K, M, DK, z, -h, wm);
            free(z);
        }
        double fd = 0.0, dot = 0.0, mag = 0.0;
        for (int i = 0; i < k; i++) fd += al[i] * (wp[a + i] - wm[a + i]) / (2 * h);
        long long nn = part ? nm : nk;
        const double *g = part ? gM : gK, *D = part ? DM : DK;
        for (long long p = 0; p < nn; p++) {
            dot += g[p] * D[p];
            mag += fabs(g[p] * D[p]);
        }
        if (!(fabs(dot - fd) <= 1e-6 * fmax(mag, 1e-6)))
            fprintf(stderr, "%s: gradient %s: vjp %.12g fd %.12g\n", name, part ? "M" : "K", dot, fd);
        CHECK(fabs(dot - fd) <= 1e-6 * fmax(mag, 1e-6));
    }
    /* zero eigenvector cotangents change nothing (test_eigs_vectors checks nonzero ones) */
    double *gv = calloc((size_t)n * (size_t)k, sizeof *gv), *gK2 = malloc((size_t)nk * sizeof *gK2);
    CHECK_OK(ctx, sla_eigsh_generalized_vjp(ctx, K, 0, M, 0, k, l, X, n, al, gv, n, gK2, NULL));
    for (long long p = 0; p < nk; p++) CHECK(gK2[p] == gK[p]);
    free(gK2);
    printf("%s generalized k=%d%s: max residual %.2e, M-orthogonality %.1e, %s\n", name, k,
           si ? " shift-invert" : "", info.max_residual, orth, info.method);
    free(w);
    free(l);
    free(X);
    free(res);
    free(t);
    free(DK);
    free(DM);
    free(gK);
    free(gM);
    free(al);
    free(wp);
    free(wm);
    free(gv);
}

/* X's pattern with nb value arrays X + t_b D, t_b = step * b (batched), or
 * the single array b alone (only >= 0). */
static sla_matrix *perturbed(const sla_matrix *X, const double *D, double step, int nb, int only)
{
    long long nnz = sla_matrix_nnz(X);
    int n = (int)sla_matrix_nrows(X), na = only >= 0 ? 1 : nb;
    sla_int *ri = malloc((size_t)nnz * sizeof *ri), *ci = malloc((size_t)nnz * sizeof *ci);
    double *v = malloc((size_t)nnz * (size_t)na * sizeof *v);
    const double *x = (const double *)sla_matrix_values(X, 0);
    sla_matrix_get_rowind(X, ri);
    sla_matrix_get_colind(X, ci);
    for (int a = 0; a < na; a++) {
        double t = step * (only >= 0 ? only : a);
        for (long long p = 0; p < nnz; p++) v[(size_t)a * nnz + p] = x[p] + t * D[p];
    }
    sla_matrix *Y = NULL;
    sla_matrix_from_coo(NULL, n, n, nnz, ri, ci, SLA_F64, na, v, NULL, &Y);
    free(ri);
    free(ci);
    free(v);
    return Y;
}

/* sla_eigsh_generalized_batch and its VJP: B value arrays of K with one M
 * (mb = 1, gM summed over the batch) or with B of M; each member against
 * dense dsygvd, the gradients against central differences of dsygvd. */
static void check_gen_batch(sla_ctx *ctx, const sla_matrix *K, const sla_matrix *M, int mb)
{
    enum { B = 3, k = 3 };
    int n = (int)sla_matrix_nrows(K);
    long long nk = sla_matrix_nnz(K), nm = sla_matrix_nnz(M);
    double *EK = malloc((size_t)nk * sizeof *EK), *EM = malloc((size_t)nm * sizeof *EM);
    sym_direction(K, 11, EK);
    sym_direction(M, 12, EM);
    for (long long q = 0; q < nm; q++) EM[q] *= 0.2; /* M_b stays positive definite */
    sla_matrix *KB = perturbed(K, EK, 0.1, B, -1), *MB = perturbed(M, EM, 0.1, mb, -1);
    double *l = malloc((size_t)B * k * sizeof *l), *X = malloc((size_t)B * k * n * sizeof *X),
           *res = malloc((size_t)B * k * sizeof *res), *w = malloc((size_t)n * sizeof *w),
           *wp = malloc((size_t)n * sizeof *wp), *wm = malloc((size_t)n * sizeof *wm);
    sla_eigsh_info info[B];
    sla_eigsh_options o;
    sla_eigsh_options_default(&o);
    o.k = k;
    CHECK_OK(ctx, sla_eigsh_generalized_batch(ctx, KB, MB, &o, l, X, res, info));
    double *al = malloc((size_t)B * k * sizeof *al), *gK = malloc((size_t)B * nk * sizeof *gK),
           *gM = malloc((size_t)mb * nm * sizeof *gM), *DK = malloc((size_t)nk * sizeof *DK),
           *DM = malloc((size_t)nm * sizeof *DM), *zk = calloc((size_t)nk, sizeof *zk),
           *zm = calloc((size_t)nm, sizeof *zm);
    tu_fill(al, B * k, 21);
    tu_fill(gM, mb * nm, 22); /* overwritten */
    CHECK_OK(ctx, sla_eigsh_generalized_batch_vjp(ctx, KB, MB, k, l, X, al, NULL, gK, gM));
    sym_direction(K, 23, DK);
    sym_direction(M, 24, DM);
    double fdM = 0.0, worst = 0.0; /* one M: d/dh sum_b al_b . l_b(K_b, M + h DM) */
    for (int b = 0; b < B; b++) {
        sla_matrix *Kb = perturbed(K, EK, 0.1, B, b), *Mb = perturbed(M, EM, 0.1, mb, mb == 1 ? 0 : b);
        dense_gen(Kb, Mb, NULL, NULL, 0.0, w);
        double scale = fmax(fabs(w[0]), fabs(w[n - 1]));
        for (int i = 0; i < k; i++) {
            CHECK_CLOSE(l[b * k + i] / scale, w[i] / scale, 1e-10);
            CHECK(res[b * k + i] < 1e-8 * scale);
            worst = fmax(worst, fabs(l[b * k + i] - w[i]) / scale);
        }
        CHECK(info[b].converged);
        double h = 1e-6, fd = 0.0, dot = 0.0, mag = 0.0;
        dense_gen(Kb, Mb, DK, zm, h, wp);
        dense_gen(Kb, Mb, DK, zm, -h, wm);
        for (int i = 0; i < k; i++) fd += al[b * k + i] * (wp[i] - wm[i]) / (2 * h);
        for (long long p = 0; p < nk; p++) dot += gK[(size_t)b * nk + p] * DK[p], mag += fabs(gK[(size_t)b * nk + p] * DK[p]);
        if (!(fabs(dot - fd) <= 1e-6 * fmax(mag, 1e-6)))
            fprintf(stderr, "gen batch %d: gK: vjp %.12g fd %.12g\n", b, dot, fd);
        CHECK(fabs(dot - fd) <= 1e-6 * fmax(mag, 1e-6));
        dense_gen(Kb, Mb, zk, DM, h, wp);
        dense_gen(Kb, Mb, zk, DM, -h, wm);
        fd = 0.0;
        for (int i = 0; i < k; i++) fd += al[b * k + i] * (wp[i] - wm[i]) / (2 * h);
        if (mb == 1) {
            fdM += fd;
        } else {
            dot = mag = 0.0;
            for (long long q = 0; q < nm; q++) dot += gM[(size_t)b * nm + q] * DM[q], mag += fabs(gM[(size_t)b * nm + q] * DM[q]);
            if (!(fabs(dot - fd) <= 1e-6 * fmax(mag, 1e-6)))
                fprintf(stderr, "gen batch %d: gM: vjp %.12g fd %.12g\n", b, dot, fd);
            CHECK(fabs(dot - fd) <= 1e-6 * fmax(mag, 1e-6));
        }
        sla_matrix_destroy(&Kb);
        sla_matrix_destroy(&Mb);
    }
    if (mb == 1) { /* the summed gradient of the one M */
        double dot = 0.0, mag = 0.0;
        for (long long q = 0; q < nm; q++) dot += gM[q] * DM[q], mag += fabs(gM[q] * DM[q]);
        if (!(fabs(dot - fdM) <= 1e-6 * fmax(mag, 1e-6))) fprintf(stderr, "gen batch: gM: vjp %.12g fd %.12g\n", dot, fdM);
        CHECK(fabs(dot - fdM) <= 1e-6 * fmax(mag, 1e-6));
    }
    /* M with a batch that is neither 1 nor K's; a member that fails names itself */
    sla_matrix *M2 = perturbed(M, EM, 0.1, 2, -1);
    CHECK_ERR(ctx, sla_eigsh_generalized_batch(ctx, KB, M2, &o, l, X, res, info), SLA_ERR_DIMENSION,
              "1 (shared) or K's 3");
    CHECK_ERR(ctx, sla_eigsh_generalized_batch_vjp(ctx, KB, M2, k, l, X, al, NULL, gK, gM), SLA_ERR_DIMENSION,
              "1 (shared) or K's 3");
    double *neg = malloc((size_t)nm * sizeof *neg);
    for (long long q = 0; q < nm; q++) neg[q] = -((const double *)sla_matrix_values(M, 0))[q];
    sla_matrix *MN = perturbed(M, EM, 0.1, B, -1);
    CHECK_OK(ctx, sla_matrix_set_values(ctx, MN, 2, neg));
    CHECK_ERR(ctx, sla_eigsh_generalized_batch(ctx, KB, MN, &o, l, X, res, info), SLA_ERR_NOT_SPD,
              "value array 2");
    printf("generalized batch (B = %d, %s M): largest eigenvalue error %.1e vs dsygvd, VJPs match central differences\n",
           B, mb == 1 ? "one" : "batched", worst);
    sla_matrix_destroy(&M2);
    sla_matrix_destroy(&MN);
    sla_matrix_destroy(&KB);
    sla_matrix_destroy(&MB);
    free(neg);
    free(EK);
    free(EM);
    free(l);
    free(X);
    free(res);
    free(w);
    free(wp);
    free(wm);
    free(al);
    free(gK);
    free(gM);
    free(DK);
    free(DM);
    free(zk);
    free(zm);
}

/* Upper triangular with a double (semisimple) eigenvalue 10 on top. */
static sla_matrix *double_eigenvalue(int n)
{
    sla_int *ri = malloc((size_t)n * 3 * sizeof *ri), *ci = malloc((size_t)n * 3 * sizeof *ci);
    double *v = malloc((size_t)n * 3 * sizeof *v);
    int q = 0;
    for (int i = 0; i < n; i++) {
        ri[q] = i, ci[q] = i, v[q++] = i < 2 ? 10.0 : 1.0 + 5.0 * i / n;
        if (i >= 1 && i + 1 < n) ri[q] = i, ci[q] = i + 1, v[q++] = 0.3;
        if (i + 3 < n) ri[q] = i, ci[q] = i + 3, v[q++] = -0.2;
    }
    sla_matrix *A = NULL;
    sla_matrix_from_coo(NULL, n, n, q, ri, ci, SLA_F64, 1, v, NULL, &A);
    free(ri);
    free(ci);
    free(v);
    return A;
}

int main(void)
{
    sla_ctx *ctx = NULL;
    CHECK_OK(ctx, sla_ctx_create(&ctx));
    if (!sla_has_feature("arpack")) {
        printf("test_eigs: ARPACK not in this build, skipped\n");
        sla_ctx_destroy(&ctx);
        return 0;
    }
    /* forward: random nonsymmetric (complex pairs), real files */
    sla_matrix *R = random_matrix(80, 4, 1, 1.0);
    check_eigs(ctx, "random80", R, SLA_EIGS_LM, 6, false, 0.0, 0);
    check_eigs(ctx, "random80", R, SLA_EIGS_LR, 5, false, 0.0, 1);
    check_eigs(ctx, "random80", R, SLA_EIGS_LM, 4, true, 0.3, 2);
    check_vjp(ctx, "random80", R, SLA_EIGS_LM, 6);
    sla_matrix *R2 = random_matrix(40, 3, 2, 4.0); /* mostly real spectrum */
    check_eigs(ctx, "random40", R2, SLA_EIGS_LR, 3, false, 0.0, 1);
    check_vjp(ctx, "random40", R2, SLA_EIGS_LR, 3);
    const char *files[] = {"west0067", "cage5"};
    for (int f = 0; f < 2; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.mtx", SLA_TEST_DATA, files[f]);
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_mm_read(ctx, path, SLA_F64, &A));
        if (!A) continue;
        check_eigs(ctx, files[f], A, SLA_EIGS_LM, 4, false, 0.0, 0);
        check_eigs(ctx, files[f], A, SLA_EIGS_LR, 4, false, 0.0, 1);
        check_eigs(ctx, files[f], A, SLA_EIGS_LM, 4, true, 0.1, 2);
        check_vjp(ctx, files[f], A, SLA_EIGS_LM, 4);
        sla_matrix_destroy(&A);
    }
    /* a split conjugate pair: find a k that cuts one, the note says so */
    {
        sla_eigs_options o;
        sla_eigs_options_default(&o);
        double wr[12], wi[12], vr[80 * 12], res[12];
        sla_eigs_info info;
        int found = 0;
        for (int k = 1; k <= 10 && !found; k++) {
            o.k = k;
            CHECK_OK(ctx, sla_eigs(ctx, R, 0, &o, wr, wi, vr, 80, res, &info));
            if (wi[k - 1] > 0.0 && (k == 1 || wi[k - 2] >= 0.0 || wr[k - 2] != wr[k - 1])) {
                bool lone = true;
                for (int j = 0; j < k - 1;) j += wi[j] != 0.0 ? 2 : 1, lone = j == k - 1;
                if (!lone && k > 1) continue;
                found = 1;
                CHECK(strstr(info.note, "returned alone") != NULL);
                CHECK(res[k - 1] < 1e-8);
                double g[12] = {0};
                g[k - 1] = 1.0;
                CHECK_ERR(ctx, sla_eigs_vjp(ctx, R, 0, &o, k, wr, wi, vr, 80, g, NULL, vr, NULL),
                          SLA_ERR_UNSUPPORTED, "ask eigs for k + 1");
            }
        }
        printf("split conjugate pair: %s\n", found ? "checked" : "none met");
    }
    /* multiple eigenvalue: the VJP refuses it */
    {
        sla_matrix *A = double_eigenvalue(30);
        sla_eigs_options o;
        sla_eigs_options_default(&o);
        o.k = 2;
        double wr[2], wi[2], vr[60], g[2] = {1.0, 0.0}, gA[200];
        CHECK_OK(ctx, sla_eigs(ctx, A, 0, &o, wr, wi, vr, 30, NULL, NULL));
        CHECK_CLOSE(wr[0], 10.0, 1e-10);
        CHECK_CLOSE(wr[1], 10.0, 1e-10);
        CHECK_ERR(ctx, sla_eigs_vjp(ctx, A, 0, &o, 2, wr, wi, vr, 30, g, NULL, gA, NULL), SLA_ERR_UNSUPPORTED,
                  "multiple");
        g[0] = 0.0; /* zero cotangents: nothing to refuse */
        CHECK_OK(ctx, sla_eigs_vjp(ctx, A, 0, &o, 2, wr, wi, vr, 30, g, NULL, gA, NULL));
        sla_matrix_destroy(&A);
    }
    /* generalized: random SPD pairs, 1D stiffness / consistent mass */
    sla_matrix *K = random_spd(60, 3, 3, 1.0), *M = random_spd(60, 2, 4, 2.0);
    check_gen(ctx, "random60", K, M, 4, false, 0.0);
    check_gen(ctx, "random60", K, M, 3, true, 1.0);
    check_gen_batch(ctx, K, M, 1);
    check_gen_batch(ctx, K, M, 3);
    sla_matrix *K1 = NULL, *M1 = NULL;
    fem_1d(100, &K1, &M1);
    check_gen(ctx, "fem1d", K1, M1, 5, false, 0.0);
    check_gen(ctx, "fem1d", K1, M1, 3, true, 2000.0);
    /* options */
    {
        sla_eigs_options o;
        sla_eigs_options_default(&o);
        CHECK_OK(ctx, sla_eigs_options_parse(ctx, "k=3, which=lr,sigma=0.5,ncv=12,factor_method=klu", &o));
        CHECK(o.k == 3 && o.which == SLA_EIGS_LR && o.shift_invert && o.sigma == 0.5 && o.ncv == 12 &&
              o.factor_method == SLA_METHOD_KLU);
        CHECK_ERR(ctx, sla_eigs_options_parse(ctx, "whitch=LM", &o), SLA_ERR_ARGUMENT, "which");
        CHECK_ERR(ctx, sla_eigs_options_parse(ctx, "which=LA", &o), SLA_ERR_ARGUMENT, "which");
        CHECK_ERR(ctx, sla_eigs_options_parse(ctx, "factor_method=cholesky", &o), SLA_ERR_ARGUMENT, "LU");
        CHECK(o.k == 3 && o.which == SLA_EIGS_LR); /* unchanged */
    }
    /* bad input */
    {
        sla_eigs_options o;
        sla_eigs_options_default(&o);
        double wr[80], wi[80], vr[80 * 10], g[80] = {1.0};
        o.k = 79;
        CHECK_ERR(ctx, sla_eigs(ctx, R, 0, &o, wr, wi, NULL, 80, NULL, NULL), SLA_ERR_ARGUMENT, "n - 1");
        o.k = 0;
        CHECK_ERR(ctx, sla_eigs(ctx, R, 0, &o, wr, wi, NULL, 80, NULL, NULL), SLA_ERR_ARGUMENT, "k = 0");
        o.k = 4;
        o.ncv = 5;
        CHECK_ERR(ctx, sla_eigs(ctx, R, 0, &o, wr, wi, NULL, 80, NULL, NULL), SLA_ERR_ARGUMENT, "k + 2");
        o.ncv = 0;
        CHECK_ERR(ctx, sla_eigs(ctx, R, 1, &o, wr, wi, NULL, 80, NULL, NULL), SLA_ERR_INDEX, "out of range");
        CHECK_ERR(ctx, sla_eigs(ctx, NULL, 0, &o, wr, wi, NULL, 80, NULL, NULL), SLA_ERR_ARGUMENT, "NULL");
        CHECK_ERR(ctx, sla_eigs(ctx, R, 0, &o, wr, wi, vr, 10, NULL, NULL), SLA_ERR_DIMENSION, "ldv");
        o.shift_invert = true;
        o.factor_method = SLA_METHOD_CG;
        CHECK_ERR(ctx, sla_eigs(ctx, R, 0, &o, wr, wi, NULL, 80, NULL, NULL), SLA_ERR_ARGUMENT, "LU method");
        sla_matrix *E = NULL;
        CHECK_OK(ctx, sla_mm_read(ctx, SLA_TEST_DATA "/lp_e226.mtx", SLA_F64, &E));
        CHECK_ERR(ctx, sla_eigs(ctx, E, 0, NULL, wr, wi, NULL, 80, NULL, NULL), SLA_ERR_DIMENSION, "not square");
        CHECK_ERR(ctx, sla_eigs_vjp(ctx, E, 0, NULL, 1, wr, wi, vr, 80, g, NULL, vr, NULL), SLA_ERR_DIMENSION,
                  "not square");
        sla_eigsh_options so;
        sla_eigsh_options_default(&so);
        so.k = 2;
        CHECK_ERR(ctx, sla_eigsh_generalized(ctx, K, 0, E, 0, &so, wr, NULL, 60, NULL, NULL), SLA_ERR_DIMENSION,
                  "not square");
        CHECK_ERR(ctx, sla_eigsh_generalized(ctx, K, 0, K1, 0, &so, wr, NULL, 60, NULL, NULL), SLA_ERR_DIMENSION,
                  "K is 60 x 60 but M is 100 x 100");
        CHECK_ERR(ctx, sla_eigsh_generalized(ctx, R, 0, R, 0, &so, wr, NULL, 80, NULL, NULL), SLA_ERR_ARGUMENT,
                  "not symmetric");
        /* M indefinite: -M */
        sla_matrix *Mn = NULL;
        CHECK_OK(ctx, sla_matrix_copy(ctx, M1, &Mn));
        long long nm = sla_matrix_nnz(Mn);
        double *v = malloc((size_t)nm * sizeof *v);
        memcpy(v, sla_matrix_values(Mn, 0), (size_t)nm * sizeof *v);
        for (long long p = 0; p < nm; p++) v[p] = -v[p];
        CHECK_OK(ctx, sla_matrix_set_values(ctx, Mn, 0, v));
        CHECK_ERR(ctx, sla_eigsh_generalized(ctx, K1, 0, Mn, 0, &so, wr, NULL, 100, NULL, NULL), SLA_ERR_NOT_SPD,
                  "M is not positive definite");
        so.k = 100;
        CHECK_ERR(ctx, sla_eigsh_generalized(ctx, K1, 0, M1, 0, &so, wr, NULL, 100, NULL, NULL), SLA_ERR_ARGUMENT,
                  "k = 100");
        free(v);
        sla_matrix_destroy(&Mn);
        sla_matrix_destroy(&E);
    }
    sla_matrix_destroy(&R);
    sla_matrix_destroy(&R2);
    sla_matrix_destroy(&K);
    sla_matrix_destroy(&M);
    sla_matrix_destroy(&K1);
    sla_matrix_destroy(&M1);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_eigs");
}
