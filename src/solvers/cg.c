/* Preconditioned conjugate gradients for SPD A and SPD M.
 *
 * Bandwidth-bound, so each iteration makes three passes over memory:
 * q = A p fused with p.q; the x, r updates fused with r.r (and with the
 * Jacobi apply and r.z); the p update. Convergence is declared only on the
 * true residual b - A x: when the recursive residual meets the tolerance
 * and the true one does not, r is replaced by the true residual and the
 * iteration restarts from there. Three n-vectors beside x and b: r, p and
 * one that holds q = A p until r is updated and z = M^-1 r until p is.
 * A second loop (cg_aw, below) takes A z from a preconditioner that forms
 * it in its last pass. */
#include "krylov.h"

#include <math.h>

/* A breakdown: v (r.z or p.Ap) not positive. *stop: indefinite, or NaN
 * when v is not finite. */
static bool not_positive(double v, sla_reason *stop)
{
    if (v > 0.0) return false;
    *stop = isfinite(v) ? SLA_DIVERGED_INDEFINITE : SLA_DIVERGED_NAN;
    return true;
}

/* After an iteration's update (rnorm: the recursive residual's norm):
 * NaN, the monitor, and below the tolerance the true residual, into
 * scratch and then r when it misses it (the loop restarts from there:
 * convergence is declared on the true residual only). */
enum { CG_ON, CG_STOP, CG_RESTART };

static int cg_check(const sla__op *A, const sla__kopts *o, const double *b, const double *x,
                    double *r, double *scratch, sla_int it, double bnorm, double tol, double *rnorm,
                    bool *exact, sla_reason *stop)
{
    if (!isfinite(*rnorm)) {
        *stop = SLA_DIVERGED_NAN;
        return CG_STOP;
    }
    if (sla__kmonitor(o, it, bnorm > 0 ? *rnorm / bnorm : *rnorm)) {
        *stop = sla__kstop_reason(o);
        return CG_STOP;
    }
    if (*rnorm > tol) return CG_ON;
    *rnorm = sla__true_residual(A, b, x, scratch);
    *exact = true;
    if (*rnorm <= tol) return CG_STOP;
    sla__copy(A->n, scratch, r);
    return CG_RESTART;
}

/* The end: the true residual unless the last norm was one (into
 * scratch), the solve's report. */
static sla_status cg_done(const sla__op *A, const sla__kopts *o, const double *b, const double *x,
                          double *scratch, sla_int it, double rnorm, double bnorm, bool exact,
                          sla_reason stop, sla_solve_info *info)
{
    if (!exact) rnorm = sla__true_residual(A, b, x, scratch);
    sla__kinfo_finish(info, it, rnorm, bnorm, o, stop);
    return info->converged ? SLA_OK : SLA_NOT_CONVERGED;
}

/* x += a p; r -= a q; returns local r.r */
static double update_xr(sla_int n, double a, const double *p, const double *q, double *x,
                        double *r, int nt)
{
    double rr = 0.0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : rr) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        x[i] += a * p[i];
        double ri = r[i] - a * q[i];
        r[i] = ri;
        rr += ri * ri;
    }
    return rr;
}

/* The same with the Jacobi apply z = D^-1 r and r.z in the same pass. */
static void update_xr_jacobi(sla_int n, double a, const double *p, const double *q, double *x,
                             double *r, const double *dinv, double *z, int nt, double sums[2])
{
    double rr = 0.0, rz = 0.0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : rr, rz) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        x[i] += a * p[i];
        double ri = r[i] - a * q[i];
        double zi = dinv[i] * ri;
        r[i] = ri;
        z[i] = zi;
        rr += ri * ri;
        rz += ri * zi;
    }
    sums[0] = rr;
    sums[1] = rz;
}

/* q = A p, returns global p.q */
static double apply_dot(const sla__op *A, const double *p, double *q)
{
    double pq;
    if (A->apply_dot) {
        pq = A->apply_dot(A->data, p, q, A->nt);
        sla__op_sum(A, &pq, 1);
    } else {
        A->apply(A->data, p, q, A->nt);
        pq = sla__op_dot(A, p, q);
    }
    return pq;
}

/* z = M^-1 r and (r.r, r.z) for a general preconditioner; rr >= 0: this
 * process's r.r, already summed as r was updated (one pass over r less). */
static sla_status precond_sums(const sla__op *A, const sla__pc *M, bool tr, const double *r,
                               double *z, double rr, double sums[2])
{
    sla_status st = sla__pc_run(A, M, tr, r, z);
    if (st) return st;
    sums[0] = rr >= 0.0 ? rr : sla__dot(A->n, r, r, A->nt);
    sums[1] = sla__dot(A->n, r, z, A->nt);
    sla__op_sum(A, sums, 2);
    return SLA_OK;
}

