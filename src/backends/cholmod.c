/* CHOLMOD backend: Cholesky (supernodal LL^T, or simplicial LDL^T with a
 * positive D for small fronts) or simplicial LDL^T of a
 * symmetric matrix, through the 64-bit-index interface (cholmod_l_*).
 *
 * sla's CSR of a symmetric A is also its CSC, so the matrix is handed to
 * CHOLMOD as a cholmod_sparse view with stype = 1 (upper triangle of the
 * CSC, i.e. the lower triangle of sla's CSR; exact for a symmetric A):
 * p is A->rowptr itself, i an int64 copy of colind kept by the symbolic
 * object, x the value array (double arrays are used in place, float ones
 * are converted into a temporary copy at factor time).
 *
 * Ownership and threads: the symbolic object owns a cholmod_common and the
 * symbolic factor. Each numeric object owns its own cholmod_common (started
 * in factor), its copy of the symbolic factor (then factorized), and the
 * solve workspace of cholmod_l_solve2, so solves on different numeric
 * objects may run concurrently. CHOLMOD never prints (Common.print = 0, no
 * error handler); its memory goes through SuiteSparse_config, which is
 * process-global and left alone.
 */
#include "../solvers/direct.h"

#ifdef SLA_HAVE_SUITESPARSE

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cholmod.h>

_Static_assert(sizeof(SuiteSparse_long) == sizeof(sla_int),
               "CHOLMOD's long index must be 64-bit like sla_int");

typedef struct chol_sym {
    sla_allocator alloc;
    sla_int n, nnz;
    bool ldlt;
    SuiteSparse_long *colind; /* int64 copy of A->colind */
    cholmod_common cm;
    bool cm_started;
    cholmod_factor *L;        /* symbolic factor (NULL when n == 0) */
} chol_sym;

typedef struct chol_num {
    sla_allocator alloc;
    sla_int n;
    bool ldlt;
    cholmod_common cm;
    bool cm_started;
    cholmod_factor *L;        /* numeric factor (NULL when n == 0) */
    cholmod_dense *X, *Y, *E; /* cholmod_l_solve2 output and workspace */
    double rcond;             /* cholmod_l_rcond of the factor (-1: unknown) */
} chol_num;

/* Settings shared by the analysis and the factorization commons. */
static void chol_setup(cholmod_common *cm, bool ldlt)
{
    cm->print = 0;
    cm->error_handler = NULL;
    cm->try_catch = 0;
    cm->useGPU = 0;
    /* Cholesky: CHOLMOD picks simplicial or supernodal from the analysis'
     * flops / lnz. Simplicial won here up to a ratio of about 100 (2D
     * grids to 3e4, 3D to 1e3: 0.95 ms against 2.4 ms per n = 2500 factor),
     * supernodal from about 160 (bench/DIRECT_RESULTS.md). A simplicial
     * factor is LDL^T; its D is checked for positivity (chol_factor). */
    cm->supernodal = ldlt ? CHOLMOD_SIMPLICIAL : CHOLMOD_AUTO;
    cm->supernodal_switch = 120.0;
    cm->final_asis = 1;
    cm->final_ll = 0; /* simplicial stays LDL^T; supernodal is LL^T */
    cm->quick_return_if_not_posdef = 1;
}

/* A CHOLMOD failure (negative Common.status) as an sla error. */
static sla_status chol_fail(sla_ctx *ctx, const cholmod_common *cm, const char *what)
{
    switch (cm->status) {
    case CHOLMOD_OUT_OF_MEMORY:
        return sla__error(ctx, SLA_ERR_NOMEM, "cholmod %s: out of memory", what);
    case CHOLMOD_TOO_LARGE:
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "cholmod %s: problem too large (integer overflow)",
                          what);
    case CHOLMOD_NOT_INSTALLED:
        return sla__error(ctx, SLA_ERR_UNAVAILABLE, "cholmod %s: method not installed in this CHOLMOD",
                          what);
    case CHOLMOD_INVALID:
        return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod %s: invalid input", what);
    default:
        return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod %s failed (status %d)", what, cm->status);
    }
}

static const char *chol_ordering_name(int ord)
{
    switch (ord) {
    case CHOLMOD_NATURAL: return "natural";
    case CHOLMOD_GIVEN: return "given";
    case CHOLMOD_AMD: return "amd";
    case CHOLMOD_METIS: return "metis";
    case CHOLMOD_NESDIS: return "nesdis";
    case CHOLMOD_COLAMD: return "colamd";
    case CHOLMOD_POSTORDERED: return "postordered";
    default: return "unknown";
    }
}

