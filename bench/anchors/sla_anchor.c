/* sla_anchor — the anchor comparison's sla side: the runs petsc_poisson
 * makes, with sla's generators and solvers, one JSON line per run in the
 * same format (run_all.sh part anchors runs the two in turn).
 *
 *   sla_anchor --problem p2d|p3d|diff --N N [--precond saamg|amg] [--threads T]
 *              [--rtol 1e-8] [--steps K] [--change 0.01] [--start cold|warm]
 *              [--adjoint 0|1] [--saamg-theta T] [--saamg-smoother gs|cheby|spai0]
 *              [--reuse interpolation|full|none|hierarchy] [--json FILE]
 *   mpiexec -n P sla_anchor ... --precond amg      (P > 1: sla_dist_solver)
 *
 * The matrix is sla_gen_poisson(2 or 3, N) or sla_gen_diffusion2d(N, kappa)
 * with bench_saamg_reuse's kappa (anchor_gen.h), not timed; the driver
 * prints its nnz and anchor_gen.h's position-weighted checksum, which
 * petsc_poisson computes from its own copy of the stencils. b = A 1, x0 =
 * 0, CG to rtol (||r|| / ||b||). First solve: sla_solver_create (the
 * set-up) + sla_solver_solve; the residual is sla's true one. With
 * --steps K (diff, one process): K times kappa *= 1 + change u
 * (bench_saamg_reuse's sequence), the new values into the matrix (not
 * timed), then sla_solver_refresh (saamg_reuse = interpolation: aggregates
 * and prolongators kept; --reuse full|none|hierarchy: the option's other
 * values) + solve, medians over the K steps. --start warm:
 * each step's solve starts from the previous step's x (use_x0; what a
 * training loop re-solving after a small change would do; cold, the
 * default: x0 = 0). --adjoint 1: each step then also runs the adjoint
 * solve with the refreshed hierarchy, sla_solver_solve_vjp with gx = 1
 * (gb only: the solve PETSc's KSPSolveTranspose does; the O(nnz) pass for
 * gA is left out on both sides), from x0 = 0 (--start warm: from the
 * previous step's adjoint solution, sla_solver_solve_transpose with
 * use_x0, the same solve for symmetric A); "adjoint_s" its median,
 * "step_s" the median of refresh + solve + adjoint. The JSON also gives
 * the hierarchy of saamg (levels, operator and grid complexity) as it
 * stands at the end. --saamg-theta T: saamg's fine-level strength
 * threshold (sla_solver_options.saamg_theta; a tuned setting: the solver
 * is then labelled "cg+saamg(theta=T)", a row of its own);
 * --saamg-smoother cheby|spai0 likewise ("cg+saamg(cheby)"). With P > 1
 * ranks (a build with MPI): rank 0 generates, scatters contiguous row
 * blocks, and the distributed solver runs CG + BoomerAMG over all ranks
 * (times: the maximum over ranks). "other_load_pct": the share of the
 * machine's CPUs that processes other than this run's used meanwhile. */
#define _POSIX_C_SOURCE 200809L
#include <sla.h>
#ifdef SLA_ANCHOR_DIST
#include <sla/dist.h>
#endif

#include "../bench_util.h"
#include "anchor_gen.h"

static int rank_ = 0, size_ = 1;

