/* Row partitions (sla_partition) and part extraction (sla_partition_extract):
 * every row assigned, balance, METIS's edge cut below the contiguous blocks'
 * on a 2-D Poisson matrix with shuffled numbering, compact geometric parts
 * on grid coordinates, and each part's local matvec plus halo values
 * reproducing its rows of the global matvec; bad input; allocation failures. */
#include "test_util.h"

static sla_ctx *ctx;

/* 2-D Poisson on an N x N grid with rows renumbered by a seeded shuffle:
 * old row r becomes perm[r]; coords (x, y) of the new rows. */
static sla_matrix *shuffled_poisson(sla_int N, double *coords, unsigned long long seed)
{
    sla_matrix *P = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, N, &P));
    sla_int n = N * N, nnz = sla_matrix_nnz(P);
    sla_int *perm = malloc((size_t)n * sizeof *perm);
    for (sla_int i = 0; i < n; i++) perm[i] = i;
    unsigned long long s = seed;
    for (sla_int i = n - 1; i > 0; i--) { /* Fisher-Yates */
        sla_int j = (sla_int)((tu_rand(&s) + 1.0) * 0.5 * (double)(i + 1));
        if (j > i) j = i;
        sla_int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    sla_int *r = malloc((size_t)nnz * sizeof *r), *c = malloc((size_t)nnz * sizeof *c);
    sla_matrix_get_rowind(P, r);
    sla_matrix_get_colind(P, c);
    for (sla_int k = 0; k < nnz; k++) {
        r[k] = perm[r[k]];
        c[k] = perm[c[k]];
    }
    double *v = malloc((size_t)nnz * sizeof *v);
    memcpy(v, sla_matrix_values(P, 0), (size_t)nnz * sizeof *v);
    for (sla_int k = 0; k < nnz; k++) v[k] *= 1.0 + 0.25 * tu_rand(&s); /* unsymmetric values */
    if (coords)
        for (sla_int old = 0; old < n; old++) {
            coords[2 * perm[old]] = (double)(old % N);
            coords[2 * perm[old] + 1] = (double)(old / N);
        }
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, n, n, nnz, r, c, SLA_F64, 1, v, NULL, &A));
    free(perm);
    free(r);
    free(c);
    free(v);
    sla_matrix_destroy(&P);
    return A;
}

/* Every row in [0, P), each part's size in [lo, hi]. */
static void check_balance(sla_int n, sla_int P, const sla_int *part, sla_int lo, sla_int hi)
{
    sla_int *cnt = calloc((size_t)P, sizeof *cnt);
    int bad = 0;
    for (sla_int i = 0; i < n; i++) {
        if (part[i] < 0 || part[i] >= P) bad++;
        else cnt[part[i]]++;
    }
    CHECK(bad == 0);
    for (sla_int q = 0; q < P; q++) {
        CHECK(cnt[q] >= lo);
        CHECK(cnt[q] <= hi);
    }
    free(cnt);
}

/* Sum over parts of the bounding-box perimeter (grid units): compact parts
 * of a square grid in P pieces stay near 4 sqrt(n P). */
static double box_perimeter(sla_int n, sla_int P, const double *coords, const sla_int *part)
{
    double tot = 0.0;
    for (sla_int q = 0; q < P; q++) {
        double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
        for (sla_int i = 0; i < n; i++)
            if (part[i] == q) {
                x0 = fmin(x0, coords[2 * i]);
                x1 = fmax(x1, coords[2 * i]);
                y0 = fmin(y0, coords[2 * i + 1]);
                y1 = fmax(y1, coords[2 * i + 1]);
            }
        tot += 2.0 * (x1 - x0 + 1.0 + y1 - y0 + 1.0);
    }
    return tot;
}

