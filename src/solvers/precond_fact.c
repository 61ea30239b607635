/* The factorized preconditioners: SSOR, IC(0) and ILU(0).
 *
 * All three keep their factors on a CSR pattern with the position of each
 * row's diagonal, so every apply is a pair of sequential triangular sweeps:
 *
 *   SSOR(w): M = 1/(w(2-w)) (D + wL) D^-1 (D + wU), with A = L + D + U;
 *            values are A's own (copied to double), pattern is A's.
 *   ILU(0):  M = L U on A's pattern, L unit lower, U upper, one value array.
 *   IC(0):   M = L L^T, L on the lower triangle of A's pattern (compacted
 *            into an owned CSR copy whose last entry per row is the diagonal).
 *
 * SSOR and ILU(0) borrow A's row pointers and column indices (the pattern
 * never changes and the solver requires A to outlive it); values are always
 * copied, so changing A's values does not affect a preconditioner already
 * set up. Transposed solves sweep the same CSR storage by columns, so no
 * transpose is built. Applies use no scratch memory (z may alias r), which
 * makes one preconditioner safe to apply from several threads at once. */
#include "krylov.h"

#include <math.h>
#include <string.h>

/* Factors on a CSR pattern. Rows: [rowptr[i], dpos[i]) strictly lower,
 * dpos[i] the diagonal, (dpos[i], rowptr[i+1]) strictly upper. */
typedef struct fact {
    sla_int n;
    const sla_int *rowptr;
    const int32_t *colind;
    sla_int *dpos;        /* position of the diagonal in each row */
    double *val;          /* factor values on the pattern */
    double *dinv;         /* 1 / pivot of each row */
    double omega;         /* SSOR weight (1 for the factorizations) */
    sla_int *own_rowptr;  /* owned pattern (IC(0)), else NULL */
    int32_t *own_colind;
} fact;

/* ---- allocation and validation ------------------------------------------ */

static void fact_free(const sla_allocator *a, fact *f)
{
    if (!f) return;
    sla__free(a, f->dpos);
    sla__free(a, f->val);
    sla__free(a, f->dinv);
    sla__free(a, f->own_rowptr);
    sla__free(a, f->own_colind);
    sla__free(a, f);
}

static void fact_destroy(sla__pc *pc)
{
    fact_free(&pc->alloc, pc->fact);
    pc->fact = NULL;
}

/* A fact with dpos, dinv (n each) and val (nval) allocated. */
static sla_status fact_alloc(sla_ctx *ctx, const sla_allocator *a, sla_int n, sla_int nval,
                             const char *name, fact **out)
{
    *out = NULL;
    fact *f = sla__calloc(a, 1, sizeof *f);
    if (f) {
        f->n = n;
        f->omega = 1.0;
        f->dpos = sla__malloc(a, (size_t)n, sizeof *f->dpos);
        f->dinv = sla__malloc(a, (size_t)n, sizeof *f->dinv);
        f->val = sla__malloc(a, (size_t)nval, sizeof *f->val);
    }
    if (!f || !f->dpos || !f->dinv || !f->val) {
        fact_free(a, f);
        return sla__error(ctx, SLA_ERR_NOMEM,
                          "out of memory for the %s preconditioner (n %lld, nnz %lld)", name,
                          (long long)n, (long long)nval);
    }
    *out = f;
    return SLA_OK;
}

static sla_status check_input(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla__pc *pc,
                              const char *name)
{
    if (!A || !pc)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s set-up: NULL matrix or preconditioner",
                          name);
    if (A->nrows != A->ncols || A->nrows != pc->n)
        return sla__error(ctx, SLA_ERR_DIMENSION,
                          "%s needs a square matrix of order %lld (got %lld x %lld)", name,
                          (long long)pc->n, (long long)A->nrows, (long long)A->ncols);
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s set-up: batch index %lld out of [0, %lld)",
                          name, (long long)ib, (long long)A->nbatch);
    return SLA_OK;
}

