/* sla's smoothed-aggregation AMG (precond saamg): mesh-independent CG
 * iteration counts on 2D/3D Poisson, anisotropic and variable-coefficient
 * diffusion, float32 values, solutions against dense LAPACK, the symmetry of
 * the cycle (dot-product identity), the VJP of a solve against central
 * differences, nonsymmetric matrices (GMRES forward, transposed apply
 * refused), refresh, errors and allocation failures. */
#include "test_util.h"

#include "test_pc_util.h"

#include "solvers/krylov.h"

#include <pthread.h>

static sla_solver_options sa_opts(sla_method m, double rtol)
{
    return pc_opts(m, SLA_PRECOND_SAAMG, rtol);
}

static void test_scaling(sla_ctx *ctx)
{
    check_scaling(ctx, SLA_PRECOND_SAAMG, 5.0, 40);

    long long its[3];
    const sla_int N2[] = {64, 128, 256};
    sla_solver_options o = sa_opts(SLA_METHOD_CG, 1e-8);

    printf("variable-coefficient diffusion (kappa 1e-2..1e2), CG + saamg:\n");
    for (int k = 0; k < 3; k++) {
        sla_int N = N2[k], nc = (N + 1) * (N + 1);
        double *kappa = malloc((size_t)nc * sizeof *kappa);
        for (sla_int c = 0; c < nc; c++) {
            sla_int a = c % (N + 1), b = c / (N + 1);
            /* smooth variation over 4 decades plus checkerboard jumps */
            kappa[c] = pow(10.0, 2.0 * sin(3.0 * (double)a / (double)N) *
                                     cos(2.0 * (double)b / (double)N)) *
                       (((a * 8 / (N + 1)) + (b * 8 / (N + 1))) % 2 ? 10.0 : 1.0);
        }
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_gen_diffusion2d(ctx, N, kappa, &A));
        its[k] = solve_ones(ctx, A, &o, "diffusion2d");
        sla_matrix_destroy(&A);
        free(kappa);
    }
    check_flat(its, 3, 1.5, 5.0, 60);
}

/* Solutions against dense LAPACK, float64 and float32 values. */
static void test_reference(sla_ctx *ctx)
{
    printf("against dense LAPACK:\n");
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 45, &A)); /* 2025 rows: two levels */
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    double *xr = malloc((size_t)n * sizeof *xr);
    tu_fill(b, n, 5);
    sla_solver_options o = sa_opts(SLA_METHOD_CG, 1e-12);
    sla_solve_info info;
    CHECK_OK(ctx, sla_solve(ctx, A, &o, b, x, &info));
    CHECK(tu_dense_solve(A, 0, b, xr) == 0);
    double d = tu_reldiff(n, x, xr);
    printf("  poisson2d 45^2, rtol 1e-12: %lld iterations, |x - x_lapack| / |x_lapack| = %.1e\n",
           (long long)info.iterations, d);
    CHECK(d < 1e-9);

    /* float32 values: the same matrix rounded (exact here: small integers) */
    sla_matrix *F = tu_to_f32(ctx, A);
    CHECK(F != NULL);
    sla__zero(n, x);
    CHECK_OK(ctx, sla_solve(ctx, F, &o, b, x, &info));
    d = tu_reldiff(n, x, xr);
    printf("  the same in float32 values: %lld iterations, difference %.1e\n",
           (long long)info.iterations, d);
    CHECK(d < 1e-9);
    sla_matrix_destroy(&F);

    /* float32 at a larger size: flat iterations too */
    sla_matrix *G = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 300, &G));
    F = G ? tu_to_f32(ctx, G) : NULL;
    CHECK(F != NULL);
    sla_solver_options o8 = sa_opts(SLA_METHOD_CG, 1e-8);
    long long i32 = solve_ones(ctx, F, &o8, "poisson2d float32");
    long long i64 = solve_ones(ctx, G, &o8, "poisson2d float64");
    CHECK(i32 == i64);
    sla_matrix_destroy(&F);
    sla_matrix_destroy(&G);
    free(b);
    free(x);
    free(xr);
    sla_matrix_destroy(&A);
}

/* Q A Q^T for a random permutation Q (seed), or NULL. */
static sla_matrix *permuted(sla_ctx *ctx, const sla_matrix *A, unsigned long long seed)
{
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    const sla_int *rp = sla_matrix_rowptr(A);
    const double *v = sla_matrix_values(A, 0);
    sla_int *q = malloc((size_t)n * sizeof *q), *ci = malloc((size_t)nnz * sizeof *ci);
    sla_int *ri = malloc((size_t)nnz * sizeof *ri), *cj = malloc((size_t)nnz * sizeof *cj);
    for (sla_int i = 0; i < n; i++) q[i] = i;
    for (sla_int i = n - 1; i > 0; i--) { /* Fisher-Yates */
        sla_int j = (sla_int)(0.5 * (tu_rand(&seed) + 1.0) * (double)(i + 1)) % (i + 1), t = q[i];
        q[i] = q[j];
        q[j] = t;
    }
    sla_matrix_get_colind(A, ci);
    for (sla_int i = 0; i < n; i++)
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) ri[k] = q[i], cj[k] = q[ci[k]];
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, n, n, nnz, ri, cj, SLA_F64, 1, v, NULL, &B));
    free(q);
    free(ci);
    free(ri);
    free(cj);
    return B;
}

/* <M r, s> = <r, M s> for the symmetric cycle; the transposed apply is the
 * same operator; M is positive definite (<M r, r> > 0). */
