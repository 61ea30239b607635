/* The matrix object: CSR pattern (32-bit columns) plus a batch of values. */
#define _POSIX_C_SOURCE 200809L

#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <math.h>
#include <string.h>

sla_matrix *sla__matrix_wrap(const sla_allocator *a, sla_int nrows, sla_int ncols,
                             sla_int nnz, sla_int nbatch, sla_dtype dtype,
                             sla_int *rowptr, int32_t *colind, void *values)
{
    sla_matrix *A = sla__calloc(a, 1, sizeof *A);
    if (!A) return NULL;
    A->alloc = *a;
    A->nrows = nrows;
    A->ncols = ncols;
    A->nnz = nnz;
    A->nbatch = nbatch;
    A->dtype = dtype;
    A->rowptr = rowptr;
    A->colind = colind;
    A->values = values;
    A->own_rowptr = true;
    A->own_values = true;
    return A;
}

void sla_matrix_destroy(sla_matrix **A)
{
    if (!A || !*A) return;
    sla_matrix *M = *A;
    sla_allocator a = M->alloc;
    if (M->own_rowptr) sla__free(&a, (void *)M->rowptr);
    if (M->own_values) sla__free(&a, M->values_mem ? M->values_mem : M->values);
    sla__free(&a, M->colind_mem ? M->colind_mem : (void *)M->colind);
    sla__free(&a, M);
    *A = NULL;
}

static sla_status check_sizes(sla_ctx *ctx, sla_int nrows, sla_int ncols, sla_int nnz,
                              sla_int nbatch)
{
    if (nrows < 0 || ncols < 0 || nnz < 0)
        return sla__error(ctx, SLA_ERR_DIMENSION,
                          "negative size: nrows=%lld ncols=%lld nnz=%lld",
                          (long long)nrows, (long long)ncols, (long long)nnz);
    if (nbatch < 1)
        return sla__error(ctx, SLA_ERR_DIMENSION, "nbatch must be >= 1 (got %lld)",
                          (long long)nbatch);
    if (ncols > INT32_MAX || nrows > INT32_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE,
                          "%lld x %lld matrix: sla's kernels use 32-bit column indices, "
                          "so one process holds at most %d rows and columns",
                          (long long)nrows, (long long)ncols, INT32_MAX);
    if (nnz > 0 && nbatch > INT64_MAX / 16 / nnz) /* (a product could wrap) */
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "nnz x nbatch = %lld x %lld overflows",
                          (long long)nnz, (long long)nbatch);
    return SLA_OK;
}

/* Whether the n reals at vals (double or float) are all finite, without
 * a branch per value, so that the compiler vectorizes it (plain SSE2
 * included), over the context's threads for long arrays: every value array
 * a Python operation hands over is checked (5e6 float64 values took 7 ms in
 * the loop with an early exit below). The exponent field is all ones
 * exactly for an infinity or NaN; adding 1 to it then carries into the
 * sign bit, which the OR of all the sums keeps. */
static bool all_finite(const sla_ctx *ctx, bool dbl, const void *vals, sla_int n)
{
    int nt = n >= ((sla_int)1 << 20) ? sla__threads(ctx) : 1;
    if (dbl) {
        const unsigned char *v = vals;
        uint64_t bad = 0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(| : bad) if (nt > 1)
        for (sla_int r = 0; r < n; r++) {
            uint64_t u;
            memcpy(&u, v + 8 * r, 8);
            bad |= (u & 0x7ff0000000000000ULL) + ((uint64_t)1 << 52);
        }
        return !(bad >> 63);
    }
    const unsigned char *v = vals;
    uint32_t bad = 0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(| : bad) if (nt > 1)
    for (sla_int r = 0; r < n; r++) {
        uint32_t u;
        memcpy(&u, v + 4 * r, 4);
        bad |= (u & 0x7f800000u) + ((uint32_t)1 << 23);
    }
    return !(bad >> 31);
}

static sla_status check_finite(sla_ctx *ctx, sla_dtype dtype, const void *vals, sla_int count,
                               sla_int per_batch)
{
    const int parts = sla_dtype_is_complex(dtype) ? 2 : 1; /* reals per value */
    const bool dbl = dtype == SLA_F64 || dtype == SLA_C128;
    if (all_finite(ctx, dbl, vals, count * parts)) return SLA_OK;
    /* the first value that is not finite, for the message */
    for (sla_int r = 0; r < count * parts; r++) {
        double v = dbl ? ((const double *)vals)[r] : ((const float *)vals)[r];
        if (!isfinite(v)) {
            sla_int k = r / parts;
            if (parts == 2)
                return sla__error(ctx, SLA_ERR_VALUE,
                                  "value at entry %lld (batch %lld) is not finite (%s part %g)",
                                  (long long)(k % per_batch), (long long)(k / per_batch),
                                  r % 2 ? "imaginary" : "real", v);
            return sla__error(ctx, SLA_ERR_VALUE,
                              "value %g at entry %lld (batch %lld) is not finite", v,
                              (long long)(k % per_batch), (long long)(k / per_batch));
        }
    }
    return SLA_OK;
}

