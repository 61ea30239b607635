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
