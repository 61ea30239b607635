/* Complex kernels: y = op(A) x for op N, T, H on a complex (or real)
 * matrix, and the complex vector operations the complex Krylov methods
 * and VJPs share (conjugated and unconjugated dot products, norms, axpy).
 * Computed in complex128 whatever the storage precision. */
#include "internal.h"

#include <math.h>
#include <string.h>

void sla__zspmv(const sla_matrix *A, sla_int ib, int op, const sla__z *x, sla__z *y, int nt)
{
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    const sla_int n = A->nrows, m = A->ncols;
    if (op == 0) {
        if (A->dtype == SLA_C128) {
            const sla__z *v = (const sla__z *)A->values + ib * A->nnz;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
            for (sla_int i = 0; i < n; i++) {
                sla__z s = 0.0;
                for (sla_int p = rp[i]; p < rp[i + 1]; p++) s += v[p] * x[ci[p]];
                y[i] = s;
            }
        } else {
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
            for (sla_int i = 0; i < n; i++) {
                sla__z s = 0.0;
                for (sla_int p = rp[i]; p < rp[i + 1]; p++) s += sla__zval(A, ib, p) * x[ci[p]];
                y[i] = s;
            }
        }
        return;
    }
    /* A^T x or A^H x: each row scatters into y (serial: the scatter would
     * race; the complex Krylov methods use an explicit transpose when they
     * need many of these). */
    const bool cj = op == 2;
    memset(y, 0, (size_t)m * sizeof *y);
    for (sla_int i = 0; i < n; i++) {
        const sla__z xi = x[i];
        for (sla_int p = rp[i]; p < rp[i + 1]; p++) {
            sla__z a = sla__zval(A, ib, p);
            y[ci[p]] += (cj ? conj(a) : a) * xi;
        }
    }
}

sla__z sla__zdotc(sla_int n, const sla__z *x, const sla__z *y, int nt)
{
    double re = 0.0, im = 0.0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : re, im) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        sla__z t = conj(x[i]) * y[i];
        re += creal(t);
        im += cimag(t);
    }
    return re + im * _Complex_I;
}

sla__z sla__zdotu(sla_int n, const sla__z *x, const sla__z *y, int nt)
{
    double re = 0.0, im = 0.0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : re, im) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        sla__z t = x[i] * y[i];
        re += creal(t);
        im += cimag(t);
    }
    return re + im * _Complex_I;
}

double sla__znrm2(sla_int n, const sla__z *x, int nt)
{
    /* ||x|| = ||(re, im) as 2n reals||, with the real kernel's scaling. */
    return sla__nrm2(2 * n, (const double *)x, nt);
}

void sla__zaxpy(sla_int n, sla__z a, const sla__z *x, sla__z *y, int nt)
{
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) y[i] += a * x[i];
}

void sla__zxpby(sla_int n, const sla__z *x, sla__z b, sla__z *y, int nt)
{
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) y[i] = x[i] + b * y[i];
}

bool sla__zall_finite(sla_int n, const sla__z *x)
{
    return sla__all_finite(2 * n, (const double *)x);
}
