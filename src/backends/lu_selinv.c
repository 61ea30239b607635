/* Selected inversion of a sparse LU factorization (Erisman-Tinney /
 * Takahashi recurrences for unsymmetric factors).
 *
 * The factorization is of M = A^T (sla's CSR arrays of A are the CSC
 * arrays of M, see direct.h), with row scaling and both permutations:
 *
 *     B = diag(rhat) M,   B[P[k], Q[l]] = (L U)[k, l]
 *
 * (L unit lower triangular, U upper triangular with diagonal d). With
 * Z = (L U)^-1 this gives B^-1[Q[l], P[k]] = Z[l, k] and
 * M^-1 = B^-1 diag(rhat), so for the stored entry k = (i, j) of A
 *
 *     d log|det A| / dA_k = (A^-1)[j, i] = (M^-1)[i, j]
 *                         = Z[qinv[i], pinv[j]] * rhat[j].
 *
 * Recurrences. Write U = D U1 with U1 unit upper triangular. Then
 * Z = U1^-1 D^-1 L^-1 satisfies
 *     U1 Z = D^-1 L^-1  (lower triangular)  and  Z L = U1^-1 D^-1  (upper),
 * so, with sums over k > p only,
 *     Z[p, j] = -sum_k U1[p, k] Z[k, j]              for j > p   (1)
 *     Z[i, p] = -sum_k Z[i, k] L[k, p]                for i > p   (2)
 *     Z[p, p] = 1/d_p - sum_k U1[p, k] Z[k, p].                   (3)
 * Taking p = n-1, ..., 0, every right-hand side involves only entries of
 * Z with both indices > p, computed at earlier steps.
 *
 * Pattern and closure. Let F be the symbolic pattern of L + U of the
 * no-pivoting LU of the permuted matrix, i.e. the smallest pattern that
 * holds B(P, Q) and is closed under the elimination rule
 *     (a, p) in F, (p, b) in F, p < a, p < b  =>  (a, b) in F.      (*)
 * We compute Z only on S = F^T ((i, j) in S iff (j, i) in F):
 *   - at step p, (1) is evaluated for j in Lcol(p) = {j > p: (j, p) in F}
 *     (the entries (p, j) of S above the diagonal), (2) for
 *     i in Urow(p) = {i > p: (p, i) in F} (the entries of S below it);
 *   - the terms of (1) and (2) need Z[k, j] for k in Urow(p) and
 *     j in Lcol(p) (in (2) rename i -> k, k -> j): by (*) with a = j,
 *     b = k, (j, k) is in F, so (k, j) is in S (k = j is the diagonal);
 *   - (3) needs Z[k, p] for k in Urow(p), computed by (2) just before.
 * So S is closed under the recurrences, and every Z[k, j] needed at step
 * p is the block Z[Urow(p), Lcol(p)]. Both (1) and (2) are products with
 * that one block: Z[p, Lcol] = -u^T Zb and Z[Urow, p] = -Zb l, with
 * u = U1[p, Urow] and l = L[Lcol, p]; each entry of Zb is visited once.
 * The entries of B(P, Q) that we finally read are in F, hence Z's values
 * there are in S (transposed). F is built here by a Gilbert-Peierls
 * symbolic factorization (column l of F = the vertices reachable from the
 * pattern of column l of the matrix through the columns of F's L part
 * left of l), seeded with the pattern of B(P, Q) and with the factor's own
 * L and U patterns (a backend may store entries, such as zeros of a
 * frontal matrix, outside the symbolic pattern); this F satisfies (*) by
 * construction and holds every stored value of the factor. We do not rely
 * on the backend's pattern being closed: backends drop exact zeros.
 *
 * Two evaluations of the recurrences:
 *  - per pivot (no BLAS; the path of builds without LAPACK, and mode 1):
 *    F's L part by columns (Lcol(p), values L[., p]), F's U part by rows
 *    (Urow(p), values U1[p, .], sorted); Z on S in the same layouts:
 *    ZL[s] = Z[p, j] for the s-th entry (j, p) of L's column p, ZU[s] =
 *    Z[i, p] for the s-th entry (p, i) of U's row p, Zd = diagonal. Work
 *    per step p: the sum over k in Urow(p) of |Lcol(k)| plus the sum over
 *    j in Lcol(p) of |Urow(j)| (the simplicial Takahashi cost);
 *  - by supernodes of F (consecutive pivots with nested patterns, see
 *    find_supernodes; the default with LAPACK): the same recurrences on
 *    dense blocks, the block Z[R_U, R_L] visited once per supernode
 *    instead of once per pivot, and multiplied by BLAS for supernodes of
 *    SLA_LU_SELINV_DENSE_MIN pivots or more. Supernodes are exact (no
 *    relaxed amalgamation), so factors whose patterns seldom nest (random
 *    sparse matrices) gain little.
 * Measured (2 shared cores): the 46 500-row arrowhead of sla_gen_arrow,
 * gradient 0.07 s after a 0.9 s factorization; poisson3d 25 by LU 2.5 s
 * after 0.4-0.8 s; a random 5000 x 5000 matrix with 4 entries per row
 * (dense-ish factor, tiny supernodes) 4-6 s after 0.3-0.5 s. Memory: the
 * factor's entries about four times plus O(n).
 */
