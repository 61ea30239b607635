/* Sums C = alpha A + beta B on the union of the patterns and elementwise
 * products C = A .* B on their intersection, with VJPs: both walk the
 * sorted rows of A, B and C together (a merge), so the numeric phases and
 * the gradients cost O(nnz) and reuse the symbolic phase's C for any
 * number of value arrays. OpenMP over rows. */
#include "algebra_internal.h"

#include <string.h>

enum { UNION = 0, INTERSECTION = 1 };

static sla_status check_shapes(sla_ctx *ctx, const char *who, const sla_matrix *A,
                               const sla_matrix *B, sla_int *nbC)
{
    sla_status st = sla__alg_operands(ctx, who, A, B, nbC);
    if (st) return st;
    if (A->nrows != B->nrows || A->ncols != B->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "%s: A is %lld x %lld but B is %lld x %lld", who,
                          (long long)A->nrows, (long long)A->ncols, (long long)B->nrows,
                          (long long)B->ncols);
    return SLA_OK;
}

/* Columns of row i of the union or intersection, written to out when not
 * NULL; returns their count. */
static sla_int merge_row(const sla_matrix *A, const sla_matrix *B, sla_int i, int mode,
                         int32_t *out)
{
    sla_int pa = A->rowptr[i], ea = A->rowptr[i + 1], pb = B->rowptr[i], eb = B->rowptr[i + 1];
    sla_int c = 0;
    while (pa < ea || pb < eb) {
        int32_t ja = pa < ea ? A->colind[pa] : INT32_MAX, jb = pb < eb ? B->colind[pb] : INT32_MAX;
        int32_t j = ja < jb ? ja : jb;
        bool both = ja == jb;
        if (ja == j) pa++;
        if (jb == j) pb++;
        if (mode == UNION || both) {
            if (out) out[c] = j;
            c++;
        }
        if (mode == INTERSECTION && (pa >= ea || pb >= eb)) break;
    }
    return c;
}

static sla_status symbolic(sla_ctx *ctx, const char *who, const sla_matrix *A, const sla_matrix *B,
                           int mode, sla_matrix **C)
{
    if (!C) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: C is NULL", who);
    *C = NULL;
    sla_int nbC;
    sla_status st = check_shapes(ctx, who, A, B, &nbC);
    if (st) return st;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_int m = A->nrows;
    int nt = sla__threads(ctx);
    sla_int *rp = sla__calloc(&a, (size_t)m + 1, sizeof *rp);
    if (!rp) return sla__error(ctx, SLA_ERR_NOMEM, "%s: out of memory", who);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && m >= SLA_PAR_MIN)
    for (sla_int i = 0; i < m; i++) rp[i + 1] = merge_row(A, B, i, mode, NULL);
    for (sla_int i = 0; i < m; i++) rp[i + 1] += rp[i];
    int32_t *ci = sla__malloc(&a, (size_t)(rp[m] > 0 ? rp[m] : 1), sizeof *ci);
    if (!ci) {
        sla__free(&a, rp);
        return sla__error(ctx, SLA_ERR_NOMEM, "%s: out of memory for %lld entries", who,
                          (long long)rp[m]);
    }
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && m >= SLA_PAR_MIN)
    for (sla_int i = 0; i < m; i++) merge_row(A, B, i, mode, ci + rp[i]);
    return sla__alg_wrap(ctx, m, A->ncols, nbC, rp, ci, C);
}

sla_status sla_spadd_symbolic(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                              sla_matrix **C)
{
    return symbolic(ctx, "sla_spadd_symbolic", A, B, UNION, C);
}

sla_status sla_spmul_symbolic(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                              sla_matrix **C)
{
    return symbolic(ctx, "sla_spmul_symbolic", A, B, INTERSECTION, C);
}

/* What a pass over the rows does with each entry of C and its partners in
 * A and B (position -1: none). */
typedef struct pass {
    int mode;
    bool vjp;
    double alpha, beta;
    const sla_matrix *A, *B, *C;
    sla_int ia, ib;            /* value arrays of A and B */
    double *cv;                /* numeric: C's values of this batch entry */
    const double *gc;          /* vjp: gC of this batch entry */
    double *ga, *gb;           /* vjp: gradients (either may be NULL) */
} pass;

