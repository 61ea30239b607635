/* The solver object: method dispatch, per-value-array preconditioners,
 * forward and transposed solves, the solve VJP, batches and lists. */
#include "direct.h"
#include "krylov.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sla_solver {
    sla_allocator alloc;
    const sla_matrix *A;
    sla_solver_options opts;
    sla_method method;     /* after auto dispatch */
    bool symmetric;        /* every value array exactly symmetric: A^T = A */
    bool pos_diag;         /* every value array has a positive diagonal */
    sla__pc **pc;          /* Krylov: one preconditioner per value array */
    const sla__direct_ops *dops; /* direct: the backend, NULL for Krylov */
    void *sym;             /* direct: symbolic analysis, one per pattern */
    void **num;            /* direct: one numeric factorization per value array */
    sla__direct_stats dstats;
    double setup_seconds;
    /* method=auto chose Krylov by prediction: an iteration budget after
     * which a serial solve switches to the direct method fallback_dm
     * (0: no budget). */
    sla_int kry_budget;
    double kry_predicted;  /* its predicted iteration count (0: not predicted) */
    sla_method fallback_dm;
    bool auto_amg;         /* auto chose CG + saamg (opts.precond set by auto) */
    char note[256];
    /* Krylov methods and their preconditioners see K: A itself, or eq_mat,
     * A with rows and columns scaled by powers of two (opts.equilibrate):
     * K = Dr A Dc, with eq_r = diag(Dr), eq_c = diag(Dc), nbatch * n each
     * (eq_c == eq_r for symmetric A: K = D A D). */
    const sla_matrix *K;
    bool eq_on;
    sla_matrix eq_mat;
    double *eq_vals, *eq_r, *eq_c;
};

/* S's note, formatted; truncated to its size (notes are for people). */
static void set_note(sla_solver *S, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_note(sla_solver *S, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(S->note, sizeof S->note, fmt, ap);
    va_end(ap);
}

/* Kind and backend from the method registry (methods.c). */
#include "methods.h"

static bool is_direct(sla_method m)
{
    const sla__method_entry *e = sla__method_find(m);
    return e && e->desc.kind == SLA_KIND_DIRECT;
}

static const sla__direct_ops *backend_for(sla_method m)
{
    const sla__method_entry *e = sla__method_find(m);
    return e && e->backend ? e->backend() : NULL;
}

bool sla_method_available(sla_method m) { return !is_direct(m) || backend_for(m) != NULL; }

/* Bytes of memory available now (MemAvailable on Linux), or 0 if unknown. */
static double available_memory(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    double kb = 0.0;
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
        fclose(f);
    }
    if (kb > 0.0) return kb * 1024.0;
    long pages = sysconf(_SC_AVPHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    return (pages > 0 && psize > 0) ? (double)pages * (double)psize : 0.0;
}

static double memory_limit(const sla_solver *S)
{
    if (S->opts.memory_limit > 0.0) return S->opts.memory_limit;
    double avail = available_memory();
    return avail > 0.0 ? 0.5 * avail : INFINITY;
}

static void free_direct(sla_solver *S)
{
    if (S->num && S->dops)
        for (sla_int b = 0; b < S->A->nbatch; b++) {
            if (S->num[b]) S->dops->free_num(S->num[b]);
            S->num[b] = NULL;
        }
    if (S->sym && S->dops) S->dops->free_sym(S->sym);
    S->sym = NULL;
    S->dops = NULL;
}

/* Ordering + symbolic factorization with the backend of method m. */
static sla_status direct_analyze(sla_ctx *ctx, sla_solver *S, sla_method m)
{
    const sla__direct_ops *d = backend_for(m);
    if (!d)
        return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                          "method %s is not available in this build: its library was not found "
                          "when sla was configured (install libsuitesparse-dev / libsuperlu-dev "
                          "and reconfigure)",
                          sla_method_name(m));
    if (!S->num) {
        S->num = sla__calloc(&S->alloc, (size_t)S->A->nbatch, sizeof *S->num);
        if (!S->num) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for factor handles");
    }
    sla__direct_opts o = {.ordering = S->opts.ordering, .ldlt = (m == SLA_METHOD_LDLT),
                          .nthreads = sla__threads(ctx)};
    memset(&S->dstats, 0, sizeof S->dstats);
    sla_status st = d->analyze(ctx, S->A, &o, &S->sym, &S->dstats);
    if (st) return st;
    if (S->dstats.bytes <= 0.0 && S->A->nrows > 0) {
        /* the backend cannot predict its fill: estimate it (a value and an
         * index per entry) so that memory_limit still applies */
        double lu = sla__fill_estimate(S->A, S->opts.ordering);
        if (lu > 0.0) S->dstats.bytes = lu * (sizeof(double) + sizeof(sla_int));
    }
    S->dops = d;
    S->method = m;
    return SLA_OK;
}

static bool direct_fits(const sla_solver *S)
{
    return S->dstats.bytes * (double)S->A->nbatch <= memory_limit(S);
}

typedef sla_status (*item_fn)(sla_ctx *lctx, void *job, sla_int i, int nt);
static sla_status run_items(sla_ctx *ctx, sla_int count, item_fn item, void *job);

static sla_status factor_item(sla_ctx *lctx, void *job, sla_int b, int nt)
{
    (void)nt;
    sla_solver *S = job;
    if (S->num[b]) S->dops->free_num(S->num[b]);
    S->num[b] = NULL;
    return S->dops->factor(lctx, S->sym, S->A, b, &S->num[b]);
}

/* One numeric factorization per value array, reusing the analysis; a
 * batch is factored in parallel (each factor is independent, the analysis
 * is only read). */
static sla_status direct_factor_all(sla_ctx *ctx, sla_solver *S)
{
    if (S->A->nbatch == 1) return factor_item(ctx, S, 0, sla__threads(ctx));
    return run_items(ctx, S->A->nbatch, factor_item, S);
}

/* An explicitly requested direct method: refuse what does not fit. */
static sla_status direct_setup(sla_ctx *ctx, sla_solver *S, sla_method m)
{
    sla_status st = direct_analyze(ctx, S, m);
    if (st) return st;
    if (!direct_fits(S))
        return sla__error(ctx, SLA_ERR_NOMEM,
                          "%s: the factorization needs about %.2f GB (%lld value arrays), more "
                          "than the limit of %.2f GB; use an iterative method or raise "
                          "memory_limit",
                          sla_method_name(m), 1e-9 * S->dstats.bytes * (double)S->A->nbatch,
                          (long long)S->A->nbatch, 1e-9 * memory_limit(S));
    return direct_factor_all(ctx, S);
}

static void free_pcs(sla_solver *S);
static sla_status setup_pcs(sla_ctx *ctx, sla_solver *S);

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
 * 2D/3D Poisson and anisotropic diffusion at 1e6-4e6, 2 threads): the set-up
 * cost 5e-8 to 1.2e-7 s per stored entry, an iteration (V-cycle + CG's
 * product and vectors) 5-6e-9 s per stored entry on 2 threads (about 1e-8
 * on one), 15-17 iterations at rtol 1e-8, growing slowly with n (20 at 1e8,
 * rtol 1e-6). It beat hypre's BoomerAMG on all four problems in one process
 * (0.68 against 1.29 s at 1M) with no MPI start-up, so auto prices saamg,
 * not precond=amg. Considered for one value array of a symmetric matrix
 * with a positive diagonal, the case it was measured on; its iteration count
 * is not predicted from the graph, so the same iteration budget as plain CG
 * switches a misjudged solve to the direct method. */
#define SLA_AUTO_AMG_SETUP_S_PER_NNZ 1.2e-7
#define SLA_AUTO_AMG_ITER_S_PER_NNZ 1.2e-8 /* one thread */
#define SLA_AUTO_AMG_ITERATIONS 18.0
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
    return its * bytes / (SLA_AUTO_KRYLOV_BYTES_PER_S * (double)(nt > 0 ? nt : 1));
}

/* Predicted seconds of an AMG set-up and `solves` CG + saamg solves of
 * `its` iterations each with nt threads. */
