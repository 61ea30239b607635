/* sla_solver_hierarchy (precond saamg): the reported levels, rows, nonzeros
 * and complexities against counts the test makes itself from the
 * hierarchy's arrays (rows of A_{l+1} = the columns P_l reaches; the
 * pattern of P_l^T A_l P_l by brute force), kept after a refresh, and the
 * errors (no hierarchy, bad arguments). */
#include "test_util.h"

#include "solvers/saamg.h"
#include "solvers/solver_internal.h"

/* The number of distinct (I, J) with some P_l[i, I] A_l[i, j] P_l[j, J]
 * stored: the pattern of the Galerkin product, by a dense marker per row. */
static sla_int galerkin_nnz(const sa_level *L, sla_int nc)
{
    /* rows of P^T: the fine rows reaching each coarse column */
    sla_int n = L->n, cnt = 0;
    sla_int *deg = calloc((size_t)nc + 1, sizeof *deg);
    for (sla_int k = 0; k < L->prp[n]; k++) deg[L->pci[k] + 1]++;
    for (sla_int I = 0; I < nc; I++) deg[I + 1] += deg[I];
    sla_int *fill = malloc((size_t)nc * sizeof *fill), *rows = malloc((size_t)(L->prp[n] + 1) * sizeof *rows);
    for (sla_int I = 0; I < nc; I++) fill[I] = deg[I];
    for (sla_int i = 0; i < n; i++)
        for (sla_int k = L->prp[i]; k < L->prp[i + 1]; k++) rows[fill[L->pci[k]]++] = i;
    char *mark = calloc((size_t)nc, 1);
    sla_int *list = malloc((size_t)nc * sizeof *list);
    for (sla_int I = 0; I < nc; I++) {
        sla_int m = 0;
        for (sla_int q = deg[I]; q < deg[I + 1]; q++) {
            sla_int i = rows[q];
            for (sla_int k = L->rp[i]; k < L->rp[i + 1]; k++) {
                sla_int j = L->ci[k];
                for (sla_int p = L->prp[j]; p < L->prp[j + 1]; p++)
                    if (!mark[L->pci[p]]) mark[L->pci[p]] = 1, list[m++] = L->pci[p];
            }
        }
        cnt += m;
        for (sla_int t = 0; t < m; t++) mark[list[t]] = 0;
    }
    free(deg), free(fill), free(rows), free(mark), free(list);
    return cnt;
}

/* The reported hierarchy against the preconditioner's arrays and A. */
static void check_against(sla_ctx *ctx, const sla_solver *S, const sla_matrix *A, const char *what)
{
    sla_hierarchy_info h;
    CHECK_OK(ctx, sla_solver_hierarchy(ctx, S, 0, &h));
    const saamg *g = S->pc[0]->fact;
    CHECK(h.levels == g->nlev && h.levels >= 2);
    CHECK(h.rows[0] == sla_matrix_nrows(A) && h.nnz[0] == sla_matrix_nnz(A));
    double sr = 0.0, sn = 0.0;
    for (int l = 0; l < h.levels; l++) {
        const sa_level *L = &g->lev[l];
        sr += (double)h.rows[l], sn += (double)h.nnz[l];
        if (l + 1 == h.levels) {
            CHECK(h.p_nnz[l] == 0);
            break;
        }
        sla_int nc = 0, pn = 0; /* the columns P_l reaches; its entries */
        for (sla_int i = 0; i < L->n; i++)
            for (sla_int k = L->prp[i]; k < L->prp[i + 1]; k++, pn++)
                if (L->pci[k] + 1 > nc) nc = L->pci[k] + 1;
        CHECK(h.rows[l + 1] == nc);
        CHECK(h.p_nnz[l] == pn);
        CHECK(h.nnz[l + 1] == galerkin_nnz(L, nc));
        CHECK(h.rows[l + 1] < h.rows[l]);
    }
    CHECK(fabs(h.operator_complexity - sn / (double)h.nnz[0]) <= 1e-12 * h.operator_complexity);
    CHECK(fabs(h.grid_complexity - sr / (double)h.rows[0]) <= 1e-12 * h.grid_complexity);
    CHECK(h.coarse_direct == (h.rows[h.levels - 1] <= SAAMG_DENSE_MAX));
    printf("  %s: %d levels, rows", what, h.levels);
    for (int l = 0; l < h.levels; l++) printf(" %lld", (long long)h.rows[l]);
    printf(", nnz");
    for (int l = 0; l < h.levels; l++) printf(" %lld", (long long)h.nnz[l]);
    printf(", operator complexity %.3f, grid %.3f\n", h.operator_complexity, h.grid_complexity);
}

