/* bench_saamg_reuse — a training step with CG + saamg: new values on the
 * same pattern (sla_solver_refresh), a solve and its VJP (the adjoint
 * solve and dL/dA), for each saamg_reuse mode (interpolation, full, none,
 * hierarchy).
 *
 *   sla_bench_saamg_reuse [--n N] [--steps K] [--change C] [--threads T] [--theta T]
 *
 * diffusion2d N x N (default N = 1000: 1e6 unknowns) with a random kappa
 * (log-uniform in [0.1, 10]); each step multiplies every kappa by
 * 1 + C u, u uniform in [-1, 1) (default C = 0.01), so the drift from the
 * set-up's values grows over the steps. b and the cotangent fixed, x0 = 0,
 * rtol 1e-8. Every mode sees the same kappa sequence. Reported: the
 * set-up, then per step the medians of refresh, solve and VJP seconds,
 * their sum, iterations, the hierarchy's operator complexity after the
 * steps (sla_solver_hierarchy), and the share of the machine other
 * processes used during the mode's steps (/proc/stat). --theta:
 * saamg_theta, the fine level's strength threshold (0: the default). */
#include <sla.h>

#include "bench_util.h"

static double rnd(unsigned long long *s) /* uniform in [-1, 1) */
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ULL) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

#define TRY(call)                                                                          \
    do {                                                                                   \
        sla_status st_ = (call);                                                           \
        if (st_ != SLA_OK) {                                                               \
            fprintf(stderr, "%s: %s\n", #call, sla_ctx_message(ctx));                      \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

int main(int argc, char **argv)
{
    sla_int N = 1000;
    int steps = 5, threads = 2;
    double change = 0.01, theta = 0.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n")) N = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--change")) change = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--theta")) theta = atof(argv[i + 1]);
        else {
            fprintf(stderr, "unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (steps < 1 || steps > 100) steps = 5;
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    sla_ctx_set_threads(ctx, threads);
    sla_int nc = (N + 1) * (N + 1);
    double *k0 = malloc((size_t)nc * sizeof *k0), *k = malloc((size_t)nc * sizeof *k);
    unsigned long long seed = 12345;
    for (sla_int c = 0; c < nc; c++) k0[c] = pow(10.0, rnd(&seed));
    sla_matrix *A = NULL;
    TRY(sla_gen_diffusion2d(ctx, N, k0, &A));
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *vals = malloc((size_t)nnz * sizeof *vals), *gA = malloc((size_t)nnz * sizeof *gA);
    sla_int *colind = malloc((size_t)nnz * sizeof *colind);
    sla_matrix_get_colind(A, colind);
    sla_matrix *B = NULL;
    TRY(sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(A), colind, SLA_F64, 1, vals, SLA_BORROW,
                            &B));
    double *b = malloc((size_t)n * sizeof *b), *g = malloc((size_t)n * sizeof *g);
    double *x = malloc((size_t)n * sizeof *x), *gb = malloc((size_t)n * sizeof *gb);
    for (sla_int i = 0; i < n; i++) b[i] = 1.0, g[i] = sin(0.001 * (double)i);
    printf("diffusion2d %lld^2 (n %lld), random kappa 0.1..10, per step kappa *= 1 + %.3g u, "
           "CG + saamg rtol 1e-8, saamg_theta %g, %d threads, %d steps\n",
           (long long)N, (long long)n, change, theta, threads, steps);
    printf("%-14s %8s %9s %9s %9s %9s %6s %6s %6s %7s\n", "saamg_reuse", "setup_s", "refresh_s",
           "solve_s", "vjp_s", "step_s", "its", "adj", "opcx", "load%");
    const char *names[] = {"interpolation", "full", "none", "hierarchy"};
    for (int mode = 0; mode < 4; mode++) {
        memcpy(k, k0, (size_t)nc * sizeof *k);
        TRY(sla_gen_diffusion2d_values(ctx, N, k, vals));
        sla_solver_options o;
        sla_solver_options_default(&o);
        o.method = SLA_METHOD_CG;
        o.precond = SLA_PRECOND_SAAMG;
        o.saamg_reuse = mode;
        o.saamg_theta = theta;
        sla_solver *S = NULL;
        double t0 = now();
        TRY(sla_solver_create(ctx, B, &o, &S));
        double tsetup = now() - t0;
        sla_solve_info info, ainfo;
        TRY(sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info)); /* step 0 */
        double tr[100], ts[100], tv[100], tt[100], its[100], adj[100];
        unsigned long long s2 = 777;
        load_mark l0 = load_now();
        for (int st = 0; st < steps; st++) {
            for (sla_int c = 0; c < nc; c++) k[c] *= 1.0 + change * rnd(&s2);
            TRY(sla_gen_diffusion2d_values(ctx, N, k, vals));
            double a0 = now();
            TRY(sla_solver_refresh(ctx, S));
            double a1 = now();
            TRY(sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
            double a2 = now();
            TRY(sla_solver_solve_vjp(ctx, S, 0, 1, x, n, g, n, gb, n, gA, &ainfo));
            double a3 = now();
            tr[st] = a1 - a0, ts[st] = a2 - a1, tv[st] = a3 - a2, tt[st] = a3 - a0;
            its[st] = (double)info.iterations, adj[st] = (double)ainfo.iterations;
        }
        load_mark l1 = load_now();
        sla_hierarchy_info h;
        TRY(sla_solver_hierarchy(ctx, S, 0, &h));
        printf("%-14s %8.3f %9.3f %9.3f %9.3f %9.3f %6.0f %6.0f %6.3f %7.0f\n", names[mode], tsetup,
               median(tr, steps), median(ts, steps), median(tv, steps), median(tt, steps),
               median(its, steps), median(adj, steps), h.operator_complexity, other_load_pct(l0, l1));
        fflush(stdout);
        sla_solver_destroy(&S);
    }
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&A);
    free(k0), free(k), free(vals), free(gA), free(colind), free(b), free(g), free(x), free(gb);
    sla_ctx_destroy(&ctx);
    return 0;
}
