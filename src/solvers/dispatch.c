/* method=auto: which method a solver object uses, from the matrix's
 * structure and a cost model measured on this machine class (the graph
 * diameter for Krylov iteration counts, the symbolic analysis' flops for
 * factorizations, saamg's per-entry costs), accuracy first for cheap
 * factorizations; the fallbacks when a choice fails on the values (trial
 * Cholesky -> LU, the chain of LU backends, saamg -> LU or MINRES); and the
 * ski-rental switch from a Krylov solve that runs past its budget, or
 * converges suspiciously late, to the direct method. */
#include "solver_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The Krylov choice from structure: CG for symmetric matrices with a
 * positive diagonal (necessary for SPD), MINRES for other symmetric ones,
 * GMRES otherwise. CG falls back to MINRES at solve time if it meets an
 * indefinite direction, and the info says so. */
static sla_method krylov_choice(const sla_solver *S)
{
    if (S->symmetric && S->pos_diag) return SLA_METHOD_CG;
    if (S->symmetric) return SLA_METHOD_MINRES;
    return SLA_METHOD_GMRES;
}

/* method=auto's cost model, measured on this machine class (2 cores;
 * bench/DIRECT_RESULTS.md). Rates are per thread: the Krylov side scales
 * with the context's thread count, the direct side by 1 + 0.4 per extra
 * thread (the second core made CG 2x and CHOLMOD 1.2-1.5x faster).
 *
 * Krylov: the iteration count follows the diameter of A's graph. Plain CG
 * on 2D and 3D Poisson needed 0.92-0.94 and 0.82-0.85 diameters at rtol
 * 1e-8 at every size from 1e3 to 4e6 (2 sqrt(n), the former estimate, is
 * 4-8x too many in 3D); the count grows like log(2/rtol). Restarted GMRES
 * stalls (3-4 diameters already at n <= 3e4 on convection-diffusion, then
 * worse). The diameter is the eccentricity of a pseudo-peripheral vertex:
 * two breadth-first searches, O(nnz). A CG iteration streams 12 nnz + 80 n
 * bytes. Coefficient contrast and anisotropy raise the count (2.5-5.5x for
 * kappa in e^[-1,1] .. e^[-3,3], 3x for eps = 0.01): the estimate is for
 * well-conditioned, Laplacian-like matrices.
 * Direct: the analysis' flop count at SLA_AUTO_FLOP_RATE, plus a cost per
 * row (many small supernodes: 1.3-1.9 us per row on 2D grids) and per
 * factor entry (the two triangular solves).
 * The analysis itself (the AMD ordering alone took 1e-7 to 3e-7 s per
 * stored entry, 5.7 s for 3D Poisson at 4e6) is skipped when the Krylov
 * estimate is below SLA_AUTO_DIRECT_MIN_S_PER_NNZ per stored entry: the
 * whole direct path cost 2.4e-7 to 5.2e-7 s per entry on 2D Poisson from 1e3
 * to 4e6 and more in 3D, so Krylov wins there unless its estimate is off by
 * more than 1.5-2x. */
#define SLA_AUTO_FLOP_RATE 3e10               /* flop/s of one thread (was 5e9) */
#define SLA_AUTO_DIRECT_S_PER_ROW 1.5e-6
#define SLA_AUTO_DIRECT_S_PER_FACTOR_NNZ 3e-9
#define SLA_AUTO_DIRECT_MIN_S_PER_NNZ 5e-7
#define SLA_AUTO_KRYLOV_BYTES_PER_S 3e10      /* bytes/s of one thread (was 1.5e10) */
/* ... while the iteration's bytes fit in cache; from DRAM a CG iteration
 * streamed 34 GB/s on 2 threads at 1e6 (2D, bench/DIRECT_RESULTS.md) and
 * 32 GB/s on 3D Poisson 1e6 (CG + Jacobi, 249 iterations in 1.27 s,
 * bench/RESULTS.md): 1.7e10 per thread. Between the two sizes the rate is
 * interpolated in log(bytes). Before (one rate at every size) plain CG on
 * 3D Poisson 1e6 was priced 1.9x too cheap and auto kept it where CG +
 * saamg was faster (issue 22). */
