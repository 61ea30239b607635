/* What the machine offers now: the memory available to a new allocation
 * (MemAvailable from /proc/meminfo on Linux, else the free physical pages),
 * which the solver object's memory limit for factorizations defaults to
 * half of. */
#include "internal.h"

#include <stdio.h>
#include <unistd.h>

double sla__available_memory(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    double kb = 0.0;
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
        fclose(f);
    }
    if (kb > 0.0) return kb * 1024.0;
    long pages = sysconf(_SC_AVPHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    return (pages > 0 && psize > 0) ? (double)pages * (double)psize : 0.0;
}
