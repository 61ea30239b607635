/* sla demo inverse — an end-to-end inverse problem on the library's
 * differentiable solve.
 *
 * Unknown: the conductivity kappa on the (N+1)^2 cells of
 * sla_gen_diffusion2d. Data: u* = A(kappa*)^-1 h^2 1 at all N^2 interior
 * nodes (noise-free), kappa* = 1 + 0.5 sin(2 pi x) sin(2 pi y) at the cell
 * centres. Parametrisation kappa = floor + softplus(theta). Objective
 *
 *   L(kappa) = 0.5 ||u(kappa) - u*||^2 / ||u*||^2
 *            + alpha/2 sum over neighbouring cells (kappa_c - kappa_c')^2
 *
 * minimised over theta by Adam. One step: new matrix values from kappa
 * (sla_gen_diffusion2d_values, written into the array the matrix borrows),
 * a numeric refactorization that reuses the symbolic analysis
 * (sla_solver_refresh), the forward solve, the VJP of the solve
 * (sla_solver_solve_vjp: one more solve with the same factor) giving dL/dA
 * on the pattern, the exact VJP of kappa -> values
 * (sla_gen_diffusion2d_vjp), the chain rule through softplus, the
 * regulariser's gradient and the Adam update.
 *
 * The demo knows kappa*, so it reports the relative L2 error of kappa over
 * all cells; the optimiser never sees it.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */

#include "cli_output.h"
#include "cli_util.h"
#include "demo_inverse.h"

#include <sla.h>

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PI 3.14159265358979323846

const char sla_demo_inverse_help[] =
    "usage: sla demo inverse [options]\n"
    "\n"
    "Recover the conductivity kappa on an N x N grid from noise-free observations\n"
    "of u, where -div(kappa grad u) = 1 on the unit square, u = 0 on the boundary,\n"
    "kappa* = 1 + 0.5 sin(2 pi x) sin(2 pi y). kappa lives on the (N+1)^2 cells\n"
    "(finite volumes), u is observed at all N^2 interior nodes; kappa = softplus\n"
    "(theta) + 0.01, starting from kappa = 1. Minimises\n"
    "  0.5 ||u(kappa) - u*||^2 / ||u*||^2 + alpha/2 sum_edges (kappa_c - kappa_c')^2\n"
    "with Adam through the library's differentiable solve (one refactorization,\n"
    "one solve and one adjoint solve per step) and the VJP of kappa -> A.\n"
    "The error reported is ||kappa - kappa*|| / ||kappa*|| over all cells.\n"
    "\n"
    "  --steps K       Adam steps (default 2000)\n"
    "  --lr R          initial learning rate (default 0.1), cosine-decayed to\n"
    "                  R * --lr-end (default 1e-3)\n"
    "  --alpha A       initial regularisation weight, decayed geometrically to\n"
    "                  --alpha-end over the steps (default 1e-6)\n"
    "  --alpha-end A   final regularisation weight (default 1e-9)\n"
    "  --n N           interior grid points per side (default 64)\n"
    "  --method M      solver: auto|cholesky|ldlt|lu|cg (default cholesky: each\n"
    "                  step refactors once and solves twice, forward and adjoint,\n"
    "                  which favours the factorization; Krylov solves use rtol 1e-12)\n"
    "  --every K       print a progress line every K steps (default steps/15)\n"
    "  --png PATH      image of kappa*, kappa and the error (default\n"
    "                  sla_demo_inverse.png; needs gnuplot, skipped with a note\n"
    "                  otherwise; --png '' skips it). The name is checked\n"
    "                  first (no control characters, a writable folder); the\n"
    "                  image is made in a temporary folder and renamed into place\n"
    "  --noise S       add Gaussian noise of standard deviation S * rms(u*) to the\n"
    "                  observations (default 0: noise-free)\n"
    "  --seed S        seed of the noise and of --check-grad's perturbation and\n"
    "                  cells (default 1)\n"
    "  --check-grad    only check dL/dkappa (adjoint + VJPs) against central finite\n"
    "                  differences at a perturbed kappa (alpha 1e-4 unless --alpha\n"
    "                  is given): three cells and one random direction; exit 0 when\n"
    "                  every relative difference < 1e-6\n"
    "  --threads T     number of threads (0 = OpenMP default)\n"
    "  --json          last line of stdout: {\"steps\", \"loss\", \"loss_first\",\n"
    "                  \"misfit\", \"rel_l2_error\", \"seconds\"} (error as a fraction;\n"
    "                  seconds: set-up and optimisation, without the PNG)\n";

/* ---- small helpers -------------------------------------------------- */

