/* Stochastic Lanczos quadrature for log det A (SPD), and Hutchinson's
 * estimate of its gradient (A^-1)[col_k, row_k] on the pattern. */
#include "ops_internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#ifdef SLA_HAVE_LAPACK
/* LAPACK: eigenvalues and eigenvectors of a symmetric tridiagonal matrix. */
void dstev_(const char *jobz, const int *n, double *d, double *e, double *z, const int *ldz, double *work,
            int *info, size_t);
#endif

void sla_slq_options_default(sla_slq_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->probes = 32;
    o->lanczos_steps = 50;
    o->seed = 1;
    sla_solver_options_default(&o->solver);
    o->solver.method = SLA_METHOD_CG;
    o->solver.rtol = 1e-10;
}

#ifdef SLA_HAVE_LAPACK
/* Probe p: entries +-1 from a xorshift64* stream of (seed, p). */
static void rademacher(sla_int n, uint64_t seed, sla_int p, double *z)
{
    uint64_t s = (seed + 1) * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)p + 1) * 0xD1B54A32D192ED03ULL;
    if (!s) s = 1;
    for (sla_int i = 0; i < n; i++) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        z[i] = ((s * 2685821657736338717ULL) >> 63) ? 1.0 : -1.0;
    }
}

/* z^T log(A) z by m steps of Lanczos from z (no reorthogonalization) and
 * the Gauss quadrature of T: ||z||^2 sum_k tau_k^2 log theta_k, tau_k the
 * first components of T's unit eigenvectors. work: 3 n; tw: 4 m + m^2. */
/* The Lanczos process runs on 2^-e A (e: A's scale, exact), so that its
 * vectors, the tridiagonal matrix and the quadrature stay far from
 * overflow and underflow whatever the magnitude of A's entries; the caller
 * adds n e log 2. *rmin, *rmax are Ritz values of 2^-e A. */
static sla_status quad_form(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const double *z, sla_int m,
                            int e, double *work, double *tw, double *out, double *rmin, double *rmax,
                            int nt)
{
    const sla_int n = A->nrows;
    double *v = work, *vold = work + n, *w = work + 2 * n;
    double *alpha = tw, *beta = tw + m, *ework = tw + 2 * m, *Z = tw + 4 * m;
    double zn2 = sla__dot(n, z, z, nt);
    double zn = sqrt(zn2);
    for (sla_int i = 0; i < n; i++) v[i] = z[i] / zn;
    sla__zero(n, vold);
    double b = 0.0;
    sla_int k = 0;
    for (; k < m; k++) {
        sla__spmv(A, ib, v, w, nt);            /* w = A v_k */
        if (e)
            for (sla_int i = 0; i < n; i++) w[i] = ldexp(w[i], -e); /* w = 2^-e A v_k */
        double a = sla__dot(n, v, w, nt);      /* alpha_k = v_k . A v_k */
        alpha[k] = a;
        for (sla_int i = 0; i < n; i++) w[i] -= a * v[i] + b * vold[i];
        b = sla__nrm2(n, w, nt);               /* beta_{k+1} */
        if (k + 1 == m || !(b > 1e-14 * fabs(a))) { /* done, or an invariant subspace */
            k++;
            break;
        }
        beta[k] = b;
        for (sla_int i = 0; i < n; i++) {
            vold[i] = v[i];
            v[i] = w[i] / b;
        }
    }
    const int mk = (int)k;
    int info = 0;
    dstev_("V", &mk, alpha, beta, Z, &mk, ework, &info, 1);
    if (info != 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "slq: LAPACK dstev failed (info %d) on the Lanczos matrix", info);
    double s = 0.0, tmax = 0.0;
    for (int j = 0; j < mk; j++) tmax = fmax(tmax, fabs(alpha[j]));
    /* A Ritz value at rounding level (relative to the largest) approximates
     * a zero eigenvalue: A is singular to working precision, log det = -inf */
    double tiny = 4.0 * (double)(mk > 1 ? mk : 1) * DBL_EPSILON * tmax;
    for (int j = 0; j < mk; j++) {
        double theta = alpha[j], tau = Z[(size_t)j * mk];
        if (theta < *rmin) *rmin = theta;
        if (theta > *rmax) *rmax = theta;
        if (fabs(theta) <= tiny && mk > 0)
            return sla__error(ctx, SLA_ERR_SINGULAR,
                              "slq: the matrix is singular to working precision (Ritz value %.3g, "
                              "at rounding level of the largest %.3g): log det = -inf",
                              ldexp(theta, e), ldexp(tmax, e));
        if (!(theta > 0.0))
            return sla__error(ctx, SLA_ERR_NOT_SPD,
                              "slq: the matrix is not positive definite (Ritz value %.3g <= 0)",
                              ldexp(theta, e));
        s += tau * tau * log(theta);
    }
    *out = zn2 * s;
    return SLA_OK;
}
#endif

