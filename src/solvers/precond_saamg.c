/* Smoothed-aggregation algebraic multigrid (precond=saamg), sla's own, for
 * problems too large for hypre's copy of the matrix.
 *
 * Why: BoomerAMG (precond=amg) copies the fine matrix into hypre's ParCSR
 * format (64 bytes per unknown on 2D Poisson) and its hierarchy and work
 * vectors take about 120 more, so CG + BoomerAMG peaks at 267-289 bytes
 * per unknown and 1e8 unknowns do not fit a 24 GiB machine. Here the fine
 * level IS the caller's matrix (read in place, float64 or float32 values),
 * and the coarse levels are stored compactly: 32-bit column indices,
 * float32 values, for A_c and for the prolongators.
 *
 * Hierarchy (Vanek, Mandel, Brezina 1996), level by level:
 *  - strength: j is a strong neighbour of i when |a_ij| >= theta_l
 *    sqrt(|a_ii a_jj|), theta_l = SAAMG_THETA / 2^l on level l (with a
 *    fixed 0.08 the 27-point Galerkin operators of 3D Poisson fell below
 *    it, most coarse nodes stayed unaggregated and CG went 9, 15, 23
 *    iterations for N = 12, 24, 40; halved per level: 9, 10, 11);
 *  - greedy aggregation in the standard three phases: (1) a node whose
 *    strong neighbours are all free forms an aggregate with them; (2) a
 *    still free node joins the phase-1 aggregate of its strongest aggregated
 *    neighbour; (3) the rest form aggregates with their free strong
 *    neighbours. Nodes without strong neighbours stay out of every aggregate
 *    (their tentative prolongator row is zero; the smoother handles them);
 *  - tentative prolongator P0 piecewise constant on the aggregates, smoothed
 *    P = (I - omega D_F^-1 A_F) P0 with the filtered matrix A_F (weak
 *    couplings lumped onto the diagonal, so anisotropic problems keep sparse
 *    coarse operators), omega = 4 / (3 rho), rho the Gershgorin (l1) bound
 *    of D_F^-1 A_F (no power iterations: one pass, deterministic);
 *  - Galerkin A_c = P^T A P by a row-wise sparse triple product over the
 *    transpose of P (accumulated in double, stored in float32: the same
 *    iteration counts as float64 coarse levels on 2D/3D Poisson and
 *    anisotropic diffusion, at half the memory). When A is exactly
 *    symmetric, A_c is symmetrized exactly (both mirrored entries get
 *    their rounded mean), so every level is exactly symmetric and the
 *    cycle is a symmetric operator;
 *  - coarsening stops below SAAMG_COARSE rows, at SAAMG_MAX_LEV levels, or
 *    when a level no longer shrinks; the coarsest level is factorized
 *    densely (Cholesky, LU with partial pivoting when Cholesky breaks down
 *    or A is not symmetric) when it has at most SAAMG_DENSE_MAX rows, and
 *    otherwise (a matrix that does not coarsen, e.g. diagonal) smoothed by
 *    one symmetric Gauss-Seidel sweep.
 *
 * Cycle: V(1,1), forward Gauss-Seidel down and backward Gauss-Seidel up, an
 * exact coarse solve: for symmetric A (every level symmetric) the cycle is
 * a symmetric operator, positive definite for SPD A, so CG can use it, and
 * its transpose (adjoint solves) is the same cycle. For nonsymmetric A the
 * forward cycle is a valid preconditioner for GMRES/BiCGStab, but a
 * transposed apply answers SLA_ERR_UNSUPPORTED (use precond=amg, which
 * replays the exact transposed cycle). With several threads, levels of at
 * least SLA_PAR_MIN rows use hybrid Gauss-Seidel: one contiguous row block
 * per thread, the other blocks' x read from before the sweep; the blocks
 * depend only on the thread count, so the backward sweep is still the
 * exact transpose of the forward one (the cycle stays symmetric for a given
 * thread count) and results are deterministic. Measured: the same
 * iterations as serial Gauss-Seidel, 2D Poisson 1M solve 0.65 -> 0.39 s on
 * 2 threads. Residuals, interpolation and the Galerkin product are
 * threaded too; aggregation and the prolongator are serial.
 *
 * Memory (2D Poisson, float32 matrix: 48 B per unknown): P 2.5 entries per
 * fine row at 8 bytes + row pointers (28 B), 1/a_ii and one residual
 * vector (16 B), coarse levels (n/6 rows at 9 entries on level 1, then
 * ~1/9 per level) ~27 B: ~71 B per unknown beside the matrix; with CG's
 * vectors and b, x the whole solve peaks at 167 B per unknown
 * (bench/SAAMG_RESULTS.md: 1e8 unknowns in 16.7 GB). The set-up's
 * transients (aggregate map, transpose of P) are freed before the solve.
 *
 * Thread safety: the levels' work vectors serve one apply at a time (a
 * mutex, try-locked); an apply that finds them busy, or one with z == r,
 * allocates private work vectors for the call (the sum of the level sizes
 * plus the finer levels' residuals), so concurrent applies of one
 * preconditioner are safe and give the same results.
 *
 * Refresh (new values, same pattern: training loops), saamg_reuse:
 *  - interpolation (the default): the aggregates and P (tentative and
 *    smoothed) are kept; per level, 1/a_ii and the positivity check
 *    (check_diag: a nonpositive diagonal on any level is still
 *    SLA_ERR_NOT_SPD, so auto falls back), the Galerkin product A_c =
 *    P^T A P numerically on the set-up's coarse pattern (galerkin_numeric:
 *    one pass into a dense accumulator read and cleared through A_c's own
 *    columns; same summation order, so equal values give a bitwise equal
 *    hierarchy), the exact symmetrization and the dense coarse factor (its
 *    storage kept). P^T is rebuilt as a transient, as at the set-up;
 *  - full: also P re-smoothed with the new values, P = (I - omega D_F^-1
 *    A_F) P0 on P's pattern, with the set-up's aggregates and strength
 *    verdicts (kept: 4 B per row and 1 B per entry of each level that
 *    has a P) and omega from the new values;
 *  - none: the whole hierarchy rebuilt (the set-up again).
 * The symmetry is checked again (a change rebuilds), and a drift guard
 * rebuilds when some a_ii of A moved by more than SAAMG_DRIFT from the
 * set-up's (a float copy, 4 B per row; the solve's note says so).
 * Measured (bench/SAAMG_RESULTS.md, "Reuse across refresh"): diffusion2d
 * 1e6, kappa changed by <= 1 %: refresh 0.22-0.29 s against 0.64-0.80 s
 * for a rebuild, the same 25 CG iterations; on 160^2 with kappa changed
 * by 50 %: 16 iterations against 15 rebuilt. A failed refresh leaves no
 * hierarchy (the identity, as a failed re-creation leaves no
 * preconditioner) and the next refresh rebuilds. */