#include "../solvers/direct.h"

#include <math.h>
#include <string.h>

/* A growing index array (columns of F). */
typedef struct grow_idx {
    sla_int *x;
    size_t len, cap;
} grow_idx;

/* Room for `more` entries. */
static bool grow_reserve(const sla_allocator *a, grow_idx *g, size_t more)
{
    if (g->cap - g->len >= more) return true;
    size_t cap = g->cap + g->cap / 2;
    if (cap < g->len + more) cap = g->len + more;
    sla_int *x = sla__malloc(a, cap, sizeof *x);
    if (!x) return false;
    if (g->len) memcpy(x, g->x, g->len * sizeof *x);
    sla__free(a, g->x);
    g->x = x;
    g->cap = cap;
    return true;
}

typedef struct selinv_work {
    sla_allocator a;
    sla_int *pinv, *qinv, *mark, *stack, *pos, *pos2;
    sla_int *lcp, *lci;     /* the factor's L (strictly lower) by columns */
    double *lcx;
    sla_int *fLp, *fUp;     /* F: L part by columns, U part by columns */
    grow_idx fLi, fUi;
    double *fLx, *fUx;      /* values on F (U: by columns, before the transpose) */
    sla_int *uRp, *uRj;     /* F's U part by rows */
    double *uRx;            /* U1 = D^-1 U by rows */
    double *ZL, *ZU, *Zd, *accL, *accU;
} selinv_work;

static void work_free(selinv_work *w)
{
    const sla_allocator *a = &w->a;
    void *p[] = {w->pinv, w->qinv, w->mark, w->stack, w->pos, w->pos2, w->lcp, w->lci, w->lcx,
                 w->fLp,  w->fUp,  w->fLi.x, w->fUi.x, w->fLx, w->fUx, w->uRp, w->uRj, w->uRx,
                 w->ZL,   w->ZU,   w->Zd,  w->accL, w->accU};
    for (size_t k = 0; k < sizeof p / sizeof p[0]; k++) sla__free(a, p[k]);
}

/* Supernodes of at least this many pivots gather the block Z[R_U, R_L]
 * and multiply it by BLAS; smaller ones add each entry's products at once
 * (a gathered block would be read three times for a matrix-vector
 * product). */
#define SLA_LU_SELINV_DENSE_MIN 16

#define NOMEM(what) sla__error(ctx, SLA_ERR_NOMEM, "LU selected inverse: out of memory (%s)", what)

/* The factor's L (row form, diagonal possibly stored) by columns, strictly
 * lower part. */
static sla_status l_by_columns(sla_ctx *ctx, const sla__lu_factors *f, selinv_work *w)
{
    const sla_int n = f->n;
    sla_int nl = 0;
    for (sla_int i = 0; i < n; i++)
        for (sla_int s = f->Lp[i]; s < f->Lp[i + 1]; s++)
            if (f->Lj[s] < i) nl++;
    w->lcp = sla__calloc(&w->a, (size_t)n + 1, sizeof *w->lcp);
    w->lci = sla__malloc(&w->a, (size_t)nl, sizeof *w->lci);
    w->lcx = sla__malloc(&w->a, (size_t)nl, sizeof *w->lcx);
    if (!w->lcp || !w->lci || !w->lcx) return NOMEM("columns of L");
    for (sla_int i = 0; i < n; i++)
        for (sla_int s = f->Lp[i]; s < f->Lp[i + 1]; s++) {
            sla_int j = f->Lj[s];
            if (j < 0 || j > i)
                return sla__error(ctx, SLA_ERR_ARGUMENT, "LU selected inverse: L has an entry "
                                  "(%lld, %lld) above its diagonal", (long long)i, (long long)j);
            if (j < i) w->lcp[j + 1]++;
        }
    for (sla_int j = 0; j < n; j++) w->lcp[j + 1] += w->lcp[j];
    sla_int *next = w->pos; /* n entries of work space */
    memcpy(next, w->lcp, (size_t)n * sizeof *next);
    for (sla_int i = 0; i < n; i++)
        for (sla_int s = f->Lp[i]; s < f->Lp[i + 1]; s++) {
            sla_int j = f->Lj[s];
            if (j < i) {
                w->lci[next[j]] = i;
                w->lcx[next[j]++] = f->Lx[s];
            }
        }
    return SLA_OK;
}

