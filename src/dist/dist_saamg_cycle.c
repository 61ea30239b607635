/* Distributed saamg: the V-cycle (hybrid Gauss-Seidel per rank, halo
 * exchanges per level; dist_saamg.c's header gives the method). */
#include "dist_saamg.h"

/* ---- the cycle ------------------------------------------------------------------ */

/* The sweeps take 1 / a_ii from the diagonal entry of the row they read
 * anyway (every level's diagonal block has it, its columns sorted:
 * sla__saamg_set_diag checked at the set-up), not from the stored
 * 1/a_ii: the same rounding (s * (1.0 / a_ii)), 8 bytes per row less to
 * read per sweep. 2-D Poisson 4e6, 2 ranks, 17 CG iterations (quiet,
 * 2 runs each): solve 1.646-1.664 -> 1.602-1.623 s, the same residual. */

/* Forward Gauss-Seidel from x = 0 on the diagonal block (ghosts zero). */
static void gs_fwd0(const sla_matrix *Dg, const double *b, double *x)
{
    const sla_int *rp = Dg->rowptr;
    const int32_t *ci = Dg->colind;
    const double *v = Dg->values;
    for (sla_int i = 0; i < Dg->nrows; i++) {
        double s = b[i];
        sla_int k = rp[i];
        for (; ci[k] < i; k++) s -= v[k] * x[ci[k]];
        x[i] = s * (1.0 / v[k]);
    }
}

/* Row i of A_dd x subtracted from s in column order; *d gets a_ii. */
static inline double row_sub(const sla_int *rp, const int32_t *ci, const double *v, const double *x,
                             sla_int i, double s, double *d)
{
    sla_int k = rp[i], e = rp[i + 1];
    for (; ci[k] < i; k++) s -= v[k] * x[ci[k]];
    *d = v[k];
    for (; k < e; k++) s -= v[k] * x[ci[k]];
    return s;
}

/* Backward hybrid Gauss-Seidel: x_i += (b_i - (A_dd x)_i - (A_do g)_i) / a_ii,
 * rows in decreasing order, the ghosts g frozen; A_do's rows read only
 * where they have entries (orows: increasing). */
static void gs_bwd(const sla_matrix *Dg, const sla_matrix *O, const int32_t *orows, sla_int orows_n,
                   const double *g, const double *b, double *x)
{
    const sla_int *rp = Dg->rowptr, *orp = O->rowptr;
    const int32_t *ci = Dg->colind, *oci = O->colind;
    const double *v = Dg->values, *ov = O->values;
    sla_int o = orows_n - 1;
    for (sla_int i = Dg->nrows - 1; i >= 0; i--) {
        double s = b[i], d;
        if (o >= 0 && orows[o] == i) { /* the ghost part */
            for (sla_int k = orp[i]; k < orp[i + 1]; k++) s -= ov[k] * g[oci[k]];
            o--;
        }
        s = row_sub(rp, ci, v, x, i, s, &d);
        x[i] += s * (1.0 / d);
    }
}

/* x += P xc: P's columns on other ranks read from one halo exchange of
 * the coarse vector (returns an MPI error code). */
int sla__dsa_prolong(dsa_level *d, const double *xc, double *x)
{
    sla_dist_matrix *Pc = d->Pc;
    int rc = sla__halo_forward_begin(Pc, xc, Pc->ghostbuf);
    int rc2 = sla__halo_end(Pc);
    const double *g = Pc->ghostbuf;
    sla_int nc = d->nc;
    for (sla_int i = 0; i < d->A->nlocal; i++) {
        double s = 0.0;
        for (sla_int k = d->prp[i]; k < d->prp[i + 1]; k++) {
            int32_t c = d->pci[k];
            s += (double)d->pval[k] * (c < nc ? xc[c] : g[c - nc]);
        }
        x[i] += s;
    }
    return rc ? rc : rc2;
}

/* bc = P^T r: the parts owed to other ranks' coarse rows travel back to
 * them (the reverse halo exchange) and are added there. */
int sla__dsa_restrict(dsa_level *d, const double *r, double *bc)
{
    sla_dist_matrix *Pc = d->Pc;
    double *g = Pc->ghostbuf;
    sla_int nc = d->nc;
    memset(bc, 0, (size_t)nc * sizeof *bc);
    if (Pc->nghost) memset(g, 0, (size_t)Pc->nghost * sizeof *g);
    for (sla_int i = 0; i < d->A->nlocal; i++) {
        double ri = r[i];
        for (sla_int k = d->prp[i]; k < d->prp[i + 1]; k++) {
            int32_t c = d->pci[k];
            if (c < nc) bc[c] += (double)d->pval[k] * ri;
            else g[c - nc] += (double)d->pval[k] * ri;
        }
    }
    int rc = sla__halo_reverse_begin(Pc, g);
    int rc2 = sla__halo_end(Pc);
    sla__halo_reverse_add(Pc, bc);
    return rc ? rc : rc2;
}

