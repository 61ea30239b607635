/* MUMPS complex backend: multifrontal sparse LDL^T / LU in complex128 from
 * Debian's sequential MUMPS (zmumps_c, libzmumps_seq, whose MPI calls go
 * to the MPI stubs built into it: comm_fortran = USE_COMM_WORLD).
 *
 * A value array that is exactly complex symmetric (A = A^T, pattern and
 * values) is factored as A = L D L^T (SYM = 2: general symmetric, with
 * 1x1 and 2x2 pivots), from its lower triangle: about half the work of an
 * LU. Any other value array (Hermitian ones included: MUMPS's symmetric
 * mode is A = A^T, not A = A^H) is factored as A = L U (SYM = 0). The
 * choice is made per value array in factor, so each numeric object owns
 * one MUMPS instance (analysis + factorization, JOB = 1 then 2); the
 * symbolic object keeps the 1-based coordinate pattern and the map from
 * each entry to its transposed partner.
 *
 * Ordering (ICNTL(7)): auto -> AMF (2; measured on 2-D Helmholtz, complex
 * symmetric, LDL^T, one BLAS thread, CPU seconds on a loaded machine,
 * 2026-12-04: at n = 1e6 analysis + factorization 0.43 + 3.26 s, 1.54e10
 * flops, 3.70e7 factor entries, against AMD (0) 0.43 + 4.75 s, 1.80e10,
 * 4.64e7; PORD 2.65 + 2.82 s, 1.06e10; SCOTCH 4.05 + 3.98 s, 2.07e10;
 * sla's METIS_NodeND given as PERM_IN 4.53 + 3.45 s, 1.34e10; QAMD = AMD.
 * 3-D Helmholtz 50^3: AMF 0.16 + 11.3 s, 1.25e11 flops, against AMD
 * 0.08 + 17.2 s, 2.07e11; PORD 0.78 + 8.75 s, 9.0e10), amd -> AMD (0),
 * metis -> METIS_NodeND's permutation from sla (which links METIS) as
 * PERM_IN (1) when METIS is in the build (Debian's MUMPS has only SCOTCH
 * and PORD), else 5 (MUMPS falls back to its own choice), natural -> the
 * identity as PERM_IN (1). The ordering the analysis used (INFOG(7)) is
 * reported in sla_solve_info.ordering. Solves: A x = b (ICNTL(9) = 1); A^T
 * x = b (ICNTL(9) = 0; the same for SYM = 2); A^H x = b as A^T conj(x) =
 * conj(b). No iterative refinement inside MUMPS (ICNTL(10) = 0: the
 * solver object refines itself). det A from ICNTL(33) = 1: (RINFOG(12) +
 * i RINFOG(13)) 2^INFOG(34). Null pivot detection (ICNTL(24) = 1) turns
 * pivots at the level of rounding noise into SLA_ERR_SINGULAR, as the
 * other backends' pivot checks do. MUMPS prints nothing (ICNTL(1..4)).
 *
 * MUMPS allocates its factors itself (Fortran ALLOCATE), outside sla's
 * allocator; a workspace estimate that proves too small (INFO(1) = -9,
 * -8, -14, -15, -17, -20) is retried with ICNTL(14) doubled, three times.
 *
 * BLAS threads: the factorization with at most the context's, each solve
 * with one (sla__mumps_blas_limit in mumps.h: measured).
 *
 * Threads: every call into MUMPS holds one process-wide mutex, so
 * instances used from different threads are safe but serialized (MUMPS's
 * own notes call separate instances thread-safe; the sequential MPI stubs
 * keep Fortran COMMON state, so sla does not rely on it). A solve changes
 * the instance's RHS fields: solves with one numeric object are
 * serialized by the same mutex.
 *
 * Linking: libzmumps_seq exports stub MPI_Init, MPI_Comm_rank,
 * MPI_Finalize and MPI_Wtime with OpenMPI's names; CMakeLists.txt lists
 * MUMPS after MPI so that libmpi's come first in the lookup order and the
 * distributed layer keeps the real ones (MUMPS itself calls only the
 * Fortran mpi_*_ stubs, which OpenMPI's C library does not define).
 */
