/* Matrix Market reader (coordinate and array formats); mmio_write.c writes them.
 *
 * The reader takes lines one byte at a time from a FILE or a memory buffer
 * into a buffer that grows as needed, so long lines are never truncated.
 * Comment lines (first non-blank character '%') and blank lines are allowed
 * anywhere after the banner. Errors name the file and line: "A.mtx:7: ...".
 *
 * Symmetric files: every off-diagonal entry (i, j) is stored at (i, j) and
 * (j, i), whichever triangle it came from, so a file that lists both
 * triangles has those entries counted twice (the standard stores one).
 * Skew-symmetric files: a_ji = -a_ij, and diagonal entries must be zero.
 * Complex files (two numbers per entry) give a complex matrix; hermitian
 * files (complex only) store a_ji = conj(a_ij), with a real diagonal.
 *
 * Numbers are parsed with strtod, so the C library's LC_NUMERIC must use
 * '.' (the default "C" locale does).
 *
 * A source that can be read twice (a memory buffer, a stream on a regular
 * file: what sla_mm_read opens) goes through mmio_csr.c, which fills the
 * CSR arrays directly; other streams (pipes) are read here in one pass into
 * COO triplets that sla_matrix_from_coo converts. Both validate every entry
 * with the functions below and give the same matrix, bit for bit.
 */
#define _POSIX_C_SOURCE 200809L

#include "mmio.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- line reader -------------------------------------------------------- */

static void rd_init(mm_reader *r, sla_ctx *ctx, FILE *f, const char *buf,
                    size_t len, const char *name)
{
    memset(r, 0, sizeof *r);
    r->f = f;
    r->buf = buf;
    r->len = len;
    r->name = name;
    r->a = sla__ctx_alloc(ctx);
}

static void rd_free(mm_reader *r)
{
    sla__free(&r->a, r->line);
    r->line = NULL;
    r->cap = 0;
}

static int rd_getc(mm_reader *r)
{
    if (r->f) return getc_unlocked(r->f);
    return r->pos < r->len ? (unsigned char)r->buf[r->pos++] : EOF;
}

/* Make room for at least `need` bytes in the line buffer. */
static sla_status rd_reserve(sla_ctx *ctx, mm_reader *r, size_t need)
{
    if (need <= r->cap) return SLA_OK;
    size_t cap = r->cap ? r->cap : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2)
            return sla__error(ctx, SLA_ERR_TOO_LARGE, "%s:%lld: line too long",
                              r->name, r->lineno);
        cap *= 2;
    }
    char *p = sla__malloc(&r->a, cap, 1);
    if (!p)
        return sla__error(ctx, SLA_ERR_NOMEM, "%s:%lld: out of memory reading a line",
                          r->name, r->lineno);
    if (r->line) memcpy(p, r->line, r->cap);
    sla__free(&r->a, r->line);
    r->line = p;
    r->cap = cap;
    return SLA_OK;
}

/* Read the next line into r->line; *got = false at end of input. */
static sla_status rd_line(sla_ctx *ctx, mm_reader *r, bool *got)
{
    size_t n = 0;
    int c = EOF;
    sla_status st = rd_reserve(ctx, r, 1);
    if (st) return st;
    *got = false;
    while ((c = rd_getc(r)) != EOF) {
        *got = true;
        if (c == '\n') break;
        if (c == '\0')
            return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: NUL byte in a text file",
                              r->name, r->lineno + 1);
        if ((st = rd_reserve(ctx, r, n + 2))) return st;
        r->line[n++] = (char)c;
    }
    if (c == EOF && r->f && ferror(r->f))
        return sla__error(ctx, SLA_ERR_IO, "%s:%lld: read error: %s", r->name,
                          r->lineno + 1, strerror(errno));
    if (n > 0 && r->line[n - 1] == '\r') n--; /* CRLF line ends */
    r->line[n] = '\0';
    if (*got) r->lineno++;
    return SLA_OK;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

bool sla__mm_skippable(const char *s)
{
    while (is_space(*s)) s++;
    return *s == '\0' || *s == '\n' || *s == '%';
}

/* Next line with content; *got = false at end of input. */
static sla_status rd_content_line(sla_ctx *ctx, mm_reader *r, bool *got)
{
    sla_status st;
    do {
        if ((st = rd_line(ctx, r, got))) return st;
    } while (*got && sla__mm_skippable(r->line));
    return SLA_OK;
}

