/* UMFPACK complex backend: multifrontal sparse LU in complex128
 * (umfpack_zl_*, 64-bit indices, packed complex: values interleaved, the
 * separate imaginary arrays NULL).
 *
 * sla's CSR arrays of A are the CSC arrays of M = A^T, and UMFPACK factors
 * M as given. A x = b is M^T x = b (UMFPACK_Aat, the array transpose);
 * A^T x = b is M x = b (UMFPACK_A); A^H x = b is conj(M) x = b, solved as
 * M conj(x) = conj(b). det(A) = det(M), from umfpack_zl_get_determinant
 * (which includes the row scaling).
 *
 * As the real backend (umfpack.c): analyze refuses structurally singular
 * patterns (sla__structural_check), factor refuses NaN or Inf values,
 * exactly zero pivots and pivots at the level of rounding noise
 * (sla__pivot_tolerance), naming the row. Each numeric object keeps its own
 * copy of the values; solves only read the objects (workspace per call).
 * Selected inversion (the logdet gradient) runs the LU recurrences of
 * lu_selinv.c on the complex factor, about the cost of a factorization.
 */
#include "zbackend.h"

#include <math.h>
#include <string.h>

#include <umfpack.h>

typedef SuiteSparse_long ss_int;
_Static_assert(sizeof(ss_int) == sizeof(sla_int), "UMFPACK's long index must be 64-bit like sla_int");

typedef struct umfz_sym {
    sla_allocator alloc;
    sla_int n, nnz;
    ss_int *Ap, *Ai; /* CSC of M = A^T: A's rowptr and colind */
    void *symbolic;  /* NULL when n == 0 */
    double control[UMFPACK_CONTROL];
} umfz_sym;

typedef struct umfz_num {
    sla_allocator alloc;
    sla__z *Ax;     /* values of M (A's CSR order), interleaved */
    void *numeric;  /* NULL when n == 0 */
    double rcond;   /* Info[UMFPACK_RCOND] (-1: unknown) */
} umfz_num;

static void umfz_free_sym(void *p)
{
    umfz_sym *S = p;
    if (!S) return;
    sla_allocator a = S->alloc;
    if (S->symbolic) umfpack_zl_free_symbolic(&S->symbolic);
    sla__free(&a, S->Ap);
    sla__free(&a, S->Ai);
    sla__free(&a, S);
}

static void umfz_free_num(void *p)
{
    umfz_num *N = p;
    if (!N) return;
    sla_allocator a = N->alloc;
    if (N->numeric) umfpack_zl_free_numeric(&N->numeric);
    sla__free(&a, N->Ax);
    sla__free(&a, N);
}

static sla_status umfz_error(sla_ctx *ctx, const char *call, ss_int status)
{
    if (status == UMFPACK_ERROR_out_of_memory)
        return sla__error(ctx, SLA_ERR_NOMEM, "umfpack: out of memory in %s", call);
    return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack: %s failed with UMFPACK status %lld", call,
                      (long long)status);
}

