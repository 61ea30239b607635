/* Zero pivots and ILUT: the pivot shift of ILU(0) and IC(0) (options
 * ilu_shift), and the threshold ILU with fill limit and column pivoting
 * (precond ilut) against dense LAPACK: exactness without dropping, the
 * transposed apply by the dot-product identity, solves of matrices with
 * zero diagonals (a constructed one, west0067, west0497) to rtol 1e-10,
 * a VJP against central differences, options, errors and allocation
 * failures; and a table of iteration counts (none / ilu0 / ilut) on
 * tests/data matrices. */
#include "test_util.h"

#include "solvers/krylov.h"

/* ---- matrices --------------------------------------------------------- */

/* West-like: 2 x 2 blocks [[0, a], [b, c]] along the diagonal, |a|, |b| in
 * [3, 4], c = 0 stored on every fourth block, missing otherwise; a11 never
 * stored; small couplings to rows i +- 2 and i + 7. Nonsingular (the
 * blocks dominate), every other diagonal entry not stored. n even. */
static sla_matrix *west_like(sla_int n, unsigned long long seed)
{
    sla_int cap = 6 * n, nnz = 0;
    sla_int *r = malloc((size_t)cap * sizeof *r), *c = malloc((size_t)cap * sizeof *c);
    double *v = malloc((size_t)cap * sizeof *v);
    unsigned long long s = seed * 0x9E3779B97F4A7C15ULL + 1;
#define ADD(i, j, x) (r[nnz] = (i), c[nnz] = (j), v[nnz++] = (x))
    for (sla_int i = 0; i < n; i += 2) {
        ADD(i, i + 1, 3.5 + 0.5 * tu_rand(&s));
        ADD(i + 1, i, -3.5 + 0.5 * tu_rand(&s));
        if ((i / 2) % 4 == 0) ADD(i + 1, i + 1, 0.0); /* an explicit zero */
    }
    for (sla_int i = 0; i < n; i++) {
        if (i + 2 < n) ADD(i, i + 2, 0.3 * tu_rand(&s));
        if (i >= 2) ADD(i, i - 2, 0.3 * tu_rand(&s));
        sla_int j = (i + 7) % n;
        if (j != i && j != i + 1 && j != i - 1 && j != i + 2 && j != i - 2)
            ADD(i, j, 0.2 * tu_rand(&s));
    }
#undef ADD
    sla_matrix *A = NULL;
    CHECK_OK(NULL, sla_matrix_from_coo(NULL, n, n, nnz, r, c, SLA_F64, 1, v, NULL, &A));
    free(r);
    free(c);
    free(v);
    return A;
}

static sla_matrix *read_data(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.mtx", SLA_TEST_DATA, name);
    sla_matrix *A = NULL;
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    CHECK_OK(ctx, sla_mm_read(ctx, path, SLA_F64, &A));
    sla_ctx_destroy(&ctx);
    return A;
}

/* ||b - A x|| / ||b||, computed here. */
static sla_solver_options opts(sla_method m, sla_precond_kind pc, double rtol)
{
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = m;
    o.precond = pc;
    o.rtol = rtol;
    o.maxiter = 3000;
    o.restart = 50;
    return o;
}

/* A preconditioner of `kind` through the library's own set-up. */
static sla__pc *make_pc(sla_ctx *ctx, sla_precond_kind kind, const sla_matrix *A,
                        const sla_solver_options *o)
{
    sla__pc *pc = NULL;
    CHECK_OK(ctx, sla__pc_create(ctx, kind, A, 0, o, &pc));
    return pc;
}

static double dot(sla_int n, const double *x, const double *y)
{
    double s = 0.0;
    for (sla_int i = 0; i < n; i++) s += x[i] * y[i];
    return s;
}

/* ---- 1. the pivot shift of ILU(0) and IC(0) ------------------------------ */

