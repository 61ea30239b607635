/* Equilibration of complex Krylov solves (equilibrate.c on a complex A,
 * zsolver.c's scaled solve): general, Hermitian positive definite and
 * complex symmetric grid matrices turned into L A R with L, R diagonal
 * powers of two (rows scaled by 2^+-250 and 2^+-400, symmetric D A D, a
 * uniform 2^600), solved with op N, T and H by the complex Krylov methods;
 * the forward error is measured in the unscaled units against dense
 * LAPACKE zgesv on A (L A R x' = L b0 means R x' = A^-1 b0, and likewise for
 * the transposes), the reported residual against one computed here, and
 * equilibrate=off against what it does without scaling. The VJP on a
 * scaled matrix against the dense reference and central differences (real
 * and imaginary parts), refresh with new scales, batches, complex64 values,
 * and K == A (no copy) when no scaling is needed. */
#include "test_util.h"

#include <complex.h>

#include "solvers/solver_internal.h"
#include "solvers/zsolver.h"

typedef double _Complex zc;

enum { GEN, HPD, CSYM, NKIND };
static const char *kind_name[NKIND] = {"general", "hermitian-pd", "complex-symmetric"};
enum { ROWS, SYMD, UNIFORM };
static const char *pattern_name[] = {"rows", "D A D", "uniform"};

typedef struct {
    sla_int n, nnz;
    sla_int row[1024], col[1024];
    zc val[1024];
} coo;

/* An m x m grid operator (n = m^2) of the given kind. */
static void grid_coo(int m, int kind, coo *c)
{
    zc d, e, w, no, so;
    switch (kind) {
    case HPD: d = 4.5, e = -1 + 0.3 * _Complex_I, w = conj(e), no = -1 - 0.2 * _Complex_I, so = conj(no); break;
    case CSYM: d = 3.6 + 0.4 * _Complex_I, e = w = -1 + 0.1 * _Complex_I, no = so = -1 - 0.05 * _Complex_I; break;
    default: d = 4 + 0.5 * _Complex_I, e = -1.2 + 0.2 * _Complex_I, w = -0.8 - 0.1 * _Complex_I, no = -1 + 0.3 * _Complex_I, so = -0.9;
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

static zc zldexp(zc z, int e) { return CMPLX(ldexp(creal(z), e), ldexp(cimag(z), e)); }

/* Exponents of L (le) and R (re) for a pattern: rows 2^{-E, 0, E}; D A D
 * with d_i in 2^{-E, 0, E} (entries up to 2^+-2E); one 2^E for all. */
static void scales(int pattern, int E, sla_int n, int *le, int *re)
{
    for (sla_int i = 0; i < n; i++) {
        int s = (int)((i * 7) % 3 - 1) * E;
        le[i] = pattern == UNIFORM ? E : s;
        re[i] = pattern == SYMD ? s : 0;
    }
}

/* c scaled: L A R. */
static void scaled_coo(const coo *c, const int *le, const int *re, coo *s)
{
    *s = *c;
    for (sla_int k = 0; k < c->nnz; k++) s->val[k] = zldexp(c->val[k], le[c->row[k]] + re[c->col[k]]);
}

/* The values of a COO in CSR order (map from sla_matrix_from_coo). */
static void csr_values(const coo *c, const sla_int *map, zc *v)
{
    for (sla_int k = 0; k < c->nnz; k++) v[map[k]] = c->val[k];
}

static sla_matrix *from_coo(sla_ctx *ctx, const coo *c, sla_int *map)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, c->n, c->n, c->nnz, c->row, c->col, SLA_C128, 1, c->val, map, &A));
    return A;
}

/* Dense op(A) x = b by zgesv (op 0 N, 1 T, 2 H). */
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

/* ||x||_2 without overflow or underflow (entries up to 2^800). */
static double znorm(sla_int n, const zc *x)
{
    double m = 0.0, s = 0.0;
    for (sla_int i = 0; i < n; i++) m = fmax(m, fmax(fabs(creal(x[i])), fabs(cimag(x[i]))));
    if (m == 0.0) return 0.0;
    int e = ilogb(m);
    for (sla_int i = 0; i < n; i++) {
        zc y = zldexp(x[i], -e);
        s += creal(y) * creal(y) + cimag(y) * cimag(y);
    }
    return ldexp(sqrt(s), e);
}

