/* Sparse-sparse algebra (SpGEMM, sum, elementwise product) and graph
 * tools against dense references; their VJPs against central finite
 * differences (float64) and the dot-product identity; bad input. */
#include "test_util.h"

static sla_ctx *ctx;

/* m x n random matrix, about `per_row` entries a row (duplicates summed),
 * nbatch value arrays. */
static sla_matrix *rand_mat(sla_int m, sla_int n, int per_row, sla_int nbatch,
                            unsigned long long seed)
{
    sla_int nz = m * per_row;
    sla_int *r = malloc((size_t)(nz + 1) * sizeof *r), *c = malloc((size_t)(nz + 1) * sizeof *c);
    double *v = malloc((size_t)(nz * nbatch + 1) * sizeof *v);
    unsigned long long s = seed;
    for (sla_int k = 0; k < nz; k++) {
        r[k] = k / per_row;
        c[k] = (sla_int)(tu_rand(&s) * 0.5 * (double)n + 0.5 * (double)n) % (n > 0 ? n : 1);
    }
    tu_fill(v, nz * nbatch, seed + 1);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, m, n, nz, r, c, SLA_F64, nbatch, v, NULL, &A));
    free(r);
    free(c);
    free(v);
    return A;
}

/* Dense column-major copy of value array ib. */
static double *dense(const sla_matrix *A, sla_int ib)
{
    sla_int m = sla_matrix_nrows(A), n = sla_matrix_ncols(A);
    double *d = calloc((size_t)(m * n + 1), sizeof *d);
    sla_matrix_to_dense(ctx, A, ib, d, m > 0 ? m : 1);
    return d;
}

/* Dense column-major copy of C's pattern with values v. */
static double *dense_vals(const sla_matrix *C, const double *v)
{
    sla_int m = sla_matrix_nrows(C), n = sla_matrix_ncols(C), nnz = sla_matrix_nnz(C);
    const sla_int *rp = sla_matrix_rowptr(C);
    sla_int *ci = malloc((size_t)(nnz + 1) * sizeof *ci);
    sla_matrix_get_colind(C, ci);
    double *d = calloc((size_t)(m * n + 1), sizeof *d);
    for (sla_int i = 0; i < m; i++)
        for (sla_int p = rp[i]; p < rp[i + 1]; p++) d[ci[p] * m + i] = v[p];
    free(ci);
    return d;
}