/* ---- tokens and numbers ----------------------------------------------- */

/* Next whitespace-separated token of *p, a line that ends at a NUL or a
 * '\n' (the token is not NUL-terminated: it ends after *len bytes, where
 * strtod stops too). NULL when none is left. */
static const char *next_token(const char **p, size_t *len)
{
    const char *s = *p;
    while (is_space(*s)) s++;
    if (*s == '\0' || *s == '\n') {
        *p = s;
        return NULL;
    }
    const char *e = s;
    while (*e && *e != '\n' && !is_space(*e)) e++;
    *len = (size_t)(e - s);
    *p = e;
    return s;
}

static bool token_is(const char *tok, size_t len, const char *word)
{
    size_t i = 0;
    for (; i < len && word[i]; i++) {
        char c = tok[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != word[i]) return false;
    }
    return i == len && word[i] == '\0';
}

typedef enum { NUM_OK, NUM_BAD, NUM_RANGE } num_result;

/* Decimal integer filling exactly the token: an optional sign and digits
 * (what strtoll accepts in base 10 with nothing around it; out of the
 * long long range: NUM_RANGE). Written out because indices are most of
 * a file's numbers and strtoll's generality costs. */
static num_result parse_int(const char *tok, size_t len, long long *v)
{
    size_t k = 0;
    const bool neg = len > 0 && tok[0] == '-';
    if (len > 0 && (tok[0] == '-' || tok[0] == '+')) k = 1;
    if (k == len) return NUM_BAD;
    const unsigned long long limit = neg ? (unsigned long long)LLONG_MAX + 1ull : LLONG_MAX;
    unsigned long long u = 0;
    bool range = false;
    for (; k < len; k++) {
        unsigned d = (unsigned)(unsigned char)tok[k] - '0';
        if (d > 9) return NUM_BAD;
        if (u > (limit - d) / 10) range = true;
        else u = 10 * u + d;
    }
    if (range) return NUM_RANGE;
    *v = neg ? (long long)(0ull - u) : (long long)u;
    return NUM_OK;
}

/* Real number filling exactly the token (overflow gives +-Inf). */
static num_result parse_real(const char *tok, size_t len, double *v)
{
    char *end = NULL;
    *v = strtod(tok, &end);
    return (len > 0 && end == tok + len) ? NUM_OK : NUM_BAD;
}

/* ---- header ------------------------------------------------------------- */

static sla_status bad_banner(sla_ctx *ctx, const mm_reader *r, const char *what,
                             const char *tok, size_t len)
{
    return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: %s \"%.*s\" in the Matrix Market banner",
                      r->name, r->lineno, what, (int)(len > 64 ? 64 : len), tok);
}

static sla_status parse_format(sla_ctx *ctx, const mm_reader *r, const char *t, size_t n,
                               mm_header *h)
{
    if (token_is(t, n, "coordinate")) h->format = MM_COORD;
    else if (token_is(t, n, "array")) h->format = MM_ARRAY;
    else return bad_banner(ctx, r, "unknown format", t, n);
    return SLA_OK;
}

static sla_status parse_field(sla_ctx *ctx, const mm_reader *r, const char *t, size_t n,
                              mm_header *h)
{
    if (token_is(t, n, "real")) h->field = MM_REAL;
    else if (token_is(t, n, "integer")) h->field = MM_INTEGER;
    else if (token_is(t, n, "pattern")) h->field = MM_PATTERN;
    else if (token_is(t, n, "complex")) h->field = MM_COMPLEX;
    else return bad_banner(ctx, r, "unknown field", t, n);
    return SLA_OK;
}

static sla_status parse_symmetry(sla_ctx *ctx, const mm_reader *r, const char *t, size_t n,
                                 mm_header *h)
{
    if (token_is(t, n, "general")) h->symmetry = MM_GENERAL;
    else if (token_is(t, n, "symmetric")) h->symmetry = MM_SYMMETRIC;
    else if (token_is(t, n, "skew-symmetric")) h->symmetry = MM_SKEW;
    else if (token_is(t, n, "hermitian")) h->symmetry = MM_HERMITIAN;
    else return bad_banner(ctx, r, "unknown symmetry", t, n);
    return SLA_OK;
}

