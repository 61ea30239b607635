/* Fuzz target: sla_matrix_from_coo. Bytes -> sizes, a dtype, a batch
 * count, then (row, col, value) triples; indices may be negative or out of
 * range, values NaN or Inf. An accepted matrix is checked against the
 * coordinates: every coordinate maps (coo_to_csr) to a stored entry with
 * its row and column, and each stored value is the sum of its duplicates. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_bytes b = {data, size};
    sla_int nrows = (sla_int)(int8_t)fz_take(&b, 1);
    sla_int ncols = (sla_int)(int8_t)fz_take(&b, 1);
    uint8_t flags = (uint8_t)fz_take(&b, 1);
    sla_dtype dt = (flags & 1) ? SLA_F32 : SLA_F64;
    sla_int nbatch = (sla_int)((flags >> 1) & 3); /* 0 is refused */
    bool with_vals = !(flags & 8), with_map = !(flags & 16);
    if (flags & 32) nrows = (sla_int)fz_take(&b, 8); /* sometimes any 64-bit size */
    if (flags & 64) ncols = (sla_int)fz_take(&b, 8);
    sla_int nnz = (sla_int)(b.left / 5);
    if (nnz > 512) nnz = 512;
    if (nbatch < 1) nnz = nnz > 8 ? 8 : nnz;
    sla_int *rows = malloc(((size_t)nnz + 1) * sizeof *rows);
    sla_int *cols = malloc(((size_t)nnz + 1) * sizeof *cols);
    sla_int *map = malloc(((size_t)nnz + 1) * sizeof *map);
    size_t nv = (size_t)nnz * (size_t)(nbatch > 0 ? nbatch : 1);
    double *vd = malloc((nv + 1) * sizeof *vd);
    float *vf = malloc((nv + 1) * sizeof *vf);
    FUZZ_ASSERT(rows && cols && map && vd && vf);
    for (sla_int k = 0; k < nnz; k++) {
        rows[k] = (sla_int)(int8_t)fz_take(&b, 1);
        cols[k] = (sla_int)(int8_t)fz_take(&b, 1);
    }
    for (size_t k = 0; k < nv; k++) {
        vd[k] = fz_double(&b);
        vf[k] = (float)vd[k];
    }
    sla_ctx *ctx = fz_ctx();
    if (!ctx) return 0;
    sla_matrix *A = NULL;
    const void *vals = with_vals ? (dt == SLA_F64 ? (const void *)vd : (const void *)vf) : NULL;
    sla_status st = sla_matrix_from_coo(ctx, nrows, ncols, nnz, rows, cols, dt, nbatch, vals,
                                        with_map ? map : NULL, &A);
    fz_check_error(ctx, st, A);
    FUZZ_ASSERT(st == SLA_OK || st == SLA_ERR_DIMENSION || st == SLA_ERR_INDEX ||
                st == SLA_ERR_VALUE || st == SLA_ERR_TOO_LARGE || st == SLA_ERR_NOMEM);
    if (A) {
        FUZZ_ASSERT(sla_matrix_nrows(A) == nrows && sla_matrix_ncols(A) == ncols &&
                    sla_matrix_nbatch(A) == nbatch && sla_matrix_nnz(A) <= nnz);
        fz_use_matrix(ctx, A);
        if (with_map && dt == SLA_F64) {
            sla_int nz = sla_matrix_nnz(A);
            sla_int *ri = malloc(((size_t)nz + 1) * sizeof *ri);
            sla_int *ci = malloc(((size_t)nz + 1) * sizeof *ci);
            double *sum = calloc((size_t)nz * (size_t)nbatch + 1, sizeof *sum);
            FUZZ_ASSERT(ri && ci && sum);
            sla_matrix_get_rowind(A, ri);
            sla_matrix_get_colind(A, ci);
            for (sla_int k = 0; k < nnz; k++) {
                FUZZ_ASSERT(map[k] >= 0 && map[k] < nz);
                FUZZ_ASSERT(ri[map[k]] == rows[k] && ci[map[k]] == cols[k]);
                for (sla_int ib = 0; ib < nbatch; ib++)
                    sum[ib * nz + map[k]] += with_vals ? vd[ib * nnz + k] : 1.0;
            }
            for (sla_int ib = 0; ib < nbatch; ib++) {
                const double *v = sla_matrix_values(A, ib);
                for (sla_int p = 0; p < nz; p++) {
                    double s = sum[ib * nz + p];
                    /* the same terms, possibly summed in another order */
                    FUZZ_ASSERT(v[p] == s || fabs(v[p] - s) <= 1e-12 * fabs(s) || !isfinite(s));
                }
            }
            free(ri);
            free(ci);
            free(sum);
        }
        sla_matrix_destroy(&A);
    }
    sla_ctx_destroy(&ctx);
    free(rows);
    free(cols);
    free(map);
    free(vd);
    free(vf);
    return 0;
}
