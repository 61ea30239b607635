/* Algebraic multigrid preconditioner: one hypre BoomerAMG cycle per apply.
 *
 * Set-up copies value array ib into a hypre ParCSR matrix on one process
 * (MPI_COMM_SELF; the diagonal first in each row, as BoomerAMG wants) and
 * builds the hierarchy with the options of sla_amg_options (hypre's
 * numbering; the aggressive levels use two-stage extended+i interpolation
 * truncated to pmax entries). An apply is z = M^-1 r: one cycle (MaxIter
 * 1, Tol 0) from a zero initial guess, r and z wrapped as hypre vectors
 * without copying. Memory: the copy of A (4 bytes per row + 12 per entry)
 * and the hierarchy, together about 200 bytes per unknown on 2D Poisson.
 *
 * Smoothers: relax_type is the down-cycle smoother; the up cycle uses its
 * mirror (forward 3/13 down pairs with backward 4/14 up, and the other way
 * round), so a V-cycle is a symmetric operator for symmetric A, as CG
 * needs, whatever the choice. (hypre's W-cycle smooths twice on the way
 * up, so a W-cycle is symmetric only with a symmetric smoother: 0, 6, 7,
 * 8, 16, 18.) The coarsest level is solved exactly (Gaussian elimination).
 *
 * Transposed applies (adjoint solves):
 *  - symmetric A and a cycle equal to its transpose: the forward cycle;
 *  - otherwise the exact transpose of the same cycle, run here on hypre's
 *    hierarchy (A_l, P_l, l1 norms): the forward cycle is a sequence of
 *    linear steps (smoothing sweeps, restriction, coarse solve,
 *    interpolation), recorded from hypre's cycling rules at set-up; its
 *    transpose is the reverse sequence of the transposed steps. hypre's own
 *    HYPRE_BoomerAMGSolveT is not used: it smooths with Jacobi whatever the
 *    relaxation type, so it is not the transpose of the forward cycle.
 *    Smoothers with a transpose here: 0, 7, 18 (Jacobi variants), 3, 4, 6,
 *    8, 13, 14 (Gauss-Seidel variants, unit weights); with 16 and 17 a
 *    transposed apply for nonsymmetric A answers SLA_ERR_UNSUPPORTED. The
 *    symmetry test and the transposed cycle's data (work vectors, a dense
 *    LU of the coarsest matrix) are built at the first transposed apply.
 *    The transposed cycle needs hypre's internal headers (the AMG data
 *    structure of the hypre version sla was built against).
 *
 * Refresh (new values, same pattern): with reuse = k > 0 the next k
 * refreshes keep the hierarchy, fine level included (M stays the cycle of
 * the old values: a fixed preconditioner, symmetric positive definite if
 * the old matrix was; the Krylov method uses the new A), and the one after
 * rebuilds it from the current values. Updating only the fine-level values
 * would pair them with the old l1 norms and coarse operators, which can
 * make the smoother diverge; a stale but consistent cycle cannot.
 *
 * MPI and thread safety: hypre here is built with MPI, so the first set-up
 * initializes MPI when the program has not (MPI_Init_thread with
 * MPI_THREAD_SERIALIZED; with OpenMPI a one-time cost of about 0.3 s and a
 * helper process, orted, for the life of the program); sla never finalizes
 * it. Programs that use MPI themselves should initialize it before the
 * first AMG set-up (with at least MPI_THREAD_SERIALIZED when batched solves
 * run AMG from several threads) and finalize it after the last AMG solver
 * is destroyed. hypre keeps process-wide state (its error flag, its
 * handle), so every call into it is serialized by one mutex: AMG set-ups
 * and applies from several threads are safe but do not run concurrently.
 * hypre's error flag is cleared before and after each sequence of calls
 * sla makes; nothing is printed (PrintLevel 0). */
#include "krylov.h"

#ifndef SLA_HAVE_HYPRE

sla_status sla__amg_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_amg_options *o,
                          sla__pc *pc)
{
    (void)A;
    (void)ib;
    (void)o;
    (void)pc;
    return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                      "precond amg is not available in this build: hypre was not found (install "
                      "libhypre-dev libopenmpi-dev and reconfigure)");
}

#ifdef SLA_HAVE_MPI
sla_status sla__amg_create_dist(sla_ctx *ctx, MPI_Comm comm, sla_int n_global, sla_int row_start,
                                const sla_matrix *diag, const sla_matrix *offd, const sla_int *ghosts,
                                bool symmetric, const sla_amg_options *o, sla__pc **out)
{
    (void)comm, (void)n_global, (void)row_start, (void)diag, (void)offd, (void)ghosts, (void)symmetric,
        (void)o;
    *out = NULL;
    return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                      "precond amg is not available in this build: hypre was not found (install "
                      "libhypre-dev libopenmpi-dev and reconfigure)");
}
#endif

#else

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include <mpi.h>

#include <HYPRE.h>
#include <HYPRE_parcsr_ls.h>
#include <_hypre_parcsr_ls.h> /* the hierarchy (A_l, P_l, l1 norms) for transposed cycles */

/* Interpolation on the aggressively coarsened levels (option agg_interp,
 * hypre's numbering): the default 1 = two-stage extended+i, truncated to
 * pmax entries per row like the other levels. Against hypre's default 4
 * (multipass) it took 2D Poisson at 1M unknowns from 18 to 11 CG
 * iterations and 2.5 to 1.9 s (2.3 to 1.5 s of CPU) for a slightly costlier
 * set-up; see bench/AMG_RESULTS.md. */

/* Largest one-level "hierarchy" solved by a dense LU (see record_steps). */
#define SLA_AMG_DENSE_MAX 2000

static pthread_mutex_t amg_lock = PTHREAD_MUTEX_INITIALIZER;
static bool amg_hypre_ready; /* MPI initialized (by us or the program) and HYPRE_Init done */

/* ---- the transposed cycle's data ------------------------------------------ */

/* One linear step of the forward cycle. */
enum { OP_JACOBI, OP_GS_FWD, OP_GS_BWD, OP_SOLVE, OP_RESTRICT, OP_PROLONG, OP_OPAQUE };
typedef struct step {
    unsigned char op, l1; /* l1: divide by the l1 norms instead of the diagonal */
    int level;
    double weight;        /* Jacobi weight; OP_OPAQUE: the relaxation type */
} step;

typedef struct tlevel {
    HYPRE_Int n;
    const HYPRE_Int *ai, *aj; /* A_l on one process: hypre's diag block */
    const double *ax;
    const HYPRE_Int *pi, *pj; /* P_l: n_l x n_{l+1} (not on the coarsest level) */
    const double *px;
    double *inv_diag;         /* 1 / a_ii, 0 where hypre skips the row */
    double *inv_l1;           /* 1 / l1 norm, or NULL (no l1 norms on this level) */
    double *ubar, *fbar;      /* adjoints of u_l and f_l */
    double *w, *e;            /* temporaries */
} tlevel;

typedef struct tcycle {
    int nlev;
    tlevel *lev;
    double *lu;               /* coarsest matrix, LU with partial pivoting (column major) */
    int *piv;
    HYPRE_Int nc;
} tcycle;