static double dot(sla_int n, const double *a, const double *b)
{
    double s = 0;
    for (sla_int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

typedef enum { OP_GEMM, OP_ADD, OP_MUL } op_kind;
static const double ALPHA = 1.5, BETA = -0.75;

static sla_status op_symbolic(op_kind op, const sla_matrix *A, const sla_matrix *B, sla_matrix **C)
{
    return op == OP_GEMM ? sla_spgemm_symbolic(ctx, A, B, C)
           : op == OP_ADD ? sla_spadd_symbolic(ctx, A, B, C)
                          : sla_spmul_symbolic(ctx, A, B, C);
}

static sla_status op_numeric(op_kind op, const sla_matrix *A, const sla_matrix *B, sla_matrix *C,
                             double *cv)
{
    return op == OP_GEMM ? sla_spgemm_numeric(ctx, A, B, C, cv)
           : op == OP_ADD ? sla_spadd_numeric(ctx, ALPHA, A, BETA, B, C, cv)
                          : sla_spmul_numeric(ctx, A, B, C, cv);
}

static sla_status op_vjp(op_kind op, const sla_matrix *A, const sla_matrix *B, const sla_matrix *C,
                         const double *gC, double *gA, double *gB)
{
    return op == OP_GEMM ? sla_spgemm_vjp(ctx, A, B, C, gC, gA, gB)
           : op == OP_ADD ? sla_spadd_vjp(ctx, ALPHA, A, BETA, B, C, gC, gA, gB)
                          : sla_spmul_vjp(ctx, A, B, C, gC, gA, gB);
}

/* The dense reference of value array b of the result. */
static double *op_dense(op_kind op, const sla_matrix *A, const sla_matrix *B, sla_int b)
{
    sla_int m = sla_matrix_nrows(A), k = sla_matrix_ncols(A), n = sla_matrix_ncols(B);
    double *a = dense(A, sla_matrix_nbatch(A) == 1 ? 0 : b);
    double *bb = dense(B, sla_matrix_nbatch(B) == 1 ? 0 : b);
    double *c = calloc((size_t)(m * n + 1), sizeof *c);
    for (sla_int i = 0; i < m; i++)
        for (sla_int j = 0; j < n; j++) {
            double s = 0;
            if (op == OP_GEMM)
                for (sla_int l = 0; l < k; l++) s += a[l * m + i] * bb[j * k + l];
            else if (op == OP_ADD)
                s = ALPHA * a[j * m + i] + BETA * bb[j * m + i];
            else
                s = a[j * m + i] * bb[j * m + i];
            c[j * m + i] = s;
        }
    free(a);
    free(bb);
    return c;
}

/* L = <gC, op(A, B)> with A's value array ia (or B's) replaced. */
static double loss(op_kind op, sla_matrix *A, sla_matrix *B, sla_matrix *C, const double *gC)
{
    sla_int nbC = sla_matrix_nbatch(C), nnz = sla_matrix_nnz(C);
    double *cv = malloc((size_t)(nbC * nnz + 1) * sizeof *cv);
    op_numeric(op, A, B, C, cv);
    double L = dot(nbC * nnz, gC, cv);
    free(cv);
    return L;
}

/* Forward vs dense, VJP vs central differences and the dot-product identity. */
static void check_op(op_kind op, sla_int m, sla_int k, sla_int n, sla_int nbA, sla_int nbB)
{
    sla_matrix *A = rand_mat(m, k, 3, nbA, 11 + (unsigned)op);
    sla_matrix *B = op == OP_GEMM ? rand_mat(k, n, 3, nbB, 23) : rand_mat(m, k, 3, nbB, 29);
    sla_matrix *C = NULL;
    if (!A || !B) return;
    CHECK_OK(ctx, op_symbolic(op, A, B, &C));
    if (!C) return;
    sla_int nbC = sla_matrix_nbatch(C), nnzC = sla_matrix_nnz(C);
    sla_int nc = sla_matrix_ncols(C);
    CHECK(nbC == (nbA > nbB ? nbA : nbB));
    /* C's own values, then an external array */
    CHECK_OK(ctx, op_numeric(op, A, B, C, NULL));
    double maxerr = 0;
    for (sla_int b = 0; b < nbC; b++) {
        double *ref = op_dense(op, A, B, b);
        double *got = dense_vals(C, (const double *)sla_matrix_values(C, b));
        maxerr = fmax(maxerr, tu_reldiff(m * nc, got, ref));
        free(ref);
        free(got);
    }
    CHECK(maxerr < 1e-13);
    /* VJP */
    sla_int nnzA = sla_matrix_nnz(A), nnzB = sla_matrix_nnz(B);
    double *gC = malloc((size_t)(nbC * nnzC + 1) * sizeof *gC);
    double *gA = malloc((size_t)(nbA * nnzA + 1) * sizeof *gA);
    double *gB = malloc((size_t)(nbB * nnzB + 1) * sizeof *gB);
    tu_fill(gC, nbC * nnzC, 7);
    CHECK_OK(ctx, op_vjp(op, A, B, C, gC, gA, gB));
    /* central differences on some entries of A and B (bilinear: exact) */
    double h = 1e-3, fderr = 0;
    for (int which = 0; which < 2; which++) {
        sla_matrix *X = which ? B : A;
        const double *g = which ? gB : gA;
        sla_int nnz = sla_matrix_nnz(X), nb = sla_matrix_nbatch(X);
        double *v = malloc((size_t)(nnz + 1) * sizeof *v);
        for (sla_int ib = 0; ib < nb; ib++) {
            memcpy(v, sla_matrix_values(X, ib), (size_t)nnz * sizeof *v);
            for (sla_int q = ib; q < nnz; q += nnz > 200 ? nnz / 40 : 5) {
                double v0 = v[q], Lp, Lm;
                v[q] = v0 + h;
                sla_matrix_set_values(ctx, X, ib, v);
                Lp = loss(op, A, B, C, gC);
                v[q] = v0 - h;
                sla_matrix_set_values(ctx, X, ib, v);
                Lm = loss(op, A, B, C, gC);
                v[q] = v0;
                sla_matrix_set_values(ctx, X, ib, v);
                fderr = fmax(fderr, fabs((Lp - Lm) / (2 * h) - g[ib * nnz + q]) /
                                        fmax(1.0, fabs(g[ib * nnz + q])));
            }
        }
        free(v);
    }
    CHECK(fderr < 1e-9);
    if (fderr >= 1e-9) fprintf(stderr, "op %d: fd error %g\n", (int)op, fderr);
    /* dot-product identity: <gC, dC> = <gA, dA> + <gB, dB> where dC is the
     * linearization (for a product: dA B + A dB; for a sum: alpha dA +
     * beta dB), i.e. L(A + dA, B + dB) - L(A, B) up to second order, which
     * a bilinear map makes exactly (L(A+t dA, B+t dB) - L(A-t dA, B-t dB)) / 2t. */
    if (op != OP_ADD || 1) {
        double *dA = malloc((size_t)(nbA * nnzA + 1) * sizeof *dA);
        double *dB = malloc((size_t)(nbB * nnzB + 1) * sizeof *dB);
        double *va = malloc((size_t)(nbA * nnzA + 1) * sizeof *va);
        double *vb = malloc((size_t)(nbB * nnzB + 1) * sizeof *vb);
        tu_fill(dA, nbA * nnzA, 41);
        tu_fill(dB, nbB * nnzB, 43);
        for (sla_int b = 0; b < nbA; b++)
            memcpy(va + b * nnzA, sla_matrix_values(A, b), (size_t)nnzA * sizeof *va);
        for (sla_int b = 0; b < nbB; b++)
            memcpy(vb + b * nnzB, sla_matrix_values(B, b), (size_t)nnzB * sizeof *vb);
        double L[2], t = 0.5;
        for (int s = 0; s < 2; s++) {
            double sg = s ? -t : t;
            double *xa = malloc((size_t)(nnzA + 1) * sizeof *xa),
                   *xb = malloc((size_t)(nnzB + 1) * sizeof *xb);
            for (sla_int b = 0; b < nbA; b++) {
                for (sla_int q = 0; q < nnzA; q++) xa[q] = va[b * nnzA + q] + sg * dA[b * nnzA + q];
                sla_matrix_set_values(ctx, A, b, xa);
            }
            for (sla_int b = 0; b < nbB; b++) {
                for (sla_int q = 0; q < nnzB; q++) xb[q] = vb[b * nnzB + q] + sg * dB[b * nnzB + q];
                sla_matrix_set_values(ctx, B, b, xb);
            }
            L[s] = loss(op, A, B, C, gC);
            free(xa);
            free(xb);
        }
        double lhs = (L[0] - L[1]) / (2 * t);
        double rhs = dot(nbA * nnzA, gA, dA) + dot(nbB * nnzB, gB, dB);
        CHECK(fabs(lhs - rhs) <= 1e-11 * fmax(1.0, fabs(rhs)));
        free(dA);
        free(dB);
        free(va);
        free(vb);
    }
    free(gC);
    free(gA);
    free(gB);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&C);
}

static void test_ops(void)
{
    for (int op = 0; op < 3; op++) {
        check_op((op_kind)op, 30, 20, 25, 1, 1);
        check_op((op_kind)op, 30, 20, 25, 3, 3);
        check_op((op_kind)op, 30, 20, 25, 3, 1); /* B broadcast */
        check_op((op_kind)op, 30, 20, 25, 1, 2); /* A broadcast */
        check_op((op_kind)op, 600, 500, 400, 2, 1); /* above the threaded threshold */
        check_op((op_kind)op, 0, 7, 4, 1, 1);
    }
}

static void test_float32(void)
{
    /* a float32 operand is read in float64 */
    sla_matrix *P = NULL, *C = NULL, *C32 = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 6, &P));
    if (!P) return;
    sla_int n = sla_matrix_nrows(P), nnz = sla_matrix_nnz(P);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    float *v32 = malloc((size_t)nnz * sizeof *v32);
    sla_matrix_get_colind(P, ci);
    for (sla_int k = 0; k < nnz; k++) v32[k] = (float)((const double *)sla_matrix_values(P, 0))[k];
    sla_matrix *P32 = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(P), ci, SLA_F32, 1, v32,
                                      SLA_COPY, &P32));
    CHECK_OK(ctx, sla_spgemm_symbolic(ctx, P, P, &C));
    CHECK_OK(ctx, sla_spgemm_symbolic(ctx, P32, P, &C32));
    CHECK_OK(ctx, sla_spgemm_numeric(ctx, P, P, C, NULL));
    CHECK_OK(ctx, sla_spgemm_numeric(ctx, P32, P, C32, NULL));
    CHECK(sla_matrix_nnz(C) == sla_matrix_nnz(C32));
    CHECK(tu_reldiff(sla_matrix_nnz(C), sla_matrix_values(C, 0), sla_matrix_values(C32, 0)) == 0);
    /* the 9-point-like pattern of P^2 in 2-D has 13 entries on interior rows */
    CHECK(sla_matrix_rowptr(C)[3 * 6 + 3 + 1] - sla_matrix_rowptr(C)[3 * 6 + 3] == 13);
    free(ci);
    free(v32);
    sla_matrix_destroy(&P);
    sla_matrix_destroy(&P32);
    sla_matrix_destroy(&C);
    sla_matrix_destroy(&C32);
}