/* Position of the diagonal in each row of a CSR pattern (sorted columns);
 * a row without one is SLA_ERR_SINGULAR naming it. */
static sla_status find_diagonals(sla_ctx *ctx, sla_int n, const sla_int *rowptr,
                                 const int32_t *colind, const char *name, sla_int *dpos)
{
    for (sla_int i = 0; i < n; i++) {
        sla_int k = rowptr[i];
        while (k < rowptr[i + 1] && colind[k] < i) k++;
        if (k == rowptr[i + 1] || colind[k] != i)
            return sla__error(ctx, SLA_ERR_SINGULAR,
                              "%s: zero diagonal at row %lld (not stored)", name, (long long)i);
        dpos[i] = k;
    }
    return SLA_OK;
}

/* val[k] = A_ib[k] as double, for all nnz entries. */
static void load_values(const sla_matrix *A, sla_int ib, double *val)
{
    if (A->dtype == SLA_F64) {
        memcpy(val, (const double *)A->values + ib * A->nnz, (size_t)A->nnz * sizeof *val);
        return;
    }
    for (sla_int k = 0; k < A->nnz; k++) val[k] = sla__val(A, ib, k);
}

static void install(sla__pc *pc, fact *f,
                    sla_status (*apply)(const sla__pc *, bool, const double *, double *, int))
{
    pc->fact = f;
    pc->apply = apply;
    pc->destroy = fact_destroy;
}

/* ---- triangular sweeps ---------------------------------------------------
 * s scales the off-diagonal entries; dinv == NULL means a unit diagonal. */

/* Solve (diag + s lower) x = b in place (x holds b): forward substitution. */
static void lower_solve(const fact *f, double s, const double *dinv, double *x)
{
    const sla_int *rp = f->rowptr;
    const int32_t *ci = f->colind;
    const double *v = f->val;
    for (sla_int i = 0; i < f->n; i++) {
        double t = 0.0;
        for (sla_int k = rp[i]; k < f->dpos[i]; k++) t += v[k] * x[ci[k]]; /* sum_j<i l_ij x_j */
        double xi = x[i] - s * t;
        x[i] = dinv ? xi * dinv[i] : xi; /* x_i = (b_i - s sum) / d_i */
    }
}

/* Solve (diag + s upper) x = b in place: backward substitution. */
static void upper_solve(const fact *f, double s, const double *dinv, double *x)
{
    const sla_int *rp = f->rowptr;
    const int32_t *ci = f->colind;
    const double *v = f->val;
    for (sla_int i = f->n - 1; i >= 0; i--) {
        double t = 0.0;
        /* t = sum_j>i u_ij x_j */
        for (sla_int k = f->dpos[i] + 1; k < rp[i + 1]; k++) t += v[k] * x[ci[k]];
        double xi = x[i] - s * t;
        x[i] = dinv ? xi * dinv[i] : xi; /* x_i = (b_i - s sum) / d_i */
    }
}

/* Solve (diag + s lower)^T x = b in place: the transpose is upper
 * triangular, swept backward by columns of the stored rows. */
static void lower_t_solve(const fact *f, double s, const double *dinv, double *x)
{
    const sla_int *rp = f->rowptr;
    const int32_t *ci = f->colind;
    const double *v = f->val;
    for (sla_int i = f->n - 1; i >= 0; i--) {
        double xi = dinv ? x[i] * dinv[i] : x[i]; /* x_i final: all later columns applied */
        x[i] = xi;
        double sx = s * xi;
        for (sla_int k = rp[i]; k < f->dpos[i]; k++) x[ci[k]] -= v[k] * sx; /* b_j -= s l_ij x_i */
    }
}

/* Solve (diag + s upper)^T x = b in place: lower triangular, swept forward
 * by columns of the stored rows. */
