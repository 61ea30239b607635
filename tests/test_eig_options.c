/* The option strings of the eigensolvers and of the stochastic
 * log-determinant (sla_eigsh_options_parse, sla_lobpcg_options_parse,
 * sla_slq_options_parse): every key lands in its field, "" keeps the
 * defaults, unknown keys and values out of range are refused naming the
 * key, and a failed parse leaves the struct untouched. Needs neither ARPACK
 * nor LAPACK. */
#include "test_util.h"

#include <string.h>

static void test_eigsh(sla_ctx *ctx)
{
    sla_eigsh_options d, o;
    sla_eigsh_options_default(&d);
    memcpy(&o, &d, sizeof o); /* memcpy: padding too, for memcmp */
    CHECK_OK(ctx, sla_eigsh_options_parse(ctx, "", &o));
    CHECK(memcmp(&o, &d, sizeof o) == 0);
    CHECK_OK(ctx, sla_eigsh_options_parse(ctx, " , ,", &o));
    CHECK(memcmp(&o, &d, sizeof o) == 0);

    CHECK_OK(ctx, sla_eigsh_options_parse(ctx,
                                          "k=4, which=sa,shift_invert=true,tol=1e-6,ncv=33,maxiter=700,"
                                          "factor_method=ldlt,memory_limit=1e9,degenerate_tol=1e-7,"
                                          "grad_rtol=1e-10,grad_maxiter=321",
                                          &o));
    CHECK(o.k == 4 && o.which == SLA_EIG_SA && o.shift_invert && o.sigma == 0.0);
    CHECK(o.tol == 1e-6 && o.ncv == 33 && o.maxiter == 700 && o.factor_method == SLA_METHOD_LDLT);
    CHECK(o.memory_limit == 1e9 && o.degenerate_tol == 1e-7 && o.grad_rtol == 1e-10 && o.grad_maxiter == 321);
    CHECK(o.v0 == NULL);
    /* sigma implies shift-invert; a later shift_invert=false turns it off */
    memcpy(&o, &d, sizeof o);
    CHECK_OK(ctx, sla_eigsh_options_parse(ctx, "sigma=-2.5", &o));
    CHECK(o.shift_invert && o.sigma == -2.5);
    CHECK_OK(ctx, sla_eigsh_options_parse(ctx, "sigma=0.5,shift_invert=off,which=LA", &o));
    CHECK(!o.shift_invert && o.sigma == 0.5 && o.which == SLA_EIG_LA);
    CHECK_OK(ctx, sla_eigsh_options_parse(ctx, "which=Lm,factor_method=auto", &o));
    CHECK(o.which == SLA_EIG_LM && o.factor_method == SLA_METHOD_AUTO);
    const sla_method fm[] = {SLA_METHOD_CHOLESKY, SLA_METHOD_LU, SLA_METHOD_UMFPACK, SLA_METHOD_KLU,
                             SLA_METHOD_SUPERLU};
    for (int i = 0; i < 5; i++) {
        char s[64];
        snprintf(s, sizeof s, "factor_method=%s", sla_method_name(fm[i]));
        CHECK_OK(ctx, sla_eigsh_options_parse(ctx, s, &o));
        CHECK(o.factor_method == fm[i]);
    }

    /* refusals name the key; the struct is left as it was */
    sla_eigsh_options keep;
    memcpy(&keep, &o, sizeof keep);
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "k=3,sigmaa=1", &o), SLA_ERR_ARGUMENT, "did you mean 'sigma'");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "degen_tol=1", &o), SLA_ERR_ARGUMENT, "degenerate_tol");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "k=0", &o), SLA_ERR_ARGUMENT, "option k");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "k=2.5", &o), SLA_ERR_ARGUMENT, "option k");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "which=XY", &o), SLA_ERR_ARGUMENT, "option which");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "shift_invert=maybe", &o), SLA_ERR_ARGUMENT, "shift_invert");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "sigma=nan", &o), SLA_ERR_ARGUMENT, "option sigma");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "tol=-1", &o), SLA_ERR_ARGUMENT, "option tol");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "ncv=50000", &o), SLA_ERR_ARGUMENT, "option ncv");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "maxiter=-1", &o), SLA_ERR_ARGUMENT, "option maxiter");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "factor_method=cg", &o), SLA_ERR_ARGUMENT, "factor_method");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "factor_method=choleski", &o), SLA_ERR_ARGUMENT,
              "did you mean 'cholesky'");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "memory_limit=-5", &o), SLA_ERR_ARGUMENT, "memory_limit");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "degenerate_tol=-1e-3", &o), SLA_ERR_ARGUMENT,
              "degenerate_tol");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "grad_rtol=0", &o), SLA_ERR_ARGUMENT, "grad_rtol");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "grad_maxiter=x", &o), SLA_ERR_ARGUMENT, "grad_maxiter");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "tol", &o), SLA_ERR_ARGUMENT, "no '=value'");
    CHECK_ERR(ctx, sla_eigsh_options_parse(ctx, "tol=", &o), SLA_ERR_ARGUMENT, "option tol");
    CHECK(memcmp(&o, &keep, sizeof o) == 0);
    CHECK_ST(ctx, sla_eigsh_options_parse(ctx, NULL, &o), SLA_ERR_ARGUMENT);
    CHECK_ST(ctx, sla_eigsh_options_parse(ctx, "", NULL), SLA_ERR_ARGUMENT);
    CHECK_ST(NULL, sla_eigsh_options_parse(NULL, "k=1", &o), SLA_OK);
    CHECK_ST(NULL, sla_eigsh_options_parse(NULL, "kk=1", &o), SLA_ERR_ARGUMENT);
}

