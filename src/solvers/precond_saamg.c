/* Smoothed-aggregation AMG (precond=saamg): the preconditioner object, its
 * set-up and refresh drivers, and the V-cycle. sla's own, for problems too
 * large for hypre's copy of the matrix; the set-up's pieces are in
 * saamg_aggregate.c (strength, aggregation, smoothed prolongator) and
 * saamg_coarse.c (Galerkin products, dense coarsest factor), the
 * polynomial smoothers in saamg_smooth.c, the shared structures in
 * saamg.h.
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
 *  - strength of connection, greedy aggregation in three phases and the
 *    smoothed prolongator P = (I - omega D_F^-1 A_F) P0 (saamg_aggregate.c,
 *    whose header gives the details);
 *  - Galerkin A_c = P^T A P, accumulated in double and stored in float32,
 *    exactly symmetrized when A is exactly symmetric (saamg_coarse.c);
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
 * 2 threads. Residuals, restriction, interpolation and the Galerkin
 * product are threaded too; aggregation and the prolongator are serial.
 * The pre-smoothing sweep starts from x = 0, so it reads only the strictly
 * lower entries (of its block) and writes x without a zeroing pass; the
 * residual after it needs only the entries the sweep did not use (b_i -
 * the lower part - a_ii x_i = 0 up to rounding), so sweep + residual read
 * A once instead of twice, and serially the restriction P^T r is summed
 * in the same pass (r never stored). Profile before (perf, 1 thread, the
 * cycle's share): 2D Poisson 1e6 fine-level sweeps 43 %, residuals 24 %,
 * coarse-level sweeps 11 %, prolongation 9 %, restriction + coarse solve
 * 10 %, zeroing 3 %; the change left every test_saamg iteration count
 * as it was, and took the process CPU per CG iteration (1 thread,
 * interleaved runs) from 54-55 to 49 ms (2D Poisson 1e6) and from 80-82
 * to 72-73 ms (3D Poisson 1e6). Serially the prolongation also runs
 * inside the backward sweep (x += P xc just ahead of the rows that read
 * it; bitwise the same result): 2D 49 -> 46 ms, 3D 70-73 -> 70 ms.
 * The Gauss-Seidel cycle stores no fine-level vector, with threads
 * either (sa_hyb): each block sums its residual into b_c = P^T r as it
 * forms it, straight into b_c at the coarse rows only its own P rows
 * reach and into an accumulator of its own at those that other blocks'
 * rows reach too (found by a rank over a bitmap), added in block order
 * after (deterministic for a thread count); the backward sweep reads the
 * x outside its block from a list of those columns, filled (with the
 * correction P xc, the same sums as the owner's) before the sweeps, and
 * prolongates its own rows inside its sweep as the serial pass does.
 * Before, r_0 was formed by blocks, restricted by a serial scatter, and
 * all of x copied into it for the backward sweep. The lists are made at
 * the first apply with a thread count (2D Poisson 1e6, 2 blocks: the
 * 1000 columns on each side of the cut, a few hundred shared coarse
 * rows); an ordering without locality whose lists would hold more than
 * n doubles falls back to that copy of x (test_saamg: a randomly
 * permuted Poisson). Measured quietly (2026-12-04, CG rtol 1e-8, b = 1,
 * ms per iteration, main's build interleaved): 2 threads wall 2D Poisson
 * 1e6 20.3 -> 15.3, diffusion 1e6 (random kappa) 34.3 -> 24.5, 3D 1e6
 * 38.6 -> 33.5 (2 threads over 1 thread: 1.88x, 1.94x, 1.63x); 1 thread
 * CPU 29.1 -> 28.7, 48.3 -> 47.6, 56.3 -> 54.7; the same iterations.
 * Other smoothers (saamg_smoother, saamg_smooth.c): cheby, Chebyshev degree 2 in D^-1 A on
 * [lmax/30, lmax] (lmax: power iterations at the set-up, capped by the
 * Gershgorin bound), and spai0, x += M (b - A x) with M = diag(a_ii /
 * sum_j a_ij^2); both are polynomials in A times fixed diagonals, the same
 * before and after the coarse correction, so the cycle stays symmetric,
 * and have no sequential dependence (no hybrid blocks: any thread count
 * gives the same result). Measured at 1 thread (bench_amg, process CPU):
 * 2D Poisson 1e6 gs 16 iterations 0.76 s, cheby 18 / 1.31 s, spai0 19 /
 * 0.84 s; 3D gs 15 / 1.05 s, cheby 17 / 1.79 s, spai0 17 / 1.08 s: gs
 * stays the default.
 *
 * Memory (2D Poisson, Gauss-Seidel): P 2.5 entries per fine row at 8
 * bytes + 32-bit row pointers (24 B), the drift guard's a_ii in bfloat16
 * (2 B), the coarse levels (n/6 rows at 9 entries on level 1, then ~1/9
 * per level) ~20 B and their x and b (3 B): ~49 B per unknown beside the
 * matrix; with CG's 3 vectors, b, x and a float64 matrix (68 B) the solve
 * holds ~157 B per unknown, measured 162 with the process's code and
 * libraries (173 on the brk heap the HYPRE-linked library gets, whose
 * holes the set-up leaves; bench/SAAMG_RESULTS.md, "Memory of the solve
 * path"). No 1/a_ii is stored: the sweeps take s * (1 / a_ii) from the
 * diagonal entry they read anyway, the same rounding as a stored 1/a_ii
 * (8 B per row; the fused pre-smoothing + residual needs it in float64,
 * its rows' residual being zero to rounding), and 1 thread per CG
 * iteration is as fast (the division does not depend on x). The set-up's
 * transients (aggregate map, strength flags, transpose of P, the Galerkin
 * product's scratch) are freed before the next level's arrays, P^T and
 * the scratch before the coarse operator is allocated.
 *
 * Thread safety: the levels' work vectors and the hybrid blocks' lists
 * serve one apply at a time (a mutex, try-locked); an apply that finds
 * them busy, or one with z == r, allocates private ones for the call
 * (the coarse levels' x and b, and with threads its own lists), so
 * concurrent applies of one preconditioner are safe and give the same
 * results.
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
#include "saamg.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ---- kernels --------------------------------------------------------------- */