static void dot_test(sla_ctx *ctx, const sla_matrix *A, const char *what)
{
    sla_solver_options o = sa_opts(SLA_METHOD_CG, 1e-8);
    sla__pc *pc = NULL;
    CHECK_OK(ctx, sla__pc_create(ctx, SLA_PRECOND_SAAMG, A, 0, &o, &pc));
    if (!pc) return;
    sla_int n = sla_matrix_nrows(A);
    double *r = malloc((size_t)n * sizeof *r), *s = malloc((size_t)n * sizeof *s);
    double *mr = malloc((size_t)n * sizeof *mr), *ms = malloc((size_t)n * sizeof *ms);
    double *mt = malloc((size_t)n * sizeof *mt), *r0 = malloc((size_t)n * sizeof *r0);
    tu_fill(r, n, 11);
    tu_fill(s, n, 12);
    memcpy(r0, r, (size_t)n * sizeof *r);
    double *m2 = malloc((size_t)n * sizeof *m2);
    /* one thread: Gauss-Seidel; two and three: hybrid Gauss-Seidel on the
     * large levels (three: a middle block with neighbours on both sides) */
    for (int nt = 1; nt <= 3; nt++) {
        CHECK_OK(ctx, sla__pc_apply(pc, false, r, mr, nt));
        CHECK(memcmp(r, r0, (size_t)n * sizeof *r) == 0); /* r is not touched */
        CHECK_OK(ctx, sla__pc_apply(pc, false, s, ms, nt));
        CHECK_OK(ctx, sla__pc_apply(pc, true, s, mt, nt));
        double a = 0.0, c = 0.0, na = 0.0, rr = 0.0;
        for (sla_int i = 0; i < n; i++) {
            a += mr[i] * s[i];
            c += r[i] * ms[i];
            na += fabs(mr[i] * s[i]);
            rr += mr[i] * r[i];
        }
        double rel = fabs(a - c) / na;
        printf("  dot test %-22s %d thread%s |<M r, s> - <r, M s>| / sum = %.1e, <M r, r> = %.3g\n",
               what, nt, nt > 1 ? "s" : " ", rel, rr);
        CHECK(rel < 1e-14);
        CHECK(rr > 0.0);
        CHECK(tu_reldiff(n, ms, mt) == 0.0);
        if (nt == 2) memcpy(m2, mr, (size_t)n * sizeof *m2);
    }
    /* back to two threads after three (the blocks made again): the same result */
    CHECK_OK(ctx, sla__pc_apply(pc, false, r, mr, 2));
    CHECK(memcmp(mr, m2, (size_t)n * sizeof *mr) == 0);
    free(m2);
    free(r);
    free(s);
    free(mr);
    free(ms);
    free(mt);
    free(r0);
    sla__pc_destroy(&pc);
}

static void test_symmetry(sla_ctx *ctx)
{
    printf("symmetry of the cycle:\n");
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 100, &A));
    dot_test(ctx, A, "poisson2d 100^2");
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_poisson(ctx, 3, 20, &A));
    dot_test(ctx, A, "poisson3d 20^3");
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_aniso2d(ctx, 80, 0.01, &A));
    dot_test(ctx, A, "aniso2d 80^2");
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_gen_random(ctx, 3000, 6, SLA_GEN_SPD, 7, &A));
    dot_test(ctx, A, "random SPD n 3000");
    sla_matrix_destroy(&A);
    /* rows in random order: a hybrid block reads x all over the other
     * blocks (the sweeps then copy all of x instead of lists) */
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 100, &A));
    sla_matrix *B = permuted(ctx, A, 17);
    if (B) dot_test(ctx, B, "poisson2d 100^2 permuted");
    if (B) {
        sla_int n = sla_matrix_nrows(B);
        double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
        tu_fill(b, n, 3);
        sla_solver_options o = sa_opts(SLA_METHOD_CG, 1e-8);
        sla_solve_info info;
        sla_ctx_set_threads(ctx, 2);
        CHECK_OK(ctx, sla_solve(ctx, B, &o, b, x, &info));
        sla_ctx_set_threads(ctx, 0);
        double rr = tu_relres(B, 0, b, x, 0);
        printf("  permuted, CG 2 threads: %lld iterations, residual %.1e\n", (long long)info.iterations, rr);
        CHECK(info.converged && rr < 1e-7 && info.iterations < 40);
        free(b);
        free(x);
    }
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&A);
}

/* Nonsymmetric A: the forward cycle preconditions GMRES; transposed applies
 * (adjoint solves) are refused. */
static void test_nonsymmetric(sla_ctx *ctx)
{
    printf("nonsymmetric (convection-diffusion):\n");
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 128, 20.0, -10.0, &A));
    sla_solver_options o = sa_opts(SLA_METHOD_GMRES, 1e-8);
    CHECK(solve_ones(ctx, A, &o, "convdiff2d gmres") > 0);
    o.method = SLA_METHOD_BICGSTAB;
    CHECK(solve_ones(ctx, A, &o, "convdiff2d bicgstab") > 0);
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    tu_fill(b, n, 3);
    sla_solver *S = NULL;
    o.method = SLA_METHOD_GMRES;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    CHECK_ERR(ctx, sla_solver_solve_transpose(ctx, S, 0, 1, b, n, x, n, NULL),
              SLA_ERR_UNSUPPORTED, "no transposed cycle for a nonsymmetric matrix");
    /* the preconditioner itself refuses too */
    sla__pc *pc = NULL;
    CHECK_OK(ctx, sla__pc_create(ctx, SLA_PRECOND_SAAMG, A, 0, &o, &pc));
    if (pc) {
        CHECK(sla__pc_apply(pc, false, b, x, 1) == SLA_OK);
        CHECK(sla__pc_apply(pc, true, b, x, 1) == SLA_ERR_UNSUPPORTED);
        sla__pc_destroy(&pc);
    }
    sla_solver_destroy(&S);
    free(b);
    free(x);
    sla_matrix_destroy(&A);
}

/* Applies of one preconditioner from several threads at once (the second
 * apply at a time gets private work vectors): each thread applies it to
 * its own vector 20 times and must get the serial result every time. */
typedef struct {
    sla__pc *pc;
    const double *r;
    const double *ref;
    sla_int n;
    int bad;
} apply_job;

static void *apply_thread(void *p)
{
    apply_job *j = p;
    double *z = malloc((size_t)j->n * sizeof *z);
    for (int it = 0; it < 20; it++) {
        if (sla__pc_apply(j->pc, false, j->r, z, 1) != SLA_OK ||
            memcmp(z, j->ref, (size_t)j->n * sizeof *z) != 0)
            j->bad++;
    }
    free(z);
    return NULL;
}

