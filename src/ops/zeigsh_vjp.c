/* The VJP of sla_zeigsh (Hermitian eigenpairs of a complex matrix):
 * eigenvalues by Hellmann-Feynman, eigenvectors by first-order
 * perturbation, the part outside the computed eigenspace by one projected
 * MINRES solve per vector on the real form of the Hermitian operator.
 *
 * Derivation (gradient convention of sla/complex.h: for a real loss L of
 * z = x + i y, grad_z = dL/dx + i dL/dy, so that dL = Re(conj(grad_z) dz),
 * summed over entries). A v_j = l_j v_j, ||v_j|| = 1, for a Hermitian
 * perturbation dA:
 *   d l_j = v_j^H dA v_j,
 *   d v_j = sum_{m != j} v_m (v_m^H dA v_j) / (l_j - l_m) + i c_j v_j,
 * c_j real (the phase, fixed by the convention that the largest entry is
 * real and positive). With gw_j = dL/dl_j and G_j = grad of v_j,
 *   dL = sum_j gw_j d l_j + Re(G_j^H d v_j).
 * The phase term is Re(i c_j G_j^H v_j) = -c_j Im(G_j^H v_j): a loss
 * invariant under v_j -> e^{it} v_j has Im(v_j^H G_j) = 0 and loses it; any
 * other loss depends on an arbitrary choice and is refused (as
 * torch.linalg.eigh does). Writing s_mj = v_m^H G_j and dA = E_rc da_rc,
 *   dL = Re( sum_rc conj( sum_j (gw_j v_j[r] + u_j[r]) conj(v_j[c]) ) da_rc ),
 *   u_j = sum_{m != j} v_m s_mj / (l_j - l_m),
 * so grad_A[p] = sum_j (gw_j v_j[r] + u_j[r]) conj(v_j[c]) at p = (r, c)
 * (PyTorch's V (diag(gw) + S / E) V^H on the pattern). u_j's part over the
 * k computed pairs is the sum itself; over the eigenvectors not computed it
 * is -(A - l_j I)^+ Q G_j (Q = I - V V^H), the solution w in range(Q) of
 *   Q (A - l_j I) Q w = -Q G_j,
 * a Hermitian system solved by MINRES on its real form [Re, -Im; Im, Re]
 * (symmetric; in the interleaved layout of sla_complex it is the same
 * memory, and the real inner product is Re(x^H y)). As for real matrices
 * every stored entry is an independent variable: along a Hermitian change
 * of the pair a_ij = conj(a_ji) = z, dL/dz = grad_A[ij] + conj(grad_A[ji]).
 * Degenerate eigenvalues (|l_i - l_j| <= 1e-9 max |l|) have no unique
 * eigenvectors: the loss must be invariant within the cluster (gw_i = gw_j,
 * and V_c^H G_c Hermitian: v_j^H G_i = conj(v_i^H G_j)), else refused. */
#include "../solvers/krylov.h"
#include "eigs_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Q (A - l I) Q x, Q = I - V V^H (V: n x k orthonormal), on the real
 * interleaved form of complex vectors. */
typedef struct zproj_op {
    const sla_matrix *A;
    const sla__z *V;
    sla_int n, k;
    double lambda;
    sla__z *t; /* n */
} zproj_op;

static void zproject(const zproj_op *P, sla__z *x, int nt)
{
    for (sla_int j = 0; j < P->k; j++) {
        const sla__z *v = P->V + (size_t)j * (size_t)P->n;
        sla__zaxpy(P->n, -sla__zdotc(P->n, v, x, nt), v, x, nt);
    }
}

static void zproj_apply(void *data, const double *x, double *y, int nt)
{
    zproj_op *P = data;
    sla__z *yz = (sla__z *)y;
    memcpy(P->t, x, (size_t)P->n * sizeof *P->t);
    zproject(P, P->t, nt);
    sla__zspmv(P->A, 0, 0, P->t, yz, nt);
    sla__zaxpy(P->n, -P->lambda, P->t, yz, nt);
    zproject(P, yz, nt);
}

