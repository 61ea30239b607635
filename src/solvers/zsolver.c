/* The complex solver object: sla_solver_create on a complex matrix comes
 * here (S->z holds what the complex path keeps). Its set-up checks the
 * structure each method needs (cg, minres, cholesky, ic0: Hermitian; cocg:
 * complex symmetric A = A^T), builds one complex preconditioner per value
 * array or factors each with a complex direct backend
 * (sla__zdirect_backend), and method=auto's choice among them; then the
 * solves with A, A^T or A^H, the VJP (gb = A^-H gx, gA[k] = -gb[row_k]
 * conj(x[col_k])), refresh and the one-shot sla_zsolve. Krylov methods and
 * their preconditioners see K, A equilibrated by powers of two as in the
 * real solver (equilibrate.c; D A D when A is Hermitian or complex
 * symmetric); direct methods factor A itself. */
#include "methods.h"
#include "solver_internal.h"
#include "zsolver.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Relative tolerance of the structure checks (max |a_ij - conj(a_ji)| or
 * |a_ij - a_ji| over max |a|): the real solver's for its symmetric-only
 * methods. */
#define SLA_ZSYM_TOL 1e-12
/* Iterative refinement steps of a direct solve (while the residual drops). */
#define SLA_ZREFINE_MAX_STEPS 3
/* auto: order from which a complex symmetric A goes to mumps first */
#define SLA_ZMUMPS_MIN_N 200000

struct sla__zsolver {
    bool herm, csym;             /* every value array Hermitian / complex symmetric (to SLA_ZSYM_TOL) */
    bool herm_exact, csym_exact; /* exactly: A^H (A^T) products may use A's rows */
    bool pos_diag;               /* real positive diagonal in every value array */
    double herm_err, sym_err;
    sla__zpc **pc;               /* Krylov: one preconditioner per value array */
    const sla__zdirect_ops *dops; /* direct: the backend, NULL for Krylov */
    void *sym;
    void **num;                  /* direct: one factor per value array */
    sla_method fallback;         /* auto: the Krylov method to run when the chosen one
                                    fails at solve time (SLA_METHOD_AUTO: none) */
    sla_precond_kind asked_pc;   /* options.precond as the caller gave it */
};

/* ---- structure and method checks ------------------------------------------- */

static sla_status structure(sla_ctx *ctx, sla_solver *S)
{
    struct sla__zsolver *z = S->z;
    z->herm_err = z->sym_err = 0.0;
    z->pos_diag = true;
    bool ssym = true;
    for (sla_int b = 0; b < S->A->nbatch; b++) {
        sla_matrix_props pr;
        sla_status st = sla_matrix_properties(ctx, S->A, b, 0.0, &pr);
        if (st) return st;
        z->herm_err = fmax(z->herm_err, pr.hermitian_error);
        z->sym_err = fmax(z->sym_err, pr.symmetry_error);
        z->pos_diag = z->pos_diag && pr.positive_diagonal;
        ssym = ssym && pr.structurally_symmetric;
    }
    z->herm = z->herm_err <= SLA_ZSYM_TOL;
    z->csym = z->sym_err <= SLA_ZSYM_TOL;
    z->herm_exact = ssym && z->herm_err == 0.0;
    z->csym_exact = ssym && z->sym_err == 0.0;
    return SLA_OK;
}

/* What method m needs of A's structure, and whether m runs complex. */
static sla_status check_method(sla_ctx *ctx, const sla_solver *S, sla_method m)
{
    const struct sla__zsolver *z = S->z;
    const sla__method_entry *e = sla__method_find(m);
    if (!e || !(e->desc.flags & SLA_CAP_COMPLEX))
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "method %s does not run on complex matrices (those that do: auto, cg, "
                          "minres, cocg, bicgstab, gmres, cholesky, lu, umfpack, klu, superlu)",
                          sla_method_name(m));
    bool needs_herm = m == SLA_METHOD_CG || m == SLA_METHOD_MINRES || m == SLA_METHOD_CHOLESKY;
    if (needs_herm && !z->herm)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "method %s needs a Hermitian matrix (A = A^H), and this one is not "
                          "(max |a_ij - conj(a_ji)| / max |a| = %.3g > %g); use cocg (complex "
                          "symmetric A = A^T), bicgstab or gmres%s",
                          sla_method_name(m), z->herm_err, SLA_ZSYM_TOL,
                          m == SLA_METHOD_CHOLESKY ? ", or method lu" : "");
    if (m == SLA_METHOD_COCG && !z->csym)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "method cocg needs a complex symmetric matrix (A = A^T), and this one is "
                          "not (max |a_ij - a_ji| / max |a| = %.3g > %g); use bicgstab or gmres%s",
                          z->sym_err, SLA_ZSYM_TOL, z->herm ? " (or cg / minres: A is Hermitian)" : "");
    return SLA_OK;
}

static sla_status check_precond(sla_ctx *ctx, const sla_solver *S, sla_precond_kind p)
{
    const sla__method_entry *e = sla__precond_find(p);
    if (!e || !(e->desc.flags & SLA_CAP_COMPLEX))
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "precond %s does not run on complex matrices: use jacobi, ic0 (Hermitian "
                          "positive definite) or ilu0", sla_precond_name(p));
    if (p == SLA_PRECOND_IC0 && !S->z->herm)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "precond ic0 needs a Hermitian matrix (A = A^H), and this one is not "
                          "(max |a_ij - conj(a_ji)| / max |a| = %.3g); use ilu0 or jacobi",
                          S->z->herm_err);
    return SLA_OK;
}