static void test_methods(void)
{
    sla_int N = 32, n = N * N, P = 8;
    double *xy = malloc((size_t)(2 * n) * sizeof *xy);
    sla_matrix *A = shuffled_poisson(N, xy, 7);
    sla_int *part = malloc((size_t)n * sizeof *part);
    sla_int cut_block = 0, cut;

    CHECK_OK(ctx, sla_partition(ctx, A, P, SLA_PARTITION_CONTIGUOUS, NULL, 0, part));
    check_balance(n, P, part, n / P, (n + P - 1) / P);
    for (sla_int i = 0; i < n; i++) CHECK(part[i] == i * P / n);
    CHECK_OK(ctx, sla_partition_edge_cut(ctx, A, part, &cut_block));
    /* a shuffled numbering: blocks cut most edges (about 7/8 of 2 * 2 N (N - 1)) */
    CHECK(cut_block > 2 * 2 * N * (N - 1) / 2);

    /* rcb and hilbert on the grid coordinates: exact balance, compact parts
     * (perimeter near that of 8 rectangles 16 x 8: 8 * 48 = 384; the
     * shuffled blocks span the whole grid, 8 * 128) and a small cut */
    sla_partition_method geo[2] = {SLA_PARTITION_RCB, SLA_PARTITION_HILBERT};
    for (int g = 0; g < 2; g++) {
        CHECK_OK(ctx, sla_partition(ctx, A, P, geo[g], xy, 2, part));
        check_balance(n, P, part, n / P, (n + P - 1) / P);
        double per = box_perimeter(n, P, xy, part);
        CHECK(per <= (g == 0 ? 384.0 : 2.0 * 384.0));
        CHECK_OK(ctx, sla_partition_edge_cut(ctx, A, part, &cut));
        CHECK(cut < cut_block / 4);
        printf("  %s: box perimeter %.0f, edge cut %lld (blocks %lld)\n", g ? "hilbert" : "rcb", per,
               (long long)cut, (long long)cut_block);
    }
    /* rcb with 3 parts (uneven halves) and in 1-D and 3-D */
    CHECK_OK(ctx, sla_partition(ctx, A, 3, SLA_PARTITION_RCB, xy, 2, part));
    check_balance(n, 3, part, n / 3, (n + 2) / 3);
    double *x1 = malloc((size_t)n * sizeof *x1), *x3 = calloc((size_t)(3 * n), sizeof *x3);
    for (sla_int i = 0; i < n; i++) {
        x1[i] = xy[2 * i] + 1e-3 * xy[2 * i + 1];
        x3[3 * i] = xy[2 * i];
        x3[3 * i + 1] = xy[2 * i + 1];
    }
    CHECK_OK(ctx, sla_partition(ctx, A, 5, SLA_PARTITION_HILBERT, x1, 1, part));
    check_balance(n, 5, part, n / 5, (n + 4) / 5);
    for (sla_int i = 0; i < n; i++) /* 1-D: the order of x1 */
        for (sla_int j = 0; j < n; j += 97) CHECK(x1[i] < x1[j] ? part[i] <= part[j] : 1);
    CHECK_OK(ctx, sla_partition(ctx, A, 4, SLA_PARTITION_RCB, x3, 3, part));
    check_balance(n, 4, part, n / 4, n / 4);
    CHECK(box_perimeter(n, 4, xy, part) <= 4 * 64.0);

#if SLA_HAS_METIS
    CHECK_OK(ctx, sla_partition(ctx, A, P, SLA_PARTITION_METIS, NULL, 0, part));
    check_balance(n, P, part, 1, (sla_int)(1.1 * (double)n / (double)P));
    CHECK_OK(ctx, sla_partition_edge_cut(ctx, A, part, &cut));
    printf("  metis: edge cut %lld (blocks %lld)\n", (long long)cut, (long long)cut_block);
    CHECK(cut < cut_block / 4);
    CHECK_OK(ctx, sla_partition(ctx, A, 1, SLA_PARTITION_METIS, NULL, 0, part));
    check_balance(n, 1, part, n, n);
#else
    CHECK_ERR(ctx, sla_partition(ctx, A, P, SLA_PARTITION_METIS, NULL, 0, part), SLA_ERR_UNAVAILABLE,
              "not available");
#endif
    free(x1);
    free(x3);
    free(xy);
    free(part);
    sla_matrix_destroy(&A);
}

/* Each part: A_local [x_owned; x_ghost] equals (A x)[owned]; the ghosts are
 * exactly the off-part columns of the owned rows; send lists agree with
 * the other parts' ghosts; every value array is carried. */
