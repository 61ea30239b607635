/* Symmetric eigenpairs by ARPACK's implicitly restarted Lanczos (regular
 * mode on A, or shift-invert on (A - sigma I)^-1 through a direct solver).
 * Their VJP is in eigsh_vjp.c. */
#include "../solvers/direct.h"
#include "../solvers/krylov.h"
#include "eigs_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sla_eig_which_name(sla_eig_which w)
{
    switch (w) {
    case SLA_EIG_LA: return "LA";
    case SLA_EIG_SA: return "SA";
    case SLA_EIG_LM: return "LM";
    case SLA_EIG_SM: return "SM";
    }
    return "unknown";
}

void sla_eigsh_options_default(sla_eigsh_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->k = 6;
    o->which = SLA_EIG_LM;
    o->factor_method = SLA_METHOD_AUTO;
    o->degenerate_tol = 1e-9;
    o->grad_rtol = 1e-12;
}

size_t sla_eigsh_options_size(void) { return sizeof(sla_eigsh_options); }
size_t sla_eigsh_info_size(void) { return sizeof(sla_eigsh_info); }

static sla_status check_opts(sla_ctx *ctx, const sla_eigsh_options *o, sla_int n)
{
    if (o->k < 1 || o->k >= n)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "eigsh: k = %lld must be in [1, n) with n = %lld (use a dense eigensolver for "
                          "all eigenpairs)",
                          (long long)o->k, (long long)n);
    if (o->which < SLA_EIG_LA || o->which > SLA_EIG_SM)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh: unknown which = %d", (int)o->which);
    if (o->shift_invert && !isfinite(o->sigma))
        return sla__error(ctx, SLA_ERR_VALUE, "eigsh: sigma is not finite");
    if (!(o->tol >= 0.0) || !isfinite(o->tol))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh: tol = %g must be >= 0", o->tol);
    if (o->ncv != 0 && (o->ncv <= o->k || o->ncv > n))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh: ncv = %lld must be in (k, n] = (%lld, %lld]",
                          (long long)o->ncv, (long long)o->k, (long long)n);
    if (!(o->memory_limit >= 0.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh: memory_limit = %g must be >= 0", o->memory_limit);
    if (o->maxiter < 0 || o->grad_maxiter < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh: negative maxiter");
    if (!(o->degenerate_tol >= 0.0) || !(o->grad_rtol > 0.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "eigsh: degenerate_tol = %g must be >= 0 and grad_rtol = %g > 0", o->degenerate_tol,
                          o->grad_rtol);
    if (o->shift_invert || o->which == SLA_EIG_SM) {
        sla_method m = o->factor_method;
        if (m != SLA_METHOD_AUTO && (m < SLA_METHOD_CHOLESKY || m > SLA_METHOD_SUPERLU))
            return sla__error(ctx, SLA_ERR_ARGUMENT,
                              "eigsh: factor_method %s is not a direct method (cholesky, ldlt, lu, umfpack, "
                              "klu, superlu or auto)",
                              sla_method_name(m));
    }
    return SLA_OK;
}

static sla_status check_common(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla_matrix *V)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh: A is NULL");
    sla_status st = sla__check_square_index(ctx, "eigsh", A, ib);
    return st ? st : sla__symmetric_view(ctx, "eigsh", A, ib, V);
}

#ifdef SLA_HAVE_ARPACK

/* sgn (A - sigma I), sgn = +1 or -1, as a new one-array float64 matrix (the
 * diagonal added to the pattern where it is missing). */
static sla_status shifted_matrix(sla_ctx *ctx, const sla_matrix *V, double sigma, double sgn, sla_matrix **out)
{
    const sla_int n = V->nrows;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_int missing = 0;
    for (sla_int i = 0; i < n; i++)
        if (sla__find(V, i, i) < 0) missing++;
    sla_int nnz = V->nnz + missing;
    sla_int *rp = sla__ctx_malloc(ctx, (size_t)n + 1, sizeof *rp, "shifted matrix");
    sla_int *ci = rp ? sla__ctx_malloc(ctx, (size_t)nnz, sizeof *ci, "shifted matrix") : NULL;
    double *vx = ci ? sla__ctx_malloc(ctx, (size_t)nnz, sizeof *vx, "shifted matrix") : NULL;
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
                    vx[q++] = -sgn * sigma;
                    diag = true;
                }
                ci[q] = j;
                vx[q++] = sgn * (sla__val(V, 0, p) - (j == i ? sigma : 0.0));
                if (j == i) diag = true;
            }
            if (!diag) {
                ci[q] = i;
                vx[q++] = -sgn * sigma;
            }
            rp[i + 1] = q;
        }
        st = sla_matrix_from_csr(ctx, n, n, rp, ci, SLA_F64, 1, vx, SLA_COPY, out);
    }
    sla__free(&a, rp);
    sla__free(&a, ci);
    sla__free(&a, vx);
    return st;
}

