/* Complex solves (sla/complex.h): every complex Krylov method with each
 * preconditioner that fits, on Hermitian positive definite, Hermitian
 * indefinite, complex symmetric (Helmholtz-like) and general matrices, with
 * A, A^T and A^H, against dense LAPACKE zgesv; the VJP against central
 * finite differences of a dense reference (real and imaginary parts
 * perturbed separately) and the dot-product identity; exact
 * preconditioners on tridiagonal matrices (ILU(0) and IC(0) are exact
 * there, so one or two iterations prove the M^-1, M^-T and M^-H applies);
 * method=auto, refresh, batches, the refusals, and lists
 * (sla_zsolver_solve_list and _vjp, in parallel and with a solver named
 * twice) against dense solves. */
#include "test_util.h"

#include <complex.h>

#include "solvers/zsolver.h"

typedef double _Complex zc;

enum { HPD, HIND, CSYM, GEN, NKIND };
static const char *kind_name[NKIND] = {"hermitian-pd", "hermitian-indefinite", "complex-symmetric", "general"};

/* The COO of an m x m grid operator of the given kind (n = m^2): diagonal
 * d, east/west and north/south couplings. */
typedef struct {
    sla_int n, nnz;
    sla_int row[4096], col[4096];
    zc val[4096];
} coo;

static void grid_coo(int m, int kind, coo *c)
{
    zc d, e, w, no, so;
    switch (kind) {
    case HPD: d = 4.5, e = -1 + 0.3 * _Complex_I, w = conj(e), no = -1 - 0.2 * _Complex_I, so = conj(no); break;
    case HIND: d = 1.5, e = -1 + 0.3 * _Complex_I, w = conj(e), no = -1 - 0.2 * _Complex_I, so = conj(no); break;
    case CSYM:
        d = 3.6 + 0.4 * _Complex_I, e = w = -1 + 0.1 * _Complex_I, no = so = -1 - 0.05 * _Complex_I;
        break;
    default:
        d = 4 + 0.5 * _Complex_I, e = -1.2 + 0.2 * _Complex_I, w = -0.8 - 0.1 * _Complex_I;
        no = -1 + 0.3 * _Complex_I, so = -0.9;
    }
    c->n = (sla_int)m * m;
    c->nnz = 0;
#define PUT(i, j, v) (c->row[c->nnz] = (i), c->col[c->nnz] = (j), c->val[c->nnz++] = (v))
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            sla_int k = (sla_int)i * m + j;
            PUT(k, k, d);
            if (j + 1 < m) PUT(k, k + 1, e), PUT(k + 1, k, w);
            if (i + 1 < m) PUT(k, k + m, no), PUT(k + m, k, so);
        }
#undef PUT
}

static sla_matrix *from_coo(sla_ctx *ctx, const coo *c, sla_int *map)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, c->n, c->n, c->nnz, c->row, c->col, SLA_C128, 1, c->val, map, &A));
    return A;
}

/* Dense op(A) x = b by zgesv (op 0 N, 1 T, 2 H) from a COO. */
static int dense_solve(const coo *c, int op, const zc *b, zc *x)
{
    sla_int n = c->n;
    zc *D = calloc((size_t)(n * n), sizeof *D);
    lapack_int *ipiv = malloc((size_t)n * sizeof *ipiv);
    for (sla_int k = 0; k < c->nnz; k++) {
        sla_int i = c->row[k], j = c->col[k];
        zc v = c->val[k];
        if (op == 0) D[j * n + i] += v;
        else D[i * n + j] += op == 2 ? conj(v) : v;
    }
    memcpy(x, b, (size_t)n * sizeof *x);
    int info = LAPACKE_zgesv(LAPACK_COL_MAJOR, (lapack_int)n, 1, D, (lapack_int)n, ipiv, x, (lapack_int)n);
    free(D);
    free(ipiv);
    return info;
}

static double zdiff(sla_int n, const zc *x, const zc *y)
{
    double d = 0.0, s = 0.0;
    for (sla_int i = 0; i < n; i++) {
        d += pow(cabs(x[i] - y[i]), 2);
        s += pow(cabs(y[i]), 2);
    }
    return sqrt(d / (s > 0 ? s : 1.0));
}

static void zrand(unsigned long long *s, sla_int n, zc *x)
{
    for (sla_int i = 0; i < n; i++) x[i] = tu_rand(s) + tu_rand(s) * _Complex_I;
}

/* Re(x^H y) */
static double redot(sla_int n, const zc *x, const zc *y)
{
    double s = 0.0;
    for (sla_int i = 0; i < n; i++) s += creal(conj(x[i]) * y[i]);
    return s;
}

static sla_solver_options opts_for(sla_method m, sla_precond_kind p, double rtol)
{
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = m;
    o.precond = p;
    o.rtol = rtol;
    o.restart = 40;
    return o;
}

typedef struct {
    sla_method m;
    sla_precond_kind p;
} combo;

