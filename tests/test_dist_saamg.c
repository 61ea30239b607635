#define _POSIX_C_SOURCE 200809L
/* The distributed smoothed-aggregation AMG (precond=saamg of
 * sla_dist_solver), run by ctest through mpiexec on 1, 2 and 3 ranks.
 * Every rank builds the same global matrices (the generators are
 * deterministic), so each distributed result is compared with the
 * single-process CG + saamg (solution, gradients, iteration counts) and
 * with the serial product (true residual), on every rank. */
#include "test_util.h"

#include <mpi.h>

#include "dist/dist_internal.h"
#include "test_dist_util.h"
#include "solvers/krylov.h"

/* Solve, gradients, symmetry of the preconditioner, refresh: against the
 * single-process CG + saamg. */
static void test_solve(sla_ctx *ctx, sla_matrix *A, const char *name, int min_levels, bool all_parts)
{
    sla_int n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    double *b = malloc((size_t)n * sizeof *b), *w = malloc((size_t)n * sizeof *w);
    double *xs = malloc((size_t)n * sizeof *xs), *gbs = malloc((size_t)n * sizeof *gbs);
    double *gAs = malloc((size_t)nnz * sizeof *gAs), *gAd = malloc((size_t)nnz * sizeof *gAd);
    double *xg = malloc((size_t)n * sizeof *xg), *gbg = malloc((size_t)n * sizeof *gbg);
    double *rr = malloc((size_t)n * sizeof *rr);
    tu_fill(b, n, 31);
    tu_fill(w, n, 32);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    o.precond = SLA_PRECOND_SAAMG;
    o.rtol = 1e-12;
    sla_solver *S1 = NULL;
    sla_solve_info sfwd, sadj;
    CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &S1));
    CHECK_OK(ctx, sla_solver_solve(ctx, S1, 0, 1, b, n, xs, n, &sfwd));
    CHECK_OK(ctx, sla_solver_solve_vjp(ctx, S1, 0, 1, xs, n, w, n, gbs, n, gAs, &sadj));
    sla_solver_destroy(&S1);

    for (int how = 0; how < 3; how++) {
        if (how == 1 && !all_parts) continue; /* the same blocks as how = 0 (scattered instead of assembled) */
        sla_dist_matrix *D = distribute(ctx, A, how);
        if (!D) continue;
        sla_int nl = sla_dist_matrix_nlocal(D), nzl = sla_dist_matrix_nnz_local(D);
        double *bl = malloc((size_t)nl * sizeof *bl), *wl = malloc((size_t)nl * sizeof *wl);
        double *xl = malloc((size_t)nl * sizeof *xl), *gbl = malloc((size_t)nl * sizeof *gbl);
        double *gvl = malloc((size_t)(nzl + 1) * sizeof *gvl);
        double *u = malloc((size_t)nl * sizeof *u), *v = malloc((size_t)nl * sizeof *v);
        double *mu = malloc((size_t)nl * sizeof *mu), *mv = malloc((size_t)nl * sizeof *mv);
        local_of(D, b, bl);
        local_of(D, w, wl);
        sla_dist_solver *S = NULL;
        CHECK_OK(ctx, sla_dist_solver_create(ctx, D, &o, &S));
        if (!S) {
            sla_dist_matrix_destroy(&D);
            continue;
        }
        const sla__pc *pc = sla__dist_solver_pc(S);
        int nlev = sla__dist_saamg_levels(pc);
        CHECK(nlev >= min_levels);
        /* every coarse operator is P^T A P (a product with a fixed vector) */
        double egal = 0.0;
        for (int l = 0; l + 1 < nlev; l++) egal = fmax(egal, sla__dist_saamg_galerkin_error(pc, l));
        CHECK(egal >= 0.0 && egal < 1e-12);

        /* forward: the serial solution, the true residual, iterations within a few */
        sla_solve_info fwd, adj;
        CHECK_OK(ctx, sla_dist_solver_solve(ctx, S, bl, xl, &fwd));
        check_info_agrees(&fwd);
        CHECK(strstr(fwd.note, "saamg") != NULL);
        global_of(ctx, D, xl, xg);
        double ex = tu_reldiff(n, xg, xs);
        CHECK(ex < 1e-7);
        sla_matvec(ctx, A, 0, 1, xg, n, rr, n);
        double rn = 0.0, bn = 0.0;
        for (sla_int i = 0; i < n; i++) {
            rn += (b[i] - rr[i]) * (b[i] - rr[i]);
            bn += b[i] * b[i];
        }
        CHECK(sqrt(rn / bn) <= 1e-12 * 1.01);
        CHECK(fabs(sqrt(rn / bn) - fwd.residual) <= 1e-3 * fwd.residual + 1e-16);
        long long di = (long long)fwd.iterations - (long long)sfwd.iterations;
        CHECK(di <= (size_ == 1 ? 1 : 3) && di >= -3);

        /* the solve VJP with the same hierarchy: gb = A^-1 w, gA = -gb_row x_col */
        CHECK_OK(ctx, sla_dist_solver_solve_vjp(ctx, S, xl, wl, gbl, gvl, &adj));
        check_info_agrees(&adj);
        global_of(ctx, D, gbl, gbg);
        double egb = tu_reldiff(n, gbg, gbs);
        CHECK(egb < 1e-7);
        CHECK_OK(ctx, sla_dist_gather_values(ctx, D, 0, gvl, gAd));
        MPI_Bcast(gAd, (int)nnz, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        double egA = tu_reldiff(nnz, gAd, gAs);
        CHECK(egA < 1e-7);

        /* the preconditioner is symmetric and positive across ranks */
        tu_fill(u, nl, 41 + (unsigned long long)rank_);
        tu_fill(v, nl, 51 + (unsigned long long)rank_);
        CHECK(pc->apply(pc, false, u, mu, 1) == SLA_OK);
        CHECK(pc->apply(pc, false, v, mv, 1) == SLA_OK);
        double a1 = 0.0, a2 = 0.0, a3 = 0.0;
        for (sla_int i = 0; i < nl; i++) {
            a1 += mu[i] * v[i];
            a2 += u[i] * mv[i];
            a3 += mu[i] * u[i];
        }
        a1 = gsum(a1);
        a2 = gsum(a2);
        a3 = gsum(a3);
        double esym = fabs(a1 - a2) / fmax(fabs(a1), 1e-300);
        CHECK(esym < 1e-11);
        CHECK(a3 > 0.0);
        /* the transposed apply is the same operator */
        CHECK(pc->apply(pc, true, u, v, 1) == SLA_OK);
        CHECK(tu_reldiff(nl, v, mu) == 0.0);

        /* refresh on new values (same pattern): the serial solve of the new matrix */
        {
            sla_matrix *A2 = NULL;
            CHECK_OK(ctx, sla_matrix_copy(ctx, A, &A2));
            const sla_int *rp = sla_matrix_rowptr(A2);
            sla_int *ci = malloc((size_t)nnz * sizeof *ci);
            double *av = malloc((size_t)nnz * sizeof *av), *vl = malloc((size_t)(nzl + 1) * sizeof *vl);
            sla_matrix_get_colind(A2, ci);
            memcpy(av, sla_matrix_values(A2, 0), (size_t)nnz * sizeof *av);
            for (sla_int i = 0; i < n; i++) /* D2 A D2 with D2 = diag(1 + 0.3 sin(i)): symmetric, SPD */
                for (sla_int p = rp[i]; p < rp[i + 1]; p++)
                    av[p] *= (1.0 + 0.3 * sin((double)i)) * (1.0 + 0.3 * sin((double)ci[p]));
            CHECK_OK(ctx, sla_matrix_set_values(ctx, A2, 0, av));
            double *x2 = malloc((size_t)n * sizeof *x2), *x3 = malloc((size_t)n * sizeof *x3);
            sla_solver *S2 = NULL, *S3 = NULL;
            sla_solve_info i2, i3;
            CHECK_OK(ctx, sla_solver_create(ctx, A2, &o, &S2)); /* built on the new values */
            CHECK_OK(ctx, sla_solver_solve(ctx, S2, 0, 1, b, n, x2, n, &i2));
            sla_solver_destroy(&S2);
            sla_matrix *A3 = NULL; /* refreshed: the serial saamg keeps its prolongators too */
            CHECK_OK(ctx, sla_matrix_copy(ctx, A, &A3));
            CHECK_OK(ctx, sla_solver_create(ctx, A3, &o, &S3));
            CHECK_OK(ctx, sla_matrix_set_values(ctx, A3, 0, av));
            CHECK_OK(ctx, sla_solver_refresh(ctx, S3));
            CHECK_OK(ctx, sla_solver_solve(ctx, S3, 0, 1, b, n, x3, n, &i3));
            sla_solver_destroy(&S3);
            sla_matrix_destroy(&A3);
            /* saamg_reuse=none: the refresh rebuilds (as the set-up on the new values) */
            sla_solver_options orb = o;
            orb.saamg_reuse = 2;
            sla_dist_solver *Sb = NULL, *Sh = NULL;
            CHECK_OK(ctx, sla_dist_solver_create(ctx, D, &orb, &Sb));
            /* saamg_reuse=hierarchy: a_ii move by up to 1.69x here, past SAAMG_KEEP:
             * the refresh recomputes the coarse levels as interpolation does */
            orb.saamg_reuse = 3;
            CHECK_OK(ctx, sla_dist_solver_create(ctx, D, &orb, &Sh));
            /* the new local values in D's order: the global entries of D's pattern */
            const sla_int *gr = sla_dist_matrix_global_rows(D);
            sla_int *lrp = malloc((size_t)(nl + 1) * sizeof *lrp), *lci = malloc((size_t)(nzl + 1) * sizeof *lci);
            sla_dist_matrix_get_pattern(D, lrp, lci);
            /* D's columns are in its own numbering: map them back through the gathered rows */
            sla_int *perm = malloc((size_t)n * sizeof *perm); /* distributed index -> original */
            {
                int *cnt = malloc((size_t)size_ * sizeof *cnt), *dsp = malloc((size_t)size_ * sizeof *dsp);
                int m = (int)nl;
                MPI_Allgather(&m, 1, MPI_INT, cnt, 1, MPI_INT, MPI_COMM_WORLD);
                dsp[0] = 0;
                for (int q = 1; q < size_; q++) dsp[q] = dsp[q - 1] + cnt[q - 1];
                MPI_Allgatherv(gr, m, MPI_INT64_T, perm, cnt, dsp, MPI_INT64_T, MPI_COMM_WORLD);
                free(cnt);
                free(dsp);
            }
            for (sla_int i = 0; i < nl; i++)
                for (sla_int p = lrp[i]; p < lrp[i + 1]; p++) {
                    sla_int gi = gr[i], gj = perm[lci[p]], q = rp[gi];
                    while (q < rp[gi + 1] && ci[q] != gj) q++;
                    vl[p] = av[q];
                }
            CHECK_OK(ctx, sla_dist_matrix_set_values(ctx, D, vl));
            CHECK_OK(ctx, sla_dist_solver_refresh(ctx, S));
            CHECK_OK(ctx, sla_dist_solver_refresh(ctx, Sb));
            CHECK_OK(ctx, sla_dist_solver_refresh(ctx, Sh));
            double egal2 = 0.0; /* the kept P: the coarse operators of the new values */
            for (int l = 0; l + 1 < nlev; l++) egal2 = fmax(egal2, sla__dist_saamg_galerkin_error(pc, l));
            CHECK(egal2 >= 0.0 && egal2 < 1e-12);
            sla_solve_info f2, fb;
            CHECK_OK(ctx, sla_dist_solver_solve(ctx, S, bl, xl, &f2));
            CHECK(nlev == 1 || strstr(f2.note, "refreshed with the set-up's prolongators") != NULL);
            global_of(ctx, D, xl, xg);
            double e2 = tu_reldiff(n, xg, x2);
            CHECK(e2 < 1e-7);
            CHECK(llabs((long long)f2.iterations - (long long)i3.iterations) <= (size_ == 1 ? 1 : 3));
            CHECK_OK(ctx, sla_dist_solver_solve(ctx, Sb, bl, xl, &fb));
            global_of(ctx, D, xl, xg);
            CHECK(tu_reldiff(n, xg, x2) < 1e-7);
            CHECK(llabs((long long)fb.iterations - (long long)i2.iterations) <= (size_ == 1 ? 1 : 3));
            sla_dist_solver_destroy(&Sb);
            sla_solve_info fh, fk;
            CHECK_OK(ctx, sla_dist_solver_solve(ctx, Sh, bl, xl, &fh));
            CHECK(nlev == 1 || strstr(fh.note, "recomputed the coarse levels") != NULL);
            CHECK(fh.iterations == f2.iterations);
            global_of(ctx, D, xl, xg);
            CHECK(tu_reldiff(n, xg, x2) < 1e-7);
            /* the same values again: within the band, every coarse level kept, the
             * same solution bit for bit */
            double *xh = malloc((size_t)(nl + 1) * sizeof *xh);
            memcpy(xh, xl, (size_t)nl * sizeof *xh);
            CHECK_OK(ctx, sla_dist_matrix_set_values(ctx, D, vl));
            CHECK_OK(ctx, sla_dist_solver_refresh(ctx, Sh));
            CHECK_OK(ctx, sla_dist_solver_solve(ctx, Sh, bl, xl, &fk));
            CHECK(nlev == 1 || strstr(fk.note, "kept the coarse levels") != NULL);
            CHECK(fk.iterations == fh.iterations && tu_reldiff(nl, xl, xh) == 0.0);
            /* one coupling moved by 350 % (the diagonal by 2.2x: within the drift
             * guard's 4x of the set-up): the couplings turned, a rebuild */
            int moved = 0, any = 0;
            for (sla_int i = 0; i < nl; i++)
                for (sla_int p = lrp[i]; p < lrp[i + 1]; p++) {
                    sla_int gi = gr[i], gj = perm[lci[p]];
                    if (gi == gj) vl[p] *= 2.2;
                    else if ((gi == 0 && gj == 1) || (gi == 1 && gj == 0)) vl[p] *= 4.5, moved = 1;
                }
            MPI_Allreduce(&moved, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            CHECK_OK(ctx, sla_dist_matrix_set_values(ctx, D, vl));
            CHECK_OK(ctx, sla_dist_solver_refresh(ctx, Sh));
            CHECK_OK(ctx, sla_dist_solver_solve(ctx, Sh, bl, xl, &fk));
            CHECK(fk.converged);
            CHECK(nlev == 1 || !any || strstr(fk.note, "refresh rebuilt it (an entry moved by") != NULL);
            if (rank_ == 0 && nlev > 1)
                printf("  hierarchy reuse, one coupling moved by 350 %%: %lld iterations; %s\n",
                       (long long)fk.iterations, fk.note);
            free(xh);
            sla_dist_solver_destroy(&Sh);
            if (rank_ == 0)
                printf("%s (%s, %d ranks): %d levels; CG iterations %lld (serial %lld), adjoint %lld (serial %lld), "
                       "refreshed %lld (serial %lld), rebuilt %lld (serial %lld); |x - x_serial| %.1e, gb %.1e, gA %.1e, <Mu,v>-<u,Mv> %.1e, "
                       "|A_c - P^T A P| %.1e\n",
                       name, how == 0 ? "rows" : how == 1 ? "block" : "metis", size_, nlev,
                       (long long)fwd.iterations, (long long)sfwd.iterations, (long long)adj.iterations,
                       (long long)sadj.iterations, (long long)f2.iterations, (long long)i3.iterations,
                       (long long)fb.iterations, (long long)i2.iterations, ex, egb, egA,
                       esym, egal);
            free(lrp);
            free(lci);
            free(perm);
            free(x2);
            free(x3);
            free(ci);
            free(av);
            free(vl);
            sla_matrix_destroy(&A2);
        }
        sla_dist_solver_destroy(&S);
        sla_dist_matrix_destroy(&D);
        free(bl);
        free(wl);
        free(xl);
        free(gbl);
        free(gvl);
        free(u);
        free(v);
        free(mu);
        free(mv);
    }
    free(b);
    free(w);
    free(xs);
    free(gbs);
    free(gAs);
    free(gAd);
    free(xg);
    free(gbg);
    free(rr);
}

/* A matrix that does not coarsen (diagonal, 5000 rows: no strong
 * couplings, above SAAMG_DENSE_MAX): one level, smoothed; the symmetric
 * Gauss-Seidel sweep is exact, so CG takes one iteration. */
static void test_diagonal(sla_ctx *ctx)
{
    sla_int n = 5000;
    sla_int *rp = malloc((size_t)(n + 1) * sizeof *rp), *ci = malloc((size_t)n * sizeof *ci);
    double *v = malloc((size_t)n * sizeof *v), *b = malloc((size_t)n * sizeof *b);
    for (sla_int i = 0; i < n; i++) {
        rp[i] = i;
        ci[i] = i;
        v[i] = 1.0 + (double)(i % 7);
    }
    rp[n] = n;
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, rp, ci, SLA_F64, 1, v, SLA_COPY, &A));
    tu_fill(b, n, 61);
    sla_dist_matrix *D = distribute(ctx, A, 0);
    sla_int nl = sla_dist_matrix_nlocal(D), r0 = sla_dist_matrix_row_start(D);
    double *xl = malloc((size_t)nl * sizeof *xl);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    o.precond = SLA_PRECOND_SAAMG;
    sla_dist_solver *S = NULL;
    sla_solve_info inf;
    CHECK_OK(ctx, sla_dist_solver_create(ctx, D, &o, &S));
    CHECK(sla__dist_saamg_levels(sla__dist_solver_pc(S)) == 1);
    CHECK_OK(ctx, sla_dist_solver_solve(ctx, S, b + r0, xl, &inf));
    CHECK(inf.iterations <= 1);
    double e = 0.0;
    for (sla_int i = 0; i < nl; i++) e = fmax(e, fabs(xl[i] - b[r0 + i] / v[r0 + i]));
    CHECK(e < 1e-12);
    CHECK(strstr(inf.note, "smoothed") != NULL);
    sla_dist_solver_destroy(&S);
    sla_dist_matrix_destroy(&D);
    sla_matrix_destroy(&A);
    free(rp);
    free(ci);
    free(v);
    free(b);
    free(xl);
}

