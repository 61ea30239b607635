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
 *
 * Code. This file builds the pattern side, which does not depend on the
 * type of the values: the permutations, F, where each entry of the
 * factor lands on F (lmap, umap), the supernodes, and where each entry of
 * A is read from Z (zpos). lu_selinv_num.c runs the recurrences on it,
 * one source (lu_selinv_num.h) compiled for double and for complex
 * double: the recurrences hold in any field, Z = (L U)^-1 with no
 * conjugation, so complex factors (UMFPACK's umfpack_zl_get_numeric, with
 * a real row scaling) take the same path (sla__zlu_selinv).
 * Measured (2 shared cores): the 46 500-row arrowhead of sla_gen_arrow,
 * gradient 0.07 s after a 0.9 s factorization; poisson3d 25 by LU 2.5 s
 * after 0.4-0.8 s; a random 5000 x 5000 matrix with 4 entries per row
 * (dense-ish factor, tiny supernodes) 4-6 s after 0.3-0.5 s. Memory: the
 * factor's entries about four times (complex: twice that) plus O(n + nnz).
 */
#include "lu_selinv.h"

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

/* What the pattern build needs on the way. */
typedef struct selinv_tmp {
    sla_int *mark, *stack;
    sla_int *lcp, *lci, *lcs; /* the factor's L (strictly lower) by columns; lcs: entry in row form */
    sla_int *fUp;             /* F's U part by columns */
    grow_idx fLi, fUi;
} selinv_tmp;

static void pat_free(sla__selinv_pat *p)
{
    const sla_allocator *a = &p->a;
    void *v[] = {p->pinv, p->qinv, p->pos, p->pos2, p->fLp, p->fLi, p->uRp, p->uRj,
                 p->lmap, p->umap, p->super, p->sup, p->off, p->zpos};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) sla__free(a, v[k]);
}

static void tmp_free(const sla_allocator *a, selinv_tmp *t)
{
    void *v[] = {t->mark, t->stack, t->lcp, t->lci, t->lcs, t->fUp, t->fLi.x, t->fUi.x};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) sla__free(a, v[k]);
    memset(t, 0, sizeof *t);
}

#define NOMEM(what) sla__error(ctx, SLA_ERR_NOMEM, "LU selected inverse: out of memory (%s)", what)

/* The factor's L (row form, diagonal possibly stored) by columns, strictly
 * lower part, with each entry's place in the row form. */
static sla_status l_by_columns(sla_ctx *ctx, const sla__lu_factors *f, sla__selinv_pat *p, selinv_tmp *t)
{
    const sla_int n = f->n;
    sla_int nl = 0;
    for (sla_int i = 0; i < n; i++)
        for (sla_int s = f->Lp[i]; s < f->Lp[i + 1]; s++)
            if (f->Lj[s] < i) nl++;
    t->lcp = sla__calloc(&p->a, (size_t)n + 1, sizeof *t->lcp);
    t->lci = sla__malloc(&p->a, (size_t)nl + 1, sizeof *t->lci);
    t->lcs = sla__malloc(&p->a, (size_t)nl + 1, sizeof *t->lcs);
    if (!t->lcp || !t->lci || !t->lcs) return NOMEM("columns of L");
    for (sla_int i = 0; i < n; i++)
        for (sla_int s = f->Lp[i]; s < f->Lp[i + 1]; s++) {
            sla_int j = f->Lj[s];
            if (j < 0 || j > i)
                return sla__error(ctx, SLA_ERR_ARGUMENT, "LU selected inverse: L has an entry "
                                  "(%lld, %lld) above its diagonal", (long long)i, (long long)j);
            if (j < i) t->lcp[j + 1]++;
        }
    for (sla_int j = 0; j < n; j++) t->lcp[j + 1] += t->lcp[j];
    sla_int *next = p->pos; /* n entries of work space */
    memcpy(next, t->lcp, (size_t)n * sizeof *next);
    for (sla_int i = 0; i < n; i++)
        for (sla_int s = f->Lp[i]; s < f->Lp[i + 1]; s++) {
            sla_int j = f->Lj[s];
            if (j < i) {
                t->lci[next[j]] = i;
                t->lcs[next[j]++] = s;
            }
        }
    for (sla_int j = 0; j < n; j++) next[j] = -1;
    return SLA_OK;
}

