/* Option strings for the eigensolvers and the stochastic log-determinant:
 * "key=value,key=value" parsed into sla_eigsh_options, sla_lobpcg_options
 * and sla_slq_options, in the manner of sla_solver_options_parse (the
 * string starts from the struct's current contents, an unknown key is
 * refused naming the nearest valid one, every value is range-checked, and
 * a failed parse leaves the struct untouched). The nested solver options
 * (lobpcg's preconditioner, slq's gradient solves) take the solver keys
 * behind a prefix, "pc.precond=ic0" or "solver.rtol=1e-8", and go through
 * sla_solver_options_parse. */
#include "ops_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- nearest name (for "did you mean") -------------------------------------- */

/* Index of s[0..len) in names (exact, or ignoring ASCII case), -1 if none. */
static int find_name(const char *s, size_t len, const char *const *names, size_t count, bool nocase)
{
    for (size_t i = 0; i < count; i++) {
        if (strlen(names[i]) != len) continue;
        size_t j = 0;
        for (; j < len; j++) {
            char a = s[j], b = names[i][j];
            if (nocase) {
                if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
                if (b >= 'A' && b <= 'Z') b = (char)(b - 'A' + 'a');
            }
            if (a != b) break;
        }
        if (j == len) return (int)i;
    }
    return -1;
}

/* ---- values ------------------------------------------------------------------- */

/* A value as a NUL-terminated string in buf; false when it is empty or too long. */
static bool value_text(const char *v, size_t vl, char *buf, size_t cap)
{
    if (vl == 0 || vl >= cap) return false;
    memcpy(buf, v, vl);
    buf[vl] = '\0';
    return true;
}

/* A finite number d with lo <= d <= hi (lo < d when lo_open). */
static sla_status get_real(sla_ctx *ctx, const char *key, const char *v, size_t vl, double lo, bool lo_open,
                           double hi, double *out)
{
    char buf[64], *end;
    if (!value_text(v, vl, buf, sizeof buf))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: bad number '%.*s'", key, (int)vl, v);
    errno = 0;
    double d = strtod(buf, &end);
    if (*end || errno || !isfinite(d))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: bad number '%s'", key, buf);
    if ((lo_open ? !(d > lo) : !(d >= lo)) || d > hi) {
        if (hi < HUGE_VAL)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: %s out of range %s%g, %g]", key, buf,
                              lo_open ? "(" : "[", lo, hi);
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: %s must be %s %g", key, buf,
                          lo_open ? ">" : ">=", lo);
    }
    *out = d;
    return SLA_OK;
}

/* An integer in [lo, hi] (|hi| below 2^53, so the double is exact). */
static sla_status get_count(sla_ctx *ctx, const char *key, const char *v, size_t vl, double lo, double hi,
                            sla_int *out)
{
    double d = 0.0;
    sla_status st = get_real(ctx, key, v, vl, -HUGE_VAL, false, HUGE_VAL, &d);
    if (st) return st;
    if (d != floor(d) || d < lo || d > hi)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: '%.*s' is not an integer in [%.0f, %.0f]", key,
                          (int)vl, v, lo, hi);
    *out = (sla_int)d;
    return SLA_OK;
}

static sla_status get_bool(sla_ctx *ctx, const char *key, const char *v, size_t vl, bool *out)
{
    static const char *const no[] = {"0", "false", "off", "no"}, *const yes[] = {"1", "true", "on", "yes"};
    if (find_name(v, vl, no, COUNT(no), true) >= 0) *out = false;
    else if (find_name(v, vl, yes, COUNT(yes), true) >= 0) *out = true;
    else return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: '%.*s' is not true or false", key, (int)vl, v);
    return SLA_OK;
}

/* A seed: a decimal integer in [0, 2^64). */
static sla_status get_seed(sla_ctx *ctx, const char *key, const char *v, size_t vl, uint64_t *out)
{
    char buf[32], *end;
    bool ok = value_text(v, vl, buf, sizeof buf);
    for (size_t i = 0; ok && i < vl; i++) ok = buf[i] >= '0' && buf[i] <= '9';
    unsigned long long u = 0;
    if (ok) {
        errno = 0;
        u = strtoull(buf, &end, 10);
        ok = !*end && !errno;
    }
    if (!ok)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: '%.*s' is not an integer in [0, 2^64)", key,
                          (int)vl, v);
    *out = (uint64_t)u;
    return SLA_OK;
}

/* "prefix<key>=value" into the nested solver options, through
 * sla_solver_options_parse; its message is kept, with the full key. */
