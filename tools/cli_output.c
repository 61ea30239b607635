/* cli_output.c — checked, all-or-nothing, atomic output files of the CLI
 * (see cli_output.h). Part of the CLI, not the library. */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700 /* realpath */

#include "cli_output.h"

#include "cli_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int cli_check_name(const char *opt, const char *path)
{
    if (!path) return 0;
    if (!path[0]) {
        err("%s: empty file name", opt);
        return EXIT_BAD;
    }
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            err("%s: the file name contains a control character (byte 0x%02x at offset %zu); "
                "output names may not", opt, *p, (size_t)(p - (const unsigned char *)path));
            return EXIT_BAD;
        }
    }
    return 0;
}

/* The folder part of path ("." when none), malloc'ed. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    char *d = malloc((size_t)(slash - path) + 1);
    if (d) {
        memcpy(d, path, (size_t)(slash - path));
        d[slash - path] = '\0';
    }
    return d;
}

static int oom(void)
{
    err("out of memory");
    return EXIT_INTERNAL;
}

/* The folder must exist and let us create files (the temporary file). */
static int check_dir(const cli_output *o, const char *file)
{
    char *dir = dir_of(file);
    if (!dir) return oom();
    struct stat st;
    int rc = 0;
    if (stat(dir, &st) != 0) {
        err("%s: cannot write %s: folder %s: %s", o->opt, o->path, dir, strerror(errno));
        rc = EXIT_BAD;
    } else if (!S_ISDIR(st.st_mode)) {
        err("%s: cannot write %s: %s is not a folder", o->opt, o->path, dir);
        rc = EXIT_BAD;
    } else if (access(dir, W_OK | X_OK) != 0) {
        err("%s: cannot write %s: folder %s: %s", o->opt, o->path, dir, strerror(errno));
        rc = EXIT_BAD;
    }
    free(dir);
    return rc;
}

static int check_one(cli_output *o)
{
    int rc = cli_check_name(o->opt, o->path);
    if (rc) return rc;
    struct stat st;
    if (stat(o->path, &st) == 0) {
        o->exists = 1;
        o->dev = st.st_dev;
        o->ino = st.st_ino;
        if (S_ISDIR(st.st_mode)) {
            err("%s: %s is a directory", o->opt, o->path);
            return EXIT_BAD;
        }
        if (access(o->path, W_OK) != 0) {
            err("%s: cannot write %s: %s", o->opt, o->path, strerror(errno));
            return EXIT_BAD;
        }
        if (!S_ISREG(st.st_mode)) {
            o->in_place = 1; /* a device or a FIFO */
            return 0;
        }
        if (!(o->target = realpath(o->path, NULL))) {
            if (errno == ENOMEM) return oom();
            err("%s: cannot write %s: %s", o->opt, o->path, strerror(errno));
            return EXIT_BAD;
        }
        return check_dir(o, o->target);
    }
    if (errno != ENOENT) {
        err("%s: cannot write %s: %s", o->opt, o->path, strerror(errno));
        return EXIT_BAD;
    }
    struct stat lst;
    if (lstat(o->path, &lst) == 0) { /* a dangling link: written in place */
        o->in_place = 1;
        return 0;
    }
    if ((rc = check_dir(o, o->path))) return rc;
    /* the resolved folder + the name: "./x.mtx" and "x.mtx" are one file */
    char *dir = dir_of(o->path);
    if (!dir) return oom();
    char *rdir = realpath(dir, NULL);
    if (!rdir) {
        int e = errno;
        if (e == ENOMEM) {
            free(dir);
            return oom();
        }
        err("%s: cannot write %s: folder %s: %s", o->opt, o->path, dir, strerror(e));
        free(dir);
        return EXIT_BAD;
    }
    free(dir);
    const char *slash = strrchr(o->path, '/');
    const char *base = slash ? slash + 1 : o->path;
    size_t len = strlen(rdir) + strlen(base) + 2;
    if ((o->key = malloc(len))) snprintf(o->key, len, "%s/%s", rdir, base);
    free(rdir);
    if (!o->key) return oom();
    if (!base[0] || !strcmp(base, ".") || !strcmp(base, "..")) {
        err("%s: %s is a directory", o->opt, o->path);
        return EXIT_BAD;
    }
    if (!(o->target = strdup(o->path))) return oom();
    return 0;
}