/* A cholmod_sparse view of A (symmetric, upper part of the CSC). */
static void chol_view(cholmod_sparse *S, const chol_sym *s, const sla_matrix *A, double *x)
{
    memset(S, 0, sizeof *S);
    S->nrow = (size_t)s->n;
    S->ncol = (size_t)s->n;
    S->nzmax = (size_t)s->nnz;
    S->p = (void *)A->rowptr;
    S->i = s->colind;
    S->nz = NULL;
    S->x = x;
    S->z = NULL;
    S->stype = 1;
    S->itype = CHOLMOD_LONG;
    S->xtype = x ? CHOLMOD_REAL : CHOLMOD_PATTERN;
    S->dtype = CHOLMOD_DOUBLE;
    S->sorted = 1;
    S->packed = 1;
}

static void chol_free_sym(void *p)
{
    chol_sym *s = p;
    if (!s) return;
    if (s->cm_started) {
        if (s->L) cholmod_l_free_factor(&s->L, &s->cm);
        cholmod_l_finish(&s->cm);
    }
    sla_allocator a = s->alloc;
    sla__free(&a, s->colind);
    sla__free(&a, s);
}

static void chol_free_num(void *p)
{
    chol_num *f = p;
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

static sla_status chol_analyze(sla_ctx *ctx, const sla_matrix *A, const sla__direct_opts *o,
                               void **symp, sla__direct_stats *stats)
{
    if (symp) *symp = NULL;
    if (!A || !o || !symp) return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod analyze: NULL argument");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "cholmod analyze: matrix is %lld x %lld, not square",
                          (long long)A->nrows, (long long)A->ncols);

    int ord;
    switch (o->ordering) {
    case SLA_ORDER_AUTO:
    case SLA_ORDER_AMD: ord = CHOLMOD_AMD; break;
    case SLA_ORDER_METIS: ord = CHOLMOD_METIS; break;
    case SLA_ORDER_NATURAL: ord = CHOLMOD_NATURAL; break;
    default:
        return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod analyze: unknown ordering %d", (int)o->ordering);
    }

    sla_status st = SLA_OK;
    chol_sym *s = sla__ctx_calloc(ctx, 1, sizeof *s, "cholmod symbolic object");
    if (!s) return SLA_ERR_NOMEM;
    s->alloc = sla__ctx_alloc(ctx);
    s->n = A->nrows;
    s->nnz = A->nnz;
    s->ldlt = o->ldlt;
    s->colind = sla__ctx_malloc(ctx, (size_t)A->nnz, sizeof *s->colind, "cholmod column indices");
    if (!s->colind) { st = SLA_ERR_NOMEM; goto done; }
    for (sla_int k = 0; k < A->nnz; k++) s->colind[k] = A->colind[k];

    const char *ordname = chol_ordering_name(ord);
    double lnz = 0.0, fl = 0.0, bytes = 0.0;
    if (s->n > 0) {
        if (!cholmod_l_start(&s->cm)) {
            st = sla__error(ctx, SLA_ERR_NOMEM, "cholmod analyze: cholmod_l_start failed");
            goto done;
        }
        s->cm_started = true;
        chol_setup(&s->cm, s->ldlt);
        s->cm.nmethods = 1;
        s->cm.method[0].ordering = ord;
        /* natural means no reordering at all: CHOLMOD would otherwise
         * postorder the elimination tree ("postordered") */
        s->cm.postorder = ord != CHOLMOD_NATURAL;

        cholmod_sparse S;
        chol_view(&S, s, A, NULL);
        s->L = cholmod_l_analyze(&S, &s->cm);
        if (!s->L || s->cm.status < 0) { st = chol_fail(ctx, &s->cm, "analyze"); goto done; }

        const cholmod_factor *L = s->L;
        ordname = chol_ordering_name(L->ordering);
        lnz = s->cm.lnz;
        fl = s->cm.fl;
        double nd = (double)s->n;
        if (L->is_super) {
            /* values, integer pattern, super/pi/px, Perm and ColCount */
            bytes = (double)L->xsize * sizeof(double) + (double)L->ssize * sizeof(SuiteSparse_long) +
                    3.0 * ((double)L->nsuper + 1.0) * sizeof(SuiteSparse_long) +
                    2.0 * nd * sizeof(SuiteSparse_long);
        } else {
            /* values and row indices, then p, nz, next, prev, Perm, ColCount */
            bytes = lnz * (sizeof(double) + sizeof(SuiteSparse_long)) + 6.0 * (nd + 2.0) * sizeof(SuiteSparse_long);
        }
    }
    if (stats) {
        stats->factor_nnz = lnz;
        stats->flops = fl;
        stats->bytes = bytes;
        snprintf(stats->ordering, sizeof stats->ordering, "%s", ordname);
    }

done:
    if (st != SLA_OK) {
        chol_free_sym(s);
        return st;
    }
    *symp = s;
    return SLA_OK;
}

