/* Private definitions of the distributed layer. Never installed. */
#ifndef SLA_DIST_INTERNAL_H
#define SLA_DIST_INTERNAL_H

#include "../core/internal.h"
#include "sla/dist.h"

/* The halo plan of one pattern. Ghosts are numbered in increasing global
 * order, so the ghosts owned by one rank are one contiguous range: the
 * forward exchange receives straight into the ghost vector. */
typedef struct sla__halo {
    int nrecv;             /* ranks we receive ghosts from */
    int *recv_rank;        /* nrecv */
    sla_int *recv_off;     /* nrecv + 1: ghost range of each */
    int nsend;             /* ranks we send owned entries to */
    int *send_rank;        /* nsend */
    sla_int *send_off;     /* nsend + 1: range of send_idx for each */
    int32_t *send_idx;     /* local indices of the entries sent, in order */
    double *sendbuf;       /* send_off[nsend] */
    MPI_Request *req;      /* nrecv + nsend */
} sla__halo;

struct sla_dist_matrix {
    sla_allocator alloc;
    MPI_Comm comm;         /* our duplicate, MPI_ERRORS_RETURN */
    int rank, size;
    sla_int n, nlocal, row_start;
    sla_int *starts;       /* size + 1: row block of every rank */
    sla_int nnz_local;
    sla_int *rowptr;       /* the local pattern as given: nlocal + 1 */
    sla_int *colind;       /* nnz_local, global columns */
    sla_matrix *diag;      /* nlocal x nlocal, local columns */
    sla_matrix *offd;      /* nlocal x nghost, compressed ghost columns */
    sla_int nghost;
    sla_int *ghosts;       /* nghost global columns, increasing */
    int32_t *orows;        /* the rows with off-block entries, increasing (norows): the
                            * products and sweeps visit only these for the ghost part */
    sla_int norows;
    sla_int *pos;          /* nnz_local: diag position p >= 0, or offd position -1 - p */
    sla_int *global_rows;  /* nlocal original row indices */
    sla_int *src_pos;      /* nnz_local positions in the source CSR (scatter), else NULL */
    sla_int src_nnz;       /* nnz of the source matrix (scatter) */
    sla__halo halo;
    double *ghostbuf;      /* nghost: ghost values of the vector being multiplied */
    double *work;          /* nt * nlocal: threaded transposed product, lazily */
    int work_nt;
    sla_dist_stats stats;
};

/* MPI failure -> SLA_ERR_IO with the MPI error string. */
sla_status sla__mpi_error(sla_ctx *ctx, int rc, const char *what);

/* Agree on a status across comm: if any rank has an error, every rank
 * returns one (the lowest failing rank's status; the others get its
 * message prefixed by "rank r: "). A positive or zero local status is
 * returned unchanged when nobody failed. */
sla_status sla__dist_agree(sla_ctx *ctx, MPI_Comm comm, sla_status st);

/* Agree on st and check that an optional argument (flag: given) is given
 * on every rank or on none; SLA_ERR_ARGUMENT naming `what` otherwise. */
sla_status sla__dist_same(sla_ctx *ctx, MPI_Comm comm, sla_status st, bool flag, const char *what);

/* A fresh matrix object on a duplicate of comm (collective). */
sla_status sla__dist_new(sla_ctx *ctx, MPI_Comm comm, sla_dist_matrix **out);

/* After sla__dist_new: check the rows, split them into the two blocks,
 * build the halo plan (collective; the status is agreed). */
sla_status sla__dist_build(sla_ctx *ctx, sla_dist_matrix *D, sla_int nlocal, const sla_int *rowptr,
                           const sla_int *colind, const double *vals);
/* sla__dist_build for rows the library made itself (the distributed
 * saamg's operators): sorted, in range by construction, so only the
 * values are checked (finite: an overflow) except in debug builds, which
 * check everything; and *rowptr, *colind (allocated with a) become D's,
 * set to NULL, when a frees as D's allocator does (else they are copied
 * and stay the caller's). */
sla_status sla__dist_build_owned(sla_ctx *ctx, sla_dist_matrix *D, sla_int nlocal, const sla_allocator *a,
                                 sla_int **rowptr, sla_int **colind, const double *vals);

/* Halo exchange in two halves so that work can overlap the messages. */
int sla__halo_forward_begin(sla_dist_matrix *D, const double *x, double *ghost);
int sla__halo_reverse_begin(sla_dist_matrix *D, const double *ghost);
int sla__halo_end(sla_dist_matrix *D);
/* After sla__halo_end of a reverse exchange: y[send_idx] += received. */
void sla__halo_reverse_add(const sla_dist_matrix *D, double *y);

/* The products without argument checks (return an MPI error code). */
int sla__dist_spmv(sla_dist_matrix *D, const double *x, double *y, int nt);
/* y = A x, *dot = this rank's part of x . y (the same passes) */
int sla__dist_spmv_dot(sla_dist_matrix *D, const double *x, double *y, int nt, double *dot);
int sla__dist_spmv_t(sla_dist_matrix *D, const double *x, double *y, int nt);

/* out[k] = s * a[row_k] * x[col_k] on the local pattern, with the ghost
 * values of x already in D->ghostbuf. */
void sla__dist_pattern_outer(const sla_dist_matrix *D, double s, const double *a,
                             const double *x, double *out);

/* Smoothed-aggregation AMG over the ranks of D (dist_saamg.c, which gives
 * the design): one hierarchy, symmetric matrices only. reuse: the
 * options' saamg_reuse (0: a refresh keeps the prolongators and recomputes
 * the Galerkin operators; otherwise it rebuilds), theta its saamg_theta
 * (level 0's strength threshold, 0: the default). Collective; the status
 * is agreed; *out is NULL on failure. D must outlive it; pc->refresh reads
 * D's values (its A argument is ignored). */
struct sla__pc;
sla_status sla__dist_saamg_create(sla_ctx *ctx, sla_dist_matrix *D, int reuse, double theta,
                                  struct sla__pc **out);
/* Its levels (0 when pc is not one), level l's matrix (level 0: D) and
 * in *P the coarse-space halo plan of its prolongator (NULL on the
 * coarsest level; its counters count the restrictions' and prolongations'
 * messages), and the coarse solves' gathers (count, bytes this rank
 * contributed): for benchmarks and tests. */
int sla__dist_saamg_levels(const struct sla__pc *pc);
sla_dist_matrix *sla__dist_saamg_level(const struct sla__pc *pc, int l, sla_dist_matrix **P);
/* max |A_c y - P^T A P y| / max |A_c y| over the ranks for a fixed y on
 * level l + 1 (collective; tests): the Galerkin product and the
 * restriction / prolongation agree. -1 when l has no coarser level. */
double sla__dist_saamg_galerkin_error(const struct sla__pc *pc, int l);
void sla__dist_saamg_gathers(const struct sla__pc *pc, int64_t *count, int64_t *bytes);
/* The preconditioner of a distributed solver (NULL: none). */
struct sla__pc *sla__dist_solver_pc(const sla_dist_solver *S);

#endif
