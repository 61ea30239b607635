/* The factorized preconditioners SSOR, IC(0) and ILU(0), and the storage,
 * set-up helpers and triangular sweeps they share with ILUT (precond_ilut.c).
 *
 * All four keep their factors on a CSR pattern with the position of each
 * row's diagonal, so every apply is a pair of sequential triangular sweeps:
 *
 *   SSOR(w): M = 1/(w(2-w)) (D + wL) D^-1 (D + wU), with A = L + D + U;
 *            values are A's own (copied to double), pattern is A's.
 *   ILU(0):  M = L U on A's pattern, L unit lower, U upper, one value array.
 *   IC(0):   M = L L^T, L on the lower triangle of A's pattern (compacted
 *            into an owned CSR copy whose last entry per row is the diagonal).
 *   ILUT:    A Q = L U on a pattern found while factoring (Saad's ILUT(tau,
 *            p) with ILUTP's threshold column pivoting Q, row by row):
 *            fill entries below droptol ||a_i||_2 are dropped and each row
 *            of L and of U keeps its ceil(fill nnz(a_i) / 2) largest;
 *            stored as ILU(0)'s (one owned CSR, L then the diagonal then U
 *            in each row), so the sweeps are ILU(0)'s, plus Q.
 *
 * Zero pivots (pc->shift, options.ilu_shift, on by default): a pivot of
 * row i with |p| <= PIVOT_TINY ||a_i||_2, or a diagonal A does not store,
 * becomes sign(p) PIVOT_SHIFT ||a_i||_2 (positive for IC(0) and for p = 0;
 * ||a_i|| of the row as the factor holds it: IC(0) its lower triangle; an
 * empty row takes 1), and pc->note counts them. This is PETSc's
 * PC_FACTOR_SHIFT_TYPE NONZERO in spirit, with a shift relative to the row
 * so it does not depend on A's scaling. Without the shift a pivot exactly 0
 * (or a diagonal not stored) is SLA_ERR_SINGULAR naming the row. A
 * clearly negative IC(0) pivot is never shifted: SLA_ERR_NOT_SPD.
 *
 * SSOR and ILU(0) borrow A's row pointers and column indices (the pattern
 * never changes and the solver requires A to outlive it) unless ILU(0) has
 * to insert diagonals A does not store (shift on); values are always
 * copied, so changing A's values does not affect a preconditioner already
 * set up. Transposed solves sweep the same CSR storage by columns, so no
 * transpose is built. Applies use no scratch memory (z may alias r), which
 * makes one preconditioner safe to apply from several threads at once. */
#include "precond_fact.h"

#include <stdio.h>

/* ||row i||_2 of a CSR value array. */
static double row_norm(const double *v, sla_int from, sla_int to)
{
    double s = 0.0;
    for (sla_int k = from; k < to; k++) s += v[k] * v[k];
    return sqrt(s);
}

/* pc->shifted and pc->note after a factorization that shifted `count`
 * pivots, the first at row `first`. */
void sla__fact_note_shifts(sla__pc *pc, const char *name, sla_int count, sla_int first,
                           sla_int missing)
{
    pc->shifted = count;
    pc->note[0] = '\0';
    if (count == 0) return;
    if (missing > 0)
        snprintf(pc->note, sizeof pc->note,
                 "%s: shifted %lld zero/tiny pivots (first at row %lld; %lld diagonals not "
                 "stored)", name, (long long)count, (long long)first, (long long)missing);
    else
        snprintf(pc->note, sizeof pc->note, "%s: shifted %lld zero/tiny pivots (first at row %lld)",
                 name, (long long)count, (long long)first);
}

/* ---- allocation and validation ------------------------------------------ */

void sla__fact_free(const sla_allocator *a, fact *f)
{
    if (!f) return;
    sla__free(a, f->dpos);
    sla__free(a, f->val);
    sla__free(a, f->dinv);
    sla__free(a, f->own_rowptr);
    sla__free(a, f->own_colind);
    sla__free(a, f->perm);
    sla__free(a, f->leaders);
    sla__free(a, f);
}

