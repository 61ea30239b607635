/* Complex preconditioners: Jacobi, ILU(0) and IC(0) in complex arithmetic,
 * each applying M^-1, M^-T or M^-H (op 0, 1, 2).
 *
 *   Jacobi: M = D, the diagonal of A.
 *   ILU(0): M = L U on A's pattern, L unit lower, U upper (general A).
 *   IC(0):  M = L L^H, L on the lower triangle of A's pattern with a real
 *           positive diagonal (Hermitian positive definite A).
 *
 * The pivot rule is the real one's (precond_fact.c): with opts->ilu_shift
 * a pivot p with |p| <= 1e-12 ||a_i||_2, or a diagonal A does not store,
 * becomes 1e-1 ||a_i||_2 times p / |p| (1 for p = 0; IC(0): positive), and
 * the note counts them; without it a zero pivot is SLA_ERR_SINGULAR naming
 * the row. A clearly non-positive IC(0) pivot is SLA_ERR_NOT_SPD. Values
 * are copied, so changing A afterwards does not affect the factor. Applies
 * use no scratch (z may alias r). */
#include "zsolver.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ZPIVOT_TINY 1e-12
#define ZPIVOT_SHIFT 1e-1

/* A factor on a CSR pattern: row i is [rowptr[i], dpos[i]) strictly lower,
 * dpos[i] the diagonal, then strictly upper (IC(0): rows end at dpos[i]). */
typedef struct zfact {
    sla_int n;
    const sla_int *rowptr;
    const int32_t *colind;
    sla_int *dpos;
    sla__z *val;
    sla__z *dinv;          /* Jacobi: 1 / a_ii; ILU(0): 1 / u_ii; IC(0): 1 / l_ii */
    sla_int *own_rowptr;   /* owned pattern (IC(0), ILU(0) with inserted diagonals) */
    int32_t *own_colind;
} zfact;

static void zfact_free(const sla_allocator *a, zfact *f)
{
    if (!f) return;
    sla__free(a, f->dpos);
    sla__free(a, f->val);
    sla__free(a, f->dinv);
    sla__free(a, f->own_rowptr);
    sla__free(a, f->own_colind);
    sla__free(a, f);
}

static void zpc_free_data(sla__zpc *pc)
{
    zfact_free(&pc->alloc, pc->data);
    pc->data = NULL;
}

static inline sla__z cj_if(bool c, sla__z v) { return c ? conj(v) : v; }

/* ---- triangular sweeps in place (x holds b); dinv NULL: unit diagonal;
 * cj: use the conjugated factor values ---------------------------------- */

/* (L) x = b, forward. */
static void lower_solve(const zfact *f, const sla__z *dinv, bool cj, sla__z *x)
{
    for (sla_int i = 0; i < f->n; i++) {
        sla__z t = 0.0;
        for (sla_int k = f->rowptr[i]; k < f->dpos[i]; k++) t += cj_if(cj, f->val[k]) * x[f->colind[k]];
        sla__z xi = x[i] - t;
        x[i] = dinv ? xi * cj_if(cj, dinv[i]) : xi; /* x_i = (b_i - sum_j<i l_ij x_j) / l_ii */
    }
}

/* (U) x = b, backward. */
static void upper_solve(const zfact *f, const sla__z *dinv, bool cj, sla__z *x)
{
    for (sla_int i = f->n - 1; i >= 0; i--) {
        sla__z t = 0.0;
        for (sla_int k = f->dpos[i] + 1; k < f->rowptr[i + 1]; k++)
            t += cj_if(cj, f->val[k]) * x[f->colind[k]];
        sla__z xi = x[i] - t;
        x[i] = dinv ? xi * cj_if(cj, dinv[i]) : xi; /* x_i = (b_i - sum_j>i u_ij x_j) / u_ii */
    }
}

