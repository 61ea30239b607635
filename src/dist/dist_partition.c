/* Partitioning a matrix held on one rank (contiguous blocks or METIS) and
 * sending each rank its rows; the rows then go through the same build as
 * rows assembled per rank. */
#include "dist_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

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
    if (sla__require_real(ctx, A, "sla_dist_matrix_scatter")) return SLA_ERR_UNSUPPORTED;
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
    sla_status st = sla__dist_new(ctx, comm, &D);
    if (st) return st;
    sla_allocator al = D->alloc;
    int P = D->size, me = D->rank;
    sla_int *perm = NULL, *inv = NULL, *starts = NULL, *rowptr = NULL, *colind = NULL, *src = NULL;
    double *vals = NULL;
    colpos *tmp = NULL;
    sla_int n = 0, nl = 0, nnz = 0;
    sla_int *counts = NULL, *qrp = NULL, *qci = NULL, *qsrc = NULL, *grows = NULL;
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
        if (me != root) grows = sla__malloc(&al, (size_t)nl + 1, sizeof(sla_int));
        if (!rowptr || !colind || !src || !vals || (me != root && !grows))
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
        /* the row numbers too, now: the root's five sends complete only
         * when they are received (a large message waits for its receive),
         * so none may be left for after the collectives of the build */
        if (!rc) rc = MPI_Recv(grows, (int)nl, MPI_INT64_T, root, 5, D->comm, &ms);
        if (rc != MPI_SUCCESS) {
            st = sla__mpi_error(ctx, rc, "MPI_Recv of the rows");
            goto fail;
        }
    }
    if ((st = sla__dist_build(ctx, D, nl, rowptr, colind, vals))) goto fail;
    /* original row numbers and source positions */
    if (me == root) {
        for (sla_int i = 0; i < nl; i++) D->global_rows[i] = perm[starts[me] + i];
    } else {
        for (sla_int i = 0; i < nl; i++) D->global_rows[i] = grows[i];
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
    *out = D;
    D = NULL;
fail: /* and success: D is then NULL */
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
    sla__free(&al, grows);
    sla_dist_matrix_destroy(&D);
    return st ? st : sla__ok(ctx, SLA_OK);
}
