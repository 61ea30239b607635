#define _POSIX_C_SOURCE 200809L
/* The distributed layer, run by ctest through mpiexec on 1, 2, 3 and 4
 * ranks. Every rank builds the same global test matrices (the generators
 * are deterministic), so each distributed result is compared with the
 * single-process library and with dense LAPACK on every rank. */
#include "test_util.h"

#include <mpi.h>
#include <unistd.h>

#include "test_dist_util.h"

/* ---- SpMV, transposed SpMV, halo adjoint test --------------------------------------- */

static void test_spmv(sla_ctx *ctx, const sla_matrix *A, const char *name)
{
    sla_int n = sla_matrix_nrows(A);
    double *x = malloc((size_t)n * sizeof *x), *yref = malloc((size_t)n * sizeof *yref);
    double *tref = malloc((size_t)n * sizeof *tref), *yg = malloc((size_t)n * sizeof *yg);
    tu_fill(x, n, 11);
    sla_matvec(ctx, A, 0, 1, x, n, yref, n);
    sla_matvec_transpose(ctx, A, 0, 1, x, n, tref, n);
    for (int how = 0; how < 3; how++) {
        sla_dist_matrix *D = distribute(ctx, A, how);
        if (!D) continue;
        sla_int nl = sla_dist_matrix_nlocal(D), ng = sla_dist_matrix_nghost(D);
        CHECK(sla_dist_matrix_n(D) == n);
        double *xl = malloc((size_t)nl * sizeof *xl), *yl = malloc((size_t)nl * sizeof *yl);
        local_of(D, x, xl);
        CHECK_OK(ctx, sla_dist_matvec(ctx, D, xl, yl));
        global_of(ctx, D, yl, yg);
        double e1 = tu_reldiff(n, yg, yref);
        CHECK(e1 < 1e-14);
        CHECK_OK(ctx, sla_dist_matvec_transpose(ctx, D, xl, yl));
        global_of(ctx, D, yl, yg);
        double e2 = tu_reldiff(n, yg, tref);
        CHECK(e2 < 1e-14);

        /* halo: forward values are the owners' entries; <P x, g> = <x, P^T g> */
        double *gh = malloc((size_t)(ng + 1) * sizeof *gh), *g = malloc((size_t)(ng + 1) * sizeof *g);
        double *pt = calloc((size_t)nl, sizeof *pt);
        CHECK_OK(ctx, sla_dist_halo_forward(ctx, D, xl, gh));
        /* ghosts are in the distributed numbering: map back to original rows */
        double *xd = malloc((size_t)n * sizeof *xd);
        sla_int *rows = malloc((size_t)n * sizeof *rows);
        {
            int *cnt = malloc((size_t)size_ * sizeof *cnt), *dsp = malloc((size_t)size_ * sizeof *dsp);
            int m = (int)nl;
            MPI_Allgather(&m, 1, MPI_INT, cnt, 1, MPI_INT, MPI_COMM_WORLD);
            dsp[0] = 0;
            for (int q = 1; q < size_; q++) dsp[q] = dsp[q - 1] + cnt[q - 1];
            MPI_Allgatherv(sla_dist_matrix_global_rows(D), m, MPI_INT64_T, rows, cnt, dsp, MPI_INT64_T,
                           MPI_COMM_WORLD);
            free(cnt);
            free(dsp);
        }
        for (sla_int k = 0; k < n; k++) xd[k] = x[rows[k]];
        const sla_int *gcol = sla_dist_matrix_ghosts(D);
        int exact = 1;
        for (sla_int k = 0; k < ng; k++) exact &= gh[k] == xd[gcol[k]];
        CHECK(exact);
        tu_fill(g, ng, 100 + (unsigned long long)rank_);
        double lhs = 0.0, rhs = 0.0;
        for (sla_int k = 0; k < ng; k++) lhs += gh[k] * g[k];
        CHECK_OK(ctx, sla_dist_halo_reverse(ctx, D, g, pt));
        for (sla_int i = 0; i < nl; i++) rhs += xl[i] * pt[i];
        lhs = gsum(lhs);
        rhs = gsum(rhs);
        CHECK(fabs(lhs - rhs) <= 1e-13 * fmax(1.0, fabs(lhs)));
        if (size_ > 1) CHECK(fabs(lhs) > 0.0); /* something crossed ranks */
        if (rank_ == 0)
            printf("spmv %-9s partition %d: |y - y_ref| %.1e, |A^T x| %.1e, halo <Px,g> - <x,P^T g> = %.1e\n", name,
                   how, e1, e2, lhs - rhs);
        free(gh);
        free(g);
        free(pt);
        free(xd);
        free(rows);
        free(xl);
        free(yl);
        sla_dist_matrix_destroy(&D);
    }
    free(x);
    free(yref);
    free(tref);
    free(yg);
}

/* ---- Krylov solvers against LAPACK and the serial library ---------------------------- */

typedef struct {
    sla_method method;
    sla_precond_kind pc;
} combo;

