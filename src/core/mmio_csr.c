/* Matrix Market coordinate entries read in two passes straight into CSR.
 *
 * Pass 1 reads each entry's row and column index and counts the entries of
 * every row (a symmetric file's mirrored entries included) in the row
 * pointer array. Pass 2 reads the source again from the first entry,
 * parses every entry in full and puts it in its row's next slot. Then each
 * row is sorted by column, stably, and duplicates are summed in place in
 * file order, which is the order sla_matrix_from_coo sums them in: the
 * matrix is bitwise the one the one-pass COO reader (mmio_read.c) gives.
 * Peak memory is the CSR arrays plus a block buffer, instead of COO
 * triplets, their growth copies and the conversion's sort workspace.
 *
 * The source is read in blocks (a memory buffer is copied block by block,
 * a stream on a regular file is read with fread and repositioned with
 * fseeko), so no more of the file is resident than one block; every line
 * handed to the parsers ends in '\n' or in a NUL written after it.
 *
 * Errors: the one-pass reader reports the first error in file order, and so
 * does this one. Pass 2 validates everything in order; pass 1 checks the
 * indices only, so when it fails (or the row pointers cannot be had) a
 * validation pass that stores nothing finds the first error at or before
 * the one pass 1 met.
 */
#define _POSIX_C_SOURCE 200809L

#include "mmio.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

/* ---- the source, block by block ----------------------------------------- */

enum { MM_BLOCK = 1 << 20 };

typedef struct mm_blocks {
    mm_reader *r;      /* source (r->f or r->buf), name and line number */
    char *buf;         /* cap + 1 bytes: room for a NUL after the last line */
    size_t cap, beg, end;
    bool eof;
    bool nul;          /* a NUL byte was read: lines are searched for it */
    long long line0;   /* line number of the size line */
    off_t off0;        /* stream offset of what follows it */
    size_t pos0;       /* buffer offset of what follows it */
} mm_blocks;

bool sla__mm_rereadable(const mm_reader *r)
{
    if (!r->f) return true;
    int fd = fileno(r->f);
    struct stat sb;
    return fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && ftello(r->f) >= 0;
}

static sla_status blk_init(sla_ctx *ctx, mm_blocks *b, mm_reader *r)
{
    memset(b, 0, sizeof *b);
    b->r = r;
    b->line0 = r->lineno;
    b->pos0 = r->pos;
    size_t left = SIZE_MAX;
    if (r->f) {
        struct stat sb;
        b->off0 = ftello(r->f);
        if (fstat(fileno(r->f), &sb) == 0 && sb.st_size >= b->off0)
            left = (size_t)(sb.st_size - b->off0);
    } else {
        left = r->len - r->pos;
    }
    b->cap = left < MM_BLOCK - 64 ? left + 64 : MM_BLOCK; /* small inputs: a small buffer */
    b->buf = sla__malloc(&r->a, b->cap + 1, 1);
    if (!b->buf)
        return sla__error(ctx, SLA_ERR_NOMEM, "%s: out of memory for a read buffer", r->name);
    return SLA_OK;
}

static void blk_free(mm_blocks *b)
{
    sla__free(&b->r->a, b->buf);
    b->buf = NULL;
}

/* Back to the first line after the size line. */
static sla_status blk_rewind(sla_ctx *ctx, mm_blocks *b)
{
    mm_reader *r = b->r;
    b->beg = b->end = 0;
    b->eof = b->nul = false;
    r->lineno = b->line0;
    if (!r->f) {
        r->pos = b->pos0;
        return SLA_OK;
    }
    if (fseeko(r->f, b->off0, SEEK_SET) == 0) return SLA_OK;
    return sla__error(ctx, SLA_ERR_IO, "%s:%lld: cannot go back to read the entries again: %s",
                      r->name, r->lineno, strerror(errno));
}

/* Move the unread bytes to the front (growing the buffer when they fill
 * it) and read more after them; eof when nothing more comes. */