static bool dtype_known(sla_dtype t)
{
    return t == SLA_F64 || t == SLA_F32 || t == SLA_C128 || t == SLA_C64;
}

/* values[p] = 1 in dtype. */
static void set_one(sla_dtype dtype, void *values, sla_int p)
{
    switch (dtype) {
    case SLA_F64: ((double *)values)[p] = 1.0; break;
    case SLA_F32: ((float *)values)[p] = 1.0f; break;
    case SLA_C128: ((double *)values)[2 * p] = 1.0; ((double *)values)[2 * p + 1] = 0.0; break;
    case SLA_C64: ((float *)values)[2 * p] = 1.0f; ((float *)values)[2 * p + 1] = 0.0f; break;
    }
}

/* values[p] += src[q] (or 1 when src is NULL), in dtype. */
static void add_value(sla_dtype dtype, void *values, sla_int p, const void *src, sla_int q)
{
    switch (dtype) {
    case SLA_F64: ((double *)values)[p] += src ? ((const double *)src)[q] : 1.0; break;
    case SLA_F32: ((float *)values)[p] += src ? ((const float *)src)[q] : 1.0f; break;
    case SLA_C128:
        ((double *)values)[2 * p] += src ? ((const double *)src)[2 * q] : 1.0;
        ((double *)values)[2 * p + 1] += src ? ((const double *)src)[2 * q + 1] : 0.0;
        break;
    case SLA_C64:
        ((float *)values)[2 * p] += src ? ((const float *)src)[2 * q] : 1.0f;
        ((float *)values)[2 * p + 1] += src ? ((const float *)src)[2 * q + 1] : 0.0f;
        break;
    }
}

size_t sla_dtype_size(sla_dtype t) { return sla__dtype_size(t); }

const char *sla_dtype_name(sla_dtype t)
{
    switch (t) {
    case SLA_F64: return "float64";
    case SLA_F32: return "float32";
    case SLA_C128: return "complex128";
    case SLA_C64: return "complex64";
    }
    return "unknown";
}

bool sla_matrix_is_complex(const sla_matrix *A) { return A && sla__is_complex(A); }

sla_status sla__require_real(sla_ctx *ctx, const sla_matrix *A, const char *what)
{
    if (A && sla__is_complex(A))
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "%s: complex matrices (%s) are not supported here; see sla/complex.h", what,
                          sla_dtype_name(A->dtype));
    return SLA_OK;
}

/* Bytes this process can still allocate: MemAvailable (Linux), bounded by
 * the address-space and data limits (ulimit -v, -d) less what is mapped
 * already; INFINITY when nothing is known. */
static double memory_available(void)
{
    double avail = INFINITY;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        double kb = 0.0;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
        fclose(f);
        if (kb > 0.0) avail = kb * 1024.0;
    }
    long psize = sysconf(_SC_PAGESIZE);
    double vm = 0.0, data = 0.0; /* pages mapped now: total, data + stack */
    f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%lf %*f %*f %*f %*f %lf", &vm, &data) != 2) vm = data = 0.0;
        fclose(f);
    }
    const int which[2] = {RLIMIT_AS, RLIMIT_DATA};
    const double used[2] = {vm, data};
    for (int k = 0; k < 2; k++) {
        struct rlimit rl;
        if (getrlimit(which[k], &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
            double room = (double)rl.rlim_cur - used[k] * (double)(psize > 0 ? psize : 4096);
            if (room < avail) avail = room > 0.0 ? room : 0.0;
        }
    }
    return avail;
}

/* Refuse O(nrows) index arrays that the memory cannot hold, before they
 * are allocated: a file may declare 2^31 - 1 rows with one entry. The
 * budget is half of the memory available, as for the direct solvers'
 * default memory_limit. Small structures are not checked (no system calls). */
sla_status sla__check_index_memory(sla_ctx *ctx, sla_int nrows, sla_int ncols, sla_int nnz,
                                     double bytes)
{
    if (bytes < 64e6) return SLA_OK;
    double avail = memory_available();
    if (bytes <= 0.5 * avail) return SLA_OK;
    return sla__error(ctx, SLA_ERR_TOO_LARGE,
                      "a %lld x %lld matrix (%lld entries) needs %.1f GB for its row index arrays, "
                      "more than half of the %.1f GB available",
                      (long long)nrows, (long long)ncols, (long long)nnz, 1e-9 * bytes, 1e-9 * avail);
}

typedef struct coo_key {
    sla_int r, c, k;
} coo_key;

