/* Matrix construction, validation, queries and SpMV against dense references. */
#include "test_util.h"

#include <float.h>

static sla_ctx *ctx;

static double val_at(const sla_matrix *A, sla_int ib, sla_int k)
{
    const void *v = sla_matrix_values(A, ib);
    return sla_matrix_dtype(A) == SLA_F64 ? ((const double *)v)[k] : (double)((const float *)v)[k];
}

static void test_coo(void)
{
    /* 3x3 with duplicates, unsorted, and an empty row (row 1) */
    sla_int r[] = {2, 0, 2, 0, 2, 0};
    sla_int c[] = {1, 2, 1, 0, 0, 2};
    double v[] = {1, 2, 3, 4, 5, 6, /* batch 2: */ 10, 20, 30, 40, 50, 60};
    sla_int map[6];
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 3, 3, 6, r, c, SLA_F64, 2, v, map, &A));
    if (!A) return;
    CHECK(sla_matrix_nnz(A) == 4);
    CHECK(sla_matrix_nbatch(A) == 2);
    const sla_int *rp = sla_matrix_rowptr(A);
    CHECK(rp[0] == 0 && rp[1] == 2 && rp[2] == 2 && rp[3] == 4);
    sla_int ci[4];
    sla_matrix_get_colind(A, ci);
    CHECK(ci[0] == 0 && ci[1] == 2 && ci[2] == 0 && ci[3] == 1);
    const double *a0 = sla_matrix_values(A, 0), *a1 = sla_matrix_values(A, 1);
    CHECK(a0[0] == 4 && a0[1] == 8 && a0[2] == 5 && a0[3] == 4);
    CHECK(a1[0] == 40 && a1[1] == 80 && a1[2] == 50 && a1[3] == 40);
    CHECK(map[0] == 3 && map[1] == 1 && map[2] == 3 && map[3] == 0 && map[4] == 2 && map[5] == 1);
    sla_int ri[4];
    sla_matrix_get_rowind(A, ri);
    CHECK(ri[0] == 0 && ri[1] == 0 && ri[2] == 2 && ri[3] == 2);
    CHECK(sla_matrix_values(A, 2) == NULL);
    sla_matrix_destroy(&A);
    CHECK(A == NULL);
    sla_matrix_destroy(&A); /* NULL is fine */

    /* pattern only, float32 */
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 3, 3, 6, r, c, SLA_F32, 1, NULL, NULL, &A));
    if (A) {
        const float *f = sla_matrix_values(A, 0);
        CHECK(f[1] == 2.0f && f[0] == 1.0f);
        sla_matrix_destroy(&A);
    }
    /* 0 x 0 */
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 0, 0, 0, NULL, NULL, SLA_F64, 1, NULL, NULL, &A));
    CHECK(A && sla_matrix_nnz(A) == 0);
    sla_matrix_destroy(&A);
}

