/* The exact transpose of a BoomerAMG cycle (adjoint solves with a
 * nonsymmetric matrix, or a cycle that is not self-adjoint): the forward
 * cycle recorded at set-up as a sequence of linear steps (smoothing sweeps,
 * restriction, coarse solve, interpolation) from hypre's cycling rules,
 * and run here in reverse, each step transposed, on hypre's hierarchy
 * (A_l, P_l, l1 norms). See hypre_amg.c for why hypre's own
 * HYPRE_BoomerAMGSolveT is not used. */
#ifdef SLA_HAVE_HYPRE
#include "hypre_amg.h"

bool sla__hypre_par_symmetric(const amg *g)
{
    hypre_CSRMatrix *d = hypre_ParCSRMatrixDiag((hypre_ParCSRMatrix *)g->par);
    const HYPRE_Int *ai = hypre_CSRMatrixI(d), *aj = hypre_CSRMatrixJ(d);
    const HYPRE_Complex *ax = hypre_CSRMatrixData(d);
    HYPRE_Int n = hypre_CSRMatrixNumRows(d);
    long long upper = 0, lower = 0; /* every (i, j), j > i, matched and as many j < i */
    for (HYPRE_Int i = 0; i < n; i++)
        for (HYPRE_Int k = ai[i] + 1; k < ai[i + 1]; k++) {
            HYPRE_Int j = aj[k], lo = ai[j] + 1, hi = ai[j + 1] - 1;
            if (j < i) {
                lower++;
                continue;
            }
            upper++;
            while (lo < hi) { /* find (j, i) by bisection */
                HYPRE_Int mid = lo + (hi - lo) / 2;
                if (aj[mid] < i) lo = mid + 1;
                else hi = mid;
            }
            if (lo > hi || aj[lo] != i || ax[lo] != ax[k]) return false;
        }
    return upper == lower;
}

/* ---- the forward cycle's steps (mirrors hypre_BoomerAMGCycle) ----------------------- */

static bool add_step(amg *g, int cap, int op, int level, bool l1, double weight)
{
    if (g->nsteps >= cap) return false;
    g->steps[g->nsteps++] = (step){.op = (unsigned char)op, .l1 = l1, .level = level,
                                   .weight = weight};
    return true;
}

/* The steps of one relaxation of hypre type `relax` on `level`; false when
 * its transpose is not implemented here. */
static bool add_relax(amg *g, int cap, hypre_ParAMGData *d, int relax, int level)
{
    double w = hypre_ParAMGDataRelaxWeight(d) ? hypre_ParAMGDataRelaxWeight(d)[level] : 1.0;
    double om = hypre_ParAMGDataOmega(d) ? hypre_ParAMGDataOmega(d)[level] : 1.0;
    bool gs_ok = w == 1.0 && om == 1.0; /* hypre's unscaled Gauss-Seidel sweeps */
    switch (relax) {
    case 0:
    case 7: return add_step(g, cap, OP_JACOBI, level, false, w);
    case 18: return add_step(g, cap, OP_JACOBI, level, true, w);
    case 3: return gs_ok && add_step(g, cap, OP_GS_FWD, level, false, 1.0);
    case 4: return gs_ok && add_step(g, cap, OP_GS_BWD, level, false, 1.0);
    case 6:
        return gs_ok && add_step(g, cap, OP_GS_FWD, level, false, 1.0) &&
               add_step(g, cap, OP_GS_BWD, level, false, 1.0);
    case 13: return gs_ok && add_step(g, cap, OP_GS_FWD, level, true, 1.0);
    case 14: return gs_ok && add_step(g, cap, OP_GS_BWD, level, true, 1.0);
    case 8:
        return gs_ok && add_step(g, cap, OP_GS_FWD, level, true, 1.0) &&
               add_step(g, cap, OP_GS_BWD, level, true, 1.0);
    case 9:
    case 19:
    case 98:
    case 99:
    case 198:
    case 199: return add_step(g, cap, OP_SOLVE, level, false, 1.0);
    case 16: /* Chebyshev and F-C-F Jacobi: symmetric operators for symmetric A, */
    case 17: /* but not transposed here */
        if (!g->unsupported) g->unsupported = "relaxation types 16 and 17";
        return add_step(g, cap, OP_OPAQUE, level, false, (double)relax);
    default: return false;
    }
}

