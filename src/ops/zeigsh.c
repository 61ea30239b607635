/* Hermitian eigenpairs of a complex matrix (sla_zeigsh): ARPACK's complex
 * Arnoldi (znaupd/zneupd) in regular mode, or in shift-invert mode through
 * a complex direct backend (sla__zdirect_backend), then a Rayleigh-Ritz
 * step on the converged vectors (orthonormal vectors, real eigenvalues);
 * a dense LAPACK zheevd for small orders. The VJP is in zeigsh_vjp.c. */
#include "../solvers/zsolver.h"
#include "eigs_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLA_HAVE_ARPACK
#include <arpack.h>
#endif

#ifdef SLA_HAVE_LAPACK
void zheevd_(const char *jobz, const char *uplo, const int *n, sla__z *a, const int *lda, double *w, sla__z *work,
             const int *lwork, double *rwork, const int *lrwork, int *iwork, const int *liwork, int *info, size_t,
             size_t);

/* All eigenvalues (ascending) and eigenvectors (in place) of the Hermitian
 * m x m matrix H (ld m; the lower triangle is read). Lower, not upper:
 * with 'U', zhetrd's zlatrd calls zgemv('N') with x a row of H at stride
 * m, and OpenBLAS 0.3.21's zgemv_n (HASWELL/SKYLAKEX/SANDYBRIDGE kernels,
 * rows % 4 == 2) loads one element past the last x, unused: up to m
 * entries past the end of H, which faults when H ends at an unmapped page
 * (an allocator that returns exact-size buffers; ASan). With 'L' that
 * element lies inside H. */
static sla_status dense_heev(sla_ctx *ctx, int m, sla__z *H, double *w)
{
    int info = 0, lwork = -1, lrwork = -1, liwork = -1, iw = 0;
    sla__z wq = 0;
    double rq = 0;
    zheevd_("V", "L", &m, H, &m, w, &wq, &lwork, &rq, &lrwork, &iw, &liwork, &info, 1, 1);
    if (info != 0) return sla__error(ctx, SLA_ERR_ARGUMENT, "zeigsh: LAPACK zheevd workspace query failed (info %d)", info);
    lwork = (int)creal(wq) + 1;
    lrwork = (int)rq + 1;
    liwork = iw + 1;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__z *work = sla__ctx_malloc(ctx, (size_t)lwork, sizeof *work, "zeigsh dense work space");
    double *rwork = work ? sla__ctx_malloc(ctx, (size_t)lrwork, sizeof *rwork, "zeigsh dense work space") : NULL;
    int *iwork = rwork ? sla__ctx_malloc(ctx, (size_t)liwork, sizeof *iwork, "zeigsh dense work space") : NULL;
    sla_status st = SLA_ERR_NOMEM;
    if (iwork) {
        zheevd_("V", "L", &m, H, &m, w, work, &lwork, rwork, &lrwork, iwork, &liwork, &info, 1, 1);
        st = info ? sla__error(ctx, SLA_ERR_ARGUMENT, "zeigsh: LAPACK zheevd failed (info %d)", info) : SLA_OK;
    }
    sla__free(&a, work);
    sla__free(&a, rwork);
    sla__free(&a, iwork);
    return st;
}
#endif

/* An upper bound of the spectral radius: the largest absolute row sum. */
static double row_norm(const sla_matrix *A)
{
    double h = 0.0;
    for (sla_int i = 0; i < A->nrows; i++) {
        double s = 0.0;
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) s += cabs(sla__zval(A, 0, p));
        h = fmax(h, s);
    }
    return h;
}

typedef struct zsort_item {
    double key;
    sla_int i;
} zsort_item;

static int cmp_key_down(const void *a, const void *b)
{
    double x = ((const zsort_item *)a)->key, y = ((const zsort_item *)b)->key;
    return x > y ? -1 : x < y;
}

/* Makes the largest-magnitude entry of v (the first, on ties) real and
 * positive: v <- v conj(v_r) / |v_r|. */
