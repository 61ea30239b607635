/* sla_zeigsh (Hermitian eigenpairs of complex matrices) and sla_zeigsh_vjp:
 * against dense LAPACKE zheev on generated Hermitian matrices (definite and
 * indefinite, LA/SA/LM/SM, with and without a shift) on the dense path, the
 * ARPACK path and shift-invert through a dense-LU mock backend; residuals,
 * orthonormality and the phase convention; the VJP against a dense
 * all-pairs formula and central differences along Hermitian changes of
 * each pair (Re and Im separately); refusals; the dense path with every
 * buffer ending at a guard page. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "test_util.h"

#include <sys/mman.h>
#include <unistd.h>

#include "ops/eigs_internal.h"
#include "solvers/zsolver.h"

typedef double _Complex zc;

static double urand(unsigned long long *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* A random sparse Hermitian n x n matrix: real diagonal shift + U(-1, 1),
 * a complex chain a_{i,i+1} and two random complex pairs per row. */
static sla_matrix *gen_herm_t(long long n, unsigned long long seed, double shift, sla_dtype dt)
{
    long long cap = 7 * n, m = 0;
    sla_int *ri = malloc((size_t)cap * sizeof *ri), *ci = malloc((size_t)cap * sizeof *ci);
    zc *v = malloc((size_t)cap * sizeof *v);
    unsigned long long s = seed * 2654435761ULL + 1;
    for (long long i = 0; i < n; i++) {
        ri[m] = ci[m] = i;
        v[m++] = shift + urand(&s);
        for (int e = 0; e < 3; e++) {
            long long j = e == 0 ? i + 1 : (long long)((urand(&s) + 1.0) * 0.5 * (double)n);
            if (j <= i || j >= n) continue;
            zc z = 0.5 * urand(&s) + 0.5 * urand(&s) * _Complex_I;
            ri[m] = i, ci[m] = j, v[m++] = z;
            ri[m] = j, ci[m] = i, v[m++] = conj(z);
        }
    }
    sla_matrix *A = NULL;
    float *f = malloc((size_t)(2 * m) * sizeof *f);
    for (long long q = 0; q < m; q++) f[2 * q] = (float)creal(v[q]), f[2 * q + 1] = (float)cimag(v[q]);
    sla_matrix_from_coo(NULL, n, n, m, ri, ci, dt, 1, dt == SLA_C64 ? (const void *)f : (const void *)v, NULL, &A);
    free(f);
    free(ri);
    free(ci);
    free(v);
    return A;
}

static sla_matrix *gen_herm(long long n, unsigned long long seed, double shift)
{
    return gen_herm_t(n, seed, shift, SLA_C128);
}

/* All eigenpairs (ascending), dense. Z holds the whole Hermitian matrix;
 * zheev reads its lower triangle ('L'), not the upper: with 'U', zhetrd's
 * zlatrd calls zgemv('N') with x a row of A or of the work array at a
 * stride, and OpenBLAS 0.3.21's zgemv_n (HASWELL/SKYLAKEX/SANDYBRIDGE, m %
 * 4 == 2) loads one element past the last x (x[n*incx], unused). For the
 * last row block that element lies up to n entries past the end of Z or
 * of LAPACKE's work array; ASan's allocator puts the work array at the end
 * of its mapped region and the read faults (SEGV under make test-asan).
 * With 'L' the element it reads lies inside both arrays. */
static void dense_eig(const sla_matrix *A, double *w, zc *Z)
{
    long long n = sla_matrix_nrows(A);
    sla_matrix_to_dense_z(NULL, A, 0, Z, n);
    LAPACKE_zheev(LAPACK_COL_MAJOR, 'V', 'L', (lapack_int)n, Z, (lapack_int)n, w);
}

/* ---- a dense LU backend (LAPACKE zgetrf) for the shift-invert path ---- */

typedef struct mock_num {
    lapack_int n, *ipiv;
    zc *LU;
} mock_num;

static sla_status m_analyze(sla_ctx *ctx, const sla_matrix *A, const sla__direct_opts *o, void **sym)
{
    (void)ctx, (void)o;
    sla_int *n = malloc(sizeof *n);
    *n = sla_matrix_nrows(A);
    *sym = n;
    return SLA_OK;
}

static sla_status m_factor(sla_ctx *ctx, void *sym, const sla_matrix *A, sla_int ib, void **num)
{
    sla_int n = *(sla_int *)sym;
    mock_num *F = malloc(sizeof *F);
    F->n = (lapack_int)n;
    F->LU = malloc((size_t)(n * n) * sizeof *F->LU);
    F->ipiv = malloc((size_t)n * sizeof *F->ipiv);
    sla_matrix_to_dense_z(ctx, A, ib, F->LU, n);
    if (LAPACKE_zgetrf(LAPACK_COL_MAJOR, F->n, F->n, F->LU, F->n, F->ipiv) != 0) {
        free(F->LU), free(F->ipiv), free(F);
        *num = NULL;
        return SLA_ERR_SINGULAR;
    }
    *num = F;
    return SLA_OK;
}