/* Record the steps of one forward cycle, following hypre's level counters;
 * sets g->unsupported when the transposed cycle cannot be run. */
sla_status sla__hypre_record_steps(sla_ctx *ctx, amg *g)
{
    hypre_ParAMGData *d = (hypre_ParAMGData *)g->solver;
    int nlev = hypre_ParAMGDataNumLevels(d);
    int ctype = hypre_ParAMGDataCycleType(d);
    const HYPRE_Int *sweeps = hypre_ParAMGDataNumGridSweeps(d);
    const HYPRE_Int *rtype = hypre_ParAMGDataGridRelaxType(d);
    g->unsupported = NULL;
    g->nsteps = 0;
    g->recorded = false;
    g->one_level = false;
    if (hypre_ParAMGDataRelaxOrder(d) != 0 || hypre_ParAMGDataGridRelaxPoints(d) ||
        hypre_ParAMGDataFCycle(d) || hypre_ParAMGDataSmoothNumLevels(d) > 0 ||
        hypre_ParAMGDataAdditive(d) >= 0 || hypre_ParAMGDataMultAdditive(d) >= 0 ||
        hypre_ParAMGDataSimple(d) >= 0 || hypre_ParAMGDataRestriction(d) ||
        hypre_ParAMGDataBlockMode(d) || hypre_ParAMGDataPartialCycleCoarsestLevel(d) >= 0 ||
        !sweeps || !rtype || (ctype != 1 && ctype != 2)) {
        g->unsupported = "a cycle variant (C/F relaxation, F-cycle, additive or complex "
                         "smoothers) whose transpose is not implemented";
        return SLA_OK;
    }
    /* Visits: level l is entered ctype^l times at most; each visit has at
     * most 2 + 2 ctype relaxations (symmetric ones count twice) and two
     * transfers per coarse visit. */
    double visits = 0.0, v = 1.0;
    for (int l = 0; l < nlev; l++, v *= ctype) visits += v;
    int maxsw = 1;
    for (int k = 0; k < 4; k++) maxsw = sweeps[k] > maxsw ? sweeps[k] : maxsw;
    double capd = visits * (4.0 + 4.0 * ctype) * 2.0 * maxsw + 8.0;
    if (capd > 1e7) {
        g->unsupported = "a cycle too long to record (W-cycle with many levels)";
        return SLA_OK;
    }
    int cap = (int)capd;
    sla__free(&g->alloc, g->steps);
    g->steps = sla__malloc(&g->alloc, (size_t)cap, sizeof *g->steps);
    if (!g->steps) return sla__error(ctx, SLA_ERR_NOMEM, "precond amg: out of memory");
    if (nlev == 1 && g->n <= SLA_AMG_DENSE_MAX) {
        /* No coarse level (a matrix at or below hypre's coarsest size, or
         * one that does not coarsen): hypre would apply one forward
         * l1-Gauss-Seidel sweep, which is not symmetric, and CG with it
         * stalled on small SPD matrices. The level is the coarsest one, so
         * it is solved exactly, as the coarsest level of any cycle is. */
        add_step(g, cap, OP_SOLVE, 0, false, 1.0);
        g->one_level = true;
        g->recorded = true;
        return SLA_OK;
    }
    if (nlev == 1) { /* no coarsening: hypre smooths with the user relaxation type */
        int rt = hypre_ParAMGDataUserRelaxType(d);
        if (rt == -1) rt = 6;
        for (int s = 0; s < sweeps[0]; s++)
            if (!add_relax(g, cap, d, rt, 0)) {
                g->unsupported = "this relaxation type";
                return SLA_OK;
            }
        g->recorded = true;
        return SLA_OK;
    }
    int counter[64];
    if (nlev > 64) {
        g->unsupported = "more than 64 levels";
        return SLA_OK;
    }
    counter[0] = 1;
    for (int k = 1; k < nlev; k++) counter[k] = ctype;
    int level = 0, param = 1;
    for (;;) {
        for (int s = 0; s < sweeps[param]; s++) {
            if (param == 3 && s > 0 && g->nsteps && g->steps[g->nsteps - 1].op == OP_SOLVE)
                break; /* a repeated exact solve is the same solve */
            if (!add_relax(g, cap, d, rtype[param], level)) {
                g->unsupported = "this relaxation type";
                return SLA_OK;
            }
        }
        if (--counter[level] >= 0 && level != nlev - 1) {
            add_step(g, cap, OP_RESTRICT, level, false, 1.0);
            level++;
            if (counter[level] < ctype) counter[level] = ctype;
            param = level == nlev - 1 ? 3 : 1;
        } else if (level != 0) {
            add_step(g, cap, OP_PROLONG, level - 1, false, 1.0);
            level--;
            param = 2;
        } else {
            break;
        }
    }
    g->recorded = true;
    return SLA_OK;
}