static sla_status chol_factor(sla_ctx *ctx, void *symv, const sla_matrix *A, sla_int ib, void **nump)
{
    if (nump) *nump = NULL;
    chol_sym *s = symv;
    if (!s || !A || !nump) return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod factor: NULL argument");
    /* sizes, the column indices (the analysis' copy is what CHOLMOD reads), ib */
    sla_status st = sla__check_factor_args(ctx, "cholmod", A, ib, s->n, s->nnz, NULL,
                                           (const sla_int *)s->colind);
    if (st) return st;

    double *xcopy = NULL;
    chol_num *f = sla__ctx_calloc(ctx, 1, sizeof *f, "cholmod numeric object");
    if (!f) return SLA_ERR_NOMEM;
    f->alloc = sla__ctx_alloc(ctx);
    f->n = s->n;
    f->ldlt = s->ldlt;
    f->rcond = -1.0;
    if (s->n == 0) goto done;

    if (!cholmod_l_start(&f->cm)) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "cholmod factor: cholmod_l_start failed");
        goto done;
    }
    f->cm_started = true;
    chol_setup(&f->cm, s->ldlt);

    /* CHOLMOD only reads A: double values are used in place. */
    double *x = sla__values_f64_view(ctx, A, ib, &xcopy, "cholmod values");
    if (!x) { st = SLA_ERR_NOMEM; goto done; }
    /* a NaN would otherwise pass for an indefinite matrix (or a zero pivot) */
    st = sla__check_finite_values(ctx, "cholmod", A->nnz, x, ib);
    if (st) goto done;

    f->L = cholmod_l_copy_factor(s->L, &f->cm);
    if (!f->L) { st = chol_fail(ctx, &f->cm, "factor (copy of the symbolic factor)"); goto done; }

    cholmod_sparse S;
    chol_view(&S, s, A, x);
    int ok = cholmod_l_factorize(&S, f->L, &f->cm);
    if (!ok || f->cm.status < 0) { st = chol_fail(ctx, &f->cm, "factor"); goto done; }
    if (f->cm.status == CHOLMOD_NOT_POSDEF || f->L->minor < f->L->n) {
        long long k = (long long)f->L->minor;
        /* minor is a column of the permuted matrix: name the original one */
        if (f->L->Perm && f->L->minor < f->L->n) k = (long long)((const SuiteSparse_long *)f->L->Perm)[k];
        if (s->ldlt)
            st = sla__error(ctx, SLA_ERR_SINGULAR, "ldlt: zero pivot at column %lld", k);
        else
            st = sla__error(ctx, SLA_ERR_NOT_SPD,
                            "cholesky: matrix not positive definite (pivot at column %lld)", k);
        goto done;
    }
    if (!s->ldlt && !f->L->is_super && !f->L->is_ll) {
        /* simplicial LDL^T standing in for Cholesky: SPD iff every D_jj > 0
         * (the first entry of column j), which an LL^T would have tested */
        const double *Lx = f->L->x;
        const SuiteSparse_long *Lp = f->L->p, *perm = f->L->Perm;
        for (size_t j = 0; j < f->L->n; j++)
            if (!(Lx[Lp[j]] > 0.0)) {
                long long k = perm ? (long long)perm[j] : (long long)j;
                st = sla__error(ctx, SLA_ERR_NOT_SPD,
                                "cholesky: matrix not positive definite (pivot %g at column %lld)",
                                Lx[Lp[j]], k);
                goto done;
            }
    }

    /* (min diag / max diag of L)^2 for LL^T, of D for LDL^T: cheap, O(n) */
    f->rcond = cholmod_l_rcond(f->L, &f->cm);

done:
    if (xcopy) sla__free(&f->alloc, xcopy);
    if (st != SLA_OK) {
        chol_free_num(f);
        return st;
    }
    *nump = f;
    return SLA_OK;
}