static void test_krylov(sla_ctx *ctx, const sla_matrix *A, const char *name, const combo *cs, int ncs)
{
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *xref = malloc((size_t)n * sizeof *xref);
    double *xs = malloc((size_t)n * sizeof *xs), *xg = malloc((size_t)n * sizeof *xg);
    tu_fill(b, n, 5);
    CHECK(tu_dense_solve(A, 0, b, xref) == 0);
    for (int c = 0; c < ncs; c++)
        for (int how = 0; how < 3; how += 2) {
            sla_solver_options o;
            sla_solver_options_default(&o);
            o.method = cs[c].method;
            o.precond = cs[c].pc;
            o.rtol = 1e-12;
            o.restart = 40;
            sla_dist_matrix *D = distribute(ctx, A, how);
            if (!D) continue;
            sla_int nl = sla_dist_matrix_nlocal(D);
            double *bl = malloc((size_t)nl * sizeof *bl), *xl = malloc((size_t)nl * sizeof *xl);
            local_of(D, b, bl);
            sla_dist_solver *S = NULL;
            CHECK_OK(ctx, sla_dist_solver_create(ctx, D, &o, &S));
            sla_solve_info inf;
            CHECK_OK(ctx, sla_dist_solver_solve(ctx, S, bl, xl, &inf));
            check_info_agrees(&inf);
            CHECK(inf.converged && inf.residual <= 1e-12);
            global_of(ctx, D, xl, xg);
            double e = tu_reldiff(n, xg, xref);
            CHECK(e < 1e-9);
            /* the serial library with the same options; with Jacobi (or
             * nothing) the preconditioner is the same, so are the iterations */
            sla_solve_info sinf;
            CHECK_OK(ctx, sla_solve(ctx, A, &o, b, xs, &sinf));
            bool same_pc = o.precond == SLA_PRECOND_JACOBI || o.precond == SLA_PRECOND_NONE || size_ == 1;
            /* CG with Jacobi or nothing on an SPD matrix: the very same
             * iterations; elsewhere rounding in the reductions may move the
             * count a little (indefinite problems, GMRES restarts) */
            long long dit = llabs((long long)(inf.iterations - sinf.iterations));
            if (same_pc && o.method == SLA_METHOD_CG) CHECK(dit == 0);
            else if (same_pc) CHECK(dit <= 2 + sinf.iterations / 20);
            if (rank_ == 0)
                printf("%-9s %-8s %-6s partition %d: %4lld iterations (serial %4lld), residual %.1e, |x - "
                       "x_lapack| %.1e\n",
                       name, inf.method, inf.precond, how, (long long)inf.iterations, (long long)sinf.iterations,
                       inf.residual, e);
            /* transposed solve against LAPACK */
            double *xt = malloc((size_t)n * sizeof *xt);
            CHECK(tu_dense_solve(A, 1, b, xt) == 0);
            CHECK_OK(ctx, sla_dist_solver_solve_transpose(ctx, S, bl, xl, &inf));
            check_info_agrees(&inf);
            global_of(ctx, D, xl, xg);
            CHECK(tu_reldiff(n, xg, xt) < 1e-9);
            free(xt);
            sla_dist_solver_destroy(&S);
            sla_dist_matrix_destroy(&D);
            free(bl);
            free(xl);
        }
    free(b);
    free(xref);
    free(xs);
    free(xg);
}

/* ---- the differentiable solve --------------------------------------------------------- */

static double loss(sla_ctx *ctx, sla_dist_solver *S, const double *bl, const double *wl, double *xl, sla_int nl)
{
    sla_solve_info inf;
    CHECK_OK(ctx, sla_dist_solver_solve(ctx, S, bl, xl, &inf));
    double l = 0.0;
    for (sla_int i = 0; i < nl; i++) l += wl[i] * xl[i]; /* L = w . x */
    return gsum(l);
}

/* precond amg distributed is one BoomerAMG hierarchy over all ranks, not
 * block Jacobi: its iteration count stays near the serial one as ranks are
 * added (block Jacobi AMG grows with the number of blocks), the note says
 * so, and a refresh with reuse keeps it. */
