/* The VJP of damped least squares x = argmin ||A x - b||^2 + l^2 ||x||^2
 * (sla_lsq_vjp): one adjoint solve with the normal operator A^T A + l^2 I,
 * applied as v -> A^T (A v) + l^2 v, never formed.
 *
 * Derivation. x satisfies the normal equations M x = A^T b with
 * M = A^T A + l^2 I. Differentiating,
 *   dM x + M dx = dA^T b + A^T db,  dM = dA^T A + A^T dA,
 *   M dx = dA^T r - A^T dA x + A^T db          (r = b - A x).
 * For a loss L with g = dL/dx, dL = g^T dx = y^T (dA^T r - A^T dA x + A^T db)
 * with M y = g (M symmetric), so
 *   dL/db = A y,   dL/dA_ij = r_i y_j - (A y)_i x_j,
 * kept on the stored pattern. For l > 0, M is positive definite and this is
 * the whole derivative.
 * For l = 0, x = A^+ b and M may be singular. The Golub-Pereyra derivative
 * of the pseudo-inverse (constant rank),
 *   dA^+ = -A^+ dA A^+ + M^+ dA^T (I - A A^+) + (I - A^+ A) dA^T A^+T A^+,
 * gives the two terms above with y = M^+ g (minimum norm, on range(A^T)),
 * plus z_i q_j with q = (I - A^+ A) g (the part of g in null(A)) and
 * z = A^+T x = A M^+ x. So for l = 0: p = A^+ (A g) = the range part of g
 * by LSQR from 0 (its minimum-norm solution), q = g - p, y = M^+ p by CG
 * from 0 (consistent, so CG stays on range(A^T)), and when q is not
 * negligible w = M^+ x by CG and z = A w. An underdetermined A of full row
 * rank needs the extra term; an overdetermined one of full column rank has
 * q = 0 (up to the LSQR tolerance).
 *
 * Why CG on M rather than LSQR on a stacked system: the adjoint right-hand
 * side g is an arbitrary n-vector, not A^T c, so there is no least-squares
 * problem whose normal equations are M y = g without the dual (minimum-norm
 * solution s of [A; l I]^T s = g, s = [A y; l y]), from which y = s_2 / l is
 * unstable for small l and undefined for l = 0. CG on M is MINRES-free and
 * exact for the system asked; it is made CGLS-like by computing the
 * curvature p^T M p as ||A p||^2 + l^2 ||p||^2 (never negative from
 * rounding), and converges like LSQR would on the forward (in cond(A)^2
 * terms). */
#include "lsq_internal.h"

#include <math.h>
#include <string.h>

/* CG on M y = rhs from y = 0 (M = Abar^T Abar through op); t (mm), p, r, q
 * (n) scratch. *its += iterations; *relres = max(*relres, true relative
 * residual). Returns whether rtol was met. */
static bool cg_normal(const sla__lsq_op *op, const double *rhs, double *y, double rtol, sla_int maxiter,
                      double *t, double *p, double *r, double *q, sla_int *its, double *relres)
{
    const sla_int n = op->n;
    const int nt = op->nt;
    sla__zero(n, y);
    double r0 = sla__nrm2(n, rhs, nt);
    if (r0 == 0.0) return true;
    sla__copy(n, rhs, r);
    sla__copy(n, rhs, p);
    double rr = r0 * r0;
    bool ok = false;
    sla_int k = 0;
    while (k < maxiter) {
        k++;
        sla__lsq_mv(op, p, t);
        double curv = sla__dot(op->mm, t, t, nt);
        if (!(curv > 0.0)) break; /* p in null(A) with l = 0: an inconsistent right-hand side */
        double a = rr / curv;
        sla__axpy(n, a, p, y, nt);
        sla__lsq_rmv(op, t, q);
        sla__axpy(n, -a, q, r, nt);
        double rrn = sla__dot(n, r, r, nt);
        if (sqrt(rrn) <= rtol * r0) {
            ok = true;
            break;
        }
        sla__xpby(n, r, rrn / rr, p, nt);
        rr = rrn;
    }
    *its += k;
    /* the true residual */
    sla__lsq_mv(op, y, t);
    sla__lsq_rmv(op, t, q);
    for (sla_int j = 0; j < n; j++) q[j] = rhs[j] - q[j];
    double res = sla__nrm2(n, q, nt) / r0;
    if (res > *relres) *relres = res;
    return ok;
}