/* Several right-hand sides in one call against one at a time; concurrent
 * applies; an apply in place (z == r). */
static void test_batch(sla_ctx *ctx)
{
    printf("batched right-hand sides:\n");
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 120, &A));
    sla_int n = sla_matrix_nrows(A);
    const int k = 6;
    double *B = malloc((size_t)n * k * sizeof *B), *X = calloc((size_t)n * k, sizeof *X);
    double *x1 = calloc((size_t)n, sizeof *x1);
    for (int c = 0; c < k; c++) tu_fill(B + (size_t)c * n, n, 40 + c);
    sla_solver_options o = sa_opts(SLA_METHOD_CG, 1e-10);
    sla_solver *S = NULL;
    sla_solve_info info[6];
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, k, B, n, X, n, info));
    double worst = 0.0;
    for (int c = 0; c < k; c++) {
        sla_solve_info one;
        CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, B + (size_t)c * n, n, x1, n, &one));
        CHECK(info[c].converged && info[c].iterations == one.iterations);
        worst = fmax(worst, tu_reldiff(n, X + (size_t)c * n, x1));
    }
    printf("  %d columns at once vs one at a time: worst difference %.1e\n", k, worst);
    CHECK(worst < 1e-12);
    sla__pc *pc = NULL;
    CHECK_OK(ctx, sla__pc_create(ctx, SLA_PRECOND_SAAMG, A, 0, &o, &pc));
    if (pc) {
        memcpy(x1, B, (size_t)n * sizeof *x1);
        CHECK_OK(ctx, sla__pc_apply(pc, false, x1, x1, 2));
        CHECK_OK(ctx, sla__pc_apply(pc, false, B, X, 2));
        CHECK(tu_reldiff(n, x1, X) == 0.0);
        /* two threads at once, each its own vector */
        double *ref = malloc((size_t)n * 2 * sizeof *ref);
        apply_job jobs[2];
        pthread_t th[2];
        for (int t = 0; t < 2; t++) {
            CHECK_OK(ctx, sla__pc_apply(pc, false, B + (size_t)t * n, ref + (size_t)t * n, 1));
            jobs[t] = (apply_job){pc, B + (size_t)t * n, ref + (size_t)t * n, n, 0};
        }
        for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, apply_thread, &jobs[t]);
        for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
        printf("  concurrent applies from 2 threads: %d of 40 differ from the serial result\n",
               jobs[0].bad + jobs[1].bad);
        CHECK(jobs[0].bad == 0 && jobs[1].bad == 0);
        free(ref);
        sla__pc_destroy(&pc);
    }
    sla_solver_destroy(&S);
    free(B);
    free(X);
    free(x1);
    sla_matrix_destroy(&A);
}

/* Refresh with new values on the same (borrowed) pattern. */
static void test_refresh(sla_ctx *ctx)
{
    printf("refresh:\n");
    const sla_int N = 60;
    sla_int nc = (N + 1) * (N + 1);
    double *kappa = malloc((size_t)nc * sizeof *kappa);
    for (sla_int c = 0; c < nc; c++) kappa[c] = 1.0;
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_diffusion2d(ctx, N, kappa, &A));
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *vals = malloc((size_t)nnz * sizeof *vals);
    memcpy(vals, sla_matrix_values(A, 0), (size_t)nnz * sizeof *vals);
    sla_int *colind = malloc((size_t)nnz * sizeof *colind);
    sla_matrix_get_colind(A, colind);
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(A), colind, SLA_F64, 1, vals,
                                      SLA_BORROW, &B));
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    double *xr = malloc((size_t)n * sizeof *xr);
    tu_fill(b, n, 8);
    sla_solver_options o = sa_opts(SLA_METHOD_CG, 1e-11);
    sla_solver *S = NULL;
    sla_solve_info info;
    CHECK_OK(ctx, sla_solver_create(ctx, B, &o, &S));
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
    long long it0 = info.iterations;
    for (sla_int c = 0; c < nc; c++) kappa[c] = 1.0 + 100.0 * (double)((c / 7) % 2);
    CHECK_OK(ctx, sla_gen_diffusion2d_values(ctx, N, kappa, vals));
    CHECK_OK(ctx, sla_solver_refresh(ctx, S));
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
    CHECK(tu_dense_solve(B, 0, b, xr) == 0);
    double d = tu_reldiff(n, x, xr);
    printf("  before %lld, after refresh %lld iterations; difference to LAPACK %.1e; note: %s\n",
           it0, (long long)info.iterations, d, info.note);
    CHECK(d < 1e-8);
    /* a 100-fold change: the drift guard rebuilds (57 iterations with the kept P, 20 rebuilt) */
    CHECK(info.iterations < 25 && strstr(info.note, "rebuilt the hierarchy") != NULL);
    /* a small change after it keeps the new hierarchy and says nothing */
    vals[0] *= 1.001;
    CHECK_OK(ctx, sla_solver_refresh(ctx, S));
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
    CHECK(info.converged && strstr(info.note, "rebuilt") == NULL);
    /* the guard both ways: every entry an eighth (each a_ii down by 8: the
     * largest old / new, not new / old) rebuilds and names the factor */
    for (sla_int k = 0; k < nnz; k++) vals[k] *= 0.125;
    CHECK_OK(ctx, sla_solver_refresh(ctx, S));
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
    CHECK(info.converged && strstr(info.note, "moved by a factor 8 ") != NULL);
    printf("  every entry an eighth: %s\n", info.note);
    sla_solver_destroy(&S);
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&A);
    free(kappa);
    free(vals);
    free(colind);
    free(b);
    free(x);
    free(xr);
}


static const char *const reuse_names[] = {"interpolation", "full", "none", "hierarchy"};

/* A VJP through a solver refreshed with interpolation reuse (kappa
 * changed by 50 %): dL/db against dense LAPACK, dL/dA against central
 * differences. */
