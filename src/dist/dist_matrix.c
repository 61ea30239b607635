/* The distributed matrix: owned rows split into a diagonal block (owned
 * columns) and an off-diagonal block (ghost columns), and the halo plan,
 * built once per pattern from the rows each rank assembles. */
#include "dist_internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- MPI errors and agreement ------------------------------------------------ */

sla_status sla__mpi_error(sla_ctx *ctx, int rc, const char *what)
{
    char s[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, s, &len);
    return sla__error(ctx, SLA_ERR_IO, "%s: MPI error %d (%s)", what, rc, s);
}

sla_status sla__dist_agree(sla_ctx *ctx, MPI_Comm comm, sla_status st)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int mine = st < 0 ? rank : size, first = size;
    int rc = MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (rc != MPI_SUCCESS) return st < 0 ? st : sla__mpi_error(ctx, rc, "status agreement");
    if (first == size) return st; /* nobody failed */
    struct {
        int status;
        char msg[400];
    } m;
    memset(&m, 0, sizeof m);
    if (rank == first) {
        m.status = (int)st;
        snprintf(m.msg, sizeof m.msg, "%s", ctx ? sla_ctx_message(ctx) : "");
    }
    rc = MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, first, comm);
    if (st < 0) return st;
    if (rc != MPI_SUCCESS) return sla__mpi_error(ctx, rc, "status agreement");
    return sla__error(ctx, (sla_status)m.status, "rank %d: %s", first, m.msg);
}

sla_status sla__dist_same(sla_ctx *ctx, MPI_Comm comm, sla_status st, bool flag, const char *what)
{
    int f[2] = {flag ? 1 : 0, flag ? -1 : 0}, g[2]; /* max and -min of the flags */
    int rc = MPI_Allreduce(f, g, 2, MPI_INT, MPI_MAX, comm);
    if (rc != MPI_SUCCESS) return sla__mpi_error(ctx, rc, what);
    if (st >= 0 && g[0] != -g[1]) /* some ranks passed it, others NULL */
        st = sla__error(ctx, SLA_ERR_ARGUMENT, "%s must be NULL on every rank or on none", what);
    return sla__dist_agree(ctx, comm, st);
}

/* ---- life cycle --------------------------------------------------------------- */

static void halo_free(const sla_allocator *a, sla__halo *h)
{
    sla__free(a, h->recv_rank);
    sla__free(a, h->recv_off);
    sla__free(a, h->send_rank);
    sla__free(a, h->send_off);
    sla__free(a, h->send_idx);
    sla__free(a, h->sendbuf);
    sla__free(a, h->req);
    memset(h, 0, sizeof *h);
}

void sla_dist_matrix_destroy(sla_dist_matrix **Dp)
{
    if (!Dp || !*Dp) return;
    sla_dist_matrix *D = *Dp;
    sla_allocator a = D->alloc;
    halo_free(&a, &D->halo);
    sla_matrix_destroy(&D->diag);
    sla_matrix_destroy(&D->offd);
    sla__free(&a, D->starts);
    sla__free(&a, D->rowptr);
    sla__free(&a, D->colind);
    sla__free(&a, D->ghosts);
    sla__free(&a, D->pos);
    sla__free(&a, D->global_rows);
    sla__free(&a, D->src_pos);
    sla__free(&a, D->ghostbuf);
    sla__free(&a, D->work);
    int fin = 0;
    MPI_Finalized(&fin);
    if (D->comm != MPI_COMM_NULL && !fin) MPI_Comm_free(&D->comm);
    sla__free(&a, D);
    *Dp = NULL;
}

/* A fresh matrix object on a duplicate of comm (collective). */
static sla_status dist_new(sla_ctx *ctx, MPI_Comm comm, sla_dist_matrix **out)
{
    *out = NULL;
    if (comm == MPI_COMM_NULL)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "distributed matrix: the communicator is MPI_COMM_NULL");
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "distributed matrix: MPI is %s (the application initializes it)",
                          fin ? "already finalized" : "not initialized");
    MPI_Comm dup = MPI_COMM_NULL;
    int rc = MPI_Comm_dup(comm, &dup);
    if (rc != MPI_SUCCESS) return sla__mpi_error(ctx, rc, "MPI_Comm_dup");
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_dist_matrix *D = sla__calloc(&a, 1, sizeof *D);
    sla_status st = D ? SLA_OK : sla__error(ctx, SLA_ERR_NOMEM, "out of memory for a distributed matrix");
    st = sla__dist_agree(ctx, dup, st);
    if (st) {
        sla__free(&a, D);
        MPI_Comm_free(&dup);
        return st;
    }
    D->alloc = a;
    D->comm = dup;
    MPI_Comm_rank(dup, &D->rank);
    MPI_Comm_size(dup, &D->size);
    *out = D;
    return SLA_OK;
}

/* ---- checks of the local rows ------------------------------------------------- */

static sla_status check_shape(sla_ctx *ctx, int rank, sla_int nlocal, const sla_int *rowptr,
                              const sla_int *colind)
{
    if (nlocal < 1)
        return sla__error(ctx, SLA_ERR_DIMENSION,
                          "distributed matrix: rank %d has %lld rows (every rank needs at least one)",
                          rank, (long long)nlocal);
    if (nlocal > INT32_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "distributed matrix: rank %d has %lld rows (> 2^31-1)",
                          rank, (long long)nlocal);
    if (!rowptr) return sla__error(ctx, SLA_ERR_ARGUMENT, "distributed matrix: rowptr is NULL on rank %d", rank);
    if (rowptr[0] != 0)
        return sla__error(ctx, SLA_ERR_INDEX, "distributed matrix: rank %d: rowptr[0] = %lld, not 0", rank,
                          (long long)rowptr[0]);
    for (sla_int i = 0; i < nlocal; i++)
        if (rowptr[i + 1] < rowptr[i])
            return sla__error(ctx, SLA_ERR_INDEX,
                              "distributed matrix: rank %d: rowptr decreases at local row %lld", rank,
                              (long long)i);
    if (rowptr[nlocal] > 0 && !colind)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "distributed matrix: colind is NULL on rank %d", rank);
    return SLA_OK;
}

