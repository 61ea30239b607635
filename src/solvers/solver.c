/* The solver object, which is the autograd context: created once for a
 * matrix's pattern, it holds what the forward solve needs and the backward
 * pass reuses (a factorization per value array, or a Krylov method with its
 * preconditioners), refreshed in place for new values, and answers plain,
 * transposed and VJP solves. Here: its life cycle (create, refresh,
 * destroy), the set-up of an explicitly requested method, and the solve
 * and VJP paths. method=auto's choice lives in dispatch.c, equilibration in
 * equilibrate.c, batches and lists in batch.c. */
#include "solver_internal.h"
#include "zsolver.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sla__solver_set_note(sla_solver *S, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(S->note, sizeof S->note, fmt, ap);
    va_end(ap);
}

/* Kind and backend from the method registry (methods.c). */
#include "methods.h"

static bool is_direct(sla_method m)
{
    const sla__method_entry *e = sla__method_find(m);
    return e && e->desc.kind == SLA_KIND_DIRECT;
}

static const sla__direct_ops *backend_for(sla_method m)
{
    const sla__method_entry *e = sla__method_find(m);
    return e && e->backend ? e->backend() : NULL;
}

bool sla_method_available(sla_method m) { return !is_direct(m) || backend_for(m) != NULL; }

/* For dispatch.c (method=auto's choice among the compiled-in backends). */
const sla__direct_ops *sla__solver_backend_for(sla_method m) { return backend_for(m); }

double sla__solver_memory_limit(const sla_solver *S)
{
    if (S->opts.memory_limit > 0.0) return S->opts.memory_limit;
    double avail = sla__available_memory();
    return avail > 0.0 ? 0.5 * avail : INFINITY;
}

void sla__solver_free_direct(sla_solver *S)
{
    if (S->num && S->dops)
        for (sla_int b = 0; b < S->A->nbatch; b++) {
            if (S->num[b]) S->dops->free_num(S->num[b]);
            S->num[b] = NULL;
        }
    if (S->sym && S->dops) S->dops->free_sym(S->sym);
    S->sym = NULL;
    S->dops = NULL;
}

/* Ordering + symbolic factorization with the backend of method m. */
sla_status sla__solver_direct_analyze(sla_ctx *ctx, sla_solver *S, sla_method m)
{
    const sla__direct_ops *d = backend_for(m);
    if (!d)
        return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                          "method %s is not available in this build: its library was not found "
                          "when sla was configured (install libsuitesparse-dev / libsuperlu-dev "
                          "and reconfigure)",
                          sla_method_name(m));
    if (!S->num) {
        S->num = sla__calloc(&S->alloc, (size_t)S->A->nbatch, sizeof *S->num);
        if (!S->num) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for factor handles");
    }
    const sla__method_entry *e = sla__method_find(m);
    sla__direct_opts o = {.ordering = S->opts.ordering, .ldlt = e && e->ldlt,
                          .nthreads = sla__threads(ctx)};
    memset(&S->dstats, 0, sizeof S->dstats);
    sla_status st = d->analyze(ctx, S->A, &o, &S->sym, &S->dstats);
    if (st) return st;
    if (S->dstats.bytes <= 0.0 && S->A->nrows > 0) {
        /* the backend cannot predict its fill: estimate it (a value and an
         * index per entry) so that memory_limit still applies */
        double lu = sla__fill_estimate(S->A, S->opts.ordering);
        if (lu > 0.0) S->dstats.bytes = lu * (sizeof(double) + sizeof(sla_int));
    }
    S->dops = d;
    S->method = m;
    return SLA_OK;
}

bool sla__solver_direct_fits(const sla_solver *S)
{
    return S->dstats.bytes * (double)S->A->nbatch <= sla__solver_memory_limit(S);
}

static sla_status factor_item(sla_ctx *lctx, void *job, sla_int b, int nt)
{
    (void)nt;
    sla_solver *S = job;
    if (S->num[b]) S->dops->free_num(S->num[b]);
    S->num[b] = NULL;
    return S->dops->factor(lctx, S->sym, S->A, b, &S->num[b]);
}

/* One numeric factorization per value array, reusing the analysis; a
 * batch is factored in parallel (each factor is independent, the analysis
 * is only read). */
sla_status sla__solver_factor_all(sla_ctx *ctx, sla_solver *S)
{
    if (S->A->nbatch == 1) return factor_item(ctx, S, 0, sla__threads(ctx));
    return sla__run_items(ctx, S->A->nbatch, factor_item, S);
}

/* An explicitly requested direct method: refuse what does not fit. */
static sla_status direct_setup(sla_ctx *ctx, sla_solver *S, sla_method m)
{
    sla_status st = sla__solver_direct_analyze(ctx, S, m);
    if (st) return st;
    if (!sla__solver_direct_fits(S))
        return sla__error(ctx, SLA_ERR_NOMEM,
                          "%s: the factorization needs about %.2f GB (%lld value arrays), more "
                          "than the limit of %.2f GB; use an iterative method or raise "
                          "memory_limit",
                          sla_method_name(m), 1e-9 * S->dstats.bytes * (double)S->A->nbatch,
                          (long long)S->A->nbatch, 1e-9 * sla__solver_memory_limit(S));
    return sla__solver_factor_all(ctx, S);
}

/* Structure of every value array: exact symmetry (A^T = A lets transposed
 * solves reuse A) and a positive diagonal. O(nnz). */