/* The drift guard: values scaled by 10 (every a_ii moved by more than
 * SAAMG_DRIFT) make the refresh rebuild, and say so; the solution of 10 A
 * is x / 10. A refresh after a failed one rebuilds. */
static void test_refresh_drift(sla_ctx *ctx, const sla_matrix *A)
{
    sla_dist_matrix *D = distribute(ctx, A, 0);
    sla_int nl = sla_dist_matrix_nlocal(D), nzl = sla_dist_matrix_nnz_local(D), r0 = sla_dist_matrix_row_start(D);
    double *v = malloc((size_t)nzl * sizeof *v), *b = malloc((size_t)nl * sizeof *b);
    double *x1 = malloc((size_t)nl * sizeof *x1), *x2 = malloc((size_t)nl * sizeof *x2);
    for (sla_int i = 0; i < nl; i++) b[i] = sin(0.1 * (double)(r0 + i));
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    o.precond = SLA_PRECOND_SAAMG;
    o.rtol = 1e-12;
    sla_dist_solver *S = NULL;
    sla_solve_info i1, i2;
    CHECK_OK(ctx, sla_dist_solver_create(ctx, D, &o, &S));
    CHECK_OK(ctx, sla_dist_solver_solve(ctx, S, b, x1, &i1));
    sla_dist_matrix_get_values(D, v);
    for (sla_int k = 0; k < nzl; k++) v[k] *= 10.0;
    CHECK_OK(ctx, sla_dist_matrix_set_values(ctx, D, v));
    CHECK_OK(ctx, sla_dist_solver_refresh(ctx, S));
    CHECK_OK(ctx, sla_dist_solver_solve(ctx, S, b, x2, &i2));
    CHECK(strstr(i2.note, "rebuilt") != NULL);
    double e = 0.0;
    for (sla_int i = 0; i < nl; i++) e = fmax(e, fabs(10.0 * x2[i] - x1[i]) / fmax(fabs(x1[i]), 1e-3));
    CHECK(e < 1e-8);
    CHECK(llabs((long long)i2.iterations - (long long)i1.iterations) <= 1);
    /* a nonpositive diagonal at refresh fails on every rank; the next good refresh rebuilds */
    sla_dist_matrix_get_values(D, v);
    for (sla_int k = 0; k < nzl; k++) v[k] = -v[k];
    CHECK_OK(ctx, sla_dist_matrix_set_values(ctx, D, v));
    CHECK_ST(ctx, sla_dist_solver_refresh(ctx, S), SLA_ERR_NOT_SPD);
    for (sla_int k = 0; k < nzl; k++) v[k] = -v[k] / 10.0;
    CHECK_OK(ctx, sla_dist_matrix_set_values(ctx, D, v));
    CHECK_OK(ctx, sla_dist_solver_refresh(ctx, S));
    CHECK_OK(ctx, sla_dist_solver_solve(ctx, S, b, x2, &i2));
    CHECK(tu_reldiff(nl, x2, x1) < 1e-9);
    sla_dist_solver_destroy(&S);
    sla_dist_matrix_destroy(&D);
    free(v);
    free(b);
    free(x1);
    free(x2);
}