#include "mumps.h"
#include "zbackend.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include <zmumps_c.h>

#ifdef SLA_HAVE_METIS
#include <metis.h>
#endif


_Static_assert(sizeof(ZMUMPS_COMPLEX) == sizeof(sla__z), "MUMPS complex must be two doubles");

pthread_mutex_t sla__mumps_lock = PTHREAD_MUTEX_INITIALIZER;

extern void openblas_set_num_threads(int n) __attribute__((weak));
extern int openblas_get_num_threads(void) __attribute__((weak));

int sla__mumps_blas_limit(int nt)
{
    if (!openblas_set_num_threads || !openblas_get_num_threads || nt < 1) return 0;
    int old = openblas_get_num_threads();
    if (old <= nt) return 0;
    openblas_set_num_threads(nt);
    return old;
}

void sla__mumps_blas_restore(int old)
{
    if (old > 0 && openblas_set_num_threads) openblas_set_num_threads(old);
}

/* One MUMPS phase under the lock, with at most blas_threads BLAS threads
 * (0: as they are). */
static void zmumps_call_nt(ZMUMPS_STRUC_C *id, int job, int blas_threads)
{
    pthread_mutex_lock(&sla__mumps_lock);
    int old = blas_threads > 0 ? sla__mumps_blas_limit(blas_threads) : 0;
    id->job = job;
    zmumps_c(id);
    sla__mumps_blas_restore(old);
    pthread_mutex_unlock(&sla__mumps_lock);
}

static void zmumps_call(ZMUMPS_STRUC_C *id, int job) { zmumps_call_nt(id, job, 0); }

typedef sla__mumps_sym mumz_sym;

typedef struct mumz_num {
    sla_allocator alloc;
    ZMUMPS_STRUC_C id;
    bool live;         /* JOB = -1 done: JOB = -2 owed */
    int sym;           /* 0 (LU) or 2 (LDL^T) */
    sla_int n;
    sla__z detm;       /* det A = detm 2^dete */
    int dete;
    sla__direct_stats stats; /* the ordering the analysis used (INFOG(7)), factor entries
                                (INFOG(29)), flops (RINFOG(3)), bytes (INFOG(22)) */
} mumz_num;

void sla__mumps_free_sym(void *p)
{
    mumz_sym *S = p;
    if (!S) return;
    sla_allocator a = S->alloc;
    sla__free(&a, S->rowptr);
    sla__free(&a, S->colind);
    sla__free(&a, S->irn);
    sla__free(&a, S->jcn);
    sla__free(&a, S->lirn);
    sla__free(&a, S->ljcn);
    sla__free(&a, S->ltk);
    sla__free(&a, S->tpos);
    sla__free(&a, S->perm_in);
    sla__free(&a, S);
}

static void mumz_free_num(void *p)
{
    mumz_num *N = p;
    if (!N) return;
    sla_allocator a = N->alloc;
    if (N->live) zmumps_call(&N->id, -2);
    sla__free(&a, N);
}

static sla_status mumz_error(sla_ctx *ctx, const char *phase, const ZMUMPS_STRUC_C *id)
{
    return sla__mumps_error(ctx, phase, id->infog);
}

sla_status sla__mumps_error(sla_ctx *ctx, const char *phase, const MUMPS_INT *infog)
{
    int e = infog[0], e2 = infog[1];
    switch (e) {
    case -10:
        return sla__error(ctx, SLA_ERR_SINGULAR, "mumps: matrix is numerically singular in the %s (INFOG(1) = -10)",
                          phase);
    case -6:
        return sla__error(ctx, SLA_ERR_SINGULAR,
                          "mumps: matrix is structurally singular in the %s (INFOG(1) = -6, structural rank %d)",
                          phase, e2);
    case -5:
    case -7:
    case -13:
    case -19:
        return sla__error(ctx, SLA_ERR_NOMEM, "mumps: out of memory in the %s (INFOG(1) = %d, INFOG(2) = %d)",
                          phase, e, e2);
    case -16:
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "mumps: n = %d out of range (INFOG(1) = -16)", e2);
    default:
        return sla__error(ctx, e == -8 || e == -9 || e == -14 || e == -15 || e == -17 || e == -20
                                   ? SLA_ERR_NOMEM : SLA_ERR_ARGUMENT,
                          "mumps: %s failed with INFOG(1) = %d, INFOG(2) = %d", phase, e, e2);
    }
}

