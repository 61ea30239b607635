/* The truncated singular value decomposition: k singular triplets of a
 * sparse m x n matrix by ARPACK's symmetric Lanczos on the normal operator
 * B^T B (B = A or A^T, whichever makes it the smaller), regular mode for
 * the largest, shift-invert through a factorization of the augmented
 * matrix [alpha I, B; B^T, 0] for the smallest; and the 2-norm condition
 * number from the two ends. The VJP is in svds_vjp.c, the options in
 * svds_options.c. */
#include "sla/svd.h"
#include "../solvers/direct.h"
#include "eigs_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sla_status check_args(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_svds_options *o,
                             bool check_k)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "svds: A is NULL");
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "value array %lld out of range [0, %lld)", (long long)ib,
                          (long long)A->nbatch);
    const sla_int q = A->nrows < A->ncols ? A->nrows : A->ncols;
    if (check_k && (o->k < 1 || o->k >= q))
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "svds: k = %lld must be in [1, min(m, n)) with m = %lld, n = %lld (as SciPy's svds; "
                          "use a dense SVD for all singular values)",
                          (long long)o->k, (long long)A->nrows, (long long)A->ncols);
    if (o->which != SLA_SVDS_LM && o->which != SLA_SVDS_SM)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "svds: unknown which = %d", (int)o->which);
    if (!(o->tol >= 0.0) || !isfinite(o->tol))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "svds: tol = %g must be >= 0", o->tol);
    if (o->ncv != 0 && (o->ncv <= o->k || o->ncv > q))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "svds: ncv = %lld must be in (k, min(m, n)] = (%lld, %lld]",
                          (long long)o->ncv, (long long)o->k, (long long)q);
    if (o->maxiter < 0 || !(o->memory_limit >= 0.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "svds: negative maxiter or memory_limit");
    if (o->v0 && !sla__all_finite(q, o->v0)) return sla__error(ctx, SLA_ERR_VALUE, "svds: v0 has NaN/Inf");
    sla_matrix V;
    sla__single_view(A, ib, &V);
    return sla_matrix_check_values(ctx, &V, 0);
}

#ifdef SLA_HAVE_ARPACK

/* The operator of the Lanczos run over B (p x q, p >= q): B = A when
 * tall, A^T otherwise. */
typedef struct svd_op {
    const sla_matrix *A; /* one-array view */
    bool tall;
    sla_int p, q;
    int nt;
    double *t;     /* p */
    double *twork; /* nt * ncols of A, for the transposed product */
    sla__csrt T;   /* the explicit A^T (T.rowptr NULL: scatter into twork) */
    sla_solver *S; /* SM: the factor of K = [alpha I, B; B^T, 0] */
    sla_matrix *K; /* owned; S refers to it */
    double alpha;
    double *kb, *kx; /* p + q */
} svd_op;

static void apply_B(const svd_op *E, const double *x, double *y)
{
    if (E->tall) sla__spmv(E->A, 0, x, y, E->nt);
    else if (E->T.rowptr) sla__csrt_spmv(&E->T, x, y, E->nt);
    else sla__spmv_t(E->A, 0, x, y, E->nt, E->twork);
}

static void apply_Bt(const svd_op *E, const double *x, double *y)
{
    if (!E->tall) sla__spmv(E->A, 0, x, y, E->nt);
    else if (E->T.rowptr) sla__csrt_spmv(&E->T, x, y, E->nt);
    else sla__spmv_t(E->A, 0, x, y, E->nt, E->twork);
}

/* y = B^T B x, or (B^T B)^-1 x by one solve with K. */
static sla_status op_apply(sla_ctx *ctx, svd_op *E, const double *x, double *y)
{
    if (!E->S) {
        apply_B(E, x, E->t);
        apply_Bt(E, E->t, y);
        return SLA_OK;
    }
    const sla_int p = E->p, q = E->q, nk = p + q;
    sla__zero(p, E->kb);
    for (sla_int i = 0; i < q; i++) E->kb[p + i] = -x[i];
    /* the backend's solves alone (no residual check per step) */
    const sla__direct_ops *d;
    void *sym, *num;
    sla_status st;
    if (sla__solver_direct(E->S, 0, &d, &sym, &num)) st = d->solve(ctx, sym, num, false, 1, E->kb, nk, E->kx, nk);
    else if ((st = sla_solver_solve(ctx, E->S, 0, 1, E->kb, nk, E->kx, nk, NULL)) == SLA_NOT_CONVERGED) st = SLA_OK;
    if (st) return st;
    for (sla_int i = 0; i < q; i++) y[i] = E->kx[p + i] / E->alpha;
    return SLA_OK;
}

