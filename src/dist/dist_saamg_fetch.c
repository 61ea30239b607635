/* Distributed saamg: what the set-up fetches from other ranks (the ghost
 * fine rows' rows of P for the Galerkin product, the gathered coarsest
 * level) and its quiet halo exchange (dist_saamg.c's header gives the
 * method). */
#include "dist_saamg.h"

/* A forward halo exchange during the set-up, left out of A's counters
 * (they count the solves' messages). Returns an MPI error code. */
int sla__dsa_halo_quiet(sla_dist_matrix *A, const double *x, double *ghost)
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
sla_status sla__dsa_fetch_ghost_p(sla_ctx *ctx, const sla_allocator *a, const sla_dist_matrix *A, const sla_int *prp,
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

/* The coarsest level A gathered onto every rank and factorized densely
 * (the same factor everywhere). Collective; the status is agreed. */
sla_status sla__dsa_gather_dense(sla_ctx *ctx, dsaamg *H, int l)
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
