/* Distributed saamg: the prolongator smoothed across ranks and the
 * Galerkin product with rows completed on their owners (dist_saamg.c's
 * header gives the method; dist_saamg_fetch.c what the set-up fetches from
 * other ranks). */
#include "dist_saamg.h"

/* A growing list of (column, value) entries. Its users reserve what they
 * expect up front: each growth copies the list into fresh pages (on 2-D
 * Poisson 4e6 over 2 ranks the copies and their page faults were 5 % of a
 * set-up + solve). */
typedef struct ent_buf {
    sla_int len, cap;
    sla_int *col;
    double *val;
} ent_buf;

static bool ent_reserve(const sla_allocator *a, ent_buf *e, sla_int extra)
{
    if (e->len + extra <= e->cap) return true;
    sla_int cap = 2 * e->cap > e->len + extra ? 2 * e->cap : e->len + extra + 64;
    sla_int *c = sla__malloc(a, (size_t)cap, sizeof *c);
    double *v = sla__malloc(a, (size_t)cap, sizeof *v);
    if (!c || !v) {
        sla__free(a, c);
        sla__free(a, v);
        return false;
    }
    if (e->len) {
        memcpy(c, e->col, (size_t)e->len * sizeof *c);
        memcpy(v, e->val, (size_t)e->len * sizeof *v);
    }
    sla__free(a, e->col);
    sla__free(a, e->val);
    e->col = c;
    e->val = v;
    e->cap = cap;
    return true;
}

/* Sort m (column, value) pairs by column and sum duplicates; returns the
 * number left. Rows are short: insertion sort. */
static sla_int sort_sum(sla_int *c, double *v, sla_int m)
{
    for (sla_int t = 1; t < m; t++) {
        sla_int cc = c[t];
        double vv = v[t];
        sla_int s = t - 1;
        while (s >= 0 && c[s] > cc) {
            c[s + 1] = c[s];
            v[s + 1] = v[s];
            s--;
        }
        c[s + 1] = cc;
        v[s + 1] = vv;
    }
    sla_int k = 0;
    for (sla_int t = 0; t < m; t++) {
        if (k > 0 && c[k - 1] == c[t]) v[k - 1] += v[t];
        else c[k] = c[t], v[k] = v[t], k++;
    }
    return k;
}

/* m distinct (column, value) pairs from c, v written sorted by column to
 * oc, ov (not overlapping them): short rows (2-D coarse rows have about
 * 9 entries) by rank, counted without branches, instead of an insertion
 * sort's unpredictable comparisons; long ones by that sort. */
static void place_sorted(const sla_int *c, const double *v, sla_int m, sla_int *oc, double *ov)
{
    if (m > 32) {
        memcpy(oc, c, (size_t)m * sizeof *oc);
        memcpy(ov, v, (size_t)m * sizeof *ov);
        sort_sum(oc, ov, m); /* (distinct: nothing to sum) */
        return;
    }
    for (sla_int k = 0; k < m; k++) {
        sla_int ck = c[k], r = 0;
        for (sla_int t = 0; t < m; t++) r += c[t] < ck;
        oc[r] = ck;
        ov[r] = v[k];
    }
}

/* The smoothed prolongator of level l from this rank's aggregates agg
 * (nagg of them, global numbers from cstart; -1 or less: none) with the
 * whole rows of A, ghost columns included (their aggregates and diagonals
 * fetched from their owners): P = (I - omega D_F^-1 A_F) P0 as in the
 * serial set-up (saamg_aggregate.c: strength theta_l, weak couplings lumped
 * onto the diagonal, omega = 4 / (3 rho) with rho the largest Gershgorin
 * bound over all ranks). A row of P may reach other ranks' aggregates:
 * its columns are local (< nc) or nc + the index in d->pcg (the other
 * ranks' coarse rows it reaches, increasing), and d->Pc carries the halo
 * plan of those. Collective; the status is agreed. */
