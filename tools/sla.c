/* sla — the command-line front end of the library: the command table,
 * the dispatch to one file per command (tools/cmd_*.c) and the top-level
 * help. The commands only translate: flags become the library's options,
 * checked by the library, and results become text, JSON or files.
 *
 *   sla solve A.mtx [options]     solve A x = b (and optionally its VJP)
 *   sla gen KIND N -o A.mtx       write a generated test matrix
 *   sla info A.mtx [--json]       structure of a matrix
 *   sla eigsh A.mtx -k K          k eigenpairs of a symmetric matrix
 *   sla eigs A.mtx -k K           k eigenvalues of a general matrix
 *   sla svds A.mtx -k K           k singular triplets of a rectangular matrix
 *   sla logdet A.mtx              sign and log|det A| (and its gradient)
 *   sla demo [inverse|poisson]    inverse problem; solve + adjoint + FD check
 *   sla nlsolve bratu2d N --mu M  nonlinear solve and its implicit gradient
 *   sla methods [--json]          the method registry: methods, preconditioners
 *   sla lsqr A.mtx [--damp L]     damped least squares (LSQR, LSMR) and its VJP
 *
 * Exit status: 0 success, 1 internal failure (out of memory, failed demo
 * check), 2 bad input or unusable matrix, 3 a solve did not converge.
 * The library never prints; this program does all the talking.
 */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#include "cli.h"
#ifdef SLA_CLI_DIST
#include "dist_cli.h"
#endif

#include <stdio.h>
#include <string.h>

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
    "  eigs A.mtx -k K    k eigenvalues of a general matrix (ARPACK)\n"
    "  svds A.mtx -k K    k largest/smallest singular triplets (ARPACK)\n"
    "  logdet A.mtx       sign and log|det A|, --grad-A for its gradient\n"
    "  lsqr A.mtx         damped least squares (LSQR/LSMR, any shape), --adjoint\n"
    "  nlsolve bratu2d N  nonlinear solve -Laplace u = mu e^u and dL/dmu (--mu M)\n"
    "  methods            the solver methods and preconditioners of this build\n"
    "                     (kind, capabilities, aliases; --json)\n"
    "  demo [KIND]        inverse: recover a conductivity field with Adam through\n"
    "                     the differentiable solve; poisson: 2D Poisson solve,\n"
    "                     adjoint, finite-difference check; no KIND: both\n"
    "\n"
    "  sla <command> --help   options of a command\n"
    "  sla --version          library version\n"
    "\n"
    "Exit status: 0 success, 2 bad input, 3 not converged, 1 other failure.\n"
    "Output files are checked before any work and written only on success,\n"
    "all or none, each replaced atomically; see docs/cli.md, \"Output files\".\n";

/* The commands, in the order "did you mean" prefers among equals. "help"
 * has no function: `sla help CMD` prints CMD's help. */
static const struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} commands[] = {
    {"solve", cmd_solve, cli_solve_help},       {"gen", cmd_gen, cli_gen_help},
    {"info", cmd_info, cli_info_help},          {"demo", cmd_demo, cli_demo_help},
    {"help", NULL, main_help},                  {"eigsh", cmd_eigsh, cli_eigsh_help},
    {"logdet", cmd_logdet, cli_logdet_help},    {"nlsolve", cmd_nlsolve, cli_nlsolve_help},
    {"methods", cmd_methods, cli_methods_help}, {"lsqr", cmd_lsqr, cli_lsqr_help},
    {"eigs", cmd_eigs, cli_eigs_help},          {"svds", cmd_svds, cli_svds_help},
};
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static const struct command *find_command(const char *name)
{
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(name, commands[i].name)) return &commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
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
    const struct command *c = find_command(cmd);
    if (c && c->run) return c->run(argc, argv);
    if (c) { /* sla help [CMD] */
        const struct command *topic = argc > 2 ? find_command(argv[2]) : NULL;
        fputs(topic ? topic->help : main_help, stdout);
        return EXIT_OK;
    }
    if (cmd[0] == '-') {
        err("unknown option '%s' (did you mean --help?)", cmd);
    } else {
        const char *names[N_COMMANDS];
        for (int i = 0; i < N_COMMANDS; i++) names[i] = commands[i].name;
        err("unknown command '%s' (did you mean %s?); see 'sla --help'", cmd,
            cli_nearest(cmd, names, N_COMMANDS, "--help"));
    }
    return EXIT_BAD;
}