/* The symbolic LU F (Gilbert-Peierls), column by column. */
static sla_status symbolic(sla_ctx *ctx, const sla_matrix *A, const sla__lu_factors *f, sla__selinv_pat *p,
                           selinv_tmp *t)
{
    const sla_int n = f->n;
    p->fLp = sla__malloc(&p->a, (size_t)n + 1, sizeof *p->fLp);
    t->fUp = sla__malloc(&p->a, (size_t)n + 1, sizeof *t->fUp);
    if (!p->fLp || !t->fUp) return NOMEM("symbolic factor");
    size_t guess = (size_t)f->Up[n] + (size_t)n;
    if (!grow_reserve(&p->a, &t->fLi, guess) || !grow_reserve(&p->a, &t->fUi, guess))
        return NOMEM("symbolic factor");
    sla_int *mark = t->mark, *stack = t->stack;
    for (sla_int i = 0; i < n; i++) mark[i] = -1;
    p->fLp[0] = t->fUp[0] = 0;
    for (sla_int l = 0; l < n; l++) {
        if (!grow_reserve(&p->a, &t->fLi, (size_t)n) || !grow_reserve(&p->a, &t->fUi, (size_t)n))
            return NOMEM("symbolic factor");
        sla_int top = 0;
        mark[l] = l; /* the diagonal, kept apart */
        /* seeds: column l of B(P, Q) is row Q[l] of A, rows pinv[col];
         * the factor's own U column l and L column l */
        const sla_int r = f->Q[l];
        for (sla_int k = A->rowptr[r]; k < A->rowptr[r + 1]; k++) {
            sla_int i = p->pinv[A->colind[k]];
            if (mark[i] != l) mark[i] = l, stack[top++] = i;
        }
        for (sla_int s = f->Up[l]; s < f->Up[l + 1]; s++) {
            sla_int i = f->Ui[s];
            if (i < 0 || i > l)
                return sla__error(ctx, SLA_ERR_ARGUMENT, "LU selected inverse: U has an entry "
                                  "(%lld, %lld) below its diagonal", (long long)i, (long long)l);
            if (mark[i] != l) mark[i] = l, stack[top++] = i;
        }
        for (sla_int s = t->lcp[l]; s < t->lcp[l + 1]; s++) {
            sla_int i = t->lci[s];
            if (mark[i] != l) mark[i] = l, stack[top++] = i;
        }
        /* reach through the columns of F's L part left of l */
        while (top > 0) {
            sla_int i = stack[--top];
            if (i > l) {
                t->fLi.x[t->fLi.len++] = i;
                continue;
            }
            t->fUi.x[t->fUi.len++] = i;
            for (sla_int s = p->fLp[i]; s < p->fLp[i + 1]; s++) {
                sla_int q = t->fLi.x[s];
                if (mark[q] != l) mark[q] = l, stack[top++] = q;
            }
        }
        p->fLp[l + 1] = (sla_int)t->fLi.len;
        t->fUp[l + 1] = (sla_int)t->fUi.len;
    }
    return SLA_OK;
}

/* F's U part by rows (uRp, uRj: columns in increasing order), and where
 * the factor's entries go: lmap into F's L part, umap into U's rows. */
