/* The contract every direct backend (the private sla__direct_ops table of
 * src/solvers/direct.h) must meet, written once and run once per backend:
 * `test_backend_contract NAME` with NAME one of cholmod, umfpack, klu,
 * superlu. Plain and transposed solves (several right-hand sides, ld > n)
 * and log-determinants against LAPACK on generated and real matrices,
 * every ordering (or its refusal), one analysis for a batch of value
 * arrays, refactorization, structural and numerical singularity, float32,
 * n = 0, argument errors, concurrent factorizations and solves, allocation
 * failure at every allocation. What differs between backends (matrices
 * they are tested on, tolerances, orderings, SPD-only, refusal behaviour)
 * is one static table, BACKENDS; the few backend-specific behaviours that
 * are no part of the contract (CHOLMOD's LL^T refusing indefinite
 * matrices and LDL^T's zero pivots, SuperLU's exact-zero pivots and
 * structural fuzz) are the *_extra functions at the end, guarded by the
 * table entry. */
#include "test_util.h"

#include "solvers/direct.h"

#ifdef _OPENMP
#include <omp.h>
#endif

enum { CH = 1, UM = 2, KL = 4, SU = 8, LU2 = UM | KL, UNSYM = UM | KL | SU };

/* ORDS[i] is ordering bit 1 << i in the masks below. */
static const sla_ordering ORDS[4] = {SLA_ORDER_AUTO, SLA_ORDER_AMD, SLA_ORDER_METIS,
                                     SLA_ORDER_NATURAL};
enum { O_AUTO = 1, O_NAT = 8, O_ALL = 15 };

/* A test matrix: a generator (poisson: p = dim, N; convdiff: N, bx, by;
 * random: n, per_row, kind, seed), a file of tests/data, or a builder. */
typedef struct mspec mspec;
struct mspec {
    const char *label;
    sla_matrix *(*make)(sla_ctx *, const mspec *);
    double p[4];
    const char *file;
    sla_dtype dtype;
};

#define M(label, make, ...) {label, make, {__VA_ARGS__}, NULL, SLA_F64}
#define F(label, file, dtype) {label, mk_file, {0}, file, dtype}

static sla_matrix *mk_poisson(sla_ctx *c, const mspec *m);
static sla_matrix *mk_convdiff(sla_ctx *c, const mspec *m);
static sla_matrix *mk_random(sla_ctx *c, const mspec *m);
static sla_matrix *mk_file(sla_ctx *c, const mspec *m);
static sla_matrix *mk_batch3(sla_ctx *c, const mspec *m);
static sla_matrix *mk_neumann(sla_ctx *c, const mspec *m);
static sla_matrix *mk_scaled(sla_ctx *c, const mspec *m);
static sla_matrix *mk_zerodiag(sla_ctx *c, const mspec *m);

typedef struct backend {
    const char *name;
    const sla__direct_ops *(*get)(void);
    unsigned bit;
    int nmodes;               /* 2: LL^T (ldlt = false) and LDL^T (ldlt = true) */
    bool spd;                 /* needs SPD matrices; its transposed solve is the plain one */
    const char *ord_name[4];  /* stats.ordering per ORDS ("a|b": either); NULL: refused */
    const char *refuse_frag;  /* message fragment of that refusal (SLA_ERR_UNSUPPORTED) */
    unsigned predicts;        /* ORDS bits for which analyze predicts nnz, flops, bytes */
    bool bwd_inf;             /* backward error in the inf-norm (else 2-norm, Frobenius) */
    double bwd_tol;           /* backward error bound */
    int nthreads;             /* sla__direct_opts.nthreads of the solve cases */
    bool near_singular;       /* refuses rounding-noise pivots (sla__pivot_check) */
    sla_status mismatch;      /* factor with a matrix other than the analysed one */
    const char *nan_value;    /* fragment for a NaN among the values; NULL: not checked */
    bool nan_rhs;             /* a NaN right-hand side is SLA_ERR_VALUE */
    bool selinv;              /* has selected inversion */
    double differ;            /* the two factors' solutions of test_batch_refactor differ by more */
    int alloc_points;         /* allocations of sla's own that the sweep fails, at least */
    bool args;                /* argument checks: A NULL, ib, ld < n, nrhs < 0, other matrix */
    bool same_rows;           /* refuses other columns with the same row lengths (mismatch) */
    mspec refac, conc, alloc; /* batch/refactorization, concurrency, allocation sweep */
} backend;

static const backend BACKENDS[] = {
    {.name = "cholmod", .get = sla__backend_cholmod, .bit = CH, .nmodes = 2, .spd = true,
     .ord_name = {"amd", "amd", "metis", "natural"}, .refuse_frag = NULL, .predicts = 15,
     .bwd_inf = false, .bwd_tol = 1e-14, .nthreads = 1, .near_singular = false,
     .mismatch = SLA_ERR_ARGUMENT, .nan_value = "value 3", .nan_rhs = false, .selinv = true,
     .differ = 0.1, .alloc_points = 3, .args = true, .same_rows = true,
     .refac = M("poisson2d", mk_poisson, 2, 9), .conc = M("random-spd", mk_random, 400, 5, 2, 3),
     .alloc = F("bcsstk01-f32", "bcsstk01.mtx", SLA_F32)},
    {.name = "umfpack", .get = sla__backend_umfpack, .bit = UM, .nmodes = 1, .spd = false,
     .ord_name = {"amd|colamd", "amd|colamd", "metis", "natural"}, .refuse_frag = NULL,
     .predicts = 15, .bwd_inf = true, .bwd_tol = 1e-12, .nthreads = 2, .near_singular = true,
     .mismatch = SLA_ERR_ARGUMENT, .nan_value = "value 3", .nan_rhs = true, .selinv = true,
     .differ = 0, .alloc_points = 5, .args = true, .same_rows = true,
     .refac = M("convdiff2d", mk_convdiff, 9, 5, 3), .conc = M("random", mk_random, 300, 5, 0, 11),
     .alloc = F("west0067-f32", "west0067.mtx", SLA_F32)},
    {.name = "klu", .get = sla__backend_klu, .bit = KL, .nmodes = 1, .spd = false,
     .ord_name = {"amd|colamd", "amd|colamd", NULL, "natural"}, .refuse_frag = "metis",
     .predicts = 3, .bwd_inf = true, .bwd_tol = 1e-12, .nthreads = 2, .near_singular = true,
     .mismatch = SLA_ERR_ARGUMENT, .nan_value = "value 3", .nan_rhs = true, .selinv = false,
     .differ = 0, .alloc_points = 5, .args = true, .same_rows = true,
     .refac = M("convdiff2d", mk_convdiff, 9, 5, 3), .conc = M("random", mk_random, 300, 5, 0, 11),
     .alloc = F("west0067-f32", "west0067.mtx", SLA_F32)},
    {.name = "superlu", .get = sla__backend_superlu, .bit = SU, .nmodes = 1, .spd = false,
     .ord_name = {"colamd", "mmd_at_plus_a", NULL, "natural"}, .refuse_frag = "METIS",
     .predicts = 0, .bwd_inf = false, .bwd_tol = 1e-13, .nthreads = 1, .near_singular = false,
     .mismatch = SLA_ERR_DIMENSION, .nan_value = "value 3", .nan_rhs = true, .selinv = false,
     .differ = 1e-3, .alloc_points = 5, .args = true, .same_rows = false,
     .refac = F("west0067", "west0067.mtx", SLA_F64),
     .conc = M("convdiff2d", mk_convdiff, 20, 15, 5),
     .alloc = F("west0067-f32", "west0067.mtx", SLA_F32)},
};

