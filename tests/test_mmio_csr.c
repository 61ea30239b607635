/* The two-pass Matrix Market reader (files, regular-file streams, buffers:
 * src/core/mmio_csr.c) against the one-pass COO reader (streams that
 * cannot be read twice; here fmemopen): the same matrix bit for bit, or
 * the same status and message, on the bundled files (and any folders given
 * on the command line), on generated files with unsorted rows, duplicates,
 * both triangles of symmetric files, comments between entries and every
 * field, symmetry and dtype, on corrupted variants of those, and on huge
 * declared dimensions with few entries. Hand-computed expectations pin the
 * duplicate sums (file order) and -0. An allocation-failure sweep checks
 * that every error path frees what it took. */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static counter live = {0, -1, 0, 0};
static char tmpdir[256];
static char tmpfile_path[512];

typedef struct result {
    sla_status st;
    char msg[512];
    sla_matrix *A;
} result;

/* The one-pass path: a stream without a file descriptor. */
static void read_old(sla_ctx *ctx, const char *buf, size_t len, sla_dtype dt, result *r)
{
    static const char empty[1] = {0};
    FILE *f = fmemopen((void *)(len ? buf : empty), len ? len : 1, "r");
    r->A = NULL;
    if (!f) {
        r->st = SLA_ERR_IO;
        snprintf(r->msg, sizeof r->msg, "fmemopen failed");
        return;
    }
    if (!len) (void)fgetc(f); /* an empty stream */
    r->st = sla_mm_read_stream(ctx, f, "<buffer>", dt, &r->A);
    snprintf(r->msg, sizeof r->msg, "%s", r->st ? sla_ctx_message(ctx) : "");
    fclose(f);
}

/* The two-pass path from a buffer. */
static void read_buf(sla_ctx *ctx, const char *buf, size_t len, sla_dtype dt, result *r)
{
    r->A = NULL;
    r->st = sla_mm_read_buffer(ctx, buf, len, dt, &r->A);
    snprintf(r->msg, sizeof r->msg, "%s", r->st ? sla_ctx_message(ctx) : "");
}

/* The two-pass path from a stream on a regular file, named "<buffer>". */
static void read_file(sla_ctx *ctx, const char *buf, size_t len, sla_dtype dt, result *r)
{
    FILE *f = fopen(tmpfile_path, "wb");
    r->A = NULL;
    if (f) {
        fwrite(buf, 1, len, f);
        fclose(f);
    }
    f = fopen(tmpfile_path, "rb");
    if (!f) {
        r->st = SLA_ERR_IO;
        snprintf(r->msg, sizeof r->msg, "cannot reopen the temporary file");
        return;
    }
    r->st = sla_mm_read_stream(ctx, f, "<buffer>", dt, &r->A);
    snprintf(r->msg, sizeof r->msg, "%s", r->st ? sla_ctx_message(ctx) : "");
    fclose(f);
}

/* Same shape, dtype, pattern and value bits. */
static int identical(const sla_matrix *A, const sla_matrix *B)
{
    if (!A || !B) return A == B;
    if (sla_matrix_nrows(A) != sla_matrix_nrows(B) || sla_matrix_ncols(A) != sla_matrix_ncols(B) ||
        sla_matrix_nnz(A) != sla_matrix_nnz(B) || sla_matrix_dtype(A) != sla_matrix_dtype(B))
        return 0;
    long long n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    if (memcmp(sla_matrix_rowptr(A), sla_matrix_rowptr(B), (size_t)(n + 1) * sizeof(sla_int)))
        return 0;
    sla_int *ca = malloc((size_t)(nnz + 1) * sizeof *ca), *cb = malloc((size_t)(nnz + 1) * sizeof *cb);
    sla_matrix_get_colind(A, ca);
    sla_matrix_get_colind(B, cb);
    int ok = memcmp(ca, cb, (size_t)nnz * sizeof *ca) == 0 &&
             memcmp(sla_matrix_values(A, 0), sla_matrix_values(B, 0),
                    (size_t)nnz * sla_dtype_size(sla_matrix_dtype(A))) == 0;
    free(ca);
    free(cb);
    return ok;
}

static long long compared = 0, accepted = 0;