static void test_shift(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    sla_matrix *A = west_like(40, 3);
    sla_solver_options o = opts(SLA_METHOD_GMRES, SLA_PRECOND_ILU0, 1e-10);

    /* off: the old refusal, naming the row */
    o.ilu_shift = 0;
    sla__pc *pc = NULL;
    CHECK_ERR(ctx, sla__pc_create(ctx, SLA_PRECOND_ILU0, A, 0, &o, &pc), SLA_ERR_SINGULAR,
              "zero diagonal at row 0 (not stored)");
    CHECK(pc == NULL);
    CHECK_OK(ctx, sla_solver_options_parse(ctx, "ilu_shift=on", &o));
    CHECK(o.ilu_shift == 1);

    /* on (the default): solves, and the note counts the shifted pivots */
    sla_solver_options_default(&o);
    CHECK(o.ilu_shift == 1);
    o = opts(SLA_METHOD_GMRES, SLA_PRECOND_ILU0, 1e-10);
    sla_int n = sla_matrix_nrows(A);
    double b[40], x[40], xr[40];
    tu_fill(b, n, 5);
    sla_solve_info info;
    CHECK_OK(ctx, sla_solve(ctx, A, &o, b, x, &info));
    CHECK(tu_dense_solve(A, 0, b, xr) == 0);
    double res = tu_relres(A, 0, b, x, 0), err = tu_reldiff(n, x, xr);
    printf("west_like(40) gmres+ilu0 (shift): %lld iterations, residual %.1e, vs LAPACK %.1e; "
           "note \"%s\"\n", (long long)info.iterations, res, err, info.note);
    CHECK(res < 1e-10 && err < 1e-8);
    CHECK(strncmp(info.note, "ILU(0): shifted ", 16) == 0);
    CHECK(strstr(info.note, "zero/tiny pivots (first at row 0; 35 diagonals not stored)") != NULL);

    /* the shift at the pc level: [[1, 1], [1, 1]] has a zero pivot in row 1 */
    sla_matrix *E = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 2, 2, 4, (sla_int[]){0, 0, 1, 1},
                                      (sla_int[]){0, 1, 0, 1}, SLA_F64, 1,
                                      (double[]){1, 1, 1, 1}, NULL, &E));
    sla_precond_kind kinds[] = {SLA_PRECOND_ILU0, SLA_PRECOND_IC0, SLA_PRECOND_ILUT};
    const char *names[] = {"ILU(0): shifted 1 zero/tiny pivots (first at row 1)",
                           "IC(0): shifted 1 zero/tiny pivots (first at row 1)",
                           "ILUT: shifted 1 zero/tiny pivots (first at row 1)"};
    for (int k = 0; k < 3; k++) {
        sla_solver_options_default(&o);
        o.ilut_pivot = 0.0;
        pc = make_pc(ctx, kinds[k], E, &o);
        if (pc) {
            CHECK(pc->shifted == 1);
            CHECK(strcmp(pc->note, names[k]) == 0);
            /* the shifted pivot: 1e-1 ||row 1||_2 (IC(0): of its lower triangle, also
             * sqrt 2, as l_11^2), so (M^-1 e_1)_1 = 1 / (0.1 sqrt 2) for all three */
            double r[2] = {0, 1}, z[2];
            CHECK(sla__pc_apply(pc, false, r, z, 1) == SLA_OK);
            CHECK_CLOSE(z[1], 1.0 / (0.1 * sqrt(2.0)), 1e-12);
        }
        sla__pc_destroy(&pc);
        o.ilu_shift = 0;
        CHECK_ST(ctx, sla__pc_create(ctx, kinds[k], E, 0, &o, &pc),
                 kinds[k] == SLA_PRECOND_IC0 ? SLA_ERR_NOT_SPD : SLA_ERR_SINGULAR);
        CHECK(strstr(sla_ctx_message(ctx), "pivot 0 at row 1") != NULL);
    }
    /* a clearly negative IC(0) pivot is still "not SPD", shift or not */
    sla_matrix *Ind = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 2, 2, 4, (sla_int[]){0, 0, 1, 1},
                                      (sla_int[]){0, 1, 0, 1}, SLA_F64, 1,
                                      (double[]){1, 2, 2, 1}, NULL, &Ind));
    sla_solver_options_default(&o);
    CHECK_ERR(ctx, sla__pc_create(ctx, SLA_PRECOND_IC0, Ind, 0, &o, &pc), SLA_ERR_NOT_SPD,
              "non-positive pivot -3");
    /* IC(0) inserts a missing diagonal when shifting */
    sla_matrix *M = NULL; /* [[4, 1, 0], [1, 4, 0], [0, 0, .]]: row 2 empty */
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 3, 3, 4, (sla_int[]){0, 0, 1, 1},
                                      (sla_int[]){0, 1, 0, 1}, SLA_F64, 1,
                                      (double[]){4, 1, 1, 4}, NULL, &M));
    pc = make_pc(ctx, SLA_PRECOND_IC0, M, &o);
    CHECK(pc && pc->shifted == 1 && strstr(pc->note, "1 diagonals not stored"));
    sla__pc_destroy(&pc);

    sla_matrix_destroy(&Ind);
    sla_matrix_destroy(&M);
    sla_matrix_destroy(&E);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
}