static double amg_seconds(const sla_solver *S, double its, double solves, int nt)
{
    double nnz = (double)S->A->nnz;
    return SLA_AUTO_AMG_SETUP_S_PER_NNZ * nnz +
           solves * its * SLA_AUTO_AMG_ITER_S_PER_NNZ * nnz / (double)(nt > 1 ? nt : 1);
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
    free_direct(S);
    sla_status st = direct_analyze(ctx, S, dm);
    if (st) return st;
    if (!direct_fits(S))
        return sla__error(ctx, SLA_ERR_NOMEM,
                          "%s: the factorization needs about %.2f GB, more than the limit of %.2f GB",
                          sla_method_name(dm), 1e-9 * S->dstats.bytes * (double)S->A->nbatch,
                          1e-9 * memory_limit(S));
    return direct_factor_all(ctx, S);
}

/* method=auto's factorization with its fallbacks, once the analysis of S's
 * current method succeeded: factor every value array; a trial Cholesky that
 * finds A not positive definite falls back to LU; an LU backend whose
 * pivot test finds A singular to working precision hands over to the next
 * one in lu_chain, so that nothing LU with partial pivoting factors is
 * refused. The note gets the fallbacks taken (`what`, len bytes). Exact
 * singularity that every backend meets (a structurally or exactly zero
 * pivot) stays SLA_ERR_SINGULAR with "singular" in the message. */