/* The symbolic LU F (Gilbert-Peierls), column by column. */
static sla_status symbolic(sla_ctx *ctx, const sla_matrix *A, const sla__lu_factors *f, selinv_work *w)
{
    const sla_int n = f->n;
    w->fLp = sla__malloc(&w->a, (size_t)n + 1, sizeof *w->fLp);
    w->fUp = sla__malloc(&w->a, (size_t)n + 1, sizeof *w->fUp);
    if (!w->fLp || !w->fUp) return NOMEM("symbolic factor");
    size_t guess = (size_t)f->Up[n] + (size_t)n;
    if (!grow_reserve(&w->a, &w->fLi, guess) || !grow_reserve(&w->a, &w->fUi, guess))
        return NOMEM("symbolic factor");
    sla_int *mark = w->mark, *stack = w->stack;
    for (sla_int i = 0; i < n; i++) mark[i] = -1;
    w->fLp[0] = w->fUp[0] = 0;
    for (sla_int l = 0; l < n; l++) {
        if (!grow_reserve(&w->a, &w->fLi, (size_t)n) || !grow_reserve(&w->a, &w->fUi, (size_t)n))
            return NOMEM("symbolic factor");
        sla_int top = 0;
        mark[l] = l; /* the diagonal, kept apart */
        /* seeds: column l of B(P, Q) is row Q[l] of A, rows pinv[col];
         * the factor's own U column l and L column l */
        const sla_int r = f->Q[l];
        for (sla_int k = A->rowptr[r]; k < A->rowptr[r + 1]; k++) {
            sla_int i = w->pinv[A->colind[k]];
            if (mark[i] != l) mark[i] = l, stack[top++] = i;
        }
        for (sla_int s = f->Up[l]; s < f->Up[l + 1]; s++) {
            sla_int i = f->Ui[s];
            if (i < 0 || i > l)
                return sla__error(ctx, SLA_ERR_ARGUMENT, "LU selected inverse: U has an entry "
                                  "(%lld, %lld) below its diagonal", (long long)i, (long long)l);
            if (mark[i] != l) mark[i] = l, stack[top++] = i;
        }
        for (sla_int s = w->lcp[l]; s < w->lcp[l + 1]; s++) {
            sla_int i = w->lci[s];
            if (mark[i] != l) mark[i] = l, stack[top++] = i;
        }
        /* reach through the columns of F's L part left of l */
        while (top > 0) {
            sla_int i = stack[--top];
            if (i > l) {
                w->fLi.x[w->fLi.len++] = i;
                continue;
            }
            w->fUi.x[w->fUi.len++] = i;
            for (sla_int s = w->fLp[i]; s < w->fLp[i + 1]; s++) {
                sla_int t = w->fLi.x[s];
                if (mark[t] != l) mark[t] = l, stack[top++] = t;
            }
        }
        w->fLp[l + 1] = (sla_int)w->fLi.len;
        w->fUp[l + 1] = (sla_int)w->fUi.len;
    }
    return SLA_OK;
}

/* The factor's values on F, and F's U part by rows as U1 = D^-1 U. */
static sla_status values(sla_ctx *ctx, const sla__lu_factors *f, selinv_work *w)
{
    const sla_int n = f->n;
    const size_t nL = w->fLi.len, nU = w->fUi.len;
    w->fLx = sla__calloc(&w->a, nL, sizeof *w->fLx);
    w->fUx = sla__calloc(&w->a, nU, sizeof *w->fUx);
    w->uRp = sla__calloc(&w->a, (size_t)n + 1, sizeof *w->uRp);
    w->uRj = sla__malloc(&w->a, nU, sizeof *w->uRj);
    w->uRx = sla__malloc(&w->a, nU, sizeof *w->uRx);
    if (!w->fLx || !w->fUx || !w->uRp || !w->uRj || !w->uRx) return NOMEM("values on the pattern");
    sla_int *pos = w->pos;
    for (sla_int i = 0; i < n; i++) pos[i] = -1;
    for (sla_int l = 0; l < n; l++) {
        for (sla_int s = w->fLp[l]; s < w->fLp[l + 1]; s++) pos[w->fLi.x[s]] = s;
        for (sla_int s = w->fUp[l]; s < w->fUp[l + 1]; s++) pos[w->fUi.x[s]] = s;
        for (sla_int s = w->lcp[l]; s < w->lcp[l + 1]; s++) w->fLx[pos[w->lci[s]]] = w->lcx[s];
        for (sla_int s = f->Up[l]; s < f->Up[l + 1]; s++)
            if (f->Ui[s] < l) w->fUx[pos[f->Ui[s]]] = f->Ux[s];
        for (sla_int s = w->fLp[l]; s < w->fLp[l + 1]; s++) pos[w->fLi.x[s]] = -1;
        for (sla_int s = w->fUp[l]; s < w->fUp[l + 1]; s++) pos[w->fUi.x[s]] = -1;
    }
    for (sla_int p = 0; p < n; p++) {
        double d = f->Dx[p];
        if (d == 0.0 || !isfinite(d))
            return sla__error(ctx, SLA_ERR_SINGULAR, "LU selected inverse: pivot %lld of U is %g "
                              "(the matrix is singular)", (long long)p, d);
    }
    /* transpose: rows of U in increasing column order */
    for (size_t s = 0; s < nU; s++) w->uRp[w->fUi.x[s] + 1]++;
    for (sla_int p = 0; p < n; p++) w->uRp[p + 1] += w->uRp[p];
    memcpy(pos, w->uRp, (size_t)n * sizeof *pos);
    for (sla_int l = 0; l < n; l++)
        for (sla_int s = w->fUp[l]; s < w->fUp[l + 1]; s++) {
            sla_int p = w->fUi.x[s], q = pos[p]++;
            w->uRj[q] = l;
            w->uRx[q] = w->fUx[s] / f->Dx[p];
        }
    return SLA_OK;
}

