/* The VJP of sla_eigs's eigenvalues: d lambda = w^T dA x with the left
 * eigenvector w (A^T w = lambda w, w^T x = 1) from one sparse LU solve of
 * a bordered system that is nonsingular exactly for a simple eigenvalue
 * (complex eigenvalues in its real form); needs only A and the forward
 * eigenpairs, not ARPACK.
 *
 * Convention: for a real loss L(Re lambda, Im lambda) and a real entry
 * a_rc, dL/da_rc = gr Re(w_r x_c) + gi Im(w_r x_c), with gr = dL/dRe
 * lambda, gi = dL/dIm lambda (PyTorch's convention for a real input:
 * Re(conj(g) w_r x_c) with g = gr + i gi). */
#include "eigs_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bordered real system for eigenvalue (a, b) and eigenvector
 * x = xr + i xi (xi NULL when b = 0), scaled by nu:
 *   [A^T - lambda I   nu conj(x)] [w]   [0 ]
 *   [nu x^T           0         ] [s] = [nu]
 * unknowns [w_re, (w_im,) s_re, (s_im)]. */
static sla_status bordered(sla_ctx *ctx, const sla_matrix *V, double a, double b, const double *xr,
                           const double *xi, double nu, sla_matrix **out)
{
    const sla_int n = V->nrows, nnz = V->nnz;
    const bool cx = xi != NULL;
    const sla_int N = cx ? 2 * n + 2 : n + 1;
    const sla_int cap = cx ? 2 * nnz + 12 * n : nnz + 3 * n;
    sla_allocator al = sla__ctx_alloc(ctx);
    sla_int *ri = sla__ctx_malloc(ctx, (size_t)cap, sizeof *ri, "eigs vjp bordered matrix");
    sla_int *ci = ri ? sla__ctx_malloc(ctx, (size_t)cap, sizeof *ci, "eigs vjp bordered matrix") : NULL;
    double *vx = ci ? sla__ctx_malloc(ctx, (size_t)cap, sizeof *vx, "eigs vjp bordered matrix") : NULL;
    sla_status st = SLA_ERR_NOMEM;
    if (vx) {
        sla_int q = 0;
#define PUT(R, C, X) (ri[q] = (R), ci[q] = (C), vx[q++] = (X))
        for (sla_int r = 0; r < n; r++)
            for (sla_int p = V->rowptr[r]; p < V->rowptr[r + 1]; p++) {
                sla_int c = V->colind[p];
                double v = sla__val(V, 0, p);
                PUT(c, r, v); /* (A^T)_{c r} = a_rc */
                if (cx) PUT(n + c, n + r, v);
            }
        const sla_int s0 = cx ? 2 * n : n;
        for (sla_int i = 0; i < n; i++) {
            PUT(i, i, -a);
            PUT(i, s0, nu * xr[i]);
            PUT(s0, i, nu * xr[i]);
            if (cx) {
                PUT(i, n + i, b);
                PUT(i, s0 + 1, nu * xi[i]);
                PUT(n + i, n + i, -a);
                PUT(n + i, i, -b);
                PUT(n + i, s0, -nu * xi[i]);
                PUT(n + i, s0 + 1, nu * xr[i]);
                PUT(s0, n + i, -nu * xi[i]);
                PUT(s0 + 1, i, nu * xi[i]);
                PUT(s0 + 1, n + i, nu * xr[i]);
            }
        }
#undef PUT
        st = sla_matrix_from_coo(ctx, N, N, q, ri, ci, SLA_F64, 1, vx, NULL, out);
    }
    sla__free(&al, ri);
    sla__free(&al, ci);
    sla__free(&al, vx);
    return st;
}

