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
 *
 * Complex values: SLA_C128 (pairs of doubles, real part first, the layout
 * of sla_complex) and SLA_C64 (pairs of floats, a storage format computed
 * in complex128 as float32 is in float64). A value array of a complex
 * matrix holds nnz complex numbers (2 nnz reals); every function below
 * that takes or returns values uses the matrix's own dtype. The real
 * operations (sla_matvec, sla_solver_*, sla_logdet, sla_eigsh, ...) refuse
 * a complex matrix by name with SLA_ERR_UNSUPPORTED; their complex
 * counterparts are in sla/complex.h.
 */
#ifndef SLA_MATRIX_H
#define SLA_MATRIX_H

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sla_dtype { SLA_F64 = 0, SLA_F32 = 1, SLA_C128 = 2, SLA_C64 = 3 } sla_dtype;

/* Whether dtype holds complex values (SLA_C128, SLA_C64). */
static inline bool sla_dtype_is_complex(sla_dtype t) { return t == SLA_C128 || t == SLA_C64; }
/* Bytes of one value of dtype (8, 4, 16, 8); 0 for an unknown dtype. */
SLA_API size_t sla_dtype_size(sla_dtype t);
/* "float64", "float32", "complex128", "complex64". */
SLA_API const char *sla_dtype_name(sla_dtype t);

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

/* Both index arrays of the COO form, rowind and colind (nnz entries each,
 * either may be NULL), written by the context's threads in row blocks (a
 * large pattern handed to a binding, e.g. a product's). SLA_ERR_ARGUMENT
 * for a NULL A. */
SLA_API sla_status sla_matrix_get_coo(sla_ctx *ctx, const sla_matrix *A, sla_int *rowind,
                                      sla_int *colind);

/* 1 when rowind and colind (nnz entries each) are exactly A's COO form (as
 * sla_matrix_get_coo writes it), else 0 (also for a NULL argument). For a
 * binding that hands out a result's indices and must notice when they
 * were rewritten in place; threaded like sla_matrix_get_coo. */
SLA_API int sla_matrix_coo_equal(sla_ctx *ctx, const sla_matrix *A, const sla_int *rowind,
                                 const sla_int *colind);

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

/* Whether A holds complex values. */
SLA_API bool sla_matrix_is_complex(const sla_matrix *A);

/* Dense copy of value array ib, column-major, ld >= nrows (real A;
 * a complex A: SLA_ERR_UNSUPPORTED, see sla_matrix_to_dense_z). */
SLA_API sla_status sla_matrix_to_dense(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                               double *dense, sla_int ld);

/* Dense complex copy of value array ib, column-major, ld >= nrows (a real
 * A is copied with zero imaginary parts). */
SLA_API sla_status sla_matrix_to_dense_z(sla_ctx *ctx, const sla_matrix *A, sla_int ib,
                                         sla_complex *dense, sla_int ld);

/* Structure queries on value array ib. symmetric: |a_ij - a_ji| <= tol *
 * max|a| for every stored pair (a missing partner counts as 0). For a
 * complex A, symmetric means A = A^T (complex symmetric, e.g. Helmholtz)
 * and hermitian A = A^H (|a_ij - conj(a_ji)| <= tol max|a|, real diagonal);
 * positive_diagonal asks for real positive diagonal entries. For a real A,
 * hermitian equals symmetric. */
typedef struct sla_matrix_props {
    bool square;
    bool structurally_symmetric;
    bool symmetric;            /* numerically, within tol */
    bool positive_diagonal;    /* every diagonal entry stored and > 0 */
    bool diagonally_dominant;  /* |a_ii| >= sum_j!=i |a_ij| on every row */
    double symmetry_error;     /* max |a_ij - a_ji| / max |a| */
    double max_abs;            /* max |a_ij| */
    bool is_complex;           /* complex values */
    bool hermitian;            /* A = A^H within tol (= symmetric for real A) */
    double hermitian_error;    /* max |a_ij - conj(a_ji)| / max |a| */
} sla_matrix_props;

SLA_API sla_status sla_matrix_properties(sla_ctx *ctx, const sla_matrix *A,
                                 sla_int ib, double tol,
                                 sla_matrix_props *props);

/* How sla_svds and sla_lsq (LSQR, LSMR) form the products A^T u (their
 * `transpose` option): AUTO is SCATTER (measured on a quiet machine by
 * bench_svds and bench_lsq: the explicit transpose gained nothing at 1 or
 * 2 threads, 0.97-1.05x; src/core/transpose.c); EXPLICIT builds the CSR of A^T once per call (memory: about
 * the matrix again, nnz values and indices) and gathers by its rows,
 * threaded without reductions; SCATTER scatters A's rows into y (no extra
 * memory; with threads, nt private copies of y summed at the end). The
 * results agree to rounding (bit for bit on one thread). */
typedef enum sla_transpose_mode {
    SLA_TRANSPOSE_AUTO = 0,
    SLA_TRANSPOSE_EXPLICIT,
    SLA_TRANSPOSE_SCATTER
} sla_transpose_mode;

#ifdef __cplusplus
}
#endif
#endif
