/* The AMG backend: precond amg as one hypre BoomerAMG cycle per apply.
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
#include "../solvers/krylov.h"

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
sla_status sla__amg_create_dist(sla_ctx *ctx, const sla__amg_comm *cm, sla_int n_global, sla_int row_start,
                                const sla_matrix *diag, const sla_matrix *offd, const sla_int *ghosts,
                                bool symmetric, const sla_amg_options *o, sla__pc **out)
{
    (void)cm, (void)n_global, (void)row_start, (void)diag, (void)offd, (void)ghosts, (void)symmetric,
        (void)o;
    *out = NULL;
    return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                      "precond amg is not available in this build: hypre was not found (install "
                      "libhypre-dev libopenmpi-dev and reconfigure)");
}
#endif

#else

#include "hypre_amg.h"

/* Interpolation on the aggressively coarsened levels (option agg_interp,
 * hypre's numbering): the default 1 = two-stage extended+i, truncated to
 * pmax entries per row like the other levels. Against hypre's default 4
 * (multipass) it took 2D Poisson at 1M unknowns from 18 to 11 CG
 * iterations and 2.5 to 1.9 s (2.3 to 1.5 s of CPU) for a slightly costlier
 * set-up; see bench/AMG_RESULTS.md. */

static pthread_mutex_t amg_lock = PTHREAD_MUTEX_INITIALIZER;
static bool amg_hypre_ready; /* MPI initialized (by us or the program) and HYPRE_Init done */

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


static int boomer_configure(HYPRE_Solver s, const sla_amg_options *o, int relax_up);

/* Set up BoomerAMG on g->par (the hierarchy of the matrix's current values).
 * Call with amg_lock held. */
static sla_status boomer_setup(sla_ctx *ctx, amg *g)
{
    const sla_amg_options *o = &g->o;
    sla__hypre_tcycle_free(g);
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
    sla_status st = sla__hypre_record_steps(ctx, g);
    if (st) return st;
    g->self_adjoint = sla__hypre_steps_self_adjoint(g);
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
        if (!g->t && (st = sla__hypre_tcycle_build(g))) sla__hypre_tcycle_free(g);
        if (st == SLA_OK) {
            sla__copy(g->n, r, z);
            if (transpose) sla__hypre_coarse_solve_t(g->t, z);
            else sla__hypre_coarse_solve(g->t, z);
        }
    } else if (st == SLA_OK && g->dist) {
        if (!transpose || (g->sym_hint && g->self_adjoint)) st = cycle_forward(g, r, z);
        else st = cycle_adjoint_hierarchy(g, r, z);
    } else if (st == SLA_OK) {
        if (transpose && g->symmetric < 0) g->symmetric = sla__hypre_par_symmetric(g);
        if (!transpose || (g->symmetric == 1 && g->self_adjoint)) st = cycle_forward(g, r, z);
        else st = sla__hypre_cycle_transposed(g, r, z);
    }
    pthread_mutex_unlock(&amg_lock);
    return st;
}

/* ---- life cycle ----------------------------------------------------------------------- */

static void amg_free(amg *g)
{
    if (!g) return;
    pthread_mutex_lock(&amg_lock);
    sla__hypre_tcycle_free(g);
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
/* With hierarchy reuse on, the solve info says whether the last refresh
 * kept the hierarchy or rebuilt it (honest reporting; the tests read it). */
static void reuse_note(sla__pc *pc, const amg *g, bool kept)
{
    if (g->o.reuse <= 0) return;
    if (kept)
        snprintf(pc->note, sizeof pc->note, "amg: hierarchy kept (refresh %d of %d on it)", (int)g->kept,
                 (int)g->o.reuse);
    else
        snprintf(pc->note, sizeof pc->note, "amg: hierarchy rebuilt from the current values");
}

static sla_status amg_refresh(sla_ctx *ctx, sla__pc *pc, const sla_matrix *A, sla_int ib)
{
    amg *g = pc->fact;
    if (!g) return SLA_OK; /* n = 0 */
    if (g->o.reuse > 0 && g->kept < g->o.reuse) {
        g->kept++;
        reuse_note(pc, g, true);
        return SLA_OK;
    }
    reuse_note(pc, g, false);
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
        reuse_note(pc, g, true);
        return SLA_OK;
    }
    reuse_note(pc, g, false);
    MPI_Comm comm = hypre_ParCSRMatrixComm((hypre_ParCSRMatrix *)g->par);
    pthread_mutex_lock(&amg_lock);
    HYPRE_ClearAllErrors();
    hypre_ParCSRMatrix *M = (hypre_ParCSRMatrix *)g->par;
    sla_status st = par_fill(ctx, M, g->ddiag, 0); /* same pattern */
    if (g->doffd) par_fill_offd(M, g->doffd);
    thier_free(g); /* rebuilt from the new values at the next transposed apply */
    if (!(st = g->comm.agree(ctx, comm, st))) st = boomer_setup_dist(ctx, g);
    pthread_mutex_unlock(&amg_lock);
    return g->comm.agree(ctx, comm, st);
}

sla_status sla__amg_create_dist(sla_ctx *ctx, const sla__amg_comm *cm, sla_int n_global, sla_int row_start,
                                const sla_matrix *diag, const sla_matrix *offd, const sla_int *ghosts,
                                bool symmetric, const sla_amg_options *o, sla__pc **out)
{
    *out = NULL;
    MPI_Comm comm = cm->comm;
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
    if ((st = cm->agree(ctx, comm, st))) {
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
    g->comm = *cm;
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
    if (!(st = cm->agree(ctx, comm, st))) {
        HYPRE_ClearAllErrors();
        st = shell_create_dist(ctx, comm, (HYPRE_BigInt)n_global, lo, hi, &g->vb);
        if (!st) st = shell_create_dist(ctx, comm, (HYPRE_BigInt)n_global, lo, hi, &g->vx);
        if (!st) st = par_create_dist(ctx, g, comm, (HYPRE_BigInt)n_global, lo, ghosts);
        if (!(st = cm->agree(ctx, comm, st))) st = cm->agree(ctx, comm, par_finish_dist(ctx, g));
        if (!st) st = cm->agree(ctx, comm, boomer_setup_dist(ctx, g));
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
