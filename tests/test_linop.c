/* Matrix-free solves (sla/linop.h): an operator given by callbacks that
 * multiply by a matrix, solved by every Krylov method (cocg too: cg on a
 * real operator) and compared with the
 * dense LAPACK solution and with the same method on the matrix itself;
 * transposed solves, user preconditioners, failing callbacks and the
 * argument checks. */
#include "test_util.h"

static sla_ctx *ctx;

/* The operator: a matrix applied through the public API, counting calls;
 * fail_at > 0 makes that call (1-based) return 7. */
typedef struct op_data {
    const sla_matrix *A;
    long calls, tcalls, fail_at;
    long pc_calls, pc_tcalls, pc_fail_at;
    double *dinv; /* Jacobi preconditioner */
} op_data;

static int op_apply(void *user, sla_int n, const double *x, double *y)
{
    op_data *d = user;
    d->calls++;
    if (d->fail_at > 0 && d->calls + d->tcalls >= d->fail_at) return 7;
    return sla_matvec(NULL, d->A, 0, 1, x, n, y, n) != SLA_OK;
}

static int op_apply_t(void *user, sla_int n, const double *x, double *y)
{
    op_data *d = user;
    d->tcalls++;
    if (d->fail_at > 0 && d->calls + d->tcalls >= d->fail_at) return 7;
    return sla_matvec_transpose(NULL, d->A, 0, 1, x, n, y, n) != SLA_OK;
}

static sla_status pc_apply(void *user, sla_int n, const double *r, double *z)
{
    op_data *d = user;
    d->pc_calls++;
    if (d->pc_fail_at > 0 && d->pc_calls >= d->pc_fail_at) return SLA_ERR_VALUE;
    for (sla_int i = 0; i < n; i++) z[i] = d->dinv[i] * r[i];
    return SLA_OK;
}

static sla_status pc_apply_t(void *user, sla_int n, const double *r, double *z)
{
    op_data *d = user;
    d->pc_tcalls++;
    for (sla_int i = 0; i < n; i++) z[i] = d->dinv[i] * r[i];
    return SLA_OK;
}

static sla_solver_options opts(sla_method m)
{
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = m;
    o.rtol = 1e-11;
    return o;
}

static double *diag_inverse(const sla_matrix *A)
{
    sla_int n = sla_matrix_nrows(A);
    double *d = malloc((size_t)n * sizeof *d);
    sla_int *ci = malloc((size_t)sla_matrix_nnz(A) * sizeof *ci);
    const sla_int *rp = sla_matrix_rowptr(A);
    const double *v = sla_matrix_values(A, 0);
    sla_matrix_get_colind(A, ci);
    for (sla_int i = 0; i < n; i++)
        for (sla_int p = rp[i]; p < rp[i + 1]; p++)
            if (ci[p] == i) d[i] = 1.0 / v[p];
    free(ci);
    return d;
}

/* One method on the operator vs LAPACK and vs the matrix solve (same
 * iteration on the same numbers: the same count, the same x up to
 * rounding in the fused kernels). */
static void compare(const sla_matrix *A, sla_method m, bool transpose, bool user_pc)
{
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    double *xm = calloc((size_t)n, sizeof *xm), *ref = malloc((size_t)n * sizeof *ref);
    tu_fill(b, n, 5 + (unsigned)m);
    op_data d = {.A = A, .dinv = diag_inverse(A)};
    sla_solver_options o = opts(m);
    if (user_pc) {
        sla_solver_options_set_user_precond(&o, pc_apply, pc_apply_t, &d);
        CHECK(o.precond == SLA_PRECOND_USER && o.user_precond.user == &d);
    }
    sla_solve_info info, minfo;
    if (transpose)
        CHECK_OK(ctx, sla_linop_solve_transpose(ctx, n, op_apply, op_apply_t, &d, &o, b, x, &info));
    else
        CHECK_OK(ctx, sla_linop_solve(ctx, n, op_apply, op_apply_t, &d, &o, b, x, &info));
    CHECK(tu_dense_solve(A, transpose, b, ref) == 0);
    double err = tu_reldiff(n, x, ref);
    CHECK(err < 1e-8);
    CHECK(info.converged && info.residual <= 1e-11);
    CHECK(fabs(info.residual - tu_relres(A, 0, b, x, transpose)) <= 1e-13);
    CHECK(!strcmp(info.backend, "matrix-free"));
    CHECK(!strcmp(info.method, sla_method_name(m == SLA_METHOD_AUTO ? SLA_METHOD_GMRES : m)));
    CHECK(!strcmp(info.precond, user_pc ? "user" : "none"));
    /* the transposed solve of a nonsymmetric method runs on apply_transpose only */
    if (transpose && m != SLA_METHOD_CG && m != SLA_METHOD_MINRES && m != SLA_METHOD_COCG)
        CHECK(d.calls == 0 && d.tcalls > 0);
    if (!transpose) CHECK(d.tcalls == 0);
    if (user_pc && transpose) CHECK(d.pc_tcalls > 0 && d.pc_calls == 0);
    if (user_pc && !transpose) CHECK(d.pc_calls > 0 && d.pc_tcalls == 0);

    /* the same method on the matrix */
    sla_solver *S = NULL;
    o.equilibrate = SLA_EQUILIBRATE_OFF;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    if (S) {
        if (transpose) CHECK_OK(ctx, sla_solver_solve_transpose(ctx, S, 0, 1, b, n, xm, n, &minfo));
        else CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, xm, n, &minfo));
        if (m != SLA_METHOD_AUTO) CHECK(llabs((long long)(minfo.iterations - info.iterations)) <= 1);
        CHECK(tu_reldiff(n, x, xm) < 1e-9);
        if (tu_reldiff(n, x, xm) >= 1e-9 || (m != SLA_METHOD_AUTO && llabs((long long)(minfo.iterations - info.iterations)) > 1))
            fprintf(stderr, "  %s%s: %lld vs %lld iterations, diff %.3e\n", sla_method_name(m),
                    transpose ? " (T)" : "", (long long)info.iterations,
                    (long long)minfo.iterations, tu_reldiff(n, x, xm));
    }
    sla_solver_destroy(&S);
    free(d.dinv);
    free(b);
    free(x);
    free(xm);
    free(ref);
}