typedef struct amg {
    sla_amg_options o;
    sla_allocator alloc;
    sla_int n;
    HYPRE_ParCSRMatrix par;   /* the values the hierarchy was built from */
    HYPRE_Solver solver;      /* NULL until set up */
    HYPRE_ParVector vb, vx;   /* shells whose data point at r and z during an apply */
    int relax_up;
    int symmetric;            /* par is symmetric: 1, 0, or -1 not yet known */
    bool self_adjoint;        /* the cycle is a symmetric operator when A is */
    int kept;                 /* refreshes since the last set-up that kept it */
    step *steps;              /* the forward cycle's steps, for transposes */
    int nsteps;
    bool recorded;            /* steps hold the whole cycle */
    bool one_level;           /* hypre built no coarse level: exact dense solves */
    const char *unsupported;  /* why the transposed cycle cannot be run, or NULL */
    tcycle *t;
    double *rcopy;            /* r when it aliases z */
    /* distributed (sla__amg_create_dist): one hierarchy over all ranks */
    bool dist;
    bool sym_hint;            /* the caller vouches that A is symmetric */
    const sla_matrix *ddiag, *doffd; /* borrowed local blocks, re-read at refresh */
    HYPRE_ParCSRMatrix tpar;  /* A^T and its hierarchy, for transposed applies of */
    HYPRE_Solver tsolver;     /* nonsymmetric A: built at the first one */
} amg;

/* ---- errors ---------------------------------------------------------------- */

static sla_status hypre_status(int ierr)
{
    if (HYPRE_CheckError(ierr, HYPRE_ERROR_MEMORY)) return SLA_ERR_NOMEM;
    if (HYPRE_CheckError(ierr, HYPRE_ERROR_ARG)) return SLA_ERR_ARGUMENT;
    return SLA_ERR_UNSUPPORTED;
}

/* Record a hypre failure in ctx and clear hypre's sticky error flag. */
static sla_status hypre_fail(sla_ctx *ctx, int ierr, const char *what)
{
    char d[256] = "";
    HYPRE_DescribeError(ierr, d);
    size_t len = strlen(d);
    while (len && (d[len - 1] == ' ' || d[len - 1] == '\n')) d[--len] = '\0';
    HYPRE_ClearAllErrors();
    return sla__error(ctx, hypre_status(ierr), "precond amg: %s failed (hypre error %d: %s)", what,
                      ierr, d);
}

/* ---- MPI and hypre, once ------------------------------------------------------ */

/* Call with amg_lock held. */
static sla_status hypre_start(sla_ctx *ctx)
{
    if (amg_hypre_ready) return SLA_OK;
    int init = 0, fin = 0;
    MPI_Finalized(&fin);
    if (fin)
        return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                          "precond amg: MPI was already finalized (hypre needs it)");
    MPI_Initialized(&init);
    if (!init) {
        int provided = 0;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
            return sla__error(ctx, SLA_ERR_UNAVAILABLE, "precond amg: MPI_Init_thread failed");
    }
    int ierr = HYPRE_Init();
    if (ierr) return hypre_fail(ctx, ierr, "HYPRE_Init");
    amg_hypre_ready = true;
    return SLA_OK;
}

/* ---- the matrix ------------------------------------------------------------------- */

static int mirror(int relax)
{
    switch (relax) {
    case 3: return 4;
    case 4: return 3;
    case 13: return 14;
    case 14: return 13;
    default: return relax;
    }
}

static sla_status check_options(sla_ctx *ctx, const sla_amg_options *o)
{
    static const int relax_ok[] = {0, 3, 4, 6, 7, 8, 13, 14, 16, 17, 18};
    bool relax_known = false;
    for (size_t k = 0; k < sizeof relax_ok / sizeof relax_ok[0]; k++)
        relax_known = relax_known || relax_ok[k] == o->relax_type;
    if (!(o->strong_threshold >= 0.0 && o->strong_threshold <= 1.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "amg: strong_threshold %g not in [0, 1]",
                          o->strong_threshold);
    if (!relax_known)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "amg: relax_type %d is not one of hypre's fixed smoothers (0, 3, 4, "
                          "6, 7, 8, 13, 14, 16, 17, 18)",
                          o->relax_type);
    if (o->cycle_type != 1 && o->cycle_type != 2)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "amg: cycle_type %d (1 = V, 2 = W)",
                          o->cycle_type);
    if (o->agg_levels > 0 && (o->agg_interp < 1 || o->agg_interp > 8))
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "amg: agg_interp %d is not one of hypre's aggressive-level interpolations "
                          "(1-8; 1 two-stage extended+i, 4 multipass)",
                          o->agg_interp);
    if (o->coarsen_type < 0 || o->interp_type < 0 || o->pmax < 0 || o->agg_levels < 0 ||
        o->max_levels < 1 || o->reuse < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "amg: coarsen_type %d, interp_type %d, pmax %d, agg_levels %d and reuse "
                          "%d must be >= 0, max_levels %d >= 1",
                          o->coarsen_type, o->interp_type, o->pmax, o->agg_levels, o->reuse,
                          o->max_levels);
    return SLA_OK;
}

/* n and nnz fit hypre's index type. */
static sla_status check_size(sla_ctx *ctx, const sla_matrix *A)
{
    if (sizeof(HYPRE_Int) < sizeof(sla_int) && (A->nrows > INT_MAX || A->nnz > INT_MAX))
        return sla__error(ctx, SLA_ERR_TOO_LARGE,
                          "precond amg: n = %lld, nnz = %lld exceed hypre's 32-bit indices "
                          "(rebuild hypre with --enable-bigint)",
                          (long long)A->nrows, (long long)A->nnz);
    return SLA_OK;
}

/* Copy value array ib into the ParCSR matrix's diagonal block (one
 * process: no off-diagonal block), rows in sla's order except that the
 * diagonal entry comes first, as BoomerAMG requires. A missing or zero
 * diagonal is SLA_ERR_SINGULAR (the smoothers divide by it). */
static sla_status par_fill(sla_ctx *ctx, hypre_ParCSRMatrix *M, const sla_matrix *A, sla_int ib)
{
    hypre_CSRMatrix *d = hypre_ParCSRMatrixDiag(M);
    HYPRE_Int *di = hypre_CSRMatrixI(d), *dj = hypre_CSRMatrixJ(d);
    HYPRE_Complex *dx = hypre_CSRMatrixData(d);
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    sla_int bad = -1;
    for (sla_int i = 0; i < A->nrows; i++) {
        sla_int q = rp[i] + 1; /* next free position; rp[i] holds the diagonal */
        bool seen = false;
        di[i] = (HYPRE_Int)rp[i];
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) {
            double v = sla__val(A, ib, k);
            if (ci[k] == i && !seen) {
                seen = v != 0.0;
                dj[rp[i]] = (HYPRE_Int)i;
                dx[rp[i]] = v;
            } else if (q < rp[i + 1]) {
                dj[q] = (HYPRE_Int)ci[k];
                dx[q++] = v;
            }
        }
        if (!seen && bad < 0) bad = i;
    }
    di[A->nrows] = (HYPRE_Int)A->nnz;
    if (bad >= 0)
        return sla__error(ctx, SLA_ERR_SINGULAR,
                          "precond amg: zero or missing diagonal at row %lld", (long long)bad);
    return SLA_OK;
}

