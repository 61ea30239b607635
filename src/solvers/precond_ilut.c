/* The ILUT preconditioner: Saad's ILUT(tau, p) with ILUTP's threshold column
 * pivoting. A Q = L U on a pattern found while factoring, row by row:
 * fill entries below droptol ||a_i||_2 are dropped and each row of L and
 * of U keeps its ceil(fill nnz(a_i) / 2) largest; stored as ILU(0)'s (one
 * owned CSR, L then the diagonal then U in each row, precond_fact.h), so
 * the sweeps are ILU(0)'s, plus Q. Zero pivots are shifted by the rule of
 * precond_fact.c. */
#include "precond_fact.h"

#include <stdlib.h>

/* Work arrays of one ILUT factorization, n entries each. Columns are
 * positions (after the column permutation so far) while a row is built. */
typedef struct ilut_work {
    double *w;          /* the row being factored, dense (0 off its pattern) */
    unsigned char *in;  /* where position p is on that row's pattern: 2 for an entry
                           of A (never dropped by the threshold), 1 for fill */
    int32_t *heap;      /* its L positions not yet eliminated: a min-heap */
    int32_t *lcol;      /* its L positions kept so far */
    int32_t *ucol;      /* its U positions (beyond the diagonal) */
    int32_t *perm;      /* position -> column of A */
    int32_t *iperm;     /* column of A -> position */
} ilut_work;

