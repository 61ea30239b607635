/* sla/nonlinear.h — nonlinear solves F(u, theta) = 0 and their
 * implicit-function gradients.
 *
 * The caller describes the problem with callbacks (sla_nl_problem): the
 * residual F(u, theta) (n equations in n unknowns, ntheta parameters), the
 * Jacobian dF/du as values on a fixed sparse pattern, and the VJP with
 * respect to theta (given lambda, lambda^T dF/dtheta). A nonlinear solver
 * (sla_nlsolver) is created once per problem: the linear solver for the
 * Jacobian pattern is analysed once (ordering, symbolic factorization) and
 * every Newton step only refactors new values (sla_solver_refresh).
 *
 * Gradient. At a solution u*(theta), F(u*, theta) = 0, so for a loss
 * L(u*): dL/dtheta = -lambda^T dF/dtheta with J^T lambda = dL/du, J =
 * dF/du at u*. sla_nlsolver_solve_vjp does one transposed linear solve and
 * one call of the theta-VJP: its cost and memory (O(n + nnz)) do not depend
 * on how many nonlinear iterations the forward solve took, and nothing
 * from those iterations is stored.
 *
 * Non-convergence is not an error: the solve returns SLA_NOT_CONVERGED,
 * u holds the last iterate, and info.reason says why (line-search failure,
 * iteration limit, linear-solve failure, non-finite values). A callback
 * that returns an error status aborts the solve with SLA_ERR_CALLBACK.
 */
#ifndef SLA_NONLINEAR_H
#define SLA_NONLINEAR_H

#include "solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The problem. Every callback returns SLA_OK or an error status (which
 * aborts the calling sla function with SLA_ERR_CALLBACK, naming the
 * callback and the status). u and theta are read-only inputs. */
typedef struct sla_nl_problem {
    sla_int n;        /* unknowns = equations (> 0) */
    sla_int ntheta;   /* parameters (>= 0) */

    /* Required: F = F(u, theta), n values. */
    sla_status (*residual)(void *user, const double *u, const double *theta, double *F);

    /* Jacobian dF/du as nnz values in the CSR order of jac_pattern (an
     * n x n matrix whose values are ignored). Either jacobian (with
     * jac_pattern) or jvp is required for Newton. */
    const sla_matrix *jac_pattern;
    sla_status (*jacobian)(void *user, const double *u, const double *theta, double *vals);
    /* true when every Jacobian is exactly symmetric (the adjoint then
     * reuses J for J^T). The linear solver checks each new Jacobian's
     * symmetry itself at its refresh (O(nnz)) and re-dispatches
     * (method=auto) when it changed. */
    bool jacobian_symmetric;

    /* Gradient: g = lambda^T dF/dtheta (ntheta values, overwritten).
     * Required by sla_nlsolver_solve_vjp only. */
    sla_status (*vjp_theta)(void *user, const double *u, const double *theta,
                            const double *lambda, double *g);

    /* Matrix-free (Jacobian-free Newton-Krylov, used when jacobian is
     * NULL): Jv = (dF/du) v, and for the gradient Jtv = (dF/du)^T v. */
    sla_status (*jvp)(void *user, const double *u, const double *theta, const double *v,
                      double *Jv);
    sla_status (*vjp_u)(void *user, const double *u, const double *theta, const double *v,
                        double *Jtv);

    /* Picard and Anderson iterate a fixed-point map u <- G(u). Either the
     * map itself (fixed_point: G = G(u, theta)), or a linearisation
     * A(u) u = b(u) (picard: nnz values of A(u) on jac_pattern and the n
     * values of b(u)), giving G(u) = A(u)^-1 b(u) solved with the linear
     * options. fixed_point takes precedence when both are set. */
    sla_status (*fixed_point)(void *user, const double *u, const double *theta, double *G);
    sla_status (*picard)(void *user, const double *u, const double *theta, double *vals,
                         double *b);

    void *user;
} sla_nl_problem;

typedef enum sla_nl_method {
    SLA_NL_NEWTON = 0, /* Newton with a backtracking (Armijo) line search */
    SLA_NL_ANDERSON,   /* Anderson acceleration (depth m) of the fixed-point map */
    SLA_NL_PICARD      /* the fixed-point map, optionally damped */
} sla_nl_method;