/* Entry (i, j) in row i of A's pattern: its index, or -1. */
static int64_t find_entry(const sla_matrix *A, sla_int i, sla_int j)
{
    sla_int lo = A->rowptr[i], hi = A->rowptr[i + 1];
    while (lo < hi) {
        sla_int mid = lo + (hi - lo) / 2;
        if (A->colind[mid] < j) lo = mid + 1;
        else hi = mid;
    }
    return lo < A->rowptr[i + 1] && A->colind[lo] == j ? (int64_t)lo : -1;
}

#ifdef SLA_HAVE_METIS
/* perm[i] = METIS_NodeND's position of variable i, 1-based, on the graph
 * of A + A^T without the diagonal (seed fixed: deterministic). */
static sla_status metis_perm(sla_ctx *ctx, const sla_matrix *A, MUMPS_INT *perm)
{
    const sla_int n = A->nrows;
    sla_status st = SLA_OK;
    if (A->nnz > (sla_int)(INT32_MAX / 2) && sizeof(idx_t) == 4)
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "mumps: the graph is too large for 32-bit METIS");
    sla_allocator al = sla__ctx_alloc(ctx);
    idx_t *xadj = sla__ctx_calloc(ctx, (size_t)n + 1, sizeof *xadj, "metis ordering graph");
    idx_t *adj = xadj ? sla__ctx_malloc(ctx, 2 * (size_t)A->nnz + 1, sizeof *adj, "metis ordering graph") : NULL;
    idx_t *mark = adj ? sla__ctx_malloc(ctx, (size_t)n, 2 * sizeof *mark, "metis ordering graph") : NULL;
    if (!mark) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    idx_t *iperm = mark + n, *fill = mark;
    /* degrees of A + A^T (duplicates counted; removed when filling) */
    for (sla_int i = 0; i < n; i++)
        for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] != i) xadj[i + 1]++, xadj[A->colind[k] + 1]++;
    for (sla_int i = 0; i < n; i++) xadj[i + 1] += xadj[i];
    for (sla_int i = 0; i < n; i++) fill[i] = xadj[i];
    for (sla_int i = 0; i < n; i++)
        for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            sla_int j = A->colind[k];
            if (j != i) adj[fill[i]++] = (idx_t)j, adj[fill[j]++] = (idx_t)i;
        }
    /* compact: each neighbour once (mark[j] = last row that listed j) */
    for (sla_int i = 0; i < n; i++) mark[i] = -1;
    idx_t q = 0;
    for (sla_int i = 0; i < n; i++) {
        idx_t lo = xadj[i], hi = xadj[i + 1];
        xadj[i] = q;
        for (idx_t p = lo; p < hi; p++)
            if (mark[adj[p]] != (idx_t)i) mark[adj[p]] = (idx_t)i, adj[q++] = adj[p];
    }
    xadj[n] = q;
    if (q == 0) { /* no edges: any order is as good */
        for (sla_int i = 0; i < n; i++) perm[i] = (MUMPS_INT)(i + 1);
        goto done;
    }
    idx_t nv = (idx_t)n, opt[METIS_NOPTIONS];
    METIS_SetDefaultOptions(opt);
    opt[METIS_OPTION_SEED] = 1;
    idx_t *mperm = mark; /* mark is free again */
    int rc = METIS_NodeND(&nv, xadj, adj, NULL, opt, mperm, iperm);
    if (rc != METIS_OK) {
        st = sla__error(ctx, rc == METIS_ERROR_MEMORY ? SLA_ERR_NOMEM : SLA_ERR_ARGUMENT,
                        "mumps: METIS_NodeND failed (%d)", rc);
        goto done;
    }
    for (sla_int i = 0; i < n; i++) perm[i] = (MUMPS_INT)iperm[i] + 1; /* iperm[old] = new */