static sla_status structure(sla_ctx *ctx, const sla_matrix *A, bool *sym, bool *pdiag, double *symerr)
{
    *sym = *pdiag = true;
    double worst = 0.0;
    for (sla_int b = 0; b < A->nbatch; b++) {
        sla_matrix_props pr;
        sla_status st = sla_matrix_properties(ctx, A, b, 0.0, &pr);
        if (st) return st;
        *sym = *sym && pr.symmetric && pr.structurally_symmetric;
        *pdiag = *pdiag && pr.positive_diagonal;
        if (!(pr.symmetry_error <= worst)) worst = pr.symmetry_error;
    }
    if (symerr) *symerr = worst;
    return SLA_OK;
}

/* The symmetric-only direct methods (SLA_CAP_SYMMETRIC in the registry:
 * Cholesky and LDL^T) factor one triangle: an explicit request for them on
 * a matrix that is not symmetric (to SLA_SYM_TOL relative to max |a|)
 * would silently solve with a different matrix, so it is refused. (The
 * symmetric Krylov methods read all of A and are not refused.) */
#define SLA_SYM_TOL 1e-12

static bool symmetric_only_direct(sla_method m)
{
    const sla__method_entry *e = sla__method_find(m);
    return e && e->desc.kind == SLA_KIND_DIRECT && (e->desc.flags & SLA_CAP_SYMMETRIC);
}

static sla_status check_symmetric_method(sla_ctx *ctx, sla_method m, double symerr)
{
    if (symmetric_only_direct(m) && !(symerr <= SLA_SYM_TOL))
        return sla__error(ctx, SLA_ERR_ARGUMENT,
                          "method %s needs a symmetric matrix, and this one is not symmetric "
                          "(max |a_ij - a_ji| / max |a| = %.3g > %g); use method lu or a Krylov method",
                          sla_method_name(m), symerr, SLA_SYM_TOL);
    return SLA_OK;
}

/* Structure checks, then the method's set-up. */
static sla_status setup(sla_ctx *ctx, sla_solver *S)
{
    double symerr;
    sla_status st = structure(ctx, S->A, &S->symmetric, &S->pos_diag, &symerr);
    if (st) return st;
    if ((st = check_symmetric_method(ctx, S->opts.method, symerr))) return st;
    S->method = S->opts.method;
    S->note[0] = '\0';
    if (S->method == SLA_METHOD_AUTO) return sla__auto_setup(ctx, S);
    if (is_direct(S->method)) return direct_setup(ctx, S, S->method);
    return sla__solver_setup_pcs(ctx, S);
}

void sla__solver_free_pcs(sla_solver *S)
{
    if (!S->pc) return;
    for (sla_int b = 0; b < S->A->nbatch; b++) sla__pc_destroy(&S->pc[b]);
}

/* Krylov set-up for the current values: equilibration, then the
 * preconditioners, built on the matrix the methods see (K). */
sla_status sla__solver_setup_pcs(sla_ctx *ctx, sla_solver *S)
{
    sla_status st0 = sla__solver_equilibrate(ctx, S, S->symmetric);
    if (st0) return st0;
    for (sla_int b = 0; b < S->A->nbatch; b++) {
        sla_status st;
        if (S->pc[b] && S->pc[b]->refresh) { /* reuse what the values do not change */
            /* exact: structure() ran on these values (K = A when not equilibrated) */
            S->pc[b]->sym_known = S->symmetric && !S->eq_on;
            st = S->pc[b]->refresh(ctx, S->pc[b], S->K, b);
        } else {
            sla__pc_destroy(&S->pc[b]);
            st = sla__pc_create(ctx, S->opts.precond, S->K, b, &S->opts, &S->pc[b]);
        }
        if (st) {
            if (S->A->nbatch > 1)
                sla__error(ctx, st, "%s (value array %lld)", sla_ctx_message(ctx), (long long)b);
            return st;
        }
    }
    return SLA_OK;
}

static sla_status check_options(sla_ctx *ctx, const sla_solver_options *o)
{
    if (!sla__method_find(o->method))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown method %d", (int)o->method);
    if (!sla__precond_find(o->precond))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown preconditioner %d", (int)o->precond);
    if (!(o->rtol >= 0.0) || !(o->atol >= 0.0) || !isfinite(o->rtol) || !isfinite(o->atol))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "rtol and atol must be finite and >= 0 (got %g, %g)",
                          o->rtol, o->atol);
    if (o->maxiter < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "maxiter must be >= 0 (got %lld)", (long long)o->maxiter);
    if ((int)o->ordering < SLA_ORDER_AUTO || (int)o->ordering > SLA_ORDER_NATURAL)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown ordering %d", (int)o->ordering);
    if (!(o->memory_limit >= 0.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "memory_limit must be >= 0");
    if (o->restart < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "restart must be >= 0 (got %d)", o->restart);
    if (o->auto_solves < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "auto_solves must be >= 0 (got %d)", o->auto_solves);
    if (!(o->auto_direct_seconds >= 0.0) || !isfinite(o->auto_direct_seconds))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "auto_direct_seconds must be finite and >= 0 (got %g)",
                          o->auto_direct_seconds);
    if (o->saamg_reuse < 0 || o->saamg_reuse > 3)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "saamg_reuse must be 0, 1, 2 or 3 (got %d)", o->saamg_reuse);
    if (o->saamg_smoother < 0 || o->saamg_smoother > 2)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "saamg_smoother must be 0 (gs), 1 (cheby) or 2 (spai0) (got %d)",
                          o->saamg_smoother);
    if (!(o->max_seconds >= 0.0))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "max_seconds must be >= 0 (got %g)", o->max_seconds);
    if (o->equilibrate < SLA_EQUILIBRATE_AUTO || o->equilibrate > SLA_EQUILIBRATE_OFF)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown equilibrate setting %d (auto 0, on 1, off 2)",
                          o->equilibrate);
    return SLA_OK;
}

