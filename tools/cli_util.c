/* cli_util.c — the helpers every command of the `sla` tool shares: the
 * option parser (optdef, parse_args, command_args), reporting a failed
 * library call, reading matrices and dense arrays, JSON report pieces, the
 * "did you mean" through the library's matcher (cli_nearest), and cli_solver_flag,
 * which hands a solver flag to the library's option parser so that the
 * library checks names and ranges. Part of the CLI, not the library. */
#define _POSIX_C_SOURCE 200809L

#include "cli.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers -------------------------------------------------- */

/* Report a failed library call: the context's message (which names the
 * file and line for I/O), else the status name. Returns the exit code. */
int lib_fail(sla_ctx *ctx, sla_status st, const char *what)
{
    const char *msg = sla_ctx_message(ctx);
    if (msg && msg[0]) {
        if (what && !strstr(msg, what))
            err("%s: %s", what, msg);
        else
            err("%s", msg);
    } else {
        err("%s: %s", what ? what : "error", sla_status_name(st));
    }
    return st == SLA_ERR_NOMEM ? EXIT_INTERNAL : EXIT_BAD;
}

void *xcalloc(size_t count, size_t size)
{
    if (count == 0) count = 1;
    void *p = calloc(count, size);
    if (!p) err("out of memory (%zu x %zu bytes)", count, size);
    return p;
}

/* The library's matcher (sla_nearest_name: an abbreviation, or a close
 * edit distance), with a fallback when nothing is close. */
const char *cli_nearest(const char *word, const char *const *names, int count, const char *none)
{
    const char *near = sla_nearest_name(word, names, (size_t)count);
    return near ? near : none;
}

/* A number as JSON (null when not finite). */
void json_number(FILE *f, const char *fmt, double v)
{
    if (isfinite(v))
        fprintf(f, fmt, v);
    else
        fputs("null", f);
}

/* "SLA_CONVERGED_RTOL" -> "converged_rtol". */
void reason_string(sla_reason r, char *buf, size_t len)
{
    const char *name = sla_reason_name(r);
    if (!name) name = "unknown";
    if (strncmp(name, "SLA_", 4) == 0) name += 4;
    if (strncmp(name, "REASON_", 7) == 0) name += 7;
    size_t i = 0;
    for (; name[i] && i + 1 < len; i++) buf[i] = (char)tolower((unsigned char)name[i]);
    buf[i] = '\0';
}

/* ---- option parsing ------------------------------------------------- */

static optdef *find_opt(optdef *defs, int ndefs, const char *name)
{
    for (int i = 0; i < ndefs; i++) {
        if (strcmp(defs[i].name, name) == 0) return &defs[i];
        if (defs[i].alias && strcmp(defs[i].alias, name) == 0) return &defs[i];
    }
    return NULL;
}

const char *optval(optdef *defs, int ndefs, const char *name)
{
    optdef *d = find_opt(defs, ndefs, name);
    return d && d->seen ? d->value : NULL;
}

int optseen(optdef *defs, int ndefs, const char *name)
{
    optdef *d = find_opt(defs, ndefs, name);
    return d ? d->seen : 0;
}

/* Parse argv[start..argc) against defs; positional arguments go to pos.
 * Returns 0 or EXIT_BAD (message printed). */
