/* Solver options: defaults, names, and the "key=value,..." string form.
 * Method and preconditioner names come from the registry (methods.c). */
#include "methods.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sla_solver_options_default(sla_solver_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->method = SLA_METHOD_AUTO;
    o->precond = SLA_PRECOND_NONE;
    o->rtol = 1e-8;
    o->atol = 0.0;
    o->maxiter = 0;
    o->restart = 30;
    o->omega = 1.0;
    /* BoomerAMG, tuned on 2D/3D Poisson and anisotropic diffusion at 1M
     * unknowns, rtol 1e-8 (bench/AMG_RESULTS.md): HMIS coarsening,
     * extended+i interpolation with 4 entries per row, one level of
     * aggressive coarsening, l1 Gauss-Seidel (forward down, backward up). */
    o->amg.strong_threshold = 0.25;
    o->amg.coarsen_type = 10;
    o->amg.interp_type = 6;
    o->amg.pmax = 4;
    o->amg.agg_levels = 1;
    o->amg.relax_type = 13;
    o->amg.cycle_type = 1;
    o->amg.max_levels = 25;
    o->amg.reuse = 0;
    o->amg.agg_interp = 1;
    o->auto_direct_seconds = SLA_AUTO_DIRECT_SECONDS_DEFAULT;
    /* Zero pivots are shifted (as SciPy's spilu proceeds); ILUT as spilu's
     * defaults: drop_tol 1e-4, fill_factor 10. */
    o->ilu_shift = 1;
    o->ilut_droptol = 1e-4;
    o->ilut_fill = 10.0;
    o->ilut_pivot = 0.1;
}

static const char *const ordering_names[] = {"auto", "amd", "metis", "natural"};
static const char *const keys[] = {"method", "precond", "rtol", "atol", "maxiter",
                                   "restart", "omega", "use_x0", "ordering", "memory_limit",
                                   "amg_threshold", "amg_coarsen", "amg_interp", "amg_pmax",
                                   "amg_agg_levels", "amg_relax", "amg_cycle", "amg_max_levels",
                                   "amg_reuse", "auto_solves", "max_seconds", "amg_agg_interp",
                                   "auto_direct_seconds", "ilu_shift", "ilut_droptol", "ilut_fill",
                                   "ilut_pivot", "equilibrate", "saamg_reuse"};
#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

size_t sla_solver_options_size(void) { return sizeof(sla_solver_options); }

const char *sla_method_name(sla_method m)
{
    const sla__method_entry *e = sla__method_find(m);
    return e ? e->desc.name : "unknown";
}

const char *sla_precond_name(sla_precond_kind p)
{
    const sla__method_entry *e = sla__precond_find(p);
    return e ? e->desc.name : "unknown";
}

const char *sla_ordering_name(sla_ordering o)
{
    return (o >= 0 && (int)o < COUNT(ordering_names)) ? ordering_names[o] : "unknown";
}

const char *sla_reason_name(sla_reason r)
{
    switch (r) {
    case SLA_REASON_NONE: return "none";
    case SLA_CONVERGED_RTOL: return "converged_rtol";
    case SLA_CONVERGED_ATOL: return "converged_atol";
    case SLA_DIVERGED_MAXITER: return "diverged_maxiter";
    case SLA_DIVERGED_BREAKDOWN: return "diverged_breakdown";
    case SLA_DIVERGED_NAN: return "diverged_nan";
    case SLA_DIVERGED_INDEFINITE: return "diverged_indefinite";
    case SLA_DIVERGED_USER: return "diverged_user";
    case SLA_DIVERGED_ACCURACY: return "diverged_accuracy";
    case SLA_DIVERGED_TIME: return "diverged_time";
    }
    return "unknown";
}

static int lookup(const char *s, size_t len, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (strlen(names[i]) == len && strncmp(s, names[i], len) == 0) return i;
    return -1;
}