/* Pre-smoothing from x = 0 (forward, ghosts zero), then b_c = P^T (b -
 * A x) after one halo exchange of x: row i's entries up to the diagonal
 * give b_i - sum_{j <= i} a_ij x_j = 0 (up to rounding: that is how the
 * sweep set x_i), so r_i is minus the sum over the upper part and the
 * ghost columns; r is not stored, its P^T contributions are summed
 * straight away (the other ranks' coarse rows' ones travel back with P's
 * reverse exchange). Against a separate SpMV, residual vector and
 * restriction: the process CPU of CG + saamg on 2-D Poisson 1e6, 1 rank,
 * 16 iterations: 0.70-0.75 s -> 0.62-0.69 s (interleaved runs, 3 each,
 * under other load). one (level 0): the residual of a row without ghost
 * columns is taken right behind the sweep, once it has passed the row's
 * last column (A read once instead of twice, as the serial cycle does on
 * a stencil's level), the rows with ghost columns after the exchange; the
 * same residuals, summed into b_c in another order. */
static int presmooth_restrict(dsa_level *d, const double *b, double *x, double *bc, bool one)
{
    sla_dist_matrix *A = d->A, *Pc = d->Pc;
    const sla_matrix *Dg = A->diag, *O = A->offd;
    const sla_int *rp = Dg->rowptr, *orp = O->rowptr;
    const int32_t *ci = Dg->colind, *oci = O->colind;
    const double *v = Dg->values, *ov = O->values;
    const double *gx = A->ghostbuf;
    double *g = Pc->ghostbuf;
    sla_int nc = d->nc, n = A->nlocal;
    memset(bc, 0, (size_t)nc * sizeof *bc);
    if (Pc->nghost) memset(g, 0, (size_t)Pc->nghost * sizeof *g);
    const int32_t *orows = A->orows;
    sla_int no = A->norows;
    /* r_i summed into bc: the upper part of row i, then (ghost) its off-block part */
#define RROW(i, ghost)                                                                     \
    do {                                                                                   \
        double s_ = 0.0;                                                                   \
        for (sla_int k_ = rp[(i) + 1] - 1; k_ >= rp[i] && ci[k_] > (i); k_--)             \
            s_ -= v[k_] * x[ci[k_]];                                                       \
        if (ghost)                                                                         \
            for (sla_int k_ = orp[i]; k_ < orp[(i) + 1]; k_++) s_ -= ov[k_] * gx[oci[k_]]; \
        for (sla_int k_ = d->prp[i]; k_ < d->prp[(i) + 1]; k_++) {                         \
            int32_t c_ = d->pci[k_];                                                       \
            if (c_ < nc) bc[c_] += (double)d->pval[k_] * s_;                               \
            else g[c_ - nc] += (double)d->pval[k_] * s_;                                   \
        }                                                                                  \
    } while (0)
    if (one) { /* o: the next row with ghost columns (they wait for the exchange) */
        sla_int q = 0, o = 0;
        for (sla_int i = 0; i < n; i++) {
            double s = b[i];
            sla_int k = rp[i];
            for (; ci[k] < i; k++) s -= v[k] * x[ci[k]];
            x[i] = s * (1.0 / v[k]);
            for (; q <= i; q++) {
                if (o < no && orows[o] == q) { /* reads ghosts: after the exchange */
                    o++;
                    continue;
                }
                if (ci[rp[q + 1] - 1] > i) break;
                RROW(q, false);
            }
        }
        for (; q < n; q++) {
            if (o < no && orows[o] == q) {
                o++;
                continue;
            }
            RROW(q, false);
        }
    } else {
        gs_fwd0(Dg, b, x);
    }
    int rc = sla__halo_forward_begin(A, x, A->ghostbuf);
    int rc2 = sla__halo_end(A);
    if (one)
        for (sla_int t = 0; t < no; t++) RROW(orows[t], true);
    else
        for (sla_int i = 0, o = 0; i < n; i++) {
            bool gh = o < no && orows[o] == i;
            o += gh;
            RROW(i, gh);
        }
#undef RROW
    int rc3 = sla__halo_reverse_begin(Pc, g);
    int rc4 = sla__halo_end(Pc);
    sla__halo_reverse_add(Pc, bc);
    return rc ? rc : rc2 ? rc2 : rc3 ? rc3 : rc4;
}

static void note_rc(dsaamg *H, int rc)
{
    if (rc && !H->rc) H->rc = rc;
}

/* The backward sweep after one halo exchange of x. */
static void post_smooth(dsaamg *H, int l, const double *b, double *x)
{
    sla_dist_matrix *A = H->dl[l].A;
    int rc = sla__halo_forward_begin(A, x, A->ghostbuf);
    int rc2 = sla__halo_end(A);
    note_rc(H, rc ? rc : rc2);
    gs_bwd(A->diag, A->offd, A->orows, A->norows, A->ghostbuf, b, x);
}

/* The coarsest level: every rank's b gathered, the dense solve
 * everywhere, each keeping its rows; or one symmetric hybrid sweep. */