/* The refusals: the phase of an eigenvector, and degenerate clusters
 * within which the loss is not invariant. */
static sla_status check_invariance(sla_ctx *ctx, sla_int n, sla_int k, const double *w, const sla__z *V,
                                   const double *gw, const sla__z *gV, double dtol, int nt)
{
    for (sla_int j = 0; gV && j < k; j++) {
        const sla__z *vj = V + (size_t)j * (size_t)n, *gj = gV + (size_t)j * (size_t)n;
        double im = cimag(sla__zdotc(n, vj, gj, nt)), mag = sla__znrm2(n, gj, nt);
        if (fabs(im) > 1e-6 * mag)
            return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                              "zeigsh vjp: the loss depends on the phase of eigenvector %lld (Im(v^H gV) = %.3g, "
                              "||gV|| = %.3g); an eigenvector's phase is arbitrary, so the gradient is not "
                              "defined (make the loss invariant under v -> e^{it} v, e.g. use |v_i|^2 or v v^H)",
                              (long long)j, im, mag);
    }
    for (sla_int i = 0; i < k; i++)
        for (sla_int j = i + 1; j < k; j++) {
            if (fabs(w[i] - w[j]) > dtol) continue;
            if (gw && fabs(gw[i] - gw[j]) > 1e-8 * fmax(fabs(gw[i]), fabs(gw[j])) + 1e-300)
                return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                                  "zeigsh vjp: eigenvalues %lld and %lld are degenerate (%.17g, %.17g) but dL/dl "
                                  "differs (%g vs %g): the loss is not invariant within the cluster, so its "
                                  "gradient is not defined",
                                  (long long)i, (long long)j, w[i], w[j], gw[i], gw[j]);
            if (!gV) continue;
            const sla__z *vi = V + (size_t)i * (size_t)n, *vj = V + (size_t)j * (size_t)n;
            const sla__z *gi = gV + (size_t)i * (size_t)n, *gj = gV + (size_t)j * (size_t)n;
            sla__z asym = sla__zdotc(n, vj, gi, nt) - conj(sla__zdotc(n, vi, gj, nt));
            double mag = sla__znrm2(n, gi, nt) + sla__znrm2(n, gj, nt);
            if (cabs(asym) > 1e-8 * mag)
                return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                                  "zeigsh vjp: eigenvalues %lld and %lld are degenerate (%.17g, %.17g) and the loss "
                                  "is not invariant under unitary mixing of their eigenvectors (|v_%lld^H gV_%lld - "
                                  "conj(v_%lld^H gV_%lld)| = %.3g): the eigenvectors are not unique, so the "
                                  "gradient is not defined",
                                  (long long)i, (long long)j, w[i], w[j], (long long)j, (long long)i, (long long)i,
                                  (long long)j, cabs(asym));
        }
    return SLA_OK;
}

