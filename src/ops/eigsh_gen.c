/* Generalized symmetric-definite eigenproblems K x = lambda M x by ARPACK's
 * Lanczos in shift-invert mode 3 (operator (K - sigma M)^-1 M, M-inner
 * products, K - sigma M factored by the library's direct solver), and the
 * eigenvalue VJP d lambda = x^T (dK - lambda dM) x for M-normalized x. */
#include "eigs_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLA_HAVE_ARPACK
#include <arpack.h>
#endif

/* Both matrices square of one order, ib in range, values finite, both
 * symmetric; views in *VK, *VM. */
static sla_status check_pencil(sla_ctx *ctx, const char *who, const sla_matrix *K, sla_int ibK,
                               const sla_matrix *M, sla_int ibM, sla_matrix *VK, sla_matrix *VM)
{
    if (!K || !M) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: K or M is NULL", who);
    sla_status st = sla__check_square_index(ctx, who, K, ibK);
    if (!st) st = sla__check_square_index(ctx, who, M, ibM);
    if (st) return st;
    if (K->nrows != M->nrows)
        return sla__error(ctx, SLA_ERR_DIMENSION, "%s: K is %lld x %lld but M is %lld x %lld", who,
                          (long long)K->nrows, (long long)K->ncols, (long long)M->nrows, (long long)M->ncols);
    if ((st = sla__symmetric_view(ctx, who, K, ibK, VK))) return st;
    if ((st = sla__symmetric_view(ctx, who, M, ibM, VM))) {
        if (st == SLA_ERR_ARGUMENT) {
            char msg[400];
            snprintf(msg, sizeof msg, "%s", sla_ctx_message(ctx));
            return sla__error(ctx, st, "%s (M)", msg);
        }
        return st;
    }
    return SLA_OK;
}

#ifdef SLA_HAVE_ARPACK
static sla_status factor_as(sla_ctx *ctx, const sla_matrix *A, sla_method m, double memlim, sla_solver **S)
{
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = m;
    o.memory_limit = memlim;
    return sla_solver_create(ctx, A, &o, S);
}

typedef struct sort_item {
    double v;
    int i;
} sort_item;

static int cmp_item(const void *a, const void *b)
{
    double x = ((const sort_item *)a)->v, y = ((const sort_item *)b)->v;
    return x < y ? -1 : x > y;
}

