/* Private to the least-squares files (lsq.c, lsq_vjp.c): the damped
 * operator Abar = [A; damp I] that both Golub-Kahan iterations and the
 * adjoint solves apply, and the iteration itself on a one-array view.
 * Never installed. */
#ifndef SLA_LSQ_INTERNAL_H
#define SLA_LSQ_INTERNAL_H

#include "ops_internal.h"
#include "sla/lsq.h"

/* Abar = [A; damp I] (m + n rows when damp > 0, else m). */
typedef struct sla__lsq_op {
    const sla_matrix *A; /* a one-array view */
    double damp;
    sla_int m, n, mm;    /* mm: rows of Abar */
    int nt;
    double *work;        /* nt * n doubles for the threaded A^T product, or NULL */
    sla__csrt T;         /* the explicit A^T (T.rowptr NULL: scatter instead) */
} sla__lsq_op;

/* Set up op for the view A: the explicit transpose when mode asks for it
 * (auto scatters: src/core/transpose.c), else op->work for the threaded scatter (both
 * through ctx). */
sla_status sla__lsq_op_init(sla_ctx *ctx, sla__lsq_op *op, const sla_matrix *A, double damp,
                            sla_transpose_mode mode);
void sla__lsq_op_free(sla_ctx *ctx, sla__lsq_op *op);
/* y (mm) = Abar v (n) */
void sla__lsq_mv(const sla__lsq_op *op, const double *v, double *y);
/* y (n) = Abar^T u (mm) */
void sla__lsq_rmv(const sla__lsq_op *op, const double *u, double *y);
/* y (n) = A^T u (m), by the explicit transpose when op has one */
void sla__lsq_at(const sla__lsq_op *op, const double *u, double *y);

/* The LSQR or LSMR iteration (o->method) on op from o->x0 (may be NULL):
 * x (n), and the forward fields of info (not NULL; true_* included).
 * Returns SLA_OK, SLA_NOT_CONVERGED or SLA_ERR_NOMEM. */
sla_status sla__lsq_run(sla_ctx *ctx, const sla__lsq_op *op, const sla_lsq_options *o, const double *b,
                        double *x, sla_lsq_info *info);

/* x = argmin ||A x - b||^2 + damp^2 ||x||^2 by SuiteSparseQR for the
 * one-array view A (src/backends/spqr.c); *rank: SPQR's rank estimate.
 * SLA_ERR_SINGULAR when A is rank deficient and damp = 0 (the caller falls
 * back), SLA_ERR_UNAVAILABLE without SuiteSparse, SLA_ERR_NOMEM. */
sla_status sla__spqr_lsq(sla_ctx *ctx, const sla_matrix *A, double damp, const double *b, double *x,
                         sla_int *rank);

/* The argument checks of sla_lsq and sla_lsq_vjp: A, ib, vectors; *V = the
 * one-array view, values finite. */
sla_status sla__lsq_check(sla_ctx *ctx, const char *who, const sla_matrix *A, sla_int ib,
                          const sla_lsq_options *o, const double *b, const double *x, sla_matrix *V);

#endif