/* The ParCSR matrix of value array ib on MPI_COMM_SELF. */
static sla_status par_create(sla_ctx *ctx, amg *g, const sla_matrix *A, sla_int ib)
{
    HYPRE_BigInt starts[2] = {0, (HYPRE_BigInt)A->nrows};
    hypre_ParCSRMatrix *M = hypre_ParCSRMatrixCreate(MPI_COMM_SELF, starts[1], starts[1], starts,
                                                     starts, 0, (HYPRE_Int)A->nnz, 0);
    if (!M) return sla__error(ctx, SLA_ERR_NOMEM, "precond amg: out of memory for the matrix");
    g->par = (HYPRE_ParCSRMatrix)M;
    int ierr = hypre_ParCSRMatrixInitialize(M);
    if (ierr || !hypre_CSRMatrixData(hypre_ParCSRMatrixDiag(M)))
        return hypre_fail(ctx, ierr ? ierr : HYPRE_ERROR_MEMORY, "copying the matrix");
    sla_status st = par_fill(ctx, M, A, ib);
    if (st) return st;
    hypre_ParCSRMatrixSetNumNonzeros(M);
    hypre_ParCSRMatrixSetDNumNonzeros(M);
    return SLA_OK;
}

/* Exact symmetry (pattern and values) of the matrix the hierarchy was built
 * from: hypre's copy, whose rows after the diagonal are sorted by column. */
static bool par_symmetric(const amg *g)
{
    hypre_CSRMatrix *d = hypre_ParCSRMatrixDiag((hypre_ParCSRMatrix *)g->par);
    const HYPRE_Int *ai = hypre_CSRMatrixI(d), *aj = hypre_CSRMatrixJ(d);
    const HYPRE_Complex *ax = hypre_CSRMatrixData(d);
    HYPRE_Int n = hypre_CSRMatrixNumRows(d);
    long long upper = 0, lower = 0; /* every (i, j), j > i, matched and as many j < i */
    for (HYPRE_Int i = 0; i < n; i++)
        for (HYPRE_Int k = ai[i] + 1; k < ai[i + 1]; k++) {
            HYPRE_Int j = aj[k], lo = ai[j] + 1, hi = ai[j + 1] - 1;
            if (j < i) {
                lower++;
                continue;
            }
            upper++;
            while (lo < hi) { /* find (j, i) by bisection */
                HYPRE_Int mid = lo + (hi - lo) / 2;
                if (aj[mid] < i) lo = mid + 1;
                else hi = mid;
            }
            if (lo > hi || aj[lo] != i || ax[lo] != ax[k]) return false;
        }
    return upper == lower;
}

/* A vector shell of length n whose data is set for each apply. */
static sla_status shell_create(sla_ctx *ctx, HYPRE_Int n, HYPRE_ParVector *v)
{
    int ierr = HYPRE_ParVectorCreate(MPI_COMM_SELF, n, NULL, v);
    if (ierr) return hypre_fail(ctx, ierr, "HYPRE_ParVectorCreate");
    hypre_Vector *loc = hypre_ParVectorLocalVector((hypre_ParVector *)*v);
    hypre_VectorOwnsData(loc) = 0;
    hypre_VectorData(loc) = NULL;
    return SLA_OK;
}

static void shell_set(HYPRE_ParVector v, double *data)
{
    hypre_VectorData(hypre_ParVectorLocalVector((hypre_ParVector *)v)) = data;
}

/* ---- the forward cycle's steps (mirrors hypre_BoomerAMGCycle) ----------------------- */

static bool add_step(amg *g, int cap, int op, int level, bool l1, double weight)
{
    if (g->nsteps >= cap) return false;
    g->steps[g->nsteps++] = (step){.op = (unsigned char)op, .l1 = l1, .level = level,
                                   .weight = weight};
    return true;
}

/* The steps of one relaxation of hypre type `relax` on `level`; false when
 * its transpose is not implemented here. */
static bool add_relax(amg *g, int cap, hypre_ParAMGData *d, int relax, int level)
{
    double w = hypre_ParAMGDataRelaxWeight(d) ? hypre_ParAMGDataRelaxWeight(d)[level] : 1.0;
    double om = hypre_ParAMGDataOmega(d) ? hypre_ParAMGDataOmega(d)[level] : 1.0;
    bool gs_ok = w == 1.0 && om == 1.0; /* hypre's unscaled Gauss-Seidel sweeps */
    switch (relax) {
    case 0:
    case 7: return add_step(g, cap, OP_JACOBI, level, false, w);
    case 18: return add_step(g, cap, OP_JACOBI, level, true, w);
    case 3: return gs_ok && add_step(g, cap, OP_GS_FWD, level, false, 1.0);
    case 4: return gs_ok && add_step(g, cap, OP_GS_BWD, level, false, 1.0);
    case 6:
        return gs_ok && add_step(g, cap, OP_GS_FWD, level, false, 1.0) &&
               add_step(g, cap, OP_GS_BWD, level, false, 1.0);
    case 13: return gs_ok && add_step(g, cap, OP_GS_FWD, level, true, 1.0);
    case 14: return gs_ok && add_step(g, cap, OP_GS_BWD, level, true, 1.0);
    case 8:
        return gs_ok && add_step(g, cap, OP_GS_FWD, level, true, 1.0) &&
               add_step(g, cap, OP_GS_BWD, level, true, 1.0);
    case 9:
    case 19:
    case 98:
    case 99:
    case 198:
    case 199: return add_step(g, cap, OP_SOLVE, level, false, 1.0);
    case 16: /* Chebyshev and F-C-F Jacobi: symmetric operators for symmetric A, */
    case 17: /* but not transposed here */
        if (!g->unsupported) g->unsupported = "relaxation types 16 and 17";
        return add_step(g, cap, OP_OPAQUE, level, false, (double)relax);
    default: return false;
    }
}

/* Record the steps of one forward cycle, following hypre's level counters;
 * sets g->unsupported when the transposed cycle cannot be run. */
