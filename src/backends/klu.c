/* KLU backend: left-looking sparse LU with a BTF pre-ordering, for very
 * sparse (circuit-like) matrices (klu_l_*, 64-bit indices).
 *
 * sla's CSR arrays of A are the CSC arrays of M = A^T, and KLU factors M:
 *     P R^-1 M Q = L U + F
 * (R = diag(Rs) row scaling, F the off-diagonal blocks of the BTF form, L
 * unit lower). Solving A x = b is M^T x = b (klu_l_tsolve); A^T x = b is
 * M x = b (klu_l_solve). det(A) = det(M) = sign(P) sign(Q) prod(Rs) prod(Udiag).
 *
 * Orderings: auto and amd use AMD on each BTF block; natural uses no BTF
 * and no reordering (klu_l_analyze_given with identity P and Q); metis is
 * not something KLU offers and is refused with SLA_ERR_UNSUPPORTED.
 *
 * KLU reports only exactly zero pivots; factor also refuses pivots at the
 * level of rounding noise (see sla__pivot_tolerance), and analyze refuses
 * structurally singular patterns (sla__structural_check).
 *
 * Each numeric object has its own klu_l_common (KLU writes its status
 * there). klu_l_solve also uses the numeric object's workspace, so solves
 * with one numeric object are serialized by a lock; solves with different
 * numeric objects (the value arrays of a batch) run concurrently.
 */
#include "../solvers/direct.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <klu.h>

typedef SuiteSparse_long ss_int;
_Static_assert(sizeof(ss_int) == sizeof(sla_int), "KLU's long index must be 64-bit like sla_int");

typedef struct klu_sym {
    sla_allocator alloc;
    sla_int n, nnz;
    ss_int *Ap, *Ai;        /* CSC of M = A^T: A's rowptr and colind */
    klu_l_symbolic *symbolic; /* NULL when n == 0 */
    klu_l_common common;
} klu_sym;

typedef struct klu_num {
    sla_allocator alloc;
    klu_l_numeric *numeric;   /* NULL when n == 0 */
    klu_l_common common;
#ifdef _OPENMP
    omp_lock_t lock;          /* klu_l_solve writes numeric->Work and common */
#endif
    double rcond;             /* klu_l_rcond: min/max |diag U| (-1: unknown) */
} klu_num;

static void klu_free_sym(void *p)
{
    klu_sym *S = p;
    if (!S) return;
    sla_allocator a = S->alloc;
    if (S->symbolic) klu_l_free_symbolic(&S->symbolic, &S->common);
    sla__free(&a, S->Ap);
    sla__free(&a, S->Ai);
    sla__free(&a, S);
}

static void klu_free_num(void *p)
{
    klu_num *N = p;
    if (!N) return;
    sla_allocator a = N->alloc;
    if (N->numeric) klu_l_free_numeric(&N->numeric, &N->common);
#ifdef _OPENMP
    omp_destroy_lock(&N->lock);
#endif
    sla__free(&a, N);
}

static sla_status klu_status_error(sla_ctx *ctx, const char *call, ss_int status)
{
    switch (status) {
    case KLU_OUT_OF_MEMORY: return sla__error(ctx, SLA_ERR_NOMEM, "klu: out of memory in %s", call);
    case KLU_TOO_LARGE:
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "klu: integer overflow in %s", call);
    default:
        return sla__error(ctx, SLA_ERR_ARGUMENT, "klu: %s failed with KLU status %lld", call,
                          (long long)status);
    }
}