static sla_status check_entries(sla_ctx *ctx, int rank, sla_int n, sla_int nlocal,
                                const sla_int *rowptr, const sla_int *colind, const double *vals)
{
    for (sla_int i = 0; i < nlocal; i++)
        for (sla_int p = rowptr[i]; p < rowptr[i + 1]; p++) {
            sla_int j = colind[p];
            if (j < 0 || j >= n)
                return sla__error(ctx, SLA_ERR_INDEX,
                                  "distributed matrix: rank %d, local row %lld, entry %lld: column %lld "
                                  "out of range [0, %lld)",
                                  rank, (long long)i, (long long)p, (long long)j, (long long)n);
            if (p > rowptr[i] && j <= colind[p - 1])
                return sla__error(ctx, SLA_ERR_INDEX,
                                  "distributed matrix: rank %d, local row %lld, entry %lld: column %lld "
                                  "not after %lld (columns must increase strictly)",
                                  rank, (long long)i, (long long)p, (long long)j, (long long)colind[p - 1]);
            if (vals && !isfinite(vals[p]))
                return sla__error(ctx, SLA_ERR_VALUE,
                                  "distributed matrix: rank %d, local row %lld, entry %lld is %g, not finite",
                                  rank, (long long)i, (long long)p, vals[p]);
        }
    return SLA_OK;
}

