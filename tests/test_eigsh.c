/* eigsh (ARPACK) and its VJP: against dense LAPACK dsyevd, central finite
 * differences, LM vs LA on an indefinite matrix, shift-invert interior
 * eigenvalues, degenerate clusters, non-convergence, batches, errors and
 * an allocation-failure sweep. */
#include "test_util.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* All eigenpairs of value array ib (ascending), dense. */
static void dense_eig(const sla_matrix *A, sla_int ib, double *w, double *Z)
{
    long long n = sla_matrix_nrows(A);
    sla_matrix_to_dense(NULL, A, ib, Z, n);
    LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'U', (lapack_int)n, Z, (lapack_int)n, w);
}

/* Symmetric random direction on the pattern. */
static void sym_direction(const sla_matrix *A, unsigned long long seed, double *D)
{
    long long nnz = sla_matrix_nnz(A);
    tu_fill(D, nnz, seed);
    sla_int *ri = malloc((size_t)nnz * sizeof *ri), *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_rowind(A, ri);
    sla_matrix_get_colind(A, ci);
    for (long long k = 0; k < nnz; k++)
        if (ri[k] < ci[k])
            for (long long q = 0; q < nnz; q++)
                if (ri[q] == ci[k] && ci[q] == ri[k]) { D[q] = D[k]; break; }
    free(ri);
    free(ci);
}

/* L = sum_i a_i l_i + sum_i (w_i . v_i)^2 (sign invariant); fills gl, gv. */
static double loss(long long n, int k, const double *l, const double *V, const double *a, const double *W,
                   double *gl, double *gv)
{
    double L = 0.0;
    for (int i = 0; i < k; i++) {
        double d = 0.0;
        for (long long r = 0; r < n; r++) d += W[i * n + r] * V[i * n + r];
        L += a[i] * l[i] + d * d;
        if (gl) gl[i] = a[i];
        if (gv)
            for (long long r = 0; r < n; r++) gv[i * n + r] = 2.0 * d * W[i * n + r];
    }
    return L;
}

static double eval_loss(sla_ctx *ctx, const sla_matrix *A, const sla_eigsh_options *o, const double *a,
                        const double *W)
{
    long long n = sla_matrix_nrows(A);
    int k = (int)o->k;
    double *l = malloc((size_t)k * sizeof *l), *V = malloc((size_t)(n * k) * sizeof *V);
    sla_status st = sla_eigsh(ctx, A, 0, o, l, V, n, NULL, NULL);
    double L = st == SLA_OK ? loss(n, k, l, V, a, W, NULL, NULL) : NAN;
    free(l);
    free(V);
    return L;
}

/* Gradient of the loss by the VJP, against the dense formula (all
 * eigenpairs from dsyevd) and central differences along a symmetric D. */
