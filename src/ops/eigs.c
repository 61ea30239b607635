/* Eigenvalues of nonsymmetric sparse matrices by ARPACK's implicitly
 * restarted Arnoldi (dnaupd/dneupd in reverse communication: regular mode
 * on A, or mode 3 on (A - sigma I)^-1 through the library's sparse LU),
 * with the options, their parser and the shifted-matrix helpers the
 * generalized solver shares. The eigenvalue VJP is in eigs_vjp.c. */
#include "../solvers/direct.h"
#include "eigs_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLA_HAVE_ARPACK
#include <arpack.h>
#endif

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const which_names[] = {"LM", "SM", "LR", "SR", "LI", "SI"};

const char *sla_eigs_which_name(sla_eigs_which w)
{
    return (int)w >= 0 && (size_t)w < COUNT(which_names) ? which_names[w] : "unknown";
}

void sla_eigs_options_default(sla_eigs_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->k = 6;
    o->which = SLA_EIGS_LM;
    o->factor_method = SLA_METHOD_LU;
    o->max_condition = 1e10;
}

size_t sla_eigs_options_size(void) { return sizeof(sla_eigs_options); }
size_t sla_eigs_info_size(void) { return sizeof(sla_eigs_info); }

/* ---- option strings ----------------------------------------------------- */

_Static_assert(sizeof(sla_eigs_which) == sizeof(int), "a CHOICE field is int-sized");