#include "krylov.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
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
    double *dinv;        /* 1 / a_ii */
    sla_int *prp;        /* P_l: n x n_{l+1} (not on the coarsest level) */
    int32_t *pci;
    sa_real *pval;
    double *x, *b;       /* coarse levels: iterate and right-hand side */
    double *r;           /* residual */
    int32_t *agg;        /* saamg_reuse=full: the aggregates (n) and which */
    uint8_t *strong;     /* entries of A_l were strong at set-up (nnz) */
} sa_level;

typedef struct saamg {
    int nlev;
    int reuse;           /* at refresh: 0 interpolation, 1 full, 2 none */
    bool stale;          /* a refresh failed: the next one rebuilds */
    bool symmetric;
    bool lock_ready;
    pthread_mutex_t lock; /* held by the apply using the levels' work vectors */
    sa_level lev[SAAMG_MAX_LEV];
    float *d0;           /* saamg_reuse != none: a_ii of A at the set-up */
    double *dense;       /* coarsest: factor, column major, or NULL (smoothed only) */
    int *piv;            /* LU pivots, or NULL for Cholesky */
} saamg;

/* ---- kernels --------------------------------------------------------------- */

#define AVAL(L, k) ((L)->f32 ? (double)((const float *)(L)->val)[k] : ((const double *)(L)->val)[k])

#define SA_KERNELS(T, S)                                                                      \
    /* Gauss-Seidel on rows [lo, hi); columns outside the block read xo  \
     * (NULL: zero), so blocks run concurrently and deterministically. */  \
    static void gs_blk_##S(const sa_level *L, const T *v, const double *b, double *x,        \
                           const double *xo, sla_int lo, sla_int hi, bool fwd)                \
    {                                                                                         \
        const sla_int *rp = L->rp;                                                            \
        const int32_t *ci = L->ci;                                                            \
        bool whole = lo == 0 && hi == L->n;                                                   \
        for (sla_int c = 0; c < hi - lo; c++) {                                               \
            sla_int i = fwd ? lo + c : hi - 1 - c;                                            \
            double s = b[i];                                                                  \
            if (whole)                                                                        \
                for (sla_int k = rp[i]; k < rp[i + 1]; k++) s -= (double)v[k] * x[ci[k]];     \
            else                                                                              \
                for (sla_int k = rp[i]; k < rp[i + 1]; k++) {                                 \
                    sla_int j = ci[k];                                                        \
                    double xj = (j >= lo && j < hi) ? x[j] : xo ? xo[j] : 0.0;                \
                    s -= (double)v[k] * xj;                                                   \
                }                                                                             \
            x[i] += s * L->dinv[i];                                                           \
        }                                                                                     \
    }                                                                                         \
    static void resid_##S(const sa_level *L, const T *v, const double *b, const double *x,   \
                          double *r, int nt)                                                  \
    {                                                                                         \
        const sla_int *rp = L->rp;                                                            \
        const int32_t *ci = L->ci;                                                            \
        sla_int n = L->n;                                                                     \
        _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)") \
        for (sla_int i = 0; i < n; i++) {                                                     \
            double s = b[i];                                                                  \
            for (sla_int k = rp[i]; k < rp[i + 1]; k++) s -= (double)v[k] * x[ci[k]];         \
            r[i] = s;                                                                         \
        }                                                                                     \
    }

SA_KERNELS(double, d)
SA_KERNELS(float, f)

/* One Gauss-Seidel sweep, forward or backward. With nt > 1 threads on a
 * large level: hybrid Gauss-Seidel, nt contiguous row blocks swept
 * concurrently, each reading the other blocks' x from before the sweep
 * (xo; NULL when that x is zero). The blocks depend only on nt, so a
 * forward and a backward sweep with the same nt are transposes of each
 * other and the cycle stays symmetric. */
static void gs(const sa_level *L, const double *b, double *x, const double *xo, bool fwd, int nt)
{
    sla_int n = L->n;
    if (nt <= 1 || n < SLA_PAR_MIN) {
        if (L->f32) gs_blk_f(L, L->val, b, x, NULL, 0, n, fwd);
        else gs_blk_d(L, L->val, b, x, NULL, 0, n, fwd);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; t++) {
        sla_int lo = n * t / nt, hi = n * (t + 1) / nt;
        if (L->f32) gs_blk_f(L, L->val, b, x, xo, lo, hi, fwd);
        else gs_blk_d(L, L->val, b, x, xo, lo, hi, fwd);
    }
}
static void resid(const sa_level *L, const double *b, const double *x, double *r, int nt)
{
    if (L->f32) resid_f(L, L->val, b, x, r, nt);
    else resid_d(L, L->val, b, x, r, nt);
}

/* bc = P^T r (scatter, serial). */
static void restrict_(const sa_level *L, sla_int nc, const double *r, double *bc)
{
    memset(bc, 0, (size_t)nc * sizeof *bc);
    for (sla_int i = 0; i < L->n; i++) {
        double ri = r[i];
        for (sla_int k = L->prp[i]; k < L->prp[i + 1]; k++) bc[L->pci[k]] += (double)L->pval[k] * ri;
    }
}

/* x += P xc */
static void prolong(const sa_level *L, const double *xc, double *x, int nt)
{
    sla_int n = L->n;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        double s = 0.0;
        for (sla_int k = L->prp[i]; k < L->prp[i + 1]; k++) s += (double)L->pval[k] * xc[L->pci[k]];
        x[i] += s;
    }
}

