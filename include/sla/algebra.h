/* sla/algebra.h — sparse-sparse algebra: products, sums and elementwise
 * products of sparse matrices, with their VJPs.
 *
 * Each operation has a symbolic phase, which builds the pattern of the
 * result C as a new matrix (float64, max(nbatch of the operands) value
 * arrays, all zero), and a numeric phase, which fills C's values from the
 * operands' current values. The pattern is computed once and reused for
 * any number of value changes (a training loop, a batch).
 *
 * Batches: A and B each carry nbatch value arrays; the counts must be
 * equal, or one of them 1 (that operand is shared by, "broadcast" to,
 * every value array of the other). C has nbC = max(nbA, nbB) arrays.
 *
 * Numeric phase: cvals [nbC][nnz(C)] receives the values; cvals == NULL
 * writes C's own value arrays (then C must be float64 with nbC arrays and
 * own or borrow writable values). C may be any matrix whose pattern
 * contains the structural result (the symbolic C always does).
 *
 * VJPs: gC [nbC][nnz(C)] is the gradient with respect to C's values; gA
 * [nbA][nnz(A)] and gB [nbB][nnz(B)] (either may be NULL) are overwritten
 * with the gradients with respect to A's and B's values, restricted to
 * their own patterns. A broadcast operand's gradient is summed over the
 * batch. Everything is computed on the patterns, never densely.
 *
 * Kernels are OpenMP-threaded over rows with the context's thread count.
 * Errors: SLA_ERR_ARGUMENT (NULL), SLA_ERR_DIMENSION (shapes or batch
 * counts that do not match), SLA_ERR_INDEX (a C whose pattern misses part
 * of the result), SLA_ERR_TOO_LARGE, SLA_ERR_NOMEM.
 */
#ifndef SLA_ALGEBRA_H
#define SLA_ALGEBRA_H

#include "matrix.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- C = A B (SpGEMM) ------------------------------------------------ */

/* Pattern of A B (A: m x k, B: k x n): c_ij is stored when some a_il and
 * b_lj are both stored (structural; values that cancel to 0 stay). */
SLA_API sla_status sla_spgemm_symbolic(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                                       sla_matrix **C);

/* Symbolic and numeric phase in one call: C = A B as a new matrix holding
 * its pattern and values (float64, nbC value arrays). One pass over the
 * products both finds and sums each row's entries: the fastest way to a
 * product needed once (later value changes: sla_spgemm_numeric on C). */
SLA_API sla_status sla_spgemm(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                              sla_matrix **C);

/* C_b = A_b B_b (b over the batch, broadcasting a single array). */
SLA_API sla_status sla_spgemm_numeric(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                                      sla_matrix *C, double *cvals);

/* gA = (gC B^T) on A's pattern, gB = (A^T gC) on B's pattern. */
SLA_API sla_status sla_spgemm_vjp(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                                  const sla_matrix *C, const double *gC, double *gA,
                                  double *gB);

/* ---- C = alpha A + beta B on the union of the patterns ---------------- */

SLA_API sla_status sla_spadd_symbolic(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                                      sla_matrix **C);
SLA_API sla_status sla_spadd_numeric(sla_ctx *ctx, double alpha, const sla_matrix *A,
                                     double beta, const sla_matrix *B, sla_matrix *C,
                                     double *cvals);
/* gA = alpha gC on A's pattern, gB = beta gC on B's pattern. */
SLA_API sla_status sla_spadd_vjp(sla_ctx *ctx, double alpha, const sla_matrix *A, double beta,
                                 const sla_matrix *B, const sla_matrix *C, const double *gC,
                                 double *gA, double *gB);

/* ---- C = A .* B (elementwise) on the intersection of the patterns ----- */

SLA_API sla_status sla_spmul_symbolic(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                                      sla_matrix **C);
SLA_API sla_status sla_spmul_numeric(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                                     sla_matrix *C, double *cvals);
/* gA = gC .* B, gB = gC .* A on the intersection, 0 on the rest of each
 * operand's pattern. */
SLA_API sla_status sla_spmul_vjp(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                                 const sla_matrix *C, const double *gC, double *gA, double *gB);

#ifdef __cplusplus
}
#endif
#endif
