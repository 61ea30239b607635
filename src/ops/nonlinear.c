/* Nonlinear solves F(u, theta) = 0 (Newton with a backtracking line
 * search, Newton-Krylov without a Jacobian, Anderson acceleration, Picard)
 * and the implicit-function VJP dL/dtheta = -lambda^T dF/dtheta with
 * J(u*)^T lambda = dL/du. */
#include "../solvers/direct.h"
#include "../solvers/krylov.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sla_nlsolver {
    sla_allocator alloc;
    sla_nl_problem P;
    sla_nl_options o;
    sla_int n, nnz;
    sla_matrix *J;        /* Jacobian pattern (F64), values of the last refresh of LS */
    sla_solver *LS;       /* linear solver on J, created at the first Jacobian */
    sla_matrix *PA;       /* Picard matrix A(u) on the same pattern */
    sla_solver *PS;
    double *theta;        /* the last solve's parameters */
    double *u;            /* the last solve's iterate (u* when have_solution) */
    bool have_solution;
    bool jac_at_solution; /* LS factors J(u*) */
    bool ls_valid;        /* LS factors a Jacobian of the current solve (chord steps) */
    bool ls_factored;     /* LS's last set-up succeeded */
    bool ps_factored;     /* the same for the Picard solver */
    double *jstar;        /* J(u*) values when the adjoint reused an older factor */
    bool jstar_valid;
    double *history;
    sla_int hist_cap;
    char note[192];
};

/* ---- validation -------------------------------------------------------- */

/* The registry's entry of linear method m (sla_method_at), NULL when m
 * names none: the registry, not the enum's range, says which methods exist
 * (cocg came after superlu) and which are direct. */
static const sla_method_desc *linear_entry(sla_method m)
{
    for (int i = 0; i < sla_method_count(); i++) {
        const sla_method_desc *d = sla_method_at(i);
        if (d && d->kind != SLA_KIND_PRECOND && d->value == (int)m) return d;
    }
    return NULL;
}

static sla_status check_options(sla_ctx *ctx, const sla_nl_options *o)
{
    if ((int)o->method < SLA_NL_NEWTON || (int)o->method > SLA_NL_PICARD)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown nonlinear method %d", (int)o->method);
    if (!(o->rtol >= 0.0) || !(o->atol >= 0.0) || !isfinite(o->rtol) || !isfinite(o->atol) ||
        !(o->stol >= 0.0 && o->stol < 1.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "nonlinear rtol, atol must be finite and >= 0 and stol in [0, 1) "
                          "(got %g, %g, %g)", o->rtol, o->atol, o->stol);
    if (o->maxiter < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "nonlinear maxiter must be >= 0 (got %lld)",
                          (long long)o->maxiter);
    if (!(o->ls_alpha > 0.0 && o->ls_alpha < 0.5))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "ls_alpha must be in (0, 0.5) (got %g)",
                          o->ls_alpha);
    if (!(o->ls_shrink > 0.0 && o->ls_shrink < 1.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "ls_shrink must be in (0, 1) (got %g)",
                          o->ls_shrink);
    if (o->ls_maxsteps < 0 || o->ls_maxsteps > 1000)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "ls_maxsteps must be in [0, 1000] (got %d)",
                          o->ls_maxsteps);
    if (o->anderson_depth < 1 || o->anderson_depth > 100)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "anderson_depth must be in [1, 100] (got %d)",
                          o->anderson_depth);
    if (!(o->chord_ratio >= 0.0 && o->chord_ratio < 1.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "chord_ratio must be in [0, 1) (got %g)",
                          o->chord_ratio);
    if (!(o->beta > 0.0 && o->beta <= 1.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "beta must be in (0, 1] (got %g)", o->beta);
    if (!linear_entry(o->linear.method))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown linear method %d",
                          (int)o->linear.method);
    return SLA_OK;
}

static sla_status check_problem(sla_ctx *ctx, const sla_nl_problem *P, sla_nl_method m)
{
    if (!P) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_nlsolver_create: problem is NULL");
    if (!P->residual)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_nlsolver_create: the residual callback is NULL");
    if (P->n <= 0)
        return sla__error(ctx, SLA_ERR_DIMENSION, "sla_nlsolver_create: n = %lld, must be > 0",
                          (long long)P->n);
    if (P->ntheta < 0)
        return sla__error(ctx, SLA_ERR_DIMENSION, "sla_nlsolver_create: ntheta = %lld < 0",
                          (long long)P->ntheta);
    if (sla__require_real(ctx, P->jac_pattern, "sla_nlsolver_create (jac_pattern)"))
        return SLA_ERR_UNSUPPORTED;
    if (P->jac_pattern) {
        sla_int r = sla_matrix_nrows(P->jac_pattern), c = sla_matrix_ncols(P->jac_pattern);
        if (r != P->n || c != P->n)
            return sla__error(ctx, SLA_ERR_DIMENSION,
                              "the Jacobian pattern is %lld x %lld, expected n x n = %lld x %lld",
                              (long long)r, (long long)c, (long long)P->n, (long long)P->n);
    }
    if ((P->jacobian || P->picard) && !P->jac_pattern)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "the jacobian and picard callbacks need jac_pattern (it is NULL)");
    if (m == SLA_NL_NEWTON && !P->jacobian && !P->jvp)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "newton needs the jacobian callback (with jac_pattern) or jvp "
                          "(Newton-Krylov); both are NULL");
    if (m != SLA_NL_NEWTON && !P->fixed_point && !P->picard)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "%s needs the fixed_point or the picard callback; both are NULL",
                          sla_nl_method_name(m));
    return SLA_OK;
}

