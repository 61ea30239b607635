/* Complex selected inversion on UMFPACK's LU factor (sla__zumfpack_selinv,
 * lu_selinv.c + lu_selinv_num.c): z[k] = (A^-1)[col_k, row_k] against the
 * dense inverse from LAPACK's zgetrf + zgetri, on every path (auto, per
 * pivot, supernodes with BLAS blocks, supernodes without), for general,
 * complex symmetric and Hermitian (definite and indefinite) matrices,
 * matrices that force row pivoting (a structurally zero diagonal: every
 * pivot off it; tiny diagonals: threshold pivoting), and a Helmholtz
 * matrix whose separators give supernodes large enough for BLAS. Then the
 * complex path against the real one on a real matrix stored as complex,
 * the log-determinant gradient through the public calls (sla_zlogdet_vjp,
 * which factors a Hermitian definite A by CHOLMOD and so takes UMFPACK's
 * selected inversion on a refactorization; sla_zsolver_logdet_vjp on
 * UMFPACK and KLU solvers) against central finite differences, the
 * selected inverse against the n solves it replaced (sla__zinv_by_solves),
 * and the refusals. */
#include "test_util.h"

#include <complex.h>

#include "backends/zbackend.h"

typedef double _Complex zc;

/* A square test matrix: dense column-major D (zeros off the pattern) and
 * its CSR form. */
typedef struct {
    sla_int n, nnz;
    zc *D;
    sla_int *rowptr, *colind;
    zc *vals;
} tmat;

enum { GEN_GENERAL, GEN_SYMMETRIC, GEN_HERM_DEF, GEN_HERM_INDEF, GEN_ZERO_DIAG, GEN_TINY_DIAG };

static const char *kind_name[] = {"general", "complex symmetric", "hermitian definite", "hermitian indefinite",
                                  "zero diagonal", "tiny diagonal (symmetric)"};

