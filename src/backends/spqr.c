/* SuiteSparseQR (SPQR) for damped sparse least squares: the direct path
 * of sla_lsq (method qr).
 *
 *   m >= n or damp > 0:  Abar = [A; damp I] (mm x n, full column rank when
 *       damp > 0), x = Abar \ [b; 0] by SuiteSparseQR_C_backslash (Q^T
 *       applied on the fly, then R x = Q^T b with the column permutation);
 *   m < n and damp = 0:  the minimum-norm solution from a QR of A^T:
 *       A^T E = Q R gives A = E R^T Q^T, so with x = Q z the system
 *       A x = b is E R^T z = b: z = R^-T (E^T b), x = Q [z; 0].
 *
 * sla's CSR of A is the CSC of A^T, so the second case passes A's arrays
 * (as 64-bit indices) straight to SPQR; the first builds the CSC of Abar.
 * A rank-deficient problem without damping has no unique least-squares
 * solution that SPQR's basic solution would give: SLA_ERR_SINGULAR with
 * the rank SPQR estimated (its default tolerance), and the caller falls
 * back to LSMR's minimum-norm solution.
 */
#include "../ops/lsq_internal.h"

#include <math.h>
#include <string.h>

#ifdef SLA_HAVE_SUITESPARSE
#include <SuiteSparseQR_C.h>

/* A dense m x 1 column that views x (not owned by CHOLMOD). */
static cholmod_dense dense_view(sla_int m, double *x)
{
    cholmod_dense D;
    memset(&D, 0, sizeof D);
    D.nrow = (size_t)m;
    D.ncol = 1;
    D.nzmax = (size_t)m;
    D.d = (size_t)m;
    D.x = x;
    D.xtype = CHOLMOD_REAL;
    D.dtype = CHOLMOD_DOUBLE;
    return D;
}

static sla_status spqr_error(sla_ctx *ctx, const cholmod_common *cc, const char *what)
{
    if (cc->status == CHOLMOD_OUT_OF_MEMORY)
        return sla__error(ctx, SLA_ERR_NOMEM, "qr: out of memory in SuiteSparseQR (%s)", what);
    return sla__error(ctx, SLA_ERR_ARGUMENT, "qr: SuiteSparseQR failed in %s (cholmod status %d)", what,
                      cc->status);
}