/* keys and values are matched ignoring ASCII case */
static const char *const eigs_bools[] = {"true", "false", "on", "off", "yes", "no", "1", "0"};
#define F(nm, kd, l, h, op) \
    {.key = #nm, .kind = SLA__OPT_##kd, .at = offsetof(sla_eigs_options, nm), .lo = l, .hi = h, .open = op}
static const sla__opt_field eigs_fields[] = {
    F(k, COUNT, 1, 1e15, 0),
    {"which", SLA__OPT_CHOICE, offsetof(sla_eigs_options, which), 0, 0, 0, which_names, (int)COUNT(which_names)},
    F(shift_invert, BOOL, 0, 0, 0),
    F(sigma, OTHER, 0, 0, 0),
    F(tol, REAL, 0, HUGE_VAL, 0),
    F(ncv, COUNT, 0, 46340, 0),
    F(maxiter, COUNT, 0, 1e15, 0),
    F(factor_method, OTHER, 0, 0, 0),
    F(max_condition, REAL, 1, HUGE_VAL, SLA__OPT_LO_OPEN),
};
#undef F

/* sigma (which implies shift-invert) and factor_method */
static sla_status eigs_other(sla_ctx *ctx, int field, const char *v, size_t vl, void *opts)
{
    static const char *const lu_names[] = {"lu", "umfpack", "klu", "superlu"};
    static const sla_method lu_methods[] = {SLA_METHOD_LU, SLA_METHOD_UMFPACK, SLA_METHOD_KLU, SLA_METHOD_SUPERLU};
    sla_eigs_options *o = opts;
    sla_status st;
    int i = 0;
    if (field == 3) {
        if (!(st = sla__opt_real(ctx, "sigma", v, vl, -HUGE_VAL, HUGE_VAL, 0, &o->sigma))) o->shift_invert = true;
        return st;
    }
    if (!(st = sla__opt_name(ctx, "factor_method", v, vl, lu_names, 4, true, "an LU method", &i)))
        o->factor_method = lu_methods[i];
    return st;
}

static const sla__opt_table eigs_table = {
    .fields = eigs_fields, .count = (int)COUNT(eigs_fields), .nocase = true, .values_nocase = true,
    .bools = eigs_bools, .nbools = 4, .other = eigs_other};

sla_status sla_eigs_options_parse(sla_ctx *ctx, const char *str, sla_eigs_options *opts)
{
    return sla__opt_parse(ctx, "sla_eigs_options_parse", str, opts, sizeof *opts, true, &eigs_table);
}

/* ---- helpers shared with eigsh_gen.c and eigs_vjp.c --------------------- */

sla_status sla__eig_combine(sla_ctx *ctx, const sla_matrix *A, sla_int ibA, double alpha, const sla_matrix *B,
                            sla_int ibB, double beta, sla_matrix **out)
{
    const sla_int n = A->nrows;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_int cap = A->nnz + (B ? B->nnz : n);
    sla_int *rp = sla__ctx_malloc(ctx, (size_t)n + 1, sizeof *rp, "shifted matrix");
    sla_int *ci = rp ? sla__ctx_malloc(ctx, (size_t)cap, sizeof *ci, "shifted matrix") : NULL;
    double *vx = ci ? sla__ctx_malloc(ctx, (size_t)cap, sizeof *vx, "shifted matrix") : NULL;
    sla_status st = SLA_ERR_NOMEM;
    if (vx) {
        sla_int q = 0;
        rp[0] = 0;
        for (sla_int i = 0; i < n; i++) {
            /* merge row i of A with row i of B (or the diagonal entry) */
            sla_int pa = A->rowptr[i], ea = A->rowptr[i + 1];
            sla_int pb = B ? B->rowptr[i] : 0, eb = B ? B->rowptr[i + 1] : 1;
            while (pa < ea || pb < eb) {
                sla_int ja = pa < ea ? A->colind[pa] : INT32_MAX;
                sla_int jb = pb < eb ? (B ? B->colind[pb] : i) : INT32_MAX;
                double v = 0.0;
                sla_int j = ja < jb ? ja : jb;
                if (ja == j) v += alpha * sla__val(A, ibA, pa++);
                if (jb == j) v += beta * (B ? sla__val(B, ibB, pb) : 1.0), pb++;
                ci[q] = j;
                vx[q++] = v;
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

sla_status sla__eig_solve(sla_ctx *ctx, sla_solver *S, bool transpose, const double *b, double *x, sla_int n)
{
    const sla__direct_ops *d;
    void *sym, *num;
    if (sla__solver_direct(S, 0, &d, &sym, &num)) return d->solve(ctx, sym, num, transpose, 1, b, n, x, n);
    sla_status st = transpose ? sla_solver_solve_transpose(ctx, S, 0, 1, b, n, x, n, NULL)
                              : sla_solver_solve(ctx, S, 0, 1, b, n, x, n, NULL);
    return st == SLA_NOT_CONVERGED ? SLA_OK : st;
}

/* ---- the forward ----------------------------------------------------------- */

static sla_status check_eigs(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_eigs_options *o)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "eigs: A is NULL");
    sla_status st = sla__check_square_index(ctx, "eigs", A, ib);
    if (st) return st;
    const sla_int n = A->nrows;
    if (o->k < 1 || o->k >= n - 1)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "eigs: k = %lld must be in [1, n - 1) with n = %lld (ARPACK's Arnoldi needs k < n - 1; "
                          "use a dense eigensolver for all eigenvalues)",
                          (long long)o->k, (long long)n);
    if ((int)o->which < 0 || (size_t)o->which >= COUNT(which_names))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "eigs: unknown which = %d", (int)o->which);
    if (o->shift_invert && !isfinite(o->sigma)) return sla__error(ctx, SLA_ERR_VALUE, "eigs: sigma is not finite");
    if (!(o->tol >= 0.0) || !isfinite(o->tol))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "eigs: tol = %g must be >= 0", o->tol);
    if (o->ncv != 0 && (o->ncv < o->k + 2 || o->ncv > n))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "eigs: ncv = %lld must be in [k + 2, n] = [%lld, %lld]",
                          (long long)o->ncv, (long long)o->k + 2, (long long)n);
    if (o->maxiter < 0) return sla__error(ctx, SLA_ERR_ARGUMENT, "eigs: negative maxiter");
    if (!(o->max_condition > 1.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "eigs: max_condition = %g must be > 1", o->max_condition);
    sla_method m = o->factor_method;
    if (o->shift_invert && m != SLA_METHOD_LU && m != SLA_METHOD_UMFPACK && m != SLA_METHOD_KLU &&
        m != SLA_METHOD_SUPERLU)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "eigs: factor_method %s is not an LU method (lu, umfpack, klu, superlu)",
                          sla_method_name(m));
    if (sla__arpack_too_large(n, o->ncv, o->k))
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "eigs: n or ncv too large for ARPACK's 32-bit indices");
    return SLA_OK;
}

