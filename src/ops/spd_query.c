/* The positive-definiteness query: whether one value array of a matrix is
 * symmetric positive definite, decided by cheap structural tests
 * (square, symmetric, positive diagonal) and then a trial Cholesky
 * factorization through the solver object (method=cholesky), whose
 * SLA_ERR_NOT_SPD or SLA_ERR_SINGULAR is the answer "no" rather than an
 * error. For bindings (SparseTensor.is_positive_definite) and callers that
 * want to choose a method before solving. A complex matrix is asked the
 * same of its Hermitian structure: Hermitian, a real positive diagonal, a
 * trial complex Cholesky (CHOLMOD's, else a dense one for small orders). */
#include "ops_internal.h"

#include "sla/solver.h"
#include "../solvers/zsolver.h"

#include <complex.h>
#include <math.h>

/* The symmetry method=cholesky accepts (solver.c's SLA_SYM_TOL), relative
 * to max |a|. */
#define SPD_SYM_TOL 1e-12
/* The largest order the dense complex Cholesky answers for when the build
 * has no complex CHOLMOD (n^3/3 complex flops: about a second at 1500). */
#define SPD_DENSE_MAX 1500

/* A dense complex Cholesky (upper, column-major, in place) of the n x n
 * Hermitian D: true when every pivot is real and positive. */
static bool dense_zchol(sla__z *D, sla_int n)
{
    for (sla_int j = 0; j < n; j++) {
        double d = creal(D[j * n + j]);
        for (sla_int k = 0; k < j; k++) d -= creal(conj(D[j * n + k]) * D[j * n + k]);
        if (!(d > 0.0) || !isfinite(d)) return false;
        const double r = sqrt(d);
        D[j * n + j] = r;
        for (sla_int i = j + 1; i < n; i++) { /* U[j, i] = (A[j, i] - sum_k conj(U[k, j]) U[k, i]) / r */
            sla__z s = D[i * n + j];
            for (sla_int k = 0; k < j; k++) s -= conj(D[j * n + k]) * D[i * n + k];
            D[i * n + j] = s / r;
        }
    }
    return true;
}

/* The complex question: Hermitian (to SPD_SYM_TOL), a real positive
 * diagonal, and a trial Cholesky of value array ib that succeeds. */
static sla_status zis_spd(sla_ctx *ctx, const sla_matrix *A, sla_int ib, bool *answer)
{
    sla_matrix_props props;
    sla_status st = sla_matrix_properties(ctx, A, ib, 0.0, &props);
    if (st) return st;
    if (!(props.hermitian_error <= SPD_SYM_TOL) || !props.positive_diagonal) return sla__ok(ctx, SLA_OK);
    const sla__zdirect_ops *chol = sla__zdirect_backend(SLA_METHOD_CHOLESKY);
    if (chol) {
        const sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .ldlt = false, .nthreads = sla__threads(ctx)};
        void *sym = NULL, *num = NULL;
        st = chol->analyze(ctx, A, &o, &sym);
        if (!st) st = chol->factor(ctx, sym, A, ib, &num);
        if (num) chol->free_num(num);
        if (sym) chol->free_sym(sym);
        if (st == SLA_ERR_NOT_SPD || st == SLA_ERR_SINGULAR) return sla__ok(ctx, SLA_OK);
        if (st) return st;
        *answer = true;
        return sla__ok(ctx, SLA_OK);
    }
    const sla_int n = A->nrows;
    if (n > SPD_DENSE_MAX)
        return sla__error(ctx, SLA_ERR_UNAVAILABLE,
                          "sla_matrix_is_spd: a complex matrix of order %lld needs CHOLMOD's complex "
                          "Cholesky, not in this build (the dense fallback stops at order %d)",
                          (long long)n, SPD_DENSE_MAX);
    sla__z *D = sla__ctx_malloc(ctx, (size_t)n * (size_t)n, sizeof *D, "sla_matrix_is_spd: dense copy");
    if (!D) return SLA_ERR_NOMEM;
    st = sla_matrix_to_dense_z(ctx, A, ib, (sla_complex *)D, n);
    if (!st) *answer = dense_zchol(D, n);
    sla_allocator al = sla__ctx_alloc(ctx);
    sla__free(&al, D);
    return st ? st : sla__ok(ctx, SLA_OK);
}

sla_status sla_matrix_is_spd(sla_ctx *ctx, const sla_matrix *A, sla_int ib, bool *answer)
{
    if (!A || !answer) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_matrix_is_spd: NULL argument");
    *answer = false;
    if (ib < 0 || ib >= A->nbatch)
        return sla__error(ctx, SLA_ERR_INDEX, "sla_matrix_is_spd: value array %lld out of range [0, %lld)",
                          (long long)ib, (long long)A->nbatch);
    if (A->nrows != A->ncols) return sla__ok(ctx, SLA_OK);
    if (A->nrows == 0) {
        *answer = true;
        return sla__ok(ctx, SLA_OK);
    }
    if (sla__is_complex(A)) return zis_spd(ctx, A, ib, answer);
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