/* ---- the two blocks ------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
    sla_int x = *(const sla_int *)a, y = *(const sla_int *)b;
    return (x > y) - (x < y);
}

/* Index of v in the sorted array g[0..m), which holds it. */
static sla_int bsearch_i64(const sla_int *g, sla_int m, sla_int v)
{
    sla_int lo = 0, hi = m - 1;
    while (lo < hi) {
        sla_int mid = lo + (hi - lo) / 2;
        if (g[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Copy the local pattern, find the ghosts, split the rows into the
 * diagonal and off-diagonal blocks and record where each entry went. */
static sla_status split_blocks(sla_ctx *ctx, sla_dist_matrix *D, const sla_int *rowptr,
                               const sla_int *colind, const double *vals)
{
    const sla_allocator *a = &D->alloc;
    sla_int nl = D->nlocal, nnz = rowptr[nl], r0 = D->row_start, r1 = r0 + nl;
    D->nnz_local = nnz;
    D->rowptr = sla__malloc(a, (size_t)nl + 1, sizeof(sla_int));
    D->colind = sla__malloc(a, (size_t)nnz, sizeof(sla_int));
    D->pos = sla__malloc(a, (size_t)nnz, sizeof(sla_int));
    D->global_rows = sla__malloc(a, (size_t)nl, sizeof(sla_int));
    sla_int *drp = sla__calloc(a, (size_t)nl + 1, sizeof(sla_int));
    sla_int *orp = sla__calloc(a, (size_t)nl + 1, sizeof(sla_int));
    if (!D->rowptr || !D->colind || !D->pos || !D->global_rows || !drp || !orp) goto nomem;
    memcpy(D->rowptr, rowptr, ((size_t)nl + 1) * sizeof(sla_int));
    if (nnz) memcpy(D->colind, colind, (size_t)nnz * sizeof(sla_int));
    for (sla_int i = 0; i < nl; i++) D->global_rows[i] = r0 + i;

    sla_int nd = 0, no = 0;
    for (sla_int i = 0; i < nl; i++) {
        for (sla_int p = rowptr[i]; p < rowptr[i + 1]; p++) {
            if (colind[p] >= r0 && colind[p] < r1) nd++;
            else no++;
        }
        drp[i + 1] = nd;
        orp[i + 1] = no;
    }
    /* ghosts: the distinct off-block columns, increasing */
    D->ghosts = sla__malloc(a, (size_t)no, sizeof(sla_int));
    if (!D->ghosts) goto nomem;
    sla_int k = 0;
    for (sla_int p = 0; p < nnz; p++)
        if (colind[p] < r0 || colind[p] >= r1) D->ghosts[k++] = colind[p];
    qsort(D->ghosts, (size_t)no, sizeof(sla_int), cmp_i64);
    sla_int ng = 0;
    for (sla_int q = 0; q < no; q++)
        if (ng == 0 || D->ghosts[q] != D->ghosts[ng - 1]) D->ghosts[ng++] = D->ghosts[q];
    D->nghost = ng;
    if (ng > INT32_MAX) {
        sla__free(a, drp);
        sla__free(a, orp);
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "distributed matrix: rank %d has %lld ghosts (> 2^31-1)",
                          D->rank, (long long)ng);
    }

    int32_t *dci = sla__malloc(a, (size_t)nd, sizeof(int32_t));
    int32_t *oci = sla__malloc(a, (size_t)no, sizeof(int32_t));
    double *dv = sla__malloc(a, (size_t)nd, sizeof(double));
    double *ov = sla__malloc(a, (size_t)no, sizeof(double));
    D->ghostbuf = sla__malloc(a, (size_t)ng, sizeof(double));
    if (!dci || !oci || !dv || !ov || !D->ghostbuf) {
        sla__free(a, dci);
        sla__free(a, oci);
        sla__free(a, dv);
        sla__free(a, ov);
        goto nomem;
    }
    nd = no = 0;
    for (sla_int p = 0; p < nnz; p++) {
        sla_int j = colind[p];
        double v = vals ? vals[p] : 1.0;
        if (j >= r0 && j < r1) {
            dci[nd] = (int32_t)(j - r0); /* local column */
            dv[nd] = v;
            D->pos[p] = nd++;
        } else {
            oci[no] = (int32_t)bsearch_i64(D->ghosts, ng, j); /* compressed ghost column */
            ov[no] = v;
            D->pos[p] = -1 - no++;
        }
    }
    D->diag = sla__matrix_wrap(a, nl, nl, nd, 1, SLA_F64, drp, dci, dv);
    if (!D->diag) {
        sla__free(a, dci);
        sla__free(a, dv);
        sla__free(a, oci);
        sla__free(a, ov);
        goto nomem;
    }
    drp = NULL;
    D->offd = sla__matrix_wrap(a, nl, ng, no, 1, SLA_F64, orp, oci, ov);
    if (!D->offd) {
        sla__free(a, oci);
        sla__free(a, ov);
        goto nomem;
    }
    return SLA_OK;
nomem:
    sla__free(a, drp);
    sla__free(a, orp);
    return sla__error(ctx, SLA_ERR_NOMEM, "distributed matrix: out of memory on rank %d (%lld rows, %lld entries)",
                      D->rank, (long long)nl, (long long)nnz);
}

/* ---- the halo plan ------------------------------------------------------------- */

/* Owner rank of global index j (starts is increasing, size + 1 entries). */
static int owner_of(const sla_int *starts, int size, sla_int j)
{
    int lo = 0, hi = size - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (starts[mid] <= j) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* Receive side from the ghosts; send side from what the others ask for
 * (one all-to-all of counts and one of indices, once per pattern). */
static sla_status build_halo(sla_ctx *ctx, sla_dist_matrix *D)
{
    const sla_allocator *a = &D->alloc;
    sla__halo *h = &D->halo;
    int P = D->size;
    int *need = sla__calloc(a, (size_t)P, sizeof(int));  /* ghosts we get from each rank */
    int *give = sla__calloc(a, (size_t)P, sizeof(int));  /* entries each rank wants from us */
    int *sdisp = sla__calloc(a, (size_t)P + 1, sizeof(int));
    int *rdisp = sla__calloc(a, (size_t)P + 1, sizeof(int));
    sla_int *want = NULL;
    sla_status st = SLA_OK;
    if (!need || !give || !sdisp || !rdisp) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "halo plan: out of memory on rank %d", D->rank);
        goto agree1;
    }
    for (sla_int g = 0; g < D->nghost; g++) need[owner_of(D->starts, P, D->ghosts[g])]++;
    h->nrecv = 0;
    for (int q = 0; q < P; q++) h->nrecv += need[q] > 0;
    h->recv_rank = sla__malloc(a, (size_t)h->nrecv, sizeof(int));
    h->recv_off = sla__malloc(a, (size_t)h->nrecv + 1, sizeof(sla_int));
    if (!h->recv_rank || !h->recv_off) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "halo plan: out of memory on rank %d", D->rank);
        goto agree1;
    }
    {
        int k = 0;
        sla_int off = 0;
        for (int q = 0; q < P; q++)
            if (need[q]) {
                h->recv_rank[k] = q;
                h->recv_off[k++] = off;
                off += need[q];
            }
        h->recv_off[k] = off;
    }
agree1:
    st = sla__dist_agree(ctx, D->comm, st);
    if (st) goto done;
    int rc = MPI_Alltoall(need, 1, MPI_INT, give, 1, MPI_INT, D->comm);
    if (rc != MPI_SUCCESS) {
        st = sla__mpi_error(ctx, rc, "halo plan: MPI_Alltoall");
        goto done;
    }
    sla_int total = 0;
    for (int q = 0; q < P; q++) {
        sdisp[q + 1] = sdisp[q] + need[q]; /* ghosts sorted: grouped by owner already */
        total += give[q];
        rdisp[q + 1] = (int)(rdisp[q] + give[q]);
    }
    if (total > INT32_MAX) st = sla__error(ctx, SLA_ERR_TOO_LARGE, "halo plan: rank %d sends %lld entries",
                                           D->rank, (long long)total);
    h->nsend = 0;
    for (int q = 0; q < P; q++) h->nsend += give[q] > 0;
    if (!st) {
        want = sla__malloc(a, (size_t)total, sizeof(sla_int));
        h->send_rank = sla__malloc(a, (size_t)h->nsend, sizeof(int));
        h->send_off = sla__malloc(a, (size_t)h->nsend + 1, sizeof(sla_int));
        h->send_idx = sla__malloc(a, (size_t)total, sizeof(int32_t));
        h->sendbuf = sla__malloc(a, (size_t)total, sizeof(double));
        h->req = sla__malloc(a, (size_t)(h->nsend + h->nrecv), sizeof(MPI_Request));
        if (!want || !h->send_rank || !h->send_off || !h->send_idx || !h->sendbuf || !h->req)
            st = sla__error(ctx, SLA_ERR_NOMEM, "halo plan: out of memory on rank %d", D->rank);
    }
    st = sla__dist_agree(ctx, D->comm, st);
    if (st) goto done;
    rc = MPI_Alltoallv(D->ghosts, need, sdisp, MPI_INT64_T, want, give, rdisp, MPI_INT64_T, D->comm);
    if (rc != MPI_SUCCESS) {
        st = sla__mpi_error(ctx, rc, "halo plan: MPI_Alltoallv");
        goto done;
    }
    {
        int k = 0;
        for (int q = 0; q < P; q++)
            if (give[q]) {
                h->send_rank[k] = q;
                h->send_off[k++] = rdisp[q];
            }
        h->send_off[k] = total;
        for (sla_int t = 0; t < total; t++) {
            sla_int li = want[t] - D->row_start;
            if (li < 0 || li >= D->nlocal) { /* cannot happen unless the ranks disagree on the blocks */
                st = sla__error(ctx, SLA_ERR_INDEX, "halo plan: rank %d asked for row %lld it does not own",
                                D->rank, (long long)want[t]);
                break;
            }
            h->send_idx[t] = (int32_t)li;
        }
    }
    st = sla__dist_agree(ctx, D->comm, st);
done:
    sla__free(a, need);
    sla__free(a, give);
    sla__free(a, sdisp);
    sla__free(a, rdisp);
    sla__free(a, want);
    return st;
}

