/* Reliability: the allocation-failure sweep over every public entry point
 * (extending test_errors.c's eight scenarios), sizes that would overflow,
 * oversized direct requests, the reciprocal condition estimate of direct
 * solves, and time / iteration budgets.
 *
 * The sweep: a scenario runs once with a counting allocator to count its
 * allocations K; then for k = 0..K-1 it runs again with allocation k
 * refused. Each run must return SLA_ERR_NOMEM (with "memory" in the
 * message) or succeed, and leave no allocation live. Third-party libraries
 * (CHOLMOD, UMFPACK, KLU, SuperLU, hypre, OpenBLAS) allocate through their
 * own allocators, which this sweep cannot fail; their leaks on sla's error
 * paths are what the ASan/LeakSanitizer run of this test checks. */
#include "test_util.h"

#include <stdint.h>
#include <time.h>
#include <unistd.h>

static sla_ctx *ctx;
static char tmp_mtx[256];
static long total_points = 0;

typedef sla_status (*scenario)(sla_ctx *c, const void *arg);

#define TRY(call)                                                                        \
    do {                                                                                 \
        st = (call);                                                                     \
        if (st < 0) goto done;                                                           \
    } while (0)

/* ---- scenarios ---------------------------------------------------------- */

/* matvec and its VJPs, batched too; properties, dense copy, value updates */
static sla_status sc_ops(sla_ctx *c, const void *arg)
{
    (void)arg;
    sla_matrix *A = NULL, *B = NULL;
    sla_status st;
    double y[2 * 40], x[2 * 40], g[2 * 400], D[40 * 40];
    for (int i = 0; i < 80; i++) x[i] = 1.0 + (i % 5);
    TRY(sla_gen_convdiff2d(c, 6, 1.0, 0.5, &A)); /* n = 36 */
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    TRY(sla_matvec(c, A, 0, 2, x, n, y, n));
    TRY(sla_matvec_transpose(c, A, 0, 2, x, n, y, n));
    TRY(sla_matvec_vjp(c, A, 0, 2, x, n, x, n, y, n, g));
    sla_matrix_props pr;
    TRY(sla_matrix_properties(c, A, 0, 1e-12, &pr));
    TRY(sla_matrix_to_dense(c, A, 0, D, n));
    TRY(sla_matrix_set_values(c, A, 0, sla_matrix_values(A, 0)));
    TRY(sla_matrix_check_values(c, A, -1));
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    double *vv = malloc(2 * (size_t)nnz * sizeof *vv);
    sla_matrix_get_colind(A, ci);
    memcpy(vv, sla_matrix_values(A, 0), (size_t)nnz * sizeof *vv);
    memcpy(vv + nnz, sla_matrix_values(A, 0), (size_t)nnz * sizeof *vv);
    st = sla_matrix_from_csr(c, n, n, sla_matrix_rowptr(A), ci, SLA_F64, 2, vv, SLA_COPY, &B);
    free(ci);
    free(vv);
    if (st < 0) goto done;
    TRY(sla_matvec_batch(c, B, x, y));
    TRY(sla_matvec_batch_vjp(c, B, x, y, x, g));
done:
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&B);
    return st;
}

/* generators not in test_errors, and their VJPs */
static sla_status sc_gen(sla_ctx *c, const void *arg)
{
    (void)arg;
    sla_matrix *A = NULL, *B = NULL, *C = NULL;
    sla_status st;
    double kappa[25], vals[200], dk[25];
    for (int i = 0; i < 25; i++) kappa[i] = 1.0 + 0.05 * i;
    TRY(sla_gen_aniso2d(c, 4, 0.01, &A));
    TRY(sla_gen_poisson(c, 1, 7, &B));
    TRY(sla_gen_random(c, 30, 4, SLA_GEN_GENERAL, 7, &C));
    TRY(sla_gen_diffusion2d_values(c, 4, kappa, vals));
    TRY(sla_gen_diffusion2d_vjp(c, 4, vals, dk));
done:
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&C);
    return st;
}

