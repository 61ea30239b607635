/* Shared by the benchmark programs: a monotonic clock and the share of the
 * machine's CPUs that other processes used while something was measured
 * (these machines are shared; the tables report it beside each number). */
#ifndef SLA_BENCH_UTIL_H
#define SLA_BENCH_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds this process has used (all its threads). */
static inline double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds the whole machine spent busy (/proc/stat) and those this
 * process and its finished children used (getrusage), at one moment. */
typedef struct {
    double wall, busy, self;
} load_mark;

static inline load_mark load_now(void)
{
    load_mark m = {now(), 0.0, 0.0};
    FILE *f = fopen("/proc/stat", "r");
    if (f) {
        unsigned long long v[8] = {0};
        /* user nice system idle iowait irq softirq steal */
        if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]) == 8)
            m.busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) /
                     (double)sysconf(_SC_CLK_TCK);
        fclose(f);
    }
    struct rusage ru;
    for (int who = 0; who < 2; who++)
        if (!getrusage(who ? RUSAGE_CHILDREN : RUSAGE_SELF, &ru))
            m.self += (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                      (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    return m;
}

/* Percent of all CPUs used by other processes (and hypervisor steal)
 * between a and b; -1 if unknown. The counters tick at 100 Hz: rough for
 * spans under a second. */
static inline double other_load_pct(load_mark a, load_mark b)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    double wall = b.wall - a.wall;
    if (wall <= 0 || ncpu <= 0 || b.busy <= 0) return -1.0;
    double other = (b.busy - a.busy) - (b.self - a.self);
    return fmax(0.0, 100.0 * other / (wall * (double)ncpu));
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..k) (k <= 64 used); v is left as it is. */
static inline double median(const double *v, int k)
{
    double w[64];
    if (k <= 0) return NAN;
    if (k > 64) k = 64;
    memcpy(w, v, (size_t)k * sizeof *w);
    qsort(w, (size_t)k, sizeof *w, bench_cmp_double);
    return k % 2 ? w[k / 2] : 0.5 * (w[k / 2 - 1] + w[k / 2]);
}

/* Peak resident set of this process (the kernel's high-water mark), bytes. */
static inline double peak_rss_bytes(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return 1024.0 * (double)ru.ru_maxrss;
}

#ifdef MPI_VERSION
/* Reductions of one value over MPI_COMM_WORLD (the MPI benchmarks). */
static inline double all_max(double v)
{
    double m;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

static inline double all_sum(double v)
{
    double m;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return m;
}
#endif

#endif