/* Allocation failures on the last rank only, at every allocation of the
 * set-up and of a refresh in turn: every rank returns an error (NOMEM on
 * the failing one), nothing leaks, nothing hangs. */
static void test_nomem(sla_ctx *ctx, const sla_matrix *A)
{
    sla_dist_matrix *D = distribute(ctx, A, 0);
    sla_int nzl = sla_dist_matrix_nnz_local(D);
    double *v = malloc((size_t)nzl * sizeof *v);
    sla_dist_matrix_get_values(D, v);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    o.precond = SLA_PRECOND_SAAMG;
    counter c = {0, -1, 0, 0};
    sla_ctx *cctx = NULL;
    sla_ctx_create(&cctx);
    sla_ctx_set_threads(cctx, 1);
    int failer = size_ - 1;
    if (rank_ == failer) {
        sla_allocator al = {count_malloc, count_free, &c};
        sla_ctx_set_allocator(cctx, &al);
    }
    int done = 0, k = 0, bad = 0;
    while (!done && k < 2000) {
        c.fail_at = k;
        c.calls = 0;
        c.failures = 0;
        sla_dist_solver *T = NULL;
        sla_status st = sla_dist_solver_create(cctx, D, &o, &T);
        if (!st) {
            for (sla_int q = 0; q < nzl; q++) v[q] *= 1.01;
            CHECK_OK(ctx, sla_dist_matrix_set_values(ctx, D, v));
            st = sla_dist_solver_refresh(cctx, T);
        }
        int mine = st == SLA_OK, all = 0, any = 0;
        MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        int bad0 = bad;
        if (all != any) bad++;
        if (rank_ == failer && !all && st != SLA_ERR_NOMEM) bad++;
        sla_dist_solver_destroy(&T);
        if (rank_ == failer && c.live != 0) bad++;
        if (bad != bad0)
            fprintf(stderr, "rank %d: allocation %d: status %d (%s), %ld live\n", rank_, k, (int)st,
                    sla_ctx_message(cctx), c.live);
        int f = rank_ == failer ? (int)c.failures : 0;
        MPI_Bcast(&f, 1, MPI_INT, failer, MPI_COMM_WORLD);
        done = f == 0;
        k++;
    }
    CHECK(done && bad == 0);
    if (rank_ == 0) printf("allocation failures on rank %d: %d points, all agreed and freed\n", failer, k - 1);
    sla_ctx_destroy(&cctx);
    sla_dist_matrix_destroy(&D);
    free(v);
}

