/* Replay driver: runs a fuzz harness's LLVMFuzzerTestOneInput on files, so
 * the regression inputs (tests/data/fuzz-regressions/<target>/) and the
 * seed corpus (fuzz/corpus/<target>/) run as ordinary tests under gcc, ASan
 * and UBSan, without libFuzzer. Arguments: files or directories. A crash
 * (abort, sanitizer report) fails the test. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "fuzz_common.h"

#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) return 1;
    /* an exact-size copy, so that a read past the input is caught */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        return 1;
    }
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int files = 0, errors = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "replay: no such file or directory %s\n", argv[i]);
            errors++;
            continue;
        }
        if (!S_ISDIR(sb.st_mode)) {
            errors += run_file(argv[i]);
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            errors++;
            continue;
        }
        char *names[4096];
        int nn = 0;
        struct dirent *e;
        while ((e = readdir(d)) && nn < 4096)
            if (e->d_name[0] != '.') names[nn++] = strdup(e->d_name);
        closedir(d);
        qsort(names, (size_t)nn, sizeof *names, cmp);
        for (int k = 0; k < nn; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], names[k]);
            errors += run_file(path);
            files++;
            free(names[k]);
        }
    }
    printf("replay: %d inputs, %d errors\n", files, errors);
    return errors ? 1 : (files ? 0 : 1);
}
