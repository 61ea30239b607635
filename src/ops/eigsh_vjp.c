/* The VJP of sla_eigsh: eigenvalues by Hellmann-Feynman (d lambda = v^T dA
 * v), eigenvectors by first-order perturbation, one projected MINRES solve
 * per vector; needs only A and the forward eigenpairs, not ARPACK. */
#include "../solvers/krylov.h"
#include "ops_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sla_status sla__vjp_minres(sla_ctx *ctx, const sla__op *op, const double *b, double *w, double rtol,
                           sla_int maxiter, sla__vjp_solves *T)
{
    const sla_int n = op->n;
    sla__kopts ko = {.rtol = rtol, .atol = 0.0, .maxiter = maxiter ? maxiter : (10 * n > 1000 ? 10 * n : 1000)};
    sla_solve_info si;
    memset(&si, 0, sizeof si);
    sla_status st = sla__minres(ctx, op, NULL, b, w, &ko, &si);
    if (st < 0) return st;
    if (st == SLA_NOT_CONVERGED) T->converged = false;
    T->iterations = si.iterations > T->iterations ? si.iterations : T->iterations;
    T->worst = fmax(T->worst, si.residual);
    return SLA_OK;
}

/* The same argument check as sla_eigsh's (eigsh.c). */
static sla_status check_common(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla_matrix *V)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh: A is NULL");
    sla_status st = sla__check_square_index(ctx, "eigsh", A, ib);
    return st ? st : sla__symmetric_view(ctx, "eigsh", A, ib, V);
}

/* Q (A - l I) Q x with Q = I - V V^T (V: n x k orthonormal). */
typedef struct proj_op {
    const sla_matrix *A;
    const double *V;
    sla_int ldv, k;
    double lambda;
    double *t; /* n */
} proj_op;

static void project(const proj_op *P, double *x, int nt)
{
    for (sla_int j = 0; j < P->k; j++) {
        const double *v = P->V + (size_t)j * (size_t)P->ldv;
        double c = sla__dot(P->A->nrows, v, x, nt);
        sla__axpy(P->A->nrows, -c, v, x, nt);
    }
}

static void proj_apply(void *data, const double *x, double *y, int nt)
{
    proj_op *P = data;
    sla_int n = P->A->nrows;
    sla__copy(n, x, P->t);
    project(P, P->t, nt);
    sla__spmv(P->A, 0, P->t, y, nt);
    sla__axpy(n, -P->lambda, P->t, y, nt);
    project(P, y, nt);
}