/* Matrix Market: from memory, from a stream, gradient files */
static sla_status sc_mm_more(sla_ctx *c, const void *arg)
{
    (void)arg;
    static const char sym[] = "%%MatrixMarket matrix coordinate real symmetric\n"
                              "4 4 6\n1 1 4\n2 1 -1\n2 2 4\n3 2 -1\n3 3 4\n4 4 2\n";
    static const char pat[] = "%%MatrixMarket matrix coordinate pattern general\n"
                              "3 3 3\n1 2\n2 3\n3 1\n";
    sla_matrix *A = NULL, *B = NULL, *C = NULL;
    sla_status st;
    TRY(sla_mm_read_buffer(c, sym, sizeof sym - 1, SLA_F64, &A));
    TRY(sla_mm_read_buffer(c, pat, sizeof pat - 1, SLA_F32, &B));
    double gg[16];
    for (int i = 0; i < 16; i++) gg[i] = 0.25 * i;
    TRY(sla_mm_write_pattern_values(c, tmp_mtx, A, gg));
    FILE *f = fopen(tmp_mtx, "r");
    if (!f) return SLA_ERR_IO;
    st = sla_mm_read_stream(c, f, "stream", SLA_F64, &C);
    fclose(f);
done:
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&C);
    return st;
}

typedef struct {
    sla_method m;
    sla_precond_kind p;
    bool sym;
} solve_case;

/* Every solver entry point for one method: create, solve (2 columns),
 * transpose, VJP, refresh after new values, batch, batch VJP, list, list
 * VJP, logdet (direct), sla_solve. */
static sla_status sc_solver(sla_ctx *c, const void *arg)
{
    const solve_case *sc = arg;
    sla_matrix *A = NULL, *B = NULL;
    sla_solver *S = NULL, *T = NULL;
    double *b = NULL, *x = NULL, *g = NULL, *gb = NULL, *vv = NULL;
    sla_int *ci = NULL;
    sla_status st;
    if (sc->sym) TRY(sla_gen_poisson(c, 2, 5, &A));
    else TRY(sla_gen_convdiff2d(c, 5, 3.0, 1.0, &A));
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    b = malloc(2 * (size_t)n * sizeof *b);
    x = malloc(2 * (size_t)n * sizeof *x);
    gb = malloc(2 * (size_t)n * sizeof *gb);
    g = malloc(2 * (size_t)nnz * sizeof *g);
    vv = malloc(2 * (size_t)nnz * sizeof *vv);
    ci = malloc((size_t)nnz * sizeof *ci);
    for (sla_int i = 0; i < 2 * n; i++) b[i] = 1.0 + (double)(i % 7);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = sc->m;
    o.precond = sc->p;
    TRY(sla_solver_create(c, A, &o, &S));
    TRY(sla_solver_solve(c, S, 0, 2, b, n, x, n, NULL));
    TRY(sla_solver_solve_transpose(c, S, 0, 2, b, n, x, n, NULL));
    TRY(sla_solver_solve_vjp(c, S, 0, 2, x, n, b, n, gb, n, g, NULL));
    TRY(sla_solver_solve_vjp(c, S, 0, 1, x, n, b, n, NULL, n, g, NULL));
    TRY(sla_solver_refresh(c, S));
    if (sla_solver_method(S) >= SLA_METHOD_CHOLESKY) {
        double sg, ld;
        TRY(sla_solver_logdet(c, S, 0, &sg, &ld));
    }
    sla_matrix_get_colind(A, ci);
    memcpy(vv, sla_matrix_values(A, 0), (size_t)nnz * sizeof *vv);
    for (sla_int k = 0; k < nnz; k++) vv[nnz + k] = 1.5 * vv[k];
    TRY(sla_matrix_from_csr(c, n, n, sla_matrix_rowptr(A), ci, SLA_F64, 2, vv, SLA_BORROW, &B));
    TRY(sla_solver_create(c, B, &o, &T));
    TRY(sla_solver_solve_batch(c, T, b, x, NULL));
    TRY(sla_solver_solve_batch_vjp(c, T, x, b, gb, g, NULL));
    TRY(sla_solver_refresh(c, T));
    sla_solver *L[2] = {S, S};
    const double *bl[2] = {b, b + n};
    double *xl[2] = {x, x + n};
    const double *xc[2] = {x, x + n};
    double *gbl[2] = {gb, gb + n}, *gAl[2] = {g, g + nnz};
    TRY(sla_solver_solve_list(c, 2, L, bl, xl, NULL));
    TRY(sla_solver_solve_list_vjp(c, 2, L, xc, bl, gbl, gAl, NULL));
    TRY(sla_solve(c, A, &o, b, x, NULL));
done:
    sla_solver_destroy(&S);
    sla_solver_destroy(&T);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&B);
    free(b);
    free(x);
    free(g);
    free(gb);
    free(vv);
    free(ci);
    return st;
}

