/* Helpers of the MPI tests (test_dist.c, test_dist_saamg.c): every rank
 * builds the same global matrices, distributes them and compares with the
 * single-process library. Include after test_util.h and <mpi.h>. */
#ifndef SLA_TEST_DIST_UTIL_H
#define SLA_TEST_DIST_UTIL_H

#include "sla/dist.h"

static int rank_, size_;

/* Every rank must agree that a check passed: failures anywhere count once
 * on every rank (so the exit status is the same everywhere). */
static inline int global_failures(void)
{
    int f = tu_failures, all = 0;
    MPI_Allreduce(&f, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return all;
}

static inline double gsum(double v)
{
    double s = 0.0;
    MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

static inline double gmax(double v)
{
    double s = 0.0;
    MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return s;
}

/* Rows [r0, r1) of A (value array 0) as CSR with global columns (the rows
 * a rank would assemble itself). */
static inline void block_rows(const sla_matrix *A, sla_int r0, sla_int r1, sla_int **rp, sla_int **ci, double **v)
{
    const sla_int *arp = sla_matrix_rowptr(A);
    sla_int nnz = sla_matrix_nnz(A);
    sla_int *all = malloc((size_t)nnz * sizeof *all);
    sla_matrix_get_colind(A, all);
    const double *av = sla_matrix_values(A, 0);
    sla_int b = arp[r0], m = arp[r1] - b;
    *rp = malloc((size_t)(r1 - r0 + 1) * sizeof **rp);
    *ci = malloc((size_t)(m + 1) * sizeof **ci);
    *v = malloc((size_t)(m + 1) * sizeof **v);
    for (sla_int i = r0; i <= r1; i++) (*rp)[i - r0] = arp[i] - b;
    memcpy(*ci, all + b, (size_t)m * sizeof **ci);
    memcpy(*v, av + b, (size_t)m * sizeof **v);
    free(all);
}

/* A distributed copy of A: 0 = rows assembled per rank in blocks, 1 =
 * scattered in blocks from rank 0, 2 = METIS from rank 0 (NULL when METIS
 * is not in the build). */
static inline sla_dist_matrix *distribute(sla_ctx *ctx, const sla_matrix *A, int how)
{
    sla_dist_matrix *D = NULL;
    if (how == 0) {
        sla_int n = sla_matrix_nrows(A), r0 = n * rank_ / size_, r1 = n * (rank_ + 1) / size_;
        sla_int *rp, *ci;
        double *v;
        block_rows(A, r0, r1, &rp, &ci, &v);
        CHECK_OK(ctx, sla_dist_matrix_create(ctx, MPI_COMM_WORLD, r1 - r0, rp, ci, v, &D));
        free(rp);
        free(ci);
        free(v);
        return D;
    }
    sla_status st = sla_dist_matrix_scatter(ctx, MPI_COMM_WORLD, 0, rank_ == 0 ? A : NULL,
                                            how == 1 ? SLA_PART_BLOCK : SLA_PART_METIS, &D);
    if (st == SLA_ERR_UNAVAILABLE) return NULL;
    CHECK_OK(ctx, st);
    return D;
}

/* Local slice of a global vector in D's numbering (every rank has xg). */
static inline void local_of(const sla_dist_matrix *D, const double *xg, double *xl)
{
    const sla_int *g = sla_dist_matrix_global_rows(D);
    for (sla_int i = 0; i < sla_dist_matrix_nlocal(D); i++) xl[i] = xg[g[i]];
}

/* Global vector from the local slices, on every rank. */
static inline void global_of(sla_ctx *ctx, const sla_dist_matrix *D, const double *xl, double *xg)
{
    CHECK_OK(ctx, sla_dist_gather_vector(ctx, D, 0, xl, xg));
    MPI_Bcast(xg, (int)sla_dist_matrix_n(D), MPI_DOUBLE, 0, MPI_COMM_WORLD);
}

/* The info of a solve (iterations, residual, reason) is the same on every rank. */
static inline void check_info_agrees(const sla_solve_info *inf)
{
    long long it[2] = {inf->iterations, -inf->iterations};
    long long out[2];
    MPI_Allreduce(it, out, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    CHECK(out[0] == -out[1]);
    double r[2] = {inf->residual, -inf->residual}, ro[2];
    MPI_Allreduce(r, ro, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(ro[0] == -ro[1]);
    int rs[2] = {(int)inf->reason, -(int)inf->reason}, rso[2];
    MPI_Allreduce(rs, rso, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(rso[0] == -rso[1]);
}

#endif