/* ||x - y|| / ||y|| */
static double zdiff(sla_int n, const zc *x, const zc *y)
{
    zc *d = malloc((size_t)n * sizeof *d);
    for (sla_int i = 0; i < n; i++) d[i] = x[i] - y[i];
    double r = znorm(n, d) / znorm(n, y);
    free(d);
    return r;
}

/* ||b - op(A) x|| / ||b|| from the COO, entry by entry (no overflow: each
 * product a_ij x_j of the scaled problems is of b's size). */
static double rel_residual(const coo *c, int op, const zc *b, const zc *x)
{
    sla_int n = c->n;
    zc *r = malloc((size_t)n * sizeof *r);
    memcpy(r, b, (size_t)n * sizeof *r);
    for (sla_int k = 0; k < c->nnz; k++) {
        sla_int i = c->row[k], j = c->col[k];
        if (op == 0) r[i] -= c->val[k] * x[j];
        else r[j] -= (op == 2 ? conj(c->val[k]) : c->val[k]) * x[i];
    }
    double rr = znorm(n, r) / znorm(n, b);
    free(r);
    return rr;
}

static void zrand(unsigned long long *s, sla_int n, zc *x)
{
    for (sla_int i = 0; i < n; i++) x[i] = tu_rand(s) + tu_rand(s) * _Complex_I;
}

static sla_solver_options opts_for(sla_method m, sla_precond_kind p, int eq)
{
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = m;
    o.precond = p;
    o.rtol = 1e-12;
    o.restart = 100;
    o.equilibrate = eq;
    return o;
}

typedef struct {
    sla_method m;
    sla_precond_kind p;
} combo;

static const combo fits[NKIND][4] = {
    [GEN] = {{SLA_METHOD_GMRES, SLA_PRECOND_ILU0}, {SLA_METHOD_BICGSTAB, SLA_PRECOND_JACOBI}},
    [HPD] = {{SLA_METHOD_CG, SLA_PRECOND_IC0}, {SLA_METHOD_MINRES, SLA_PRECOND_NONE},
             {SLA_METHOD_MINRES, SLA_PRECOND_JACOBI}, {SLA_METHOD_GMRES, SLA_PRECOND_ILU0}},
    [CSYM] = {{SLA_METHOD_COCG, SLA_PRECOND_JACOBI}, {SLA_METHOD_COCG, SLA_PRECOND_ILU0},
              {SLA_METHOD_BICGSTAB, SLA_PRECOND_JACOBI}},
};
static const int nfits[NKIND] = {2, 4, 3};

/* Solve op(L A R) x' = b' for b' = L b0 (op N) or R b0 (T, H) and return
 * the forward error of R x' (L x') against zgesv's op(A)^-1 b0; *st, info
 * and *resid (the residual measured here) for the caller's checks. */
static double scaled_solve(sla_ctx *ctx, sla_solver *S, const coo *c, const coo *cs, const int *le,
                           const int *re, int op, const zc *b0, sla_status *st, sla_solve_info *info,
                           double *resid)
{
    sla_int n = c->n;
    zc *x0 = malloc((size_t)n * sizeof *x0), *b = malloc((size_t)n * sizeof *b);
    zc *x = malloc((size_t)n * sizeof *x);
    CHECK(dense_solve(c, op, b0, x0) == 0);
    const int *lb = op == 0 ? le : re, *lx = op == 0 ? re : le;
    for (sla_int i = 0; i < n; i++) b[i] = zldexp(b0[i], lb[i]);
    *st = sla_zsolver_solve(ctx, S, 0, (sla_op)op, b, x, info);
    *resid = rel_residual(cs, op, b, x);
    for (sla_int i = 0; i < n; i++) x[i] = zldexp(x[i], lx[i]);
    double err = zdiff(n, x, x0);
    free(x0);
    free(b);
    free(x);
    return err;
}

/* Every method on every kind and pattern, op N, T, H: equilibrated (auto
 * and on) the forward error is small and the residual reported is the one
 * measured; off, what the unequilibrated solve does. */