static sla_status record_steps(sla_ctx *ctx, amg *g)
{
    hypre_ParAMGData *d = (hypre_ParAMGData *)g->solver;
    int nlev = hypre_ParAMGDataNumLevels(d);
    int ctype = hypre_ParAMGDataCycleType(d);
    const HYPRE_Int *sweeps = hypre_ParAMGDataNumGridSweeps(d);
    const HYPRE_Int *rtype = hypre_ParAMGDataGridRelaxType(d);
    g->unsupported = NULL;
    g->nsteps = 0;
    g->recorded = false;
    g->one_level = false;
    if (hypre_ParAMGDataRelaxOrder(d) != 0 || hypre_ParAMGDataGridRelaxPoints(d) ||
        hypre_ParAMGDataFCycle(d) || hypre_ParAMGDataSmoothNumLevels(d) > 0 ||
        hypre_ParAMGDataAdditive(d) >= 0 || hypre_ParAMGDataMultAdditive(d) >= 0 ||
        hypre_ParAMGDataSimple(d) >= 0 || hypre_ParAMGDataRestriction(d) ||
        hypre_ParAMGDataBlockMode(d) || hypre_ParAMGDataPartialCycleCoarsestLevel(d) >= 0 ||
        !sweeps || !rtype || (ctype != 1 && ctype != 2)) {
        g->unsupported = "a cycle variant (C/F relaxation, F-cycle, additive or complex "
                         "smoothers) whose transpose is not implemented";
        return SLA_OK;
    }
    /* Visits: level l is entered ctype^l times at most; each visit has at
     * most 2 + 2 ctype relaxations (symmetric ones count twice) and two
     * transfers per coarse visit. */
    double visits = 0.0, v = 1.0;
    for (int l = 0; l < nlev; l++, v *= ctype) visits += v;
    int maxsw = 1;
    for (int k = 0; k < 4; k++) maxsw = sweeps[k] > maxsw ? sweeps[k] : maxsw;
    double capd = visits * (4.0 + 4.0 * ctype) * 2.0 * maxsw + 8.0;
    if (capd > 1e7) {
        g->unsupported = "a cycle too long to record (W-cycle with many levels)";
        return SLA_OK;
    }
    int cap = (int)capd;
    sla__free(&g->alloc, g->steps);
    g->steps = sla__malloc(&g->alloc, (size_t)cap, sizeof *g->steps);
    if (!g->steps) return sla__error(ctx, SLA_ERR_NOMEM, "precond amg: out of memory");
    if (nlev == 1 && g->n <= SLA_AMG_DENSE_MAX) {
        /* No coarse level (a matrix at or below hypre's coarsest size, or
         * one that does not coarsen): hypre would apply one forward
         * l1-Gauss-Seidel sweep, which is not symmetric, and CG with it
         * stalled on small SPD matrices. The level is the coarsest one, so
         * it is solved exactly, as the coarsest level of any cycle is. */
        add_step(g, cap, OP_SOLVE, 0, false, 1.0);
        g->one_level = true;
        g->recorded = true;
        return SLA_OK;
    }
    if (nlev == 1) { /* no coarsening: hypre smooths with the user relaxation type */
        int rt = hypre_ParAMGDataUserRelaxType(d);
        if (rt == -1) rt = 6;
        for (int s = 0; s < sweeps[0]; s++)
            if (!add_relax(g, cap, d, rt, 0)) {
                g->unsupported = "this relaxation type";
                return SLA_OK;
            }
        g->recorded = true;
        return SLA_OK;
    }
    int counter[64];
    if (nlev > 64) {
        g->unsupported = "more than 64 levels";
        return SLA_OK;
    }
    counter[0] = 1;
    for (int k = 1; k < nlev; k++) counter[k] = ctype;
    int level = 0, param = 1;
    for (;;) {
        for (int s = 0; s < sweeps[param]; s++) {
            if (param == 3 && s > 0 && g->nsteps && g->steps[g->nsteps - 1].op == OP_SOLVE)
                break; /* a repeated exact solve is the same solve */
            if (!add_relax(g, cap, d, rtype[param], level)) {
                g->unsupported = "this relaxation type";
                return SLA_OK;
            }
        }
        if (--counter[level] >= 0 && level != nlev - 1) {
            add_step(g, cap, OP_RESTRICT, level, false, 1.0);
            level++;
            if (counter[level] < ctype) counter[level] = ctype;
            param = level == nlev - 1 ? 3 : 1;
        } else if (level != 0) {
            add_step(g, cap, OP_PROLONG, level - 1, false, 1.0);
            level--;
            param = 2;
        } else {
            break;
        }
    }
    g->recorded = true;
    return SLA_OK;
}

/* Whether the recorded cycle equals its own transpose for symmetric A: the
 * reversed steps, each transposed (forward <-> backward sweeps, restrict
 * <-> interpolate), are the same steps. */
static bool steps_self_adjoint(const amg *g)
{
    if (!g->recorded) return false;
    int m = g->nsteps;
    for (int k = 0; k < m; k++) {
        step a = g->steps[k], b = g->steps[m - 1 - k];
        int bt = b.op == OP_GS_FWD     ? OP_GS_BWD
                 : b.op == OP_GS_BWD   ? OP_GS_FWD
                 : b.op == OP_RESTRICT ? OP_PROLONG
                 : b.op == OP_PROLONG  ? OP_RESTRICT
                                       : b.op;
        if (a.op != bt || a.level != b.level || a.l1 != b.l1 || a.weight != b.weight)
            return false;
    }
    return true;
}

/* ---- set-up ---------------------------------------------------------------------- */

static void tcycle_free(amg *g)
{
    tcycle *t = g->t;
    if (!t) return;
    for (int l = 0; t->lev && l < t->nlev; l++) {
        tlevel *L = &t->lev[l];
        sla__free(&g->alloc, L->inv_diag);
        sla__free(&g->alloc, L->inv_l1);
        sla__free(&g->alloc, L->ubar);
        sla__free(&g->alloc, L->fbar);
        sla__free(&g->alloc, L->w);
        sla__free(&g->alloc, L->e);
    }
    sla__free(&g->alloc, t->lev);
    sla__free(&g->alloc, t->lu);
    sla__free(&g->alloc, t->piv);
    sla__free(&g->alloc, t);
    g->t = NULL;
}

static int boomer_configure(HYPRE_Solver s, const sla_amg_options *o, int relax_up);

/* Set up BoomerAMG on g->par (the hierarchy of the matrix's current values).
 * Call with amg_lock held. */
static sla_status boomer_setup(sla_ctx *ctx, amg *g)
{
    const sla_amg_options *o = &g->o;
    tcycle_free(g);
    if (g->solver) {
        HYPRE_BoomerAMGDestroy(g->solver);
        g->solver = NULL;
    }
    HYPRE_Solver s;
    int ierr = HYPRE_BoomerAMGCreate(&s);
    if (ierr) return hypre_fail(ctx, ierr, "HYPRE_BoomerAMGCreate");
    g->solver = s;
    g->relax_up = mirror(o->relax_type);
    if ((ierr = boomer_configure(s, o, g->relax_up))) return hypre_fail(ctx, ierr, "setting the BoomerAMG options");
    /* Setup reads only the matrix; the vectors are placeholders. */
    if ((ierr = HYPRE_BoomerAMGSetup(s, g->par, g->vb, g->vx)))
        return hypre_fail(ctx, ierr, "HYPRE_BoomerAMGSetup");
    sla_status st = record_steps(ctx, g);
    if (st) return st;
    g->self_adjoint = steps_self_adjoint(g);
    g->symmetric = -1; /* checked at the first transposed apply */
    g->kept = 0;
    return SLA_OK;
}

/* The options of s (hypre's numbering); hypre's error flag after them. */
static int boomer_configure(HYPRE_Solver s, const sla_amg_options *o, int relax_up)
{
    /* 1 cycle per apply from a zero guess: a fixed linear operator */
    HYPRE_BoomerAMGSetPrintLevel(s, 0);
    HYPRE_BoomerAMGSetLogging(s, 0);
    HYPRE_BoomerAMGSetMaxIter(s, 1);
    HYPRE_BoomerAMGSetTol(s, 0.0);
    HYPRE_BoomerAMGSetStrongThreshold(s, o->strong_threshold);
    HYPRE_BoomerAMGSetCoarsenType(s, o->coarsen_type);
    HYPRE_BoomerAMGSetInterpType(s, o->interp_type);
    HYPRE_BoomerAMGSetPMaxElmts(s, o->pmax);
    HYPRE_BoomerAMGSetAggNumLevels(s, o->agg_levels);
    HYPRE_BoomerAMGSetAggInterpType(s, o->agg_interp);
    HYPRE_BoomerAMGSetAggPMaxElmts(s, o->pmax);
    HYPRE_BoomerAMGSetRelaxType(s, o->relax_type); /* all levels; coarsest: Gaussian elimination */
    HYPRE_BoomerAMGSetCycleRelaxType(s, relax_up, 2);
    HYPRE_BoomerAMGSetRelaxOrder(s, 0);
    HYPRE_BoomerAMGSetCycleType(s, o->cycle_type);
    HYPRE_BoomerAMGSetMaxLevels(s, o->max_levels);
    return HYPRE_GetError();
}

/* ---- applies ------------------------------------------------------------------------ */