static void test_amg_global(sla_ctx *ctx, const sla_matrix *P, const sla_matrix *C)
{
    sla_int n = sla_matrix_nrows(P);
    double *b = malloc((size_t)n * sizeof *b), *xs = malloc((size_t)n * sizeof *xs);
    tu_fill(b, n, 31);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    o.precond = SLA_PRECOND_AMG;
    o.rtol = 1e-10;
    sla_solve_info sinf, inf;
    CHECK_OK(ctx, sla_solve(ctx, P, &o, b, xs, &sinf));
    sla_dist_matrix *D = distribute(ctx, P, 2); /* METIS, or blocks without it */
    if (D) {
        sla_int nl = sla_dist_matrix_nlocal(D);
        double *bl = malloc((size_t)nl * sizeof *bl), *xl = malloc((size_t)(nl + 1) * sizeof *xl);
        local_of(D, b, bl);
        sla_dist_solver *S = NULL;
        o.amg.reuse = 1;
        CHECK_OK(ctx, sla_dist_solver_create(ctx, D, &o, &S));
        CHECK_OK(ctx, sla_dist_solver_solve(ctx, S, bl, xl, &inf));
        CHECK(strstr(inf.note, "one hierarchy over") != NULL);
        CHECK(inf.iterations <= sinf.iterations + 3);
        sla_int it0 = inf.iterations;
        /* values scaled by 2: the kept hierarchy (reuse 1) is the old one
         * scaled, so the iterations stay; x halves */
        sla_int nzl = sla_dist_matrix_nnz_local(D);
        double *v = malloc((size_t)(nzl + 1) * sizeof *v);
        sla_dist_matrix_get_values(D, v);
        for (sla_int k = 0; k < nzl; k++) v[k] *= 2.0;
        CHECK_OK(ctx, sla_dist_matrix_set_values(ctx, D, v));
        CHECK_OK(ctx, sla_dist_solver_refresh(ctx, S));
        double *x2 = malloc((size_t)(nl + 1) * sizeof *x2);
        CHECK_OK(ctx, sla_dist_solver_solve(ctx, S, bl, x2, &inf));
        double e = 0.0;
        for (sla_int i = 0; i < nl; i++) e = fmax(e, fabs(2.0 * x2[i] - xl[i]));
        CHECK(gmax(e) < 1e-8);
        CHECK(llabs((long long)(inf.iterations - it0)) <= 2);
        CHECK_OK(ctx, sla_dist_solver_refresh(ctx, S)); /* rebuilt from the current values */
        CHECK_OK(ctx, sla_dist_solver_solve(ctx, S, bl, x2, &inf));
        CHECK(inf.converged);
        if (rank_ == 0)
            printf("global AMG: %lld iterations on %d ranks (serial %lld); after refreshes %lld\n", (long long)it0,
                   size_, (long long)sinf.iterations, (long long)inf.iterations);
        sla_dist_solver_destroy(&S);
        /* the adjoint of a nonsymmetric system names its own hierarchy */
        sla_dist_matrix_destroy(&D);
        D = distribute(ctx, C, 0);
        if (D) {
            o.method = SLA_METHOD_GMRES;
            o.amg.reuse = 0;
            CHECK_OK(ctx, sla_dist_solver_create(ctx, D, &o, &S));
            nl = sla_dist_matrix_nlocal(D);
            double *cb = malloc((size_t)(nl + 1) * sizeof *cb), *cx = malloc((size_t)(nl + 1) * sizeof *cx);
            for (sla_int i = 0; i < nl; i++) cb[i] = 1.0;
            CHECK_OK(ctx, sla_dist_solver_solve_transpose(ctx, S, cb, cx, &inf));
            CHECK(strstr(inf.note, "built from A^T") != NULL);
            CHECK(inf.converged && inf.iterations < 40);
            sla_dist_solver_destroy(&S);
            free(cb);
            free(cx);
        }
        free(v);
        free(x2);
        free(bl);
        free(xl);
        sla_dist_matrix_destroy(&D);
    }
    free(b);
    free(xs);
}

/* Scatter rows large enough that MPI sends them by rendezvous (each send
 * completes only when received): every message of the scatter must be
 * received before the build's collectives (this deadlocked once). */
static void test_large_scatter(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 256, &A));
    sla_int n = sla_matrix_nrows(A);
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    double *yg = malloc((size_t)n * sizeof *yg);
    tu_fill(x, n, 41);
    sla_matvec(ctx, A, 0, 1, x, n, y, n);
    for (int how = 1; how < 3; how++) {
        sla_dist_matrix *D = distribute(ctx, A, how);
        if (!D) continue;
        sla_int nl = sla_dist_matrix_nlocal(D);
        double *xl = malloc((size_t)(nl + 1) * sizeof *xl), *yl = malloc((size_t)(nl + 1) * sizeof *yl);
        local_of(D, x, xl);
        CHECK_OK(ctx, sla_dist_matvec(ctx, D, xl, yl));
        global_of(ctx, D, yl, yg);
        CHECK(tu_reldiff(n, yg, y) < 1e-14);
        CHECK((sla_int)gsum((double)nl) == n);
        free(xl);
        free(yl);
        sla_dist_matrix_destroy(&D);
    }
    if (rank_ == 0) printf("scatter of %lld rows (rendezvous-sized messages): ok\n", (long long)n);
    free(x);
    free(y);
    free(yg);
    sla_matrix_destroy(&A);
}

