/* Nonlinear solves and their implicit-function gradients: Bratu and
 * nonlinear diffusion against a dense LAPACK Newton, gradients against
 * central finite differences and the tangent (JVP) from a dense solve,
 * gradient independence of the Newton path, the turning point, Anderson and
 * Picard, Newton-Krylov, bad inputs, callback errors, allocation failures. */
#include "test_util.h"

/* ---- independent references (dense, written here) -------------------- */

/* Bratu on an N x N grid: F = A u - h^2 mu_i e^{u_i}, 5-point A. */
static void ref_bratu_F(int N, const double *mu, int field, const double *u, double *F)
{
    double h = 1.0 / (N + 1), h2 = h * h;
    for (int y = 0; y < N; y++)
        for (int x = 0; x < N; x++) {
            int p = y * N + x;
            double s = 4 * u[p];
            if (x > 0) s -= u[p - 1];
            if (x < N - 1) s -= u[p + 1];
            if (y > 0) s -= u[p - N];
            if (y < N - 1) s -= u[p + N];
            F[p] = s - h2 * mu[field ? p : 0] * exp(u[p]);
        }
}

/* Dense Jacobian (column-major) of ref_bratu_F. */
static void ref_bratu_J(int N, const double *mu, int field, const double *u, double *J)
{
    int n = N * N;
    double h = 1.0 / (N + 1), h2 = h * h;
    memset(J, 0, sizeof(double) * (size_t)n * (size_t)n);
    for (int y = 0; y < N; y++)
        for (int x = 0; x < N; x++) {
            int p = y * N + x;
            J[p + (size_t)p * n] = 4 - h2 * mu[field ? p : 0] * exp(u[p]);
            if (x > 0) J[p + (size_t)(p - 1) * n] = -1;
            if (x < N - 1) J[p + (size_t)(p + 1) * n] = -1;
            if (y > 0) J[p + (size_t)(p - N) * n] = -1;
            if (y < N - 1) J[p + (size_t)(p + N) * n] = -1;
        }
}

static double nrm2(int n, const double *v)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i] * v[i];
    return sqrt(s);
}

static double sum(long long n, const double *v)
{
    double s = 0;
    for (long long i = 0; i < n; i++) s += v[i];
    return s;
}

/* Dense Newton with LAPACK for Bratu from u = 0. */
static int ref_bratu_newton(int N, const double *mu, int field, double *u)
{
    int n = N * N;
    double *F = malloc(sizeof(double) * n), *J = malloc(sizeof(double) * n * n);
    lapack_int *ipiv = malloc(sizeof(lapack_int) * n);
    memset(u, 0, sizeof(double) * n);
    int ok = 0;
    for (int it = 0; it < 30; it++) {
        ref_bratu_F(N, mu, field, u, F);
        if (nrm2(n, F) < 1e-14) {
            ok = 1;
            break;
        }
        ref_bratu_J(N, mu, field, u, J);
        LAPACKE_dgesv(LAPACK_COL_MAJOR, n, 1, J, n, ipiv, F, n);
        for (int i = 0; i < n; i++) u[i] -= F[i];
    }
    free(F);
    free(J);
    free(ipiv);
    return ok;
}

/* Solve J x = b (or J^T x = b) densely. */
static void dense_solve(int n, double *J, int transpose, double *x)
{
    lapack_int *ipiv = malloc(sizeof(lapack_int) * n);
    if (transpose)
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) {
                double t = J[i + (size_t)j * n];
                J[i + (size_t)j * n] = J[j + (size_t)i * n];
                J[j + (size_t)i * n] = t;
            }
    LAPACKE_dgesv(LAPACK_COL_MAJOR, n, 1, J, n, ipiv, x, n);
    free(ipiv);
}

/* ---- helpers -------------------------------------------------------- */

static sla_nl_options tight(sla_nl_method m)
{
    sla_nl_options o;
    sla_nl_options_default(&o);
    o.method = m;
    o.rtol = 0;
    o.atol = 1e-13;
    return o;
}

/* L = sum(u*(theta)) from u0 = 0. */
static double solve_L(sla_ctx *ctx, const sla_nl_problem *P, const sla_nl_options *o,
                      const double *theta, double *u)
{
    sla_nlsolver *S = NULL;
    CHECK_OK(ctx, sla_nlsolver_create(ctx, P, o, &S));
    memset(u, 0, sizeof(double) * (size_t)P->n);
    sla_nl_info info;
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, theta, u, &info));
    sla_nlsolver_destroy(&S);
    return sum(P->n, u);
}

/* ---- Bratu ----------------------------------------------------------- */

static void test_bratu_newton(sla_ctx *ctx)
{
    const int N = 16, n = N * N;
    double mus[] = {1.0, 5.0, 6.5};
    for (int t = 0; t < 3; t++) {
        double mu = mus[t];
        sla_nl_builtin *B = NULL;
        CHECK_OK(ctx, sla_nl_bratu2d(ctx, N, SLA_NL_BRATU_MU, &B));
        const sla_nl_problem *P = sla_nl_builtin_problem(B);
        CHECK(P->n == n && P->ntheta == 1);
        sla_nl_options o;
        sla_nl_options_default(&o);
        sla_nlsolver *S = NULL;
        CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
        double *u = calloc(n, sizeof *u), *ur = calloc(n, sizeof *ur), *F = calloc(n, sizeof *F);
        sla_nl_info info;
        CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, &mu, u, &info));
        CHECK(info.converged && info.reason > 0);
        CHECK(info.iterations >= 1 && info.iterations < 20);
        CHECK(info.history_len == info.iterations + 1);
        CHECK(info.history[info.history_len - 1] == info.residual);
        /* the residual, recomputed independently */
        ref_bratu_F(N, &mu, 0, u, F);
        CHECK(nrm2(n, F) < 1e-10);
        CHECK_CLOSE(nrm2(n, F), info.residual, 1e-3);
        /* against a dense LAPACK Newton */
        CHECK(ref_bratu_newton(N, &mu, 0, ur));
        CHECK(tu_reldiff(n, u, ur) < 1e-9);
        CHECK(u[n / 2 + N / 2] > 0); /* the lower branch: positive, bounded */
        sla_nlsolver_destroy(&S);
        sla_nl_builtin_destroy(&B);
        free(u);
        free(ur);
        free(F);
    }
}

/* dL/dmu (scalar) against central differences and against the tangent
 * du/dmu = -J^-1 dF/dmu from a dense solve. */
