/* SuperLU complex backend: sequential SuperLU 5.x supernodal LU with
 * partial pivoting in complex128 (zgstrf / zgstrs; doublecomplex has the
 * layout of sla__z).
 *
 * As in the real backend (superlu.c, whose notes on SuperLU's own
 * allocations and known defects apply here too): sla's CSR of A is the CSC
 * of M = A^T, handed to SuperLU without copying the pattern, and
 * Pr M Pc = L U. A x = b is M^T x = b (zgstrs TRANS); A^T x = b is M x = b
 * (NOTRANS); A^H x = b is conj(M) x = b, solved as M conj(x) = conj(b)
 * (SuperLU's CONJ would solve M^H = conj(A)). det(A) = det(M) =
 * sign(Pr) sign(Pc) prod u_jj.
 *
 * The symbolic object holds the column permutation and the postordered
 * column elimination tree (read-only after analyze, so factors of
 * different value arrays may run concurrently) and int copies of the
 * pattern, which factor compares with the matrix it is given. Analyze
 * refuses structurally singular matrices (SuperLU 5.3 misbehaves on them)
 * and sizes beyond SuperLU's int indices.
 */
#include "zbackend.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <slu_zdefs.h>

_Static_assert(_Generic((int32_t)0, int: 1, default: 0), "int32_t must be int");
_Static_assert(sizeof(doublecomplex) == sizeof(sla__z), "doublecomplex must be two doubles");

typedef struct sluz_sym {
    sla_allocator alloc;
    int n, nnz;
    colperm_t colperm;
    int *colptr; /* n + 1: M's column pointers (A's row pointers) */
    int *rowind; /* nnz: M's row indices (A's column indices), for the pattern check */
    int *perm_c; /* n: column permutation of M, postordered */
    int *etree;  /* n: postordered column elimination tree of M Pc */
} sluz_sym;

typedef struct sluz_num {
    sla_allocator alloc;
    int n;
    bool have_lu;
    SuperMatrix L, U;
    int *perm_r;
    GlobalLU_t glu;
    double rcond;
} sluz_num;

#define SLUZ_RCOND_REFINE 1e-6

static void wrap_nc(SuperMatrix *M, NCformat *store, int n, int nnz, int *colptr, int *rowind, sla__z *vals)
{
    store->nnz = nnz;
    store->nzval = vals;
    store->rowind = rowind;
    store->colptr = colptr;
    M->Stype = SLU_NC;
    M->Dtype = SLU_Z;
    M->Mtype = SLU_GE;
    M->nrow = n;
    M->ncol = n;
    M->Store = store;
}

static void sluz_free_sym(void *p)
{
    sluz_sym *s = p;
    if (!s) return;
    sla_allocator a = s->alloc;
    sla__free(&a, s->colptr);
    sla__free(&a, s->rowind);
    sla__free(&a, s->perm_c);
    sla__free(&a, s->etree);
    sla__free(&a, s);
}