static void test_csr_errors(void)
{
    sla_matrix *A = (sla_matrix *)1;
    sla_int rp[] = {0, 2, 3}, ci[] = {1, 0, 1};
    double v[] = {1, 2, 3};
    CHECK_ERR(ctx, sla_matrix_from_csr(ctx, 2, 2, rp, ci, SLA_F64, 1, v, SLA_COPY, &A),
              SLA_ERR_INDEX, "not strictly increasing");
    CHECK(A == NULL);
    sla_int ci2[] = {0, 5, 1};
    CHECK_ERR(ctx, sla_matrix_from_csr(ctx, 2, 2, rp, ci2, SLA_F64, 1, v, SLA_COPY, &A),
              SLA_ERR_INDEX, "out of range");
    sla_int rp2[] = {1, 2, 3};
    CHECK_ERR(ctx, sla_matrix_from_csr(ctx, 2, 2, rp2, ci2, SLA_F64, 1, v, SLA_COPY, &A),
              SLA_ERR_INDEX, "rowptr[0]");
    sla_int rp3[] = {0, 2, 1};
    sla_int ci3[] = {0, 1};
    CHECK_ERR(ctx, sla_matrix_from_csr(ctx, 2, 2, rp3, ci3, SLA_F64, 1, v, SLA_COPY, &A),
              SLA_ERR_INDEX, "decreases");
    sla_int ci4[] = {0, 1, 1};
    double vn[] = {1, NAN, 3};
    CHECK_ERR(ctx, sla_matrix_from_csr(ctx, 2, 2, rp, ci4, SLA_F64, 1, vn, SLA_COPY, &A),
              SLA_ERR_VALUE, "entry 1");
    double vi[] = {1, 2, INFINITY};
    CHECK_ERR(ctx, sla_matrix_from_csr(ctx, 2, 2, rp, ci4, SLA_F64, 1, vi, SLA_COPY, &A),
              SLA_ERR_VALUE, "not finite");
    sla_int rr[] = {0, 3}, cc[] = {0, 0};
    CHECK_ERR(ctx, sla_matrix_from_coo(ctx, 2, 2, 2, rr, cc, SLA_F64, 1, NULL, NULL, &A),
              SLA_ERR_INDEX, "entry 1");
    sla_int neg[] = {-1, 0};
    CHECK_ERR(ctx, sla_matrix_from_coo(ctx, 2, 2, 2, neg, cc, SLA_F64, 1, NULL, NULL, &A),
              SLA_ERR_INDEX, "out of range");
    CHECK_ERR(ctx, sla_matrix_from_coo(ctx, -1, 2, 0, NULL, NULL, SLA_F64, 1, NULL, NULL, &A),
              SLA_ERR_DIMENSION, "negative");
    CHECK_ERR(ctx, sla_matrix_from_coo(ctx, 2, 2, 0, NULL, NULL, SLA_F64, 0, NULL, NULL, &A),
              SLA_ERR_DIMENSION, "nbatch");
    CHECK_ERR(ctx, sla_matrix_from_coo(ctx, 3000000000LL, 2, 0, NULL, NULL, SLA_F64, 1, NULL,
                                       NULL, &A),
              SLA_ERR_TOO_LARGE, "32-bit");
    CHECK_ERR(ctx, sla_matrix_from_coo(ctx, 2, 2, 2, NULL, cc, SLA_F64, 1, NULL, NULL, &A),
              SLA_ERR_ARGUMENT, "NULL");
    CHECK(A == NULL);
}

static void test_borrow_and_set(void)
{
    sla_int rp[] = {0, 2, 4}, ci[] = {0, 1, 0, 1};
    double v[] = {4, 1, 1, 3};
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 2, 2, rp, ci, SLA_F64, 1, v, SLA_BORROW, &A));
    if (!A) return;
    CHECK(sla_matrix_values(A, 0) == (const void *)v);
    double x[] = {1, 1}, y[2];
    v[0] = 10; /* the borrowed array is the matrix's */
    CHECK_OK(ctx, sla_matvec(ctx, A, 0, 1, x, 2, y, 2));
    CHECK(y[0] == 11 && y[1] == 4);
    double w[] = {1, 2, 3, 4};
    CHECK_OK(ctx, sla_matrix_set_values(ctx, A, 0, w));
    CHECK(v[3] == 4);
    double bad[] = {1, NAN, 3, 4};
    CHECK_ERR(ctx, sla_matrix_set_values(ctx, A, 0, bad), SLA_ERR_VALUE, "entry 1");
    CHECK_ERR(ctx, sla_matrix_set_values(ctx, A, 1, w), SLA_ERR_INDEX, "batch index");
    v[2] = NAN;
    CHECK_ERR(ctx, sla_matrix_check_values(ctx, A, 0), SLA_ERR_VALUE, "not finite");
    sla_matrix_destroy(&A);
}

/* The finiteness check of long value arrays (vectorized, threaded from
 * 2^20 reals): a NaN or an infinity anywhere (first, last, where a thread's
 * share begins) is found and named by its entry, at 1 and 2 threads, for
 * float64, float32 and complex values; the largest finite values, the
 * smallest subnormals and -0 pass. */