static void fact_destroy(sla__pc *pc)
{
    sla__fact_free(&pc->alloc, pc->fact);
    pc->fact = NULL;
}

/* A fact with dpos, dinv (n each) and val (nval) allocated. */
sla_status sla__fact_alloc(sla_ctx *ctx, const sla_allocator *a, sla_int n, sla_int nval,
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
        sla__fact_free(a, f);
        return sla__error(ctx, SLA_ERR_NOMEM,
                          "out of memory for the %s preconditioner (n %lld, nnz %lld)", name,
                          (long long)n, (long long)nval);
    }
    *out = f;
    return SLA_OK;
}

sla_status sla__fact_check_input(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                                 const sla__pc *pc, const char *name)
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

void sla__fact_install(sla__pc *pc, fact *f,
                       sla_status (*apply)(const sla__pc *, bool, const double *, double *, int))
{
    pc->fact = f;
    pc->apply = apply;
    pc->destroy = fact_destroy;
}

/* ---- triangular sweeps ---------------------------------------------------
 * s scales the off-diagonal entries; dinv == NULL means a unit diagonal. */

/* Solve (diag + s lower) x = b in place (x holds b): forward substitution. */
void sla__fact_lower_solve(const fact *f, double s, const double *dinv, double *x)
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
void sla__fact_upper_solve(const fact *f, double s, const double *dinv, double *x)
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
void sla__fact_lower_t_solve(const fact *f, double s, const double *dinv, double *x)
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
void sla__fact_upper_t_solve(const fact *f, double s, const double *dinv, double *x)
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
    if (transpose) sla__fact_upper_t_solve(f, w, f->dinv, z);
    else sla__fact_lower_solve(f, w, f->dinv, z);
    for (sla_int i = 0; i < f->n; i++) z[i] *= c * f->val[f->dpos[i]]; /* z = w(2-w) D z */
    if (transpose) sla__fact_lower_t_solve(f, w, f->dinv, z);
    else sla__fact_upper_solve(f, w, f->dinv, z);
    return SLA_OK;
}

sla_status sla__ssor_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, double omega,
                           sla__pc *pc)
{
    sla_status st = sla__fact_check_input(ctx, A, ib, pc, "SSOR");
    if (st != SLA_OK) return st;
    if (!(omega > 0.0 && omega < 2.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "SSOR weight omega = %g must lie in (0, 2)",
                          omega);
    fact *f = NULL;
    st = sla__fact_alloc(ctx, &pc->alloc, A->nrows, A->nnz, "SSOR", &f);
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
        sla__fact_free(&pc->alloc, f);
        return st;
    }
    sla__fact_install(pc, f, ssor_apply);
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
        sla__fact_upper_t_solve(f, 1.0, f->dinv, z); /* U^T y = r */
        sla__fact_lower_t_solve(f, 1.0, NULL, z);    /* L^T z = y, unit diagonal */
    } else {
        sla__fact_lower_solve(f, 1.0, NULL, z);    /* L y = r, unit diagonal */
        sla__fact_upper_solve(f, 1.0, f->dinv, z); /* U z = y */
    }
    return SLA_OK;
}

/* Number of rows of A without a stored diagonal. */
static sla_int count_missing_diagonals(const sla_matrix *A)
{
    sla_int m = 0;
    for (sla_int i = 0; i < A->nrows; i++) m += sla__find(A, i, i) < 0;
    return m;
}

/* A's pattern and values of array ib into f's owned CSR (nnz + missing
 * entries), with an explicit 0 inserted where a row lacks its diagonal. */