/* Everything after dist_new: blocks, ghosts, halo plan. */
static sla_status dist_build(sla_ctx *ctx, sla_dist_matrix *D, sla_int nlocal, const sla_int *rowptr,
                             const sla_int *colind, const double *vals)
{
    sla_status st = check_shape(ctx, D->rank, nlocal, rowptr, colind);
    if (!st) {
        D->starts = sla__malloc(&D->alloc, (size_t)D->size + 1, sizeof(sla_int));
        if (!D->starts) st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the row blocks");
    }
    if ((st = sla__dist_agree(ctx, D->comm, st))) return st;
    int64_t nl = nlocal;
    int rc = MPI_Allgather(&nl, 1, MPI_INT64_T, D->starts + 1, 1, MPI_INT64_T, D->comm);
    if (rc != MPI_SUCCESS) return sla__mpi_error(ctx, rc, "MPI_Allgather of the row counts");
    D->starts[0] = 0;
    for (int q = 0; q < D->size; q++) D->starts[q + 1] += D->starts[q];
    D->n = D->starts[D->size];
    D->nlocal = nlocal;
    D->row_start = D->starts[D->rank];
    st = check_entries(ctx, D->rank, D->n, nlocal, rowptr, colind, vals);
    if (!st) st = split_blocks(ctx, D, rowptr, colind, vals);
    if ((st = sla__dist_agree(ctx, D->comm, st))) return st;
    return build_halo(ctx, D);
}

sla_status sla_dist_matrix_create(sla_ctx *ctx, MPI_Comm comm, sla_int nlocal, const sla_int *rowptr,
                                  const sla_int *colind, const double *vals, sla_dist_matrix **out)
{
    if (out) *out = NULL;
    sla_dist_matrix *D = NULL;
    sla_status st = dist_new(ctx, comm, &D);
    if (st) return st;
    st = out ? SLA_OK : sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_matrix_create: out is NULL");
    if (!st) st = dist_build(ctx, D, nlocal, rowptr, colind, vals);
    else st = sla__dist_agree(ctx, D->comm, st);
    if (st) {
        sla_dist_matrix_destroy(&D);
        return st;
    }
    *out = D;
    return sla__ok(ctx, SLA_OK);
}

/* ---- partitioning a matrix held on one rank ------------------------------------ */

#ifdef SLA_HAVE_METIS
#include <metis.h>

/* part[i] in [0, P) for every row, from METIS on the graph of A + A^T
 * without its diagonal. */
static sla_status metis_parts(sla_ctx *ctx, const sla_matrix *A, int P, idx_t *part)
{
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_int n = A->nrows, nnz = A->nnz;
    if (n > INT32_MAX || 2 * nnz > INT32_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "metis partition: the graph is too large for 32-bit METIS");
    idx_t *xadj = sla__calloc(&a, (size_t)n + 1, sizeof(idx_t));
    idx_t *adj = sla__malloc(&a, (size_t)(2 * nnz), sizeof(idx_t));
    idx_t *fill = sla__malloc(&a, (size_t)n, sizeof(idx_t));
    sla_status st = SLA_OK;
    if (!xadj || !adj || !fill) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "metis partition: out of memory for the graph");
        goto done;
    }
    for (sla_int i = 0; i < n; i++)
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (A->colind[p] != i) {
                xadj[i + 1]++;
                xadj[A->colind[p] + 1]++;
            }
    for (sla_int i = 0; i < n; i++) xadj[i + 1] += xadj[i];
    for (sla_int i = 0; i < n; i++) fill[i] = xadj[i];
    for (sla_int i = 0; i < n; i++)
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            idx_t j = A->colind[p];
            if (j != i) {
                adj[fill[i]++] = j;
                adj[fill[j]++] = (idx_t)i;
            }
        }
    /* sort each list and drop repeats (an entry and its transpose) */
    idx_t w = 0;
    for (sla_int i = 0; i < n; i++) {
        idx_t b = xadj[i], e = xadj[i + 1];
        for (idx_t p = b + 1; p < e; p++) { /* insertion sort: rows are short */
            idx_t v = adj[p], q = p;
            while (q > b && adj[q - 1] > v) {
                adj[q] = adj[q - 1];
                q--;
            }
            adj[q] = v;
        }
        xadj[i] = w;
        for (idx_t p = b; p < e; p++)
            if (p == b || adj[p] != adj[p - 1]) adj[w++] = adj[p];
    }
    xadj[n] = w;
    idx_t nv = (idx_t)n, ncon = 1, np = P, objval = 0;
    idx_t opt[METIS_NOPTIONS];
    METIS_SetDefaultOptions(opt);
    opt[METIS_OPTION_SEED] = 1;
    int rc = METIS_PartGraphKway(&nv, &ncon, xadj, adj, NULL, NULL, NULL, &np, NULL, NULL, opt, &objval,
                                 part);
    if (rc != METIS_OK)
        st = sla__error(ctx, rc == METIS_ERROR_MEMORY ? SLA_ERR_NOMEM : SLA_ERR_ARGUMENT,
                        "metis partition: METIS_PartGraphKway failed (%d)", rc);
done:
    sla__free(&a, xadj);
    sla__free(&a, adj);
    sla__free(&a, fill);
    return st;
}
#endif

typedef struct {
    sla_int col, src;
} colpos;

static int cmp_colpos(const void *a, const void *b)
{
    sla_int x = ((const colpos *)a)->col, y = ((const colpos *)b)->col;
    return (x > y) - (x < y);
}

