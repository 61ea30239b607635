/* The method registry and the nearest-name matcher: every listed name
 * round-trips name -> enum -> name, aliases resolve, unknown names fail
 * with a suggestion, kinds and capabilities agree with what the solver
 * dispatches (sla_method_available, the backend getters, the Krylov
 * iterations), and sla_nearest_name suggests what a user means. */
#include "test_util.h"

#include "solvers/methods.h"

static void test_listing(sla_ctx *ctx)
{
    int n = sla_method_count();
    CHECK(n >= 21); /* 12 methods and 9 preconditioners today */
    CHECK(sla_method_at(-1) == NULL && sla_method_at(n) == NULL);
    int next_method = 0, next_pc = 0;
    bool seen_pc = false;
    for (int i = 0; i < n; i++) {
        const sla_method_desc *d = sla_method_at(i);
        CHECK(d && d->name && d->aliases && d->backend && d->summary && d->summary[0]);
        if (!d) continue;
        bool pc = d->kind == SLA_KIND_PRECOND;
        /* methods first, then preconditioners, each in enum order */
        CHECK(!(seen_pc && !pc));
        seen_pc = seen_pc || pc;
        CHECK(d->value == (pc ? next_pc++ : next_method++));
        /* complex: the Krylov methods and auto, the direct methods with a
         * complex backend (not ldlt), jacobi, ic0, ilu0 and none */
        CHECK(((d->flags & SLA_CAP_COMPLEX) != 0) ==
              (pc ? (d->value == SLA_PRECOND_NONE || d->value == SLA_PRECOND_JACOBI ||
                     d->value == SLA_PRECOND_IC0 || d->value == SLA_PRECOND_ILU0)
                  : d->value != SLA_METHOD_LDLT));
        CHECK(!(d->flags & SLA_CAP_SPD) || (d->flags & SLA_CAP_SYMMETRIC));
        if (pc) {
            sla_precond_kind p = SLA_PRECOND_USER;
            CHECK(strcmp(sla_precond_name((sla_precond_kind)d->value), d->name) == 0);
            CHECK_OK(ctx, sla_precond_from_name(ctx, d->name, &p));
            CHECK((int)p == d->value);
            for (const char *const *a = d->aliases; *a; a++) {
                p = SLA_PRECOND_USER;
                CHECK_OK(ctx, sla_precond_from_name(ctx, *a, &p));
                CHECK((int)p == d->value);
            }
            const sla__method_entry *e = sla__precond_find((sla_precond_kind)d->value);
            CHECK(e && &e->desc == d && !e->backend && !e->krylov && !e->ldlt && !e->zkrylov);
            /* what sla_dist_solver accepts (block Jacobi for the local ones) */
            const sla_precond_kind pv = (sla_precond_kind)d->value;
            CHECK(((d->flags & SLA_CAP_DISTRIBUTED) != 0) ==
                  (pv == SLA_PRECOND_NONE || pv == SLA_PRECOND_JACOBI || pv == SLA_PRECOND_SSOR ||
                   pv == SLA_PRECOND_IC0 || pv == SLA_PRECOND_ILU0 || pv == SLA_PRECOND_ILUT ||
                   pv == SLA_PRECOND_AMG || pv == SLA_PRECOND_SAAMG));
            sla_method m = SLA_METHOD_CG;
            CHECK_ST(ctx, sla_method_from_name(ctx, d->name, &m), SLA_ERR_ARGUMENT);
            CHECK(m == SLA_METHOD_CG);
            continue;
        }
        sla_method m = SLA_METHOD_AUTO;
        sla_method v = (sla_method)d->value;
        CHECK(strcmp(sla_method_name(v), d->name) == 0);
        CHECK_OK(ctx, sla_method_from_name(ctx, d->name, &m));
        CHECK(m == v);
        for (const char *const *a = d->aliases; *a; a++) {
            m = SLA_METHOD_AUTO;
            CHECK_OK(ctx, sla_method_from_name(ctx, *a, &m));
            CHECK(m == v);
        }
        const sla__method_entry *e = sla__method_find(v);
        CHECK(e && &e->desc == d);
        if (!e) continue;
        /* what runs it agrees with the kind; sla__krylov_method reads the
         * table, so the Krylov set is also checked against the enum */
        CHECK(e->krylov == sla__krylov_method(v));
        CHECK((e->krylov != NULL) == (v == SLA_METHOD_CG || v == SLA_METHOD_BICGSTAB ||
                                      v == SLA_METHOD_GMRES || v == SLA_METHOD_MINRES ||
                                      v == SLA_METHOD_COCG));
        /* every Krylov method runs complex; cocg on a real matrix is CG */
        CHECK((e->zkrylov != NULL) == (d->kind == SLA_KIND_KRYLOV));
        if (v == SLA_METHOD_COCG) CHECK(e->krylov == sla__cg && (d->flags & SLA_CAP_SYMMETRIC));
        /* the symmetric-only direct methods (the solver refuses them on an
         * unsymmetric matrix) and the LDL^T variant */
        CHECK((d->kind == SLA_KIND_DIRECT && (d->flags & SLA_CAP_SYMMETRIC)) ==
              (v == SLA_METHOD_CHOLESKY || v == SLA_METHOD_LDLT));
        CHECK(e->ldlt == (v == SLA_METHOD_LDLT));
        CHECK((e->krylov != NULL) == (d->kind == SLA_KIND_KRYLOV));
        CHECK((e->backend != NULL) == (d->kind == SLA_KIND_DIRECT));
        CHECK(d->available == sla_method_available(v));
        if (d->kind == SLA_KIND_DIRECT) {
            const sla__direct_ops *ops = e->backend();
            CHECK(d->available == (ops != NULL));
            if (ops) CHECK(strcmp(ops->name, d->backend) == 0);
        } else {
            CHECK(d->available);
            CHECK(strcmp(d->backend, d->kind == SLA_KIND_KRYLOV ? "krylov" : "") == 0);
        }
        /* only Krylov methods run distributed (not cocg, a complex method) */
        CHECK(((d->flags & SLA_CAP_DISTRIBUTED) != 0) ==
              (d->kind == SLA_KIND_KRYLOV && v != SLA_METHOD_COCG));
    }
    CHECK(next_method >= SLA_METHOD_MUMPS + 1 && next_pc >= SLA_PRECOND_ILUT + 1);
    CHECK(strcmp(sla_method_name((sla_method)next_method), "unknown") == 0);
    CHECK(strcmp(sla_precond_name((sla_precond_kind)next_pc), "unknown") == 0);
    CHECK(sla__method_find((sla_method)next_method) == NULL);
    CHECK(strcmp(sla_precond_name((sla_precond_kind)-1), "unknown") == 0);
    CHECK(sla__method_find((sla_method)99) == NULL);
    CHECK(sla_solver_options_size() == sizeof(sla_solver_options));
}