static void test_finite_long(void)
{
    const sla_int n = (3 << 19) + 5; /* above the threaded length, not a multiple of 16 */
    sla_int rp[] = {0, n};
    sla_int *ci = malloc((size_t)n * sizeof *ci);
    double *d = malloc((size_t)n * 2 * sizeof *d);
    float *f = malloc((size_t)n * 2 * sizeof *f);
    if (!ci || !d || !f) return;
    for (sla_int k = 0; k < n; k++) ci[k] = k;
    const sla_int at[] = {0, n / 2, n / 2 + 1, n - 1};
    const double badv[] = {NAN, INFINITY, -INFINITY, -NAN};
    for (int nt = 1; nt <= 2; nt++) {
        sla_ctx_set_threads(ctx, nt);
        sla_matrix *D = NULL, *F = NULL, *Z = NULL;
        for (sla_int k = 0; k < 2 * n; k++) {
            d[k] = k % 3 == 0 ? -DBL_MAX : k % 3 == 1 ? 4.9e-324 : -0.0;
            f[k] = k % 3 == 0 ? FLT_MAX : k % 3 == 1 ? -1.4e-45f : -0.0f;
        }
        CHECK_OK(ctx, sla_matrix_from_csr(ctx, 1, n, rp, ci, SLA_F64, 1, d, SLA_BORROW, &D));
        CHECK_OK(ctx, sla_matrix_from_csr(ctx, 1, n, rp, ci, SLA_F32, 2, f, SLA_BORROW, &F));
        CHECK_OK(ctx, sla_matrix_from_csr(ctx, 1, n, rp, ci, SLA_C128, 1, d, SLA_BORROW, &Z));
        if (!D || !F || !Z) return;
        for (int t = 0; t < 4; t++) {
            char want[64];
            snprintf(want, sizeof want, "entry %lld ", (long long)at[t]);
            double d0 = d[at[t]];
            d[at[t]] = badv[t];
            CHECK_ERR(ctx, sla_matrix_borrow_values(ctx, D, d), SLA_ERR_VALUE, want);
            d[at[t]] = d0;
            CHECK_OK(ctx, sla_matrix_borrow_values(ctx, D, d));
            float f0 = f[n + at[t]]; /* in the second value array */
            f[n + at[t]] = (float)badv[t];
            CHECK_ERR(ctx, sla_matrix_borrow_values(ctx, F, f), SLA_ERR_VALUE, want);
            CHECK(strstr(sla_ctx_message(ctx), "batch 1") != NULL);
            f[n + at[t]] = f0;
            CHECK_OK(ctx, sla_matrix_borrow_values(ctx, F, f));
            d0 = d[2 * at[t] + 1]; /* an imaginary part */
            d[2 * at[t] + 1] = badv[t];
            CHECK_ERR(ctx, sla_matrix_borrow_values(ctx, Z, d), SLA_ERR_VALUE, want);
            d[2 * at[t] + 1] = d0;
            CHECK_OK(ctx, sla_matrix_borrow_values(ctx, Z, d));
        }
        sla_matrix_destroy(&D);
        sla_matrix_destroy(&F);
        sla_matrix_destroy(&Z);
    }
    sla_ctx_set_threads(ctx, 0);
    free(ci);
    free(d);
    free(f);
}

/* Rebinding a borrowed matrix to a new value array, with a solver that
 * keeps its analysis across the rebind. */
