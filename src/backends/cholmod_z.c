/* CHOLMOD complex backend: Cholesky of a Hermitian positive definite A in
 * complex128 (cholmod_l_*, xtype CHOLMOD_COMPLEX: values interleaved).
 * Supernodal LL^H or simplicial LDL^H with a positive D, as CHOLMOD
 * chooses (the settings of the real backend, cholmod.c).
 *
 * sla's CSR of A read as CSC is M = A^T; with its values conjugated it is
 * A^H = A. CHOLMOD gets that view with stype = 1 (the upper triangle of
 * conj(A^T), i.e. A's lower triangle), so the factor is of the Hermitian
 * matrix H built from A's lower triangle: A itself when A is Hermitian,
 * which factor checks (within 1e-12 max|a|, else SLA_ERR_NOT_SPD saying
 * the matrix is not Hermitian). Solves: A x = b and A^H x = b are
 * H x = b; A^T x = b is conj(A) x = b, solved as A conj(x) = conj(b).
 * det A = prod L_jj^2 (or prod D_jj) > 0: phase 1.
 *
 * Each numeric object owns its cholmod_common, factor and the workspace of
 * cholmod_l_solve2; CHOLMOD never prints (Common.print = 0, no handler).
 */
#include "zbackend.h"

#include <math.h>
#include <string.h>

#include <cholmod.h>

_Static_assert(sizeof(SuiteSparse_long) == sizeof(sla_int), "CHOLMOD's long index must be 64-bit like sla_int");

/* A is taken as Hermitian when max |a_ij - conj(a_ji)| <= this * max |a|. */
#define CHOLZ_HERMITIAN_TOL 1e-12

typedef struct cholz_sym {
    sla_allocator alloc;
    sla_int n, nnz;
    SuiteSparse_long *colind; /* int64 copy of A->colind */
    cholmod_common cm;
    bool cm_started;
    cholmod_factor *L; /* symbolic factor (NULL when n == 0) */
} cholz_sym;

typedef struct cholz_num {
    sla_allocator alloc;
    sla_int n;
    cholmod_common cm;
    bool cm_started;
    cholmod_factor *L;        /* numeric factor (NULL when n == 0) */
    cholmod_dense *X, *Y, *E; /* cholmod_l_solve2 output and workspace */
    double rcond;
} cholz_num;

static void cholz_setup(cholmod_common *cm)
{
    cm->print = 0;
    cm->error_handler = NULL;
    cm->try_catch = 0;
    cm->useGPU = 0;
    cm->supernodal = CHOLMOD_AUTO;
    cm->supernodal_switch = 120.0;
    cm->final_asis = 1;
    cm->final_ll = 0;
    cm->quick_return_if_not_posdef = 1;
}

static sla_status cholz_fail(sla_ctx *ctx, const cholmod_common *cm, const char *what)
{
    switch (cm->status) {
    case CHOLMOD_OUT_OF_MEMORY: return sla__error(ctx, SLA_ERR_NOMEM, "cholmod %s: out of memory", what);
    case CHOLMOD_TOO_LARGE:
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "cholmod %s: problem too large (integer overflow)", what);
    case CHOLMOD_INVALID: return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod %s: invalid input", what);
    default: return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod %s failed (status %d)", what, cm->status);
    }
}

/* The view of conj(A^T) (= A for a Hermitian A), upper part of the CSC;
 * x NULL: the pattern only. */
static void cholz_view(cholmod_sparse *S, const cholz_sym *s, const sla_matrix *A, sla__z *x)
{
    memset(S, 0, sizeof *S);
    S->nrow = (size_t)s->n;
    S->ncol = (size_t)s->n;
    S->nzmax = (size_t)s->nnz;
    S->p = (void *)A->rowptr;
    S->i = s->colind;
    S->x = x;
    S->stype = 1;
    S->itype = CHOLMOD_LONG;
    S->xtype = x ? CHOLMOD_COMPLEX : CHOLMOD_PATTERN;
    S->dtype = CHOLMOD_DOUBLE;
    S->sorted = 1;
    S->packed = 1;
}

static void cholz_free_sym(void *p)
{
    cholz_sym *s = p;
    if (!s) return;
    if (s->cm_started) {
        if (s->L) cholmod_l_free_factor(&s->L, &s->cm);
        cholmod_l_finish(&s->cm);
    }
    sla_allocator a = s->alloc;
    sla__free(&a, s->colind);
    sla__free(&a, s);
}

static void cholz_free_num(void *p)
{
    cholz_num *f = p;
    if (!f) return;
    if (f->cm_started) {
        if (f->X) cholmod_l_free_dense(&f->X, &f->cm);
        if (f->Y) cholmod_l_free_dense(&f->Y, &f->cm);
        if (f->E) cholmod_l_free_dense(&f->E, &f->cm);
        if (f->L) cholmod_l_free_factor(&f->L, &f->cm);
        cholmod_l_finish(&f->cm);
    }
    sla_allocator a = f->alloc;
    sla__free(&a, f);
}

