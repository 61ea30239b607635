/* cli.h — what the command files of the `sla` tool share (tools/cli_util.c):
 * the command table's entry points and help texts, the option parser
 * (`optdef`, command_args), reading matrices and vectors, JSON report
 * helpers, "did you mean" through the library (cli_nearest), and
 * the translation of solver flags into the library's option strings
 * (cli_solver_flag), so that names and ranges are checked by the library.
 * Part of the CLI, not the library. Needs _POSIX_C_SOURCE defined before
 * the first system header (cli_util.h uses clock_gettime). */
#ifndef SLA_CLI_H
#define SLA_CLI_H

#include <sla.h>

#include "cli_output.h"
#include "cli_util.h"

#include <stddef.h>
#include <stdio.h>

/* ---- the commands (tools/cmd_*.c) ----------------------------------- */
/* (sla.h brings sla/complex.h and sla_complex: complex files run in solve,
 * info, logdet and eigsh; the other commands refuse them by name) */

int cmd_solve(int argc, char **argv);   /* cmd_solve.c */
int cmd_gen(int argc, char **argv);     /* cmd_gen.c */
int cmd_info(int argc, char **argv);    /* cmd_info.c */
int cmd_demo(int argc, char **argv);    /* cmd_demo.c */
int cmd_nlsolve(int argc, char **argv); /* cmd_nlsolve.c */
int cmd_eigsh(int argc, char **argv);   /* cmd_eig.c */
int cmd_eigs(int argc, char **argv);    /* cmd_eigs.c */
int cmd_logdet(int argc, char **argv);  /* cmd_logdet.c */
int cmd_methods(int argc, char **argv); /* cmd_methods.c */
int cmd_lsqr(int argc, char **argv);    /* cmd_lsq.c */
int cmd_svds(int argc, char **argv);    /* cmd_svds.c */
extern const char cli_svds_help[];

extern const char cli_solve_help[], cli_gen_help[], cli_info_help[], cli_demo_help[],
    cli_nlsolve_help[], cli_eigsh_help[], cli_logdet_help[], cli_methods_help[],
    cli_lsqr_help[], cli_eigs_help[];

/* ---- messages and memory -------------------------------------------- */

/* Report a failed library call: the context's message (which names the
 * file and line for I/O), else the status name. Returns the exit code. */
int lib_fail(sla_ctx *ctx, sla_status st, const char *what);

/* calloc, at least one element; NULL with a message when out of memory. */
void *xcalloc(size_t count, size_t size);

/* The name in names[0..count) nearest to word by the library's matcher
 * (sla_nearest_name, the one of C, CLI and Python), or `none` when no name
 * is close. */
const char *cli_nearest(const char *word, const char *const *names, int count, const char *none);

/* The index of s in names[0..count), or -1 with the message "OPT: unknown
 * value 'S' (did you mean N?)" ("unknown kind" when opt is not a flag). */
int lookup_name(const char *opt, const char *s, const char *const *names, int count);

/* ---- JSON and report helpers ---------------------------------------- */

/* A number as JSON (null when not finite). */
void json_number(FILE *f, const char *fmt, double v);

/* "SLA_CONVERGED_RTOL" -> "converged_rtol". */
void reason_string(sla_reason r, char *buf, size_t len);

/* [v0,v1,...] with json_number's fmt. */
void json_numbers(FILE *f, const char *fmt, const double *v, sla_int n);

/* ,"files_written":... and, when not written, "files_note" (nothing unless
 * `want`: the command was asked to write files). */
void print_files_json(int want, int written, const char *note);

/* ---- option parsing ------------------------------------------------- */

typedef struct optdef {
    const char *name;   /* "--rtol" */
    const char *alias;  /* "-o" or NULL */
    int has_arg;
    const char *value;  /* filled by parse_args */
    int seen;
} optdef;

const char *optval(optdef *defs, int ndefs, const char *name);
int optseen(optdef *defs, int ndefs, const char *name);

/* Parse argv[start..argc) against defs; positional arguments go to pos.
 * Returns 0 or EXIT_BAD (message printed). */
int parse_args(const char *cmd, int argc, char **argv, int start, optdef *defs, int ndefs,
               const char **pos, int maxpos, int *npos);

/* The preamble of every `sla CMD`: parse argv[2..) against defs, the
 * positional arguments into pos[0..npos). Returns 1 when the command is
 * over, with its exit status in *rc: --help printed (EXIT_OK), a bad
 * option, or not exactly npos positional arguments (EXIT_BAD, message
 * "CMD: USAGE (see 'sla CMD --help')"). Returns 0 to go on. */
int command_args(const char *cmd, const char *help, const char *usage, int argc, char **argv,
                 optdef *defs, int ndefs, const char **pos, int npos, int *rc);

/* --threads T (0, the default: OpenMP's choice). Returns 0 or EXIT_BAD. */
int opt_threads(optdef *defs, int ndefs, long long *threads);