/* ---- set-up ---------------------------------------------------------------- */

static void free_pcs(sla_solver *S)
{
    for (sla_int b = 0; S->z->pc && b < S->A->nbatch; b++) sla__zpc_destroy(&S->z->pc[b]);
}

static void free_direct(sla_solver *S)
{
    struct sla__zsolver *z = S->z;
    for (sla_int b = 0; z->dops && z->num && b < S->A->nbatch; b++) {
        if (z->num[b]) z->dops->free_num(z->num[b]);
        z->num[b] = NULL;
    }
    if (z->dops && z->sym) z->dops->free_sym(z->sym);
    z->sym = NULL;
    z->dops = NULL;
}

/* K for the current values (opts.equilibrate): D A D when A is Hermitian
 * or complex symmetric (K keeps the structure cg, minres, cocg and ic0
 * need), Dr A Dc otherwise; K = A (no copy) when no scaling is needed.
 * After D A D the structure is measured again on K: A's errors are
 * relative to its largest entry, which a badly scaled A makes huge (a
 * general A with rows 2^400 apart passes for complex symmetric), K's are
 * not. When K is neither Hermitian nor complex symmetric, A is general:
 * the flags say so and K becomes Dr A Dc. */
static sla_status equilibrate(sla_ctx *ctx, sla_solver *S)
{
    struct sla__zsolver *z = S->z;
    sla_status st = sla__solver_equilibrate(ctx, S, z->herm || z->csym);
    if (st || !S->eq_on || !S->eq_sym) return st;
    double herm_err = 0.0, sym_err = 0.0;
    for (sla_int b = 0; b < S->A->nbatch; b++) {
        sla_matrix_props pr;
        if ((st = sla_matrix_properties(ctx, S->K, b, 0.0, &pr))) return st;
        herm_err = fmax(herm_err, pr.hermitian_error);
        sym_err = fmax(sym_err, pr.symmetry_error);
    }
    if (z->herm) z->herm_err = herm_err, z->herm = herm_err <= SLA_ZSYM_TOL;
    if (z->csym) z->sym_err = sym_err, z->csym = sym_err <= SLA_ZSYM_TOL;
    return z->herm || z->csym ? SLA_OK : sla__solver_equilibrate(ctx, S, false);
}

/* One preconditioner of kind p per value array, built on K (equilibrate
 * first). */
static sla_status setup_pcs(sla_ctx *ctx, sla_solver *S, sla_precond_kind p)
{
    free_pcs(S);
    for (sla_int b = 0; b < S->A->nbatch; b++) {
        sla_status st = sla__zpc_create(ctx, p, S->K, b, &S->opts, &S->z->pc[b]);
        if (st) {
            if (S->A->nbatch > 1)
                sla__error(ctx, st, "%s (value array %lld)", sla_ctx_message(ctx), (long long)b);
            free_pcs(S);
            return st;
        }
    }
    S->opts.precond = p;
    return SLA_OK;
}

static sla_status factor_all(sla_ctx *ctx, sla_solver *S)
{
    struct sla__zsolver *z = S->z;
    for (sla_int b = 0; b < S->A->nbatch; b++) {
        if (z->num[b]) z->dops->free_num(z->num[b]);
        z->num[b] = NULL;
        sla_status st = z->dops->factor(ctx, z->sym, S->A, b, &z->num[b]);
        if (st) return st;
    }
    return SLA_OK;
}

/* The backend of method m on A (analysis, then a factor per value array);
 * memory_limit: bytes per factorization, checked by backends whose
 * analysis estimates them (mumps: SLA_ERR_TOO_LARGE), 0 for none. */
static sla_status direct_setup(sla_ctx *ctx, sla_solver *S, sla_method m, double memory_limit)
{
    const sla__zdirect_ops *d = sla__zdirect_backend(m);
    if (!d)
        return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                          "method %s has no complex backend in this build (use a Krylov method: "
                          "cg, minres, cocg, bicgstab, gmres)", sla_method_name(m));
    free_direct(S);
    sla__direct_opts o = {.ordering = S->opts.ordering, .ldlt = false, .nthreads = sla__threads(ctx),
                          .memory_limit = memory_limit};
    sla_status st = d->analyze(ctx, S->A, &o, &S->z->sym);
    if (st) return st;
    S->z->dops = d;
    S->method = m;
    if ((st = factor_all(ctx, S))) free_direct(S);
    return st;
}

/* The memory auto's factorizations may take, all value arrays together:
 * options.memory_limit, else half of the memory available (0: unknown). */
static double memory_limit(const sla_solver *S)
{
    double lim = S->opts.memory_limit > 0.0 ? S->opts.memory_limit : 0.5 * sla__available_memory();
    return lim > 0.0 ? lim : 0.0;
}

/* Whether one factorization per value array is likely to fit the memory
 * limit, by CHOLMOD's fill estimate of the ordering. */
static bool direct_fits(const sla_solver *S)
{
    double lim = memory_limit(S);
    if (!(lim > 0.0)) return true;
    double fill = sla__fill_estimate(S->A, S->opts.ordering);
    return fill * (sizeof(sla__z) + sizeof(sla_int)) * (double)S->A->nbatch <= lim;
}

