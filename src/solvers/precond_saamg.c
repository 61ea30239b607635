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
 * 2 threads. Residuals, interpolation and the Galerkin product are
 * threaded too; aggregation and the prolongator are serial.
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
 * it; bitwise the same result): 2D 49 -> 46 ms, 3D 70-73 -> 70 ms. With
 * threads it writes the hybrid sweep's copy of x in the same pass.
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
 * Memory (2D Poisson): P 2.5 entries per fine row at 8 bytes + 32-bit row
 * pointers (24 B), 1/a_ii (8 B; in float32 it broke the exact symmetry
 * of the fused pre-smoothing + residual below, which assumes the sweep's
 * own rows have zero residual to rounding), one residual vector (8 B; the
 * coarse levels' x, r and b but b_1 live in it during the coarse cycle,
 * with the gs smoother), coarse levels (n/6 rows at 9 entries on level 1,
 * then ~1/9 per level) ~24 B: ~64 B per unknown beside the matrix; with
 * CG's 3 vectors, b, x and a float64 matrix (68 B) the solve holds ~172 B
 * per unknown
 * (bench/SAAMG_RESULTS.md, "Memory of the solve path"). The set-up's
 * transients (aggregate map, strength flags, transpose of P, the Galerkin
 * product's scratch) are freed before the next level's arrays, P^T and
 * the scratch before the coarse operator is allocated.
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
#include "saamg.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ---- kernels --------------------------------------------------------------- */

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
            double s = b[i], d = 0.0;                                                         \
            if (whole)                                                                        \
                s = row_gs_##S(rp[i], rp[i + 1], ci, v, x, i, s, &d);                         \
            else                                                                              \
                for (sla_int k = rp[i]; k < rp[i + 1]; k++) {                                 \
                    sla_int j = ci[k];                                                        \
                    double xj = (j >= lo && j < hi) ? x[j] : xo ? xo[j] : 0.0;                \
                    if (j == i) d = (double)v[k];                                             \
                    s -= (double)v[k] * xj;                                                   \
                }                                                                             \
            x[i] += s * (1.0 / d);                                                            \
        }                                                                                     \
    }                                                                                         \
    /* The forward sweep from x = 0 on rows [lo, hi): only the block's    \
     * strictly lower entries meet a nonzero x (columns sorted), and x is  \
     * written, not updated (no zeroing pass before). */                   \
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
            x[i] = s * (1.0 / (double)v[k]); /* k: the diagonal (every row has one) */        \
        }                                                                                     \
    }                                                                                         \
    /* r = b - A x right after gs0 on the same blocks: row i's entries     \
     * that the sweep already subtracted (the block's columns lo..i) give  \
     * b_i - a_ii x_i = 0 up to rounding, so r_i is minus the sum over the \
     * rest (the block's upper part and the other blocks' columns, with    \
     * the swept x): one pass over A for smoothing and residual together.  \
     * bc != NULL (serial): bc = P^T r in the same pass, r not stored. */   \
    static void resid0_blk_##S(const sa_level *L, const T *v, const double *x, double *r,   \
                               double *bc, sla_int lo, sla_int hi)                            \
    {                                                                                         \
        const sla_int *rp = L->rp;                                                            \
        const int32_t *ci = L->ci;                                                            \
        for (sla_int i = lo; i < hi; i++) {                                                   \
            double s = 0.0;                                                                   \
            sla_int k = rp[i], e = rp[i + 1];                                                 \
            for (; k < e && ci[k] < lo; k++) s -= (double)v[k] * x[ci[k]];                    \
            while (k < e && ci[k] <= i) k++;                                                  \
            for (; k < e; k++) s -= (double)v[k] * x[ci[k]];                                  \
            if (bc)                                                                           \
                for (sla_int q = L->prp[i]; q < L->prp[i + 1]; q++)                           \
                    bc[L->pci[q]] += (double)L->pval[q] * s;                                  \
            else                                                                              \
                r[i] = s;                                                                     \
        }                                                                                     \
    }                                                                                         \
    /* Serial: x += P xc and the backward sweep in one pass. Row i reads  \
     * x from its first column up, so the correction runs ahead of the    \
     * sweep down to that column (p: rows >= p corrected); the same        \
     * operations in the same order as prolong, then gs backward. */       \
    static void gsb_prolong_##S(const sa_level *L, const T *v, const double *b, double *x,   \
                                const double *xc)                                             \
    {                                                                                         \
        const sla_int *rp = L->rp;                                                            \
        const int32_t *ci = L->ci;                                                            \
        sla_int p = L->n;                                                                     \
        for (sla_int i = L->n - 1; i >= 0; i--) {                                             \
            sla_int first = rp[i] < rp[i + 1] && ci[rp[i]] < i ? ci[rp[i]] : i;               \
            for (; p > first; p--) {                                                          \
                double c = 0.0;                                                               \
                for (sla_int q = L->prp[p - 1]; q < L->prp[p]; q++)                           \
                    c += (double)L->pval[q] * xc[L->pci[q]];                                  \
                x[p - 1] += c;                                                                \
            }                                                                                 \
            double d, s = row_gs_##S(rp[i], rp[i + 1], ci, v, x, i, b[i], &d);                \
            x[i] += s * (1.0 / d);                                                            \
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

/* Pre-smoothing from x = 0 (one forward sweep, hybrid blocks as gs with
 * xo = NULL) followed by the residual and the restriction bc = P^T r:
 * serially one pass (resid0 with the scatter), r untouched; with
 * threads r is formed by blocks and restricted serially. */
static void presmooth_restrict(const sa_level *L, const double *b, double *x, double *r,
                               sla_int nc, double *bc, int nt)
{
    sla_int n = L->n;
    if (nt <= 1 || n < SLA_PAR_MIN) {
        memset(bc, 0, (size_t)nc * sizeof *bc);
        if (L->f32) {
            gs0_blk_f(L, L->val, b, x, 0, n);
            resid0_blk_f(L, L->val, x, NULL, bc, 0, n);
        } else {
            gs0_blk_d(L, L->val, b, x, 0, n);
            resid0_blk_d(L, L->val, x, NULL, bc, 0, n);
        }
        return;
    }
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static, 1)
        for (int t = 0; t < nt; t++) {
            sla_int lo = n * t / nt, hi = n * (t + 1) / nt;
            if (L->f32) gs0_blk_f(L, L->val, b, x, lo, hi);
            else gs0_blk_d(L, L->val, b, x, lo, hi);
        }
#pragma omp for schedule(static, 1)
        for (int t = 0; t < nt; t++) {
            sla_int lo = n * t / nt, hi = n * (t + 1) / nt;
            if (L->f32) resid0_blk_f(L, L->val, x, r, NULL, lo, hi);
            else resid0_blk_d(L, L->val, x, r, NULL, lo, hi);
        }
    }
    sla__saamg_restrict(L, nc, r, bc);
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

/* The offsets of the coarse levels' work vectors in level 0's residual
 * (x_l, r_l on levels 1.., b_l on levels 2..: everything the coarse cycle
 * uses but b_1, which is restricted from r_0), or false when they do not
 * fit in its n_0 entries. r_0 is dead from the restriction to b_1 until
 * the coarse correction has been prolongated (the cycle writes r_0 again
 * only after that), so the coarse levels can work there. */
static bool work_in_r0(const saamg *g, sla_int off[SAAMG_MAX_LEV][3])
{
    if (g->smoother != 0) return false; /* cheby's set-up uses each level's r */
    sla_int at = 0;
    for (int l = 1; l < g->nlev; l++) {
        sla_int m = g->lev[l].n;
        off[l][0] = at, at += m;                                /* x */
        off[l][1] = at, at += l < g->nlev - 1 ? m : 0;          /* r */
        off[l][2] = at, at += l >= 2 ? m : 0;                   /* b */
    }
    return g->nlev > 1 && at <= g->lev[0].n;
}

/* The cycle's work vectors: r[l] (levels 0..nlev-2), x[l] and b[l]
 * (levels 1..nlev-1). */
typedef struct sa_work {
    double *r[SAAMG_MAX_LEV], *x[SAAMG_MAX_LEV], *b[SAAMG_MAX_LEV];
    double *d[SAAMG_MAX_LEV]; /* cheby: levels 0..nlev-2 */
    bool in_r0;               /* levels 1.. work inside r[0] (work_in_r0) */
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
    presmooth_restrict(L, b, x, r, C->n, w->b[l + 1], nt);
    cycle(g, w, l + 1, w->b[l + 1], w->x[l + 1], nt);
    if (nt > 1 && L->n >= SLA_PAR_MIN) { /* r is free again: the hybrid sweep's x from before */
        if (l == 0 && w->in_r0) { /* x_1 lives in r_0: the copy after the prolongation */
            prolong(L, w->x[l + 1], x, NULL, nt);
            sla__copy(L->n, x, r);
        } else {
            prolong(L, w->x[l + 1], x, r, nt);
        }
        gs(L, b, x, r, false, nt);
    } else if (L->f32) {
        gsb_prolong_f(L, L->val, b, x, w->x[l + 1]);
    } else {
        gsb_prolong_d(L, L->val, b, x, w->x[l + 1]);
    }
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
        sla_int off[SAAMG_MAX_LEV][3];
        bool in = work_in_r0(g, off);
        w.in_r0 = in;
        for (int l = 0; l < g->nlev; l++) {
            w.r[l] = g->lev[l].r;
            w.x[l] = g->lev[l].x;
            w.b[l] = g->lev[l].b;
            w.d[l] = g->lev[l].wd;
            if (in && l >= 1) {
                w.x[l] = g->lev[0].r + off[l][0];
                if (l < g->nlev - 1) w.r[l] = g->lev[0].r + off[l][1];
                if (l >= 2) w.b[l] = g->lev[0].r + off[l][2];
            }
        }
    } else {
        size_t total = r == z ? (size_t)g->lev[0].n : 0;
        for (int l = 0; l < g->nlev; l++)
            total += (size_t)g->lev[l].n * ((l == 0 ? 1 : l < g->nlev - 1 ? 3 : 2) +
                                            (g->smoother == 1 && l < g->nlev - 1));
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
            if (l < g->nlev - 1 && g->smoother == 1) w.d[l] = p, p += n;
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
        sla__free(a, L->sm);
        sla__free(a, L->wd);
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

/* The cycle's work vectors: r_0, b_1, and the coarse levels' x, r and b in
 * r_0 when they fit (2D Poisson: x_1 and r_1 are n/3 of the n entries),
 * else their own (g->lev[l].x, .r, .b). */
static sla_status alloc_work(sla_ctx *ctx, const sla_allocator *a, saamg *g)
{
    if (g->nlev < 2) return SLA_OK;
    sla_int off[SAAMG_MAX_LEV][3];
    bool in = work_in_r0(g, off);
    g->lev[0].r = sla__malloc(a, (size_t)g->lev[0].n, sizeof *g->lev[0].r);
    g->lev[1].b = sla__malloc(a, (size_t)g->lev[1].n, sizeof *g->lev[1].b);
    if (!g->lev[0].r || !g->lev[1].b) return sla__saamg_nomem(ctx, 1);
    for (int l = 1; l < g->nlev && !in; l++) {
        sa_level *L = &g->lev[l];
        L->x = sla__malloc(a, (size_t)L->n, sizeof *L->x);
        if (l < g->nlev - 1) L->r = sla__malloc(a, (size_t)L->n, sizeof *L->r);
        if (l >= 2) L->b = sla__malloc(a, (size_t)L->n, sizeof *L->b);
        if (!L->x || (l < g->nlev - 1 && !L->r) || (l >= 2 && !L->b)) return sla__saamg_nomem(ctx, l);
    }
    return SLA_OK;
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
            st = sla__saamg_nomem(ctx, l);
            goto out;
        }
        if (L->n <= SAAMG_COARSE || l == SAAMG_MAX_LEV - 1) {
            /* the coarsest level still needs 1/a_ii when it is only smoothed */
            if ((st = sla__saamg_build_p(ctx, a, L, l, agg, false, nt, &nagg)) || (st = check_diag(ctx, g, L, l)))
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
        if ((st = sla__saamg_galerkin(ctx, a, L, l, nagg, g->symmetric, nt, C))) goto out;
        g->nlev = l + 2;
    }
    if ((st = alloc_work(ctx, a, g))) goto out;
    sa_level *Lc = &g->lev[g->nlev - 1];
    if (Lc->n <= SAAMG_DENSE_MAX && (st = sla__saamg_factor_coarse(ctx, a, g, Lc))) goto out;
    if ((st = sla__saamg_smoother_setup(ctx, a, g, nt))) goto out;
    if (g->reuse != 2 && (st = take_d0(ctx, a, g))) goto out;
    drop_dinv(a, g);
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
            double th = SAAMG_THETA * ldexp(1.0, -l), th2 = th * th;
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
    bool keep = g->reuse != 2 && !g->stale && g->nlev > 0;
    if (keep) {
        set_fine(g, A, ib);
        /* symmetry decides the coarse symmetrization and the factor: a change rebuilds */
        keep = is_symmetric(&g->lev[0], nt) == g->symmetric;
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
    if (pthread_mutex_init(&g->lock, NULL) != 0)
        return sla__error(ctx, SLA_ERR_NOMEM, "precond saamg: cannot create a mutex");
    g->lock_ready = true;
    sla_status st = build(ctx, A, ib, pc);
    if (st == SLA_OK) pc->refresh = saamg_refresh;
    return st;
}