/* On root: the new numbering. perm[new] = old, inv[old] = new, starts. */
static sla_status root_partition(sla_ctx *ctx, const sla_matrix *A, int P, sla_dist_partition part,
                                 sla_int *perm, sla_int *inv, sla_int *starts)
{
    sla_int n = A->nrows;
    for (int q = 0; q <= P; q++) starts[q] = n * q / P;
    for (sla_int i = 0; i < n; i++) perm[i] = inv[i] = i;
    if (part == SLA_PART_BLOCK || P == 1) return SLA_OK;
#ifdef SLA_HAVE_METIS
    sla_allocator a = sla__ctx_alloc(ctx);
    idx_t *pt = sla__malloc(&a, (size_t)n, sizeof(idx_t));
    if (!pt) return sla__error(ctx, SLA_ERR_NOMEM, "metis partition: out of memory");
    sla_status st = metis_parts(ctx, A, P, pt);
    if (!st) {
        for (int q = 0; q <= P; q++) starts[q] = 0;
        for (sla_int i = 0; i < n; i++) starts[pt[i] + 1]++;
        for (int q = 0; q < P; q++) {
            if (starts[q + 1] == 0) {
                st = sla__error(ctx, SLA_ERR_DIMENSION, "metis partition: part %d of %d is empty (too few rows)",
                                q, P);
                break;
            }
        }
        for (int q = 0; q < P; q++) starts[q + 1] += starts[q];
        if (!st) { /* rows of part 0 first, each part in the original order */
            sla_int *next = inv; /* reuse inv as the fill counters, then rebuild it */
            for (int q = 0; q < P; q++) next[q] = starts[q];
            for (sla_int i = 0; i < n; i++) perm[next[pt[i]]++] = i;
            for (sla_int k = 0; k < n; k++) inv[perm[k]] = k;
        }
    }
    sla__free(&a, pt);
    return st;
#else
    (void)inv;
    return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                      "partition metis is not available in this build: METIS was not found when sla "
                      "was configured (apt-get install libmetis-dev and reconfigure)");
#endif
}

/* On root: the rows of rank q in the new numbering (columns renumbered and
 * sorted), with each entry's position in A. */
static void root_rows(const sla_matrix *A, const sla_int *perm, const sla_int *inv, bool permuted,
                      sla_int r0, sla_int r1, sla_int *rowptr, sla_int *colind, double *vals,
                      sla_int *src, colpos *tmp)
{
    sla_int k = 0;
    rowptr[0] = 0;
    for (sla_int i = r0; i < r1; i++) {
        sla_int old = perm[i], b = A->rowptr[old], e = A->rowptr[old + 1];
        for (sla_int p = b; p < e; p++) {
            tmp[p - b].col = inv[A->colind[p]];
            tmp[p - b].src = p;
        }
        if (permuted) qsort(tmp, (size_t)(e - b), sizeof *tmp, cmp_colpos);
        for (sla_int t = 0; t < e - b; t++) {
            colind[k] = tmp[t].col;
            src[k] = tmp[t].src;
            vals[k] = sla__val(A, 0, tmp[t].src);
            k++;
        }
        rowptr[i - r0 + 1] = k;
    }
}

static sla_status check_root_matrix(sla_ctx *ctx, const sla_matrix *A, int P)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_matrix_scatter: A is NULL on the root");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "sla_dist_matrix_scatter: A is %lld x %lld, not square",
                          (long long)A->nrows, (long long)A->ncols);
    if (A->nrows < P)
        return sla__error(ctx, SLA_ERR_DIMENSION,
                          "sla_dist_matrix_scatter: %lld rows cannot give each of %d ranks a row",
                          (long long)A->nrows, P);
    return sla_matrix_check_values(ctx, A, 0);
}

