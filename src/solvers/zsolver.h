/* Private: the interfaces of the complex solver path. The complex solver
 * object (zsolver.c) runs complex Krylov methods (zkrylov.c) with complex
 * preconditioners (zprecond.c) on an operator, or a complex direct backend
 * (src/backends/, through sla__zdirect_backend) that factors once and
 * solves with A, A^T or A^H. Never installed. */
#ifndef SLA_ZSOLVER_H
#define SLA_ZSOLVER_H

#include "../core/internal.h"
#include "direct.h"
#include "krylov.h"

/* ---- Krylov ---------------------------------------------------------------- */

/* A square complex operator y = A x. pc_op: the apply of the
 * preconditioner that goes with it (0: M^-1 for A; 1: M^-T for A^T; 2:
 * M^-H for A^H), so one method solves with A, A^T or A^H. */
typedef struct sla__zop {
    sla_int n;
    int nt;
    void *data;
    void (*apply)(void *data, const sla__z *x, sla__z *y, int nt);
    int pc_op;
} sla__zop;

/* A complex preconditioner z = M^-1 r (op 0), M^-T r (1) or M^-H r (2);
 * apply == NULL means the identity. */
typedef struct sla__zpc sla__zpc;
struct sla__zpc {
    sla_precond_kind kind;
    sla_int n;
    sla_allocator alloc;
    void *data;
    sla_status (*apply)(const sla__zpc *pc, int op, const sla__z *r, sla__z *z, int nt);
    void (*destroy)(sla__zpc *pc);
    sla_int shifted; /* pivots replaced (ilu_shift), with a note */
    char note[160];
};

/* Each method solves A x = b (x holds the initial guess when o->use_x0) and
 * fills info as the real methods do (iterations, true residual, reason,
 * converged). cg: Hermitian positive definite A and M; minres: Hermitian A,
 * Hermitian positive definite M; cocg: complex symmetric A (A = A^T) with a
 * complex symmetric M (jacobi, ilu0 of a symmetric A); bicgstab, gmres:
 * any A. Return SLA_OK, SLA_NOT_CONVERGED, or an error. */
typedef sla_status (*sla__zkrylov_fn)(sla_ctx *ctx, const sla__zop *A, const sla__zpc *M,
                                      const sla__z *b, sla__z *x, const sla__kopts *o,
                                      sla_solve_info *info);

/* The methods (zkrylov.c, zkrylov_gmres.c); o->pc_transpose is ignored
 * (A->pc_op says which apply of M to use). The method registry's zkrylov
 * column points at them (methods.c). */
sla_status sla__zcg(sla_ctx *ctx, const sla__zop *A, const sla__zpc *M, const sla__z *b, sla__z *x,
                    const sla__kopts *o, sla_solve_info *info);
sla_status sla__zcocg(sla_ctx *ctx, const sla__zop *A, const sla__zpc *M, const sla__z *b, sla__z *x,
                      const sla__kopts *o, sla_solve_info *info);
sla_status sla__zminres(sla_ctx *ctx, const sla__zop *A, const sla__zpc *M, const sla__z *b,
                        sla__z *x, const sla__kopts *o, sla_solve_info *info);
sla_status sla__zbicgstab(sla_ctx *ctx, const sla__zop *A, const sla__zpc *M, const sla__z *b,
                          sla__z *x, const sla__kopts *o, sla_solve_info *info);
sla_status sla__zgmres(sla_ctx *ctx, const sla__zop *A, const sla__zpc *M, const sla__z *b,
                       sla__z *x, const sla__kopts *o, sla_solve_info *info);

/* r = b - A x; returns ||r||_2 (zkrylov.c). */
double sla__ztrue_residual(const sla__zop *A, const sla__z *b, const sla__z *x, sla__z *r);

/* z = op(M)^-1 r with op = A->pc_op; the identity when M is NULL. */
static inline sla_status sla__zpc_run(const sla__zop *A, const sla__zpc *M, const sla__z *r,
                                      sla__z *z)
{
    if (!M || !M->apply) {
        if (z != r)
            for (sla_int i = 0; i < A->n; i++) z[i] = r[i];
        return SLA_OK;
    }
    return M->apply(M, A->pc_op, r, z, A->nt);
}

/* ---- preconditioners (zprecond.c) -------------------------------------------- */

/* A complex preconditioner of `kind` (none, jacobi, ic0 for a Hermitian
 * positive definite A, ilu0) for value array ib of the square complex A,
 * with opts->ilu_shift's pivot rule; any other kind is SLA_ERR_UNSUPPORTED
 * naming it. Errors as sla__pc_create's. *out is NULL on failure. */
sla_status sla__zpc_create(sla_ctx *ctx, sla_precond_kind kind, const sla_matrix *A, sla_int ib,
                           const sla_solver_options *opts, sla__zpc **out);
void sla__zpc_destroy(sla__zpc **pc);