static void test_reuse_vjp(sla_ctx *ctx)
{
    const sla_int N = 40; /* 1600 rows: two levels, small enough for LAPACK */
    sla_int nc = (N + 1) * (N + 1);
    double *k0 = malloc((size_t)nc * sizeof *k0), *k1 = malloc((size_t)nc * sizeof *k1);
    unsigned long long seed = 78;
    for (sla_int c = 0; c < nc; c++) k0[c] = pow(10.0, tu_rand(&seed));
    for (sla_int c = 0; c < nc; c++) k1[c] = k0[c] * (1.0 + 0.5 * tu_rand(&seed));
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_diffusion2d(ctx, N, k0, &A));
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *vals = calloc((size_t)nnz, sizeof *vals); /* from_csr reads the values */
    sla_int *colind = malloc((size_t)nnz * sizeof *colind);
    sla_matrix_get_colind(A, colind);
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(A), colind, SLA_F64, 1, vals,
                                      SLA_BORROW, &B));
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    tu_fill(b, n, 33);
    sla_solver_options o = sa_opts(SLA_METHOD_CG, 1e-13);
    sla_solver *S = NULL;
    sla_solve_info info;
    CHECK_OK(ctx, sla_gen_diffusion2d_values(ctx, N, k0, vals));
    CHECK_OK(ctx, sla_solver_create(ctx, B, &o, &S));
    CHECK_OK(ctx, sla_gen_diffusion2d_values(ctx, N, k1, vals));
    CHECK_OK(ctx, sla_solver_refresh(ctx, S));
    double *g = malloc((size_t)n * sizeof *g), *gb = malloc((size_t)n * sizeof *gb);
    double *gA = malloc((size_t)nnz * sizeof *gA), *xp = calloc((size_t)n, sizeof *xp);
    tu_fill(g, n, 32);
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
    CHECK_OK(ctx, sla_solver_solve_vjp(ctx, S, 0, 1, x, n, g, n, gb, n, gA, &info));
    CHECK(info.converged && strcmp(info.precond, "saamg") == 0);
    sla_solver_destroy(&S);
    double *lr = malloc((size_t)n * sizeof *lr);
    CHECK(tu_dense_solve(B, 1, g, lr) == 0);
    double d = tu_reldiff(n, gb, lr), worst = 0.0;
    CHECK(d < 1e-10);
    const sla_int picks[] = {3, nnz / 3, nnz - 2};
    for (int q = 0; q < 3; q++) {
        sla_int k = picks[q];
        double h = 1e-5 * fmax(1.0, fabs(vals[k])), v0 = vals[k], Lpm[2];
        sla_solver_options f = sa_opts(SLA_METHOD_GMRES, 1e-13);
        for (int side = 0; side < 2; side++) {
            vals[k] = v0 + (side ? -h : h);
            CHECK_OK(ctx, sla_solve(ctx, B, &f, b, xp, NULL));
            Lpm[side] = 0.0;
            for (sla_int i = 0; i < n; i++) Lpm[side] += g[i] * xp[i];
        }
        vals[k] = v0;
        double err = fabs((Lpm[0] - Lpm[1]) / (2.0 * h) - gA[k]) / fmax(1.0, fabs(gA[k]));
        worst = fmax(worst, err);
        CHECK(err < 1e-6);
    }
    printf("  VJP through the refreshed solver: dL/db vs LAPACK %.1e, dL/dA vs central "
           "differences (3 entries) %.1e\n", d, worst);
    free(g);
    free(gb);
    free(gA);
    free(xp);
    free(lr);
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&A);
    free(k0);
    free(k1);
    free(vals);
    free(colind);
    free(b);
    free(x);
}

/* saamg_reuse: a refresh with kappa changed by 1 % and by 50 % (random
 * kappa on diffusion2d) converges to rtol 1e-8 in each mode, with the
 * iterations of a full rebuild (none) beside; a refresh back to the
 * first values gives the first solution again (the kept hierarchy
 * renumbered from equal values is the set-up's, bitwise); and a VJP
 * through the refreshed solver against dense LAPACK and central
 * differences. */
static void test_reuse(sla_ctx *ctx)
{
    printf("refresh with saamg_reuse (diffusion2d 160^2, random kappa 0.1..10, CG rtol 1e-8):\n");
    const sla_int N = 160;
    sla_int nc = (N + 1) * (N + 1);
    double *k0 = malloc((size_t)nc * sizeof *k0), *k1 = malloc((size_t)nc * sizeof *k1);
    unsigned long long seed = 77;
    for (sla_int c = 0; c < nc; c++) k0[c] = pow(10.0, tu_rand(&seed));
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_diffusion2d(ctx, N, k0, &A));
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *vals = calloc((size_t)nnz, sizeof *vals); /* from_csr reads the values */
    sla_int *colind = malloc((size_t)nnz * sizeof *colind);
    sla_matrix_get_colind(A, colind);
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(A), colind, SLA_F64, 1, vals,
                                      SLA_BORROW, &B));
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    double *x0 = malloc((size_t)n * sizeof *x0);
    tu_fill(b, n, 31);
    const double change[] = {0.01, 0.5};
    for (int ch = 0; ch < 2; ch++) {
        unsigned long long s2 = 99;
        for (sla_int c = 0; c < nc; c++) k1[c] = k0[c] * (1.0 + change[ch] * tu_rand(&s2));
        long long its[4];
        for (int mode = 0; mode < 4; mode++) {
            sla_solver_options o = sa_opts(SLA_METHOD_CG, 1e-8);
            o.saamg_reuse = mode;
            sla_solver *S = NULL;
            sla_solve_info info;
            CHECK_OK(ctx, sla_gen_diffusion2d_values(ctx, N, k0, vals));
            CHECK_OK(ctx, sla_solver_create(ctx, B, &o, &S));
            CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x0, n, &info));
            long long it0 = info.iterations;
            CHECK_OK(ctx, sla_gen_diffusion2d_values(ctx, N, k1, vals));
            CHECK_OK(ctx, sla_solver_refresh(ctx, S));
            CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
            double res = tu_relres(B, 0, b, x, 0);
            CHECK(info.converged && res < 1e-8);
            its[mode] = info.iterations;
            if (mode == 3) /* hierarchy: kept for 1 %, recomputed for 50 % (SAAMG_KEEP 1.25) */
                CHECK(strstr(info.note, ch ? "recomputed the coarse levels" : "kept the coarse levels"));
            /* back to the first values: the first hierarchy again */
            CHECK_OK(ctx, sla_gen_diffusion2d_values(ctx, N, k0, vals));
            CHECK_OK(ctx, sla_solver_refresh(ctx, S));
            CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
            double back = tu_reldiff(n, x, x0);
            CHECK(back < 1e-13 && info.iterations == it0);
            printf("  kappa changed by <= %2.0f %%, reuse %-13s: set-up %lld, after refresh %lld "
                   "iterations (residual %.1e); back to the first values: %lld, difference %.0e\n",
                   100.0 * change[ch], reuse_names[mode], it0, its[mode], res,
                   (long long)info.iterations, back);
            sla_solver_destroy(&S);
        }
        /* reuse costs at most a few iterations against a rebuild */
        for (int mode = 0; mode < 4; mode++)
            CHECK((double)its[mode] <= (ch ? 1.5 : 1.1) * (double)its[2] + 2.0);
    }

    sla_matrix_destroy(&B);
    sla_matrix_destroy(&A);
    free(k0), free(k1), free(vals), free(colind), free(b), free(x), free(x0);
    test_reuse_vjp(ctx);
}