/* "%%MatrixMarket matrix <format> <field> <symmetry>" on the first line. */
static sla_status read_banner(sla_ctx *ctx, mm_reader *r, mm_header *h)
{
    bool got = false;
    sla_status st = rd_line(ctx, r, &got);
    if (st) return st;
    if (!got)
        return sla__error(ctx, SLA_ERR_FORMAT, "%s:1: empty file (no Matrix Market banner)",
                          r->name);
    const char *p = r->line, *t[6];
    size_t n[6] = {0};
    int count = 0;
    while (count < 6 && (t[count] = next_token(&p, &n[count]))) count++;
    if (count == 0 || !token_is(t[0], n[0], "%%matrixmarket"))
        return sla__error(ctx, SLA_ERR_FORMAT,
                          "%s:%lld: missing banner: the first line must start with "
                          "\"%%%%MatrixMarket\"", r->name, r->lineno);
    if (count < 5)
        return sla__error(ctx, SLA_ERR_FORMAT,
                          "%s:%lld: incomplete banner: expected \"%%%%MatrixMarket matrix "
                          "<format> <field> <symmetry>\"", r->name, r->lineno);
    if (count > 5) return bad_banner(ctx, r, "unexpected word", t[5], n[5]);
    if (!token_is(t[1], n[1], "matrix"))
        return bad_banner(ctx, r, "unsupported object", t[1], n[1]);
    if ((st = parse_format(ctx, r, t[2], n[2], h))) return st;
    if ((st = parse_field(ctx, r, t[3], n[3], h))) return st;
    if ((st = parse_symmetry(ctx, r, t[4], n[4], h))) return st;
    if (h->field == MM_PATTERN && (h->format == MM_ARRAY || h->symmetry == MM_SKEW))
        return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: \"pattern\" cannot be combined with "
                          "\"%.*s %.*s\"", r->name, r->lineno, (int)n[2], t[2], (int)n[4], t[4]);
    if (h->symmetry == MM_HERMITIAN && h->field != MM_COMPLEX)
        return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: \"hermitian\" needs the \"complex\" "
                          "field (got \"%.*s\"; a real Hermitian matrix is \"symmetric\")",
                          r->name, r->lineno, (int)n[3], t[3]);
    return SLA_OK;
}

/* The size line: `count` nonnegative integers and nothing else. */
static sla_status read_sizes(sla_ctx *ctx, mm_reader *r, int count, long long *v)
{
    bool got = false;
    sla_status st = rd_content_line(ctx, r, &got);
    if (st) return st;
    if (!got)
        return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: file ends before the size line",
                          r->name, r->lineno);
    const char *p = r->line, *tok;
    size_t len = 0;
    for (int k = 0; k < count; k++) {
        if (!(tok = next_token(&p, &len)))
            return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: size line needs %d integers, "
                              "found %d", r->name, r->lineno, count, k);
        num_result nr = parse_int(tok, len, &v[k]);
        if (nr == NUM_BAD)
            return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: size \"%.*s\" is not an integer",
                              r->name, r->lineno, (int)(len > 64 ? 64 : len), tok);
        if (nr == NUM_RANGE)
            return sla__error(ctx, SLA_ERR_TOO_LARGE, "%s:%lld: size \"%.*s\" is too large",
                              r->name, r->lineno, (int)(len > 64 ? 64 : len), tok);
        if (v[k] < 0)
            return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: negative size %lld", r->name,
                              r->lineno, v[k]);
    }
    if ((tok = next_token(&p, &len)))
        return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: unexpected \"%.*s\" after the sizes",
                          r->name, r->lineno, (int)(len > 64 ? 64 : len), tok);
    return SLA_OK;
}

/* ---- coordinate entries ------------------------------------------------ */

typedef struct coo_buf {
    sla_int *rows, *cols;
    double *vals; /* w reals per entry: 1, or 2 (re, im) for a complex matrix */
    sla_int n, cap;
    int w;
} coo_buf;

static void coo_free(const sla_allocator *a, coo_buf *c)
{
    sla__free(a, c->rows);
    sla__free(a, c->cols);
    sla__free(a, c->vals);
    c->rows = c->cols = NULL;
    c->vals = NULL;
    c->n = c->cap = 0;
}

/* Room for `more` entries beyond c->n, growing geometrically (the declared
 * count is not trusted for allocation: a truncated file must not ask for
 * all of it up front). */
