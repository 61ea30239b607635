/* cmd_methods.c — `sla methods`: the library's method registry as a table
 * or JSON. Every row comes from sla_method_at (name, kind, whether this
 * build has it, capability flags, aliases, backend, one-line summary);
 * nothing here names a method. Part of the CLI, not the library. */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#include "cli.h"

#include <stdio.h>
#include <string.h>

const char cli_methods_help[] =
    "usage: sla methods [--json]\n"
    "\n"
    "List the linear-solver methods and preconditioners of the library's\n"
    "registry: name, kind (auto, krylov, direct, precond), whether this build\n"
    "has it, its capabilities, its aliases, the backend that runs it and a\n"
    "one-line summary. The names are those of --method and --precond.\n"
    "\n"
    "  --json             print one JSON array, an object per entry\n"
    "\n"
    "Capabilities: symmetric (needs a symmetric matrix), spd (needs a\n"
    "symmetric positive definite one), transpose (applies A^-T or M^-T for\n"
    "the adjoint solve of a nonsymmetric system), complex, distributed (runs\n"
    "in `sla solve` under mpirun).\n";

static const char *kind_name(sla_method_kind k)
{
    switch (k) {
    case SLA_KIND_AUTO: return "auto";
    case SLA_KIND_KRYLOV: return "krylov";
    case SLA_KIND_DIRECT: return "direct";
    case SLA_KIND_PRECOND: return "precond";
    }
    return "unknown";
}

/* The SLA_CAP_* flags and their names in the listing. */
static const struct {
    unsigned flag;
    const char *name;
} caps[] = {
    {SLA_CAP_SYMMETRIC, "symmetric"}, {SLA_CAP_SPD, "spd"},
    {SLA_CAP_TRANSPOSE, "transpose"}, {SLA_CAP_COMPLEX, "complex"},
    {SLA_CAP_DISTRIBUTED, "distributed"},
};
#define N_CAPS ((int)(sizeof caps / sizeof caps[0]))

static void print_json(void)
{
    putchar('[');
    for (int i = 0; i < sla_method_count(); i++) {
        const sla_method_desc *e = sla_method_at(i);
        printf("%s{\"name\":", i ? "," : "");
        cli_json_string(stdout, e->name);
        printf(",\"kind\":");
        cli_json_string(stdout, kind_name(e->kind));
        printf(",\"available\":%s,\"capabilities\":[", e->available ? "true" : "false");
        for (int c = 0, k = 0; c < N_CAPS; c++)
            if (e->flags & caps[c].flag) printf("%s\"%s\"", k++ ? "," : "", caps[c].name);
        printf("],\"aliases\":[");
        for (int a = 0; e->aliases && e->aliases[a]; a++) {
            if (a) putchar(',');
            cli_json_string(stdout, e->aliases[a]);
        }
        printf("],\"backend\":");
        cli_json_string(stdout, e->backend ? e->backend : "");
        printf(",\"summary\":");
        cli_json_string(stdout, e->summary ? e->summary : "");
        putchar('}');
    }
    printf("]\n");
}

/* One entry in two lines: name, kind, availability, capabilities; then the
 * summary with the aliases and the backend. */
static void print_text(void)
{
    printf("%-10s %-8s %-12s %s\n", "name", "kind", "this build", "capabilities");
    for (int i = 0; i < sla_method_count(); i++) {
        const sla_method_desc *e = sla_method_at(i);
        char capl[96] = "";
        size_t at = 0;
        for (int c = 0; c < N_CAPS && at < sizeof capl; c++)
            if (e->flags & caps[c].flag)
                at += (size_t)snprintf(capl + at, sizeof capl - at, "%s%s", at ? " " : "",
                                       caps[c].name);
        printf("%-10s %-8s %-12s %s\n", e->name, kind_name(e->kind),
               e->available ? "available" : "unavailable", capl[0] ? capl : "-");
        printf("%-10s %s", "", e->summary ? e->summary : "");
        for (int a = 0; e->aliases && e->aliases[a]; a++)
            printf("%s%s", a ? ", " : "; aliases: ", e->aliases[a]);
        if (e->backend && e->backend[0]) printf("; backend: %s", e->backend);
        putchar('\n');
    }
}

int cmd_methods(int argc, char **argv)
{
    optdef defs[] = {{"--json", NULL, 0, NULL, 0}, {"--help", "-h", 0, NULL, 0}};
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[1];
    int rc;
    if (command_args("methods", cli_methods_help, "takes no arguments", argc, argv, defs, nd, pos,
                     0, &rc))
        return rc;
    if (optseen(defs, nd, "--json"))
        print_json();
    else
        print_text();
    return fflush(stdout) ? EXIT_INTERNAL : EXIT_OK;
}