/* saamg_reuse = hierarchy watches every entry, not only the diagonal: a
 * 1 % change keeps the coarse levels; an anisotropy turned by 90 degrees
 * (-(eps u_xx + u_yy) -> -(u_xx + eps u_yy): the same diagonal, entries
 * moved 100-fold) rebuilds the hierarchy, where interpolation (whose
 * guard sees the diagonal only) keeps a P aggregated along the old strong
 * direction and takes many more iterations. */
static void test_reuse_turned(sla_ctx *ctx)
{
    const sla_int N = 120;
    const double eps = 0.01;
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_aniso2d(ctx, N, eps, &A));
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    const sla_int *rp = sla_matrix_rowptr(A);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    const double *v0 = sla_matrix_values(A, 0);
    double *v = malloc((size_t)nnz * sizeof *v), *b = malloc((size_t)n * sizeof *b);
    double *x = calloc((size_t)n, sizeof *x);
    tu_fill(b, n, 5);
    long long its[2];
    for (int mode = 0; mode < 2; mode++) {
        memcpy(v, v0, (size_t)nnz * sizeof *v);
        sla_matrix *B = NULL;
        CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, rp, ci, SLA_F64, 1, v, SLA_BORROW, &B));
        sla_solver_options o = sa_opts(SLA_METHOD_CG, 1e-8);
        o.saamg_reuse = mode ? 3 : 0;
        sla_solver *S = NULL;
        sla_solve_info info;
        CHECK_OK(ctx, sla_solver_create(ctx, B, &o, &S));
        CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
        for (sla_int i = 0; i < n; i++) /* 1 % on every entry, kept symmetric */
            for (sla_int p = rp[i]; p < rp[i + 1]; p++)
                v[p] = v0[p] * (1.0 + 0.01 * sin((double)(i + ci[p])));
        CHECK_OK(ctx, sla_solver_refresh(ctx, S));
        CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
        CHECK(info.converged && tu_relres(B, 0, b, x, 0) < 1e-8);
        if (mode) CHECK(strstr(info.note, "kept the coarse levels") != NULL);
        for (sla_int i = 0; i < n; i++) /* the x couplings (j = i +- 1) become the strong ones */
            for (sla_int p = rp[i]; p < rp[i + 1]; p++)
                if (ci[p] != i) v[p] = (ci[p] == i - 1 || ci[p] == i + 1) ? -1.0 : -eps;
        CHECK_OK(ctx, sla_solver_refresh(ctx, S));
        CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
        CHECK(info.converged && tu_relres(B, 0, b, x, 0) < 1e-8);
        its[mode] = info.iterations;
        if (mode) CHECK(strstr(info.note, "rebuilt the hierarchy (an entry of A moved by") != NULL);
        printf("  aniso2d %lld^2 eps %g turned by 90 degrees, reuse %s: %lld iterations%s%s\n",
               (long long)N, eps, mode ? "hierarchy" : "interpolation", its[mode],
               mode ? "; note: " : "", mode ? info.note : "");
        sla_solver_destroy(&S);
        sla_matrix_destroy(&B);
    }
    CHECK(2 * its[1] < its[0]); /* rebuilt for the turned couplings; interpolation kept P */
    sla_matrix_destroy(&A);
    free(ci), free(v), free(b), free(x);

    /* one level (its dense factor is the whole cycle): refactored at every
     * refresh, so the solve stays exact in one step */
    sla_matrix *P = NULL, *B = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 20, &P));
    n = sla_matrix_nrows(P), nnz = sla_matrix_nnz(P);
    double *w = malloc((size_t)nnz * sizeof *w), *c = malloc((size_t)n * sizeof *c);
    double *y = calloc((size_t)n, sizeof *y);
    ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_colind(P, ci);
    memcpy(w, sla_matrix_values(P, 0), (size_t)nnz * sizeof *w);
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(P), ci, SLA_F64, 1, w, SLA_BORROW, &B));
    tu_fill(c, n, 9);
    sla_solver_options o = sa_opts(SLA_METHOD_CG, 1e-10);
    o.saamg_reuse = 3;
    sla_solver *S = NULL;
    sla_solve_info info;
    CHECK_OK(ctx, sla_solver_create(ctx, B, &o, &S));
    const sla_int *prp = sla_matrix_rowptr(P);
    for (sla_int i = 0; i < n; i++) /* D A D, D within 1 +- 0.1 (a stale factor: 5 iterations) */
        for (sla_int k = prp[i]; k < prp[i + 1]; k++)
            w[k] *= (1.0 + 0.1 * sin((double)i)) * (1.0 + 0.1 * sin((double)ci[k]));
    CHECK_OK(ctx, sla_solver_refresh(ctx, S));
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, c, n, y, n, &info));
    CHECK(info.converged && info.iterations <= 2 && tu_relres(B, 0, c, y, 0) < 1e-10);
    printf("  one level (poisson2d 20^2), reuse hierarchy, new values: %lld iteration(s)\n",
           (long long)info.iterations);
    sla_solver_destroy(&S);
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&P);
    free(ci), free(w), free(c), free(y);
}

