/* Smoothed-aggregation AMG internals: the tuning constants, the level and
 * hierarchy structures, and the set-up pieces that precond_saamg.c,
 * saamg_aggregate.c and saamg_coarse.c give each other (private to them). */
#ifndef SLA_SAAMG_H
#define SLA_SAAMG_H

#include "krylov.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#ifndef SAAMG_THETA
#define SAAMG_THETA 0.08
#endif
#define SAAMG_COARSE 1000
#define SAAMG_DENSE_MAX 4000
#define SAAMG_MAX_LEV 24
/* saamg_reuse = interpolation or full: a refresh rebuilds instead when
 * some diagonal entry of A moved by more than this factor from its value
 * at the set-up (the kept P no longer fits: a 100-fold jump of kappa on
 * half the cells of diffusion2d 60^2 took 57 CG iterations to rtol 1e-11
 * with the kept P, 20 after a rebuild; kappa changed by 50 %: 16 against
 * 15). */
#define SAAMG_DRIFT 4.0
/* saamg_reuse = hierarchy: a refresh keeps the coarse levels while every
 * entry of A is within this relative change, |a - v| <= SAAMG_KEEP |v|,
 * of its value v when they were last computed (the set-up or a refresh
 * that recomputed them); past it the refresh recomputes them as
 * interpolation does. */
#define SAAMG_KEEP 0.25

/* Values of P and of the coarse operators. */
#ifndef SAAMG_REAL
#define SAAMG_REAL float
#endif
typedef SAAMG_REAL sa_real;

typedef struct sa_level {
    sla_int n, nnz;
    const sla_int *rp;   /* A_l: rows (the caller's on level 0) */
    const int32_t *ci;
    const void *val;     /* double or float (f32) */
    bool f32;
    sla_int *own_rp;     /* coarse levels own their arrays */
    int32_t *own_ci;
    void *own_val;
    double *dinv;        /* 1 / a_ii: during the set-up and a refresh; kept after them only
                          * for the cheby and spai0 smoothers (gs reads a_ii from A) */
    int32_t *prp;        /* P_l: n x n_{l+1} (not on the coarsest level); 32-bit row
                          * pointers (4 B per row less; more than 2^31 - 1 entries of P
                          * are refused) */
    int32_t *pci;
    sa_real *pval;
    bool pslots;         /* the cycle takes P's rows of 1 to 4 entries in four fixed slots
                          * (rows whose lengths vary without a pattern; saamg_cycle.c) */
    /* saamg_reuse = hierarchy, level 0 with Gauss-Seidel: P^T by rows (n_1 + 1
     * row pointers, P's entry count of columns and values), the restriction
     * as a gather over the stored residual r (saamg_cycle.c); else NULL */
    int32_t *trp;
    int32_t *tci;
    sa_real *tval;
    double *x, *b;       /* coarse levels: iterate and right-hand side */
    double *r;           /* residual */
    int32_t *agg;        /* saamg_reuse=full: the aggregates (n) and which */
    uint8_t *strong;     /* entries of A_l were strong at set-up (nnz) */
    double *sm;          /* saamg_smoother=spai0: a_ii / sum_j a_ij^2 (else NULL) */
    double lmax;         /* saamg_smoother=cheby: bound of the spectrum of D^-1 A */
    double *wd;          /* saamg_smoother=cheby: the step (levels with a P) */
    double theta;        /* strength threshold of this level (0: SAAMG_THETA / 2^l) */
    int32_t *dpos;       /* where each row's diagonal is (the sweeps and the residual go to
                          * it directly instead of scanning the lower part, whose length
                          * varies on irregular matrices): coarse levels, and level 0 when
                          * its rows vary (sla__saamg_set_dpos); else NULL */
} sa_level;

typedef struct saamg {
    int nlev;
    int reuse;           /* at refresh: 0 interpolation, 1 full, 2 none, 3 hierarchy */
    int smoother;        /* 0 gs, 1 cheby, 2 spai0 (sla_solver_options.saamg_smoother) */
    double theta0;       /* level 0's strength threshold (sla_solver_options.saamg_theta;
                          * 0: the default) */
    bool stale;          /* a refresh failed: the next one rebuilds */
    bool symmetric;
    bool lock_ready;
    pthread_mutex_t lock; /* held by the apply using the levels' work vectors */
    sa_level lev[SAAMG_MAX_LEV];
    uint16_t *d0;        /* saamg_reuse != none: a_ii of A at the set-up, bfloat16 (the
                          * drift guard's reference) */
    uint16_t *vh;        /* saamg_reuse = hierarchy: A's entries when the coarse levels were
                          * last computed, bfloat16 (SAAMG_KEEP's reference; nnz) */
    struct sa_split *split; /* gs: the hybrid sweeps' blocks for the last thread count
                          * (made by an apply, under the lock; precond_saamg.c) */
    double *dense;       /* coarsest: factor, column major, or NULL (smoothed only) */
    int *piv;            /* LU pivots, or NULL for Cholesky */
} saamg;

/* bfloat16 (a float's top 16 bits, rounded to nearest even: within 2^-9
 * relative): the refresh guards' references. */
static inline uint16_t sla__bf16_pack(double a)
{
    float f = (float)a;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) != 0x7f800000u) u += 0x7fffu + ((u >> 16) & 1u); /* inf/NaN kept */
    return (uint16_t)(u >> 16);
}