/* The smallest column norm of B (alpha's scale). */
static double min_col_norm(const svd_op *E, double *work)
{
    sla__zero(E->q, work);
    const sla_matrix *A = E->A;
    for (sla_int r = 0; r < A->nrows; r++)
        for (sla_int p = A->rowptr[r]; p < A->rowptr[r + 1]; p++) {
            double v = sla__val(A, 0, p);
            work[E->tall ? A->colind[p] : r] += v * v;
        }
    double mn = INFINITY;
    for (sla_int j = 0; j < E->q; j++) mn = fmin(mn, work[j]);
    return sqrt(mn);
}

/* K = [alpha I, B; B^T, 0] (p + q square, symmetric indefinite), factored
 * by the direct solver's LU (with pivoting). SLA_ERR_SINGULAR when it is
 * singular (A rank deficient). */
static sla_status factor_augmented(sla_ctx *ctx, svd_op *E, double memlim, double *colwork)
{
    const sla_matrix *A = E->A;
    double cn = min_col_norm(E, colwork);
    if (!(cn > 0.0))
        return sla__error(ctx, SLA_ERR_SINGULAR, "svds: B has a zero column: A is rank deficient");
    E->alpha = cn / sqrt(2.0);
    const sla_int p = E->p, nnz = A->nnz, nk = p + E->q, cnt = p + 2 * nnz;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_int *ri = sla__ctx_malloc(ctx, (size_t)cnt, 2 * sizeof *ri, "svds augmented matrix");
    double *vx = ri ? sla__ctx_malloc(ctx, (size_t)cnt, sizeof *vx, "svds augmented matrix") : NULL;
    if (!vx) {
        sla__free(&a, ri);
        return SLA_ERR_NOMEM;
    }
    sla_int *ci = ri + cnt, c = 0;
    for (sla_int i = 0; i < p; i++, c++) {
        ri[c] = ci[c] = i;
        vx[c] = E->alpha;
    }
    for (sla_int r = 0; r < A->nrows; r++)
        for (sla_int q = A->rowptr[r]; q < A->rowptr[r + 1]; q++) {
            sla_int col = A->colind[q];
            sla_int bi = E->tall ? r : col, bj = E->tall ? col : r; /* B[bi][bj] */
            double v = sla__val(A, 0, q);
            ri[c] = bi;
            ci[c] = p + bj;
            vx[c++] = v;
            ri[c] = p + bj;
            ci[c] = bi;
            vx[c++] = v;
        }
    sla_status st = sla_matrix_from_coo(ctx, nk, nk, cnt, ri, ci, SLA_F64, 1, vx, NULL, &E->K);
    sla__free(&a, ri);
    sla__free(&a, vx);
    if (st) return st;
    sla_solver_options so;
    sla_solver_options_default(&so);
    so.method = SLA_METHOD_LU; /* pivoting: the (2,2) block is zero */
    so.memory_limit = memlim;
    return sla_solver_create(ctx, E->K, &so, &E->S);
}

static sla_status lanczos_apply(sla_ctx *ctx, void *op, int ido, const double *x, double *y, const double *bx,
                                double *scratch)
{
    (void)ido;
    (void)bx;
    (void)scratch;
    return op_apply(ctx, op, x, y);
}

/* One Lanczos run on E (mode 1, or mode 3 around 0 when E->S): the
 * eigenvalues lam (k) of B^T B, descending when `down`, ascending
 * otherwise, and their vectors X (q x k); unconverged ones NaN. */