/* CG + saamg, the rest default */
static sla_solver_options cg_saamg(void)
{
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    o.precond = SLA_PRECOND_SAAMG;
    return o;
}

static void test_counts(sla_ctx *ctx)
{
    printf("hierarchy statistics against independent counts:\n");
    sla_solver_options o = cg_saamg();
    for (int reuse = 0; reuse < 3; reuse++) {
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 90, &A));
        o.saamg_reuse = reuse;
        sla_solver *S = NULL;
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
        check_against(ctx, S, A, "poisson2d 90^2");
        sla_hierarchy_info h0, h1;
        CHECK_OK(ctx, sla_solver_hierarchy(ctx, S, 0, &h0));
        CHECK_OK(ctx, sla_solver_refresh(ctx, S)); /* the same values: the same hierarchy */
        CHECK_OK(ctx, sla_solver_hierarchy(ctx, S, 0, &h1));
        CHECK(memcmp(&h0, &h1, sizeof h0) == 0);
        sla_solver_destroy(&S);
        sla_matrix_destroy(&A);
    }
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 3, 24, &A));
    sla_solver *S = NULL;
    o.saamg_reuse = 0;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    check_against(ctx, S, A, "poisson3d 24^3");
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);

    sla_int N = 100, nc = (N + 1) * (N + 1);
    double *kappa = malloc((size_t)nc * sizeof *kappa);
    unsigned s = 1;
    for (sla_int c = 0; c < nc; c++) {
        s = s * 1103515245u + 12345u;
        kappa[c] = pow(10.0, (double)(s >> 8) / 8388608.0 - 1.0); /* 10^u, u in [-1, 1) */
    }
    CHECK_OK(ctx, sla_gen_diffusion2d(ctx, N, kappa, &A));
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    check_against(ctx, S, A, "diffusion2d 100^2, kappa 10^u");
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
    free(kappa);

    /* a matrix below the coarsening threshold: one level, complexities 1 */
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 20, &A));
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    sla_hierarchy_info h;
    CHECK_OK(ctx, sla_solver_hierarchy(ctx, S, 0, &h));
    CHECK(h.levels == 1 && h.rows[0] == 400 && h.nnz[0] == sla_matrix_nnz(A) && h.p_nnz[0] == 0);
    CHECK(h.operator_complexity == 1.0 && h.grid_complexity == 1.0 && h.coarse_direct);
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);

    /* a failed refresh (a negative diagonal: not SPD) leaves no hierarchy;
     * the next refresh on good values rebuilds it */
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 50, &A));
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *vals = malloc((size_t)nnz * sizeof *vals);
    memcpy(vals, sla_matrix_values(A, 0), (size_t)nnz * sizeof *vals);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(A), ci, SLA_F64, 1, vals, SLA_BORROW, &B));
    CHECK_OK(ctx, sla_solver_create(ctx, B, &o, &S));
    sla_hierarchy_info h0;
    CHECK_OK(ctx, sla_solver_hierarchy(ctx, S, 0, &h0));
    CHECK(h0.levels == 2);
    const sla_int *rp = sla_matrix_rowptr(B);
    sla_int d = rp[7];
    while (ci[d] != 7) d++;
    vals[d] = -vals[d];
    CHECK(sla_solver_refresh(ctx, S) == SLA_ERR_NOT_SPD);
    CHECK_OK(ctx, sla_solver_hierarchy(ctx, S, 0, &h));
    CHECK(h.levels == 0 && h.operator_complexity == 0.0);
    vals[d] = -vals[d];
    CHECK_OK(ctx, sla_solver_refresh(ctx, S));
    CHECK_OK(ctx, sla_solver_hierarchy(ctx, S, 0, &h));
    CHECK(memcmp(&h, &h0, sizeof h) == 0);
    printf("  a failed refresh: no hierarchy (levels 0); the next refresh: %d levels again\n", h.levels);
    sla_solver_destroy(&S);
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&A);
    free(vals), free(ci);
}