/* method=auto's mid-solve switch: a high-contrast diffusion matrix for
 * which the cost model predicts CG, which then runs past its iteration
 * budget and switches the solver to a Cholesky factorization. */
static void contrast_kappa(int N, double *k)
{
    unsigned s = 1;
    for (int i = 0; i < (N + 1) * (N + 1); i++) {
        s = s * 1103515245u + 12345u;
        k[i] = exp(8.0 * ((double)((s >> 8) % 1000) / 500.0 - 1.0));
    }
}

static sla_status sc_auto_switch(sla_ctx *c, const void *arg)
{
    const char **note = (const char **)arg;
    enum { N = 10 };
    double kappa[(N + 1) * (N + 1)], b[N * N], x[N * N], g[N * N];
    contrast_kappa(N, kappa);
    for (int i = 0; i < N * N; i++) b[i] = 1.0;
    sla_matrix *A = NULL;
    sla_solver *S = NULL;
    sla_status st;
    static sla_solve_info info;
    TRY(sla_gen_diffusion2d(c, N, kappa, &A));
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.auto_direct_seconds = 0.0; /* the cost model alone: CG first */
    TRY(sla_solver_create(c, A, &o, &S));
    TRY(sla_solver_solve(c, S, 0, 1, b, N * N, x, N * N, &info));
    TRY(sla_solver_solve_vjp(c, S, 0, 1, x, N * N, b, N * N, g, N * N, NULL, NULL));
    if (note) *note = info.note;
done:
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
    return st;
}

static void sweep(const char *name, scenario f, const void *arg, int nthreads)
{
    const char *only = getenv("SLA_SWEEP_ONLY"); /* debugging: one scenario */
    if (only && !strstr(name, only)) return;
    counter cnt = {0, -1, 0, 0};
    sla_allocator a = {count_malloc, count_free, &cnt};
    sla_ctx *c = NULL;
    sla_ctx_create(&c);
    sla_ctx_set_allocator(c, &a);
    sla_ctx_set_threads(c, nthreads);
    sla_status st = f(c, arg); /* a clean run counts the allocations */
    if (st < 0) fprintf(stderr, "  %s: clean run failed: %s\n", name, sla_ctx_message(c));
    CHECK(st >= 0);
    CHECK(cnt.live == 0);
    long total = cnt.calls, points = 0, bad = 0;
    for (long k = 0; k < total; k++) {
        cnt.calls = 0;
        cnt.fail_at = k;
        cnt.failures = 0;
        st = f(c, arg);
        if (cnt.failures == 0) continue; /* this path allocated less */
        points++;
        bool ok = st == SLA_ERR_NOMEM && cnt.live == 0 && strstr(sla_ctx_message(c), "memory");
        if (!ok && bad++ < 5)
            fprintf(stderr, "  %s: failing allocation %ld -> %s, %ld live: %s\n", name, k,
                    sla_status_name(st), cnt.live, sla_ctx_message(c));
        CHECK(st == SLA_ERR_NOMEM);
        CHECK(cnt.live == 0);
        CHECK(strstr(sla_ctx_message(c), "memory") != NULL);
        cnt.live = 0; /* report each leak once */
    }
    printf("  %-28s %4ld allocations, %4ld failure points checked\n", name, total, points);
    total_points += points;
    CHECK(points > 0);
    sla_ctx_destroy(&c);
}

