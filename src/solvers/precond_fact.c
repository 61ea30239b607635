/* The factorized preconditioners: SSOR, IC(0), ILU(0) and ILUT.
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
#include "krylov.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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
    sla_int *own_rowptr;  /* owned pattern (IC(0), ILUT, ILU(0) with inserted diagonals) */
    int32_t *own_colind;
    /* ILUT with column pivoting: A Q = L U with Q e_p = e_perm[p]; NULL
     * when no column moved. The permutation is applied in place, one cycle
     * at a time from its leader (no scratch, so applies stay reentrant). */
    int32_t *perm;
    int32_t *leaders;
    sla_int nleaders;
} fact;

/* The pivot rule (see the top of the file), measured on the zero-diagonal
 * matrices of tests/data (README, "Zero pivots"). PIVOT_TINY: a larger
 * threshold also replaces small pivots that are right (fs_183_6 with ILU(0):
 * 7 GMRES iterations at 1e-12, 32 at 1e-3). PIVOT_SHIFT: ILU(0) on west0067
 * converges in 133 GMRES iterations with 1e-1 and diverges with 1e-3 or
 * 1e-2 (the factor's inverse grows like 1 / shift); ILUT is nearly
 * indifferent (it pivots instead). */
#define PIVOT_TINY 1e-12
#define PIVOT_SHIFT 1e-1

/* Replace a zero or tiny pivot p of a row of 2-norm rnorm: true when it did. */
static bool shift_pivot(double *p, double rnorm)
{
    double r = rnorm > 0.0 ? rnorm : 1.0;
    if (!(fabs(*p) <= PIVOT_TINY * rnorm)) return false;
    *p = (*p < 0.0 ? -PIVOT_SHIFT : PIVOT_SHIFT) * r;
    return true;
}

/* ||row i||_2 of a CSR value array. */
static double row_norm(const double *v, sla_int from, sla_int to)
{
    double s = 0.0;
    for (sla_int k = from; k < to; k++) s += v[k] * v[k];
    return sqrt(s);
}

/* pc->shifted and pc->note after a factorization that shifted `count`
 * pivots, the first at row `first`. */
static void note_shifts(sla__pc *pc, const char *name, sla_int count, sla_int first,
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

static void fact_free(const sla_allocator *a, fact *f)
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
    sla_status st = check_input(ctx, A, ib, pc, "ILU(0)");
    if (st != SLA_OK) return st;
    /* Diagonals A does not store: inserted (an owned pattern) when shifting. */
    sla_int missing = pc->shift ? count_missing_diagonals(A) : 0;
    fact *f = NULL;
    st = fact_alloc(ctx, &pc->alloc, A->nrows, A->nnz + missing, "ILU(0)", &f);
    if (st != SLA_OK) return st;
    if (missing > 0) {
        f->own_rowptr = sla__malloc(&pc->alloc, (size_t)f->n + 1, sizeof *f->own_rowptr);
        f->own_colind = sla__malloc(&pc->alloc, (size_t)(A->nnz + missing), sizeof *f->own_colind);
        if (!f->own_rowptr || !f->own_colind) {
            fact_free(&pc->alloc, f);
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
        fact_free(&pc->alloc, f);
        return st;
    }
    note_shifts(pc, "ILU(0)", nshift, first, missing);
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
    sla_status st = check_input(ctx, A, ib, pc, "IC(0)");
    if (st != SLA_OK) return st;
    sla_int n = A->nrows, missing = pc->shift ? count_missing_diagonals(A) : 0;
    sla_int nl = count_lower(A) + missing;
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
        st = ic0_load_lower(ctx, A, ib, pc->shift, f);
    }
    sla_int nshift = 0, first = -1;
    if (st == SLA_OK) {
        for (sla_int i = 0; i < n; i++) pos[i] = -1;
        st = ic0_factor(ctx, f, pc->shift, pos, &nshift, &first);
    }
    sla__free(&pc->alloc, pos);
    if (st != SLA_OK) {
        fact_free(&pc->alloc, f);
        return st;
    }
    note_shifts(pc, "IC(0)", nshift, first, missing);
    install(pc, f, ic0_apply);
    return SLA_OK;
}

/* ---- ILUT ---------------------------------------------------------------- */