static sla_status klu_analyze_(sla_ctx *ctx, const sla_matrix *A, const sla__direct_opts *o,
                               void **sym, sla__direct_stats *stats)
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

    klu_sym *S = sla__ctx_calloc(ctx, 1, sizeof *S, "klu symbolic object");
    if (!S) return SLA_ERR_NOMEM;
    S->alloc = sla__ctx_alloc(ctx);
    S->n = A->nrows;
    S->nnz = A->nnz;
    S->Ap = sla__ctx_malloc(ctx, (size_t)S->n + 1, sizeof *S->Ap, "klu column pointers");
    S->Ai = sla__ctx_malloc(ctx, (size_t)S->nnz, sizeof *S->Ai, "klu row indices");
    if (!S->Ap || !S->Ai) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    for (sla_int i = 0; i <= S->n; i++) S->Ap[i] = (ss_int)A->rowptr[i];
    for (sla_int k = 0; k < S->nnz; k++) S->Ai[k] = (ss_int)A->colind[k];
    klu_l_defaults(&S->common);
    bool natural = (ord == SLA_ORDER_NATURAL);
    if (stats) {
        memset(stats, 0, sizeof *stats);
        snprintf(stats->ordering, sizeof stats->ordering, "%s", natural ? "natural" : "amd");
    }
    if (S->n == 0) goto done;

    /* also covers the BTF path, where klu_l_analyze would find the same
     * structural rank (its maximum transversal is the same algorithm) */
    st = sla__structural_check(ctx, "klu", A);
    if (st) goto done;
    if (natural) {
        S->common.btf = 0;
        S->symbolic = klu_l_analyze_given((ss_int)S->n, S->Ap, S->Ai, NULL, NULL, &S->common);
    } else {
        S->common.ordering = 0; /* AMD */
        S->symbolic = klu_l_analyze((ss_int)S->n, S->Ap, S->Ai, &S->common);
    }
    if (!S->symbolic) {
        st = klu_status_error(ctx, "symbolic analysis", S->common.status);
        goto done;
    }
    if (stats) {
        const klu_l_symbolic *K = S->symbolic;
        /* KLU predicts fill and flops only for its AMD ordering (exact when
         * it pivots on the diagonal); with the natural ordering they stay
         * unknown (0). Memory: a value and a row index per entry of L, U and
         * the off-diagonal blocks, and about a dozen n-vectors. */
        if (K->lnz >= 0 && K->unz >= 0) {
            double lunz = K->lnz + K->unz;
            stats->factor_nnz = lunz;
            stats->flops = K->est_flops > 0 ? K->est_flops : 0.0;
            stats->bytes = (lunz + (double)K->nzoff) * (sizeof(double) + sizeof(ss_int)) +
                           12.0 * (double)S->n * sizeof(double);
        }
    }

done:
    if (st) klu_free_sym(S);
    else *sym = S;
    return st;
}

static sla_status klu_factor_(sla_ctx *ctx, void *sym, const sla_matrix *A, sla_int ib, void **num)
{
    klu_sym *S = sym;
    sla_allocator a = sla__ctx_alloc(ctx);
    double *tmp = NULL;
    if (!num) return sla__error(ctx, SLA_ERR_ARGUMENT, "klu factor: num is NULL");
    *num = NULL;
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "klu factor: symbolic object is NULL");
    sla_status st = sla__check_factor_args(ctx, "klu", A, ib, S->n, S->nnz,
                                           (const sla_int *)S->Ap, (const sla_int *)S->Ai);
    if (st) return st;
    klu_num *N = sla__ctx_calloc(ctx, 1, sizeof *N, "klu numeric object");
    if (!N) return SLA_ERR_NOMEM;
    N->alloc = a;
    N->common = S->common;
    N->rcond = -1.0;
#ifdef _OPENMP
    omp_init_lock(&N->lock);
#endif
    if (S->n == 0) goto done;

    /* KLU reads Ax only during the factorization (it copies what it keeps). */
    double *ax = sla__values_f64_view(ctx, A, ib, &tmp, "klu values");
    if (!ax) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    /* KLU would factor a NaN or Inf without complaint */
    st = sla__check_finite_values(ctx, "klu", S->nnz, ax, ib);
    if (st) goto done;
    N->numeric = klu_l_factor(S->Ap, S->Ai, ax, S->symbolic, &N->common);
    if (!N->numeric || N->common.status != KLU_OK) {
        if (N->common.status == KLU_SINGULAR)
            /* column singular_col of M is row singular_col of A */
            st = sla__error(ctx, SLA_ERR_SINGULAR,
                            "klu: matrix is singular: zero pivot at row %lld (linearly "
                            "dependent on the rows eliminated before it)",
                            (long long)N->common.singular_col);
        else
            st = klu_status_error(ctx, "numeric factorization", N->common.status);
    }
    if (!st)
        /* Only exactly zero pivots are reported by KLU; a pivot at the
         * level of rounding noise is as singular. U's diagonal relative to
         * the columns of M with its rows divided by Rs, as KLU scales them
         * (Rs NULL: no scaling); column Q[k] of M is row Q[k] of A. */
        st = sla__pivot_check(ctx, "klu", A, ax, N->numeric->Rs, false, N->numeric->Udiag,
                              (const sla_int *)S->symbolic->Q);
    if (!st && klu_l_rcond(S->symbolic, N->numeric, &N->common)) N->rcond = N->common.rcond;