done:
    sla__free(&al, xadj);
    sla__free(&al, adj);
    sla__free(&al, mark);
    return st;
}
#endif

/* PERM_IN for ICNTL(7) = 1: METIS_NodeND's order (ordering metis) or the
 * identity (natural). */
static sla_status perm_in(sla_ctx *ctx, const sla_matrix *A, sla__mumps_sym *S)
{
    if (S->ordering != 1) return SLA_OK;
    S->perm_in = sla__ctx_malloc(ctx, (size_t)S->n, sizeof *S->perm_in, "mumps ordering");
    if (!S->perm_in) return SLA_ERR_NOMEM;
#ifdef SLA_HAVE_METIS
    if (S->perm_metis) return metis_perm(ctx, A, S->perm_in);
#endif
    for (sla_int i = 0; i < S->n; i++) S->perm_in[i] = (MUMPS_INT)(i + 1);
    return SLA_OK;
}

sla_status sla__mumps_check_memory(sla_ctx *ctx, const sla__mumps_sym *S, const MUMPS_INT *infog)
{
    double need = 1e6 * (double)infog[17 - 1]; /* MUMPS's megabytes are 10^6 bytes */
    if (!(S->memory_limit > 0.0) || need <= S->memory_limit) return SLA_OK;
    return sla__error(ctx, SLA_ERR_TOO_LARGE,
                      "mumps: the factorization needs about %.0f MB by the analysis's estimate (INFOG(17)), "
                      "over the memory limit of %.0f MB", need / 1e6, S->memory_limit / 1e6);
}

const char *sla__mumps_ordering_name(const sla__mumps_sym *S, int infog7)
{
    switch (infog7) {
    case 0: return "amd";
    case 1: return S && S->perm_metis ? "metis" : "natural";
    case 2: return "amf";
    case 3: return "scotch";
    case 4: return "pord";
    case 5: return "metis";
    case 6: return "qamd";
    default: return "unknown";
    }
}