static void coarse_solve(dsaamg *H, int l, const double *b, double *x)
{
    sla_dist_matrix *A = H->dl[l].A;
    if (!H->g.dense) {
        gs_fwd0(A->diag, b, x);
        post_smooth(H, l, b, x);
        return;
    }
    int rc = MPI_Allgatherv(b, (int)A->nlocal, MPI_DOUBLE, H->bg, H->counts, H->displs, MPI_DOUBLE, A->comm);
    note_rc(H, rc);
    H->gathers++;
    H->gather_bytes += (int64_t)A->nlocal * (int64_t)sizeof(double);
    sla_int n = A->n;
    double *y = H->xg;
    memcpy(y, H->bg, (size_t)n * sizeof *y);
    sla__saamg_dense_solve(H->g.dense, H->g.piv, n, y);
    memcpy(x, y + A->row_start, (size_t)A->nlocal * sizeof *x);
}

/* The coarse correction and the post-smoothing in one pass: x += P x_c
 * for the rows other ranks read first, one halo exchange of x, then the
 * backward sweep with the prolongation of the other rows just ahead of the
 * rows that read them (row i reads x from its first column on). Each x_r
 * gets its correction before any read or write of it by the sweep, so the
 * result is the one of prolongation then sweep; x is read and written once
 * instead of twice. CG + saamg on 2-D Poisson 1e6, 1 rank: solve CPU
 * 0.63-0.66 s -> 0.59-0.63 s (4 interleaved runs each, under load). */
static int prolong_post_smooth(dsaamg *H, int l, const double *b, const double *xc, double *x)
{
    dsa_level *d = &H->dl[l];
    sla_dist_matrix *A = d->A, *Pc = d->Pc;
    int rc = sla__halo_forward_begin(Pc, xc, Pc->ghostbuf);
    int rc2 = sla__halo_end(Pc);
    const double *gc = Pc->ghostbuf;
    const sla_int *prp = d->prp;
    const int32_t *pci = d->pci;
    const sa_real *pv = d->pval;
    sla_int nc = d->nc;
#define PROW(r)                                                                            \
    do {                                                                                   \
        double s_ = 0.0;                                                                   \
        for (sla_int k_ = prp[r]; k_ < prp[(r) + 1]; k_++) {                               \
            int32_t c_ = pci[k_];                                                          \
            s_ += (double)pv[k_] * (c_ < nc ? xc[c_] : gc[c_ - nc]);                       \
        }                                                                                  \
        x[r] += s_;                                                                        \
    } while (0)
    for (sla_int t = 0; t < d->nb; t++) PROW(d->brows[t]);
    int rc3 = sla__halo_forward_begin(A, x, A->ghostbuf);
    int rc4 = sla__halo_end(A);
    const sla_matrix *Dg = A->diag, *O = A->offd;
    const sla_int *rp = Dg->rowptr, *orp = O->rowptr;
    const int32_t *ci = Dg->colind, *oci = O->colind;
    const double *v = Dg->values, *ov = O->values, *g = A->ghostbuf;
    sla_int p = A->nlocal, t = d->nb - 1, o = A->norows - 1;
    for (sla_int i = A->nlocal - 1; i >= 0; i--) {
        sla_int first = rp[i] < rp[i + 1] && ci[rp[i]] < i ? ci[rp[i]] : i;
        for (; p > first; p--) {
            sla_int r = p - 1;
            if (t >= 0 && d->brows[t] == r) { /* corrected before the exchange */
                t--;
                continue;
            }
            PROW(r);
        }
        double s = b[i], dg;
        if (o >= 0 && A->orows[o] == i) { /* the ghost part */
            for (sla_int k = orp[i]; k < orp[i + 1]; k++) s -= ov[k] * g[oci[k]];
            o--;
        }
        s = row_sub(rp, ci, v, x, i, s, &dg);
        x[i] += s * (1.0 / dg);
    }
#undef PROW
    return rc ? rc : rc2 ? rc2 : rc3 ? rc3 : rc4;
}

/* x = M^-1 b on level l. */
static void cycle(dsaamg *H, int l, const double *b, double *x, int nt)
{
    if (l == H->nlev - 1) {
        coarse_solve(H, l, b, x);
        return;
    }
    dsa_level *d = &H->dl[l], *c = &H->dl[l + 1];
    (void)nt;
    note_rc(H, presmooth_restrict(d, b, x, c->b, l == 0)); /* x = M^-1 b, b_c = P^T (b - A x) */
    cycle(H, l + 1, c->b, c->x, nt);
    note_rc(H, prolong_post_smooth(H, l, b, c->x, x)); /* x += P x_c, then backward Gauss-Seidel */
}

sla_status sla__dsa_apply(const sla__pc *pc, bool transpose, const double *r, double *z, int nt)
{
    (void)transpose; /* symmetric cycle: M^-T = M^-1 */
    dsaamg *H = pc->fact;
    double *rc = NULL;
    if (r == z) {
        rc = sla__malloc(&pc->alloc, (size_t)(pc->n > 0 ? pc->n : 1), sizeof *rc);
        if (!rc) return SLA_ERR_NOMEM;
        memcpy(rc, r, (size_t)pc->n * sizeof *rc);
        r = rc;
    }
    cycle(H, 0, r, z, nt);
    sla__free(&pc->alloc, rc);
    return H->rc ? SLA_ERR_COMM : SLA_OK;
}