/* ---- CG with A z from the preconditioner -------------------------------------
 *
 * When the preconditioner can form w = A z in its last pass (saamg with
 * saamg_reuse = hierarchy: the backward sweep of level 0 reads A's rows
 * anyway, sla__pc.apply_aw), CG needs no product of its own: with
 * gamma = r.z and delta = z.w from the same pass, q = A p follows from
 * q = w + beta q, and p.q = delta - beta gamma / alpha_old (the
 * recurrence of Chronopoulos and Gear, the single-reduction CG of PETSc's
 * KSPCG: z.q_old = -gamma / alpha_old because z is M-orthogonal to the old
 * residual). One more pass then updates p, q, x and r and forms r.r.
 * Per iteration one pass over A less (A z comes from rows of A still in
 * cache behind the sweep) and one short pass over the vectors less (the
 * separate r.z): the training step of issue 22 (2-D diffusion 1e6, kappa
 * changed by 1 %, 2 threads, 17 iterations, three interleaved rounds)
 * solved in 0.426-0.438 s against 0.449-0.469 s, its adjoint in 0.612-0.632
 * against 0.652-0.663 s. Two n-vectors more (z and w beside r, p, q: 16 B
 * per unknown, hence only in the training loop's setting). Convergence is
 * still declared on the true residual, and a restart from it (p = z, q =
 * w) follows the same rule as the plain loop. */

/* z = M^-1 r, w = A z, sums = (r.z, z.w), global; through apply and A's
 * product when the fused pass cannot run this time (first: answer
 * SLA_ERR_UNSUPPORTED instead, so that the plain loop runs). */
static sla_status precond_aw(const sla__op *A, const sla__pc *M, bool tr, const double *r, double *z,
                             double *w, double sums[2], bool first)
{
    sla_status st = M->apply_aw(M, tr, r, z, w, sums, A->nt);
    if (st == SLA_ERR_UNSUPPORTED && !first) {
        if ((st = sla__pc_run(A, M, tr, r, z))) return st;
        A->apply(A->data, z, w, A->nt);
        sums[0] = sla__dot(A->n, r, z, A->nt);
        sums[1] = sla__dot(A->n, z, w, A->nt);
    } else if (st) {
        return st;
    }
    sla__op_sum(A, sums, 2);
    return SLA_OK;
}

/* p = z + beta p, q = w + beta q (fresh: p = z, q = w), x += a p, r -= a q;
 * returns this process's r.r */
static double update_pqxr(sla_int n, bool fresh, double beta, double a, const double *z,
                          const double *w, double *p, double *q, double *x, double *r, int nt)
{
    double rr = 0.0;
    if (fresh) beta = 0.0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : rr) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        double pi = fresh ? z[i] : z[i] + beta * p[i], qi = fresh ? w[i] : w[i] + beta * q[i];
        p[i] = pi;
        q[i] = qi;
        x[i] += a * pi;
        double ri = r[i] - a * qi;
        r[i] = ri;
        rr += ri * ri;
    }
    return rr;
}

static sla_status cg_aw(sla_ctx *ctx, const sla__op *A, const sla__pc *M, const double *b, double *x,
                        const sla__kopts *o, sla_solve_info *info)
{
    sla_int n = A->n;
    int nt = A->nt;
    sla_allocator al = sla__ctx_alloc(ctx);
    double *work = sla__malloc(&al, (size_t)n, 5 * sizeof(double));
    if (!work) return sla__error(ctx, SLA_ERR_NOMEM, "cg: out of memory for %lld-vectors", (long long)n);
    double *r = work, *p = work + n, *q = work + 2 * n, *z = work + 3 * n, *w = work + 4 * n;

    sla_status st = SLA_OK;
    double bnorm, tol, rnorm = sla__kstart(A, o, b, x, r, &bnorm, &tol);
    sla_int it = 0;
    sla_reason stop = SLA_DIVERGED_MAXITER;
    double sums[2], gamma = 0.0, alpha = 0.0, beta = 0.0;
    bool restart = true, fresh = true, exact = true;

    while (rnorm > tol && isfinite(rnorm)) {
        if (restart) { /* p = z, q = w in the next update */
            if ((st = precond_aw(A, M, o->pc_transpose, r, z, w, sums, it == 0))) {
                if (st == SLA_ERR_UNSUPPORTED && it == 0) {
                    sla__free(&al, work);
                    return st;
                }
                goto pc_fail;
            }
            gamma = sums[0];
            restart = false;
            fresh = true;
            if (not_positive(gamma, &stop) || not_positive(sums[1], &stop)) break; /* r.z, z.Az */
            alpha = gamma / sums[1];
        }
        if (it >= o->maxiter) break;
        sums[0] = update_pqxr(n, fresh, beta, alpha, z, w, p, q, x, r, nt);
        sla__op_sum(A, sums, 1);
        fresh = false;
        it++;
        exact = false;
        rnorm = sqrt(sums[0]);
        int next = cg_check(A, o, b, x, r, z, it, bnorm, tol, &rnorm, &exact, &stop);
        if (next == CG_STOP) break;
        if (next == CG_RESTART) {
            restart = true;
            continue;
        }
        if ((st = precond_aw(A, M, o->pc_transpose, r, z, w, sums, false))) goto pc_fail;
        double gamma_new = sums[0];
        if (not_positive(gamma_new, &stop)) break;
        beta = gamma_new / gamma;
        double pq = sums[1] - beta * gamma_new / alpha; /* p.q of the next p and q */
        if (not_positive(pq, &stop)) break;
        alpha = gamma_new / pq;
        gamma = gamma_new;
    }
    st = cg_done(A, o, b, x, z, it, rnorm, bnorm, exact, stop, info);
    sla__free(&al, work);
    return st;

pc_fail:
    sla__free(&al, work);
    return sla__kpc_error(ctx, st, "cg");
}