/* The solve cases: matrix, relative error bound against LAPACK, orderings,
 * backends. */
static const struct scase {
    mspec m;
    double rtol;
    unsigned ords, backends;
} CASES[] = {
    {M("poisson2d", mk_poisson, 2, 12), 1e-10, O_ALL, CH},
    {M("poisson3d", mk_poisson, 3, 6), 1e-10, O_ALL, CH},
    {M("random-spd", mk_random, 300, 6, 2, 7), 1e-10, O_ALL, CH},
    {F("bcsstk01", "bcsstk01.mtx", SLA_F64), 1e-10, O_ALL, CH},
    {F("494_bus", "494_bus.mtx", SLA_F64), 1e-10, O_ALL, CH},
    {F("bcsstk01-f32", "bcsstk01.mtx", SLA_F32), 1e-10, O_AUTO, CH},
    {M("convdiff2d", mk_convdiff, 12, 30, -12), 1e-10, O_ALL, LU2},
    {M("random", mk_random, 250, 4, 0, 7), 1e-10, O_ALL, LU2},
    {M("convdiff2d", mk_convdiff, 12, 30, -10), 1e-10, O_ALL, SU},
    {M("random", mk_random, 300, 4, 0, 7), 1e-10, O_ALL, SU},
    {M("poisson2d", mk_poisson, 2, 15), 1e-10, O_ALL, SU},
    {F("west0067", "west0067.mtx", SLA_F64), 1e-10, O_ALL, UNSYM},
    {F("cage5", "cage5.mtx", SLA_F64), 1e-10, O_ALL, UNSYM},
    /* cond ~ 2e11: the forward error is bounded only by cond * eps; the
     * backward error is the real test (SuperLU: that one only) */
    {F("fs_183_6", "fs_183_6.mtx", SLA_F64), 1e-3, O_ALL, LU2},
    {F("fs_183_6", "fs_183_6.mtx", SLA_F64), INFINITY, O_ALL, SU},
    {F("west0067-f32", "west0067.mtx", SLA_F32), 1e-10, O_AUTO, UNSYM},
    {M("west0067 batch of 3", mk_batch3, 0), 1e-10, O_AUTO, LU2},
    /* the Neumann Laplacian of a 30 x 30 grid shifted by 1e-6: cond ~ 1e7 */
    {M("shifted Neumann Laplacian", mk_neumann, 30, 1e-6), 1e-6, O_AUTO, LU2},
    {M("west0067 scaled by 1e-7..1e7", mk_scaled, 0), 1e-8, O_AUTO, LU2},
    {M("zero diagonal", mk_zerodiag, 0), 1e-10, O_ALL, SU},
};

static const backend *BE;
static const sla__direct_ops *OPS;

/* ---- matrices ------------------------------------------------------------ */

static sla_matrix *mk_poisson(sla_ctx *c, const mspec *m)
{
    sla_matrix *A = NULL;
    CHECK_OK(c, sla_gen_poisson(c, (int)m->p[0], (sla_int)m->p[1], &A));
    return A;
}

static sla_matrix *mk_convdiff(sla_ctx *c, const mspec *m)
{
    sla_matrix *A = NULL;
    CHECK_OK(c, sla_gen_convdiff2d(c, (sla_int)m->p[0], m->p[1], m->p[2], &A));
    return A;
}

static sla_matrix *mk_random(sla_ctx *c, const mspec *m)
{
    sla_matrix *A = NULL;
    CHECK_OK(c, sla_gen_random(c, (sla_int)m->p[0], (sla_int)m->p[1], (sla_gen_kind)m->p[2],
                               (uint64_t)m->p[3], &A));
    return A;
}

static sla_matrix *read_mtx(sla_ctx *c, const char *file, sla_dtype dtype)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", SLA_TEST_DATA, file);
    sla_matrix *A = NULL;
    CHECK_OK(c, sla_mm_read(c, path, dtype, &A));
    if (A) CHECK(sla_matrix_dtype(A) == dtype);
    return A;
}

static sla_matrix *mk_file(sla_ctx *c, const mspec *m) { return read_mtx(c, m->file, m->dtype); }

/* A's pattern with nb value arrays v (nb * nnz), copied or borrowed. */
static sla_matrix *with_values(sla_ctx *c, const sla_matrix *A, sla_int nb, const double *v,
                               sla_ownership own)
{
    sla_int nnz = sla_matrix_nnz(A), n = sla_matrix_nrows(A);
    sla_int *ci = malloc((size_t)(nnz + 1) * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    sla_matrix *B = NULL;
    CHECK_OK(c, sla_matrix_from_csr(c, n, n, sla_matrix_rowptr(A), ci, SLA_F64, nb, v, own, &B));
    free(ci);
    return B;
}

/* New values w from A's values v: kind 0: v (1 + s p) + a p, p seeded
 * in [-1, 1) (SPD: v times the scalar 1 + 0.2 seed, which keeps it SPD); kind 1:
 * 2 v + diag(0.5 + 0.01 i); kind 2: 3 v + I (SPD) or -v. */
static void new_values(const sla_matrix *A, int kind, double s, double a, unsigned long long seed,
                       double *w)
{
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    const sla_int *rp = sla_matrix_rowptr(A);
    sla_int *ci = malloc((size_t)(nnz + 1) * sizeof *ci);
    double *p = malloc((size_t)(nnz + 1) * sizeof *p);
    const double *v = sla_matrix_values(A, 0);
    sla_matrix_get_colind(A, ci);
    tu_fill(p, nnz, seed);
    for (sla_int i = 0; i < n; i++)
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) {
            double d = ci[k] == i;
            if (kind == 0) w[k] = BE->spd ? v[k] * (1.0 + 0.2 * (double)seed) : v[k] * (1.0 + s * p[k]) + a * p[k];
            else if (kind == 1) w[k] = 2.0 * v[k] + d * (0.5 + 0.01 * (double)i);
            else w[k] = BE->spd ? 3.0 * v[k] + d : -v[k];
        }
    free(ci);
    free(p);
}

/* west0067 with three value arrays; the third flips the determinant's sign. */
static sla_matrix *mk_batch3(sla_ctx *c, const mspec *m)
{
    (void)m;
    sla_matrix *W = read_mtx(c, "west0067.mtx", SLA_F64), *B = NULL;
    if (!W) return NULL;
    sla_int nnz = sla_matrix_nnz(W);
    double *v = malloc(3 * (size_t)nnz * sizeof *v), *p = malloc((size_t)nnz * sizeof *p);
    memcpy(v, sla_matrix_values(W, 0), (size_t)nnz * sizeof *v);
    tu_fill(p, nnz, 99);
    for (sla_int k = 0; k < nnz; k++) {
        v[nnz + k] = v[k] * (1.0 + 0.3 * p[k]);
        v[2 * nnz + k] = -2.0 * v[k] + 0.01 * p[k]; /* det flips sign: n = 67 is odd */
    }
    B = with_values(c, W, 3, v, SLA_COPY);
    sla_matrix_destroy(&W);
    free(v);
    free(p);
    return B;
}