static sla_status callback_failed(sla_ctx *ctx, const char *name, sla_status st)
{
    return sla__error(ctx, SLA_ERR_CALLBACK, "the %s callback failed with %s", name,
                      sla_status_name(st));
}

/* The first non-finite entry of v, or -1. */
static sla_int first_nonfinite(sla_int n, const double *v)
{
    for (sla_int i = 0; i < n; i++)
        if (!isfinite(v[i])) return i;
    return -1;
}

/* ---- create / destroy ----------------------------------------------- */

/* An F64 matrix with the pattern of P (values zero). */
static sla_status pattern_copy(sla_ctx *ctx, const sla_matrix *P, sla_matrix **out)
{
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_int n = P->nrows, nnz = P->nnz;
    sla_int *rp = sla__malloc(&a, (size_t)n + 1, sizeof *rp);
    int32_t *ci = sla__malloc(&a, (size_t)nnz, sizeof *ci);
    double *v = sla__calloc(&a, (size_t)nnz, sizeof *v);
    if (rp && ci && v) {
        memcpy(rp, P->rowptr, ((size_t)n + 1) * sizeof *rp);
        memcpy(ci, P->colind, (size_t)nnz * sizeof *ci);
        *out = sla__matrix_wrap(&a, n, n, nnz, 1, SLA_F64, rp, ci, v);
        if (*out) return SLA_OK;
    }
    sla__free(&a, rp);
    sla__free(&a, ci);
    sla__free(&a, v);
    return sla__error(ctx, SLA_ERR_NOMEM, "out of memory copying the Jacobian pattern (nnz = %lld)",
                      (long long)nnz);
}

sla_status sla_nlsolver_create(sla_ctx *ctx, const sla_nl_problem *prob,
                               const sla_nl_options *opts, sla_nlsolver **out)
{
    if (!out) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_nlsolver_create: out is NULL");
    *out = NULL;
    sla_nl_options o;
    if (opts) o = *opts;
    else sla_nl_options_default(&o);
    sla_status st = check_options(ctx, &o);
    if (st || (st = check_problem(ctx, prob, o.method))) return st;
    if (o.maxiter == 0) o.maxiter = o.method == SLA_NL_NEWTON ? 50 : 1000;
    o.linear.use_x0 = false;

    sla_allocator a = sla__ctx_alloc(ctx);
    sla_nlsolver *S = sla__calloc(&a, 1, sizeof *S);
    if (!S) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for a nonlinear solver");
    S->alloc = a;
    S->P = *prob;
    S->o = o;
    S->n = prob->n;
    S->hist_cap = o.maxiter + 1;
    S->theta = sla__malloc(&a, (size_t)prob->ntheta + 1, sizeof(double));
    S->u = sla__malloc(&a, (size_t)prob->n, sizeof(double));
    S->history = sla__malloc(&a, (size_t)S->hist_cap, sizeof(double));
    if (!S->theta || !S->u || !S->history) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory for a nonlinear solver (n = %lld)",
                        (long long)prob->n);
        goto fail;
    }
    if (prob->jac_pattern) {
        S->nnz = prob->jac_pattern->nnz;
        if ((st = pattern_copy(ctx, prob->jac_pattern, &S->J))) goto fail;
    }
    *out = S;
    return sla__ok(ctx, SLA_OK);
fail:
    sla_nlsolver_destroy(&S);
    return st;
}

void sla_nlsolver_destroy(sla_nlsolver **S)
{
    if (!S || !*S) return;
    sla_nlsolver *s = *S;
    sla_allocator a = s->alloc;
    sla_solver_destroy(&s->LS);
    sla_solver_destroy(&s->PS);
    sla_matrix_destroy(&s->J);
    sla_matrix_destroy(&s->PA);
    sla__free(&a, s->theta);
    sla__free(&a, s->u);
    sla__free(&a, s->jstar);
    sla__free(&a, s->history);
    sla__free(&a, s);
    *S = NULL;
}

/* ---- the linear solver on the Jacobian pattern ------------------------ */

/* A linear-solver failure the nonlinear solve reports as a reason (a
 * singular or indefinite Jacobian, a Krylov solve that stalled), not as an
 * error. */
static bool linear_failure(sla_status st)
{
    return st == SLA_NOT_CONVERGED || st == SLA_ERR_SINGULAR || st == SLA_ERR_NOT_SPD;
}

/* Make *LS factor (or precondition) the current values of A: create it at
 * the first call (analysis once), refresh afterwards. The refresh checks
 * again what the set-up assumed (symmetry, a positive diagonal) and, with
 * method=auto, re-dispatches when that changed or a Cholesky meets an
 * indefinite Jacobian; what it did is copied into note. */
