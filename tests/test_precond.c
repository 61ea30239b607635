/* The factorized preconditioners (SSOR, IC(0), ILU(0)) against dense
 * LAPACK references: exactness where zero fill is exact, the defining
 * property of the incomplete factorizations, exact transposes, errors,
 * allocation failures, float32 values and batch indexing. */
#include "test_util.h"

#include "solvers/krylov.h"

/* ---- matrices --------------------------------------------------------- */

/* Growing list of coordinate entries. */
typedef struct coo {
    sla_int n, nnz, cap;
    sla_int *r, *c;
    double *v;
} coo;

static void coo_add(coo *t, sla_int i, sla_int j, double v)
{
    if (t->nnz == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->r = realloc(t->r, (size_t)t->cap * sizeof *t->r);
        t->c = realloc(t->c, (size_t)t->cap * sizeof *t->c);
        t->v = realloc(t->v, (size_t)t->cap * sizeof *t->v);
        if (!t->r || !t->c || !t->v) abort();
    }
    t->r[t->nnz] = i;
    t->c[t->nnz] = j;
    t->v[t->nnz++] = v;
}

static void coo_free(coo *t)
{
    free(t->r);
    free(t->c);
    free(t->v);
}

/* The entries as a matrix of dtype (float32 rounds the values). */
static sla_matrix *coo_matrix(const coo *t, sla_dtype dtype)
{
    sla_matrix *A = NULL;
    float *f = malloc((size_t)(t->nnz + 1) * sizeof *f);
    for (sla_int k = 0; k < t->nnz; k++) f[k] = (float)t->v[k];
    const void *vals = dtype == SLA_F64 ? (const void *)t->v : (const void *)f;
    sla_status st = sla_matrix_from_coo(NULL, t->n, t->n, t->nnz, t->r, t->c, dtype, 1, vals,
                                        NULL, &A);
    free(f);
    if (st != SLA_OK) {
        fprintf(stderr, "coo_matrix failed: %s\n", sla_status_name(st));
        abort();
    }
    return A;
}

/* Tridiagonal, diagonally dominant; symmetric when sym. */
static coo tridiag(sla_int n, int sym, unsigned long long seed)
{
    coo t = {.n = n};
    double *x = malloc((size_t)(3 * n) * sizeof *x);
    tu_fill(x, 3 * n, seed);
    for (sla_int i = 0; i < n; i++) {
        coo_add(&t, i, i, 4.0 + x[3 * i]);
        if (i + 1 < n) {
            coo_add(&t, i, i + 1, x[3 * i + 1]);
            coo_add(&t, i + 1, i, sym ? x[3 * i + 1] : x[3 * i + 2]);
        }
    }
    free(x);
    return t;
}

/* 5-point stencil on an N x N grid: 4 on the diagonal, -1 - b (west and
 * south) and -1 + b (east and north) off it; b = 0 is Poisson. */
static coo stencil5(sla_int N, double b)
{
    coo t = {.n = N * N};
    for (sla_int y = 0; y < N; y++)
        for (sla_int x = 0; x < N; x++) {
            sla_int i = y * N + x;
            if (y > 0) coo_add(&t, i, i - N, -1.0 - b);
            if (x > 0) coo_add(&t, i, i - 1, -1.0 - b);
            coo_add(&t, i, i, 4.0);
            if (x + 1 < N) coo_add(&t, i, i + 1, -1.0 + b);
            if (y + 1 < N) coo_add(&t, i, i + N, -1.0 + b);
        }
    return t;
}

/* Random pattern with about per_row off-diagonal entries in [-1, 1] per
 * row (no repeats), strictly diagonally dominant; symmetric (hence SPD)
 * when sym. */
