/* sla — the command-line front end of the library.
 *
 *   sla solve A.mtx [options]     solve A x = b (and optionally its VJP)
 *   sla gen KIND N -o A.mtx       write a generated test matrix
 *   sla info A.mtx [--json]       structure of a matrix
 *   sla demo [inverse|poisson]    inverse problem; solve + adjoint + FD check
 *   sla nlsolve bratu2d N --mu M  nonlinear solve and its implicit gradient
 *
 * Exit status: 0 success, 1 internal failure (out of memory, failed demo
 * check), 2 bad input or unusable matrix, 3 a solve did not converge.
 * The library never prints; this program does all the talking.
 */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#include "cli_output.h"
#include "cli_util.h"
#include "demo_inverse.h"
#ifdef SLA_CLI_DIST
#include "dist_cli.h"
#endif

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PI 3.14159265358979323846

/* ---- small helpers -------------------------------------------------- */

/* Report a failed library call: the context's message (which names the
 * file and line for I/O), else the status name. Returns the exit code. */
static int lib_fail(sla_ctx *ctx, sla_status st, const char *what)
{
    const char *msg = sla_ctx_message(ctx);
    if (msg && msg[0]) {
        if (what && !strstr(msg, what))
            err("%s: %s", what, msg);
        else
            err("%s", msg);
    } else {
        err("%s: %s", what ? what : "error", sla_status_name(st));
    }
    return st == SLA_ERR_NOMEM ? EXIT_INTERNAL : EXIT_BAD;
}

static void *xcalloc(size_t count, size_t size)
{
    if (count == 0) count = 1;
    void *p = calloc(count, size);
    if (!p) err("out of memory (%zu x %zu bytes)", count, size);
    return p;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t *row = calloc(lb + 1, sizeof *row);
    if (!row) return (size_t)-1;
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] == b[j - 1] ? 0 : 1);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    size_t d = row[lb];
    free(row);
    return d;
}

static const char *nearest(const char *word, const char *const *names, int count)
{
    const char *best = NULL;
    size_t bestd = (size_t)-1;
    for (int i = 0; i < count; i++) {
        size_t d = edit_distance(word, names[i]);
        if (d < bestd) {
            bestd = d;
            best = names[i];
        }
    }
    return best;
}

/* s as a JSON string, always valid UTF-8 (cli_output.c). */
static void json_string(FILE *f, const char *s) { cli_json_string(f, s); }

/* A number as JSON (null when not finite). */
static void json_number(FILE *f, const char *fmt, double v)
{
    if (isfinite(v))
        fprintf(f, fmt, v);
    else
        fputs("null", f);
}

/* "SLA_CONVERGED_RTOL" -> "converged_rtol". */
static void reason_string(sla_reason r, char *buf, size_t len)
{
    const char *name = sla_reason_name(r);
    if (!name) name = "unknown";
    if (strncmp(name, "SLA_", 4) == 0) name += 4;
    if (strncmp(name, "REASON_", 7) == 0) name += 7;
    size_t i = 0;
    for (; name[i] && i + 1 < len; i++) buf[i] = (char)tolower((unsigned char)name[i]);
    buf[i] = '\0';
}

/* ---- option parsing ------------------------------------------------- */

typedef struct optdef {
    const char *name;   /* "--rtol" */
    const char *alias;  /* "-o" or NULL */
    int has_arg;
    const char *value;  /* filled by parse_args */
    int seen;
} optdef;

static optdef *find_opt(optdef *defs, int ndefs, const char *name)
{
    for (int i = 0; i < ndefs; i++) {
        if (strcmp(defs[i].name, name) == 0) return &defs[i];
        if (defs[i].alias && strcmp(defs[i].alias, name) == 0) return &defs[i];
    }
    return NULL;
}

static const char *optval(optdef *defs, int ndefs, const char *name)
{
    optdef *d = find_opt(defs, ndefs, name);
    return d && d->seen ? d->value : NULL;
}

static int optseen(optdef *defs, int ndefs, const char *name)
{
    optdef *d = find_opt(defs, ndefs, name);
    return d ? d->seen : 0;
}

/* Parse argv[start..argc) against defs; positional arguments go to pos.
 * Returns 0 or EXIT_BAD (message printed). */