/* ---- direct backends ------------------------------------------------------- */

/* The complex counterpart of sla__direct_ops (direct.h): analyze once per
 * pattern, factor once per value array, solve with A, A^T or A^H. A is
 * complex (SLA_C128 or SLA_C64: the backend converts to complex128 if it
 * needs to). */
typedef struct sla__zdirect_ops {
    const char *name;        /* "umfpack", "klu", "cholmod", "superlu" */
    bool hermitian;          /* factors Hermitian positive definite A only (cholmod) */
    sla_status (*analyze)(sla_ctx *ctx, const sla_matrix *A, const sla__direct_opts *o, void **sym);
    sla_status (*factor)(sla_ctx *ctx, void *sym, const sla_matrix *A, sla_int ib, void **num);
    /* x = op(A)^-1 b for nrhs columns (op 0 = A, 1 = A^T, 2 = A^H). */
    sla_status (*solve)(sla_ctx *ctx, void *sym, void *num, int op, sla_int nrhs, const sla__z *b,
                        sla_int ldb, sla__z *x, sla_int ldx);
    /* det A = phase * exp(logabs) (phase 0 and logabs -inf when singular). */
    sla_status (*logdet)(sla_ctx *ctx, void *sym, void *num, sla__z *phase, double *logabs);
    /* z[k] = (A^-1)[col_k, row_k] for every stored entry k; NULL when the
     * backend has none (the caller then solves column by column). */
    sla_status (*selinv)(sla_ctx *ctx, void *sym, void *num, const sla_matrix *A, sla__z *z);
    double (*rcond)(const void *num); /* -1 unknown; may be NULL */
    /* What the factorization of num took: ordering used, factor entries,
     * flops, bytes (0 / "" unknown); may be NULL. */
    void (*stats)(const void *num, sla__direct_stats *st);
    void (*free_num)(void *num);
    void (*free_sym)(void *sym);
} sla__zdirect_ops;

/* The complex backend of a direct method (SLA_METHOD_CHOLESKY, LU,
 * UMFPACK, KLU, SUPERLU), or NULL when that method has none in this build
 * (zdirect.c). */
const sla__zdirect_ops *sla__zdirect_backend(sla_method m);

/* ---- the complex solver object (zsolver.c) ---------------------------------- */

/* The solver object's complex part (S->z; zsolver.c) and the hooks
 * solver.c calls when S->z is set (or, for create, when A is complex). */
struct sla__zsolver;
sla_status sla__zsolver_create(sla_ctx *ctx, const sla_matrix *A, const sla_solver_options *o,
                               sla_solver **out);
sla_status sla__zsolver_refresh(sla_ctx *ctx, sla_solver *S);
void sla__zsolver_free(sla_solver *S);

/* Whether S was created on a complex matrix. */
bool sla__solver_is_complex(const sla_solver *S);
/* The matrix of S. */
const sla_matrix *sla__zsolver_matrix(const sla_solver *S);
/* The factor of value array ib of a complex direct solver S (factored on
 * first use, reused after); SLA_ERR_ARGUMENT naming the method when S is a
 * Krylov solver. For the log-determinant and its VJP (zlogdet.c). */
sla_status sla__zsolver_factor(sla_ctx *ctx, sla_solver *S, sla_int ib, const sla__zdirect_ops **ops,
                               void **sym, void **num);

/* ---- log-determinant (zlogdet.c) --------------------------------------------- */

/* gA[k] = (g_logabs + i g_theta) conj((A^-1)[col_k, row_k]) for every
 * stored entry k of A (the VJP of log|det A| and arg det A), from the
 * factor (ops, sym, num) of value array ib of A: by ops->selinv when the
 * backend has it, else by UMFPACK's selinv on a factorization of its own
 * (CHOLMOD, KLU, SuperLU), else (no UMFPACK in the build) by n solves with
 * A in blocks of columns (O(n) solves and O(32 n) memory: moderate n). SLA_ERR_SINGULAR when the
 * factor's determinant is 0, SLA_ERR_VALUE for a non-finite g, SLA_ERR_NOMEM. */
sla_status sla__zlogdet_grad_factor(sla_ctx *ctx, const sla__zdirect_ops *ops, void *sym, void *num,
                                    const sla_matrix *A, sla_int ib, double g_logabs, double g_theta,
                                    sla__z *gA);

/* z[k] = (A^-1)[col_k, row_k] by n solves with the factor (ops, sym, num)
 * in blocks of 32 columns (column i of A^-1 gives the entries of row i):
 * the fallback of sla__zlogdet_grad_factor without UMFPACK, and the
 * reference the tests and bench_selinv compare the selected inverse with. */
sla_status sla__zinv_by_solves(sla_ctx *ctx, const sla__zdirect_ops *ops, void *sym, void *num,
                               const sla_matrix *A, sla__z *z);

#endif