/* Whether the recorded cycle equals its own transpose for symmetric A: the
 * reversed steps, each transposed (forward <-> backward sweeps, restrict
 * <-> interpolate), are the same steps. */
bool sla__hypre_steps_self_adjoint(const amg *g)
{
    if (!g->recorded) return false;
    int m = g->nsteps;
    for (int k = 0; k < m; k++) {
        step a = g->steps[k], b = g->steps[m - 1 - k];
        int bt = b.op == OP_GS_FWD     ? OP_GS_BWD
                 : b.op == OP_GS_BWD   ? OP_GS_FWD
                 : b.op == OP_RESTRICT ? OP_PROLONG
                 : b.op == OP_PROLONG  ? OP_RESTRICT
                                       : b.op;
        if (a.op != bt || a.level != b.level || a.l1 != b.l1 || a.weight != b.weight)
            return false;
    }
    return true;
}

/* ---- set-up ---------------------------------------------------------------------- */

void sla__hypre_tcycle_free(amg *g)
{
    tcycle *t = g->t;
    if (!t) return;
    for (int l = 0; t->lev && l < t->nlev; l++) {
        tlevel *L = &t->lev[l];
        sla__free(&g->alloc, L->inv_diag);
        sla__free(&g->alloc, L->inv_l1);
        sla__free(&g->alloc, L->ubar);
        sla__free(&g->alloc, L->fbar);
        sla__free(&g->alloc, L->w);
        sla__free(&g->alloc, L->e);
    }
    sla__free(&g->alloc, t->lev);
    sla__free(&g->alloc, t->lu);
    sla__free(&g->alloc, t->piv);
    sla__free(&g->alloc, t);
    g->t = NULL;
}
/* y -= A^T x, for the CSR block (ai, aj, ax) of n rows. */
static void sub_at(HYPRE_Int n, const HYPRE_Int *ai, const HYPRE_Int *aj, const double *ax,
                   const double *x, double *y)
{
    for (HYPRE_Int i = 0; i < n; i++) {
        double xi = x[i];
        if (xi == 0.0) continue;
        for (HYPRE_Int k = ai[i]; k < ai[i + 1]; k++) y[aj[k]] -= ax[k] * xi; /* y_j -= a_ij x_i */
    }
}