/* Every fitting method and preconditioner on each kind, with A, A^T, A^H. */
static void test_methods_vs_dense(sla_ctx *ctx)
{
    static const combo fits[NKIND][14] = {
        [HPD] = {{SLA_METHOD_CG, SLA_PRECOND_NONE}, {SLA_METHOD_CG, SLA_PRECOND_JACOBI}, {SLA_METHOD_CG, SLA_PRECOND_IC0},
                 {SLA_METHOD_MINRES, SLA_PRECOND_NONE}, {SLA_METHOD_MINRES, SLA_PRECOND_JACOBI},
                 {SLA_METHOD_MINRES, SLA_PRECOND_IC0}, {SLA_METHOD_BICGSTAB, SLA_PRECOND_NONE},
                 {SLA_METHOD_BICGSTAB, SLA_PRECOND_IC0}, {SLA_METHOD_BICGSTAB, SLA_PRECOND_ILU0},
                 {SLA_METHOD_GMRES, SLA_PRECOND_NONE}, {SLA_METHOD_GMRES, SLA_PRECOND_JACOBI},
                 {SLA_METHOD_GMRES, SLA_PRECOND_ILU0}, {SLA_METHOD_AUTO, SLA_PRECOND_NONE}},
        [HIND] = {{SLA_METHOD_MINRES, SLA_PRECOND_NONE}, {SLA_METHOD_MINRES, SLA_PRECOND_JACOBI},
                  {SLA_METHOD_GMRES, SLA_PRECOND_NONE}, {SLA_METHOD_GMRES, SLA_PRECOND_ILU0},
                  {SLA_METHOD_BICGSTAB, SLA_PRECOND_ILU0}, {SLA_METHOD_AUTO, SLA_PRECOND_NONE}},
        [CSYM] = {{SLA_METHOD_COCG, SLA_PRECOND_NONE}, {SLA_METHOD_COCG, SLA_PRECOND_JACOBI},
                  {SLA_METHOD_COCG, SLA_PRECOND_ILU0}, {SLA_METHOD_BICGSTAB, SLA_PRECOND_JACOBI},
                  {SLA_METHOD_BICGSTAB, SLA_PRECOND_ILU0}, {SLA_METHOD_GMRES, SLA_PRECOND_NONE},
                  {SLA_METHOD_GMRES, SLA_PRECOND_ILU0}, {SLA_METHOD_AUTO, SLA_PRECOND_NONE}},
        [GEN] = {{SLA_METHOD_BICGSTAB, SLA_PRECOND_NONE}, {SLA_METHOD_BICGSTAB, SLA_PRECOND_JACOBI},
                 {SLA_METHOD_BICGSTAB, SLA_PRECOND_ILU0}, {SLA_METHOD_GMRES, SLA_PRECOND_NONE},
                 {SLA_METHOD_GMRES, SLA_PRECOND_JACOBI}, {SLA_METHOD_GMRES, SLA_PRECOND_ILU0},
                 {SLA_METHOD_AUTO, SLA_PRECOND_NONE}},
    };
    static const int nfits[NKIND] = {13, 6, 8, 7}; /* the last of each: auto */
    static coo c;
    unsigned long long seed = 7;
    for (int kind = 0; kind < NKIND; kind++) {
        grid_coo(10, kind, &c);
        sla_matrix *A = from_coo(ctx, &c, NULL);
        sla_int n = c.n;
        zc *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x), *xr = malloc((size_t)n * sizeof *xr);
        zrand(&seed, n, b);
        for (int op = 0; op < 3; op++) {
            CHECK(dense_solve(&c, op, b, xr) == 0);
            for (int t = 0; t < nfits[kind]; t++) {
                combo cb = fits[kind][t];
                sla_solver_options o = opts_for(cb.m, cb.p, 1e-11);
                if (kind == HIND) o.restart = 100; /* GMRES(40) stalls on this indefinite matrix */
                sla_solver *S = NULL;
                sla_solve_info info;
                CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
                if (!S) continue;
                CHECK_OK(ctx, sla_zsolver_solve(ctx, S, 0, (sla_op)op, b, x, &info));
                double err = zdiff(n, x, xr);
                if (!(err < 1e-8) || !info.converged)
                    fprintf(stderr, "  %s %s+%s op %d: error %.2e, %lld iterations, residual %.2e (%s) %s\n",
                            kind_name[kind], sla_method_name(cb.m), sla_precond_name(cb.p), op, err,
                            (long long)info.iterations, info.residual, sla_reason_name(info.reason), info.note);
                CHECK(err < 1e-8);
                CHECK(info.converged && info.residual <= 1e-11);
                CHECK(info.iterations > 0 || strcmp(info.backend, "krylov") != 0); /* direct: 0 refinement steps when backward stable */
                CHECK(strcmp(info.backend, "krylov") == 0 || cb.m == SLA_METHOD_AUTO);
                if (cb.m != SLA_METHOD_AUTO) {
                    CHECK(strcmp(info.method, sla_method_name(cb.m)) == 0);
                    CHECK(strcmp(info.precond, sla_precond_name(cb.p)) == 0);
                } else {
                    CHECK(strstr(info.note, "auto:") != NULL);
                    if (op == 0) printf("  auto on %s: %s+%s, %lld iterations; %s\n", kind_name[kind], info.method,
                                        info.precond, (long long)info.iterations, info.note);
                }
                sla_solver_destroy(&S);
            }
        }
        free(b);
        free(x);
        free(xr);
        sla_matrix_destroy(&A);
    }
}

/* L(b, A) = Re(w^H A^-1 b) by the dense reference. */
static double loss_dense(const coo *c, const zc *b, const zc *w)
{
    zc *x = malloc((size_t)c->n * sizeof *x);
    CHECK(dense_solve(c, 0, b, x) == 0);
    double L = redot(c->n, w, x);
    free(x);
    return L;
}

/* The VJP against central differences (each real and imaginary part of b
 * and of A's values), and the dot-product identity
 * Re(gx^H dx) = Re(gb^H db) + Re(gA^H dA) for dx = A^-1 (db - dA x). */
