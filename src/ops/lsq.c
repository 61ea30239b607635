/* Damped sparse least squares, min ||A x - b||^2 + damp^2 ||x||^2, by LSQR
 * (Paige & Saunders, ACM TOMS 8, 1982) and LSMR (Fong & Saunders, SIAM J.
 * Sci. Comput. 33, 2011): both run the Golub-Kahan bidiagonalization of
 * Abar = [A; damp I] started from rbar0 = [b - A x0; -damp x0] and update
 * the correction dx by plane rotations, LSQR minimizing ||rbar|| over the
 * Krylov space (CG on the normal equations), LSMR minimizing ||Abar^T rbar||
 * (MINRES on them). The damping is applied as the explicit stacked operator
 * rather than by the papers' extra rotation: the two are the same iteration
 * in exact arithmetic, and the stacked form keeps an x0 exact (damping acts
 * on x0 + dx, not dx). Here also the options, their parser and the names. */
#include "lsq_internal.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *sla_lsq_method_name(sla_lsq_method m)
{
    return m == SLA_LSQ_LSMR ? "lsmr" : m == SLA_LSQ_LSQR ? "lsqr" : m == SLA_LSQ_QR ? "qr" : "unknown";
}

const char *sla_lsq_reason_name(sla_lsq_reason r)
{
    static const char *const names[] = {"zero", "compatible", "normal", "conlim", "maxiter"};
    return (unsigned)r < COUNT(names) ? names[r] : "unknown";
}

void sla_lsq_options_default(sla_lsq_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->method = SLA_LSQ_LSQR;
    o->atol = o->btol = 1e-8;
    o->conlim = 1e8;
    o->grad_rtol = 1e-10;
}

/* ---- the option string ------------------------------------------------------- */

_Static_assert(sizeof(sla_lsq_method) == sizeof(int), "a CHOICE field is int-sized");

static const char *const method_names[] = {"lsqr", "lsmr", "qr"}; /* SLA_LSQ_LSQR, _LSMR, _QR */
_Static_assert(sizeof(sla_transpose_mode) == sizeof(int), "a CHOICE field is int-sized");
static const char *const transpose_names[] = {"auto", "explicit", "scatter"}; /* SLA_TRANSPOSE_* */