/* z = one cycle of hierarchy s (built on M) applied to r. */
static sla_status cycle_run(amg *g, HYPRE_Solver s, HYPRE_ParCSRMatrix M, const double *r, double *z)
{
    sla__zero(g->n, z); /* hypre starts from the content of z */
    shell_set(g->vb, (double *)r);
    shell_set(g->vx, z);
    int ierr = HYPRE_BoomerAMGSolve(s, M, g->vb, g->vx);
    shell_set(g->vb, NULL);
    shell_set(g->vx, NULL);
    if (ierr && !HYPRE_CheckError(ierr, HYPRE_ERROR_CONV)) {
        HYPRE_ClearAllErrors();
        return hypre_status(ierr);
    }
    if (ierr) HYPRE_ClearAllErrors();
    return SLA_OK;
}

/* z = one forward cycle applied to r. */
static sla_status cycle_forward(amg *g, const double *r, double *z)
{
    return cycle_run(g, g->solver, g->par, r, z);
}

/* The collective finish of a distributed ParCSR matrix: its communication
 * package and nonzero counts (hypre's error code). */
static int par_commit(hypre_ParCSRMatrix *M)
{
    int ierr = 0;
    if (!hypre_ParCSRMatrixCommPkg(M)) ierr = hypre_MatvecCommPkgCreate(M);
    if (!ierr) ierr = hypre_ParCSRMatrixSetNumNonzeros(M);
    if (!ierr) ierr = hypre_ParCSRMatrixSetDNumNonzeros(M);
    return ierr;
}

static void thier_free(amg *g)
{
    if (g->tsolver) HYPRE_BoomerAMGDestroy(g->tsolver);
    if (g->tpar) hypre_ParCSRMatrixDestroy((hypre_ParCSRMatrix *)g->tpar);
    g->tsolver = NULL;
    g->tpar = NULL;
}

/* z = one cycle of the hierarchy of A^T applied to r (distributed,
 * nonsymmetric A; collective). The hierarchy is built at the first call. */
static sla_status cycle_adjoint_hierarchy(amg *g, const double *r, double *z)
{
    int ierr = 0;
    if (!g->tsolver) {
        hypre_ParCSRMatrix *AT = NULL;
        ierr = hypre_ParCSRMatrixTranspose((hypre_ParCSRMatrix *)g->par, &AT, 1);
        g->tpar = (HYPRE_ParCSRMatrix)AT;
        if (!ierr && !AT) ierr = HYPRE_ERROR_MEMORY;
        if (!ierr) ierr = hypre_ParCSRMatrixReorder(AT); /* the diagonal first in each row */
        if (!ierr) ierr = par_commit(AT);
        HYPRE_Solver s = NULL;
        if (!ierr) ierr = HYPRE_BoomerAMGCreate(&s);
        g->tsolver = s;
        if (!ierr) ierr = boomer_configure(s, &g->o, g->relax_up);
        if (!ierr) ierr = HYPRE_BoomerAMGSetup(s, g->tpar, g->vb, g->vx);
        if (ierr) {
            thier_free(g);
            HYPRE_ClearAllErrors();
            return hypre_status(ierr);
        }
    }
    return cycle_run(g, g->tsolver, g->tpar, r, z);
}

/* y -= A^T x, for the CSR block (ai, aj, ax) of n rows. */
static void sub_at(HYPRE_Int n, const HYPRE_Int *ai, const HYPRE_Int *aj, const double *ax,
                   const double *x, double *y)
{
    for (HYPRE_Int i = 0; i < n; i++) {
        double xi = x[i];
        if (xi == 0.0) continue;
        for (HYPRE_Int k = ai[i]; k < ai[i + 1]; k++) y[aj[k]] -= ax[k] * xi; /* y_j -= a_ij x_i */
    }
}

/* Dense LU with partial pivoting of the coarsest matrix (column major). */
static sla_status coarse_factor(const sla_allocator *al, tcycle *t, const tlevel *L)
{
    HYPRE_Int n = L->n;
    t->nc = n;
    t->lu = sla__calloc(al, (size_t)n * (size_t)n, sizeof *t->lu);
    t->piv = sla__malloc(al, (size_t)n + 1, sizeof *t->piv);
    if (!t->lu || !t->piv) return SLA_ERR_NOMEM;
    double *a = t->lu;
    for (HYPRE_Int i = 0; i < n; i++)
        for (HYPRE_Int k = L->ai[i]; k < L->ai[i + 1]; k++) a[(size_t)L->aj[k] * n + i] += L->ax[k];
    for (HYPRE_Int c = 0; c < n; c++) {
        HYPRE_Int p = c;
        for (HYPRE_Int i = c + 1; i < n; i++)
            if (fabs(a[(size_t)c * n + i]) > fabs(a[(size_t)c * n + p])) p = i;
        t->piv[c] = (int)p;
        if (a[(size_t)c * n + p] == 0.0) return SLA_ERR_SINGULAR;
        if (p != c)
            for (HYPRE_Int j = 0; j < n; j++) {
                double tmp = a[(size_t)j * n + c];
                a[(size_t)j * n + c] = a[(size_t)j * n + p];
                a[(size_t)j * n + p] = tmp;
            }
        double inv = 1.0 / a[(size_t)c * n + c];
        for (HYPRE_Int i = c + 1; i < n; i++) a[(size_t)c * n + i] *= inv; /* l_ic */
        for (HYPRE_Int j = c + 1; j < n; j++) {
            double ucj = a[(size_t)j * n + c];
            if (ucj == 0.0) continue;
            for (HYPRE_Int i = c + 1; i < n; i++)
                a[(size_t)j * n + i] -= a[(size_t)c * n + i] * ucj; /* a_ij -= l_ic u_cj */
        }
    }
    return SLA_OK;
}

/* x = A_c^-1 b in place: P A_c = L U. */
static void coarse_solve(const tcycle *t, double *x)
{
    HYPRE_Int n = t->nc;
    const double *a = t->lu;
    for (HYPRE_Int c = 0; c < n; c++) { /* w = P b, the swaps in factorization order */
        int p = t->piv[c];
        if (p != c) {
            double tmp = x[c];
            x[c] = x[p];
            x[p] = tmp;
        }
    }
    for (HYPRE_Int j = 0; j < n; j++) /* L y = w, unit diagonal, by columns */
        for (HYPRE_Int i = j + 1; i < n; i++) x[i] -= a[(size_t)j * n + i] * x[j];
    for (HYPRE_Int j = n - 1; j >= 0; j--) { /* U x = y, by columns */
        x[j] /= a[(size_t)j * n + j];
        for (HYPRE_Int i = 0; i < j; i++) x[i] -= a[(size_t)j * n + i] * x[j];
    }
}

/* x = A_c^-T b in place: P A_c = L U, so A_c^T = U^T L^T P. */
static void coarse_solve_t(const tcycle *t, double *x)
{
    HYPRE_Int n = t->nc;
    const double *a = t->lu;
    for (HYPRE_Int i = 0; i < n; i++) { /* U^T y = b, forward */
        double s = x[i];
        for (HYPRE_Int k = 0; k < i; k++) s -= a[(size_t)i * n + k] * x[k];
        x[i] = s / a[(size_t)i * n + i];
    }
    for (HYPRE_Int i = n - 1; i >= 0; i--) { /* L^T w = y, backward, unit diagonal */
        double s = x[i];
        for (HYPRE_Int k = i + 1; k < n; k++) s -= a[(size_t)i * n + k] * x[k];
        x[i] = s;
    }
    for (HYPRE_Int c = n - 1; c >= 0; c--) { /* x = P^T w */
        int p = t->piv[c];
        if (p != c) {
            double tmp = x[c];
            x[c] = x[p];
            x[p] = tmp;
        }
    }
}

