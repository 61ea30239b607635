/* Direct backend: sequential SuperLU 5.x supernodal LU with partial
 * pivoting (the engine behind SciPy's spsolve/splu).
 *
 * Storage. sla's CSR of A is, read column by column, the CSC of M = A^T.
 * We hand SuperLU that CSC as an SLU_NC matrix without copying the pattern
 * and factor M:  Pr M Pc = L U.  Since det(M) = det(A), the log-determinant
 * needs no correction, and the solves swap the trans argument of dgstrs:
 *     A x = b    <=>  M^T x = b  ->  dgstrs(TRANS, ...)
 *     A^T x = b  <=>  M x = b    ->  dgstrs(NOTRANS, ...)
 * (SuperLU's own SLU_NR input does the same transposition internally.)
 *
 * Symbolic object: the column permutation perm_c (from get_perm_c, then
 * postordered by sp_preorder) and the postordered column elimination tree.
 * Each factor call rebuilds the column-permuted view AC from these without
 * touching them (sp_preorder with Fact != DOFACT), then runs dgstrf with
 * Fact = DOFACT: fresh row pivoting on a fixed column order, which is
 * SuperLU's SamePattern mode. The symbolic object is therefore read-only
 * after analyze, and factor calls on different value arrays may run
 * concurrently: SuperLU 5.x keeps all state in the GlobalLU_t and
 * SuperLUStat_t we pass it (one of each per call / per numeric object).
 *
 * Known limitations of the installed SuperLU that we cannot intercept
 * without rebuilding it:
 *  - its internal allocations go through SUPERLU_MALLOC (the C allocator,
 *    not the ctx allocator), and several of them (sp_preorder, get_perm_c,
 *    StatInit, dgstrs work space) call ABORT on failure, which prints and
 *    exits the process;
 *  - when dgstrf runs out of memory part way it returns info > n, prints a
 *    line, and leaks its partially built factor (it returns early without
 *    freeing); we report SLA_ERR_NOMEM;
 *  - SuperLU 5.3's dpivotL reads past the end of the L subscripts of a
 *    column that has no remaining structural entry (a structurally
 *    singular matrix) and then writes perm_r at the garbage index (SciPy
 *    patches this; upstream fixed it later). We therefore check the
 *    structural rank in analyze (a maximum transversal) and refuse a
 *    structurally singular matrix with SLA_ERR_SINGULAR before SuperLU sees
 *    it. Symbolic elimination preserves full structural rank, so a
 *    structurally nonsingular matrix always has a candidate pivot row and
 *    only exact numerical zero pivots remain, which dgstrf reports in info.
 * The backend never prints itself and calls no SuperLU print routine.
 *
 * Orderings: auto -> COLAMD (SciPy's default), amd -> MMD_AT_PLUS_A (the
 * closest SuperLU offers), natural -> NATURAL, metis -> SLA_ERR_UNSUPPORTED
 * (no METIS in this SuperLU). As in SuperLU's drivers, sp_preorder then
 * postorders the column elimination tree, so even "natural" may reorder
 * columns (an equivalent order with the same fill).
 *
 * Sizes: SuperLU 5.3 uses int indices (int_t = int), so n and nnz above
 * INT_MAX are refused with SLA_ERR_TOO_LARGE, as is an nnz whose initial
 * factor estimate (fill ratio sp_ienv(6) times nnz) overflows an int inside
 * dgstrf's memory set-up (int fill_ratio * int nnz; 30 * nnz with the
 * default sp_ienv, so about 71 million entries).
 *
 * BLAS threads are whatever the linked BLAS uses; o->nthreads is not
 * applied (SuperLU 5.x sequential has no thread control).
 */
#include "../solvers/direct.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <slu_ddefs.h>

/* sla's colind is int32_t and SuperLU's row indices are int: the pattern is
 * passed to SuperLU without a copy. */
_Static_assert(_Generic((int32_t)0, int: 1, default: 0), "int32_t must be int");

typedef struct slu_sym {
    sla_allocator alloc;
    int n, nnz;
    colperm_t colperm;
    int *colptr; /* n + 1: M's column pointers (= A's row pointers, as int) */
    int *perm_c; /* n: column permutation of M, postordered by sp_preorder */
    int *etree;  /* n: postordered column elimination tree of M Pc */
} slu_sym;

