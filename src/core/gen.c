/* Generators for standard test matrices: grid stencils and random sparse.
 *
 * Grid matrices are built directly in CSR. For a grid of dimension D the
 * stencil has 2D+1 "slots" in increasing column order:
 *   slot s < D : neighbour at -stride[D-1-s]  (farthest first)
 *   slot D     : the point itself
 *   slot s > D : neighbour at +stride[s-D-1]
 * with stride[k] = N^k (x fastest). A slot exists when the neighbour is
 * inside the grid; Dirichlet boundary neighbours are dropped.
 */
#include "internal.h"

#include <math.h>
#include <string.h>

#define MAX_SLOTS 7

/* ---- grid patterns ------------------------------------------------------ */

typedef struct grid {
    int dim;
    sla_int N, n;
    sla_int stride[3];
} grid;

/* n = N^dim, refusing sizes beyond the 32-bit column limit. */
static sla_status grid_init(sla_ctx *ctx, int dim, sla_int N, grid *g)
{
    if (dim < 1 || dim > 3)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "grid dimension must be 1, 2 or 3 (got %d)",
                          dim);
    if (N < 1)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "grid size N must be >= 1 (got %lld)",
                          (long long)N);
    g->dim = dim;
    g->N = N;
    sla_int n = 1;
    for (int k = 0; k < dim; k++) {
        g->stride[k] = n;
        if (n > INT32_MAX / N)
            return sla__error(ctx, SLA_ERR_TOO_LARGE,
                              "grid %lld^%d has more than %d unknowns (32-bit indices)",
                              (long long)N, dim, INT32_MAX);
        n *= N;
    }
    g->n = n;
    return SLA_OK;
}

/* Coordinate along axis k of point p. */
static sla_int grid_coord(const grid *g, sla_int p, int k)
{
    return (p / g->stride[k]) % g->N;
}

/* Does slot s of point p exist, and its column offset. */
static bool grid_slot(const grid *g, sla_int p, int s, sla_int *offset)
{
    int D = g->dim;
    if (s == D) {
        *offset = 0;
        return true;
    }
    int k = s < D ? D - 1 - s : s - D - 1;
    sla_int x = grid_coord(g, p, k);
    *offset = s < D ? -g->stride[k] : g->stride[k];
    return s < D ? x > 0 : x < g->N - 1;
}

/* CSR pattern of the (2 dim + 1)-point stencil; values left to the caller
 * (allocated, uninitialised). */
static sla_status grid_matrix(sla_ctx *ctx, const grid *g, sla_matrix **out)
{
    sla_allocator a = sla__ctx_alloc(ctx);
    int ns = 2 * g->dim + 1;
    sla_int cap = g->n * ns; /* <= 7 * INT32_MAX */
    sla_int *rowptr = sla__malloc(&a, (size_t)g->n + 1, sizeof *rowptr);
    int32_t *colind = sla__malloc(&a, (size_t)cap, sizeof *colind);
    double *vals = NULL;
    sla_int nnz = 0, off = 0;
    if (!rowptr || !colind) goto nomem;
    rowptr[0] = 0;
    for (sla_int p = 0; p < g->n; p++) {
        for (int s = 0; s < ns; s++)
            if (grid_slot(g, p, s, &off)) colind[nnz++] = (int32_t)(p + off);
        rowptr[p + 1] = nnz;
    }
    vals = sla__malloc(&a, (size_t)nnz, sizeof *vals);
    if (!vals) goto nomem;
    *out = sla__matrix_wrap(&a, g->n, g->n, nnz, 1, SLA_F64, rowptr, colind, vals);
    if (!*out) goto nomem;
    return SLA_OK;

nomem:
    sla__free(&a, rowptr);
    sla__free(&a, colind);
    sla__free(&a, vals);
    return sla__error(ctx, SLA_ERR_NOMEM, "out of memory building a %lld-point grid matrix "
                      "(n = %lld)", (long long)ns, (long long)g->n);
}