static void coarse_solve(const saamg *g, const sa_level *L, const double *b, double *x)
{
    sla_int n = L->n;
    if (!g->dense) { /* one symmetric Gauss-Seidel sweep */
        memset(x, 0, (size_t)n * sizeof *x);
        gs(L, b, x, NULL, true, 1);
        gs(L, b, x, NULL, false, 1);
        return;
    }
    const double *F = g->dense;
    memcpy(x, b, (size_t)n * sizeof *x);
    if (g->piv) { /* P A = L U, L unit lower */
        for (sla_int i = 0; i < n; i++) {
            sla_int p = g->piv[i];
            if (p != i) {
                double t = x[i];
                x[i] = x[p];
                x[p] = t;
            }
        }
        for (sla_int j = 0; j < n; j++)
            for (sla_int i = j + 1; i < n; i++) x[i] -= F[i + j * n] * x[j];
        for (sla_int j = n - 1; j >= 0; j--) {
            x[j] /= F[j + j * n];
            for (sla_int i = 0; i < j; i++) x[i] -= F[i + j * n] * x[j];
        }
    } else { /* A = L L^T, L in the lower triangle */
        for (sla_int j = 0; j < n; j++) {
            x[j] /= F[j + j * n];
            for (sla_int i = j + 1; i < n; i++) x[i] -= F[i + j * n] * x[j];
        }
        for (sla_int i = n - 1; i >= 0; i--) {
            double s = x[i];
            for (sla_int k = i + 1; k < n; k++) s -= F[k + i * n] * x[k];
            x[i] = s / F[i + i * n];
        }
    }
}

/* The cycle's work vectors: r[l] (levels 0..nlev-2), x[l] and b[l]
 * (levels 1..nlev-1). */
typedef struct sa_work {
    double *r[SAAMG_MAX_LEV], *x[SAAMG_MAX_LEV], *b[SAAMG_MAX_LEV];
} sa_work;

/* x = M^-1 b on level l (x overwritten). */
static void cycle(const saamg *g, const sa_work *w, int l, const double *b, double *x, int nt)
{
    const sa_level *L = &g->lev[l];
    if (l == g->nlev - 1) {
        coarse_solve(g, L, b, x);
        return;
    }
    const sa_level *C = &g->lev[l + 1];
    double *r = w->r[l];
    memset(x, 0, (size_t)L->n * sizeof *x);
    gs(L, b, x, NULL, true, nt); /* from x = 0 */
    resid(L, b, x, r, nt);
    restrict_(L, C->n, r, w->b[l + 1]);
    cycle(g, w, l + 1, w->b[l + 1], w->x[l + 1], nt);
    prolong(L, w->x[l + 1], x, nt);
    if (nt > 1 && L->n >= SLA_PAR_MIN) sla__copy(L->n, x, r); /* r is free again */
    gs(L, b, x, r, false, nt);
}

/* One apply. The levels' own work vectors serve one apply at a time; a
 * concurrent apply (batched solves run columns on several threads with
 * one preconditioner) gets private ones for the call, as does z == r. */
static sla_status saamg_apply(const sla__pc *pc, bool transpose, const double *r, double *z,
                              int nt)
{
    saamg *g = pc->fact;
    if (transpose && !g->symmetric) return SLA_ERR_UNSUPPORTED;
    sa_work w;
    memset(&w, 0, sizeof w);
    double *block = NULL;
    bool own = r != z && pthread_mutex_trylock(&g->lock) == 0;
    if (own) {
        for (int l = 0; l < g->nlev; l++) {
            w.r[l] = g->lev[l].r;
            w.x[l] = g->lev[l].x;
            w.b[l] = g->lev[l].b;
        }
    } else {
        size_t total = r == z ? (size_t)g->lev[0].n : 0;
        for (int l = 0; l < g->nlev; l++)
            total += (size_t)g->lev[l].n * (l == 0 ? 1 : l < g->nlev - 1 ? 3 : 2);
        block = sla__malloc(&pc->alloc, total > 0 ? total : 1, sizeof *block);
        if (!block) return SLA_ERR_NOMEM;
        double *p = block;
        if (r == z) {
            sla__copy(g->lev[0].n, r, p);
            r = p;
            p += g->lev[0].n;
        }
        for (int l = 0; l < g->nlev; l++) {
            sla_int n = g->lev[l].n;
            if (l < g->nlev - 1) w.r[l] = p, p += n;
            if (l > 0) w.x[l] = p, p += n, w.b[l] = p, p += n;
        }
    }
    cycle(g, &w, 0, r, z, nt);
    if (own) pthread_mutex_unlock(&g->lock);
    sla__free(&pc->alloc, block);
    return SLA_OK;
}

/* ---- set-up ------------------------------------------------------------------ */

/* Free the hierarchy (g itself, its lock and options stay). */
static void free_levels(const sla_allocator *a, saamg *g)
{
    for (int l = 0; l < SAAMG_MAX_LEV; l++) {
        sa_level *L = &g->lev[l];
        sla__free(a, L->own_rp);
        sla__free(a, L->own_ci);
        sla__free(a, L->own_val);
        sla__free(a, L->dinv);
        sla__free(a, L->prp);
        sla__free(a, L->pci);
        sla__free(a, L->pval);
        sla__free(a, L->x);
        sla__free(a, L->b);
        sla__free(a, L->r);
        sla__free(a, L->agg);
        sla__free(a, L->strong);
        memset(L, 0, sizeof *L);
    }
    sla__free(a, g->dense);
    sla__free(a, g->piv);
    sla__free(a, g->d0);
    g->d0 = NULL;
    g->dense = NULL;
    g->piv = NULL;
    g->nlev = 0;
}

static void saamg_destroy(sla__pc *pc)
{
    saamg *g = pc->fact;
    if (!g) return;
    const sla_allocator *a = &pc->alloc;
    free_levels(a, g);
    if (g->lock_ready) pthread_mutex_destroy(&g->lock);
    sla__free(a, g);
    pc->fact = NULL;
}

static sla_status nomem(sla_ctx *ctx, int l)
{
    return sla__error(ctx, SLA_ERR_NOMEM, "precond saamg: out of memory building level %d", l);
}

static sla_int find_in_row(const sa_level *L, sla_int i, sla_int j)
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

/* Whether level 0 is exactly symmetric (pattern and values). */
static bool is_symmetric(const sa_level *L, int nt)
{
    int bad = 0;
    sla_int n = L->n;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(| : bad) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        if (bad) continue;
        for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
            sla_int j = L->ci[k];
            if (j <= i) continue;
            sla_int q = find_in_row(L, j, i);
            if (q < 0 || AVAL(L, q) != AVAL(L, k)) {
                bad = 1;
                break;
            }
        }
    }
    return !bad;
}

/* theta_l = SAAMG_THETA / 2^l on level l (Vanek, Mandel, Brezina): the
 * Galerkin operators spread their couplings over more, weaker entries. */
static inline bool strong_t(double th2, double aij, double di, double dj)
{
    return aij * aij >= th2 * fabs(di * dj);
}