static int parse_args(const char *cmd, int argc, char **argv, int start, optdef *defs,
                      int ndefs, const char **pos, int maxpos, int *npos)
{
    *npos = 0;
    int only_pos = 0;
    for (int i = start; i < argc; i++) {
        const char *a = argv[i];
        if (!only_pos && strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (only_pos || a[0] != '-' || a[1] == '\0') {
            if (*npos >= maxpos) {
                err("%s: unexpected argument '%s' (see 'sla %s --help')", cmd, a, cmd);
                return EXIT_BAD;
            }
            pos[(*npos)++] = a;
            continue;
        }
        char name[64];
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        if (nl >= sizeof name) nl = sizeof name - 1;
        memcpy(name, a, nl);
        name[nl] = '\0';
        optdef *d = find_opt(defs, ndefs, name);
        if (!d) {
            const char *names[64];
            int nn = 0;
            for (int k = 0; k < ndefs && nn < 64; k++) names[nn++] = defs[k].name;
            const char *near = nearest(name, names, nn);
            err("%s: unknown option '%s' (did you mean %s?)", cmd, name, near ? near : "--help");
            return EXIT_BAD;
        }
        if (d->has_arg) {
            if (eq) {
                d->value = eq + 1;
            } else {
                if (i + 1 >= argc) {
                    err("%s: option %s needs a value", cmd, d->name);
                    return EXIT_BAD;
                }
                d->value = argv[++i];
            }
        } else if (eq) {
            err("%s: option %s takes no value", cmd, d->name);
            return EXIT_BAD;
        }
        d->seen = 1;
    }
    return 0;
}

/* The preamble of every `sla CMD`: parse argv[2..) against defs, the
 * positional arguments into pos[0..npos). Returns 1 when the command is
 * over, with its exit status in *rc: --help printed (EXIT_OK), a bad
 * option, or not exactly npos positional arguments (EXIT_BAD, message
 * "CMD: USAGE (see 'sla CMD --help')"). Returns 0 to go on. */
static int command_args(const char *cmd, const char *help, const char *usage, int argc,
                        char **argv, optdef *defs, int ndefs, const char **pos, int npos,
                        int *rc)
{
    int got = 0;
    *rc = parse_args(cmd, argc, argv, 2, defs, ndefs, pos, npos, &got);
    if (*rc) return 1;
    if (optseen(defs, ndefs, "--help")) {
        fputs(help, stdout);
        *rc = EXIT_OK;
        return 1;
    }
    if (got != npos) {
        err("%s: %s (see 'sla %s --help')", cmd, usage, cmd);
        *rc = EXIT_BAD;
        return 1;
    }
    return 0;
}

/* --threads T (0, the default: OpenMP's choice). Returns 0 or EXIT_BAD. */
static int opt_threads(optdef *defs, int ndefs, long long *threads)
{
    const char *s = optval(defs, ndefs, "--threads");
    *threads = 0;
    return s && parse_int("--threads", s, 0, 4096, threads) ? EXIT_BAD : 0;
}

/* ---- names ---------------------------------------------------------- */

static const char *const method_names[] = {"auto", "cg", "bicgstab", "gmres", "minres",
                                           "cholesky", "ldlt", "lu", "umfpack", "klu", "superlu"};
static const sla_method method_values[] = {SLA_METHOD_AUTO, SLA_METHOD_CG, SLA_METHOD_BICGSTAB,
                                           SLA_METHOD_GMRES, SLA_METHOD_MINRES,
                                           SLA_METHOD_CHOLESKY, SLA_METHOD_LDLT, SLA_METHOD_LU,
                                           SLA_METHOD_UMFPACK, SLA_METHOD_KLU, SLA_METHOD_SUPERLU};
#define N_METHODS ((int)(sizeof method_names / sizeof method_names[0]))
static const char *const ordering_names[] = {"auto", "amd", "metis", "natural"};
static const sla_ordering ordering_values[] = {SLA_ORDER_AUTO, SLA_ORDER_AMD, SLA_ORDER_METIS,
                                               SLA_ORDER_NATURAL};
static const char *const precond_names[] = {"none", "jacobi", "ssor", "ic0", "ilu0", "ilut",
                                            "amg", "saamg"};
static const sla_precond_kind precond_values[] = {SLA_PRECOND_NONE, SLA_PRECOND_JACOBI,
                                                  SLA_PRECOND_SSOR, SLA_PRECOND_IC0,
                                                  SLA_PRECOND_ILU0, SLA_PRECOND_ILUT,
                                                  SLA_PRECOND_AMG, SLA_PRECOND_SAAMG};
#define N_PRECONDS ((int)(sizeof precond_names / sizeof precond_names[0]))

static int lookup_name(const char *opt, const char *s, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (strcmp(s, names[i]) == 0) return i;
    err("%s: unknown %s '%s' (did you mean %s?)", opt, opt[0] == '-' ? "value" : "kind", s,
        nearest(s, names, count));
    return -1;
}

/* ---- reading inputs ------------------------------------------------- */

static int read_matrix(sla_ctx *ctx, const char *path, sla_matrix **A)
{
    sla_status st = sla_mm_read(ctx, path, SLA_F64, A);
    if (st < 0) {
        *A = NULL;
        return lib_fail(ctx, st, path);
    }
    return 0;
}

/* A new context using `threads` threads (0: OpenMP's choice). Returns 0
 * or EXIT_INTERNAL (message printed, *ctx NULL). */
static int new_ctx(long long threads, sla_ctx **ctx)
{
    if (sla_ctx_create(ctx) != SLA_OK) {
        err("out of memory");
        return EXIT_INTERNAL;
    }
    sla_ctx_set_threads(*ctx, (int)threads);
    return 0;
}

/* new_ctx and the matrix of path read into it. Returns 0 or the exit
 * status (message printed); either way the caller destroys *ctx and *A
 * (NULL when not made). */
static int open_matrix(const char *path, long long threads, sla_ctx **ctx, sla_matrix **A)
{
    *A = NULL;
    int rc = new_ctx(threads, ctx);
    return rc ? rc : read_matrix(*ctx, path, A);
}

/* Read an array file and copy it into a malloc'd buffer. */
static int read_dense(sla_ctx *ctx, const char *path, sla_int *nr, sla_int *nc, double **out)
{
    double *data = NULL;
    *out = NULL;
    sla_status st = sla_mm_read_dense(ctx, path, nr, nc, &data);
    if (st < 0) return lib_fail(ctx, st, path);
    size_t count = (size_t)(*nr) * (size_t)(*nc);
    double *copy = xcalloc(count, sizeof *copy);
    if (!copy) {
        sla_free(ctx, data);
        return EXIT_INTERNAL;
    }
    if (count) memcpy(copy, data, count * sizeof *copy);
    sla_free(ctx, data);
    *out = copy;
    return 0;
}

/* ---- sla solve ------------------------------------------------------ */

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
static sla_solve_info worst_info(const sla_solve_info *info, sla_int nrhs)
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

static const char solve_help[] =
    "usage: sla solve A.mtx [options]\n"
    "\n"
    "Solve A x = b with a direct factorization or a preconditioned Krylov method (x0 = 0).\n"
    "\n"
    "  --rhs b.mtx        right-hand side(s), Matrix Market array (default b = A*1)\n"
    "  --out x.mtx        write the solution (Matrix Market array)\n"
    "  --method M         auto|cg|bicgstab|gmres|minres|cholesky|ldlt|lu|umfpack|klu|superlu\n"
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
    "Exit status: 0 converged, 1 internal failure, 2 bad input or an output that\n"
    "cannot be written (nothing is written), 3 not converged or non-finite\n"
    "results (the report is still printed).\n";

static void print_info_json(FILE *f, const sla_solve_info *w)
{
    char reason[48];
    reason_string(w->reason, reason, sizeof reason);
    fprintf(f, "\"iterations\":%lld,\"residual\":", (long long)w->iterations);
    json_number(f, "%.6e", w->residual);
    fprintf(f, ",\"converged\":%s,\"reason\":", w->converged ? "true" : "false");
    json_string(f, reason);
}

static int cmd_solve(int argc, char **argv)
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
    if (command_args("solve", solve_help, "expected a matrix file", argc, argv, defs, nd, pos, 1,
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

    /* Options first: a bad option is reported before any file is read. */
    sla_solver_options opts;
    sla_solver_options_default(&opts);
    const char *s;
    long long threads = 0;
    if ((s = optval(defs, nd, "--method"))) {
        int k = lookup_name("--method", s, method_names, N_METHODS);
        if (k < 0) return EXIT_BAD;
        opts.method = method_values[k];
    }
    if ((s = optval(defs, nd, "--precond"))) {
        int k = lookup_name("--precond", s, precond_names, N_PRECONDS);
        if (k < 0) return EXIT_BAD;
        opts.precond = precond_values[k];
    }
    if ((s = optval(defs, nd, "--ordering"))) {
        int k = lookup_name("--ordering", s, ordering_names, 4);
        if (k < 0) return EXIT_BAD;
        opts.ordering = ordering_values[k];
    }
    if ((s = optval(defs, nd, "--rtol"))) {
        if (parse_double("--rtol", s, &opts.rtol)) return EXIT_BAD;
        if (opts.rtol < 0) {
            err("--rtol: must be >= 0 (got %s)", s);
            return EXIT_BAD;
        }
    }
    if ((s = optval(defs, nd, "--atol"))) {
        if (parse_double("--atol", s, &opts.atol)) return EXIT_BAD;
        if (opts.atol < 0) {
            err("--atol: must be >= 0 (got %s)", s);
            return EXIT_BAD;
        }
    }
    if ((s = optval(defs, nd, "--maxiter"))) {
        long long v;
        if (parse_int("--maxiter", s, 1, LLONG_MAX, &v)) return EXIT_BAD;
        opts.maxiter = (sla_int)v;
    }
    if ((s = optval(defs, nd, "--max-seconds"))) {
        if (parse_double("--max-seconds", s, &opts.max_seconds)) return EXIT_BAD;
        if (!(opts.max_seconds >= 0)) {
            err("--max-seconds: must be >= 0 (got %s)", s);
            return EXIT_BAD;
        }
    }
    if ((s = optval(defs, nd, "--auto-direct-seconds"))) {
        if (parse_double("--auto-direct-seconds", s, &opts.auto_direct_seconds)) return EXIT_BAD;
        if (!(opts.auto_direct_seconds >= 0) || !isfinite(opts.auto_direct_seconds)) {
            err("--auto-direct-seconds: must be finite and >= 0 (got %s)", s);
            return EXIT_BAD;
        }
    }
    if ((s = optval(defs, nd, "--restart"))) {
        long long v;
        if (parse_int("--restart", s, 1, 100000, &v)) return EXIT_BAD;
        opts.restart = (int)v;
    }
    if ((s = optval(defs, nd, "--omega"))) {
        if (parse_double("--omega", s, &opts.omega)) return EXIT_BAD;
        if (!(opts.omega > 0.0 && opts.omega < 2.0)) {
            err("--omega: must be in (0, 2) (got %s)", s);
            return EXIT_BAD;
        }
    }
    if ((s = optval(defs, nd, "--ilu-shift"))) {
        static const char *const onoff[] = {"off", "on"};
        int k = lookup_name("--ilu-shift", s, onoff, 2);
        if (k < 0) return EXIT_BAD;
        opts.ilu_shift = k;
    }
    if ((s = optval(defs, nd, "--equilibrate"))) {
        static const char *const eqn[] = {"auto", "on", "off"}; /* SLA_EQUILIBRATE_* order */
        int k = lookup_name("--equilibrate", s, eqn, 3);
        if (k < 0) return EXIT_BAD;
        opts.equilibrate = k;
    }
    if ((s = optval(defs, nd, "--ilut-droptol"))) {
        if (parse_double("--ilut-droptol", s, &opts.ilut_droptol)) return EXIT_BAD;
        if (!(opts.ilut_droptol >= 0.0)) {
            err("--ilut-droptol: must be >= 0 (got %s)", s);
            return EXIT_BAD;
        }
    }
    if ((s = optval(defs, nd, "--ilut-fill"))) {
        if (parse_double("--ilut-fill", s, &opts.ilut_fill)) return EXIT_BAD;
        if (!(opts.ilut_fill > 0.0 && opts.ilut_fill <= 1e6)) {
            err("--ilut-fill: must be in (0, 1e6] (got %s)", s);
            return EXIT_BAD;
        }
    }
    if ((s = optval(defs, nd, "--ilut-pivot"))) {
        if (parse_double("--ilut-pivot", s, &opts.ilut_pivot)) return EXIT_BAD;
        if (!(opts.ilut_pivot >= 0.0 && opts.ilut_pivot <= 1.0)) {
            err("--ilut-pivot: must be in [0, 1] (got %s)", s);
            return EXIT_BAD;
        }
    }
    if (opt_threads(defs, nd, &threads)) return EXIT_BAD;
    if ((gb_path || ga_path) && !adj_path) {
        err("solve: %s needs --adjoint w.mtx", gb_path ? "--grad-b" : "--grad-A");
        return EXIT_BAD;
    }
    /* Output files: checked before any work, written only at the end. */
    cli_output outs[3] = {
        {.opt = "--out", .path = out_path, .what = "x", .kind = CLI_OUT_DENSE},
        {.opt = "--grad-b", .path = gb_path, .what = "dL/db", .kind = CLI_OUT_DENSE},
        {.opt = "--grad-A", .path = ga_path, .what = "dL/dA", .kind = CLI_OUT_PATTERN},
    };
    const char *inputs[3] = {apath, rhs_path, adj_path};
    if ((rc = cli_outputs_check(outs, 3, inputs, 3))) {
        cli_outputs_free(outs, 3);
        return rc;
    }
    const int want_files = out_path || gb_path || ga_path;
    int files_written = 0;
    char files_note[256] = "";

    sla_ctx *ctx = NULL;
    sla_matrix *A = NULL;
    sla_solver *S = NULL;
    double *b = NULL, *x = NULL, *w = NULL, *gb = NULL, *gA = NULL;
    sla_solve_info *info = NULL, *ainfo = NULL;
    sla_status st;
    monitor_state mon;
    memset(&mon, 0, sizeof mon);

    double t_read = now_seconds();
    rc = open_matrix(apath, threads, &ctx, &A);
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
    sla_solve_info fw = worst_info(info, nrhs);
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
        aw = worst_info(ainfo, nrhs);
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
        json_string(stdout, fw.backend[0] ? fw.backend : "krylov");
        printf(",\"method\":");
        json_string(stdout, fw.method);
        printf(",\"precond\":");
        json_string(stdout, direct ? "none" : fw.precond); /* a direct solve uses none */
        if (fw.ordering[0]) {
            printf(",\"ordering\":");
            json_string(stdout, fw.ordering);
            printf(",\"factor_nnz\":%.0f", fw.factor_nnz);
            if (fw.rcond >= 0) printf(",\"rcond\":%.3e", fw.rcond);
            if (fw.backward_error >= 0) printf(",\"backward_error\":%.3e", fw.backward_error);
        }
        printf(",\"note\":");
        json_string(stdout, fw.note);
        printf(",");
        print_info_json(stdout, &fw);
        printf(",\"setup_seconds\":");
        json_number(stdout, "%.6g", setup);
        printf(",\"solve_seconds\":");
        json_number(stdout, "%.6g", fw.solve_seconds);
        if (adj_path && !ainfo) { /* skipped: x is not finite */
            printf(",\"adjoint\":null");
        } else if (adj_path) {
            printf(",\"adjoint\":{");
            print_info_json(stdout, &aw);
            printf(",\"seconds\":");
            json_number(stdout, "%.6g", t_adj);
            printf("}");
        }
        if (want_files) {
            printf(",\"files_written\":%s", files_written ? "true" : "false");
            if (!files_written) {
                printf(",\"files_note\":");
                json_string(stdout, files_note);
            }
        }
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

/* ---- sla gen -------------------------------------------------------- */

static const char gen_help[] =
    "usage: sla gen KIND N -o A.mtx [options]\n"
    "\n"
    "Write a generated test matrix (N interior points per side, Dirichlet\n"
    "boundaries, lexicographic numbering).\n"
    "\n"
    "  poisson1d N        3-point Laplacian, n = N\n"
    "  poisson2d N        5-point Laplacian, n = N^2\n"
    "  poisson3d N        7-point Laplacian, n = N^3\n"
    "  diffusion2d N      -div(kappa grad u), kappa = 1 + 0.5 sin(2 pi x) sin(2 pi y)\n"
    "                     at cell centres, or --kappa-const K\n"
    "  convdiff2d N       -Laplace(u) + b . grad u, upwind, --bx B --by B (default 10, 10)\n"
    "  aniso2d N          -(eps u_xx + u_yy), --eps E (default 0.01)\n"
    "  random N           random sparse n = N, --per-row P (default 5),\n"
    "                     --kind general|symmetric|spd (default spd), --seed S\n"
    "  arrow N            unsymmetric arrowhead n = N: a band (--band B, default 2)\n"
    "                     bordered by dense last rows and columns (--dense D,\n"
    "                     default 8), row diagonally dominant, --seed S\n"
    "\n"
    "  -o, --out A.mtx    output file (required; checked before the matrix is made,\n"
    "                     replaced atomically: temporary file, fsync, rename)\n"
    "  -q, --quiet        do not print a summary\n";

static int cmd_gen(int argc, char **argv)
{
    optdef defs[] = {
        {"--out", "-o", 1, NULL, 0},     {"--eps", NULL, 1, NULL, 0},
        {"--bx", NULL, 1, NULL, 0},      {"--by", NULL, 1, NULL, 0},
        {"--seed", NULL, 1, NULL, 0},    {"--kappa-const", NULL, 1, NULL, 0},
        {"--per-row", NULL, 1, NULL, 0}, {"--kind", NULL, 1, NULL, 0},
        {"--quiet", "-q", 0, NULL, 0},   {"--help", "-h", 0, NULL, 0},
        {"--band", NULL, 1, NULL, 0},    {"--dense", NULL, 1, NULL, 0},
    };
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[2];
    int rc;
    if (command_args("gen", gen_help, "expected KIND and N", argc, argv, defs, nd, pos, 2, &rc))
        return rc;
    static const char *const kinds[] = {"poisson1d",  "poisson2d",  "poisson3d", "diffusion2d",
                                        "convdiff2d", "aniso2d",    "random",    "arrow"};
    int kind = lookup_name("gen", pos[0], kinds, 8);
    if (kind < 0) return EXIT_BAD;
    long long N;
    long long maxN = kind == 0 || kind >= 6 ? 2000000000LL : kind == 2 ? 1290 : 46000;
    if (parse_int("N", pos[1], 1, maxN, &N)) return EXIT_BAD;
    const char *out = optval(defs, nd, "--out");
    if (!out) {
        err("gen: missing output file (-o A.mtx)");
        return EXIT_BAD;
    }
    /* Kind-specific options. */
    static const struct { const char *opt; int kind, kind2; } applies[] = {
        {"--eps", 5, -1},  {"--bx", 4, -1},      {"--by", 4, -1}, {"--kappa-const", 3, -1},
        {"--seed", 6, 7},  {"--per-row", 6, -1}, {"--kind", 6, -1},
        {"--band", 7, -1}, {"--dense", 7, -1},
    };
    for (size_t i = 0; i < sizeof applies / sizeof applies[0]; i++) {
        if (optseen(defs, nd, applies[i].opt) && applies[i].kind != kind && applies[i].kind2 != kind) {
            if (applies[i].kind2 >= 0)
                err("gen: %s applies to %s and %s only", applies[i].opt, kinds[applies[i].kind],
                    kinds[applies[i].kind2]);
            else
                err("gen: %s applies to %s only", applies[i].opt, kinds[applies[i].kind]);
            return EXIT_BAD;
        }
    }
    double eps = 0.01, bx = 10.0, by = 10.0, kconst = 0.0;
    long long seed = 1, per_row = 5, band = 2, ndense = 8;
    int rkind = 2;
    const char *s;
    if ((s = optval(defs, nd, "--eps"))) {
        if (parse_double("--eps", s, &eps)) return EXIT_BAD;
        if (!(eps > 0)) {
            err("--eps: must be > 0 (got %s)", s);
            return EXIT_BAD;
        }
    }
    if ((s = optval(defs, nd, "--bx")) && parse_double("--bx", s, &bx)) return EXIT_BAD;
    if ((s = optval(defs, nd, "--by")) && parse_double("--by", s, &by)) return EXIT_BAD;
    if ((s = optval(defs, nd, "--kappa-const"))) {
        if (parse_double("--kappa-const", s, &kconst)) return EXIT_BAD;
        if (!(kconst > 0)) {
            err("--kappa-const: must be > 0 (got %s)", s);
            return EXIT_BAD;
        }
    }
    if ((s = optval(defs, nd, "--seed")) && parse_int("--seed", s, 0, LLONG_MAX, &seed))
        return EXIT_BAD;
    if ((s = optval(defs, nd, "--per-row")) && parse_int("--per-row", s, 0, N, &per_row))
        return EXIT_BAD;
    if ((s = optval(defs, nd, "--band")) && parse_int("--band", s, 0, N, &band)) return EXIT_BAD;
    if ((s = optval(defs, nd, "--dense")) && parse_int("--dense", s, 0, N, &ndense)) return EXIT_BAD;
    if (kind == 7 && ndense > N) ndense = N;
    if ((s = optval(defs, nd, "--kind"))) {
        static const char *const rk[] = {"general", "symmetric", "spd"};
        rkind = lookup_name("--kind", s, rk, 3);
        if (rkind < 0) return EXIT_BAD;
    }

    sla_ctx *ctx = NULL;
    sla_matrix *A = NULL;
    double *kappa = NULL;
    sla_status st = SLA_OK;
    /* the output file is checked before any work */
    cli_output outs[1] = {{.opt = "--out", .path = out, .what = "the matrix", .kind = CLI_OUT_MATRIX}};
    if ((rc = cli_outputs_check(outs, 1, NULL, 0)) || (rc = new_ctx(0, &ctx))) {
        cli_outputs_free(outs, 1);
        return rc;
    }
    double t = now_seconds();
    switch (kind) {
    case 0: case 1: case 2:
        st = sla_gen_poisson(ctx, kind + 1, (sla_int)N, &A);
        break;
    case 3: {
        sla_int nc = (sla_int)(N + 1);
        kappa = xcalloc((size_t)nc * (size_t)nc, sizeof *kappa);
        if (!kappa) {
            rc = EXIT_INTERNAL;
            goto done;
        }
        double h = 1.0 / (double)(N + 1);
        for (sla_int bb = 0; bb < nc; bb++)
            for (sla_int a = 0; a < nc; a++) {
                double xc = (a + 0.5) * h, yc = (bb + 0.5) * h;
                kappa[bb * nc + a] =
                    kconst > 0 ? kconst : 1.0 + 0.5 * sin(2 * PI * xc) * sin(2 * PI * yc);
            }
        st = sla_gen_diffusion2d(ctx, (sla_int)N, kappa, &A);
        break;
    }
    case 4:
        st = sla_gen_convdiff2d(ctx, (sla_int)N, bx, by, &A);
        break;
    case 5:
        st = sla_gen_aniso2d(ctx, (sla_int)N, eps, &A);
        break;
    case 6:
        st = sla_gen_random(ctx, (sla_int)N, (sla_int)per_row, rkind, (uint64_t)seed, &A);
        break;
    case 7:
        st = sla_gen_arrow(ctx, (sla_int)N, (sla_int)ndense, (sla_int)band, (uint64_t)seed, &A);
        break;
    }
    if (st < 0) {
        rc = lib_fail(ctx, st, pos[0]);
        goto done;
    }
    outs[0].A = A;
    if ((rc = cli_outputs_write(ctx, outs, 1))) goto done;
    t = now_seconds() - t;
    if (!optseen(defs, nd, "--quiet"))
        printf("wrote %s: %s N = %lld, n = %lld, nnz = %lld (%.3f s)\n", out, kinds[kind], N,
               (long long)sla_matrix_nrows(A), (long long)sla_matrix_nnz(A), t);
    rc = EXIT_OK;
done:
    free(kappa);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
    cli_outputs_free(outs, 1);
    return rc;
}

/* ---- sla info ------------------------------------------------------- */

static const char info_help[] =
    "usage: sla info A.mtx [--json]\n"
    "\n"
    "Size and structure of a Matrix Market matrix: symmetry (relative\n"
    "tolerance 1e-12), structural symmetry, positive diagonal, diagonal\n"
    "dominance.\n";

static int cmd_info(int argc, char **argv)
{
    optdef defs[] = {{"--json", NULL, 0, NULL, 0}, {"--help", "-h", 0, NULL, 0}};
    const int nd = 2;
    const char *pos[1];
    int rc;
    if (command_args("info", info_help, "expected a matrix file", argc, argv, defs, nd, pos, 1,
                     &rc))
        return rc;
    sla_ctx *ctx = NULL;
    sla_matrix *A = NULL;
    rc = open_matrix(pos[0], 0, &ctx, &A);
    if (rc) goto done;
    sla_matrix_props p;
    sla_status st = sla_matrix_properties(ctx, A, 0, 1e-12, &p);
    if (st < 0) {
        rc = lib_fail(ctx, st, pos[0]);
        goto done;
    }
    long long nr = (long long)sla_matrix_nrows(A), nc = (long long)sla_matrix_ncols(A),
              nnz = (long long)sla_matrix_nnz(A);
#define TF(v) ((v) ? "true" : "false")
    if (optseen(defs, nd, "--json")) {
        printf("{\"file\":");
        json_string(stdout, pos[0]);
        printf(",\"n\":%lld,\"ncols\":%lld,\"nnz\":%lld,\"square\":%s,\"symmetric\":%s,"
               "\"structurally_symmetric\":%s,\"positive_diagonal\":%s,"
               "\"diagonally_dominant\":%s,\"symmetry_error\":",
               nr, nc, nnz, TF(p.square), TF(p.symmetric), TF(p.structurally_symmetric),
               TF(p.positive_diagonal), TF(p.diagonally_dominant));
        json_number(stdout, "%.6e", p.symmetry_error);
        printf(",\"max_abs\":");
        json_number(stdout, "%.17g", p.max_abs);
        printf("}\n");
    } else {
#define YN(v) ((v) ? "yes" : "no")
        printf("%s: %lld x %lld, nnz %lld (%.2f per row)\n", pos[0], nr, nc, nnz,
               nr ? (double)nnz / (double)nr : 0.0);
        if (p.square) {
            printf("  symmetric              %s (relative error %.3e)\n", YN(p.symmetric),
                   p.symmetry_error);
            printf("  structurally symmetric %s\n", YN(p.structurally_symmetric));
            printf("  positive diagonal      %s\n", YN(p.positive_diagonal));
            printf("  diagonally dominant    %s\n", YN(p.diagonally_dominant));
        } else {
            printf("  not square\n");
        }
        printf("  max |a_ij|             %.6g\n", p.max_abs);
#undef YN
    }
#undef TF
    rc = EXIT_OK;
done:
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
    return rc;
}

/* ---- sla demo ------------------------------------------------------- */

static const char demo_help[] =
    "usage: sla demo [inverse|poisson] [options]\n"
    "\n"
    "  sla demo                  the inverse demo with its defaults, then the Poisson\n"
    "                            demo with its defaults (what 'make run' runs)\n"
    "  sla demo inverse [opts]   recover a conductivity field by gradient descent\n"
    "                            through the differentiable solve (see\n"
    "                            'sla demo inverse --help')\n"
    "  sla demo poisson [opts]   the Poisson demo alone; options without a\n"
    "                            subcommand also run it alone:\n"
    "\n"
    "      [--n N] [--method M] [--precond P] [--rtol R] [--threads T]\n"
    "\n"
    "Poisson demo: solve the 2D Poisson problem (N x N interior grid, default\n"
    "N = 256) with b = h^2 * ones, differentiate L = sum(x) with one adjoint\n"
    "solve, and check dL/db and dL/dA at one entry each against central finite\n"
    "differences (perturb, re-solve, compare). Defaults: method auto with no\n"
    "preconditioner (auto dispatch chooses a direct or a Krylov solver and the\n"
    "report's note says which and why), rtol 1e-12.\n";

static double vsum(const double *v, sla_int n)
{
    double s = 0.0;
    for (sla_int i = 0; i < n; i++) s += v[i];
    return s;
}

static int demo_solve(sla_ctx *ctx, sla_solver *S, sla_int n, const double *b, double *x,
                      double *L, const char *what)
{
    sla_solve_info inf;
    sla_status st = sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &inf);
    if (st < 0) return lib_fail(ctx, st, what);
    if (!inf.converged) {
        char r[48];
        reason_string(inf.reason, r, sizeof r);
        err("demo: %s did not converge (%s)", what, r);
        return EXIT_NOCONV;
    }
    *L = vsum(x, n);
    return 0;
}

static int demo_poisson(int argc, char **argv, int start)
{
    optdef defs[] = {
        {"--n", "-N", 1, NULL, 0},       {"--method", NULL, 1, NULL, 0},
        {"--precond", NULL, 1, NULL, 0}, {"--rtol", NULL, 1, NULL, 0},
        {"--threads", NULL, 1, NULL, 0}, {"--help", "-h", 0, NULL, 0},
    };
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[1];
    int npos = 0;
    int rc = parse_args("demo", argc, argv, start, defs, nd, pos, 0, &npos);
    if (rc) return rc;
    if (optseen(defs, nd, "--help")) {
        fputs(demo_help, stdout);
        return EXIT_OK;
    }
    long long N = 256, threads = 0;
    sla_solver_options opts;
    sla_solver_options_default(&opts);
    opts.method = SLA_METHOD_AUTO;
    opts.precond = SLA_PRECOND_NONE;
    opts.rtol = 1e-12;
    int precond_given = 0;
    const char *s;
    if ((s = optval(defs, nd, "--n")) && parse_int("--n", s, 2, 4000, &N)) return EXIT_BAD;
    if (opt_threads(defs, nd, &threads)) return EXIT_BAD;
    if ((s = optval(defs, nd, "--method"))) {
        int k = lookup_name("--method", s, method_names, N_METHODS);
        if (k < 0) return EXIT_BAD;
        opts.method = method_values[k];
    }
    if ((s = optval(defs, nd, "--precond"))) {
        int k = lookup_name("--precond", s, precond_names, N_PRECONDS);
        if (k < 0) return EXIT_BAD;
        opts.precond = precond_values[k];
        precond_given = 1;
    }
    if ((s = optval(defs, nd, "--rtol"))) {
        if (parse_double("--rtol", s, &opts.rtol)) return EXIT_BAD;
        if (!(opts.rtol > 0)) {
            err("--rtol: must be > 0 (got %s)", s);
            return EXIT_BAD;
        }
    }

    sla_ctx *ctx = NULL;
    sla_matrix *A = NULL, *Ap = NULL;
    sla_solver *S = NULL, *Sp = NULL;
    double *b = NULL, *x = NULL, *gx = NULL, *gb = NULL, *gA = NULL, *bp = NULL, *xp = NULL,
           *vals = NULL;
    sla_int *colind = NULL;
    sla_status st;
    if ((rc = new_ctx(threads, &ctx))) return rc;

    double t = now_seconds();
    st = sla_gen_poisson(ctx, 2, (sla_int)N, &A);
    if (st < 0) {
        rc = lib_fail(ctx, st, "poisson2d");
        goto done;
    }
    t = now_seconds() - t;
    const sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    const double h = 1.0 / (double)(N + 1);
    printf("sla %s demo: 2D Poisson, 5-point stencil, N = %lld interior points per side\n",
           sla_version(), N);
    printf("  n = %lld unknowns, nnz = %lld, generated in %.3f s\n", (long long)n,
           (long long)nnz, t);
    printf("  b = h^2 * ones (h = 1/%lld), x0 = 0, rtol = %.0e, threads = %d\n", N + 1,
           opts.rtol, sla_ctx_threads(ctx));

    b = xcalloc((size_t)n, sizeof *b);
    x = xcalloc((size_t)n, sizeof *x);
    gx = xcalloc((size_t)n, sizeof *gx);
    gb = xcalloc((size_t)n, sizeof *gb);
    gA = xcalloc((size_t)nnz, sizeof *gA);
    bp = xcalloc((size_t)n, sizeof *bp);
    xp = xcalloc((size_t)n, sizeof *xp);
    vals = xcalloc((size_t)nnz, sizeof *vals);
    colind = xcalloc((size_t)nnz, sizeof *colind);
    if (!b || !x || !gx || !gb || !gA || !bp || !xp || !vals || !colind) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    for (sla_int i = 0; i < n; i++) {
        b[i] = h * h;
        gx[i] = 1.0;
    }

    st = sla_solver_create(ctx, A, &opts, &S);
    if (st == SLA_ERR_NOT_SPD && !precond_given) {
        printf("  note: ic0 failed (%s); falling back to jacobi\n", sla_ctx_message(ctx));
        opts.precond = SLA_PRECOND_JACOBI;
        st = sla_solver_create(ctx, A, &opts, &S);
    }
    if (st < 0) {
        rc = lib_fail(ctx, st, "demo");
        goto done;
    }

    /* Forward solve. */
    sla_solve_info fi, ai;
    char reason[48];
    st = sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &fi);
    if (st < 0) {
        rc = lib_fail(ctx, st, "demo solve");
        goto done;
    }
    reason_string(fi.reason, reason, sizeof reason);
    const double L = vsum(x, n);
    printf("\nforward solve  A x = b\n");
    printf("  method %s, precond %s, backend %s\n", fi.method, fi.precond, fi.backend);
    printf("  iterations %lld, residual %.3e (true, relative), reason %s\n",
           (long long)fi.iterations, fi.residual, reason);
    printf("  setup %.4f s, solve %.4f s\n", sla_solver_setup_seconds(S), fi.solve_seconds);
    if (fi.note[0]) printf("  note: %s\n", fi.note);
    printf("  L = sum(x) = %.12g, max x = %.6g (at the grid centre)\n", L,
           x[(N / 2) * N + N / 2]);

    /* Adjoint solve: gx = dL/dx = ones. */
    t = now_seconds();
    st = sla_solver_solve_vjp(ctx, S, 0, 1, x, n, gx, n, gb, n, gA, &ai);
    t = now_seconds() - t;
    if (st < 0) {
        rc = lib_fail(ctx, st, "demo adjoint");
        goto done;
    }
    reason_string(ai.reason, reason, sizeof reason);
    printf("\nadjoint solve  A^T lambda = dL/dx = ones  (VJP of L = sum(x))\n");
    printf("  iterations %lld, residual %.3e, reason %s, %.4f s (total VJP)\n",
           (long long)ai.iterations, ai.residual, reason, t);
    printf("  dL/db = lambda, dL/dA = -lambda x^T on the %lld stored entries\n",
           (long long)nnz);
    if (!fi.converged || !ai.converged) {
        err("demo: %s solve did not converge", fi.converged ? "adjoint" : "forward");
        rc = EXIT_NOCONV;
        goto done;
    }

    /* Finite-difference spot checks at the grid centre. */
    const sla_int i = (N / 2) * N + N / 2;
    const sla_int *rowptr = sla_matrix_rowptr(A);
    sla_matrix_get_colind(A, colind);
    sla_int kd = -1;
    for (sla_int p = rowptr[i]; p < rowptr[i + 1]; p++)
        if (colind[p] == i) kd = p;
    if (kd < 0) {
        err("demo: row %lld has no diagonal entry", (long long)i);
        rc = EXIT_INTERNAL;
        goto done;
    }
    printf("\nfinite-difference check (central differences, each a fresh re-solve)\n");
    double tfd = now_seconds();

    /* dL/db_i: L is linear in b, so a step the size of b_i is safe. */
    double Lp, Lm, db = h * h;
    memcpy(bp, b, (size_t)n * sizeof *bp);
    bp[i] = b[i] + db;
    if ((rc = demo_solve(ctx, S, n, bp, xp, &Lp, "FD solve (b + db)"))) goto done;
    bp[i] = b[i] - db;
    if ((rc = demo_solve(ctx, S, n, bp, xp, &Lm, "FD solve (b - db)"))) goto done;
    const double fd_b = (Lp - Lm) / (2 * db);
    const double rel_b = fabs(fd_b - gb[i]) / fmax(fabs(gb[i]), 1e-300);

    /* dL/dA_ii: perturbing a diagonal entry keeps A symmetric positive
     * definite, so the same method and preconditioner apply. */
    st = sla_matrix_copy(ctx, A, &Ap);
    if (st < 0) {
        rc = lib_fail(ctx, st, "demo");
        goto done;
    }
    memcpy(vals, sla_matrix_values(A, 0), (size_t)nnz * sizeof *vals);
    const double aii = vals[kd], da = 1e-4 * fabs(aii);
    vals[kd] = aii + da;
    st = sla_matrix_set_values(ctx, Ap, 0, vals);
    if (st >= 0) st = sla_solver_create(ctx, Ap, &opts, &Sp);
    if (st < 0) {
        rc = lib_fail(ctx, st, "demo");
        goto done;
    }
    if ((rc = demo_solve(ctx, Sp, n, b, xp, &Lp, "FD solve (A + dA)"))) goto done;
    vals[kd] = aii - da;
    st = sla_matrix_set_values(ctx, Ap, 0, vals);
    if (st >= 0) st = sla_solver_refresh(ctx, Sp);
    if (st < 0) {
        rc = lib_fail(ctx, st, "demo");
        goto done;
    }
    if ((rc = demo_solve(ctx, Sp, n, b, xp, &Lm, "FD solve (A - dA)"))) goto done;
    const double fd_a = (Lp - Lm) / (2 * da);
    const double rel_a = fabs(fd_a - gA[kd]) / fmax(fabs(gA[kd]), 1e-300);
    tfd = now_seconds() - tfd;

    /* The solves are accurate to about rtol * cond(A) ~ rtol * (N+1)^2. */
    const double tol = fmax(1e-6, 1e3 * opts.rtol * (double)(N + 1) * (double)(N + 1));
    char lb[64], la[64];
    snprintf(lb, sizeof lb, "dL/db[%lld]", (long long)i);
    snprintf(la, sizeof la, "dL/dA[%lld,%lld]", (long long)i, (long long)i);
    printf("  %-20s adjoint %+.10e  fd %+.10e  rel. diff %.2e  (step %.1e)\n", lb, gb[i], fd_b,
           rel_b, db);
    printf("  %-20s adjoint %+.10e  fd %+.10e  rel. diff %.2e  (step %.1e)\n", la, gA[kd], fd_a,
           rel_a, da);
    printf("  4 re-solves in %.3f s; tolerance %.1e\n", tfd, tol);
    if (rel_b <= tol && rel_a <= tol) {
        printf("\nresult: OK (adjoint gradients match finite differences)\n");
        rc = EXIT_OK;
    } else {
        printf("\nresult: FAILED (adjoint and finite differences disagree)\n");
        err("demo: finite-difference check failed (rel. diff %.2e / %.2e > %.1e)", rel_b,
            rel_a, tol);
        rc = EXIT_INTERNAL;
    }

done:
    fflush(stdout);
    sla_solver_destroy(&Sp);
    sla_solver_destroy(&S);
    sla_matrix_destroy(&Ap);
    sla_matrix_destroy(&A);
    free(b);
    free(x);
    free(gx);
    free(gb);
    free(gA);
    free(bp);
    free(xp);
    free(vals);
    free(colind);
    sla_ctx_destroy(&ctx);
    return rc;
}

/* sla demo: no arguments runs the inverse demo and then the Poisson demo;
 * "inverse" / "poisson" runs one; options alone run the Poisson demo. */
static int cmd_demo(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[2], "inverse")) return sla_demo_inverse(argc, argv, 3);
    if (argc > 2 && !strcmp(argv[2], "poisson")) return demo_poisson(argc, argv, 3);
    if (argc > 2) return demo_poisson(argc, argv, 2);
    int rc = sla_demo_inverse(argc, argv, 2);
    printf("\n");
    fflush(stdout);
    int rc2 = demo_poisson(argc, argv, 2);
    return rc ? rc : rc2;
}

