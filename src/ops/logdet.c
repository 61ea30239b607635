/* log|det A| from a sparse factorization, and its gradient
 * d log|det A| / dA_k = (A^-1)[col_k, row_k] on the stored pattern:
 * selected inversion on the factor (CHOLMOD: Takahashi recurrences on the
 * LL^T / LDL^T factor; UMFPACK: their unsymmetric form on L and U, see
 * src/backends/lu_selinv.c). KLU and SuperLU factors have no selected
 * inversion: the gradient refactors with UMFPACK; blocked solves with the
 * solver's own factor remain the fallback when UMFPACK is missing. */
#include "../solvers/direct.h"
#include "ops_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *sla_logdet_method_name(sla_logdet_method m)
{
    switch (m) {
    case SLA_LOGDET_AUTO: return "auto";
    case SLA_LOGDET_CHOLESKY: return "cholesky";
    case SLA_LOGDET_LDLT: return "ldlt";
    case SLA_LOGDET_LU: return "lu";
    }
    return "unknown";
}

/* Columns of A^-1 solved together on the LU path. */
#define SLA_LOGDET_BLOCK 32

/* grad[k] = (A^-1)[col_k, row_k] from blocks of columns of A^-1: column i
 * of A^-1 gives the entries of row i. */
static sla_status grad_by_solves(sla_ctx *ctx, sla_solver *S, sla_int ib, double *grad)
{
    const sla_matrix *A = sla__solver_matrix(S);
    const sla_int n = A->nrows;
    const sla_int bs = n < SLA_LOGDET_BLOCK ? n : SLA_LOGDET_BLOCK;
    if (n == 0) return SLA_OK;
    sla_allocator a = sla__ctx_alloc(ctx);
    double *E = sla__ctx_calloc(ctx, (size_t)n * (size_t)bs, sizeof *E, "logdet gradient block");
    double *X = E ? sla__ctx_malloc(ctx, (size_t)n * (size_t)bs, sizeof *X, "logdet gradient block")
                  : NULL;
    if (!X) {
        sla__free(&a, E);
        return SLA_ERR_NOMEM;
    }
    sla_status st = SLA_OK;
    for (sla_int i0 = 0; i0 < n && st >= 0; i0 += bs) {
        sla_int m = n - i0 < bs ? n - i0 : bs;
        for (sla_int c = 0; c < m; c++) E[c * n + i0 + c] = 1.0;
        st = sla_solver_solve(ctx, S, ib, m, E, n, X, n, NULL);
        for (sla_int c = 0; c < m; c++) E[c * n + i0 + c] = 0.0;
        if (st < 0) break;
        for (sla_int c = 0; c < m; c++) {
            const sla_int i = i0 + c;
            for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) grad[k] = X[c * n + A->colind[k]];
        }
    }
    sla__free(&a, E);
    sla__free(&a, X);
    if (st == SLA_NOT_CONVERGED)
        return sla__error(ctx, SLA_ERR_SINGULAR,
                          "logdet gradient: the solves with the LU factor missed their tolerance "
                          "(the matrix is numerically singular)");
    return st;
}

/* sign, log|det A_ib| and, when grad is not NULL, its gradient (the VJP
 * with cotangent 1); the public _vjp and _grad below. */
