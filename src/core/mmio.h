/* What the Matrix Market reader's two files share (private, never installed).
 *
 * mmio_read.c: line reader, banner, size line, entry validation, and the
 * one-pass COO path for streams that cannot be read twice; mmio_csr.c: the
 * two-pass reader straight into CSR. */
#ifndef SLA_MMIO_H
#define SLA_MMIO_H

#include "internal.h"

#include <stdio.h>

/* A source of lines: a FILE or a memory buffer, with the current line. */
typedef struct mm_reader {
    FILE *f;             /* source stream, or NULL for a memory buffer */
    const char *buf;     /* memory source */
    size_t len, pos;
    char *line;          /* current line, NUL-terminated, no newline */
    size_t cap;
    long long lineno;    /* number of the current line (1-based) */
    const char *name;    /* used in messages */
    sla_allocator a;
} mm_reader;

typedef enum { MM_COORD, MM_ARRAY } mm_format;
typedef enum { MM_REAL, MM_INTEGER, MM_PATTERN, MM_COMPLEX } mm_field;
typedef enum { MM_GENERAL, MM_SYMMETRIC, MM_SKEW, MM_HERMITIAN } mm_symmetry;

typedef struct mm_header {
    mm_format format;
    mm_field field;
    mm_symmetry symmetry;
} mm_header;

/* Lines handed to the parsers below end at a NUL or a '\n'. */

/* Blank or comment line (skipped after the banner). */
bool sla__mm_skippable(const char *s);

/* The row and column index tokens at *p (1-based in the file, checked
 * against sz[0] x sz[1]; 0-based out), *p moved past them. Messages name
 * r->name and r->lineno. */
sla_status sla__mm_parse_indices(sla_ctx *ctx, const mm_reader *r, const char **p,
                                 const long long *sz, sla_int *i, sla_int *j);

/* The whole entry on line: indices, value(s) of h's field (v = 1 for a
 * pattern; vi = 0 unless complex), nothing after them, and the diagonal
 * rules of skew-symmetric and hermitian files. */
sla_status sla__mm_parse_entry(sla_ctx *ctx, const mm_reader *r, const char *line,
                               const mm_header *h, const long long *sz, sla_dtype dtype,
                               sla_int *i, sla_int *j, double *v, double *vi);

/* The messages for a file that ends early, has entries past the declared
 * count, and duplicates whose sum overflows (CSR entry k). */
sla_status sla__mm_ends_early(sla_ctx *ctx, const mm_reader *r, long long k, long long declared);
sla_status sla__mm_too_many(sla_ctx *ctx, const mm_reader *r, long long declared);
sla_status sla__mm_sum_overflows(sla_ctx *ctx, const mm_reader *r, sla_int k);

/* True when the entries after the size line can be read a second time:
 * a memory buffer, or a stream on a regular file at a known offset. */
bool sla__mm_rereadable(const mm_reader *r);

/* Read the coordinate entries that follow the size line (r positioned
 * there, sizes sz checked) into a CSR matrix of dtype, in two passes over
 * the source; needs sla__mm_rereadable(r). */
sla_status sla__mm_read_csr(sla_ctx *ctx, mm_reader *r, const mm_header *h,
                            const long long *sz, sla_dtype dtype, sla_matrix **out);

#endif
