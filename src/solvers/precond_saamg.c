/* Smoothed-aggregation AMG (precond=saamg): the preconditioner object and
 * its set-up and refresh drivers (the V-cycle is in saamg_cycle.c). sla's own, for problems too
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
 * Cycle: V(1,1) Gauss-Seidel (or the polynomial smoothers), in
 * saamg_cycle.c, whose header gives the details.
 *
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
 *  - none: the whole hierarchy rebuilt (the set-up again);
 *  - hierarchy: every coarse level, P and the coarse factor kept: only
 *    level 0 (the caller's A, read in place) has the new values, with its
 *    diagonal checks (the cycle stays a symmetric positive definite
 *    preconditioner; stale coarse levels cost iterations, not
 *    correctness). While every entry of A stays within SAAMG_KEEP (25 %)
 *    of its value when the coarse levels were computed; past that the
 *    refresh recomputes them as interpolation does, and past
 *    SAAMG_DRIFT - 1 (300 %: the couplings that made the aggregates and P
 *    may have turned, e.g. an anisotropy at a fixed diagonal) it rebuilds
 *    (2 B per entry of A for the reference, in bfloat16). A single level
 *    (its dense factor) is refactored, as interpolation does. diffusion2d
 *    1e6, kappa changed by <= 1 % per step, 2 threads: refresh
 *    0.018-0.019 s against 0.14 s, the same 17 iterations.
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
        sla__free(a, L->dpos);
        sla__free(a, L->trp);
        sla__free(a, L->tci);
        sla__free(a, L->tval);
        memset(L, 0, sizeof *L);
    }
    sla__free(a, g->dense);
    sla__free(a, g->piv);
    sla__free(a, g->d0);
    sla__free(a, g->vh);
    sla__saamg_split_free(a, &g->split);
    g->d0 = NULL;
    g->vh = NULL;
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
static sla_status not_spd(sla_ctx *ctx, int l, sla_int i, double d)
{
    return sla__error(ctx, SLA_ERR_NOT_SPD,
                      "precond saamg: %s diagonal entry %g at row %lld%s: A is not positive "
                      "definite, and saamg needs an SPD matrix (use amg, ilu0/jacobi, or a "
                      "direct method)",
                      l ? "the coarse operator has a nonpositive" : "nonpositive", d, (long long)i,
                      l ? " of a coarse level" : "");
}

static sla_status check_diag(sla_ctx *ctx, const saamg *g, const sa_level *L, int l)
{
    if (!g->symmetric) return SLA_OK;
    for (sla_int i = 0; i < L->n; i++)
        if (!(L->dinv[i] > 0.0)) return not_spd(ctx, l, i, 1.0 / L->dinv[i]);
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

/* *d = level 0's a_ii (from dinv) in bfloat16: the drift guard's
 * reference (within 2^-9 relative, far inside SAAMG_DRIFT; 2 B per
 * unknown, taken at the set-up because dinv does not outlive it). */
static sla_status take_diag(sla_ctx *ctx, const sla_allocator *a, saamg *g, uint16_t **d)
{
    sla_int n = g->lev[0].n;
    if (!*d) *d = sla__malloc(a, (size_t)(n > 0 ? n : 1), sizeof **d);
    if (!*d) return sla__saamg_nomem(ctx, 0);
    for (sla_int i = 0; i < n; i++) (*d)[i] = sla__bf16_pack(1.0 / g->lev[0].dinv[i]);
    return SLA_OK;
}

/* saamg_reuse = hierarchy: g->vh = level 0's entries in bfloat16, the
 * values the coarse levels are computed from (2 B per entry). */
static sla_status take_vals(sla_ctx *ctx, const sla_allocator *a, saamg *g, int nt)
{
    const sa_level *L = &g->lev[0];
    sla_int nnz = L->nnz;
    if (!g->vh) g->vh = sla__malloc(a, (size_t)(nnz > 0 ? nnz : 1), sizeof *g->vh);
    if (!g->vh) return sla__saamg_nomem(ctx, 0);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && nnz >= SLA_PAR_MIN)
    for (sla_int k = 0; k < nnz; k++) g->vh[k] = sla__bf16_pack(AVAL(L, k));
    return SLA_OK;
}

/* The largest relative change of an entry of level 0 against g->vh:
 * max_k |a_k - v_k| / |v_k| (an entry that was 0 and is not: infinite;
 * NaN counts as infinite). */
static double vals_moved(const saamg *g, int nt)
{
    const sa_level *L = &g->lev[0];
    sla_int nnz = L->nnz;
    double worst = 0.0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(max : worst) if (nt > 1 && nnz >= SLA_PAR_MIN)
    for (sla_int k = 0; k < nnz; k++) {
        double q = sla__bf16_moved(AVAL(L, k), g->vh[k]);
        if (q > worst) worst = q;
    }
    return worst;
}