sla_status sla_solver_create(sla_ctx *ctx, const sla_matrix *A, const sla_solver_options *opts,
                             sla_solver **out)
{
    if (!out) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_create: out is NULL");
    *out = NULL;
    if (!A) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_create: A is NULL");
    if (A->nrows != A->ncols)
        return sla__error(ctx, SLA_ERR_DIMENSION, "cannot solve with a non-square %lld x %lld matrix",
                          (long long)A->nrows, (long long)A->ncols);
    sla_solver_options o;
    if (opts) o = *opts;
    else sla_solver_options_default(&o);
    sla_status st = check_options(ctx, &o);
    if (st) return st;
    if ((st = sla_matrix_check_values(ctx, A, -1))) return st;
    if (sla__is_complex(A)) return sla__zsolver_create(ctx, A, &o, out); /* zsolver.c */

    double t0 = sla__now();
    sla_allocator a = sla__ctx_alloc(ctx);
    sla_solver *S = sla__calloc(&a, 1, sizeof *S);
    if (!S) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for a solver");
    S->alloc = a;
    S->A = A;
    S->K = A;
    S->opts = o;
    if (S->opts.maxiter == 0) S->opts.maxiter = A->nrows * 10 > 1000 ? A->nrows * 10 : 1000;
    S->pc = sla__calloc(&a, (size_t)A->nbatch, sizeof *S->pc);
    if (!S->pc) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "out of memory for %lld preconditioners", (long long)A->nbatch);
        goto fail;
    }
    if ((st = setup(ctx, S))) goto fail;
    S->setup_seconds = sla__now() - t0;
    *out = S;
    return sla__ok(ctx, SLA_OK);
fail:
    sla_solver_destroy(&S);
    return st;
}

/* New values, same pattern. The structure that the set-up assumed
 * (symmetry, which lets transposed solves and VJPs reuse A; the positive
 * diagonal) is checked again, O(nnz). method=auto re-dispatches when it
 * changed, or when the values it chose for no longer suit its choice (a
 * Cholesky that meets an indefinite matrix, a singular factor, saamg on
 * an indefinite matrix); an explicit method keeps its choice and only
 * updates how it applies A^T. The note says what happened. */
sla_status sla_solver_refresh(sla_ctx *ctx, sla_solver *S)
{
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_refresh: S is NULL");
    if (S->z) return sla__zsolver_refresh(ctx, S);
    double t0 = sla__now();
    sla_status st = sla_matrix_check_values(ctx, S->A, -1);
    if (st) return st;
    bool sym, pdiag;
    double symerr;
    if ((st = structure(ctx, S->A, &sym, &pdiag, &symerr))) return st;
    if (S->opts.method != SLA_METHOD_AUTO && (st = check_symmetric_method(ctx, S->method, symerr)))
        return st;
    bool changed = sym != S->symmetric || pdiag != S->pos_diag;
    char change[96] = "";
    if (changed)
        snprintf(change, sizeof change, "refresh: values now %s%s", sym ? "symmetric" : "nonsymmetric",
                 sym ? (pdiag ? ", positive diagonal" : ", diagonal not positive") : "");
    S->symmetric = sym;
    S->pos_diag = pdiag;
    if (S->opts.method != SLA_METHOD_AUTO) {
        if (changed) sla__solver_set_note(S, "%s (an explicit %s is kept)", change, sla_method_name(S->method));
        st = S->dops ? sla__solver_factor_all(ctx, S) /* same ordering, new numbers */
                     : sla__solver_setup_pcs(ctx, S);
        if (st) return st;
        S->setup_seconds = sla__now() - t0;
        return sla__ok(ctx, SLA_OK);
    }
    if (!changed) { /* the same choice, new numbers; fallbacks as at set-up */
        char what[200] = "";
        st = S->dops ? sla__auto_factor(ctx, S, what, sizeof what) : sla__solver_setup_pcs(ctx, S);
        if (st == SLA_OK) {
            if (what[0]) sla__solver_set_note(S, "auto: refresh: %s", what);
            S->setup_seconds = sla__now() - t0;
            return sla__ok(ctx, SLA_OK);
        }
        if (st == SLA_ERR_NOMEM || st == SLA_ERR_SINGULAR) return st;
        snprintf(change, sizeof change, "refresh: %.80s", sla_ctx_message(ctx));
    }
    sla__auto_reset(S); /* a fresh dispatch for the new values */
    S->method = SLA_METHOD_AUTO;
    if ((st = sla__auto_setup(ctx, S))) return st;
    char old[sizeof S->note];
    snprintf(old, sizeof old, "%s", S->note);
    sla__solver_set_note(S, "%s; re-dispatched: %s", change, old);
    S->setup_seconds = sla__now() - t0;
    return sla__ok(ctx, SLA_OK);
}