static void test_bratu_grad_mu(sla_ctx *ctx)
{
    const int N = 16, n = N * N;
    sla_nl_builtin *B = NULL;
    CHECK_OK(ctx, sla_nl_bratu2d(ctx, N, SLA_NL_BRATU_MU, &B));
    const sla_nl_problem *P = sla_nl_builtin_problem(B);
    sla_nl_options o = tight(SLA_NL_NEWTON);
    double mu = 3.0, g = 0, *u = calloc(n, sizeof *u), *gu = calloc(n, sizeof *gu);
    double *lam = calloc(n, sizeof *lam), *J = malloc(sizeof(double) * n * n);
    for (int reuse = 0; reuse < 2; reuse++) {
        o.adjoint_reuse = reuse;
        sla_nlsolver *S = NULL;
        CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
        memset(u, 0, sizeof(double) * n);
        CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, &mu, u, NULL));
        for (int i = 0; i < n; i++) gu[i] = 1.0; /* L = sum u */
        sla_solve_info ai;
        CHECK_OK(ctx, sla_nlsolver_solve_vjp(ctx, S, gu, &g, lam, &ai));
        CHECK(ai.converged);
        if (reuse) CHECK(strstr(ai.note, "reused") != NULL);
        /* central differences */
        double eps = 1e-5, up, um;
        double *w = calloc(n, sizeof *w);
        double mp = mu + eps, mm = mu - eps;
        up = solve_L(ctx, P, &o, &mp, w);
        um = solve_L(ctx, P, &o, &mm, w);
        double fd = (up - um) / (2 * eps);
        CHECK_CLOSE(g, fd, 1e-6);
        /* lambda solves J^T lambda = 1 (dense reference) */
        ref_bratu_J(N, &mu, 0, u, J);
        for (int i = 0; i < n; i++) w[i] = 1.0;
        dense_solve(n, J, 1, w);
        CHECK(tu_reldiff(n, lam, w) < 1e-12);
        /* tangent: du = J^-1 (h^2 e^u); dL/dmu = sum du */
        ref_bratu_J(N, &mu, 0, u, J);
        double h2 = 1.0 / ((N + 1.0) * (N + 1.0));
        for (int i = 0; i < n; i++) w[i] = h2 * exp(u[i]);
        dense_solve(n, J, 0, w);
        CHECK_CLOSE(g, sum(n, w), 1e-12);
        /* a second VJP reuses what the first set up and agrees */
        double g2 = 0;
        CHECK_OK(ctx, sla_nlsolver_solve_vjp(ctx, S, gu, &g2, NULL, NULL));
        CHECK_CLOSE(g2, g, 1e-13);
        free(w);
        sla_nlsolver_destroy(&S);
    }
    free(u);
    free(gu);
    free(lam);
    free(J);
    sla_nl_builtin_destroy(&B);
}

/* Field-valued theta (mu per grid point): FD on components and along a
 * random direction; adjoint identity <w, du> = <g(w), v> with the tangent
 * du = J^-1 (h^2 e^u v) from a dense solve. */
static void test_bratu_grad_field(sla_ctx *ctx)
{
    const int N = 12, n = N * N;
    sla_nl_builtin *B = NULL;
    CHECK_OK(ctx, sla_nl_bratu2d(ctx, N, SLA_NL_BRATU_MU_FIELD, &B));
    const sla_nl_problem *P = sla_nl_builtin_problem(B);
    CHECK(P->ntheta == n);
    sla_nl_options o = tight(SLA_NL_NEWTON);
    double *th = malloc(sizeof(double) * n), *u = calloc(n, sizeof *u), *w = malloc(sizeof(double) * n);
    double *g = malloc(sizeof(double) * n), *v = malloc(sizeof(double) * n);
    double *tp = malloc(sizeof(double) * n), *uu = calloc(n, sizeof *uu);
    tu_fill(th, n, 11);
    for (int i = 0; i < n; i++) th[i] = 3.0 + 1.5 * th[i]; /* mu in [1.5, 4.5] */
    tu_fill(w, n, 12);
    tu_fill(v, n, 13);
    sla_nlsolver *S = NULL;
    CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, th, u, NULL));
    /* L = w . u */
    CHECK_OK(ctx, sla_nlsolver_solve_vjp(ctx, S, w, g, NULL, NULL));
    double eps = 1e-5;
    int comps[] = {0, 17, n / 2 + 3, n - 1};
    for (int c = 0; c < 4; c++) {
        int k = comps[c];
        double Lp, Lm;
        memcpy(tp, th, sizeof(double) * n);
        tp[k] += eps;
        sla_nlsolver_solve(ctx, S, tp, (memset(uu, 0, sizeof(double) * n), uu), NULL);
        Lp = 0;
        for (int i = 0; i < n; i++) Lp += w[i] * uu[i];
        tp[k] -= 2 * eps;
        CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, tp, (memset(uu, 0, sizeof(double) * n), uu), NULL));
        Lm = 0;
        for (int i = 0; i < n; i++) Lm += w[i] * uu[i];
        double fd = (Lp - Lm) / (2 * eps);
        CHECK(fabs(g[k] - fd) <= 1e-6 * fmax(fabs(fd), 1e-3));
    }
    /* along v */
    double Lp = 0, Lm = 0, gv = 0;
    for (int i = 0; i < n; i++) tp[i] = th[i] + eps * v[i];
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, tp, (memset(uu, 0, sizeof(double) * n), uu), NULL));
    for (int i = 0; i < n; i++) Lp += w[i] * uu[i];
    for (int i = 0; i < n; i++) tp[i] = th[i] - eps * v[i];
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, tp, (memset(uu, 0, sizeof(double) * n), uu), NULL));
    for (int i = 0; i < n; i++) Lm += w[i] * uu[i];
    for (int i = 0; i < n; i++) gv += g[i] * v[i];
    CHECK_CLOSE(gv, (Lp - Lm) / (2 * eps), 1e-6);
    /* adjoint identity with the dense tangent */
    double *J = malloc(sizeof(double) * n * n), h2 = 1.0 / ((N + 1.0) * (N + 1.0));
    ref_bratu_J(N, th, 1, u, J);
    for (int i = 0; i < n; i++) uu[i] = h2 * exp(u[i]) * v[i]; /* -dF/dtheta v */
    dense_solve(n, J, 0, uu);
    double wdu = 0;
    for (int i = 0; i < n; i++) wdu += w[i] * uu[i];
    CHECK_CLOSE(wdu, gv, 1e-12);
    sla_nlsolver_destroy(&S);
    sla_nl_builtin_destroy(&B);
    free(th); free(u); free(w); free(g); free(v); free(tp); free(uu); free(J);
}

/* The gradient does not depend on the Newton path: different starting
 * points (and step counts) give the same dL/dtheta to 1e-12. */
static void test_gradient_path_independent(sla_ctx *ctx)
{
    const int N = 16, n = N * N;
    sla_nl_builtin *B = NULL;
    CHECK_OK(ctx, sla_nl_bratu2d(ctx, N, SLA_NL_BRATU_MU_FIELD, &B));
    const sla_nl_problem *P = sla_nl_builtin_problem(B);
    double *th = malloc(sizeof(double) * n), *u = malloc(sizeof(double) * n);
    double *us = calloc(n, sizeof *us), *g0 = malloc(sizeof(double) * n), *g = malloc(sizeof(double) * n);
    double *gu = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++) th[i] = 5.0 + 0.5 * sin(0.3 * i);
    tu_fill(gu, n, 21);
    for (int reuse = 0; reuse < 2; reuse++) {
        sla_nl_options o = tight(SLA_NL_NEWTON);
        o.adjoint_reuse = reuse;
        sla_int its[4];
        for (int start = 0; start < 4; start++) {
            sla_nlsolver *S = NULL;
            CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
            for (int i = 0; i < n; i++) {
                if (start == 0) u[i] = 0.0;
                else if (start == 1) u[i] = 0.999 * us[i];       /* one or two steps */
                else if (start == 2) u[i] = 1.0 + 0.3 * cos(0.7 * i); /* far away */
                else u[i] = us[i] + 1e-6 * sin(i);               /* very close */
            }
            sla_nl_info info;
            CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, th, u, &info));
            its[start] = info.iterations;
            if (start == 0) memcpy(us, u, sizeof(double) * n);
            CHECK_OK(ctx, sla_nlsolver_solve_vjp(ctx, S, gu, start == 0 ? g0 : g, NULL, NULL));
            if (start > 0) CHECK(tu_reldiff(n, g, g0) < 1e-12);
            sla_nlsolver_destroy(&S);
        }
        CHECK(its[2] > its[1]); /* the paths really differ */
        CHECK(its[0] != its[3]);
    }
    sla_nl_builtin_destroy(&B);
    free(th); free(u); free(us); free(g0); free(g); free(gu);
}