/* (L)^T x = b (L^H with cj): upper triangular, backward by stored rows. */
static void lower_t_solve(const zfact *f, const sla__z *dinv, bool cj, sla__z *x)
{
    for (sla_int i = f->n - 1; i >= 0; i--) {
        sla__z xi = dinv ? x[i] * cj_if(cj, dinv[i]) : x[i];
        x[i] = xi;
        for (sla_int k = f->rowptr[i]; k < f->dpos[i]; k++)
            x[f->colind[k]] -= cj_if(cj, f->val[k]) * xi; /* b_j -= l_ij x_i */
    }
}

/* (U)^T x = b (U^H with cj): lower triangular, forward by stored rows. */
static void upper_t_solve(const zfact *f, const sla__z *dinv, bool cj, sla__z *x)
{
    for (sla_int i = 0; i < f->n; i++) {
        sla__z xi = dinv ? x[i] * cj_if(cj, dinv[i]) : x[i];
        x[i] = xi;
        for (sla_int k = f->dpos[i] + 1; k < f->rowptr[i + 1]; k++)
            x[f->colind[k]] -= cj_if(cj, f->val[k]) * xi; /* b_j -= u_ij x_i */
    }
}

static void copy_in(sla_int n, const sla__z *r, sla__z *z)
{
    if (z != r) memcpy(z, r, (size_t)n * sizeof *z);
}

/* ---- applies ---------------------------------------------------------------- */

/* z = D^-1 r; D^-T = D^-1, D^-H = conj(D^-1). */
static sla_status jacobi_apply(const sla__zpc *pc, int op, const sla__z *r, sla__z *z, int nt)
{
    const zfact *f = pc->data;
    const sla__z *d = f->dinv;
    sla_int n = pc->n;
    bool cj = op == 2;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) z[i] = cj_if(cj, d[i]) * r[i];
    return SLA_OK;
}

/* M^-1 = U^-1 L^-1; M^-T = L^-T U^-T; M^-H = L^-H U^-H. */
static sla_status ilu0_apply(const sla__zpc *pc, int op, const sla__z *r, sla__z *z, int nt)
{
    (void)nt;
    const zfact *f = pc->data;
    copy_in(f->n, r, z);
    if (op == 0) {
        lower_solve(f, NULL, false, z);
        upper_solve(f, f->dinv, false, z);
    } else {
        upper_t_solve(f, f->dinv, op == 2, z);
        lower_t_solve(f, NULL, op == 2, z);
    }
    return SLA_OK;
}

/* M = L L^H is Hermitian: M^-H = M^-1 = L^-H L^-1; M^T = conj(L) L^T, so
 * M^-T = L^-T conj(L)^-1. */
static sla_status ic0_apply(const sla__zpc *pc, int op, const sla__z *r, sla__z *z, int nt)
{
    (void)nt;
    const zfact *f = pc->data;
    copy_in(f->n, r, z);
    bool t = op == 1;
    lower_solve(f, f->dinv, t, z);    /* L y = r (conj(L) y = r) */
    lower_t_solve(f, f->dinv, !t, z); /* L^H z = y (L^T z = y) */
    return SLA_OK;
}

/* ---- set-up ---------------------------------------------------------------- */

static sla_status zfact_alloc(sla_ctx *ctx, sla__zpc *pc, sla_int nval, bool own_pattern,
                              const char *name, zfact **out)
{
    const sla_allocator *a = &pc->alloc;
    sla_int n = pc->n;
    zfact *f = sla__calloc(a, 1, sizeof *f);
    bool ok = f != NULL;
    if (ok) {
        f->n = n;
        f->dpos = sla__malloc(a, (size_t)n, sizeof *f->dpos);
        f->dinv = sla__malloc(a, (size_t)n, sizeof *f->dinv);
        f->val = sla__malloc(a, (size_t)nval, sizeof *f->val);
        ok = f->dpos && f->dinv && f->val;
        if (ok && own_pattern) {
            f->own_rowptr = sla__malloc(a, (size_t)n + 1, sizeof *f->own_rowptr);
            f->own_colind = sla__malloc(a, (size_t)nval, sizeof *f->own_colind);
            ok = f->own_rowptr && f->own_colind;
        }
    }
    if (!ok) {
        zfact_free(a, f);
        *out = NULL;
        return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the complex %s preconditioner (n %lld, nnz %lld)",
                          name, (long long)n, (long long)nval);
    }
    *out = f;
    return SLA_OK;
}