static void test_forward(sla_ctx *ctx)
{
    static coo c, cs;
    static const int Es[] = {250, 400};
    unsigned long long seed = 11;
    for (int kind = 0; kind < NKIND; kind++) {
        grid_coo(8, kind, &c);
        sla_int n = c.n;
        int le[64], re[64];
        zc b0[64];
        zrand(&seed, n, b0);
        for (int pattern = kind == GEN ? ROWS : SYMD; pattern <= UNIFORM; pattern += kind == GEN ? 2 : 1)
            for (int ie = 0; ie < (pattern == UNIFORM ? 1 : 2); ie++) {
                int E = pattern == UNIFORM ? 600 : Es[ie];
                scales(pattern, E, n, le, re);
                scaled_coo(&c, le, re, &cs);
                sla_matrix *A = from_coo(ctx, &cs, NULL);
                for (int t = 0; t < nfits[kind]; t++) {
                    combo cb = fits[kind][t];
                    for (int eq = SLA_EQUILIBRATE_AUTO; eq <= SLA_EQUILIBRATE_OFF; eq++) {
                        sla_solver_options o = opts_for(cb.m, cb.p, eq);
                        sla_solver *S = NULL;
                        sla_status cst = sla_solver_create(ctx, A, &o, &S);
                        if (eq == SLA_EQUILIBRATE_OFF && cst != SLA_OK) {
                            printf("  off: %s %s 2^%d %s+%s: create: %s\n", kind_name[kind], pattern_name[pattern],
                                   E, sla_method_name(cb.m), sla_precond_name(cb.p), sla_ctx_message(ctx));
                            continue;
                        }
                        CHECK_OK(ctx, cst);
                        if (!S) continue;
                        CHECK(eq == SLA_EQUILIBRATE_OFF ? S->K == A && !S->eq_vals : S->K != A && S->eq_on);
                        if (eq != SLA_EQUILIBRATE_OFF)
                            CHECK(S->eq_sym == (kind != GEN) && S->K->dtype == SLA_C128);
                        for (int op = 0; op < 3; op++) {
                            sla_status st;
                            sla_solve_info info;
                            double resid;
                            double err = scaled_solve(ctx, S, &c, &cs, le, re, op, b0, &st, &info, &resid);
                            if (eq == SLA_EQUILIBRATE_OFF) {
                                if (op == 0)
                                    printf("  off: %s %s 2^%d %s+%s: %s, error %.1e, residual %.1e "
                                           "(reported %.1e)\n", kind_name[kind], pattern_name[pattern], E,
                                           sla_method_name(cb.m), sla_precond_name(cb.p), sla_status_name(st),
                                           err, resid, info.residual);
                                /* without scaling, what is true here: ILU(0) and Jacobi
                                 * commute with a row scaling, and Jacobi undoes D A D and
                                 * 2^600 A for every method but COCG under D A D, so those
                                 * still solve; every other method "converges" on the large
                                 * rows with a poor x, stalls, or breaks down */
                                bool good = pattern == ROWS ||
                                            (cb.p == SLA_PRECOND_JACOBI && !(cb.m == SLA_METHOD_COCG && pattern == SYMD));
                                if (good != (st == SLA_OK && err < 1e-6))
                                    fprintf(stderr, "  off: %s %s 2^%d %s+%s op %d: %s, error %.1e\n", kind_name[kind],
                                            pattern_name[pattern], E, sla_method_name(cb.m), sla_precond_name(cb.p), op,
                                            sla_status_name(st), err);
                                CHECK(good == (st == SLA_OK && err < 1e-6));
                                if (!good) CHECK(st != SLA_OK || err > 1e-3);
                                continue;
                            }
                            bool ok = st == SLA_OK && err < 1e-6 && info.converged &&
                                      fabs(info.residual - resid) <= 0.05 * resid + 1e-15 &&
                                      strstr(info.note, "equilibrated (") != NULL;
                            if (!ok)
                                fprintf(stderr, "  %s %s 2^%d %s+%s eq %d op %d: %s, error %.2e, %lld its, "
                                        "residual %.2e (measured %.2e), %s\n", kind_name[kind],
                                        pattern_name[pattern], E, sla_method_name(cb.m),
                                        sla_precond_name(cb.p), eq, op, sla_status_name(st), err,
                                        (long long)info.iterations, info.residual, resid, info.note);
                            CHECK(ok);
                            CHECK((strstr(info.note, "symmetric scaling") != NULL) == (kind != GEN));
                            /* the scales of b: Dr for op N, Dc for T and H (uniform when
                             * only the rows were scaled) */
                            bool varied = pattern == SYMD || (pattern == ROWS && op == 0);
                            if (varied) CHECK(strstr(info.note, "scaled residual") != NULL);
                            else if (eq == SLA_EQUILIBRATE_AUTO) CHECK(strstr(info.note, "scaled residual") == NULL);
                        }
                        sla_solver_destroy(&S);
                    }
                }
                sla_matrix_destroy(&A);
            }
    }
}