static sla_status factor_with(sla_ctx *ctx, const sla_matrix *M, sla_method m, double memlim, sla_solver **S)
{
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = m;
    o.memory_limit = memlim;
    return sla_solver_create(ctx, M, &o, S);
}

/* The factorization of A - sigma I: auto tries Cholesky, LDL^T, LU. */
static sla_status shift_factor(sla_ctx *ctx, const sla_matrix *M, sla_method m, double memlim, sla_solver **S,
                               char *note, size_t nlen)
{
    if (m != SLA_METHOD_AUTO) return factor_with(ctx, M, m, memlim, S);
    sla_status st = factor_with(ctx, M, SLA_METHOD_CHOLESKY, memlim, S);
    if (st == SLA_ERR_NOT_SPD) {
        st = factor_with(ctx, M, SLA_METHOD_LDLT, memlim, S);
        if (st == SLA_ERR_SINGULAR) {
            snprintf(note, nlen, "shift-invert: A - sigma I indefinite, ldlt met a zero pivot; used lu");
            st = factor_with(ctx, M, SLA_METHOD_LU, memlim, S);
        }
    }
    return st;
}

typedef struct eig_op {
    const sla_matrix *A; /* one-array view */
    sla_solver *S;       /* shift-invert: factor of sgn (A - sigma I) */
    sla_matrix *M;       /* the matrix S factors (owned) */
    double sgn;          /* +1, or -1 when S factors sigma I - A (above the spectrum) */
    double memlim;       /* the factorizations' memory_limit (0: the solver's default) */
    sla_int n;
    int nt;
} eig_op;

static sla_status op_apply(sla_ctx *ctx, const eig_op *E, const double *x, double *y)
{
    if (!E->S) {
        sla__spmv(E->A, 0, x, y, E->nt);
        return SLA_OK;
    }
    /* the backend's triangular solves alone: ARPACK needs no residual
     * check per step, and the final pairs' residuals are computed on A */
    const sla__direct_ops *d;
    void *sym, *num;
    sla_status st;
    if (sla__solver_direct(E->S, 0, &d, &sym, &num)) st = d->solve(ctx, sym, num, false, 1, x, E->n, y, E->n);
    else if ((st = sla_solver_solve(ctx, E->S, 0, 1, x, E->n, y, E->n, NULL)) == SLA_NOT_CONVERGED) st = SLA_OK;
    if (!st && E->sgn < 0)
        for (sla_int i = 0; i < E->n; i++) y[i] = -y[i];
    return st;
}

/* The Lanczos run's operator: y = OP x (ido -1 or 1). */
static sla_status lanczos_apply(sla_ctx *ctx, void *op, int ido, const double *x, double *y, const double *bx,
                                double *scratch)
{
    (void)ido;
    (void)bx;
    (void)scratch;
    return op_apply(ctx, op, x, y);
}

/* Lanczos on E (regular mode 1 or shift-invert mode 3); writes the k
 * results sorted ascending. Takes the ARPACK lock. */
static sla_status arpack_locked(sla_ctx *ctx, const eig_op *E, const sla_eigsh_options *o, bool si, double sigma,
                                const char *which, double *evals, double *Z, int *nconv, sla_int *iters,
                                sla_int *nops, bool *maxit)
{
    sla__lanczos L = {.who = "eigsh", .tag = "eigsh", .n = (int)E->n, .nev = (int)o->k, .ncv = o->ncv,
                      .maxiter = o->maxiter, .mode = si ? 3 : 1, .which = which, .tol = o->tol, .sigma = sigma,
                      .v0 = o->v0, .apply = lanczos_apply, .op = (void *)E};
    sla__lanczos_out out = {0};
    sla_status st = sla__lanczos_run(ctx, &L, evals, Z, &out);
    *nconv = out.nconv;
    *iters = out.iters;
    *nops = out.nops;
    *maxit = out.maxit;
    return st;
}