static void test_extract(sla_partition_method m, sla_int P)
{
    sla_int N = 12, n = N * N;
    double *xy = malloc((size_t)(2 * n) * sizeof *xy);
    sla_matrix *A1 = shuffled_poisson(N, xy, 11);
    /* two value arrays: the second is the first times 3 */
    sla_int nnz = sla_matrix_nnz(A1);
    double *v2 = malloc((size_t)(2 * nnz) * sizeof *v2);
    memcpy(v2, sla_matrix_values(A1, 0), (size_t)nnz * sizeof *v2);
    for (sla_int k = 0; k < nnz; k++) v2[nnz + k] = 3.0 * v2[k];
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_colind(A1, ci);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, sla_matrix_rowptr(A1), ci, SLA_F64, 2, v2, SLA_COPY, &A));
    sla_int *part = malloc((size_t)n * sizeof *part);
    sla_status st = sla_partition(ctx, A, P, m, xy, 2, part);
    if (st == SLA_ERR_UNAVAILABLE) goto done;
    CHECK_OK(ctx, st);
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)(2 * n) * sizeof *y);
    tu_fill(x, n, 5);
    sla_matvec(ctx, A, 0, 1, x, n, y, n);
    sla_matvec(ctx, A, 1, 1, x, n, y + n, n);
    sla_partition_local **loc = calloc((size_t)P, sizeof *loc);
    sla_int total = 0, sends = 0, ghosts = 0;
    for (sla_int k = 0; k < P; k++) {
        CHECK_OK(ctx, sla_partition_extract(ctx, A, P, part, k, &loc[k]));
        sla_partition_local *L = loc[k];
        if (!L) continue;
        total += L->nowned;
        CHECK(sla_matrix_nrows(L->A) == L->nowned);
        CHECK(sla_matrix_ncols(L->A) == L->nowned + L->nghost);
        CHECK(sla_matrix_nbatch(L->A) == 2);
        CHECK(L->recv_ptr[L->nparts] == L->nghost && L->recv_ptr[k + 1] == L->recv_ptr[k]);
        sla_int nl = L->nowned + L->nghost;
        double *xl = malloc((size_t)(nl + 1) * sizeof *xl), *yl = malloc((size_t)(L->nowned + 1) * sizeof *yl);
        for (sla_int t = 0; t < L->nowned; t++) {
            CHECK(part[L->owned[t]] == k);
            if (t) CHECK(L->owned[t] > L->owned[t - 1]);
            xl[t] = x[L->owned[t]];
        }
        for (sla_int g = 0; g < L->nghost; g++) {
            CHECK(part[L->ghost[g]] == L->ghost_owner[g] && L->ghost_owner[g] != k);
            CHECK(g >= L->recv_ptr[L->ghost_owner[g]] && g < L->recv_ptr[L->ghost_owner[g] + 1]);
            xl[L->nowned + g] = x[L->ghost[g]]; /* the halo values */
        }
        for (sla_int ib = 0; ib < 2; ib++) {
            CHECK_OK(ctx, sla_matvec(ctx, L->A, ib, 1, xl, nl, yl, L->nowned));
            double err = 0.0;
            for (sla_int t = 0; t < L->nowned; t++) err = fmax(err, fabs(yl[t] - y[ib * n + L->owned[t]]));
            CHECK(err <= 1e-13);
        }
        /* the ghosts are the off-part columns of the owned rows */
        sla_int expect = 0;
        char *mark = calloc((size_t)n, 1);
        const sla_int *rp = sla_matrix_rowptr(A);
        for (sla_int t = 0; t < L->nowned; t++)
            for (sla_int p = rp[L->owned[t]]; p < rp[L->owned[t] + 1]; p++)
                if (part[ci[p]] != k && !mark[ci[p]]) {
                    mark[ci[p]] = 1;
                    expect++;
                }
        CHECK(expect == L->nghost);
        free(mark);
        /* src maps the local entries back */
        const double *lv = sla_matrix_values(L->A, 0);
        for (sla_int q = 0; q < sla_matrix_nnz(L->A); q++) CHECK(lv[q] == v2[L->src[q]]);
        sends += L->send_ptr[P];
        ghosts += L->nghost;
        free(xl);
        free(yl);
    }
    CHECK(total == n);
    CHECK(sends == ghosts); /* what k sends q is what q receives from k */
    for (sla_int k = 0; k < P; k++)
        for (sla_int q = 0; q < P && loc[k] && loc[q]; q++) {
            sla_int ns = loc[k]->send_ptr[q + 1] - loc[k]->send_ptr[q];
            sla_int nr = loc[q]->recv_ptr[k + 1] - loc[q]->recv_ptr[k];
            CHECK(ns == nr);
            for (sla_int t = 0; t < ns && t < nr; t++) /* both ascending in global number */
                CHECK(loc[k]->owned[loc[k]->send_rows[loc[k]->send_ptr[q] + t]] ==
                      loc[q]->ghost[loc[q]->recv_ptr[k] + t]);
        }
    for (sla_int k = 0; k < P; k++) sla_partition_local_destroy(&loc[k]);
    CHECK(loc[0] == NULL);
    sla_partition_local_destroy(NULL);
    free(loc);
    free(x);
    free(y);
done:
    free(part);
    free(ci);
    free(v2);
    free(xy);
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&A1);
}

