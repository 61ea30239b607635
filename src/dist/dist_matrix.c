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
    return sla__error(ctx, SLA_ERR_COMM, "%s: MPI error %d (%s)", what, rc, s);
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
    sla__free(&a, D->orows);
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
sla_status sla__dist_new(sla_ctx *ctx, MPI_Comm comm, sla_dist_matrix **out)
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

/* Only the values (rows the library made: their columns are right by
 * construction; overflow can still make a value infinite). */
static sla_status check_finite(sla_ctx *ctx, int rank, sla_int nnz, const double *vals)
{
    if (!vals) return SLA_OK;
    bool bad = false;
    for (sla_int p = 0; p < nnz; p++) bad |= !isfinite(vals[p]);
    if (!bad) return SLA_OK;
    for (sla_int p = 0; p < nnz; p++)
        if (!isfinite(vals[p]))
            return sla__error(ctx, SLA_ERR_VALUE, "distributed matrix: rank %d, entry %lld is %g, not finite "
                              "(an overflow)", rank, (long long)p, vals[p]);
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
                               const sla_int *colind, const double *vals, sla_int **take_rp,
                               sla_int **take_ci)
{
    const sla_allocator *a = &D->alloc;
    sla_int nl = D->nlocal, nnz = rowptr[nl], r0 = D->row_start, r1 = r0 + nl;
    D->nnz_local = nnz;
    if (take_rp) { /* the caller's arrays become D's (see sla__dist_build_owned) */
        D->rowptr = *take_rp;
        D->colind = *take_ci;
        *take_rp = *take_ci = NULL;
    } else {
        D->rowptr = sla__malloc(a, (size_t)nl + 1, sizeof(sla_int));
        D->colind = sla__malloc(a, (size_t)nnz, sizeof(sla_int));
    }
    D->pos = sla__malloc(a, (size_t)nnz, sizeof(sla_int));
    D->global_rows = sla__malloc(a, (size_t)nl, sizeof(sla_int));
    sla_int *drp = sla__calloc(a, (size_t)nl + 1, sizeof(sla_int));
    sla_int *orp = sla__calloc(a, (size_t)nl + 1, sizeof(sla_int));
    if (!D->rowptr || !D->colind || !D->pos || !D->global_rows || !drp || !orp) goto nomem;
    if (!take_rp) {
        memcpy(D->rowptr, rowptr, ((size_t)nl + 1) * sizeof(sla_int));
        if (nnz) memcpy(D->colind, colind, (size_t)nnz * sizeof(sla_int));
    }
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
    const sla_int *op = D->offd->rowptr;
    D->norows = 0;
    for (sla_int i = 0; i < nl; i++) D->norows += op[i + 1] > op[i];
    D->orows = sla__malloc(a, (size_t)(D->norows > 0 ? D->norows : 1), sizeof *D->orows);
    if (!D->orows) return sla__error(ctx, SLA_ERR_NOMEM, "distributed matrix: out of memory on rank %d", D->rank);
    for (sla_int i = 0, m = 0; i < nl; i++)
        if (op[i + 1] > op[i]) D->orows[m++] = (int32_t)i;
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

/* Everything after dist_new: blocks, ghosts, halo plan. trusted: rows
 * the library made (see sla__dist_build_owned); take_rp, take_ci: the
 * arrays D takes over, or NULL (copies). */
static sla_status build(sla_ctx *ctx, sla_dist_matrix *D, sla_int nlocal, const sla_int *rowptr,
                        const sla_int *colind, const double *vals, bool trusted, sla_int **take_rp,
                        sla_int **take_ci)
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
#ifdef NDEBUG
    bool all = !trusted;
#else
    bool all = true; /* debug builds check the library's own rows too */
#endif
    st = all ? check_entries(ctx, D->rank, D->n, nlocal, rowptr, colind, vals)
             : check_finite(ctx, D->rank, rowptr[nlocal], vals);
    if (!st) st = split_blocks(ctx, D, rowptr, colind, vals, take_rp, take_ci);
    if ((st = sla__dist_agree(ctx, D->comm, st))) return st;
    return build_halo(ctx, D);
}

sla_status sla__dist_build(sla_ctx *ctx, sla_dist_matrix *D, sla_int nlocal, const sla_int *rowptr,
                           const sla_int *colind, const double *vals)
{
    return build(ctx, D, nlocal, rowptr, colind, vals, false, NULL, NULL);
}

sla_status sla__dist_build_owned(sla_ctx *ctx, sla_dist_matrix *D, sla_int nlocal, const sla_allocator *a,
                                 sla_int **rowptr, sla_int **colind, const double *vals)
{
    bool same = a->malloc_fn == D->alloc.malloc_fn && a->free_fn == D->alloc.free_fn &&
                a->user == D->alloc.user;
    return build(ctx, D, nlocal, *rowptr, *colind, vals, true, same ? rowptr : NULL,
                 same ? colind : NULL);
}

sla_status sla_dist_matrix_create(sla_ctx *ctx, MPI_Comm comm, sla_int nlocal, const sla_int *rowptr,
                                  const sla_int *colind, const double *vals, sla_dist_matrix **out)
{
    if (out) *out = NULL;
    sla_dist_matrix *D = NULL;
    sla_status st = sla__dist_new(ctx, comm, &D);
    if (st) return st;
    st = out ? SLA_OK : sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_matrix_create: out is NULL");
    if (!st) st = sla__dist_build(ctx, D, nlocal, rowptr, colind, vals);
    else st = sla__dist_agree(ctx, D->comm, st);
    if (st) {
        sla_dist_matrix_destroy(&D);
        return st;
    }
    *out = D;
    return sla__ok(ctx, SLA_OK);
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