static sla_status maps(sla_ctx *ctx, const sla__lu_factors *f, sla__selinv_pat *p, selinv_tmp *t)
{
    const sla_int n = f->n;
    p->nL = t->fLi.len;
    p->nU = t->fUi.len;
    p->fLi = t->fLi.x; /* taken over */
    t->fLi.x = NULL;
    p->uRp = sla__calloc(&p->a, (size_t)n + 1, sizeof *p->uRp);
    p->uRj = sla__malloc(&p->a, p->nU + 1, sizeof *p->uRj);
    p->lmap = sla__malloc(&p->a, (size_t)f->Lp[n] + 1, sizeof *p->lmap);
    p->umap = sla__malloc(&p->a, (size_t)f->Up[n] + 1, sizeof *p->umap);
    sla_int *tmap = sla__malloc(&p->a, p->nU + 1, sizeof *tmap); /* F's U by columns -> by rows */
    if (!p->uRp || !p->uRj || !p->lmap || !p->umap || !tmap) {
        sla__free(&p->a, tmap);
        return NOMEM("the factor's places on the pattern");
    }
    const sla_int *fUi = t->fUi.x;
    for (size_t s = 0; s < p->nU; s++) p->uRp[fUi[s] + 1]++;
    for (sla_int q = 0; q < n; q++) p->uRp[q + 1] += p->uRp[q];
    sla_int *pos = p->pos;
    memcpy(pos, p->uRp, (size_t)n * sizeof *pos);
    for (sla_int l = 0; l < n; l++)
        for (sla_int s = t->fUp[l]; s < t->fUp[l + 1]; s++) {
            sla_int q = pos[fUi[s]]++;
            p->uRj[q] = l;
            tmap[s] = q;
        }
    for (sla_int i = 0; i < n; i++) pos[i] = -1;
    for (sla_int s = 0; s < f->Lp[n]; s++) p->lmap[s] = -1;
    for (sla_int s = 0; s < f->Up[n]; s++) p->umap[s] = -1;
    for (sla_int l = 0; l < n; l++) {
        for (sla_int s = p->fLp[l]; s < p->fLp[l + 1]; s++) pos[p->fLi[s]] = s;
        for (sla_int s = t->lcp[l]; s < t->lcp[l + 1]; s++) p->lmap[t->lcs[s]] = pos[t->lci[s]];
        for (sla_int s = p->fLp[l]; s < p->fLp[l + 1]; s++) pos[p->fLi[s]] = -1;
        for (sla_int s = t->fUp[l]; s < t->fUp[l + 1]; s++) pos[fUi[s]] = s;
        for (sla_int s = f->Up[l]; s < f->Up[l + 1]; s++)
            if (f->Ui[s] < l) p->umap[s] = tmap[pos[f->Ui[s]]];
        for (sla_int s = t->fUp[l]; s < t->fUp[l + 1]; s++) pos[fUi[s]] = -1;
    }
    sla__free(&p->a, tmap);
    return SLA_OK;
}

#ifdef SLA_HAVE_LAPACK
/* Supernodes of F: pivots p and p+1 share one when (p+1, p) and (p, p+1)
 * are in F and |Lcol(p)| = |Lcol(p+1)| + 1, |Urow(p)| = |Urow(p+1)| + 1.
 * By (*), (p, p+1) in F gives Lcol(p) \ {p+1} within Lcol(p+1), and
 * (p+1, p) gives Urow(p) \ {p+1} within Urow(p+1), so the counts make them
 * equal: a supernode J = p0..p1-1 has dense triangles in J x J, and every
 * column p of its L part is {p+1..p1-1} + R_L, every row of its U part
 * {p+1..p1-1} + R_U, with R_L = Lcol(p1-1), R_U = Urow(p1-1). Sets ns,
 * super[0..ns] (their first pivots), sup[p] (the supernode of p). */
static void find_supernodes(sla__selinv_pat *sn)
{
    const sla_int n = sn->n, *fLp = sn->fLp, *fLi = sn->fLi, *uRp = sn->uRp, *uRj = sn->uRj;
    sla_int ns = 0;
    sn->super[0] = 0;
    for (sla_int p = 0; p < n; p++) {
        sn->sup[p] = ns;
        bool merge = false;
        if (p + 1 < n && fLp[p + 1] - fLp[p] == fLp[p + 2] - fLp[p + 1] + 1 &&
            uRp[p + 1] - uRp[p] == uRp[p + 2] - uRp[p + 1] + 1 && uRj[uRp[p]] == p + 1)
            for (sla_int s = fLp[p]; s < fLp[p + 1] && !merge; s++) merge = fLi[s] == p + 1;
        if (!merge) sn->super[++ns] = p + 1;
    }
    sn->ns = ns;
}

/* The supernodes, where each one's Z lies (off), the largest blocks. */
static sla_status supernodes(sla_ctx *ctx, sla__selinv_pat *sn)
{
    const sla_int n = sn->n;
    sn->super = sla__malloc(&sn->a, (size_t)n + 1, sizeof *sn->super);
    sn->sup = sla__malloc(&sn->a, (size_t)n, sizeof *sn->sup);
    sn->off = sla__calloc(&sn->a, (size_t)n + 1, sizeof *sn->off);
    if (!sn->super || !sn->sup || !sn->off) return NOMEM("supernodes");
    find_supernodes(sn);
    sn->maxL = sn->maxU = sn->maxB = 1;
    for (sla_int K = 0; K < sn->ns; K++) {
        size_t c = (size_t)(sn->super[K + 1] - sn->super[K]);
        size_t nl = (size_t)SLA_SN_NL(sn, K), nu = (size_t)SLA_SN_NU(sn, K);
        if (c + nl > INT32_MAX || c + nu > INT32_MAX)
            return sla__error(ctx, SLA_ERR_TOO_LARGE, "LU selected inverse: a supernode too large for BLAS");
        sn->off[K + 1] = sn->off[K] + c * (c + nl + nu);
        if ((c + nl) * c > sn->maxL) sn->maxL = (c + nl) * c;
        if ((c + nu) * c > sn->maxU) sn->maxU = (c + nu) * c;
        if (nu * nl > sn->maxB) sn->maxB = nu * nl;
    }
    sn->zlen = sn->off[sn->ns];
    return SLA_OK;
}

