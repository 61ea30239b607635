/* Generators: stencil values and sizes against independent dense
 * references, symmetry and M-matrix properties, the diffusion VJP against
 * finite differences and the adjoint identity, random kinds, bad arguments. */
#include "test_util.h"

/* ---- helpers ------------------------------------------------------------- */

static double *dense_of(const sla_matrix *A)
{
    long long n = sla_matrix_nrows(A), m = sla_matrix_ncols(A);
    double *D = malloc((size_t)(n * m + 1) * sizeof *D);
    sla_matrix_to_dense(NULL, A, 0, D, n);
    return D;
}

/* CSR structure is valid (sorted, in range): rebuilding through the
 * validating constructor succeeds. */
static int valid_csr(const sla_matrix *A)
{
    long long nnz = sla_matrix_nnz(A);
    sla_int *ci = malloc((size_t)(nnz + 1) * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    sla_matrix *B = NULL;
    sla_status st = sla_matrix_from_csr(NULL, sla_matrix_nrows(A), sla_matrix_ncols(A),
                                        sla_matrix_rowptr(A), ci, SLA_F64, 1,
                                        sla_matrix_values(A, 0), SLA_COPY, &B);
    sla_matrix_destroy(&B);
    free(ci);
    return st == SLA_OK;
}

/* Same pattern and bitwise-equal values. */
static int same_matrix(const sla_matrix *A, const sla_matrix *B)
{
    long long n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    if (n != sla_matrix_nrows(B) || nnz != sla_matrix_nnz(B)) return 0;
    if (memcmp(sla_matrix_rowptr(A), sla_matrix_rowptr(B), (size_t)(n + 1) * sizeof(sla_int)))
        return 0;
    sla_int *ca = malloc((size_t)(nnz + 1) * sizeof *ca), *cb = malloc((size_t)(nnz + 1) * sizeof *cb);
    sla_matrix_get_colind(A, ca);
    sla_matrix_get_colind(B, cb);
    int ok = memcmp(ca, cb, (size_t)nnz * sizeof *ca) == 0 &&
             memcmp(sla_matrix_values(A, 0), sla_matrix_values(B, 0), (size_t)nnz * sizeof(double)) == 0;
    free(ca);
    free(cb);
    return ok;
}

/* Every stored entry of A differs from zero (pattern = stencil). */
static int no_stored_zeros(const sla_matrix *A)
{
    const double *v = sla_matrix_values(A, 0);
    for (long long k = 0; k < sla_matrix_nnz(A); k++)
        if (v[k] == 0.0) return 0;
    return 1;
}

/* Dense reference of a constant 2D 5-point stencil (unknown (i, j) at
 * j N + i): diagonal c, x-neighbours west/east, y-neighbours south/north. */
static double *ref_stencil2d(long long N, double c, double w, double e, double s, double nn)
{
    long long n = N * N;
    double *D = calloc((size_t)(n * n), sizeof *D);
    for (long long j = 0; j < N; j++)
        for (long long i = 0; i < N; i++) {
            long long p = j * N + i;
            D[p * n + p] = c;
            if (i > 0) D[(p - 1) * n + p] = w;
            if (i < N - 1) D[(p + 1) * n + p] = e;
            if (j > 0) D[(p - N) * n + p] = s;
            if (j < N - 1) D[(p + N) * n + p] = nn;
        }
    return D;
}

static double max_absdiff(long long n, const double *a, const double *b)
{
    double d = 0.0;
    for (long long k = 0; k < n; k++) d = fmax(d, fabs(a[k] - b[k]));
    return d;
}

/* ---- Poisson ------------------------------------------------------------- */

/* Dense reference: 2 dim on the diagonal, -1 between grid neighbours. */
static double *ref_poisson(int dim, long long N)
{
    long long n = 1;
    for (int d = 0; d < dim; d++) n *= N;
    double *D = calloc((size_t)(n * n), sizeof *D);
    for (long long p = 0; p < n; p++)
        for (long long q = 0; q < n; q++) {
            long long dist = 0, a = p, b = q;
            for (int d = 0; d < dim; d++) {
                dist += llabs(a % N - b % N);
                a /= N;
                b /= N;
            }
            if (dist == 0) D[q * n + p] = 2.0 * dim;
            else if (dist == 1) D[q * n + p] = -1.0;
        }
    return D;
}

static void check_poisson(sla_ctx *ctx, int dim, long long N, long long nnz)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, dim, N, &A));
    if (!A) return;
    long long n = sla_matrix_nrows(A);
    CHECK(n == (dim == 1 ? N : dim == 2 ? N * N : N * N * N));
    CHECK(sla_matrix_nnz(A) == nnz);
    CHECK(valid_csr(A) && no_stored_zeros(A));
    double *D = dense_of(A), *R = ref_poisson(dim, N);
    CHECK(max_absdiff(n * n, D, R) == 0.0);
    sla_matrix_props pr;
    CHECK_OK(ctx, sla_matrix_properties(ctx, A, 0, 0.0, &pr));
    CHECK(pr.symmetric && pr.positive_diagonal && pr.diagonally_dominant);
    free(D);
    free(R);
    sla_matrix_destroy(&A);
}

