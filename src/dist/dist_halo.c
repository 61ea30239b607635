/* Halo exchange (owners -> ghosts) and its transpose (ghost contributions
 * summed into their owners); the distributed products built on them. */
#include "dist_internal.h"

#include <string.h>

enum { TAG_FORWARD = 701, TAG_REVERSE = 702 };

static void count_sends(sla_dist_matrix *D)
{
    const sla__halo *h = &D->halo;
    D->stats.halo_exchanges++;
    D->stats.messages += h->nsend;
    D->stats.bytes_sent += (int64_t)h->send_off[h->nsend] * (int64_t)sizeof(double);
}

/* Post the receives into ghost, pack and post the sends. */
int sla__halo_forward_begin(sla_dist_matrix *D, const double *x, double *ghost)
{
    sla__halo *h = &D->halo;
    int k = 0, rc = MPI_SUCCESS;
    for (int q = 0; q < h->nrecv && !rc; q++, k++)
        rc = MPI_Irecv(ghost + h->recv_off[q], (int)(h->recv_off[q + 1] - h->recv_off[q]), MPI_DOUBLE,
                       h->recv_rank[q], TAG_FORWARD, D->comm, &h->req[k]);
    for (int q = 0; q < h->nsend && !rc; q++, k++) {
        double *buf = h->sendbuf + h->send_off[q];
        const int32_t *idx = h->send_idx + h->send_off[q];
        sla_int m = h->send_off[q + 1] - h->send_off[q];
        for (sla_int t = 0; t < m; t++) buf[t] = x[idx[t]]; /* pack the owned entries they need */
        rc = MPI_Isend(buf, (int)m, MPI_DOUBLE, h->send_rank[q], TAG_FORWARD, D->comm, &h->req[k]);
    }
    for (; k < h->nrecv + h->nsend; k++) h->req[k] = MPI_REQUEST_NULL;
    count_sends(D);
    return rc;
}

/* The transpose: our ghost contributions go to their owners; what the
 * others computed for our owned entries lands in sendbuf. */
int sla__halo_reverse_begin(sla_dist_matrix *D, const double *ghost)
{
    sla__halo *h = &D->halo;
    int k = 0, rc = MPI_SUCCESS;
    for (int q = 0; q < h->nsend && !rc; q++, k++)
        rc = MPI_Irecv(h->sendbuf + h->send_off[q], (int)(h->send_off[q + 1] - h->send_off[q]), MPI_DOUBLE,
                       h->send_rank[q], TAG_REVERSE, D->comm, &h->req[k]);
    for (int q = 0; q < h->nrecv && !rc; q++, k++)
        rc = MPI_Isend(ghost + h->recv_off[q], (int)(h->recv_off[q + 1] - h->recv_off[q]), MPI_DOUBLE,
                       h->recv_rank[q], TAG_REVERSE, D->comm, &h->req[k]);
    for (; k < h->nrecv + h->nsend; k++) h->req[k] = MPI_REQUEST_NULL;
    D->stats.halo_exchanges++;
    D->stats.messages += h->nrecv;
    D->stats.bytes_sent += (int64_t)h->recv_off[h->nrecv] * (int64_t)sizeof(double);
    return rc;
}

int sla__halo_end(sla_dist_matrix *D)
{
    sla__halo *h = &D->halo;
    double t0 = MPI_Wtime();
    int rc = MPI_Waitall(h->nrecv + h->nsend, h->req, MPI_STATUSES_IGNORE);
    D->stats.halo_wait_seconds += MPI_Wtime() - t0;
    return rc;
}

void sla__halo_reverse_add(const sla_dist_matrix *D, double *y)
{
    const sla__halo *h = &D->halo;
    sla_int m = h->send_off[h->nsend];
    for (sla_int t = 0; t < m; t++) y[h->send_idx[t]] += h->sendbuf[t]; /* y += P^T g */
}

/* y += offd * ghost over the rows that have off-block entries; returns
 * sum_i x_i (offd * ghost)_i over them (x NULL: 0). */