/* Bad input: an error on every rank (the same status), never a crash or a hang. */
static void expect_error(sla_ctx *ctx, const sla_matrix *A, sla_status want, const char *fragment)
{
    sla_dist_matrix *D = distribute(ctx, A, 0);
    sla_solver_options o;
    sla_solver_options_default(&o);
    o.method = SLA_METHOD_CG;
    o.precond = SLA_PRECOND_SAAMG;
    sla_dist_solver *S = NULL;
    sla_status st = sla_dist_solver_create(ctx, D, &o, &S);
    CHECK(st == want);
    CHECK(S == NULL);
    CHECK(strstr(sla_ctx_message(ctx), fragment) != NULL);
    if (st != want || !strstr(sla_ctx_message(ctx), fragment))
        fprintf(stderr, "rank %d: status %d, message: %s\n", rank_, (int)st, sla_ctx_message(ctx));
    int s = (int)st, smin = 0, smax = 0;
    MPI_Allreduce(&s, &smin, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&s, &smax, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(smin == smax);
    sla_dist_solver_destroy(&S);
    sla_dist_matrix_destroy(&D);
}

/* A copy of A with entry (i, j) changed by f(v) (the caller frees it). */
static sla_matrix *modified(sla_ctx *ctx, const sla_matrix *A, sla_int i, sla_int j, double add, double scale)
{
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_matrix_copy(ctx, A, &B));
    sla_int nnz = sla_matrix_nnz(B);
    const sla_int *rp = sla_matrix_rowptr(B);
    sla_int *ci = malloc((size_t)nnz * sizeof *ci);
    double *v = malloc((size_t)nnz * sizeof *v);
    sla_matrix_get_colind(B, ci);
    memcpy(v, sla_matrix_values(B, 0), (size_t)nnz * sizeof *v);
    for (sla_int p = rp[i]; p < rp[i + 1]; p++)
        if (ci[p] == j) v[p] = v[p] * scale + add;
    CHECK_OK(ctx, sla_matrix_set_values(ctx, B, 0, v));
    free(ci);
    free(v);
    return B;
}