static int coo_key_cmp(const void *pa, const void *pb)
{
    const coo_key *a = pa, *b = pb;
    if (a->r != b->r) return a->r < b->r ? -1 : 1;
    if (a->c != b->c) return a->c < b->c ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

sla_status sla_matrix_from_coo(sla_ctx *ctx, sla_int nrows, sla_int ncols, sla_int nnz_in,
                               const sla_int *rows, const sla_int *cols, sla_dtype dtype,
                               sla_int nbatch, const void *vals, sla_int *coo_to_csr,
                               sla_matrix **out)
{
    return sla__matrix_from_coo(ctx, nrows, ncols, nnz_in, rows, cols, dtype, nbatch, vals, coo_to_csr,
                                true, out);
}

sla_status sla__matrix_from_coo(sla_ctx *ctx, sla_int nrows, sla_int ncols, sla_int nnz_in,
                                const sla_int *rows, const sla_int *cols, sla_dtype dtype,
                                sla_int nbatch, const void *vals, sla_int *coo_to_csr,
                                bool check_sums, sla_matrix **out)
{
    if (!out) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_from_coo: out is NULL");
    *out = NULL;
    sla_status st = check_sizes(ctx, nrows, ncols, nnz_in, nbatch);
    if (st) return st;
    if (nnz_in > 0 && (!rows || !cols))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_from_coo: rows or cols is NULL");
    if (!dtype_known(dtype))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown dtype %d", (int)dtype);
    for (sla_int k = 0; k < nnz_in; k++) {
        if (rows[k] < 0 || rows[k] >= nrows || cols[k] < 0 || cols[k] >= ncols)
            return sla__error(ctx, SLA_ERR_INDEX,
                              "entry %lld: index (%lld, %lld) out of range for a %lld x %lld "
                              "matrix (0-based)",
                              (long long)k, (long long)rows[k], (long long)cols[k],
                              (long long)nrows, (long long)ncols);
    }
    if (vals && (st = check_finite(ctx, dtype, vals, nnz_in * nbatch, nnz_in ? nnz_in : 1)))
        return st;

    sla_allocator a = sla__ctx_alloc(ctx);
    size_t es = sla__dtype_size(dtype);
    /* Few entries for the dimensions (a header can declare 2^31 - 1 rows
     * for one entry): sort the entries, O(nnz) memory, instead of counting
     * sort's O(max(nrows, ncols)) counters. The row pointer stays O(nrows). */
    const size_t dim = (size_t)(nrows > ncols ? nrows : ncols) + 1;
    const bool by_sort = (size_t)nnz_in < dim / 4;
    if ((st = sla__check_index_memory(ctx, nrows, ncols, nnz_in,
                                 8.0 * ((double)nrows + 1.0 + (by_sort ? 0.0 : (double)dim)))))
        return st;
    sla_int *cnt = by_sort ? NULL : sla__calloc(&a, dim, sizeof *cnt);
    sla_int *ord1 = sla__malloc(&a, (size_t)nnz_in, sizeof *ord1);
    sla_int *ord2 = sla__malloc(&a, (size_t)nnz_in, sizeof *ord2);
    sla_int *rowptr = sla__calloc(&a, (size_t)nrows + 1, sizeof *rowptr);
    coo_key *keys = by_sort ? sla__malloc(&a, (size_t)nnz_in, sizeof *keys) : NULL;
    int32_t *colind = NULL;
    void *values = NULL;
    sla_matrix *A = NULL;
    if ((!by_sort && !cnt) || (by_sort && !keys) || !ord1 || !ord2 || !rowptr) goto nomem;

    if (by_sort) {
        for (sla_int k = 0; k < nnz_in; k++) keys[k] = (coo_key){rows[k], cols[k], k};
        qsort(keys, (size_t)nnz_in, sizeof *keys, coo_key_cmp); /* ties by k: stable */
        for (sla_int t = 0; t < nnz_in; t++) ord2[t] = keys[t].k;
        sla__free(&a, keys);
        keys = NULL;
        goto sorted;
    }
    /* Stable counting sort by column, then by row: rows end up with
     * ascending columns, duplicates adjacent. */
    for (sla_int k = 0; k < nnz_in; k++) cnt[cols[k] + 1]++;
    for (sla_int j = 0; j < ncols; j++) cnt[j + 1] += cnt[j];
    for (sla_int k = 0; k < nnz_in; k++) ord1[cnt[cols[k]]++] = k;
    memset(cnt, 0, ((size_t)(nrows > ncols ? nrows : ncols) + 1) * sizeof *cnt);
    for (sla_int k = 0; k < nnz_in; k++) cnt[rows[k] + 1]++;
    for (sla_int i = 0; i < nrows; i++) cnt[i + 1] += cnt[i];
    for (sla_int t = 0; t < nnz_in; t++) {
        sla_int k = ord1[t];
        ord2[cnt[rows[k]]++] = k;
    }

sorted:;
    /* Count unique entries per row; ord1 becomes the COO -> CSR map. */
    sla_int nnz = 0;
    for (sla_int t = 0; t < nnz_in; t++) {
        sla_int k = ord2[t];
        if (t == 0 || rows[k] != rows[ord2[t - 1]] || cols[k] != cols[ord2[t - 1]]) {
            nnz++;
            rowptr[rows[k] + 1]++;
        }
        ord1[k] = nnz - 1;
    }
    for (sla_int i = 0; i < nrows; i++) rowptr[i + 1] += rowptr[i];

    colind = sla__malloc(&a, (size_t)nnz, sizeof *colind);
    values = sla__calloc(&a, (size_t)(nnz * nbatch), es);
    if (!colind || !values) goto nomem;
    for (sla_int k = 0; k < nnz_in; k++) colind[ord1[k]] = (int32_t)cols[k];
    for (sla_int b = 0; b < nbatch; b++) {
        for (sla_int k = 0; k < nnz_in; k++) {
            add_value(dtype, values, b * nnz + ord1[k], vals, b * nnz_in + k);
        }
    }
    if (vals && check_sums) { /* finite entries whose duplicates overflow when summed */
        const int parts = sla_dtype_is_complex(dtype) ? 2 : 1;
        const bool dbl = dtype == SLA_F64 || dtype == SLA_C128;
        for (sla_int r = 0; r < nnz * nbatch * parts; r++) {
            double v = dbl ? ((const double *)values)[r] : ((const float *)values)[r];
            if (isfinite(v)) continue;
            sla_int q = r / parts, p = q % (nnz ? nnz : 1), i = 0;
            while (rowptr[i + 1] <= p) i++;
            sla__free(&a, cnt);
            sla__free(&a, ord1);
            sla__free(&a, ord2);
            sla__free(&a, rowptr);
            sla__free(&a, values);
            int32_t j = colind[p];
            sla__free(&a, colind);
            return sla__error(ctx, SLA_ERR_VALUE,
                              "the duplicates of entry (%lld, %lld) (batch %lld) sum to %g: overflow in %s",
                              (long long)i, (long long)j, (long long)(q / (nnz ? nnz : 1)), v,
                              sla_dtype_name(dtype));
        }
    }
    if (coo_to_csr) memcpy(coo_to_csr, ord1, (size_t)nnz_in * sizeof *ord1);
    A = sla__matrix_wrap(&a, nrows, ncols, nnz, nbatch, dtype, rowptr, colind, values);
    if (!A) goto nomem;
    sla__free(&a, cnt);
    sla__free(&a, ord1);
    sla__free(&a, ord2);
    *out = A;
    return sla__ok(ctx, SLA_OK);

nomem:
    sla__free(&a, keys);
    sla__free(&a, cnt);
    sla__free(&a, ord1);
    sla__free(&a, ord2);
    sla__free(&a, rowptr);
    sla__free(&a, colind);
    sla__free(&a, values);
    return sla__error(ctx, SLA_ERR_NOMEM, "out of memory converting %lld COO entries to CSR",
                      (long long)nnz_in);
}

/* What a borrowed matrix without stored entries points at when the caller
 * has no values array (a zero-length tensor's data pointer is NULL): never
 * read (nnz = 0) and never written, but not NULL, so value-array offsets
 * (ib * nnz = 0) are taken on a real object. */
static double empty_values[1];

sla_status sla_matrix_from_csr(sla_ctx *ctx, sla_int nrows, sla_int ncols, const sla_int *rowptr,
                               const sla_int *colind, sla_dtype dtype, sla_int nbatch,
                               const void *vals, sla_ownership own, sla_matrix **out)
{
    if (!out) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_from_csr: out is NULL");
    *out = NULL;
    if (!rowptr) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_from_csr: rowptr is NULL");
    if (!dtype_known(dtype))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown dtype %d", (int)dtype);
    if (own != SLA_COPY && own != SLA_BORROW)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown ownership %d", (int)own);
    if (nrows < 0)
        return sla__error(ctx, SLA_ERR_DIMENSION, "negative row count %lld", (long long)nrows);
    if (rowptr[0] != 0)
        return sla__error(ctx, SLA_ERR_INDEX, "rowptr[0] is %lld, must be 0",
                          (long long)rowptr[0]);
    sla_int nnz = rowptr[nrows];
    sla_status st = check_sizes(ctx, nrows, ncols, nnz, nbatch);
    if (st) return st;
    if (nnz > 0 && !colind)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_from_csr: colind is NULL");
    if (own == SLA_BORROW && !vals && nnz > 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "a borrowed matrix with %lld stored entries needs a values array",
                          (long long)nnz);
    /* All row pointers first: colind may only be read below rowptr[nrows]
     * (a row pointer past it, with a decrease later, once read out of
     * bounds; found by fuzz/fuzz_csr.c) */
    for (sla_int i = 0; i < nrows; i++)
        if (rowptr[i + 1] < rowptr[i])
            return sla__error(ctx, SLA_ERR_INDEX, "rowptr decreases at row %lld (%lld > %lld)",
                              (long long)i, (long long)rowptr[i], (long long)rowptr[i + 1]);
    for (sla_int i = 0; i < nrows; i++) {
        for (sla_int p = rowptr[i]; p < rowptr[i + 1]; p++) {
            if (colind[p] < 0 || colind[p] >= ncols)
                return sla__error(ctx, SLA_ERR_INDEX,
                                  "row %lld: column index %lld out of range [0, %lld)",
                                  (long long)i, (long long)colind[p], (long long)ncols);
            if (p > rowptr[i] && colind[p] <= colind[p - 1])
                return sla__error(ctx, SLA_ERR_INDEX,
                                  "row %lld: column indices not strictly increasing "
                                  "(%lld after %lld)",
                                  (long long)i, (long long)colind[p], (long long)colind[p - 1]);
        }
    }
    if (vals && (st = check_finite(ctx, dtype, vals, nnz * nbatch, nnz ? nnz : 1))) return st;

    sla_allocator a = sla__ctx_alloc(ctx);
    size_t es = sla__dtype_size(dtype);
    sla_int *rp = NULL;
    void *values = NULL;
    int32_t *ci = sla__malloc(&a, (size_t)nnz, sizeof *ci);
    if (!ci) goto nomem;
    for (sla_int p = 0; p < nnz; p++) ci[p] = (int32_t)colind[p];
    if (own == SLA_COPY) {
        rp = sla__malloc(&a, (size_t)nrows + 1, sizeof *rp);
        values = sla__malloc(&a, (size_t)(nnz * nbatch), es);
        if (!rp || !values) goto nomem;
        memcpy(rp, rowptr, ((size_t)nrows + 1) * sizeof *rp);
        if (vals) {
            memcpy(values, vals, (size_t)(nnz * nbatch) * es);
        } else {
            for (sla_int k = 0; k < nnz * nbatch; k++) set_one(dtype, values, k);
        }
    }
    sla_matrix *A = sla__matrix_wrap(&a, nrows, ncols, nnz, nbatch, dtype,
                                     own == SLA_COPY ? rp : (sla_int *)rowptr, ci,
                                     own == SLA_COPY ? values
                                     : vals ? (void *)vals : empty_values);
    if (!A) goto nomem;
    A->own_rowptr = A->own_values = (own == SLA_COPY);
    *out = A;
    return sla__ok(ctx, SLA_OK);

nomem:
    sla__free(&a, ci);
    sla__free(&a, rp);
    sla__free(&a, values);
    return sla__error(ctx, SLA_ERR_NOMEM, "out of memory copying a CSR matrix (nnz %lld)",
                      (long long)nnz);
}

sla_status sla_matrix_copy(sla_ctx *ctx, const sla_matrix *A, sla_matrix **out)
{
    if (!out) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_copy: out is NULL");
    *out = NULL;
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_copy: A is NULL");
    sla_allocator a = sla__ctx_alloc(ctx);
    size_t es = sla__dtype_size(A->dtype);
    sla_int *rp = sla__malloc(&a, (size_t)A->nrows + 1, sizeof *rp);
    int32_t *ci = sla__malloc(&a, (size_t)A->nnz, sizeof *ci);
    void *v = sla__malloc(&a, (size_t)(A->nnz * A->nbatch), es);
    sla_matrix *C = NULL;
    if (rp && ci && v)
        C = sla__matrix_wrap(&a, A->nrows, A->ncols, A->nnz, A->nbatch, A->dtype, rp, ci, v);
    if (!C) {
        sla__free(&a, rp);
        sla__free(&a, ci);
        sla__free(&a, v);
        return sla__error(ctx, SLA_ERR_NOMEM, "out of memory copying a matrix (nnz %lld)",
                          (long long)A->nnz);
    }
    memcpy(rp, A->rowptr, ((size_t)A->nrows + 1) * sizeof *rp);
    memcpy(ci, A->colind, (size_t)A->nnz * sizeof *ci);
    memcpy(v, A->values, (size_t)(A->nnz * A->nbatch) * es);
    *out = C;
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_matrix_transpose(sla_ctx *ctx, const sla_matrix *A, sla_int *perm, sla_matrix **out)
{
    if (!out) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_transpose: out is NULL");
    *out = NULL;
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_transpose: A is NULL");
    sla_allocator a = sla__ctx_alloc(ctx);
    size_t es = sla__dtype_size(A->dtype);
    sla_int nnz = A->nnz;
    sla_int *rp = sla__calloc(&a, (size_t)A->ncols + 1, sizeof *rp);
    sla_int *next = sla__malloc(&a, (size_t)A->ncols + 1, sizeof *next);
    int32_t *ci = sla__malloc(&a, (size_t)nnz, sizeof *ci);
    void *v = sla__malloc(&a, (size_t)(nnz * A->nbatch), es);
    sla_matrix *T = NULL;
    if (rp && next && ci && v)
        T = sla__matrix_wrap(&a, A->ncols, A->nrows, nnz, A->nbatch, A->dtype, rp, ci, v);
    if (!T) {
        sla__free(&a, rp);
        sla__free(&a, next);
        sla__free(&a, ci);
        sla__free(&a, v);
        return sla__error(ctx, SLA_ERR_NOMEM, "out of memory transposing a matrix (nnz %lld)",
                          (long long)nnz);
    }
    for (sla_int p = 0; p < nnz; p++) rp[A->colind[p] + 1]++;
    for (sla_int j = 0; j < A->ncols; j++) rp[j + 1] += rp[j];
    memcpy(next, rp, ((size_t)A->ncols + 1) * sizeof *next);
    for (sla_int i = 0; i < A->nrows; i++) {
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sla_int q = next[A->colind[p]]++;
            ci[q] = (int32_t)i;
            for (sla_int b = 0; b < A->nbatch; b++)
                memcpy((char *)v + (size_t)(b * nnz + q) * es,
                       (const char *)A->values + (size_t)(b * nnz + p) * es, es);
            if (perm) perm[p] = q;
        }
    }
    sla__free(&a, next);
    *out = T;
    return sla__ok(ctx, SLA_OK);
}

sla_int sla_matrix_nrows(const sla_matrix *A) { return A ? A->nrows : 0; }
sla_int sla_matrix_ncols(const sla_matrix *A) { return A ? A->ncols : 0; }
sla_int sla_matrix_nnz(const sla_matrix *A) { return A ? A->nnz : 0; }
sla_int sla_matrix_nbatch(const sla_matrix *A) { return A ? A->nbatch : 0; }
sla_dtype sla_matrix_dtype(const sla_matrix *A) { return A ? A->dtype : SLA_F64; }
const sla_int *sla_matrix_rowptr(const sla_matrix *A) { return A ? A->rowptr : NULL; }

void sla_matrix_get_colind(const sla_matrix *A, sla_int *colind)
{
    if (!A || !colind) return;
    for (sla_int p = 0; p < A->nnz; p++) colind[p] = A->colind[p];
}

void sla_matrix_get_rowind(const sla_matrix *A, sla_int *rowind)
{
    if (!A || !rowind) return;
    for (sla_int i = 0; i < A->nrows; i++)
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) rowind[p] = i;
}