/* sla_spgemm (symbolic and numeric in one pass) against sla_spgemm_symbolic
 * + sla_spgemm_numeric and a dense product: the same pattern (valid CSR,
 * sorted), the same values, at 1, 2 and 3 threads (one pass; two threads
 * splitting the rows; a counting pass and row chunks), with wide rows
 * (the long-row sort), a batch, a float32 operand. */
static void check_fused(sla_int m, sla_int k, sla_int n, int per_row, sla_int nbA, sla_int nbB,
                        bool f32)
{
    sla_matrix *A = rand_mat(m, k, per_row, nbA, 101 + (unsigned long long)m);
    sla_matrix *B = rand_mat(k, n, per_row, nbB, 211 + (unsigned long long)n);
    if (!A || !B) return;
    if (f32) { /* A as float32 */
        sla_int nnz = sla_matrix_nnz(A);
        sla_int *ci = malloc((size_t)(nnz + 1) * sizeof *ci);
        float *v = malloc((size_t)(nnz * nbA + 1) * sizeof *v);
        sla_matrix_get_colind(A, ci);
        for (sla_int b = 0; b < nbA; b++)
            for (sla_int q = 0; q < nnz; q++)
                v[b * nnz + q] = (float)((const double *)sla_matrix_values(A, b))[q];
        sla_matrix *A32 = NULL;
        CHECK_OK(ctx, sla_matrix_from_csr(ctx, m, k, sla_matrix_rowptr(A), ci, SLA_F32, nbA, v,
                                          SLA_COPY, &A32));
        free(ci);
        free(v);
        sla_matrix_destroy(&A);
        A = A32;
        if (!A) return;
    }
    for (int nt = 1; nt <= 3; nt++) {
        sla_ctx_set_threads(ctx, nt);
        sla_matrix *C = NULL, *F = NULL;
        CHECK_OK(ctx, sla_spgemm_symbolic(ctx, A, B, &C));
        CHECK_OK(ctx, sla_spgemm(ctx, A, B, &F));
        if (!C || !F) return;
        CHECK_OK(ctx, sla_spgemm_numeric(ctx, A, B, C, NULL));
        sla_int nnz = sla_matrix_nnz(C), nbC = sla_matrix_nbatch(C);
        CHECK(sla_matrix_nnz(F) == nnz && sla_matrix_nbatch(F) == nbC);
        CHECK(memcmp(sla_matrix_rowptr(C), sla_matrix_rowptr(F), (size_t)(m + 1) * 8) == 0);
        sla_int *cc = malloc((size_t)(nnz + 1) * sizeof *cc), *fc = malloc((size_t)(nnz + 1) * 8);
        sla_matrix_get_colind(C, cc);
        sla_matrix_get_colind(F, fc);
        CHECK(memcmp(cc, fc, (size_t)nnz * sizeof *cc) == 0);
        /* the threaded COO form equals the serial getters', and is recognized */
        sla_int *ri = malloc((size_t)(nnz + 1) * 8), *rj = malloc((size_t)(nnz + 1) * 8);
        sla_int *cj = malloc((size_t)(nnz + 1) * 8);
        sla_matrix_get_rowind(F, ri);
        CHECK_OK(ctx, sla_matrix_get_coo(ctx, F, rj, cj));
        CHECK(memcmp(ri, rj, (size_t)nnz * 8) == 0 && memcmp(fc, cj, (size_t)nnz * 8) == 0);
        CHECK(sla_matrix_coo_equal(ctx, F, rj, cj) == 1);
        if (nnz > 1) {
            cj[nnz - 1] = -1; /* one column changed */
            CHECK(sla_matrix_coo_equal(ctx, F, rj, cj) == 0);
            rj[0] = -1;
            CHECK(sla_matrix_coo_equal(ctx, F, rj, fc) == 0);
        }
        CHECK(sla_matrix_coo_equal(ctx, NULL, rj, cj) == 0);
        free(ri);
        free(rj);
        free(cj);
        /* a valid CSR pattern: columns in range, strictly increasing in each row */
        sla_matrix *V = NULL;
        CHECK_OK(ctx, sla_matrix_from_csr(ctx, m, n, sla_matrix_rowptr(F), fc, SLA_F64, 1, NULL,
                                          SLA_COPY, &V));
        sla_matrix_destroy(&V);
        double err = 0;
        for (sla_int b = 0; b < nbC; b++) {
            CHECK(tu_reldiff(nnz, sla_matrix_values(C, b), sla_matrix_values(F, b)) == 0);
            double *ref = op_dense(OP_GEMM, A, B, b);
            double *got = dense_vals(F, (const double *)sla_matrix_values(F, b));
            err = fmax(err, tu_reldiff(m * n, got, ref));
            free(ref);
            free(got);
        }
        CHECK(err < 1e-13);
        free(cc);
        free(fc);
        sla_matrix_destroy(&C);
        sla_matrix_destroy(&F);
    }
    sla_ctx_set_threads(ctx, 0);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&B);
}

