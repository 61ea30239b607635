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
 * aggregation (sla__saamg_aggregates: strength, three phases, no P)
 * runs on the rank's diagonal block, so aggregates never cross ranks; P = (I - omega
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
 * row I its rows of P reach, block by block of coarse rows with each row
 * of A P formed once per block (rap_rows; A P needs P's rows of the ghost fine rows,
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
 * SAAMG_DRIFT since the set-up (the note says so); hierarchy refreshes
 * level 0's 1/a_ii and its checks only (the coarse operators and the
 * coarse factor kept) while every entry stays within SAAMG_KEEP (25 %)
 * of the values the coarse levels came from, else as interpolation, as
 * the serial saamg does; full and none rebuild
 * (full's re-smoothing of P on its pattern is not done distributed). The
 * symmetry is checked again; a failed refresh leaves the identity and the
 * next one rebuilds. */
#include "dist_saamg.h"

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
    sla__free(a, H->vh);
    int reuse = H->reuse;
    double theta = H->theta;
    sla_allocator al = H->alloc;
    memset(H, 0, sizeof *H);
    H->reuse = reuse;
    H->theta = theta;
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

/* saamg_reuse = hierarchy: H->vh = this rank's entries of D (its diagonal
 * block, then its off-block part) in bfloat16, the values the coarse
 * levels are computed from. */
static sla_status take_vals(sla_ctx *ctx, dsaamg *H, sla_dist_matrix *D)
{
    sla_int nd = D->diag->nnz, no = D->offd ? D->offd->nnz : 0;
    if (!H->vh) H->vh = sla__malloc(&H->alloc, (size_t)(nd + no + 1), sizeof *H->vh);
    if (!H->vh) return nomem(ctx, D, 0);
    const double *vd = D->diag->values, *vo = no ? D->offd->values : NULL;
    for (sla_int k = 0; k < nd; k++) H->vh[k] = sla__bf16_pack(vd[k]);
    for (sla_int k = 0; k < no; k++) H->vh[nd + k] = sla__bf16_pack(vo[k]);
    return SLA_OK;
}

/* The largest relative change |a - v| / |v| of this rank's entries of D
 * against H->vh (NaN, or a zero that is no longer zero: infinite). */
static double vals_moved(const dsaamg *H, const sla_dist_matrix *D)
{
    sla_int nd = D->diag->nnz, no = D->offd ? D->offd->nnz : 0;
    double worst = 0.0;
    const double *vd = D->diag->values, *vo = no ? D->offd->values : NULL;
    for (sla_int k = 0; k < nd + no; k++) {
        double q = sla__bf16_moved(k < nd ? vd[k] : vo[k - nd], H->vh[k]);
        if (q > worst) worst = q;
    }
    return worst;
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
        if (l == 0) L->theta = H->theta; /* as the serial set-up's level 0 */
        bool last = A->n <= SAAMG_COARSE || l == SAAMG_MAX_LEV - 1;
        sla_int nagg = 0;
        agg = sla__malloc(a, (size_t)A->nlocal, sizeof *agg);
        if (!agg) st = nomem(ctx, A, l);
        else if (last) st = sla__saamg_set_diag(ctx, a, L, l);
        else st = sla__saamg_aggregates(ctx, a, L, l, agg, nt, &nagg); /* P: smooth_p, across ranks */
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
        if ((st = sla__dsa_smooth_p(ctx, H, l, agg, cstart))) goto out;
        sla__free(a, agg);
        agg = NULL;
        if ((st = sla__dsa_build_coarse(ctx, H, l, cstart, false))) goto out;
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
    if (H->dl[lc].A->n <= SAAMG_DENSE_MAX) st = sla__dsa_gather_dense(ctx, H, lc);
    if (!st && H->reuse == 3) st = sla__dist_agree(ctx, D->comm, take_vals(ctx, H, D));
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
 * rebuilds instead); *kept (hierarchy): the largest relative change of an
 * entry since the coarse levels were computed, over the ranks (past
 * SAAMG_DRIFT - 1 *drift is set infinite: a rebuild). Collective; the
 * status is agreed. */
static sla_status renumber(sla_ctx *ctx, dsaamg *H, double *drift, double *kept)
{
    sla_dist_matrix *D = H->dl[0].A;
    const sla_allocator *a = &H->alloc; /* the preconditioner's: it frees them */
    sla_status st = SLA_OK;
    sa_level *L0 = &H->g.lev[0];
    bool hier = H->reuse == 3 && H->nlev > 1; /* one level: its gathered factor is refreshed */
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
        if (l == 0) { /* the drift guard; hierarchy: how far A moved from the coarse levels' values */
            double worst[2] = {1.0, 0.0}, all[2];
            for (sla_int i = 0; i < A->nlocal; i++) {
                double q = (double)H->d0[i] * L->dinv[i]; /* old / new */
                q = q >= 1.0 ? q : 1.0 / q;
                if (!(q <= worst[0])) worst[0] = q;
            }
            if (hier) worst[1] = H->vh ? vals_moved(H, A) : INFINITY;
            int rc = MPI_Allreduce(worst, all, 2, MPI_DOUBLE, MPI_MAX, A->comm);
            if (rc) return sla__mpi_error(ctx, rc, "distributed saamg: refresh");
            *drift = all[0];
            if (!(all[0] <= SAAMG_DRIFT)) return SLA_OK;
            *kept = hier ? all[1] : 0.0;
            if (hier && !(all[1] <= SAAMG_DRIFT - 1.0)) { /* an entry turned: rebuild */
                *drift = INFINITY;
                return SLA_OK;
            }
            if (hier && !(all[1] <= SAAMG_KEEP)) hier = false;
        }
        if (l == H->nlev - 1 || hier) break; /* hierarchy: the coarse levels kept */
        if ((st = sla__dsa_build_coarse(ctx, H, l, H->dl[l].Pc->row_start, true))) return st;
        if (H->repattern) {
            *drift = INFINITY;
            return SLA_OK;
        }
    }
    if (hier) return SLA_OK;
    if (H->g.dense) {
        free_dense(a, H);
        st = sla__dsa_gather_dense(ctx, H, H->nlev - 1);
    }
    if (!st && H->reuse == 3) /* the values the coarse levels now come from */
        st = sla__dist_agree(ctx, D->comm, take_vals(ctx, H, D));
    return st;
}