static sla_status m_solve(sla_ctx *ctx, void *sym, void *num, int op, sla_int nrhs, const sla__z *b, sla_int ldb,
                          sla__z *x, sla_int ldx)
{
    (void)ctx, (void)sym;
    mock_num *F = num;
    for (sla_int c = 0; c < nrhs; c++) memcpy(x + c * ldx, b + c * ldb, (size_t)F->n * sizeof *x);
    LAPACKE_zgetrs(LAPACK_COL_MAJOR, op == 0 ? 'N' : op == 1 ? 'T' : 'C', F->n, (lapack_int)nrhs, F->LU, F->n,
                   F->ipiv, x, (lapack_int)ldx);
    return SLA_OK;
}

static void m_free_num(void *num)
{
    mock_num *F = num;
    free(F->LU), free(F->ipiv), free(F);
}

static const sla__zdirect_ops mock_lu = {.name = "mock-lu", .analyze = m_analyze, .factor = m_factor,
                                         .solve = m_solve, .free_num = m_free_num, .free_sym = free};

/* ---- forward ---- */

/* The dense reference's choice for which/sigma: indices into ascending w. */
static void ref_pick(long long n, const double *w, sla_eig_which which, bool si, double sigma, int k, long long *idx)
{
    char *used = calloc((size_t)n, 1);
    for (int t = 0; t < k; t++) {
        long long best = -1;
        double bk = -INFINITY;
        for (long long i = 0; i < n; i++) {
            if (used[i]) continue;
            double l = w[i], key;
            if (si) {
                double mu = 1.0 / (l - sigma);
                key = which == SLA_EIG_LA ? mu : which == SLA_EIG_SA ? -mu : fabs(mu);
            } else {
                key = which == SLA_EIG_LA ? l : which == SLA_EIG_SA ? -l : which == SLA_EIG_LM ? fabs(l) : -fabs(l);
            }
            if (key > bk) bk = key, best = i;
        }
        if (best >= 0) used[best] = 1;
    }
    int t = 0;
    for (long long i = 0; i < n; i++)
        if (used[i]) idx[t++] = i;
    free(used);
}

/* Runs zeigsh (cfg NULL: the public entry) and checks it against zheev. */
static void check_fwd(sla_ctx *ctx, const char *name, const sla_matrix *A, const sla_eigsh_options *o, int k,
                      const sla__zeigsh_cfg *cfg, const char *method)
{
    long long n = sla_matrix_nrows(A);
    double *w = malloc((size_t)k * sizeof *w), *wr = malloc((size_t)n * sizeof *wr);
    zc *V = malloc((size_t)(n * k) * sizeof *V), *Z = malloc((size_t)(n * n) * sizeof *Z);
    zc *r = malloc((size_t)n * sizeof *r);
    long long *idx = malloc((size_t)k * sizeof *idx);
    sla_eigsh_info info;
    sla_status st = cfg ? sla__zeigsh_run(ctx, A, 0, o, k, w, V, &info, cfg) : sla_zeigsh(ctx, A, 0, o, k, w, V, &info);
    CHECK_ST(ctx, st, SLA_OK);
    CHECK(strstr(info.method, method) != NULL);
    dense_eig(A, wr, Z);
    ref_pick(n, wr, o->which, o->shift_invert, o->sigma, k, idx);
    double norm = fmax(fabs(wr[0]), fabs(wr[n - 1])), werr = 0, verr = 0, oerr = 0, res = 0;
    int phase_ok = 1;
    for (int i = 0; i < k && st == SLA_OK; i++) {
        const zc *v = V + (size_t)i * n, *z = Z + (size_t)idx[i] * n;
        werr = fmax(werr, fabs(w[i] - wr[idx[i]]) / norm);
        zc d = 0;
        for (long long q = 0; q < n; q++) d += conj(z[q]) * v[q];
        verr = fmax(verr, 1.0 - cabs(d));
        for (int j = 0; j <= i; j++) {
            zc g = 0;
            for (long long q = 0; q < n; q++) g += conj(V[(size_t)j * n + q]) * v[q];
            oerr = fmax(oerr, cabs(g - (i == j)));
        }
        sla__zspmv(A, 0, 0, v, r, 1);
        double rr = 0, big = -1;
        long long qm = 0;
        for (long long q = 0; q < n; q++) {
            rr += pow(cabs(r[q] - w[i] * v[q]), 2);
            if (cabs(v[q]) > big) big = cabs(v[q]), qm = q;
        }
        res = fmax(res, sqrt(rr) / norm);
        if (!(cimag(v[qm]) == 0.0 && creal(v[qm]) > 0.0)) phase_ok = 0;
    }
    CHECK(werr < 1e-11);
    CHECK(verr < 1e-9);
    CHECK(oerr < 1e-10);
    CHECK(res < 1e-9);
    CHECK(phase_ok);
    CHECK(info.converged && info.nconv == k && fabs(info.max_residual / norm - res) < 1e-9);
    printf("  %-34s n=%lld k=%d %-26s eig %.1e vec %.1e orth %.1e res %.1e its %lld\n", name, n, k, info.method,
           werr, verr, oerr, res, (long long)info.iterations);
    free(w), free(wr), free(V), free(Z), free(r), free(idx);
}