static sla_status linear_setup(sla_ctx *ctx, const sla_nl_options *o, sla_matrix *A, sla_solver **LS,
                               char *note, size_t note_len)
{
    if (!*LS) return sla_solver_create(ctx, A, &o->linear, LS);
    sla_status st = sla_solver_refresh(ctx, *LS);
    const char *sn = sla__solver_note(*LS);
    if (!st && (strncmp(sn, "refresh:", 8) == 0 || strncmp(sn, "auto: refresh:", 14) == 0))
        snprintf(note, note_len, "linear solver %s", sn);
    return st;
}

/* Jacobian values at u into vals (checked finite). */
static sla_status eval_jacobian(sla_ctx *ctx, sla_nlsolver *S, const double *u, double *vals,
                                sla_nl_info *info)
{
    sla_status st = S->P.jacobian(S->P.user, u, S->theta, vals);
    if (st) return callback_failed(ctx, "jacobian", st);
    if (info) info->jacobian_evals++;
    sla_int k = first_nonfinite(S->nnz, vals);
    if (k >= 0) {
        sla_int i = 0;
        while (S->J->rowptr[i + 1] <= k) i++;
        return sla__error(ctx, SLA_ERR_VALUE,
                          "the jacobian callback returned %g at entry %lld (row %lld, column %lld)",
                          vals[k], (long long)k, (long long)i, (long long)S->J->colind[k]);
    }
    return SLA_OK;
}

/* ---- matrix-free operator (Newton-Krylov) ---------------------------- */

typedef struct mf_data {
    sla_nlsolver *S;
    const double *u;
    bool transpose;
    sla_status err;
} mf_data;

static void mf_apply(void *data, const double *x, double *y, int nt)
{
    (void)nt;
    mf_data *m = data;
    sla_status st = m->err;
    if (!st)
        st = m->transpose ? m->S->P.vjp_u(m->S->P.user, m->u, m->S->theta, x, y)
                          : m->S->P.jvp(m->S->P.user, m->u, m->S->theta, x, y);
    if (st) { /* NaN stops the Krylov method; the status is reported after it */
        m->err = st;
        for (sla_int i = 0; i < m->S->n; i++) y[i] = NAN;
    }
}

static double mf_apply_dot(void *data, const double *x, double *y, int nt)
{
    mf_apply(data, x, y, nt);
    return sla__dot(((mf_data *)data)->S->n, x, y, nt);
}

/* Solve J x = b (or J^T x = b) with unpreconditioned GMRES (BiCGStab if
 * asked for) through the jvp / vjp_u callbacks. */
static sla_status mf_solve(sla_ctx *ctx, sla_nlsolver *S, const double *u, bool transpose,
                           const double *b, double *x, sla_solve_info *info)
{
    mf_data m = {.S = S, .u = u, .transpose = transpose, .err = SLA_OK};
    int nt = sla__threads(ctx);
    sla__op op = {.n = S->n, .nt = nt, .data = &m, .apply = mf_apply, .apply_dot = mf_apply_dot};
    const sla_solver_options *lo = &S->o.linear;
    sla_int maxiter = lo->maxiter > 0 ? lo->maxiter : (S->n * 10 > 1000 ? S->n * 10 : 1000);
    sla__kopts ko = {.rtol = lo->rtol, .atol = lo->atol, .maxiter = maxiter,
                     .restart = lo->restart, .use_x0 = false};
    bool bicg = lo->method == SLA_METHOD_BICGSTAB;
    memset(info, 0, sizeof *info);
    snprintf(info->method, sizeof info->method, "%s", bicg ? "bicgstab" : "gmres");
    snprintf(info->precond, sizeof info->precond, "none");
    snprintf(info->backend, sizeof info->backend, "matrix-free");
    double t0 = sla__now();
    sla_status st = (bicg ? sla__bicgstab : sla__gmres)(ctx, &op, NULL, b, x, &ko, info);
    info->solve_seconds = sla__now() - t0;
    if (m.err) return callback_failed(ctx, transpose ? "vjp_u" : "jvp", m.err);
    if (st == SLA_NOT_CONVERGED)
        sla__error(ctx, st, "matrix-free %s did not converge: %s after %lld iterations, "
                   "relative residual %.3e", info->method, sla_reason_name(info->reason),
                   (long long)info->iterations, info->residual);
    return st;
}

/* ---- residuals and the fixed-point map -------------------------------- */

/* F = F(u), *norm = ||F||_2 (NaN/Inf when F is not finite). */
static sla_status eval_residual(sla_ctx *ctx, sla_nlsolver *S, const double *u, double *F,
                                double *norm, sla_nl_info *info)
{
    sla_status st = S->P.residual(S->P.user, u, S->theta, F);
    if (st) return callback_failed(ctx, "residual", st);
    info->residual_evals++;
    *norm = first_nonfinite(S->n, F) >= 0 ? NAN : sla__nrm2(S->n, F, sla__threads(ctx));
    return SLA_OK;
}

/* G = G(u): the fixed_point callback, or A(u)^-1 b(u) from the picard
 * callback (the matrix is refactored only when its values change).
 * Returns SLA_NOT_CONVERGED for a linear-solve failure. */