static sla_status jacobi_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla__zpc *pc)
{
    zfact *f;
    sla_status st = zfact_alloc(ctx, pc, 1, false, "Jacobi", &f);
    if (st) return st;
    for (sla_int i = 0; i < pc->n && !st; i++) {
        sla_int p = sla__find(A, i, i);
        sla__z d = p >= 0 ? sla__zval(A, ib, p) : 0.0;
        if (d == 0.0)
            st = sla__error(ctx, SLA_ERR_SINGULAR, "Jacobi preconditioner: zero or missing diagonal at row %lld",
                            (long long)i);
        else
            f->dinv[i] = 1.0 / d;
    }
    if (st) {
        zfact_free(&pc->alloc, f);
        return st;
    }
    pc->data = f;
    pc->apply = jacobi_apply;
    pc->destroy = zpc_free_data;
    return SLA_OK;
}

static double row_norm(const sla__z *v, sla_int from, sla_int to)
{
    double s = 0.0;
    for (sla_int k = from; k < to; k++) s += creal(v[k]) * creal(v[k]) + cimag(v[k]) * cimag(v[k]);
    return sqrt(s);
}

/* Replace a zero or tiny pivot p of a row of 2-norm rnorm by
 * ZPIVOT_SHIFT rnorm p / |p| (p = 0: the positive real shift). */
static bool shift_pivot(sla__z *p, double rnorm)
{
    double r = rnorm > 0.0 ? rnorm : 1.0;
    double ap = cabs(*p);
    if (!(ap <= ZPIVOT_TINY * rnorm)) return false;
    *p = ap > 0.0 ? ZPIVOT_SHIFT * r * (*p / ap) : ZPIVOT_SHIFT * r;
    return true;
}

static void note_shifts(sla__zpc *pc, const char *name, sla_int count, sla_int first, sla_int missing)
{
    pc->shifted = count;
    pc->note[0] = '\0';
    if (count == 0) return;
    if (missing > 0)
        snprintf(pc->note, sizeof pc->note,
                 "%s: shifted %lld zero/tiny pivots (first at row %lld; %lld diagonals not stored)", name,
                 (long long)count, (long long)first, (long long)missing);
    else
        snprintf(pc->note, sizeof pc->note, "%s: shifted %lld zero/tiny pivots (first at row %lld)", name,
                 (long long)count, (long long)first);
}

static sla_int count_missing_diagonals(const sla_matrix *A)
{
    sla_int m = 0;
    for (sla_int i = 0; i < A->nrows; i++) m += sla__find(A, i, i) < 0;
    return m;
}

/* A_ib into f: rows restricted to columns <= i when lower_only; a missing
 * diagonal is inserted as an explicit 0 when insert (f owns its pattern
 * then), else it is SLA_ERR_SINGULAR naming the row. Sets dpos. */
static sla_status load(sla_ctx *ctx, const sla_matrix *A, sla_int ib, bool lower_only, bool insert,
                       const char *name, zfact *f)
{
    bool own = f->own_rowptr != NULL;
    sla_int q = 0;
    if (own) f->own_rowptr[0] = 0;
    for (sla_int i = 0; i < A->nrows; i++) {
        sla_int dp = -1;
        for (sla_int k = A->rowptr[i]; k <= A->rowptr[i + 1]; k++) {
            bool end = k == A->rowptr[i + 1];
            sla_int c = end ? A->nrows : A->colind[k];
            if (dp < 0 && c >= i) {
                if (c > i) { /* the diagonal is not stored */
                    if (!insert)
                        return sla__error(ctx, SLA_ERR_SINGULAR, "%s: zero diagonal at row %lld (not stored)",
                                          name, (long long)i);
                    f->own_colind[q] = (int32_t)i;
                    f->val[q] = 0.0;
                    dp = q++;
                } else {
                    dp = q;
                }
            }
            if (end || (lower_only && c > i)) break;
            if (own) f->own_colind[q] = (int32_t)c;
            f->val[q++] = sla__zval(A, ib, k);
        }
        f->dpos[i] = dp;
        if (own) f->own_rowptr[i + 1] = q;
    }
    f->rowptr = own ? f->own_rowptr : A->rowptr;
    f->colind = own ? f->own_colind : A->colind;
    return SLA_OK;
}