static bool coo_reserve(const sla_allocator *a, coo_buf *c, sla_int more)
{
    if (c->n + more <= c->cap) return true;
    sla_int cap = c->cap ? 2 * c->cap : 1024;
    if (cap < c->n + more) cap = c->n + more;
    sla_int *rows = sla__malloc(a, (size_t)cap, sizeof *rows);
    sla_int *cols = sla__malloc(a, (size_t)cap, sizeof *cols);
    double *vals = sla__malloc(a, (size_t)cap * (size_t)c->w, sizeof *vals);
    if (!rows || !cols || !vals) {
        sla__free(a, rows);
        sla__free(a, cols);
        sla__free(a, vals);
        return false;
    }
    if (c->n) {
        memcpy(rows, c->rows, (size_t)c->n * sizeof *rows);
        memcpy(cols, c->cols, (size_t)c->n * sizeof *cols);
        memcpy(vals, c->vals, (size_t)c->n * (size_t)c->w * sizeof *vals);
    }
    sla__free(a, c->rows);
    sla__free(a, c->cols);
    sla__free(a, c->vals);
    c->rows = rows;
    c->cols = cols;
    c->vals = vals;
    c->cap = cap;
    return true;
}

static void coo_push(coo_buf *c, sla_int i, sla_int j, double re, double im)
{
    c->rows[c->n] = i;
    c->cols[c->n] = j;
    c->vals[c->w * c->n] = re;
    if (c->w == 2) c->vals[2 * c->n + 1] = im;
    c->n++;
}

/* One 1-based index token, checked against [1, dim]. */
static sla_status parse_index(sla_ctx *ctx, const mm_reader *r, const char **p,
                              const char *what, long long dim, sla_int *out)
{
    size_t len = 0;
    const char *tok = next_token(p, &len);
    long long v = 0;
    if (!tok)
        return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: missing %s index", r->name, r->lineno,
                          what);
    num_result nr = parse_int(tok, len, &v);
    if (nr == NUM_BAD)
        return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: %s index \"%.*s\" is not an integer",
                          r->name, r->lineno, what, (int)(len > 64 ? 64 : len), tok);
    if (nr == NUM_RANGE || v < 1 || v > dim)
        return sla__error(ctx, SLA_ERR_INDEX, "%s:%lld: %s index %.*s out of range [1, %lld]",
                          r->name, r->lineno, what, (int)(len > 64 ? 64 : len), tok, dim);
    *out = (sla_int)(v - 1);
    return SLA_OK;
}

/* One value token of the given field: finite, and representable in dtype. */
static sla_status parse_value(sla_ctx *ctx, const mm_reader *r, const char **p, mm_field field,
                              sla_dtype dtype, double *out)
{
    size_t len = 0;
    const char *tok = next_token(p, &len);
    int shown = (int)(len > 64 ? 64 : len);
    if (!tok)
        return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: missing value", r->name, r->lineno);
    if (field == MM_INTEGER) {
        long long v = 0;
        num_result nr = parse_int(tok, len, &v);
        if (nr == NUM_BAD)
            return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: value \"%.*s\" is not an integer",
                              r->name, r->lineno, shown, tok);
        if (nr == NUM_RANGE)
            return sla__error(ctx, SLA_ERR_VALUE, "%s:%lld: integer value %.*s out of range",
                              r->name, r->lineno, shown, tok);
        *out = (double)v;
    } else if (parse_real(tok, len, out) != NUM_OK) {
        return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: value \"%.*s\" is not a number",
                          r->name, r->lineno, shown, tok);
    }
    if (!isfinite(*out))
        return sla__error(ctx, SLA_ERR_VALUE, "%s:%lld: value \"%.*s\" is not finite", r->name,
                          r->lineno, shown, tok);
    if ((dtype == SLA_F32 || dtype == SLA_C64) && fabs(*out) > FLT_MAX)
        return sla__error(ctx, SLA_ERR_VALUE, "%s:%lld: value %.*s overflows float32", r->name,
                          r->lineno, shown, tok);
    return SLA_OK;
}

static sla_status check_line_end(sla_ctx *ctx, const mm_reader *r, const char *p)
{
    size_t len = 0;
    const char *tok = next_token(&p, &len);
    if (!tok) return SLA_OK;
    return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: unexpected \"%.*s\" after the entry",
                      r->name, r->lineno, (int)(len > 64 ? 64 : len), tok);
}

