/* sla/dist.h — the distributed layer over MPI: distributed matrices, halo
 * exchange, distributed SpMV and its VJP, distributed Krylov solves and
 * their VJPs, save/load as per-rank Matrix Market pieces.
 *
 * This header includes <mpi.h> and is therefore not included by <sla.h>
 * (which must compile without MPI): include <sla/dist.h> yourself. It is
 * installed, and the functions exist, only when sla was configured with MPI
 * (SLA_HAVE_MPI is defined in the consumer's build by sla's CMake package).
 *
 * Layout. A distributed matrix is square, n x n. Rank r owns a contiguous
 * block of rows [row_start, row_start + nlocal) of the *distributed
 * numbering*, and the same block of entries of every distributed vector.
 * Locally the owned rows are stored as two CSR blocks (PETSc's MPIAIJ):
 *   diag: nlocal x nlocal, the owned columns, local indices;
 *   offd: nlocal x nghost, the other columns ("ghosts"), renumbered
 *         0..nghost-1 in increasing global order.
 * The halo plan (neighbour ranks, which owned entries go to whom, where
 * received ghosts land) is built once per pattern.
 *
 * A matrix partitioned from a global one (sla_dist_matrix_scatter) may be
 * permuted: the distributed numbering lists the rows of part 0, then part
 * 1, ... (METIS), and sla_dist_matrix_global_rows gives the original index
 * of each owned row. The scatter/gather helpers translate vectors and
 * value arrays between the two numberings.
 *
 * Values on the local pattern: each rank's values, and the gradients with
 * respect to them, are arrays of nnz_local entries in the order the rank's
 * rows were given (row by row, columns increasing).
 *
 * Collective calls: every function taking a distributed object or a
 * communicator, except the accessors (sizes, pattern, values, counters), is
 * collective over that communicator and must be called by all its ranks.
 * Input errors found on one rank are agreed on before any other
 * communication: every rank returns an error status, the lowest failing rank
 * with its own message and the others with "rank r: <that message>", so a
 * bad argument never leaves the other ranks waiting.
 *
 * MPI: the application initializes and finalizes MPI; sla never calls
 * MPI_Init or MPI_Finalize for the distributed layer (only the AMG
 * preconditioner initializes MPI, when nobody has, for its own
 * MPI_COMM_SELF use). sla works on a duplicate of the communicator, with
 * MPI_ERRORS_RETURN, so its messages never mix with the application's.
 * A distributed object is not thread-safe: one call at a time per object.
 */
#ifndef SLA_DIST_H
#define SLA_DIST_H

#include <mpi.h>

#include "solver.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sla_dist_matrix sla_dist_matrix;

/* Build from the rows each rank assembles itself (no global matrix): rank r
 * gives nlocal >= 1 rows (they become rows [sum of nlocal on ranks < r, +
 * nlocal)) as CSR with *global* column indices (strictly increasing within
 * each row, in [0, n) where n = the sum of nlocal) and float64 values
 * (NULL: all ones). Arrays are copied.
 * Errors (on every rank): SLA_ERR_ARGUMENT, SLA_ERR_DIMENSION (a rank with
 * no rows), SLA_ERR_INDEX (naming the rank, row and entry), SLA_ERR_VALUE,
 * SLA_ERR_TOO_LARGE (more than 2^31-1 local rows or ghosts), SLA_ERR_NOMEM,
 * SLA_ERR_COMM (an MPI call failed). */
SLA_API sla_status sla_dist_matrix_create(sla_ctx *ctx, MPI_Comm comm, sla_int nlocal,
                                  const sla_int *rowptr, const sla_int *colind,
                                  const double *vals, sla_dist_matrix **out);

typedef enum sla_dist_partition {
    SLA_PART_BLOCK = 0, /* contiguous row blocks of (almost) equal size */
    SLA_PART_METIS = 1  /* METIS_PartGraphKway on the graph of A + A^T */
} sla_dist_partition;

/* Partition the square matrix A (value array 0, read on rank `root` only;
 * ignored on the other ranks, may be NULL there) and distribute it.
 * METIS renumbers the rows part by part (the original indices are kept, see
 * sla_dist_matrix_global_rows). Errors as sla_dist_matrix_create, plus
 * SLA_ERR_UNAVAILABLE (METIS not in this build) and SLA_ERR_DIMENSION (more
 * ranks than rows, or a METIS part left empty). */
