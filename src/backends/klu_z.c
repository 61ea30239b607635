/* KLU complex backend: left-looking sparse LU with a BTF pre-ordering in
 * complex128 (klu_zl_*, 64-bit indices; values interleaved).
 *
 * sla's CSR arrays of A are the CSC arrays of M = A^T, and KLU factors M:
 *     P R^-1 M Q = L U + F
 * (R = diag(Rs), real row scaling; F the off-diagonal BTF blocks; L unit
 * lower). A x = b is M^T x = b (klu_zl_tsolve, conj_solve 0); A^T x = b is
 * M x = b (klu_zl_solve); A^H x = b is conj(M) x = b, solved as
 * M conj(x) = conj(b) (klu_zl_tsolve's conj_solve would give M^H = conj(A)).
 * det(A) = det(M) = sign(P) sign(Q) prod(Rs) prod(Udiag).
 *
 * Orderings, errors and locking as in the real backend (klu.c): auto and
 * amd use AMD on each BTF block, natural neither BTF nor reordering, metis
 * is refused; structurally singular patterns, NaN or Inf values, zero and
 * rounding-noise pivots are refused naming the row. Solves with one numeric
 * object are serialized (KLU uses its workspace).
 */
#include "zbackend.h"

#include <math.h>
#include <string.h>

#include <klu.h>

typedef SuiteSparse_long ss_int;
_Static_assert(sizeof(ss_int) == sizeof(sla_int), "KLU's long index must be 64-bit like sla_int");

typedef struct kluz_sym {
    sla_allocator alloc;
    sla_int n, nnz;
    ss_int *Ap, *Ai;          /* CSC of M = A^T */
    klu_l_symbolic *symbolic; /* NULL when n == 0 */
    klu_l_common common;
} kluz_sym;

typedef struct kluz_num {
    sla_allocator alloc;
    klu_l_numeric *numeric; /* NULL when n == 0 */
    klu_l_common common;
#ifdef _OPENMP
    omp_lock_t lock; /* klu_zl_solve writes numeric->Work and common */
#endif
    double rcond;
} kluz_num;

static void kluz_free_sym(void *p)
{
    kluz_sym *S = p;
    if (!S) return;
    sla_allocator a = S->alloc;
    if (S->symbolic) klu_l_free_symbolic(&S->symbolic, &S->common);
    sla__free(&a, S->Ap);
    sla__free(&a, S->Ai);
    sla__free(&a, S);
}

static void kluz_free_num(void *p)
{
    kluz_num *N = p;
    if (!N) return;
    sla_allocator a = N->alloc;
    if (N->numeric) klu_zl_free_numeric(&N->numeric, &N->common);
#ifdef _OPENMP
    omp_destroy_lock(&N->lock);
#endif
    sla__free(&a, N);
}

static sla_status kluz_error(sla_ctx *ctx, const char *call, ss_int status)
{
    switch (status) {
    case KLU_OUT_OF_MEMORY: return sla__error(ctx, SLA_ERR_NOMEM, "klu: out of memory in %s", call);
    case KLU_TOO_LARGE: return sla__error(ctx, SLA_ERR_TOO_LARGE, "klu: integer overflow in %s", call);
    default:
        return sla__error(ctx, SLA_ERR_ARGUMENT, "klu: %s failed with KLU status %lld", call,
                          (long long)status);
    }
}