static void test_forward(sla_ctx *ctx)
{
    static const sla_eig_which wh[4] = {SLA_EIG_LA, SLA_EIG_SA, SLA_EIG_LM, SLA_EIG_SM};
    sla__zeigsh_cfg arpack = {.lu = NULL, .dense_n = -1, .dense_si_n = -1};
    sla__zeigsh_cfg si = {.lu = &mock_lu, .dense_n = -1, .dense_si_n = -1};
    sla_matrix *Ai = gen_herm(150, 1, 0.0), *Ad = gen_herm(150, 2, 4.0), *Ab = gen_herm(260, 3, 0.0);
    char name[64];
    for (int t = 0; t < 4; t++) {
        sla_eigsh_options o;
        sla_eigsh_options_default(&o);
        o.which = wh[t];
        snprintf(name, sizeof name, "dense indefinite %s", sla_eig_which_name(wh[t]));
        check_fwd(ctx, name, Ai, &o, 5, NULL, "dense");
        snprintf(name, sizeof name, "arpack definite %s", sla_eig_which_name(wh[t]));
        if (wh[t] != SLA_EIG_SM) check_fwd(ctx, name, Ad, &o, 4, &arpack, "arpack");
        snprintf(name, sizeof name, "arpack indefinite %s", sla_eig_which_name(wh[t]));
        if (wh[t] != SLA_EIG_SM) check_fwd(ctx, name, Ab, &o, 6, NULL, "arpack");
        snprintf(name, sizeof name, "shift-invert 0 %s", sla_eig_which_name(wh[t]));
        if (wh[t] == SLA_EIG_SM) check_fwd(ctx, name, Ai, &o, 5, &si, "shift-invert (mock-lu)");
        o.shift_invert = true;
        o.sigma = 0.3;
        snprintf(name, sizeof name, "dense sigma 0.3 %s", sla_eig_which_name(wh[t]));
        check_fwd(ctx, name, Ai, &o, 4, NULL, "dense");
        snprintf(name, sizeof name, "shift-invert sigma 0.3 %s", sla_eig_which_name(wh[t]));
        check_fwd(ctx, name, Ai, &o, 4, &si, "shift-invert (mock-lu)");
    }
    /* SM without a factorization and over the dense limit: regular mode, said so */
    sla_eigsh_options o;
    sla_eigsh_options_default(&o);
    o.which = SLA_EIG_SM;
    check_fwd(ctx, "arpack regular SM (definite)", Ad, &o, 3, &arpack, "arpack");
    sla_eigsh_info info;
    double w[3];
    zc V[3 * 150];
    CHECK_OK(ctx, sla__zeigsh_run(ctx, Ad, 0, &o, 3, w, V, &info, &arpack));
    CHECK(strstr(info.note, "SM: no complex factorization") != NULL);
    /* a shift without a factorization past the dense limit: refused */
    o.shift_invert = true;
    o.sigma = 0.1;
    CHECK_ERR(ctx, sla__zeigsh_run(ctx, Ad, 0, &o, 3, w, V, &info, &arpack), SLA_ERR_UNAVAILABLE,
              "complex direct solver");
    /* a real symmetric matrix agrees with sla_eigsh */
    sla_matrix *P = NULL;
    sla_gen_poisson(ctx, 2, 16, &P);
    sla_eigsh_options_default(&o);
    o.which = SLA_EIG_LA;
    o.k = 4;
    double wr[4], w4[4];
    zc VP[4 * 256];
    CHECK_OK(ctx, sla_eigsh(ctx, P, 0, &o, wr, NULL, 0, NULL, NULL));
    CHECK_OK(ctx, sla__zeigsh_run(ctx, P, 0, &o, 4, w4, VP, &info, &arpack));
    for (int i = 0; i < 4; i++) CHECK_CLOSE(w4[i], wr[i], 1e-11);
    sla_matrix_destroy(&P);
    sla_matrix_destroy(&Ai);
    sla_matrix_destroy(&Ad);
    sla_matrix_destroy(&Ab);
}

/* ---- the VJP ---- */