static void fix_phase(sla_int n, sla__z *v)
{
    sla_int rm = 0;
    double best = -1.0;
    for (sla_int r = 0; r < n; r++) {
        double m = cabs(v[r]);
        if (m > best) {
            best = m;
            rm = r;
        }
    }
    if (!(best > 0.0)) return;
    sla__z ph = conj(v[rm]) / best;
    for (sla_int r = 0; r < n; r++) v[r] *= ph;
    v[rm] = creal(v[rm]);
}

#ifdef SLA_HAVE_ARPACK
/* What the ARPACK run works on: y = A x, or y = (A - sigma I)^-1 x from
 * the backend's factor of M = A - sigma I. */
typedef struct zeig_op {
    const sla_matrix *A; /* one-array view */
    const sla__zdirect_ops *lu;
    void *sym, *num;
    sla_matrix *M;
    sla_int n;
    int nt;
} zeig_op;

static void drop_factor(zeig_op *E)
{
    if (E->num) E->lu->free_num(E->num);
    if (E->sym) E->lu->free_sym(E->sym);
    E->num = E->sym = NULL;
    sla_matrix_destroy(&E->M);
}

/* A - sigma I as a new one-array complex128 matrix (the diagonal added to
 * the pattern where it is missing). */
static sla_status shifted_matrix(sla_ctx *ctx, const sla_matrix *V, double sigma, sla_matrix **out)
{
    const sla_int n = V->nrows;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_int missing = 0;
    for (sla_int i = 0; i < n; i++)
        if (sla__find(V, i, i) < 0) missing++;
    sla_int nnz = V->nnz + missing;
    sla_int *rp = sla__ctx_malloc(ctx, (size_t)n + 1, sizeof *rp, "zeigsh shifted matrix");
    sla_int *ci = rp ? sla__ctx_malloc(ctx, (size_t)nnz, sizeof *ci, "zeigsh shifted matrix") : NULL;
    sla__z *vx = ci ? sla__ctx_malloc(ctx, (size_t)nnz, sizeof *vx, "zeigsh shifted matrix") : NULL;
    sla_status st = SLA_ERR_NOMEM;
    if (vx) {
        sla_int q = 0;
        rp[0] = 0;
        for (sla_int i = 0; i < n; i++) {
            bool diag = false;
            for (sla_int p = V->rowptr[i]; p < V->rowptr[i + 1]; p++) {
                sla_int j = V->colind[p];
                if (!diag && j > i) { /* the missing diagonal goes before */
                    ci[q] = i;
                    vx[q++] = -sigma;
                    diag = true;
                }
                ci[q] = j;
                vx[q++] = sla__zval(V, 0, p) - (j == i ? sigma : 0.0);
                if (j == i) diag = true;
            }
            if (!diag) {
                ci[q] = i;
                vx[q++] = -sigma;
            }
            rp[i + 1] = q;
        }
        st = sla_matrix_from_csr(ctx, n, n, rp, ci, SLA_C128, 1, vx, SLA_COPY, out);
    }
    sla__free(&a, rp);
    sla__free(&a, ci);
    sla__free(&a, vx);
    return st;
}

/* The backend's factor of A - sigma I; when that is singular (sigma an
 * eigenvalue), sigma moves by dir 1e-8, 1e-6, 1e-4 ||A||; *moved is the
 * shift added (0 if none). */
static sla_status factor_near(sla_ctx *ctx, zeig_op *E, double *sigma, double dir, double norm, double *moved)
{
    sla_status st = SLA_ERR_SINGULAR;
    *moved = 0.0;
    for (double f = 0.0; st == SLA_ERR_SINGULAR && f < 1e-3; f = f ? f * 100.0 : 1e-8) {
        drop_factor(E);
        *moved = dir * f * norm;
        sla__direct_opts dopt = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = E->nt};
        st = shifted_matrix(ctx, E->A, *sigma + *moved, &E->M);
        if (!st) st = E->lu->analyze(ctx, E->M, &dopt, &E->sym);
        if (!st) st = E->lu->factor(ctx, E->sym, E->M, 0, &E->num);
    }
    if (st) drop_factor(E);
    else *sigma += *moved;
    return st;
}