static void upper_t_solve(const fact *f, double s, const double *dinv, double *x)
{
    const sla_int *rp = f->rowptr;
    const int32_t *ci = f->colind;
    const double *v = f->val;
    for (sla_int i = 0; i < f->n; i++) {
        double xi = dinv ? x[i] * dinv[i] : x[i]; /* x_i final: all earlier columns applied */
        x[i] = xi;
        double sx = s * xi;
        /* b_j -= s u_ij x_i for j > i */
        for (sla_int k = f->dpos[i] + 1; k < rp[i + 1]; k++) x[ci[k]] -= v[k] * sx;
    }
}

static void copy_in(sla_int n, const double *r, double *z)
{
    if (z != r) memcpy(z, r, (size_t)n * sizeof *z);
}

/* ---- SSOR ---------------------------------------------------------------- */

/* z = M^-1 r = w(2-w) (D + wU)^-1 D (D + wL)^-1 r, or with the transposes
 * M^-T r = w(2-w) (D + wL)^-T D (D + wU)^-T r. */
static sla_status ssor_apply(const sla__pc *pc, bool transpose, const double *r, double *z,
                             int nt)
{
    (void)nt;
    const fact *f = pc->fact;
    double w = f->omega, c = w * (2.0 - w);
    copy_in(f->n, r, z);
    if (transpose) upper_t_solve(f, w, f->dinv, z);
    else lower_solve(f, w, f->dinv, z);
    for (sla_int i = 0; i < f->n; i++) z[i] *= c * f->val[f->dpos[i]]; /* z = w(2-w) D z */
    if (transpose) lower_t_solve(f, w, f->dinv, z);
    else upper_solve(f, w, f->dinv, z);
    return SLA_OK;
}

sla_status sla__ssor_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, double omega,
                           sla__pc *pc)
{
    sla_status st = check_input(ctx, A, ib, pc, "SSOR");
    if (st != SLA_OK) return st;
    if (!(omega > 0.0 && omega < 2.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "SSOR weight omega = %g must lie in (0, 2)",
                          omega);
    fact *f = NULL;
    st = fact_alloc(ctx, &pc->alloc, A->nrows, A->nnz, "SSOR", &f);
    if (st != SLA_OK) return st;
    f->rowptr = A->rowptr;
    f->colind = A->colind;
    f->omega = omega;
    load_values(A, ib, f->val);
    st = find_diagonals(ctx, f->n, f->rowptr, f->colind, "SSOR", f->dpos);
    for (sla_int i = 0; st == SLA_OK && i < f->n; i++) {
        double d = f->val[f->dpos[i]];
        if (d == 0.0)
            st = sla__error(ctx, SLA_ERR_SINGULAR, "SSOR: zero diagonal at row %lld",
                            (long long)i);
        else
            f->dinv[i] = 1.0 / d; /* 1 / a_ii */
    }
    if (st != SLA_OK) {
        fact_free(&pc->alloc, f);
        return st;
    }
    install(pc, f, ssor_apply);
    return SLA_OK;
}

/* ---- ILU(0) -------------------------------------------------------------- */

/* z = M^-1 r = U^-1 L^-1 r, or M^-T r = L^-T U^-T r. */
static sla_status ilu0_apply(const sla__pc *pc, bool transpose, const double *r, double *z,
                             int nt)
{
    (void)nt;
    const fact *f = pc->fact;
    copy_in(f->n, r, z);
    if (transpose) {
        upper_t_solve(f, 1.0, f->dinv, z); /* U^T y = r */
        lower_t_solve(f, 1.0, NULL, z);    /* L^T z = y, unit diagonal */
    } else {
        lower_solve(f, 1.0, NULL, z);    /* L y = r, unit diagonal */
        upper_solve(f, 1.0, f->dinv, z); /* U z = y */
    }
    return SLA_OK;
}

/* In-place ILU(0), row by row (IKJ order): for each l_ik, k < i ascending,
 * l_ik = a_ik / u_kk, then a_ij -= l_ik u_kj for j > k on row i's pattern.
 * pos is n entries of -1, returned so. */
static sla_status ilu0_factor(sla_ctx *ctx, fact *f, sla_int *pos)
{
    const sla_int *rp = f->rowptr;
    const int32_t *ci = f->colind;
    double *lu = f->val;
    sla_status st = SLA_OK;
    for (sla_int i = 0; i < f->n && st == SLA_OK; i++) {
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) pos[ci[k]] = k;
        for (sla_int k = rp[i]; k < f->dpos[i]; k++) {
            sla_int c = ci[k];
            double l = lu[k] *= f->dinv[c]; /* l_ic = a_ic / u_cc */
            for (sla_int m = f->dpos[c] + 1; m < rp[c + 1]; m++) {
                sla_int p = pos[ci[m]];
                if (p >= 0) lu[p] -= l * lu[m]; /* a_ij -= l_ic u_cj, no fill */
            }
        }
        double piv = lu[f->dpos[i]];
        if (piv == 0.0 || !isfinite(piv))
            st = sla__error(ctx, SLA_ERR_SINGULAR, "ILU(0): %s pivot %g at row %lld",
                            piv == 0.0 ? "zero" : "non-finite", piv, (long long)i);
        else
            f->dinv[i] = 1.0 / piv; /* 1 / u_ii */
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) pos[ci[k]] = -1;
    }
    return st;
}

