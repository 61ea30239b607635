/* Bad input gets a clear status and message; allocation failure at every
 * allocation of every scenario returns SLA_ERR_NOMEM and frees everything. */
#include "test_util.h"

#include <unistd.h>

static sla_ctx *ctx;

/* The counting allocator (count_malloc, count_free) is in test_util.h. */

static char tmp_mtx[256];

/* Each scenario creates, uses and destroys objects; returns the first
 * error status (or SLA_OK / SLA_NOT_CONVERGED). */
typedef sla_status (*scenario)(sla_ctx *c);

#define TRY(call)                                                                        \
    do {                                                                                 \
        st = (call);                                                                     \
        if (st < 0) goto done;                                                           \
    } while (0)

static sla_status sc_coo(sla_ctx *c)
{
    sla_int r[] = {0, 1, 1, 0}, col[] = {0, 1, 0, 0};
    double v[] = {1, 2, 3, 4};
    sla_matrix *A = NULL, *T = NULL, *C = NULL;
    sla_status st;
    TRY(sla_matrix_from_coo(c, 2, 2, 4, r, col, SLA_F64, 1, v, NULL, &A));
    TRY(sla_matrix_transpose(c, A, NULL, &T));
    TRY(sla_matrix_copy(c, T, &C));
done:
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&T);
    sla_matrix_destroy(&C);
    return st;
}

static sla_status sc_csr_gen(sla_ctx *c)
{
    sla_int rp[] = {0, 1, 2}, ci[] = {0, 1};
    double v[] = {1, 2};
    double kappa[16];
    for (int i = 0; i < 16; i++) kappa[i] = 1.0 + 0.1 * i;
    sla_matrix *A = NULL, *B = NULL, *D = NULL, *E = NULL, *F = NULL, *G = NULL;
    sla_status st;
    TRY(sla_matrix_from_csr(c, 2, 2, rp, ci, SLA_F32, 1, (float[]){1, 2}, SLA_COPY, &A));
    TRY(sla_matrix_from_csr(c, 2, 2, rp, ci, SLA_F64, 1, v, SLA_BORROW, &B));
    TRY(sla_gen_poisson(c, 3, 3, &D));
    TRY(sla_gen_diffusion2d(c, 3, kappa, &E));
    TRY(sla_gen_convdiff2d(c, 4, 1.0, 2.0, &F));
    TRY(sla_gen_random(c, 20, 3, SLA_GEN_SPD, 1, &G));
done:
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&D);
    sla_matrix_destroy(&E);
    sla_matrix_destroy(&F);
    sla_matrix_destroy(&G);
    return st;
}

static sla_status sc_io(sla_ctx *c)
{
    sla_matrix *A = NULL, *B = NULL;
    double *d = NULL;
    sla_int m = 0, k = 0;
    sla_status st;
    TRY(sla_mm_read(c, SLA_TEST_DATA "/tumorAntiAngiogenesis_2.mtx", SLA_F64, &A));
    TRY(sla_mm_write(c, tmp_mtx, A, 0));
    TRY(sla_mm_read(c, tmp_mtx, SLA_F32, &B));
    TRY(sla_mm_write_dense(c, tmp_mtx, 3, 2, (double[]){1, 2, 3, 4, 5, 6}));
    TRY(sla_mm_read_dense(c, tmp_mtx, &m, &k, &d));
done:
    sla_free(c, d);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&B);
    return st;
}