sla_status sla_dist_matrix_scatter(sla_ctx *ctx, MPI_Comm comm, int root, const sla_matrix *A,
                                   sla_dist_partition part, sla_dist_matrix **out)
{
    if (out) *out = NULL;
    sla_dist_matrix *D = NULL;
    sla_status st = dist_new(ctx, comm, &D);
    if (st) return st;
    sla_allocator al = D->alloc;
    int P = D->size, me = D->rank;
    sla_int *perm = NULL, *inv = NULL, *starts = NULL, *rowptr = NULL, *colind = NULL, *src = NULL;
    double *vals = NULL;
    colpos *tmp = NULL;
    sla_int n = 0, nl = 0, nnz = 0;
    sla_int *counts = NULL, *qrp = NULL, *qci = NULL, *qsrc = NULL;
    double *qv = NULL;
    int rc;

    if (!out) st = sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_matrix_scatter: out is NULL");
    else if (root < 0 || root >= P)
        st = sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_matrix_scatter: root %d is not a rank of [0, %d)",
                        root, P);
    else if ((int)part != SLA_PART_BLOCK && (int)part != SLA_PART_METIS)
        st = sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_matrix_scatter: unknown partition %d", (int)part);
    if ((st = sla__dist_agree(ctx, D->comm, st))) goto fail;
    starts = sla__malloc(&al, (size_t)P + 1, sizeof(sla_int));
    if (!starts) st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the row blocks");
    if (!st && me == root) {
        st = check_root_matrix(ctx, A, P);
        if (!st) {
            n = A->nrows;
            perm = sla__malloc(&al, (size_t)n, sizeof(sla_int));
            inv = sla__malloc(&al, (size_t)(n > P ? n : P), sizeof(sla_int));
            sla_int maxrow = 0;
            for (sla_int i = 0; i < n; i++)
                if (A->rowptr[i + 1] - A->rowptr[i] > maxrow) maxrow = A->rowptr[i + 1] - A->rowptr[i];
            tmp = sla__malloc(&al, (size_t)maxrow, sizeof *tmp);
            if (!perm || !inv || !tmp) st = sla__error(ctx, SLA_ERR_NOMEM, "sla_dist_matrix_scatter: out of memory");
        }
        if (!st) st = root_partition(ctx, A, P, part, perm, inv, starts);
    }
    if ((st = sla__dist_agree(ctx, D->comm, st))) goto fail;
    if ((rc = MPI_Bcast(starts, P + 1, MPI_INT64_T, root, D->comm)) != MPI_SUCCESS) {
        st = sla__mpi_error(ctx, rc, "MPI_Bcast of the row blocks");
        goto fail;
    }
    n = starts[P];
    nl = starts[me + 1] - starts[me];
    /* entry counts per rank, then every rank allocates before data moves */
    if (me == root) { /* the root also allocates its send buffers now: none later */
        counts = sla__malloc(&al, (size_t)P, sizeof(sla_int));
        sla_int maxn = 0, maxnnz = 0;
        if (counts)
            for (int q = 0; q < P; q++) {
                counts[q] = 0;
                for (sla_int i = starts[q]; i < starts[q + 1]; i++)
                    counts[q] += A->rowptr[perm[i] + 1] - A->rowptr[perm[i]];
                if (starts[q + 1] - starts[q] > maxn) maxn = starts[q + 1] - starts[q];
                if (counts[q] > maxnnz) maxnnz = counts[q];
            }
        qrp = sla__malloc(&al, (size_t)maxn + 1, sizeof(sla_int));
        qci = sla__malloc(&al, (size_t)maxnnz, sizeof(sla_int));
        qsrc = sla__malloc(&al, (size_t)maxnnz, sizeof(sla_int));
        qv = sla__malloc(&al, (size_t)maxnnz, sizeof(double));
        if (!counts || !qrp || !qci || !qsrc || !qv)
            st = sla__error(ctx, SLA_ERR_NOMEM, "sla_dist_matrix_scatter: out of memory on the root");
    }
    if ((st = sla__dist_agree(ctx, D->comm, st))) goto fail;
    rc = MPI_Scatter(counts, 1, MPI_INT64_T, &nnz, 1, MPI_INT64_T, root, D->comm);
    sla__free(&al, counts);
    counts = NULL;
    if (rc != MPI_SUCCESS) {
        st = sla__mpi_error(ctx, rc, "MPI_Scatter of the entry counts");
        goto fail;
    }
    if (nnz > INT_MAX) st = sla__error(ctx, SLA_ERR_TOO_LARGE, "rank %d would receive %lld entries", me,
                                       (long long)nnz);
    if (!st) {
        rowptr = sla__malloc(&al, (size_t)nl + 1, sizeof(sla_int));
        colind = sla__malloc(&al, (size_t)nnz, sizeof(sla_int));
        src = sla__malloc(&al, (size_t)nnz, sizeof(sla_int));
        vals = sla__malloc(&al, (size_t)nnz, sizeof(double));
        if (!rowptr || !colind || !src || !vals)
            st = sla__error(ctx, SLA_ERR_NOMEM, "sla_dist_matrix_scatter: out of memory on rank %d", me);
    }
    if ((st = sla__dist_agree(ctx, D->comm, st))) goto fail;
    if (me == root) {
        bool permuted = part == SLA_PART_METIS && P > 1;
        rc = MPI_SUCCESS;
        for (int q = 0; q < P && rc == MPI_SUCCESS; q++) {
            sla_int qn = starts[q + 1] - starts[q];
            if (q == root) {
                root_rows(A, perm, inv, permuted, starts[q], starts[q + 1], rowptr, colind, vals, src, tmp);
                continue;
            }
            root_rows(A, perm, inv, permuted, starts[q], starts[q + 1], qrp, qci, qv, qsrc, tmp);
            int qnnz = (int)qrp[qn];
            rc = MPI_Send(qrp, (int)(qn + 1), MPI_INT64_T, q, 1, D->comm);
            if (!rc) rc = MPI_Send(qci, qnnz, MPI_INT64_T, q, 2, D->comm);
            if (!rc) rc = MPI_Send(qsrc, qnnz, MPI_INT64_T, q, 3, D->comm);
            if (!rc) rc = MPI_Send(qv, qnnz, MPI_DOUBLE, q, 4, D->comm);
            if (!rc) rc = MPI_Send(perm + starts[q], (int)qn, MPI_INT64_T, q, 5, D->comm);
        }
        if (rc != MPI_SUCCESS) {
            st = sla__mpi_error(ctx, rc, "MPI_Send of the rows");
            goto fail;
        }
    } else {
        MPI_Status ms;
        rc = MPI_Recv(rowptr, (int)(nl + 1), MPI_INT64_T, root, 1, D->comm, &ms);
        if (!rc) rc = MPI_Recv(colind, (int)nnz, MPI_INT64_T, root, 2, D->comm, &ms);
        if (!rc) rc = MPI_Recv(src, (int)nnz, MPI_INT64_T, root, 3, D->comm, &ms);
        if (!rc) rc = MPI_Recv(vals, (int)nnz, MPI_DOUBLE, root, 4, D->comm, &ms);
        if (rc != MPI_SUCCESS) {
            st = sla__mpi_error(ctx, rc, "MPI_Recv of the rows");
            goto fail;
        }
    }
    if ((st = dist_build(ctx, D, nl, rowptr, colind, vals))) goto fail;
    /* original row numbers and source positions */
    if (me == root) {
        for (sla_int i = 0; i < nl; i++) D->global_rows[i] = perm[starts[me] + i];
    } else {
        MPI_Status ms;
        rc = MPI_Recv(D->global_rows, (int)nl, MPI_INT64_T, root, 5, D->comm, &ms);
        if (rc != MPI_SUCCESS) st = sla__mpi_error(ctx, rc, "MPI_Recv of the row numbers");
    }
    if (!st) {
        D->src_pos = src;
        src = NULL;
        D->src_nnz = 0;
        if (me == root) D->src_nnz = A->nnz;
        if ((rc = MPI_Bcast(&D->src_nnz, 1, MPI_INT64_T, root, D->comm)) != MPI_SUCCESS)
            st = sla__mpi_error(ctx, rc, "MPI_Bcast");
    }
    if ((st = sla__dist_agree(ctx, D->comm, st))) goto fail;
    sla__free(&al, perm);
    sla__free(&al, inv);
    sla__free(&al, starts);
    sla__free(&al, tmp);
    sla__free(&al, rowptr);
    sla__free(&al, colind);
    sla__free(&al, vals);
    sla__free(&al, qrp);
    sla__free(&al, qci);
    sla__free(&al, qsrc);
    sla__free(&al, qv);
    *out = D;
    return sla__ok(ctx, SLA_OK);