/* 2-D Poisson 64^2 squared at 1, 2 and 3 threads (one pass; the rows
 * split between two threads, rows of like cost; a counting pass) and at 2
 * from inside a parallel region (without nested parallelism one thread is
 * granted: it writes every row): bitwise the same pattern and values, and
 * those of symbolic + numeric. */
static void test_fused_split(void)
{
    sla_matrix *A = NULL, *F[4] = {NULL, NULL, NULL, NULL}, *C = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 64, &A));
    if (!A) return;
    for (int nt = 1; nt <= 3; nt++) {
        sla_ctx_set_threads(ctx, nt);
        CHECK_OK(ctx, sla_spgemm(ctx, A, A, &F[nt - 1]));
    }
    sla_ctx_set_threads(ctx, 2);
    sla_status inner = SLA_OK;
#pragma omp parallel num_threads(2)
    {
#pragma omp master
        inner = sla_spgemm(ctx, A, A, &F[3]);
    }
    CHECK(inner == SLA_OK);
    CHECK_OK(ctx, sla_spgemm_symbolic(ctx, A, A, &C));
    if (C) CHECK_OK(ctx, sla_spgemm_numeric(ctx, A, A, C, NULL));
    sla_ctx_set_threads(ctx, 0);
    sla_int m = sla_matrix_nrows(A), nnz = C ? sla_matrix_nnz(C) : 0;
    sla_int *c0 = malloc((size_t)(nnz + 1) * sizeof *c0), *c1 = malloc((size_t)(nnz + 1) * 8);
    if (C) sla_matrix_get_colind(C, c0);
    for (int t = 0; t < 4 && C; t++) {
        if (!F[t]) continue;
        CHECK(sla_matrix_nnz(F[t]) == nnz);
        if (sla_matrix_nnz(F[t]) != nnz) continue;
        CHECK(memcmp(sla_matrix_rowptr(F[t]), sla_matrix_rowptr(C), (size_t)(m + 1) * 8) == 0);
        sla_matrix_get_colind(F[t], c1);
        CHECK(memcmp(c0, c1, (size_t)nnz * sizeof *c0) == 0);
        CHECK(memcmp(sla_matrix_values(F[t], 0), sla_matrix_values(C, 0),
                     (size_t)nnz * sizeof(double)) == 0);
    }
    free(c0);
    free(c1);
    for (int t = 0; t < 4; t++) sla_matrix_destroy(&F[t]);
    sla_matrix_destroy(&C);
    sla_matrix_destroy(&A);
}