#define SLA_AUTO_KRYLOV_DRAM_BYTES_PER_S 1.7e10
#define SLA_AUTO_KRYLOV_CACHE_BYTES 16e6      /* up to here: the in-cache rate */
#define SLA_AUTO_KRYLOV_DRAM_BYTES 128e6      /* from here: the DRAM rate */
#define SLA_AUTO_KLU_MAX_NNZ 1e5              /* below: KLU, less fixed cost than UMFPACK */
/* CHOLMOD's simplicial kernel (chosen by CHOLMOD itself below 120 flops per
 * factor entry, see src/backends/cholmod.c) has no per-supernode overhead:
 * 0.95 ms for the n = 2500 factor of a 50 x 50 grid on one thread. */
#define SLA_AUTO_SIMPLICIAL_FLOP_RATE 2e9
#define SLA_AUTO_SIMPLICIAL_S_PER_ROW 1e-7
#define SLA_AUTO_SIMPLICIAL_MAX_FL_PER_LNZ 120.0
/* Lower bound of one more numeric factorization on the same analysis, per
 * stored entry (that 50 x 50 factor: 7.7e-8): a batch amortizes the
 * analysis, so its items are compared factor against solves. */
#define SLA_AUTO_FACTOR_MIN_S_PER_NNZ 7e-8

/* CG + saamg (sla's smoothed-aggregation AMG; bench/SAAMG_RESULTS.md,
 * 2D/3D Poisson and anisotropic diffusion at 1e6-4e6, 2 threads): an
 * iteration (V-cycle + CG's product and vectors) 5-6e-9 s per stored entry
 * on 2 threads (about 1e-8 on one), 14-15 iterations at rtol 1e-8 in 3D,
 * 16-17 in 2D, growing slowly with n (20 at 1e8, rtol 1e-6). The set-up
 * depends on the stencil: smoothed prolongator rows are longer in 3D and
 * the Galerkin product's work grows with their square: 4.9e-8 s per stored
 * entry on 2D Poisson (5 per row), 1.0e-7 on 3D Poisson (7 per row; 1.37e-7
 * before the one-pass Galerkin product, issue 22), interpolated in between
 * and flat outside (docs/dispatch.md has the measurements). It beat
 * hypre's BoomerAMG on all four problems in one process (0.68 against 1.29
 * s at 1M) with no MPI start-up, so auto prices saamg, not precond=amg.
 * Considered for one value array of a symmetric matrix with a positive
 * diagonal, the case it was measured on; its iteration count is not
 * predicted from the graph, so the same iteration budget as plain CG
 * switches a misjudged solve to the direct method. */
#define SLA_AUTO_AMG_SETUP_S_PER_NNZ_2D 5e-8  /* at <= 5 entries per row */
#define SLA_AUTO_AMG_SETUP_S_PER_NNZ_3D 1e-7  /* at >= 7 entries per row */
#define SLA_AUTO_AMG_ITER_S_PER_NNZ 1.2e-8 /* one thread */
#define SLA_AUTO_AMG_SETUP_THREAD_GAIN 0.55 /* each further thread */
#define SLA_AUTO_AMG_ITERATIONS 16.0
/* Below this many rows auto does not consider AMG: plain CG or a
 * factorization costs milliseconds there, and the per-entry model above has
 * no fixed set-up cost, so it would pick saamg for matrices of a few
 * thousand rows where it gains nothing. (Indefiniteness is not the reason:
 * saamg refuses an indefinite matrix at set-up and auto then falls back to
 * LU, below.) */
#define SLA_AUTO_AMG_MIN_N 50000

/* Eccentricity of a pseudo-peripheral vertex of the graph of A's pattern
 * (rows as adjacency lists): two breadth-first searches, the second from the
 * last vertex the first one reached; 0 when n <= 1. */