sla_status sla__mumps_analyze(sla_ctx *ctx, const sla_matrix *A, const sla__direct_opts *o, void **sym)
{
    sla_status st = SLA_OK;
    if (!sym) return sla__error(ctx, SLA_ERR_ARGUMENT, "mumps analyze: sym is NULL");
    *sym = NULL;
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "mumps analyze: matrix is NULL");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "mumps analyze: matrix is %lld x %lld, not square",
                          (long long)A->nrows, (long long)A->ncols);
    if (A->nrows >= INT_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "mumps: n = %lld exceeds MUMPS's 32-bit order",
                          (long long)A->nrows);
    mumz_sym *S = sla__ctx_calloc(ctx, 1, sizeof *S, "mumps symbolic object");
    if (!S) return SLA_ERR_NOMEM;
    S->alloc = sla__ctx_alloc(ctx);
    S->n = A->nrows;
    S->nnz = A->nnz;
    S->memory_limit = o ? o->memory_limit : 0.0;
    S->nthreads = o && o->nthreads > 0 ? o->nthreads : 0;
    switch (o ? o->ordering : SLA_ORDER_AUTO) {
    case SLA_ORDER_AUTO: S->ordering = 2; break; /* AMF: measured above */
    case SLA_ORDER_AMD: S->ordering = 0; break;
#ifdef SLA_HAVE_METIS
    case SLA_ORDER_METIS: S->ordering = 1, S->perm_metis = true; break; /* sla's METIS_NodeND */
#else
    case SLA_ORDER_METIS: S->ordering = 5; break; /* MUMPS's METIS where it has one */
#endif
    case SLA_ORDER_NATURAL: S->ordering = 1; break;
    default:
        st = sla__error(ctx, SLA_ERR_ARGUMENT, "mumps: unknown ordering %d", (int)o->ordering);
        goto done;
    }
    const size_t n = (size_t)S->n, nnz = (size_t)S->nnz;
    S->rowptr = sla__ctx_malloc(ctx, n + 1, sizeof *S->rowptr, "mumps pattern");
    S->colind = S->rowptr ? sla__ctx_malloc(ctx, nnz + 1, sizeof *S->colind, "mumps pattern") : NULL;
    S->irn = S->colind ? sla__ctx_malloc(ctx, nnz + 1, sizeof *S->irn, "mumps pattern") : NULL;
    S->jcn = S->irn ? sla__ctx_malloc(ctx, nnz + 1, sizeof *S->jcn, "mumps pattern") : NULL;
    if (!S->jcn) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    memcpy(S->rowptr, A->rowptr, (n + 1) * sizeof *S->rowptr);
    for (size_t k = 0; k < nnz; k++) S->colind[k] = A->colind[k];
    for (sla_int i = 0; i < S->n; i++)
        for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            S->irn[k] = (MUMPS_INT)(i + 1);
            S->jcn[k] = (MUMPS_INT)(A->colind[k] + 1);
        }
    if (S->n == 0) goto done;
    st = sla__structural_check(ctx, "mumps", A);
    if (st) goto done;
    /* the transposed partners: a symmetric pattern makes LDL^T possible */
    S->tpos = sla__ctx_malloc(ctx, nnz, sizeof *S->tpos, "mumps pattern");
    if (!S->tpos) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    bool ssym = true;
    for (sla_int i = 0; i < S->n && ssym; i++)
        for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1] && ssym; k++) {
            S->tpos[k] = find_entry(A, A->colind[k], i);
            ssym = S->tpos[k] >= 0;
            if (A->colind[k] <= i) S->nlow++;
        }
    if (!ssym) {
        sla__free(&S->alloc, S->tpos);
        S->tpos = NULL;
        st = perm_in(ctx, A, S);
        goto done;
    }
    if ((st = perm_in(ctx, A, S))) goto done;
    S->lirn = sla__ctx_malloc(ctx, (size_t)S->nlow, sizeof *S->lirn, "mumps lower triangle");
    S->ljcn = S->lirn ? sla__ctx_malloc(ctx, (size_t)S->nlow, sizeof *S->ljcn, "mumps lower triangle") : NULL;
    S->ltk = S->ljcn ? sla__ctx_malloc(ctx, (size_t)S->nlow, sizeof *S->ltk, "mumps lower triangle") : NULL;
    if (!S->ltk) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    int64_t q = 0;
    for (sla_int i = 0; i < S->n; i++)
        for (sla_int k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] <= i) {
                S->lirn[q] = S->irn[k];
                S->ljcn[q] = S->jcn[k];
                S->ltk[q++] = k;
            }
done:
    if (st) sla__mumps_free_sym(S);
    else *sym = S;
    return st;
}

void sla__mumps_controls(MUMPS_INT *icntl, int ordering)
{
    icntl[ICNTL_(1)] = -1; /* error messages */
    icntl[ICNTL_(2)] = -1; /* diagnostics, warnings */
    icntl[ICNTL_(3)] = -1; /* global information */
    icntl[ICNTL_(4)] = 0;  /* print level */
    icntl[ICNTL_(7)] = ordering;
    icntl[ICNTL_(10)] = 0; /* no iterative refinement */
    icntl[ICNTL_(11)] = 0; /* no error analysis */
    icntl[ICNTL_(24)] = 1; /* null pivot detection: refused after the factorization */
    icntl[ICNTL_(33)] = 1; /* the determinant */
}

/* JOB = -1 for a new instance of symmetry sym, silent, with sla's controls. */
static sla_status mumz_init(sla_ctx *ctx, mumz_num *N, const mumz_sym *S, int sym)
{
    ZMUMPS_STRUC_C *id = &N->id;
    memset(id, 0, sizeof *id);
    id->par = 1;
    id->sym = sym;
    id->comm_fortran = MUMPS_USE_COMM_WORLD;
    zmumps_call(id, -1);
    if (id->INFOG(1) < 0) return mumz_error(ctx, "initialization", id);
    N->live = true;
    N->sym = sym;
    sla__mumps_controls(id->icntl, S->ordering);
    return SLA_OK;
}