static sla_status sluz_analyze(sla_ctx *ctx, const sla_matrix *A, const sla__direct_opts *o, void **sym)
{
    if (!sym) return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu analyze: sym is NULL");
    *sym = NULL;
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu analyze: matrix is NULL");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "superlu analyze: matrix is %lld x %lld, not square",
                          (long long)A->nrows, (long long)A->ncols);
    if (A->nrows > INT_MAX || A->nnz > INT_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE,
                          "superlu: n = %lld, nnz = %lld exceed SuperLU's int index limit (%d)",
                          (long long)A->nrows, (long long)A->nnz, INT_MAX);
    int fill = abs(sp_ienv(6));
    if ((double)A->nnz * (double)(fill > 1 ? fill : 1) > (double)INT_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE,
                          "superlu: nnz = %lld times SuperLU's initial fill ratio %d overflows its "
                          "int-sized factor storage",
                          (long long)A->nnz, fill);
    colperm_t colperm;
    switch (o ? o->ordering : SLA_ORDER_AUTO) {
    case SLA_ORDER_AUTO: colperm = COLAMD; break;
    case SLA_ORDER_AMD: colperm = MMD_AT_PLUS_A; break;
    case SLA_ORDER_NATURAL: colperm = NATURAL; break;
    case SLA_ORDER_METIS:
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "superlu: METIS ordering is not available with SuperLU 5.x here; use "
                          "ordering auto (colamd), amd (mmd_at_plus_a) or natural");
    default: return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu: unknown ordering %d", (int)o->ordering);
    }
    const int n = (int)A->nrows, nnz = (int)A->nnz;
    sla_status st = SLA_OK;
    sluz_sym *s = sla__ctx_calloc(ctx, 1, sizeof *s, "superlu symbolic object");
    if (!s) return SLA_ERR_NOMEM;
    s->alloc = sla__ctx_alloc(ctx);
    s->n = n;
    s->nnz = nnz;
    s->colperm = colperm;
    s->colptr = sla__ctx_malloc(ctx, (size_t)n + 1, sizeof(int), "superlu column pointers");
    s->rowind = s->colptr ? sla__ctx_malloc(ctx, (size_t)nnz, sizeof(int), "superlu row indices") : NULL;
    s->perm_c = s->rowind ? sla__ctx_malloc(ctx, (size_t)n, sizeof(int), "superlu perm_c") : NULL;
    s->etree = s->perm_c ? sla__ctx_malloc(ctx, (size_t)n, sizeof(int), "superlu etree") : NULL;
    if (!s->etree) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    for (int i = 0; i <= n; i++) s->colptr[i] = (int)A->rowptr[i];
    memcpy(s->rowind, A->colind, (size_t)nnz * sizeof(int));
    if (n > 0) {
        st = sla__structural_check(ctx, "superlu", A);
        if (st) goto done;
        SuperMatrix M, AC;
        NCformat Mstore;
        wrap_nc(&M, &Mstore, n, nnz, s->colptr, s->rowind, NULL); /* pattern only */
        superlu_options_t opt;
        set_default_options(&opt);
        opt.ColPerm = colperm;
        opt.Fact = DOFACT; /* compute and postorder the etree; updates perm_c */
        get_perm_c((int)colperm, &M, s->perm_c);
        sp_preorder(&opt, &M, s->perm_c, s->etree, &AC);
        Destroy_CompCol_Permuted(&AC);
    }
done:
    if (st) sluz_free_sym(s);
    else *sym = s;
    return st;
}

static void sluz_free_num(void *p)
{
    sluz_num *f = p;
    if (!f) return;
    if (f->have_lu) {
        Destroy_SuperNode_Matrix(&f->L);
        Destroy_CompCol_Matrix(&f->U);
    }
    sla_allocator a = f->alloc;
    sla__free(&a, f->perm_r);
    sla__free(&a, f);
}

/* u_jj from L's supernodal store: the diagonal block of each supernode
 * holds U's upper part too; the entry of column j whose subscript is j. */
static sla__z sluz_udiag(const SCformat *Ls, int j)
{
    const sla__z *lv = Ls->nzval;
    int fsupc = Ls->sup_to_col[Ls->col_to_sup[j]];
    int r0 = Ls->rowind_colptr[fsupc], r1 = Ls->rowind_colptr[fsupc + 1];
    int guess = r0 + (j - fsupc);
    if (guess < r1 && Ls->rowind[guess] == j) return lv[Ls->nzval_colptr[j] + (j - fsupc)];
    for (int i = r0; i < r1; i++)
        if (Ls->rowind[i] == j) return lv[Ls->nzval_colptr[j] + (i - r0)];
    return 0.0;
}

