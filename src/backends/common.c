/* Helpers shared by the direct backends (klu.c, umfpack.c, superlu.c,
 * cholmod.c): structural singularity, permutation parity, the rounding-noise
 * pivot test of the LU backends, the argument and value checks of factor and
 * solve, and value arrays as doubles. They work on
 * sla's own CSR arrays and need no backend library, so this file is always
 * compiled. */
#include "../solvers/direct.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* A maximum matching of rows to columns of A's pattern by depth-first
 * augmenting paths, each row first trying a cheap assignment to a still
 * unmatched column (Duff's MC21, in the order btf_maxtrans uses: rows of A
 * are the columns of M = A^T, so the matching, and the first unmatched
 * column, are those btf_l_maxtrans finds for M). Iterative, O(n) work
 * space. Empty rows and columns are named first; the structural rank is
 * always given. */
sla_status sla__structural_check(sla_ctx *ctx, const char *who, const sla_matrix *A)
{
    const sla_int n = A->nrows;
    const sla_int *rowptr = A->rowptr;
    const int32_t *colind = A->colind;
    if (n <= 0) return SLA_OK;

    char what[64];
    snprintf(what, sizeof what, "%s structural check", who);
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_int *pw = sla__ctx_malloc(ctx, 2 * (size_t)n, sizeof *pw, what);
    int32_t *iw = pw ? sla__ctx_malloc(ctx, 4 * (size_t)n, sizeof *iw, what) : NULL;
    if (!iw) {
        sla__free(&a, pw);
        return SLA_ERR_NOMEM;
    }
    sla_int *cheap = pw;          /* next entry of each row to try as a cheap match */
    sla_int *pos_stk = pw + n;    /* where the row's neighbour scan resumes */
    int32_t *match_col = iw;      /* column -> matched row, -1 */
    int32_t *mark = iw + n;       /* row -> augmenting search that visited it */
    int32_t *row_stk = iw + 2 * n;
    int32_t *col_stk = iw + 3 * n; /* column the row on the stack will take */

    sla_int empty_row = -1, empty_col = -1;
    for (sla_int i = 0; i < n && empty_row < 0; i++)
        if (rowptr[i] == rowptr[i + 1]) empty_row = i;
    memset(mark, 0, (size_t)n * sizeof *mark); /* column has an entry */
    for (sla_int k = 0; k < rowptr[n]; k++) mark[colind[k]] = 1;
    for (sla_int j = 0; j < n && empty_col < 0; j++)
        if (!mark[j]) empty_col = j;

    for (sla_int i = 0; i < n; i++) {
        match_col[i] = -1;
        cheap[i] = rowptr[i];
        mark[i] = -1;
    }
    sla_int rank = 0;
    for (int32_t start = 0; start < n; start++) {
        sla_int head = 0;
        bool found = false;
        row_stk[0] = start;
        while (head >= 0) {
            int32_t r = row_stk[head];
            sla_int end = rowptr[r + 1];
            if (mark[r] != start) { /* first visit in this search */
                mark[r] = start;
                sla_int k = cheap[r];
                while (k < end && match_col[colind[k]] != -1) k++;
                cheap[r] = k < end ? k + 1 : k;
                if (k < end) {
                    col_stk[head] = colind[k];
                    found = true;
                    break;
                }
                pos_stk[head] = rowptr[r];
            }
            /* every column of r is matched: continue the search through the
             * rows those columns are matched to */
            sla_int k = pos_stk[head];
            for (; k < end; k++) {
                int32_t r2 = match_col[colind[k]];
                if (r2 >= 0 && mark[r2] != start) break;
            }
            if (k < end) {
                pos_stk[head] = k + 1;
                col_stk[head] = colind[k];
                row_stk[++head] = match_col[colind[k]];
            } else {
                head--;
            }
        }
        if (found) {
            for (sla_int h = head; h >= 0; h--) match_col[col_stk[h]] = row_stk[h];
            rank++;
        }
    }
    sla_int unmatched = 0;
    while (unmatched < n && match_col[unmatched] >= 0) unmatched++;
    sla__free(&a, pw);
    sla__free(&a, iw);

    if (rank == n) return SLA_OK;
    if (empty_row >= 0)
        return sla__error(ctx, SLA_ERR_SINGULAR,
                          "%s: matrix is structurally singular: row %lld is empty (structural "
                          "rank %lld < n = %lld)",
                          who, (long long)empty_row, (long long)rank, (long long)n);
    if (empty_col >= 0)
        return sla__error(ctx, SLA_ERR_SINGULAR,
                          "%s: matrix is structurally singular: column %lld is empty (structural "
                          "rank %lld < n = %lld)",
                          who, (long long)empty_col, (long long)rank, (long long)n);
    return sla__error(ctx, SLA_ERR_SINGULAR,
                      "%s: matrix is structurally singular: structural rank %lld < n = %lld (no "
                      "permutation gives a zero-free diagonal; column %lld is unmatched)",
                      who, (long long)rank, (long long)n, (long long)(unmatched < n ? unmatched : 0));
}

double sla__perm_sign(sla_int n, const sla_int *p, const int32_t *p32, unsigned char *mark)
{
    memset(mark, 0, (size_t)n);
    sla_int cycles = 0;
    for (sla_int i = 0; i < n; i++) {
        if (mark[i]) continue;
        cycles++;
        for (sla_int j = i; !mark[j]; j = p ? p[j] : p32[j]) mark[j] = 1;
    }
    return ((n - cycles) % 2) ? -1.0 : 1.0;
}

