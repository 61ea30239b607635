/* Equilibration (opts.equilibrate): the matrix K that the Krylov methods
 * and their preconditioners see, A itself or A with rows and columns scaled
 * by powers of two (exact), so that Krylov vectors and their dot products
 * stay far from overflow and underflow and badly scaled rows do not
 * dominate. */
#include "solver_internal.h"

#include <math.h>
#include <string.h>

/* Entries or row maxima beyond these make method=auto's equilibration
 * (SLA_EQUILIBRATE_AUTO) scale the matrix: Krylov vectors and their dot
 * products then stay far from overflow and underflow. */
#define SLA_EQ_BIG 0x1p300
#define SLA_EQ_SMALL 0x1p-300
#define SLA_EQ_SPREAD 0x1p200

void sla__solver_free_equilibration(sla_solver *S)
{
    sla__free(&S->alloc, S->eq_vals);
    sla__free(&S->alloc, S->eq_r);
    S->eq_vals = S->eq_r = S->eq_c = NULL;
    S->eq_on = false;
    S->K = S->A;
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

/* Decide and build K for the current values of A: LAPACK dgeequb-style
 * scaling by powers of two (exact: scaling a uniformly scaled matrix gives
 * back the unscaled one bit for bit). Nonsymmetric: rows to maximum ~1,
 * then columns. Symmetric: D A D with d_i = 2^-floor(e_i / 2), e_i the
 * exponent of row i's largest entry, so CG and MINRES still apply. */
sla_status sla__solver_equilibrate(sla_ctx *ctx, sla_solver *S)
{
    const sla_matrix *A = S->A;
    sla_int n = A->nrows, nnz = A->nnz, B = A->nbatch;
    S->K = A;
    S->eq_on = false;
    if (S->opts.equilibrate == SLA_EQUILIBRATE_OFF || n == 0) {
        sla__solver_free_equilibration(S);
        return SLA_OK;
    }
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    double gmax = 0.0, gmin = INFINITY; /* largest and smallest nonzero row maximum */
    for (sla_int b = 0; b < B; b++)
        for (sla_int i = 0; i < n; i++) {
            double m = 0.0;
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) {
                double a = fabs(sla__val(A, b, p));
                if (a > m) m = a;
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
    if (!S->eq_r) {
        S->eq_r = sla__malloc(&S->alloc, (size_t)B * (size_t)n, 2 * sizeof(double));
        if (!S->eq_r) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the equilibration scales");
        S->eq_c = S->eq_r + (size_t)B * (size_t)n;
    }
    if (!S->eq_vals) {
        S->eq_vals = sla__malloc(&S->alloc, (size_t)B * (size_t)nnz, sizeof(double));
        if (!S->eq_vals) {
            sla__solver_free_equilibration(S);
            return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the equilibrated matrix (%lld values)",
                              (long long)(B * nnz));
        }
    }
    for (sla_int b = 0; b < B; b++) {
        double *r = S->eq_r + b * n, *c = S->eq_c + b * n, *v = S->eq_vals + b * nnz;
        if (uniform) {
            double u = pow2_inverse(gmax, S->symmetric);
            for (sla_int i = 0; i < n; i++) r[i] = u;
        } else {
            for (sla_int i = 0; i < n; i++) {
                double m = 0.0;
                for (sla_int p = rp[i]; p < rp[i + 1]; p++) m = fmax(m, fabs(sla__val(A, b, p)));
                r[i] = pow2_inverse(m, S->symmetric);
            }
        }
        if (S->symmetric) {
            memcpy(c, r, (size_t)n * sizeof *c);
        } else if (uniform) {
            for (sla_int j = 0; j < n; j++) c[j] = 1.0;
        } else {
            for (sla_int j = 0; j < n; j++) c[j] = 0.0;
            for (sla_int i = 0; i < n; i++)
                for (sla_int p = rp[i]; p < rp[i + 1]; p++)
                    c[ci[p]] = fmax(c[ci[p]], fabs(sla__val(A, b, p)) * r[i]);
            for (sla_int j = 0; j < n; j++) c[j] = pow2_inverse(c[j], false);
        }
        for (sla_int i = 0; i < n; i++)
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) v[p] = sla__val(A, b, p) * r[i] * c[ci[p]];
    }
    S->eq_mat = *A;
    S->eq_mat.dtype = SLA_F64;
    S->eq_mat.values = S->eq_vals;
    S->eq_mat.own_rowptr = S->eq_mat.own_values = false;
    S->K = &S->eq_mat;
    S->eq_on = true;
    return SLA_OK;
}

