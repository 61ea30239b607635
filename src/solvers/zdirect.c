/* The table from direct methods to their complex backends (zsolver.h):
 * cholesky -> CHOLMOD (Hermitian positive definite), lu and umfpack ->
 * UMFPACK, klu -> KLU, superlu -> SuperLU; NULL for a method with no
 * complex backend (ldlt) or whose library is not in this build; mumps ->
 * MUMPS (LDL^T when A = A^T, else LU). */
#include "zsolver.h"
#include "../backends/zbackend.h"

const sla__zdirect_ops *sla__zdirect_backend(sla_method m)
{
    switch (m) {
#ifdef SLA_HAVE_SUITESPARSE
    case SLA_METHOD_CHOLESKY: return &sla__zbackend_cholmod;
    case SLA_METHOD_LU:
    case SLA_METHOD_UMFPACK: return &sla__zbackend_umfpack;
    case SLA_METHOD_KLU: return &sla__zbackend_klu;
#endif
#ifdef SLA_HAVE_SUPERLU
    case SLA_METHOD_SUPERLU: return &sla__zbackend_superlu;
#endif
#ifdef SLA_HAVE_MUMPS
    case SLA_METHOD_MUMPS: return &sla__zbackend_mumps;
#endif
    default: return NULL;
    }
}
