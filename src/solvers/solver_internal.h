/* Private to the solver object's files (solver.c, dispatch.c,
 * equilibrate.c, batch.c): the object itself and the functions they share.
 * The solver object is the autograd context: it holds what a forward solve
 * prepared (a factorization, or a Krylov method with its preconditioners)
 * so that transposed solves and the VJP reuse it. Never installed. */
#ifndef SLA_SOLVER_INTERNAL_H
#define SLA_SOLVER_INTERNAL_H

#include "direct.h"
#include "krylov.h"

struct sla_solver {
    sla_allocator alloc;
    const sla_matrix *A;
    sla_solver_options opts;
    sla_method method;     /* after auto dispatch */
    bool symmetric;        /* every value array exactly symmetric: A^T = A */
    bool pos_diag;         /* every value array has a positive diagonal */
    sla__pc **pc;          /* Krylov: one preconditioner per value array */
    const sla__direct_ops *dops; /* direct: the backend, NULL for Krylov */
    void *sym;             /* direct: symbolic analysis, one per pattern */
    void **num;            /* direct: one numeric factorization per value array */
    sla__direct_stats dstats;
    double setup_seconds;
    /* method=auto chose Krylov by prediction: an iteration budget after
     * which a serial solve switches to the direct method fallback_dm
     * (0: no budget). */
    sla_int kry_budget;
    double kry_predicted;  /* its predicted iteration count (0: not predicted) */
    sla_method fallback_dm;
    bool auto_amg;         /* auto chose CG + saamg (opts.precond set by auto) */
    char note[256];
    /* Krylov methods and their preconditioners see K: A itself, or eq_mat,
     * A with rows and columns scaled by powers of two (opts.equilibrate):
     * K = Dr A Dc, with eq_r = diag(Dr), eq_c = diag(Dc), nbatch * n each
     * (eq_c == eq_r for symmetric A: K = D A D, eq_sym). eq_vals: K's
     * values, double for a real A, sla__z (complex128) for a complex one. */
    const sla_matrix *K;
    bool eq_on, eq_sym;
    sla_matrix eq_mat;
    void *eq_vals;
    double *eq_r, *eq_c;
    /* A complex matrix: everything the complex path keeps (zsolver.c);
     * NULL for a real solver. The real solve entry points refuse S when it
     * is set (sla__solver_require_real). */
    struct sla__zsolver *z;
};

/* SLA_ERR_ARGUMENT ("complex solver: use sla_zsolver_solve") when S was
 * created on a complex matrix; SLA_OK otherwise (and for S == NULL). */
sla_status sla__solver_require_real(sla_ctx *ctx, const sla_solver *S, const char *what);

/* ---- solver.c: the object, its direct and Krylov set-up ---------------- */

/* S's note, formatted; truncated to its size (notes are for people). */
void sla__solver_set_note(sla_solver *S, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The backend of direct method m (NULL: not in this build, or m is not a
 * direct method). */
const sla__direct_ops *sla__solver_backend_for(sla_method m);

/* Bytes a factorization may take: opts.memory_limit, else half of the
 * memory available now (infinite when unknown). */
double sla__solver_memory_limit(const sla_solver *S);
/* Whether one factorization per value array fits in that limit. */
bool sla__solver_direct_fits(const sla_solver *S);
/* Ordering + symbolic factorization with the backend of method m (sets
 * S->dops, S->method, S->dstats). */
sla_status sla__solver_direct_analyze(sla_ctx *ctx, sla_solver *S, sla_method m);
/* One numeric factorization per value array on the current analysis. */
sla_status sla__solver_factor_all(sla_ctx *ctx, sla_solver *S);
/* Drop the factors and the analysis (S->dops becomes NULL). */
void sla__solver_free_direct(sla_solver *S);

/* Krylov set-up for the current values: equilibration, then one
 * preconditioner per value array; and their release. */
sla_status sla__solver_setup_pcs(sla_ctx *ctx, sla_solver *S);
void sla__solver_free_pcs(sla_solver *S);

/* One solve of A_ib x = b (A_ib^T x = b) with nt threads, without auto's
 * switch (safe for items running in parallel on one solver); a Krylov
 * method stops after `budget` iterations when budget > 0. */
sla_status sla__solver_solve_one(sla_ctx *ctx, const sla_solver *S, sla_int ib, bool transpose,
                                 const double *b, double *x, bool use_x0, sla_solve_info *info,
                                 int nt, sla_int budget);
/* VJP of value array ib for nrhs columns with nt threads. mut: S itself
 * when the caller holds it exclusively, NULL for batch and list items. */
sla_status sla__solver_vjp_one(sla_ctx *ctx, const sla_solver *S, sla_solver *mut, sla_int ib,
                               sla_int nrhs, const double *x, sla_int ldx, const double *gx,
                               sla_int ldgx, double *gb, sla_int ldgb, double *gA,
                               sla_solve_info *info, int nt);

/* ---- equilibrate.c: the matrix the Krylov methods see ------------------ */

/* Decide and build S->K for the current values (opts.equilibrate), real
 * or complex; symmetric: D A D (A symmetric, Hermitian or complex
 * symmetric: K keeps that structure exactly), else Dr A Dc. */
sla_status sla__solver_equilibrate(sla_ctx *ctx, sla_solver *S, bool symmetric);
void sla__solver_free_equilibration(sla_solver *S);

/* ---- dispatch.c: method=auto ------------------------------------------- */

/* method=auto's choice and set-up for the current values (S->symmetric and
 * S->pos_diag known); the note says why. */
sla_status sla__auto_setup(sla_ctx *ctx, sla_solver *S);
/* Factor every value array with S's analysed direct method, with auto's
 * fallbacks (trial Cholesky -> LU, the LU chain); `what` (len bytes) gets
 * the fallbacks taken. */
sla_status sla__auto_factor(sla_ctx *ctx, sla_solver *S, char *what, size_t len);
/* Drop what auto decided, for a fresh dispatch. */
void sla__auto_reset(sla_solver *S);
/* Whether a serial Krylov solve that ended with st and info should switch
 * to the direct method (its budget ran out, or it converged suspiciously
 * late); `why` (len bytes) says which. */
bool sla__auto_switch_due(const sla_solver *S, sla_status st, const sla_solve_info *info, char *why,
                          size_t len);
/* The switch itself: *switched is false when the factors do not fit. */
sla_status sla__auto_switch_to_direct(sla_ctx *ctx, sla_solver *S, const char *why, bool *switched);

#endif