/* ---- shifts outside the spectrum, and shifts moved off an eigenvalue ---- */

/* The Gershgorin interval [lo, hi] of V: every eigenvalue lies in it. */
static void gershgorin(const sla_matrix *V, double *lo, double *hi)
{
    double l = INFINITY, h = -INFINITY;
    for (sla_int i = 0; i < V->nrows; i++) {
        double d = 0.0, r = 0.0;
        for (sla_int p = V->rowptr[i]; p < V->rowptr[i + 1]; p++) {
            double a = sla__val(V, 0, p);
            if (V->colind[p] == i) d += a;
            else r += fabs(a);
        }
        l = fmin(l, d - r);
        h = fmax(h, d + r);
    }
    *lo = l;
    *hi = h;
}

#ifdef SLA_HAVE_LAPACK
void dstev_(const char *jobz, const int *n, double *d, double *e, double *z, const int *ldz, double *work,
            int *info, size_t);

/* m steps of Lanczos on A with full reorthogonalization from the start
 * vector: the extreme Ritz values and their residual norms beta_m |s_mj|
 * (each is within its residual of an eigenvalue; the smallest Ritz value
 * is never below the smallest eigenvalue, the largest never above the
 * largest). */
static sla_status lanczos_ends(sla_ctx *ctx, const eig_op *E, const double *v0, double norm, sla_int m,
                               double *tlo, double *rlo, double *thi, double *rhi)
{
    const sla_int n = E->n;
    if (m > n) m = n;
    sla_allocator a = sla__ctx_alloc(ctx);
    double *Q = sla__ctx_malloc(ctx, (size_t)n * (size_t)(m + 1), sizeof *Q, "eigsh Lanczos estimate");
    double *T = Q ? sla__ctx_malloc(ctx, (size_t)m * (size_t)(m + 4), sizeof *T, "eigsh Lanczos estimate") : NULL;
    if (!T) {
        sla__free(&a, Q);
        return SLA_ERR_NOMEM;
    }
    double *alpha = T, *beta = T + m, *work = T + 2 * m, *Z = T + 4 * m;
    double *q = Q, *w = Q + (size_t)n * (size_t)m;
    sla__eig_start(n, v0, q);
    double nq = sla__nrm2(n, q, E->nt);
    if (!(nq > 0.0)) nq = 1.0;
    for (sla_int i = 0; i < n; i++) q[i] /= nq;
    sla_int mk = 0;
    double blast = 0.0;
    for (sla_int j = 0; j < m; j++) {
        const double *qj = Q + (size_t)j * (size_t)n;
        sla__spmv(E->A, 0, qj, w, E->nt);
        alpha[j] = sla__dot(n, qj, w, E->nt);
        for (int pass = 0; pass < 2; pass++) /* w -= Q Q^T w, twice */
            for (sla_int i = 0; i <= j; i++) {
                const double *qi = Q + (size_t)i * (size_t)n;
                sla__axpy(n, -sla__dot(n, qi, w, E->nt), qi, w, E->nt);
            }
        double b = sla__nrm2(n, w, E->nt);
        mk = j + 1;
        blast = b;
        if (j + 1 == m || !(b > 1e-12 * norm)) break; /* done, or an invariant subspace */
        beta[j] = b;
        double *qn = Q + (size_t)(j + 1) * (size_t)n;
        for (sla_int i = 0; i < n; i++) qn[i] = w[i] / b;
    }
    int im = (int)mk, info = 0;
    dstev_("V", &im, alpha, beta, Z, &im, work, &info, 1);
    sla_status st = SLA_OK;
    if (info != 0) {
        st = sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh: LAPACK dstev failed (info %d) on the Lanczos matrix", info);
    } else {
        *tlo = alpha[0];
        *thi = alpha[mk - 1];
        *rlo = blast * fabs(Z[mk - 1]);
        *rhi = blast * fabs(Z[(size_t)(mk - 1) * (size_t)mk + (size_t)(mk - 1)]);
    }
    sla__free(&a, Q);
    sla__free(&a, T);
    return st;
}
#endif

/* Whether a failed factorization may give way to plain Lanczos: any
 * failure but running out of memory, unless that was the solver's refusal
 * of a factorization over its memory_limit (an allocation that failed is
 * reported, as everywhere in sla). */
