/* Option strings: the one reader of "key=value,key=value" text behind every
 * sla_*_options_parse. It splits the string into items (spaces around keys
 * and values ignored, empty items skipped, an item without '=' refused),
 * applies them to a copy of the options so that a failed parse leaves the
 * caller's struct as it was, looks keys up in a table (an unknown one is
 * refused naming the nearest valid key), and reads typed values (a real
 * number in a range, an integer, a 64-bit seed, a boolean, a name from a
 * list, nested solver options behind a prefix) with messages that start
 * "option KEY:" and name the value. */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the string ------------------------------------------------------------ */

/* Split str and hand each pair to f (opts is the struct being filled). */
static sla_status each_pair(sla_ctx *ctx, const char *str, sla__opt_pair_fn f, void *opts)
{
    const char *s = str;
    while (*s) {
        while (*s == ' ' || *s == ',') s++;
        if (!*s) break;
        const char *end = s;
        while (*end && *end != ',') end++;
        const char *eq = memchr(s, '=', (size_t)(end - s));
        if (!eq)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "option '%.*s' has no '=value' (no value given)",
                              (int)(end - s), s);
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

sla_status sla__opt_parse(sla_ctx *ctx, const char *fname, const char *str, void *opts, void *tmp,
                          size_t size, sla__opt_pair_fn f)
{
    if (!str || !opts) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: NULL argument", fname);
    if (tmp) memcpy(tmp, opts, size);
    sla_status st = each_pair(ctx, str, f, tmp ? tmp : opts);
    if (st) return st;
    if (tmp) memcpy(opts, tmp, size);
    return sla__ok(ctx, SLA_OK);
}

/* ---- names ------------------------------------------------------------------ */

int sla__opt_find(const char *s, size_t len, const char *const *names, int count, bool nocase)
{
    for (int i = 0; i < count; i++) {
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
        if (j == len) return i;
    }
    return -1;
}

sla_status sla__opt_key(sla_ctx *ctx, const char *k, size_t kl, const char *const *keys, int count, bool nocase,
                        int *key)
{
    *key = sla__opt_find(k, kl, keys, count, nocase);
    if (*key >= 0) return SLA_OK;
    char hint[512];
    return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown option '%.*s'%s", (int)kl, k,
                      sla__suggest(hint, sizeof hint, k, kl, keys, count, true));
}

sla_status sla__opt_name(sla_ctx *ctx, const char *key, const char *v, size_t vl, const char *const *names,
                         int count, bool nocase, const char *what, int *out)
{
    int i = sla__opt_find(v, vl, names, count, nocase);
    if (i >= 0) {
        *out = i;
        return SLA_OK;
    }
    /* "(what: a, b or c; did you mean 'b'?)" */
    char list[512], word[64];
    size_t at = (size_t)snprintf(list, sizeof list, "%s%s", what ? what : "", what ? ": " : "");
    for (int j = 0; j < count && at < sizeof list; j++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", j == 0 ? "" : j + 1 < count ? ", " : " or ",
                               names[j]);
    const char *near = NULL;
    if (vl < sizeof word) {
        memcpy(word, v, vl);
        word[vl] = '\0';
        near = sla_nearest_name(word, names, (size_t)count);
    }
    if (near && at < sizeof list) snprintf(list + at, sizeof list - at, "; did you mean '%s'?", near);
    return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: unknown value '%.*s' (%s)", key, (int)vl, v, list);
}

/* ---- values ----------------------------------------------------------------- */

sla_status sla__opt_real(sla_ctx *ctx, const char *key, const char *v, size_t vl, double lo, double hi, int open,
                         double *out)
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
    const bool lo_open = open & SLA__OPT_LO_OPEN, hi_open = open & SLA__OPT_HI_OPEN;
    if ((lo_open ? !(d > lo) : !(d >= lo)) || (hi_open ? !(d < hi) : !(d <= hi))) {
        if (hi < HUGE_VAL)
            return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: %s out of range %s%g, %g%s", key, buf,
                              lo_open ? "(" : "[", lo, hi, hi_open ? ")" : "]");
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: %s must be %s %g", key, buf, lo_open ? ">" : ">=",
                          lo);
    }
    *out = d;
    return SLA_OK;
}

sla_status sla__opt_count(sla_ctx *ctx, const char *key, const char *v, size_t vl, double lo, double hi,
                          sla_int *out)
{
    double d = 0.0;
    sla_status st = sla__opt_real(ctx, key, v, vl, -HUGE_VAL, HUGE_VAL, 0, &d);
    if (st) return st;
    if (d != floor(d) || d < lo || d > hi)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: '%.*s' is not an integer in [%.0f, %.0f]", key,
                          (int)vl, v, lo, hi);
    *out = (sla_int)d;
    return SLA_OK;
}

sla_status sla__opt_int(sla_ctx *ctx, const char *key, const char *v, size_t vl, int lo, int hi, int *out)
{
    sla_int n = 0;
    sla_status st = sla__opt_count(ctx, key, v, vl, lo, hi, &n);
    if (!st) *out = (int)n;
    return st;
}

sla_status sla__opt_u64(sla_ctx *ctx, const char *key, const char *v, size_t vl, uint64_t *out)
{
    char buf[32], *end;
    bool ok = vl > 0 && vl < sizeof buf;
    for (size_t i = 0; ok && i < vl; i++) ok = v[i] >= '0' && v[i] <= '9';
    unsigned long long u = 0;
    if (ok) {
        memcpy(buf, v, vl);
        buf[vl] = '\0';
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

sla_status sla__opt_bool(sla_ctx *ctx, const char *key, const char *v, size_t vl, const char *const *pairs,
                         int npairs, bool nocase, bool *out)
{
    int i = sla__opt_find(v, vl, pairs, 2 * npairs, nocase);
    if (i >= 0) {
        *out = i % 2 == 0;
        return SLA_OK;
    }
    char list[256];
    size_t at = 0;
    list[0] = '\0';
    for (int j = 0; j < npairs && at < sizeof list; j++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%s or %s", j ? ", " : "", pairs[2 * j],
                               pairs[2 * j + 1]);
    return sla__error(ctx, SLA_ERR_ARGUMENT, "option %s: '%.*s' is not a boolean (%s)", key, (int)vl, v, list);
}

/* ---- nested solver options ------------------------------------------------ */

bool sla__opt_prefixed(const char *k, size_t kl, const char *prefix)
{
    size_t pl = strlen(prefix);
    return kl > pl && strncmp(k, prefix, pl) == 0;
}

sla_status sla__opt_solver(sla_ctx *ctx, const char *k, size_t kl, size_t pl, const char *v, size_t vl,
                           sla_solver_options *o)
{
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