static sla_status cholz_analyze(sla_ctx *ctx, const sla_matrix *A, const sla__direct_opts *o, void **symp)
{
    if (symp) *symp = NULL;
    if (!A || !symp) return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod analyze: NULL argument");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "cholmod analyze: matrix is %lld x %lld, not square",
                          (long long)A->nrows, (long long)A->ncols);
    int ord;
    switch (o ? o->ordering : SLA_ORDER_AUTO) {
    case SLA_ORDER_AUTO:
    case SLA_ORDER_AMD: ord = CHOLMOD_AMD; break;
    case SLA_ORDER_METIS: ord = CHOLMOD_METIS; break;
    case SLA_ORDER_NATURAL: ord = CHOLMOD_NATURAL; break;
    default: return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod analyze: unknown ordering %d", (int)o->ordering);
    }
    if (o && o->ldlt)
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "ldlt: complex matrices have no LDL^T method here; use cholesky (Hermitian "
                          "positive definite) or lu");
    sla_status st = SLA_OK;
    cholz_sym *s = sla__ctx_calloc(ctx, 1, sizeof *s, "cholmod symbolic object");
    if (!s) return SLA_ERR_NOMEM;
    s->alloc = sla__ctx_alloc(ctx);
    s->n = A->nrows;
    s->nnz = A->nnz;
    s->colind = sla__ctx_malloc(ctx, (size_t)A->nnz, sizeof *s->colind, "cholmod column indices");
    if (!s->colind) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    for (sla_int k = 0; k < A->nnz; k++) s->colind[k] = A->colind[k];
    if (s->n > 0) {
        if (!cholmod_l_start(&s->cm)) {
            st = sla__error(ctx, SLA_ERR_NOMEM, "cholmod analyze: cholmod_l_start failed");
            goto done;
        }
        s->cm_started = true;
        cholz_setup(&s->cm);
        s->cm.nmethods = 1;
        s->cm.method[0].ordering = ord;
        s->cm.postorder = ord != CHOLMOD_NATURAL;
        cholmod_sparse S;
        cholz_view(&S, s, A, NULL);
        s->L = cholmod_l_analyze(&S, &s->cm);
        if (!s->L || s->cm.status < 0) st = cholz_fail(ctx, &s->cm, "analyze");
    }
done:
    if (st) cholz_free_sym(s);
    else *symp = s;
    return st;
}

static sla_status cholz_factor(sla_ctx *ctx, void *symv, const sla_matrix *A, sla_int ib, void **nump)
{
    if (nump) *nump = NULL;
    cholz_sym *s = symv;
    if (!s || !A || !nump) return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod factor: NULL argument");
    sla_status st = sla__check_factor_args(ctx, "cholmod", A, ib, s->n, s->nnz, NULL,
                                           (const sla_int *)s->colind);
    if (st) return st;
    sla__z *x = NULL;
    cholz_num *f = sla__ctx_calloc(ctx, 1, sizeof *f, "cholmod numeric object");
    if (!f) return SLA_ERR_NOMEM;
    f->alloc = sla__ctx_alloc(ctx);
    f->n = s->n;
    f->rcond = -1.0;
    if (s->n == 0) goto done;

    x = sla__zvalues(ctx, A, ib, true, "cholmod values"); /* conj(A^T) = A^H */
    if (!x) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    st = sla__zcheck_finite_values(ctx, "cholmod", A->nnz, x, ib);
    if (st) goto done;
    /* the factor is of the Hermitian matrix from A's lower triangle */
    sla_matrix_props pr;
    st = sla_matrix_properties(ctx, A, ib, CHOLZ_HERMITIAN_TOL, &pr);
    if (st) goto done;
    if (!pr.hermitian) {
        st = sla__error(ctx, SLA_ERR_NOT_SPD,
                        "cholesky: matrix is not Hermitian (max |a_ij - conj(a_ji)| / max |a| = %.3g, "
                        "or a diagonal entry is not real), so not Hermitian positive definite; use lu",
                        pr.hermitian_error);
        goto done;
    }
    if (!cholmod_l_start(&f->cm)) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "cholmod factor: cholmod_l_start failed");
        goto done;
    }
    f->cm_started = true;
    cholz_setup(&f->cm);
    f->L = cholmod_l_copy_factor(s->L, &f->cm);
    if (!f->L) {
        st = cholz_fail(ctx, &f->cm, "factor (copy of the symbolic factor)");
        goto done;
    }
    cholmod_sparse S;
    cholz_view(&S, s, A, x);
    int ok = cholmod_l_factorize(&S, f->L, &f->cm);
    if (!ok || f->cm.status < 0) {
        st = cholz_fail(ctx, &f->cm, "factor");
        goto done;
    }
    if (f->cm.status == CHOLMOD_NOT_POSDEF || f->L->minor < f->L->n) {
        long long k = (long long)f->L->minor;
        if (f->L->Perm && f->L->minor < f->L->n) k = (long long)((const SuiteSparse_long *)f->L->Perm)[k];
        st = sla__error(ctx, SLA_ERR_NOT_SPD,
                        "cholesky: matrix not Hermitian positive definite (pivot at column %lld)", k);
        goto done;
    }
    if (!f->L->is_super && !f->L->is_ll) {
        /* simplicial LDL^H: positive definite iff every D_jj > 0 */
        const sla__z *Lx = f->L->x;
        const SuiteSparse_long *Lp = f->L->p, *perm = f->L->Perm;
        for (size_t j = 0; j < f->L->n; j++)
            if (!(creal(Lx[Lp[j]]) > 0.0)) {
                long long k = perm ? (long long)perm[j] : (long long)j;
                st = sla__error(ctx, SLA_ERR_NOT_SPD,
                                "cholesky: matrix not Hermitian positive definite (pivot %g at column %lld)",
                                creal(Lx[Lp[j]]), k);
                goto done;
            }
    }
    f->rcond = cholmod_l_rcond(f->L, &f->cm);