static void check_grad(sla_ctx *ctx, const char *name, const sla_matrix *A, const sla_eigsh_options *o)
{
    long long n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    int k = (int)o->k;
    double *l = malloc((size_t)k * sizeof *l), *V = malloc((size_t)(n * k) * sizeof *V);
    double *a = malloc((size_t)k * sizeof *a), *W = malloc((size_t)(n * k) * sizeof *W);
    double *gl = malloc((size_t)k * sizeof *gl), *gv = malloc((size_t)(n * k) * sizeof *gv);
    double *gA = malloc((size_t)nnz * sizeof *gA), *ref = calloc((size_t)nnz, sizeof *ref);
    double *D = malloc((size_t)nnz * sizeof *D);
    tu_fill(a, k, 3);
    tu_fill(W, n * k, 4);
    CHECK_OK(ctx, sla_eigsh(ctx, A, 0, o, l, V, n, NULL, NULL));
    loss(n, k, l, V, a, W, gl, gv);
    sla_eigsh_info info;
    CHECK_OK(ctx, sla_eigsh_vjp(ctx, A, 0, o, k, l, V, n, gl, gv, n, gA, &info));

    /* dense reference: u_i = sum_{j != i} z_j (z_j . g_i) / (l_i - m_j) over all n pairs */
    double *w = malloc((size_t)n * sizeof *w), *Z = malloc((size_t)(n * n) * sizeof *Z);
    double *u = malloc((size_t)n * sizeof *u);
    dense_eig(A, 0, w, Z);
    sla_int *ri = malloc((size_t)nnz * sizeof *ri), *ci = malloc((size_t)nnz * sizeof *ci);
    sla_matrix_get_rowind(A, ri);
    sla_matrix_get_colind(A, ci);
    for (int i = 0; i < k; i++) {
        const double *vi = V + (size_t)i * n, *gi = gv + (size_t)i * n;
        /* the dense eigenvector closest to v_i */
        long long jm = 0;
        double best = 0;
        for (long long j = 0; j < n; j++) {
            double d = 0;
            for (long long r = 0; r < n; r++) d += Z[j * n + r] * vi[r];
            if (fabs(d) > best) { best = fabs(d); jm = j; }
        }
        CHECK(best > 1.0 - 1e-9);
        CHECK_CLOSE(l[i], w[jm], 1e-10);
        memset(u, 0, (size_t)n * sizeof *u);
        for (long long j = 0; j < n; j++) {
            if (j == jm) continue;
            double c = 0;
            for (long long r = 0; r < n; r++) c += Z[j * n + r] * gi[r];
            c /= (w[jm] - w[j]);
            for (long long r = 0; r < n; r++) u[r] += c * Z[j * n + r];
        }
        for (long long p = 0; p < nnz; p++) ref[p] += gl[i] * vi[ri[p]] * vi[ci[p]] + u[ri[p]] * vi[ci[p]];
    }
    double ge = tu_reldiff(nnz, gA, ref);
    CHECK(ge < 1e-8);

    /* central differences of the loss along a symmetric direction */
    sym_direction(A, 9, D);
    double an = 0;
    for (long long p = 0; p < nnz; p++) an += gA[p] * D[p];
    sla_matrix *B = NULL;
    sla_matrix_copy(ctx, A, &B);
    const double *v0 = sla_matrix_values(A, 0);
    double *v = malloc((size_t)nnz * sizeof *v), fe = INFINITY;
    for (double h = 1e-4; h > 1e-7; h /= 10) {
        double f[2];
        for (int s = 0; s < 2; s++) {
            for (long long p = 0; p < nnz; p++) v[p] = v0[p] + (s ? -h : h) * D[p];
            sla_matrix_set_values(ctx, B, 0, v);
            f[s] = eval_loss(ctx, B, o, a, W);
        }
        fe = fmin(fe, fabs((f[0] - f[1]) / (2 * h) - an) / fmax(fabs(an), 1e-12));
    }
    CHECK(fe < 1e-6);
    printf("  %-26s k=%d grad vs dense %.1e, fd %.1e, minres its %lld (res %.1e)\n", name, k, ge, fe,
           (long long)info.iterations, info.max_residual);
    free(v);
    sla_matrix_destroy(&B);
    free(l); free(V); free(a); free(W); free(gl); free(gv); free(gA); free(ref); free(D);
    free(w); free(Z); free(u); free(ri); free(ci);
}

/* eigsh with `o` against the dense eigenvalues selected by `pick`
 * (indices into the ascending dense spectrum, k of them). */
static void check_vals(sla_ctx *ctx, const char *name, const sla_matrix *A, const sla_eigsh_options *o,
                       const long long *pick, const char *expect_method)
{
    long long n = sla_matrix_nrows(A);
    int k = (int)o->k;
    double *l = malloc((size_t)k * sizeof *l), *V = malloc((size_t)(n * k) * sizeof *V), res[64];
    double *w = malloc((size_t)n * sizeof *w), *Z = malloc((size_t)(n * n) * sizeof *Z);
    sla_eigsh_info info;
    dense_eig(A, 0, w, Z);
    CHECK_OK(ctx, sla_eigsh(ctx, A, 0, o, l, V, n, res, &info));
    double anorm = fmax(fabs(w[0]), fabs(w[n - 1]));
    double err = 0;
    for (int i = 0; i < k; i++) {
        err = fmax(err, fabs(l[i] - w[pick[i]]) / anorm);
        CHECK(res[i] < 1e-9 * anorm);
        if (i) CHECK(l[i] >= l[i - 1]);
        double nv = 0;
        for (long long r = 0; r < n; r++) nv += V[i * n + r] * V[i * n + r];
        CHECK_CLOSE(nv, 1.0, 1e-10);
    }
    CHECK(err < 1e-11);
    CHECK(info.converged && info.nconv == k);
    CHECK(strstr(info.method, expect_method) != NULL);
    printf("  %-26s %-3s%s k=%d: [%.6f .. %.6f] err %.1e max res %.1e, %s, %lld ops%s%s\n", name,
           sla_eig_which_name(o->which), o->shift_invert ? " +sigma" : "", k, l[0], l[k - 1], err,
           info.max_residual, info.method, (long long)info.nops, info.note[0] ? "; " : "", info.note);
    free(l); free(V); free(w); free(Z);
}

/* The k = 4 smallest and largest algebraic eigenvalues of the symmetric
 * matrices of tests/data and of the generators, against dense dsyevd (to
 * 1e-8 of the largest |eigenvalue|): SA by shift-invert below the spectrum
 * (plain Lanczos stalled on 494_bus and its kind), LA by plain Lanczos or,
 * where that stalls, shift-invert above. Prints the path each took. */
