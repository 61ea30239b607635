/* The VJP of sla_eigs's eigenpairs: one sparse LU solve per eigenvalue (a
 * conjugate pair counts once) with the transpose of the bordered Jacobian
 * of the eigenproblem and its gauge, which is nonsingular exactly for a
 * simple eigenvalue; needs only A and the forward eigenpairs, not ARPACK.
 *
 * The eigenpair (lambda, x) of the real matrix A, lambda simple, x in the
 * gauge of sla_eigs (||x|| = 1 and x_m real, m the component of largest
 * magnitude), moves with A as
 *   (A - lambda I) dx - d lambda x = -dA x,   Re(x^H dx) = 0,   Im(dx_m) = 0
 * (the last only for complex lambda: a real x stays real, its sign is
 * locally constant). Written over the reals, with u = (Re dx, Im dx, Re d
 * lambda, Im d lambda) (real lambda: (dx, d lambda)), this is J u = f with
 * f = -(dA Re x, dA Im x, 0, 0). For a real loss with cotangent g on u,
 * dL = g^T J^-1 f = z^T f with J^T z = g, so with z = (p, q, .):
 *   gA[rc] = -(p_r Re x_c + q_r Im x_c).
 * J is singular exactly when lambda is multiple (y^H x = 0) or x_m = 0. For
 * an eigenvalue cotangent alone this is the Hellmann-Feynman form d lambda =
 * w^T dA x (w the left eigenvector with w^T x = 1: p = -Re w, q = Im w), and
 * ||x|| ||w|| is the eigenvalue's condition number.
 *
 * Convention: for a real loss L(Re lambda, Im lambda, Re x, Im x) and a real
 * entry a_rc, dL/da_rc as above (PyTorch's convention for a real input). */
#include "eigs_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* J^T of the system above for eigenvalue (a, b) and eigenvector x = xr + i
 * xi (xi NULL when b = 0), with the border rows and columns scaled by nu
 * (J' = R J C, R = C = diag(1, .., nu, nu)). Unknowns of J: [dxr, (dxi,)
 * da, (db)]; m: the gauge component. */
static sla_status bordered_t(sla_ctx *ctx, const sla_matrix *V, double a, double b, const double *xr,
                             const double *xi, sla_int m, double nu, sla_matrix **out)
{
    const sla_int n = V->nrows, nnz = V->nnz;
    const bool cx = xi != NULL;
    const sla_int N = cx ? 2 * n + 2 : n + 1;
    const sla_int cap = cx ? 2 * nnz + 10 * n + 1 : nnz + 3 * n;
    sla_allocator al = sla__ctx_alloc(ctx);
    sla_int *ri = sla__ctx_malloc(ctx, (size_t)cap, sizeof *ri, "eigs vjp bordered matrix");
    sla_int *ci = ri ? sla__ctx_malloc(ctx, (size_t)cap, sizeof *ci, "eigs vjp bordered matrix") : NULL;
    double *vx = ci ? sla__ctx_malloc(ctx, (size_t)cap, sizeof *vx, "eigs vjp bordered matrix") : NULL;
    sla_status st = SLA_ERR_NOMEM;
    if (vx) {
        sla_int q = 0;
        /* J's entry (R, C) stored at (C, R) */
#define PUT(R, C, X) (ri[q] = (C), ci[q] = (R), vx[q++] = (X))
        for (sla_int r = 0; r < n; r++)
            for (sla_int p = V->rowptr[r]; p < V->rowptr[r + 1]; p++) {
                sla_int c = V->colind[p];
                double v = sla__val(V, 0, p);
                PUT(r, c, v);
                if (cx) PUT(n + r, n + c, v);
            }
        const sla_int s0 = cx ? 2 * n : n;
        for (sla_int i = 0; i < n; i++) {
            PUT(i, i, -a);            /* (A - a I) dxr */
            PUT(i, s0, -nu * xr[i]);  /* - da xr */
            PUT(s0, i, nu * xr[i]);   /* Re(x^H dx) = xr . dxr + xi . dxi */
            if (cx) {
                PUT(i, n + i, b);                 /* + b dxi */
                PUT(i, s0 + 1, nu * xi[i]);       /* + db xi */
                PUT(n + i, n + i, -a);            /* (A - a I) dxi */
                PUT(n + i, i, -b);                /* - b dxr */
                PUT(n + i, s0, -nu * xi[i]);      /* - da xi */
                PUT(n + i, s0 + 1, -nu * xr[i]);  /* - db xr */
                PUT(s0, n + i, nu * xi[i]);
            }
        }
        if (cx) PUT(s0 + 1, n + m, nu); /* Im(dx_m) = 0 */
#undef PUT
        st = sla_matrix_from_coo(ctx, N, N, q, ri, ci, SLA_F64, 1, vx, NULL, out);
    }
    sla__free(&al, ri);
    sla__free(&al, ci);
    sla__free(&al, vx);
    return st;
}

