/* Smoothed-aggregation AMG over MPI (the distributed solver's
 * precond=saamg): one hierarchy across the ranks of the distributed
 * matrix, built by the library itself (no copy of the matrix in hypre's
 * format, as precond=amg makes). The serial precond=saamg
 * (src/solvers/precond_saamg.c) gives the method; here is what changes
 * when the rows are spread over ranks.
 *
 * Levels: every level is an sla_dist_matrix (the fine one is the solver's
 * own, borrowed): each rank's rows split into the diagonal block (own
 * columns, local numbering) and the off-diagonal block (ghost columns)
 * with its halo plan, the same machinery as the fine level's SpMV.
 *
 * Aggregates within each rank, prolongator across: the serial
 * aggregation (sla__saamg_build_p: strength, three phases) runs on the
 * rank's diagonal block, so aggregates never cross ranks; P = (I - omega
 * D_F^-1 A_F) P0 is then smoothed with the whole rows of A (smooth_p: the
 * ghost rows' aggregates and diagonals come from one halo exchange each;
 * strength, lumping of weak couplings and omega as in the serial set-up,
 * rho the largest Gershgorin bound over all ranks), so a row of P next to
 * a rank boundary reaches the neighbour's aggregates. The first version
 * smoothed P with the diagonal block only (block-diagonal P, no messages
 * in restriction and prolongation): its basis functions were cut at the
 * rank boundaries, unsmoothed there, and the cycle degraded with every
 * level: CG on 2-D Poisson 256^2 took 25 iterations on 2 ranks (27
 * without lumping the cut couplings onto the diagonal) against 13 on one;
 * with P smoothed across the ranks it takes 14. The price: P's columns on
 * other ranks get a coarse-space halo plan of their own (Pc: a square
 * pattern whose off-block columns are exactly them, built by
 * sla__dist_build), one forward exchange per prolongation and one reverse
 * exchange (contributions added on the owner) per restriction; both are
 * as small as the coarse level's boundary. P's values are stored in
 * float32 (formed in double), as the serial ones: CG + saamg on 2-D
 * Poisson 1e6 on 1 rank, solve CPU 0.67-0.69 s with float64 P, 0.64-0.66 s
 * with float32 (4 interleaved runs each), the same 16 iterations.
 *
 * Galerkin product, rows complete on their owner (build_coarse): each
 * rank forms sum_i P_iI (A P)_i over its own fine rows i for every coarse
 * row I its rows of P reach (A P needs P's rows of the ghost fine rows,
 * fetched once from their owners along A's halo plan: lengths, then global
 * coarse columns and values); the partial rows of other ranks' coarse rows
 * travel to their owners along the reverse of Pc's plan and are added
 * there. The coarse level's halo plan follows from the complete rows'
 * off-block columns (sla__dist_build). Coarse operators are kept in
 * float64 (the serial ones in float32); for a symmetric A they are
 * symmetric to rounding (the two mirrored entries are summed in different
 * orders, possibly on two ranks), so the cycle is symmetric to ~1e-15
 * (test_dist_saamg's dot test).
 *
 * Coarsening stops when the global level has at most SAAMG_COARSE rows,
 * at SAAMG_MAX_LEV levels, or when some rank's block no longer coarsens
 * (no aggregate, or more than 0.85 of its rows: every rank must keep at
 * least one row on every level). The coarsest level, when it has at most
 * SAAMG_DENSE_MAX rows, is gathered onto every rank (MPI_Allgatherv of
 * its rows once at set-up) and factorized densely on each
 * (sla__saamg_factor_coarse: Cholesky, LU if that breaks down); each
 * coarse solve is then one MPI_Allgatherv of the right-hand side and the
 * same triangular solves on every rank. A larger coarsest level (a matrix
 * that does not coarsen) is smoothed by one symmetric hybrid sweep.
 *
 * Cycle: V(1,1) with hybrid Gauss-Seidel: each rank sweeps its own rows,
 * the ghost values frozen from before the sweep. The pre-smoothing sweep
 * starts from x = 0 (ghosts zero: no message), forward; the residual is
 * one distributed SpMV (one halo exchange); the post-smoothing sweep is
 * backward after one halo exchange of x. The forward sweep is M = (D +
 * L) over each rank's block, the backward one M^T, so the cycle is a
 * symmetric operator (positive definite for SPD A) and CG can use it; its
 * transpose is itself, so adjoint solves (solve_transpose, the solve VJP)
 * reuse the hierarchy. Per level and cycle: two halo exchanges of the
 * level (residual, post-smoothing) and two of P's coarse plan
 * (restriction, prolongation); the coarsest level one MPI_Allgatherv; no
 * allreduce.
 *
 * Scope: symmetric matrices only (checked exactly at set-up, the
 * cross-rank entries against their mirrors on the other rank: a
 * nonsymmetric matrix gets SLA_ERR_UNSUPPORTED pointing to precond=amg),
 * with a positive diagonal on every level (SLA_ERR_NOT_SPD otherwise,
 * naming the rank and row). The cycle and the set-up run on one thread
 * per rank (one rank per core; the Krylov method's vector operations and
 * SpMV use the context's threads). Every rank keeps at least one row on
 * every level and the coarsest level is solved redundantly on every rank:
 * at thousands of ranks the coarse levels would need agglomeration onto
 * fewer ranks, which is not done.
 *
 * Refresh (sla_dist_solver_refresh after new values, options saamg_reuse):
 * interpolation (the default) keeps the aggregates, P and every halo plan
 * and recomputes 1/a_ii, the Galerkin products (the same code, whose
 * pattern does not depend on the values: set as new values of the coarse
 * matrices) and the gathered coarse factor, as the serial saamg does
 * (test_dist_saamg: the same iteration counts as the serial refresh);
 * the serial drift guard rebuilds when some a_ii moved by more than
 * SAAMG_DRIFT since the set-up (the note says so); full and none rebuild
 * (full's re-smoothing of P on its pattern is not done distributed). The
 * symmetry is checked again; a failed refresh leaves the identity and the
 * next one rebuilds. */
#include "../solvers/saamg.h"
#include "dist_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_LEN = 711, TAG_COL = 712, TAG_VAL = 713, TAG_SYM_N = 714, TAG_SYM_I = 715, TAG_SYM_V = 716 };

typedef struct dsa_level {
    sla_dist_matrix *A;  /* level 0: the solver's matrix (borrowed); coarser: owned */
    sla_int nc;          /* coarse rows of this rank (levels with a P) */
    sla_int *prp;        /* P: this rank's fine rows (nlocal + 1) */
    int32_t *pci;        /* columns: own coarse rows < nc, else nc + Pc's ghost index */
    sa_real *pval;       /* values: float32 as the serial P (the cycle reads P twice) */
    sla_int *pglob;      /* set-up only: P's global columns */
    sla_dist_matrix *Pc; /* the coarse-space halo plan of P's columns on other ranks */
    int32_t *brows;      /* the rows other ranks read (A's send list), increasing, unique */
    sla_int nb;
    double *x, *b;       /* coarse levels: iterate, right-hand side */
} dsa_level;

typedef struct dsaamg {
    sla_allocator alloc;   /* pc->alloc: every array of the hierarchy */
    int nlev;
    saamg g;               /* g.lev[l]: level l's diagonal block; g.dense, g.piv: the gathered coarsest factor */
    dsa_level dl[SAAMG_MAX_LEV];
    int *counts, *displs;  /* dense coarsest: every rank's rows in the gathered vector */
    double *bg, *xg;       /* dense coarsest: gathered right-hand side and solution */
    int64_t gathers;       /* MPI_Allgatherv calls of the coarse solves */
    int64_t gather_bytes;  /* bytes this rank contributed to them */
    int rc;                /* first MPI error of an apply */
    int reuse;             /* saamg_reuse: 0 keep P at refresh, else rebuild */
    bool stale;            /* a refresh failed: the next one rebuilds */
    float *d0;             /* a_ii of level 0 at the set-up (taken at the first refresh) */
    bool repattern;        /* a refresh found a coarse pattern changed: it rebuilds */
} dsaamg;

