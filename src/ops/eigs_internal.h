/* Private helpers shared by the ARPACK eigensolvers (eigsh.c, eigsh_gen.c,
 * eigs.c, svds.c and their VJPs): the process-wide ARPACK lock, the basis
 * size and iteration defaults, the messages of ARPACK's info codes and one
 * symmetric Lanczos run over a caller's operator (arpack_util.c), a seeded
 * start vector and sparse linear combinations of two matrices (a shifted
 * operator). Never installed. */
#ifndef SLA_EIGS_INTERNAL_H
#define SLA_EIGS_INTERNAL_H

#include "ops_internal.h"

#include <limits.h>

/* ARPACK's basis size: ncv, or max(2 k + 1, 20); at most n. */
static inline int sla__arpack_ncv(sla_int ncv, sla_int k, sla_int n)
{
    sla_int c = ncv ? ncv : (2 * k + 1 > 20 ? 2 * k + 1 : 20);
    return (int)(c > n ? n : c);
}

/* ARPACK's iteration limit: maxiter, or max(10 n, 1000); at most INT_MAX. */
static inline int sla__arpack_maxiter(sla_int maxiter, sla_int n)
{
    sla_int mx = maxiter ? maxiter : (10 * n > 1000 ? 10 * n : 1000);
    return mx > INT_MAX ? INT_MAX : (int)mx;
}

/* Whether order n or the basis (ncv, or the default for k) is beyond
 * ARPACK's 32-bit indices and workspace sizes. */
static inline bool sla__arpack_too_large(sla_int n, sla_int ncv, sla_int k)
{
    return n > INT_MAX / 4 || (ncv ? ncv : 2 * k + 20) > 46340;
}

#ifdef SLA_HAVE_ARPACK
#include <pthread.h>
/* ARPACK keeps its state in Fortran SAVE variables: every dsaupd/dnaupd
 * run holds this lock (arpack_util.c defines it). */
extern pthread_mutex_t sla__arpack_lock;

/* Takes sla__arpack_lock and, when the context runs more than one thread,
 * keeps OpenBLAS to one thread until sla__arpack_leave: ARPACK's dense
 * steps and the operator's OpenMP products alternate, and OpenBLAS's
 * threads spinning between calls oversubscribe the cores (svds k = 10 on
 * 1e5 x 5e4, 2 threads: 2.8 s with both, 1.27 s with one BLAS thread;
 * bench/RESULTS.md). Returns what sla__arpack_leave restores. */
int sla__arpack_enter(sla_ctx *ctx);
void sla__arpack_leave(int blas_threads);

/* The text of ARPACK's *aupd info code (`arnoldi`: dnaupd's wording). */
const char *sla__arpack_message(int info, bool arnoldi);

/* Records "WHO: ARPACK ROUTINE failed (info N): TEXT" as SLA_ERR_ARGUMENT
 * and returns it; ROUTINE is "dsaupd", "dnaupd", ... */
sla_status sla__arpack_fail(sla_ctx *ctx, const char *who, const char *routine, int info);

/* The operator of a Lanczos run: y = OP x for ido = -1 or 1 (bx = B x given
 * when generalized and ido = 1), y = B x for ido = 2 (generalized only);
 * `scratch` is n doubles of the run's workspace when generalized, else
 * NULL. */
typedef sla_status (*sla__lanczos_apply)(sla_ctx *ctx, void *op, int ido, const double *x, double *y,
                                         const double *bx, double *scratch);

/* One symmetric Lanczos run (dsaupd/dseupd). */
typedef struct sla__lanczos {
    const char *who;     /* message prefix: "eigsh", "svds", ... */
    const char *tag;     /* allocation label prefix */
    const char *vectors; /* label of the eigenvector block ("eigenvectors" when NULL) */
    int n, nev;
    sla_int ncv;         /* 0: the default (sla__arpack_ncv) */
    sla_int maxiter;     /* 0: the default (sla__arpack_maxiter) */
    int mode;            /* iparam[6]: 1 regular, 3 shift-invert */
    bool generalized;    /* bmat "G": B-inner products, ido = 2 asks for B x */
    bool descending;     /* the pairs sorted by descending eigenvalue (else ascending) */
    const char *which;   /* "LA", "SA", "LM", ... */
    double tol, sigma;   /* sigma: dseupd's shift (mode 3) */
    const double *v0;    /* the start vector, or NULL for the seeded one */
    sla__lanczos_apply apply;
    void *op;
} sla__lanczos;