void sla_solver_destroy(sla_solver **S)
{
    if (!S || !*S) return;
    sla_solver *s = *S;
    sla_allocator a = s->alloc;
    sla__zsolver_free(s);
    sla__solver_free_pcs(s);
    sla__solver_free_direct(s);
    sla__solver_free_equilibration(s);
    sla__free(&a, s->num);
    sla__free(&a, s->pc);
    sla__free(&a, s);
    *S = NULL;
}

size_t sla_solve_info_size(void) { return sizeof(sla_solve_info); }
size_t sla_hierarchy_info_size(void) { return sizeof(sla_hierarchy_info); }

sla_method sla_solver_method(const sla_solver *S) { return S ? S->method : SLA_METHOD_AUTO; }
double sla_solver_setup_seconds(const sla_solver *S) { return S ? S->setup_seconds : 0.0; }

sla_status sla_solver_hierarchy(sla_ctx *ctx, const sla_solver *S, sla_int ib, sla_hierarchy_info *out)
{
    if (out) memset(out, 0, sizeof *out);
    if (!S || !out) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_hierarchy: NULL %s", S ? "out" : "solver");
    if (ib < 0 || ib >= S->A->nbatch)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_hierarchy: value array %lld out of range [0, %lld)",
                          (long long)ib, (long long)S->A->nbatch);
    const sla__pc *pc = !S->z && !S->dops && S->pc ? S->pc[ib] : NULL;
    if (!pc || pc->kind != SLA_PRECOND_SAAMG)
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "sla_solver_hierarchy: the %ssolver (method %s, precond %s) has no multigrid "
                          "hierarchy of sla's own (precond=saamg%s)",
                          S->z ? "complex " : "", sla_method_name(S->method),
                          S->dops ? "none" : sla_precond_name(S->opts.precond),
                          pc && pc->kind == SLA_PRECOND_AMG ? "; precond amg's is inside hypre" : "");
    sla__saamg_hierarchy(pc, out);
    return SLA_OK;
}

static void info_init(const sla_solver *S, sla_method m, sla_solve_info *info)
{
    memset(info, 0, sizeof *info);
    snprintf(info->method, sizeof info->method, "%s", sla_method_name(m));
    snprintf(info->precond, sizeof info->precond, "%s", sla_precond_name(S->opts.precond));
    snprintf(info->backend, sizeof info->backend, "%s", S->dops ? S->dops->name : "krylov");
    snprintf(info->note, sizeof info->note, "%s", S->note);
    if (S->dops) {
        info->factor_nnz = S->dstats.factor_nnz;
        snprintf(info->ordering, sizeof info->ordering, "%s", S->dstats.ordering);
    }
    info->setup_seconds = S->setup_seconds;
    info->rcond = -1.0;
    info->backward_error = -1.0;
}

/* The preconditioner's set-up note (shifted ILU/IC pivots) after the solver's. */
static void pc_note(const sla_solver *S, sla_int ib, sla_solve_info *info)
{
    const sla__pc *pc = S->pc ? S->pc[ib] : NULL;
    if (!pc || !pc->note[0]) return;
    size_t len = strlen(info->note);
    snprintf(info->note + len, sizeof info->note - len, "%s%s", len ? "; " : "", pc->note);
}

/* Below this reciprocal condition estimate a direct solve warns in its
 * note (and below n eps, when that is larger: the forward error may then
 * be of order 1). */
#define SLA_RCOND_WARN 1e-12

/* The factor's condition estimate into the report, with a warning when
 * the matrix is nearly singular. */
static void direct_rcond(const sla_solver *S, sla_int ib, sla_solve_info *info)
{
    double rc = S->dops->rcond ? S->dops->rcond(S->num[ib]) : -1.0;
    info->rcond = rc;
    double warn = fmax(SLA_RCOND_WARN, (double)S->A->nrows * DBL_EPSILON);
    if (rc >= 0.0 && rc < warn) {
        char old[sizeof info->note];
        snprintf(old, sizeof old, "%s", info->note);
        snprintf(info->note, sizeof info->note,
                 "warning: nearly singular, reciprocal condition estimate %.2e (%s)%s%.150s", rc,
                 S->dops->name, old[0] ? "; " : "", old);
    }
}

static sla_status check_vector(sla_ctx *ctx, sla_int n, const double *v, const char *what,
                               sla_int col)
{
    for (sla_int i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return sla__error(ctx, SLA_ERR_VALUE, "%s entry %lld (column %lld) is %g, not finite",
                              what, (long long)i, (long long)col, v[i]);
    return SLA_OK;
}

/* The componentwise (Oettli-Prager) backward error of x for A x = b
 * (A^T x = b when transpose) with residual r = b - A x:
 * max_i |r_i| / (|A| |x| + |b|)_i, a row with a zero denominator counting
 * only when its residual is not zero (then +inf). w: n doubles. */
static double backward_error(const sla_matrix *A, sla_int ib, bool transpose, const double *b,
                             const double *x, const double *r, double *w)
{
    sla_int n = A->nrows;
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    if (transpose) {
        for (sla_int i = 0; i < n; i++) w[i] = fabs(b[i]);
        for (sla_int i = 0; i < n; i++) {
            double xi = fabs(x[i]);
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) w[ci[p]] += fabs(sla__val(A, ib, p)) * xi;
        }
    } else {
        for (sla_int i = 0; i < n; i++) {
            double s = fabs(b[i]);
            for (sla_int p = rp[i]; p < rp[i + 1]; p++) s += fabs(sla__val(A, ib, p)) * fabs(x[ci[p]]);
            w[i] = s;
        }
    }
    double berr = 0.0;
    for (sla_int i = 0; i < n; i++) {
        double ri = fabs(r[i]);
        if (ri == 0.0) continue;
        double e = w[i] > 0.0 ? ri / w[i] : INFINITY;
        if (!(e <= berr)) berr = e;
    }
    return berr;
}

