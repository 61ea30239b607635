/* Distributed lists: many small systems with different patterns (a batch of
 * graphs) spread over the ranks, each solved whole by one rank with the
 * single-process solvers, in one collective call. */
#include "dist_internal.h"

#include <stdlib.h>
#include <string.h>

enum { TAG_LIST = 711 };

void sla_dist_list_free(sla_ctx *ctx, sla_int local_count, sla_matrix ***local, sla_int **index)
{
    if (local && *local) {
        for (sla_int k = 0; k < local_count; k++) sla_matrix_destroy(&(*local)[k]);
        sla_free(ctx, *local);
        *local = NULL;
    }
    if (index) {
        sla_free(ctx, *index);
        *index = NULL;
    }
}

static sla_status check_list(sla_ctx *ctx, sla_int count, const sla_matrix *const *mats)
{
    if (count < 0) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_list_scatter: count %lld < 0", (long long)count);
    if (count > 0 && !mats) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_list_scatter: mats is NULL on the root");
    for (sla_int i = 0; i < count; i++) {
        if (!mats[i]) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_list_scatter: matrix %lld is NULL", (long long)i);
        if (sla__is_complex(mats[i]))
            return sla__error(ctx, SLA_ERR_UNSUPPORTED, "sla_dist_list_scatter: matrix %lld is complex (%s); the "
                              "distributed layer takes real matrices", (long long)i, sla_dtype_name(mats[i]->dtype));
        if (mats[i]->nrows != mats[i]->ncols)
            return sla__error(ctx, SLA_ERR_DIMENSION, "sla_dist_list_scatter: matrix %lld is %lld x %lld, not square",
                              (long long)i, (long long)mats[i]->nrows, (long long)mats[i]->ncols);
        if (mats[i]->nnz > INT32_MAX || mats[i]->nrows >= INT32_MAX)
            return sla__error(ctx, SLA_ERR_TOO_LARGE, "sla_dist_list_scatter: matrix %lld is too large to send",
                              (long long)i);
    }
    return SLA_OK;
}