sla_status sla_matrix_get_coo(sla_ctx *ctx, const sla_matrix *A, sla_int *rowind,
                              sla_int *colind)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_get_coo: A is NULL");
    int nt = sla__threads(ctx);
    sla_int m = A->nrows;
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    /* rows in blocks: each thread first touches the part of the output it writes */
#pragma omp parallel for num_threads(nt) schedule(dynamic, 4096) if (nt > 1 && A->nnz >= 65536)
    for (sla_int i = 0; i < m; i++) {
        for (sla_int p = rp[i]; p < rp[i + 1]; p++) {
            if (rowind) rowind[p] = i;
            if (colind) colind[p] = ci[p];
        }
    }
    return sla__ok(ctx, SLA_OK);
}

int sla_matrix_coo_equal(sla_ctx *ctx, const sla_matrix *A, const sla_int *rowind,
                         const sla_int *colind)
{
    if (!A || (A->nnz > 0 && (!rowind || !colind))) return 0;
    int nt = sla__threads(ctx);
    sla_int m = A->nrows, diff = 0;
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : diff) \
    if (nt > 1 && A->nnz >= 65536)
    for (sla_int i = 0; i < m; i++) {
        sla_int d = 0;
        for (sla_int p = rp[i]; p < rp[i + 1]; p++) d += (rowind[p] != i) | (colind[p] != ci[p]);
        diff += d;
    }
    return diff == 0;
}