/* Lanczos in mode 3 with bmat = G; evals ascending, Z (n x k). Lock held. */
static sla_status run_gen(sla_ctx *ctx, const sla_matrix *VM, sla_solver *S, const sla_eigsh_options *o,
                          double sigma, const char *which, double *evals, double *Z, int *nconv_out,
                          sla_eigsh_info *li, bool *maxit)
{
    const int n = (int)VM->nrows, nev = (int)o->k, nt = sla__threads(ctx);
    int ncv = (int)(o->ncv ? o->ncv : (2 * o->k + 1 > 20 ? 2 * o->k + 1 : 20));
    if (ncv > n) ncv = n;
    const int lworkl = ncv * (ncv + 8);
    const size_t nn = (size_t)n;
    sla_allocator a = sla__ctx_alloc(ctx);
    double *resid = sla__ctx_malloc(ctx, nn, sizeof *resid, "eigsh work space");
    double *V = resid ? sla__ctx_malloc(ctx, nn * (size_t)ncv, sizeof *V, "eigsh Lanczos basis") : NULL;
    double *workd = V ? sla__ctx_malloc(ctx, 4 * nn, sizeof *workd, "eigsh work space") : NULL;
    double *workl = workd ? sla__ctx_malloc(ctx, (size_t)lworkl, sizeof *workl, "eigsh work space") : NULL;
    double *d = workl ? sla__ctx_malloc(ctx, (size_t)ncv, sizeof *d, "eigsh work space") : NULL;
    int *select = d ? sla__ctx_calloc(ctx, (size_t)ncv, sizeof *select, "eigsh work space") : NULL;
    double *Zt = select ? sla__ctx_malloc(ctx, nn * (size_t)nev, sizeof *Zt, "eigsh eigenvectors") : NULL;
    sort_item *it = Zt ? sla__ctx_malloc(ctx, (size_t)nev, sizeof *it, "eigsh work space") : NULL;
    sla_status st = SLA_OK;
    if (!it) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    double *t = workd + 3 * nn; /* M x for ido = -1 */
    sla__eig_start(n, o->v0, resid);
    int iparam[11] = {0}, ipntr[14] = {0};
    iparam[0] = 1;
    sla_int mx = o->maxiter ? o->maxiter : (10 * (sla_int)n > 1000 ? 10 * (sla_int)n : 1000);
    iparam[2] = mx > INT_MAX ? INT_MAX : (int)mx;
    iparam[6] = 3;
    int ido = 0, info = 1;
    for (;;) {
        dsaupd_c(&ido, "G", n, which, nev, o->tol, resid, ncv, V, n, iparam, ipntr, workd, workl, lworkl, &info);
        const double *x = workd + ipntr[0] - 1;
        double *y = workd + ipntr[1] - 1;
        if (ido == -1) { /* y = (K - sigma M)^-1 M x */
            sla__spmv(VM, 0, x, t, nt);
            st = sla__eig_solve(ctx, S, false, t, y, n);
            li->nops++;
        } else if (ido == 1) { /* y = (K - sigma M)^-1 (M x), M x given */
            st = sla__eig_solve(ctx, S, false, workd + ipntr[2] - 1, y, n);
            li->nops++;
        } else if (ido == 2) {
            sla__spmv(VM, 0, x, y, nt);
        } else break;
        if (st) goto done;
        if (!sla__all_finite(n, y)) {
            st = sla__error(ctx, SLA_ERR_VALUE, "eigsh generalized: the operator produced NaN/Inf");
            goto done;
        }
    }
    li->iterations = iparam[2];
    *maxit = info == 1;
    if (info < 0 || info == 3) {
        st = sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh generalized: ARPACK dsaupd failed (info %d)", info);
        goto done;
    }
    int nconv = iparam[4];
    if (nconv > 0) {
        int info2 = 0;
        dseupd_c(1, "A", select, d, Zt, n, sigma, "G", n, which, nev, o->tol, resid, ncv, V, n, iparam, ipntr,
                 workd, workl, lworkl, &info2);
        if (info2 != 0) {
            st = sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh generalized: ARPACK dseupd failed (info %d)", info2);
            goto done;
        }
        nconv = iparam[4] < nev ? iparam[4] : nev;
    }
    for (int i = 0; i < nconv; i++) it[i] = (sort_item){d[i], i};
    qsort(it, (size_t)nconv, sizeof *it, cmp_item);
    for (int i = 0; i < nev; i++) {
        if (i < nconv) {
            evals[i] = it[i].v;
            memcpy(Z + (size_t)i * nn, Zt + (size_t)it[i].i * nn, nn * sizeof *Z);
        } else {
            evals[i] = NAN;
            for (int r = 0; r < n; r++) Z[(size_t)i * nn + r] = NAN;
        }
    }
    *nconv_out = nconv;
done:
    sla__free(&a, resid);
    sla__free(&a, V);
    sla__free(&a, workd);
    sla__free(&a, workl);
    sla__free(&a, d);
    sla__free(&a, select);
    sla__free(&a, Zt);
    sla__free(&a, it);
    return st;
}
#endif

sla_status sla_eigsh_generalized(sla_ctx *ctx, const sla_matrix *K, sla_int ibK, const sla_matrix *M,
                                 sla_int ibM, const sla_eigsh_options *opts, double *evals, double *evecs,
                                 sla_int ldv, double *residuals, sla_eigsh_info *info)
{
    const char *who = "eigsh generalized";
    double t0 = sla__now();
    if (info) memset(info, 0, sizeof *info);
    sla_eigsh_options o;
    if (opts) o = *opts;
    else sla_eigsh_options_default(&o);
    sla_matrix VK, VM;
    sla_status st = check_pencil(ctx, who, K, ibK, M, ibM, &VK, &VM);
    if (st) return st;
    const sla_int n = K->nrows, k = o.k;
    if (k < 1 || k >= n)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: k = %lld must be in [1, n) with n = %lld", who, (long long)k,
                          (long long)n);
    if (o.which < SLA_EIG_LA || o.which > SLA_EIG_SM)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: unknown which = %d", who, (int)o.which);
    if (o.shift_invert && !isfinite(o.sigma)) return sla__error(ctx, SLA_ERR_VALUE, "%s: sigma is not finite", who);
    if (!(o.tol >= 0.0) || !isfinite(o.tol) || o.maxiter < 0 || !(o.memory_limit >= 0.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: bad tol, maxiter or memory_limit", who);
    if (o.ncv != 0 && (o.ncv <= k || o.ncv > n))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: ncv = %lld must be in (k, n] = (%lld, %lld]", who,
                          (long long)o.ncv, (long long)k, (long long)n);
    if (o.factor_method != SLA_METHOD_AUTO &&
        (o.factor_method < SLA_METHOD_CHOLESKY || o.factor_method > SLA_METHOD_SUPERLU))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: factor_method %s is not a direct method", who,
                          sla_method_name(o.factor_method));
    if (!evals) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: evals is NULL", who);
    if (evecs && ldv < n)
        return sla__error(ctx, SLA_ERR_DIMENSION, "%s: ldv = %lld < n = %lld", who, (long long)ldv, (long long)n);
    if (o.v0 && !sla__all_finite(n, o.v0)) return sla__error(ctx, SLA_ERR_VALUE, "%s: v0 has NaN/Inf", who);
