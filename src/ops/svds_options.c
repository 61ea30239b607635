/* Option strings for the truncated SVD: "key=value,key=value" parsed into
 * sla_svds_options in the manner of sla_eigsh_options_parse (the string
 * starts from the struct's current contents, an unknown key is refused
 * naming the nearest valid one, every value is range-checked, and a failed
 * parse leaves the struct untouched), with the defaults and the names of
 * `which`. The string, the keys and the values are read by the
 * option-string toolkit (core/optstr.c). */
#include "sla/svd.h"
#include "ops_internal.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

const char *sla_svds_which_name(sla_svds_which w)
{
    switch (w) {
    case SLA_SVDS_LM: return "LM";
    case SLA_SVDS_SM: return "SM";
    }
    return "unknown";
}

void sla_svds_options_default(sla_svds_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->k = 6;
    o->which = SLA_SVDS_LM;
    o->degenerate_tol = 1e-9;
    o->grad_rtol = 1e-12;
}

_Static_assert(sizeof(sla_svds_which) == sizeof(int), "a CHOICE field is int-sized");

static const char *const which_names[] = {"LM", "SM"}; /* SLA_SVDS_LM, SLA_SVDS_SM */
_Static_assert(sizeof(sla_transpose_mode) == sizeof(int), "a CHOICE field is int-sized");
static const char *const transpose_names[] = {"auto", "explicit", "scatter"}; /* SLA_TRANSPOSE_* */

#define F(nm, kd, l, h, op) \
    {.key = #nm, .kind = SLA__OPT_##kd, .at = offsetof(sla_svds_options, nm), .lo = l, .hi = h, .open = op}
static const sla__opt_field svds_fields[] = {
    F(k, COUNT, 1, INT32_MAX, 0),
    {"which", SLA__OPT_CHOICE, offsetof(sla_svds_options, which), 0, 0, 0, which_names, 2},
    F(tol, REAL, 0, HUGE_VAL, 0),
    F(maxiter, COUNT, 0, INT32_MAX, 0),
    F(ncv, COUNT, 0, 46340, 0),
    F(memory_limit, REAL, 0, HUGE_VAL, 0),
    F(degenerate_tol, REAL, 0, HUGE_VAL, 0),
    F(grad_rtol, REAL, 0, HUGE_VAL, SLA__OPT_LO_OPEN),
    F(grad_maxiter, COUNT, 0, 9007199254740992.0 /* 2^53 */, 0),
    {"transpose", SLA__OPT_CHOICE, offsetof(sla_svds_options, transpose), 0, 0, 0, transpose_names, 3},
};
#undef F
static const sla__opt_table svds_table = {.fields = svds_fields, .count = COUNT(svds_fields), .values_nocase = true};

sla_status sla_svds_options_parse(sla_ctx *ctx, const char *str, sla_svds_options *opts)
{
    return sla__opt_parse(ctx, "sla_svds_options_parse", str, opts, sizeof *opts, true, &svds_table);
}