/* a_ii, as the strength test sees it (from the stored 1 / a_ii: the same
 * value everywhere) */
#define DG(i) (1.0 / L->dinv[i])

/* Whether entry k (row i, column j != i, value v) is a strong coupling:
 * the test on the current values, or (mask, saamg_reuse=full at refresh)
 * the set-up's verdict. */
#define STRONG(mask, k, v, i, j) ((mask) ? (mask)[k] != 0 : strong_t(th2, v, DG(i), DG(j)))

/* The filtered diagonal of row i (weak couplings lumped onto a_ii; a_ii if
 * that sum is 0) and, in *s, the sum of |a_ij| over the strong ones. */
static double filtered_diag(const sa_level *L, sla_int i, double th2, const uint8_t *mask, double *s)
{
    double df = DG(i), sum = 0.0;
    for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
        sla_int j = L->ci[k];
        if (j == i) continue;
        double v = AVAL(L, k);
        if (STRONG(mask, k, v, i, j)) sum += fabs(v);
        else df += v;
    }
    *s = sum;
    return df == 0.0 ? DG(i) : df;
}

/* 1 / a_ii of level l (allocated at set-up, overwritten at refresh). */
static sla_status set_diag(sla_ctx *ctx, const sla_allocator *a, sa_level *L, int l)
{
    if (!L->dinv) L->dinv = sla__malloc(a, (size_t)(L->n > 0 ? L->n : 1), sizeof *L->dinv);
    if (!L->dinv) return nomem(ctx, l);
    for (sla_int i = 0; i < L->n; i++) {
        sla_int p = find_in_row(L, i, i);
        double d = p >= 0 ? AVAL(L, p) : 0.0;
        if (d == 0.0 || !isfinite(d))
            return sla__error(ctx, SLA_ERR_SINGULAR,
                              "precond saamg: zero or missing diagonal at row %lld of level %d",
                              (long long)i, l);
        L->dinv[i] = 1.0 / d;
    }
    return SLA_OK;
}

/* omega = 4 / (3 rho), rho the l1 (Gershgorin) bound of D_F^-1 A_F. */
static double smoothing_weight(const sa_level *L, double th2, const uint8_t *mask)
{
    double rho = 0.0;
    for (sla_int i = 0; i < L->n; i++) {
        double s, df = filtered_diag(L, i, th2, mask, &s);
        double q = (fabs(df) + s) / fabs(df);
        if (q > rho) rho = q;
    }
    return 4.0 / (3.0 * rho);
}

/* The values of P = (I - omega D_F^-1 A_F) P0 on its pattern (set up by
 * build_p: in each row the own aggregate first, then the strong
 * neighbours' aggregates in the order of first appearance). lv: scratch,
 * the longest row of P. */
static void smooth_p(sa_level *L, const int32_t *agg, double th2, const uint8_t *mask, double omega,
                     double *lv)
{
    for (sla_int i = 0; i < L->n; i++) {
        sla_int p0 = L->prp[i], m = 0, len = L->prp[i + 1] - p0;
        const int32_t *lc = L->pci + p0;
        double s_unused, w = omega / filtered_diag(L, i, th2, mask, &s_unused);
        for (sla_int q = 0; q < len; q++) lv[q] = 0.0;
        if (agg[i] >= 0) { /* (I - w D_F^-1 A_F) P0 on the diagonal: 1 - w */
            lv[0] = 1.0 - omega;
            m = 1;
        }
        for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
            sla_int j = L->ci[k];
            if (j == i || agg[j] < 0) continue;
            double v = AVAL(L, k);
            if (!STRONG(mask, k, v, i, j)) continue;
            sla_int q = 0;
            while (q < m && lc[q] != agg[j]) q++;
            if (q == m) m++; /* lc[q] == agg[j]: the pattern was built this way */
            lv[q] -= w * v;
        }
        for (sla_int q = 0; q < len; q++) L->pval[p0 + q] = (sa_real)lv[q];
    }
}

/* Diagonal, aggregation and the smoothed prolongator of level l; sets
 * *nagg (0: the level does not coarsen). agg: n scratch entries. keep
 * (saamg_reuse=full): P's aggregates and the strength of A's entries are
 * kept in L->agg, L->strong, to re-smooth P at refresh. */