typedef struct slu_num {
    sla_allocator alloc;
    int n;
    bool have_lu;     /* L and U hold a factor (n > 0) */
    SuperMatrix L, U; /* SLU_SC unit-lower L (with U's diagonal blocks), SLU_NC U */
    int *perm_r;      /* n: row permutation from partial pivoting */
    GlobalLU_t glu;   /* SuperLU's factorization state for this factor */
    double factor_nnz;
    double rcond;     /* dgscon: 1-norm reciprocal condition estimate (-1: unknown) */
} slu_num;

/* Below this pivot ratio the factor's condition is estimated by dgscon. */
#define SLU_RCOND_REFINE 1e-6

/* ---- helpers ----------------------------------------------------------- */

/* An SLU_NC view of M = A^T on caller-owned arrays (nothing is allocated,
 * so nothing to destroy). */
static void wrap_nc(SuperMatrix *M, NCformat *store, int n, int nnz, int *colptr, int *rowind,
                    double *vals)
{
    store->nnz = nnz;
    store->nzval = vals;
    store->rowind = rowind;
    store->colptr = colptr;
    M->Stype = SLU_NC;
    M->Dtype = SLU_D;
    M->Mtype = SLU_GE;
    M->nrow = n;
    M->ncol = n;
    M->Store = store;
}

/* ---- analyze ------------------------------------------------------------ */

static void slu_free_sym(void *p)
{
    slu_sym *s = p;
    if (!s) return;
    sla__free(&s->alloc, s->colptr);
    sla__free(&s->alloc, s->perm_c);
    sla__free(&s->alloc, s->etree);
    sla_allocator a = s->alloc;
    sla__free(&a, s);
}

static sla_status slu_analyze(sla_ctx *ctx, const sla_matrix *A, const sla__direct_opts *o,
                              void **sym, sla__direct_stats *stats)
{
    if (!sym) return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu: sym is NULL");
    *sym = NULL;
    if (!A || !o) return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu: NULL argument");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "superlu: matrix is %lld x %lld, not square",
                          (long long)A->nrows, (long long)A->ncols);
    if (A->nrows > INT_MAX || A->nnz > INT_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE,
                          "superlu: n = %lld, nnz = %lld exceed SuperLU's int index limit (%d)",
                          (long long)A->nrows, (long long)A->nnz, INT_MAX);
    int fill = abs(sp_ienv(6));
    if ((double)A->nnz * (double)(fill > 1 ? fill : 1) > (double)INT_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE,
                          "superlu: nnz = %lld times SuperLU's initial fill ratio %d overflows "
                          "its int-sized factor storage",
                          (long long)A->nnz, fill);

    colperm_t colperm;
    const char *oname;
    switch (o->ordering) {
    case SLA_ORDER_AUTO: colperm = COLAMD; oname = "colamd"; break;
    case SLA_ORDER_AMD: colperm = MMD_AT_PLUS_A; oname = "mmd_at_plus_a"; break;
    case SLA_ORDER_NATURAL: colperm = NATURAL; oname = "natural"; break;
    case SLA_ORDER_METIS:
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "superlu: METIS ordering is not available with SuperLU 5.x here; use "
                          "ordering auto (colamd), amd (mmd_at_plus_a) or natural");
    default:
        return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu: unknown ordering %d", (int)o->ordering);
    }

    int n = (int)A->nrows, nnz = (int)A->nnz;
    sla_status st = SLA_OK;
    slu_sym *s = sla__ctx_calloc(ctx, 1, sizeof *s, "superlu symbolic object");
    if (!s) return SLA_ERR_NOMEM;
    s->alloc = sla__ctx_alloc(ctx);
    s->n = n;
    s->nnz = nnz;
    s->colperm = colperm;
    s->colptr = sla__ctx_malloc(ctx, (size_t)n + 1, sizeof(int), "superlu column pointers");
    s->perm_c = s->colptr ? sla__ctx_malloc(ctx, (size_t)n, sizeof(int), "superlu perm_c") : NULL;
    s->etree = s->perm_c ? sla__ctx_malloc(ctx, (size_t)n, sizeof(int), "superlu etree") : NULL;
    if (!s->etree) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    for (int i = 0; i <= n; i++) s->colptr[i] = (int)A->rowptr[i];

    if (n > 0) {
        st = sla__structural_check(ctx, "superlu", A);
        if (st) goto done;
        SuperMatrix M, AC;
        NCformat Mstore;
        wrap_nc(&M, &Mstore, n, nnz, s->colptr, A->colind, NULL); /* pattern only */
        superlu_options_t opt;
        set_default_options(&opt);
        opt.ColPerm = colperm;
        opt.Fact = DOFACT; /* compute and postorder the etree; updates perm_c */
        get_perm_c((int)colperm, &M, s->perm_c);
        sp_preorder(&opt, &M, s->perm_c, s->etree, &AC);
        Destroy_CompCol_Permuted(&AC);
    }

    if (stats) {
        stats->factor_nnz = 0.0; /* SuperLU's symbolic work happens inside dgstrf */
        stats->flops = 0.0;
        stats->bytes = 0.0;
        snprintf(stats->ordering, sizeof stats->ordering, "%s", oname);
    }