/* Solver set-up, solves, transposes, VJPs, batches for one method/precond. */
static sla_status solve_all(sla_ctx *c, sla_method m, sla_precond_kind p, bool sym)
{
    sla_matrix *A = NULL, *B = NULL;
    sla_solver *S = NULL, *T = NULL;
    double *b = NULL, *x = NULL, *g = NULL;
    sla_status st;
    if (sym) TRY(sla_gen_poisson(c, 2, 5, &A));
    else TRY(sla_gen_convdiff2d(c, 5, 3.0, 1.0, &A));
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    b = malloc(2 * (size_t)n * sizeof *b);
    x = malloc(2 * (size_t)n * sizeof *x);
    g = malloc(2 * (size_t)nnz * sizeof *g);
    for (sla_int i = 0; i < 2 * n; i++) b[i] = 1.0 + (double)(i % 7);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = m;
    o.precond = p;
    TRY(sla_solver_create(c, A, &o, &S));
    TRY(sla_solver_solve(c, S, 0, 2, b, n, x, n, NULL));
    TRY(sla_solver_solve_transpose(c, S, 0, 1, b, n, x + n, n, NULL));
    TRY(sla_solver_solve_vjp(c, S, 0, 1, x, n, b, n, NULL, n, g, NULL));
    TRY(sla_matvec_transpose(c, A, 0, 1, b, n, x, n));
    /* a batch of two value arrays */
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    double *vv = malloc(2 * (size_t)nnz * sizeof *vv);
    memcpy(vv, sla_matrix_values(A, 0), (size_t)nnz * sizeof *vv);
    memcpy(vv + nnz, sla_matrix_values(A, 0), (size_t)nnz * sizeof *vv);
    st = sla_matrix_from_csr(c, n, n, sla_matrix_rowptr(A), ci, SLA_F64, 2, vv, SLA_COPY, &B);
    free(ci);
    free(vv);
    if (st < 0) goto done;
    TRY(sla_solver_create(c, B, &o, &T));
    TRY(sla_solver_solve_batch(c, T, b, x, NULL));
    TRY(sla_solver_solve_batch_vjp(c, T, x, b, NULL, g, NULL));
    sla_solver *L[2] = {S, S};
    const double *bl[2] = {b, b};
    double *xl[2] = {x, x + n};
    TRY(sla_solve_list(c, 2, L, bl, xl, NULL));
done:
    sla_solver_destroy(&S);
    sla_solver_destroy(&T);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&B);
    free(b);
    free(x);
    free(g);
    return st;
}

static sla_status sc_cg_ic0(sla_ctx *c) { return solve_all(c, SLA_METHOD_CG, SLA_PRECOND_IC0, true); }
static sla_status sc_minres_jac(sla_ctx *c) { return solve_all(c, SLA_METHOD_MINRES, SLA_PRECOND_JACOBI, true); }
static sla_status sc_gmres_ilu(sla_ctx *c) { return solve_all(c, SLA_METHOD_GMRES, SLA_PRECOND_ILU0, false); }
static sla_status sc_bicg_ssor(sla_ctx *c) { return solve_all(c, SLA_METHOD_BICGSTAB, SLA_PRECOND_SSOR, false); }
static sla_status sc_auto(sla_ctx *c) { return solve_all(c, SLA_METHOD_AUTO, SLA_PRECOND_NONE, false); }

static void sweep(const char *name, scenario f, int nthreads)
{
    counter cnt = {0, -1, 0, 0};
    sla_allocator a = {count_malloc, count_free, &cnt};
    sla_ctx *c = NULL;
    sla_ctx_create(&c);
    sla_ctx_set_allocator(c, &a);
    sla_ctx_set_threads(c, nthreads);
    /* a clean run counts the allocations */
    sla_status st = f(c);
    CHECK(st >= 0);
    CHECK(cnt.live == 0);
    long total = cnt.calls, points = 0;
    for (long k = 0; k < total; k++) {
        cnt.calls = 0;
        cnt.fail_at = k;
        cnt.failures = 0;
        st = f(c);
        if (cnt.failures == 0) continue; /* this path allocated less */
        points++;
        if (st != SLA_ERR_NOMEM || cnt.live != 0) {
            fprintf(stderr, "  %s: failing allocation %ld -> %s, %ld live: %s\n", name, k,
                    sla_status_name(st), cnt.live, sla_ctx_message(c));
        }
        CHECK(st == SLA_ERR_NOMEM);
        CHECK(cnt.live == 0);
        CHECK(strstr(sla_ctx_message(c), "memory") != NULL);
    }
    printf("  %s: %ld allocation points checked\n", name, points);
    CHECK(points > 0);
    sla_ctx_destroy(&c);
}

