/* sla/matrix.h — sparse matrices: one CSR pattern, a batch of value arrays.
 *
 * A matrix is a pattern (row pointers and column indices, sorted within each
 * row, no repeats) plus nbatch value arrays of length nnz stored one after
 * the other ([nbatch][nnz]). Every value array shares the pattern: that is
 * what lets analyses (symmetry, orderings, preconditioner structure) be done
 * once and reused for all of them, and for new values in a training loop.
 *
 * Gradients with respect to a matrix are arrays of length nnz (per batch
 * entry) in the matrix's own CSR order.
 *
 * Values are float64 or float32. float32 is a storage format: kernels read
 * float32 values and compute in float64, so a float32 matrix halves the
 * value traffic of SpMV while vectors and results stay float64.
 */
#ifndef SLA_MATRIX_H
#define SLA_MATRIX_H

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sla_dtype { SLA_F64 = 0, SLA_F32 = 1 } sla_dtype;

/* SLA_COPY: the matrix copies the caller's arrays.
 * SLA_BORROW: the matrix keeps the caller's row pointers and values (the
 * caller keeps them alive and may change the values between calls; sla
 * re-validates values at solver set-up). Column indices are always
 * compressed into an internal 32-bit copy. */
typedef enum sla_ownership { SLA_COPY = 0, SLA_BORROW = 1 } sla_ownership;

typedef struct sla_matrix sla_matrix;

/* Build from coordinates (any order, duplicates summed; 0-based).
 * vals holds nbatch arrays of nnz_in entries ([nbatch][nnz_in]) of type
 * dtype; vals == NULL builds a pattern with all values 1.
 * coo_to_csr, if not NULL, receives nnz_in entries: the CSR position each
 * coordinate entry was summed into (the gradient of a COO value is the CSR
 * gradient at that position).
 * Errors: SLA_ERR_ARGUMENT, SLA_ERR_DIMENSION (negative sizes),
 * SLA_ERR_INDEX (naming the entry), SLA_ERR_VALUE (NaN/Inf, naming the
 * entry), SLA_ERR_TOO_LARGE, SLA_ERR_NOMEM. */
SLA_API sla_status sla_matrix_from_coo(sla_ctx *ctx, sla_int nrows, sla_int ncols,
                               sla_int nnz_in, const sla_int *rows,
                               const sla_int *cols, sla_dtype dtype,
                               sla_int nbatch, const void *vals,
                               sla_int *coo_to_csr, sla_matrix **out);

/* Build from CSR arrays (rowptr[nrows+1], colind[nnz], vals[nbatch][nnz]).
 * Validated: rowptr[0] == 0, non-decreasing, colind in range and strictly
 * increasing in each row, values finite. vals == NULL means all ones
 * (SLA_COPY), or, for SLA_BORROW, is allowed only when there are no stored
 * entries (rowptr[nrows] == 0: the zero matrix, whose caller may have no
 * values array at all, e.g. an empty tensor's NULL data pointer). */
SLA_API sla_status sla_matrix_from_csr(sla_ctx *ctx, sla_int nrows, sla_int ncols,
                               const sla_int *rowptr, const sla_int *colind,
                               sla_dtype dtype, sla_int nbatch,
                               const void *vals, sla_ownership own,
                               sla_matrix **out);

/* Deep copy (pattern and every value array; the copy owns its arrays). */
SLA_API sla_status sla_matrix_copy(sla_ctx *ctx, const sla_matrix *A,
                           sla_matrix **out);

/* Transpose of value array ib (or all of them when ib < 0) as a new matrix.
 * perm, if not NULL, receives nnz entries: entry k of A is entry perm[k] of
 * the transpose. */
SLA_API sla_status sla_matrix_transpose(sla_ctx *ctx, const sla_matrix *A,
                                sla_int *perm, sla_matrix **out);

SLA_API void sla_matrix_destroy(sla_matrix **A);

SLA_API sla_int sla_matrix_nrows(const sla_matrix *A);
SLA_API sla_int sla_matrix_ncols(const sla_matrix *A);
SLA_API sla_int sla_matrix_nnz(const sla_matrix *A);
SLA_API sla_int sla_matrix_nbatch(const sla_matrix *A);
SLA_API sla_dtype sla_matrix_dtype(const sla_matrix *A);

/* The row pointers (nrows + 1 entries). */
SLA_API const sla_int *sla_matrix_rowptr(const sla_matrix *A);

/* Copy the column indices out (nnz entries). */
SLA_API void sla_matrix_get_colind(const sla_matrix *A, sla_int *colind);

/* Row index of every stored entry (nnz entries), the COO form of the
 * pattern. */
SLA_API void sla_matrix_get_rowind(const sla_matrix *A, sla_int *rowind);

/* Value array ib (type dtype, nnz entries), or NULL if ib is out of range. */
SLA_API const void *sla_matrix_values(const sla_matrix *A, sla_int ib);

/* Overwrite value array ib with nnz values of the matrix's dtype
 * (validated finite). For a borrowed matrix the caller's array is written.
 * With nnz == 0 nothing is copied and vals may be NULL. */
SLA_API sla_status sla_matrix_set_values(sla_ctx *ctx, sla_matrix *A, sla_int ib,
                                 const void *vals);

/* Point a borrowed matrix (SLA_BORROW) at another caller array of nbatch
 * value arrays ([nbatch][nnz] of the matrix's dtype), validated finite; the
 * old array is no longer read. For training loops and bindings whose values
 * arrive in a new buffer each step (a PyTorch tensor): no copy is made, and
 * solvers created on A keep their analysis; call sla_solver_refresh before
 * their next solve. A matrix that owns its values: SLA_ERR_ARGUMENT. vals
 * may be NULL only when the matrix has no stored entries. */
SLA_API sla_status sla_matrix_borrow_values(sla_ctx *ctx, sla_matrix *A,
                                    const void *vals);

/* Check value array ib (all when ib < 0) for NaN/Inf: SLA_ERR_VALUE names
 * the first bad entry. */
SLA_API sla_status sla_matrix_check_values(sla_ctx *ctx, const sla_matrix *A,
                                   sla_int ib);

/* Dense copy of value array ib, column-major, ld >= nrows. */
SLA_API sla_status sla_matrix_to_dense(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                               double *dense, sla_int ld);

/* Structure queries on value array ib. symmetric: |a_ij - a_ji| <= tol *
 * max|a| for every stored pair (a missing partner counts as 0). */
typedef struct sla_matrix_props {
    bool square;
    bool structurally_symmetric;
    bool symmetric;            /* numerically, within tol */
    bool positive_diagonal;    /* every diagonal entry stored and > 0 */
    bool diagonally_dominant;  /* |a_ii| >= sum_j!=i |a_ij| on every row */
    double symmetry_error;     /* max |a_ij - a_ji| / max |a| */
    double max_abs;            /* max |a_ij| */
} sla_matrix_props;

SLA_API sla_status sla_matrix_properties(sla_ctx *ctx, const sla_matrix *A,
                                 sla_int ib, double tol,
                                 sla_matrix_props *props);

#ifdef __cplusplus
}
#endif
#endif