/* The graph Laplacian of an N x N grid plus shift * I. */
static sla_matrix *mk_neumann(sla_ctx *c, const mspec *m)
{
    sla_int N = (sla_int)m->p[0], n = N * N, k = 0;
    sla_int *r = malloc(5 * (size_t)n * sizeof *r), *cc = malloc(5 * (size_t)n * sizeof *cc);
    double *v = malloc(5 * (size_t)n * sizeof *v);
    for (sla_int y = 0; y < N; y++)
        for (sla_int x = 0; x < N; x++) {
            sla_int i = y * N + x, deg = 0;
            const sla_int nb[4][2] = {{x - 1, y}, {x + 1, y}, {x, y - 1}, {x, y + 1}};
            for (int q = 0; q < 4; q++)
                if (nb[q][0] >= 0 && nb[q][0] < N && nb[q][1] >= 0 && nb[q][1] < N) {
                    r[k] = i;
                    cc[k] = nb[q][1] * N + nb[q][0];
                    v[k++] = -1.0;
                    deg++;
                }
            r[k] = i;
            cc[k] = i;
            v[k++] = (double)deg + m->p[1];
        }
    sla_matrix *A = NULL;
    CHECK_OK(c, sla_matrix_from_coo(c, n, n, k, r, cc, SLA_F64, 1, v, NULL, &A));
    free(r);
    free(cc);
    free(v);
    return A;
}

/* west0067 with rows and columns scaled over 16 orders of magnitude: the
 * factorization and the (row-relative) singularity test are unaffected. */
static sla_matrix *mk_scaled(sla_ctx *c, const mspec *m)
{
    (void)m;
    sla_matrix *W = read_mtx(c, "west0067.mtx", SLA_F64), *B;
    if (!W) return NULL;
    sla_int n = sla_matrix_nrows(W), nnz = sla_matrix_nnz(W);
    const sla_int *rp = sla_matrix_rowptr(W);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    double *v = malloc((size_t)nnz * sizeof *v);
    sla_matrix_get_colind(W, ci);
    memcpy(v, sla_matrix_values(W, 0), (size_t)nnz * sizeof *v);
    for (sla_int i = 0; i < n; i++)
        for (sla_int k = rp[i]; k < rp[i + 1]; k++)
            v[k] *= pow(10.0, (double)(i % 9 - 4)) * pow(10.0, (double)(ci[k] % 7 - 3));
    B = with_values(c, W, 1, v, SLA_COPY);
    sla_matrix_destroy(&W);
    free(ci);
    free(v);
    return B;
}

/* An n x n matrix from dense row-major values (zeros not stored). */
static sla_matrix *from_dense(sla_ctx *c, int n, const double *d)
{
    sla_int r[64], cc[64];
    double v[64];
    int nz = 0;
    for (int i = 0; i < n * n; i++)
        if (d[i] != 0.0) {
            r[nz] = i / n;
            cc[nz] = i % n;
            v[nz++] = d[i];
        }
    sla_matrix *A = NULL;
    CHECK_OK(c, sla_matrix_from_coo(c, n, n, nz, r, cc, SLA_F64, 1, v, NULL, &A));
    return A;
}

/* A stored zero on the diagonal needs pivoting, not an error. */
static sla_matrix *mk_zerodiag(sla_ctx *c, const mspec *m)
{
    (void)m;
    sla_int r[6] = {0, 0, 1, 1, 2, 2}, cc[6] = {0, 1, 0, 2, 1, 2};
    double v[6] = {0, 1, 1, 1, 1, 1};
    sla_matrix *A = NULL;
    CHECK_OK(c, sla_matrix_from_coo(c, 3, 3, 6, r, cc, SLA_F64, 1, v, NULL, &A));
    return A;
}

/* ---- dense references ------------------------------------------------- */

static double *dense_of(const sla_matrix *A, sla_int ib)
{
    sla_int n = sla_matrix_nrows(A);
    double *D = malloc((size_t)(n * n + 1) * sizeof *D);
    if (D) sla_matrix_to_dense(NULL, A, ib, D, n > 0 ? n : 1);
    return D;
}

/* x = op(A_ib)^-1 b for nrhs columns by dgetrf + dgetrs; 0 on success. */
static int ref_solve(const sla_matrix *A, sla_int ib, int tr, sla_int nrhs, const double *b,
                     sla_int ldb, double *x, sla_int ldx)
{
    sla_int n = sla_matrix_nrows(A);
    double *D = dense_of(A, ib);
    lapack_int *ipiv = malloc((size_t)(n + 1) * sizeof *ipiv);
    for (sla_int j = 0; j < nrhs; j++) memcpy(x + j * ldx, b + j * ldb, (size_t)n * sizeof *x);
    int info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, D, (lapack_int)n, ipiv);
    if (info == 0)
        info = LAPACKE_dgetrs(LAPACK_COL_MAJOR, tr ? 'T' : 'N', (lapack_int)n, (lapack_int)nrhs, D,
                              (lapack_int)n, ipiv, x, (lapack_int)ldx);
    free(D);
    free(ipiv);
    return info;
}

/* sign and log|det A_ib| from dgetrf (U's diagonal and the row swaps). */
static void ref_logdet(const sla_matrix *A, sla_int ib, double *sign, double *logabs)
{
    sla_int n = sla_matrix_nrows(A);
    double *D = dense_of(A, ib);
    lapack_int *ipiv = malloc((size_t)(n + 1) * sizeof *ipiv);
    LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, D, (lapack_int)n, ipiv);
    *sign = 1.0;
    *logabs = 0.0;
    for (sla_int i = 0; i < n; i++) {
        double u = D[i * n + i];
        if (ipiv[i] != i + 1) *sign = -*sign;
        if (u < 0) *sign = -*sign;
        if (u == 0) *sign = 0.0;
        *logabs += log(fabs(u));
    }
    free(D);
    free(ipiv);
}

/* Normwise backward error of x for op(A) x = b: ||r||_inf / (||A||_inf
 * ||x||_inf + ||b||_inf), or ||r||_2 / (||A||_F ||x||_2 + ||b||_2). */
static double backward_error(const double *D, sla_int n, int tr, const double *x, const double *b,
                             bool inf)
{
    double rn = 0.0, an = 0.0, xn = 0.0, bn = 0.0;
    for (sla_int i = 0; i < n; i++) {
        double r = b[i], rowsum = 0.0;
        for (sla_int j = 0; j < n; j++) {
            double a = tr ? D[i * n + j] : D[j * n + i];
            r -= a * x[j];
            rowsum += inf ? fabs(a) : a * a;
        }
        rn = inf ? fmax(rn, fabs(r)) : rn + r * r;
        an = inf ? fmax(an, rowsum) : an + rowsum;
        xn = inf ? fmax(xn, fabs(x[i])) : xn + x[i] * x[i];
        bn = inf ? fmax(bn, fabs(b[i])) : bn + b[i] * b[i];
    }
    if (!inf) rn = sqrt(rn), an = sqrt(an), xn = sqrt(xn), bn = sqrt(bn);
    return rn / fmax(an * xn + bn, 1e-300);
}

/* ---- the solve case ------------------------------------------------------ */

/* Analyze (and factor value array 0): the first error, SLA_OK if none. */
static sla_status analyze_factor(sla_ctx *ctx, const sla_matrix *A, sla_ordering ord)
{
    sla__direct_opts o = {.ordering = ord, .ldlt = false, .nthreads = 1};
    sla__direct_stats stats;
    void *sym = NULL, *num = NULL;
    sla_status st = OPS->analyze(ctx, A, &o, &sym, &stats);
    if (st) {
        CHECK(sym == NULL);
        return st;
    }
    st = OPS->factor(ctx, sym, A, 0, &num);
    if (st) CHECK(num == NULL);
    OPS->free_num(num);
    OPS->free_sym(sym);
    return st;
}