/* saamg_theta: parsing, 0 and 0.08 the default hierarchy, a smaller
 * threshold aggregates across more of a random coefficient's weak
 * couplings (fewer coarse rows) and still converges, refreshes keep it. */
static void test_theta(sla_ctx *ctx)
{
    printf("saamg_theta:\n");
    sla_solver_options o;
    sla_solver_options_default(&o);
    CHECK(o.saamg_theta == 0.0);
    const char *bad[] = {"saamg_theta=1", "saamg_theta=-0.1", "saamg_theta=abc", "saamg_theta=nan"};
    for (int k = 0; k < 4; k++) {
        CHECK(sla_solver_options_parse(ctx, bad[k], &o) == SLA_ERR_ARGUMENT);
        CHECK(strstr(sla_ctx_message(ctx), "saamg_theta") != NULL);
        printf("  %s: %s\n", bad[k], sla_ctx_message(ctx));
    }
    CHECK(sla_solver_options_parse(ctx, "saamg_thta=0.1", &o) == SLA_ERR_ARGUMENT);
    CHECK(strstr(sla_ctx_message(ctx), "saamg_theta") != NULL); /* the nearest key named */
    CHECK_OK(ctx, sla_solver_options_parse(ctx, "saamg_theta=0.01", &o));
    CHECK(o.saamg_theta == 0.01);

    sla_int N = 120, nc = (N + 1) * (N + 1), n = N * N;
    double *kappa = malloc((size_t)nc * sizeof *kappa);
    unsigned s = 3;
    for (sla_int c = 0; c < nc; c++) {
        s = s * 1103515245u + 12345u;
        kappa[c] = pow(10.0, (double)(s >> 8) / 8388608.0 - 1.0);
    }
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_diffusion2d(ctx, N, kappa, &A));
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    for (sla_int i = 0; i < n; i++) b[i] = 1.0;
    const double thetas[] = {0.0, 0.08, 0.01};
    sla_hierarchy_info h[3];
    long long its[3];
    for (int k = 0; k < 3; k++) {
        sla_solver_options_default(&o);
        o.method = SLA_METHOD_CG;
        o.precond = SLA_PRECOND_SAAMG;
        o.saamg_theta = thetas[k];
        o.saamg_reuse = k == 2 ? 1 : 0; /* full: P re-smoothed with the same threshold */
        sla_solver *S = NULL;
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
        check_against(ctx, S, A, k == 2 ? "diffusion2d 120^2, saamg_theta 0.01" : "diffusion2d 120^2");
        CHECK_OK(ctx, sla_solver_hierarchy(ctx, S, 0, &h[k]));
        sla_solve_info inf;
        CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &inf));
        its[k] = (long long)inf.iterations;
        sla_hierarchy_info hr;
        CHECK_OK(ctx, sla_solver_refresh(ctx, S));
        CHECK_OK(ctx, sla_solver_hierarchy(ctx, S, 0, &hr));
        CHECK(memcmp(&hr, &h[k], sizeof hr) == 0);
        CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &inf));
        CHECK(inf.iterations == its[k]);
        printf("  theta %g: %lld iterations\n", thetas[k], its[k]);
        sla_solver_destroy(&S);
    }
    CHECK(memcmp(&h[0], &h[1], sizeof h[0]) == 0 && its[0] == its[1]);
    CHECK(h[2].rows[1] < h[0].rows[1] && h[2].operator_complexity < h[0].operator_complexity);
    CHECK(its[2] <= its[0] + 4);
    sla_matrix_destroy(&A);
    free(kappa), free(b), free(x);
}

