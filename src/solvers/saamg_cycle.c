/* Smoothed-aggregation AMG (precond=saamg): the V-cycle and its kernels
 * (the preconditioner object and its set-up are in precond_saamg.c).
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
 * CPU 29.1 -> 28.7, 48.3 -> 47.6, 56.3 -> 54.7; the same iterations. */
#include "saamg.h"
#include "saamg_split.h"

#include <pthread.h>
#include <string.h>

/* ---- kernels --------------------------------------------------------------- */

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

/* x_j outside the block (from before the sweep) */
static inline double halo_x(const sa_halo *H, sla_int j)
{
    return H->full ? H->full[j] : H->hx[find_sorted(H->hj, H->nh, j)];
}

/* P's rows in fixed slots. A row of P has a few entries (1 to 4 on level
 * 0 of a 2-D problem), and on irregular problems the count varies from
 * row to row without a pattern, so the loop over a row ends with a
 * mispredicted branch on most rows: one pass of x += P xc over 2-D
 * diffusion 1e6 with a random kappa took 6.0 ms (1 thread) against 2.0
 * ms on 2-D Poisson, whose counts repeat, and a pass that only counted
 * the entries 5.4 against 0.9 ms. On such a level (sa_level.pslots,
 * decided from the pattern by prow_irregular) the prolongation takes a
 * row of 1 to 4 entries in four slots, the unused ones with weight 0 at
 * the row's first column, without a branch on the count: 3.8 against 6.0
 * ms there (2.0 -> 3.3 ms on Poisson, which keeps the loop). The sum is
 * the loop's, term for term (a zero term added to a sum leaves it as it
 * is), so the result is the same bit for bit either way. In the cycle the
 * gain is smaller, the misses partly hidden behind the sweep: the V-cycle
 * on that diffusion problem 20.0-20.1 -> 19.6-19.8 ms on 2 threads,
 * 35.5-36.2 -> 34.2-34.7 ms on 1 (best of 15 rounds of 10 applies, three
 * interleaved processes each). The restriction's scatter in four slots
 * (the unused ones into a scratch entry) was slower in the fused
 * pre-smoothing pass (7.9 -> 8.9 ms on level 0) and keeps its loop. lim:
 * the last row start from which four entries can be read (P's entry count
 * - 4), or -1 on a level without slots. */
static const int32_t sa_lane_on[5][4] = {
    {0, 0, 0, 0}, {-1, 0, 0, 0}, {-1, -1, 0, 0}, {-1, -1, -1, 0}, {-1, -1, -1, -1}};
static const sa_real sa_lane_w[5][4] = {{0, 0, 0, 0}, {1, 0, 0, 0}, {1, 1, 0, 0}, {1, 1, 1, 0}, {1, 1, 1, 1}};

static inline int32_t prow_lim(const sa_level *L)
{
    return L->pslots ? L->prp[L->n] - 4 : -1;
}

/* sum_q P_q xc_{c_q} over P's entries [q0, q1) */
static inline double prow_gather(const int32_t *pci, const sa_real *pv, int32_t q0, int32_t q1,
                                 int32_t lim, const double *xc)
{
    int32_t len = q1 - q0;
    double c = 0.0;
    if (q0 <= lim && len >= 1 && len <= 4) {
        const int32_t *on = sa_lane_on[len];
        const sa_real *w = sa_lane_w[len];
        int32_t j0 = pci[q0];
        for (int k = 0; k < 4; k++) {
            int32_t j = j0 + ((pci[q0 + k] - j0) & on[k]);
            c += (double)(pv[q0 + k] * w[k]) * xc[j];
        }
        return c;
    }
    for (int32_t q = q0; q < q1; q++) c += (double)pv[q] * xc[pci[q]];
    return c;
}

/* bc_c += t, or the block's acc at c when other blocks' P rows reach c
 * too (H has sbit) */
static inline void restrict_add(const sa_hyb *H, double *acc, double *bc, sla_int c, double t)
{
    uint64_t w = H->sbit[c >> 6], m = (uint64_t)1 << (c & 63);
    if (w & m) acc[H->srank[c >> 6] + pop64(w & (m - 1))] += t;
    else bc[c] += t;
}

