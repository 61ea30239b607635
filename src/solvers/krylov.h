/* Private: the operator and preconditioner interfaces the Krylov methods
 * are written against, so the same CG runs on a local matrix, its
 * transpose, and (later) a distributed or device matrix. */
#ifndef SLA_KRYLOV_H
#define SLA_KRYLOV_H

#include "../core/internal.h"

/* A square linear operator. apply_dot, when set, computes y = A x and
 * returns the local x . y in one pass (the fused CG product). allreduce,
 * when set, sums `count` local partial sums across processes in place. */
typedef struct sla__op {
    sla_int n;
    sla_int n_global;   /* size summed over processes (n when local) */
    int nt;
    void *data;
    void (*apply)(void *data, const double *x, double *y, int nt);
    double (*apply_dot)(void *data, const double *x, double *y, int nt);
    void (*allreduce)(void *comm, double *vals, int count);
    void *comm;
} sla__op;

/* An operator over value array ib of A (transpose: A^T, through `work` of
 * nt * n doubles for threaded scattering, or through AT when not NULL). */
typedef struct sla__matop {
    const sla_matrix *A;
    const sla_matrix *AT; /* explicit transpose, optional */
    sla_int ib;
    bool transpose;
    double *work;
} sla__matop;

void sla__matop_init(sla__op *op, sla__matop *m, int nt);

/* Global sums through op->allreduce (no-op locally). */
double sla__op_dot(const sla__op *op, const double *x, const double *y);
void sla__op_sum(const sla__op *op, double *vals, int count);
/* Global ||x||_2, safe from overflow and underflow (see sla__nrm2). */
double sla__op_nrm2(const sla__op *op, const double *x);

/* A preconditioner: z = M^-1 r, or z = M^-T r when transpose is set.
 * apply == NULL means the identity. destroy frees `fact`. */
typedef struct sla__pc sla__pc;
struct sla__pc {
    sla_precond_kind kind;
    sla_int n;
    sla_allocator alloc;
    double *dinv;      /* Jacobi: 1 / a_ii */
    void *fact;        /* SSOR / IC(0) / ILU(0) data, owned */
    sla_user_precond user;
    sla_status (*apply)(const sla__pc *pc, bool transpose, const double *r, double *z, int nt);
    /* Optional (saamg with saamg_reuse = hierarchy): apply, and in its last
     * pass w = A z with dots = (r.z, z.w) (this process's sums), A being the
     * matrix whose value array is aw_vals; SLA_ERR_UNSUPPORTED when that
     * pass cannot run this time (nothing done: use apply). CG uses it when
     * its operator multiplies by aw_vals (sla__kopts.a_vals). */
    sla_status (*apply_aw)(const sla__pc *pc, bool transpose, const double *r, double *z, double *w,
                           double dots[2], int nt);
    const void *aw_vals;
    void (*destroy)(sla__pc *pc);
    /* Optional: update for new values of the same pattern, reusing what can
     * be reused (e.g. an AMG hierarchy); NULL means rebuild from scratch. */
    sla_status (*refresh)(sla_ctx *ctx, sla__pc *pc, const sla_matrix *A, sla_int ib);
    /* Set by a caller that has just found A_ib exactly symmetric (values and
     * pattern), before refresh: the preconditioner may skip its own check.
     * The refresh clears it. */
    bool sym_known;
    /* IC(0), ILU(0), ILUT: shift zero or tiny pivots (set before set-up,
     * from options.ilu_shift) instead of failing; set-up counts the
     * pivots it replaced in `shifted` and says so in `note` ("" if none),
     * which the solve info's note repeats. */
    bool shift;
    sla_int shifted;
    char note[160];
};

/* Set up a preconditioner of `kind` for value array ib of the square
 * matrix A. Errors: SLA_ERR_SINGULAR (zero or missing diagonal, zero
 * pivot without opts->ilu_shift), SLA_ERR_NOT_SPD (IC(0) breakdown), SLA_ERR_ARGUMENT, SLA_ERR_NOMEM,
 * each with a message naming the row. *out is NULL on failure. */
sla_status sla__pc_create(sla_ctx *ctx, sla_precond_kind kind, const sla_matrix *A, sla_int ib,
                          const sla_solver_options *opts, sla__pc **out);
sla_status sla__pc_apply(const sla__pc *pc, bool transpose, const double *r, double *z, int nt);
void sla__pc_destroy(sla__pc **pc);

/* The factorized preconditioners (precond_fact.c): fill pc->fact,
 * pc->apply and pc->destroy. pc->alloc and pc->n are already set. */
sla_status sla__ssor_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, double omega, sla__pc *pc);
sla_status sla__ic0_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla__pc *pc);
sla_status sla__ilu0_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla__pc *pc);
/* ILUT(droptol, fill) with threshold column pivoting (precond_ilut.c);
 * see sla_solver_options' ilut_* fields. */
sla_status sla__ilut_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, double droptol,
                           double fill, double pivot, sla__pc *pc);
/* BoomerAMG (src/backends/hypre_amg.c); SLA_ERR_UNAVAILABLE when hypre is not in the build. */
sla_status sla__amg_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_amg_options *o,
                          sla__pc *pc);
/* Smoothed-aggregation AMG (precond_saamg.c): always available. reuse:
 * what a refresh keeps (sla_solver_options.saamg_reuse); theta: level 0's
 * strength threshold (sla_solver_options.saamg_theta; 0: the default). */
sla_status sla__saamg_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, int reuse, int smoother,
                            double theta, sla__pc *pc);