/* pc->refresh (A and ib unused: the values are D's). The symmetry is
 * checked again; saamg_reuse = interpolation keeps P (renumber), hierarchy
 * every coarse level (renumber on level 0 only; an entry moved by more
 * than SAAMG_DRIFT - 1 rebuilds), full or none rebuild. A failed refresh
 * leaves the identity and the next one rebuilds. */
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
    bool keep = !st && (H->reuse == 0 || H->reuse == 3) && !H->stale && H->nlev > 0;
    double drift = 1.0, kept = 0.0;
    if (keep) {
        st = renumber(ctx, H, &drift, &kept);
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
    if (drift == INFINITY && H->reuse == 3 && !(kept <= SAAMG_DRIFT - 1.0))
        snprintf(extra, sizeof extra, "; refresh rebuilt it (an entry moved by %.3g %%)", 100.0 * kept);
    else if (drift == INFINITY)
        snprintf(extra, sizeof extra, "; refresh rebuilt it (a coarse pattern changed)");
    else if (!(drift <= SAAMG_DRIFT))
        snprintf(extra, sizeof extra, "; refresh rebuilt it (a diagonal entry moved by a factor %.3g)", drift);
    else if (keep && H->reuse == 3 && H->nlev > 1 && kept <= SAAMG_KEEP)
        snprintf(extra, sizeof extra, "; refresh kept the coarse levels (every entry within %.3g %%)",
                 100.0 * kept);
    else if (keep && H->reuse == 3 && H->nlev > 1)
        snprintf(extra, sizeof extra, "; refresh recomputed the coarse levels (an entry moved by %.3g %%)",
                 100.0 * kept);
    else if (keep)
        snprintf(extra, sizeof extra, "; refreshed with the set-up's prolongators");
    set_note(pc, H, D, extra);
    pc->apply = sla__dsa_apply;
    return SLA_OK;
}

sla_status sla__dist_saamg_create(sla_ctx *ctx, sla_dist_matrix *D, int reuse, double theta,
                                  struct sla__pc **out)
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
    H->theta = theta;
    H->alloc = a;
    st = build(ctx, H, D);
    if (st) {
        sla__pc_destroy(&pc);
        return st;
    }
    pc->apply = sla__dsa_apply;
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
        rc |= sla__dsa_prolong(d, y, t);                /* P^T (A (P y)) */
        rc |= sla__dist_spmv(A, t, u, 1);
        rc |= sla__dsa_restrict(d, u, z2);
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