static sla_status umfz_analyze(sla_ctx *ctx, const sla_matrix *A, const sla__direct_opts *o, void **sym)
{
    sla_status st = SLA_OK;
    sla__z *ax = NULL;
    sla_allocator a = sla__ctx_alloc(ctx);
    if (!sym) return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack analyze: sym is NULL");
    *sym = NULL;
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack analyze: matrix is NULL");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "umfpack analyze: matrix is %lld x %lld, not square",
                          (long long)A->nrows, (long long)A->ncols);
    umfz_sym *S = sla__ctx_calloc(ctx, 1, sizeof *S, "umfpack symbolic object");
    if (!S) return SLA_ERR_NOMEM;
    S->alloc = a;
    S->n = A->nrows;
    S->nnz = A->nnz;
    S->Ap = sla__ctx_malloc(ctx, (size_t)S->n + 1, sizeof *S->Ap, "umfpack column pointers");
    S->Ai = S->Ap ? sla__ctx_malloc(ctx, (size_t)S->nnz, sizeof *S->Ai, "umfpack row indices") : NULL;
    if (!S->Ai) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    for (sla_int i = 0; i <= S->n; i++) S->Ap[i] = (ss_int)A->rowptr[i];
    for (sla_int k = 0; k < S->nnz; k++) S->Ai[k] = (ss_int)A->colind[k];

    umfpack_zl_defaults(S->control);
    S->control[UMFPACK_PRL] = 0;    /* never print */
    S->control[UMFPACK_IRSTEP] = 0; /* the solver object refines itself */
    switch (o ? o->ordering : SLA_ORDER_AUTO) {
    case SLA_ORDER_AUTO: break;
    case SLA_ORDER_AMD: S->control[UMFPACK_ORDERING] = UMFPACK_ORDERING_AMD; break;
    case SLA_ORDER_METIS: S->control[UMFPACK_ORDERING] = UMFPACK_ORDERING_METIS; break;
    case SLA_ORDER_NATURAL: S->control[UMFPACK_ORDERING] = UMFPACK_ORDERING_NONE; break;
    default:
        st = sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack: unknown ordering %d", (int)o->ordering);
        goto done;
    }
    if (S->n == 0) goto done;
    st = sla__structural_check(ctx, "umfpack", A);
    if (st) goto done;
    /* the strategy choice looks at the values (nonzero diagonal): array 0 */
    if (A->nbatch > 0) {
        ax = sla__zvalues(ctx, A, 0, false, "umfpack values");
        if (!ax) {
            st = SLA_ERR_NOMEM;
            goto done;
        }
    }
    double info[UMFPACK_INFO];
    ss_int status = umfpack_zl_symbolic((ss_int)S->n, (ss_int)S->n, S->Ap, S->Ai, (const double *)ax,
                                        NULL, &S->symbolic, S->control, info);
    if (status != UMFPACK_OK) {
        S->symbolic = NULL;
        if (status == UMFPACK_ERROR_ordering_failed && o && o->ordering == SLA_ORDER_METIS)
            st = sla__error(ctx, SLA_ERR_UNSUPPORTED,
                            "umfpack: the metis ordering failed (is UMFPACK built with METIS?); "
                            "use ordering amd or auto");
        else
            st = umfz_error(ctx, "symbolic analysis", status);
    }
done:
    sla__free(&a, ax);
    if (st) umfz_free_sym(S);
    else *sym = S;
    return st;
}

/* sla__pivot_check on UMFPACK's factor: U's diagonal against the columns
 * of M with its rows scaled as UMFPACK scales them; column Q[k] of M is
 * row Q[k] of A. */
static sla_status umfz_pivot_check(sla_ctx *ctx, const sla_matrix *A, const umfz_sym *S,
                                   const umfz_num *N)
{
    sla_status st = SLA_OK;
    sla_allocator a = sla__ctx_alloc(ctx);
    ss_int n = (ss_int)S->n, do_recip = 0;
    ss_int *Q = sla__ctx_malloc(ctx, (size_t)n, sizeof *Q, "umfpack pivot check");
    sla__z *D = Q ? sla__ctx_malloc(ctx, (size_t)n, sizeof *D, "umfpack pivot check") : NULL;
    double *Rs = D ? sla__ctx_malloc(ctx, (size_t)n, sizeof *Rs, "umfpack pivot check") : NULL;
    if (!Rs) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    ss_int status = umfpack_zl_get_numeric(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, Q,
                                           (double *)D, NULL, &do_recip, Rs, N->numeric);
    if (status < 0) {
        st = umfz_error(ctx, "get_numeric", status);
        goto done;
    }
    st = sla__zpivot_check(ctx, "umfpack", A, N->Ax, Rs, do_recip != 0, D, (const sla_int *)Q);
done:
    sla__free(&a, Q);
    sla__free(&a, D);
    sla__free(&a, Rs);
    return st;
}