sla_status sla__cg(sla_ctx *ctx, const sla__op *A, const sla__pc *M, const double *b, double *x,
                   const sla__kopts *o, sla_solve_info *info)
{
    if (M && M->apply && M->apply_aw && o->a_vals && o->a_vals == M->aw_vals) {
        sla_status st = cg_aw(ctx, A, M, b, x, o, info);
        if (st != SLA_ERR_UNSUPPORTED) return st; /* else the plain loop (x not yet changed
                                                   * where use_x0 holds) */
    }
    sla_int n = A->n;
    int nt = A->nt;
    bool has_pc = M && M->apply;
    const double *dinv = (has_pc && M->kind == SLA_PRECOND_JACOBI) ? M->dinv : NULL;
    sla_allocator al = sla__ctx_alloc(ctx);
    /* three n-vectors: z = M^-1 r shares q's storage (q = A p is dead once
     * r is updated, z once p is), and unpreconditioned z aliases r */
    double *work = sla__malloc(&al, (size_t)n, 3 * sizeof(double));
    if (!work) return sla__error(ctx, SLA_ERR_NOMEM, "cg: out of memory for %lld-vectors", (long long)n);
    double *r = work, *p = work + n, *q = work + 2 * n;
    double *z = has_pc ? q : r;

    sla_status st = SLA_OK;
    double bnorm, tol, rnorm = sla__kstart(A, o, b, x, r, &bnorm, &tol);
    sla_int it = 0;
    sla_reason stop = SLA_DIVERGED_MAXITER;
    double sums[2];
    bool restart = true;
    double rz = 0.0;
    bool exact = true; /* rnorm is the true residual norm */

    while (rnorm > tol && isfinite(rnorm)) {
        if (restart) { /* p = z = M^-1 r */
            if ((st = precond_sums(A, M, o->pc_transpose, r, z, -1.0, sums))) goto pc_fail;
            rz = sums[1];
            sla__copy(n, z, p);
            restart = false;
            if (not_positive(rz, &stop)) break;
        }
        if (it >= o->maxiter) break;
        double pq = apply_dot(A, p, q);
        if (not_positive(pq, &stop)) break;
        double alpha = rz / pq;
        if (dinv) { /* D^-T = D^-1: the same for adjoint solves */
            update_xr_jacobi(n, alpha, p, q, x, r, dinv, z, nt, sums);
            sla__op_sum(A, sums, 2);
        } else if (!has_pc) {
            sums[0] = update_xr(n, alpha, p, q, x, r, nt);
            sla__op_sum(A, sums, 1);
            sums[1] = sums[0];
        } else {
            double rr = update_xr(n, alpha, p, q, x, r, nt);
            if ((st = precond_sums(A, M, o->pc_transpose, r, z, rr, sums))) goto pc_fail;
        }
        it++;
        exact = false;
        rnorm = sqrt(sums[0]);
        int next = cg_check(A, o, b, x, r, q, it, bnorm, tol, &rnorm, &exact, &stop);
        if (next == CG_STOP) break;
        if (next == CG_RESTART) {
            restart = true;
            continue;
        }
        double rz_new = sums[1];
        if (not_positive(rz_new, &stop)) break;
        sla__xpby(n, z, rz_new / rz, p, nt); /* p = z + beta p */
        rz = rz_new;
    }
    st = cg_done(A, o, b, x, q, it, rnorm, bnorm, exact, stop, info);
    sla__free(&al, work);
    return st;

pc_fail:
    sla__free(&al, work);
    return sla__kpc_error(ctx, st, "cg");
}
