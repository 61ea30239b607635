/* Fuzz target: the Matrix Market reader: coordinate files through
 * sla_mm_read_buffer, array files through sla_mm_read_dense and _z. An accepted matrix is used (fz_use_matrix),
 * written back and read again: the round trip must give the same matrix. */
#include "fuzz_common.h"

#include <stdio.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sla_ctx *ctx = fz_ctx();
    if (!ctx) return 0;
    sla_dtype dt = (size > 0 && (data[size - 1] & 1)) ? SLA_F32 : SLA_F64;
    sla_matrix *A = NULL;
    sla_status st = sla_mm_read_buffer(ctx, (const char *)data, size, dt, &A);
    fz_check_error(ctx, st, A);
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
