/* petsc_poisson — the anchor comparison's PETSc side: CG + GAMG or CG +
 * hypre BoomerAMG through PETSc's public API, on the matrices sla generates
 * (anchor_gen.h: sla_gen_poisson 2-D/3-D, sla_gen_diffusion2d), one JSON
 * line per run.
 *
 *   mpiexec -n P petsc_poisson --problem p2d|p3d|diff --N N [--pc gamg|hypre]
 *                              [--rtol 1e-8] [--steps K] [--change 0.01]
 *                              [--start cold|warm] [--adjoint 0|1] [--keep-pc 0|1]
 *                              [--json FILE] [PETSc options, e.g. -pc_gamg_threshold 0.02]
 *
 * Each rank assembles its block of rows (MatCreateAIJ + MatSetValues; not
 * timed) and the driver prints nnz and the position-weighted checksum of
 * anchor_gen.h, which sla_anchor prints for sla's own generator (run_all.sh
 * compares them). b = A 1 (diff: of the first kappa), x0 = 0, CG with the
 * unpreconditioned norm (KSP_NORM_UNPRECONDITIONED: ||r|| / ||b|| <= rtol,
 * as sla), first solve: set-up (KSPCreate .. KSPSetUp) + KSPSolve. The
 * residual is the true one, ||b - A x|| / ||b|| computed after. Times are
 * the maximum over ranks. With --steps K (problem diff, the training step):
 * K times, kappa *= 1 + change u (bench_saamg_reuse's sequence), the new
 * values set into A, then refresh (PCSetUp on the new values; GAMG with
 * PCGAMGSetReuseInterpolation, hypre a new set-up) + KSPSolve, medians over
 * the K steps; --keep-pc 1: the first solve's preconditioner kept whole
 * (KSPSetReusePreconditioner: the refresh sets the operator only; the
 * counterpart of sla's saamg_reuse = hierarchy). --start warm: each
 * step's KSPSolve starts from the previous x (KSPSetInitialGuessNonzero;
 * cold, the default: x0 = 0). --adjoint 1:
 * each step then also solves the adjoint system A^T l = 1 with the same
 * refreshed preconditioner, from l = 0 (--start warm: from the previous
 * step's l), as sla_anchor does with
 * sla_solver_solve_vjp; A is symmetric (MAT_SPD), so this is KSPSolve
 * with the right-hand side 1 (KSPSolveTranspose with PCHYPRE, PETSc
 * 3.18.5, returned after 1 iteration with ||1 - A l|| / ||1|| = 1.0: not
 * a solution; the driver checks the adjoint's true residual and reports
 * converged false above 10 rtol). "adjoint_s" its median, "step_s" the
 * median of refresh + solve + adjoint. "other_load_pct": the share of the machine's CPUs that
 * processes other than the ranks used meanwhile (/proc/stat). */
#define _POSIX_C_SOURCE 200809L
#include <petscksp.h>

#include "../bench_util.h"
#include "anchor_gen.h"