done:
    sla__free(&a, tmp);
    if (st) klu_free_num(N);
    else *num = N;
    return st;
}

static sla_status klu_solve_(sla_ctx *ctx, void *sym, void *num, bool transpose, sla_int nrhs,
                             const double *b, sla_int ldb, double *x, sla_int ldx)
{
    klu_sym *S = sym;
    klu_num *N = num;
    if (!S || !N) return sla__error(ctx, SLA_ERR_ARGUMENT, "klu solve: NULL factor");
    sla_status st = sla__check_solve_args(ctx, "klu", S->n, nrhs, b, ldb, x, ldx);
    if (st) return st;
    if (S->n == 0 || nrhs == 0) return SLA_OK;
    for (sla_int j = 0; j < nrhs; j++) memcpy(x + j * ldx, b + j * ldb, (size_t)S->n * sizeof *x);
    ss_int ok;
#ifdef _OPENMP
    omp_set_lock(&N->lock);
#endif
    /* A x = b is M^T x = b: tsolve; A^T x = b is M x = b: solve. In place, ldim = ldx. */
    if (transpose) ok = klu_l_solve(S->symbolic, N->numeric, (ss_int)ldx, (ss_int)nrhs, x, &N->common);
    else ok = klu_l_tsolve(S->symbolic, N->numeric, (ss_int)ldx, (ss_int)nrhs, x, &N->common);
    ss_int status = N->common.status;
#ifdef _OPENMP
    omp_unset_lock(&N->lock);
#endif
    if (!ok) return klu_status_error(ctx, "solve", status);
    for (sla_int j = 0; j < nrhs; j++)
        if (!sla__all_finite(S->n, x + j * ldx)) {
            if (!sla__all_finite(S->n, b + j * ldb))
                st = sla__error(ctx, SLA_ERR_VALUE, "klu: right-hand side %lld contains NaN or Inf",
                                (long long)j);
            else
                st = sla__error(ctx, SLA_ERR_SINGULAR,
                                "klu: solution %lld is not finite (matrix numerically singular)",
                                (long long)j);
            break;
        }
    return st;
}

static sla_status klu_logdet_(sla_ctx *ctx, void *sym, void *num, double *sign, double *logabsdet)
{
    klu_sym *S = sym;
    klu_num *N = num;
    if (!S || !N || !sign || !logabsdet)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "klu logdet: NULL argument");
    *sign = 1.0;
    *logabsdet = 0.0;
    if (S->n == 0) return SLA_OK;
    ss_int n = (ss_int)S->n;
    const klu_l_numeric *K = N->numeric;
    const double *ud = K->Udiag;
    double s = 1.0, l = 0.0;
    for (ss_int i = 0; i < n; i++) {
        if (ud[i] == 0.0) {
            *sign = 0.0;
            *logabsdet = -INFINITY;
            return SLA_OK;
        }
        if (ud[i] < 0.0) s = -s;
        l += log(fabs(ud[i]));
    }
    /* rows of M were divided by Rs: det(M) = det(scaled) * prod(Rs) */
    if (K->Rs)
        for (ss_int i = 0; i < n; i++) l += log(K->Rs[i]);
    sla_allocator a = sla__ctx_alloc(ctx);
    unsigned char *seen = sla__ctx_malloc(ctx, (size_t)n, 1, "permutation parity");
    if (!seen) return SLA_ERR_NOMEM;
    s *= sla__perm_sign(n, (const sla_int *)K->Pnum, NULL, seen) *
         sla__perm_sign(n, (const sla_int *)S->symbolic->Q, NULL, seen);
    sla__free(&a, seen);
    *sign = s;
    *logabsdet = l;
    return SLA_OK;
}

static double klu_rcond_(const void *num) { return num ? ((const klu_num *)num)->rcond : -1.0; }

static const sla__direct_ops klu_ops = {
    .name = "klu",
    .analyze = klu_analyze_,
    .factor = klu_factor_,
    .solve = klu_solve_,
    .logdet = klu_logdet_,
    .free_num = klu_free_num,
    .free_sym = klu_free_sym,
    .rcond = klu_rcond_,
};

const sla__direct_ops *sla__backend_klu(void) { return &klu_ops; }
