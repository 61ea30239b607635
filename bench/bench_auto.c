/* bench_auto — what method=auto picks, side by side with what each
 * alternative takes: plain CG, CG + saamg and (where it fits) Cholesky, on
 * the same matrix, thread count and number of solves.
 *
 *   sla_bench_auto [--problems p3d-64,p3d-80,p3d-100,p2d-1000,mm:PATH]
 *                  [--threads 1,2] [--solves 1,2] [--reps 3]
 *                  [--direct-max-n 300000] [--json FILE]
 *
 * Problems: pKd-N is K-dimensional Poisson (sla_gen_poisson) on N^K
 * unknowns, mm:PATH a Matrix Market file. b = ones, x0 = 0, rtol 1e-8.
 * A run is the solver's creation (set-up: analysis, preconditioner or
 * factorization) and E solves, E = 1 (one right-hand side) or 2 (forward
 * and transposed: the default auto_solves, a solve and its adjoint). The
 * alternatives run once per repetition and thread count and give both
 * totals (set-up + first solve, + second solve); auto runs once per E,
 * with auto_solves = E, since its choice depends on it. Methods are
 * interleaved within each repetition (ABAB), the table reports medians,
 * the load column the share of the machine's CPUs other processes used
 * during the problem (bench_util.h). "ratio" is auto's median over the
 * fastest alternative's: 1.0 means auto picked the best one.
 */
#include <sla.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

enum { ALT_CG, ALT_SAAMG, ALT_CHOL, NALT, MAXREP = 15 };
static const char *alt_opts[NALT] = {"method=cg", "method=cg,precond=saamg", "method=cholesky"};

typedef struct {
    double t[2][MAXREP];  /* total for E = 1, 2 */
    double setup[MAXREP];
    long its[2];
    int ok;
} alt_run;

typedef struct {
    double t[MAXREP], setup[MAXREP];
    long its;
    char choice[40], note[256];
} auto_run;

/* One run: create with opts, E solves (forward, then transposed); *t1 and
 * *t2 the totals after one and two solves. Returns 0 on success. */
static int run_once(sla_ctx *ctx, sla_matrix *A, const char *opts, int E, int auto_solves,
                    const double *b, double *x, double *setup, double *t1, double *t2, long *its,
                    char *choice, size_t clen, char *note, size_t nlen)
{
    sla_solver_options o;
    sla_solver_options_default(&o);
    if (sla_solver_options_parse(ctx, opts, &o) != SLA_OK) return 1;
    o.rtol = 1e-8;
    if (auto_solves > 0) o.auto_solves = auto_solves;
    sla_int n = sla_matrix_nrows(A);
    sla_solver *S = NULL;
    double t0 = now();
    if (sla_solver_create(ctx, A, &o, &S) != SLA_OK) return 1;
    *setup = now() - t0;
    sla_solve_info inf;
    memset(x, 0, (size_t)n * sizeof *x);
    sla_status st = sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &inf);
    *t1 = now() - t0;
    its[0] = (long)inf.iterations;
    if (choice) snprintf(choice, clen, "%s+%s", inf.method, inf.precond);
    if (note) snprintf(note, nlen, "%s", inf.note);
    if (st == SLA_OK && E > 1) {
        memset(x, 0, (size_t)n * sizeof *x);
        st = sla_solver_solve_transpose(ctx, S, 0, 1, b, n, x, n, &inf);
        its[1] = (long)inf.iterations;
    }
    *t2 = now() - t0;
    sla_solver_destroy(&S);
    return st == SLA_OK ? 0 : 1;
}

static int parse_list(const char *s, int *v, int maxv)
{
    int k = 0;
    while (*s && k < maxv) {
        v[k++] = atoi(s);
        const char *c = strchr(s, ',');
        if (!c) break;
        s = c + 1;
    }
    return k;
}

static sla_status make_problem(sla_ctx *ctx, const char *name, sla_matrix **A)
{
    int dim;
    long N;
    if (sscanf(name, "p%dd-%ld", &dim, &N) == 2) return sla_gen_poisson(ctx, dim, (sla_int)N, A);
    if (!strncmp(name, "mm:", 3)) return sla_mm_read(ctx, name + 3, SLA_F64, A);
    fprintf(stderr, "unknown problem %s\n", name);
    return SLA_ERR_ARGUMENT;
}