/* y = OP x */
static sla_status op_apply(sla_ctx *ctx, const zeig_op *E, const sla__z *x, sla__z *y)
{
    if (!E->num) {
        sla__zspmv(E->A, 0, 0, x, y, E->nt);
        return SLA_OK;
    }
    return E->lu->solve(ctx, E->sym, E->num, 0, 1, x, E->n, y, E->n);
}

typedef struct zarnoldi {
    int n, nev, ncv, maxiter, mode;
    const char *which;
    double tol;
    sla__z sigma;
    const double *v0;
} zarnoldi;

/* The reverse-communication loop and the extraction (lock held): the
 * converged Ritz values d (nconv) and vectors Z (n x nconv). */
static sla_status arnoldi(sla_ctx *ctx, const zeig_op *E, const zarnoldi *R, sla__z *d, sla__z *Z, int *nconv,
                          sla_int *iters, sla_int *nops, bool *maxit)
{
    const int n = R->n, ncv = R->ncv, nev = R->nev;
    const size_t nn = (size_t)n;
    const int lworkl = 3 * ncv * ncv + 5 * ncv;
    sla_allocator a = sla__ctx_alloc(ctx);
    const char *lw = "zeigsh work space";
    sla__z *resid = sla__ctx_malloc(ctx, nn, sizeof *resid, lw);
    sla__z *V = resid ? sla__ctx_malloc(ctx, nn * (size_t)ncv, sizeof *V, "zeigsh Arnoldi basis") : NULL;
    sla__z *workd = V ? sla__ctx_malloc(ctx, 3 * nn, sizeof *workd, lw) : NULL;
    sla__z *workl = workd ? sla__ctx_malloc(ctx, (size_t)lworkl, sizeof *workl, lw) : NULL;
    sla__z *workev = workl ? sla__ctx_malloc(ctx, 2 * (size_t)ncv, sizeof *workev, lw) : NULL;
    double *rwork = workev ? sla__ctx_malloc(ctx, (size_t)ncv, sizeof *rwork, lw) : NULL;
    int *select = rwork ? sla__ctx_calloc(ctx, (size_t)ncv, sizeof *select, lw) : NULL;
    sla_status st = SLA_OK;
    if (!select) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    if (R->v0) {
        for (int i = 0; i < n; i++) resid[i] = R->v0[i];
    } else {
        sla__eig_start(2 * (sla_int)n, NULL, (double *)workd); /* n complex numbers */
        memcpy(resid, workd, nn * sizeof *resid);
    }
    int iparam[11] = {0}, ipntr[14] = {0};
    iparam[0] = 1;
    iparam[2] = R->maxiter;
    iparam[6] = R->mode;
    int ido = 0, info = 1;
    *nops = 0;
    for (;;) {
        znaupd_c(&ido, "I", n, R->which, nev, R->tol, resid, ncv, V, n, iparam, ipntr, workd, workl, lworkl, rwork,
                 &info);
        if (ido != -1 && ido != 1) break;
        (*nops)++;
        sla__z *y = workd + ipntr[1] - 1;
        if ((st = op_apply(ctx, E, workd + ipntr[0] - 1, y))) goto done;
        if (!sla__zall_finite(n, y)) {
            st = sla__error(ctx, SLA_ERR_VALUE, "zeigsh: the operator produced NaN/Inf");
            goto done;
        }
    }
    *iters = iparam[2];
    *maxit = info == 1;
    if (info < 0 || info == 3) {
        st = sla__arpack_fail(ctx, "zeigsh", "znaupd", info);
        goto done;
    }
    *nconv = iparam[4] < nev ? iparam[4] : nev;
    if (*nconv > 0) {
        int info2 = 0;
        zneupd_c(1, "A", select, d, Z, n, R->sigma, workev, "I", n, R->which, nev, R->tol, resid, ncv, V, n, iparam,
                 ipntr, workd, workl, lworkl, rwork, &info2);
        if (info2 != 0) {
            st = sla__error(ctx, SLA_ERR_ARGUMENT, "zeigsh: ARPACK zneupd failed (info %d)", info2);
            goto done;
        }
        *nconv = iparam[4] < nev ? iparam[4] : nev;
    }
done:
    sla__free(&a, resid);
    sla__free(&a, V);
    sla__free(&a, workd);
    sla__free(&a, workl);
    sla__free(&a, workev);
    sla__free(&a, rwork);
    sla__free(&a, select);
    return st;
}
#endif

