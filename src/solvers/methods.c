/* The method registry: one table with every linear-solver method and every
 * preconditioner once: its public name and aliases, its kind (auto, Krylov,
 * direct, preconditioner), its capabilities, whether it is in this build,
 * and what runs it (a direct method's backend getter, a Krylov method's
 * iteration). Name lookup ("did you mean"), the public listing and the
 * solver's dispatch read this table; adding a method is one row here (see
 * docs/adding-a-method.md). Rows of sla_method come first, in enum order,
 * then those of sla_precond_kind, in enum order; enum values never change.
 */
#include "methods.h"

#include <stdio.h>
#include <string.h>

/* Whether each optional library is compiled in (a backend getter without
 * its library answers NULL: src/solvers/direct.c). */
#ifdef SLA_HAVE_SUITESPARSE
#define HAVE_SUITESPARSE true
#else
#define HAVE_SUITESPARSE false
#endif
#ifdef SLA_HAVE_SUPERLU
#define HAVE_SUPERLU true
#else
#define HAVE_SUPERLU false
#endif
#ifdef SLA_HAVE_MUMPS
#define HAVE_MUMPS true
#else
#define HAVE_MUMPS false
#endif
#ifdef SLA_HAVE_HYPRE
#define HAVE_HYPRE true
#else
#define HAVE_HYPRE false
#endif

#define ALIASES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NO_ALIASES ((const char *const[]){NULL})
#define SYM SLA_CAP_SYMMETRIC
#define SPD SLA_CAP_SPD
#define TR SLA_CAP_TRANSPOSE
#define DIST SLA_CAP_DISTRIBUTED
#define CPX SLA_CAP_COMPLEX

/* name, aliases, value, kind, capabilities, available, backend, summary;
 * then the backend getter (direct), the iteration (Krylov), whether a
 * direct method runs its backend's LDL^T variant (ldlt), and the complex
 * iteration of a Krylov method with CPX (SLA_CAP_COMPLEX; a direct method
 * with CPX finds its complex backend through sla__zdirect_backend). Every method
 * solves with A^T too (the VJP's adjoint solve): TR on all of them. */
