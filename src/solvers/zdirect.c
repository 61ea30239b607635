/* The table from direct methods to their complex backends (zsolver.h). */
#include "zsolver.h"

const sla__zdirect_ops *sla__zdirect_backend(sla_method m)
{
    (void)m;
    return NULL; /* filled as the complex backends land */
}