#define TRY(call)                                                                                  \
    do {                                                                                           \
        sla_status st_ = (call);                                                                   \
        if (st_ != SLA_OK && st_ != SLA_NOT_CONVERGED) {                                           \
            fprintf(stderr, "sla_anchor: %s: %s\n", #call, sla_ctx_message(ctx));                  \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* nnz and the checksum of anchor_gen.h over A's CSR. */
static double checksum(const sla_matrix *A)
{
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    const sla_int *rp = sla_matrix_rowptr(A);
    const double *v = sla_matrix_values(A, 0);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    double s = 0.0;
    for (sla_int i = 0; i < n; i++)
        for (sla_int p = rp[i]; p < rp[i + 1]; p++) s += v[p] * anchor_weight(i, ci[p]);
    free(ci);
    return s;
}

typedef struct {
    double setup, solve, total, first_setup, first_total, residual, other, adjoint, step;
    long long iterations, adjoint_iterations;
    int converged;
    sla_hierarchy_info h; /* saamg: the hierarchy at the end (levels 0: none) */
} run;

#ifdef SLA_ANCHOR_DIST
static load_mark mark(void)
{
    load_mark m = load_now();
    m.self = all_sum(m.self);
    MPI_Bcast(&m.busy, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return m;
}

/* CG + BoomerAMG over all ranks on A (held by rank 0). */
static int dist_first(sla_ctx *ctx, const sla_matrix *A, const sla_solver_options *o, run *r)
{
    sla_dist_matrix *D = NULL;
    TRY(sla_dist_matrix_scatter(ctx, MPI_COMM_WORLD, 0, A, SLA_PART_BLOCK, &D));
    sla_int nl = sla_dist_matrix_nlocal(D);
    double *one = malloc((size_t)(nl + 1) * sizeof *one), *b = malloc((size_t)(nl + 1) * sizeof *b);
    double *x = malloc((size_t)(nl + 1) * sizeof *x);
    for (sla_int i = 0; i < nl; i++) one[i] = 1.0;
    TRY(sla_dist_matvec(ctx, D, one, b)); /* b = A 1 */
    load_mark l0 = mark();
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    sla_dist_solver *S = NULL;
    TRY(sla_dist_solver_create(ctx, D, o, &S));
    double t1 = MPI_Wtime();
    sla_solve_info inf;
    TRY(sla_dist_solver_solve(ctx, S, b, x, &inf));
    double t2 = MPI_Wtime();
    r->setup = all_max(t1 - t0), r->solve = all_max(t2 - t1), r->total = all_max(t2 - t0);
    r->other = other_load_pct(l0, mark());
    r->iterations = (long long)inf.iterations, r->residual = inf.residual, r->converged = inf.converged;
    sla_dist_solver_destroy(&S);
    sla_dist_matrix_destroy(&D);
    free(one), free(b), free(x);
    return 0;
}
#endif

/* One process: first solve, then --steps training steps (diff: vals is
 * the array A borrows, kappa the cells). */
static int serial_run(sla_ctx *ctx, sla_matrix *A, const sla_solver_options *o, long long N, int steps,
                      double change, int adjoint, double *kappa, double *vals, run *r)
{
    sla_int n = sla_matrix_nrows(A);
    double *one = malloc((size_t)n * sizeof *one), *b = malloc((size_t)n * sizeof *b);
    double *x = calloc((size_t)n, sizeof *x), *gb = calloc((size_t)n, sizeof *gb);
    for (sla_int i = 0; i < n; i++) one[i] = 1.0;
    TRY(sla_matvec(ctx, A, 0, 1, one, n, b, n)); /* b = A 1 */
    load_mark l0 = load_now();
    double t0 = now();
    sla_solver *S = NULL;
    TRY(sla_solver_create(ctx, A, o, &S));
    double t1 = now();
    sla_solve_info inf;
    TRY(sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &inf));
    double t2 = now();
    r->setup = r->first_setup = t1 - t0, r->solve = t2 - t1, r->total = r->first_total = t2 - t0;
    r->iterations = (long long)inf.iterations, r->residual = inf.residual, r->converged = inf.converged;
    if (steps) {
        double tr[64], ts[64], tt[64], it[64], ta[64], ia[64], tw[64];
        unsigned long long s2 = 777;
        l0 = load_now();
        for (int st = 0; st < steps; st++) {
            anchor_kappa_step(N, change, &s2, kappa);
            TRY(sla_gen_diffusion2d_values(ctx, (sla_int)N, kappa, vals)); /* not timed */
            double a0 = now();
            TRY(sla_solver_refresh(ctx, S));
            double a1 = now();
            TRY(sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &inf));
            double a2 = now();
            tr[st] = a1 - a0, ts[st] = a2 - a1, tt[st] = a2 - a0, it[st] = (double)inf.iterations;
            r->residual = st ? fmax(r->residual, inf.residual) : inf.residual;
            r->converged = st ? r->converged && inf.converged : inf.converged;
            ta[st] = ia[st] = 0.0;
            if (adjoint) { /* dL/db = A^-T gx with the refreshed hierarchy */
                sla_solve_info ai;
                if (o->use_x0) /* warm: from the last step's adjoint solution */
                    TRY(sla_solver_solve_transpose(ctx, S, 0, 1, one, n, gb, n, &ai));
                else
                    TRY(sla_solver_solve_vjp(ctx, S, 0, 1, x, n, one, n, gb, n, NULL, &ai));
                ta[st] = now() - a2, ia[st] = (double)ai.iterations;
                r->converged = r->converged && ai.converged;
            }
            tw[st] = tt[st] + ta[st];
        }
        r->setup = median(tr, steps), r->solve = median(ts, steps), r->total = median(tt, steps);
        r->iterations = (long long)median(it, steps);
        r->adjoint = median(ta, steps), r->adjoint_iterations = (long long)median(ia, steps);
        r->step = median(tw, steps);
    }
    if (sla_solver_hierarchy(ctx, S, 0, &r->h) != SLA_OK) r->h.levels = 0;
    r->other = other_load_pct(l0, load_now());
    sla_solver_destroy(&S);
    free(one), free(b), free(x), free(gb);
    return 0;
}

int main(int argc, char **argv)
{
#ifdef SLA_ANCHOR_DIST
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
#endif
    const char *problem = "p2d", *pre = "saamg", *json = NULL, *start = "cold", *smoother = "gs",
               *reuse = "interpolation";
    long long N = 100;
    double rtol = 1e-8, change = 0.01, theta = 0.0;
    int steps = 0, threads = 1, bad = 0, adjoint = 0;
    for (int a = 1; a < argc; a++) {
        if (a + 1 >= argc) bad = 1;
        else if (!strcmp(argv[a], "--problem")) problem = argv[++a];
        else if (!strcmp(argv[a], "--N")) N = atoll(argv[++a]);
        else if (!strcmp(argv[a], "--precond")) pre = argv[++a];
        else if (!strcmp(argv[a], "--threads")) threads = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--rtol")) rtol = atof(argv[++a]);
        else if (!strcmp(argv[a], "--steps")) steps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--change")) change = atof(argv[++a]);
        else if (!strcmp(argv[a], "--json")) json = argv[++a];
        else if (!strcmp(argv[a], "--start")) start = argv[++a];
        else if (!strcmp(argv[a], "--adjoint")) adjoint = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--saamg-theta")) theta = atof(argv[++a]);
        else if (!strcmp(argv[a], "--saamg-smoother")) smoother = argv[++a];
        else if (!strcmp(argv[a], "--reuse")) reuse = argv[++a];
        else bad = 1;
    }
    int dim = !strcmp(problem, "p3d") ? 3 : 2, diff = !strcmp(problem, "diff");
    if (bad || (strcmp(problem, "p2d") && dim == 2 && !diff) || N < 2 || (steps && !diff) || steps > 64 ||
        steps < 0 || (strcmp(pre, "saamg") && strcmp(pre, "amg")) || (size_ > 1 && (steps || strcmp(pre, "amg"))) ||
        (strcmp(start, "cold") && strcmp(start, "warm")) || adjoint < 0 || adjoint > 1 ||
        !(theta >= 0.0 && theta < 1.0) || (theta > 0.0 && strcmp(pre, "saamg")) ||
        (strcmp(smoother, "gs") && strcmp(smoother, "cheby") && strcmp(smoother, "spai0")) ||
        (strcmp(smoother, "gs") && strcmp(pre, "saamg")) ||
        ((adjoint || !strcmp(start, "warm")) && !steps) ||
        (strcmp(reuse, "interpolation") && strcmp(reuse, "full") && strcmp(reuse, "none") &&
         strcmp(reuse, "hierarchy"))) {
        if (!rank_)
            fprintf(stderr, "usage: sla_anchor --problem p2d|p3d|diff --N N [--precond saamg|amg] "
                            "[--threads T] [--rtol R] [--steps K (diff, one rank, <= 64)] [--change C] "
                            "[--start cold|warm] [--adjoint 0|1] (both with --steps) [--saamg-theta T "
                            "(saamg, [0, 1))] [--saamg-smoother gs|cheby|spai0] [--reuse interpolation|"
                            "full|none|hierarchy] [--json FILE]; over MPI "
                            "ranks: --precond amg, no --steps\n");
#ifdef SLA_ANCHOR_DIST
        MPI_Finalize();
#endif
        return 2;
    }
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    sla_ctx_set_threads(ctx, threads);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    o.precond = strcmp(pre, "amg") ? SLA_PRECOND_SAAMG : SLA_PRECOND_AMG;
    o.rtol = rtol;
    o.saamg_reuse = !strcmp(reuse, "full")        ? 1
                    : !strcmp(reuse, "none")      ? 2
                    : !strcmp(reuse, "hierarchy") ? 3
                                                  : 0;
    o.use_x0 = !strcmp(start, "warm"); /* x starts at 0 before the first solve */
    o.saamg_theta = theta;
    o.saamg_smoother = !strcmp(smoother, "cheby") ? 1 : !strcmp(smoother, "spai0") ? 2 : 0;
    char solver[96];
    if (theta > 0.0) snprintf(solver, sizeof solver, "cg+%s(theta=%g)", pre, theta);
    else snprintf(solver, sizeof solver, "cg+%s", pre);
    if (o.saamg_smoother) { /* the solver's name says which smoother */
        size_t used = strlen(solver);
        snprintf(solver + used, sizeof solver - used, "(%s)", smoother);
    }
    if (o.saamg_reuse) { /* and which reuse, when not the default */
        size_t used = strlen(solver);
        snprintf(solver + used, sizeof solver - used, "(reuse=%s)", reuse);
    }

    /* ---- the matrix (rank 0), not timed ---- */
    sla_matrix *A = NULL, *B = NULL;
    double *kappa = NULL, *vals = NULL, cks = 0.0;
    long long n = 0, nnz = 0;
    if (!rank_) {
        if (diff) {
            kappa = malloc((size_t)((N + 1) * (N + 1)) * sizeof *kappa);
            anchor_kappa0(N, kappa);
            TRY(sla_gen_diffusion2d(ctx, (sla_int)N, kappa, &A));
            /* the values in an array of our own that B borrows, so that
             * the training steps can write new ones */
            sla_int nr = sla_matrix_nrows(A), nz = sla_matrix_nnz(A);
            vals = malloc((size_t)nz * sizeof *vals);
            memcpy(vals, sla_matrix_values(A, 0), (size_t)nz * sizeof *vals);
            sla_int *ci = malloc((size_t)nz * sizeof *ci);
            sla_matrix_get_colind(A, ci);
            TRY(sla_matrix_from_csr(ctx, nr, nr, sla_matrix_rowptr(A), ci, SLA_F64, 1, vals, SLA_BORROW, &B));
            free(ci);
        } else {
            TRY(sla_gen_poisson(ctx, dim, (sla_int)N, &A));
        }
        n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A), cks = checksum(A);
    }
    run r = {0};
    int rc = 0;
#ifdef SLA_ANCHOR_DIST
    if (size_ > 1) {
        rc = dist_first(ctx, A, &o, &r);
        r.first_setup = r.setup, r.first_total = r.total;
    } else
#endif
        rc = serial_run(ctx, B ? B : A, &o, N, steps, change, adjoint, kappa, vals, &r);
    if (!rc && !rank_) {
        char line[1536];
        int len = snprintf(line, sizeof line,
                 "{\"system\":\"sla\",\"solver\":\"%s\",\"problem\":\"%s\",\"N\":%lld,\"n\":%lld,"
                 "\"nnz\":%lld,\"checksum\":%.17g,\"ranks\":%d,\"threads\":%d,\"step\":\"%s\",\"steps\":%d,"
                 "\"change\":%g,\"rtol\":%g,\"start\":\"%s\",\"setup_s\":%.5f,\"solve_s\":%.5f,\"total_s\":%.5f,"
                 "\"first_setup_s\":%.5f,\"first_total_s\":%.5f,\"iterations\":%lld,\"residual\":%.3e,"
                 "\"adjoint\":%s,\"adjoint_s\":%.5f,\"adjoint_iterations\":%lld,\"step_s\":%.5f,"
                 "\"converged\":%s,\"other_load_pct\":%.1f",
                 solver, problem, N, n, nnz, cks, size_, threads, steps ? "train" : "first", steps, change, rtol,
                 start, r.setup, r.solve, r.total, r.first_setup, r.first_total, r.iterations, r.residual,
                 adjoint ? "true" : "false", r.adjoint, r.adjoint_iterations, adjoint ? r.step : r.total,
                 r.converged ? "true" : "false", r.other);
        if (r.h.levels > 0 && len > 0 && (size_t)len < sizeof line)
            len += snprintf(line + len, sizeof line - (size_t)len,
                            ",\"levels\":%d,\"operator_complexity\":%.4f,\"grid_complexity\":%.4f",
                            r.h.levels, r.h.operator_complexity, r.h.grid_complexity);
        /* per level [rows, nnz, P entries]: where a cycle's time goes */
        char lv[1024];
        int ll = snprintf(lv, sizeof lv, ",\"level_rows_nnz_pnnz\":[");
        for (int l = 0; l < r.h.levels && ll > 0 && (size_t)ll + 80 < sizeof lv; l++)
            ll += snprintf(lv + ll, sizeof lv - (size_t)ll, "%s[%lld,%lld,%lld]", l ? "," : "",
                           (long long)r.h.rows[l], (long long)r.h.nnz[l], (long long)r.h.p_nnz[l]);
        if (r.h.levels > 0 && ll > 0 && (size_t)ll + 2 < sizeof lv && len > 0 &&
            (size_t)len + (size_t)ll + 4 < sizeof line) {
            memcpy(line + len, lv, (size_t)ll);
            len += ll;
            line[len++] = ']';
            line[len] = '\0';
        }
        if (len > 0 && (size_t)len + 2 < sizeof line) line[len] = '}', line[len + 1] = '\0';
        printf("%s\n", line);
        FILE *f = json ? fopen(json, "a") : NULL;
        if (f) fprintf(f, "%s\n", line), fclose(f);
    }
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&A);
    free(kappa), free(vals);
    sla_ctx_destroy(&ctx);
#ifdef SLA_ANCHOR_DIST
    MPI_Finalize();
#endif
    return rc;
}