sla_status sla_eigs_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_eigs_options *opts, sla_int k,
                        const double *wr, const double *wi, const double *vr, sla_int ldv, const double *gwr,
                        const double *gwi, double *gA, sla_eigs_info *info)
{
    double t0 = sla__now();
    if (info) memset(info, 0, sizeof *info);
    if (sla__require_real(ctx, A, "sla_eigs_vjp")) return SLA_ERR_UNSUPPORTED;
    sla_eigs_options o;
    if (opts) o = *opts;
    else sla_eigs_options_default(&o);
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "eigs vjp: A is NULL");
    sla_status st = sla__check_square_index(ctx, "eigs vjp", A, ib);
    if (st) return st;
    const sla_int n = A->nrows;
    if (k < 1 || k > n) return sla__error(ctx, SLA_ERR_ARGUMENT, "eigs vjp: k = %lld out of [1, n]", (long long)k);
    if (!wr || !wi || !vr || !gA) return sla__error(ctx, SLA_ERR_ARGUMENT, "eigs vjp: NULL wr, wi, vr or gA");
    if (ldv < n)
        return sla__error(ctx, SLA_ERR_DIMENSION, "eigs vjp: ldv = %lld < n = %lld", (long long)ldv, (long long)n);
    if (!(o.max_condition > 1.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "eigs vjp: max_condition = %g must be > 1", o.max_condition);
    sla_matrix V;
    sla__single_view(A, ib, &V);
    if ((st = sla_matrix_check_values(ctx, &V, 0))) return st;
    if ((gwr && !sla__all_finite(k, gwr)) || (gwi && !sla__all_finite(k, gwi)))
        return sla__error(ctx, SLA_ERR_VALUE, "eigs vjp: the cotangents have NaN/Inf");
    memset(gA, 0, (size_t)A->nnz * sizeof *gA);
    double nu = 0.0;
    for (sla_int p = 0; p < V.nnz; p++) nu = fmax(nu, fabs(sla__val(&V, 0, p)));
    if (!(nu > 0.0)) nu = 1.0;
    sla_allocator al = sla__ctx_alloc(ctx);
    const size_t N = 2 * (size_t)n + 2;
    double *xbuf = sla__ctx_malloc(ctx, 2 * (size_t)n, sizeof *xbuf, "eigs vjp work space");
    double *rhs = xbuf ? sla__ctx_calloc(ctx, N, sizeof *rhs, "eigs vjp work space") : NULL;
    double *w = rhs ? sla__ctx_malloc(ctx, N, sizeof *w, "eigs vjp work space") : NULL;
    if (!w) st = SLA_ERR_NOMEM;
    double worst = 0.0;
    for (sla_int j = 0; j < k && !st; j++) {
        double gr = gwr ? gwr[j] : 0.0, gi = gwi ? gwi[j] : 0.0;
        if (gr == 0.0 && gi == 0.0) continue;
        double a = wr[j], b = wi[j];
        if (!isfinite(a) || !isfinite(b)) {
            st = sla__error(ctx, SLA_ERR_VALUE, "eigs vjp: eigenvalue %lld is not finite", (long long)j);
            break;
        }
        /* x_j from the dgeev layout: which member of a pair is j? */
        const double *xr = vr + (size_t)j * (size_t)ldv, *xi = NULL;
        if (b != 0.0) {
            sla_int first = 0; /* walk the layout from the start */
            while (first < j) first += wi[first] != 0.0 ? 2 : 1;
            if (first == j) {
                if (j + 1 >= k) {
                    st = sla__error(ctx, SLA_ERR_UNSUPPORTED,
                                    "eigs vjp: eigenvalue %lld (%g%+gi) is complex and its conjugate is not among "
                                    "the k: its eigenvector's imaginary part is unknown (ask eigs for k + 1)",
                                    (long long)j, a, b);
                    break;
                }
                xi = vr + (size_t)(j + 1) * (size_t)ldv;
                memcpy(xbuf + n, xi, (size_t)n * sizeof *xbuf);
            } else { /* second member: x = conj(x_{j-1}) */
                xr = vr + (size_t)(j - 1) * (size_t)ldv;
                const double *im = vr + (size_t)j * (size_t)ldv;
                for (sla_int i = 0; i < n; i++) xbuf[n + i] = -im[i];
            }
            xi = xbuf + n;
        }
        if (!sla__all_finite(n, xr) || (xi && !sla__all_finite(n, xi))) {
            st = sla__error(ctx, SLA_ERR_VALUE, "eigs vjp: eigenvector %lld has NaN/Inf", (long long)j);
            break;
        }
        sla_matrix *B = NULL;
        sla_solver *S = NULL;
        st = bordered(ctx, &V, a, b, xr, xi, nu, &B);
        if (!st) {
            sla_solver_options so;
            sla_solver_options_default(&so);
            so.method = SLA_METHOD_LU;
            st = sla_solver_create(ctx, B, &so, &S);
        }
        const sla_int NN = xi ? 2 * n + 2 : n + 1;
        if (!st) {
            memset(rhs, 0, N * sizeof *rhs);
            rhs[xi ? 2 * n : n] = nu;
            st = sla_solver_solve(ctx, S, 0, 1, rhs, NN, w, NN, NULL);
            if (st == SLA_NOT_CONVERGED) st = SLA_OK;
        }
        sla_solver_destroy(&S);
        sla_matrix_destroy(&B);
        if (st == SLA_ERR_SINGULAR) {
            st = sla__error(ctx, SLA_ERR_UNSUPPORTED,
                            "eigs vjp: eigenvalue %lld (%g%+gi) is multiple (the bordered system A^T - lambda I is "
                            "singular): its derivative does not exist",
                            (long long)j, a, b);
            break;
        }
        if (st) break;
        if (!sla__all_finite(NN, w)) {
            st = sla__error(ctx, SLA_ERR_UNSUPPORTED,
                            "eigs vjp: eigenvalue %lld (%g%+gi) is multiple (the left eigenvector solve gave "
                            "NaN/Inf)",
                            (long long)j, a, b);
            break;
        }
        const double *wre = w, *wim = xi ? w + n : NULL;
        double ww = 0.0, xx = 0.0;
        for (sla_int i = 0; i < n; i++) {
            ww += wre[i] * wre[i] + (wim ? wim[i] * wim[i] : 0.0);
            xx += xr[i] * xr[i] + (xi ? xi[i] * xi[i] : 0.0);
        }
        double cond = sqrt(ww * xx);
        worst = fmax(worst, cond);
        if (!(cond <= o.max_condition)) {
            st = sla__error(ctx, SLA_ERR_UNSUPPORTED,
                            "eigs vjp: eigenvalue %lld (%g%+gi) is nearly multiple: condition number "
                            "||x|| ||y|| / |y^H x| = %.3g > max_condition = %.3g",
                            (long long)j, a, b, cond, o.max_condition);
            break;
        }
        /* gA[rc] += gr Re(w_r x_c) + gi Im(w_r x_c) */
        for (sla_int r = 0; r < n; r++)
            for (sla_int p = V.rowptr[r]; p < V.rowptr[r + 1]; p++) {
                sla_int c = V.colind[p];
                double wr_ = wre[r], wi_ = wim ? wim[r] : 0.0, xr_ = xr[c], xi_ = xi ? xi[c] : 0.0;
                gA[p] += gr * (wr_ * xr_ - wi_ * xi_) + gi * (wr_ * xi_ + wi_ * xr_);
            }
    }
    sla__free(&al, xbuf);
    sla__free(&al, rhs);
    sla__free(&al, w);
    if (info) {
        snprintf(info->method, sizeof info->method, "bordered lu");
        info->max_condition = worst;
        info->seconds = sla__now() - t0;
    }
    return st ? st : sla__ok(ctx, SLA_OK);
}