/* ---- 2. ILUT: exactness, transposes ------------------------------------ */

/* Without dropping (droptol 0, fill large enough for every row) ILUT is a
 * complete LU with threshold column pivoting: M^-1 b = A^-1 b and
 * M^-T b = A^-T b, against LAPACK. */
static void test_ilut_exact(const char *what, const sla_matrix *A, double pivot, double res_tol,
                            double tol)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.ilut_droptol = 0.0;
    o.ilut_fill = 1e6;
    o.ilut_pivot = pivot;
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *z = malloc((size_t)n * sizeof *z);
    double *xr = malloc((size_t)n * sizeof *xr);
    tu_fill(b, n, 17);
    sla__pc *pc = make_pc(ctx, SLA_PRECOND_ILUT, A, &o);
    for (int t = 0; pc && t < 2; t++) {
        CHECK(sla__pc_apply(pc, t == 1, b, z, 1) == SLA_OK);
        CHECK(tu_dense_solve(A, t, b, xr) == 0);
        double e = tu_reldiff(n, z, xr), res = tu_relres(A, 0, b, z, t);
        printf("ILUT complete (pivot %.2g) on %s: %s residual %.1e, vs LAPACK %.1e (%lld "
               "pivots shifted)\n", pivot, what, t ? "M^-T b" : "M^-1 b", res, e,
               (long long)pc->shifted);
        CHECK(res < res_tol);
        CHECK(e < tol);
        CHECK(pc->shifted == 0);
    }
    /* z may alias r */
    if (pc) {
        memcpy(xr, b, (size_t)n * sizeof *xr);
        CHECK(sla__pc_apply(pc, false, b, z, 1) == SLA_OK);
        CHECK(sla__pc_apply(pc, false, xr, xr, 1) == SLA_OK);
        CHECK(tu_reldiff(n, xr, z) == 0.0);
    }
    sla__pc_destroy(&pc);
    free(b);
    free(z);
    free(xr);
    sla_ctx_destroy(&ctx);
}