int parse_args(const char *cmd, int argc, char **argv, int start, optdef *defs,
                      int ndefs, const char **pos, int maxpos, int *npos)
{
    *npos = 0;
    int only_pos = 0;
    for (int i = start; i < argc; i++) {
        const char *a = argv[i];
        if (!only_pos && strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (only_pos || a[0] != '-' || a[1] == '\0') {
            if (*npos >= maxpos) {
                err("%s: unexpected argument '%s' (see 'sla %s --help')", cmd, a, cmd);
                return EXIT_BAD;
            }
            pos[(*npos)++] = a;
            continue;
        }
        char name[64];
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        if (nl >= sizeof name) nl = sizeof name - 1;
        memcpy(name, a, nl);
        name[nl] = '\0';
        optdef *d = find_opt(defs, ndefs, name);
        if (!d) {
            const char *names[64];
            int nn = 0;
            for (int k = 0; k < ndefs && nn < 64; k++) names[nn++] = defs[k].name;
            err("%s: unknown option '%s' (did you mean %s?)", cmd, name,
                cli_nearest(name, names, nn, "--help"));
            return EXIT_BAD;
        }
        if (d->has_arg) {
            if (eq) {
                d->value = eq + 1;
            } else {
                if (i + 1 >= argc) {
                    err("%s: option %s needs a value", cmd, d->name);
                    return EXIT_BAD;
                }
                d->value = argv[++i];
            }
        } else if (eq) {
            err("%s: option %s takes no value", cmd, d->name);
            return EXIT_BAD;
        }
        d->seen = 1;
    }
    return 0;
}

/* The preamble of every `sla CMD`: parse argv[2..) against defs, the
 * positional arguments into pos[0..npos). Returns 1 when the command is
 * over, with its exit status in *rc: --help printed (EXIT_OK), a bad
 * option, or not exactly npos positional arguments (EXIT_BAD, message
 * "CMD: USAGE (see 'sla CMD --help')"). Returns 0 to go on. */
int command_args(const char *cmd, const char *help, const char *usage, int argc,
                        char **argv, optdef *defs, int ndefs, const char **pos, int npos,
                        int *rc)
{
    int got = 0;
    *rc = parse_args(cmd, argc, argv, 2, defs, ndefs, pos, npos, &got);
    if (*rc) return 1;
    if (optseen(defs, ndefs, "--help")) {
        fputs(help, stdout);
        *rc = EXIT_OK;
        return 1;
    }
    if (got != npos) {
        err("%s: %s (see 'sla %s --help')", cmd, usage, cmd);
        *rc = EXIT_BAD;
        return 1;
    }
    return 0;
}

/* --threads T (0, the default: OpenMP's choice). Returns 0 or EXIT_BAD. */
int opt_threads(optdef *defs, int ndefs, long long *threads)
{
    const char *s = optval(defs, ndefs, "--threads");
    *threads = 0;
    return s && parse_int("--threads", s, 0, 4096, threads) ? EXIT_BAD : 0;
}

/* The library's message without its "option KEY: " prefix (the caller
 * names the flag instead). */
static const char *strip_option_prefix(const char *msg, const char *key)
{
    size_t kl = strlen(key);
    if (!strncmp(msg, "option ", 7) && !strncmp(msg + 7, key, kl) && msg[7 + kl] == ':' &&
        msg[8 + kl] == ' ')
        return msg + 9 + kl;
    return msg;
}

int cli_flag_pair(const char *cmd, const char *flag, const char *key, const char *value,
                  char *buf, size_t len)
{
    /* one flag is one key=value: a ',' would smuggle in other options */
    if (strchr(value, ',') || snprintf(buf, len, "%s=%s", key, value) >= (int)len) {
        fprintf(stderr, "sla %s: %s: '%s' is not a valid value\n", cmd, flag, value);
        return EXIT_BAD;
    }
    return 0;
}

int cli_flag_fail(sla_ctx *ctx, sla_status st, const char *cmd, const char *flag,
                  const char *key, const char *value)
{
    const char *msg = sla_ctx_message(ctx);
    if (!msg || !msg[0]) msg = sla_status_name(st);
    fprintf(stderr, "sla %s: %s: %s", cmd, flag, strip_option_prefix(msg, key));
    if (value && !strstr(msg, value)) fprintf(stderr, " (got '%s')", value); /* name it */
    fputc('\n', stderr);
    return st == SLA_ERR_NOMEM ? EXIT_INTERNAL : EXIT_BAD;
}

int cli_solver_flag(sla_ctx *ctx, const char *cmd, optdef *defs, int ndefs, const char *flag,
                    const char *key, sla_solver_options *opts)
{
    const char *v = optval(defs, ndefs, flag);
    char buf[320];
    if (!v) return 0;
    if (cli_flag_pair(cmd, flag, key, v, buf, sizeof buf)) return EXIT_BAD;
    sla_status st = sla_solver_options_parse(ctx, buf, opts);
    if (st != SLA_OK) return cli_flag_fail(ctx, st, cmd, flag, key, v);
    if (!strcmp(key, "precond") && opts->precond == SLA_PRECOND_USER) {
        /* the library's name for C callbacks, which a command line cannot give */
        fprintf(stderr, "sla %s: %s: 'user' needs a callback (the C or Python API)\n", cmd, flag);
        return EXIT_BAD;
    }
    return 0;
}

int cli_solver_flags(sla_ctx *ctx, const char *cmd, optdef *defs, int ndefs,
                     const cli_flag_key *map, int nmap, sla_solver_options *opts)
{
    for (int i = 0; i < nmap; i++) {
        int rc = cli_solver_flag(ctx, cmd, defs, ndefs, map[i].flag, map[i].key, opts);
        if (rc) return rc;
    }
    return 0;
}

int cli_option_flags(const char *cmd, optdef *defs, int ndefs, const cli_flag_key *map, int nmap,
                     cli_options_parse parse, void *opts)
{
    sla_ctx *ctx = NULL;
    int rc = 0;
    for (int i = 0; i < nmap && !rc; i++) {
        const char *v = optval(defs, ndefs, map[i].flag);
        char buf[320];
        if (!v) continue;
        if (!ctx && (rc = new_ctx(0, &ctx))) break;
        if (cli_flag_pair(cmd, map[i].flag, map[i].key, v, buf, sizeof buf)) {
            rc = EXIT_BAD;
            break;
        }
        sla_status st = parse(ctx, buf, opts);
        if (st != SLA_OK) rc = cli_flag_fail(ctx, st, cmd, map[i].flag, map[i].key, v);
    }
    sla_ctx_destroy(&ctx);
    return rc;
}

void json_numbers(FILE *f, const char *fmt, const double *v, sla_int n)
{
    fputc('[', f);
    for (sla_int i = 0; i < n; i++) {
        if (i) fputc(',', f);
        json_number(f, fmt, v[i]);
    }
    fputc(']', f);
}

void print_files_json(int want, int written, const char *note)
{
    if (!want) return;
    printf(",\"files_written\":%s", written ? "true" : "false");
    if (!written) {
        printf(",\"files_note\":");
        cli_json_string(stdout, note);
    }
}

/* ---- names ---------------------------------------------------------- */

int lookup_name(const char *opt, const char *s, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (strcmp(s, names[i]) == 0) return i;
    const char *near = cli_nearest(s, names, count, NULL);
    if (near) {
        err("%s: unknown %s '%s' (did you mean %s?)", opt, opt[0] == '-' ? "value" : "kind", s, near);
    } else {
        char list[512];
        size_t at = 0;
        list[0] = '\0';
        for (int i = 0; i < count && at < sizeof list; i++)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", names[i]);
        err("%s: unknown %s '%s' (one of %s)", opt, opt[0] == '-' ? "value" : "kind", s, list);
    }
    return -1;
}

/* ---- reading inputs ------------------------------------------------- */

int read_matrix(sla_ctx *ctx, const char *path, sla_matrix **A)
{
    sla_status st = sla_mm_read(ctx, path, SLA_F64, A);
    if (st < 0) {
        *A = NULL;
        return lib_fail(ctx, st, path);
    }
    return 0;
}

/* A new context using `threads` threads (0: OpenMP's choice). Returns 0
 * or EXIT_INTERNAL (message printed, *ctx NULL). */
int new_ctx(long long threads, sla_ctx **ctx)
{
    if (sla_ctx_create(ctx) != SLA_OK) {
        err("out of memory");
        return EXIT_INTERNAL;
    }
    sla_ctx_set_threads(*ctx, (int)threads);
    return 0;
}

/* new_ctx and the matrix of path read into it. Returns 0 or the exit
 * status (message printed); either way the caller destroys *ctx and *A
 * (NULL when not made). */
int open_matrix(const char *path, long long threads, sla_ctx **ctx, sla_matrix **A)
{
    *A = NULL;
    int rc = new_ctx(threads, ctx);
    return rc ? rc : read_matrix(*ctx, path, A);
}

/* Read an array file and copy it into a malloc'd buffer. */
int read_dense(sla_ctx *ctx, const char *path, sla_int *nr, sla_int *nc, double **out)
{
    double *data = NULL;
    *out = NULL;
    sla_status st = sla_mm_read_dense(ctx, path, nr, nc, &data);
    if (st < 0) return lib_fail(ctx, st, path);
    size_t count = (size_t)(*nr) * (size_t)(*nc);
    double *copy = xcalloc(count, sizeof *copy);
    if (!copy) {
        sla_free(ctx, data);
        return EXIT_INTERNAL;
    }
    if (count) memcpy(copy, data, count * sizeof *copy);
    sla_free(ctx, data);
    *out = copy;
    return 0;
}


/* Read a complex array file and copy it into a malloc'd buffer. */
int read_dense_z(sla_ctx *ctx, const char *path, sla_int *nr, sla_int *nc, sla_complex **out)
{
    sla_complex *data = NULL;
    *out = NULL;
    sla_status st = sla_mm_read_dense_z(ctx, path, nr, nc, &data);
    if (st < 0) return lib_fail(ctx, st, path);
    size_t count = (size_t)(*nr) * (size_t)(*nc);
    sla_complex *copy = xcalloc(count, sizeof *copy);
    if (!copy) {
        sla_free(ctx, data);
        return EXIT_INTERNAL;
    }
    if (count) memcpy(copy, data, count * sizeof *copy);
    sla_free(ctx, data);
    *out = copy;
    return 0;
}

/* ---- complex values --------------------------------------------------- */

int cli_refuse_complex(const char *cmd, const char *path, const sla_matrix *A)
{
    if (!A || !sla_matrix_is_complex(A)) return 0;
    err("%s: %s holds complex values (%s); %s has no complex path (complex matrices: "
        "solve, info, logdet, eigsh; see docs/complex.md)",
        cmd, path, sla_dtype_name(sla_matrix_dtype(A)), cmd);
    return EXIT_BAD;
}