static void test_lobpcg(sla_ctx *ctx)
{
    sla_lobpcg_options d, o;
    sla_lobpcg_options_default(&d);
    memcpy(&o, &d, sizeof o);
    CHECK_OK(ctx, sla_lobpcg_options_parse(ctx, "", &o));
    CHECK(memcmp(&o, &d, sizeof o) == 0);
    CHECK_OK(ctx, sla_lobpcg_options_parse(ctx, "k=3,tol=1e-9,maxiter=77,seed=18446744073709551615", &o));
    CHECK(o.k == 3 && o.tol == 1e-9 && o.maxiter == 77 && o.seed == UINT64_MAX && o.x0 == NULL);
    CHECK_OK(ctx, sla_lobpcg_options_parse(ctx, "pc.precond=ssor, pc.omega=1.3,pc.amg_relax=6,seed=0", &o));
    CHECK(o.pc.precond == SLA_PRECOND_SSOR && o.pc.omega == 1.3 && o.pc.amg.relax_type == 6 && o.seed == 0);

    sla_lobpcg_options keep;
    memcpy(&keep, &o, sizeof keep);
    CHECK_ERR(ctx, sla_lobpcg_options_parse(ctx, "tl=1", &o), SLA_ERR_ARGUMENT, "did you mean 'tol'");
    CHECK_ERR(ctx, sla_lobpcg_options_parse(ctx, "k=0", &o), SLA_ERR_ARGUMENT, "option k");
    CHECK_ERR(ctx, sla_lobpcg_options_parse(ctx, "k=10001", &o), SLA_ERR_ARGUMENT, "option k");
    CHECK_ERR(ctx, sla_lobpcg_options_parse(ctx, "tol=0", &o), SLA_ERR_ARGUMENT, "option tol");
    CHECK_ERR(ctx, sla_lobpcg_options_parse(ctx, "maxiter=0", &o), SLA_ERR_ARGUMENT, "option maxiter");
    CHECK_ERR(ctx, sla_lobpcg_options_parse(ctx, "seed=-1", &o), SLA_ERR_ARGUMENT, "option seed");
    CHECK_ERR(ctx, sla_lobpcg_options_parse(ctx, "seed=18446744073709551616", &o), SLA_ERR_ARGUMENT,
              "option seed");
    CHECK_ERR(ctx, sla_lobpcg_options_parse(ctx, "pc.precond=ic1", &o), SLA_ERR_ARGUMENT, "pc.precond");
    CHECK_ERR(ctx, sla_lobpcg_options_parse(ctx, "pc.omega=3", &o), SLA_ERR_ARGUMENT, "pc.omega");
    CHECK_ERR(ctx, sla_lobpcg_options_parse(ctx, "pc.omegaa=1", &o), SLA_ERR_ARGUMENT, "did you mean 'omega'");
    CHECK_ERR(ctx, sla_lobpcg_options_parse(ctx, "k=2,pc.omega=3", &o), SLA_ERR_ARGUMENT, "pc.omega");
    CHECK(memcmp(&o, &keep, sizeof o) == 0);
    CHECK_ST(ctx, sla_lobpcg_options_parse(ctx, NULL, &o), SLA_ERR_ARGUMENT);
}

static void test_slq(sla_ctx *ctx)
{
    sla_slq_options d, o;
    sla_slq_options_default(&d);
    memcpy(&o, &d, sizeof o);
    CHECK_OK(ctx, sla_slq_options_parse(ctx, "", &o));
    CHECK(memcmp(&o, &d, sizeof o) == 0);
    CHECK_OK(ctx, sla_slq_options_parse(ctx, "probes=8,lanczos_steps=30,seed=12345", &o));
    CHECK(o.probes == 8 && o.lanczos_steps == 30 && o.seed == 12345);
    CHECK_OK(ctx, sla_slq_options_parse(ctx, "solver.method=minres,solver.precond=jacobi,solver.rtol=1e-7", &o));
    CHECK(o.solver.method == SLA_METHOD_MINRES && o.solver.precond == SLA_PRECOND_JACOBI && o.solver.rtol == 1e-7);
    CHECK(o.probes == 8); /* the other fields stay */

    sla_slq_options keep;
    memcpy(&keep, &o, sizeof keep);
    CHECK_ERR(ctx, sla_slq_options_parse(ctx, "probe=3", &o), SLA_ERR_ARGUMENT, "did you mean 'probes'");
    CHECK_ERR(ctx, sla_slq_options_parse(ctx, "probes=0", &o), SLA_ERR_ARGUMENT, "option probes");
    CHECK_ERR(ctx, sla_slq_options_parse(ctx, "lanczos_steps=10001", &o), SLA_ERR_ARGUMENT, "lanczos_steps");
    CHECK_ERR(ctx, sla_slq_options_parse(ctx, "seed=1.5", &o), SLA_ERR_ARGUMENT, "option seed");
    CHECK_ERR(ctx, sla_slq_options_parse(ctx, "solver.rtol=-1", &o), SLA_ERR_ARGUMENT, "solver.rtol");
    CHECK_ERR(ctx, sla_slq_options_parse(ctx, "solver.method=cgg", &o), SLA_ERR_ARGUMENT, "did you mean 'cg'");
    CHECK_ERR(ctx, sla_slq_options_parse(ctx, "solver.=1", &o), SLA_ERR_ARGUMENT, "unknown option");
    CHECK_ERR(ctx, sla_slq_options_parse(ctx, "solver=cg", &o), SLA_ERR_ARGUMENT, "unknown option 'solver'");
    CHECK(memcmp(&o, &keep, sizeof o) == 0);
    CHECK_ST(ctx, sla_slq_options_parse(ctx, "", NULL), SLA_ERR_ARGUMENT);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    test_eigsh(ctx);
    test_lobpcg(ctx);
    test_slq(ctx);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_eig_options");
}
