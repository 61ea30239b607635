/* The positive-definiteness query: whether one value array of a matrix is
 * symmetric positive definite, decided by cheap structural tests
 * (square, symmetric, positive diagonal) and then a trial Cholesky
 * factorization through the solver object (method=cholesky), whose
 * SLA_ERR_NOT_SPD or SLA_ERR_SINGULAR is the answer "no" rather than an
 * error. For bindings (SparseTensor.is_positive_definite) and callers that
 * want to choose a method before solving. */
#include "ops_internal.h"

#include "sla/solver.h"

/* The symmetry method=cholesky accepts (solver.c's SLA_SYM_TOL), relative
 * to max |a|. */
#define SPD_SYM_TOL 1e-12

sla_status sla_matrix_is_spd(sla_ctx *ctx, const sla_matrix *A, sla_int ib, bool *answer)
{
    if (!A || !answer) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_is_spd: NULL argument");
    *answer = false;
    if (sla__require_real(ctx, A, "sla_matrix_is_spd")) return SLA_ERR_UNSUPPORTED;
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "sla_matrix_is_spd: value array %lld out of range [0, %lld)",
                          (long long)ib, (long long)A->nbatch);
    if (A->nrows != A->ncols) return sla__ok(ctx, SLA_OK);
    if (A->nrows == 0) {
        *answer = true;
        return sla__ok(ctx, SLA_OK);
    }
    sla_matrix_props props;
    sla_status st = sla_matrix_properties(ctx, A, ib, 0.0, &props);
    if (st) return st;
    if (!(props.symmetry_error <= SPD_SYM_TOL) || !props.positive_diagonal) return sla__ok(ctx, SLA_OK);

    sla_matrix view;
    sla__single_view(A, ib, &view);
    sla_solver_options opts;
    sla_solver_options_default(&opts);
    opts.method = SLA_METHOD_CHOLESKY;
    sla_solver *S = NULL;
    st = sla_solver_create(ctx, &view, &opts, &S);
    sla_solver_destroy(&S);
    if (st == SLA_ERR_NOT_SPD || st == SLA_ERR_SINGULAR) {
        return sla__ok(ctx, SLA_OK);
    }
    if (st) return st;
    *answer = true;
    return sla__ok(ctx, SLA_OK);
}