static void test_borrow_values(void)
{
    sla_int rp[] = {0, 2, 4}, ci[] = {0, 1, 0, 1};
    double v1[] = {4, 1, 1, 3}, v2[] = {2, -1, -1, 5};
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 2, 2, rp, ci, SLA_F64, 1, v1, SLA_BORROW, &A));
    if (!A) return;
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    o.rtol = 1e-14;
    sla_solver *S = NULL;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    CHECK_OK(ctx, sla_matrix_borrow_values(ctx, A, v2));
    CHECK(sla_matrix_values(A, 0) == (const void *)v2);
    CHECK_OK(ctx, sla_solver_refresh(ctx, S));
    double b[] = {1, 2}, x[2];
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, 2, x, 2, NULL));
    /* [2 -1; -1 5] x = [1 2]: x = [7/9, 5/9] */
    CHECK_CLOSE(x[0], 7.0 / 9.0, 1e-12);
    CHECK_CLOSE(x[1], 5.0 / 9.0, 1e-12);
    CHECK(v1[0] == 4 && v1[3] == 3); /* the old array is untouched */
    double bad[] = {1, 2, INFINITY, 4};
    CHECK_ERR(ctx, sla_matrix_borrow_values(ctx, A, bad), SLA_ERR_VALUE, "entry 2");
    CHECK(sla_matrix_values(A, 0) == (const void *)v2);
    CHECK_ERR(ctx, sla_matrix_borrow_values(ctx, A, NULL), SLA_ERR_ARGUMENT, "NULL");
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 2, 2, rp, ci, SLA_F64, 1, v1, SLA_COPY, &A));
    CHECK_ERR(ctx, sla_matrix_borrow_values(ctx, A, v2), SLA_ERR_ARGUMENT, "owns its values");
    sla_matrix_destroy(&A);
}

/* A borrowed matrix without stored entries (the zero matrix): the caller may
 * have no values array at all (an empty tensor's data pointer is NULL;
 * issue 21 defect 10). Products are zero, the solvers report singular. */
static void test_borrow_empty(void)
{
    sla_int rp[] = {0, 0, 0, 0};
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 3, 3, rp, NULL, SLA_F64, 2, NULL, SLA_BORROW, &A));
    if (!A) return;
    CHECK(sla_matrix_nnz(A) == 0 && sla_matrix_nbatch(A) == 2);
    CHECK(sla_matrix_values(A, 0) != NULL && sla_matrix_values(A, 1) != NULL);
    double x[] = {1, 2, 3, 4, 5, 6}, y[6] = {9, 9, 9, 9, 9, 9};
    CHECK_OK(ctx, sla_matvec(ctx, A, 1, 1, x, 3, y, 3));
    CHECK(y[0] == 0 && y[1] == 0 && y[2] == 0);
    CHECK_OK(ctx, sla_matvec_batch(ctx, A, x, y));
    for (int i = 0; i < 6; i++) CHECK(y[i] == 0);
    double gy[] = {1, 1, 1}, gx[3] = {9, 9, 9};
    CHECK_OK(ctx, sla_matvec_vjp(ctx, A, 0, 1, x, 3, gy, 3, gx, 3, NULL));
    CHECK(gx[0] == 0 && gx[1] == 0 && gx[2] == 0);
    CHECK_OK(ctx, sla_matrix_check_values(ctx, A, -1));
    CHECK_OK(ctx, sla_matrix_borrow_values(ctx, A, NULL)); /* still nothing to read */
    CHECK_OK(ctx, sla_matrix_set_values(ctx, A, 1, NULL));
    CHECK_ERR(ctx, sla_matrix_set_values(ctx, A, 2, NULL), SLA_ERR_INDEX, "batch index");
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_LU;
    sla_solver *S = NULL;
    CHECK_ERR(ctx, sla_solver_create(ctx, A, &o, &S), SLA_ERR_SINGULAR, "singular");
    CHECK(S == NULL);
    sla_matrix_destroy(&A);
    /* 0 x 0, and a rectangular empty matrix */
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 0, 0, rp, NULL, SLA_F32, 1, NULL, SLA_BORROW, &A));
    CHECK(A && sla_matrix_nnz(A) == 0);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 2, 5, rp, NULL, SLA_F64, 1, NULL, SLA_BORROW, &A));
    if (A) {
        double y2[2] = {9, 9};
        CHECK_OK(ctx, sla_matvec(ctx, A, 0, 1, x, 5, y2, 2));
        CHECK(y2[0] == 0 && y2[1] == 0);
        sla_matrix_destroy(&A);
    }
    /* with stored entries a values array is still required */
    sla_int rp1[] = {0, 1, 1}, ci1[] = {0};
    CHECK_ERR(ctx, sla_matrix_from_csr(ctx, 2, 2, rp1, ci1, SLA_F64, 1, NULL, SLA_BORROW, &A),
              SLA_ERR_ARGUMENT, "needs a values array");
    CHECK(A == NULL);
}