static void test_alloc_sweep(void)
{
    sweep("matvec/vjp/batch/props", sc_ops, NULL, 1);
    sweep("generators/vjp", sc_gen, NULL, 1);
    sweep("mm buffer/stream/pattern", sc_mm_more, NULL, 1);
    if (sla_method_available(SLA_METHOD_CHOLESKY)) {
        const char *note = NULL;
        sla_ctx *c1 = NULL;
        sla_ctx_create(&c1);
        sla_ctx_set_threads(c1, 1); /* the cost model depends on the thread count */
        CHECK(sc_auto_switch(c1, &note) == SLA_OK);
        sla_ctx_destroy(&c1);
        if (note) printf("  auto switch scenario: %.90s\n", note);
        /* the scenario really takes the switch */
        CHECK(note && strstr(note, "switched to cholesky") != NULL);
        sweep("auto: cg -> cholesky switch", sc_auto_switch, NULL, 1);
    }
    static const struct {
        const char *name;
        solve_case c;
        int nt;
    } cases[] = {
        {"cg+jacobi", {SLA_METHOD_CG, SLA_PRECOND_JACOBI, true}, 1},
        {"cg+ic0 (2 threads)", {SLA_METHOD_CG, SLA_PRECOND_IC0, true}, 2},
        {"minres+ssor", {SLA_METHOD_MINRES, SLA_PRECOND_SSOR, true}, 1},
        {"gmres+ilu0 (2 threads)", {SLA_METHOD_GMRES, SLA_PRECOND_ILU0, false}, 2},
        {"bicgstab+none", {SLA_METHOD_BICGSTAB, SLA_PRECOND_NONE, false}, 1},
        {"auto (sym)", {SLA_METHOD_AUTO, SLA_PRECOND_NONE, true}, 1},
        {"auto (nonsym, 2 threads)", {SLA_METHOD_AUTO, SLA_PRECOND_NONE, false}, 2},
        {"cholesky", {SLA_METHOD_CHOLESKY, SLA_PRECOND_NONE, true}, 1},
        {"ldlt (2 threads)", {SLA_METHOD_LDLT, SLA_PRECOND_NONE, true}, 2},
        {"lu/umfpack", {SLA_METHOD_LU, SLA_PRECOND_NONE, false}, 1},
        {"klu (2 threads)", {SLA_METHOD_KLU, SLA_PRECOND_NONE, false}, 2},
        {"superlu", {SLA_METHOD_SUPERLU, SLA_PRECOND_NONE, false}, 1},
        {"cg+amg", {SLA_METHOD_CG, SLA_PRECOND_AMG, true}, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!sla_method_available(cases[i].c.m)) {
            printf("  %-28s skipped: not in this build\n", cases[i].name);
            continue;
        }
        if (cases[i].c.p == SLA_PRECOND_AMG) {
            /* hypre may be missing from the build */
            sla_matrix *P = NULL;
            sla_solver *S = NULL;
            sla_solver_options o;
            sla_solver_options_default(&o);
            o.method = SLA_METHOD_CG;
            o.precond = SLA_PRECOND_AMG;
            sla_gen_poisson(NULL, 2, 4, &P);
            sla_status st = sla_solver_create(NULL, P, &o, &S);
            sla_solver_destroy(&S);
            sla_matrix_destroy(&P);
            if (st == SLA_ERR_UNAVAILABLE) {
                printf("  %-28s skipped: hypre not in this build\n", cases[i].name);
                continue;
            }
        }
        sweep(cases[i].name, sc_solver, &cases[i].c, cases[i].nt);
    }
    printf("  allocation-failure points checked in total: %ld\n", total_points);
}

/* ---- sizes that would overflow ------------------------------------------ */