static void test_poisson(sla_ctx *ctx)
{
    check_poisson(ctx, 1, 1, 1);
    check_poisson(ctx, 1, 7, 3 * 7 - 2);
    check_poisson(ctx, 2, 1, 1);
    check_poisson(ctx, 2, 5, 5 * 25 - 4 * 5);
    check_poisson(ctx, 2, 8, 5 * 64 - 4 * 8);
    check_poisson(ctx, 3, 2, 7 * 8 - 6 * 4);
    check_poisson(ctx, 3, 4, 7 * 64 - 6 * 16);

    /* nnz formulas at a size too large for the dense reference */
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 100, &A));
    CHECK(sla_matrix_nnz(A) == 5 * 10000 - 4 * 100 && valid_csr(A));
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_poisson(ctx, 3, 20, &A));
    CHECK(sla_matrix_nnz(A) == 7 * 8000 - 6 * 400 && valid_csr(A));
    sla_matrix_destroy(&A);

    A = (sla_matrix *)&ctx; /* must come back NULL */
    CHECK_ERR(ctx, sla_gen_poisson(ctx, 0, 4, &A), SLA_ERR_ARGUMENT, "dimension");
    CHECK(A == NULL);
    CHECK_ERR(ctx, sla_gen_poisson(ctx, 4, 4, &A), SLA_ERR_ARGUMENT, "dimension");
    CHECK_ERR(ctx, sla_gen_poisson(ctx, 2, 0, &A), SLA_ERR_ARGUMENT, "N");
    CHECK_ERR(ctx, sla_gen_poisson(ctx, 1, -3, &A), SLA_ERR_ARGUMENT, "N");
    CHECK_ERR(ctx, sla_gen_poisson(ctx, 2, 50000, &A), SLA_ERR_TOO_LARGE, "32-bit");
    CHECK_ERR(ctx, sla_gen_poisson(ctx, 3, 1300, &A), SLA_ERR_TOO_LARGE, "32-bit");
    CHECK_ERR(ctx, sla_gen_poisson(ctx, 1, 3000000000LL, &A), SLA_ERR_TOO_LARGE, "32-bit");
    CHECK_ERR(ctx, sla_gen_poisson(ctx, 2, 4, NULL), SLA_ERR_ARGUMENT, "NULL");
    CHECK(A == NULL);
}

/* ---- variable-coefficient diffusion ------------------------------------- */

/* Independent reference: loop over every edge of the node grid (boundary
 * nodes included, indices 0..N+1) and add its flux coupling. */