/* ---- small helpers ------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
    sla_int x = *(const sla_int *)a, y = *(const sla_int *)b;
    return (x > y) - (x < y);
}

/* Index of v in the sorted g[0..m), or -1. */
static sla_int find_i64(const sla_int *g, sla_int m, sla_int v)
{
    sla_int lo = 0, hi = m - 1;
    while (lo <= hi) {
        sla_int mid = lo + (hi - lo) / 2;
        if (g[mid] == v) return mid;
        if (g[mid] < v) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* Position of column j in row i of a CSR block with sorted columns, or -1. */
static sla_int find_col(const sla_matrix *M, sla_int i, sla_int j)
{
    sla_int lo = M->rowptr[i], hi = M->rowptr[i + 1] - 1;
    while (lo <= hi) {
        sla_int m = lo + (hi - lo) / 2;
        if (M->colind[m] == j) return m;
        if (M->colind[m] < j) lo = m + 1;
        else hi = m - 1;
    }
    return -1;
}

static sla_status nomem(sla_ctx *ctx, const sla_dist_matrix *A, int l)
{
    return sla__error(ctx, SLA_ERR_NOMEM, "distributed saamg: out of memory on rank %d building level %d", A->rank,
                      l);
}

/* ---- the exact symmetry check --------------------------------------------------- */

/* Whether A is exactly symmetric (pattern and values): the diagonal block
 * locally; every off-block entry (i, j) is sent to the owner of j, which
 * finds (j, i) with the same value, and the counts per pair of ranks must
 * match (then the entries correspond one to one). Collective; the verdict
 * is the same on every rank. */
static sla_status check_symmetric(sla_ctx *ctx, const sla_dist_matrix *A)
{
    const sla_allocator *a = &A->alloc;
    const sla__halo *h = &A->halo;
    const sla_matrix *Dg = A->diag, *O = A->offd;
    const double *dv = Dg->values, *ov = O->values;
    int bad = 0;
    for (sla_int i = 0; i < A->nlocal && !bad; i++)
        for (sla_int k = Dg->rowptr[i]; k < Dg->rowptr[i + 1]; k++) {
            sla_int j = Dg->colind[k];
            if (j <= i) continue;
            sla_int q = find_col(Dg, j, i);
            if (q < 0 || dv[q] != dv[k]) {
                bad = 1;
                break;
            }
        }
    /* off-block entries by owner: ghosts [recv_off[q], recv_off[q+1]) belong to recv_rank[q] */
    int nr = h->nrecv, ns = h->nsend;
    sla_int *cnt = sla__calloc(a, (size_t)nr + 1, sizeof *cnt);   /* entries to each owner */
    sla_int *got = sla__calloc(a, (size_t)ns + 1, sizeof *got);   /* entries from each sender */
    int32_t *gq = sla__malloc(a, (size_t)(A->nghost > 0 ? A->nghost : 1), sizeof *gq);
    MPI_Request *req = sla__malloc(a, (size_t)(2 * (nr + ns) + 1), sizeof *req);
    sla_int *sendn = sla__malloc(a, (size_t)nr + 1, sizeof *sendn);
    sla_int *oi = NULL, *ii = NULL;
    double *ovv = NULL, *iv = NULL;
    sla_int *mine = NULL; /* my off-block entries whose column each sender owns */
    sla_status st = SLA_OK;
    if (!cnt || !got || !gq || !req || !sendn) st = nomem(ctx, A, 0);
    if ((st = sla__dist_agree(ctx, A->comm, st))) goto out;
    for (int q = 0; q < nr; q++)
        for (sla_int g = h->recv_off[q]; g < h->recv_off[q + 1]; g++) gq[g] = q;
    for (sla_int p = 0; p < O->nnz; p++) cnt[gq[O->colind[p]] + 1]++;
    for (int q = 0; q < nr; q++) cnt[q + 1] += cnt[q];
    int k = 0, rc = MPI_SUCCESS;
    for (int q = 0; q < ns && !rc; q++) /* how many each sender sends */
        rc = MPI_Irecv(got + q + 1, 1, MPI_INT64_T, h->send_rank[q], TAG_SYM_N, A->comm, &req[k++]);
    for (int q = 0; q < nr && !rc; q++) {
        sendn[q] = cnt[q + 1] - cnt[q];
        rc = MPI_Isend(sendn + q, 1, MPI_INT64_T, h->recv_rank[q], TAG_SYM_N, A->comm, &req[k++]);
    }
    if (!rc) rc = MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
    for (int q = 0; q < ns; q++) got[q + 1] += got[q];
    if (rc) {
        st = sla__mpi_error(ctx, rc, "distributed saamg: symmetry check");
        goto out;
    }
    /* pack (column, row) pairs and values per owner */
    oi = sla__malloc(a, 2 * (size_t)(O->nnz > 0 ? O->nnz : 1), sizeof *oi);
    ovv = sla__malloc(a, (size_t)(O->nnz > 0 ? O->nnz : 1), sizeof *ovv);
    ii = sla__malloc(a, 2 * (size_t)(got[ns] > 0 ? got[ns] : 1), sizeof *ii);
    iv = sla__malloc(a, (size_t)(got[ns] > 0 ? got[ns] : 1), sizeof *iv);
    mine = sla__calloc(a, (size_t)A->size, sizeof *mine);
    sla_int *fill = sla__malloc(a, (size_t)nr + 1, sizeof *fill);
    if (!oi || !ovv || !ii || !iv || !mine || !fill) st = nomem(ctx, A, 0);
    if ((st = sla__dist_agree(ctx, A->comm, st))) {
        sla__free(a, fill);
        goto out;
    }
    {
        memcpy(fill, cnt, ((size_t)nr + 1) * sizeof *fill);
        for (sla_int i = 0; i < A->nlocal; i++)
            for (sla_int p = O->rowptr[i]; p < O->rowptr[i + 1]; p++) {
                int q = gq[O->colind[p]];
                sla_int t = fill[q]++;
                oi[2 * t] = A->ghosts[O->colind[p]];
                oi[2 * t + 1] = A->row_start + i;
                ovv[t] = ov[p];
                mine[h->recv_rank[q]]++;
            }
        sla__free(a, fill);
    }
    k = 0;
    for (int q = 0; q < ns && !rc; q++) {
        int m = (int)(got[q + 1] - got[q]);
        rc = MPI_Irecv(ii + 2 * got[q], 2 * m, MPI_INT64_T, h->send_rank[q], TAG_SYM_I, A->comm, &req[k++]);
        if (!rc) rc = MPI_Irecv(iv + got[q], m, MPI_DOUBLE, h->send_rank[q], TAG_SYM_V, A->comm, &req[k++]);
    }
    for (int q = 0; q < nr && !rc; q++) {
        int m = (int)(cnt[q + 1] - cnt[q]);
        rc = MPI_Isend(oi + 2 * cnt[q], 2 * m, MPI_INT64_T, h->recv_rank[q], TAG_SYM_I, A->comm, &req[k++]);
        if (!rc) rc = MPI_Isend(ovv + cnt[q], m, MPI_DOUBLE, h->recv_rank[q], TAG_SYM_V, A->comm, &req[k++]);
    }
    if (!rc) rc = MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
    if (rc) {
        st = sla__mpi_error(ctx, rc, "distributed saamg: symmetry check");
        goto out;
    }
    for (int q = 0; q < ns && !bad; q++) {
        if (got[q + 1] - got[q] != mine[h->send_rank[q]]) bad = 1;
        for (sla_int t = got[q]; t < got[q + 1] && !bad; t++) {
            sla_int i = ii[2 * t] - A->row_start, j = ii[2 * t + 1];
            sla_int gj = find_i64(A->ghosts, A->nghost, j);
            sla_int p = i >= 0 && i < A->nlocal && gj >= 0 ? find_col(O, i, gj) : -1;
            if (p < 0 || ov[p] != iv[t]) bad = 1;
        }
    }
    /* a rank whose ghosts another rank owns but which that rank does not list: counts differ */
    for (int q = 0; q < nr && !bad; q++) {
        bool listed = false;
        for (int s = 0; s < ns && !listed; s++) listed = h->send_rank[s] == h->recv_rank[q];
        if (!listed) bad = 1;
    }
    {
        int any = 0;
        rc = MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, A->comm);
        if (rc) st = sla__mpi_error(ctx, rc, "distributed saamg: symmetry check");
        else if (any)
            st = sla__error(ctx, SLA_ERR_UNSUPPORTED,
                            "distributed saamg: the matrix is not symmetric (pattern or values), and the "
                            "distributed saamg needs a symmetric matrix (use precond=amg, or block Jacobi "
                            "ilu0)");
    }
out:
    sla__free(a, sendn);
    sla__free(a, cnt);
    sla__free(a, got);
    sla__free(a, gq);
    sla__free(a, req);
    sla__free(a, oi);
    sla__free(a, ovv);
    sla__free(a, ii);
    sla__free(a, iv);
    sla__free(a, mine);
    return st;
}

/* ---- set-up --------------------------------------------------------------------- */

/* Level l's local view (the diagonal block, read in place). */
static void set_local(sa_level *L, const sla_dist_matrix *A)
{
    L->n = A->nlocal;
    L->nnz = A->diag->nnz;
    L->rp = A->diag->rowptr;
    L->ci = A->diag->colind;
    L->val = A->diag->values;
    L->f32 = false;
}

/* A positive diagonal (1 / a_ii > 0) on level l, naming rank and row. */
static sla_status check_diag(sla_ctx *ctx, const sla_dist_matrix *A, const sa_level *L, int l)
{
    for (sla_int i = 0; i < L->n; i++)
        if (!(L->dinv[i] > 0.0))
            return sla__error(ctx, SLA_ERR_NOT_SPD,
                              "distributed saamg: rank %d: %s diagonal entry %g at %s row %lld: A is not "
                              "positive definite, and saamg needs an SPD matrix (use amg or ilu0)",
                              A->rank, l ? "the coarse operator has a nonpositive" : "nonpositive",
                              1.0 / L->dinv[i], l ? "coarse" : "distributed", (long long)(A->row_start + i));
    return SLA_OK;
}

/* A forward halo exchange during the set-up, left out of A's counters
 * (they count the solves' messages). Returns an MPI error code. */
static int halo_quiet(sla_dist_matrix *A, const double *x, double *ghost)
{
    sla_dist_stats s = A->stats;
    int rc = sla__halo_forward_begin(A, x, ghost);
    int rc2 = sla__halo_end(A);
    A->stats = s;
    return rc ? rc : rc2;
}

/* Rows of P of A's ghost fine rows from their owners (A's halo plan):
 * gprp (nghost + 1), gcol (global coarse columns), gval, allocated with
 * a. prp, pglob, pval: this rank's rows of P with global columns.
 * Collective; the status is agreed. */
static sla_status fetch_ghost_p(sla_ctx *ctx, const sla_allocator *a, const sla_dist_matrix *A, const sla_int *prp,
                                const sla_int *pglob, const sa_real *pval, sla_int **gprp, sla_int **gcol,
                                double **gval)
{
    const sla__halo *h = &A->halo;
    int nr = h->nrecv, ns = h->nsend;
    sla_int nsent = h->send_off[ns], ng = A->nghost;
    *gprp = sla__calloc(a, (size_t)ng + 1, sizeof **gprp);
    *gcol = NULL;
    *gval = NULL;
    sla_int *slen = sla__malloc(a, (size_t)(nsent > 0 ? nsent : 1), sizeof *slen);
    sla_int *soff = sla__malloc(a, (size_t)nsent + 1, sizeof *soff);
    MPI_Request *req = sla__malloc(a, (size_t)(2 * (nr + ns) + 1), sizeof *req);
    sla_int *scol = NULL;
    double *sval = NULL;
    sla_status st = SLA_OK;
    if (!*gprp || !slen || !soff || !req) st = nomem(ctx, A, 0);
    if ((st = sla__dist_agree(ctx, A->comm, st))) goto out;
    soff[0] = 0;
    for (sla_int t = 0; t < nsent; t++) {
        int32_t i = h->send_idx[t];
        slen[t] = prp[i + 1] - prp[i];
        soff[t + 1] = soff[t] + slen[t];
    }
    int k = 0, rc = MPI_SUCCESS;
    for (int q = 0; q < nr && !rc; q++)
        rc = MPI_Irecv(*gprp + 1 + h->recv_off[q], (int)(h->recv_off[q + 1] - h->recv_off[q]), MPI_INT64_T,
                       h->recv_rank[q], TAG_LEN, A->comm, &req[k++]);
    for (int q = 0; q < ns && !rc; q++)
        rc = MPI_Isend(slen + h->send_off[q], (int)(h->send_off[q + 1] - h->send_off[q]), MPI_INT64_T,
                       h->send_rank[q], TAG_LEN, A->comm, &req[k++]);
    if (!rc) rc = MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
    if (rc) {
        st = sla__mpi_error(ctx, rc, "distributed saamg: fetching the prolongator's ghost rows");
        goto out;
    }
    for (sla_int g = 0; g < ng; g++) (*gprp)[g + 1] += (*gprp)[g];
    sla_int tot = (*gprp)[ng];
    *gcol = sla__malloc(a, (size_t)(tot > 0 ? tot : 1), sizeof **gcol);
    *gval = sla__malloc(a, (size_t)(tot > 0 ? tot : 1), sizeof **gval);
    scol = sla__malloc(a, (size_t)(soff[nsent] > 0 ? soff[nsent] : 1), sizeof *scol);
    sval = sla__malloc(a, (size_t)(soff[nsent] > 0 ? soff[nsent] : 1), sizeof *sval);
    if (!*gcol || !*gval || !scol || !sval) st = nomem(ctx, A, 0);
    if (!st && (tot > INT_MAX || soff[nsent] > INT_MAX))
        st = sla__error(ctx, SLA_ERR_TOO_LARGE, "distributed saamg: rank %d exchanges more than 2^31 - 1 "
                                                "entries of the prolongator", A->rank);
    if ((st = sla__dist_agree(ctx, A->comm, st))) goto out;
    for (sla_int t = 0; t < nsent; t++) {
        int32_t i = h->send_idx[t];
        sla_int o = soff[t];
        for (sla_int p = prp[i]; p < prp[i + 1]; p++, o++) {
            scol[o] = pglob[p];
            sval[o] = (double)pval[p];
        }
    }
    k = 0;
    for (int q = 0; q < nr && !rc; q++) {
        sla_int b = (*gprp)[h->recv_off[q]], m = (*gprp)[h->recv_off[q + 1]] - b;
        rc = MPI_Irecv(*gcol + b, (int)m, MPI_INT64_T, h->recv_rank[q], TAG_COL, A->comm, &req[k++]);
        if (!rc) rc = MPI_Irecv(*gval + b, (int)m, MPI_DOUBLE, h->recv_rank[q], TAG_VAL, A->comm, &req[k++]);
    }
    for (int q = 0; q < ns && !rc; q++) {
        sla_int b = soff[h->send_off[q]], m = soff[h->send_off[q + 1]] - b;
        rc = MPI_Isend(scol + b, (int)m, MPI_INT64_T, h->send_rank[q], TAG_COL, A->comm, &req[k++]);
        if (!rc) rc = MPI_Isend(sval + b, (int)m, MPI_DOUBLE, h->send_rank[q], TAG_VAL, A->comm, &req[k++]);
    }
    if (!rc) rc = MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
    if (rc) st = sla__mpi_error(ctx, rc, "distributed saamg: fetching the prolongator's ghost rows");
    st = sla__dist_agree(ctx, A->comm, st);
out:
    sla__free(a, slen);
    sla__free(a, soff);
    sla__free(a, req);
    sla__free(a, scol);
    sla__free(a, sval);
    if (st) {
        sla__free(a, *gprp);
        sla__free(a, *gcol);
        sla__free(a, *gval);
        *gprp = *gcol = NULL;
        *gval = NULL;
    }
    return st;
}

/* A growing list of (column, value) entries. */
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
static sla_status smooth_p(sla_ctx *ctx, dsaamg *H, int l, const int32_t *agg, sla_int cstart)
{
    dsa_level *d = &H->dl[l];
    sla_dist_matrix *A = d->A;
    const sla_allocator *a = &H->alloc; /* the preconditioner's: it frees them */
    const sa_level *L = &H->g.lev[l];
    const sla_matrix *Dg = A->diag, *O = A->offd;
    const double *dv = Dg->values, *ov = O->values;
    sla_int n = A->nlocal, ng = A->nghost, nc = d->nc;
    double th = SAAMG_THETA * ldexp(1.0, -l), th2 = th * th;
    double *own = sla__malloc(a, (size_t)n, sizeof *own);          /* a_ii, then agg as double */
    double *gd = sla__malloc(a, (size_t)(ng > 0 ? ng : 1), sizeof *gd); /* ghosts' a_jj */
    double *ga = sla__malloc(a, (size_t)(ng > 0 ? ng : 1), sizeof *ga); /* ghosts' global aggregate */
    double *df = sla__malloc(a, (size_t)n, sizeof *df);
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
    int rc = halo_quiet(A, own, gd);
    for (sla_int i = 0; i < n && !rc; i++) own[i] = agg[i] >= 0 ? (double)(cstart + agg[i]) : -1.0;
    if (!rc) rc = halo_quiet(A, own, ga);
    if (rc) {
        st = sla__mpi_error(ctx, rc, "distributed saamg: exchanging the aggregates");
        goto out;
    }
    /* filtered diagonals and rho */
    double rho = 0.0;
    for (sla_int i = 0; i < n; i++) {
        double di = 1.0 / L->dinv[i], f = di, s = 0.0;
        for (sla_int k = Dg->rowptr[i]; k < Dg->rowptr[i + 1]; k++) {
            sla_int j = Dg->colind[k];
            if (j == i) continue;
            if (dv[k] * dv[k] >= th2 * fabs(di / L->dinv[j])) s += fabs(dv[k]);
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
    /* the rows of P with global columns */
    rp[0] = 0;
    for (sla_int i = 0; i < n && !st; i++) {
        double di = 1.0 / L->dinv[i], w = omega / df[i];
        sla_int m = 0;
        if (agg[i] >= 0) rowc[m] = cstart + agg[i], rowv[m++] = 1.0 - omega;
        for (sla_int k = Dg->rowptr[i]; k < Dg->rowptr[i + 1]; k++) {
            sla_int j = Dg->colind[k];
            if (j == i || agg[j] < 0 || !(dv[k] * dv[k] >= th2 * fabs(di / L->dinv[j]))) continue;
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
    st = sla__dist_build(ctx, d->Pc, nc, crp, cci, NULL);
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

/* Level l + 1 = P^T A P. Each rank forms, for every coarse row I that
 * its rows of P reach (its own and the other ranks' ones in d->pcg),
 * sum_i P_iI (A P)_i over its fine rows i (the rows of A P need P's rows
 * of the ghost fine rows: fetched from their owners along A's halo plan);
 * the partial rows of the other ranks' coarse rows go to their owners
 * along the reverse of P's coarse halo plan, which add them to their own.
 * The coarse rows, complete on their owners, become a distributed matrix
 * (its halo plan from their columns). Collective; the status is agreed. */
static sla_status build_coarse(sla_ctx *ctx, dsaamg *H, int l, sla_int cstart, bool refresh)
{
    dsa_level *d = &H->dl[l];
    sla_dist_matrix *A = d->A, *Pc = d->Pc;
    const sla_allocator *a = &H->alloc; /* the preconditioner's: it frees them */
    const sla_matrix *Dg = A->diag, *O = A->offd;
    const double *dv = Dg->values, *ov = O->values;
    const sla__halo *h = &Pc->halo;
    sla_int n = A->nlocal, nc = d->nc, np = Pc->nghost, ng = A->nghost;
    sla_int *gprp = NULL, *gcol = NULL, *ext = NULL, *trp = NULL, *orp = NULL, *len = NULL, *rlen = NULL;
    sla_int *soff = NULL, *roff = NULL, *scol = NULL, *rcol = NULL, *tmpc = NULL, *crp = NULL, *cci = NULL;
    int32_t *gci = NULL, *lci = NULL, *tci = NULL, *mk = NULL, *rc = NULL;
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
    st = fetch_ghost_p(ctx, a, A, d->prp, d->pglob, d->pval, &gprp, &gcol, &gval);
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
        acc = sla__calloc(a, (size_t)ncx, sizeof *acc);
        orp = sla__calloc(a, (size_t)ncx + 1, sizeof *orp);
        if (!trp || !tci || !tv || !mk || !rc || !acc || !orp) st = nomem(ctx, A, l + 1);
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
        /* row I of P^T A P (partial for I >= nc): sum over P^T's row of P_iI (A P)_i */
        for (sla_int I = 0; I < ncx && !st; I++) {
            sla_int m = 0;
            for (sla_int p = trp[I]; p < trp[I + 1]; p++) {
                sla_int i = tci[p];
                double pi = tv[p];
                for (sla_int k = Dg->rowptr[i]; k < Dg->rowptr[i + 1]; k++) {
                    sla_int j = Dg->colind[k];
                    double pa = pi * dv[k];
                    for (sla_int q = d->prp[j]; q < d->prp[j + 1]; q++) {
                        int32_t J = lci[q];
                        if (mk[J] != (int32_t)I) mk[J] = (int32_t)I, rc[m++] = J;
                        acc[J] += pa * (double)d->pval[q];
                    }
                }
                for (sla_int k = O->rowptr[i]; k < O->rowptr[i + 1]; k++) {
                    sla_int g = O->colind[k];
                    double pa = pi * ov[k];
                    for (sla_int q = gprp[g]; q < gprp[g + 1]; q++) {
                        int32_t J = gci[q];
                        if (mk[J] != (int32_t)I) mk[J] = (int32_t)I, rc[m++] = J;
                        acc[J] += pa * gval[q];
                    }
                }
            }
            if (!ent_reserve(a, &e, m)) {
                st = nomem(ctx, A, l + 1);
                break;
            }
            for (sla_int t = 0; t < m; t++) {
                int32_t J = rc[t];
                e.col[e.len + t] = J < nc ? cstart + J : ext[J - nc];
                e.val[e.len + t] = acc[J];
                acc[J] = 0.0;
            }
            e.len += sort_sum(e.col + e.len, e.val + e.len, m);
            orp[I + 1] = e.len;
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
    /* own rows plus the pieces received for them: (row, piece) lists */
    {
        sla_int *pcnt = sla__calloc(a, (size_t)nc + 1, sizeof *pcnt); /* received entries per own row */
        sla_int *ppos = NULL;
        sla_int maxrow = 1;
        if (!pcnt) st = nomem(ctx, A, l + 1);
        if (!st) {
            for (sla_int t = 0; t < nrecv_rows; t++) pcnt[Pc->halo.send_idx[t] + 1] += rlen[t];
            for (sla_int I = 0; I < nc; I++) {
                sla_int m = pcnt[I + 1] + orp[I + 1] - orp[I];
                if (m > maxrow) maxrow = m;
                pcnt[I + 1] += pcnt[I];
            }
            ppos = sla__malloc(a, (size_t)(pcnt[nc] + 1), sizeof *ppos); /* offsets into rcol of each entry */
            tmpc = sla__malloc(a, (size_t)maxrow, sizeof *tmpc);
            tmpv = sla__malloc(a, (size_t)maxrow, sizeof *tmpv);
            crp = sla__malloc(a, (size_t)nc + 1, sizeof *crp);
            if (!ppos || !tmpc || !tmpv || !crp) st = nomem(ctx, A, l + 1);
        }
        ent_buf c = {0, 0, NULL, NULL};
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
        if (!st) crp[0] = 0;
        for (sla_int I = 0; I < nc && !st; I++) {
            sla_int m = 0;
            for (sla_int q = orp[I]; q < orp[I + 1]; q++) tmpc[m] = e.col[q], tmpv[m++] = e.val[q];
            for (sla_int q = pcnt[I]; q < pcnt[I + 1]; q++) tmpc[m] = rcol[ppos[q]], tmpv[m++] = rval[ppos[q]];
            m = sort_sum(tmpc, tmpv, m);
            if (!ent_reserve(a, &c, m)) {
                st = nomem(ctx, A, l + 1);
                break;
            }
            memcpy(c.col + c.len, tmpc, (size_t)m * sizeof *tmpc);
            memcpy(c.val + c.len, tmpv, (size_t)m * sizeof *tmpv);
            c.len += m;
            crp[I + 1] = c.len;
        }
        sla__free(a, pcnt);
        sla__free(a, ppos);
        cci = c.col;
        cv = c.val;
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
    st = sla__dist_build(ctx, Ac, nc, crp, cci, cv);
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
    sla__free(a, rc);
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


/* The coarsest level A gathered onto every rank and factorized densely
 * (the same factor everywhere). Collective; the status is agreed. */
static sla_status gather_dense(sla_ctx *ctx, dsaamg *H, int l)
{
    sla_dist_matrix *A = H->dl[l].A;
    const sla_allocator *a = &H->alloc; /* the preconditioner's: it frees them */
    int P = A->size;
    sla_int n = A->n;
    sla_status st = SLA_OK;
    int *ncnt = sla__malloc(a, (size_t)P, sizeof *ncnt), *ndsp = sla__malloc(a, (size_t)P, sizeof *ndsp);
    H->counts = sla__malloc(a, (size_t)P, sizeof *H->counts);
    H->displs = sla__malloc(a, (size_t)P, sizeof *H->displs);
    H->bg = sla__malloc(a, (size_t)n, sizeof *H->bg);
    H->xg = sla__malloc(a, (size_t)n, sizeof *H->xg);
    sla_int *len = sla__malloc(a, (size_t)A->nlocal, sizeof *len);
    double *lv = sla__malloc(a, (size_t)(A->nnz_local > 0 ? A->nnz_local : 1), sizeof *lv);
    sla_int *grp = sla__calloc(a, (size_t)n + 1, sizeof *grp);
    sla_int *gci = NULL;
    int32_t *ci32 = NULL;
    double *gv = NULL;
    if (!ncnt || !ndsp || !H->counts || !H->displs || !H->bg || !H->xg || !len || !lv || !grp)
        st = nomem(ctx, A, l);
    if ((st = sla__dist_agree(ctx, A->comm, st))) goto out;
    for (int q = 0; q < P; q++) {
        H->counts[q] = (int)(A->starts[q + 1] - A->starts[q]);
        H->displs[q] = (int)A->starts[q];
    }
    for (sla_int i = 0; i < A->nlocal; i++) len[i] = A->rowptr[i + 1] - A->rowptr[i];
    sla_dist_matrix_get_values(A, lv);
    int nnzl = (int)A->nnz_local;
    int rc = MPI_Allgatherv(len, (int)A->nlocal, MPI_INT64_T, grp + 1, H->counts, H->displs, MPI_INT64_T, A->comm);
    if (!rc) rc = MPI_Allgather(&nnzl, 1, MPI_INT, ncnt, 1, MPI_INT, A->comm);
    if (rc) {
        st = sla__mpi_error(ctx, rc, "distributed saamg: gathering the coarsest level");
        goto out;
    }
    for (sla_int i = 0; i < n; i++) grp[i + 1] += grp[i];
    for (int q = 0, s = 0; q < P; q++) {
        ndsp[q] = s;
        s += ncnt[q];
    }
    sla_int nnz = grp[n];
    gci = sla__malloc(a, (size_t)(nnz > 0 ? nnz : 1), sizeof *gci);
    ci32 = sla__malloc(a, (size_t)(nnz > 0 ? nnz : 1), sizeof *ci32);
    gv = sla__malloc(a, (size_t)(nnz > 0 ? nnz : 1), sizeof *gv);
    if (!gci || !ci32 || !gv) st = nomem(ctx, A, l);
    if ((st = sla__dist_agree(ctx, A->comm, st))) goto out;
    rc = MPI_Allgatherv(A->colind, nnzl, MPI_INT64_T, gci, ncnt, ndsp, MPI_INT64_T, A->comm);
    if (!rc) rc = MPI_Allgatherv(lv, nnzl, MPI_DOUBLE, gv, ncnt, ndsp, MPI_DOUBLE, A->comm);
    if (rc) {
        st = sla__mpi_error(ctx, rc, "distributed saamg: gathering the coarsest level");
        goto out;
    }
    for (sla_int k = 0; k < nnz; k++) ci32[k] = (int32_t)gci[k];
    sa_level G;
    memset(&G, 0, sizeof G);
    G.n = n;
    G.nnz = nnz;
    G.rp = grp;
    G.ci = ci32;
    G.val = gv;
    H->g.symmetric = true;
    H->g.nlev = l + 1;
    st = sla__saamg_factor_coarse(ctx, a, &H->g, &G); /* identical input: the same verdict on every rank */
    st = sla__dist_agree(ctx, A->comm, st);
out:
    sla__free(a, ncnt);
    sla__free(a, ndsp);
    sla__free(a, len);
    sla__free(a, lv);
    sla__free(a, grp);
    sla__free(a, gci);
    sla__free(a, ci32);
    sla__free(a, gv);
    return st;
}

/* Free the levels (H itself and its settings stay). */
static void free_hierarchy(const sla_allocator *a, dsaamg *H)
{
    for (int l = 0; l < SAAMG_MAX_LEV; l++) {
        sa_level *L = &H->g.lev[l];
        sla__free(a, L->dinv);
        sla__free(a, L->prp);
        sla__free(a, L->pci);
        sla__free(a, L->pval);
        dsa_level *d = &H->dl[l];
        sla__free(a, d->prp);
        sla__free(a, d->pci);
        sla__free(a, d->pval);
        sla__free(a, d->pglob);
        sla__free(a, d->brows);
        sla_dist_matrix_destroy(&d->Pc);
        sla__free(a, d->x);
        sla__free(a, d->b);
        if (l > 0) sla_dist_matrix_destroy(&d->A);
    }
    sla__free(a, H->g.dense);
    sla__free(a, H->g.piv);
    sla__free(a, H->counts);
    sla__free(a, H->displs);
    sla__free(a, H->bg);
    sla__free(a, H->xg);
    sla__free(a, H->d0);
    int reuse = H->reuse;
    sla_allocator al = H->alloc;
    memset(H, 0, sizeof *H);
    H->reuse = reuse;
    H->alloc = al;
}

/* The coarsest level's gathered factor and buffers (rebuilt at refresh). */
static void free_dense(const sla_allocator *a, dsaamg *H)
{
    sla__free(a, H->g.dense);
    sla__free(a, H->g.piv);
    sla__free(a, H->counts);
    sla__free(a, H->displs);
    sla__free(a, H->bg);
    sla__free(a, H->xg);
    H->g.dense = NULL;
    H->g.piv = NULL;
    H->counts = H->displs = NULL;
    H->bg = H->xg = NULL;
}

static void dsaamg_destroy(sla__pc *pc)
{
    dsaamg *H = pc->fact;
    if (!H) return;
    free_hierarchy(&pc->alloc, H);
    sla__free(&pc->alloc, H);
    pc->fact = NULL;
}

/* ---- the cycle ------------------------------------------------------------------ */

/* Forward Gauss-Seidel from x = 0 on the diagonal block (ghosts zero). */
static void gs_fwd0(const sla_matrix *Dg, const double *dinv, const double *b, double *x)
{
    const sla_int *rp = Dg->rowptr;
    const int32_t *ci = Dg->colind;
    const double *v = Dg->values;
    for (sla_int i = 0; i < Dg->nrows; i++) {
        double s = b[i];
        for (sla_int k = rp[i]; k < rp[i + 1] && ci[k] < i; k++) s -= v[k] * x[ci[k]];
        x[i] = s * dinv[i];
    }
}

/* Backward hybrid Gauss-Seidel: x_i += (b_i - (A_dd x)_i - (A_do g)_i) / a_ii,
 * rows in decreasing order, the ghosts g frozen. */
static void gs_bwd(const sla_matrix *Dg, const sla_matrix *O, const double *g, const double *dinv,
                   const double *b, double *x)
{
    const sla_int *rp = Dg->rowptr, *orp = O->rowptr;
    const int32_t *ci = Dg->colind, *oci = O->colind;
    const double *v = Dg->values, *ov = O->values;
    for (sla_int i = Dg->nrows - 1; i >= 0; i--) {
        double s = b[i];
        for (sla_int k = orp[i]; k < orp[i + 1]; k++) s -= ov[k] * g[oci[k]];
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) s -= v[k] * x[ci[k]];
        x[i] += s * dinv[i];
    }
}

/* x += P xc: P's columns on other ranks read from one halo exchange of
 * the coarse vector (returns an MPI error code). */
static int prolong(dsa_level *d, const double *xc, double *x)
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
static int restrict_r(dsa_level *d, const double *r, double *bc)
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
 * A x) in one pass over the rows after one halo exchange of x: row i's
 * entries up to the diagonal give b_i - sum_{j <= i} a_ij x_j = 0 (up to
 * rounding: that is how the sweep set x_i), so r_i is minus the sum over
 * the upper part and the ghost columns; r is not stored, its P^T
 * contributions are summed straight away (the other ranks' coarse rows'
 * ones travel back with P's reverse exchange). Against a separate SpMV,
 * residual vector and restriction: the process CPU of CG + saamg on 2-D
 * Poisson 1e6, 1 rank, 16 iterations: 0.70-0.75 s -> 0.62-0.69 s
 * (interleaved runs, 3 each, under other load). */
static int presmooth_restrict(dsa_level *d, const double *dinv, const double *b, double *x, double *bc)
{
    sla_dist_matrix *A = d->A, *Pc = d->Pc;
    const sla_matrix *Dg = A->diag, *O = A->offd;
    const sla_int *rp = Dg->rowptr, *orp = O->rowptr;
    const int32_t *ci = Dg->colind, *oci = O->colind;
    const double *v = Dg->values, *ov = O->values;
    gs_fwd0(Dg, dinv, b, x);
    int rc = sla__halo_forward_begin(A, x, A->ghostbuf);
    int rc2 = sla__halo_end(A);
    const double *gx = A->ghostbuf;
    double *g = Pc->ghostbuf;
    sla_int nc = d->nc;
    memset(bc, 0, (size_t)nc * sizeof *bc);
    if (Pc->nghost) memset(g, 0, (size_t)Pc->nghost * sizeof *g);
    for (sla_int i = 0; i < A->nlocal; i++) {
        double s = 0.0;
        for (sla_int k = rp[i + 1] - 1; k >= rp[i] && ci[k] > i; k--) s -= v[k] * x[ci[k]];
        for (sla_int k = orp[i]; k < orp[i + 1]; k++) s -= ov[k] * gx[oci[k]];
        for (sla_int k = d->prp[i]; k < d->prp[i + 1]; k++) {
            int32_t c = d->pci[k];
            if (c < nc) bc[c] += (double)d->pval[k] * s;
            else g[c - nc] += (double)d->pval[k] * s;
        }
    }
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
    gs_bwd(A->diag, A->offd, A->ghostbuf, H->g.lev[l].dinv, b, x);
}

/* The coarsest level: every rank's b gathered, the dense solve
 * everywhere, each keeping its rows; or one symmetric hybrid sweep. */
static void coarse_solve(dsaamg *H, int l, const double *b, double *x)
{
    sla_dist_matrix *A = H->dl[l].A;
    if (!H->g.dense) {
        gs_fwd0(A->diag, H->g.lev[l].dinv, b, x);
        post_smooth(H, l, b, x);
        return;
    }
    int rc = MPI_Allgatherv(b, (int)A->nlocal, MPI_DOUBLE, H->bg, H->counts, H->displs, MPI_DOUBLE, A->comm);
    note_rc(H, rc);
    H->gathers++;
    H->gather_bytes += (int64_t)A->nlocal * (int64_t)sizeof(double);
    sla_int n = A->n;
    const double *F = H->g.dense;
    double *y = H->xg;
    memcpy(y, H->bg, (size_t)n * sizeof *y);
    if (H->g.piv) { /* P A = L U, L unit lower */
        for (sla_int i = 0; i < n; i++) {
            sla_int p = H->g.piv[i];
            if (p != i) {
                double t = y[i];
                y[i] = y[p];
                y[p] = t;
            }
        }
        for (sla_int j = 0; j < n; j++)
            for (sla_int i = j + 1; i < n; i++) y[i] -= F[i + j * n] * y[j];
        for (sla_int j = n - 1; j >= 0; j--) {
            y[j] /= F[j + j * n];
            for (sla_int i = 0; i < j; i++) y[i] -= F[i + j * n] * y[j];
        }
    } else { /* A = L L^T */
        for (sla_int j = 0; j < n; j++) {
            y[j] /= F[j + j * n];
            for (sla_int i = j + 1; i < n; i++) y[i] -= F[i + j * n] * y[j];
        }
        for (sla_int i = n - 1; i >= 0; i--) {
            double s = y[i];
            for (sla_int k = i + 1; k < n; k++) s -= F[k + i * n] * y[k];
            y[i] = s / F[i + i * n];
        }
    }
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
    const double *v = Dg->values, *ov = O->values, *g = A->ghostbuf, *dinv = H->g.lev[l].dinv;
    sla_int p = A->nlocal, t = d->nb - 1;
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
        double s = b[i];
        for (sla_int k = orp[i]; k < orp[i + 1]; k++) s -= ov[k] * g[oci[k]];
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) s -= v[k] * x[ci[k]];
        x[i] += s * dinv[i];
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
    const sa_level *L = &H->g.lev[l];
    (void)nt;
    note_rc(H, presmooth_restrict(d, L->dinv, b, x, c->b)); /* x = M^-1 b, b_c = P^T (b - A x) */
    cycle(H, l + 1, c->b, c->x, nt);
    note_rc(H, prolong_post_smooth(H, l, b, c->x, x)); /* x += P x_c, then backward Gauss-Seidel */
}

static sla_status dsaamg_apply(const sla__pc *pc, bool transpose, const double *r, double *z, int nt)
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

/* The hierarchy (collective; agreed status). */
static sla_status build(sla_ctx *ctx, dsaamg *H, sla_dist_matrix *D)
{
    const sla_allocator *a = &H->alloc; /* the preconditioner's: it frees them */
    int nt = sla__threads(ctx);
    sla_status st = check_symmetric(ctx, D);
    if (st) return st;
    H->dl[0].A = D;
    H->nlev = 1;
    int32_t *agg = NULL;
    for (int l = 0;; l++) {
        dsa_level *d = &H->dl[l];
        sla_dist_matrix *A = d->A;
        sa_level *L = &H->g.lev[l];
        set_local(L, A);
        bool last = A->n <= SAAMG_COARSE || l == SAAMG_MAX_LEV - 1;
        sla_int nagg = 0;
        agg = sla__malloc(a, (size_t)A->nlocal, sizeof *agg);
        if (!agg) st = nomem(ctx, A, l);
        else if (last) st = sla__saamg_set_diag(ctx, a, L, l);
        else st = sla__saamg_build_p(ctx, a, L, l, agg, false, nt, &nagg); /* for its aggregates */
        sla__free(a, L->prp); /* its P, on the diagonal block only, is not ours */
        sla__free(a, L->pci);
        sla__free(a, L->pval);
        L->prp = NULL;
        L->pci = NULL;
        L->pval = NULL;
        if (!st) st = check_diag(ctx, A, L, l);
        if (st && strncmp(sla_ctx_message(ctx), "distributed", 11) != 0) { /* the serial set-up's message */
            char msg[300];
            snprintf(msg, sizeof msg, "%s", sla_ctx_message(ctx));
            st = sla__error(ctx, st, "distributed saamg: rank %d (rows from %lld): %s", A->rank,
                            (long long)A->row_start, msg);
        }
        if ((st = sla__dist_agree(ctx, A->comm, st))) goto out;
        if (!last) { /* every rank must coarsen: else this is the coarsest level */
            int mine = nagg > 0 ? 1 : 0, all = 0;
            int rc = MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, A->comm);
            if (rc) {
                st = sla__mpi_error(ctx, rc, "distributed saamg: set-up");
                goto out;
            }
            last = !all;
        }
        if (last) break;
        d->nc = nagg;
        int64_t nc = nagg, cstart = 0;
        int rc = MPI_Exscan(&nc, &cstart, 1, MPI_INT64_T, MPI_SUM, A->comm);
        if (rc) {
            st = sla__mpi_error(ctx, rc, "distributed saamg: set-up");
            goto out;
        }
        if (A->rank == 0) cstart = 0; /* MPI_Exscan leaves rank 0's undefined */
        if ((st = smooth_p(ctx, H, l, agg, cstart))) goto out;
        sla__free(a, agg);
        agg = NULL;
        if ((st = build_coarse(ctx, H, l, cstart, false))) goto out;
        H->nlev = l + 2;
        { /* the rows other ranks read, for the fused prolongation and sweep */
            const sla__halo *h = &A->halo;
            sla_int m = h->send_off[h->nsend];
            d->brows = sla__malloc(a, (size_t)(m > 0 ? m : 1), sizeof *d->brows);
            if (!d->brows) st = nomem(ctx, A, l);
            else {
                uint8_t *mark = sla__calloc(a, (size_t)A->nlocal, 1);
                if (!mark) st = nomem(ctx, A, l);
                for (sla_int t2 = 0; mark && t2 < m; t2++) mark[h->send_idx[t2]] = 1;
                for (sla_int i = 0; mark && i < A->nlocal; i++)
                    if (mark[i]) d->brows[d->nb++] = (int32_t)i;
                sla__free(a, mark);
            }
            if ((st = sla__dist_agree(ctx, A->comm, st))) goto out;
        }
        dsa_level *c = &H->dl[l + 1];
        c->x = sla__malloc(a, (size_t)c->A->nlocal, sizeof *c->x);
        c->b = sla__malloc(a, (size_t)c->A->nlocal, sizeof *c->b);
        if (!c->x || !c->b) st = nomem(ctx, A, l + 1);
        if ((st = sla__dist_agree(ctx, A->comm, st))) goto out;
    }
    int lc = H->nlev - 1;
    if (H->dl[lc].A->n <= SAAMG_DENSE_MAX) st = gather_dense(ctx, H, lc);
out:
    sla__free(a, agg);
    return st;
}

static void set_note(sla__pc *pc, const dsaamg *H, const sla_dist_matrix *D, const char *extra)
{
    int k = snprintf(pc->note, sizeof pc->note, "saamg: %d levels over %d ranks, rows", H->nlev, D->size);
    for (int l = 0; l < H->nlev && k > 0 && (size_t)k < sizeof pc->note; l++)
        k += snprintf(pc->note + k, sizeof pc->note - (size_t)k, "%s%lld", l ? "/" : " ",
                      (long long)H->dl[l].A->n);
    if (k > 0 && (size_t)k < sizeof pc->note)
        snprintf(pc->note + k, sizeof pc->note - (size_t)k, ", coarsest %s%s",
                 H->g.dense ? "gathered and factorized" : "smoothed", extra);
}

/* New values, same hierarchy patterns (saamg_reuse = interpolation): per
 * level 1/a_ii and its check, then A_{l+1} = P^T A_l P numerically with
 * the kept P (its pattern unchanged: set as values), then the coarse
 * factor again. *drift: the largest factor an a_ii of A moved by since
 * the set-up (the serial drift guard: above SAAMG_DRIFT the caller
 * rebuilds instead). Collective; the status is agreed. */
static sla_status renumber(sla_ctx *ctx, dsaamg *H, double *drift)
{
    sla_dist_matrix *D = H->dl[0].A;
    const sla_allocator *a = &H->alloc; /* the preconditioner's: it frees them */
    sla_status st = SLA_OK;
    sa_level *L0 = &H->g.lev[0];
    if (!H->d0) { /* the first refresh: dinv still holds the set-up's 1/a_ii */
        H->d0 = sla__malloc(a, (size_t)D->nlocal, sizeof *H->d0);
        if (!H->d0) st = nomem(ctx, D, 0);
        for (sla_int i = 0; !st && i < D->nlocal; i++) H->d0[i] = (float)(1.0 / L0->dinv[i]);
    }
    if ((st = sla__dist_agree(ctx, D->comm, st))) return st;
    for (int l = 0; l < H->nlev; l++) {
        sla_dist_matrix *A = H->dl[l].A;
        sa_level *L = &H->g.lev[l];
        set_local(L, A);
        st = sla__saamg_set_diag(ctx, a, L, l);
        if (!st) st = check_diag(ctx, A, L, l);
        if (st && strncmp(sla_ctx_message(ctx), "distributed", 11) != 0) {
            char msg[300];
            snprintf(msg, sizeof msg, "%s", sla_ctx_message(ctx));
            st = sla__error(ctx, st, "distributed saamg: rank %d (rows from %lld): %s", A->rank,
                            (long long)A->row_start, msg);
        }
        if ((st = sla__dist_agree(ctx, A->comm, st))) return st;
        if (l == 0) {
            double worst = 1.0, all = 1.0;
            for (sla_int i = 0; i < A->nlocal; i++) {
                double q = (double)H->d0[i] * L->dinv[i]; /* old / new */
                q = q >= 1.0 ? q : 1.0 / q;
                if (!(q <= worst)) worst = q;
            }
            int rc = MPI_Allreduce(&worst, &all, 1, MPI_DOUBLE, MPI_MAX, A->comm);
            if (rc) return sla__mpi_error(ctx, rc, "distributed saamg: refresh");
            *drift = all;
            if (!(all <= SAAMG_DRIFT)) return SLA_OK;
        }
        if (l == H->nlev - 1) break;
        if ((st = build_coarse(ctx, H, l, H->dl[l].Pc->row_start, true))) return st;
        if (H->repattern) {
            *drift = INFINITY;
            return SLA_OK;
        }
    }
    if (H->g.dense) {
        free_dense(a, H);
        st = gather_dense(ctx, H, H->nlev - 1);
    }
    return st;
}

/* pc->refresh (A and ib unused: the values are D's). The symmetry is
 * checked again; saamg_reuse = interpolation keeps P (renumber), full or
 * none rebuild. A failed refresh leaves the identity and the next one
 * rebuilds. */
static sla_status dsaamg_refresh(sla_ctx *ctx, sla__pc *pc, const sla_matrix *A, sla_int ib)
{
    (void)A;
    (void)ib;
    dsaamg *H = pc->fact;
    sla_dist_matrix *D = H->dl[0].A;
    pc->apply = NULL;
    pc->note[0] = '\0';
    H->rc = 0;
    sla_status st = check_symmetric(ctx, D);
    bool keep = !st && H->reuse == 0 && !H->stale && H->nlev > 0;
    double drift = 1.0;
    if (keep) {
        st = renumber(ctx, H, &drift);
        if (!st && !(drift <= SAAMG_DRIFT)) keep = false;
    }
    if (!st && !keep) {
        free_hierarchy(&pc->alloc, H);
        H->dl[0].A = D;
        st = build(ctx, H, D);
    }
    H->stale = st != SLA_OK;
    if (st) {
        free_hierarchy(&pc->alloc, H);
        H->stale = true;
        H->dl[0].A = D;
        return st;
    }
    char extra[120] = "";
    if (drift == INFINITY)
        snprintf(extra, sizeof extra, "; refresh rebuilt it (a coarse pattern changed)");
    else if (!(drift <= SAAMG_DRIFT))
        snprintf(extra, sizeof extra, "; refresh rebuilt it (a diagonal entry moved by a factor %.3g)", drift);
    else if (keep)
        snprintf(extra, sizeof extra, "; refreshed with the set-up's prolongators");
    set_note(pc, H, D, extra);
    pc->apply = dsaamg_apply;
    return SLA_OK;
}

sla_status sla__dist_saamg_create(sla_ctx *ctx, sla_dist_matrix *D, int reuse, struct sla__pc **out)
{
    *out = NULL;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__pc *pc = sla__calloc(&a, 1, sizeof *pc);
    dsaamg *H = pc ? sla__calloc(&a, 1, sizeof *H) : NULL;
    sla_status st = H ? SLA_OK : sla__error(ctx, SLA_ERR_NOMEM, "distributed saamg: out of memory");
    if ((st = sla__dist_agree(ctx, D->comm, st))) { /* another rank may have failed */
        sla__free(&a, H);
        sla__free(&a, pc);
        return st;
    }
    pc->kind = SLA_PRECOND_SAAMG;
    pc->n = D->nlocal;
    pc->alloc = a;
    pc->fact = H;
    pc->destroy = dsaamg_destroy;
    H->reuse = reuse;
    H->alloc = a;
    st = build(ctx, H, D);
    if (st) {
        sla__pc_destroy(&pc);
        return st;
    }
    pc->apply = dsaamg_apply;
    pc->refresh = dsaamg_refresh;
    set_note(pc, H, D, "");
    *out = pc;
    return SLA_OK;
}

int sla__dist_saamg_levels(const struct sla__pc *pc)
{
    return pc && pc->kind == SLA_PRECOND_SAAMG && pc->fact ? ((const dsaamg *)pc->fact)->nlev : 0;
}

sla_dist_matrix *sla__dist_saamg_level(const struct sla__pc *pc, int l, sla_dist_matrix **P)
{
    if (P) *P = NULL;
    if (l < 0 || l >= sla__dist_saamg_levels(pc)) return NULL;
    const dsaamg *H = pc->fact;
    if (P) *P = H->dl[l].Pc;
    return H->dl[l].A;
}

void sla__dist_saamg_gathers(const struct sla__pc *pc, int64_t *count, int64_t *bytes)
{
    const dsaamg *H = sla__dist_saamg_levels(pc) ? pc->fact : NULL;
    *count = H ? H->gathers : 0;
    *bytes = H ? H->gather_bytes : 0;
}

double sla__dist_saamg_galerkin_error(const struct sla__pc *pc, int l)
{
    if (l < 0 || l + 1 >= sla__dist_saamg_levels(pc)) return -1.0;
    dsaamg *H = pc->fact;
    dsa_level *d = &H->dl[l];
    sla_dist_matrix *A = d->A, *Ac = H->dl[l + 1].A;
    const sla_allocator *a = &A->alloc;
    double *y = sla__malloc(a, (size_t)Ac->nlocal, sizeof *y), *z1 = sla__malloc(a, (size_t)Ac->nlocal, sizeof *z1);
    double *z2 = sla__malloc(a, (size_t)Ac->nlocal, sizeof *z2), *t = sla__calloc(a, (size_t)A->nlocal, sizeof *t);
    double *u = sla__malloc(a, (size_t)A->nlocal, sizeof *u);
    double e[2] = {0.0, 0.0}, all[2] = {-1.0, -1.0};
    int ok = y && z1 && z2 && t && u, allok = 0;
    MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, A->comm);
    if (allok) {
        for (sla_int i = 0; i < Ac->nlocal; i++) y[i] = sin(1.7 * (double)(i + Ac->row_start)) + 0.5;
        int rc = sla__dist_spmv(Ac, y, z1, 1); /* A_c y */
        rc |= prolong(d, y, t);                /* P^T (A (P y)) */
        rc |= sla__dist_spmv(A, t, u, 1);
        rc |= restrict_r(d, u, z2);
        for (sla_int i = 0; i < Ac->nlocal; i++) {
            e[0] = fmax(e[0], fabs(z1[i] - z2[i]));
            e[1] = fmax(e[1], fabs(z1[i]));
        }
        if (rc) e[0] = INFINITY;
        MPI_Allreduce(e, all, 2, MPI_DOUBLE, MPI_MAX, A->comm);
    }
    sla__free(a, y);
    sla__free(a, z1);
    sla__free(a, z2);
    sla__free(a, t);
    sla__free(a, u);
    return all[1] > 0.0 ? all[0] / all[1] : all[0];
}