static sla_status blk_fill(sla_ctx *ctx, mm_blocks *b)
{
    mm_reader *r = b->r;
    if (b->beg > 0) {
        memmove(b->buf, b->buf + b->beg, b->end - b->beg);
        b->end -= b->beg;
        b->beg = 0;
    }
    if (b->end == b->cap) {
        size_t cap = b->cap * 2;
        char *p = cap > b->cap && cap < SIZE_MAX ? sla__malloc(&r->a, cap + 1, 1) : NULL;
        if (!p)
            return sla__error(ctx, SLA_ERR_NOMEM, "%s:%lld: out of memory reading a line",
                              r->name, r->lineno + 1);
        memcpy(p, b->buf, b->end);
        sla__free(&r->a, b->buf);
        b->buf = p;
        b->cap = cap;
    }
    size_t want = b->cap - b->end, got = 0;
    if (r->f) {
        got = fread(b->buf + b->end, 1, want, r->f);
        if (got < want && ferror(r->f))
            return sla__error(ctx, SLA_ERR_IO, "%s:%lld: read error: %s", r->name,
                              r->lineno + 1, strerror(errno));
    } else {
        got = r->len - r->pos < want ? r->len - r->pos : want;
        memcpy(b->buf + b->end, r->buf + r->pos, got);
        r->pos += got;
    }
    if (got == 0) b->eof = true;
    else if (memchr(b->buf + b->end, '\0', got)) b->nul = true;
    b->end += got;
    return SLA_OK;
}

/* Next line (ending in '\n', or in a NUL at the end of the input) into
 * *line; *got = false at the end of the input. */
static sla_status blk_line(sla_ctx *ctx, mm_blocks *b, const char **line, bool *got)
{
    for (;;) {
        char *s = b->buf + b->beg;
        size_t avail = b->end - b->beg;
        char *nl = memchr(s, '\n', avail);
        if (nl || b->eof) {
            size_t n = nl ? (size_t)(nl - s) : avail;
            *got = nl || n > 0;
            if (!*got) return SLA_OK;
            if (b->nul && memchr(s, '\0', n))
                return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: NUL byte in a text file",
                                  b->r->name, b->r->lineno + 1);
            if (!nl) s[n] = '\0'; /* s + n = buf + end <= buf + cap */
            b->beg += nl ? n + 1 : n;
            b->r->lineno++;
            *line = s;
            return SLA_OK;
        }
        sla_status st = blk_fill(ctx, b);
        if (st) return st;
    }
}

/* Next line with content; *got = false at the end of the input. */
static sla_status blk_content_line(sla_ctx *ctx, mm_blocks *b, const char **line, bool *got)
{
    sla_status st;
    do {
        if ((st = blk_line(ctx, b, line, got))) return st;
    } while (*got && sla__mm_skippable(*line));
    return SLA_OK;
}

/* ---- the CSR being filled ------------------------------------------------- */

typedef struct csr_fill {
    sla_int *rowptr;  /* pass 1: entries per row; pass 2: each row's next slot */
    int32_t *colind;  /* -1 marks a free slot */
    void *values;
    sla_int nslots;   /* entries, mirrored ones included */
    sla_int placed;
    sla_dtype dtype;
} csr_fill;

static sla_status file_changed(sla_ctx *ctx, const mm_reader *r)
{
    return sla__error(ctx, SLA_ERR_IO, "%s:%lld: the file changed while it was read",
                      r->name, r->lineno);
}

/* Entry (i, j) = re + i im in row i's next slot; false when that slot is
 * not free (the source differs from what pass 1 counted). Stored as
 * 0 + v, the first step of sla_matrix_from_coo's sums (-0 becomes +0). */
static bool place(csr_fill *c, sla_int i, sla_int j, double re, double im)
{
    sla_int p = c->rowptr[i];
    if (p >= c->nslots || c->colind[p] >= 0) return false;
    c->rowptr[i] = p + 1;
    c->colind[p] = (int32_t)j;
    c->placed++;
    switch (c->dtype) {
    case SLA_F64: ((double *)c->values)[p] = 0.0 + re; break;
    case SLA_F32: ((float *)c->values)[p] = 0.0f + (float)re; break;
    case SLA_C128:
        ((double *)c->values)[2 * p] = 0.0 + re;
        ((double *)c->values)[2 * p + 1] = 0.0 + im;
        break;
    case SLA_C64:
        ((float *)c->values)[2 * p] = 0.0f + (float)re;
        ((float *)c->values)[2 * p + 1] = 0.0f + (float)im;
        break;
    }
    return true;
}

typedef enum { SCAN_COUNT, SCAN_FILL, SCAN_CHECK } scan_mode;

/* Entries are parsed into a batch, then counted or placed in one tight
 * loop: the scattered row accesses of an unsorted file then overlap
 * (between parses, each cache miss would wait alone). */
enum { MM_BATCH = 256 };

typedef struct mm_entry {
    sla_int i, j;
    double v, vi;
} mm_entry;