/* A B (float64 operands) as a dense column-major m x n array, by the
 * definition: c_ij = sum over A's row i of a_il b_lj, l ascending. */
static double *sparse_dense_product(const sla_matrix *A, const sla_matrix *B)
{
    sla_int m = sla_matrix_nrows(A), n = sla_matrix_ncols(B);
    const sla_int *ar = sla_matrix_rowptr(A), *br = sla_matrix_rowptr(B);
    sla_int *ac = malloc((size_t)(sla_matrix_nnz(A) + 1) * sizeof *ac);
    sla_int *bc = malloc((size_t)(sla_matrix_nnz(B) + 1) * sizeof *bc);
    const double *av = sla_matrix_values(A, 0), *bv = sla_matrix_values(B, 0);
    double *c = calloc((size_t)(m * n + 1), sizeof *c);
    sla_matrix_get_colind(A, ac);
    sla_matrix_get_colind(B, bc);
    for (sla_int i = 0; i < m; i++)
        for (sla_int p = ar[i]; p < ar[i + 1]; p++)
            for (sla_int q = br[ac[p]]; q < br[ac[p] + 1]; q++)
                c[bc[q] * m + i] += av[p] * bv[q];
    free(ac);
    free(bc);
    return c;
}

/* sla_spgemm(A, B) at 1, 2 and 3 threads against symbolic + numeric (the
 * same pattern, values bit for bit), the product by its definition
 * (sparse_dense_product) and each other (bit
 * for bit); every row's columns ascending. lens (optional) counts C's rows
 * of 0, 1..16, 17..32 and more columns. */
static void check_products(const sla_matrix *A, const sla_matrix *B, sla_int *lens)
{
    sla_int m = sla_matrix_nrows(A), n = sla_matrix_ncols(B);
    sla_matrix *F[3] = {NULL, NULL, NULL};
    double *ref = sparse_dense_product(A, B);
    for (int nt = 1; nt <= 3; nt++) {
        sla_ctx_set_threads(ctx, nt);
        sla_matrix *C = NULL;
        CHECK_OK(ctx, sla_spgemm(ctx, A, B, &F[nt - 1]));
        CHECK_OK(ctx, sla_spgemm_symbolic(ctx, A, B, &C));
        if (!F[nt - 1] || !C) {
            sla_matrix_destroy(&C);
            break;
        }
        CHECK_OK(ctx, sla_spgemm_numeric(ctx, A, B, C, NULL));
        sla_int nnz = sla_matrix_nnz(C);
        const sla_int *rp = sla_matrix_rowptr(F[nt - 1]);
        CHECK(nnz == sla_matrix_nnz(F[nt - 1]));
        CHECK(memcmp(rp, sla_matrix_rowptr(C), (size_t)(m + 1) * sizeof *rp) == 0);
        CHECK(tu_reldiff(nnz, sla_matrix_values(C, 0), sla_matrix_values(F[nt - 1], 0)) == 0);
        sla_int *fc = malloc((size_t)(nnz + 1) * sizeof *fc);
        sla_matrix_get_colind(F[nt - 1], fc);
        for (sla_int i = 0; i < m; i++) {
            sla_int len = rp[i + 1] - rp[i];
            if (lens) lens[len == 0 ? 0 : len <= 16 ? 1 : len <= 32 ? 2 : 3]++;
            for (sla_int p = rp[i] + 1; p < rp[i + 1]; p++) CHECK(fc[p - 1] < fc[p]);
        }
        free(fc);
        double *got = dense_vals(F[nt - 1], (const double *)sla_matrix_values(F[nt - 1], 0));
        CHECK(tu_reldiff(m * n, got, ref) < 1e-13);
        /* every stored entry of the dense product is in the pattern */
        sla_int nz = 0;
        for (sla_int q = 0; q < m * n; q++) nz += ref[q] != 0.0;
        CHECK(nz <= nnz);
        free(got);
        sla_matrix_destroy(&C);
    }
    for (int t = 1; t < 3 && F[0] && F[t]; t++) {
        sla_int nnz = sla_matrix_nnz(F[0]);
        sla_int *c0 = malloc((size_t)(nnz + 1) * sizeof *c0), *c1 = malloc((size_t)(nnz + 1) * 8);
        sla_matrix_get_colind(F[0], c0);
        sla_matrix_get_colind(F[t], c1);
        CHECK(nnz == sla_matrix_nnz(F[t]) && memcmp(c0, c1, (size_t)nnz * sizeof *c0) == 0);
        CHECK(memcmp(sla_matrix_values(F[0], 0), sla_matrix_values(F[t], 0),
                     (size_t)nnz * sizeof(double)) == 0);
        free(c0);
        free(c1);
    }
    sla_ctx_set_threads(ctx, 0);
    for (int t = 0; t < 3; t++) sla_matrix_destroy(&F[t]);
    free(ref);
}