/* Dense LU with partial pivoting of the coarsest matrix (column major). */
static sla_status coarse_factor(const sla_allocator *al, tcycle *t, const tlevel *L)
{
    HYPRE_Int n = L->n;
    t->nc = n;
    t->lu = sla__calloc(al, (size_t)n * (size_t)n, sizeof *t->lu);
    t->piv = sla__malloc(al, (size_t)n + 1, sizeof *t->piv);
    if (!t->lu || !t->piv) return SLA_ERR_NOMEM;
    double *a = t->lu;
    for (HYPRE_Int i = 0; i < n; i++)
        for (HYPRE_Int k = L->ai[i]; k < L->ai[i + 1]; k++) a[(size_t)L->aj[k] * n + i] += L->ax[k];
    for (HYPRE_Int c = 0; c < n; c++) {
        HYPRE_Int p = c;
        for (HYPRE_Int i = c + 1; i < n; i++)
            if (fabs(a[(size_t)c * n + i]) > fabs(a[(size_t)c * n + p])) p = i;
        t->piv[c] = (int)p;
        if (a[(size_t)c * n + p] == 0.0) return SLA_ERR_SINGULAR;
        if (p != c)
            for (HYPRE_Int j = 0; j < n; j++) {
                double tmp = a[(size_t)j * n + c];
                a[(size_t)j * n + c] = a[(size_t)j * n + p];
                a[(size_t)j * n + p] = tmp;
            }
        double inv = 1.0 / a[(size_t)c * n + c];
        for (HYPRE_Int i = c + 1; i < n; i++) a[(size_t)c * n + i] *= inv; /* l_ic */
        for (HYPRE_Int j = c + 1; j < n; j++) {
            double ucj = a[(size_t)j * n + c];
            if (ucj == 0.0) continue;
            for (HYPRE_Int i = c + 1; i < n; i++)
                a[(size_t)j * n + i] -= a[(size_t)c * n + i] * ucj; /* a_ij -= l_ic u_cj */
        }
    }
    return SLA_OK;
}

/* x = A_c^-1 b in place: P A_c = L U. */
void sla__hypre_coarse_solve(const tcycle *t, double *x)
{
    HYPRE_Int n = t->nc;
    const double *a = t->lu;
    for (HYPRE_Int c = 0; c < n; c++) { /* w = P b, the swaps in factorization order */
        int p = t->piv[c];
        if (p != c) {
            double tmp = x[c];
            x[c] = x[p];
            x[p] = tmp;
        }
    }
    for (HYPRE_Int j = 0; j < n; j++) /* L y = w, unit diagonal, by columns */
        for (HYPRE_Int i = j + 1; i < n; i++) x[i] -= a[(size_t)j * n + i] * x[j];
    for (HYPRE_Int j = n - 1; j >= 0; j--) { /* U x = y, by columns */
        x[j] /= a[(size_t)j * n + j];
        for (HYPRE_Int i = 0; i < j; i++) x[i] -= a[(size_t)j * n + i] * x[j];
    }
}

/* x = A_c^-T b in place: P A_c = L U, so A_c^T = U^T L^T P. */
void sla__hypre_coarse_solve_t(const tcycle *t, double *x)
{
    HYPRE_Int n = t->nc;
    const double *a = t->lu;
    for (HYPRE_Int i = 0; i < n; i++) { /* U^T y = b, forward */
        double s = x[i];
        for (HYPRE_Int k = 0; k < i; k++) s -= a[(size_t)i * n + k] * x[k];
        x[i] = s / a[(size_t)i * n + i];
    }
    for (HYPRE_Int i = n - 1; i >= 0; i--) { /* L^T w = y, backward, unit diagonal */
        double s = x[i];
        for (HYPRE_Int k = i + 1; k < n; k++) s -= a[(size_t)i * n + k] * x[k];
        x[i] = s;
    }
    for (HYPRE_Int c = n - 1; c >= 0; c--) { /* x = P^T w */
        int p = t->piv[c];
        if (p != c) {
            double tmp = x[c];
            x[c] = x[p];
            x[p] = tmp;
        }
    }
}