static sla_status solver_logdet_grad(sla_ctx *ctx, sla_solver *S, sla_int ib, double *sign,
                                     double *logabsdet, double *grad, sla_logdet_info *info)
{
    if (info) memset(info, 0, sizeof *info);
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_logdet_vjp: S is NULL");
    const sla_matrix *A = sla__solver_matrix(S);
    if (sla__require_real(ctx, A, "sla_solver_logdet_vjp (see sla_zsolver_logdet_vjp)"))
        return SLA_ERR_UNSUPPORTED;
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "value array %lld out of range [0, %lld)", (long long)ib,
                          (long long)A->nbatch);
    const sla__direct_ops *d;
    void *sym, *num;
    if (!sla__solver_direct(S, ib, &d, &sym, &num))
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "logdet gradient needs a direct factorization; this solver uses %s "
                          "(create it with method=cholesky, ldlt or lu)",
                          sla_method_name(sla_solver_method(S)));
    double sg, lad;
    sla_status st = sla_solver_logdet(ctx, S, ib, &sg, &lad);
    if (st) return st;
    if (sign) *sign = sg;
    if (logabsdet) *logabsdet = lad;
    if (info) {
        snprintf(info->method, sizeof info->method, "%s", sla_method_name(sla_solver_method(S)));
        info->factor_seconds = sla_solver_setup_seconds(S);
        info->factor_nnz = sla__solver_factor_nnz(S);
    }
    if (!grad) return sla__ok(ctx, SLA_OK);
    if (sg == 0.0)
        return sla__error(ctx, SLA_ERR_SINGULAR,
                          "logdet gradient: the matrix is singular (a zero pivot), so log|det| = -inf "
                          "has no gradient");
    double t0 = sla__now();
    const char *gm = "selinv";
    char note[sizeof info->note] = "";
    if (d->one_triangle) {
        /* the factor is of the symmetric matrix built from A's lower triangle */
        sla_matrix_props pr;
        if ((st = sla_matrix_properties(ctx, A, ib, 0.0, &pr))) return st;
        if (!pr.symmetric)
            return sla__error(ctx, SLA_ERR_ARGUMENT,
                              "logdet gradient: a Cholesky/LDL^T factor needs an exactly symmetric "
                              "matrix (max |a_ij - a_ji| / max |a| = %.3g); use method lu",
                              pr.symmetry_error);
    }
    if (d->selinv) {
        st = d->selinv(ctx, sym, num, A, grad);
    } else if (sla_method_available(SLA_METHOD_UMFPACK)) {
        /* KLU, SuperLU: no access to a factor selinv can use; one UMFPACK
         * factorization of the same values costs about what this backend's
         * did, far less than n solves */
        sla_matrix V;
        sla__single_view(A, ib, &V);
        sla_solver *U = NULL;
        sla_solver_options o;
        sla_solver_options_default(&o);
        o.method = SLA_METHOD_UMFPACK;
        st = sla_solver_create(ctx, &V, &o, &U);
        const sla__direct_ops *du;
        void *symu, *numu;
        if (!st && sla__solver_direct(U, 0, &du, &symu, &numu) && du->selinv)
            st = du->selinv(ctx, symu, numu, &V, grad);
        else if (!st)
            st = sla__error(ctx, SLA_ERR_UNAVAILABLE, "logdet gradient: umfpack has no selected inversion");
        sla_solver_destroy(&U);
        snprintf(note, sizeof note, "gradient: %s has no selected inversion; refactored with umfpack",
                 d->name);
    } else {
        gm = "solves";
        st = grad_by_solves(ctx, S, ib, grad);
    }
    if (st) return st;
    if (info) {
        snprintf(info->grad_method, sizeof info->grad_method, "%s", gm);
        snprintf(info->note, sizeof info->note, "%s", note);
        info->grad_seconds = sla__now() - t0;
    }
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_solver_logdet_vjp(sla_ctx *ctx, sla_solver *S, sla_int ib, double g, double *sign,
                                 double *logabsdet, double *gA, sla_logdet_info *info)
{
    if (gA && !isfinite(g)) {
        if (info) memset(info, 0, sizeof *info);
        return sla__error(ctx, SLA_ERR_VALUE, "sla_solver_logdet_vjp: the cotangent g is not finite");
    }
    sla_status st = solver_logdet_grad(ctx, S, ib, sign, logabsdet, gA, info);
    if (st || !gA || g == 1.0) return st;
    const sla_int nnz = sla__solver_matrix(S)->nnz;
    for (sla_int k = 0; k < nnz; k++) gA[k] *= g;
    return st;
}

/* Deprecated spelling: the VJP with cotangent 1. */
sla_status sla_solver_logdet_grad(sla_ctx *ctx, sla_solver *S, sla_int ib, double *sign,
                                  double *logabsdet, double *grad, sla_logdet_info *info)
{
    if (!S) {
        if (info) memset(info, 0, sizeof *info);
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_logdet_grad: S is NULL");
    }
    return sla_solver_logdet_vjp(ctx, S, ib, 1.0, sign, logabsdet, grad, info);
}

static sla_status try_method(sla_ctx *ctx, const sla_matrix *V, sla_method m, sla_solver **S)
{
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = m;
    return sla_solver_create(ctx, V, &o, S);
}

