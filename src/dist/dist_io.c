/* Save a distributed matrix as per-rank Matrix Market pieces plus a small
 * metadata file; load it onto any number of ranks. */
#include "dist_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define META_MAGIC "sla-dist-matrix 1"

static void piece_name(char *buf, size_t len, const char *prefix, int r, const char *suffix)
{
    snprintf(buf, len, "%s.%d%s", prefix, r, suffix);
}

static sla_status write_piece(sla_ctx *ctx, const sla_dist_matrix *D, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) return sla__error(ctx, SLA_ERR_IO, "cannot open %s for writing: %s", path, strerror(errno));
    double *v = sla__malloc(&D->alloc, (size_t)D->nnz_local, sizeof(double));
    if (!v) {
        fclose(f);
        return sla__error(ctx, SLA_ERR_NOMEM, "out of memory writing %s", path);
    }
    sla_dist_matrix_get_values(D, v);
    fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n");
    fprintf(f, "%% sla distributed piece %d of %d: rows [%lld, %lld)\n", D->rank, D->size,
            (long long)D->row_start, (long long)(D->row_start + D->nlocal));
    fprintf(f, "%lld %lld %lld\n", (long long)D->n, (long long)D->n, (long long)D->nnz_local);
    for (sla_int i = 0; i < D->nlocal; i++)
        for (sla_int k = D->rowptr[i]; k < D->rowptr[i + 1]; k++)
            fprintf(f, "%lld %lld %.17g\n", (long long)(D->row_start + i + 1), (long long)(D->colind[k] + 1), v[k]);
    sla__free(&D->alloc, v);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0) bad = true;
    return bad ? sla__error(ctx, SLA_ERR_IO, "error writing %s", path) : SLA_OK;
}

sla_status sla_dist_matrix_save(sla_ctx *ctx, const sla_dist_matrix *D, const char *prefix)
{
    if (!D) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_matrix_save: D is NULL");
    sla_status st = prefix ? SLA_OK : sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_matrix_save: prefix is NULL");
    if ((st = sla__dist_agree(ctx, D->comm, st))) return st;
    int mine = 0, permuted = 0;
    for (sla_int i = 0; i < D->nlocal; i++)
        if (D->global_rows[i] != D->row_start + i) mine = 1;
    int rc = MPI_Allreduce(&mine, &permuted, 1, MPI_INT, MPI_MAX, D->comm);
    if (rc) return sla__mpi_error(ctx, rc, "sla_dist_matrix_save");
    int64_t nl = D->nnz_local, nnz = 0;
    rc = MPI_Allreduce(&nl, &nnz, 1, MPI_INT64_T, MPI_SUM, D->comm);
    if (rc) return sla__mpi_error(ctx, rc, "sla_dist_matrix_save");

    char path[4096];
    if (D->rank == 0) {
        snprintf(path, sizeof path, "%s.meta", prefix);
        FILE *f = fopen(path, "w");
        if (!f) st = sla__error(ctx, SLA_ERR_IO, "cannot open %s for writing: %s", path, strerror(errno));
        else {
            fprintf(f, "%s\nranks %d\nn %lld\nnnz %lld\npermuted %d\nstarts", META_MAGIC, D->size,
                    (long long)D->n, (long long)nnz, permuted);
            for (int q = 0; q <= D->size; q++) fprintf(f, " %lld", (long long)D->starts[q]);
            fprintf(f, "\n");
            bool bad = ferror(f) != 0;
            if (fclose(f) != 0 || bad) st = sla__error(ctx, SLA_ERR_IO, "error writing %s", path);
        }
    }
    if (!st) {
        piece_name(path, sizeof path, prefix, D->rank, ".mtx");
        st = write_piece(ctx, D, path);
    }
    if (!st && permuted) {
        double *ids = sla__malloc(&D->alloc, (size_t)D->nlocal, sizeof(double));
        if (!ids) st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory saving row numbers");
        else {
            for (sla_int i = 0; i < D->nlocal; i++) ids[i] = (double)D->global_rows[i];
            piece_name(path, sizeof path, prefix, D->rank, ".rows.mtx");
            st = sla_mm_write_dense(ctx, path, D->nlocal, 1, ids);
            sla__free(&D->alloc, ids);
        }
    }
    st = sla__dist_agree(ctx, D->comm, st);
    return st ? st : sla__ok(ctx, SLA_OK);
}

