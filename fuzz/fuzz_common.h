/* Shared by the fuzz harnesses: a byte reader and a bounded allocator.
 *
 * Each harness defines LLVMFuzzerTestOneInput. It is linked either with
 * libFuzzer (clang, -fsanitize=fuzzer; CMake option SLA_FUZZ) or with
 * replay_main.c, which feeds it files (the regression inputs and the seed
 * corpus) under any compiler and sanitizer. */
#ifndef SLA_FUZZ_COMMON_H
#define SLA_FUZZ_COMMON_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sla.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Failing a crash where a bug is found: stronger than a return code, and
 * what libFuzzer records as a finding. */
#define FUZZ_ASSERT(cond)                                                                  \
    do {                                                                                   \
        if (!(cond)) abort();                                                              \
    } while (0)

typedef struct {
    const uint8_t *p;
    size_t left;
} fz_bytes;

static inline uint64_t fz_take(fz_bytes *b, size_t nbytes)
{
    uint64_t v = 0;
    for (size_t i = 0; i < nbytes; i++) {
        v <<= 8;
        if (b->left) {
            v |= *b->p++;
            b->left--;
        }
    }
    return v;
}

static inline double fz_double(fz_bytes *b)
{
    /* mostly small integers and halves (so sums stay exact), sometimes raw
     * bits (NaN, Inf, denormals, huge values) */
    uint8_t tag = (uint8_t)fz_take(b, 1);
    if (tag < 240) return ((double)(int8_t)fz_take(b, 1)) * 0.5;
    uint64_t bits = fz_take(b, 8);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* An allocator that refuses single requests above 64 MiB: a small input may
 * legitimately declare a huge matrix, and the library must then answer
 * SLA_ERR_NOMEM (not be killed by the fuzzer's memory limit). */
#define FZ_MAX_ALLOC ((size_t)64 << 20)
static inline void *fz_malloc(size_t size, void *user)
{
    (void)user;
    return size > FZ_MAX_ALLOC ? NULL : malloc(size);
}
static inline void fz_free(void *p, void *user)
{
    (void)user;
    free(p);
}

static inline sla_ctx *fz_ctx(void)
{
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx)) return NULL;
    sla_allocator a = {fz_malloc, fz_free, NULL};
    sla_ctx_set_allocator(ctx, &a);
    sla_ctx_set_threads(ctx, 1);
    return ctx;
}

/* An error status always comes with a message and a NULL handle. */
static inline void fz_check_error(sla_ctx *ctx, sla_status st, const void *handle)
{
    if (st < 0) {
        FUZZ_ASSERT(handle == NULL);
        FUZZ_ASSERT(sla_ctx_message(ctx)[0] != '\0');
    }
}

/* Exercise a matrix that was accepted: every accessor and the kernels must
 * work on it, and agree with a dense reference when it is small. */
