/* Fuzz target: value scales (issue 21). Bytes -> a small, diagonally
 * dominant (so well conditioned) matrix, symmetric or not, a right-hand
 * side, a method and two exponents ka, kb in [-1000, 1000]. The system
 * (2^ka A) x = 2^kb b must give x_ref 2^(kb - ka), x_ref the answer at
 * scale 1, converged, whenever the scaled values and the answer stay
 * normal numbers. */
#include "fuzz_common.h"

#include <float.h>
#include <math.h>

#define FZ_SCALE_MAXN 12

static bool fz_normal_range(const double *v, size_t n, int k, double room)
{
    for (size_t i = 0; i < n; i++) {
        double a = fabs(v[i]);
        if (a == 0.0) continue;
        if (ldexp(a, k) < 0x1p-1000 || ldexp(a, k) > DBL_MAX / room) return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_bytes b = {data, size};
    sla_int n = 1 + (sla_int)(fz_take(&b, 1) % FZ_SCALE_MAXN);
    uint8_t flags = (uint8_t)fz_take(&b, 1);
    bool sym = flags & 1;
    static const sla_method methods[] = {SLA_METHOD_AUTO, SLA_METHOD_CG, SLA_METHOD_MINRES,
                                         SLA_METHOD_GMRES, SLA_METHOD_BICGSTAB, SLA_METHOD_LU,
                                         SLA_METHOD_CHOLESKY};
    sla_method method = methods[(flags >> 1) % 7];
    if (!sym && (method == SLA_METHOD_CG || method == SLA_METHOD_MINRES || method == SLA_METHOD_CHOLESKY))
        method = SLA_METHOD_GMRES;
    int ka = (int)(int16_t)fz_take(&b, 2) % 1001, kb = (int)(int16_t)fz_take(&b, 2) % 1001;
    /* dense pattern: off-diagonals in [-1, 1] (small halves), diagonal
     * n + |d| (dominant, positive: SPD when symmetric) */
    sla_int nnz = n * n;
    sla_int *rp = malloc((size_t)(n + 1) * sizeof *rp), *ci = malloc((size_t)nnz * sizeof *ci);
    double *v = malloc((size_t)nnz * sizeof *v), *vs = malloc((size_t)nnz * sizeof *vs);
    double *rhs = malloc((size_t)n * sizeof *rhs), *rs = malloc((size_t)n * sizeof *rs);
    double *x0 = malloc((size_t)n * sizeof *x0), *x = malloc((size_t)n * sizeof *x);
    FUZZ_ASSERT(rp && ci && v && vs && rhs && rs && x0 && x);
    for (sla_int i = 0; i <= n; i++) rp[i] = i * n;
    for (sla_int i = 0; i < n; i++)
        for (sla_int j = 0; j < n; j++) {
            ci[i * n + j] = j;
            double t = (double)(int8_t)fz_take(&b, 1) / 256.0; /* in [-0.5, 0.5) */
            v[i * n + j] = i == j ? (double)n + fabs(t) : t;
        }
    if (sym)
        for (sla_int i = 0; i < n; i++)
            for (sla_int j = 0; j < i; j++) v[i * n + j] = v[j * n + i];
    bool nonzero = false;
    for (sla_int i = 0; i < n; i++) {
        rhs[i] = (double)(int8_t)fz_take(&b, 1) + 0.5;
        nonzero = nonzero || rhs[i] != 0.0;
    }
    sla_ctx *ctx = fz_ctx();
    if (!ctx) goto out;
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = method;
    o.rtol = 1e-12;
    o.restart = (int)n;
    sla_matrix *A = NULL;
    sla_solve_info info;
    FUZZ_ASSERT(sla_matrix_from_csr(ctx, n, n, rp, ci, SLA_F64, 1, v, SLA_COPY, &A) == SLA_OK);
    sla_status st = sla_solve(ctx, A, &o, rhs, x0, &info);
    sla_matrix_destroy(&A);
    if (st == SLA_ERR_UNAVAILABLE) goto done;
    FUZZ_ASSERT(st == SLA_OK && info.converged);
    double room = 16.0 * (double)n * (double)n;
    if (!fz_normal_range(v, (size_t)nnz, ka, room) || !fz_normal_range(rhs, (size_t)n, kb, room) ||
        !fz_normal_range(x0, (size_t)n, kb - ka, room))
        goto done;
    for (sla_int k = 0; k < nnz; k++) vs[k] = ldexp(v[k], ka);
    for (sla_int i = 0; i < n; i++) rs[i] = ldexp(rhs[i], kb);
    FUZZ_ASSERT(sla_matrix_from_csr(ctx, n, n, rp, ci, SLA_F64, 1, vs, SLA_COPY, &A) == SLA_OK);
    st = sla_solve(ctx, A, &o, rs, x, &info);
    sla_matrix_destroy(&A);
    FUZZ_ASSERT(st == SLA_OK && info.converged);
    double d = 0.0, s = 0.0;
    for (sla_int i = 0; i < n; i++) {
        d = fmax(d, fabs(ldexp(x[i], ka - kb) - x0[i]));
        s = fmax(s, fabs(x0[i]));
    }
    FUZZ_ASSERT(!nonzero || d <= 1e-8 * s);
done:
    sla_ctx_destroy(&ctx);
out:
    free(rp);
    free(ci);
    free(v);
    free(vs);
    free(rhs);
    free(rs);
    free(x0);
    free(x);
    return 0;
}