static double offd_add(const sla_dist_matrix *D, const double *x, double *y, int nt)
{
    const sla_matrix *O = D->offd;
    if (O->nnz == 0) return 0.0;
    const sla_int *rp = O->rowptr;
    const int32_t *ci = O->colind, *rows = D->orows;
    const double *v = O->values, *g = D->ghostbuf;
    sla_int m = D->norows;
    double dot = 0.0;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(+ : dot) if (nt > 1 && m >= SLA_PAR_MIN)
    for (sla_int t = 0; t < m; t++) {
        sla_int i = rows[t];
        double s = 0.0;
        for (sla_int p = rp[i]; p < rp[i + 1]; p++) s += v[p] * g[ci[p]];
        y[i] += s;
        if (x) dot += x[i] * s;
    }
    return dot;
}

int sla__dist_spmv(sla_dist_matrix *D, const double *x, double *y, int nt)
{
    int rc = sla__halo_forward_begin(D, x, D->ghostbuf);
    sla__spmv(D->diag, 0, x, y, nt); /* y = A_dd x_own while the ghosts travel */
    int rc2 = sla__halo_end(D);
    offd_add(D, NULL, y, nt);        /* y += A_do x_ghost */
    return rc ? rc : rc2;
}

/* y = A x and this rank's part of x . y in the same passes: the diagonal
 * block's product with its dot, then the off-block part of the rows that
 * have one, with theirs (CG's q = A p with p . q; one pass over p and q
 * less than the product and a dot). */
int sla__dist_spmv_dot(sla_dist_matrix *D, const double *x, double *y, int nt, double *dot)
{
    int rc = sla__halo_forward_begin(D, x, D->ghostbuf);
    double d = sla__spmv_dot(D->diag, 0, x, y, nt);
    int rc2 = sla__halo_end(D);
    *dot = d + offd_add(D, x, y, nt);
    return rc ? rc : rc2;
}

int sla__dist_spmv_t(sla_dist_matrix *D, const double *x, double *y, int nt)
{
    { /* g = A_do^T x, owed to the ghosts' owners: over the rows with off-block entries */
        const sla_matrix *O = D->offd;
        const double *ov = O->values;
        if (D->nghost) memset(D->ghostbuf, 0, (size_t)D->nghost * sizeof *D->ghostbuf);
        for (sla_int t = 0; t < D->norows; t++) {
            sla_int i = D->orows[t];
            for (sla_int p = O->rowptr[i]; p < O->rowptr[i + 1]; p++) D->ghostbuf[O->colind[p]] += ov[p] * x[i];
        }
    }
    int rc = sla__halo_reverse_begin(D, D->ghostbuf);
    bool threaded = D->work && D->work_nt >= nt;
    sla__spmv_t(D->diag, 0, x, y, threaded ? nt : 1, threaded ? D->work : NULL); /* y = A_dd^T x */
    int rc2 = sla__halo_end(D);
    sla__halo_reverse_add(D, y);                         /* y += P^T g */
    return rc ? rc : rc2;
}

void sla__dist_pattern_outer(const sla_dist_matrix *D, double s, const double *a, const double *x,
                             double *out)
{
    const int32_t *dc = D->diag->colind, *oc = D->offd->colind;
    const double *g = D->ghostbuf;
    for (sla_int i = 0; i < D->nlocal; i++)
        for (sla_int k = D->rowptr[i]; k < D->rowptr[i + 1]; k++) {
            sla_int p = D->pos[k];
            double xc = p >= 0 ? x[dc[p]] : g[oc[-1 - p]];
            out[k] = s * a[i] * xc; /* d(a . A x)/dA_k = a_row x_col */
        }
}

/* ---- public entry points ---------------------------------------------------------- */

static sla_status check_vecs(sla_ctx *ctx, const sla_dist_matrix *D, const char *fn, const void *a,
                             const void *b)
{
    if (!D) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: D is NULL", fn);
    sla_status st = SLA_OK;
    if (!a || !b) st = sla__error(ctx, SLA_ERR_ARGUMENT, "%s: NULL vector on rank %d", fn, D->rank);
    return sla__dist_agree(ctx, D->comm, st);
}