static void load_with_diagonals(const sla_matrix *A, sla_int ib, fact *f)
{
    sla_int q = 0;
    f->own_rowptr[0] = 0;
    for (sla_int i = 0; i < A->nrows; i++) {
        bool have = false;
        for (sla_int k = A->rowptr[i]; k <= A->rowptr[i + 1]; k++) {
            bool end = k == A->rowptr[i + 1];
            if (!have && (end || A->colind[k] >= i)) {
                if (end || A->colind[k] > i) { /* the missing diagonal */
                    f->own_colind[q] = (int32_t)i;
                    f->val[q++] = 0.0;
                }
                have = true;
            }
            if (end) break;
            f->own_colind[q] = A->colind[k];
            f->val[q++] = sla__val(A, ib, k);
        }
        f->own_rowptr[i + 1] = q;
    }
    f->rowptr = f->own_rowptr;
    f->colind = f->own_colind;
}

/* In-place ILU(0), row by row (IKJ order): for each l_ik, k < i ascending,
 * l_ik = a_ik / u_kk, then a_ij -= l_ik u_kj for j > k on row i's pattern.
 * Row i still holds a_i when its turn comes, so its norm is taken then.
 * pos is n entries of -1, returned so. */
static sla_status ilu0_factor(sla_ctx *ctx, fact *f, bool shift, sla_int *pos,
                              sla_int *nshift, sla_int *first)
{
    const sla_int *rp = f->rowptr;
    const int32_t *ci = f->colind;
    double *lu = f->val;
    sla_status st = SLA_OK;
    for (sla_int i = 0; i < f->n && st == SLA_OK; i++) {
        double rnorm = shift ? row_norm(lu, rp[i], rp[i + 1]) : 0.0;
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) pos[ci[k]] = k;
        for (sla_int k = rp[i]; k < f->dpos[i]; k++) {
            sla_int c = ci[k];
            double l = lu[k] *= f->dinv[c]; /* l_ic = a_ic / u_cc */
            for (sla_int m = f->dpos[c] + 1; m < rp[c + 1]; m++) {
                sla_int p = pos[ci[m]];
                if (p >= 0) lu[p] -= l * lu[m]; /* a_ij -= l_ic u_cj, no fill */
            }
        }
        double *piv = &lu[f->dpos[i]];
        if (shift && isfinite(*piv) && shift_pivot(piv, rnorm) && (*nshift)++ == 0) *first = i;
        if (*piv == 0.0 || !isfinite(*piv))
            st = sla__error(ctx, SLA_ERR_SINGULAR, "ILU(0): %s pivot %g at row %lld",
                            *piv == 0.0 ? "zero" : "non-finite", *piv, (long long)i);
        else
            f->dinv[i] = 1.0 / *piv; /* 1 / u_ii */
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) pos[ci[k]] = -1;
    }
    return st;
}

sla_status sla__ilu0_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla__pc *pc)
{
    sla_status st = sla__fact_check_input(ctx, A, ib, pc, "ILU(0)");
    if (st != SLA_OK) return st;
    /* Diagonals A does not store: inserted (an owned pattern) when shifting. */
    sla_int missing = pc->shift ? count_missing_diagonals(A) : 0;
    fact *f = NULL;
    st = sla__fact_alloc(ctx, &pc->alloc, A->nrows, A->nnz + missing, "ILU(0)", &f);
    if (st != SLA_OK) return st;
    if (missing > 0) {
        f->own_rowptr = sla__malloc(&pc->alloc, (size_t)f->n + 1, sizeof *f->own_rowptr);
        f->own_colind = sla__malloc(&pc->alloc, (size_t)(A->nnz + missing), sizeof *f->own_colind);
        if (!f->own_rowptr || !f->own_colind) {
            sla__fact_free(&pc->alloc, f);
            return sla__error(ctx, SLA_ERR_NOMEM,
                              "out of memory for the ILU(0) preconditioner (n %lld, nnz %lld)",
                              (long long)A->nrows, (long long)(A->nnz + missing));
        }
        load_with_diagonals(A, ib, f);
    } else {
        f->rowptr = A->rowptr;
        f->colind = A->colind;
        load_values(A, ib, f->val);
    }
    sla_int *pos = sla__malloc(&pc->alloc, (size_t)f->n, sizeof *pos);
    if (!pos)
        st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the ILU(0) work array (n %lld)",
                        (long long)f->n);
    if (st == SLA_OK) st = find_diagonals(ctx, f->n, f->rowptr, f->colind, "ILU(0)", f->dpos);
    sla_int nshift = 0, first = -1;
    if (st == SLA_OK) {
        for (sla_int i = 0; i < f->n; i++) pos[i] = -1;
        st = ilu0_factor(ctx, f, pc->shift, pos, &nshift, &first);
    }
    sla__free(&pc->alloc, pos);
    if (st != SLA_OK) {
        sla__fact_free(&pc->alloc, f);
        return st;
    }
    sla__fact_note_shifts(pc, "ILU(0)", nshift, first, missing);
    sla__fact_install(pc, f, ilu0_apply);
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
    sla__fact_lower_solve(f, 1.0, f->dinv, z);   /* L y = r */
    sla__fact_lower_t_solve(f, 1.0, f->dinv, z); /* L^T z = y */
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
 * rows end at the diagonal, which must be stored unless `insert` (then a
 * missing one is an explicit 0). */