static void test_errors(sla_ctx *ctx)
{
    printf("errors:\n");
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 40, &A));
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    o.precond = SLA_PRECOND_SAAMG;
    sla_solver *S = NULL;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    sla_hierarchy_info h;
    h.levels = 7;
    CHECK(sla_solver_hierarchy(ctx, NULL, 0, &h) == SLA_ERR_ARGUMENT && h.levels == 0);
    CHECK(sla_solver_hierarchy(ctx, S, 0, NULL) == SLA_ERR_ARGUMENT);
    CHECK(sla_solver_hierarchy(ctx, S, 1, &h) == SLA_ERR_ARGUMENT);
    CHECK(strstr(sla_ctx_message(ctx), "out of range") != NULL);
    CHECK(sla_solver_hierarchy(ctx, S, -1, &h) == SLA_ERR_ARGUMENT);
    sla_solver_destroy(&S);
    const sla_precond_kind others[] = {SLA_PRECOND_NONE, SLA_PRECOND_JACOBI, SLA_PRECOND_IC0};
    for (int k = 0; k < 3; k++) {
        o.precond = others[k];
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
        h.levels = 7;
        CHECK(sla_solver_hierarchy(ctx, S, 0, &h) == SLA_ERR_UNSUPPORTED && h.levels == 0);
        CHECK(strstr(sla_ctx_message(ctx), sla_precond_name(others[k])) != NULL);
        printf("  %s: %s\n", sla_precond_name(others[k]), sla_ctx_message(ctx));
        sla_solver_destroy(&S);
    }
    if (sla_method_available(SLA_METHOD_CHOLESKY)) {
        o.method = SLA_METHOD_CHOLESKY;
        o.precond = SLA_PRECOND_SAAMG; /* ignored by a direct method */
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
        CHECK(sla_solver_hierarchy(ctx, S, 0, &h) == SLA_ERR_UNSUPPORTED);
        printf("  cholesky: %s\n", sla_ctx_message(ctx));
        sla_solver_destroy(&S);
    }
    sla_matrix_destroy(&A);
}

/* Where each row's diagonal is (sa_level.dpos): right on every level that
 * has it; on level 0 only for rows that vary (none for a grid stencil:
 * its 4 B per unknown would count against the memory); and the V-cycle
 * with the positions gives bit for bit the cycle that scans for them. */
static void check_dpos(const sla_solver *S, bool fine, const char *what)
{
    saamg *g = S->pc[0]->fact;
    CHECK(g->nlev >= 2);
    CHECK((g->lev[0].dpos != NULL) == fine);
    bool right = true;
    for (int l = 0; l < g->nlev; l++) {
        const sa_level *L = &g->lev[l];
        if (l > 0) CHECK(L->dpos != NULL);
        for (sla_int i = 0; L->dpos && i < L->n; i++)
            right = right && L->dpos[i] >= L->rp[i] && L->dpos[i] < L->rp[i + 1] && L->ci[L->dpos[i]] == i;
    }
    CHECK(right);
    sla_int n = g->lev[0].n;
    double *r = malloc((size_t)n * sizeof *r), *z1 = malloc((size_t)n * sizeof *z1);
    double *z2 = malloc((size_t)n * sizeof *z2);
    for (sla_int i = 0; i < n; i++) r[i] = sin(0.37 * (double)i) + 0.5;
    for (int nt = 1; nt <= 2; nt++) {
        CHECK(S->pc[0]->apply(S->pc[0], false, r, z1, nt) == SLA_OK);
        int32_t *keep[SAAMG_MAX_LEV];
        for (int l = 0; l < g->nlev; l++) keep[l] = g->lev[l].dpos, g->lev[l].dpos = NULL;
        CHECK(S->pc[0]->apply(S->pc[0], false, r, z2, nt) == SLA_OK);
        for (int l = 0; l < g->nlev; l++) g->lev[l].dpos = keep[l];
        CHECK(memcmp(z1, z2, (size_t)n * sizeof *z1) == 0);
    }
    printf("  %s: level 0 %s, %d levels, the cycle bit for bit as with scans\n", what,
           fine ? "with positions" : "without (regular rows)", g->nlev);
    free(r), free(z1), free(z2);
}