static sla_status chol_solve(sla_ctx *ctx, void *symv, void *numv, bool transpose, sla_int nrhs,
                             const double *b, sla_int ldb, double *x, sla_int ldx)
{
    (void)symv;
    (void)transpose; /* A is symmetric: A^-T b = A^-1 b */
    chol_num *f = numv;
    if (!f) return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod solve: NULL factor");
    if (nrhs < 0) return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod solve: nrhs = %lld < 0", (long long)nrhs);
    if (nrhs == 0 || f->n == 0) return SLA_OK;
    if (!b || !x) return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod solve: NULL vector");
    if (ldb < f->n || ldx < f->n)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod solve: leading dimensions %lld, %lld < n = %lld",
                          (long long)ldb, (long long)ldx, (long long)f->n);

    cholmod_dense B;
    memset(&B, 0, sizeof B);
    B.nrow = (size_t)f->n;
    B.ncol = (size_t)nrhs;
    B.d = (size_t)ldb;
    B.nzmax = (size_t)ldb * (size_t)nrhs;
    B.x = (void *)b;
    B.z = NULL;
    B.xtype = CHOLMOD_REAL;
    B.dtype = CHOLMOD_DOUBLE;

    if (!cholmod_l_solve2(CHOLMOD_A, f->L, &B, NULL, &f->X, NULL, &f->Y, &f->E, &f->cm) ||
        f->cm.status < 0 || !f->X)
        return chol_fail(ctx, &f->cm, "solve");

    const double *X = f->X->x;
    size_t dX = f->X->d;
    bool finite = true;
    for (sla_int j = 0; j < nrhs; j++) {
        const double *src = X + (size_t)j * dX;
        double *dst = x + (size_t)j * (size_t)ldx;
        memcpy(dst, src, (size_t)f->n * sizeof *dst);
        if (finite && !sla__all_finite(f->n, dst)) finite = false;
    }
    if (!finite)
        return sla__error(ctx, SLA_ERR_SINGULAR,
                          "%s solve: solution is not finite (singular or severely ill-conditioned matrix)",
                          f->ldlt ? "ldlt" : "cholesky");
    return SLA_OK;
}

static sla_status chol_logdet(sla_ctx *ctx, void *symv, void *numv, double *sign, double *logabsdet)
{
    (void)symv;
    chol_num *f = numv;
    if (!f || !sign || !logabsdet) return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod logdet: NULL argument");
    double sg = 1.0, la = 0.0;
    const cholmod_factor *L = f->L;
    if (f->n > 0 && L) {
        const double *Lx = L->x;
        if (L->is_super) {
            /* supernodal LL^T: each supernode is a dense column-major block of
             * nsrow rows; the diagonal of column j is at row j of the block */
            const SuiteSparse_long *super = L->super, *pi = L->pi, *px = L->px;
            double sum = 0.0;
            for (size_t sn = 0; sn < L->nsuper; sn++) {
                SuiteSparse_long ncols = super[sn + 1] - super[sn];
                SuiteSparse_long nsrow = pi[sn + 1] - pi[sn];
                const double *blk = Lx + px[sn];
                for (SuiteSparse_long j = 0; j < ncols; j++) sum += log(blk[j * nsrow + j]);
            }
            la = 2.0 * sum;
        } else {
            /* simplicial: the first entry of column j is L_jj (LL^T) or D_jj (LDL^T) */
            const SuiteSparse_long *Lp = L->p;
            double sum = 0.0;
            for (size_t j = 0; j < L->n; j++) {
                double d = Lx[Lp[j]];
                if (L->is_ll) {
                    sum += log(d);
                } else {
                    if (d == 0.0) { sg = 0.0; sum = -INFINITY; break; }
                    if (d < 0.0) sg = -sg;
                    sum += log(fabs(d));
                }
            }
            la = L->is_ll ? 2.0 * sum : sum;
        }
    }
    *sign = sg;
    *logabsdet = la;
    return SLA_OK;
}

/* Selected inversion (Takahashi): Z = A^-1 on the pattern of the factor.
 * With P A P^T = L D L^T (L unit lower triangular, simplicial), Z = P A^-1
 * P^T satisfies Z L = L^-T D^-1, an upper triangular matrix with diagonal
 * 1/D; column j of that identity below and on the diagonal gives, with S =
 * the rows of column j of L below j,
 *     Z[S, j] = -Z[S, S] L[S, j],    Z[j, j] = 1/D[j] - L[S, j]^T Z[S, j].
 * S is a clique of the filled graph, so every Z[S, S] needed lies on the
 * pattern of L (column min(i, k), row max(i, k)), already computed when
 * the columns are taken from the last to the first. zx holds Z's lower
 * triangle on L's pattern (same positions as L->x). */