static int lib_fail(sla_ctx *ctx, sla_status st, const char *what)
{
    const char *msg = sla_ctx_message(ctx);
    if (msg && msg[0])
        err("demo inverse: %s: %s", what, msg);
    else
        err("demo inverse: %s: %s", what, sla_status_name(st));
    return st == SLA_ERR_NOMEM ? EXIT_INTERNAL : EXIT_BAD;
}

/* xorshift64*, uniform in [-1, 1]. */
static double rng_unit(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    uint64_t r = *s * 0x2545F4914F6CDD1DULL;
    return (double)(r >> 11) * (2.0 / 9007199254740991.0) - 1.0;
}

/* softplus(t) = log(1 + e^t) and its derivative, overflow-safe. */
static double softplus(double t) { return t > 0 ? t + log1p(exp(-t)) : log1p(exp(t)); }
static double sigmoid(double t)
{
    if (t >= 0) return 1.0 / (1.0 + exp(-t));
    double e = exp(t);
    return e / (1.0 + e);
}
/* Inverse of softplus for y > 0: log(e^y - 1). */
static double softplus_inv(double y) { return y > 30 ? y : log(expm1(y)); }

/* The factorizations here are small (n = N^2): BLAS threads only add
 * synchronisation (on a busy 2-core machine they doubled the time per
 * step). OpenBLAS, if that is the BLAS in the process, is asked for one
 * thread while the demo runs; blas_threads_restore puts it back. */
typedef void (*blas_set_fn)(int);
typedef int (*blas_get_fn)(void);

static int blas_threads_one(void)
{
    blas_set_fn set;
    blas_get_fn get;
    *(void **)&set = dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
    *(void **)&get = dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
    if (!set || !get) return 0;
    int old = get();
    set(1);
    return old;
}

static void blas_threads_restore(int old)
{
    blas_set_fn set;
    if (old <= 0) return;
    *(void **)&set = dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
    if (set) set(old);
}

/* ---- the problem ---------------------------------------------------- */

#define KAPPA_FLOOR 0.01

typedef struct inv_problem {
    sla_ctx *ctx;
    sla_int N, M, n, nnz, ncell;
    double h;
    double *kt;       /* kappa* (ncell) */
    double *ut;       /* observed u* (n) */
    double ut2;       /* ||u*||^2 */
    double *b;        /* h^2 f (n) */
    sla_int *rowptr;  /* pattern, kept alive for the borrowed matrix */
    sla_int *colind;
    double *vals;     /* values, borrowed by A */
    sla_matrix *A;
    sla_solver *S;
    double *u, *gx, *gA; /* n, n, nnz */
    sla_solve_info fi, ai;
} inv_problem;

static void inv_free(inv_problem *P)
{
    sla_solver_destroy(&P->S);
    sla_matrix_destroy(&P->A);
    free(P->kt);
    free(P->ut);
    free(P->b);
    free(P->rowptr);
    free(P->colind);
    free(P->vals);
    free(P->u);
    free(P->gx);
    free(P->gA);
    memset(P, 0, sizeof *P);
}

/* Set up the grid, kappa*, the borrowed matrix, the solver and u*.
 * Returns 0 or an exit status (message printed). */
