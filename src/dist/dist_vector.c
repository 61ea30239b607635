/* Vectors and value arrays between one rank's global arrays and the
 * distributed numbering. */
#include "dist_internal.h"

#include <limits.h>
#include <string.h>

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