fail:
    sla__free(&al, perm);
    sla__free(&al, inv);
    sla__free(&al, starts);
    sla__free(&al, tmp);
    sla__free(&al, rowptr);
    sla__free(&al, colind);
    sla__free(&al, src);
    sla__free(&al, vals);
    sla__free(&al, qrp);
    sla__free(&al, qci);
    sla__free(&al, qsrc);
    sla__free(&al, qv);
    sla__free(&al, counts);
    sla_dist_matrix_destroy(&D);
    return st;
}

/* ---- accessors ------------------------------------------------------------------ */

sla_int sla_dist_matrix_n(const sla_dist_matrix *D) { return D ? D->n : 0; }
sla_int sla_dist_matrix_nlocal(const sla_dist_matrix *D) { return D ? D->nlocal : 0; }
sla_int sla_dist_matrix_row_start(const sla_dist_matrix *D) { return D ? D->row_start : 0; }
sla_int sla_dist_matrix_nnz_local(const sla_dist_matrix *D) { return D ? D->nnz_local : 0; }
sla_int sla_dist_matrix_nghost(const sla_dist_matrix *D) { return D ? D->nghost : 0; }
int sla_dist_matrix_neighbours(const sla_dist_matrix *D)
{
    if (!D) return 0;
    /* ranks we send to or receive from (both lists are sorted) */
    int k = 0, a = 0, b = 0;
    const sla__halo *h = &D->halo;
    while (a < h->nrecv || b < h->nsend) {
        if (b >= h->nsend || (a < h->nrecv && h->recv_rank[a] < h->send_rank[b])) a++;
        else if (a >= h->nrecv || h->send_rank[b] < h->recv_rank[a]) b++;
        else {
            a++;
            b++;
        }
        k++;
    }
    return k;
}
const sla_int *sla_dist_matrix_global_rows(const sla_dist_matrix *D) { return D ? D->global_rows : NULL; }
const sla_int *sla_dist_matrix_ghosts(const sla_dist_matrix *D) { return D ? D->ghosts : NULL; }

void sla_dist_matrix_get_pattern(const sla_dist_matrix *D, sla_int *rowptr, sla_int *colind)
{
    if (!D) return;
    if (rowptr) memcpy(rowptr, D->rowptr, ((size_t)D->nlocal + 1) * sizeof(sla_int));
    if (colind && D->nnz_local) memcpy(colind, D->colind, (size_t)D->nnz_local * sizeof(sla_int));
}

void sla_dist_matrix_get_values(const sla_dist_matrix *D, double *vals)
{
    if (!D || !vals) return;
    const double *dv = D->diag->values, *ov = D->offd->values;
    for (sla_int k = 0; k < D->nnz_local; k++) {
        sla_int p = D->pos[k];
        vals[k] = p >= 0 ? dv[p] : ov[-1 - p];
    }
}

sla_status sla_dist_matrix_set_values(sla_ctx *ctx, sla_dist_matrix *D, const double *vals)
{
    if (!D) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_matrix_set_values: D is NULL");
    sla_status st = SLA_OK;
    if (!vals && D->nnz_local) st = sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_matrix_set_values: vals is NULL");
    for (sla_int k = 0; !st && k < D->nnz_local; k++)
        if (!isfinite(vals[k]))
            st = sla__error(ctx, SLA_ERR_VALUE, "sla_dist_matrix_set_values: rank %d, entry %lld is %g",
                            D->rank, (long long)k, vals[k]);
    if ((st = sla__dist_agree(ctx, D->comm, st))) return st;
    double *dv = D->diag->values, *ov = D->offd->values;
    for (sla_int k = 0; k < D->nnz_local; k++) {
        sla_int p = D->pos[k];
        if (p >= 0) dv[p] = vals[k];
        else ov[-1 - p] = vals[k];
    }
    return sla__ok(ctx, SLA_OK);
}

void sla_dist_matrix_stats(const sla_dist_matrix *D, sla_dist_stats *stats)
{
    if (!stats) return;
    if (D) *stats = D->stats;
    else memset(stats, 0, sizeof *stats);
}

void sla_dist_matrix_stats_reset(sla_dist_matrix *D)
{
    if (D) memset(&D->stats, 0, sizeof D->stats);
}

/* ---- vectors and values between root and the distributed numbering --------------- */

/* Counts and displacements (in entries) of every rank's block on root. */
static sla_status block_layout(sla_ctx *ctx, const sla_dist_matrix *D, const sla_int *per_rank, int **cnt,
                               int **dsp)
{
    *cnt = sla__malloc(&D->alloc, (size_t)D->size, sizeof(int));
    *dsp = sla__malloc(&D->alloc, (size_t)D->size, sizeof(int));
    if (!*cnt || !*dsp) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for a gather layout");
    sla_int off = 0;
    for (int q = 0; q < D->size; q++) {
        if (per_rank[q] > INT_MAX || off > INT_MAX)
            return sla__error(ctx, SLA_ERR_TOO_LARGE, "gather/scatter: more than 2^31-1 entries");
        (*cnt)[q] = (int)per_rank[q];
        (*dsp)[q] = (int)off;
        off += per_rank[q];
    }
    return SLA_OK;
}

/* Root gets everyone's count of a local quantity. */
static sla_status gather_counts(sla_ctx *ctx, const sla_dist_matrix *D, int root, sla_int mine,
                                sla_int *all)
{
    int64_t m = mine;
    int rc = MPI_Allgather(&m, 1, MPI_INT64_T, all, 1, MPI_INT64_T, D->comm);
    (void)root;
    return rc == MPI_SUCCESS ? SLA_OK : sla__mpi_error(ctx, rc, "MPI_Allgather of counts");
}

