/* Equilibration (opts.equilibrate): the matrix K that the Krylov methods
 * and their preconditioners see, A itself or A with rows and columns scaled
 * by powers of two (exact), so that Krylov vectors and their dot products
 * stay far from overflow and underflow and badly scaled rows do not
 * dominate. Real and complex A alike: the scales come from |a_ij| (the
 * modulus for complex values) and are real, so K keeps A's structure
 * (symmetric, Hermitian, complex symmetric under D A D). */
#include "solver_internal.h"

#include <complex.h>
#include <math.h>
#include <string.h>

/* Entries or row maxima beyond these make method=auto's equilibration
 * (SLA_EQUILIBRATE_AUTO) scale the matrix: Krylov vectors and their dot
 * products then stay far from overflow and underflow. */
#define SLA_EQ_BIG 0x1p300
#define SLA_EQ_SMALL 0x1p-300
#define SLA_EQ_SPREAD 0x1p200
/* At most this many passes of the symmetric scaling (each halves the
 * exponent spread left: 2^2100 needs about 11). */
#define SLA_EQ_PASSES 40

void sla__solver_free_equilibration(sla_solver *S)
{
    sla__free(&S->alloc, S->eq_vals);
    sla__free(&S->alloc, S->eq_r);
    S->eq_vals = NULL;
    S->eq_r = S->eq_c = NULL;
    S->eq_on = false;
    S->K = S->A;
}

/* |a_k| of value array ib: the modulus for a complex A. */
static inline double eq_abs(const sla_matrix *A, bool cx, sla_int ib, sla_int k)
{
    return cx ? cabs(sla__zval(A, ib, k)) : fabs(sla__val(A, ib, k));
}

/* max(|Re a_k|, |Im a_k|): within a factor sqrt(2) of |a_k| and several
 * times cheaper than the modulus, for the decision (the thresholds are
 * powers of two far apart). */
static inline double eq_abs_fast(const sla_matrix *A, bool cx, sla_int ib, sla_int k)
{
    if (!cx) return fabs(sla__val(A, ib, k));
    sla__z z = sla__zval(A, ib, k);
    return fmax(fabs(creal(z)), fabs(cimag(z)));
}

/* 2^-floor(log2 |v|) rounded to the exponent (1 for v == 0): v times it lies in [0.5, 1). */
static double pow2_inverse(double v, bool half)
{
    if (!(v > 0.0) || !isfinite(v)) return 1.0;
    int e;
    frexp(v, &e);
    if (half) e = e >= 0 ? e / 2 : -((1 - e) / 2); /* floor(e / 2) */
    if (e < -1020) e = -1020; /* 2^-e stays finite (a subnormal |v|) */
    return ldexp(1.0, -e);
}

/* Symmetric scaling D A D of the moduli m (nnz, CSR order) by Ruiz's
 * iteration in powers of two: from d = 1, repeat d_i <- d_i 2^-floor(e_i /
 * 2), e_i the exponent of the largest |d_i a_ij d_j| in row i, until no d_i
 * changes (every row maximum in [1, 4)); each pass halves the exponent
 * spread left. The first pass alone (dgeequb's one-pass rule) is not
 * enough: a row whose largest entry couples it to a far larger row keeps a
 * tiny diagonal (D A D of a well-scaled A with d spread over 2^500 leaves
 * diagonals 2^-250 apart, and IC(0) pivots at rounding level). w: n
 * doubles of workspace. */
static void symmetric_scaling(const sla_matrix *A, const double *m, double *d, double *w)
{
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    sla_int n = A->nrows;
    for (sla_int i = 0; i < n; i++) d[i] = 1.0;
    for (int pass = 0; pass < SLA_EQ_PASSES; pass++) {
        for (sla_int i = 0; i < n; i++) {
            double rm = 0.0;
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) rm = fmax(rm, m[p] * d[i] * d[ci[p]]);
            w[i] = pow2_inverse(rm, true);
        }
        bool changed = false;
        for (sla_int i = 0; i < n; i++)
            if (w[i] != 1.0) d[i] *= w[i], changed = true;
        if (!changed) break;
    }
}

/* Decide and build K for the current values of A: LAPACK dgeequb-style
 * scaling by powers of two (exact: scaling a uniformly scaled matrix gives
 * back the unscaled one bit for bit). Nonsymmetric: rows to maximum ~1,
 * then columns (one pass: exact for a matrix whose rows alone were
 * scaled; Ruiz's iteration there settles on other equilibria, with tiny
 * ILU pivots). Symmetric: D A D by symmetric_scaling, so CG, MINRES and
 * COCG still apply. */