int cli_outputs_check(cli_output *o, int n, const char *const *inputs, int nin)
{
    int rc;
    for (int i = 0; i < n; i++)
        if (o[i].path && (rc = check_one(&o[i]))) return rc;
    for (int i = 0; i < n; i++) {
        if (!o[i].path) continue;
        for (int j = i + 1; j < n; j++) {
            if (!o[j].path) continue;
            int same = o[i].exists && o[j].exists
                           ? o[i].dev == o[j].dev && o[i].ino == o[j].ino && !o[i].in_place
                           : !o[i].exists && !o[j].exists && o[i].key && o[j].key &&
                                 !strcmp(o[i].key, o[j].key);
            if (same) {
                err("%s %s and %s %s name the same file; each output needs its own file",
                    o[i].opt, o[i].path, o[j].opt, o[j].path);
                return EXIT_BAD;
            }
        }
        if (!o[i].exists || o[i].in_place) continue;
        for (int k = 0; k < nin; k++) {
            struct stat st;
            if (!inputs[k] || stat(inputs[k], &st) != 0) continue;
            if (st.st_dev == o[i].dev && st.st_ino == o[i].ino) {
                err("%s %s is the same file as the input %s; refusing to overwrite an input",
                    o[i].opt, o[i].path, inputs[k]);
                return EXIT_BAD;
            }
        }
    }
    return 0;
}

/* The value k of output o as its real and imaginary parts (im 0 for a
 * real output). */
static void out_value(const cli_output *o, sla_int k, double *re, double *im)
{
    if (o->kind == CLI_OUT_DENSE_Z || o->kind == CLI_OUT_PATTERN_Z) {
        const double *p = (const double *)o->zdata + 2 * k; /* re, im interleaved */
        *re = p[0];
        *im = p[1];
    } else {
        *re = o->data[k];
        *im = 0.0;
    }
}

static const char *nonfinite_name(double v) { return isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }

int cli_outputs_nonfinite(const cli_output *o, int n, char *msg, size_t len)
{
    for (int i = 0; i < n; i++) {
        const int z = o[i].kind == CLI_OUT_DENSE_Z || o[i].kind == CLI_OUT_PATTERN_Z;
        const int dense = o[i].kind == CLI_OUT_DENSE || o[i].kind == CLI_OUT_DENSE_Z;
        if (!o[i].path || o[i].kind == CLI_OUT_MATRIX || (z ? !o[i].zdata : !o[i].data)) continue;
        sla_int count = dense ? o[i].nrows * o[i].ncols : sla_matrix_nnz(o[i].A);
        for (sla_int k = 0; k < count; k++) {
            double re, im;
            out_value(&o[i], k, &re, &im);
            if (isfinite(re) && isfinite(im)) continue;
            /* "is inf" for a real value, "has an inf real part" for a complex one */
            char what[48];
            if (!z)
                snprintf(what, sizeof what, "is %s", nonfinite_name(re));
            else if (!isfinite(re))
                snprintf(what, sizeof what, "has a real part %s", nonfinite_name(re));
            else
                snprintf(what, sizeof what, "has an imaginary part %s", nonfinite_name(im));
            if (dense)
                snprintf(msg, len, "%s entry %lld (row %lld, column %lld) %s, not finite",
                         o[i].what, (long long)k, (long long)(k % o[i].nrows),
                         (long long)(k / o[i].nrows), what);
            else
                snprintf(msg, len, "%s stored entry %lld %s, not finite", o[i].what, (long long)k,
                         what);
            return i;
        }
    }
    return -1;
}

/* Report a failed library write of output o to `written` (its stage file
 * or its own path), naming the output's path rather than the stage. */