/* Largest first onto the least loaded rank (load = rows + entries). */
static void assign(sla_int count, const int64_t *sizes, int P, int64_t *owner, const sla_allocator *a,
                   sla_int *order, int64_t *load)
{
    for (sla_int i = 0; i < count; i++) order[i] = i;
    for (sla_int i = 1; i < count; i++) { /* insertion sort by decreasing size: lists are modest */
        sla_int v = order[i], j = i;
        int64_t sv = sizes[2 * v] + sizes[2 * v + 1];
        while (j > 0 && sizes[2 * order[j - 1]] + sizes[2 * order[j - 1] + 1] < sv) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
    (void)a;
    for (int q = 0; q < P; q++) load[q] = 0;
    for (sla_int k = 0; k < count; k++) {
        sla_int i = order[k];
        int best = 0;
        for (int q = 1; q < P; q++)
            if (load[q] < load[best]) best = q;
        owner[i] = best;
        load[best] += sizes[2 * i] + sizes[2 * i + 1];
    }
}

sla_status sla_dist_list_scatter(sla_ctx *ctx, MPI_Comm comm, int root, sla_int count, const sla_matrix *const *mats,
                                 sla_int *local_count, sla_matrix ***local, sla_int **index)
{
    if (comm == MPI_COMM_NULL) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_list_scatter: MPI_COMM_NULL");
    int P, me;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_status st = SLA_OK;
    if (!local_count || !local || !index) st = sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_list_scatter: NULL output");
    else {
        *local_count = 0;
        *local = NULL;
        *index = NULL;
    }
    if (!st && (root < 0 || root >= P)) st = sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_list_scatter: bad root %d", root);
    if (!st && me == root) st = check_list(ctx, count, mats);
    if ((st = sla__dist_agree(ctx, comm, st))) return st;
    int64_t cnt = count;
    int rc = MPI_Bcast(&cnt, 1, MPI_INT64_T, root, comm);
    if (rc) return sla__mpi_error(ctx, rc, "sla_dist_list_scatter");
    /* sizes (rows, entries, dtype) of every item and its owner, on every rank */
    int64_t *sizes = sla__malloc(&a, (size_t)cnt, 3 * sizeof(int64_t));
    int64_t *owner = sla__malloc(&a, (size_t)cnt, sizeof(int64_t));
    sla_int *order = NULL;
    int64_t *load = NULL;
    if (!sizes || !owner) st = sla__error(ctx, SLA_ERR_NOMEM, "sla_dist_list_scatter: out of memory");
    if (!st && me == root) {
        order = sla__malloc(&a, (size_t)cnt, sizeof(sla_int));
        load = sla__malloc(&a, (size_t)P, sizeof(int64_t));
        if (!order || !load) st = sla__error(ctx, SLA_ERR_NOMEM, "sla_dist_list_scatter: out of memory");
        else {
            int64_t *rn = sizes; /* pairs (rows, nnz) first, then dtypes */
            for (sla_int i = 0; i < cnt; i++) {
                rn[2 * i] = mats[i]->nrows;
                rn[2 * i + 1] = mats[i]->nnz;
                sizes[2 * cnt + i] = mats[i]->dtype;
            }
            assign(cnt, rn, P, owner, &a, order, load);
        }
    }
    if ((st = sla__dist_agree(ctx, comm, st))) goto done;
    rc = MPI_Bcast(sizes, (int)(3 * cnt), MPI_INT64_T, root, comm);
    if (!rc) rc = MPI_Bcast(owner, (int)cnt, MPI_INT64_T, root, comm);
    if (rc) {
        st = sla__mpi_error(ctx, rc, "sla_dist_list_scatter");
        goto done;
    }
    sla_int mine = 0;
    for (sla_int i = 0; i < cnt; i++) mine += owner[i] == me;
    *local = sla__calloc(&a, (size_t)mine, sizeof(sla_matrix *));
    *index = sla__malloc(&a, (size_t)mine, sizeof(sla_int));
    sla_int *rp = NULL;
    int32_t *ci32 = NULL;
    sla_int *ci = NULL;
    void *vals = NULL;
    sla_int maxn = 0, maxnnz = 0;
    for (sla_int i = 0; i < cnt; i++)
        if (owner[i] == me) {
            if (sizes[2 * i] > maxn) maxn = sizes[2 * i];
            if (sizes[2 * i + 1] > maxnnz) maxnnz = sizes[2 * i + 1];
        }
    rp = sla__malloc(&a, (size_t)maxn + 1, sizeof(sla_int));
    ci32 = sla__malloc(&a, (size_t)maxnnz, sizeof(int32_t));
    ci = sla__malloc(&a, (size_t)maxnnz, sizeof(sla_int));
    vals = sla__malloc(&a, (size_t)maxnnz, sizeof(double));
    if (!*local || !*index || !rp || !ci32 || !ci || !vals)
        st = sla__error(ctx, SLA_ERR_NOMEM, "sla_dist_list_scatter: out of memory on rank %d", me);
    if ((st = sla__dist_agree(ctx, comm, st))) goto free_bufs;
    /* items move one by one: the root sends, the owner receives and builds */
    sla_int k = 0;
    for (sla_int i = 0; i < cnt && !rc; i++) {
        int q = (int)owner[i];
        sla_int n = sizes[2 * i], nnz = sizes[2 * i + 1];
        sla_dtype dt = (sla_dtype)sizes[2 * cnt + i];
        MPI_Datatype vt = dt == SLA_F64 ? MPI_DOUBLE : MPI_FLOAT;
        if (me == root && q != root) {
            const sla_matrix *A = mats[i];
            rc = MPI_Send(A->rowptr, (int)(n + 1), MPI_INT64_T, q, TAG_LIST, comm);
            if (!rc) rc = MPI_Send(A->colind, (int)nnz, MPI_INT32_T, q, TAG_LIST, comm);
            if (!rc) rc = MPI_Send(A->values, (int)nnz, vt, q, TAG_LIST, comm);
        } else if (me == q) {
            const void *v;
            if (me == root) {
                const sla_matrix *A = mats[i];
                memcpy(rp, A->rowptr, (size_t)(n + 1) * sizeof(sla_int));
                for (sla_int p = 0; p < nnz; p++) ci[p] = A->colind[p];
                v = A->values;
            } else {
                rc = MPI_Recv(rp, (int)(n + 1), MPI_INT64_T, root, TAG_LIST, comm, MPI_STATUS_IGNORE);
                if (!rc) rc = MPI_Recv(ci32, (int)nnz, MPI_INT32_T, root, TAG_LIST, comm, MPI_STATUS_IGNORE);
                if (!rc) rc = MPI_Recv(vals, (int)nnz, vt, root, TAG_LIST, comm, MPI_STATUS_IGNORE);
                for (sla_int p = 0; p < nnz; p++) ci[p] = ci32[p];
                v = vals;
            }
            if (!rc && !st) {
                st = sla_matrix_from_csr(ctx, n, n, rp, ci, dt, 1, v, SLA_COPY, &(*local)[k]);
                if (st) sla__error(ctx, st, "list item %lld: %s", (long long)i, sla_ctx_message(ctx));
            }
            (*index)[k++] = i;
        }
    }
    if (rc) st = sla__mpi_error(ctx, rc, "sla_dist_list_scatter");
    st = sla__dist_agree(ctx, comm, st);
free_bufs:
    sla__free(&a, rp);
    sla__free(&a, ci32);
    sla__free(&a, ci);
    sla__free(&a, vals);
    if (st) sla_dist_list_free(ctx, mine, local, index);
    else *local_count = mine;
done:
    sla__free(&a, sizes);
    sla__free(&a, owner);
    sla__free(&a, order);
    sla__free(&a, load);
    return st ? st : sla__ok(ctx, SLA_OK);
}

/* Agreed status and the global summary of one local list run. */
static sla_status finish_list(sla_ctx *ctx, MPI_Comm comm, sla_status st, sla_int count, const sla_solve_info *info,
                              double seconds, sla_dist_list_summary *summary)
{
    if ((st = sla__dist_agree(ctx, comm, st < 0 ? st : SLA_OK))) return st;
    int64_t s[3] = {count, 0, 0}, m[1] = {0};
    double r[2] = {0.0, seconds};
    for (sla_int i = 0; i < count; i++) {
        s[1] += info[i].converged;
        s[2] += info[i].iterations;
        if (info[i].iterations > m[0]) m[0] = info[i].iterations;
        if (info[i].residual > r[0]) r[0] = info[i].residual;
    }
    int64_t sg[3], mg[1];
    double rg[2];
    int rc = MPI_Allreduce(s, sg, 3, MPI_INT64_T, MPI_SUM, comm);
    if (!rc) rc = MPI_Allreduce(m, mg, 1, MPI_INT64_T, MPI_MAX, comm);
    if (!rc) rc = MPI_Allreduce(r, rg, 2, MPI_DOUBLE, MPI_MAX, comm);
    if (rc) return sla__mpi_error(ctx, rc, "distributed list");
    if (summary) {
        summary->items = sg[0];
        summary->converged = sg[1];
        summary->total_iterations = sg[2];
        summary->max_iterations = mg[0];
        summary->max_residual = rg[0];
        summary->seconds = rg[1];
    }
    if (sg[1] < sg[0])
        return sla__error(ctx, SLA_NOT_CONVERGED, "distributed list: %lld of %lld items did not converge",
                          (long long)(sg[0] - sg[1]), (long long)sg[0]);
    return sla__ok(ctx, SLA_OK);
}

static sla_status run_list(sla_ctx *ctx, MPI_Comm comm, sla_int count, sla_solver *const *solvers,
                           const double *const *in1, const double *const *in2, double *const *out1,
                           double *const *out2, sla_solve_info *info, sla_dist_list_summary *summary, bool vjp)
{
    if (comm == MPI_COMM_NULL) return sla__error(ctx, SLA_ERR_ARGUMENT, "distributed list: MPI_COMM_NULL");
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_solve_info *inf = info;
    sla_status st = SLA_OK;
    if (count < 0) st = sla__error(ctx, SLA_ERR_ARGUMENT, "distributed list: count %lld < 0", (long long)count);
    if (!st && !info) {
        inf = sla__calloc(&a, (size_t)count, sizeof *inf);
        if (!inf) st = sla__error(ctx, SLA_ERR_NOMEM, "distributed list: out of memory");
    }
    if ((st = sla__dist_agree(ctx, comm, st))) {
        if (inf != info) sla__free(&a, inf);
        return st;
    }
    double t0 = MPI_Wtime();
    if (count > 0) {
        memset(inf, 0, (size_t)count * sizeof *inf);
        st = vjp ? sla_solver_solve_list_vjp(ctx, count, solvers, in1, in2, out1, out2, inf)
                 : sla_solver_solve_list(ctx, count, solvers, in1, out1, inf);
    }
    st = finish_list(ctx, comm, st, count, inf, MPI_Wtime() - t0, summary);
    if (inf != info) sla__free(&a, inf);
    return st;
}

sla_status sla_dist_solve_list(sla_ctx *ctx, MPI_Comm comm, sla_int local_count, sla_solver *const *solvers,
                               const double *const *b, double *const *x, sla_solve_info *info,
                               sla_dist_list_summary *summary)
{
    return run_list(ctx, comm, local_count, solvers, b, NULL, x, NULL, info, summary, false);
}

sla_status sla_dist_solve_list_vjp(sla_ctx *ctx, MPI_Comm comm, sla_int local_count, sla_solver *const *solvers,
                                   const double *const *x, const double *const *gx, double *const *gb,
                                   double *const *gA, sla_solve_info *info, sla_dist_list_summary *summary)
{
    return run_list(ctx, comm, local_count, solvers, x, gx, gb, gA, info, summary, true);
}