/* The recurrences (1)-(3), p = n-1 down to 0. */
static void recurrences(const sla__lu_factors *f, selinv_work *w)
{
    const sla_int n = f->n;
    const sla_int *fLp = w->fLp, *fLi = w->fLi.x, *uRp = w->uRp, *uRj = w->uRj;
    const double *fLx = w->fLx, *uRx = w->uRx;
    double *ZL = w->ZL, *ZU = w->ZU, *Zd = w->Zd, *accL = w->accL, *accU = w->accU;
    sla_int *posL = w->pos, *posU = w->pos2;
    for (sla_int i = 0; i < n; i++) posL[i] = posU[i] = -1;
    for (sla_int p = n - 1; p >= 0; p--) {
        const sla_int l0 = fLp[p], nl = fLp[p + 1] - l0, u0 = uRp[p], nu = uRp[p + 1] - u0;
        const double *lv = fLx + l0, *uv = uRx + u0;
        for (sla_int q = 0; q < nl; q++) posL[fLi[l0 + q]] = q, accL[q] = 0.0;
        for (sla_int t = 0; t < nu; t++) posU[uRj[u0 + t]] = t, accU[t] = 0.0;
        /* the block Z[Urow(p), Lcol(p)]: entries Z[k, j] with k < j lie in
         * ZL's column k, those with k > j in ZU's row j, k = j in Zd */
        for (sla_int t = 0; t < nu; t++) {
            const sla_int k = uRj[u0 + t];
            const double uk = uv[t];
            double su = 0.0;
            for (sla_int s = fLp[k]; s < fLp[k + 1]; s++) {
                sla_int q = posL[fLi[s]];
                if (q >= 0) {
                    accL[q] += uk * ZL[s];
                    su += ZL[s] * lv[q];
                }
            }
            sla_int q = posL[k];
            if (q >= 0) {
                accL[q] += uk * Zd[k];
                su += Zd[k] * lv[q];
            }
            accU[t] += su;
        }
        for (sla_int q = 0; q < nl; q++) {
            const sla_int j = fLi[l0 + q];
            const double lj = lv[q];
            double sl = 0.0;
            for (sla_int s = uRp[j]; s < uRp[j + 1]; s++) {
                sla_int t = posU[uRj[s]];
                if (t >= 0) {
                    sl += uv[t] * ZU[s];
                    accU[t] += ZU[s] * lj;
                }
            }
            accL[q] += sl;
        }
        double dsum = 0.0;
        for (sla_int q = 0; q < nl; q++) {
            ZL[l0 + q] = -accL[q];
            posL[fLi[l0 + q]] = -1;
        }
        for (sla_int t = 0; t < nu; t++) {
            ZU[u0 + t] = -accU[t];
            dsum += uv[t] * ZU[u0 + t];
            posU[uRj[u0 + t]] = -1;
        }
        Zd[p] = 1.0 / f->Dx[p] - dsum;
    }
}

#ifdef SLA_HAVE_LAPACK
/* BLAS (Fortran interface, 32-bit integers, hidden string lengths last). */
void dtrsm_(const char *side, const char *uplo, const char *ta, const char *diag, const int *m, const int *n,
            const double *alpha, const double *a, const int *lda, double *b, const int *ldb, size_t, size_t,
            size_t, size_t);
void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k, const double *alpha,
            const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c,
            const int *ldc, size_t, size_t);

/* Supernodes of F: pivots p and p+1 share one when (p+1, p) and (p, p+1)
 * are in F and |Lcol(p)| = |Lcol(p+1)| + 1, |Urow(p)| = |Urow(p+1)| + 1.
 * By (*), (p, p+1) in F gives Lcol(p) \ {p+1} within Lcol(p+1), and
 * (p+1, p) gives Urow(p) \ {p+1} within Urow(p+1), so the counts make them
 * equal: a supernode J = p0..p1-1 has dense triangles in J x J, and every
 * column p of its L part is {p+1..p1-1} + R_L, every row of its U part
 * {p+1..p1-1} + R_U, with R_L = Lcol(p1-1), R_U = Urow(p1-1). Returns the
 * number of supernodes; super[0..nsuper] their first pivots, sup[p] the
 * supernode of p. */
static sla_int find_supernodes(sla_int n, const selinv_work *w, sla_int *super, sla_int *sup)
{
    const sla_int *fLp = w->fLp, *fLi = w->fLi.x, *uRp = w->uRp, *uRj = w->uRj;
    sla_int ns = 0;
    super[0] = 0;
    for (sla_int p = 0; p < n; p++) {
        sup[p] = ns;
        bool merge = false;
        if (p + 1 < n && fLp[p + 1] - fLp[p] == fLp[p + 2] - fLp[p + 1] + 1 &&
            uRp[p + 1] - uRp[p] == uRp[p + 2] - uRp[p + 1] + 1 && uRj[uRp[p]] == p + 1)
            for (sla_int s = fLp[p]; s < fLp[p + 1] && !merge; s++) merge = fLi[s] == p + 1;
        if (!merge) super[++ns] = p + 1;
    }
    return ns;
}

/* The recurrences by supernodes, with dense blocks. For J = p0..p1-1
 * (c pivots) with R_L (nl rows) and R_U (nu columns), L_JJ unit lower,
 * U1_JJ unit upper, L_RJ = L[R_L, J], U1_JR = U1[J, R_U], Zb = Z[R_U, R_L]
 * (gathered from the supernodes after J, which S holds by closure):
 *     Z[J, R_L] = -U1_JJ^-1 (U1_JR Zb),   Z[R_U, J] = -(Zb L_RJ) L_JJ^-1,
 *     Z[J, J] = U1_JJ^-1 (D_J^-1 L_JJ^-1 - U1_JR Z[R_U, J])
 * (rows J of U1 Z = D^-1 L^-1 and columns J of Z L = U^-1, as (1)-(3)
 * per pivot). Z is stored per supernode: ZJJ (c x c), ZJL = Z[J, R_L]
 * (c x nl) and ZUJ = Z[R_U, J] (nu x c), column-major. */