/* Software prefetch of the rows a sweep reaches SA_PD rows later: A's
 * column indices and values. Level 0 is
 * streamed from memory on every sweep, and the hardware prefetcher,
 * with the sweep's several streams (descending in the backward sweep),
 * left it well short of the bandwidth: a plain CSR product over 2-D
 * Poisson 1e6 (2 threads, one block each) 2.7 ms descending and 3.0 ms
 * ascending without, 1.8-1.9 and 2.1 ms with a prefetch 64 rows ahead
 * (16 rows: 2.1-2.3 ms; 256: 2.4 ms). A prefetch does not fault, and
 * the row taken is kept inside the block. In the cycle (2-D diffusion
 * 1e6, 2 threads) level 0's forward sweep with its residual 5.0-5.3 ->
 * 4.0-4.3 ms; the backward sweep gained nothing from it (its rows wait on
 * each other, not on memory) and has none; the forward sweeps of the
 * coarse levels and the restriction through P^T take it too. */
#define SA_PD 64
#if defined(__GNUC__)
#define SA_PREFETCH(p) __builtin_prefetch(p)
#else
#define SA_PREFETCH(p) ((void)0)
#endif

#define SA_KERNELS(T, S)                                                                      \
    /* s - sum_k a_ik x_k over row i's entries [k, e) in their order, and  \
     * *d = a_ii (columns sorted: the diagonal is where the lower part     \
     * ends; every row has one). x_i = x_i + s / a_ii is taken as s * (1 / \
     * a_ii), the same rounding as a stored 1 / a_ii; the division does    \
     * not depend on x, so it overlaps the row's products. */              \
    /* (dk >= 0: the diagonal's position, L->dpos) */                       \
    static inline double row_gs_##S(sla_int k, sla_int e, sla_int dk, const int32_t *ci,     \
                                    const T *v, const double *x, sla_int i, double s,         \
                                    double *d)                                                \
    {                                                                                         \
        if (dk >= 0) { /* the whole row in one loop: the same terms in the same order */      \
            for (; k < e; k++) s -= (double)v[k] * x[ci[k]];                                  \
            *d = (double)v[dk];                                                               \
            return s;                                                                         \
        }                                                                                     \
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
        const int32_t *ci = L->ci, *dp = L->dpos;                                             \
        for (sla_int i = lo; i < hi; i++) {                                                   \
            sla_int ip = i + SA_PD < hi ? i + SA_PD : hi - 1;                                 \
            SA_PREFETCH(&v[rp[ip]]);                                                          \
            SA_PREFETCH(&ci[rp[ip]]);                                                         \
            double s = b[i];                                                                  \
            sla_int k = rp[i], e = rp[i + 1];                                                 \
            if (dp) {                                                                         \
                sla_int dk = dp[i];                                                           \
                for (; k < dk && ci[k] < lo; k++) {}                                          \
                for (; k < dk; k++) s -= (double)v[k] * x[ci[k]];                             \
                x[i] = s * (1.0 / (double)v[dk]);                                             \
                continue;                                                                     \
            }                                                                                 \
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
    static inline void resid0_row_##S(const sa_level *L, const T *v, const double *x,        \
                                      double *r, double *bc, const sa_hyb *H, double *acc,    \
                                      sla_int lo, sla_int i, int mode)                        \
    {                                                                                         \
        const sla_int *rp = L->rp;                                                            \
        const int32_t *ci = L->ci, *prp = L->prp, *pci = L->pci, *dp = L->dpos;               \
        const sa_real *pv = L->pval;                                                          \
        double s = 0.0;                                                                       \
        sla_int k = rp[i], e = rp[i + 1];                                                     \
        if (dp) { /* the diagonal's place known: no scan over the lower part */               \
            sla_int dk = dp[i];                                                               \
            for (; k < dk && ci[k] < lo; k++) s -= (double)v[k] * x[ci[k]];                   \
            k = dk + 1;                                                                       \
        } else {                                                                              \
            for (; k < e && ci[k] < lo; k++) s -= (double)v[k] * x[ci[k]];                    \
            while (k < e && ci[k] <= i) k++;                                                  \
        }                                                                                     \
        for (; k < e; k++) s -= (double)v[k] * x[ci[k]];                                      \
        if (mode == 0)                                                                        \
            r[i] = s;                                                                         \
        else if (mode == 1)                                                                   \
            for (sla_int q = prp[i]; q < prp[i + 1]; q++) bc[pci[q]] += (double)pv[q] * s;   \
        else                                                                                  \
            for (sla_int q = prp[i]; q < prp[i + 1]; q++)                                     \
                restrict_add(H, acc, bc, pci[q], (double)pv[q] * s);                          \
    }                                                                                         \
    static inline void resid0_rows_##S(const sa_level *L, const T *v, const double *x,       \
                                       double *r, double *bc, const sa_hyb *H, double *acc,   \
                                       sla_int lo, sla_int hi, int mode)                      \
    {                                                                                         \
        for (sla_int i = lo; i < hi; i++) resid0_row_##S(L, v, x, r, bc, H, acc, lo, i, mode); \
    }                                                                                         \
    /* gs0 and resid0 in one pass over the whole level (one thread), on   \
     * a level whose rows are a stencil's (no dpos): row q's residual is   \
     * taken as soon as the sweep has passed its last column (N rows      \
     * behind on an N x N grid, row q still in cache: A is read once      \
     * instead of twice), rows in increasing order: the same operations   \
     * in the same order as gs0 then resid0. */                            \
    static void gsr0_all_##S(const sa_level *L, const T *v, const double *b, double *x,      \
                             double *r, double *bc)                                           \
    {                                                                                         \
        const sla_int *rp = L->rp;                                                            \
        const int32_t *ci = L->ci;                                                            \
        sla_int q = 0;                                                                        \
        for (sla_int i = 0; i < L->n; i++) {                                                  \
            double s = b[i];                                                                  \
            sla_int k = rp[i];                                                                \
            for (; ci[k] < i; k++) s -= (double)v[k] * x[ci[k]];                              \
            x[i] = s * (1.0 / (double)v[k]); /* k: the diagonal */                            \
            for (; q <= i && ci[rp[q + 1] - 1] <= i; q++)                                     \
                resid0_row_##S(L, v, x, r, bc, NULL, NULL, 0, q, r ? 0 : 1);                  \
        }                                                                                     \
    }                                                                                         \
    /* The same on one hybrid block of such a level: every row's residual \
     * right behind the sweep except those that read x outside the block   \
     * (H->dfr), which wait for every block's sweep (resid0_dfr). The      \
     * values are those of two passes; the sums into bc and acc run in     \
     * another order (the deferred rows last). */                          \
    static void gsr0_blk_##S(const sa_level *L, const T *v, const double *b, double *x,      \
                             double *r, double *bc, const sa_hyb *H, double *acc, sla_int lo, \
                             sla_int hi)                                                      \
    {                                                                                         \
        const sla_int *rp = L->rp;                                                            \
        const int32_t *ci = L->ci;                                                            \
        const uint64_t *dfr = H->dfr;                                                         \
        int mode = r ? 0 : !H->sbit ? 1 : 2;                                                  \
        sla_int q = lo;                                                                       \
        for (sla_int i = lo; i < hi; i++) {                                                   \
            sla_int ip = i + SA_PD < hi ? i + SA_PD : hi - 1;                                 \
            SA_PREFETCH(&v[rp[ip]]);                                                          \
            SA_PREFETCH(&ci[rp[ip]]);                                                         \
            double s = b[i];                                                                  \
            sla_int k = rp[i], e = rp[i + 1];                                                 \
            while (k < e && ci[k] < lo) k++;                                                  \
            for (; k < e && ci[k] < i; k++) s -= (double)v[k] * x[ci[k]];                     \
            x[i] = s * (1.0 / (double)v[k]); /* k: the diagonal */                            \
            for (; q <= i; q++) {                                                             \
                if (dfr[q >> 6] >> (q & 63) & 1) continue;                                    \
                if (ci[rp[q + 1] - 1] > i) break;                                             \
                resid0_row_##S(L, v, x, r, bc, H, acc, lo, q, mode);                          \
            }                                                                                 \
        }                                                                                     \
        for (; q < hi; q++)                                                                   \
            if (!(dfr[q >> 6] >> (q & 63) & 1))                                               \
                resid0_row_##S(L, v, x, r, bc, H, acc, lo, q, mode);                          \
    }                                                                                         \
    static void resid0_dfr_##S(const sa_level *L, const T *v, const double *x, double *r,   \
                               double *bc, const sa_hyb *H, double *acc, sla_int lo,          \
                               sla_int hi)                                                    \
    {                                                                                         \
        int mode = r ? 0 : !H->sbit ? 1 : 2;                                                  \
        for (sla_int w = lo >> 6; lo < hi && w <= (hi - 1) >> 6; w++)                         \
            for (uint64_t m = H->dfr[w]; m; m &= m - 1) {                                     \
                sla_int i = w * 64 + ctz64(m);                                                \
                if (i >= lo && i < hi) resid0_row_##S(L, v, x, r, bc, H, acc, lo, i, mode);   \
            }                                                                                 \
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
    /* (w != NULL: also w = A x on the block's rows that read no x outside \
     * it (dfr: the others; NULL serially), each as soon as the sweep has  \
     * passed its first column, and dots += (b.x, x.w) over them: see      \
     * sla__saamg_apply_aw) */                                             \
    static inline double row_dot_##S(sla_int k, sla_int e, const int32_t *ci, const T *v,    \
                                     const double *x)                                         \
    {                                                                                         \
        double s = 0.0;                                                                       \
        for (; k < e; k++) s += (double)v[k] * x[ci[k]];                                      \
        return s;                                                                             \
    }                                                                                         \
    static inline void gsb_rows_##S(const sa_level *L, const T *v, const double *b, double *x, \
                                    const double *xc, const sa_halo *H, bool out, double *w,  \
                                    const uint64_t *dfr, double *dots)                        \
    {                                                                                         \
        const sla_int *rp = L->rp;                                                            \
        const int32_t *ci = L->ci, *prp = L->prp, *pci = L->pci;                              \
        const sa_real *pv = L->pval;                                                          \
        sla_int lo = H->lo, hi = H->hi, p = xc ? hi : lo, qw = hi - 1;                        \
        int32_t lim = xc ? prow_lim(L) : -1;                                                  \
        double bx = 0.0, xw = 0.0;                                                            \
        for (sla_int i = hi - 1; i >= lo; i--) {                                              \
            sla_int k = rp[i], e = rp[i + 1];                                                 \
            for (sla_int first = ci[k] < i ? (ci[k] > lo ? ci[k] : lo) : i; p > first; p--) \
                x[p - 1] += prow_gather(pci, pv, prp[p - 1], prp[p], lim, xc);                \
            double s = b[i], d = 0.0;                                                         \
            if (!out || (ci[k] >= lo && ci[e - 1] < hi))                                      \
                s = row_gs_##S(k, e, L->dpos ? L->dpos[i] : -1, ci, v, x, i, s, &d);          \
            else                                                                              \
                for (; k < e; k++) {                                                          \
                    sla_int j = ci[k];                                                        \
                    if (j == i) d = (double)v[k];                                             \
                    s -= (double)v[k] * (j >= lo && j < hi ? x[j] : halo_x(H, j));            \
                }                                                                             \
            x[i] += s * (1.0 / d);                                                            \
            if (!w) continue;                                                                 \
            bx += b[i] * x[i];                                                                \
            for (; qw >= i; qw--) {                                                           \
                if (dfr && dfr[qw >> 6] >> (qw & 63) & 1) continue;                           \
                if (ci[rp[qw]] < i) break;                                                    \
                w[qw] = row_dot_##S(rp[qw], rp[qw + 1], ci, v, x);                            \
                xw += x[qw] * w[qw];                                                          \
            }                                                                                 \
        }                                                                                     \
        if (!w) return;                                                                       \
        for (; qw >= lo; qw--)                                                                \
            if (!dfr || !(dfr[qw >> 6] >> (qw & 63) & 1)) {                                   \
                w[qw] = row_dot_##S(rp[qw], rp[qw + 1], ci, v, x);                            \
                xw += x[qw] * w[qw];                                                          \
            }                                                                                 \
        dots[0] += bx;                                                                        \
        dots[1] += xw;                                                                        \
    }                                                                                         \
    /* (a block that reads no x outside itself, as a serial sweep: the    \
     * rows without the test) */                                           \
    static void gsb_blk_##S(const sa_level *L, const T *v, const double *b, double *x,       \
                            const double *xc, const sa_halo *H)                               \
    {                                                                                         \
        if (!H->full && H->nh == 0) gsb_rows_##S(L, v, b, x, xc, H, false, NULL, NULL, NULL); \
        else gsb_rows_##S(L, v, b, x, xc, H, true, NULL, NULL, NULL);                         \
    }                                                                                         \
    /* (with w: x corrected before, in prolong) */                          \
    static void gsbw_blk_##S(const sa_level *L, const T *v, const double *b, double *x,      \
                             const sa_halo *H, double *w, const uint64_t *dfr, double *dots)  \
    {                                                                                         \
        if (!H->full && H->nh == 0) gsb_rows_##S(L, v, b, x, NULL, H, false, w, dfr, dots);   \
        else gsb_rows_##S(L, v, b, x, NULL, H, true, w, dfr, dots);                           \
    }                                                                                         \
    /* w = A x on the rows of [lo, hi) in dfr (every block swept), and    \
     * dots[1] += their x.w */                                              \
    static void dfrw_##S(const sa_level *L, const T *v, const double *x, double *w,          \
                         const uint64_t *dfr, sla_int lo, sla_int hi, double *dots)           \
    {                                                                                         \
        double xw = 0.0;                                                                      \
        for (sla_int q = hi - 1; q >= lo; q--)                                                \
            if (dfr[q >> 6] >> (q & 63) & 1) {                                                \
                w[q] = row_dot_##S(L->rp[q], L->rp[q + 1], L->ci, v, x);                      \
                xw += x[q] * w[q];                                                            \
            }                                                                                 \
        dots[1] += xw;                                                                        \
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

static void gsbw_blk(const sa_level *L, const double *b, double *x, const sa_halo *H, double *w,
                     const uint64_t *dfr, double *dots)
{
    if (L->f32) gsbw_blk_f(L, L->val, b, x, H, w, dfr, dots);
    else gsbw_blk_d(L, L->val, b, x, H, w, dfr, dots);
}

static void dfrw(const sa_level *L, const double *x, double *w, const uint64_t *dfr, sla_int lo,
                 sla_int hi, double *dots)
{
    if (L->f32) dfrw_f(L, L->val, x, w, dfr, lo, hi, dots);
    else dfrw_d(L, L->val, x, w, dfr, lo, hi, dots);
}

static void resid0_blk(const sa_level *L, const double *x, double *r, double *bc, const sa_hyb *H,
                       double *acc, sla_int lo, sla_int hi)
{
    if (L->f32) resid0_blk_f(L, L->val, x, r, bc, H, acc, lo, hi);
    else resid0_blk_d(L, L->val, x, r, bc, H, acc, lo, hi);
}

static void gsr0_blk(const sa_level *L, const double *b, double *x, double *r, double *bc,
                     const sa_hyb *H, double *acc, sla_int lo, sla_int hi)
{
    if (L->f32) gsr0_blk_f(L, L->val, b, x, r, bc, H, acc, lo, hi);
    else gsr0_blk_d(L, L->val, b, x, r, bc, H, acc, lo, hi);
}

static void resid0_dfr(const sa_level *L, const double *x, double *r, double *bc, const sa_hyb *H,
                       double *acc, sla_int lo, sla_int hi)
{
    if (L->f32) resid0_dfr_f(L, L->val, x, r, bc, H, acc, lo, hi);
    else resid0_dfr_d(L, L->val, x, r, bc, H, acc, lo, hi);
}

static void gsr0_all(const sa_level *L, const double *b, double *x, double *r, double *bc)
{
    if (L->f32) gsr0_all_f(L, L->val, b, x, r, bc);
    else gsr0_all_d(L, L->val, b, x, r, bc);
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

/* bc = P^T r as a gather over P^T's rows (L->trp: saamg_reuse =
 * hierarchy). The scatter over P's rows, with the residual formed in the
 * same pass, misses a branch on most rows where P's row lengths vary
 * without a pattern (the prow_gather comment); storing r and gathering
 * costs an n-vector and P^T (8 B per entry of P: 27 B per unknown on
 * level 0 of 2-D diffusion) and takes level 0's pre-smoothing with the
 * restriction on 2-D diffusion 1e6 (random kappa, 2 threads) from
 * 8.8-9.1 to 6.5-7.0 ms, on 2-D Poisson from 6.2-6.5 to 5.9-6.1 ms; the
 * training step's solve 0.416-0.424 -> 0.390-0.392 s (level 0 only), and
 * on every level with a P 2-3 % less again (four interleaved rounds).
 * Each coarse row's sum in a fixed order: the same for any thread
 * count. */
static void restrict_t(const sa_level *L, sla_int nc, const double *r, double *bc, int nt)
{
    const int32_t *tp = L->trp, *tc = L->tci;
    const sa_real *tv = L->tval;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (sla_int c = 0; c < nc; c++) {
        sla_int cp = c + SA_PD < nc ? c + SA_PD : nc - 1;
        SA_PREFETCH(&tc[tp[cp]]);
        SA_PREFETCH(&tv[tp[cp]]);
        double s = 0.0;
        for (int32_t q = tp[c]; q < tp[c + 1]; q++) s += (double)tv[q] * r[tc[q]];
        bc[c] = s;
    }
}

/* Pre-smoothing from x = 0 (one forward sweep) and the restriction bc =
 * P^T (b - A x), r never stored. Serially (H NULL) one pass over A on a
 * level whose rows are a stencil's (gsr0_all: each row's residual right
 * behind the sweep; the V-cycle on 2-D Poisson 1e6, 1 thread, -9 to -12 %
 * against two passes, bit for bit the same; best of 20 rounds of 5
 * applies, interleaved in one process), two passes on the others (the
 * coarse levels' irregular rows: one pass was -3 to +5 % there). Hybrid
 * (H): the blocks' sweeps, then per block the residual summed into bc (the
 * coarse rows only this block reaches) and into the block's acc (the
 * shared ones), then the accs added in block order: the same with any
 * number of OpenMP threads for a given block count. On a stencil's level
 * (no dpos when the blocks were made: H->dfr) one pass per block
 * (gsr0_blk), the rows that read other blocks after every block's sweep;
 * the V-cycle on 2 threads, against two passes (interleaved processes,
 * best of 20 rounds of 5 applies, 3 rounds): 2-D Poisson 1e6 13.87-14.24
 * -> 12.29-12.66 ms (-11 %), 2-D diffusion 1e6 20.63-20.90 ->
 * 19.78-20.09 ms (-3 to -5 %). gsr0_all is gsr0_blk without blocks;
 * one kernel for both (dfr NULL serially) cost 1-6 % of the V-cycle on 1
 * and 2 threads (3 interleaved rounds), so they stay two. */
static void presmooth_restrict(const sa_level *L, const sa_hyb *H, const double *b, double *x,
                               sla_int nc, double *bc, int nt, double *rt)
{
    sla_int n = L->n;
    double *rs = L->trp && rt ? rt : NULL; /* r stored, bc gathered through P^T */
    if (!H) {
        if (!rs) memset(bc, 0, (size_t)nc * sizeof *bc);
        if (!L->dpos) gsr0_all(L, b, x, rs, bc);
        else {
            gs0_blk(L, b, x, 0, n);
            resid0_blk(L, x, rs, bc, NULL, NULL, 0, n);
        }
        if (rs) restrict_t(L, nc, rs, bc, 1);
        return;
    }
    sla_int ns = rs ? 0 : H->ns;
    bool one = H->dfr && !H->full && !H->two; /* a stencil's rows: one pass per block */
#pragma omp parallel num_threads(nt)
    {
        if (!rs) {
#pragma omp for schedule(static)
            for (sla_int c = 0; c < nc; c++) bc[c] = 0.0;
        }
        if (one) {
#pragma omp for schedule(static, 1)
            for (int t = 0; t < nt; t++) {
                double *acc = H->acc && !rs ? H->acc + (size_t)t * ns : NULL;
                for (sla_int s = 0; s < ns; s++) acc[s] = 0.0;
                gsr0_blk(L, b, x, rs, bc, H, acc, H->h[t].lo, H->h[t].hi);
            }
#pragma omp for schedule(static, 1)
            for (int t = 0; t < nt; t++)
                resid0_dfr(L, x, rs, bc, H, H->acc && !rs ? H->acc + (size_t)t * ns : NULL,
                           H->h[t].lo, H->h[t].hi);
        } else {
#pragma omp for schedule(static, 1)
            for (int t = 0; t < nt; t++) gs0_blk(L, b, x, H->h[t].lo, H->h[t].hi);
#pragma omp for schedule(static, 1)
            for (int t = 0; t < nt; t++) {
                double *acc = H->acc && !rs ? H->acc + (size_t)t * ns : NULL;
                for (sla_int s = 0; s < ns; s++) acc[s] = 0.0;
                resid0_blk(L, x, rs ? rs : H->full, bc, H, acc, H->h[t].lo, H->h[t].hi);
            }
        }
#pragma omp for schedule(static)
        for (sla_int s = 0; s < ns; s++) {
            double v = 0.0;
            for (int t = 0; t < nt; t++) v += H->acc[(size_t)t * ns + s];
            bc[H->sj[s]] = v;
        }
    }
    if (rs) restrict_t(L, nc, rs, bc, nt);
    else if (H->full) sla__saamg_restrict(L, nc, H->full, bc);
}

/* x += P xc; xcopy != NULL: also xcopy = the new x (the same pass). */
static void prolong(const sa_level *L, const double *xc, double *x, double *xcopy, int nt)
{
    sla_int n = L->n;
    int32_t lim = prow_lim(L);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        x[i] += prow_gather(L->pci, L->pval, L->prp[i], L->prp[i + 1], lim, xc);
        if (xcopy) xcopy[i] = x[i];
    }
}

/* The largest thread count of the fused apply (its per-block sums on the
 * stack). */
#define SA_AW_MAXT 64

/* x += P xc and the backward sweep. Serially one pass. Hybrid: first each
 * block's outside x, corrected (the same sums as its owner's), into its
 * list; then the blocks' passes. With full: prolong with the copy, then
 * the blocks' sweeps. w != NULL (level 0 of sla__saamg_apply_aw; H, if
 * any, has dfr and no full copy): also w = A x with dots = (b.x, x.w) in
 * the same pass, each row's w right behind the sweep (A's row still in
 * cache), the rows that read other blocks after every block's sweep; each
 * block's sums, then the blocks' in order (deterministic for a thread
 * count). There the correction x += P xc runs first in a pass of its own
 * (the same sums, so the same x): the sweep with both the correction
 * running ahead of it and the product behind it took longer than the
 * three apart (2-D diffusion 1e6, 2 threads: sweep alone 4.0-4.2 ms,
 * with the product 5.5, with the correction 6.2-6.4, with both 9.6-10.0;
 * the correction's pass, then the sweep with the product: 7.7-8.0). */
static void prolong_smooth(const sa_level *L, const sa_hyb *H, const double *b, double *x,
                           const double *xc, int nt, double *w, double dots[2])
{
    if (w) { /* the correction first, in its own pass: see above */
        dots[0] = dots[1] = 0.0;
        prolong(L, xc, x, NULL, H ? nt : 1);
    }
    if (!H) {
        sa_halo whole = {0, L->n, 0, NULL, NULL, NULL};
        if (w) gsbw_blk(L, b, x, &whole, w, NULL, dots);
        else gsb_blk(L, b, x, xc, &whole);
        return;
    }
    if (H->full) prolong(L, xc, x, H->full, nt);
    const double *xcb = H->full || w ? NULL : xc;
    int32_t lim = prow_lim(L);
    double part[2 * SA_AW_MAXT];
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static, 1)
        for (int t = 0; t < nt; t++) {
            const sa_halo *B = &H->h[t];
            for (sla_int s = 0; s < B->nh && !H->full; s++) {
                sla_int j = B->hj[s];
                B->hx[s] = xcb ? x[j] + prow_gather(L->pci, L->pval, L->prp[j], L->prp[j + 1], lim, xc) : x[j];
            }
        }
#pragma omp for schedule(static, 1)
        for (int t = 0; t < nt; t++) {
            if (!w) {
                gsb_blk(L, b, x, xcb, &H->h[t]);
                continue;
            }
            part[2 * t] = part[2 * t + 1] = 0.0;
            gsbw_blk(L, b, x, &H->h[t], w, H->dfr, &part[2 * t]);
        }
        if (w) {
#pragma omp for schedule(static, 1)
            for (int t = 0; t < nt; t++)
                dfrw(L, x, w, H->dfr, H->h[t].lo, H->h[t].hi, &part[2 * t]);
        }
    }
    for (int t = 0; w && t < nt; t++) {
        dots[0] += part[2 * t];
        dots[1] += part[2 * t + 1];
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
    memcpy(x, b, (size_t)n * sizeof *x);
    sla__saamg_dense_solve(g->dense, g->piv, n, x);
}