static void test_vjp(sla_ctx *ctx)
{
    static const sla_method meth[NKIND] = {SLA_METHOD_CG, SLA_METHOD_MINRES, SLA_METHOD_COCG, SLA_METHOD_GMRES};
    static const sla_precond_kind pcs[NKIND] = {SLA_PRECOND_IC0, SLA_PRECOND_JACOBI, SLA_PRECOND_ILU0, SLA_PRECOND_ILU0};
    static coo c;
    unsigned long long seed = 11;
    for (int kind = 0; kind < NKIND; kind++) {
        grid_coo(5, kind, &c);
        sla_int n = c.n, nnz = c.nnz;
        sla_int *map = malloc((size_t)nnz * sizeof *map);
        sla_matrix *A = from_coo(ctx, &c, map);
        zc *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x), *w = malloc((size_t)n * sizeof *w);
        zc *gb = malloc((size_t)n * sizeof *gb), *gA = malloc((size_t)nnz * sizeof *gA);
        zrand(&seed, n, b);
        zrand(&seed, n, w);
        sla_solver_options o = opts_for(meth[kind], pcs[kind], 1e-13);
        sla_solver *S = NULL;
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
        sla_solve_info fwd, adj;
        CHECK_OK(ctx, sla_zsolver_solve(ctx, S, 0, SLA_OP_N, b, x, &fwd));
        CHECK_OK(ctx, sla_zsolver_solve_vjp(ctx, S, 0, x, w, gb, gA, &adj));
        CHECK(adj.converged && strcmp(adj.method, sla_method_name(meth[kind])) == 0);
        /* central differences of the dense loss */
        const double h = 1e-6;
        double gerr = 0.0, gnorm = 0.0;
        for (sla_int k = 0; k < n; k++)
            for (int part = 0; part < 2; part++) {
                zc dz = part ? h * _Complex_I : h, save = b[k];
                b[k] = save + dz;
                double Lp = loss_dense(&c, b, w);
                b[k] = save - dz;
                double Lm = loss_dense(&c, b, w);
                b[k] = save;
                double fd = (Lp - Lm) / (2 * h), an = part ? cimag(gb[k]) : creal(gb[k]);
                gerr = fmax(gerr, fabs(fd - an));
                gnorm = fmax(gnorm, fabs(an));
            }
        CHECK(gerr <= 1e-6 * gnorm);
        double aerr = 0.0, anorm = 0.0;
        for (sla_int e = 0; e < nnz; e++)
            for (int part = 0; part < 2; part++) {
                zc dz = part ? h * _Complex_I : h, save = c.val[e];
                c.val[e] = save + dz;
                double Lp = loss_dense(&c, b, w);
                c.val[e] = save - dz;
                double Lm = loss_dense(&c, b, w);
                c.val[e] = save;
                double fd = (Lp - Lm) / (2 * h);
                double an = part ? cimag(gA[map[e]]) : creal(gA[map[e]]);
                aerr = fmax(aerr, fabs(fd - an));
                anorm = fmax(anorm, fabs(an));
            }
        CHECK(aerr <= 1e-6 * anorm);
        printf("  vjp %s (%s+%s): max |fd - vjp| %.1e (b), %.1e (A), relative to %.2f, %.2f\n", kind_name[kind],
               sla_method_name(meth[kind]), sla_precond_name(pcs[kind]), gerr, aerr, gnorm, anorm);
        /* dot-product identity */
        zc *db = malloc((size_t)n * sizeof *db), *dA = malloc((size_t)nnz * sizeof *dA);
        zc *rhs = malloc((size_t)n * sizeof *rhs), *dx = malloc((size_t)n * sizeof *dx);
        zrand(&seed, n, db);
        zrand(&seed, nnz, dA); /* in CSR order */
        sla_matrix *P = NULL;
        CHECK_OK(ctx, sla_matrix_copy(ctx, A, &P));
        CHECK_OK(ctx, sla_matrix_set_values(ctx, P, 0, dA));
        sla__zspmv(P, 0, 0, x, rhs, 1); /* dA x (sla_zmatvec is another part's) */
        for (sla_int i = 0; i < n; i++) rhs[i] = db[i] - rhs[i];
        CHECK_OK(ctx, sla_zsolver_solve(ctx, S, 0, SLA_OP_N, rhs, dx, NULL));
        double lhs = redot(n, w, dx), r = redot(n, gb, db) + redot(nnz, gA, dA);
        CHECK_CLOSE(lhs, r, 1e-9);
        sla_matrix_destroy(&P);
        free(db);
        free(dA);
        free(rhs);
        free(dx);
        sla_solver_destroy(&S);
        sla_matrix_destroy(&A);
        free(map);
        free(b);
        free(x);
        free(w);
        free(gb);
        free(gA);
    }
}

/* On a tridiagonal matrix ILU(0) is the exact LU and IC(0) the exact
 * Cholesky factor: every op converges in one or two iterations, which
 * only happens when M^-1, M^-T and M^-H are applied right. */