/* L(A') = Re(w^H x'), x' = A'^-1 b' for A' = L A R, by the dense
 * reference on A: x' = R^-1 A^-1 L^-1 b'. */
static double loss_ref(const coo *c, const int *le, const int *re, const zc *b, const zc *w)
{
    sla_int n = c->n;
    zc *bu = calloc((size_t)n, sizeof *bu), *x = malloc((size_t)n * sizeof *x);
    for (sla_int i = 0; i < n; i++) bu[i] = zldexp(b[i], -le[i]);
    CHECK(dense_solve(c, 0, bu, x) == 0);
    double L = 0.0;
    for (sla_int i = 0; i < n; i++) L += creal(conj(w[i]) * zldexp(x[i], -re[i]));
    free(bu);
    free(x);
    return L;
}

/* The VJP on scaled matrices: gb = A'^-H w and gA against the dense
 * reference (every entry), and gA against central differences of the
 * dense loss (real and imaginary parts of a few entries). */
static void test_vjp(sla_ctx *ctx)
{
    static coo c, cs;
    static const struct {
        int kind, pattern, E;
        combo cb;
    } cases[] = {
        {GEN, ROWS, 250, {SLA_METHOD_GMRES, SLA_PRECOND_ILU0}},
        {GEN, ROWS, 400, {SLA_METHOD_BICGSTAB, SLA_PRECOND_JACOBI}},
        {HPD, SYMD, 250, {SLA_METHOD_CG, SLA_PRECOND_IC0}},
        {CSYM, SYMD, 250, {SLA_METHOD_COCG, SLA_PRECOND_ILU0}},
    };
    unsigned long long seed = 5;
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        grid_coo(6, cases[t].kind, &c);
        sla_int n = c.n, nnz = c.nnz;
        int le[36], re[36];
        scales(cases[t].pattern, cases[t].E, n, le, re);
        scaled_coo(&c, le, re, &cs);
        sla_int *map = malloc((size_t)nnz * sizeof *map);
        sla_matrix *A = from_coo(ctx, &cs, map);
        zc b[36], w[36], x[36], gb[36], x0[36], gb0[36], bu[36], wu[36];
        zc *gA = malloc((size_t)nnz * sizeof *gA);
        zrand(&seed, n, b);
        zrand(&seed, n, w);
        for (sla_int i = 0; i < n; i++) b[i] = zldexp(b[i], le[i]);
        sla_solver_options o = opts_for(cases[t].cb.m, cases[t].cb.p, SLA_EQUILIBRATE_AUTO);
        o.rtol = 1e-13;
        sla_solver *S = NULL;
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
        sla_solve_info info;
        CHECK_OK(ctx, sla_zsolver_solve(ctx, S, 0, SLA_OP_N, b, x, NULL));
        CHECK_OK(ctx, sla_zsolver_solve_vjp(ctx, S, 0, x, w, gb, gA, &info));
        CHECK(strstr(info.note, "equilibrated (") != NULL);
        sla_solver_destroy(&S);
        /* reference: x' = R^-1 x0, x0 = A^-1 L^-1 b; gb' = A'^-H w = L^-1 A^-H R^-1 w */
        for (sla_int i = 0; i < n; i++) {
            bu[i] = zldexp(b[i], -le[i]);
            wu[i] = zldexp(w[i], -re[i]);
        }
        CHECK(dense_solve(&c, 0, bu, x0) == 0);
        CHECK(dense_solve(&c, 2, wu, gb0) == 0);
        zc xs[36], gbs[36];
        for (sla_int i = 0; i < n; i++) {
            xs[i] = zldexp(x[i], re[i]);
            gbs[i] = zldexp(gb[i], le[i]);
        }
        CHECK(zdiff(n, xs, x0) < 1e-8);
        CHECK(zdiff(n, gbs, gb0) < 1e-8);
        /* gA'[k] = -gb'[i] conj(x'[j]) = 2^-(le_i + re_j) (-gb0_i conj(x0_j)) */
        zc *g1 = malloc((size_t)nnz * sizeof *g1), *g0 = malloc((size_t)nnz * sizeof *g0);
        for (sla_int k = 0; k < nnz; k++) {
            sla_int i = c.row[k], j = c.col[k];
            g1[k] = zldexp(gA[map[k]], le[i] + re[j]);
            g0[k] = -gb0[i] * conj(x0[j]);
        }
        double gerr = zdiff(nnz, g1, g0);
        if (!(gerr < 1e-8)) fprintf(stderr, "  vjp case %zu: gA error %.2e\n", t, gerr);
        CHECK(gerr < 1e-8);
        /* central differences of the dense loss in the scaled entry k:
         * perturbing a'_k by h' perturbs a_k by h' 2^-(le_i + re_j) */
        const sla_int ks[] = {0, 5, nnz / 2, nnz - 1};
        for (int q = 0; q < 4; q++) {
            sla_int k = ks[q], i = c.row[k], j = c.col[k];
            zc a0 = c.val[k];
            double h = 1e-6 * cabs(a0), fd[2];
            for (int part = 0; part < 2; part++) {
                zc dir = part ? _Complex_I : 1.0;
                c.val[k] = a0 + h * dir;
                double Lp = loss_ref(&c, le, re, b, w);
                c.val[k] = a0 - h * dir;
                double Lm = loss_ref(&c, le, re, b, w);
                c.val[k] = a0;
                fd[part] = ldexp((Lp - Lm) / (2.0 * h), -(le[i] + re[j])); /* d/d a'_k */
            }
            zc g = gA[map[k]];
            double scale = cabs(g);
            if (!(fabs(fd[0] - creal(g)) <= 1e-6 * scale && fabs(fd[1] - cimag(g)) <= 1e-6 * scale))
                fprintf(stderr, "  vjp case %zu entry %lld: fd %.6e%+.6ei vs gA %.6e%+.6ei\n", t, (long long)k,
                        fd[0], fd[1], creal(g), cimag(g));
            CHECK(fabs(fd[0] - creal(g)) <= 1e-6 * scale);
            CHECK(fabs(fd[1] - cimag(g)) <= 1e-6 * scale);
        }
        free(g1);
        free(g0);
        free(gA);
        free(map);
        sla_matrix_destroy(&A);
    }
}