/* Both two-pass sources against the one-pass reader. */
static void compare_text(sla_ctx *ctx, const char *buf, size_t len, sla_dtype dt, const char *what)
{
    result o, b, f;
    read_old(ctx, buf, len, dt, &o);
    read_buf(ctx, buf, len, dt, &b);
    read_file(ctx, buf, len, dt, &f);
    const result *two[2] = {&b, &f};
    for (int k = 0; k < 2; k++) {
        const result *t = two[k];
        tu_checks++;
        if (t->st != o.st || strcmp(t->msg, o.msg) != 0 || !identical(o.A, t->A)) {
            tu_failures++;
            fprintf(stderr, "%s (dtype %s, %s): one-pass %s \"%s\", two-pass %s \"%s\"%s\n", what,
                    sla_dtype_name(dt), k ? "file stream" : "buffer", sla_status_name(o.st), o.msg,
                    sla_status_name(t->st), t->msg,
                    o.st == SLA_OK && t->st == SLA_OK ? " (matrices differ)" : "");
        }
    }
    compared++;
    accepted += o.st == SLA_OK;
    sla_matrix_destroy(&o.A);
    sla_matrix_destroy(&b.A);
    sla_matrix_destroy(&f.A);
}

static const sla_dtype dtypes[4] = {SLA_F64, SLA_F32, SLA_C128, SLA_C64};

/* ---- files on disk --------------------------------------------------------- */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *s = malloc(cap);
    while (s && (got = fread(s + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) s = realloc(s, cap *= 2);
    }
    fclose(f);
    *len = n;
    return s;
}

/* Every coordinate .mtx file of dir up to 64 MB, in every dtype; also
 * through sla_mm_read (the path itself; messages then name the path). */
static void compare_dir(sla_ctx *ctx, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "note: cannot open %s; skipped\n", dir);
        return;
    }
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d))) {
        size_t nl = strlen(e->d_name);
        if (nl < 5 || strcmp(e->d_name + nl - 4, ".mtx") != 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > (64 << 20)) continue;
        size_t len = 0;
        char *s = slurp(path, &len);
        if (!s) continue;
        const char *eol = memchr(s, '\n', len);
        size_t first = eol ? (size_t)(eol - s) : len;
        bool coord = false;
        for (size_t q = 0; q + 10 <= first && !coord; q++) coord = !strncmp(s + q, "coordinate", 10);
        if (!coord) {
            free(s);
            continue;
        }
        files++;
        for (int t = 0; t < 4; t++) {
            compare_text(ctx, s, len, dtypes[t], path);
            result o, p;
            read_old(ctx, s, len, dtypes[t], &o);
            p.A = NULL;
            p.st = sla_mm_read(ctx, path, dtypes[t], &p.A);
            CHECK(p.st == o.st && identical(o.A, p.A));
            sla_matrix_destroy(&o.A);
            sla_matrix_destroy(&p.A);
        }
        free(s);
    }
    closedir(d);
    printf("%s: %d coordinate files compared\n", dir, files);
}

/* ---- generated files ----------------------------------------------------- */

static unsigned long long rng = 0x9E3779B97F4A7C15ull;

static unsigned long long next_u(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static long long below(long long n) { return n > 0 ? (long long)(next_u() % (unsigned long long)n) : 0; }

typedef struct text {
    char *s;
    size_t n, cap;
} text;

static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        size_t room = t->cap - t->n;
        int k = vsnprintf(t->s + t->n, room, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t)k < room) {
            t->n += (size_t)k;
            return;
        }
        t->cap = 2 * t->cap + (size_t)k + 64;
        t->s = realloc(t->s, t->cap);
    }
}

static void put_value(text *t, int field)
{
    static const char *odd[] = {"-0", "0", "1e308", "-1e308", "4.9e-324", "0.1", "0.2", "0.3",
                                "3.4028235e38", "-7", "+12", "1E-3", "0x1p-3", ".5", "5."};
    if (field == 2) return; /* pattern */
    if (field == 1) {        /* integer */
        put(t, " %lld", below(2001) - 1000);
        return;
    }
    if (below(4) == 0) put(t, " %s", odd[below(sizeof odd / sizeof odd[0])]);
    else put(t, " %.17g", (double)(next_u() >> 11) * 0x1p-53 * (below(2) ? 1.0 : -1e3));
    if (field == 3) put(t, " %.17g", below(3) ? (double)(next_u() >> 11) * 0x1p-50 : -0.0);
}

/* A random coordinate file: fields real/integer/pattern/complex,
 * symmetries general/symmetric/skew/hermitian, entries in random order with
 * duplicates, both triangles, comments and blank lines between them, CRLF
 * ends, and one long shuffled row (the sort's qsort path). */