static void chol_takahashi(const cholmod_factor *L, double *zx, SuiteSparse_long *map)
{
    const SuiteSparse_long *Lp = L->p, *Li = L->i, *Lnz = L->nz;
    const double *Lx = L->x;
    const SuiteSparse_long n = (SuiteSparse_long)L->n;
    for (SuiteSparse_long i = 0; i < n; i++) map[i] = -1;
    for (SuiteSparse_long j = n - 1; j >= 0; j--) {
        const SuiteSparse_long p0 = Lp[j] + 1, p1 = Lp[j] + Lnz[j];
        for (SuiteSparse_long p = p0; p < p1; p++) {
            map[Li[p]] = p;   /* where row Li[p] sits in column j */
            zx[p] = 0.0;      /* accumulates y = Z[S, S] L[S, j] */
        }
        for (SuiteSparse_long p = p0; p < p1; p++) {
            const SuiteSparse_long k = Li[p];
            const double lk = Lx[p];
            double yk = zx[Lp[k]] * lk; /* Z[k, k] L[k, j] */
            /* Z[i, k] for i in S below k: column k of Z's lower triangle */
            for (SuiteSparse_long q = Lp[k] + 1; q < Lp[k] + Lnz[k]; q++) {
                const SuiteSparse_long m = map[Li[q]];
                if (m < 0) continue;
                zx[m] += zx[q] * lk;   /* y[i] += Z[i, k] L[k, j] */
                yk += zx[q] * Lx[m];   /* y[k] += Z[k, i] L[i, j] */
            }
            zx[p] += yk;
        }
        double d = 1.0 / Lx[Lp[j]];
        for (SuiteSparse_long p = p0; p < p1; p++) {
            zx[p] = -zx[p];
            d -= Lx[p] * zx[p];
            map[Li[p]] = -1;
        }
        zx[Lp[j]] = d;
    }
}

/* Position of row i in column c of L (rows after the diagonal sorted), -1. */
static SuiteSparse_long chol_find(const cholmod_factor *L, SuiteSparse_long c, SuiteSparse_long i,
                                  bool sorted)
{
    const SuiteSparse_long *Lp = L->p, *Li = L->i, *Lnz = L->nz;
    SuiteSparse_long lo = Lp[c], hi = Lp[c] + Lnz[c] - 1;
    if (Li[lo] == i) return lo;
    lo++;
    if (!sorted) {
        for (SuiteSparse_long p = lo; p <= hi; p++)
            if (Li[p] == i) return p;
        return -1;
    }
    while (lo <= hi) {
        SuiteSparse_long mid = lo + (hi - lo) / 2;
        if (Li[mid] == i) return mid;
        if (Li[mid] < i) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

#ifdef SLA_HAVE_LAPACK
/* BLAS and LAPACK (Fortran interface, 32-bit integers, hidden string
 * lengths last), which CHOLMOD itself uses. */
void dtrsm_(const char *side, const char *uplo, const char *ta, const char *diag, const int *m, const int *n,
            const double *alpha, const double *a, const int *lda, double *b, const int *ldb, size_t, size_t,
            size_t, size_t);
void dsymm_(const char *side, const char *uplo, const int *m, const int *n, const double *alpha, const double *a,
            const int *lda, const double *b, const int *ldb, const double *beta, double *c, const int *ldc,
            size_t, size_t);
void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k, const double *alpha,
            const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c,
            const int *ldc, size_t, size_t);
void dpotri_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t);

/* Selected inversion on the supernodal LL^T factor, with dense blocks
 * (SelInv). For supernode s with columns J (its diagonal block L_D, c x c)
 * and off-diagonal rows R (the block L_B, m x c), Z = A^-1 (permuted)
 * satisfies Z L = L^-T (upper triangular), whose block column J gives
 *     Z[R, J] = -Z[R, R] Y,   Z[J, J] = (L_D L_D^T)^-1 - Z[R, J]^T Y,
 * with Y = L_B L_D^-1. R is a clique of the filled graph, so Z[R, R] lies
 * in the blocks of the supernodes after s, already computed when the
 * supernodes are taken from the last to the first; it is gathered into a
 * dense m x m array (lower triangle). zx holds Z in L's block layout.
 * Returns SLA_ERR_UNSUPPORTED (nothing recorded) when the factor's row
 * lists are not sorted, so the caller can take the simplicial path. */