static double *ref_diffusion(long long N, const double *kappa)
{
    long long n = N * N, M = N + 1;
    double *D = calloc((size_t)(n * n), sizeof *D);
    for (long long j = 0; j <= N + 1; j++)
        for (long long i = 0; i <= N + 1; i++)
            for (int dir = 0; dir < 2; dir++) {
                /* edge (i,j)-(i+1,j) between cells (i,j-1),(i,j);
                 * edge (i,j)-(i,j+1) between cells (i-1,j),(i,j) */
                long long i2 = i + (dir == 0), j2 = j + (dir == 1);
                if (i2 > N + 1 || j2 > N + 1) continue;
                long long ca = dir == 0 ? (j - 1) * M + i : j * M + (i - 1);
                long long cb = j * M + i;
                int in1 = i >= 1 && i <= N && j >= 1 && j <= N;
                int in2 = i2 >= 1 && i2 <= N && j2 >= 1 && j2 <= N;
                if (!in1 && !in2) continue;
                double k = 0.5 * (kappa[ca] + kappa[cb]);
                long long p = (j - 1) * N + (i - 1), q = (j2 - 1) * N + (i2 - 1);
                if (in1) D[p * n + p] += k;
                if (in2) D[q * n + q] += k;
                if (in1 && in2) {
                    D[q * n + p] -= k;
                    D[p * n + q] -= k;
                }
            }
    return D;
}

static double *random_kappa(long long N, unsigned long long seed)
{
    long long nc = (N + 1) * (N + 1);
    double *k = malloc((size_t)nc * sizeof *k);
    tu_fill(k, nc, seed);
    for (long long c = 0; c < nc; c++) k[c] = exp(2.0 * k[c]); /* in [e^-2, e^2] */
    return k;
}