static void tmat_csr(tmat *M)
{
    const sla_int n = M->n;
    M->rowptr = calloc((size_t)n + 1, sizeof *M->rowptr);
    M->nnz = 0;
    for (sla_int q = 0; q < n * n; q++)
        if (M->D[q] != 0.0) M->nnz++;
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

static zc zrand(unsigned long long *s) { return tu_rand(s) + tu_rand(s) * _Complex_I; }

/* Random sparse complex matrices of order n, about `dens` of the
 * off-diagonal entries stored. GEN_ZERO_DIAG: a dominant matrix with its
 * rows cyclically shifted by n/2 (no diagonal entries, so every pivot is
 * off the diagonal); GEN_TINY_DIAG: complex symmetric with diagonal 1e-3
 * times the off-diagonal scale and a dominant anti-diagonal (UMFPACK's
 * threshold rule pivots off the diagonal). */
static tmat gen(int kind, sla_int n, double dens, unsigned long long seed)
{
    tmat M = {.n = n};
    M.D = calloc((size_t)n * (size_t)n, sizeof *M.D);
    unsigned long long s = seed;
    for (sla_int j = 0; j < n; j++)
        for (sla_int i = j + 1; i < n; i++) {
            if (fabs(tu_rand(&s)) > dens) continue;
            zc v = zrand(&s), w = zrand(&s);
            switch (kind) {
            case GEN_GENERAL:
            case GEN_ZERO_DIAG: M.D[i + j * n] = v, M.D[j + i * n] = fabs(tu_rand(&s)) < 0.5 ? w : 0.0; break;
            case GEN_SYMMETRIC:
            case GEN_TINY_DIAG: M.D[i + j * n] = M.D[j + i * n] = v; break;
            default: M.D[i + j * n] = v, M.D[j + i * n] = conj(v);
            }
        }
    for (sla_int i = 0; i < n; i++) {
        double rs = 0.0;
        for (sla_int j = 0; j < n; j++) rs += cabs(M.D[i + j * n]);
        switch (kind) {
        case GEN_GENERAL:
        case GEN_SYMMETRIC: M.D[i + i * n] = 0.5 + tu_rand(&s) + (0.5 + tu_rand(&s)) * _Complex_I; break;
        case GEN_ZERO_DIAG: M.D[i + i * n] = (rs + 1.0) * (1.0 + 0.5 * _Complex_I); break;
        case GEN_TINY_DIAG: M.D[i + i * n] = 1e-3 * zrand(&s); break;
        default: M.D[i + i * n] = rs + 0.5 + 0.5 * fabs(tu_rand(&s));
        }
    }
    if (kind == GEN_TINY_DIAG) { /* well conditioned by a dominant anti-diagonal (n even) */
        double rmax = 0.0;
        for (sla_int i = 0; i < n; i++) {
            double rs = 0.0;
            for (sla_int j = 0; j < n; j++) rs += cabs(M.D[i + j * n]);
            rmax = fmax(rmax, rs);
        }
        for (sla_int i = 0; i < n; i++) M.D[i + (n - 1 - i) * n] = (rmax + 1.0) * (1.0 - 0.5 * _Complex_I);
    }
    if (kind == GEN_HERM_INDEF)
        for (sla_int i = 0; i < n; i += 3) M.D[i * (n + 1)] = -M.D[i * (n + 1)];
    if (kind == GEN_ZERO_DIAG) { /* row i of the new matrix is row (i + n/2) mod n */
        zc *E = malloc((size_t)n * (size_t)n * sizeof *E);
        for (sla_int j = 0; j < n; j++)
            for (sla_int i = 0; i < n; i++) E[i + j * n] = M.D[(i + n / 2) % n + j * n];
        free(M.D);
        M.D = E;
    }
    tmat_csr(&M);
    return M;
}

/* The matrix of an sla_matrix (value array 0, complex128). */
static tmat from_sla(const sla_matrix *A)
{
    tmat M = {.n = sla_matrix_nrows(A)};
    const sla_int n = M.n;
    sla_int *ci = malloc((size_t)sla_matrix_nnz(A) * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    const sla_int *rp = sla_matrix_rowptr(A);
    const zc *v = sla_matrix_values(A, 0);
    M.D = calloc((size_t)n * (size_t)n, sizeof *M.D);
    for (sla_int i = 0; i < n; i++)
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) M.D[i + ci[k] * n] = v[k];
    free(ci);
    tmat_csr(&M); /* the same CSR order: columns increasing in each row */
    return M;
}

static void tmat_free(tmat *M)
{
    free(M->D);
    free(M->rowptr);
    free(M->colind);
    free(M->vals);
}

static sla_matrix *tmat_sla(sla_ctx *ctx, const tmat *M)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, M->n, M->n, M->rowptr, M->colind, SLA_C128, 1, M->vals, SLA_COPY, &A));
    return A;
}

/* ref[k] = inv(D)[col_k, row_k] by zgetrf + zgetri. */
static void dense_selected(const tmat *M, zc *ref)
{
    const sla_int n = M->n;
    zc *W = malloc((size_t)n * (size_t)n * sizeof *W);
    lapack_int *ipiv = malloc((size_t)n * sizeof *ipiv);
    memcpy(W, M->D, (size_t)n * (size_t)n * sizeof *W);
    CHECK(LAPACKE_zgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, (lapack_complex_double *)W,
                         (lapack_int)n, ipiv) == 0);
    CHECK(LAPACKE_zgetri(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_complex_double *)W, (lapack_int)n, ipiv) == 0);
    for (sla_int i = 0; i < n; i++)
        for (sla_int k = M->rowptr[i]; k < M->rowptr[i + 1]; k++) ref[k] = W[M->colind[k] + i * n];
    free(W);
    free(ipiv);
}

/* Normwise relative difference on the pattern, and the largest entrywise one. */
static double zrel(sla_int m, const zc *x, const zc *y, double *entry)
{
    double num = 0.0, den = 0.0, e = 0.0, ymax = 0.0;
    for (sla_int i = 0; i < m; i++) ymax = fmax(ymax, cabs(y[i]));
    for (sla_int i = 0; i < m; i++) {
        num += cabs(x[i] - y[i]) * cabs(x[i] - y[i]);
        den += cabs(y[i]) * cabs(y[i]);
        e = fmax(e, cabs(x[i] - y[i]) / fmax(cabs(y[i]), 1e-3 * ymax));
    }
    if (entry) *entry = e;
    return sqrt(num / (den > 0.0 ? den : 1.0));
}