/* method=auto: a direct method when a complex backend is in the build and
 * the factors fit (Hermitian with a positive diagonal: cholesky, falling
 * back to lu), else Krylov from the structure: Hermitian with a positive
 * diagonal: cg + ic0 (minres if cg meets an indefinite direction);
 * Hermitian: minres; complex symmetric: cocg + ilu0 (gmres if cocg breaks
 * down or stalls); general: gmres + ilu0. A preconditioner that fails on
 * the values falls back to jacobi, then none. The note says which. */
static sla_status auto_setup(sla_ctx *ctx, sla_solver *S)
{
    struct sla__zsolver *z = S->z;
    char why[160] = "";
    size_t at = 0;
    z->fallback = SLA_METHOD_AUTO;
    bool chol = z->herm && z->pos_diag && sla__zdirect_backend(SLA_METHOD_CHOLESKY);
    /* mumps first for a large complex symmetric A: its LDL^T beat
     * UMFPACK's LU from about 3e5 unknowns on 2-D Helmholtz (2026-12-03,
     * create + solve: 2.08 against 2.26 s at 3.6e5, 6.4 against 8.3 s at
     * 1e6; 0.54 against 0.54 s at 1e5). Its own analysis estimates the
     * memory of the factorization (INFOG(17)), checked against the limit,
     * so CHOLMOD's fill estimate (about 0.45 CPU s of the 5 at n = 1e6) is
     * made only when the chain goes on past mumps; over the limit, no
     * direct method is tried (UMFPACK's LU would need more). */
    bool fits = true;
    if (!chol && z->csym_exact && S->A->nrows >= SLA_ZMUMPS_MIN_N && sla__zdirect_backend(SLA_METHOD_MUMPS)) {
        double lim = memory_limit(S);
        sla_status st = direct_setup(ctx, S, SLA_METHOD_MUMPS, lim > 0.0 ? lim / (double)S->A->nbatch : 0.0);
        if (st == SLA_OK) {
            sla__solver_set_note(S, "auto: mumps");
            return SLA_OK;
        }
        if (st == SLA_ERR_NOMEM) return st;
        /* mumps refuses near-singular pivots the LU may still take */
        fits = st != SLA_ERR_TOO_LARGE;
        at += (size_t)snprintf(why + at, sizeof why - at, "mumps failed (%.60s); ", sla_ctx_message(ctx));
    }
    if (fits && direct_fits(S)) {
        static const sla_method lu_chain[] = {SLA_METHOD_LU, SLA_METHOD_KLU, SLA_METHOD_SUPERLU};
        if (chol) {
            sla_status st = direct_setup(ctx, S, SLA_METHOD_CHOLESKY, 0.0);
            if (st == SLA_OK) {
                sla__solver_set_note(S, "auto: Hermitian with a positive diagonal: cholesky");
                return SLA_OK;
            }
            if (st == SLA_ERR_NOMEM) return st;
            at += (size_t)snprintf(why + at, sizeof why - at, "cholesky failed (%.60s); ", sla_ctx_message(ctx));
        }
        for (size_t i = 0; i < sizeof lu_chain / sizeof lu_chain[0]; i++) {
            if (!sla__zdirect_backend(lu_chain[i])) continue;
            sla_status st = direct_setup(ctx, S, lu_chain[i], 0.0);
            if (st == SLA_OK) {
                sla__solver_set_note(S, "auto: %s%s", why, sla_method_name(lu_chain[i]));
                return SLA_OK;
            }
            if (st == SLA_ERR_NOMEM || st == SLA_ERR_SINGULAR) return st;
            if (at < sizeof why)
                at += (size_t)snprintf(why + at, sizeof why - at, "%s failed; ", sla_method_name(lu_chain[i]));
        }
    }
    sla_status st = equilibrate(ctx, S);
    if (st) return st;
    sla_method m;
    sla_precond_kind p;
    if (z->herm && z->pos_diag) {
        m = SLA_METHOD_CG, p = SLA_PRECOND_IC0, z->fallback = SLA_METHOD_MINRES;
    } else if (z->herm) {
        m = SLA_METHOD_MINRES, p = SLA_PRECOND_NONE;
    } else if (z->csym) {
        m = SLA_METHOD_COCG, p = SLA_PRECOND_ILU0, z->fallback = SLA_METHOD_GMRES;
    } else {
        m = SLA_METHOD_GMRES, p = SLA_PRECOND_ILU0;
    }
    if (S->opts.precond != SLA_PRECOND_NONE) p = S->opts.precond; /* the caller's, checked */
    S->method = m;
    st = setup_pcs(ctx, S, p);
    const char *tried = sla_precond_name(p);
    if (st && st != SLA_ERR_NOMEM && p != SLA_PRECOND_JACOBI && p != SLA_PRECOND_NONE)
        st = setup_pcs(ctx, S, SLA_PRECOND_JACOBI);
    if (st && st != SLA_ERR_NOMEM) st = setup_pcs(ctx, S, SLA_PRECOND_NONE);
    if (st) return st;
    const char *shape = z->herm ? (z->pos_diag ? "Hermitian with a positive diagonal" : "Hermitian")
                                : z->csym ? "complex symmetric" : "general complex";
    if (strcmp(tried, sla_precond_name(S->opts.precond)))
        sla__solver_set_note(S, "auto: %s%s: %s + %s (%s failed on the values)", why, shape,
                             sla_method_name(m), sla_precond_name(S->opts.precond), tried);
    else
        sla__solver_set_note(S, "auto: %s%s: %s + %s", why, shape, sla_method_name(m),
                             sla_precond_name(S->opts.precond));
    return SLA_OK;
}