static void gen_file(text *t, int variant)
{
    static const char *fields[] = {"real", "integer", "pattern", "complex"};
    static const char *syms[] = {"general", "symmetric", "skew-symmetric", "hermitian"};
    int field = (int)below(4), sym = (int)below(4);
    if (field == 2 && sym == 2) sym = 1;
    if (sym == 3 && field != 3) field = 3;
    long long m = 1 + below(variant % 7 == 0 ? 200 : 12), n = sym ? m : 1 + below(12);
    long long nnz = below(3 * m + 3);
    bool longrow = variant % 5 == 0;
    if (longrow) nnz += 80;
    const char *eol = variant % 11 == 0 ? "\r\n" : "\n";
    t->n = 0;
    put(t, "%%%%MatrixMarket matrix coordinate %s %s%s", fields[field], syms[sym], eol);
    if (below(2)) put(t, "%% generated %d%s", variant, eol);
    put(t, "%lld %lld %lld%s", m, n, nnz, eol);
    for (long long k = 0; k < nnz; k++) {
        long long i = below(m), j = below(n);
        if (longrow && k < 80) i = m / 2; /* one long row, columns shuffled, duplicates */
        if (sym == 2 && i == j) j = (j + 1) % n;
        if (sym == 2 && i == j) i = -1;   /* 1 x 1 skew: no off-diagonal entry */
        if (below(8) == 0) put(t, "%% between%s", eol);
        if (below(16) == 0) put(t, "   %s", eol);
        if (i < 0) {
            put(t, "%% nothing%s", eol);
            put(t, "1 1%s", field == 2 ? "" : field == 3 ? " 0 0" : " 0");
            put(t, "%s", eol);
            continue;
        }
        put(t, "%lld %lld", i + 1, j + 1);
        if (sym == 2 && field != 2) {
            put_value(t, field);
        } else if (sym == 3 && i == j) {
            put(t, " %.17g 0", (double)below(1000) / 7.0);
        } else {
            put_value(t, field);
        }
        if (k + 1 < nnz || below(4)) put(t, "%s", eol); /* sometimes an unterminated end */
    }
    if (below(4) == 0) put(t, "%% trailing comment%s%s", eol, eol);
}

/* One random change: a byte replaced, removed or added, a cut, a line doubled. */
static void corrupt(text *t)
{
    static const char bytes[] = " \n\tx0-9.e%+\r";
    if (t->n == 0) return;
    size_t at = (size_t)below((long long)t->n);
    switch (below(6)) {
    case 0: t->s[at] = bytes[below(sizeof bytes - 1)]; break;
    case 1: t->s[at] = '\0'; break;
    case 2: memmove(t->s + at, t->s + at + 1, t->n - at - 1); t->n--; break;
    case 3: t->n = at; break;
    case 4:
        put(t, " ");
        memmove(t->s + at + 1, t->s + at, t->n - at - 1);
        t->s[at] = bytes[below(sizeof bytes - 1)];
        break;
    default: {
        size_t e = at;
        while (e < t->n && t->s[e] != '\n') e++;
        size_t b = at;
        while (b > 0 && t->s[b - 1] != '\n') b--;
        size_t len = e - b + (e < t->n);
        char *line = malloc(len + 1);
        memcpy(line, t->s + b, len);
        line[len] = 0;
        put(t, "%s", line);
        free(line);
    }
    }
}

static void test_generated(sla_ctx *ctx)
{
    text t = {malloc(256), 0, 256};
    char what[64];
    const char *env = getenv("SLA_MMIO_CSR_ROUNDS"); /* more for a longer search */
    const int rounds = env && atoi(env) > 0 ? atoi(env) : 1500;
    for (int v = 0; v < rounds; v++) {
        gen_file(&t, v);
        snprintf(what, sizeof what, "generated file %d", v);
        compare_text(ctx, t.s, t.n, dtypes[v % 4], what);
        corrupt(&t);
        snprintf(what, sizeof what, "corrupted file %d", v);
        compare_text(ctx, t.s, t.n, dtypes[(v + 1) % 4], what);
    }
    free(t.s);
}

/* ---- fixed cases ------------------------------------------------------------ */

#define HDR "%%MatrixMarket matrix coordinate real general\n"