/* L = sum_j a_j l_j + |c_j^H v_j|^2 + sum_r h_r |v_j[r]|^2 (phase invariant);
 * gw = a, gV_j = 2 (c_j^H v_j) c_j + 2 h .* v_j. */
static double loss(long long n, int k, const double *w, const zc *V, const double *a, const zc *C, const double *h,
                   double *gw, zc *gV)
{
    double L = 0;
    for (int j = 0; j < k; j++) {
        const zc *v = V + (size_t)j * n, *c = C + (size_t)j * n;
        zc d = 0;
        double q = 0;
        for (long long r = 0; r < n; r++) d += conj(c[r]) * v[r], q += h[r] * pow(cabs(v[r]), 2);
        L += a[j] * w[j] + pow(cabs(d), 2) + q;
        if (gw) gw[j] = a[j];
        if (gV)
            for (long long r = 0; r < n; r++) gV[(size_t)j * n + r] = 2.0 * d * c[r] + 2.0 * h[r] * v[r];
    }
    return L;
}

static double eval_loss(sla_ctx *ctx, const sla_matrix *A, const sla_eigsh_options *o, int k,
                        const sla__zeigsh_cfg *cfg, const double *a, const zc *C, const double *h)
{
    long long n = sla_matrix_nrows(A);
    double *w = malloc((size_t)k * sizeof *w);
    zc *V = malloc((size_t)(n * k) * sizeof *V);
    sla_status st = sla__zeigsh_run(ctx, A, 0, o, k, w, V, NULL, cfg);
    double L = st == SLA_OK ? loss(n, k, w, V, a, C, h, NULL, NULL) : NAN;
    free(w), free(V);
    return L;
}

/* The VJP against the dense all-pairs formula and central differences of
 * the loss along Hermitian changes (Re, Im) of `npairs` stored pairs. */
static void check_vjp(sla_ctx *ctx, const char *name, const sla_matrix *A, const sla_eigsh_options *o, int k,
                      const sla__zeigsh_cfg *cfg, int npairs)
{
    long long n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *w = malloc((size_t)k * sizeof *w), *a = malloc((size_t)k * sizeof *a), *gw = malloc((size_t)k * sizeof *gw);
    double *h = malloc((size_t)n * sizeof *h), *wr = malloc((size_t)n * sizeof *wr);
    zc *V = malloc((size_t)(n * k) * sizeof *V), *C = malloc((size_t)(n * k) * sizeof *C);
    zc *gV = malloc((size_t)(n * k) * sizeof *gV), *gA = malloc((size_t)nnz * sizeof *gA);
    zc *ref = calloc((size_t)nnz, sizeof *ref), *Z = malloc((size_t)(n * n) * sizeof *Z), *u = malloc((size_t)n * sizeof *u);
    sla_int *ri = malloc((size_t)nnz * sizeof *ri), *ci = malloc((size_t)nnz * sizeof *ci);
    unsigned long long s = 77;
    for (int j = 0; j < k; j++) a[j] = urand(&s);
    for (long long q = 0; q < n * k; q++) C[q] = urand(&s) + urand(&s) * _Complex_I;
    for (long long q = 0; q < n; q++) h[q] = urand(&s);
    CHECK_OK(ctx, sla__zeigsh_run(ctx, A, 0, o, k, w, V, NULL, cfg));
    loss(n, k, w, V, a, C, h, gw, gV);
    CHECK_OK(ctx, sla_zeigsh_vjp(ctx, A, 0, k, w, V, gw, gV, gA));
    sla_matrix_get_rowind(A, ri);
    sla_matrix_get_colind(A, ci);

    /* dense: u_j = sum_{m != j} z_m (z_m^H g_j) / (l_j - mu_m) over all n pairs */
    dense_eig(A, wr, Z);
    for (int j = 0; j < k; j++) {
        const zc *v = V + (size_t)j * n, *g = gV + (size_t)j * n;
        long long jm = 0;
        double best = 0;
        for (long long m = 0; m < n; m++) {
            zc d = 0;
            for (long long r = 0; r < n; r++) d += conj(Z[m * n + r]) * v[r];
            if (cabs(d) > best) best = cabs(d), jm = m;
        }
        CHECK(best > 1.0 - 1e-9);
        memset(u, 0, (size_t)n * sizeof *u);
        for (long long m = 0; m < n; m++) {
            if (m == jm) continue;
            zc c = 0;
            for (long long r = 0; r < n; r++) c += conj(Z[m * n + r]) * g[r];
            c /= wr[jm] - wr[m];
            for (long long r = 0; r < n; r++) u[r] += c * Z[m * n + r];
        }
        for (long long p = 0; p < nnz; p++) ref[p] += (gw[j] * v[ri[p]] + u[ri[p]]) * conj(v[ci[p]]);
    }
    double num = 0, den = 0;
    for (long long p = 0; p < nnz; p++) num += pow(cabs(gA[p] - ref[p]), 2), den += pow(cabs(ref[p]), 2);
    double ge = sqrt(num / den);
    CHECK(ge < 1e-8);

    /* central differences: pair (r, c) moved as z -> z + t (Re) or z + i t (Im), a_cr = conj */
    sla_matrix *B = NULL;
    sla_matrix_copy(ctx, A, &B);
    const zc *v0 = (const zc *)sla_matrix_values(A, 0);
    zc *vals = malloc((size_t)nnz * sizeof *vals);
    double fe = 0;
    int done = 0;
    for (long long p = 0; p < nnz && done < npairs; p += 1 + (long long)(nnz / npairs / 2)) {
        if (ri[p] > ci[p]) continue;
        long long q = -1;
        for (long long t = 0; t < nnz; t++)
            if (ri[t] == ci[p] && ci[t] == ri[p]) q = t;
        for (int part = 0; part < (ri[p] == ci[p] ? 1 : 2); part++) {
            zc dir = part ? _Complex_I : 1.0;
            /* dL/dRe z = Re(g_p + conj(g_q)); dL/dIm z = Im(g_p + conj(g_q)); diagonal: Re g_p */
            zc geff = p == q ? creal(gA[p]) : gA[p] + conj(gA[q]);
            double an = part ? cimag(geff) : creal(geff), err = INFINITY;
            for (double hh = 1e-4; hh > 1e-7; hh /= 10) {
                double f[2];
                for (int sg = 0; sg < 2; sg++) {
                    memcpy(vals, v0, (size_t)nnz * sizeof *vals);
                    double t = sg ? -hh : hh;
                    vals[p] += t * dir;
                    if (q != p) vals[q] += t * conj(dir);
                    sla_matrix_set_values(ctx, B, 0, vals);
                    f[sg] = eval_loss(ctx, B, o, k, cfg, a, C, h);
                }
                err = fmin(err, fabs((f[0] - f[1]) / (2 * hh) - an) / fmax(fabs(an), 1e-3));
            }
            fe = fmax(fe, err);
        }
        done++;
    }
    CHECK(fe < 1e-6);
    printf("  %-34s n=%lld k=%d grad vs dense %.1e, fd %.1e over %d pairs\n", name, n, k, ge, fe, done);
    sla_matrix_destroy(&B);
    free(vals), free(w), free(a), free(gw), free(h), free(wr), free(V), free(C), free(gV), free(gA), free(ref);
    free(Z), free(u), free(ri), free(ci);
}