static coo random_dd(sla_int n, int per_row, int sym, unsigned long long seed)
{
    coo t = {.n = n};
    double *rowsum = calloc((size_t)n, sizeof *rowsum);
    sla_int *seen = malloc((size_t)n * sizeof *seen);
    for (sla_int j = 0; j < n; j++) seen[j] = -1;
    unsigned long long s = seed * 0x9E3779B97F4A7C15ULL + 7;
    for (sla_int i = 0; i < n; i++)
        for (int e = 0; e < per_row; e++) {
            sla_int j = (sla_int)((tu_rand(&s) + 1.0) * 0.5 * (double)n) % n;
            double v = tu_rand(&s);
            if (j == i || (sym && j > i) || seen[j] == i) continue;
            seen[j] = i;
            coo_add(&t, i, j, v);
            rowsum[i] += fabs(v);
            if (sym) {
                coo_add(&t, j, i, v);
                rowsum[j] += fabs(v);
            }
        }
    for (sla_int i = 0; i < n; i++) coo_add(&t, i, i, rowsum[i] + 1.0 + 0.5 * tu_rand(&s));
    free(rowsum);
    free(seen);
    return t;
}

/* ---- preconditioners ---------------------------------------------------- */

static sla_status pc_setup(sla_ctx *ctx, sla_precond_kind kind, const sla_matrix *A, sla_int ib,
                           double omega, sla__pc *pc)
{
    memset(pc, 0, sizeof *pc);
    pc->kind = kind;
    pc->alloc = sla__ctx_alloc(NULL);
    pc->n = sla_matrix_nrows(A);
    switch (kind) {
    case SLA_PRECOND_SSOR: return sla__ssor_setup(ctx, A, ib, omega, pc);
    case SLA_PRECOND_IC0: return sla__ic0_setup(ctx, A, ib, pc);
    case SLA_PRECOND_ILU0: return sla__ilu0_setup(ctx, A, ib, pc);
    default: return SLA_ERR_ARGUMENT;
    }
}

static void pc_done(sla__pc *pc)
{
    CHECK(pc->destroy != NULL);
    if (pc->destroy) pc->destroy(pc);
    CHECK(pc->fact == NULL);
}

/* Nothing installed after a failed set-up. */
static void check_untouched(const sla__pc *pc)
{
    CHECK(pc->fact == NULL && pc->apply == NULL && pc->destroy == NULL);
}

/* Column-major dense M^-1 (or M^-T) from n applies to unit vectors. */
static void pc_dense_inverse(const sla__pc *pc, bool transpose, double *Minv)
{
    sla_int n = pc->n;
    double *e = calloc((size_t)n, sizeof *e);
    for (sla_int j = 0; j < n; j++) {
        e[j] = 1.0;
        CHECK(pc->apply(pc, transpose, e, Minv + j * n, 1) == SLA_OK);
        e[j] = 0.0;
    }
    free(e);
}

/* X <- X^-1 in place (column-major n x n) through dgesv with B = I. */
static void dense_invert(sla_int n, double *X)
{
    double *id = calloc((size_t)(n * n), sizeof *id);
    lapack_int *ipiv = malloc((size_t)n * sizeof *ipiv);
    for (sla_int i = 0; i < n; i++) id[i * n + i] = 1.0;
    int info = LAPACKE_dgesv(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, X, (lapack_int)n,
                             ipiv, id, (lapack_int)n);
    CHECK(info == 0);
    memcpy(X, id, (size_t)(n * n) * sizeof *X);
    free(id);
    free(ipiv);
}

static double dotp(sla_int n, const double *x, const double *y)
{
    double s = 0.0;
    for (sla_int i = 0; i < n; i++) s += x[i] * y[i];
    return s;
}

static double nrm(sla_int n, const double *x) { return sqrt(dotp(n, x, x)); }

/* ---- 1. exactness and the defining property ------------------------------ */

/* Zero fill is exact on a tridiagonal matrix: M^-1 r = A^-1 r. */
static void test_tridiagonal_exact(void)
{
    const sla_int n = 40;
    double r[40], z[40], x[40];
    tu_fill(r, n, 11);
    struct { sla_precond_kind kind; int sym; } cases[] = {{SLA_PRECOND_ILU0, 0},
                                                         {SLA_PRECOND_IC0, 1}};
    for (int c = 0; c < 2; c++) {
        coo t = tridiag(n, cases[c].sym, 3 + (unsigned long long)c);
        sla_matrix *A = coo_matrix(&t, SLA_F64);
        sla__pc pc;
        CHECK_OK(NULL, pc_setup(NULL, cases[c].kind, A, 0, 1.0, &pc));
        for (int tr = 0; tr < 2; tr++) {
            CHECK(pc.apply(&pc, tr, r, z, 1) == SLA_OK);
            CHECK(tu_dense_solve(A, tr, r, x) == 0);
            double d = tu_reldiff(n, z, x);
            if (d > 1e-12)
                fprintf(stderr, "kind %d transpose %d: reldiff %g\n", cases[c].kind, tr, d);
            CHECK(d <= 1e-12);
        }
        pc_done(&pc);
        sla_matrix_destroy(&A);
        coo_free(&t);
    }
}