/* Build the transposed cycle's data from the hierarchy. Lock held. */
static sla_status tcycle_build(amg *g)
{
    if (g->unsupported) return SLA_ERR_UNSUPPORTED;
    hypre_ParAMGData *d = (hypre_ParAMGData *)g->solver;
    int nlev = hypre_ParAMGDataNumLevels(d);
    hypre_ParCSRMatrix **Aa = hypre_ParAMGDataAArray(d);
    hypre_ParCSRMatrix **Pa = hypre_ParAMGDataPArray(d);
    hypre_Vector **l1 = hypre_ParAMGDataL1Norms(d);
    tcycle *t = sla__calloc(&g->alloc, 1, sizeof *t);
    if (!t) return SLA_ERR_NOMEM;
    g->t = t;
    t->nlev = nlev;
    t->lev = sla__calloc(&g->alloc, (size_t)nlev, sizeof *t->lev);
    if (!t->lev) return SLA_ERR_NOMEM;
    bool need_solve = false;
    for (int k = 0; k < g->nsteps; k++) need_solve = need_solve || g->steps[k].op == OP_SOLVE;
    for (int l = 0; l < nlev; l++) {
        tlevel *L = &t->lev[l];
        hypre_CSRMatrix *ad = hypre_ParCSRMatrixDiag(Aa[l]);
        if (hypre_CSRMatrixNumNonzeros(hypre_ParCSRMatrixOffd(Aa[l])) > 0)
            return SLA_ERR_UNSUPPORTED;
        L->n = hypre_CSRMatrixNumRows(ad);
        L->ai = hypre_CSRMatrixI(ad);
        L->aj = hypre_CSRMatrixJ(ad);
        L->ax = hypre_CSRMatrixData(ad);
        if (l < nlev - 1) {
            hypre_CSRMatrix *pd = hypre_ParCSRMatrixDiag(Pa[l]);
            if (hypre_CSRMatrixNumNonzeros(hypre_ParCSRMatrixOffd(Pa[l])) > 0)
                return SLA_ERR_UNSUPPORTED;
            L->pi = hypre_CSRMatrixI(pd);
            L->pj = hypre_CSRMatrixJ(pd);
            L->px = hypre_CSRMatrixData(pd);
        }
        size_t n = (size_t)L->n + 1;
        L->inv_diag = sla__calloc(&g->alloc, n, sizeof(double));
        L->ubar = sla__calloc(&g->alloc, n, sizeof(double));
        L->fbar = sla__calloc(&g->alloc, n, sizeof(double));
        L->w = sla__calloc(&g->alloc, n, sizeof(double));
        L->e = sla__calloc(&g->alloc, n, sizeof(double));
        if (!L->inv_diag || !L->ubar || !L->fbar || !L->w || !L->e) return SLA_ERR_NOMEM;
        for (HYPRE_Int i = 0; i < L->n; i++) {
            /* hypre keeps the diagonal first in each row and skips zero pivots */
            double a = (L->ai[i] < L->ai[i + 1] && L->aj[L->ai[i]] == i) ? L->ax[L->ai[i]] : 0.0;
            L->inv_diag[i] = a != 0.0 ? 1.0 / a : 0.0;
        }
        if (l1 && l1[l] && hypre_VectorData(l1[l])) {
            const double *nrm = hypre_VectorData(l1[l]);
            L->inv_l1 = sla__malloc(&g->alloc, n, sizeof(double));
            if (!L->inv_l1) return SLA_ERR_NOMEM;
            for (HYPRE_Int i = 0; i < L->n; i++) L->inv_l1[i] = nrm[i] != 0.0 ? 1.0 / nrm[i] : 0.0;
        }
    }
    if (need_solve) return coarse_factor(&g->alloc, t, &t->lev[nlev - 1]);
    return SLA_OK;
}

/* e = K^T v for the sweep of step s on level L (e may not alias v; v is
 * consumed). Forward Gauss-Seidel K = (Delta + L)^-1, with Delta the
 * diagonal (or l1 norms); its transpose sweeps the rows backward,
 * scattering by columns; backward Gauss-Seidel the other way round. */
static void sweep_t(const tlevel *L, const step *s, double *v, double *e)
{
    const double *inv = (s->l1 && L->inv_l1) ? L->inv_l1 : L->inv_diag;
    HYPRE_Int n = L->n;
    if (s->op == OP_JACOBI) {
        for (HYPRE_Int i = 0; i < n; i++) e[i] = s->weight * inv[i] * v[i]; /* K = w Delta^-1 */
        return;
    }
    if (s->op == OP_GS_FWD) {
        for (HYPRE_Int i = n - 1; i >= 0; i--) {
            double ei = inv[i] * v[i]; /* v_i final: rows below already scattered */
            e[i] = ei;
            if (ei == 0.0) continue;
            for (HYPRE_Int k = L->ai[i]; k < L->ai[i + 1]; k++)
                if (L->aj[k] < i) v[L->aj[k]] -= L->ax[k] * ei; /* v_j -= a_ij e_i, j < i */
        }
    } else {
        for (HYPRE_Int i = 0; i < n; i++) {
            double ei = inv[i] * v[i];
            e[i] = ei;
            if (ei == 0.0) continue;
            for (HYPRE_Int k = L->ai[i]; k < L->ai[i + 1]; k++)
                if (L->aj[k] > i) v[L->aj[k]] -= L->ax[k] * ei; /* v_j -= a_ij e_i, j > i */
        }
    }
}

/* z = M^-T r: the forward cycle maps (f_0 = r, u = 0) to z = u_0 through
 * linear steps; its transpose runs the steps backward on the adjoints
 * (ubar, fbar) from ubar_0 = r and returns fbar_0:
 *   smoothing    u_l += K (f_l - A_l u_l)   fbar_l += K^T ubar_l, ubar_l -= A_l^T K^T ubar_l
 *   restriction  f_c = P^T (f_l - A_l u_l)  fbar_l += P fbar_c, ubar_l -= A_l^T P fbar_c
 *                u_c = 0                    (then fbar_c = ubar_c = 0)
 *   coarse solve u_c = A_c^-1 f_c           fbar_c += A_c^-T ubar_c, ubar_c = 0
 *   interpolate  u_l += P u_c               ubar_c += P^T ubar_l */
static sla_status cycle_transposed(amg *g, const double *r, double *z)
{
    if (!g->t) {
        sla_status st = tcycle_build(g);
        if (st) {
            tcycle_free(g);
            return st;
        }
    }
    tcycle *t = g->t;
    for (int l = 0; l < t->nlev; l++) {
        sla__zero(t->lev[l].n, t->lev[l].ubar);
        sla__zero(t->lev[l].n, t->lev[l].fbar);
    }
    sla__copy(g->n, r, t->lev[0].ubar);
    for (int k = g->nsteps - 1; k >= 0; k--) {
        const step *s = &g->steps[k];
        tlevel *L = &t->lev[s->level];
        HYPRE_Int n = L->n;
        switch (s->op) {
        case OP_JACOBI:
        case OP_GS_FWD:
        case OP_GS_BWD:
            sla__copy(n, L->ubar, L->w);
            sweep_t(L, s, L->w, L->e);                          /* e = K^T ubar */
            for (HYPRE_Int i = 0; i < n; i++) L->fbar[i] += L->e[i];
            sub_at(n, L->ai, L->aj, L->ax, L->e, L->ubar);    /* ubar -= A^T e */
            break;
        case OP_SOLVE:
            sla__copy(n, L->ubar, L->e);
            coarse_solve_t(t, L->e);                           /* e = A_c^-T ubar */
            for (HYPRE_Int i = 0; i < n; i++) L->fbar[i] += L->e[i];
            sla__zero(n, L->ubar);
            break;
        case OP_RESTRICT: {
            tlevel *C = &t->lev[s->level + 1];
            for (HYPRE_Int i = 0; i < n; i++) { /* e = P fbar_c */
                double acc = 0.0;
                for (HYPRE_Int q = L->pi[i]; q < L->pi[i + 1]; q++)
                    acc += L->px[q] * C->fbar[L->pj[q]];
                L->e[i] = acc;
                L->fbar[i] += acc;
            }
            sub_at(n, L->ai, L->aj, L->ax, L->e, L->ubar);
            sla__zero(C->n, C->fbar);
            sla__zero(C->n, C->ubar);
            break;
        }
        case OP_PROLONG: {
            tlevel *C = &t->lev[s->level + 1];
            for (HYPRE_Int i = 0; i < n; i++) { /* ubar_c += P^T ubar_l */
                double ui = L->ubar[i];
                if (ui == 0.0) continue;
                for (HYPRE_Int q = L->pi[i]; q < L->pi[i + 1]; q++)
                    C->ubar[L->pj[q]] += L->px[q] * ui;
            }
            break;
        }
        }
    }
    sla__copy(g->n, t->lev[0].fbar, z);
    return SLA_OK;
}