static void test_exact_preconditioners(sla_ctx *ctx)
{
    static coo c;
    for (int herm = 0; herm < 2; herm++) {
        sla_int n = 50;
        c.n = n;
        c.nnz = 0;
        for (sla_int i = 0; i < n; i++) {
            zc d = herm ? 3.0 + 0.1 * (double)(i % 3) : 3.0 + 1.0 * _Complex_I;
            c.row[c.nnz] = i, c.col[c.nnz] = i, c.val[c.nnz++] = d;
            if (i + 1 < n) {
                zc u = -1.0 + 0.5 * _Complex_I, l = herm ? conj(u) : -0.7 - 0.2 * _Complex_I;
                c.row[c.nnz] = i, c.col[c.nnz] = i + 1, c.val[c.nnz++] = u;
                c.row[c.nnz] = i + 1, c.col[c.nnz] = i, c.val[c.nnz++] = l;
            }
        }
        sla_matrix *A = from_coo(ctx, &c, NULL);
        zc b[50], x[50], xr[50];
        unsigned long long seed = 3;
        zrand(&seed, n, b);
        sla_method ms[2] = {herm ? SLA_METHOD_CG : SLA_METHOD_GMRES, SLA_METHOD_BICGSTAB};
        for (int mi = 0; mi < 2; mi++)
            for (int op = 0; op < 3; op++) {
                sla_solver_options o = opts_for(ms[mi], herm ? SLA_PRECOND_IC0 : SLA_PRECOND_ILU0, 1e-12);
                sla_solver *S = NULL;
                sla_solve_info info;
                CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
                CHECK_OK(ctx, sla_zsolver_solve(ctx, S, 0, (sla_op)op, b, x, &info));
                CHECK(dense_solve(&c, op, b, xr) == 0);
                CHECK(zdiff(n, x, xr) < 1e-10);
                CHECK(info.iterations <= 2);
                if (info.iterations > 2)
                    fprintf(stderr, "  exact %s op %d: %lld iterations\n", info.method, op, (long long)info.iterations);
                sla_solver_destroy(&S);
            }
        sla_matrix_destroy(&A);
    }
}

/* Jacobi is exact on a diagonal matrix: one iteration for every op. */
static void test_exact_jacobi(sla_ctx *ctx)
{
    static coo c;
    sla_int n = 20;
    c.n = n;
    c.nnz = n;
    for (sla_int i = 0; i < n; i++) c.row[i] = c.col[i] = i, c.val[i] = (1.0 + (double)i) * cexp(0.37 * (double)i * _Complex_I);
    sla_matrix *A = from_coo(ctx, &c, NULL);
    zc b[20], x[20], xr[20];
    unsigned long long seed = 4;
    zrand(&seed, n, b);
    for (int op = 0; op < 3; op++) {
        sla_solver_options o = opts_for(SLA_METHOD_GMRES, SLA_PRECOND_JACOBI, 1e-12);
        sla_solver *S = NULL;
        sla_solve_info info;
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
        CHECK_OK(ctx, sla_zsolver_solve(ctx, S, 0, (sla_op)op, b, x, &info));
        CHECK(dense_solve(&c, op, b, xr) == 0 && zdiff(n, x, xr) < 1e-12);
        CHECK(info.iterations == 1);
        sla_solver_destroy(&S);
    }
    sla_matrix_destroy(&A);
}