static bool any_nonzero(sla_int n, const double *x)
{
    if (x)
        for (sla_int i = 0; i < n; i++)
            if (x[i] != 0.0) return true;
    return false;
}

sla_status sla_eigs_pairs_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_eigs_options *opts,
                              sla_int k, const double *wr, const double *wi, const double *vr, sla_int ldv,
                              const double *gwr, const double *gwi, const double *gvr, sla_int ldgv, double *gA,
                              sla_eigs_info *info)
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
    if (ldv < n || (gvr && ldgv < n))
        return sla__error(ctx, SLA_ERR_DIMENSION, "eigs vjp: leading dimensions ldv = %lld, ldgv = %lld < n = %lld",
                          (long long)ldv, (long long)ldgv, (long long)n);
    if (!(o.max_condition > 1.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "eigs vjp: max_condition = %g must be > 1", o.max_condition);
    sla_matrix V;
    sla__single_view(A, ib, &V);
    if ((st = sla_matrix_check_values(ctx, &V, 0))) return st;
    if ((gwr && !sla__all_finite(k, gwr)) || (gwi && !sla__all_finite(k, gwi)))
        return sla__error(ctx, SLA_ERR_VALUE, "eigs vjp: the cotangents have NaN/Inf");
    if (gvr)
        for (sla_int j = 0; j < k; j++)
            if (!sla__all_finite(n, gvr + (size_t)j * (size_t)ldgv))
                return sla__error(ctx, SLA_ERR_VALUE, "eigs vjp: eigenvector cotangent %lld has NaN/Inf",
                                  (long long)j);
    memset(gA, 0, (size_t)A->nnz * sizeof *gA);
    double nu = 0.0;
    for (sla_int p = 0; p < V.nnz; p++) nu = fmax(nu, fabs(sla__val(&V, 0, p)));
    if (!(nu > 0.0)) nu = 1.0;
    sla_allocator al = sla__ctx_alloc(ctx);
    const size_t N = 2 * (size_t)n + 2;
    double *rhs = sla__ctx_calloc(ctx, 2 * N, sizeof *rhs, "eigs vjp work space");
    double *z = rhs ? sla__ctx_malloc(ctx, 2 * N, sizeof *z, "eigs vjp work space") : NULL;
    if (!z) st = SLA_ERR_NOMEM;
    double worst = 0.0;
    for (sla_int j = 0, step = 1; j < k && !st; j += step) {
        double a = wr[j], b = wi[j];
        /* the members of this eigenvalue in the dgeev layout: a real one, a
         * pair (j, j + 1), or a lone complex one at position k */
        const bool cx = b != 0.0, pair = cx && j + 1 < k;
        step = pair ? 2 : 1;
        const double *gx = gvr ? gvr + (size_t)j * (size_t)ldgv : NULL;
        const double *gy = gvr && pair ? gvr + (size_t)(j + 1) * (size_t)ldgv : NULL;
        double ga = (gwr ? gwr[j] : 0.0) + (pair && gwr ? gwr[j + 1] : 0.0);
        double gb = (gwi ? gwi[j] : 0.0) - (pair && gwi ? gwi[j + 1] : 0.0); /* lambda_{j+1} = conj(lambda_j) */
        bool want = (gwr && (gwr[j] != 0.0 || (pair && gwr[j + 1] != 0.0))) ||
                    (gwi && (gwi[j] != 0.0 || (pair && gwi[j + 1] != 0.0))) || any_nonzero(n, gx) ||
                    any_nonzero(n, gy);
        if (!want) continue;
        if (!isfinite(a) || !isfinite(b)) {
            st = sla__error(ctx, SLA_ERR_VALUE, "eigs vjp: eigenvalue %lld is not finite", (long long)j);
            break;
        }
        if (cx && !pair) {
            st = sla__error(ctx, SLA_ERR_UNSUPPORTED,
                            "eigs vjp: eigenvalue %lld (%g%+gi) is complex and its conjugate is not among "
                            "the k: its eigenvector's imaginary part is unknown (ask eigs for k + 1)",
                            (long long)j, a, b);
            break;
        }
        if (cx && !(b > 0.0 && wi[j + 1] == -b && wr[j + 1] == a)) {
            st = sla__error(ctx, SLA_ERR_ARGUMENT,
                            "eigs vjp: eigenvalues %lld, %lld (%g%+gi, %g%+gi) are not a conjugate pair with the "
                            "positive imaginary part first (the dgeev layout of sla_eigs)",
                            (long long)j, (long long)j + 1, a, b, wr[j + 1], wi[j + 1]);
            break;
        }
        const double *xr = vr + (size_t)j * (size_t)ldv, *xi = cx ? xr + ldv : NULL;
        if (!sla__all_finite(n, xr) || (xi && !sla__all_finite(n, xi))) {
            st = sla__error(ctx, SLA_ERR_VALUE, "eigs vjp: eigenvector %lld has NaN/Inf", (long long)j);
            break;
        }
        sla_matrix *B = NULL;
        sla_solver *S = NULL;
        st = bordered_t(ctx, &V, a, b, xr, xi, sla__eigs_peak(n, xr, xi), nu, &B);
        if (!st) {
            sla_solver_options so;
            sla_solver_options_default(&so);
            so.method = SLA_METHOD_LU;
            st = sla_solver_create(ctx, B, &so, &S);
        }
        /* right-hand sides C g and, for the condition number, C e_{Re lambda} */
        const sla_int NN = cx ? 2 * n + 2 : n + 1, s0 = cx ? 2 * n : n;
        if (!st) {
            memset(rhs, 0, 2 * N * sizeof *rhs);
            for (sla_int i = 0; i < n; i++) {
                rhs[i] = gx ? gx[i] : 0.0;
                if (cx) rhs[n + i] = gy ? gy[i] : 0.0;
            }
            rhs[s0] = nu * ga;
            if (cx) rhs[s0 + 1] = nu * gb;
            rhs[NN + s0] = nu;
            st = sla_solver_solve(ctx, S, 0, 2, rhs, NN, z, NN, NULL);
            if (st == SLA_NOT_CONVERGED) st = SLA_OK;
        }
        sla_solver_destroy(&S);
        sla_matrix_destroy(&B);
        if (st == SLA_ERR_SINGULAR) {
            st = sla__error(ctx, SLA_ERR_UNSUPPORTED,
                            "eigs vjp: eigenvalue %lld (%g%+gi) is multiple (the bordered system A - lambda I is "
                            "singular): its derivative does not exist",
                            (long long)j, a, b);
            break;
        }
        if (st) break;
        if (!sla__all_finite(2 * NN, z)) {
            st = sla__error(ctx, SLA_ERR_UNSUPPORTED,
                            "eigs vjp: eigenvalue %lld (%g%+gi) is multiple (the bordered solve gave NaN/Inf)",
                            (long long)j, a, b);
            break;
        }
        double ww = 0.0, xx = 0.0;
        for (sla_int i = 0; i < s0; i++) ww += z[NN + i] * z[NN + i];
        for (sla_int i = 0; i < n; i++) xx += xr[i] * xr[i] + (xi ? xi[i] * xi[i] : 0.0);
        double cond = sqrt(ww * xx);
        worst = fmax(worst, cond);
        if (!(cond <= o.max_condition)) {
            st = sla__error(ctx, SLA_ERR_UNSUPPORTED,
                            "eigs vjp: eigenvalue %lld (%g%+gi) is nearly multiple: condition number "
                            "||x|| ||y|| / |y^H x| = %.3g > max_condition = %.3g",
                            (long long)j, a, b, cond, o.max_condition);
            break;
        }
        /* gA[rc] -= p_r xr_c + q_r xi_c */
        const double *p = z, *q = cx ? z + n : NULL;
        for (sla_int r = 0; r < n; r++)
            for (sla_int t = V.rowptr[r]; t < V.rowptr[r + 1]; t++) {
                sla_int c = V.colind[t];
                gA[t] -= p[r] * xr[c] + (q ? q[r] * xi[c] : 0.0);
            }
    }
    sla__free(&al, rhs);
    sla__free(&al, z);
    if (info) {
        snprintf(info->method, sizeof info->method, "bordered lu");
        info->max_condition = worst;
        info->seconds = sla__now() - t0;
    }
    return st ? st : sla__ok(ctx, SLA_OK);
}

sla_status sla_eigs_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_eigs_options *opts, sla_int k,
                        const double *wr, const double *wi, const double *vr, sla_int ldv, const double *gwr,
                        const double *gwi, double *gA, sla_eigs_info *info)
{
    return sla_eigs_pairs_vjp(ctx, A, ib, opts, k, wr, wi, vr, ldv, gwr, gwi, NULL, 0, gA, info);
}