/* Constant stencil: value of slot s is w[s]. */
static void grid_fill(const grid *g, const double *w, double *vals)
{
    int ns = 2 * g->dim + 1;
    sla_int k = 0, off = 0;
    for (sla_int p = 0; p < g->n; p++)
        for (int s = 0; s < ns; s++)
            if (grid_slot(g, p, s, &off)) vals[k++] = w[s];
}

static sla_status check_stencil(sla_ctx *ctx, const char *what, int ns, const double *w)
{
    for (int s = 0; s < ns; s++)
        if (!isfinite(w[s]))
            return sla__error(ctx, SLA_ERR_VALUE, "%s: stencil coefficient %d is %g "
                              "(parameters too large)", what, s, w[s]);
    return SLA_OK;
}

/* Matrix of a constant stencil w (slot order) on the N^dim grid. */
static sla_status stencil_matrix(sla_ctx *ctx, const char *what, int dim, sla_int N,
                                 const double *w, sla_matrix **out)
{
    if (!out) return sla__error(ctx, SLA_ERR_ARGUMENT, "%s: out is NULL", what);
    *out = NULL;
    grid g = {0};
    sla_status st = grid_init(ctx, dim, N, &g);
    if (st || (st = check_stencil(ctx, what, 2 * dim + 1, w)) ||
        (st = grid_matrix(ctx, &g, out)))
        return st;
    grid_fill(&g, w, (double *)(*out)->values);
    return sla__ok(ctx, SLA_OK);
}

/* ---- constant-coefficient problems ------------------------------------ */

sla_status sla_gen_poisson(sla_ctx *ctx, int dim, sla_int N, sla_matrix **out)
{
    /* -Laplace u, unscaled: 2 dim on the diagonal, -1 per neighbour */
    double w[MAX_SLOTS];
    for (int s = 0; s < MAX_SLOTS; s++) w[s] = -1.0;
    if (dim >= 1 && dim <= 3) w[dim] = 2.0 * dim;
    return stencil_matrix(ctx, "sla_gen_poisson", dim, N, w, out);
}

sla_status sla_gen_convdiff2d(sla_ctx *ctx, sla_int N, double bx, double by, sla_matrix **out)
{
    if (!isfinite(bx) || !isfinite(by))
        return sla__error(ctx, SLA_ERR_VALUE, "sla_gen_convdiff2d: velocity (%g, %g) is not "
                          "finite", bx, by);
    /* h^2 (-Laplace u + b . grad u), upwind: for b > 0 the backward
     * difference b (u_i - u_{i-1}) / h, times h^2 gives h b (u_i - u_{i-1}) */
    double h = 1.0 / ((double)(N > 0 ? N : 1) + 1.0);
    double w[5];
    w[0] = -1.0 - h * fmax(by, 0.0);  /* south */
    w[1] = -1.0 - h * fmax(bx, 0.0);  /* west */
    w[2] = 4.0 + h * (fabs(bx) + fabs(by));
    w[3] = -1.0 - h * fmax(-bx, 0.0); /* east */
    w[4] = -1.0 - h * fmax(-by, 0.0); /* north */
    return stencil_matrix(ctx, "sla_gen_convdiff2d", 2, N, w, out);
}

sla_status sla_gen_aniso2d(sla_ctx *ctx, sla_int N, double eps, sla_matrix **out)
{
    if (!isfinite(eps) || !(eps > 0.0))
        return sla__error(ctx, SLA_ERR_VALUE, "sla_gen_aniso2d: eps must be finite and > 0 "
                          "(got %g)", eps);
    /* -(eps u_xx + u_yy): x-neighbours -eps, y-neighbours -1 */
    double w[5] = {-1.0, -eps, 2.0 * eps + 2.0, -eps, -1.0};
    return stencil_matrix(ctx, "sla_gen_aniso2d", 2, N, w, out);
}