static sla_status graph_diameter(sla_ctx *ctx, const sla_solver *S, sla_int *diam)
{
    const sla_matrix *A = S->A;
    sla_int n = A->nrows;
    *diam = 0;
    if (n <= 1) return SLA_OK;
    int32_t *level = sla__malloc(&S->alloc, (size_t)n, sizeof *level);
    int32_t *queue = sla__malloc(&S->alloc, (size_t)n, sizeof *queue);
    if (!level || !queue) {
        sla__free(&S->alloc, level);
        sla__free(&S->alloc, queue);
        return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the graph search of method=auto");
    }
    int32_t start = 0, ecc = 0;
    for (int sweep = 0; sweep < 2; sweep++) {
        for (sla_int i = 0; i < n; i++) level[i] = -1;
        sla_int head = 0, tail = 0;
        queue[tail++] = start;
        level[start] = 0;
        int32_t last = start;
        while (head < tail) {
            int32_t v = queue[head++];
            last = v;
            for (sla_int p = A->rowptr[v]; p < A->rowptr[v + 1]; p++) {
                int32_t w = A->colind[p];
                if (level[w] < 0) {
                    level[w] = level[v] + 1;
                    queue[tail++] = w;
                }
            }
        }
        ecc = level[last];
        start = last;
    }
    sla__free(&S->alloc, level);
    sla__free(&S->alloc, queue);
    *diam = ecc;
    return SLA_OK;
}

/* How iteration counts scale with rtol: log(2 / rtol), 1 at rtol 1e-8. */
static double rtol_scale(const sla_solver *S)
{
    double rtol = S->opts.rtol > 1e-16 ? S->opts.rtol : 1e-16;
    return rtol < 1.0 ? log(2.0 / rtol) / log(2e8) : 0.05;
}

/* Predicted iterations of Krylov method km (no preconditioner). */
static double krylov_iterations(const sla_solver *S, sla_method km, sla_int diam)
{
    double scale = rtol_scale(S);
    double d = diam > 0 ? (double)diam : 2.0 * sqrt((double)S->A->nrows);
    double c = km == SLA_METHOD_CG ? 0.9 : km == SLA_METHOD_MINRES ? 1.5 : 10.0; /* GMRES(m) */
    return c * d * scale;
}

/* Predicted seconds of `its` iterations of km with nt threads. */
static double krylov_seconds(const sla_solver *S, sla_method km, double its, int nt)
{
    double n = (double)S->A->nrows, nnz = (double)S->A->nnz;
    double bytes = km == SLA_METHOD_CG       ? 12.0 * nnz + 80.0 * n
                   : km == SLA_METHOD_MINRES ? 12.0 * nnz + 120.0 * n
                                             : 12.0 * nnz + 8.0 * (double)(S->opts.restart + 6) * n;
    double rate = SLA_AUTO_KRYLOV_BYTES_PER_S;
    if (bytes >= SLA_AUTO_KRYLOV_DRAM_BYTES)
        rate = SLA_AUTO_KRYLOV_DRAM_BYTES_PER_S;
    else if (bytes > SLA_AUTO_KRYLOV_CACHE_BYTES)
        rate *= pow(SLA_AUTO_KRYLOV_DRAM_BYTES_PER_S / SLA_AUTO_KRYLOV_BYTES_PER_S,
                    log(bytes / SLA_AUTO_KRYLOV_CACHE_BYTES) /
                        log(SLA_AUTO_KRYLOV_DRAM_BYTES / SLA_AUTO_KRYLOV_CACHE_BYTES));
    return its * bytes / (rate * (double)(nt > 0 ? nt : 1));
}

/* Predicted seconds of an AMG set-up and `solves` CG + saamg solves of
 * `its` iterations each with nt threads. */