static sla_status auto_factor(sla_ctx *ctx, sla_solver *S, char *what, size_t len)
{
    what[0] = '\0';
    sla_method dm = S->method;
    sla_status st = direct_factor_all(ctx, S);
    size_t used = 0;
    if (st == SLA_ERR_NOT_SPD && dm == SLA_METHOD_CHOLESKY) {
        dm = backend_for(SLA_METHOD_LU) ? SLA_METHOD_LU : SLA_METHOD_SUPERLU;
        if (!backend_for(dm)) return st;
        used += (size_t)snprintf(what, len, "trial cholesky failed (%.100s); fell back to lu",
                                 sla_ctx_message(ctx));
        st = auto_try(ctx, S, dm);
    }
    int pos = lu_chain_pos(dm);
    bool chained = false;
    while (st == SLA_ERR_SINGULAR && S->dops) { /* numerical: the analysis went through */
        int next = pos + 1;
        while (next < LU_CHAIN_LEN && !backend_for(lu_chain[next])) next++;
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
static sla_status auto_setup(sla_ctx *ctx, sla_solver *S)
{
    sla_method dm = (S->symmetric && S->pos_diag) ? SLA_METHOD_CHOLESKY : SLA_METHOD_LU;
    if (dm == SLA_METHOD_LU && (double)S->A->nnz < SLA_AUTO_KLU_MAX_NNZ && backend_for(SLA_METHOD_KLU))
        dm = SLA_METHOD_KLU;
    if (dm == SLA_METHOD_LU && !backend_for(dm) && backend_for(SLA_METHOD_SUPERLU)) dm = SLA_METHOD_SUPERLU;
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
    } else if (!backend_for(dm)) {
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
        if ((st = direct_analyze(ctx, S, dm))) return st;
        t_dir = direct_seconds(S, dm, E, nt);
        double t_cheap = direct_seconds_at(S, dm, E, nt, SLA_AUTO_SMALL_FLOP_RATE);
        if (!direct_fits(S)) {
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
            st = auto_factor(ctx, S, what, sizeof what);
            if (st) return st;
            char rule[96];
            if (t_dir > t_kry)
                snprintf(rule, sizeof rule, "accuracy first: factorization predicted under %g s",
                         S->opts.auto_direct_seconds);
            else
                snprintf(rule, sizeof rule, "%.3g s vs %s %.3g s", t_dir, kname, t_kry);
            if (what[0])
                set_note(S, "auto: %s; %s; %s", why, what, rule);
            else
                set_note(S, "auto: %s -> %s (%s, %.3g flops predicted; %s)", why,
                         sla_method_name(S->method), S->dops->name, S->dstats.flops, rule);
            return SLA_OK;
        }
        free_direct(S);
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
    snprintf(S->note, sizeof S->note, "auto: %s; %.120s -> %s%s", why, msg,
             S->auto_amg ? "cg + saamg" : sla_method_name(S->method), budget);
    sla_status st = setup_pcs(ctx, S);
    if (st != SLA_ERR_NOT_SPD || !S->auto_amg) return st;
    /* saamg found A indefinite (a nonpositive diagonal on a coarse level):
     * LU when a backend has it and the factors fit, else MINRES */
    char reason[120];
    snprintf(reason, sizeof reason, "%s", sla_ctx_message(ctx));
    free_pcs(S);
    S->opts.precond = SLA_PRECOND_NONE;
    S->auto_amg = false;
    S->kry_budget = 0;
    S->kry_predicted = 0.0;
    sla_method lu = backend_for(SLA_METHOD_LU) ? SLA_METHOD_LU : SLA_METHOD_SUPERLU;
    if (backend_for(lu) && !(st = direct_analyze(ctx, S, lu))) {
        char what[200];
        if (!direct_fits(S))
            st = sla__error(ctx, SLA_ERR_NOMEM, "lu factors would need %.2f GB",
                            1e-9 * S->dstats.bytes * (double)S->A->nbatch);
        else if (!(st = auto_factor(ctx, S, what, sizeof what))) {
            snprintf(S->note, sizeof S->note, "auto: cg + saamg refused (%.100s); fell back to lu (%s)%s%.100s",
                     reason, S->dops->name, what[0] ? "; " : "", what);
            return SLA_OK;
        }
    }
    if (st == SLA_ERR_NOMEM || st == SLA_ERR_UNAVAILABLE || !backend_for(lu)) {
        free_direct(S);
        S->method = SLA_METHOD_MINRES;
        snprintf(S->note, sizeof S->note, "auto: cg + saamg refused (%.100s); fell back to minres", reason);
        return setup_pcs(ctx, S);
    }
    return st;
}

/* method=auto's switch from a Krylov method (that ran past its budget, or
 * converged suspiciously late) to the direct method, with the same
 * fallbacks as auto_setup. *switched is false when the factors do not fit:
 * the caller then keeps the Krylov method, without budget. why: what
 * prompted the switch, for the note. */
static sla_status auto_switch_to_direct(sla_ctx *ctx, sla_solver *S, const char *why, bool *switched)
{
    double t0 = sla__now();
    sla_method km = S->method, dm = S->fallback_dm;
    *switched = false;
    S->kry_budget = 0;
    S->kry_predicted = 0.0;
    sla_status st = direct_analyze(ctx, S, dm);
    if (st) return st;
    if (!direct_fits(S)) {
        free_direct(S);
        S->method = km;
        return SLA_OK;
    }
    char what[200];
    st = auto_factor(ctx, S, what, sizeof what);
    if (st) {
        free_direct(S);
        S->method = km;
        return st;
    }
    free_pcs(S);
    if (S->auto_amg) { /* the preconditioner was auto's choice too */
        S->opts.precond = SLA_PRECOND_NONE;
        S->auto_amg = false;
    }
    S->setup_seconds += sla__now() - t0;
    char old[sizeof S->note];
    snprintf(old, sizeof old, "%s", S->note);
    set_note(S, "auto: %s %s, switched to %s (%s)%s%.80s; was: %s",
             sla_method_name(km), why, sla_method_name(S->method), S->dops->name, what[0] ? "; " : "",
             what, old);
    *switched = true;
    return SLA_OK;
}

/* Structure of every value array: exact symmetry (A^T = A lets transposed
 * solves reuse A) and a positive diagonal. O(nnz). */
static sla_status structure(sla_ctx *ctx, const sla_matrix *A, bool *sym, bool *pdiag, double *symerr)
{
    *sym = *pdiag = true;
    double worst = 0.0;
    for (sla_int b = 0; b < A->nbatch; b++) {
        sla_matrix_props pr;
        sla_status st = sla_matrix_properties(ctx, A, b, 0.0, &pr);
        if (st) return st;
        *sym = *sym && pr.symmetric && pr.structurally_symmetric;
        *pdiag = *pdiag && pr.positive_diagonal;
        if (!(pr.symmetry_error <= worst)) worst = pr.symmetry_error;
    }
    if (symerr) *symerr = worst;
    return SLA_OK;
}

/* Cholesky and LDL^T factor one triangle: an explicit request for them on
 * a matrix that is not symmetric (to SLA_SYM_TOL relative to max |a|)
 * would silently solve with a different matrix, so it is refused. */
#define SLA_SYM_TOL 1e-12

static sla_status check_symmetric_method(sla_ctx *ctx, sla_method m, double symerr)
{
    if ((m == SLA_METHOD_CHOLESKY || m == SLA_METHOD_LDLT) && !(symerr <= SLA_SYM_TOL))
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "method %s needs a symmetric matrix, and this one is not symmetric "
                          "(max |a_ij - a_ji| / max |a| = %.3g > %g); use method lu or a Krylov method",
                          sla_method_name(m), symerr, SLA_SYM_TOL);
    return SLA_OK;
}

/* Structure checks, then the method's set-up. */
static sla_status setup(sla_ctx *ctx, sla_solver *S)
{
    double symerr;
    sla_status st = structure(ctx, S->A, &S->symmetric, &S->pos_diag, &symerr);
    if (st) return st;
    if ((st = check_symmetric_method(ctx, S->opts.method, symerr))) return st;
    S->method = S->opts.method;
    S->note[0] = '\0';
    if (S->method == SLA_METHOD_AUTO) return auto_setup(ctx, S);
    if (is_direct(S->method)) return direct_setup(ctx, S, S->method);
    return setup_pcs(ctx, S);
}

/* ---- equilibration (opts.equilibrate) -------------------------------- */

/* Entries or row maxima beyond these make method=auto's equilibration
 * (SLA_EQUILIBRATE_AUTO) scale the matrix: Krylov vectors and their dot
 * products then stay far from overflow and underflow. */
#define SLA_EQ_BIG 0x1p300
#define SLA_EQ_SMALL 0x1p-300
#define SLA_EQ_SPREAD 0x1p200

static void free_equilibration(sla_solver *S)
{
    sla__free(&S->alloc, S->eq_vals);
    sla__free(&S->alloc, S->eq_r);
    S->eq_vals = S->eq_r = S->eq_c = NULL;
    S->eq_on = false;
    S->K = S->A;
}

/* 2^-floor(log2 |v|) rounded to the exponent (1 for v == 0): v times it lies in [0.5, 1). */
static double pow2_inverse(double v, bool half)
{
    if (!(v > 0.0) || !isfinite(v)) return 1.0;
    int e;
    frexp(v, &e);
    if (half) e = e >= 0 ? e / 2 : -((1 - e) / 2); /* floor(e / 2) */
    if (e < -1020) e = -1020; /* 2^-e stays finite (a subnormal |v|) */
    return ldexp(1.0, -e);
}

/* Decide and build K for the current values of A: LAPACK dgeequb-style
 * scaling by powers of two (exact: scaling a uniformly scaled matrix gives
 * back the unscaled one bit for bit). Nonsymmetric: rows to maximum ~1,
 * then columns. Symmetric: D A D with d_i = 2^-floor(e_i / 2), e_i the
 * exponent of row i's largest entry, so CG and MINRES still apply. */
static sla_status equilibrate(sla_ctx *ctx, sla_solver *S)
{
    const sla_matrix *A = S->A;
    sla_int n = A->nrows, nnz = A->nnz, B = A->nbatch;
    S->K = A;
    S->eq_on = false;
    if (S->opts.equilibrate == SLA_EQUILIBRATE_OFF || n == 0) {
        free_equilibration(S);
        return SLA_OK;
    }
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    double gmax = 0.0, gmin = INFINITY; /* largest and smallest nonzero row maximum */
    for (sla_int b = 0; b < B; b++)
        for (sla_int i = 0; i < n; i++) {
            double m = 0.0;
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) {
                double a = fabs(sla__val(A, b, p));
                if (a > m) m = a;
            }
            if (m > gmax) gmax = m;
            if (m > 0.0 && m < gmin) gmin = m;
        }
    bool spread = gmax > SLA_EQ_SPREAD * gmin;
    bool need = S->opts.equilibrate == SLA_EQUILIBRATE_ON ||
                (gmax > 0.0 && (gmax > SLA_EQ_BIG || gmin < SLA_EQ_SMALL || spread));
    /* auto, for magnitude alone (row maxima within 2^200 of each other): one
     * power of two for the whole matrix, which keeps the iteration exactly
     * that of the unscaled matrix (only scaled) */
    bool uniform = S->opts.equilibrate == SLA_EQUILIBRATE_AUTO && !spread;
    if (!need) {
        free_equilibration(S);
        return SLA_OK;
    }
    if (!S->eq_r) {
        S->eq_r = sla__malloc(&S->alloc, (size_t)B * (size_t)n, 2 * sizeof(double));
        if (!S->eq_r) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the equilibration scales");
        S->eq_c = S->eq_r + (size_t)B * (size_t)n;
    }
    if (!S->eq_vals) {
        S->eq_vals = sla__malloc(&S->alloc, (size_t)B * (size_t)nnz, sizeof(double));
        if (!S->eq_vals) {
            free_equilibration(S);
            return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the equilibrated matrix (%lld values)",
                              (long long)(B * nnz));
        }
    }
    for (sla_int b = 0; b < B; b++) {
        double *r = S->eq_r + b * n, *c = S->eq_c + b * n, *v = S->eq_vals + b * nnz;
        if (uniform) {
            double u = pow2_inverse(gmax, S->symmetric);
            for (sla_int i = 0; i < n; i++) r[i] = u;
        } else {
            for (sla_int i = 0; i < n; i++) {
                double m = 0.0;
                for (sla_int p = rp[i]; p < rp[i + 1]; p++) m = fmax(m, fabs(sla__val(A, b, p)));
                r[i] = pow2_inverse(m, S->symmetric);
            }
        }
        if (S->symmetric) {
            memcpy(c, r, (size_t)n * sizeof *c);
        } else if (uniform) {
            for (sla_int j = 0; j < n; j++) c[j] = 1.0;
        } else {
            for (sla_int j = 0; j < n; j++) c[j] = 0.0;
            for (sla_int i = 0; i < n; i++)
                for (sla_int p = rp[i]; p < rp[i + 1]; p++)
                    c[ci[p]] = fmax(c[ci[p]], fabs(sla__val(A, b, p)) * r[i]);
            for (sla_int j = 0; j < n; j++) c[j] = pow2_inverse(c[j], false);
        }
        for (sla_int i = 0; i < n; i++)
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) v[p] = sla__val(A, b, p) * r[i] * c[ci[p]];
    }
    S->eq_mat = *A;
    S->eq_mat.dtype = SLA_F64;
    S->eq_mat.values = S->eq_vals;
    S->eq_mat.own_rowptr = S->eq_mat.own_values = false;
    S->K = &S->eq_mat;
    S->eq_on = true;
    return SLA_OK;
}

static void free_pcs(sla_solver *S)
{
    if (!S->pc) return;
    for (sla_int b = 0; b < S->A->nbatch; b++) sla__pc_destroy(&S->pc[b]);
}

/* Krylov set-up for the current values: equilibration, then the
 * preconditioners, built on the matrix the methods see (K). */
static sla_status setup_pcs(sla_ctx *ctx, sla_solver *S)
{
    sla_status st0 = equilibrate(ctx, S);
    if (st0) return st0;
    for (sla_int b = 0; b < S->A->nbatch; b++) {
        sla_status st;
        if (S->pc[b] && S->pc[b]->refresh) { /* reuse what the values do not change */
            st = S->pc[b]->refresh(ctx, S->pc[b], S->K, b);
        } else {
            sla__pc_destroy(&S->pc[b]);
            st = sla__pc_create(ctx, S->opts.precond, S->K, b, &S->opts, &S->pc[b]);
        }
        if (st) {
            if (S->A->nbatch > 1)
                sla__error(ctx, st, "%s (value array %lld)", sla_ctx_message(ctx), (long long)b);
            return st;
        }
    }
    return SLA_OK;
}