static bool may_fall_back(sla_ctx *ctx, sla_status st)
{
    return st != SLA_ERR_NOMEM || strstr(sla_ctx_message(ctx), "memory_limit") != NULL;
}

static void drop_factor(eig_op *E)
{
    sla_solver_destroy(&E->S);
    sla_matrix_destroy(&E->M);
}

/* E->S = a factorization of sgn (A - sigma I) with method m (auto: Cholesky,
 * LDL^T, LU); nothing held on failure. */
static sla_status factor_at(sla_ctx *ctx, eig_op *E, double sigma, double sgn, sla_method m, char *note,
                            size_t nlen)
{
    drop_factor(E);
    E->sgn = sgn;
    sla_status st = shifted_matrix(ctx, E->A, sigma, sgn, &E->M);
    if (!st)
        st = m == SLA_METHOD_CHOLESKY ? factor_with(ctx, E->M, m, E->memlim, &E->S)
                                      : shift_factor(ctx, E->M, m, E->memlim, &E->S, note, nlen);
    if (st) drop_factor(E);
    return st;
}

/* A factorization of sgn (A - sigma I) with sigma outside the spectrum:
 * below it (sgn = +1, for SA) or above it (sgn = -1, for LA), certified by
 * a Cholesky factorization of sgn (A - sigma I) succeeding. The first
 * guess is the extreme Ritz value of a short Lanczos run moved out by
 * twice its residual (at least 1e-6 ||A||); each failure moves it ten
 * times further out, at most to just past the Gershgorin bound (where
 * sgn (A - sigma I) is diagonally dominant). Two bisections between the
 * last failing and the succeeding shift then bring sigma nearer the
 * spectrum. The factorization is redone with o->factor_method when that
 * is not auto or cholesky. Returns SLA_OK with E->S, E->M and *sigma, or
 * the status of the failure (message in ctx) for the caller to fall back;
 * *trials counts the factorizations. */
static sla_status outside_shift(sla_ctx *ctx, eig_op *E, const sla_eigsh_options *o, double sgn, double glo,
                                double ghi, double norm, double *sigma, int *trials, const char **est)
{
    const double edge = sgn > 0 ? glo : ghi, margin = 1e-6 * norm;
    double theta = edge, r = 0.0;
    *est = "Gershgorin bound";
    *trials = 0;
#ifdef SLA_HAVE_LAPACK
    {
        double tlo = 0.0, rlo = 0.0, thi = 0.0, rhi = 0.0;
        sla_status se = lanczos_ends(ctx, E, o->v0, norm, 40, &tlo, &rlo, &thi, &rhi);
        if (se == SLA_ERR_NOMEM) return se;
        if (!se) {
            theta = sgn > 0 ? tlo : thi;
            r = sgn > 0 ? rlo : rhi;
            *est = "Lanczos estimate";
        }
    }
#endif
    char note[8];
    double delta = fmax(2.0 * r, margin), fail_at = theta, s = theta;
    sla_status st = SLA_ERR_NOT_SPD;
    for (int t = 0; t < 16; t++) {
        s = theta - sgn * delta;
        bool last = sgn * (s - edge) <= 0.0;
        if (last) s = edge - sgn * margin;
        (*trials)++;
        st = factor_at(ctx, E, s, sgn, SLA_METHOD_CHOLESKY, note, sizeof note);
        if (!st || (st != SLA_ERR_NOT_SPD && st != SLA_ERR_SINGULAR) || last) break;
        fail_at = s;
        delta *= 10.0;
    }
    if (st == SLA_ERR_UNAVAILABLE && o->factor_method != SLA_METHOD_AUTO &&
        o->factor_method != SLA_METHOD_CHOLESKY) {
        /* no Cholesky in this build: just past the Gershgorin bound with the method asked for */
        s = edge - sgn * margin;
        (*trials)++;
        *est = "Gershgorin bound";
        char n2[192];
        if ((st = factor_at(ctx, E, s, sgn, o->factor_method, n2, sizeof n2))) return st;
        *sigma = s;
        return SLA_OK;
    }
    if (st) return st;
    /* nearer the spectrum: bisect between the success s and the failure */
    for (int b = 0; b < 2 && fabs(fail_at - s) > margin; b++) {
        double mid = 0.5 * (s + fail_at);
        eig_op keep = *E;
        E->S = NULL;
        E->M = NULL;
        (*trials)++;
        sla_status sb = factor_at(ctx, E, mid, sgn, SLA_METHOD_CHOLESKY, note, sizeof note);
        if (!sb) {
            sla_solver_destroy(&keep.S);
            sla_matrix_destroy(&keep.M);
            s = mid;
            continue;
        }
        E->S = keep.S;
        E->M = keep.M;
        if (sb == SLA_ERR_NOMEM && !may_fall_back(ctx, sb)) {
            drop_factor(E);
            return sb;
        }
        if (sb != SLA_ERR_NOT_SPD && sb != SLA_ERR_SINGULAR) break;
        fail_at = mid;
    }
    if (o->factor_method != SLA_METHOD_AUTO && o->factor_method != SLA_METHOD_CHOLESKY) {
        char n2[192];
        (*trials)++;
        if ((st = factor_at(ctx, E, s, sgn, o->factor_method, n2, sizeof n2))) return st;
    }
    *sigma = s;
    return SLA_OK;
}