sla_status sla_zeigsh_vjp(sla_ctx *ctx, const sla_matrix *A, sla_int ib, sla_int k, const double *w,
                          const sla_complex *Vc, const double *gw, const sla_complex *gVc, sla_complex *gAc)
{
    sla_matrix Av;
    sla_status st = sla__zeigsh_check(ctx, "zeigsh vjp", A, ib, &Av);
    if (st) return st;
    const sla_int n = A->nrows;
    if (k < 1 || k > n) return sla__error(ctx, SLA_ERR_ARGUMENT, "zeigsh vjp: k = %lld out of [1, n]", (long long)k);
    if (!w || !Vc || !gAc) return sla__error(ctx, SLA_ERR_ARGUMENT, "zeigsh vjp: NULL w, V or gA");
    const sla__z *V = (const sla__z *)Vc, *gV = (const sla__z *)gVc;
    sla__z *gA = (sla__z *)gAc;
    double scale = 0.0;
    for (sla_int i = 0; i < k; i++) {
        if (!isfinite(w[i]))
            return sla__error(ctx, SLA_ERR_VALUE, "zeigsh vjp: eigenvalue %lld is not finite", (long long)i);
        scale = fmax(scale, fabs(w[i]));
        if (!sla__zall_finite(n, V + (size_t)i * (size_t)n))
            return sla__error(ctx, SLA_ERR_VALUE, "zeigsh vjp: eigenvector %lld has NaN/Inf", (long long)i);
        if (gV && !sla__zall_finite(n, gV + (size_t)i * (size_t)n))
            return sla__error(ctx, SLA_ERR_VALUE, "zeigsh vjp: gV column %lld has NaN/Inf", (long long)i);
    }
    if (gw && !sla__all_finite(k, gw)) return sla__error(ctx, SLA_ERR_VALUE, "zeigsh vjp: gw has NaN/Inf");
    const int nt = sla__threads(ctx);
    sla_eigsh_options o;
    sla_eigsh_options_default(&o);
    const double dtol = o.degenerate_tol * fmax(scale, 1e-300);
    if ((st = check_invariance(ctx, n, k, w, V, gw, gV, dtol, nt))) return st;

    sla_allocator a = sla__ctx_alloc(ctx);
    sla__z *u = sla__ctx_malloc(ctx, (size_t)n, 4 * sizeof *u, "zeigsh vjp work space");
    if (!u) return SLA_ERR_NOMEM;
    sla__z *b = u + n, *x = u + 2 * n, *t = u + 3 * n;
    for (sla_int p = 0; p < Av.nnz; p++) gA[p] = 0.0;
    sla__vjp_solves T = {.iterations = 0, .worst = 0.0, .converged = true};
    for (sla_int j = 0; j < k && st >= 0; j++) {
        const sla__z *vj = V + (size_t)j * (size_t)n;
        const sla__z *gj = gV ? gV + (size_t)j * (size_t)n : NULL;
        double gwj = gw ? gw[j] : 0.0;
        memset(u, 0, (size_t)n * sizeof *u);
        if (gj) {
            /* the computed eigenspace: sum_m v_m (v_m^H g_j) / (l_j - l_m) */
            for (sla_int m = 0; m < k; m++) {
                if (m == j || fabs(w[j] - w[m]) <= dtol) continue;
                const sla__z *vm = V + (size_t)m * (size_t)n;
                sla__zaxpy(n, sla__zdotc(n, vm, gj, nt) / (w[j] - w[m]), vm, u, nt);
            }
            /* its complement: Q (A - l_j I) Q x = -Q g_j, x in range(Q) */
            zproj_op P = {.A = &Av, .V = V, .n = n, .k = k, .lambda = w[j], .t = t};
            for (sla_int r = 0; r < n; r++) b[r] = -gj[r];
            zproject(&P, b, nt);
            if (sla__znrm2(n, b, nt) > 0.0) {
                sla__op op = {.n = 2 * n, .n_global = 2 * n, .nt = nt, .data = &P, .apply = zproj_apply};
                if ((st = sla__vjp_minres(ctx, &op, (const double *)b, (double *)x, o.grad_rtol, o.grad_maxiter,
                                          &T)) < 0)
                    break;
                zproject(&P, x, nt);
                sla__zaxpy(n, 1.0, x, u, nt);
            }
        }
        /* gA[p] += (gw_j v_j[r] + u[r]) conj(v_j[c]) */
        for (sla_int r = 0; r < n; r++) {
            sla__z cr = gwj * vj[r] + u[r];
            if (cr == 0.0) continue;
            for (sla_int p = Av.rowptr[r]; p < Av.rowptr[r + 1]; p++) gA[p] += cr * conj(vj[Av.colind[p]]);
        }
    }
    sla__free(&a, u);
    if (st < 0) return st;
    if (!T.converged)
        return sla__error(ctx, SLA_NOT_CONVERGED,
                          "zeigsh vjp: a projected solve missed grad_rtol = %g (relative residual %.3g, %lld "
                          "iterations): an eigenvalue left out may equal a computed one",
                          o.grad_rtol, T.worst, (long long)T.iterations);
    return sla__ok(ctx, SLA_OK);
}
