/* Solver options: defaults, names, and the "key=value,..." string form
 * (read through the option-string toolkit, core/optstr.c). Method and
 * preconditioner names come from the registry (methods.c). */
#include "methods.h"

#include <math.h>
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

static const char *const tf[] = {"true", "false", "1", "0"};
static const char *const tf_on[] = {"true", "false", "on", "off", "1", "0"};

static sla_status parse_pair(sla_ctx *ctx, const char *k, size_t kl, const char *v, size_t vl, void *opts)
{
    sla_solver_options *o = opts;
    int key = 0, q = 0;
    bool b = false;
    sla_status st = sla__opt_key(ctx, k, kl, keys, COUNT(keys), false, &key);
    if (st) return st;
    const double inf = HUGE_VAL;
    switch (key) {
    case 0:
    case 1: {
        const sla__method_entry *e = NULL;
        if ((st = sla__method_parse(ctx, v, vl, key == 1, false, &e))) return st;
        if (key == 0) o->method = (sla_method)e->desc.value;
        else o->precond = (sla_precond_kind)e->desc.value;
        return SLA_OK;
    }
    case 2: return sla__opt_real(ctx, "rtol", v, vl, 0.0, inf, 0, &o->rtol);
    case 3: return sla__opt_real(ctx, "atol", v, vl, 0.0, inf, 0, &o->atol);
    case 4: return sla__opt_count(ctx, "maxiter", v, vl, 0, 9e18, &o->maxiter);
    case 5: return sla__opt_int(ctx, "restart", v, vl, 1, 100000, &o->restart);
    case 6: return sla__opt_real(ctx, "omega", v, vl, 0.0, 2.0, SLA__OPT_LO_OPEN | SLA__OPT_HI_OPEN, &o->omega);
    case 7:
        if (!(st = sla__opt_bool(ctx, "use_x0", v, vl, tf, 2, false, &b))) o->use_x0 = b;
        return st;
    case 8:
        if (!(st = sla__opt_name(ctx, "ordering", v, vl, ordering_names, COUNT(ordering_names), false, NULL, &q)))
            o->ordering = (sla_ordering)q;
        return st;
    case 9: return sla__opt_real(ctx, "memory_limit", v, vl, 0.0, inf, 0, &o->memory_limit);
    case 10: return sla__opt_real(ctx, "amg_threshold", v, vl, 0.0, 1.0, 0, &o->amg.strong_threshold);
    case 11: return sla__opt_int(ctx, "amg_coarsen", v, vl, 0, 100, &o->amg.coarsen_type);
    case 12: return sla__opt_int(ctx, "amg_interp", v, vl, 0, 100, &o->amg.interp_type);
    case 13: return sla__opt_int(ctx, "amg_pmax", v, vl, 0, 1000000, &o->amg.pmax);
    case 14: return sla__opt_int(ctx, "amg_agg_levels", v, vl, 0, 100, &o->amg.agg_levels);
    case 15: return sla__opt_int(ctx, "amg_relax", v, vl, 0, 100, &o->amg.relax_type);
    case 16: return sla__opt_int(ctx, "amg_cycle", v, vl, 1, 2, &o->amg.cycle_type);
    case 17: return sla__opt_int(ctx, "amg_max_levels", v, vl, 1, 100, &o->amg.max_levels);
    case 18: return sla__opt_int(ctx, "amg_reuse", v, vl, 0, 1000000000, &o->amg.reuse);
    case 19: return sla__opt_int(ctx, "auto_solves", v, vl, 0, 1000000, &o->auto_solves);
    case 20: return sla__opt_real(ctx, "max_seconds", v, vl, 0.0, inf, 0, &o->max_seconds);
    case 21: return sla__opt_int(ctx, "amg_agg_interp", v, vl, 0, 100, &o->amg.agg_interp);
    case 22: return sla__opt_real(ctx, "auto_direct_seconds", v, vl, 0.0, inf, 0, &o->auto_direct_seconds);
    case 23:
        if (!(st = sla__opt_bool(ctx, "ilu_shift", v, vl, tf_on, 3, false, &b))) o->ilu_shift = b;
        return st;
    case 24: return sla__opt_real(ctx, "ilut_droptol", v, vl, 0.0, inf, 0, &o->ilut_droptol);
    case 25: return sla__opt_real(ctx, "ilut_fill", v, vl, 0.0, 1e6, 0, &o->ilut_fill);
    case 26: return sla__opt_real(ctx, "ilut_pivot", v, vl, 0.0, 1.0, 0, &o->ilut_pivot);
    case 27: {
        static const char *const eq_names[] = {"auto", "on", "off"}; /* SLA_EQUILIBRATE_AUTO, _ON, _OFF */
        if (!(st = sla__opt_name(ctx, "equilibrate", v, vl, eq_names, 3, false, NULL, &q))) o->equilibrate = q;
        return st;
    }
    default: {
        static const char *const reuse_names[] = {"interpolation", "full", "none"};
        if (!(st = sla__opt_name(ctx, "saamg_reuse", v, vl, reuse_names, 3, false, NULL, &q))) o->saamg_reuse = q;
        return st;
    }
    }
}

sla_status sla_solver_options_parse(sla_ctx *ctx, const char *str, sla_solver_options *o)
{
    sla_solver_options tmp; /* all or nothing */
    return sla__opt_parse(ctx, "sla_solver_options_parse", str, o, &tmp, sizeof tmp, parse_pair);
}