static sla_status parse_double(sla_ctx *ctx, const char *key, const char *v, size_t len,
                               double lo, double *out)
{
    char buf[64], *end;
    if (len == 0 || len >= sizeof buf)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: bad number '%.*s'", key, (int)len, v);
    memcpy(buf, v, len);
    buf[len] = '\0';
    errno = 0;
    double d = strtod(buf, &end);
    if (*end || errno || !isfinite(d) || d < lo)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: bad value '%s' (a number >= %g)", key,
                          buf, lo);
    *out = d;
    return SLA_OK;
}

/* An integer in [lo, hi] for option `key`. */
static sla_status parse_int(sla_ctx *ctx, const char *key, const char *v, size_t len, int lo,
                            int hi, int *out)
{
    double d = 0.0;
    sla_status st = parse_double(ctx, key, v, len, (double)lo, &d);
    if (st) return st;
    if (d != floor(d) || d > (double)hi)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: an integer in [%d, %d]", key, lo, hi);
    *out = (int)d;
    return SLA_OK;
}

static sla_status parse_pair(sla_ctx *ctx, const char *k, size_t kl, const char *v, size_t vl,
                             sla_solver_options *o)
{
    char hint[400];
    int key = lookup(k, kl, keys, COUNT(keys));
    if (key < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown option '%.*s'%s", (int)kl, k,
                          sla__suggest(hint, sizeof hint, k, kl, keys, COUNT(keys), true));
    double d = 0.0;
    sla_status st = SLA_OK;
    switch (key) {
    case 0:
    case 1: {
        const sla__method_entry *e = NULL;
        if ((st = sla__method_parse(ctx, v, vl, key == 1, false, &e))) return st;
        if (key == 0) o->method = (sla_method)e->desc.value;
        else o->precond = (sla_precond_kind)e->desc.value;
        return SLA_OK;
    }
    case 2: st = parse_double(ctx, "rtol", v, vl, 0.0, &o->rtol); break;
    case 3: st = parse_double(ctx, "atol", v, vl, 0.0, &o->atol); break;
    case 4:
        if (!(st = parse_double(ctx, "maxiter", v, vl, 0.0, &d))) {
            if (d != floor(d) || d > 9e18)
                return sla__error(ctx, SLA_ERR_ARGUMENT, "option maxiter: not an integer");
            o->maxiter = (sla_int)d;
        }
        break;
    case 5:
        if (!(st = parse_double(ctx, "restart", v, vl, 1.0, &d))) {
            if (d != floor(d) || d > 100000)
                return sla__error(ctx, SLA_ERR_ARGUMENT, "option restart: an integer in [1, 100000]");
            o->restart = (int)d;
        }
        break;
    case 6:
        if (!(st = parse_double(ctx, "omega", v, vl, 0.0, &o->omega)) &&
            !(o->omega > 0.0 && o->omega < 2.0))
            return sla__error(ctx, SLA_ERR_ARGUMENT, "option omega: must lie in (0, 2)");
        break;
    case 7:
        if (lookup(v, vl, (const char *const[]){"0", "false"}, 2) >= 0) o->use_x0 = false;
        else if (lookup(v, vl, (const char *const[]){"1", "true"}, 2) >= 0) o->use_x0 = true;
        else return sla__error(ctx, SLA_ERR_ARGUMENT, "option use_x0: true or false");
        break;
    case 8: {
        int q = lookup(v, vl, ordering_names, COUNT(ordering_names));
        if (q < 0)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown ordering '%.*s'%s", (int)vl, v,
                              sla__suggest(hint, sizeof hint, v, vl, ordering_names,
                                      COUNT(ordering_names), true));
        o->ordering = (sla_ordering)q;
        return SLA_OK;
    }
    case 9: st = parse_double(ctx, "memory_limit", v, vl, 0.0, &o->memory_limit); break;
    case 10:
        if (!(st = parse_double(ctx, "amg_threshold", v, vl, 0.0, &o->amg.strong_threshold)) &&
            o->amg.strong_threshold > 1.0)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "option amg_threshold: must lie in [0, 1]");
        break;
    case 11: st = parse_int(ctx, "amg_coarsen", v, vl, 0, 100, &o->amg.coarsen_type); break;
    case 12: st = parse_int(ctx, "amg_interp", v, vl, 0, 100, &o->amg.interp_type); break;
    case 13: st = parse_int(ctx, "amg_pmax", v, vl, 0, 1000000, &o->amg.pmax); break;
    case 14: st = parse_int(ctx, "amg_agg_levels", v, vl, 0, 100, &o->amg.agg_levels); break;
    case 15: st = parse_int(ctx, "amg_relax", v, vl, 0, 100, &o->amg.relax_type); break;
    case 16: st = parse_int(ctx, "amg_cycle", v, vl, 1, 2, &o->amg.cycle_type); break;
    case 17: st = parse_int(ctx, "amg_max_levels", v, vl, 1, 100, &o->amg.max_levels); break;
    case 18: st = parse_int(ctx, "amg_reuse", v, vl, 0, 1000000000, &o->amg.reuse); break;
    case 19: st = parse_int(ctx, "auto_solves", v, vl, 0, 1000000, &o->auto_solves); break;
    case 20: st = parse_double(ctx, "max_seconds", v, vl, 0.0, &o->max_seconds); break;
    case 21: st = parse_int(ctx, "amg_agg_interp", v, vl, 0, 100, &o->amg.agg_interp); break;
    case 22: st = parse_double(ctx, "auto_direct_seconds", v, vl, 0.0, &o->auto_direct_seconds); break;
    case 23:
        if (lookup(v, vl, (const char *const[]){"0", "false", "off"}, 3) >= 0) o->ilu_shift = 0;
        else if (lookup(v, vl, (const char *const[]){"1", "true", "on"}, 3) >= 0) o->ilu_shift = 1;
        else return sla__error(ctx, SLA_ERR_ARGUMENT, "option ilu_shift: on or off");
        break;
    case 24: st = parse_double(ctx, "ilut_droptol", v, vl, 0.0, &o->ilut_droptol); break;
    case 25:
        if (!(st = parse_double(ctx, "ilut_fill", v, vl, 0.0, &o->ilut_fill)) &&
            o->ilut_fill > 1e6)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "option ilut_fill: must lie in [0, 1e6]");
        break;
    case 26:
        if (!(st = parse_double(ctx, "ilut_pivot", v, vl, 0.0, &o->ilut_pivot)) &&
            o->ilut_pivot > 1.0)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "option ilut_pivot: must lie in [0, 1]");
        break;
    case 27: {
        int k = lookup(v, vl, (const char *const[]){"auto", "on", "off"}, 3);
        if (k < 0) return sla__error(ctx, SLA_ERR_ARGUMENT, "option equilibrate: auto, on or off");
        o->equilibrate = k; /* SLA_EQUILIBRATE_AUTO, _ON, _OFF in that order */
        break;
    }
    case 28: {
        static const char *const reuse_names[] = {"interpolation", "full", "none"};
        int r = lookup(v, vl, reuse_names, 3);
        if (r < 0)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "option saamg_reuse: interpolation, full or none%s",
                              sla__suggest(hint, sizeof hint, v, vl, reuse_names, 3, false));
        o->saamg_reuse = r;
        break;
    }
    }
    return st;
}

sla_status sla_solver_options_parse(sla_ctx *ctx, const char *str, sla_solver_options *o)
{
    if (!str || !o) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_options_parse: NULL argument");
    sla_solver_options tmp = *o; /* all or nothing */
    const char *s = str;
    while (*s) {
        while (*s == ' ' || *s == ',') s++;
        if (!*s) break;
        const char *end = s;
        while (*end && *end != ',') end++;
        const char *eq = memchr(s, '=', (size_t)(end - s));
        if (!eq)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "option '%.*s' has no '=value'", (int)(end - s), s);
        const char *ke = eq;
        while (ke > s && ke[-1] == ' ') ke--;
        const char *v = eq + 1, *ve = end;
        while (v < ve && *v == ' ') v++;
        while (ve > v && ve[-1] == ' ') ve--;
        sla_status st = parse_pair(ctx, s, (size_t)(ke - s), v, (size_t)(ve - v), &tmp);
        if (st) return st;
        s = end;
    }
    *o = tmp;
    return sla__ok(ctx, SLA_OK);
}