static sla_status run_arpack(sla_ctx *ctx, svd_op *E, const sla_svds_options *o, sla_int ncv_in, const char *which,
                             bool down, double *lam, double *X, int *nconv_out, sla_int *iters, sla_int *nops,
                             bool *maxit)
{
    sla__lanczos L = {.who = "svds", .tag = "svds", .vectors = "vectors", .n = (int)E->q, .nev = (int)o->k,
                      .ncv = ncv_in, .maxiter = o->maxiter, .mode = E->S ? 3 : 1, .descending = down,
                      .which = which, .tol = o->tol, .sigma = 0.0, .v0 = o->v0, .apply = lanczos_apply, .op = E};
    sla__lanczos_out out = {0};
    sla_status st = sla__lanczos_run(ctx, &L, lam, X, &out);
    if (st) return st;
    *iters = out.iters;
    *nops = out.nops;
    *maxit = out.maxit;
    *nconv_out = out.nconv;
    return SLA_OK;
}

/* Orthonormalize y against Y's first j columns (length p), twice; false
 * when nothing is left. */
static bool orthonormalize(sla_int p, const double *Y, sla_int j, double *y, int nt)
{
    double n0 = sla__nrm2(p, y, nt);
    for (int pass = 0; pass < 2; pass++)
        for (sla_int c = 0; c < j; c++) {
            const double *yc = Y + (size_t)c * (size_t)p;
            sla__axpy(p, -sla__dot(p, yc, y, nt), yc, y, nt);
        }
    double n1 = sla__nrm2(p, y, nt);
    if (!(n1 > 1e-12 * n0) || !(n1 > 0.0)) return false;
    for (sla_int i = 0; i < p; i++) y[i] /= n1;
    return true;
}

/* The whole computation; `strict` (cond2): SM with a singular augmented
 * matrix returns SLA_ERR_SINGULAR instead of falling back to Lanczos. */
