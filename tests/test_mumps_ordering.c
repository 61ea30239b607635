/* The mumps method's ordering option: auto, amd, metis and natural are
 * honoured and reported (sla_solve_info.ordering: the ordering MUMPS's
 * analysis says it used, INFOG(7); "metis" is sla's METIS_NodeND given as
 * MUMPS's PERM_IN when METIS is in the build), complex (LDL^T on a complex
 * symmetric 2-D Helmholtz matrix, LU on a general complex one) and real;
 * the factor entries reported (INFOG(29)) are larger for the natural
 * order of a grid than for the fill-reducing ones; every ordering gives
 * the same solution, checked against a residual
 * computed here from the CSR arrays. And the memory limit auto hands the
 * mumps backend: an analysis whose estimate (INFOG(17)) exceeds it is
 * refused with SLA_ERR_TOO_LARGE, one within it factors. */
#include "test_util.h"

#include <complex.h>

#include "solvers/zsolver.h"

typedef double _Complex zc;

static const char *const orderings[] = {"auto", "amd", "metis", "natural"};

/* ||b - A x|| / ||b|| from A's CSR arrays (complex128, one value array). */
static double zrelres(const sla_matrix *A, const zc *b, const zc *x)
{
    sla_int n = sla_matrix_nrows(A);
    const sla_int *rp = sla_matrix_rowptr(A);
    sla_int *ci = malloc((size_t)rp[n] * sizeof *ci + 1);
    sla_matrix_get_colind(A, ci);
    const zc *v = sla_matrix_values(A, 0);
    double rn = 0.0, bn = 0.0;
    for (sla_int i = 0; i < n; i++) {
        zc s = b[i];
        for (sla_int p = rp[i]; p < rp[i + 1]; p++) s -= v[p] * x[ci[p]];
        rn += creal(s * conj(s));
        bn += creal(b[i] * conj(b[i]));
    }
    free(ci);
    return sqrt(rn / bn);
}

/* The ordering name expected in info for request `ord`. */
static bool ordering_ok(const char *ord, const char *got, bool metis)
{
    if (!strcmp(ord, "auto")) return !strcmp(got, "amf");
    if (!strcmp(ord, "metis")) return metis ? !strcmp(got, "metis") : got[0] != '\0';
    return !strcmp(got, ord);
}

/* fnnz[k]: the factor entries reported for orderings[k] */
static void check_complex(sla_ctx *ctx, const sla_matrix *A, bool metis, double *fnnz)
{
    sla_int n = sla_matrix_nrows(A);
    zc *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x), *x0 = malloc((size_t)n * sizeof *x0);
    unsigned long long s = 7;
    for (sla_int i = 0; i < n; i++) b[i] = tu_rand(&s) + tu_rand(&s) * _Complex_I;
    for (size_t k = 0; k < sizeof orderings / sizeof *orderings; k++) {
        char opt[64];
        snprintf(opt, sizeof opt, "method=mumps,ordering=%s", orderings[k]);
        sla_solver_options o;
        sla_solver_options_default(&o);
        CHECK_OK(ctx, sla_solver_options_parse(ctx, opt, &o));
        sla_solver *S = NULL;
        sla_solve_info info;
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
        if (!S) continue;
        CHECK_OK(ctx, sla_zsolver_solve(ctx, S, 0, SLA_OP_N, (const sla_complex *)b, (sla_complex *)x, &info));
        if (!ordering_ok(orderings[k], info.ordering, metis))
            fprintf(stderr, "complex ordering %s reported as \"%s\"\n", orderings[k], info.ordering);
        CHECK(ordering_ok(orderings[k], info.ordering, metis));
        CHECK(!strcmp(info.method, "mumps"));
        fnnz[k] = info.factor_nnz;
        CHECK(info.factor_nnz >= (double)n); /* at least the diagonal */
        CHECK(zrelres(A, b, x) < 1e-13);
        CHECK(info.backward_error >= 0.0 && info.backward_error < 1e-14);
        if (k == 0) memcpy(x0, x, (size_t)n * sizeof *x);
        double d = 0.0, m = 0.0;
        for (sla_int i = 0; i < n; i++) d = fmax(d, cabs(x[i] - x0[i])), m = fmax(m, cabs(x0[i]));
        CHECK(d <= 1e-10 * m);
        sla_solver_destroy(&S);
    }
    free(b);
    free(x);
    free(x0);
}

