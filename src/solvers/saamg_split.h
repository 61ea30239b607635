/* saamg's hybrid Gauss-Seidel blocks (private to saamg_cycle.c, which
 * runs the sweeps over them, and saamg_split.c, which makes them for a
 * thread count). */
#ifndef SLA_SAAMG_SPLIT_H
#define SLA_SAAMG_SPLIT_H

#include "saamg.h"

/* One hybrid Gauss-Seidel block: rows [lo, hi), and the x it reads
 * outside them, from before the sweep: at the sorted columns hj (nh of
 * them) the values hx, or all of x in full (n entries; NULL when the
 * block reads its own rows only, as a serial sweep does). */
typedef struct sa_halo {
    sla_int lo, hi, nh;
    const int32_t *hj;
    double *hx;
    const double *full;
} sa_halo;

/* Level l's hybrid blocks for one thread count (levels of at least
 * SLA_PAR_MIN rows that have a P), and what the threaded restriction
 * needs: the coarse rows that the P rows of more than one block reach
 * (bitmap sbit, sorted list sj of ns), where each block sums into its own
 * acc (ns entries per block) and the sums are added in block order; every
 * other coarse row is written by one block only. full (n; only when the
 * lists would take more than n doubles): r stored and restricted
 * serially, then the copy of x, as the sweeps did before the lists. */
typedef struct sa_hyb {
    sa_halo *h; /* nt blocks, NULL: the level runs serially */
    int32_t *hj;
    double *hx, *full;
    uint64_t *sbit;
    int32_t *srank; /* per word of sbit: the set bits before it (c's place in sj) */
    int32_t *sj;
    sla_int ns;
    double *acc;
    uint64_t *dfr; /* (a level without dpos) the rows that read x outside their block */
    bool two;      /* two passes even with dfr (sla__saamg_split_two_pass: tests) */
} sa_hyb;

struct sa_split {
    int nt;
    sa_hyb lev[SAAMG_MAX_LEV];
};

static inline int ctz64(uint64_t u) /* u != 0 */
{
#if defined(__GNUC__)
    return __builtin_ctzll(u);
#else
    int c = 0;
    for (; !(u & 1); u >>= 1) c++;
    return c;
#endif
}

static inline int pop64(uint64_t u)
{
#if defined(__GNUC__)
    return __builtin_popcountll(u);
#else
    int c = 0;
    for (; u; u &= u - 1) c++;
    return c;
#endif
}

/* The hybrid blocks of every large level for nt threads (Gauss-Seidel
 * smoother), or NULL in *sp when no level is large. */
sla_status sla__saamg_split_build(const sla_allocator *a, const saamg *g, int nt, struct sa_split **sp);

#endif