static double amg_seconds(const sla_solver *S, double its, double solves, int nt)
{
    double nnz = (double)S->A->nnz, per_row = nnz / (double)(S->A->nrows > 0 ? S->A->nrows : 1);
    double f = per_row <= 5.0 ? 0.0 : per_row >= 7.0 ? 1.0 : 0.5 * (per_row - 5.0);
    double setup = SLA_AUTO_AMG_SETUP_S_PER_NNZ_2D +
                   f * (SLA_AUTO_AMG_SETUP_S_PER_NNZ_3D - SLA_AUTO_AMG_SETUP_S_PER_NNZ_2D);
    /* the set-up is threaded too (Galerkin product, prolongator, structure
     * queries): 1.5-1.7x faster on 2 threads (3-D Poisson 1e6: 0.70 ->
     * 0.41-0.45 s, 2-D 0.24 -> 0.14-0.17 s; bench/RESULTS.md, 2026-12-04);
     * priced as one thread's time over 1 + 0.55 (nt - 1) */
    double tsetup = setup * nnz / (1.0 + SLA_AUTO_AMG_SETUP_THREAD_GAIN * (double)((nt > 1 ? nt : 1) - 1));
    return tsetup + solves * its * SLA_AUTO_AMG_ITER_S_PER_NNZ * nnz / (double)(nt > 1 ? nt : 1);
}

/* Predicted seconds of one numeric factorization and `solves` solves with
 * it, after the analysis. */
static double direct_seconds_at(const sla_solver *S, sla_method dm, double solves, int nt,
                                double flop_rate)
{
    double fl = S->dstats.flops, lnz = S->dstats.factor_nnz, n = (double)S->A->nrows;
    bool simplicial = dm == SLA_METHOD_CHOLESKY && lnz > 0.0 && fl / lnz < SLA_AUTO_SIMPLICIAL_MAX_FL_PER_LNZ;
    double t = simplicial ? fl / SLA_AUTO_SIMPLICIAL_FLOP_RATE + n * SLA_AUTO_SIMPLICIAL_S_PER_ROW
                          : fl / flop_rate + n * SLA_AUTO_DIRECT_S_PER_ROW;
    t += solves * lnz * SLA_AUTO_DIRECT_S_PER_FACTOR_NNZ;
    return t / (1.0 + 0.4 * (double)((nt > 0 ? nt : 1) - 1));
}

static double direct_seconds(const sla_solver *S, sla_method dm, double solves, int nt)
{
    return direct_seconds_at(S, dm, solves, nt, SLA_AUTO_FLOP_RATE);
}

/* Accuracy first: auto factors whenever the whole factorization (every
 * value array, plus the planned solves) is predicted to cost less than
 * opts.auto_direct_seconds (default SLA_AUTO_DIRECT_SECONDS_DEFAULT),
 * whatever a Krylov method would cost. A factorization of a matrix
 * that small costs little in absolute terms, and its answer is what a
 * careful analyst would give: a residual near rounding, a forward error
 * bounded by cond(A) eps, singularity named. The analysis is skipped
 * only when even its lower bound (SLA_AUTO_DIRECT_MIN_S_PER_NNZ per entry)
 * exceeds it. Measured on tests/data's real matrices (bench/RESULTS.md):
 * a default GMRES/CG solve to rtol 1e-8 gave forward errors 1e-7 to 8
 * where a factorization gives 1e-16 to 1e-8; the largest of them, bayer10
 * (n = 13 436), factors and solves in ~10 ms. */
/* A Krylov solve chosen by prediction that converges only after this many
 * times its predicted iterations (+ 20) met a matrix much harder than its
 * graph suggests (ill-conditioned: its small residual may hide a large
 * forward error): auto then finishes with the direct method when the
 * factors fit. Calibrated Laplacian-like matrices stay within 1.2x. */
#define SLA_AUTO_SUSPECT_FACTOR 6.0
/* The accuracy-first test prices the factorization pessimistically: at
 * the sizes it decides (factors of 1e5-1e6 entries) CHOLMOD's refactor ran
 * at 1.9-8.6 GF/s on 2 threads (3D Poisson 1e3-1e4, bench/DIRECT_RESULTS.md),
 * not at the 3e10 per thread of large 3D factors: with that rate 3D Poisson
 * at n = 10 648 was predicted 35 ms and took 90-140 ms. */