static void real_matrix_table(sla_ctx *ctx)
{
    static const char *const files[] = {"494_bus", "bcsstk01", "mesh1e1", "can_24", "tumorAntiAngiogenesis_2",
                                        "GD97_b", "reorientation_1", "dwt_878"};
    const int nfiles = (int)(sizeof files / sizeof files[0]), ngen = 7;
    printf("  %-24s %-3s %-32s %9s %9s %8s\n", "matrix", "wh", "path", "max err", "max res", "seconds");
    for (int m = 0; m < nfiles + ngen; m++) {
        sla_matrix *A = NULL;
        char name[64];
        if (m < nfiles) {
            char path[512];
            snprintf(path, sizeof path, "%s/%s.mtx", SLA_TEST_DATA, files[m]);
            snprintf(name, sizeof name, "%s", files[m]);
            CHECK_OK(ctx, sla_mm_read(ctx, path, SLA_F64, &A));
        } else {
            sla_status sg = SLA_OK;
            switch (m - nfiles) {
            case 0: sg = sla_gen_poisson(ctx, 1, 300, &A); snprintf(name, sizeof name, "poisson1d 300"); break;
            case 1: sg = sla_gen_poisson(ctx, 2, 25, &A); snprintf(name, sizeof name, "poisson2d 25"); break;
            case 2: sg = sla_gen_poisson(ctx, 3, 9, &A); snprintf(name, sizeof name, "poisson3d 9"); break;
            case 3: sg = sla_gen_aniso2d(ctx, 20, 0.01, &A); snprintf(name, sizeof name, "aniso2d 20 eps .01"); break;
            case 4: sg = sla_gen_random(ctx, 400, 4, SLA_GEN_SYMMETRIC, 5, &A); snprintf(name, sizeof name, "random symmetric 400"); break;
            case 5: sg = sla_gen_random(ctx, 400, 4, SLA_GEN_SPD, 6, &A); snprintf(name, sizeof name, "random spd 400"); break;
            default: {
                double kappa[21 * 21];
                for (int c = 0; c < 21 * 21; c++) kappa[c] = (c * 7919) % 13 < 3 ? 1e3 : 1.0; /* jumps */
                sg = sla_gen_diffusion2d(ctx, 20, kappa, &A);
                snprintf(name, sizeof name, "diffusion2d 20 jumps 1e3");
            }
            }
            CHECK_OK(ctx, sg);
        }
        if (!A) continue;
        long long n = sla_matrix_nrows(A);
        double *w = malloc((size_t)n * sizeof *w), *Z = malloc((size_t)(n * n) * sizeof *Z);
        double *V = malloc((size_t)(4 * n) * sizeof *V);
        dense_eig(A, 0, w, Z);
        double anorm = fmax(fabs(w[0]), fabs(w[n - 1]));
        for (int side = 0; side < 2; side++) {
            sla_eigsh_options o;
            sla_eigsh_options_default(&o);
            o.k = 4;
            o.which = side ? SLA_EIG_LA : SLA_EIG_SA;
            double l[4], res[4];
            sla_eigsh_info info;
            sla_status st = sla_eigsh(ctx, A, 0, &o, l, V, n, res, &info);
            CHECK_OK(ctx, st);
            double err = 0.0, rmax = 0.0;
            for (int i = 0; i < 4; i++) {
                double ref = side ? w[n - 4 + i] : w[i];
                err = fmax(err, fabs(l[i] - ref) / anorm);
                rmax = fmax(rmax, res[i] / anorm);
            }
            CHECK(err < 1e-8);
            CHECK(rmax < 1e-8);
            CHECK(info.converged && info.nconv == 4);
            /* SA goes by shift-invert wherever a factorization is possible */
            if (!side) CHECK(strstr(info.method, "shift-invert") != NULL);
            printf("  %-24s %-3s %-32s %9.1e %9.1e %8.4f%s%s\n", name, side ? "LA" : "SA", info.method, err, rmax,
                   info.seconds, info.note[0] ? "\n      note: " : "", info.note);
        }
        free(w);
        free(Z);
        free(V);
        sla_matrix_destroy(&A);
    }
}