static void test_vjp(sla_ctx *ctx, const sla_matrix *A, const char *name, sla_method m, sla_precond_kind pk)
{
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *b = malloc((size_t)n * sizeof *b), *w = malloc((size_t)n * sizeof *w);
    double *x = malloc((size_t)n * sizeof *x), *gb = malloc((size_t)n * sizeof *gb);
    double *gA = malloc((size_t)nnz * sizeof *gA), *gAd = malloc((size_t)nnz * sizeof *gAd);
    double *gbd = malloc((size_t)n * sizeof *gbd);
    tu_fill(b, n, 21);
    tu_fill(w, n, 22);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = m;
    o.precond = pk;
    o.rtol = 1e-13;
    o.restart = 60;
    /* the single-process reference */
    sla_solver *S1 = NULL;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S1));
    CHECK_OK(ctx, sla_solver_solve(ctx, S1, 0, 1, b, n, x, n, NULL));
    CHECK_OK(ctx, sla_solver_solve_vjp(ctx, S1, 0, 1, x, n, w, n, gb, n, gA, NULL));
    sla_solver_destroy(&S1);

    for (int how = 0; how < 3; how++) {
        sla_dist_matrix *D = distribute(ctx, A, how);
        if (!D) continue;
        sla_int nl = sla_dist_matrix_nlocal(D), nzl = sla_dist_matrix_nnz_local(D);
        double *bl = malloc((size_t)nl * sizeof *bl), *wl = malloc((size_t)nl * sizeof *wl);
        double *xl = malloc((size_t)nl * sizeof *xl), *gbl = malloc((size_t)nl * sizeof *gbl);
        double *gvl = malloc((size_t)(nzl + 1) * sizeof *gvl), *vals = malloc((size_t)(nzl + 1) * sizeof *vals);
        local_of(D, b, bl);
        local_of(D, w, wl);
        sla_dist_solver *S = NULL, *F = NULL;
        CHECK_OK(ctx, sla_dist_solver_create(ctx, D, &o, &S));
        /* the finite differences solve with GMRES: perturbing one entry of a
         * symmetric matrix makes it nonsymmetric */
        sla_solver_options of = o;
        of.method = SLA_METHOD_GMRES;
        of.precond = SLA_PRECOND_ILU0;
        CHECK_OK(ctx, sla_dist_solver_create(ctx, D, &of, &F));
        sla_solve_info fwd, adj;
        CHECK_OK(ctx, sla_dist_solver_solve(ctx, S, bl, xl, &fwd));
        CHECK_OK(ctx, sla_dist_solver_solve_vjp(ctx, S, xl, wl, gbl, gvl, &adj));
        check_info_agrees(&adj);
        global_of(ctx, D, gbl, gbd);
        double egb = tu_reldiff(n, gbd, gb);
        CHECK(egb < 1e-10);
        double egA = 0.0;
        /* scattered: values come back in A's CSR order; assembled in blocks
         * of A's own rows: rank order is A's CSR order too */
        CHECK_OK(ctx, sla_dist_gather_values(ctx, D, 0, gvl, gAd));
        MPI_Bcast(gAd, (int)nnz, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        egA = tu_reldiff(nnz, gAd, gA);
        CHECK(egA < 1e-10);

        /* adjoint identity: w . A^-1 b = (A^-T w) . b */
        double l0 = 0.0, l1 = 0.0;
        for (sla_int i = 0; i < nl; i++) {
            l0 += wl[i] * xl[i];
            l1 += gbl[i] * bl[i];
        }
        l0 = gsum(l0);
        l1 = gsum(l1);
        CHECK(fabs(l0 - l1) <= 1e-10 * fabs(l0));

        /* central differences on a few values (the owning rank perturbs its
         * local entry) and on b */
        double maxerr = 0.0;
        sla_dist_matrix_get_values(D, vals);
        for (int t = 0; t < 4; t++) {
            int owner = t % size_;
            sla_int k = (sla_int)((t * 7919) % (nzl > 0 ? nzl : 1));
            MPI_Bcast(&k, 1, MPI_INT64_T, owner, MPI_COMM_WORLD);
            double h = 1e-6, lp, lm, g = 0.0;
            if (rank_ == owner) {
                k = k % nzl;
                g = gvl[k];
            }
            MPI_Bcast(&g, 1, MPI_DOUBLE, owner, MPI_COMM_WORLD);
            double v0 = rank_ == owner ? vals[k] : 0.0;
            if (rank_ == owner) vals[k] = v0 + h;
            CHECK_OK(ctx, sla_dist_matrix_set_values(ctx, D, vals));
            CHECK_OK(ctx, sla_dist_solver_refresh(ctx, F));
            lp = loss(ctx, F, bl, wl, xl, nl);
            if (rank_ == owner) vals[k] = v0 - h;
            CHECK_OK(ctx, sla_dist_matrix_set_values(ctx, D, vals));
            CHECK_OK(ctx, sla_dist_solver_refresh(ctx, F));
            lm = loss(ctx, F, bl, wl, xl, nl);
            if (rank_ == owner) vals[k] = v0;
            double fd = (lp - lm) / (2 * h);
            double e = fabs(fd - g) / fmax(fabs(g), 1e-3);
            if (e > maxerr) maxerr = e;
            CHECK(e < 1e-6);
        }
        CHECK_OK(ctx, sla_dist_matrix_set_values(ctx, D, vals));
        CHECK_OK(ctx, sla_dist_solver_refresh(ctx, F));
        for (int t = 0; t < 2; t++) { /* b */
            int owner = (t + 1) % size_;
            sla_int i = t * 3 % nl;
            double h = 1e-6, g = gbl[i], b0 = bl[i];
            MPI_Bcast(&g, 1, MPI_DOUBLE, owner, MPI_COMM_WORLD);
            if (rank_ == owner) bl[i] = b0 + h;
            double lp = loss(ctx, F, bl, wl, xl, nl);
            if (rank_ == owner) bl[i] = b0 - h;
            double lm = loss(ctx, F, bl, wl, xl, nl);
            bl[i] = b0;
            double e = fabs((lp - lm) / (2 * h) - g) / fmax(fabs(g), 1e-3);
            if (e > maxerr) maxerr = e;
            CHECK(e < 1e-6);
        }
        if (rank_ == 0)
            printf("vjp %-9s %s+%s partition %d: |gb - serial| %.1e, |gA - serial| %.1e, FD max rel err %.1e, "
                   "adjoint %lld its\n",
                   name, adj.method, adj.precond, how, egb, egA, maxerr, (long long)adj.iterations);
        /* the matvec VJP: gx = A^T gy, gvals = gy_row x_col */
        double *gxl = malloc((size_t)nl * sizeof *gxl), *tl = malloc((size_t)nl * sizeof *tl);
        CHECK_OK(ctx, sla_dist_matvec_vjp(ctx, D, xl, wl, gxl, gvl));
        CHECK_OK(ctx, sla_dist_matvec_transpose(ctx, D, wl, tl));
        CHECK(tu_reldiff(nl, gxl, tl) == 0.0);
        double s1 = 0.0, s2 = 0.0; /* sum_k gvals_k a_k = w . A x */
        CHECK_OK(ctx, sla_dist_matvec(ctx, D, xl, tl));
        for (sla_int k = 0; k < nzl; k++) s1 += gvl[k] * vals[k];
        for (sla_int i = 0; i < nl; i++) s2 += wl[i] * tl[i];
        s1 = gsum(s1);
        s2 = gsum(s2);
        CHECK(fabs(s1 - s2) <= 1e-12 * fabs(s2));
        free(gxl);
        free(tl);
        sla_dist_solver_destroy(&S);
        sla_dist_solver_destroy(&F);
        sla_dist_matrix_destroy(&D);
        free(bl);
        free(wl);
        free(xl);
        free(gbl);
        free(gvl);
        free(vals);
    }
    free(b);
    free(w);
    free(x);
    free(gb);
    free(gA);
    free(gAd);
    free(gbd);
}

