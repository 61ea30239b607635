/* LOBPCG: the smallest eigenpairs against dense LAPACK dsyevd and against
 * eigsh, with each preconditioner (none, Jacobi, IC(0), AMG, a user hook),
 * non-convergence reported, start blocks, errors, allocation failures; the
 * generalized A x = l B x (sla_lobpcg_generalized) against dense dsygvd. */
#include "test_util.h"

typedef struct { long calls; const double *dinv; long long n; } user_pc;

static sla_status my_jacobi(void *u, sla_int n, const double *r, double *z)
{
    user_pc *p = u;
    p->calls++;
    for (sla_int i = 0; i < n; i++) z[i] = p->dinv[i] * r[i];
    return SLA_OK;
}

static void check(sla_ctx *ctx, const char *name, const sla_matrix *A, sla_lobpcg_options *o, int expect_ok)
{
    long long n = sla_matrix_nrows(A);
    int k = (int)o->k;
    double *w = malloc((size_t)n * sizeof *w), *Z = malloc((size_t)(n * n) * sizeof *Z);
    sla_matrix_to_dense(NULL, A, 0, Z, n);
    LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'U', (lapack_int)n, Z, (lapack_int)n, w);
    double l[16], res[16], *V = malloc((size_t)(n * k) * sizeof *V);
    sla_eigsh_info info;
    sla_status st = sla_lobpcg(ctx, A, 0, o, l, V, n, res, &info);
    if (!expect_ok) {
        CHECK(st == SLA_NOT_CONVERGED);
        CHECK(!info.converged && info.nconv < k);
        printf("  %-24s %-16s not converged as asked: %lld its, nconv %lld\n", name, info.method,
               (long long)info.iterations, (long long)info.nconv);
        free(w); free(Z); free(V);
        return;
    }
    CHECK_OK(ctx, st);
    /* ||A||_1, the residual scale of the stopping test */
    double err = 0, anorm = 0;
    {
        const sla_int *rp = sla_matrix_rowptr(A);
        const double *v = sla_matrix_values(A, 0);
        for (long long i = 0; i < n; i++) {
            double rs = 0;
            for (sla_int q = rp[i]; q < rp[i + 1]; q++) rs += fabs(v[q]);
            anorm = fmax(anorm, rs);
        }
    }
    for (int i = 0; i < k; i++) {
        err = fmax(err, fabs(l[i] - w[i]) / w[i]);
        CHECK(res[i] <= o->tol * anorm);
        if (i) CHECK(l[i] >= l[i - 1]);
        for (int j = 0; j <= i; j++) {
            double d = 0;
            for (long long r = 0; r < n; r++) d += V[i * n + r] * V[j * n + r];
            CHECK(fabs(d - (i == j)) < 1e-8);
        }
    }
    CHECK(err < 1e-10);
    CHECK(info.converged && info.nconv == k);
    printf("  %-24s %-16s k=%d: [%.8f .. %.8f] rel err %.1e, %lld its, %lld products\n", name, info.method, k,
           l[0], l[k - 1], err, (long long)info.iterations, (long long)info.nops);
    free(w); free(Z); free(V);
}