/* Build the transposed cycle's data from the hierarchy. Lock held. */
sla_status sla__hypre_tcycle_build(amg *g)
{
    if (g->unsupported) return SLA_ERR_UNSUPPORTED;
    hypre_ParAMGData *d = (hypre_ParAMGData *)g->solver;
    int nlev = hypre_ParAMGDataNumLevels(d);
    hypre_ParCSRMatrix **Aa = hypre_ParAMGDataAArray(d);
    hypre_ParCSRMatrix **Pa = hypre_ParAMGDataPArray(d);
    hypre_Vector **l1 = hypre_ParAMGDataL1Norms(d);
    tcycle *t = sla__calloc(&g->alloc, 1, sizeof *t);
    if (!t) return SLA_ERR_NOMEM;
    g->t = t;
    t->nlev = nlev;
    t->lev = sla__calloc(&g->alloc, (size_t)nlev, sizeof *t->lev);
    if (!t->lev) return SLA_ERR_NOMEM;
    bool need_solve = false;
    for (int k = 0; k < g->nsteps; k++) need_solve = need_solve || g->steps[k].op == OP_SOLVE;
    for (int l = 0; l < nlev; l++) {
        tlevel *L = &t->lev[l];
        hypre_CSRMatrix *ad = hypre_ParCSRMatrixDiag(Aa[l]);
        if (hypre_CSRMatrixNumNonzeros(hypre_ParCSRMatrixOffd(Aa[l])) > 0)
            return SLA_ERR_UNSUPPORTED;
        L->n = hypre_CSRMatrixNumRows(ad);
        L->ai = hypre_CSRMatrixI(ad);
        L->aj = hypre_CSRMatrixJ(ad);
        L->ax = hypre_CSRMatrixData(ad);
        if (l < nlev - 1) {
            hypre_CSRMatrix *pd = hypre_ParCSRMatrixDiag(Pa[l]);
            if (hypre_CSRMatrixNumNonzeros(hypre_ParCSRMatrixOffd(Pa[l])) > 0)
                return SLA_ERR_UNSUPPORTED;
            L->pi = hypre_CSRMatrixI(pd);
            L->pj = hypre_CSRMatrixJ(pd);
            L->px = hypre_CSRMatrixData(pd);
        }
        size_t n = (size_t)L->n + 1;
        L->inv_diag = sla__calloc(&g->alloc, n, sizeof(double));
        L->ubar = sla__calloc(&g->alloc, n, sizeof(double));
        L->fbar = sla__calloc(&g->alloc, n, sizeof(double));
        L->w = sla__calloc(&g->alloc, n, sizeof(double));
        L->e = sla__calloc(&g->alloc, n, sizeof(double));
        if (!L->inv_diag || !L->ubar || !L->fbar || !L->w || !L->e) return SLA_ERR_NOMEM;
        for (HYPRE_Int i = 0; i < L->n; i++) {
            /* hypre keeps the diagonal first in each row and skips zero pivots */
            double a = (L->ai[i] < L->ai[i + 1] && L->aj[L->ai[i]] == i) ? L->ax[L->ai[i]] : 0.0;
            L->inv_diag[i] = a != 0.0 ? 1.0 / a : 0.0;
        }
        if (l1 && l1[l] && hypre_VectorData(l1[l])) {
            const double *nrm = hypre_VectorData(l1[l]);
            L->inv_l1 = sla__malloc(&g->alloc, n, sizeof(double));
            if (!L->inv_l1) return SLA_ERR_NOMEM;
            for (HYPRE_Int i = 0; i < L->n; i++) L->inv_l1[i] = nrm[i] != 0.0 ? 1.0 / nrm[i] : 0.0;
        }
    }
    if (need_solve) return coarse_factor(&g->alloc, t, &t->lev[nlev - 1]);
    return SLA_OK;
}

/* e = K^T v for the sweep of step s on level L (e may not alias v; v is
 * consumed). Forward Gauss-Seidel K = (Delta + L)^-1, with Delta the
 * diagonal (or l1 norms); its transpose sweeps the rows backward,
 * scattering by columns; backward Gauss-Seidel the other way round. */
static void sweep_t(const tlevel *L, const step *s, double *v, double *e)
{
    const double *inv = (s->l1 && L->inv_l1) ? L->inv_l1 : L->inv_diag;
    HYPRE_Int n = L->n;
    if (s->op == OP_JACOBI) {
        for (HYPRE_Int i = 0; i < n; i++) e[i] = s->weight * inv[i] * v[i]; /* K = w Delta^-1 */
        return;
    }
    if (s->op == OP_GS_FWD) {
        for (HYPRE_Int i = n - 1; i >= 0; i--) {
            double ei = inv[i] * v[i]; /* v_i final: rows below already scattered */
            e[i] = ei;
            if (ei == 0.0) continue;
            for (HYPRE_Int k = L->ai[i]; k < L->ai[i + 1]; k++)
                if (L->aj[k] < i) v[L->aj[k]] -= L->ax[k] * ei; /* v_j -= a_ij e_i, j < i */
        }
    } else {
        for (HYPRE_Int i = 0; i < n; i++) {
            double ei = inv[i] * v[i];
            e[i] = ei;
            if (ei == 0.0) continue;
            for (HYPRE_Int k = L->ai[i]; k < L->ai[i + 1]; k++)
                if (L->aj[k] > i) v[L->aj[k]] -= L->ax[k] * ei; /* v_j -= a_ij e_i, j > i */
        }
    }
}