/* In-place ILU(0), IKJ order: l_ic = a_ic / u_cc for c < i ascending, then
 * a_ij -= l_ic u_cj on row i's pattern. pos: n entries of -1, returned so. */
static sla_status ilu0_factor(sla_ctx *ctx, zfact *f, bool shift, sla_int *pos, sla_int *nshift, sla_int *first)
{
    const sla_int *rp = f->rowptr;
    const int32_t *ci = f->colind;
    sla__z *lu = f->val;
    for (sla_int i = 0; i < f->n; i++) {
        double rnorm = shift ? row_norm(lu, rp[i], rp[i + 1]) : 0.0;
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) pos[ci[k]] = k;
        for (sla_int k = rp[i]; k < f->dpos[i]; k++) {
            sla_int c = ci[k];
            sla__z l = lu[k] *= f->dinv[c]; /* l_ic = a_ic / u_cc */
            for (sla_int m = f->dpos[c] + 1; m < rp[c + 1]; m++) {
                sla_int p = pos[ci[m]];
                if (p >= 0) lu[p] -= l * lu[m]; /* a_ij -= l_ic u_cj, no fill */
            }
        }
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) pos[ci[k]] = -1;
        sla__z *piv = &lu[f->dpos[i]];
        bool fin = isfinite(creal(*piv)) && isfinite(cimag(*piv));
        if (shift && fin && shift_pivot(piv, rnorm) && (*nshift)++ == 0) *first = i;
        if (*piv == 0.0 || !fin)
            return sla__error(ctx, SLA_ERR_SINGULAR, "ILU(0): %s pivot at row %lld",
                              fin ? "zero" : "non-finite", (long long)i);
        f->dinv[i] = 1.0 / *piv; /* 1 / u_ii */
    }
    return SLA_OK;
}

/* In-place IC(0) of a Hermitian A: for j < i on row i's pattern,
 * l_ij = (a_ij - sum_{m<j} l_im conj(l_jm)) / l_jj, then
 * l_ii = sqrt(a_ii - sum_{m<i} |l_im|^2), real. */
static sla_status ic0_factor(sla_ctx *ctx, zfact *f, bool shift, sla_int *pos, sla_int *nshift, sla_int *first)
{
    const sla_int *rp = f->rowptr;
    const int32_t *ci = f->colind;
    sla__z *l = f->val;
    for (sla_int i = 0; i < f->n; i++) {
        sla_int d = f->dpos[i];
        double rnorm = shift ? row_norm(l, rp[i], rp[i + 1]) : 0.0;
        for (sla_int k = rp[i]; k < d; k++) pos[ci[k]] = k;
        double diag = creal(l[d]);
        for (sla_int k = rp[i]; k < d; k++) {
            sla_int j = ci[k];
            sla__z s = l[k];
            for (sla_int m = rp[j]; m < f->dpos[j]; m++) {
                sla_int p = pos[ci[m]];
                if (p >= 0) s -= l[p] * conj(l[m]); /* a_ij -= l_im conj(l_jm), m < j */
            }
            l[k] = s * f->dinv[j]; /* l_ij = s / l_jj */
            diag -= creal(l[k]) * creal(l[k]) + cimag(l[k]) * cimag(l[k]);
        }
        for (sla_int k = rp[i]; k < d; k++) pos[ci[k]] = -1;
        sla__z dz = diag;
        if (shift && isfinite(diag) && shift_pivot(&dz, rnorm)) {
            diag = fabs(creal(dz)); /* IC(0): positive */
            if ((*nshift)++ == 0) *first = i;
        }
        if (!(diag > 0.0) || !isfinite(diag))
            return sla__error(ctx, SLA_ERR_NOT_SPD,
                              "IC(0) breakdown: non-positive pivot %g at row %lld; the matrix may not be "
                              "Hermitian positive definite (try ilu0 or jacobi)",
                              diag, (long long)i);
        l[d] = sqrt(diag);
        f->dinv[i] = 1.0 / creal(l[d]);
    }
    return SLA_OK;
}