/* The factorization of A - sigma I; when it is singular (sigma an
 * eigenvalue), sigma moves by dir 1e-8, 1e-6, 1e-4 ||A||. *moved: the
 * shift added (0 if none). */
static sla_status factor_near(sla_ctx *ctx, eig_op *E, sla_method m, double *sigma, double dir, double norm,
                              double *moved, char *note, size_t nlen)
{
    *moved = 0.0;
    sla_status st = factor_at(ctx, E, *sigma, 1.0, m, note, nlen);
    for (double f = 1e-8; st == SLA_ERR_SINGULAR && f < 1e-3; f *= 100.0) {
        *moved = dir * f * norm;
        st = factor_at(ctx, E, *sigma + *moved, 1.0, m, note, nlen);
    }
    if (!st) *sigma += *moved;
    return st;
}

/* One-RHS solves: a simplicial Cholesky factor solves faster than the
 * supernodal one. */
static sla_status prepare_factor(sla_ctx *ctx, eig_op *E)
{
    const sla__direct_ops *d;
    void *sym, *num;
    if (sla__solver_direct(E->S, 0, &d, &sym, &num) && d->make_simplicial)
        return d->make_simplicial(ctx, num);
    return SLA_OK;
}

/* LA's plain Lanczos restarts before shift-invert above the spectrum takes
 * over (plain Lanczos needs hundreds on the clustered top of a 2D
 * Laplacian, each costing about as much as a few solves). */
#define LA_BUDGET 50

/* The basis size of a plain Lanczos fallback: a larger one than the default. */
static sla_int fallback_ncv(const sla_eigsh_options *o, sla_int n)
{
    if (o->ncv) return o->ncv;
    sla_int m = 4 * o->k + 1 > 64 ? 4 * o->k + 1 : 64;
    return m < n ? m : n;
}

/* The first sentence of the context's message, for a note. */
static void short_message(sla_ctx *ctx, char *buf, size_t len)
{
    snprintf(buf, len, "%s", sla_ctx_message(ctx));
    char *p = strchr(buf, ';');
    if (p) *p = '\0';
}

/* Why no factorization was possible, for a note: "over memory_limit", or
 * the first sentence of the context's message. */
static void no_factor_msg(sla_ctx *ctx, sla_status st, char *buf, size_t len)
{
    if (st == SLA_ERR_NOMEM) {
        snprintf(buf, len, "over memory_limit");
        return;
    }
    short_message(ctx, buf, len);
}

/* Where no factorization is possible: LOBPCG (default preconditioner) for
 * the k smallest eigenvalues of sgn A, first on sgn A itself, then on
 * sgn (A - sigma I) with sigma just past the Gershgorin bound (positive
 * definite, so the preconditioner cannot break down). Accepted only when
 * all k pairs converge. evals ascending, Z (n x k) the eigenvectors; *sigma
 * the shift used (0 for none). SLA_OK, SLA_NOT_CONVERGED (nothing
 * written), or an error (SLA_ERR_NOMEM from an allocation is returned). */