done:
    sla__free(&f->alloc, x);
    if (st) cholz_free_num(f);
    else *nump = f;
    return st;
}

static sla_status cholz_solve(sla_ctx *ctx, void *symv, void *numv, int op, sla_int nrhs,
                              const sla__z *b, sla_int ldb, sla__z *x, sla_int ldx)
{
    (void)symv;
    cholz_num *f = numv;
    if (!f) return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod solve: NULL factor");
    sla_status st = sla__zcheck_solve_args(ctx, "cholmod", op, f->n, nrhs, b, ldb, x, ldx);
    if (st || f->n == 0 || nrhs == 0) return st;
    const sla_int n = f->n;
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__z *bc = NULL;
    const sla__z *bb = b;
    sla_int ld = ldb;
    if (op == 1) {
        /* A^T = conj(A): A conj(x) = conj(b) */
        bc = sla__ctx_malloc(ctx, (size_t)n * (size_t)nrhs, sizeof *bc, "cholmod solve workspace");
        if (!bc) return SLA_ERR_NOMEM;
        for (sla_int j = 0; j < nrhs; j++)
            for (sla_int i = 0; i < n; i++) bc[j * n + i] = conj(b[j * ldb + i]);
        bb = bc;
        ld = n;
    }
    cholmod_dense B;
    memset(&B, 0, sizeof B);
    B.nrow = (size_t)n;
    B.ncol = (size_t)nrhs;
    B.d = (size_t)ld;
    B.nzmax = (size_t)ld * (size_t)nrhs;
    B.x = (void *)bb;
    B.xtype = CHOLMOD_COMPLEX;
    B.dtype = CHOLMOD_DOUBLE;
    if (!cholmod_l_solve2(CHOLMOD_A, f->L, &B, NULL, &f->X, NULL, &f->Y, &f->E, &f->cm) ||
        f->cm.status < 0 || !f->X) {
        st = cholz_fail(ctx, &f->cm, "solve");
    } else {
        const sla__z *X = f->X->x;
        size_t dX = f->X->d;
        for (sla_int j = 0; j < nrhs; j++) {
            memcpy(x + j * ldx, X + (size_t)j * dX, (size_t)n * sizeof *x);
            if (op == 1) sla__zconj(n, x + j * ldx);
        }
        st = sla__zcheck_solution(ctx, "cholesky", n, nrhs, b, ldb, x, ldx);
    }
    sla__free(&a, bc);
    return st;
}

/* det A = prod L_jj^2 (LL^H, real positive L_jj) or prod D_jj (LDL^H). */
static sla_status cholz_logdet(sla_ctx *ctx, void *symv, void *numv, sla__z *phase, double *logabs)
{
    (void)symv;
    cholz_num *f = numv;
    if (!f || !phase || !logabs) return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod logdet: NULL argument");
    double sum = 0.0;
    const cholmod_factor *L = f->L;
    if (f->n > 0 && L) {
        const sla__z *Lx = L->x;
        if (L->is_super) {
            const SuiteSparse_long *super = L->super, *pi = L->pi, *px = L->px;
            for (size_t sn = 0; sn < L->nsuper; sn++) {
                SuiteSparse_long ncols = super[sn + 1] - super[sn], nsrow = pi[sn + 1] - pi[sn];
                const sla__z *blk = Lx + px[sn];
                for (SuiteSparse_long j = 0; j < ncols; j++) sum += 2.0 * log(creal(blk[j * nsrow + j]));
            }
        } else {
            const SuiteSparse_long *Lp = L->p;
            for (size_t j = 0; j < L->n; j++) sum += (L->is_ll ? 2.0 : 1.0) * log(creal(Lx[Lp[j]]));
        }
    }
    *phase = 1.0;
    *logabs = sum;
    return SLA_OK;
}

static double cholz_rcond(const void *num) { return num ? ((const cholz_num *)num)->rcond : -1.0; }

const sla__zdirect_ops sla__zbackend_cholmod = {
    .name = "cholmod",
    .hermitian = true,
    .analyze = cholz_analyze,
    .factor = cholz_factor,
    .solve = cholz_solve,
    .logdet = cholz_logdet,
    .selinv = NULL,
    .rcond = cholz_rcond,
    .free_num = cholz_free_num,
    .free_sym = cholz_free_sym,
};