typedef struct snode_z {
    sla_int ns;
    sla_int *super, *sup;
    size_t *off;        /* ZJJ of K at off[K], ZJL after c*c, ZUJ after c*(c+nl) */
    double *Z;
} snode_z;

#define SN_RL(K) (fLi + fLp[sn->super[(K) + 1] - 1])
#define SN_NL(K) (fLp[sn->super[(K) + 1]] - fLp[sn->super[(K) + 1] - 1])
#define SN_RU(K) (uRj + uRp[sn->super[(K) + 1] - 1])
#define SN_NU(K) (uRp[sn->super[(K) + 1]] - uRp[sn->super[(K) + 1] - 1])

/* One entry z = Z[R_U[t], R_L[q]] of the block: stored in Zb (dense), or
 * its products added at once: ZJL[:, q] -= U1_JR[:, t] z and
 * ZUt[t, :] -= z L_RJ[q, :] (LRt = L_RJ row-major). */
static inline void sn_put(bool dense, double *Zb, sla_int nu, sla_int t, sla_int q, double z, sla_int c,
                          const double *UJR, const double *LRt, double *ZJL, double *ZUt)
{
    if (dense) {
        Zb[(size_t)q * nu + t] = z;
        return;
    }
    const double *u = UJR + (size_t)t * c, *l = LRt + (size_t)q * c;
    double *zl = ZJL + (size_t)q * c, *zu = ZUt + (size_t)t * c;
    for (sla_int r = 0; r < c; r++) {
        zl[r] -= u[r] * z;
        zu[r] -= z * l[r];
    }
}