/* <M^-1 x, y> = <x, M^-T y> for the dropping ILUT (and ILU(0)). */
static void test_transpose_identity(const char *what, const sla_matrix *A, sla_precond_kind kind,
                                    double droptol, double pivot)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.ilut_droptol = droptol;
    o.ilut_pivot = pivot;
    sla_int n = sla_matrix_nrows(A);
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    double *mx = malloc((size_t)n * sizeof *mx), *my = malloc((size_t)n * sizeof *my);
    sla__pc *pc = make_pc(ctx, kind, A, &o);
    double worst = 0.0;
    for (int t = 0; pc && t < 3; t++) {
        tu_fill(x, n, 100 + (unsigned long long)t);
        tu_fill(y, n, 200 + (unsigned long long)t);
        CHECK(sla__pc_apply(pc, false, x, mx, 1) == SLA_OK);
        CHECK(sla__pc_apply(pc, true, y, my, 1) == SLA_OK);
        double a = dot(n, mx, y), c = dot(n, x, my);
        double scale = sqrt(dot(n, mx, mx) * dot(n, y, y)) + sqrt(dot(n, x, x) * dot(n, my, my));
        worst = fmax(worst, fabs(a - c) / scale);
    }
    printf("%s on %s (droptol %g, pivot %g): <M^-1 x, y> vs <x, M^-T y> %.1e\n",
           sla_precond_name(kind), what, droptol, pivot, worst);
    CHECK(pc && worst < 1e-13);
    sla__pc_destroy(&pc);
    free(x);
    free(y);
    free(mx);
    free(my);
    sla_ctx_destroy(&ctx);
}

/* ---- 3. solves with zero diagonals -------------------------------------- */

/* Solve A x = b (b random) with the options; check the true residual
 * here and the distance to LAPACK's x (tol_x). Returns the iterations. */
static long long solve_check(const char *what, const sla_matrix *A, sla_method m,
                             sla_precond_kind pc, double tol_x)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    sla_solver_options o = opts(m, pc, 1e-10);
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    double *xr = malloc((size_t)n * sizeof *xr);
    tu_fill(b, n, 31);
    sla_solve_info info;
    sla_status st = sla_solve(ctx, A, &o, b, x, &info);
    CHECK_OK(ctx, st);
    double res = tu_relres(A, 0, b, x, 0);
    CHECK(tu_dense_solve(A, 0, b, xr) == 0);
    double err = tu_reldiff(n, x, xr);
    printf("  %-10s %-8s + %-5s %4lld iterations, true residual %.1e, vs LAPACK %.1e  %s\n",
           what, sla_method_name(m), sla_precond_name(pc), (long long)info.iterations, res, err,
           info.note);
    CHECK(info.converged && res < 1e-10 && err < tol_x);
    free(b);
    free(x);
    free(xr);
    sla_ctx_destroy(&ctx);
    return info.iterations;
}

static void test_zero_diagonal_solves(void)
{
    printf("solves of matrices with zero diagonals, rtol 1e-10:\n");
    sla_matrix *W = west_like(200, 7), *W67 = read_data("west0067"),
               *W497 = read_data("west0497"), *AD = read_data("adder_dcop_05");
    /* ILU(0) with shifted pivots: west0067 (61 shifted) and adder_dcop_05 (7) */
    if (W67) solve_check("west0067", W67, SLA_METHOD_GMRES, SLA_PRECOND_ILU0, 1e-7);
    if (AD) solve_check("adder_dcop", AD, SLA_METHOD_GMRES, SLA_PRECOND_ILU0, 1e-4);
    if (AD) solve_check("adder_dcop", AD, SLA_METHOD_GMRES, SLA_PRECOND_ILUT, 1e-4);
    if (AD) solve_check("adder_dcop", AD, SLA_METHOD_BICGSTAB, SLA_PRECOND_ILUT, 1e-4);
    solve_check("west_like", W, SLA_METHOD_GMRES, SLA_PRECOND_ILUT, 1e-8);
    solve_check("west_like", W, SLA_METHOD_BICGSTAB, SLA_PRECOND_ILUT, 1e-8);
    /* west0067: cond ~ 1e2..1e3; west0497: cond ~ 1e12, so only the residual is tight */
    if (W67) {
        solve_check("west0067", W67, SLA_METHOD_GMRES, SLA_PRECOND_ILUT, 1e-7);
        solve_check("west0067", W67, SLA_METHOD_BICGSTAB, SLA_PRECOND_ILUT, 1e-7);
    }
    if (W497) {
        solve_check("west0497", W497, SLA_METHOD_GMRES, SLA_PRECOND_ILUT, 1e-1);
        solve_check("west0497", W497, SLA_METHOD_BICGSTAB, SLA_PRECOND_ILUT, 1e-1);
    }
    sla_matrix_destroy(&W);
    sla_matrix_destroy(&W67);
    sla_matrix_destroy(&W497);
    sla_matrix_destroy(&AD);
}

