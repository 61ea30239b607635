/* Direct backends that were not compiled into this build answer NULL. */
#include "direct.h"

#ifndef SLA_HAVE_SUITESPARSE
const sla__direct_ops *sla__backend_cholmod(void) { return NULL; }
const sla__direct_ops *sla__backend_umfpack(void) { return NULL; }
const sla__direct_ops *sla__backend_klu(void) { return NULL; }
#endif
#ifndef SLA_HAVE_SUPERLU
const sla__direct_ops *sla__backend_superlu(void) { return NULL; }
#endif
#ifndef SLA_HAVE_MUMPS
const sla__direct_ops *sla__backend_mumps(void) { return NULL; }
#endif

#ifndef SLA_HAVE_SUITESPARSE
sla_status sla__umfpack_selinv(sla_ctx *ctx, void *sym, void *num, const sla_matrix *A, double *z, int mode)
{
    (void)sym; (void)num; (void)A; (void)z; (void)mode;
    return sla__error(ctx, SLA_ERR_UNAVAILABLE, "UMFPACK is not in this build");
}
#endif