#ifdef SLA_HAVE_ARPACK

/* How good eigenvalue (re, im) is for `which` (larger is better); with a
 * shift, measured on nu = 1 / (lambda - sigma) as ARPACK does. */
static double score(sla_eigs_which w, bool si, double sigma, double re, double im)
{
    if (si) {
        double dr = re - sigma, d2 = dr * dr + im * im;
        if (d2 > 0) {
            re = dr / d2;
            im = -im / d2;
        } else {
            re = INFINITY;
            im = 0.0;
        }
    }
    switch (w) {
    case SLA_EIGS_LM: return hypot(re, im);
    case SLA_EIGS_SM: return -hypot(re, im);
    case SLA_EIGS_LR: return re;
    case SLA_EIGS_SR: return -re;
    case SLA_EIGS_LI: return fabs(im);
    case SLA_EIGS_SI: return -fabs(im);
    }
    return 0.0;
}

typedef struct group {
    double s;
    int first, size; /* columns in ARPACK's output; size 2: a conjugate pair */
} group;

static int cmp_group(const void *a, const void *b)
{
    const group *x = a, *y = b;
    if (x->s != y->s) return x->s > y->s ? -1 : 1;
    return x->first - y->first; /* stable */
}

/* The gauge of sla_eigs's eigenvectors: x = xr + i xi (xi NULL: real)
 * scaled to ||x|| = 1 and rotated so that its largest component x_m
 * (sla__eigs_peak) is real and positive. */
static void fix_gauge(sla_int n, double *xr, double *xi)
{
    sla_int m = sla__eigs_peak(n, xr, xi);
    double nrm = 0.0;
    for (sla_int i = 0; i < n; i++) nrm += xr[i] * xr[i] + (xi ? xi[i] * xi[i] : 0.0);
    double am = hypot(xr[m], xi ? xi[m] : 0.0);
    if (!(nrm > 0.0) || !(am > 0.0)) return;
    /* x <- x conj(x_m) / (|x_m| ||x||) */
    double s = 1.0 / (am * sqrt(nrm)), cr = xr[m] * s, ci = xi ? -xi[m] * s : 0.0;
    for (sla_int i = 0; i < n; i++) {
        double re = xr[i], im = xi ? xi[i] : 0.0;
        xr[i] = re * cr - im * ci;
        if (xi) xi[i] = re * ci + im * cr;
    }
    if (xi) xi[m] = 0.0;
}

typedef struct arnoldi_out {
    int nconv;
    sla_int iters, nops;
    bool maxit, lone;
} arnoldi_out;

/* dnaupd/dneupd on OP (A, or (A - sigma I)^-1 by S); writes the k selected
 * eigenvalues and dgeev-style vectors (n x k, ld n). Lock held. */