/* SpGEMM: the one-pass product (one thread), the rows split between two
 * threads (two), the counting pass and row chunks (three), the symbolic
 * and numeric phases, the VJP. */
static sla_status sc_spgemm(sla_ctx *c)
{
    sla_matrix *A = NULL, *C = NULL, *F = NULL;
    sla_status st = sla_gen_poisson(c, 2, 40, &A); /* 1600 rows: several row chunks */
    if (!st) st = sla_spgemm(c, A, A, &F);
    if (!st) st = sla_spgemm_symbolic(c, A, A, &C);
    if (!st) st = sla_spgemm_numeric(c, A, A, C, NULL);
    if (!st) {
        sla_int na = sla_matrix_nnz(A), nc = sla_matrix_nnz(C);
        double *gc = malloc((size_t)nc * sizeof *gc), *ga = malloc((size_t)na * sizeof *ga);
        double *gb = malloc((size_t)na * sizeof *gb);
        for (sla_int k = 0; k < nc; k++) gc[k] = 1.0;
        st = sla_spgemm_vjp(c, A, A, C, gc, ga, gb);
        free(gc);
        free(ga);
        free(gb);
    }
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&C);
    sla_matrix_destroy(&F);
    return st;
}

static void test_alloc_failures(void)
{
    sweep("coo/transpose/copy", sc_coo, 1);
    sweep("csr/generators", sc_csr_gen, 1);
    sweep("matrix market", sc_io, 1);
    sweep("cg+ic0", sc_cg_ic0, 1);
    sweep("minres+jacobi", sc_minres_jac, 2);
    sweep("gmres+ilu0", sc_gmres_ilu, 2);
    sweep("bicgstab+ssor", sc_bicg_ssor, 1);
    sweep("auto", sc_auto, 2);
    sweep("spgemm, 1 thread", sc_spgemm, 1);
    sweep("spgemm, 2 threads", sc_spgemm, 2);
    sweep("spgemm, 3 threads", sc_spgemm, 3);
}

/* ---- bad input -------------------------------------------------------- */