static sla_status lobpcg_fallback(sla_ctx *ctx, const sla_matrix *V, sla_int k, double sgn, double edge,
                                  double norm, double *evals, double *Z, double *sigma, sla_eigsh_info *li)
{
    const sla_int n = V->nrows;
    if (3 * k >= n) return SLA_NOT_CONVERGED;
    sla_lobpcg_options lo;
    sla_lobpcg_options_default(&lo);
    lo.k = k;
    sla_status st = SLA_NOT_CONVERGED;
    for (int attempt = 0; attempt < 2; attempt++) {
        double s = attempt ? edge - sgn * 1e-6 * norm : 0.0;
        sla_matrix *M = NULL;
        st = shifted_matrix(ctx, V, s, sgn, &M);
        if (!st) st = sla_lobpcg(ctx, M, 0, &lo, evals, Z, n, NULL, li);
        sla_matrix_destroy(&M);
        if (st == SLA_ERR_NOMEM && !may_fall_back(ctx, st)) return st;
        if (st == SLA_OK) {
            /* l = s + sgn mu; for sgn = -1 the order reverses */
            for (sla_int i = 0; i < k; i++) evals[i] = s + sgn * evals[i];
            if (sgn < 0)
                for (sla_int i = 0, j = k - 1; i < j; i++, j--) {
                    double t = evals[i];
                    evals[i] = evals[j];
                    evals[j] = t;
                    double *zi = Z + (size_t)i * (size_t)n, *zj = Z + (size_t)j * (size_t)n;
                    for (sla_int r = 0; r < n; r++) {
                        t = zi[r];
                        zi[r] = zj[r];
                        zj[r] = t;
                    }
                }
            *sigma = s;
            return SLA_OK;
        }
    }
    return st < 0 ? st : SLA_NOT_CONVERGED;
}

#endif /* SLA_HAVE_ARPACK */

sla_status sla_eigsh(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_eigsh_options *opts, double *evals,
                     double *evecs, sla_int ldv, double *residuals, sla_eigsh_info *info)
{
    double t0 = sla__now();
    if (info) memset(info, 0, sizeof *info);
    if (sla__require_real(ctx, A, "sla_eigsh")) return SLA_ERR_UNSUPPORTED;
    sla_eigsh_options o;
    if (opts) o = *opts;
    else sla_eigsh_options_default(&o);
    sla_matrix V;
    sla_status st = check_common(ctx, A, ib, &V);
    if (st) return st;
    if ((st = check_opts(ctx, &o, A->nrows))) return st;
    if (!evals) return sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh: evals is NULL");
    if (evecs && ldv < A->nrows)
        return sla__error(ctx, SLA_ERR_DIMENSION, "eigsh: ldv = %lld < n = %lld", (long long)ldv,
                          (long long)A->nrows);
    if (o.v0 && !sla__all_finite(A->nrows, o.v0))
        return sla__error(ctx, SLA_ERR_VALUE, "eigsh: v0 has NaN/Inf");
#ifndef SLA_HAVE_ARPACK
    (void)evecs;
    (void)residuals;
    (void)t0;
    return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                      "eigsh needs ARPACK, which was not found when sla was configured (install "
                      "libarpack2-dev and reconfigure)");