static inline double sla__bf16_value(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return (double)f;
}

/* The relative change |a - v| / |v| of an entry against its bfloat16
 * reference h (an entry that was 0 and is not, or NaN: infinite). */
static inline double sla__bf16_moved(double a, uint16_t h)
{
    double v = sla__bf16_value(h), d = fabs(a - v), q = d == 0.0 ? 0.0 : d / fabs(v);
    return q == q ? q : INFINITY;
}

#define AVAL(L, k) ((L)->f32 ? (double)((const float *)(L)->val)[k] : ((const double *)(L)->val)[k])

/* The position of column j in row i of A_l (columns sorted), or -1. */
static inline sla_int find_in_row(const sa_level *L, sla_int i, sla_int j)
{
    sla_int lo = L->rp[i], hi = L->rp[i + 1] - 1;
    while (lo <= hi) {
        sla_int m = lo + (hi - lo) / 2;
        if (L->ci[m] == j) return m;
        if (L->ci[m] < j) lo = m + 1;
        else hi = m - 1;
    }
    return -1;
}

/* The strength threshold of level l: its own (L->theta, the fine level's
 * from sla_solver_options.saamg_theta), else SAAMG_THETA / 2^l. */
static inline double sla__saamg_theta(const sa_level *L, int l)
{
    return L->theta > 0.0 ? L->theta : SAAMG_THETA * ldexp(1.0, -l);
}

sla_status sla__saamg_nomem(sla_ctx *ctx, int l);

/* saamg_aggregate.c */
sla_status sla__saamg_set_diag(sla_ctx *ctx, const sla_allocator *a, sa_level *L, int l);
/* SLA_ERR_SINGULAR: row's diagonal on level l is zero, missing or not finite. */
sla_status sla__saamg_bad_diag(sla_ctx *ctx, sla_int row, int l);
double sla__saamg_smoothing_weight(const sa_level *L, double th2, const uint8_t *mask, int nt);
void sla__saamg_smooth_p(sa_level *L, const int32_t *agg, double th2, const uint8_t *mask,
                         double omega, double *lv);
sla_status sla__saamg_build_p(sla_ctx *ctx, const sla_allocator *a, sa_level *L, int l,
                              int32_t *agg, bool keep, int nt, sla_int *nagg_out);
sla_status sla__saamg_aggregates(sla_ctx *ctx, const sla_allocator *a, sa_level *L, int l,
                                 int32_t *agg, int nt, sla_int *nagg_out);

/* saamg_coarse.c */
sla_status sla__saamg_galerkin(sla_ctx *ctx, const sla_allocator *a, const sa_level *L, int l,
                               sla_int nc, bool symmetric, int nt, sa_level *C);
bool sla__saamg_set_dpos(const sla_allocator *a, sa_level *L, bool only_irregular);
sla_status sla__saamg_galerkin_numeric(sla_ctx *ctx, const sla_allocator *a, const sa_level *L,
                                       int l, bool symmetric, int nt, sa_level *C);
sla_status sla__saamg_factor_coarse(sla_ctx *ctx, const sla_allocator *a, saamg *g,
                                    const sa_level *L);

/* precond_saamg.c: bc = P^T r (serial) */
void sla__saamg_restrict(const sa_level *L, sla_int nc, const double *r, double *bc);
/* saamg_cycle.c: the cycle's work vectors (false: out of memory), the
 * hybrid blocks' lists, one apply. */
bool sla__saamg_alloc_work(const sla_allocator *a, saamg *g);
void sla__saamg_dense_solve(const double *F, const int *piv, sla_int n, double *x);
void sla__saamg_split_free(const sla_allocator *a, struct sa_split **sp);
/* Tests: on, every hybrid level's pre-smoothing and restriction in two
 * passes (the sweep, then the residuals in row order), also where one
 * pass per block is the rule (a stencil's level). */
void sla__saamg_split_two_pass(struct sa_split *sp, bool on);
/* saamg_reuse = hierarchy: level 0's P^T (L->trp, tci, tval) from its P
 * (nc coarse rows); false: out of memory (nothing kept). */
bool sla__saamg_transpose_p(const sla_allocator *a, sa_level *L, sla_int nc);
sla_status sla__saamg_apply(const sla__pc *pc, bool transpose, const double *r, double *z, int nt);
/* The apply with w = A z and (r.z, z.w) taken in the backward sweep of
 * level 0 (sla__pc.apply_aw): the Gauss-Seidel smoother, level 0 with
 * rows of a stencil's regularity (no dpos) and, with threads, its hybrid
 * blocks' lists; else SLA_ERR_UNSUPPORTED. */
sla_status sla__saamg_apply_aw(const sla__pc *pc, bool transpose, const double *r, double *z,
                               double *w, double dots[2], int nt);

/* saamg_smooth.c */
void sla__saamg_cheby(const sa_level *L, const double *b, double *x, double *r, double *d, bool zero,
                      double *bc, sla_int nc, int nt);
void sla__saamg_spai0(const sa_level *L, const double *b, double *x, double *r, bool zero, double *bc,
                      sla_int nc, int nt);
sla_status sla__saamg_smoother_setup(sla_ctx *ctx, const sla_allocator *a, saamg *g, int nt,
                                     int upto);

#endif