static sla_status get_nested(sla_ctx *ctx, const char *prefix, const char *k, size_t kl, const char *v,
                             size_t vl, sla_solver_options *o)
{
    const size_t pl = strlen(prefix);
    char buf[256];
    if (kl - pl + vl + 2 > sizeof buf)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %.*s: too long", (int)kl, k);
    memcpy(buf, k + pl, kl - pl);
    buf[kl - pl] = '=';
    memcpy(buf + kl - pl + 1, v, vl);
    buf[kl - pl + 1 + vl] = '\0';
    sla_status st = sla_solver_options_parse(ctx, buf, o);
    if (st) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s", ctx ? sla_ctx_message(ctx) : "");
        return sla__error(ctx, st, "option %.*s: %s", (int)kl, k, msg);
    }
    return SLA_OK;
}

static bool has_prefix(const char *k, size_t kl, const char *prefix)
{
    size_t pl = strlen(prefix);
    return kl > pl && strncmp(k, prefix, pl) == 0;
}

/* ---- the string --------------------------------------------------------------- */

typedef sla_status (*pair_fn)(sla_ctx *ctx, const char *k, size_t kl, const char *v, size_t vl, void *opts);

/* Split "key=value,key=value" (spaces around keys and values ignored,
 * empty items skipped) and hand each pair to f. */
static sla_status parse_pairs(sla_ctx *ctx, const char *str, pair_fn f, void *opts)
{
    const char *s = str;
    while (*s) {
        while (*s == ' ' || *s == ',') s++;
        if (!*s) break;
        const char *end = s;
        while (*end && *end != ',') end++;
        const char *eq = memchr(s, '=', (size_t)(end - s));
        if (!eq) return sla__error(ctx, SLA_ERR_ARGUMENT, "option '%.*s' has no '=value'", (int)(end - s), s);
        const char *ke = eq, *v = eq + 1, *ve = end;
        while (ke > s && ke[-1] == ' ') ke--;
        while (v < ve && *v == ' ') v++;
        while (ve > v && ve[-1] == ' ') ve--;
        sla_status st = f(ctx, s, (size_t)(ke - s), v, (size_t)(ve - v), opts);
        if (st) return st;
        s = end;
    }
    return SLA_OK;
}

static sla_status unknown_key(sla_ctx *ctx, const char *k, size_t kl, const char *const *keys, size_t count)
{
    char hint[512];
    return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown option '%.*s'%s", (int)kl, k,
                      sla__suggest(hint, sizeof hint, k, kl, keys, (int)count, true));
}

/* ---- eigsh -------------------------------------------------------------------- */

static const char *const eigsh_keys[] = {"k", "which", "shift_invert", "sigma", "tol", "ncv", "maxiter",
                                         "factor_method", "memory_limit", "degenerate_tol", "grad_rtol",
                                         "grad_maxiter"};

static sla_status eigsh_pair(sla_ctx *ctx, const char *k, size_t kl, const char *v, size_t vl, void *opts)
{
    sla_eigsh_options *o = opts;
    int key = find_name(k, kl, eigsh_keys, COUNT(eigsh_keys), false);
    sla_status st = SLA_OK;
    switch (key) {
    case 0: st = get_count(ctx, "k", v, vl, 1, INT32_MAX, &o->k); break;
    case 1: {
        static const char *const which[] = {"LA", "SA", "LM", "SM"}; /* sla_eig_which order */
        int w = find_name(v, vl, which, COUNT(which), true);
        if (w < 0)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "option which: unknown '%.*s' (LA, SA, LM or SM)", (int)vl,
                              v);
        o->which = (sla_eig_which)w;
        break;
    }
    case 2: st = get_bool(ctx, "shift_invert", v, vl, &o->shift_invert); break;
    case 3:
        st = get_real(ctx, "sigma", v, vl, -HUGE_VAL, false, HUGE_VAL, &o->sigma);
        if (!st) o->shift_invert = true;
        break;
    case 4: st = get_real(ctx, "tol", v, vl, 0.0, false, HUGE_VAL, &o->tol); break;
    case 5: st = get_count(ctx, "ncv", v, vl, 0, 46340, &o->ncv); break;
    case 6: st = get_count(ctx, "maxiter", v, vl, 0, INT32_MAX, &o->maxiter); break;
    case 7: {
        /* auto and the direct methods, by their sla_method_name */
        static const sla_method ms[] = {SLA_METHOD_AUTO, SLA_METHOD_CHOLESKY, SLA_METHOD_LDLT, SLA_METHOD_LU,
                                        SLA_METHOD_UMFPACK, SLA_METHOD_KLU, SLA_METHOD_SUPERLU};
        const char *names[COUNT(ms)];
        for (size_t i = 0; i < COUNT(ms); i++) names[i] = sla_method_name(ms[i]);
        int m = find_name(v, vl, names, COUNT(ms), false);
        if (m < 0) {
            char hint[512];
            return sla__error(ctx, SLA_ERR_ARGUMENT,
                              "option factor_method: unknown method '%.*s'%s (auto or a direct method)",
                              (int)vl, v, sla__suggest(hint, sizeof hint, v, vl, names, (int)COUNT(ms), false));
        }
        o->factor_method = ms[m];
        break;
    }
    case 8: st = get_real(ctx, "memory_limit", v, vl, 0.0, false, HUGE_VAL, &o->memory_limit); break;
    case 9: st = get_real(ctx, "degenerate_tol", v, vl, 0.0, false, HUGE_VAL, &o->degenerate_tol); break;
    case 10: st = get_real(ctx, "grad_rtol", v, vl, 0.0, true, HUGE_VAL, &o->grad_rtol); break;
    case 11: st = get_count(ctx, "grad_maxiter", v, vl, 0, 9e15, &o->grad_maxiter); break;
    default: return unknown_key(ctx, k, kl, eigsh_keys, COUNT(eigsh_keys));
    }
    return st;
}

