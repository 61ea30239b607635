/* Private: the interface every direct (factorization) backend implements.
 *
 * A backend is one static const table. The solver object calls analyze once
 * per pattern (ordering + symbolic factorization), factor once per value
 * array (reusing the symbolic object; called again after new values: that
 * is the refactorization of a training loop), and solve for any number of
 * right-hand sides, plain or transposed, with the same numeric factor.
 *
 * Index convention: sla's CSR of A is the CSC of A^T. Backends that take
 * CSC (all of them) either factor A^T and swap plain/transposed solves, or
 * use A = A^T for symmetric modes. Backends never print, exit or abort;
 * they return a status with a message in ctx.
 */
#ifndef SLA_DIRECT_H
#define SLA_DIRECT_H

#include "../core/internal.h"

typedef struct sla__direct_opts {
    sla_ordering ordering;  /* fill-reducing ordering request */
    bool ldlt;              /* CHOLMOD: LDL^T (simplicial) instead of LL^T (supernodal) */
    int nthreads;           /* threads the backend may use (BLAS etc.), >= 1 */
    double memory_limit;    /* mumps: bytes one factorization may take by its analysis's
                               estimate (INFOG(17)), else SLA_ERR_TOO_LARGE; 0: no limit */
} sla__direct_opts;

/* What the symbolic analysis predicts (filled by analyze; 0 = unknown). */
typedef struct sla__direct_stats {
    double factor_nnz;      /* entries in the factors */
    double flops;           /* floating-point operations of one factorization */
    double bytes;           /* memory of one numeric factorization */
    char ordering[16];      /* the ordering actually used ("amd", "metis", ...) */
} sla__direct_stats;

typedef struct sla__direct_ops {
    const char *name; /* "cholmod", "umfpack", "klu", "superlu" */

    /* Symbolic analysis of A's pattern (square, checked by the caller).
     * *sym is NULL on failure. stats may be NULL (no predictions wanted).
     * SLA_ERR_ARGUMENT for A or sym NULL; SLA_ERR_SINGULAR for structural
     * singularity when the backend detects it here. */
    sla_status (*analyze)(sla_ctx *ctx, const sla_matrix *A, const sla__direct_opts *o,
                          void **sym, sla__direct_stats *stats);

    /* Numeric factorization of value array ib. *num is NULL on failure.
     * SLA_ERR_ARGUMENT (NULL argument, ib out of range), a matrix other
     * than the analysed one (n, nnz or pattern: SLA_ERR_ARGUMENT, SuperLU
     * SLA_ERR_DIMENSION; the message says "analysis"), SLA_ERR_VALUE (a
     * value is NaN or Inf: "value k of array ib"), SLA_ERR_NOT_SPD
     * (Cholesky: "not positive definite at column k"), SLA_ERR_SINGULAR
     * (zero pivot: name it), SLA_ERR_NOMEM. */
    sla_status (*factor)(sla_ctx *ctx, void *sym, const sla_matrix *A, sla_int ib, void **num);

    /* x = A^-1 b (transpose: A^-T b) for nrhs columns. b and x may not alias.
     * SLA_ERR_ARGUMENT for nrhs < 0, ldb < n or ldx < n, a NULL factor. */
    sla_status (*solve)(sla_ctx *ctx, void *sym, void *num, bool transpose, sla_int nrhs,
                        const double *b, sla_int ldb, double *x, sla_int ldx);

    /* sign (+1, -1; 0 if singular) and log|det A| from the factor. */
    sla_status (*logdet)(sla_ctx *ctx, void *sym, void *num, double *sign, double *logabsdet);

    void (*free_num)(void *num);
    void (*free_sym)(void *sym);

    /* Reciprocal condition estimate of the factor, computed at factor time
     * (CHOLMOD: cholmod_l_rcond; UMFPACK: Info[UMFPACK_RCOND]; KLU:
     * klu_l_rcond; SuperLU: min/max |u_jj|, refined by dgscon in the 1-norm
     * below 1e-6); -1 when unknown. May be NULL (unknown). */
    double (*rcond)(const void *num);

    /* Selected inversion: z[k] = (A^-1)[col_k, row_k] for every stored
     * entry k of A (nnz values) from the numeric factor, about the cost of
     * the factorization (CHOLMOD: Takahashi recurrences, for the symmetric
     * matrix the factor is of; UMFPACK: sla__lu_selinv). NULL when the
     * backend has none (KLU, SuperLU): logdet's gradient then refactors
     * with UMFPACK or solves column by column. SLA_ERR_SINGULAR,
     * SLA_ERR_NOMEM. */
    sla_status (*selinv)(sla_ctx *ctx, void *sym, void *num, const sla_matrix *A, double *z);

    /* Convert a numeric factor in place to the form whose single
     * right-hand-side solves are fastest (CHOLMOD: a supernodal factor to a
     * simplicial LL^T one, about 15 % faster: no BLAS call per supernode;
     * no-op for simplicial factors). NULL when the backend has no such
     * choice; eigsh's shift-invert calls it when present. */
    sla_status (*make_simplicial)(sla_ctx *ctx, void *num);

    /* The factor is of the symmetric matrix built from one triangle of A
     * (CHOLMOD's Cholesky and LDL^T): what is read from it (selinv, the
     * logdet gradient) is that of A only when A is exactly symmetric. */
    bool one_triangle;
} sla__direct_ops;