/* One hybrid Gauss-Seidel block: rows [lo, hi), and the x it reads
 * outside them, from before the sweep: at the sorted columns hj (nh of
 * them) the values hx, or all of x in full (n entries; NULL when the
 * block reads its own rows only, as a serial sweep does). */
typedef struct sa_halo {
    sla_int lo, hi, nh;
    const int32_t *hj;
    double *hx;
    const double *full;
} sa_halo;

/* Level l's hybrid blocks for one thread count (levels of at least
 * SLA_PAR_MIN rows that have a P), and what the threaded restriction
 * needs: the coarse rows that the P rows of more than one block reach
 * (bitmap sbit, sorted list sj of ns), where each block sums into its own
 * acc (ns entries per block) and the sums are added in block order; every
 * other coarse row is written by one block only. full (n; only when the
 * lists would take more than n doubles): r stored and restricted
 * serially, then the copy of x, as the sweeps did before the lists. */
typedef struct sa_hyb {
    sa_halo *h; /* nt blocks, NULL: the level runs serially */
    int32_t *hj;
    double *hx, *full;
    uint64_t *sbit;
    int32_t *srank; /* per word of sbit: the set bits before it (c's place in sj) */
    int32_t *sj;
    sla_int ns;
    double *acc;
} sa_hyb;

struct sa_split {
    int nt;
    sa_hyb lev[SAAMG_MAX_LEV];
};

/* The position of j in the sorted a[0..n) (j is there). */
static inline sla_int find_sorted(const int32_t *a, sla_int n, sla_int j)
{
    sla_int lo = 0, hi = n - 1;
    while (lo < hi) {
        sla_int m = lo + (hi - lo) / 2;
        if (a[m] < j) lo = m + 1;
        else hi = m;
    }
    return lo;
}

static inline int pop64(uint64_t u)
{
#if defined(__GNUC__)
    return __builtin_popcountll(u);
#else
    int c = 0;
    for (; u; u &= u - 1) c++;
    return c;
#endif
}

/* x_j outside the block (from before the sweep) */
static inline double halo_x(const sa_halo *H, sla_int j)
{
    return H->full ? H->full[j] : H->hx[find_sorted(H->hj, H->nh, j)];
}

/* bc_c += t, or the block's acc at c when other blocks' P rows reach c
 * too (H has sbit) */
static inline void restrict_add(const sa_hyb *H, double *acc, double *bc, sla_int c, double t)
{
    uint64_t w = H->sbit[c >> 6], m = (uint64_t)1 << (c & 63);
    if (w & m) acc[H->srank[c >> 6] + pop64(w & (m - 1))] += t;
    else bc[c] += t;
}