#define F(nm, kd, h, op) \
    {.key = #nm, .kind = SLA__OPT_##kd, .at = offsetof(sla_lsq_options, nm), .lo = 0, .hi = h, .open = op}
static const sla__opt_field lsq_fields[] = {
    {"method", SLA__OPT_CHOICE, offsetof(sla_lsq_options, method), 0, 0, 0, method_names, 3},
    F(damp, REAL, HUGE_VAL, 0),
    F(atol, REAL, HUGE_VAL, 0),
    F(btol, REAL, HUGE_VAL, 0),
    F(conlim, REAL, HUGE_VAL, 0),
    F(maxiter, COUNT, 9e15, 0),
    F(grad_rtol, REAL, HUGE_VAL, SLA__OPT_LO_OPEN),
    F(grad_maxiter, COUNT, 9e15, 0),
    {"transpose", SLA__OPT_CHOICE, offsetof(sla_lsq_options, transpose), 0, 0, 0, transpose_names, 3},
};
#undef F
static const sla__opt_table lsq_table = {.fields = lsq_fields, .count = (int)COUNT(lsq_fields)};

sla_status sla_lsq_options_parse(sla_ctx *ctx, const char *str, sla_lsq_options *opts)
{
    return sla__opt_parse(ctx, "sla_lsq_options_parse", str, opts, sizeof *opts, true, &lsq_table);
}

/* ---- the operator Abar = [A; damp I] -------------------------------------------- */

sla_status sla__lsq_op_init(sla_ctx *ctx, sla__lsq_op *op, const sla_matrix *A, double damp,
                            sla_transpose_mode mode)
{
    memset(op, 0, sizeof *op);
    op->A = A;
    op->damp = damp;
    op->m = A->nrows;
    op->n = A->ncols;
    op->mm = op->m + (damp > 0.0 ? op->n : 0);
    op->nt = sla__threads(ctx);
    op->work = NULL;
    if (mode == SLA_TRANSPOSE_EXPLICIT) {
        sla_status st = sla__csrt_build(ctx, A, 0, &op->T);
        if (st != SLA_ERR_TOO_LARGE) return st; /* too many rows for int32: scatter */
    }
    if (op->nt > 1 && op->m >= SLA_PAR_MIN) {
        op->work = sla__ctx_malloc(ctx, (size_t)op->nt * (size_t)op->n, sizeof(double), "a transposed product");
        if (!op->work) return SLA_ERR_NOMEM;
    }
    return SLA_OK;
}

void sla__lsq_op_free(sla_ctx *ctx, sla__lsq_op *op)
{
    sla_free(ctx, op->work);
    op->work = NULL;
    sla__csrt_free(ctx, &op->T);
}

void sla__lsq_mv(const sla__lsq_op *op, const double *v, double *y)
{
    sla__spmv(op->A, 0, v, y, op->nt);
    if (op->mm > op->m)
        for (sla_int j = 0; j < op->n; j++) y[op->m + j] = op->damp * v[j];
}

void sla__lsq_at(const sla__lsq_op *op, const double *u, double *y)
{
    if (op->T.rowptr) sla__csrt_spmv(&op->T, u, y, op->nt);
    else sla__spmv_t(op->A, 0, u, y, op->nt, op->work);
}

void sla__lsq_rmv(const sla__lsq_op *op, const double *u, double *y)
{
    sla__lsq_at(op, u, y);
    if (op->mm > op->m)
        for (sla_int j = 0; j < op->n; j++) y[j] += op->damp * u[op->m + j];
}

/* ---- checks -------------------------------------------------------------------- */

static bool all_finite(sla_int n, const double *x)
{
    for (sla_int i = 0; i < n; i++)
        if (!isfinite(x[i])) return false;
    return true;
}

sla_status sla__lsq_check(sla_ctx *ctx, const char *who, const sla_matrix *A, sla_int ib,
                          const sla_lsq_options *o, const double *b, const double *x, sla_matrix *V)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: A is NULL", who);
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "%s: value array %lld out of range [0, %lld)", who, (long long)ib,
                          (long long)A->nbatch);
    if ((!b && A->nrows > 0) || (!x && A->ncols > 0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: b or x is NULL", who);
    if (o->method != SLA_LSQ_LSQR && o->method != SLA_LSQ_LSMR && o->method != SLA_LSQ_QR)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: unknown method %d", who, (int)o->method);
    if (!(o->damp >= 0.0) || !isfinite(o->damp) || !(o->atol >= 0.0) || !(o->btol >= 0.0) ||
        !(o->conlim >= 0.0) || o->maxiter < 0 || !(o->grad_rtol > 0.0) || o->grad_maxiter < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "%s: options out of range (damp, atol, btol, conlim, maxiter, grad_maxiter >= 0, "
                          "grad_rtol > 0)", who);
    if (!all_finite(A->nrows, b)) return sla__error(ctx, SLA_ERR_VALUE, "%s: b has a NaN or Inf", who);
    if (o->x0 && !all_finite(A->ncols, o->x0))
        return sla__error(ctx, SLA_ERR_VALUE, "%s: x0 has a NaN or Inf", who);
    sla__single_view(A, ib, V);
    return sla_matrix_check_values(ctx, V, 0);
}

/* ---- the iteration --------------------------------------------------------------- */

static void scale(sla_int n, double a, double *x)
{
    for (sla_int i = 0; i < n; i++) x[i] *= a;
}

/* Paige & Saunders' stopping rules (their istop; a later test overrides an
 * earlier one, so a convergence test outranks conlim and maxiter). -1: go on. */
static int stop_rule(const sla_lsq_options *o, sla_int itn, sla_int maxiter, double bnorm, double anorm,
                     double acond, double rnorm, double arnorm, double xnorm)
{
    double test1 = rnorm / bnorm;
    double test2 = anorm * rnorm > 0.0 ? arnorm / (anorm * rnorm) : 0.0;
    double test3 = acond > 0.0 ? 1.0 / acond : 1.0;
    double t1 = test1 / (1.0 + anorm * xnorm / bnorm);
    double rtol = o->btol + o->atol * anorm * xnorm / bnorm;
    double ctol = o->conlim > 0.0 ? 1.0 / o->conlim : 0.0;
    int r = -1;
    if (itn >= maxiter) r = SLA_LSQ_MAXITER;
    if (1.0 + test3 <= 1.0) r = SLA_LSQ_CONLIM;
    if (1.0 + test2 <= 1.0) r = SLA_LSQ_NORMAL;
    if (1.0 + t1 <= 1.0) r = SLA_LSQ_COMPATIBLE;
    if (test3 <= ctol) r = SLA_LSQ_CONLIM;
    if (test2 <= o->atol) r = SLA_LSQ_NORMAL;
    if (test1 <= rtol) r = SLA_LSQ_COMPATIBLE;
    return r;
}

/* One bidiagonalization step: u = (Abar v - alpha u) / beta, then
 * v = (Abar^T u - beta v) / alpha; t (mm) and s (n) are scratch. */
static void bidiag_step(const sla__lsq_op *op, double *u, double *v, double *alpha, double *beta, double *t,
                        double *s)
{
    sla__lsq_mv(op, v, t);
    for (sla_int i = 0; i < op->mm; i++) u[i] = t[i] - *alpha * u[i];
    *beta = sla__nrm2(op->mm, u, op->nt);
    if (*beta > 0.0) {
        scale(op->mm, 1.0 / *beta, u);
        sla__lsq_rmv(op, u, s);
        for (sla_int j = 0; j < op->n; j++) v[j] = s[j] - *beta * v[j];
        *alpha = sla__nrm2(op->n, v, op->nt);
        if (*alpha > 0.0) scale(op->n, 1.0 / *alpha, v);
    }
}

/* LSQR: dx from u, v (normalized start), alpha, beta = ||rbar0||. */
static int lsqr_loop(const sla__lsq_op *op, const sla_lsq_options *o, sla_int maxiter, double *u, double *v,
                     double alpha, double beta, double *dx, double *w, double *t, double *s, sla_lsq_info *info)
{
    const sla_int n = op->n;
    const double bnorm = beta;
    double phibar = beta, rhobar = alpha, anorm2 = 0.0, ddnorm = 0.0;
    sla__copy(n, v, w);
    for (sla_int itn = 1;; itn++) {
        anorm2 += alpha * alpha;
        bidiag_step(op, u, v, &alpha, &beta, t, s);
        anorm2 += beta * beta;
        double rho = hypot(rhobar, beta), c = rhobar / rho, sn = beta / rho;
        double theta = sn * alpha;
        rhobar = -c * alpha;
        double phi = c * phibar;
        phibar = sn * phibar;
        double tau = sn * phi;
        double wn = sla__nrm2(n, w, op->nt) / rho;
        ddnorm += wn * wn;
        double t1 = phi / rho, t2 = -theta / rho;
        for (sla_int j = 0; j < n; j++) {
            dx[j] += t1 * w[j];
            w[j] = v[j] + t2 * w[j];
        }
        info->iterations = itn;
        info->anorm = sqrt(anorm2);
        info->acond = info->anorm * sqrt(ddnorm);
        info->rnorm = phibar;
        info->arnorm = alpha * fabs(tau);
        double xnorm = sla__nrm2(n, dx, op->nt);
        int r = stop_rule(o, itn, maxiter, bnorm, info->anorm, info->acond, info->rnorm, info->arnorm, xnorm);
        if (r >= 0) return r;
    }
}

/* LSMR: the same start; h, hbar (n) its direction vectors. */
static int lsmr_loop(const sla__lsq_op *op, const sla_lsq_options *o, sla_int maxiter, double *u, double *v,
                     double alpha, double beta, double *dx, double *h, double *hbar, double *t, double *s,
                     sla_lsq_info *info)
{
    const sla_int n = op->n;
    const double bnorm = beta;
    double alphabar = alpha, zetabar = alpha * beta, rho = 1.0, rhobar = 1.0, cbar = 1.0, sbar = 0.0;
    double zeta = 0.0;
    /* for the estimate of ||rbar|| */
    double betadd = beta, betad = 0.0, rhodold = 1.0, tautildeold = 0.0, thetatilde = 0.0;
    double normA2 = alpha * alpha, maxrbar = 0.0, minrbar = HUGE_VAL;
    sla__copy(n, v, h);
    sla__zero(n, hbar);
    for (sla_int itn = 1;; itn++) {
        bidiag_step(op, u, v, &alpha, &beta, t, s);
        /* rotation Q_k: annihilate beta_{k+1} under alphabar_k */
        double rhoold = rho;
        rho = hypot(alphabar, beta);
        double c = alphabar / rho, sn = beta / rho;
        double thetanew = sn * alpha;
        alphabar = c * alpha;
        /* rotation Qbar_k: on the upper bidiagonal R_k */
        double rhobarold = rhobar, zetaold = zeta;
        double thetabar = sbar * rho, rhotemp = cbar * rho;
        rhobar = hypot(rhotemp, thetanew);
        cbar = rhotemp / rhobar;
        sbar = thetanew / rhobar;
        zeta = cbar * zetabar;
        zetabar = -sbar * zetabar;
        /* hbar, x, h */
        double f = thetabar * rho / (rhoold * rhobarold);
        double g = zeta / (rho * rhobar), e = thetanew / rho;
        for (sla_int j = 0; j < n; j++) {
            hbar[j] = h[j] - f * hbar[j];
            dx[j] += g * hbar[j];
            h[j] = v[j] - e * h[j];
        }
        /* ||rbar|| from the rotations applied to beta e1 (Fong & Saunders, sec. 3.4) */
        double betahat = c * betadd;
        betadd = -sn * betadd;
        double thetatildeold = thetatilde;
        double rhotildeold = hypot(rhodold, thetabar);
        double ctildeold = rhodold / rhotildeold, stildeold = thetabar / rhotildeold;
        thetatilde = stildeold * rhobar;
        rhodold = ctildeold * rhobar;
        betad = -stildeold * betad + ctildeold * betahat;
        tautildeold = (zetaold - thetatildeold * tautildeold) / rhotildeold;
        double taud = (zeta - thetatilde * tautildeold) / rhodold;
        info->rnorm = sqrt((betad - taud) * (betad - taud) + betadd * betadd);
        /* ||Abar||_F and cond(Abar) estimates */
        normA2 += beta * beta;
        info->anorm = sqrt(normA2);
        normA2 += alpha * alpha;
        if (rhobarold > maxrbar) maxrbar = rhobarold;
        if (itn > 1 && rhobarold < minrbar) minrbar = rhobarold;
        double hi = maxrbar > rhotemp ? maxrbar : rhotemp, lo = minrbar < rhotemp ? minrbar : rhotemp;
        info->acond = hi / lo;
        info->arnorm = fabs(zetabar);
        info->iterations = itn;
        double xnorm = sla__nrm2(n, dx, op->nt);
        int r = stop_rule(o, itn, maxiter, bnorm, info->anorm, info->acond, info->rnorm, info->arnorm, xnorm);
        if (r >= 0) return r;
    }
}

/* info's true_rnorm = ||b - A x||, true_arnorm = ||A^T (b - A x) - damp^2 x||
 * and xnorm, through t (m) and s (n). */
static void true_residuals(const sla__lsq_op *op, const double *b, const double *x, double *t, double *s,
                           sla_lsq_info *info)
{
    const sla_int m = op->m, n = op->n;
    const int nt = op->nt;
    sla__spmv(op->A, 0, x, t, nt);
    for (sla_int i = 0; i < m; i++) t[i] = b[i] - t[i];
    sla__lsq_at(op, t, s);
    for (sla_int j = 0; j < n; j++) s[j] -= op->damp * op->damp * x[j];
    info->true_rnorm = sla__nrm2(m, t, nt);
    info->true_arnorm = sla__nrm2(n, s, nt);
    info->xnorm = sla__nrm2(n, x, nt);
}

/* method qr: SuiteSparseQR (src/backends/spqr.c), falling back to LSMR when
 * A is rank deficient without damping. */
static sla_status qr_run(sla_ctx *ctx, const sla__lsq_op *op, const sla_lsq_options *o, const double *b,
                         double *x, sla_lsq_info *info)
{
    sla_int rank = 0;
    sla_status st = sla__spqr_lsq(ctx, op->A, op->damp, b, x, &rank);
    if (st == SLA_ERR_SINGULAR && op->damp == 0.0) {
        sla_lsq_options lo = *o;
        lo.method = SLA_LSQ_LSMR;
        lo.x0 = NULL;
        st = sla__lsq_run(ctx, op, &lo, b, x, info);
        snprintf(info->note, sizeof info->note,
                 "qr: A is rank deficient (SuiteSparseQR's rank %lld < %lld); minimum-norm solution by lsmr",
                 (long long)rank, (long long)(op->m < op->n ? op->m : op->n));
        return st;
    }
    if (st) return st;
    snprintf(info->method, sizeof info->method, "qr");
    double *buf = sla__ctx_malloc(ctx, (size_t)op->m + (size_t)op->n + 1, sizeof *buf, "least-squares residual");
    if (!buf) return SLA_ERR_NOMEM;
    true_residuals(op, b, x, buf, buf + op->m, info);
    sla_free(ctx, buf);
    info->iterations = 0;
    info->rnorm = sqrt(info->true_rnorm * info->true_rnorm + op->damp * op->damp * info->xnorm * info->xnorm);
    info->arnorm = info->true_arnorm;
    /* ||Abar||_F, and LSQR's test 1 on the exact residual: compatible, or a
     * least-squares solution (acond stays 0: qr does not estimate it) */
    double fro = op->damp * op->damp * (double)op->n, bn = sla__nrm2(op->m, b, op->nt);
    for (sla_int k = 0; k < op->A->nnz; k++) fro += sla__val(op->A, 0, k) * sla__val(op->A, 0, k);
    info->anorm = sqrt(fro);
    info->reason = info->true_rnorm <= o->btol * bn + o->atol * info->anorm * info->xnorm ? SLA_LSQ_COMPATIBLE
                                                                                          : SLA_LSQ_NORMAL;
    info->converged = true;
    if (o->x0) snprintf(info->note, sizeof info->note, "qr: direct, x0 not used");
    return SLA_OK;
}

sla_status sla__lsq_run(sla_ctx *ctx, const sla__lsq_op *op, const sla_lsq_options *o, const double *b,
                        double *x, sla_lsq_info *info)
{
    const sla_int m = op->m, n = op->n, mm = op->mm;
    const int nt = op->nt;
    sla_int maxiter = o->maxiter > 0 ? o->maxiter : (2 * n > 20 ? 2 * n : 20);
    size_t len = (size_t)2 * (size_t)mm + (size_t)5 * (size_t)n + 1;
    double *buf = sla__ctx_malloc(ctx, len, sizeof *buf, "least-squares vectors");
    if (!buf) return SLA_ERR_NOMEM;
    double *u = buf, *t = u + mm, *v = t + mm, *dx = v + n, *w = dx + n, *hb = w + n, *s = hb + n;
    snprintf(info->method, sizeof info->method, "%s", sla_lsq_method_name(o->method));
    /* u = rbar0 = [b - A x0; -damp x0] */
    if (o->x0) {
        sla__spmv(op->A, 0, o->x0, u, nt);
        for (sla_int i = 0; i < m; i++) u[i] = b[i] - u[i];
        for (sla_int j = m; j < mm; j++) u[j] = -op->damp * o->x0[j - m];
    } else {
        sla__copy(m, b, u);
        sla__zero(mm - m, u + m);
    }
    sla__zero(n, dx);
    double beta = sla__nrm2(mm, u, nt), alpha = 0.0;
    if (beta > 0.0) {
        scale(mm, 1.0 / beta, u);
        sla__lsq_rmv(op, u, v);
        alpha = sla__nrm2(n, v, nt);
        if (alpha > 0.0) scale(n, 1.0 / alpha, v);
    }
    int reason = SLA_LSQ_ZERO;
    info->iterations = 0;
    info->rnorm = beta;
    info->arnorm = alpha * beta;
    info->anorm = alpha;
    info->acond = 0.0;
    if (alpha * beta > 0.0) {
        if (o->method == SLA_LSQ_LSQR) reason = lsqr_loop(op, o, maxiter, u, v, alpha, beta, dx, w, t, s, info);
        else reason = lsmr_loop(op, o, maxiter, u, v, alpha, beta, dx, w, hb, t, s, info);
    }
    for (sla_int j = 0; j < n; j++) x[j] = (o->x0 ? o->x0[j] : 0.0) + dx[j];
    true_residuals(op, b, x, t, s, info);
    info->reason = (sla_lsq_reason)reason;
    info->converged = reason <= SLA_LSQ_NORMAL;
    sla_free(ctx, buf);
    return info->converged ? SLA_OK : SLA_NOT_CONVERGED;
}

sla_status sla_lsq(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_lsq_options *opts, const double *b,
                   double *x, sla_lsq_info *info)
{
    if (sla__require_real(ctx, A, "sla_lsq")) return SLA_ERR_UNSUPPORTED;
    double t0 = sla__now();
    sla_lsq_options o;
    if (opts) o = *opts;
    else sla_lsq_options_default(&o);
    sla_lsq_info tmp;
    if (!info) info = &tmp;
    memset(info, 0, sizeof *info);
    sla_matrix V;
    sla_status st = sla__lsq_check(ctx, "lsq", A, ib, &o, b, x, &V);
    if (st) return st;
    sla__lsq_op op;
    /* QR forms one product with A^T (the true residuals): no transpose to build */
    if ((st = sla__lsq_op_init(ctx, &op, &V, o.damp,
                               o.method == SLA_LSQ_QR ? SLA_TRANSPOSE_SCATTER : o.transpose)))
        return st;
    st = o.method == SLA_LSQ_QR ? qr_run(ctx, &op, &o, b, x, info) : sla__lsq_run(ctx, &op, &o, b, x, info);
    sla__lsq_op_free(ctx, &op);
    info->seconds = sla__now() - t0;
    if (st < 0) return st;
    if (st == SLA_NOT_CONVERGED)
        snprintf(info->note, sizeof info->note, "stopped by %s after %lld iterations",
                 sla_lsq_reason_name(info->reason), (long long)info->iterations);
    return sla__ok(ctx, st);
}