/* On 2 and 3 threads a stencil's level runs its pre-smoothing and
 * restriction in one pass per block, the rows that read other blocks after
 * every block's sweep: the same residuals as two passes, summed into the
 * coarse right-hand side in another order, so the cycle agrees with the
 * two-pass one to rounding (and is deterministic). */
static void check_onepass(const sla_solver *S, const char *what)
{
    saamg *g = S->pc[0]->fact;
    sla_int n = g->lev[0].n;
    double *r = malloc((size_t)n * sizeof *r), *z1 = malloc((size_t)n * sizeof *z1);
    double *z2 = malloc((size_t)n * sizeof *z2), *z3 = malloc((size_t)n * sizeof *z3);
    for (sla_int i = 0; i < n; i++) r[i] = cos(0.29 * (double)i) + 0.25;
    for (int nt = 2; nt <= 3; nt++) {
        CHECK(S->pc[0]->apply(S->pc[0], false, r, z1, nt) == SLA_OK);
        CHECK(g->split != NULL);
        sla__saamg_split_two_pass(g->split, true);
        CHECK(S->pc[0]->apply(S->pc[0], false, r, z2, nt) == SLA_OK);
        sla__saamg_split_two_pass(g->split, false);
        CHECK(S->pc[0]->apply(S->pc[0], false, r, z3, nt) == SLA_OK);
        CHECK(memcmp(z1, z3, (size_t)n * sizeof *z1) == 0);
        double d = 0.0, m = 0.0;
        for (sla_int i = 0; i < n; i++) {
            d = fmax(d, fabs(z1[i] - z2[i]));
            m = fmax(m, fabs(z2[i]));
        }
        printf("  %s, %d threads: one pass per block against two, max |dz| / max |z| = %.1e\n",
               what, nt, d / m);
        CHECK(m > 0.0 && d <= 1e-13 * m);
    }
    free(r), free(z1), free(z2), free(z3);
}

/* Diagonal positions, and (stencil levels on 2 and 3 threads) the
 * one-pass pre-smoothing against two passes. */
static void test_dpos(sla_ctx *ctx)
{
    printf("diagonal positions, hybrid pre-smoothing in one pass:\n");
    sla_solver_options o = cg_saamg();
    sla_matrix *A = NULL;
    sla_solver *S = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 120, &A));
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    check_dpos(S, false, "poisson2d 120^2");
    check_onepass(S, "poisson2d 120^2");
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_poisson(ctx, 3, 24, &A));
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    if (S) check_onepass(S, "poisson3d 24^3");
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_random(ctx, 20000, 7, SLA_GEN_SPD, 11, &A));
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    check_dpos(S, true, "random SPD 20000 x 7");
    CHECK_OK(ctx, sla_solver_refresh(ctx, S)); /* kept across a refresh (the same pattern) */
    check_dpos(S, true, "random SPD 20000 x 7, refreshed");
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
}

/* P's rows in fixed slots (sa_level.pslots): chosen on 2-D diffusion
 * with a random kappa (P's row lengths without a pattern), not on 2-D
 * Poisson; the cycle is the same bit for bit with the slots and with the
 * loops, on 1, 2 and 3 threads. */
static void check_pslots(const sla_solver *S, bool expect, const char *what)
{
    saamg *g = S->pc[0]->fact;
    sla_int n = g->lev[0].n;
    CHECK(g->nlev > 2 && g->lev[0].pslots == expect);
    double *r = malloc((size_t)n * sizeof *r), *z1 = malloc((size_t)n * sizeof *z1);
    double *z2 = malloc((size_t)n * sizeof *z2);
    bool keep[SAAMG_MAX_LEV];
    int on = 0;
    for (int l = 0; l < g->nlev; l++) on += keep[l] = g->lev[l].pslots;
    for (sla_int i = 0; i < n; i++) r[i] = sin(0.37 * (double)i) + 0.5;
    for (int nt = 1; nt <= 3; nt++) {
        CHECK(S->pc[0]->apply(S->pc[0], false, r, z1, nt) == SLA_OK);
        for (int l = 0; l < g->nlev; l++) g->lev[l].pslots = !keep[l];
        CHECK(S->pc[0]->apply(S->pc[0], false, r, z2, nt) == SLA_OK);
        for (int l = 0; l < g->nlev; l++) g->lev[l].pslots = keep[l];
        CHECK(memcmp(z1, z2, (size_t)n * sizeof *z1) == 0);
    }
    printf("  %s: %d of %d levels in slots, the cycle bit for bit as with the loops\n", what, on,
           g->nlev - 1);
    free(r), free(z1), free(z2);
}