static void test_lookup(sla_ctx *ctx)
{
    sla_method m = SLA_METHOD_AUTO;
    sla_precond_kind p = SLA_PRECOND_NONE;
    CHECK_OK(ctx, sla_method_from_name(ctx, "cholmod", &m));
    CHECK(m == SLA_METHOD_CHOLESKY);
    CHECK_OK(ctx, sla_method_from_name(ctx, "ldl", &m));
    CHECK(m == SLA_METHOD_LDLT);
    CHECK_OK(ctx, sla_precond_from_name(ctx, "boomeramg", &p));
    CHECK(p == SLA_PRECOND_AMG);
    CHECK_OK(ctx, sla_precond_from_name(ctx, "ilu", &p));
    CHECK(p == SLA_PRECOND_ILU0);
    m = SLA_METHOD_GMRES;
    CHECK_ERR(ctx, sla_method_from_name(ctx, "cgg", &m), SLA_ERR_ARGUMENT,
              "unknown method 'cgg' (did you mean 'cg'?)");
    CHECK(m == SLA_METHOD_GMRES); /* untouched */
    CHECK_ERR(ctx, sla_method_from_name(ctx, "bicg", &m), SLA_ERR_ARGUMENT, "did you mean 'bicgstab'");
    CHECK_ERR(ctx, sla_method_from_name(ctx, "xyzzy_q", &m), SLA_ERR_ARGUMENT,
              "(one of auto, cg, bicgstab, gmres, minres, cholesky, ldlt, lu, umfpack, klu, superlu, cocg, mumps)");
    CHECK_ERR(ctx, sla_precond_from_name(ctx, "jacobl", &p), SLA_ERR_ARGUMENT,
              "unknown preconditioner 'jacobl' (did you mean 'jacobi'?)");
    CHECK_ERR(ctx, sla_method_from_name(ctx, "", &m), SLA_ERR_ARGUMENT, "unknown method");
    CHECK_ERR(ctx, sla_method_from_name(ctx, NULL, &m), SLA_ERR_ARGUMENT, "NULL");
    CHECK_ERR(ctx, sla_precond_from_name(ctx, "ilu0", NULL), SLA_ERR_ARGUMENT, "NULL");
    CHECK_ST(NULL, sla_method_from_name(NULL, "nope", &m), SLA_ERR_ARGUMENT); /* no ctx */
    CHECK_OK(NULL, sla_method_from_name(NULL, "klu", &m));
    CHECK(m == SLA_METHOD_KLU);

    /* the option parser reads the same table, public names only */
    sla_solver_options o;
    sla_solver_options_default(&o);
    CHECK_OK(ctx, sla_solver_options_parse(ctx, "method=cholesky,precond=jacobi", &o));
    CHECK(o.method == SLA_METHOD_CHOLESKY && o.precond == SLA_PRECOND_JACOBI);
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "method=cholmod", &o), SLA_ERR_ARGUMENT,
              "unknown method 'cholmod'");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "precond=diag", &o), SLA_ERR_ARGUMENT,
              "unknown preconditioner 'diag'");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "method=gmress", &o), SLA_ERR_ARGUMENT,
              "unknown method 'gmress' (did you mean 'gmres'?)");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "precond=ilutt", &o), SLA_ERR_ARGUMENT,
              "unknown preconditioner 'ilutt' (did you mean 'ilut'?)");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "ordering=metsi", &o), SLA_ERR_ARGUMENT,
              "did you mean 'metis'");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "zzzzzzzz=1", &o), SLA_ERR_ARGUMENT,
              "unknown option 'zzzzzzzz' (one of method, precond, rtol");
    CHECK_ERR(ctx, sla_solver_options_parse(ctx, "saamg_reuse=ful", &o), SLA_ERR_ARGUMENT,
              "did you mean 'full'");
    CHECK(o.method == SLA_METHOD_CHOLESKY); /* all or nothing */

    /* check_options reads it too */
    sla_solver_options_default(&o);
    o.method = (sla_method)(SLA_METHOD_MUMPS + 1);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 1, 4, &A));
    sla_solver *S = NULL;
    CHECK_ERR(ctx, sla_solver_create(ctx, A, &o, &S), SLA_ERR_ARGUMENT, "unknown method");
    o.method = SLA_METHOD_CG;
    o.precond = (sla_precond_kind)(SLA_PRECOND_ILUT + 1);
    CHECK_ERR(ctx, sla_solver_create(ctx, A, &o, &S), SLA_ERR_ARGUMENT, "unknown preconditioner");
    CHECK(S == NULL);
    sla_matrix_destroy(&A);
}