static sla_status eval_fixed_point(sla_ctx *ctx, sla_nlsolver *S, const double *u, double *G,
                                   double *work_b, double *work_v, sla_nl_info *info)
{
    sla_status st;
    if (S->P.fixed_point) {
        if ((st = S->P.fixed_point(S->P.user, u, S->theta, G)))
            return callback_failed(ctx, "fixed_point", st);
        return SLA_OK;
    }
    if (!S->PA && (st = pattern_copy(ctx, S->P.jac_pattern, &S->PA))) return st;
    if ((st = S->P.picard(S->P.user, u, S->theta, work_v, work_b)))
        return callback_failed(ctx, "picard", st);
    info->jacobian_evals++;
    sla_int k = first_nonfinite(S->nnz, work_v);
    if (k >= 0)
        return sla__error(ctx, SLA_ERR_VALUE, "the picard callback returned %g at matrix entry %lld",
                          work_v[k], (long long)k);
    if ((k = first_nonfinite(S->n, work_b)) >= 0) {
        info->reason = SLA_NL_DIVERGED_NONFINITE;
        return sla__error(ctx, SLA_NOT_CONVERGED, "the picard right-hand side is %g at entry %lld",
                          work_b[k], (long long)k);
    }
    double *pv = S->PA->values;
    if (!S->PS || !S->ps_factored || memcmp(pv, work_v, (size_t)S->nnz * sizeof *pv)) {
        memcpy(pv, work_v, (size_t)S->nnz * sizeof *pv);
        S->ps_factored = false;
        st = linear_setup(ctx, &S->o, S->PA, &S->PS, S->note, sizeof S->note);
        if (st) return linear_failure(st) ? SLA_NOT_CONVERGED : st;
        S->ps_factored = true;
    }
    st = sla_solver_solve(ctx, S->PS, 0, 1, work_b, S->n, G, S->n, &info->linear);
    info->linear_solves++;
    info->linear_iterations += info->linear.iterations;
    if (st) return linear_failure(st) ? SLA_NOT_CONVERGED : st;
    return SLA_OK;
}

/* ---- Newton ------------------------------------------------------------ */

/* du = -J(u)^-1 F: a factorization (or preconditioner) of the Jacobian
 * values, or matrix-free Krylov through jvp. A Krylov solve that missed its
 * tolerance but halved the residual is kept (an inexact Newton step is
 * still a descent direction for ||F||^2). Returns SLA_NOT_CONVERGED for a
 * linear-solve failure. */
static sla_status newton_direction(sla_ctx *ctx, sla_nlsolver *S, const double *u,
                                   const double *F, bool chord, double *negF, double *du,
                                   sla_nl_info *info)
{
    sla_int n = S->n;
    for (sla_int i = 0; i < n; i++) negF[i] = -F[i];
    sla_status st;
    if (S->P.jacobian) {
        if (!chord) {
            S->ls_valid = S->ls_factored = false;
            if ((st = eval_jacobian(ctx, S, u, S->J->values, info))) return st;
            S->jac_at_solution = false;
            st = linear_setup(ctx, &S->o, S->J, &S->LS, S->note, sizeof S->note);
            if (st) return linear_failure(st) ? SLA_NOT_CONVERGED : st;
            S->ls_valid = S->ls_factored = true;
        }
        st = sla_solver_solve(ctx, S->LS, 0, 1, negF, n, du, n, &info->linear);
    } else {
        st = mf_solve(ctx, S, u, false, negF, du, &info->linear);
    }
    info->linear_solves++;
    info->linear_iterations += info->linear.iterations;
    if (st == SLA_NOT_CONVERGED && info->linear.residual <= 0.5) st = SLA_OK;
    if (st) return linear_failure(st) ? SLA_NOT_CONVERGED : st;
    sla_int k = first_nonfinite(n, du);
    if (k >= 0)
        return sla__error(ctx, SLA_NOT_CONVERGED, "the Newton step is %g at entry %lld", du[k],
                          (long long)k);
    return SLA_OK;
}

static void push_history(sla_nlsolver *S, sla_nl_info *info, double fnorm)
{
    if (info->history_len < S->hist_cap) S->history[info->history_len++] = fnorm;
}

/* Newton with backtracking: accept the first s in 1, shrink, shrink^2, ...
 * with ||F(u + s du)||^2 <= (1 - 2 c s) ||F(u)||^2 (Armijo on 1/2 ||F||^2,
 * whose derivative along the Newton direction is -||F||^2). */
