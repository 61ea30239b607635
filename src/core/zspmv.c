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
    /* A^T x or A^H x: each row scatters into y. Threaded, each thread
     * scatters its block of rows into a private copy of y and the copies
     * are summed, when that memory (nt * ncols values) is at most a few
     * times the matrix and can be had; otherwise serial. */
    const bool cj = op == 2;
    sla__z *work = NULL;
    if (nt > 1 && n >= SLA_PAR_MIN && (double)nt * (double)m <= 4.0 * (double)A->nnz + (double)n)
        work = sla__malloc(&A->alloc, (size_t)nt * (size_t)m, sizeof *work);
    if (!work) {
        memset(y, 0, (size_t)m * sizeof *y);
        for (sla_int i = 0; i < n; i++) {
            const sla__z xi = x[i];
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) {
                sla__z a = sla__zval(A, ib, p);
                y[ci[p]] += (cj ? conj(a) : a) * xi;
            }
        }
        return;
    }
#pragma omp parallel num_threads(nt)
    {
#ifdef _OPENMP
        int t = omp_get_thread_num(), T = omp_get_num_threads();
#else
        int t = 0, T = 1;
#endif
        sla__z *w = work + (size_t)t * (size_t)m;
        memset(w, 0, (size_t)m * sizeof *w);
        sla_int i0 = n * t / T, i1 = n * (t + 1) / T;
        for (sla_int i = i0; i < i1; i++) {
            const sla__z xi = x[i];
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) {
                sla__z a = sla__zval(A, ib, p);
                w[ci[p]] += (cj ? conj(a) : a) * xi;
            }
        }
#pragma omp barrier
#pragma omp for schedule(static)
        for (sla_int j = 0; j < m; j++) {
            sla__z acc = 0.0;
            for (int u = 0; u < T; u++) acc += work[(size_t)u * (size_t)m + j];
            y[j] = acc;
        }
    }
    sla__free(&A->alloc, work);
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
