/* LOBPCG (Knyazev 2001) for the smallest eigenpairs of an SPD matrix, or of
 * a symmetric-definite pencil A x = l B x (B-orthonormal blocks), with any
 * of the library's preconditioners (AMG by default when available).
 *
 * Block S = [X W P] (n x m0, m0 <= 3k) with A S kept alongside, so each
 * iteration  costs k products with A for W, k for the new X, and k preconditioner
 * applications: W = T R, R = A X - X diag(l), and k products for A X
 * after the update; S is orthonormalized by SVQB
 * (scale to unit columns, eigendecompose the Gram matrix, drop directions
 * below 1e-10 of the largest: keeping nearly dependent ones amplifies
 * rounding into spurious Ritz values), then Rayleigh-Ritz on S^T A S keeps the k
 * smallest Ritz pairs; P = X_new - X (X^T X_new) and A P by the same
 * combination, without a product with A.
 * Generalized (B given): B S is kept too, the Gram matrix is S^T B S, the
 * residual A X - B X diag(l), W is made B-orthogonal to X, and P = X_new -
 * X (X^T B X_new); B X_new by products with B. */
#include "../solvers/krylov.h"
#include "ops_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void sla_lobpcg_options_default(sla_lobpcg_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->k = 6;
    o->tol = 1e-8;
    o->maxiter = 500;
    sla_solver_options_default(&o->pc);
#ifdef SLA_HAVE_HYPRE
    o->pc.precond = SLA_PRECOND_AMG;
#else
    o->pc.precond = SLA_PRECOND_JACOBI;
#endif
    o->seed = 1;
}

size_t sla_lobpcg_options_size(void) { return sizeof(sla_lobpcg_options); }

#ifdef SLA_HAVE_LAPACK
void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k, const double *alpha,
            const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c,
            const int *ldc, size_t, size_t);
void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
            double *work, const int *lwork, int *info, size_t, size_t);

/* C (p x q) = alpha op(A) op(B) + beta C */
static void gemm(char ta, char tb, int p, int q, int r, double alpha, const double *A, int lda, const double *B,
                 int ldb, double beta, double *C, int ldc)
{
    dgemm_(&ta, &tb, &p, &q, &r, &alpha, A, &lda, B, &ldb, &beta, C, &ldc, 1, 1);
}

/* Eigenvalues (ascending) and vectors of the symmetric m x m G (in place). */
static int syev(int m, double *G, double *w, double *work, int lwork)
{
    int info = 0;
    dsyev_("V", "L", &m, G, &m, w, work, &lwork, &info, 1, 1);
    return info;
}

typedef struct lob_ws {
    int n, k, m0max, nt;
    const sla_matrix *A, *B; /* B NULL: the identity */
    sla_int nops;
    double *S, *AS, *BS; /* n x 3k: [X W P], [AX AW AP], [BX BW BP] (BS = S without B) */
    double *Xn, *AXn, *BXn; /* n x k (BXn = Xn without B) */
    double *G, *H, *M, *T, *w, *d, *work; /* small dense */
    double *res;         /* k residual norms */
    int lwork;
} lob_ws;

/* One Rayleigh-Ritz step on the first m0 columns of S: X, AX <- the k
 * smallest Ritz pairs (and lambda), P, AP <- the new search directions when
 * update_p. Returns the rank kept, or -1 on a LAPACK failure. */
