/* Dense vector kernels used by the Krylov solvers. */
#include "internal.h"

#include <math.h>
#include <string.h>

double sla__dot(sla_int n, const double *x, const double *y, int nt)
{
    double s = 0.0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : s) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) s += x[i] * y[i];
    return s;
}

double sla__nrm2(sla_int n, const double *x, int nt) { return sqrt(sla__dot(n, x, x, nt)); }

void sla__copy(sla_int n, const double *x, double *y)
{
    if (n > 0 && x != y) memcpy(y, x, (size_t)n * sizeof *x);
}

void sla__zero(sla_int n, double *x)
{
    if (n > 0) memset(x, 0, (size_t)n * sizeof *x);
}

void sla__axpy(sla_int n, double a, const double *x, double *y, int nt)
{
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) y[i] += a * x[i];
}

void sla__xpby(sla_int n, const double *x, double b, double *y, int nt)
{
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) y[i] = x[i] + b * y[i];
}

bool sla__all_finite(sla_int n, const double *x)
{
    for (sla_int i = 0; i < n; i++)
        if (!isfinite(x[i])) return false;
    return true;
}