static sla_status setup(sla_ctx *ctx, sla_solver *S)
{
    sla_status st = structure(ctx, S);
    if (st) return st;
    S->note[0] = '\0';
    sla_method m = S->opts.method;
    if ((st = check_method(ctx, S, m))) return st;
    if (m == SLA_METHOD_AUTO) {
        if (S->opts.precond != SLA_PRECOND_NONE && (st = check_precond(ctx, S, S->opts.precond))) return st;
        return auto_setup(ctx, S);
    }
    S->method = m;
    const sla__method_entry *e = sla__method_find(m);
    if (e->desc.kind == SLA_KIND_DIRECT) return direct_setup(ctx, S, m, 0.0);
    if ((st = equilibrate(ctx, S)) || (st = check_method(ctx, S, m)) ||
        (st = check_precond(ctx, S, S->opts.precond)))
        return st;
    return setup_pcs(ctx, S, S->opts.precond);
}

sla_status sla__zsolver_create(sla_ctx *ctx, const sla_matrix *A, const sla_solver_options *o,
                               sla_solver **out)
{
    double t0 = sla__now();
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_solver *S = sla__calloc(&a, 1, sizeof *S);
    struct sla__zsolver *z = S ? sla__calloc(&a, 1, sizeof *z) : NULL;
    if (z) {
        z->pc = sla__calloc(&a, (size_t)A->nbatch, sizeof *z->pc);
        z->num = sla__calloc(&a, (size_t)A->nbatch, sizeof *z->num);
    }
    if (!z || !z->pc || !z->num) {
        if (z) {
            sla__free(&a, z->pc);
            sla__free(&a, z->num);
        }
        sla__free(&a, z);
        sla__free(&a, S);
        return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for a complex solver");
    }
    S->alloc = a;
    S->A = A;
    S->K = A;
    S->opts = *o;
    S->z = z;
    z->asked_pc = o->precond;
    if (S->opts.maxiter == 0) S->opts.maxiter = A->nrows * 10 > 1000 ? A->nrows * 10 : 1000;
    sla_status st = setup(ctx, S);
    if (st) {
        sla_solver_destroy(&S);
        return st;
    }
    S->setup_seconds = sla__now() - t0;
    *out = S;
    return sla__ok(ctx, SLA_OK);
}

void sla__zsolver_free(sla_solver *S)
{
    if (!S || !S->z) return;
    free_pcs(S);
    free_direct(S);
    sla__solver_free_equilibration(S);
    sla__free(&S->alloc, S->z->pc);
    sla__free(&S->alloc, S->z->num);
    sla__free(&S->alloc, S->z);
    S->z = NULL;
}

/* New values: the structure is measured again; an explicit method keeps its
 * choice (refused when the values no longer have the structure it needs),
 * auto chooses afresh. */
sla_status sla__zsolver_refresh(sla_ctx *ctx, sla_solver *S)
{
    double t0 = sla__now();
    sla_status st = sla_matrix_check_values(ctx, S->A, -1);
    if (st) return st;
    if ((st = structure(ctx, S))) return st;
    if (S->opts.method == SLA_METHOD_AUTO) {
        free_pcs(S);
        free_direct(S);
        sla__solver_free_equilibration(S); /* K = A until auto chooses Krylov again */
        S->opts.precond = S->z->asked_pc;
        st = auto_setup(ctx, S);
    } else if ((st = check_method(ctx, S, S->method)) == SLA_OK) {
        if (S->z->dops) st = factor_all(ctx, S);
        else if ((st = equilibrate(ctx, S)) == SLA_OK && /* new scales for the new values */
                 (st = check_method(ctx, S, S->method)) == SLA_OK &&
                 (st = check_precond(ctx, S, S->opts.precond)) == SLA_OK)
            st = setup_pcs(ctx, S, S->opts.precond);
    }
    if (st) return st;
    S->setup_seconds = sla__now() - t0;
    return sla__ok(ctx, SLA_OK);
}

/* ---- operators ----------------------------------------------------------------- */

/* op(A_ib) for Krylov: A's rows directly (conj_vals: conj(A)), or the
 * serial scatter of A^T / A^H when A has no structure to use. */
typedef struct zmatop {
    const sla_matrix *A;
    sla_int ib;
    int op;         /* 0: rows of A (possibly conjugated), 1: A^T, 2: A^H by scattering */
    bool conj_vals;
} zmatop;

static void zmatop_apply(void *data, const sla__z *x, sla__z *y, int nt)
{
    const zmatop *m = data;
    if (m->op != 0 || !m->conj_vals) {
        sla__zspmv(m->A, m->ib, m->op, x, y, nt);
        return;
    }
    const sla_matrix *A = m->A;
    sla_int n = A->nrows;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++) {
        sla__z s = 0.0;
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            s += conj(sla__zval(A, m->ib, p)) * x[A->colind[p]]; /* (conj(A) x)_i */
        y[i] = s;
    }
}

