/* sla/graph.h — the graph of a sparse matrix: connected components,
 * degrees, the graph Laplacian and partitions of the rows.
 *
 * A square n x n matrix A is read as a graph on n vertices with an edge
 * i - j for each stored entry a_ij, i != j (diagonal entries are self
 * loops and never join two vertices).
 */
#ifndef SLA_GRAPH_H
#define SLA_GRAPH_H

#include "matrix.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Connected components of the pattern read as undirected (the pattern of
 * A + A^T: a stored a_ij joins i and j whichever of a_ij, a_ji is stored).
 * labels (n entries, may be NULL) receives each vertex's component, numbered
 * 0, 1, ... in the order of each component's lowest vertex; *count (may be
 * NULL) the number of components (an isolated vertex is one). Values are
 * not read: a stored zero is an edge.
 * Errors: SLA_ERR_ARGUMENT (A NULL), SLA_ERR_DIMENSION (not square),
 * SLA_ERR_NOMEM. */
SLA_API sla_status sla_graph_components(sla_ctx *ctx, const sla_matrix *A, sla_int *labels,
                                        sla_int *count);

/* Degrees: deg[i] = sum over the stored off-diagonal a_ij of row i of
 * a_ij (weighted) or of 1 (not weighted), for value array ib. n entries. */
SLA_API sla_status sla_graph_degree(sla_ctx *ctx, const sla_matrix *A, sla_int ib, bool weighted,
                                    double *deg);

/* The graph Laplacian L = diag(rowsum(A)) - A for every value array of A,
 * as a new float64 matrix on the pattern of A plus the diagonal: for a
 * symmetric weighted adjacency W (= A), L = D - W with D the weighted
 * degrees. A's diagonal cancels (l_ii = sum_{j != i} a_ij), so self loops
 * do not matter and L 1 = 0. A non-symmetric A gives the out-degree
 * Laplacian (rows sum to zero). Symmetrize first (A + A^T with
 * sla_spadd_*) for the Laplacian of the undirected graph. */
SLA_API sla_status sla_graph_laplacian(sla_ctx *ctx, const sla_matrix *A, sla_matrix **L);

/* VJP of sla_graph_laplacian: gL [nbatch][nnz(L)] to gA [nbatch][nnz(A)]:
 * ga_ij = gl_ii - gl_ij (0 on the diagonal). */
SLA_API sla_status sla_graph_laplacian_vjp(sla_ctx *ctx, const sla_matrix *A,
                                           const sla_matrix *L, const double *gL, double *gA);

/* ---- partitioning (serial; the distributed layer's scatter does the same
 * on one rank) ------------------------------------------------------------ */

/* How sla_partition splits the rows of a square matrix into parts. */
typedef enum sla_partition_method {
    SLA_PARTITION_METIS = 0,      /* METIS_PartGraphKway on the pattern of A + A^T
                                     without the diagonal (SLA_ERR_UNAVAILABLE when
                                     METIS is not in the build) */
    SLA_PARTITION_RCB = 1,        /* recursive coordinate bisection of coords: each
                                     cut across the longest extent, sizes in
                                     proportion to the parts on each side */
    SLA_PARTITION_HILBERT = 2,    /* order along a Hilbert curve through coords,
                                     cut in equal pieces */
    SLA_PARTITION_CONTIGUOUS = 3  /* row blocks [n q / P, n (q + 1) / P) */
} sla_partition_method;

/* part[i] in [0, nparts) for every row i of the square matrix A.
 * coords: n x dim point coordinates, row-major (coords[i * dim + d]), dim 1,
 * 2 or 3; read by rcb and hilbert only (may be NULL for the others). rcb,
 * hilbert and contiguous give every part floor(n / P) or ceil(n / P) rows;
 * metis balances within its default 3 % and can leave a part empty on tiny
 * graphs. Deterministic (METIS with a fixed seed). Values are not read.
 * Errors: SLA_ERR_ARGUMENT (NULL, unknown method, coords missing or dim not
 * in 1..3, coordinates not finite), SLA_ERR_DIMENSION (not square, nparts <
 * 1 or > n for n > 0), SLA_ERR_UNAVAILABLE (metis without METIS),
 * SLA_ERR_TOO_LARGE (32-bit METIS), SLA_ERR_NOMEM. */
SLA_API sla_status sla_partition(sla_ctx *ctx, const sla_matrix *A, sla_int nparts,
                                 sla_partition_method method, const double *coords, int dim,
                                 sla_int *part);

/* Part k of a partition, as a process that owns it would hold it.
 * Local numbering: rows 0..nowned-1 are the owned rows (owned[i], ascending
 * global numbers); local columns 0..nowned-1 are the same unknowns, columns
 * nowned..nowned+nghost-1 the ghosts (global numbers ghost[g], sorted by
 * owner, then by global number). With x_local = [x[owned]; x[ghost]] the
 * product A_local x_local is rows owned of A x. */
typedef struct sla_partition_local {
    sla_int nparts, k;
    sla_int nowned, nghost;
    sla_int *owned;       /* [nowned] global rows of part k */
    sla_int *ghost;       /* [nghost] global columns read from other parts */
    sla_int *ghost_owner; /* [nghost] the part that owns ghost[g] */
    sla_int *recv_ptr;    /* [nparts + 1] ghosts of part q: g in [recv_ptr[q], recv_ptr[q+1]) */
    sla_int *send_ptr;    /* [nparts + 1] rows part q needs from k: send_rows[send_ptr[q] ..
                             send_ptr[q+1]) (empty for q == k) */
    sla_int *send_rows;   /* [send_ptr[nparts]] local row numbers (ascending per part) */
    sla_int *src;         /* [nnz(A_local)] position in A of each local entry */
    sla_matrix *A;        /* nowned x (nowned + nghost), every value array of A
                             (A's dtype) */
} sla_partition_local;

/* Part k of the partition part (n entries in [0, nparts)) of the square
 * matrix A: its local matrix and the halo (see sla_partition_local). Free
 * with sla_partition_local_destroy. Errors: SLA_ERR_ARGUMENT (NULL),
 * SLA_ERR_DIMENSION (not square), SLA_ERR_INDEX (k or a part id out of
 * [0, nparts)), SLA_ERR_NOMEM. Any dtype: the local matrix has A's. */
SLA_API sla_status sla_partition_extract(sla_ctx *ctx, const sla_matrix *A, sla_int nparts,
                                         const sla_int *part, sla_int k,
                                         sla_partition_local **out);

/* Free what sla_partition_extract returned; accepts NULL, sets *p = NULL. */
SLA_API void sla_partition_local_destroy(sla_partition_local **p);

/* Edge cut of a partition: the number of stored off-diagonal entries a_ij
 * with part[i] != part[j] (each stored entry counted once). */
SLA_API sla_status sla_partition_edge_cut(sla_ctx *ctx, const sla_matrix *A,
                                          const sla_int *part, sla_int *cut);

#ifdef __cplusplus
}
#endif
#endif