static void test_limits(void)
{
    sla_int r[2] = {0, 1}, cidx[2] = {0, 1};
    double v[2] = {1, 2};
    sla_matrix *A = NULL;
    CHECK_ERR(ctx, sla_matrix_from_coo(ctx, 2, 3000000000LL, 2, r, cidx, SLA_F64, 1, v, NULL, &A),
              SLA_ERR_TOO_LARGE, "32-bit");
    CHECK(A == NULL);
    CHECK_ERR(ctx, sla_matrix_from_coo(ctx, 2, 2, 1LL << 40, r, cidx, SLA_F64, 1LL << 30, v, NULL, &A),
              SLA_ERR_TOO_LARGE, "overflows");
    sla_status st;
    sla_int rp[3] = {0, 1, 2};
    CHECK_ERR(ctx, sla_matrix_from_csr(ctx, 2, 1LL << 33, rp, cidx, SLA_F64, 1, v, SLA_COPY, &A),
              SLA_ERR_TOO_LARGE, "32-bit");
    CHECK_ERR(ctx, sla_matrix_from_csr(ctx, 2, 2, rp, cidx, SLA_F64, INT64_MAX / 2, v, SLA_BORROW, &A),
              SLA_ERR_TOO_LARGE, "overflows");
    CHECK_ERR(ctx, sla_gen_poisson(ctx, 3, 2000000, &A), SLA_ERR_TOO_LARGE, "");
    /* per_row is capped at n - 1: 1e12 entries, refused by the allocator */
    st = sla_gen_random(ctx, 1000000, 10000000000000LL, SLA_GEN_GENERAL, 1, &A);
    CHECK((st == SLA_ERR_NOMEM || st == SLA_ERR_TOO_LARGE) && A == NULL);
    static const char big_dims[] = "%%MatrixMarket matrix coordinate real general\n3000000000 3 1\n1 1 1\n";
    CHECK_ERR(ctx, sla_mm_read_buffer(ctx, big_dims, sizeof big_dims - 1, SLA_F64, &A),
              SLA_ERR_TOO_LARGE, ":2:");
    static const char big_nnz[] = "%%MatrixMarket matrix coordinate real general\n3 3 1000000000000000000\n1 1 1\n";
    st = sla_mm_read_buffer(ctx, big_nnz, sizeof big_nnz - 1, SLA_F64, &A);
    CHECK(st == SLA_ERR_TOO_LARGE || st == SLA_ERR_FORMAT);
    CHECK(A == NULL);

    /* n x nrhs and leading dimension x nrhs at the solve and product entry points */
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 4, &A));
    sla_int n = 16, huge = INT64_MAX / 8 / n + 1;
    double b[16], x[16];
    for (int i = 0; i < 16; i++) b[i] = 1.0;
    sla_solver *S = NULL;
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    CHECK_ERR(ctx, sla_solver_solve(ctx, S, 0, huge, b, n, x, n, NULL), SLA_ERR_TOO_LARGE, "nrhs");
    CHECK_ERR(ctx, sla_solver_solve_transpose(ctx, S, 0, 2, b, INT64_MAX / 4, x, n, NULL),
              SLA_ERR_TOO_LARGE, "leading dimension");
    CHECK_ERR(ctx, sla_solver_solve_vjp(ctx, S, 0, huge, x, n, b, n, NULL, n, NULL, NULL),
              SLA_ERR_TOO_LARGE, "nrhs");
    CHECK_ERR(ctx, sla_matvec(ctx, A, 0, huge, b, n, x, n), SLA_ERR_TOO_LARGE, "nrhs");
    CHECK_ERR(ctx, sla_matvec_vjp(ctx, A, 0, 3, b, INT64_MAX / 16, b, n, NULL, n, NULL),
              SLA_ERR_TOO_LARGE, "leading dimension");
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
}

/* ---- direct requests that do not fit ---------------------------------- */

static void test_oversized_direct(void)
{
    /* 3D Poisson, 40^3 unknowns, natural ordering: a band of 1600, about
     * 1e8 factor entries (~1 GB) predicted by the symbolic analysis, far
     * above a 200 MB limit: refused before any numeric work */
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 3, 40, &A));
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    for (sla_int i = 0; i < n; i++) b[i] = 1.0;
    const sla_method ms[] = {SLA_METHOD_CHOLESKY, SLA_METHOD_LDLT, SLA_METHOD_LU, SLA_METHOD_KLU,
                             SLA_METHOD_SUPERLU};
    for (size_t k = 0; k < sizeof ms / sizeof ms[0]; k++) {
        if (!sla_method_available(ms[k])) continue;
        sla_solver_options o;
        sla_solver_options_default(&o);
        o.method = ms[k];
        o.ordering = SLA_ORDER_NATURAL;
        o.memory_limit = 2e8;
        sla_solver *S = NULL;
        double t0 = (double)clock() / CLOCKS_PER_SEC;
        sla_status st = sla_solver_create(ctx, A, &o, &S);
        double t = (double)clock() / CLOCKS_PER_SEC - t0;
        if (st != SLA_ERR_NOMEM)
            fprintf(stderr, "  %s: %s: %s\n", sla_method_name(ms[k]), sla_status_name(st),
                    sla_ctx_message(ctx));
        CHECK(st == SLA_ERR_NOMEM && S == NULL);
        CHECK(strstr(sla_ctx_message(ctx), "GB") && strstr(sla_ctx_message(ctx), "memory_limit"));
        printf("  %s natural on 3D Poisson n=%lld: refused in %.2f s CPU: %s\n", sla_method_name(ms[k]),
               (long long)n, t, sla_ctx_message(ctx));
        sla_solver_destroy(&S);
    }
    /* auto with the same limit goes iterative, and says why */
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.memory_limit = 2e5;
    sla_solve_info info;
    CHECK_OK(ctx, sla_solve(ctx, A, &o, b, x, &info));
    CHECK(strcmp(info.backend, "krylov") == 0 && info.rcond == -1.0);
    free(b);
    free(x);
    sla_matrix_destroy(&A);
}