/* Dense references for A x, A^T x, multi-rhs, transposition, properties. */
static void test_products(void)
{
    const sla_int n = 7, m = 5;
    sla_int rows[40], cols[40];
    double vals[80];
    unsigned long long s = 42;
    for (int k = 0; k < 40; k++) {
        rows[k] = (sla_int)((tu_rand(&s) + 1) * 0.5 * n) % n;
        cols[k] = (sla_int)((tu_rand(&s) + 1) * 0.5 * m) % m;
    }
    tu_fill(vals, 80, 7);
    for (int dt = 0; dt < 2; dt++) {
        sla_matrix *A = NULL;
        float fv[80];
        for (int k = 0; k < 80; k++) fv[k] = (float)vals[k];
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, n, m, 40, rows, cols, dt ? SLA_F32 : SLA_F64, 2,
                                          dt ? (const void *)fv : (const void *)vals, NULL, &A));
        if (!A) continue;
        double D[35], x[2 * 7], y[2 * 7], ref[2 * 7];
        for (sla_int ib = 0; ib < 2; ib++) {
            CHECK_OK(ctx, sla_matrix_to_dense(ctx, A, ib, D, n));
            /* dense sum of the COO entries */
            double E[35] = {0};
            for (int k = 0; k < 40; k++)
                E[cols[k] * n + rows[k]] += dt ? (double)fv[ib * 40 + k] : vals[ib * 40 + k];
            CHECK(tu_reldiff(35, D, E) < (dt ? 1e-6 : 1e-15));
            tu_fill(x, 2 * m, 3 + ib);
            CHECK_OK(ctx, sla_matvec(ctx, A, ib, 2, x, m, y, n));
            for (int r = 0; r < 2; r++)
                for (int i = 0; i < n; i++) {
                    ref[r * n + i] = 0;
                    for (int j = 0; j < m; j++) ref[r * n + i] += D[j * n + i] * x[r * m + j];
                }
            CHECK(tu_reldiff(2 * n, y, ref) < 1e-14);
            tu_fill(x, 2 * n, 9 + ib);
            for (int nt = 1; nt <= 2; nt++) {
                sla_ctx_set_threads(ctx, nt);
                CHECK_OK(ctx, sla_matvec_transpose(ctx, A, ib, 2, x, n, y, m));
                for (int r = 0; r < 2; r++)
                    for (int j = 0; j < m; j++) {
                        ref[r * m + j] = 0;
                        for (int i = 0; i < n; i++) ref[r * m + j] += D[j * n + i] * x[r * n + i];
                    }
                CHECK(tu_reldiff(2 * m, y, ref) < 1e-14);
            }
            sla_ctx_set_threads(ctx, 0);
        }
        /* transpose object */
        sla_matrix *T = NULL;
        sla_int perm[40];
        CHECK_OK(ctx, sla_matrix_transpose(ctx, A, perm, &T));
        if (T) {
            CHECK(sla_matrix_nrows(T) == m && sla_matrix_ncols(T) == n);
            double DT[35];
            sla_matrix_to_dense(ctx, A, 1, D, n);
            sla_matrix_to_dense(ctx, T, 1, DT, m);
            int bad = 0;
            for (int i = 0; i < n; i++)
                for (int j = 0; j < m; j++) bad += D[j * n + i] != DT[i * m + j];
            CHECK(bad == 0);
            sla_int nz = sla_matrix_nnz(A);
            int pbad = 0;
            for (sla_int k = 0; k < nz; k++)
                pbad += val_at(A, 1, k) != val_at(T, 1, perm[k]);
            CHECK(pbad == 0);
            sla_matrix_destroy(&T);
        }
        sla_matrix *C = NULL;
        CHECK_OK(ctx, sla_matrix_copy(ctx, A, &C));
        if (C) {
            CHECK(sla_matrix_nnz(C) == sla_matrix_nnz(A));
            sla_matrix_destroy(&C);
        }
        sla_matrix_destroy(&A);
    }
}