/* A pivot below n * eps times the largest entry of its column (of the
 * row-scaled M: invariant under row and column scaling of A) is rounding
 * noise: exactly singular matrices (equal rows, a pure Neumann Laplacian)
 * leave pivots of about sqrt(n) eps to n eps / 10 instead of zeros, while
 * the pivots of nonsingular matrices, even with cond 1e11, stay far above
 * (partial pivoting keeps them near the column scale). A flagged matrix is
 * within a relative change of about n eps / (pivot tolerance) in one row
 * of an exactly singular one. */
double sla__pivot_tolerance(sla_int n) { return fmax((double)n, 8.0) * DBL_EPSILON; }

sla_status sla__pivot_check(sla_ctx *ctx, const char *who, const sla_matrix *A, const double *ax,
                            const double *rs, bool rs_recip, const double *udiag,
                            const sla_int *q)
{
    const sla_int n = A->nrows;
    char what[64];
    snprintf(what, sizeof what, "%s pivot check", who);
    double *cmax = sla__ctx_calloc(ctx, (size_t)n, sizeof *cmax, what);
    if (!cmax) return SLA_ERR_NOMEM;
    /* largest entry of each row of A = column of M, M's rows scaled by rs */
    for (sla_int j = 0; j < n; j++)
        for (sla_int k = A->rowptr[j]; k < A->rowptr[j + 1]; k++) {
            int32_t i = A->colind[k];
            double v = !rs ? fabs(ax[k]) : rs_recip ? fabs(ax[k]) * rs[i] : fabs(ax[k]) / rs[i];
            if (v > cmax[j]) cmax[j] = v;
        }
    double rmin = INFINITY;
    sla_int kmin = 0;
    for (sla_int k = 0; k < n; k++) {
        double r = cmax[q[k]] > 0.0 ? fabs(udiag[k]) / cmax[q[k]] : 0.0;
        if (r < rmin) {
            rmin = r;
            kmin = q[k];
        }
    }
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__free(&a, cmax);
    if (rmin <= sla__pivot_tolerance(n))
        return sla__error(ctx, SLA_ERR_SINGULAR,
                          "%s: matrix is singular to working precision: the pivot of row %lld is "
                          "%.2g times the largest entry of that row (columns scaled), below n*eps "
                          "= %.2g",
                          who, (long long)kmin, rmin, sla__pivot_tolerance(n));
    return SLA_OK;
}

sla_status sla__check_factor_args(sla_ctx *ctx, const char *who, const sla_matrix *A, sla_int ib,
                                  sla_int n, sla_int nnz, const sla_int *rowptr,
                                  const sla_int *colind)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s factor: matrix is NULL", who);
    if (A->nrows != n || A->ncols != n || A->nnz != nnz)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "%s factor: matrix (%lld x %lld, %lld entries) does not match the "
                          "analysis (%lld x %lld, %lld entries)",
                          who, (long long)A->nrows, (long long)A->ncols, (long long)A->nnz,
                          (long long)n, (long long)n, (long long)nnz);
    if (rowptr)
        for (sla_int i = 0; i < n; i++)
            if (A->rowptr[i + 1] != rowptr[i + 1])
                return sla__error(ctx, SLA_ERR_ARGUMENT,
                                  "%s factor: the pattern of row %lld does not match the analysis",
                                  who, (long long)i);
    if (colind)
        for (sla_int k = 0; k < nnz; k++)
            if ((sla_int)A->colind[k] != colind[k])
                return sla__error(ctx, SLA_ERR_ARGUMENT,
                                  "%s factor: entry %lld's column does not match the analysis",
                                  who, (long long)k);
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s factor: value array %lld out of range [0, %lld)",
                          who, (long long)ib, (long long)A->nbatch);
    return SLA_OK;
}

sla_status sla__check_solve_args(sla_ctx *ctx, const char *who, sla_int n, sla_int nrhs,
                                 const double *b, sla_int ldb, const double *x, sla_int ldx)
{
    if (nrhs < 0 || ldb < n || ldx < n)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "%s solve: bad sizes (n %lld, nrhs %lld, ldb %lld, ldx %lld)", who,
                          (long long)n, (long long)nrhs, (long long)ldb, (long long)ldx);
    if (n > 0 && nrhs > 0 && (!b || !x))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s solve: b or x is NULL", who);
    return SLA_OK;
}

sla_status sla__check_finite_values(sla_ctx *ctx, const char *who, sla_int nnz, const double *ax,
                                    sla_int ib)
{
    for (sla_int k = 0; k < nnz; k++)
        if (!isfinite(ax[k]))
            return sla__error(ctx, SLA_ERR_VALUE, "%s: value %lld of array %lld is %g", who,
                              (long long)k, (long long)ib, ax[k]);
    return SLA_OK;
}

double *sla__values_f64(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const char *what)
{
    double *x = sla__ctx_malloc(ctx, (size_t)A->nnz, sizeof *x, what);
    if (!x) return NULL;
    if (A->dtype == SLA_F64)
        memcpy(x, (const double *)A->values + ib * A->nnz, (size_t)A->nnz * sizeof *x);
    else
        for (sla_int k = 0; k < A->nnz; k++) x[k] = sla__val(A, ib, k);
    return x;
}

double *sla__values_f64_view(sla_ctx *ctx, const sla_matrix *A, sla_int ib, double **copy,
                             const char *what)
{
    *copy = NULL;
    if (A->dtype == SLA_F64) return (double *)A->values + ib * A->nnz;
    *copy = sla__values_f64(ctx, A, ib, what);
    return *copy;
}