static sla_status fact_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, bool ic, bool shift,
                             sla__zpc *pc)
{
    const char *name = ic ? "IC(0)" : "ILU(0)";
    sla_int missing = shift ? count_missing_diagonals(A) : 0;
    sla_int nval = missing;
    if (ic) {
        for (sla_int i = 0; i < A->nrows; i++)
            for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1] && A->colind[k] <= i; k++) nval++;
    } else {
        nval += A->nnz;
    }
    zfact *f;
    sla_status st = zfact_alloc(ctx, pc, nval, ic || missing > 0, name, &f);
    if (st) return st;
    sla_int *pos = sla__malloc(&pc->alloc, (size_t)pc->n, sizeof *pos);
    if (!pos) st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the %s work array", name);
    if (!st) st = load(ctx, A, ib, ic, shift, name, f);
    sla_int nshift = 0, first = -1;
    if (!st) {
        for (sla_int i = 0; i < pc->n; i++) pos[i] = -1;
        st = ic ? ic0_factor(ctx, f, shift, pos, &nshift, &first)
                : ilu0_factor(ctx, f, shift, pos, &nshift, &first);
    }
    sla__free(&pc->alloc, pos);
    if (st) {
        zfact_free(&pc->alloc, f);
        return st;
    }
    note_shifts(pc, name, nshift, first, missing);
    pc->data = f;
    pc->apply = ic ? ic0_apply : ilu0_apply;
    pc->destroy = zpc_free_data;
    return SLA_OK;
}

sla_status sla__zpc_create(sla_ctx *ctx, sla_precond_kind kind, const sla_matrix *A, sla_int ib,
                           const sla_solver_options *opts, sla__zpc **out)
{
    *out = NULL;
    if (kind != SLA_PRECOND_NONE && kind != SLA_PRECOND_JACOBI && kind != SLA_PRECOND_IC0 &&
        kind != SLA_PRECOND_ILU0)
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "precond %s does not run on complex matrices: use jacobi, ic0 (Hermitian "
                          "positive definite) or ilu0",
                          sla_precond_name(kind));
    if (!A || A->nrows != A->ncols || ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "complex preconditioner: NULL or non-square matrix, or value "
                          "array out of range");
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__zpc *pc = sla__calloc(&a, 1, sizeof *pc);
    if (!pc) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for a preconditioner");
    pc->kind = kind;
    pc->n = A->nrows;
    pc->alloc = a;
    sla_status st = SLA_OK;
    if (kind == SLA_PRECOND_JACOBI) st = jacobi_setup(ctx, A, ib, pc);
    else if (kind != SLA_PRECOND_NONE)
        st = fact_setup(ctx, A, ib, kind == SLA_PRECOND_IC0, opts && opts->ilu_shift != 0, pc);
    if (st) {
        sla__zpc_destroy(&pc);
        return st;
    }
    *out = pc;
    return SLA_OK;
}

void sla__zpc_destroy(sla__zpc **pc)
{
    if (!pc || !*pc) return;
    sla__zpc *p = *pc;
    sla_allocator a = p->alloc;
    if (p->destroy) p->destroy(p);
    sla__free(&a, p);
    *pc = NULL;
}
