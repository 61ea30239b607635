/* Generalized symmetric-definite eigenproblems K x = lambda M x by ARPACK's
 * Lanczos in shift-invert mode 3 (operator (K - sigma M)^-1 M, M-inner
 * products, K - sigma M factored by the library's direct solver); the VJP
 * is in eigsh_gen_vjp.c. */
#include "eigs_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sla_status sla__eig_check_pencil(sla_ctx *ctx, const char *who, const sla_matrix *K, sla_int ibK,
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

/* The mode-3 operator of the pencil: S factors K - sigma M. */
typedef struct gen_op {
    const sla_matrix *VM;
    sla_solver *S;
    sla_int n;
    int nt;
} gen_op;

static sla_status gen_apply(sla_ctx *ctx, void *op, int ido, const double *x, double *y, const double *bx,
                            double *t)
{
    const gen_op *G = op;
    if (ido == -1) { /* y = (K - sigma M)^-1 M x, M x in t */
        sla__spmv(G->VM, 0, x, t, G->nt);
        return sla__eig_solve(ctx, G->S, false, t, y, G->n);
    }
    if (ido == 1) return sla__eig_solve(ctx, G->S, false, bx, y, G->n); /* M x given */
    sla__spmv(G->VM, 0, x, y, G->nt);                                    /* ido = 2: y = M x */
    return SLA_OK;
}

/* Lanczos in mode 3 with bmat = G; evals ascending, Z (n x k). */
static sla_status run_gen(sla_ctx *ctx, const sla_matrix *VM, sla_solver *S, const sla_eigsh_options *o,
                          double sigma, const char *which, double *evals, double *Z, int *nconv_out,
                          sla_eigsh_info *li, bool *maxit)
{
    gen_op G = {.VM = VM, .S = S, .n = VM->nrows, .nt = sla__threads(ctx)};
    sla__lanczos L = {.who = "eigsh generalized", .tag = "eigsh", .n = (int)VM->nrows, .nev = (int)o->k,
                      .ncv = o->ncv, .maxiter = o->maxiter, .mode = 3, .generalized = true, .which = which,
                      .tol = o->tol, .sigma = sigma, .v0 = o->v0, .apply = gen_apply, .op = &G};
    sla__lanczos_out out = {0};
    sla_status st = sla__lanczos_run(ctx, &L, evals, Z, &out);
    li->nops += out.nops;
    if (st) return st;
    li->iterations = out.iters;
    *maxit = out.maxit;
    *nconv_out = out.nconv;
    return SLA_OK;
}
#endif

sla_status sla_eigsh_generalized(sla_ctx *ctx, const sla_matrix *K, sla_int ibK, const sla_matrix *M,
                                 sla_int ibM, const sla_eigsh_options *opts, double *evals, double *evecs,
                                 sla_int ldv, double *residuals, sla_eigsh_info *info)
{
    const char *who = "eigsh generalized";
    double t0 = sla__now();
    if (info) memset(info, 0, sizeof *info);
    if (sla__require_real(ctx, K, "sla_eigsh_generalized")) return SLA_ERR_UNSUPPORTED;
    if (sla__require_real(ctx, M, "sla_eigsh_generalized")) return SLA_ERR_UNSUPPORTED;
    sla_eigsh_options o;
    if (opts) o = *opts;
    else sla_eigsh_options_default(&o);
    sla_matrix VK, VM;
    sla_status st = sla__eig_check_pencil(ctx, who, K, ibK, M, ibM, &VK, &VM);
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
    if (sla__arpack_too_large(n, o.ncv, k))
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
        st = run_gen(ctx, &VM, S, &o, sigma, which, evals, Z, &nconv, &li, &maxit);
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

/* Every value array of K with M's (M->nbatch 1: one M for all, or
 * K->nbatch: M_b with K_b): sla_eigsh_generalized per array, in order
 * (ARPACK is serialized). */
sla_status sla_eigsh_generalized_batch(sla_ctx *ctx, const sla_matrix *K, const sla_matrix *M,
                                       const sla_eigsh_options *opts, double *evals, double *evecs,
                                       double *residuals, sla_eigsh_info *info)
{
    if (sla__require_real(ctx, K, "sla_eigsh_generalized_batch")) return SLA_ERR_UNSUPPORTED;
    if (M && sla__require_real(ctx, M, "sla_eigsh_generalized_batch")) return SLA_ERR_UNSUPPORTED;
    sla_eigsh_options o;
    if (opts) o = *opts;
    else sla_eigsh_options_default(&o);
    if (o.k < 1) return sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh generalized: k = %lld; k must be >= 1", (long long)o.k);
    if (!K || !M || !evals) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_eigsh_generalized_batch: NULL argument");
    if (M->nbatch != 1 && M->nbatch != K->nbatch)
        return sla__error(ctx, SLA_ERR_DIMENSION,
                          "sla_eigsh_generalized_batch: M has %lld value arrays; it needs 1 (shared) or K's %lld",
                          (long long)M->nbatch, (long long)K->nbatch);
    sla_status worst = SLA_OK;
    const size_t nk = (size_t)o.k, n = (size_t)K->nrows;
    for (sla_int b = 0; b < K->nbatch; b++) {
        sla_status st = sla_eigsh_generalized(ctx, K, b, M, M->nbatch == 1 ? 0 : b, &o, evals + (size_t)b * nk,
                                              evecs ? evecs + (size_t)b * nk * n : NULL, K->nrows,
                                              residuals ? residuals + (size_t)b * nk : NULL, info ? info + b : NULL);
        if (st < 0) return sla__batch_error(ctx, st, b);
        if (st > 0) worst = st;
    }
    if (worst)
        return sla__error(ctx, worst, "eigsh generalized batch: some value arrays did not converge (see info)");
    return sla__ok(ctx, SLA_OK);
}