static void test_diffusion_values(sla_ctx *ctx)
{
    long long N = 6, n = N * N, nc = (N + 1) * (N + 1);
    double *ones = malloc((size_t)nc * sizeof *ones);
    for (long long c = 0; c < nc; c++) ones[c] = 1.0;
    sla_matrix *A = NULL, *P = NULL;
    CHECK_OK(ctx, sla_gen_diffusion2d(ctx, N, ones, &A));
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, N, &P));
    CHECK(A && P && same_matrix(A, P));
    sla_matrix_destroy(&A);

    double *kappa = random_kappa(N, 11);
    CHECK_OK(ctx, sla_gen_diffusion2d(ctx, N, kappa, &A));
    if (A) {
        CHECK(valid_csr(A) && no_stored_zeros(A));
        /* same pattern as poisson2d */
        CHECK(sla_matrix_nnz(A) == sla_matrix_nnz(P) &&
              memcmp(sla_matrix_rowptr(A), sla_matrix_rowptr(P), (size_t)(n + 1) * sizeof(sla_int)) == 0);
        double *D = dense_of(A), *R = ref_diffusion(N, kappa);
        CHECK(max_absdiff(n * n, D, R) <= 1e-13);
        sla_matrix_props pr;
        CHECK_OK(ctx, sla_matrix_properties(ctx, A, 0, 0.0, &pr));
        CHECK(pr.symmetric && pr.positive_diagonal && pr.diagonally_dominant);
        int rows_ok = 1;
        for (long long p = 0; p < n; p++) {
            double s = 0.0;
            for (long long q = 0; q < n; q++) {
                s += D[q * n + p];
                if (q != p && D[q * n + p] > 0.0) rows_ok = 0;
            }
            if (s < -1e-13 * D[p * n + p]) rows_ok = 0;
        }
        CHECK(rows_ok);
        free(D);
        free(R);

        /* the values entry point reproduces the matrix values */
        long long nnz = sla_matrix_nnz(A);
        double *v = malloc((size_t)nnz * sizeof *v);
        CHECK_OK(ctx, sla_gen_diffusion2d_values(ctx, N, kappa, v));
        CHECK(memcmp(v, sla_matrix_values(A, 0), (size_t)nnz * sizeof *v) == 0);
        free(v);
    }
    sla_matrix_destroy(&A);

    /* one interior coupling by hand: node (2,2) -> (3,2), N = 6, cells of
     * width N + 1 = 7: the edge lies between cells (2,1) and (2,2) */
    CHECK_OK(ctx, sla_gen_diffusion2d(ctx, N, kappa, &A));
    if (A) {
        double *D = dense_of(A);
        long long p = (2 - 1) * N + (2 - 1), q = p + 1;
        CHECK(D[q * n + p] == -0.5 * (kappa[1 * 7 + 2] + kappa[2 * 7 + 2]));
        free(D);
    }
    sla_matrix_destroy(&A);

    /* bad kappa names the cell */
    kappa[3 * 7 + 5] = 0.0;
    CHECK_ERR(ctx, sla_gen_diffusion2d(ctx, N, kappa, &A), SLA_ERR_VALUE, "cell (5, 3)");
    kappa[3 * 7 + 5] = NAN;
    CHECK_ERR(ctx, sla_gen_diffusion2d(ctx, N, kappa, &A), SLA_ERR_VALUE, "cell (5, 3)");
    kappa[3 * 7 + 5] = -1.0;
    double vtmp[4];
    CHECK_ERR(ctx, sla_gen_diffusion2d_values(ctx, N, kappa, vtmp), SLA_ERR_VALUE, "cell (5, 3)");
    CHECK_ERR(ctx, sla_gen_diffusion2d(ctx, N, NULL, &A), SLA_ERR_ARGUMENT, "kappa");
    CHECK_ERR(ctx, sla_gen_diffusion2d(ctx, 0, ones, &A), SLA_ERR_ARGUMENT, "N");
    CHECK_ERR(ctx, sla_gen_diffusion2d_values(ctx, N, ones, NULL), SLA_ERR_ARGUMENT, "NULL");
    CHECK_ERR(ctx, sla_gen_diffusion2d_vjp(ctx, N, NULL, ones), SLA_ERR_ARGUMENT, "NULL");
    CHECK_ERR(ctx, sla_gen_diffusion2d_vjp(ctx, -1, ones, ones), SLA_ERR_ARGUMENT, "N");
    CHECK(A == NULL);
    free(ones);
    free(kappa);
    sla_matrix_destroy(&P);
}

/* L(kappa) = sum_k w_k vals_k(kappa) */
static double loss(sla_ctx *ctx, long long N, const double *kappa, const double *w,
                   double *vals, long long nnz)
{
    sla_gen_diffusion2d_values(ctx, N, kappa, vals);
    double L = 0.0;
    for (long long k = 0; k < nnz; k++) L += w[k] * vals[k];
    return L;
}