static void test_vjp(sla_ctx *ctx)
{
    sla__zeigsh_cfg dense = {.lu = NULL, .dense_n = 1000, .dense_si_n = 1000};
    sla__zeigsh_cfg arpack = {.lu = NULL, .dense_n = -1, .dense_si_n = -1};
    sla__zeigsh_cfg si = {.lu = &mock_lu, .dense_n = -1, .dense_si_n = -1};
    sla_matrix *Ai = gen_herm(40, 5, 0.0), *Ab = gen_herm(120, 6, 0.0);
    sla_eigsh_options o;
    sla_eigsh_options_default(&o);
    o.which = SLA_EIG_SA;
    check_vjp(ctx, "dense SA", Ai, &o, 3, &dense, 1000);
    o.which = SLA_EIG_LM;
    check_vjp(ctx, "dense LM", Ai, &o, 4, &dense, 1000);
    o.which = SLA_EIG_LA;
    check_vjp(ctx, "arpack LA", Ab, &o, 3, &arpack, 12);
    o.which = SLA_EIG_SM;
    check_vjp(ctx, "shift-invert SM", Ab, &o, 3, &si, 12);

    /* refusals: a phase-dependent loss, a degenerate pair with different gw */
    long long n = 40;
    int k = 3;
    double w[3], gw[3] = {1, 2, 3};
    zc V[3 * 40], gV[3 * 40];
    sla_complex *gA = malloc((size_t)sla_matrix_nnz(Ai) * sizeof *gA);
    CHECK_OK(ctx, sla__zeigsh_run(ctx, Ai, 0, &o, k, w, V, NULL, &dense));
    for (long long q = 0; q < n * k; q++) gV[q] = _Complex_I * V[q];
    CHECK_ERR(ctx, sla_zeigsh_vjp(ctx, Ai, 0, k, w, V, gw, gV, gA), SLA_ERR_UNSUPPORTED, "phase of eigenvector 0");
    CHECK_OK(ctx, sla_zeigsh_vjp(ctx, Ai, 0, k, w, V, gw, NULL, gA));
    double wd[3] = {w[0], w[0], w[2]};
    CHECK_ERR(ctx, sla_zeigsh_vjp(ctx, Ai, 0, k, wd, V, gw, NULL, gA), SLA_ERR_UNSUPPORTED, "degenerate");
    for (long long q = 0; q < n * k; q++) gV[q] = q < n ? V[q + n] : 0; /* mixes v_0 into v_1's gradient */
    gw[1] = 1;
    CHECK_ERR(ctx, sla_zeigsh_vjp(ctx, Ai, 0, k, wd, V, gw, gV, gA), SLA_ERR_UNSUPPORTED, "unitary mixing");
    free(gA);
    sla_matrix_destroy(&Ai);
    sla_matrix_destroy(&Ab);
}