/* Beyond the turning point there is no solution: failure, never OK. */
static void test_turning_point(sla_ctx *ctx)
{
    const int N = 16, n = N * N;
    sla_nl_builtin *B = NULL;
    CHECK_OK(ctx, sla_nl_bratu2d(ctx, N, SLA_NL_BRATU_MU, &B));
    const sla_nl_problem *P = sla_nl_builtin_problem(B);
    double mus[] = {7.0, 8.0, 20.0};
    sla_nl_method ms[] = {SLA_NL_NEWTON, SLA_NL_ANDERSON, SLA_NL_PICARD};
    double *u = calloc(n, sizeof *u), *F = malloc(sizeof(double) * n);
    for (int im = 0; im < 3; im++)
        for (int t = 0; t < 3; t++) {
            sla_nl_options o;
            sla_nl_options_default(&o);
            o.method = ms[im];
            o.maxiter = im == 0 ? 100 : 300;
            sla_nlsolver *S = NULL;
            CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
            memset(u, 0, sizeof(double) * n);
            sla_nl_info info;
            sla_status st = sla_nlsolver_solve(ctx, S, &mus[t], u, &info);
            CHECK(st != SLA_OK);
            CHECK(!info.converged && info.reason < 0);
            CHECK(strlen(sla_ctx_message(ctx)) > 0);
            /* whatever u holds, it is not a solution */
            ref_bratu_F(N, &mus[t], 0, u, F);
            CHECK(!(nrm2(n, F) < 1e-8));
            double g;
            double *gu = calloc(n, sizeof *gu);
            CHECK_ERR(ctx, sla_nlsolver_solve_vjp(ctx, S, gu, &g, NULL, NULL), SLA_ERR_ARGUMENT,
                      "no converged solve");
            free(gu);
            sla_nlsolver_destroy(&S);
        }
    /* just below the continuous turning point the discrete problem (N = 16)
     * still has a solution */
    double mu = 6.7;
    sla_nlsolver *S = NULL;
    sla_nl_options o;
    sla_nl_options_default(&o);
    CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
    memset(u, 0, sizeof(double) * n);
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, &mu, u, NULL));
    sla_nlsolver_destroy(&S);
    sla_nl_builtin_destroy(&B);
    free(u);
    free(F);
}

/* Chord steps (chord_ratio > 0) keep an older factorization while it
 * converges fast: fewer Jacobians, the same solution and gradient; a
 * chord step the line search rejects is redone with a fresh Jacobian. */
static void test_chord(sla_ctx *ctx)
{
    const int N = 16, n = N * N;
    sla_nl_builtin *B = NULL;
    CHECK_OK(ctx, sla_nl_bratu2d(ctx, N, SLA_NL_BRATU_MU, &B));
    const sla_nl_problem *P = sla_nl_builtin_problem(B);
    double mus[2] = {1.0, 6.5};
    double *u = calloc(n, sizeof *u), *ur = calloc(n, sizeof *ur), *gu = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++) gu[i] = 1.0;
    for (int t = 0; t < 2; t++) {
        double g[2];
        sla_nl_info info[2];
        for (int k = 0; k < 2; k++) {
            sla_nl_options o = tight(SLA_NL_NEWTON);
            o.chord_ratio = k ? 0.1 : 0.0;
            sla_nlsolver *S = NULL;
            CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
            memset(u, 0, sizeof(double) * n);
            CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, &mus[t], u, &info[k]));
            if (!k) memcpy(ur, u, sizeof(double) * n);
            else CHECK(tu_reldiff(n, u, ur) < 1e-12);
            CHECK_OK(ctx, sla_nlsolver_solve_vjp(ctx, S, gu, &g[k], NULL, NULL));
            sla_nlsolver_destroy(&S);
        }
        CHECK(info[0].chord_steps == 0);
        CHECK(info[1].chord_steps > 0);
        CHECK(info[1].jacobian_evals < info[0].jacobian_evals);
        CHECK(info[1].jacobian_evals + info[1].chord_steps >= info[1].iterations);
        CHECK_CLOSE(g[1], g[0], 1e-12);
    }
    /* a warm start next to the solution: rtol ||F(u0)|| is below rounding,
     * the step test declares convergence */
    {
        double mu = 3.0;
        sla_nl_options o = tight(SLA_NL_NEWTON);
        sla_nlsolver *S = NULL;
        CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
        memset(u, 0, sizeof(double) * n);
        CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, &mu, u, NULL));
        sla_nlsolver_destroy(&S);
        memcpy(ur, u, sizeof(double) * n);
        for (int i = 0; i < n; i++) u[i] += 1e-9 * sin(i);
        sla_nl_options_default(&o);
        CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
        sla_nl_info info;
        CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, &mu, u, &info));
        CHECK(info.reason == SLA_NL_CONVERGED_STEP);
        CHECK(info.residual < 1e-13 && info.residual > 1e-10 * info.residual0);
        CHECK(tu_reldiff(n, u, ur) < 1e-13);
        sla_nlsolver_destroy(&S);
    }
    sla_nl_options o;
    sla_nl_options_default(&o);
    o.chord_ratio = 1.0;
    sla_nlsolver *S = NULL;
    CHECK_ERR(ctx, sla_nlsolver_create(ctx, P, &o, &S), SLA_ERR_ARGUMENT, "chord_ratio");
    sla_nl_builtin_destroy(&B);
    free(u);
    free(ur);
    free(gu);
}

/* The upper branch of Bratu (indefinite Jacobian): the same solver first
 * finds the lower branch with Cholesky, then, from a large initial guess,
 * the upper one; method=auto replaces the Cholesky that meets the
 * indefinite Jacobian by LU and says so. The gradient there is negative
 * (u grows as mu shrinks along the upper branch) and matches the tangent. */
