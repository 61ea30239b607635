/* Private definitions shared by the library's sources. Never installed. */
#ifndef SLA_INTERNAL_H
#define SLA_INTERNAL_H

#include "sla.h"

#include <stdarg.h>
#include <complex.h>
#undef I /* the library has variables named I; use _Complex_I */

#ifdef _OPENMP
#include <omp.h>
#endif

struct sla_ctx {
    sla_status status;
    char message[512];
    int nthreads;           /* 0 = OpenMP default */
    sla_allocator alloc;
};

struct sla_matrix {
    sla_allocator alloc;
    sla_int nrows, ncols, nnz, nbatch;
    sla_dtype dtype;
    const sla_int *rowptr;  /* nrows + 1; owned unless borrowed */
    int32_t *colind;        /* nnz; always owned */
    void *values;           /* nbatch * nnz of dtype; owned unless borrowed */
    bool own_rowptr, own_values;
    /* Where colind and values lie inside larger allocations (SpGEMM's
     * two-thread product, its first rows written down from the middle):
     * the blocks to free; NULL (the rule) when they are colind, values. */
    void *colind_mem, *values_mem;
};

/* ---- errors ---------------------------------------------------------- */

/* Record status and a printf-style message in ctx (if not NULL); returns st. */
sla_status sla__error(sla_ctx *ctx, sla_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Record a successful (or warning) status without touching the message. */
sla_status sla__ok(sla_ctx *ctx, sla_status st);

/* ---- allocation ------------------------------------------------------ */

/* The allocator of ctx (the C allocator when ctx is NULL). */
sla_allocator sla__ctx_alloc(const sla_ctx *ctx);

/* count * size bytes, NULL on overflow or failure (size 0 -> 1 byte). */
void *sla__malloc(const sla_allocator *a, size_t count, size_t size);
void *sla__calloc(const sla_allocator *a, size_t count, size_t size);
void sla__free(const sla_allocator *a, void *p);

/* Ask the kernel to back [p, p + bytes) with transparent huge pages (Linux
 * madvise MADV_HUGEPAGE, as NumPy does for its large arrays): a buffer of
 * many MB that is written once then pays one page fault per 2 MB instead
 * of one per 4 kB (on this project's machine 0.05 s -> 0.02 s for 156 MB).
 * Only for blocks of at least 4 MB from the C allocator (a caller's
 * allocator is left alone); a no-op elsewhere and on failure. */
void sla__advise_huge(const sla_allocator *a, void *p, size_t bytes);

/* Allocate through ctx and record SLA_ERR_NOMEM with `what` on failure. */
void *sla__ctx_malloc(sla_ctx *ctx, size_t count, size_t size,
                      const char *what);
void *sla__ctx_calloc(sla_ctx *ctx, size_t count, size_t size,
                      const char *what);

/* Refuse (SLA_ERR_TOO_LARGE) index arrays of `bytes` for an nrows x ncols
 * matrix with nnz entries when they exceed half the memory available. */
sla_status sla__check_index_memory(sla_ctx *ctx, sla_int nrows, sla_int ncols, sla_int nnz,
                                  double bytes);

/* ---- threads and time ------------------------------------------------ */

/* Vectors shorter than this are processed by one thread: a parallel region
 * costs a few microseconds, and far more when the machine is oversubscribed. */
#define SLA_PAR_MIN 8192

/* Thread count the kernels should use (>= 1). */
int sla__threads(const sla_ctx *ctx);
double sla__now(void);

/* ---- matrix helpers -------------------------------------------------- */

/* Value k of array ib as a double (real matrices only: every real entry
 * point refuses a complex matrix first, with sla__require_real). */
static inline double sla__val(const sla_matrix *A, sla_int ib, sla_int k)
{
    return A->dtype == SLA_F64
               ? ((const double *)A->values)[ib * A->nnz + k]
               : (double)((const float *)A->values)[ib * A->nnz + k];
}

static inline size_t sla__dtype_size(sla_dtype t)
{
    switch (t) {
    case SLA_F64: return sizeof(double);
    case SLA_F32: return sizeof(float);
    case SLA_C128: return 2 * sizeof(double);
    case SLA_C64: return 2 * sizeof(float);
    }
    return 0;
}

/* sla_matrix_from_coo; check_sums false leaves duplicate sums that
 * overflow in the matrix (the Matrix Market reader checks them itself, to
 * report them in its own words, as its two-pass reader does). */
sla_status sla__matrix_from_coo(sla_ctx *ctx, sla_int nrows, sla_int ncols, sla_int nnz_in,
                                const sla_int *rows, const sla_int *cols, sla_dtype dtype,
                                sla_int nbatch, const void *vals, sla_int *coo_to_csr,
                                bool check_sums, sla_matrix **out);

static inline bool sla__is_complex(const sla_matrix *A) { return sla_dtype_is_complex(A->dtype); }

/* ---- complex values ---------------------------------------------------- */

/* Internal complex type (the library is C11 with complex support; the
 * public sla_complex is this type in C). */
typedef double _Complex sla__z;

/* Value k of array ib of any matrix as a complex number (imaginary part 0
 * for a real matrix). */
static inline sla__z sla__zval(const sla_matrix *A, sla_int ib, sla_int k)
{
    size_t p = (size_t)(ib * A->nnz + k);
    switch (A->dtype) {
    case SLA_C128: return ((const sla__z *)A->values)[p];
    case SLA_C64: {
        const float *v = (const float *)A->values + 2 * p;
        return (double)v[0] + (double)v[1] * _Complex_I;
    }
    case SLA_F64: return ((const double *)A->values)[p];
    case SLA_F32: return (double)((const float *)A->values)[p];
    }
    return 0;
}

/* SLA_ERR_UNSUPPORTED naming `what` when A is complex ("what: complex
 * matrices are not supported here; see sla/complex.h"); SLA_OK otherwise
 * (and for A == NULL, which the caller checks itself). */
sla_status sla__require_real(sla_ctx *ctx, const sla_matrix *A, const char *what);

/* Build a matrix that takes ownership of rowptr/colind/values already
 * allocated with `a` (used by COO conversion, transpose, generators).
 * On failure frees nothing and returns NULL. */
sla_matrix *sla__matrix_wrap(const sla_allocator *a, sla_int nrows,
                             sla_int ncols, sla_int nnz, sla_int nbatch,
                             sla_dtype dtype, sla_int *rowptr,
                             int32_t *colind, void *values);

/* Whether count blocks of ld doubles (a column-major block of count
 * columns, or a batch [count][ld]) can be addressed: count * ld * 8 bytes
 * must fit an int64 (and so a size_t). Sets SLA_ERR_TOO_LARGE naming
 * `what` otherwise. */
static inline sla_status sla__check_extent(sla_ctx *ctx, sla_int count, sla_int ld,
                                           const char *what)
{
    if (count > 0 && ld > 0 && ld > INT64_MAX / 8 / count)
        return sla__error(ctx, SLA_ERR_TOO_LARGE,
                          "%s: %lld x %lld doubles overflow a 64-bit byte count", what,
                          (long long)count, (long long)ld);
    return SLA_OK;
}

/* Position of (i, j) in the pattern, or -1. */
sla_int sla__find(const sla_matrix *A, sla_int i, sla_int j);

/* ---- kernels (spmv.c, vec.c) ------------------------------------------ */

/* y = A_ib x */
void sla__spmv(const sla_matrix *A, sla_int ib, const double *x, double *y,
               int nt);
/* y = A_ib x, returns x . y (local sum; square A) */
double sla__spmv_dot(const sla_matrix *A, sla_int ib, const double *x,
                     double *y, int nt);
/* r = b - A_ib x, returns r . r */
double sla__residual(const sla_matrix *A, sla_int ib, const double *x,
                     const double *b, double *r, int nt);
/* y = A_ib^T x by scattering; work is NULL (serial) or nt * ncols doubles. */
void sla__spmv_t(const sla_matrix *A, sla_int ib, const double *x, double *y,
                 int nt, double *work);

/* The CSR of A_ib^T (transpose.c): nrows = A's ncols, ncols = A's nrows,
 * values in double. */
typedef struct sla__csrt {
    sla_int nrows, ncols;
    sla_int *rowptr; /* nrows + 1 */
    int32_t *colind; /* nnz, ascending in each row */
    double *vals;    /* nnz */
} sla__csrt;
/* Build T = A_ib^T (SLA_ERR_NOMEM, SLA_ERR_TOO_LARGE with A->nrows past
 * int32; T is then empty). Free with sla__csrt_free (safe on an empty T). */
sla_status sla__csrt_build(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla__csrt *T);
void sla__csrt_free(sla_ctx *ctx, sla__csrt *T);
/* y = T x, a gather by rows of T (= A^T x), threaded without reductions. */
void sla__csrt_spmv(const sla__csrt *T, const double *x, double *y, int nt);

double sla__dot(sla_int n, const double *x, const double *y, int nt);
/* ||x||_2 without overflow or underflow (plain dot when that is safe). */
double sla__nrm2(sla_int n, const double *x, int nt);
/* max |x_i| (NaN if any entry is NaN; 0 for n = 0). */
double sla__amax(sla_int n, const double *x, int nt);
/* sum (x_i / 2^e)^2, scaled exactly by a power of two. */
double sla__sumsq_scaled(sla_int n, const double *x, int e, int nt);
/* Whether a plain sum of squares ss can be trusted (normal, not tiny, finite). */
bool sla__nrm2_fast_ok(double ss);
void sla__copy(sla_int n, const double *x, double *y);
void sla__zero(sla_int n, double *x);
/* y += a x */
void sla__axpy(sla_int n, double a, const double *x, double *y, int nt);
/* y = x + b y */
void sla__xpby(sla_int n, const double *x, double b, double *y, int nt);
/* true if every entry is finite */
bool sla__all_finite(sla_int n, const double *x);

/* ---- complex kernels (zspmv.c) ----------------------------------------- */

/* y = op(A_ib) x, op 0 = A, 1 = A^T, 2 = A^H (sla_op's values); any dtype.
 * x has ncols entries for op 0 (nrows otherwise). */
void sla__zspmv(const sla_matrix *A, sla_int ib, int op, const sla__z *x, sla__z *y, int nt);
/* sum conj(x_i) y_i (the Hermitian inner product) and sum x_i y_i. */
sla__z sla__zdotc(sla_int n, const sla__z *x, const sla__z *y, int nt);
sla__z sla__zdotu(sla_int n, const sla__z *x, const sla__z *y, int nt);
/* ||x||_2, safe from overflow and underflow. */
double sla__znrm2(sla_int n, const sla__z *x, int nt);
/* y += a x;  y = x + b y. */
void sla__zaxpy(sla_int n, sla__z a, const sla__z *x, sla__z *y, int nt);
void sla__zxpby(sla_int n, const sla__z *x, sla__z b, sla__z *y, int nt);
bool sla__zall_finite(sla_int n, const sla__z *x);

/* ---- independent items in parallel (parallel.c) ----------------------- */

/* One item of a set of independent jobs: lctx is a private context (its
 * message goes to the caller's context when it is the first error), nt the
 * threads the item may use. */
typedef sla_status (*sla__item_fn)(sla_ctx *lctx, void *job, sla_int i, int nt);

/* Run items [0, count) through `item`, in parallel (one thread each, BLAS
 * kept to one thread) when there are at least as many items as threads,
 * else one after another with all threads. The first error (lowest index)
 * is reported through ctx; otherwise a positive status of any item ("did
 * not converge"). */
sla_status sla__run_items(sla_ctx *ctx, sla_int count, sla__item_fn item, void *job);
/* The same; serial_items: never two items at once (items that share state,
 * e.g. a list naming one solver twice). */
sla_status sla__run_items_mode(sla_ctx *ctx, sla_int count, sla__item_fn item, void *job,
                               bool serial_items);

/* OpenBLAS to one thread (when OpenBLAS is the BLAS in the process and uses
 * more): returns what sla__blas_threads_restore needs to put it back (0:
 * nothing changed). Process-wide. */
int sla__blas_threads_one(void);
void sla__blas_threads_restore(int blas_threads);

/* ---- the machine (sysinfo.c) ------------------------------------------- */

/* Bytes of memory available now (MemAvailable on Linux), or 0 if unknown. */
double sla__available_memory(void);

/* " (did you mean 'x'?)" for the unknown s[0..len) among names, into buf
 * (names.c, with sla_nearest_name); when none is close: " (one of a, b,
 * ...)" if list, else "". Returns buf. */
const char *sla__suggest(char *buf, size_t size, const char *s, size_t len,
                         const char *const *names, int count, bool list);

/* ---- option strings (optstr.c) ----------------------------------------- */

/* How the value of a key is read into its field (at an offset in the
 * options struct). */
typedef enum {
    SLA__OPT_OTHER,  /* read by the table's `other` */
    SLA__OPT_REAL,   /* double between lo and hi, ends as `open` */
    SLA__OPT_COUNT,  /* sla_int in [lo, hi] */
    SLA__OPT_INT,    /* int in [lo, hi] */
    SLA__OPT_SEED,   /* uint64_t */
    SLA__OPT_BOOL,   /* bool, spelled as the table's bools */
    SLA__OPT_CHOICE  /* an int-sized enum: the index of the value among names */
} sla__opt_kind;

/* Open ends of a SLA__OPT_REAL range (closed when not given). */
#define SLA__OPT_LO_OPEN 1
#define SLA__OPT_HI_OPEN 2

typedef struct {
    const char *key;
    sla__opt_kind kind;
    size_t at; /* offsetof the field */
    double lo, hi;
    int open;
    const char *const *names; /* CHOICE: the values, in the order of the enum's 0, 1, ... */
    int nnames;
} sla__opt_field;

#define SLA__OPT_MAX_FIELDS 64

typedef struct sla__opt_table sla__opt_table;
struct sla__opt_table {
    const sla__opt_field *fields;
    int count;                /* at most SLA__OPT_MAX_FIELDS */
    bool nocase;              /* keys matched ignoring ASCII case */
    bool values_nocase;       /* boolean spellings and CHOICE names too */
    const char *const *bools; /* {true, false, true, false, ...} spellings */
    int nbools;               /* pairs in bools */
    const char *nested;       /* keys "<nested>key" go to the sla_solver_options at */
    size_t nested_at;         /* offset nested_at (sla__opt_solver); NULL: none */
    /* reads the value of OTHER field number `field` into opts */
    sla_status (*other)(sla_ctx *ctx, int field, const char *v, size_t vl, void *opts);
    /* refuses an unknown key k[0..kl) (NULL: "unknown option 'x'" with the
     * nearest key or the list) */
    sla_status (*unknown)(sla_ctx *ctx, const char *k, size_t kl, const char *const *keys, int count);
};

/* "key=value,key=value" into opts (size bytes) by the table t: items split
 * at commas, spaces around keys and values ignored, empty items skipped, an
 * item without '=' refused. all_or_nothing: the items go to a scratch copy,
 * which replaces opts only when every one was accepted (size at most
 * SLA__OPT_MAX_SIZE); otherwise they go to opts directly. fname names the
 * caller in the NULL-argument message. */
#define SLA__OPT_MAX_SIZE 1024
sla_status sla__opt_parse(sla_ctx *ctx, const char *fname, const char *str, void *opts, size_t size,
                          bool all_or_nothing, const sla__opt_table *t);

/* Index of s[0..len) in names (exact, or ignoring ASCII case), -1 if none. */
int sla__opt_find(const char *s, size_t len, const char *const *names, int count, bool nocase);
/* The nearest of names to s[0..len) (sla_nearest_name), or NULL. */
const char *sla__opt_nearest(const char *s, size_t len, const char *const *names, int count);

/* The readers behind the kinds, for OTHER fields; messages "option KEY: ...". */
/* The index of v[0..vl) in names into *out; refused as "option KEY: unknown
 * value 'v' (what: a, b or c; did you mean 'b'?)" (what may be NULL). */
sla_status sla__opt_name(sla_ctx *ctx, const char *key, const char *v, size_t vl, const char *const *names,
                         int count, bool nocase, const char *what, int *out);
/* A finite number between lo and hi (hi = HUGE_VAL: no upper bound). */
sla_status sla__opt_real(sla_ctx *ctx, const char *key, const char *v, size_t vl, double lo, double hi, int open,
                         double *out);
/* An integer in [lo, hi] (read as a double: exact below 2^53). */
sla_status sla__opt_count(sla_ctx *ctx, const char *key, const char *v, size_t vl, double lo, double hi,
                          sla_int *out);
/* A seed: decimal digits, an integer in [0, 2^64). */
sla_status sla__opt_u64(sla_ctx *ctx, const char *key, const char *v, size_t vl, uint64_t *out);
/* A boolean among npairs spellings given as pairs {true, false, ...}. */
sla_status sla__opt_bool(sla_ctx *ctx, const char *key, const char *v, size_t vl, const char *const *pairs,
                         int npairs, bool nocase, bool *out);

/* The key k[0..kl) less its first pl characters, with value v, into the
 * nested solver options o through sla_solver_options_parse; a refusal keeps
 * its message behind "option FULLKEY: ". */
sla_status sla__opt_solver(sla_ctx *ctx, const char *k, size_t kl, size_t pl, const char *v, size_t vl,
                           sla_solver_options *o);

#endif