static sla_status umfz_factor(sla_ctx *ctx, void *sym, const sla_matrix *A, sla_int ib, void **num)
{
    umfz_sym *S = sym;
    if (!num) return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack factor: num is NULL");
    *num = NULL;
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack factor: symbolic object is NULL");
    sla_status st = sla__check_factor_args(ctx, "umfpack", A, ib, S->n, S->nnz,
                                           (const sla_int *)S->Ap, (const sla_int *)S->Ai);
    if (st) return st;
    umfz_num *N = sla__ctx_calloc(ctx, 1, sizeof *N, "umfpack numeric object");
    if (!N) return SLA_ERR_NOMEM;
    N->alloc = sla__ctx_alloc(ctx);
    N->rcond = -1.0;
    N->Ax = sla__zvalues(ctx, A, ib, false, "umfpack values");
    if (!N->Ax) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    if (S->n == 0) goto done;
    st = sla__zcheck_finite_values(ctx, "umfpack", S->nnz, N->Ax, ib);
    if (st) goto done;
    double info[UMFPACK_INFO];
    ss_int status = umfpack_zl_numeric(S->Ap, S->Ai, (const double *)N->Ax, NULL, S->symbolic,
                                       &N->numeric, S->control, info);
    if (status == UMFPACK_WARNING_singular_matrix)
        st = sla__error(ctx, SLA_ERR_SINGULAR,
                        "umfpack: matrix is singular (zero pivot: %.0f of %lld pivots nonzero)",
                        info[UMFPACK_UDIAG_NZ], (long long)S->n);
    else if (status < 0)
        st = umfz_error(ctx, "numeric factorization", status);
    else
        N->rcond = info[UMFPACK_RCOND];
    if (!st) st = umfz_pivot_check(ctx, A, S, N);
done:
    if (st) umfz_free_num(N);
    else *num = N;
    return st;
}

static sla_status umfz_solve(sla_ctx *ctx, void *sym, void *num, int op, sla_int nrhs,
                             const sla__z *b, sla_int ldb, sla__z *x, sla_int ldx)
{
    umfz_sym *S = sym;
    umfz_num *N = num;
    if (!S || !N) return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack solve: NULL factor");
    sla_status st = sla__zcheck_solve_args(ctx, "umfpack", op, S->n, nrhs, b, ldb, x, ldx);
    if (st || S->n == 0 || nrhs == 0) return st;
    sla_allocator a = sla__ctx_alloc(ctx);
    const sla_int n = S->n;
    ss_int *Wi = sla__ctx_malloc(ctx, (size_t)n, sizeof *Wi, "umfpack solve workspace");
    double *W = Wi ? sla__ctx_malloc(ctx, 4 * (size_t)n, sizeof *W, "umfpack solve workspace") : NULL;
    sla__z *bc = W && op == 2 ? sla__ctx_malloc(ctx, (size_t)n, sizeof *bc, "umfpack solve workspace")
                              : NULL;
    if (!W || (op == 2 && !bc)) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    /* A = M^T: A x = b is M^T x = b; A^T x = b is M x = b; A^H x = b is
     * conj(M) x = b, i.e. M conj(x) = conj(b) */
    ss_int sys = op == 0 ? UMFPACK_Aat : UMFPACK_A;
    for (sla_int j = 0; j < nrhs && !st; j++) {
        const sla__z *bj = b + j * ldb;
        sla__z *xj = x + j * ldx;
        if (op == 2) {
            for (sla_int i = 0; i < n; i++) bc[i] = conj(bj[i]);
            bj = bc;
        }
        double info[UMFPACK_INFO];
        ss_int status = umfpack_zl_wsolve(sys, S->Ap, S->Ai, (const double *)N->Ax, NULL, (double *)xj,
                                          NULL, (const double *)bj, NULL, N->numeric, S->control, info,
                                          Wi, W);
        if (status < 0) st = umfz_error(ctx, "solve", status);
        else if (op == 2) sla__zconj(n, xj);
    }
    if (!st) st = sla__zcheck_solution(ctx, "umfpack", n, nrhs, b, ldb, x, ldx);
done:
    sla__free(&a, Wi);
    sla__free(&a, W);
    sla__free(&a, bc);
    return st;
}

static sla_status umfz_logdet(sla_ctx *ctx, void *sym, void *num, sla__z *phase, double *logabs)
{
    umfz_sym *S = sym;
    umfz_num *N = num;
    if (!S || !N || !phase || !logabs)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack logdet: NULL argument");
    *phase = 1.0;
    *logabs = 0.0;
    if (S->n == 0) return SLA_OK;
    double mx[2] = {0.0, 0.0}, ex = 0.0, info[UMFPACK_INFO];
    /* det(M) = mx * 10^ex with 1 <= |mx| < 10 (or mx = 0), row scaling
     * included; det(A) = det(M) */
    ss_int status = umfpack_zl_get_determinant(mx, NULL, &ex, N->numeric, info);
    if (status < 0) return umfz_error(ctx, "determinant", status);
    sla__z m = mx[0] + mx[1] * _Complex_I;
    if (m == 0.0 || status == UMFPACK_WARNING_singular_matrix) {
        *phase = 0.0;
        *logabs = -INFINITY;
        return SLA_OK;
    }
    *phase = m / cabs(m);
    *logabs = log(cabs(m)) + ex * log(10.0);
    return SLA_OK;
}