/* Every selinv path on M against the dense inverse. */
static void check_paths(sla_ctx *ctx, const char *what, const tmat *M)
{
    const sla__zdirect_ops *ops = sla__zdirect_backend(SLA_METHOD_UMFPACK);
    sla_matrix *A = tmat_sla(ctx, M);
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = 1};
    void *sym = NULL, *num = NULL;
    CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym));
    CHECK_OK(ctx, ops->factor(ctx, sym, A, 0, &num));
    zc *ref = malloc((size_t)M->nnz * sizeof *ref), *z = malloc((size_t)M->nnz * sizeof *z);
    dense_selected(M, ref);
    printf("  %-26s n=%-4lld nnz=%-6lld", what, (long long)M->n, (long long)M->nnz);
    for (int mode = 0; mode <= 3; mode++) {
        for (sla_int k = 0; k < M->nnz; k++) z[k] = NAN;
        CHECK_OK(ctx, sla__zumfpack_selinv(ctx, sym, num, A, z, mode));
        double ent, e = zrel(M->nnz, z, ref, &ent);
        printf(" mode %d: %.1e (entry %.1e)", mode, e, ent);
        if (!(e < 1e-10)) fprintf(stderr, "\n%s mode %d: relative error %.3g\n", what, mode, e);
        CHECK(e < 1e-10);
    }
    printf("\n");
    /* the backend's table entry is the same computation */
    CHECK_OK(ctx, ops->selinv(ctx, sym, num, A, z));
    CHECK(zrel(M->nnz, z, ref, NULL) < 1e-10);
    ops->free_num(num);
    ops->free_sym(sym);
    sla_matrix_destroy(&A);
    free(ref);
    free(z);
}

/* A real matrix stored as complex: the complex selected inverse equals
 * the real one (sla__umfpack_selinv on the real factor). */
static void check_real_vs_complex(sla_ctx *ctx)
{
    sla_matrix *R = NULL, *C = NULL;
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 20, 30.0, -10.0, &R));
    const sla_int n = sla_matrix_nrows(R), nnz = sla_matrix_nnz(R);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_colind(R, ci);
    const double *rv = sla_matrix_values(R, 0);
    zc *cv = malloc((size_t)nnz * sizeof *cv), *zz = malloc((size_t)nnz * sizeof *zz);
    double *zr = malloc((size_t)nnz * sizeof *zr);
    for (sla_int k = 0; k < nnz; k++) cv[k] = rv[k];
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(R), ci, SLA_C128, 1, cv, SLA_COPY, &C));
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = 1};
    const sla__direct_ops *dr = sla__backend_umfpack();
    const sla__zdirect_ops *dz = sla__zdirect_backend(SLA_METHOD_UMFPACK);
    void *rs = NULL, *rn = NULL, *zs = NULL, *zn = NULL;
    CHECK_OK(ctx, dr->analyze(ctx, R, &o, &rs, NULL));
    CHECK_OK(ctx, dr->factor(ctx, rs, R, 0, &rn));
    CHECK_OK(ctx, dz->analyze(ctx, C, &o, &zs));
    CHECK_OK(ctx, dz->factor(ctx, zs, C, 0, &zn));
    double err = 0.0, scale = 0.0;
    for (int mode = 0; mode <= 2; mode++) {
        CHECK_OK(ctx, sla__umfpack_selinv(ctx, rs, rn, R, zr, mode));
        CHECK_OK(ctx, sla__zumfpack_selinv(ctx, zs, zn, C, zz, mode));
        for (sla_int k = 0; k < nnz; k++) {
            err = fmax(err, cabs(zz[k] - zr[k]));
            scale = fmax(scale, fabs(zr[k]));
        }
    }
    printf("  real convdiff2d 20 as complex: max |z_complex - z_real| / max |z| = %.1e\n", err / scale);
    CHECK(err <= 1e-12 * scale);
    dr->free_num(rn);
    dr->free_sym(rs);
    dz->free_num(zn);
    dz->free_sym(zs);
    sla_matrix_destroy(&R);
    sla_matrix_destroy(&C);
    free(ci);
    free(cv);
    free(zz);
    free(zr);
}