sla_status sla__dsa_smooth_p(sla_ctx *ctx, dsaamg *H, int l, const int32_t *agg, sla_int cstart)
{
    dsa_level *d = &H->dl[l];
    sla_dist_matrix *A = d->A;
    const sla_allocator *a = &H->alloc; /* the preconditioner's: it frees them */
    const sa_level *L = &H->g.lev[l];
    const sla_matrix *Dg = A->diag, *O = A->offd;
    const double *dv = Dg->values, *ov = O->values;
    sla_int n = A->nlocal, ng = A->nghost, nc = d->nc;
    double th = SAAMG_THETA * ldexp(1.0, -l), th2 = th * th;
    double *own = sla__malloc(a, (size_t)n, sizeof *own);          /* a_ii */
    double *gd = sla__malloc(a, (size_t)(ng > 0 ? ng : 1), sizeof *gd); /* ghosts' a_jj */
    double *ga = sla__malloc(a, (size_t)(ng > 0 ? ng : 1), sizeof *ga); /* ghosts' global aggregate */
    double *df = sla__malloc(a, (size_t)n, sizeof *df); /* agg as double, then the filtered a_ii */
    sla_int *rp = sla__malloc(a, (size_t)n + 1, sizeof *rp);
    sla_int *rowc = NULL, *pg = NULL, *crp = NULL, *cci = NULL;
    double *rowv = NULL;
    ent_buf e = {0, 0, NULL, NULL};
    sla_status st = SLA_OK;
    int maxlen = 1;
    for (sla_int i = 0; i < n; i++) {
        int m = (int)(Dg->rowptr[i + 1] - Dg->rowptr[i] + O->rowptr[i + 1] - O->rowptr[i]) + 1;
        if (m > maxlen) maxlen = m;
    }
    rowc = sla__malloc(a, (size_t)maxlen, sizeof *rowc);
    rowv = sla__malloc(a, (size_t)maxlen, sizeof *rowv);
    if (!own || !gd || !ga || !df || !rp || !rowc || !rowv) st = nomem(ctx, A, l);
    if ((st = sla__dist_agree(ctx, A->comm, st))) goto out;
    for (sla_int i = 0; i < n; i++) own[i] = 1.0 / L->dinv[i];
    int rc = sla__dsa_halo_quiet(A, own, gd);
    for (sla_int i = 0; i < n && !rc; i++) df[i] = agg[i] >= 0 ? (double)(cstart + agg[i]) : -1.0;
    if (!rc) rc = sla__dsa_halo_quiet(A, df, ga);
    if (rc) {
        st = sla__mpi_error(ctx, rc, "distributed saamg: exchanging the aggregates");
        goto out;
    }
    /* filtered diagonals and rho (the strength test multiplies the two
     * diagonals, as the serial one: a division per entry was a third of
     * this function) */
    double rho = 0.0;
    for (sla_int i = 0; i < n; i++) {
        double di = own[i], f = di, s = 0.0;
        for (sla_int k = Dg->rowptr[i]; k < Dg->rowptr[i + 1]; k++) {
            sla_int j = Dg->colind[k];
            if (j == i) continue;
            if (dv[k] * dv[k] >= th2 * fabs(di * own[j])) s += fabs(dv[k]);
            else f += dv[k];
        }
        for (sla_int k = O->rowptr[i]; k < O->rowptr[i + 1]; k++) {
            if (ov[k] * ov[k] >= th2 * fabs(di * gd[O->colind[k]])) s += fabs(ov[k]);
            else f += ov[k];
        }
        if (f == 0.0) f = di;
        df[i] = f;
        double q = (fabs(f) + s) / fabs(f);
        if (q > rho) rho = q;
    }
    double rho_all = 0.0;
    rc = MPI_Allreduce(&rho, &rho_all, 1, MPI_DOUBLE, MPI_MAX, A->comm);
    if (rc) {
        st = sla__mpi_error(ctx, rc, "distributed saamg: the smoothing weight");
        goto out;
    }
    double omega = 4.0 / (3.0 * rho_all);
    /* the rows of P with global columns (about 2.5 per row on 2-D problems) */
    if (!st && !ent_reserve(a, &e, 3 * n + 64)) st = nomem(ctx, A, l);
    rp[0] = 0;
    for (sla_int i = 0; i < n && !st; i++) {
        double di = own[i], w = omega / df[i];
        sla_int m = 0;
        if (agg[i] >= 0) rowc[m] = cstart + agg[i], rowv[m++] = 1.0 - omega;
        for (sla_int k = Dg->rowptr[i]; k < Dg->rowptr[i + 1]; k++) {
            sla_int j = Dg->colind[k];
            if (j == i || agg[j] < 0 || !(dv[k] * dv[k] >= th2 * fabs(di * own[j]))) continue;
            rowc[m] = cstart + agg[j], rowv[m++] = -w * dv[k];
        }
        for (sla_int k = O->rowptr[i]; k < O->rowptr[i + 1]; k++) {
            sla_int g = O->colind[k];
            if (ga[g] < 0.0 || !(ov[k] * ov[k] >= th2 * fabs(di * gd[g]))) continue;
            rowc[m] = (sla_int)ga[g], rowv[m++] = -w * ov[k];
        }
        m = sort_sum(rowc, rowv, m);
        if (!ent_reserve(a, &e, m)) {
            st = nomem(ctx, A, l);
            break;
        }
        memcpy(e.col + e.len, rowc, (size_t)m * sizeof *rowc);
        memcpy(e.val + e.len, rowv, (size_t)m * sizeof *rowv);
        e.len += m;
        rp[i + 1] = e.len;
    }
    if (!st && e.len > INT32_MAX)
        st = sla__error(ctx, SLA_ERR_TOO_LARGE, "distributed saamg: rank %d: P has more than 2^31 - 1 entries",
                        A->rank);
    /* the other ranks' coarse rows reached, and P's compact columns */
    sla_int np = 0;
    if (!st) {
        pg = sla__malloc(a, (size_t)(e.len > 0 ? e.len : 1), sizeof *pg);
        d->pci = sla__malloc(a, (size_t)(e.len > 0 ? e.len : 1), sizeof *d->pci);
        d->pval = sla__malloc(a, (size_t)(e.len > 0 ? e.len : 1), sizeof *d->pval);
        if (!pg || !d->pci || !d->pval) st = nomem(ctx, A, l);
    }
    if (!st) {
        for (sla_int p = 0; p < e.len; p++)
            if (e.col[p] < cstart || e.col[p] >= cstart + nc) pg[np++] = e.col[p];
        qsort(pg, (size_t)np, sizeof *pg, cmp_i64);
        sla_int u = 0;
        for (sla_int t = 0; t < np; t++)
            if (u == 0 || pg[t] != pg[u - 1]) pg[u++] = pg[t];
        np = u;
        for (sla_int p = 0; p < e.len; p++) {
            sla_int c = e.col[p];
            d->pci[p] = (int32_t)(c >= cstart && c < cstart + nc ? c - cstart : nc + find_i64(pg, np, c));
        }
        d->prp = rp;
        rp = NULL;
        for (sla_int p = 0; p < e.len; p++) d->pval[p] = (sa_real)e.val[p];
        d->pglob = e.col; /* kept for the Galerkin product, freed after it */
        e.col = NULL;
        /* the coarse-space halo plan of P's ghost columns: a pattern whose
         * first row holds them (and the diagonal), the others the diagonal */
        crp = sla__malloc(a, (size_t)nc + 1, sizeof *crp);
        cci = sla__malloc(a, (size_t)(np + nc), sizeof *cci);
        if (!crp || !cci) st = nomem(ctx, A, l);
    }
    if (!st) {
        sla_int k = 0, t = 0;
        crp[0] = 0;
        for (; t < np && pg[t] < cstart; t++) cci[k++] = pg[t];
        cci[k++] = cstart;
        for (; t < np; t++) cci[k++] = pg[t];
        crp[1] = k;
        for (sla_int I = 1; I < nc; I++) {
            cci[k++] = cstart + I;
            crp[I + 1] = k;
        }
    }
    if ((st = sla__dist_agree(ctx, A->comm, st))) goto out;
    if ((st = sla__dist_new(ctx, A->comm, &d->Pc))) goto out;
    st = sla__dist_build_owned(ctx, d->Pc, nc, a, &crp, &cci, NULL);
out:
    sla__free(a, own);
    sla__free(a, gd);
    sla__free(a, ga);
    sla__free(a, df);
    sla__free(a, rp);
    sla__free(a, rowc);
    sla__free(a, rowv);
    sla__free(a, pg);
    sla__free(a, crp);
    sla__free(a, cci);
    sla__free(a, e.col);
    sla__free(a, e.val);
    return st;
}