static int rayleigh_ritz(lob_ws *ws, int m0, bool update_p, double *lambda)
{
    const int n = ws->n, k = ws->k, m3 = ws->m0max;
    double *G = ws->G, *H = ws->H, *M = ws->M, *T = ws->T, *w = ws->w, *d = ws->d;
    /* G = S^T B S, H = S^T A S */
    gemm('T', 'N', m0, m0, n, 1.0, ws->S, n, ws->BS, n, 0.0, G, m0);
    gemm('T', 'N', m0, m0, n, 1.0, ws->S, n, ws->AS, n, 0.0, H, m0);
    for (int j = 0; j < m0; j++) {
        if (G[j * m0 + j] < 0.0) return -2; /* x^T B x < 0: B not positive definite */
        d[j] = G[j * m0 + j] > 0.0 ? 1.0 / sqrt(G[j * m0 + j]) : 0.0;
        for (int i = 0; i < j; i++) H[j * m0 + i] = H[i * m0 + j] = 0.5 * (H[j * m0 + i] + H[i * m0 + j]);
    }
    for (int j = 0; j < m0; j++)
        for (int i = 0; i < m0; i++) G[j * m0 + i] *= d[i] * d[j];
    if (syev(m0, G, w, ws->work, ws->lwork)) return -1;
    /* SVQB: M = D U_kept Theta^-1/2, the kept directions (largest last) */
    int first = 0;
    while (first < m0 && !(w[first] > 1e-14 * w[m0 - 1])) first++;
    const int mr = m0 - first;
    if (mr < k) return mr;
    for (int j = 0; j < mr; j++) {
        double s = 1.0 / sqrt(w[first + j]);
        for (int i = 0; i < m0; i++) M[j * m0 + i] = d[i] * G[(first + j) * m0 + i] * s;
    }
    /* H' = M^T H M (mr x mr), into G */
    gemm('N', 'N', m0, mr, m0, 1.0, H, m0, M, m0, 0.0, T, m0);
    gemm('T', 'N', mr, mr, m0, 1.0, M, m0, T, m0, 0.0, G, mr);
    if (syev(mr, G, w, ws->work, ws->lwork)) return -1;
    for (int i = 0; i < k; i++) lambda[i] = w[i];
    /* M2 = M C (m0 x k), C the first k eigenvectors; X_new = S M2 */
    gemm('N', 'N', m0, k, mr, 1.0, M, m0, G, mr, 0.0, T, m0);
    gemm('N', 'N', n, k, m0, 1.0, ws->S, n, T, m0, 0.0, ws->Xn, n);
    /* A X_new by products with A, not as AS M2: the combination drifts
     * (rounding amplified by M2) until the residuals stagnate near 1e-7
     * and spurious Ritz values appear */
    for (int j = 0; j < k; j++) {
        sla__spmv(ws->A, 0, ws->Xn + (size_t)j * n, ws->AXn + (size_t)j * n, ws->nt);
        if (ws->B) sla__spmv(ws->B, 0, ws->Xn + (size_t)j * n, ws->BXn + (size_t)j * n, ws->nt);
    }
    ws->nops += k;
    double *X = ws->S, *AX = ws->AS, *BX = ws->BS, *P = ws->S + (size_t)2 * k * n,
           *AP = ws->AS + (size_t)2 * k * n, *BP = ws->BS + (size_t)2 * k * n;
    if (update_p) {
        /* P = X_new - X (X^T B X_new), A P = A X_new - A X (X^T B X_new), B P alike */
        double *Xc = H; /* k x k, H is no longer needed */
        gemm('T', 'N', k, k, n, 1.0, BX, n, ws->Xn, n, 0.0, Xc, k);
        memcpy(P, ws->Xn, (size_t)n * k * sizeof *P);
        memcpy(AP, ws->AXn, (size_t)n * k * sizeof *AP);
        gemm('N', 'N', n, k, k, -1.0, X, n, Xc, k, 1.0, P, n);
        gemm('N', 'N', n, k, k, -1.0, AX, n, Xc, k, 1.0, AP, n);
        if (ws->B) {
            memcpy(BP, ws->BXn, (size_t)n * k * sizeof *BP);
            gemm('N', 'N', n, k, k, -1.0, BX, n, Xc, k, 1.0, BP, n);
        }
    }
    memcpy(X, ws->Xn, (size_t)n * k * sizeof *X);
    memcpy(AX, ws->AXn, (size_t)n * k * sizeof *AX);
    if (ws->B) memcpy(BX, ws->BXn, (size_t)n * k * sizeof *BX);
    (void)m3;
    return mr;
}
#endif