/* Refresh: new values with other scales get new scales; values that need
 * none give K == A again (no copy), and the scaling comes back after. Also
 * method=auto when it picks a Krylov method (memory_limit too small for
 * factors). */
static void test_refresh(sla_ctx *ctx)
{
    static coo c, cs;
    grid_coo(8, GEN, &c);
    sla_int n = c.n, nnz = c.nnz;
    int le[64], re[64];
    zc b0[64];
    unsigned long long seed = 3;
    zrand(&seed, n, b0);
    sla_int *map = malloc((size_t)nnz * sizeof *map);
    zc *v = malloc((size_t)nnz * sizeof *v);
    for (int automatic = 0; automatic < 2; automatic++) {
        scales(ROWS, 250, n, le, re);
        scaled_coo(&c, le, re, &cs);
        sla_matrix *A = from_coo(ctx, &cs, map);
        sla_solver_options o = opts_for(automatic ? SLA_METHOD_AUTO : SLA_METHOD_GMRES, SLA_PRECOND_ILU0,
                                        SLA_EQUILIBRATE_AUTO);
        if (automatic) o.memory_limit = 1.0; /* no factor fits: Krylov */
        sla_solver *S = NULL;
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
        if (!S) {
            sla_matrix_destroy(&A);
            continue;
        }
        static const struct {
            int pattern, E;
        } steps[] = {{ROWS, 250}, {ROWS, -400}, {ROWS, 0}, {UNIFORM, 600}, {ROWS, 400}};
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            if (s > 0) {
                scales(steps[s].pattern, steps[s].E, n, le, re);
                scaled_coo(&c, le, re, &cs);
                csr_values(&cs, map, v);
                CHECK_OK(ctx, sla_matrix_set_values(ctx, A, 0, v));
                CHECK_OK(ctx, sla_solver_refresh(ctx, S));
            }
            bool none = steps[s].E == 0;
            CHECK(none ? S->K == A && !S->eq_vals && !S->eq_on : S->K != A && S->eq_on);
            for (int op = 0; op < 3; op++) {
                sla_status st;
                sla_solve_info info;
                double resid;
                double err = scaled_solve(ctx, S, &c, &cs, le, re, op, b0, &st, &info, &resid);
                if (!(st == SLA_OK && err < 1e-6))
                    fprintf(stderr, "  refresh %s step %zu op %d: %s, error %.2e, %s\n", automatic ? "auto" : "gmres",
                            s, op, sla_status_name(st), err, info.note);
                CHECK(st == SLA_OK && err < 1e-6);
                CHECK((strstr(info.note, "equilibrated") != NULL) == !none);
                CHECK(fabs(info.residual - resid) <= 0.05 * resid + 1e-15);
                if (automatic && s == 0 && op == 0) printf("  auto: %s+%s; %s\n", info.method, info.precond, info.note);
            }
        }
        sla_solver_destroy(&S);
        sla_matrix_destroy(&A);
    }
    free(map);
    free(v);
}