/* The sizes of an saamg preconditioner's hierarchy (pc->kind saamg). */
void sla__saamg_hierarchy(const sla__pc *pc, sla_hierarchy_info *out);
#ifdef SLA_HAVE_MPI
#include <mpi.h>
/* What the distributed AMG needs from the distributed layer, which fills
 * it: the communicator, and the collective agreement on a status (every
 * rank returns the first error any rank met, with its message; the dist
 * layer's sla__dist_agree). The backend keeps a copy. */
typedef struct sla__amg_comm {
    MPI_Comm comm;
    sla_status (*agree)(sla_ctx *ctx, MPI_Comm comm, sla_status st);
} sla__amg_comm;

/* One BoomerAMG hierarchy over all ranks of cm->comm (collective; the
 * distributed layer's precond amg). This rank owns the global rows
 * [row_start, row_start + diag->nrows) of an n_global x n_global matrix:
 * diag is its block on its own columns (local numbering), offd the block on
 * the ghost columns, whose global numbers are ghosts[] (increasing). Both
 * blocks are borrowed: the preconditioner reads them again at refresh
 * (pc->refresh ignores its A and ib). symmetric: the caller vouches that A
 * is symmetric (CG, MINRES), so a transposed apply is the forward cycle when
 * that cycle is self-adjoint; otherwise the first transposed apply builds
 * a second hierarchy from A^T (hypre's distributed transpose) and every
 * transposed apply is one cycle of it: AMG for the adjoint system, not the
 * exact transpose of the forward cycle (which only the serial preconditioner
 * replays; hypre's BoomerAMGSolveT refuses the l1 Gauss-Seidel smoothers).
 * *out is NULL on failure;
 * the status is this rank's (the caller agrees it across ranks). */
sla_status sla__amg_create_dist(sla_ctx *ctx, const sla__amg_comm *cm, sla_int n_global, sla_int row_start,
                                const sla_matrix *diag, const sla_matrix *offd, const sla_int *ghosts,
                                bool symmetric, const sla_amg_options *o, sla__pc **out);
#endif

/* z = M^-1 r (M^-T r when transpose); the identity when M is NULL. */
static inline sla_status sla__pc_run(const sla__op *A, const sla__pc *M, bool transpose,
                                     const double *r, double *z)
{
    if (!M || !M->apply) {
        sla__copy(A->n, r, z);
        return SLA_OK;
    }
    return M->apply(M, transpose, r, z, A->nt);
}

/* Settings of one Krylov run. */
typedef struct sla__kopts {
    double rtol, atol;
    sla_int maxiter;
    int restart;
    bool use_x0;
    bool pc_transpose; /* apply M^-T (adjoint solves) */
    sla_monitor_fn monitor;
    void *monitor_user;
    sla_int monitor_every;
    double deadline;   /* sla__now() after which the solve stops (0: none) */
    const void *a_vals; /* the value array the operator multiplies by (a plain CSR
                         * product), or NULL: CG may then take A z from the
                         * preconditioner (sla__pc.apply_aw) */
} sla__kopts;

/* Each method solves A x = b with preconditioner M (may be NULL). They
 * fill info->iterations, residual, residual_abs, rhs_norm, reason and
 * converged, checking convergence on the true residual b - A x before
 * reporting it. Return SLA_OK, SLA_NOT_CONVERGED, or an error
 * (SLA_ERR_NOMEM, a preconditioner's error). */
typedef sla_status (*sla__krylov_fn)(sla_ctx *ctx, const sla__op *A, const sla__pc *M,
                                     const double *b, double *x, const sla__kopts *o,
                                     sla_solve_info *info);

/* Shared by the methods (krylov_common.c). */
/* r = b - A x; returns ||r|| (global). */
double sla__true_residual(const sla__op *A, const double *b, const double *x, double *r);
/* Fill the report from the final true residual. */
void sla__kinfo_finish(sla_solve_info *info, sla_int iterations, double res_abs, double bnorm,
                       const sla__kopts *o, sla_reason reason_if_not_converged);
/* Tolerance max(rtol ||b||, atol). */
double sla__ktol(const sla__kopts *o, double bnorm);
/* A solve's start: *bnorm = ||b|| (global), *tol its tolerance; r = b - A x
 * with use_x0, else x = 0 and r = b. Returns ||r||. */
double sla__kstart(const sla__op *A, const sla__kopts *o, const double *b, double *x, double *r,
                   double *bnorm, double *tol);
/* Call the monitor if due, check the deadline; true means stop, and
 * sla__kstop_reason says why (SLA_DIVERGED_TIME or SLA_DIVERGED_USER). */
bool sla__kmonitor(const sla__kopts *o, sla_int it, double rel);
sla_reason sla__kstop_reason(const sla__kopts *o);
/* Record a preconditioner failure in ctx. */
sla_status sla__kpc_error(sla_ctx *ctx, sla_status st, const char *method);

sla_status sla__cg(sla_ctx *ctx, const sla__op *A, const sla__pc *M, const double *b, double *x,
                   const sla__kopts *o, sla_solve_info *info);
sla_status sla__bicgstab(sla_ctx *ctx, const sla__op *A, const sla__pc *M, const double *b,
                         double *x, const sla__kopts *o, sla_solve_info *info);
sla_status sla__gmres(sla_ctx *ctx, const sla__op *A, const sla__pc *M, const double *b,
                      double *x, const sla__kopts *o, sla_solve_info *info);
sla_status sla__minres(sla_ctx *ctx, const sla__op *A, const sla__pc *M, const double *b,
                       double *x, const sla__kopts *o, sla_solve_info *info);
/* The method function of a Krylov method, NULL for any other method. */
sla__krylov_fn sla__krylov_method(sla_method m);

#endif
