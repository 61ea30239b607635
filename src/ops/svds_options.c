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

static const char *const svds_keys[] = {"k",            "which",          "tol",       "maxiter",     "ncv",
                                         "memory_limit", "degenerate_tol", "grad_rtol", "grad_maxiter"};

static sla_status svds_pair(sla_ctx *ctx, const char *k, size_t kl, const char *v, size_t vl, void *opts)
{
    sla_svds_options *o = opts;
    const double inf = HUGE_VAL;
    int key = 0, w = 0;
    sla_status st = sla__opt_key(ctx, k, kl, svds_keys, COUNT(svds_keys), false, &key);
    if (st) return st;
    switch (key) {
    case 0: return sla__opt_count(ctx, "k", v, vl, 1, INT32_MAX, &o->k);
    case 1: {
        static const char *const which[] = {"LM", "SM"}; /* SLA_SVDS_LM, SLA_SVDS_SM */
        if (!(st = sla__opt_name(ctx, "which", v, vl, which, 2, true, NULL, &w)))
            o->which = w ? SLA_SVDS_SM : SLA_SVDS_LM;
        return st;
    }
    case 2: return sla__opt_real(ctx, "tol", v, vl, 0.0, inf, 0, &o->tol);
    case 3: return sla__opt_count(ctx, "maxiter", v, vl, 0, INT32_MAX, &o->maxiter);
    case 4: return sla__opt_count(ctx, "ncv", v, vl, 0, 46340, &o->ncv);
    case 5: return sla__opt_real(ctx, "memory_limit", v, vl, 0.0, inf, 0, &o->memory_limit);
    case 6: return sla__opt_real(ctx, "degenerate_tol", v, vl, 0.0, inf, 0, &o->degenerate_tol);
    case 7: return sla__opt_real(ctx, "grad_rtol", v, vl, 0.0, inf, SLA__OPT_LO_OPEN, &o->grad_rtol);
    default: return sla__opt_count(ctx, "grad_maxiter", v, vl, 0, 9007199254740992.0 /* 2^53 */, &o->grad_maxiter);
    }
}

sla_status sla_svds_options_parse(sla_ctx *ctx, const char *str, sla_svds_options *opts)
{
    sla_svds_options tmp; /* all or nothing */
    return sla__opt_parse(ctx, "sla_svds_options_parse", str, opts, &tmp, sizeof tmp, svds_pair);
}