/* Why a nonlinear solve stopped. Positive: converged; negative: not. */
typedef enum sla_nl_reason {
    SLA_NL_REASON_NONE = 0,
    SLA_NL_CONVERGED_RTOL = 1,        /* ||F(u)|| <= rtol ||F(u0)|| */
    SLA_NL_CONVERGED_ATOL = 2,        /* ||F(u)|| <= atol */
    SLA_NL_CONVERGED_STEP = 3,        /* Newton: a full step with ||du|| <= stol ||u|| (u is
                                         converged to rounding; rtol may be out of reach) */
    SLA_NL_DIVERGED_LINESEARCH = -1,  /* no step length gave sufficient decrease */
    SLA_NL_DIVERGED_MAXITER = -2,     /* iteration limit reached */
    SLA_NL_DIVERGED_LINEAR_SOLVE = -3,/* a linear solve failed (singular Jacobian,
                                         Krylov not converged); see info.linear */
    SLA_NL_DIVERGED_NONFINITE = -4    /* the iterate or residual became NaN/Inf */
} sla_nl_reason;

SLA_API const char *sla_nl_reason_name(sla_nl_reason r);
SLA_API const char *sla_nl_method_name(sla_nl_method m);

typedef struct sla_nl_options {
    sla_nl_method method;
    double rtol;             /* converged when ||F(u)||_2 <= max(atol, rtol ||F(u0)||_2); default 1e-10 */
    double atol;             /* default 0 */
    double stol;             /* Newton: also converged when a step has ||du|| <= stol ||u||
                                (after a full step the next correction is O(||du||^2)): a
                                warm start close to u* cannot reach rtol ||F(u0)|| below
                                rounding. Default 1e-12; 0 disables */
    sla_int maxiter;         /* nonlinear iterations; default 0 = 50 (Newton), 1000 (others) */
    bool line_search;        /* Newton: backtracking line search; default true */
    double ls_alpha;         /* Armijo constant c: accept ||F(u+s du)||^2 <= (1 - 2 c s) ||F(u)||^2;
                                default 1e-4 */
    double ls_shrink;        /* step reduction factor in (0, 1); default 0.5 */
    int ls_maxsteps;         /* reductions before a line-search failure; default 30 */
    double chord_ratio;      /* Newton with Jacobian values: keep the last factorization
                                (a chord step: no new Jacobian, no refactorization) while the
                                previous step reduced ||F|| at least to chord_ratio times its
                                value; a chord step the line search rejects is redone with a
                                fresh Jacobian. 0 (default): a new Jacobian at every step
                                (exact Newton). 0.1 suits large problems where a factorization
                                costs many triangular solves */
    int anderson_depth;      /* Anderson history m >= 1; default 5 */
    double beta;             /* Anderson / Picard mixing (damping) in (0, 1]; default 1 */
    bool adjoint_reuse;      /* gradient with a direct method: reuse the last Newton
                                factorization as a preconditioner for iterative refinement
                                on J(u*)^T (refactor at u* only if it stalls); false:
                                always refactor at u*. Default true */
    sla_solver_options linear; /* linear solves (Newton steps, Picard systems, adjoint) */
} sla_nl_options;

SLA_API void sla_nl_options_default(sla_nl_options *opts);

/* Parse "key=value,..." into opts (starting from its contents). Keys:
 * method (newton|anderson|picard), rtol, atol, stol, maxiter, line_search
 * (true|false), ls_alpha, ls_shrink, ls_maxsteps, chord_ratio,
 * anderson_depth, beta, adjoint_reuse; keys with the prefix linear_ go to
 * sla_solver_options_parse (linear_method=cg, linear_precond=amg, ...).
 * An unknown key is SLA_ERR_ARGUMENT naming the nearest valid one; ranges
 * are checked by sla_nlsolver_create. All or nothing: a refused string
 * leaves opts as it was. */
SLA_API sla_status sla_nl_options_parse(sla_ctx *ctx, const char *str, sla_nl_options *opts);

/* Report of one nonlinear solve. history points into the solver (valid
 * until its next solve or destroy): ||F||_2 at iterations 0..iterations. */
typedef struct sla_nl_info {
    char method[16];         /* "newton", "anderson", "picard", "newton-krylov" */
    sla_int iterations;
    double residual;         /* ||F(u)||_2 at return */
    double residual0;        /* ||F(u0)||_2 */
    bool converged;
    sla_nl_reason reason;
    sla_int residual_evals;
    sla_int jacobian_evals;  /* Jacobian value arrays (or Picard systems) computed */
    sla_int linear_solves;
    sla_int linear_iterations; /* total Krylov iterations (refinement steps for direct) */
    sla_int line_search_cuts;  /* total step reductions */
    sla_int chord_steps;       /* Newton steps that reused an older factorization */
    const double *history;
    sla_int history_len;
    sla_solve_info linear;   /* the last linear solve */
    double seconds;
    char note[192];          /* fallbacks (e.g. linear solver re-created), "" if none */
} sla_nl_info;

typedef struct sla_nlsolver sla_nlsolver;