/* Solves with num (value array ib): 3 right-hand sides, ldb = n + 2, ldx =
 * n + 3, plain and transposed, against LAPACK (relative error <= rtol),
 * backward stable, padding untouched, each column equal to its single
 * solve (SPD: the transposed solve is the plain one), and the
 * log-determinant. The first plain solution goes to x0 when not NULL. */
static void check_num(sla_ctx *ctx, void *sym, void *num, const sla_matrix *A, sla_int ib,
                      double rtol, const char *label, double *x0)
{
    sla_int n = sla_matrix_nrows(A), nrhs = 3, ldb = n + 2, ldx = n + 3;
    double *b = malloc((size_t)(ldb * nrhs) * sizeof *b);
    double *x = malloc((size_t)(2 * ldx * nrhs) * sizeof *x), *xr = malloc((size_t)(ldx * nrhs) * sizeof *xr);
    double *x1 = malloc((size_t)(n + 1) * sizeof *x1), *D = dense_of(A, ib);
    int before = tu_failures;
    tu_fill(b, ldb * nrhs, 17 + (unsigned long long)ib);
    for (int tr = 0; tr < 2; tr++) {
        double *xt = x + tr * ldx * nrhs;
        for (sla_int k = 0; k < ldx * nrhs; k++) xt[k] = 777.0;
        CHECK_OK(ctx, OPS->solve(ctx, sym, num, tr, nrhs, b, ldb, xt, ldx));
        CHECK(ref_solve(A, ib, tr, nrhs, b, ldb, xr, ldx) == 0);
        for (sla_int j = 0; j < nrhs; j++) {
            double rd = tu_reldiff(n, xt + j * ldx, xr + j * ldx);
            double be = backward_error(D, n, tr, xt + j * ldx, b + j * ldb, BE->bwd_inf);
            if (!(rd <= rtol) || !(be <= BE->bwd_tol))
                fprintf(stderr, "  %s: ib %lld %s rhs %lld: reldiff %.3g (bound %.1g), backward "
                                "error %.3g\n", label, (long long)ib, tr ? "A^T" : "A", (long long)j,
                        rd, rtol, be);
            CHECK(rd <= rtol);
            CHECK(be <= BE->bwd_tol);
            for (sla_int i = n; i < ldx; i++) CHECK(xt[j * ldx + i] == 777.0);
            CHECK_OK(ctx, OPS->solve(ctx, sym, num, tr, 1, b + j * ldb, n, x1, n));
            CHECK(tu_reldiff(n, xt + j * ldx, x1) < 1e-14);
            if (tr && BE->spd) CHECK(tu_reldiff(n, xt + j * ldx, x + j * ldx) == 0.0);
        }
    }
    double s, l, rs, rl;
    CHECK_OK(ctx, OPS->logdet(ctx, sym, num, &s, &l));
    ref_logdet(A, ib, &rs, &rl);
    CHECK(s == rs);
    CHECK_CLOSE(l, rl, 1e-10);
    if (x0) memcpy(x0, x, (size_t)n * sizeof *x0);
    if (tu_failures != before)
        fprintf(stderr, "  in %s, value array %lld (logdet %g %.17g, LAPACK %g %.17g)\n", label,
                (long long)ib, s, l, rs, rl);
    free(b);
    free(x);
    free(xr);
    free(x1);
    free(D);
}

/* Factor value array ib with sym, then check_num. */
static void check_factor(sla_ctx *ctx, void *sym, const sla_matrix *A, sla_int ib, double rtol,
                         const char *label, double *x0)
{
    void *num = NULL;
    CHECK_OK(ctx, OPS->factor(ctx, sym, A, ib, &num));
    if (num) check_num(ctx, sym, num, A, ib, rtol, label, x0);
    else fprintf(stderr, "  (%s, value array %lld)\n", label, (long long)ib);
    OPS->free_num(num);
}

static bool name_is(const char *got, const char *expect)
{
    size_t k = strlen(got);
    for (const char *p = expect; p; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL)
        if (strncmp(p, got, k) == 0 && (p[k] == 0 || p[k] == '|')) return true;
    return false;
}

/* Analyze A with ordering ORDS[oi] in mode `mode`, check the predictions,
 * then every value array (check_factor); x0: value array 0's solution. */
static void check_case(sla_ctx *ctx, const sla_matrix *A, int oi, int mode, double rtol,
                       const char *label, double *x0)
{
    sla__direct_opts o = {.ordering = ORDS[oi], .ldlt = mode, .nthreads = BE->nthreads};
    sla__direct_stats st;
    memset(&st, 0xff, sizeof st);
    void *sym = NULL;
    CHECK_OK(ctx, OPS->analyze(ctx, A, &o, &sym, &st));
    if (!sym) {
        fprintf(stderr, "  (%s, ordering %s, mode %d)\n", label, sla_ordering_name(ORDS[oi]), mode);
        return;
    }
    bool known = BE->predicts >> oi & 1;
    CHECK(st.factor_nnz >= (known ? (double)sla_matrix_nrows(A) : 0.0));
    CHECK(known ? st.flops > 0.0 : st.flops >= 0.0);
    CHECK(known ? st.bytes > 0.0 : st.bytes >= 0.0);
    CHECK(memchr(st.ordering, 0, sizeof st.ordering) != NULL);
    CHECK(name_is(st.ordering, BE->ord_name[oi]));
    for (sla_int ib = 0; ib < sla_matrix_nbatch(A); ib++)
        check_factor(ctx, sym, A, ib, rtol, label, ib ? NULL : x0);
    OPS->free_sym(sym);
}

/* Every case of CASES for this backend, in every mode and ordering: the
 * solutions of all orderings and modes agree. */
static void test_cases(sla_ctx *ctx)
{
    for (size_t c = 0; c < sizeof CASES / sizeof *CASES; c++) {
        const struct scase *sc = &CASES[c];
        if (!(sc->backends & BE->bit)) continue;
        sla_matrix *A = sc->m.make(ctx, &sc->m);
        if (!A) continue;
        sla_int n = sla_matrix_nrows(A);
        double *ref = malloc((size_t)(n + 1) * sizeof *ref), *x = malloc((size_t)(n + 1) * sizeof *x);
        bool first = true;
        for (int oi = 0; oi < 4; oi++)
            if ((sc->ords >> oi & 1) && !BE->ord_name[oi])
                CHECK_ERR(ctx, analyze_factor(ctx, A, ORDS[oi]), SLA_ERR_UNSUPPORTED, BE->refuse_frag);
        for (int mode = 0; mode < BE->nmodes; mode++)
            for (int oi = 0; oi < 4; oi++) {
                if (!(sc->ords >> oi & 1) || !BE->ord_name[oi]) continue;
                check_case(ctx, A, oi, mode, sc->rtol, sc->m.label, first ? ref : x);
                if (!first) CHECK(tu_reldiff(n, x, ref) < sc->rtol);
                first = false;
            }
        free(ref);
        free(x);
        sla_matrix_destroy(&A);
    }
}

/* ---- batches and refactorization ---------------------------------------- */

/* One analysis for two value arrays (each factor its own, checked in the
 * other order than factored, and really different), then refactorization
 * with the same analysis: new values in a borrowed array, then set_values. */