static void heap_push(int32_t *h, sla_int *len, int32_t c)
{
    sla_int k = (*len)++;
    while (k > 0 && h[(k - 1) / 2] > c) { /* sift up */
        h[k] = h[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    h[k] = c;
}

static int32_t heap_pop(int32_t *h, sla_int *len)
{
    int32_t top = h[0], last = h[--(*len)];
    sla_int k = 0, n = *len;
    for (;;) { /* sift `last` down from the root */
        sla_int c = 2 * k + 1;
        if (c >= n) break;
        if (c + 1 < n && h[c + 1] < h[c]) c++;
        if (h[c] >= last) break;
        h[k] = h[c];
        k = c;
    }
    if (n > 0) h[k] = last;
    return top;
}

/* Reorder c[0, m) so that c[0, p) hold the p entries of largest |w[c]|
 * (p < m): a quickselect. */
static void select_largest(int32_t *c, sla_int m, sla_int p, const double *w)
{
    sla_int lo = 0, hi = m - 1;
    while (lo < hi) {
        double piv = fabs(w[c[lo + (hi - lo) / 2]]);
        sla_int a = lo, b = hi;
        while (a <= b) {
            while (fabs(w[c[a]]) > piv) a++;
            while (fabs(w[c[b]]) < piv) b--;
            if (a <= b) {
                int32_t t = c[a];
                c[a++] = c[b];
                c[b--] = t;
            }
        }
        /* [lo, b] >= piv >= [a, hi] in magnitude */
        if (p - 1 <= b) hi = b;
        else if (p - 1 >= a) lo = a;
        else break;
    }
}

static int cmp_col(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Entries kept in each of row i's L and U parts: ceil(fill nnz(a_i) / 2),
 * no more than the part can hold. */
static void ilut_limits(const sla_matrix *A, sla_int i, double fill, sla_int *pl, sla_int *pu)
{
    double p = ceil(fill * (double)(A->rowptr[i + 1] - A->rowptr[i]) * 0.5);
    *pl = p < (double)i ? (sla_int)p : i;
    *pu = p < (double)(A->nrows - 1 - i) ? (sla_int)p : A->nrows - 1 - i;
}

/* Settings of one ILUT factorization. */
typedef struct ilut_par {
    double droptol, fill, pivot;
    bool shift;
} ilut_par;

/* Saad's ILUT with threshold column pivoting (ILUTP), row by row (IKJ):
 * row i of A into w (by position); its L positions eliminated in
 * increasing order (a heap, since elimination adds fill), each
 * l_ik = w_k / u_kk dropped when |l_ik| <= tau_i = droptol ||a_i||_2, else
 * w -= l_ik u_k (fill allowed); U drops entries <= tau_i. Entries on A's
 * own pattern are exempt from that threshold (a row whose entries span
 * many magnitudes keeps its small ones, as ILU(0) would: olm500 needs 139
 * GMRES iterations without the exemption, 1 with it). When the pivot
 * w_i is below pivot * max_j>i |w_j| the column of that maximum takes
 * position i (the pivot is then that entry); L and U keep their p largest;
 * a zero or tiny pivot is shifted (`shift`). U rows are stored with A's
 * column numbers while positions may still move, and renumbered at the
 * end. f's owned arrays have room for every row's limits. */
static sla_status ilut_factor(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const ilut_par *par,
                              fact *f, ilut_work *wk, sla_int *nshift, sla_int *first,
                              sla_int *nswap)
{
    sla_int n = f->n, q = 0;
    double *w = wk->w;
    unsigned char *in = wk->in;
    int32_t *perm = wk->perm, *iperm = wk->iperm;
    sla_int *rp = f->own_rowptr;
    int32_t *ci = f->own_colind;
    double *v = f->val;
    rp[0] = 0;
    for (sla_int i = 0; i < n; i++) perm[i] = iperm[i] = (int32_t)i;
    for (sla_int i = 0; i < n; i++) {
        sla_int nh = 0, nlc = 0, nuc = 0, pl, pu;
        ilut_limits(A, i, par->fill, &pl, &pu);
        double s2 = 0.0;
        w[i] = 0.0;
        in[i] = 1;
        for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) { /* w = a_i */
            int32_t c = iperm[A->colind[k]];
            double a = sla__val(A, ib, k);
            s2 += a * a;
            w[c] = a;
            in[c] = 2;
            if (c == i) continue;
            if (c < i) heap_push(wk->heap, &nh, c);
            else wk->ucol[nuc++] = c;
        }
        double rnorm = sqrt(s2), tau = par->droptol * rnorm;
        while (nh > 0) {
            int32_t k = heap_pop(wk->heap, &nh);
            double l = w[k] * f->dinv[k]; /* l_ik = w_k / u_kk */
            if (in[k] == 1 && !(fabs(l) > tau)) { /* dropped fill: no later update reaches k */
                w[k] = 0.0;
                in[k] = 0;
                continue;
            }
            w[k] = l;
            wk->lcol[nlc++] = k;
            for (sla_int m = f->dpos[k] + 1; m < rp[k + 1]; m++) { /* w -= l_ik u_k */
                int32_t j = iperm[ci[m]];
                if (!in[j]) {
                    in[j] = 1;
                    w[j] = 0.0;
                    if (j < i) heap_push(wk->heap, &nh, j);
                    else wk->ucol[nuc++] = j;
                }
                w[j] -= l * v[m];
            }
        }
        /* U beyond the diagonal: drop the small; find the largest */
        sla_int nu = 0, big = -1;
        for (sla_int t = 0; t < nuc; t++) {
            int32_t j = wk->ucol[t];
            if (in[j] == 2 || fabs(w[j]) > tau) {
                if (big < 0 || fabs(w[j]) > fabs(w[wk->ucol[big]])) big = nu;
                wk->ucol[nu++] = j;
            } else {
                w[j] = 0.0;
                in[j] = 0;
            }
        }
        if (big >= 0 && fabs(w[i]) < par->pivot * fabs(w[wk->ucol[big]])) {
            /* column pivoting: positions i and j swap columns of A */
            int32_t j = wk->ucol[big];
            double t = w[i];
            w[i] = w[j];
            w[j] = t;
            unsigned char fl = in[i];
            in[i] = in[j];
            in[j] = fl;
            int32_t ci_ = perm[i];
            perm[i] = perm[j];
            perm[j] = ci_;
            iperm[perm[i]] = (int32_t)i;
            iperm[perm[j]] = j;
            (*nswap)++;
            if (in[j] == 1 && !(fabs(w[j]) > tau)) { /* the old pivot, a U entry now */
                w[j] = 0.0;
                in[j] = 0;
                wk->ucol[big] = wk->ucol[--nu];
            }
        }
        sla_int nl = nlc;
        if (nl > pl) select_largest(wk->lcol, nl, pl, w);
        if (nu > pu) select_largest(wk->ucol, nu, pu, w);
        for (sla_int t = pl; t < nl; t++) { /* past the limits: dropped */
            in[wk->lcol[t]] = 0;
            w[wk->lcol[t]] = 0.0;
        }
        for (sla_int t = pu; t < nu; t++) {
            in[wk->ucol[t]] = 0;
            w[wk->ucol[t]] = 0.0;
        }
        if (nl > pl) nl = pl;
        if (nu > pu) nu = pu;
        qsort(wk->lcol, (size_t)nl, sizeof *wk->lcol, cmp_col);

        double piv = w[i];
        if (par->shift && isfinite(piv) && shift_pivot(&piv, rnorm) && (*nshift)++ == 0)
            *first = i;
        /* write the row: L (positions), the diagonal, U (columns of A); clear w, in */
        for (sla_int t = 0; t < nl; t++) {
            int32_t j = wk->lcol[t];
            ci[q] = j;
            v[q++] = w[j];
            w[j] = 0.0;
            in[j] = 0;
        }
        f->dpos[i] = q;
        ci[q] = (int32_t)i;
        v[q++] = piv;
        w[i] = 0.0;
        in[i] = 0;
        for (sla_int t = 0; t < nu; t++) {
            int32_t j = wk->ucol[t];
            ci[q] = perm[j];
            v[q++] = w[j];
            w[j] = 0.0;
            in[j] = 0;
        }
        rp[i + 1] = q;
        if (piv == 0.0 || !isfinite(piv))
            return sla__error(ctx, SLA_ERR_SINGULAR, "ILUT: %s pivot %g at row %lld",
                              piv == 0.0 ? "zero" : "non-finite", piv, (long long)i);
        f->dinv[i] = 1.0 / piv;
    }
    /* U's columns of A to final positions (the diagonal and L already are
     * positions); the sweeps do not need a row's U entries in order */
    if (*nswap > 0)
        for (sla_int i = 0; i < n; i++)
            for (sla_int k = f->dpos[i] + 1; k < rp[i + 1]; k++) ci[k] = iperm[ci[k]];
    return SLA_OK;
}

/* z <- Q z, i.e. z[perm[p]] = z[p], one cycle at a time. */
static void permute_fwd(const fact *f, double *z)
{
    for (sla_int c = 0; c < f->nleaders; c++) {
        int32_t p0 = f->leaders[c], p = f->perm[p0];
        double carry = z[p0];
        for (;;) {
            double t = z[p];
            z[p] = carry;
            carry = t;
            if (p == p0) break;
            p = f->perm[p];
        }
    }
}

/* z <- Q^T z, i.e. z[p] = z[perm[p]]. */
static void permute_inv(const fact *f, double *z)
{
    for (sla_int c = 0; c < f->nleaders; c++) {
        int32_t p0 = f->leaders[c], p = p0;
        double t = z[p0];
        while (f->perm[p] != p0) {
            z[p] = z[f->perm[p]];
            p = f->perm[p];
        }
        z[p] = t;
    }
}

/* z = M^-1 r = Q U^-1 L^-1 r, or M^-T r = L^-T U^-T Q^T r. */
static sla_status ilut_apply(const sla__pc *pc, bool transpose, const double *r, double *z,
                             int nt)
{
    (void)nt;
    const fact *f = pc->fact;
    copy_in(f->n, r, z);
    if (transpose) {
        if (f->perm) permute_inv(f, z);
        sla__fact_upper_t_solve(f, 1.0, f->dinv, z); /* U^T y = Q^T r */
        sla__fact_lower_t_solve(f, 1.0, NULL, z);    /* L^T z = y, unit diagonal */
    } else {
        sla__fact_lower_solve(f, 1.0, NULL, z);    /* L y = r, unit diagonal */
        sla__fact_upper_solve(f, 1.0, f->dinv, z); /* U y' = y */
        if (f->perm) permute_fwd(f, z);  /* z = Q y' */
    }
    return SLA_OK;
}

/* f->perm (taken from the work arrays) and the leaders of its cycles;
 * `seen` is n zeros. False when out of memory. */
static bool ilut_keep_perm(const sla_allocator *a, fact *f, ilut_work *wk, unsigned char *seen)
{
    sla_int nl = 0;
    for (sla_int p = 0; p < f->n; p++) {
        if (seen[p] || wk->perm[p] == p) continue;
        nl++;
        for (int32_t q = (int32_t)p; !seen[q]; q = wk->perm[q]) seen[q] = 1;
    }
    f->leaders = sla__malloc(a, (size_t)(nl > 0 ? nl : 1), sizeof *f->leaders);
    if (!f->leaders) return false;
    memset(seen, 0, (size_t)f->n);
    for (sla_int p = 0; p < f->n; p++) {
        if (seen[p] || wk->perm[p] == p) continue;
        f->leaders[f->nleaders++] = (int32_t)p;
        for (int32_t q = (int32_t)p; !seen[q]; q = wk->perm[q]) seen[q] = 1;
    }
    f->perm = wk->perm;
    wk->perm = NULL;
    return true;
}

/* Move f's factor into arrays of its exact size when that saves at least
 * half (keeps the larger ones if the allocation fails). */
static void ilut_shrink(const sla_allocator *a, fact *f, sla_int cap)
{
    sla_int used = f->own_rowptr[f->n];
    if (used >= cap / 2) return;
    int32_t *c = sla__malloc(a, (size_t)(used > 0 ? used : 1), sizeof *c);
    double *v = sla__malloc(a, (size_t)(used > 0 ? used : 1), sizeof *v);
    if (!c || !v) {
        sla__free(a, c);
        sla__free(a, v);
        return;
    }
    memcpy(c, f->own_colind, (size_t)used * sizeof *c);
    memcpy(v, f->val, (size_t)used * sizeof *v);
    sla__free(a, f->own_colind);
    sla__free(a, f->val);
    f->own_colind = c;
    f->colind = c;
    f->val = v;
}


sla_status sla__ilut_setup(sla_ctx *ctx, const sla_matrix *A, sla_int ib, double droptol,
                           double fill, double pivot, sla__pc *pc)
{
    sla_status st = sla__fact_check_input(ctx, A, ib, pc, "ILUT");
    if (st != SLA_OK) return st;
    if (!(droptol >= 0.0) || !isfinite(droptol))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "ILUT: drop tolerance %g must be finite and >= 0",
                          droptol);
    if (!(fill >= 0.0) || !(fill <= 1e6))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "ILUT: fill %g must lie in [0, 1e6]", fill);
    if (!(pivot >= 0.0 && pivot <= 1.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "ILUT: pivot threshold %g must lie in [0, 1]",
                          pivot);
    ilut_par par = {droptol, fill == 0.0 ? 10.0 : fill, pivot, pc->shift};
    sla_int n = A->nrows, cap = 0;
    for (sla_int i = 0; i < n; i++) {
        sla_int pl, pu;
        ilut_limits(A, i, par.fill, &pl, &pu);
        cap += pl + pu + 1;
    }
    fact *f = NULL;
    st = sla__fact_alloc(ctx, &pc->alloc, n, cap > 0 ? cap : 1, "ILUT", &f);
    if (st != SLA_OK) return st;
    f->own_rowptr = sla__malloc(&pc->alloc, (size_t)n + 1, sizeof *f->own_rowptr);
    f->own_colind = sla__malloc(&pc->alloc, (size_t)(cap > 0 ? cap : 1), sizeof *f->own_colind);
    ilut_work wk = {0};
    size_t n1 = (size_t)n + 1;
    wk.w = sla__calloc(&pc->alloc, n1, sizeof *wk.w);
    wk.in = sla__calloc(&pc->alloc, n1, sizeof *wk.in);
    wk.heap = sla__malloc(&pc->alloc, n1, sizeof *wk.heap);
    wk.lcol = sla__malloc(&pc->alloc, n1, sizeof *wk.lcol);
    wk.ucol = sla__malloc(&pc->alloc, n1, sizeof *wk.ucol);
    wk.perm = sla__malloc(&pc->alloc, n1, sizeof *wk.perm);
    wk.iperm = sla__malloc(&pc->alloc, n1, sizeof *wk.iperm);
    if (!f->own_rowptr || !f->own_colind || !wk.w || !wk.in || !wk.heap || !wk.lcol ||
        !wk.ucol || !wk.perm || !wk.iperm)
        st = sla__error(ctx, SLA_ERR_NOMEM,
                        "out of memory for the ILUT preconditioner (n %lld, room for %lld "
                        "entries)", (long long)n, (long long)cap);
    sla_int nshift = 0, first = -1, nswap = 0;
    if (st == SLA_OK) {
        f->rowptr = f->own_rowptr;
        f->colind = f->own_colind;
        st = ilut_factor(ctx, A, ib, &par, f, &wk, &nshift, &first, &nswap);
    }
    if (st == SLA_OK && nswap > 0 && !ilut_keep_perm(&pc->alloc, f, &wk, wk.in))
        st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the ILUT column permutation");
    sla__free(&pc->alloc, wk.w);
    sla__free(&pc->alloc, wk.in);
    sla__free(&pc->alloc, wk.heap);
    sla__free(&pc->alloc, wk.lcol);
    sla__free(&pc->alloc, wk.ucol);
    sla__free(&pc->alloc, wk.perm);
    sla__free(&pc->alloc, wk.iperm);
    if (st != SLA_OK) {
        sla__fact_free(&pc->alloc, f);
        return st;
    }
    ilut_shrink(&pc->alloc, f, cap);
    sla__fact_note_shifts(pc, "ILUT", nshift, first, 0);
    sla__fact_install(pc, f, ilut_apply);
    return SLA_OK;
}