#ifndef SLA_HAVE_ARPACK
    (void)residuals;
    (void)t0;
    return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                      "%s needs ARPACK, which was not found when sla was configured (install libarpack2-dev and "
                      "reconfigure)",
                      who);
#else
    if (n > INT_MAX / 4 || (o.ncv ? o.ncv : 2 * k + 20) > 46340)
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "%s: n or ncv too large for ARPACK's 32-bit indices", who);
    char msg[400], method[40];
    sla_eigsh_info li;
    memset(&li, 0, sizeof li);
    /* M positive definite: a Cholesky factorization must succeed */
    sla_solver *SM = NULL, *S = NULL;
    sla_matrix *C = NULL;
    double t1 = sla__now();
    st = factor_as(ctx, &VM, SLA_METHOD_CHOLESKY, o.memory_limit, &SM);
    sla_solver_destroy(&SM);
    if (st == SLA_ERR_NOT_SPD || st == SLA_ERR_SINGULAR) {
        snprintf(msg, sizeof msg, "%s", sla_ctx_message(ctx));
        return sla__error(ctx, SLA_ERR_NOT_SPD, "%s: M is not positive definite (%s)", who, msg);
    }
    if (st) return st;
    const double sigma = o.shift_invert ? o.sigma : 0.0;
    st = sla__eig_combine(ctx, &VK, 0, 1.0, &VM, 0, -sigma, &C);
    if (!st) {
        if (o.factor_method != SLA_METHOD_AUTO) {
            st = factor_as(ctx, C, o.factor_method, o.memory_limit, &S);
        } else {
            st = factor_as(ctx, C, SLA_METHOD_CHOLESKY, o.memory_limit, &S);
            if (st == SLA_ERR_NOT_SPD) st = factor_as(ctx, C, SLA_METHOD_LDLT, o.memory_limit, &S);
            if (st == SLA_ERR_SINGULAR || st == SLA_ERR_NOT_SPD)
                st = factor_as(ctx, C, SLA_METHOD_LU, o.memory_limit, &S);
        }
        if (st) {
            snprintf(msg, sizeof msg, "%s", sla_ctx_message(ctx));
            st = sla__error(ctx, st, "%s: factorization of K - sigma M (sigma = %g) failed: %s", who, sigma, msg);
        }
    }
    if (st) {
        sla_solver_destroy(&S);
        sla_matrix_destroy(&C);
        return st;
    }
    li.factor_seconds = sla__now() - t1;
    snprintf(method, sizeof method, "arpack mode 3 (%s)", sla_method_name(sla_solver_method(S)));
    const char *which = o.which == SLA_EIG_LA ? "LA" : o.which == SLA_EIG_SA ? "SA" : "LM";
    sla_allocator a = sla__ctx_alloc(ctx);
    double *Z = sla__ctx_malloc(ctx, (size_t)n * (size_t)k, sizeof *Z, "eigsh eigenvectors");
    double *r = Z ? sla__ctx_malloc(ctx, 2 * (size_t)n, sizeof *r, "eigsh residual") : NULL;
    int nconv = 0;
    bool maxit = false;
    if (!r) st = SLA_ERR_NOMEM;
    if (!st) {
        pthread_mutex_lock(&sla__arpack_lock);
        st = run_gen(ctx, &VM, S, &o, sigma, which, evals, Z, &nconv, &li, &maxit);
        pthread_mutex_unlock(&sla__arpack_lock);
    }
    double maxres = 0.0;
    const int nt = sla__threads(ctx);
    if (!st)
        for (sla_int i = 0; i < k; i++) {
            double *v = Z + (size_t)i * (size_t)n, res = NAN;
            if (i < nconv) { /* ||K v - l M v|| */
                sla__spmv(&VK, 0, v, r, nt);
                sla__spmv(&VM, 0, v, r + n, nt);
                sla__axpy(n, -evals[i], r + n, r, nt);
                res = sla__nrm2(n, r, nt);
                maxres = fmax(maxres, res);
            }
            if (residuals) residuals[i] = res;
            if (evecs) memcpy(evecs + (size_t)i * (size_t)ldv, v, (size_t)n * sizeof *v);
        }
    sla__free(&a, Z);
    sla__free(&a, r);
    sla_solver_destroy(&S);
    sla_matrix_destroy(&C); /* after S, which borrows it */
    if (st) return st;
    if (info) {
        *info = li;
        snprintf(info->method, sizeof info->method, "%s", method);
        if (o.shift_invert) snprintf(info->note, sizeof info->note, "sigma = %.17g", sigma);
        info->converged = nconv >= k;
        info->nconv = nconv;
        info->max_residual = maxres;
        info->seconds = sla__now() - t0;
    }
    if (nconv < k)
        return sla__error(ctx, SLA_NOT_CONVERGED, "%s: only %d of %lld eigenpairs converged%s", who, nconv,
                          (long long)k, maxit ? " within maxiter" : "");
    return sla__ok(ctx, SLA_OK);