typedef struct {
    int ranks, permuted;
    sla_int n, nnz;
    sla_int *starts; /* ranks + 1 */
} meta;

static sla_status read_meta(sla_ctx *ctx, const sla_allocator *a, const char *prefix, meta *m)
{
    char path[4096];
    snprintf(path, sizeof path, "%s.meta", prefix);
    FILE *f = fopen(path, "r");
    if (!f) return sla__error(ctx, SLA_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    char magic[64] = "";
    long long n = -1, nnz = -1;
    sla_status st = SLA_OK;
    if (!fgets(magic, sizeof magic, f) || strncmp(magic, META_MAGIC, strlen(META_MAGIC)) != 0)
        st = sla__error(ctx, SLA_ERR_FORMAT, "%s: not an sla distributed matrix (first line should be \"%s\")",
                        path, META_MAGIC);
    else if (fscanf(f, " ranks %d n %lld nnz %lld permuted %d starts", &m->ranks, &n, &nnz, &m->permuted) != 4 ||
             m->ranks < 1 || n < m->ranks || nnz < 0)
        st = sla__error(ctx, SLA_ERR_FORMAT, "%s: bad header (ranks, n, nnz, permuted, starts)", path);
    if (!st) {
        m->n = n;
        m->nnz = nnz;
        m->starts = sla__malloc(a, (size_t)m->ranks + 1, sizeof(sla_int));
        if (!m->starts) st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory reading %s", path);
        for (int q = 0; !st && q <= m->ranks; q++) {
            long long s;
            if (fscanf(f, "%lld", &s) != 1 || s < (q ? m->starts[q - 1] : 0) || (q == 0 && s != 0) ||
                (q == m->ranks && s != n))
                st = sla__error(ctx, SLA_ERR_FORMAT, "%s: bad row block boundary %d", path, q);
            else m->starts[q] = s;
        }
    }
    fclose(f);
    return st;
}

/* Rows [r0, r1) of the saved numbering from the pieces that hold them. */
static sla_status read_rows(sla_ctx *ctx, const sla_allocator *a, const char *prefix, const meta *m, sla_int r0,
                            sla_int r1, sla_int **rowptr_out, sla_int **colind_out, double **vals_out,
                            sla_int **ids_out)
{
    sla_int nl = r1 - r0, cap = 0, nnz = 0;
    sla_int *rowptr = sla__malloc(a, (size_t)nl + 1, sizeof(sla_int));
    sla_int *ids = sla__malloc(a, (size_t)nl, sizeof(sla_int));
    sla_int *colind = NULL;
    double *vals = NULL;
    sla_status st = (rowptr && ids) ? SLA_OK : sla__error(ctx, SLA_ERR_NOMEM, "out of memory loading rows");
    if (!st) rowptr[0] = 0;
    char path[4096];
    for (int q = 0; !st && q < m->ranks; q++) {
        sla_int a0 = m->starts[q] > r0 ? m->starts[q] : r0, a1 = m->starts[q + 1] < r1 ? m->starts[q + 1] : r1;
        if (a0 >= a1) continue;
        piece_name(path, sizeof path, prefix, q, ".mtx");
        sla_matrix *A = NULL;
        if ((st = sla_mm_read(ctx, path, SLA_F64, &A))) break;
        if (sla__is_complex(A)) {
            st = sla__error(ctx, SLA_ERR_UNSUPPORTED, "%s: a complex matrix; the distributed layer takes real "
                            "matrices", path);
            sla_matrix_destroy(&A);
            break;
        }
        if (A->nrows != m->n || A->ncols != m->n) {
            st = sla__error(ctx, SLA_ERR_FORMAT, "%s: size %lld x %lld, the metadata says %lld", path,
                            (long long)A->nrows, (long long)A->ncols, (long long)m->n);
            sla_matrix_destroy(&A);
            break;
        }
        for (sla_int i = 0; i < A->nrows && !st; i++) /* a piece holds only its own rows */
            if ((i < m->starts[q] || i >= m->starts[q + 1]) && A->rowptr[i + 1] > A->rowptr[i])
                st = sla__error(ctx, SLA_ERR_FORMAT, "%s: row %lld is outside the piece's block [%lld, %lld)", path,
                                (long long)(i + 1), (long long)m->starts[q], (long long)m->starts[q + 1]);
        sla_int need = nnz + A->rowptr[a1] - A->rowptr[a0];
        if (!st && need > cap) {
            sla_int nc = need > 2 * cap ? need : 2 * cap;
            sla_int *c2 = sla__malloc(a, (size_t)nc, sizeof(sla_int));
            double *v2 = sla__malloc(a, (size_t)nc, sizeof(double));
            if (!c2 || !v2) {
                sla__free(a, c2);
                sla__free(a, v2);
                st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory loading rows");
            } else {
                if (nnz) {
                    memcpy(c2, colind, (size_t)nnz * sizeof(sla_int));
                    memcpy(v2, vals, (size_t)nnz * sizeof(double));
                }
                sla__free(a, colind);
                sla__free(a, vals);
                colind = c2;
                vals = v2;
                cap = nc;
            }
        }
        for (sla_int i = a0; i < a1 && !st; i++) {
            for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                colind[nnz] = A->colind[p];
                vals[nnz++] = ((const double *)A->values)[p];
            }
            rowptr[i - r0 + 1] = nnz;
            ids[i - r0] = i;
        }
        sla_matrix_destroy(&A);
        if (!st && m->permuted) { /* original row numbers */
            piece_name(path, sizeof path, prefix, q, ".rows.mtx");
            sla_int nr = 0, nc = 0;
            double *d = NULL;
            if ((st = sla_mm_read_dense(ctx, path, &nr, &nc, &d))) break;
            if (nr != m->starts[q + 1] - m->starts[q] || nc != 1)
                st = sla__error(ctx, SLA_ERR_FORMAT, "%s: %lld x %lld, expected %lld x 1", path, (long long)nr,
                                (long long)nc, (long long)(m->starts[q + 1] - m->starts[q]));
            for (sla_int i = a0; i < a1 && !st; i++) {
                double v = d[i - m->starts[q]];
                if (!(v >= 0 && v < (double)m->n) || v != (double)(sla_int)v)
                    st = sla__error(ctx, SLA_ERR_FORMAT, "%s: row number %g out of range", path, v);
                else ids[i - r0] = (sla_int)v;
            }
            sla_free(ctx, d);
        }
    }
    if (st) {
        sla__free(a, rowptr);
        sla__free(a, ids);
        sla__free(a, colind);
        sla__free(a, vals);
        return st;
    }
    *rowptr_out = rowptr;
    *colind_out = colind;
    *vals_out = vals;
    *ids_out = ids;
    return SLA_OK;
}