static sla_status chol_selinv_super(sla_ctx *ctx, const cholmod_factor *L, double *zx, SuiteSparse_long *colsup)
{
    const SuiteSparse_long n = (SuiteSparse_long)L->n, nsuper = (SuiteSparse_long)L->nsuper;
    const SuiteSparse_long *super = L->super, *pi = L->pi, *px = L->px, *Ls = L->s;
    const double *Lx = L->x;
    SuiteSparse_long maxm = 0, maxmc = 0;
    for (SuiteSparse_long s = 0; s < nsuper; s++) {
        SuiteSparse_long c = super[s + 1] - super[s], r = pi[s + 1] - pi[s];
        if (r > INT32_MAX / 2 || r < c) return SLA_ERR_UNSUPPORTED;
        for (SuiteSparse_long i = 0; i < c; i++)
            if (Ls[pi[s] + i] != super[s] + i) return SLA_ERR_UNSUPPORTED;
        for (SuiteSparse_long i = pi[s] + c + 1; i < pi[s + 1]; i++)
            if (Ls[i] <= Ls[i - 1]) return SLA_ERR_UNSUPPORTED;
        if (r - c > maxm) maxm = r - c;
        if ((r - c) * c > maxmc) maxmc = (r - c) * c;
        for (SuiteSparse_long j = super[s]; j < super[s + 1]; j++) colsup[j] = s;
    }
    (void)n;
    sla_allocator a = sla__ctx_alloc(ctx);
    double *Y = sla__ctx_malloc(ctx, (size_t)maxmc + 1, sizeof *Y, "selected inverse block");
    double *ZRR = Y ? sla__ctx_malloc(ctx, (size_t)(maxm * maxm) + 1, sizeof *ZRR, "selected inverse block") : NULL;
    if (!ZRR) {
        sla__free(&a, Y);
        return SLA_ERR_NOMEM;
    }
    sla_status st = SLA_OK;
    const double one = 1.0, mone = -1.0, zero = 0.0;
    for (SuiteSparse_long s = nsuper - 1; s >= 0 && !st; s--) {
        const int c = (int)(super[s + 1] - super[s]), r = (int)(pi[s + 1] - pi[s]), m = r - c;
        const double *blk = Lx + px[s];
        double *zb = zx + px[s];
        const SuiteSparse_long *rows = Ls + pi[s];
        /* Z[J, J] = (L_D L_D^T)^-1 (lower triangle; the upper one zeroed) */
        for (int j = 0; j < c; j++)
            for (int i = 0; i < c; i++) zb[(size_t)j * r + i] = i >= j ? blk[(size_t)j * r + i] : 0.0;
        int info = 0;
        dpotri_("L", &c, zb, &r, &info, 1);
        if (info != 0) {
            st = sla__error(ctx, SLA_ERR_SINGULAR, "selected inverse: zero pivot in supernode %lld",
                            (long long)s);
            break;
        }
        if (m == 0) continue;
        /* Y = L_B L_D^-1 */
        for (int j = 0; j < c; j++)
            memcpy(Y + (size_t)j * m, blk + (size_t)j * r + c, (size_t)m * sizeof *Y);
        dtrsm_("R", "L", "N", "N", &m, &c, &one, blk, &r, Y, &m, 1, 1, 1, 1);
        /* gather the lower triangle of Z[R, R]: column a lies in supernode t */
        for (int aa = 0; aa < m; aa++) {
            const SuiteSparse_long ra = rows[c + aa], t = colsup[ra];
            const SuiteSparse_long tr = pi[t + 1] - pi[t], *trow = Ls + pi[t];
            const double *zt = zx + px[t] + (size_t)(ra - super[t]) * (size_t)tr;
            SuiteSparse_long q = ra - super[t];
            for (int b = aa; b < m; b++) {
                const SuiteSparse_long rb = rows[c + b];
                while (q < tr && trow[q] != rb) q++;
                if (q == tr) {
                    st = sla__error(ctx, SLA_ERR_ARGUMENT,
                                    "selected inverse: row %lld missing from supernode %lld", (long long)rb,
                                    (long long)t);
                    break;
                }
                ZRR[(size_t)aa * m + b] = zt[q];
            }
            if (st) break;
        }
        if (st) break;
        /* Z[R, J] = -Z[R, R] Y;  Z[J, J] -= Z[R, J]^T Y */
        dsymm_("L", "L", &m, &c, &mone, ZRR, &m, Y, &m, &zero, zb + c, &r, 1, 1);
        dgemm_("T", "N", &c, &c, &m, &mone, zb + c, &r, Y, &m, &one, zb, &r, 1, 1);
    }
    sla__free(&a, Y);
    sla__free(&a, ZRR);
    return st;
}
#endif

/* The selinv capability (direct.h): z[k] = (A^-1)[col_k, row_k] for every
 * stored entry k of A, by the Takahashi recurrences on the pattern of a
 * simplicial LDL^T copy of the factor (supernodal blocks with LAPACK). */
