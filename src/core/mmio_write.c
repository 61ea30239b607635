/* Matrix Market writer (coordinate and array formats), replacing each file
 * atomically; mmio_read.c reads them. Sparse matrices are written as
 * "coordinate real general" ("coordinate complex general": real and
 * imaginary parts) with 1-based indices, dense ones as "array real general"
 * ("array complex general") in column-major order; values with %.17g (fprintf, so the C
 * library's LC_NUMERIC must use '.', as the default "C" locale does) and
 * non-finite values refused. */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700 /* realpath */

#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- writers ------------------------------------------------------------ */

/* Every writer replaces its file atomically: the data go to a temporary
 * file created next to the target (".sla-write-XXXXXXXXXXXX.tmp" in the
 * same folder, so that rename(2) cannot cross file systems), which is
 * flushed, fsync'ed and then renamed over the target. A failure (ENOSPC,
 * EIO, a refused value) removes the temporary file and leaves an existing
 * target as it was; a reader never sees a partial file, and of two
 * processes writing one path the last rename wins whole. The target's
 * permission bits are kept (a new file gets 0666 minus the umask, as with
 * fopen). A symbolic link is followed: its target is replaced and the link
 * stays. An existing target that is not a regular file (a device such as
 * /dev/null or /dev/full, a FIFO) cannot be renamed over and is written in
 * place, as are dangling links. A process killed during the write may leave
 * the temporary file behind, never a partial target. */
typedef struct mm_writer {
    FILE *f;
    const char *path; /* as given, for messages */
    char *target;     /* resolved file that the rename replaces (NULL: in place) */
    char *tmp;        /* the temporary file */
    bool failed;
    int err; /* errno of the first failure */
} mm_writer;

/* A name in the same folder as target for the temporary file, unique for
 * this process (pid, clock, counter), created with O_EXCL. Returns the fd,
 * or -1 with errno set; *tmp_out is malloc'ed (free it). */
static int make_temp(const char *target, char **tmp_out)
{
    static atomic_ulong counter; /* threads writing at once get different names */
    const char *slash = strrchr(target, '/');
    size_t dlen = slash ? (size_t)(slash - target) + 1 : 0;
    size_t cap = dlen + 40;
    char *tmp = malloc(cap);
    *tmp_out = NULL;
    if (!tmp) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(tmp, target, dlen);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
    for (int attempt = 0; attempt < 100; attempt++) {
        x += 0x9e3779b97f4a7c15ULL + (uint64_t)atomic_fetch_add(&counter, 1);
        uint64_t z = x; /* splitmix64 */
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        snprintf(tmp + dlen, cap - dlen, ".sla-write-%012llx.tmp",
                 (unsigned long long)(z & 0xffffffffffffULL));
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            *tmp_out = tmp;
            return fd;
        }
        if (errno != EEXIST) break;
    }
    int e = errno;
    free(tmp);
    errno = e;
    return -1;
}

static sla_status wr_fail_open(sla_ctx *ctx, const char *path, int e)
{
    return sla__error(ctx, e == ENOMEM ? SLA_ERR_NOMEM : SLA_ERR_IO,
                      "cannot open %s for writing: %s", path, strerror(e));
}

static sla_status wr_open(sla_ctx *ctx, mm_writer *w, const char *path)
{
    memset(w, 0, sizeof *w);
    w->path = path;
    if (!path) return sla__error(ctx, SLA_ERR_ARGUMENT, "path is NULL");
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (!exists && errno != ENOENT) return wr_fail_open(ctx, path, errno);
    struct stat lst;
    bool in_place = exists ? !S_ISREG(st.st_mode) : lstat(path, &lst) == 0; /* device; dangling link */
    if (exists && S_ISDIR(st.st_mode)) return wr_fail_open(ctx, path, EISDIR);
    if (in_place) {
        w->f = fopen(path, "w");
        return w->f ? SLA_OK : wr_fail_open(ctx, path, errno);
    }
    /* an existing file that we may not write is not replaced either */
    if (exists && access(path, W_OK) != 0) return wr_fail_open(ctx, path, errno);
    w->target = exists ? realpath(path, NULL) : strdup(path);
    if (!w->target) return wr_fail_open(ctx, path, errno);
    int fd = make_temp(w->target, &w->tmp);
    if (fd < 0) {
        int e = errno;
        free(w->target);
        w->target = NULL;
        if (e == ENOENT || e == ENOTDIR || e == ENOMEM) return wr_fail_open(ctx, path, e);
        return sla__error(ctx, SLA_ERR_IO,
                          "cannot open %s for writing: %s (it is replaced through a temporary "
                          "file in its folder)", path, strerror(e));
    }
    if (exists) (void)fchmod(fd, st.st_mode & 07777); /* best effort: keep the mode */
    w->f = fdopen(fd, "w");
    if (!w->f) {
        int e = errno;
        close(fd);
        unlink(w->tmp);
        free(w->tmp);
        free(w->target);
        w->tmp = w->target = NULL;
        return wr_fail_open(ctx, path, e);
    }
    return SLA_OK;
}