static void test_batch_refactor(sla_ctx *ctx)
{
    sla_matrix *A = BE->refac.make(ctx, &BE->refac);
    if (!A) return;
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *v = malloc((size_t)(2 * nnz + 1) * sizeof *v), *w = malloc((size_t)(nnz + 1) * sizeof *w);
    double *b = malloc((size_t)n * sizeof *b), *x = malloc(2 * (size_t)n * sizeof *x);
    tu_fill(b, n, 8);
    for (int mode = 0; mode < BE->nmodes; mode++) {
        sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = mode, .nthreads = 1};
        sla__direct_stats stats;
        void *sym = NULL, *num[2] = {NULL, NULL};
        memcpy(v, sla_matrix_values(A, 0), (size_t)nnz * sizeof *v);
        new_values(A, BE->spd ? 1 : 0, 0.3, 0, 1001, v + nnz);
        sla_matrix *B = with_values(ctx, A, 2, v, SLA_COPY);
        if (B) CHECK_OK(ctx, OPS->analyze(ctx, B, &o, &sym, &stats));
        for (int ib = 0; sym && ib < 2; ib++) CHECK_OK(ctx, OPS->factor(ctx, sym, B, ib, &num[ib]));
        if (num[0] && num[1]) {
            for (int ib = 1; ib >= 0; ib--) {
                check_num(ctx, sym, num[ib], B, ib, 1e-10, BE->refac.label, NULL);
                CHECK_OK(ctx, OPS->solve(ctx, sym, num[ib], false, 1, b, n, x + ib * n, n));
            }
            CHECK(tu_reldiff(n, x, x + n) > BE->differ);
        }
        for (int ib = 0; ib < 2; ib++) OPS->free_num(num[ib]);
        OPS->free_sym(sym);
        sla_matrix_destroy(&B);

        /* refactorization: values changed behind a borrowed array, then set */
        memcpy(w, sla_matrix_values(A, 0), (size_t)nnz * sizeof *w);
        B = with_values(ctx, A, 1, w, SLA_BORROW);
        sym = NULL;
        if (B) CHECK_OK(ctx, OPS->analyze(ctx, B, &o, &sym, &stats));
        if (sym) {
            check_factor(ctx, sym, B, 0, 1e-10, "refactor, first values", NULL);
            new_values(A, BE->spd ? 1 : 0, 0.5, 0.2, 5, w);
            check_factor(ctx, sym, B, 0, 1e-10, "refactor, new values (borrowed)", NULL);
            new_values(A, 2, 0, 0, 0, v);
            CHECK_OK(ctx, sla_matrix_set_values(ctx, B, 0, v));
            check_factor(ctx, sym, B, 0, 1e-10, "refactor, set_values", NULL);
        }
        OPS->free_sym(sym);
        sla_matrix_destroy(&B);
    }
    free(v);
    free(w);
    free(b);
    free(x);
    sla_matrix_destroy(&A);
}

/* ---- singularity ---------------------------------------------------------- */

/* Singular matrices (dense row-major): refused with SLA_ERR_SINGULAR and a
 * message naming the backend, by analyze or factor, for the orderings of
 * the mask. `noise`: elimination may leave rounding noise instead of a
 * zero pivot (only for backends with near_singular). */
static const struct sing {
    int n;
    double d[25];
    unsigned ords;
    const char *frag;
    bool noise;
} SINGULAR[] = {
    {4, {2, 1, 0, 0, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 1, 4}, O_ALL, "row 2 is empty", false},
    {4, {2, 1, 0, 0, 0, 0, 0, 0, 0, 1, 3, 0, 1, 0, 0, 4}, O_AUTO, "structurally singular", false},
    {4, {2, 0, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0, 0, 0, 4}, O_AUTO, "column 2 is empty", false},
    /* no empty row or column: columns 1 and 2 only in row 2; rows 0 and 1 only in column 0 */
    {3, {1, 0, 0, 2, 0, 0, 3, 4, 5}, O_AUTO, "structural rank 2", false},
    {3, {1, 0, 0, 2, 0, 0, 3, 4, 5}, O_NAT, "structurally singular", false},
    {4, {2, 0, 0, 0, 3, 0, 0, 0, 1, 1, 3, 0, 1, 2, 0, 4}, O_AUTO, "structural rank 3", false},
    /* full pattern, row 1 = 2 * row 0; a dense 2 x 2 of ones */
    {3, {1, 2, 3, 2, 4, 6, 1, 1, 1}, O_AUTO, "singular", false},
    {2, {1, 1, 1, 1}, O_AUTO, "singular", false},
    /* rows 1 and 3 equal, full structural rank */
    {5, {4, 1, 0, 2, 0, 1, 5, 2, 0, 1, 0, 2, 6, 1, 0, 1, 5, 2, 0, 1, 3, 0, 1, 0, 7}, O_ALL,
     "singular", true},
};

static void test_singular(sla_ctx *ctx)
{
    if (BE->spd) return; /* these matrices are unsymmetric */
    for (size_t s = 0; s < sizeof SINGULAR / sizeof *SINGULAR; s++) {
        const struct sing *sg = &SINGULAR[s];
        if (sg->noise && !BE->near_singular) continue;
        sla_matrix *A = from_dense(ctx, sg->n, sg->d);
        for (int oi = 0; A && oi < 4; oi++)
            if ((sg->ords >> oi & 1) && BE->ord_name[oi]) {
                CHECK_ERR(ctx, analyze_factor(ctx, A, ORDS[oi]), SLA_ERR_SINGULAR, sg->frag);
                CHECK(strstr(sla_ctx_message(ctx), BE->name) != NULL);
            }
        sla_matrix_destroy(&A);
    }
    /* GD97_b (symmetric pattern graph matrix) is singular */
    sla_matrix *A = read_mtx(ctx, "GD97_b.mtx", SLA_F64);
    if (A) CHECK_ERR(ctx, analyze_factor(ctx, A, SLA_ORDER_AUTO), SLA_ERR_SINGULAR, "singular");
    sla_matrix_destroy(&A);
    /* the pure Neumann Laplacian of a 30 x 30 grid: rows sum to zero, its
     * pivots come out as rounding noise, not zeros */
    if (!BE->near_singular) return;
    const mspec m = M("Neumann", mk_neumann, 30, 0);
    A = mk_neumann(ctx, &m);
    for (int oi = 0; A && oi < 4; oi++)
        if (BE->ord_name[oi])
            CHECK_ERR(ctx, analyze_factor(ctx, A, ORDS[oi]), SLA_ERR_SINGULAR, "singular");
    sla_matrix_destroy(&A);
}

/* ---- n = 0, argument errors, non-finite input ----------------------------- */