static sla_status amg_apply(const sla__pc *pc, bool transpose, const double *r, double *z, int nt)
{
    (void)nt; /* hypre here is single-threaded */
    amg *g = pc->fact;
    sla_status st = SLA_OK;
    pthread_mutex_lock(&amg_lock);
    HYPRE_ClearAllErrors();
    if (r == z) { /* the cycle reads r while it writes z */
        if (!g->rcopy) g->rcopy = sla__malloc(&g->alloc, (size_t)g->n, sizeof *g->rcopy);
        if (!g->rcopy) st = SLA_ERR_NOMEM;
        else sla__copy(g->n, r, g->rcopy);
        r = g->rcopy;
    }
    if (st == SLA_OK && g->one_level) {
        if (!g->t && (st = tcycle_build(g))) tcycle_free(g);
        if (st == SLA_OK) {
            sla__copy(g->n, r, z);
            if (transpose) coarse_solve_t(g->t, z);
            else coarse_solve(g->t, z);
        }
    } else if (st == SLA_OK && g->dist) {
        if (!transpose || (g->sym_hint && g->self_adjoint)) st = cycle_forward(g, r, z);
        else st = cycle_adjoint_hierarchy(g, r, z);
    } else if (st == SLA_OK) {
        if (transpose && g->symmetric < 0) g->symmetric = par_symmetric(g);
        if (!transpose || (g->symmetric == 1 && g->self_adjoint)) st = cycle_forward(g, r, z);
        else st = cycle_transposed(g, r, z);
    }
    pthread_mutex_unlock(&amg_lock);
    return st;
}

/* ---- life cycle ----------------------------------------------------------------------- */

static void amg_free(amg *g)
{
    if (!g) return;
    pthread_mutex_lock(&amg_lock);
    tcycle_free(g);
    thier_free(g);
    if (g->solver) HYPRE_BoomerAMGDestroy(g->solver);
    if (g->par) hypre_ParCSRMatrixDestroy((hypre_ParCSRMatrix *)g->par);
    if (g->vb) HYPRE_ParVectorDestroy(g->vb);
    if (g->vx) HYPRE_ParVectorDestroy(g->vx);
    HYPRE_ClearAllErrors();
    pthread_mutex_unlock(&amg_lock);
    sla__free(&g->alloc, g->steps);
    sla__free(&g->alloc, g->rcopy);
    sla_allocator a = g->alloc;
    sla__free(&a, g);
}

static void amg_destroy(sla__pc *pc)
{
    amg_free(pc->fact);
    pc->fact = NULL;
}

/* New values on the same pattern: keep the hierarchy for `reuse`
 * refreshes, then rebuild it from the current values. */
static sla_status amg_refresh(sla_ctx *ctx, sla__pc *pc, const sla_matrix *A, sla_int ib)
{
    amg *g = pc->fact;
    if (!g) return SLA_OK; /* n = 0 */
    if (g->o.reuse > 0 && g->kept < g->o.reuse) {
        g->kept++;
        return SLA_OK;
    }
    pthread_mutex_lock(&amg_lock);
    HYPRE_ClearAllErrors();
    sla_status st = par_fill(ctx, (hypre_ParCSRMatrix *)g->par, A, ib); /* same pattern */
    if (!st) st = boomer_setup(ctx, g);
    pthread_mutex_unlock(&amg_lock);
    return st;
}

sla_status sla__amg_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_amg_options *o,
                          sla__pc *pc)
{
    if (!A || !o || !pc)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "precond amg set-up: NULL argument");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION,
                          "precond amg needs a square matrix (got %lld x %lld)",
                          (long long)A->nrows, (long long)A->ncols);
    sla_status st = check_options(ctx, o);
    if (st) return st;
    if ((st = check_size(ctx, A))) return st;
    pc->refresh = amg_refresh;
    if (A->nrows == 0) return SLA_OK; /* the identity */
    amg *g = sla__calloc(&pc->alloc, 1, sizeof *g);
    if (!g) return sla__error(ctx, SLA_ERR_NOMEM, "precond amg: out of memory");
    g->o = *o;
    g->alloc = pc->alloc;
    g->n = A->nrows;
    pthread_mutex_lock(&amg_lock);
    st = hypre_start(ctx);
    if (!st) {
        HYPRE_ClearAllErrors();
        st = shell_create(ctx, (HYPRE_Int)g->n, &g->vb);
    }
    if (!st) st = shell_create(ctx, (HYPRE_Int)g->n, &g->vx);
    if (!st) st = par_create(ctx, g, A, ib);
    if (!st) st = boomer_setup(ctx, g);
    pthread_mutex_unlock(&amg_lock);
    if (st) {
        amg_free(g);
        return st;
    }
    pc->fact = g;
    pc->apply = amg_apply;
    pc->destroy = amg_destroy;
    return SLA_OK;
}


/* ---- distributed: one hierarchy over the ranks of a communicator ------------------ */

#ifdef SLA_HAVE_MPI
#include "../dist/dist_internal.h" /* sla__dist_agree */

/* A vector shell over comm holding this rank's rows [lo, hi). */
static sla_status shell_create_dist(sla_ctx *ctx, MPI_Comm comm, HYPRE_BigInt n, HYPRE_BigInt lo,
                                    HYPRE_BigInt hi, HYPRE_ParVector *v)
{
    HYPRE_BigInt part[2] = {lo, hi};
    int ierr = HYPRE_ParVectorCreate(comm, n, part, v);
    if (ierr) return hypre_fail(ctx, ierr, "HYPRE_ParVectorCreate");
    hypre_Vector *loc = hypre_ParVectorLocalVector((hypre_ParVector *)*v);
    hypre_VectorOwnsData(loc) = 0;
    hypre_VectorData(loc) = NULL;
    return SLA_OK;
}

/* The off-diagonal block: hypre's offd is the same compressed layout. */
static void par_fill_offd(hypre_ParCSRMatrix *M, const sla_matrix *B)
{
    hypre_CSRMatrix *o = hypre_ParCSRMatrixOffd(M);
    HYPRE_Int *oi = hypre_CSRMatrixI(o), *oj = hypre_CSRMatrixJ(o);
    HYPRE_Complex *ox = hypre_CSRMatrixData(o);
    for (sla_int i = 0; i <= B->nrows; i++) oi[i] = (HYPRE_Int)B->rowptr[i];
    for (sla_int k = 0; k < B->nnz; k++) {
        oj[k] = (HYPRE_Int)B->colind[k];
        ox[k] = sla__val(B, 0, k);
    }
}