#ifdef SLA_HAVE_LAPACK
/* Rayleigh-Ritz on span(X) (n x m): X orthonormalized (Gram-Schmidt,
 * twice), H = X^H A X diagonalized, X <- X Y; d receives the m eigenvalues
 * ascending. */
static sla_status rayleigh_ritz(sla_ctx *ctx, const sla_matrix *A, sla_int n, int m, sla__z *X, double *d, int nt)
{
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__z *W = sla__ctx_malloc(ctx, (size_t)n * (size_t)m, sizeof *W, "zeigsh Rayleigh-Ritz");
    sla__z *H = W ? sla__ctx_malloc(ctx, (size_t)m * (size_t)m, sizeof *H, "zeigsh Rayleigh-Ritz") : NULL;
    sla_status st = H ? SLA_OK : SLA_ERR_NOMEM;
    for (int j = 0; j < m && !st; j++) {
        sla__z *xj = X + (size_t)j * (size_t)n;
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < j; i++) {
                const sla__z *xi = X + (size_t)i * (size_t)n;
                sla__zaxpy(n, -sla__zdotc(n, xi, xj, nt), xi, xj, nt);
            }
        double nr = sla__znrm2(n, xj, nt);
        if (!(nr > 1e-8))
            st = sla__error(ctx, SLA_ERR_ARGUMENT, "zeigsh: Ritz vector %d is linearly dependent on the others", j);
        else
            for (sla_int r = 0; r < n; r++) xj[r] /= nr;
    }
    for (int j = 0; j < m && !st; j++) {
        sla__zspmv(A, 0, 0, X + (size_t)j * (size_t)n, W + (size_t)j * (size_t)n, nt);
        for (int i = j; i < m; i++) /* the lower triangle, H_ij = x_i^H A x_j (with A x_j in W) */
            H[(size_t)j * (size_t)m + (size_t)i] = sla__zdotc(n, X + (size_t)i * (size_t)n, W + (size_t)j * (size_t)n, nt);
    }
    if (!st) st = dense_heev(ctx, m, H, d);
    if (!st) {
        /* X <- X Y, column by column through W */
        for (int j = 0; j < m; j++) {
            sla__z *wj = W + (size_t)j * (size_t)n;
            memset(wj, 0, (size_t)n * sizeof *wj);
            for (int i = 0; i < m; i++) sla__zaxpy(n, H[(size_t)j * (size_t)m + (size_t)i], X + (size_t)i * (size_t)n, wj, nt);
        }
        memcpy(X, W, (size_t)n * (size_t)m * sizeof *X);
    }
    sla__free(&a, W);
    sla__free(&a, H);
    return st;
}

/* The preference of eigenvalue l for the set `which` (with a shift: the
 * eigenvalues of (A - sigma I)^-1 that ARPACK's selection compares): the k
 * largest keys are taken. */
static double pick_key(sla_eig_which which, bool si, double sigma, double l)
{
    if (si) {
        double mu = l == sigma ? INFINITY : 1.0 / (l - sigma);
        switch (which) {
        case SLA_EIG_LA: return mu;        /* nearest above sigma */
        case SLA_EIG_SA: return -mu;       /* nearest below */
        default: return fabs(mu);          /* nearest */
        }
    }
    switch (which) {
    case SLA_EIG_LA: return l;
    case SLA_EIG_SA: return -l;
    case SLA_EIG_LM: return fabs(l);
    case SLA_EIG_SM: return -fabs(l);
    }
    return 0.0;
}

