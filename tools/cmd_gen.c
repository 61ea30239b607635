/* cmd_gen.c — `sla gen KIND N -o A.mtx`: write one of the library's
 * generated test matrices (Poisson, diffusion, convection-diffusion,
 * anisotropic, random, arrowhead, complex Helmholtz) to a Matrix Market
 * file, checked first and replaced atomically. Part of the CLI, not the
 * library. */
#define _POSIX_C_SOURCE 200809L

#include <sla.h>

#include "cli.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846

const char cli_gen_help[] =
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
    "  helmholtz2d N      complex symmetric 2-D Helmholtz, n = N^2: the 5-point\n"
    "                     Laplacian minus (k h)^2 (1 + i alpha) on the diagonal,\n"
    "                     h = 1/(N+1); --k K wavenumber (required, >= 0), --alpha A\n"
    "                     absorption (default 0); written \"coordinate complex\"\n"
    "\n"
    "  -o, --out A.mtx    output file (required; checked before the matrix is made,\n"
    "                     replaced atomically: temporary file, fsync, rename)\n"
    "  -q, --quiet        do not print a summary\n";

int cmd_gen(int argc, char **argv)
{
    optdef defs[] = {
        {"--out", "-o", 1, NULL, 0},     {"--eps", NULL, 1, NULL, 0},
        {"--bx", NULL, 1, NULL, 0},      {"--by", NULL, 1, NULL, 0},
        {"--seed", NULL, 1, NULL, 0},    {"--kappa-const", NULL, 1, NULL, 0},
        {"--per-row", NULL, 1, NULL, 0}, {"--kind", NULL, 1, NULL, 0},
        {"--quiet", "-q", 0, NULL, 0},   {"--help", "-h", 0, NULL, 0},
        {"--band", NULL, 1, NULL, 0},    {"--dense", NULL, 1, NULL, 0},
        {"--k", NULL, 1, NULL, 0},       {"--alpha", NULL, 1, NULL, 0},
    };
    const int nd = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[2];
    int rc;
    if (command_args("gen", cli_gen_help, "expected KIND and N", argc, argv, defs, nd, pos, 2, &rc))
        return rc;
    static const char *const kinds[] = {"poisson1d",  "poisson2d",  "poisson3d", "diffusion2d",
                                        "convdiff2d", "aniso2d",    "random",    "arrow",
                                        "helmholtz2d"};
    int kind = lookup_name("gen", pos[0], kinds, 9);
    if (kind < 0) return EXIT_BAD;
    long long N;
    long long maxN = kind == 0 || kind == 6 || kind == 7 ? 2000000000LL : kind == 2 ? 1290 : 46000;
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
        {"--k", 8, -1},    {"--alpha", 8, -1},
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
    double hk = 0.0, halpha = 0.0;
    if (kind == 8) {
        if (!(s = optval(defs, nd, "--k"))) {
            err("gen: helmholtz2d needs --k K (the wavenumber)");
            return EXIT_BAD;
        }
        if (parse_double_in("--k", s, 0.0, 1e150, &hk)) return EXIT_BAD;
        if ((s = optval(defs, nd, "--alpha")) && parse_double("--alpha", s, &halpha))
            return EXIT_BAD;
    }
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
    case 8:
        st = sla_gen_helmholtz2d(ctx, (sla_int)N, hk, halpha, &A);
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

