/* sla/eig.h — log-determinants and symmetric eigenpairs, with gradients
 * with respect to the stored values.
 *
 * Gradients with respect to a matrix are, as everywhere in sla, arrays of
 * nnz values in the matrix's CSR order: entry k is the derivative with
 * respect to stored value k, every stored value being an independent
 * variable (for a symmetric matrix whose two triangles are tied, the
 * derivative along a symmetric change of a_ij = a_ji is g[k_ij] + g[k_ji]).
 */
#ifndef SLA_EIG_H
#define SLA_EIG_H

#include "solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- determinants ------------------------------------------------------ */

typedef enum sla_logdet_method {
    SLA_LOGDET_AUTO = 0, /* symmetric: Cholesky, then LDL^T if not positive definite,
                            then LU if LDL^T meets a zero pivot; otherwise LU */
    SLA_LOGDET_CHOLESKY, /* CHOLMOD LL^T (SPD) */
    SLA_LOGDET_LDLT,     /* CHOLMOD LDL^T without pivoting (symmetric) */
    SLA_LOGDET_LU        /* UMFPACK LU (any square matrix) */
} sla_logdet_method;

const char *sla_logdet_method_name(sla_logdet_method m);

typedef struct sla_logdet_info {
    char method[16];        /* the factorization used: "cholesky", "ldlt", "lu" */
    char grad_method[16];   /* "selinv" (Takahashi recurrences on the factor's pattern),
                               "solves" (one solve per column, the slow path of LU
                               factors), "" when no gradient was asked for */
    double factor_seconds;  /* analysis + numeric factorization */
    double grad_seconds;    /* the gradient alone */
    double factor_nnz;      /* entries in the factors predicted by the analysis */
    char note[192];         /* dispatch decisions and fallbacks, "" if none */
} sla_logdet_info;

/* sign (+1 or -1) and log|det A_ib| from a sparse factorization, never
 * forming det itself (no overflow). grad, if not NULL, receives
 * d log|det A| / dA_k = (A^-1)[col_k, row_k] for every stored entry k (nnz
 * values): by selected inversion (Takahashi recurrences on the Cholesky or
 * LDL^T factor's pattern, about the cost of the factorization) for the
 * CHOLMOD methods, by one solve per column (blocked) for LU. The
 * derivative of sign * exp(logabsdet) is det * grad.
 * Cholesky and LDL^T need an exactly symmetric A (SLA_ERR_ARGUMENT
 * otherwise). info may be NULL.
 * A singular matrix: sign = 0, logabsdet = -inf, and SLA_ERR_SINGULAR with
 * the failing pivot in the message (its gradient does not exist).
 * Errors: SLA_ERR_ARGUMENT, SLA_ERR_DIMENSION (not square), SLA_ERR_INDEX
 * (ib), SLA_ERR_VALUE (NaN/Inf), SLA_ERR_NOT_SPD (method cholesky),
 * SLA_ERR_SINGULAR, SLA_ERR_UNAVAILABLE (no SuiteSparse), SLA_ERR_NOMEM. */
sla_status sla_logdet(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                      sla_logdet_method method, double *sign,
                      double *logabsdet, double *grad,
                      sla_logdet_info *info);

/* Every value array of A: sign, logabsdet [nbatch], grad [nbatch][nnz]
 * (may be NULL), info [nbatch] (may be NULL). One analysis of the pattern
 * is not shared here (each array is factored on its own, so a singular
 * array does not stop the others: its sign is 0 and the first error, by
 * index, is returned after all arrays are done). */
sla_status sla_logdet_batch(sla_ctx *ctx, const sla_matrix *A,
                            sla_logdet_method method, double *sign,
                            double *logabsdet, double *grad,
                            sla_logdet_info *info);

/* The gradient of log|det A_ib| with the factorization a direct solver
 * already holds (create it with method cholesky, ldlt, lu, or auto when it
 * chose a direct method): grad[k] = (A^-1)[col_k, row_k]. sign and
 * logabsdet may be NULL. Krylov solvers: SLA_ERR_UNSUPPORTED. */
sla_status sla_solver_logdet_grad(sla_ctx *ctx, sla_solver *S, sla_int ib,
                                  double *sign, double *logabsdet,
                                  double *grad, sla_logdet_info *info);

/* det A_ib = sign * exp(log|det|) on request. When it does not fit a
 * double, *det is +-inf (overflow) or +-0 (underflow) and the call returns
 * SLA_ERR_TOO_LARGE with log|det| in the message: use sla_logdet. A
 * singular matrix gives *det = 0 and SLA_ERR_SINGULAR. */
sla_status sla_det(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                   sla_logdet_method method, double *det);

#ifdef __cplusplus
}
#endif
#endif
