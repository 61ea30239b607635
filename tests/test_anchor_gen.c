/* The anchor comparison's copy of the generators (bench/anchors/anchor_gen.h,
 * used by the PETSc driver, which does not link sla) against sla's own:
 * the same pattern and bitwise-equal values for 2-D and 3-D Poisson and
 * 2-D diffusion (the first kappa and after training steps), and a
 * checksum that tells a transposed or shifted entry. */
#include "test_util.h"

#include "../bench/anchors/anchor_gen.h"

/* A's rows equal anchor_row's, entry by entry and bit for bit. */
static int same_rows(const sla_matrix *A, int dim, long long N, const double *kappa)
{
    anchor_grid g = anchor_grid_make(dim, N);
    long long n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    if (n != g.n) return 0;
    const sla_int *rp = sla_matrix_rowptr(A);
    const double *v = sla_matrix_values(A, 0);
    sla_int *ci = malloc((size_t)(nnz + 1) * sizeof *ci);
    sla_matrix_get_colind(A, ci);
    int ok = 1;
    long long cols[7];
    double vals[7];
    for (long long p = 0; p < n && ok; p++) {
        int k = anchor_row(&g, kappa, p, cols, vals);
        if (k != rp[p + 1] - rp[p]) ok = 0;
        for (int t = 0; t < k && ok; t++)
            if (cols[t] != ci[rp[p] + t] || memcmp(&vals[t], &v[rp[p] + t], sizeof(double))) ok = 0;
    }
    free(ci);
    return ok;
}

static void test_poisson(sla_ctx *ctx)
{
    for (int dim = 2; dim <= 3; dim++) {
        long long sizes[] = {1, 2, 5, 13};
        for (int s = 0; s < 4; s++) {
            sla_matrix *A = NULL;
            CHECK_OK(ctx, sla_gen_poisson(ctx, dim, (sla_int)sizes[s], &A));
            CHECK(same_rows(A, dim, sizes[s], NULL));
            sla_matrix_destroy(&A);
        }
    }
    /* the comparison can fail: 3-D rows are not 2-D rows */
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 3, 4, &A));
    CHECK(!same_rows(A, 2, 8, NULL));
    sla_matrix_destroy(&A);
}

static void test_diffusion(sla_ctx *ctx)
{
    long long sizes[] = {1, 3, 17};
    for (int s = 0; s < 3; s++) {
        long long N = sizes[s];
        double *kappa = malloc((size_t)((N + 1) * (N + 1)) * sizeof *kappa);
        anchor_kappa0(N, kappa);
        for (int c = 0; c < (N + 1) * (N + 1); c++) CHECK(kappa[c] >= 0.1 && kappa[c] <= 10.0);
        unsigned long long s2 = 777;
        for (int step = 0; step < 3; step++) {
            sla_matrix *A = NULL;
            CHECK_OK(ctx, sla_gen_diffusion2d(ctx, (sla_int)N, kappa, &A));
            CHECK(same_rows(A, 2, N, kappa));
            if (N > 1) CHECK(!same_rows(A, 2, N, NULL)); /* not Poisson */
            sla_matrix_destroy(&A);
            anchor_kappa_step(N, 0.01, &s2, kappa);
        }
        free(kappa);
    }
}

static void test_checksum(void)
{
    /* the weights of (i, j) and (j, i) differ for most pairs, and a shift
     * by one column changes them */
    int asym = 0, shift = 0;
    for (long long i = 0; i < 50; i++) {
        asym += anchor_weight(i, i + 1) != anchor_weight(i + 1, i);
        shift += anchor_weight(i, i + 1) != anchor_weight(i, i + 2);
        CHECK(anchor_weight(i, 3 * i) >= 1.0 && anchor_weight(i, 3 * i) < 2.0);
    }
    CHECK(asym >= 45 && shift >= 45);
}

int main(void)
{
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    test_poisson(ctx);
    test_diffusion(ctx);
    test_checksum();
    sla_ctx_destroy(&ctx);
    return tu_finish("test_anchor_gen");
}