static int inv_setup(inv_problem *P, sla_ctx *ctx, sla_int N, const sla_solver_options *opts)
{
    memset(P, 0, sizeof *P);
    P->ctx = ctx;
    P->N = N;
    P->M = N + 1;
    P->n = N * N;
    P->ncell = P->M * P->M;
    P->h = 1.0 / (double)(N + 1);
    sla_status st;
    sla_matrix *A0 = NULL;

    P->kt = calloc((size_t)P->ncell, sizeof *P->kt);
    P->ut = calloc((size_t)P->n, sizeof *P->ut);
    P->b = calloc((size_t)P->n, sizeof *P->b);
    P->u = calloc((size_t)P->n, sizeof *P->u);
    P->gx = calloc((size_t)P->n, sizeof *P->gx);
    if (!P->kt || !P->ut || !P->b || !P->u || !P->gx) goto nomem;
    for (sla_int bb = 0; bb < P->M; bb++)
        for (sla_int a = 0; a < P->M; a++) {
            double x = ((double)a + 0.5) * P->h, y = ((double)bb + 0.5) * P->h;
            P->kt[bb * P->M + a] = 1.0 + 0.5 * sin(2 * PI * x) * sin(2 * PI * y);
        }
    for (sla_int i = 0; i < P->n; i++) P->b[i] = P->h * P->h;

    /* The pattern from the generator; the values array is ours, borrowed
     * by A, rewritten every step. */
    st = sla_gen_diffusion2d(ctx, N, P->kt, &A0);
    if (st < 0) return lib_fail(ctx, st, "diffusion2d");
    P->nnz = sla_matrix_nnz(A0);
    P->rowptr = calloc((size_t)P->n + 1, sizeof *P->rowptr);
    P->colind = calloc((size_t)P->nnz, sizeof *P->colind);
    P->vals = calloc((size_t)P->nnz, sizeof *P->vals);
    P->gA = calloc((size_t)P->nnz, sizeof *P->gA);
    if (!P->rowptr || !P->colind || !P->vals || !P->gA) {
        sla_matrix_destroy(&A0);
        goto nomem;
    }
    memcpy(P->rowptr, sla_matrix_rowptr(A0), ((size_t)P->n + 1) * sizeof *P->rowptr);
    sla_matrix_get_colind(A0, P->colind);
    memcpy(P->vals, sla_matrix_values(A0, 0), (size_t)P->nnz * sizeof *P->vals);
    sla_matrix_destroy(&A0);
    st = sla_matrix_from_csr(ctx, P->n, P->n, P->rowptr, P->colind, SLA_F64, 1, P->vals,
                             SLA_BORROW, &P->A);
    if (st < 0) return lib_fail(ctx, st, "matrix");
    st = sla_solver_create(ctx, P->A, opts, &P->S);
    if (st < 0) return lib_fail(ctx, st, "solver set-up");

    /* The observations: u* with kappa*. */
    st = sla_solver_solve(ctx, P->S, 0, 1, P->b, P->n, P->ut, P->n, &P->fi);
    if (st < 0) return lib_fail(ctx, st, "solve for u*");
    if (!P->fi.converged) {
        err("demo inverse: the solve for u* did not converge (residual %.2e)", P->fi.residual);
        return EXIT_INTERNAL;
    }
    P->ut2 = 0.0;
    for (sla_int i = 0; i < P->n; i++) P->ut2 += P->ut[i] * P->ut[i];
    return 0;
nomem:
    err("demo inverse: out of memory");
    return EXIT_INTERNAL;
}

/* The regulariser 0.5 sum (kappa_c - kappa_c')^2 over horizontally and
 * vertically neighbouring cells; adds alpha * its gradient to g (if not
 * NULL). */
static double reg_term(const inv_problem *P, const double *k, double alpha, double *g)
{
    const sla_int M = P->M;
    double r = 0.0;
    for (sla_int bb = 0; bb < M; bb++)
        for (sla_int a = 0; a < M; a++) {
            sla_int c = bb * M + a;
            if (a + 1 < M) {
                double d = k[c] - k[c + 1];
                r += d * d;
                if (g) {
                    g[c] += alpha * d;
                    g[c + 1] -= alpha * d;
                }
            }
            if (bb + 1 < M) {
                double d = k[c] - k[c + M];
                r += d * d;
                if (g) {
                    g[c] += alpha * d;
                    g[c + M] -= alpha * d;
                }
            }
        }
    return 0.5 * r;
}

/* Misfit 0.5 ||u - u*||^2 / ||u*||^2 and regulariser 0.5 sum d^2 at
 * kappa; with gk != NULL also dL/dkappa of misfit + alpha * regulariser.
 * Returns an sla status (< 0 error; the context has the message) or
 * SLA_NOT_CONVERGED from a Krylov solve. */
static sla_status inv_eval(inv_problem *P, const double *kappa, double alpha, double *misfit,
                           double *reg, double *gk)
{
    sla_ctx *ctx = P->ctx;
    sla_status st = sla_gen_diffusion2d_values(ctx, P->N, kappa, P->vals);
    if (st < 0) return st;
    if ((st = sla_solver_refresh(ctx, P->S)) < 0) return st;
    sla_status sf = sla_solver_solve(ctx, P->S, 0, 1, P->b, P->n, P->u, P->n, &P->fi);
    if (sf < 0) return sf;
    double m = 0.0;
    for (sla_int i = 0; i < P->n; i++) {
        double r = P->u[i] - P->ut[i];
        m += r * r;
        P->gx[i] = r / P->ut2;
    }
    *misfit = 0.5 * m / P->ut2;
    if (gk) {
        /* dL/du = (u - u*) / ||u*||^2 -> dL/dA on the pattern -> dL/dkappa. */
        sla_status sa = sla_solver_solve_vjp(ctx, P->S, 0, 1, P->u, P->n, P->gx, P->n, NULL,
                                             P->n, P->gA, &P->ai);
        if (sa < 0) return sa;
        if ((st = sla_gen_diffusion2d_vjp(ctx, P->N, P->gA, gk)) < 0) return st;
        if (sa == SLA_NOT_CONVERGED) sf = sa;
    }
    *reg = reg_term(P, kappa, alpha, gk);
    return sf;
}

