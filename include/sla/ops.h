/* sla/ops.h — sparse matrix-vector products and their VJPs.
 *
 * Dense blocks of vectors are column-major with a leading dimension.
 * Kernels are OpenMP-threaded with the context's thread count.
 */
#ifndef SLA_OPS_H
#define SLA_OPS_H

#include "matrix.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Y = A_ib X for nrhs columns (X: ncols x nrhs, Y: nrows x nrhs). */
SLA_API sla_status sla_matvec(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                      sla_int nrhs, const double *x, sla_int ldx, double *y,
                      sla_int ldy);

/* Y = A_ib^T X (X: nrows x nrhs, Y: ncols x nrhs). */
SLA_API sla_status sla_matvec_transpose(sla_ctx *ctx, const sla_matrix *A,
                                sla_int ib, sla_int nrhs, const double *x,
                                sla_int ldx, double *y, sla_int ldy);

/* VJP of Y = A_ib X: gx = A^T gy (may be NULL; ncols x nrhs) and
 * gA[k] = sum_r gy[row_k, r] X[col_k, r] (may be NULL; nnz, overwritten). */
SLA_API sla_status sla_matvec_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                          sla_int nrhs, const double *x, sla_int ldx,
                          const double *gy, sla_int ldgy, double *gx,
                          sla_int ldgx, double *gA);

/* Batched: x [nbatch][ncols], y [nbatch][nrows], one column per value
 * array; the VJP writes gx [nbatch][ncols] and gA [nbatch][nnz]. */
SLA_API sla_status sla_matvec_batch(sla_ctx *ctx, const sla_matrix *A,
                            const double *x, double *y);
SLA_API sla_status sla_matvec_batch_vjp(sla_ctx *ctx, const sla_matrix *A,
                                const double *x, const double *gy,
                                double *gx, double *gA);

#ifdef __cplusplus
}
#endif
#endif