const void *sla_matrix_values(const sla_matrix *A, sla_int ib)
{
    if (!A || ib < 0 || ib >= A->nbatch) return NULL;
    return (const char *)A->values + (size_t)(ib * A->nnz) * sla__dtype_size(A->dtype);
}

sla_status sla_matrix_set_values(sla_ctx *ctx, sla_matrix *A, sla_int ib, const void *vals)
{
    if (!A || (!vals && A->nnz > 0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_set_values: NULL argument");
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "batch index %lld out of range [0, %lld)",
                          (long long)ib, (long long)A->nbatch);
    if (A->nnz == 0) return sla__ok(ctx, SLA_OK); /* nothing stored, nothing to copy */
    sla_status st = check_finite(ctx, A->dtype, vals, A->nnz, A->nnz ? A->nnz : 1);
    if (st) return st;
    size_t es = sla__dtype_size(A->dtype);
    memmove((char *)A->values + (size_t)(ib * A->nnz) * es, vals, (size_t)A->nnz * es);
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_matrix_borrow_values(sla_ctx *ctx, sla_matrix *A, const void *vals)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_borrow_values: A is NULL");
    if (!vals && A->nnz > 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "sla_matrix_borrow_values: vals is NULL (the matrix has %lld stored "
                          "entries)", (long long)A->nnz);
    if (A->own_values)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "sla_matrix_borrow_values: the matrix owns its values (create it with "
                          "SLA_BORROW)");
    sla_status st = check_finite(ctx, A->dtype, vals, A->nnz * A->nbatch, A->nnz ? A->nnz : 1);
    if (st) return st;
    A->values = vals ? (void *)vals : empty_values; /* borrowed: read, and written
                                                              * only by set_values */
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_matrix_check_values(sla_ctx *ctx, const sla_matrix *A, sla_int ib)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_check_values: A is NULL");
    if (ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "batch index %lld out of range [0, %lld)",
                          (long long)ib, (long long)A->nbatch);
    sla_int b0 = ib < 0 ? 0 : ib, b1 = ib < 0 ? A->nbatch : ib + 1;
    size_t es = sla__dtype_size(A->dtype);
    for (sla_int b = b0; b < b1; b++) {
        sla_status st = check_finite(ctx, A->dtype, (const char *)A->values + (size_t)(b * A->nnz) * es,
                                     A->nnz, A->nnz ? A->nnz : 1);
        if (st) return sla__error(ctx, st, "%s (value array %lld)", sla_ctx_message(ctx), (long long)b);
    }
    return SLA_OK;
}

