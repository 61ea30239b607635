/* Nonlinear solver options: the names of methods and reasons, the defaults
 * and the "key=value,..." string form (sla_nl_options_parse); the keys of
 * the linear solver inside take the prefix linear_ and go to
 * sla_solver_options_parse. Validation of the values against each other is
 * sla_nlsolver_create's (nonlinear.c). The string, the keys and the values
 * are read by the option-string toolkit (core/optstr.c). */
#include "../core/internal.h"

#include <sla/nonlinear.h>

#include <math.h>
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

static const char *const nl_keys[] = {"method",      "rtol",           "atol",
                                      "stol",        "maxiter",        "line_search",
                                      "ls_alpha",    "ls_shrink",      "ls_maxsteps",
                                      "chord_ratio", "anderson_depth", "beta",
                                      "adjoint_reuse"};
#define N_NL_KEYS ((int)(sizeof nl_keys / sizeof nl_keys[0]))

/* One key=value pair; keys starting with "linear_" go to the linear options. */
static sla_status nl_option(sla_ctx *ctx, const char *k, size_t kl, const char *v, size_t vl, void *opts)
{
    static const char *const bools[] = {"true", "false", "yes", "no", "1", "0"};
    sla_nl_options *o = opts;
    const double inf = HUGE_VAL;
    if (sla__opt_prefixed(k, kl, "linear_")) return sla__opt_solver(ctx, k, kl, 7, v, vl, &o->linear);
    int key = sla__opt_find(k, kl, nl_keys, N_NL_KEYS, false);
    if (key < 0) {
        char name[64];
        const char *near = NULL;
        if (kl < sizeof name) {
            memcpy(name, k, kl);
            name[kl] = '\0';
            near = sla_nearest_name(name, nl_keys, (size_t)N_NL_KEYS);
        }
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "unknown nonlinear option '%.*s' (%s%s%slinear solver options take the prefix linear_)",
                          (int)kl, k, near ? "did you mean " : "", near ? near : "", near ? "? " : "");
    }
    sla_status st = SLA_OK;
    sla_int n = 0;
    int m = 0;
    switch (key) {
    case 0: {
        const char *names[3];
        for (int i = 0; i < 3; i++) names[i] = sla_nl_method_name((sla_nl_method)(SLA_NL_NEWTON + i));
        if (!(st = sla__opt_name(ctx, "method", v, vl, names, 3, false, NULL, &m)))
            o->method = (sla_nl_method)(SLA_NL_NEWTON + m);
        return st;
    }
    case 1: return sla__opt_real(ctx, "rtol", v, vl, -inf, inf, 0, &o->rtol);
    case 2: return sla__opt_real(ctx, "atol", v, vl, -inf, inf, 0, &o->atol);
    case 3: return sla__opt_real(ctx, "stol", v, vl, -inf, inf, 0, &o->stol);
    case 4: return sla__opt_count(ctx, "maxiter", v, vl, 0, 1e15, &o->maxiter);
    case 5: return sla__opt_bool(ctx, "line_search", v, vl, bools, 3, false, &o->line_search);
    case 6: return sla__opt_real(ctx, "ls_alpha", v, vl, -inf, inf, 0, &o->ls_alpha);
    case 7: return sla__opt_real(ctx, "ls_shrink", v, vl, -inf, inf, 0, &o->ls_shrink);
    case 8:
    case 10:
        /* above 10^6: a value sla_nlsolver_create refuses */
        if (!(st = sla__opt_count(ctx, nl_keys[key], v, vl, 0, 1e15, &n))) {
            int c = n > 1000000 ? 1000001 : (int)n;
            if (key == 8) o->ls_maxsteps = c;
            else o->anderson_depth = c;
        }
        return st;
    case 9: return sla__opt_real(ctx, "chord_ratio", v, vl, -inf, inf, 0, &o->chord_ratio);
    case 11: return sla__opt_real(ctx, "beta", v, vl, -inf, inf, 0, &o->beta);
    default: return sla__opt_bool(ctx, "adjoint_reuse", v, vl, bools, 3, false, &o->adjoint_reuse);
    }
}

sla_status sla_nl_options_parse(sla_ctx *ctx, const char *str, sla_nl_options *opts)
{
    /* no scratch copy: the pairs before a refused one stay applied, as they
     * always have here */
    return sla__opt_parse(ctx, "sla_nl_options_parse", str, opts, NULL, sizeof *opts, nl_option);
}