/* No scaling needed: K is A itself for every method (no copy); a direct
 * method never equilibrates; equilibrate=on scales anyway. */
static void test_unscaled(sla_ctx *ctx)
{
    static coo c;
    for (int kind = 0; kind < NKIND; kind++) {
        grid_coo(8, kind, &c);
        sla_matrix *A = from_coo(ctx, &c, NULL);
        for (int t = 0; t < nfits[kind]; t++) {
            sla_solver_options o = opts_for(fits[kind][t].m, fits[kind][t].p, SLA_EQUILIBRATE_AUTO);
            sla_solver *S = NULL;
            CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
            CHECK(S && S->K == A && !S->eq_vals && !S->eq_r && !S->eq_on);
            sla_solver_destroy(&S);
        }
        sla_solver_options o = opts_for(SLA_METHOD_GMRES, SLA_PRECOND_ILU0, SLA_EQUILIBRATE_ON);
        sla_solver *S = NULL;
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
        CHECK(S && S->K != A && S->eq_on);
        int zero[64] = {0};
        zc b0[64];
        unsigned long long seed = 9;
        zrand(&seed, c.n, b0);
        for (int op = 0; op < 3; op++) {
            sla_status st;
            sla_solve_info info;
            double resid;
            double err = scaled_solve(ctx, S, &c, &c, zero, zero, op, b0, &st, &info, &resid);
            CHECK(st == SLA_OK && err < 1e-8 && strstr(info.note, "equilibrated") != NULL);
        }
        sla_solver_destroy(&S);
        sla_matrix_destroy(&A);
    }
    /* a direct method on a scaled matrix: A itself */
    static coo cs;
    grid_coo(8, GEN, &c);
    int le[64], re[64];
    scales(ROWS, 250, c.n, le, re);
    scaled_coo(&c, le, re, &cs);
    sla_matrix *A = from_coo(ctx, &cs, NULL);
    sla_solver_options o = opts_for(SLA_METHOD_LU, SLA_PRECOND_NONE, SLA_EQUILIBRATE_ON);
    sla_solver *S = NULL;
    sla_status st = sla_solver_create(ctx, A, &o, &S);
    if (st != SLA_OK) printf("  lu on rows 2^+-250: %s\n", sla_ctx_message(ctx));
    if (S) {
        CHECK(S->K == A && !S->eq_vals);
        zc b0[64], x[64];
        unsigned long long seed = 2;
        zrand(&seed, c.n, b0);
        st = sla_zsolver_solve(ctx, S, 0, SLA_OP_N, b0, x, NULL);
        CHECK(st == SLA_OK || st == SLA_NOT_CONVERGED);
    }
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
}