/* The dense path: all eigenpairs of the n x n A by zheevd; the k that
 * `which` (and sigma) select go to w (ascending) and V. */
static sla_status dense_path(sla_ctx *ctx, const sla_matrix *A, const sla_eigsh_options *o, sla_int k, double sigma,
                             double *w, sla__z *V)
{
    const sla_int n = A->nrows;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__z *D = sla__ctx_malloc(ctx, (size_t)n * (size_t)n, sizeof *D, "zeigsh dense matrix");
    double *ev = D ? sla__ctx_malloc(ctx, (size_t)n, sizeof *ev, "zeigsh dense eigenvalues") : NULL;
    zsort_item *it = ev ? sla__ctx_malloc(ctx, (size_t)n, sizeof *it, "zeigsh dense eigenvalues") : NULL;
    sla_status st = it ? SLA_OK : SLA_ERR_NOMEM;
    if (!st) st = sla_matrix_to_dense_z(ctx, A, 0, (sla_complex *)D, n);
    if (!st) st = dense_heev(ctx, (int)n, D, ev);
    if (!st) {
        for (sla_int i = 0; i < n; i++) it[i] = (zsort_item){pick_key(o->which, o->shift_invert, sigma, ev[i]), i};
        qsort(it, (size_t)n, sizeof *it, cmp_key_down);
        /* the k picked, back in ascending order of the eigenvalue (= of the index) */
        for (sla_int i = 0; i < k; i++) it[i].key = -(double)it[i].i;
        qsort(it, (size_t)k, sizeof *it, cmp_key_down);
        for (sla_int i = 0; i < k; i++) {
            w[i] = ev[it[i].i];
            memcpy(V + (size_t)i * (size_t)n, D + (size_t)it[i].i * (size_t)n, (size_t)n * sizeof *V);
        }
    }
    sla__free(&a, D);
    sla__free(&a, ev);
    sla__free(&a, it);
    return st;
}
#endif

/* The argument checks of sla_zeigsh (and its VJP): A square and Hermitian
 * to 1e-12 relative, finite. *view is value array ib. */
sla_status sla__zeigsh_check(sla_ctx *ctx, const char *who, const sla_matrix *A, sla_int ib, sla_matrix *view)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: A is NULL", who);
    sla_status st = sla__check_square_index(ctx, who, A, ib);
    if (st) return st;
    sla__single_view(A, ib, view);
    if ((st = sla_matrix_check_values(ctx, view, 0))) return st;
    sla_matrix_props pr;
    if ((st = sla_matrix_properties(ctx, view, 0, 1e-12, &pr))) return st;
    if (!pr.hermitian)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "%s: the matrix is not Hermitian (max |a_ij - conj(a_ji)| / max |a| = %.3g)%s", who,
                          pr.hermitian_error,
                          pr.symmetric ? "; it is complex symmetric (A = A^T), whose eigenvalues are complex: "
                                         "use a general eigensolver"
                                       : "");
    return SLA_OK;
}

static sla_status check_opts(sla_ctx *ctx, const sla_eigsh_options *o, sla_int k, sla_int n)
{
    if (k < 1 || k >= n)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "zeigsh: k = %lld must be in [1, n) with n = %lld (use a dense eigensolver for all "
                          "eigenpairs)",
                          (long long)k, (long long)n);
    if (o->which < SLA_EIG_LA || o->which > SLA_EIG_SM)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "zeigsh: unknown which = %d", (int)o->which);
    if (o->shift_invert && !isfinite(o->sigma)) return sla__error(ctx, SLA_ERR_VALUE, "zeigsh: sigma is not finite");
    if (!(o->tol >= 0.0) || !isfinite(o->tol))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "zeigsh: tol = %g must be >= 0", o->tol);
    if (o->ncv != 0 && (o->ncv <= k || o->ncv > n))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "zeigsh: ncv = %lld must be in (k, n] = (%lld, %lld]",
                          (long long)o->ncv, (long long)k, (long long)n);
    if (o->maxiter < 0) return sla__error(ctx, SLA_ERR_ARGUMENT, "zeigsh: negative maxiter");
    if (o->v0 && !sla__all_finite(n, o->v0)) return sla__error(ctx, SLA_ERR_VALUE, "zeigsh: v0 has NaN/Inf");
    sla_method m = o->factor_method;
    if ((o->shift_invert || o->which == SLA_EIG_SM) && m != SLA_METHOD_AUTO &&
        (m < SLA_METHOD_CHOLESKY || m > SLA_METHOD_SUPERLU))
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "zeigsh: factor_method %s is not a direct method (lu, umfpack, klu, superlu or auto)",
                          sla_method_name(m));
    return SLA_OK;
}

