/* cmd_solve.c — `sla solve`: solve A x = b (one or many right-hand sides)
 * with the method the flags name, optionally its VJP (--adjoint, --grad-b,
 * --grad-A), and report it as text or JSON. The solver flags are handed to
 * the library's option parser (cli_solver_flag), which checks their names
 * and ranges; this file only reads the inputs, runs the solver and writes
 * the outputs, all or none. Part of the CLI, not the library. */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct monitor_state {
    const char *phase;
    double t0, tlast;
    sla_int lastit;
} monitor_state;

static int monitor_cb(void *user, sla_int it, double rel)
{
    monitor_state *m = user;
    double t = now_seconds();
    if (it < m->lastit) m->lastit = 0; /* a new column */
    if (it - m->lastit >= 100 || t - m->tlast >= 0.5) {
        fprintf(stderr, "sla: %s iteration %lld  residual %.3e  (%.2f s)\n", m->phase,
                (long long)it, rel, t - m->t0);
        m->tlast = t;
        m->lastit = it;
    }
    return 0;
}

static void monitor_start(monitor_state *m, const char *phase)
{
    m->phase = phase;
    m->t0 = m->tlast = now_seconds();
    m->lastit = 0;
}

/* The worst of nrhs reports: the non-converged one with the largest
 * residual, else the largest residual. Times are summed. */
sla_solve_info cli_worst_info(const sla_solve_info *info, sla_int nrhs)
{
    sla_int w = 0;
    for (sla_int j = 1; j < nrhs; j++) {
        const sla_solve_info *a = &info[j], *b = &info[w];
        if (a->converged != b->converged) {
            if (!a->converged) w = j;
        } else if (!(a->residual <= b->residual)) {
            w = j;
        }
    }
    sla_solve_info r = info[w];
    double tsum = 0.0;
    for (sla_int j = 0; j < nrhs; j++) tsum += info[j].solve_seconds;
    r.solve_seconds = tsum;
    return r;
}