/* The value of flag (e.g. "--rtol"), when given, as the library's solver
 * option key=value (e.g. "rtol=1e-8"), parsed into *opts by
 * sla_solver_options_parse: the library checks the name and the range.
 * Returns 0 (also when the flag was not given) or EXIT_BAD with the message
 * "sla CMD: FLAG: <the library's message>". */
int cli_solver_flag(sla_ctx *ctx, const char *cmd, optdef *defs, int ndefs, const char *flag,
                    const char *key, sla_solver_options *opts);

/* "key=value" of a flag's value into buf[0..len): 0, or EXIT_BAD with
 * "sla CMD: FLAG: 'VALUE' is not a valid value" when the value holds a ','
 * (it would smuggle in other options) or does not fit. */
int cli_flag_pair(const char *cmd, const char *flag, const char *key, const char *value,
                  char *buf, size_t len);

/* A library option parser refused flag's key=value: print "sla CMD: FLAG:
 * <the context's message, less its "option KEY: " prefix>", and " (got
 * 'VALUE')" when the message does not name the value. Returns the exit code
 * (EXIT_BAD; EXIT_INTERNAL when out of memory). */
int cli_flag_fail(sla_ctx *ctx, sla_status st, const char *cmd, const char *flag,
                  const char *key, const char *value);

/* A command-line flag and the library option key it sets. */
typedef struct cli_flag_key {
    const char *flag; /* "--ilut-fill" */
    const char *key;  /* "ilut_fill" */
} cli_flag_key;

/* cli_solver_flag for each of map[0..nmap), in that order; stops at the
 * first bad one. Returns 0 or its exit code. */
int cli_solver_flags(sla_ctx *ctx, const char *cmd, optdef *defs, int ndefs,
                     const cli_flag_key *map, int nmap, sla_solver_options *opts);

/* A library option parser (sla_eigsh_options_parse and friends) behind a
 * void pointer, so one loop serves every options struct. */
typedef sla_status (*cli_options_parse)(sla_ctx *ctx, const char *str, void *opts);

/* Each flag of map[0..nmap) that was given, as "key=value" through the
 * library's parser into opts, so names and ranges are the library's (one
 * set of messages for C, CLI and Python); stops at the first bad one.
 * Returns 0 or its exit code. */
int cli_option_flags(const char *cmd, optdef *defs, int ndefs, const cli_flag_key *map, int nmap,
                     cli_options_parse parse, void *opts);

/* ---- reading inputs ------------------------------------------------- */

int read_matrix(sla_ctx *ctx, const char *path, sla_matrix **A);

/* A new context using `threads` threads (0: OpenMP's choice). Returns 0
 * or EXIT_INTERNAL (message printed, *ctx NULL). */
int new_ctx(long long threads, sla_ctx **ctx);

/* new_ctx and the matrix of path read into it. Returns 0 or the exit
 * status (message printed); either way the caller destroys *ctx and *A
 * (NULL when not made). */
int open_matrix(const char *path, long long threads, sla_ctx **ctx, sla_matrix **A);

/* Read an array file and copy it into a malloc'd buffer. */
int read_dense(sla_ctx *ctx, const char *path, sla_int *nr, sla_int *nc, double **out);

/* The same for complex values (a real file: zero imaginary parts). */
int read_dense_z(sla_ctx *ctx, const char *path, sla_int *nr, sla_int *nc, sla_complex **out);

/* ---- complex values --------------------------------------------------- */

/* A command without a complex path given a complex matrix: prints "sla:
 * CMD: PATH holds complex values (DTYPE); CMD has no complex path (...)"
 * and returns EXIT_BAD; 0 for a real A. */
int cli_refuse_complex(const char *cmd, const char *path, const sla_matrix *A);

/* The worst of nrhs solve reports (the non-converged one with the largest
 * residual, else the largest residual), times summed; and a report as
 * JSON members "iterations":..,"residual":..,"converged":..,"reason":..
 * (cmd_solve.c). */
sla_solve_info cli_worst_info(const sla_solve_info *info, sla_int nrhs);
void cli_print_solve_info_json(FILE *f, const sla_solve_info *w);

/* What `sla solve` hands its complex path (cmd_zsolve.c). */
typedef struct cli_solve_args {
    const char *apath, *rhs_path, *adj_path, *out_path, *gb_path, *ga_path;
    int json;
} cli_solve_args;

/* `sla solve` on the complex matrix A (square, n > 0, read by ctx): the
 * right-hand sides, the solves with sla_zsolver_solve, the adjoint of
 * L = Re(sum conj(w_i) x_i), the report and the files outs[0..3) (--out,
 * --grad-b, --grad-A, checked by the caller). Returns the exit status. */
int cli_zsolve(sla_ctx *ctx, const sla_matrix *A, sla_solver_options *opts,
               const cli_solve_args *a, cli_output *outs);

#endif