/* Iterative refinement of a direct solve (LAPACK dgerfs's rule): steps
 * while the componentwise backward error is above eps, halved by the last
 * step, at most this many. */
#define SLA_REFINE_MAX_STEPS 5

/* A direct solve with the factor of value array ib, then iterative
 * refinement with the same factor, residuals in working precision, as
 * LAPACK's expert drivers do: x += A^-1 (b - A x) while the componentwise
 * backward error is above eps and the previous step at least halved it
 * (at most SLA_REFINE_MAX_STEPS; a step that makes it worse is undone).
 * The report holds the true residual, the backward error and rcond. */
static sla_status direct_solve(sla_ctx *ctx, const sla_solver *S, sla_int ib, bool transpose,
                               const double *b, double *x, sla_solve_info *info, int nt)
{
    const sla_matrix *A = S->A;
    sla_int n = A->nrows;
    sla_allocator al = sla__ctx_alloc(ctx);
    double *r = sla__malloc(&al, (size_t)n, 4 * sizeof(double));
    if (!r) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the residual check");
    double *dx = r + n, *xs = r + 2 * n, *w = r + 3 * n;
    sla__matop m = {.A = A, .ib = ib, .transpose = transpose && !S->symmetric};
    sla__op op;
    sla__matop_init(&op, &m, nt);
    sla__kopts ko = {.rtol = S->opts.rtol, .atol = S->opts.atol};
    double bnorm = sla__nrm2(n, b, nt);
    sla_status st = S->dops->solve(ctx, S->sym, S->num[ib], transpose, 1, b, n, x, n);
    double rn = 0.0, berr = 0.0;
    if (!st) {
        rn = sla__true_residual(&op, b, x, r);
        berr = backward_error(A, ib, m.transpose, b, x, r, w);
    }
    sla_int steps = 0;
    while (!st && berr > DBL_EPSILON && steps < SLA_REFINE_MAX_STEPS) {
        if ((st = S->dops->solve(ctx, S->sym, S->num[ib], transpose, 1, r, n, dx, n))) break;
        sla__copy(n, x, xs);
        sla__axpy(n, 1.0, dx, x, nt); /* x += A^-1 (b - A x) */
        steps++;
        double rn_new = sla__true_residual(&op, b, x, dx);
        double berr_new = backward_error(A, ib, m.transpose, b, x, dx, w);
        if (!(berr_new < berr) && !(berr_new == berr && rn_new < rn)) {
            sla__copy(n, xs, x); /* no progress: keep the better iterate */
            break;
        }
        bool halved = berr_new <= 0.5 * berr;
        rn = rn_new;
        berr = berr_new;
        sla__copy(n, dx, r);
        if (!halved) break;
    }
    sla__free(&al, r);
    if (st) return st;
    sla__kinfo_finish(info, steps, rn, bnorm, &ko, SLA_DIVERGED_ACCURACY);
    info->backward_error = berr;
    direct_rcond(S, ib, info);
    return info->converged ? SLA_OK : SLA_NOT_CONVERGED;
}

/* Value array ib of a real matrix (the one a CSR product over it reads),
 * or NULL for complex values. */
static const void *real_vals(const sla_matrix *K, sla_int ib)
{
    if (K->dtype == SLA_F64) return (const double *)K->values + ib * K->nnz;
    if (K->dtype == SLA_F32) return (const float *)K->values + ib * K->nnz;
    return NULL;
}

/* One solve of A_ib x = b (or A_ib^T x = b) with nt threads; a Krylov
 * method stops after `budget` iterations when budget > 0. */