static sla_status kluz_analyze(sla_ctx *ctx, const sla_matrix *A, const sla__direct_opts *o, void **sym)
{
    sla_status st = SLA_OK;
    sla_ordering ord = o ? o->ordering : SLA_ORDER_AUTO;
    if (!sym) return sla__error(ctx, SLA_ERR_ARGUMENT, "klu analyze: sym is NULL");
    *sym = NULL;
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "klu analyze: matrix is NULL");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "klu analyze: matrix is %lld x %lld, not square",
                          (long long)A->nrows, (long long)A->ncols);
    if (ord == SLA_ORDER_METIS)
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "klu: ordering metis is not available with KLU (it orders with AMD "
                          "after a BTF pre-ordering); use ordering amd, natural or auto, or "
                          "method umfpack for metis");
    if (ord != SLA_ORDER_AUTO && ord != SLA_ORDER_AMD && ord != SLA_ORDER_NATURAL)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "klu: unknown ordering %d", (int)ord);
    kluz_sym *S = sla__ctx_calloc(ctx, 1, sizeof *S, "klu symbolic object");
    if (!S) return SLA_ERR_NOMEM;
    S->alloc = sla__ctx_alloc(ctx);
    S->n = A->nrows;
    S->nnz = A->nnz;
    S->Ap = sla__ctx_malloc(ctx, (size_t)S->n + 1, sizeof *S->Ap, "klu column pointers");
    S->Ai = S->Ap ? sla__ctx_malloc(ctx, (size_t)S->nnz, sizeof *S->Ai, "klu row indices") : NULL;
    if (!S->Ai) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    for (sla_int i = 0; i <= S->n; i++) S->Ap[i] = (ss_int)A->rowptr[i];
    for (sla_int k = 0; k < S->nnz; k++) S->Ai[k] = (ss_int)A->colind[k];
    klu_l_defaults(&S->common);
    if (S->n == 0) goto done;
    st = sla__structural_check(ctx, "klu", A);
    if (st) goto done;
    if (ord == SLA_ORDER_NATURAL) {
        S->common.btf = 0;
        S->symbolic = klu_l_analyze_given((ss_int)S->n, S->Ap, S->Ai, NULL, NULL, &S->common);
    } else {
        S->common.ordering = 0; /* AMD */
        S->symbolic = klu_l_analyze((ss_int)S->n, S->Ap, S->Ai, &S->common);
    }
    if (!S->symbolic) st = kluz_error(ctx, "symbolic analysis", S->common.status);
done:
    if (st) kluz_free_sym(S);
    else *sym = S;
    return st;
}

static sla_status kluz_factor(sla_ctx *ctx, void *sym, const sla_matrix *A, sla_int ib, void **num)
{
    kluz_sym *S = sym;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__z *ax = NULL;
    if (!num) return sla__error(ctx, SLA_ERR_ARGUMENT, "klu factor: num is NULL");
    *num = NULL;
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "klu factor: symbolic object is NULL");
    sla_status st = sla__check_factor_args(ctx, "klu", A, ib, S->n, S->nnz, (const sla_int *)S->Ap,
                                           (const sla_int *)S->Ai);
    if (st) return st;
    kluz_num *N = sla__ctx_calloc(ctx, 1, sizeof *N, "klu numeric object");
    if (!N) return SLA_ERR_NOMEM;
    N->alloc = a;
    N->common = S->common;
    N->rcond = -1.0;
#ifdef _OPENMP
    omp_init_lock(&N->lock);
#endif
    if (S->n == 0) goto done;
    /* KLU reads the values only during the factorization */
    ax = sla__zvalues(ctx, A, ib, false, "klu values");
    if (!ax) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    st = sla__zcheck_finite_values(ctx, "klu", S->nnz, ax, ib);
    if (st) goto done;
    N->numeric = klu_zl_factor(S->Ap, S->Ai, (double *)ax, S->symbolic, &N->common);
    if (!N->numeric || N->common.status != KLU_OK) {
        if (N->common.status == KLU_SINGULAR)
            /* column singular_col of M is row singular_col of A */
            st = sla__error(ctx, SLA_ERR_SINGULAR,
                            "klu: matrix is singular: zero pivot at row %lld (linearly "
                            "dependent on the rows eliminated before it)",
                            (long long)N->common.singular_col);
        else
            st = kluz_error(ctx, "numeric factorization", N->common.status);
    }
    if (!st)
        /* rows of M divided by Rs (NULL: no scaling); column Q[k] of M is row Q[k] of A */
        st = sla__zpivot_check(ctx, "klu", A, ax, N->numeric->Rs, false,
                               (const sla__z *)N->numeric->Udiag, (const sla_int *)S->symbolic->Q);
    if (!st && klu_zl_rcond(S->symbolic, N->numeric, &N->common)) N->rcond = N->common.rcond;