sla_status sla__ilu0_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla__pc *pc)
{
    sla_status st = check_input(ctx, A, ib, pc, "ILU(0)");
    if (st != SLA_OK) return st;
    fact *f = NULL;
    st = fact_alloc(ctx, &pc->alloc, A->nrows, A->nnz, "ILU(0)", &f);
    if (st != SLA_OK) return st;
    f->rowptr = A->rowptr;
    f->colind = A->colind;
    load_values(A, ib, f->val);
    sla_int *pos = sla__malloc(&pc->alloc, (size_t)f->n, sizeof *pos);
    if (!pos)
        st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the ILU(0) work array (n %lld)",
                        (long long)f->n);
    if (st == SLA_OK) st = find_diagonals(ctx, f->n, f->rowptr, f->colind, "ILU(0)", f->dpos);
    if (st == SLA_OK) {
        for (sla_int i = 0; i < f->n; i++) pos[i] = -1;
        st = ilu0_factor(ctx, f, pos);
    }
    sla__free(&pc->alloc, pos);
    if (st != SLA_OK) {
        fact_free(&pc->alloc, f);
        return st;
    }
    install(pc, f, ilu0_apply);
    return SLA_OK;
}

/* ---- IC(0) --------------------------------------------------------------- */

/* z = M^-1 r = L^-T L^-1 r; M is symmetric, so transpose changes nothing. */
static sla_status ic0_apply(const sla__pc *pc, bool transpose, const double *r, double *z,
                            int nt)
{
    (void)nt;
    (void)transpose;
    const fact *f = pc->fact;
    copy_in(f->n, r, z);
    lower_solve(f, 1.0, f->dinv, z);   /* L y = r */
    lower_t_solve(f, 1.0, f->dinv, z); /* L^T z = y */
    return SLA_OK;
}

/* Number of entries on or below the diagonal. */
static sla_int count_lower(const sla_matrix *A)
{
    sla_int cnt = 0;
    for (sla_int i = 0; i < A->nrows; i++)
        for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1] && A->colind[k] <= i; k++) cnt++;
    return cnt;
}

/* Copy the lower triangle of A_ib (pattern and values) into f's owned CSR;
 * rows end at the diagonal, which must be stored. */