static void test_properties(void)
{
    /* symmetric, positive diagonal, diagonally dominant tridiagonal */
    sla_int r[] = {0, 0, 1, 1, 1, 2, 2}, c[] = {0, 1, 0, 1, 2, 1, 2};
    double v[] = {2, -1, -1, 2, -1, -1, 2};
    sla_matrix *A = NULL;
    sla_matrix_props p;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 3, 3, 7, r, c, SLA_F64, 1, v, NULL, &A));
    CHECK_OK(ctx, sla_matrix_properties(ctx, A, 0, 0.0, &p));
    CHECK(p.square && p.symmetric && p.structurally_symmetric && p.positive_diagonal &&
          p.diagonally_dominant);
    sla_matrix_destroy(&A);
    v[1] = -1.5; /* numerically nonsymmetric, structurally symmetric */
    v[3] = -2;   /* negative diagonal */
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 3, 3, 7, r, c, SLA_F64, 1, v, NULL, &A));
    CHECK_OK(ctx, sla_matrix_properties(ctx, A, 0, 1e-12, &p));
    CHECK(!p.symmetric && p.structurally_symmetric && !p.positive_diagonal);
    CHECK_CLOSE(p.symmetry_error, 0.5 / 2.0, 1e-15);
    CHECK_OK(ctx, sla_matrix_properties(ctx, A, 0, 0.3, &p));
    CHECK(p.symmetric);
    sla_matrix_destroy(&A);
    /* structurally nonsymmetric, missing diagonal */
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 3, 3, 2, (sla_int[]){0, 1}, (sla_int[]){2, 1}, SLA_F64, 1,
                                      NULL, NULL, &A));
    CHECK_OK(ctx, sla_matrix_properties(ctx, A, 0, 0.0, &p));
    CHECK(!p.structurally_symmetric && !p.symmetric && !p.positive_diagonal);
    sla_matrix_destroy(&A);
}

/* sla_matrix_properties against a dense brute force on random matrices:
 * symmetric, numerically and structurally nonsymmetric patterns (the real
 * path checks mirrors from the upper triangle only and counts entries,
 * with a second pass for entries without a mirror). */