static const sla__method_entry table[] = {
    {{"auto", NO_ALIASES, SLA_METHOD_AUTO, SLA_KIND_AUTO, TR | CPX, true, "",
      "chosen from structure and the symbolic analysis"}, NULL, NULL, false, NULL},
    {{"cg", NO_ALIASES, SLA_METHOD_CG, SLA_KIND_KRYLOV, SYM | SPD | TR | DIST | CPX, true, "krylov",
      "conjugate gradients (symmetric positive definite A)"}, NULL, sla__cg, false, sla__zcg},
    {{"bicgstab", NO_ALIASES, SLA_METHOD_BICGSTAB, SLA_KIND_KRYLOV, TR | DIST | CPX, true, "krylov",
      "BiCGSTAB (general A)"}, NULL, sla__bicgstab, false, sla__zbicgstab},
    {{"gmres", NO_ALIASES, SLA_METHOD_GMRES, SLA_KIND_KRYLOV, TR | DIST | CPX, true, "krylov",
      "restarted GMRES (general A; option restart)"}, NULL, sla__gmres, false, sla__zgmres},
    {{"minres", NO_ALIASES, SLA_METHOD_MINRES, SLA_KIND_KRYLOV, SYM | TR | DIST | CPX, true, "krylov",
      "MINRES (symmetric, possibly indefinite A)"}, NULL, sla__minres, false, sla__zminres},
    {{"cholesky", ALIASES("cholmod"), SLA_METHOD_CHOLESKY, SLA_KIND_DIRECT, SYM | SPD | TR | CPX,
      HAVE_SUITESPARSE, "cholmod", "CHOLMOD supernodal LL^T (SPD matrices)"},
     sla__backend_cholmod, NULL, false, NULL},
    {{"ldlt", ALIASES("ldl"), SLA_METHOD_LDLT, SLA_KIND_DIRECT, SYM | TR, HAVE_SUITESPARSE,
      "cholmod", "CHOLMOD simplicial LDL^T (symmetric; no pivoting)"},
     sla__backend_cholmod, NULL, true, NULL},
    {{"lu", NO_ALIASES, SLA_METHOD_LU, SLA_KIND_DIRECT, TR | CPX, HAVE_SUITESPARSE, "umfpack",
      "general sparse LU (UMFPACK)"}, sla__backend_umfpack, NULL, false, NULL},
    {{"umfpack", NO_ALIASES, SLA_METHOD_UMFPACK, SLA_KIND_DIRECT, TR | CPX, HAVE_SUITESPARSE, "umfpack",
      "UMFPACK multifrontal LU"}, sla__backend_umfpack, NULL, false, NULL},
    {{"klu", NO_ALIASES, SLA_METHOD_KLU, SLA_KIND_DIRECT, TR | CPX, HAVE_SUITESPARSE, "klu",
      "KLU left-looking LU for very sparse (circuit-like) matrices"},
     sla__backend_klu, NULL, false, NULL},
    {{"superlu", NO_ALIASES, SLA_METHOD_SUPERLU, SLA_KIND_DIRECT, TR | CPX, HAVE_SUPERLU, "superlu",
      "SuperLU supernodal LU (SciPy's spsolve engine)"}, sla__backend_superlu, NULL, false, NULL},
    /* cocg on a real matrix is CG (x^T y = x^H y); not distributed */
    {{"cocg", NO_ALIASES, SLA_METHOD_COCG, SLA_KIND_KRYLOV, SYM | TR | CPX, true, "krylov",
      "COCG: conjugate orthogonal CG for complex symmetric (A = A^T) matrices"},
     NULL, sla__cg, false, sla__zcocg},
    {{"mumps", NO_ALIASES, SLA_METHOD_MUMPS, SLA_KIND_DIRECT, TR | CPX, HAVE_MUMPS, "mumps",
      "MUMPS multifrontal LDL^T (A = A^T, real or complex) or LU, sequential"},
     sla__backend_mumps, NULL, false, NULL},

    {{"none", NO_ALIASES, SLA_PRECOND_NONE, SLA_KIND_PRECOND, TR | DIST | CPX, true, "",
      "no preconditioner"}, NULL, NULL, false, NULL},
    {{"jacobi", ALIASES("diag"), SLA_PRECOND_JACOBI, SLA_KIND_PRECOND, TR | DIST | CPX, true, "",
      "diagonal scaling"}, NULL, NULL, false, NULL},
    {{"ssor", NO_ALIASES, SLA_PRECOND_SSOR, SLA_KIND_PRECOND, TR | DIST, true, "",
      "symmetric successive over-relaxation (option omega)"}, NULL, NULL, false, NULL},
    {{"ic0", ALIASES("ic"), SLA_PRECOND_IC0, SLA_KIND_PRECOND, SYM | SPD | TR | DIST | CPX, true, "",
      "incomplete Cholesky, zero fill"}, NULL, NULL, false, NULL},
    {{"ilu0", ALIASES("ilu"), SLA_PRECOND_ILU0, SLA_KIND_PRECOND, TR | DIST | CPX, true, "",
      "incomplete LU, zero fill"}, NULL, NULL, false, NULL},
    /* user: M^-T only when the callbacks give apply_transpose */
    {{"user", NO_ALIASES, SLA_PRECOND_USER, SLA_KIND_PRECOND, 0, true, "",
      "the callbacks in options.user_precond"}, NULL, NULL, false, NULL},
    {{"amg", ALIASES("boomeramg"), SLA_PRECOND_AMG, SLA_KIND_PRECOND, TR | DIST, HAVE_HYPRE,
      "hypre", "algebraic multigrid: one hypre BoomerAMG cycle"}, NULL, NULL, false, NULL},
    /* saamg: its cycle is its own transpose for symmetric A only; distributed:
     * one hierarchy over the ranks, symmetric A (src/dist/dist_saamg.c) */
    {{"saamg", NO_ALIASES, SLA_PRECOND_SAAMG, SLA_KIND_PRECOND, DIST, true, "",
      "smoothed-aggregation AMG, one V(1,1) cycle (lean memory)"}, NULL, NULL, false, NULL},
    {{"ilut", NO_ALIASES, SLA_PRECOND_ILUT, SLA_KIND_PRECOND, TR | DIST, true, "",
      "threshold incomplete LU with pivoting (options ilut_droptol, ilut_fill, ilut_pivot)"},
     NULL, NULL, false, NULL},
};