/* x = A^-1 x with the coarsest level's dense factor F (n x n, column
 * major): LU with the pivots piv, or Cholesky (piv NULL). Also the
 * distributed saamg's coarse solve, on the gathered vector. */
void sla__saamg_dense_solve(const double *F, const int *piv, sla_int n, double *x)
{
    if (piv) { /* P A = L U, L unit lower */
        for (sla_int i = 0; i < n; i++) {
            sla_int p = piv[i];
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

/* ---- the cycle ----------------------------------------------------------------- */

/* The cycle's work vectors: x[l] and b[l] (levels 1..nlev-1); cheby and
 * spai0 also r[l] (levels 0..nlev-2), cheby d[l]. */
typedef struct sa_work {
    double *r[SAAMG_MAX_LEV], *x[SAAMG_MAX_LEV], *b[SAAMG_MAX_LEV];
    double *d[SAAMG_MAX_LEV];
    const struct sa_split *sp; /* gs with threads: the hybrid blocks, NULL: serial */
    double *aw, *dots;         /* sla__saamg_apply_aw: level 0's A z and sums, else NULL */
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
    presmooth_restrict(L, H, b, x, C->n, w->b[l + 1], ntl, w->r[l]);
    cycle(g, w, l + 1, w->b[l + 1], w->x[l + 1], nt);
    prolong_smooth(L, H, b, x, w->x[l + 1], ntl, l == 0 ? w->aw : NULL, w->dots);
}

/* The cycle's work vectors, each level its own: x_l and b_l on levels
 * 1.. (3 B per fine unknown on 2D Poisson); cheby and spai0 also r_l on
 * levels 0..nlev-2 (their set-up works in it). The Gauss-Seidel cycle
 * needs no fine-level vector: the residual is restricted as it is
 * formed, and the hybrid sweeps' outside x comes in small lists made at
 * the first apply with a thread count (g->split). false: out of memory. */
/* Whether level L's P rows are to be taken in fixed slots (prow_gather):
 * nearly all rows have 1 to 4 entries, and a predictor that guesses a
 * row's count from the counts of the three rows before it (the last count
 * seen after the same three) misses on more than a quarter of the rows.
 * 2-D diffusion 1e6 with a random kappa: it misses on 65 % (level 0) and
 * 68 % (level 1) of the rows; 2-D Poisson: 0.5 % and 2.4 %. The choice
 * depends on P's pattern only: the same matrix takes the same path. */
static bool prow_irregular(const sa_level *L)
{
    uint8_t seen[512] = {0};
    unsigned h = 0;
    sla_int miss = 0, few = 0;
    for (sla_int i = 0; i < L->n; i++) {
        int32_t len = L->prp[i + 1] - L->prp[i];
        unsigned c = len > 7 ? 7u : (unsigned)len;
        few += len >= 1 && len <= 4;
        miss += seen[h] != c;
        seen[h] = (uint8_t)c;
        h = ((h << 3) | c) & 511u;
    }
    return L->n > 0 && L->prp[L->n] >= 4 && (double)few >= 0.9 * (double)L->n &&
           (double)miss > 0.25 * (double)L->n;
}

bool sla__saamg_alloc_work(const sla_allocator *a, saamg *g)
{
    for (int l = 0; l < g->nlev && g->nlev > 1; l++) {
        sa_level *L = &g->lev[l];
        L->pslots = l < g->nlev - 1 && L->prp && prow_irregular(L);
        bool r = (g->smoother != 0 && l < g->nlev - 1) || L->trp;
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
/* One apply; aw != NULL: also aw = A z on level 0 and dots = (r.z,
 * z.aw), or SLA_ERR_UNSUPPORTED (nothing done) where that pass cannot
 * run (see sla__saamg_apply_aw). */
static sla_status apply(const sla__pc *pc, bool transpose, const double *r, double *z, int nt,
                        double *aw, double dots[2])
{
    saamg *g = pc->fact;
    if (transpose && !g->symmetric) return SLA_ERR_UNSUPPORTED;
    sa_work w;
    memset(&w, 0, sizeof w);
    double *block = NULL;
    struct sa_split *mine = NULL;
    bool gs = g->smoother == 0, own = r != z && pthread_mutex_trylock(&g->lock) == 0;
    if (aw && (!own || !gs || g->nlev < 2 || g->lev[0].dpos || nt > SA_AW_MAXT)) {
        if (own) pthread_mutex_unlock(&g->lock);
        return SLA_ERR_UNSUPPORTED;
    }
    if (own) {
        if (gs && nt > 1 && (!g->split || g->split->nt != nt)) {
            sla__saamg_split_free(&pc->alloc, &g->split);
            if (sla__saamg_split_build(&pc->alloc, g, nt, &g->split)) {
                pthread_mutex_unlock(&g->lock);
                return SLA_ERR_NOMEM;
            }
        }
        w.sp = gs && nt > 1 ? g->split : NULL;
        const sa_hyb *H0 = w.sp && w.sp->lev[0].h ? &w.sp->lev[0] : NULL;
        if (aw && H0 && (H0->full || !H0->dfr)) {
            pthread_mutex_unlock(&g->lock);
            return SLA_ERR_UNSUPPORTED;
        }
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
        if (!block || (gs && sla__saamg_split_build(&pc->alloc, g, nt, &mine))) {
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
    w.aw = aw; /* (the gs cycle; level 0 has a P: checked above) */
    w.dots = dots;
    cycle(g, &w, 0, r, z, nt);
    if (own) pthread_mutex_unlock(&g->lock);
    sla__saamg_split_free(&pc->alloc, &mine);
    sla__free(&pc->alloc, block);
    return SLA_OK;
}

sla_status sla__saamg_apply(const sla__pc *pc, bool transpose, const double *r, double *z, int nt)
{
    return apply(pc, transpose, r, z, nt, NULL, NULL);
}

sla_status sla__saamg_apply_aw(const sla__pc *pc, bool transpose, const double *r, double *z,
                               double *w, double dots[2], int nt)
{
    return apply(pc, transpose, r, z, nt, w, dots);
}