static void test_upper_branch(sla_ctx *ctx)
{
    if (!sla_method_available(SLA_METHOD_CHOLESKY) || !sla_method_available(SLA_METHOD_LU)) return;
    const int N = 16, n = N * N;
    sla_nl_builtin *B = NULL;
    CHECK_OK(ctx, sla_nl_bratu2d(ctx, N, SLA_NL_BRATU_MU, &B));
    const sla_nl_problem *P = sla_nl_builtin_problem(B);
    sla_nl_options o = tight(SLA_NL_NEWTON);
    sla_nlsolver *S = NULL;
    CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
    double mu = 3.0, g = 0, *u = calloc(n, sizeof *u), *gu = malloc(sizeof(double) * n);
    double *F = malloc(sizeof(double) * n), *w = malloc(sizeof(double) * n);
    double *J = malloc(sizeof(double) * n * n);
    for (int i = 0; i < n; i++) gu[i] = 1.0;
    sla_nl_info info;
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, &mu, u, &info));
    CHECK(!strcmp(info.linear.method, "cholesky"));
    double umax = 0;
    for (int i = 0; i < n; i++) umax = fmax(umax, u[i]);
    CHECK(umax < 1.0);
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++)
            u[j * N + i] = 6.0 * sin(3.14159265358979323846 * (i + 1) / (N + 1)) *
                             sin(3.14159265358979323846 * (j + 1) / (N + 1));
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, &mu, u, &info));
    CHECK(strstr(info.note, "fell back to lu") != NULL);
    CHECK(!strcmp(info.linear.method, "lu"));
    umax = 0;
    for (int i = 0; i < n; i++) umax = fmax(umax, u[i]);
    CHECK(umax > 3.0);
    ref_bratu_F(N, &mu, 0, u, F);
    CHECK(nrm2(n, F) < 1e-12);
    CHECK_OK(ctx, sla_nlsolver_solve_vjp(ctx, S, gu, &g, NULL, NULL));
    CHECK(g < 0);
    double h2 = 1.0 / ((N + 1.0) * (N + 1.0));
    ref_bratu_J(N, &mu, 0, u, J);
    for (int i = 0; i < n; i++) w[i] = h2 * exp(u[i]);
    dense_solve(n, J, 0, w);
    CHECK_CLOSE(g, sum(n, w), 1e-10);
    sla_nlsolver_destroy(&S);
    sla_nl_builtin_destroy(&B);
    free(u); free(gu); free(F); free(w); free(J);
}

/* linear_method=cocg (appended to sla_method after superlu): the
 * registry runs it as CG on a real symmetric Jacobian (Bratu: Newton
 * converges, the adjoint is an iterative solve matching the direct one),
 * and on a nonsymmetric Jacobian (nonlinear diffusion) it does what cg
 * does, not "unknown linear method". A value past the registry is still
 * unknown. */
static void test_linear_cocg(sla_ctx *ctx)
{
    const int N = 8, n = N * N;
    sla_nl_builtin *B = NULL;
    CHECK_OK(ctx, sla_nl_bratu2d(ctx, N, SLA_NL_BRATU_MU, &B));
    const sla_nl_problem *P = sla_nl_builtin_problem(B);
    double mu = 2.0, g1 = 0, g2 = 0, *u = calloc(n, sizeof *u), *gu = malloc(sizeof(double) * n);
    double *F = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++) gu[i] = 1.0 + 0.01 * i;
    sla_nl_options o = tight(SLA_NL_NEWTON);
    o.linear.method = SLA_METHOD_COCG;
    o.linear.precond = SLA_PRECOND_JACOBI;
    o.linear.rtol = 1e-13;
    sla_nlsolver *S = NULL;
    CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
    sla_nl_info info;
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, &mu, u, &info));
    ref_bratu_F(N, &mu, 0, u, F);
    CHECK(nrm2(n, F) < 1e-11);
    CHECK(!strcmp(info.linear.method, "cocg") || !strcmp(info.linear.method, "cg"));
    CHECK_OK(ctx, sla_nlsolver_solve_vjp(ctx, S, gu, &g1, NULL, NULL));
    sla_nlsolver_destroy(&S);
    /* the same gradient with LU */
    o.linear.method = SLA_METHOD_LU;
    o.linear.precond = SLA_PRECOND_NONE;
    if (sla_method_available(SLA_METHOD_LU)) {
        memset(u, 0, sizeof(double) * n);
        CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
        CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, &mu, u, &info));
        CHECK_OK(ctx, sla_nlsolver_solve_vjp(ctx, S, gu, &g2, NULL, NULL));
        CHECK_CLOSE(g1, g2, 1e-8);
        sla_nlsolver_destroy(&S);
    }
    sla_nl_builtin_destroy(&B);
    /* a nonsymmetric Jacobian: cocg is CG there (the registry's real
     * column), which the real solver does not refuse: the same outcome as
     * linear_method=cg, iteration for iteration */
    CHECK_OK(ctx, sla_nl_diffusion2d(ctx, N, 1.0, &B));
    P = sla_nl_builtin_problem(B);
    double *f = malloc(sizeof(double) * n), *u2 = calloc(n, sizeof *u2);
    for (int i = 0; i < n; i++) f[i] = 10.0;
    sla_nl_info info2;
    sla_status st[2];
    for (int k = 0; k < 2; k++) {
        o = tight(SLA_NL_NEWTON);
        o.maxiter = 30;
        o.linear.method = k ? SLA_METHOD_CG : SLA_METHOD_COCG;
        double *uk = k ? u2 : u;
        memset(uk, 0, sizeof(double) * n);
        CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
        st[k] = sla_nlsolver_solve(ctx, S, f, uk, k ? &info2 : &info);
        CHECK(strstr(sla_ctx_message(ctx), "unknown") == NULL);
        sla_nlsolver_destroy(&S);
    }
    CHECK(st[0] == st[1] && info.iterations == info2.iterations);
    CHECK(info.linear.iterations == info2.linear.iterations);
    for (int i = 0; i < n; i++) CHECK(u[i] == u2[i]);
    printf("  cocg vs cg on a nonsymmetric Jacobian: %s, %lld Newton steps each\n",
           sla_status_name(st[0]), (long long)info.iterations);
    free(u2);
    o.linear.method = (sla_method)(SLA_METHOD_MUMPS + 1);
    CHECK_ERR(ctx, sla_nlsolver_create(ctx, P, &o, &S), SLA_ERR_ARGUMENT, "unknown linear method");
    sla_nl_builtin_destroy(&B);
    free(u); free(gu); free(F); free(f);
}

static void test_anderson_picard(sla_ctx *ctx)
{
    const int N = 16, n = N * N;
    sla_nl_builtin *B = NULL;
    CHECK_OK(ctx, sla_nl_bratu2d(ctx, N, SLA_NL_BRATU_MU, &B));
    const sla_nl_problem *P = sla_nl_builtin_problem(B);
    double mu = 2.0, *ur = calloc(n, sizeof *ur), *u = calloc(n, sizeof *u);
    CHECK(ref_bratu_newton(N, &mu, 0, ur));
    sla_int its[2];
    double g[3];
    double *gu = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++) gu[i] = 1.0;
    sla_nl_method ms[3] = {SLA_NL_ANDERSON, SLA_NL_PICARD, SLA_NL_NEWTON};
    for (int k = 0; k < 3; k++) {
        sla_nl_options o;
        sla_nl_options_default(&o);
        o.method = ms[k];
        sla_nlsolver *S = NULL;
        CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
        memset(u, 0, sizeof(double) * n);
        sla_nl_info info;
        CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, &mu, u, &info));
        CHECK(info.converged);
        CHECK(!strcmp(info.method, sla_nl_method_name(ms[k])));
        if (k < 2) its[k] = info.iterations;
        CHECK(info.residual <= 1e-10 * info.residual0);
        CHECK(tu_reldiff(n, u, ur) < 1e-8);
        /* the gradient after a fixed-point solve (the Jacobian is formed at u*) */
        CHECK_OK(ctx, sla_nlsolver_solve_vjp(ctx, S, gu, &g[k], NULL, NULL));
        sla_nlsolver_destroy(&S);
    }
    CHECK(its[0] < its[1]); /* Anderson accelerates Picard */
    CHECK_CLOSE(g[0], g[2], 1e-7);
    CHECK_CLOSE(g[1], g[2], 1e-7);
    /* Picard and Anderson on the nonsymmetric problem too, damped */
    sla_nl_builtin *D = NULL;
    CHECK_OK(ctx, sla_nl_diffusion2d(ctx, N, 1.0, &D));
    const sla_nl_problem *PD = sla_nl_builtin_problem(D);
    double *f = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++) f[i] = 20.0;
    for (int k = 0; k < 2; k++) {
        sla_nl_options o;
        sla_nl_options_default(&o);
        o.method = ms[k];
        o.beta = 0.8;
        sla_nlsolver *S = NULL;
        CHECK_OK(ctx, sla_nlsolver_create(ctx, PD, &o, &S));
        memset(u, 0, sizeof(double) * n);
        sla_nl_info info;
        CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, f, u, &info));
        CHECK(info.converged && info.iterations > 2);
        sla_nlsolver_destroy(&S);
    }
    sla_nl_builtin_destroy(&D);
    sla_nl_builtin_destroy(&B);
    free(ur); free(u); free(gu); free(f);
}