static sla_status supernodal(sla_ctx *ctx, const sla__lu_factors *f, selinv_work *w, snode_z *sn)
{
    const sla_int n = f->n;
    const sla_int *fLp = w->fLp, *fLi = w->fLi.x, *uRp = w->uRp, *uRj = w->uRj;
    const double *fLx = w->fLx, *uRx = w->uRx;
    sla_status st = SLA_OK;
    size_t maxL = 1, maxU = 1, maxB = 1;
    for (sla_int K = 0; K < sn->ns; K++) {
        size_t c = (size_t)(sn->super[K + 1] - sn->super[K]), nl = (size_t)SN_NL(K), nu = (size_t)SN_NU(K);
        if (c + nl > INT32_MAX || c + nu > INT32_MAX)
            return sla__error(ctx, SLA_ERR_TOO_LARGE, "LU selected inverse: a supernode too large for BLAS");
        sn->off[K + 1] = sn->off[K] + c * (c + nl + nu);
        if ((c + nl) * c > maxL) maxL = (c + nl) * c;
        if ((c + nu) * c > maxU) maxU = (c + nu) * c;
        if (nu * nl > maxB) maxB = nu * nl;
    }
    sn->Z = sla__malloc(&w->a, sn->off[sn->ns] + 1, sizeof *sn->Z);
    double *Lb = sla__malloc(&w->a, maxL, sizeof *Lb), *Ub = sla__malloc(&w->a, maxU, sizeof *Ub);
    double *Zb = sla__malloc(&w->a, maxB, sizeof *Zb);
    double *LRt = sla__malloc(&w->a, maxL, sizeof *LRt), *ZUt = sla__malloc(&w->a, maxU, sizeof *ZUt);
    if (!sn->Z || !Lb || !Ub || !Zb || !LRt || !ZUt) {
        st = NOMEM("supernodal blocks");
        goto done;
    }
    sla_int *posL = w->pos, *posU = w->pos2;
    for (sla_int i = 0; i < n; i++) posL[i] = posU[i] = -1;
    const double one = 1.0, mone = -1.0, zero = 0.0;
    for (sla_int J = sn->ns - 1; J >= 0 && !st; J--) {
        const sla_int p0 = sn->super[J], p1 = sn->super[J + 1], c = p1 - p0;
        const sla_int nl = SN_NL(J), nu = SN_NU(J), ldl = c + nl;
        const sla_int *RL = SN_RL(J), *RU = SN_RU(J);
        double *ZJJ = sn->Z + sn->off[J], *ZJL = ZJJ + (size_t)c * c, *ZUJ = ZJL + (size_t)c * nl;
        for (sla_int q = 0; q < nl; q++) posL[RL[q]] = q;
        for (sla_int t = 0; t < nu; t++) posU[RU[t]] = t;
        /* the dense L[J + R_L, J] and U1[J, J + R_U] */
        memset(Lb, 0, (size_t)ldl * c * sizeof *Lb);
        memset(Ub, 0, (size_t)(c + nu) * c * sizeof *Ub);
        for (sla_int p = p0; p < p1 && !st; p++) {
            const sla_int r = p - p0;
            Lb[(size_t)r * ldl + r] = 1.0;
            Ub[(size_t)r * c + r] = 1.0;
            for (sla_int s = fLp[p]; s < fLp[p + 1]; s++) {
                sla_int i = fLi[s], row = i < p1 ? i - p0 : c + posL[i];
                if (i >= p1 && posL[i] < 0) st = SLA_ERR_ARGUMENT;
                else Lb[(size_t)r * ldl + row] = fLx[s];
            }
            for (sla_int s = uRp[p]; s < uRp[p + 1]; s++) {
                sla_int k = uRj[s], col = k < p1 ? k - p0 : c + posU[k];
                if (k >= p1 && posU[k] < 0) st = SLA_ERR_ARGUMENT;
                else Ub[(size_t)col * c + r] = uRx[s];
            }
        }
        if (st) {
            st = sla__error(ctx, SLA_ERR_ARGUMENT, "LU selected inverse: supernode %lld is not nested",
                            (long long)J);
            break;
        }
        /* products with Zb first, then the triangular solves: the order of
         * the scalar recurrences (U1_JJ^-1 U1_JR alone can be far larger
         * than Z, and cancel; on nnc1374 that costs 2-3 digits) */
        int ci = (int)c, nli = (int)nl, nui = (int)nu, ldli = (int)ldl;
        const double *UJR = Ub + (size_t)c * c, *LRJ = Lb + c;
        const bool dense = f->mode == 2 || (f->mode == 0 && c >= SLA_LU_SELINV_DENSE_MIN);
        if (nl > 0 && nu > 0) {
            /* Zb = Z[R_U, R_L] (nu x nl): entries Z[k, j] with j right of
             * k's supernode lie in its ZJL, those in k's supernode in its
             * ZJJ, those below j's supernode in its ZUJ. Dense: gathered,
             * then multiplied by BLAS; small supernodes: each entry goes
             * straight into U1_JR Zb (ZJL) and Zb L_RJ (ZUt, row-major). */
            if (dense) {
                memset(Zb, 0, (size_t)nu * nl * sizeof *Zb);
            } else {
                memset(ZJL, 0, (size_t)c * nl * sizeof *ZJL);
                memset(ZUt, 0, (size_t)nu * c * sizeof *ZUt);
                for (sla_int q = 0; q < nl; q++)
                    for (sla_int r = 0; r < c; r++) LRt[(size_t)q * c + r] = LRJ[(size_t)r * ldl + q];
            }
            for (sla_int t = 0; t < nu; t++) {
                const sla_int k = RU[t], K = sn->sup[k], k0 = sn->super[K], cK = sn->super[K + 1] - k0;
                const sla_int nlK = SN_NL(K), *RLK = SN_RL(K);
                const double *zjj = sn->Z + sn->off[K] + (k - k0), *zjl = zjj + (size_t)cK * cK;
                for (sla_int q = 0; q < nlK; q++) {
                    sla_int qq = posL[RLK[q]];
                    if (qq >= 0) sn_put(dense, Zb, nu, t, qq, zjl[(size_t)q * cK], c, UJR, LRt, ZJL, ZUt);
                }
                for (sla_int j = k0; j < k0 + cK; j++) {
                    sla_int qq = posL[j];
                    if (qq >= 0) sn_put(dense, Zb, nu, t, qq, zjj[(size_t)(j - k0) * cK], c, UJR, LRt, ZJL, ZUt);
                }
            }
            for (sla_int q = 0; q < nl; q++) {
                const sla_int j = RL[q], K = sn->sup[j], j0 = sn->super[K], cK = sn->super[K + 1] - j0;
                const sla_int nuK = SN_NU(K), *RUK = SN_RU(K);
                const double *zuj = sn->Z + sn->off[K] + (size_t)cK * (cK + SN_NL(K)) + (size_t)(j - j0) * nuK;
                for (sla_int t = 0; t < nuK; t++) {
                    sla_int tt = posU[RUK[t]];
                    if (tt >= 0) sn_put(dense, Zb, nu, tt, q, zuj[t], c, UJR, LRt, ZJL, ZUt);
                }
            }
            if (dense) {
                dgemm_("N", "N", &ci, &nli, &nui, &mone, UJR, &ci, Zb, &nui, &zero, ZJL, &ci, 1, 1);
                dgemm_("N", "N", &nui, &ci, &nli, &mone, Zb, &nui, LRJ, &ldli, &zero, ZUJ, &nui, 1, 1);
            } else {
                for (sla_int t = 0; t < nu; t++)
                    for (sla_int r = 0; r < c; r++) ZUJ[(size_t)r * nu + t] = ZUt[(size_t)t * c + r];
            }
            if (c > 1) { /* unit triangular: nothing to do for one pivot */
                dtrsm_("L", "U", "N", "U", &ci, &nli, &one, Ub, &ci, ZJL, &ci, 1, 1, 1, 1);
                dtrsm_("R", "L", "N", "U", &nui, &ci, &one, Lb, &ldli, ZUJ, &nui, 1, 1, 1, 1);
            }
        } else {
            memset(ZJL, 0, (size_t)c * nl * sizeof *ZJL);
            memset(ZUJ, 0, (size_t)nu * c * sizeof *ZUJ);
        }
        /* Z[J, J] = U1_JJ^-1 (D_J^-1 L_JJ^-1 - U1_JR Z[R_U, J]) */
        if (c == 1) {
            double sum = 0.0;
            for (sla_int t = 0; t < nu; t++) sum += UJR[t] * ZUJ[t];
            ZJJ[0] = 1.0 / f->Dx[p0] - sum;
        } else {
            memset(ZJJ, 0, (size_t)c * c * sizeof *ZJJ);
            for (sla_int r = 0; r < c; r++) ZJJ[(size_t)r * c + r] = 1.0;
            dtrsm_("R", "L", "N", "U", &ci, &ci, &one, Lb, &ldli, ZJJ, &ci, 1, 1, 1, 1);
            for (sla_int col = 0; col < c; col++)
                for (sla_int r = 0; r < c; r++) ZJJ[(size_t)col * c + r] /= f->Dx[p0 + r];
            if (nu > 0)
                dgemm_("N", "N", &ci, &ci, &nui, &mone, UJR, &ci, ZUJ, &nui, &one, ZJJ, &ci, 1, 1);
            dtrsm_("L", "U", "N", "U", &ci, &ci, &one, Ub, &ci, ZJJ, &ci, 1, 1, 1, 1);
        }
        for (sla_int q = 0; q < nl; q++) posL[RL[q]] = -1;
        for (sla_int t = 0; t < nu; t++) posU[RU[t]] = -1;
    }
done:
    sla__free(&w->a, Lb);
    sla__free(&w->a, Ub);
    sla__free(&w->a, Zb);
    sla__free(&w->a, LRt);
    sla__free(&w->a, ZUt);
    return st;
}