static sla_status check_options(sla_ctx *ctx, const sla_solver_options *o)
{
    if (!sla__method_find(o->method))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown method %d", (int)o->method);
    if (!sla__precond_find(o->precond))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown preconditioner %d", (int)o->precond);
    if (!(o->rtol >= 0.0) || !(o->atol >= 0.0) || !isfinite(o->rtol) || !isfinite(o->atol))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "rtol and atol must be finite and >= 0 (got %g, %g)",
                          o->rtol, o->atol);
    if (o->maxiter < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "maxiter must be >= 0 (got %lld)", (long long)o->maxiter);
    if ((int)o->ordering < SLA_ORDER_AUTO || (int)o->ordering > SLA_ORDER_NATURAL)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown ordering %d", (int)o->ordering);
    if (!(o->memory_limit >= 0.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "memory_limit must be >= 0");
    if (o->restart < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "restart must be >= 0 (got %d)", o->restart);
    if (o->auto_solves < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "auto_solves must be >= 0 (got %d)", o->auto_solves);
    if (!(o->auto_direct_seconds >= 0.0) || !isfinite(o->auto_direct_seconds))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "auto_direct_seconds must be finite and >= 0 (got %g)",
                          o->auto_direct_seconds);
    if (o->saamg_reuse < 0 || o->saamg_reuse > 2)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "saamg_reuse must be 0, 1 or 2 (got %d)", o->saamg_reuse);
    if (!(o->max_seconds >= 0.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "max_seconds must be >= 0 (got %g)", o->max_seconds);
    if (o->equilibrate < SLA_EQUILIBRATE_AUTO || o->equilibrate > SLA_EQUILIBRATE_OFF)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown equilibrate setting %d (auto 0, on 1, off 2)",
                          o->equilibrate);
    return SLA_OK;
}

sla_status sla_solver_create(sla_ctx *ctx, const sla_matrix *A, const sla_solver_options *opts,
                             sla_solver **out)
{
    if (!out) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_create: out is NULL");
    *out = NULL;
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_create: A is NULL");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "cannot solve with a non-square %lld x %lld matrix",
                          (long long)A->nrows, (long long)A->ncols);
    sla_solver_options o;
    if (opts) o = *opts;
    else sla_solver_options_default(&o);
    sla_status st = check_options(ctx, &o);
    if (st) return st;
    if ((st = sla_matrix_check_values(ctx, A, -1))) return st;

    double t0 = sla__now();
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_solver *S = sla__calloc(&a, 1, sizeof *S);
    if (!S) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for a solver");
    S->alloc = a;
    S->A = A;
    S->K = A;
    S->opts = o;
    if (S->opts.maxiter == 0) S->opts.maxiter = A->nrows * 10 > 1000 ? A->nrows * 10 : 1000;
    S->pc = sla__calloc(&a, (size_t)A->nbatch, sizeof *S->pc);
    if (!S->pc) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory for %lld preconditioners", (long long)A->nbatch);
        goto fail;
    }
    if ((st = setup(ctx, S))) goto fail;
    S->setup_seconds = sla__now() - t0;
    *out = S;
    return sla__ok(ctx, SLA_OK);
fail:
    sla_solver_destroy(&S);
    return st;
}

/* Drop what method=auto decided (factors, preconditioners, its own
 * preconditioner choice and Krylov budget), for a fresh dispatch. */
static void auto_reset(sla_solver *S)
{
    free_pcs(S);
    free_direct(S);
    if (S->auto_amg) {
        S->opts.precond = SLA_PRECOND_NONE;
        S->auto_amg = false;
    }
    S->kry_budget = 0;
    S->kry_predicted = 0.0;
}

/* New values, same pattern. The structure that the set-up assumed
 * (symmetry, which lets transposed solves and VJPs reuse A; the positive
 * diagonal) is checked again, O(nnz). method=auto re-dispatches when it
 * changed, or when the values it chose for no longer suit its choice (a
 * Cholesky that meets an indefinite matrix, a singular factor, saamg on
 * an indefinite matrix); an explicit method keeps its choice and only
 * updates how it applies A^T. The note says what happened. */
sla_status sla_solver_refresh(sla_ctx *ctx, sla_solver *S)
{
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_refresh: S is NULL");
    double t0 = sla__now();
    sla_status st = sla_matrix_check_values(ctx, S->A, -1);
    if (st) return st;
    bool sym, pdiag;
    double symerr;
    if ((st = structure(ctx, S->A, &sym, &pdiag, &symerr))) return st;
    if (S->opts.method != SLA_METHOD_AUTO && (st = check_symmetric_method(ctx, S->method, symerr)))
        return st;
    bool changed = sym != S->symmetric || pdiag != S->pos_diag;
    char change[96] = "";
    if (changed)
        snprintf(change, sizeof change, "refresh: values now %s%s", sym ? "symmetric" : "nonsymmetric",
                 sym ? (pdiag ? ", positive diagonal" : ", diagonal not positive") : "");
    S->symmetric = sym;
    S->pos_diag = pdiag;
    if (S->opts.method != SLA_METHOD_AUTO) {
        if (changed) set_note(S, "%s (an explicit %s is kept)", change, sla_method_name(S->method));
        st = S->dops ? direct_factor_all(ctx, S) /* same ordering, new numbers */
                     : setup_pcs(ctx, S);
        if (st) return st;
        S->setup_seconds = sla__now() - t0;
        return sla__ok(ctx, SLA_OK);
    }
    if (!changed) { /* the same choice, new numbers; fallbacks as at set-up */
        char what[200] = "";
        st = S->dops ? auto_factor(ctx, S, what, sizeof what) : setup_pcs(ctx, S);
        if (st == SLA_OK) {
            if (what[0]) set_note(S, "auto: refresh: %s", what);
            S->setup_seconds = sla__now() - t0;
            return sla__ok(ctx, SLA_OK);
        }
        if (st == SLA_ERR_NOMEM || st == SLA_ERR_SINGULAR) return st;
        snprintf(change, sizeof change, "refresh: %.80s", sla_ctx_message(ctx));
    }
    auto_reset(S); /* a fresh dispatch for the new values */
    S->method = SLA_METHOD_AUTO;
    if ((st = auto_setup(ctx, S))) return st;
    char old[sizeof S->note];
    snprintf(old, sizeof old, "%s", S->note);
    set_note(S, "%s; re-dispatched: %s", change, old);
    S->setup_seconds = sla__now() - t0;
    return sla__ok(ctx, SLA_OK);
}

void sla_solver_destroy(sla_solver **S)
{
    if (!S || !*S) return;
    sla_solver *s = *S;
    sla_allocator a = s->alloc;
    free_pcs(s);
    free_direct(s);
    free_equilibration(s);
    sla__free(&a, s->num);
    sla__free(&a, s->pc);
    sla__free(&a, s);
    *S = NULL;
}

size_t sla_solve_info_size(void) { return sizeof(sla_solve_info); }

sla_method sla_solver_method(const sla_solver *S) { return S ? S->method : SLA_METHOD_AUTO; }
double sla_solver_setup_seconds(const sla_solver *S) { return S ? S->setup_seconds : 0.0; }

static void info_init(const sla_solver *S, sla_method m, sla_solve_info *info)
{
    memset(info, 0, sizeof *info);
    snprintf(info->method, sizeof info->method, "%s", sla_method_name(m));
    snprintf(info->precond, sizeof info->precond, "%s", sla_precond_name(S->opts.precond));
    snprintf(info->backend, sizeof info->backend, "%s", S->dops ? S->dops->name : "krylov");
    snprintf(info->note, sizeof info->note, "%s", S->note);
    if (S->dops) {
        info->factor_nnz = S->dstats.factor_nnz;
        snprintf(info->ordering, sizeof info->ordering, "%s", S->dstats.ordering);
    }
    info->setup_seconds = S->setup_seconds;
    info->rcond = -1.0;
    info->backward_error = -1.0;
}