static void test_empty_and_errors(sla_ctx *ctx)
{
    const sla_int rp0[1] = {0};
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 0, 0, rp0, NULL, SLA_F64, 1, NULL, SLA_COPY, &A));
    for (int mode = 0; A && mode < BE->nmodes; mode++) {
        sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = mode, .nthreads = 1};
        sla__direct_stats stats;
        void *sym = NULL, *num = NULL;
        double b[1] = {3}, x[1] = {5}, s = 0, l = 1;
        CHECK_OK(ctx, OPS->analyze(ctx, A, &o, &sym, &stats));
        CHECK(stats.factor_nnz == 0);
        if (sym) CHECK_OK(ctx, OPS->factor(ctx, sym, A, 0, &num));
        for (int ld = 0; num && ld <= 1; ld++)
            for (int tr = 0; tr < 2; tr++) CHECK_OK(ctx, OPS->solve(ctx, sym, num, tr, 1, b, ld, x, ld));
        CHECK(x[0] == 5);
        if (num) CHECK_OK(ctx, OPS->logdet(ctx, sym, num, &s, &l));
        if (num) CHECK(s == 1.0 && l == 0.0);
        OPS->free_num(num);
        OPS->free_sym(sym);
    }
    sla_matrix_destroy(&A);

    /* argument errors */
    CHECK_OK(ctx, sla_gen_poisson(ctx, 1, 5, &A));
    if (!A) return;
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = 1};
    sla__direct_stats stats;
    void *sym = (void *)&o, *num = NULL;
    if (BE->args) CHECK_ST(ctx, OPS->analyze(ctx, NULL, &o, &sym, &stats), SLA_ERR_ARGUMENT);
    if (BE->args) CHECK(sym == NULL);
    sla__direct_opts bad = o;
    bad.ordering = (sla_ordering)42;
    CHECK_ERR(ctx, OPS->analyze(ctx, A, &bad, &sym, &stats), SLA_ERR_ARGUMENT, "ordering");
    CHECK_OK(ctx, OPS->analyze(ctx, A, &o, &sym, &stats));
    if (sym && BE->args) CHECK_ST(ctx, OPS->factor(ctx, sym, A, 1, &num), SLA_ERR_ARGUMENT);
    if (sym) CHECK_OK(ctx, OPS->factor(ctx, sym, A, 0, &num));
    double b[5] = {1, 2, 3, 4, 5}, x[5];
    if (num && BE->args) {
        CHECK_ST(ctx, OPS->solve(ctx, sym, num, false, 1, b, 4, x, 5), SLA_ERR_ARGUMENT);
        CHECK_ST(ctx, OPS->solve(ctx, sym, num, false, -1, b, 5, x, 5), SLA_ERR_ARGUMENT);
    }
    if (num) CHECK_OK(ctx, OPS->solve(ctx, sym, num, false, 0, b, 5, x, 5));
    b[1] = NAN;
    if (num && BE->nan_rhs)
        CHECK_ERR(ctx, OPS->solve(ctx, sym, num, false, 1, b, 5, x, 5), SLA_ERR_VALUE, "NaN");
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 1, 6, &B));
    void *num2 = NULL;
    if (sym && B && BE->args) CHECK_ERR(ctx, OPS->factor(ctx, sym, B, 0, &num2), BE->mismatch, "analysis");
    CHECK(num2 == NULL);
    sla_matrix_destroy(&B);
    OPS->free_num(num);
    OPS->free_sym(sym);
    OPS->free_num(NULL);
    OPS->free_sym(NULL);
    sla_matrix_destroy(&A);

    /* a NaN slipped into a borrowed value array after the analysis (which
     * may be asked for no predictions: stats NULL) */
    sla_int rp3[4] = {0, 2, 4, 5}, ci3[5] = {0, 1, 0, 1, 2};
    double v3[5] = {4, 1, 1, 3, 2};
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 3, 3, rp3, ci3, SLA_F64, 1, v3, SLA_BORROW, &A));
    sym = num = NULL;
    if (A) CHECK_OK(ctx, OPS->analyze(ctx, A, &o, &sym, NULL));
    /* same n and nnz, another pattern: other row lengths, or (same_rows)
     * other columns in the same rows */
    const sla_int rp_rows[4] = {0, 1, 4, 5}, ci_rows[5] = {0, 0, 1, 2, 2};
    const sla_int ci_cols[5] = {0, 2, 0, 1, 2};
    for (int k = 0; sym && BE->args && k < 2; k++) {
        if (k == 1 && !BE->same_rows) continue;
        CHECK_OK(ctx, sla_matrix_from_csr(ctx, 3, 3, k ? rp3 : rp_rows, k ? ci_cols : ci_rows,
                                          SLA_F64, 1, v3, SLA_COPY, &B));
        num2 = NULL;
        if (B) CHECK_ERR(ctx, OPS->factor(ctx, sym, B, 0, &num2), BE->mismatch, "analysis");
        CHECK(num2 == NULL);
        sla_matrix_destroy(&B);
    }
    if (!BE->nan_value) {
        OPS->free_sym(sym);
        sla_matrix_destroy(&A);
        return;
    }
    v3[3] = NAN;
    if (sym) CHECK_ERR(ctx, OPS->factor(ctx, sym, A, 0, &num), SLA_ERR_VALUE, BE->nan_value);
    CHECK(num == NULL);
    OPS->free_sym(sym);
    sla_matrix_destroy(&A);
}

/* ---- concurrency ---------------------------------------------------------- */

/* NB value arrays factored on one analysis from 3 threads at once (each its
 * own context), each factor checked; then NT threads solve at once, first
 * on different numeric objects, then all on one, 20 times each: the
 * results equal serial solves bit for bit. */
static void test_concurrent(sla_ctx *ctx)
{
    enum { NB = 6, NT = 12, REPS = 20 };
    sla_matrix *R = BE->conc.make(ctx, &BE->conc), *B = NULL;
    if (!R) return;
    sla_int n = sla_matrix_nrows(R), nnz = sla_matrix_nnz(R);
    double *v = malloc(NB * (size_t)nnz * sizeof *v);
    for (int ib = 0; ib < NB; ib++) new_values(R, 0, 0.2, 0, 40 + (unsigned long long)ib, v + ib * nnz);
    B = with_values(ctx, R, NB, v, SLA_COPY);
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .nthreads = 1};
    sla__direct_stats stats;
    void *sym = NULL, *num[NB] = {0};
    sla_status st[NB];
    double *b = malloc((size_t)n * NT * sizeof *b);
    double *xs = malloc((size_t)n * NT * sizeof *xs), *xp = malloc((size_t)n * NT * sizeof *xp);
    tu_fill(b, n * NT, 3);
    if (B) CHECK_OK(ctx, OPS->analyze(ctx, B, &o, &sym, &stats));
    if (sym) {
#pragma omp parallel for num_threads(3) schedule(static, 1)
        for (int k = 0; k < NB; k++) {
            sla_ctx *c = NULL;
            st[k] = sla_ctx_create(&c);
            if (st[k] == SLA_OK) st[k] = OPS->factor(c, sym, B, k, &num[k]);
            sla_ctx_destroy(&c);
        }
        for (int k = 0; k < NB; k++) {
            CHECK(st[k] == SLA_OK);
            if (num[k]) check_num(ctx, sym, num[k], B, k, 1e-10, BE->conc.label, NULL);
        }
    }
    /* CHOLMOD keeps its solve workspace in the numeric object (cholmod.c:
     * solves on different numeric objects may run concurrently, not on one):
     * NB threads, one numeric object each. The LU backends allow any. */
    bool shared = strcmp(BE->name, "cholmod") != 0;
    int nt = shared ? NT : NB;
    for (int rep = 0; sym && rep < (shared ? 2 : 1); rep++) {
        int fails = 0;
        for (int t = 0; t < nt; t++) /* thread t: array t % NB (rep 1: 0), transposed if odd */
            CHECK_OK(ctx, OPS->solve(ctx, sym, num[rep ? 0 : t % NB], t & 1, 1, b + t * n, n, xs + t * n, n));
#pragma omp parallel for num_threads(nt) schedule(static, 1) reduction(+ : fails)
        for (int t = 0; t < nt; t++)
            for (int r = 0; r < REPS; r++) {
                sla_ctx *c = NULL;
                if (t % 2 == 0 && sla_ctx_create(&c) != SLA_OK) fails++;
                if (OPS->solve(c, sym, num[rep ? 0 : t % NB], t & 1, 1, b + t * n, n, xp + t * n, n)) fails++;
                sla_ctx_destroy(&c);
            }
        CHECK(fails == 0);
        CHECK(memcmp(xs, xp, (size_t)nt * n * sizeof *xs) == 0);
    }
    for (int k = 0; k < NB; k++) OPS->free_num(num[k]);
    OPS->free_sym(sym);
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&R);
    free(v);
    free(b);
    free(xs);
    free(xp);
}

/* ---- allocation failure at every allocation ------------------------------- */

