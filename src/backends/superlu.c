/* placeholder: the superlu backend is being written */
#include "../solvers/direct.h"
const sla__direct_ops *sla__backend_superlu(void) { return NULL; }
