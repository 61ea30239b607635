/* demo_inverse.h — `sla demo inverse`: recover a conductivity field from
 * observations of the solution of -div(kappa grad u) = 1 with the
 * library's differentiable solve and Adam. Part of the CLI, not the
 * library (it prints and may run gnuplot). */
#ifndef SLA_DEMO_INVERSE_H
#define SLA_DEMO_INVERSE_H

/* The usage text of `sla demo inverse`. */
extern const char sla_demo_inverse_help[];

/* Run the demo with the options argv[start..argc). Returns the CLI's exit
 * status: 0 success, 1 internal failure (including a failed
 * --check-grad), 2 bad option. */
int sla_demo_inverse(int argc, char **argv, int start);

#endif