static double rel_error(const inv_problem *P, const double *kappa, int interior_only)
{
    double e = 0.0, t = 0.0;
    const sla_int M = P->M;
    for (sla_int bb = 0; bb < M; bb++)
        for (sla_int a = 0; a < M; a++) {
            if (interior_only && (a == 0 || bb == 0 || a == M - 1 || bb == M - 1)) continue;
            sla_int c = bb * M + a;
            double d = kappa[c] - P->kt[c];
            e += d * d;
            t += P->kt[c] * P->kt[c];
        }
    return sqrt(e / t);
}

/* Observation noise: u* += sigma * rms(u*) * N(0, 1), seeded (Box-Muller). */
static void add_noise(inv_problem *P, double sigma, uint64_t seed)
{
    uint64_t s = seed * 0xD1B54A32D192ED03ULL + 0x9E3779B97F4A7C15ULL;
    if (!s) s = 1;
    const double rms = sqrt(P->ut2 / (double)P->n);
    for (sla_int i = 0; i < P->n; i++) {
        double u1 = 0.5 * (rng_unit(&s) + 1.0), u2 = 0.5 * (rng_unit(&s) + 1.0);
        if (u1 < 1e-300) u1 = 1e-300;
        P->ut[i] += sigma * rms * sqrt(-2.0 * log(u1)) * cos(2 * PI * u2);
    }
    P->ut2 = 0.0;
    for (sla_int i = 0; i < P->n; i++) P->ut2 += P->ut[i] * P->ut[i];
}

/* ---- gradient check --------------------------------------------------- */

/* dL/dkappa from the adjoint against 4th-order central differences
 * (steps +-d, +-2d: truncation O(d^4)) at a seeded perturbation of
 * kappa = 1: three cells (near the centre, on the boundary row, random) and
 * one random direction. */
static int check_grad(inv_problem *P, double alpha, uint64_t seed, int json)
{
    sla_ctx *ctx = P->ctx;
    const sla_int nc = P->ncell;
    double *k = calloc((size_t)nc, sizeof *k), *kp = calloc((size_t)nc, sizeof *kp),
           *g = calloc((size_t)nc, sizeof *g), *dir = calloc((size_t)nc, sizeof *dir);
    int rc = EXIT_OK;
    if (!k || !kp || !g || !dir) {
        err("demo inverse: out of memory");
        rc = EXIT_INTERNAL;
        goto done;
    }
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
    if (!s) s = 1;
    for (sla_int c = 0; c < nc; c++) k[c] = 1.0 + 0.2 * rng_unit(&s);
    for (sla_int c = 0; c < nc; c++) dir[c] = rng_unit(&s);
    double mis, reg;
    sla_status st = inv_eval(P, k, alpha, &mis, &reg, g);
    if (st != SLA_OK) {
        rc = st < 0 ? lib_fail(ctx, st, "gradient") : EXIT_INTERNAL;
        goto done;
    }
    const double L0 = mis + alpha * reg;
    const sla_int M = P->M;
    sla_int cells[3];
    cells[0] = (M / 2) * M + M / 3;
    cells[1] = M / 2;
    cells[2] = (sla_int)((0.5 + 0.5 * rng_unit(&s)) * (double)(nc - 1));
    if (!json)
        printf("gradient check: dL/dkappa (adjoint solve + VJP of kappa -> A + regulariser)\n"
               "  vs 4th-order central differences, alpha = %.1e, L = %.6e\n",
               alpha, L0);
    double worst = 0.0;
    for (int t = 0; t < 4; t++) {
        /* t < 3: unit vector at cells[t]; t == 3: the random direction. */
        const double d = 1e-3;
        double Lv[4];
        const double sc[4] = {1, -1, 2, -2};
        for (int q = 0; q < 4; q++) {
            memcpy(kp, k, (size_t)nc * sizeof *kp);
            if (t < 3)
                kp[cells[t]] += sc[q] * d;
            else
                for (sla_int c = 0; c < nc; c++) kp[c] += sc[q] * d * dir[c];
            st = inv_eval(P, kp, alpha, &mis, &reg, NULL);
            if (st != SLA_OK) {
                rc = st < 0 ? lib_fail(ctx, st, "gradient check") : EXIT_INTERNAL;
                goto done;
            }
            Lv[q] = mis + alpha * reg;
        }
        double fd = (8.0 * (Lv[0] - Lv[1]) - (Lv[2] - Lv[3])) / (12.0 * d);
        double ad = 0.0;
        if (t < 3) {
            ad = g[cells[t]];
        } else {
            for (sla_int c = 0; c < nc; c++) ad += g[c] * dir[c];
        }
        double rel = fabs(fd - ad) / fmax(fabs(ad), 1e-300);
        if (!(rel <= worst)) worst = rel;
        if (!json) {
            char what[64];
            if (t < 3)
                snprintf(what, sizeof what, "cell (%lld, %lld)", (long long)(cells[t] % M),
                         (long long)(cells[t] / M));
            else
                snprintf(what, sizeof what, "random direction");
            printf("  %-18s adjoint %+.12e  fd %+.12e  rel. diff %.2e\n", what, ad, fd, rel);
        }
    }
    const int pass = worst < 1e-6;
    if (json)
        printf("{\"check_grad\":%s,\"max_rel_diff\":%.3e}\n", pass ? "true" : "false", worst);
    else
        printf("gradient check: %s (max rel. diff %.2e, tolerance 1e-6)\n",
               pass ? "OK" : "FAILED", worst);
    if (!pass) rc = EXIT_INTERNAL;
done:
    free(k);
    free(kp);
    free(g);
    free(dir);
    return rc;
}