/* 2D Poisson N x N with `shift` subtracted from the diagonal. */
static sla_matrix *shifted_poisson2d(sla_ctx *ctx, sla_int N, double shift)
{
    sla_matrix *P = NULL, *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, N, &P));
    sla_int n = sla_matrix_nrows(P), nnz = sla_matrix_nnz(P);
    double *v = malloc((size_t)nnz * sizeof *v);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    memcpy(v, sla_matrix_values(P, 0), (size_t)nnz * sizeof *v);
    sla_matrix_get_colind(P, ci);
    const sla_int *rp = sla_matrix_rowptr(P);
    for (sla_int i = 0; i < n; i++)
        for (sla_int p = rp[i]; p < rp[i + 1]; p++)
            if (ci[p] == i) v[p] -= shift;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, rp, ci, SLA_F64, 1, v, SLA_COPY, &A));
    free(v);
    free(ci);
    sla_matrix_destroy(&P);
    return A;
}

/* An indefinite symmetric matrix with a positive diagonal: saamg refuses
 * it at set-up (a coarse operator's diagonal turns nonpositive) instead of
 * a breakdown in the Krylov method; method=auto, which priced CG + saamg
 * for it, falls back to LU and says why. */
static void test_indefinite(sla_ctx *ctx)
{
    int nt0 = sla_ctx_threads(ctx);
    sla_ctx_set_threads(ctx, 2);
    sla_matrix *A = shifted_poisson2d(ctx, 250, 1.3);
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    for (sla_int i = 0; i < n; i++) b[i] = 1.0;
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_MINRES;
    o.precond = SLA_PRECOND_SAAMG;
    sla_solve_info inf;
    CHECK_ERR(ctx, sla_solve(ctx, A, &o, b, x, &inf), SLA_ERR_NOT_SPD, "not positive definite");
    sla_solver_options_default(&o);
    o.rtol = 1e-10;
    if (sla_method_available(SLA_METHOD_LU)) {
        CHECK_OK(ctx, sla_solve(ctx, A, &o, b, x, &inf));
        CHECK(inf.converged && inf.residual < 1e-10);
        CHECK(strstr(inf.note, "saamg refused") != NULL);
        printf("  auto on an indefinite 250^2 Laplacian: %s; note: %s\n", inf.method, inf.note);
    }
    /* a refresh to the indefinite values is refused as well, whatever
     * saamg_reuse keeps; a refresh back to SPD values rebuilds and solves */
    sla_matrix *P = shifted_poisson2d(ctx, 250, 0.0);
    sla_int nnz = sla_matrix_nnz(P);
    double *v = malloc((size_t)nnz * sizeof *v);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    memcpy(v, sla_matrix_values(P, 0), (size_t)nnz * sizeof *v);
    sla_matrix_get_colind(P, ci);
    const sla_int *rp = sla_matrix_rowptr(P);
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, rp, ci, SLA_F64, 1, v, SLA_BORROW, &B));
    for (int mode = 0; mode < 4; mode++) {
        sla_solver_options_default(&o);
        o.method = SLA_METHOD_CG;
        o.precond = SLA_PRECOND_SAAMG;
        o.saamg_reuse = mode;
        sla_solver *S = NULL;
        CHECK_OK(ctx, sla_solver_create(ctx, B, &o, &S));
        for (sla_int i = 0; i < n; i++)
            for (sla_int p = rp[i]; p < rp[i + 1]; p++)
                if (ci[p] == i) v[p] -= 1.3;
        CHECK_ERR(ctx, sla_solver_refresh(ctx, S), SLA_ERR_NOT_SPD, "not positive definite");
        printf("  refresh to the indefinite values, reuse %s: %s\n", reuse_names[mode],
               sla_ctx_message(ctx));
        for (sla_int i = 0; i < n; i++)
            for (sla_int p = rp[i]; p < rp[i + 1]; p++)
                if (ci[p] == i) v[p] += 1.3;
        CHECK_OK(ctx, sla_solver_refresh(ctx, S));
        CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &inf));
        CHECK(inf.converged && inf.iterations < 30 && tu_relres(B, 0, b, x, 0) < 1e-8);
        sla_solver_destroy(&S);
    }
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&P);
    free(v);
    free(ci);
    sla_ctx_set_threads(ctx, nt0);
    sla_matrix_destroy(&A);
    free(b);
    free(x);
}

