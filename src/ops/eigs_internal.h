/* Private helpers shared by the nonsymmetric and generalized eigensolvers
 * (eigs.c, eigs_vjp.c, eigsh_gen.c): the process-wide ARPACK lock (defined
 * in eigsh.c), a seeded start vector and sparse linear combinations of two
 * matrices (a shifted operator). Never installed. */
#ifndef SLA_EIGS_INTERNAL_H
#define SLA_EIGS_INTERNAL_H

#include "ops_internal.h"

#ifdef SLA_HAVE_ARPACK
#include <pthread.h>
/* ARPACK keeps its state in Fortran SAVE variables: every dsaupd/dnaupd
 * run holds this lock (eigsh.c defines it). */
extern pthread_mutex_t sla__arpack_lock;
#endif

/* The start vector: v0, or a seeded pseudo-random one in [-1, 1). */
static inline void sla__eig_start(sla_int n, const double *v0, double *x)
{
    if (v0) {
        for (sla_int i = 0; i < n; i++) x[i] = v0[i];
        return;
    }
    unsigned long long s = 0x9E3779B97F4A7C15ULL;
    for (sla_int i = 0; i < n; i++) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        x[i] = (double)((s * 2685821657736338717ULL) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
    }
}

/* *out = alpha A_ibA + beta B_ibB as a new one-array float64 matrix on the
 * union of the patterns; B == NULL means the identity (the diagonal is
 * added where A lacks it). A and B square of the same order (checked by
 * the caller). */
sla_status sla__eig_combine(sla_ctx *ctx, const sla_matrix *A, sla_int ibA, double alpha, const sla_matrix *B,
                            sla_int ibB, double beta, sla_matrix **out);

/* The direct solve x = S^-1 b (transpose: S^-T b) by the backend's
 * triangular solves when S holds a factorization, else sla_solver_solve. */
sla_status sla__eig_solve(sla_ctx *ctx, sla_solver *S, bool transpose, const double *b, double *x, sla_int n);

#endif