/* sla_lobpcg (B NULL) and sla_lobpcg_generalized. */
static sla_status lobpcg_run(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_matrix *B, sla_int ibB,
                             const sla_lobpcg_options *opts, double *evals, double *evecs, sla_int ldv,
                             double *residuals, sla_eigsh_info *info)
{
    double t0 = sla__now();
    if (info) memset(info, 0, sizeof *info);
    if (sla__require_real(ctx, A, "sla_lobpcg")) return SLA_ERR_UNSUPPORTED;
    if (B && sla__require_real(ctx, B, "sla_lobpcg_generalized")) return SLA_ERR_UNSUPPORTED;
    sla_lobpcg_options o;
    if (opts) o = *opts;
    else sla_lobpcg_options_default(&o);
    if (!A || !evals) return sla__error(ctx, SLA_ERR_ARGUMENT, "lobpcg: NULL argument");
    sla_status st = sla__check_square_index(ctx, "lobpcg", A, ib);
    if (st) return st;
    const sla_int n = A->nrows, k = o.k;
    if (k < 1 || 3 * k >= n || k > 10000)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "lobpcg: k = %lld must satisfy 1 <= k and 3 k < n = %lld (use a dense eigensolver)",
                          (long long)k, (long long)n);
    if (!(o.tol > 0.0) || o.maxiter < 1)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "lobpcg: tol = %g must be > 0 and maxiter = %lld >= 1", o.tol,
                          (long long)o.maxiter);
    if (evecs && ldv < n)
        return sla__error(ctx, SLA_ERR_DIMENSION, "lobpcg: ldv = %lld < n = %lld", (long long)ldv, (long long)n);
    if (n > INT32_MAX / 3) return sla__error(ctx, SLA_ERR_TOO_LARGE, "lobpcg: n too large for 32-bit BLAS");
    sla_matrix V, VB;
    if ((st = sla__symmetric_view(ctx, "lobpcg", A, ib, &V))) return st;
    if (B) {
        if ((st = sla__check_square_index(ctx, "lobpcg (B)", B, ibB))) return st;
        if (B->nrows != n)
            return sla__error(ctx, SLA_ERR_DIMENSION, "lobpcg: A is %lld x %lld but B is %lld x %lld", (long long)n,
                              (long long)n, (long long)B->nrows, (long long)B->ncols);
        if ((st = sla__symmetric_view(ctx, "lobpcg (B)", B, ibB, &VB))) return st;
    }
    if (o.x0)
        for (sla_int j = 0; j < k; j++)
            if (!sla__all_finite(n, o.x0 + (size_t)j * (size_t)n))
                return sla__error(ctx, SLA_ERR_VALUE, "lobpcg: x0 column %lld has NaN/Inf", (long long)j);
#ifndef SLA_HAVE_LAPACK
    (void)residuals;
    (void)t0;
    return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                      "lobpcg needs BLAS/LAPACK, which this build lacks (install libopenblas-dev and reconfigure)");