#define CHK(call)                                                                                  \
    do {                                                                                           \
        PetscErrorCode ierr_ = (call);                                                             \
        if (ierr_) {                                                                               \
            fprintf(stderr, "petsc_poisson: %s failed (%d)\n", #call, (int)ierr_);                 \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

static int rank_, size_;

/* A moment of the machine's busy time and all ranks' own CPU time. */
static load_mark mark(void)
{
    load_mark m = load_now();
    m.self = all_sum(m.self);
    (void)MPI_Bcast(&m.busy, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return m;
}

/* Values of the local rows [rs, re) into A (pattern fixed). */
static void set_rows(Mat A, const anchor_grid *g, const double *kappa, PetscInt rs, PetscInt re,
                     double *cks, long long *nnz)
{
    long long cols[7];
    double vals[7];
    PetscInt pc[7];
    double s = 0.0;
    long long cnt = 0;
    for (PetscInt p = rs; p < re; p++) {
        int k = anchor_row(g, kappa, p, cols, vals);
        for (int t = 0; t < k; t++) pc[t] = (PetscInt)cols[t], s += vals[t] * anchor_weight(p, cols[t]);
        cnt += k;
        CHK(MatSetValues(A, 1, &p, k, pc, vals, INSERT_VALUES));
    }
    CHK(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    CHK(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    *cks = all_sum(s);
    *nnz = (long long)all_sum((double)cnt);
}

static double true_residual(Mat A, Vec b, Vec x, Vec r)
{
    PetscReal nr, nb;
    CHK(MatMult(A, x, r));
    CHK(VecAYPX(r, -1.0, b)); /* r = b - A x */
    CHK(VecNorm(r, NORM_2, &nr));
    CHK(VecNorm(b, NORM_2, &nb));
    return (double)(nr / nb);
}

int main(int argc, char **argv)
{
    const char *problem = "p2d", *pcname = "gamg", *json = NULL, *start = "cold";
    long long N = 100;
    double rtol = 1e-8, change = 0.01;
    int steps = 0, adjoint = 0, keep = 0;
    CHK(PetscInitialize(&argc, &argv, NULL, NULL));
    MPI_Comm_rank(PETSC_COMM_WORLD, &rank_);
    MPI_Comm_size(PETSC_COMM_WORLD, &size_);
    for (int a = 1; a + 1 < argc; a++) {
        if (!strcmp(argv[a], "--problem")) problem = argv[++a];
        else if (!strcmp(argv[a], "--N")) N = atoll(argv[++a]);
        else if (!strcmp(argv[a], "--pc")) pcname = argv[++a];
        else if (!strcmp(argv[a], "--rtol")) rtol = atof(argv[++a]);
        else if (!strcmp(argv[a], "--steps")) steps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--change")) change = atof(argv[++a]);
        else if (!strcmp(argv[a], "--json")) json = argv[++a];
        else if (!strcmp(argv[a], "--start")) start = argv[++a];
        else if (!strcmp(argv[a], "--adjoint")) adjoint = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--keep-pc")) keep = atoi(argv[++a]);
    }
    int warm = !strcmp(start, "warm");
    int dim = !strcmp(problem, "p3d") ? 3 : 2, diff = !strcmp(problem, "diff");
    if ((strcmp(problem, "p2d") && dim == 2 && !diff) || N < 2 || (steps && !diff) || steps > 64 ||
        (strcmp(pcname, "gamg") && strcmp(pcname, "hypre")) || (strcmp(start, "cold") && !warm) ||
        adjoint < 0 || adjoint > 1 || ((adjoint || warm || keep) && !steps) || keep < 0 || keep > 1) {
        if (!rank_)
            fprintf(stderr, "usage: petsc_poisson --problem p2d|p3d|diff --N N [--pc gamg|hypre] "
                            "[--rtol R] [--steps K (diff only, <= 64)] [--change C] [--start cold|warm] "
                            "[--adjoint 0|1] [--keep-pc 0|1] (with --steps) [--json FILE]\n");
        PetscFinalize();
        return 2;
    }
    anchor_grid g = anchor_grid_make(dim, N);
    double *kappa = NULL;
    if (diff) {
        kappa = malloc((size_t)((N + 1) * (N + 1)) * sizeof *kappa);
        anchor_kappa0(N, kappa);
    }

    /* ---- the matrix, b = A 1 (not timed) ---- */
    Mat A;
    CHK(MatCreateAIJ(PETSC_COMM_WORLD, PETSC_DECIDE, PETSC_DECIDE, (PetscInt)g.n, (PetscInt)g.n, 2 * dim + 1,
                     NULL, 2 * dim, NULL, &A));
    CHK(MatSetOption(A, MAT_SPD, PETSC_TRUE));
    PetscInt rs, re;
    CHK(MatGetOwnershipRange(A, &rs, &re));
    double cks;
    long long nnz;
    set_rows(A, &g, kappa, rs, re, &cks, &nnz);
    Vec b, x, r, one, lam;
    CHK(MatCreateVecs(A, &x, &b));
    CHK(VecDuplicate(b, &r));
    CHK(VecDuplicate(b, &lam));
    CHK(VecSet(lam, 0.0));
    CHK(VecDuplicate(b, &one));
    CHK(VecSet(one, 1.0));
    CHK(MatMult(A, one, b));

    /* ---- first solve: set-up + solve ---- */
    KSP ksp;
    PC pc;
    load_mark l0 = mark();
    MPI_Barrier(PETSC_COMM_WORLD);
    double t0 = MPI_Wtime();
    CHK(KSPCreate(PETSC_COMM_WORLD, &ksp));
    CHK(KSPSetOperators(ksp, A, A));
    CHK(KSPSetType(ksp, KSPCG));
    CHK(KSPSetNormType(ksp, KSP_NORM_UNPRECONDITIONED));
    CHK(KSPSetTolerances(ksp, rtol, 0.0, PETSC_DEFAULT, 100000));
    CHK(KSPGetPC(ksp, &pc));
    if (!strcmp(pcname, "gamg")) {
        CHK(PCSetType(pc, PCGAMG));
        if (steps) CHK(PCGAMGSetReuseInterpolation(pc, PETSC_TRUE));
    } else {
        CHK(PCSetType(pc, PCHYPRE));
        CHK(PCHYPRESetType(pc, "boomeramg"));
    }
    CHK(KSPSetFromOptions(ksp));
    CHK(KSPSetUp(ksp));
    double t1 = MPI_Wtime();
    CHK(KSPSolve(ksp, b, x));
    double t2 = MPI_Wtime();
    double setup = all_max(t1 - t0), solve = all_max(t2 - t1), total = all_max(t2 - t0);
    PetscInt its;
    KSPConvergedReason reason;
    CHK(KSPGetIterationNumber(ksp, &its));
    CHK(KSPGetConvergedReason(ksp, &reason));
    double res = true_residual(A, b, x, r);
    double other = other_load_pct(l0, mark());

    /* ---- training steps: new values, refresh + solve ---- */
    double tr[64], ts[64], tt[64], it[64], rr[64], ta[64], ia[64], tw[64];
    double adj_s = 0.0, step_s = total, adj_its = 0.0;
    double first_total = total, first_setup = setup;
    if (steps) {
        unsigned long long s2 = 777;
        if (warm) CHK(KSPSetInitialGuessNonzero(ksp, PETSC_TRUE)); /* x holds the last solution */
        l0 = mark();
        for (int st = 0; st < steps; st++) {
            anchor_kappa_step(N, change, &s2, kappa);
            double c2;
            long long n2;
            set_rows(A, &g, kappa, rs, re, &c2, &n2); /* new values, not timed */
            MPI_Barrier(PETSC_COMM_WORLD);
            double a0 = MPI_Wtime();
            CHK(KSPSetOperators(ksp, A, A));
            if (keep) CHK(KSPSetReusePreconditioner(ksp, PETSC_TRUE)); /* the set-up's PC kept */
            CHK(PCSetUp(pc));
            double a1 = MPI_Wtime();
            CHK(KSPSolve(ksp, b, x));
            double a2 = MPI_Wtime();
            tr[st] = all_max(a1 - a0), ts[st] = all_max(a2 - a1), tt[st] = all_max(a2 - a0);
            CHK(KSPGetIterationNumber(ksp, &its));
            it[st] = (double)its;
            KSPConvergedReason fr;
            CHK(KSPGetConvergedReason(ksp, &fr));
            ta[st] = ia[st] = 0.0;
            if (adjoint) { /* A^T l = 1 with the same preconditioner, from l = 0 */
                if (!warm) CHK(KSPSetInitialGuessNonzero(ksp, PETSC_FALSE));
                MPI_Barrier(PETSC_COMM_WORLD);
                double a3 = MPI_Wtime();
                CHK(KSPSolve(ksp, one, lam)); /* A^T = A: see the header */
                ta[st] = all_max(MPI_Wtime() - a3);
                PetscInt ai;
                KSPConvergedReason ar;
                CHK(KSPGetIterationNumber(ksp, &ai));
                CHK(KSPGetConvergedReason(ksp, &ar));
                ia[st] = (double)ai;
                double lres = true_residual(A, one, lam, r);
                if (lres > 10.0 * rtol) ar = KSP_DIVERGED_BREAKDOWN; /* not a solution */
                if (ar <= 0) fr = ar;
            }
            tw[st] = tt[st] + ta[st];
            if (fr <= 0) reason = fr;
            rr[st] = true_residual(A, b, x, r);
        }
        other = other_load_pct(l0, mark());
        if (reason > 0) CHK(KSPGetConvergedReason(ksp, &reason));
        setup = median(tr, steps), solve = median(ts, steps), total = median(tt, steps);
        its = (PetscInt)median(it, steps);
        adj_s = median(ta, steps), adj_its = median(ia, steps), step_s = adjoint ? median(tw, steps) : total;
        res = rr[0];
        for (int st = 1; st < steps; st++) res = fmax(res, rr[st]);
    }

    if (!rank_) {
        char line[1536];
        snprintf(line, sizeof line,
                 "{\"system\":\"petsc\",\"solver\":\"cg+%s%s\",\"problem\":\"%s\",\"N\":%lld,\"n\":%lld,"
                 "\"nnz\":%lld,\"checksum\":%.17g,\"ranks\":%d,\"threads\":1,\"step\":\"%s\",\"steps\":%d,"
                 "\"change\":%g,\"rtol\":%g,\"start\":\"%s\",\"setup_s\":%.5f,\"solve_s\":%.5f,\"total_s\":%.5f,"
                 "\"first_setup_s\":%.5f,\"first_total_s\":%.5f,\"iterations\":%lld,\"residual\":%.3e,"
                 "\"adjoint\":%s,\"adjoint_s\":%.5f,\"adjoint_iterations\":%lld,\"step_s\":%.5f,\"converged\":%s,"
                 "\"other_load_pct\":%.1f,\"petsc\":\"%d.%d.%d\"}",
                 pcname, keep ? "(keep-pc)" : "", problem, N, g.n, nnz, cks, size_,
                 steps ? "train" : "first", steps, change, rtol, start,
                 setup, solve, total, first_setup, first_total, (long long)its, res, adjoint ? "true" : "false", adj_s,
                 (long long)adj_its, step_s, reason > 0 ? "true" : "false", other,
                 PETSC_VERSION_MAJOR, PETSC_VERSION_MINOR, PETSC_VERSION_SUBMINOR);
        printf("%s\n", line);
        FILE *f = json ? fopen(json, "a") : NULL;
        if (f) fprintf(f, "%s\n", line), fclose(f);
    }
    CHK(KSPDestroy(&ksp));
    CHK(VecDestroy(&x));
    CHK(VecDestroy(&b));
    CHK(VecDestroy(&r));
    CHK(VecDestroy(&one));
    CHK(VecDestroy(&lam));
    CHK(MatDestroy(&A));
    free(kappa);
    CHK(PetscFinalize());
    return 0;
}