static sla_status svds_run(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_svds_options *o, bool strict,
                           double *s, double *U, double *Vout, sla_svds_info *info)
{
    double t0 = sla__now();
    sla_matrix Av;
    sla__single_view(A, ib, &Av);
    const sla_int m = A->nrows, n = A->ncols, k = o->k;
    const bool tall = m >= n;
    const sla_int p = tall ? m : n, q = tall ? n : m;
    if (sla__arpack_too_large(p + q, o->ncv, k))
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "svds: m + n or ncv too large for ARPACK's 32-bit indices");
    const int nt = sla__threads(ctx);
    svd_op E = {.A = &Av, .tall = tall, .p = p, .q = q, .nt = nt};
    sla_allocator a = sla__ctx_alloc(ctx);
    char note[192] = "", method[48], reason[32] = "converged";
    const char *opname = tall ? "A^T A" : "A A^T";
    snprintf(method, sizeof method, "arpack on %s", opname);
    double *X = sla__ctx_malloc(ctx, (size_t)q * (size_t)k, sizeof *X, "svds vectors");
    double *Y = X ? sla__ctx_malloc(ctx, (size_t)p * (size_t)k, sizeof *Y, "svds vectors") : NULL;
    double *lam = Y ? sla__ctx_malloc(ctx, (size_t)k, sizeof *lam, "svds values") : NULL;
    double *wrk = lam ? sla__ctx_malloc(ctx, (size_t)(p + q), 3 * sizeof *wrk, "svds work space") : NULL;
    E.twork = wrk && nt > 1 ? sla__ctx_malloc(ctx, (size_t)nt * (size_t)n, sizeof *E.twork, "svds work space")
                            : NULL;
    sla_status st = SLA_OK;
    if (!wrk || (nt > 1 && !E.twork)) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    E.t = wrk;
    E.kb = wrk + (p + q);
    E.kx = wrk + 2 * (p + q);
    double tf = 0.0;
    const char *which = "LA";
    bool down = true, fallback = false;
    sla_int ncv = o->ncv;
    if (o->which == SLA_SVDS_SM) {
        double t1 = sla__now();
        st = factor_augmented(ctx, &E, o->memory_limit, wrk);
        tf = sla__now() - t1;
        down = false;
        if (!st) {
            which = "LM";
            snprintf(method, sizeof method, "arpack shift-invert (%s) on %s", sla_method_name(sla_solver_method(E.S)),
                     opname);
        } else if (strict && st == SLA_ERR_SINGULAR) {
            goto done;
        } else if (st == SLA_ERR_SINGULAR || st == SLA_ERR_UNAVAILABLE || st == SLA_ERR_NOMEM) {
            char msg[120];
            snprintf(msg, sizeof msg, "%s", sla_ctx_message(ctx));
            fallback = true;
            which = "SA";
            if (!ncv) {
                ncv = 4 * k + 1 > 64 ? 4 * k + 1 : 64;
                if (ncv > q) ncv = q;
            }
            snprintf(note, sizeof note,
                     "SM: no factorization of the augmented matrix (%.80s); plain Lanczos for the smallest "
                     "eigenvalues of %s, ncv = %lld",
                     msg, opname, (long long)ncv);
            st = SLA_OK;
        } else {
            goto done;
        }
    }
    /* Lanczos on B^T B: one product with A^T per step; the explicit
     * transpose only when asked (auto scatters: src/core/transpose.c).
     * Not for the shift-invert path, whose steps are solves. */
    if (!E.S && o->transpose == SLA_TRANSPOSE_EXPLICIT) {
        st = sla__csrt_build(ctx, &Av, 0, &E.T);
        if (st == SLA_ERR_TOO_LARGE) st = SLA_OK; /* rows past int32: scatter */
        if (st) goto done;
    }
    int nconv = 0;
    sla_int iters = 0, nops = 0;
    bool maxit = false;
    if ((st = run_arpack(ctx, &E, o, ncv, which, down, lam, X, &nconv, &iters, &nops, &maxit))) goto done;
    /* singular values, the other side's vectors, residuals */
    double lmax = 0.0;
    for (sla_int i = 0; i < nconv; i++) lmax = fmax(lmax, fabs(lam[i]));
    if (fallback) {
        /* the largest eigenvalue of B^T B bounds what "zero" means */
        double fro = 0.0;
        for (sla_int pp = 0; pp < Av.nnz; pp++) fro += sla__val(&Av, 0, pp) * sla__val(&Av, 0, pp);
        lmax = fmax(lmax, fro);
    }
    double rv = 0.0, ru = 0.0;
    int zeros = 0;
    double *r1 = wrk, *r2 = wrk + p; /* p + q */
    for (sla_int i = 0; i < k; i++) {
        double *x = X + (size_t)i * (size_t)q, *y = Y + (size_t)i * (size_t)p;
        if (i >= nconv) {
            s[i] = NAN;
            for (sla_int r = 0; r < p; r++) y[r] = NAN;
            continue;
        }
        double l = lam[i];
        if (fallback && l <= 100.0 * 2.220446049250313e-16 * lmax) {
            l = 0.0;
            zeros++;
        }
        s[i] = sqrt(fmax(l, 0.0));
        apply_B(&E, x, y);
        if (!orthonormalize(p, Y, i, y, nt)) {
            sla__eig_start(p, NULL, y);
            y[i % p] += 1.0;
            orthonormalize(p, Y, i, y, nt);
        }
        /* ||B x - s y|| and ||B^T y - s x|| */
        apply_B(&E, x, r1);
        sla__axpy(p, -s[i], y, r1, nt);
        apply_Bt(&E, y, r2);
        sla__axpy(q, -s[i], x, r2, nt);
        double e1 = sla__nrm2(p, r1, nt), e2 = sla__nrm2(q, r2, nt);
        /* tall: x = v, y = u: A v - s u = r1; wide: A v - s u = B^T y - s x = r2 */
        rv = fmax(rv, tall ? e1 : e2);
        ru = fmax(ru, tall ? e2 : e1);
    }
    for (sla_int i = 0; i < k; i++) {
        const double *x = X + (size_t)i * (size_t)q, *y = Y + (size_t)i * (size_t)p;
        const double *uu = tall ? y : x, *vv = tall ? x : y;
        if (U) memcpy(U + (size_t)i * (size_t)m, uu, (size_t)m * sizeof *U);
        if (Vout) memcpy(Vout + (size_t)i * (size_t)n, vv, (size_t)n * sizeof *Vout);
    }
    if (zeros) {
        snprintf(reason, sizeof reason, "rank deficient");
        size_t len = strlen(note);
        snprintf(note + len, sizeof note - len,
                 "%s%d singular value%s at the rounding level reported as 0 (A is rank deficient)", len ? "; " : "",
                 zeros, zeros == 1 ? "" : "s");
    } else if (nconv < k) {
        snprintf(reason, sizeof reason, "%s", maxit ? "maxiter" : "not converged");
    }
    if (info) {
        snprintf(info->method, sizeof info->method, "%s", method);
        snprintf(info->reason, sizeof info->reason, "%s", reason);
        snprintf(info->note, sizeof info->note, "%s", note);
        info->converged = nconv >= k;
        info->nconv = nconv;
        info->iterations = iters;
        info->nops = nops;
        info->max_residual_v = rv;
        info->max_residual_u = ru;
        info->factor_seconds = tf;
        info->seconds = sla__now() - t0;
    }
    if (nconv < k)
        st = sla__error(ctx, SLA_NOT_CONVERGED,
                        "svds: only %d of %lld singular triplets converged%s (try a larger maxiter or ncv)", nconv,
                        (long long)k, maxit ? " within maxiter" : "");