static void test_pslots(sla_ctx *ctx)
{
    printf("P's rows in fixed slots:\n");
    sla_solver_options o = cg_saamg();
    sla_int N = 200;
    double *kappa = malloc((size_t)(N + 1) * (size_t)(N + 1) * sizeof *kappa);
    uint64_t s = 12345;
    for (sla_int c = 0; c < (N + 1) * (N + 1); c++) { /* log-uniform in [0.1, 10] */
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        kappa[c] = pow(10.0, (double)(s >> 11) * (2.0 / 9007199254740992.0) - 1.0);
    }
    sla_matrix *A = NULL;
    sla_solver *S = NULL;
    CHECK_OK(ctx, sla_gen_diffusion2d(ctx, N, kappa, &A));
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    if (S) check_pslots(S, true, "diffusion2d 200^2, random kappa");
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 200, &A));
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    if (S) check_pslots(S, false, "poisson2d 200^2");
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
    free(kappa);
}

/* saamg_reuse = hierarchy: the apply that forms w = A z in its last pass
 * gives the plain apply's z bit for bit, A z and the two sums; CG through
 * it (sla__pc.apply_aw) converges as the plain loop does, forward and
 * transposed, on 1 to 3 threads; where the pass cannot run (irregular
 * rows, another smoother) the plain loop runs. */
