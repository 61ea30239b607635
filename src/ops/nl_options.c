/* Nonlinear solver options: the names of methods and reasons, the defaults
 * and the "key=value,..." string form (sla_nl_options_parse); the keys of
 * the linear solver inside take the prefix linear_ and go to
 * sla_solver_options_parse. Validation of the values against each other is
 * sla_nlsolver_create's (nonlinear.c). The string, the keys and the values
 * are read by the option-string toolkit (core/optstr.c). */
#include "../core/internal.h"

#include <sla/nonlinear.h>

#include <math.h>
#include <stddef.h>
#include <string.h>

const char *sla_nl_reason_name(sla_nl_reason r)
{
    switch (r) {
    case SLA_NL_REASON_NONE: return "none";
    case SLA_NL_CONVERGED_RTOL: return "converged_rtol";
    case SLA_NL_CONVERGED_ATOL: return "converged_atol";
    case SLA_NL_CONVERGED_STEP: return "converged_step";
    case SLA_NL_DIVERGED_LINESEARCH: return "diverged_linesearch";
    case SLA_NL_DIVERGED_MAXITER: return "diverged_maxiter";
    case SLA_NL_DIVERGED_LINEAR_SOLVE: return "diverged_linear_solve";
    case SLA_NL_DIVERGED_NONFINITE: return "diverged_nonfinite";
    }
    return "unknown";
}

const char *sla_nl_method_name(sla_nl_method m)
{
    switch (m) {
    case SLA_NL_NEWTON: return "newton";
    case SLA_NL_ANDERSON: return "anderson";
    case SLA_NL_PICARD: return "picard";
    }
    return "unknown";
}

size_t sla_nl_problem_size(void) { return sizeof(sla_nl_problem); }
size_t sla_nl_options_size(void) { return sizeof(sla_nl_options); }
size_t sla_nl_info_size(void) { return sizeof(sla_nl_info); }

void sla_nl_options_default(sla_nl_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->method = SLA_NL_NEWTON;
    o->rtol = 1e-10;
    o->atol = 0.0;
    o->stol = 1e-12;
    o->maxiter = 0;
    o->line_search = true;
    o->ls_alpha = 1e-4;
    o->ls_shrink = 0.5;
    o->ls_maxsteps = 30;
    o->anderson_depth = 5;
    o->beta = 1.0;
    o->adjoint_reuse = true;
    sla_solver_options_default(&o->linear);
    /* The linear solver serves many solves per analysis (every Newton step
     * refactors on the same pattern; chord steps and the adjoint reuse a
     * factorization) and must be exact enough for rtol 1e-10 (Picard and
     * Anderson apply A(u)^-1 itself): method=auto is told so, which makes it
     * factor whenever the factors fit. A Krylov method stays one option away
     * (linear_method=cg,linear_precond=amg). */
    o->linear.auto_solves = 100;
}

/* ---- the string form of the options ---------------------------------- */

_Static_assert(sizeof(sla_nl_method) == sizeof(int), "a CHOICE field is int-sized");

static const char *const method_names[] = {"newton", "anderson", "picard"}; /* sla_nl_method order */
static const char *const nl_bools[] = {"true", "false", "yes", "no", "1", "0"};

#define F(nm, kd) \
    {.key = #nm, .kind = SLA__OPT_##kd, .at = offsetof(sla_nl_options, nm), .lo = -HUGE_VAL, .hi = HUGE_VAL, .open = 0}
#define N(nm) {.key = #nm, .kind = SLA__OPT_COUNT, .at = offsetof(sla_nl_options, nm), .lo = 0, .hi = 1e15}
static const sla__opt_field nl_fields[] = {
    {"method", SLA__OPT_CHOICE, offsetof(sla_nl_options, method), 0, 0, 0, method_names, 3},
    F(rtol, REAL),        F(atol, REAL),           F(stol, REAL),     N(maxiter),
    F(line_search, BOOL), F(ls_alpha, REAL),       F(ls_shrink, REAL), F(ls_maxsteps, OTHER),
    F(chord_ratio, REAL), F(anderson_depth, OTHER), F(beta, REAL),     F(adjoint_reuse, BOOL),
};
#undef F
#undef N

/* ls_maxsteps and anderson_depth: above 10^6, a value sla_nlsolver_create refuses */
static sla_status nl_other(sla_ctx *ctx, int field, const char *v, size_t vl, void *opts)
{
    sla_nl_options *o = opts;
    sla_int n = 0;
    sla_status st = sla__opt_count(ctx, nl_fields[field].key, v, vl, 0, 1e15, &n);
    if (st) return st;
    *(field == 8 ? &o->ls_maxsteps : &o->anderson_depth) = n > 1000000 ? 1000001 : (int)n;
    return SLA_OK;
}

static sla_status nl_unknown(sla_ctx *ctx, const char *k, size_t kl, const char *const *keys, int count)
{
    const char *near = sla__opt_nearest(k, kl, keys, count);
    return sla__error(ctx, SLA_ERR_ARGUMENT,
                      "unknown nonlinear option '%.*s' (%s%s%slinear solver options take the prefix linear_)",
                      (int)kl, k, near ? "did you mean " : "", near ? near : "", near ? "? " : "");
}

static const sla__opt_table nl_table = {
    .fields = nl_fields, .count = (int)(sizeof nl_fields / sizeof nl_fields[0]), .bools = nl_bools, .nbools = 3,
    .nested = "linear_", .nested_at = offsetof(sla_nl_options, linear), .other = nl_other, .unknown = nl_unknown};

sla_status sla_nl_options_parse(sla_ctx *ctx, const char *str, sla_nl_options *opts)
{
    /* no scratch copy: the pairs before a refused one stay applied, as they
     * always have here */
    return sla__opt_parse(ctx, "sla_nl_options_parse", str, opts, sizeof *opts, true, &nl_table);
}