static void test_errors(sla_ctx *ctx)
{
    printf("errors:\n");
    /* zero diagonal: a 1D Laplacian with one diagonal entry zeroed */
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 50, &A));
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *vals = malloc((size_t)nnz * sizeof *vals);
    memcpy(vals, sla_matrix_values(A, 0), (size_t)nnz * sizeof *vals);
    sla_int *colind = malloc((size_t)nnz * sizeof *colind);
    sla_matrix_get_colind(A, colind);
    const sla_int *rp = sla_matrix_rowptr(A);
    for (sla_int k = rp[777]; k < rp[778]; k++)
        if (colind[k] == 777) vals[k] = 0.0;
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, rp, colind, SLA_F64, 1, vals, SLA_COPY, &B));
    sla_solver_options o = sa_opts(SLA_METHOD_GMRES, 1e-8);
    sla_solver *S = NULL;
    CHECK_ERR(ctx, sla_solver_create(ctx, B, &o, &S), SLA_ERR_SINGULAR, "row 777");
    CHECK(S == NULL);
    printf("  zero diagonal: %s\n", sla_ctx_message(ctx));
    sla_matrix_destroy(&B);
    /* the same at a refresh, for each saamg_reuse (interpolation and
     * hierarchy check level 0's diagonal in their own pass): the row named,
     * a negative entry there refused as not SPD, good values solved again */
    double *v2 = malloc((size_t)nnz * sizeof *v2);
    memcpy(v2, sla_matrix_values(A, 0), (size_t)nnz * sizeof *v2);
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, rp, colind, SLA_F64, 1, v2, SLA_BORROW, &B));
    sla_int d777 = rp[777];
    while (colind[d777] != 777) d777++;
    for (int mode = 0; mode < 4; mode++) {
        sla_solver_options q = sa_opts(SLA_METHOD_CG, 1e-8);
        q.saamg_reuse = mode;
        CHECK_OK(ctx, sla_solver_create(ctx, B, &q, &S));
        double keep = v2[d777];
        v2[d777] = 0.0;
        CHECK_ERR(ctx, sla_solver_refresh(ctx, S), SLA_ERR_SINGULAR, "row 777");
        v2[d777] = -keep;
        CHECK_ERR(ctx, sla_solver_refresh(ctx, S), SLA_ERR_NOT_SPD, "row 777");
        if (mode == 3) printf("  a refresh to a negative a_777,777: %s\n", sla_ctx_message(ctx));
        v2[d777] = keep;
        CHECK_OK(ctx, sla_solver_refresh(ctx, S));
        double *bb = malloc((size_t)n * sizeof *bb), *xx = malloc((size_t)n * sizeof *xx);
        for (sla_int i = 0; i < n; i++) bb[i] = 1.0;
        sla_solve_info inf;
        CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, bb, n, xx, n, &inf));
        CHECK(inf.converged && tu_relres(B, 0, bb, xx, 0) < 1e-7);
        free(bb), free(xx);
        sla_solver_destroy(&S);
    }
    sla_matrix_destroy(&B);
    free(v2);
    /* the option name parses, with a suggestion for a typo */
    sla_solver_options p;
    sla_solver_options_default(&p);
    CHECK_OK(ctx, sla_solver_options_parse(ctx, "precond=saamg", &p));
    CHECK(p.precond == SLA_PRECOND_SAAMG);
    CHECK(strcmp(sla_precond_name(SLA_PRECOND_SAAMG), "saamg") == 0);
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "precond=saamgg", &p), SLA_ERR_ARGUMENT,
              "saamg");
    CHECK(p.saamg_reuse == 0);
    CHECK_OK(ctx, sla_solver_options_parse(ctx, "saamg_reuse=full", &p));
    CHECK(p.saamg_reuse == 1);
    CHECK_OK(ctx, sla_solver_options_parse(ctx, "saamg_reuse=none", &p));
    CHECK(p.saamg_reuse == 2);
    CHECK_OK(ctx, sla_solver_options_parse(ctx, "saamg_reuse=hierarchy", &p));
    CHECK(p.saamg_reuse == 3);
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "saamg_reuse=interp", &p), SLA_ERR_ARGUMENT,
              "interpolation");
    /* a diagonal matrix does not coarsen: one level, exact */
    sla_int *dr = malloc(6000 * sizeof *dr), *dc = malloc(5999 * sizeof *dc);
    double *dv = malloc(5999 * sizeof *dv), bb[5999], xx[5999];
    for (sla_int i = 0; i < 5999; i++) dr[i] = i, dc[i] = i, dv[i] = 1.0 + (double)(i % 5), bb[i] = 1.0;
    dr[5999] = 5999;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 5999, 5999, dr, dc, SLA_F64, 1, dv, SLA_COPY, &B));
    sla_solver_options c = sa_opts(SLA_METHOD_CG, 1e-12);
    sla_solve_info info;
    CHECK_OK(ctx, sla_solve(ctx, B, &c, bb, xx, &info));
    CHECK(info.iterations <= 1);
    CHECK_CLOSE(xx[3], 1.0 / 4.0, 1e-14);
    sla_matrix_destroy(&B);
    free(dr);
    free(dc);
    free(dv);
    free(vals);
    free(colind);
    sla_matrix_destroy(&A);
}

/* ---- allocation failures: every allocation of the paths fails once ---- */

static sla_status sa_scenario(sla_ctx *c, const sla_matrix *A, sla_method m, bool transpose,
                              int reuse)
{
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    for (sla_int i = 0; i < n; i++) b[i] = 1.0;
    sla_solver_options o = sa_opts(m, 1e-8);
    o.saamg_reuse = reuse;
    sla_solver *S = NULL;
    sla_status st = sla_solver_create(c, A, &o, &S);
    if (st >= 0) st = sla_solver_solve(c, S, 0, 1, b, n, x, n, NULL);
    if (st >= 0 && transpose) st = sla_solver_solve_transpose(c, S, 0, 1, b, n, x, n, NULL);
    if (st >= 0) st = sla_solver_refresh(c, S);
    if (st >= 0) st = sla_solver_solve(c, S, 0, 1, b, n, x, n, NULL);
    if (st >= 0 && transpose) st = sla_solver_solve_transpose(c, S, 0, 1, b, n, x, n, NULL);
    sla_solver_destroy(&S);
    free(b);
    free(x);
    return st;
}

static void alloc_sweep(const sla_matrix *A, sla_method m, bool transpose, int reuse,
                        const char *what)
{
    counter cnt = {0, -1, 0, 0};
    sla_allocator a = {count_malloc, count_free, &cnt};
    sla_ctx *c = NULL;
    sla_ctx_create(&c);
    sla_ctx_set_allocator(c, &a);
    sla_ctx_set_threads(c, 2);
    CHECK(sa_scenario(c, A, m, transpose, reuse) >= 0);
    CHECK(cnt.live == 0);
    long total = cnt.calls, points = 0;
    for (long k = 0; k < total; k++) {
        cnt.calls = 0;
        cnt.fail_at = k;
        cnt.failures = 0;
        sla_status st = sa_scenario(c, A, m, transpose, reuse);
        if (cnt.failures == 0) continue;
        points++;
        if (st != SLA_ERR_NOMEM || cnt.live != 0)
            fprintf(stderr, "  failing allocation %ld -> %s, %ld live: %s\n", k,
                    sla_status_name(st), cnt.live, sla_ctx_message(c));
        CHECK(st == SLA_ERR_NOMEM);
        CHECK(cnt.live == 0);
    }
    printf("allocation failures (%s, saamg_reuse %s): %ld points checked\n", what,
           reuse_names[reuse], points);
    CHECK(points > 10);
    sla_ctx_destroy(&c);
}