static sla_status mumz_factor(sla_ctx *ctx, void *sym, const sla_matrix *A, sla_int ib, void **num)
{
    mumz_sym *S = sym;
    if (!num) return sla__error(ctx, SLA_ERR_ARGUMENT, "mumps factor: num is NULL");
    *num = NULL;
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "mumps factor: symbolic object is NULL");
    sla_status st = sla__check_factor_args(ctx, "mumps", A, ib, S->n, S->nnz, S->rowptr, S->colind);
    if (st) return st;
    mumz_num *N = sla__ctx_calloc(ctx, 1, sizeof *N, "mumps numeric object");
    if (!N) return SLA_ERR_NOMEM;
    N->alloc = sla__ctx_alloc(ctx);
    N->n = S->n;
    N->detm = 1.0;
    sla__z *ax = NULL, *al = NULL;
    if (S->n == 0) goto done;
    ax = sla__zvalues(ctx, A, ib, false, "mumps values");
    if (!ax) {
        st = SLA_ERR_NOMEM;
        goto done;
    }
    st = sla__zcheck_finite_values(ctx, "mumps", S->nnz, ax, ib);
    if (st) goto done;
    bool csym = S->tpos != NULL;
    for (sla_int k = 0; k < S->nnz && csym; k++) csym = ax[k] == ax[S->tpos[k]];
    if ((st = mumz_init(ctx, N, S, csym ? 2 : 0))) goto done;
    ZMUMPS_STRUC_C *id = &N->id;
    id->n = (MUMPS_INT)S->n;
    if (csym) {
        al = sla__ctx_malloc(ctx, (size_t)S->nlow, sizeof *al, "mumps lower triangle values");
        if (!al) {
            st = SLA_ERR_NOMEM;
            goto done;
        }
        for (int64_t q = 0; q < S->nlow; q++) al[q] = ax[S->ltk[q]];
        id->nnz = S->nlow;
        id->irn = S->lirn;
        id->jcn = S->ljcn;
        id->a = (ZMUMPS_COMPLEX *)al;
    } else {
        id->nnz = S->nnz;
        id->irn = S->irn;
        id->jcn = S->jcn;
        id->a = (ZMUMPS_COMPLEX *)ax;
    }
    id->perm_in = S->perm_in;
    zmumps_call(id, 1);
    id->perm_in = NULL;
    if (id->INFOG(1) < 0) {
        st = mumz_error(ctx, "analysis", id);
        goto done;
    }
    snprintf(N->stats.ordering, sizeof N->stats.ordering, "%s", sla__mumps_ordering_name(S, id->INFOG(7)));
    if ((st = sla__mumps_check_memory(ctx, S, id->infog))) goto done;
    for (int tries = 0;; tries++) {
        zmumps_call_nt(id, 2, S->nthreads);
        int e = id->INFOG(1);
        bool small = sla__mumps_workspace_short(e);
        if (!small || tries == 3) break;
        id->ICNTL(14) = id->ICNTL(14) > 0 ? 2 * id->ICNTL(14) : 40;
    }
    if (id->INFOG(1) < 0) {
        st = mumz_error(ctx, "factorization", id);
        goto done;
    }
    if (id->INFOG(28) > 0) {
        st = sla__error(ctx, SLA_ERR_SINGULAR,
                        "mumps: matrix is numerically singular (%d null pivots at the level of rounding "
                        "noise, INFOG(28))", id->INFOG(28));
        goto done;
    }
    N->stats.factor_nnz = sla__mumps_count(id->INFOG(29));
    N->stats.flops = id->RINFOG(3);
    N->stats.bytes = 1e6 * sla__mumps_count(id->INFOG(22));
    N->detm = id->RINFOG(12) + id->RINFOG(13) * _Complex_I;
    N->dete = id->INFOG(34);
    /* the values were copied into the factor; the solves read neither */
    id->a = NULL;
    id->irn = id->jcn = NULL;