/* The product of the incomplete factors equals A on A's pattern (and
 * differs from it off the pattern, where the dropped fill lives). M is
 * reconstructed densely by inverting the dense M^-1. */
static void check_pattern_product(sla_precond_kind kind, const coo *t)
{
    sla_int n = t->n;
    sla_matrix *A = coo_matrix(t, SLA_F64);
    double *M = malloc((size_t)(n * n) * sizeof *M);
    double *D = malloc((size_t)(n * n) * sizeof *D);
    char *on = calloc((size_t)(n * n), 1);
    sla_matrix_to_dense(NULL, A, 0, D, n);
    for (sla_int k = 0; k < t->nnz; k++) on[t->c[k] * n + t->r[k]] = 1;
    sla__pc pc;
    CHECK_OK(NULL, pc_setup(NULL, kind, A, 0, 1.0, &pc));
    pc_dense_inverse(&pc, false, M);
    dense_invert(n, M);
    double err_on = 0.0, max_off = 0.0, max_a = 0.0;
    for (sla_int k = 0; k < n * n; k++) max_a = fmax(max_a, fabs(D[k]));
    for (sla_int k = 0; k < n * n; k++) {
        if (on[k]) err_on = fmax(err_on, fabs(M[k] - D[k]));
        else max_off = fmax(max_off, fabs(M[k]));
    }
    if (err_on > 1e-12 * max_a)
        fprintf(stderr, "kind %d: max |LU - A| on the pattern %g\n", kind, err_on);
    CHECK(err_on <= 1e-12 * max_a);
    CHECK(max_off > 1e-3 * max_a); /* the factorization is not exact */
    pc_done(&pc);
    free(on);
    free(D);
    free(M);
    sla_matrix_destroy(&A);
}

static void test_pattern_product(void)
{
    coo p = stencil5(6, 0.0), c = stencil5(6, 0.4);
    check_pattern_product(SLA_PRECOND_ILU0, &p);
    check_pattern_product(SLA_PRECOND_IC0, &p);
    check_pattern_product(SLA_PRECOND_ILU0, &c); /* nonsymmetric */
    /* random patterns have triangles (the 5-point graph has none), so the
     * updates l_ij -= l_im l_jm inside the pattern are exercised too */
    coo g = random_dd(40, 4, 0, 13), q = random_dd(40, 4, 1, 14);
    check_pattern_product(SLA_PRECOND_ILU0, &g);
    check_pattern_product(SLA_PRECOND_ILU0, &q);
    check_pattern_product(SLA_PRECOND_IC0, &q);
    coo_free(&p);
    coo_free(&c);
    coo_free(&g);
    coo_free(&q);
}

/* ---- 2. exact transposes ------------------------------------------------- */

