/* Minimal test helpers: checks that count failures, a seeded RNG, and a
 * dense LAPACK reference. */
#ifndef SLA_TEST_UTIL_H
#define SLA_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "sla.h"

static int tu_failures = 0;
static int tu_checks = 0;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        tu_checks++;                                                                     \
        if (!(cond)) {                                                                   \
            tu_failures++;                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);     \
        }                                                                                \
    } while (0)

/* Check a status, printing the context message on failure. */
#define CHECK_ST(ctx, call, expect)                                                      \
    do {                                                                                 \
        tu_checks++;                                                                     \
        sla_status st_ = (call);                                                         \
        if (st_ != (expect)) {                                                           \
            tu_failures++;                                                               \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s: %s\n", __FILE__,        \
                    __LINE__, #call, sla_status_name(st_), sla_status_name(expect),      \
                    sla_ctx_message(ctx));                                               \
        }                                                                                \
    } while (0)

#define CHECK_OK(ctx, call) CHECK_ST(ctx, call, SLA_OK)

/* Status and a fragment of the message. */
#define CHECK_ERR(ctx, call, expect, fragment)                                           \
    do {                                                                                 \
        CHECK_ST(ctx, call, expect);                                                     \
        tu_checks++;                                                                     \
        if (!strstr(sla_ctx_message(ctx), (fragment))) {                                 \
            tu_failures++;                                                               \
            fprintf(stderr, "%s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__,  \
                    sla_ctx_message(ctx), (fragment));                                   \
        }                                                                                \
    } while (0)

#define CHECK_CLOSE(a, b, tol)                                                           \
    do {                                                                                 \
        tu_checks++;                                                                     \
        double a_ = (a), b_ = (b);                                                       \
        if (!(fabs(a_ - b_) <= (tol) * fmax(1.0, fmax(fabs(a_), fabs(b_))))) {           \
            tu_failures++;                                                               \
            fprintf(stderr, "%s:%d: %s = %.17g vs %s = %.17g (tol %g)\n", __FILE__,      \
                    __LINE__, #a, a_, #b, b_, (double)(tol));                            \
        }                                                                                \
    } while (0)

/* A counting allocator for the allocation-failure sweeps: fails the
 * allocation with index fail_at (-1: never) and counts what is live.
 * Thread-safe (batched solves allocate from OpenMP workers). */
typedef struct {
    long calls;    /* allocations so far */
    long fail_at;  /* fail the allocation with this index (-1: never) */
    long live;     /* allocations not yet freed */
    long failures; /* allocations refused */
} counter;

static inline void *count_malloc(size_t size, void *user)
{
    counter *c = user;
    long k = __atomic_fetch_add(&c->calls, 1, __ATOMIC_SEQ_CST);
    if (k == c->fail_at) {
        __atomic_fetch_add(&c->failures, 1, __ATOMIC_SEQ_CST);
        return NULL;
    }
    void *p = malloc(size);
    if (p) __atomic_fetch_add(&c->live, 1, __ATOMIC_SEQ_CST);
    return p;
}

static inline void count_free(void *p, void *user)
{
    counter *c = user;
    if (p) __atomic_fetch_sub(&c->live, 1, __ATOMIC_SEQ_CST);
    free(p);
}

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define TU_LEAK_CHECK() __lsan_do_leak_check()
#else
#define TU_LEAK_CHECK() ((void)0)
#endif

/* Under ASan the leak check runs here, at the end of main, while the
 * OpenMP, OpenBLAS and MPI threads are parked: LeakSanitizer's tracer was
 * seen to crash (signal 11) intermittently when it ran at exit, while
 * those libraries tear their threads down. Leaks still fail the test. */
static int tu_finish(const char *name)
{
    printf("%s: %d checks, %d failures\n", name, tu_checks, tu_failures);
    fflush(stdout);
    TU_LEAK_CHECK();
    return tu_failures ? 1 : 0;
}

/* ||b - A x|| / ||b|| (transpose: A^T x) with value array ib. */
static inline double tu_relres(const sla_matrix *A, sla_int ib, const double *b, const double *x,
                               int transpose)
{
    sla_int n = sla_matrix_nrows(A);
    double *r = malloc((size_t)n * sizeof *r);
    if (transpose) sla_matvec_transpose(NULL, A, ib, 1, x, n, r, n);
    else sla_matvec(NULL, A, ib, 1, x, n, r, n);
    double rr = 0.0, bb = 0.0;
    for (sla_int i = 0; i < n; i++) {
        rr += (b[i] - r[i]) * (b[i] - r[i]);
        bb += b[i] * b[i];
    }
    free(r);
    return sqrt(rr / bb);
}

/* xorshift64*: reproducible uniform numbers in [-1, 1). */
static inline double tu_rand(unsigned long long *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    unsigned long long r = *s * 2685821657736338717ULL;
    return (double)(r >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* A copy of value array 0 of the real matrix A with float32 values (its
 * own arrays), or NULL when the creation fails (the status in ctx). */
static inline sla_matrix *tu_to_f32(sla_ctx *ctx, const sla_matrix *A)
{
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    float *v = malloc((size_t)(nnz > 0 ? nnz : 1) * sizeof *v);
    sla_int *ci = malloc((size_t)(nnz > 0 ? nnz : 1) * sizeof *ci);
    sla_matrix *F = NULL;
    if (v && ci) {
        const double *av = sla_matrix_values(A, 0);
        for (sla_int k = 0; k < nnz; k++) v[k] = (float)av[k];
        sla_matrix_get_colind(A, ci);
        sla_matrix_from_csr(ctx, n, sla_matrix_ncols(A), sla_matrix_rowptr(A), ci, SLA_F32, 1, v,
                            SLA_COPY, &F);
    }
    free(v);
    free(ci);
    return F;
}

static inline void tu_fill(double *x, long long n, unsigned long long seed)
{
    unsigned long long s = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (long long i = 0; i < n; i++) x[i] = tu_rand(&s);
}

/* Relative 2-norm difference ||a - b|| / max(||b||, tiny). */
static inline double tu_reldiff(long long n, const double *a, const double *b)
{
    double d = 0.0, nb = 0.0;
    for (long long i = 0; i < n; i++) {
        d += (a[i] - b[i]) * (a[i] - b[i]);
        nb += b[i] * b[i];
    }
    return sqrt(d) / fmax(sqrt(nb), 1e-300);
}

/* Dense reference solve x = A^-1 b (or A^-T b) with LAPACK dgesv. */
static inline int tu_dense_solve(const sla_matrix *A, int transpose, const double *b, double *x)
{
    long long n = sla_matrix_nrows(A);
    double *D = malloc((size_t)(n * n + 1) * sizeof *D);
    lapack_int *ipiv = malloc((size_t)(n + 1) * sizeof *ipiv);
    if (!D || !ipiv) { free(D); free(ipiv); return -1; }
    sla_matrix_to_dense(NULL, A, 0, D, n);
    if (transpose)
        for (long long i = 0; i < n; i++)
            for (long long j = i + 1; j < n; j++) {
                double t = D[i * n + j];
                D[i * n + j] = D[j * n + i];
                D[j * n + i] = t;
            }
    memcpy(x, b, (size_t)n * sizeof *x);
    int info = LAPACKE_dgesv(LAPACK_COL_MAJOR, (lapack_int)n, 1, D, (lapack_int)n, ipiv, x,
                             (lapack_int)n);
    free(D);
    free(ipiv);
    return info;
}

#endif