static int write_fail(sla_ctx *ctx, sla_status st, const cli_output *o, const char *written)
{
    const char *msg = sla_ctx_message(ctx);
    const char *hit = msg && written ? strstr(msg, written) : NULL;
    if (hit && written != o->path)
        err("%s: %.*s%s%s", o->opt, (int)(hit - msg), msg, o->path, hit + strlen(written));
    else
        err("%s: %s", o->opt, msg && msg[0] ? msg : sla_status_name(st));
    return st == SLA_ERR_NOMEM ? EXIT_INTERNAL : EXIT_BAD;
}

static sla_status write_to(sla_ctx *ctx, const cli_output *o, const char *path)
{
    switch (o->kind) {
    case CLI_OUT_DENSE: return sla_mm_write_dense(ctx, path, o->nrows, o->ncols, o->data);
    case CLI_OUT_PATTERN: return sla_mm_write_pattern_values(ctx, path, o->A, o->data);
    case CLI_OUT_DENSE_Z: return sla_mm_write_dense_z(ctx, path, o->nrows, o->ncols, o->zdata);
    case CLI_OUT_PATTERN_Z: return sla_mm_write_pattern_values_z(ctx, path, o->A, o->zdata);
    default: return sla_mm_write(ctx, path, o->A, 0);
    }
}

/* A name for a stage file next to target that does not exist now. */
static char *stage_name(const char *target)
{
    static unsigned long counter;
    char *dir = dir_of(target);
    if (!dir) return NULL;
    size_t len = strlen(dir) + 48;
    char *s = malloc(len);
    if (!s) {
        free(dir);
        return NULL;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec;
    struct stat st;
    for (int attempt = 0; attempt < 100; attempt++) {
        uint64_t z = x + 0x9e3779b97f4a7c15ULL * (uint64_t)++counter; /* splitmix64 */
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        snprintf(s, len, "%s/.sla-out-%012llx.tmp", dir, (unsigned long long)(z & 0xffffffffffffULL));
        if (lstat(s, &st) != 0 && errno == ENOENT) break;
    }
    free(dir);
    return s;
}

/* SIGINT, SIGTERM and SIGHUP while the files are written and renamed are
 * noted and re-raised afterwards. A handler rather than sigprocmask: the
 * mask is per thread, and OpenMP's threads would still take the signal. */
static volatile sig_atomic_t pending_signal;
static const int deferred[3] = {SIGINT, SIGTERM, SIGHUP};

static void note_signal(int sig) { pending_signal = sig; }

static void defer_signals(struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = note_signal;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    pending_signal = 0;
    for (int k = 0; k < 3; k++) {
        sigaction(deferred[k], NULL, &old[k]);
        if (old[k].sa_handler != SIG_IGN) sigaction(deferred[k], &sa, NULL);
    }
}

static void deliver_signals(const struct sigaction *old)
{
    for (int k = 0; k < 3; k++) sigaction(deferred[k], &old[k], NULL);
    if (pending_signal) raise(pending_signal);
}

int cli_outputs_write(sla_ctx *ctx, cli_output *o, int n)
{
    /* devices and FIFOs first: they cannot be staged */
    for (int i = 0; i < n; i++) {
        if (!o[i].path || !o[i].in_place) continue;
        sla_status st = write_to(ctx, &o[i], o[i].path);
        if (st < 0) return write_fail(ctx, st, &o[i], o[i].path);
    }
    struct sigaction old[3];
    defer_signals(old);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        if (!o[i].path || o[i].in_place) continue;
        if (!(o[i].stage = stage_name(o[i].target))) {
            rc = oom();
            break;
        }
        sla_status st = write_to(ctx, &o[i], o[i].stage);
        if (st < 0) rc = write_fail(ctx, st, &o[i], o[i].stage);
    }
    if (rc) {
        for (int i = 0; i < n; i++)
            if (o[i].stage) {
                unlink(o[i].stage);
                free(o[i].stage);
                o[i].stage = NULL;
            }
    } else {
        for (int i = 0; i < n; i++) {
            if (!o[i].stage) continue;
            struct stat st;
            if (o[i].exists && stat(o[i].target, &st) == 0) (void)chmod(o[i].stage, st.st_mode & 07777);
            if (rename(o[i].stage, o[i].target) != 0) {
                err("%s: cannot replace %s: %s%s", o[i].opt, o[i].path, strerror(errno),
                    i ? " (the outputs before it were written)" : "");
                unlink(o[i].stage);
                rc = EXIT_BAD;
            }
            free(o[i].stage);
            o[i].stage = NULL;
            if (rc) break;
        }
        for (int i = 0; i < n; i++)
            if (o[i].stage) {
                unlink(o[i].stage);
                free(o[i].stage);
                o[i].stage = NULL;
            }
    }
    deliver_signals(old);
    return rc;
}

