/* Solver options: defaults, names, and the "key=value,..." string form
 * (read through the option-string toolkit, core/optstr.c). Method and
 * preconditioner names come from the registry (methods.c). */
#include "methods.h"

#include <math.h>
#include <stddef.h>
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
#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

size_t sla_solver_options_size(void) { return sizeof(sla_solver_options); }

void sla_solver_options_set_monitor(sla_solver_options *o, sla_monitor_fn fn, void *user, sla_int every)
{
    if (!o) return;
    o->monitor = fn;
    o->monitor_user = user;
    o->monitor_every = every;
}

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

_Static_assert(sizeof(sla_ordering) == sizeof(int), "a CHOICE field is int-sized");

static const char *const equilibrate_names[] = {"auto", "on", "off"}; /* SLA_EQUILIBRATE_AUTO, _ON, _OFF */
static const char *const reuse_names[] = {"interpolation", "full", "none", "hierarchy"};
static const char *const smoother_names[] = {"gs", "cheby", "spai0"};

/* The keys: the fields read by the toolkit, OTHER ones by parse_other. */
#define F(ky, mb, kd, l, h, op) \
    {.key = ky, .kind = SLA__OPT_##kd, .at = offsetof(sla_solver_options, mb), .lo = l, .hi = h, .open = op}
#define C(nm, list) \
    {.key = #nm, .kind = SLA__OPT_CHOICE, .at = offsetof(sla_solver_options, nm), .names = list, .nnames = COUNT(list)}
#define INF HUGE_VAL
static const sla__opt_field fields[] = {
    F("method", method, OTHER, 0, 0, 0),
    F("precond", precond, OTHER, 0, 0, 0),
    F("rtol", rtol, REAL, 0, INF, 0),
    F("atol", atol, REAL, 0, INF, 0),
    F("maxiter", maxiter, COUNT, 0, 9e18, 0),
    F("restart", restart, INT, 1, 100000, 0),
    F("omega", omega, REAL, 0, 2, SLA__OPT_LO_OPEN | SLA__OPT_HI_OPEN),
    F("use_x0", use_x0, OTHER, 0, 0, 0),
    C(ordering, ordering_names),
    F("memory_limit", memory_limit, REAL, 0, INF, 0),
    F("amg_threshold", amg.strong_threshold, REAL, 0, 1, 0),
    F("amg_coarsen", amg.coarsen_type, INT, 0, 100, 0),
    F("amg_interp", amg.interp_type, INT, 0, 100, 0),
    F("amg_pmax", amg.pmax, INT, 0, 1000000, 0),
    F("amg_agg_levels", amg.agg_levels, INT, 0, 100, 0),
    F("amg_relax", amg.relax_type, INT, 0, 100, 0),
    F("amg_cycle", amg.cycle_type, INT, 1, 2, 0),
    F("amg_max_levels", amg.max_levels, INT, 1, 100, 0),
    F("amg_reuse", amg.reuse, INT, 0, 1000000000, 0),
    F("auto_solves", auto_solves, INT, 0, 1000000, 0),
    F("max_seconds", max_seconds, REAL, 0, INF, 0),
    F("amg_agg_interp", amg.agg_interp, INT, 0, 100, 0),
    F("auto_direct_seconds", auto_direct_seconds, REAL, 0, INF, 0),
    F("ilu_shift", ilu_shift, OTHER, 0, 0, 0),
    F("ilut_droptol", ilut_droptol, REAL, 0, INF, 0),
    F("ilut_fill", ilut_fill, REAL, 0, 1e6, 0),
    F("ilut_pivot", ilut_pivot, REAL, 0, 1, 0),
    C(equilibrate, equilibrate_names),
    C(saamg_reuse, reuse_names),
    C(saamg_smoother, smoother_names),
    F("saamg_theta", saamg_theta, REAL, 0, 1, SLA__OPT_HI_OPEN),
};
#undef F
#undef C
#undef INF

/* method and precond (by the registry), use_x0 and ilu_shift (their own
 * spellings of a boolean) */
static sla_status parse_other(sla_ctx *ctx, int field, const char *v, size_t vl, void *opts)
{
    static const char *const tf[] = {"true", "false", "1", "0"};
    static const char *const tf_on[] = {"true", "false", "on", "off", "1", "0"};
    sla_solver_options *o = opts;
    const sla__method_entry *e = NULL;
    bool b = false;
    sla_status st;
    switch (field) {
    case 0:
    case 1:
        if ((st = sla__method_parse(ctx, v, vl, field == 1, false, &e))) return st;
        if (field == 0) o->method = (sla_method)e->desc.value;
        else o->precond = (sla_precond_kind)e->desc.value;
        return SLA_OK;
    case 7:
        if (!(st = sla__opt_bool(ctx, "use_x0", v, vl, tf, 2, false, &b))) o->use_x0 = b;
        return st;
    default:
        if (!(st = sla__opt_bool(ctx, "ilu_shift", v, vl, tf_on, 3, false, &b))) o->ilu_shift = b;
        return st;
    }
}

static const sla__opt_table table = {.fields = fields, .count = COUNT(fields), .other = parse_other};

sla_status sla_solver_options_parse(sla_ctx *ctx, const char *str, sla_solver_options *o)
{
    return sla__opt_parse(ctx, "sla_solver_options_parse", str, o, sizeof *o, true, &table);
}