static sla_status chol_selinv(sla_ctx *ctx, void *symv, void *numv, const sla_matrix *A, double *z)
{
    chol_sym *s = symv;
    chol_num *f = numv;
    if (!s || !f || !A || !z) return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod selinv: NULL argument");
    if (A->nrows != s->n || A->nnz != s->nnz)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod selinv: matrix does not match the factor");
    if (s->n == 0) return SLA_OK;
    sla_status st = SLA_OK;
    sla_allocator a = sla__ctx_alloc(ctx);
    double *zx = NULL;
    SuiteSparse_long *map = NULL;
#ifdef SLA_HAVE_LAPACK
    if (f->L->is_super && f->L->is_ll) {
        const cholmod_factor *S = f->L;
        const SuiteSparse_long n = s->n;
        zx = sla__ctx_malloc(ctx, S->xsize, sizeof *zx, "selected inverse");
        SuiteSparse_long *colsup = zx ? sla__ctx_malloc(ctx, 2 * (size_t)n, sizeof *colsup,
                                                        "selected inverse work space") : NULL;
        if (!colsup) {
            sla__free(&a, zx);
            return SLA_ERR_NOMEM;
        }
        st = chol_selinv_super(ctx, S, zx, colsup);
        if (st == SLA_OK) {
            /* entry k = (i, j) of A: (A^-1)[j, i] = Z[pinv j, pinv i], in the
             * block column of min, at the position of max in its row list */
            SuiteSparse_long *pinv = colsup + n;
            const SuiteSparse_long *Perm = S->Perm, *super = S->super, *pi = S->pi, *px = S->px, *Ls = S->s;
            for (SuiteSparse_long i = 0; i < n; i++) pinv[Perm ? Perm[i] : i] = i;
            for (sla_int i = 0; i < n && !st; i++)
                for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
                    SuiteSparse_long p1 = pinv[i], p2 = pinv[A->colind[k]];
                    SuiteSparse_long col = p1 < p2 ? p1 : p2, row = p1 < p2 ? p2 : p1, t = colsup[col];
                    SuiteSparse_long lo = pi[t], hi = pi[t + 1] - 1, tr = pi[t + 1] - pi[t];
                    while (lo < hi) { /* the row lists are sorted (checked) */
                        SuiteSparse_long mid = lo + (hi - lo) / 2;
                        if (Ls[mid] < row) lo = mid + 1;
                        else hi = mid;
                    }
                    if (Ls[lo] != row) {
                        st = sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod selinv: entry (%lld, %lld) is not on "
                                        "the factor's pattern", (long long)i, (long long)A->colind[k]);
                        break;
                    }
                    z[k] = zx[px[t] + (col - super[t]) * tr + (lo - pi[t])];
                }
        }
        sla__free(&a, colsup);
        sla__free(&a, zx);
        zx = NULL;
        if (st != SLA_ERR_UNSUPPORTED) return st;
        st = SLA_OK; /* unsorted row lists: the simplicial path below */
    }
#endif
    /* a simplicial LDL^T copy with packed, monotonic columns */
    cholmod_factor *L = cholmod_l_copy_factor(f->L, &f->cm);
    if (!L) return chol_fail(ctx, &f->cm, "selinv (copy of the factor)");
    if (!cholmod_l_change_factor(CHOLMOD_REAL, 0, 0, 1, 1, L, &f->cm) || f->cm.status < 0) {
        st = chol_fail(ctx, &f->cm, "selinv (conversion to simplicial LDL^T)");
        goto done;
    }
    const SuiteSparse_long n = s->n;
    const SuiteSparse_long *Lp = L->p, *Li = L->i, *Lnz = L->nz, *Perm = L->Perm;
    const double *Lx = L->x;
    for (SuiteSparse_long j = 0; j < n; j++) {
        if (Lnz[j] < 1 || Li[Lp[j]] != j) {
            st = sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod selinv: column %lld of the factor does not "
                            "start with its diagonal", (long long)j);
            goto done;
        }
        if (Lx[Lp[j]] == 0.0 || !isfinite(Lx[Lp[j]])) {
            long long k = Perm ? (long long)Perm[j] : (long long)j;
            st = sla__error(ctx, SLA_ERR_SINGULAR,
                            "selected inverse: zero pivot at column %lld (the matrix is singular)", k);
            goto done;
        }
    }
    bool sorted = true;
    for (SuiteSparse_long j = 0; j < n && sorted; j++)
        for (SuiteSparse_long p = Lp[j] + 2; p < Lp[j] + Lnz[j]; p++)
            if (Li[p] <= Li[p - 1]) { sorted = false; break; }

    zx = sla__ctx_malloc(ctx, L->nzmax, sizeof *zx, "selected inverse");
    map = zx ? sla__ctx_malloc(ctx, (size_t)n, sizeof *map, "selected inverse work space") : NULL;
    if (!map) { st = SLA_ERR_NOMEM; goto done; }
    /* map doubles as the inverse permutation once the recurrence is done */
    chol_takahashi(L, zx, map);
    for (SuiteSparse_long i = 0; i < n; i++) map[Perm ? Perm[i] : i] = i;
    /* entry k = (i, j) of A: (A^-1)[j, i] = Z[pinv j, pinv i], stored in
     * column min, row max */
    for (sla_int i = 0; i < n; i++) {
        for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            SuiteSparse_long pi = map[i], pj = map[A->colind[k]];
            SuiteSparse_long c = pi < pj ? pi : pj, r = pi < pj ? pj : pi;
            SuiteSparse_long p = chol_find(L, c, r, sorted);
            if (p < 0) {
                st = sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod selinv: entry (%lld, %lld) is not on "
                                "the factor's pattern", (long long)i, (long long)A->colind[k]);
                goto done;
            }
            z[k] = zx[p];
        }
    }