static const char *cases[] = {
    /* unsorted rows, duplicates in file order: (0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3) */
    HDR "3 3 6\n3 1 1\n1 3 0.1\n2 2 5\n1 3 0.2\n1 1 -1\n1 3 0.3\n",
    /* a symmetric file that lists both triangles: each mirror adds up */
    "%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n2 1 3\n1 2 3\n3 3 1\n1 1 2\n",
    /* comments and blank lines between entries */
    HDR "2 2 2\n% one\n\n1 1 1\n   \n% two\n2 2 2\n% after\n\n",
    /* -0 stored and summed */
    HDR "2 2 3\n1 1 -0\n2 2 -0\n2 2 -0.0\n",
    /* duplicates that overflow */
    HDR "2 2 3\n1 1 1\n2 2 1e308\n2 2 1e308\n",
    /* huge declared dimensions, few entries: O(nnz) memory, not O(ncols) */
    HDR "1 2147483647 3\n1 2147483647 1\n1 1 2\n1 2147483647 3\n",
    HDR "3000000 2000000000 2\n3000000 2000000000 -1\n1 1 1\n",
    /* more entries than declared, after comments */
    HDR "2 2 1\n1 1 1\n% c\n2 2 2\n",
    /* an error in pass 2 (value) before one pass 1 sees (index) */
    HDR "3 3 3\n1 1 1\n2 2 x\n4 4 4\n",
    /* a NUL in a comment after the entries */
    HDR "1 1 1\n1 1 1\n% a\0b\n",
};

static void test_cases(sla_ctx *ctx)
{
    char what[64];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t len = strlen(cases[k]);
        if (k == sizeof cases / sizeof cases[0] - 1) len += 3; /* past the NUL */
        for (int t = 0; t < 4; t++) {
            snprintf(what, sizeof what, "case %zu", k);
            compare_text(ctx, cases[k], len, dtypes[t], what);
        }
    }

    /* the expected values themselves */
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_mm_read_buffer(ctx, cases[0], strlen(cases[0]), SLA_F64, &A));
    if (A) {
        const double *v = sla_matrix_values(A, 0);
        const sla_int *rp = sla_matrix_rowptr(A);
        CHECK(sla_matrix_nnz(A) == 4 && rp[1] == 2 && rp[2] == 3);
        CHECK(v[0] == -1.0 && v[1] == (0.1 + 0.2) + 0.3 && v[2] == 5.0 && v[3] == 1.0);
        CHECK((0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3));
    }
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_mm_read_buffer(ctx, cases[1], strlen(cases[1]), SLA_F64, &A));
    if (A) {
        const double *v = sla_matrix_values(A, 0);
        CHECK(sla_matrix_nnz(A) == 4 && v[0] == 2.0 && v[1] == 6.0 && v[2] == 6.0 && v[3] == 1.0);
    }
    sla_matrix_destroy(&A);
    CHECK_OK(ctx, sla_mm_read_buffer(ctx, cases[3], strlen(cases[3]), SLA_F64, &A));
    if (A) { /* 0 + (-0) = +0, as sla_matrix_from_coo sums */
        const double *v = sla_matrix_values(A, 0);
        CHECK(sla_matrix_nnz(A) == 2 && v[0] == 0.0 && !signbit(v[0]) && !signbit(v[1]));
    }
    sla_matrix_destroy(&A);
    CHECK_ERR(ctx, sla_mm_read_buffer(ctx, cases[4], strlen(cases[4]), SLA_F64, &A), SLA_ERR_VALUE,
              "overflows (stored entry 1)");
    CHECK_OK(ctx, sla_mm_read_buffer(ctx, cases[5], strlen(cases[5]), SLA_F64, &A));
    if (A) {
        const double *v = sla_matrix_values(A, 0);
        CHECK(sla_matrix_ncols(A) == 2147483647 && sla_matrix_nnz(A) == 2 && v[1] == 4.0);
    }
    sla_matrix_destroy(&A);
    CHECK_ERR(ctx, sla_mm_read_buffer(ctx, cases[8], strlen(cases[8]), SLA_F64, &A), SLA_ERR_FORMAT,
              ":4: value \"x\"");

    /* a stream that starts after other text: the entries are read again
     * from where the size line ended */
    FILE *f = fopen(tmpfile_path, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs("prefix line\n", f);
        fputs(cases[0], f);
        fclose(f);
        f = fopen(tmpfile_path, "rb");
        char line[64];
        CHECK(f && fgets(line, sizeof line, f));
        if (f) {
            CHECK_OK(ctx, sla_mm_read_stream(ctx, f, "p", SLA_F64, &A));
            CHECK(A && sla_matrix_nnz(A) == 4);
            fclose(f);
        }
        sla_matrix_destroy(&A);
    }
}

/* Every allocation of a two-pass read failing in turn: a clean status
 * (SLA_ERR_NOMEM, or SLA_OK when only the final shrinking copy failed)
 * and nothing left allocated. */