SLA_API sla_status sla_dist_matrix_scatter(sla_ctx *ctx, MPI_Comm comm, int root, const sla_matrix *A,
                                   sla_dist_partition part, sla_dist_matrix **out);

/* Destroy (collective: frees the communicator duplicate); accepts NULL. */
SLA_API void sla_dist_matrix_destroy(sla_dist_matrix **D);

SLA_API sla_int sla_dist_matrix_n(const sla_dist_matrix *D);         /* global size */
SLA_API sla_int sla_dist_matrix_nlocal(const sla_dist_matrix *D);    /* owned rows */
SLA_API sla_int sla_dist_matrix_row_start(const sla_dist_matrix *D); /* first owned row */
SLA_API sla_int sla_dist_matrix_nnz_local(const sla_dist_matrix *D); /* entries in owned rows */
SLA_API sla_int sla_dist_matrix_nghost(const sla_dist_matrix *D);    /* ghost columns */
SLA_API int sla_dist_matrix_neighbours(const sla_dist_matrix *D);    /* ranks exchanged with */
/* Original (pre-partition) index of each owned row, nlocal entries. */
SLA_API const sla_int *sla_dist_matrix_global_rows(const sla_dist_matrix *D);
/* Global column of each ghost, nghost entries, increasing. */
SLA_API const sla_int *sla_dist_matrix_ghosts(const sla_dist_matrix *D);
/* The local pattern in the rank's own order: rowptr (nlocal + 1) and global
 * column indices (nnz_local), copied into caller arrays (either may be NULL). */
SLA_API void sla_dist_matrix_get_pattern(const sla_dist_matrix *D, sla_int *rowptr, sla_int *colind);
/* The local values (nnz_local) into vals. */
SLA_API void sla_dist_matrix_get_values(const sla_dist_matrix *D, double *vals);

/* New values on the same pattern (nnz_local, validated finite on every
 * rank); solvers need sla_dist_solver_refresh afterwards. */
SLA_API sla_status sla_dist_matrix_set_values(sla_ctx *ctx, sla_dist_matrix *D, const double *vals);

/* ---- halo exchange --------------------------------------------------------- */

/* Forward (P): ghost[g] = x[owner of ghost g] for the nghost ghosts, from
 * the owners' local vectors x (nlocal). */
SLA_API sla_status sla_dist_halo_forward(sla_ctx *ctx, sla_dist_matrix *D, const double *x,
                                 double *ghost);

/* Transpose (P^T): y[i] += sum of the ghost contributions g[k] of every
 * rank whose ghost k is owned entry i here. <P x, g> = <x, P^T g> exactly
 * (up to the order of floating-point sums). */
SLA_API sla_status sla_dist_halo_reverse(sla_ctx *ctx, sla_dist_matrix *D, const double *ghost,
                                 double *y);

/* ---- products -------------------------------------------------------------- */

/* y = A x (x, y: nlocal owned entries). Starts the halo exchange, multiplies
 * the diagonal block while it is in flight, then adds the off-diagonal
 * block. */
SLA_API sla_status sla_dist_matvec(sla_ctx *ctx, sla_dist_matrix *D, const double *x, double *y);

/* y = A^T x: the off-diagonal block's transposed contributions travel back
 * to their owners (P^T) while the diagonal block is multiplied. */
SLA_API sla_status sla_dist_matvec_transpose(sla_ctx *ctx, sla_dist_matrix *D, const double *x,
                                     double *y);

/* VJP of y = A x: gx = A^T gy (nlocal; may be NULL) and
 * gvals[k] = gy[row_k] x[col_k] on the local pattern (nnz_local, overwritten;
 * may be NULL). An output is NULL on every rank or on none. */
SLA_API sla_status sla_dist_matvec_vjp(sla_ctx *ctx, sla_dist_matrix *D, const double *x,
                               const double *gy, double *gx, double *gvals);

/* ---- vectors and values between a root and the distributed numbering ------- */

/* x_local[i] = x_global[global_rows[i]]; x_global (n) is read on root only. */
SLA_API sla_status sla_dist_scatter_vector(sla_ctx *ctx, const sla_dist_matrix *D, int root,
                                   const double *x_global, double *x_local);