/* ---- the picture ---------------------------------------------------- */

static int have_gnuplot(void)
{
    return system("command -v gnuplot >/dev/null 2>&1") == 0;
}

static void write_field(FILE *f, const inv_problem *P, const double *a, const double *b)
{
    for (sla_int bb = 0; bb < P->M; bb++) {
        for (sla_int x = 0; x < P->M; x++) {
            sla_int c = bb * P->M + x;
            fprintf(f, "%s%.9g", x ? " " : "", b ? a[c] - b[c] : a[c]);
        }
        fputc('\n', f);
    }
    fputs("\n\n", f);
}

/* Write kappa*, kappa and kappa - kappa* as a PNG through gnuplot. The
 * data file, the script and the image are made in a fresh temporary
 * directory (removed afterwards) whose name alone appears in the script: the
 * user's file name never reaches gnuplot (it could carry commands). The
 * finished image is then copied next to the target and renamed over it.
 * Returns 0 on success, 1 when skipped or failed (a note is printed). */
static int write_png(const inv_problem *P, const double *kappa, cli_output *po, double relerr,
                     FILE *out)
{
    const char *png = po->path;
    if (!have_gnuplot()) {
        fprintf(out, "  png: skipped (gnuplot not found on PATH; 'make run' installs "
                     "gnuplot-nox)\n");
        return 1;
    }
    char dir[] = "/tmp/sla-demo-XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(out, "  png: skipped (cannot create a temporary directory: %s)\n",
                strerror(errno));
        return 1;
    }
    char dat[64], gp[64], img[64], cmd[128];
    snprintf(dat, sizeof dat, "%s/kappa.dat", dir);
    snprintf(gp, sizeof gp, "%s/plot.gp", dir);
    snprintf(img, sizeof img, "%s/kappa.png", dir);
    int rc = 1;
    FILE *f = fopen(dat, "w");
    if (f) {
        write_field(f, P, P->kt, NULL);
        write_field(f, P, kappa, NULL);
        write_field(f, P, kappa, P->kt);
        if (fclose(f) != 0) f = NULL;
    }
    FILE *g = f ? fopen(gp, "w") : NULL;
    if (g) {
        double emax = 0.0;
        for (sla_int c = 0; c < P->ncell; c++) emax = fmax(emax, fabs(kappa[c] - P->kt[c]));
        if (!(emax > 0)) emax = 1e-12;
        fprintf(g,
                "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
                "  set terminal pngcairo size 1650,500 font 'sans,10'\n"
                "} else {\n"
                "  set terminal png size 1650,500\n"
                "}\n"
                "set output '%s'\n", img); /* mkdtemp's name: no quote, no newline */
        fprintf(g,
                "set multiplot layout 1,3 title 'sla demo inverse: N = %lld, relative L2 "
                "error of kappa %.3f %%'\n"
                "set size ratio -1\nset xrange [0:1]\nset yrange [0:1]\n"
                "set xlabel 'x'\nset ylabel 'y'\nset tics out\nset rmargin 9\n"
                "h = %.17g\n"
                "set palette rgbformulae 33,13,10\n"
                "set cbrange [0.5:1.5]\n"
                "set title 'true kappa*'\n"
                "plot '%s' index 0 matrix using (($1+0.5)*h):(($2+0.5)*h):3 with image "
                "notitle\n"
                "set title 'recovered kappa'\n"
                "plot '%s' index 1 matrix using (($1+0.5)*h):(($2+0.5)*h):3 with image "
                "notitle\n"
                "set palette defined (-1 'blue', 0 'white', 1 'red')\n"
                "set cbrange [%.6g:%.6g]\nset format cb '%%.1e'\n"
                "set title 'error kappa - kappa*'\n"
                "plot '%s' index 2 matrix using (($1+0.5)*h):(($2+0.5)*h):3 with image "
                "notitle\n"
                "unset multiplot\n",
                (long long)P->N, 100.0 * relerr, P->h, dat, dat, -emax, emax, dat);
        if (fclose(g) == 0) {
            snprintf(cmd, sizeof cmd, "gnuplot %s >/dev/null 2>&1", gp);
            fflush(NULL);
            int s = system(cmd);
            if (s == 0 && access(img, R_OK) == 0) {
                if (cli_output_install_copy(po, img) != 0) {
                    fprintf(out, "  png: not written (see the message above)\n");
                    goto cleanup;
                }
                char *abs = realpath(png, NULL);
                fprintf(out, "  png: %s (true kappa, recovered kappa, error)\n", abs ? abs : png);
                free(abs);
                rc = 0;
            } else {
                fprintf(out, "  png: gnuplot failed (status %d); no image written\n", s);
            }
        }
    }
    if (rc && !g) fprintf(out, "  png: skipped (cannot write temporary files in %s)\n", dir);