/* The Galerkin product's operands on one rank: A's diagonal and
 * off-diagonal blocks, P's own rows (compact coarse columns lci) and the
 * ghost fine rows' (gprp, gci, gval, fetched from their owners), P^T over
 * the own fine rows (trp, tci, tv). */
typedef struct rap_in {
    const sla_matrix *Dg, *O;
    const sla_int *prp, *gprp, *trp;
    const int32_t *lci, *gci, *tci;
    const sa_real *pval;
    const double *gval, *tv;
} rap_in;

/* The rows of A P that one block of coarse rows reaches, each formed once
 * per block: fine row i's in c, v[st[s] .. st[s + 1]) with s = slot[i]
 * (-1: not formed in this block). */
typedef struct ap_buf {
    int32_t *slot, *row, *c;
    sla_int *st;
    double *v;
    sla_int cap_e;
} ap_buf;

/* Coarse rows per block: their rows of A P (~13000 fine rows' on 2-D
 * Poisson, ~0.7 MB) stay in cache for the product over P^T. */
#define RAP_BLOCK 4096

static bool ap_grow(const sla_allocator *a, ap_buf *b, sla_int ne, sla_int need)
{
    sla_int cap = 2 * b->cap_e > need ? 2 * b->cap_e : need;
    int32_t *c = sla__malloc(a, (size_t)cap, sizeof *c);
    double *v = sla__malloc(a, (size_t)cap, sizeof *v);
    if (!c || !v) {
        sla__free(a, c);
        sla__free(a, v);
        return false;
    }
    if (ne > 0) { /* (the first call has no entries and no arrays) */
        memcpy(c, b->c, (size_t)ne * sizeof *c);
        memcpy(v, b->v, (size_t)ne * sizeof *v);
    }
    sla__free(a, b->c);
    sla__free(a, b->v);
    b->c = c;
    b->v = v;
    b->cap_e = cap;
    return true;
}

/* Row i of A P (own fine row i) gathered into rc (m columns, returned)
 * and accumulated in acc, marked 0 in mk (-1 elsewhere): without branches
 * on the data (a new column is appended and counted, an old one written
 * past the end), as the serial set-up's rows of A P. */