/* x_global[global_rows[i]] = x_local[i]; x_global (n) is written on root only. */
SLA_API sla_status sla_dist_gather_vector(sla_ctx *ctx, const sla_dist_matrix *D, int root,
                                  const double *x_local, double *x_global);
/* Local pattern values (e.g. a gradient) onto root: for a matrix made by
 * sla_dist_matrix_scatter, in the CSR order of the source matrix (its nnz);
 * otherwise the ranks' local arrays one after another (rank order). */
SLA_API sla_status sla_dist_gather_values(sla_ctx *ctx, const sla_dist_matrix *D, int root,
                                  const double *vals_local, double *vals_global);

/* ---- communication counters ------------------------------------------------ */

typedef struct sla_dist_stats {
    int64_t halo_exchanges;   /* forward and reverse exchanges */
    int64_t messages;         /* point-to-point messages sent */
    int64_t bytes_sent;       /* point-to-point payload sent by this rank */
    int64_t allreduces;       /* MPI_Allreduce calls by solvers */
    int64_t allreduce_doubles;/* doubles reduced */
    double halo_wait_seconds; /* time blocked in MPI_Waitall (not hidden by overlap) */
    double allreduce_seconds; /* time in MPI_Allreduce (including load imbalance) */
} sla_dist_stats;

SLA_API void sla_dist_matrix_stats(const sla_dist_matrix *D, sla_dist_stats *stats);
SLA_API void sla_dist_matrix_stats_reset(sla_dist_matrix *D);

/* ---- solvers --------------------------------------------------------------- */

typedef struct sla_dist_solver sla_dist_solver;

/* A Krylov solver over the distributed matrix: the library's CG, BiCGStab,
 * GMRES and MINRES (method must be one of them) with reductions through
 * MPI_Allreduce. Preconditioners: none, jacobi (the global diagonal),
 * amg (one hypre BoomerAMG hierarchy over all ranks of D's communicator;
 * transposed solves of nonsymmetric systems build a second hierarchy from
 * A^T at the first one; options.amg.reuse keeps a hierarchy across
 * refreshes), saamg (the library's smoothed-aggregation AMG as one
 * hierarchy over all ranks, no hypre: aggregates within each rank, the
 * prolongator smoothed across them, Galerkin products on the distributed
 * levels, hybrid Gauss-Seidel, the coarsest level gathered and factorized
 * on every rank; a symmetric cycle, so transposed solves reuse it;
 * symmetric matrices with a positive diagonal only; a refresh keeps the
 * prolongators and recomputes the coarse operators unless
 * options.saamg_reuse says otherwise), ilu0 / ic0 / ssor (block Jacobi: the library's
 * preconditioner of each rank's diagonal block, ghost couplings dropped).
 * maxiter = 0 means 10 n global.
 * The info of every solve is identical on all ranks (iterations, true
 * residual, reason; solve_seconds is the maximum over ranks). A monitor
 * callback (options.monitor) runs on every rank and must return the same
 * value on all of them.
 * D must outlive the solver. Errors: SLA_ERR_UNSUPPORTED (a direct method,
 * auto, the user preconditioner, or saamg with a nonsymmetric matrix),
 * SLA_ERR_SINGULAR / SLA_ERR_NOT_SPD (local factorization, or a zero /
 * nonpositive diagonal on a saamg level, naming the rank),
 * SLA_ERR_NOMEM, SLA_ERR_ARGUMENT. */
SLA_API sla_status sla_dist_solver_create(sla_ctx *ctx, sla_dist_matrix *D,
                                  const sla_solver_options *opts, sla_dist_solver **out);

/* Redo the value-dependent set-up after sla_dist_matrix_set_values. */
SLA_API sla_status sla_dist_solver_refresh(sla_ctx *ctx, sla_dist_solver *S);

SLA_API void sla_dist_solver_destroy(sla_dist_solver **S);

/* Solve A x = b (b, x: nlocal). SLA_OK, SLA_NOT_CONVERGED (same on all
 * ranks), or an error. */
SLA_API sla_status sla_dist_solver_solve(sla_ctx *ctx, sla_dist_solver *S, const double *b, double *x,
                                 sla_solve_info *info);

/* Solve A^T x = b with the transposed product (reverse halo exchange) and
 * the transposed preconditioner. */