/* ---- block vs METIS, save and load on another number of ranks ------------------------ */

static void test_partitions_and_files(sla_ctx *ctx, const sla_matrix *A)
{
    sla_int n = sla_matrix_nrows(A);
    double *b = malloc((size_t)n * sizeof *b), *x1 = malloc((size_t)n * sizeof *x1);
    double *x2 = malloc((size_t)n * sizeof *x2), *y = malloc((size_t)n * sizeof *y);
    double *yref = malloc((size_t)n * sizeof *yref);
    tu_fill(b, n, 31);
    sla_matvec(ctx, A, 0, 1, b, n, yref, n);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    o.precond = SLA_PRECOND_IC0;
    o.rtol = 1e-12;
    double *xs[2] = {x1, x2};
    sla_dist_matrix *Dm = NULL;
    for (int p = 0; p < 2; p++) {
        sla_dist_matrix *D = distribute(ctx, A, p ? 2 : 1);
        sla_int nl = sla_dist_matrix_nlocal(D);
        double *bl = malloc((size_t)nl * sizeof *bl), *xl = malloc((size_t)nl * sizeof *xl);
        CHECK_OK(ctx, sla_dist_scatter_vector(ctx, D, 0, b, bl));
        sla_dist_solver *S = NULL;
        CHECK_OK(ctx, sla_dist_solver_create(ctx, D, &o, &S));
        CHECK_OK(ctx, sla_dist_solver_solve(ctx, S, bl, xl, NULL));
        global_of(ctx, D, xl, xs[p]);
        sla_dist_solver_destroy(&S);
        free(bl);
        free(xl);
        if (p) Dm = D;
        else sla_dist_matrix_destroy(&D);
    }
    double e = tu_reldiff(n, x2, x1);
    CHECK(e < 1e-9);
    if (rank_ == 0) printf("block vs metis partition (cg+ic0 block Jacobi): |x_block - x_metis| %.1e\n", e);

    /* save the METIS matrix from all ranks; load on a sub-communicator of
     * size - 1 ranks (or 1) and on a single rank */
    char dir[256] = "";
    if (rank_ == 0) {
        snprintf(dir, sizeof dir, "/tmp/sla_test_dist_XXXXXX");
        if (!mkdtemp(dir)) dir[0] = '\0';
    }
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    CHECK(dir[0] != '\0');
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s/A", dir);
    CHECK_OK(ctx, sla_dist_matrix_save(ctx, Dm, prefix));
    for (int t = 0; t < 2; t++) {
        int k = t == 0 ? (size_ > 1 ? size_ - 1 : 1) : 1;
        MPI_Comm sub;
        MPI_Comm_split(MPI_COMM_WORLD, rank_ < k ? 0 : MPI_UNDEFINED, rank_, &sub);
        if (sub != MPI_COMM_NULL) {
            sla_dist_matrix *L = NULL;
            CHECK_OK(ctx, sla_dist_matrix_load(ctx, sub, prefix, &L));
            if (L) {
                sla_int nl = sla_dist_matrix_nlocal(L);
                double *xl = malloc((size_t)nl * sizeof *xl), *yl = malloc((size_t)nl * sizeof *yl);
                local_of(L, b, xl); /* original row numbers survived */
                CHECK_OK(ctx, sla_dist_matvec(ctx, L, xl, yl));
                CHECK_OK(ctx, sla_dist_gather_vector(ctx, L, 0, yl, y));
                int r;
                MPI_Comm_rank(sub, &r);
                if (r == 0) {
                    double ey = tu_reldiff(n, y, yref);
                    CHECK(ey < 1e-14);
                    printf("save on %d ranks, load on %d: |A x - A_ref x| %.1e\n", size_, k, ey);
                }
                free(xl);
                free(yl);
                sla_dist_matrix_destroy(&L);
            }
            MPI_Comm_free(&sub);
        }
    }
    /* and the other way: saved from one rank (blocks), loaded on all */
    MPI_Comm one;
    MPI_Comm_split(MPI_COMM_WORLD, rank_ == 0 ? 0 : MPI_UNDEFINED, rank_, &one);
    snprintf(prefix, sizeof prefix, "%s/B", dir);
    if (one != MPI_COMM_NULL) {
        sla_dist_matrix *D1 = NULL;
        CHECK_OK(ctx, sla_dist_matrix_scatter(ctx, one, 0, A, SLA_PART_BLOCK, &D1));
        CHECK_OK(ctx, sla_dist_matrix_save(ctx, D1, prefix));
        sla_dist_matrix_destroy(&D1);
        MPI_Comm_free(&one);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    sla_dist_matrix *L = NULL;
    CHECK_OK(ctx, sla_dist_matrix_load(ctx, MPI_COMM_WORLD, prefix, &L));
    if (L) {
        sla_int nl = sla_dist_matrix_nlocal(L);
        double *xl = malloc((size_t)nl * sizeof *xl), *yl = malloc((size_t)nl * sizeof *yl);
        local_of(L, b, xl);
        CHECK_OK(ctx, sla_dist_matvec(ctx, L, xl, yl));
        global_of(ctx, L, yl, y);
        CHECK(tu_reldiff(n, y, yref) < 1e-14);
        free(xl);
        free(yl);
        sla_dist_matrix_destroy(&L);
    }
    /* a damaged piece is a clear error on every rank */
    if (rank_ == 0) {
        char path[400];
        snprintf(path, sizeof path, "%s.0.mtx", prefix);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 x\n", f);
            fclose(f);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    sla_status st = sla_dist_matrix_load(ctx, MPI_COMM_WORLD, prefix, &L);
    CHECK(st < 0 && L == NULL);
    if (rank_ == 0) printf("damaged piece: %s: %s\n", sla_status_name(st), sla_ctx_message(ctx));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_ == 0) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    }
    sla_dist_matrix_destroy(&Dm);
    free(b);
    free(x1);
    free(x2);
    free(y);
    free(yref);
}

