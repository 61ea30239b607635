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
    TRY(sla_gen_random(c, 30, 4, 0, 7, &C));
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
    TRY(sla_solve_list(c, 2, L, bl, xl, NULL));
    TRY(sla_solve_list_vjp(c, 2, L, xc, bl, gbl, gAl, NULL));
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

int main(void)
{
    snprintf(tmp_mtx, sizeof tmp_mtx, "/tmp/sla_test_reliability_%d.mtx", (int)getpid());
    sla_ctx_create(&ctx);
    test_alloc_sweep();
    sla_ctx_destroy(&ctx);
    remove(tmp_mtx);
    return tu_finish("test_reliability");
}