/* The preconditioner's set-up note (shifted ILU/IC pivots) after the solver's. */
static void pc_note(const sla_solver *S, sla_int ib, sla_solve_info *info)
{
    const sla__pc *pc = S->pc ? S->pc[ib] : NULL;
    if (!pc || !pc->note[0]) return;
    size_t len = strlen(info->note);
    snprintf(info->note + len, sizeof info->note - len, "%s%s", len ? "; " : "", pc->note);
}

/* Below this reciprocal condition estimate a direct solve warns in its
 * note (and below n eps, when that is larger: the forward error may then
 * be of order 1). */
#define SLA_RCOND_WARN 1e-12

/* The factor's condition estimate into the report, with a warning when
 * the matrix is nearly singular. */
static void direct_rcond(const sla_solver *S, sla_int ib, sla_solve_info *info)
{
    double rc = S->dops->rcond ? S->dops->rcond(S->num[ib]) : -1.0;
    info->rcond = rc;
    double warn = fmax(SLA_RCOND_WARN, (double)S->A->nrows * DBL_EPSILON);
    if (rc >= 0.0 && rc < warn) {
        char old[sizeof info->note];
        snprintf(old, sizeof old, "%s", info->note);
        snprintf(info->note, sizeof info->note,
                 "warning: nearly singular, reciprocal condition estimate %.2e (%s)%s%.150s", rc,
                 S->dops->name, old[0] ? "; " : "", old);
    }
}

static sla_status check_vector(sla_ctx *ctx, sla_int n, const double *v, const char *what,
                               sla_int col)
{
    for (sla_int i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return sla__error(ctx, SLA_ERR_VALUE, "%s entry %lld (column %lld) is %g, not finite",
                              what, (long long)i, (long long)col, v[i]);
    return SLA_OK;
}

/* The componentwise (Oettli-Prager) backward error of x for A x = b
 * (A^T x = b when transpose) with residual r = b - A x:
 * max_i |r_i| / (|A| |x| + |b|)_i, a row with a zero denominator counting
 * only when its residual is not zero (then +inf). w: n doubles. */
static double backward_error(const sla_matrix *A, sla_int ib, bool transpose, const double *b,
                             const double *x, const double *r, double *w)
{
    sla_int n = A->nrows;
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    if (transpose) {
        for (sla_int i = 0; i < n; i++) w[i] = fabs(b[i]);
        for (sla_int i = 0; i < n; i++) {
            double xi = fabs(x[i]);
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) w[ci[p]] += fabs(sla__val(A, ib, p)) * xi;
        }
    } else {
        for (sla_int i = 0; i < n; i++) {
            double s = fabs(b[i]);
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) s += fabs(sla__val(A, ib, p)) * fabs(x[ci[p]]);
            w[i] = s;
        }
    }
    double berr = 0.0;
    for (sla_int i = 0; i < n; i++) {
        double ri = fabs(r[i]);
        if (ri == 0.0) continue;
        double e = w[i] > 0.0 ? ri / w[i] : INFINITY;
        if (!(e <= berr)) berr = e;
    }
    return berr;
}

/* Iterative refinement of a direct solve (LAPACK dgerfs's rule): steps
 * while the componentwise backward error is above eps, halved by the last
 * step, at most this many. */
#define SLA_REFINE_MAX_STEPS 5

/* A direct solve with the factor of value array ib, then iterative
 * refinement with the same factor, residuals in working precision, as
 * LAPACK's expert drivers do: x += A^-1 (b - A x) while the componentwise
 * backward error is above eps and the previous step at least halved it
 * (at most SLA_REFINE_MAX_STEPS; a step that makes it worse is undone).
 * The report holds the true residual, the backward error and rcond. */
static sla_status direct_solve(sla_ctx *ctx, const sla_solver *S, sla_int ib, bool transpose,
                               const double *b, double *x, sla_solve_info *info, int nt)
{
    const sla_matrix *A = S->A;
    sla_int n = A->nrows;
    sla_allocator al = sla__ctx_alloc(ctx);
    double *r = sla__malloc(&al, (size_t)n, 4 * sizeof(double));
    if (!r) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the residual check");
    double *dx = r + n, *xs = r + 2 * n, *w = r + 3 * n;
    sla__matop m = {.A = A, .ib = ib, .transpose = transpose && !S->symmetric};
    sla__op op;
    sla__matop_init(&op, &m, nt);
    sla__kopts ko = {.rtol = S->opts.rtol, .atol = S->opts.atol};
    double bnorm = sla__nrm2(n, b, nt);
    sla_status st = S->dops->solve(ctx, S->sym, S->num[ib], transpose, 1, b, n, x, n);
    double rn = 0.0, berr = 0.0;
    if (!st) {
        rn = sla__true_residual(&op, b, x, r);
        berr = backward_error(A, ib, m.transpose, b, x, r, w);
    }
    sla_int steps = 0;
    while (!st && berr > DBL_EPSILON && steps < SLA_REFINE_MAX_STEPS) {
        if ((st = S->dops->solve(ctx, S->sym, S->num[ib], transpose, 1, r, n, dx, n))) break;
        sla__copy(n, x, xs);
        sla__axpy(n, 1.0, dx, x, nt); /* x += A^-1 (b - A x) */
        steps++;
        double rn_new = sla__true_residual(&op, b, x, dx);
        double berr_new = backward_error(A, ib, m.transpose, b, x, dx, w);
        if (!(berr_new < berr) && !(berr_new == berr && rn_new < rn)) {
            sla__copy(n, xs, x); /* no progress: keep the better iterate */
            break;
        }
        bool halved = berr_new <= 0.5 * berr;
        rn = rn_new;
        berr = berr_new;
        sla__copy(n, dx, r);
        if (!halved) break;
    }
    sla__free(&al, r);
    if (st) return st;
    sla__kinfo_finish(info, steps, rn, bnorm, &ko, SLA_DIVERGED_ACCURACY);
    info->backward_error = berr;
    direct_rcond(S, ib, info);
    return info->converged ? SLA_OK : SLA_NOT_CONVERGED;
}

/* One solve of A_ib x = b (or A_ib^T x = b) with nt threads; a Krylov
 * method stops after `budget` iterations when budget > 0. */