static sla_status build_p(sla_ctx *ctx, const sla_allocator *a, sa_level *L, int l,
                          int32_t *agg, bool keep, sla_int *nagg_out)
{
    sla_int n = L->n;
    double th = SAAMG_THETA * ldexp(1.0, -l), th2 = th * th;
    *nagg_out = 0;
    sla_status st = set_diag(ctx, a, L, l);
    if (st) return st;
    /* aggregation: -1 free, -2 no strong neighbour, >= 0 aggregate */
    for (sla_int i = 0; i < n; i++) {
        agg[i] = -2;
        for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
            sla_int j = L->ci[k];
            if (j != i && strong_t(th2, AVAL(L, k), DG(i), DG(j))) {
                agg[i] = -1;
                break;
            }
        }
    }
    sla_int na = 0;
    for (sla_int i = 0; i < n; i++) { /* phase 1 */
        if (agg[i] != -1) continue;
        bool ok = true;
        for (sla_int k = L->rp[i]; k < L->rp[i + 1] && ok; k++) {
            sla_int j = L->ci[k];
            if (j != i && agg[j] >= 0 && strong_t(th2, AVAL(L, k), DG(i), DG(j))) ok = false;
        }
        if (!ok) continue;
        if (na >= INT32_MAX) break;
        agg[i] = (int32_t)na;
        for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
            sla_int j = L->ci[k];
            if (j != i && agg[j] < 0 && strong_t(th2, AVAL(L, k), DG(i), DG(j))) agg[j] = (int32_t)na;
        }
        na++;
    }
    for (sla_int i = 0; i < n; i++) { /* phase 2: join the strongest phase-1 neighbour */
        if (agg[i] != -1) continue;
        double best = -1.0;
        int32_t ba = -1;
        for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
            sla_int j = L->ci[k];
            double v = AVAL(L, k);
            if (j == i || agg[j] < 0 || !strong_t(th2, v, DG(i), DG(j))) continue;
            double s = fabs(v) / sqrt(fabs(DG(i) * DG(j)));
            if (s > best) best = s, ba = agg[j];
        }
        if (ba >= 0) agg[i] = -3 - ba; /* marked: not a phase-1 member for later rows */
    }
    for (sla_int i = 0; i < n; i++)
        if (agg[i] <= -3) agg[i] = -3 - agg[i];
    for (sla_int i = 0; i < n; i++) { /* phase 3: the rest */
        if (agg[i] != -1) continue;
        if (na >= INT32_MAX) break;
        agg[i] = (int32_t)na;
        for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
            sla_int j = L->ci[k];
            if (j != i && agg[j] == -1 && strong_t(th2, AVAL(L, k), DG(i), DG(j))) agg[j] = (int32_t)na;
        }
        na++;
    }
    if (na == 0 || na > (sla_int)(0.85 * (double)n)) return SLA_OK; /* does not coarsen */

    double omega = smoothing_weight(L, th2, NULL);

    /* P = (I - omega D_F^-1 A_F) P0: count, then fill */
    L->prp = sla__malloc(a, (size_t)n + 1, sizeof *L->prp);
    if (!L->prp) return nomem(ctx, l);
    /* the strength test needs the true diagonal: 1 / dinv */
    L->prp[0] = 0;
    for (sla_int i = 0; i < n; i++) {
        sla_int c = agg[i] >= 0 ? 1 : 0;
        for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
            sla_int j = L->ci[k];
            if (j == i || agg[j] < 0 || agg[j] == agg[i]) continue;
            if (!strong_t(th2, AVAL(L, k), DG(i), DG(j))) continue;
            bool seen = false; /* distinct aggregates among the earlier neighbours */
            for (sla_int q = L->rp[i]; q < k && !seen; q++) {
                sla_int jj = L->ci[q];
                if (jj != i && agg[jj] == agg[j] &&
                    strong_t(th2, AVAL(L, q), DG(i), DG(jj)))
                    seen = true;
            }
            if (!seen) c++;
        }
        L->prp[i + 1] = L->prp[i] + c;
    }
    sla_int pnnz = L->prp[n];
    L->pci = sla__malloc(a, (size_t)(pnnz > 0 ? pnnz : 1), sizeof *L->pci);
    L->pval = sla__malloc(a, (size_t)(pnnz > 0 ? pnnz : 1), sizeof *L->pval);
    if (!L->pci || !L->pval) return nomem(ctx, l);
    sla_int maxlen = 1;
    for (sla_int i = 0; i < n; i++) maxlen = L->rp[i + 1] - L->rp[i] + 1 > maxlen ? L->rp[i + 1] - L->rp[i] + 1 : maxlen;
    double *lv = sla__malloc(a, (size_t)maxlen, sizeof *lv);
    if (!lv) return nomem(ctx, l);
    if (keep) {
        L->agg = sla__malloc(a, (size_t)(n > 0 ? n : 1), sizeof *L->agg);
        L->strong = sla__malloc(a, (size_t)(L->rp[n] > 0 ? L->rp[n] : 1), sizeof *L->strong);
        if (!L->agg || !L->strong) {
            sla__free(a, lv);
            return nomem(ctx, l);
        }
        memcpy(L->agg, agg, (size_t)n * sizeof *agg);
        for (sla_int i = 0; i < n; i++)
            for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
                sla_int j = L->ci[k];
                L->strong[k] = j != i && strong_t(th2, AVAL(L, k), DG(i), DG(j));
            }
    }
    for (sla_int i = 0; i < n; i++) {
        sla_int p0 = L->prp[i], m = 0;
        int32_t *lc = L->pci + p0;
        double s_unused, w = omega / filtered_diag(L, i, th2, NULL, &s_unused);
        if (agg[i] >= 0) { /* (I - w D_F^-1 A_F) P0 on the diagonal: 1 - w */
            lc[0] = agg[i];
            lv[0] = 1.0 - omega;
            m = 1;
        }
        for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
            sla_int j = L->ci[k];
            if (j == i || agg[j] < 0) continue;
            double v = AVAL(L, k);
            if (!strong_t(th2, v, DG(i), DG(j))) continue;
            sla_int q = 0;
            while (q < m && lc[q] != agg[j]) q++;
            if (q == m) {
                lc[m] = agg[j];
                lv[m] = 0.0;
                m++;
            }
            lv[q] -= w * v;
        }
        for (sla_int q = 0; q < m; q++) L->pval[p0 + q] = (sa_real)lv[q];
    }
    sla__free(a, lv);
    *nagg_out = na;
    return SLA_OK;
}

/* Sort one row's columns (rows are short: insertion sort). */
static void sort_cols(int32_t *c, sla_int m)
{
    for (sla_int i = 1; i < m; i++) {
        int32_t cc = c[i];
        sla_int j = i - 1;
        while (j >= 0 && c[j] > cc) {
            c[j + 1] = c[j];
            j--;
        }
        c[j + 1] = cc;
    }
}

/* P^T (nc rows) into trp (zeroed), tci, tv. */
static void transpose_p(const sa_level *L, sla_int nc, sla_int *trp, int32_t *tci, sa_real *tv)
{
    sla_int n = L->n, pnnz = L->prp[n];
    for (sla_int k = 0; k < pnnz; k++) trp[L->pci[k] + 1]++;
    for (sla_int I = 0; I < nc; I++) trp[I + 1] += trp[I];
    for (sla_int i = 0; i < n; i++)
        for (sla_int k = L->prp[i]; k < L->prp[i + 1]; k++) {
            sla_int q = trp[L->pci[k]]++;
            tci[q] = (int32_t)i;
            tv[q] = L->pval[k];
        }
    for (sla_int I = nc; I > 0; I--) trp[I] = trp[I - 1];
    trp[0] = 0;
}

/* Exact symmetry: both mirrored entries of C get their rounded mean. */
static void symmetrize(const sa_level *C, sa_real *vv)
{
    for (sla_int I = 0; I < C->n; I++)
        for (sla_int k = C->rp[I]; k < C->rp[I + 1]; k++) {
            sla_int J = C->ci[k];
            if (J <= I) continue;
            sla_int q = find_in_row(C, J, I);
            if (q < 0) continue; /* cannot happen for a symmetric pattern */
            sa_real m = (sa_real)(0.5 * ((double)vv[k] + (double)vv[q]));
            vv[k] = vv[q] = m;
        }
}