int cli_output_install_copy(cli_output *o, const char *src)
{
    if (o->in_place) { /* a device or FIFO: copy into it */
        FILE *in = fopen(src, "rb"), *out = in ? fopen(o->path, "wb") : NULL;
        int bad = !in || !out;
        char buf[65536];
        size_t got;
        while (!bad && (got = fread(buf, 1, sizeof buf, in)) > 0)
            bad = fwrite(buf, 1, got, out) != got;
        if (in) bad |= ferror(in) != 0, fclose(in);
        if (out) bad |= fclose(out) != 0;
        if (bad) err("%s: cannot write %s: %s", o->opt, o->path, strerror(errno));
        return bad ? EXIT_BAD : 0;
    }
    char *stage = stage_name(o->target);
    if (!stage) return oom();
    int rc = 0, e = 0;
    FILE *in = fopen(src, "rb");
    int fd = in ? open(stage, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666) : -1;
    if (!in || fd < 0) {
        e = errno;
        rc = EXIT_BAD;
    }
    char buf[65536];
    size_t got;
    while (!rc && (got = fread(buf, 1, sizeof buf, in)) > 0) {
        for (size_t off = 0; off < got && !rc;) {
            ssize_t w = write(fd, buf + off, got - off);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) {
                e = errno;
                rc = EXIT_BAD;
            } else {
                off += (size_t)w;
            }
        }
    }
    if (!rc && ferror(in)) e = EIO, rc = EXIT_BAD;
    struct stat st;
    if (!rc && o->exists && stat(o->target, &st) == 0) (void)fchmod(fd, st.st_mode & 07777);
    if (!rc && fsync(fd) != 0) e = errno, rc = EXIT_BAD;
    if (fd >= 0 && close(fd) != 0 && !rc) e = errno, rc = EXIT_BAD;
    if (in) fclose(in);
    if (!rc && rename(stage, o->target) != 0) e = errno, rc = EXIT_BAD;
    if (rc) {
        if (fd >= 0) unlink(stage);
        err("%s: cannot write %s: %s", o->opt, o->path, strerror(e));
    }
    free(stage);
    return rc;
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when the bytes there
 * are not one (a stray continuation byte, an overlong form, a surrogate,
 * past U+10FFFF, or cut short). */
static int utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    int len;
    unsigned cp, min;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; min = 0x80; }
    else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; min = 0x800; }
    else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; min = 0x10000; }
    else return 0;
    for (int k = 1; k < len; k++) {
        if ((p[k] & 0xc0) != 0x80) return 0; /* also stops at the terminating NUL */
        cp = (cp << 6) | (p[k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

/* s as a JSON string. Valid UTF-8 is copied; each byte that is not part of
 * a valid UTF-8 sequence (a file name in another encoding) becomes \ufffd,
 * the replacement character, so the output is always valid JSON. */
void cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int len = utf8_len(p);
        if (len == 0) {
            fputs("\\ufffd", f);
            p++;
            continue;
        }
        if (len > 1) {
            fwrite(p, 1, (size_t)len, f);
            p += len;
            continue;
        }
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
        p++;
    }
    fputc('"', f);
}

void cli_outputs_free(cli_output *o, int n)
{
    for (int i = 0; i < n; i++) {
        if (o[i].stage) unlink(o[i].stage);
        free(o[i].stage);
        free(o[i].target);
        free(o[i].key);
        o[i].stage = o[i].target = o[i].key = NULL;
    }
}