/* Rayleigh-Ritz clean-up (with LAPACK), normalization, phase, residuals
 * of the m computed pairs in w, Z; writes w and V (n x k), NaN past m. */
static sla_status finish(sla_ctx *ctx, const sla_matrix *A, sla_int k, int m, bool rr, double *d, sla__z *Z,
                         double *w, sla__z *V, double *maxres, int nt)
{
    const sla_int n = A->nrows;
    sla_status st = SLA_OK;
#ifdef SLA_HAVE_LAPACK
    if (rr && m > 0 && (st = rayleigh_ritz(ctx, A, n, m, Z, d, nt))) return st;
#else
    (void)rr;
#endif
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__z *r = sla__ctx_malloc(ctx, (size_t)n, sizeof *r, "zeigsh residual");
    if (!r) return SLA_ERR_NOMEM;
    *maxres = 0.0;
    for (sla_int i = 0; i < k; i++) {
        sla__z *v = V + (size_t)i * (size_t)n;
        if (i >= m) {
            w[i] = NAN;
            for (sla_int q = 0; q < n; q++) v[q] = NAN;
            continue;
        }
        w[i] = d[i];
        if (Z != V) memcpy(v, Z + (size_t)i * (size_t)n, (size_t)n * sizeof *v);
        double nv = sla__znrm2(n, v, nt);
        for (sla_int q = 0; q < n; q++) v[q] /= nv;
        fix_phase(n, v);
        sla__zspmv(A, 0, 0, v, r, nt); /* r = A v - l v */
        sla__zaxpy(n, -w[i], v, r, nt);
        *maxres = fmax(*maxres, sla__znrm2(n, r, nt));
    }
    sla__free(&a, r);
    return st;
}

sla_status sla__zeigsh_run(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_eigsh_options *opts, sla_int k,
                           double *w, sla_complex *Vout, sla_eigsh_info *info, const sla__zeigsh_cfg *cfg)
{
    double t0 = sla__now();
    if (info) memset(info, 0, sizeof *info);
    sla_eigsh_options o;
    if (opts) o = *opts;
    else sla_eigsh_options_default(&o);
    o.k = k;
    sla_matrix Av;
    sla_status st = sla__zeigsh_check(ctx, "zeigsh", A, ib, &Av);
    if (st) return st;
    const sla_int n = A->nrows;
    if ((st = check_opts(ctx, &o, k, n))) return st;
    if (!w || !Vout) return sla__error(ctx, SLA_ERR_ARGUMENT, "zeigsh: w or V is NULL");
    if (sla__arpack_too_large(n, o.ncv, k))
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "zeigsh: n or ncv too large for ARPACK's 32-bit indices");
    sla__z *V = (sla__z *)Vout;
    const int nt = sla__threads(ctx);
    const bool want_si = o.shift_invert || o.which == SLA_EIG_SM;
    double sigma = o.shift_invert ? o.sigma : 0.0, norm = row_norm(&Av), tf = 0.0;
    if (!(norm > 0.0)) norm = 1.0;
    const int ncv = sla__arpack_ncv(o.ncv, k, n);
    char note[192] = "", method[40] = "arpack";
    bool dense = false;