/* C = P^T A P for level l (P, A in L), into level l + 1 (nc rows). */
static sla_status galerkin(sla_ctx *ctx, const sla_allocator *a, const sa_level *L, int l,
                           sla_int nc, bool symmetric, int nt, sa_level *C)
{
    sla_status st = SLA_OK;
    sla_int n = L->n, pnnz = L->prp[n];
    sla_int *trp = sla__calloc(a, (size_t)nc + 1, sizeof *trp);
    int32_t *tci = sla__malloc(a, (size_t)(pnnz > 0 ? pnnz : 1), sizeof *tci);
    sa_real *tv = sla__malloc(a, (size_t)(pnnz > 0 ? pnnz : 1), sizeof *tv);
    int32_t *mark = sla__malloc(a, (size_t)nt * (size_t)nc, sizeof *mark);
    double *acc = sla__malloc(a, (size_t)nt * (size_t)nc, sizeof *acc);
    if (!trp || !tci || !tv || !mark || !acc) {
        st = nomem(ctx, l + 1);
        goto out;
    }
    transpose_p(L, nc, trp, tci, tv);

    C->n = nc;
    C->own_rp = sla__malloc(a, (size_t)nc + 1, sizeof *C->own_rp);
    if (!C->own_rp) {
        st = nomem(ctx, l + 1);
        goto out;
    }
    for (sla_int k = 0; k < (sla_int)nt * nc; k++) mark[k] = -1;
    /* symbolic: entries per coarse row */
#pragma omp parallel num_threads(nt) if (nt > 1 && nc >= 256)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        int32_t *mk = mark + (size_t)t * (size_t)nc;
#pragma omp for schedule(dynamic, 64)
        for (sla_int I = 0; I < nc; I++) {
            sla_int cnt = 0;
            for (sla_int p = trp[I]; p < trp[I + 1]; p++) {
                sla_int i = tci[p];
                for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
                    sla_int j = L->ci[k];
                    for (sla_int q = L->prp[j]; q < L->prp[j + 1]; q++) {
                        int32_t J = L->pci[q];
                        if (mk[J] != (int32_t)I) {
                            mk[J] = (int32_t)I;
                            cnt++;
                        }
                    }
                }
            }
            C->own_rp[I + 1] = cnt;
        }
    }
    C->own_rp[0] = 0;
    for (sla_int I = 0; I < nc; I++) C->own_rp[I + 1] += C->own_rp[I];
    sla_int cnnz = C->own_rp[nc];
    C->nnz = cnnz;
    C->own_ci = sla__malloc(a, (size_t)(cnnz > 0 ? cnnz : 1), sizeof *C->own_ci);
    if (!C->own_ci) {
        st = nomem(ctx, l + 1);
        goto out;
    }
    sa_real *vv = sla__malloc(a, (size_t)(cnnz > 0 ? cnnz : 1), sizeof *vv);
    if (!vv) {
        st = nomem(ctx, l + 1);
        goto out;
    }
    C->own_val = vv;
    for (sla_int k = 0; k < (sla_int)nt * nc; k++) mark[k] = -1;
#pragma omp parallel num_threads(nt) if (nt > 1 && nc >= 256)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        int32_t *mk = mark + (size_t)t * (size_t)nc; /* last coarse row that met J */
        double *ac = acc + (size_t)t * (size_t)nc;  /* its sum in that row */
#pragma omp for schedule(dynamic, 64)
        for (sla_int I = 0; I < nc; I++) {
            sla_int base = C->own_rp[I], m = 0;
            for (sla_int p = trp[I]; p < trp[I + 1]; p++) {
                sla_int i = tci[p];
                double pi = (double)tv[p];
                for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
                    sla_int j = L->ci[k];
                    double pa = pi * AVAL(L, k);
                    for (sla_int q = L->prp[j]; q < L->prp[j + 1]; q++) {
                        int32_t J = L->pci[q];
                        if (mk[J] != (int32_t)I) {
                            mk[J] = (int32_t)I;
                            ac[J] = 0.0;
                            C->own_ci[base + m++] = J;
                        }
                        ac[J] += pa * (double)L->pval[q];
                    }
                }
            }
            sort_cols(C->own_ci + base, m);
            for (sla_int q = 0; q < m; q++) vv[base + q] = (sa_real)ac[C->own_ci[base + q]];
        }
    }
    C->rp = C->own_rp;
    C->ci = C->own_ci;
    if (symmetric) symmetrize(C, vv);
    C->val = vv;
    C->f32 = sizeof(sa_real) == sizeof(float);
out:
    sla__free(a, trp);
    sla__free(a, tci);
    sla__free(a, tv);
    sla__free(a, mark);
    sla__free(a, acc);
    return st;
}

/* Refresh: the values of C = P^T A P on C's existing pattern (the
 * symbolic product of the set-up), one numeric pass: per coarse row, the
 * same traversal and summation order as the set-up (so equal values give
 * bitwise equal operators) into a dense accumulator that C's own column
 * list reads and clears; no marks, no counting pass, no sort. P^T is
 * rebuilt here as a transient (20 B per fine unknown on 2D Poisson that
 * the solve need not hold). */
static sla_status galerkin_numeric(sla_ctx *ctx, const sla_allocator *a, const sa_level *L, int l,
                                   bool symmetric, int nt, sa_level *C)
{
    sla_status st = SLA_OK;
    sla_int nc = C->n, pnnz = L->prp[L->n];
    sla_int *trp = sla__calloc(a, (size_t)nc + 1, sizeof *trp);
    int32_t *tci = sla__malloc(a, (size_t)(pnnz > 0 ? pnnz : 1), sizeof *tci);
    sa_real *tv = sla__malloc(a, (size_t)(pnnz > 0 ? pnnz : 1), sizeof *tv);
    double *acc = sla__calloc(a, (size_t)nt * (size_t)(nc > 0 ? nc : 1), sizeof *acc);
    if (!trp || !tci || !tv || !acc) {
        st = nomem(ctx, l + 1);
        goto out;
    }
    transpose_p(L, nc, trp, tci, tv);
    sa_real *vv = C->own_val;
#pragma omp parallel num_threads(nt) if (nt > 1 && nc >= 256)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        double *ac = acc + (size_t)t * (size_t)nc;
#pragma omp for schedule(dynamic, 64)
        for (sla_int I = 0; I < nc; I++) {
            for (sla_int p = trp[I]; p < trp[I + 1]; p++) {
                sla_int i = tci[p];
                double pi = (double)tv[p];
                for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
                    sla_int j = L->ci[k];
                    double pa = pi * AVAL(L, k);
                    for (sla_int q = L->prp[j]; q < L->prp[j + 1]; q++)
                        ac[L->pci[q]] += pa * (double)L->pval[q];
                }
            }
            for (sla_int k = C->rp[I]; k < C->rp[I + 1]; k++) {
                vv[k] = (sa_real)ac[C->ci[k]];
                ac[C->ci[k]] = 0.0;
            }
        }
    }
    if (symmetric) symmetrize(C, vv);