static sla_status sluz_factor(sla_ctx *ctx, void *sym, const sla_matrix *A, sla_int ib, void **num)
{
    if (!num) return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu factor: num is NULL");
    *num = NULL;
    sluz_sym *s = sym;
    if (!s) return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu factor: symbolic object is NULL");
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu factor: matrix is NULL");
    if (A->nrows != s->n || A->ncols != s->n || A->nnz != s->nnz)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "superlu factor: matrix (%lld x %lld, %lld entries) does not match the "
                          "analysis (%d x %d, %d entries)",
                          (long long)A->nrows, (long long)A->ncols, (long long)A->nnz, s->n, s->n, s->nnz);
    for (int i = 0; i < s->n; i++)
        if (A->rowptr[i + 1] != s->colptr[i + 1])
            return sla__error(ctx, SLA_ERR_ARGUMENT,
                              "superlu factor: the pattern of row %d does not match the analysis", i);
    for (int k = 0; k < s->nnz; k++)
        if (A->colind[k] != s->rowind[k])
            return sla__error(ctx, SLA_ERR_ARGUMENT,
                              "superlu factor: entry %d's column does not match the analysis", k);
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu factor: value array %lld out of range [0, %lld)",
                          (long long)ib, (long long)A->nbatch);
    const int n = s->n, nnz = s->nnz;
    sla_status st = SLA_OK;
    sla__z *vals = NULL;
    sluz_num *f = sla__ctx_calloc(ctx, 1, sizeof *f, "superlu numeric object");
    if (!f) return SLA_ERR_NOMEM;
    f->alloc = sla__ctx_alloc(ctx);
    f->n = n;
    f->rcond = -1.0;
    f->perm_r = sla__ctx_malloc(ctx, (size_t)n, sizeof(int), "superlu perm_r");
    if (!f->perm_r) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    if (n == 0) goto done;
    vals = sla__zvalues(ctx, A, ib, false, "superlu values"); /* temporary: zgstrf copies */
    if (!vals) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    st = sla__zcheck_finite_values(ctx, "superlu", nnz, vals, ib);
    if (st) goto done;
    SuperMatrix M, AC;
    NCformat Mstore;
    wrap_nc(&M, &Mstore, n, nnz, s->colptr, s->rowind, vals);
    superlu_options_t opt;
    set_default_options(&opt);
    opt.ColPerm = s->colperm;
    opt.Equil = NO;
    opt.Fact = FACTORED; /* sp_preorder only applies the stored perm_c */
    sp_preorder(&opt, &M, s->perm_c, s->etree, &AC);
    opt.Fact = DOFACT;
    int panel_size = sp_ienv(1), relax = sp_ienv(2), info = 0;
    SuperLUStat_t stat;
    StatInit(&stat);
    zgstrf(&opt, &AC, relax, panel_size, s->etree, NULL, 0, s->perm_c, f->perm_r, &f->L, &f->U, &f->glu,
           &stat, &info);
    StatFree(&stat);
    Destroy_CompCol_Permuted(&AC);
    if (info == 0 || (info > 0 && info <= n)) f->have_lu = true;
    if (info > 0 && info <= n) {
        st = sla__error(ctx, SLA_ERR_SINGULAR, "superlu: U(%d,%d) is exactly zero (singular matrix)", info,
                        info);
    } else if (info > n) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "superlu: out of memory in zgstrf (after %d bytes)", info - n);
    } else if (info < 0) {
        st = sla__error(ctx, SLA_ERR_ARGUMENT, "superlu: zgstrf argument %d invalid", -info);
    } else {
        /* min / max |u_jj|; below SLUZ_RCOND_REFINE the 1-norm estimate of zgscon */
        double umin = INFINITY, umax = 0.0;
        for (int j = 0; j < n; j++) {
            double u = cabs(sluz_udiag(f->L.Store, j));
            if (u < umin) umin = u;
            if (u > umax) umax = u;
        }
        f->rcond = umax > 0.0 ? umin / umax : 0.0;
        if (f->rcond < SLUZ_RCOND_REFINE) {
            double anorm = 0.0; /* 1-norm of M: A's largest row sum */
            for (int i = 0; i < n; i++) {
                double sum = 0.0;
                for (int p = s->colptr[i]; p < s->colptr[i + 1]; p++) sum += cabs(vals[p]);
                if (sum > anorm) anorm = sum;
            }
            double rc = -1.0;
            int cinfo = 0;
            SuperLUStat_t cstat;
            StatInit(&cstat);
            zgscon("1", &f->L, &f->U, anorm, &rc, &cstat, &cinfo);
            StatFree(&cstat);
            if (cinfo == 0) f->rcond = rc;
        }
    }
done:
    sla__free(&f->alloc, vals);
    if (st) sluz_free_num(f);
    else *num = f;
    return st;
}

#define SLUZ_RHS_CHUNK 64

