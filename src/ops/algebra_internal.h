/* Private helpers of the sparse-sparse algebra (spgemm.c, spgemm_vjp.c,
 * spadd.c): the argument and batch checks every phase starts with, the
 * array a numeric phase writes, the creation of a result pattern and the per-row sort of
 * its column indices. Never installed. */
#ifndef SLA_ALGEBRA_INTERNAL_H
#define SLA_ALGEBRA_INTERNAL_H

#include "../core/internal.h"

#include <stdlib.h>

/* A and B not NULL and real, batch counts equal or one of them 1: *nbC = the larger. */
static inline sla_status sla__alg_operands(sla_ctx *ctx, const char *who, const sla_matrix *A,
                                           const sla_matrix *B, sla_int *nbC)
{
    if (!A || !B) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: matrix is NULL", who);
    if (sla__require_real(ctx, A, who) || sla__require_real(ctx, B, who)) return SLA_ERR_UNSUPPORTED;
    if (A->nbatch != B->nbatch && A->nbatch != 1 && B->nbatch != 1)
        return sla__error(ctx, SLA_ERR_DIMENSION,
                          "%s: batch counts %lld and %lld differ (equal, or one of them 1)", who,
                          (long long)A->nbatch, (long long)B->nbatch);
    *nbC = A->nbatch > B->nbatch ? A->nbatch : B->nbatch;
    return SLA_OK;
}

/* The operands of a product A B (sla__alg_operands) with A's columns as
 * many as B's rows. */
static inline sla_status sla__alg_product_shapes(sla_ctx *ctx, const char *who,
                                                 const sla_matrix *A, const sla_matrix *B,
                                                 sla_int *nbC)
{
    sla_status st = sla__alg_operands(ctx, who, A, B, nbC);
    if (st) return st;
    if (A->ncols != B->nrows)
        return sla__error(ctx, SLA_ERR_DIMENSION, "%s: A is %lld x %lld but B is %lld x %lld", who,
                          (long long)A->nrows, (long long)A->ncols, (long long)B->nrows,
                          (long long)B->ncols);
    return SLA_OK;
}

/* C (not NULL) m x n with nbC value arrays or 1; *out = cvals, or C's own
 * float64 values when cvals is NULL. */
static inline sla_status sla__alg_result(sla_ctx *ctx, const char *who, const sla_matrix *C,
                                         sla_int m, sla_int n, sla_int nbC, double *cvals,
                                         double **out)
{
    if (!C) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: result C is NULL", who);
    if (C->nrows != m || C->ncols != n)
        return sla__error(ctx, SLA_ERR_DIMENSION, "%s: C is %lld x %lld, the result %lld x %lld",
                          who, (long long)C->nrows, (long long)C->ncols, (long long)m,
                          (long long)n);
    if (sla__check_extent(ctx, nbC, C->nnz, "batch x nnz of C")) return SLA_ERR_TOO_LARGE;
    if (cvals) {
        *out = cvals;
        return SLA_OK;
    }
    if (C->dtype != SLA_F64 || C->nbatch != nbC)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "%s: writing C's own values needs a float64 C with %lld value arrays",
                          who, (long long)nbC);
    *out = (double *)C->values;
    return SLA_OK;
}

/* A new m x n matrix owning rowptr and colind, nbC float64 value arrays:
 * zero, or (zero false) not initialized, for a caller that writes every
 * value itself (in parallel, so that the pages are first touched by the
 * threads that use them). On failure frees rowptr and colind. */
static inline sla_status sla__alg_wrap_as(sla_ctx *ctx, sla_int m, sla_int n, sla_int nbC,
                                          sla_int *rowptr, int32_t *colind, bool zero,
                                          sla_matrix **C)
{
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_int nnz = rowptr[m];
    double *v = NULL;
    sla_matrix *M = NULL;
    if (!sla__check_extent(ctx, nbC, nnz, "batch x nnz of the result")) {
        v = zero ? sla__calloc(&a, (size_t)(nbC * nnz), sizeof *v)
                 : sla__malloc(&a, (size_t)(nbC * nnz), sizeof *v);
        if (v) M = sla__matrix_wrap(&a, m, n, nnz, nbC, SLA_F64, rowptr, colind, v);
    }
    if (!M) {
        bool big = nnz > 0 && nbC > INT64_MAX / 8 / nnz;
        sla__free(&a, v);
        sla__free(&a, rowptr);
        sla__free(&a, colind);
        return big ? SLA_ERR_TOO_LARGE
                   : sla__error(ctx, SLA_ERR_NOMEM, "out of memory for a result with %lld entries",
                                (long long)nnz);
    }
    *C = M;
    return sla__ok(ctx, SLA_OK);
}

/* sla__alg_wrap_as with zero value arrays. */
static inline sla_status sla__alg_wrap(sla_ctx *ctx, sla_int m, sla_int n, sla_int nbC,
                                       sla_int *rowptr, int32_t *colind, sla_matrix **C)
{
    return sla__alg_wrap_as(ctx, m, n, nbC, rowptr, colind, true, C);
}

static int sla__alg_cmp32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* Sort n column indices ascending. */
static inline void sla__alg_sort(int32_t *c, sla_int n)
{
    if (n > 32) {
        qsort(c, (size_t)n, sizeof *c, sla__alg_cmp32);
        return;
    }
    for (sla_int i = 1; i < n; i++) {
        int32_t v = c[i];
        sla_int j = i;
        for (; j > 0 && c[j - 1] > v; j--) c[j] = c[j - 1];
        c[j] = v;
    }
}

/* Thread number inside a parallel region (0 without OpenMP). */
static inline int sla__alg_tid(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

#endif