/* ---- sla nlsolve ------------------------------------------------------ */

static const char nlsolve_help[] =
    "usage: sla nlsolve bratu2d N --mu M [options]\n"
    "\n"
    "Solve the Bratu problem -Laplace u = mu e^u on the unit square (N x N\n"
    "interior grid, 5-point, Dirichlet 0) and the gradient of L = sum(u) with\n"
    "respect to mu by the implicit-function theorem (one adjoint solve).\n"
    "\n"
    "options:\n"
    "  --mu M            the parameter (solutions exist up to about 6.808)\n"
    "  --method KIND     newton (default, backtracking line search), anderson, picard\n"
    "  --rtol R          ||F(u)|| <= max(atol, rtol ||F(u0)||) (default 1e-10)\n"
    "  --atol A          (default 0)\n"
    "  --maxiter K       nonlinear iterations (default 50 newton, 1000 others)\n"
    "  --depth M         Anderson depth (default 5)\n"
    "  --beta B          Anderson/Picard mixing in (0, 1] (default 1)\n"
    "  --no-line-search  plain Newton steps\n"
    "  --chord R         keep the Newton factorization while each step reduces ||F||\n"
    "                    to R times its value (0 < R < 1; default: refactor every step)\n"
    "  --linear OPTS     linear solver options, e.g. method=cg,precond=amg,rtol=1e-10\n"
    "                    (default: auto)\n"
    "  --opts OPTS       nonlinear options as key=value,... (ls_alpha, ls_shrink,\n"
    "                    ls_maxsteps, stol, adjoint_reuse, ...; after the flags above)\n"
    "  --json            one JSON object: iterations, residual, converged, reason, L,\n"
    "                    dL_dmu, seconds (forward + gradient) and details\n"
    "\n"
    "Exit status: 0 converged, 2 bad input, 3 not converged (dL_dmu is null).\n";