/* A degenerate cluster (diag(B, B): every eigenvalue twice) with a loss
 * invariant within it, L = sum_j (l_j + sum_r h_r |v_j[r]|^2) over the
 * pair: accepted, and equal to central differences (the cluster's sum and
 * projector are smooth). */
static double cluster_loss(sla_ctx *ctx, const sla_matrix *A, const sla_eigsh_options *o, const double *h, double *w,
                           zc *V, double *gw, zc *gV)
{
    long long n = sla_matrix_nrows(A);
    sla__zeigsh_cfg dense = {.lu = NULL, .dense_n = 1000, .dense_si_n = 1000};
    if (sla__zeigsh_run(ctx, A, 0, o, 2, w, V, NULL, &dense) != SLA_OK) return NAN;
    double L = w[0] + w[1];
    for (int j = 0; j < 2; j++) {
        if (gw) gw[j] = 1.0;
        for (long long r = 0; r < n; r++) {
            L += h[r] * pow(cabs(V[j * n + r]), 2);
            if (gV) gV[j * n + r] = 2.0 * h[r] * V[j * n + r];
        }
    }
    return L;
}

static void test_cluster(sla_ctx *ctx)
{
    const long long nb = 20, n = 2 * nb;
    sla_matrix *B = gen_herm(nb, 11, 0.0);
    long long nzb = sla_matrix_nnz(B), nnz = 2 * nzb;
    sla_int *rb = malloc((size_t)nzb * sizeof *rb), *cb = malloc((size_t)nzb * sizeof *cb);
    sla_int *ri = malloc((size_t)nnz * sizeof *ri), *ci = malloc((size_t)nnz * sizeof *ci);
    zc *v = malloc((size_t)nnz * sizeof *v), *V = malloc((size_t)(2 * n) * sizeof *V), *gV = malloc((size_t)(2 * n) * sizeof *gV);
    zc *gA = malloc((size_t)nnz * sizeof *gA);
    double h[40], w[2], gw[2];
    sla_matrix_get_rowind(B, rb);
    sla_matrix_get_colind(B, cb);
    const zc *vb = (const zc *)sla_matrix_values(B, 0);
    for (long long p = 0; p < nnz; p++) {
        long long q = p % nzb, off = p < nzb ? 0 : nb;
        ri[p] = rb[q] + off, ci[p] = cb[q] + off, v[p] = vb[q];
    }
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, n, n, nnz, ri, ci, SLA_C128, 1, v, NULL, &A));
    sla_matrix_get_rowind(A, ri);
    sla_matrix_get_colind(A, ci);
    unsigned long long s = 5;
    for (long long r = 0; r < n; r++) h[r] = urand(&s);
    sla_eigsh_options o;
    sla_eigsh_options_default(&o);
    o.which = SLA_EIG_SA;
    cluster_loss(ctx, A, &o, h, w, V, gw, gV);
    CHECK(fabs(w[0] - w[1]) < 1e-12);
    CHECK_OK(ctx, sla_zeigsh_vjp(ctx, A, 0, 2, w, V, gw, gV, gA));
    sla_matrix *C = NULL;
    sla_matrix_copy(ctx, A, &C);
    const zc *v0 = (const zc *)sla_matrix_values(A, 0);
    double fe = 0;
    for (long long p = 0; p < nnz; p += 7) {
        long long q = sla_matrix_nnz(A);
        for (long long t = 0; t < nnz; t++)
            if (ri[t] == ci[p] && ci[t] == ri[p]) q = t;
        zc geff = p == q ? creal(gA[p]) : gA[p] + conj(gA[q]);
        double err = INFINITY;
        for (double hh = 1e-4; hh > 1e-7; hh /= 10) {
            double f[2];
            for (int sg = 0; sg < 2; sg++) {
                memcpy(v, v0, (size_t)nnz * sizeof *v);
                v[p] += sg ? -hh : hh;
                if (q != p) v[q] += sg ? -hh : hh;
                sla_matrix_set_values(ctx, C, 0, v);
                f[sg] = cluster_loss(ctx, C, &o, h, w, V, NULL, NULL);
            }
            err = fmin(err, fabs((f[0] - f[1]) / (2 * hh) - creal(geff)) / fmax(fabs(creal(geff)), 1e-3));
        }
        fe = fmax(fe, err);
    }
    CHECK(fe < 1e-6);
    printf("  %-34s n=%lld k=2 fd %.1e\n", "degenerate pair, invariant loss", n, fe);
    sla_matrix_destroy(&C);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&B);
    free(rb), free(cb), free(ri), free(ci), free(v), free(V), free(gV), free(gA);
}