static void wr_printf(mm_writer *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void wr_printf(mm_writer *w, const char *fmt, ...)
{
    if (w->failed) return;
    va_list ap;
    va_start(ap, fmt);
    errno = 0;
    if (vfprintf(w->f, fmt, ap) < 0) {
        w->failed = true;
        w->err = errno;
    }
    va_end(ap);
}

static void wr_note(mm_writer *w, bool bad)
{
    if (bad && !w->failed) {
        w->failed = true;
        w->err = errno;
    }
}

/* Flush, fsync and close; rename the temporary file over the target. On
 * any failure remove the temporary file and report the first error. */
static sla_status wr_close(sla_ctx *ctx, mm_writer *w)
{
    errno = 0;
    if (w->tmp) {
        wr_note(w, fflush(w->f) != 0);
        wr_note(w, !w->failed && fsync(fileno(w->f)) != 0);
    }
    errno = 0;
    wr_note(w, fclose(w->f) != 0);
    w->f = NULL;
    if (w->tmp) {
        errno = 0;
        wr_note(w, !w->failed && rename(w->tmp, w->target) != 0);
        if (w->failed) {
            unlink(w->tmp);
        } else { /* make the rename durable too (best effort) */
            char *slash = strrchr(w->target, '/');
            if (slash) *slash = '\0';
            int dfd = open(slash ? (w->target[0] ? w->target : "/") : ".", O_RDONLY | O_CLOEXEC);
            if (dfd >= 0) {
                (void)fsync(dfd);
                close(dfd);
            }
        }
        free(w->tmp);
        free(w->target);
        w->tmp = w->target = NULL;
    }
    if (!w->failed) return sla__ok(ctx, SLA_OK);
    return sla__error(ctx, SLA_ERR_IO, "error writing %s: %s", w->path,
                      w->err ? strerror(w->err) : "write failed");
}

/* Value k of the array being written (a matrix value array or caller's). */
typedef struct coord_src {
    const sla_matrix *A;
    sla_int ib;
    const double *vals;  /* real values overriding A's when not NULL */
    const sla__z *zvals; /* complex values overriding A's when not NULL */
} coord_src;

/* Whether the file gets the complex field. */
static bool src_complex(const coord_src *s)
{
    return s->zvals || (!s->vals && sla__is_complex(s->A));
}

static sla__z src_val(const coord_src *s, sla_int k)
{
    if (s->zvals) return s->zvals[k];
    return s->vals ? s->vals[k] : sla__zval(s->A, s->ib, k);
}

static sla_status check_src_finite(sla_ctx *ctx, const coord_src *s)
{
    for (sla_int k = 0; k < s->A->nnz; k++) {
        sla__z v = src_val(s, k);
        if (!isfinite(creal(v)) || !isfinite(cimag(v))) {
            if (!src_complex(s))
                return sla__error(ctx, SLA_ERR_VALUE, "cannot write value %g at entry %lld: "
                                  "Matrix Market files hold finite values", creal(v), (long long)k);
            return sla__error(ctx, SLA_ERR_VALUE, "cannot write value (%g, %g) at entry %lld: "
                              "Matrix Market files hold finite values", creal(v), cimag(v),
                              (long long)k);
        }
    }
    return SLA_OK;
}

static sla_status write_coordinate(sla_ctx *ctx, const char *path, const coord_src *s)
{
    const sla_matrix *A = s->A;
    const bool cplx = src_complex(s);
    sla_status st = check_src_finite(ctx, s);
    mm_writer w;
    if (st || (st = wr_open(ctx, &w, path))) return st;
    wr_printf(&w, "%%%%MatrixMarket matrix coordinate %s general\n", cplx ? "complex" : "real");
    wr_printf(&w, "%lld %lld %lld\n", (long long)A->nrows, (long long)A->ncols,
              (long long)A->nnz);
    for (sla_int i = 0; i < A->nrows && !w.failed; i++)
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            sla__z v = src_val(s, p);
            if (cplx)
                wr_printf(&w, "%lld %lld %.17g %.17g\n", (long long)i + 1,
                          (long long)A->colind[p] + 1, creal(v), cimag(v));
            else
                wr_printf(&w, "%lld %lld %.17g\n", (long long)i + 1,
                          (long long)A->colind[p] + 1, creal(v));
        }
    return wr_close(ctx, &w);
}