static sla_status solve_one(sla_ctx *ctx, const sla_solver *S, sla_int ib, bool transpose,
                            const double *b, double *x, bool use_x0, sla_solve_info *info, int nt,
                            sla_int budget)
{
    const sla_matrix *A = S->A;
    sla_int n = A->nrows;
    info_init(S, S->method, info);
    if (!S->dops) pc_note(S, ib, info);
    sla_status st = check_vector(ctx, n, b, "right-hand side", 0);
    if (st) return st;
    if (use_x0 && (st = check_vector(ctx, n, x, "initial guess", 0))) return st;
    double t0 = sla__now();
    if (S->dops) {
        st = direct_solve(ctx, S, ib, transpose, b, x, info, nt);
        info->solve_seconds = sla__now() - t0;
        if (st == SLA_NOT_CONVERGED)
            sla__error(ctx, st, "%s: residual %.3e above tolerance after %lld refinement steps "
                       "(ill-conditioned matrix)", info->method, info->residual,
                       (long long)info->iterations);
        return st;
    }

    if (transpose && !S->symmetric && S->opts.precond == SLA_PRECOND_SAAMG)
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "precond saamg has no transposed cycle for a nonsymmetric matrix "
                          "(adjoint or transposed solves): use precond amg, ilu0 or jacobi");
    bool tr = transpose && !S->symmetric;
    sla__matop m = {.A = S->K, .AT = NULL, .ib = ib, .transpose = tr, .work = NULL};
    sla_allocator al = sla__ctx_alloc(ctx);
    /* Scale safety: the method solves K y = 2^s Dr b (K^T y = 2^s Dc b when
     * transposed), x = 2^-s Dc y (2^-s Dr y), with 2^s bringing the largest
     * entry of the scaled right-hand side near 1 when it is far from it, so
     * that no Krylov vector or dot product overflows or underflows. Powers
     * of two: exact. */
    const double *sb = NULL, *sx = NULL; /* row and column scales, or NULL */
    if (S->eq_on) {
        sb = (transpose ? S->eq_c : S->eq_r) + ib * n;
        sx = (transpose ? S->eq_r : S->eq_c) + ib * n;
    }
    /* exponents: the scales are powers of two, so b_i sb_i = 2^(eb_i + es_i) m_i
     * exactly, and one ldexp per entry applies both without an
     * intermediate overflow */
    int sexp = 0;
    {
        int emax = INT_MIN;
        if (!sb) { /* the common case: one vectorized pass */
            double bmax = sla__amax(n, b, nt);
            if (bmax > 0.0) emax = ilogb(bmax);
        } else {
            for (sla_int i = 0; i < n; i++)
                if (b[i] != 0.0) {
                    int e = ilogb(b[i]) + ilogb(sb[i]);
                    if (e > emax) emax = e;
                }
        }
        if (emax != INT_MIN && (emax > 64 || emax < -64 || sb)) sexp = -emax;
    }
    bool scaled = sb || sexp != 0;
    double *bs = NULL, *ys = NULL;
    if (scaled || (tr && nt > 1)) {
        size_t extra = tr && nt > 1 ? (size_t)nt * (size_t)n : 0;
        bs = sla__malloc(&al, (size_t)(scaled ? 2 : 0) * (size_t)n + extra, sizeof(double));
        if (!bs) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for a scaled or transposed solve");
        if (scaled) ys = bs + n;
        if (extra) m.work = bs + (scaled ? 2 * (size_t)n : 0);
    }
    double umin = 1.0; /* smallest row scale: atol holds for the unscaled residual */
    if (scaled) {
        for (sla_int i = 0; i < n; i++) {
            bs[i] = ldexp(b[i], sexp + (sb ? ilogb(sb[i]) : 0));
            if (use_x0) ys[i] = ldexp(x[i], sexp - (sx ? ilogb(sx[i]) : 0));
        }
        if (sb) {
            umin = INFINITY;
            for (sla_int i = 0; i < n; i++) umin = fmin(umin, sb[i]);
        }
    }
    const double *bk = scaled ? bs : b;
    double *xk = scaled ? ys : x;
    sla__op op;
    sla__matop_init(&op, &m, nt);
    sla__kopts ko = {.rtol = S->opts.rtol, .atol = scaled ? ldexp(S->opts.atol, sexp) * umin : S->opts.atol,
                     .maxiter = budget > 0 ? budget : S->opts.maxiter, .restart = S->opts.restart, .use_x0 = use_x0, .pc_transpose = transpose,
                     .monitor = S->opts.monitor, .monitor_user = S->opts.monitor_user,
                     .monitor_every = S->opts.monitor_every,
                     .deadline = S->opts.max_seconds > 0.0 ? t0 + S->opts.max_seconds : 0.0};
    st = sla__krylov_method(S->method)(ctx, &op, S->pc[ib], bk, xk, &ko, info);
    if (st == SLA_NOT_CONVERGED && S->opts.method == SLA_METHOD_AUTO &&
        S->method == SLA_METHOD_CG && info->reason == SLA_DIVERGED_INDEFINITE) {
        sla_int its = info->iterations;
        info_init(S, SLA_METHOD_MINRES, info);
        snprintf(info->note, sizeof info->note,
                 "auto: cg met an indefinite direction after %lld iterations; fell back to minres",
                 (long long)its);
        st = sla__minres(ctx, &op, S->pc[ib], bk, xk, &ko, info);
        info->iterations += its;
    }
    if (scaled && st >= 0) {
        for (sla_int i = 0; i < n; i++) x[i] = ldexp(ys[i], (sx ? ilogb(sx[i]) : 0) - sexp);
        bool uniform = true;
        for (sla_int i = 1; sb && i < n && uniform; i++) uniform = sb[i] == sb[0];
        if (uniform) { /* the same residual, in the caller's units */
            int eu = sb ? ilogb(sb[0]) : 0;
            info->residual_abs = ldexp(info->residual_abs, -sexp - eu);
            info->rhs_norm = ldexp(info->rhs_norm, -sexp - eu);
        } else { /* convergence was judged on the scaled residual: report the true one */
            sla__matop mo = {.A = A, .ib = ib, .transpose = tr};
            sla__op opo;
            sla__matop_init(&opo, &mo, 1);
            info->residual_abs = sla__true_residual(&opo, b, x, bs);
            info->rhs_norm = sla__nrm2(n, b, nt);
            info->residual = info->rhs_norm > 0.0 ? info->residual_abs / info->rhs_norm : info->residual_abs;
        }
        if (sb) {
            size_t len = strlen(info->note);
            snprintf(info->note + len, sizeof info->note - len, "%sequilibrated (%s scaling by powers of two%s)",
                     len ? "; " : "", S->symmetric ? "symmetric" : "row and column",
                     uniform ? "" : "; tolerance applied to the scaled residual");
        }
    }
    sla__free(&al, bs);
    info->solve_seconds = sla__now() - t0;
    if (st == SLA_NOT_CONVERGED)
        sla__error(ctx, st, "%s did not converge: %s after %lld iterations, relative residual %.3e",
                   info->method, sla_reason_name(info->reason), (long long)info->iterations,
                   info->residual);
    return st;
}

/* A solve through a solver the caller holds exclusively (not a batch
 * item, which runs in parallel with others on the same solver): with
 * method=auto's Krylov budget and its switch to the direct method, both
 * when the budget runs out and when the solve converged only far past its
 * predicted iteration count (SLA_AUTO_SUSPECT_FACTOR: an ill-conditioned
 * matrix, whose small residual may hide a poor forward error). */
static sla_status solve_serial(sla_ctx *ctx, sla_solver *S, sla_int ib, bool transpose,
                               const double *b, double *x, bool use_x0, sla_solve_info *info, int nt)
{
    sla_status st = solve_one(ctx, S, ib, transpose, b, x, use_x0, info, nt, S->kry_budget);
    if (S->kry_budget <= 0 || S->dops) return st;
    char why[96];
    if (st == SLA_NOT_CONVERGED && info->reason == SLA_DIVERGED_MAXITER) {
        snprintf(why, sizeof why, "passed its budget of %lld iterations", (long long)info->iterations);
    } else if (st == SLA_OK &&
               (double)info->iterations > SLA_AUTO_SUSPECT_FACTOR * S->kry_predicted + 20.0) {
        snprintf(why, sizeof why, "converged only after %lld iterations (%.0f predicted)",
                 (long long)info->iterations, S->kry_predicted);
    } else {
        return st;
    }
    double spent = info->solve_seconds;
    sla_int spent_its = info->iterations;
    bool switched;
    if ((st = auto_switch_to_direct(ctx, S, why, &switched))) return st;
    if (!switched && info->converged) return sla__ok(ctx, SLA_OK); /* keep the Krylov answer */
    /* Direct: a fresh solve. Factors too large: go on from the iterate. */
    st = solve_one(ctx, S, ib, transpose, b, x, switched ? false : true, info, nt, 0);
    info->solve_seconds += spent;
    if (!switched) info->iterations += spent_its;
    return st;
}

static sla_status check_call(sla_ctx *ctx, const sla_solver *S, sla_int ib, sla_int nrhs,
                             const void *b, sla_int ldb, const void *x, sla_int ldx)
{
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "solver is NULL");
    sla_int n = S->A->nrows;
    if (ib < 0 || ib >= S->A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "value array %lld out of range [0, %lld)",
                          (long long)ib, (long long)S->A->nbatch);
    if (nrhs < 0) return sla__error(ctx, SLA_ERR_DIMENSION, "nrhs = %lld < 0", (long long)nrhs);
    if (nrhs > 0 && n > 0 && (!b || !x))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "NULL right-hand side or solution");
    if (ldb < n || ldx < n)
        return sla__error(ctx, SLA_ERR_DIMENSION, "leading dimensions %lld, %lld < n = %lld",
                          (long long)ldb, (long long)ldx, (long long)n);
    sla_status st = sla__check_extent(ctx, nrhs, ldb, "nrhs x leading dimension of b");
    if (!st) st = sla__check_extent(ctx, nrhs, ldx, "nrhs x leading dimension of x");
    return st;
}

