/* Nonlinear solver options: the names of methods and reasons, the defaults
 * and the "key=value,..." string form (sla_nl_options_parse); the keys of
 * the linear solver inside take the prefix linear_ and go to
 * sla_solver_options_parse. Validation of the values against each other is
 * sla_nlsolver_create's (nonlinear.c). */
#include "../core/internal.h"

#include <sla/nonlinear.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

static sla_status nl_number(sla_ctx *ctx, const char *key, const char *v, double *out)
{
    char *end = NULL;
    double d = strtod(v, &end);
    if (end == v || *end || !isfinite(d))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: bad number '%s'", key, v);
    *out = d;
    return SLA_OK;
}

static sla_status nl_bool(sla_ctx *ctx, const char *key, const char *v, bool *out)
{
    if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes")) *out = true;
    else if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no")) *out = false;
    else return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: '%s' is not a boolean (true/false)", key, v);
    return SLA_OK;
}

/* One key=value pair; keys starting with "linear_" go to the linear options. */
static sla_status nl_option(sla_ctx *ctx, const char *key, const char *v, sla_nl_options *o)
{
    double d = 0.0;
    sla_status st = SLA_OK;
    if (!strncmp(key, "linear_", 7)) {
        char buf[400];
        snprintf(buf, sizeof buf, "%s=%s", key + 7, v);
        return sla_solver_options_parse(ctx, buf, &o->linear);
    }
    if (!strcmp(key, "method")) {
        for (int m = SLA_NL_NEWTON; m <= SLA_NL_PICARD; m++)
            if (!strcmp(v, sla_nl_method_name((sla_nl_method)m))) {
                o->method = (sla_nl_method)m;
                return SLA_OK;
            }
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "option method: unknown value '%s' (newton, anderson or picard)", v);
    }
    if (!strcmp(key, "line_search")) return nl_bool(ctx, key, v, &o->line_search);
    if (!strcmp(key, "adjoint_reuse")) return nl_bool(ctx, key, v, &o->adjoint_reuse);
    int k = -1;
    for (int i = 0; i < N_NL_KEYS; i++)
        if (!strcmp(key, nl_keys[i])) k = i;
    if (k < 0) {
        const char *near = sla_nearest_name(key, nl_keys, (size_t)N_NL_KEYS);
        if (!near)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown nonlinear option '%s' (linear solver "
                              "options take the prefix linear_)", key);
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "unknown nonlinear option '%s' (did you mean %s? linear solver options "
                          "take the prefix linear_)", key, near);
    }
    if ((st = nl_number(ctx, key, v, &d))) return st;
    if (!strcmp(key, "rtol")) o->rtol = d;
    else if (!strcmp(key, "atol")) o->atol = d;
    else if (!strcmp(key, "stol")) o->stol = d;
    else if (!strcmp(key, "ls_alpha")) o->ls_alpha = d;
    else if (!strcmp(key, "ls_shrink")) o->ls_shrink = d;
    else if (!strcmp(key, "chord_ratio")) o->chord_ratio = d;
    else if (!strcmp(key, "beta")) o->beta = d;
    else if (d != floor(d) || d < 0 || d > 1e15)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: '%s' is not a non-negative integer", key, v);
    else if (!strcmp(key, "maxiter")) o->maxiter = (sla_int)d;
    else if (!strcmp(key, "ls_maxsteps")) o->ls_maxsteps = d > 1e6 ? 1000001 : (int)d;
    else o->anderson_depth = d > 1e6 ? 1000001 : (int)d;
    return SLA_OK;
}

sla_status sla_nl_options_parse(sla_ctx *ctx, const char *str, sla_nl_options *opts)
{
    if (!str || !opts) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_nl_options_parse: NULL argument");
    const char *p = str;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[192];
        if (len >= sizeof item)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "option '%.40s...' is too long", p);
        memcpy(item, p, len);
        item[len] = '\0';
        p += len + (end ? 1 : 0);
        if (!len) continue;
        char *eq = strchr(item, '=');
        if (!eq)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "option '%s' has no value (key=value)", item);
        *eq = '\0';
        sla_status st = nl_option(ctx, item, eq + 1, opts);
        if (st) return st;
    }
    return sla__ok(ctx, SLA_OK);
}