sla_status sla__mm_parse_indices(sla_ctx *ctx, const mm_reader *r, const char **p,
                                 const long long *sz, sla_int *i, sla_int *j)
{
    sla_status st = parse_index(ctx, r, p, "row", sz[0], i);
    return st ? st : parse_index(ctx, r, p, "column", sz[1], j);
}

sla_status sla__mm_parse_entry(sla_ctx *ctx, const mm_reader *r, const char *line,
                               const mm_header *h, const long long *sz, sla_dtype dtype,
                               sla_int *pi, sla_int *pj, double *pv, double *pvi)
{
    const char *p = line;
    sla_int i = 0, j = 0;
    double v = 1.0, vi = 0.0;
    sla_status st;
    if ((st = sla__mm_parse_indices(ctx, r, &p, sz, &i, &j))) return st;
    if (h->field != MM_PATTERN && (st = parse_value(ctx, r, &p, h->field, dtype, &v)))
        return st;
    if (h->field == MM_COMPLEX && (st = parse_value(ctx, r, &p, h->field, dtype, &vi)))
        return st;
    if ((st = check_line_end(ctx, r, p))) return st;
    if (h->symmetry == MM_SKEW && i == j && (v != 0.0 || vi != 0.0))
        return sla__error(ctx, SLA_ERR_FORMAT,
                          "%s:%lld: skew-symmetric matrix with nonzero diagonal entry (%lld, %lld)",
                          r->name, r->lineno, (long long)i + 1, (long long)j + 1);
    if (h->symmetry == MM_HERMITIAN && i == j && vi != 0.0)
        return sla__error(ctx, SLA_ERR_FORMAT,
                          "%s:%lld: hermitian matrix with a non-real diagonal entry (%lld, %lld) "
                          "(imaginary part %g)", r->name, r->lineno, (long long)i + 1,
                          (long long)j + 1, vi);
    *pi = i;
    *pj = j;
    *pv = v;
    *pvi = vi;
    return SLA_OK;
}

/* Parse the current line as one entry and store it (and its mirror). */
static sla_status read_entry(sla_ctx *ctx, const mm_reader *r, const mm_header *h,
                             const long long *sz, sla_dtype dtype, coo_buf *c)
{
    sla_int i = 0, j = 0;
    double v = 1.0, vi = 0.0;
    sla_status st = sla__mm_parse_entry(ctx, r, r->line, h, sz, dtype, &i, &j, &v, &vi);
    if (st) return st;
    if (!coo_reserve(&r->a, c, 2))
        return sla__error(ctx, SLA_ERR_NOMEM, "%s:%lld: out of memory storing entries",
                          r->name, r->lineno);
    coo_push(c, i, j, v, vi);
    /* symmetric: a_ji = a_ij; skew-symmetric: a_ji = -a_ij; hermitian: conj(a_ij) */
    if (i != j && h->symmetry == MM_SKEW) coo_push(c, j, i, -v, -vi);
    else if (i != j && h->symmetry != MM_GENERAL)
        coo_push(c, j, i, v, h->symmetry == MM_HERMITIAN ? -vi : vi);
    return SLA_OK;
}

sla_status sla__mm_ends_early(sla_ctx *ctx, const mm_reader *r, long long k, long long declared)
{
    return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: file ends after %lld of %lld declared entries",
                      r->name, r->lineno, k, declared);
}

sla_status sla__mm_too_many(sla_ctx *ctx, const mm_reader *r, long long declared)
{
    return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: more entries than the %lld declared",
                      r->name, r->lineno, declared);
}

sla_status sla__mm_sum_overflows(sla_ctx *ctx, const mm_reader *r, sla_int k)
{
    return sla__error(ctx, SLA_ERR_VALUE, "%s: duplicate entries sum to a value that "
                      "overflows (stored entry %lld)", r->name, (long long)k);
}

/* After the declared entries only blank and comment lines may follow. */
static sla_status check_no_more(sla_ctx *ctx, mm_reader *r, long long declared)
{
    bool got = false;
    sla_status st = rd_content_line(ctx, r, &got);
    if (st || !got) return st;
    return sla__mm_too_many(ctx, r, declared);
}