/* analyze, factor, solve both ways, logdet; the first error */
static sla_status full_cycle(sla_ctx *c, const sla_matrix *A, sla_ordering ord)
{
    sla_int n = sla_matrix_nrows(A);
    sla__direct_opts o = {.ordering = ord, .nthreads = 1};
    sla__direct_stats stats;
    void *sym = NULL, *num = NULL;
    double *b = malloc(2 * (size_t)n * sizeof *b), *x = malloc(2 * (size_t)n * sizeof *x), s, l;
    tu_fill(b, 2 * n, 1);
    sla_status st = OPS->analyze(c, A, &o, &sym, &stats);
    if (st) CHECK(sym == NULL);
    if (!st && (st = OPS->factor(c, sym, A, 0, &num))) CHECK(num == NULL);
    if (!st) st = OPS->solve(c, sym, num, false, 2, b, n, x, n);
    if (!st) st = OPS->solve(c, sym, num, true, 2, b, n, x, n);
    if (!st) st = OPS->logdet(c, sym, num, &s, &l);
    OPS->free_num(num);
    OPS->free_sym(sym);
    free(b);
    free(x);
    return st;
}

/* sla-owned memory goes through the ctx allocator, all of it is freed, and
 * a failure at any allocation is SLA_ERR_NOMEM naming memory, without leaks. */
static void test_alloc_failures(sla_ctx *ctx)
{
    sla_matrix *A = BE->alloc.make(ctx, &BE->alloc);
    const sla_ordering ords[2] = {SLA_ORDER_AUTO, SLA_ORDER_NATURAL};
    for (int oi = 0; A && oi < 2; oi++) {
        counter cnt = {0, -1, 0, 0};
        sla_allocator a = {count_malloc, count_free, &cnt};
        sla_ctx *c = NULL;
        sla_ctx_create(&c);
        sla_ctx_set_allocator(c, &a);
        CHECK_OK(c, full_cycle(c, A, ords[oi]));
        CHECK(cnt.live == 0);
        long total = cnt.calls, points = 0;
        for (long k = 0; k < total; k++) {
            cnt.calls = 0;
            cnt.fail_at = k;
            cnt.failures = 0;
            sla_status st = full_cycle(c, A, ords[oi]);
            if (cnt.failures == 0) continue;
            points++;
            if (st != SLA_ERR_NOMEM || cnt.live != 0)
                fprintf(stderr, "  failing allocation %ld -> %s, %ld live: %s\n", k,
                        sla_status_name(st), cnt.live, sla_ctx_message(c));
            CHECK(st == SLA_ERR_NOMEM);
            CHECK(cnt.live == 0);
            CHECK(strstr(sla_ctx_message(c), "memory") != NULL);
        }
        CHECK(points >= BE->alloc_points);
        sla_ctx_destroy(&c);
    }
    sla_matrix_destroy(&A);
}

/* A larger problem, timed (informational): 2D Poisson, n = 40000. */
static void test_timed(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 200, &A));
    if (!A) return;
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    double *r = malloc((size_t)n * sizeof *r);
    tu_fill(b, n, 2);
    for (int mode = 0; mode < BE->nmodes; mode++) {
        sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = mode, .nthreads = 1};
        sla__direct_stats s;
        void *sym = NULL, *num = NULL;
        double t0 = sla__now();
        CHECK_OK(ctx, OPS->analyze(ctx, A, &o, &sym, &s));
        double t1 = sla__now();
        if (sym) CHECK_OK(ctx, OPS->factor(ctx, sym, A, 0, &num));
        double t2 = sla__now();
        if (num) CHECK_OK(ctx, OPS->solve(ctx, sym, num, false, 1, b, n, x, n));
        double t3 = sla__now();
        if (num) {
            double rr = sqrt(sla__residual(A, 0, x, b, r, 1)) / sla__nrm2(n, b, 1);
            CHECK(rr < 1e-12);
            printf("%s poisson2d n=%lld%s: analyze %.3f s, factor %.3f s, solve %.4f s, "
                   "nnz(L+U) %.3g, %.3g flops, %.3g MB, ordering %s, residual %.2g\n", BE->name,
                   (long long)n, BE->nmodes > 1 ? (mode ? " ldlt" : " llt") : "", t1 - t0, t2 - t1,
                   t3 - t2, s.factor_nnz, s.flops, s.bytes / 1e6, s.ordering, rr);
        }
        OPS->free_num(num);
        OPS->free_sym(sym);
    }
    free(b);
    free(x);
    free(r);
    sla_matrix_destroy(&A);
}

/* ---- backend-specific behaviour (not part of the contract) ----------------- */

/* CHOLMOD: LDL^T (no pivoting) of symmetric indefinite matrices; LL^T
 * refuses them naming the column; LDL^T's zero pivots. */
static void cholmod_extra(sla_ctx *ctx)
{
    const mspec pm = M("poisson2d", mk_poisson, 2, 10);
    sla_matrix *P = mk_poisson(ctx, &pm), *A = NULL;
    if (P) {
        sla_int nnz = sla_matrix_nnz(P);
        double *v = malloc((size_t)nnz * sizeof *v);
        memcpy(v, sla_matrix_values(P, 0), (size_t)nnz * sizeof *v);
        const sla_int *rp = sla_matrix_rowptr(P);
        sla_int *ci = malloc((size_t)nnz * sizeof *ci);
        sla_matrix_get_colind(P, ci);
        for (sla_int i = 0; i < sla_matrix_nrows(P); i++)
            for (sla_int k = rp[i]; k < rp[i + 1]; k++) v[k] -= ci[k] == i ? 1.3 : 0.0;
        A = with_values(ctx, P, 1, v, SLA_COPY);
        free(v);
        free(ci);
    }
    double x[100], ref[100], sg, la;
    if (A) {
        ref_logdet(A, 0, &sg, &la);
        CHECK(sg != 0);
        const int ois[3] = {0, 2, 3}; /* auto, metis, natural */
        for (int k = 0; k < 3; k++) {
            check_case(ctx, A, ois[k], 1, 1e-10, "poisson2d-1.3I", k ? x : ref);
            if (k) CHECK(tu_reldiff(100, x, ref) < 1e-10);
        }
    }
    /* LL^T: the analysis works, the factorization reports the column */
    sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = 1};
    sla__direct_stats stats;
    void *sym = NULL, *num = (void *)&o;
    if (A) CHECK_OK(ctx, OPS->analyze(ctx, A, &o, &sym, &stats));
    if (sym) {
        CHECK_ERR(ctx, OPS->factor(ctx, sym, A, 0, &num), SLA_ERR_NOT_SPD, "column");
        CHECK(num == NULL);
        CHECK(strstr(sla_ctx_message(ctx), "not positive definite") != NULL);
    }
    OPS->free_sym(sym);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&P);

    /* tumorAntiAngiogenesis_2: symmetric indefinite with 122 zero diagonal
     * entries (saddle point). LDL^T without pivoting meets a zero pivot
     * under AMD; in the natural order every pivot is nonzero (cond ~2e10:
     * the forward error scales with it). [[0 1] [1 0]]: a zero pivot. */
    const double swap[4] = {0, 1, 1, 0};
    for (int m = 0; m < 2; m++) {
        A = m ? from_dense(ctx, 2, swap) : read_mtx(ctx, "tumorAntiAngiogenesis_2.mtx", SLA_F64);
        if (!A) continue;
        if (m == 0) {
            ref_logdet(A, 0, &sg, &la);
            CHECK(sg != 0);
            check_case(ctx, A, 3, 1, 1e-5, "tumorAntiAngiogenesis_2", NULL);
        }
        for (int ldlt = 1; ldlt >= 0; ldlt--) {
            sla__direct_opts oz = {.ordering = m ? SLA_ORDER_NATURAL : SLA_ORDER_AUTO, .ldlt = ldlt,
                                   .nthreads = 1};
            sym = num = NULL;
            CHECK_OK(ctx, OPS->analyze(ctx, A, &oz, &sym, &stats));
            if (sym && ldlt)
                CHECK_ERR(ctx, OPS->factor(ctx, sym, A, 0, &num), SLA_ERR_SINGULAR,
                          m ? "zero pivot at column" : "ldlt: zero pivot at column");
            if (sym && !ldlt)
                CHECK_ERR(ctx, OPS->factor(ctx, sym, A, 0, &num), SLA_ERR_NOT_SPD, m ? "column 0" : "column");
            CHECK(num == NULL);
            OPS->free_sym(sym);
        }
        sla_matrix_destroy(&A);
    }
}