static bool flush(csr_fill *c, const mm_header *h, scan_mode mode, const mm_entry *e, int m)
{
    const bool mirror = h->symmetry != MM_GENERAL;
    /* the mirror of a_ij: a_ij (symmetric), -a_ij (skew), conj(a_ij) (hermitian) */
    const double sre = h->symmetry == MM_SKEW ? -1.0 : 1.0;
    const double sim = h->symmetry == MM_SYMMETRIC ? 1.0 : -1.0;
    if (mode == SCAN_COUNT) {
        for (int t = 0; t < m; t++) {
            c->rowptr[e[t].i]++;
            if (mirror && e[t].i != e[t].j) c->rowptr[e[t].j]++;
        }
        return true;
    }
    for (int t = 0; t < m; t++) {
        if (!place(c, e[t].i, e[t].j, e[t].v, e[t].vi)) return false;
        if (mirror && e[t].i != e[t].j && !place(c, e[t].j, e[t].i, sre * e[t].v, sim * e[t].vi))
            return false;
    }
    return true;
}

/* One pass over the entries: count them per row (indices only), or parse
 * them in full and place them, or parse them in full and only count them
 * (mirrors included) in c->nslots when c is given. */
static sla_status scan(sla_ctx *ctx, mm_blocks *b, const mm_header *h, const long long *sz,
                       sla_dtype dtype, scan_mode mode, csr_fill *c)
{
    mm_reader *r = b->r;
    mm_entry batch[MM_BATCH];
    int m = 0;
    const char *line = NULL;
    bool got = false;
    sla_status st = blk_rewind(ctx, b);
    if (st) return st;
    for (long long k = 0; k < sz[2]; k++) {
        if ((st = blk_content_line(ctx, b, &line, &got))) return st;
        if (!got) return sla__mm_ends_early(ctx, r, k, sz[2]);
        mm_entry *e = &batch[m];
        e->v = 1.0;
        e->vi = 0.0;
        if (mode == SCAN_COUNT) {
            const char *p = line;
            st = sla__mm_parse_indices(ctx, r, &p, sz, &e->i, &e->j);
        } else {
            st = sla__mm_parse_entry(ctx, r, line, h, sz, dtype, &e->i, &e->j, &e->v, &e->vi);
        }
        if (st) return st;
        if (mode == SCAN_CHECK && c) c->nslots += e->i != e->j && h->symmetry != MM_GENERAL ? 2 : 1;
        if (mode != SCAN_CHECK && ++m == MM_BATCH) {
            if (!flush(c, h, mode, batch, m)) return file_changed(ctx, r);
            m = 0;
        }
    }
    if (m > 0 && !flush(c, h, mode, batch, m)) return file_changed(ctx, r);
    if ((st = blk_content_line(ctx, b, &line, &got)) || !got) return st;
    return sla__mm_too_many(ctx, r, sz[2]);
}

/* Pass 1 failed with st (or its memory could not be had): the full
 * validation's first error if there is one, else st. */
static sla_status first_error(sla_ctx *ctx, mm_blocks *b, const mm_header *h,
                              const long long *sz, sla_dtype dtype, sla_status st)
{
    sla_status st2 = scan(ctx, b, h, sz, dtype, SCAN_CHECK, NULL);
    return st2 ? st2 : st;
}

/* Counts -> row starts (exclusive prefix sums); the slots, all free. */
static sla_status alloc_slots(sla_ctx *ctx, const mm_reader *r, csr_fill *c, sla_int n)
{
    sla_int total = 0;
    for (sla_int i = 0; i < n; i++) {
        sla_int cnt = c->rowptr[i];
        c->rowptr[i] = total;
        total += cnt;
    }
    c->rowptr[n] = total;
    c->nslots = total;
    c->colind = sla__malloc(&r->a, (size_t)total, sizeof *c->colind);
    c->values = sla__malloc(&r->a, (size_t)total, sla__dtype_size(c->dtype));
    if (!c->colind || !c->values)
        return sla__error(ctx, SLA_ERR_NOMEM, "%s: out of memory storing %lld entries", r->name,
                          (long long)total);
    memset(c->colind, 0xff, (size_t)total * sizeof *c->colind); /* -1: free */
    return SLA_OK;
}

/* After pass 2 rowptr[i] is the end of row i. Every slot was taken once
 * (place refuses a taken one) and the ends do not decrease: then each row
 * filled exactly the slots between the previous row's end and its own,
 * whatever happened to the file between the passes. */
static sla_status close_rows(sla_ctx *ctx, const mm_reader *r, csr_fill *c, sla_int n)
{
    bool ok = c->placed == c->nslots;
    for (sla_int i = 0; ok && i + 1 < n; i++) ok = c->rowptr[i] <= c->rowptr[i + 1];
    if (!ok) return file_changed(ctx, r);
    if (n > 0) memmove(c->rowptr + 1, c->rowptr, (size_t)n * sizeof *c->rowptr);
    c->rowptr[0] = 0;
    return SLA_OK;
}