/* Selected inversion on UMFPACK's complex factor: umfpack_zl_get_numeric
 * gives P R M Q = L U with the real R = diag(Rs) (do_recip) or
 * diag(Rs)^-1, L in row form and U in column form, packed complex (Lz,
 * Uz, Dz NULL): sla__lu_factors with complex values and rhat = Rs or
 * 1 / Rs, for sla__zlu_selinv (lu_selinv.c). mode as sla__umfpack_selinv's. */
sla_status sla__zumfpack_selinv(sla_ctx *ctx, void *sym, void *num, const sla_matrix *A, sla__z *z, int mode)
{
    umfz_sym *S = sym;
    umfz_num *N = num;
    if (!S || !N || !A || !z) return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack selinv: NULL argument");
    if (A->nrows != S->n || A->nnz != S->nnz)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack selinv: matrix does not match the factor");
    if (S->n == 0) return SLA_OK;
    ss_int lnz = 0, unz = 0, nr = 0, nc = 0, nzud = 0, do_recip = 0;
    ss_int status = umfpack_zl_get_lunz(&lnz, &unz, &nr, &nc, &nzud, N->numeric);
    if (status < 0) return umfz_error(ctx, "get_lunz", status);
    if (nr != S->n || nc != S->n)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "umfpack selinv: factor is %lld x %lld, expected n = %lld",
                          (long long)nr, (long long)nc, (long long)S->n);
    sla_status st = SLA_OK;
    sla_allocator a = sla__ctx_alloc(ctx);
    const size_t n = (size_t)S->n;
    ss_int *Lp = sla__malloc(&a, n + 1, sizeof *Lp), *Lj = sla__malloc(&a, (size_t)lnz + 1, sizeof *Lj);
    ss_int *Up = sla__malloc(&a, n + 1, sizeof *Up), *Ui = sla__malloc(&a, (size_t)unz + 1, sizeof *Ui);
    ss_int *P = sla__malloc(&a, n, sizeof *P), *Q = sla__malloc(&a, n, sizeof *Q);
    sla__z *Lx = sla__malloc(&a, (size_t)lnz + 1, sizeof *Lx), *Ux = sla__malloc(&a, (size_t)unz + 1, sizeof *Ux);
    sla__z *Dx = sla__malloc(&a, n, sizeof *Dx);
    double *Rs = sla__malloc(&a, n, sizeof *Rs);
    if (!Lp || !Lj || !Up || !Ui || !P || !Q || !Lx || !Ux || !Dx || !Rs) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "umfpack selinv: out of memory for the factors (%lld entries)",
                        (long long)(lnz + unz));
        goto done;
    }
    status = umfpack_zl_get_numeric(Lp, Lj, (double *)Lx, NULL, Up, Ui, (double *)Ux, NULL, P, Q, (double *)Dx,
                                    NULL, &do_recip, Rs, N->numeric);
    if (status < 0) {
        st = umfz_error(ctx, "get_numeric", status);
        goto done;
    }
    if (!do_recip)
        for (size_t i = 0; i < n; i++) Rs[i] = 1.0 / Rs[i];
    sla__lu_factors f = {.n = S->n, .Lp = (const sla_int *)Lp, .Lj = (const sla_int *)Lj,
                         .Up = (const sla_int *)Up, .Ui = (const sla_int *)Ui,
                         .P = (const sla_int *)P, .Q = (const sla_int *)Q,
                         .zLx = Lx, .zUx = Ux, .zDx = Dx, .rhat = Rs, .mode = mode};
    st = sla__zlu_selinv(ctx, A, &f, z);
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

static sla_status umfz_selinv(sla_ctx *ctx, void *sym, void *num, const sla_matrix *A, sla__z *z)
{
    return sla__zumfpack_selinv(ctx, sym, num, A, z, 0);
}

static double umfz_rcond(const void *num) { return num ? ((const umfz_num *)num)->rcond : -1.0; }

const sla__zdirect_ops sla__zbackend_umfpack = {
    .name = "umfpack",
    .hermitian = false,
    .analyze = umfz_analyze,
    .factor = umfz_factor,
    .solve = umfz_solve,
    .logdet = umfz_logdet,
    .selinv = umfz_selinv,
    .rcond = umfz_rcond,
    .free_num = umfz_free_num,
    .free_sym = umfz_free_sym,
};