/* op(M) for M = A or K (K = D A D keeps A's exact structure; Dr A Dc is
 * used only when A has none). A^T = A (complex symmetric) or conj(A)
 * (Hermitian); A^H = A (Hermitian) or conj(A) (complex symmetric):
 * row-wise and threaded. */
static void zmatop_init(const sla_solver *S, const sla_matrix *M, sla_int ib, int op, int nt, zmatop *m,
                        sla__zop *zo)
{
    const struct sla__zsolver *z = S->z;
    *m = (zmatop){.A = M, .ib = ib, .op = op, .conj_vals = false};
    if (op == 1 && z->csym_exact) m->op = 0;
    else if (op == 1 && z->herm_exact) m->op = 0, m->conj_vals = true;
    else if (op == 2 && z->herm_exact) m->op = 0;
    else if (op == 2 && z->csym_exact) m->op = 0, m->conj_vals = true;
    *zo = (sla__zop){.n = S->A->nrows, .nt = nt, .data = m, .apply = zmatop_apply, .pc_op = op};
}

/* ---- solves -------------------------------------------------------------------- */

static void info_init(const sla_solver *S, sla_method m, sla_int ib, sla_solve_info *info)
{
    memset(info, 0, sizeof *info);
    snprintf(info->method, sizeof info->method, "%s", sla_method_name(m));
    snprintf(info->precond, sizeof info->precond, "%s",
             S->z->dops ? "none" : sla_precond_name(S->opts.precond));
    snprintf(info->backend, sizeof info->backend, "%s", S->z->dops ? S->z->dops->name : "krylov");
    snprintf(info->note, sizeof info->note, "%s", S->note);
    const sla__zpc *pc = S->z->pc[ib];
    if (pc && pc->note[0]) {
        size_t len = strlen(info->note);
        snprintf(info->note + len, sizeof info->note - len, "%s%s", len ? "; " : "", pc->note);
    }
    if (S->z->dops && S->z->dops->stats && S->z->num[ib]) {
        sla__direct_stats ds = {0};
        S->z->dops->stats(S->z->num[ib], &ds);
        snprintf(info->ordering, sizeof info->ordering, "%s", ds.ordering);
        info->factor_nnz = ds.factor_nnz;
    }
    info->setup_seconds = S->setup_seconds;
    info->rcond = -1.0;
    info->backward_error = -1.0;
}

/* The componentwise backward error max_i |r_i| / (|op(A)| |x| + |b|)_i
 * in LAPACK zgerfs's CABS1 measure |re| + |im| (entries with r_i = 0
 * skipped);
 * w: n doubles of workspace. op 1 and 2 (A^T, A^H) have the same moduli. */
static inline double cabs1(sla__z v) { return fabs(creal(v)) + fabs(cimag(v)); }

static double zbackward_error(const sla_matrix *A, sla_int ib, int op, const sla__z *b, const sla__z *x,
                              const sla__z *r, double *w, int nt)
{
    sla_int n = A->nrows;
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    if (op != 0) {
        for (sla_int i = 0; i < n; i++) w[i] = cabs1(b[i]);
        for (sla_int i = 0; i < n; i++) {
            double xi = cabs1(x[i]);
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) w[ci[p]] += cabs1(sla__zval(A, ib, p)) * xi;
        }
    } else { /* row by row: threaded like the residual's product */
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
        for (sla_int i = 0; i < n; i++) {
            double s = cabs1(b[i]);
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) s += cabs1(sla__zval(A, ib, p)) * cabs1(x[ci[p]]);
            w[i] = s;
        }
    }
    double berr = 0.0;
    for (sla_int i = 0; i < n; i++) {
        double ri = cabs1(r[i]);
        if (ri == 0.0) continue;
        double e = w[i] > 0.0 ? ri / w[i] : INFINITY;
        if (!(e <= berr)) berr = e;
    }
    return berr;
}

/* x = op(A)^-1 b with the factor, then iterative refinement with the same
 * factor by the real path's rule (LAPACK zgerfs's): a step while the
 * componentwise backward error is above eps and the last step at least
 * halved it; a step that did not lower it is undone. A solve already
 * backward stable (the common case) costs one residual and no extra
 * solve. */