static int cmd_nlsolve(int argc, char **argv)
{
    optdef defs[] = {{"--mu", NULL, 1, NULL, 0},      {"--method", NULL, 1, NULL, 0},
                     {"--rtol", NULL, 1, NULL, 0},    {"--atol", NULL, 1, NULL, 0},
                     {"--maxiter", NULL, 1, NULL, 0}, {"--depth", NULL, 1, NULL, 0},
                     {"--beta", NULL, 1, NULL, 0},    {"--no-line-search", NULL, 0, NULL, 0},
                     {"--linear", NULL, 1, NULL, 0},  {"--json", NULL, 0, NULL, 0},
                     {"--chord", NULL, 1, NULL, 0},   {"--opts", NULL, 1, NULL, 0},
                     {"--help", "-h", 0, NULL, 0}};
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[2];
    int rc;
    if (command_args("nlsolve", nlsolve_help,
                     "expected a problem and a grid size, e.g. 'sla nlsolve bratu2d 128 --mu 1'",
                     argc, argv, defs, nd, pos, 2, &rc))
        return rc;
    static const char *const kinds[] = {"bratu2d"};
    if (lookup_name("problem", pos[0], kinds, 1) < 0) return EXIT_BAD;
    long long N = 0;
    if ((rc = parse_int("N", pos[1], 1, 46340, &N))) return rc;
    if (!optseen(defs, nd, "--mu")) {
        err("nlsolve: --mu is required");
        return EXIT_BAD;
    }
    double mu = 0;
    if ((rc = parse_double("--mu", optval(defs, nd, "--mu"), &mu))) return rc;

    sla_nl_options o;
    sla_nl_options_default(&o);
    static const char *const nl_methods[] = {"newton", "anderson", "picard"};
    static const sla_nl_method nl_values[] = {SLA_NL_NEWTON, SLA_NL_ANDERSON, SLA_NL_PICARD};
    const char *s;
    if ((s = optval(defs, nd, "--method"))) {
        int k = lookup_name("--method", s, nl_methods, 3);
        if (k < 0) return EXIT_BAD;
        o.method = nl_values[k];
    }
    if ((s = optval(defs, nd, "--rtol")) && (rc = parse_double("--rtol", s, &o.rtol))) return rc;
    if ((s = optval(defs, nd, "--atol")) && (rc = parse_double("--atol", s, &o.atol))) return rc;
    if ((s = optval(defs, nd, "--beta")) && (rc = parse_double("--beta", s, &o.beta))) return rc;
    if ((s = optval(defs, nd, "--chord")) && (rc = parse_double("--chord", s, &o.chord_ratio)))
        return rc;
    long long v;
    if ((s = optval(defs, nd, "--maxiter"))) {
        if ((rc = parse_int("--maxiter", s, 1, 100000000, &v))) return rc;
        o.maxiter = v;
    }
    if ((s = optval(defs, nd, "--depth"))) {
        if ((rc = parse_int("--depth", s, 1, 100, &v))) return rc;
        o.anderson_depth = (int)v;
    }
    if (optseen(defs, nd, "--no-line-search")) o.line_search = false;
    int json = optseen(defs, nd, "--json");

    sla_ctx *ctx = NULL;
    if ((rc = new_ctx(0, &ctx))) return rc;
    sla_nl_builtin *B = NULL;
    sla_nlsolver *S = NULL;
    double *u = NULL, *gu = NULL;
    sla_status st;
    if ((s = optval(defs, nd, "--linear")) &&
        (st = sla_solver_options_parse(ctx, s, &o.linear)) != SLA_OK) {
        rc = lib_fail(ctx, st, "--linear");
        goto done;
    }
    if ((s = optval(defs, nd, "--opts")) && (st = sla_nl_options_parse(ctx, s, &o)) != SLA_OK) {
        rc = lib_fail(ctx, st, "--opts");
        goto done;
    }
    double t0 = now_seconds();
    if ((st = sla_nl_bratu2d(ctx, (sla_int)N, SLA_NL_BRATU_MU, &B)) ||
        (st = sla_nlsolver_create(ctx, sla_nl_builtin_problem(B), &o, &S))) {
        rc = lib_fail(ctx, st, "nlsolve");
        goto done;
    }
    sla_int n = (sla_int)(N * N);
    u = xcalloc((size_t)n, sizeof *u);
    gu = xcalloc((size_t)n, sizeof *gu);
    if (!u || !gu) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    sla_nl_info info;
    st = sla_nlsolver_solve(ctx, S, &mu, u, &info);
    if (st < 0) {
        rc = lib_fail(ctx, st, "nlsolve");
        goto done;
    }
    char why[256] = "";
    if (st != SLA_OK) snprintf(why, sizeof why, "%s", sla_ctx_message(ctx));
    double t_fwd = now_seconds() - t0, t_grad = 0.0, L = 0.0, dmu = NAN;
    for (sla_int i = 0; i < n; i++) L += u[i];
    sla_solve_info ai;
    memset(&ai, 0, sizeof ai);
    if (st == SLA_OK) {
        double t1 = now_seconds();
        for (sla_int i = 0; i < n; i++) gu[i] = 1.0; /* dL/du for L = sum(u) */
        sla_status sg = sla_nlsolver_solve_vjp(ctx, S, gu, &dmu, NULL, &ai);
        t_grad = now_seconds() - t1;
        if (sg < 0) {
            rc = lib_fail(ctx, sg, "nlsolve gradient");
            goto done;
        }
        if (sg != SLA_OK) {
            snprintf(why, sizeof why, "%s", sla_ctx_message(ctx));
            st = sg;
        }
    }
    if (json) {
        printf("{\"problem\":\"bratu2d\",\"N\":%lld,\"n\":%lld,\"mu\":", N, (long long)n);
        json_number(stdout, "%.17g", mu);
        printf(",\"method\":");
        json_string(stdout, info.method);
        printf(",\"iterations\":%lld,\"residual\":", (long long)info.iterations);
        json_number(stdout, "%.6e", info.residual);
        printf(",\"residual0\":");
        json_number(stdout, "%.6e", info.residual0);
        printf(",\"converged\":%s,\"reason\":", info.converged ? "true" : "false");
        json_string(stdout, sla_nl_reason_name(info.reason));
        printf(",\"L\":");
        json_number(stdout, "%.17g", L);
        printf(",\"dL_dmu\":");
        json_number(stdout, "%.17g", dmu);
        printf(",\"seconds\":%.6f,\"forward_seconds\":%.6f,\"gradient_seconds\":%.6f",
               t_fwd + t_grad, t_fwd, t_grad);
        printf(",\"linear_solves\":%lld,\"chord_steps\":%lld,\"line_search_cuts\":%lld,"
               "\"linear\":{\"method\":",
               (long long)info.linear_solves, (long long)info.chord_steps,
               (long long)info.line_search_cuts);
        json_string(stdout, info.linear.method);
        printf(",\"backend\":");
        json_string(stdout, info.linear.backend);
        printf("},\"adjoint_note\":");
        json_string(stdout, ai.note);
        printf(",\"history\":[");
        for (sla_int k = 0; k < info.history_len; k++) {
            if (k) putchar(',');
            json_number(stdout, "%.6e", info.history[k]);
        }
        printf("],\"message\":");
        json_string(stdout, why);
        printf("}\n");
    } else {
        printf("bratu2d N = %lld (n = %lld), mu = %g: %s, %lld iterations, ||F|| = %.3e "
               "(from %.3e), %s\n",
               N, (long long)n, mu, info.method, (long long)info.iterations, info.residual,
               info.residual0, sla_nl_reason_name(info.reason));
        if (why[0]) printf("  %s\n", why);
        printf("  L = sum(u) = %.12g\n", L);
        if (isfinite(dmu)) printf("  dL/dmu = %.12g\n", dmu);
        printf("  forward %.3f s, gradient %.3f s\n", t_fwd, t_grad);
    }
    rc = st == SLA_OK ? EXIT_OK : EXIT_NOCONV;
done:
    free(u);
    free(gu);
    sla_nlsolver_destroy(&S);
    sla_nl_builtin_destroy(&B);
    sla_ctx_destroy(&ctx);
    return rc;
}