static void check_real(sla_ctx *ctx, const sla_matrix *A, bool metis)
{
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    tu_fill(b, n, 11);
    for (size_t k = 0; k < sizeof orderings / sizeof *orderings; k++) {
        char opt[64];
        snprintf(opt, sizeof opt, "method=mumps,ordering=%s", orderings[k]);
        sla_solver_options o;
        sla_solver_options_default(&o);
        CHECK_OK(ctx, sla_solver_options_parse(ctx, opt, &o));
        sla_solver *S = NULL;
        sla_solve_info info;
        CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S));
        if (!S) continue;
        CHECK_OK(ctx, sla_solver_solve(ctx, S, 0, 1, b, n, x, n, &info));
        if (!ordering_ok(orderings[k], info.ordering, metis))
            fprintf(stderr, "real ordering %s reported as \"%s\"\n", orderings[k], info.ordering);
        CHECK(ordering_ok(orderings[k], info.ordering, metis));
        CHECK(tu_relres(A, 0, b, x, 0) < 1e-12);
        sla_solver_destroy(&S);
    }
    free(b);
    free(x);
}

static void check_memory_limit(sla_ctx *ctx, const sla_matrix *A)
{
    const sla__zdirect_ops *d = sla__zdirect_backend(SLA_METHOD_MUMPS);
    CHECK(d != NULL);
    if (!d) return;
    const double limits[2] = {1e3, 1e12}; /* 1 kB: too small for any analysis; 1 TB: enough */
    for (int t = 0; t < 2; t++) {
        sla__direct_opts o = {.ordering = SLA_ORDER_AUTO, .nthreads = 1, .memory_limit = limits[t]};
        void *sym = NULL, *num = NULL;
        CHECK_OK(ctx, d->analyze(ctx, A, &o, &sym));
        if (t == 0) CHECK_ERR(ctx, d->factor(ctx, sym, A, 0, &num), SLA_ERR_TOO_LARGE, "INFOG(17)");
        else CHECK_OK(ctx, d->factor(ctx, sym, A, 0, &num));
        CHECK((num != NULL) == (t == 1));
        if (num) d->free_num(num);
        d->free_sym(sym);
    }
}

int main(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    if (!sla_method_available(SLA_METHOD_MUMPS)) {
        printf("mumps not in this build: skipped\n");
        sla_ctx_destroy(&ctx);
        return tu_finish("test_mumps_ordering");
    }
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 12, &A));
    sla_int part[144];
    bool metis = sla_partition(ctx, A, 2, SLA_PARTITION_METIS, NULL, 0, part) == SLA_OK;
    check_real(ctx, A, metis);
    sla_matrix_destroy(&A);
    /* complex symmetric: LDL^T */
    double fnnz[4] = {0};
    CHECK_OK(ctx, sla_gen_helmholtz2d(ctx, 24, 40.0, 0.1, &A));
    if (A) check_complex(ctx, A, metis, fnnz);
    /* the natural order of a 24 x 24 grid fills its band: more entries than
     * any fill-reducing order */
    CHECK(fnnz[3] > fnnz[0] && fnnz[3] > fnnz[1] && fnnz[3] > fnnz[2]);
    if (A) check_memory_limit(ctx, A);
    sla_matrix_destroy(&A);
    /* general complex, pattern not symmetric: LU */
    enum { N = 150 };
    sla_int rp[N + 1], ci[3 * N];
    zc v[3 * N];
    sla_int q = 0;
    unsigned long long s = 3;
    for (sla_int i = 0; i < N; i++) {
        rp[i] = q;
        if (i >= 2) ci[q] = i - 2, v[q++] = tu_rand(&s) + 0.5 * _Complex_I;
        ci[q] = i, v[q++] = 3.0 + tu_rand(&s) * _Complex_I;
        if (i + 7 < N) ci[q] = i + 7, v[q++] = tu_rand(&s) - tu_rand(&s) * _Complex_I;
    }
    rp[N] = q;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, N, N, rp, ci, SLA_C128, 1, v, SLA_COPY, &A));
    if (A) check_complex(ctx, A, metis, fnnz);
    sla_matrix_destroy(&A);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_mumps_ordering");
}