/* ---- 4. VJP through GMRES + ILUT ---------------------------------------- */

/* L = g . x with A x = b, A west-like (nonsymmetric, zero diagonals):
 * dL/dA against central differences of single entries, dL/db = A^-T g
 * against LAPACK. */
static void test_vjp(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    sla_matrix *A = west_like(60, 11);
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *b = malloc((size_t)n * sizeof *b), *g = malloc((size_t)n * sizeof *g);
    double *x = calloc((size_t)n, sizeof *x), *gb = malloc((size_t)n * sizeof *gb);
    double *gA = malloc((size_t)nnz * sizeof *gA), *xp = calloc((size_t)n, sizeof *xp);
    tu_fill(b, n, 41);
    tu_fill(g, n, 42);
    sla_solver_options o = opts(SLA_METHOD_GMRES, SLA_PRECOND_ILUT, 1e-13);
    sla_solver *S = NULL;
    sla_solve_info info;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
    CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
    CHECK_OK(ctx, sla_solver_solve_vjp(ctx, S, 0, 1, x, n, g, n, gb, n, gA, &info));
    CHECK(strcmp(info.precond, "ilut") == 0 && info.converged);
    printf("VJP through gmres + ilut (west_like 60): adjoint %lld iterations\n",
           (long long)info.iterations);
    sla_solver_destroy(&S);

    double *vals = malloc((size_t)nnz * sizeof *vals);
    memcpy(vals, sla_matrix_values(A, 0), (size_t)nnz * sizeof *vals);
    sla_int *colind = malloc((size_t)nnz * sizeof *colind);
    sla_matrix_get_colind(A, colind);
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(A), colind, SLA_F64, 1, vals,
                                      SLA_BORROW, &B));
    const sla_int picks[] = {0, 5, nnz / 3, nnz / 2 + 1, nnz - 1};
    double worst = 0.0;
    for (int q = 0; B && q < 5; q++) {
        sla_int k = picks[q];
        double h = 1e-5 * fmax(1.0, fabs(vals[k])), L[2], v0 = vals[k];
        for (int side = 0; side < 2; side++) {
            vals[k] = v0 + (side ? -h : h);
            CHECK_OK(ctx, sla_solve(ctx, B, &o, b, xp, &info));
            L[side] = dot(n, g, xp);
        }
        vals[k] = v0;
        double fd = (L[0] - L[1]) / (2.0 * h);
        double err = fabs(fd - gA[k]) / fmax(1.0, fabs(gA[k]));
        worst = fmax(worst, err);
        CHECK(err < 1e-6);
    }
    double *lr = malloc((size_t)n * sizeof *lr);
    CHECK(tu_dense_solve(A, 1, g, lr) == 0);
    double d = tu_reldiff(n, gb, lr);
    printf("  dL/dA vs central differences (5 entries): worst %.1e; dL/db vs LAPACK %.1e\n",
           worst, d);
    CHECK(d < 1e-10);
    free(lr);
    sla_matrix_destroy(&B);
    free(colind);
    free(vals);
    free(b);
    free(g);
    free(x);
    free(gb);
    free(gA);
    free(xp);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
}

/* ---- 5. options, errors, allocation failures ----------------------------- */