/* ---- reciprocal condition estimates of direct solves ---------------------- */

static double dense_rcond(const sla_matrix *A)
{
    lapack_int n = (lapack_int)sla_matrix_nrows(A);
    double *D = malloc((size_t)n * n * sizeof *D);
    lapack_int *ipiv = malloc((size_t)n * sizeof *ipiv);
    sla_matrix_to_dense(NULL, A, 0, D, n);
    double anorm = LAPACKE_dlange(LAPACK_COL_MAJOR, '1', n, n, D, n), rc = -1;
    LAPACKE_dgetrf(LAPACK_COL_MAJOR, n, n, D, n, ipiv);
    LAPACKE_dgecon(LAPACK_COL_MAJOR, '1', n, D, n, anorm, &rc);
    free(D);
    free(ipiv);
    return rc;
}

static void test_rcond(void)
{
    /* a nearly singular SPD matrix: two almost equal rows coupled into a
     * well-conditioned tridiagonal rest; cond ~ 1e14 */
    const sla_int n = 12;
    const double delta = 1e-13;
    sla_int ri[64], ci[64];
    double v[64];
    int k = 0;
    for (sla_int i = 2; i < n; i++) {
        ri[k] = i; ci[k] = i; v[k++] = 4.0;
        if (i + 1 < n) {
            ri[k] = i; ci[k] = i + 1; v[k++] = -1.0;
            ri[k] = i + 1; ci[k] = i; v[k++] = -1.0;
        }
    }
    ri[k] = 0; ci[k] = 0; v[k++] = 1.0;
    ri[k] = 0; ci[k] = 1; v[k++] = 1.0;
    ri[k] = 1; ci[k] = 0; v[k++] = 1.0;
    ri[k] = 1; ci[k] = 1; v[k++] = 1.0 + delta;
    sla_matrix *A = NULL, *W = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, n, n, k, ri, ci, SLA_F64, 1, v, NULL, &A));
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 5, &W));
    double ref = dense_rcond(A), ref_w = dense_rcond(W);
    printf("  LAPACK dgecon: nearly singular %.2e, Poisson %.2e\n", ref, ref_w);
    CHECK(ref < 1e-12 && ref > 0 && ref_w > 1e-2);
    double xt[12], b[12], x[12], bw[25], xw[25];
    for (int i = 0; i < 25; i++) bw[i] = 1.0 + (i % 3);
    for (sla_int i = 0; i < n; i++) xt[i] = 1.0 + 0.1 * (double)i;
    sla_matvec(ctx, A, 0, 1, xt, n, b, n);
    const sla_method ms[] = {SLA_METHOD_CHOLESKY, SLA_METHOD_LDLT, SLA_METHOD_LU, SLA_METHOD_KLU,
                             SLA_METHOD_SUPERLU};
    for (size_t m = 0; m < sizeof ms / sizeof ms[0]; m++) {
        if (!sla_method_available(ms[m])) continue;
        sla_solver_options o;
        sla_solver_options_default(&o);
        o.method = ms[m];
        o.rtol = 1e-6;
        sla_solve_info info;
        sla_status st = sla_solve(ctx, A, &o, b, x, &info);
        printf("  %-8s nearly singular: %s, rcond %.2e, residual %.1e, note \"%.60s\"\n",
               sla_method_name(ms[m]), sla_status_name(st), info.rcond, info.residual, info.note);
        /* a tiny pivot may also be refused as singular: then no estimate is needed */
        CHECK(st == SLA_OK || st == SLA_NOT_CONVERGED || st == SLA_ERR_SINGULAR);
        if (st >= 0) {
            CHECK(info.rcond >= 0.0 && info.rcond < 1e-12);
            CHECK(strstr(info.note, "warning: nearly singular") != NULL);
            /* within three orders of magnitude of LAPACK's 1-norm estimate
             * (the LU/Cholesky pivot ratios are cruder than dgecon) */
            CHECK(info.rcond < 1e3 * ref && info.rcond > 1e-3 * ref);
            if (ms[m] == SLA_METHOD_SUPERLU) CHECK(info.rcond < 10 * ref && info.rcond > 0.1 * ref);
        }
        CHECK_OK(ctx, sla_solve(ctx, W, &o, bw, xw, &info)); /* well conditioned: no warning */
        CHECK(info.rcond > 1e-3 * ref_w && info.rcond <= 1.0);
        CHECK(strstr(info.note, "warning") == NULL);
    }
    /* Krylov: no estimate */
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    sla_solve_info info;
    CHECK_OK(ctx, sla_solve(ctx, W, &o, bw, xw, &info));
    CHECK(info.rcond == -1.0);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&W);
}