/* ---- errors: every rank gets a status, nobody hangs ----------------------------------- */

static void test_errors(sla_ctx *ctx, const sla_matrix *A)
{
    sla_int n = sla_matrix_nrows(A);
    sla_int r0 = n * rank_ / size_, r1 = n * (rank_ + 1) / size_;
    sla_int *rp, *ci;
    double *v;
    block_rows(A, r0, r1, &rp, &ci, &v);
    sla_dist_matrix *D = NULL;
    int last = size_ - 1;
    /* a rank with no rows */
    sla_status st = sla_dist_matrix_create(ctx, MPI_COMM_WORLD, rank_ == last ? 0 : r1 - r0, rp, ci, v, &D);
    CHECK(st == SLA_ERR_DIMENSION && D == NULL);
    CHECK(strstr(sla_ctx_message(ctx), "rows") != NULL);
    if (rank_ != last) {
        char want[32];
        snprintf(want, sizeof want, "rank %d:", last);
        CHECK(strstr(sla_ctx_message(ctx), want) != NULL);
    }
    /* a column out of range on the last rank */
    sla_int save = ci[0];
    if (rank_ == last) ci[0] = n + 5;
    st = sla_dist_matrix_create(ctx, MPI_COMM_WORLD, r1 - r0, rp, ci, v, &D);
    CHECK(st == SLA_ERR_INDEX && D == NULL);
    CHECK(strstr(sla_ctx_message(ctx), "out of range") != NULL);
    ci[0] = save;
    /* NaN on rank 0 */
    double v0 = v[0];
    if (rank_ == 0) v[0] = NAN;
    st = sla_dist_matrix_create(ctx, MPI_COMM_WORLD, r1 - r0, rp, ci, v, &D);
    CHECK(st == SLA_ERR_VALUE && D == NULL);
    v[0] = v0;
    CHECK_OK(ctx, sla_dist_matrix_create(ctx, MPI_COMM_WORLD, r1 - r0, rp, ci, v, &D));
    /* unsupported method, bad right-hand side on one rank */
    sla_solver_options o;
    sla_solver_options_default(&o);
    sla_dist_solver *S = NULL;
    CHECK_ERR(ctx, sla_dist_solver_create(ctx, D, &o, &S), SLA_ERR_UNSUPPORTED, "not available distributed");
    o.method = SLA_METHOD_CG;
    o.precond = SLA_PRECOND_USER;
    CHECK_ERR(ctx, sla_dist_solver_create(ctx, D, &o, &S), SLA_ERR_UNSUPPORTED, "user");
    o.precond = SLA_PRECOND_JACOBI;
    CHECK_OK(ctx, sla_dist_solver_create(ctx, D, &o, &S));
    sla_int nl = r1 - r0;
    double *bl = malloc((size_t)nl * sizeof *bl), *xl = malloc((size_t)nl * sizeof *xl);
    tu_fill(bl, nl, 3);
    if (rank_ == last) bl[nl - 1] = INFINITY;
    st = sla_dist_solver_solve(ctx, S, bl, xl, NULL);
    CHECK(st == SLA_ERR_VALUE);
    CHECK(strstr(sla_ctx_message(ctx), "not finite") != NULL);
    /* an output given on some ranks only is refused everywhere */
    double *gx = malloc((size_t)nl * sizeof *gx);
    tu_fill(xl, nl, 4);
    st = sla_dist_matvec_vjp(ctx, D, xl, bl, rank_ == 0 ? gx : NULL, NULL);
    CHECK(size_ == 1 ? st == SLA_OK : st == SLA_ERR_ARGUMENT);
    free(gx);
    /* non-convergence is the same warning everywhere */
    bl[nl - 1] = 1.0;
    o.maxiter = 3;
    sla_dist_solver_destroy(&S);
    CHECK_OK(ctx, sla_dist_solver_create(ctx, D, &o, &S));
    sla_solve_info inf;
    CHECK_ST(ctx, sla_dist_solver_solve(ctx, S, bl, xl, &inf), SLA_NOT_CONVERGED);
    CHECK(inf.iterations == 3 && inf.reason == SLA_DIVERGED_MAXITER);
    sla_dist_solver_destroy(&S);

    /* allocation failures on rank 0 only: every rank returns an error,
     * nothing leaks, then the same call succeeds */
    counter c = {0, -1, 0, 0};
    sla_ctx *cctx = NULL;
    sla_ctx_create(&cctx);
    if (rank_ == 0) {
        sla_allocator al = {count_malloc, count_free, &c};
        sla_ctx_set_allocator(cctx, &al);
    }
    int done = 0, k = 0, bad = 0;
    while (!done && k < 500) {
        c.fail_at = k;
        c.calls = 0;
        c.failures = 0;
        sla_dist_matrix *E = NULL;
        sla_dist_solver *T = NULL;
        o.precond = SLA_PRECOND_ILU0;
        st = sla_dist_matrix_create(cctx, MPI_COMM_WORLD, r1 - r0, rp, ci, v, &E);
        if (!st) st = sla_dist_solver_create(cctx, E, &o, &T);
        int mine = st == SLA_OK, all;
        MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        int any;
        MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (all != any) bad++; /* some rank succeeded while another failed */
        if (!all && st != SLA_ERR_NOMEM) bad++;
        sla_dist_solver_destroy(&T);
        sla_dist_matrix_destroy(&E);
        if (rank_ == 0 && c.live != 0) bad++;
        int f = rank_ == 0 ? (int)c.failures : 0;
        MPI_Bcast(&f, 1, MPI_INT, 0, MPI_COMM_WORLD);
        done = f == 0; /* the k-th allocation never came: the sweep is complete */
        k++;
    }
    CHECK(done && bad == 0);
    if (rank_ == 0) printf("allocation failures on rank 0: %d points, all agreed and freed\n", k - 1);
    sla_ctx_destroy(&cctx);
    sla_dist_matrix_destroy(&D);
    free(bl);
    free(xl);
    free(rp);
    free(ci);
    free(v);
}