/* Work arrays of one ILUT factorization, n entries each. Columns are
 * positions (after the column permutation so far) while a row is built. */
typedef struct ilut_work {
    double *w;          /* the row being factored, dense (0 off its pattern) */
    unsigned char *in;  /* where position p is on that row's pattern: 2 for an entry
                           of A (never dropped by the threshold), 1 for fill */
    int32_t *heap;      /* its L positions not yet eliminated: a min-heap */
    int32_t *lcol;      /* its L positions kept so far */
    int32_t *ucol;      /* its U positions (beyond the diagonal) */
    int32_t *perm;      /* position -> column of A */
    int32_t *iperm;     /* column of A -> position */
} ilut_work;

static void heap_push(int32_t *h, sla_int *len, int32_t c)
{
    sla_int k = (*len)++;
    while (k > 0 && h[(k - 1) / 2] > c) { /* sift up */
        h[k] = h[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    h[k] = c;
}

static int32_t heap_pop(int32_t *h, sla_int *len)
{
    int32_t top = h[0], last = h[--(*len)];
    sla_int k = 0, n = *len;
    for (;;) { /* sift `last` down from the root */
        sla_int c = 2 * k + 1;
        if (c >= n) break;
        if (c + 1 < n && h[c + 1] < h[c]) c++;
        if (h[c] >= last) break;
        h[k] = h[c];
        k = c;
    }
    if (n > 0) h[k] = last;
    return top;
}

/* Reorder c[0, m) so that c[0, p) hold the p entries of largest |w[c]|
 * (p < m): a quickselect. */
static void select_largest(int32_t *c, sla_int m, sla_int p, const double *w)
{
    sla_int lo = 0, hi = m - 1;
    while (lo < hi) {
        double piv = fabs(w[c[lo + (hi - lo) / 2]]);
        sla_int a = lo, b = hi;
        while (a <= b) {
            while (fabs(w[c[a]]) > piv) a++;
            while (fabs(w[c[b]]) < piv) b--;
            if (a <= b) {
                int32_t t = c[a];
                c[a++] = c[b];
                c[b--] = t;
            }
        }
        /* [lo, b] >= piv >= [a, hi] in magnitude */
        if (p - 1 <= b) hi = b;
        else if (p - 1 >= a) lo = a;
        else break;
    }
}

static int cmp_col(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Entries kept in each of row i's L and U parts: ceil(fill nnz(a_i) / 2),
 * no more than the part can hold. */
static void ilut_limits(const sla_matrix *A, sla_int i, double fill, sla_int *pl, sla_int *pu)
{
    double p = ceil(fill * (double)(A->rowptr[i + 1] - A->rowptr[i]) * 0.5);
    *pl = p < (double)i ? (sla_int)p : i;
    *pu = p < (double)(A->nrows - 1 - i) ? (sla_int)p : A->nrows - 1 - i;
}

/* Settings of one ILUT factorization. */
typedef struct ilut_par {
    double droptol, fill, pivot;
    bool shift;
} ilut_par;

/* Saad's ILUT with threshold column pivoting (ILUTP), row by row (IKJ):
 * row i of A into w (by position); its L positions eliminated in
 * increasing order (a heap, since elimination adds fill), each
 * l_ik = w_k / u_kk dropped when |l_ik| <= tau_i = droptol ||a_i||_2, else
 * w -= l_ik u_k (fill allowed); U drops entries <= tau_i. Entries on A's
 * own pattern are exempt from that threshold (a row whose entries span
 * many magnitudes keeps its small ones, as ILU(0) would: olm500 needs 139
 * GMRES iterations without the exemption, 1 with it). When the pivot
 * w_i is below pivot * max_j>i |w_j| the column of that maximum takes
 * position i (the pivot is then that entry); L and U keep their p largest;
 * a zero or tiny pivot is shifted (`shift`). U rows are stored with A's
 * column numbers while positions may still move, and renumbered at the
 * end. f's owned arrays have room for every row's limits. */
static sla_status ilut_factor(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const ilut_par *par,
                              fact *f, ilut_work *wk, sla_int *nshift, sla_int *first,
                              sla_int *nswap)
{
    sla_int n = f->n, q = 0;
    double *w = wk->w;
    unsigned char *in = wk->in;
    int32_t *perm = wk->perm, *iperm = wk->iperm;
    sla_int *rp = f->own_rowptr;
    int32_t *ci = f->own_colind;
    double *v = f->val;
    rp[0] = 0;
    for (sla_int i = 0; i < n; i++) perm[i] = iperm[i] = (int32_t)i;
    for (sla_int i = 0; i < n; i++) {
        sla_int nh = 0, nlc = 0, nuc = 0, pl, pu;
        ilut_limits(A, i, par->fill, &pl, &pu);
        double s2 = 0.0;
        w[i] = 0.0;
        in[i] = 1;
        for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) { /* w = a_i */
            int32_t c = iperm[A->colind[k]];
            double a = sla__val(A, ib, k);
            s2 += a * a;
            w[c] = a;
            in[c] = 2;
            if (c == i) continue;
            if (c < i) heap_push(wk->heap, &nh, c);
            else wk->ucol[nuc++] = c;
        }
        double rnorm = sqrt(s2), tau = par->droptol * rnorm;
        while (nh > 0) {
            int32_t k = heap_pop(wk->heap, &nh);
            double l = w[k] * f->dinv[k]; /* l_ik = w_k / u_kk */
            if (in[k] == 1 && !(fabs(l) > tau)) { /* dropped fill: no later update reaches k */
                w[k] = 0.0;
                in[k] = 0;
                continue;
            }
            w[k] = l;
            wk->lcol[nlc++] = k;
            for (sla_int m = f->dpos[k] + 1; m < rp[k + 1]; m++) { /* w -= l_ik u_k */
                int32_t j = iperm[ci[m]];
                if (!in[j]) {
                    in[j] = 1;
                    w[j] = 0.0;
                    if (j < i) heap_push(wk->heap, &nh, j);
                    else wk->ucol[nuc++] = j;
                }
                w[j] -= l * v[m];
            }
        }
        /* U beyond the diagonal: drop the small; find the largest */
        sla_int nu = 0, big = -1;
        for (sla_int t = 0; t < nuc; t++) {
            int32_t j = wk->ucol[t];
            if (in[j] == 2 || fabs(w[j]) > tau) {
                if (big < 0 || fabs(w[j]) > fabs(w[wk->ucol[big]])) big = nu;
                wk->ucol[nu++] = j;
            } else {
                w[j] = 0.0;
                in[j] = 0;
            }
        }
        if (big >= 0 && fabs(w[i]) < par->pivot * fabs(w[wk->ucol[big]])) {
            /* column pivoting: positions i and j swap columns of A */
            int32_t j = wk->ucol[big];
            double t = w[i];
            w[i] = w[j];
            w[j] = t;
            unsigned char fl = in[i];
            in[i] = in[j];
            in[j] = fl;
            int32_t ci_ = perm[i];
            perm[i] = perm[j];
            perm[j] = ci_;
            iperm[perm[i]] = (int32_t)i;
            iperm[perm[j]] = j;
            (*nswap)++;
            if (in[j] == 1 && !(fabs(w[j]) > tau)) { /* the old pivot, a U entry now */
                w[j] = 0.0;
                in[j] = 0;
                wk->ucol[big] = wk->ucol[--nu];
            }
        }
        sla_int nl = nlc;
        if (nl > pl) select_largest(wk->lcol, nl, pl, w);
        if (nu > pu) select_largest(wk->ucol, nu, pu, w);
        for (sla_int t = pl; t < nl; t++) { /* past the limits: dropped */
            in[wk->lcol[t]] = 0;
            w[wk->lcol[t]] = 0.0;
        }
        for (sla_int t = pu; t < nu; t++) {
            in[wk->ucol[t]] = 0;
            w[wk->ucol[t]] = 0.0;
        }
        if (nl > pl) nl = pl;
        if (nu > pu) nu = pu;
        qsort(wk->lcol, (size_t)nl, sizeof *wk->lcol, cmp_col);

        double piv = w[i];
        if (par->shift && isfinite(piv) && shift_pivot(&piv, rnorm) && (*nshift)++ == 0)
            *first = i;
        /* write the row: L (positions), the diagonal, U (columns of A); clear w, in */
        for (sla_int t = 0; t < nl; t++) {
            int32_t j = wk->lcol[t];
            ci[q] = j;
            v[q++] = w[j];
            w[j] = 0.0;
            in[j] = 0;
        }
        f->dpos[i] = q;
        ci[q] = (int32_t)i;
        v[q++] = piv;
        w[i] = 0.0;
        in[i] = 0;
        for (sla_int t = 0; t < nu; t++) {
            int32_t j = wk->ucol[t];
            ci[q] = perm[j];
            v[q++] = w[j];
            w[j] = 0.0;
            in[j] = 0;
        }
        rp[i + 1] = q;
        if (piv == 0.0 || !isfinite(piv))
            return sla__error(ctx, SLA_ERR_SINGULAR, "ILUT: %s pivot %g at row %lld",
                              piv == 0.0 ? "zero" : "non-finite", piv, (long long)i);
        f->dinv[i] = 1.0 / piv;
    }
    /* U's columns of A to final positions (the diagonal and L already are
     * positions); the sweeps do not need a row's U entries in order */
    if (*nswap > 0)
        for (sla_int i = 0; i < n; i++)
            for (sla_int k = f->dpos[i] + 1; k < rp[i + 1]; k++) ci[k] = iperm[ci[k]];
    return SLA_OK;
}

/* z <- Q z, i.e. z[perm[p]] = z[p], one cycle at a time. */
static void permute_fwd(const fact *f, double *z)
{
    for (sla_int c = 0; c < f->nleaders; c++) {
        int32_t p0 = f->leaders[c], p = f->perm[p0];
        double carry = z[p0];
        for (;;) {
            double t = z[p];
            z[p] = carry;
            carry = t;
            if (p == p0) break;
            p = f->perm[p];
        }
    }
}

/* z <- Q^T z, i.e. z[p] = z[perm[p]]. */
static void permute_inv(const fact *f, double *z)
{
    for (sla_int c = 0; c < f->nleaders; c++) {
        int32_t p0 = f->leaders[c], p = p0;
        double t = z[p0];
        while (f->perm[p] != p0) {
            z[p] = z[f->perm[p]];
            p = f->perm[p];
        }
        z[p] = t;
    }
}

/* z = M^-1 r = Q U^-1 L^-1 r, or M^-T r = L^-T U^-T Q^T r. */
static sla_status ilut_apply(const sla__pc *pc, bool transpose, const double *r, double *z,
                             int nt)
{
    (void)nt;
    const fact *f = pc->fact;
    copy_in(f->n, r, z);
    if (transpose) {
        if (f->perm) permute_inv(f, z);
        upper_t_solve(f, 1.0, f->dinv, z); /* U^T y = Q^T r */
        lower_t_solve(f, 1.0, NULL, z);    /* L^T z = y, unit diagonal */
    } else {
        lower_solve(f, 1.0, NULL, z);    /* L y = r, unit diagonal */
        upper_solve(f, 1.0, f->dinv, z); /* U y' = y */
        if (f->perm) permute_fwd(f, z);  /* z = Q y' */
    }
    return SLA_OK;
}

/* f->perm (taken from the work arrays) and the leaders of its cycles;
 * `seen` is n zeros. False when out of memory. */
static bool ilut_keep_perm(const sla_allocator *a, fact *f, ilut_work *wk, unsigned char *seen)
{
    sla_int nl = 0;
    for (sla_int p = 0; p < f->n; p++) {
        if (seen[p] || wk->perm[p] == p) continue;
        nl++;
        for (int32_t q = (int32_t)p; !seen[q]; q = wk->perm[q]) seen[q] = 1;
    }
    f->leaders = sla__malloc(a, (size_t)(nl > 0 ? nl : 1), sizeof *f->leaders);
    if (!f->leaders) return false;
    memset(seen, 0, (size_t)f->n);
    for (sla_int p = 0; p < f->n; p++) {
        if (seen[p] || wk->perm[p] == p) continue;
        f->leaders[f->nleaders++] = (int32_t)p;
        for (int32_t q = (int32_t)p; !seen[q]; q = wk->perm[q]) seen[q] = 1;
    }
    f->perm = wk->perm;
    wk->perm = NULL;
    return true;
}

/* Move f's factor into arrays of its exact size when that saves at least
 * half (keeps the larger ones if the allocation fails). */
static void ilut_shrink(const sla_allocator *a, fact *f, sla_int cap)
{
    sla_int used = f->own_rowptr[f->n];
    if (used >= cap / 2) return;
    int32_t *c = sla__malloc(a, (size_t)(used > 0 ? used : 1), sizeof *c);
    double *v = sla__malloc(a, (size_t)(used > 0 ? used : 1), sizeof *v);
    if (!c || !v) {
        sla__free(a, c);
        sla__free(a, v);
        return;
    }
    memcpy(c, f->own_colind, (size_t)used * sizeof *c);
    memcpy(v, f->val, (size_t)used * sizeof *v);
    sla__free(a, f->own_colind);
    sla__free(a, f->val);
    f->own_colind = c;
    f->colind = c;
    f->val = v;
}


sla_status sla__ilut_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, double droptol,
                           double fill, double pivot, sla__pc *pc)
{
    sla_status st = check_input(ctx, A, ib, pc, "ILUT");
    if (st != SLA_OK) return st;
    if (!(droptol >= 0.0) || !isfinite(droptol))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "ILUT: drop tolerance %g must be finite and >= 0",
                          droptol);
    if (!(fill >= 0.0) || !(fill <= 1e6))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "ILUT: fill %g must lie in [0, 1e6]", fill);
    if (!(pivot >= 0.0 && pivot <= 1.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "ILUT: pivot threshold %g must lie in [0, 1]",
                          pivot);
    ilut_par par = {droptol, fill == 0.0 ? 10.0 : fill, pivot, pc->shift};
    sla_int n = A->nrows, cap = 0;
    for (sla_int i = 0; i < n; i++) {
        sla_int pl, pu;
        ilut_limits(A, i, par.fill, &pl, &pu);
        cap += pl + pu + 1;
    }
    fact *f = NULL;
    st = fact_alloc(ctx, &pc->alloc, n, cap > 0 ? cap : 1, "ILUT", &f);
    if (st != SLA_OK) return st;
    f->own_rowptr = sla__malloc(&pc->alloc, (size_t)n + 1, sizeof *f->own_rowptr);
    f->own_colind = sla__malloc(&pc->alloc, (size_t)(cap > 0 ? cap : 1), sizeof *f->own_colind);
    ilut_work wk = {0};
    size_t n1 = (size_t)n + 1;
    wk.w = sla__calloc(&pc->alloc, n1, sizeof *wk.w);
    wk.in = sla__calloc(&pc->alloc, n1, sizeof *wk.in);
    wk.heap = sla__malloc(&pc->alloc, n1, sizeof *wk.heap);
    wk.lcol = sla__malloc(&pc->alloc, n1, sizeof *wk.lcol);
    wk.ucol = sla__malloc(&pc->alloc, n1, sizeof *wk.ucol);
    wk.perm = sla__malloc(&pc->alloc, n1, sizeof *wk.perm);
    wk.iperm = sla__malloc(&pc->alloc, n1, sizeof *wk.iperm);
    if (!f->own_rowptr || !f->own_colind || !wk.w || !wk.in || !wk.heap || !wk.lcol ||
        !wk.ucol || !wk.perm || !wk.iperm)
        st = sla__error(ctx, SLA_ERR_NOMEM,
                        "out of memory for the ILUT preconditioner (n %lld, room for %lld "
                        "entries)", (long long)n, (long long)cap);
    sla_int nshift = 0, first = -1, nswap = 0;
    if (st == SLA_OK) {
        f->rowptr = f->own_rowptr;
        f->colind = f->own_colind;
        st = ilut_factor(ctx, A, ib, &par, f, &wk, &nshift, &first, &nswap);
    }
    if (st == SLA_OK && nswap > 0 && !ilut_keep_perm(&pc->alloc, f, &wk, wk.in))
        st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the ILUT column permutation");
    sla__free(&pc->alloc, wk.w);
    sla__free(&pc->alloc, wk.in);
    sla__free(&pc->alloc, wk.heap);
    sla__free(&pc->alloc, wk.lcol);
    sla__free(&pc->alloc, wk.ucol);
    sla__free(&pc->alloc, wk.perm);
    sla__free(&pc->alloc, wk.iperm);
    if (st != SLA_OK) {
        fact_free(&pc->alloc, f);
        return st;
    }
    ilut_shrink(&pc->alloc, f, cap);
    note_shifts(pc, "ILUT", nshift, first, 0);
    install(pc, f, ilut_apply);
    return SLA_OK;
}