/* Refusals, reasons and the object's life cycle. */
static void test_refusals(sla_ctx *ctx)
{
    static coo c;
    zc b[100], x[100];
    unsigned long long seed = 5;
    zrand(&seed, 100, b);
    sla_matrix *As[NKIND];
    for (int k = 0; k < NKIND; k++) {
        grid_coo(10, k, &c);
        As[k] = from_coo(ctx, &c, NULL);
    }
    sla_solver *S = NULL;
    sla_solver_options o = opts_for(SLA_METHOD_CG, SLA_PRECOND_NONE, 1e-10);
    CHECK_ERR(ctx, sla_solver_create(ctx, As[CSYM], &o, &S), SLA_ERR_ARGUMENT, "needs a Hermitian matrix");
    CHECK(strstr(sla_ctx_message(ctx), "cocg") && strstr(sla_ctx_message(ctx), "gmres"));
    CHECK(S == NULL);
    o.method = SLA_METHOD_MINRES;
    CHECK_ERR(ctx, sla_solver_create(ctx, As[GEN], &o, &S), SLA_ERR_ARGUMENT, "method minres needs a Hermitian");
    o.method = SLA_METHOD_COCG;
    CHECK_ERR(ctx, sla_solver_create(ctx, As[HPD], &o, &S), SLA_ERR_ARGUMENT, "cocg needs a complex symmetric");
    o = opts_for(SLA_METHOD_GMRES, SLA_PRECOND_IC0, 1e-10);
    CHECK_ERR(ctx, sla_solver_create(ctx, As[GEN], &o, &S), SLA_ERR_ARGUMENT, "precond ic0 needs a Hermitian");
    o.precond = SLA_PRECOND_SSOR;
    CHECK_ERR(ctx, sla_solver_create(ctx, As[GEN], &o, &S), SLA_ERR_UNSUPPORTED, "precond ssor does not run on complex");
    o.precond = SLA_PRECOND_SAAMG;
    CHECK_ERR(ctx, sla_solver_create(ctx, As[GEN], &o, &S), SLA_ERR_UNSUPPORTED, "precond saamg");
    o = opts_for(SLA_METHOD_LDLT, SLA_PRECOND_NONE, 1e-10);
    CHECK_ERR(ctx, sla_solver_create(ctx, As[HPD], &o, &S), SLA_ERR_UNSUPPORTED, "method ldlt does not run on complex");
    o.method = SLA_METHOD_CHOLESKY;
    CHECK_ERR(ctx, sla_solver_create(ctx, As[GEN], &o, &S), SLA_ERR_ARGUMENT, "method cholesky needs a Hermitian");
    /* direct methods: through the complex backend table */
    static const sla_method direct[] = {SLA_METHOD_CHOLESKY, SLA_METHOD_LU, SLA_METHOD_UMFPACK, SLA_METHOD_KLU,
                                        SLA_METHOD_SUPERLU};
    for (size_t i = 0; i < sizeof direct / sizeof direct[0]; i++) {
        o = opts_for(direct[i], SLA_PRECOND_NONE, 1e-10);
        if (!sla__zdirect_backend(direct[i])) {
            CHECK_ERR(ctx, sla_solver_create(ctx, As[HPD], &o, &S), SLA_ERR_UNAVAILABLE, "has no complex backend");
            continue;
        }
        sla_solve_info info;
        zc xr[100];
        grid_coo(10, HPD, &c);
        CHECK_OK(ctx, sla_solver_create(ctx, As[HPD], &o, &S));
        for (int op = 0; op < 3 && S; op++) {
            CHECK_OK(ctx, sla_zsolver_solve(ctx, S, 0, (sla_op)op, b, x, &info));
            CHECK(dense_solve(&c, op, b, xr) == 0);
            CHECK(zdiff(100, x, xr) < 1e-10 && strcmp(info.backend, "krylov") != 0);
        }
        sla_solver_destroy(&S);
    }
    /* the real and the complex entry points refuse each other's solver */
    o = opts_for(SLA_METHOD_GMRES, SLA_PRECOND_ILU0, 1e-10);
    CHECK_OK(ctx, sla_solver_create(ctx, As[GEN], &o, &S));
    CHECK(sla__solver_is_complex(S) && sla__zsolver_matrix(S) == As[GEN]);
    CHECK(sla_solver_method(S) == SLA_METHOD_GMRES);
    double rb[200], rx[200], rg[2000];
    for (int i = 0; i < 200; i++) rb[i] = 1.0;
    CHECK_ERR(ctx, sla_solver_solve(ctx, S, 0, 1, rb, 100, rx, 100, NULL), SLA_ERR_ARGUMENT,
              "complex solver: use sla_zsolver_solve");
    CHECK_ERR(ctx, sla_solver_solve_transpose(ctx, S, 0, 1, rb, 100, rx, 100, NULL), SLA_ERR_ARGUMENT, "complex solver");
    CHECK_ERR(ctx, sla_solver_solve_vjp(ctx, S, 0, 1, rb, 100, rb, 100, rx, 100, rg, NULL), SLA_ERR_ARGUMENT,
              "complex solver");
    CHECK_ERR(ctx, sla_solver_solve_batch(ctx, S, rb, rx, NULL), SLA_ERR_ARGUMENT, "complex solver");
    CHECK_ERR(ctx, sla_solver_solve_batch_vjp(ctx, S, rb, rb, rx, rg, NULL), SLA_ERR_ARGUMENT, "complex solver");
    double sign, lad;
    CHECK_ERR(ctx, sla_solver_logdet(ctx, S, 0, &sign, &lad), SLA_ERR_ARGUMENT, "complex solver");
    const sla__zdirect_ops *ops;
    void *sym, *num;
    CHECK_ERR(ctx, sla__zsolver_factor(ctx, S, 0, &ops, &sym, &num), SLA_ERR_ARGUMENT, "direct factorization");
    CHECK_ERR(ctx, sla_zsolver_solve(ctx, S, 0, (sla_op)3, b, x, NULL), SLA_ERR_ARGUMENT, "op 3");
    CHECK_ERR(ctx, sla_zsolver_solve(ctx, S, 1, SLA_OP_N, b, x, NULL), SLA_ERR_INDEX, "value array 1");
    CHECK_ERR(ctx, sla_zsolver_solve(ctx, S, 0, SLA_OP_N, b, b, NULL), SLA_ERR_ARGUMENT, "alias");
    zc bad[100];
    memcpy(bad, b, sizeof bad);
    bad[17] = NAN;
    CHECK_ERR(ctx, sla_zsolver_solve(ctx, S, 0, SLA_OP_N, bad, x, NULL), SLA_ERR_VALUE, "right-hand side entry 17");
    sla_solver_destroy(&S);
    sla_matrix *R = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 10, &R));
    CHECK_OK(ctx, sla_solver_create(ctx, R, &o, &S));
    CHECK(!sla__solver_is_complex(S));
    CHECK_ERR(ctx, sla_zsolver_solve(ctx, S, 0, SLA_OP_N, b, x, NULL), SLA_ERR_ARGUMENT, "real solver");
    zc gb[100];
    CHECK_ERR(ctx, sla_zsolver_solve_vjp(ctx, S, 0, b, b, gb, NULL, NULL), SLA_ERR_ARGUMENT, "real solver");
    sla_solver_destroy(&S);
    CHECK_ERR(ctx, sla_zsolve(ctx, R, 0, NULL, b, x, NULL), SLA_ERR_ARGUMENT, "A is real");
    /* cocg on a real symmetric matrix is CG */
    o = opts_for(SLA_METHOD_COCG, SLA_PRECOND_JACOBI, 1e-10);
    sla_solve_info info;
    CHECK_OK(ctx, sla_solver_create(ctx, R, &o, &S));
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, rb, 100, rx, 100, &info));
    CHECK(info.converged && strcmp(info.method, "cocg") == 0 && tu_relres(R, 0, rb, rx, 0) < 1e-9);
    sla_solver_destroy(&S);
    sla_matrix_destroy(&R);

    /* non-convergence is a reason, not an error */
    o = opts_for(SLA_METHOD_GMRES, SLA_PRECOND_NONE, 1e-12);
    o.maxiter = 3;
    CHECK_OK(ctx, sla_solver_create(ctx, As[GEN], &o, &S));
    CHECK_ERR(ctx, sla_zsolver_solve(ctx, S, 0, SLA_OP_N, b, x, &info), SLA_NOT_CONVERGED, "did not converge");
    CHECK(!info.converged && info.reason == SLA_DIVERGED_MAXITER && info.iterations == 3 && info.residual > 1e-12);
    sla_solver_destroy(&S);
    /* cg on a Hermitian indefinite matrix meets an indefinite direction */
    o = opts_for(SLA_METHOD_CG, SLA_PRECOND_NONE, 1e-12);
    CHECK_OK(ctx, sla_solver_create(ctx, As[HIND], &o, &S));
    CHECK_ST(ctx, sla_zsolver_solve(ctx, S, 0, SLA_OP_N, b, x, &info), SLA_NOT_CONVERGED);
    CHECK(info.reason == SLA_DIVERGED_INDEFINITE);
    sla_solver_destroy(&S);
    /* the one-shot */
    zc xr[100];
    grid_coo(10, CSYM, &c);
    CHECK(dense_solve(&c, 0, b, xr) == 0);
    CHECK_OK(ctx, sla_zsolve(ctx, As[CSYM], 0, NULL, b, x, &info));
    CHECK(zdiff(100, x, xr) < 1e-6 && info.converged);
    for (int k = 0; k < NKIND; k++) sla_matrix_destroy(&As[k]);
}