/* ---- main ----------------------------------------------------------- */

/* ---- sla eigsh / sla logdet ------------------------------------------ */

static const char eigsh_help[] =
    "usage: sla eigsh A.mtx -k K [options]\n"
    "\n"
    "k eigenpairs of a symmetric matrix by ARPACK's implicitly restarted Lanczos,\n"
    "eigenvalues in ascending order, each with its residual ||A v - l v||.\n"
    "\n"
    "  -k K, --k K        number of eigenpairs (default 6)\n"
    "  --which W          LA|SA|LM|SM: largest/smallest algebraic, largest/smallest\n"
    "                     magnitude (default LM). SA runs shift-invert below the\n"
    "                     spectrum (sigma certified by a trial Cholesky), SM around\n"
    "                     0, LA plain Lanczos and, if that stalls, shift-invert above\n"
    "                     the spectrum; plain Lanczos where A cannot be factored.\n"
    "                     The report's method and note name the path and sigma.\n"
    "  --sigma S          shift-invert around S: the eigenvalues nearest S (with\n"
    "                     --which LA/SA: nearest above/below S); S moves off an\n"
    "                     eigenvalue by 1e-8 ||A|| when A - S I is singular\n"
    "  --method M         factorization of A - sigma I: auto|cholesky|ldlt|lu|umfpack|\n"
    "                     klu|superlu (default auto: cholesky, then ldlt, then lu)\n"
    "  --memory-limit B   bytes the factorization may use (default 0 = half the\n"
    "                     available memory); past it SA uses LOBPCG, LA and SM\n"
    "                     plain Lanczos\n"
    "  --tol T            ARPACK's relative accuracy (default 0 = machine epsilon)\n"
    "  --ncv M            Lanczos basis size (default max(2k+1, 20))\n"
    "  --maxiter K        ARPACK restarts (default max(1000, 10 n))\n"
    "  --out V.mtx        write the eigenvectors (n x k Matrix Market array;\n"
    "                     checked first, replaced atomically; not written when\n"
    "                     they hold NaN/Inf: \"files_written\":false, exit 3)\n"
    "  --threads T        number of threads (0 = OpenMP default)\n"
    "  --json             print one JSON object with the report\n"
    "\n"
    "Exit status: 0 converged, 2 bad input, 3 not converged.\n";