static sla_status direct_solve(sla_ctx *ctx, const sla_solver *S, sla_int ib, int op, const sla__z *b,
                               sla__z *x, sla_solve_info *info, int nt)
{
    const struct sla__zsolver *z = S->z;
    sla_int n = S->A->nrows;
    sla__z *r = sla__ctx_malloc(ctx, (size_t)n, 3 * sizeof(sla__z) + sizeof(double),
                                "the residual of a complex direct solve");
    if (!r) return SLA_ERR_NOMEM;
    sla__z *dx = r + n, *xs = r + 2 * n;
    double *w = (double *)(r + 3 * n);
    zmatop m;
    sla__zop zo;
    zmatop_init(S, S->A, ib, op, nt, &m, &zo);
    sla__kopts ko = {.rtol = S->opts.rtol, .atol = S->opts.atol};
    double bnorm = sla__znrm2(n, b, nt);
    sla_status st = z->dops->solve(ctx, z->sym, z->num[ib], op, 1, b, n, x, n);
    double rn = 0.0, berr = 0.0;
    if (!st) {
        rn = sla__ztrue_residual(&zo, b, x, r);
        berr = zbackward_error(S->A, ib, op, b, x, r, w, nt);
    }
    sla_int steps = 0;
    while (!st && berr > DBL_EPSILON && steps < SLA_ZREFINE_MAX_STEPS) {
        if ((st = z->dops->solve(ctx, z->sym, z->num[ib], op, 1, r, n, dx, n))) break;
        memcpy(xs, x, (size_t)n * sizeof *x);
        sla__zaxpy(n, 1.0, dx, x, nt); /* x += op(A)^-1 (b - op(A) x) */
        steps++;
        double rn_new = sla__ztrue_residual(&zo, b, x, dx);
        double berr_new = zbackward_error(S->A, ib, op, b, x, dx, w, nt);
        if (!(berr_new < berr) && !(berr_new == berr && rn_new < rn)) {
            memcpy(x, xs, (size_t)n * sizeof *x); /* no progress: keep the better iterate */
            break;
        }
        bool halved = berr_new <= 0.5 * berr;
        rn = rn_new;
        berr = berr_new;
        memcpy(r, dx, (size_t)n * sizeof *r);
        if (!halved) break;
    }
    sla_allocator al = sla__ctx_alloc(ctx);
    sla__free(&al, r);
    if (st) return st;
    sla__kinfo_finish(info, steps, rn, bnorm, &ko, SLA_DIVERGED_ACCURACY);
    info->backward_error = berr;
    info->rcond = z->dops->rcond ? z->dops->rcond(z->num[ib]) : -1.0;
    return info->converged ? SLA_OK : SLA_NOT_CONVERGED;
}

/* Whether auto's fallback method should run after the chosen one ended
 * with reason r. */
static bool fallback_due(const sla_solver *S, sla_reason r)
{
    if (S->opts.method != SLA_METHOD_AUTO || S->z->fallback == SLA_METHOD_AUTO) return false;
    if (S->method == SLA_METHOD_CG) return r == SLA_DIVERGED_INDEFINITE;
    return r == SLA_DIVERGED_BREAKDOWN || r == SLA_DIVERGED_NAN || r == SLA_DIVERGED_MAXITER;
}

/* 2^e z, both parts (exact for a power of two in range). */
/* z 2^e, each part exactly (no CMPLX: clang's complex.h on glibc lacks it) */
static inline sla__z zldexp(sla__z z, int e)
{
    double p[2] = {ldexp(creal(z), e), ldexp(cimag(z), e)};
    sla__z r;
    memcpy(&r, p, sizeof r);
    return r;
}

/* The exponent of max(|Re z|, |Im z|), INT_MIN for z = 0. */
static inline int zexponent(sla__z z)
{
    double a = fmax(fabs(creal(z)), fabs(cimag(z)));
    return a > 0.0 ? ilogb(a) : INT_MIN;
}

/* A Krylov solve in K's units: with scales (the solver equilibrated A) or
 * a right-hand side beyond 2^+-64, the method solves K y = 2^s Dr b (op T
 * and H: K^T y = 2^s Dc b, K^H y = 2^s Dc b, the scales being real), x =
 * 2^-s Dc y (2^-s Dr y), 2^s bringing the largest entry of the scaled b
 * near 1, as the real solve does (solver.c). Powers of two: exact. */
typedef struct zscaled {
    const double *sb, *sx; /* row and column scales of this op, or NULL */
    int sexp;
    bool on;               /* bk, xk are the scaled copies */
    sla__z *buf;           /* 2 n: bs, ys */
} zscaled;

static sla_status zscaled_begin(sla_ctx *ctx, const sla_solver *S, sla_int ib, int op, const sla__z *b,
                                const sla__z *x, bool use_x0, int nt, zscaled *sc)
{
    sla_int n = S->A->nrows;
    *sc = (zscaled){0};
    if (S->eq_on) {
        sc->sb = (op ? S->eq_c : S->eq_r) + ib * n;
        sc->sx = (op ? S->eq_r : S->eq_c) + ib * n;
    }
    int emax = INT_MIN;
    if (!sc->sb) { /* the common case: one vectorized pass over the 2n parts */
        double bmax = sla__amax(2 * n, (const double *)b, nt);
        if (bmax > 0.0) emax = ilogb(bmax);
    } else {
        for (sla_int i = 0; i < n; i++) {
            int e = zexponent(b[i]);
            if (e != INT_MIN && e + ilogb(sc->sb[i]) > emax) emax = e + ilogb(sc->sb[i]);
        }
    }
    if (emax != INT_MIN && (emax > 64 || emax < -64 || sc->sb)) sc->sexp = -emax;
    sc->on = sc->sb || sc->sexp != 0;
    if (!sc->on) return SLA_OK;
    sc->buf = sla__ctx_malloc(ctx, (size_t)n, 2 * sizeof(sla__z), "a scaled complex solve");
    if (!sc->buf) return SLA_ERR_NOMEM;
    sla__z *bs = sc->buf, *ys = sc->buf + n;
    for (sla_int i = 0; i < n; i++) {
        bs[i] = zldexp(b[i], sc->sexp + (sc->sb ? ilogb(sc->sb[i]) : 0));
        if (use_x0) ys[i] = zldexp(x[i], sc->sexp - (sc->sx ? ilogb(sc->sx[i]) : 0));
    }
    return SLA_OK;
}