/* One row; returns false when C's row misses an entry it must hold. */
static bool row_pass(const pass *w, sla_int i)
{
    const sla_matrix *A = w->A, *B = w->B, *C = w->C;
    sla_int pa = A->rowptr[i], ea = A->rowptr[i + 1], pb = B->rowptr[i], eb = B->rowptr[i + 1];
    for (sla_int p = C->rowptr[i]; p < C->rowptr[i + 1]; p++) {
        int32_t j = C->colind[p];
        if (w->mode == INTERSECTION) {
            while (pa < ea && A->colind[pa] < j) pa++;
            while (pb < eb && B->colind[pb] < j) pb++;
        }
        sla_int qa = pa < ea && A->colind[pa] == j ? pa++ : -1;
        sla_int qb = pb < eb && B->colind[pb] == j ? pb++ : -1;
        if (w->mode == UNION) {
            if (!w->vjp) {
                w->cv[p] = (qa >= 0 ? w->alpha * sla__val(A, w->ia, qa) : 0.0) +
                           (qb >= 0 ? w->beta * sla__val(B, w->ib, qb) : 0.0);
            } else {
                if (w->ga && qa >= 0) w->ga[qa] += w->alpha * w->gc[p];
                if (w->gb && qb >= 0) w->gb[qb] += w->beta * w->gc[p];
            }
        } else if (qa >= 0 && qb >= 0) {
            double va = sla__val(A, w->ia, qa), vb = sla__val(B, w->ib, qb);
            if (!w->vjp) {
                w->cv[p] = va * vb;
            } else {
                if (w->ga) w->ga[qa] += vb * w->gc[p];
                if (w->gb) w->gb[qb] += va * w->gc[p];
            }
        } else if (!w->vjp) {
            w->cv[p] = 0.0;
        }
    }
    /* a sum must have used every entry of A and B */
    return w->mode == INTERSECTION || (pa == ea && pb == eb);
}

static sla_status run(sla_ctx *ctx, const char *who, int mode, bool vjp, double alpha,
                      const sla_matrix *A, double beta, const sla_matrix *B, const sla_matrix *C,
                      double *cvals, const double *gC, double *gA, double *gB)
{
    sla_int nbC;
    double *cv = NULL;
    sla_status st = check_shapes(ctx, who, A, B, &nbC);
    if (st) return st;
    if (vjp) {
        if (!gC && C && C->nnz > 0) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: gC is NULL", who);
        if ((st = sla__alg_result(ctx, who, C, A->nrows, A->ncols, nbC, (double *)gC, &cv)))
            return st;
        if (gA) memset(gA, 0, (size_t)(A->nbatch * A->nnz) * sizeof *gA);
        if (gB) memset(gB, 0, (size_t)(B->nbatch * B->nnz) * sizeof *gB);
    } else if ((st = sla__alg_result(ctx, who, C, A->nrows, A->ncols, nbC, cvals, &cv))) {
        return st;
    }
    int nt = sla__threads(ctx);
    sla_int m = A->nrows, bad = -1;
    for (sla_int b = 0; b < nbC && bad < 0; b++) {
        pass w = {mode, vjp, alpha, beta, A, B, C, A->nbatch == 1 ? 0 : b,
                  B->nbatch == 1 ? 0 : b, vjp ? NULL : cv + b * C->nnz,
                  vjp ? gC + b * C->nnz : NULL,
                  gA ? gA + (A->nbatch == 1 ? 0 : b) * A->nnz : NULL,
                  gB ? gB + (B->nbatch == 1 ? 0 : b) * B->nnz : NULL};
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && m >= SLA_PAR_MIN)
        for (sla_int i = 0; i < m; i++)
            if (!row_pass(&w, i)) {
#pragma omp atomic write
                bad = i;
            }
    }
    if (bad >= 0)
        return sla__error(ctx, SLA_ERR_INDEX,
                          "%s: C's pattern misses entries of row %lld of A or B (use the C of "
                          "sla_spadd_symbolic)", who, (long long)bad);
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_spadd_numeric(sla_ctx *ctx, double alpha, const sla_matrix *A, double beta,
                             const sla_matrix *B, sla_matrix *C, double *cvals)
{
    return run(ctx, "sla_spadd_numeric", UNION, false, alpha, A, beta, B, C, cvals, NULL, NULL,
               NULL);
}

sla_status sla_spadd_vjp(sla_ctx *ctx, double alpha, const sla_matrix *A, double beta,
                         const sla_matrix *B, const sla_matrix *C, const double *gC, double *gA,
                         double *gB)
{
    return run(ctx, "sla_spadd_vjp", UNION, true, alpha, A, beta, B, C, NULL, gC, gA, gB);
}

sla_status sla_spmul_numeric(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                             sla_matrix *C, double *cvals)
{
    return run(ctx, "sla_spmul_numeric", INTERSECTION, false, 1.0, A, 1.0, B, C, cvals, NULL, NULL,
               NULL);
}

sla_status sla_spmul_vjp(sla_ctx *ctx, const sla_matrix *A, const sla_matrix *B,
                         const sla_matrix *C, const double *gC, double *gA, double *gB)
{
    return run(ctx, "sla_spmul_vjp", INTERSECTION, true, 1.0, A, 1.0, B, C, NULL, gC, gA, gB);
}