/* L = g1 logabs + g2 theta (theta unwrapped around ph0) by sla_zlogdet. */
static double loss(sla_ctx *ctx, const tmat *M, const zc *v, double g1, double g2, zc ph0)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, M->n, M->n, M->rowptr, M->colind, SLA_C128, 1, v, SLA_COPY, &A));
    zc ph = 0.0;
    double la = 0.0;
    CHECK_OK(ctx, sla_zlogdet(ctx, A, 0, &ph, &la));
    sla_matrix_destroy(&A);
    return g1 * la + g2 * carg(ph / ph0);
}

/* The gradient through sla_zlogdet_vjp and sla_zsolver_logdet_vjp (an
 * UMFPACK solver) against central differences of sla_zlogdet, real and
 * imaginary part of every stored value alone, and against the n-solve
 * gradient (the same factor with the table's selinv removed). */
static void check_gradient(sla_ctx *ctx, const char *what, const tmat *M)
{
    const double g1 = 0.8, g2 = -1.7, h = 1e-6;
    sla_matrix *A = tmat_sla(ctx, M);
    zc *g = malloc((size_t)M->nnz * sizeof *g), *gs = malloc((size_t)M->nnz * sizeof *gs);
    zc *gn = malloc((size_t)M->nnz * sizeof *gn), *v = malloc((size_t)M->nnz * sizeof *v);
    zc ph = 0.0;
    double la = 0.0;
    CHECK_OK(ctx, sla_zlogdet_vjp(ctx, A, 0, g1, g2, &ph, &la, g));
    double gmax = 0.0, err = 0.0;
    for (sla_int k = 0; k < M->nnz; k++) gmax = fmax(gmax, cabs(g[k]));
    for (sla_int k = 0; k < M->nnz; k++)
        for (int part = 0; part < 2; part++) {
            zc d = part ? h * _Complex_I : h;
            memcpy(v, M->vals, (size_t)M->nnz * sizeof *v);
            v[k] += d;
            double lp = loss(ctx, M, v, g1, g2, ph);
            v[k] -= 2.0 * d;
            double lm = loss(ctx, M, v, g1, g2, ph);
            /* dL = Re(conj(g_k) dA_k) */
            err = fmax(err, fabs((lp - lm) / (2.0 * h) - (part ? cimag(g[k]) : creal(g[k]))));
        }
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_UMFPACK;
    sla_solver *S = NULL;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    CHECK_OK(ctx, sla_zsolver_logdet_vjp(ctx, S, 0, g1, g2, gs));
    const sla__zdirect_ops *ops = NULL;
    void *sym = NULL, *num = NULL;
    CHECK_OK(ctx, sla__zsolver_factor(ctx, S, 0, &ops, &sym, &num));
    CHECK(ops->selinv != NULL);
    CHECK_OK(ctx, sla__zinv_by_solves(ctx, ops, sym, num, A, gn));
    for (sla_int k = 0; k < M->nnz; k++) gn[k] = (g1 + g2 * _Complex_I) * conj(gn[k]);
    double es = zrel(M->nnz, gs, g, NULL), en = zrel(M->nnz, g, gn, NULL), ek = 0.0;
    /* a KLU solver has no selected inversion: the gradient refactors with UMFPACK */
    sla_solver *K = NULL;
    if (sla_method_available(SLA_METHOD_KLU)) {
        o.method = SLA_METHOD_KLU;
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &K));
        CHECK_OK(ctx, sla_zsolver_logdet_vjp(ctx, K, 0, g1, g2, gs));
        ek = zrel(M->nnz, gs, g, NULL);
    }
    printf("  %-26s gradient: finite differences %.1e (max |g| %.1e), umfpack solver vs one-shot %.1e, "
           "klu solver %.1e, selinv vs n solves %.1e\n", what, err, gmax, es, ek, en);
    CHECK(err <= 1e-6 * fmax(gmax, 1.0));
    CHECK(es < 1e-12);
    CHECK(ek < 1e-12);
    CHECK(en < 1e-10);
    sla_solver_destroy(&K);
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
    free(g);
    free(gs);
    free(gn);
    free(v);
}