/* A grid stencil with random values as an nx*ny x ncols matrix: row i's
 * entries at columns step i + offs[0..noff) (those within [0, ncols));
 * with defects, every 37th row without its last entry and every 53rd with
 * its first entry's column one to the left (where free). */
static sla_matrix *stencil(sla_int nrows, sla_int ncols, sla_int step, const sla_int *offs,
                           int noff, bool defects, unsigned long long seed)
{
    sla_int cap = nrows * noff, nz = 0;
    sla_int *r = malloc((size_t)cap * sizeof *r), *c = malloc((size_t)cap * sizeof *c);
    double *v = malloc((size_t)cap * sizeof *v);
    for (sla_int i = 0; i < nrows; i++)
        for (int t = 0; t < noff; t++) {
            sla_int col = step * i + offs[t];
            if (defects && i % 37 == 36 && t == noff - 1) continue;
            if (defects && i % 53 == 52 && t == 0 && col - 1 >= 0) col--;
            if (col < 0 || col >= ncols) continue;
            r[nz] = i;
            c[nz] = col;
            v[nz++] = tu_rand(&seed);
        }
    sla_matrix *M = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, nrows, ncols, nz, r, c, SLA_F64, 1, v, NULL, &M));
    free(r);
    free(c);
    free(v);
    return M;
}

/* Products whose rows are mostly the row before shifted (sla_spgemm's
 * product map: a row's products found by the mapped row's shifted, its
 * columns and sums taken from the map), and the rows where that breaks:
 * A = B a 2-D 5-point stencil (1200 rows: the two-thread split, one thread
 * going down the rows, so shifted by -1), with and without defects (a row
 * with one entry less, a row with one column moved: as many products but
 * not shifted alike); a 2-D stencil times a 1-D one with other offsets;
 * rows shifted by 2 (A 600 x 1200 with columns 2i + {-1, 0, 1, 3}: a
 * restriction's pattern); a 3-D 7-point stencil (rows of 25 columns from
 * 49 products). All against a dense product, symbolic + numeric and each
 * other (check_products). */
static void test_mapped_rows(void)
{
    const sla_int nx = 40, ny = 30, n = nx * ny;
    const sla_int five[5] = {-nx, -1, 0, 1, nx}, band[3] = {-2, 0, 3}, wide[4] = {-1, 0, 1, 3};
    const sla_int seven[7] = {-100, -10, -1, 0, 1, 10, 100};
    for (int d = 0; d < 2; d++) {
        sla_matrix *A = stencil(n, n, 1, five, 5, d == 1, 11 + (unsigned long long)d);
        if (A) check_products(A, A, NULL);
        sla_matrix *B = stencil(n, n, 1, band, 3, d == 1, 12);
        if (A && B) check_products(A, B, NULL);
        sla_matrix_destroy(&A);
        sla_matrix_destroy(&B);
    }
    sla_matrix *R = stencil(n / 2, n, 2, wide, 4, true, 13);
    sla_matrix *T = stencil(n, n, 1, band, 3, false, 14);
    if (R && T) check_products(R, T, NULL);
    sla_matrix *S = stencil(1000, 1000, 1, seven, 7, false, 15);
    if (S) check_products(S, S, NULL);
    sla_matrix_destroy(&R);
    sla_matrix_destroy(&T);
    sla_matrix_destroy(&S);
}

/* C rows of every length from 0 to about 70 (the placement by rank up to
 * 16 and 32 columns, a sort beyond), built from B rows of 0 to 24 random
 * columns merged in an unsorted order, with empty rows and columns in A,
 * B and C, duplicates in the COO input (summed), a rectangular shape:
 * sla_spgemm and sla_spgemm_symbolic + numeric against a dense product, a
 * valid sorted CSR, and bitwise the same pattern and values at 1, 2 and 3
 * threads (one pass; two threads splitting the rows; a counting pass and
 * rows in several chunks). */