sla_status sla_matrix_to_dense(sla_ctx *ctx, const sla_matrix *A, sla_int ib, double *dense,
                               sla_int ld)
{
    if (!A || !dense) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_to_dense: NULL argument");
    sla_status rs = sla__require_real(ctx, A, "sla_matrix_to_dense (use sla_matrix_to_dense_z)");
    if (rs) return rs;
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "batch index %lld out of range", (long long)ib);
    if (ld < A->nrows)
        return sla__error(ctx, SLA_ERR_DIMENSION, "leading dimension %lld < nrows %lld",
                          (long long)ld, (long long)A->nrows);
    for (sla_int j = 0; j < A->ncols; j++)
        for (sla_int i = 0; i < A->nrows; i++) dense[j * ld + i] = 0.0;
    for (sla_int i = 0; i < A->nrows; i++)
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            dense[(sla_int)A->colind[p] * ld + i] = sla__val(A, ib, p);
    return sla__ok(ctx, SLA_OK);
}

sla_int sla__find(const sla_matrix *A, sla_int i, sla_int j)
{
    sla_int lo = A->rowptr[i], hi = A->rowptr[i + 1];
    while (lo < hi) { /* binary search: columns are sorted */
        sla_int mid = lo + (hi - lo) / 2;
        if (A->colind[mid] < j) lo = mid + 1;
        else hi = mid;
    }
    return (lo < A->rowptr[i + 1] && A->colind[lo] == j) ? lo : -1;
}

