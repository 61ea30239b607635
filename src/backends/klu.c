/* placeholder: the klu backend is being written */
#include "../solvers/direct.h"
const sla__direct_ops *sla__backend_klu(void) { return NULL; }
