/* Option strings for the eigensolvers and the stochastic log-determinant:
 * "key=value,key=value" parsed into sla_eigsh_options, sla_lobpcg_options
 * and sla_slq_options, in the manner of sla_solver_options_parse (the
 * string starts from the struct's current contents, an unknown key is
 * refused naming the nearest valid one, every value is range-checked, and
 * a failed parse leaves the struct untouched). The nested solver options
 * (lobpcg's preconditioner, slq's gradient solves) take the solver keys
 * behind a prefix, "pc.precond=ic0" or "solver.rtol=1e-8", and go through
 * sla_solver_options_parse. The string, the keys and the values are read
 * by the option-string toolkit (core/optstr.c). */
#include "ops_internal.h"

#include <math.h>

#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

/* the accepted spellings of a boolean, ASCII case ignored */
static const char *const bools[] = {"true", "false", "on", "off", "yes", "no", "1", "0"};

/* ---- eigsh -------------------------------------------------------------------- */

static const char *const eigsh_keys[] = {"k", "which", "shift_invert", "sigma", "tol", "ncv", "maxiter",
                                         "factor_method", "memory_limit", "degenerate_tol", "grad_rtol",
                                         "grad_maxiter"};

static sla_status eigsh_pair(sla_ctx *ctx, const char *k, size_t kl, const char *v, size_t vl, void *opts)
{
    sla_eigsh_options *o = opts;
    const double inf = HUGE_VAL;
    int key = 0, i = 0;
    sla_status st = sla__opt_key(ctx, k, kl, eigsh_keys, COUNT(eigsh_keys), false, &key);
    if (st) return st;
    switch (key) {
    case 0: return sla__opt_count(ctx, "k", v, vl, 1, INT32_MAX, &o->k);
    case 1: {
        static const char *const which[] = {"LA", "SA", "LM", "SM"}; /* sla_eig_which order */
        if (!(st = sla__opt_name(ctx, "which", v, vl, which, COUNT(which), true, NULL, &i)))
            o->which = (sla_eig_which)i;
        return st;
    }
    case 2: return sla__opt_bool(ctx, "shift_invert", v, vl, bools, COUNT(bools) / 2, true, &o->shift_invert);
    case 3:
        st = sla__opt_real(ctx, "sigma", v, vl, -inf, inf, 0, &o->sigma);
        if (!st) o->shift_invert = true;
        return st;
    case 4: return sla__opt_real(ctx, "tol", v, vl, 0.0, inf, 0, &o->tol);
    case 5: return sla__opt_count(ctx, "ncv", v, vl, 0, 46340, &o->ncv);
    case 6: return sla__opt_count(ctx, "maxiter", v, vl, 0, INT32_MAX, &o->maxiter);
    case 7: {
        /* auto and the direct methods, by their sla_method_name */
        static const sla_method ms[] = {SLA_METHOD_AUTO, SLA_METHOD_CHOLESKY, SLA_METHOD_LDLT, SLA_METHOD_LU,
                                        SLA_METHOD_UMFPACK, SLA_METHOD_KLU, SLA_METHOD_SUPERLU};
        const char *names[COUNT(ms)];
        for (int m = 0; m < COUNT(ms); m++) names[m] = sla_method_name(ms[m]);
        if (!(st = sla__opt_name(ctx, "factor_method", v, vl, names, COUNT(ms), false, NULL, &i)))
            o->factor_method = ms[i];
        return st;
    }
    case 8: return sla__opt_real(ctx, "memory_limit", v, vl, 0.0, inf, 0, &o->memory_limit);
    case 9: return sla__opt_real(ctx, "degenerate_tol", v, vl, 0.0, inf, 0, &o->degenerate_tol);
    case 10: return sla__opt_real(ctx, "grad_rtol", v, vl, 0.0, inf, SLA__OPT_LO_OPEN, &o->grad_rtol);
    default: return sla__opt_count(ctx, "grad_maxiter", v, vl, 0, 9e15, &o->grad_maxiter);
    }
}

sla_status sla_eigsh_options_parse(sla_ctx *ctx, const char *str, sla_eigsh_options *opts)
{
    sla_eigsh_options tmp; /* all or nothing */
    return sla__opt_parse(ctx, "sla_eigsh_options_parse", str, opts, &tmp, sizeof tmp, eigsh_pair);
}

/* ---- LOBPCG ------------------------------------------------------------------- */

/* the nearest-name candidates: the keys and the commonest nested one (which
 * never matches: a "pc." key goes to the nested options first) */
static const char *const lobpcg_keys[] = {"k", "tol", "maxiter", "seed", "pc.precond"};

static sla_status lobpcg_pair(sla_ctx *ctx, const char *k, size_t kl, const char *v, size_t vl, void *opts)
{
    sla_lobpcg_options *o = opts;
    if (sla__opt_prefixed(k, kl, "pc.")) return sla__opt_solver(ctx, k, kl, 3, v, vl, &o->pc);
    int key = 0;
    sla_status st = sla__opt_key(ctx, k, kl, lobpcg_keys, COUNT(lobpcg_keys), false, &key);
    if (st) return st;
    switch (key) {
    case 0: return sla__opt_count(ctx, "k", v, vl, 1, 10000, &o->k);
    case 1: return sla__opt_real(ctx, "tol", v, vl, 0.0, HUGE_VAL, SLA__OPT_LO_OPEN, &o->tol);
    case 2: return sla__opt_count(ctx, "maxiter", v, vl, 1, INT32_MAX, &o->maxiter);
    default: return sla__opt_u64(ctx, "seed", v, vl, &o->seed);
    }
}

sla_status sla_lobpcg_options_parse(sla_ctx *ctx, const char *str, sla_lobpcg_options *opts)
{
    sla_lobpcg_options tmp;
    return sla__opt_parse(ctx, "sla_lobpcg_options_parse", str, opts, &tmp, sizeof tmp, lobpcg_pair);
}

/* ---- SLQ ---------------------------------------------------------------------- */

static const char *const slq_keys[] = {"probes", "lanczos_steps", "seed", "solver.method", "solver.precond",
                                       "solver.rtol"};

static sla_status slq_pair(sla_ctx *ctx, const char *k, size_t kl, const char *v, size_t vl, void *opts)
{
    sla_slq_options *o = opts;
    if (sla__opt_prefixed(k, kl, "solver.")) return sla__opt_solver(ctx, k, kl, 7, v, vl, &o->solver);
    int key = 0;
    sla_status st = sla__opt_key(ctx, k, kl, slq_keys, COUNT(slq_keys), false, &key);
    if (st) return st;
    switch (key) {
    case 0: return sla__opt_count(ctx, "probes", v, vl, 1, 100000000, &o->probes);
    case 1: return sla__opt_count(ctx, "lanczos_steps", v, vl, 1, 10000, &o->lanczos_steps);
    default: return sla__opt_u64(ctx, "seed", v, vl, &o->seed);
    }
}

sla_status sla_slq_options_parse(sla_ctx *ctx, const char *str, sla_slq_options *opts)
{
    sla_slq_options tmp;
    return sla__opt_parse(ctx, "sla_slq_options_parse", str, opts, &tmp, sizeof tmp, slq_pair);
}