static void test_alloc_failures(sla_ctx *ctx)
{
    text t = {malloc(256), 0, 256};
    rng = 12345;
    gen_file(&t, 5); /* a long row: the sort's work arrays too */
    const char *extra = HDR "3 3 4\n2 2 1\n1 1 1\n2 2 2\n3 3 1\n"; /* shrinks */
    const char *texts[2] = {t.s, extra};
    size_t lens[2] = {t.n, strlen(extra)};
    for (int w = 0; w < 2; w++) {
        for (long k = 0; k < 64; k++) {
            live.calls = 0;
            live.fail_at = k;
            live.failures = 0;
            long before = live.live;
            sla_matrix *A = NULL;
            sla_status st = sla_mm_read_buffer(ctx, texts[w], lens[w], SLA_F64, &A);
            bool failed = live.failures > 0;
            live.fail_at = -1;
            CHECK(st == SLA_OK || (failed && st == SLA_ERR_NOMEM));
            CHECK((st == SLA_OK) == (A != NULL));
            sla_matrix_destroy(&A);
            CHECK(live.live == before);
            if (!failed) break;
        }
    }
    free(t.s);
}

/* Row pointers the memory cannot hold (1e9 rows: 8 GB, under an address
 * space limit of 1 GB more than the process maps now, in a child process):
 * an error in the file is reported first, and the refusal counts the
 * entries the file has, mirrors included, as the one-pass reader does.
 * Skipped under AddressSanitizer, whose shadow memory needs the address
 * space. */
static void test_memory_refusal(void)
{
#if defined(__SANITIZE_ADDRESS__)
    printf("memory refusal: skipped under ASan\n");
#else
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return;
    if (pid == 0) {
        FILE *f = fopen("/proc/self/statm", "r");
        double pages = 0.0;
        if (!f || fscanf(f, "%lf", &pages) != 1) _exit(3);
        fclose(f);
        struct rlimit rl;
        getrlimit(RLIMIT_AS, &rl);
        rl.rlim_cur = (rlim_t)(pages * (double)sysconf(_SC_PAGESIZE)) + (1ull << 30);
        if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(3);
        sla_ctx *ctx = NULL;
        if (sla_ctx_create(&ctx) != SLA_OK) _exit(3);
        const char *sym = "%%MatrixMarket matrix coordinate real symmetric\n"
                          "1000000000 1000000000 2\n2 1 1\n5 5 1\n";
        const char *bad = HDR "1000000000 3 2\n1 1 1\n2 2 x\n";
        int fails = 0;
        result o, t;
        for (int k = 0; k < 2; k++) {
            const char *s = k ? bad : sym;
            read_old(ctx, s, strlen(s), SLA_F64, &o);
            read_buf(ctx, s, strlen(s), SLA_F64, &t);
            const char *want = k ? ":4: value \"x\"" : "(3 entries)";
            sla_status wst = k ? SLA_ERR_FORMAT : SLA_ERR_TOO_LARGE;
            if (o.st != wst || t.st != wst || !strstr(o.msg, want) || !strstr(t.msg, want)) {
                fprintf(stderr, "memory refusal %d: one-pass %s \"%s\", two-pass %s \"%s\"\n", k,
                        sla_status_name(o.st), o.msg, sla_status_name(t.st), t.msg);
                fails++;
            }
            sla_matrix_destroy(&o.A);
            sla_matrix_destroy(&t.A);
        }
        sla_ctx_destroy(&ctx);
        _exit(fails ? 1 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) != 1);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 3) printf("memory refusal: not set up; skipped\n");
#endif
}

int main(int argc, char **argv)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/sla_test_mmio_csr_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(tmpfile_path, sizeof tmpfile_path, "%s/t.mtx", tmpdir);
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    sla_allocator counting = {count_malloc, count_free, &live};
    sla_ctx_set_allocator(ctx, &counting);

    test_cases(ctx);
    test_generated(ctx);
    compare_dir(ctx, SLA_TEST_DATA);
    for (int k = 1; k < argc; k++) compare_dir(ctx, argv[k]);
    test_alloc_failures(ctx);
    test_memory_refusal();
    printf("%lld inputs compared, %lld of them accepted\n", compared, accepted);
    if (live.live != 0) fprintf(stderr, "%ld blocks not freed\n", live.live);
    CHECK(live.live == 0);

    sla_ctx_destroy(&ctx);
    remove(tmpfile_path);
    rmdir(tmpdir);
    return tu_finish("test_mmio_csr");
}