sla_status sla__solver_solve_one(sla_ctx *ctx, const sla_solver *S, sla_int ib, bool transpose,
                                 const double *b, double *x, bool use_x0, sla_solve_info *info,
                                 int nt, sla_int budget)
{
    const sla_matrix *A = S->A;
    sla_int n = A->nrows;
    info_init(S, S->method, info);
    if (!S->dops) pc_note(S, ib, info);
    sla_status st = check_vector(ctx, n, b, "right-hand side", 0);
    if (st) return st;
    if (use_x0 && (st = check_vector(ctx, n, x, "initial guess", 0))) return st;
    double t0 = sla__now();
    if (S->dops) {
        st = direct_solve(ctx, S, ib, transpose, b, x, info, nt);
        info->solve_seconds = sla__now() - t0;
        if (st == SLA_NOT_CONVERGED)
            sla__error(ctx, st, "%s: residual %.3e above tolerance after %lld refinement steps "
                       "(ill-conditioned matrix)", info->method, info->residual,
                       (long long)info->iterations);
        return st;
    }

    if (transpose && !S->symmetric && S->opts.precond == SLA_PRECOND_SAAMG)
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "precond saamg has no transposed cycle for a nonsymmetric matrix "
                          "(adjoint or transposed solves): use precond amg, ilu0 or jacobi");
    bool tr = transpose && !S->symmetric;
    sla__matop m = {.A = S->K, .AT = NULL, .ib = ib, .transpose = tr, .work = NULL};
    sla_allocator al = sla__ctx_alloc(ctx);
    /* Scale safety: the method solves K y = 2^s Dr b (K^T y = 2^s Dc b when
     * transposed), x = 2^-s Dc y (2^-s Dr y), with 2^s bringing the largest
     * entry of the scaled right-hand side near 1 when it is far from it, so
     * that no Krylov vector or dot product overflows or underflows. Powers
     * of two: exact. */
    const double *sb = NULL, *sx = NULL; /* row and column scales, or NULL */
    if (S->eq_on) {
        sb = (transpose ? S->eq_c : S->eq_r) + ib * n;
        sx = (transpose ? S->eq_r : S->eq_c) + ib * n;
    }
    /* exponents: the scales are powers of two, so b_i sb_i = 2^(eb_i + es_i) m_i
     * exactly, and one ldexp per entry applies both without an
     * intermediate overflow */
    int sexp = 0;
    {
        int emax = INT_MIN;
        if (!sb) { /* the common case: one vectorized pass */
            double bmax = sla__amax(n, b, nt);
            if (bmax > 0.0) emax = ilogb(bmax);
        } else {
            for (sla_int i = 0; i < n; i++)
                if (b[i] != 0.0) {
                    int e = ilogb(b[i]) + ilogb(sb[i]);
                    if (e > emax) emax = e;
                }
        }
        if (emax != INT_MIN && (emax > 64 || emax < -64 || sb)) sexp = -emax;
    }
    bool scaled = sb || sexp != 0;
    double *bs = NULL, *ys = NULL;
    if (scaled || (tr && nt > 1)) {
        size_t extra = tr && nt > 1 ? (size_t)nt * (size_t)n : 0;
        bs = sla__malloc(&al, (size_t)(scaled ? 2 : 0) * (size_t)n + extra, sizeof(double));
        if (!bs) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for a scaled or transposed solve");
        if (scaled) ys = bs + n;
        if (extra) m.work = bs + (scaled ? 2 * (size_t)n : 0);
    }
    double umin = 1.0; /* smallest row scale: atol holds for the unscaled residual */
    if (scaled) {
        for (sla_int i = 0; i < n; i++) {
            bs[i] = ldexp(b[i], sexp + (sb ? ilogb(sb[i]) : 0));
            if (use_x0) ys[i] = ldexp(x[i], sexp - (sx ? ilogb(sx[i]) : 0));
        }
        if (sb) {
            umin = INFINITY;
            for (sla_int i = 0; i < n; i++) umin = fmin(umin, sb[i]);
        }
    }
    const double *bk = scaled ? bs : b;
    double *xk = scaled ? ys : x;
    sla__op op;
    sla__matop_init(&op, &m, nt);
    sla__kopts ko = {.rtol = S->opts.rtol, .atol = scaled ? ldexp(S->opts.atol, sexp) * umin : S->opts.atol,
                     .maxiter = budget > 0 ? budget : S->opts.maxiter, .restart = S->opts.restart, .use_x0 = use_x0, .pc_transpose = transpose,
                     .monitor = S->opts.monitor, .monitor_user = S->opts.monitor_user,
                     .monitor_every = S->opts.monitor_every,
                     .deadline = S->opts.max_seconds > 0.0 ? t0 + S->opts.max_seconds : 0.0,
                     .a_vals = tr ? NULL : real_vals(S->K, ib)};
    st = sla__krylov_method(S->method)(ctx, &op, S->pc[ib], bk, xk, &ko, info);
    if (st == SLA_NOT_CONVERGED && S->opts.method == SLA_METHOD_AUTO &&
        S->method == SLA_METHOD_CG && info->reason == SLA_DIVERGED_INDEFINITE) {
        sla_int its = info->iterations;
        info_init(S, SLA_METHOD_MINRES, info);
        snprintf(info->note, sizeof info->note,
                 "auto: cg met an indefinite direction after %lld iterations; fell back to minres",
                 (long long)its);
        st = sla__minres(ctx, &op, S->pc[ib], bk, xk, &ko, info);
        info->iterations += its;
    }
    if (scaled && st >= 0) {
        for (sla_int i = 0; i < n; i++) x[i] = ldexp(ys[i], (sx ? ilogb(sx[i]) : 0) - sexp);
        bool uniform = true;
        for (sla_int i = 1; sb && i < n && uniform; i++) uniform = sb[i] == sb[0];
        if (uniform) { /* the same residual, in the caller's units */
            int eu = sb ? ilogb(sb[0]) : 0;
            info->residual_abs = ldexp(info->residual_abs, -sexp - eu);
            info->rhs_norm = ldexp(info->rhs_norm, -sexp - eu);
        } else { /* convergence was judged on the scaled residual: report the true one */
            sla__matop mo = {.A = A, .ib = ib, .transpose = tr};
            sla__op opo;
            sla__matop_init(&opo, &mo, 1);
            info->residual_abs = sla__true_residual(&opo, b, x, bs);
            info->rhs_norm = sla__nrm2(n, b, nt);
            info->residual = info->rhs_norm > 0.0 ? info->residual_abs / info->rhs_norm : info->residual_abs;
        }
        if (sb) {
            size_t len = strlen(info->note);
            snprintf(info->note + len, sizeof info->note - len, "%sequilibrated (%s scaling by powers of two%s)",
                     len ? "; " : "", S->symmetric ? "symmetric" : "row and column",
                     uniform ? "" : "; tolerance applied to the scaled residual");
        }
    }
    sla__free(&al, bs);
    info->solve_seconds = sla__now() - t0;
    if (st == SLA_NOT_CONVERGED)
        sla__error(ctx, st, "%s did not converge: %s after %lld iterations, relative residual %.3e",
                   info->method, sla_reason_name(info->reason), (long long)info->iterations,
                   info->residual);
    return st;
}