static int cmd_eigsh(int argc, char **argv)
{
    optdef defs[] = {
        {"--k", "-k", 1, NULL, 0},       {"--which", NULL, 1, NULL, 0},  {"--sigma", NULL, 1, NULL, 0},
        {"--method", NULL, 1, NULL, 0},  {"--tol", NULL, 1, NULL, 0},    {"--ncv", NULL, 1, NULL, 0},
        {"--maxiter", NULL, 1, NULL, 0}, {"--out", "-o", 1, NULL, 0},    {"--threads", NULL, 1, NULL, 0},
        {"--json", NULL, 0, NULL, 0},    {"--help", "-h", 0, NULL, 0},    {"--memory-limit", NULL, 1, NULL, 0},
    };
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[1];
    int rc;
    if (command_args("eigsh", eigsh_help, "expected a matrix file", argc, argv, defs, nd, pos, 1,
                     &rc))
        return rc;
    sla_eigsh_options o;
    sla_eigsh_options_default(&o);
    const char *s;
    long long v = 0, threads = 0;
    if ((s = optval(defs, nd, "--k"))) {
        if (parse_int("-k", s, 1, 1000000, &v)) return EXIT_BAD;
        o.k = v;
    }
    if ((s = optval(defs, nd, "--which"))) {
        static const char *const wn[] = {"LA", "SA", "LM", "SM"};
        int w = lookup_name("--which", s, wn, 4);
        if (w < 0) return EXIT_BAD;
        o.which = (sla_eig_which)w;
    }
    if ((s = optval(defs, nd, "--sigma"))) {
        if (parse_double("--sigma", s, &o.sigma)) return EXIT_BAD;
        o.shift_invert = true;
    }
    if ((s = optval(defs, nd, "--method"))) {
        int m = lookup_name("--method", s, method_names, N_METHODS);
        if (m < 0) return EXIT_BAD;
        o.factor_method = method_values[m];
    }
    if ((s = optval(defs, nd, "--tol")) && parse_double("--tol", s, &o.tol)) return EXIT_BAD;
    if ((s = optval(defs, nd, "--memory-limit")) && parse_double("--memory-limit", s, &o.memory_limit))
        return EXIT_BAD;
    if ((s = optval(defs, nd, "--ncv"))) {
        if (parse_int("--ncv", s, 2, 100000, &v)) return EXIT_BAD;
        o.ncv = v;
    }
    if ((s = optval(defs, nd, "--maxiter"))) {
        if (parse_int("--maxiter", s, 1, 1000000000, &v)) return EXIT_BAD;
        o.maxiter = v;
    }
    if (opt_threads(defs, nd, &threads)) return EXIT_BAD;
    const int json = optseen(defs, nd, "--json");
    const char *out_path = optval(defs, nd, "--out");
    /* the output file is checked before any work and written at the end */
    cli_output outs[1] = {{.opt = "--out", .path = out_path, .what = "eigenvector", .kind = CLI_OUT_DENSE}};
    if ((rc = cli_outputs_check(outs, 1, (const char *const *)pos, 1))) {
        cli_outputs_free(outs, 1);
        return rc;
    }
    int files_written = 0;
    char files_note[256] = "";

    sla_ctx *ctx = NULL;
    sla_matrix *A = NULL;
    double *l = NULL, *V = NULL, *res = NULL;
    rc = open_matrix(pos[0], threads, &ctx, &A);
    if (rc) goto done;
    sla_int n = sla_matrix_nrows(A);
    l = xcalloc((size_t)o.k, sizeof *l);
    res = xcalloc((size_t)o.k, sizeof *res);
    V = xcalloc((size_t)n * (size_t)o.k, sizeof *V);
    if (!l || !res || !V) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    sla_eigsh_info info;
    double t0 = now_seconds();
    sla_status st = sla_eigsh(ctx, A, 0, &o, l, V, n, res, &info);
    double secs = now_seconds() - t0;
    if (st < 0) {
        rc = lib_fail(ctx, st, pos[0]);
        goto done;
    }
    int nonfinite = 0;
    if (out_path) { /* non-finite vectors (not converged) are reported, not written */
        outs[0].nrows = n;
        outs[0].ncols = o.k;
        outs[0].data = V;
        char why[200];
        if (cli_outputs_nonfinite(outs, 1, why, sizeof why) >= 0) {
            snprintf(files_note, sizeof files_note, "no file written: %s", why);
            nonfinite = 1;
        } else {
            if ((rc = cli_outputs_write(ctx, outs, 1))) goto done;
            files_written = 1;
        }
    }
    if (json) {
        printf("{\"n\":%lld,\"nnz\":%lld,\"k\":%lld,\"which\":", (long long)n, (long long)sla_matrix_nnz(A),
               (long long)o.k);
        json_string(stdout, sla_eig_which_name(o.which));
        printf(",\"sigma\":");
        if (o.shift_invert) json_number(stdout, "%.17g", o.sigma);
        else printf("null");
        printf(",\"eigenvalues\":[");
        for (sla_int i = 0; i < o.k; i++) {
            if (i) printf(",");
            json_number(stdout, "%.17g", l[i]);
        }
        printf("],\"residuals\":[");
        for (sla_int i = 0; i < o.k; i++) {
            if (i) printf(",");
            json_number(stdout, "%.6e", res[i]);
        }
        printf("],\"converged\":%s,\"nconv\":%lld,\"method\":", info.converged ? "true" : "false",
               (long long)info.nconv);
        json_string(stdout, info.method);
        printf(",\"note\":");
        json_string(stdout, info.note);
        printf(",\"iterations\":%lld,\"operator_applications\":%lld,\"factor_seconds\":",
               (long long)info.iterations, (long long)info.nops);
        json_number(stdout, "%.6g", info.factor_seconds);
        printf(",\"seconds\":");
        json_number(stdout, "%.6g", secs);
        if (out_path) {
            printf(",\"files_written\":%s", files_written ? "true" : "false");
            if (!files_written) {
                printf(",\"files_note\":");
                json_string(stdout, files_note);
            }
        }
        printf("}\n");
    } else {
        printf("%s: n = %lld, %lld eigenpairs (%s%s), %s\n", pos[0], (long long)n, (long long)o.k,
               sla_eig_which_name(o.which), o.shift_invert ? ", shift-invert" : "", info.method);
        for (sla_int i = 0; i < o.k; i++) printf("  %3lld  %24.17g  residual %.3e\n", (long long)i, l[i], res[i]);
        printf("  %lld restarts, %lld operator applications, %.3f s (factorization %.3f s)\n",
               (long long)info.iterations, (long long)info.nops, secs, info.factor_seconds);
        if (info.note[0]) printf("  note: %s\n", info.note);
        if (files_written) printf("  wrote the eigenvectors to %s\n", out_path);
        if (out_path && !files_written) printf("  %s\n", files_note);
    }
    fflush(stdout);
    rc = EXIT_OK;
    if (st == SLA_NOT_CONVERGED) {
        err("%s", sla_ctx_message(ctx));
        rc = EXIT_NOCONV;
    }
    if (nonfinite) {
        err("%s", files_note);
        rc = EXIT_NOCONV;
    }
done:
    free(l);
    free(V);
    free(res);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
    cli_outputs_free(outs, 1);
    return rc;
}