out:
    sla__free(a, trp);
    sla__free(a, tci);
    sla__free(a, tv);
    sla__free(a, acc);
    return st;
}

/* Dense factor of the coarsest level. */
static sla_status factor_coarse(sla_ctx *ctx, const sla_allocator *a, saamg *g, const sa_level *L)
{
    sla_int n = L->n;
    double *F = g->dense; /* kept across refreshes */
    if (!F) F = sla__calloc(a, (size_t)n * (size_t)n, sizeof *F);
    if (!F) return nomem(ctx, g->nlev - 1);
    g->dense = F;
    bool chol = g->symmetric;
    for (int attempt = 0; attempt < 2; attempt++) {
        memset(F, 0, (size_t)n * (size_t)n * sizeof *F);
        for (sla_int i = 0; i < n; i++)
            for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) F[i + (sla_int)L->ci[k] * n] = AVAL(L, k);
        if (chol) {
            bool ok = true;
            for (sla_int j = 0; j < n && ok; j++) {
                double d = F[j + j * n];
                for (sla_int k = 0; k < j; k++) d -= F[j + k * n] * F[j + k * n];
                if (!(d > 0.0)) {
                    ok = false;
                    break;
                }
                d = sqrt(d);
                F[j + j * n] = d;
                for (sla_int i = j + 1; i < n; i++) {
                    double s = F[i + j * n];
                    for (sla_int k = 0; k < j; k++) s -= F[i + k * n] * F[j + k * n];
                    F[i + j * n] = s / d;
                }
            }
            if (ok) {
                sla__free(a, g->piv); /* an earlier LU's */
                g->piv = NULL;
                return SLA_OK;
            }
            chol = false;
            continue;
        }
        if (!g->piv) g->piv = sla__malloc(a, (size_t)n, sizeof *g->piv);
        if (!g->piv) return nomem(ctx, g->nlev - 1);
        double amax = 0.0;
        for (sla_int k = 0; k < n * n; k++) amax = fmax(amax, fabs(F[k]));
        for (sla_int j = 0; j < n; j++) {
            sla_int p = j;
            for (sla_int i = j + 1; i < n; i++)
                if (fabs(F[i + j * n]) > fabs(F[p + j * n])) p = i;
            g->piv[j] = (int)p;
            if (!(fabs(F[p + j * n]) > 1e-14 * amax))
                return sla__error(ctx, SLA_ERR_SINGULAR,
                                  "precond saamg: the coarsest operator (%lld rows, level %d) is "
                                  "singular (is A singular, e.g. a pure Neumann problem?)",
                                  (long long)n, g->nlev - 1);
            if (p != j)
                for (sla_int k = 0; k < n; k++) {
                    double t = F[j + k * n];
                    F[j + k * n] = F[p + k * n];
                    F[p + k * n] = t;
                }
            double d = F[j + j * n];
            for (sla_int i = j + 1; i < n; i++) F[i + j * n] /= d;
            for (sla_int k = j + 1; k < n; k++) {
                double f = F[j + k * n];
                if (f == 0.0) continue;
                for (sla_int i = j + 1; i < n; i++) F[i + k * n] -= F[i + j * n] * f;
            }
        }
        return SLA_OK;
    }
    return SLA_OK;
}

/* A symmetric matrix with a nonpositive diagonal entry on any level (the
 * Galerkin operators P^T A P of an SPD matrix have positive diagonals) is
 * not positive definite: the symmetric cycle would not be a positive
 * definite preconditioner, and CG or MINRES with it broke down (NaN at the
 * first iteration on a shifted, indefinite Laplacian). Refused up front. */
static sla_status check_diag(sla_ctx *ctx, const saamg *g, const sa_level *L, int l)
{
    if (!g->symmetric) return SLA_OK;
    for (sla_int i = 0; i < L->n; i++)
        if (!(L->dinv[i] > 0.0))
            return sla__error(ctx, SLA_ERR_NOT_SPD,
                              "precond saamg: %s diagonal entry %g at row %lld%s: A is not positive "
                              "definite, and saamg needs an SPD matrix (use amg, ilu0/jacobi, or a "
                              "direct method)",
                              l ? "the coarse operator has a nonpositive" : "nonpositive", 1.0 / L->dinv[i],
                              (long long)i, l ? " of a coarse level" : "");
    return SLA_OK;
}

/* Level 0 is the caller's value array ib of A, read in place. */
static void set_fine(saamg *g, const sla_matrix *A, sla_int ib)
{
    sa_level *L0 = &g->lev[0];
    L0->n = A->nrows;
    L0->nnz = A->nnz;
    L0->rp = A->rowptr;
    L0->ci = A->colind;
    L0->f32 = A->dtype == SLA_F32;
    L0->val = L0->f32 ? (const void *)((const float *)A->values + ib * A->nnz)
                      : (const void *)((const double *)A->values + ib * A->nnz);
}

