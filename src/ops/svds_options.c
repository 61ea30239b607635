/* Option strings for the truncated SVD: "key=value,key=value" parsed into
 * sla_svds_options in the manner of sla_eigsh_options_parse (the string
 * starts from the struct's current contents, an unknown key is refused
 * naming the nearest valid one, every value is range-checked, and a failed
 * parse leaves the struct untouched), with the defaults and the names of
 * `which`. */
#include "sla/svd.h"
#include "ops_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

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

static bool same(const char *s, size_t len, const char *name, bool nocase)
{
    if (strlen(name) != len) return false;
    for (size_t j = 0; j < len; j++) {
        char a = s[j], b = name[j];
        if (nocase) {
            if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
            if (b >= 'A' && b <= 'Z') b = (char)(b - 'A' + 'a');
        }
        if (a != b) return false;
    }
    return true;
}

/* A finite number in [lo, hi] (lo excluded when lo_open); integer when integral. */
static sla_status get_num(sla_ctx *ctx, const char *key, const char *v, size_t vl, double lo, bool lo_open,
                          double hi, bool integral, double *out)
{
    char buf[64], *end;
    if (vl == 0 || vl >= sizeof buf)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: bad number '%.*s'", key, (int)vl, v);
    memcpy(buf, v, vl);
    buf[vl] = '\0';
    errno = 0;
    double d = strtod(buf, &end);
    if (*end || errno || !isfinite(d))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: bad number '%s'", key, buf);
    if (integral && d != floor(d))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: '%s' is not an integer", key, buf);
    if ((lo_open ? !(d > lo) : !(d >= lo)) || d > hi)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: %s out of range %s%g, %g]", key, buf,
                          lo_open ? "(" : "[", lo, hi);
    *out = d;
    return SLA_OK;
}

static const char *const svds_keys[] = {"k",            "which",          "tol",       "maxiter",     "ncv",
                                         "memory_limit", "degenerate_tol", "grad_rtol", "grad_maxiter"};

static sla_status svds_pair(sla_ctx *ctx, const char *k, size_t kl, const char *v, size_t vl,
                            sla_svds_options *o)
{
    int key = -1;
    for (size_t i = 0; i < COUNT(svds_keys); i++)
        if (same(k, kl, svds_keys[i], false)) key = (int)i;
    if (key < 0) {
        char hint[512];
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown option '%.*s'%s", (int)kl, k,
                          sla__suggest(hint, sizeof hint, k, kl, svds_keys, (int)COUNT(svds_keys), true));
    }
    if (key == 1) {
        if (same(v, vl, "LM", true)) o->which = SLA_SVDS_LM;
        else if (same(v, vl, "SM", true)) o->which = SLA_SVDS_SM;
        else return sla__error(ctx, SLA_ERR_ARGUMENT, "option which: unknown '%.*s' (LM or SM)", (int)vl, v);
        return SLA_OK;
    }
    double d = 0.0;
    const double big = 9007199254740992.0; /* 2^53 */
    sla_status st;
    switch (key) {
    case 0:
        if (!(st = get_num(ctx, "k", v, vl, 1, false, INT32_MAX, true, &d))) o->k = (sla_int)d;
        return st;
    case 2:
        if (!(st = get_num(ctx, "tol", v, vl, 0, false, HUGE_VAL, false, &d))) o->tol = d;
        return st;
    case 3:
        if (!(st = get_num(ctx, "maxiter", v, vl, 0, false, INT32_MAX, true, &d))) o->maxiter = (sla_int)d;
        return st;
    case 4:
        if (!(st = get_num(ctx, "ncv", v, vl, 0, false, 46340, true, &d))) o->ncv = (sla_int)d;
        return st;
    case 5:
        if (!(st = get_num(ctx, "memory_limit", v, vl, 0, false, HUGE_VAL, false, &d))) o->memory_limit = d;
        return st;
    case 6:
        if (!(st = get_num(ctx, "degenerate_tol", v, vl, 0, false, HUGE_VAL, false, &d))) o->degenerate_tol = d;
        return st;
    case 7:
        if (!(st = get_num(ctx, "grad_rtol", v, vl, 0, true, HUGE_VAL, false, &d))) o->grad_rtol = d;
        return st;
    default:
        if (!(st = get_num(ctx, "grad_maxiter", v, vl, 0, false, big, true, &d))) o->grad_maxiter = (sla_int)d;
        return st;
    }
}

sla_status sla_svds_options_parse(sla_ctx *ctx, const char *str, sla_svds_options *opts)
{
    if (!str || !opts) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_svds_options_parse: NULL argument");
    sla_svds_options o = *opts;
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
        sla_status st = svds_pair(ctx, s, (size_t)(ke - s), v, (size_t)(ve - v), &o);
        if (st) return st;
        s = end;
    }
    *opts = o;
    return sla__ok(ctx, SLA_OK);
}
