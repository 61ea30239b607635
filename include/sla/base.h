/* sla/base.h — status codes, the context object, allocation.
 *
 * Every fallible sla call returns an sla_status. Negative values are errors
 * (outputs are unspecified, nothing is leaked, handles are left NULL);
 * positive values are warnings whose outputs are valid (for example a Krylov
 * solve that stopped at maxiter: x holds the last iterate and the info struct
 * says why). SLA_OK is zero.
 *
 * A context (sla_ctx) carries what would otherwise be global state: the last
 * error message, the thread count and the allocator. Use one context per
 * thread. Every function accepts ctx == NULL: the defaults are used and the
 * message is dropped (the status is still returned). The library never
 * prints, exits or aborts.
 */
#ifndef SLA_BASE_H
#define SLA_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "sla/config.h" /* generated: version, SLA_HAS_*, SLA_API */

#ifdef __cplusplus
extern "C" {
#endif

/* Index type of the public API. Kernels use 32-bit column indices
 * internally; a single-process matrix with more than INT32_MAX columns is
 * refused with SLA_ERR_TOO_LARGE. */
typedef int64_t sla_int;

/* A complex number as the API passes it: two doubles, real part first, the
 * layout of C's double _Complex, C++'s std::complex<double>, NumPy's and
 * PyTorch's complex128 and Fortran's COMPLEX*16. The API only takes
 * pointers to it, so C and C++ callers use their own complex types through
 * a cast. */
#if defined(__cplusplus) || defined(__STDC_NO_COMPLEX__)
typedef struct sla_complex { double re, im; } sla_complex;
#else
typedef double _Complex sla_complex;
#endif

typedef enum sla_status {
    SLA_OK = 0,
    SLA_NOT_CONVERGED = 1,     /* warning: iterative solve stopped early; see info.reason */
    SLA_ERR_ARGUMENT = -1,     /* NULL pointer, bad option, inconsistent arguments */
    SLA_ERR_NOMEM = -2,        /* allocation failed */
    SLA_ERR_DIMENSION = -3,    /* sizes do not match */
    SLA_ERR_INDEX = -4,        /* index out of range, unsorted or repeated */
    SLA_ERR_VALUE = -5,        /* NaN or Inf in the input */
    SLA_ERR_FORMAT = -6,       /* malformed file or string */
    SLA_ERR_IO = -7,           /* file could not be opened, read or written */
    SLA_ERR_SINGULAR = -8,     /* zero pivot or structurally singular matrix */
    SLA_ERR_NOT_SPD = -9,      /* matrix (or preconditioner) not positive definite */
    SLA_ERR_UNAVAILABLE = -10, /* feature not compiled into this build */
    SLA_ERR_TOO_LARGE = -11,   /* size would overflow an index type */
    SLA_ERR_UNSUPPORTED = -12, /* valid input this build cannot handle (e.g. complex) */
    SLA_ERR_CALLBACK = -13,    /* a user callback reported failure */
    SLA_ERR_COMM = -14         /* an MPI call failed (distributed functions) */
} sla_status;

/* Short name of a status ("SLA_ERR_INDEX"); never NULL. */
SLA_API const char *sla_status_name(sla_status s);

/* Version string "major.minor.patch". */
SLA_API const char *sla_version(void);

/* Whether this library was built with an optional component: name is one
 * of "suitesparse", "superlu", "hypre", "arpack", "lapack", "mpi" (the
 * distributed layer) or "metis". Returns 1 if it was, 0 if not or if the
 * name is unknown or NULL. The compile-time SLA_HAS_* of sla/config.h say
 * the same for the library the headers came with. */
SLA_API int sla_has_feature(const char *name);

/* "Did you mean": the candidate nearest to `name` (edit distance; a name
 * of at least 3 characters that begins a candidate names it), or NULL when
 * none is close (more than max(2, half the candidate's length) edits away),
 * when count is 0 or name is NULL. Ties go to the earlier candidate. Names
 * longer than 60 characters are never close. */
SLA_API const char *sla_nearest_name(const char *name, const char *const *candidates, size_t count);

/* Allocator hooks. malloc_fn(size, user) returns NULL on failure;
 * free_fn(ptr, user) accepts NULL. Objects remember the allocator they
 * were created with and free through it. */
typedef struct sla_allocator {
    void *(*malloc_fn)(size_t size, void *user);
    void (*free_fn)(void *ptr, void *user);
    void *user;
} sla_allocator;

typedef struct sla_ctx sla_ctx;

/* Create a context with default settings (threads from OMP_NUM_THREADS,
 * the C allocator). Returns SLA_ERR_NOMEM or SLA_OK. */
SLA_API sla_status sla_ctx_create(sla_ctx **out);

/* Destroy a context; accepts NULL and *ctx == NULL; sets *ctx = NULL. */
SLA_API void sla_ctx_destroy(sla_ctx **ctx);

/* Message of the last failed call made with this context ("" if none).
 * The string is owned by the context and valid until its next call. */
SLA_API const char *sla_ctx_message(const sla_ctx *ctx);

/* Status of the last call made with this context that set one. */
SLA_API sla_status sla_ctx_status(const sla_ctx *ctx);

/* Clear the stored status and message. */
SLA_API void sla_ctx_clear(sla_ctx *ctx);

/* Number of threads the kernels use; 0 means the OpenMP default, which
 * follows OMP_NUM_THREADS. On shared machines one thread can be faster. */
SLA_API void sla_ctx_set_threads(sla_ctx *ctx, int nthreads);
SLA_API int sla_ctx_threads(const sla_ctx *ctx);

/* Replace the allocator (NULL restores the C allocator). Objects already
 * created keep theirs. */
SLA_API void sla_ctx_set_allocator(sla_ctx *ctx, const sla_allocator *alloc);

/* Free a buffer that an sla call returned through ctx's allocator
 * (sla_mm_read_dense). Accepts NULL. */
SLA_API void sla_free(sla_ctx *ctx, void *ptr);

#ifdef __cplusplus
}
#endif
#endif