static sla_status par_create_dist(sla_ctx *ctx, amg *g, MPI_Comm comm, HYPRE_BigInt n, HYPRE_BigInt lo,
                                  const sla_int *ghosts)
{
    const sla_matrix *D = g->ddiag, *O = g->doffd;
    HYPRE_BigInt starts[2] = {lo, lo + (HYPRE_BigInt)D->nrows};
    HYPRE_Int ncoff = O ? (HYPRE_Int)O->ncols : 0, nnzoff = O ? (HYPRE_Int)O->nnz : 0;
    hypre_ParCSRMatrix *M =
        hypre_ParCSRMatrixCreate(comm, n, n, starts, starts, ncoff, (HYPRE_Int)D->nnz, nnzoff);
    if (!M) return sla__error(ctx, SLA_ERR_NOMEM, "precond amg: out of memory for the matrix");
    g->par = (HYPRE_ParCSRMatrix)M;
    int ierr = hypre_ParCSRMatrixInitialize(M);
    if (ierr || (D->nnz && !hypre_CSRMatrixData(hypre_ParCSRMatrixDiag(M))) ||
        (nnzoff && !hypre_CSRMatrixData(hypre_ParCSRMatrixOffd(M))))
        return hypre_fail(ctx, ierr ? ierr : HYPRE_ERROR_MEMORY, "copying the matrix");
    if (ncoff && !hypre_ParCSRMatrixColMapOffd(M)) {
        hypre_ParCSRMatrixColMapOffd(M) = hypre_CTAlloc(HYPRE_BigInt, ncoff, HYPRE_MEMORY_HOST);
        if (!hypre_ParCSRMatrixColMapOffd(M))
            return sla__error(ctx, SLA_ERR_NOMEM, "precond amg: out of memory for the matrix");
    }
    for (HYPRE_Int j = 0; j < ncoff; j++) hypre_ParCSRMatrixColMapOffd(M)[j] = (HYPRE_BigInt)ghosts[j];
    sla_status st = par_fill(ctx, M, D, 0);
    if (st) return st;
    if (O) par_fill_offd(M, O);
    return SLA_OK;
}

/* Collective parts of the matrix set-up (every rank calls them, whatever
 * its local status: hypre's communication must not be left half done). */
static sla_status par_finish_dist(sla_ctx *ctx, amg *g)
{
    int ierr = par_commit((hypre_ParCSRMatrix *)g->par);
    return ierr ? hypre_fail(ctx, ierr, "the matrix's communication package") : SLA_OK;
}

static sla_status boomer_setup_dist(sla_ctx *ctx, amg *g)
{
    sla_status st = boomer_setup(ctx, g);
    /* the recorded steps serve only to tell whether the cycle is
     * self-adjoint; the exact transposed cycle and the dense one-level
     * solve of the serial path read the local block alone */
    g->one_level = false;
    g->symmetric = g->sym_hint;
    return st;
}

static sla_status amg_refresh_dist(sla_ctx *ctx, sla__pc *pc, const sla_matrix *A, sla_int ib)
{
    (void)A;
    (void)ib;
    amg *g = pc->fact;
    if (g->o.reuse > 0 && g->kept < g->o.reuse) {
        g->kept++;
        return SLA_OK;
    }
    MPI_Comm comm = hypre_ParCSRMatrixComm((hypre_ParCSRMatrix *)g->par);
    pthread_mutex_lock(&amg_lock);
    HYPRE_ClearAllErrors();
    hypre_ParCSRMatrix *M = (hypre_ParCSRMatrix *)g->par;
    sla_status st = par_fill(ctx, M, g->ddiag, 0); /* same pattern */
    if (g->doffd) par_fill_offd(M, g->doffd);
    thier_free(g); /* rebuilt from the new values at the next transposed apply */
    if (!(st = sla__dist_agree(ctx, comm, st))) st = boomer_setup_dist(ctx, g);
    pthread_mutex_unlock(&amg_lock);
    return sla__dist_agree(ctx, comm, st);
}

sla_status sla__amg_create_dist(sla_ctx *ctx, MPI_Comm comm, sla_int n_global, sla_int row_start,
                                const sla_matrix *diag, const sla_matrix *offd, const sla_int *ghosts,
                                bool symmetric, const sla_amg_options *o, sla__pc **out)
{
    *out = NULL;
    sla_status st = SLA_OK;
    if (!diag || !o || (offd && offd->ncols && !ghosts))
        st = sla__error(ctx, SLA_ERR_ARGUMENT, "precond amg set-up: NULL argument");
    else if ((st = check_options(ctx, o)))
        ;
    else if (sizeof(HYPRE_BigInt) < sizeof(sla_int) && n_global > INT_MAX)
        st = sla__error(ctx, SLA_ERR_TOO_LARGE,
                        "precond amg: n = %lld exceeds hypre's 32-bit indices (rebuild hypre with "
                        "--enable-bigint)",
                        (long long)n_global);
    else if ((st = check_size(ctx, diag)))
        ;
    else if (offd && offd->nnz > INT_MAX)
        st = sla__error(ctx, SLA_ERR_TOO_LARGE, "precond amg: %lld off-block entries exceed hypre's 32-bit indices",
                        (long long)offd->nnz);
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__pc *pc = NULL;
    amg *g = NULL;
    if (!st) {
        pc = sla__calloc(&a, 1, sizeof *pc);
        g = pc ? sla__calloc(&a, 1, sizeof *g) : NULL;
        if (!g) st = sla__error(ctx, SLA_ERR_NOMEM, "precond amg: out of memory");
    }
    if ((st = sla__dist_agree(ctx, comm, st))) {
        sla__free(&a, g);
        sla__free(&a, pc);
        return st;
    }
    pc->kind = SLA_PRECOND_AMG;
    pc->n = diag->nrows;
    pc->alloc = a;
    g->o = *o;
    g->alloc = a;
    g->n = diag->nrows;
    g->dist = true;
    g->sym_hint = symmetric;
    g->ddiag = diag;
    g->doffd = offd && offd->ncols ? offd : NULL;
    pc->fact = g;
    pc->apply = amg_apply;
    pc->destroy = amg_destroy;
    pc->refresh = amg_refresh_dist;
    HYPRE_BigInt lo = (HYPRE_BigInt)row_start, hi = lo + (HYPRE_BigInt)diag->nrows;
    pthread_mutex_lock(&amg_lock);
    st = hypre_start(ctx);
    if (!(st = sla__dist_agree(ctx, comm, st))) {
        HYPRE_ClearAllErrors();
        st = shell_create_dist(ctx, comm, (HYPRE_BigInt)n_global, lo, hi, &g->vb);
        if (!st) st = shell_create_dist(ctx, comm, (HYPRE_BigInt)n_global, lo, hi, &g->vx);
        if (!st) st = par_create_dist(ctx, g, comm, (HYPRE_BigInt)n_global, lo, ghosts);
        if (!(st = sla__dist_agree(ctx, comm, st))) st = sla__dist_agree(ctx, comm, par_finish_dist(ctx, g));
        if (!st) st = sla__dist_agree(ctx, comm, boomer_setup_dist(ctx, g));
    }
    pthread_mutex_unlock(&amg_lock);
    if (st) {
        sla__pc_destroy(&pc);
        return st;
    }
    *out = pc;
    return SLA_OK;
}

#endif /* SLA_HAVE_MPI */

#endif