/* SuperLU: two equal rows in a decoupled 2 x 2 block [2 1; 2 1] of a
 * tridiagonal matrix: the elimination gives an exact zero in U in any
 * order, reported as such. */
static void superlu_exact_zero(sla_ctx *ctx)
{
    enum { NS = 12 };
    double d[NS * NS] = {0};
    for (int i = 0; i < NS - 2; i++) {
        d[i * NS + i] = 2.5;
        if (i > 0) d[i * NS + i - 1] = -1.0;
        if (i < NS - 3) d[i * NS + i + 1] = -1.2;
    }
    for (int i = NS - 2; i < NS; i++) d[i * NS + NS - 2] = 2.0, d[i * NS + NS - 1] = 1.0;
    sla_int r[3 * NS], c[3 * NS];
    double v[3 * NS];
    int nz = 0;
    for (int i = 0; i < NS * NS; i++)
        if (d[i] != 0) r[nz] = i / NS, c[nz] = i % NS, v[nz++] = d[i];
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, NS, NS, nz, r, c, SLA_F64, 1, v, NULL, &A));
    for (int oi = 0; A && oi < 4; oi++)
        if (BE->ord_name[oi])
            CHECK_ERR(ctx, analyze_factor(ctx, A, ORDS[oi]), SLA_ERR_SINGULAR, "exactly zero");
    sla_matrix_destroy(&A);
}

/* Reference structural rank: Kuhn's augmenting paths, recursive. */
static int kuhn_try(int r, int n, const unsigned char *pat, int *match_col, unsigned char *seen)
{
    for (int c = 0; c < n; c++)
        if (pat[r * n + c] && !seen[c]) {
            seen[c] = 1;
            if (match_col[c] < 0 || kuhn_try(match_col[c], n, pat, match_col, seen)) {
                match_col[c] = r;
                return 1;
            }
        }
    return 0;
}

/* SuperLU: random patterns, many structurally singular: analyze refuses
 * exactly those with structural rank < n, naming the rank (SuperLU 5.3's
 * pivoting cannot handle them), and the others factor and solve. */
static void superlu_structural_fuzz(sla_ctx *ctx)
{
    unsigned long long seed = 4242;
    int nsing = 0, nfull = 0;
    for (int trial = 0; trial < 300; trial++) {
        int n = 2 + (int)((tu_rand(&seed) + 1.0) * 0.5 * 38); /* 2..40 */
        double dens = 0.02 + 0.15 * (tu_rand(&seed) + 1.0) * 0.5;
        unsigned char pat[64 * 64], seen[64];
        sla_int rows[64 * 64], cols[64 * 64];
        double vals[64 * 64];
        int nz = 0, perm[64], match[64], rank = 0;
        for (int i = 0; i < n; i++) perm[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = (int)((tu_rand(&seed) + 1.0) * 0.5 * (i + 1)) % (i + 1);
            int t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        /* a random permutation skeleton in half the trials, a few entries dropped */
        int skeleton = trial % 2 == 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                int on = (tu_rand(&seed) + 1.0) * 0.5 < dens;
                if (skeleton && perm[i] == j) on = (tu_rand(&seed) + 1.0) * 0.5 < 0.97;
                pat[i * n + j] = (unsigned char)on;
                if (on) {
                    rows[nz] = i;
                    cols[nz] = j;
                    vals[nz++] = tu_rand(&seed) + (perm[i] == j ? 3.0 : 0.0);
                }
            }
        for (int c = 0; c < n; c++) match[c] = -1;
        for (int r = 0; r < n; r++) {
            memset(seen, 0, sizeof seen);
            rank += kuhn_try(r, n, pat, match, seen);
        }
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, n, n, nz, rows, cols, SLA_F64, 1, vals, NULL, &A));
        if (!A) continue;
        sla__direct_opts o = {.ordering = trial % 3 == 2 ? SLA_ORDER_NATURAL : (sla_ordering)(trial % 3),
                              .nthreads = 1};
        sla__direct_stats stats;
        void *sym = NULL, *num = NULL;
        sla_status st = OPS->analyze(ctx, A, &o, &sym, &stats);
        if (rank < n) {
            char frag[64];
            snprintf(frag, sizeof frag, "structural rank %d < n = %d", rank, n);
            nsing++;
            CHECK(st == SLA_ERR_SINGULAR && sym == NULL);
            CHECK(strstr(sla_ctx_message(ctx), frag) != NULL);
        } else {
            nfull++;
            CHECK(st == SLA_OK);
            if (sym) st = OPS->factor(ctx, sym, A, 0, &num);
            if (sym) CHECK(st == SLA_OK || st == SLA_ERR_SINGULAR);
            double b[64], x[64], D[64 * 64];
            tu_fill(b, n, (unsigned long long)trial);
            sla_matrix_to_dense(NULL, A, 0, D, n);
            if (num && OPS->solve(ctx, sym, num, trial % 2, 1, b, n, x, n) == SLA_OK)
                CHECK(backward_error(D, n, trial % 2, x, b, false) < 1e-12);
        }
        OPS->free_num(num);
        OPS->free_sym(sym);
        sla_matrix_destroy(&A);
    }
    CHECK(nsing > 30 && nfull > 30); /* both kinds were exercised */
}

int main(int argc, char **argv)
{
    for (size_t i = 0; argc == 2 && i < sizeof BACKENDS / sizeof *BACKENDS; i++)
        if (strcmp(argv[1], BACKENDS[i].name) == 0) BE = &BACKENDS[i];
    if (!BE) {
        fprintf(stderr, "usage: test_backend_contract cholmod|umfpack|klu|superlu\n");
        return 2;
    }
    char name[64];
    snprintf(name, sizeof name, "test_backend_%s", BE->name);
    OPS = BE->get();
    if (!OPS) {
        printf("%s: backend not compiled in, skipped\n", name);
        return tu_finish(name);
    }
    CHECK(strcmp(OPS->name, BE->name) == 0);
    CHECK((OPS->selinv != NULL) == BE->selinv);
    sla_ctx *ctx = NULL;
    CHECK_OK(ctx, sla_ctx_create(&ctx));
    test_cases(ctx);
    test_batch_refactor(ctx);
    test_singular(ctx);
    test_empty_and_errors(ctx);
    test_concurrent(ctx);
    test_alloc_failures(ctx);
    test_timed(ctx);
    if (BE->bit == CH) cholmod_extra(ctx);
    if (BE->bit == SU) superlu_exact_zero(ctx), superlu_structural_fuzz(ctx);
    sla_ctx_destroy(&ctx);
    return tu_finish(name);
}
