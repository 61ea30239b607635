/* Shared by bench_lsq and bench_svds: a generated short-ray tomography
 * matrix (deterministic from a seed), its binary file for the SciPy side,
 * and a SciPy process kept running beside the benchmark (so that sla and
 * SciPy measurements can alternate without reloading the matrix).
 *
 * The matrix: a P x P pixel grid (n = P^2 unknowns, pixel (i, j) is column
 * j P + i, x fastest) and m rays; ray r is a segment of length `seg`
 * pixels with a uniform random centre in [0, P)^2 and a uniform random
 * direction, clipped to the grid, and row r holds the lengths of its
 * intersections with the pixels it crosses (Siddon's algorithm): about
 * 1.3 seg + 1 nonzeros a row. Integrals over short segments smooth the
 * image, so the matrix is ill-conditioned like a tomography or deblurring
 * operator (LSQR does not reach machine precision in 100 iterations), and
 * its sparsity is local, so a sparse QR factorization stays affordable.
 *
 * The file (little-endian, read by bench/scipy_lsq.py):
 *   int64 m, n, nnz, vlen; int64 rowptr[m + 1]; int32 colind[nnz];
 *   float64 vals[nnz]; float64 vec[vlen]   (b for LSQR, v0 for svds)
 * int32 column indices are what SciPy itself chooses for nnz < 2^31, and
 * what sla stores internally.
 */
#ifndef SLA_BENCH_TOMO_H
#define SLA_BENCH_TOMO_H

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sla.h>

#include "bench_util.h"

/* ---- deterministic random numbers (splitmix64) --------------------------- */

typedef struct {
    uint64_t s;
} tomo_rng;