static const char logdet_help[] =
    "usage: sla logdet A.mtx [options]\n"
    "\n"
    "sign and log|det A| from a sparse factorization (never det itself), and\n"
    "optionally its exact gradient d log|det A| / dA_ij = (A^-1)_ji on A's\n"
    "pattern (selected inversion on the Cholesky, LDL^T or LU factor).\n"
    "\n"
    "  --method M         auto|cholesky|ldlt|lu|slq (default auto: cholesky for symmetric\n"
    "                     matrices, ldlt if not positive definite, else lu; slq:\n"
    "                     stochastic Lanczos quadrature for SPD matrices, matrix-vector\n"
    "                     products only, with a standard error; its gradient is\n"
    "                     Hutchinson's estimate with CG solves)\n"
    "  --probes P         slq: Rademacher probes (default 32)\n"
    "  --steps M          slq: Lanczos steps per probe (default 50)\n"
    "  --seed S           slq: probe seed (default 1)\n"
    "  --grad-A G.mtx     write the gradient (coordinate, A's full stored pattern)\n"
    "  --threads T        number of threads (0 = OpenMP default)\n"
    "  --json             print one JSON object with the report\n"
    "\n"
    "A singular matrix gives sign 0 and log|det| = -inf (JSON null); its gradient\n"
    "does not exist (exit 2 with --grad-A). --grad-A is checked before any work\n"
    "and replaced atomically (temporary file, fsync, rename); a gradient with\n"
    "NaN/Inf is not written (\"files_written\":false, exit 3).\n";

/* The logdet gradient g on A's pattern to outs[0]: written (all checks
 * passed), or, when it holds Inf/NaN, not written with a note. Returns 0 or
 * the exit code of a failed write. */
static int write_gradient(sla_ctx *ctx, cli_output *outs, const sla_matrix *A, const double *g,
                          int *written, char *note, size_t len, int *nonfinite)
{
    outs[0].A = A;
    outs[0].data = g;
    char why[200];
    if (cli_outputs_nonfinite(outs, 1, why, sizeof why) >= 0) {
        snprintf(note, len, "no file written: %s", why);
        *nonfinite = 1;
        return 0;
    }
    int rc = cli_outputs_write(ctx, outs, 1);
    if (!rc) *written = 1;
    return rc;
}

static void print_files_json(const char *path, int written, const char *note)
{
    if (!path) return;
    printf(",\"files_written\":%s", written ? "true" : "false");
    if (!written) {
        printf(",\"files_note\":");
        json_string(stdout, note);
    }
}