static void test_options(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    sla_solver_options o;
    sla_solver_options_default(&o);
    CHECK(o.ilut_droptol == 1e-4 && o.ilut_fill == 10.0 && o.ilut_pivot == 0.1);
    CHECK_OK(ctx, sla_solver_options_parse(ctx, "precond=ilut,ilut_droptol=1e-3,ilut_fill=5,"
                                                "ilut_pivot=0.5,ilu_shift=off", &o));
    CHECK(o.precond == SLA_PRECOND_ILUT && o.ilut_droptol == 1e-3 && o.ilut_fill == 5.0 &&
          o.ilut_pivot == 0.5 && o.ilu_shift == 0);
    CHECK(strcmp(sla_precond_name(SLA_PRECOND_ILUT), "ilut") == 0);
    CHECK(SLA_PRECOND_SAAMG == 7 && SLA_PRECOND_ILUT == 8); /* appended: old values kept */
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "ilut_pivot=2", &o), SLA_ERR_ARGUMENT, "[0, 1]");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "ilu_shift=maybe", &o), SLA_ERR_ARGUMENT,
              "on or off");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "ilut_droptol=-1", &o), SLA_ERR_ARGUMENT,
              "ilut_droptol");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "precond=ilutt", &o), SLA_ERR_ARGUMENT, "'ilut'");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "ilut_fil=3", &o), SLA_ERR_ARGUMENT, "ilut_fill");
    /* bad values set directly reach the set-up */
    sla_matrix *A = west_like(20, 1);
    sla_solver_options_default(&o);
    o.ilut_droptol = NAN;
    sla__pc *pc = NULL;
    CHECK_ERR(ctx, sla__pc_create(ctx, SLA_PRECOND_ILUT, A, 0, &o, &pc), SLA_ERR_ARGUMENT,
              "drop tolerance");
    sla_solver_options_default(&o);
    o.ilut_pivot = -0.5;
    CHECK_ERR(ctx, sla__pc_create(ctx, SLA_PRECOND_ILUT, A, 0, &o, &pc), SLA_ERR_ARGUMENT,
              "pivot threshold");
    /* fill 0 means the default; a tiny fill still keeps one entry per part */
    sla_solver_options_default(&o);
    o.ilut_fill = 0.0;
    pc = make_pc(ctx, SLA_PRECOND_ILUT, A, &o);
    sla__pc_destroy(&pc);
    o.ilut_fill = 1e-9;
    pc = make_pc(ctx, SLA_PRECOND_ILUT, A, &o);
    sla__pc_destroy(&pc);
    sla_matrix_destroy(&A);
    /* n = 0 */
    sla_int rowptr[1] = {0};
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 0, 0, rowptr, NULL, SLA_F64, 1, NULL, SLA_COPY, &A));
    double r[1] = {7}, z[1] = {9};
    pc = A ? make_pc(ctx, SLA_PRECOND_ILUT, A, &o) : NULL;
    if (pc) {
        CHECK(sla__pc_apply(pc, false, r, z, 1) == SLA_OK);
        CHECK(sla__pc_apply(pc, true, r, z, 1) == SLA_OK);
        CHECK(z[0] == 9);
    }
    sla__pc_destroy(&pc);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
}

/* Every allocation failure of the ILUT and shifted ILU(0) set-ups is
 * SLA_ERR_NOMEM with nothing leaked. */
static void test_nomem(void)
{
    sla_matrix *A = west_like(30, 9);
    sla_precond_kind kinds[] = {SLA_PRECOND_ILUT, SLA_PRECOND_ILU0, SLA_PRECOND_IC0};
    sla_solver_options o;
    sla_solver_options_default(&o);
    for (int k = 0; k < 3; k++) {
        int failures = 0;
        for (long at = 0; at < 100; at++) {
            counter c = {0, at, 0, 0};
            sla__pc pc;
            memset(&pc, 0, sizeof pc);
            pc.alloc = (sla_allocator){count_malloc, count_free, &c};
            pc.n = sla_matrix_nrows(A);
            pc.shift = true;
            sla_status st = kinds[k] == SLA_PRECOND_ILUT ? sla__ilut_setup(NULL, A, 0, 1e-4, 10.0, 0.1, &pc)
                            : kinds[k] == SLA_PRECOND_ILU0 ? sla__ilu0_setup(NULL, A, 0, &pc)
                                                           : sla__ic0_setup(NULL, A, 0, &pc);
            if (st == SLA_OK) {
                pc.destroy(&pc);
                CHECK(c.live == 0);
                break;
            }
            CHECK(st == SLA_ERR_NOMEM || (kinds[k] == SLA_PRECOND_IC0 && st == SLA_ERR_NOT_SPD));
            CHECK(c.live == 0);
            CHECK(pc.fact == NULL);
            if (st == SLA_ERR_NOT_SPD) break; /* west_like is not SPD: set-up stops there */
            failures++;
        }
        CHECK(failures >= 2);
    }
    sla_matrix_destroy(&A);
}