static void test_errors(sla_ctx *ctx, const sla_matrix *P, const sla_matrix *C)
{
    /* nonsymmetric everywhere */
    expect_error(ctx, C, SLA_ERR_UNSUPPORTED, "not symmetric");
    /* nonsymmetric only across the ranks' boundary: the last row of rank
     * 0 and its neighbour N rows below (another rank's row when size > 1) */
    sla_int n = sla_matrix_nrows(P), N = (sla_int)sqrt((double)n);
    sla_int i = size_ > 1 ? n / size_ - 1 : n / 2;
    sla_matrix *B = modified(ctx, P, i, i + N, 1e-3, 1.0);
    expect_error(ctx, B, SLA_ERR_UNSUPPORTED, "not symmetric");
    sla_matrix_destroy(&B);
    /* a nonpositive diagonal (symmetric): not SPD, naming the row */
    sla_int k = n - 2;
    B = modified(ctx, P, k, k, 0.0, -1.0);
    char frag[64];
    snprintf(frag, sizeof frag, "row %lld", (long long)k);
    expect_error(ctx, B, SLA_ERR_NOT_SPD, frag);
    sla_matrix_destroy(&B);
    /* a zero diagonal */
    B = modified(ctx, P, 5, 5, 0.0, 0.0);
    expect_error(ctx, B, SLA_ERR_SINGULAR, "diagonal");
    sla_matrix_destroy(&B);
}

