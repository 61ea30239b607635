/* The factorized preconditioners' shared storage: the CSR factor, the pivot
 * rule, and the set-up helpers and triangular sweeps that precond_fact.c
 * (SSOR, IC(0), ILU(0)) and precond_ilut.c (ILUT) both use (private to them). */
#ifndef SLA_PRECOND_FACT_H
#define SLA_PRECOND_FACT_H

#include "krylov.h"

#include <math.h>
#include <string.h>

/* Factors on a CSR pattern. Rows: [rowptr[i], dpos[i]) strictly lower,
 * dpos[i] the diagonal, (dpos[i], rowptr[i+1]) strictly upper. */
typedef struct fact {
    sla_int n;
    const sla_int *rowptr;
    const int32_t *colind;
    sla_int *dpos;        /* position of the diagonal in each row */
    double *val;          /* factor values on the pattern */
    double *dinv;         /* 1 / pivot of each row */
    double omega;         /* SSOR weight (1 for the factorizations) */
    sla_int *own_rowptr;  /* owned pattern (IC(0), ILUT, ILU(0) with inserted diagonals) */
    int32_t *own_colind;
    /* ILUT with column pivoting: A Q = L U with Q e_p = e_perm[p]; NULL
     * when no column moved. The permutation is applied in place, one cycle
     * at a time from its leader (no scratch, so applies stay reentrant). */
    int32_t *perm;
    int32_t *leaders;
    sla_int nleaders;
} fact;

/* The pivot rule (see the top of precond_fact.c), measured on the zero-diagonal
 * matrices of tests/data (docs/krylov.md, "Zero pivots"). PIVOT_TINY: a larger
 * threshold also replaces small pivots that are right (fs_183_6 with ILU(0):
 * 7 GMRES iterations at 1e-12, 32 at 1e-3). PIVOT_SHIFT: ILU(0) on west0067
 * converges in 133 GMRES iterations with 1e-1 and diverges with 1e-3 or
 * 1e-2 (the factor's inverse grows like 1 / shift); ILUT is nearly
 * indifferent (it pivots instead). */
#define PIVOT_TINY 1e-12
#define PIVOT_SHIFT 1e-1

/* Replace a zero or tiny pivot p of a row of 2-norm rnorm: true when it did. */
static inline bool shift_pivot(double *p, double rnorm)
{
    double r = rnorm > 0.0 ? rnorm : 1.0;
    if (!(fabs(*p) <= PIVOT_TINY * rnorm)) return false;
    *p = (*p < 0.0 ? -PIVOT_SHIFT : PIVOT_SHIFT) * r;
    return true;
}

/* z = r (nothing when z aliases r). */
static inline void copy_in(sla_int n, const double *r, double *z)
{
    if (z != r) memcpy(z, r, (size_t)n * sizeof *z);
}

/* precond_fact.c: allocation and validation */
void sla__fact_free(const sla_allocator *a, fact *f);
/* A fact with dpos, dinv (n each) and val (nval) allocated. */
sla_status sla__fact_alloc(sla_ctx *ctx, const sla_allocator *a, sla_int n, sla_int nval,
                           const char *name, fact **out);
sla_status sla__fact_check_input(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                                 const sla__pc *pc, const char *name);
/* pc->shifted and pc->note after a factorization that shifted `count`
 * pivots, the first at row `first`. */
void sla__fact_note_shifts(sla__pc *pc, const char *name, sla_int count, sla_int first,
                           sla_int missing);
/* pc->fact = f, pc->apply = apply, pc->destroy frees f. */
void sla__fact_install(sla__pc *pc, fact *f,
                       sla_status (*apply)(const sla__pc *, bool, const double *, double *, int));

/* precond_fact.c: triangular sweeps in place on f's CSR storage (x holds b);
 * s scales the off-diagonal entries; dinv == NULL means a unit diagonal. */
void sla__fact_lower_solve(const fact *f, double s, const double *dinv, double *x);
void sla__fact_upper_solve(const fact *f, double s, const double *dinv, double *x);
void sla__fact_lower_t_solve(const fact *f, double s, const double *dinv, double *x);
void sla__fact_upper_t_solve(const fact *f, double s, const double *dinv, double *x);

#endif