static void test_diffusion_vjp(sla_ctx *ctx)
{
    long long N = 5, nc = (N + 1) * (N + 1), nnz = 5 * N * N - 4 * N;
    double *kappa = random_kappa(N, 5), *w = malloc((size_t)nnz * sizeof *w);
    double *vals = malloc((size_t)nnz * sizeof *vals);
    double *dk = malloc((size_t)nc * sizeof *dk), *fd = malloc((size_t)nc * sizeof *fd);
    tu_fill(w, nnz, 9);
    for (long long c = 0; c < nc; c++) dk[c] = 123.0; /* must be overwritten */
    CHECK_OK(ctx, sla_gen_diffusion2d_vjp(ctx, N, w, dk));

    /* central differences: exact for a linear map up to rounding */
    double h = 1e-3;
    for (long long c = 0; c < nc; c++) {
        double k0 = kappa[c];
        kappa[c] = k0 + h;
        double Lp = loss(ctx, N, kappa, w, vals, nnz);
        kappa[c] = k0 - h;
        double Lm = loss(ctx, N, kappa, w, vals, nnz);
        kappa[c] = k0;
        fd[c] = (Lp - Lm) / (2.0 * h);
    }
    double rel = tu_reldiff(nc, dk, fd);
    if (!(rel < 1e-8)) fprintf(stderr, "diffusion vjp vs FD: rel %g\n", rel);
    CHECK(rel < 1e-8);

    /* adjoint identity <J u, w> = <u, J^T w>; J u = vals(u) by linearity
     * (u positive so it is a valid kappa) */
    double *u = random_kappa(N, 17);
    CHECK_OK(ctx, sla_gen_diffusion2d_values(ctx, N, u, vals));
    double lhs = 0.0, rhs = 0.0;
    for (long long k = 0; k < nnz; k++) lhs += vals[k] * w[k];
    for (long long c = 0; c < nc; c++) rhs += u[c] * dk[c];
    CHECK_CLOSE(lhs, rhs, 1e-13);

    /* every cell influences the values: corner cells touch only their
     * corner node's diagonal */
    double *e = calloc((size_t)nnz, sizeof *e);
    e[0] = 1.0; /* diagonal of node (1,1) */
    CHECK_OK(ctx, sla_gen_diffusion2d_vjp(ctx, N, e, dk));
    /* node (1,1): its four edges each see two of the cells (0,0),(1,0),(0,1),(1,1) */
    long long M = N + 1;
    CHECK(dk[0] == 1.0 && dk[1] == 1.0 && dk[M] == 1.0 && dk[M + 1] == 1.0 && dk[2] == 0.0);
    free(e);
    free(u);
    free(kappa);
    free(w);
    free(vals);
    free(dk);
    free(fd);
}

/* ---- convection-diffusion and anisotropy -------------------------------- */

static void test_convdiff(sla_ctx *ctx)
{
    long long N = 7, n = N * N;
    sla_matrix *A = NULL, *P = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, N, &P));
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, N, 0.0, 0.0, &A));
    CHECK(A && P && same_matrix(A, P));
    sla_matrix_destroy(&A);

    const double bs[][2] = {{10.0, -5.0}, {-3.0, 40.0}, {1e3, 1e3}};
    for (int t = 0; t < 3; t++) {
        double bx = bs[t][0], by = bs[t][1], h = 1.0 / (double)(N + 1);
        CHECK_OK(ctx, sla_gen_convdiff2d(ctx, N, bx, by, &A));
        if (!A) continue;
        CHECK(valid_csr(A) && no_stored_zeros(A));
        double *D = dense_of(A);
        double *R = ref_stencil2d(N, 4.0 + h * (fabs(bx) + fabs(by)), -1.0 - h * fmax(bx, 0.0),
                                  -1.0 - h * fmax(-bx, 0.0), -1.0 - h * fmax(by, 0.0),
                                  -1.0 - h * fmax(-by, 0.0));
        CHECK(max_absdiff(n * n, D, R) == 0.0);
        sla_matrix_props pr;
        CHECK_OK(ctx, sla_matrix_properties(ctx, A, 0, 1e-12, &pr));
        CHECK(!pr.symmetric && pr.positive_diagonal && pr.diagonally_dominant);
        int offdiag_nonpos = 1, strict_somewhere = 0;
        for (long long p = 0; p < n; p++) {
            double off = 0.0;
            for (long long q = 0; q < n; q++)
                if (q != p) {
                    if (D[q * n + p] > 0.0) offdiag_nonpos = 0;
                    off += fabs(D[q * n + p]);
                }
            if (D[p * n + p] > off) strict_somewhere = 1;
        }
        CHECK(offdiag_nonpos && strict_somewhere);
        free(D);
        free(R);
        sla_matrix_destroy(&A);
    }
    CHECK_ERR(ctx, sla_gen_convdiff2d(ctx, N, NAN, 0.0, &A), SLA_ERR_VALUE, "not finite");
    CHECK_ERR(ctx, sla_gen_convdiff2d(ctx, N, 1.0, INFINITY, &A), SLA_ERR_VALUE, "not finite");
    CHECK_ERR(ctx, sla_gen_convdiff2d(ctx, N, 1.7e308, 1.7e308, &A), SLA_ERR_VALUE, "");
    CHECK_ERR(ctx, sla_gen_convdiff2d(ctx, 0, 1.0, 1.0, &A), SLA_ERR_ARGUMENT, "N");
    CHECK(A == NULL);
    sla_matrix_destroy(&P);
}