static sla_status ic0_load_lower(sla_ctx *ctx, const sla_matrix *A, sla_int ib, bool insert,
                                 fact *f)
{
    sla_int q = 0;
    f->own_rowptr[0] = 0;
    for (sla_int i = 0; i < A->nrows; i++) {
        for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1] && A->colind[k] <= i; k++) {
            f->own_colind[q] = A->colind[k];
            f->val[q++] = sla__val(A, ib, k);
        }
        if (insert && (q == f->own_rowptr[i] || f->own_colind[q - 1] != i)) {
            f->own_colind[q] = (int32_t)i;
            f->val[q++] = 0.0;
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
 * l_ii = sqrt(a_ii - sum_{m<i} l_im^2); with `shift`, a zero or tiny
 * a_ii - sum (|.| <= PIVOT_TINY ||a_i||) becomes PIVOT_SHIFT ||a_i||.
 * pos is n entries of -1, returned so. */
static sla_status ic0_factor(sla_ctx *ctx, fact *f, bool shift, sla_int *pos, sla_int *nshift,
                             sla_int *first)
{
    const sla_int *rp = f->rowptr;
    const int32_t *ci = f->colind;
    double *l = f->val;
    sla_status st = SLA_OK;
    for (sla_int i = 0; i < f->n && st == SLA_OK; i++) {
        sla_int d = f->dpos[i];
        double rnorm = shift ? row_norm(l, rp[i], rp[i + 1]) : 0.0;
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
        if (shift && isfinite(diag) && shift_pivot(&diag, rnorm)) {
            diag = fabs(diag); /* IC(0): positive */
            if ((*nshift)++ == 0) *first = i;
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
    sla_status st = sla__fact_check_input(ctx, A, ib, pc, "IC(0)");
    if (st != SLA_OK) return st;
    sla_int n = A->nrows, missing = pc->shift ? count_missing_diagonals(A) : 0;
    sla_int nl = count_lower(A) + missing;
    fact *f = NULL;
    st = sla__fact_alloc(ctx, &pc->alloc, n, nl, "IC(0)", &f);
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
        st = ic0_load_lower(ctx, A, ib, pc->shift, f);
    }
    sla_int nshift = 0, first = -1;
    if (st == SLA_OK) {
        for (sla_int i = 0; i < n; i++) pos[i] = -1;
        st = ic0_factor(ctx, f, pc->shift, pos, &nshift, &first);
    }
    sla__free(&pc->alloc, pos);
    if (st != SLA_OK) {
        sla__fact_free(&pc->alloc, f);
        return st;
    }
    sla__fact_note_shifts(pc, "IC(0)", nshift, first, missing);
    sla__fact_install(pc, f, ic0_apply);
    return SLA_OK;
}