static sla_status arnoldi(sla_ctx *ctx, const sla_matrix *V, sla_solver *S, const sla_eigs_options *o, double *wr,
                          double *wi, double *Z, arnoldi_out *out)
{
    const int n = (int)V->nrows, nev = (int)o->k;
    const int nt = sla__threads(ctx);
    const int ncv = sla__arpack_ncv(o->ncv, o->k, n);
    const int lworkl = 3 * ncv * ncv + 6 * ncv;
    sla_allocator a = sla__ctx_alloc(ctx);
    size_t nn = (size_t)n;
    double *resid = sla__ctx_malloc(ctx, nn, sizeof *resid, "eigs work space");
    double *Vb = resid ? sla__ctx_malloc(ctx, nn * (size_t)ncv, sizeof *Vb, "eigs Arnoldi basis") : NULL;
    double *workd = Vb ? sla__ctx_malloc(ctx, 3 * nn, sizeof *workd, "eigs work space") : NULL;
    double *workl = workd ? sla__ctx_malloc(ctx, (size_t)lworkl, sizeof *workl, "eigs work space") : NULL;
    double *dr = workl ? sla__ctx_malloc(ctx, 2 * (size_t)ncv + 2, sizeof *dr, "eigs work space") : NULL;
    double *workev = dr ? sla__ctx_malloc(ctx, 3 * (size_t)ncv, sizeof *workev, "eigs work space") : NULL;
    int *select = workev ? sla__ctx_calloc(ctx, (size_t)ncv, sizeof *select, "eigs work space") : NULL;
    double *Zt = select ? sla__ctx_malloc(ctx, nn * ((size_t)nev + 1), sizeof *Zt, "eigs eigenvectors") : NULL;
    group *g = Zt ? sla__ctx_malloc(ctx, (size_t)nev + 1, sizeof *g, "eigs work space") : NULL;
    sla_status st = SLA_OK;
    if (!g) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    double *di = dr + ncv + 1;
    sla__eig_start(n, o->v0, resid);
    int iparam[11] = {0}, ipntr[14] = {0};
    iparam[0] = 1;
    iparam[2] = sla__arpack_maxiter(o->maxiter, n);
    iparam[6] = S ? 3 : 1;
    const char *which = which_names[o->which];
    int ido = 0, info = 1;
    for (;;) {
        dnaupd_c(&ido, "I", n, which, nev, o->tol, resid, ncv, Vb, n, iparam, ipntr, workd, workl, lworkl, &info);
        if (ido != -1 && ido != 1) break;
        const double *x = workd + ipntr[0] - 1;
        double *y = workd + ipntr[1] - 1;
        out->nops++;
        if (S) st = sla__eig_solve(ctx, S, false, x, y, n);
        else sla__spmv(V, 0, x, y, nt);
        if (st) goto done;
        if (!sla__all_finite(n, y)) {
            st = sla__error(ctx, SLA_ERR_VALUE, "eigs: the operator produced NaN/Inf");
            goto done;
        }
    }
    out->iters = iparam[2];
    out->maxit = info == 1;
    if (info < 0 || info == 3) {
        st = sla__arpack_fail(ctx, "eigs", "dnaupd", info);
        goto done;
    }
    int nconv = iparam[4];
    if (nconv > 0) {
        int info2 = 0;
        dneupd_c(1, "A", select, dr, di, Zt, n, S ? o->sigma : 0.0, 0.0, workev, "I", n, which, nev, o->tol,
                 resid, ncv, Vb, n, iparam, ipntr, workd, workl, lworkl, &info2);
        if (info2 != 0) {
            st = sla__error(ctx, SLA_ERR_ARGUMENT, "eigs: ARPACK dneupd failed (info %d)", info2);
            goto done;
        }
        nconv = iparam[4] < nev + 1 ? iparam[4] : nev + 1;
    }
    /* group conjugate pairs (positive imaginary part first) and rank them */
    int ng = 0;
    for (int j = 0; j < nconv;) {
        if (di[j] != 0.0 && j + 1 < nconv) {
            if (di[j] < 0.0) { /* make the first one the positive */
                di[j] = -di[j];
                di[j + 1] = -di[j + 1];
                double *im = Zt + (size_t)(j + 1) * nn;
                for (int r = 0; r < n; r++) im[r] = -im[r];
            }
            fix_gauge(n, Zt + (size_t)j * nn, Zt + (size_t)(j + 1) * nn);
            g[ng++] = (group){score(o->which, S != NULL, o->sigma, dr[j], di[j]), j, 2};
            j += 2;
        } else {
            if (di[j] == 0.0) fix_gauge(n, Zt + (size_t)j * nn, NULL);
            g[ng++] = (group){score(o->which, S != NULL, o->sigma, dr[j], di[j]), j, di[j] != 0.0 ? -1 : 1};
            j++;
        }
    }
    qsort(g, (size_t)ng, sizeof *g, cmp_group);
    int filled = 0;
    for (int q = 0; q < ng && filled < nev; q++) {
        int f = g[q].first;
        if (g[q].size == -1) continue; /* half a pair ARPACK could not complete */
        if (g[q].size == 2 && filled + 2 > nev) {
            /* the pair straddles position k: its first member alone */
            out->lone = true;
            wr[filled] = dr[f];
            wi[filled] = di[f];
            memcpy(Z + (size_t)filled * nn, Zt + (size_t)f * nn, nn * sizeof *Z);
            memcpy(Z + (size_t)nev * nn, Zt + (size_t)(f + 1) * nn, nn * sizeof *Z); /* spare column */
            filled++;
            break;
        }
        for (int m = 0; m < g[q].size; m++) {
            wr[filled] = dr[f + m];
            wi[filled] = di[f + m];
            memcpy(Z + (size_t)filled * nn, Zt + (size_t)(f + m) * nn, nn * sizeof *Z);
            filled++;
        }
    }
    out->nconv = filled;
    for (int i = filled; i < nev; i++) {
        wr[i] = wi[i] = NAN;
        for (int r = 0; r < n; r++) Z[(size_t)i * nn + r] = NAN;
    }
done:
    sla__free(&a, resid);
    sla__free(&a, Vb);
    sla__free(&a, workd);
    sla__free(&a, workl);
    sla__free(&a, dr);
    sla__free(&a, workev);
    sla__free(&a, select);
    sla__free(&a, Zt);
    sla__free(&a, g);
    return st;
}