static sla_status sluz_solve(sla_ctx *ctx, void *sym, void *num, int op, sla_int nrhs,
                             const sla__z *b, sla_int ldb, sla__z *x, sla_int ldx)
{
    sluz_sym *s = sym;
    sluz_num *f = num;
    if (!s || !f) return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu solve: NULL factor");
    const int n = f->n;
    sla_status st = sla__zcheck_solve_args(ctx, "superlu", op, n, nrhs, b, ldb, x, ldx);
    if (st || n == 0 || nrhs == 0) return st;
    sla_int chunk = nrhs < SLUZ_RHS_CHUNK ? nrhs : SLUZ_RHS_CHUNK;
    if (chunk > INT_MAX / n) chunk = INT_MAX / n;
    sla__z *buf = sla__ctx_malloc(ctx, (size_t)n * (size_t)chunk, sizeof *buf, "superlu solve work space");
    if (!buf) return SLA_ERR_NOMEM;
    /* A = M^T; A^H x = b is M conj(x) = conj(b) */
    trans_t trans = op == 0 ? TRANS : NOTRANS;
    for (sla_int j0 = 0; j0 < nrhs && !st; j0 += chunk) {
        int nc = (int)(nrhs - j0 < chunk ? nrhs - j0 : chunk);
        for (int j = 0; j < nc; j++) {
            memcpy(buf + (size_t)j * n, b + (size_t)(j0 + j) * (size_t)ldb, (size_t)n * sizeof *buf);
            if (op == 2) sla__zconj(n, buf + (size_t)j * n);
        }
        SuperMatrix B;
        DNformat Bstore = {.lda = n, .nzval = buf};
        B.Stype = SLU_DN;
        B.Dtype = SLU_Z;
        B.Mtype = SLU_GE;
        B.nrow = n;
        B.ncol = nc;
        B.Store = &Bstore;
        SuperLUStat_t stat;
        int info = 0;
        StatInit(&stat);
        zgstrs(trans, &f->L, &f->U, s->perm_c, f->perm_r, &B, &stat, &info);
        StatFree(&stat);
        if (info != 0) {
            st = sla__error(ctx, SLA_ERR_ARGUMENT, "superlu: zgstrs argument %d invalid", -info);
            break;
        }
        for (int j = 0; j < nc; j++) {
            sla__z *xj = x + (size_t)(j0 + j) * (size_t)ldx;
            memcpy(xj, buf + (size_t)j * n, (size_t)n * sizeof *xj);
            if (op == 2) sla__zconj(n, xj);
        }
    }
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__free(&a, buf);
    if (!st) st = sla__zcheck_solution(ctx, "superlu", n, nrhs, b, ldb, x, ldx);
    return st;
}

static sla_status sluz_logdet(sla_ctx *ctx, void *sym, void *num, sla__z *phase, double *logabs)
{
    sluz_sym *s = sym;
    sluz_num *f = num;
    if (!s || !f || !phase || !logabs) return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu logdet: NULL argument");
    const int n = f->n;
    *phase = 1.0;
    *logabs = 0.0;
    if (n == 0) return SLA_OK;
    unsigned char *mark = sla__ctx_malloc(ctx, (size_t)n, 1, "superlu permutation marks");
    if (!mark) return SLA_ERR_NOMEM;
    double sg = sla__perm_sign(n, NULL, f->perm_r, mark) * sla__perm_sign(n, NULL, s->perm_c, mark);
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__free(&a, mark);
    sla__z ph = sg;
    double la = 0.0;
    for (int j = 0; j < n; j++) sla__zlogdet_acc(sluz_udiag(f->L.Store, j), &ph, &la);
    *phase = ph;
    *logabs = la;
    return SLA_OK;
}

static double sluz_rcond(const void *num) { return num ? ((const sluz_num *)num)->rcond : -1.0; }

const sla__zdirect_ops sla__zbackend_superlu = {
    .name = "superlu",
    .hermitian = false,
    .analyze = sluz_analyze,
    .factor = sluz_factor,
    .solve = sluz_solve,
    .logdet = sluz_logdet,
    .selinv = NULL,
    .rcond = sluz_rcond,
    .free_num = sluz_free_num,
    .free_sym = sluz_free_sym,
};