#endif
}

sla_status sla_eigsh_generalized_vjp(sla_ctx *ctx, const sla_matrix *K, sla_int ibK, const sla_matrix *M,
                                     sla_int ibM, sla_int k, const double *evals, const double *evecs,
                                     sla_int ldv, const double *gl, const double *gv, sla_int ldgv, double *gK,
                                     double *gM)
{
    const char *who = "eigsh generalized vjp";
    sla_matrix VK, VM;
    sla_status st = check_pencil(ctx, who, K, ibK, M, ibM, &VK, &VM);
    if (st) return st;
    const sla_int n = K->nrows;
    if (k < 1 || k > n) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: k = %lld out of [1, n]", who, (long long)k);
    if (!evals || !evecs) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: NULL evals or evecs", who);
    if (ldv < n || (gv && ldgv < n))
        return sla__error(ctx, SLA_ERR_DIMENSION, "%s: leading dimensions %lld, %lld < n = %lld", who,
                          (long long)ldv, (long long)ldgv, (long long)n);
    if (gv)
        for (sla_int i = 0; i < k; i++)
            for (sla_int r = 0; r < n; r++)
                if (gv[(size_t)i * (size_t)ldgv + r] != 0.0)
                    return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                                      "%s: eigenvector cotangents are not implemented for the generalized "
                                      "problem (gv[%lld][%lld] != 0); only eigenvalue gradients are",
                                      who, (long long)i, (long long)r);
    for (sla_int i = 0; i < k; i++)
        if (!isfinite(evals[i]) || !sla__all_finite(n, evecs + (size_t)i * (size_t)ldv))
            return sla__error(ctx, SLA_ERR_VALUE, "%s: eigenpair %lld is not finite", who, (long long)i);
    if (gl && !sla__all_finite(k, gl)) return sla__error(ctx, SLA_ERR_VALUE, "%s: gl has NaN/Inf", who);
    if (gK) memset(gK, 0, (size_t)K->nnz * sizeof *gK);
    if (gM) memset(gM, 0, (size_t)M->nnz * sizeof *gM);
    if (!gl) return sla__ok(ctx, SLA_OK);
    for (sla_int i = 0; i < k; i++) {
        const double *x = evecs + (size_t)i * (size_t)ldv;
        double g = gl[i];
        if (g == 0.0) continue;
        for (sla_int r = 0; r < n; r++) {
            if (gK)
                for (sla_int p = VK.rowptr[r]; p < VK.rowptr[r + 1]; p++) gK[p] += g * x[r] * x[VK.colind[p]];
            if (gM)
                for (sla_int p = VM.rowptr[r]; p < VM.rowptr[r + 1]; p++)
                    gM[p] -= g * evals[i] * x[r] * x[VM.colind[p]];
        }
    }
    return sla__ok(ctx, SLA_OK);
}