sla_status sla_gen_helmholtz2d(sla_ctx *ctx, sla_int N, double k, double alpha, sla_matrix **out)
{
    if (!out) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_gen_helmholtz2d: out is NULL");
    *out = NULL;
    if (!isfinite(k) || k < 0.0 || !isfinite(alpha))
        return sla__error(ctx, SLA_ERR_VALUE, "sla_gen_helmholtz2d: k must be finite and >= 0 "
                          "and alpha finite (got k = %g, alpha = %g)", k, alpha);
    grid g;
    sla_status st = grid_init(ctx, 2, N, &g);
    if (st) return sla__error(ctx, st, "sla_gen_helmholtz2d: %s", sla_ctx_message(ctx));
    /* h^2 (-Laplace u - k^2 (1 + i alpha) u): 4 - (k h)^2 (1 + i alpha) on
     * the diagonal, -1 per neighbour */
    const double h = 1.0 / ((double)N + 1.0), kh2 = (k * h) * (k * h);
    const sla__z diag = (4.0 - kh2) - kh2 * alpha * _Complex_I;
    if (!isfinite(creal(diag)) || !isfinite(cimag(diag)))
        return sla__error(ctx, SLA_ERR_VALUE, "sla_gen_helmholtz2d: diagonal (%g, %g) is not "
                          "finite (k = %g, alpha = %g too large)", creal(diag), cimag(diag), k, alpha);
    sla_matrix *A = NULL;
    if ((st = grid_matrix(ctx, &g, &A))) return st;
    sla__z *zv = sla__malloc(&A->alloc, (size_t)A->nnz, sizeof *zv);
    if (!zv) {
        sla_matrix_destroy(&A);
        return sla__error(ctx, SLA_ERR_NOMEM, "sla_gen_helmholtz2d: out of memory (n = %lld)",
                          (long long)g.n);
    }
    for (sla_int i = 0; i < A->nrows; i++)
        for (sla_int p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            zv[p] = A->colind[p] == i ? diag : -1.0;
    sla__free(&A->alloc, A->values);
    A->values = zv;
    A->dtype = SLA_C128;
    *out = A;
    return sla__ok(ctx, SLA_OK);
}

/* ---- variable-coefficient diffusion ------------------------------------- */

/* Cells c(a, b) = b (N+1) + a, a, b in 0..N; nodes (i, j), i, j in 1..N.
 * Edge e of node (i, j) (0 south, 1 west, 2 east, 3 north) lies between two
 * cells; its coefficient is the mean of kappa on them. */
static void edge_cells(sla_int N, sla_int i, sla_int j, int e, sla_int c[2])
{
    sla_int M = N + 1;
    switch (e) {
    case 0: c[0] = (j - 1) * M + (i - 1); c[1] = (j - 1) * M + i; break; /* (i,j-1)-(i,j) */
    case 1: c[0] = (j - 1) * M + (i - 1); c[1] = j * M + (i - 1); break; /* (i-1,j)-(i,j) */
    case 2: c[0] = (j - 1) * M + i; c[1] = j * M + i; break;             /* (i,j)-(i+1,j) */
    default: c[0] = j * M + (i - 1); c[1] = j * M + i; break;            /* (i,j)-(i,j+1) */
    }
}

/* Edge of each non-centre slot of the 5-point stencil (slot order S, W, C, E, N). */
static const int slot_edge[5] = {0, 1, -1, 2, 3};

/* Mean of kappa on the two cells beside edge e of node (i, j). */
static double edge_coef(sla_int N, const double *kappa, sla_int i, sla_int j, int e)
{
    sla_int c[2];
    edge_cells(N, i, j, e, c);
    return 0.5 * (kappa[c[0]] + kappa[c[1]]);
}

/* Entry of node p in slot s as sum_t coef[t] kappa[cell[t]] (the Jacobian
 * row of that value): diagonal = sum of the 4 edge means, off-diagonal =
 * -(edge mean). Returns the number of terms. */
static int diff_terms(sla_int N, sla_int p, int s, sla_int *cell, double *coef)
{
    sla_int i = p % N + 1, j = p / N + 1;
    if (s != 2) {
        edge_cells(N, i, j, slot_edge[s], cell);
        coef[0] = coef[1] = -0.5;
        return 2;
    }
    for (int e = 0; e < 4; e++) {
        edge_cells(N, i, j, e, cell + 2 * e);
        coef[2 * e] = coef[2 * e + 1] = 0.5;
    }
    return 8;
}

static sla_status check_kappa(sla_ctx *ctx, sla_int N, const double *kappa)
{
    if (!kappa) return sla__error(ctx, SLA_ERR_ARGUMENT, "diffusion2d: kappa is NULL");
    sla_int M = N + 1;
    for (sla_int c = 0; c < M * M; c++)
        if (!isfinite(kappa[c]) || !(kappa[c] > 0.0))
            return sla__error(ctx, SLA_ERR_VALUE, "diffusion2d: kappa of cell (%lld, %lld) "
                              "is %g; it must be finite and > 0", (long long)(c % M),
                              (long long)(c / M), kappa[c]);
    return SLA_OK;
}

/* vals (CSR order) from kappa: a_pq = -k_e for the edge e between p and q,
 * a_pp = k_S + k_W + k_E + k_N, summed in the order the off-diagonals are
 * stored so that |a_pp| >= sum |a_pq| holds exactly in floating point. */
static void diff_values(const grid *g, const double *kappa, double *vals)
{
    sla_int k = 0, off = 0, N = g->N;
    for (sla_int p = 0; p < g->n; p++) {
        sla_int i = p % N + 1, j = p / N + 1;
        for (int s = 0; s < 5; s++) {
            if (!grid_slot(g, p, s, &off)) continue;
            if (s != 2) {
                vals[k++] = -edge_coef(N, kappa, i, j, slot_edge[s]);
                continue;
            }
            double d = 0.0;
            for (int e = 0; e < 4; e++) d += edge_coef(N, kappa, i, j, e);
            vals[k++] = d;
        }
    }
}

/* dkappa = J^T dvals with J = d vals / d kappa (the terms of diff_values). */
static void diff_vjp(const grid *g, const double *dvals, double *dkappa)
{
    sla_int k = 0, off = 0, cell[8];
    double coef[8];
    memset(dkappa, 0, (size_t)((g->N + 1) * (g->N + 1)) * sizeof *dkappa);
    for (sla_int p = 0; p < g->n; p++) {
        for (int s = 0; s < 5; s++) {
            if (!grid_slot(g, p, s, &off)) continue;
            int nt = diff_terms(g->N, p, s, cell, coef);
            for (int t = 0; t < nt; t++) dkappa[cell[t]] += coef[t] * dvals[k];
            k++;
        }
    }
}

sla_status sla_gen_diffusion2d(sla_ctx *ctx, sla_int N, const double *kappa, sla_matrix **out)
{
    if (!out) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_gen_diffusion2d: out is NULL");
    *out = NULL;
    grid g = {0};
    sla_status st = grid_init(ctx, 2, N, &g);
    if (st || (st = check_kappa(ctx, N, kappa)) || (st = grid_matrix(ctx, &g, out))) return st;
    diff_values(&g, kappa, (double *)(*out)->values);
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_gen_diffusion2d_values(sla_ctx *ctx, sla_int N, const double *kappa,
                                      double *vals)
{
    grid g = {0};
    sla_status st = grid_init(ctx, 2, N, &g);
    if (st || (st = check_kappa(ctx, N, kappa))) return st;
    if (!vals) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_gen_diffusion2d_values: vals is NULL");
    diff_values(&g, kappa, vals);
    return sla__ok(ctx, SLA_OK);
}

sla_status sla_gen_diffusion2d_vjp(sla_ctx *ctx, sla_int N, const double *dvals, double *dkappa)
{
    grid g = {0};
    sla_status st = grid_init(ctx, 2, N, &g);
    if (st) return st;
    if (!dvals || !dkappa)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_gen_diffusion2d_vjp: NULL argument");
    diff_vjp(&g, dvals, dkappa);
    return sla__ok(ctx, SLA_OK);
}

/* ---- random sparse matrices --------------------------------------------- */

/* xorshift64 with a multiplicative output scramble. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [-1, 1]. */
static double rng_unit(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * (2.0 / 9007199254740991.0) - 1.0;
}

typedef struct rand_coo {
    sla_int *rows, *cols;
    double *vals;
    double *rowabs; /* sum of |off-diagonal| per row */
    sla_int n;
} rand_coo;

/* cap entries and n row sums; false when out of memory (free with
 * rand_coo_free either way). */
static bool rand_coo_alloc(const sla_allocator *a, sla_int cap, sla_int n, rand_coo *c)
{
    *c = (rand_coo){sla__malloc(a, (size_t)cap, sizeof(sla_int)), sla__malloc(a, (size_t)cap, sizeof(sla_int)),
                    sla__malloc(a, (size_t)cap, sizeof(double)), sla__calloc(a, (size_t)n, sizeof(double)), 0};
    return c->rows && c->cols && c->vals && c->rowabs;
}

static void rand_coo_free(const sla_allocator *a, rand_coo *c)
{
    sla__free(a, c->rows);
    sla__free(a, c->cols);
    sla__free(a, c->vals);
    sla__free(a, c->rowabs);
}

static void rand_push(rand_coo *c, sla_int i, sla_int j, double v)
{
    c->rows[c->n] = i;
    c->cols[c->n] = j;
    c->vals[c->n] = v;
    c->n++;
    c->rowabs[i] += fabs(v);
}

/* Off-diagonal entries: per_row random columns j != i per row (repeats are
 * summed later), mirrored when symmetric. */
static void rand_offdiag(rand_coo *c, sla_int n, sla_int per_row, bool sym, uint64_t *s)
{
    for (sla_int i = 0; i < n; i++) {
        for (sla_int t = 0; t < per_row; t++) {
            sla_int j = (sla_int)(rng_next(s) % (uint64_t)(n - 1));
            if (j >= i) j++;
            double v = rng_unit(s);
            rand_push(c, i, j, v);
            if (sym) rand_push(c, j, i, v);
        }
    }
}

/* Diagonal: random for SLA_GEN_SYMMETRIC, else 1 + sum |a_ij| (strictly dominant). */
static void rand_diag(rand_coo *c, sla_int n, sla_gen_kind kind, uint64_t *s)
{
    for (sla_int i = 0; i < n; i++) {
        double d = kind == SLA_GEN_SYMMETRIC ? rng_unit(s) : 1.0 + c->rowabs[i];
        c->rows[c->n] = i;
        c->cols[c->n] = i;
        c->vals[c->n] = d;
        c->n++;
    }
}

static sla_status check_random_args(sla_ctx *ctx, sla_int n, sla_int per_row, sla_gen_kind kind,
                                    sla_matrix **out)
{
    if (!out) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_gen_random: out is NULL");
    *out = NULL;
    if (n < 0 || per_row < 0)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_gen_random: n = %lld and per_row = %lld "
                          "must be >= 0", (long long)n, (long long)per_row);
    const int k = (int)kind; /* the enum may be unsigned: compare as int */
    if (k < (int)SLA_GEN_GENERAL || k > (int)SLA_GEN_SPD)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_gen_random: kind must be 0 (general), "
                          "1 (symmetric) or 2 (SPD), got %d", k);
    if (n > INT32_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "sla_gen_random: n = %lld exceeds the "
                          "32-bit index limit", (long long)n);
    return SLA_OK;
}