sla_status sla_mm_write(sla_ctx *ctx, const char *path, const sla_matrix *A, sla_int ib)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_mm_write: A is NULL");
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "sla_mm_write: batch index %lld out of range "
                          "[0, %lld)", (long long)ib, (long long)A->nbatch);
    coord_src s = {A, ib, NULL, NULL};
    return write_coordinate(ctx, path, &s);
}

sla_status sla_mm_write_pattern_values(sla_ctx *ctx, const char *path, const sla_matrix *A,
                                       const double *vals)
{
    if (!A || (!vals && A->nnz > 0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_mm_write_pattern_values: NULL argument");
    coord_src s = {A, 0, vals, NULL}; /* A complex: its pattern, real values */
    return write_coordinate(ctx, path, &s);
}

sla_status sla_mm_write_pattern_values_z(sla_ctx *ctx, const char *path, const sla_matrix *A,
                                         const sla_complex *vals)
{
    if (!A || (!vals && A->nnz > 0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_mm_write_pattern_values_z: NULL argument");
    coord_src s = {A, 0, NULL, (const sla__z *)vals};
    return write_coordinate(ctx, path, &s);
}

/* A column-major nrows x ncols array of values of pw reals each (1: real,
 * 2: complex, re then im). */
static sla_status write_dense(sla_ctx *ctx, const char *fname, const char *path, sla_int nrows,
                              sla_int ncols, const double *data, int pw)
{
    if (nrows < 0 || ncols < 0)
        return sla__error(ctx, SLA_ERR_DIMENSION, "%s: negative size %lld x %lld", fname,
                          (long long)nrows, (long long)ncols);
    if (nrows > 0 && ncols > INT64_MAX / 2 / nrows)
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "%s: %lld x %lld overflows", fname,
                          (long long)nrows, (long long)ncols);
    sla_int count = nrows * ncols;
    if (!data && count > 0) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: data is NULL", fname);
    for (sla_int k = 0; k < count * pw; k++)
        if (!isfinite(data[k]))
            return sla__error(ctx, SLA_ERR_VALUE, "%s: value %g at (%lld, %lld)%s is not finite",
                              fname, data[k], (long long)(k / pw % nrows),
                              (long long)(k / pw / nrows),
                              pw == 1 ? "" : k % 2 ? " (imaginary part)" : " (real part)");
    mm_writer w;
    sla_status st = wr_open(ctx, &w, path);
    if (st) return st;
    wr_printf(&w, "%%%%MatrixMarket matrix array %s general\n", pw == 2 ? "complex" : "real");
    wr_printf(&w, "%lld %lld\n", (long long)nrows, (long long)ncols);
    for (sla_int k = 0; k < count && !w.failed; k++) {
        if (pw == 2) wr_printf(&w, "%.17g %.17g\n", data[2 * k], data[2 * k + 1]);
        else wr_printf(&w, "%.17g\n", data[k]);
    }
    return wr_close(ctx, &w);
}

sla_status sla_mm_write_dense(sla_ctx *ctx, const char *path, sla_int nrows, sla_int ncols,
                              const double *data)
{
    return write_dense(ctx, "sla_mm_write_dense", path, nrows, ncols, data, 1);
}

sla_status sla_mm_write_dense_z(sla_ctx *ctx, const char *path, sla_int nrows, sla_int ncols,
                                const sla_complex *data)
{
    return write_dense(ctx, "sla_mm_write_dense_z", path, nrows, ncols, (const double *)data, 2);
}
