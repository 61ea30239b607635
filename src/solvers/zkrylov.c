/* Complex Krylov methods: CG (Hermitian positive definite A and M, the
 * Hermitian inner product), COCG (complex symmetric A = A^T, CG with the
 * bilinear form x^T y; van der Vorst and Melissen 1990), MINRES (Hermitian,
 * possibly indefinite A; Hermitian positive definite M) and BiCGStab
 * (general A, right-preconditioned). GMRES is in zkrylov_gmres.c.
 *
 * They report as the real methods do (krylov_common.c): convergence is
 * declared on the true residual ||b - A x||_2 only, a small recursive
 * residual that the true one does not confirm restarts the method from x,
 * and the monitor and deadline of sla__kopts are honoured. The
 * preconditioner applies M^-1, M^-T or M^-H as the operator says
 * (sla__zop.pc_op), so the same code solves with A, A^T and A^H. */
#include "zsolver.h"

#include <float.h>
#include <math.h>

double sla__ztrue_residual(const sla__zop *A, const sla__z *b, const sla__z *x, sla__z *r)
{
    A->apply(A->data, x, r, A->nt);
    for (sla_int i = 0; i < A->n; i++) r[i] = b[i] - r[i]; /* r = b - A x */
    return sla__znrm2(A->n, r, A->nt);
}

static void zcopy(sla_int n, const sla__z *x, sla__z *y)
{
    for (sla_int i = 0; i < n; i++) y[i] = x[i];
}

static void zzero(sla_int n, sla__z *x)
{
    for (sla_int i = 0; i < n; i++) x[i] = 0.0;
}

static bool zfinite(sla__z v) { return isfinite(creal(v)) && isfinite(cimag(v)); }

static sla__z *zalloc(sla_ctx *ctx, sla_int n, int count, const char *method)
{
    sla_allocator al = sla__ctx_alloc(ctx);
    sla__z *w = sla__malloc(&al, (size_t)n * (size_t)count, sizeof(sla__z));
    if (!w) sla__error(ctx, SLA_ERR_NOMEM, "%s: out of memory for %d complex %lld-vectors", method, count, (long long)n);
    return w;
}

static void zfree(sla_ctx *ctx, sla__z *w)
{
    sla_allocator al = sla__ctx_alloc(ctx);
    sla__free(&al, w);
}

/* ---- CG and COCG ------------------------------------------------------------
 * One recurrence, two inner products: CG uses <x, y> = x^H y (rho = r^H z is
 * real and positive for Hermitian positive definite M, p^H A p for A), COCG
 * the bilinear form x^T y, for which a complex symmetric A is "self-adjoint"
 * (rho and p^T A p are complex; either vanishing while r does not is a
 * breakdown). */