#define SA_KERNELS(T, S)                                                                      \
    /* s - sum_k a_ik x_k over row i's entries [k, e) in their order, and  \
     * *d = a_ii (columns sorted: the diagonal is where the lower part     \
     * ends; every row has one). x_i = x_i + s / a_ii is taken as s * (1 / \
     * a_ii), the same rounding as a stored 1 / a_ii; the division does    \
     * not depend on x, so it overlaps the row's products. */              \
    static inline double row_gs_##S(sla_int k, sla_int e, const int32_t *ci, const T *v,    \
                                    const double *x, sla_int i, double s, double *d)          \
    {                                                                                         \
        for (; k < e && ci[k] < i; k++) s -= (double)v[k] * x[ci[k]];                         \
        double a = (double)v[k];                                                              \
        s -= a * x[i];                                                                        \
        for (k++; k < e; k++) s -= (double)v[k] * x[ci[k]];                                   \
        *d = a;                                                                               \
        return s;                                                                             \
    }                                                                                         \
    /* The forward sweep from x = 0 on rows [lo, hi): only the block's    \
     * strictly lower entries meet a nonzero x (columns sorted; the other  \
     * blocks' x counts as zero), and x is written, not updated (no        \
     * zeroing pass before). */                                            \
    static void gs0_blk_##S(const sa_level *L, const T *v, const double *b, double *x,       \
                            sla_int lo, sla_int hi)                                           \
    {                                                                                         \
        const sla_int *rp = L->rp;                                                            \
        const int32_t *ci = L->ci;                                                            \
        for (sla_int i = lo; i < hi; i++) {                                                   \
            double s = b[i];                                                                  \
            sla_int k = rp[i], e = rp[i + 1];                                                 \
            while (k < e && ci[k] < lo) k++;                                                  \
            for (; k < e && ci[k] < i; k++) s -= (double)v[k] * x[ci[k]];                     \
            x[i] = s * (1.0 / (double)v[k]); /* k: the diagonal */                            \
        }                                                                                     \
    }                                                                                         \
    /* r = b - A x right after gs0 on the same blocks: row i's entries     \
     * that the sweep already subtracted (the block's columns lo..i) give  \
     * b_i - a_ii x_i = 0 up to rounding, so r_i is minus the sum over the \
     * rest (the block's upper part and the other blocks' columns, with    \
     * the swept x): one pass over A for smoothing and residual together.  \
     * r NULL: bc += P^T r in the same pass (r never stored), the coarse   \
     * rows shared with other blocks (H) into acc. */                      \
    /* (mode 0: r stored; 1: bc only; 2: bc and acc) */                    \
    static inline void resid0_rows_##S(const sa_level *L, const T *v, const double *x,       \
                                       double *r, double *bc, const sa_hyb *H, double *acc,   \
                                       sla_int lo, sla_int hi, int mode)                      \
    {                                                                                         \
        const sla_int *rp = L->rp;                                                            \
        const int32_t *ci = L->ci, *prp = L->prp, *pci = L->pci;                              \
        const sa_real *pv = L->pval;                                                          \
        for (sla_int i = lo; i < hi; i++) {                                                   \
            double s = 0.0;                                                                   \
            sla_int k = rp[i], e = rp[i + 1];                                                 \
            for (; k < e && ci[k] < lo; k++) s -= (double)v[k] * x[ci[k]];                    \
            while (k < e && ci[k] <= i) k++;                                                  \
            for (; k < e; k++) s -= (double)v[k] * x[ci[k]];                                  \
            if (mode == 0)                                                                    \
                r[i] = s;                                                                     \
            else if (mode == 1)                                                               \
                for (sla_int q = prp[i]; q < prp[i + 1]; q++) bc[pci[q]] += (double)pv[q] * s; \
            else                                                                              \
                for (sla_int q = prp[i]; q < prp[i + 1]; q++)                                 \
                    restrict_add(H, acc, bc, pci[q], (double)pv[q] * s);                      \
        }                                                                                     \
    }                                                                                         \
    static void resid0_blk_##S(const sa_level *L, const T *v, const double *x, double *r,   \
                               double *bc, const sa_hyb *H, double *acc, sla_int lo,          \
                               sla_int hi)                                                    \
    {                                                                                         \
        if (r) resid0_rows_##S(L, v, x, r, bc, H, acc, lo, hi, 0);                            \
        else if (!H || !H->sbit) resid0_rows_##S(L, v, x, r, bc, H, acc, lo, hi, 1);          \
        else resid0_rows_##S(L, v, x, r, bc, H, acc, lo, hi, 2);                              \
    }                                                                                         \
    /* The backward sweep on the block's rows, x outside them from H; xc  \
     * != NULL: x += P xc in the same pass. Row i reads x from its first   \
     * column up, so the correction runs ahead of the sweep down to that   \
     * column (p: rows >= p corrected; H's x is corrected already): the    \
     * same operations in the same order as prolong, then the sweep. */    \
    static inline void gsb_rows_##S(const sa_level *L, const T *v, const double *b, double *x, \
                                    const double *xc, const sa_halo *H, bool out)             \
    {                                                                                         \
        const sla_int *rp = L->rp;                                                            \
        const int32_t *ci = L->ci, *prp = L->prp, *pci = L->pci;                              \
        const sa_real *pv = L->pval;                                                          \
        sla_int lo = H->lo, hi = H->hi, p = xc ? hi : lo;                                     \
        for (sla_int i = hi - 1; i >= lo; i--) {                                              \
            sla_int k = rp[i], e = rp[i + 1];                                                 \
            for (sla_int first = ci[k] < i ? (ci[k] > lo ? ci[k] : lo) : i; p > first; p--) { \
                double c = 0.0;                                                               \
                for (sla_int q = prp[p - 1]; q < prp[p]; q++) c += (double)pv[q] * xc[pci[q]]; \
                x[p - 1] += c;                                                                \
            }                                                                                 \
            double s = b[i], d = 0.0;                                                         \
            if (!out || (ci[k] >= lo && ci[e - 1] < hi))                                      \
                s = row_gs_##S(k, e, ci, v, x, i, s, &d);                                     \
            else                                                                              \
                for (; k < e; k++) {                                                          \
                    sla_int j = ci[k];                                                        \
                    if (j == i) d = (double)v[k];                                             \
                    s -= (double)v[k] * (j >= lo && j < hi ? x[j] : halo_x(H, j));            \
                }                                                                             \
            x[i] += s * (1.0 / d);                                                            \
        }                                                                                     \
    }                                                                                         \
    /* (a block that reads no x outside itself, as a serial sweep: the    \
     * rows without the test) */                                           \
    static void gsb_blk_##S(const sa_level *L, const T *v, const double *b, double *x,       \
                            const double *xc, const sa_halo *H)                               \
    {                                                                                         \
        if (!H->full && H->nh == 0) gsb_rows_##S(L, v, b, x, xc, H, false);                   \
        else gsb_rows_##S(L, v, b, x, xc, H, true);                                           \
    }

SA_KERNELS(double, d)
SA_KERNELS(float, f)

/* x = 0, then one forward sweep on rows [lo, hi) (gs0) */
static void gs0_blk(const sa_level *L, const double *b, double *x, sla_int lo, sla_int hi)
{
    if (L->f32) gs0_blk_f(L, L->val, b, x, lo, hi);
    else gs0_blk_d(L, L->val, b, x, lo, hi);
}