#define SLA_AUTO_SMALL_FLOP_RATE 6e9

/* The LU backends in order of pivoting strength, for method=auto: KLU
 * (threshold pivoting within BTF blocks), UMFPACK (threshold pivoting
 * with its own strategy), SuperLU (partial pivoting, threshold 1.0, which
 * refuses only exactly zero pivots). */
static const sla_method lu_chain[] = {SLA_METHOD_KLU, SLA_METHOD_UMFPACK, SLA_METHOD_SUPERLU};
enum { LU_CHAIN_LEN = 3 };

static int lu_chain_pos(sla_method m)
{
    if (m == SLA_METHOD_LU) m = SLA_METHOD_UMFPACK;
    for (int i = 0; i < LU_CHAIN_LEN; i++)
        if (lu_chain[i] == m) return i;
    return LU_CHAIN_LEN;
}

/* Analysis + memory check + factorization of every value array with dm. */
static sla_status auto_try(sla_ctx *ctx, sla_solver *S, sla_method dm)
{
    sla__solver_free_direct(S);
    sla_status st = sla__solver_direct_analyze(ctx, S, dm);
    if (st) return st;
    if (!sla__solver_direct_fits(S))
        return sla__error(ctx, SLA_ERR_NOMEM,
                          "%s: the factorization needs about %.2f GB, more than the limit of %.2f GB",
                          sla_method_name(dm), 1e-9 * S->dstats.bytes * (double)S->A->nbatch,
                          1e-9 * sla__solver_memory_limit(S));
    return sla__solver_factor_all(ctx, S);
}

/* method=auto's factorization with its fallbacks, once the analysis of S's
 * current method succeeded: factor every value array; a trial Cholesky that
 * finds A not positive definite falls back to LU; an LU backend whose
 * pivot test finds A singular to working precision hands over to the next
 * one in lu_chain, so that nothing LU with partial pivoting factors is
 * refused. The note gets the fallbacks taken (`what`, len bytes). Exact
 * singularity that every backend meets (a structurally or exactly zero
 * pivot) stays SLA_ERR_SINGULAR with "singular" in the message. */
sla_status sla__auto_factor(sla_ctx *ctx, sla_solver *S, char *what, size_t len)
{
    what[0] = '\0';
    sla_method dm = S->method;
    sla_status st = sla__solver_factor_all(ctx, S);
    size_t used = 0;
    if (st == SLA_ERR_NOT_SPD && dm == SLA_METHOD_CHOLESKY) {
        dm = sla__solver_backend_for(SLA_METHOD_LU) ? SLA_METHOD_LU : SLA_METHOD_SUPERLU;
        if (!sla__solver_backend_for(dm)) return st;
        used += (size_t)snprintf(what, len, "trial cholesky failed (%.100s); fell back to lu",
                                 sla_ctx_message(ctx));
        st = auto_try(ctx, S, dm);
    }
    int pos = lu_chain_pos(dm);
    bool chained = false;
    while (st == SLA_ERR_SINGULAR && S->dops) { /* numerical: the analysis went through */
        int next = pos + 1;
        while (next < LU_CHAIN_LEN && !sla__solver_backend_for(lu_chain[next])) next++;
        if (next >= LU_CHAIN_LEN) break;
        if (used < len)
            used += (size_t)snprintf(what + used, len - used, "%s%s refused (%.90s), retried with %s",
                                     used ? "; " : "", sla_method_name(S->method), sla_ctx_message(ctx),
                                     sla_method_name(lu_chain[next]));
        chained = true;
        pos = next;
        st = auto_try(ctx, S, lu_chain[pos]);
    }
    if (st == SLA_ERR_SINGULAR && chained) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s", sla_ctx_message(ctx));
        return sla__error(ctx, st, "matrix is singular: every LU backend met a zero pivot (%s)", msg);
    }
    if (st) return st;
    if (used > 0 && used < len) snprintf(what + used, len - used, " (%s)", S->dops->name);
    return SLA_OK;
}