static void test_bad_solver_input(void)
{
    sla_matrix *A = NULL, *R = NULL;
    sla_solver *S = (sla_solver *)1;
    sla_gen_poisson(ctx, 2, 4, &A);
    sla_int n = 16;
    double b[16], x[16];
    for (int i = 0; i < 16; i++) b[i] = 1;
    sla_solver_options o;
    sla_solver_options_default(&o);

    CHECK_ERR(ctx, sla_solver_create(ctx, NULL, &o, &S), SLA_ERR_ARGUMENT, "NULL");
    CHECK(S == NULL);
    sla_matrix_from_coo(ctx, 2, 3, 1, (sla_int[]){0}, (sla_int[]){2}, SLA_F64, 1, NULL, NULL, &R);
    CHECK_ERR(ctx, sla_solver_create(ctx, R, &o, &S), SLA_ERR_DIMENSION, "non-square");
    CHECK_ERR(ctx, sla_solve(ctx, R, &o, b, x, NULL), SLA_ERR_DIMENSION, "2 x 3");
    o.rtol = -1;
    CHECK_ERR(ctx, sla_solver_create(ctx, A, &o, &S), SLA_ERR_ARGUMENT, "rtol");
    o.rtol = NAN;
    CHECK_ERR(ctx, sla_solver_create(ctx, A, &o, &S), SLA_ERR_ARGUMENT, "rtol");
    sla_solver_options_default(&o);
    o.method = (sla_method)42;
    CHECK_ERR(ctx, sla_solver_create(ctx, A, &o, &S), SLA_ERR_ARGUMENT, "unknown method");
    sla_solver_options_default(&o);
    o.maxiter = -5;
    CHECK_ERR(ctx, sla_solver_create(ctx, A, &o, &S), SLA_ERR_ARGUMENT, "maxiter");
    sla_solver_options_default(&o);

    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    b[3] = NAN;
    CHECK_ERR(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, NULL), SLA_ERR_VALUE, "entry 3");
    b[3] = INFINITY;
    CHECK_ERR(ctx, sla_solver_solve_vjp(ctx, S, 0, 1, x, n, b, n, NULL, n, NULL, NULL), SLA_ERR_VALUE,
              "not finite");
    b[3] = 1;
    CHECK_ERR(ctx, sla_solver_solve(ctx, S, 1, 1, b, n, x, n, NULL), SLA_ERR_INDEX, "value array 1");
    CHECK_ERR(ctx, sla_solver_solve(ctx, S, 0, 1, b, 3, x, n, NULL), SLA_ERR_DIMENSION, "leading");
    CHECK_ERR(ctx, sla_solver_solve(ctx, S, 0, -1, b, n, x, n, NULL), SLA_ERR_DIMENSION, "nrhs");
    CHECK_ERR(ctx, sla_solver_solve(ctx, S, 0, 1, NULL, n, x, n, NULL), SLA_ERR_ARGUMENT, "NULL");
    CHECK_ERR(ctx, sla_matvec(ctx, A, 0, 1, b, 2, x, n), SLA_ERR_DIMENSION, "leading");
    CHECK_ERR(ctx, sla_matvec(ctx, A, 3, 1, b, n, x, n), SLA_ERR_INDEX, "out of range");
    sla_solver_destroy(&S);
    CHECK(S == NULL);
    sla_solver_destroy(&S);

    /* finite duplicates whose sum overflows (found by fuzz_coo): refused,
     * naming the entry, in float64, float32 and complex128 */
    {
        sla_matrix *O = NULL;
        CHECK_ERR(ctx, sla_matrix_from_coo(ctx, 3, 3, 3, (sla_int[]){2, 1, 2}, (sla_int[]){1, 0, 1}, SLA_F64, 1,
                                           (double[]){1.5e308, 1.0, 1.5e308}, NULL, &O),
                  SLA_ERR_VALUE, "(2, 1)");
        CHECK(O == NULL);
        CHECK_ERR(ctx, sla_matrix_from_coo(ctx, 3, 3, 2, (sla_int[]){0, 0}, (sla_int[]){2, 2}, SLA_F32, 2,
                                           (float[]){1, 2, -3e38f, -3e38f}, NULL, &O),
                  SLA_ERR_VALUE, "batch 1");
        CHECK(O == NULL);
        CHECK_ERR(ctx, sla_matrix_from_coo(ctx, 2, 2, 2, (sla_int[]){1, 1}, (sla_int[]){1, 1}, SLA_C128, 1,
                                           (double[]){1, 1e308, 2, 1e308}, NULL, &O),
                  SLA_ERR_VALUE, "overflow");
        CHECK(O == NULL);
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, 3, 3, 2, (sla_int[]){0, 0}, (sla_int[]){2, 2}, SLA_F64, 1,
                                          (double[]){1e308, -1e308}, NULL, &O)); /* cancels: fine */
        sla_matrix_destroy(&O);
    }

    /* a zero diagonal: Jacobi and SSOR refuse it by row */
    sla_matrix *Z = NULL;
    sla_matrix_from_coo(ctx, 2, 2, 3, (sla_int[]){0, 0, 1}, (sla_int[]){0, 1, 0}, SLA_F64, 1,
                        (double[]){1, 2, 3}, NULL, &Z);
    o.precond = SLA_PRECOND_JACOBI;
    CHECK_ERR(ctx, sla_solver_create(ctx, Z, &o, &S), SLA_ERR_SINGULAR, "row 1");
    o.precond = SLA_PRECOND_IC0;
    sla_matrix *Ind = NULL; /* symmetric indefinite */
    sla_matrix_from_coo(ctx, 2, 2, 4, (sla_int[]){0, 0, 1, 1}, (sla_int[]){0, 1, 0, 1}, SLA_F64, 1,
                        (double[]){1, 2, 2, 1}, NULL, &Ind);
    CHECK_ERR(ctx, sla_solver_create(ctx, Ind, &o, &S), SLA_ERR_NOT_SPD, "IC(0)");
    CHECK(S == NULL);

    /* an empty row makes the matrix singular: Krylov reports, never returns garbage as OK */
    sla_matrix *E = NULL;
    sla_matrix_from_coo(ctx, 3, 3, 2, (sla_int[]){0, 2}, (sla_int[]){0, 2}, SLA_F64, 1,
                        (double[]){1, 1}, NULL, &E);
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_GMRES;
    o.maxiter = 50;
    double b3[3] = {1, 1, 1}, x3[3];
    sla_solve_info info;
    sla_status st = sla_solve(ctx, E, &o, b3, x3, &info);
    CHECK(st == SLA_NOT_CONVERGED && !info.converged && info.residual > 0.1);

    /* 0 x 0: a trivial success */
    sla_matrix *N0 = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 0, 0, 0, NULL, NULL, SLA_F64, 1, NULL, NULL, &N0));
    CHECK_OK(ctx, sla_solve(ctx, N0, &o, NULL, NULL, &info));
    CHECK(info.converged && info.iterations == 0);

    sla_matrix_destroy(&N0);
    sla_matrix_destroy(&E);
    sla_matrix_destroy(&Ind);
    sla_matrix_destroy(&Z);
    sla_matrix_destroy(&R);
    sla_matrix_destroy(&A);
}

