/* sla/io.h — Matrix Market files.
 *
 * Coordinate format: real, integer or pattern field; general, symmetric or
 * skew-symmetric. A symmetric (skew-symmetric) file stores one triangle and
 * is expanded to full storage on read; duplicates are summed. Complex and
 * hermitian files are refused with SLA_ERR_UNSUPPORTED. Array format holds
 * dense vectors and multi-column right-hand sides (column-major).
 * Validation is strict: every error message names the line.
 */
#ifndef SLA_IO_H
#define SLA_IO_H

#include <stdio.h>
#include "matrix.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Read a coordinate Matrix Market file into a matrix of type dtype.
 * Errors: SLA_ERR_IO, SLA_ERR_FORMAT, SLA_ERR_INDEX, SLA_ERR_VALUE,
 * SLA_ERR_UNSUPPORTED, SLA_ERR_NOMEM; the message names the file and line. */
SLA_API sla_status sla_mm_read(sla_ctx *ctx, const char *path, sla_dtype dtype,
                       sla_matrix **out);

/* The same from an open stream; name is used in messages. */
SLA_API sla_status sla_mm_read_stream(sla_ctx *ctx, FILE *f, const char *name,
                              sla_dtype dtype, sla_matrix **out);

/* The same from a memory buffer of len bytes (need not be terminated). */
SLA_API sla_status sla_mm_read_buffer(sla_ctx *ctx, const char *buf, size_t len,
                              sla_dtype dtype, sla_matrix **out);

/* The writers below replace their file atomically: they write a temporary
 * file in the same folder (".sla-write-XXXXXXXXXXXX.tmp"), flush and fsync
 * it, and rename it over path; on any failure (SLA_ERR_IO with the errno
 * text, e.g. ENOSPC; SLA_ERR_VALUE for a non-finite value, which Matrix
 * Market cannot hold) the temporary file is removed and an existing file is
 * left as it was. The file's permission bits are kept; a symbolic link is
 * followed and stays a link; a file that may not be written is refused. An
 * existing path that is not a regular file (/dev/null, /dev/full, a FIFO)
 * is written in place. Nothing is printed. */

/* Write value array ib as "coordinate real general", 1-based, in CSR order,
 * with 17 significant digits (round-trips float64 exactly). */
SLA_API sla_status sla_mm_write(sla_ctx *ctx, const char *path, const sla_matrix *A,
                        sla_int ib);

/* Write a coordinate file with A's pattern and the given values (nnz of
 * them), e.g. a gradient dL/dA. */
SLA_API sla_status sla_mm_write_pattern_values(sla_ctx *ctx, const char *path,
                                       const sla_matrix *A,
                                       const double *vals);

/* Read an array-format file (real or integer, general): *data receives
 * nrows*ncols values, column-major, allocated with ctx's allocator; free it
 * with sla_free(ctx, *data). */
SLA_API sla_status sla_mm_read_dense(sla_ctx *ctx, const char *path, sla_int *nrows,
                             sla_int *ncols, double **data);

/* Write a column-major nrows x ncols array as "array real general". */
SLA_API sla_status sla_mm_write_dense(sla_ctx *ctx, const char *path, sla_int nrows,
                              sla_int ncols, const double *data);

#ifdef __cplusplus
}
#endif
#endif