static sla_status newton(sla_ctx *ctx, sla_nlsolver *S, double *u, double *F, double *fnorm,
                         double tol, double *work, sla_nl_info *info)
{
    sla_int n = S->n;
    const sla_nl_options *o = &S->o;
    double *du = work, *ut = work + n, *Ft = work + 2 * n, *negF = work + 3 * n;
    int nt = sla__threads(ctx);
    double ratio = INFINITY; /* ||F|| reduction of the last step */
    bool force_fresh = false;
    while (*fnorm > tol) {
        if (info->iterations >= o->maxiter) {
            info->reason = SLA_NL_DIVERGED_MAXITER;
            return sla__error(ctx, SLA_NOT_CONVERGED,
                              "%s: no convergence in %lld iterations (||F|| = %.3e, tolerance %.3e)",
                              info->method, (long long)o->maxiter, *fnorm, tol);
        }
        bool chord = o->chord_ratio > 0.0 && S->P.jacobian && S->ls_valid && !force_fresh &&
                     ratio <= o->chord_ratio;
        sla_status st = newton_direction(ctx, S, u, F, chord, negF, du, info);
        if (chord && st == SLA_NOT_CONVERGED) { /* the old factorization failed: refactor */
            force_fresh = true;
            continue;
        }
        if (st == SLA_NOT_CONVERGED) {
            info->reason = SLA_NL_DIVERGED_LINEAR_SOLVE;
            return sla__error(ctx, st, "%s: the linear solve failed at iteration %lld: %s",
                              info->method, (long long)info->iterations, sla_ctx_message(ctx));
        }
        if (st) return st;
        /* a step below rounding: u is converged, whatever ||F|| says */
        bool tiny = o->stol > 0.0 && sla__nrm2(n, du, nt) <= o->stol * sla__nrm2(n, u, nt);
        double s = 1.0, ft = NAN;
        int cuts = 0;
        bool ok = false;
        for (;;) {
            sla__copy(n, u, ut);
            sla__axpy(n, s, du, ut, nt); /* ut = u + s du */
            if ((st = eval_residual(ctx, S, ut, Ft, &ft, info))) return st;
            if (tiny) { /* take it only if it does not hurt */
                ok = isfinite(ft) && ft <= *fnorm;
                break;
            }
            if (!o->line_search) {
                ok = isfinite(ft);
                break;
            }
            /* ||F_t||^2 <= (1 - 2 alpha s) ||F||^2, without squaring (no over- or underflow) */
            if (isfinite(ft) && ft <= sqrt(fmax(0.0, 1.0 - 2.0 * o->ls_alpha * s)) * *fnorm) {
                ok = true;
                break;
            }
            if (cuts >= o->ls_maxsteps) break;
            s *= o->ls_shrink;
            cuts++;
        }
        info->line_search_cuts += cuts;
        if (tiny) {
            if (ok) {
                if (chord) info->chord_steps++;
                sla__copy(n, ut, u);
                sla__copy(n, Ft, F);
                *fnorm = ft;
                info->iterations++;
                push_history(S, info, ft);
            }
            info->reason = SLA_NL_CONVERGED_STEP;
            return SLA_OK;
        }
        if (!ok && chord) { /* redo the step with a fresh Jacobian */
            force_fresh = true;
            continue;
        }
        force_fresh = false;
        if (!ok) {
            info->reason = o->line_search ? SLA_NL_DIVERGED_LINESEARCH : SLA_NL_DIVERGED_NONFINITE;
            if (o->line_search)
                return sla__error(ctx, SLA_NOT_CONVERGED,
                                  "%s: line search failed at iteration %lld: no step down to "
                                  "%.3g decreased ||F|| = %.3e enough (no solution nearby, a "
                                  "turning point, or a tolerance below rounding)",
                                  info->method, (long long)info->iterations, s, *fnorm);
            return sla__error(ctx, SLA_NOT_CONVERGED,
                              "%s: the residual became %g at iteration %lld (no line search)",
                              info->method, ft, (long long)info->iterations);
        }
        ratio = ft / *fnorm;
        if (chord) info->chord_steps++;
        sla__copy(n, ut, u);
        sla__copy(n, Ft, F);
        *fnorm = ft;
        info->iterations++;
        push_history(S, info, ft);
        if (s == 1.0 && o->stol > 0.0 && *fnorm > tol &&
            sla__nrm2(n, du, nt) <= o->stol * sla__nrm2(n, u, nt)) {
            info->reason = SLA_NL_CONVERGED_STEP;
            return SLA_OK;
        }
    }
    return SLA_OK;
}

/* ---- Anderson and Picard --------------------------------------------- */

/* gamma = argmin ||f - DF gamma||_2 over the cnt columns of DF (stride n)
 * by modified Gram-Schmidt QR; a column that is (numerically) dependent on
 * the previous ones gets gamma = 0. Q: cnt n, R: cnt^2, keep: cnt. */
static void anderson_coeffs(sla_int n, int cnt, const double *DF, const double *f, double *Q,
                            double *R, double *c, bool *keep, double *gamma, int nt)
{
    for (int j = 0; j < cnt; j++) {
        double *qj = Q + (size_t)j * (size_t)n;
        sla__copy(n, DF + (size_t)j * (size_t)n, qj);
        double nrm0 = sla__nrm2(n, qj, nt);
        for (int i = 0; i < j; i++) {
            if (!keep[i]) continue;
            double r = sla__dot(n, Q + (size_t)i * (size_t)n, qj, nt);
            R[i * cnt + j] = r;
            sla__axpy(n, -r, Q + (size_t)i * (size_t)n, qj, nt); /* q_j -= (q_i . q_j) q_i */
        }
        double rjj = sla__nrm2(n, qj, nt);
        keep[j] = rjj > 1e-10 * nrm0 && rjj > 0.0;
        R[j * cnt + j] = rjj;
        if (keep[j])
            for (sla_int k = 0; k < n; k++) qj[k] /= rjj;
        c[j] = keep[j] ? sla__dot(n, qj, f, nt) : 0.0;
    }
    for (int j = cnt - 1; j >= 0; j--) { /* R gamma = Q^T f */
        if (!keep[j]) {
            gamma[j] = 0.0;
            continue;
        }
        double s = c[j];
        for (int i = j + 1; i < cnt; i++)
            if (keep[i]) s -= R[j * cnt + i] * gamma[i];
        gamma[j] = s / R[j * cnt + j];
    }
}