#define N_ENTRIES ((int)(sizeof table / sizeof table[0]))

int sla_method_count(void) { return N_ENTRIES; }

const sla_method_desc *sla_method_at(int i)
{
    return i >= 0 && i < N_ENTRIES ? &table[i].desc : NULL;
}

static const sla__method_entry *find(int value, bool precond)
{
    for (int i = 0; i < N_ENTRIES; i++)
        if ((table[i].desc.kind == SLA_KIND_PRECOND) == precond && table[i].desc.value == value)
            return &table[i];
    return NULL;
}

const sla__method_entry *sla__method_find(sla_method m) { return find((int)m, false); }

const sla__method_entry *sla__precond_find(sla_precond_kind p) { return find((int)p, true); }

static bool same(const char *name, const char *s, size_t len)
{
    return strlen(name) == len && !strncmp(name, s, len);
}

const sla__method_entry *sla__method_lookup(const char *s, size_t len, bool precond, bool aliases)
{
    for (int i = 0; i < N_ENTRIES; i++) {
        const sla_method_desc *d = &table[i].desc;
        if ((d->kind == SLA_KIND_PRECOND) != precond) continue;
        if (same(d->name, s, len)) return &table[i];
        for (const char *const *a = d->aliases; aliases && *a; a++)
            if (same(*a, s, len)) return &table[i];
    }
    return NULL;
}

sla_status sla__method_parse(sla_ctx *ctx, const char *s, size_t len, bool precond, bool aliases,
                             const sla__method_entry **out)
{
    const sla__method_entry *e = sla__method_lookup(s, len, precond, aliases);
    if (e) {
        *out = e;
        return SLA_OK;
    }
    /* suggestions come from the public names only (the aliases are accepted,
     * not advertised) */
    const char *names[N_ENTRIES];
    size_t count = 0;
    for (int i = 0; i < N_ENTRIES; i++)
        if ((table[i].desc.kind == SLA_KIND_PRECOND) == precond) names[count++] = table[i].desc.name;
    const char *what = precond ? "preconditioner" : "method";
    char word[64];
    snprintf(word, sizeof word, "%.*s", len < sizeof word ? (int)len : (int)sizeof word - 1, s);
    const char *near = len < sizeof word ? sla_nearest_name(word, names, count) : NULL;
    if (near)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown %s '%.*s' (did you mean '%s'?)", what,
                          (int)len, s, near);
    char list[256] = "";
    for (size_t i = 0, at = 0; i < count && at < sizeof list; i++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", names[i]);
    return sla__error(ctx, SLA_ERR_ARGUMENT, "unknown %s '%.*s' (one of %s)", what, (int)len, s,
                      list);
}

sla_status sla_method_from_name(sla_ctx *ctx, const char *name, sla_method *m)
{
    if (!name || !m) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_method_from_name: NULL argument");
    const sla__method_entry *e = NULL;
    sla_status st = sla__method_parse(ctx, name, strlen(name), false, true, &e);
    if (st) return st;
    *m = (sla_method)e->desc.value;
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_precond_from_name(sla_ctx *ctx, const char *name, sla_precond_kind *p)
{
    if (!name || !p)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_precond_from_name: NULL argument");
    const sla__method_entry *e = NULL;
    sla_status st = sla__method_parse(ctx, name, strlen(name), true, true, &e);
    if (st) return st;
    *p = (sla_precond_kind)e->desc.value;
    return sla__ok(ctx, SLA_OK);
}
