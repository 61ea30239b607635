/* MINRES (Paige and Saunders) for symmetric, possibly indefinite A with a
 * symmetric positive definite preconditioner M. The Lanczos process runs in
 * the M^-1 inner product; phibar estimates the M^-1-norm of the residual,
 * so a small estimate is confirmed on the true 2-norm residual, restarting
 * from x when it falls short. */
#include "krylov.h"

#include <float.h>
#include <math.h>

sla_status sla__minres(sla_ctx *ctx, const sla__op *A, const sla__pc *M, const double *b,
                       double *x, const sla__kopts *o, sla_solve_info *info)
{
    sla_int n = A->n;
    int nt = A->nt;
    sla_allocator al = sla__ctx_alloc(ctx);
    double *work = sla__malloc(&al, (size_t)n, 7 * sizeof(double));
    if (!work)
        return sla__error(ctx, SLA_ERR_NOMEM, "minres: out of memory for %lld-vectors", (long long)n);
    double *r1 = work, *r2 = work + n, *y = work + 2 * n, *v = work + 3 * n;
    double *w = work + 4 * n, *w1 = work + 5 * n, *w2 = work + 6 * n;
    bool tr = o->pc_transpose;
    sla_status st = SLA_OK;

    double bnorm = sla__op_nrm2(A, b);
    double tol = sla__ktol(o, bnorm);
    if (!o->use_x0) sla__zero(n, x);
    double rnorm = sla__true_residual(A, b, x, r1);
    bool exact = true;
    sla_int it = 0;
    sla_reason stop = SLA_DIVERGED_MAXITER;

    while (rnorm > tol && it < o->maxiter && isfinite(rnorm)) {
        /* (re)start the Lanczos process from r1 = b - A x */
        if ((st = sla__pc_run(A, M, tr, r1, y))) goto pc_fail;
        double beta1 = sla__op_dot(A, r1, y);
        if (!(beta1 > 0.0)) {
            stop = isfinite(beta1) ? SLA_DIVERGED_INDEFINITE : SLA_DIVERGED_NAN;
            break;
        }
        beta1 = sqrt(beta1);
        sla__copy(n, r1, r2);
        sla__zero(n, w);
        sla__zero(n, w2);
        double beta = beta1, oldb = 0.0, dbar = 0.0, epsln = 0.0, phibar = beta1;
        double cs = -1.0, sn = 0.0;
        /* the M^-1-norm estimate is compared with tol scaled by ||r|| / beta1 */
        double scale = rnorm / beta1;
        bool restart = false;
        for (sla_int k = 0; it < o->maxiter; k++) {
            double s = 1.0 / beta;
            for (sla_int i = 0; i < n; i++) v[i] = s * y[i]; /* v = y / beta */
            A->apply(A->data, v, y, nt);                     /* y = A v */
            if (k > 0) sla__axpy(n, -beta / oldb, r1, y, nt);
            double alfa = sla__op_dot(A, v, y);
            sla__axpy(n, -alfa / beta, r2, y, nt);
            sla__copy(n, r2, r1);
            sla__copy(n, y, r2);
            if ((st = sla__pc_run(A, M, tr, r2, y))) goto pc_fail;
            oldb = beta;
            double bb = sla__op_dot(A, r2, y);
            if (bb < 0.0 || !isfinite(bb)) {
                stop = isfinite(bb) ? SLA_DIVERGED_INDEFINITE : SLA_DIVERGED_NAN;
                goto finish;
            }
            beta = sqrt(bb);
            /* apply the previous rotation, then form and apply the new one */
            double oldeps = epsln;
            double delta = cs * dbar + sn * alfa;
            double gbar = sn * dbar - cs * alfa;
            epsln = sn * beta;
            dbar = -cs * beta;
            double gamma = fmax(hypot(gbar, beta), DBL_MIN);
            cs = gbar / gamma;
            sn = beta / gamma;
            double phi = cs * phibar;
            phibar = sn * phibar;
            double denom = 1.0 / gamma;
            double *t = w1; /* rotate the direction buffers: w1 <- w2 <- w */
            w1 = w2;
            w2 = w;
            w = t;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
            for (sla_int i = 0; i < n; i++) {
                w[i] = (v[i] - oldeps * w1[i] - delta * w2[i]) * denom; /* w = (v - eps w1 - delta w2) / gamma */
                x[i] += phi * w[i];
            }
            it++;
            exact = false;
            double est = phibar * scale;
            if (!isfinite(est)) {
                stop = SLA_DIVERGED_NAN;
                goto finish;
            }
            if (sla__kmonitor(o, it, bnorm > 0 ? est / bnorm : est)) {
                stop = sla__kstop_reason(o);
                goto finish;
            }
            if (est <= tol || beta == 0.0) {
                restart = true;
                break;
            }
        }
        rnorm = sla__true_residual(A, b, x, r1);
        exact = true;
        if (!restart) break; /* maxiter */
    }
finish:
    if (!exact) rnorm = sla__true_residual(A, b, x, r1);
    sla__kinfo_finish(info, it, rnorm, bnorm, o, stop);
    sla__free(&al, work);
    return info->converged ? SLA_OK : SLA_NOT_CONVERGED;

pc_fail:
    sla__free(&al, work);
    return sla__kpc_error(ctx, st, "minres");
}