/* A solve through a solver the caller holds exclusively (not a batch
 * item, which runs in parallel with others on the same solver): with
 * method=auto's Krylov budget and its switch to the direct method, both
 * when the budget runs out and when the solve converged only far past its
 * predicted iteration count (sla__auto_switch_due in dispatch.c: an
 * ill-conditioned matrix, whose small residual may hide a poor forward
 * error). */
static sla_status solve_serial(sla_ctx *ctx, sla_solver *S, sla_int ib, bool transpose,
                               const double *b, double *x, bool use_x0, sla_solve_info *info, int nt)
{
    sla_status st = sla__solver_solve_one(ctx, S, ib, transpose, b, x, use_x0, info, nt, S->kry_budget);
    if (S->kry_budget <= 0 || S->dops) return st;
    char why[96];
    if (!sla__auto_switch_due(S, st, info, why, sizeof why)) return st;
    double spent = info->solve_seconds;
    sla_int spent_its = info->iterations;
    bool switched;
    if ((st = sla__auto_switch_to_direct(ctx, S, why, &switched))) return st;
    if (!switched && info->converged) return sla__ok(ctx, SLA_OK); /* keep the Krylov answer */
    /* Direct: a fresh solve. Factors too large: go on from the iterate. */
    st = sla__solver_solve_one(ctx, S, ib, transpose, b, x, switched ? false : true, info, nt, 0);
    info->solve_seconds += spent;
    if (!switched) info->iterations += spent_its;
    return st;
}

sla_status sla__solver_require_real(sla_ctx *ctx, const sla_solver *S, const char *what)
{
    if (S && S->z)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: complex solver: use sla_zsolver_solve (sla/complex.h)",
                          what);
    return SLA_OK;
}

static sla_status check_call(sla_ctx *ctx, const sla_solver *S, sla_int ib, sla_int nrhs,
                             const void *b, sla_int ldb, const void *x, sla_int ldx)
{
    if (!S) return sla__error(ctx, SLA_ERR_ARGUMENT, "solver is NULL");
    sla_status rs = sla__solver_require_real(ctx, S, "real solve");
    if (rs) return rs;
    sla_int n = S->A->nrows;
    if (ib < 0 || ib >= S->A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "value array %lld out of range [0, %lld)",
                          (long long)ib, (long long)S->A->nbatch);
    if (nrhs < 0) return sla__error(ctx, SLA_ERR_DIMENSION, "nrhs = %lld < 0", (long long)nrhs);
    if (nrhs > 0 && n > 0 && (!b || !x))
        return sla__error(ctx, SLA_ERR_ARGUMENT, "NULL right-hand side or solution");
    if (ldb < n || ldx < n)
        return sla__error(ctx, SLA_ERR_DIMENSION, "leading dimensions %lld, %lld < n = %lld",
                          (long long)ldb, (long long)ldx, (long long)n);
    sla_status st = sla__check_extent(ctx, nrhs, ldb, "nrhs x leading dimension of b");
    if (!st) st = sla__check_extent(ctx, nrhs, ldx, "nrhs x leading dimension of x");
    return st;
}

/* Columns one after another, each with the context's threads. */
static sla_status solve_columns(sla_ctx *ctx, sla_solver *S, sla_int ib, bool transpose,
                                sla_int nrhs, const double *b, sla_int ldb, double *x,
                                sla_int ldx, sla_solve_info *info)
{
    sla_status st = check_call(ctx, S, ib, nrhs, b, ldb, x, ldx);
    if (st) return st;
    int nt = sla__threads(ctx);
    sla_status worst = SLA_OK;
    for (sla_int r = 0; r < nrhs; r++) {
        sla_solve_info tmp;
        sla_solve_info *inf = info ? &info[r] : &tmp;
        st = solve_serial(ctx, S, ib, transpose, b + r * ldb, x + r * ldx, S->opts.use_x0, inf, nt);
        if (st < 0) return st;
        if (st > 0) worst = st;
    }
    return worst == SLA_OK ? sla__ok(ctx, SLA_OK) : worst;
}

sla_status sla_solver_solve(sla_ctx *ctx, sla_solver *S, sla_int ib, sla_int nrhs, const double *b,
                            sla_int ldb, double *x, sla_int ldx, sla_solve_info *info)
{
    return solve_columns(ctx, S, ib, false, nrhs, b, ldb, x, ldx, info);
}

sla_status sla_solver_solve_transpose(sla_ctx *ctx, sla_solver *S, sla_int ib, sla_int nrhs,
                                      const double *b, sla_int ldb, double *x, sla_int ldx,
                                      sla_solve_info *info)
{
    return solve_columns(ctx, S, ib, true, nrhs, b, ldb, x, ldx, info);
}