done:
    if (st) {
        slu_free_sym(s);
        return st;
    }
    *sym = s;
    return sla__ok(ctx, SLA_OK);
}

/* ---- factor ------------------------------------------------------------- */

static void slu_free_num(void *p)
{
    slu_num *f = p;
    if (!f) return;
    if (f->have_lu) {
        Destroy_SuperNode_Matrix(&f->L);
        Destroy_CompCol_Matrix(&f->U);
    }
    sla__free(&f->alloc, f->perm_r);
    sla_allocator a = f->alloc;
    sla__free(&a, f);
}

static sla_status slu_factor(sla_ctx *ctx, void *sym, const sla_matrix *A, sla_int ib, void **num)
{
    if (!num) return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu: num is NULL");
    *num = NULL;
    slu_sym *s = sym;
    if (!s || !A) return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu: NULL argument");
    if (A->nrows != s->n || A->ncols != s->n || A->nnz != s->nnz)
        return sla__error(ctx, SLA_ERR_DIMENSION,
                          "superlu: matrix (%lld x %lld, nnz %lld) does not match the analysis "
                          "(n %d, nnz %d)",
                          (long long)A->nrows, (long long)A->ncols, (long long)A->nnz, s->n,
                          s->nnz);
    for (int i = 0; i < s->n; i++) /* the row pointers the analysis ordered with */
        if (A->rowptr[i + 1] != s->colptr[i + 1])
            return sla__error(ctx, SLA_ERR_DIMENSION,
                              "superlu: the pattern of row %d does not match the analysis", i);
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu: value array %lld out of range [0, %lld)",
                          (long long)ib, (long long)A->nbatch);

    int n = s->n, nnz = s->nnz;
    sla_status st = SLA_OK;
    double *vals = NULL;
    slu_num *f = sla__ctx_calloc(ctx, 1, sizeof *f, "superlu numeric object");
    if (!f) return SLA_ERR_NOMEM;
    f->alloc = sla__ctx_alloc(ctx);
    f->n = n;
    f->rcond = -1.0;
    f->perm_r = sla__ctx_malloc(ctx, (size_t)n, sizeof(int), "superlu perm_r");
    if (!f->perm_r) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    if (n == 0) goto done; /* nothing to factor; solves and logdet are trivial */

    /* SuperLU wants a mutable double array (it does not write it); dgstrf
     * copies everything it needs into L and U, so this copy is temporary. */
    vals = sla__values_f64(ctx, A, ib, "superlu values");
    if (!vals) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    /* SuperLU would take a NaN column for a zero pivot */
    st = sla__check_finite_values(ctx, "superlu", nnz, vals, ib);
    if (st) goto done;

    SuperMatrix M, AC;
    NCformat Mstore;
    wrap_nc(&M, &Mstore, n, nnz, s->colptr, A->colind, vals);
    superlu_options_t opt;
    set_default_options(&opt); /* DiagPivotThresh 1.0: partial pivoting */
    opt.ColPerm = s->colperm;
    opt.Equil = NO;
    /* Fact != DOFACT: sp_preorder only applies the stored perm_c to form AC
     * and leaves perm_c and etree (shared, read-only) alone. */
    opt.Fact = FACTORED;
    sp_preorder(&opt, &M, s->perm_c, s->etree, &AC);
    opt.Fact = DOFACT; /* fresh L/U storage and row pivoting */

    int panel_size = sp_ienv(1), relax = sp_ienv(2), info = 0;
    SuperLUStat_t stat;
    StatInit(&stat);
    dgstrf(&opt, &AC, relax, panel_size, s->etree, NULL, 0, s->perm_c, f->perm_r, &f->L, &f->U,
           &f->glu, &stat, &info);
    StatFree(&stat);
    Destroy_CompCol_Permuted(&AC);

    if (info == 0 || (info > 0 && info <= n)) f->have_lu = true; /* L, U were created */
    if (info > 0 && info <= n) {
        st = sla__error(ctx, SLA_ERR_SINGULAR,
                        "superlu: U(%d,%d) is exactly zero (singular matrix)", info, info);
    } else if (info > n) {
        st = sla__error(ctx, SLA_ERR_NOMEM,
                        "superlu: out of memory in dgstrf (after %d bytes)", info - n);
    } else if (info < 0) {
        st = sla__error(ctx, SLA_ERR_ARGUMENT, "superlu: dgstrf argument %d invalid", -info);
    } else {
        f->factor_nnz = (double)((SCformat *)f->L.Store)->nnz +
                        (double)((NCformat *)f->U.Store)->nnz;
        /* The cheap estimate first, like the other backends: min / max
         * |u_jj| (O(n)). Only when it is small (< SLU_RCOND_REFINE), the 1-norm
         * estimate of dgscon (Hager-Higham: about ten triangular solves,
         * +10-20 % on a factorization), which then decides the warning. */
        const SCformat *Ls = f->L.Store;
        const double *lv = Ls->nzval;
        double umin = INFINITY, umax = 0.0;
        for (int j = 0; j < n; j++) {
            int fsupc = Ls->sup_to_col[Ls->col_to_sup[j]];
            int r0 = Ls->rowind_colptr[fsupc], r1 = Ls->rowind_colptr[fsupc + 1];
            double u = 0.0;
            for (int i = r0 + (j - fsupc); i < r1; i++) /* the diagonal block comes first */
                if (Ls->rowind[i] == j) {
                    u = fabs(lv[Ls->nzval_colptr[j] + (i - r0)]);
                    break;
                }
            if (u < umin) umin = u;
            if (u > umax) umax = u;
        }
        f->rcond = umax > 0.0 ? umin / umax : 0.0;
        if (f->rcond < SLU_RCOND_REFINE) {
            /* the 1-norm of M = A^T: its column sums are A's row sums */
            double anorm = 0.0;
            for (int i = 0; i < n; i++) {
                double sum = 0.0;
                for (int p = s->colptr[i]; p < s->colptr[i + 1]; p++) sum += fabs(vals[p]);
                if (sum > anorm) anorm = sum;
            }
            double rc = -1.0;
            int cinfo = 0;
            SuperLUStat_t cstat;
            StatInit(&cstat);
            dgscon("1", &f->L, &f->U, anorm, &rc, &cstat, &cinfo);
            StatFree(&cstat);
            if (cinfo == 0) f->rcond = rc;
        }
    }