static void test_row_lengths(void)
{
    /* n < 2 x 32: some rows nearly full; k large enough that nnz(A) x (B's longest
     * row) stays within sla_spgemm's bound for its one-pass paths on 1 and 2 threads
     * (the two-pass one at 3 threads: all compared bitwise) */
    const sla_int m = 2400, k = 3000, n = 97;
    unsigned long long s = 77;
    sla_int cap = m * 4 + k * 24 + 2, na = 0, nb = 0;
    sla_int *ar = malloc((size_t)cap * sizeof *ar), *ac = malloc((size_t)cap * sizeof *ac);
    sla_int *br = malloc((size_t)cap * sizeof *br), *bc = malloc((size_t)cap * sizeof *bc);
    double *av = malloc((size_t)cap * sizeof *av), *bv = malloc((size_t)cap * sizeof *bv);
    for (sla_int i = 0; i < m; i++) {
        if (i % 11 == 5) continue;                         /* an empty row of A (and C) */
        int cnt = (int)(tu_rand(&s) * 2.5 + 2.5) % 5;      /* 0..4 entries */
        for (int t = 0; t < cnt; t++) {
            ar[na] = i;
            ac[na] = (sla_int)((tu_rand(&s) * 0.5 + 0.5) * (k - 10)) % (k - 10); /* cols >= k-10 empty */
            av[na++] = tu_rand(&s);
        }
        if (i % 7 == 0 && na > 0) { /* a duplicate of the last entry (summed) */
            ar[na] = ar[na - 1];
            ac[na] = ac[na - 1];
            av[na++] = tu_rand(&s);
        }
    }
    for (sla_int j = 0; j < k; j++) {
        int cnt = j % 13 == 0 ? 0 : (int)((tu_rand(&s) * 0.5 + 0.5) * 25.0) % 25; /* 0..24 */
        for (int t = 0; t < cnt; t++) {
            br[nb] = j;
            bc[nb] = 3 + (sla_int)((tu_rand(&s) * 0.5 + 0.5) * (n - 3)) % (n - 3); /* cols 0..2 empty */
            bv[nb++] = tu_rand(&s);
        }
    }
    sla_matrix *A = NULL, *B = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, m, k, na, ar, ac, SLA_F64, 1, av, NULL, &A));
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, k, n, nb, br, bc, SLA_F64, 1, bv, NULL, &B));
    free(ar);
    free(ac);
    free(br);
    free(bc);
    free(av);
    free(bv);
    if (!A || !B) return;
    sla_int wb = 0; /* B's longest row: within the one-pass bound (see above) */
    for (sla_int j = 0; j < k; j++) {
        sla_int d = sla_matrix_rowptr(B)[j + 1] - sla_matrix_rowptr(B)[j];
        wb = d > wb ? d : wb;
    }
    CHECK(sla_matrix_nnz(A) * wb <= 4 * (sla_matrix_nnz(A) + sla_matrix_nnz(B)) + m);
    sla_int lens[4] = {0, 0, 0, 0}; /* rows of 0, 1..16, 17..32, over 32 columns */
    check_products(A, B, lens);
    CHECK(lens[0] > 0 && lens[1] > 0 && lens[2] > 0 && lens[3] > 0);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&B);
}

static void test_fused(void)
{
    test_row_lengths();
    test_fused_split();
    test_mapped_rows();
    check_fused(30, 20, 25, 3, 1, 1, false);
    check_fused(3000, 200, 150, 3, 1, 1, false); /* row chunks */
    check_fused(1500, 300, 400, 12, 1, 1, false); /* rows of over 48 columns */
    check_fused(1200, 100, 90, 4, 2, 1, false);   /* a batch */
    check_fused(1200, 100, 90, 4, 1, 1, true);    /* float32 A */
    check_fused(0, 7, 4, 1, 1, 1, false);
    sla_matrix *A = rand_mat(5, 4, 2, 1, 3), *C = NULL;
    CHECK_ERR(ctx, sla_spgemm(ctx, A, A, &C), SLA_ERR_DIMENSION, "5 x 4");
    CHECK(C == NULL);
    CHECK_ERR(ctx, sla_spgemm(ctx, A, A, NULL), SLA_ERR_ARGUMENT, "NULL");
    sla_matrix_destroy(&A);
}

static void test_errors(void)
{
    sla_matrix *A = rand_mat(5, 4, 2, 2, 3), *B = rand_mat(5, 4, 2, 3, 5), *C = NULL;
    sla_matrix *A1 = rand_mat(5, 4, 2, 1, 7);
    CHECK_ERR(ctx, sla_spgemm_symbolic(ctx, A1, A1, &C), SLA_ERR_DIMENSION, "5 x 4");
    CHECK(C == NULL);
    CHECK_ERR(ctx, sla_spgemm_symbolic(ctx, NULL, A1, &C), SLA_ERR_ARGUMENT, "NULL");
    CHECK_ERR(ctx, sla_spgemm_symbolic(ctx, A1, A1, NULL), SLA_ERR_ARGUMENT, "NULL");
    CHECK_ERR(ctx, sla_spadd_symbolic(ctx, A, B, &C), SLA_ERR_DIMENSION, "batch");
    CHECK_ERR(ctx, sla_spmul_symbolic(ctx, A1, NULL, &C), SLA_ERR_ARGUMENT, "NULL");
    sla_matrix *T = NULL;
    CHECK_OK(ctx, sla_matrix_transpose(ctx, A1, NULL, &T));
    CHECK_ERR(ctx, sla_spadd_symbolic(ctx, A1, T, &C), SLA_ERR_DIMENSION, "4 x 5");
    /* a C whose pattern misses part of the result */
    CHECK_OK(ctx, sla_spmul_symbolic(ctx, A1, B, &C));
    double *cv = malloc(3 * 64 * sizeof *cv);
    if (sla_matrix_nnz(C) < sla_matrix_nnz(A1))
        CHECK_ERR(ctx, sla_spadd_numeric(ctx, 1, A1, 1, B, C, cv), SLA_ERR_INDEX, "misses");
    sla_matrix_destroy(&C);
    CHECK_OK(ctx, sla_spgemm_symbolic(ctx, A1, T, &C));
    CHECK_ERR(ctx, sla_spgemm_numeric(ctx, A1, T, C, NULL), SLA_OK, "");
    sla_matrix *Cb = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 5, 5, (sla_int[]){0, 0, 0, 0, 0, 0}, NULL, SLA_F64, 1,
                                      NULL, SLA_COPY, &Cb));
    CHECK_ERR(ctx, sla_spgemm_numeric(ctx, A1, T, Cb, cv), SLA_ERR_INDEX, "misses");
    CHECK_ERR(ctx, sla_spgemm_vjp(ctx, A1, T, Cb, cv, cv, NULL), SLA_ERR_INDEX, "misses");
    /* writing C's own values needs matching batch */
    CHECK_ERR(ctx, sla_spgemm_numeric(ctx, B, T, C, NULL), SLA_ERR_ARGUMENT, "3 value arrays");
    free(cv);
    sla_matrix_destroy(&Cb);
    sla_matrix_destroy(&C);
    sla_matrix_destroy(&T);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&A1);
    sla_matrix_destroy(&B);
}