static sla_status read_entries(sla_ctx *ctx, mm_reader *r, const mm_header *h,
                               const long long *sz, sla_dtype dtype, coo_buf *c)
{
    sla_status st;
    for (long long k = 0; k < sz[2]; k++) {
        bool got = false;
        if ((st = rd_content_line(ctx, r, &got))) return st;
        if (!got) return sla__mm_ends_early(ctx, r, k, sz[2]);
        if ((st = read_entry(ctx, r, h, sz, dtype, c))) return st;
    }
    return check_no_more(ctx, r, sz[2]);
}

static sla_status check_coord_sizes(sla_ctx *ctx, const mm_reader *r, const mm_header *h,
                                    const long long *sz)
{
    if (sz[0] > INT32_MAX || sz[1] > INT32_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE,
                          "%s:%lld: %lld x %lld matrix exceeds the 32-bit index limit (%d)",
                          r->name, r->lineno, sz[0], sz[1], INT32_MAX);
    if (sz[2] > INT64_MAX / 64)
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "%s:%lld: %lld entries is too many",
                          r->name, r->lineno, sz[2]);
    if (h->symmetry != MM_GENERAL && sz[0] != sz[1])
        return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: a %s matrix must be square (got "
                          "%lld x %lld)", r->name, r->lineno,
                          h->symmetry == MM_SKEW        ? "skew-symmetric"
                          : h->symmetry == MM_HERMITIAN ? "hermitian"
                                                        : "symmetric",
                          sz[0], sz[1]);
    return SLA_OK;
}

/* CSR matrix of dtype from the COO buffer (single precision: converted
 * copy; the buffer holds c->w reals per entry, as dtype does). */
static sla_status coo_build(sla_ctx *ctx, const coo_buf *c, const long long *sz,
                            sla_dtype dtype, sla_matrix **out)
{
    if (dtype == SLA_F64 || dtype == SLA_C128)
        return sla__matrix_from_coo(ctx, sz[0], sz[1], c->n, c->rows, c->cols, dtype, 1,
                                    c->vals, NULL, false, out); /* check_sums reports overflows */
    size_t count = (size_t)c->n * (size_t)c->w;
    float *f = sla__ctx_malloc(ctx, count, sizeof *f, "single-precision values");
    if (!f) return SLA_ERR_NOMEM;
    for (size_t k = 0; k < count; k++) f[k] = (float)c->vals[k];
    sla_status st = sla__matrix_from_coo(ctx, sz[0], sz[1], c->n, c->rows, c->cols, dtype, 1,
                                         f, NULL, false, out);
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__free(&a, f);
    return st;
}

/* Summed duplicates can overflow even when every entry is finite. */
static sla_status check_sums(sla_ctx *ctx, const mm_reader *r, sla_matrix **out)
{
    const sla_matrix *A = *out;
    for (sla_int k = 0; k < A->nnz; k++) {
        sla__z v = sla__zval(A, 0, k);
        if (!isfinite(creal(v)) || !isfinite(cimag(v))) {
            sla_matrix_destroy(out);
            return sla__mm_sum_overflows(ctx, r, k);
        }
    }
    return SLA_OK;
}

static sla_status read_coordinate(sla_ctx *ctx, mm_reader *r, sla_dtype dtype,
                                  sla_matrix **out)
{
    mm_header h;
    long long sz[3] = {0, 0, 0};
    coo_buf c = {0};
    sla_status st = read_banner(ctx, r, &h);
    if (!st && h.format == MM_ARRAY)
        st = sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: this is an array (dense) file; "
                        "use %s", r->name, r->lineno,
                        h.field == MM_COMPLEX ? "sla_mm_read_dense_z" : "sla_mm_read_dense");
    /* a complex file, or a complex dtype: a complex matrix of dtype's precision */
    if (!st && (h.field == MM_COMPLEX || sla_dtype_is_complex(dtype)))
        dtype = (dtype == SLA_F32 || dtype == SLA_C64) ? SLA_C64 : SLA_C128;
    c.w = sla_dtype_is_complex(dtype) ? 2 : 1;
    if (!st) st = read_sizes(ctx, r, 3, sz);
    if (!st) st = check_coord_sizes(ctx, r, &h, sz);
    if (!st && sla__mm_rereadable(r)) return sla__mm_read_csr(ctx, r, &h, sz, dtype, out);
    if (!st) st = read_entries(ctx, r, &h, sz, dtype, &c);
    if (!st) st = coo_build(ctx, &c, sz, dtype, out);
    if (!st) st = check_sums(ctx, r, out);
    coo_free(&r->a, &c);
    return st;
}