sla_status sla__spqr_lsq(sla_ctx *ctx, const sla_matrix *A, double damp, const double *b, double *x,
                         sla_int *rank_out)
{
    const sla_int m = A->nrows, n = A->ncols, nnz = A->nnz;
    const bool minnorm = m < n && damp == 0.0;
    const sla_int mm = m + (damp > 0.0 ? n : 0); /* rows of Abar */
    const sla_int cols = minnorm ? m : n;         /* columns of the factored matrix */
    const sla_int rows = minnorm ? n : mm;
    const sla_int ent = nnz + (damp > 0.0 ? n : 0);
    sla_allocator al = sla__ctx_alloc(ctx);
    SuiteSparse_long *p = sla__malloc(&al, (size_t)cols + 1, sizeof *p);
    SuiteSparse_long *ii = sla__malloc(&al, (size_t)(ent > 0 ? ent : 1), sizeof *ii);
    double *xv = sla__malloc(&al, (size_t)(ent > 0 ? ent : 1), sizeof *xv);
    double *rhs = sla__calloc(&al, (size_t)(rows > mm ? rows : mm) + 1, sizeof *rhs);
    if (!p || !ii || !xv || !rhs) {
        sla__free(&al, p);
        sla__free(&al, ii);
        sla__free(&al, xv);
        sla__free(&al, rhs);
        return sla__error(ctx, SLA_ERR_NOMEM, "qr: out of memory for the CSC copy (nnz %lld)", (long long)ent);
    }
    if (minnorm) { /* CSC of A^T = CSR of A */
        for (sla_int i = 0; i <= m; i++) p[i] = (SuiteSparse_long)A->rowptr[i];
        for (sla_int k = 0; k < nnz; k++) {
            ii[k] = A->colind[k];
            xv[k] = sla__val(A, 0, k);
        }
    } else { /* CSC of Abar: count per column, then place, damping last in each column */
        memset(p, 0, ((size_t)n + 1) * sizeof *p);
        for (sla_int k = 0; k < nnz; k++) p[A->colind[k] + 1]++;
        if (damp > 0.0)
            for (sla_int j = 0; j < n; j++) p[j + 1]++;
        for (sla_int j = 0; j < n; j++) p[j + 1] += p[j];
        SuiteSparse_long *next = sla__malloc(&al, (size_t)n + 1, sizeof *next);
        if (!next) {
            sla__free(&al, p);
            sla__free(&al, ii);
            sla__free(&al, xv);
            sla__free(&al, rhs);
            return sla__error(ctx, SLA_ERR_NOMEM, "qr: out of memory for the CSC copy");
        }
        memcpy(next, p, ((size_t)n + 1) * sizeof *next);
        for (sla_int i = 0; i < m; i++)
            for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
                SuiteSparse_long q = next[A->colind[k]]++;
                ii[q] = i;
                xv[q] = sla__val(A, 0, k);
            }
        if (damp > 0.0)
            for (sla_int j = 0; j < n; j++) {
                SuiteSparse_long q = next[j]++;
                ii[q] = m + j;
                xv[q] = damp;
            }
        sla__free(&al, next);
    }
    cholmod_sparse S;
    memset(&S, 0, sizeof S);
    S.nrow = (size_t)rows;
    S.ncol = (size_t)cols;
    S.nzmax = (size_t)(ent > 0 ? ent : 1);
    S.p = p;
    S.i = ii;
    S.x = xv;
    S.stype = 0;
    S.itype = CHOLMOD_LONG;
    S.xtype = CHOLMOD_REAL;
    S.dtype = CHOLMOD_DOUBLE;
    S.sorted = 1;
    S.packed = 1;

    cholmod_common cc;
    sla_status st = SLA_OK;
    cholmod_dense *X = NULL, *Z = NULL;
    SuiteSparseQR_C_factorization *QR = NULL;
    if (!cholmod_l_start(&cc)) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "qr: cholmod_l_start failed");
        goto done;
    }
    cc.print = 0;
    sla_int rank = 0;
    if (!minnorm) {
        memcpy(rhs, b, (size_t)m * sizeof *rhs); /* [b; 0] */
        cholmod_dense B = dense_view(mm, rhs);
        X = SuiteSparseQR_C_backslash(SPQR_ORDERING_DEFAULT, SPQR_DEFAULT_TOL, &S, &B, &cc);
        if (!X) {
            st = spqr_error(ctx, &cc, "backslash");
            goto finish;
        }
        rank = (sla_int)cc.SPQR_istat[4];
        if (rank < n) {
            st = sla__error(ctx, SLA_ERR_SINGULAR,
                            "qr: A is rank deficient (SuiteSparseQR's rank estimate %lld < %lld columns): the "
                            "least-squares solution is not unique",
                            (long long)rank, (long long)n);
            goto finish;
        }
        memcpy(x, X->x, (size_t)n * sizeof *x);
    } else {
        QR = SuiteSparseQR_C_factorize(SPQR_ORDERING_DEFAULT, SPQR_DEFAULT_TOL, &S, &cc);
        if (!QR) {
            st = spqr_error(ctx, &cc, "factorize");
            goto finish;
        }
        rank = (sla_int)cc.SPQR_istat[4];
        if (rank < m) {
            st = sla__error(ctx, SLA_ERR_SINGULAR,
                            "qr: A has rank %lld < %lld rows (SuiteSparseQR's estimate): the minimum-norm "
                            "solution needs a rank-revealing method",
                            (long long)rank, (long long)m);
            goto finish;
        }
        memcpy(rhs, b, (size_t)m * sizeof *rhs);
        cholmod_dense B = dense_view(m, rhs);
        Z = SuiteSparseQR_C_solve(SPQR_RTX_EQUALS_ETB, QR, &B, &cc); /* z = R^-T E^T b */
        if (!Z) {
            st = spqr_error(ctx, &cc, "solve");
            goto finish;
        }
        /* Q [z; 0]: Q is n x n; pad z to n rows if SPQR returned fewer. */
        double *zp = sla__calloc(&al, (size_t)n, sizeof *zp);
        if (!zp) {
            st = sla__error(ctx, SLA_ERR_NOMEM, "qr: out of memory");
            goto finish;
        }
        size_t zr = Z->nrow < (size_t)n ? Z->nrow : (size_t)n;
        memcpy(zp, Z->x, zr * sizeof *zp);
        cholmod_dense Zn = dense_view(n, zp);
        X = SuiteSparseQR_C_qmult(SPQR_QX, QR, &Zn, &cc);
        sla__free(&al, zp);
        if (!X) {
            st = spqr_error(ctx, &cc, "qmult");
            goto finish;
        }
        memcpy(x, X->x, (size_t)n * sizeof *x);
    }
finish:
    if (rank_out) *rank_out = rank;
    if (X) cholmod_l_free_dense(&X, &cc);
    if (Z) cholmod_l_free_dense(&Z, &cc);
    if (QR) SuiteSparseQR_C_free(&QR, &cc);
    cholmod_l_finish(&cc);
done:
    sla__free(&al, p);
    sla__free(&al, ii);
    sla__free(&al, xv);
    sla__free(&al, rhs);
    return st;
}

#else

sla_status sla__spqr_lsq(sla_ctx *ctx, const sla_matrix *A, double damp, const double *b, double *x,
                         sla_int *rank_out)
{
    (void)A, (void)damp, (void)b, (void)x;
    if (rank_out) *rank_out = 0;
    return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                      "qr: SuiteSparseQR is not in this build (install libsuitesparse-dev and rebuild)");
}

#endif