cleanup:
    remove(img);
    remove(dat);
    remove(gp);
    rmdir(dir);
    return rc;
}

/* ---- the command ---------------------------------------------------- */

typedef struct inv_opts {
    long long steps, N, every, threads, seed;
    double lr, lr_end_ratio, alpha, alpha_end, noise;
    const char *method;
    const char *png;
    int json, check;
} inv_opts;

static int parse_opts(int argc, char **argv, int start, inv_opts *o, int *help)
{
    static const char *const with_arg[] = {"--steps", "--lr",      "--alpha",  "--alpha-end",
                                           "--n",     "--method",  "--every",  "--png",
                                           "--seed",  "--threads", "--lr-end", "--noise"};
    const int nwa = (int)(sizeof with_arg / sizeof with_arg[0]);
    *help = 0;
    for (int i = start; i < argc; i++) {
        const char *a = argv[i];
        char name[32];
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        if (nl >= sizeof name) nl = sizeof name - 1;
        memcpy(name, a, nl);
        name[nl] = '\0';
        if (!strcmp(name, "-N")) strcpy(name, "--n");
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = 1;
            continue;
        }
        if (!strcmp(a, "--json")) {
            o->json = 1;
            continue;
        }
        if (!strcmp(a, "--check-grad")) {
            o->check = 1;
            continue;
        }
        int k = -1;
        for (int j = 0; j < nwa; j++)
            if (!strcmp(name, with_arg[j])) k = j;
        if (k < 0) {
            err("demo inverse: unknown %s '%s' (see 'sla demo inverse --help')",
                a[0] == '-' ? "option" : "argument", a);
            return EXIT_BAD;
        }
        const char *v;
        if (eq) {
            v = eq + 1;
        } else {
            if (i + 1 >= argc) {
                err("demo inverse: option %s needs a value", name);
                return EXIT_BAD;
            }
            v = argv[++i];
        }
        int r = 0;
        switch (k) {
        case 0: r = parse_int("--steps", v, 1, 10000000, &o->steps); break;
        case 1: r = parse_double_in("--lr", v, 1e-12, 10.0, &o->lr); break;
        case 2: r = parse_double_in("--alpha", v, 0.0, 1e6, &o->alpha); break;
        case 3: r = parse_double_in("--alpha-end", v, 0.0, 1e6, &o->alpha_end); break;
        case 4: r = parse_int("--n", v, 2, 2000, &o->N); break;
        case 5: o->method = v; break;
        case 6: r = parse_int("--every", v, 1, 10000000, &o->every); break;
        case 7: o->png = v; break;
        case 8: r = parse_int("--seed", v, 0, INT64_MAX, &o->seed); break;
        case 9: r = parse_int("--threads", v, 0, 4096, &o->threads); break;
        case 10: r = parse_double_in("--lr-end", v, 0.0, 1.0, &o->lr_end_ratio); break;
        default: r = parse_double_in("--noise", v, 0.0, 1.0, &o->noise); break;
        }
        if (r) return r;
    }
    return 0;
}

static int has_png_option(int argc, char **argv, int start)
{
    for (int i = start; i < argc; i++)
        if (!strcmp(argv[i], "--png") || !strncmp(argv[i], "--png=", 6)) return 1;
    return 0;
}