const char cli_solve_help[] =
    "usage: sla solve A.mtx [options]\n"
    "\n"
    "Solve A x = b with a direct factorization or a preconditioned Krylov method (x0 = 0).\n"
    "\n"
    "  --rhs b.mtx        right-hand side(s), Matrix Market array (default b = A*1)\n"
    "  --out x.mtx        write the solution (Matrix Market array)\n"
    "  --method M         auto|cg|bicgstab|gmres|minres|cocg|cholesky|ldlt|lu|umfpack|klu|superlu\n"
    "                     (cocg: complex symmetric A = A^T; on a real A it is cg)\n"
    "                     (default auto: a factorization when it is cheap or predicted\n"
    "                     faster, else Krylov, from the structure and the symbolic\n"
    "                     analysis; LU refusals retried klu -> umfpack -> superlu;\n"
    "                     the JSON note says which and why)\n"
    "  --ordering O       auto|amd|metis|natural, for the direct methods (default auto)\n"
    "  --precond P        none|jacobi|ssor|ic0|ilu0|ilut|amg|saamg (default none; ilut:\n"
    "                     threshold ILU with a fill limit; amg: one hypre\n"
    "                     BoomerAMG V-cycle, if this build has hypre; saamg: sla's own\n"
    "                     smoothed-aggregation V-cycle, lean in memory)\n"
    "  --equilibrate E    auto|on|off: Krylov methods scale rows and columns by\n"
    "                     powers of two (default auto: only badly scaled matrices)\n"
    "  --ilu-shift on|off ic0/ilu0/ilut: shift zero or tiny pivots to 1e-1 ||row||\n"
    "                     (default on; the note counts them) or stop at the first\n"
    "  --ilut-droptol T   ilut: drop entries below T ||row|| (default 1e-4)\n"
    "  --ilut-fill F      ilut: keep nnz(L + U) <= F nnz(A) + n (default 10)\n"
    "  --ilut-pivot P     ilut: swap in the column of U's largest entry when the\n"
    "                     pivot is below P times it (default 0.1, 0 = never)\n"
    "  --rtol R           relative tolerance on ||b - Ax|| / ||b|| (default 1e-8)\n"
    "  --atol A           absolute tolerance (default 0)\n"
    "  --maxiter K        iteration limit (default 10 n, at least 1000)\n"
    "  --restart M        GMRES restart length (default 30)\n"
    "  --omega W          SSOR weight in (0, 2) (default 1)\n"
    "  --threads T        number of threads (0 = OpenMP default)\n"
    "  --adjoint w.mtx    also differentiate L = w . x (an adjoint solve)\n"
    "  --grad-b gb.mtx    write dL/db (Matrix Market array; needs --adjoint)\n"
    "  --grad-A gA.mtx    write dL/dA on A's pattern (coordinate; needs --adjoint)\n"
    "  --json             print one JSON object with the report\n"
    "  --verbose          print the residual while solving (stderr)\n"
    "  --max-seconds S    time budget of each Krylov solve; past it the solve stops\n"
    "                     with the last iterate (reason diverged_time, exit 3)\n"
    "  --auto-direct-seconds S  method auto factors whenever the factorization is\n"
    "                     predicted under S seconds, whatever Krylov would cost\n"
    "                     (accuracy first; default 0.05; 0: the cost model alone)\n"
    "\n"
    "Output files (--out, --grad-b, --grad-A) are checked before any work (no\n"
    "control characters, a writable folder, not an input, not each other) and\n"
    "written only when every result is in hand, all or none: each goes to a\n"
    "temporary file next to it, fsync'ed, then renamed over the target, so a\n"
    "failed run leaves existing files as they were. Results with Inf/NaN (a\n"
    "diverged iterate) are not written: the JSON says \"files_written\":false\n"
    "and why, exit 3. A direct method reports precond \"none\".\n"
    "\n"
    "A complex A (a \"complex\" or \"hermitian\" Matrix Market file) is solved in\n"
    "complex arithmetic with the same flags (cg: Hermitian positive definite,\n"
    "minres: Hermitian, cocg: complex symmetric, bicgstab/gmres: any; jacobi,\n"
    "ic0, ilu0; cholesky, lu/umfpack, klu, superlu; auto picks from the\n"
    "structure). --rhs and --adjoint may be real or complex arrays; x and dL/db\n"
    "are written as \"array complex\", dL/dA as \"coordinate complex\". The\n"
    "loss is L = Re(sum_i conj(w_i) x_i) and gradients follow PyTorch: grad =\n"
    "dL/dRe + i dL/dIm, so dL/db = A^-H w and dL/dA_k = -dL/db[row_k]\n"
    "conj(x[col_k]) (docs/complex.md). The JSON adds \"dtype\":\"complex128\".\n"
    "\n"
    "Exit status: 0 converged, 1 internal failure, 2 bad input or an output that\n"
    "cannot be written (nothing is written), 3 not converged or non-finite\n"
    "results (the report is still printed).\n";

void cli_print_solve_info_json(FILE *f, const sla_solve_info *w)
{
    char reason[48];
    reason_string(w->reason, reason, sizeof reason);
    fprintf(f, "\"iterations\":%lld,\"residual\":", (long long)w->iterations);
    json_number(f, "%.6e", w->residual);
    fprintf(f, ",\"converged\":%s,\"reason\":", w->converged ? "true" : "false");
    cli_json_string(f, reason);
}

/* The multigrid hierarchy (precond saamg) as JSON ("hierarchy":{...}) or
 * text; nothing for a solver without one. */
static void print_hierarchy(sla_ctx *ctx, const sla_solver *S, int json)
{
    sla_hierarchy_info h;
    if (sla_solver_hierarchy(ctx, S, 0, &h) != SLA_OK || h.levels == 0) return;
    if (json) {
        printf(",\"hierarchy\":{\"levels\":%d", h.levels);
        const char *names[3] = {"rows", "nnz", "p_nnz"};
        const sla_int *arr[3] = {h.rows, h.nnz, h.p_nnz};
        for (int k = 0; k < 3; k++) {
            printf(",\"%s\":[", names[k]);
            for (int l = 0; l < h.levels; l++) printf("%s%lld", l ? "," : "", (long long)arr[k][l]);
            printf("]");
        }
        printf(",\"operator_complexity\":%.4f,\"grid_complexity\":%.4f,\"coarse_direct\":%s}",
               h.operator_complexity, h.grid_complexity, h.coarse_direct ? "true" : "false");
        return;
    }
    printf("  hierarchy: %d levels, operator complexity %.3f, grid complexity %.3f, coarsest %s\n",
           h.levels, h.operator_complexity, h.grid_complexity, h.coarse_direct ? "factorized" : "smoothed");
    for (int l = 0; l < h.levels; l++) {
        printf("    level %d: %lld rows, %lld nonzeros (%.1f per row)", l, (long long)h.rows[l],
               (long long)h.nnz[l], h.rows[l] ? (double)h.nnz[l] / (double)h.rows[l] : 0.0);
        if (l + 1 < h.levels) printf(", P %lld nonzeros", (long long)h.p_nnz[l]);
        printf("\n");
    }
}

