/* Private: helpers shared by the complex direct backends (umfpack_z.c,
 * klu_z.c, cholmod_z.c, superlu_z.c), defined in zcommon.c. Never
 * installed. */
#ifndef SLA_ZBACKEND_H
#define SLA_ZBACKEND_H

#include "../solvers/zsolver.h"

/* Value array ib of A (any dtype) as a new complex128 array, conjugated
 * when conjugate; NULL (SLA_ERR_NOMEM recorded naming what) when out of memory. */
sla__z *sla__zvalues(sla_ctx *ctx, const sla_matrix *A, sla_int ib, bool conjugate, const char *what);

/* SLA_ERR_VALUE when a real or imaginary part of one of the nnz values ax
 * is NaN or Inf, naming the first ("who: value k of array ib has a nan
 * imaginary part"). */
sla_status sla__zcheck_finite_values(sla_ctx *ctx, const char *who, sla_int nnz, const sla__z *ax,
                                     sla_int ib);

/* sla__pivot_check (direct.h) on complex values: the magnitudes of ax
 * (A's values in CSR order) and of U's diagonal udiag, the same test and
 * message. SLA_ERR_NOMEM. */
sla_status sla__zpivot_check(sla_ctx *ctx, const char *who, const sla_matrix *A, const sla__z *ax,
                             const double *rs, bool rs_recip, const sla__z *udiag,
                             const sla_int *q);

/* The argument checks of a complex backend's solve: those of
 * sla__check_solve_args and op in {0, 1, 2}. */
sla_status sla__zcheck_solve_args(sla_ctx *ctx, const char *who, int op, sla_int n, sla_int nrhs,
                                  const sla__z *b, sla_int ldb, const sla__z *x, sla_int ldx);

/* After x = op(A)^-1 b for nrhs columns: SLA_ERR_VALUE when a column of x
 * is not finite because its b is not, SLA_ERR_SINGULAR when b is finite
 * ("who: solution j is not finite (matrix numerically singular)"). */
sla_status sla__zcheck_solution(sla_ctx *ctx, const char *who, sla_int n, sla_int nrhs,
                                const sla__z *b, sla_int ldb, const sla__z *x, sla_int ldx);

/* x[i] = conj(x[i]) for n entries. */
void sla__zconj(sla_int n, sla__z *x);

/* Running product of pivots u for a log-determinant: *phase *= u / |u|,
 * *logabs += log |u|; a zero u makes phase 0 and logabs -inf (and stays). */
void sla__zlogdet_acc(sla__z u, sla__z *phase, double *logabs);

/* UMFPACK's complex selected inversion (umfpack_z.c): z[k] =
 * (A^-1)[col_k, row_k] from the factor (sym, num) of the complex A, with
 * sla__lu_factors.mode `mode` (0 auto; 1 per pivot, 2 dense blocks, 3
 * supernodes without BLAS: to test each path). */
sla_status sla__zumfpack_selinv(sla_ctx *ctx, void *sym, void *num, const sla_matrix *A, sla__z *z, int mode);

/* The backends' tables, each compiled only with its library (zdirect.c
 * maps methods to them). */
extern const sla__zdirect_ops sla__zbackend_umfpack; /* umfpack_z.c */
extern const sla__zdirect_ops sla__zbackend_klu;     /* klu_z.c */
extern const sla__zdirect_ops sla__zbackend_cholmod; /* cholmod_z.c */
extern const sla__zdirect_ops sla__zbackend_superlu; /* superlu_z.c */
extern const sla__zdirect_ops sla__zbackend_mumps;   /* mumps_z.c */

#endif
