/* Dense vector kernels used by the Krylov solvers. */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <string.h>

double sla__dot(sla_int n, const double *x, const double *y, int nt)
{
    double s = 0.0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : s) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) s += x[i] * y[i];
    return s;
}

/* Squares summed without a scale are exact enough when the sum is a
 * normal number well above the underflow threshold and finite: each
 * square lost to underflow is below 2^-1022, n of them below n 2^-1022,
 * negligible against 2^-900. Otherwise (0, subnormal, inf with finite
 * entries) the scaled sum is needed. */
#define SLA_NRM2_FAST_MIN 0x1p-900

bool sla__nrm2_fast_ok(double ss) { return ss >= SLA_NRM2_FAST_MIN && ss <= DBL_MAX; }

double sla__amax(sla_int n, const double *x, int nt)
{
    double m = 0.0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(max : m) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        double a = fabs(x[i]);
        if (!(a <= m)) m = a; /* NaN propagates as NaN */
    }
    return m;
}

double sla__sumsq_scaled(sla_int n, const double *x, int e, int nt)
{
    double s = 0.0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : s) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        double t = ldexp(x[i], -e);
        s += t * t;
    }
    return s;
}

/* ||x||_2 that neither overflows nor underflows while the result is
 * representable (LAPACK dnrm2's guarantee): the plain sum of squares
 * when it is safe (the common case, one pass), else the sum of squares
 * of x / 2^e with 2^e near max |x_i|, exact scaling by a power of two. */
double sla__nrm2(sla_int n, const double *x, int nt)
{
    double ss = sla__dot(n, x, x, nt);
    if (sla__nrm2_fast_ok(ss) || isnan(ss)) return sqrt(ss);
    double m = sla__amax(n, x, nt);
    if (m == 0.0 || !isfinite(m)) return m;
    int e;
    frexp(m, &e);
    return ldexp(sqrt(sla__sumsq_scaled(n, x, e, nt)), e);
}

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
