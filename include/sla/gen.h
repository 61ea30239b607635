/* sla/gen.h — generators for the field's standard test problems.
 *
 * Grids have N interior points per side and homogeneous Dirichlet
 * boundaries; unknowns are numbered lexicographically (x fastest). Matrices
 * are unscaled (no 1/h^2): poisson2d is the 5-point Laplacian with 4 on the
 * diagonal and -1 off it; scale the right-hand side by h^2 = 1/(N+1)^2.
 */
#ifndef SLA_GEN_H
#define SLA_GEN_H

#include "matrix.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Poisson in dim = 1, 2 or 3 dimensions (3-, 5- or 7-point stencil),
 * n = N^dim. */
SLA_API sla_status sla_gen_poisson(sla_ctx *ctx, int dim, sla_int N,
                           sla_matrix **out);

/* 2-D Helmholtz with absorption, complex symmetric (A = A^T, not
 * Hermitian): the 5-point Laplacian minus (k h)^2 (1 + i alpha) on the
 * diagonal, h = 1/(N+1), n = N^2, dtype SLA_C128: -Delta u - k^2 (1 + i
 * alpha) u = f scaled by h^2. alpha > 0 damps (a shifted-Laplacian /
 * absorbing medium; alpha = 0 is the indefinite real Helmholtz operator
 * stored as complex). k >= 0 and alpha finite. */
SLA_API sla_status sla_gen_helmholtz2d(sla_ctx *ctx, sla_int N, double k, double alpha,
                                       sla_matrix **out);

/* Variable-coefficient diffusion -div(kappa grad u) on the unit square,
 * kappa constant on each of the (N+1)^2 cells (cell (a,b) spans
 * [a h, (a+1) h] x [b h, (b+1) h], a fastest). The coupling across an
 * edge is the mean of kappa on the two cells beside it (finite volumes);
 * kappa = 1 gives poisson2d. kappa must be finite and positive. */
SLA_API sla_status sla_gen_diffusion2d(sla_ctx *ctx, sla_int N, const double *kappa,
                               sla_matrix **out);

/* New values on the pattern of sla_gen_diffusion2d (for training loops):
 * vals receives nnz values in that matrix's CSR order. */
SLA_API sla_status sla_gen_diffusion2d_values(sla_ctx *ctx, sla_int N,
                                      const double *kappa, double *vals);

/* VJP of kappa -> values: dkappa[c] = sum_k dvals[k] d vals[k] / d kappa[c]
 * ((N+1)^2 entries, overwritten). The map is linear, so this is exact. */
SLA_API sla_status sla_gen_diffusion2d_vjp(sla_ctx *ctx, sla_int N,
                                   const double *dvals, double *dkappa);

/* Convection-diffusion -Laplace(u) + (bx, by) . grad u, first-order upwind
 * convection, multiplied by h^2: nonsymmetric, an M-matrix for any b. */
SLA_API sla_status sla_gen_convdiff2d(sla_ctx *ctx, sla_int N, double bx, double by,
                              sla_matrix **out);

/* Anisotropic diffusion -(eps u_xx + u_yy), 5-point, unscaled. */
SLA_API sla_status sla_gen_aniso2d(sla_ctx *ctx, sla_int N, double eps,
                           sla_matrix **out);

/* What sla_gen_random makes (the values are those of the former integer
 * `kind` argument, which stay valid). */
typedef enum sla_gen_kind {
    SLA_GEN_GENERAL = 0,   /* unsymmetric pattern and values, strictly dominant diagonal */
    SLA_GEN_SYMMETRIC = 1, /* symmetric, random diagonal (in general indefinite) */
    SLA_GEN_SPD = 2        /* symmetric, diagonal made strictly dominant (SPD) */
} sla_gen_kind;

/* Random sparse matrix with about `per_row` off-diagonal entries per row,
 * values uniform in [-1, 1], seeded, of the given kind (another value is
 * SLA_ERR_ARGUMENT). For tests and benchmarks. */
SLA_API sla_status sla_gen_random(sla_ctx *ctx, sla_int n, sla_int per_row, sla_gen_kind kind,
                          uint64_t seed, sla_matrix **out);

/* Unsymmetric arrowhead matrix of order n: a banded body (rows and columns
 * 0 .. n-ndense-1, half bandwidth `band`) bordered by ndense dense rows and
 * columns at the end. Off-diagonal values are independent uniform in
 * [-1, 1] (so A != A^T in values), seeded; the diagonal is of random sign
 * and strictly dominates its row (|a_ii| >= 1 + sum_j |a_ij|), so A is
 * nonsingular. nnz = (n - ndense)(2 band + 1 + ndense) + ndense n minus the
 * band's clipped corners. */
SLA_API sla_status sla_gen_arrow(sla_ctx *ctx, sla_int n, sla_int ndense, sla_int band, uint64_t seed,
                         sla_matrix **out);

#ifdef __cplusplus
}
#endif
#endif