sla_status sla_dist_halo_forward(sla_ctx *ctx, sla_dist_matrix *D, const double *x, double *ghost)
{
    sla_status st = check_vecs(ctx, D, "sla_dist_halo_forward", x, D && D->nghost ? ghost : x);
    if (st) return st;
    int rc = sla__halo_forward_begin(D, x, ghost);
    int rc2 = sla__halo_end(D);
    if (rc || rc2) return sla__mpi_error(ctx, rc ? rc : rc2, "halo exchange");
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_dist_halo_reverse(sla_ctx *ctx, sla_dist_matrix *D, const double *ghost, double *y)
{
    sla_status st = check_vecs(ctx, D, "sla_dist_halo_reverse", D && D->nghost ? ghost : y, y);
    if (st) return st;
    int rc = sla__halo_reverse_begin(D, ghost);
    int rc2 = sla__halo_end(D);
    if (rc || rc2) return sla__mpi_error(ctx, rc ? rc : rc2, "reverse halo exchange");
    sla__halo_reverse_add(D, y);
    return sla__ok(ctx, SLA_OK);
}

/* Scratch for the threaded transposed product of the diagonal block. A
 * failure is not an error: the product then runs on one thread. */
static void ensure_work(sla_dist_matrix *D, int nt)
{
    if (nt <= 1 || D->nlocal < SLA_PAR_MIN || (D->work && D->work_nt >= nt)) return;
    sla__free(&D->alloc, D->work);
    D->work = sla__malloc(&D->alloc, (size_t)nt * (size_t)D->nlocal, sizeof(double));
    D->work_nt = D->work ? nt : 0;
}

sla_status sla_dist_matvec(sla_ctx *ctx, sla_dist_matrix *D, const double *x, double *y)
{
    sla_status st = check_vecs(ctx, D, "sla_dist_matvec", x, y);
    if (st) return st;
    int rc = sla__dist_spmv(D, x, y, sla__threads(ctx));
    return rc ? sla__mpi_error(ctx, rc, "distributed SpMV") : sla__ok(ctx, SLA_OK);
}

sla_status sla_dist_matvec_transpose(sla_ctx *ctx, sla_dist_matrix *D, const double *x, double *y)
{
    sla_status st = check_vecs(ctx, D, "sla_dist_matvec_transpose", x, y);
    if (st) return st;
    int nt = sla__threads(ctx);
    ensure_work(D, nt);
    int rc = sla__dist_spmv_t(D, x, y, nt);
    return rc ? sla__mpi_error(ctx, rc, "distributed transposed SpMV") : sla__ok(ctx, SLA_OK);
}

sla_status sla_dist_matvec_vjp(sla_ctx *ctx, sla_dist_matrix *D, const double *x, const double *gy, double *gx,
                               double *gvals)
{
    sla_status st = check_vecs(ctx, D, "sla_dist_matvec_vjp", x, gy);
    if (st) return st;
    if ((st = sla__dist_same(ctx, D->comm, SLA_OK, gx != NULL, "sla_dist_matvec_vjp: gx"))) return st;
    if ((st = sla__dist_same(ctx, D->comm, SLA_OK, gvals != NULL, "sla_dist_matvec_vjp: gvals"))) return st;
    int nt = sla__threads(ctx), rc = 0;
    if (gx) {
        ensure_work(D, nt);
        rc = sla__dist_spmv_t(D, gy, gx, nt); /* gx = A^T gy */
    }
    if (!rc && gvals) {
        rc = sla__halo_forward_begin(D, x, D->ghostbuf); /* the ghost values of x */
        int rc2 = sla__halo_end(D);
        if (!rc) rc = rc2;
        if (!rc) sla__dist_pattern_outer(D, 1.0, gy, x, gvals); /* gA_k = gy_row x_col */
    }
    return rc ? sla__mpi_error(ctx, rc, "distributed SpMV VJP") : sla__ok(ctx, SLA_OK);
}
