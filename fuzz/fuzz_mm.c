/* Fuzz target: the Matrix Market reader: coordinate files through
 * sla_mm_read_buffer, array files through sla_mm_read_dense and _z. An accepted matrix is used (fz_use_matrix),
 * written back and read again: the round trip must give the same matrix.
 * The buffer goes through the two-pass reader; the same bytes through an
 * fmemopen stream (one-pass COO path) must give the same status, message
 * and matrix bits. */
#define _POSIX_C_SOURCE 200809L

#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The one-pass reader on the same bytes agrees with the two-pass one. */
static void same_as_stream(sla_ctx *ctx, const uint8_t *data, size_t size, sla_dtype dt,
                           sla_status st, const sla_matrix *A)
{
    static char msg[512];
    if (size == 0) return;
    snprintf(msg, sizeof msg, "%s", st ? sla_ctx_message(ctx) : "");
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f) return;
    sla_matrix *B = NULL;
    sla_status st2 = sla_mm_read_stream(ctx, f, "<buffer>", dt, &B);
    fclose(f);
    /* allocation sizes differ between the paths, and a refusal for memory
     * names the memory available, which changes from one call to the next */
    if (st == SLA_ERR_NOMEM || st2 == SLA_ERR_NOMEM || st == SLA_ERR_TOO_LARGE ||
        st2 == SLA_ERR_TOO_LARGE) {
        sla_matrix_destroy(&B);
        return;
    }
    FUZZ_ASSERT(st2 == st);
    if (st) FUZZ_ASSERT(strcmp(msg, sla_ctx_message(ctx)) == 0);
    if (A && B) {
        const sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
        FUZZ_ASSERT(n == sla_matrix_nrows(B) && sla_matrix_ncols(A) == sla_matrix_ncols(B));
        FUZZ_ASSERT(nnz == sla_matrix_nnz(B) && sla_matrix_dtype(A) == sla_matrix_dtype(B));
        FUZZ_ASSERT(!memcmp(sla_matrix_rowptr(A), sla_matrix_rowptr(B), (size_t)(n + 1) * sizeof(sla_int)));
        FUZZ_ASSERT(!memcmp(sla_matrix_values(A, 0), sla_matrix_values(B, 0),
                            (size_t)nnz * sla_dtype_size(sla_matrix_dtype(A))));
        sla_int *ca = malloc((size_t)(nnz + 1) * sizeof *ca), *cb = malloc((size_t)(nnz + 1) * sizeof *cb);
        if (ca && cb) {
            sla_matrix_get_colind(A, ca);
            sla_matrix_get_colind(B, cb);
            FUZZ_ASSERT(!memcmp(ca, cb, (size_t)nnz * sizeof *ca));
        }
        free(ca);
        free(cb);
    }
    sla_matrix_destroy(&B);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sla_ctx *ctx = fz_ctx();
    if (!ctx) return 0;
    sla_dtype dt = (size > 0 && (data[size - 1] & 1)) ? SLA_F32 : SLA_F64;
    sla_matrix *A = NULL;
    sla_status st = sla_mm_read_buffer(ctx, (const char *)data, size, dt, &A);
    fz_check_error(ctx, st, A);
    same_as_stream(ctx, data, size, dt, st, A);
    FUZZ_ASSERT(st == SLA_OK || st == SLA_ERR_FORMAT || st == SLA_ERR_INDEX ||
                st == SLA_ERR_VALUE || st == SLA_ERR_UNSUPPORTED || st == SLA_ERR_NOMEM ||
                st == SLA_ERR_TOO_LARGE || st == SLA_ERR_DIMENSION);
    if (A) {
        fz_use_matrix(ctx, A);
        /* write, read back: identical pattern and (float64) values */
        if (dt == SLA_F64 && sla_matrix_nnz(A) <= 4096) {
            char path[64];
            snprintf(path, sizeof path, "/tmp/sla_fuzz_mm_%d.mtx", (int)getpid());
            if (sla_mm_write(ctx, path, A, 0) == SLA_OK) {
                sla_matrix *B = NULL;
                st = sla_mm_read(ctx, path, SLA_F64, &B);
                FUZZ_ASSERT(st == SLA_OK);
                FUZZ_ASSERT(sla_matrix_nrows(B) == sla_matrix_nrows(A) &&
                            sla_matrix_ncols(B) == sla_matrix_ncols(A));
                /* explicit zeros are kept, so the pattern matches exactly */
                FUZZ_ASSERT(sla_matrix_nnz(B) == sla_matrix_nnz(A));
                /* a complex matrix: two doubles per value */
                FUZZ_ASSERT(sla_matrix_dtype(B) == sla_matrix_dtype(A));
                const int w = sla_matrix_is_complex(A) ? 2 : 1;
                const double *va = sla_matrix_values(A, 0), *vb = sla_matrix_values(B, 0);
                for (sla_int k = 0; k < w * sla_matrix_nnz(A); k++) FUZZ_ASSERT(va[k] == vb[k]);
                sla_matrix_destroy(&B);
            }
            remove(path);
        }
        sla_matrix_destroy(&A);
    }
    /* the array reader (sla_mm_read_dense takes a path): every value it
     * returns must be readable (ASan) */
    if (size > 0 && data[0] == '%') {
        char path[64];
        snprintf(path, sizeof path, "/tmp/sla_fuzz_mmd_%d.mtx", (int)getpid());
        FILE *f = fopen(path, "wb");
        if (f) {
            fwrite(data, 1, size, f);
            fclose(f);
            sla_int m = -1, n = -1;
            double *d = NULL;
            st = sla_mm_read_dense(ctx, path, &m, &n, &d);
            FUZZ_ASSERT(st == SLA_OK || st == SLA_ERR_FORMAT || st == SLA_ERR_VALUE ||
                        st == SLA_ERR_UNSUPPORTED || st == SLA_ERR_NOMEM ||
                        st == SLA_ERR_TOO_LARGE || st == SLA_ERR_DIMENSION || st == SLA_ERR_INDEX);
            if (st == SLA_OK) {
                FUZZ_ASSERT(m >= 0 && n >= 0 && d != NULL);
                volatile double sum = 0.0;
                for (sla_int k = 0; k < m * n; k++) sum += d[k];
                (void)sum;
            } else {
                FUZZ_ASSERT(sla_ctx_message(ctx)[0] != '\0');
            }
            sla_free(ctx, d);
            /* the complex array reader: any field, two doubles per value */
            sla_complex *z = NULL;
            st = sla_mm_read_dense_z(ctx, path, &m, &n, &z);
            FUZZ_ASSERT(st == SLA_OK || st == SLA_ERR_FORMAT || st == SLA_ERR_VALUE ||
                        st == SLA_ERR_UNSUPPORTED || st == SLA_ERR_NOMEM ||
                        st == SLA_ERR_TOO_LARGE || st == SLA_ERR_DIMENSION || st == SLA_ERR_INDEX);
            if (st == SLA_OK) {
                FUZZ_ASSERT(m >= 0 && n >= 0 && z != NULL);
                volatile double sum = 0.0;
                for (sla_int k = 0; k < 2 * m * n; k++) sum += ((const double *)z)[k];
                (void)sum;
            }
            sla_free(ctx, z);
            remove(path);
        }
    }
    sla_ctx_destroy(&ctx);
    return 0;
}