int main(int argc, char **argv)
{
    const char *problems = "p3d-64,p3d-80,p3d-100,p2d-1000,mm:../shared/matrices/494_bus.mtx";
    const char *json = NULL;
    int threads[4] = {1, 2}, nthr = 2, solves[2] = {1, 2}, nsol = 2, reps = 3;
    double direct_max_n = 3e5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--problems")) problems = argv[i + 1];
        else if (!strcmp(argv[i], "--threads")) nthr = parse_list(argv[i + 1], threads, 4);
        else if (!strcmp(argv[i], "--solves")) nsol = parse_list(argv[i + 1], solves, 2);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--direct-max-n")) direct_max_n = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--json")) json = argv[i + 1];
        else {
            fprintf(stderr, "unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (reps > MAXREP) reps = MAXREP;
    FILE *jf = json ? fopen(json, "w") : NULL;
    if (json && !jf) {
        fprintf(stderr, "cannot write %s\n", json);
        return 2;
    }
    if (jf) fprintf(jf, "[\n");
    int first_json = 1;
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    printf("%-12s %3s %2s | %-16s %8s %5s | %8s %5s | %8s %8s %5s %8s | %8s | %5s %5s\n", "problem",
           "thr", "E", "auto picks", "auto s", "its", "cg s", "its", "sa setup", "saamg s", "its",
           "s/iter", "chol s", "ratio", "load");
    size_t plen = strlen(problems) + 1;
    char *plist = malloc(plen);
    if (!plist) return 1;
    memcpy(plist, problems, plen);
    for (char *p = strtok(plist, ","); p; p = strtok(NULL, ",")) {
        sla_matrix *A = NULL;
        if (make_problem(ctx, p, &A) != SLA_OK) {
            fprintf(stderr, "%s: %s\n", p, sla_ctx_message(ctx));
            continue;
        }
        sla_int n = sla_matrix_nrows(A);
        double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
        for (sla_int i = 0; i < n; i++) b[i] = 1.0;
        int dim = 0;
        sscanf(p, "p%dd-", &dim);
        for (int it = 0; it < nthr; it++) {
            sla_ctx_set_threads(ctx, threads[it]);
            alt_run alt[NALT];
            auto_run au[2];
            memset(alt, 0, sizeof alt);
            memset(au, 0, sizeof au);
            bool use[NALT] = {true, n >= 2, (double)n <= direct_max_n};
            load_mark l0 = load_now();
            for (int r = 0; r < reps; r++) {
                for (int a = 0; a < NALT; a++) {
                    if (!use[a]) continue;
                    double s = 0.0, t1 = 0.0, t2 = 0.0;
                    if (run_once(ctx, A, alt_opts[a], 2, 0, b, x, &s, &t1, &t2, alt[a].its, NULL, 0,
                                 NULL, 0)) {
                        use[a] = false;
                        continue;
                    }
                    alt[a].t[0][r] = t1;
                    alt[a].t[1][r] = t2;
                    alt[a].setup[r] = s;
                    alt[a].ok = 1;
                }
                for (int e = 0; e < nsol; e++) {
                    double s = 0.0, t1 = 0.0, t2 = 0.0;
                    long its[2] = {0, 0};
                    if (run_once(ctx, A, "method=auto", solves[e], solves[e], b, x, &s, &t1, &t2, its,
                                 au[e].choice, sizeof au[e].choice, au[e].note, sizeof au[e].note))
                        snprintf(au[e].choice, sizeof au[e].choice, "failed");
                    au[e].t[r] = solves[e] > 1 ? t2 : t1;
                    au[e].setup[r] = s;
                    au[e].its = its[0];
                }
            }
            double load = other_load_pct(l0, load_now());
            for (int e = 0; e < nsol; e++) {
                int E = solves[e] > 1 ? 2 : 1;
                double best = INFINITY, ta = median(au[e].t, reps);
                double tm[NALT];
                for (int a = 0; a < NALT; a++) {
                    tm[a] = alt[a].ok ? median(alt[a].t[E - 1], reps) : NAN;
                    if (alt[a].ok && tm[a] < best) best = tm[a];
                }
                double sa_setup = alt[ALT_SAAMG].ok ? median(alt[ALT_SAAMG].setup, reps) : NAN;
                double sa_cyc = alt[ALT_SAAMG].ok && alt[ALT_SAAMG].its[0] > 0
                                    ? (median(alt[ALT_SAAMG].t[0], reps) - sa_setup) /
                                          (double)alt[ALT_SAAMG].its[0]
                                    : NAN;
                printf("%-12.12s %3d %2d | %-16s %8.3f %5ld | %8.3f %5ld | %8.3f %8.3f %5ld %8.4f | "
                       "%8.3f | %5.2f %4.0f%%\n",
                       p, threads[it], E, au[e].choice, ta, au[e].its, tm[ALT_CG], alt[ALT_CG].its[0],
                       sa_setup, tm[ALT_SAAMG], alt[ALT_SAAMG].its[0], sa_cyc, tm[ALT_CHOL], ta / best,
                       load);
                fflush(stdout);
                if (jf) {
                    fprintf(jf,
                            "%s  {\"problem\": \"%s\", \"n\": %lld, \"nnz\": %lld, \"dim\": %d, "
                            "\"threads\": %d, \"solves\": %d, \"auto_choice\": \"%s\", \"auto_s\": %.6g, "
                            "\"auto_its\": %ld, \"cg_s\": %.6g, \"cg_its\": %ld, \"saamg_s\": %.6g, "
                            "\"saamg_setup_s\": %.6g, \"saamg_its\": %ld, \"cholesky_s\": %.6g, "
                            "\"ratio\": %.4g, \"load_pct\": %.1f, \"reps\": %d, \"auto_note\": \"",
                            first_json ? "" : ",\n", p, (long long)n, (long long)sla_matrix_nnz(A), dim,
                            threads[it], E, au[e].choice, ta, au[e].its, tm[ALT_CG],
                            alt[ALT_CG].its[0], tm[ALT_SAAMG], sa_setup, alt[ALT_SAAMG].its[0],
                            tm[ALT_CHOL], ta / best, load, reps);
                    for (const char *c = au[e].note; *c; c++)
                        if (*c != '"' && *c != '\\') fputc(*c, jf);
                    fprintf(jf, "\"}");
                    first_json = 0;
                }
                if (getenv("SLA_BENCH_NOTES")) printf("    auto note: %s\n", au[e].note);
            }
        }
        free(b);
        free(x);
        sla_matrix_destroy(&A);
    }
    free(plist);
    if (jf) {
        fprintf(jf, "\n]\n");
        fclose(jf);
    }
    sla_ctx_destroy(&ctx);
    return 0;
}