done:
    sla__free(&f->alloc, vals);
    if (st) {
        slu_free_num(f);
        return st;
    }
    *num = f;
    return sla__ok(ctx, SLA_OK);
}

/* ---- solve -------------------------------------------------------------- */

/* Right-hand sides handed to one dgstrs call. */
#define SLU_RHS_CHUNK 64

static sla_status slu_solve(sla_ctx *ctx, void *sym, void *num, bool transpose, sla_int nrhs,
                            const double *b, sla_int ldb, double *x, sla_int ldx)
{
    slu_sym *s = sym;
    slu_num *f = num;
    if (!s || !f) return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu: NULL factor");
    int n = f->n;
    if (nrhs < 0 || ldb < n || ldx < n)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "superlu: bad solve sizes (n %d, nrhs %lld, ldb %lld, ldx %lld)", n,
                          (long long)nrhs, (long long)ldb, (long long)ldx);
    if (n == 0 || nrhs == 0) return sla__ok(ctx, SLA_OK);
    if (!b || !x) return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu: b or x is NULL");

    sla_int chunk = nrhs < SLU_RHS_CHUNK ? nrhs : SLU_RHS_CHUNK;
    if (chunk > INT_MAX / n) chunk = INT_MAX / n; /* dgstrs indexes with int */
    double *buf = sla__ctx_malloc(ctx, (size_t)n * (size_t)chunk, sizeof(double),
                                  "superlu solve work space");
    if (!buf) return SLA_ERR_NOMEM;

    /* A = M^T: see the comment at the top */
    trans_t trans = transpose ? NOTRANS : TRANS;
    sla_status st = SLA_OK;
    for (sla_int j0 = 0; j0 < nrhs && !st; j0 += chunk) {
        int nc = (int)(nrhs - j0 < chunk ? nrhs - j0 : chunk);
        for (int j = 0; j < nc; j++)
            memcpy(buf + (size_t)j * n, b + (size_t)(j0 + j) * (size_t)ldb, (size_t)n * sizeof(double));
        SuperMatrix B;
        DNformat Bstore = {.lda = n, .nzval = buf};
        B.Stype = SLU_DN;
        B.Dtype = SLU_D;
        B.Mtype = SLU_GE;
        B.nrow = n;
        B.ncol = nc;
        B.Store = &Bstore;
        SuperLUStat_t stat;
        int info = 0;
        StatInit(&stat);
        dgstrs(trans, &f->L, &f->U, s->perm_c, f->perm_r, &B, &stat, &info);
        StatFree(&stat);
        if (info != 0) {
            st = sla__error(ctx, SLA_ERR_ARGUMENT, "superlu: dgstrs argument %d invalid", -info);
            break;
        }
        for (int j = 0; j < nc && !st; j++) {
            const double *bj = b + (size_t)(j0 + j) * (size_t)ldb;
            double *xj = buf + (size_t)j * n;
            if (!sla__all_finite(n, xj)) {
                if (!sla__all_finite(n, bj))
                    st = sla__error(ctx, SLA_ERR_VALUE,
                                    "superlu: right-hand side %lld contains NaN or Inf",
                                    (long long)(j0 + j));
                else
                    st = sla__error(ctx, SLA_ERR_SINGULAR,
                                    "superlu: solve produced NaN or Inf (numerically singular "
                                    "matrix)");
            }
            else {
                memcpy(x + (size_t)(j0 + j) * (size_t)ldx, xj, (size_t)n * sizeof(double));
            }
        }
    }
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__free(&a, buf);
    return st ? st : sla__ok(ctx, SLA_OK);
}