#ifdef SLA_HAVE_LAPACK
    if (cfg->dense_n >= 0 && (n <= cfg->dense_n || ncv >= n)) {
        dense = true;
        snprintf(note, sizeof note, "dense zheevd: n = %lld %s", (long long)n,
                 n <= cfg->dense_n ? "is small" : "<= ncv (the Krylov basis would span the whole space)");
    } else if (want_si && !cfg->lu && n <= cfg->dense_si_n) {
        dense = true;
        snprintf(note, sizeof note, "dense zheevd: %s needs a complex factorization, which this build lacks",
                 o.shift_invert ? "shift-invert" : "SM");
    }
    if (dense) {
        snprintf(method, sizeof method, "dense zheevd");
        st = dense_path(ctx, &Av, &o, k, sigma, w, V);
        double maxres = 0.0;
        if (!st) st = finish(ctx, &Av, k, (int)k, false, w, V, w, V, &maxres, nt);
        if (st) return st;
        if (info) {
            snprintf(info->method, sizeof info->method, "%s", method);
            snprintf(info->note, sizeof info->note, "%s", note);
            info->converged = true;
            info->nconv = k;
            info->max_residual = maxres;
            info->seconds = sla__now() - t0;
        }
        return sla__ok(ctx, SLA_OK);
    }
#endif
    (void)dense, (void)ncv;
#ifndef SLA_HAVE_ARPACK
    (void)t0, (void)tf, (void)want_si, (void)sigma, (void)ncv, (void)nt, (void)V, (void)note, (void)method;
    return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                      "zeigsh needs ARPACK, which was not found when sla was configured (install libarpack2-dev "
                      "and reconfigure)");
