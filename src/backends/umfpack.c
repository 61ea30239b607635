/* UMFPACK backend: multifrontal sparse LU (umfpack_dl_*, 64-bit indices).
 *
 * sla's CSR arrays of A are the CSC arrays of M = A^T, and UMFPACK factors
 * M as given. Solving A x = b is M^T x = b (UMFPACK_At); the transposed
 * solve A^T x = b is M x = b (UMFPACK_A). det(M) = det(A).
 *
 * The symbolic object keeps 64-bit copies of the pattern (UMFPACK needs it
 * again for the numeric factorization and for iterative refinement); each
 * numeric object keeps a double copy of its values (refinement computes
 * residuals with them, and a borrowed matrix may change under us).
 * UMFPACK's own memory comes from SuiteSparse's allocator; everything sla
 * owns goes through the context's allocator.
 *
 * UMFPACK reports only exactly zero pivots; factor also refuses pivots at
 * the level of rounding noise (see sla__pivot_tolerance), and analyze
 * refuses structurally singular patterns (empty row or column, maximum
 * transversal short of n: sla__structural_check), naming the row or column.
 *
 * Solves only read the symbolic and numeric objects (workspace is allocated
 * per call), so any number of threads may solve at once.
 */
#include "../solvers/direct.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <umfpack.h>

typedef SuiteSparse_long ss_int;
_Static_assert(sizeof(ss_int) == sizeof(sla_int),
               "UMFPACK's long index must be 64-bit like sla_int");

typedef struct umf_sym {
    sla_allocator alloc;
    sla_int n, nnz;
    ss_int *Ap, *Ai;   /* CSC of M = A^T: A's rowptr and colind */
    void *symbolic;    /* NULL when n == 0 */
    double control[UMFPACK_CONTROL];
} umf_sym;

typedef struct umf_num {
    sla_allocator alloc;
    double *Ax;        /* values of M (A's CSR order), for iterative refinement */
    void *numeric;     /* NULL when n == 0 */
    double rcond;      /* Info[UMFPACK_RCOND]: min/max |diag U| (-1: unknown) */
} umf_num;

static void umf_free_sym(void *p)
{
    umf_sym *S = p;
    if (!S) return;
    sla_allocator a = S->alloc;
    if (S->symbolic) umfpack_dl_free_symbolic(&S->symbolic);
    sla__free(&a, S->Ap);
    sla__free(&a, S->Ai);
    sla__free(&a, S);
}

static void umf_free_num(void *p)
{
    umf_num *N = p;
    if (!N) return;
    sla_allocator a = N->alloc;
    if (N->numeric) umfpack_dl_free_numeric(&N->numeric);
    sla__free(&a, N->Ax);
    sla__free(&a, N);
}

static sla_status umf_error(sla_ctx *ctx, const char *call, ss_int status)
{
    if (status == UMFPACK_ERROR_out_of_memory)
        return sla__error(ctx, SLA_ERR_NOMEM, "umfpack: out of memory in %s", call);
    return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack: %s failed with UMFPACK status %lld", call,
                      (long long)status);
}

static const char *ordering_used(const double *info)
{
    switch ((int)info[UMFPACK_ORDERING_USED]) {
    case UMFPACK_ORDERING_AMD:
        return info[UMFPACK_STRATEGY_USED] == UMFPACK_STRATEGY_SYMMETRIC ? "amd" : "colamd";
    case UMFPACK_ORDERING_METIS: return "metis";
    case UMFPACK_ORDERING_NONE: return "natural";
    case UMFPACK_ORDERING_GIVEN: return "given";
    case UMFPACK_ORDERING_CHOLMOD: return "cholmod";
    case UMFPACK_ORDERING_BEST: return "best";
    default: return "unknown";
    }
}