int main(void)
{
    sla_ctx *ctx = NULL;
    sla_ctx_create(&ctx);
    sla_matrix *P = NULL, *S = NULL, *An = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 2, 12, &P));
    CHECK_OK(ctx, sla_gen_random(ctx, 120, 4, SLA_GEN_SYMMETRIC, 21, &S)); /* symmetric indefinite */
    CHECK_OK(ctx, sla_gen_aniso2d(ctx, 10, 0.37, &An));    /* simple spectrum */
    sla_eigsh_options o;
    sla_eigsh_options_default(&o);
    {
        double l[6];
        sla_status st = sla_eigsh(ctx, S, 0, &o, l, NULL, 0, NULL, NULL);
        if (st == SLA_ERR_UNAVAILABLE) {
            printf("ARPACK not in this build: eigsh unavailable (%s)\n", sla_ctx_message(ctx));
            CHECK(strstr(sla_ctx_message(ctx), "ARPACK") != NULL);
            sla_matrix_destroy(&P);
            sla_matrix_destroy(&S);
            sla_matrix_destroy(&An);
            sla_ctx_destroy(&ctx);
            return tu_finish("test_eigsh (no ARPACK)");
        }
    }
    long long nS = sla_matrix_nrows(S), nP = sla_matrix_nrows(P);
    double *wS = malloc((size_t)nS * sizeof *wS), *ZS = malloc((size_t)(nS * nS) * sizeof *ZS);
    dense_eig(S, 0, wS, ZS);
    CHECK(wS[0] < 0 && wS[nS - 1] > 0);

    /* LA, SA (plain Lanczos) on the indefinite matrix */
    long long pick[8];
    o.k = 4;
    o.which = SLA_EIG_LA;
    for (int i = 0; i < 4; i++) pick[i] = nS - 4 + i;
    check_vals(ctx, "random symmetric 120", S, &o, pick, "arpack");
    o.which = SLA_EIG_SA;
    for (int i = 0; i < 4; i++) pick[i] = i;
    check_vals(ctx, "random symmetric 120", S, &o, pick, "arpack");

    /* LM: the 4 largest |l| (from both ends), which differ from LA's */
    {
        long long lo = 0, hi = nS - 1, sel[4];
        for (int i = 0; i < 4; i++) sel[i] = fabs(wS[lo]) > fabs(wS[hi]) ? lo++ : hi--;
        /* ascending */
        for (int i = 0; i < 4; i++)
            for (int j = i + 1; j < 4; j++)
                if (sel[j] < sel[i]) { long long t = sel[i]; sel[i] = sel[j]; sel[j] = t; }
        CHECK(lo > 0); /* some of them are negative: LM != LA */
        o.which = SLA_EIG_LM;
        check_vals(ctx, "random symmetric 120", S, &o, sel, "arpack");
        double lm[4], la[4];
        CHECK_OK(ctx, sla_eigsh(ctx, S, 0, &o, lm, NULL, 0, NULL, NULL));
        o.which = SLA_EIG_LA;
        CHECK_OK(ctx, sla_eigsh(ctx, S, 0, &o, la, NULL, 0, NULL, NULL));
        CHECK(lm[0] < 0 && la[0] > 0 && fabs(lm[0] - la[0]) > 0.1);
    }

    /* SM: shift-invert around 0 (the factorization of an indefinite A) */
    {
        long long sel[4], used[200] = {0};
        for (int i = 0; i < 4; i++) {
            long long bj = -1;
            for (long long j = 0; j < nS; j++)
                if (!used[j] && (bj < 0 || fabs(wS[j]) < fabs(wS[bj]))) bj = j;
            used[bj] = 1;
            sel[i] = bj;
        }
        for (int i = 0; i < 4; i++)
            for (int j = i + 1; j < 4; j++)
                if (sel[j] < sel[i]) { long long t = sel[i]; sel[i] = sel[j]; sel[j] = t; }
        o.which = SLA_EIG_SM;
        check_vals(ctx, "random symmetric 120", S, &o, sel, "shift-invert");
        /* interior eigenvalues nearest sigma = 0.8 */
        double sigma = 0.8;
        for (int i = 0; i < 200 && i < nS; i++) used[i] = 0;
        for (int i = 0; i < 3; i++) {
            long long bj = -1;
            for (long long j = 0; j < nS; j++)
                if (!used[j] && (bj < 0 || fabs(wS[j] - sigma) < fabs(wS[bj] - sigma))) bj = j;
            used[bj] = 1;
            sel[i] = bj;
        }
        for (int i = 0; i < 3; i++)
            for (int j = i + 1; j < 3; j++)
                if (sel[j] < sel[i]) { long long t = sel[i]; sel[i] = sel[j]; sel[j] = t; }
        CHECK(sel[0] > 5 && sel[2] < nS - 5); /* interior */
        o.k = 3;
        o.which = SLA_EIG_LM;
        o.shift_invert = true;
        o.sigma = sigma;
        check_vals(ctx, "random symmetric 120", S, &o, sel, "shift-invert (ldlt)");
        o.factor_method = SLA_METHOD_LU;
        check_vals(ctx, "random symmetric 120", S, &o, sel, "shift-invert (lu)");
        o.factor_method = SLA_METHOD_AUTO;
        o.shift_invert = false;
    }

    real_matrix_table(ctx);
    /* the eigenvector VJP on pairs from shift-invert below the spectrum */
    {
        sla_matrix *B = NULL;
        CHECK_OK(ctx, sla_mm_read(ctx, SLA_TEST_DATA "/494_bus.mtx", SLA_F64, &B));
        o.which = SLA_EIG_SA;
        o.k = 4;
        check_grad(ctx, "494_bus, SA", B, &o);
        /* SA with an explicit factor method: sigma found by trial
         * Cholesky factorizations, then refactored with LU */
        sla_eigsh_options q;
        sla_eigsh_options_default(&q);
        q.k = 4;
        q.which = SLA_EIG_SA;
        q.factor_method = SLA_METHOD_LU;
        for (int i = 0; i < 4; i++) pick[i] = i;
        check_vals(ctx, "494_bus", B, &q, pick, "shift-invert (lu)");
        sla_matrix_destroy(&B);
    }
    /* LA where plain Lanczos runs out of restarts (the clustered top of
     * poisson1d): shift-invert above the spectrum, said so */
    {
        sla_matrix *B = NULL;
        CHECK_OK(ctx, sla_gen_poisson(ctx, 1, 300, &B));
        sla_eigsh_options q;
        sla_eigsh_options_default(&q);
        q.k = 4;
        q.which = SLA_EIG_LA;
        q.maxiter = 2;
        for (int i = 0; i < 4; i++) pick[i] = 296 + i;
        check_vals(ctx, "poisson1d 300, maxiter 2", B, &q, pick, "shift-invert (cholesky)");
        double l[4];
        sla_eigsh_info info;
        CHECK_OK(ctx, sla_eigsh(ctx, B, 0, &q, l, NULL, 0, NULL, &info));
        CHECK(strstr(info.note, "LA: plain Lanczos converged") != NULL && strstr(info.note, "above") != NULL);
        for (int i = 0; i < 4; i++) CHECK(l[i] < 4.0);
        sla_matrix_destroy(&B);
    }

    /* no factorization fits (memory_limit 1 byte): SA by LOBPCG, LA by
     * plain Lanczos with a larger basis, each said so */
    {
        static const char *const fb[] = {"494_bus", "GD97_b", "bcsstk01"};
        for (int f = 0; f < 3; f++) {
            char path[512];
            snprintf(path, sizeof path, "%s/%s.mtx", SLA_TEST_DATA, fb[f]);
            sla_matrix *B = NULL;
            CHECK_OK(ctx, sla_mm_read(ctx, path, SLA_F64, &B));
            long long n = sla_matrix_nrows(B);
            double *w = malloc((size_t)n * sizeof *w), *Z = malloc((size_t)(n * n) * sizeof *Z), l[4];
            dense_eig(B, 0, w, Z);
            double anorm = fmax(fabs(w[0]), fabs(w[n - 1])), err = 0.0;
            sla_eigsh_options q;
            sla_eigsh_options_default(&q);
            q.k = 4;
            q.which = SLA_EIG_SA;
            q.memory_limit = 1.0;
            sla_eigsh_info info;
            CHECK_OK(ctx, sla_eigsh(ctx, B, 0, &q, l, NULL, 0, NULL, &info));
            for (int i = 0; i < 4; i++) err = fmax(err, fabs(l[i] - w[i]) / anorm);
            CHECK(err < 1e-8);
            CHECK(strstr(info.method, "lobpcg") != NULL && strstr(info.note, "memory_limit") != NULL);
            printf("  %-24s SA  no factorization: %s, err %.1e; %s\n", fb[f], info.method, err, info.note);
            free(w);
            free(Z);
            sla_matrix_destroy(&B);
        }
        sla_matrix *B = NULL;
        CHECK_OK(ctx, sla_gen_poisson(ctx, 1, 300, &B));
        sla_eigsh_options q;
        sla_eigsh_options_default(&q);
        q.k = 4;
        q.which = SLA_EIG_LA;
        q.memory_limit = 1.0;
        for (int i = 0; i < 4; i++) pick[i] = 296 + i;
        check_vals(ctx, "poisson1d 300, no factor", B, &q, pick, "arpack");
        double l[4];
        sla_eigsh_info info;
        CHECK_OK(ctx, sla_eigsh(ctx, B, 0, &q, l, NULL, 0, NULL, &info));
        CHECK(strstr(info.note, "no factorization above") != NULL && strstr(info.note, "ncv = 64") != NULL);
        q.memory_limit = -1.0;
        CHECK_ERR(ctx, sla_eigsh(ctx, B, 0, &q, l, NULL, 0, NULL, NULL), SLA_ERR_ARGUMENT, "memory_limit");
        sla_matrix_destroy(&B);
    }

    /* Poisson: smallest by shift-invert (Cholesky), against the analytic values */
    {
        o.k = 6;
        o.which = SLA_EIG_SM;
        for (int i = 0; i < 6; i++) pick[i] = i;
        check_vals(ctx, "poisson2d 12", P, &o, pick, "shift-invert (cholesky)");
        double l[6];
        CHECK_OK(ctx, sla_eigsh(ctx, P, 0, &o, l, NULL, 0, NULL, NULL));
        double h = M_PI / 13.0;
        CHECK_CLOSE(l[0], 4.0 - 4.0 * cos(h), 1e-12); /* 2(1 - cos h) per direction */
        CHECK_CLOSE(l[1], l[2], 1e-12);               /* (1,2) and (2,1) */
    }

    /* gradients: dense formula and central differences */
    o.which = SLA_EIG_SA;
    o.k = 4;
    check_grad(ctx, "random symmetric 120, SA", S, &o);
    o.which = SLA_EIG_SM;
    o.k = 3;
    check_grad(ctx, "random symmetric 120, SM", S, &o);
    o.which = SLA_EIG_LA;
    o.k = 5;
    check_grad(ctx, "aniso2d 10 eps .37, LA", An, &o);

    /* degenerate cluster: Poisson l_2 = l_3 */
    {
        o.which = SLA_EIG_SM;
        o.k = 4;
        double l[4], *V = malloc((size_t)(nP * 4) * sizeof *V), gl[4] = {1, 2, 2, 0.5};
        double *gv = calloc((size_t)(nP * 4), sizeof *gv), *gA = malloc((size_t)sla_matrix_nnz(P) * sizeof *gA);
        CHECK_OK(ctx, sla_eigsh(ctx, P, 0, &o, l, V, nP, NULL, NULL));
        /* eigenvalue-only loss, invariant within the cluster: accepted */
        CHECK_OK(ctx, sla_eigsh_vjp(ctx, P, 0, &o, 4, l, V, nP, gl, NULL, 0, gA, NULL));
        /* and equal to the dense Hellmann-Feynman sum: d(l1 + 2 (l2 + l3) + 0.5 l4) along a
         * symmetric direction by central differences */
        {
            long long nnz = sla_matrix_nnz(P);
            double *D = malloc((size_t)nnz * sizeof *D), *v = malloc((size_t)nnz * sizeof *v);
            sym_direction(P, 5, D);
            double an = 0;
            for (long long p = 0; p < nnz; p++) an += gA[p] * D[p];
            sla_matrix *B = NULL;
            sla_matrix_copy(ctx, P, &B);
            const double *v0 = sla_matrix_values(P, 0);
            double f[2], hh = 1e-5, *w = malloc((size_t)nP * sizeof *w), *Z = malloc((size_t)(nP * nP) * sizeof *Z);
            for (int s = 0; s < 2; s++) {
                for (long long p = 0; p < nnz; p++) v[p] = v0[p] + (s ? -hh : hh) * D[p];
                sla_matrix_set_values(ctx, B, 0, v);
                dense_eig(B, 0, w, Z);
                f[s] = w[0] + 2 * (w[1] + w[2]) + 0.5 * w[3];
            }
            double fd = (f[0] - f[1]) / (2 * hh);
            CHECK(fabs(fd - an) < 1e-6 * fabs(an));
            free(w); free(Z); free(D); free(v);
            sla_matrix_destroy(&B);
        }
        double bad[4] = {1, 2, 3, 0.5};
        CHECK_ERR(ctx, sla_eigsh_vjp(ctx, P, 0, &o, 4, l, V, nP, bad, NULL, 0, gA, NULL), SLA_ERR_UNSUPPORTED,
                  "degenerate");
        for (long long r = 0; r < nP; r++) gv[1 * nP + r] = (double)(r % 7) - 3.0; /* depends on v_2 alone */
        CHECK_ERR(ctx, sla_eigsh_vjp(ctx, P, 0, &o, 4, l, V, nP, gl, gv, nP, gA, NULL), SLA_ERR_UNSUPPORTED,
                  "not invariant");
        free(V); free(gv); free(gA);
    }

    /* non-convergence reported: two restarts of a tiny basis (LM: plain
     * Lanczos, with no shift-invert to fall back on) */
    {
        sla_eigsh_options q;
        sla_eigsh_options_default(&q);
        q.k = 4;
        q.which = SLA_EIG_LM;
        q.ncv = 6;
        q.maxiter = 2;
        double l[4], res[4];
        sla_eigsh_info info;
        CHECK_ST(ctx, sla_eigsh(ctx, An, 0, &q, l, NULL, 0, res, &info), SLA_NOT_CONVERGED);
        CHECK(!info.converged && info.nconv < 4);
        CHECK(strstr(sla_ctx_message(ctx), "converged") != NULL);
        CHECK(isnan(l[3]) && isnan(res[3]));
    }

    /* SM on a singular matrix: no shift-invert around 0, plain Lanczos, said so */
    {
        sla_int n = 30, rows[100], cols[100];
        double vals[100];
        int q = 0;
        for (sla_int i = 0; i < n; i++) {
            if (i > 0) { rows[q] = i; cols[q] = i - 1; vals[q++] = -1; }
            rows[q] = i; cols[q] = i; vals[q++] = (i == 0 || i == n - 1) ? 1 : 2;
            if (i < n - 1) { rows[q] = i; cols[q] = i + 1; vals[q++] = -1; }
        }
        sla_matrix *N = NULL;
        CHECK_OK(ctx, sla_matrix_from_coo(ctx, n, n, q, rows, cols, SLA_F64, 1, vals, NULL, &N));
        sla_eigsh_options s2;
        sla_eigsh_options_default(&s2);
        s2.k = 2;
        s2.which = SLA_EIG_SM;
        double l[2];
        sla_eigsh_info info;
        CHECK_OK(ctx, sla_eigsh(ctx, N, 0, &s2, l, NULL, 0, NULL, &info));
        CHECK(fabs(l[0]) < 1e-10);
        CHECK_CLOSE(l[1], 2 - 2 * cos(M_PI / n), 1e-10);
        CHECK(strstr(info.note, "singular") != NULL);
        /* an explicit shift at an eigenvalue: A - sigma I is singular, so
         * sigma moves off it (by 1e-8 ||A||), said so */
        s2.shift_invert = true;
        s2.sigma = 0.0;
        s2.which = SLA_EIG_LM;
        s2.factor_method = SLA_METHOD_LU;
        CHECK_OK(ctx, sla_eigsh(ctx, N, 0, &s2, l, NULL, 0, NULL, &info));
        CHECK(fabs(l[0]) < 1e-10);
        CHECK_CLOSE(l[1], 2 - 2 * cos(M_PI / n), 1e-10);
        CHECK(strstr(info.note, "singular") != NULL && strstr(info.note, "instead") != NULL);
        CHECK(strstr(info.method, "shift-invert (lu)") != NULL);
        sla_matrix_destroy(&N);
    }

    /* batch: A and 2 A */
    {
        long long nnz = sla_matrix_nnz(An), n = sla_matrix_nrows(An);
        double *vals = malloc((size_t)(2 * nnz) * sizeof *vals);
        const double *p = sla_matrix_values(An, 0);
        for (long long q = 0; q < nnz; q++) { vals[q] = p[q]; vals[nnz + q] = 2 * p[q]; }
        sla_int *rp = malloc((size_t)(n + 1) * sizeof *rp), *ci = malloc((size_t)nnz * sizeof *ci);
        memcpy(rp, sla_matrix_rowptr(An), (size_t)(n + 1) * sizeof *rp);
        sla_matrix_get_colind(An, ci);
        sla_matrix *B = NULL;
        CHECK_OK(ctx, sla_matrix_from_csr(ctx, n, n, rp, ci, SLA_F64, 2, vals, SLA_COPY, &B));
        sla_eigsh_options b;
        sla_eigsh_options_default(&b);
        b.k = 3;
        b.which = SLA_EIG_LA;
        double l[6], res[6];
        sla_eigsh_info info[2];
        /* k = 0 arrives with empty (NULL) arrays from a binding: say so (issue 21) */
        sla_eigsh_options k0 = b;
        k0.k = 0;
        CHECK_ST(ctx, sla_eigsh_batch(ctx, B, &k0, NULL, NULL, NULL, NULL), SLA_ERR_ARGUMENT);
        CHECK(strstr(sla_ctx_message(ctx), "k must be >= 1") != NULL);
        CHECK_OK(ctx, sla_eigsh_batch(ctx, B, &b, l, NULL, res, info));
        for (int i = 0; i < 3; i++) CHECK_CLOSE(l[3 + i], 2 * l[i], 1e-12);
        CHECK(info[1].converged);
        /* batched VJP = one VJP per value array; for 2A: gl terms equal, gv terms halve */
        double *V = malloc((size_t)(2 * 3 * n) * sizeof *V), *gv = malloc((size_t)(2 * 3 * n) * sizeof *gv);
        double gl[6] = {1, -2, 0.5, 1, -2, 0.5}, *gA = malloc((size_t)(2 * nnz) * sizeof *gA);
        double *g1 = malloc((size_t)nnz * sizeof *g1);
        CHECK_OK(ctx, sla_eigsh_batch(ctx, B, &b, l, V, NULL, NULL));
        tu_fill(gv, 3 * n, 8);
        /* the same loss on both arrays (eigenvector signs may differ: flip gv with them) */
        for (long long i = 0; i < 3; i++) {
            double d = 0;
            for (long long r = 0; r < n; r++) d += V[i * n + r] * V[(3 + i) * n + r];
            for (long long r = 0; r < n; r++) gv[(3 + i) * n + r] = (d < 0 ? -1 : 1) * gv[i * n + r];
        }
        CHECK_OK(ctx, sla_eigsh_batch_vjp(ctx, B, &b, 3, l, V, gl, gv, gA, NULL));
        CHECK_OK(ctx, sla_eigsh_vjp(ctx, An, 0, &b, 3, l, V, n, gl, gv, n, g1, NULL));
        CHECK(tu_reldiff(nnz, gA, g1) < 1e-10);
        /* array 1 is 2A: the same eigenvectors, eigenvalue gaps doubled, so
         * gA(2A) = gl part + half the eigenvector part; with gv = 0 they agree */
        memset(gv, 0, (size_t)(2 * 3 * n) * sizeof *gv);
        CHECK_OK(ctx, sla_eigsh_batch_vjp(ctx, B, &b, 3, l, V, gl, gv, gA, NULL));
        CHECK(tu_reldiff(nnz, gA + nnz, gA) < 1e-10);
        free(V); free(gv); free(gA); free(g1);
        free(vals); free(rp); free(ci);
        sla_matrix_destroy(&B);
    }

    /* errors */
    {
        double l[8];
        sla_matrix *C = NULL;
        CHECK_OK(ctx, sla_gen_convdiff2d(ctx, 5, 10, 0, &C));
        sla_eigsh_options e;
        sla_eigsh_options_default(&e);
        e.k = 2;
        CHECK_ERR(ctx, sla_eigsh(ctx, C, 0, &e, l, NULL, 0, NULL, NULL), SLA_ERR_ARGUMENT, "not symmetric");
        e.k = (sla_int)nP;
        CHECK_ERR(ctx, sla_eigsh(ctx, P, 0, &e, l, NULL, 0, NULL, NULL), SLA_ERR_ARGUMENT, "k =");
        e.k = 2;
        e.which = (sla_eig_which)7;
        CHECK_ERR(ctx, sla_eigsh(ctx, P, 0, &e, l, NULL, 0, NULL, NULL), SLA_ERR_ARGUMENT, "which");
        e.which = SLA_EIG_LA;
        e.shift_invert = true;
        e.sigma = NAN;
        CHECK_ST(ctx, sla_eigsh(ctx, P, 0, &e, l, NULL, 0, NULL, NULL), SLA_ERR_VALUE);
        e.sigma = 1;
        e.factor_method = SLA_METHOD_CG;
        CHECK_ERR(ctx, sla_eigsh(ctx, P, 0, &e, l, NULL, 0, NULL, NULL), SLA_ERR_ARGUMENT, "direct");
        e.shift_invert = false;
        e.factor_method = SLA_METHOD_AUTO;
        CHECK_ST(ctx, sla_eigsh(ctx, P, 1, &e, l, NULL, 0, NULL, NULL), SLA_ERR_INDEX);
        CHECK_ST(ctx, sla_eigsh(ctx, P, 0, &e, NULL, NULL, 0, NULL, NULL), SLA_ERR_ARGUMENT);
        double V[4];
        CHECK_ST(ctx, sla_eigsh(ctx, P, 0, &e, l, V, 2, NULL, NULL), SLA_ERR_DIMENSION);
        sla_matrix_destroy(&C);
    }

    /* allocation failures in plain and shift-invert eigsh and in the VJP */
    for (int mode = 0; mode < 4; mode++) {
        sla_eigsh_options q;
        sla_eigsh_options_default(&q);
        q.k = 3;
        q.which = mode == 1 ? SLA_EIG_SM : mode == 3 ? SLA_EIG_SA : SLA_EIG_LA;
        long long n = sla_matrix_nrows(An), nnz = sla_matrix_nnz(An);
        double l[3], *V = malloc((size_t)(3 * n) * sizeof *V), *gv = malloc((size_t)(3 * n) * sizeof *gv);
        double *gA = malloc((size_t)nnz * sizeof *gA), gl[3] = {1, 2, 3};
        tu_fill(gv, 3 * n, 1);
        if (mode == 2) CHECK_OK(ctx, sla_eigsh(ctx, An, 0, &q, l, V, n, NULL, NULL));
        int ok = 0, nomem = 0;
        for (long fail = 0; fail < 2000 && !ok; fail++) {
            counter cnt = {0, fail, 0, 0};
            sla_allocator al = {count_malloc, count_free, &cnt};
            sla_ctx *c2 = NULL;
            sla_ctx_create(&c2);
            sla_ctx_set_allocator(c2, &al);
            sla_status st = mode != 2 ? sla_eigsh(c2, An, 0, &q, l, V, n, NULL, NULL)
                                      : sla_eigsh_vjp(c2, An, 0, &q, 3, l, V, n, gl, gv, n, gA, NULL);
            CHECK(cnt.live == 0);
            sla_ctx_destroy(&c2);
            if (cnt.failures == 0) {
                CHECK(st == SLA_OK);
                ok = 1;
            } else {
                CHECK(st == SLA_ERR_NOMEM);
                nomem++;
            }
        }
        CHECK(ok && nomem >= 2);
        free(V); free(gv); free(gA);
    }

    free(wS);
    free(ZS);
    sla_matrix_destroy(&P);
    sla_matrix_destroy(&S);
    sla_matrix_destroy(&An);
    sla_ctx_destroy(&ctx);
    return tu_finish("test_eigsh");
}