static void test_options_parse(void)
{
    sla_solver_options o;
    sla_solver_options_default(&o);
    CHECK_OK(ctx, sla_solver_options_parse(ctx, "method=gmres, precond=ilu0,rtol=1e-10,restart=50", &o));
    CHECK(o.method == SLA_METHOD_GMRES && o.precond == SLA_PRECOND_ILU0 && o.rtol == 1e-10 &&
          o.restart == 50);
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "methd=cg", &o), SLA_ERR_ARGUMENT, "did you mean 'method'");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "method=bicgstb", &o), SLA_ERR_ARGUMENT, "'bicgstab'");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "precond=ic", &o), SLA_ERR_ARGUMENT, "'ic0'");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "rtol=abc", &o), SLA_ERR_ARGUMENT, "rtol");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "rtol=-1", &o), SLA_ERR_ARGUMENT, "rtol");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "maxiter=2.5", &o), SLA_ERR_ARGUMENT, "maxiter");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "omega=2", &o), SLA_ERR_ARGUMENT, "omega");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "rtol", &o), SLA_ERR_ARGUMENT, "no '=value'");
    /* a failed parse leaves the options untouched */
    CHECK(o.method == SLA_METHOD_GMRES && o.rtol == 1e-10);
    CHECK(strcmp(sla_reason_name(SLA_DIVERGED_MAXITER), "diverged_maxiter") == 0);
    CHECK(strcmp(sla_status_name(SLA_ERR_NOMEM), "SLA_ERR_NOMEM") == 0);
    /* MPI failures (src/dist) have their own status */
    CHECK(SLA_ERR_COMM == -14);
    CHECK(strcmp(sla_status_name(SLA_ERR_COMM), "SLA_ERR_COMM") == 0);
    CHECK(strcmp(sla_status_name(SLA_ERR_CALLBACK), "SLA_ERR_CALLBACK") == 0);
}

int main(void)
{
    snprintf(tmp_mtx, sizeof tmp_mtx, "/tmp/sla_test_errors_%d.mtx", (int)getpid());
    sla_ctx_create(&ctx);
    test_bad_solver_input();
    test_options_parse();
    test_alloc_failures();
    sla_ctx_destroy(&ctx);
    remove(tmp_mtx);
    return tu_finish("test_errors");
}