/* The compiled-in backends; NULL when not available in this build. */
const sla__direct_ops *sla__backend_cholmod(void);
const sla__direct_ops *sla__backend_umfpack(void);
const sla__direct_ops *sla__backend_klu(void);
const sla__direct_ops *sla__backend_superlu(void);
const sla__direct_ops *sla__backend_mumps(void);

/* Entries of L + U of an LU factorization of the square A without
 * pivoting, from the Cholesky column counts of the pattern of A + A^T under
 * `ordering` (CHOLMOD's symbolic analysis; O(nnz) memory). For backends
 * whose own analysis does not predict fill (SuperLU; KLU with the natural
 * ordering), so that memory_limit can refuse a factorization that will not
 * fit. 0 when unknown (no SuiteSparse, or CHOLMOD ran out of memory). */
double sla__fill_estimate(const sla_matrix *A, sla_ordering ordering);

/* ---- shared by the backends (src/backends/common.c) ------------------ */

/* Structural singularity of the square A (sla's CSR pattern): SLA_OK, or
 * SLA_ERR_SINGULAR naming the first empty row, else the first empty
 * column, else an unmatched column, always with the structural rank
 * ("who: matrix is structurally singular: row k is empty (structural rank
 * r < n = n)"); SLA_ERR_NOMEM. A maximum matching, iterative, O(n) work
 * space. */
sla_status sla__structural_check(sla_ctx *ctx, const char *who, const sla_matrix *A);

/* +1 or -1: the parity of the permutation p of 0..n-1 from its cycle
 * count. p holds int64 entries; when p is NULL, p32 holds int32 ones.
 * mark: n bytes of work space. */
double sla__perm_sign(sla_int n, const sla_int *p, const int32_t *p32, unsigned char *mark);

/* The LU backends' rounding-noise pivot test (KLU and UMFPACK report only
 * exactly zero pivots): n * eps, at least 8 eps. */
double sla__pivot_tolerance(sla_int n);

/* For a factor of M = A^T (A's rows are M's columns) with M's rows scaled
 * by rs (divided by rs[i], or multiplied when rs_recip; rs NULL: no
 * scaling): SLA_ERR_SINGULAR when the smallest |udiag[k]| relative to the
 * largest entry of column q[k] of the scaled M (row q[k] of A, values ax)
 * is at most sla__pivot_tolerance(n), naming that row; SLA_ERR_NOMEM. */
sla_status sla__pivot_check(sla_ctx *ctx, const char *who, const sla_matrix *A, const double *ax,
                            const double *rs, bool rs_recip, const double *udiag,
                            const sla_int *q);

/* The argument checks of a backend's factor (who: "umfpack", ...):
 * SLA_ERR_ARGUMENT when A is NULL, is not the analysed n x n matrix with
 * nnz entries ("does not match the analysis"), has another pattern than
 * rowptr/colind (64-bit copies kept by the analysis; NULL: not compared),
 * or when ib is not a value array of A. */
sla_status sla__check_factor_args(sla_ctx *ctx, const char *who, const sla_matrix *A, sla_int ib,
                                  sla_int n, sla_int nnz, const sla_int *rowptr,
                                  const sla_int *colind);

