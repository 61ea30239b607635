/* sla/linop.h — matrix-free solves: the Krylov methods on an operator the
 * caller applies.
 *
 * When A is known only through its action x -> A x (a stencil applied on
 * the fly, a product of operators, a network's Jacobian-vector product),
 * sla_linop_solve runs CG, MINRES, BiCGStab or GMRES on it with the same
 * options, preconditioner callback and report as a solve on a matrix.
 * The adjoint of such a solve is one more solve with A^T
 * (sla_linop_solve_transpose), so a binding can differentiate through it
 * with O(n) memory, as it does for matrices.
 */
#ifndef SLA_LINOP_H
#define SLA_LINOP_H

#include "solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = A x (or y = A^T x) for the caller's n x n operator; x and y are n
 * doubles and do not overlap. Return 0 on success; any other value stops
 * the solve, which then returns SLA_ERR_CALLBACK. Called from the thread
 * that called the solve, never from two threads at once. */
typedef int (*sla_linop_fn)(void *user, sla_int n, const double *x, double *y);

/* Solve A x = b, A given by apply (y = A x). apply_transpose (y = A^T x)
 * may be NULL: the forward solve never calls it.
 *
 * opts (NULL: the defaults) as for sla_solver_create, restricted to what
 * needs no matrix:
 *   method   cg (the caller vouches that A is symmetric positive definite),
 *            minres (symmetric), bicgstab or gmres (any nonsingular A);
 *            auto runs gmres (an operator has no structure to inspect;
 *            the report's note says so). A direct method is SLA_ERR_ARGUMENT.
 *   precond  none or user (opts->user_precond: z = M^-1 r, and M^-T r for
 *            the transposed solve); any other is SLA_ERR_ARGUMENT.
 *   rtol, atol, maxiter (0: 10 n, at least 1000), restart, use_x0 (x holds
 *   the initial guess), monitor, max_seconds: as for a matrix. Equilibration
 *   does not apply.
 * info (may be NULL) receives the report: method, precond, backend
 * "matrix-free", iterations, the true relative residual ||b - A x|| / ||b||
 * (one more apply after the iteration), reason.
 *
 * Returns SLA_OK, SLA_NOT_CONVERGED (x holds the last iterate, info.reason
 * says why), or an error: SLA_ERR_ARGUMENT (NULL apply, b or x with n > 0,
 * n < 0, a bad option), SLA_ERR_VALUE (NaN or Inf in b or in the initial
 * guess), SLA_ERR_CALLBACK (the operator or the preconditioner callback
 * returned nonzero; the message names which and at which application),
 * SLA_ERR_NOMEM. */
SLA_API sla_status sla_linop_solve(sla_ctx *ctx, sla_int n, sla_linop_fn apply,
                                   sla_linop_fn apply_transpose, void *user,
                                   const sla_solver_options *opts, const double *b, double *x,
                                   sla_solve_info *info);

/* Solve A^T x = b (the adjoint solve of a VJP): the iteration runs on
 * apply_transpose and the preconditioner's transposed apply. With method
 * cg or minres (A symmetric) apply_transpose may be NULL and apply is used;
 * for bicgstab, gmres and auto a NULL apply_transpose is SLA_ERR_ARGUMENT.
 * Everything else as sla_linop_solve. */
SLA_API sla_status sla_linop_solve_transpose(sla_ctx *ctx, sla_int n, sla_linop_fn apply,
                                             sla_linop_fn apply_transpose, void *user,
                                             const sla_solver_options *opts, const double *b,
                                             double *x, sla_solve_info *info);

/* opts->precond = SLA_PRECOND_USER with these callbacks (apply_transpose
 * may be NULL: M symmetric), for bindings that keep sla_solver_options as
 * an opaque block filled by sla_solver_options_parse. Any solver takes
 * them, matrix-free or not. A NULL opts is ignored. */
SLA_API void sla_solver_options_set_user_precond(
    sla_solver_options *opts, sla_status (*apply)(void *user, sla_int n, const double *r, double *z),
    sla_status (*apply_transpose)(void *user, sla_int n, const double *r, double *z), void *user);

#ifdef __cplusplus
}
#endif
#endif
