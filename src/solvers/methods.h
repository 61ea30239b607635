/* Private: the method registry, one table with every method and every
 * preconditioner once (src/solvers/methods.c). The public part of a row is
 * an sla_method_desc (name, aliases, kind, capabilities, availability);
 * the private part is what the solver runs: the backend getter of a direct
 * method, the iteration of a Krylov method. The option parser, the name
 * functions, the solver's option checks and dispatch, sla_method_available
 * and the Python binding all read it.
 */
#ifndef SLA_METHODS_H
#define SLA_METHODS_H

#include "direct.h"
#include "krylov.h"
#include "zsolver.h"

typedef struct sla__method_entry {
    sla_method_desc desc;
    /* direct methods: the backend getter (it answers NULL when its library
     * is not in this build; desc.available is then false) */
    const sla__direct_ops *(*backend)(void);
    /* Krylov methods: the iteration (sla__krylov_method answers the same) */
    sla__krylov_fn krylov;
    /* direct methods: the backend's LDL^T variant (sla__direct_opts.ldlt;
     * CHOLMOD: simplicial LDL^T instead of LL^T) */
    bool ldlt;
    /* Krylov methods that run on complex matrices (SLA_CAP_COMPLEX): the
     * complex iteration (zsolver.h) */
    sla__zkrylov_fn zkrylov;
} sla__method_entry;

/* The row of method m, or of preconditioner p; NULL for a value that names
 * none. */
const sla__method_entry *sla__method_find(sla_method m);
const sla__method_entry *sla__precond_find(sla_precond_kind p);

/* The row of the method (precond false) or preconditioner (precond true)
 * whose public name, or with `aliases` also an alias, is s[0..len); NULL
 * when there is none. The options string takes public names only; the
 * aliases are the front ends' friendlier names (sla_method_from_name). */
const sla__method_entry *sla__method_lookup(const char *s, size_t len, bool precond, bool aliases);

/* Look up s[0..len) as above; unknown: SLA_ERR_ARGUMENT, "unknown method
 * 's' (did you mean 'x'?)" (or "unknown preconditioner ..."), naming all
 * public names when none is close. */
sla_status sla__method_parse(sla_ctx *ctx, const char *s, size_t len, bool precond, bool aliases,
                             const sla__method_entry **out);

#endif