static sla_int ap_row(const rap_in *in, sla_int i, int32_t *restrict mk, int32_t *restrict rc,
                      double *restrict acc)
{
    const sla_matrix *Dg = in->Dg, *O = in->O;
    const double *dv = Dg->values, *ov = O->values;
    const sla_int *restrict prp = in->prp, *restrict gprp = in->gprp;
    const int32_t *restrict lci = in->lci, *restrict gci = in->gci;
    const sa_real *restrict pval = in->pval;
    const double *restrict gval = in->gval;
    sla_int m = 0;
    /* row j of P (columns COLS, values VALS in [RP[j], RP[j + 1])) times av */
#define AP_ADD(RP, COLS, VALS)                                                                     \
    for (sla_int q = RP[j]; q < RP[j + 1]; q++) {                                                \
        int32_t J = COLS[q];                                                                     \
        sla_int nw = mk[J] < 0;                                                                  \
        rc[m] = J;                                                                               \
        mk[J] = 0;                                                                               \
        m += nw;                                                                                 \
        acc[J] += av * (double)VALS[q];                                                          \
    }
    for (sla_int k = Dg->rowptr[i]; k < Dg->rowptr[i + 1]; k++) {
        sla_int j = Dg->colind[k];
        double av = dv[k];
        AP_ADD(prp, lci, pval)
    }
    for (sla_int k = O->rowptr[i]; k < O->rowptr[i + 1]; k++) {
        sla_int j = O->colind[k]; /* a ghost fine row */
        double av = ov[k];
        AP_ADD(gprp, gci, gval)
    }
#undef AP_ADD
    return m;
}

/* Rows [0, ncx) of P^T A P (partial for I >= nc) appended to e (global
 * columns, sorted), orp[I + 1] their ends: block by block of coarse rows,
 * first the rows of A P the block reaches (each once: a row-wise triple
 * product forms row i of A P again for every coarse row that reaches i,
 * 2.3 times on 2-D Poisson), then row I as sum over P^T's row of P_iI
 * (A P)_i. mk: ncx marks at -1 (a row of A P marks with 0, coarse row I
 * with I, each set back to -1 after its row); rc: ncx + 1; acc: ncx zeros
 * (all left so). false: out of memory. */
static bool rap_rows(const sla_allocator *a, const rap_in *in, sla_int ncx, sla_int nc,
                     sla_int cstart, const sla_int *ext, int32_t *mk, int32_t *rc,
                     sla_int *rg, double *rv, double *acc, ap_buf *b, ent_buf *e, sla_int *orp)
{
    const sla_int *trp = in->trp;
    const int32_t *tci = in->tci;
    const double *tv = in->tv;
    for (sla_int I0 = 0; I0 < ncx; I0 += RAP_BLOCK) {
        sla_int I1 = ncx - I0 > RAP_BLOCK ? I0 + RAP_BLOCK : ncx, ns = 0, ne = 0;
        b->st[0] = 0;
        for (sla_int p = trp[I0]; p < trp[I1]; p++) {
            sla_int i = tci[p];
            if (b->slot[i] >= 0) continue;
            sla_int m = ap_row(in, i, mk, rc, acc);
            if (ne + m > b->cap_e && !ap_grow(a, b, ne, ne + m)) return false;
            for (sla_int t = 0; t < m; t++) {
                int32_t J = rc[t];
                b->c[ne + t] = J;
                b->v[ne + t] = acc[J];
                acc[J] = 0.0;
                mk[J] = -1;
            }
            b->slot[i] = (int32_t)ns;
            b->row[ns] = (int32_t)i;
            ne += m;
            b->st[++ns] = ne;
        }
        const int32_t *restrict bc = b->c, *restrict slot = b->slot;
        const double *restrict bv = b->v;
        const sla_int *restrict st = b->st;
        for (sla_int I = I0; I < I1; I++) {
            sla_int m = 0;
            for (sla_int p = trp[I]; p < trp[I + 1]; p++) {
                double pi = tv[p];
                sla_int s = slot[tci[p]];
                for (sla_int q = st[s]; q < st[s + 1]; q++) {
                    int32_t J = bc[q];
                    sla_int nw = mk[J] != (int32_t)I;
                    rc[m] = J;
                    mk[J] = (int32_t)I;
                    m += nw;
                    acc[J] += pi * bv[q];
                }
            }
            if (!ent_reserve(a, e, m)) return false;
            for (sla_int t = 0; t < m; t++) { /* distinct columns (mk) */
                int32_t J = rc[t];
                rg[t] = J < nc ? cstart + J : ext[J - nc];
                rv[t] = acc[J];
                acc[J] = 0.0;
                mk[J] = -1; /* (for the next block's rows of A P) */
            }
            place_sorted(rg, rv, m, e->col + e->len, e->val + e->len);
            e->len += m;
            orp[I + 1] = e->len;
        }
        for (sla_int s2 = 0; s2 < ns; s2++) b->slot[b->row[s2]] = -1;
    }
    return true;
}