/* <M^-1 r, s> == <r, M^-T s>, and in-place applies (z == r) agree. */
static void check_transpose(sla_precond_kind kind, const sla_matrix *A, double omega)
{
    sla_int n = sla_matrix_nrows(A);
    double *r = malloc((size_t)n * sizeof *r), *s = malloc((size_t)n * sizeof *s);
    double *mr = malloc((size_t)n * sizeof *mr), *ms = malloc((size_t)n * sizeof *ms);
    tu_fill(r, n, 21);
    tu_fill(s, n, 22);
    sla__pc pc;
    CHECK_OK(NULL, pc_setup(NULL, kind, A, 0, omega, &pc));
    CHECK(pc.apply(&pc, false, r, mr, 1) == SLA_OK);
    CHECK(pc.apply(&pc, true, s, ms, 1) == SLA_OK);
    double a = dotp(n, mr, s), b = dotp(n, r, ms);
    double rel = fabs(a - b) / (nrm(n, mr) * nrm(n, s));
    if (rel > 1e-12)
        fprintf(stderr, "kind %d: <M^-1 r, s> %.17g vs <r, M^-T s> %.17g\n", kind, a, b);
    CHECK(rel <= 1e-12);
    /* in place, both directions */
    CHECK(pc.apply(&pc, false, r, r, 1) == SLA_OK);
    CHECK(pc.apply(&pc, true, s, s, 1) == SLA_OK);
    CHECK(tu_reldiff(n, r, mr) == 0.0);
    CHECK(tu_reldiff(n, s, ms) == 0.0);
    if (kind == SLA_PRECOND_IC0) { /* symmetric M: the two applies agree */
        tu_fill(r, n, 21);
        CHECK(pc.apply(&pc, true, r, ms, 1) == SLA_OK);
        CHECK(tu_reldiff(n, ms, mr) == 0.0);
    }
    pc_done(&pc);
    free(r);
    free(s);
    free(mr);
    free(ms);
}

static void test_transposes(void)
{
    coo g = random_dd(80, 5, 0, 5), p = random_dd(80, 5, 1, 6);
    sla_matrix *G = coo_matrix(&g, SLA_F64), *P = coo_matrix(&p, SLA_F64);
    check_transpose(SLA_PRECOND_SSOR, G, 1.3);
    check_transpose(SLA_PRECOND_SSOR, G, 0.7);
    check_transpose(SLA_PRECOND_ILU0, G, 1.0);
    check_transpose(SLA_PRECOND_IC0, P, 1.0);
    sla_matrix_destroy(&G);
    sla_matrix_destroy(&P);
    coo_free(&g);
    coo_free(&p);
}

/* ---- 3. SSOR against its dense formula ------------------------------------ */

/* M = 1/(w(2-w)) (D + wL) D^-1 (D + wU): M^-1 r and M^-T r via LAPACK. */
static void check_ssor_dense(const sla_matrix *A, double w)
{
    sla_int n = sla_matrix_nrows(A);
    double *Ad = malloc((size_t)(n * n) * sizeof *Ad), *M = calloc((size_t)(n * n), sizeof *M);
    sla_matrix_to_dense(NULL, A, 0, Ad, n);
    for (sla_int i = 0; i < n; i++)
        for (sla_int j = 0; j < n; j++) {
            double s = 0.0; /* sum_k (D + wL)_ik / d_k (D + wU)_kj over k <= min(i, j) */
            for (sla_int k = 0; k <= (i < j ? i : j); k++) {
                double lik = k == i ? Ad[i * n + i] : w * Ad[k * n + i];
                double ukj = k == j ? Ad[j * n + j] : w * Ad[j * n + k];
                s += lik * ukj / Ad[k * n + k];
            }
            M[j * n + i] = s / (w * (2.0 - w));
        }
    double *r = malloc((size_t)n * sizeof *r), *z = malloc((size_t)n * sizeof *z);
    double *x = malloc((size_t)n * sizeof *x);
    double *Mc = malloc((size_t)(n * n) * sizeof *Mc);
    lapack_int *ipiv = malloc((size_t)n * sizeof *ipiv);
    tu_fill(r, n, 31);
    sla__pc pc;
    CHECK_OK(NULL, pc_setup(NULL, SLA_PRECOND_SSOR, A, 0, w, &pc));
    for (int tr = 0; tr < 2; tr++) {
        for (sla_int i = 0; i < n; i++)
            for (sla_int j = 0; j < n; j++) Mc[j * n + i] = tr ? M[i * n + j] : M[j * n + i];
        memcpy(x, r, (size_t)n * sizeof *x);
        CHECK(LAPACKE_dgesv(LAPACK_COL_MAJOR, (lapack_int)n, 1, Mc, (lapack_int)n, ipiv, x,
                            (lapack_int)n) == 0);
        CHECK(pc.apply(&pc, tr, r, z, 1) == SLA_OK);
        double d = tu_reldiff(n, z, x);
        if (d > 1e-12) fprintf(stderr, "SSOR w=%g transpose %d: reldiff %g\n", w, tr, d);
        CHECK(d <= 1e-12);
    }
    pc_done(&pc);
    free(Ad);
    free(M);
    free(r);
    free(z);
    free(x);
    free(Mc);
    free(ipiv);
}