/* Columns one after another, each with the context's threads. */
static sla_status solve_columns(sla_ctx *ctx, sla_solver *S, sla_int ib, bool transpose,
                                sla_int nrhs, const double *b, sla_int ldb, double *x,
                                sla_int ldx, sla_solve_info *info)
{
    sla_status st = check_call(ctx, S, ib, nrhs, b, ldb, x, ldx);
    if (st) return st;
    int nt = sla__threads(ctx);
    sla_status worst = SLA_OK;
    for (sla_int r = 0; r < nrhs; r++) {
        sla_solve_info tmp;
        sla_solve_info *inf = info ? &info[r] : &tmp;
        st = solve_serial(ctx, S, ib, transpose, b + r * ldb, x + r * ldx, S->opts.use_x0, inf, nt);
        if (st < 0) return st;
        if (st > 0) worst = st;
    }
    return worst == SLA_OK ? sla__ok(ctx, SLA_OK) : worst;
}

sla_status sla_solver_solve(sla_ctx *ctx, sla_solver *S, sla_int ib, sla_int nrhs, const double *b,
                            sla_int ldb, double *x, sla_int ldx, sla_solve_info *info)
{
    return solve_columns(ctx, S, ib, false, nrhs, b, ldb, x, ldx, info);
}

sla_status sla_solver_solve_transpose(sla_ctx *ctx, sla_solver *S, sla_int ib, sla_int nrhs,
                                      const double *b, sla_int ldb, double *x, sla_int ldx,
                                      sla_solve_info *info)
{
    return solve_columns(ctx, S, ib, true, nrhs, b, ldb, x, ldx, info);
}

/* gA[k] -= lambda[row_k] x[col_k] */
static void accumulate_grad(const sla_matrix *A, const double *lambda, const double *x, double *gA,
                            int nt)
{
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    sla_int n = A->nrows;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++)
        for (sla_int p = rp[i]; p < rp[i + 1]; p++) gA[p] -= lambda[i] * x[ci[p]];
}

/* VJP of one value array with nt threads: lambda = A^-T gx per column.
 * mut: the same solver when the caller holds it exclusively (see
 * solve_serial), NULL for batch items. */
static sla_status vjp_one(sla_ctx *ctx, const sla_solver *S, sla_solver *mut, sla_int ib, sla_int nrhs,
                          const double *x, sla_int ldx, const double *gx, sla_int ldgx, double *gb,
                          sla_int ldgb, double *gA, sla_solve_info *info, int nt)
{
    const sla_matrix *A = S->A;
    sla_int n = A->nrows;
    sla_allocator al = sla__ctx_alloc(ctx);
    double *lam_buf = NULL;
    if (!gb && nrhs > 0) {
        lam_buf = sla__malloc(&al, (size_t)n, sizeof(double));
        if (!lam_buf) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the adjoint vector");
    }
    if (gA) sla__zero(A->nnz, gA);
    sla_status worst = SLA_OK;
    for (sla_int r = 0; r < nrhs; r++) {
        sla_solve_info tmp;
        sla_solve_info *inf = info ? &info[r] : &tmp;
        double *lam = gb ? gb + r * ldgb : lam_buf;
        sla_status st = check_vector(ctx, n, x + r * ldx, "solution x", r);
        if (!st)
            st = mut ? solve_serial(ctx, mut, ib, true, gx + r * ldgx, lam, false, inf, nt)
                     : solve_one(ctx, S, ib, true, gx + r * ldgx, lam, false, inf, nt, 0);
        if (st < 0) {
            sla__free(&al, lam_buf);
            return st;
        }
        if (st > 0) worst = st;
        if (gA) accumulate_grad(A, lam, x + r * ldx, gA, nt); /* dL/dA_k = -lambda_row x_col */
    }
    sla__free(&al, lam_buf);
    return worst;
}

sla_status sla_solver_solve_vjp(sla_ctx *ctx, sla_solver *S, sla_int ib, sla_int nrhs,
                                const double *x, sla_int ldx, const double *gx, sla_int ldgx,
                                double *gb, sla_int ldgb, double *gA, sla_solve_info *info)
{
    sla_status st = check_call(ctx, S, ib, nrhs, gx, ldgx, x, ldx);
    if (st) return st;
    if (gb && ldgb < S->A->nrows)
        return sla__error(ctx, SLA_ERR_DIMENSION, "leading dimension of gb %lld < n = %lld",
                          (long long)ldgb, (long long)S->A->nrows);
    if (gb && (st = sla__check_extent(ctx, nrhs, ldgb, "nrhs x leading dimension of gb"))) return st;
    st = vjp_one(ctx, S, S, ib, nrhs, x, ldx, gx, ldgx, gb, ldgb, gA, info, sla__threads(ctx));
    return st == SLA_OK ? sla__ok(ctx, SLA_OK) : st;
}

/* ---- batches and lists: items in parallel, one thread each ---------- */

/* OpenBLAS (the BLAS under CHOLMOD's supernodal kernel) starts its own
 * pthreads in every call; inside the parallel item loop that oversubscribes
 * the cores: 6.3 ms per n = 2500 factorization against 1.7 ms with one BLAS
 * thread. Weak references: other BLAS builds link and skip this. The
 * setting is process-wide, so it is restored after the loop. */
extern void openblas_set_num_threads(int n) __attribute__((weak));
extern int openblas_get_num_threads(void) __attribute__((weak));

/* Run items [0, count) through `item`, in parallel when there are at
 * least as many items as threads, else one after another with all
 * threads. Errors from workers go to private contexts; the first error
 * (lowest index) is reported through ctx. */
static sla_status run_items_mode(sla_ctx *ctx, sla_int count, item_fn item, void *job,
                                 bool serial_items);
static sla_status run_items(sla_ctx *ctx, sla_int count, item_fn item, void *job)
{
    return run_items_mode(ctx, count, item, job, false);
}

/* serial_items: never two items at once (a list naming one solver twice:
 * a solver's factor workspace serves one solve at a time). */
static sla_status run_items_mode(sla_ctx *ctx, sla_int count, item_fn item, void *job,
                                 bool serial_items)
{
    int nt = sla__threads(ctx);
    bool outer = count >= nt && nt > 1 && !serial_items;
    sla_status first_err = SLA_OK, worst = SLA_OK;
    sla_int err_index = count;
    char msg[sizeof ctx->message] = "";
    /* Serial case: a plain loop, no OpenMP construct around the items. An
     * `omp parallel if (false)` region is still a (one-thread) team, and
     * CHOLMOD's own parallel regions inside it then start a fresh nested
     * team at every supernode: 1000 factorizations of n = 2500 took
     * 10 ms each instead of 1.7 ms. */
    if (!outer) {
        for (sla_int i = 0; i < count; i++) {
            sla_ctx local;
            memset(&local, 0, sizeof local);
            local.alloc = sla__ctx_alloc(ctx);
            sla_status st = item(&local, job, i, nt);
            if (st < 0 && i < err_index) {
                err_index = i;
                first_err = st;
                snprintf(msg, sizeof msg, "item %lld: %.480s", (long long)i, local.message);
            }
            if (st > 0) worst = st;
        }
        count = 0; /* skip the parallel loop below */
    }
    int blas_threads = 0;
    if (outer && openblas_set_num_threads && openblas_get_num_threads) {
        blas_threads = openblas_get_num_threads();
        if (blas_threads > 1) openblas_set_num_threads(1);
    }
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (outer)
    for (sla_int i = 0; i < count; i++) {
        sla_ctx local;
        memset(&local, 0, sizeof local);
        local.alloc = sla__ctx_alloc(ctx);
        sla_status st = item(&local, job, i, outer ? 1 : nt);
#pragma omp critical(sla_run_items)
        {
            if (st < 0 && i < err_index) {
                err_index = i;
                first_err = st;
                snprintf(msg, sizeof msg, "item %lld: %.480s", (long long)i, local.message);
            }
            if (st > 0) worst = st;
        }
    }
    if (blas_threads > 1) openblas_set_num_threads(blas_threads);
    if (first_err) return sla__error(ctx, first_err, "%s", msg);
    if (worst) return sla__error(ctx, worst, "some items did not converge (see their info)");
    return sla__ok(ctx, SLA_OK);
}