/* gA[k] -= lambda[row_k] x[col_k] */
static void accumulate_grad(const sla_matrix *A, const double *lambda, const double *x, double *gA,
                            int nt)
{
    const sla_int *rp = A->rowptr;
    const int32_t *ci = A->colind;
    sla_int n = A->nrows;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= SLA_PAR_MIN)
    for (sla_int i = 0; i < n; i++)
        for (sla_int p = rp[i]; p < rp[i + 1]; p++) gA[p] -= lambda[i] * x[ci[p]];
}

/* VJP of one value array with nt threads: lambda = A^-T gx per column.
 * mut: the same solver when the caller holds it exclusively (see
 * solve_serial), NULL for batch items. */
sla_status sla__solver_vjp_one(sla_ctx *ctx, const sla_solver *S, sla_solver *mut, sla_int ib,
                               sla_int nrhs, const double *x, sla_int ldx, const double *gx,
                               sla_int ldgx, double *gb, sla_int ldgb, double *gA,
                               sla_solve_info *info, int nt)
{
    const sla_matrix *A = S->A;
    sla_int n = A->nrows;
    sla_allocator al = sla__ctx_alloc(ctx);
    double *lam_buf = NULL;
    if (!gb && nrhs > 0) {
        lam_buf = sla__malloc(&al, (size_t)n, sizeof(double));
        if (!lam_buf) return sla__error(ctx, SLA_ERR_NOMEM, "out of memory for the adjoint vector");
    }
    if (gA) sla__zero(A->nnz, gA);
    sla_status worst = SLA_OK;
    for (sla_int r = 0; r < nrhs; r++) {
        sla_solve_info tmp;
        sla_solve_info *inf = info ? &info[r] : &tmp;
        double *lam = gb ? gb + r * ldgb : lam_buf;
        sla_status st = check_vector(ctx, n, x + r * ldx, "solution x", r);
        if (!st)
            st = mut ? solve_serial(ctx, mut, ib, true, gx + r * ldgx, lam, false, inf, nt)
                     : sla__solver_solve_one(ctx, S, ib, true, gx + r * ldgx, lam, false, inf, nt, 0);
        if (st < 0) {
            sla__free(&al, lam_buf);
            return st;
        }
        if (st > 0) worst = st;
        if (gA) accumulate_grad(A, lam, x + r * ldx, gA, nt); /* dL/dA_k = -lambda_row x_col */
    }
    sla__free(&al, lam_buf);
    return worst;
}

sla_status sla_solver_solve_vjp(sla_ctx *ctx, sla_solver *S, sla_int ib, sla_int nrhs,
                                const double *x, sla_int ldx, const double *gx, sla_int ldgx,
                                double *gb, sla_int ldgb, double *gA, sla_solve_info *info)
{
    sla_status st = check_call(ctx, S, ib, nrhs, gx, ldgx, x, ldx);
    if (st) return st;
    if (gb && ldgb < S->A->nrows)
        return sla__error(ctx, SLA_ERR_DIMENSION, "leading dimension of gb %lld < n = %lld",
                          (long long)ldgb, (long long)S->A->nrows);
    if (gb && (st = sla__check_extent(ctx, nrhs, ldgb, "nrhs x leading dimension of gb"))) return st;
    st = sla__solver_vjp_one(ctx, S, S, ib, nrhs, x, ldx, gx, ldgx, gb, ldgb, gA, info, sla__threads(ctx));
    return st == SLA_OK ? sla__ok(ctx, SLA_OK) : st;
}

sla_status sla_solver_logdet(sla_ctx *ctx, sla_solver *S, sla_int ib, double *sign,
                             double *logabsdet)
{
    if (!S || !sign || !logabsdet)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_solver_logdet: NULL argument");
    if (S->z) return sla__solver_require_real(ctx, S, "sla_solver_logdet (use sla_zsolver_logdet)");
    if (ib < 0 || ib >= S->A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "value array %lld out of range [0, %lld)",
                          (long long)ib, (long long)S->A->nbatch);
    if (!S->dops)
        return sla__error(ctx, SLA_ERR_UNSUPPORTED,
                          "logdet needs a direct factorization; this solver uses %s "
                          "(create it with method=cholesky, ldlt or lu)",
                          sla_method_name(S->method));
    sla_status st = S->dops->logdet(ctx, S->sym, S->num[ib], sign, logabsdet);
    return st ? st : sla__ok(ctx, SLA_OK);
}

sla_status sla_solve(sla_ctx *ctx, const sla_matrix *A, const sla_solver_options *opts,
                     const double *b, double *x, sla_solve_info *info)
{
    sla_solver *S = NULL;
    sla_status st = sla_solver_create(ctx, A, opts, &S);
    if (st) return st;
    st = sla_solver_solve(ctx, S, 0, 1, b, A->nrows, x, A->nrows, info);
    sla_solver_destroy(&S);
    return st;
}

bool sla__solver_direct(const sla_solver *S, sla_int ib, const sla__direct_ops **ops, void **sym,
                        void **num)
{
    if (!S || !S->dops || ib < 0 || ib >= S->A->nbatch) return false;
    *ops = S->dops;
    *sym = S->sym;
    *num = S->num[ib];
    return true;
}

const sla_matrix *sla__solver_matrix(const sla_solver *S) { return S ? S->A : NULL; }

double sla__solver_factor_nnz(const sla_solver *S) { return S && S->dops ? S->dstats.factor_nnz : 0.0; }

const char *sla__solver_note(const sla_solver *S) { return S ? S->note : ""; }