static sla_status umf_analyze(sla_ctx *ctx, const sla_matrix *A, const sla__direct_opts *o,
                              void **sym, sla__direct_stats *stats)
{
    sla_status st = SLA_OK;
    double *ax = NULL;
    sla_allocator a = sla__ctx_alloc(ctx);
    if (!sym) return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack analyze: sym is NULL");
    *sym = NULL;
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack analyze: matrix is NULL");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "umfpack analyze: matrix is %lld x %lld, not square",
                          (long long)A->nrows, (long long)A->ncols);
    umf_sym *S = sla__ctx_calloc(ctx, 1, sizeof *S, "umfpack symbolic object");
    if (!S) return SLA_ERR_NOMEM;
    S->alloc = a;
    S->n = A->nrows;
    S->nnz = A->nnz;
    S->Ap = sla__ctx_malloc(ctx, (size_t)S->n + 1, sizeof *S->Ap, "umfpack column pointers");
    S->Ai = sla__ctx_malloc(ctx, (size_t)S->nnz, sizeof *S->Ai, "umfpack row indices");
    if (!S->Ap || !S->Ai) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    for (sla_int i = 0; i <= S->n; i++) S->Ap[i] = (ss_int)A->rowptr[i];
    for (sla_int k = 0; k < S->nnz; k++) S->Ai[k] = (ss_int)A->colind[k];

    umfpack_dl_defaults(S->control);
    S->control[UMFPACK_PRL] = 0; /* never print, even if someone calls a report routine */
    /* no refinement inside umfpack_*solve: the solver object refines itself
     * (dgerfs-style, src/solvers/solver.c direct_solve), with the same
     * backward-error rule for every backend */
    S->control[UMFPACK_IRSTEP] = 0;
    switch (o ? o->ordering : SLA_ORDER_AUTO) {
    case SLA_ORDER_AUTO: break; /* UMFPACK's default: AMD or COLAMD by its strategy */
    case SLA_ORDER_AMD: S->control[UMFPACK_ORDERING] = UMFPACK_ORDERING_AMD; break;
    case SLA_ORDER_METIS: S->control[UMFPACK_ORDERING] = UMFPACK_ORDERING_METIS; break;
    case SLA_ORDER_NATURAL: S->control[UMFPACK_ORDERING] = UMFPACK_ORDERING_NONE; break;
    default:
        st = sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack: unknown ordering %d", (int)o->ordering);
        goto done;
    }

    if (S->n == 0) {
        if (stats) {
            memset(stats, 0, sizeof *stats);
            snprintf(stats->ordering, sizeof stats->ordering, "natural");
        }
        goto done;
    }
    st = sla__structural_check(ctx, "umfpack", A);
    if (st) goto done;

    /* The strategy choice looks at the values (nonzero diagonal): array 0. */
    if (A->nbatch > 0) {
        ax = sla__values_f64(ctx, A, 0, "umfpack values");
        if (!ax) {
            st = SLA_ERR_NOMEM;
            goto done;
        }
    }
    double info[UMFPACK_INFO];
    ss_int status = umfpack_dl_symbolic((ss_int)S->n, (ss_int)S->n, S->Ap, S->Ai, ax,
                                        &S->symbolic, S->control, info);
    if (status != UMFPACK_OK) {
        S->symbolic = NULL;
        if (status == UMFPACK_ERROR_ordering_failed && o && o->ordering == SLA_ORDER_METIS)
            st = sla__error(ctx, SLA_ERR_UNSUPPORTED,
                            "umfpack: the metis ordering failed (is UMFPACK built with METIS?); "
                            "use ordering amd or auto");
        else
            st = umf_error(ctx, "symbolic analysis", status);
        goto done;
    }
    if (stats) {
        /* The *_ESTIMATE values are upper bounds for arbitrary partial
         * pivoting and run 2x (unsymmetric strategy) to 100x and more
         * (symmetric strategy on 2D/3D meshes) above the actual factor.
         * With the symmetric strategy UMFPACK also reports the fill and
         * flops of its symmetric analysis, which match the factorization
         * within a few percent (it pivots on the diagonal when it can);
         * the memory estimate is scaled down by the same ratio. */
        double lunz = info[UMFPACK_LNZ_ESTIMATE] + info[UMFPACK_UNZ_ESTIMATE];
        double flops = info[UMFPACK_FLOPS_ESTIMATE];
        double bytes = info[UMFPACK_NUMERIC_SIZE_ESTIMATE] * info[UMFPACK_SIZE_OF_UNIT];
        double slunz = info[UMFPACK_SYMMETRIC_LUNZ], sflops = info[UMFPACK_SYMMETRIC_FLOPS];
        if (info[UMFPACK_STRATEGY_USED] == UMFPACK_STRATEGY_SYMMETRIC && slunz > 0.0 &&
            sflops >= 0.0 && slunz < lunz) {
            bytes *= slunz / lunz;
            lunz = slunz;
            flops = sflops;
        }
        memset(stats, 0, sizeof *stats);
        stats->factor_nnz = lunz;
        stats->flops = flops;
        stats->bytes = bytes;
        snprintf(stats->ordering, sizeof stats->ordering, "%s", ordering_used(info));
    }