typedef struct {
    sla_solver *S;
    sla_solver *const *list;
    const double *b;
    const double *const *bl;
    double *x;
    double *const *xl;
    const double *xin;
    const double *const *xinl;
    const double *gx;
    const double *const *gxl;
    double *gb;
    double *const *gbl;
    double *gA;
    double *const *gAl;
    sla_solve_info *info;
} batch_job;

static sla_status batch_solve_item(sla_ctx *lctx, void *job, sla_int i, int nt)
{
    batch_job *J = job;
    sla_int n = J->S->A->nrows;
    sla_solve_info tmp;
    return solve_one(lctx, J->S, i, false, J->b + i * n, J->x + i * n, J->S->opts.use_x0,
                     J->info ? &J->info[i] : &tmp, nt, 0);
}

static sla_status batch_vjp_item(sla_ctx *lctx, void *job, sla_int i, int nt)
{
    batch_job *J = job;
    sla_int n = J->S->A->nrows, nnz = J->S->A->nnz;
    return vjp_one(lctx, J->S, NULL, i, 1, J->xin + i * n, n, J->gx + i * n, n,
                   J->gb ? J->gb + i * n : NULL, n, J->gA ? J->gA + i * nnz : NULL,
                   J->info ? &J->info[i] : NULL, nt);
}

sla_status sla_solver_solve_batch(sla_ctx *ctx, sla_solver *S, const double *b, double *x,
                                  sla_solve_info *info)
{
    if (!S || (S->A->nrows > 0 && (!b || !x)))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_solve_batch: NULL argument");
    sla_status st = sla__check_extent(ctx, S->A->nbatch, S->A->nrows, "nbatch x n");
    if (st) return st;
    batch_job J = {.S = S, .b = b, .x = x, .info = info};
    return run_items(ctx, S->A->nbatch, batch_solve_item, &J);
}

sla_status sla_solver_solve_batch_vjp(sla_ctx *ctx, sla_solver *S, const double *x,
                                      const double *gx, double *gb, double *gA,
                                      sla_solve_info *info)
{
    if (!S || (S->A->nrows > 0 && (!x || !gx)))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_solve_batch_vjp: NULL argument");
    sla_status st = sla__check_extent(ctx, S->A->nbatch, S->A->nrows, "nbatch x n");
    if (st) return st;
    batch_job J = {.S = S, .xin = x, .gx = gx, .gb = gb, .gA = gA, .info = info};
    return run_items(ctx, S->A->nbatch, batch_vjp_item, &J);
}

static sla_status list_solve_item(sla_ctx *lctx, void *job, sla_int i, int nt)
{
    batch_job *J = job;
    sla_solver *S = J->list[i];
    if (!S || !J->bl[i] || !J->xl[i])
        return sla__error(lctx, SLA_ERR_ARGUMENT, "NULL solver, right-hand side or solution");
    sla_solve_info tmp;
    return solve_one(lctx, S, 0, false, J->bl[i], J->xl[i], S->opts.use_x0,
                     J->info ? &J->info[i] : &tmp, nt, 0);
}

static sla_status list_vjp_item(sla_ctx *lctx, void *job, sla_int i, int nt)
{
    batch_job *J = job;
    sla_solver *S = J->list[i];
    if (!S || !J->xinl[i] || !J->gxl[i])
        return sla__error(lctx, SLA_ERR_ARGUMENT, "NULL solver, solution or cotangent");
    sla_int n = S->A->nrows;
    return vjp_one(lctx, S, NULL, 0, 1, J->xinl[i], n, J->gxl[i], n, J->gbl ? J->gbl[i] : NULL, n,
                   J->gAl ? J->gAl[i] : NULL, J->info ? &J->info[i] : NULL, nt);
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}

/* Whether a solver appears twice in a list: its items then run one after
 * another (solving twice at once with one solver object is not safe). */
static sla_status list_has_repeats(sla_ctx *ctx, sla_int count, sla_solver *const *solvers,
                                   bool *repeats)
{
    *repeats = false;
    if (count < 2 || sla__threads(ctx) < 2) return SLA_OK;
    if (count <= 64) {
        for (sla_int i = 1; i < count && !*repeats; i++)
            for (sla_int j = 0; j < i; j++)
                if (solvers[i] == solvers[j]) *repeats = true;
        return SLA_OK;
    }
    sla_solver **copy = sla__ctx_malloc(ctx, (size_t)count, sizeof *copy, "the solver list check");
    if (!copy) return SLA_ERR_NOMEM;
    memcpy(copy, solvers, (size_t)count * sizeof *copy);
    qsort(copy, (size_t)count, sizeof *copy, cmp_ptr);
    for (sla_int i = 1; i < count; i++)
        if (copy[i] == copy[i - 1]) *repeats = true;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__free(&a, copy);
    return SLA_OK;
}

sla_status sla_solve_list(sla_ctx *ctx, sla_int count, sla_solver *const *solvers,
                          const double *const *b, double *const *x, sla_solve_info *info)
{
    if (count < 0 || (count > 0 && (!solvers || !b || !x)))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solve_list: NULL argument or negative count");
    batch_job J = {.list = solvers, .bl = b, .xl = x, .info = info};
    bool rep;
    sla_status st = list_has_repeats(ctx, count, solvers, &rep);
    return st ? st : run_items_mode(ctx, count, list_solve_item, &J, rep);
}

sla_status sla_solve_list_vjp(sla_ctx *ctx, sla_int count, sla_solver *const *solvers,
                              const double *const *x, const double *const *gx,
                              double *const *gb, double *const *gA, sla_solve_info *info)
{
    if (count < 0 || (count > 0 && (!solvers || !x || !gx)))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solve_list_vjp: NULL argument or negative count");
    batch_job J = {.list = solvers, .xinl = x, .gxl = gx, .gbl = gb, .gAl = gA, .info = info};
    bool rep;
    sla_status st = list_has_repeats(ctx, count, solvers, &rep);
    return st ? st : run_items_mode(ctx, count, list_vjp_item, &J, rep);
}

sla_status sla_solver_logdet(sla_ctx *ctx, sla_solver *S, sla_int ib, double *sign,
                             double *logabsdet)
{
    if (!S || !sign || !logabsdet)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_logdet: NULL argument");
    if (ib < 0 || ib >= S->A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "value array %lld out of range [0, %lld)",
                          (long long)ib, (long long)S->A->nbatch);
    if (!S->dops)
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "logdet needs a direct factorization; this solver uses %s "
                          "(create it with method=cholesky, ldlt or lu)",
                          sla_method_name(S->method));
    sla_status st = S->dops->logdet(ctx, S->sym, S->num[ib], sign, logabsdet);
    return st ? st : sla__ok(ctx, SLA_OK);
}

sla_status sla_solve(sla_ctx *ctx, const sla_matrix *A, const sla_solver_options *opts,
                     const double *b, double *x, sla_solve_info *info)
{
    sla_solver *S = NULL;
    sla_status st = sla_solver_create(ctx, A, opts, &S);
    if (st) return st;
    st = sla_solver_solve(ctx, S, 0, 1, b, A->nrows, x, A->nrows, info);
    sla_solver_destroy(&S);
    return st;
}

bool sla__solver_direct(const sla_solver *S, sla_int ib, const sla__direct_ops **ops, void **sym,
                        void **num)
{
    if (!S || !S->dops || ib < 0 || ib >= S->A->nbatch) return false;
    *ops = S->dops;
    *sym = S->sym;
    *num = S->num[ib];
    return true;
}

const sla_matrix *sla__solver_matrix(const sla_solver *S) { return S ? S->A : NULL; }

double sla__solver_factor_nnz(const sla_solver *S) { return S && S->dops ? S->dstats.factor_nnz : 0.0; }

const char *sla__solver_note(const sla_solver *S) { return S ? S->note : ""; }