/* Two value arrays with different scales: scales per array. */
static void test_batch(sla_ctx *ctx)
{
    static coo c, c0, c1;
    grid_coo(8, GEN, &c);
    sla_int n = c.n, nnz = c.nnz;
    int le0[64], re0[64], le1[64], re1[64];
    scales(ROWS, 250, n, le0, re0);
    scales(ROWS, -400, n, le1, re1);
    scaled_coo(&c, le0, re0, &c0);
    scaled_coo(&c, le1, re1, &c1);
    zc *vals = malloc(2 * (size_t)nnz * sizeof *vals);
    memcpy(vals, c0.val, (size_t)nnz * sizeof *vals);
    memcpy(vals + nnz, c1.val, (size_t)nnz * sizeof *vals);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, n, n, nnz, c.row, c.col, SLA_C128, 2, vals, NULL, &A));
    sla_solver_options o = opts_for(SLA_METHOD_GMRES, SLA_PRECOND_ILU0, SLA_EQUILIBRATE_AUTO);
    sla_solver *S = NULL;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    if (S) {
        CHECK(S->eq_on && S->eq_r[0] != S->eq_r[n]);
        zc b0[64], b[64], x[64], x0[64];
        unsigned long long seed = 4;
        zrand(&seed, n, b0);
        CHECK(dense_solve(&c, 0, b0, x0) == 0);
        for (sla_int ib = 0; ib < 2; ib++) {
            const int *le = ib ? le1 : le0;
            for (sla_int i = 0; i < n; i++) b[i] = zldexp(b0[i], le[i]);
            sla_solve_info info;
            CHECK_OK(ctx, sla_zsolver_solve(ctx, S, ib, SLA_OP_N, b, x, &info));
            double err = zdiff(n, x, x0);
            if (!(err < 1e-6)) fprintf(stderr, "  batch %lld: error %.2e\n", (long long)ib, err);
            CHECK(err < 1e-6);
        }
    }
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
    free(vals);
}

/* complex64 values: K is complex128, and the solve equals the complex128
 * one on the same (rounded) values. */
static void test_c64(sla_ctx *ctx)
{
    static coo c, cs;
    grid_coo(8, GEN, &c);
    sla_int n = c.n, nnz = c.nnz;
    int le[64], re[64];
    scales(ROWS, 40, n, le, re);
    scaled_coo(&c, le, re, &cs);
    float *f = malloc(2 * (size_t)nnz * sizeof *f);
    for (sla_int k = 0; k < nnz; k++) { /* the values complex64 holds, in both */
        volatile float re_ = (float)creal(cs.val[k]), im_ = (float)cimag(cs.val[k]);
        f[2 * k] = re_;
        f[2 * k + 1] = im_;
    }
    for (sla_int k = 0; k < nnz; k++) cs.val[k] = CMPLX((double)f[2 * k], (double)f[2 * k + 1]);
    sla_matrix *A32 = NULL, *A = from_coo(ctx, &cs, NULL);
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, n, n, nnz, cs.row, cs.col, SLA_C64, 1, f, NULL, &A32));
    sla_solver_options o = opts_for(SLA_METHOD_GMRES, SLA_PRECOND_ILU0, SLA_EQUILIBRATE_ON);
    sla_solver *S = NULL, *S32 = NULL;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    CHECK_OK(ctx, sla_solver_create(ctx, A32, &o, &S32));
    if (S && S32) {
        CHECK(S32->eq_on && S32->K->dtype == SLA_C128);
        zc b[64], x[64], x32[64];
        unsigned long long seed = 8;
        zrand(&seed, n, b);
        for (sla_int i = 0; i < n; i++) b[i] = zldexp(b[i], le[i]); /* L b0: x of moderate size */
        CHECK_OK(ctx, sla_zsolver_solve(ctx, S, 0, SLA_OP_N, b, x, NULL));
        CHECK_OK(ctx, sla_zsolver_solve(ctx, S32, 0, SLA_OP_N, b, x32, NULL));
        zc xr[64];
        CHECK(dense_solve(&cs, 0, b, xr) == 0);
        CHECK(zdiff(n, x32, x) < 1e-10);
        CHECK(zdiff(n, x, xr) < 1e-8);
    }
    sla_solver_destroy(&S);
    sla_solver_destroy(&S32);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&A32);
    free(f);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    test_unscaled(ctx);
    test_forward(ctx);
    test_vjp(ctx);
    test_refresh(ctx);
    test_batch(ctx);
    test_c64(ctx);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_complex_equil");
}