done:
    sla__free(&a, ax);
    if (st) umf_free_sym(S);
    else *sym = S;
    return st;
}

/* The pivot test of sla__pivot_check on UMFPACK's factor: U's diagonal
 * relative to the columns of M with its rows scaled as UMFPACK scales them
 * (Rs, divided or multiplied by do_recip); column Q[k] of M is row Q[k] of
 * A. */
static sla_status pivot_check(sla_ctx *ctx, const sla_matrix *A, const umf_sym *S,
                              const umf_num *N)
{
    sla_status st = SLA_OK;
    sla_allocator a = sla__ctx_alloc(ctx);
    ss_int n = (ss_int)S->n, do_recip = 0;
    ss_int *Q = sla__ctx_malloc(ctx, (size_t)n, sizeof *Q, "umfpack pivot check");
    double *D = sla__ctx_malloc(ctx, (size_t)n, sizeof *D, "umfpack pivot check");
    double *Rs = sla__ctx_malloc(ctx, (size_t)n, sizeof *Rs, "umfpack pivot check");
    if (!Q || !D || !Rs) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    ss_int status = umfpack_dl_get_numeric(NULL, NULL, NULL, NULL, NULL, NULL, NULL, Q, D,
                                           &do_recip, Rs, N->numeric);
    if (status < 0) {
        st = umf_error(ctx, "get_numeric", status);
        goto done;
    }
    st = sla__pivot_check(ctx, "umfpack", A, N->Ax, Rs, do_recip != 0, D, (const sla_int *)Q);
done:
    sla__free(&a, Q);
    sla__free(&a, D);
    sla__free(&a, Rs);
    return st;
}

static sla_status umf_factor(sla_ctx *ctx, void *sym, const sla_matrix *A, sla_int ib, void **num)
{
    umf_sym *S = sym;
    if (!num) return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack factor: num is NULL");
    *num = NULL;
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack factor: symbolic object is NULL");
    sla_status st = sla__check_factor_args(ctx, "umfpack", A, ib, S->n, S->nnz,
                                           (const sla_int *)S->Ap, (const sla_int *)S->Ai);
    if (st) return st;
    umf_num *N = sla__ctx_calloc(ctx, 1, sizeof *N, "umfpack numeric object");
    if (!N) return SLA_ERR_NOMEM;
    N->alloc = sla__ctx_alloc(ctx);
    N->rcond = -1.0;
    N->Ax = sla__values_f64(ctx, A, ib, "umfpack values");
    if (!N->Ax) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    if (S->n == 0) goto done;
    /* UMFPACK would report a NaN as a singular matrix, an Inf not at all */
    st = sla__check_finite_values(ctx, "umfpack", S->nnz, N->Ax, ib);
    if (st) goto done;

    double info[UMFPACK_INFO];
    ss_int status = umfpack_dl_numeric(S->Ap, S->Ai, N->Ax, S->symbolic, &N->numeric, S->control,
                                       info);
    if (status == UMFPACK_WARNING_singular_matrix)
        st = sla__error(ctx, SLA_ERR_SINGULAR,
                        "umfpack: matrix is singular (zero pivot: %.0f of %lld pivots nonzero)",
                        info[UMFPACK_UDIAG_NZ], (long long)S->n);
    else if (status < 0)
        st = umf_error(ctx, "numeric factorization", status);
    else
        N->rcond = info[UMFPACK_RCOND];
    if (!st)
        /* Only exactly zero pivots are reported by UMFPACK; a pivot at the
         * level of rounding noise is as singular. See sla__pivot_tolerance. */
        st = pivot_check(ctx, A, S, N);

done:
    if (st) umf_free_num(N);
    else *num = N;
    return st;
}