/* ---- nonsymmetric: nonlinear diffusion -------------------------------- */

static void test_diffusion(sla_ctx *ctx)
{
    const int N = 10, n = N * N;
    sla_nl_builtin *D = NULL;
    CHECK_OK(ctx, sla_nl_diffusion2d(ctx, N, 1.0, &D));
    const sla_nl_problem *P = sla_nl_builtin_problem(D);
    CHECK(!P->jacobian_symmetric);
    double *f = malloc(sizeof(double) * n), *u = calloc(n, sizeof *u), *w = malloc(sizeof(double) * n);
    double *g = malloc(sizeof(double) * n), *v = malloc(sizeof(double) * n);
    double *F = malloc(sizeof(double) * n), *Fp = malloc(sizeof(double) * n), *Fm = malloc(sizeof(double) * n);
    tu_fill(f, n, 31);
    for (int i = 0; i < n; i++) f[i] = 30.0 + 10.0 * f[i];
    tu_fill(w, n, 32);
    tu_fill(v, n, 33);
    sla_nl_options o = tight(SLA_NL_NEWTON);
    sla_nlsolver *S = NULL;
    CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
    sla_nl_info info;
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, f, u, &info));
    CHECK(info.converged && info.residual < 1e-10);
    CHECK(u[n / 2] > 0.3); /* a genuinely nonlinear regime: kappa(u) far from 1 */
    /* the Jacobian at u*: nonsymmetric, and equal to central differences of F */
    const sla_matrix *pat = P->jac_pattern;
    sla_int nnz = sla_matrix_nnz(pat);
    double *vals = malloc(sizeof(double) * nnz), *Jd = calloc((size_t)n * n, sizeof *Jd);
    CHECK_OK(ctx, P->jacobian(P->user, u, f, vals));
    sla_int *ci = malloc(sizeof(sla_int) * nnz);
    sla_matrix_get_colind(pat, ci);
    const sla_int *rp = sla_matrix_rowptr(pat);
    for (int i = 0; i < n; i++)
        for (sla_int k = rp[i]; k < rp[i + 1]; k++) Jd[i + ci[k] * n] = vals[k];
    double asym = 0, maxfd = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) asym = fmax(asym, fabs(Jd[i + j * n] - Jd[j + i * n]));
    CHECK(asym > 1e-3);
    double *up = malloc(sizeof(double) * n);
    for (int j = 0; j < n; j += 7) {
        double e = 1e-6;
        memcpy(up, u, sizeof(double) * n);
        up[j] += e;
        P->residual(P->user, up, f, Fp);
        up[j] -= 2 * e;
        P->residual(P->user, up, f, Fm);
        for (int i = 0; i < n; i++) maxfd = fmax(maxfd, fabs((Fp[i] - Fm[i]) / (2 * e) - Jd[i + j * n]));
    }
    CHECK(maxfd < 1e-7);
    /* jvp and vjp_u against the assembled Jacobian */
    P->jvp(P->user, u, f, v, Fp);
    P->vjp_u(P->user, u, f, v, Fm);
    double e1 = 0, e2 = 0;
    for (int i = 0; i < n; i++) {
        double a = 0, b = 0;
        for (int j = 0; j < n; j++) {
            a += Jd[i + j * n] * v[j];
            b += Jd[j + i * n] * v[j];
        }
        e1 = fmax(e1, fabs(a - Fp[i]));
        e2 = fmax(e2, fabs(b - Fm[i]));
    }
    CHECK(e1 < 1e-12 && e2 < 1e-12);
    /* gradient of L = w . u with respect to f */
    CHECK_OK(ctx, sla_nlsolver_solve_vjp(ctx, S, w, g, NULL, NULL));
    double eps = 1e-5, gv = 0, Lp = 0, Lm = 0;
    double *tp = malloc(sizeof(double) * n), *uu = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++) tp[i] = f[i] + eps * v[i];
    memcpy(uu, u, sizeof(double) * n);
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, tp, uu, NULL));
    for (int i = 0; i < n; i++) Lp += w[i] * uu[i];
    for (int i = 0; i < n; i++) tp[i] = f[i] - eps * v[i];
    memcpy(uu, u, sizeof(double) * n);
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, tp, uu, NULL));
    for (int i = 0; i < n; i++) Lm += w[i] * uu[i];
    for (int i = 0; i < n; i++) gv += g[i] * v[i];
    CHECK_CLOSE(gv, (Lp - Lm) / (2 * eps), 1e-6);
    /* single components */
    int comps[] = {0, 45, n - 1};
    for (int c = 0; c < 3; c++) {
        int k = comps[c];
        double a = 0, b = 0;
        memcpy(tp, f, sizeof(double) * n);
        tp[k] += eps;
        memcpy(uu, u, sizeof(double) * n);
        CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, tp, uu, NULL));
        for (int i = 0; i < n; i++) a += w[i] * uu[i];
        tp[k] -= 2 * eps;
        memcpy(uu, u, sizeof(double) * n);
        CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, tp, uu, NULL));
        for (int i = 0; i < n; i++) b += w[i] * uu[i];
        double fd = (a - b) / (2 * eps);
        CHECK(fabs(g[k] - fd) <= 1e-6 * fmax(fabs(fd), 1e-4));
    }
    /* adjoint identity: g = h^2 J^-T w, so <g, v> = <w, h^2 J^-1 v> (dense) */
    double h2 = 1.0 / ((N + 1.0) * (N + 1.0)), wdu = 0;
    for (int i = 0; i < n; i++) uu[i] = h2 * v[i];
    dense_solve(n, Jd, 0, uu);
    for (int i = 0; i < n; i++) wdu += w[i] * uu[i];
    CHECK_CLOSE(wdu, gv, 1e-12);

    /* Newton-Krylov (no Jacobian values): same solution and gradient */
    sla_nl_problem mf = *P;
    mf.jacobian = NULL;
    sla_nl_options om = tight(SLA_NL_NEWTON);
    om.linear.rtol = 1e-12;
    sla_nlsolver *M = NULL;
    CHECK_OK(ctx, sla_nlsolver_create(ctx, &mf, &om, &M));
    double *um = calloc(n, sizeof *um), *gm = malloc(sizeof(double) * n);
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, M, f, um, &info));
    CHECK(!strcmp(info.method, "newton-krylov"));
    CHECK(!strcmp(info.linear.backend, "matrix-free"));
    CHECK(info.linear_iterations > 0);
    CHECK(tu_reldiff(n, um, u) < 1e-10);
    sla_solve_info ai;
    CHECK_OK(ctx, sla_nlsolver_solve_vjp(ctx, M, w, gm, NULL, &ai));
    CHECK(tu_reldiff(n, gm, g) < 1e-9);
    sla_nlsolver_destroy(&M);

    sla_nlsolver_destroy(&S);
    sla_nl_builtin_destroy(&D);
    free(f); free(u); free(w); free(g); free(v); free(F); free(Fp); free(Fm);
    free(vals); free(Jd); free(ci); free(up); free(tp); free(uu); free(um); free(gm);
}

