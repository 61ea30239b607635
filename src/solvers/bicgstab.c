/* BiCGStab (van der Vorst), right-preconditioned: A M^-1 u = b, x = M^-1 u,
 * so the recursive residual is the true one up to rounding. Convergence is
 * confirmed on b - A x; when it is not met the method restarts from x. A
 * breakdown (<r^, r> = 0, <r^, A M^-1 p> = 0 or omega = 0) restarts it too,
 * with the current residual as the new shadow residual; only a breakdown
 * right after a restart stops it (a 7 x 7 diagonally dominant system broke
 * down after 3 iterations at a relative residual of 8.5e-12 > rtol 1e-12:
 * fuzz_scale). */
#include "krylov.h"

#include <math.h>

sla_status sla__bicgstab(sla_ctx *ctx, const sla__op *A, const sla__pc *M, const double *b,
                         double *x, const sla__kopts *o, sla_solve_info *info)
{
    sla_int n = A->n;
    int nt = A->nt;
    sla_allocator al = sla__ctx_alloc(ctx);
    double *work = sla__malloc(&al, (size_t)n, 7 * sizeof(double));
    if (!work)
        return sla__error(ctx, SLA_ERR_NOMEM, "bicgstab: out of memory for %lld-vectors", (long long)n);
    double *r = work, *rh = work + n, *p = work + 2 * n, *v = work + 3 * n;
    double *ph = work + 4 * n, *s = work + 5 * n, *t = work + 6 * n;
    bool tr = o->pc_transpose;
    sla_status st = SLA_OK;

    double bnorm, tol, rnorm = sla__kstart(A, o, b, x, r, &bnorm, &tol);
    sla_int it = 0;
    sla_reason stop = SLA_DIVERGED_MAXITER;
    bool restart = true, exact = true, fresh = false; /* fresh: restarted this iteration */
    double rho = 1.0, alpha = 1.0, omega = 1.0;

    while (rnorm > tol && it < o->maxiter) {
        if (restart) { /* shadow residual r^ = r, p = v = 0 */
            sla__copy(n, r, rh);
            sla__zero(n, p);
            sla__zero(n, v);
            rho = alpha = omega = 1.0;
            restart = false;
            fresh = true;
        } else {
            fresh = false;
        }
        double rho_new = sla__op_dot(A, rh, r);
        if (rho_new == 0.0 && !fresh) {
            restart = true;
            continue;
        }
        if (rho_new == 0.0 || !isfinite(rho_new)) {
            stop = isfinite(rho_new) ? SLA_DIVERGED_BREAKDOWN : SLA_DIVERGED_NAN;
            break;
        }
        double beta = (rho_new / rho) * (alpha / omega);
        rho = rho_new;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
        for (sla_int i = 0; i < n; i++) p[i] = r[i] + beta * (p[i] - omega * v[i]); /* p = r + beta (p - omega v) */
        if ((st = sla__pc_run(A, M, tr, p, ph))) goto pc_fail;
        A->apply(A->data, ph, v, nt); /* v = A M^-1 p */
        double rhv = sla__op_dot(A, rh, v);
        if (rhv == 0.0 && !fresh) {
            restart = true;
            continue;
        }
        if (rhv == 0.0 || !isfinite(rhv)) {
            stop = isfinite(rhv) ? SLA_DIVERGED_BREAKDOWN : SLA_DIVERGED_NAN;
            break;
        }
        alpha = rho / rhv;
        double ss = 0.0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : ss) if (nt > 1 && n >= SLA_PAR_MIN)
        for (sla_int i = 0; i < n; i++) {
            s[i] = r[i] - alpha * v[i]; /* s = r - alpha v */
            ss += s[i] * s[i];
        }
        sla__op_sum(A, &ss, 1);
        it++;
        exact = false;
        if (sqrt(ss) <= tol) { /* half step suffices: x += alpha M^-1 p */
            sla__axpy(n, alpha, ph, x, nt);
            rnorm = sla__true_residual(A, b, x, r);
            exact = true;
            if (rnorm <= tol) break;
            restart = true;
            continue;
        }
        if ((st = sla__pc_run(A, M, tr, s, t))) goto pc_fail; /* t holds M^-1 s for now */
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
        for (sla_int i = 0; i < n; i++) x[i] += alpha * ph[i]; /* x += alpha M^-1 p */
        sla__copy(n, t, ph);                                     /* ph = M^-1 s */
        A->apply(A->data, ph, t, nt);                            /* t = A M^-1 s */
        double ts[2] = {sla__dot(n, t, s, nt), sla__dot(n, t, t, nt)};
        sla__op_sum(A, ts, 2);
        if (ts[1] == 0.0 || !isfinite(ts[1])) {
            stop = isfinite(ts[1]) ? SLA_DIVERGED_BREAKDOWN : SLA_DIVERGED_NAN;
            break;
        }
        omega = ts[0] / ts[1];
        double rr = 0.0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : rr) if (nt > 1 && n >= SLA_PAR_MIN)
        for (sla_int i = 0; i < n; i++) {
            x[i] += omega * ph[i];          /* x += omega M^-1 s */
            r[i] = s[i] - omega * t[i];     /* r = s - omega t */
            rr += r[i] * r[i];
        }
        sla__op_sum(A, &rr, 1);
        rnorm = sqrt(rr);
        if (!isfinite(rnorm)) {
            stop = SLA_DIVERGED_NAN;
            break;
        }
        if (sla__kmonitor(o, it, bnorm > 0 ? rnorm / bnorm : rnorm)) {
            stop = sla__kstop_reason(o);
            break;
        }
        if (rnorm <= tol) {
            rnorm = sla__true_residual(A, b, x, r);
            exact = true;
            if (rnorm <= tol) break;
            restart = true;
            continue;
        }
        if (omega == 0.0) { /* r = s: restart from x (x and r agree) */
            if (fresh) {
                stop = SLA_DIVERGED_BREAKDOWN;
                break;
            }
            restart = true;
        }
    }
    if (!exact) rnorm = sla__true_residual(A, b, x, t);
    sla__kinfo_finish(info, it, rnorm, bnorm, o, stop);
    sla__free(&al, work);
    return info->converged ? SLA_OK : SLA_NOT_CONVERGED;

pc_fail:
    sla__free(&al, work);
    return sla__kpc_error(ctx, st, "bicgstab");
}