sla_status sla_gen_random(sla_ctx *ctx, sla_int n, sla_int per_row, sla_gen_kind kind, uint64_t seed,
                          sla_matrix **out)
{
    sla_status st = check_random_args(ctx, n, per_row, kind, out);
    if (st) return st;
    if (per_row > n - 1) per_row = n > 0 ? n - 1 : 0;
    bool sym = kind != SLA_GEN_GENERAL;
    if (per_row > 0 && per_row > (INT64_MAX / 16 - n) / (2 * n))
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "sla_gen_random: %lld x %lld entries "
                          "overflow", (long long)n, (long long)per_row);
    sla_int cap = n * per_row * (sym ? 2 : 1) + n;
    sla_allocator a = sla__ctx_alloc(ctx);
    rand_coo c;
    if (!rand_coo_alloc(&a, cap, n, &c)) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "sla_gen_random: out of memory (%lld entries)",
                        (long long)cap);
    } else {
        uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
        if (!s) s = 1;
        rand_offdiag(&c, n, per_row, sym, &s);
        rand_diag(&c, n, kind, &s);
        st = sla_matrix_from_coo(ctx, n, n, c.n, c.rows, c.cols, SLA_F64, 1, c.vals, NULL, out);
    }
    rand_coo_free(&a, &c);
    return st;
}