/* A x = l B x: the k smallest against dense dsygvd, B-orthonormal vectors. */
static void check_generalized(sla_ctx *ctx, const char *name, const sla_matrix *A, const sla_matrix *B,
                              sla_lobpcg_options *o)
{
    int n = (int)sla_matrix_nrows(A), k = (int)o->k;
    double *a = malloc((size_t)n * n * sizeof *a), *b = malloc((size_t)n * n * sizeof *b),
           *w = malloc((size_t)n * sizeof *w), *l = malloc((size_t)k * sizeof *l),
           *X = malloc((size_t)n * k * sizeof *X), *res = malloc((size_t)k * sizeof *res),
           *t = malloc((size_t)n * sizeof *t);
    sla_matrix_to_dense(NULL, A, 0, a, n);
    sla_matrix_to_dense(NULL, B, 0, b, n);
    LAPACKE_dsygvd(LAPACK_COL_MAJOR, 1, 'N', 'U', n, a, n, b, n, w);
    sla_eigsh_info info;
    CHECK_OK(ctx, sla_lobpcg_generalized(ctx, A, 0, B, 0, o, l, X, n, res, &info));
    double orth = 0.0;
    for (int i = 0; i < k; i++) {
        CHECK(fabs(l[i] - w[i]) <= 1e-8 * fabs(w[n - 1]));
        sla_matvec(ctx, B, 0, 1, X + (size_t)i * n, n, t, n);
        for (int j = 0; j < k; j++) {
            double d = 0.0;
            for (int r = 0; r < n; r++) d += X[(size_t)j * n + r] * t[r];
            orth = fmax(orth, fabs(d - (i == j)));
        }
    }
    CHECK(orth < 1e-8);
    printf("%s generalized: %lld iterations, largest residual %.2e, B-orthogonality %.1e, l0 = %.10g (dense %.10g)\n",
           name, (long long)info.iterations, info.max_residual, orth, l[0], w[0]);
    free(a); free(b); free(w); free(l); free(X); free(res); free(t);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    sla_matrix *P = NULL, *R = NULL, *D = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 24, &P));
    CHECK_OK(ctx, sla_gen_random(ctx, 300, 5, SLA_GEN_SPD, 9, &R));
    double kap[26 * 26];
    for (int i = 0; i < 26 * 26; i++) kap[i] = 1.0 + 0.9 * sin(0.3 * i);
    CHECK_OK(ctx, sla_gen_diffusion2d(ctx, 25, kap, &D));
    sla_lobpcg_options o;
    sla_lobpcg_options_default(&o);
    {
        double l[6];
        if (sla_lobpcg(ctx, P, 0, &o, l, NULL, 0, NULL, NULL) == SLA_ERR_UNAVAILABLE) {
            printf("lobpcg unavailable: %s\n", sla_ctx_message(ctx));
            sla_matrix_destroy(&P); sla_matrix_destroy(&R); sla_matrix_destroy(&D);
            sla_ctx_destroy(&ctx);
            return tu_finish("test_lobpcg (skipped)");
        }
    }
    o.k = 4;
    o.tol = 1e-9;
    o.maxiter = 1000;
    sla_precond_kind kinds[] = {SLA_PRECOND_NONE, SLA_PRECOND_JACOBI, SLA_PRECOND_IC0, SLA_PRECOND_AMG};
    for (int c = 0; c < 4; c++) {
        o.pc.precond = kinds[c];
        if (kinds[c] == SLA_PRECOND_AMG) {
            double l[4];
            if (sla_lobpcg(ctx, P, 0, &o, l, NULL, 0, NULL, NULL) == SLA_ERR_UNAVAILABLE) continue;
        }
        check(ctx, "poisson2d 24", P, &o, 1);
        check(ctx, "diffusion2d 25", D, &o, 1);
    }
    o.pc.precond = SLA_PRECOND_JACOBI;
    o.k = 6;
    check(ctx, "random spd 300", R, &o, 1);

    /* the user hook is called, and works */
    {
        long long n = sla_matrix_nrows(D);
        double *dinv = malloc((size_t)n * sizeof *dinv);
        const sla_int *rp = sla_matrix_rowptr(D);
        sla_int *ci = malloc((size_t)sla_matrix_nnz(D) * sizeof *ci);
        sla_matrix_get_colind(D, ci);
        const double *v = sla_matrix_values(D, 0);
        for (long long i = 0; i < n; i++)
            for (sla_int q = rp[i]; q < rp[i + 1]; q++)
                if (ci[q] == i) dinv[i] = 1.0 / v[q];
        user_pc up = {0, dinv, n};
        o.k = 3;
        o.pc.precond = SLA_PRECOND_USER;
        o.pc.user_precond.apply = my_jacobi;
        o.pc.user_precond.user = &up;
        check(ctx, "diffusion2d 25 (user)", D, &o, 1);
        CHECK(up.calls > 3);
        free(dinv);
        free(ci);
    }

    /* eigsh agrees (shift-invert around 0) */
    {
        sla_eigsh_options e;
        sla_eigsh_options_default(&e);
        e.k = 5;
        e.which = SLA_EIG_SM;
        double le[5], ll[5];
        CHECK_OK(ctx, sla_eigsh(ctx, D, 0, &e, le, NULL, 0, NULL, NULL));
        sla_lobpcg_options_default(&o);
        o.k = 5;
        o.tol = 1e-9;
        o.pc.precond = SLA_PRECOND_IC0;
        CHECK_OK(ctx, sla_lobpcg(ctx, D, 0, &o, ll, NULL, 0, NULL, NULL));
        for (int i = 0; i < 5; i++) CHECK_CLOSE(ll[i], le[i], 1e-12);
    }

    /* non-convergence is reported; a start block is used */
    sla_lobpcg_options_default(&o);
    o.k = 4;
    o.pc.precond = SLA_PRECOND_NONE;
    o.maxiter = 3;
    check(ctx, "poisson2d 24", P, &o, 0);
    {
        long long n = sla_matrix_nrows(P);
        double *x0 = malloc((size_t)(n * 4) * sizeof *x0), l1[4], l2[4];
        tu_fill(x0, n * 4, 77);
        o.x0 = x0;
        o.maxiter = 500;
        o.pc.precond = SLA_PRECOND_JACOBI;
        CHECK_OK(ctx, sla_lobpcg(ctx, P, 0, &o, l1, NULL, 0, NULL, NULL));
        o.x0 = NULL;
        CHECK_OK(ctx, sla_lobpcg(ctx, P, 0, &o, l2, NULL, 0, NULL, NULL));
        for (int i = 0; i < 4; i++) CHECK_CLOSE(l1[i], l2[i], 1e-8);
        x0[5] = NAN;
        o.x0 = x0;
        CHECK_ST(ctx, sla_lobpcg(ctx, P, 0, &o, l1, NULL, 0, NULL, NULL), SLA_ERR_VALUE);
        o.x0 = NULL;
        free(x0);
    }

    /* errors */
    {
        double l[8];
        sla_matrix *C = NULL;
        CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 6, 10, 0, &C));
        sla_lobpcg_options_default(&o);
        o.k = 2;
        CHECK_ERR(ctx, sla_lobpcg(ctx, C, 0, &o, l, NULL, 0, NULL, NULL), SLA_ERR_ARGUMENT, "not symmetric");
        o.k = 200;
        CHECK_ERR(ctx, sla_lobpcg(ctx, P, 0, &o, l, NULL, 0, NULL, NULL), SLA_ERR_ARGUMENT, "3 k < n");
        o.k = 2;
        o.tol = 0;
        CHECK_ST(ctx, sla_lobpcg(ctx, P, 0, &o, l, NULL, 0, NULL, NULL), SLA_ERR_ARGUMENT);
        o.tol = 1e-8;
        CHECK_ST(ctx, sla_lobpcg(ctx, P, 3, &o, l, NULL, 0, NULL, NULL), SLA_ERR_INDEX);
        sla_matrix_destroy(&C);
    }

    /* allocation failures */
    {
        sla_lobpcg_options_default(&o);
        o.k = 3;
        o.pc.precond = SLA_PRECOND_IC0;
        int ok = 0, nomem = 0;
        double l[3];
        for (long fail = 0; fail < 200 && !ok; fail++) {
            counter cnt = {0, fail, 0, 0};
            sla_allocator al = {count_malloc, count_free, &cnt};
            sla_ctx *c2 = NULL;
            sla_ctx_create(&c2);
            sla_ctx_set_allocator(c2, &al);
            sla_status st = sla_lobpcg(c2, P, 0, &o, l, NULL, 0, NULL, NULL);
            CHECK(cnt.live == 0);
            sla_ctx_destroy(&c2);
            if (cnt.failures == 0) {
                CHECK(st == SLA_OK);
                ok = 1;
            } else {
                CHECK(st == SLA_ERR_NOMEM);
                nomem++;
            }
        }
        CHECK(ok && nomem >= 2);
    }

    /* generalized: B a random SPD matrix, then the identity's negative (refused) */
    {
        sla_matrix *B = NULL, *E = NULL;
        CHECK_OK(ctx, sla_gen_random(ctx, 576, 3, SLA_GEN_SPD, 4, &B));
        o.k = 4;
        o.tol = 1e-9;
        o.pc.precond = SLA_PRECOND_JACOBI;
        check_generalized(ctx, "poisson2d 24 / random spd", P, B, &o);
        o.pc.precond = SLA_PRECOND_IC0;
        check_generalized(ctx, "poisson2d 24 / random spd (ic0)", P, B, &o);
        sla_int idx[576];
        double mone[576];
        for (int i = 0; i < 576; i++) idx[i] = i, mone[i] = -1.0;
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, 576, 576, 576, idx, idx, SLA_F64, 1, mone, NULL, &E));
        double l[4];
        CHECK_ERR(ctx, sla_lobpcg_generalized(ctx, P, 0, E, 0, &o, l, NULL, 0, NULL, NULL), SLA_ERR_NOT_SPD,
                  "not positive definite");
        CHECK_ERR(ctx, sla_lobpcg_generalized(ctx, P, 0, R, 0, &o, l, NULL, 0, NULL, NULL), SLA_ERR_DIMENSION,
                  "B is");
        CHECK_ERR(ctx, sla_lobpcg_generalized(ctx, P, 0, NULL, 0, &o, l, NULL, 0, NULL, NULL), SLA_ERR_ARGUMENT,
                  "B is NULL");
        sla_matrix_destroy(&B);
        sla_matrix_destroy(&E);
    }

    sla_matrix_destroy(&P);
    sla_matrix_destroy(&R);
    sla_matrix_destroy(&D);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_lobpcg");
}