/* The solver flags of `sla solve` and the library option each one sets. */
static const cli_flag_key solve_flags[] = {
    {"--method", "method"},           {"--precond", "precond"},
    {"--ordering", "ordering"},       {"--rtol", "rtol"},
    {"--atol", "atol"},               {"--maxiter", "maxiter"},
    {"--max-seconds", "max_seconds"}, {"--auto-direct-seconds", "auto_direct_seconds"},
    {"--restart", "restart"},         {"--omega", "omega"},
    {"--ilu-shift", "ilu_shift"},     {"--equilibrate", "equilibrate"},
    {"--ilut-droptol", "ilut_droptol"}, {"--ilut-fill", "ilut_fill"},
    {"--ilut-pivot", "ilut_pivot"},
};
#define N_SOLVE_FLAGS ((int)(sizeof solve_flags / sizeof solve_flags[0]))

int cmd_solve(int argc, char **argv)
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
        {"--ordering", NULL, 1, NULL, 0},
        {"--max-seconds", NULL, 1, NULL, 0},
        {"--auto-direct-seconds", NULL, 1, NULL, 0},
        {"--ilu-shift", NULL, 1, NULL, 0},
        {"--ilut-droptol", NULL, 1, NULL, 0},
        {"--ilut-fill", NULL, 1, NULL, 0},
        {"--ilut-pivot", NULL, 1, NULL, 0},
        {"--equilibrate", NULL, 1, NULL, 0},
    };
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[1];
    int rc;
    if (command_args("solve", cli_solve_help, "expected a matrix file", argc, argv, defs, nd, pos, 1,
                     &rc))
        return rc;
    const char *apath = pos[0];
    const int json = optseen(defs, nd, "--json");
    const int verbose = optseen(defs, nd, "--verbose");
    const char *rhs_path = optval(defs, nd, "--rhs");
    const char *out_path = optval(defs, nd, "--out");
    const char *adj_path = optval(defs, nd, "--adjoint");
    const char *gb_path = optval(defs, nd, "--grad-b");
    const char *ga_path = optval(defs, nd, "--grad-A");

    /* Options first: a bad option is reported before any file is read. The
     * solver flags become the library's options: it checks names and ranges. */
    sla_solver_options opts;
    sla_solver_options_default(&opts);
    long long threads = 0;
    sla_ctx *ctx = NULL;
    if ((rc = new_ctx(0, &ctx))) return rc;
    rc = cli_solver_flags(ctx, "solve", defs, nd, solve_flags, N_SOLVE_FLAGS, &opts);
    if (!rc && optval(defs, nd, "--maxiter") && opts.maxiter < 1) {
        /* the library reads 0 as "its default"; on the command line that is
         * leaving the flag out */
        fprintf(stderr, "sla solve: --maxiter: must be >= 1 (got %s)\n", optval(defs, nd, "--maxiter"));
        rc = EXIT_BAD;
    }
    if (!rc && opt_threads(defs, nd, &threads)) rc = EXIT_BAD;
    if (!rc && (gb_path || ga_path) && !adj_path) {
        err("solve: %s needs --adjoint w.mtx", gb_path ? "--grad-b" : "--grad-A");
        rc = EXIT_BAD;
    }
    if (rc) {
        sla_ctx_destroy(&ctx);
        return rc;
    }
    sla_ctx_set_threads(ctx, (int)threads);
    /* Output files: checked before any work, written only at the end. */
    cli_output outs[3] = {
        {.opt = "--out", .path = out_path, .what = "x", .kind = CLI_OUT_DENSE},
        {.opt = "--grad-b", .path = gb_path, .what = "dL/db", .kind = CLI_OUT_DENSE},
        {.opt = "--grad-A", .path = ga_path, .what = "dL/dA", .kind = CLI_OUT_PATTERN},
    };
    const char *inputs[3] = {apath, rhs_path, adj_path};
    if ((rc = cli_outputs_check(outs, 3, inputs, 3))) {
        cli_outputs_free(outs, 3);
        sla_ctx_destroy(&ctx);
        return rc;
    }
    const int want_files = out_path || gb_path || ga_path;
    int files_written = 0;
    char files_note[256] = "";

    sla_matrix *A = NULL;
    sla_solver *S = NULL;
    double *b = NULL, *x = NULL, *w = NULL, *gb = NULL, *gA = NULL;
    sla_solve_info *info = NULL, *ainfo = NULL;
    sla_status st;
    monitor_state mon;
    memset(&mon, 0, sizeof mon);

    double t_read = now_seconds();
    rc = read_matrix(ctx, apath, &A);
    if (rc) goto done;
    t_read = now_seconds() - t_read;
    const sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    if (sla_matrix_ncols(A) != n) {
        err("%s: matrix is not square (%lld x %lld); solve needs a square matrix", apath,
            (long long)n, (long long)sla_matrix_ncols(A));
        rc = EXIT_BAD;
        goto done;
    }
    if (n == 0) {
        err("%s: matrix is empty (0 x 0)", apath);
        rc = EXIT_BAD;
        goto done;
    }

    if (sla_matrix_is_complex(A)) { /* complex arithmetic: cmd_zsolve.c */
        if (verbose) {
            monitor_start(&mon, "solve");
            opts.monitor = monitor_cb;
            opts.monitor_user = &mon;
            opts.monitor_every = 1;
            fprintf(stderr, "sla: read %s (%lld x %lld complex, nnz %lld) in %.3f s\n", apath,
                    (long long)n, (long long)n, (long long)nnz, t_read);
        }
        cli_solve_args za = {.apath = apath, .rhs_path = rhs_path, .adj_path = adj_path,
                             .out_path = out_path, .gb_path = gb_path, .ga_path = ga_path,
                             .json = json};
        rc = cli_zsolve(ctx, A, &opts, &za, outs);
        goto done;
    }

    /* Right-hand side(s). */
    sla_int nrhs = 1;
    if (rhs_path) {
        sla_int nr = 0, nc = 0;
        rc = read_dense(ctx, rhs_path, &nr, &nc, &b);
        if (rc) goto done;
        if (nr != n || nc < 1) {
            err("%s: right-hand side is %lld x %lld but the matrix %s is %lld x %lld", rhs_path,
                (long long)nr, (long long)nc, apath, (long long)n, (long long)n);
            rc = EXIT_BAD;
            goto done;
        }
        nrhs = nc;
    } else {
        double *ones = xcalloc((size_t)n, sizeof *ones);
        b = xcalloc((size_t)n, sizeof *b);
        if (!ones || !b) {
            free(ones);
            rc = EXIT_INTERNAL;
            goto done;
        }
        for (sla_int i = 0; i < n; i++) ones[i] = 1.0;
        st = sla_matvec(ctx, A, 0, 1, ones, n, b, n);
        free(ones);
        if (st < 0) {
            rc = lib_fail(ctx, st, apath);
            goto done;
        }
    }

    /* Adjoint seed. */
    if (adj_path) {
        sla_int nr = 0, nc = 0;
        double *wr = NULL;
        rc = read_dense(ctx, adj_path, &nr, &nc, &wr);
        if (rc) goto done;
        if (nr != n || (nc != 1 && nc != nrhs)) {
            err("%s: adjoint seed is %lld x %lld but the solution is %lld x %lld", adj_path,
                (long long)nr, (long long)nc, (long long)n, (long long)nrhs);
            free(wr);
            rc = EXIT_BAD;
            goto done;
        }
        if (nc == nrhs) {
            w = wr;
        } else { /* one column for every right-hand side */
            w = xcalloc((size_t)n * (size_t)nrhs, sizeof *w);
            if (!w) {
                free(wr);
                rc = EXIT_INTERNAL;
                goto done;
            }
            for (sla_int j = 0; j < nrhs; j++) memcpy(w + j * n, wr, (size_t)n * sizeof *w);
            free(wr);
        }
    }

    if (verbose) {
        monitor_start(&mon, "solve");
        opts.monitor = monitor_cb;
        opts.monitor_user = &mon;
        opts.monitor_every = 1;
        fprintf(stderr, "sla: read %s (%lld x %lld, nnz %lld) in %.3f s\n", apath,
                (long long)n, (long long)n, (long long)nnz, t_read);
    }

    /* auto plans for the solves this command runs: nrhs, twice with --adjoint */
    opts.auto_solves = (int)(nrhs * (adj_path ? 2 : 1) < 1000000 ? nrhs * (adj_path ? 2 : 1) : 1000000);
    st = sla_solver_create(ctx, A, &opts, &S);
    if (st < 0) {
        rc = lib_fail(ctx, st, apath);
        goto done;
    }

    x = xcalloc((size_t)n * (size_t)nrhs, sizeof *x);
    info = xcalloc((size_t)nrhs, sizeof *info);
    if (!x || !info) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    if (verbose) monitor_start(&mon, "solve");
    st = sla_solver_solve(ctx, S, 0, nrhs, b, n, x, n, info);
    if (st < 0) {
        rc = lib_fail(ctx, st, apath);
        goto done;
    }
    sla_solve_info fw = cli_worst_info(info, nrhs);
    int ok = fw.converged;

    /* A non-finite x (a diverged iterate) has no adjoint: skip it, report. */
    char adj_skipped[200] = "";
    if (adj_path) {
        cli_output xo = {.path = "x", .what = "x", .kind = CLI_OUT_DENSE, .nrows = n,
                         .ncols = nrhs, .data = x};
        if (cli_outputs_nonfinite(&xo, 1, adj_skipped, sizeof adj_skipped) >= 0) ok = 0;
    }

    sla_solve_info aw;
    memset(&aw, 0, sizeof aw);
    double t_adj = 0.0;
    if (adj_path && !adj_skipped[0]) {
        gb = xcalloc((size_t)n * (size_t)nrhs, sizeof *gb);
        gA = xcalloc((size_t)nnz, sizeof *gA);
        ainfo = xcalloc((size_t)nrhs, sizeof *ainfo);
        if (!gb || !gA || !ainfo) {
            rc = EXIT_INTERNAL;
            goto done;
        }
        if (verbose) monitor_start(&mon, "adjoint");
        t_adj = now_seconds();
        st = sla_solver_solve_vjp(ctx, S, 0, nrhs, x, n, w, n, gb, n, gA, ainfo);
        t_adj = now_seconds() - t_adj;
        if (st < 0) {
            rc = lib_fail(ctx, st, adj_path);
            goto done;
        }
        aw = cli_worst_info(ainfo, nrhs);
        if (!aw.converged) ok = 0;
    }

    /* Every result is in hand: write the files, all or none. Non-finite
     * results are reported, not written (Matrix Market holds finite values),
     * and existing files are left as they were. */
    if (want_files) {
        outs[0].nrows = outs[1].nrows = n;
        outs[0].ncols = outs[1].ncols = nrhs;
        outs[0].data = x;
        outs[1].data = gb;
        outs[2].A = A;
        outs[2].data = gA;
        if (adj_skipped[0]) {
            snprintf(files_note, sizeof files_note, "no file written: %s (the adjoint was skipped)",
                     adj_skipped);
        } else if (cli_outputs_nonfinite(outs, 3, adj_skipped, sizeof adj_skipped) >= 0) {
            snprintf(files_note, sizeof files_note, "no file written: %s", adj_skipped);
            ok = 0;
        } else {
            if ((rc = cli_outputs_write(ctx, outs, 3))) goto done;
            files_written = 1;
        }
    }

    double setup = sla_solver_setup_seconds(S);
    /* a direct backend ignores --precond: report none, not the option */
    const int direct = fw.backend[0] && strcmp(fw.backend, "krylov") != 0;
    if (json) {
        printf("{\"n\":%lld,\"nnz\":%lld,\"backend\":", (long long)n, (long long)nnz);
        cli_json_string(stdout, fw.backend[0] ? fw.backend : "krylov");
        printf(",\"method\":");
        cli_json_string(stdout, fw.method);
        printf(",\"precond\":");
        cli_json_string(stdout, direct ? "none" : fw.precond); /* a direct solve uses none */
        if (fw.ordering[0]) {
            printf(",\"ordering\":");
            cli_json_string(stdout, fw.ordering);
            printf(",\"factor_nnz\":%.0f", fw.factor_nnz);
            if (fw.rcond >= 0) printf(",\"rcond\":%.3e", fw.rcond);
            if (fw.backward_error >= 0) printf(",\"backward_error\":%.3e", fw.backward_error);
        }
        printf(",\"note\":");
        cli_json_string(stdout, fw.note);
        printf(",");
        cli_print_solve_info_json(stdout, &fw);
        printf(",\"setup_seconds\":");
        json_number(stdout, "%.6g", setup);
        printf(",\"solve_seconds\":");
        json_number(stdout, "%.6g", fw.solve_seconds);
        print_hierarchy(ctx, S, 1);
        if (adj_path && !ainfo) { /* skipped: x is not finite */
            printf(",\"adjoint\":null");
        } else if (adj_path) {
            printf(",\"adjoint\":{");
            cli_print_solve_info_json(stdout, &aw);
            printf(",\"seconds\":");
            json_number(stdout, "%.6g", t_adj);
            printf("}");
        }
        print_files_json(want_files, files_written, files_note);
        printf("}\n");
    } else {
        char reason[48];
        reason_string(fw.reason, reason, sizeof reason);
        printf("%s: n = %lld, nnz = %lld", apath, (long long)n, (long long)nnz);
        if (nrhs > 1) printf(", %lld right-hand sides (worst shown)", (long long)nrhs);
        printf("\n  method %s, precond %s, backend %s\n", fw.method,
               direct ? "none" : fw.precond, fw.backend[0] ? fw.backend : "krylov");
        printf("  iterations %lld, residual %.3e, %s\n", (long long)fw.iterations, fw.residual,
               reason);
        printf("  setup %.3f s, solve %.3f s\n", setup, fw.solve_seconds);
        print_hierarchy(ctx, S, 0);
        if (fw.note[0]) printf("  note: %s\n", fw.note);
        if (adj_path && !ainfo) {
            printf("adjoint skipped: %s\n", adj_skipped);
        } else if (adj_path) {
            reason_string(aw.reason, reason, sizeof reason);
            printf("adjoint (L = w . x): iterations %lld, residual %.3e, %s, %.3f s\n",
                   (long long)aw.iterations, aw.residual, reason, t_adj);
        }
        if (files_written && out_path) printf("  wrote x to %s\n", out_path);
        if (files_written && gb_path) printf("  wrote dL/db to %s\n", gb_path);
        if (files_written && ga_path) printf("  wrote dL/dA to %s\n", ga_path);
        if (want_files && !files_written) printf("  %s\n", files_note);
    }
    fflush(stdout);
    if (!ok) {
        char reason[48];
        const sla_solve_info *bad = fw.converged ? &aw : &fw;
        reason_string(bad->reason, reason, sizeof reason);
        if (!fw.converged || (ainfo && !aw.converged))
            err("%s did not converge: %s after %lld iterations (residual %.3e)",
                fw.converged ? "adjoint solve" : "solve", reason, (long long)bad->iterations,
                bad->residual);
        if (adj_path && !ainfo) err("adjoint solve skipped: %s", adj_skipped);
        if (want_files && !files_written) err("%s", files_note);
    }
    rc = ok ? EXIT_OK : EXIT_NOCONV;

done:
    sla_solver_destroy(&S);
    sla_matrix_destroy(&A);
    free(b);
    free(x);
    free(w);
    free(gb);
    free(gA);
    free(info);
    free(ainfo);
    sla_ctx_destroy(&ctx);
    cli_outputs_free(outs, 3);
    return rc;
}