/* ---- sorting rows and summing duplicates ---------------------------------- */

typedef struct row_key {
    int64_t pos;
    int32_t col;
} row_key;

static int row_key_cmp(const void *pa, const void *pb)
{
    const row_key *a = pa, *b = pb;
    if (a->col != b->col) return a->col < b->col ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos); /* file order: a stable sort */
}

typedef struct sort_work {
    row_key *keys;
    unsigned char *vals;
    size_t cap;
} sort_work;

/* Sort slots [s, e) by column, duplicates kept in slot (file) order. */
static bool sort_row(const sla_allocator *a, csr_fill *c, sla_int s, sla_int e, sort_work *w)
{
    const size_t es = sla__dtype_size(c->dtype), len = (size_t)(e - s);
    int32_t *col = c->colind + s;
    unsigned char *val = (unsigned char *)c->values + (size_t)s * es;
    if (len <= 32) { /* insertion sort: strict comparison keeps ties in order */
        unsigned char t[16];
        for (size_t q = 1; q < len; q++) {
            int32_t cq = col[q];
            size_t p = q;
            memcpy(t, val + q * es, es);
            for (; p > 0 && col[p - 1] > cq; p--) col[p] = col[p - 1];
            memmove(val + (p + 1) * es, val + p * es, (q - p) * es);
            col[p] = cq;
            memcpy(val + p * es, t, es);
        }
        return true;
    }
    if (len > w->cap) {
        sla__free(a, w->keys);
        sla__free(a, w->vals);
        w->keys = sla__malloc(a, len, sizeof *w->keys);
        w->vals = sla__malloc(a, len, es);
        w->cap = w->keys && w->vals ? len : 0;
        if (!w->cap) return false;
    }
    for (size_t q = 0; q < len; q++) w->keys[q] = (row_key){(int64_t)q, col[q]};
    qsort(w->keys, len, sizeof *w->keys, row_key_cmp);
    for (size_t q = 0; q < len; q++) {
        col[q] = w->keys[q].col;
        memcpy(w->vals + q * es, val + (size_t)w->keys[q].pos * es, es);
    }
    memcpy(val, w->vals, len * es);
    return true;
}

/* values[w] = the sum of values[p..q) in order (dtype arithmetic, as
 * sla_matrix_from_coo adds); false when a sum of several is not finite. */
static bool sum_run(sla_dtype dtype, void *values, sla_int w, sla_int p, sla_int q)
{
    double re = 0.0, im = 0.0;
    switch (dtype) {
    case SLA_F64: {
        double *x = values, acc = x[p];
        for (sla_int t = p + 1; t < q; t++) acc += x[t];
        x[w] = re = acc;
        break;
    }
    case SLA_F32: {
        float *x = values, acc = x[p];
        for (sla_int t = p + 1; t < q; t++) acc += x[t];
        x[w] = acc;
        re = acc;
        break;
    }
    case SLA_C128: {
        double *x = values, ar = x[2 * p], ai = x[2 * p + 1];
        for (sla_int t = p + 1; t < q; t++) {
            ar += x[2 * t];
            ai += x[2 * t + 1];
        }
        x[2 * w] = re = ar;
        x[2 * w + 1] = im = ai;
        break;
    }
    case SLA_C64: {
        float *x = values, ar = x[2 * p], ai = x[2 * p + 1];
        for (sla_int t = p + 1; t < q; t++) {
            ar += x[2 * t];
            ai += x[2 * t + 1];
        }
        x[2 * w] = ar;
        x[2 * w + 1] = ai;
        re = ar;
        im = ai;
        break;
    }
    }
    return q - p == 1 || (isfinite(re) && isfinite(im));
}

static bool strictly_increasing(const int32_t *col, sla_int len)
{
    for (sla_int q = 1; q < len; q++)
        if (col[q] <= col[q - 1]) return false;
    return true;
}

