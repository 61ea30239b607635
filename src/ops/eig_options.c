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
#include <stddef.h>

#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))
#define INF HUGE_VAL

_Static_assert(sizeof(sla_eig_which) == sizeof(int), "a CHOICE field is int-sized");

/* the accepted spellings of a boolean, ASCII case ignored */
static const char *const bools[] = {"true", "false", "on", "off", "yes", "no", "1", "0"};
static const char *const which_names[] = {"LA", "SA", "LM", "SM"}; /* sla_eig_which order */

/* ---- eigsh -------------------------------------------------------------------- */

#define F(nm, kd, l, h, op) \
    {.key = #nm, .kind = SLA__OPT_##kd, .at = offsetof(sla_eigsh_options, nm), .lo = l, .hi = h, .open = op}
static const sla__opt_field eigsh_fields[] = {
    F(k, COUNT, 1, INT32_MAX, 0),
    {"which", SLA__OPT_CHOICE, offsetof(sla_eigsh_options, which), 0, 0, 0, which_names, COUNT(which_names)},
    F(shift_invert, BOOL, 0, 0, 0),
    F(sigma, OTHER, 0, 0, 0),
    F(tol, REAL, 0, INF, 0),
    F(ncv, COUNT, 0, 46340, 0),
    F(maxiter, COUNT, 0, INT32_MAX, 0),
    F(factor_method, OTHER, 0, 0, 0),
    F(memory_limit, REAL, 0, INF, 0),
    F(degenerate_tol, REAL, 0, INF, 0),
    F(grad_rtol, REAL, 0, INF, SLA__OPT_LO_OPEN),
    F(grad_maxiter, COUNT, 0, 9e15, 0),
};
#undef F

/* sigma (which implies shift-invert) and factor_method */
static sla_status eigsh_other(sla_ctx *ctx, int field, const char *v, size_t vl, void *opts)
{
    sla_eigsh_options *o = opts;
    sla_status st;
    if (field == 3) {
        if (!(st = sla__opt_real(ctx, "sigma", v, vl, -INF, INF, 0, &o->sigma))) o->shift_invert = true;
        return st;
    }
    /* auto and the direct methods, by their sla_method_name */
    static const sla_method ms[] = {SLA_METHOD_AUTO, SLA_METHOD_CHOLESKY, SLA_METHOD_LDLT, SLA_METHOD_LU,
                                    SLA_METHOD_UMFPACK, SLA_METHOD_KLU, SLA_METHOD_SUPERLU};
    const char *names[COUNT(ms)];
    int i = 0;
    for (int m = 0; m < COUNT(ms); m++) names[m] = sla_method_name(ms[m]);
    if (!(st = sla__opt_name(ctx, "factor_method", v, vl, names, COUNT(ms), false, NULL, &i)))
        o->factor_method = ms[i];
    return st;
}

static const sla__opt_table eigsh_table = {
    .fields = eigsh_fields, .count = COUNT(eigsh_fields), .values_nocase = true,
    .bools = bools, .nbools = COUNT(bools) / 2, .other = eigsh_other};

sla_status sla_eigsh_options_parse(sla_ctx *ctx, const char *str, sla_eigsh_options *opts)
{
    return sla__opt_parse(ctx, "sla_eigsh_options_parse", str, opts, sizeof *opts, true, &eigsh_table);
}

/* ---- LOBPCG and SLQ ------------------------------------------------------------- */

/* The keys, and for the nearest-name hint the commonest nested ones (which
 * never match: a key with the nested prefix goes to the solver options). */
#define F(nm, kd, l, h, op) \
    {.key = #nm, .kind = SLA__OPT_##kd, .at = offsetof(sla_lobpcg_options, nm), .lo = l, .hi = h, .open = op}
static const sla__opt_field lobpcg_fields[] = {
    F(k, COUNT, 1, 10000, 0),
    F(tol, REAL, 0, INF, SLA__OPT_LO_OPEN),
    F(maxiter, COUNT, 1, INT32_MAX, 0),
    F(seed, SEED, 0, 0, 0),
    {"pc.precond", SLA__OPT_OTHER, 0, 0, 0, 0, NULL, 0},
};
#undef F
static const sla__opt_table lobpcg_table = {.fields = lobpcg_fields, .count = COUNT(lobpcg_fields),
                                            .nested = "pc.", .nested_at = offsetof(sla_lobpcg_options, pc)};

sla_status sla_lobpcg_options_parse(sla_ctx *ctx, const char *str, sla_lobpcg_options *opts)
{
    return sla__opt_parse(ctx, "sla_lobpcg_options_parse", str, opts, sizeof *opts, true, &lobpcg_table);
}

#define F(nm, kd, l, h) \
    {.key = #nm, .kind = SLA__OPT_##kd, .at = offsetof(sla_slq_options, nm), .lo = l, .hi = h, .open = 0}
#define NESTED(name) {name, SLA__OPT_OTHER, 0, 0, 0, 0, NULL, 0}
static const sla__opt_field slq_fields[] = {
    F(probes, COUNT, 1, 100000000), F(lanczos_steps, COUNT, 1, 10000), F(seed, SEED, 0, 0),
    NESTED("solver.method"),        NESTED("solver.precond"),          NESTED("solver.rtol"),
};
#undef F
#undef NESTED
static const sla__opt_table slq_table = {.fields = slq_fields, .count = COUNT(slq_fields),
                                         .nested = "solver.", .nested_at = offsetof(sla_slq_options, solver)};

sla_status sla_slq_options_parse(sla_ctx *ctx, const char *str, sla_slq_options *opts)
{
    return sla__opt_parse(ctx, "sla_slq_options_parse", str, opts, sizeof *opts, true, &slq_table);
}