sla_status sla_eigsh_options_parse(sla_ctx *ctx, const char *str, sla_eigsh_options *opts)
{
    if (!str || !opts) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_eigsh_options_parse: NULL argument");
    sla_eigsh_options tmp = *opts; /* all or nothing */
    sla_status st = parse_pairs(ctx, str, eigsh_pair, &tmp);
    if (st) return st;
    *opts = tmp;
    return sla__ok(ctx, SLA_OK);
}

/* ---- LOBPCG ------------------------------------------------------------------- */

/* the nearest-name candidates: the keys and the commonest nested one */
static const char *const lobpcg_keys[] = {"k", "tol", "maxiter", "seed", "pc.precond"};

static sla_status lobpcg_pair(sla_ctx *ctx, const char *k, size_t kl, const char *v, size_t vl, void *opts)
{
    sla_lobpcg_options *o = opts;
    if (has_prefix(k, kl, "pc.")) return get_nested(ctx, "pc.", k, kl, v, vl, &o->pc);
    switch (find_name(k, kl, lobpcg_keys, 4, false)) {
    case 0: return get_count(ctx, "k", v, vl, 1, 10000, &o->k);
    case 1: return get_real(ctx, "tol", v, vl, 0.0, true, HUGE_VAL, &o->tol);
    case 2: return get_count(ctx, "maxiter", v, vl, 1, INT32_MAX, &o->maxiter);
    case 3: return get_seed(ctx, "seed", v, vl, &o->seed);
    default: return unknown_key(ctx, k, kl, lobpcg_keys, COUNT(lobpcg_keys));
    }
}

sla_status sla_lobpcg_options_parse(sla_ctx *ctx, const char *str, sla_lobpcg_options *opts)
{
    if (!str || !opts) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_lobpcg_options_parse: NULL argument");
    sla_lobpcg_options tmp = *opts;
    sla_status st = parse_pairs(ctx, str, lobpcg_pair, &tmp);
    if (st) return st;
    *opts = tmp;
    return sla__ok(ctx, SLA_OK);
}

/* ---- SLQ ---------------------------------------------------------------------- */

static const char *const slq_keys[] = {"probes", "lanczos_steps", "seed", "solver.method", "solver.precond",
                                       "solver.rtol"};

static sla_status slq_pair(sla_ctx *ctx, const char *k, size_t kl, const char *v, size_t vl, void *opts)
{
    sla_slq_options *o = opts;
    if (has_prefix(k, kl, "solver.")) return get_nested(ctx, "solver.", k, kl, v, vl, &o->solver);
    switch (find_name(k, kl, slq_keys, 3, false)) {
    case 0: return get_count(ctx, "probes", v, vl, 1, 100000000, &o->probes);
    case 1: return get_count(ctx, "lanczos_steps", v, vl, 1, 10000, &o->lanczos_steps);
    case 2: return get_seed(ctx, "seed", v, vl, &o->seed);
    default: return unknown_key(ctx, k, kl, slq_keys, COUNT(slq_keys));
    }
}

sla_status sla_slq_options_parse(sla_ctx *ctx, const char *str, sla_slq_options *opts)
{
    if (!str || !opts) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_slq_options_parse: NULL argument");
    sla_slq_options tmp = *opts;
    sla_status st = parse_pairs(ctx, str, slq_pair, &tmp);
    if (st) return st;
    *opts = tmp;
    return sla__ok(ctx, SLA_OK);
}