/* The argument checks of a backend's solve: SLA_ERR_ARGUMENT for nrhs < 0,
 * ldb < n or ldx < n, and for b or x NULL when there is something to
 * solve (n > 0 and nrhs > 0). */
sla_status sla__check_solve_args(sla_ctx *ctx, const char *who, sla_int n, sla_int nrhs,
                                 const double *b, sla_int ldb, const double *x, sla_int ldx);

/* SLA_ERR_VALUE when one of the nnz values ax (value array ib of a matrix)
 * is NaN or Inf, naming the first ("who: value k of array ib is nan");
 * backends would take it for a zero pivot or factor it silently. */
sla_status sla__check_finite_values(sla_ctx *ctx, const char *who, sla_int nnz, const double *ax,
                                    sla_int ib);

/* Value array ib of A as a new double array (what: the allocation's name
 * in an out-of-memory message); NULL when out of memory. */
double *sla__values_f64(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const char *what);

/* Value array ib of A as doubles: A's own array for SLA_F64 (to be only
 * read; not const for libraries that take double *), else a converted copy
 * returned also in *copy (free it; *copy is NULL otherwise). NULL when out
 * of memory. */
double *sla__values_f64_view(sla_ctx *ctx, const sla_matrix *A, sla_int ib, double **copy,
                             const char *what);

/* ---- selected inversion and solver internals (logdet, eigsh) ---------- */

/* An LU factorization of M = A^T (sla's CSR of A, read as CSC) with row
 * scaling and permutations: B = diag(rhat) M, B[P[k], Q[l]] = (L U)[k, l],
 * L unit lower triangular in row form (Lp, Lj, Lx; a stored diagonal is
 * ignored), U upper triangular in column form (Up, Ui, Ux; a stored
 * diagonal is ignored) with diagonal Dx; rhat NULL: no scaling. UMFPACK's
 * umfpack_dl_get_numeric gives exactly this, and umfpack_zl_get_numeric
 * the complex factors zLx, zUx, zDx (with a real rhat). */
typedef struct sla__lu_factors {
    sla_int n;
    const sla_int *Lp, *Lj, *Up, *Ui, *P, *Q;
    const double *Lx, *Ux, *Dx, *rhat;
    const sla__z *zLx, *zUx, *zDx; /* complex values: for sla__zlu_selinv, instead of Lx, Ux, Dx */
    int mode; /* 0: auto (supernodes; dense blocks for large ones), 1: per-pivot scalar
                 recurrences, 2: dense blocks for every supernode, 3: none (tests) */
} sla__lu_factors;

/* z[k] = (A^-1)[col_k, row_k] for every stored entry k of A from the LU
 * factors f of M = A^T, by the unsymmetric Takahashi (Erisman-Tinney)
 * recurrences on a symbolic LU pattern closed under them
 * (src/backends/lu_selinv.c, which derives them). SLA_ERR_SINGULAR (a zero
 * pivot), SLA_ERR_NOMEM, SLA_ERR_ARGUMENT (inconsistent factors). */
sla_status sla__lu_selinv(sla_ctx *ctx, const sla_matrix *A, const sla__lu_factors *f, double *z);

/* The same for complex factors (f->zLx, zUx, zDx) of a complex A: z[k] =
 * (A^-1)[col_k, row_k], no conjugation. Same statuses. */
sla_status sla__zlu_selinv(sla_ctx *ctx, const sla_matrix *A, const sla__lu_factors *f, sla__z *z);

/* UMFPACK backend only: its selinv with sla__lu_factors.mode `mode` (0
 * auto; 1, 2 force a path: for tests). */
sla_status sla__umfpack_selinv(sla_ctx *ctx, void *sym, void *num, const sla_matrix *A, double *z, int mode);

/* The direct factorization of value array ib held by S: false (nothing
 * written) when S uses a Krylov method or ib is out of range. */
bool sla__solver_direct(const sla_solver *S, sla_int ib, const sla__direct_ops **ops, void **sym,
                        void **num);

/* The matrix S was created for. */
const sla_matrix *sla__solver_matrix(const sla_solver *S);

/* S's note: dispatch decisions, fallbacks, what the last refresh did. */
const char *sla__solver_note(const sla_solver *S);

/* Entries in the factors predicted by the analysis (0 for Krylov). */
double sla__solver_factor_nnz(const sla_solver *S);

#endif