static void test_properties_brute(void)
{
    unsigned s = 7;
    int bad = 0;
    for (int t = 0; t < 200; t++) {
        int n = 1 + t % 30, m = 3 * n, cap = 2 * m + n, k = 0, kind = t % 4;
        sla_int *ri = malloc((size_t)cap * sizeof *ri), *cj = malloc((size_t)cap * sizeof *cj);
        double *v = malloc((size_t)cap * sizeof *v);
        for (int e = 0; e < m / 2; e++) {
            s = s * 1103515245u + 12345u;
            int i = (int)((s >> 8) % (unsigned)n);
            s = s * 1103515245u + 12345u;
            int j = (int)((s >> 8) % (unsigned)n);
            s = s * 1103515245u + 12345u;
            double x = (double)((s >> 8) % 1000) / 100.0 - 5.0;
            ri[k] = i, cj[k] = j, v[k++] = x;
            /* 0: random pattern; 1: symmetric; 2: values differ; 3: some mirrors missing */
            if (kind >= 1 && i != j && !(kind == 3 && e % 5 == 0))
                ri[k] = j, cj[k] = i, v[k++] = kind == 2 ? x + 0.5 : x;
        }
        for (int i = 0; i < n; i++) ri[k] = cj[k] = i, v[k++] = 1.0 + i;
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, n, n, k, ri, cj, SLA_F64, 1, v, NULL, &A));
        sla_matrix_props p;
        CHECK_OK(ctx, sla_matrix_properties(ctx, A, 0, 0.0, &p));
        double *D = calloc((size_t)(n * n), sizeof *D);
        char *S = calloc((size_t)(n * n), 1);
        CHECK_OK(ctx, sla_matrix_to_dense(ctx, A, 0, D, n));
        const sla_int *rp = sla_matrix_rowptr(A);
        sla_int *ci = malloc((size_t)sla_matrix_nnz(A) * sizeof *ci);
        sla_matrix_get_colind(A, ci);
        for (int i = 0; i < n; i++)
            for (sla_int q = rp[i]; q < rp[i + 1]; q++) S[ci[q] * n + i] = 1;
        double mx = 0.0, se = 0.0;
        int ss = 1;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                mx = fmax(mx, fabs(D[j * n + i]));
                if (S[j * n + i] != S[i * n + j]) ss = 0;
                if (S[j * n + i] && i != j) se = fmax(se, fabs(D[j * n + i] - D[i * n + j]));
            }
        if (ss != p.structurally_symmetric || fabs((mx > 0 ? se / mx : 0.0) - p.symmetry_error) > 1e-15 ||
            mx != p.max_abs)
            bad++;
        free(D), free(S), free(ci), free(ri), free(cj), free(v);
        sla_matrix_destroy(&A);
    }
    printf("properties against a dense brute force: %d of 200 differ\n", bad);
    CHECK(bad == 0);
}

/* The real path of sla_matrix_properties (real arithmetic, rows in
 * parallel) gives exactly what the complex path gives for the same values
 * stored as complex128: every field, on matrices large enough for the
 * threaded loops, symmetric or not, with and without diagonals, float64 and
 * float32, 1 and 2 threads. */
static void test_properties_real_vs_complex(void)
{
    enum { N = 20000 };
    unsigned long long seed = 11;
    for (int kind = 0; kind < 4; kind++) {
        sla_int ne = 0, cap = 6 * N;
        sla_int *r = malloc(sizeof(sla_int) * cap), *c = malloc(sizeof(sla_int) * cap);
        double *v = malloc(sizeof(double) * cap), *z = malloc(2 * sizeof(double) * cap);
        float *f = malloc(sizeof(float) * cap);
        for (sla_int i = 0; i < N && r && c && v; i++) {
            if (!(kind == 2 && i % 97 == 0)) { r[ne] = i; c[ne] = i; v[ne] = 4.0 + (kind == 3 ? -8.0 * (i % 5 == 0) : 0.0); ne++; }
            for (int d = 1; d <= 2; d++) {
                sla_int j = (i + d * 37) % N;
                double a = tu_rand(&seed);
                r[ne] = i; c[ne] = j; v[ne] = a; ne++;
                if (kind != 1 || d == 1) { r[ne] = j; c[ne] = i; v[ne] = kind == 0 || kind == 3 ? a : a + 1e-9 * tu_rand(&seed); ne++; }
            }
        }
        for (sla_int k = 0; k < ne; k++) { z[2 * k] = v[k]; z[2 * k + 1] = 0.0; f[k] = (float)v[k]; }
        for (int prec = 0; prec < 2; prec++) {
            sla_matrix *A = NULL, *Z = NULL;
            CHECK_OK(ctx, sla_matrix_from_coo(ctx, N, N, ne, r, c, prec ? SLA_F32 : SLA_F64, 1,
                                              prec ? (const void *)f : (const void *)v, NULL, &A));
            if (prec) for (sla_int k = 0; k < ne; k++) z[2 * k] = (double)f[k];
            CHECK_OK(ctx, sla_matrix_from_coo(ctx, N, N, ne, r, c, SLA_C128, 1, z, NULL, &Z));
            for (int th = 1; th <= 2 && A && Z; th++) {
                sla_ctx_set_threads(ctx, th);
                sla_matrix_props pr, pz;
                for (int t = 0; t < 2; t++) {
                    double tol = t ? 1e-6 : 0.0;
                    CHECK_OK(ctx, sla_matrix_properties(ctx, A, 0, tol, &pr));
                    CHECK_OK(ctx, sla_matrix_properties(ctx, Z, 0, tol, &pz));
                    CHECK(!pr.is_complex && pz.is_complex);
                    CHECK(pr.square == pz.square && pr.symmetric == pz.symmetric &&
                          pr.structurally_symmetric == pz.structurally_symmetric &&
                          pr.hermitian == pz.hermitian &&
                          pr.positive_diagonal == pz.positive_diagonal &&
                          pr.diagonally_dominant == pz.diagonally_dominant);
                    CHECK(pr.max_abs == pz.max_abs && pr.symmetry_error == pz.symmetry_error &&
                          pr.hermitian_error == pz.hermitian_error);
                }
                CHECK(pr.symmetric == (kind != 1)); /* at tol 1e-6 */
                CHECK(pr.structurally_symmetric == (kind != 1));
                CHECK(pr.positive_diagonal == (kind < 2));
            }
            sla_ctx_set_threads(ctx, 1);
            sla_matrix_destroy(&A);
            sla_matrix_destroy(&Z);
        }
        free(r); free(c); free(v); free(z); free(f);
    }
}