/* ---- log-determinant ------------------------------------------------------ */

/* det(A) = det(M) and Pr M Pc = L U with unit L, so
 * det(A) = sign(Pr) sign(Pc) prod u_jj. U's diagonal lives in L's
 * supernodal store: the diagonal block of each supernode holds both L's
 * strict lower part and U's upper part. L's row subscripts are in pivoted
 * order, so u_jj is the entry of column j whose subscript is j. */
static sla_status slu_logdet(sla_ctx *ctx, void *sym, void *num, double *sign, double *logabsdet)
{
    slu_sym *s = sym;
    slu_num *f = num;
    if (!s || !f || !sign || !logabsdet)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "superlu: NULL argument");
    int n = f->n;
    *sign = 1.0;
    *logabsdet = 0.0;
    if (n == 0) return sla__ok(ctx, SLA_OK);

    unsigned char *mark = sla__ctx_malloc(ctx, (size_t)n, 1, "superlu permutation marks");
    if (!mark) return SLA_ERR_NOMEM;
    double sg =
        sla__perm_sign(n, NULL, f->perm_r, mark) * sla__perm_sign(n, NULL, s->perm_c, mark);
    sla_allocator a = sla__ctx_alloc(ctx);
    sla__free(&a, mark);

    const SCformat *Ls = f->L.Store;
    const double *lv = Ls->nzval;
    double la = 0.0;
    for (int j = 0; j < n && sg != 0.0; j++) {
        int fsupc = Ls->sup_to_col[Ls->col_to_sup[j]];
        int r0 = Ls->rowind_colptr[fsupc], r1 = Ls->rowind_colptr[fsupc + 1];
        double u = 0.0;
        /* the diagonal block comes first, in order: try position j - fsupc */
        int guess = r0 + (j - fsupc);
        if (guess < r1 && Ls->rowind[guess] == j) {
            u = lv[Ls->nzval_colptr[j] + (j - fsupc)];
        } else {
            for (int i = r0; i < r1; i++)
                if (Ls->rowind[i] == j) {
                    u = lv[Ls->nzval_colptr[j] + (i - r0)];
                    break;
                }
        }
        if (u == 0.0) {
            sg = 0.0;
            la = -INFINITY;
        } else {
            if (u < 0) sg = -sg;
            la += log(fabs(u));
        }
    }
    *sign = sg;
    *logabsdet = la;
    return sla__ok(ctx, SLA_OK);
}

static double slu_rcond(const void *num) { return num ? ((const slu_num *)num)->rcond : -1.0; }

static const sla__direct_ops slu_ops = {
    .name = "superlu",
    .analyze = slu_analyze,
    .factor = slu_factor,
    .solve = slu_solve,
    .logdet = slu_logdet,
    .free_num = slu_free_num,
    .free_sym = slu_free_sym,
    .rcond = slu_rcond,
};

const sla__direct_ops *sla__backend_superlu(void) { return &slu_ops; }