static sla_status check_read_args(sla_ctx *ctx, sla_dtype dtype, sla_matrix **out)
{
    if (!out) return sla__error(ctx, SLA_ERR_ARGUMENT, "Matrix Market read: out is NULL");
    *out = NULL;
    if (dtype != SLA_F64 && dtype != SLA_F32 && dtype != SLA_C128 && dtype != SLA_C64)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown dtype %d", (int)dtype);
    return SLA_OK;
}

sla_status sla_mm_read_stream(sla_ctx *ctx, FILE *f, const char *name, sla_dtype dtype,
                              sla_matrix **out)
{
    sla_status st = check_read_args(ctx, dtype, out);
    if (st) return st;
    if (!f) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_mm_read_stream: stream is NULL");
    mm_reader r;
    rd_init(&r, ctx, f, NULL, 0, name ? name : "<stream>");
    flockfile(f); /* rd_getc reads with getc_unlocked */
    st = read_coordinate(ctx, &r, dtype, out);
    funlockfile(f);
    rd_free(&r);
    return st ? st : sla__ok(ctx, SLA_OK);
}

sla_status sla_mm_read_buffer(sla_ctx *ctx, const char *buf, size_t len, sla_dtype dtype,
                              sla_matrix **out)
{
    sla_status st = check_read_args(ctx, dtype, out);
    if (st) return st;
    if (!buf && len > 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_mm_read_buffer: buffer is NULL");
    mm_reader r;
    rd_init(&r, ctx, NULL, buf, len, "<buffer>");
    st = read_coordinate(ctx, &r, dtype, out);
    rd_free(&r);
    return st ? st : sla__ok(ctx, SLA_OK);
}

static sla_status open_file(sla_ctx *ctx, const char *path, const char *mode, FILE **f)
{
    if (!path) return sla__error(ctx, SLA_ERR_ARGUMENT, "path is NULL");
    *f = fopen(path, mode);
    if (!*f)
        return sla__error(ctx, SLA_ERR_IO, "cannot open %s for %s: %s", path,
                          mode[0] == 'r' ? "reading" : "writing", strerror(errno));
    return SLA_OK;
}

sla_status sla_mm_read(sla_ctx *ctx, const char *path, sla_dtype dtype, sla_matrix **out)
{
    sla_status st = check_read_args(ctx, dtype, out);
    FILE *f = NULL;
    if (st || (st = open_file(ctx, path, "r", &f))) return st;
    st = sla_mm_read_stream(ctx, f, path, dtype, out);
    fclose(f); /* read-only stream: a close error loses nothing */
    return st;
}

/* ---- dense (array) files ----------------------------------------------- */

typedef struct dense_buf {
    double *data;
    size_t n, cap;
} dense_buf;

static bool dense_reserve(const sla_allocator *a, dense_buf *d, size_t limit)
{
    if (d->n < d->cap) return true;
    size_t cap = d->cap ? 2 * d->cap : 1024;
    if (cap > limit) cap = limit;
    double *p = sla__malloc(a, cap, sizeof *p);
    if (!p) return false;
    if (d->n) memcpy(p, d->data, d->n * sizeof *p);
    sla__free(a, d->data);
    d->data = p;
    d->cap = cap;
    return true;
}

/* One value per line (two numbers for a complex field), column-major,
 * exactly count of them; w reals stored per value (2: complex output). */
static sla_status read_dense_values(sla_ctx *ctx, mm_reader *r, const mm_header *h,
                                    long long count, int w, dense_buf *d)
{
    sla_status st;
    for (long long k = 0; k < count; k++) {
        bool got = false;
        if ((st = rd_content_line(ctx, r, &got))) return st;
        if (!got)
            return sla__error(ctx, SLA_ERR_FORMAT,
                              "%s:%lld: file ends after %lld of %lld declared values",
                              r->name, r->lineno, k, count);
        const char *p = r->line;
        double v = 0.0, vi = 0.0;
        if ((st = parse_value(ctx, r, &p, h->field, SLA_F64, &v))) return st;
        if (h->field == MM_COMPLEX && (st = parse_value(ctx, r, &p, h->field, SLA_F64, &vi)))
            return st;
        if ((st = check_line_end(ctx, r, p))) return st;
        for (int t = 0; t < w; t++) {
            if (!dense_reserve(&r->a, d, (size_t)count * (size_t)w))
                return sla__error(ctx, SLA_ERR_NOMEM, "%s:%lld: out of memory storing values",
                                  r->name, r->lineno);
            d->data[d->n++] = t ? vi : v;
        }
    }
    return check_no_more(ctx, r, count);
}

static sla_status check_dense_header(sla_ctx *ctx, const mm_reader *r, const mm_header *h)
{
    if (h->format != MM_ARRAY)
        return sla__error(ctx, SLA_ERR_FORMAT, "%s:%lld: this is a coordinate (sparse) file; "
                          "use sla_mm_read", r->name, r->lineno);
    if (h->symmetry != MM_GENERAL)
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "%s:%lld: only general array files are supported", r->name, r->lineno);
    return SLA_OK;
}