/* *v = Z[a, b] (an entry of S) from the supernodal storage; posL holds
 * the positions of R_L of a's supernode. false when not on S. */
static bool snode_entry(const selinv_work *w, const snode_z *sn, const sla_int *posL, sla_int a, sla_int b,
                        double *v)
{
    const sla_int *fLp = w->fLp, *fLi = w->fLi.x, *uRp = w->uRp, *uRj = w->uRj;
    (void)fLi;
    const sla_int Ka = sn->sup[a], a0 = sn->super[Ka], ca = sn->super[Ka + 1] - a0;
    const double *zjj = sn->Z + sn->off[Ka];
    if (sn->sup[b] == Ka) {
        *v = zjj[(size_t)(b - a0) * ca + (a - a0)];
        return true;
    }
    if (b > a) {
        sla_int q = posL[b];
        if (q < 0) return false;
        *v = zjj[(size_t)ca * ca + (size_t)q * ca + (a - a0)];
        return true;
    }
    const sla_int Kb = sn->sup[b], b0 = sn->super[Kb], cb = sn->super[Kb + 1] - b0, nub = SN_NU(Kb);
    const sla_int *RU = SN_RU(Kb);
    sla_int lo = 0, hi = nub;
    while (lo < hi) {
        sla_int mid = lo + (hi - lo) / 2;
        if (RU[mid] < a) lo = mid + 1;
        else hi = mid;
    }
    if (lo == nub || RU[lo] != a) return false;
    *v = sn->Z[sn->off[Kb] + (size_t)cb * (cb + SN_NL(Kb)) + (size_t)(b - b0) * nub + lo];
    return true;
}
/* The supernodal path: supernodes, recurrences, and entry k = (i, j) of A
 * from Z[qinv[i], pinv[j]] * rhat[j]. */
static sla_status snode_path(sla_ctx *ctx, const sla_matrix *A, const sla__lu_factors *f, selinv_work *w,
                             double *z)
{
    const sla_int n = f->n;
    sla_status st = SLA_OK;
    snode_z sn = {0};
    sn.super = sla__malloc(&w->a, (size_t)n + 1, sizeof *sn.super);
    sn.sup = sla__malloc(&w->a, (size_t)n, sizeof *sn.sup);
    sn.off = sla__calloc(&w->a, (size_t)n + 1, sizeof *sn.off);
    if (!sn.super || !sn.sup || !sn.off) {
        st = NOMEM("supernodes");
        goto done;
    }
    sn.ns = find_supernodes(n, w, sn.super, sn.sup);
    if ((st = supernodal(ctx, f, w, &sn))) goto done;
    sla_int *posL = w->pos;
    for (sla_int i = 0; i < n; i++) posL[i] = -1;
    for (sla_int i = 0; i < n && !st; i++) {
        /* R_L of a's supernode is Lcol of its last pivot */
        const sla_int a = w->qinv[i], K = sn.sup[a], pe = sn.super[K + 1] - 1;
        for (sla_int s = w->fLp[pe]; s < w->fLp[pe + 1]; s++) posL[w->fLi.x[s]] = s - w->fLp[pe];
        for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            const sla_int j = A->colind[k];
            double v = 0.0;
            if (!snode_entry(w, &sn, posL, a, w->pinv[j], &v)) {
                st = sla__error(ctx, SLA_ERR_ARGUMENT, "LU selected inverse: entry (%lld, %lld) is not on "
                                "the factor's pattern", (long long)i, (long long)j);
                break;
            }
            z[k] = f->rhat ? v * f->rhat[j] : v;
        }
        for (sla_int s = w->fLp[pe]; s < w->fLp[pe + 1]; s++) posL[w->fLi.x[s]] = -1;
    }