/* *at = where Z[a, b] (an entry of S) lies in the supernodal storage;
 * posL holds the positions of R_L of a's supernode. false when not on S. */
static bool snode_entry(const sla__selinv_pat *sn, const sla_int *posL, sla_int a, sla_int b, size_t *at)
{
    const sla_int Ka = sn->sup[a], a0 = sn->super[Ka], ca = sn->super[Ka + 1] - a0;
    if (sn->sup[b] == Ka) {
        *at = sn->off[Ka] + (size_t)(b - a0) * ca + (size_t)(a - a0);
        return true;
    }
    if (b > a) {
        sla_int q = posL[b];
        if (q < 0) return false;
        *at = sn->off[Ka] + (size_t)ca * ca + (size_t)q * ca + (size_t)(a - a0);
        return true;
    }
    const sla_int Kb = sn->sup[b], b0 = sn->super[Kb], cb = sn->super[Kb + 1] - b0, nub = SLA_SN_NU(sn, Kb);
    const sla_int *RU = SLA_SN_RU(sn, Kb);
    sla_int lo = 0, hi = nub;
    while (lo < hi) {
        sla_int mid = lo + (hi - lo) / 2;
        if (RU[mid] < a) lo = mid + 1;
        else hi = mid;
    }
    if (lo == nub || RU[lo] != a) return false;
    *at = sn->off[Kb] + (size_t)cb * (cb + SLA_SN_NL(sn, Kb)) + (size_t)(b - b0) * nub + (size_t)lo;
    return true;
}
#endif

/* *at = where Z[a, b] lies per pivot (ZL | ZU | Zd); posL holds the
 * positions of Lcol(a). b > a: ZL's column a; b < a: ZU's row b (sorted:
 * binary search). false when not on S. */
static bool pivot_entry(const sla__selinv_pat *p, const sla_int *posL, sla_int a, sla_int b, size_t *at)
{
    if (b == a) {
        *at = p->nL + p->nU + (size_t)a;
        return true;
    }
    if (b > a) {
        if (posL[b] < 0) return false;
        *at = (size_t)posL[b];
        return true;
    }
    sla_int lo = p->uRp[b], hi = p->uRp[b + 1];
    while (lo < hi) {
        sla_int mid = lo + (hi - lo) / 2;
        if (p->uRj[mid] < a) lo = mid + 1;
        else hi = mid;
    }
    if (lo == p->uRp[b + 1] || p->uRj[lo] != a) return false;
    *at = p->nL + (size_t)lo;
    return true;
}

/* zpos[k]: where entry k = (i, j) of A is read, Z[qinv[i], pinv[j]]. The
 * L pattern scattered once per row of A: Lcol(a) per pivot, R_L of a's
 * supernode (Lcol of its last pivot) by supernodes. */
static sla_status positions(sla_ctx *ctx, const sla_matrix *A, sla__selinv_pat *p)
{
    const sla_int n = p->n;
    p->zpos = sla__malloc(&p->a, (size_t)A->nnz + 1, sizeof *p->zpos);
    if (!p->zpos) return NOMEM("positions of the entries");
    sla_int *posL = p->pos;
    sla_status st = SLA_OK;
    for (sla_int i = 0; i < n && !st; i++) {
        const sla_int a = p->qinv[i];
        sla_int pe = a;
#ifdef SLA_HAVE_LAPACK
        if (p->snodes) pe = p->super[p->sup[a] + 1] - 1;
#endif
        for (sla_int s = p->fLp[pe]; s < p->fLp[pe + 1]; s++)
            posL[p->fLi[s]] = p->snodes ? s - p->fLp[pe] : s;
        for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            const sla_int j = A->colind[k], b = p->pinv[j];
            bool on;
#ifdef SLA_HAVE_LAPACK
            if (p->snodes) on = snode_entry(p, posL, a, b, &p->zpos[k]);
            else
#endif
                on = pivot_entry(p, posL, a, b, &p->zpos[k]);
            if (!on) {
                st = sla__error(ctx, SLA_ERR_ARGUMENT, "LU selected inverse: entry (%lld, %lld) is not on "
                                "the factor's pattern", (long long)i, (long long)j);
                break;
            }
        }
        for (sla_int s = p->fLp[pe]; s < p->fLp[pe + 1]; s++) posL[p->fLi[s]] = -1;
    }
    return st;
}

