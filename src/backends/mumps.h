/* Private: what the MUMPS backends (mumps.c real, mumps_z.c complex)
 * share: the symbolic object (the coordinate pattern, its lower triangle,
 * transposed partners), the silent controls, the error mapping and the
 * process-wide lock around every MUMPS call. Never installed. */
#ifndef SLA_MUMPS_H
#define SLA_MUMPS_H

#include "../solvers/direct.h"

#include <pthread.h>

#include <mumps_c_types.h>

#define MUMPS_USE_COMM_WORLD (-987654) /* the sequential library's communicator */
#define ICNTL_(k) ((k) - 1)
#define ICNTL(k) icntl[(k) - 1]
#define INFOG(k) infog[(k) - 1]
#define RINFOG(k) rinfog[(k) - 1]

/* Held around every call into MUMPS (both arithmetics). */
extern pthread_mutex_t sla__mumps_lock;

typedef struct sla__mumps_sym {
    sla_allocator alloc;
    sla_int n, nnz;
    sla_int *rowptr, *colind; /* copies of A's pattern (sla__check_factor_args) */
    MUMPS_INT *irn, *jcn;     /* 1-based coordinates of every entry */
    MUMPS_INT *lirn, *ljcn;   /* those of the lower triangle (col <= row), in CSR order */
    int64_t *ltk;             /* lower-triangle entry q is entry ltk[q] of A */
    int64_t nlow;
    int64_t *tpos; /* entry k = (i, j) has its partner (j, i) at tpos[k]; NULL: pattern not symmetric */
    int ordering;  /* ICNTL(7) */
    MUMPS_INT *perm_in; /* ICNTL(7) = 1: variable i is pivot perm_in[i] (1-based); else NULL */
    bool perm_metis;    /* perm_in is METIS_NodeND's (ordering metis), not the identity */
    double memory_limit; /* sla__direct_opts's: checked after each analysis (0: none) */
    int nthreads;        /* sla__direct_opts's: at most this many BLAS threads in the factorization */
} sla__mumps_sym;

/* The symbolic object of the square A (any dtype: only the pattern is
 * read): structural check, coordinates, the lower triangle and partners
 * when the pattern is symmetric; o->ordering as ICNTL(7). */
sla_status sla__mumps_analyze(sla_ctx *ctx, const sla_matrix *A, const sla__direct_opts *o, void **sym);
void sla__mumps_free_sym(void *sym);

/* sla's controls on a fresh instance's ICNTL array: silent, ordering, no
 * refinement, null pivot detection, the determinant. */
void sla__mumps_controls(MUMPS_INT *icntl, int ordering);

/* OpenBLAS's thread count for one MUMPS phase (the caller holds
 * sla__mumps_lock): lowered to at most nt, never raised; the returned
 * count goes to sla__mumps_blas_restore (0: nothing changed, or the BLAS
 * is not OpenBLAS). The factorization runs with the context's threads,
 * each solve with one: its BLAS calls are single columns (zgemm with one
 * column, ztrsm) that a second thread does not speed up, while OpenBLAS's
 * waiting threads spin: on a 2-core machine under other load, 2-D
 * Helmholtz n = 1e6 solves took 1.07 CPU s (1.0-1.7 s wall) with two
 * threads against 0.57 (0.6-0.9 s) with one, and the factorization 6.6-6.9
 * CPU s (9.9-10.2 s wall) against 3.4 (4.6-4.9 s). The setting is
 * process-wide (as sla__blas_threads_one's in parallel.c). */
int sla__mumps_blas_limit(int nt);
void sla__mumps_blas_restore(int old);

/* SLA_ERR_TOO_LARGE when the analysis's estimate of the memory of the
 * factorization (INFOG(17) MB, in core) exceeds S->memory_limit. */
sla_status sla__mumps_check_memory(sla_ctx *ctx, const sla__mumps_sym *S, const MUMPS_INT *infog);

/* The name of the ordering MUMPS's analysis used (its INFOG(7)): "amd",
 * "amf", "scotch", "pord", "metis", "qamd", or for a given permutation
 * "metis" (sla's METIS_NodeND) / "natural". */
const char *sla__mumps_ordering_name(const sla__mumps_sym *S, int infog7);

/* INFOG(1) < 0 after `phase` as an sla status, the codes in the message. */
sla_status sla__mumps_error(sla_ctx *ctx, const char *phase, const MUMPS_INT *infog);

/* An INFOG count that MUMPS gives in millions when negative (INFOG(29)). */
static inline double sla__mumps_count(MUMPS_INT v) { return v < 0 ? -1e6 * (double)v : (double)v; }

/* Whether a failed factorization's INFOG(1) says the workspace estimate
 * was too small (retried with ICNTL(14) doubled). */
static inline bool sla__mumps_workspace_short(int e)
{
    return e == -8 || e == -9 || e == -14 || e == -15 || e == -17 || e == -20;
}

#endif