sla_status sla_dist_matrix_load(sla_ctx *ctx, MPI_Comm comm, const char *prefix, sla_dist_matrix **out)
{
    if (out) *out = NULL;
    int P = 0, me = 0;
    if (comm == MPI_COMM_NULL) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_matrix_load: MPI_COMM_NULL");
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    sla_allocator a = sla__ctx_alloc(ctx);
    meta m = {0};
    sla_int *rowptr = NULL, *colind = NULL, *ids = NULL;
    double *vals = NULL;
    sla_status st = (out && prefix) ? SLA_OK : sla__error(ctx, SLA_ERR_ARGUMENT, "sla_dist_matrix_load: NULL argument");
    if (!st) st = read_meta(ctx, &a, prefix, &m);
    if (!st && m.n < P)
        st = sla__error(ctx, SLA_ERR_DIMENSION, "sla_dist_matrix_load: %lld rows cannot give each of %d ranks a row",
                        (long long)m.n, P);
    if (!st) st = read_rows(ctx, &a, prefix, &m, m.n * me / P, m.n * (me + 1) / P, &rowptr, &colind, &vals, &ids);
    /* the agreement runs on comm itself: no matrix exists yet */
    sla_status all = sla__dist_agree(ctx, comm, st);
    sla_dist_matrix *D = NULL;
    if (!all) all = sla_dist_matrix_create(ctx, comm, m.n * (me + 1) / P - m.n * me / P, rowptr, colind, vals, &D);
    if (!all) memcpy(D->global_rows, ids, (size_t)D->nlocal * sizeof(sla_int));
    sla__free(&a, m.starts);
    sla__free(&a, rowptr);
    sla__free(&a, colind);
    sla__free(&a, vals);
    sla__free(&a, ids);
    if (all) return all;
    *out = D;
    return sla__ok(ctx, SLA_OK);
}
