/* The distributed saamg's shared structures (dist_saamg.c: the set-up,
 * refresh and object; dist_saamg_coarse.c: the prolongator across ranks
 * and the Galerkin product; dist_saamg_fetch.c: the ghost rows of P and
 * the gathered coarsest level; dist_saamg_cycle.c: the V-cycle).
 * Internal. */
#ifndef SLA_DIST_SAAMG_H
#define SLA_DIST_SAAMG_H

#include "../solvers/saamg.h"
#include "dist_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_LEN = 711, TAG_COL = 712, TAG_VAL = 713, TAG_SYM_N = 714, TAG_SYM_I = 715, TAG_SYM_V = 716 };

typedef struct dsa_level {
    sla_dist_matrix *A;  /* level 0: the solver's matrix (borrowed); coarser: owned */
    sla_int nc;          /* coarse rows of this rank (levels with a P) */
    sla_int *prp;        /* P: this rank's fine rows (nlocal + 1) */
    int32_t *pci;        /* columns: own coarse rows < nc, else nc + Pc's ghost index */
    sa_real *pval;       /* values: float32 as the serial P (the cycle reads P twice) */
    sla_int *pglob;      /* set-up only: P's global columns */
    sla_dist_matrix *Pc; /* the coarse-space halo plan of P's columns on other ranks */
    int32_t *brows;      /* the rows other ranks read (A's send list), increasing, unique */
    sla_int nb;
    double *x, *b;       /* coarse levels: iterate, right-hand side */
} dsa_level;

typedef struct dsaamg {
    sla_allocator alloc;   /* pc->alloc: every array of the hierarchy */
    int nlev;
    saamg g;               /* g.lev[l]: level l's diagonal block; g.dense, g.piv: the gathered coarsest factor */
    dsa_level dl[SAAMG_MAX_LEV];
    int *counts, *displs;  /* dense coarsest: every rank's rows in the gathered vector */
    double *bg, *xg;       /* dense coarsest: gathered right-hand side and solution */
    int64_t gathers;       /* MPI_Allgatherv calls of the coarse solves */
    int64_t gather_bytes;  /* bytes this rank contributed to them */
    int rc;                /* first MPI error of an apply */
    int reuse;             /* saamg_reuse: 0 keep P at refresh, 3 keep every coarse level, else
                            * rebuild */
    double theta;          /* saamg_theta: level 0's strength threshold (0: the default) */
    bool stale;            /* a refresh failed: the next one rebuilds */
    float *d0;             /* a_ii of level 0 at the set-up (taken at the first refresh) */
    uint16_t *vh;          /* saamg_reuse = hierarchy: this rank's entries of level 0 (diagonal
                            * block, then off-block) when the coarse levels were last computed,
                            * bfloat16 */
    bool repattern;        /* a refresh found a coarse pattern changed: it rebuilds */
} dsaamg;

/* ---- small helpers ------------------------------------------------------------ */

static inline int cmp_i64(const void *a, const void *b)
{
    sla_int x = *(const sla_int *)a, y = *(const sla_int *)b;
    return (x > y) - (x < y);
}

/* Index of v in the sorted g[0..m), or -1. */
static inline sla_int find_i64(const sla_int *g, sla_int m, sla_int v)
{
    sla_int lo = 0, hi = m - 1;
    while (lo <= hi) {
        sla_int mid = lo + (hi - lo) / 2;
        if (g[mid] == v) return mid;
        if (g[mid] < v) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* Position of column j in row i of a CSR block with sorted columns, or -1. */
static inline sla_int find_col(const sla_matrix *M, sla_int i, sla_int j)
{
    sla_int lo = M->rowptr[i], hi = M->rowptr[i + 1] - 1;
    while (lo <= hi) {
        sla_int m = lo + (hi - lo) / 2;
        if (M->colind[m] == j) return m;
        if (M->colind[m] < j) lo = m + 1;
        else hi = m - 1;
    }
    return -1;
}

static inline sla_status nomem(sla_ctx *ctx, const sla_dist_matrix *A, int l)
{
    return sla__error(ctx, SLA_ERR_NOMEM, "distributed saamg: out of memory on rank %d building level %d", A->rank,
                      l);
}

/* dist_saamg_coarse.c, dist_saamg_fetch.c, dist_saamg_cycle.c (each documented there) */
int sla__dsa_halo_quiet(sla_dist_matrix *A, const double *x, double *ghost);
sla_status sla__dsa_fetch_ghost_p(sla_ctx *ctx, const sla_allocator *a, const sla_dist_matrix *A,
                                  const sla_int *prp, const sla_int *pglob, const sa_real *pval,
                                  sla_int **gprp, sla_int **gcol, double **gval);
sla_status sla__dsa_smooth_p(sla_ctx *ctx, dsaamg *H, int l, const int32_t *agg, sla_int cstart);
sla_status sla__dsa_build_coarse(sla_ctx *ctx, dsaamg *H, int l, sla_int cstart, bool refresh);
sla_status sla__dsa_gather_dense(sla_ctx *ctx, dsaamg *H, int l);
sla_status sla__dsa_apply(const sla__pc *pc, bool transpose, const double *r, double *z, int nt);
int sla__dsa_prolong(dsa_level *d, const double *xc, double *x);
int sla__dsa_restrict(dsa_level *d, const double *r, double *bc);

#endif