/* ---- 6. iteration counts on tests/data ---------------------------------- */

static void table(void)
{
    const char *mats[] = {"west0067", "west0497", "fs_183_6", "rajat19", "adder_dcop_05",
                          "olm500",   "watt_2",   "nnc1374",  "bp_1200"};
    const sla_precond_kind pcs[] = {SLA_PRECOND_NONE, SLA_PRECOND_ILU0, SLA_PRECOND_ILUT};
    printf("GMRES(50), rtol 1e-10, maxiter 1000, b random: iterations (true residual)\n");
    printf("  %-14s %-22s %-22s %-22s\n", "matrix", "none", "ilu0", "ilut");
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    for (int m = 0; m < (int)(sizeof mats / sizeof mats[0]); m++) {
        sla_matrix *A = read_data(mats[m]);
        if (!A) continue;
        sla_int n = sla_matrix_nrows(A);
        double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
        tu_fill(b, n, 51);
        printf("  %-14s", mats[m]);
        for (int p = 0; p < 3; p++) {
            sla_solver_options o = opts(SLA_METHOD_GMRES, pcs[p], 1e-10);
            o.maxiter = 1000; /* the table's cost under ASan */
            sla_solve_info info;
            sla_status st = sla_solve(ctx, A, &o, b, x, &info);
            char cell[64];
            if (st == SLA_OK || st == SLA_NOT_CONVERGED)
                snprintf(cell, sizeof cell, "%lld (%.1e)%s", (long long)info.iterations,
                         tu_relres(A, 0, b, x, 0), st == SLA_OK ? "" : " nc");
            else
                snprintf(cell, sizeof cell, "%s", sla_status_name(st));
            printf(" %-22s", cell);
            if (pcs[p] == SLA_PRECOND_ILUT && m < 2) CHECK(st == SLA_OK);
        }
        printf("\n");
        free(b);
        free(x);
        sla_matrix_destroy(&A);
    }
    sla_ctx_destroy(&ctx);
}

int main(void)
{
    test_shift();
    sla_matrix *W = west_like(40, 13), *W67 = read_data("west0067"), *F = read_data("fs_183_6");
    test_ilut_exact("west_like(40)", W, 0.1, 1e-14, 1e-14);
    test_ilut_exact("west_like(40)", W, 1.0, 1e-14, 1e-14);
    if (W67) test_ilut_exact("west0067", W67, 0.1, 1e-12, 1e-12);
    /* fs_183_6: ||A|| ||x|| / ||b|| is large, so only x is compared tightly */
    if (F) test_ilut_exact("fs_183_6", F, 0.0, 1e-5, 1e-12);
    test_transpose_identity("west_like(40)", W, SLA_PRECOND_ILUT, 1e-4, 0.1);
    test_transpose_identity("west_like(40)", W, SLA_PRECOND_ILU0, 0, 0);
    if (W67) test_transpose_identity("west0067", W67, SLA_PRECOND_ILUT, 1e-4, 0.1);
    if (W67) test_transpose_identity("west0067", W67, SLA_PRECOND_ILUT, 1e-2, 0.5);
    if (F) test_transpose_identity("fs_183_6", F, SLA_PRECOND_ILUT, 1e-3, 0.1);
    sla_matrix_destroy(&W);
    sla_matrix_destroy(&W67);
    sla_matrix_destroy(&F);
    test_zero_diagonal_solves();
    test_vjp();
    test_options();
    test_nomem();
    table();
    return tu_finish("test_precond_ilut");
}