#else
    if (sla__arpack_too_large(A->nrows, o.ncv, o.k))
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "eigsh: n or ncv too large for ARPACK's 32-bit indices");
    const sla_int n = A->nrows, k = o.k;
    sla_allocator a = sla__ctx_alloc(ctx);
    char note[192] = "", method[40] = "arpack", msg[400];
    eig_op E = {.A = &V, .S = NULL, .M = NULL, .sgn = 1.0, .memlim = o.memory_limit, .n = n, .nt = sla__threads(ctx)};
    bool si = false, try_lobpcg = false, lobpcg_done = false;
    double sigma = o.sigma, tf = 0.0, glo, ghi;
    const char *which = sla_eig_which_name(o.which);
    sla_eigsh_options run = o; /* the options of the ARPACK run (a fallback's larger ncv) */
    gershgorin(&V, &glo, &ghi);
    double norm = fmax(fabs(glo), fabs(ghi));
    if (!(norm > 0.0)) norm = 1.0;
    if (o.shift_invert || o.which == SLA_EIG_SM) {
        /* around the given sigma, or around 0 for the smallest magnitudes */
        if (!o.shift_invert) sigma = 0.0;
        double moved, t1 = sla__now();
        st = factor_near(ctx, &E, o.factor_method, &sigma, o.shift_invert && o.which == SLA_EIG_LA ? -1.0 : 1.0,
                         norm, &moved, note, sizeof note);
        tf = sla__now() - t1;
        if (!st) {
            si = true;
            which = o.which == SLA_EIG_SM ? "LM" : which;
            if (moved != 0.0)
                snprintf(note, sizeof note,
                         "A - %.6g I is singular (%.6g is an eigenvalue): shift-invert around sigma = %.17g "
                         "instead",
                         sigma - moved, sigma - moved, sigma);
        } else if (!o.shift_invert && may_fall_back(ctx, st)) {
            /* no factorization of A: plain Lanczos for the smallest magnitudes */
            no_factor_msg(ctx, st, msg, sizeof msg);
            run.ncv = fallback_ncv(&o, n);
            snprintf(note, sizeof note,
                     "SM: no factorization of A (%.70s); used plain Lanczos with ncv = %lld (slow for clustered "
                     "small eigenvalues)",
                     msg, (long long)run.ncv);
            st = SLA_OK;
        } else {
            snprintf(msg, sizeof msg, "%s", sla_ctx_message(ctx));
            return sla__error(ctx, st, "eigsh: factorization of A - sigma I (sigma = %g) failed: %s", sigma, msg);
        }
    } else if (o.which == SLA_EIG_SA) {
        /* the smallest algebraic: shift-invert below the spectrum, which
         * converges where plain Lanczos stalls on clustered small eigenvalues */
        int trials = 0;
        const char *est = "";
        double t1 = sla__now();
        st = outside_shift(ctx, &E, &o, 1.0, glo, ghi, norm, &sigma, &trials, &est);
        tf = sla__now() - t1;
        if (!st) {
            si = true;
            which = "LM";
            snprintf(note, sizeof note,
                     "SA: shift-invert below the spectrum, sigma = %.9g (%s, %d trial factorization%s)", sigma, est,
                     trials, trials == 1 ? "" : "s");
        } else if (!may_fall_back(ctx, st)) {
            drop_factor(&E);
            return st;
        } else {
            no_factor_msg(ctx, st, msg, sizeof msg);
            try_lobpcg = true;
            st = SLA_OK;
        }
    }
    if (si) {
        if ((st = prepare_factor(ctx, &E))) {
            drop_factor(&E);
            return st;
        }
        snprintf(method, sizeof method, "arpack shift-invert (%s)", sla_method_name(sla_solver_method(E.S)));
    }
    double *Z = sla__ctx_malloc(ctx, (size_t)n * (size_t)k, sizeof *Z, "eigsh eigenvectors");
    double *r = Z ? sla__ctx_malloc(ctx, (size_t)n, sizeof *r, "eigsh residual") : NULL;
    int nconv = 0;
    sla_int iters = 0, nops = 0;
    bool maxit = false;
    if (!r) st = SLA_ERR_NOMEM;
    /* LA: plain Lanczos first, within LA_BUDGET restarts when shift-invert
     * above the spectrum can take over */
    const sla_int full_maxiter = o.maxiter ? o.maxiter : (10 * n > 1000 ? 10 * n : 1000);
    const bool la_plain = !si && o.which == SLA_EIG_LA;
    if (la_plain && full_maxiter > LA_BUDGET) run.maxiter = LA_BUDGET;
    if (!st && try_lobpcg) {
        /* SA without a factorization: LOBPCG, then plain Lanczos with a larger basis */
        sla_eigsh_info li;
        memset(&li, 0, sizeof li);
        double shift = 0.0;
        sla_status sl = lobpcg_fallback(ctx, &V, k, 1.0, glo, norm, evals, Z, &shift, &li);
        if (sl == SLA_OK) {
            lobpcg_done = true;
            nconv = (int)k;
            iters = li.iterations;
            nops = li.nops;
            snprintf(method, sizeof method, "lobpcg");
            snprintf(note, sizeof note,
                     "SA: no factorization below the spectrum (%.60s); used LOBPCG on A - sigma I, sigma = %.9g",
                     msg, shift);
        } else if (sl < 0 && !may_fall_back(ctx, sl)) {
            st = sl;
        } else {
            run.ncv = fallback_ncv(&o, n);
            snprintf(note, sizeof note,
                     "SA: no factorization below the spectrum (%.60s), LOBPCG did not converge; used plain "
                     "Lanczos with ncv = %lld",
                     msg, (long long)run.ncv);
        }
    }
    if (!st && !lobpcg_done)
        st = arpack_locked(ctx, &E, &run, si, sigma, which, evals, Z, &nconv, &iters, &nops, &maxit);
    if (!st && la_plain && nconv < k) {
        /* plain Lanczos missed some of the largest: shift-invert above the spectrum */
        int trials = 0, nconv1 = nconv;
        const char *est = "";
        double t1 = sla__now();
        sla_status s2 = outside_shift(ctx, &E, &o, -1.0, glo, ghi, norm, &sigma, &trials, &est);
        if (!s2) s2 = prepare_factor(ctx, &E);
        tf += sla__now() - t1;
        if (!s2) {
            sla_int it2 = 0, nops2 = 0;
            si = true;
            st = arpack_locked(ctx, &E, &o, true, sigma, "LM", evals, Z, &nconv, &it2, &nops2, &maxit);
            iters += it2;
            nops += nops2;
            snprintf(method, sizeof method, "arpack shift-invert (%s)", sla_method_name(sla_solver_method(E.S)));
            snprintf(note, sizeof note,
                     "LA: plain Lanczos converged %d of %lld in %lld restarts; shift-invert above the spectrum, "
                     "sigma = %.9g (%s, %d trial factorization%s)",
                     nconv1, (long long)k, (long long)(iters - it2), sigma, est, trials, trials == 1 ? "" : "s");
        } else if (!may_fall_back(ctx, s2)) {
            st = s2;
        } else {
            no_factor_msg(ctx, s2, msg, sizeof msg);
            run.ncv = fallback_ncv(&o, n);
            run.maxiter = full_maxiter;
            snprintf(note, sizeof note,
                     "LA: plain Lanczos converged %d of %lld in %lld restarts; no factorization above the spectrum "
                     "(%.40s); plain Lanczos with ncv = %lld",
                     nconv1, (long long)k, (long long)iters, msg, (long long)run.ncv);
            if (run.maxiter > LA_BUDGET || run.ncv != o.ncv) {
                sla_int it2 = 0, nops2 = 0;
                st = arpack_locked(ctx, &E, &run, false, sigma, which, evals, Z, &nconv, &it2, &nops2, &maxit);
                iters += it2;
                nops += nops2;
            }
        }
    }
    double maxres = 0.0;
    if (!st) {
        for (sla_int i = 0; i < k; i++) {
            double *v = Z + (size_t)i * (size_t)n;
            double res = NAN;
            if (i < nconv) {
                /* r = A v - l v */
                sla__spmv(&V, 0, v, r, E.nt);
                sla__axpy(n, -evals[i], v, r, E.nt);
                res = sla__nrm2(n, r, E.nt);
                maxres = fmax(maxres, res);
            }
            if (residuals) residuals[i] = res;
            if (evecs) memcpy(evecs + (size_t)i * (size_t)ldv, v, (size_t)n * sizeof *v);
        }
    }
    sla__free(&a, Z);
    sla__free(&a, r);
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
                          "eigsh: only %d of %lld eigenpairs converged%s (try a larger maxiter or ncv, or "
                          "shift-invert)",
                          nconv, (long long)k, maxit ? " within maxiter" : "");
    return sla__ok(ctx, SLA_OK);
