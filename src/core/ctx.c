/* The context: last status and message, thread count, allocator. */
/* clock_gettime, CLOCK_MONOTONIC under -std=c11 with any compiler; madvise
 * and MADV_HUGEPAGE (glibc: _DEFAULT_SOURCE) */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

static void *c_malloc(size_t size, void *user)
{
    (void)user;
    return malloc(size);
}

static void c_free(void *p, void *user)
{
    (void)user;
    free(p);
}

static const sla_allocator c_allocator = {c_malloc, c_free, NULL};

const char *sla_version(void) { return SLA_VERSION_STRING; }

const char *sla_status_name(sla_status s)
{
    switch (s) {
    case SLA_OK: return "SLA_OK";
    case SLA_NOT_CONVERGED: return "SLA_NOT_CONVERGED";
    case SLA_ERR_ARGUMENT: return "SLA_ERR_ARGUMENT";
    case SLA_ERR_NOMEM: return "SLA_ERR_NOMEM";
    case SLA_ERR_DIMENSION: return "SLA_ERR_DIMENSION";
    case SLA_ERR_INDEX: return "SLA_ERR_INDEX";
    case SLA_ERR_VALUE: return "SLA_ERR_VALUE";
    case SLA_ERR_FORMAT: return "SLA_ERR_FORMAT";
    case SLA_ERR_IO: return "SLA_ERR_IO";
    case SLA_ERR_SINGULAR: return "SLA_ERR_SINGULAR";
    case SLA_ERR_NOT_SPD: return "SLA_ERR_NOT_SPD";
    case SLA_ERR_UNAVAILABLE: return "SLA_ERR_UNAVAILABLE";
    case SLA_ERR_TOO_LARGE: return "SLA_ERR_TOO_LARGE";
    case SLA_ERR_UNSUPPORTED: return "SLA_ERR_UNSUPPORTED";
    case SLA_ERR_CALLBACK: return "SLA_ERR_CALLBACK";
    case SLA_ERR_COMM: return "SLA_ERR_COMM";
    }
    return "SLA_UNKNOWN_STATUS";
}

sla_status sla_ctx_create(sla_ctx **out)
{
    if (!out) return SLA_ERR_ARGUMENT;
    *out = NULL;
    sla_ctx *c = calloc(1, sizeof *c);
    if (!c) return SLA_ERR_NOMEM;
    c->alloc = c_allocator;
    *out = c;
    return SLA_OK;
}

void sla_ctx_destroy(sla_ctx **ctx)
{
    if (!ctx || !*ctx) return;
    free(*ctx);
    *ctx = NULL;
}

const char *sla_ctx_message(const sla_ctx *ctx) { return ctx ? ctx->message : ""; }
sla_status sla_ctx_status(const sla_ctx *ctx) { return ctx ? ctx->status : SLA_OK; }

void sla_ctx_clear(sla_ctx *ctx)
{
    if (!ctx) return;
    ctx->status = SLA_OK;
    ctx->message[0] = '\0';
}

void sla_ctx_set_threads(sla_ctx *ctx, int nthreads)
{
    if (ctx) ctx->nthreads = nthreads > 0 ? nthreads : 0;
}

int sla_ctx_threads(const sla_ctx *ctx) { return sla__threads(ctx); }

void sla_ctx_set_allocator(sla_ctx *ctx, const sla_allocator *alloc)
{
    if (!ctx) return;
    ctx->alloc = (alloc && alloc->malloc_fn && alloc->free_fn) ? *alloc : c_allocator;
}

void sla_free(sla_ctx *ctx, void *ptr)
{
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__free(&a, ptr);
}

sla_status sla__error(sla_ctx *ctx, sla_status st, const char *fmt, ...)
{
    if (!ctx) return st;
    ctx->status = st;
    char buf[sizeof ctx->message]; /* the arguments may include ctx->message itself */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(ctx->message, buf, sizeof buf);
    return st;
}

sla_status sla__ok(sla_ctx *ctx, sla_status st)
{
    if (ctx) {
        ctx->status = st;
        if (st == SLA_OK) ctx->message[0] = '\0';
    }
    return st;
}

sla_allocator sla__ctx_alloc(const sla_ctx *ctx) { return ctx ? ctx->alloc : c_allocator; }

void *sla__malloc(const sla_allocator *a, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size) return NULL;
    size_t bytes = count * size;
    return a->malloc_fn(bytes ? bytes : 1, a->user);
}

void *sla__calloc(const sla_allocator *a, size_t count, size_t size)
{
    /* the C library's calloc knows fresh pages from the kernel are zero and
     * skips the memset (large arrays: no write pass, and the pages are first
     * touched by the code that uses them) */
    if (a->malloc_fn == c_malloc) return calloc(count ? count : 1, size ? size : 1);
    void *p = sla__malloc(a, count, size);
    if (p) memset(p, 0, count * size);
    return p;
}

void sla__free(const sla_allocator *a, void *p)
{
    if (p) a->free_fn(p, a->user);
}

void sla__advise_huge(const sla_allocator *a, void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (!p || a->malloc_fn != c_malloc || bytes < ((size_t)4 << 20)) return;
    long ps = sysconf(_SC_PAGESIZE);
    if (ps <= 0) return;
    uintptr_t lo = ((uintptr_t)p + (uintptr_t)ps - 1) / (uintptr_t)ps * (uintptr_t)ps;
    uintptr_t hi = ((uintptr_t)p + bytes) / (uintptr_t)ps * (uintptr_t)ps;
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* a hint: failure is harmless */
#else
    (void)a;
    (void)p;
    (void)bytes;
#endif
}

void *sla__ctx_malloc(sla_ctx *ctx, size_t count, size_t size, const char *what)
{
    sla_allocator a = sla__ctx_alloc(ctx);
    void *p = sla__malloc(&a, count, size);
    if (!p)
        sla__error(ctx, SLA_ERR_NOMEM, "out of memory allocating %s (%zu x %zu bytes)",
                   what, count, size);
    return p;
}

void *sla__ctx_calloc(sla_ctx *ctx, size_t count, size_t size, const char *what)
{
    void *p = sla__ctx_malloc(ctx, count, size, what);
    if (p) memset(p, 0, count * size);
    return p;
}

int sla__threads(const sla_ctx *ctx)
{
    if (ctx && ctx->nthreads > 0) return ctx->nthreads;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

double sla__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