/* complex64 storage, non-convergence, and allocation failures (no leaks,
 * SLA_ERR_NOMEM) on every path. */
static void test_misc(sla_ctx *ctx)
{
    sla_eigsh_options o;
    sla_eigsh_options_default(&o);
    o.which = SLA_EIG_SA;
    sla__zeigsh_cfg arpack = {.lu = NULL, .dense_n = -1, .dense_si_n = -1};
    sla__zeigsh_cfg si = {.lu = &mock_lu, .dense_n = -1, .dense_si_n = -1};
    sla__zeigsh_cfg dense = {.lu = NULL, .dense_n = 1000, .dense_si_n = 1000};
    sla_matrix *F = gen_herm_t(150, 4, 0.0, SLA_C64);
    check_fwd(ctx, "complex64 arpack SA", F, &o, 4, &arpack, "arpack");
    sla_matrix_destroy(&F);

    sla_matrix *A = gen_herm(120, 8, 0.0);
    long long n = 120, nnz = sla_matrix_nnz(A);
    double w[3], gw[3] = {1, -2, 0.5};
    zc *V = malloc((size_t)(3 * n) * sizeof *V), *gV = malloc((size_t)(3 * n) * sizeof *gV);
    zc *gA = malloc((size_t)nnz * sizeof *gA);
    sla_eigsh_options q = o;
    q.maxiter = 1;
    q.ncv = 7;
    sla_eigsh_info info;
    CHECK_ERR(ctx, sla__zeigsh_run(ctx, A, 0, &q, 3, w, V, &info, &arpack), SLA_NOT_CONVERGED, "converged");
    CHECK(!info.converged && info.nconv < 3 && isnan(w[2]));

    CHECK_OK(ctx, sla__zeigsh_run(ctx, A, 0, &o, 3, w, V, NULL, &dense));
    unsigned long long s = 3;
    for (long long r = 0; r < 3 * n; r++) gV[r] = 2.0 * urand(&s) * V[r]; /* phase invariant */
    for (int mode = 0; mode < 4; mode++) {
        int ok = 0, nomem = 0;
        for (long fail = 0; fail < 500 && !ok; fail++) {
            counter cnt = {0, fail, 0, 0};
            sla_allocator al = {count_malloc, count_free, &cnt};
            sla_ctx *c2 = NULL;
            sla_ctx_create(&c2);
            sla_ctx_set_allocator(c2, &al);
            double w2[3];
            zc *V2 = malloc((size_t)(3 * n) * sizeof *V2);
            const sla__zeigsh_cfg *cfg = mode == 0 ? &dense : mode == 1 ? &arpack : &si;
            sla_eigsh_options m = o;
            if (mode == 2) m.which = SLA_EIG_SM;
            sla_status st = mode < 3 ? sla__zeigsh_run(c2, A, 0, &m, 3, w2, V2, NULL, cfg)
                                     : sla_zeigsh_vjp(c2, A, 0, 3, w, V, gw, gV, gA);
            free(V2);
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
        CHECK(ok && nomem >= 1);
    }
    free(V), free(gV), free(gA);
    sla_matrix_destroy(&A);
}

static void test_refusals(sla_ctx *ctx)
{
    double w[4];
    zc V[4 * 64];
    sla_complex g[1024];
    sla_eigsh_options o;
    sla_eigsh_options_default(&o);
    /* complex symmetric, A = A^T (a 1-D Helmholtz operator with absorption: 2 - k^2 (1 + 0.1 i) on
     * the diagonal, -1 beside it): not Hermitian */
    sla_matrix *H = NULL;
    sla_int hr[3 * 64], hc[3 * 64];
    zc hv[3 * 64];
    int m = 0;
    for (int i = 0; i < 64; i++) {
        hr[m] = hc[m] = i, hv[m++] = 2.0 - 0.2 * (1.0 + 0.1 * _Complex_I);
        if (i + 1 < 64) {
            hr[m] = i, hc[m] = i + 1, hv[m++] = -1.0 - 0.01 * _Complex_I;
            hr[m] = i + 1, hc[m] = i, hv[m++] = -1.0 - 0.01 * _Complex_I;
        }
    }
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 64, 64, m, hr, hc, SLA_C128, 1, hv, NULL, &H));
    CHECK_ERR(ctx, sla_zeigsh(ctx, H, 0, &o, 4, w, V, NULL), SLA_ERR_ARGUMENT, "complex symmetric");
    CHECK_ERR(ctx, sla_zeigsh_vjp(ctx, H, 0, 4, w, V, w, NULL, g), SLA_ERR_ARGUMENT, "not Hermitian");
    sla_matrix_destroy(&H);
    /* a general complex matrix: the measured error in the message */
    sla_int ri[3] = {0, 1, 1}, ci[3] = {1, 0, 1};
    zc vals[3] = {1.0 + 2.0 * _Complex_I, 1.0 + 2.0 * _Complex_I, 1.0};
    sla_matrix *G = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 2, 2, 3, ri, ci, SLA_C128, 1, vals, NULL, &G));
    CHECK_ERR(ctx, sla_zeigsh(ctx, G, 0, &o, 1, w, V, NULL), SLA_ERR_ARGUMENT, "not Hermitian (max |a_ij - conj(a_ji)|");
    sla_matrix_destroy(&G);
    sla_matrix *A = gen_herm(30, 9, 0.0);
    CHECK_ERR(ctx, sla_zeigsh(ctx, A, 0, &o, 30, w, V, NULL), SLA_ERR_ARGUMENT, "k = 30 must be in [1, n)");
    CHECK_ERR(ctx, sla_zeigsh(ctx, A, 1, &o, 2, w, V, NULL), SLA_ERR_INDEX, "out of range");
    CHECK_ERR(ctx, sla_zeigsh(ctx, A, 0, &o, 2, NULL, V, NULL), SLA_ERR_ARGUMENT, "NULL");
    o.ncv = 2;
    CHECK_ERR(ctx, sla_zeigsh(ctx, A, 0, &o, 2, w, V, NULL), SLA_ERR_ARGUMENT, "ncv");
    sla_matrix_destroy(&A);
}