/* ---- time and iteration budgets, the monitor ------------------------------ */

typedef struct {
    sla_int stop_at, calls, last;
} mon_state;

static int stop_monitor(void *user, sla_int it, double rel)
{
    mon_state *m = user;
    m->calls++;
    m->last = it;
    return isfinite(rel) && it >= m->stop_at;
}

static void test_budgets(void)
{
    sla_matrix *A = NULL, *U = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 200, &A)); /* n = 40000: ~600 CG iterations */
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 30, 5.0, 2.0, &U));
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    tu_fill(b, n, 1);
    sla_solver_options o;
    sla_solver_options_default(&o);
    /* a time budget: stops with the last iterate, reason diverged_time */
    CHECK_OK(ctx, sla_solver_options_parse(ctx, "method=cg,rtol=1e-14,max_seconds=0.01", &o));
    CHECK(o.max_seconds == 0.01);
    sla_solve_info info;
    CHECK_ST(ctx, sla_solve(ctx, A, &o, b, x, &info), SLA_NOT_CONVERGED);
    CHECK(info.reason == SLA_DIVERGED_TIME && info.iterations > 0);
    CHECK(info.solve_seconds >= 0.01 && info.solve_seconds < 2.0); /* loaded machines, ASan */
    CHECK(info.residual < 1.0 && isfinite(info.residual));
    CHECK(strstr(sla_ctx_message(ctx), "diverged_time") != NULL);
    printf("  max_seconds=0.01: stopped after %lld cg iterations, %.3f s, residual %.2e\n",
           (long long)info.iterations, info.solve_seconds, info.residual);
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "max_seconds=-1", &o), SLA_ERR_ARGUMENT, "max_seconds");
    o.max_seconds = NAN;
    CHECK_ERR(ctx, sla_solve(ctx, A, &o, b, x, &info), SLA_ERR_ARGUMENT, "max_seconds");
    /* a generous budget does not change the answer */
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_GMRES;
    o.rtol = 1e-10;
    double *x2 = malloc((size_t)n * sizeof *x2);
    CHECK_OK(ctx, sla_solve(ctx, U, &o, b, x, &info));
    o.max_seconds = 100.0;
    CHECK_OK(ctx, sla_solve(ctx, U, &o, b, x2, &info));
    CHECK(memcmp(x, x2, (size_t)sla_matrix_nrows(U) * sizeof *x) == 0);
    /* an iteration budget */
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    o.maxiter = 7;
    CHECK_ST(ctx, sla_solve(ctx, A, &o, b, x, &info), SLA_NOT_CONVERGED);
    CHECK(info.reason == SLA_DIVERGED_MAXITER && info.iterations == 7);
    /* the monitor stops every Krylov method, forward and adjoint */
    const sla_method ms[] = {SLA_METHOD_CG, SLA_METHOD_MINRES, SLA_METHOD_GMRES, SLA_METHOD_BICGSTAB};
    for (size_t k = 0; k < 4; k++) {
        const sla_matrix *M = k < 2 ? A : U;
        sla_int m = sla_matrix_nrows(M);
        mon_state ms_ = {4, 0, 0};
        sla_solver_options_default(&o);
        o.method = ms[k];
        o.monitor = stop_monitor;
        o.monitor_user = &ms_;
        sla_solver *S = NULL;
        CHECK_OK(ctx, sla_solver_create(ctx, M, &o, &S));
        CHECK_ST(ctx, sla_solver_solve(ctx, S, 0, 1, b, m, x, m, &info), SLA_NOT_CONVERGED);
        CHECK(info.reason == SLA_DIVERGED_USER && ms_.last == 4 && info.iterations >= 4 &&
              info.iterations <= 5);
        CHECK(strstr(sla_ctx_message(ctx), "diverged_user") != NULL);
        ms_ = (mon_state){6, 0, 0};
        CHECK_ST(ctx, sla_solver_solve_vjp(ctx, S, 0, 1, x, m, b, m, x2, m, NULL, &info),
                 SLA_NOT_CONVERGED);
        CHECK(info.reason == SLA_DIVERGED_USER && ms_.last == 6);
        /* monitor_every: called at multiples only */
        sla_solver_destroy(&S);
        o.monitor_every = 3;
        ms_ = (mon_state){5, 0, 0};
        CHECK_OK(ctx, sla_solver_create(ctx, M, &o, &S));
        CHECK_ST(ctx, sla_solver_solve(ctx, S, 0, 1, b, m, x, m, &info), SLA_NOT_CONVERGED);
        CHECK(ms_.last == 6 && ms_.calls == 2);
        sla_solver_destroy(&S);
    }
    free(b);
    free(x);
    free(x2);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&U);
}

