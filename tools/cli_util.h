/* cli_util.h — small helpers shared by the command-line tool's sources
 * (tools/sla.c, tools/demo_inverse.c): exit codes, the clock, error
 * messages on stderr and strict number parsing. Part of the CLI, not the
 * library. Header-only (static functions), so each tool keeps its own
 * copy and nothing is exported. Needs _POSIX_C_SOURCE (clock_gettime)
 * defined before the first system header. */
#ifndef SLA_CLI_UTIL_H
#define SLA_CLI_UTIL_H

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The CLI's exit status: 0 success, 1 internal failure (out of memory,
 * failed check), 2 bad input or unusable matrix, 3 not converged. */
enum { EXIT_OK = 0, EXIT_INTERNAL = 1, EXIT_BAD = 2, EXIT_NOCONV = 3 };

static inline double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "sla: " + the message + a newline, on stderr. */
static inline void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void err(const char *fmt, ...)
{
    va_list ap;
    fputs("sla: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* The value s of option opt as a finite number: the whole string, no
 * leading blank, no overflow. Returns 0, or EXIT_BAD with a message. */
static inline int parse_double(const char *opt, const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v) ||
        isspace((unsigned char)s[0])) {
        err("%s: '%s' is not a valid number", opt, s);
        return EXIT_BAD;
    }
    *out = v;
    return 0;
}

/* parse_double, then lo <= value <= hi. */
static inline int parse_double_in(const char *opt, const char *s, double lo, double hi,
                                  double *out)
{
    double v;
    if (parse_double(opt, s, &v)) return EXIT_BAD;
    if (v < lo || v > hi) {
        err("%s: %g is out of range [%g, %g]", opt, v, lo, hi);
        return EXIT_BAD;
    }
    *out = v;
    return 0;
}

/* The value s of option opt as a decimal integer in [lo, hi]: the whole
 * string, no leading blank. Returns 0, or EXIT_BAD with a message. */
static inline int parse_int(const char *opt, const char *s, long long lo, long long hi,
                            long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || isspace((unsigned char)s[0])) {
        err("%s: '%s' is not a valid integer", opt, s);
        return EXIT_BAD;
    }
    if (errno == ERANGE) {
        err("%s: '%s' is out of range", opt, s);
        return EXIT_BAD;
    }
    if (v < lo || v > hi) {
        err("%s: %lld is out of range [%lld, %lld]", opt, v, lo, hi);
        return EXIT_BAD;
    }
    *out = v;
    return 0;
}

#endif