#else
    zeig_op E = {.A = &Av, .lu = cfg->lu, .n = n, .nt = nt};
    const char *which = o.which == SLA_EIG_LA ? "LR" : o.which == SLA_EIG_SA ? "SR" : o.which == SLA_EIG_LM ? "LM" : "SM";
    sla_eigsh_options run = o;
    bool si = false;
    if (want_si && cfg->lu) {
        double moved = 0.0, t1 = sla__now();
        st = factor_near(ctx, &E, &sigma, o.shift_invert && o.which == SLA_EIG_LA ? -1.0 : 1.0, norm, &moved);
        tf = sla__now() - t1;
        if (st) {
            char msg[400];
            snprintf(msg, sizeof msg, "%s", sla_ctx_message(ctx));
            return sla__error(ctx, st, "zeigsh: factorization of A - sigma I (sigma = %g) with %s failed: %s", sigma,
                              cfg->lu->name, msg);
        }
        si = true;
        which = o.which == SLA_EIG_LA ? "LR" : o.which == SLA_EIG_SA ? "SR" : "LM";
        snprintf(method, sizeof method, "arpack shift-invert (%s)", cfg->lu->name);
        if (moved != 0.0)
            snprintf(note, sizeof note, "A - %.6g I is singular: shift-invert around sigma = %.17g instead",
                     sigma - moved, sigma);
    } else if (o.shift_invert) {
        return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                          "zeigsh: shift-invert needs a complex direct solver (%s), which this build does not "
                          "have, and n = %lld is over the dense limit %lld",
                          sla_method_name(o.factor_method == SLA_METHOD_AUTO ? SLA_METHOD_LU : o.factor_method),
                          (long long)n, (long long)cfg->dense_si_n);
    } else if (want_si) {
        run.ncv = o.ncv ? o.ncv : (4 * k + 1 > 64 ? 4 * k + 1 : 64);
        if (run.ncv > n) run.ncv = n;
        snprintf(note, sizeof note,
                 "SM: no complex factorization in this build; regular mode with ncv = %lld (slow for clustered "
                 "small eigenvalues)",
                 (long long)run.ncv);
    }
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__z *d = sla__ctx_malloc(ctx, (size_t)k + 1, sizeof *d, "zeigsh Ritz values");
    sla__z *Z = d ? sla__ctx_malloc(ctx, (size_t)n * ((size_t)k + 1), sizeof *Z, "zeigsh eigenvectors") : NULL;
    double *dr = Z ? sla__ctx_malloc(ctx, (size_t)k + 1, sizeof *dr, "zeigsh Ritz values") : NULL;
    zsort_item *it = dr ? sla__ctx_malloc(ctx, (size_t)k + 1, sizeof *it, "zeigsh Ritz values") : NULL;
    int nconv = 0;
    sla_int iters = 0, nops = 0;
    bool maxit = false;
    double maxres = 0.0;
    st = it ? SLA_OK : SLA_ERR_NOMEM;
    if (!st) {
        zarnoldi R = {.n = (int)n, .nev = (int)k, .ncv = sla__arpack_ncv(run.ncv, k, n),
                      .maxiter = sla__arpack_maxiter(o.maxiter, n), .mode = si ? 3 : 1, .which = which,
                      .tol = o.tol, .sigma = sigma, .v0 = o.v0};
        int bt = sla__arpack_enter(ctx);
        st = arnoldi(ctx, &E, &R, d, Z, &nconv, &iters, &nops, &maxit);
        sla__arpack_leave(bt);
    }
    if (!st) {
        /* the Ritz values of a Hermitian operator are real */
        for (int i = 0; i < nconv && !st; i++)
            if (fabs(cimag(d[i])) > 1e-6 * norm)
                st = sla__error(ctx, SLA_ERR_VALUE,
                                "zeigsh: Ritz value %d = %g%+gi is not real (|Im| = %.3g ||A||): the operator is not "
                                "Hermitian to working accuracy",
                                i, creal(d[i]), cimag(d[i]), fabs(cimag(d[i])) / norm);
    }
    if (!st) {
        /* ascending real parts (Rayleigh-Ritz sorts them itself) */
        for (int i = 0; i < nconv; i++) it[i] = (zsort_item){-creal(d[i]), i};
        qsort(it, (size_t)nconv, sizeof *it, cmp_key_down);
        for (int i = 0; i < nconv; i++) {
            dr[i] = creal(d[it[i].i]);
            memcpy(V + (size_t)i * (size_t)n, Z + (size_t)it[i].i * (size_t)n, (size_t)n * sizeof *V);
        }
        memcpy(Z, V, (size_t)n * (size_t)nconv * sizeof *Z);
        st = finish(ctx, &Av, k, nconv, true, dr, Z, w, V, &maxres, nt);
    }
    sla__free(&a, d);
    sla__free(&a, Z);
    sla__free(&a, dr);
    sla__free(&a, it);
    drop_factor(&E);
    if (st) return st;
    if (info) {
        snprintf(info->method, sizeof info->method, "%s", method);
        snprintf(info->note, sizeof info->note, "%s", note);
        info->converged = nconv >= k;
        info->nconv = nconv;
        info->iterations = iters;
        info->nops = nops;
        info->max_residual = maxres;
        info->factor_seconds = tf;
        info->seconds = sla__now() - t0;
    }
    if (nconv < k)
        return sla__error(ctx, SLA_NOT_CONVERGED,
                          "zeigsh: only %d of %lld eigenpairs converged%s (try a larger maxiter or ncv, or "
                          "shift-invert)",
                          nconv, (long long)k, maxit ? " within maxiter" : "");
    return sla__ok(ctx, SLA_OK);
#endif
}

sla_status sla_zeigsh(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_eigsh_options *opts, sla_int k,
                      double *w, sla_complex *V, sla_eigsh_info *info)
{
    sla_method m = opts ? opts->factor_method : SLA_METHOD_AUTO;
    sla__zeigsh_cfg cfg = {.lu = sla__zdirect_backend(m == SLA_METHOD_AUTO ? SLA_METHOD_LU : m),
                           .dense_n = SLA__ZEIGSH_DENSE_N, .dense_si_n = SLA__ZEIGSH_DENSE_SI_N};
    return sla__zeigsh_run(ctx, A, ib, opts, k, w, V, info, &cfg);
}
