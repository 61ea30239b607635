/* Preconditioned conjugate gradients for SPD A and SPD M.
 *
 * Bandwidth-bound, so each iteration makes three passes over memory:
 * q = A p fused with p.q; the x, r updates fused with r.r (and with the
 * Jacobi apply and r.z); the p update. Convergence is declared only on the
 * true residual b - A x: when the recursive residual meets the tolerance
 * and the true one does not, r is replaced by the true residual and the
 * iteration restarts from there. Three n-vectors beside x and b: r, p and
 * one that holds q = A p until r is updated and z = M^-1 r until p is. */
#include "krylov.h"

#include <math.h>

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

sla_status sla__cg(sla_ctx *ctx, const sla__op *A, const sla__pc *M, const double *b, double *x,
                   const sla__kopts *o, sla_solve_info *info)
{
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
    double bnorm = sla__op_nrm2(A, b);
    double tol = sla__ktol(o, bnorm);
    double rnorm;
    if (o->use_x0) {
        rnorm = sla__true_residual(A, b, x, r);
    } else {
        sla__zero(n, x);
        sla__copy(n, b, r);
        rnorm = bnorm;
    }
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
            if (!(rz > 0.0)) {
                stop = isfinite(rz) ? SLA_DIVERGED_INDEFINITE : SLA_DIVERGED_NAN;
                break;
            }
        }
        if (it >= o->maxiter) break;
        double pq = apply_dot(A, p, q);
        if (!(pq > 0.0)) { /* A is not positive definite along p */
            stop = isfinite(pq) ? SLA_DIVERGED_INDEFINITE : SLA_DIVERGED_NAN;
            break;
        }
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
        if (!isfinite(rnorm)) {
            stop = SLA_DIVERGED_NAN;
            break;
        }
        if (sla__kmonitor(o, it, bnorm > 0 ? rnorm / bnorm : rnorm)) {
            stop = sla__kstop_reason(o);
            break;
        }
        if (rnorm <= tol) { /* confirm on the true residual, else restart from it */
            rnorm = sla__true_residual(A, b, x, q);
            exact = true;
            if (rnorm <= tol) break;
            sla__copy(n, q, r);
            restart = true;
            continue;
        }
        double rz_new = sums[1];
        if (!(rz_new > 0.0)) {
            stop = isfinite(rz_new) ? SLA_DIVERGED_INDEFINITE : SLA_DIVERGED_NAN;
            break;
        }
        sla__xpby(n, z, rz_new / rz, p, nt); /* p = z + beta p */
        rz = rz_new;
    }
    if (!exact) rnorm = sla__true_residual(A, b, x, q);
    sla__kinfo_finish(info, it, rnorm, bnorm, o, stop);
    sla__free(&al, work);
    return info->converged ? SLA_OK : SLA_NOT_CONVERGED;

pc_fail:
    sla__free(&al, work);
    return sla__kpc_error(ctx, st, "cg");
}
