/* Build facts asked at run time: which optional components (direct
 * solver libraries, hypre, ARPACK, LAPACK, MPI, METIS) this library was
 * compiled with, read from the generated sla/config.h so that the answer
 * and the installed header's SLA_HAS_* macros cannot disagree. */
#include "sla/base.h"

#include <string.h>

static const struct {
    const char *name;
    int present;
} features[] = {
    {"suitesparse", SLA_HAS_SUITESPARSE},
    {"superlu", SLA_HAS_SUPERLU},
    {"hypre", SLA_HAS_HYPRE},
    {"arpack", SLA_HAS_ARPACK},
    {"lapack", SLA_HAS_LAPACK},
    {"mpi", SLA_HAS_MPI},
    {"metis", SLA_HAS_METIS},
    {"mumps", SLA_HAS_MUMPS},
};

int sla_has_feature(const char *name)
{
    if (!name) return 0;
    for (size_t i = 0; i < sizeof features / sizeof features[0]; i++)
        if (strcmp(name, features[i].name) == 0) return features[i].present;
    return 0;
}