/* The smallest row scale: atol in the caller's units holds for the
 * unscaled residual when the scaled one is below 2^s umin atol. */
static double zscaled_atol(const zscaled *sc, sla_int n, double atol)
{
    if (!sc->on) return atol;
    double umin = 1.0;
    if (sc->sb) {
        umin = INFINITY;
        for (sla_int i = 0; i < n; i++) umin = fmin(umin, sc->sb[i]);
    }
    return ldexp(atol, sc->sexp) * umin;
}

/* x = 2^-s Dc y, and the residual in the caller's units: the same one
 * rescaled when the row scales are uniform, else the true residual of A
 * (convergence was judged on the scaled one; the note says so). */
static void zscaled_end(const sla_solver *S, sla_int ib, int op, const sla__z *b, sla__z *x, zscaled *sc,
                        sla_solve_info *info, int nt)
{
    sla_int n = S->A->nrows;
    sla__z *bs = sc->buf, *ys = sc->buf + n;
    for (sla_int i = 0; i < n; i++) x[i] = zldexp(ys[i], (sc->sx ? ilogb(sc->sx[i]) : 0) - sc->sexp);
    bool uniform = true;
    for (sla_int i = 1; sc->sb && i < n && uniform; i++) uniform = sc->sb[i] == sc->sb[0];
    if (uniform) {
        int eu = sc->sb ? ilogb(sc->sb[0]) : 0;
        info->residual_abs = ldexp(info->residual_abs, -sc->sexp - eu);
        info->rhs_norm = ldexp(info->rhs_norm, -sc->sexp - eu);
    } else {
        zmatop mo;
        sla__zop zo;
        zmatop_init(S, S->A, ib, op, nt, &mo, &zo);
        info->residual_abs = sla__ztrue_residual(&zo, b, x, bs);
        info->rhs_norm = sla__znrm2(n, b, nt);
        info->residual = info->rhs_norm > 0.0 ? info->residual_abs / info->rhs_norm : info->residual_abs;
    }
    if (sc->sb) {
        size_t len = strlen(info->note);
        snprintf(info->note + len, sizeof info->note - len, "%sequilibrated (%s scaling by powers of two%s)",
                 len ? "; " : "", S->eq_sym ? "symmetric" : "row and column",
                 uniform ? "" : "; tolerance applied to the scaled residual");
    }
}

static sla_status solve_one(sla_ctx *ctx, const sla_solver *S, sla_int ib, int op, const sla__z *b,
                            sla__z *x, bool use_x0, sla_solve_info *info)
{
    int nt = sla__threads(ctx);
    info_init(S, S->method, ib, info);
    double t0 = sla__now();
    sla_status st;
    if (S->z->dops) {
        st = direct_solve(ctx, S, ib, op, b, x, info, nt);
        info->solve_seconds = sla__now() - t0;
        if (st == SLA_NOT_CONVERGED)
            sla__error(ctx, st, "%s: residual %.3e above tolerance after %lld refinement steps "
                       "(ill-conditioned matrix)", info->method, info->residual, (long long)info->iterations);
        return st;
    }
    zscaled sc;
    if ((st = zscaled_begin(ctx, S, ib, op, b, x, use_x0, nt, &sc))) return st;
    const sla__z *bk = sc.on ? sc.buf : b;
    sla__z *xk = sc.on ? sc.buf + S->A->nrows : x;
    zmatop m;
    sla__zop zo;
    zmatop_init(S, S->K, ib, op, nt, &m, &zo);
    sla__kopts ko = {.rtol = S->opts.rtol, .atol = zscaled_atol(&sc, S->A->nrows, S->opts.atol),
                     .maxiter = S->opts.maxiter, .restart = S->opts.restart, .use_x0 = use_x0,
                     .monitor = S->opts.monitor, .monitor_user = S->opts.monitor_user,
                     .monitor_every = S->opts.monitor_every,
                     .deadline = S->opts.max_seconds > 0.0 ? t0 + S->opts.max_seconds : 0.0};
    const sla__zpc *pc = S->z->pc[ib];
    st = sla__method_find(S->method)->zkrylov(ctx, &zo, pc, bk, xk, &ko, info);
    if (st == SLA_NOT_CONVERGED && fallback_due(S, info->reason)) {
        sla_int its = info->iterations;
        sla_reason why = info->reason;
        sla_method fb = S->z->fallback;
        info_init(S, fb, ib, info);
        size_t len = strlen(info->note);
        snprintf(info->note + len, sizeof info->note - len, "%sauto: %s stopped (%s) after %lld iterations; fell back to %s",
                 len ? "; " : "", sla_method_name(S->method), sla_reason_name(why), (long long)its,
                 sla_method_name(fb));
        st = sla__method_find(fb)->zkrylov(ctx, &zo, pc, bk, xk, &ko, info);
        info->iterations += its;
    }
    if (sc.on && st >= 0) zscaled_end(S, ib, op, b, x, &sc, info, nt);
    sla_allocator al = sla__ctx_alloc(ctx);
    sla__free(&al, sc.buf);
    info->solve_seconds = sla__now() - t0;
    if (st == SLA_NOT_CONVERGED)
        sla__error(ctx, st, "%s did not converge: %s after %lld iterations, relative residual %.3e",
                   info->method, sla_reason_name(info->reason), (long long)info->iterations, info->residual);
    return st;
}