/* saamg_theta reaches the distributed set-up: on anisotropic diffusion
 * (eps 0.03) the fine level's threshold decides whether the weak direction
 * is aggregated, so 0.01 gives another level 1 than the default; on one
 * rank (the same aggregation as the serial set-up) the very rows of the
 * serial hierarchy. */
static void test_theta(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_aniso2d(ctx, 60, 0.03, &A));
    sla_int rows1[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        sla_solver_options o;
        sla_solver_options_default(&o);
        o.method = SLA_METHOD_CG;
        o.precond = SLA_PRECOND_SAAMG;
        o.saamg_theta = k ? 0.01 : 0.0;
        sla_dist_matrix *D = distribute(ctx, A, 0);
        sla_dist_solver *S = NULL;
        CHECK_OK(ctx, sla_dist_solver_create(ctx, D, &o, &S));
        const sla__pc *pc = S ? sla__dist_solver_pc(S) : NULL;
        CHECK(pc && sla__dist_saamg_levels(pc) >= 2);
        sla_dist_matrix *P = NULL, *A1 = pc ? sla__dist_saamg_level(pc, 1, &P) : NULL;
        CHECK(A1 != NULL);
        rows1[k] = A1 ? sla_dist_matrix_n(A1) : 0;
        if (size_ == 1) { /* the serial hierarchy with the same option */
            sla_solver *T = NULL;
            sla_hierarchy_info h;
            CHECK_OK(ctx, sla_solver_create(ctx, A, &o, &T));
            CHECK_OK(ctx, sla_solver_hierarchy(ctx, T, 0, &h));
            CHECK(h.levels >= 2 && h.rows[1] == rows1[k]);
            sla_solver_destroy(&T);
        }
        sla_dist_solver_destroy(&S);
        sla_dist_matrix_destroy(&D);
    }
    if (rank_ == 0)
        printf("  saamg_theta: level 1 with %lld rows at the default, %lld at 0.01\n", (long long)rows1[0],
               (long long)rows1[1]);
    CHECK(rows1[0] > 0 && rows1[1] > 0 && rows1[0] != rows1[1]);
    sla_matrix_destroy(&A);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    sla_ctx_set_threads(ctx, 1);

    sla_matrix *P2 = NULL, *P3 = NULL, *K = NULL, *C = NULL, *Ps = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 100, &P2)); /* n = 10000: three levels */
    CHECK_OK(ctx, sla_gen_poisson(ctx, 3, 18, &P3));  /* n = 5832 */
    {
        sla_int N = 70, M = N + 1; /* kappa on the (N+1)^2 cells */
        double *kappa = malloc((size_t)(M * M) * sizeof *kappa);
        for (sla_int i = 0; i < M; i++)
            for (sla_int j = 0; j < M; j++) /* a jump of 100 across a diagonal band, and a smooth variation */
                kappa[i * M + j] = (labs((long)(i - j)) < 10 ? 100.0 : 1.0) * (1.0 + 0.5 * sin(0.2 * (double)(i + 2 * j)));
        CHECK_OK(ctx, sla_gen_diffusion2d(ctx, N, kappa, &K));
        free(kappa);
    }
    CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 13, 20.0, -8.0, &C));
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 20, &Ps));

    test_solve(ctx, P2, "poisson2d 100^2", 3, true);
    test_solve(ctx, P3, "poisson3d 18^3", 2, false);
    test_solve(ctx, K, "diffusion2d 70^2", 2, false);
    test_solve(ctx, Ps, "poisson2d 20^2 (one level, gathered)", 1, false);
    test_diagonal(ctx);
    test_refresh_drift(ctx, P2);
    {
        sla_matrix *Pm = NULL;
        CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 40, &Pm)); /* two levels, gathered coarsest */
        test_nomem(ctx, Pm);
        sla_matrix_destroy(&Pm);
    }
    test_errors(ctx, P2, C);
    test_theta(ctx);

    sla_matrix_destroy(&P2);
    sla_matrix_destroy(&P3);
    sla_matrix_destroy(&K);
    sla_matrix_destroy(&C);
    sla_matrix_destroy(&Ps);
    sla_ctx_destroy(&ctx);
    tu_failures = global_failures();
    int rc = rank_ == 0 ? tu_finish("test_dist_saamg") : (tu_failures ? 1 : 0);
    MPI_Finalize();
    return rc;
}