sla_status sla_lsq_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_lsq_options *opts,
                       const double *b, const double *x, const double *gx, double *gb, double *gA,
                       sla_lsq_info *info)
{
    if (sla__require_real(ctx, A, "sla_lsq_vjp")) return SLA_ERR_UNSUPPORTED;
    double t0 = sla__now();
    sla_lsq_options o;
    if (opts) o = *opts;
    else sla_lsq_options_default(&o);
    sla_lsq_info tmp;
    if (!info) info = &tmp;
    memset(info, 0, sizeof *info);
    sla_matrix V;
    sla_status st = sla__lsq_check(ctx, "lsq_vjp", A, ib, &o, b, x, &V);
    if (st) return st;
    if (!gx && A->ncols > 0) return sla__error(ctx, SLA_ERR_ARGUMENT, "lsq_vjp: gx is NULL");
    for (sla_int j = 0; j < A->ncols; j++)
        if (!isfinite(x[j]) || !isfinite(gx[j]))
            return sla__error(ctx, SLA_ERR_VALUE, "lsq_vjp: x or gx has a NaN or Inf (entry %lld)", (long long)j);
    sla__lsq_op op;
    if ((st = sla__lsq_op_init(ctx, &op, &V, o.damp, o.transpose))) return st;
    const sla_int m = op.m, n = op.n, mm = op.mm;
    const int nt = op.nt;
    sla_int maxiter = o.grad_maxiter > 0 ? o.grad_maxiter : (4 * n > 1000 ? 4 * n : 1000);
    size_t len = (size_t)2 * (size_t)mm + (size_t)2 * (size_t)m + (size_t)7 * (size_t)n + 1;
    double *buf = sla__ctx_malloc(ctx, len, sizeof *buf, "least-squares adjoint vectors");
    if (!buf) {
        sla__lsq_op_free(ctx, &op);
        return SLA_ERR_NOMEM;
    }
    double *t = buf, *ag = t + mm, *r = ag + mm, *ay = r + m, *y = ay + m, *rhs = y + n, *q = rhs + n;
    double *p = q + n, *cr = p + n, *cq = cr + n, *w = cq + n;
    snprintf(info->method, sizeof info->method, "%s", sla_lsq_method_name(o.method));
    bool ok = true, extra = false;
    /* r = b - A x */
    sla__spmv(&V, 0, x, r, nt);
    for (sla_int i = 0; i < m; i++) r[i] = b[i] - r[i];
    if (o.damp > 0.0) {
        sla__copy(n, gx, rhs);
        sla__zero(n, q);
    } else {
        /* rhs = A^+ (A g), the range part of g; q = g - rhs */
        sla__spmv(&V, 0, gx, ag, nt);
        sla_lsq_options po = o;
        po.method = SLA_LSQ_LSQR;
        po.x0 = NULL;
        po.atol = po.btol = o.grad_rtol;
        po.conlim = 0.0;
        po.maxiter = maxiter;
        sla_lsq_info pi;
        memset(&pi, 0, sizeof pi);
        st = sla__lsq_run(ctx, &op, &po, ag, rhs, &pi);
        if (st < 0) goto done;
        info->adjoint_iterations += pi.iterations;
        double an = sla__nrm2(m, ag, nt);
        if (an > 0.0 && pi.true_arnorm / (pi.anorm * an) > info->adjoint_residual)
            info->adjoint_residual = pi.true_arnorm / (pi.anorm * an);
        ok = st == SLA_OK;
        for (sla_int j = 0; j < n; j++) q[j] = gx[j] - rhs[j];
        double gn = sla__nrm2(n, gx, nt), qn = sla__nrm2(n, q, nt);
        double thr = 100.0 * o.grad_rtol > 1e-8 ? 100.0 * o.grad_rtol : 1e-8;
        extra = qn > thr * gn;
    }
    /* y = M^+ rhs */
    ok = cg_normal(&op, rhs, y, o.grad_rtol, maxiter, t, p, cr, cq, &info->adjoint_iterations,
                   &info->adjoint_residual) && ok;
    sla__spmv(&V, 0, y, ay, nt);
    if (extra) {
        /* z = A M^+ x into ag (m) */
        ok = cg_normal(&op, x, w, o.grad_rtol, maxiter, t, p, cr, cq, &info->adjoint_iterations,
                       &info->adjoint_residual) && ok;
        sla__spmv(&V, 0, w, ag, nt);
    }
    if (gb) sla__copy(m, ay, gb);
    if (gA) {
        const sla_int *rp = V.rowptr;
        const int32_t *ci = V.colind;
        for (sla_int i = 0; i < m; i++)
            for (sla_int k = rp[i]; k < rp[i + 1]; k++) {
                sla_int j = ci[k];
                gA[k] = r[i] * y[j] - ay[i] * x[j] + (extra ? ag[i] * q[j] : 0.0);
            }
    }
    snprintf(info->note, sizeof info->note, "%s%s",
             o.damp > 0.0 ? "adjoint: CG on A^T A + damp^2 I"
                          : "adjoint: LSQR range projection, CG on A^T A",
             extra ? ", null-space term of the pseudo-inverse" : "");
    st = ok ? SLA_OK : SLA_NOT_CONVERGED;
    info->converged = ok;
done:
    sla_free(ctx, buf);
    sla__lsq_op_free(ctx, &op);
    info->seconds = sla__now() - t0;
    return st < 0 ? st : sla__ok(ctx, st);
}
