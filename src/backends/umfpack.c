/* placeholder: the umfpack backend is being written */
#include "../solvers/direct.h"
const sla__direct_ops *sla__backend_umfpack(void) { return NULL; }