/* Picard: u <- u + beta (G(u) - u). Anderson (Walker & Ni's form): with
 * f_k = G(u_k) - u_k and the last m differences DX, DF of iterates and of f,
 * gamma = argmin ||f_k - DF gamma||, u_{k+1} = u_k + beta f_k - (DX + beta DF) gamma. */
static sla_status fixed_point_iteration(sla_ctx *ctx, sla_nlsolver *S, double *u, double *F,
                                        double *fnorm, double tol, double *work,
                                        sla_nl_info *info)
{
    sla_int n = S->n;
    const sla_nl_options *o = &S->o;
    int m = o->method == SLA_NL_ANDERSON ? o->anderson_depth : 0;
    int nt = sla__threads(ctx);
    double *G = work, *f = G + n, *fprev = f + n, *uprev = fprev + n, *b = uprev + n,
           *Ft = b + n, *vals = Ft + n;
    double *DX = vals + S->nnz, *DF = DX + (size_t)m * (size_t)n, *Q = DF + (size_t)m * (size_t)n;
    double *R = Q + (size_t)m * (size_t)n, *c = R + m * m, *gamma = c + m;
    bool keep[100];
    int cnt = 0, next = 0;
    while (*fnorm > tol) {
        if (info->iterations >= o->maxiter) {
            info->reason = SLA_NL_DIVERGED_MAXITER;
            return sla__error(ctx, SLA_NOT_CONVERGED,
                              "%s: no convergence in %lld iterations (||F|| = %.3e, tolerance %.3e)",
                              info->method, (long long)o->maxiter, *fnorm, tol);
        }
        sla_status st = eval_fixed_point(ctx, S, u, G, b, vals, info);
        if (st == SLA_NOT_CONVERGED) {
            if (info->reason == SLA_NL_REASON_NONE) info->reason = SLA_NL_DIVERGED_LINEAR_SOLVE;
            return sla__error(ctx, st, "%s: the fixed-point map failed at iteration %lld: %s",
                              info->method, (long long)info->iterations, sla_ctx_message(ctx));
        }
        if (st) return st;
        for (sla_int i = 0; i < n; i++) f[i] = G[i] - u[i];
        if (m > 0 && info->iterations > 0) { /* newest differences replace the oldest */
            double *dx = DX + (size_t)next * (size_t)n, *df = DF + (size_t)next * (size_t)n;
            for (sla_int i = 0; i < n; i++) {
                dx[i] = u[i] - uprev[i];
                df[i] = f[i] - fprev[i];
            }
            next = (next + 1) % m;
            if (cnt < m) cnt++;
        }
        sla__copy(n, u, uprev);
        sla__copy(n, f, fprev);
        sla__axpy(n, o->beta, f, u, nt); /* u += beta f */
        if (cnt > 0) {
            anderson_coeffs(n, cnt, DF, f, Q, R, c, keep, gamma, nt);
            for (int j = 0; j < cnt; j++) {
                sla__axpy(n, -gamma[j], DX + (size_t)j * (size_t)n, u, nt);
                sla__axpy(n, -o->beta * gamma[j], DF + (size_t)j * (size_t)n, u, nt);
            }
        }
        double ft = NAN;
        if (first_nonfinite(n, u) < 0 && (st = eval_residual(ctx, S, u, Ft, &ft, info))) return st;
        if (!isfinite(ft)) {
            sla__copy(n, uprev, u); /* keep the last finite iterate */
            info->reason = SLA_NL_DIVERGED_NONFINITE;
            return sla__error(ctx, SLA_NOT_CONVERGED,
                              "%s: the iterate or its residual became non-finite at iteration "
                              "%lld (diverging; try beta < 1)",
                              info->method, (long long)info->iterations);
        }
        sla__copy(n, Ft, F);
        *fnorm = ft;
        info->iterations++;
        push_history(S, info, ft);
    }
    return SLA_OK;
}

/* ---- solve ------------------------------------------------------------ */