sla_status sla_matrix_to_dense_z(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla_complex *dense,
                                 sla_int ld)
{
    if (!A || !dense) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_to_dense_z: NULL argument");
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "batch index %lld out of range", (long long)ib);
    if (ld < A->nrows)
        return sla__error(ctx, SLA_ERR_DIMENSION, "leading dimension %lld < nrows %lld",
                          (long long)ld, (long long)A->nrows);
    sla__z *d = (sla__z *)dense;
    for (sla_int j = 0; j < A->ncols; j++)
        for (sla_int i = 0; i < A->nrows; i++) d[j * ld + i] = 0.0;
    for (sla_int i = 0; i < A->nrows; i++)
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            d[(sla_int)A->colind[p] * ld + i] = sla__zval(A, ib, p);
    return sla__ok(ctx, SLA_OK);
}

/* The position of a_ji in row j (columns sorted), or -1: (i, j) a strictly
 * upper entry, so (j, i) is in row j's lower part, usually among its first
 * entries (the first or second on a 2-D stencil), where a short forward
 * scan finds it with branches that repeat from row to row; the binary
 * search past four. props_real on 2-D diffusion 1e6, 2 threads: 6.6-6.8
 * -> 5.7-6.1 ms (the refresh of a training step runs it on every new set
 * of values). */
static inline sla_int mirror_pos(const sla_matrix *A, sla_int j, sla_int i)
{
    sla_int q = A->rowptr[j], e = A->rowptr[j + 1];
    for (int s = 0; s < 4 && q < e; s++, q++)
        if (A->colind[q] >= i) return A->colind[q] == i ? q : -1;
    return q < e ? sla__find(A, j, i) : -1;
}

/* sla_matrix_properties of a real matrix: the same quantities in real
 * arithmetic (|x| instead of a complex modulus, no conjugates: Hermitian
 * means symmetric), rows in parallel. Max and logical-and reductions do not
 * depend on the order, so the result is the serial one exactly. A real
 * matrix's queries sit in every solver creation (auto, saamg's set-up), so
 * they should cost a pass over the values, not a complex one. */