#else
    const int ni = (int)n, ki = (int)k, m3 = 3 * ki, nt = sla__threads(ctx);
    sla_allocator a = sla__ctx_alloc(ctx);
    lob_ws ws = {.n = ni, .k = ki, .m0max = m3, .nt = nt, .A = &V, .B = B ? &VB : NULL};
    ws.lwork = 66 * m3 + 64;
    size_t big = (size_t)n * (size_t)m3, small = (size_t)m3 * m3, nb = B ? 3 : 2;
    ws.S = sla__ctx_malloc(ctx, nb * (big + (size_t)n * k), sizeof(double), "lobpcg blocks");
    ws.G = ws.S ? sla__ctx_malloc(ctx, 4 * small + 3 * (size_t)m3 + (size_t)ws.lwork, sizeof(double),
                                  "lobpcg small matrices") : NULL;
    sla__pc *pc = NULL;
    if (!ws.G) {
        sla__free(&a, ws.S);
        return SLA_ERR_NOMEM;
    }
    ws.AS = ws.S + big;
    ws.Xn = ws.AS + big;
    ws.AXn = ws.Xn + (size_t)n * k;
    ws.BS = B ? ws.AXn + (size_t)n * k : ws.S;
    ws.BXn = B ? ws.BS + big : ws.Xn;
    ws.H = ws.G + small;
    ws.M = ws.H + small;
    ws.T = ws.M + small;
    ws.w = ws.T + small;
    ws.d = ws.w + m3;
    ws.res = ws.d + m3;
    ws.work = ws.res + m3;
    double *X = ws.S, *W = ws.S + (size_t)n * k, *AX = ws.AS, *AW = ws.AS + (size_t)n * k, *BX = ws.BS,
           *BW = ws.BS + (size_t)n * k;
    double res_max = 0.0;
    sla_int it = 0, nconv = 0;
    char precname[16];
    snprintf(precname, sizeof precname, "%s", sla_precond_name(o.pc.precond));
    /* ||A||_1 (max row sum of |a_ij|; = the column sum, A symmetric): the
     * residual scale. LOBPCG's residuals stall near 1e-10 ||A|| in double
     * precision, so a tolerance relative to |l_i| could not be met for
     * small eigenvalues. */
    double anorm = 0.0;
    for (sla_int i = 0; i < n; i++) {
        double rs = 0.0;
        for (sla_int q = V.rowptr[i]; q < V.rowptr[i + 1]; q++) rs += fabs(sla__val(&V, 0, q));
        anorm = fmax(anorm, rs);
    }
    double bnorm = 0.0; /* ||B||_1 likewise: the residual scale is ||A||_1 + |l_i| ||B||_1 */
    for (sla_int i = 0; B && i < n; i++) {
        double rs = 0.0;
        for (sla_int q = VB.rowptr[i]; q < VB.rowptr[i + 1]; q++) rs += fabs(sla__val(&VB, 0, q));
        bnorm = fmax(bnorm, rs);
    }
    if (o.pc.precond != SLA_PRECOND_NONE && (st = sla__pc_create(ctx, o.pc.precond, &V, 0, &o.pc, &pc)))
        goto done;

    /* the start block, made orthonormal by a first Rayleigh-Ritz step */
    if (o.x0) {
        for (sla_int j = 0; j < k; j++) memcpy(X + (size_t)j * n, o.x0 + (size_t)j * n, (size_t)n * sizeof *X);
    } else {
        uint64_t s = (o.seed + 1) * 0x9E3779B97F4A7C15ULL;
        for (size_t i = 0; i < (size_t)n * k; i++) {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            X[i] = (double)((s * 2685821657736338717ULL) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
        }
    }
    for (sla_int j = 0; j < k; j++) {
        sla__spmv(&V, 0, X + (size_t)j * n, AX + (size_t)j * n, nt);
        if (B) sla__spmv(&VB, 0, X + (size_t)j * n, BX + (size_t)j * n, nt);
    }
    ws.nops += k;
    int r0 = rayleigh_ritz(&ws, ki, false, evals);
    if (r0 == -2) {
        st = sla__error(ctx, SLA_ERR_NOT_SPD, "lobpcg: B is not positive definite (x^T B x < 0)");
        goto done;
    }
    if (r0 < ki) {
        st = sla__error(ctx, SLA_ERR_ARGUMENT, "lobpcg: the start block is rank deficient");
        goto done;
    }
    int np = 0; /* columns of P in use */
    for (;;) {
        /* R = A X - B X diag(l), into W */
        nconv = 0;
        res_max = 0.0;
        for (sla_int j = 0; j < k; j++) {
            double *r = W + (size_t)j * n;
            const double *bx = BX + (size_t)j * n, *ax = AX + (size_t)j * n;
            for (sla_int i = 0; i < n; i++) r[i] = ax[i] - evals[j] * bx[i];
            double rn = sla__nrm2(n, r, nt);
            double sc = anorm + fabs(evals[j]) * bnorm; /* tol's scale */
            ws.res[j] = sc > 0.0 ? rn / sc : rn;
            if (residuals) residuals[j] = rn;
            res_max = fmax(res_max, rn);
            if (ws.res[j] <= o.tol) nconv++;
        }
        if (nconv == k || it >= o.maxiter) break;
        it++;
        /* W = T R, orthogonal to X; converged columns are left out of W and
         * P (soft locking: their residuals are rounding noise) */
        double *P = ws.S + (size_t)2 * k * n, *AP = ws.AS + (size_t)2 * k * n;
        for (sla_int j = 0; j < k; j++) {
            double *r = W + (size_t)j * n, *z = ws.Xn; /* Xn is free here */
            if (ws.res[j] <= o.tol) {
                sla__zero(n, r);
                if (np) {
                    sla__zero(n, P + (size_t)j * n);
                    sla__zero(n, AP + (size_t)j * n);
                    if (B) sla__zero(n, ws.BS + (size_t)(2 * k + j) * n);
                }
                continue;
            }
            if (!pc) continue;
            if ((st = sla__pc_apply(pc, false, r, z, nt))) goto done;
            memcpy(r, z, (size_t)n * sizeof *r);
        }
        for (int pass = 0; pass < 2; pass++) { /* twice is enough; B-orthogonal: W -= X (BX^T W) */
            gemm('T', 'N', ki, ki, ni, 1.0, BX, ni, W, ni, 0.0, ws.H, ki);
            gemm('N', 'N', ni, ki, ki, -1.0, X, ni, ws.H, ki, 1.0, W, ni);
        }
        for (sla_int j = 0; j < k; j++) {
            sla__spmv(&V, 0, W + (size_t)j * n, AW + (size_t)j * n, nt);
            if (B) sla__spmv(&VB, 0, W + (size_t)j * n, BW + (size_t)j * n, nt);
        }
        ws.nops += k;
        int mr = rayleigh_ritz(&ws, 2 * ki + np, true, evals);
        if (mr == -2) {
            st = sla__error(ctx, SLA_ERR_NOT_SPD, "lobpcg: B is not positive definite (x^T B x < 0)");
            goto done;
        }
        if (mr < 0) {
            st = sla__error(ctx, SLA_ERR_ARGUMENT, "lobpcg: LAPACK dsyev failed");
            goto done;
        }
        if (mr < ki) {
            st = sla__error(ctx, SLA_ERR_ARGUMENT, "lobpcg: the search space collapsed (rank %d < k = %d)", mr, ki);
            goto done;
        }
        np = ki;
    }
    if (evecs)
        for (sla_int j = 0; j < k; j++)
            memcpy(evecs + (size_t)j * (size_t)ldv, X + (size_t)j * n, (size_t)n * sizeof *evecs);
    if (info) {
        snprintf(info->method, sizeof info->method, "lobpcg (%s)", precname);
        info->converged = nconv == k;
        info->nconv = nconv;
        info->iterations = it;
        info->nops = ws.nops;
        info->max_residual = res_max;
        info->seconds = sla__now() - t0;
    }
done:
    sla__pc_destroy(&pc);
    sla__free(&a, ws.S);
    sla__free(&a, ws.G);
    if (st) return st;
    if (nconv < k)
        return sla__error(ctx, SLA_NOT_CONVERGED,
                          "lobpcg: %lld of %lld eigenpairs within tol = %g after %lld iterations (largest residual "
                          "%.3g)",
                          (long long)nconv, (long long)k, o.tol, (long long)it, res_max);
    return sla__ok(ctx, SLA_OK);
#endif
}

sla_status sla_lobpcg(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_lobpcg_options *opts, double *evals,
                      double *evecs, sla_int ldv, double *residuals, sla_eigsh_info *info)
{
    return lobpcg_run(ctx, A, ib, NULL, 0, opts, evals, evecs, ldv, residuals, info);
}

sla_status sla_lobpcg_generalized(sla_ctx *ctx, const sla_matrix *A, sla_int ibA, const sla_matrix *B, sla_int ibB,
                                  const sla_lobpcg_options *opts, double *evals, double *evecs, sla_int ldv,
                                  double *residuals, sla_eigsh_info *info)
{
    if (!B) return sla__error(ctx, SLA_ERR_ARGUMENT, "lobpcg generalized: B is NULL");
    return lobpcg_run(ctx, A, ibA, B, ibB, opts, evals, evecs, ldv, residuals, info);
}