static void test_ssor_dense(void)
{
    coo t = random_dd(9, 4, 0, 41);
    sla_matrix *A = coo_matrix(&t, SLA_F64);
    check_ssor_dense(A, 1.0);
    check_ssor_dense(A, 1.6);
    check_ssor_dense(A, 0.4);
    sla_matrix_destroy(&A);
    coo_free(&t);
}

/* ---- 4. errors ------------------------------------------------------------- */

static sla_matrix *small(sla_int n, sla_int nnz, const sla_int *r, const sla_int *c,
                         const double *v)
{
    sla_matrix *A = NULL;
    if (sla_matrix_from_coo(NULL, n, n, nnz, r, c, SLA_F64, 1, v, NULL, &A) != SLA_OK) abort();
    return A;
}

static void test_errors(void)
{
    sla_ctx *ctx = NULL;
    CHECK_OK(NULL, sla_ctx_create(&ctx));
    sla__pc pc;

    /* stored zero diagonal at row 2 of a diagonal-plus-first-column matrix */
    sla_int zr[] = {0, 1, 2, 3, 1, 3}, zc[] = {0, 1, 2, 3, 0, 0};
    double zv[] = {2, 3, 0, 5, 1, 1};
    sla_matrix *Z = small(4, 6, zr, zc, zv);
    CHECK_ERR(ctx, pc_setup(ctx, SLA_PRECOND_SSOR, Z, 0, 1.0, &pc), SLA_ERR_SINGULAR, "row 2");
    check_untouched(&pc);
    CHECK_ERR(ctx, pc_setup(ctx, SLA_PRECOND_ILU0, Z, 0, 1.0, &pc), SLA_ERR_SINGULAR, "row 2");
    check_untouched(&pc);
    CHECK_ERR(ctx, pc_setup(ctx, SLA_PRECOND_IC0, Z, 0, 1.0, &pc), SLA_ERR_NOT_SPD, "row 2");
    check_untouched(&pc);

    /* diagonal of row 1 not stored */
    sla_int mr[] = {0, 1, 2, 1, 2}, mc[] = {0, 0, 2, 2, 1};
    double mv[] = {4, 1, 4, 1, 1};
    sla_matrix *Mi = small(3, 5, mr, mc, mv);
    sla_precond_kind kinds[] = {SLA_PRECOND_SSOR, SLA_PRECOND_ILU0, SLA_PRECOND_IC0};
    for (int k = 0; k < 3; k++) {
        CHECK_ERR(ctx, pc_setup(ctx, kinds[k], Mi, 0, 1.0, &pc), SLA_ERR_SINGULAR, "row 1");
        check_untouched(&pc);
    }

    /* ILU(0) zero pivot from elimination: [[1, 1], [1, 1]] */
    sla_int er[] = {0, 0, 1, 1}, ec[] = {0, 1, 0, 1};
    double ones[] = {1, 1, 1, 1}, indef[] = {1, 2, 2, 1};
    sla_matrix *E = small(2, 4, er, ec, ones);
    CHECK_ERR(ctx, pc_setup(ctx, SLA_PRECOND_ILU0, E, 0, 1.0, &pc), SLA_ERR_SINGULAR,
              "zero pivot 0 at row 1");
    check_untouched(&pc);

    /* IC(0) on the symmetric indefinite [[1, 2], [2, 1]] */
    sla_matrix *S = small(2, 4, er, ec, indef);
    CHECK_ERR(ctx, pc_setup(ctx, SLA_PRECOND_IC0, S, 0, 1.0, &pc), SLA_ERR_NOT_SPD,
              "IC(0) breakdown: non-positive pivot -3 at row 1");
    check_untouched(&pc);
    CHECK(strstr(sla_ctx_message(ctx), "try ilu0") != NULL);
    CHECK_OK(ctx, pc_setup(ctx, SLA_PRECOND_ILU0, S, 0, 1.0, &pc)); /* ILU(0) copes */
    pc_done(&pc);

    /* SSOR weight outside (0, 2) */
    double bad[] = {2.5, 2.0, 0.0, -1.0, NAN};
    for (int k = 0; k < 5; k++) {
        CHECK_ERR(ctx, pc_setup(ctx, SLA_PRECOND_SSOR, S, 0, bad[k], &pc), SLA_ERR_ARGUMENT,
                  "omega");
        check_untouched(&pc);
    }

    /* batch index out of range, order mismatch */
    CHECK_ST(ctx, pc_setup(ctx, SLA_PRECOND_ILU0, S, 1, 1.0, &pc), SLA_ERR_ARGUMENT);
    memset(&pc, 0, sizeof pc);
    pc.alloc = sla__ctx_alloc(NULL);
    pc.n = 3;
    CHECK_ST(ctx, sla__ic0_setup(ctx, S, 0, &pc), SLA_ERR_DIMENSION);
    check_untouched(&pc);

    sla_matrix_destroy(&Z);
    sla_matrix_destroy(&Mi);
    sla_matrix_destroy(&E);
    sla_matrix_destroy(&S);
    sla_ctx_destroy(&ctx);
}