/* method=auto: a direct factorization when a backend is compiled in, the
 * factors fit in memory and either the factorization is cheap in absolute
 * terms (opts.auto_direct_seconds: accuracy first) or the symbolic analysis
 * predicts it beats Krylov; SPD detection by a trial Cholesky that falls
 * back to LU; LU fallbacks through lu_chain. A preconditioner in the options
 * asks for a Krylov method. Errors (out of memory, a singular matrix) are
 * reported, never swallowed by a fallback. */
sla_status sla__auto_setup(sla_ctx *ctx, sla_solver *S)
{
    sla_method dm = (S->symmetric && S->pos_diag) ? SLA_METHOD_CHOLESKY : SLA_METHOD_LU;
    if (dm == SLA_METHOD_LU && (double)S->A->nnz < SLA_AUTO_KLU_MAX_NNZ && sla__solver_backend_for(SLA_METHOD_KLU))
        dm = SLA_METHOD_KLU;
    if (dm == SLA_METHOD_LU && !sla__solver_backend_for(dm) && sla__solver_backend_for(SLA_METHOD_SUPERLU)) dm = SLA_METHOD_SUPERLU;
    const char *why = S->symmetric ? (S->pos_diag ? "symmetric, positive diagonal" : "symmetric, diagonal not positive")
                                   : "nonsymmetric";
    sla_method km = krylov_choice(S);
    const char *kname = sla_method_name(km);
    int nt = sla__threads(ctx);
    char msg[160] = "";
    bool predicted = false; /* Krylov chosen by the cost model (not forced) */
    /* per value array: E solves (forward + adjoint by default) */
    double E = S->opts.auto_solves > 0 ? (double)S->opts.auto_solves : 2.0;
    double B = (double)S->A->nbatch;
    double its = 0.0, t_kry = 0.0, t_dir = 0.0;
    if (S->opts.precond != SLA_PRECOND_NONE) {
        snprintf(msg, sizeof msg, "precond %s given", sla_precond_name(S->opts.precond));
    } else if (!sla__solver_backend_for(dm)) {
        snprintf(msg, sizeof msg, "no direct backend in this build");
    } else {
        sla_int diam;
        sla_status st = graph_diameter(ctx, S, &diam);
        if (st) return st;
        its = krylov_iterations(S, km, diam);
        t_kry = E * krylov_seconds(S, km, its, nt); /* per value array */
        if (km == SLA_METHOD_CG && S->A->nbatch == 1 && S->A->nrows >= SLA_AUTO_AMG_MIN_N) {
            double its_amg = SLA_AUTO_AMG_ITERATIONS * rtol_scale(S);
            double t_amg = amg_seconds(S, its_amg, E, nt);
            if (t_amg < t_kry) {
                S->opts.precond = SLA_PRECOND_SAAMG;
                S->auto_amg = true;
                its = its_amg;
                t_kry = t_amg;
                kname = "cg+saamg";
            }
        }
        /* the cheapest direct path for the whole batch: one analysis, B factors */
        t_dir = (SLA_AUTO_DIRECT_MIN_S_PER_NNZ + (B - 1.0) * SLA_AUTO_FACTOR_MIN_S_PER_NNZ) *
                (double)S->A->nnz / B;
        if (S->symmetric && t_kry < t_dir && B * t_dir >= S->opts.auto_direct_seconds) {
            snprintf(msg, sizeof msg, "%s predicted %.3g s for %g solves (diameter %lld), below any factorization",
                     kname, t_kry, E, (long long)diam);
            predicted = true;
            goto krylov;
        }
        if ((st = sla__solver_direct_analyze(ctx, S, dm))) return st;
        t_dir = direct_seconds(S, dm, E, nt);
        double t_cheap = direct_seconds_at(S, dm, E, nt, SLA_AUTO_SMALL_FLOP_RATE);
        if (!sla__solver_direct_fits(S)) {
            snprintf(msg, sizeof msg, "%s factors would need %.2f GB", sla_method_name(dm),
                     1e-9 * S->dstats.bytes * (double)S->A->nbatch);
        } else if (t_dir > t_kry && B * t_cheap >= S->opts.auto_direct_seconds) {
            snprintf(msg, sizeof msg, "%s predicted slower (%.3g flops, %.3g s vs %s %.3g s)",
                     sla_method_name(dm), S->dstats.flops, t_dir, kname, t_kry);
            predicted = true;
        } else {
            S->opts.precond = SLA_PRECOND_NONE; /* a direct method after all */
            S->auto_amg = false;
            char what[200];
            st = sla__auto_factor(ctx, S, what, sizeof what);
            if (st) return st;
            char rule[96];
            if (t_dir > t_kry)
                snprintf(rule, sizeof rule, "accuracy first: factorization predicted under %g s",
                         S->opts.auto_direct_seconds);
            else
                snprintf(rule, sizeof rule, "%.3g s vs %s %.3g s", t_dir, kname, t_kry);
            if (what[0])
                sla__solver_set_note(S, "auto: %s; %s; %s", why, what, rule);
            else
                sla__solver_set_note(S, "auto: %s -> %s (%s, %.3g flops predicted; %s)", why,
                         sla_method_name(S->method), S->dops->name, S->dstats.flops, rule);
            return SLA_OK;
        }
        sla__solver_free_direct(S);
    }
krylov:
    S->method = km;
    char budget[96] = "";
    if (predicted) {
        /* Ski rental: a matrix harder than its graph suggests (coefficient
         * contrast, anisotropy) needs more iterations than predicted. Once
         * the Krylov solve has spent about what the factorization would
         * cost (at least twice its own prediction), a serial solve switches
         * to the direct method: at most ~2-3x the better choice. */
        double f = t_kry > 0.0 && t_dir / t_kry > 2.0 ? t_dir / t_kry : 2.0;
        double b = ceil(its * f) + 20.0;
        S->kry_budget = b < (double)S->opts.maxiter ? (sla_int)b : 0;
        S->kry_predicted = its;
        S->fallback_dm = dm;
        if (S->kry_budget)
            snprintf(budget, sizeof budget, " (switches to %s after %lld iterations)",
                     sla_method_name(dm), (long long)S->kry_budget);
    }
    /* the choice and its budget first; the analysis message (at most 120
     * characters) gets what is left of the note, so that nothing is cut
     * silently */
    char tail[32 + sizeof budget]; /* " -> ", the longest method name, budget */
    snprintf(tail, sizeof tail, " -> %s%s", S->auto_amg ? "cg + saamg" : sla_method_name(S->method),
             budget);
    size_t fixed = strlen("auto: ; ") + strlen(why) + strlen(tail);
    int room = fixed < sizeof S->note ? (int)(sizeof S->note - 1 - fixed) : 0;
    int len = snprintf(S->note, sizeof S->note, "auto: %s; %.*s%s", why, room < 120 ? room : 120,
                       msg, tail);
    if (len >= (int)sizeof S->note) /* cannot happen with the strings above; mark it if it does */
        memcpy(S->note + sizeof S->note - 4, "...", 4);
    sla_status st = sla__solver_setup_pcs(ctx, S);
    if (st != SLA_ERR_NOT_SPD || !S->auto_amg) return st;
    /* saamg found A indefinite (a nonpositive diagonal on a coarse level):
     * LU when a backend has it and the factors fit, else MINRES */
    char reason[120];
    snprintf(reason, sizeof reason, "%s", sla_ctx_message(ctx));
    sla__solver_free_pcs(S);
    S->opts.precond = SLA_PRECOND_NONE;
    S->auto_amg = false;
    S->kry_budget = 0;
    S->kry_predicted = 0.0;
    sla_method lu = sla__solver_backend_for(SLA_METHOD_LU) ? SLA_METHOD_LU : SLA_METHOD_SUPERLU;
    if (sla__solver_backend_for(lu) && !(st = sla__solver_direct_analyze(ctx, S, lu))) {
        char what[200];
        if (!sla__solver_direct_fits(S))
            st = sla__error(ctx, SLA_ERR_NOMEM, "lu factors would need %.2f GB",
                            1e-9 * S->dstats.bytes * (double)S->A->nbatch);
        else if (!(st = sla__auto_factor(ctx, S, what, sizeof what))) {
            snprintf(S->note, sizeof S->note, "auto: cg + saamg refused (%.100s); fell back to lu (%s)%s%.100s",
                     reason, S->dops->name, what[0] ? "; " : "", what);
            return SLA_OK;
        }
    }
    if (st == SLA_ERR_NOMEM || st == SLA_ERR_UNAVAILABLE || !sla__solver_backend_for(lu)) {
        sla__solver_free_direct(S);
        S->method = SLA_METHOD_MINRES;
        snprintf(S->note, sizeof S->note, "auto: cg + saamg refused (%.100s); fell back to minres", reason);
        return sla__solver_setup_pcs(ctx, S);
    }
    return st;
}