static void test_graph(void)
{
    /* three components: {0,2,4} (0-2 one way only, 2-4), {1,3}, {5} with a self loop */
    sla_int r[] = {0, 2, 4, 1, 5, 0};
    sla_int c[] = {2, 4, 2, 3, 5, 0};
    double v[] = {1.5, 2.0, 2.0, 0.5, 9.0, 3.0};
    sla_matrix *A = NULL, *L = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 6, 6, 6, r, c, SLA_F64, 1, v, NULL, &A));
    if (!A) return;
    sla_int labels[6], count = -1;
    CHECK_OK(ctx, sla_graph_components(ctx, A, labels, &count));
    CHECK(count == 3);
    sla_int want[6] = {0, 1, 0, 1, 0, 2};
    for (int i = 0; i < 6; i++) CHECK(labels[i] == want[i]);
    double deg[6];
    CHECK_OK(ctx, sla_graph_degree(ctx, A, 0, true, deg));
    CHECK(deg[0] == 1.5 && deg[2] == 2.0 && deg[4] == 2.0 && deg[5] == 0 && deg[1] == 0.5);
    CHECK_OK(ctx, sla_graph_degree(ctx, A, 0, false, deg));
    CHECK(deg[0] == 1 && deg[5] == 0);
    CHECK_OK(ctx, sla_graph_laplacian(ctx, A, &L));
    if (L) {
        double *d = dense(L, 0), *a = dense(A, 0);
        double err = 0;
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 6; j++) {
                double rs = 0;
                for (int k = 0; k < 6; k++) rs += a[k * 6 + i];
                double ref = (i == j ? rs : 0) - a[j * 6 + i];
                err = fmax(err, fabs(d[j * 6 + i] - ref));
            }
        CHECK(err < 1e-15);
        free(d);
        free(a);
        CHECK(sla_matrix_nnz(L) == 6 + 4); /* the diagonal added where missing */
        /* VJP vs central differences */
        sla_int nl = sla_matrix_nnz(L);
        double gL[16], gA[6], h = 1e-3, fd = 0;
        tu_fill(gL, nl, 3);
        CHECK_OK(ctx, sla_graph_laplacian_vjp(ctx, A, L, gL, gA));
        double vv[6];
        memcpy(vv, sla_matrix_values(A, 0), sizeof vv);
        for (int q = 0; q < 6; q++) {
            double Ls[2];
            for (int s = 0; s < 2; s++) {
                double w[6];
                memcpy(w, vv, sizeof w);
                w[q] += s ? -h : h;
                sla_matrix_set_values(ctx, A, 0, w);
                sla_matrix *L2 = NULL;
                sla_graph_laplacian(ctx, A, &L2);
                Ls[s] = dot(nl, gL, sla_matrix_values(L2, 0));
                sla_matrix_destroy(&L2);
            }
            fd = fmax(fd, fabs((Ls[0] - Ls[1]) / (2 * h) - gA[q]));
        }
        sla_matrix_set_values(ctx, A, 0, vv);
        CHECK(fd < 1e-10);
    }
    sla_matrix_destroy(&L); /* the failing call below sets L to NULL first */
    /* bad input */
    sla_matrix *R = rand_mat(3, 4, 2, 1, 1);
    CHECK_ERR(ctx, sla_graph_components(ctx, R, labels, &count), SLA_ERR_DIMENSION, "square");
    CHECK_ERR(ctx, sla_graph_components(ctx, NULL, labels, &count), SLA_ERR_ARGUMENT, "NULL");
    CHECK_ERR(ctx, sla_graph_laplacian(ctx, R, &L), SLA_ERR_DIMENSION, "square");
    CHECK_ERR(ctx, sla_graph_degree(ctx, A, 1, true, deg), SLA_ERR_INDEX, "range");
    /* a larger one: a 2-D Poisson matrix is connected */
    sla_matrix *P = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 30, &P));
    sla_int *lab = malloc(900 * sizeof *lab);
    CHECK_OK(ctx, sla_graph_components(ctx, P, lab, &count));
    CHECK(count == 1);
    free(lab);
    sla_matrix_destroy(&P);
    sla_matrix_destroy(&R);
    sla_matrix_destroy(&L);
    sla_matrix_destroy(&A);
}

int main(void)
{
    sla_ctx_create(&ctx);
    test_ops();
    test_float32();
    test_fused();
    test_errors();
    test_graph();
    sla_ctx_destroy(&ctx);
    return tu_finish("test_algebra");
}