static void check_refusals(sla_ctx *ctx)
{
    tmat M = gen(GEN_GENERAL, 20, 0.2, 7), G = gen(GEN_GENERAL, 20, 0.3, 8);
    sla_matrix *A = tmat_sla(ctx, &M), *B = tmat_sla(ctx, &G);
    const sla__zdirect_ops *ops = sla__zdirect_backend(SLA_METHOD_UMFPACK);
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = 1};
    void *sym = NULL, *num = NULL;
    CHECK_OK(ctx, ops->analyze(ctx, A, &o, &sym));
    CHECK_OK(ctx, ops->factor(ctx, sym, A, 0, &num));
    zc *z = malloc((size_t)(M.nnz > G.nnz ? M.nnz : G.nnz) * sizeof *z);
    if (M.nnz != G.nnz) CHECK_ERR(ctx, ops->selinv(ctx, sym, num, B, z), SLA_ERR_ARGUMENT, "does not match");
    CHECK_ERR(ctx, ops->selinv(ctx, sym, NULL, A, z), SLA_ERR_ARGUMENT, "NULL");
    /* the real entry point refuses complex factors and the other way round */
    const sla_int zero = 0;
    const double dv = 2.0;
    const zc zv = 2.0;
    sla_matrix *E = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 1, 1, (sla_int[]){0, 1}, &zero, SLA_C128, 1, &zv, SLA_COPY, &E));
    sla__lu_factors f = {.n = 1, .Lp = (sla_int[]){0, 0}, .Lj = &zero, .Up = (sla_int[]){0, 0}, .Ui = &zero,
                         .P = &zero, .Q = &zero, .Lx = &dv, .Ux = &dv, .Dx = &dv};
    zc z1;
    CHECK_ERR(ctx, sla__zlu_selinv(ctx, E, &f, &z1), SLA_ERR_ARGUMENT, "no complex values");
    f.zLx = f.zUx = f.zDx = &zv;
    CHECK_OK(ctx, sla__zlu_selinv(ctx, E, &f, &z1));
    CHECK(z1 == 0.5);
    f.zDx = (const zc[]){0.0};
    CHECK_ERR(ctx, sla__zlu_selinv(ctx, E, &f, &z1), SLA_ERR_SINGULAR, "pivot 0");
    sla_matrix_destroy(&E);
    ops->free_num(num);
    ops->free_sym(sym);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&B);
    tmat_free(&M);
    tmat_free(&G);
    free(z);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    if (!SLA_HAS_SUITESPARSE) {
        CHECK(sla__zdirect_backend(SLA_METHOD_UMFPACK) == NULL);
        printf("no UMFPACK in this build: nothing to test\n");
        sla_ctx_destroy(&ctx);
        return tu_finish("test_zselinv");
    }
    CHECK(sla__zdirect_backend(SLA_METHOD_UMFPACK)->selinv != NULL);
    CHECK(sla__zdirect_backend(SLA_METHOD_LU) == sla__zdirect_backend(SLA_METHOD_UMFPACK));
    printf("selected inverse against zgetrf + zgetri (normwise relative error per mode: 0 auto, 1 per pivot, "
           "2 dense blocks, 3 supernodes without BLAS)\n");
    for (int kind = GEN_GENERAL; kind <= GEN_TINY_DIAG; kind++) {
        tmat M = gen(kind, 80, 0.08, 100 + (unsigned long long)kind);
        check_paths(ctx, kind_name[kind], &M);
        tmat_free(&M);
    }
    /* denser: larger fronts and supernodes */
    tmat D = gen(GEN_GENERAL, 150, 0.15, 5);
    check_paths(ctx, "general, denser", &D);
    tmat_free(&D);
    /* 2-D Helmholtz (complex symmetric): nested-dissection separators give
     * supernodes of 16 pivots and more, the BLAS path of mode 0 */
    sla_matrix *H = NULL;
    CHECK_OK(ctx, sla_gen_helmholtz2d(ctx, 24, 2.0 * 3.141592653589793 / 8.0 * 25.0, 0.1, &H));
    tmat Hm = from_sla(H);
    check_paths(ctx, "helmholtz2d 24", &Hm);
    sla_matrix_destroy(&H);
    tmat_free(&Hm);
    check_real_vs_complex(ctx);

    for (int kind = GEN_GENERAL; kind <= GEN_TINY_DIAG; kind++) {
        tmat M = gen(kind, 12, 0.25, 200 + (unsigned long long)kind);
        check_gradient(ctx, kind_name[kind], &M);
        tmat_free(&M);
    }
    check_refusals(ctx);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_zselinv");
}