/* method=auto's switch from a Krylov method (that ran past its budget, or
 * converged suspiciously late) to the direct method, with the same
 * fallbacks as auto_setup. *switched is false when the factors do not fit:
 * the caller then keeps the Krylov method, without budget. why: what
 * prompted the switch, for the note. */
sla_status sla__auto_switch_to_direct(sla_ctx *ctx, sla_solver *S, const char *why, bool *switched)
{
    double t0 = sla__now();
    sla_method km = S->method, dm = S->fallback_dm;
    *switched = false;
    S->kry_budget = 0;
    S->kry_predicted = 0.0;
    sla_status st = sla__solver_direct_analyze(ctx, S, dm);
    if (st) return st;
    if (!sla__solver_direct_fits(S)) {
        sla__solver_free_direct(S);
        S->method = km;
        return SLA_OK;
    }
    char what[200];
    st = sla__auto_factor(ctx, S, what, sizeof what);
    if (st) {
        sla__solver_free_direct(S);
        S->method = km;
        return st;
    }
    sla__solver_free_pcs(S);
    if (S->auto_amg) { /* the preconditioner was auto's choice too */
        S->opts.precond = SLA_PRECOND_NONE;
        S->auto_amg = false;
    }
    S->setup_seconds += sla__now() - t0;
    char old[sizeof S->note];
    snprintf(old, sizeof old, "%s", S->note);
    sla__solver_set_note(S, "auto: %s %s, switched to %s (%s)%s%.80s; was: %s",
             sla_method_name(km), why, sla_method_name(S->method), S->dops->name, what[0] ? "; " : "",
             what, old);
    *switched = true;
    return SLA_OK;
}