/* ---- NaN / Inf detected up front ------------------------------------------ */

static void test_nonfinite(void)
{
    sla_matrix *A = NULL, *B = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 4, &A));
    sla_int n = 16, nnz = sla_matrix_nnz(A);
    double *vals = malloc((size_t)nnz * sizeof *vals);
    memcpy(vals, sla_matrix_values(A, 0), (size_t)nnz * sizeof *vals);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(A), ci, SLA_F64, 1, vals,
                                      SLA_BORROW, &B));
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    o.use_x0 = true;
    sla_solver *S = NULL;
    CHECK_OK(ctx, sla_solver_create(ctx, B, &o, &S));
    double b[16], x[16];
    for (int i = 0; i < 16; i++) b[i] = x[i] = 1.0;
    x[5] = NAN;
    CHECK_ERR(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, NULL), SLA_ERR_VALUE, "initial guess");
    x[5] = 0;
    vals[7] = INFINITY; /* the caller's borrowed values changed: refresh re-validates */
    CHECK_ERR(ctx, sla_solver_refresh(ctx, S), SLA_ERR_VALUE, "not finite");
    sla_solver_destroy(&S);
    CHECK_ERR(ctx, sla_solver_create(ctx, B, &o, &S), SLA_ERR_VALUE, "entry 7");
    CHECK(S == NULL);
    CHECK_ERR(ctx, sla_matrix_set_values(ctx, A, 0, vals), SLA_ERR_VALUE, "entry 7");
    free(vals);
    free(ci);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&B);
}

/* ---- Krylov breakdown reported as such ------------------------------------ */

static void test_breakdown(void)
{
    /* skew-symmetric [[0, 1], [-1, 0]], b = e1: r0 . A r0 = 0, so BiCGStab's
     * first step divides by zero; GMRES solves it in two iterations */
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 2, 2, 2, (sla_int[]){0, 1}, (sla_int[]){1, 0}, SLA_F64, 1,
                                      (double[]){1.0, -1.0}, NULL, &A));
    double b[2] = {1.0, 0.0}, x[2], ref[2];
    CHECK(tu_dense_solve(A, 0, b, ref) == 0);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_BICGSTAB;
    sla_solve_info info;
    CHECK_ST(ctx, sla_solve(ctx, A, &o, b, x, &info), SLA_NOT_CONVERGED);
    CHECK(info.reason == SLA_DIVERGED_BREAKDOWN && !info.converged);
    CHECK(strstr(sla_ctx_message(ctx), "diverged_breakdown") != NULL);
    o.method = SLA_METHOD_GMRES;
    CHECK_OK(ctx, sla_solve(ctx, A, &o, b, x, &info));
    CHECK(tu_reldiff(2, x, ref) < 1e-12);
    sla_matrix_destroy(&A);
}

int main(void)
{
    snprintf(tmp_mtx, sizeof tmp_mtx, "/tmp/sla_test_reliability_%d.mtx", (int)getpid());
    sla_ctx_create(&ctx);
    printf("limits\n");
    test_limits();
    printf("oversized direct requests\n");
    test_oversized_direct();
    printf("condition estimates\n");
    test_rcond();
    printf("budgets and the monitor\n");
    test_budgets();
    test_nonfinite();
    test_breakdown();
    printf("allocation-failure sweep\n");
    test_alloc_sweep();
    sla_ctx_destroy(&ctx);
    remove(tmp_mtx);
    return tu_finish("test_reliability");
}