done:
    {
        sla_allocator a = sla__ctx_alloc(ctx);
        sla__free(&a, ax);
        sla__free(&a, al);
    }
    if (st) mumz_free_num(N);
    else *num = N;
    return st;
}

static sla_status mumz_solve(sla_ctx *ctx, void *sym, void *num, int op, sla_int nrhs, const sla__z *b,
                             sla_int ldb, sla__z *x, sla_int ldx)
{
    mumz_sym *S = sym;
    mumz_num *N = num;
    if (!S || !N) return sla__error(ctx, SLA_ERR_ARGUMENT, "mumps solve: NULL factor");
    sla_status st = sla__zcheck_solve_args(ctx, "mumps", op, S->n, nrhs, b, ldb, x, ldx);
    if (st || S->n == 0 || nrhs == 0) return st;
    if (ldx >= INT_MAX || nrhs >= INT_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "mumps solve: ldx = %lld or nrhs = %lld exceeds 32 bits",
                          (long long)ldx, (long long)nrhs);
    const sla_int n = S->n;
    if (b == x && ldb != ldx)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "mumps solve: b and x alias with different strides");
    for (sla_int j = 0; j < nrhs; j++) {
        const sla__z *bj = b + j * ldb;
        sla__z *xj = x + j * ldx;
        if (op == 2)
            for (sla_int i = 0; i < n; i++) xj[i] = conj(bj[i]);
        else if (xj != bj)
            memcpy(xj, bj, (size_t)n * sizeof *xj);
    }
    /* A x = b: ICNTL(9) = 1; A^T x = b and A^T conj(x) = conj(b): 0 */
    ZMUMPS_STRUC_C *id = &N->id;
    id->ICNTL(9) = op == 0 ? 1 : 0;
    id->ICNTL(20) = 0; /* dense right-hand sides */
    id->ICNTL(21) = 0; /* centralized solution, in rhs */
    id->nrhs = (MUMPS_INT)nrhs;
    id->lrhs = (MUMPS_INT)ldx;
    id->rhs = (ZMUMPS_COMPLEX *)x;
    zmumps_call_nt(id, 3, 1);
    id->rhs = NULL;
    if (id->INFOG(1) < 0) return mumz_error(ctx, "solve", id);
    if (op == 2)
        for (sla_int j = 0; j < nrhs; j++) sla__zconj(n, x + j * ldx);
    return sla__zcheck_solution(ctx, "mumps", n, nrhs, b, ldb, x, ldx);
}

static sla_status mumz_logdet(sla_ctx *ctx, void *sym, void *num, sla__z *phase, double *logabs)
{
    mumz_num *N = num;
    if (!sym || !N || !phase || !logabs) return sla__error(ctx, SLA_ERR_ARGUMENT, "mumps logdet: NULL argument");
    *phase = 1.0;
    *logabs = 0.0;
    if (N->n == 0) return SLA_OK;
    double m = cabs(N->detm);
    if (m == 0.0) {
        *phase = 0.0;
        *logabs = -INFINITY;
        return SLA_OK;
    }
    *phase = N->detm / m;
    *logabs = log(m) + N->dete * log(2.0);
    return SLA_OK;
}

static double mumz_rcond(const void *num) { return -1.0; }

static void mumz_stats(const void *num, sla__direct_stats *st)
{
    const mumz_num *N = num;
    if (N) *st = N->stats;
}

const sla__zdirect_ops sla__zbackend_mumps = {
    .name = "mumps",
    .hermitian = false,
    .analyze = sla__mumps_analyze,
    .factor = mumz_factor,
    .solve = mumz_solve,
    .logdet = mumz_logdet,
    .selinv = NULL,
    .rcond = mumz_rcond,
    .stats = mumz_stats,
    .free_num = mumz_free_num,
    .free_sym = sla__mumps_free_sym,
};