static sla_status props_real(sla_ctx *ctx, const sla_matrix *A, sla_int ib, double tol,
                             sla_matrix_props *props)
{
    const sla_int n = A->nrows, nnz = A->nnz;
    const int nt = sla__threads(ctx);
    double maxabs = 0.0, symerr = 0.0;
    int pdiag = 1, ddom = 1;
    sla_int upper = 0, lower = 0, found = 0;
    if (!props->square) {
#pragma omp parallel for num_threads(nt) schedule(static) reduction(max : maxabs) if (nt > 1 && nnz >= SLA_PAR_MIN)
        for (sla_int p = 0; p < nnz; p++) {
            double a = fabs(sla__val(A, ib, p));
            if (a > maxabs) maxabs = a; /* a NaN is skipped, as fmax does */
        }
        props->max_abs = maxabs;
        return sla__ok(ctx, SLA_OK);
    }
    /* One pass: max |a|, the diagonal, and the mirror of each strictly
     * upper entry (one binary search per pair instead of one per entry;
     * the refresh of a solver runs this on every new set of values). When
     * every upper entry has its mirror and there are as many lower entries,
     * every lower entry is some upper entry's mirror: the pattern is
     * symmetric, and the pairs' differences are the whole symmetry error.
     * Otherwise a second pass measures the entries without a mirror. */
#pragma omp parallel for num_threads(nt) schedule(static) reduction(max : maxabs, symerr) reduction(&& : pdiag, ddom) reduction(+ : upper, lower, found) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        double off = 0.0, diag = 0.0;
        bool has_diag = false;
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sla_int j = A->colind[p];
            double v = sla__val(A, ib, p), a = fabs(v);
            if (a > maxabs) maxabs = a;
            if (j == i) {
                diag = v;
                has_diag = true;
                continue;
            }
            off += a;
            if (j < i) {
                lower++;
                continue;
            }
            upper++;
            sla_int q = mirror_pos(A, j, i);
            if (q < 0) continue;
            found++;
            double d = fabs(v - sla__val(A, ib, q));
            if (d > symerr) symerr = d;
        }
        if (!has_diag || !(diag > 0.0)) pdiag = 0;
        if (fabs(diag) < off) ddom = 0;
    }
    int ssym = found == upper && lower == upper;
    if (!ssym) { /* entries without a mirror: |a_ij - 0| */
#pragma omp parallel for num_threads(nt) schedule(static) reduction(max : symerr) if (nt > 1 && n >= SLA_PAR_MIN)
        for (sla_int i = 0; i < n; i++)
            for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                sla_int j = A->colind[p];
                if (j == i || sla__find(A, j, i) >= 0) continue;
                double d = fabs(sla__val(A, ib, p));
                if (d > symerr) symerr = d;
            }
    }
    props->max_abs = maxabs;
    props->structurally_symmetric = ssym;
    props->symmetry_error = maxabs > 0.0 ? symerr / maxabs : 0.0;
    props->symmetric = props->symmetry_error <= tol;
    props->hermitian_error = props->symmetry_error;
    props->hermitian = props->symmetric;
    props->positive_diagonal = pdiag && n > 0;
    props->diagonally_dominant = ddom;
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_matrix_properties(sla_ctx *ctx, const sla_matrix *A, sla_int ib, double tol,
                                 sla_matrix_props *props)
{
    if (!A || !props) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_properties: NULL argument");
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "batch index %lld out of range", (long long)ib);
    memset(props, 0, sizeof *props);
    const bool cplx = sla__is_complex(A);
    props->is_complex = cplx;
    props->square = A->nrows == A->ncols;
    if (!cplx) return props_real(ctx, A, ib, tol, props);
    double maxabs = 0.0;
    for (sla_int p = 0; p < A->nnz; p++) maxabs = fmax(maxabs, cabs(sla__zval(A, ib, p)));
    props->max_abs = maxabs;
    if (!props->square) return sla__ok(ctx, SLA_OK);

    bool ssym = true, pdiag = true, ddom = true;
    double symerr = 0.0, hermerr = 0.0;
    for (sla_int i = 0; i < A->nrows; i++) {
        double off = 0.0;
        sla__z diag = 0.0;
        bool has_diag = false;
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sla_int j = A->colind[p];
            sla__z v = sla__zval(A, ib, p);
            if (j == i) {
                diag = v;
                has_diag = true;
                hermerr = fmax(hermerr, 2.0 * fabs(cimag(v))); /* |a_ii - conj(a_ii)| */
                continue;
            }
            off += cabs(v);
            sla_int q = sla__find(A, j, i);
            sla__z vt = q >= 0 ? sla__zval(A, ib, q) : 0.0;
            if (q < 0) ssym = false;
            symerr = fmax(symerr, cabs(v - vt));
            hermerr = fmax(hermerr, cabs(v - conj(vt)));
        }
        if (!has_diag || !(creal(diag) > 0.0) || cimag(diag) != 0.0) pdiag = false;
        if (cabs(diag) < off) ddom = false;
    }
    props->structurally_symmetric = ssym;
    props->symmetry_error = maxabs > 0.0 ? symerr / maxabs : 0.0;
    props->symmetric = props->symmetry_error <= tol;
    props->hermitian_error = maxabs > 0.0 ? hermerr / maxabs : 0.0;
    props->hermitian = props->hermitian_error <= tol;
    props->positive_diagonal = pdiag && A->nrows > 0;
    props->diagonally_dominant = ddom;
    return sla__ok(ctx, SLA_OK);
}
