/* sla/graph.h — the graph of a sparse matrix: connected components,
 * degrees and the graph Laplacian.
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

#ifdef __cplusplus
}
#endif
#endif