static void test_nearest(void)
{
    static const char *const names[] = {"method", "rtol", "atol", "maxiter", "chord_ratio",
                                        "ls_alpha", "ls_shrink"};
    size_t n = sizeof names / sizeof names[0];
    CHECK(sla_nearest_name("method", names, n) == names[0]); /* exact */
    CHECK(sla_nearest_name("methd", names, n) == names[0]);
    CHECK(sla_nearest_name("rtl", names, n) == names[1]);
    CHECK(sla_nearest_name("chord", names, n) == names[4]); /* abbreviation */
    CHECK(sla_nearest_name("ls_", names, n) == names[5]);   /* the first it begins */
    CHECK(sla_nearest_name("xtol", names, n) == names[1]);  /* tie: the earlier one */
    CHECK(sla_nearest_name("zzzzzzzzzz", names, n) == NULL); /* none is close */
    CHECK(sla_nearest_name("qr", (const char *const[]){"lu", "cholesky"}, 2) != NULL);
    CHECK(sla_nearest_name("", names, n) == NULL);
    CHECK(sla_nearest_name(NULL, names, n) == NULL);
    CHECK(sla_nearest_name("rtol", names, 0) == NULL);
    CHECK(sla_nearest_name("rtol", NULL, 3) == NULL);
    char longname[80];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK(sla_nearest_name(longname, names, n) == NULL);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    test_listing(ctx);
    test_lookup(ctx);
    test_nearest();
    sla_ctx_destroy(&ctx);
    return tu_finish("test_methods");
}