done:
    sla__free(&a, ax);
    if (st) kluz_free_num(N);
    else *num = N;
    return st;
}

static sla_status kluz_solve(sla_ctx *ctx, void *sym, void *num, int op, sla_int nrhs,
                             const sla__z *b, sla_int ldb, sla__z *x, sla_int ldx)
{
    kluz_sym *S = sym;
    kluz_num *N = num;
    if (!S || !N) return sla__error(ctx, SLA_ERR_ARGUMENT, "klu solve: NULL factor");
    sla_status st = sla__zcheck_solve_args(ctx, "klu", op, S->n, nrhs, b, ldb, x, ldx);
    if (st || S->n == 0 || nrhs == 0) return st;
    const sla_int n = S->n;
    for (sla_int j = 0; j < nrhs; j++) {
        memcpy(x + j * ldx, b + j * ldb, (size_t)n * sizeof *x);
        if (op == 2) sla__zconj(n, x + j * ldx);
    }
    ss_int ok;
#ifdef _OPENMP
    omp_set_lock(&N->lock);
#endif
    /* A = M^T: A x = b is M^T x = b (tsolve); A^T and (conjugated) A^H are M x = b (solve) */
    if (op == 0)
        ok = klu_zl_tsolve(S->symbolic, N->numeric, (ss_int)ldx, (ss_int)nrhs, (double *)x, 0, &N->common);
    else
        ok = klu_zl_solve(S->symbolic, N->numeric, (ss_int)ldx, (ss_int)nrhs, (double *)x, &N->common);
    ss_int status = N->common.status;
#ifdef _OPENMP
    omp_unset_lock(&N->lock);
#endif
    if (!ok) return kluz_error(ctx, "solve", status);
    if (op == 2)
        for (sla_int j = 0; j < nrhs; j++) sla__zconj(n, x + j * ldx);
    return sla__zcheck_solution(ctx, "klu", n, nrhs, b, ldb, x, ldx);
}

static sla_status kluz_logdet(sla_ctx *ctx, void *sym, void *num, sla__z *phase, double *logabs)
{
    kluz_sym *S = sym;
    kluz_num *N = num;
    if (!S || !N || !phase || !logabs)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "klu logdet: NULL argument");
    *phase = 1.0;
    *logabs = 0.0;
    if (S->n == 0) return SLA_OK;
    const ss_int n = (ss_int)S->n;
    const klu_l_numeric *K = N->numeric;
    const sla__z *ud = (const sla__z *)K->Udiag;
    sla__z ph = 1.0;
    double l = 0.0;
    for (ss_int i = 0; i < n; i++) sla__zlogdet_acc(ud[i], &ph, &l);
    if (ph == 0.0) {
        *phase = 0.0;
        *logabs = -INFINITY;
        return SLA_OK;
    }
    /* rows of M were divided by Rs: det(M) = det(scaled) * prod(Rs) */
    if (K->Rs)
        for (ss_int i = 0; i < n; i++) l += log(K->Rs[i]);
    sla_allocator a = sla__ctx_alloc(ctx);
    unsigned char *seen = sla__ctx_malloc(ctx, (size_t)n, 1, "permutation parity");
    if (!seen) return SLA_ERR_NOMEM;
    double s = sla__perm_sign(n, (const sla_int *)K->Pnum, NULL, seen) *
               sla__perm_sign(n, (const sla_int *)S->symbolic->Q, NULL, seen);
    sla__free(&a, seen);
    *phase = s * ph;
    *logabs = l;
    return SLA_OK;
}

static double kluz_rcond(const void *num) { return num ? ((const kluz_num *)num)->rcond : -1.0; }

const sla__zdirect_ops sla__zbackend_klu = {
    .name = "klu",
    .hermitian = false,
    .analyze = kluz_analyze,
    .factor = kluz_factor,
    .solve = kluz_solve,
    .logdet = kluz_logdet,
    .selinv = NULL,
    .rcond = kluz_rcond,
    .free_num = kluz_free_num,
    .free_sym = kluz_free_sym,
};
