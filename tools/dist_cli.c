/* `sla solve` under mpirun: rank 0 reads the matrix and the vectors,
 * partitions and distributes them, every rank solves its part with the
 * distributed Krylov solver, rank 0 gathers and writes global files and
 * prints the same report as the serial command (JSON with "ranks": P).
 * The solver flags go through the library's option parser as in
 * cmd_solve.c; the method registry (sla_method_at) says which methods and
 * preconditioners the distributed layer runs. Part of the CLI, not the
 * library. */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>
#include <sla/dist.h>

#include "cli.h"
#include "dist_cli.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


int sla_cli_dist_wanted(int argc, char **argv)
{
    for (int a = 2; a < argc; a++)
        if (!strcmp(argv[a], "--partition")) return 1;
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

typedef struct {
    const char *apath, *rhs, *out, *adj, *gb, *ga;
    int json, verbose;
    sla_dist_partition part;
    sla_solver_options o;
    int threads;
} dargs;

/* The solver flags of the distributed `sla solve` and the library option
 * each one sets: the same path as cmd_solve.c (cli_solver_flags ->
 * sla_solver_options_parse), so names and ranges are the library's. */
static const cli_flag_key dist_flags[] = {
    {"--method", "method"}, {"--precond", "precond"}, {"--rtol", "rtol"},
    {"--atol", "atol"},     {"--maxiter", "maxiter"}, {"--restart", "restart"},
    {"--omega", "omega"},   {"--ilu-shift", "ilu_shift"}, {"--ilut-droptol", "ilut_droptol"},
    {"--ilut-fill", "ilut_fill"}, {"--ilut-pivot", "ilut_pivot"},
};
#define N_DIST_FLAGS ((int)(sizeof dist_flags / sizeof dist_flags[0]))

/* The registry's row of a method (precond false) or preconditioner value. */
static const sla_method_desc *registry_row(int value, int precond)
{
    for (int i = 0; i < sla_method_count(); i++) {
        const sla_method_desc *e = sla_method_at(i);
        if ((e->kind == SLA_KIND_PRECOND) == !!precond && e->value == value) return e;
    }
    return NULL;
}

/* Whether the distributed layer runs a row: method auto (settled below from
 * the structure), or a Krylov method or preconditioner the registry marks
 * SLA_CAP_DISTRIBUTED that is in this build. */
static int dist_runs(const sla_method_desc *e)
{
    if (e->kind == SLA_KIND_AUTO) return 1;
    if (!e->available || !(e->flags & SLA_CAP_DISTRIBUTED)) return 0;
    return e->kind == SLA_KIND_KRYLOV || e->kind == SLA_KIND_PRECOND;
}

/* "sla solve: FLAG NAME: not available in a distributed solve
 * (distributed methods: ...)", the list from the registry. Returns EXIT_BAD. */
static int refuse(const char *flag, const sla_method_desc *e)
{
    const int precond = e->kind == SLA_KIND_PRECOND;
    char list[256] = "";
    size_t at = 0;
    for (int i = 0; i < sla_method_count() && at < sizeof list; i++) {
        const sla_method_desc *r = sla_method_at(i);
        if ((r->kind == SLA_KIND_PRECOND) != precond || !dist_runs(r)) continue;
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", at ? ", " : "", r->name);
    }
    fprintf(stderr, "sla solve: %s %s: %s (distributed %s: %s)\n", flag, e->name,
            e->available ? "not available in a distributed solve" : "not in this build",
            precond ? "preconditioners" : "methods", list);
    return EXIT_BAD;
}

/* Silence stdout and stderr while every rank but 0 parses the same argv
 * (rank 0 reports, and prints --help); saved[] restores them. */
static void mute(int rank, int saved[2])
{
    saved[0] = saved[1] = -1;
    if (rank == 0) return;
    fflush(stdout);
    fflush(stderr);
    int null = open("/dev/null", O_WRONLY);
    if (null < 0) return;
    for (int k = 0; k < 2; k++) {
        saved[k] = dup(k + 1);
        dup2(null, k + 1);
    }
    close(null);
}

static void unmute(int saved[2])
{
    fflush(stdout);
    fflush(stderr);
    for (int k = 0; k < 2; k++) {
        if (saved[k] < 0) continue;
        dup2(saved[k], k + 1);
        close(saved[k]);
    }
}

static int parse_flags(sla_ctx *ctx, int argc, char **argv, dargs *d)
{
    optdef defs[] = {
        {"--rhs", NULL, 1, NULL, 0},     {"--out", "-o", 1, NULL, 0},
        {"--method", NULL, 1, NULL, 0},  {"--precond", NULL, 1, NULL, 0},
        {"--rtol", NULL, 1, NULL, 0},    {"--atol", NULL, 1, NULL, 0},
        {"--maxiter", NULL, 1, NULL, 0}, {"--restart", NULL, 1, NULL, 0},
        {"--omega", NULL, 1, NULL, 0},   {"--threads", NULL, 1, NULL, 0},
        {"--adjoint", NULL, 1, NULL, 0}, {"--grad-b", NULL, 1, NULL, 0},
        {"--grad-A", NULL, 1, NULL, 0},  {"--json", NULL, 0, NULL, 0},
        {"--verbose", "-v", 0, NULL, 0}, {"--help", "-h", 0, NULL, 0},
        {"--partition", NULL, 1, NULL, 0},
        {"--ilu-shift", NULL, 1, NULL, 0},   {"--ilut-droptol", NULL, 1, NULL, 0},
        {"--ilut-fill", NULL, 1, NULL, 0},   {"--ilut-pivot", NULL, 1, NULL, 0},
    };
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    static const char *const parts[] = {"block", "metis"};
    const char *pos[1];
    int rc;
    if (command_args("solve", cli_solve_help, "expected a matrix file", argc, argv, defs, nd, pos, 1, &rc))
        return rc ? rc : -1; /* -1: --help printed, nothing to run */
    d->apath = pos[0];
    d->json = optseen(defs, nd, "--json");
    d->verbose = optseen(defs, nd, "--verbose");
    d->rhs = optval(defs, nd, "--rhs");
    d->out = optval(defs, nd, "--out");
    d->adj = optval(defs, nd, "--adjoint");
    d->gb = optval(defs, nd, "--grad-b");
    d->ga = optval(defs, nd, "--grad-A");
    if ((rc = cli_solver_flags(ctx, "solve", defs, nd, dist_flags, N_DIST_FLAGS, &d->o))) return rc;
    if (optval(defs, nd, "--maxiter") && d->o.maxiter < 1) {
        /* as in cmd_solve.c: the library reads 0 as "its default" */
        fprintf(stderr, "sla solve: --maxiter: must be >= 1 (got %s)\n", optval(defs, nd, "--maxiter"));
        return EXIT_BAD;
    }
    /* what the distributed layer runs, from the registry */
    const sla_method_desc *m = registry_row((int)d->o.method, 0);
    const sla_method_desc *p = registry_row((int)d->o.precond, 1);
    if (m && !dist_runs(m)) return refuse("--method", m);
    if (p && !dist_runs(p)) return refuse("--precond", p);
    const char *pv = optval(defs, nd, "--partition");
    int k = pv ? lookup_name("--partition", pv, parts, 2) : 0;
    if (k < 0) return EXIT_BAD;
    d->part = k ? SLA_PART_METIS : SLA_PART_BLOCK;
    long long threads = 0;
    if (opt_threads(defs, nd, &threads)) return EXIT_BAD;
    d->threads = (int)threads;
    if ((d->gb || d->ga) && !d->adj) {
        err("solve: %s needs --adjoint w.mtx", d->gb ? "--grad-b" : "--grad-A");
        return EXIT_BAD;
    }
    return EXIT_OK;
}

/* The flags on every rank, messages from rank 0 only. Returns EXIT_OK, an
 * exit status, or -1 after --help. */
static int parse(sla_ctx *ctx, int rank, int argc, char **argv, dargs *d)
{
    memset(d, 0, sizeof *d);
    sla_solver_options_default(&d->o);
    int saved[2];
    mute(rank, saved);
    int rc = parse_flags(ctx, argc, argv, d);
    unmute(saved);
    return rc;
}

/* rank 0's verdict to everyone */
static int share(int rc)
{
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return rc;
}

static void json_str(const char *s) { cli_json_string(stdout, s); }

static void info_json(const sla_solve_info *w)
{
    printf("\"iterations\":%lld,\"residual\":%.6e,\"converged\":%s,\"reason\":", (long long)w->iterations,
           w->residual, w->converged ? "true" : "false");
    json_str(sla_reason_name(w->reason));
}

static int monitor(void *user, sla_int it, double rel)
{
    (void)user;
    fprintf(stderr, "sla: iteration %lld, residual %.3e\n", (long long)it, rel);
    return 0;
}

int sla_cli_dist_solve(int argc, char **argv)
{
    int init = 0, own_mpi = 0;
    MPI_Initialized(&init);
    if (!init) {
        MPI_Init(&argc, &argv);
        own_mpi = 1;
    }
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    dargs d;
    sla_ctx *ctx = NULL;
    sla_matrix *A = NULL;
    sla_dist_matrix *D = NULL;
    sla_dist_solver *S = NULL;
    double *bg = NULL, *wg = NULL, *xg = NULL, *gbg = NULL, *gAg = NULL;
    double *b = NULL, *w = NULL, *x = NULL, *gb = NULL, *gv = NULL;
    sla_int n = 0, nnz = 0;
    char note[200] = "";
    cli_output outs[3] = {{.opt = "--out", .what = "x", .kind = CLI_OUT_DENSE},
                          {.opt = "--grad-b", .what = "dL/db", .kind = CLI_OUT_DENSE},
                          {.opt = "--grad-A", .what = "dL/dA", .kind = CLI_OUT_PATTERN}};
    int files_written = 0;
    char files_note[256] = "";
    int rc = EXIT_INTERNAL;
    if (sla_ctx_create(&ctx) != SLA_OK) goto done;
    rc = parse(ctx, rank, argc, argv, &d);
    if (rc) {
        if (rc < 0) rc = EXIT_OK; /* --help */
        goto done;
    }
    /* output files: checked by rank 0 before any work, written at the end */
    if (rank == 0) {
        outs[0].path = d.out;
        outs[1].path = d.gb;
        outs[2].path = d.ga;
        const char *inputs[3] = {d.apath, d.rhs, d.adj};
        rc = cli_outputs_check(outs, 3, inputs, 3);
    }
    if ((rc = share(rc))) goto done;
    sla_ctx_set_threads(ctx, d.threads);
    if (d.verbose && rank == 0) {
        d.o.monitor = monitor;
        d.o.monitor_every = 1;
    }
    /* rank 0 reads everything and settles method=auto from the structure */
    if (rank == 0) {
        sla_status st = sla_mm_read(ctx, d.apath, SLA_F64, &A);
        if (st) rc = st == SLA_ERR_NOMEM ? EXIT_INTERNAL : EXIT_BAD;
        else if (sla_matrix_is_complex(A)) {
            fprintf(stderr, "sla: %s holds complex values (%s); the distributed solve has no complex path "
                    "(run sla solve on one process)\n", d.apath, sla_dtype_name(sla_matrix_dtype(A)));
            rc = EXIT_BAD;
        } else if (sla_matrix_nrows(A) != sla_matrix_ncols(A) || sla_matrix_nrows(A) < P) {
            fprintf(stderr, "sla: %s: a %lld x %lld matrix cannot be solved on %d ranks (square, n >= ranks)\n",
                    d.apath, (long long)sla_matrix_nrows(A), (long long)sla_matrix_ncols(A), P);
            rc = EXIT_BAD;
        }
        if (st) fprintf(stderr, "sla: %s\n", sla_ctx_message(ctx));
        if (!rc) {
            n = sla_matrix_nrows(A);
            nnz = sla_matrix_nnz(A);
            bg = calloc((size_t)n, sizeof *bg);
            if (d.rhs) {
                sla_int nr = 0, nc = 0;
                double *r = NULL;
                st = sla_mm_read_dense(ctx, d.rhs, &nr, &nc, &r);
                if (st) {
                    fprintf(stderr, "sla: %s\n", sla_ctx_message(ctx));
                    rc = EXIT_BAD;
                } else if (nr != n || nc != 1) {
                    fprintf(stderr, "sla: %s: right-hand side is %lld x %lld, expected %lld x 1 (distributed solves "
                            "take one right-hand side)\n", d.rhs, (long long)nr, (long long)nc, (long long)n);
                    rc = EXIT_BAD;
                } else memcpy(bg, r, (size_t)n * sizeof *bg);
                sla_free(ctx, r);
            } else {
                double *ones = malloc((size_t)n * sizeof *ones);
                for (sla_int i = 0; i < n; i++) ones[i] = 1.0;
                sla_matvec(ctx, A, 0, 1, ones, n, bg, n); /* b = A 1 */
                free(ones);
            }
        }
        if (!rc && d.adj) {
            sla_int nr = 0, nc = 0;
            st = sla_mm_read_dense(ctx, d.adj, &nr, &nc, &wg);
            if (st) {
                fprintf(stderr, "sla: %s\n", sla_ctx_message(ctx));
                rc = EXIT_BAD;
            } else if (nr != n || nc != 1) {
                fprintf(stderr, "sla: %s: adjoint seed is %lld x %lld, expected %lld x 1\n", d.adj, (long long)nr,
                        (long long)nc, (long long)n);
                rc = EXIT_BAD;
            }
        }
        if (!rc && d.o.method == SLA_METHOD_AUTO) {
            sla_matrix_props pr;
            sla_matrix_properties(ctx, A, 0, 0.0, &pr);
            bool sym = pr.symmetric && pr.structurally_symmetric;
            d.o.method = sym && pr.positive_diagonal ? SLA_METHOD_CG : sym ? SLA_METHOD_MINRES : SLA_METHOD_GMRES;
            snprintf(note, sizeof note, "auto: %s -> %s (distributed)",
                     sym ? (pr.positive_diagonal ? "symmetric, positive diagonal" : "symmetric") : "nonsymmetric",
                     sla_method_name(d.o.method));
        }
    }
    if ((rc = share(rc))) goto done;
    MPI_Bcast(&d.o.method, (int)sizeof d.o.method, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Bcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    MPI_Bcast(&nnz, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);

    sla_status st = sla_dist_matrix_scatter(ctx, MPI_COMM_WORLD, 0, A, d.part, &D);
    if (!st) st = sla_dist_solver_create(ctx, D, &d.o, &S);
    if (st) {
        if (rank == 0) fprintf(stderr, "sla: %s: %s\n", d.apath, sla_ctx_message(ctx));
        rc = st == SLA_ERR_NOMEM ? EXIT_INTERNAL : EXIT_BAD;
        goto done;
    }
    sla_int nl = sla_dist_matrix_nlocal(D);
    b = calloc((size_t)nl, sizeof *b);
    x = calloc((size_t)nl, sizeof *x);
    sla_dist_scatter_vector(ctx, D, 0, bg, b);
    sla_solve_info fw, aw;
    memset(&aw, 0, sizeof aw);
    st = sla_dist_solver_solve(ctx, S, b, x, &fw);
    if (st < 0) {
        if (rank == 0) fprintf(stderr, "sla: %s\n", sla_ctx_message(ctx));
        rc = EXIT_INTERNAL;
        goto done;
    }
    int ok = fw.converged;
    if (rank == 0) xg = calloc((size_t)n, sizeof *xg);
    sla_dist_gather_vector(ctx, D, 0, x, xg);
    double t_adj = 0.0;
    if (!rc && d.adj) {
        w = calloc((size_t)nl, sizeof *w);
        gb = calloc((size_t)nl, sizeof *gb);
        gv = calloc((size_t)sla_dist_matrix_nnz_local(D) + 1, sizeof *gv);
        sla_dist_scatter_vector(ctx, D, 0, wg, w);
        t_adj = MPI_Wtime();
        st = sla_dist_solver_solve_vjp(ctx, S, x, w, gb, gv, &aw);
        t_adj = MPI_Wtime() - t_adj;
        if (st < 0) {
            if (rank == 0) fprintf(stderr, "sla: %s\n", sla_ctx_message(ctx));
            rc = EXIT_INTERNAL;
            goto done;
        }
        if (!aw.converged) ok = 0;
        if (rank == 0) {
            gbg = calloc((size_t)n, sizeof *gbg);
            gAg = calloc((size_t)nnz, sizeof *gAg);
        }
        sla_dist_gather_vector(ctx, D, 0, gb, gbg);
        sla_dist_gather_values(ctx, D, 0, gv, gAg); /* A's own CSR order */
    }
    /* every result is in hand: rank 0 writes the files, all or none;
     * non-finite results are reported, not written (exit 3) */
    const int want_files = d.out || d.gb || d.ga;
    if (rank == 0 && !rc && want_files) {
        outs[0].nrows = outs[1].nrows = n;
        outs[0].ncols = outs[1].ncols = 1;
        outs[0].data = xg;
        outs[1].data = gbg;
        outs[2].A = A;
        outs[2].data = gAg;
        char why[200];
        if (cli_outputs_nonfinite(outs, 3, why, sizeof why) >= 0) {
            snprintf(files_note, sizeof files_note, "no file written: %s", why);
            ok = 0;
        } else if ((rc = cli_outputs_write(ctx, outs, 3)) == 0) {
            files_written = 1;
        }
    }
    if (rank == 0 && !rc) {
        if (!note[0]) snprintf(note, sizeof note, "%.190s", fw.note);
        if (d.json) {
            printf("{\"n\":%lld,\"nnz\":%lld,\"ranks\":%d,\"partition\":\"%s\",\"backend\":\"mpi\",\"method\":",
                   (long long)n, (long long)nnz, P, d.part == SLA_PART_METIS ? "metis" : "block");
            json_str(fw.method);
            printf(",\"precond\":");
            json_str(fw.precond);
            printf(",\"note\":");
            json_str(note);
            printf(",");
            info_json(&fw);
            printf(",\"solve_seconds\":%.6g", fw.solve_seconds);
            if (d.adj) {
                printf(",\"adjoint\":{");
                info_json(&aw);
                printf(",\"seconds\":%.6g}", t_adj);
            }
            print_files_json(want_files, files_written, files_note);
            printf("}\n");
        } else {
            printf("%s: n = %lld, nnz = %lld, %d ranks (%s partition)\n  method %s, precond %s\n", d.apath,
                   (long long)n, (long long)nnz, P, d.part == SLA_PART_METIS ? "metis" : "block", fw.method,
                   fw.precond);
            printf("  iterations %lld, residual %.3e, %s, solve %.3f s\n", (long long)fw.iterations, fw.residual,
                   sla_reason_name(fw.reason), fw.solve_seconds);
            if (d.adj)
                printf("adjoint (L = w . x): iterations %lld, residual %.3e, %s\n", (long long)aw.iterations,
                       aw.residual, sla_reason_name(aw.reason));
        }
        fflush(stdout);
        if (!fw.converged || (d.adj && !aw.converged))
            fprintf(stderr, "sla: %s did not converge\n", fw.converged ? "adjoint solve" : "solve");
        if (want_files && !files_written) fprintf(stderr, "sla: %s\n", files_note);
    }
    if (!rc && !ok) rc = EXIT_NOCONV;
    rc = share(rc);
done:
    sla_dist_solver_destroy(&S);
    sla_dist_matrix_destroy(&D);
    sla_matrix_destroy(&A);
    free(bg);
    sla_free(ctx, wg);
    free(xg);
    free(gbg);
    free(gAg);
    free(b);
    free(w);
    free(x);
    free(gb);
    free(gv);
    sla_ctx_destroy(&ctx);
    cli_outputs_free(outs, 3);
    if (own_mpi) MPI_Finalize();
    return rc;
}