done:
    sla__free(&w->a, sn.super);
    sla__free(&w->a, sn.sup);
    sla__free(&w->a, sn.off);
    sla__free(&w->a, sn.Z);
    return st;
}
#endif

sla_status sla__lu_selinv(sla_ctx *ctx, const sla_matrix *A, const sla__lu_factors *f, double *z)
{
    const sla_int n = f->n;
    if (A->nrows != n || A->ncols != n)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "LU selected inverse: matrix does not match the factor");
    if (n == 0) return SLA_OK;
    selinv_work w;
    memset(&w, 0, sizeof w);
    w.a = sla__ctx_alloc(ctx);
    sla_status st = SLA_OK;
    w.pinv = sla__malloc(&w.a, (size_t)n, sizeof *w.pinv);
    w.qinv = sla__malloc(&w.a, (size_t)n, sizeof *w.qinv);
    w.mark = sla__malloc(&w.a, (size_t)n, sizeof *w.mark);
    w.stack = sla__malloc(&w.a, (size_t)n, sizeof *w.stack);
    w.pos = sla__malloc(&w.a, (size_t)n, sizeof *w.pos);
    w.pos2 = sla__malloc(&w.a, (size_t)n, sizeof *w.pos2);
    if (!w.pinv || !w.qinv || !w.mark || !w.stack || !w.pos || !w.pos2) {
        st = NOMEM("work space");
        goto done;
    }
    for (sla_int i = 0; i < n; i++) w.pinv[i] = w.qinv[i] = -1;
    for (sla_int k = 0; k < n; k++) {
        sla_int pk = f->P[k], qk = f->Q[k];
        if (pk < 0 || pk >= n || qk < 0 || qk >= n || w.pinv[pk] >= 0 || w.qinv[qk] >= 0) {
            st = sla__error(ctx, SLA_ERR_ARGUMENT, "LU selected inverse: P or Q is not a permutation");
            goto done;
        }
        w.pinv[pk] = k;
        w.qinv[qk] = k;
    }
    if ((st = l_by_columns(ctx, f, &w))) goto done;
    if ((st = symbolic(ctx, A, f, &w))) goto done;
    if ((st = values(ctx, f, &w))) goto done;
    /* the factor's own L and F's U by columns are no longer needed */
    sla__free(&w.a, w.lci);
    sla__free(&w.a, w.lcx);
    sla__free(&w.a, w.fUx);
    sla__free(&w.a, w.fUi.x);
    w.lci = NULL;
    w.lcx = NULL;
    w.fUx = NULL;
    w.fUi.x = NULL;
#ifdef SLA_HAVE_LAPACK
    if (f->mode != 1) {
        st = snode_path(ctx, A, f, &w, z);
        goto done;
    }
#endif
    w.ZL = sla__malloc(&w.a, w.fLi.len, sizeof *w.ZL);
    w.ZU = sla__malloc(&w.a, w.fUi.len, sizeof *w.ZU);
    w.Zd = sla__malloc(&w.a, (size_t)n, sizeof *w.Zd);
    w.accL = sla__malloc(&w.a, (size_t)n, sizeof *w.accL);
    w.accU = sla__malloc(&w.a, (size_t)n, sizeof *w.accU);
    if (!w.ZL || !w.ZU || !w.Zd || !w.accL || !w.accU) {
        st = NOMEM("selected inverse");
        goto done;
    }
    recurrences(f, &w);

    /* entry k = (i, j) of A: Z[a, b] * rhat[j], a = qinv[i], b = pinv[j];
     * b > a: ZL's column a (scattered once per row of A), b < a: ZU's row
     * b (sorted: binary search) */
    sla_int *posL = w.pos;
    for (sla_int i = 0; i < n; i++) posL[i] = -1;
    for (sla_int i = 0; i < n && !st; i++) {
        const sla_int a = w.qinv[i];
        for (sla_int s = w.fLp[a]; s < w.fLp[a + 1]; s++) posL[w.fLi.x[s]] = s;
        for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            const sla_int j = A->colind[k], b = w.pinv[j];
            double v;
            if (b == a) {
                v = w.Zd[a];
            } else if (b > a) {
                if (posL[b] < 0) {
                    st = sla__error(ctx, SLA_ERR_ARGUMENT, "LU selected inverse: entry (%lld, %lld) "
                                    "is not on the factor's pattern", (long long)i, (long long)j);
                    break;
                }
                v = w.ZL[posL[b]];
            } else {
                sla_int lo = w.uRp[b], hi = w.uRp[b + 1];
                while (lo < hi) {
                    sla_int mid = lo + (hi - lo) / 2;
                    if (w.uRj[mid] < a) lo = mid + 1;
                    else hi = mid;
                }
                if (lo == w.uRp[b + 1] || w.uRj[lo] != a) {
                    st = sla__error(ctx, SLA_ERR_ARGUMENT, "LU selected inverse: entry (%lld, %lld) "
                                    "is not on the factor's pattern", (long long)i, (long long)j);
                    break;
                }
                v = w.ZU[lo];
            }
            z[k] = f->rhat ? v * f->rhat[j] : v;
        }
        for (sla_int s = w.fLp[a]; s < w.fLp[a + 1]; s++) posL[w.fLi.x[s]] = -1;
    }
done:
    work_free(&w);
    return st;
}
