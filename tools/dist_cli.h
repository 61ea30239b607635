/* dist_cli.h — `sla solve` on several MPI ranks (tools/dist_cli.c). Part of
 * the CLI, not the library; compiled when sla has its distributed layer. */
#ifndef SLA_DIST_CLI_H
#define SLA_DIST_CLI_H

/* True when `sla solve` should run distributed: launched by mpirun/mpiexec
 * (OpenMPI's, MPICH's or PMIx's environment) or given --partition. */
int sla_cli_dist_wanted(int argc, char **argv);

/* The distributed `sla solve`; returns the CLI exit status, the same on
 * every rank. Initializes and finalizes MPI when nobody has. */
int sla_cli_dist_solve(int argc, char **argv);

#endif