static void test_errors(void)
{
    sla_matrix *A = NULL, *R = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 1, 6, &A));
    sla_int r[] = {0, 1}, c[] = {0, 2};
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, 2, 3, 2, r, c, SLA_F64, 1, NULL, NULL, &R));
    sla_int part[6];
    double xy[12] = {0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0};
    CHECK_ERR(ctx, sla_partition(ctx, NULL, 2, SLA_PARTITION_CONTIGUOUS, NULL, 0, part), SLA_ERR_ARGUMENT, "NULL");
    CHECK_ERR(ctx, sla_partition(ctx, R, 2, SLA_PARTITION_CONTIGUOUS, NULL, 0, part), SLA_ERR_DIMENSION, "square");
    CHECK_ERR(ctx, sla_partition(ctx, A, 7, SLA_PARTITION_CONTIGUOUS, NULL, 0, part), SLA_ERR_DIMENSION, "nparts");
    CHECK_ERR(ctx, sla_partition(ctx, A, 0, SLA_PARTITION_CONTIGUOUS, NULL, 0, part), SLA_ERR_DIMENSION, "nparts");
    CHECK_ERR(ctx, sla_partition(ctx, A, 2, (sla_partition_method)9, NULL, 0, part), SLA_ERR_ARGUMENT, "unknown");
    CHECK_ERR(ctx, sla_partition(ctx, A, 2, SLA_PARTITION_RCB, NULL, 2, part), SLA_ERR_ARGUMENT, "coords");
    CHECK_ERR(ctx, sla_partition(ctx, A, 2, SLA_PARTITION_HILBERT, xy, 4, part), SLA_ERR_ARGUMENT, "dim");
    xy[5] = NAN;
    CHECK_ERR(ctx, sla_partition(ctx, A, 2, SLA_PARTITION_RCB, xy, 2, part), SLA_ERR_ARGUMENT, "point 2");
    xy[5] = 0;
    CHECK_OK(ctx, sla_partition(ctx, A, 2, SLA_PARTITION_HILBERT, xy, 2, part));
    for (int i = 0; i < 6; i++) CHECK(part[i] == (i >= 3));
    sla_partition_local *L = (sla_partition_local *)&L; /* set to NULL on failure */
    CHECK_ERR(ctx, sla_partition_extract(ctx, A, 2, part, 2, &L), SLA_ERR_INDEX, "part 2");
    CHECK(L == NULL);
    part[4] = 5;
    CHECK_ERR(ctx, sla_partition_extract(ctx, A, 2, part, 0, &L), SLA_ERR_INDEX, "row 4");
    CHECK_ERR(ctx, sla_partition_extract(ctx, R, 2, part, 0, &L), SLA_ERR_DIMENSION, "square");
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&R);
    /* 0 x 0 */
    sla_int rp0 = 0;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, 0, 0, &rp0, NULL, SLA_F64, 1, NULL, SLA_COPY, &A));
    CHECK_OK(ctx, sla_partition(ctx, A, 3, SLA_PARTITION_CONTIGUOUS, NULL, 0, NULL));
    CHECK_OK(ctx, sla_partition_extract(ctx, A, 3, NULL, 1, &L));
    CHECK(L && L->nowned == 0 && L->nghost == 0);
    sla_partition_local_destroy(&L);
    sla_matrix_destroy(&A);
}

/* Every allocation of sla_partition (rcb, hilbert) and sla_partition_extract
 * made to fail in turn: SLA_ERR_NOMEM, nothing live. */
static void test_nomem(void)
{
    sla_int N = 6, n = N * N;
    double *xy = malloc((size_t)(2 * n) * sizeof *xy);
    sla_matrix *A = shuffled_poisson(N, xy, 3);
    sla_int *part = malloc((size_t)n * sizeof *part);
    counter cnt = {0, -1, 0, 0};
    sla_allocator al = {count_malloc, count_free, &cnt};
    sla_ctx *c = NULL;
    sla_ctx_create(&c);
    sla_ctx_set_allocator(c, &al);
    int bad = 0;
    for (long k = 0; k < 64; k++) {
        cnt.calls = 0;
        cnt.fail_at = k;
        cnt.failures = 0;
        sla_status s1 = sla_partition(c, A, 3, SLA_PARTITION_RCB, xy, 2, part);
        sla_status s2 = sla_partition(c, A, 3, SLA_PARTITION_HILBERT, xy, 2, part);
        sla_partition_local *L = NULL;
        sla_status s3 = sla_partition_extract(c, A, 3, part, 1, &L);
        if (cnt.failures && (s1 == SLA_OK) + (s2 == SLA_OK) + (s3 == SLA_OK) != 2) bad++;
        if (cnt.failures && !(s1 == SLA_ERR_NOMEM || s2 == SLA_ERR_NOMEM || s3 == SLA_ERR_NOMEM)) bad++;
        sla_partition_local_destroy(&L);
        if (cnt.live != 0) bad++;
    }
    CHECK(bad == 0);
    sla_ctx_destroy(&c);
    free(xy);
    free(part);
    sla_matrix_destroy(&A);
}

int main(void)
{
    sla_ctx_create(&ctx);
    test_methods();
    sla_partition_method ms[4] = {SLA_PARTITION_CONTIGUOUS, SLA_PARTITION_RCB, SLA_PARTITION_HILBERT,
                                  SLA_PARTITION_METIS};
    for (int i = 0; i < 4; i++) {
        test_extract(ms[i], 4);
        test_extract(ms[i], 7);
    }
    test_errors();
    test_nomem();
    sla_ctx_destroy(&ctx);
    return tu_finish("test_partition");
}