#endif
}

sla_status sla_eigsh_batch(sla_ctx *ctx, const sla_matrix *A, const sla_eigsh_options *opts, double *evals,
                           double *evecs, double *residuals, sla_eigsh_info *info)
{
    if (sla__require_real(ctx, A, "sla_eigsh_batch")) return SLA_ERR_UNSUPPORTED;
    sla_eigsh_options o;
    if (opts) o = *opts;
    else sla_eigsh_options_default(&o);
    /* k first: k = 0 comes with empty (NULL) arrays from the bindings */
    if (o.k < 1) return sla__error(ctx, SLA_ERR_ARGUMENT, "eigsh: k = %lld; k must be >= 1", (long long)o.k);
    if (!A || !evals) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_eigsh_batch: NULL argument");
    sla_status worst = SLA_OK;
    for (sla_int b = 0; b < A->nbatch; b++) {
        size_t ok = (size_t)b * (size_t)o.k;
        sla_status st = sla_eigsh(ctx, A, b, &o, evals + ok, evecs ? evecs + ok * (size_t)A->nrows : NULL,
                                  A->nrows, residuals ? residuals + ok : NULL, info ? info + b : NULL);
        if (st < 0) return sla__batch_error(ctx, st, b);
        if (st > 0) worst = st;
    }
    if (worst) return sla__error(ctx, worst, "eigsh batch: some value arrays did not converge (see info)");
    return sla__ok(ctx, SLA_OK);
}
