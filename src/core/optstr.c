/* Option strings: the one reader of "key=value,key=value" text behind every
 * sla_*_options_parse. It splits the string into items (spaces around keys
 * and values ignored, empty items skipped, an item without '=' refused),
 * applies them to a copy of the options so that a failed parse leaves the
 * caller's struct as it was (where the parser is all or nothing), looks
 * keys up in the parser's table of fields (an unknown one is refused naming
 * the nearest valid key), and reads each value by its field's kind (a real
 * number in a range, an integer, a 64-bit seed, a boolean, a name from a
 * list, nested solver options behind a prefix) with messages that start
 * "option KEY:" and name the value. */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the string ------------------------------------------------------------ */

static sla_status apply(sla_ctx *ctx, const sla__opt_table *t, const char *k, size_t kl, const char *v, size_t vl,
                        void *opts);

/* Split str and apply each pair through t (opts is the struct being filled). */
static sla_status each_pair(sla_ctx *ctx, const char *str, const sla__opt_table *t, void *opts)
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
        sla_status st = apply(ctx, t, s, (size_t)(ke - s), v, (size_t)(ve - v), opts);
        if (st) return st;
        s = end;
    }
    return SLA_OK;
}

sla_status sla__opt_parse(sla_ctx *ctx, const char *fname, const char *str, void *opts, size_t size,
                          bool all_or_nothing, const sla__opt_table *t)
{
    union {
        max_align_t align;
        unsigned char bytes[SLA__OPT_MAX_SIZE];
    } scratch;
    if (!str || !opts) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: NULL argument", fname);
    if (all_or_nothing && size > sizeof scratch)
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "%s: options of %zu bytes, over SLA__OPT_MAX_SIZE", fname, size);
    void *work = all_or_nothing ? memcpy(scratch.bytes, opts, size) : opts;
    sla_status st = each_pair(ctx, str, t, work);
    if (st) return st;
    if (all_or_nothing) memcpy(opts, scratch.bytes, size);
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

const char *sla__opt_nearest(const char *s, size_t len, const char *const *names, int count)
{
    char word[64];
    if (snprintf(word, sizeof word, "%.*s", (int)len, s) >= (int)sizeof word) return NULL;
    return sla_nearest_name(word, names, (size_t)count);
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
    char list[512];
    size_t at = (size_t)snprintf(list, sizeof list, "%s%s", what ? what : "", what ? ": " : "");
    for (int j = 0; j < count && at < sizeof list; j++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", j == 0 ? "" : j + 1 < count ? ", " : " or ",
                               names[j]);
    const char *near = sla__opt_nearest(v, vl, names, count);
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

/* ---- the table ------------------------------------------------------------ */

/* One pair: nested solver options, or the field named k read by its kind. */
static sla_status apply(sla_ctx *ctx, const sla__opt_table *t, const char *k, size_t kl, const char *v, size_t vl,
                        void *opts)
{
    char *base = opts;
    if (t->nested) {
        size_t pl = strlen(t->nested);
        if (kl > pl && strncmp(k, t->nested, pl) == 0)
            return sla__opt_solver(ctx, k, kl, pl, v, vl, (sla_solver_options *)(void *)(base + t->nested_at));
    }
    const char *names[SLA__OPT_MAX_FIELDS];
    for (int j = 0; j < t->count && j < SLA__OPT_MAX_FIELDS; j++) names[j] = t->fields[j].key;
    int i = sla__opt_find(k, kl, names, t->count, t->nocase);
    if (i < 0) {
        if (t->unknown) return t->unknown(ctx, k, kl, names, t->count);
        char hint[512];
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown option '%.*s'%s", (int)kl, k,
                          sla__suggest(hint, sizeof hint, k, kl, names, t->count, true));
    }
    const sla__opt_field *f = &t->fields[i];
    void *at = base + f->at;
    sla_int n = 0;
    int c = 0;
    sla_status st = SLA_OK;
    switch (f->kind) {
    case SLA__OPT_OTHER: return t->other ? t->other(ctx, i, v, vl, opts) : SLA_OK;
    case SLA__OPT_REAL: return sla__opt_real(ctx, f->key, v, vl, f->lo, f->hi, f->open, at);
    case SLA__OPT_COUNT: return sla__opt_count(ctx, f->key, v, vl, f->lo, f->hi, at);
    case SLA__OPT_INT:
        if (!(st = sla__opt_count(ctx, f->key, v, vl, f->lo, f->hi, &n))) *(int *)at = (int)n;
        return st;
    case SLA__OPT_SEED: return sla__opt_u64(ctx, f->key, v, vl, at);
    case SLA__OPT_BOOL: return sla__opt_bool(ctx, f->key, v, vl, t->bools, t->nbools, t->values_nocase, at);
    case SLA__OPT_CHOICE:
        if (!(st = sla__opt_name(ctx, f->key, v, vl, f->names, f->nnames, t->values_nocase, NULL, &c)))
            *(int *)at = c;
        return st;
    }
    return st;
}

/* ---- nested solver options ------------------------------------------------ */

sla_status sla__opt_solver(sla_ctx *ctx, const char *k, size_t kl, size_t pl, const char *v, size_t vl,
                           sla_solver_options *o)
{
    char buf[256];
    if (kl - pl + vl + 2 > sizeof buf)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "option %.*s: too long", (int)kl, k);
    size_t sub = kl - pl; /* (buf + kl - pl would step past buf first when kl > 256) */
    memcpy(buf, k + pl, sub);
    buf[sub] = '=';
    memcpy(buf + sub + 1, v, vl);
    buf[sub + 1 + vl] = '\0';
    sla_status st = sla_solver_options_parse(ctx, buf, o);
    if (st) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s", ctx ? sla_ctx_message(ctx) : "");
        return sla__error(ctx, st, "option %.*s: %s", (int)kl, k, msg);
    }
    return SLA_OK;
}