/* Create a nonlinear solver for prob (copied; prob->user and
 * prob->jac_pattern must outlive the solver). The linear solver is created
 * at the first Jacobian. Errors: SLA_ERR_ARGUMENT (NULL residual, no way
 * to solve with the chosen method, bad options), SLA_ERR_DIMENSION
 * (pattern not n x n), SLA_ERR_NOMEM. */
SLA_API sla_status sla_nlsolver_create(sla_ctx *ctx, const sla_nl_problem *prob,
                               const sla_nl_options *opts, sla_nlsolver **out);

SLA_API void sla_nlsolver_destroy(sla_nlsolver **S);

/* sizeof(sla_nl_problem), sizeof(sla_nl_options) and sizeof(sla_nl_info) of
 * this build, for bindings that mirror the structs (the Python package
 * checks at import). */
SLA_API size_t sla_nl_problem_size(void);
SLA_API size_t sla_nl_options_size(void);
SLA_API size_t sla_nl_info_size(void);

/* Solve F(u, theta) = 0 starting from u (n values, overwritten with the
 * solution or the last iterate). theta (ntheta values) is copied; the
 * solver keeps u* and theta for sla_nlsolver_solve_vjp. info may be NULL.
 * Returns SLA_OK (converged), SLA_NOT_CONVERGED (info.reason says why), or
 * an error: SLA_ERR_ARGUMENT, SLA_ERR_VALUE (NaN/Inf in u0, theta, or from
 * a callback at a point where F was finite), SLA_ERR_CALLBACK, SLA_ERR_NOMEM,
 * or a linear-solver set-up error other than a singular/indefinite matrix. */
SLA_API sla_status sla_nlsolver_solve(sla_ctx *ctx, sla_nlsolver *S, const double *theta, double *u,
                              sla_nl_info *info);

/* Implicit-function VJP at the last converged solve: with gu = dL/du
 * (n values), solves J(u*)^T lambda = gu and writes gtheta = dL/dtheta =
 * -lambda^T dF/dtheta (ntheta values; may be NULL) and lambda (n; may be
 * NULL). info (may be NULL) receives the adjoint linear solve's report.
 * Errors: SLA_ERR_ARGUMENT (no converged solve, NULL gu, vjp_theta missing
 * while gtheta is requested), SLA_ERR_VALUE, SLA_ERR_CALLBACK, linear-solve
 * errors; SLA_NOT_CONVERGED when the adjoint solve missed its tolerance. */
SLA_API sla_status sla_nlsolver_solve_vjp(sla_ctx *ctx, sla_nlsolver *S, const double *gu,
                                  double *gtheta, double *lambda, sla_solve_info *info);

/* ---- built-in problems ---------------------------------------------- */

/* A built-in problem owns its data and pattern; sla_nl_builtin_problem
 * gives the callbacks to pass to sla_nlsolver_create. Grids have N x N
 * interior points (h = 1/(N+1)), homogeneous Dirichlet boundaries, x
 * fastest, and equations multiplied by h^2 (as in sla/gen.h). */
typedef struct sla_nl_builtin sla_nl_builtin;

typedef enum sla_nl_bratu_param {
    SLA_NL_BRATU_MU = 0,   /* theta = [mu] (ntheta = 1) */
    SLA_NL_BRATU_MU_FIELD  /* theta = mu at each grid point (ntheta = N^2) */
} sla_nl_bratu_param;

/* Bratu: -Laplace u = mu e^u, 5-point:
 * F_i = 4 u_i - sum_neighbours u_j - h^2 mu_i e^{u_i}. Symmetric Jacobian
 * A - h^2 diag(mu e^u); solutions exist for mu up to about 6.808 (the
 * continuous turning point). Picard linearisation: A u = h^2 mu e^u. */
SLA_API sla_status sla_nl_bratu2d(sla_ctx *ctx, sla_int N, sla_nl_bratu_param param,
                          sla_nl_builtin **out);

/* Nonlinear diffusion: -div(kappa(u) grad u) = f with kappa(u) = 1 +
 * alpha u^2, finite volumes: the coupling across an edge is the mean of
 * kappa at its two ends (kappa(0) = 1 at the boundary):
 * F_i = sum_edges k_ij(u) (u_i - u_j) - h^2 f_i. theta = f (ntheta = N^2).
 * The Jacobian is nonsymmetric (for u != 0). Picard: A(u) u = h^2 f. */
SLA_API sla_status sla_nl_diffusion2d(sla_ctx *ctx, sla_int N, double alpha, sla_nl_builtin **out);

SLA_API const sla_nl_problem *sla_nl_builtin_problem(const sla_nl_builtin *B);
SLA_API void sla_nl_builtin_destroy(sla_nl_builtin **B);

#ifdef __cplusplus
}
#endif
#endif