static sla_status umf_solve(sla_ctx *ctx, void *sym, void *num, bool transpose, sla_int nrhs,
                            const double *b, sla_int ldb, double *x, sla_int ldx)
{
    umf_sym *S = sym;
    umf_num *N = num;
    sla_status st = SLA_OK;
    sla_allocator a = sla__ctx_alloc(ctx);
    ss_int *Wi = NULL;
    double *W = NULL;
    if (!S || !N) return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack solve: NULL factor");
    st = sla__check_solve_args(ctx, "umfpack", S->n, nrhs, b, ldb, x, ldx);
    if (st) return st;
    if (S->n == 0 || nrhs == 0) return SLA_OK;
    /* A x = b is M^T x = b. */
    ss_int sys = transpose ? UMFPACK_A : UMFPACK_At;
    size_t wlen = (S->control[UMFPACK_IRSTEP] > 0 ? 5 : 1) * (size_t)S->n;
    Wi = sla__ctx_malloc(ctx, (size_t)S->n, sizeof *Wi, "umfpack solve workspace");
    W = sla__ctx_malloc(ctx, wlen, sizeof *W, "umfpack solve workspace");
    if (!Wi || !W) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    for (sla_int j = 0; j < nrhs; j++) {
        const double *bj = b + j * ldb;
        double *xj = x + j * ldx;
        double info[UMFPACK_INFO];
        ss_int status = umfpack_dl_wsolve(sys, S->Ap, S->Ai, N->Ax, xj, bj, N->numeric,
                                          S->control, info, Wi, W);
        if (status < 0) {
            st = umf_error(ctx, "solve", status);
            goto done;
        }
        if (!sla__all_finite(S->n, xj)) {
            if (!sla__all_finite(S->n, bj))
                st = sla__error(ctx, SLA_ERR_VALUE,
                                "umfpack: right-hand side %lld contains NaN or Inf", (long long)j);
            else
                st = sla__error(ctx, SLA_ERR_SINGULAR,
                                "umfpack: solution %lld is not finite (matrix numerically "
                                "singular)",
                                (long long)j);
            goto done;
        }
    }
done:
    sla__free(&a, Wi);
    sla__free(&a, W);
    return st;
}

static sla_status umf_logdet(sla_ctx *ctx, void *sym, void *num, double *sign, double *logabsdet)
{
    umf_sym *S = sym;
    umf_num *N = num;
    if (!S || !N || !sign || !logabsdet)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack logdet: NULL argument");
    *sign = 1.0;
    *logabsdet = 0.0;
    if (S->n == 0) return SLA_OK;
    double mx = 0.0, ex = 0.0, info[UMFPACK_INFO];
    /* det(M) = mx * 10^ex with 1 <= |mx| < 10 (or mx = 0); det(A) = det(M). */
    ss_int status = umfpack_dl_get_determinant(&mx, &ex, N->numeric, info);
    if (status < 0) return umf_error(ctx, "determinant", status);
    if (mx == 0.0 || status == UMFPACK_WARNING_singular_matrix) {
        *sign = 0.0;
        *logabsdet = -INFINITY;
        return SLA_OK;
    }
    *sign = mx < 0.0 ? -1.0 : 1.0;
    *logabsdet = log(fabs(mx)) + ex * log(10.0);
    return SLA_OK;
}

/* Selected inversion on UMFPACK's factor: umfpack_dl_get_numeric gives
 * P R M Q = L U with R = diag(Rs) (do_recip) or diag(Rs)^-1, which is
 * sla__lu_factors with rhat = Rs or 1 / Rs; L comes in row form and U in
 * column form, as sla__lu_selinv takes them. */
