/* Private helpers shared by the operations in src/ops/ (eigsh, lobpcg,
 * slq, logdet, svds): the checks and the one-array view every entry point
 * on a single value array of a symmetric matrix starts with, the message
 * of a failed value array in a batch loop, and the projected MINRES solve
 * the eigenvector and singular-vector VJPs share. Never installed. */
#ifndef SLA_OPS_INTERNAL_H
#define SLA_OPS_INTERNAL_H

#include "../core/internal.h"

#include <stdio.h>

/* Value array ib of A as a one-array matrix sharing A's arrays. */
static inline void sla__single_view(const sla_matrix *A, sla_int ib, sla_matrix *view)
{
    *view = *A;
    view->nbatch = 1;
    view->values = (char *)A->values + (size_t)ib * (size_t)A->nnz * sla__dtype_size(A->dtype);
    view->own_rowptr = false;
    view->own_values = false;
}

/* A (not NULL) square and ib one of its value arrays; `who` names the
 * caller in the message. */
static inline sla_status sla__check_square_index(sla_ctx *ctx, const char *who, const sla_matrix *A,
                                                 sla_int ib)
{
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "%s: matrix is %lld x %lld, not square", who,
                          (long long)A->nrows, (long long)A->ncols);
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "value array %lld out of range [0, %lld)", (long long)ib,
                          (long long)A->nbatch);
    return SLA_OK;
}

/* *V = value array ib of A (checked by sla__check_square_index) as a view;
 * its values finite and the matrix symmetric to 1e-12 relative. */
static inline sla_status sla__symmetric_view(sla_ctx *ctx, const char *who, const sla_matrix *A,
                                             sla_int ib, sla_matrix *V)
{
    sla__single_view(A, ib, V);
    sla_status st = sla_matrix_check_values(ctx, V, 0);
    if (st) return st;
    sla_matrix_props pr;
    if ((st = sla_matrix_properties(ctx, V, 0, 1e-12, &pr))) return st;
    if (!pr.symmetric)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "%s: the matrix is not symmetric (max |a_ij - a_ji| / max |a| = %.3g)", who,
                          pr.symmetry_error);
    return SLA_OK;
}

/* Status st (< 0) of value array b in a batch loop: the message becomes
 * "value array B: " + the one the failed call left in ctx. Returns st. */
static inline sla_status sla__batch_error(sla_ctx *ctx, sla_status st, sla_int b)
{
    char msg[400];
    snprintf(msg, sizeof msg, "%s", sla_ctx_message(ctx));
    return sla__error(ctx, st, "value array %lld: %s", (long long)b, msg);
}

struct sla__op;

/* The tally of a VJP's projected solves: the most iterations, the largest
 * relative residual, and whether every solve met its tolerance. */
typedef struct sla__vjp_solves {
    sla_int iterations;
    double worst;
    bool converged;
} sla__vjp_solves;

/* w = MINRES's solution of op w = b (rtol; maxiter 0: max(10 n, 1000)),
 * tallied in *T; an unconverged solve is not an error. Returns SLA_OK or
 * an error (< 0). Defined in eigsh_vjp.c. */
sla_status sla__vjp_minres(sla_ctx *ctx, const struct sla__op *op, const double *b, double *w, double rtol,
                           sla_int maxiter, sla__vjp_solves *T);

#endif