/* An allocator that ends every buffer at a PROT_NONE page, so that a read
 * past the end of any buffer sla allocates faults (a crash fails the
 * test). The mapping's base and length sit in the 16 bytes before the
 * buffer (a whole page is kept in front for them). */
static void *guard_malloc(size_t size, void *user)
{
    (void)user;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), sz = (size + 15) / 16 * 16, len = (sz + pg - 1) / pg * pg;
    char *b = mmap(NULL, len + 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) return NULL;
    if (mprotect(b + pg + len, pg, PROT_NONE) != 0) {
        munmap(b, len + 2 * pg);
        return NULL;
    }
    char *p = b + pg + len - sz;
    ((size_t *)p)[-2] = (size_t)(uintptr_t)b;
    ((size_t *)p)[-1] = len + 2 * pg;
    return p;
}

static void guard_free(void *ptr, void *user)
{
    (void)user;
    if (ptr) munmap((void *)(uintptr_t)((size_t *)ptr)[-2], ((size_t *)ptr)[-1]);
}

/* The dense path (zheevd) with buffers that end at a guard page: with
 * uplo 'U', OpenBLAS 0.3.21's zgemv_n read one element past a strided row
 * of the dense matrix, up to n entries past its end (see dense_heev). */
static void test_guard_pages(void)
{
    sla_ctx *g = NULL;
    sla_ctx_create(&g);
    sla_allocator al = {guard_malloc, guard_free, NULL};
    sla_ctx_set_allocator(g, &al);
    sla_eigsh_options o;
    sla_eigsh_options_default(&o);
    o.which = SLA_EIG_SA;
    for (long long n = 38; n <= 150; n += 56) { /* 38, 94, 150: past zhetrd's block size 32 */
        sla_matrix *A = gen_herm(n, 12 + (unsigned long long)n, 0.0);
        double w[4], *wr = malloc((size_t)n * sizeof *wr);
        zc *V = malloc((size_t)(4 * n) * sizeof *V), *Z = malloc((size_t)(n * n) * sizeof *Z);
        sla_eigsh_info info;
        CHECK_OK(g, sla_zeigsh(g, A, 0, &o, 4, w, V, &info));
        CHECK(strstr(info.method, "dense") != NULL);
        dense_eig(A, wr, Z);
        double err = 0;
        for (int i = 0; i < 4; i++) err = fmax(err, fabs(w[i] - wr[i]));
        CHECK(err < 1e-12 * fmax(fabs(wr[0]), fabs(wr[n - 1])));
        printf("  %-34s n=%lld k=4 %-24s eig %.1e\n", "dense, guard pages after buffers", n, info.method, err);
        free(wr), free(V), free(Z);
        sla_matrix_destroy(&A);
    }
    sla_ctx_destroy(&g);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    test_forward(ctx);
    test_vjp(ctx);
    test_cluster(ctx);
    test_misc(ctx);
    test_refusals(ctx);
    test_guard_pages();
    sla_ctx_destroy(&ctx);
    return tu_finish("test_complex_eigsh");
}