sla_status sla__umfpack_selinv(sla_ctx *ctx, void *sym, void *num, const sla_matrix *A, double *z, int mode)
{
    umf_sym *S = sym;
    umf_num *N = num;
    if (!S || !N || !A || !z) return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack selinv: NULL argument");
    if (A->nrows != S->n || A->nnz != S->nnz)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack selinv: matrix does not match the factor");
    if (S->n == 0) return SLA_OK;
    ss_int lnz = 0, unz = 0, nr = 0, nc = 0, nzud = 0, do_recip = 0;
    ss_int status = umfpack_dl_get_lunz(&lnz, &unz, &nr, &nc, &nzud, N->numeric);
    if (status < 0) return umf_error(ctx, "get_lunz", status);
    if (nr != S->n || nc != S->n)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack selinv: factor is %lld x %lld, expected n = %lld",
                          (long long)nr, (long long)nc, (long long)S->n);
    sla_status st = SLA_OK;
    sla_allocator a = sla__ctx_alloc(ctx);
    const size_t n = (size_t)S->n;
    ss_int *Lp = sla__malloc(&a, n + 1, sizeof *Lp), *Lj = sla__malloc(&a, (size_t)lnz + 1, sizeof *Lj);
    ss_int *Up = sla__malloc(&a, n + 1, sizeof *Up), *Ui = sla__malloc(&a, (size_t)unz + 1, sizeof *Ui);
    ss_int *P = sla__malloc(&a, n, sizeof *P), *Q = sla__malloc(&a, n, sizeof *Q);
    double *Lx = sla__malloc(&a, (size_t)lnz + 1, sizeof *Lx), *Ux = sla__malloc(&a, (size_t)unz + 1, sizeof *Ux);
    double *Dx = sla__malloc(&a, n, sizeof *Dx), *Rs = sla__malloc(&a, n, sizeof *Rs);
    if (!Lp || !Lj || !Up || !Ui || !P || !Q || !Lx || !Ux || !Dx || !Rs) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "umfpack selinv: out of memory for the factors (%lld entries)",
                        (long long)(lnz + unz));
        goto done;
    }
    status = umfpack_dl_get_numeric(Lp, Lj, Lx, Up, Ui, Ux, P, Q, Dx, &do_recip, Rs, N->numeric);
    if (status < 0) {
        st = umf_error(ctx, "get_numeric", status);
        goto done;
    }
    if (!do_recip)
        for (size_t i = 0; i < n; i++) Rs[i] = 1.0 / Rs[i];
    sla__lu_factors f = {.n = S->n, .Lp = (const sla_int *)Lp, .Lj = (const sla_int *)Lj,
                         .Up = (const sla_int *)Up, .Ui = (const sla_int *)Ui,
                         .P = (const sla_int *)P, .Q = (const sla_int *)Q,
                         .Lx = Lx, .Ux = Ux, .Dx = Dx, .rhat = Rs, .mode = mode};
    st = sla__lu_selinv(ctx, A, &f, z);
done:
    sla__free(&a, Lp);
    sla__free(&a, Lj);
    sla__free(&a, Up);
    sla__free(&a, Ui);
    sla__free(&a, P);
    sla__free(&a, Q);
    sla__free(&a, Lx);
    sla__free(&a, Ux);
    sla__free(&a, Dx);
    sla__free(&a, Rs);
    return st;
}

static sla_status umf_selinv(sla_ctx *ctx, void *sym, void *num, const sla_matrix *A, double *z)
{
    return sla__umfpack_selinv(ctx, sym, num, A, z, 0);
}

static double umf_rcond(const void *num) { return num ? ((const umf_num *)num)->rcond : -1.0; }

static const sla__direct_ops umfpack_ops = {
    .name = "umfpack",
    .analyze = umf_analyze,
    .factor = umf_factor,
    .solve = umf_solve,
    .logdet = umf_logdet,
    .free_num = umf_free_num,
    .free_sym = umf_free_sym,
    .rcond = umf_rcond,
    .selinv = umf_selinv,
};

const sla__direct_ops *sla__backend_umfpack(void) { return &umfpack_ops; }