/* Few entries for the dimensions: sorted, not counted (no O(n) counters,
 * issue 21); the result must equal the counting sort's, duplicates summed in
 * entry order, and the COO -> CSR map too. (The refusal of a row pointer
 * that cannot fit in memory is tested by test_cli.sh under ulimit -v.) */
static void test_coo_sparse_dims(void)
{
    enum { NE = 60 };
    sla_int r[NE], c[NE], map1[NE], map2[NE];
    double v[NE];
    unsigned long long seed = 7;
    for (int k = 0; k < NE; k++) {
        r[k] = (sla_int)(tu_rand(&seed) * 8.0 + 8.0) % 8; /* many duplicates */
        c[k] = (sla_int)(tu_rand(&seed) * 8.0 + 8.0) % 8;
        v[k] = tu_rand(&seed);
    }
    sla_matrix *S = NULL, *D = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 8, 8, NE, r, c, SLA_F64, 1, v, map1, &D)); /* counted */
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 100000, 90000, NE, r, c, SLA_F64, 1, v, map2, &S)); /* sorted */
    if (S && D) {
        sla_int nnz = sla_matrix_nnz(D);
        CHECK(sla_matrix_nnz(S) == nnz);
        const sla_int *rs = sla_matrix_rowptr(S), *rd = sla_matrix_rowptr(D);
        for (int i = 0; i <= 8; i++) CHECK(rs[i] == rd[i]);
        CHECK(rs[100000] == nnz);
        sla_int cs[NE], cd[NE];
        sla_matrix_get_colind(S, cs);
        sla_matrix_get_colind(D, cd);
        const double *vs = sla_matrix_values(S, 0), *vd = sla_matrix_values(D, 0);
        for (sla_int k = 0; k < nnz; k++) CHECK(cs[k] == cd[k] && vs[k] == vd[k]); /* bitwise */
        for (int k = 0; k < NE; k++) CHECK(map1[k] == map2[k]);
    }
    sla_matrix_destroy(&S);
    sla_matrix_destroy(&D);
}

int main(void)
{
    sla_ctx_create(&ctx);
    test_coo();
    test_coo_sparse_dims();
    test_csr_errors();
    test_borrow_and_set();
    test_borrow_values();
    test_finite_long();
    test_borrow_empty();
    test_products();
    test_properties();
    test_properties_real_vs_complex();
    test_properties_brute();
    sla_ctx_destroy(&ctx);
    return tu_finish("test_matrix");
}