static void errors(const sla_matrix *A, sla_method spd_or_general)
{
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    tu_fill(b, n, 3);
    sla_solver_options o = opts(SLA_METHOD_GMRES);
    sla_solve_info info;

    /* a failing operator: SLA_ERR_CALLBACK, and no call after the failure */
    for (int mi = 0; mi < 4; mi++) {
        sla_method ms[4] = {SLA_METHOD_CG, SLA_METHOD_MINRES, SLA_METHOD_BICGSTAB, SLA_METHOD_GMRES};
        op_data d = {.A = A, .fail_at = 6};
        o.method = ms[mi];
        CHECK_ERR(ctx, sla_linop_solve(ctx, n, op_apply, NULL, &d, &o, b, x, &info), SLA_ERR_CALLBACK,
                  "operator callback (apply) returned 7 on call 6");
        CHECK(d.calls == 6);
        CHECK(!info.converged);
        op_data dt = {.A = A, .fail_at = 1};
        CHECK_ERR(ctx, sla_linop_solve_transpose(ctx, n, op_apply, op_apply_t, &dt, &o, b, x, &info),
                  SLA_ERR_CALLBACK, "(apply_transpose) returned 7 on call 1");
        CHECK(dt.tcalls == 1 && dt.calls == 0);
    }
    /* a failing preconditioner */
    {
        op_data d = {.A = A, .dinv = diag_inverse(A), .pc_fail_at = 3};
        o.method = SLA_METHOD_GMRES;
        o.precond = SLA_PRECOND_USER;
        o.user_precond = (sla_user_precond){pc_apply, NULL, &d};
        CHECK_ERR(ctx, sla_linop_solve(ctx, n, op_apply, NULL, &d, &o, b, x, &info), SLA_ERR_CALLBACK,
                  "preconditioner callback (apply) failed");
        CHECK(d.pc_calls == 3);
        /* no apply_transpose: M is taken as symmetric in a transposed solve */
        d.pc_fail_at = 0;
        d.pc_calls = 0;
        CHECK_OK(ctx, sla_linop_solve_transpose(ctx, n, op_apply, op_apply_t, &d, &o, b, x, &info));
        CHECK(d.pc_calls > 0);
        free(d.dinv);
        o.precond = SLA_PRECOND_NONE;
    }
    op_data d = {.A = A};
    o.method = SLA_METHOD_GMRES;
    CHECK_ERR(ctx, sla_linop_solve_transpose(ctx, n, op_apply, NULL, &d, &o, b, x, &info),
              SLA_ERR_ARGUMENT, "needs apply_transpose");
    o.method = SLA_METHOD_AUTO;
    CHECK_ERR(ctx, sla_linop_solve_transpose(ctx, n, op_apply, NULL, &d, &o, b, x, &info),
              SLA_ERR_ARGUMENT, "needs apply_transpose");
    o.method = SLA_METHOD_LU;
    CHECK_ERR(ctx, sla_linop_solve(ctx, n, op_apply, NULL, &d, &o, b, x, &info), SLA_ERR_ARGUMENT,
              "method lu needs a matrix");
    o.method = SLA_METHOD_GMRES;
    o.precond = SLA_PRECOND_ILU0;
    CHECK_ERR(ctx, sla_linop_solve(ctx, n, op_apply, NULL, &d, &o, b, x, &info), SLA_ERR_ARGUMENT,
              "precond ilu0 needs a matrix");
    o.precond = SLA_PRECOND_USER;
    o.user_precond = (sla_user_precond){NULL, NULL, NULL};
    CHECK_ERR(ctx, sla_linop_solve(ctx, n, op_apply, NULL, &d, &o, b, x, &info), SLA_ERR_ARGUMENT,
              "user_precond.apply");
    o.precond = SLA_PRECOND_NONE;
    o.rtol = -1.0;
    CHECK_ERR(ctx, sla_linop_solve(ctx, n, op_apply, NULL, &d, &o, b, x, &info), SLA_ERR_ARGUMENT,
              "rtol");
    o.rtol = 1e-10;
    CHECK_ERR(ctx, sla_linop_solve(ctx, n, NULL, NULL, &d, &o, b, x, &info), SLA_ERR_ARGUMENT,
              "must not be NULL");
    CHECK_ERR(ctx, sla_linop_solve(ctx, -1, op_apply, NULL, &d, &o, b, x, &info), SLA_ERR_ARGUMENT,
              "n = -1");
    b[4] = NAN;
    CHECK_ERR(ctx, sla_linop_solve(ctx, n, op_apply, NULL, &d, &o, b, x, &info), SLA_ERR_VALUE,
              "b[4]");
    CHECK(d.calls == 0);
    tu_fill(b, n, 3);
    /* n = 0: nothing to do */
    CHECK_OK(ctx, sla_linop_solve(ctx, 0, op_apply, NULL, &d, &o, NULL, NULL, &info));
    CHECK(info.converged && info.iterations == 0);

    /* not converged: a reason, the last iterate, a warning status */
    o.method = spd_or_general;
    o.maxiter = 3;
    CHECK_ERR(ctx, sla_linop_solve(ctx, n, op_apply, NULL, &d, &o, b, x, &info), SLA_NOT_CONVERGED,
              "did not converge");
    CHECK(info.reason == SLA_DIVERGED_MAXITER && info.iterations == 3 && isfinite(x[0]));
    /* use_x0 from the solution: no iteration */
    o.maxiter = 0;
    CHECK_OK(ctx, sla_linop_solve(ctx, n, op_apply, NULL, &d, &o, b, x, &info));
    o.use_x0 = true;
    CHECK_OK(ctx, sla_linop_solve(ctx, n, op_apply, NULL, &d, &o, b, x, &info));
    CHECK(info.iterations == 0);
    /* auto runs gmres and says so; the default options (NULL) too */
    o.use_x0 = false;
    o.method = SLA_METHOD_AUTO;
    CHECK_OK(ctx, sla_linop_solve(ctx, n, op_apply, NULL, &d, &o, b, x, &info));
    CHECK(!strcmp(info.method, "gmres") && strstr(info.note, "auto: gmres"));
    CHECK_OK(ctx, sla_linop_solve(ctx, n, op_apply, NULL, &d, NULL, b, x, &info));
    CHECK(tu_relres(A, 0, b, x, 0) <= 1e-8);
    free(b);
    free(x);
}