/* Drop what method=auto decided (factors, preconditioners, its own
 * preconditioner choice and Krylov budget), for a fresh dispatch. */
void sla__auto_reset(sla_solver *S)
{
    sla__solver_free_pcs(S);
    sla__solver_free_direct(S);
    if (S->auto_amg) {
        S->opts.precond = SLA_PRECOND_NONE;
        S->auto_amg = false;
    }
    S->kry_budget = 0;
    S->kry_predicted = 0.0;
}


/* Whether a serial Krylov solve chosen by prediction should switch to the
 * direct method: it passed its iteration budget, or it converged only
 * after SLA_AUTO_SUSPECT_FACTOR times its predicted iterations (+ 20). */
bool sla__auto_switch_due(const sla_solver *S, sla_status st, const sla_solve_info *info, char *why,
                          size_t len)
{
    if (S->kry_budget <= 0 || S->dops) return false;
    if (st == SLA_NOT_CONVERGED && info->reason == SLA_DIVERGED_MAXITER) {
        snprintf(why, len, "passed its budget of %lld iterations", (long long)info->iterations);
        return true;
    }
    if (st == SLA_OK && (double)info->iterations > SLA_AUTO_SUSPECT_FACTOR * S->kry_predicted + 20.0) {
        snprintf(why, len, "converged only after %lld iterations (%.0f predicted)",
                 (long long)info->iterations, S->kry_predicted);
        return true;
    }
    return false;
}
