/* The numeric half of the LU selected inversion, compiled for real and for
 * complex factors. lu_selinv_num.h, written once over its scalar type, is
 * included here for double (sla__selinv_num_d) and complex double
 * (sla__selinv_num_z). The two instances differ only in the arithmetic
 * and in the BLAS routines (dgemm/dtrsm, zgemm/ztrsm); see lu_selinv.c for
 * the algebra and lu_selinv.h for the pattern they run on.
 */
#include "lu_selinv.h"

#include <math.h>
#include <string.h>

#ifdef SLA_HAVE_LAPACK
/* BLAS (Fortran interface, 32-bit integers, hidden string lengths last). */
void dtrsm_(const char *side, const char *uplo, const char *ta, const char *diag, const int *m, const int *n,
            const double *alpha, const double *a, const int *lda, double *b, const int *ldb, size_t, size_t,
            size_t, size_t);
void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k, const double *alpha,
            const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c,
            const int *ldc, size_t, size_t);
void ztrsm_(const char *side, const char *uplo, const char *ta, const char *diag, const int *m, const int *n,
            const sla__z *alpha, const sla__z *a, const int *lda, sla__z *b, const int *ldb, size_t, size_t,
            size_t, size_t);
void zgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k, const sla__z *alpha,
            const sla__z *a, const int *lda, const sla__z *b, const int *ldb, const sla__z *beta, sla__z *c,
            const int *ldc, size_t, size_t);
#endif

/* ---- double ---------------------------------------------------------------- */
#define SEL_T double
#define SEL_FN(x) x##_d
#define SEL_GEMM dgemm_
#define SEL_TRSM dtrsm_
#define SEL_ABS(x) fabs(x)
#define SEL_FINITE(x) isfinite(x)
#define SEL_LX(f) ((f)->Lx)
#define SEL_UX(f) ((f)->Ux)
#define SEL_DX(f) ((f)->Dx)
#include "lu_selinv_num.h"
#undef SEL_T
#undef SEL_FN
#undef SEL_GEMM
#undef SEL_TRSM
#undef SEL_ABS
#undef SEL_FINITE
#undef SEL_LX
#undef SEL_UX
#undef SEL_DX

/* ---- complex double ---------------------------------------------------------- */
#define SEL_T sla__z
#define SEL_FN(x) x##_z
#define SEL_GEMM zgemm_
#define SEL_TRSM ztrsm_
#define SEL_ABS(x) cabs(x)
#define SEL_FINITE(x) (isfinite(creal(x)) && isfinite(cimag(x)))
#define SEL_LX(f) ((f)->zLx)
#define SEL_UX(f) ((f)->zUx)
#define SEL_DX(f) ((f)->zDx)
#include "lu_selinv_num.h"