static sla_status ic0_load_lower(sla_ctx *ctx, const sla_matrix *A, sla_int ib, fact *f)
{
    sla_int q = 0;
    f->own_rowptr[0] = 0;
    for (sla_int i = 0; i < A->nrows; i++) {
        for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1] && A->colind[k] <= i; k++) {
            f->own_colind[q] = A->colind[k];
            f->val[q++] = sla__val(A, ib, k);
        }
        f->own_rowptr[i + 1] = q;
        if (q == f->own_rowptr[i] || f->own_colind[q - 1] != i)
            return sla__error(ctx, SLA_ERR_SINGULAR,
                              "IC(0): zero diagonal at row %lld (not stored)", (long long)i);
        f->dpos[i] = q - 1;
    }
    return SLA_OK;
}

/* In-place IC(0), row by row: for j < i on row i's pattern (ascending),
 * l_ij = (a_ij - sum_{m<j} l_im l_jm) / l_jj, then
 * l_ii = sqrt(a_ii - sum_{m<i} l_im^2). pos is n entries of -1, returned so. */
static sla_status ic0_factor(sla_ctx *ctx, fact *f, sla_int *pos)
{
    const sla_int *rp = f->rowptr;
    const int32_t *ci = f->colind;
    double *l = f->val;
    sla_status st = SLA_OK;
    for (sla_int i = 0; i < f->n && st == SLA_OK; i++) {
        sla_int d = f->dpos[i];
        for (sla_int k = rp[i]; k < d; k++) pos[ci[k]] = k;
        double diag = l[d];
        for (sla_int k = rp[i]; k < d; k++) {
            sla_int j = ci[k];
            double s = l[k];
            for (sla_int m = rp[j]; m < f->dpos[j]; m++) {
                sla_int p = pos[ci[m]];
                if (p >= 0) s -= l[p] * l[m]; /* a_ij -= l_im l_jm, m < j */
            }
            l[k] = s * f->dinv[j]; /* l_ij = s / l_jj */
            diag -= l[k] * l[k];   /* a_ii -= l_ij^2 */
        }
        if (!(diag > 0.0) || !isfinite(diag))
            st = sla__error(ctx, SLA_ERR_NOT_SPD,
                            "IC(0) breakdown: non-positive pivot %g at row %lld; the matrix "
                            "may not be SPD (try ilu0 or jacobi)",
                            diag, (long long)i);
        else {
            l[d] = sqrt(diag);         /* l_ii */
            f->dinv[i] = 1.0 / l[d];
        }
        for (sla_int k = rp[i]; k < d; k++) pos[ci[k]] = -1;
    }
    return st;
}

sla_status sla__ic0_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla__pc *pc)
{
    sla_status st = check_input(ctx, A, ib, pc, "IC(0)");
    if (st != SLA_OK) return st;
    sla_int n = A->nrows, nl = count_lower(A);
    fact *f = NULL;
    st = fact_alloc(ctx, &pc->alloc, n, nl, "IC(0)", &f);
    if (st != SLA_OK) return st;
    f->own_rowptr = sla__malloc(&pc->alloc, (size_t)n + 1, sizeof *f->own_rowptr);
    f->own_colind = sla__malloc(&pc->alloc, (size_t)nl, sizeof *f->own_colind);
    sla_int *pos = sla__malloc(&pc->alloc, (size_t)n, sizeof *pos);
    if (!f->own_rowptr || !f->own_colind || !pos)
        st = sla__error(ctx, SLA_ERR_NOMEM,
                        "out of memory for the IC(0) preconditioner (n %lld, nnz %lld)",
                        (long long)n, (long long)nl);
    if (st == SLA_OK) {
        f->rowptr = f->own_rowptr;
        f->colind = f->own_colind;
        st = ic0_load_lower(ctx, A, ib, f);
    }
    if (st == SLA_OK) {
        for (sla_int i = 0; i < n; i++) pos[i] = -1;
        st = ic0_factor(ctx, f, pos);
    }
    sla__free(&pc->alloc, pos);
    if (st != SLA_OK) {
        fact_free(&pc->alloc, f);
        return st;
    }
    install(pc, f, ic0_apply);
    return SLA_OK;
}