static sla_status check_solver(sla_ctx *ctx, const sla_solver *S, sla_int ib, const char *what)
{
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: solver is NULL", what);
    if (!S->z)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: real solver (created on a %s matrix): use sla_solver_solve",
                          what, sla_dtype_name(S->A->dtype));
    if (ib < 0 || ib >= S->A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "%s: value array %lld out of range [0, %lld)", what, (long long)ib,
                          (long long)S->A->nbatch);
    return SLA_OK;
}

static sla_status check_zvector(sla_ctx *ctx, sla_int n, const sla__z *v, const char *what)
{
    if (n > 0 && !v) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s is NULL", what);
    for (sla_int i = 0; i < n; i++)
        if (!isfinite(creal(v[i])) || !isfinite(cimag(v[i])))
            return sla__error(ctx, SLA_ERR_VALUE, "%s entry %lld is %g%+gi, not finite", what, (long long)i,
                              creal(v[i]), cimag(v[i]));
    return SLA_OK;
}

sla_status sla_zsolver_solve(sla_ctx *ctx, sla_solver *S, sla_int ib, sla_op op, const sla_complex *b,
                             sla_complex *x, sla_solve_info *info)
{
    sla_status st = check_solver(ctx, S, ib, "sla_zsolver_solve");
    if (st) return st;
    if ((int)op < 0 || (int)op > 2)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zsolver_solve: op %d is not SLA_OP_N, _T or _H", (int)op);
    sla_int n = S->A->nrows;
    if ((st = check_zvector(ctx, n, (const sla__z *)b, "right-hand side"))) return st;
    if (n > 0 && !x) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zsolver_solve: x is NULL");
    if (n > 0 && (const void *)b == (const void *)x)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zsolver_solve: b and x may not alias");
    if (S->opts.use_x0 && (st = check_zvector(ctx, n, (const sla__z *)x, "initial guess"))) return st;
    sla_solve_info tmp;
    st = solve_one(ctx, S, ib, (int)op, (const sla__z *)b, (sla__z *)x, S->opts.use_x0, info ? info : &tmp);
    return st == SLA_OK ? sla__ok(ctx, SLA_OK) : st;
}

sla_status sla_zsolver_solve_vjp(sla_ctx *ctx, sla_solver *S, sla_int ib, const sla_complex *x,
                                 const sla_complex *gx, sla_complex *gb, sla_complex *gA,
                                 sla_solve_info *info)
{
    sla_status st = check_solver(ctx, S, ib, "sla_zsolver_solve_vjp");
    if (st) return st;
    const sla_matrix *A = S->A;
    sla_int n = A->nrows;
    if ((st = check_zvector(ctx, n, (const sla__z *)x, "solution x"))) return st;
    if ((st = check_zvector(ctx, n, (const sla__z *)gx, "gradient gx"))) return st;
    if (n > 0 && !gb) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zsolver_solve_vjp: gb is NULL");
    sla_solve_info tmp;
    sla__z *lam = (sla__z *)gb;
    st = solve_one(ctx, S, ib, 2, (const sla__z *)gx, lam, false, info ? info : &tmp); /* gb = A^-H gx */
    if (st < 0) return st;
    if (gA) {
        const sla__z *xv = (const sla__z *)x;
        sla__z *g = (sla__z *)gA;
        for (sla_int i = 0; i < n; i++)
            for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
                g[p] = -lam[i] * conj(xv[A->colind[p]]); /* dL/dA_k = -gb_row conj(x_col) */
    }
    return st == SLA_OK ? sla__ok(ctx, SLA_OK) : st;
}

sla_status sla_zsolve(sla_ctx *ctx, const sla_matrix *A, sla_int ib, const sla_solver_options *opts,
                      const sla_complex *b, sla_complex *x, sla_solve_info *info)
{
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_zsolve: A is NULL");
    if (!sla__is_complex(A))
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "sla_zsolve: A is real (%s): use sla_solve, or build A as complex128",
                          sla_dtype_name(A->dtype));
    sla_solver *S = NULL;
    sla_status st = sla_solver_create(ctx, A, opts, &S);
    if (st) return st;
    st = sla_zsolver_solve(ctx, S, ib, SLA_OP_N, b, x, info);
    sla_solver_destroy(&S);
    return st;
}

/* ---- for the other complex operations ------------------------------------------ */

bool sla__solver_is_complex(const sla_solver *S) { return S && S->z; }

const sla_matrix *sla__zsolver_matrix(const sla_solver *S) { return S ? S->A : NULL; }

sla_status sla__zsolver_factor(sla_ctx *ctx, sla_solver *S, sla_int ib, const sla__zdirect_ops **ops,
                               void **sym, void **num)
{
    sla_status st = check_solver(ctx, S, ib, "complex factor");
    if (st) return st;
    struct sla__zsolver *z = S->z;
    if (!z->dops)
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "this needs a direct factorization; the solver uses %s (create it with "
                          "method=cholesky or lu)", sla_method_name(S->method));
    if (!z->num[ib] && (st = z->dops->factor(ctx, z->sym, S->A, ib, &z->num[ib]))) return st;
    *ops = z->dops;
    *sym = z->sym;
    *num = z->num[ib];
    return SLA_OK;
}