static void gsb_blk(const sa_level *L, const double *b, double *x, const double *xc, const sa_halo *H)
{
    if (L->f32) gsb_blk_f(L, L->val, b, x, xc, H);
    else gsb_blk_d(L, L->val, b, x, xc, H);
}

static void resid0_blk(const sa_level *L, const double *x, double *r, double *bc, const sa_hyb *H,
                       double *acc, sla_int lo, sla_int hi)
{
    if (L->f32) resid0_blk_f(L, L->val, x, r, bc, H, acc, lo, hi);
    else resid0_blk_d(L, L->val, x, r, bc, H, acc, lo, hi);
}

/* bc = P^T r (scatter, serial). */
void sla__saamg_restrict(const sa_level *L, sla_int nc, const double *r, double *bc)
{
    memset(bc, 0, (size_t)nc * sizeof *bc);
    for (sla_int i = 0; i < L->n; i++) {
        double ri = r[i];
        for (sla_int k = L->prp[i]; k < L->prp[i + 1]; k++) bc[L->pci[k]] += (double)L->pval[k] * ri;
    }
}

/* Pre-smoothing from x = 0 (one forward sweep) and the restriction bc =
 * P^T (b - A x). Serially (H NULL) two passes over A, r never stored.
 * Hybrid (H): the blocks' sweeps, then per block the residual summed
 * into bc (the coarse rows only this block reaches) and into the block's
 * acc (the shared ones), then the accs added in block order: the same
 * with any number of OpenMP threads for a given block count. */
static void presmooth_restrict(const sa_level *L, const sa_hyb *H, const double *b, double *x,
                               sla_int nc, double *bc, int nt)
{
    sla_int n = L->n;
    if (!H) {
        memset(bc, 0, (size_t)nc * sizeof *bc);
        gs0_blk(L, b, x, 0, n);
        resid0_blk(L, x, NULL, bc, NULL, NULL, 0, n);
        return;
    }
    sla_int ns = H->ns;
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static)
        for (sla_int c = 0; c < nc; c++) bc[c] = 0.0;
#pragma omp for schedule(static, 1)
        for (int t = 0; t < nt; t++) gs0_blk(L, b, x, H->h[t].lo, H->h[t].hi);
#pragma omp for schedule(static, 1)
        for (int t = 0; t < nt; t++) {
            double *acc = H->acc ? H->acc + (size_t)t * ns : NULL;
            for (sla_int s = 0; s < ns; s++) acc[s] = 0.0;
            resid0_blk(L, x, H->full, bc, H, acc, H->h[t].lo, H->h[t].hi);
        }
#pragma omp for schedule(static)
        for (sla_int s = 0; s < ns; s++) {
            double v = 0.0;
            for (int t = 0; t < nt; t++) v += H->acc[(size_t)t * ns + s];
            bc[H->sj[s]] = v;
        }
    }
    if (H->full) sla__saamg_restrict(L, nc, H->full, bc);
}

/* x += P xc; xcopy != NULL: also xcopy = the new x (the same pass). */
static void prolong(const sa_level *L, const double *xc, double *x, double *xcopy, int nt)
{
    sla_int n = L->n;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        double s = 0.0;
        for (sla_int k = L->prp[i]; k < L->prp[i + 1]; k++) s += (double)L->pval[k] * xc[L->pci[k]];
        x[i] += s;
        if (xcopy) xcopy[i] = x[i];
    }
}

/* x += P xc and the backward sweep. Serially one pass. Hybrid: first each
 * block's outside x, corrected (the same sums as its owner's), into its
 * list; then the blocks' passes. With full: prolong with the copy, then
 * the blocks' sweeps. */
static void prolong_smooth(const sa_level *L, const sa_hyb *H, const double *b, double *x,
                           const double *xc, int nt)
{
    if (!H) {
        sa_halo whole = {0, L->n, 0, NULL, NULL, NULL};
        gsb_blk(L, b, x, xc, &whole);
        return;
    }
    if (H->full) prolong(L, xc, x, H->full, nt);
    const double *xcb = H->full ? NULL : xc;
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static, 1)
        for (int t = 0; t < nt; t++) {
            const sa_halo *B = &H->h[t];
            for (sla_int s = 0; s < B->nh && !H->full; s++) {
                sla_int j = B->hj[s];
                double c = 0.0;
                for (sla_int q = L->prp[j]; q < L->prp[j + 1]; q++) c += (double)L->pval[q] * xc[L->pci[q]];
                B->hx[s] = x[j] + c;
            }
        }
#pragma omp for schedule(static, 1)
        for (int t = 0; t < nt; t++) gsb_blk(L, b, x, xcb, &H->h[t]);
    }
}