done:
    sla_solver_destroy(&E.S);
    sla_matrix_destroy(&E.K);
    sla__free(&a, X);
    sla__free(&a, Y);
    sla__free(&a, lam);
    sla__free(&a, wrk);
    sla__free(&a, E.twork);
    sla__csrt_free(ctx, &E.T);
    return st;
}

#endif /* SLA_HAVE_ARPACK */

sla_status sla_svds(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_svds_options *opts, double *s,
                    double *U, double *V, sla_svds_info *info)
{
    if (info) memset(info, 0, sizeof *info);
    if (sla__require_real(ctx, A, "sla_svds")) return SLA_ERR_UNSUPPORTED;
    sla_svds_options o;
    if (opts) o = *opts;
    else sla_svds_options_default(&o);
    sla_status st = check_args(ctx, A, ib, &o, true);
    if (st) return st;
    if (!s) return sla__error(ctx, SLA_ERR_ARGUMENT, "svds: s is NULL");
#ifndef SLA_HAVE_ARPACK
    (void)U;
    (void)V;
    return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                      "svds needs ARPACK, which was not found when sla was configured (install libarpack2-dev "
                      "and reconfigure)");
#else
    st = svds_run(ctx, A, ib, &o, false, s, U, V, info);
    return st ? st : sla__ok(ctx, SLA_OK);
#endif
}

sla_status sla_cond2(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_svds_options *opts, double *cond,
                     double *smax, double *smin, sla_svds_info *info)
{
    if (info) memset(info, 0, sizeof *info);
    if (sla__require_real(ctx, A, "sla_cond2")) return SLA_ERR_UNSUPPORTED;
    sla_svds_options o;
    if (opts) o = *opts;
    else sla_svds_options_default(&o);
    o.k = 1;
    o.which = SLA_SVDS_LM;
    if (!cond) return sla__error(ctx, SLA_ERR_ARGUMENT, "cond2: cond is NULL");
    *cond = NAN;
    sla_status st = check_args(ctx, A, ib, &o, false);
    if (st) return st;
    if ((A->nrows < A->ncols ? A->nrows : A->ncols) < 2)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "cond2: A is %lld x %lld; ARPACK needs min(m, n) >= 2 (use a dense SVD)",
                          (long long)A->nrows, (long long)A->ncols);
#ifndef SLA_HAVE_ARPACK
    (void)smax;
    (void)smin;
    return sla__error(ctx, SLA_ERR_UNAVAILABLE, "cond2 needs ARPACK, which was not found when sla was configured");
#else
    double hi = NAN, lo = NAN;
    if ((st = svds_run(ctx, A, ib, &o, true, &hi, NULL, NULL, NULL))) return st;
    if (smax) *smax = hi;
    o.which = SLA_SVDS_SM;
    st = svds_run(ctx, A, ib, &o, true, &lo, NULL, NULL, info);
    if (st == SLA_ERR_SINGULAR || (!st && !(lo > 2.220446049250313e-16 * hi))) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s", st ? sla_ctx_message(ctx) : "s_min <= eps s_max");
        *cond = INFINITY;
        if (smin) *smin = 0.0;
        if (info) snprintf(info->reason, sizeof info->reason, "rank deficient");
        return sla__error(ctx, SLA_ERR_SINGULAR, "cond2: A is rank deficient (%s): cond2 = inf", msg);
    }
    if (st) return st;
    if (smin) *smin = lo;
    *cond = hi / lo;
    return sla__ok(ctx, SLA_OK);
#endif
}
