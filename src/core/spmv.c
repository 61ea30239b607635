/* Sparse matrix-vector kernels. CG is bandwidth-bound, so the products
 * that CG needs are fused with the reduction that follows them. */
#include "internal.h"

#include <string.h>

void sla__spmv(const sla_matrix *A, sla_int ib, const double *x, double *y, int nt)
{
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    sla_int n = A->nrows;
    if (A->dtype == SLA_F64) {
        const double *v = (const double *)A->values + ib * A->nnz;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
        for (sla_int i = 0; i < n; i++) {
            double s = 0.0; /* y_i = sum_p a_ip x_{col p} */
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) s += v[p] * x[ci[p]];
            y[i] = s;
        }
    } else {
        const float *v = (const float *)A->values + ib * A->nnz;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
        for (sla_int i = 0; i < n; i++) {
            double s = 0.0;
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) s += (double)v[p] * x[ci[p]];
            y[i] = s;
        }
    }
}

double sla__spmv_dot(const sla_matrix *A, sla_int ib, const double *x, double *y, int nt)
{
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    sla_int n = A->nrows;
    double dot = 0.0;
    if (A->dtype == SLA_F64) {
        const double *v = (const double *)A->values + ib * A->nnz;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : dot) if (nt > 1 && n >= SLA_PAR_MIN)
        for (sla_int i = 0; i < n; i++) {
            double s = 0.0;
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) s += v[p] * x[ci[p]];
            y[i] = s;
            dot += x[i] * s; /* x . (A x) in the same pass */
        }
    } else {
        const float *v = (const float *)A->values + ib * A->nnz;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : dot) if (nt > 1 && n >= SLA_PAR_MIN)
        for (sla_int i = 0; i < n; i++) {
            double s = 0.0;
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) s += (double)v[p] * x[ci[p]];
            y[i] = s;
            dot += x[i] * s;
        }
    }
    return dot;
}

double sla__residual(const sla_matrix *A, sla_int ib, const double *x, const double *b, double *r,
                     int nt)
{
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    sla_int n = A->nrows;
    double rr = 0.0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : rr) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        double s = 0.0;
        for (sla_int p = rp[i]; p < rp[i + 1]; p++) s += sla__val(A, ib, p) * x[ci[p]];
        double ri = b[i] - s;
        r[i] = ri;
        rr += ri * ri;
    }
    return rr;
}

/* y = A^T x: each row scatters into y. With several threads each scatters
 * into its own slice of work (nt * ncols) and the slices are summed. */
void sla__spmv_t(const sla_matrix *A, sla_int ib, const double *x, double *y, int nt,
                 double *work)
{
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    sla_int n = A->nrows, m = A->ncols;
    if (!work || nt <= 1 || n < SLA_PAR_MIN) {
        memset(y, 0, (size_t)m * sizeof *y);
        for (sla_int i = 0; i < n; i++)
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) y[ci[p]] += sla__val(A, ib, p) * x[i];
        return;
    }
#pragma omp parallel num_threads(nt)
    {
#ifdef _OPENMP
        int t = omp_get_thread_num(), T = omp_get_num_threads();
#else
        int t = 0, T = 1;
#endif
        double *w = work + (size_t)t * (size_t)m;
        memset(w, 0, (size_t)m * sizeof *w);
        sla_int i0 = n * t / T, i1 = n * (t + 1) / T;
        for (sla_int i = i0; i < i1; i++)
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) w[ci[p]] += sla__val(A, ib, p) * x[i];
#pragma omp barrier
#pragma omp for schedule(static)
        for (sla_int j = 0; j < m; j++) {
            double s = 0.0;
            for (int u = 0; u < T; u++) s += work[(size_t)u * (size_t)m + j];
            y[j] = s;
        }
    }
}