static int cmd_logdet(int argc, char **argv)
{
    optdef defs[] = {
        {"--method", NULL, 1, NULL, 0}, {"--grad-A", NULL, 1, NULL, 0}, {"--threads", NULL, 1, NULL, 0},
        {"--json", NULL, 0, NULL, 0},   {"--help", "-h", 0, NULL, 0},    {"--probes", NULL, 1, NULL, 0},
        {"--steps", NULL, 1, NULL, 0},  {"--seed", NULL, 1, NULL, 0},
    };
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[1];
    int rc;
    if (command_args("logdet", logdet_help, "expected a matrix file", argc, argv, defs, nd, pos, 1,
                     &rc))
        return rc;
    static const char *const mn[] = {"auto", "cholesky", "ldlt", "lu", "slq"};
    sla_logdet_method m = SLA_LOGDET_AUTO;
    const char *s;
    long long threads = 0, lv = 0;
    int slq = 0;
    sla_slq_options so;
    sla_slq_options_default(&so);
    if ((s = optval(defs, nd, "--method"))) {
        int k = lookup_name("--method", s, mn, 5);
        if (k < 0) return EXIT_BAD;
        if (k == 4) slq = 1;
        else m = (sla_logdet_method)k;
    }
    if ((s = optval(defs, nd, "--probes"))) {
        if (parse_int("--probes", s, 1, 100000000, &lv)) return EXIT_BAD;
        so.probes = lv;
    }
    if ((s = optval(defs, nd, "--steps"))) {
        if (parse_int("--steps", s, 1, 10000, &lv)) return EXIT_BAD;
        so.lanczos_steps = lv;
    }
    if ((s = optval(defs, nd, "--seed"))) {
        if (parse_int("--seed", s, 0, 1000000000000LL, &lv)) return EXIT_BAD;
        so.seed = (uint64_t)lv;
    }
    if (opt_threads(defs, nd, &threads)) return EXIT_BAD;
    const char *gpath = optval(defs, nd, "--grad-A");
    const int json = optseen(defs, nd, "--json");
    /* the output file is checked before any work and written at the end */
    cli_output outs[1] = {{.opt = "--grad-A", .path = gpath, .what = "the gradient", .kind = CLI_OUT_PATTERN}};
    if ((rc = cli_outputs_check(outs, 1, (const char *const *)pos, 1))) {
        cli_outputs_free(outs, 1);
        return rc;
    }
    int files_written = 0, nonfinite = 0;
    char files_note[256] = "";

    sla_ctx *ctx = NULL;
    sla_matrix *A = NULL;
    double *g = NULL;
    rc = open_matrix(pos[0], threads, &ctx, &A);
    if (rc) goto done;
    if (gpath && !(g = xcalloc((size_t)sla_matrix_nnz(A), sizeof *g))) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    double sign = 0, lad = 0;
    sla_logdet_info info;
    double t0 = now_seconds();
    if (slq) {
        sla_slq_info si;
        double se = 0.0;
        sla_status st = sla_logdet_slq(ctx, A, 0, &so, &lad, &se, g, &si);
        double secs = now_seconds() - t0;
        if (st < 0) {
            rc = lib_fail(ctx, st, pos[0]);
            goto done;
        }
        if (gpath && (rc = write_gradient(ctx, outs, A, g, &files_written, files_note,
                                          sizeof files_note, &nonfinite)))
            goto done;
        if (json) {
            printf("{\"n\":%lld,\"nnz\":%lld,\"sign\":1,\"logabsdet\":", (long long)sla_matrix_nrows(A),
                   (long long)sla_matrix_nnz(A));
            json_number(stdout, "%.17g", lad);
            printf(",\"std_error\":");
            json_number(stdout, "%.6g", se);
            printf(",\"method\":\"slq\",\"grad_method\":\"%s\",\"probes\":%lld,\"lanczos_steps\":%lld,"
                   "\"seconds\":", gpath ? "hutchinson" : "", (long long)si.probes, (long long)si.lanczos_steps);
            json_number(stdout, "%.6g", secs);
            print_files_json(gpath, files_written, files_note);
            printf("}\n");
        } else {
            printf("%s: n = %lld, log det = %.10g +- %.3g (slq, %lld probes x %lld Lanczos steps), %.3f s\n",
                   pos[0], (long long)sla_matrix_nrows(A), lad, se, (long long)si.probes,
                   (long long)si.lanczos_steps, secs);
            if (files_written) printf("  wrote Hutchinson's gradient estimate to %s\n", gpath);
            if (nonfinite) printf("  %s\n", files_note);
        }
        fflush(stdout);
        rc = st == SLA_NOT_CONVERGED || nonfinite ? EXIT_NOCONV : EXIT_OK;
        if (st == SLA_NOT_CONVERGED) err("%s", sla_ctx_message(ctx));
        if (nonfinite) err("%s", files_note);
        goto done;
    }
    sla_status st = sla_logdet(ctx, A, 0, m, &sign, &lad, g, &info);
    double secs = now_seconds() - t0;
    bool singular = st == SLA_ERR_SINGULAR && sign == 0.0;
    if (st < 0 && !singular) {
        rc = lib_fail(ctx, st, pos[0]);
        goto done;
    }
    if (gpath && !singular &&
        (rc = write_gradient(ctx, outs, A, g, &files_written, files_note, sizeof files_note,
                             &nonfinite)))
        goto done;
    if (gpath && singular) snprintf(files_note, sizeof files_note, "no file written: singular matrix");
    if (json) {
        printf("{\"n\":%lld,\"nnz\":%lld,\"sign\":%g,\"logabsdet\":", (long long)sla_matrix_nrows(A),
               (long long)sla_matrix_nnz(A), sign);
        json_number(stdout, "%.17g", lad);
        printf(",\"singular\":%s,\"method\":", singular ? "true" : "false");
        json_string(stdout, info.method[0] ? info.method : sla_logdet_method_name(m));
        printf(",\"grad_method\":");
        json_string(stdout, info.grad_method);
        printf(",\"note\":");
        json_string(stdout, singular ? sla_ctx_message(ctx) : info.note);
        printf(",\"factor_seconds\":");
        json_number(stdout, "%.6g", info.factor_seconds);
        printf(",\"grad_seconds\":");
        json_number(stdout, "%.6g", info.grad_seconds);
        printf(",\"seconds\":");
        json_number(stdout, "%.6g", secs);
        print_files_json(gpath, files_written, files_note);
        printf("}\n");
    } else {
        printf("%s: n = %lld, sign %+g, log|det| = %.17g (%s)\n", pos[0], (long long)sla_matrix_nrows(A), sign,
               lad, info.method[0] ? info.method : sla_logdet_method_name(m));
        printf("  factorization %.3f s", info.factor_seconds);
        if (files_written) printf(", gradient (%s) %.3f s; wrote it to %s", info.grad_method,
                                  info.grad_seconds, gpath);
        printf("\n");
        if (nonfinite) printf("  %s\n", files_note);
        if (info.note[0]) printf("  note: %s\n", info.note);
    }
    fflush(stdout);
    if (singular) {
        err("%s", sla_ctx_message(ctx));
        rc = gpath ? EXIT_BAD : EXIT_OK;
    } else if (nonfinite) {
        err("%s", files_note);
        rc = EXIT_NOCONV;
    } else {
        rc = EXIT_OK;
    }
done:
    free(g);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
    cli_outputs_free(outs, 1);
    return rc;
}

/* ---- main ----------------------------------------------------------- */

static const char main_help[] =
    "usage: sla <command> [options]\n"
    "\n"
    "Differentiable sparse linear algebra from the command line.\n"
    "\n"
    "commands:\n"
    "  solve A.mtx        solve A x = b; --adjoint for the VJP (dL/db, dL/dA)\n"
    "  gen KIND N -o F    write a test matrix (poisson1d/2d/3d, diffusion2d,\n"
    "                     convdiff2d, aniso2d, random, arrow)\n"
    "  info A.mtx         size and structure of a matrix\n"
    "  eigsh A.mtx -k K   k eigenpairs of a symmetric matrix (ARPACK)\n"
    "  logdet A.mtx       sign and log|det A|, --grad-A for its gradient\n"
    "  nlsolve bratu2d N  nonlinear solve -Laplace u = mu e^u and dL/dmu (--mu M)\n"
    "  demo [KIND]        inverse: recover a conductivity field with Adam through\n"
    "                     the differentiable solve; poisson: 2D Poisson solve,\n"
    "                     adjoint, finite-difference check; no KIND: both\n"
    "\n"
    "  sla <command> --help   options of a command\n"
    "  sla --version          library version\n"
    "\n"
    "Exit status: 0 success, 2 bad input, 3 not converged, 1 other failure.\n"
    "Output files are checked before any work and written only on success,\n"
    "all or none, each replaced atomically; see README, \"Output files\".\n";

int main(int argc, char **argv)
{
    static const char *const cmds[] = {"solve", "gen", "info", "demo", "help", "eigsh", "logdet", "nlsolve"};
    if (argc < 2) {
        fputs(main_help, stderr);
        return EXIT_BAD;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        fputs(main_help, stdout);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V") || !strcmp(cmd, "version")) {
        printf("sla %s\n", sla_version());
        return EXIT_OK;
    }
#ifdef SLA_CLI_DIST
    if (!strcmp(cmd, "solve") && sla_cli_dist_wanted(argc, argv)) return sla_cli_dist_solve(argc, argv);
#endif
    if (!strcmp(cmd, "solve")) return cmd_solve(argc, argv);
    if (!strcmp(cmd, "gen")) return cmd_gen(argc, argv);
    if (!strcmp(cmd, "info")) return cmd_info(argc, argv);
    if (!strcmp(cmd, "demo")) return cmd_demo(argc, argv);
    if (!strcmp(cmd, "eigsh")) return cmd_eigsh(argc, argv);
    if (!strcmp(cmd, "logdet")) return cmd_logdet(argc, argv);
    if (!strcmp(cmd, "nlsolve")) return cmd_nlsolve(argc, argv);
    if (!strcmp(cmd, "help")) {
        const char *topic = argc > 2 ? argv[2] : "";
        if (!strcmp(topic, "solve")) fputs(solve_help, stdout);
        else if (!strcmp(topic, "gen")) fputs(gen_help, stdout);
        else if (!strcmp(topic, "info")) fputs(info_help, stdout);
        else if (!strcmp(topic, "demo")) fputs(demo_help, stdout);
        else if (!strcmp(topic, "eigsh")) fputs(eigsh_help, stdout);
        else if (!strcmp(topic, "logdet")) fputs(logdet_help, stdout);
        else if (!strcmp(topic, "nlsolve")) fputs(nlsolve_help, stdout);
        else fputs(main_help, stdout);
        return EXIT_OK;
    }
    if (cmd[0] == '-')
        err("unknown option '%s' (did you mean --help?)", cmd);
    else
        err("unknown command '%s' (did you mean %s?); see 'sla --help'", cmd,
            nearest(cmd, cmds, (int)(sizeof cmds / sizeof cmds[0])));
    return EXIT_BAD;
}