static void check_aw(sla_ctx *ctx, const sla_matrix *A, const char *what, bool fused)
{
    sla_solver_options o = cg_saamg(), oi = cg_saamg();
    o.saamg_reuse = 3;
    o.rtol = oi.rtol = 1e-10;
    sla_solver *S = NULL, *Si = NULL;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    CHECK_OK(ctx, sla_solver_create(ctx, A, &oi, &Si));
    if (!S || !Si) goto out;
    const sla__pc *pc = S->pc[0];
    CHECK(pc->apply_aw != NULL && Si->pc[0]->apply_aw == NULL);
    sla_int n = sla_matrix_nrows(A);
    double *r = malloc((size_t)n * sizeof *r), *z1 = malloc((size_t)n * sizeof *z1);
    double *z2 = malloc((size_t)n * sizeof *z2), *w = malloc((size_t)n * sizeof *w);
    double *az = malloc((size_t)n * sizeof *az), *x = malloc((size_t)n * sizeof *x);
    double *x2 = malloc((size_t)n * sizeof *x2);
    tu_fill(r, n, 41);
    for (int nt = 1; nt <= 3; nt++) {
        double dots[2];
        sla_status st = pc->apply_aw(pc, false, r, z1, w, dots, nt);
        CHECK(st == (fused ? SLA_OK : SLA_ERR_UNSUPPORTED));
        /* the restriction through P^T (level 0's trp) against the scatter of
         * the solver without it: the same cycle to rounding, still symmetric */
        CHECK(((const saamg *)pc->fact)->lev[0].trp != NULL);
        CHECK(((const saamg *)Si->pc[0]->fact)->lev[0].trp == NULL);
        CHECK_OK(ctx, pc->apply(pc, false, r, z2, nt));
        CHECK_OK(ctx, Si->pc[0]->apply(Si->pc[0], false, r, az, nt));
        CHECK(tu_reldiff(n, z2, az) <= 1e-12);
        tu_fill(x2, n, 43);
        CHECK_OK(ctx, pc->apply(pc, false, x2, x, nt));
        double ms = 0.0, sm = 0.0, sa = 0.0;
        for (sla_int i = 0; i < n; i++) {
            ms += z2[i] * x2[i];
            sm += r[i] * x[i];
            sa += fabs(z2[i] * x2[i]);
        }
        CHECK(fabs(ms - sm) <= 1e-14 * sa);
        if (nt == 2)
            printf("  %s: the cycle through P^T against the scatter %.1e, |<M r, s> - <r, M s>| / "
                   "sum %.1e\n", what, tu_reldiff(n, z2, az), fabs(ms - sm) / sa);
        if (st == SLA_OK) {
            CHECK(memcmp(z1, z2, (size_t)n * sizeof *z1) == 0);
            CHECK_OK(ctx, sla_matvec(ctx, A, 0, 1, z1, n, az, n));
            double dw = 0.0, mw = 0.0, rz = 0.0, zw = 0.0;
            for (sla_int i = 0; i < n; i++) {
                dw = fmax(dw, fabs(w[i] - az[i]));
                mw = fmax(mw, fabs(az[i]));
                rz += r[i] * z1[i];
                zw += z1[i] * az[i];
            }
            CHECK(dw <= 1e-14 * mw);
            CHECK(fabs(dots[0] - rz) <= 1e-12 * fabs(rz) && fabs(dots[1] - zw) <= 1e-12 * fabs(zw));
            if (nt == 2)
                printf("  %s: |w - A z| / |A z| = %.1e, the sums within %.1e and %.1e\n", what,
                       dw / mw, fabs(dots[0] - rz) / fabs(rz), fabs(dots[1] - zw) / fabs(zw));
        }
        sla_ctx_set_threads(ctx, nt);
        for (int tr = 0; tr < 2; tr++) {
            sla_solve_info info, ii;
            if (tr) {
                CHECK_OK(ctx, sla_solver_solve_transpose(ctx, S, 0, 1, r, n, x, n, &info));
                CHECK_OK(ctx, sla_solver_solve_transpose(ctx, Si, 0, 1, r, n, x2, n, &ii));
            } else {
                CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, r, n, x, n, &info));
                CHECK_OK(ctx, sla_solver_solve(ctx, Si, 0, 1, r, n, x2, n, &ii));
            }
            double rel = tu_relres(A, 0, r, x, tr);
            CHECK(info.converged && rel <= 1e-10 && llabs((long long)(info.iterations - ii.iterations)) <= 1);
            if (nt == 2)
                printf("  %s, %d threads%s: CG %lld iterations (plain loop %lld), residual %.1e\n",
                       what, nt, tr ? ", transposed" : "", (long long)info.iterations,
                       (long long)ii.iterations, rel);
        }
        sla_ctx_set_threads(ctx, 0);
    }
    free(r), free(z1), free(z2), free(w), free(az), free(x), free(x2);
out:
    sla_solver_destroy(&S);
    sla_solver_destroy(&Si);
}

static void test_aw(sla_ctx *ctx)
{
    printf("CG with A z from the cycle (saamg_reuse = hierarchy):\n");
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 150, &A));
    check_aw(ctx, A, "poisson2d 150^2", true);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_aniso2d(ctx, 120, 0.01, &A));
    check_aw(ctx, A, "aniso2d 120^2", true);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_poisson(ctx, 3, 24, &A));
    check_aw(ctx, A, "poisson3d 24^3", true);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 150, &A)); /* float32 values: level 0 read as floats */
    sla_matrix *A32 = tu_to_f32(ctx, A);
    CHECK(A32 != NULL);
    if (A32) check_aw(ctx, A32, "poisson2d 150^2, float32", true);
    sla_matrix_destroy(&A32);
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_random(ctx, 20000, 7, SLA_GEN_SPD, 11, &A));
    check_aw(ctx, A, "random SPD 20000 x 7 (irregular rows)", false);
    sla_matrix_destroy(&A);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    test_counts(ctx);
    test_errors(ctx);
    test_theta(ctx);
    test_dpos(ctx);
    test_pslots(ctx);
    test_aw(ctx);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_saamg_hierarchy");
}
