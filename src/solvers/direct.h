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
     * *sym is NULL on failure. SLA_ERR_SINGULAR for structural singularity
     * when the backend detects it here. */
    sla_status (*analyze)(sla_ctx *ctx, const sla_matrix *A, const sla__direct_opts *o,
                          void **sym, sla__direct_stats *stats);

    /* Numeric factorization of value array ib. *num is NULL on failure.
     * SLA_ERR_NOT_SPD (Cholesky: "not positive definite at column k"),
     * SLA_ERR_SINGULAR (zero pivot: name it), SLA_ERR_NOMEM. */
    sla_status (*factor)(sla_ctx *ctx, void *sym, const sla_matrix *A, sla_int ib, void **num);

    /* x = A^-1 b (transpose: A^-T b) for nrhs columns. b and x may not alias. */
    sla_status (*solve)(sla_ctx *ctx, void *sym, void *num, bool transpose, sla_int nrhs,
                        const double *b, sla_int ldb, double *x, sla_int ldx);

    /* sign (+1, -1; 0 if singular) and log|det A| from the factor. */
    sla_status (*logdet)(sla_ctx *ctx, void *sym, void *num, double *sign, double *logabsdet);

    void (*free_num)(void *num);
    void (*free_sym)(void *sym);
} sla__direct_ops;

/* The compiled-in backends; NULL when not available in this build. */
const sla__direct_ops *sla__backend_cholmod(void);
const sla__direct_ops *sla__backend_umfpack(void);
const sla__direct_ops *sla__backend_klu(void);
const sla__direct_ops *sla__backend_superlu(void);

#endif