sla_status sla_nlsolver_solve(sla_ctx *ctx, sla_nlsolver *S, const double *theta, double *u,
                              sla_nl_info *info_out)
{
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_nlsolver_solve: solver is NULL");
    if (!u) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_nlsolver_solve: u is NULL");
    if (S->P.ntheta > 0 && !theta)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_nlsolver_solve: theta is NULL (ntheta = %lld)",
                          (long long)S->P.ntheta);
    sla_int n = S->n, k;
    if ((k = first_nonfinite(n, u)) >= 0)
        return sla__error(ctx, SLA_ERR_VALUE, "initial guess u entry %lld is %g", (long long)k, u[k]);
    if (S->P.ntheta > 0 && (k = first_nonfinite(S->P.ntheta, theta)) >= 0)
        return sla__error(ctx, SLA_ERR_VALUE, "theta entry %lld is %g", (long long)k, theta[k]);

    sla_nl_info tmp, *info = info_out ? info_out : &tmp;
    memset(info, 0, sizeof *info);
    const sla_nl_options *o = &S->o;
    bool mf = o->method == SLA_NL_NEWTON && !S->P.jacobian;
    snprintf(info->method, sizeof info->method, "%s", mf ? "newton-krylov" : sla_nl_method_name(o->method));
    info->history = S->history;
    S->note[0] = '\0';
    double t0 = sla__now();

    if (S->P.ntheta > 0) memcpy(S->theta, theta, (size_t)S->P.ntheta * sizeof *theta);
    sla__copy(n, u, S->u);
    S->have_solution = S->jac_at_solution = S->jstar_valid = S->ls_valid = false;

    int m = o->method == SLA_NL_ANDERSON ? o->anderson_depth : 0;
    size_t nwork = o->method == SLA_NL_NEWTON
                       ? 5 * (size_t)n
                       : 7 * (size_t)n + (size_t)S->nnz + 3 * (size_t)m * (size_t)n +
                             (size_t)(m * m + 2 * m);
    sla_allocator al = sla__ctx_alloc(ctx);
    double *work = sla__malloc(&al, nwork, sizeof(double));
    if (!work) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for %zu work values", nwork);
    double *F = work, *rest = work + n;

    double fnorm = NAN;
    sla_status st = eval_residual(ctx, S, S->u, F, &fnorm, info);
    if (!st && !isfinite(fnorm)) {
        k = first_nonfinite(n, F);
        if (k >= 0)
            st = sla__error(ctx, SLA_ERR_VALUE,
                            "the residual callback returned %g at entry %lld for the initial guess",
                            F[k], (long long)k);
        else /* every entry finite, the norm beyond DBL_MAX */
            st = sla__error(ctx, SLA_ERR_VALUE,
                            "the residual at the initial guess has a 2-norm beyond the largest "
                            "double (largest entry %g): rescale the problem",
                            sla__amax(n, F, 1));
    }
    if (!st) {
        info->residual0 = fnorm;
        push_history(S, info, fnorm);
        double tol = fmax(o->atol, o->rtol * fnorm);
        if (o->method == SLA_NL_NEWTON)
            st = newton(ctx, S, S->u, F, &fnorm, tol, rest, info);
        else
            st = fixed_point_iteration(ctx, S, S->u, F, &fnorm, tol, rest, info);
        info->residual = fnorm;
        if (st == SLA_OK) {
            if (info->reason != SLA_NL_CONVERGED_STEP)
                info->reason = o->rtol * info->residual0 >= o->atol ? SLA_NL_CONVERGED_RTOL
                                                                    : SLA_NL_CONVERGED_ATOL;
            info->converged = true;
            S->have_solution = true;
        }
    }
    sla__free(&al, work);
    sla__copy(n, S->u, u);
    snprintf(info->note, sizeof info->note, "%s", S->note);
    info->seconds = sla__now() - t0;
    return st == SLA_OK ? sla__ok(ctx, SLA_OK) : st;
}

/* ---- the implicit-function VJP ---------------------------------------- */

/* lambda = J*^-T gu by iterative refinement with the factorization of an
 * earlier Jacobian J0 (the last Newton step's):
 * lambda += J0^-T (gu - J*^T lambda), until rounding stops the progress.
 * Close to a Newton solution J0 - J* = O(|u* - u_prev|) and every step
 * gains that many digits. *ok reports whether the linear tolerance was met. */
static sla_status refine_with_old_factor(sla_ctx *ctx, sla_nlsolver *S, const double *gu,
                                         double *lam, double *r, double *d, sla_solve_info *info,
                                         bool *ok)
{
    sla_int n = S->n;
    int nt = sla__threads(ctx);
    struct sla_matrix Jstar = *S->J; /* the pattern with J(u*) values */
    Jstar.values = S->jstar;
    Jstar.own_rowptr = Jstar.own_values = false;
    double gnorm = sla__nrm2(n, gu, nt), rn = gnorm;
    sla__zero(n, lam);
    sla__copy(n, gu, r);
    sla_int steps = 0;
    sla_solve_info li;
    memset(&li, 0, sizeof li);
    while (rn > 1e-15 * gnorm && steps < 30) {
        sla_status st = sla_solver_solve_transpose(ctx, S->LS, 0, 1, r, n, d, n, &li);
        if (st < 0) return st;
        sla__axpy(n, 1.0, d, lam, nt);
        if (S->P.jacobian_symmetric) sla__spmv(&Jstar, 0, lam, r, nt);
        else sla__spmv_t(&Jstar, 0, lam, r, 1, NULL);
        for (sla_int i = 0; i < n; i++) r[i] = gu[i] - r[i]; /* r = gu - J*^T lambda */
        double rn_new = sla__nrm2(n, r, nt);
        steps++;
        if (!(rn_new < rn)) { /* no progress: undo the step */
            sla__axpy(n, -1.0, d, lam, nt);
            break;
        }
        bool slow = rn_new > 0.5 * rn;
        rn = rn_new;
        if (slow) break;
    }
    sla__kopts ko = {.rtol = S->o.linear.rtol, .atol = S->o.linear.atol};
    *info = li;
    sla__kinfo_finish(info, steps, rn, gnorm, &ko, SLA_DIVERGED_ACCURACY);
    snprintf(info->note, sizeof info->note,
             "adjoint: factorization of the last Newton Jacobian reused, %lld refinement "
             "steps on J(u*)^T", (long long)steps);
    *ok = info->converged;
    return SLA_OK;
}