/* ||A x - lambda x|| / (|lambda| ||x||) for x = xr + i xi (xi NULL: real). */
static double eig_residual(const sla_matrix *V, double re, double im, const double *xr, const double *xi,
                           double *t, int nt)
{
    const sla_int n = V->nrows;
    double rr = 0.0, xx = 0.0;
    sla__spmv(V, 0, xr, t, nt);
    for (sla_int i = 0; i < n; i++) {
        double r = t[i] - re * xr[i] + (xi ? im * xi[i] : 0.0);
        rr += r * r;
        xx += xr[i] * xr[i];
    }
    if (xi) {
        sla__spmv(V, 0, xi, t, nt);
        for (sla_int i = 0; i < n; i++) {
            double r = t[i] - re * xi[i] - im * xr[i];
            rr += r * r;
            xx += xi[i] * xi[i];
        }
    }
    double l = hypot(re, im);
    return sqrt(rr) / ((l > 0.0 ? l : 1.0) * (xx > 0.0 ? sqrt(xx) : 1.0));
}

#endif /* SLA_HAVE_ARPACK */

sla_status sla_eigs(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_eigs_options *opts, double *wr,
                    double *wi, double *vr, sla_int ldv, double *residuals, sla_eigs_info *info)
{
    double t0 = sla__now();
    if (info) memset(info, 0, sizeof *info);
    if (sla__require_real(ctx, A, "sla_eigs")) return SLA_ERR_UNSUPPORTED;
    sla_eigs_options o;
    if (opts) o = *opts;
    else sla_eigs_options_default(&o);
    sla_status st = check_eigs(ctx, A, ib, &o);
    if (st) return st;
    if (!wr || !wi) return sla__error(ctx, SLA_ERR_ARGUMENT, "eigs: wr or wi is NULL");
    if (vr && ldv < A->nrows)
        return sla__error(ctx, SLA_ERR_DIMENSION, "eigs: ldv = %lld < n = %lld", (long long)ldv,
                          (long long)A->nrows);
    sla_matrix V;
    sla__single_view(A, ib, &V);
    if ((st = sla_matrix_check_values(ctx, &V, 0))) return st;
    if (o.v0 && !sla__all_finite(A->nrows, o.v0)) return sla__error(ctx, SLA_ERR_VALUE, "eigs: v0 has NaN/Inf");
#ifndef SLA_HAVE_ARPACK
    (void)vr;
    (void)residuals;
    (void)t0;
    return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                      "eigs needs ARPACK, which was not found when sla was configured (install libarpack2-dev "
                      "and reconfigure)");