static void test_alloc_failures(void)
{
    sla_matrix *A = NULL;
    CHECK_OK(NULL, sla_gen_poisson(NULL, 2, 70, &A)); /* 4900 rows: three levels */
    for (int reuse = 0; reuse < 4; reuse++) alloc_sweep(A, SLA_METHOD_CG, true, reuse, "CG, poisson2d");
    sla_matrix_destroy(&A);
    CHECK_OK(NULL, sla_gen_convdiff2d(NULL, 40, 10.0, 5.0, &A));
    alloc_sweep(A, SLA_METHOD_GMRES, false, 0, "GMRES, convdiff2d");
    sla_matrix_destroy(&A);
}

/* method=auto picks CG + saamg for a large Laplacian-like SPD system where
 * its model says it beats plain CG and any factorization (2 threads for
 * the estimates): the solution matches a Cholesky solve, the adjoint runs
 * with the same hierarchy, and a small system stays with plain CG. */
static void test_auto(sla_ctx *ctx)
{
    int nt0 = sla_ctx_threads(ctx);
    sla_ctx_set_threads(ctx, 2);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 600, &A));
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    double *xr = malloc((size_t)n * sizeof *xr), *g = malloc((size_t)n * sizeof *g);
    for (sla_int i = 0; i < n; i++) b[i] = 1.0 + 0.5 * sin(0.001 * (double)i);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.auto_solves = 1;
    o.rtol = 1e-10;
    sla_solver *S = NULL;
    sla_solve_info inf;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    CHECK(sla_solver_method(S) == SLA_METHOD_CG);
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &inf));
    CHECK(!strcmp(inf.method, "cg") && !strcmp(inf.precond, "saamg"));
    CHECK(strstr(inf.note, "cg + saamg") != NULL);
    CHECK(inf.converged && inf.iterations <= 20);
    printf("auto on 2D Poisson 600^2: %s + %s, %lld iterations; note: %s\n", inf.method, inf.precond,
           (long long)inf.iterations, inf.note);
    sla_solve_info ainf;
    CHECK_OK(ctx, sla_solver_solve_vjp(ctx, S, 0, 1, x, n, b, n, g, n, NULL, &ainf));
    CHECK(!strcmp(ainf.precond, "saamg") && ainf.converged && ainf.iterations <= 20);
    sla_solver_destroy(&S);
    /* the reference: Cholesky, if a direct backend is in the build */
    sla_solver_options d = o;
    d.method = SLA_METHOD_CHOLESKY;
    if (sla_solver_create(ctx, A, &d, &S) == SLA_OK) {
        CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, xr, n, NULL));
        CHECK(tu_reldiff(n, x, xr) < 1e-7);
        sla_solver_destroy(&S);
    }
    /* plain CG stays the choice for a small system */
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 30, &B));
    CHECK_OK(ctx, sla_solver_create(ctx, B, &o, &S));
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, 900, x, 900, &inf));
    CHECK(strcmp(inf.precond, "saamg") != 0);
    sla_solver_destroy(&S);
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&A);
    sla_ctx_set_threads(ctx, nt0);
    free(b);
    free(x);
    free(xr);
    free(g);
}

/* method=auto on 3D Poisson (issue 22): plain CG's iteration grows with
 * the diameter only, so CG stays the choice at 48^3, but at 90^3 (7.3e5
 * rows, its iterations from DRAM) with the default forward + adjoint solves
 * CG + saamg is priced cheaper and chosen; its iteration count there is
 * saamg's 3D one. The choice is asserted, not timed. */
static void test_auto_3d(sla_ctx *ctx)
{
    int nt0 = sla_ctx_threads(ctx);
    sla_ctx_set_threads(ctx, 2);
    const sla_int sizes[2] = {48, 90};
    for (int c = 0; c < 2; c++) {
        sla_matrix *A = NULL;
        CHECK_OK(ctx, sla_gen_poisson(ctx, 3, sizes[c], &A));
        sla_int n = sla_matrix_nrows(A);
        double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
        for (sla_int i = 0; i < n; i++) b[i] = 1.0;
        sla_solver_options o;
        sla_solver_options_default(&o); /* auto, auto_solves 2: a solve and its adjoint */
        sla_solver *S = NULL;
        sla_solve_info inf;
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
        CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &inf));
        printf("auto on 3D Poisson %lld^3: %s + %s, %lld iterations; note: %s\n", (long long)sizes[c],
               inf.method, inf.precond, (long long)inf.iterations, inf.note);
        CHECK(!strcmp(inf.method, "cg") && inf.converged);
        if (c == 0) {
            CHECK(!strcmp(inf.precond, "none") && strstr(inf.note, "-> cg") != NULL);
        } else {
            CHECK(!strcmp(inf.precond, "saamg") && strstr(inf.note, "-> cg + saamg") != NULL);
            CHECK(inf.iterations <= 18);
        }
        sla_solver_destroy(&S);
        sla_matrix_destroy(&A);
        free(b);
        free(x);
    }
    sla_ctx_set_threads(ctx, nt0);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    test_scaling(ctx);
    test_reference(ctx);
    test_symmetry(ctx);
    test_nonsymmetric(ctx);
    check_vjp(ctx, SLA_PRECOND_SAAMG, 36, SLA_PRECOND_SAAMG); /* 1296 rows: two levels */
    test_refresh(ctx);
    test_reuse(ctx);
    test_reuse_turned(ctx);
    test_batch(ctx);
    test_errors(ctx);
    test_auto(ctx);
    test_auto_3d(ctx);
    test_indefinite(ctx);
    test_alloc_failures();
    sla_ctx_destroy(&ctx);
    return tu_finish("test_saamg");
}