/* Level l + 1 = P^T A P. Each rank forms, for every coarse row I that
 * its rows of P reach (its own and the other ranks' ones in d->pcg),
 * sum_i P_iI (A P)_i over its fine rows i (the rows of A P need P's rows
 * of the ghost fine rows: fetched from their owners along A's halo plan);
 * the partial rows of the other ranks' coarse rows go to their owners
 * along the reverse of P's coarse halo plan, which add them to their own.
 * The coarse rows, complete on their owners, become a distributed matrix
 * (its halo plan from their columns). Collective; the status is agreed. */
sla_status sla__dsa_build_coarse(sla_ctx *ctx, dsaamg *H, int l, sla_int cstart, bool refresh)
{
    dsa_level *d = &H->dl[l];
    sla_dist_matrix *A = d->A, *Pc = d->Pc;
    const sla_allocator *a = &H->alloc; /* the preconditioner's: it frees them */
    const sla_matrix *Dg = A->diag, *O = A->offd;
    const sla__halo *h = &Pc->halo;
    sla_int n = A->nlocal, nc = d->nc, np = Pc->nghost, ng = A->nghost;
    sla_int *gprp = NULL, *gcol = NULL, *ext = NULL, *trp = NULL, *orp = NULL, *len = NULL, *rlen = NULL;
    sla_int *soff = NULL, *roff = NULL, *scol = NULL, *rcol = NULL, *tmpc = NULL, *crp = NULL, *cci = NULL;
    sla_int *rg = NULL; /* a row's global columns before placing */
    double *rv = NULL;
    int32_t *gci = NULL, *lci = NULL, *tci = NULL, *mk = NULL, *rc = NULL;
    ap_buf apb = {NULL, NULL, NULL, NULL, NULL, 0};
    double *gval = NULL, *tv = NULL, *acc = NULL, *sval = NULL, *rval = NULL, *tmpv = NULL, *cv = NULL;
    MPI_Request *req = NULL;
    ent_buf e = {0, 0, NULL, NULL};
    sla_status st = SLA_OK;
    if (!d->pglob) { /* at refresh: P's global columns again */
        d->pglob = sla__malloc(a, (size_t)(d->prp[n] > 0 ? d->prp[n] : 1), sizeof *d->pglob);
        if (!d->pglob) st = nomem(ctx, A, l + 1);
        for (sla_int p = 0; !st && p < d->prp[n]; p++)
            d->pglob[p] = d->pci[p] < nc ? cstart + d->pci[p] : Pc->ghosts[d->pci[p] - nc];
        if ((st = sla__dist_agree(ctx, A->comm, st))) return st;
    }
    st = sla__dsa_fetch_ghost_p(ctx, a, A, d->prp, d->pglob, d->pval, &gprp, &gcol, &gval);
    if (st) return st;
    /* compact coarse columns: this rank's [0, nc), then ext (the others', increasing) */
    sla_int pnnz = d->prp[n], ntot = gprp[ng], next = 0;
    ext = sla__malloc(a, (size_t)(ntot + np + 1), sizeof *ext);
    gci = sla__malloc(a, (size_t)(ntot + 1), sizeof *gci);
    lci = sla__malloc(a, (size_t)(pnnz + 1), sizeof *lci);
    if (!ext || !gci || !lci) st = nomem(ctx, A, l + 1);
    if (!st) {
        for (sla_int t = 0; t < ntot; t++)
            if (gcol[t] < cstart || gcol[t] >= cstart + nc) ext[next++] = gcol[t];
        for (sla_int t = 0; t < np; t++) ext[next++] = Pc->ghosts[t];
        qsort(ext, (size_t)next, sizeof *ext, cmp_i64);
        sla_int u = 0;
        for (sla_int t = 0; t < next; t++)
            if (u == 0 || ext[t] != ext[u - 1]) ext[u++] = ext[t];
        next = u;
        if (nc + next > INT32_MAX) st = sla__error(ctx, SLA_ERR_TOO_LARGE, "distributed saamg: too many coarse columns");
    }
    sla_int ncx = nc + next;
    if (!st) {
        for (sla_int t = 0; t < ntot; t++)
            gci[t] = (int32_t)(gcol[t] >= cstart && gcol[t] < cstart + nc ? gcol[t] - cstart
                                                                         : nc + find_i64(ext, next, gcol[t]));
        for (sla_int p = 0; p < pnnz; p++) {
            sla_int c = d->pglob[p];
            lci[p] = (int32_t)(c >= cstart && c < cstart + nc ? c - cstart : nc + find_i64(ext, next, c));
        }
        trp = sla__calloc(a, (size_t)ncx + 1, sizeof *trp);
        tci = sla__malloc(a, (size_t)(pnnz + 1), sizeof *tci);
        tv = sla__malloc(a, (size_t)(pnnz + 1), sizeof *tv);
        mk = sla__malloc(a, (size_t)ncx, sizeof *mk);
        rc = sla__malloc(a, (size_t)ncx + 1, sizeof *rc);
        rg = sla__malloc(a, (size_t)ncx + 1, sizeof *rg);
        rv = sla__malloc(a, (size_t)ncx + 1, sizeof *rv);
        acc = sla__calloc(a, (size_t)ncx, sizeof *acc);
        orp = sla__calloc(a, (size_t)ncx + 1, sizeof *orp);
        if (!trp || !tci || !tv || !mk || !rc || !rg || !rv || !acc || !orp) st = nomem(ctx, A, l + 1);
    }
    if (!st) { /* P^T over the compact columns */
        for (sla_int p = 0; p < pnnz; p++) trp[lci[p] + 1]++;
        for (sla_int I = 0; I < ncx; I++) trp[I + 1] += trp[I];
        for (sla_int i = 0; i < n; i++)
            for (sla_int p = d->prp[i]; p < d->prp[i + 1]; p++) {
                sla_int q = trp[lci[p]]++;
                tci[q] = (int32_t)i;
                tv[q] = (double)d->pval[p];
            }
        for (sla_int I = ncx; I > 0; I--) trp[I] = trp[I - 1];
        trp[0] = 0;
        for (sla_int J = 0; J < ncx; J++) mk[J] = -1;
        /* 2-D coarse rows have about 9 entries, 3-D ones 27 and more */
        if (!ent_reserve(a, &e, 12 * ncx + 64)) st = nomem(ctx, A, l + 1);
        /* the block's rows of A P: slots at most its entries of P^T; their
         * entries start at one per slot and grow in the first block (2-D
         * Poisson: 4-6 per row; every set-up passes through ap_grow) */
        sla_int cap_s = 1;
        for (sla_int I0 = 0; I0 < ncx; I0 += RAP_BLOCK) {
            sla_int I1 = ncx - I0 > RAP_BLOCK ? I0 + RAP_BLOCK : ncx;
            if (trp[I1] - trp[I0] > cap_s) cap_s = trp[I1] - trp[I0];
        }
        apb.slot = sla__malloc(a, (size_t)(n > 0 ? n : 1), sizeof *apb.slot);
        apb.row = sla__malloc(a, (size_t)cap_s, sizeof *apb.row);
        apb.st = sla__malloc(a, (size_t)cap_s + 1, sizeof *apb.st);
        if (!st && (!apb.slot || !apb.row || !apb.st || !ap_grow(a, &apb, 0, cap_s + 64)))
            st = nomem(ctx, A, l + 1);
        if (!st) {
            for (sla_int i = 0; i < n; i++) apb.slot[i] = -1;
            rap_in in = {.Dg = Dg, .O = O, .prp = d->prp, .gprp = gprp, .trp = trp, .lci = lci,
                         .gci = gci, .tci = tci, .pval = d->pval, .gval = gval, .tv = tv};
            if (!rap_rows(a, &in, ncx, nc, cstart, ext, mk, rc, rg, rv, acc, &apb, &e, orp))
                st = nomem(ctx, A, l + 1);
        }
    }
    /* the partial rows of the other ranks' coarse rows to their owners:
     * P's coarse ghosts (Pc's, grouped by owner) in the reverse direction */
    int nr = h->nrecv, ns = h->nsend;
    sla_int nrecv_rows = h->send_off[ns];
    if (!st) {
        len = sla__malloc(a, (size_t)(np + 1), sizeof *len);
        rlen = sla__malloc(a, (size_t)(nrecv_rows + 1), sizeof *rlen);
        soff = sla__malloc(a, (size_t)(np + 1), sizeof *soff);
        roff = sla__malloc(a, (size_t)(nrecv_rows + 1), sizeof *roff);
        req = sla__malloc(a, (size_t)(2 * (nr + ns) + 1), sizeof *req);
        if (!len || !rlen || !soff || !roff || !req) st = nomem(ctx, A, l + 1);
    }
    if ((st = sla__dist_agree(ctx, A->comm, st))) goto out;
    soff[0] = 0;
    for (sla_int t = 0; t < np; t++) {
        sla_int I = nc + find_i64(ext, next, Pc->ghosts[t]);
        len[t] = orp[I + 1] - orp[I];
        soff[t + 1] = soff[t] + len[t];
    }
    int k = 0, mrc = MPI_SUCCESS;
    for (int q = 0; q < ns && !mrc; q++)
        mrc = MPI_Irecv(rlen + h->send_off[q], (int)(h->send_off[q + 1] - h->send_off[q]), MPI_INT64_T,
                        h->send_rank[q], TAG_LEN, A->comm, &req[k++]);
    for (int q = 0; q < nr && !mrc; q++)
        mrc = MPI_Isend(len + h->recv_off[q], (int)(h->recv_off[q + 1] - h->recv_off[q]), MPI_INT64_T,
                        h->recv_rank[q], TAG_LEN, A->comm, &req[k++]);
    if (!mrc) mrc = MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
    if (mrc) {
        st = sla__mpi_error(ctx, mrc, "distributed saamg: the Galerkin product");
        goto out;
    }
    roff[0] = 0;
    for (sla_int t = 0; t < nrecv_rows; t++) roff[t + 1] = roff[t] + rlen[t];
    scol = sla__malloc(a, (size_t)(soff[np] + 1), sizeof *scol);
    sval = sla__malloc(a, (size_t)(soff[np] + 1), sizeof *sval);
    rcol = sla__malloc(a, (size_t)(roff[nrecv_rows] + 1), sizeof *rcol);
    rval = sla__malloc(a, (size_t)(roff[nrecv_rows] + 1), sizeof *rval);
    if (!scol || !sval || !rcol || !rval) st = nomem(ctx, A, l + 1);
    if (!st && (soff[np] > INT_MAX || roff[nrecv_rows] > INT_MAX))
        st = sla__error(ctx, SLA_ERR_TOO_LARGE, "distributed saamg: rank %d exchanges more than 2^31 - 1 "
                                                "coarse entries", A->rank);
    if ((st = sla__dist_agree(ctx, A->comm, st))) goto out;
    for (sla_int t = 0; t < np; t++) {
        sla_int I = nc + find_i64(ext, next, Pc->ghosts[t]);
        memcpy(scol + soff[t], e.col + orp[I], (size_t)len[t] * sizeof *scol);
        memcpy(sval + soff[t], e.val + orp[I], (size_t)len[t] * sizeof *sval);
    }
    k = 0;
    for (int q = 0; q < ns && !mrc; q++) {
        sla_int b = roff[h->send_off[q]], m = roff[h->send_off[q + 1]] - b;
        mrc = MPI_Irecv(rcol + b, (int)m, MPI_INT64_T, h->send_rank[q], TAG_COL, A->comm, &req[k++]);
        if (!mrc) mrc = MPI_Irecv(rval + b, (int)m, MPI_DOUBLE, h->send_rank[q], TAG_VAL, A->comm, &req[k++]);
    }
    for (int q = 0; q < nr && !mrc; q++) {
        sla_int b = soff[h->recv_off[q]], m = soff[h->recv_off[q + 1]] - b;
        mrc = MPI_Isend(scol + b, (int)m, MPI_INT64_T, h->recv_rank[q], TAG_COL, A->comm, &req[k++]);
        if (!mrc) mrc = MPI_Isend(sval + b, (int)m, MPI_DOUBLE, h->recv_rank[q], TAG_VAL, A->comm, &req[k++]);
    }
    if (!mrc) mrc = MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
    if (mrc) {
        st = sla__mpi_error(ctx, mrc, "distributed saamg: the Galerkin product");
        goto out;
    }
    /* own rows plus the pieces received for them, in place in e (no copy of
     * the rows into fresh pages): the rows that received pieces are merged
     * first into a side list (their merged lengths place every row), then
     * the rows move to their places from the last one; a row moves only
     * towards the end, by what the rows before it grew, so runs of rows
     * without pieces move in one memmove each (none before the first row
     * that grew). e's part past its own rows (the other ranks' partial
     * rows, sent above) is overwritten. */
    {
        ent_buf sd = {0, 0, NULL, NULL};
        sla_int *pcnt = sla__calloc(a, (size_t)nc + 1, sizeof *pcnt); /* received entries per own row */
        sla_int *ppos = NULL, *sidx = NULL;
        sla_int maxrow = 1, nside = 0;
        if (!pcnt) st = nomem(ctx, A, l + 1);
        if (!st) {
            for (sla_int t = 0; t < nrecv_rows; t++) pcnt[Pc->halo.send_idx[t] + 1] += rlen[t];
            for (sla_int I = 0; I < nc; I++) {
                sla_int m = pcnt[I + 1] + orp[I + 1] - orp[I];
                if (pcnt[I + 1] > 0) nside += m;
                if (m > maxrow) maxrow = m;
                pcnt[I + 1] += pcnt[I];
            }
            if (!ent_reserve(a, &sd, nside + 1)) st = nomem(ctx, A, l + 1);
            ppos = sla__malloc(a, (size_t)(pcnt[nc] + 1), sizeof *ppos); /* offsets into rcol of each entry */
            sidx = sla__malloc(a, (size_t)nc + 1, sizeof *sidx);        /* a merged row's place in sd, or -1 */
            tmpc = sla__malloc(a, (size_t)maxrow, sizeof *tmpc);
            tmpv = sla__malloc(a, (size_t)maxrow, sizeof *tmpv);
            crp = sla__malloc(a, (size_t)nc + 1, sizeof *crp);
            if (!ppos || !sidx || !tmpc || !tmpv || !crp) st = nomem(ctx, A, l + 1);
        }
        if (!st) {
            sla_int *fill = sla__malloc(a, (size_t)nc + 1, sizeof *fill);
            if (!fill) st = nomem(ctx, A, l + 1);
            else {
                memcpy(fill, pcnt, ((size_t)nc + 1) * sizeof *fill);
                for (sla_int t = 0; t < nrecv_rows; t++) {
                    sla_int I = Pc->halo.send_idx[t];
                    for (sla_int q = roff[t]; q < roff[t + 1]; q++) ppos[fill[I]++] = q;
                }
                sla__free(a, fill);
            }
        }
        if (!st) { /* the merged rows into sd, every row's length into crp */
            crp[0] = 0;
            for (sla_int I = 0; I < nc; I++) {
                sidx[I] = -1;
                if (pcnt[I] == pcnt[I + 1]) { /* no pieces: sorted and summed already */
                    crp[I + 1] = crp[I] + orp[I + 1] - orp[I];
                    continue;
                }
                sla_int m = 0;
                for (sla_int q = orp[I]; q < orp[I + 1]; q++) tmpc[m] = e.col[q], tmpv[m++] = e.val[q];
                for (sla_int q = pcnt[I]; q < pcnt[I + 1]; q++) tmpc[m] = rcol[ppos[q]], tmpv[m++] = rval[ppos[q]];
                m = sort_sum(tmpc, tmpv, m); /* sd has room: reserved for all entries */
                memcpy(sd.col + sd.len, tmpc, (size_t)m * sizeof *tmpc);
                memcpy(sd.val + sd.len, tmpv, (size_t)m * sizeof *tmpv);
                sidx[I] = sd.len;
                sd.len += m;
                crp[I + 1] = crp[I] + m;
            }
            /* e holds orp[ncx] entries; the merged rows need crp[nc] (grown
             * rows hold their own columns and more, so crp[I] >= orp[I]) */
            if (crp[nc] > e.len && !ent_reserve(a, &e, crp[nc] - e.len)) st = nomem(ctx, A, l + 1);
        }
        for (sla_int I = nc; I > 0 && !st;) { /* rows [I0, I) in place, last first */
            sla_int I0 = I - 1;
            if (sidx[I0] >= 0) {
                sla_int m = crp[I] - crp[I0];
                memcpy(e.col + crp[I0], sd.col + sidx[I0], (size_t)m * sizeof *e.col);
                memcpy(e.val + crp[I0], sd.val + sidx[I0], (size_t)m * sizeof *e.val);
                I = I0;
                continue;
            }
            while (I0 > 0 && sidx[I0 - 1] < 0) I0--; /* a run without pieces: one shift */
            sla_int from = orp[I0], to = crp[I0], m = orp[I] - orp[I0];
            if (to != from && m > 0) {
                memmove(e.col + to, e.col + from, (size_t)m * sizeof *e.col);
                memmove(e.val + to, e.val + from, (size_t)m * sizeof *e.val);
            }
            I = I0;
        }
        sla__free(a, pcnt);
        sla__free(a, ppos);
        sla__free(a, sidx);
        sla__free(a, sd.col);
        sla__free(a, sd.val);
        cci = e.col; /* the merged rows (freed with cv at out, or D's) */
        cv = e.val;
        e.col = NULL;
        e.val = NULL;
    }
    if ((st = sla__dist_agree(ctx, A->comm, st))) goto out;
    if (refresh) { /* the same pattern (those of P and A are): the new values */
        sla_dist_matrix *Ac = H->dl[l + 1].A;
        bool same = Ac->nlocal == nc && Ac->nnz_local == crp[nc];
        for (sla_int I = 0; same && I <= nc; I++) same = Ac->rowptr[I] == crp[I];
        for (sla_int k2 = 0; same && k2 < crp[nc]; k2++) same = Ac->colind[k2] == cci[k2];
        int mine = same ? 0 : 1, any = 0; /* cannot happen: then the refresh rebuilds */
        int mrc2 = MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, A->comm);
        if (mrc2) st = sla__mpi_error(ctx, mrc2, "distributed saamg: refresh");
        else if (any) H->repattern = true;
        else st = sla_dist_matrix_set_values(ctx, Ac, cv);
        goto out;
    }
    sla_dist_matrix *Ac = NULL;
    if ((st = sla__dist_new(ctx, A->comm, &Ac))) goto out;
    st = sla__dist_build_owned(ctx, Ac, nc, a, &crp, &cci, cv);
    if (st) sla_dist_matrix_destroy(&Ac);
    H->dl[l + 1].A = Ac;
out:
    sla__free(a, gprp);
    sla__free(a, gcol);
    sla__free(a, gval);
    sla__free(a, ext);
    sla__free(a, gci);
    sla__free(a, lci);
    sla__free(a, trp);
    sla__free(a, tci);
    sla__free(a, tv);
    sla__free(a, mk);
    sla__free(a, apb.slot);
    sla__free(a, apb.row);
    sla__free(a, apb.st);
    sla__free(a, apb.c);
    sla__free(a, apb.v);
    sla__free(a, rc);
    sla__free(a, rg);
    sla__free(a, rv);
    sla__free(a, acc);
    sla__free(a, orp);
    sla__free(a, len);
    sla__free(a, rlen);
    sla__free(a, soff);
    sla__free(a, roff);
    sla__free(a, scol);
    sla__free(a, sval);
    sla__free(a, rcol);
    sla__free(a, rval);
    sla__free(a, tmpc);
    sla__free(a, tmpv);
    sla__free(a, crp);
    sla__free(a, cci);
    sla__free(a, cv);
    sla__free(a, req);
    sla__free(a, e.col);
    sla__free(a, e.val);
    sla__free(a, d->pglob);
    d->pglob = NULL;
    return st;
}