sla_status sla_eigsh_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_eigsh_options *opts, sla_int k,
                         const double *evals, const double *evecs, sla_int ldv, const double *gl,
                         const double *gv, sla_int ldgv, double *gA, sla_eigsh_info *info)
{
    double t0 = sla__now();
    if (info) memset(info, 0, sizeof *info);
    if (sla__require_real(ctx, A, "sla_eigsh_vjp")) return SLA_ERR_UNSUPPORTED;
    sla_eigsh_options o;
    if (opts) o = *opts;
    else sla_eigsh_options_default(&o);
    sla_matrix V;
    sla_status st = check_common(ctx, A, ib, &V);
    if (st) return st;
    const sla_int n = A->nrows;
    if (k < 1 || k > n) return sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh vjp: k = %lld out of [1, n]", (long long)k);
    if (!evals || !evecs || !gA) return sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh vjp: NULL evals, evecs or gA");
    if (ldv < n || (gv && ldgv < n))
        return sla__error(ctx, SLA_ERR_DIMENSION, "eigsh vjp: leading dimensions %lld, %lld < n = %lld",
                          (long long)ldv, (long long)ldgv, (long long)n);
    if (!(o.degenerate_tol >= 0.0) || !(o.grad_rtol > 0.0) || o.grad_maxiter < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh vjp: bad degenerate_tol, grad_rtol or grad_maxiter");
    double scale = 0.0;
    for (sla_int i = 0; i < k; i++) {
        if (!isfinite(evals[i]))
            return sla__error(ctx, SLA_ERR_VALUE, "eigsh vjp: eigenvalue %lld is not finite", (long long)i);
        scale = fmax(scale, fabs(evals[i]));
    }
    for (sla_int i = 0; i < k; i++)
        if (!sla__all_finite(n, evecs + (size_t)i * (size_t)ldv))
            return sla__error(ctx, SLA_ERR_VALUE, "eigsh vjp: eigenvector %lld has NaN/Inf", (long long)i);
    if (gl && !sla__all_finite(k, gl)) return sla__error(ctx, SLA_ERR_VALUE, "eigsh vjp: gl has NaN/Inf");
    const int nt = sla__threads(ctx);
    const double dtol = o.degenerate_tol * fmax(scale, 1e-300);

    /* degenerate clusters: the loss must be invariant within them */
    for (sla_int i = 0; i < k; i++)
        for (sla_int j = i + 1; j < k; j++) {
            if (fabs(evals[i] - evals[j]) > dtol) continue;
            if (gl && fabs(gl[i] - gl[j]) > 1e-8 * fmax(fabs(gl[i]), fabs(gl[j])) + 1e-300)
                return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                                  "eigsh vjp: eigenvalues %lld and %lld are degenerate (%.17g, %.17g) but "
                                  "dL/dl differs (%g vs %g): the loss is not invariant within the cluster, "
                                  "so its gradient is not defined",
                                  (long long)i, (long long)j, evals[i], evals[j], gl[i], gl[j]);
            if (gv) {
                const double *vi = evecs + (size_t)i * (size_t)ldv, *vj = evecs + (size_t)j * (size_t)ldv;
                const double *gi = gv + (size_t)i * (size_t)ldgv, *gj = gv + (size_t)j * (size_t)ldgv;
                double asym = sla__dot(n, vj, gi, nt) - sla__dot(n, vi, gj, nt);
                double mag = sla__nrm2(n, gi, nt) + sla__nrm2(n, gj, nt);
                if (fabs(asym) > 1e-8 * mag)
                    return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                                      "eigsh vjp: eigenvalues %lld and %lld are degenerate (%.17g, %.17g) and "
                                      "the loss is not invariant under rotations of their eigenvectors "
                                      "(v_%lld . g_%lld - v_%lld . g_%lld = %.3g): the eigenvectors are not "
                                      "unique, so the gradient is not defined",
                                      (long long)i, (long long)j, evals[i], evals[j], (long long)j, (long long)i,
                                      (long long)i, (long long)j, asym);
            }
        }

    sla_allocator a = sla__ctx_alloc(ctx);
    double *u = sla__ctx_malloc(ctx, (size_t)n, 3 * sizeof *u, "eigsh vjp work space");
    if (!u) return SLA_ERR_NOMEM;
    double *b = u + n, *w = u + 2 * n;
    double *t = sla__ctx_malloc(ctx, (size_t)n, sizeof *t, "eigsh vjp work space");
    if (!t) {
        sla__free(&a, u);
        return SLA_ERR_NOMEM;
    }
    for (sla_int p = 0; p < V.nnz; p++) gA[p] = 0.0;
    sla__vjp_solves T = {.iterations = 0, .worst = 0.0, .converged = true};
    for (sla_int i = 0; i < k && st >= 0; i++) {
        const double *vi = evecs + (size_t)i * (size_t)ldv;
        const double *gi = gv ? gv + (size_t)i * (size_t)ldgv : NULL;
        double gli = gl ? gl[i] : 0.0;
        sla__zero(n, u);
        if (gi) {
            /* the computed eigenspace: sum_j v_j (v_j . g_i) / (l_i - l_j) */
            for (sla_int j = 0; j < k; j++) {
                if (j == i || fabs(evals[i] - evals[j]) <= dtol) continue;
                const double *vj = evecs + (size_t)j * (size_t)ldv;
                sla__axpy(n, sla__dot(n, vj, gi, nt) / (evals[i] - evals[j]), vj, u, nt);
            }
            /* its complement: (A - l_i I) w = -Q g_i with w in range(Q) */
            proj_op P = {.A = &V, .V = evecs, .ldv = ldv, .k = k, .lambda = evals[i], .t = t};
            for (sla_int r = 0; r < n; r++) b[r] = -gi[r];
            project(&P, b, nt);
            if (sla__nrm2(n, b, nt) > 0.0) {
                sla__op op = {.n = n, .nt = nt, .data = &P, .apply = proj_apply};
                if ((st = sla__vjp_minres(ctx, &op, b, w, o.grad_rtol, o.grad_maxiter, &T)) < 0) break;
                project(&P, w, nt);
                sla__axpy(n, 1.0, w, u, nt);
            }
        }
        /* gA[p] += gl_i v_i[r] v_i[c] + u[r] v_i[c] */
        for (sla_int r = 0; r < n; r++) {
            double cr = gli * vi[r] + u[r];
            if (cr == 0.0) continue;
            for (sla_int p = V.rowptr[r]; p < V.rowptr[r + 1]; p++) gA[p] += cr * vi[V.colind[p]];
        }
    }
    sla__free(&a, u);
    sla__free(&a, t);
    if (st < 0) return st;
    if (info) {
        snprintf(info->method, sizeof info->method, "projected minres");
        info->converged = T.converged;
        info->nconv = k;
        info->iterations = T.iterations;
        info->max_residual = T.worst;
        info->seconds = sla__now() - t0;
    }
    if (!T.converged)
        return sla__error(ctx, SLA_NOT_CONVERGED,
                          "eigsh vjp: a projected solve missed grad_rtol = %g (relative residual %.3g): an "
                          "eigenvalue left out may equal a computed one, or raise grad_maxiter",
                          o.grad_rtol, T.worst);
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_eigsh_batch_vjp(sla_ctx *ctx, const sla_matrix *A, const sla_eigsh_options *opts, sla_int k,
                               const double *evals, const double *evecs, const double *gl, const double *gv,
                               double *gA, sla_eigsh_info *info)
{
    if (sla__require_real(ctx, A, "sla_eigsh_batch_vjp")) return SLA_ERR_UNSUPPORTED;
    if (!A || !evals || !evecs || !gA) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_eigsh_batch_vjp: NULL argument");
    if (k < 1 || k > A->nrows)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_eigsh_batch_vjp: k = %lld out of [1, n]", (long long)k);
    const size_t n = (size_t)A->nrows, nk = (size_t)k;
    sla_status worst = SLA_OK;
    for (sla_int b = 0; b < A->nbatch; b++) {
        sla_status st = sla_eigsh_vjp(ctx, A, b, opts, k, evals + (size_t)b * nk, evecs + (size_t)b * n * nk,
                                      A->nrows, gl ? gl + (size_t)b * nk : NULL, gv ? gv + (size_t)b * n * nk : NULL,
                                      A->nrows, gA + (size_t)b * (size_t)A->nnz, info ? info + b : NULL);
        if (st < 0) return sla__batch_error(ctx, st, b);
        if (st > 0) worst = st;
    }
    if (worst) return sla__error(ctx, worst, "eigsh batch vjp: a projected solve missed its tolerance (see info)");
    return sla__ok(ctx, SLA_OK);
}