/* ILU(0)'s pivot rule on a complex matrix with a diagonal not stored. */
static void test_ilu_shift(sla_ctx *ctx)
{
    static coo c;
    grid_coo(6, GEN, &c);
    /* drop the diagonal of row 0 (no lower entries: a zero pivot) */
    sla_int q = 0;
    for (sla_int k = 0; k < c.nnz; k++)
        if (!(c.row[k] == 0 && c.col[k] == 0)) c.row[q] = c.row[k], c.col[q] = c.col[k], c.val[q++] = c.val[k];
    c.nnz = q;
    sla_matrix *A = from_coo(ctx, &c, NULL);
    sla_solver_options o = opts_for(SLA_METHOD_GMRES, SLA_PRECOND_ILU0, 1e-10);
    sla_solver *S = NULL;
    sla_solve_info info;
    zc b[36], x[36], xr[36];
    unsigned long long seed = 9;
    zrand(&seed, 36, b);
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    CHECK_OK(ctx, sla_zsolver_solve(ctx, S, 0, SLA_OP_H, b, x, &info));
    CHECK(strstr(info.note, "ILU(0): shifted 1 zero/tiny pivots (first at row 0; 1 diagonals not stored)") != NULL);
    if (!strstr(info.note, "ILU(0): shifted")) fprintf(stderr, "  note: %s\n", info.note);
    CHECK(dense_solve(&c, 2, b, xr) == 0 && zdiff(36, x, xr) < 1e-7);
    sla_solver_destroy(&S);
    o.ilu_shift = 0;
    CHECK_ERR(ctx, sla_solver_create(ctx, A, &o, &S), SLA_ERR_SINGULAR, "zero diagonal at row 0");
    o.precond = SLA_PRECOND_JACOBI;
    CHECK_ERR(ctx, sla_solver_create(ctx, A, &o, &S), SLA_ERR_SINGULAR, "zero or missing diagonal at row 0");
    sla_matrix_destroy(&A);
}

/* Borrowed values changed in place, refresh; and a batch of two value
 * arrays with one preconditioner each. */
static void test_refresh_batch(sla_ctx *ctx)
{
    static coo c;
    grid_coo(8, CSYM, &c);
    sla_int n = c.n, nnz = c.nnz;
    sla_int *map = malloc((size_t)nnz * sizeof *map);
    sla_matrix *A0 = from_coo(ctx, &c, map);
    /* a borrowed CSR copy with two value arrays */
    sla_matrix *A = NULL;
    sla_int *rp = malloc((size_t)(n + 1) * sizeof *rp), *ci = malloc((size_t)nnz * sizeof *ci);
    zc *vals = malloc((size_t)(2 * nnz) * sizeof *vals);
    memcpy(rp, sla_matrix_rowptr(A0), (size_t)(n + 1) * sizeof *rp);
    sla_matrix_get_colind(A0, ci);
    for (sla_int e = 0; e < nnz; e++) {
        vals[map[e]] = c.val[e];
        vals[nnz + map[e]] = c.val[e] * (c.row[e] == c.col[e] ? 1.3 : 1.0);
    }
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, rp, ci, SLA_C128, 2, vals, SLA_BORROW, &A));
    sla_solver_options o = opts_for(SLA_METHOD_AUTO, SLA_PRECOND_NONE, 1e-11);
    sla_solver *S = NULL;
    sla_solve_info info;
    zc b[64], x[64], xr[64];
    unsigned long long seed = 13;
    zrand(&seed, n, b);
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    for (int ib = 0; ib < 2; ib++) {
        coo *cc = &c;
        if (ib == 1)
            for (sla_int e = 0; e < nnz; e++) cc->val[e] = vals[nnz + map[e]];
        CHECK_OK(ctx, sla_zsolver_solve(ctx, S, ib, SLA_OP_T, b, x, &info));
        CHECK(dense_solve(cc, 1, b, xr) == 0 && zdiff(n, x, xr) < 1e-8);
    }
    /* new values: the first array made Hermitian positive definite */
    for (sla_int e = 0; e < nnz; e++) {
        zc v = c.row[e] == c.col[e] ? 5.0 : (c.row[e] < c.col[e] ? -1 + 0.5 * _Complex_I : -1 - 0.5 * _Complex_I);
        c.val[e] = v;
        vals[map[e]] = v;
    }
    CHECK_OK(ctx, sla_solver_refresh(ctx, S));
    CHECK_OK(ctx, sla_zsolver_solve(ctx, S, 0, SLA_OP_N, b, x, &info));
    CHECK(dense_solve(&c, 0, b, xr) == 0 && zdiff(n, x, xr) < 1e-8);
    CHECK(info.converged);
    printf("  refresh: %s+%s (%s)\n", info.method, info.precond, info.note);
    sla_solver_destroy(&S);
    /* an explicit cocg refuses value arrays that are not all complex symmetric (array 0 is Hermitian now) */
    o = opts_for(SLA_METHOD_COCG, SLA_PRECOND_ILU0, 1e-10);
    CHECK_ERR(ctx, sla_solver_create(ctx, A, &o, &S), SLA_ERR_ARGUMENT, "cocg needs a complex symmetric");
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&A0);
    free(rp);
    free(ci);
    free(vals);
    free(map);
}