/* An allocator that fails its fail_at-th call and counts live blocks. */
typedef struct fail_alloc {
    int calls, fail_at, live;
} fail_alloc;

static void *fa_malloc(size_t size, void *user)
{
    fail_alloc *f = user;
    if (f->calls++ == f->fail_at) return NULL;
    void *p = malloc(size);
    if (p) f->live++;
    return p;
}

static void fa_free(void *p, void *user)
{
    fail_alloc *f = user;
    if (p) f->live--;
    free(p);
}

/* Every allocation failure returns SLA_ERR_NOMEM and frees what was taken. */
static void test_nomem(void)
{
    coo t = random_dd(30, 3, 1, 51);
    sla_matrix *A = coo_matrix(&t, SLA_F64);
    sla_precond_kind kinds[] = {SLA_PRECOND_SSOR, SLA_PRECOND_ILU0, SLA_PRECOND_IC0};
    for (int k = 0; k < 3; k++) {
        int failures = 0;
        for (int at = 0; at < 100; at++) {
            fail_alloc fa = {0, at, 0};
            sla__pc pc = {0};
            pc.alloc = (sla_allocator){fa_malloc, fa_free, &fa};
            pc.n = t.n;
            sla_status st = kinds[k] == SLA_PRECOND_SSOR ? sla__ssor_setup(NULL, A, 0, 1.2, &pc)
                            : kinds[k] == SLA_PRECOND_ILU0 ? sla__ilu0_setup(NULL, A, 0, &pc)
                                                           : sla__ic0_setup(NULL, A, 0, &pc);
            if (st == SLA_OK) {
                pc.destroy(&pc);
                CHECK(fa.live == 0);
                break;
            }
            CHECK(st == SLA_ERR_NOMEM);
            CHECK(fa.live == 0);
            check_untouched(&pc);
            failures++;
        }
        CHECK(failures >= 2);
    }
    sla_matrix_destroy(&A);
    coo_free(&t);
}

/* ---- 5. float32 values, batch index, n = 0 ----------------------------------- */

static void apply_all(sla_precond_kind kind, const sla_matrix *A, sla_int ib, const double *r,
                      double *z, double *zt)
{
    sla__pc pc;
    CHECK_OK(NULL, pc_setup(NULL, kind, A, ib, 1.3, &pc));
    CHECK(pc.apply(&pc, false, r, z, 1) == SLA_OK);
    CHECK(pc.apply(&pc, true, r, zt, 1) == SLA_OK);
    pc_done(&pc);
}

/* float32 storage computes in double: the same result as float64 holding
 * the rounded values, and ~1e-6 from the unrounded ones. */