/* ---- a distributed list of systems with different patterns --------------------------- */

static void test_list(sla_ctx *ctx)
{
    enum { COUNT = 7 };
    sla_matrix *mats[COUNT] = {0};
    if (rank_ == 0) { /* different sizes and patterns */
        for (int i = 0; i < COUNT; i++) {
            if (i % 3 == 0) CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 5 + i, &mats[i]));
            else if (i % 3 == 1) CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 4 + i, 10.0, 3.0, &mats[i]));
            else CHECK_OK(ctx, sla_gen_poisson(ctx, 1, 20 + 10 * i, &mats[i]));
        }
    }
    sla_int nloc = 0, *index = NULL;
    sla_matrix **loc = NULL;
    CHECK_OK(ctx, sla_dist_list_scatter(ctx, MPI_COMM_WORLD, 0, COUNT, (const sla_matrix *const *)mats, &nloc, &loc,
                                        &index));
    /* every item lands on exactly one rank */
    long long s = 0, c = nloc, sg, cg;
    for (sla_int k = 0; k < nloc; k++) s += index[k] + 1;
    MPI_Allreduce(&s, &sg, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&c, &cg, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    CHECK(cg == COUNT && sg == COUNT * (COUNT + 1) / 2);
    if (size_ > 1 && size_ <= COUNT) CHECK(nloc > 0); /* balanced: nobody idle */
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_GMRES;
    o.precond = SLA_PRECOND_ILU0;
    o.rtol = 1e-12;
    sla_solver **S = calloc((size_t)nloc + 1, sizeof *S);
    double **b = calloc((size_t)nloc + 1, sizeof *b), **x = calloc((size_t)nloc + 1, sizeof *x);
    double **gb = calloc((size_t)nloc + 1, sizeof *gb), **gA = calloc((size_t)nloc + 1, sizeof *gA);
    for (sla_int k = 0; k < nloc; k++) {
        sla_int n = sla_matrix_nrows(loc[k]);
        CHECK_OK(ctx, sla_solver_create(ctx, loc[k], &o, &S[k]));
        b[k] = malloc((size_t)n * sizeof(double));
        x[k] = malloc((size_t)n * sizeof(double));
        gb[k] = malloc((size_t)n * sizeof(double));
        gA[k] = malloc((size_t)sla_matrix_nnz(loc[k]) * sizeof(double));
        tu_fill(b[k], n, 40 + (unsigned long long)index[k]);
    }
    sla_dist_list_summary sum;
    CHECK_OK(ctx, sla_dist_solve_list(ctx, MPI_COMM_WORLD, nloc, S, (const double *const *)b, x, NULL, &sum));
    CHECK(sum.items == COUNT && sum.converged == COUNT && sum.max_residual <= 1e-12);
    double worst = 0.0;
    for (sla_int k = 0; k < nloc; k++) {
        sla_int n = sla_matrix_nrows(loc[k]);
        double *ref = malloc((size_t)n * sizeof *ref);
        CHECK(tu_dense_solve(loc[k], 0, b[k], ref) == 0);
        double e = tu_reldiff(n, x[k], ref);
        if (e > worst) worst = e;
        CHECK(e < 1e-9);
        free(ref);
    }
    /* the VJPs with gx = b: gb = A^-T b */
    CHECK_OK(ctx, sla_dist_solve_list_vjp(ctx, MPI_COMM_WORLD, nloc, S, (const double *const *)x,
                                          (const double *const *)b, gb, gA, NULL, &sum));
    CHECK(sum.items == COUNT && sum.converged == COUNT);
    for (sla_int k = 0; k < nloc; k++) {
        sla_int n = sla_matrix_nrows(loc[k]);
        double *ref = malloc((size_t)n * sizeof *ref);
        CHECK(tu_dense_solve(loc[k], 1, b[k], ref) == 0);
        CHECK(tu_reldiff(n, gb[k], ref) < 1e-9);
        free(ref);
    }
    if (rank_ == 0)
        printf("distributed list: %lld systems over %d ranks (%lld here), max %lld iterations, |x - x_lapack| %.1e\n",
               (long long)sum.items, size_, (long long)nloc, (long long)sum.max_iterations, worst);
    for (sla_int k = 0; k < nloc; k++) {
        sla_solver_destroy(&S[k]);
        free(b[k]);
        free(x[k]);
        free(gb[k]);
        free(gA[k]);
    }
    free(S);
    free(b);
    free(x);
    free(gb);
    free(gA);
    sla_dist_list_free(ctx, nloc, &loc, &index);
    for (int i = 0; i < COUNT; i++) sla_matrix_destroy(&mats[i]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    sla_ctx_set_threads(ctx, 1);

    sla_matrix *P = NULL, *C = NULL, *R = NULL, *H = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 14, &P));          /* SPD, n = 196 */
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 13, 20.0, -8.0, &C)); /* nonsymmetric, n = 169 */
    CHECK_OK(ctx, sla_gen_random(ctx, 150, 4, SLA_GEN_GENERAL, 7, &R));    /* general, irregular */
    /* symmetric indefinite: Poisson shifted by -0.5 I */
    CHECK_OK(ctx, sla_matrix_copy(ctx, P, &H));
    {
        sla_int n = sla_matrix_nrows(H), nnz = sla_matrix_nnz(H);
        double *hv = malloc((size_t)nnz * sizeof *hv);
        memcpy(hv, sla_matrix_values(H, 0), (size_t)nnz * sizeof *hv);
        const sla_int *rp = sla_matrix_rowptr(H);
        sla_int *ci = malloc((size_t)nnz * sizeof *ci);
        sla_matrix_get_colind(H, ci);
        for (sla_int i = 0; i < n; i++)
            for (sla_int p = rp[i]; p < rp[i + 1]; p++)
                if (ci[p] == i) hv[p] -= 0.5;
        CHECK_OK(ctx, sla_matrix_set_values(ctx, H, 0, hv));
        free(hv);
        free(ci);
    }

    test_spmv(ctx, P, "poisson2d");
    test_spmv(ctx, C, "convdiff");
    test_spmv(ctx, R, "random");

    combo spd[] = {{SLA_METHOD_CG, SLA_PRECOND_JACOBI}, {SLA_METHOD_CG, SLA_PRECOND_IC0},
                   {SLA_METHOD_CG, SLA_PRECOND_NONE}, {SLA_METHOD_MINRES, SLA_PRECOND_JACOBI},
                   {SLA_METHOD_BICGSTAB, SLA_PRECOND_SSOR}};
    combo gen[] = {{SLA_METHOD_GMRES, SLA_PRECOND_ILU0}, {SLA_METHOD_GMRES, SLA_PRECOND_JACOBI},
                   {SLA_METHOD_BICGSTAB, SLA_PRECOND_ILU0}, {SLA_METHOD_BICGSTAB, SLA_PRECOND_NONE}};
    combo ind[] = {{SLA_METHOD_MINRES, SLA_PRECOND_NONE}, {SLA_METHOD_MINRES, SLA_PRECOND_JACOBI}};
    test_krylov(ctx, P, "poisson2d", spd, 5);
    test_krylov(ctx, C, "convdiff", gen, 4);
    test_krylov(ctx, H, "indefinite", ind, 2); /* MINRES with an SPD preconditioner */

    test_vjp(ctx, P, "poisson2d", SLA_METHOD_CG, SLA_PRECOND_JACOBI);
    test_vjp(ctx, C, "convdiff", SLA_METHOD_GMRES, SLA_PRECOND_ILU0);
    test_vjp(ctx, C, "convdiff", SLA_METHOD_BICGSTAB, SLA_PRECOND_JACOBI);

    /* block Jacobi with hypre BoomerAMG on each diagonal block: hypre runs
     * on MPI_COMM_SELF inside the application's MPI (sla does not
     * initialize MPI again when the application has) */
    sla_solver_options ao;
    sla_solver_options_default(&ao);
    ao.method = SLA_METHOD_CG;
    ao.precond = SLA_PRECOND_AMG;
    sla_solver *probe = NULL;
    if (sla_solver_create(ctx, P, &ao, &probe) != SLA_ERR_UNAVAILABLE) {
        sla_solver_destroy(&probe);
        combo amg[] = {{SLA_METHOD_CG, SLA_PRECOND_AMG}, {SLA_METHOD_GMRES, SLA_PRECOND_AMG}};
        test_krylov(ctx, P, "poisson2d", amg, 2);
        /* nonsymmetric: transposed solves cycle on a second hierarchy (A^T) */
        combo amgn[] = {{SLA_METHOD_GMRES, SLA_PRECOND_AMG}, {SLA_METHOD_BICGSTAB, SLA_PRECOND_AMG}};
        test_krylov(ctx, C, "convdiff", amgn, 2);
        test_vjp(ctx, P, "poisson2d", SLA_METHOD_CG, SLA_PRECOND_AMG);
        test_vjp(ctx, C, "convdiff", SLA_METHOD_GMRES, SLA_PRECOND_AMG);
        test_amg_global(ctx, P, C);
    }
    test_partitions_and_files(ctx, P);
    test_large_scatter(ctx);
    test_errors(ctx, P);
    test_list(ctx);

    sla_matrix_destroy(&P);
    sla_matrix_destroy(&C);
    sla_matrix_destroy(&R);
    sla_matrix_destroy(&H);
    sla_ctx_destroy(&ctx);
    int fails = global_failures();
    char name[64];
    snprintf(name, sizeof name, "test_dist (rank %d of %d)", rank_, size_);
    if (rank_ == 0 || tu_failures) tu_finish(name);
    MPI_Finalize();
    return fails ? 1 : 0;
}