/* A complex Matrix Market file when the reader takes complex files. */
static void test_file(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    const char *path = SLA_TEST_DATA "/../../../shared/matrices/qc324.mtx";
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("  qc324.mtx: not found, skipped\n");
        return;
    }
    fclose(f);
    if (sla_mm_read(ctx, path, SLA_C128, &A) != SLA_OK || !sla_matrix_is_complex(A)) {
        printf("  qc324.mtx: not read (%s), skipped\n", sla_ctx_message(ctx));
        sla_matrix_destroy(&A);
        return;
    }
    sla_int n = sla_matrix_nrows(A);
    zc *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    for (sla_int i = 0; i < n; i++) b[i] = 1.0;
    sla_solver_options o = opts_for(SLA_METHOD_GMRES, SLA_PRECOND_ILU0, 1e-10);
    o.restart = 100;
    sla_solve_info info;
    sla_status st = sla_zsolve(ctx, A, 0, &o, b, x, &info);
    printf("  qc324: %s+%s %lld iterations, residual %.2e (%s)\n", info.method, info.precond,
           (long long)info.iterations, info.residual, sla_status_name(st));
    CHECK(st == SLA_OK && info.residual <= 1e-10);
    free(b);
    free(x);
    sla_matrix_destroy(&A);
}

/* Lists: four solvers of different kinds and methods (one named twice)
 * solved at once, against zgesv; the list VJP's gb against dense A^H
 * solves and its gA against the single-item VJP; a real solver in the list
 * is refused naming the item. Run with 1 thread and with 2 (items in
 * parallel). */
static void test_list(sla_ctx *ctx)
{
    enum { NI = 5, M = 5, NN = M * M };
    static coo c[4];
    const int kinds[4] = {HPD, CSYM, GEN, GEN};
    const sla_method meth[4] = {SLA_METHOD_CG, SLA_METHOD_COCG, SLA_METHOD_LU, SLA_METHOD_GMRES};
    const sla_precond_kind pc[4] = {SLA_PRECOND_IC0, SLA_PRECOND_ILU0, SLA_PRECOND_NONE, SLA_PRECOND_ILU0};
    sla_matrix *A[4];
    sla_solver *S[4];
    for (int t = 0; t < 4; t++) {
        grid_coo(M, kinds[t], &c[t]);
        if (t == 3)
            for (sla_int e = 0; e < c[t].nnz; e++) c[t].val[e] *= 1.0 + 0.1 * _Complex_I * (e % 3);
        A[t] = from_coo(ctx, &c[t], NULL);
        sla_solver_options o = opts_for(meth[t], pc[t], 1e-12);
        CHECK_OK(ctx, sla_solver_create(ctx, A[t], &o, &S[t]));
    }
    const int which[NI] = {0, 1, 2, 3, 1}; /* solver 1 twice: those items run one after another */
    static zc b[NI][NN], x[NI][NN], gx[NI][NN], gb[NI][NN], gA[NI][4096], xr[NN], gAr[4096], gbr[NN];
    unsigned long long seed = 29;
    for (int i = 0; i < NI; i++) zrand(&seed, NN, b[i]), zrand(&seed, NN, gx[i]);
    sla_solver *L[NI];
    const sla_complex *bl[NI], *xl[NI], *gxl[NI];
    sla_complex *xo[NI], *gbo[NI], *gAo[NI];
    for (int i = 0; i < NI; i++) {
        L[i] = S[which[i]];
        bl[i] = (const sla_complex *)b[i], xo[i] = (sla_complex *)x[i], xl[i] = (const sla_complex *)x[i];
        gxl[i] = (const sla_complex *)gx[i], gbo[i] = (sla_complex *)gb[i], gAo[i] = (sla_complex *)gA[i];
    }
    const int saved = sla_ctx_threads(ctx);
    for (int nt = 1; nt <= 2; nt++) {
        sla_ctx_set_threads(ctx, nt);
        memset(x, 0, sizeof x);
        sla_solve_info info[NI];
        CHECK_OK(ctx, sla_zsolver_solve_list(ctx, NI, L, bl, xo, info));
        for (int i = 0; i < NI; i++) {
            const coo *ci = &c[which[i]];
            CHECK(dense_solve(ci, 0, b[i], xr) == 0);
            CHECK(zdiff(NN, x[i], xr) < 1e-9);
            CHECK(info[i].converged && strcmp(info[i].method, sla_method_name(meth[which[i]])) == 0);
        }
        CHECK_OK(ctx, sla_zsolver_solve_list_vjp(ctx, NI, L, xl, gxl, gbo, gAo, info));
        for (int i = 0; i < NI; i++) {
            const coo *ci = &c[which[i]];
            CHECK(dense_solve(ci, 2, gx[i], xr) == 0);
            CHECK(zdiff(NN, gb[i], xr) < 1e-9);
            CHECK_OK(ctx, sla_zsolver_solve_vjp(ctx, L[i], 0, xl[i], gxl[i], (sla_complex *)gbr,
                                                (sla_complex *)gAr, NULL));
            CHECK(zdiff(ci->nnz, gA[i], gAr) < 1e-9);
        }
        /* gb not wanted: gA alone */
        memset(gA, 0, sizeof gA);
        CHECK_OK(ctx, sla_zsolver_solve_list_vjp(ctx, NI, L, xl, gxl, NULL, gAo, NULL));
        CHECK_OK(ctx, sla_zsolver_solve_vjp(ctx, L[2], 0, xl[2], gxl[2], (sla_complex *)gbr, (sla_complex *)gAr, NULL));
        CHECK(zdiff(c[2].nnz, gA[2], gAr) < 1e-9);
    }
    sla_ctx_set_threads(ctx, saved);
    /* a real solver among complex ones, and the other way round */
    sla_matrix *R = NULL;
    sla_solver *SR = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, M, &R));
    CHECK_OK(ctx, sla_solver_create(ctx, R, NULL, &SR));
    sla_solver *mixed[2] = {S[0], SR};
    CHECK_ERR(ctx, sla_zsolver_solve_list(ctx, 2, mixed, bl, xo, NULL), SLA_ERR_ARGUMENT,
              "item 1: sla_zsolver_solve_list: real solver");
    CHECK_ERR(ctx, sla_zsolver_solve_list_vjp(ctx, 2, mixed, xl, gxl, gbo, NULL, NULL), SLA_ERR_ARGUMENT,
              "use sla_solver_solve_list_vjp");
    double rb[NN], rx[NN];
    const double *rbl[2] = {rb, rb};
    double *rxl[2] = {rx, rx};
    for (int i = 0; i < NN; i++) rb[i] = 1.0;
    CHECK_ERR(ctx, sla_solver_solve_list(ctx, 2, mixed, rbl, rxl, NULL), SLA_ERR_ARGUMENT,
              "use sla_zsolver_solve_list");
    CHECK_ERR(ctx, sla_zsolver_solve_list(ctx, -1, mixed, bl, xo, NULL), SLA_ERR_ARGUMENT, "negative count");
    CHECK_OK(ctx, sla_zsolver_solve_list(ctx, 0, NULL, NULL, NULL, NULL));
    sla_solver_destroy(&SR);
    sla_matrix_destroy(&R);
    for (int t = 0; t < 4; t++) {
        sla_solver_destroy(&S[t]);
        sla_matrix_destroy(&A[t]);
    }
}