sla_status sla_logdet_slq(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_slq_options *opts,
                          double *logdet, double *std_error, double *grad, sla_slq_info *info)
{
    double t0 = sla__now();
    if (info) memset(info, 0, sizeof *info);
    if (sla__require_real(ctx, A, "sla_logdet_slq")) return SLA_ERR_UNSUPPORTED;
    sla_slq_options o;
    if (opts) o = *opts;
    else sla_slq_options_default(&o);
    if (!A || !logdet) return sla__error(ctx, SLA_ERR_ARGUMENT, "slq: NULL argument");
    sla_status st = sla__check_square_index(ctx, "slq", A, ib);
    if (st) return st;
    if (o.probes < 1 || o.lanczos_steps < 1 || o.lanczos_steps > 10000)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "slq: probes = %lld must be >= 1 and lanczos_steps = %lld in "
                          "[1, 10000]", (long long)o.probes, (long long)o.lanczos_steps);
    sla_matrix V;
    if ((st = sla__symmetric_view(ctx, "slq", A, ib, &V))) return st;
#ifndef SLA_HAVE_LAPACK
    (void)std_error;
    (void)grad;
    (void)t0;
    return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                      "slq needs LAPACK (dstev), which this build lacks (install liblapack-dev and reconfigure)");
#else
    const sla_int n = A->nrows, m = o.lanczos_steps < n ? o.lanczos_steps : n, P = o.probes;
    const int nt = sla__threads(ctx);
    sla_allocator a = sla__ctx_alloc(ctx);
    double *z = sla__ctx_malloc(ctx, (size_t)n, 5 * sizeof *z, "slq vectors");
    double *tw = z ? sla__ctx_malloc(ctx, (size_t)(4 * m + m * m), sizeof *tw, "slq tridiagonal") : NULL;
    sla_solver *S = NULL;
    if (!tw) {
        sla__free(&a, z);
        return SLA_ERR_NOMEM;
    }
    double *work = z + n, *x = z + 4 * n;
    /* A's scale: 2^e near its largest entry (exact rescaling, see quad_form) */
    int escale = 0;
    {
        double amax = 0.0;
        for (sla_int k = 0; k < V.nnz; k++) amax = fmax(amax, fabs(sla__val(&V, 0, k)));
        if (amax > 0.0 && isfinite(amax)) frexp(amax, &escale);
    }
    if (grad) {
        if ((st = sla_solver_create(ctx, &V, &o.solver, &S))) goto done;
        for (sla_int k = 0; k < V.nnz; k++) grad[k] = 0.0;
    }
    double sum = 0.0, sum2 = 0.0, rmin = INFINITY, rmax = -INFINITY;
    sla_int maxits = 0;
    bool all_conv = true;
    for (sla_int p = 0; p < P; p++) {
        rademacher(n, o.seed, p, z);
        double q = 0.0;
        if ((st = quad_form(ctx, &V, 0, z, m, escale, work, tw, &q, &rmin, &rmax, nt))) goto done;
        sum += q;
        sum2 += q * q;
        if (grad) {
            sla_solve_info si;
            st = sla_solver_solve(ctx, S, 0, 1, z, n, x, n, &si);
            if (st < 0) goto done;
            if (st == SLA_NOT_CONVERGED) all_conv = false;
            if (si.iterations > maxits) maxits = si.iterations;
            /* grad[k] += x[col_k] z[row_k] / P */
            for (sla_int i = 0; i < n; i++)
                for (sla_int k = V.rowptr[i]; k < V.rowptr[i + 1]; k++)
                    grad[k] += x[V.colind[k]] * z[i] / (double)P;
        }
    }
    st = SLA_OK;
    double mean = sum / (double)P;
    double var = P > 1 ? fmax(0.0, (sum2 - (double)P * mean * mean) / (double)(P - 1)) : NAN;
    double se = sqrt(var / (double)P);
    *logdet = mean + (double)n * (double)escale * log(2.0); /* log det A = log det 2^-e A + n e log 2 */
    rmin = ldexp(rmin, escale);
    rmax = ldexp(rmax, escale);
    if (std_error) *std_error = se;
    if (info) {
        info->probes = P;
        info->lanczos_steps = m;
        info->std_error = se;
        info->ritz_min = rmin;
        info->ritz_max = rmax;
        info->solve_iterations = maxits;
        info->seconds = sla__now() - t0;
        if (grad) snprintf(info->note, sizeof info->note, "gradient solves: %s", sla_method_name(o.solver.method));
    }
done:
    sla_solver_destroy(&S);
    sla__free(&a, z);
    sla__free(&a, tw);
    if (st) return st;
    if (!all_conv)
        return sla__error(ctx, SLA_NOT_CONVERGED, "slq: a gradient solve missed its tolerance (rtol %g)",
                          o.solver.rtol);
    return sla__ok(ctx, SLA_OK);
#endif
}