static int stop_at_4(void *user, sla_int it, double rel)
{
    (void)user;
    (void)rel;
    return it >= 4;
}

static void monitor(const sla_matrix *A)
{
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    tu_fill(b, n, 9);
    sla_solver_options o = opts(SLA_METHOD_CG);
    o.monitor = stop_at_4;
    op_data d = {.A = A};
    sla_solve_info info;
    CHECK_ST(ctx, sla_linop_solve(ctx, n, op_apply, NULL, &d, &o, b, x, &info), SLA_NOT_CONVERGED);
    CHECK(info.reason == SLA_DIVERGED_USER && info.iterations == 4);
    free(b);
    free(x);
}

int main(void)
{
    sla_ctx_create(&ctx);
    sla_matrix *P = NULL, *C = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 12, &P));            /* SPD, n = 144 */
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 10, 20.0, -8.0, &C)); /* nonsymmetric, n = 100 */
    if (!P || !C) return tu_finish("test_linop");

    /* cocg on a real operator is cg (the registry's real column) */
    sla_method sym[] = {SLA_METHOD_CG, SLA_METHOD_MINRES, SLA_METHOD_BICGSTAB, SLA_METHOD_GMRES,
                        SLA_METHOD_AUTO, SLA_METHOD_COCG};
    for (int i = 0; i < 6; i++)
        for (int t = 0; t < 2; t++)
            for (int pc = 0; pc < 2; pc++) compare(P, sym[i], t, pc);
    sla_method gen[] = {SLA_METHOD_BICGSTAB, SLA_METHOD_GMRES, SLA_METHOD_AUTO};
    for (int i = 0; i < 3; i++)
        for (int t = 0; t < 2; t++)
            for (int pc = 0; pc < 2; pc++) compare(C, gen[i], t, pc);
    errors(C, SLA_METHOD_BICGSTAB);
    errors(P, SLA_METHOD_CG);
    monitor(P);

    sla_matrix_destroy(&P);
    sla_matrix_destroy(&C);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_linop");
}