int sla_demo_inverse(int argc, char **argv, int start)
{
    inv_opts o = {.steps = 2000,
                  .N = 64,
                  .every = 0,
                  .threads = 0,
                  .seed = 1,
                  .lr = 0.1,
                  .lr_end_ratio = 1e-3,
                  .alpha = 1e-6,
                  .alpha_end = 1e-9,
                  .noise = 0.0,
                  .method = sla_method_available(SLA_METHOD_CHOLESKY) ? "cholesky" : "auto",
                  .png = "sla_demo_inverse.png",
                  .json = 0,
                  .check = 0};
    int help = 0, alpha_given = 0;
    for (int i = start; i < argc; i++)
        if (!strncmp(argv[i], "--alpha", 7) && (argv[i][7] == '\0' || argv[i][7] == '='))
            alpha_given = 1;
    int rc = parse_opts(argc, argv, start, &o, &help);
    if (rc) return rc;
    if (help) {
        fputs(sla_demo_inverse_help, stdout);
        return EXIT_OK;
    }
    if (o.alpha_end > o.alpha) o.alpha_end = o.alpha;
    /* The image's name is checked before any work: no control characters
     * (refused), an existing folder we may write, not a directory. An
     * explicit --png that fails the checks is an error; the default name
     * is skipped with a note. */
    const int png_given = has_png_option(argc, argv, start);
    cli_output po = {.opt = "--png", .path = o.png && o.png[0] ? o.png : NULL, .what = "image"};
    if (po.path && cli_outputs_check(&po, 1, NULL, 0)) {
        cli_outputs_free(&po, 1);
        if (png_given) return EXIT_BAD;
        printf("  png: skipped (%s cannot be written here)\n", o.png);
        po.path = NULL;
    }

    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) {
        err("out of memory");
        cli_outputs_free(&po, 1);
        return EXIT_INTERNAL;
    }
    sla_ctx_set_threads(ctx, (int)o.threads);
    if (strpbrk(o.method, ",=")) {
        err("demo inverse: --method: expected one method name, got '%s'", o.method);
        sla_ctx_destroy(&ctx);
        cli_outputs_free(&po, 1);
        return EXIT_BAD;
    }
    sla_solver_options sopts;
    sla_solver_options_default(&sopts);
    char mbuf[64];
    snprintf(mbuf, sizeof mbuf, "method=%s", o.method);
    sla_status st = sla_solver_options_parse(ctx, mbuf, &sopts);
    if (st < 0) {
        rc = lib_fail(ctx, st, "--method");
        sla_ctx_destroy(&ctx);
        cli_outputs_free(&po, 1);
        return EXIT_BAD;
    }
    sopts.precond = SLA_PRECOND_NONE;
    sopts.rtol = 1e-12;

    const int blas_old = blas_threads_one();
    inv_problem P;
    double *theta = NULL, *kappa = NULL, *g = NULL, *m1 = NULL, *m2 = NULL;
    const double t0 = now_seconds();
    rc = inv_setup(&P, ctx, (sla_int)o.N, &sopts);
    if (rc) goto done;
    if (o.noise > 0) add_noise(&P, o.noise, (uint64_t)o.seed);
    const double t_setup = now_seconds() - t0;

    if (o.check) {
        rc = check_grad(&P, alpha_given ? o.alpha : 1e-4, (uint64_t)o.seed, o.json);
        goto done;
    }

    const sla_int nc = P.ncell;
    theta = calloc((size_t)nc, sizeof *theta);
    kappa = calloc((size_t)nc, sizeof *kappa);
    g = calloc((size_t)nc, sizeof *g);
    m1 = calloc((size_t)nc, sizeof *m1);
    m2 = calloc((size_t)nc, sizeof *m2);
    if (!theta || !kappa || !g || !m1 || !m2) {
        err("demo inverse: out of memory");
        rc = EXIT_INTERNAL;
        goto done;
    }
    const double theta0 = softplus_inv(1.0 - KAPPA_FLOOR);
    for (sla_int c = 0; c < nc; c++) theta[c] = theta0;

    const long long K = o.steps;
    const long long every = o.every > 0 ? o.every : (K >= 15 ? K / 15 : 1);
    const int direct = P.fi.backend[0] && strcmp(P.fi.backend, "krylov") != 0;
    {
        printf("sla %s demo inverse: recover kappa in -div(kappa grad u) = 1, u = 0 on the "
               "boundary of the unit square\n",
               sla_version());
        printf("  grid %lld x %lld interior nodes (n = %lld, nnz = %lld), kappa on %lld x %lld "
               "= %lld cells, h = 1/%lld\n",
               o.N, o.N, (long long)P.n, (long long)P.nnz, (long long)P.M, (long long)P.M,
               (long long)nc, (long long)P.M);
        char noise[64] = "noise-free";
        if (o.noise > 0)
            snprintf(noise, sizeof noise, "noise %.2g x rms(u*) (seed %lld)", o.noise, o.seed);
        printf("  kappa* = 1 + 0.5 sin(2 pi x) sin(2 pi y) at cell centres; u* observed at "
               "all %lld nodes, %s\n",
               (long long)P.n, noise);
        printf("  kappa = softplus(theta) + %.2g, start kappa = 1; Adam (0.9, 0.999, 1e-8), "
               "lr %.3g cosine-decayed to %.3g\n",
               KAPPA_FLOOR, o.lr, o.lr * o.lr_end_ratio);
        printf("  loss = 0.5 ||u - u*||^2/||u*||^2 + alpha/2 sum_edges (dkappa)^2, alpha "
               "%.1e -> %.1e (geometric), %lld steps\n",
               o.alpha, o.alpha_end, K);
        printf("  solver: %s (%s)%s%s; set-up and u* in %.3f s\n", P.fi.method, P.fi.backend,
               P.fi.note[0] ? ", " : "", P.fi.note, t_setup);
        if (direct)
            printf("  each step: numeric refactorization (same symbolic analysis), forward "
                   "solve, adjoint solve with the same factor\n");
        printf("  %7s  %12s  %12s  %11s  %9s  %s\n", "step", "loss", "misfit", "rel.err(k)",
               "lr", direct ? "solver" : "iterations fwd/adj");
    }

    double loss_first = NAN, loss = NAN, mis = NAN, reg = NAN;
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    double b1t = 1.0, b2t = 1.0;
    const double t_opt = now_seconds();
    for (long long step = 0; step <= K; step++) {
        const double frac = K > 0 ? (double)step / (double)K : 1.0;
        const double alpha =
            o.alpha_end > 0 ? o.alpha * pow(o.alpha_end / o.alpha, frac) : o.alpha * (1 - frac);
        const double lr = o.lr * (o.lr_end_ratio + (1 - o.lr_end_ratio) * 0.5 *
                                                        (1 + cos(PI * fmin(frac, 1.0))));
        for (sla_int c = 0; c < nc; c++) kappa[c] = KAPPA_FLOOR + softplus(theta[c]);
        /* step == K: the final evaluation only. */
        st = inv_eval(&P, kappa, alpha, &mis, &reg, step < K ? g : NULL);
        if (st < 0) {
            rc = lib_fail(ctx, st, "step");
            goto done;
        }
        if (st == SLA_NOT_CONVERGED)
            fprintf(stderr, "sla: demo inverse: step %lld: a solve did not converge\n", step);
        loss = mis + alpha * reg;
        if (step == 0) loss_first = loss;
        if (step % every == 0 || step == K) {
            double e = rel_error(&P, kappa, 0);
            char sol[64];
            if (direct)
                snprintf(sol, sizeof sol, "%s: refactor %.2f ms, solves %.2f + %.2f ms",
                         P.fi.backend, 1e3 * sla_solver_setup_seconds(P.S),
                         1e3 * P.fi.solve_seconds, 1e3 * P.ai.solve_seconds);
            else
                snprintf(sol, sizeof sol, "%lld/%lld", (long long)P.fi.iterations,
                         (long long)P.ai.iterations);
            printf("  %7lld  %12.5e  %12.5e  %10.4f%%  %9.2e  %s\n", step, loss, mis, 100 * e,
                   lr, sol);
            fflush(stdout);
        }
        if (step == K) break;
        /* Chain rule through softplus, then Adam. */
        b1t *= b1;
        b2t *= b2;
        for (sla_int c = 0; c < nc; c++) {
            double gt = g[c] * sigmoid(theta[c]);
            m1[c] = b1 * m1[c] + (1 - b1) * gt;
            m2[c] = b2 * m2[c] + (1 - b2) * gt * gt;
            double mh = m1[c] / (1 - b1t), vh = m2[c] / (1 - b2t);
            theta[c] -= lr * mh / (sqrt(vh) + eps);
        }
    }
    const double t_end = now_seconds();
    const double seconds = t_end - t0;
    const double e_all = rel_error(&P, kappa, 0), e_in = rel_error(&P, kappa, 1);
    printf("result: %lld steps in %.2f s (%.2f ms per step), loss %.4e -> %.4e, misfit %.3e\n",
           K, seconds, 1e3 * (t_end - t_opt) / (double)(K > 0 ? K : 1), loss_first, loss, mis);
    printf("  relative L2 error of kappa: %.4f %% over all %lld cells (%.4f %% without the "
           "boundary ring of cells)\n",
           100 * e_all, (long long)nc, 100 * e_in);
    if (po.path) write_png(&P, kappa, &po, e_all, stdout);
    if (o.json) {
        printf("{\"steps\":%lld,\"loss\":%.6e,\"loss_first\":%.6e,\"misfit\":%.6e,"
               "\"rel_l2_error\":%.6e,\"seconds\":%.3f}\n",
               K, loss, loss_first, mis, e_all, seconds);
    }
    rc = EXIT_OK;
done:
    fflush(stdout);
    free(theta);
    free(kappa);
    free(g);
    free(m1);
    free(m2);
    inv_free(&P);
    sla_ctx_destroy(&ctx);
    blas_threads_restore(blas_old);
    cli_outputs_free(&po, 1);
    return rc;
}
