/* Fuzz target: sla_solver_options_parse. Bytes -> a string; a failed
 * parse leaves the options untouched; accepted options either create a
 * solver for a small matrix (and it solves) or are refused with a message.
 * The same string also goes through the eigsh, LOBPCG and SLQ option
 * parsers (all or nothing, a message on refusal).
 * precond=amg is replaced by none (hypre's MPI start-up is out of scope
 * here) and maxiter is capped, to keep each run short. */
#include "fuzz_common.h"

/* One of the eigensolver option parsers on s: OK, or ARGUMENT with a
 * message and the struct untouched. */
#define FZ_EIG_PARSE(type, dflt, parse)                                              \
    do {                                                                             \
        type eo_, eb_;                                                               \
        dflt(&eo_);                                                                  \
        memcpy(&eb_, &eo_, sizeof eb_);                                              \
        sla_status est_ = parse(ctx, s, &eo_);                                       \
        FUZZ_ASSERT(est_ == SLA_OK || est_ == SLA_ERR_ARGUMENT);                     \
        if (est_) {                                                                  \
            FUZZ_ASSERT(memcmp(&eo_, &eb_, sizeof eo_) == 0);                        \
            FUZZ_ASSERT(sla_ctx_message(ctx)[0] != '\0');                            \
        }                                                                            \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    char *s = malloc(size + 1);
    FUZZ_ASSERT(s);
    memcpy(s, data, size);
    s[size] = '\0';
    sla_ctx *ctx = fz_ctx();
    if (!ctx) {
        free(s);
        return 0;
    }
    FZ_EIG_PARSE(sla_eigsh_options, sla_eigsh_options_default, sla_eigsh_options_parse);
    FZ_EIG_PARSE(sla_lobpcg_options, sla_lobpcg_options_default, sla_lobpcg_options_parse);
    FZ_EIG_PARSE(sla_slq_options, sla_slq_options_default, sla_slq_options_parse);
    sla_solver_options o, before;
    sla_solver_options_default(&o);
    before = o;
    sla_status st = sla_solver_options_parse(ctx, s, &o);
    FUZZ_ASSERT(st == SLA_OK || st == SLA_ERR_ARGUMENT);
    if (st) {
        FUZZ_ASSERT(memcmp(&o, &before, sizeof o) == 0); /* all or nothing */
        FUZZ_ASSERT(sla_ctx_message(ctx)[0] != '\0');
    } else {
        if (o.precond == SLA_PRECOND_AMG || o.precond == SLA_PRECOND_USER)
            o.precond = SLA_PRECOND_NONE;
        if (o.maxiter == 0 || o.maxiter > 200) o.maxiter = 200;
        if (o.restart > 64) o.restart = 64;
        sla_matrix *A = NULL;
        FUZZ_ASSERT(sla_gen_poisson(ctx, 1, 6, &A) == SLA_OK);
        sla_solver *S = NULL;
        st = sla_solver_create(ctx, A, &o, &S);
        fz_check_error(ctx, st, S);
        if (S) {
            double rhs[6] = {1, 2, 3, 4, 5, 6}, x[6] = {0};
            sla_solve_info info;
            st = sla_solver_solve(ctx, S, 0, 1, rhs, 6, x, 6, &info);
            FUZZ_ASSERT(st == SLA_OK || st == SLA_NOT_CONVERGED);
            FUZZ_ASSERT(!info.converged || info.residual <= fmax(o.rtol, 1e-12) * 1.0001 ||
                        info.residual_abs <= o.atol * 1.0001 || info.residual < 1e-12);
            sla_solver_destroy(&S);
        }
        sla_matrix_destroy(&A);
    }
    sla_ctx_destroy(&ctx);
    free(s);
    return 0;
}