/* A BiCGStab breakdown restarts, in complex arithmetic too: the 7 x 7
 * diagonally dominant system on which the real method met <r^, r> = 0
 * (test_krylov's test_bicgstab_breakdown), as complex values with zero
 * imaginary parts, against LU on the real values. */
static void test_bicgstab_breakdown(sla_ctx *ctx)
{
    enum { N = 7 };
    unsigned char in[N * N] = {0x5f, 0x4d};
    for (int k = 2; k < 27; k++) in[k] = 0x7c;
    memcpy(in + 27, (const unsigned char[]){0x4c, 0x4f, 0xa0, 0x67, 0x38, 0xc8}, 6);
    sla_int rp[N + 1], ci[N * N];
    double v[N * N], br[N], xr[N];
    zc vz[N * N], b[N], x[N];
    for (int i = 0; i <= N; i++) rp[i] = (sla_int)i * N;
    for (int k = 0; k < N * N; k++) {
        double t = (double)(signed char)in[k] / 256.0;
        ci[k] = k % N;
        v[k] = k / N == k % N ? (double)N + fabs(t) : t;
        vz[k] = v[k];
    }
    for (int i = 0; i < N; i++) br[i] = 0.5, b[i] = 0.5;
    sla_matrix *A = NULL, *Z = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, N, N, rp, ci, SLA_F64, 1, v, SLA_COPY, &A));
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, N, N, rp, ci, SLA_C128, 1, vz, SLA_COPY, &Z));
    if (A && Z) {
        sla_solver_options o = opts_for(SLA_METHOD_LU, SLA_PRECOND_NONE, 1e-12);
        sla_solve_info info;
        CHECK_OK(ctx, sla_solve(ctx, A, &o, br, xr, &info));
        o = opts_for(SLA_METHOD_BICGSTAB, SLA_PRECOND_NONE, 1e-12);
        sla_solver *S = NULL;
        CHECK_OK(ctx, sla_solver_create(ctx, Z, &o, &S));
        if (S) {
            CHECK_OK(ctx, sla_zsolver_solve(ctx, S, 0, SLA_OP_N, b, x, &info));
            CHECK(info.converged && info.residual <= 1e-12);
            double d = 0.0, m = 0.0;
            for (int i = 0; i < N; i++) d = fmax(d, cabs(x[i] - xr[i])), m = fmax(m, fabs(xr[i]));
            CHECK(d <= 1e-11 * m);
            sla_solver_destroy(&S);
        }
    }
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&Z);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    CHECK_OK(ctx, sla_ctx_create(&ctx));
    test_methods_vs_dense(ctx);
    test_vjp(ctx);
    test_exact_preconditioners(ctx);
    test_exact_jacobi(ctx);
    test_refusals(ctx);
    test_ilu_shift(ctx);
    test_refresh_batch(ctx);
    test_file(ctx);
    test_list(ctx);
    test_bicgstab_breakdown(ctx);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_complex_solve");
}