static inline void fz_use_matrix(sla_ctx *ctx, const sla_matrix *A)
{
    sla_int m = sla_matrix_nrows(A), n = sla_matrix_ncols(A), nnz = sla_matrix_nnz(A);
    sla_int nb = sla_matrix_nbatch(A);
    FUZZ_ASSERT(m >= 0 && n >= 0 && nnz >= 0 && nb >= 1);
    const sla_int *rp = sla_matrix_rowptr(A);
    FUZZ_ASSERT(rp[0] == 0 && rp[m] == nnz);
    sla_int *ci = malloc(((size_t)nnz + 1) * sizeof *ci);
    sla_int *ri = malloc(((size_t)nnz + 1) * sizeof *ri);
    FUZZ_ASSERT(ci && ri);
    sla_matrix_get_colind(A, ci);
    sla_matrix_get_rowind(A, ri);
    for (sla_int i = 0; i < m; i++) {
        FUZZ_ASSERT(rp[i] <= rp[i + 1]);
        for (sla_int p = rp[i]; p < rp[i + 1]; p++) {
            FUZZ_ASSERT(ri[p] == i && ci[p] >= 0 && ci[p] < n);
            FUZZ_ASSERT(p == rp[i] || ci[p] > ci[p - 1]);
        }
    }
    FUZZ_ASSERT(sla_matrix_check_values(ctx, A, -1) == SLA_OK);
    sla_matrix *T = NULL, *C = NULL;
    sla_status st = sla_matrix_transpose(ctx, A, NULL, &T);
    fz_check_error(ctx, st, T);
    st = sla_matrix_copy(ctx, A, &C);
    fz_check_error(ctx, st, C);
    sla_matrix_props pr;
    st = sla_matrix_properties(ctx, A, 0, 0.0, &pr);
    FUZZ_ASSERT(st == SLA_OK || st == SLA_ERR_NOMEM);
    if (m <= 64 && n <= 64 && sla_matrix_is_complex(A)) {
        /* complex: the real entry points refuse it, the complex product
         * matches the dense copy */
        double x[64] = {0}, y[64];
        FUZZ_ASSERT(sla_matvec(ctx, A, 0, 1, x, n > 0 ? n : 1, y, m > 0 ? m : 1) == SLA_ERR_UNSUPPORTED);
        sla_complex *zx = malloc(64 * sizeof *zx), *zy = malloc(64 * sizeof *zy);
        sla_complex *zD = malloc(64 * 64 * sizeof *zD);
        FUZZ_ASSERT(zx && zy && zD);
        double *dx = (double *)zx, *dy = (double *)zy, *dD = (double *)zD;
        for (sla_int j = 0; j < 2 * n; j++) dx[j] = (double)((j * 7) % 5) - 2.0;
        FUZZ_ASSERT(sla_zmatvec(ctx, A, 0, SLA_OP_N, zx, zy) == SLA_OK);
        FUZZ_ASSERT(sla_matrix_to_dense_z(ctx, A, 0, zD, m > 0 ? m : 1) == SLA_OK);
        for (sla_int i = 0; i < m; i++) {
            double sr = 0.0, si = 0.0, amax = 0.0;
            for (sla_int j = 0; j < n; j++) {
                double ar = dD[2 * (i + j * m)], ai = dD[2 * (i + j * m) + 1];
                sr += ar * dx[2 * j] - ai * dx[2 * j + 1];
                si += ar * dx[2 * j + 1] + ai * dx[2 * j];
                amax += (fabs(ar) + fabs(ai)) * (fabs(dx[2 * j]) + fabs(dx[2 * j + 1]));
            }
            FUZZ_ASSERT(!(fabs(sr - dy[2 * i]) + fabs(si - dy[2 * i + 1]) > 1e-12 * amax + 1e-300) ||
                        !isfinite(amax));
        }
        free(zx);
        free(zy);
        free(zD);
    } else if (m <= 64 && n <= 64) {
        double x[64], y[64], yt[64], D[64 * 64];
        for (sla_int j = 0; j < n; j++) x[j] = (double)((j * 7) % 5) - 2.0;
        FUZZ_ASSERT(sla_matvec(ctx, A, 0, 1, x, n > 0 ? n : 1, y, m > 0 ? m : 1) == SLA_OK);
        FUZZ_ASSERT(sla_matrix_to_dense(ctx, A, 0, D, m > 0 ? m : 1) == SLA_OK);
        for (sla_int i = 0; i < m; i++) {
            double s = 0.0, amax = 0.0;
            for (sla_int j = 0; j < n; j++) {
                s += D[i + j * m] * x[j];
                amax += fabs(D[i + j * m] * x[j]);
            }
            /* same products, maybe another order */
            FUZZ_ASSERT(!(fabs(s - y[i]) > 1e-12 * amax + 1e-300) || !isfinite(amax));
        }
        if (T) {
            FUZZ_ASSERT(sla_matvec_transpose(ctx, A, 0, 1, y, m > 0 ? m : 1, yt, n > 0 ? n : 1) ==
                        SLA_OK);
        }
    }
    sla_matrix_destroy(&T);
    sla_matrix_destroy(&C);
    free(ci);
    free(ri);
}

#endif