typedef struct sla__lanczos_out {
    int nconv;          /* converged pairs (<= nev); the others are NaN */
    sla_int iters, nops; /* restarts, operator applications (ido -1 and 1) */
    bool maxit;         /* stopped by maxiter */
} sla__lanczos_out;

/* Runs L with sla__arpack_lock held: evals (nev) and their vectors Z (n x
 * nev, ld n) sorted as L asks, the unconverged ones NaN. */
sla_status sla__lanczos_run(sla_ctx *ctx, const sla__lanczos *L, double *evals, double *Z, sla__lanczos_out *out);
#endif

/* The start vector: v0, or a seeded pseudo-random one in [-1, 1). */
static inline void sla__eig_start(sla_int n, const double *v0, double *x)
{
    if (v0) {
        for (sla_int i = 0; i < n; i++) x[i] = v0[i];
        return;
    }
    unsigned long long s = 0x9E3779B97F4A7C15ULL;
    for (sla_int i = 0; i < n; i++) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        x[i] = (double)((s * 2685821657736338717ULL) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
    }
}

/* The gauge component of an eigenvector x = xr + i xi (xi NULL: real):
 * the first index of largest |x_m|. sla_eigs makes x_m real and positive
 * (and ||x|| = 1); sla_eigs_pairs_vjp differentiates with x_m's phase held. */
static inline sla_int sla__eigs_peak(sla_int n, const double *xr, const double *xi)
{
    sla_int m = 0;
    double best = -1.0;
    for (sla_int i = 0; i < n; i++) {
        double a = xr[i] * xr[i] + (xi ? xi[i] * xi[i] : 0.0);
        if (a > best) best = a, m = i;
    }
    return m;
}

/* *out = alpha A_ibA + beta B_ibB as a new one-array float64 matrix on the
 * union of the patterns; B == NULL means the identity (the diagonal is
 * added where A lacks it). A and B square of the same order (checked by
 * the caller). */
sla_status sla__eig_combine(sla_ctx *ctx, const sla_matrix *A, sla_int ibA, double alpha, const sla_matrix *B,
                            sla_int ibB, double beta, sla_matrix **out);

/* The direct solve x = S^-1 b (transpose: S^-T b) by the backend's
 * triangular solves when S holds a factorization, else sla_solver_solve. */
sla_status sla__eig_solve(sla_ctx *ctx, sla_solver *S, bool transpose, const double *b, double *x, sla_int n);

/* The pencil (K_ibK, M_ibM) of sla_eigsh_generalized and its VJP: both
 * not NULL, square of one order, ib in range, values finite, both
 * symmetric; views in *VK, *VM (eigsh_gen.c). */
sla_status sla__eig_check_pencil(sla_ctx *ctx, const char *who, const sla_matrix *K, sla_int ibK,
                                 const sla_matrix *M, sla_int ibM, sla_matrix *VK, sla_matrix *VM);

/* ---- complex Hermitian eigenpairs (zeigsh.c, zeigsh_vjp.c) ---------------- */

struct sla__zdirect_ops;

/* The path choices of sla_zeigsh, a parameter so that tests can force the
 * ARPACK path on small matrices and shift-invert through a backend of
 * their own. */
typedef struct sla__zeigsh_cfg {
    const struct sla__zdirect_ops *lu; /* factors A - sigma I for shift-invert (NULL: none) */
    sla_int dense_n;    /* dense zheevd at n <= dense_n or when the basis would be the whole
                           space (ncv >= n); < 0: never */
    sla_int dense_si_n; /* dense zheevd at n <= dense_si_n when shift-invert (sigma or SM)
                           is wanted and lu is NULL */
} sla__zeigsh_cfg;

#define SLA__ZEIGSH_DENSE_N 200
#define SLA__ZEIGSH_DENSE_SI_N 1000

/* sla_zeigsh with the path choices cfg (sla_zeigsh: the LU backend of
 * sla__zdirect_backend and the limits above). */
sla_status sla__zeigsh_run(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_eigsh_options *opts, sla_int k,
                           double *w, sla_complex *V, sla_eigsh_info *info, const sla__zeigsh_cfg *cfg);

/* A (not NULL) square, ib in range, its values finite and Hermitian to
 * 1e-12 relative (SLA_ERR_ARGUMENT with the measured error otherwise);
 * *view = value array ib. `who` names the caller. */
sla_status sla__zeigsh_check(sla_ctx *ctx, const char *who, const sla_matrix *A, sla_int ib, sla_matrix *view);

#endif
