/* anchor_gen.h — the anchor comparison's matrices, row by row, written out
 * again for drivers that do not link sla (the PETSc driver): the same
 * stencils, ordering and values as src/core/gen.c (sla_gen_poisson 2-D/3-D
 * and sla_gen_diffusion2d), a position-weighted checksum both sides print,
 * and the kappa sequence of bench_saamg_reuse.
 *
 * Grid of dimension D, side N, n = N^D, x fastest; the 2D+1 slots of a row
 * in increasing column order: slot s < D is the neighbour at
 * -stride[D-1-s], slot D the point itself, slot s > D the neighbour at
 * +stride[s-D-1]; a neighbour outside the grid (Dirichlet) is dropped.
 * Diffusion: kappa on the (N+1)^2 cells, the coupling across an edge the
 * mean of kappa on its two cells, the diagonal their sum in the order
 * south, west, east, north (the same rounding as sla). */
#ifndef SLA_ANCHOR_GEN_H
#define SLA_ANCHOR_GEN_H

#include <math.h>

typedef struct {
    int dim;
    long long N, n, stride[3];
} anchor_grid;

static inline anchor_grid anchor_grid_make(int dim, long long N)
{
    anchor_grid g = {dim, N, 1, {1, 1, 1}};
    for (int k = 0; k < dim; k++) g.stride[k] = g.n, g.n *= N;
    return g;
}

/* Cells beside edge e (0 south, 1 west, 2 east, 3 north) of node (i, j),
 * i, j in 1..N: the mean of kappa on them. */
static inline double anchor_edge(long long N, const double *kappa, long long i, long long j, int e)
{
    long long M = N + 1, c0, c1;
    switch (e) {
    case 0: c0 = (j - 1) * M + (i - 1); c1 = (j - 1) * M + i; break;
    case 1: c0 = (j - 1) * M + (i - 1); c1 = j * M + (i - 1); break;
    case 2: c0 = (j - 1) * M + i; c1 = j * M + i; break;
    default: c0 = j * M + (i - 1); c1 = j * M + i; break;
    }
    return 0.5 * (kappa[c0] + kappa[c1]);
}

/* Row p: columns and values (kappa NULL: Poisson, 2 D on the diagonal and
 * -1 off it; else 2-D diffusion). Returns the number of entries (<= 7). */
static inline int anchor_row(const anchor_grid *g, const double *kappa, long long p, long long *cols,
                             double *vals)
{
    static const int slot_edge[5] = {0, 1, -1, 2, 3};
    int D = g->dim, cnt = 0;
    for (int s = 0; s < 2 * D + 1; s++) {
        long long off = 0;
        if (s != D) {
            int k = s < D ? D - 1 - s : s - D - 1;
            long long x = (p / g->stride[k]) % g->N;
            if (s < D ? x == 0 : x == g->N - 1) continue;
            off = s < D ? -g->stride[k] : g->stride[k];
        }
        cols[cnt] = p + off;
        if (!kappa) {
            vals[cnt] = s == D ? 2.0 * D : -1.0;
        } else {
            long long i = p % g->N + 1, j = p / g->N + 1;
            if (s != 2) {
                vals[cnt] = -anchor_edge(g->N, kappa, i, j, slot_edge[s]);
            } else {
                double d = 0.0;
                for (int e = 0; e < 4; e++) d += anchor_edge(g->N, kappa, i, j, e);
                vals[cnt] = d;
            }
        }
        cnt++;
    }
    return cnt;
}

/* Checksum term of entry (i, j) = v: v times a weight in [1, 2) that
 * depends on the position, so a transposed or shifted entry shows. */
static inline double anchor_weight(long long i, long long j)
{
    return 1.0 + (double)((i * 7919 + j * 104729) % 1009) / 1009.0;
}

/* bench_saamg_reuse's generator: uniform in [-1, 1). */
static inline double anchor_rnd(unsigned long long *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ULL) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* Initial kappa (log-uniform in [0.1, 10], seed 12345) on (N+1)^2 cells. */
static inline void anchor_kappa0(long long N, double *kappa)
{
    unsigned long long seed = 12345;
    for (long long c = 0; c < (N + 1) * (N + 1); c++) kappa[c] = pow(10.0, anchor_rnd(&seed));
}

/* One training step: every kappa times 1 + change u, u uniform in [-1, 1)
 * from the stream *s (seed 777 at the first step). */
static inline void anchor_kappa_step(long long N, double change, unsigned long long *s, double *kappa)
{
    for (long long c = 0; c < (N + 1) * (N + 1); c++) kappa[c] *= 1.0 + change * anchor_rnd(s);
}

#endif