static sla_status cg_like(sla_ctx *ctx, const sla__zop *A, const sla__zpc *M, const sla__z *b,
                          sla__z *x, const sla__kopts *o, sla_solve_info *info, bool cocg)
{
    const char *name = cocg ? "cocg" : "cg";
    sla_int n = A->n;
    int nt = A->nt;
    sla__z *work = zalloc(ctx, n, 4, name);
    if (!work) return SLA_ERR_NOMEM;
    sla__z *r = work, *z = work + n, *p = work + 2 * n, *q = work + 3 * n;
    sla_status st = SLA_OK;
    double bnorm = sla__znrm2(n, b, nt);
    double tol = sla__ktol(o, bnorm);
    double rnorm;
    if (o->use_x0) {
        rnorm = sla__ztrue_residual(A, b, x, r);
    } else {
        zzero(n, x);
        zcopy(n, b, r);
        rnorm = bnorm;
    }
    sla_int it = 0;
    sla_reason stop = SLA_DIVERGED_MAXITER;
    bool restart = true, exact = true;
    sla__z rho = 0.0;
    while (rnorm > tol && isfinite(rnorm) && it < o->maxiter) {
        { /* z = M^-1 r, rho = <r, z>; p = z + beta p (p = z at a restart) */
            if ((st = sla__zpc_run(A, M, r, z))) goto pc_fail;
            sla__z rho_new = cocg ? sla__zdotu(n, r, z, nt) : sla__zdotc(n, r, z, nt);
            if (!zfinite(rho_new)) {
                stop = SLA_DIVERGED_NAN;
                break;
            }
            if (!cocg && !(creal(rho_new) > 0.0)) { /* M not positive definite */
                stop = SLA_DIVERGED_INDEFINITE;
                break;
            }
            if (cocg && !(cabs(rho_new) > DBL_EPSILON * rnorm * sla__znrm2(n, z, nt))) {
                stop = SLA_DIVERGED_BREAKDOWN; /* r^T z = 0 with r != 0 */
                break;
            }
            if (!cocg) rho_new = creal(rho_new);
            if (restart) zcopy(n, z, p);
            else sla__zxpby(n, z, rho_new / rho, p, nt); /* p = z + beta p */
            rho = rho_new;
            restart = false;
        }
        A->apply(A->data, p, q, nt); /* q = A p */
        sla__z pq = cocg ? sla__zdotu(n, p, q, nt) : sla__zdotc(n, p, q, nt);
        if (!zfinite(pq)) {
            stop = SLA_DIVERGED_NAN;
            break;
        }
        if (!cocg && !(creal(pq) > 0.0)) { /* A is not positive definite along p */
            stop = SLA_DIVERGED_INDEFINITE;
            break;
        }
        if (cocg && pq == 0.0) {
            stop = SLA_DIVERGED_BREAKDOWN;
            break;
        }
        sla__z alpha = rho / (cocg ? pq : creal(pq));
        sla__zaxpy(n, alpha, p, x, nt);  /* x += alpha p */
        sla__zaxpy(n, -alpha, q, r, nt); /* r -= alpha q */
        it++;
        exact = false;
        rnorm = sla__znrm2(n, r, nt);
        if (!isfinite(rnorm)) {
            stop = SLA_DIVERGED_NAN;
            break;
        }
        if (sla__kmonitor(o, it, bnorm > 0 ? rnorm / bnorm : rnorm)) {
            stop = sla__kstop_reason(o);
            break;
        }
        if (rnorm <= tol) { /* confirm on the true residual, else restart from it */
            rnorm = sla__ztrue_residual(A, b, x, r);
            exact = true;
            restart = true;
        }
    }
    if (!exact) rnorm = sla__ztrue_residual(A, b, x, q);
    sla__kinfo_finish(info, it, rnorm, bnorm, o, stop);
    zfree(ctx, work);
    return info->converged ? SLA_OK : SLA_NOT_CONVERGED;
pc_fail:
    zfree(ctx, work);
    return sla__kpc_error(ctx, st, name);
}

sla_status sla__zcg(sla_ctx *ctx, const sla__zop *A, const sla__zpc *M, const sla__z *b, sla__z *x,
                    const sla__kopts *o, sla_solve_info *info)
{
    return cg_like(ctx, A, M, b, x, o, info, false);
}

sla_status sla__zcocg(sla_ctx *ctx, const sla__zop *A, const sla__zpc *M, const sla__z *b, sla__z *x,
                      const sla__kopts *o, sla_solve_info *info)
{
    return cg_like(ctx, A, M, b, x, o, info, true);
}

/* ---- MINRES -------------------------------------------------------------------
 * Paige and Saunders' recurrence: for Hermitian A and M the Lanczos
 * coefficients alpha = v^H A v and beta are real, so the rotations are the
 * real method's and only the vectors are complex. phibar estimates the
 * M^-1-norm of the residual, confirmed on the true 2-norm. */