#else
    const sla_int n = A->nrows, k = o.k;
    const int nt = sla__threads(ctx);
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_solver *S = NULL;
    sla_matrix *Ms = NULL; /* A - sigma I, which S borrows */
    char method[40] = "arnoldi", note[192] = "";
    if (o.shift_invert) {
        st = sla__eig_combine(ctx, &V, 0, 1.0, NULL, 0, -o.sigma, &Ms);
        if (!st) {
            sla_solver_options so;
            sla_solver_options_default(&so);
            so.method = o.factor_method;
            st = sla_solver_create(ctx, Ms, &so, &S);
        }
        if (st) {
            sla_solver_destroy(&S);
            sla_matrix_destroy(&Ms);
            char msg[400];
            snprintf(msg, sizeof msg, "%s", sla_ctx_message(ctx));
            return sla__error(ctx, st, "eigs: factorization of A - sigma I (sigma = %g) failed: %s", o.sigma, msg);
        }
        snprintf(method, sizeof method, "arnoldi shift-invert (%s)", sla_method_name(sla_solver_method(S)));
    }
    /* k columns and a spare one for the imaginary part of a lone pair member */
    double *Z = sla__ctx_malloc(ctx, (size_t)n * ((size_t)k + 1), sizeof *Z, "eigs eigenvectors");
    double *t = Z ? sla__ctx_malloc(ctx, (size_t)n, sizeof *t, "eigs residual") : NULL;
    arnoldi_out out = {0};
    if (!t) st = SLA_ERR_NOMEM;
    if (!st) {
        int bt = sla__arpack_enter(ctx);
        st = arnoldi(ctx, &V, S, &o, wr, wi, Z, &out);
        sla__arpack_leave(bt);
    }
    double maxres = 0.0;
    if (!st) {
        for (sla_int j = 0; j < k; j++) {
            double res = NAN;
            const double *x = Z + (size_t)j * (size_t)n;
            if (j < out.nconv) {
                if (wi[j] == 0.0) res = eig_residual(&V, wr[j], 0.0, x, NULL, t, nt);
                else if (wi[j] > 0.0 && (j + 1 < out.nconv || out.lone)) res = eig_residual(&V, wr[j], wi[j], x, x + n, t, nt);
                else if (wi[j] < 0.0) res = eig_residual(&V, wr[j], -wi[j], x - n, x, t, nt);
                if (isfinite(res)) maxres = fmax(maxres, res);
            }
            if (residuals) residuals[j] = res;
            if (vr) memcpy(vr + (size_t)j * (size_t)ldv, x, (size_t)n * sizeof *x);
        }
        if (out.lone)
            snprintf(note, sizeof note,
                     "eigenvalue %lld is complex and its conjugate fell at position k + 1: returned alone, vr "
                     "holds only the real part of its eigenvector (ask for k = %lld)",
                     (long long)out.nconv, (long long)k + 1);
    }
    sla__free(&a, Z);
    sla__free(&a, t);
    sla_solver_destroy(&S);
    sla_matrix_destroy(&Ms);
    if (st) return st;
    if (info) {
        snprintf(info->method, sizeof info->method, "%s", method);
        snprintf(info->note, sizeof info->note, "%s", note);
        info->converged = out.nconv >= k;
        info->nconv = out.nconv;
        info->iterations = out.iters;
        info->nops = out.nops;
        info->max_residual = maxres;
        info->seconds = sla__now() - t0;
    }
    if (out.nconv < k)
        return sla__error(ctx, SLA_NOT_CONVERGED,
                          "eigs: only %d of %lld eigenvalues converged%s (try a larger maxiter or ncv, or "
                          "shift-invert)",
                          out.nconv, (long long)k, out.maxit ? " within maxiter" : "");
    return sla__ok(ctx, SLA_OK);
#endif
}