/* lambda = J(u*)^-T gu with the Jacobian's linear solver. */
static sla_status adjoint_solve(sla_ctx *ctx, sla_nlsolver *S, const double *gu, double *lam,
                                double *r, double *d, sla_solve_info *info)
{
    sla_int n = S->n;
    sla_status st;
    char note[192] = "";
    if (!S->jac_at_solution) {
        const sla_method_desc *me = S->LS ? linear_entry(sla_solver_method(S->LS)) : NULL;
        bool direct = S->ls_factored && me && me->kind == SLA_KIND_DIRECT;
        if (S->o.adjoint_reuse && direct) {
            if (!S->jstar) {
                S->jstar = sla__malloc(&S->alloc, (size_t)S->nnz, sizeof(double));
                if (!S->jstar)
                    return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the Jacobian at u*");
            }
            if (!S->jstar_valid) {
                if ((st = eval_jacobian(ctx, S, S->u, S->jstar, NULL))) return st;
                S->jstar_valid = true;
            }
            bool ok = false;
            st = refine_with_old_factor(ctx, S, gu, lam, r, d, info, &ok);
            if (st < 0 && !linear_failure(st)) return st;
            if (!st && ok) return SLA_OK;
            snprintf(note, sizeof note, "adjoint: refinement with the last Newton factorization "
                     "stalled; refactored at u*");
            memcpy(S->J->values, S->jstar, (size_t)S->nnz * sizeof(double));
        } else if ((st = eval_jacobian(ctx, S, S->u, S->J->values, NULL))) {
            return st;
        }
        S->ls_factored = false;
        st = linear_setup(ctx, &S->o, S->J, &S->LS, S->note, sizeof S->note);
        if (st) return sla__error(ctx, st, "the Jacobian at the solution: %s", sla_ctx_message(ctx));
        S->jac_at_solution = S->ls_factored = true;
    }
    st = sla_solver_solve_transpose(ctx, S->LS, 0, 1, gu, n, lam, n, info);
    if (note[0]) snprintf(info->note, sizeof info->note, "%s", note);
    return st;
}

sla_status sla_nlsolver_solve_vjp(sla_ctx *ctx, sla_nlsolver *S, const double *gu,
                                  double *gtheta, double *lambda, sla_solve_info *info_out)
{
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_nlsolver_solve_vjp: solver is NULL");
    if (!gu) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_nlsolver_solve_vjp: gu is NULL");
    if (!S->have_solution)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "sla_nlsolver_solve_vjp: no converged solve (the implicit-function "
                          "gradient needs F(u*, theta) = 0)");
    bool want_theta = gtheta && S->P.ntheta > 0;
    if (want_theta && !S->P.vjp_theta)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "sla_nlsolver_solve_vjp: the vjp_theta callback is NULL");
    if (!S->P.jacobian && !S->P.vjp_u)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "sla_nlsolver_solve_vjp: without a Jacobian the gradient needs the "
                          "vjp_u callback (J^T v); it is NULL");
    sla_int n = S->n, k;
    if ((k = first_nonfinite(n, gu)) >= 0)
        return sla__error(ctx, SLA_ERR_VALUE, "gu entry %lld is %g", (long long)k, gu[k]);

    sla_allocator al = sla__ctx_alloc(ctx);
    double *work = sla__malloc(&al, 3 * (size_t)n, sizeof(double));
    if (!work) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the adjoint vectors");
    double *lam = lambda ? lambda : work, *r = work + n, *d = work + 2 * n;
    sla_solve_info tmp, *info = info_out ? info_out : &tmp;
    memset(info, 0, sizeof *info);
    double t0 = sla__now();
    sla_status st = S->P.jacobian ? adjoint_solve(ctx, S, gu, lam, r, d, info)
                                  : mf_solve(ctx, S, S->u, true, gu, lam, info);
    info->solve_seconds = sla__now() - t0;
    sla_status lin = st;
    if (st >= 0 && want_theta) {
        if ((st = S->P.vjp_theta(S->P.user, S->u, S->theta, lam, gtheta))) {
            st = callback_failed(ctx, "vjp_theta", st);
        } else if ((k = first_nonfinite(S->P.ntheta, gtheta)) >= 0) {
            st = sla__error(ctx, SLA_ERR_VALUE, "the vjp_theta callback returned %g at entry %lld",
                            gtheta[k], (long long)k);
        } else {
            for (sla_int i = 0; i < S->P.ntheta; i++) gtheta[i] = -gtheta[i]; /* -lambda^T dF/dtheta */
            st = lin;
        }
    }
    sla__free(&al, work);
    return st == SLA_OK ? sla__ok(ctx, SLA_OK) : st;
}