static inline uint64_t tomo_next(tomo_rng *g)
{
    uint64_t z = (g->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) */
static inline double tomo_unif(tomo_rng *g)
{
    return (double)(tomo_next(g) >> 11) * (1.0 / 9007199254740992.0);
}

/* standard normal (Box-Muller; one of the pair) */
static inline double tomo_normal(tomo_rng *g)
{
    double u = tomo_unif(g), v = tomo_unif(g);
    return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

/* ---- the matrix ------------------------------------------------------------ */

typedef struct {
    long m, n, P, nnz;
    int64_t *rowptr; /* m + 1 */
    int32_t *colind; /* nnz */
    double *vals;    /* nnz */
} tomo_csr;

static inline void tomo_free(tomo_csr *T)
{
    free(T->rowptr);
    free(T->colind);
    free(T->vals);
    memset(T, 0, sizeof *T);
}

#define TOMO_MAXROW 128

/* The pixels crossed by one clipped segment p(t) = (x0, y0) + t (dx, dy),
 * t in [0, 1], and the lengths inside each, sorted by column. Returns the
 * count (0 when the segment misses the grid). */
static inline int tomo_ray(long P, double x0, double y0, double dx, double dy, int32_t *col, double *val)
{
    /* Liang-Barsky: clip t to the box [0, P]^2 */
    double ta = 0.0, tb = 1.0, p[4] = {-dx, dx, -dy, dy}, q[4] = {x0, (double)P - x0, y0, (double)P - y0};
    for (int k = 0; k < 4; k++) {
        if (p[k] == 0.0) {
            if (q[k] < 0.0) return 0;
            continue;
        }
        double r = q[k] / p[k];
        if (p[k] < 0.0) ta = fmax(ta, r);
        else tb = fmin(tb, r);
    }
    if (tb <= ta) return 0;
    /* parameters where the segment crosses grid lines, merged in order */
    double tx[TOMO_MAXROW], ty[TOMO_MAXROW], t[2 * TOMO_MAXROW + 2];
    int nx = 0, ny = 0, nt = 0;
    double xa = x0 + ta * dx, xb = x0 + tb * dx, ya = y0 + ta * dy, yb = y0 + tb * dy;
    for (long k = (long)floor(fmin(xa, xb)) + 1; k < fmax(xa, xb) && nx < TOMO_MAXROW; k++)
        tx[nx++] = ((double)k - x0) / dx;
    for (long k = (long)floor(fmin(ya, yb)) + 1; k < fmax(ya, yb) && ny < TOMO_MAXROW; k++)
        ty[ny++] = ((double)k - y0) / dy;
    if (dx < 0) /* decreasing x: the crossings in increasing t */
        for (int i = 0; i < nx / 2; i++) { double s = tx[i]; tx[i] = tx[nx - 1 - i]; tx[nx - 1 - i] = s; }
    if (dy < 0)
        for (int i = 0; i < ny / 2; i++) { double s = ty[i]; ty[i] = ty[ny - 1 - i]; ty[ny - 1 - i] = s; }
    t[nt++] = ta;
    for (int i = 0, j = 0; i < nx || j < ny;)
        t[nt++] = (j >= ny || (i < nx && tx[i] < ty[j])) ? tx[i++] : ty[j++];
    t[nt++] = tb;
    /* one entry per interval: its pixel (at the midpoint) and its length */
    double len = hypot(dx, dy);
    int cnt = 0;
    for (int k = 0; k + 1 < nt; k++) {
        double dt = t[k + 1] - t[k];
        if (dt * len < 1e-9) continue;
        double tm = 0.5 * (t[k] + t[k + 1]);
        long i = (long)floor(x0 + tm * dx), j = (long)floor(y0 + tm * dy);
        i = i < 0 ? 0 : i >= P ? P - 1 : i;
        j = j < 0 ? 0 : j >= P ? P - 1 : j;
        int32_t c = (int32_t)(j * P + i);
        /* insert sorted; a pixel met twice (rounding at a corner) is summed */
        int pos = cnt;
        while (pos > 0 && col[pos - 1] > c) pos--;
        if (pos > 0 && col[pos - 1] == c) {
            val[pos - 1] += dt * len;
            continue;
        }
        if (cnt == TOMO_MAXROW) break;
        memmove(col + pos + 1, col + pos, (size_t)(cnt - pos) * sizeof *col);
        memmove(val + pos + 1, val + pos, (size_t)(cnt - pos) * sizeof *val);
        col[pos] = c;
        val[pos] = dt * len;
        cnt++;
    }
    return cnt;
}

/* m rays of length seg (<= 40) through a P x P grid; a ray that misses
 * the grid is drawn again. Returns 0, or -1 when out of memory. */
static inline int tomo_generate(long m, long P, double seg, uint64_t seed, tomo_csr *T)
{
    memset(T, 0, sizeof *T);
    if (seg > 40.0) seg = 40.0;
    T->m = m;
    T->P = P;
    T->n = P * P;
    size_t cap = (size_t)m * (size_t)(1.5 * seg + 3.0);
    T->rowptr = malloc((size_t)(m + 1) * sizeof *T->rowptr);
    T->colind = malloc(cap * sizeof *T->colind);
    T->vals = malloc(cap * sizeof *T->vals);
    if (!T->rowptr || !T->colind || !T->vals) {
        tomo_free(T);
        return -1;
    }
    tomo_rng g = {seed};
    int32_t col[TOMO_MAXROW];
    double val[TOMO_MAXROW];
    size_t nnz = 0;
    T->rowptr[0] = 0;
    for (long r = 0; r < m; r++) {
        int cnt = 0;
        while (cnt == 0) {
            double cx = (double)P * tomo_unif(&g), cy = (double)P * tomo_unif(&g);
            double th = 3.141592653589793 * tomo_unif(&g);
            double dx = seg * cos(th), dy = seg * sin(th);
            cnt = tomo_ray(P, cx - 0.5 * dx, cy - 0.5 * dy, dx, dy, col, val);
        }
        if (nnz + (size_t)cnt > cap) {
            cap = 2 * cap + (size_t)cnt;
            int32_t *c2 = realloc(T->colind, cap * sizeof *c2);
            if (c2) T->colind = c2;
            double *v2 = c2 ? realloc(T->vals, cap * sizeof *v2) : NULL;
            if (!v2) {
                tomo_free(T);
                return -1;
            }
            T->vals = v2;
        }
        memcpy(T->colind + nnz, col, (size_t)cnt * sizeof *col);
        memcpy(T->vals + nnz, val, (size_t)cnt * sizeof *val);
        nnz += (size_t)cnt;
        T->rowptr[r + 1] = (int64_t)nnz;
    }
    T->nnz = (long)nnz;
    return 0;
}

/* The phantom: a disc of 1, an inner disc adding 0.5, one subtracting 0.3. */
static inline void tomo_phantom(long P, double *x)
{
    for (long j = 0; j < P; j++)
        for (long i = 0; i < P; i++) {
            double u = ((double)i + 0.5) / (double)P, v = ((double)j + 0.5) / (double)P, s = 0.0;
            if ((u - 0.5) * (u - 0.5) + (v - 0.5) * (v - 0.5) < 0.16) s += 1.0;
            if ((u - 0.6) * (u - 0.6) + (v - 0.4) * (v - 0.4) < 0.01) s += 0.5;
            if ((u - 0.35) * (u - 0.35) + (v - 0.6) * (v - 0.6) < 0.0225) s -= 0.3;
            x[j * P + i] = s;
        }
}

/* sla's copy of T (SLA_COPY; its column indices converted to sla_int). */
static inline sla_status tomo_to_sla(sla_ctx *ctx, const tomo_csr *T, sla_matrix **A)
{
    sla_int *rp = malloc((size_t)(T->m + 1) * sizeof *rp), *ci = malloc((size_t)T->nnz * sizeof *ci);
    sla_status st = SLA_ERR_NOMEM;
    if (rp && ci) {
        for (long i = 0; i <= T->m; i++) rp[i] = (sla_int)T->rowptr[i];
        for (long k = 0; k < T->nnz; k++) ci[k] = (sla_int)T->colind[k];
        st = sla_matrix_from_csr(ctx, (sla_int)T->m, (sla_int)T->n, rp, ci, SLA_F64, 1, T->vals, SLA_COPY, A);
    }
    free(rp);
    free(ci);
    return st;
}

/* y = A x (serial; for b and the checks only). */
static inline void tomo_matvec(const tomo_csr *T, const double *x, double *y)
{
    for (long i = 0; i < T->m; i++) {
        double s = 0.0;
        for (int64_t p = T->rowptr[i]; p < T->rowptr[i + 1]; p++) s += T->vals[p] * x[T->colind[p]];
        y[i] = s;
    }
}

/* Write the file described at the top (vec: vlen entries). 0 or -1. */
static inline int tomo_write(const char *path, const tomo_csr *T, const double *vec, long vlen)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int64_t h[4] = {T->m, T->n, T->nnz, vlen};
    int ok = fwrite(h, sizeof h, 1, f) == 1 &&
             fwrite(T->rowptr, sizeof *T->rowptr, (size_t)T->m + 1, f) == (size_t)T->m + 1 &&
             fwrite(T->colind, sizeof *T->colind, (size_t)T->nnz, f) == (size_t)T->nnz &&
             fwrite(T->vals, sizeof *T->vals, (size_t)T->nnz, f) == (size_t)T->nnz &&
             fwrite(vec, sizeof *vec, (size_t)vlen, f) == (size_t)vlen;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* ---- waiting for a quiet machine -------------------------------------------- */

/* Busy share of all CPUs (percent) over span seconds, this process included
 * (call it while idle). */
static inline double tomo_busy_pct(double span)
{
    load_mark a = load_now();
    struct timespec ts = {(time_t)span, (long)((span - (double)(time_t)span) * 1e9)};
    nanosleep(&ts, NULL);
    load_mark b = load_now();
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (b.busy <= 0 || ncpu <= 0) return 0.0;
    return 100.0 * (b.busy - a.busy) / ((b.wall - a.wall) * (double)ncpu);
}

/* Wait up to max_wait seconds for the machine's busy share to drop to pct;
 * returns the share seen last. */
static inline double tomo_wait_quiet(double max_wait, double pct)
{
    if (max_wait <= 0) return -1.0;
    double t0 = now(), b = tomo_busy_pct(0.25);
    while (b > pct && now() - t0 < max_wait) b = tomo_busy_pct(0.5);
    return b;
}

/* ---- the SciPy process ---------------------------------------------------- */

typedef struct {
    pid_t pid;
    FILE *to, *from;
} tomo_coproc;

/* Start argv[0] with pipes to its stdin and from its stdout (stderr is
 * shared). 0 or -1. */
static inline int tomo_coproc_start(tomo_coproc *c, char *const argv[])
{
    int in[2], out[2];
    memset(c, 0, sizeof *c);
    signal(SIGPIPE, SIG_IGN); /* a SciPy process that died is an error reply, not our end */
    if (pipe(in)) return -1;
    if (pipe(out)) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    c->pid = pid;
    c->to = fdopen(in[1], "w");
    c->from = fdopen(out[0], "r");
    return c->to && c->from ? 0 : -1;
}

/* Send one command line (NULL: none, only read) and read the reply: the
 * next line that starts with '{' (other lines go to stderr). 0 or -1 when
 * the process ended. */
static inline int tomo_coproc_ask(tomo_coproc *c, const char *cmd, char *line, size_t cap)
{
    if (cmd) {
        if (fprintf(c->to, "%s\n", cmd) < 0 || fflush(c->to)) return -1;
    }
    while (fgets(line, (int)cap, c->from)) {
        if (line[0] == '{') {
            line[strcspn(line, "\n")] = 0;
            return 0;
        }
        fputs(line, stderr);
    }
    return -1;
}

static inline void tomo_coproc_stop(tomo_coproc *c)
{
    if (c->to) {
        fprintf(c->to, "quit\n");
        fclose(c->to);
    }
    if (c->from) fclose(c->from);
    if (c->pid > 0) waitpid(c->pid, NULL, 0);
    memset(c, 0, sizeof *c);
}

/* A number after "key": in a one-line JSON object (NAN when absent). */
static inline double tomo_json_num(const char *line, const char *key)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

/* Up to max numbers of the list after "key": [ ; returns the count. */
static inline int tomo_json_list(const char *line, const char *key, double *v, int max)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\": [", key);
    const char *p = strstr(line, pat);
    if (!p) return 0;
    p += strlen(pat);
    int k = 0;
    while (k < max && *p && *p != ']') {
        char *e;
        double x = strtod(p, &e);
        if (e == p) break;
        v[k++] = x;
        p = e;
        while (*p == ',' || *p == ' ') p++;
    }
    return k;
}

/* A string after "key": "  into out (empty when absent). */
static inline void tomo_json_str(const char *line, const char *key, char *out, size_t cap)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *p = strstr(line, pat);
    out[0] = 0;
    if (!p) return;
    p += strlen(pat);
    size_t k = 0;
    while (*p && *p != '"' && k + 1 < cap) out[k++] = *p++;
    out[k] = 0;
}

#endif