/* Symmetric at the start (u0 = 0, kappa'(0) = 0), nonsymmetric later: with
 * method=auto the solver starts as Cholesky; its refresh sees the change
 * and re-dispatches. */
static void test_symmetry_change(sla_ctx *ctx)
{
    const int N = 8, n = N * N;
    sla_nl_builtin *D = NULL;
    CHECK_OK(ctx, sla_nl_diffusion2d(ctx, N, 1.0, &D));
    const sla_nl_problem *P = sla_nl_builtin_problem(D);
    double *f = malloc(sizeof(double) * n), *u = calloc(n, sizeof *u), *F = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++) f[i] = 40.0;
    sla_nl_options o;
    sla_nl_options_default(&o);
    sla_nlsolver *S = NULL;
    CHECK_OK(ctx, sla_nlsolver_create(ctx, P, &o, &S));
    sla_nl_info info;
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, f, u, &info));
    CHECK(strstr(info.note, "values now nonsymmetric") != NULL);
    CHECK(info.iterations < 15); /* quadratic convergence, not a wrong Jacobian */
    P->residual(P->user, u, f, F);
    CHECK(nrm2(n, F) < 1e-10);
    sla_nlsolver_destroy(&S);
    sla_nl_builtin_destroy(&D);
    free(f); free(u); free(F);
}

/* ---- a small custom problem: F_i = u_i^2 - theta_i ---------------------- */

typedef struct {
    int calls, fail_at;       /* residual calls; fail the call with this index */
    int jac_calls, jac_fail_at;
    int nan_at;               /* residual call that returns NaN */
    int jac_nan;
} sq_data;

static sla_status sq_F(void *user, const double *u, const double *th, double *F)
{
    sq_data *d = user;
    int c = d->calls++;
    if (c == d->fail_at) return SLA_ERR_VALUE;
    for (int i = 0; i < 3; i++) F[i] = u[i] * u[i] - th[i];
    if (c == d->nan_at) F[1] = NAN;
    return SLA_OK;
}

static sla_status sq_J(void *user, const double *u, const double *th, double *vals)
{
    (void)th;
    sq_data *d = user;
    int c = d->jac_calls++;
    if (c == d->jac_fail_at) return SLA_ERR_NOMEM;
    for (int i = 0; i < 3; i++) vals[i] = 2 * u[i];
    if (d->jac_nan) vals[2] = INFINITY;
    return SLA_OK;
}

static sla_status sq_vjp(void *user, const double *u, const double *th, const double *l, double *g)
{
    (void)user;
    (void)u;
    (void)th;
    for (int i = 0; i < 3; i++) g[i] = -l[i];
    return SLA_OK;
}

static sla_status sq_vjp_fail(void *user, const double *u, const double *th, const double *l,
                              double *g)
{
    (void)user; (void)u; (void)th; (void)l; (void)g;
    return SLA_ERR_ARGUMENT;
}

static sla_status sq_fp(void *user, const double *u, const double *th, double *G)
{
    (void)user; /* Heron: G(u) = (u + theta / u) / 2 */
    for (int i = 0; i < 3; i++) G[i] = 0.5 * (u[i] + th[i] / u[i]);
    return SLA_OK;
}