static void test_aniso(sla_ctx *ctx)
{
    long long N = 6, n = N * N;
    sla_matrix *A = NULL, *P = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, N, &P));
    CHECK_OK(ctx, sla_gen_aniso2d(ctx, N, 1.0, &A));
    CHECK(A && P && same_matrix(A, P));
    sla_matrix_destroy(&A);

    double eps = 1e-3;
    CHECK_OK(ctx, sla_gen_aniso2d(ctx, N, eps, &A));
    if (A) {
        CHECK(valid_csr(A));
        double *D = dense_of(A), *R = ref_stencil2d(N, 2 * eps + 2, -eps, -eps, -1, -1);
        CHECK(max_absdiff(n * n, D, R) == 0.0);
        sla_matrix_props pr;
        CHECK_OK(ctx, sla_matrix_properties(ctx, A, 0, 0.0, &pr));
        CHECK(pr.symmetric && pr.positive_diagonal && pr.diagonally_dominant);
        free(D);
        free(R);
    }
    sla_matrix_destroy(&A);
    CHECK_ERR(ctx, sla_gen_aniso2d(ctx, N, 0.0, &A), SLA_ERR_VALUE, "eps");
    CHECK_ERR(ctx, sla_gen_aniso2d(ctx, N, -1.0, &A), SLA_ERR_VALUE, "eps");
    CHECK_ERR(ctx, sla_gen_aniso2d(ctx, N, NAN, &A), SLA_ERR_VALUE, "eps");
    CHECK_ERR(ctx, sla_gen_aniso2d(ctx, N, INFINITY, &A), SLA_ERR_VALUE, "eps");
    CHECK_ERR(ctx, sla_gen_aniso2d(ctx, -2, 1.0, &A), SLA_ERR_ARGUMENT, "N");
    CHECK(A == NULL);
    sla_matrix_destroy(&P);
}

/* ---- random --------------------------------------------------------------- */

/* Strict diagonal dominance with a positive diagonal, off-diagonals in
 * [-1, 1] before summing repeats (so |a_ij| <= 2 per_row). */