sla_status sla__zminres(sla_ctx *ctx, const sla__zop *A, const sla__zpc *M, const sla__z *b,
                        sla__z *x, const sla__kopts *o, sla_solve_info *info)
{
    sla_int n = A->n;
    int nt = A->nt;
    sla__z *work = zalloc(ctx, n, 7, "minres");
    if (!work) return SLA_ERR_NOMEM;
    sla__z *r1 = work, *r2 = work + n, *y = work + 2 * n, *v = work + 3 * n;
    sla__z *w = work + 4 * n, *w1 = work + 5 * n, *w2 = work + 6 * n;
    sla_status st = SLA_OK;
    double bnorm = sla__znrm2(n, b, nt);
    double tol = sla__ktol(o, bnorm);
    if (!o->use_x0) zzero(n, x);
    double rnorm = sla__ztrue_residual(A, b, x, r1);
    bool exact = true;
    sla_int it = 0;
    sla_reason stop = SLA_DIVERGED_MAXITER;

    while (rnorm > tol && it < o->maxiter && isfinite(rnorm)) {
        if ((st = sla__zpc_run(A, M, r1, y))) goto pc_fail;
        double beta1 = creal(sla__zdotc(n, r1, y, nt));
        if (!(beta1 > 0.0)) {
            stop = isfinite(beta1) ? SLA_DIVERGED_INDEFINITE : SLA_DIVERGED_NAN;
            break;
        }
        beta1 = sqrt(beta1);
        zcopy(n, r1, r2);
        zzero(n, w);
        zzero(n, w2);
        double beta = beta1, oldb = 0.0, dbar = 0.0, epsln = 0.0, phibar = beta1;
        double cs = -1.0, sn = 0.0;
        double scale = rnorm / beta1;
        bool restart = false;
        for (sla_int k = 0; it < o->maxiter; k++) {
            double s = 1.0 / beta;
            for (sla_int i = 0; i < n; i++) v[i] = s * y[i]; /* v = y / beta */
            A->apply(A->data, v, y, nt);                     /* y = A v */
            if (k > 0) sla__zaxpy(n, -beta / oldb, r1, y, nt);
            double alfa = creal(sla__zdotc(n, v, y, nt)); /* real for Hermitian A */
            sla__zaxpy(n, -alfa / beta, r2, y, nt);
            zcopy(n, r2, r1);
            zcopy(n, y, r2);
            if ((st = sla__zpc_run(A, M, r2, y))) goto pc_fail;
            oldb = beta;
            double bb = creal(sla__zdotc(n, r2, y, nt));
            if (bb < 0.0 || !isfinite(bb)) {
                stop = isfinite(bb) ? SLA_DIVERGED_INDEFINITE : SLA_DIVERGED_NAN;
                goto finish;
            }
            beta = sqrt(bb);
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
            sla__z *t = w1; /* w1 <- w2 <- w */
            w1 = w2;
            w2 = w;
            w = t;
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
        rnorm = sla__ztrue_residual(A, b, x, r1);
        exact = true;
        if (!restart) break; /* maxiter */
    }
finish:
    if (!exact) rnorm = sla__ztrue_residual(A, b, x, r1);
    sla__kinfo_finish(info, it, rnorm, bnorm, o, stop);
    zfree(ctx, work);
    return info->converged ? SLA_OK : SLA_NOT_CONVERGED;
pc_fail:
    zfree(ctx, work);
    return sla__kpc_error(ctx, st, "minres");
}

/* ---- BiCGStab -------------------------------------------------------------------
 * Right-preconditioned (A M^-1 u = b, x = M^-1 u) with the Hermitian inner
 * product: rho = r^^H r, alpha = rho / r^^H v, omega = t^H s / t^H t. */
sla_status sla__zbicgstab(sla_ctx *ctx, const sla__zop *A, const sla__zpc *M, const sla__z *b,
                          sla__z *x, const sla__kopts *o, sla_solve_info *info)
{
    sla_int n = A->n;
    int nt = A->nt;
    sla__z *work = zalloc(ctx, n, 7, "bicgstab");
    if (!work) return SLA_ERR_NOMEM;
    sla__z *r = work, *rh = work + n, *p = work + 2 * n, *v = work + 3 * n;
    sla__z *ph = work + 4 * n, *s = work + 5 * n, *t = work + 6 * n;
    sla_status st = SLA_OK;
    double bnorm = sla__znrm2(n, b, nt);
    double tol = sla__ktol(o, bnorm);
    double rnorm;
    if (o->use_x0) {
        rnorm = sla__ztrue_residual(A, b, x, r);
    } else {
        zzero(n, x);
        zcopy(n, b, r);
        rnorm = bnorm;
    }
    sla_int it = 0;
    sla_reason stop = SLA_DIVERGED_MAXITER;
    bool restart = true, exact = true, fresh = false; /* fresh: restarted this iteration */
    sla__z rho = 1.0, alpha = 1.0, omega = 1.0;

    /* a breakdown restarts with r^ = r, as the real BiCGStab does
     * (bicgstab.c); only one right after a restart stops it */
    while (rnorm > tol && it < o->maxiter) {
        if (restart) { /* shadow residual r^ = r, p = v = 0 */
            zcopy(n, r, rh);
            zzero(n, p);
            zzero(n, v);
            rho = alpha = omega = 1.0;
            restart = false;
            fresh = true;
        } else {
            fresh = false;
        }
        sla__z rho_new = sla__zdotc(n, rh, r, nt);
        if (rho_new == 0.0 && !fresh) {
            restart = true;
            continue;
        }
        if (rho_new == 0.0 || !zfinite(rho_new)) {
            stop = zfinite(rho_new) ? SLA_DIVERGED_BREAKDOWN : SLA_DIVERGED_NAN;
            break;
        }
        sla__z beta = (rho_new / rho) * (alpha / omega);
        rho = rho_new;
        for (sla_int i = 0; i < n; i++) p[i] = r[i] + beta * (p[i] - omega * v[i]); /* p = r + beta (p - omega v) */
        if ((st = sla__zpc_run(A, M, p, ph))) goto pc_fail;
        A->apply(A->data, ph, v, nt); /* v = A M^-1 p */
        sla__z rhv = sla__zdotc(n, rh, v, nt);
        if (rhv == 0.0 && !fresh) {
            restart = true;
            continue;
        }
        if (rhv == 0.0 || !zfinite(rhv)) {
            stop = zfinite(rhv) ? SLA_DIVERGED_BREAKDOWN : SLA_DIVERGED_NAN;
            break;
        }
        alpha = rho / rhv;
        for (sla_int i = 0; i < n; i++) s[i] = r[i] - alpha * v[i]; /* s = r - alpha v */
        double snorm = sla__znrm2(n, s, nt);
        it++;
        exact = false;
        if (snorm <= tol) { /* half step suffices: x += alpha M^-1 p */
            sla__zaxpy(n, alpha, ph, x, nt);
            rnorm = sla__ztrue_residual(A, b, x, r);
            exact = true;
            if (rnorm <= tol) break;
            restart = true;
            continue;
        }
        if ((st = sla__zpc_run(A, M, s, t))) goto pc_fail; /* t = M^-1 s for now */
        sla__zaxpy(n, alpha, ph, x, nt);                      /* x += alpha M^-1 p */
        zcopy(n, t, ph);                                      /* ph = M^-1 s */
        A->apply(A->data, ph, t, nt);                         /* t = A M^-1 s */
        sla__z ts = sla__zdotc(n, t, s, nt);
        double tt = creal(sla__zdotc(n, t, t, nt));
        if (tt == 0.0 || !isfinite(tt)) {
            stop = isfinite(tt) ? SLA_DIVERGED_BREAKDOWN : SLA_DIVERGED_NAN;
            break;
        }
        omega = ts / tt;
        for (sla_int i = 0; i < n; i++) {
            x[i] += omega * ph[i];      /* x += omega M^-1 s */
            r[i] = s[i] - omega * t[i]; /* r = s - omega t */
        }
        rnorm = sla__znrm2(n, r, nt);
        if (!isfinite(rnorm)) {
            stop = SLA_DIVERGED_NAN;
            break;
        }
        if (sla__kmonitor(o, it, bnorm > 0 ? rnorm / bnorm : rnorm)) {
            stop = sla__kstop_reason(o);
            break;
        }
        if (rnorm <= tol) {
            rnorm = sla__ztrue_residual(A, b, x, r);
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
    if (!exact) rnorm = sla__ztrue_residual(A, b, x, t);
    sla__kinfo_finish(info, it, rnorm, bnorm, o, stop);
    zfree(ctx, work);
    return info->converged ? SLA_OK : SLA_NOT_CONVERGED;
pc_fail:
    zfree(ctx, work);
    return sla__kpc_error(ctx, st, "bicgstab");
}
