/* Fuzz target: sla_matrix_from_csr (copied and borrowed). Bytes -> sizes,
 * row pointers (mostly increasing, sometimes not), column indices (any,
 * including negative and unsorted), values (incl. NaN/Inf). The arrays are
 * allocated at exactly the length the call may read, so any read past
 * them is caught by AddressSanitizer. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_bytes b = {data, size};
    sla_int nrows = (sla_int)(int8_t)fz_take(&b, 1);
    sla_int ncols = (sla_int)(int8_t)fz_take(&b, 1);
    uint8_t flags = (uint8_t)fz_take(&b, 1);
    sla_dtype dt = (flags & 1) ? SLA_F32 : SLA_F64;
    sla_int nbatch = (sla_int)((flags >> 1) & 3);
    sla_ownership own = (flags & 8) ? SLA_BORROW : SLA_COPY;
    bool with_vals = !(flags & 16);
    if (flags & 64) ncols = (sla_int)fz_take(&b, 8);
    if (nrows < -1) nrows = -1;
    size_t nrp = nrows >= 0 ? (size_t)nrows + 1 : 1;
    sla_int *rowptr = malloc(nrp * sizeof *rowptr);
    FUZZ_ASSERT(rowptr);
    rowptr[0] = (flags & 32) ? (sla_int)(int8_t)fz_take(&b, 1) : 0;
    for (size_t i = 1; i < nrp; i++) {
        int8_t d = (int8_t)fz_take(&b, 1);
        /* mostly a step of 0..7, sometimes any signed step */
        rowptr[i] = rowptr[i - 1] + (d >= -8 ? (d & 7) : d);
    }
    /* colind and values hold exactly rowptr[nrows] entries (the nnz the
     * call believes), or none when that is negative or too many */
    sla_int nnz = rowptr[nrp - 1];
    if (nnz < 0 || nnz > 4096) nnz = 0;
    sla_int nb = nbatch > 0 ? nbatch : 1;
    sla_int *colind = malloc(((size_t)nnz ? (size_t)nnz : 1) * sizeof *colind);
    size_t nv = (size_t)nnz * (size_t)nb;
    void *vals = malloc((nv ? nv : 1) * (dt == SLA_F64 ? sizeof(double) : sizeof(float)));
    FUZZ_ASSERT(colind && vals);
    for (sla_int k = 0; k < nnz; k++) {
        /* mostly increasing within a row */
        int8_t c = (int8_t)fz_take(&b, 1);
        colind[k] = c;
    }
    for (size_t k = 0; k < nv; k++) {
        double v = fz_double(&b);
        if (dt == SLA_F64) ((double *)vals)[k] = v;
        else ((float *)vals)[k] = (float)v;
    }
    sla_ctx *ctx = fz_ctx();
    if (!ctx) return 0;
    sla_matrix *A = NULL;
    sla_status st = sla_matrix_from_csr(ctx, nrows, ncols, rowptr, colind, dt, nbatch,
                                        with_vals ? vals : NULL, own, &A);
    fz_check_error(ctx, st, A);
    FUZZ_ASSERT(st == SLA_OK || st == SLA_ERR_DIMENSION || st == SLA_ERR_INDEX ||
                st == SLA_ERR_VALUE || st == SLA_ERR_TOO_LARGE || st == SLA_ERR_NOMEM ||
                st == SLA_ERR_ARGUMENT);
    if (A) {
        FUZZ_ASSERT(sla_matrix_nnz(A) == rowptr[nrows]);
        fz_use_matrix(ctx, A);
        /* set_values validates too */
        sla_status s2 = sla_matrix_set_values(ctx, A, 0, vals);
        FUZZ_ASSERT(s2 == SLA_OK || s2 == SLA_ERR_VALUE);
        sla_matrix_destroy(&A);
    }
    sla_ctx_destroy(&ctx);
    free(rowptr);
    free(colind);
    free(vals);
    return 0;
}