static void test_custom_and_errors(sla_ctx *ctx)
{
    sla_matrix *D = NULL, *bad = NULL;
    sla_int rows[] = {0, 1, 2};
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 3, 3, 3, rows, rows, SLA_F64, 1, NULL, NULL, &D));
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 4, 4, 3, rows, rows, SLA_F64, 1, NULL, NULL, &bad));
    sq_data d = {.fail_at = -1, .jac_fail_at = -1, .nan_at = -1};
    sla_nl_problem P = {.n = 3, .ntheta = 3, .residual = sq_F, .jac_pattern = D, .jacobian = sq_J,
                        .jacobian_symmetric = true, .vjp_theta = sq_vjp, .user = &d};
    double th[3] = {4.0, 2.0, 9.0}, u[3] = {1, 1, 1}, g[3], gu[3] = {1, 1, 1};
    sla_nl_options o;
    sla_nl_options_default(&o);
    o.linear.method = SLA_METHOD_LU;
    sla_nlsolver *S = NULL;
    sla_nl_info info;

    /* solution and gradient: u = sqrt(theta), dL/dtheta = 1 / (2 sqrt(theta)) */
    CHECK_OK(ctx, sla_nlsolver_create(ctx, &P, &o, &S));
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, th, u, &info));
    for (int i = 0; i < 3; i++) CHECK_CLOSE(u[i], sqrt(th[i]), 1e-12);
    CHECK_OK(ctx, sla_nlsolver_solve_vjp(ctx, S, gu, g, NULL, NULL));
    for (int i = 0; i < 3; i++) CHECK_CLOSE(g[i], 0.5 / sqrt(th[i]), 1e-10);

    /* a singular Jacobian (u0 = 0): linear-solve failure is a reason */
    double z[3] = {0, 0, 0};
    if (sla_method_available(SLA_METHOD_LU)) {
        sla_status st = sla_nlsolver_solve(ctx, S, th, z, &info);
        CHECK(st == SLA_NOT_CONVERGED);
        CHECK(info.reason == SLA_NL_DIVERGED_LINEAR_SOLVE && !info.converged);
        CHECK(strstr(sla_ctx_message(ctx), "linear solve failed") != NULL);
    }
    /* residual callback error, first call and later */
    double u1[3] = {1, 1, 1};
    d.fail_at = d.calls;
    CHECK_ERR(ctx, sla_nlsolver_solve(ctx, S, th, u1, &info), SLA_ERR_CALLBACK,
              "residual callback failed with SLA_ERR_VALUE");
    d.fail_at = d.calls + 2;
    CHECK_ERR(ctx, sla_nlsolver_solve(ctx, S, th, u1, &info), SLA_ERR_CALLBACK, "residual callback");
    d.fail_at = -1;
    /* Jacobian callback error */
    d.jac_fail_at = d.jac_calls + 1;
    double u2[3] = {1, 1, 1};
    CHECK_ERR(ctx, sla_nlsolver_solve(ctx, S, th, u2, &info), SLA_ERR_CALLBACK,
              "jacobian callback failed with SLA_ERR_NOMEM");
    d.jac_fail_at = -1;
    /* NaN from the residual at the initial guess; from the Jacobian */
    d.nan_at = d.calls;
    double u3[3] = {1, 1, 1};
    CHECK_ERR(ctx, sla_nlsolver_solve(ctx, S, th, u3, &info), SLA_ERR_VALUE,
              "residual callback returned nan at entry 1");
    d.nan_at = -1;
    d.jac_nan = 1;
    double u4[3] = {1, 1, 1};
    CHECK_ERR(ctx, sla_nlsolver_solve(ctx, S, th, u4, &info), SLA_ERR_VALUE,
              "jacobian callback returned inf at entry 2 (row 2, column 2)");
    d.jac_nan = 0;
    /* NaN at a trial point is backtracked over, not an error */
    double u5[3] = {1, 1, 1};
    d.nan_at = d.calls + 1;
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, th, u5, &info));
    CHECK(info.line_search_cuts >= 1);
    d.nan_at = -1;
    /* VJP errors */
    CHECK_ERR(ctx, sla_nlsolver_solve_vjp(ctx, S, NULL, g, NULL, NULL), SLA_ERR_ARGUMENT, "gu is NULL");
    double gnan[3] = {1, NAN, 1};
    CHECK_ERR(ctx, sla_nlsolver_solve_vjp(ctx, S, gnan, g, NULL, NULL), SLA_ERR_VALUE, "gu entry 1");
    /* bad solve arguments */
    CHECK_ERR(ctx, sla_nlsolver_solve(ctx, S, th, NULL, &info), SLA_ERR_ARGUMENT, "u is NULL");
    CHECK_ERR(ctx, sla_nlsolver_solve(ctx, S, NULL, u, &info), SLA_ERR_ARGUMENT, "theta is NULL");
    double unan[3] = {1, NAN, 1}, thinf[3] = {1, INFINITY, 1};
    CHECK_ERR(ctx, sla_nlsolver_solve(ctx, S, th, unan, &info), SLA_ERR_VALUE, "initial guess");
    CHECK_ERR(ctx, sla_nlsolver_solve(ctx, S, thinf, u, &info), SLA_ERR_VALUE, "theta entry 1");
    CHECK_ERR(ctx, sla_nlsolver_solve(ctx, NULL, th, u, &info), SLA_ERR_ARGUMENT, "solver is NULL");
    sla_nlsolver_destroy(&S);
    CHECK(S == NULL);
    sla_nlsolver_destroy(&S);
    sla_nlsolver_destroy(NULL);

    /* vjp_theta failure propagates */
    sla_nl_problem Pf = P;
    Pf.vjp_theta = sq_vjp_fail;
    CHECK_OK(ctx, sla_nlsolver_create(ctx, &Pf, &o, &S));
    double u6[3] = {1, 1, 1};
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, th, u6, &info));
    CHECK_ERR(ctx, sla_nlsolver_solve_vjp(ctx, S, gu, g, NULL, NULL), SLA_ERR_CALLBACK,
              "vjp_theta callback failed");
    sla_nlsolver_destroy(&S);
    Pf.vjp_theta = NULL;
    CHECK_OK(ctx, sla_nlsolver_create(ctx, &Pf, &o, &S));
    CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, th, (double[3]){1, 1, 1}, &info));
    CHECK_ERR(ctx, sla_nlsolver_solve_vjp(ctx, S, gu, g, NULL, NULL), SLA_ERR_ARGUMENT,
              "vjp_theta callback is NULL");
    double lam[3];
    CHECK_OK(ctx, sla_nlsolver_solve_vjp(ctx, S, gu, NULL, lam, NULL)); /* lambda only */
    for (int i = 0; i < 3; i++) CHECK_CLOSE(lam[i], 0.5 / sqrt(th[i]), 1e-10);
    sla_nlsolver_destroy(&S);

    /* Picard / Anderson through a fixed-point callback */
    sla_nl_problem Ph = P;
    Ph.fixed_point = sq_fp;
    for (int k = 0; k < 2; k++) {
        sla_nl_options oh;
        sla_nl_options_default(&oh);
        oh.method = k ? SLA_NL_ANDERSON : SLA_NL_PICARD;
        oh.anderson_depth = 2;
        CHECK_OK(ctx, sla_nlsolver_create(ctx, &Ph, &oh, &S));
        double uh[3] = {1, 1, 1};
        CHECK_OK(ctx, sla_nlsolver_solve(ctx, S, th, uh, &info));
        for (int i = 0; i < 3; i++) CHECK_CLOSE(uh[i], sqrt(th[i]), 1e-10);
        sla_nlsolver_destroy(&S);
    }

    /* creation errors */
    CHECK_ERR(ctx, sla_nlsolver_create(ctx, &P, &o, NULL), SLA_ERR_ARGUMENT, "out is NULL");
    CHECK_ERR(ctx, sla_nlsolver_create(ctx, NULL, &o, &S), SLA_ERR_ARGUMENT, "problem is NULL");
    CHECK(S == NULL);
    sla_nl_problem Q = P;
    Q.residual = NULL;
    CHECK_ERR(ctx, sla_nlsolver_create(ctx, &Q, &o, &S), SLA_ERR_ARGUMENT, "residual callback is NULL");
    Q = P;
    Q.jac_pattern = bad;
    CHECK_ERR(ctx, sla_nlsolver_create(ctx, &Q, &o, &S), SLA_ERR_DIMENSION,
              "Jacobian pattern is 4 x 4, expected n x n = 3 x 3");
    Q = P;
    Q.n = 0;
    CHECK_ERR(ctx, sla_nlsolver_create(ctx, &Q, &o, &S), SLA_ERR_DIMENSION, "n = 0");
    Q = P;
    Q.jac_pattern = NULL;
    CHECK_ERR(ctx, sla_nlsolver_create(ctx, &Q, &o, &S), SLA_ERR_ARGUMENT, "need jac_pattern");
    Q = P;
    Q.jacobian = NULL;
    CHECK_ERR(ctx, sla_nlsolver_create(ctx, &Q, &o, &S), SLA_ERR_ARGUMENT, "jacobian callback");
    sla_nl_options ob = o;
    ob.method = SLA_NL_PICARD;
    CHECK_ERR(ctx, sla_nlsolver_create(ctx, &P, &ob, &S), SLA_ERR_ARGUMENT,
              "picard needs the fixed_point or the picard callback");
    ob = o;
    ob.beta = 0;
    CHECK_ERR(ctx, sla_nlsolver_create(ctx, &P, &ob, &S), SLA_ERR_ARGUMENT, "beta");
    ob = o;
    ob.anderson_depth = 0;
    CHECK_ERR(ctx, sla_nlsolver_create(ctx, &P, &ob, &S), SLA_ERR_ARGUMENT, "anderson_depth");
    ob = o;
    ob.rtol = NAN;
    CHECK_ERR(ctx, sla_nlsolver_create(ctx, &P, &ob, &S), SLA_ERR_ARGUMENT, "rtol");
    ob = o;
    ob.method = (sla_nl_method)7;
    CHECK_ERR(ctx, sla_nlsolver_create(ctx, &P, &ob, &S), SLA_ERR_ARGUMENT, "unknown nonlinear method");
    CHECK(S == NULL);
    /* vjp before any solve */
    CHECK_OK(ctx, sla_nlsolver_create(ctx, &P, NULL, &S));
    CHECK_ERR(ctx, sla_nlsolver_solve_vjp(ctx, S, gu, g, NULL, NULL), SLA_ERR_ARGUMENT,
              "no converged solve");
    sla_nlsolver_destroy(&S);
    /* built-in constructors */
    sla_nl_builtin *B = NULL;
    CHECK_ERR(ctx, sla_nl_bratu2d(ctx, 0, SLA_NL_BRATU_MU, &B), SLA_ERR_ARGUMENT, "N must be >= 1");
    CHECK_ERR(ctx, sla_nl_bratu2d(ctx, 4, (sla_nl_bratu_param)5, &B), SLA_ERR_ARGUMENT, "parameterisation");
    CHECK_ERR(ctx, sla_nl_diffusion2d(ctx, 4, NAN, &B), SLA_ERR_VALUE, "alpha");
    CHECK(B == NULL && sla_nl_builtin_problem(NULL) == NULL);
    sla_nl_builtin_destroy(&B);
    CHECK(!strcmp(sla_nl_reason_name(SLA_NL_DIVERGED_LINESEARCH), "diverged_linesearch"));
    sla_matrix_destroy(&D);
    sla_matrix_destroy(&bad);
}