done:
    sla__free(&a, zx);
    sla__free(&a, map);
    cholmod_l_free_factor(&L, &f->cm);
    return st;
}

/* The make_simplicial capability (direct.h): a supernodal numeric factor
 * becomes a simplicial LL^T one in place. */
static sla_status chol_make_simplicial(sla_ctx *ctx, void *numv)
{
    chol_num *f = numv;
    if (!f) return sla__error(ctx, SLA_ERR_ARGUMENT, "cholmod: NULL factor");
    if (!f->L || !f->L->is_super) return SLA_OK;
    /* keep LL^T (no division by D in the solves) */
    if (!cholmod_l_change_factor(CHOLMOD_REAL, 1, 0, 1, 1, f->L, &f->cm) || f->cm.status < 0)
        return chol_fail(ctx, &f->cm, "conversion to a simplicial factor");
    return SLA_OK;
}

static double chol_rcond(const void *num) { return num ? ((const chol_num *)num)->rcond : -1.0; }

static const sla__direct_ops chol_ops = {
    .name = "cholmod",
    .analyze = chol_analyze,
    .factor = chol_factor,
    .solve = chol_solve,
    .logdet = chol_logdet,
    .free_num = chol_free_num,
    .free_sym = chol_free_sym,
    .rcond = chol_rcond,
    .selinv = chol_selinv,
    .make_simplicial = chol_make_simplicial,
    .one_triangle = true,
};

const sla__direct_ops *sla__backend_cholmod(void) { return &chol_ops; }

double sla__fill_estimate(const sla_matrix *A, sla_ordering ordering)
{
    sla_int n = A->nrows;
    if (n <= 0 || A->ncols != n) return 0.0;
    cholmod_common cm;
    if (!cholmod_l_start(&cm)) return 0.0;
    chol_setup(&cm, false);
    cm.supernodal = CHOLMOD_SIMPLICIAL; /* column counts only */
    cm.nmethods = 1;
    cm.method[0].ordering = ordering == SLA_ORDER_NATURAL ? CHOLMOD_NATURAL
                            : ordering == SLA_ORDER_METIS ? CHOLMOD_METIS
                                                          : CHOLMOD_AMD;
    cm.postorder = ordering != SLA_ORDER_NATURAL;
    double lnz = 0.0;
    /* the pattern of A (as the CSC of A^T; CHOLMOD's own memory, so that an
     * estimate never fails a call), then of A + A^T */
    cholmod_sparse *M = cholmod_l_allocate_sparse((size_t)n, (size_t)n, (size_t)A->nnz, 1, 1, 0,
                                                  CHOLMOD_PATTERN, &cm);
    cholmod_sparse *T = NULL, *S = NULL;
    cholmod_factor *L = NULL;
    if (M) {
        SuiteSparse_long *p = M->p, *i = M->i;
        for (sla_int k = 0; k <= n; k++) p[k] = A->rowptr[k];
        for (sla_int k = 0; k < A->nnz; k++) i[k] = A->colind[k];
        T = cholmod_l_transpose(M, 0, &cm);
    }
    if (T) S = cholmod_l_add(M, T, NULL, NULL, 0, 1, &cm);
    if (S) {
        S->stype = 1;
        L = cholmod_l_analyze(S, &cm);
        if (L && cm.status >= 0) lnz = cm.lnz;
    }
    cholmod_l_free_factor(&L, &cm);
    cholmod_l_free_sparse(&S, &cm);
    cholmod_l_free_sparse(&T, &cm);
    cholmod_l_free_sparse(&M, &cm);
    cholmod_l_finish(&cm);
    return lnz > 0.0 ? 2.0 * lnz - (double)n : 0.0;
}

#else /* !SLA_HAVE_SUITESPARSE */

const sla__direct_ops *sla__backend_cholmod(void) { return NULL; }
double sla__fill_estimate(const sla_matrix *A, sla_ordering ordering)
{
    (void)A;
    (void)ordering;
    return 0.0;
}

#endif