/* dir 0: scatter x_global -> x_local; dir 1: gather x_local -> x_global. */
static sla_status move_vector(sla_ctx *ctx, const sla_dist_matrix *D, int root, const double *in,
                              double *out, int dir)
{
    if (!D) return sla__error(ctx, SLA_ERR_ARGUMENT, "distributed vector: D is NULL");
    sla_allocator al = D->alloc;
    int *cnt = NULL, *dsp = NULL;
    sla_int *ids = NULL, *nls = NULL;
    double *buf = NULL;
    sla_status st = SLA_OK;
    bool is_root = D->rank == root;
    if (root < 0 || root >= D->size) st = sla__error(ctx, SLA_ERR_ARGUMENT, "root %d out of range", root);
    else if ((dir == 0 && ((is_root && !in) || !out)) || (dir == 1 && (!in || (is_root && !out))))
        st = sla__error(ctx, SLA_ERR_ARGUMENT, "distributed vector: NULL vector on rank %d", D->rank);
    if (!st) {
        nls = sla__malloc(&al, (size_t)D->size, sizeof(sla_int));
        if (!nls) st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory");
        else
            for (int q = 0; q < D->size; q++) nls[q] = D->starts[q + 1] - D->starts[q];
    }
    if (!st && is_root) {
        st = block_layout(ctx, D, nls, &cnt, &dsp);
        if (!st) {
            ids = sla__malloc(&al, (size_t)D->n, sizeof(sla_int));
            buf = sla__malloc(&al, (size_t)D->n, sizeof(double));
            if (!ids || !buf) st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory for a %lld-vector", (long long)D->n);
        }
    }
    if ((st = sla__dist_agree(ctx, D->comm, st))) goto done;
    int rc = MPI_Gatherv(D->global_rows, (int)D->nlocal, MPI_INT64_T, ids, cnt, dsp, MPI_INT64_T, root, D->comm);
    if (rc == MPI_SUCCESS) {
        if (dir == 0) {
            if (is_root)
                for (sla_int k = 0; k < D->n; k++) buf[k] = in[ids[k]];
            rc = MPI_Scatterv(buf, cnt, dsp, MPI_DOUBLE, out, (int)D->nlocal, MPI_DOUBLE, root, D->comm);
        } else {
            rc = MPI_Gatherv(in, (int)D->nlocal, MPI_DOUBLE, buf, cnt, dsp, MPI_DOUBLE, root, D->comm);
            if (rc == MPI_SUCCESS && is_root)
                for (sla_int k = 0; k < D->n; k++) out[ids[k]] = buf[k];
        }
    }
    if (rc != MPI_SUCCESS) st = sla__mpi_error(ctx, rc, dir ? "gather of a vector" : "scatter of a vector");
done:
    sla__free(&al, cnt);
    sla__free(&al, dsp);
    sla__free(&al, ids);
    sla__free(&al, nls);
    sla__free(&al, buf);
    return st ? st : sla__ok(ctx, SLA_OK);
}

sla_status sla_dist_scatter_vector(sla_ctx *ctx, const sla_dist_matrix *D, int root, const double *x_global,
                                   double *x_local)
{
    return move_vector(ctx, D, root, x_global, x_local, 0);
}

sla_status sla_dist_gather_vector(sla_ctx *ctx, const sla_dist_matrix *D, int root, const double *x_local,
                                  double *x_global)
{
    return move_vector(ctx, D, root, x_local, x_global, 1);
}

sla_status sla_dist_gather_values(sla_ctx *ctx, const sla_dist_matrix *D, int root, const double *vals_local,
                                  double *vals_global)
{
    if (!D) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_gather_values: D is NULL");
    sla_allocator al = D->alloc;
    bool is_root = D->rank == root;
    int *cnt = NULL, *dsp = NULL;
    sla_int *all = NULL, *pos = NULL;
    double *buf = NULL;
    sla_status st = SLA_OK;
    if (root < 0 || root >= D->size) st = sla__error(ctx, SLA_ERR_ARGUMENT, "root %d out of range", root);
    else if ((!vals_local && D->nnz_local) || (is_root && !vals_global))
        st = sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_gather_values: NULL array on rank %d", D->rank);
    if (!st) {
        all = sla__malloc(&al, (size_t)D->size, sizeof(sla_int));
        if (!all) st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory");
    }
    if ((st = sla__dist_agree(ctx, D->comm, st))) goto done;
    if ((st = gather_counts(ctx, D, root, D->nnz_local, all))) goto done;
    sla_int total = 0;
    for (int q = 0; q < D->size; q++) total += all[q];
    if (is_root) {
        st = block_layout(ctx, D, all, &cnt, &dsp);
        if (!st) {
            buf = sla__malloc(&al, (size_t)total, sizeof(double));
            pos = sla__malloc(&al, (size_t)total, sizeof(sla_int));
            if (!buf || !pos) st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory for %lld values", (long long)total);
        }
    }
    if ((st = sla__dist_agree(ctx, D->comm, st))) goto done;
    int rc = MPI_Gatherv(vals_local, (int)D->nnz_local, MPI_DOUBLE, buf, cnt, dsp, MPI_DOUBLE, root, D->comm);
    if (rc == MPI_SUCCESS && D->src_pos)
        rc = MPI_Gatherv(D->src_pos, (int)D->nnz_local, MPI_INT64_T, pos, cnt, dsp, MPI_INT64_T, root, D->comm);
    if (rc != MPI_SUCCESS) {
        st = sla__mpi_error(ctx, rc, "gather of values");
        goto done;
    }
    if (is_root) {
        if (D->src_pos)
            for (sla_int k = 0; k < total; k++) vals_global[pos[k]] = buf[k];
        else
            memcpy(vals_global, buf, (size_t)total * sizeof(double));
    }
done:
    sla__free(&al, cnt);
    sla__free(&al, dsp);
    sla__free(&al, all);
    sla__free(&al, pos);
    sla__free(&al, buf);
    return st ? st : sla__ok(ctx, SLA_OK);
}