/* The whole hierarchy from the values of A_ib (g's levels empty). */
static sla_status build(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla__pc *pc)
{
    const sla_allocator *a = &pc->alloc;
    saamg *g = pc->fact;
    int nt = sla__threads(ctx);
    set_fine(g, A, ib);
    g->symmetric = is_symmetric(&g->lev[0], nt);
    g->nlev = 1;
    sla_status st = SLA_OK;
    int32_t *agg = NULL;
    for (int l = 0;; l++) {
        sa_level *L = &g->lev[l];
        sla_int nagg = 0;
        agg = sla__malloc(a, (size_t)(L->n > 0 ? L->n : 1), sizeof *agg);
        if (!agg) {
            st = nomem(ctx, l);
            goto out;
        }
        if (L->n <= SAAMG_COARSE || l == SAAMG_MAX_LEV - 1) {
            /* the coarsest level still needs 1/a_ii when it is only smoothed */
            if ((st = build_p(ctx, a, L, l, agg, false, &nagg)) || (st = check_diag(ctx, g, L, l)))
                goto out;
            sla__free(a, L->prp);
            sla__free(a, L->pci);
            sla__free(a, L->pval);
            L->prp = NULL;
            L->pci = NULL;
            L->pval = NULL;
            break;
        }
        if ((st = build_p(ctx, a, L, l, agg, g->reuse == 1, &nagg)) ||
            (st = check_diag(ctx, g, L, l)))
            goto out;
        sla__free(a, agg); /* the Galerkin product needs only P */
        agg = NULL;
        if (nagg == 0) {
            sla__free(a, L->prp);
            sla__free(a, L->pci);
            sla__free(a, L->pval);
            sla__free(a, L->agg);
            sla__free(a, L->strong);
            L->prp = NULL;
            L->pci = NULL;
            L->pval = NULL;
            L->agg = NULL;
            L->strong = NULL;
            break;
        }
        sa_level *C = &g->lev[l + 1];
        if ((st = galerkin(ctx, a, L, l, nagg, g->symmetric, nt, C))) goto out;
        g->nlev = l + 2;
        L->r = sla__malloc(a, (size_t)L->n, sizeof *L->r);
        C->x = sla__malloc(a, (size_t)C->n, sizeof *C->x);
        C->b = sla__malloc(a, (size_t)C->n, sizeof *C->b);
        if (!L->r || !C->x || !C->b) {
            st = nomem(ctx, l + 1);
            goto out;
        }
    }
    sa_level *Lc = &g->lev[g->nlev - 1];
    if (Lc->n <= SAAMG_DENSE_MAX && (st = factor_coarse(ctx, a, g, Lc))) goto out;
    if (g->reuse != 2) { /* the drift guard's reference */
        sla_int n = g->lev[0].n;
        g->d0 = sla__malloc(a, (size_t)(n > 0 ? n : 1), sizeof *g->d0);
        if (!g->d0) {
            st = nomem(ctx, 0);
            goto out;
        }
        for (sla_int i = 0; i < n; i++) g->d0[i] = (float)(1.0 / g->lev[0].dinv[i]);
    }
    pc->apply = saamg_apply;
out:
    sla__free(a, agg);
    return st;
}

/* New values on the same pattern with the hierarchy's patterns kept
 * (saamg_reuse = interpolation or full): level by level the diagonal and
 * its check, for full P re-smoothed on its pattern with the set-up's
 * aggregates and strong entries, the Galerkin product numerically on the
 * coarse pattern; then the coarse factor. */
static sla_status renumber(sla_ctx *ctx, sla__pc *pc, int nt, double *drift)
{
    const sla_allocator *a = &pc->alloc;
    saamg *g = pc->fact;
    sla_status st = SLA_OK;
    double *lv = NULL;
    *drift = 1.0;
    for (int l = 0; l < g->nlev; l++) {
        sa_level *L = &g->lev[l];
        if ((st = set_diag(ctx, a, L, l)) || (st = check_diag(ctx, g, L, l))) goto out;
        if (l == 0) { /* the drift guard: the largest factor a_ii moved by */
            double worst = 1.0;
            for (sla_int i = 0; i < L->n; i++) {
                double q = (double)g->d0[i] * L->dinv[i]; /* old / new */
                q = q >= 1.0 ? q : 1.0 / q;
                if (!(q <= worst)) worst = q;
            }
            *drift = worst;
            if (!(worst <= SAAMG_DRIFT)) goto out;
        }
        if (l == g->nlev - 1) break;
        if (g->reuse == 1) {
            sla_int maxlen = 1;
            for (sla_int i = 0; i < L->n; i++)
                if (L->prp[i + 1] - L->prp[i] > maxlen) maxlen = L->prp[i + 1] - L->prp[i];
            lv = sla__malloc(a, (size_t)maxlen, sizeof *lv);
            if (!lv) {
                st = nomem(ctx, l);
                goto out;
            }
            double th = SAAMG_THETA * ldexp(1.0, -l), th2 = th * th;
            smooth_p(L, L->agg, th2, L->strong, smoothing_weight(L, th2, L->strong), lv);
            sla__free(a, lv);
            lv = NULL;
        }
        if ((st = galerkin_numeric(ctx, a, L, l, g->symmetric, nt, &g->lev[l + 1]))) goto out;
    }
    if (g->dense) st = factor_coarse(ctx, a, g, &g->lev[g->nlev - 1]);
out:
    sla__free(a, lv);
    return st;
}

/* pc->refresh. A failed refresh leaves no hierarchy (the preconditioner
 * is the identity, as a failed re-creation leaves none) and the next
 * refresh rebuilds. */
static sla_status saamg_refresh(sla_ctx *ctx, sla__pc *pc, const sla_matrix *A, sla_int ib)
{
    saamg *g = pc->fact;
    int nt = sla__threads(ctx);
    sla_status st = SLA_OK;
    bool keep = g->reuse != 2 && !g->stale && g->nlev > 0;
    if (keep) {
        set_fine(g, A, ib);
        /* symmetry decides the coarse symmetrization and the factor: a change rebuilds */
        keep = is_symmetric(&g->lev[0], nt) == g->symmetric;
    }
    pc->apply = NULL;
    pc->note[0] = '\0';
    if (keep) {
        double drift = 1.0;
        st = renumber(ctx, pc, nt, &drift);
        if (st == SLA_OK && !(drift <= SAAMG_DRIFT)) {
            snprintf(pc->note, sizeof pc->note,
                     "saamg: refresh rebuilt the hierarchy (a diagonal entry moved by a factor %.3g "
                     "since the set-up)", drift);
            keep = false;
        } else if (st == SLA_OK) {
            pc->apply = saamg_apply;
        }
    }
    if (!keep && st == SLA_OK) {
        free_levels(&pc->alloc, g);
        st = build(ctx, A, ib, pc);
    }
    g->stale = st != SLA_OK;
    if (st != SLA_OK) {
        free_levels(&pc->alloc, g);
        pc->apply = NULL;
    }
    return st;
}

sla_status sla__saamg_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, int reuse, sla__pc *pc)
{
    const sla_allocator *a = &pc->alloc;
    if (A->nrows > INT32_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE,
                          "precond saamg: %lld rows exceed its 32-bit indices", (long long)A->nrows);
    saamg *g = sla__calloc(a, 1, sizeof *g);
    if (!g) return nomem(ctx, 0);
    pc->fact = g;
    pc->destroy = saamg_destroy;
    g->reuse = reuse;
    if (pthread_mutex_init(&g->lock, NULL) != 0)
        return sla__error(ctx, SLA_ERR_NOMEM, "precond saamg: cannot create a mutex");
    g->lock_ready = true;
    sla_status st = build(ctx, A, ib, pc);
    if (st == SLA_OK) pc->refresh = saamg_refresh;
    return st;
}