/* A refresh's checks of level 0's diagonal: the set-up's errors (a zero,
 * missing or infinite a_ii; with symmetric A a negative one) and the drift
 * guard's factor (*drift: the largest factor by which an a_ii moved from
 * g->d0, either way; NaN counts as infinitely far), in one pass over the
 * rows and from A itself, so that where nothing reads 1 / a_ii after the
 * refresh (the Gauss-Seidel smoother with a kept P: saamg_reuse =
 * interpolation or hierarchy) set_diag need not allocate and fill the n
 * doubles of it only for the refresh to free them again. 2-D diffusion
 * 1e6, 2 threads, a profile of 40 refreshes with saamg_reuse = hierarchy:
 * set_diag and the guard's pass over dinv 10.7 % of the samples, this
 * pass 4.9 % (its first form, with a binary search for the diagonal and a
 * branch on q's side of 1, 11.5 %). */
/* (The diagonal of row i: a short scan over the lower part, which a
 * stencil's rows have a few entries of, with branches that repeat from
 * row to row; the binary search past eight.) */
static inline sla_int diag_pos(const sa_level *L, sla_int i)
{
    if (L->dpos) return L->dpos[i];
    sla_int k = L->rp[i], e = L->rp[i + 1];
    for (int s = 0; s < 8 && k < e; s++, k++)
        if (L->ci[k] >= i) return L->ci[k] == i ? k : -1;
    return k < e ? find_in_row(L, i, i) : -1;
}

static sla_status diag0(sla_ctx *ctx, const saamg *g, int nt, double *drift)
{
    const sa_level *L = &g->lev[0];
    sla_int n = L->n, bad = n, neg = n;
    /* max_i max(q_i, 1 / q_i) = max(the largest q, 1 / the smallest q >= 0),
     * q = old / new, without a branch on q's side of 1 (one per row, half
     * of them mispredicted, when the values move both ways) */
    double qmax = 1.0, qmin = 1.0;
    int nq = 0; /* a NaN ratio seen */
#pragma omp parallel for num_threads(nt) schedule(static) reduction(min : bad, neg, qmin) reduction(max : qmax, nq) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        sla_int p = diag_pos(L, i);
        double d = p >= 0 ? AVAL(L, p) : 0.0;
        if (d == 0.0 || !isfinite(d)) {
            if (i < bad) bad = i;
            continue;
        }
        if (!(d > 0.0) && i < neg) neg = i;
        double q = sla__bf16_value(g->d0[i]) * (1.0 / d); /* old / new */
        qmax = q > qmax ? q : qmax;
        qmin = q >= 0.0 && q < qmin ? q : qmin; /* (a change of sign: not counted) */
        nq |= q != q;
    }
    if (bad < n) return sla__saamg_bad_diag(ctx, bad, 0);
    if (g->symmetric && neg < n) return not_spd(ctx, 0, neg, AVAL(L, diag_pos(L, neg)));
    double lo = 1.0 / qmin; /* (qmin 0: infinite) */
    *drift = nq ? INFINITY : qmax > lo ? qmax : lo;
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
        sla_status st = take_diag(ctx, a, g, &g->d0);
        if (!st && g->reuse == 3) st = take_vals(ctx, a, g, sla__threads(ctx));
        if (st) return st;
    }
    if (g->smoother == 0) {
        sla__free(a, g->lev[l].dinv);
        g->lev[l].dinv = NULL;
    }
    return SLA_OK;
}

/* The cycle ready: pc->apply, and with saamg_reuse = hierarchy (the
 * training loop's setting) the apply that also forms A z for CG in its
 * last pass (sla__saamg_apply_aw: CG then keeps two n-vectors more, 16 B
 * per unknown, and reads A once less per iteration). */
static void set_apply(sla__pc *pc, const saamg *g)
{
    pc->apply = sla__saamg_apply;
    pc->apply_aw = g->reuse == 3 ? sla__saamg_apply_aw : NULL;
    pc->aw_vals = g->lev[0].val;
}

/* The whole hierarchy from the values of A_ib (g's levels empty). */
static sla_status build(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla__pc *pc)
{
    const sla_allocator *a = &pc->alloc;
    saamg *g = pc->fact;
    int nt = sla__threads(ctx);
    set_fine(g, A, ib);
    g->lev[0].theta = g->theta0;
    if (!sla__saamg_set_dpos(a, &g->lev[0], true)) return sla__saamg_nomem(ctx, 0);
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
    for (int l = 0; g->reuse == 3 && g->smoother == 0 && l < g->nlev - 1; l++) /* P^T */
        if (!sla__saamg_transpose_p(a, &g->lev[l], g->lev[l + 1].n)) {
            st = sla__saamg_nomem(ctx, l);
            goto out;
        }
    if (!sla__saamg_alloc_work(a, g)) {
        st = sla__saamg_nomem(ctx, g->nlev - 1);
        goto out;
    }
    sa_level *Lc = &g->lev[g->nlev - 1];
    if (Lc->n <= SAAMG_DENSE_MAX && (st = sla__saamg_factor_coarse(ctx, a, g, Lc))) goto out;
    if ((st = sla__saamg_smoother_setup(ctx, a, g, nt, g->nlev - 1))) goto out;
    set_apply(pc, g);
out:
    sla__free(a, agg);
    return st;
}