/* The pattern side for f and A (p zeroed by the caller, its allocator set). */
static sla_status pattern(sla_ctx *ctx, const sla_matrix *A, const sla__lu_factors *f, sla__selinv_pat *p)
{
    const sla_int n = f->n;
    selinv_tmp t;
    memset(&t, 0, sizeof t);
    sla_status st = SLA_OK;
    p->n = n;
    p->pinv = sla__malloc(&p->a, (size_t)n, sizeof *p->pinv);
    p->qinv = sla__malloc(&p->a, (size_t)n, sizeof *p->qinv);
    p->pos = sla__malloc(&p->a, (size_t)n, sizeof *p->pos);
    p->pos2 = sla__malloc(&p->a, (size_t)n, sizeof *p->pos2);
    t.mark = sla__malloc(&p->a, (size_t)n, sizeof *t.mark);
    t.stack = sla__malloc(&p->a, (size_t)n, sizeof *t.stack);
    if (!p->pinv || !p->qinv || !p->pos || !p->pos2 || !t.mark || !t.stack) {
        st = NOMEM("work space");
        goto done;
    }
    for (sla_int i = 0; i < n; i++) p->pinv[i] = p->qinv[i] = p->pos[i] = p->pos2[i] = -1;
    for (sla_int k = 0; k < n; k++) {
        sla_int pk = f->P[k], qk = f->Q[k];
        if (pk < 0 || pk >= n || qk < 0 || qk >= n || p->pinv[pk] >= 0 || p->qinv[qk] >= 0) {
            st = sla__error(ctx, SLA_ERR_ARGUMENT, "LU selected inverse: P or Q is not a permutation");
            goto done;
        }
        p->pinv[pk] = k;
        p->qinv[qk] = k;
    }
    if ((st = l_by_columns(ctx, f, p, &t))) goto done;
    if ((st = symbolic(ctx, A, f, p, &t))) goto done;
    if ((st = maps(ctx, f, p, &t))) goto done;
    tmp_free(&p->a, &t); /* the factor's own L and F's U by columns are no longer needed */
    p->zlen = p->nL + p->nU + (size_t)n;
#ifdef SLA_HAVE_LAPACK
    p->snodes = f->mode != 1;
    if (p->snodes && (st = supernodes(ctx, p))) goto done;
#endif
    st = positions(ctx, A, p);
done:
    tmp_free(&p->a, &t);
    return st;
}

/* Both entry points: the pattern, then the numeric half of z's type. */
static sla_status selinv(sla_ctx *ctx, const sla_matrix *A, const sla__lu_factors *f, double *z, sla__z *zz)
{
    const sla_int n = f->n;
    if (A->nrows != n || A->ncols != n)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "LU selected inverse: matrix does not match the factor");
    if (zz ? !f->zLx || !f->zUx || !f->zDx : !f->Lx || !f->Ux || !f->Dx)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "LU selected inverse: the factor has no %s values",
                          zz ? "complex" : "real");
    if (n == 0) return SLA_OK;
    sla__selinv_pat p;
    memset(&p, 0, sizeof p);
    p.a = sla__ctx_alloc(ctx);
    sla_status st = pattern(ctx, A, f, &p);
    if (!st) st = zz ? sla__selinv_num_z(ctx, A, f, &p, zz) : sla__selinv_num_d(ctx, A, f, &p, z);
    pat_free(&p);
    return st;
}

sla_status sla__lu_selinv(sla_ctx *ctx, const sla_matrix *A, const sla__lu_factors *f, double *z)
{
    return selinv(ctx, A, f, z, NULL);
}

sla_status sla__zlu_selinv(sla_ctx *ctx, const sla_matrix *A, const sla__lu_factors *f, sla__z *z)
{
    return selinv(ctx, A, f, NULL, z);
}