SLA_API sla_status sla_dist_solver_solve_transpose(sla_ctx *ctx, sla_dist_solver *S, const double *b,
                                           double *x, sla_solve_info *info);

/* VJP of x = A^-1 b: solves A^T lambda = gx and writes gb = lambda (nlocal;
 * may be NULL) and gvals[k] = -lambda[row_k] x[col_k] on the local pattern
 * (nnz_local, overwritten; may be NULL on every rank or on none). info
 * receives the adjoint report. */
SLA_API sla_status sla_dist_solver_solve_vjp(sla_ctx *ctx, sla_dist_solver *S, const double *x,
                                     const double *gx, double *gb, double *gvals,
                                     sla_solve_info *info);

/* ---- files ----------------------------------------------------------------- */

/* Save as `prefix.meta` (text: ranks, n, nnz, row blocks) plus one
 * Matrix Market piece per rank, `prefix.<r>.mtx` (the owned rows, global
 * row and column indices of the distributed numbering, 17 digits) and, for
 * a permuted matrix, `prefix.<r>.rows.mtx` (original row indices). */
SLA_API sla_status sla_dist_matrix_save(sla_ctx *ctx, const sla_dist_matrix *D, const char *prefix);

/* Load a saved matrix onto the ranks of comm, whose number may differ from
 * the number that saved it: the rows are redistributed in contiguous
 * blocks of the saved numbering; original row indices are kept. Errors:
 * SLA_ERR_IO, SLA_ERR_FORMAT (naming the file), SLA_ERR_COMM (MPI), the errors of
 * sla_dist_matrix_create. */
SLA_API sla_status sla_dist_matrix_load(sla_ctx *ctx, MPI_Comm comm, const char *prefix,
                                sla_dist_matrix **out);

/* ---- distributed lists: many small systems spread over the ranks ------------ */

/* Spread count matrices held on root (each square, any pattern; ignored
 * elsewhere) over the ranks of comm, balancing stored entries (largest
 * first onto the least loaded rank). Each rank receives *local_count
 * matrices (*local, an array of them, allocated with ctx's allocator) and
 * *index (their positions in the root's list). Free with
 * sla_dist_list_free. Errors as sla_matrix_from_csr, SLA_ERR_COMM (MPI). */
SLA_API sla_status sla_dist_list_scatter(sla_ctx *ctx, MPI_Comm comm, int root, sla_int count,
                                 const sla_matrix *const *mats, sla_int *local_count,
                                 sla_matrix ***local, sla_int **index);

/* Free what sla_dist_list_scatter returned (local matrices, both arrays). */
SLA_API void sla_dist_list_free(sla_ctx *ctx, sla_int local_count, sla_matrix ***local, sla_int **index);

/* What a distributed list solve did, the same on every rank. */
typedef struct sla_dist_list_summary {
    sla_int items;            /* over all ranks */
    sla_int converged;        /* items that converged */
    sla_int max_iterations;   /* of any item */
    sla_int total_iterations; /* summed */
    double max_residual;      /* largest true relative residual */
    double seconds;           /* wall time of the slowest rank */
} sla_dist_list_summary;

/* Solve every rank's local list (sla_solver_solve_list: the items run in parallel
 * over the context's threads) in one collective call; info (local_count
 * entries, may be NULL) receives the local reports and summary (may be
 * NULL) the global ones. Returns the same status on every rank: an error
 * if any rank failed (naming it), SLA_NOT_CONVERGED if any item anywhere
 * did not converge, else SLA_OK. */
SLA_API sla_status sla_dist_solve_list(sla_ctx *ctx, MPI_Comm comm, sla_int local_count,
                               sla_solver *const *solvers, const double *const *b,
                               double *const *x, sla_solve_info *info,
                               sla_dist_list_summary *summary);

/* The VJPs of the same list (sla_solver_solve_list_vjp per rank), collectively. */
SLA_API sla_status sla_dist_solve_list_vjp(sla_ctx *ctx, MPI_Comm comm, sla_int local_count,
                                   sla_solver *const *solvers, const double *const *x,
                                   const double *const *gx, double *const *gb,
                                   double *const *gA, sla_solve_info *info,
                                   sla_dist_list_summary *summary);

#ifdef __cplusplus
}
#endif
#endif