/* Sort each row, sum its duplicates and close the gaps they leave. */
static sla_status merge_rows(sla_ctx *ctx, const mm_reader *r, csr_fill *c, sla_int n)
{
    const size_t es = sla__dtype_size(c->dtype);
    sort_work work = {NULL, NULL, 0};
    sla_status st = SLA_OK;
    sla_int w = 0, s = 0;
    unsigned char *vals = c->values;
    for (sla_int i = 0; i < n && !st; i++) {
        const sla_int e = c->rowptr[i + 1];
        c->rowptr[i] = w;
        if (strictly_increasing(c->colind + s, e - s)) { /* the usual row: moved at most */
            if (w != s) {
                memmove(c->colind + w, c->colind + s, (size_t)(e - s) * sizeof *c->colind);
                memmove(vals + (size_t)w * es, vals + (size_t)s * es, (size_t)(e - s) * es);
            }
            w += e - s;
            s = e;
            continue;
        }
        if (!sort_row(&r->a, c, s, e, &work)) {
            st = sla__error(ctx, SLA_ERR_NOMEM, "%s: out of memory sorting row %lld",
                            r->name, (long long)i + 1);
            break;
        }
        for (sla_int p = s; p < e;) {
            sla_int q = p + 1;
            while (q < e && c->colind[q] == c->colind[p]) q++;
            c->colind[w] = c->colind[p];
            if (!sum_run(c->dtype, c->values, w, p, q)) {
                st = sla__mm_sum_overflows(ctx, r, w);
                break;
            }
            w++;
            p = q;
        }
        s = e;
    }
    c->rowptr[n] = w;
    sla__free(&r->a, work.keys);
    sla__free(&r->a, work.vals);
    return st;
}

/* Arrays of the final size when duplicates left room (kept as they are
 * when the copy cannot be had: only their tails go unused). */
static void shrink(const sla_allocator *a, csr_fill *c, sla_int nnz)
{
    if (nnz == c->nslots) return;
    const size_t es = sla__dtype_size(c->dtype);
    int32_t *ci = sla__malloc(a, (size_t)nnz, sizeof *ci);
    void *v = sla__malloc(a, (size_t)nnz, es);
    if (!ci || !v) {
        sla__free(a, ci);
        sla__free(a, v);
        return;
    }
    memcpy(ci, c->colind, (size_t)nnz * sizeof *ci);
    memcpy(v, c->values, (size_t)nnz * es);
    sla__free(a, c->colind);
    sla__free(a, c->values);
    c->colind = ci;
    c->values = v;
}

sla_status sla__mm_read_csr(sla_ctx *ctx, mm_reader *r, const mm_header *h,
                            const long long *sz, sla_dtype dtype, sla_matrix **out)
{
    const sla_int n = sz[0];
    csr_fill c = {NULL, NULL, NULL, 0, 0, dtype};
    mm_blocks b;
    sla_status st = blk_init(ctx, &b, r);
    if (st) return st;
    /* O(nrows) row pointers, refused when the memory cannot hold them (a
     * header may declare 2^31 - 1 rows for one entry); nothing O(ncols).
     * As in the one-pass reader, an error in the file comes first, and the
     * refusal counts the entries the file has (mirrors included). */
    const double rp_bytes = 8.0 * ((double)n + 1.0);
    bool validated = false;
    st = sla__check_index_memory(ctx, n, sz[1], sz[2], rp_bytes);
    if (st) {
        st = scan(ctx, &b, h, sz, dtype, SCAN_CHECK, &c);
        if (!st) st = sla__check_index_memory(ctx, n, sz[1], c.nslots, rp_bytes);
        c.nslots = 0;
        validated = true;
    }
    if (!st && !(c.rowptr = sla__calloc(&r->a, (size_t)n + 1, sizeof *c.rowptr)))
        st = sla__error(ctx, SLA_ERR_NOMEM, "%s: out of memory for the row pointers of a "
                        "%lld x %lld matrix", r->name, sz[0], sz[1]);
    if (!st) st = scan(ctx, &b, h, sz, dtype, SCAN_COUNT, &c);
    if (st && !validated) st = first_error(ctx, &b, h, sz, dtype, st);
    if (!st) st = alloc_slots(ctx, r, &c, n);
    if (!st) st = scan(ctx, &b, h, sz, dtype, SCAN_FILL, &c);
    blk_free(&b);
    if (!st) st = close_rows(ctx, r, &c, n);
    if (!st) st = merge_rows(ctx, r, &c, n);
    sla_matrix *A = NULL;
    if (!st) {
        shrink(&r->a, &c, c.rowptr[n]);
        A = sla__matrix_wrap(&r->a, n, sz[1], c.rowptr[n], 1, dtype, c.rowptr, c.colind,
                             c.values);
        if (!A) st = sla__error(ctx, SLA_ERR_NOMEM, "%s: out of memory", r->name);
    }
    if (st) {
        sla__free(&r->a, c.rowptr);
        sla__free(&r->a, c.colind);
        sla__free(&r->a, c.values);
        return st;
    }
    *out = A;
    return SLA_OK;
}
