/* placeholder: the cholmod backend is being written */
#include "../solvers/direct.h"
const sla__direct_ops *sla__backend_cholmod(void) { return NULL; }