/* ---- arrowhead ------------------------------------------------------------ */

sla_status sla_gen_arrow(sla_ctx *ctx, sla_int n, sla_int ndense, sla_int band, uint64_t seed,
                         sla_matrix **out)
{
    if (!out) return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_gen_arrow: out is NULL");
    *out = NULL;
    if (n < 1 || ndense < 0 || band < 0 || ndense > n)
        return sla__error(ctx, SLA_ERR_ARGUMENT, "sla_gen_arrow: need n >= 1, 0 <= ndense <= n and "
                          "band >= 0 (got n = %lld, ndense = %lld, band = %lld)", (long long)n,
                          (long long)ndense, (long long)band);
    if (n > INT32_MAX)
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "sla_gen_arrow: n = %lld exceeds the 32-bit index "
                          "limit", (long long)n);
    const sla_int nb = n - ndense; /* rows and columns of the banded body */
    if (band > nb) band = nb > 0 ? nb - 1 : 0;
    /* body rows: 2 band + 1 + ndense entries; dense rows: n */
    if ((double)n * (double)(2 * band + 1 + 2 * ndense) > (double)(INT64_MAX / 16))
        return sla__error(ctx, SLA_ERR_TOO_LARGE, "sla_gen_arrow: too many entries");
    const sla_int cap = nb * (2 * band + 1 + ndense) + ndense * n;
    sla_allocator a = sla__ctx_alloc(ctx);
    rand_coo c;
    sla_status st;
    if (!rand_coo_alloc(&a, cap, n, &c)) {
        st = sla__error(ctx, SLA_ERR_NOMEM, "sla_gen_arrow: out of memory (%lld entries)", (long long)cap);
    } else {
        uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 0x2F1C3B5A7D9E0F13ULL;
        if (!s) s = 1;
        for (sla_int i = 0; i < n; i++) {
            /* body row: the band and the dense columns; dense row: everything */
            sla_int lo = i < nb ? (i - band > 0 ? i - band : 0) : 0;
            sla_int hi = i < nb ? (i + band < nb - 1 ? i + band : nb - 1) : nb - 1;
            for (sla_int j = lo; j <= hi; j++)
                if (j != i) rand_push(&c, i, j, rng_unit(&s));
            for (sla_int j = nb; j < n; j++)
                if (j != i) rand_push(&c, i, j, rng_unit(&s));
        }
        /* strictly row dominant diagonal of random sign: nonsingular, and
         * the determinant's sign is not always +1 */
        for (sla_int i = 0; i < n; i++) {
            double d = 1.0 + c.rowabs[i] * (1.5 + 0.5 * rng_unit(&s));
            c.rows[c.n] = i;
            c.cols[c.n] = i;
            c.vals[c.n] = rng_next(&s) & 1 ? d : -d;
            c.n++;
        }
        st = sla_matrix_from_coo(ctx, n, n, c.n, c.rows, c.cols, SLA_F64, 1, c.vals, NULL, out);
    }
    rand_coo_free(&a, &c);
    return st;
}