static void test_options_parse(sla_ctx *ctx)
{
    sla_nl_options o;
    sla_nl_options_default(&o);
    CHECK(o.method == SLA_NL_NEWTON && o.rtol == 1e-10 && o.line_search && o.adjoint_reuse);
    CHECK_OK(ctx, sla_nl_options_parse(ctx, "method=anderson,rtol=1e-9,atol=1e-12,stol=0,"
                                            "maxiter=77,line_search=false,ls_alpha=0.01,"
                                            "ls_shrink=0.3,ls_maxsteps=12,chord_ratio=0.2,"
                                            "anderson_depth=7,beta=0.5,adjoint_reuse=no,"
                                            "linear_method=gmres,linear_precond=ilu0,linear_rtol=1e-11",
                                       &o));
    CHECK(o.method == SLA_NL_ANDERSON && o.rtol == 1e-9 && o.atol == 1e-12 && o.stol == 0);
    CHECK(o.maxiter == 77 && !o.line_search && o.ls_alpha == 0.01 && o.ls_shrink == 0.3);
    CHECK(o.ls_maxsteps == 12 && o.chord_ratio == 0.2 && o.anderson_depth == 7 && o.beta == 0.5);
    CHECK(!o.adjoint_reuse && o.linear.method == SLA_METHOD_GMRES);
    CHECK(o.linear.precond == SLA_PRECOND_ILU0 && o.linear.rtol == 1e-11);
    CHECK_OK(ctx, sla_nl_options_parse(ctx, "", &o));
    CHECK_ERR(ctx, sla_nl_options_parse(ctx, "chord=0.1", &o), SLA_ERR_ARGUMENT,
              "did you mean chord_ratio");
    CHECK_ERR(ctx, sla_nl_options_parse(ctx, "method=newtn", &o), SLA_ERR_ARGUMENT, "newton");
    CHECK_ERR(ctx, sla_nl_options_parse(ctx, "rtol=abc", &o), SLA_ERR_ARGUMENT, "bad number");
    CHECK_ERR(ctx, sla_nl_options_parse(ctx, "maxiter=2.5", &o), SLA_ERR_ARGUMENT, "integer");
    CHECK_ERR(ctx, sla_nl_options_parse(ctx, "line_search=maybe", &o), SLA_ERR_ARGUMENT, "boolean");
    CHECK_ERR(ctx, sla_nl_options_parse(ctx, "rtol", &o), SLA_ERR_ARGUMENT, "no value");
    CHECK_ERR(ctx, sla_nl_options_parse(ctx, "linear_method=cgg", &o), SLA_ERR_ARGUMENT, "cg");
    CHECK_ERR(ctx, sla_nl_options_parse(ctx, NULL, &o), SLA_ERR_ARGUMENT, "NULL");
    /* all or nothing: a refused string leaves every field as it was */
    sla_nl_options before = o;
    CHECK_ERR(ctx, sla_nl_options_parse(ctx, "rtol=1e-3,linear_rtol=1e-4,bogus=1", &o),
              SLA_ERR_ARGUMENT, "bogus");
    CHECK(memcmp(&before, &o, sizeof o) == 0);
}

/* Every allocation of create + solve + VJP made to fail in turn: NOMEM and
 * nothing leaked. */
static void test_alloc_failures(void)
{
    /* Newton + CG, Anderson + CG, and Newton + Cholesky with chord steps and
     * the factor-reusing adjoint (CHOLMOD's own allocations do not go
     * through the sla allocator; everything around them does) */
    sla_nl_method ms[] = {SLA_NL_NEWTON, SLA_NL_ANDERSON, SLA_NL_NEWTON};
    for (int im = 0; im < (sla_method_available(SLA_METHOD_CHOLESKY) ? 3 : 2); im++) {
        long total = -1;
        for (long k = 0;; k++) {
            counter c = {0, k, 0, 0};
            sla_allocator al = {count_malloc, count_free, &c};
            sla_ctx *ctx = NULL;
            sla_ctx_create(&ctx);
            sla_ctx_set_allocator(ctx, &al);
            sla_nl_builtin *B = NULL;
            sla_nlsolver *S = NULL;
            double mu = 1.0, u[36] = {0}, gu[36], g = 0;
            for (int i = 0; i < 36; i++) gu[i] = 1;
            sla_nl_options o;
            sla_nl_options_default(&o);
            o.method = ms[im];
            o.linear.method = im == 2 ? SLA_METHOD_CHOLESKY : SLA_METHOD_CG;
            o.linear.rtol = 1e-12;
            o.chord_ratio = im == 2 ? 0.5 : 0.0;
            sla_status st = sla_nl_bratu2d(ctx, 6, SLA_NL_BRATU_MU, &B);
            if (!st) st = sla_nlsolver_create(ctx, sla_nl_builtin_problem(B), &o, &S);
            if (!st) st = sla_nlsolver_solve(ctx, S, &mu, u, NULL);
            if (!st) st = sla_nlsolver_solve_vjp(ctx, S, gu, &g, NULL, NULL);
            sla_nlsolver_destroy(&S);
            sla_nl_builtin_destroy(&B);
            CHECK(c.live == 0);
            sla_ctx_destroy(&ctx);
            if (c.failures == 0) {
                CHECK(st == SLA_OK);
                total = k;
                break;
            }
            if (st != SLA_ERR_NOMEM) {
                fprintf(stderr, "allocation %ld: %s\n", k, sla_status_name(st));
                CHECK(st == SLA_ERR_NOMEM);
            }
        }
        CHECK(total > 5);
    }
}

int main(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    test_bratu_newton(ctx);
    test_bratu_grad_mu(ctx);
    test_bratu_grad_field(ctx);
    test_gradient_path_independent(ctx);
    test_turning_point(ctx);
    test_chord(ctx);
    test_upper_branch(ctx);
    test_linear_cocg(ctx);
    test_anderson_picard(ctx);
    test_diffusion(ctx);
    test_symmetry_change(ctx);
    test_custom_and_errors(ctx);
    test_options_parse(ctx);
    test_alloc_failures();
    sla_ctx_destroy(&ctx);
    return tu_finish("test_nonlinear");
}