sla_status sla_logdet(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla_logdet_method method,
                      double *sign, double *logabsdet, double *grad, sla_logdet_info *info)
{
    if (info) memset(info, 0, sizeof *info);
    if (sla__require_real(ctx, A, "sla_logdet")) return SLA_ERR_UNSUPPORTED;
    if (!A || !sign || !logabsdet) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_logdet: NULL argument");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "logdet of a non-square %lld x %lld matrix",
                          (long long)A->nrows, (long long)A->ncols);
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "value array %lld out of range [0, %lld)", (long long)ib,
                          (long long)A->nbatch);
    if (method < SLA_LOGDET_AUTO || method > SLA_LOGDET_LU)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_logdet: unknown method %d", (int)method);
    sla_matrix V;
    sla__single_view(A, ib, &V);
    sla_status st = sla_matrix_check_values(ctx, &V, 0);
    if (st) return st;

    bool symmetric = false;
    if (method != SLA_LOGDET_LU) {
        sla_matrix_props pr;
        if ((st = sla_matrix_properties(ctx, &V, 0, 0.0, &pr))) return st;
        symmetric = pr.symmetric;
        if (!symmetric && method != SLA_LOGDET_AUTO)
            return sla__error(ctx, SLA_ERR_ARGUMENT,
                              "logdet method %s needs an exactly symmetric matrix (max |a_ij - a_ji| / "
                              "max |a| = %.3g); use method lu",
                              sla_logdet_method_name(method), pr.symmetry_error);
    }

    char note[192] = "";
    sla_solver *S = NULL;
    double t0 = sla__now();
    switch (method) {
    case SLA_LOGDET_CHOLESKY: st = try_method(ctx, &V, SLA_METHOD_CHOLESKY, &S); break;
    case SLA_LOGDET_LDLT: st = try_method(ctx, &V, SLA_METHOD_LDLT, &S); break;
    case SLA_LOGDET_LU: st = try_method(ctx, &V, SLA_METHOD_LU, &S); break;
    case SLA_LOGDET_AUTO:
        if (!symmetric) {
            st = try_method(ctx, &V, SLA_METHOD_LU, &S);
            break;
        }
        st = try_method(ctx, &V, SLA_METHOD_CHOLESKY, &S);
        if (st == SLA_ERR_NOT_SPD) {
            snprintf(note, sizeof note, "auto: not positive definite (%s); used ldlt", sla_ctx_message(ctx));
            st = try_method(ctx, &V, SLA_METHOD_LDLT, &S);
            if (st == SLA_ERR_SINGULAR) {
                /* LDL^T without pivoting meets zero pivots that LU avoids */
                snprintf(note, sizeof note, "auto: not positive definite, ldlt met a zero pivot; used lu");
                st = try_method(ctx, &V, SLA_METHOD_LU, &S);
            }
        }
        break;
    }
    if (st == SLA_ERR_SINGULAR) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s", sla_ctx_message(ctx));
        *sign = 0.0;
        *logabsdet = -INFINITY;
        if (info) snprintf(info->note, sizeof info->note, "%s", note);
        return sla__error(ctx, st, "logdet: the matrix is singular (sign 0, log|det| = -inf): %s", msg);
    }
    if (st) return st;
    double tf = sla__now() - t0;
    st = sla_solver_logdet_vjp(ctx, S, 0, 1.0, sign, logabsdet, grad, info);
    if (info) {
        info->factor_seconds = tf;
        snprintf(info->note, sizeof info->note, "%s", note);
    }
    if (st == SLA_ERR_SINGULAR) {
        *sign = 0.0;
        *logabsdet = -INFINITY;
    }
    sla_solver_destroy(&S);
    return st;
}

sla_status sla_logdet_batch(sla_ctx *ctx, const sla_matrix *A, sla_logdet_method method, double *sign,
                            double *logabsdet, double *grad, sla_logdet_info *info)
{
    if (sla__require_real(ctx, A, "sla_logdet_batch")) return SLA_ERR_UNSUPPORTED;
    if (!A || !sign || !logabsdet)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_logdet_batch: NULL argument");
    sla_status first = SLA_OK;
    char msg[sizeof ctx->message] = "";
    for (sla_int b = 0; b < A->nbatch; b++) {
        sla_status st = sla_logdet(ctx, A, b, method, sign + b, logabsdet + b,
                                   grad ? grad + (size_t)b * (size_t)A->nnz : NULL, info ? info + b : NULL);
        if (st < 0 && first == SLA_OK) {
            first = st;
            snprintf(msg, sizeof msg, "value array %lld: %s", (long long)b, sla_ctx_message(ctx));
        }
        if (st < 0 && st != SLA_ERR_SINGULAR) break;
    }
    if (first) return sla__error(ctx, first, "%s", msg);
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_det(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla_logdet_method method, double *det)
{
    if (sla__require_real(ctx, A, "sla_det")) return SLA_ERR_UNSUPPORTED;
    if (!det) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_det: det is NULL");
    double sg = 0.0, lad = 0.0;
    sla_status st = sla_logdet(ctx, A, ib, method, &sg, &lad, NULL, NULL);
    if (st == SLA_ERR_SINGULAR) *det = 0.0;
    if (st) return st;
    *det = sg * exp(lad);
    if (isinf(*det) || *det == 0.0)
        return sla__error(ctx, SLA_ERR_TOO_LARGE,
                          "det %s a double: sign %+g, log|det| = %.17g; use sla_logdet",
                          isinf(*det) ? "overflows" : "underflows", sg, lad);
    return sla__ok(ctx, SLA_OK);
}