static int strictly_dominant(const sla_matrix *A)
{
    long long n = sla_matrix_nrows(A);
    const sla_int *rp = sla_matrix_rowptr(A);
    const double *v = sla_matrix_values(A, 0);
    sla_int *ci = malloc((size_t)(sla_matrix_nnz(A) + 1) * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    int ok = 1;
    for (long long i = 0; i < n; i++) {
        double d = 0.0, off = 0.0;
        for (sla_int p = rp[i]; p < rp[i + 1]; p++) {
            if (ci[p] == i) d = v[p];
            else off += fabs(v[p]);
        }
        if (!(d > off)) ok = 0;
    }
    free(ci);
    return ok;
}

static void test_random(sla_ctx *ctx)
{
    long long n = 60;
    sla_matrix *A = NULL, *B = NULL;
    for (int ki = SLA_GEN_GENERAL; ki <= SLA_GEN_SPD; ki++) {
        const sla_gen_kind kind = (sla_gen_kind)ki;
        CHECK_OK(ctx, sla_gen_random(ctx, n, 4, kind, 123, &A));
        CHECK_OK(ctx, sla_gen_random(ctx, n, 4, kind, 123, &B));
        if (!A || !B) continue;
        CHECK(same_matrix(A, B)); /* seeded: reproducible */
        sla_matrix_destroy(&B);
        CHECK_OK(ctx, sla_gen_random(ctx, n, 4, kind, 124, &B));
        CHECK(B && !same_matrix(A, B));
        CHECK(valid_csr(A));
        long long nnz = sla_matrix_nnz(A), per = kind == SLA_GEN_GENERAL ? 4 : 8;
        CHECK(nnz > n * per / 2 && nnz <= n * (per + 1));
        sla_matrix_props pr;
        CHECK_OK(ctx, sla_matrix_properties(ctx, A, 0, 0.0, &pr));
        CHECK(pr.symmetric == (kind != SLA_GEN_GENERAL));
        if (kind != SLA_GEN_SYMMETRIC) CHECK(strictly_dominant(A));
        /* general: nonsingular; SPD: Cholesky succeeds; symmetric: values in [-1, 1] */
        double *D = dense_of(A);
        if (kind == SLA_GEN_GENERAL) {
            double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
            tu_fill(b, n, 1);
            CHECK(tu_dense_solve(A, 0, b, x) == 0);
            free(b);
            free(x);
        } else if (kind == SLA_GEN_SPD) {
            CHECK(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, D, (lapack_int)n) == 0);
        } else {
            int in_range = 1;
            for (long long p = 0; p < n; p++) in_range &= fabs(D[p * n + p]) <= 1.0;
            CHECK(in_range);
        }
        free(D);
        sla_matrix_destroy(&A);
        sla_matrix_destroy(&B);
    }

    /* edge sizes: per_row larger than possible is clamped; n = 1 and 0 */
    CHECK_OK(ctx, sla_gen_random(ctx, 5, 100, SLA_GEN_SPD, 1, &A));
    CHECK(A && sla_matrix_nnz(A) <= 25 && valid_csr(A) && strictly_dominant(A));
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_random(ctx, 1, 3, SLA_GEN_GENERAL, 1, &A));
    CHECK(A && sla_matrix_nnz(A) == 1 && ((const double *)sla_matrix_values(A, 0))[0] == 1.0);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_random(ctx, 0, 3, SLA_GEN_SYMMETRIC, 1, &A));
    CHECK(A && sla_matrix_nrows(A) == 0 && sla_matrix_nnz(A) == 0);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_random(ctx, 10, 0, SLA_GEN_GENERAL, 0, &A));
    CHECK(A && sla_matrix_nnz(A) == 10);
    sla_matrix_destroy(&A);

    CHECK_ERR(ctx, sla_gen_random(ctx, 10, 2, (sla_gen_kind)3, 1, &A), SLA_ERR_ARGUMENT, "kind");
    CHECK_ERR(ctx, sla_gen_random(ctx, 10, 2, (sla_gen_kind)-1, 1, &A), SLA_ERR_ARGUMENT, "kind");
    CHECK_ERR(ctx, sla_gen_random(ctx, -1, 2, SLA_GEN_GENERAL, 1, &A), SLA_ERR_ARGUMENT, ">= 0");
    CHECK_ERR(ctx, sla_gen_random(ctx, 10, -2, SLA_GEN_GENERAL, 1, &A), SLA_ERR_ARGUMENT, ">= 0");
    CHECK_ERR(ctx, sla_gen_random(ctx, 3000000000LL, 2, SLA_GEN_GENERAL, 1, &A), SLA_ERR_TOO_LARGE, "32-bit");
    CHECK_ERR(ctx, sla_gen_random(ctx, 10, 2, SLA_GEN_GENERAL, 1, NULL), SLA_ERR_ARGUMENT, "NULL");
    CHECK(A == NULL);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    test_poisson(ctx);
    test_diffusion_values(ctx);
    test_diffusion_vjp(ctx);
    test_convdiff(ctx);
    test_aniso(ctx);
    test_random(ctx);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_gen");
}