/* z = M^-T r: the forward cycle maps (f_0 = r, u = 0) to z = u_0 through
 * linear steps; its transpose runs the steps backward on the adjoints
 * (ubar, fbar) from ubar_0 = r and returns fbar_0:
 *   smoothing    u_l += K (f_l - A_l u_l)   fbar_l += K^T ubar_l, ubar_l -= A_l^T K^T ubar_l
 *   restriction  f_c = P^T (f_l - A_l u_l)  fbar_l += P fbar_c, ubar_l -= A_l^T P fbar_c
 *                u_c = 0                    (then fbar_c = ubar_c = 0)
 *   coarse solve u_c = A_c^-1 f_c           fbar_c += A_c^-T ubar_c, ubar_c = 0
 *   interpolate  u_l += P u_c               ubar_c += P^T ubar_l */
sla_status sla__hypre_cycle_transposed(amg *g, const double *r, double *z)
{
    if (!g->t) {
        sla_status st = sla__hypre_tcycle_build(g);
        if (st) {
            sla__hypre_tcycle_free(g);
            return st;
        }
    }
    tcycle *t = g->t;
    for (int l = 0; l < t->nlev; l++) {
        sla__zero(t->lev[l].n, t->lev[l].ubar);
        sla__zero(t->lev[l].n, t->lev[l].fbar);
    }
    sla__copy(g->n, r, t->lev[0].ubar);
    for (int k = g->nsteps - 1; k >= 0; k--) {
        const step *s = &g->steps[k];
        tlevel *L = &t->lev[s->level];
        HYPRE_Int n = L->n;
        switch (s->op) {
        case OP_JACOBI:
        case OP_GS_FWD:
        case OP_GS_BWD:
            sla__copy(n, L->ubar, L->w);
            sweep_t(L, s, L->w, L->e);                          /* e = K^T ubar */
            for (HYPRE_Int i = 0; i < n; i++) L->fbar[i] += L->e[i];
            sub_at(n, L->ai, L->aj, L->ax, L->e, L->ubar);    /* ubar -= A^T e */
            break;
        case OP_SOLVE:
            sla__copy(n, L->ubar, L->e);
            sla__hypre_coarse_solve_t(t, L->e);                           /* e = A_c^-T ubar */
            for (HYPRE_Int i = 0; i < n; i++) L->fbar[i] += L->e[i];
            sla__zero(n, L->ubar);
            break;
        case OP_RESTRICT: {
            tlevel *C = &t->lev[s->level + 1];
            for (HYPRE_Int i = 0; i < n; i++) { /* e = P fbar_c */
                double acc = 0.0;
                for (HYPRE_Int q = L->pi[i]; q < L->pi[i + 1]; q++)
                    acc += L->px[q] * C->fbar[L->pj[q]];
                L->e[i] = acc;
                L->fbar[i] += acc;
            }
            sub_at(n, L->ai, L->aj, L->ax, L->e, L->ubar);
            sla__zero(C->n, C->fbar);
            sla__zero(C->n, C->ubar);
            break;
        }
        case OP_PROLONG: {
            tlevel *C = &t->lev[s->level + 1];
            for (HYPRE_Int i = 0; i < n; i++) { /* ubar_c += P^T ubar_l */
                double ui = L->ubar[i];
                if (ui == 0.0) continue;
                for (HYPRE_Int q = L->pi[i]; q < L->pi[i + 1]; q++)
                    C->ubar[L->pj[q]] += L->px[q] * ui;
            }
            break;
        }
        }
    }
    sla__copy(g->n, t->lev[0].fbar, z);
    return SLA_OK;
}

#endif /* SLA_HAVE_HYPRE */