static void coarse_solve(const saamg *g, const sa_level *L, const double *b, double *x)
{
    sla_int n = L->n;
    if (!g->dense) { /* one symmetric Gauss-Seidel sweep from x = 0 */
        sa_halo whole = {0, n, 0, NULL, NULL, NULL};
        gs0_blk(L, b, x, 0, n);
        gsb_blk(L, b, x, NULL, &whole);
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

/* ---- hybrid blocks for a thread count ------------------------------------------ */

static void hyb_free(const sla_allocator *a, sa_hyb *H)
{
    sla__free(a, H->h);
    sla__free(a, H->hj);
    sla__free(a, H->hx);
    sla__free(a, H->full);
    sla__free(a, H->sbit);
    sla__free(a, H->srank);
    sla__free(a, H->sj);
    sla__free(a, H->acc);
    memset(H, 0, sizeof *H);
}

static void split_free(const sla_allocator *a, struct sa_split **sp)
{
    if (!*sp) return;
    for (int l = 0; l < SAAMG_MAX_LEV; l++) hyb_free(a, &(*sp)->lev[l]);
    sla__free(a, *sp);
    *sp = NULL;
}

static sla_int bits_count(const uint64_t *w, size_t nw)
{
    sla_int c = 0;
    for (size_t i = 0; i < nw; i++)
        for (uint64_t u = w[i]; u; u &= u - 1) c++;
    return c;
}

/* The set bits of w, ascending, into out. */
static void bits_list(const uint64_t *w, size_t nw, int32_t *out)
{
    sla_int m = 0;
    for (size_t i = 0; i < nw; i++)
        for (uint64_t u = w[i]; u; u &= u - 1) {
            int b = 0;
            while (!(u >> b & 1u)) b++;
            out[m++] = (int32_t)(i * 64 + (size_t)b);
        }
}

/* Level L's nt blocks (rows n t / nt ..), the columns each reads outside
 * itself and the coarse rows shared between blocks, from per-block
 * bitmaps over the rows and the coarse rows (transient, nt (n + nc) / 8
 * bytes). The lists take (12 nh + (4 + 8 nt) ns + nc / 8) bytes; when
 * that is more than 8 n (orderings without locality), one vector of n
 * instead (full). */
static sla_status hyb_build(const sla_allocator *a, const sa_level *L, sla_int nc, int nt, sa_hyb *H)
{
    sla_int n = L->n;
    size_t wn = ((size_t)n + 63) / 64, wc = ((size_t)nc + 63) / 64, per = wn + wc;
    uint64_t *bits = sla__calloc(a, (size_t)nt * per + wc, sizeof *bits);
    sla_int *nh = sla__calloc(a, (size_t)nt, sizeof *nh);
    H->h = sla__calloc(a, (size_t)nt, sizeof *H->h);
    H->sbit = sla__calloc(a, wc > 0 ? wc : 1, sizeof *H->sbit);
    sla_status st = SLA_ERR_NOMEM;
    if (!bits || !nh || !H->h || !H->sbit) goto out;
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; t++) {
        sla_int lo = n * t / nt, hi = n * (t + 1) / nt;
        uint64_t *hb = bits + (size_t)t * per, *cb = hb + wn;
        for (sla_int i = lo; i < hi; i++) {
            sla_int k = L->rp[i], e = L->rp[i + 1];
            if (k < e && (L->ci[k] < lo || L->ci[e - 1] >= hi))
                for (; k < e; k++) {
                    sla_int j = L->ci[k];
                    if (j < lo || j >= hi) hb[j >> 6] |= (uint64_t)1 << (j & 63);
                }
            for (sla_int q = L->prp[i]; q < L->prp[i + 1]; q++)
                cb[L->pci[q] >> 6] |= (uint64_t)1 << (L->pci[q] & 63);
        }
        nh[t] = bits_count(hb, wn);
        H->h[t] = (sa_halo){lo, hi, 0, NULL, NULL, NULL};
    }
    uint64_t *once = bits + (size_t)nt * per;
    for (int t = 0; t < nt; t++) { /* shared: reached by two blocks or more */
        const uint64_t *cb = bits + (size_t)t * per + wn;
        for (size_t i = 0; i < wc; i++) {
            H->sbit[i] |= once[i] & cb[i];
            once[i] |= cb[i];
        }
    }
    H->ns = bits_count(H->sbit, wc);
    double tot = (4.0 + 8.0 * nt) * (double)H->ns + 12.0 * (double)wc;
    for (int t = 0; t < nt; t++) tot += 12.0 * (double)nh[t];
    if (tot > 8.0 * (double)n) {
        sla__free(a, H->sbit);
        H->sbit = NULL;
        H->ns = 0;
        H->full = sla__malloc(a, (size_t)n, sizeof *H->full);
        if (!H->full) goto out;
        for (int t = 0; t < nt; t++) H->h[t].full = H->full;
        st = SLA_OK;
        goto out;
    }
    size_t sum = 0;
    for (int t = 0; t < nt; t++) sum += (size_t)nh[t];
    H->hj = sla__malloc(a, sum > 0 ? sum : 1, sizeof *H->hj);
    H->hx = sla__malloc(a, sum > 0 ? sum : 1, sizeof *H->hx);
    H->sj = sla__malloc(a, H->ns > 0 ? (size_t)H->ns : 1, sizeof *H->sj);
    H->acc = sla__malloc(a, H->ns > 0 ? (size_t)H->ns * (size_t)nt : 1, sizeof *H->acc);
    H->srank = sla__malloc(a, wc > 0 ? wc : 1, sizeof *H->srank);
    if (!H->hj || !H->hx || !H->sj || !H->acc || !H->srank) goto out;
    bits_list(H->sbit, wc, H->sj);
    for (size_t i = 0, r = 0; i < wc; i++) {
        H->srank[i] = (int32_t)r;
        r += (size_t)pop64(H->sbit[i]);
    }
    size_t at = 0;
    for (int t = 0; t < nt; t++) {
        H->h[t].nh = nh[t];
        H->h[t].hj = H->hj + at;
        H->h[t].hx = H->hx + at;
        bits_list(bits + (size_t)t * per, wn, H->hj + at);
        at += (size_t)nh[t];
    }
    st = SLA_OK;
out:
    sla__free(a, bits);
    sla__free(a, nh);
    if (st != SLA_OK) hyb_free(a, H);
    return st;
}

/* The hybrid blocks of every large level for nt threads (Gauss-Seidel
 * smoother), or NULL with *sp when no level is large. */
static sla_status split_build(const sla_allocator *a, const saamg *g, int nt, struct sa_split **sp)
{
    *sp = NULL;
    if (nt <= 1 || g->nlev < 2 || g->lev[0].n < SLA_PAR_MIN) return SLA_OK;
    struct sa_split *s = sla__calloc(a, 1, sizeof *s);
    if (!s) return SLA_ERR_NOMEM;
    s->nt = nt;
    for (int l = 0; l < g->nlev - 1; l++)
        if (g->lev[l].n >= SLA_PAR_MIN && hyb_build(a, &g->lev[l], g->lev[l + 1].n, nt, &s->lev[l])) {
            split_free(a, &s);
            return SLA_ERR_NOMEM;
        }
    *sp = s;
    return SLA_OK;
}

/* ---- the cycle ----------------------------------------------------------------- */

/* The cycle's work vectors: x[l] and b[l] (levels 1..nlev-1); cheby and
 * spai0 also r[l] (levels 0..nlev-2), cheby d[l]. */
typedef struct sa_work {
    double *r[SAAMG_MAX_LEV], *x[SAAMG_MAX_LEV], *b[SAAMG_MAX_LEV];
    double *d[SAAMG_MAX_LEV];
    const struct sa_split *sp; /* gs with threads: the hybrid blocks, NULL: serial */
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
    if (g->smoother == 1) {
        sla__saamg_cheby(L, b, x, r, w->d[l], true, w->b[l + 1], C->n, nt);
        cycle(g, w, l + 1, w->b[l + 1], w->x[l + 1], nt);
        prolong(L, w->x[l + 1], x, NULL, nt);
        sla__saamg_cheby(L, b, x, r, w->d[l], false, NULL, 0, nt);
        return;
    }
    if (g->smoother == 2) {
        sla__saamg_spai0(L, b, x, r, true, w->b[l + 1], C->n, nt);
        cycle(g, w, l + 1, w->b[l + 1], w->x[l + 1], nt);
        prolong(L, w->x[l + 1], x, NULL, nt);
        sla__saamg_spai0(L, b, x, r, false, NULL, 0, nt);
        return;
    }
    const sa_hyb *H = w->sp && w->sp->lev[l].h ? &w->sp->lev[l] : NULL;
    int ntl = H ? w->sp->nt : 1;
    presmooth_restrict(L, H, b, x, C->n, w->b[l + 1], ntl);
    cycle(g, w, l + 1, w->b[l + 1], w->x[l + 1], nt);
    prolong_smooth(L, H, b, x, w->x[l + 1], ntl);
}

/* The cycle's work vectors, each level its own: x_l and b_l on levels
 * 1.. (3 B per fine unknown on 2D Poisson); cheby and spai0 also r_l on
 * levels 0..nlev-2 (their set-up works in it). The Gauss-Seidel cycle
 * needs no fine-level vector: the residual is restricted as it is
 * formed, and the hybrid sweeps' outside x comes in small lists made at
 * the first apply with a thread count (g->split). false: out of memory. */
static bool alloc_work(const sla_allocator *a, saamg *g)
{
    for (int l = 0; l < g->nlev && g->nlev > 1; l++) {
        sa_level *L = &g->lev[l];
        bool r = g->smoother != 0 && l < g->nlev - 1;
        if (r && !L->r && !(L->r = sla__malloc(a, (size_t)L->n, sizeof *L->r))) return false;
        if (l == 0) continue;
        if (!L->x) L->x = sla__malloc(a, (size_t)L->n, sizeof *L->x);
        if (!L->b) L->b = sla__malloc(a, (size_t)L->n, sizeof *L->b);
        if (!L->x || !L->b) return false;
    }
    return true;
}

/* One apply. The levels' own work vectors serve one apply at a time; a
 * concurrent apply (batched solves run columns on several threads with
 * one preconditioner) gets private ones for the call, as does z == r
 * (and, with nt > 1, its own hybrid blocks). */
static sla_status saamg_apply(const sla__pc *pc, bool transpose, const double *r, double *z,
                              int nt)
{
    saamg *g = pc->fact;
    if (transpose && !g->symmetric) return SLA_ERR_UNSUPPORTED;
    sa_work w;
    memset(&w, 0, sizeof w);
    double *block = NULL;
    struct sa_split *mine = NULL;
    bool gs = g->smoother == 0, own = r != z && pthread_mutex_trylock(&g->lock) == 0;
    if (own) {
        if (gs && nt > 1 && (!g->split || g->split->nt != nt)) {
            split_free(&pc->alloc, &g->split);
            if (split_build(&pc->alloc, g, nt, &g->split)) {
                pthread_mutex_unlock(&g->lock);
                return SLA_ERR_NOMEM;
            }
        }
        w.sp = gs && nt > 1 ? g->split : NULL;
        for (int l = 0; l < g->nlev; l++) {
            w.r[l] = g->lev[l].r;
            w.x[l] = g->lev[l].x;
            w.b[l] = g->lev[l].b;
            w.d[l] = g->lev[l].wd;
        }
    } else {
        size_t total = r == z ? (size_t)g->lev[0].n : 0;
        for (int l = 0; l < g->nlev; l++)
            total += (size_t)g->lev[l].n * ((l > 0 ? 2 : 0) + (!gs && l < g->nlev - 1) +
                                            (g->smoother == 1 && l < g->nlev - 1));
        block = sla__malloc(&pc->alloc, total > 0 ? total : 1, sizeof *block);
        if (!block || (gs && split_build(&pc->alloc, g, nt, &mine))) {
            sla__free(&pc->alloc, block);
            return SLA_ERR_NOMEM;
        }
        w.sp = mine;
        double *p = block;
        if (r == z) {
            sla__copy(g->lev[0].n, r, p);
            r = p;
            p += g->lev[0].n;
        }
        for (int l = 0; l < g->nlev; l++) {
            sla_int n = g->lev[l].n;
            if (l < g->nlev - 1 && !gs) w.r[l] = p, p += n;
            if (l < g->nlev - 1 && g->smoother == 1) w.d[l] = p, p += n;
            if (l > 0) w.x[l] = p, p += n, w.b[l] = p, p += n;
        }
    }
    cycle(g, &w, 0, r, z, nt);
    if (own) pthread_mutex_unlock(&g->lock);
    split_free(&pc->alloc, &mine);
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
        sla__free(a, L->sm);
        sla__free(a, L->wd);
        memset(L, 0, sizeof *L);
    }
    sla__free(a, g->dense);
    sla__free(a, g->piv);
    sla__free(a, g->d0);
    split_free(a, &g->split);
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

sla_status sla__saamg_nomem(sla_ctx *ctx, int l)
{
    return sla__error(ctx, SLA_ERR_NOMEM, "precond saamg: out of memory building level %d", l);
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

/* The drift guard's reference: level 0's a_ii at the set-up in bfloat16
 * (the float's top 16 bits, rounded to nearest: within 2^-9 relative,
 * far inside the guard's factor SAAMG_DRIFT; 2 B per unknown, taken at
 * the set-up because dinv does not outlive it). */
static uint16_t d0_pack(double a)
{
    float f = (float)a;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u); /* a_ii finite: no NaN to keep */
    return (uint16_t)(u >> 16);
}

static double d0_value(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return (double)f;
}

static sla_status take_d0(sla_ctx *ctx, const sla_allocator *a, saamg *g)
{
    sla_int n = g->lev[0].n;
    if (!g->d0) g->d0 = sla__malloc(a, (size_t)(n > 0 ? n : 1), sizeof *g->d0);
    if (!g->d0) return sla__saamg_nomem(ctx, 0);
    for (sla_int i = 0; i < n; i++) g->d0[i] = d0_pack(1.0 / g->lev[0].dinv[i]);
    return SLA_OK;
}

/* With the Gauss-Seidel smoother the cycle takes 1 / a_ii from A's
 * diagonal as it sweeps, so the set-up's dinv is freed (8 B per row of
 * every level); cheby and spai0 keep it. A refresh rebuilds it for its
 * checks and frees it again. */
static void drop_dinv(const sla_allocator *a, saamg *g)
{
    if (g->smoother != 0) return;
    for (int l = 0; l < g->nlev; l++) {
        sla__free(a, g->lev[l].dinv);
        g->lev[l].dinv = NULL;
    }
}

/* Level l's P is built: level 0's a_ii for the drift guard (saamg_reuse
 * != none), and with gs its 1 / a_ii freed at once, so that the
 * Galerkin product's transients can take its place (2D Poisson 4e6, 1
 * thread, brk heap: the set-up's peak 640 -> 617 MiB). */
static sla_status level_done(sla_ctx *ctx, const sla_allocator *a, saamg *g, int l)
{
    if (l == 0 && g->reuse != 2) {
        sla_status st = take_d0(ctx, a, g);
        if (st) return st;
    }
    if (g->smoother == 0) {
        sla__free(a, g->lev[l].dinv);
        g->lev[l].dinv = NULL;
    }
    return SLA_OK;
}

/* The whole hierarchy from the values of A_ib (g's levels empty). */
static sla_status build(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla__pc *pc)
{
    const sla_allocator *a = &pc->alloc;
    saamg *g = pc->fact;
    int nt = sla__threads(ctx);
    set_fine(g, A, ib);
    g->lev[0].theta = g->theta0;
    g->symmetric = is_symmetric(&g->lev[0], nt);
    g->nlev = 1;
    sla_status st = SLA_OK;
    int32_t *agg = NULL;
    for (int l = 0;; l++) {
        sa_level *L = &g->lev[l];
        sla_int nagg = 0;
        agg = sla__malloc(a, (size_t)(L->n > 0 ? L->n : 1), sizeof *agg);
        if (!agg) {
            st = sla__saamg_nomem(ctx, l);
            goto out;
        }
        if (L->n <= SAAMG_COARSE || l == SAAMG_MAX_LEV - 1) {
            if ((st = sla__saamg_build_p(ctx, a, L, l, agg, false, nt, &nagg)) || (st = check_diag(ctx, g, L, l)) ||
                (st = level_done(ctx, a, g, l)))
                goto out;
            sla__free(a, L->prp);
            sla__free(a, L->pci);
            sla__free(a, L->pval);
            L->prp = NULL;
            L->pci = NULL;
            L->pval = NULL;
            break;
        }
        if ((st = sla__saamg_build_p(ctx, a, L, l, agg, g->reuse == 1, nt, &nagg)) ||
            (st = check_diag(ctx, g, L, l)) || (st = level_done(ctx, a, g, l)))
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
        if ((st = sla__saamg_galerkin(ctx, a, L, l, nagg, g->symmetric, nt, C))) goto out;
        g->nlev = l + 2;
    }
    if (!alloc_work(a, g)) {
        st = sla__saamg_nomem(ctx, g->nlev - 1);
        goto out;
    }
    sa_level *Lc = &g->lev[g->nlev - 1];
    if (Lc->n <= SAAMG_DENSE_MAX && (st = sla__saamg_factor_coarse(ctx, a, g, Lc))) goto out;
    if ((st = sla__saamg_smoother_setup(ctx, a, g, nt))) goto out;
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
        if ((st = sla__saamg_set_diag(ctx, a, L, l)) || (st = check_diag(ctx, g, L, l))) goto out;
        if (l == 0) { /* the drift guard: the largest factor a_ii moved by */
            double worst = 1.0;
            for (sla_int i = 0; i < L->n; i++) {
                double q = d0_value(g->d0[i]) * L->dinv[i]; /* old / new */
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
                st = sla__saamg_nomem(ctx, l);
                goto out;
            }
            double th = sla__saamg_theta(L, l), th2 = th * th;
            sla__saamg_smooth_p(L, L->agg, th2, L->strong,
                                sla__saamg_smoothing_weight(L, th2, L->strong, nt), lv);
            sla__free(a, lv);
            lv = NULL;
        }
        if ((st = sla__saamg_galerkin_numeric(ctx, a, L, l, g->symmetric, nt, &g->lev[l + 1]))) goto out;
    }
    if (g->dense && (st = sla__saamg_factor_coarse(ctx, a, g, &g->lev[g->nlev - 1]))) goto out;
    st = sla__saamg_smoother_setup(ctx, a, g, nt);
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
    bool keep = g->reuse != 2 && !g->stale && g->nlev > 0, sym_known = pc->sym_known;
    pc->sym_known = false;
    if (keep) {
        set_fine(g, A, ib);
        /* symmetry decides the coarse symmetrization and the factor: a change
         * rebuilds (the caller's exact check, when it made one, spares ours:
         * 4 % of a refresh of diffusion2d 1e6) */
        keep = (sym_known || is_symmetric(&g->lev[0], nt)) == g->symmetric;
    }
    pc->apply = NULL;
    pc->note[0] = '\0';
    if (keep && !g->d0) keep = false; /* (taken at every set-up with reuse) */
    if (keep) {
        double drift = 1.0;
        st = renumber(ctx, pc, nt, &drift);
        if (st == SLA_OK && !(drift <= SAAMG_DRIFT)) {
            snprintf(pc->note, sizeof pc->note,
                     "saamg: refresh rebuilt the hierarchy (a diagonal entry moved by a factor %.3g "
                     "since the set-up)", drift);
            keep = false;
        } else if (st == SLA_OK) {
            drop_dinv(&pc->alloc, g);
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

sla_status sla__saamg_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, int reuse, int smoother,
                            sla__pc *pc)
{
    return sla__saamg_setup_theta(ctx, A, ib, reuse, smoother, 0.0, pc);
}

sla_status sla__saamg_setup_theta(sla_ctx *ctx, const sla_matrix *A, sla_int ib, int reuse, int smoother,
                                  double theta, sla__pc *pc)
{
    const sla_allocator *a = &pc->alloc;
    if (A->nrows > INT32_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE,
                          "precond saamg: %lld rows exceed its 32-bit indices", (long long)A->nrows);
    saamg *g = sla__calloc(a, 1, sizeof *g);
    if (!g) return sla__saamg_nomem(ctx, 0);
    pc->fact = g;
    pc->destroy = saamg_destroy;
    g->reuse = reuse;
    g->smoother = smoother;
    g->theta0 = theta;
    if (pthread_mutex_init(&g->lock, NULL) != 0)
        return sla__error(ctx, SLA_ERR_NOMEM, "precond saamg: cannot create a mutex");
    g->lock_ready = true;
    sla_status st = build(ctx, A, ib, pc);
    if (st == SLA_OK) pc->refresh = saamg_refresh;
    return st;
}

void sla__saamg_hierarchy(const sla__pc *pc, sla_hierarchy_info *out)
{
    const saamg *g = pc->fact;
    memset(out, 0, sizeof *out);
    if (!g || !pc->apply) return; /* a failed refresh left none */
    out->levels = g->nlev;
    double nnz = 0.0, rows = 0.0;
    for (int l = 0; l < g->nlev; l++) {
        const sa_level *L = &g->lev[l];
        out->rows[l] = L->n;
        out->nnz[l] = L->rp[L->n];
        out->p_nnz[l] = l < g->nlev - 1 && L->prp ? L->prp[L->n] : 0;
        nnz += (double)out->nnz[l];
        rows += (double)out->rows[l];
    }
    out->operator_complexity = out->nnz[0] > 0 ? nnz / (double)out->nnz[0] : 1.0;
    out->grid_complexity = out->rows[0] > 0 ? rows / (double)out->rows[0] : 1.0;
    out->coarse_direct = g->dense != NULL;
}