static void test_float32(void)
{
    const sla_int n = 50;
    double r[50], z32[50], t32[50], z64[50], t64[50], zr[50], tr[50];
    tu_fill(r, n, 61);
    sla_precond_kind kinds[] = {SLA_PRECOND_SSOR, SLA_PRECOND_ILU0, SLA_PRECOND_IC0};
    for (int k = 0; k < 3; k++) {
        coo t = random_dd(n, 4, kinds[k] == SLA_PRECOND_IC0, 71 + (unsigned long long)k);
        sla_matrix *A64 = coo_matrix(&t, SLA_F64), *A32 = coo_matrix(&t, SLA_F32);
        for (sla_int e = 0; e < t.nnz; e++) t.v[e] = (double)(float)t.v[e];
        sla_matrix *Ar = coo_matrix(&t, SLA_F64);
        apply_all(kinds[k], A32, 0, r, z32, t32);
        apply_all(kinds[k], A64, 0, r, z64, t64);
        apply_all(kinds[k], Ar, 0, r, zr, tr);
        CHECK(tu_reldiff(n, z32, zr) <= 1e-15 && tu_reldiff(n, t32, tr) <= 1e-15);
        CHECK(tu_reldiff(n, z32, z64) <= 1e-6 && tu_reldiff(n, t32, t64) <= 1e-6);
        CHECK(tu_reldiff(n, z32, z64) > 0.0); /* the rounding is real */
        sla_matrix_destroy(&A64);
        sla_matrix_destroy(&A32);
        sla_matrix_destroy(&Ar);
        coo_free(&t);
    }
}

/* Value array ib of a batch gives the preconditioner of that array alone. */
static void test_batch_index(void)
{
    const sla_int n = 40;
    double r[40], z0[40], t0[40], z1[40], t1[40];
    tu_fill(r, n, 81);
    coo a = random_dd(n, 4, 1, 91);
    coo b = a;
    b.v = malloc((size_t)a.nnz * sizeof *b.v);
    for (sla_int k = 0; k < a.nnz; k++) b.v[k] = a.v[k] * (a.r[k] == a.c[k] ? 1.5 : -0.5);
    double *both = malloc((size_t)(2 * a.nnz) * sizeof *both);
    memcpy(both, a.v, (size_t)a.nnz * sizeof *both);
    memcpy(both + a.nnz, b.v, (size_t)a.nnz * sizeof *both);
    sla_matrix *AB = NULL, *B = coo_matrix(&b, SLA_F64);
    CHECK_OK(NULL, sla_matrix_from_coo(NULL, n, n, a.nnz, a.r, a.c, SLA_F64, 2, both, NULL, &AB));
    sla_precond_kind kinds[] = {SLA_PRECOND_SSOR, SLA_PRECOND_ILU0, SLA_PRECOND_IC0};
    for (int k = 0; AB && k < 3; k++) {
        apply_all(kinds[k], AB, 1, r, z0, t0);
        apply_all(kinds[k], B, 0, r, z1, t1);
        CHECK(tu_reldiff(n, z0, z1) == 0.0 && tu_reldiff(n, t0, t1) == 0.0);
    }
    sla_matrix_destroy(&AB);
    sla_matrix_destroy(&B);
    free(both);
    free(b.v);
    coo_free(&a);
}

static void test_empty(void)
{
    sla_int rowptr[1] = {0};
    sla_matrix *A = NULL;
    CHECK_OK(NULL, sla_matrix_from_csr(NULL, 0, 0, rowptr, NULL, SLA_F64, 1, NULL, SLA_COPY, &A));
    sla_precond_kind kinds[] = {SLA_PRECOND_SSOR, SLA_PRECOND_ILU0, SLA_PRECOND_IC0};
    double r[1] = {7}, z[1] = {9};
    for (int k = 0; A && k < 3; k++) {
        sla__pc pc;
        CHECK_OK(NULL, pc_setup(NULL, kinds[k], A, 0, 1.0, &pc));
        CHECK(pc.apply(&pc, false, r, z, 1) == SLA_OK);
        CHECK(pc.apply(&pc, true, r, z, 1) == SLA_OK);
        CHECK(z[0] == 9); /* nothing written */
        pc_done(&pc);
    }
    sla_matrix_destroy(&A);
}

int main(void)
{
    test_tridiagonal_exact();
    test_pattern_product();
    test_transposes();
    test_ssor_dense();
    test_errors();
    test_nomem();
    test_float32();
    test_batch_index();
    test_empty();
    return tu_finish("test_precond");
}
