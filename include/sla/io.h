/* sla/io.h — Matrix Market files.
 *
 * Coordinate format: real, integer, pattern or complex field; general,
 * symmetric, skew-symmetric or (complex) hermitian. A symmetric
 * (skew-symmetric, hermitian) file stores one triangle and is expanded to
 * full storage on read (a_ji = a_ij, -a_ij, conj(a_ij)); duplicates are
 * summed. A hermitian file whose diagonal entry has a nonzero imaginary
 * part is refused naming the line. Array format holds dense vectors and
 * multi-column right-hand sides (column-major), real or complex.
 * Validation is strict: every error message names the line.
 */
#ifndef SLA_IO_H
#define SLA_IO_H

#include <stdio.h>
#include "matrix.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Read a coordinate Matrix Market file into a matrix of type dtype. The
 * field decides whether values are complex: a complex file gives a complex
 * matrix of dtype's precision (SLA_F64 or SLA_C128: SLA_C128; SLA_F32 or
 * SLA_C64: SLA_C64), and a real file read with a complex dtype gives zero
 * imaginary parts; check sla_matrix_dtype of the result.
 * Errors: SLA_ERR_IO, SLA_ERR_FORMAT, SLA_ERR_INDEX, SLA_ERR_VALUE,
 * SLA_ERR_UNSUPPORTED, SLA_ERR_NOMEM; the message names the file and line.
 * Memory: the file is read twice in blocks (rows counted, then entries put
 * in their CSR slots, rows sorted and duplicates summed in place), so the
 * peak is the CSR matrix plus one block, O(nrows + nnz) whatever ncols. */
SLA_API sla_status sla_mm_read(sla_ctx *ctx, const char *path, sla_dtype dtype,
                       sla_matrix **out);

/* The same from an open stream; name is used in messages. A stream on a
 * regular file is read twice from its current position like a path; one
 * that cannot be repositioned (a pipe) is read once into COO triplets and
 * converted, with a higher peak (about 3x the CSR matrix) and the same
 * result bit for bit. */
SLA_API sla_status sla_mm_read_stream(sla_ctx *ctx, FILE *f, const char *name,
                              sla_dtype dtype, sla_matrix **out);

/* The same from a memory buffer of len bytes (need not be terminated; read
 * twice, as a file). */
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

/* Write value array ib as "coordinate real general" ("coordinate complex
 * general" for a complex matrix), 1-based, in CSR order, with 17
 * significant digits (round-trips float64 exactly). */
SLA_API sla_status sla_mm_write(sla_ctx *ctx, const char *path, const sla_matrix *A,
                        sla_int ib);

/* Write a coordinate file with A's pattern and the given values (nnz of
 * them), e.g. a gradient dL/dA. A may be complex: only its pattern is
 * used, and the file is "coordinate real general". */
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

/* Complex counterparts: write the nnz complex values on A's pattern
 * ("coordinate complex general"), read an array file of any field into
 * complex values (a real file: zero imaginary parts; free with sla_free),
 * write "array complex general". */
SLA_API sla_status sla_mm_write_pattern_values_z(sla_ctx *ctx, const char *path,
                                                 const sla_matrix *A, const sla_complex *vals);
SLA_API sla_status sla_mm_read_dense_z(sla_ctx *ctx, const char *path, sla_int *nrows,
                                       sla_int *ncols, sla_complex **data);
SLA_API sla_status sla_mm_write_dense_z(sla_ctx *ctx, const char *path, sla_int nrows,
                                        sla_int ncols, const sla_complex *data);

#ifdef __cplusplus
}
#endif
#endif