sla_status sla__solver_equilibrate(sla_ctx *ctx, sla_solver *S, bool symmetric)
{
    const sla_matrix *A = S->A;
    sla_int n = A->nrows, nnz = A->nnz, B = A->nbatch;
    bool cx = sla__is_complex(A);
    S->eq_sym = symmetric;
    S->K = A;
    S->eq_on = false;
    if (S->opts.equilibrate == SLA_EQUILIBRATE_OFF || n == 0) {
        sla__solver_free_equilibration(S);
        return SLA_OK;
    }
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    double gmax = 0.0, gmin = INFINITY; /* largest and smallest nonzero row maximum */
    /* float64 and complex128: row i's values are the doubles [w rp[i], w
     * rp[i+1]) (w = 2 for complex: real and imaginary parts), one
     * contiguous pass */
    int w = A->dtype == SLA_F64 ? 1 : A->dtype == SLA_C128 ? 2 : 0;
    /* rows over the context's threads (a maximum and a minimum: the same
     * with any count): every refresh of a solver runs this pass (2-D
     * diffusion 1e6: 3.3 ms serially, about half of it on 2 threads) */
    int nt = n >= SLA_PAR_MIN ? sla__threads(ctx) : 1;
    for (sla_int b = 0; b < B; b++)
#pragma omp parallel for num_threads(nt) schedule(static) reduction(max : gmax) reduction(min : gmin) if (nt > 1)
        for (sla_int i = 0; i < n; i++) {
            double m = 0.0;
            if (w) {
                const double *v = (const double *)A->values + (size_t)w * (size_t)(b * nnz);
                for (sla_int q = w * rp[i]; q < w * rp[i + 1]; q++) {
                    double a = fabs(v[q]);
                    m = a > m ? a : m;
                }
            } else {
                for (sla_int p = rp[i]; p < rp[i + 1]; p++) m = fmax(m, eq_abs_fast(A, cx, b, p));
            }
            if (m > gmax) gmax = m;
            if (m > 0.0 && m < gmin) gmin = m;
        }
    bool spread = gmax > SLA_EQ_SPREAD * gmin;
    bool need = S->opts.equilibrate == SLA_EQUILIBRATE_ON ||
                (gmax > 0.0 && (gmax > SLA_EQ_BIG || gmin < SLA_EQ_SMALL || spread));
    /* auto, for magnitude alone (row maxima within 2^200 of each other): one
     * power of two for the whole matrix, which keeps the iteration exactly
     * that of the unscaled matrix (only scaled) */
    bool uniform = S->opts.equilibrate == SLA_EQUILIBRATE_AUTO && !spread;
    if (!need) {
        sla__solver_free_equilibration(S);
        return SLA_OK;
    }
    if (cx && uniform) { /* the uniform scale from the moduli themselves */
        gmax = 0.0;
        for (sla_int b = 0; b < B; b++)
            for (sla_int p = 0; p < nnz; p++) gmax = fmax(gmax, eq_abs(A, cx, b, p));
    }
    if (!S->eq_r) {
        S->eq_r = sla__malloc(&S->alloc, (size_t)B * (size_t)n, 2 * sizeof(double));
        if (!S->eq_r) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the equilibration scales");
        S->eq_c = S->eq_r + (size_t)B * (size_t)n;
    }
    double *work = uniform || !symmetric ? NULL : sla__malloc(&S->alloc, (size_t)n, sizeof(double));
    if (!uniform && symmetric && !work) {
        sla__solver_free_equilibration(S);
        return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the equilibration workspace");
    }
    if (!S->eq_vals) {
        S->eq_vals = sla__malloc(&S->alloc, (size_t)B * (size_t)nnz, cx ? sizeof(sla__z) : sizeof(double));
        if (!S->eq_vals) {
            sla__free(&S->alloc, work);
            sla__solver_free_equilibration(S);
            return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the equilibrated matrix (%lld values)",
                              (long long)(B * nnz));
        }
    }
    for (sla_int b = 0; b < B; b++) {
        double *r = S->eq_r + b * n, *c = S->eq_c + b * n;
        /* the moduli |a_ij|, kept in K's own values until K is written */
        double *m = cx ? (double *)((sla__z *)S->eq_vals + b * nnz) : (double *)S->eq_vals + b * nnz;
        if (uniform) {
            double u = pow2_inverse(gmax, symmetric);
            for (sla_int i = 0; i < n; i++) r[i] = u, c[i] = symmetric ? u : 1.0;
        } else {
            for (sla_int p = 0; p < nnz; p++) m[p] = eq_abs(A, cx, b, p);
            if (symmetric) {
                symmetric_scaling(A, m, r, work);
                memcpy(c, r, (size_t)n * sizeof *c);
            } else {
                for (sla_int i = 0; i < n; i++) {
                    double rm = 0.0;
                    for (sla_int p = rp[i]; p < rp[i + 1]; p++) rm = fmax(rm, m[p]);
                    r[i] = pow2_inverse(rm, false);
                }
                for (sla_int j = 0; j < n; j++) c[j] = 0.0;
                for (sla_int i = 0; i < n; i++)
                    for (sla_int p = rp[i]; p < rp[i + 1]; p++) c[ci[p]] = fmax(c[ci[p]], m[p] * r[i]);
                for (sla_int j = 0; j < n; j++) c[j] = pow2_inverse(c[j], false);
            }
        }
        if (cx) { /* K = Dr A Dc in complex128 (from complex64 too) */
            sla__z *v = (sla__z *)S->eq_vals + b * nnz;
            for (sla_int i = 0; i < n; i++)
                for (sla_int p = rp[i]; p < rp[i + 1]; p++) v[p] = sla__zval(A, b, p) * r[i] * c[ci[p]];
        } else {
            double *v = (double *)S->eq_vals + b * nnz;
            for (sla_int i = 0; i < n; i++)
                for (sla_int p = rp[i]; p < rp[i + 1]; p++) v[p] = sla__val(A, b, p) * r[i] * c[ci[p]];
        }
    }
    sla__free(&S->alloc, work);
    S->eq_mat = *A;
    S->eq_mat.dtype = cx ? SLA_C128 : SLA_F64;
    S->eq_mat.values = S->eq_vals;
    S->eq_mat.own_rowptr = S->eq_mat.own_values = false;
    S->K = &S->eq_mat;
    S->eq_on = true;
    return SLA_OK;
}