/* New values on the same pattern with the hierarchy's patterns kept
 * (saamg_reuse = interpolation, full or hierarchy): level by level the
 * diagonal and its check, for full P re-smoothed on its pattern with the
 * set-up's aggregates and strong entries, the Galerkin product
 * numerically on the coarse pattern; then the coarse factor. hierarchy:
 * level 0 only while its entries are within SAAMG_KEEP of the values the
 * coarse levels were computed from (*kept: how far they moved),
 * else as interpolation, and those values become the reference. */
static sla_status renumber(sla_ctx *ctx, sla__pc *pc, int nt, double *drift, double *kept)
{
    const sla_allocator *a = &pc->alloc;
    saamg *g = pc->fact;
    sla_status st = SLA_OK;
    double *lv = NULL;
    bool hier = g->reuse == 3 && g->nlev > 1; /* one level: its factor is refreshed */
    *drift = 1.0;
    *kept = 0.0;
    for (int l = 0; l < g->nlev; l++) {
        sa_level *L = &g->lev[l];
        bool dinv = l > 0 || g->smoother != 0 || g->reuse == 1; /* 1 / a_ii read after this */
        if (dinv && ((st = sla__saamg_set_diag(ctx, a, L, l)) || (st = check_diag(ctx, g, L, l)))) goto out;
        if (l == 0) { /* the drift guard: the largest factor a_ii moved by */
            if ((st = diag0(ctx, g, nt, drift))) goto out;
            if (!(*drift <= SAAMG_DRIFT)) goto out;
            if (hier) { /* hierarchy: the coarse levels kept while A stays near their values */
                *kept = g->vh ? vals_moved(g, nt) : INFINITY;
                if (!(*kept <= SAAMG_DRIFT - 1.0)) goto out; /* the caller rebuilds */
                if (!(*kept <= SAAMG_KEEP)) hier = false;
            }
        }
        if (l == g->nlev - 1 || hier) break;
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
    if (hier) { /* the coarse levels, their smoothers and the factor as they were */
        st = sla__saamg_smoother_setup(ctx, a, g, nt, 1);
        goto out;
    }
    if (g->dense && (st = sla__saamg_factor_coarse(ctx, a, g, &g->lev[g->nlev - 1]))) goto out;
    if ((st = sla__saamg_smoother_setup(ctx, a, g, nt, g->nlev - 1))) goto out;
    if (g->reuse == 3) st = take_vals(ctx, a, g, nt); /* the coarse levels' values now */
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
    pc->apply_aw = NULL;
    pc->note[0] = '\0';
    if (keep && !g->d0) keep = false; /* (taken at every set-up with reuse) */
    if (keep) {
        double drift = 1.0, kept = 0.0;
        st = renumber(ctx, pc, nt, &drift, &kept);
        if (st == SLA_OK && !(drift <= SAAMG_DRIFT)) {
            snprintf(pc->note, sizeof pc->note,
                     "saamg: refresh rebuilt the hierarchy (a diagonal entry moved by a factor %.3g "
                     "since the set-up)", drift);
            keep = false;
        } else if (st == SLA_OK && g->reuse == 3 && !(kept <= SAAMG_DRIFT - 1.0)) {
            snprintf(pc->note, sizeof pc->note,
                     "saamg: refresh rebuilt the hierarchy (an entry of A moved by %.3g %% since the "
                     "coarse levels were computed)", 100.0 * kept);
            keep = false;
        } else if (st == SLA_OK) {
            if (g->reuse == 3 && g->nlev > 1 && kept <= SAAMG_KEEP)
                snprintf(pc->note, sizeof pc->note,
                         "saamg: refresh kept the coarse levels (every entry of A within %.3g %% of "
                         "its value when they were computed)", 100.0 * kept);
            else if (g->reuse == 3 && g->nlev > 1)
                snprintf(pc->note, sizeof pc->note,
                         "saamg: refresh recomputed the coarse levels (an entry of A moved by %.3g %% "
                         "since they were computed)", 100.0 * kept);
            drop_dinv(&pc->alloc, g);
            set_apply(pc, g);
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
        pc->apply_aw = NULL;
    }
    return st;
}

sla_status sla__saamg_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, int reuse, int smoother,
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