static sla_status check_dense_sizes(sla_ctx *ctx, const mm_reader *r, const long long *sz)
{
    /* m * n complex values must fit in memory sizes and in sla_int */
    if (sz[0] > INT32_MAX || sz[1] > INT32_MAX ||
        (sz[1] > 0 && sz[0] > (long long)(SIZE_MAX / (2 * sizeof(double))) / sz[1]))
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "%s:%lld: %lld x %lld array is too large",
                          r->name, r->lineno, sz[0], sz[1]);
    return SLA_OK;
}

/* w = 1: real values (a complex file is refused); w = 2: complex values. */
static sla_status read_dense(sla_ctx *ctx, mm_reader *r, int w, sla_int *nrows, sla_int *ncols,
                             double **data)
{
    mm_header h;
    long long sz[2] = {0, 0};
    dense_buf d = {0};
    sla_status st = read_banner(ctx, r, &h);
    if (!st) st = check_dense_header(ctx, r, &h);
    if (!st && w == 1 && h.field == MM_COMPLEX)
        st = sla__error(ctx, SLA_ERR_UNSUPPORTED, "%s:%lld: a complex array file; read it with "
                        "sla_mm_read_dense_z", r->name, r->lineno);
    if (!st) st = read_sizes(ctx, r, 2, sz);
    if (!st) st = check_dense_sizes(ctx, r, sz);
    if (!st) st = read_dense_values(ctx, r, &h, sz[0] * sz[1], w, &d);
    if (!st && !d.data && !(d.data = sla__ctx_malloc(ctx, 1, sizeof(double), "empty array")))
        st = SLA_ERR_NOMEM;
    if (st) {
        sla__free(&r->a, d.data);
        return st;
    }
    *nrows = sz[0];
    *ncols = sz[1];
    *data = d.data;
    return SLA_OK;
}

static sla_status read_dense_file(sla_ctx *ctx, const char *fname, const char *path, int w,
                                  sla_int *nrows, sla_int *ncols, double **data)
{
    if (!nrows || !ncols || !data)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: NULL output", fname);
    *nrows = *ncols = 0;
    *data = NULL;
    FILE *f = NULL;
    sla_status st = open_file(ctx, path, "r", &f);
    if (st) return st;
    mm_reader r;
    rd_init(&r, ctx, f, NULL, 0, path);
    flockfile(f); /* rd_getc reads with getc_unlocked */
    st = read_dense(ctx, &r, w, nrows, ncols, data);
    funlockfile(f);
    rd_free(&r);
    fclose(f);
    return st ? st : sla__ok(ctx, SLA_OK);
}

sla_status sla_mm_read_dense(sla_ctx *ctx, const char *path, sla_int *nrows, sla_int *ncols,
                             double **data)
{
    return read_dense_file(ctx, "sla_mm_read_dense", path, 1, nrows, ncols, data);
}

sla_status sla_mm_read_dense_z(sla_ctx *ctx, const char *path, sla_int *nrows, sla_int *ncols,
                               sla_complex **data)
{
    double *d = NULL;
    sla_status st = read_dense_file(ctx, "sla_mm_read_dense_z", path, 2, nrows, ncols,
                                    data ? &d : NULL);
    if (data) *data = (sla_complex *)d;
    return st;
}
