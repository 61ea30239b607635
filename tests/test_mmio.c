/* Matrix Market I/O: round trips, expansion of symmetric files, strict
 * validation (status and line number of every malformed case), the bundled
 * SuiteSparse files, dense arrays, and I/O errors. A counting allocator
 * checks that every path (errors included) frees what it took. */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include <dirent.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- counting allocator (test_util.h); it never fails here -------------- */

static counter live = {0, -1, 0, 0};

/* ---- helpers ------------------------------------------------------------ */

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
    static char buf[4][512];
    static int k = 0;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static sla_status read_str(sla_ctx *ctx, const char *s, sla_matrix **A)
{
    return sla_mm_read_buffer(ctx, s, strlen(s), SLA_F64, A);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* Same pattern and bitwise-equal values (as doubles). */
static int same_matrix(const sla_matrix *A, const sla_matrix *B)
{
    if (sla_matrix_nrows(A) != sla_matrix_nrows(B) || sla_matrix_ncols(A) != sla_matrix_ncols(B) ||
        sla_matrix_nnz(A) != sla_matrix_nnz(B))
        return 0;
    long long n = sla_matrix_nrows(A), nnz = sla_matrix_nnz(A);
    const sla_int *ra = sla_matrix_rowptr(A), *rb = sla_matrix_rowptr(B);
    for (long long i = 0; i <= n; i++)
        if (ra[i] != rb[i]) return 0;
    sla_int *ca = malloc((size_t)(nnz + 1) * sizeof *ca), *cb = malloc((size_t)(nnz + 1) * sizeof *cb);
    sla_matrix_get_colind(A, ca);
    sla_matrix_get_colind(B, cb);
    int ok = 1;
    for (long long k = 0; k < nnz; k++) {
        double va = sla_matrix_dtype(A) == SLA_F64 ? ((const double *)sla_matrix_values(A, 0))[k]
                                                   : ((const float *)sla_matrix_values(A, 0))[k];
        double vb = sla_matrix_dtype(B) == SLA_F64 ? ((const double *)sla_matrix_values(B, 0))[k]
                                                   : ((const float *)sla_matrix_values(B, 0))[k];
        if (ca[k] != cb[k] || va != vb) ok = 0;
    }
    free(ca);
    free(cb);
    return ok;
}

/* Build a small matrix from triplets (0-based). */
static sla_matrix *from_triplets(sla_ctx *ctx, long long m, long long n, int nnz,
                                 const sla_int *r, const sla_int *c, const double *v)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_matrix_from_coo(ctx, m, n, nnz, r, c, SLA_F64, 1, v, NULL, &A));
    return A;
}

/* ---- round trips --------------------------------------------------------- */

static void test_roundtrip(sla_ctx *ctx)
{
    /* awkward values: 17 digits must round-trip them exactly */
    sla_int r[] = {0, 0, 1, 2, 2, 3, 4};
    sla_int c[] = {0, 5, 1, 0, 2, 4, 3};
    double v[] = {1.0 / 3.0, -2.5e300, 1e-310, 0.1, -0.0, 6.02214076e23, 3.141592653589793};
    sla_matrix *A = from_triplets(ctx, 5, 6, 7, r, c, v), *B = NULL;
    const char *p = tmp_path("rt.mtx");
    CHECK_OK(ctx, sla_mm_write(ctx, p, A, 0));
    CHECK_OK(ctx, sla_mm_read(ctx, p, SLA_F64, &B));
    CHECK(B && same_matrix(A, B));
    sla_matrix_destroy(&B);

    /* a larger random matrix, and reading it back as float32 */
    sla_matrix *R = NULL, *R32 = NULL;
    CHECK_OK(ctx, sla_gen_random(ctx, 200, 6, SLA_GEN_GENERAL, 42, &R));
    CHECK_OK(ctx, sla_mm_write(ctx, p, R, 0));
    CHECK_OK(ctx, sla_mm_read(ctx, p, SLA_F64, &B));
    CHECK(B && same_matrix(R, B));
    CHECK_OK(ctx, sla_mm_read(ctx, p, SLA_F32, &R32));
    CHECK(R32 && sla_matrix_dtype(R32) == SLA_F32 && sla_matrix_nnz(R32) == sla_matrix_nnz(R));
    if (R32) {
        const float *f = sla_matrix_values(R32, 0);
        const double *d = sla_matrix_values(R, 0);
        int ok = 1;
        for (long long k = 0; k < sla_matrix_nnz(R); k++) ok &= f[k] == (float)d[k];
        CHECK(ok);
        /* a float32 matrix writes its values exactly too */
        sla_matrix *B32 = NULL;
        CHECK_OK(ctx, sla_mm_write(ctx, p, R32, 0));
        CHECK_OK(ctx, sla_mm_read(ctx, p, SLA_F32, &B32));
        CHECK(B32 && same_matrix(R32, B32));
        sla_matrix_destroy(&B32);
    }
    sla_matrix_destroy(&B);

    /* pattern with other values: a gradient file */
    long long nnz = sla_matrix_nnz(R);
    double *g = malloc((size_t)nnz * sizeof *g);
    tu_fill(g, nnz, 7);
    CHECK_OK(ctx, sla_mm_write_pattern_values(ctx, p, R, g));
    CHECK_OK(ctx, sla_mm_read(ctx, p, SLA_F64, &B));
    CHECK(B && sla_matrix_nnz(B) == nnz);
    if (B) CHECK(memcmp(sla_matrix_values(B, 0), g, (size_t)nnz * sizeof *g) == 0);
    g[3] = NAN;
    CHECK_ERR(ctx, sla_mm_write_pattern_values(ctx, p, R, g), SLA_ERR_VALUE, "entry 3");
    CHECK_ERR(ctx, sla_mm_write(ctx, p, R, 1), SLA_ERR_INDEX, "batch");
    free(g);

    /* empty matrix */
    sla_matrix *E = from_triplets(ctx, 3, 4, 0, NULL, NULL, NULL), *E2 = NULL;
    CHECK_OK(ctx, sla_mm_write(ctx, p, E, 0));
    CHECK_OK(ctx, sla_mm_read(ctx, p, SLA_F64, &E2));
    CHECK(E2 && same_matrix(E, E2));
    sla_matrix_destroy(&E);
    sla_matrix_destroy(&E2);

    sla_matrix_destroy(&A);
    sla_matrix_destroy(&B);
    sla_matrix_destroy(&R);
    sla_matrix_destroy(&R32);
}

/* ---- expansion and fields ------------------------------------------------ */

static void test_symmetric(sla_ctx *ctx)
{
    sla_matrix *A = NULL, *E = NULL;
    /* lower triangle, one entry above the diagonal (mirrored as well), a
     * row without diagonal, and a duplicate that is summed */
    CHECK_OK(ctx, read_str(ctx, "%%MatrixMarket matrix coordinate real symmetric\n"
                                "% comment\n"
                                "4 4 6\n"
                                "1 1 2\n"
                                "2 1 -1\n"
                                "3 2 -1.5\n"
                                "1 4 5\n"
                                "3 3 4\n"
                                "3 3 0.5\n",
                           &A));
    sla_int r[] = {0, 0, 0, 1, 1, 2, 2, 3};
    sla_int c[] = {0, 1, 3, 0, 2, 1, 2, 0};
    double v[] = {2, -1, 5, -1, -1.5, -1.5, 4.5, 5};
    E = from_triplets(ctx, 4, 4, 8, r, c, v);
    CHECK(A && same_matrix(A, E));
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&E);

    CHECK_OK(ctx, read_str(ctx, "%%MatrixMarket matrix coordinate real skew-symmetric\n"
                                "3 3 3\n"
                                "2 1 3\n"
                                "3 1 -2\n"
                                "2 2 0\n",
                           &A));
    sla_int rs[] = {0, 0, 1, 1, 2};
    sla_int cs[] = {1, 2, 0, 1, 0};
    double vs[] = {-3, 2, 3, 0, -2};
    E = from_triplets(ctx, 3, 3, 5, rs, cs, vs);
    CHECK(A && same_matrix(A, E));
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&E);

    /* pattern (general and symmetric) gives ones; integer values */
    CHECK_OK(ctx, read_str(ctx, "%%MatrixMarket matrix coordinate pattern symmetric\n"
                                "3 3 2\n2 1\n3 3\n", &A));
    sla_int rp[] = {0, 1, 2};
    sla_int cp[] = {1, 0, 2};
    double vp[] = {1, 1, 1};
    E = from_triplets(ctx, 3, 3, 3, rp, cp, vp);
    CHECK(A && same_matrix(A, E));
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&E);

    CHECK_OK(ctx, read_str(ctx, "%%MatrixMarket matrix coordinate pattern general\n"
                                "2 3 2\n1 3\n2 1\n", &A));
    CHECK(A && sla_matrix_nnz(A) == 2 && sla_matrix_ncols(A) == 3);
    if (A) CHECK(((const double *)sla_matrix_values(A, 0))[0] == 1.0);
    sla_matrix_destroy(&A);

    CHECK_OK(ctx, read_str(ctx, "%%MatrixMarket matrix coordinate integer general\n"
                                "2 2 2\n1 1 -7\n2 2 +12\n", &A));
    if (A) {
        const double *x = sla_matrix_values(A, 0);
        CHECK(x[0] == -7.0 && x[1] == 12.0);
    }
    CHECK(A != NULL);
    sla_matrix_destroy(&A);
}

/* Layout tolerance: case, CRLF, blank lines, comments, long lines, an
 * unterminated last line, and a buffer that is not NUL-terminated. */
static void test_tolerant(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, read_str(ctx, "%%matrixmarket MATRIX Coordinate REAL General\r\n"
                                "\r\n%c\n  \n"
                                "2 2 2\r\n"
                                "\n"
                                "  1   1   1.5e0  \r\n"
                                "% in between\n"
                                "\t2\t2\t-2.5",
                           &A));
    CHECK(A && sla_matrix_nnz(A) == 2);
    sla_matrix_destroy(&A);

    /* a 200000-character comment and an entry with 50000 leading blanks */
    size_t big = 300000;
    char *s = malloc(big);
    int n = snprintf(s, big, "%%%%MatrixMarket matrix coordinate real general\n%%");
    memset(s + n, 'x', 200000);
    n += 200000;
    n += snprintf(s + n, big - (size_t)n, "\n1 1 1\n");
    memset(s + n, ' ', 50000);
    n += 50000;
    n += snprintf(s + n, big - (size_t)n, "1 1 3.25\n");
    CHECK_OK(ctx, sla_mm_read_buffer(ctx, s, (size_t)n, SLA_F64, &A));
    CHECK(A && sla_matrix_nnz(A) == 1 && ((const double *)sla_matrix_values(A, 0))[0] == 3.25);
    sla_matrix_destroy(&A);
    free(s);

    /* only len bytes are read: what follows would be an extra entry */
    const char *t = "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2\n1 1 9\n";
    size_t len = strlen(t) - strlen("1 1 9\n");
    CHECK_OK(ctx, sla_mm_read_buffer(ctx, t, len, SLA_F64, &A));
    CHECK(A && ((const double *)sla_matrix_values(A, 0))[0] == 2.0);
    sla_matrix_destroy(&A);
}

/* ---- malformed input --------------------------------------------------- */

#define HDR "%%MatrixMarket matrix coordinate real general\n"

typedef struct bad_case {
    const char *text;
    sla_status st;
    const char *fragment;
} bad_case;

static const bad_case bad_cases[] = {
    {"", SLA_ERR_FORMAT, "<buffer>:1: empty"},
    {"3 3 1\n1 1 1\n", SLA_ERR_FORMAT, "<buffer>:1: missing banner"},
    {"%MatrixMarket matrix coordinate real general\n", SLA_ERR_FORMAT, ":1: missing banner"},
    {"%%MatrixMarket matrix coordinate real\n1 1 1\n", SLA_ERR_FORMAT, ":1: incomplete banner"},
    {"%%MatrixMarket matrix coordinate real general extra\n", SLA_ERR_FORMAT, ":1: unexpected word"},
    {"%%MatrixMarket vector coordinate real general\n", SLA_ERR_FORMAT, ":1: unsupported object"},
    {"%%MatrixMarket matrix sparse real general\n", SLA_ERR_FORMAT, ":1: unknown format"},
    {"%%MatrixMarket matrix coordinate float general\n", SLA_ERR_FORMAT, ":1: unknown field"},
    {"%%MatrixMarket matrix coordinate real upper\n", SLA_ERR_FORMAT, ":1: unknown symmetry"},
    {"%%MatrixMarket matrix coordinate pattern skew-symmetric\n", SLA_ERR_FORMAT, ":1:"},
    {"%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1\n", SLA_ERR_FORMAT,
     "<buffer>:3: missing value"},
    {"%%MatrixMarket matrix coordinate complex hermitian\n2 2 1\n1 1 1 0.5\n", SLA_ERR_FORMAT,
     "<buffer>:3: hermitian matrix with a non-real diagonal entry (1, 1)"},
    {"%%MatrixMarket matrix coordinate real hermitian\n", SLA_ERR_FORMAT,
     ":1: \"hermitian\" needs the \"complex\" field"},
    {"%%MatrixMarket matrix array complex general\n1 1\n1 0\n", SLA_ERR_FORMAT,
     "sla_mm_read_dense_z"},
    {"%%MatrixMarket matrix array real general\n2 1\n1\n2\n", SLA_ERR_FORMAT, "sla_mm_read_dense"},
    {HDR, SLA_ERR_FORMAT, ":1: file ends before the size line"},
    {HDR "% c\n-3 3 1\n", SLA_ERR_FORMAT, "<buffer>:3: negative size"},
    {HDR "3 x 1\n", SLA_ERR_FORMAT, ":2: size \"x\" is not an integer"},
    {HDR "3 3.0 1\n", SLA_ERR_FORMAT, ":2: size \"3.0\""},
    {HDR "3 3 1 7\n1 1 1\n", SLA_ERR_FORMAT, ":2: unexpected \"7\" after the sizes"},
    {HDR "3 3\n1 1 1\n", SLA_ERR_FORMAT, ":2: size line needs 3 integers, found 2"},
    {HDR "99999999999999999999 3 1\n", SLA_ERR_TOO_LARGE, ":2: size"},
    {HDR "3000000000 3 1\n", SLA_ERR_TOO_LARGE, ":2:"},
    {HDR "3 3 3\n1 1 1\n2 2 2\n", SLA_ERR_FORMAT, ":4: file ends after 2 of 3"},
    {HDR "3 3 1000000000000\n1 1 1\n", SLA_ERR_FORMAT, ":3: file ends after 1 of"},
    {HDR "3 3 2\n1 1 1\n2 2 2\n3 3 3\n", SLA_ERR_FORMAT, ":5: more entries than the 2 declared"},
    {HDR "3 3 2\n1 1 1\n\n%c\n2 2 2\n\n3 3 3\n", SLA_ERR_FORMAT, ":8: more entries"},
    {HDR "3 3 1\n0 1 1\n", SLA_ERR_INDEX, ":3: row index 0 out of range [1, 3]"},
    {HDR "3 3 2\n1 1 1\n4 1 1\n", SLA_ERR_INDEX, ":4: row index 4"},
    {HDR "3 2 1\n1 3 1\n", SLA_ERR_INDEX, ":3: column index 3 out of range [1, 2]"},
    {HDR "3 3 1\n1 99999999999999999999 1\n", SLA_ERR_INDEX, ":3: column index"},
    {HDR "3 3 1\na 1 1\n", SLA_ERR_FORMAT, ":3: row index \"a\" is not an integer"},
    {HDR "3 3 1\n1 1.0 1\n", SLA_ERR_FORMAT, ":3: column index \"1.0\""},
    {HDR "3 3 1\n1 1 abc\n", SLA_ERR_FORMAT, ":3: value \"abc\" is not a number"},
    {HDR "3 3 1\n1 1 1.5x\n", SLA_ERR_FORMAT, ":3: value \"1.5x\""},
    {HDR "3 3 1\n1 1 nan\n", SLA_ERR_VALUE, ":3: value \"nan\" is not finite"},
    {HDR "3 3 1\n1 1 -Inf\n", SLA_ERR_VALUE, ":3: value \"-Inf\" is not finite"},
    {HDR "3 3 1\n1 1 1e999\n", SLA_ERR_VALUE, ":3: value \"1e999\" is not finite"},
    {HDR "3 3 1\n1 1 2.0 x\n", SLA_ERR_FORMAT, ":3: unexpected \"x\" after the entry"},
    {HDR "3 3 1\n1 1\n", SLA_ERR_FORMAT, ":3: missing value"},
    {HDR "3 3 1\n1\n", SLA_ERR_FORMAT, ":3: missing column index"},
    {HDR "3 3 2\n1 1 2.5\n2 ", SLA_ERR_FORMAT, ":4: missing column index"},
    {HDR "3 3 2\n1 1 1e308\n1 1 1e308\n", SLA_ERR_VALUE, "overflows"},
    {"%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 1.5\n", SLA_ERR_FORMAT,
     ":3: value \"1.5\" is not an integer"},
    {"%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 1\n", SLA_ERR_FORMAT,
     ":3: unexpected \"1\""},
    {"%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n1 1 1\n", SLA_ERR_FORMAT,
     ":2: a symmetric matrix must be square"},
    {"%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 2\n2 1 1\n2 2 1\n",
     SLA_ERR_FORMAT, ":4: skew-symmetric matrix with nonzero diagonal entry (2, 2)"},
};

static void test_malformed(sla_ctx *ctx)
{
    size_t ncase = sizeof bad_cases / sizeof bad_cases[0];
    for (size_t k = 0; k < ncase; k++) {
        sla_matrix *A = (sla_matrix *)&ncase; /* must be reset to NULL */
        const bad_case *b = &bad_cases[k];
        sla_status st = read_str(ctx, b->text, &A);
        CHECK(A == NULL);
        if (st != b->st || !strstr(sla_ctx_message(ctx), b->fragment)) {
            tu_failures++;
            fprintf(stderr, "malformed case %zu: got %s \"%s\", expected %s \"%s\"\n", k,
                    sla_status_name(st), sla_ctx_message(ctx), sla_status_name(b->st),
                    b->fragment);
        }
        tu_checks++;
        if (st == SLA_OK) sla_matrix_destroy(&A);
    }

    /* NUL byte, float32 overflow, bad arguments */
    sla_matrix *A = NULL;
    const char nul[] = HDR "1 1 1\n1 1\0 1\n";
    CHECK_ERR(ctx, sla_mm_read_buffer(ctx, nul, sizeof nul - 1, SLA_F64, &A), SLA_ERR_FORMAT,
              ":3: NUL byte");
    const char *big = HDR "1 1 1\n1 1 1e39\n";
    CHECK_OK(ctx, sla_mm_read_buffer(ctx, big, strlen(big), SLA_F64, &A));
    sla_matrix_destroy(&A);
    CHECK_ERR(ctx, sla_mm_read_buffer(ctx, big, strlen(big), SLA_F32, &A), SLA_ERR_VALUE,
              ":3: value 1e39 overflows float32");
    CHECK_ERR(ctx, sla_mm_read_buffer(ctx, big, strlen(big), (sla_dtype)7, &A), SLA_ERR_ARGUMENT,
              "dtype");
    CHECK_ERR(ctx, sla_mm_read_buffer(ctx, NULL, 5, SLA_F64, &A), SLA_ERR_ARGUMENT, "NULL");
    CHECK_ERR(ctx, sla_mm_read_buffer(ctx, NULL, 0, SLA_F64, &A), SLA_ERR_FORMAT, "empty");
    CHECK_ERR(ctx, sla_mm_read_stream(ctx, NULL, "x", SLA_F64, &A), SLA_ERR_ARGUMENT, "NULL");
    CHECK_ST(ctx, sla_mm_read_buffer(ctx, big, strlen(big), SLA_F64, NULL), SLA_ERR_ARGUMENT);
    /* a NULL context still gets the status */
    CHECK_ST(NULL, read_str(NULL, HDR "3 3 1\n4 1 1\n", &A), SLA_ERR_INDEX);
    CHECK(A == NULL);
}

/* The file name appears in messages from sla_mm_read and the stream reader. */
static void test_named_errors(sla_ctx *ctx)
{
    const char *p = tmp_path("bad.mtx");
    sla_matrix *A = NULL;
    write_text(p, HDR "% c\n% c\n3 3 2\n1 1 1\n\n2 2 1 junk\n");
    char frag[600];
    snprintf(frag, sizeof frag, "%s:7: unexpected \"junk\"", p);
    CHECK_ERR(ctx, sla_mm_read(ctx, p, SLA_F64, &A), SLA_ERR_FORMAT, frag);
    FILE *f = fopen(p, "r");
    CHECK(f != NULL);
    if (f) {
        CHECK_ERR(ctx, sla_mm_read_stream(ctx, f, "A.mtx", SLA_F64, &A), SLA_ERR_FORMAT,
                  "A.mtx:7: unexpected");
        fclose(f);
    }
    CHECK_ERR(ctx, sla_mm_read(ctx, tmp_path("missing.mtx"), SLA_F64, &A), SLA_ERR_IO,
              "No such file");
    CHECK_ERR(ctx, sla_mm_read(ctx, NULL, SLA_F64, &A), SLA_ERR_ARGUMENT, "path");
    CHECK(A == NULL);
}

/* ---- bundled SuiteSparse files ------------------------------------------ */

static void check_file(sla_ctx *ctx, const char *name, long long n, long long nnz, int sym)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", SLA_TEST_DATA, name);
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_mm_read(ctx, path, SLA_F64, &A));
    if (!A) return;
    CHECK(sla_matrix_nrows(A) == n && sla_matrix_ncols(A) == n);
    if (sla_matrix_nnz(A) != nnz)
        fprintf(stderr, "%s: nnz %lld, expected %lld\n", name, (long long)sla_matrix_nnz(A), nnz);
    CHECK(sla_matrix_nnz(A) == nnz);
    if (sym >= 0) {
        sla_matrix_props pr;
        CHECK_OK(ctx, sla_matrix_properties(ctx, A, 0, 0.0, &pr));
        CHECK(pr.symmetric == (sym == 1));
    }
    sla_matrix_destroy(&A);
}

static void test_files(sla_ctx *ctx)
{
    check_file(ctx, "bcsstk01.mtx", 48, 400, 1);
    check_file(ctx, "can_24.mtx", 24, 160, 1);
    check_file(ctx, "cage5.mtx", 37, 233, 0);
    check_file(ctx, "tumorAntiAngiogenesis_2.mtx", 305, 2699, 1);
    check_file(ctx, "west0067.mtx", 67, 294, 0);

    char path[1024];
    sla_matrix *A = NULL;
    const char *others[] = {"494_bus.mtx", "GD97_b.mtx", "fs_183_6.mtx", "mesh1e1.mtx"};
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/%s", SLA_TEST_DATA, others[k]);
        CHECK_OK(ctx, sla_mm_read(ctx, path, SLA_F64, &A));
        sla_matrix_destroy(&A);
    }

    /* can_24 is a pattern: every value is one */
    snprintf(path, sizeof path, "%s/can_24.mtx", SLA_TEST_DATA);
    CHECK_OK(ctx, sla_mm_read(ctx, path, SLA_F32, &A));
    if (A) {
        const float *v = sla_matrix_values(A, 0);
        int ones = 1;
        for (long long k = 0; k < sla_matrix_nnz(A); k++) ones &= v[k] == 1.0f;
        CHECK(ones);
    }
    sla_matrix_destroy(&A);

    /* bcsstk01 written back and re-read (general) is the same matrix */
    snprintf(path, sizeof path, "%s/bcsstk01.mtx", SLA_TEST_DATA);
    sla_matrix *B = NULL;
    CHECK_OK(ctx, sla_mm_read(ctx, path, SLA_F64, &A));
    CHECK_OK(ctx, sla_mm_write(ctx, tmp_path("bcsstk01.mtx"), A, 0));
    CHECK_OK(ctx, sla_mm_read(ctx, tmp_path("bcsstk01.mtx"), SLA_F64, &B));
    CHECK(A && B && same_matrix(A, B));
    sla_matrix_destroy(&A);
    sla_matrix_destroy(&B);

    /* a complex file gives a complex matrix (test_complex_core checks it) */
    snprintf(path, sizeof path, "%s/qc324.mtx", SLA_TEST_DATA);
    CHECK_OK(ctx, sla_mm_read(ctx, path, SLA_F64, &A));
    CHECK(A && sla_matrix_dtype(A) == SLA_C128);
    sla_matrix_destroy(&A);
}

/* ---- dense arrays -------------------------------------------------------- */

static void test_dense(sla_ctx *ctx)
{
    double x[12];
    tu_fill(x, 12, 3);
    x[5] = 1e-300;
    x[6] = -0.0;
    const char *p = tmp_path("dense.mtx");
    sla_int m = -1, n = -1;
    double *y = NULL;
    CHECK_OK(ctx, sla_mm_write_dense(ctx, p, 4, 3, x));
    CHECK_OK(ctx, sla_mm_read_dense(ctx, p, &m, &n, &y));
    CHECK(m == 4 && n == 3 && y && memcmp(x, y, sizeof x) == 0);
    sla_free(ctx, y);

    /* empty array */
    CHECK_OK(ctx, sla_mm_write_dense(ctx, p, 0, 3, NULL));
    CHECK_OK(ctx, sla_mm_read_dense(ctx, p, &m, &n, &y));
    CHECK(m == 0 && n == 3 && y != NULL);
    sla_free(ctx, y);

    /* integer field, comments, blank lines */
    write_text(p, "%%MatrixMarket matrix array integer general\n% c\n2 2\n1\n-2\n\n3\n4\n");
    CHECK_OK(ctx, sla_mm_read_dense(ctx, p, &m, &n, &y));
    CHECK(m == 2 && n == 2 && y && y[0] == 1 && y[1] == -2 && y[2] == 3 && y[3] == 4);
    sla_free(ctx, y);

    y = (double *)x;
    write_text(p, "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n");
    CHECK_ERR(ctx, sla_mm_read_dense(ctx, p, &m, &n, &y), SLA_ERR_FORMAT,
              ":5: file ends after 3 of 4 declared values");
    CHECK(y == NULL && m == 0 && n == 0);
    write_text(p, "%%MatrixMarket matrix array real general\n2 1\n1\n2\n3\n");
    CHECK_ERR(ctx, sla_mm_read_dense(ctx, p, &m, &n, &y), SLA_ERR_FORMAT, ":5: more entries");
    write_text(p, "%%MatrixMarket matrix array real general\n2 1\n1\nnan\n");
    CHECK_ERR(ctx, sla_mm_read_dense(ctx, p, &m, &n, &y), SLA_ERR_VALUE, ":4: value \"nan\"");
    write_text(p, "%%MatrixMarket matrix array real general\n2 1\n1 2\n3\n");
    CHECK_ERR(ctx, sla_mm_read_dense(ctx, p, &m, &n, &y), SLA_ERR_FORMAT, ":3: unexpected \"2\"");
    write_text(p, "%%MatrixMarket matrix array real general\n2\n1\n2\n");
    CHECK_ERR(ctx, sla_mm_read_dense(ctx, p, &m, &n, &y), SLA_ERR_FORMAT, ":2: size line needs 2");
    write_text(p, "%%MatrixMarket matrix array real general\n3000000000 3000000000\n1\n");
    CHECK_ERR(ctx, sla_mm_read_dense(ctx, p, &m, &n, &y), SLA_ERR_TOO_LARGE, ":2:");
    write_text(p, "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n");
    CHECK_ERR(ctx, sla_mm_read_dense(ctx, p, &m, &n, &y), SLA_ERR_UNSUPPORTED, ":1:");
    write_text(p, "%%MatrixMarket matrix array complex general\n1 1\n1 0\n");
    CHECK_ERR(ctx, sla_mm_read_dense(ctx, p, &m, &n, &y), SLA_ERR_UNSUPPORTED, "complex");
    write_text(p, HDR "2 2 1\n1 1 1\n");
    CHECK_ERR(ctx, sla_mm_read_dense(ctx, p, &m, &n, &y), SLA_ERR_FORMAT, "use sla_mm_read");
    CHECK(y == NULL);

    x[2] = INFINITY;
    CHECK_ERR(ctx, sla_mm_write_dense(ctx, p, 4, 3, x), SLA_ERR_VALUE, "(2, 0)");
    CHECK_ERR(ctx, sla_mm_write_dense(ctx, p, -1, 3, x), SLA_ERR_DIMENSION, "negative");
    CHECK_ERR(ctx, sla_mm_write_dense(ctx, p, 2, 2, NULL), SLA_ERR_ARGUMENT, "NULL");
    CHECK_ERR(ctx, sla_mm_read_dense(ctx, p, &m, &n, NULL), SLA_ERR_ARGUMENT, "NULL");
}

/* ---- I/O errors ---------------------------------------------------------- */

static void test_io_errors(sla_ctx *ctx)
{
    sla_matrix *A = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 1, 5, &A));
    double x[2] = {1, 2};
    CHECK_ERR(ctx, sla_mm_write(ctx, "/nonexistent-dir/x.mtx", A, 0), SLA_ERR_IO,
              "/nonexistent-dir/x.mtx");
    CHECK_ERR(ctx, sla_mm_write_dense(ctx, "/nonexistent-dir/x.mtx", 2, 1, x), SLA_ERR_IO,
              "cannot open");
    CHECK_ERR(ctx, sla_mm_write_pattern_values(ctx, "/nonexistent-dir/x.mtx", A,
                                               sla_matrix_values(A, 0)),
              SLA_ERR_IO, "cannot open");
    CHECK_ERR(ctx, sla_mm_write(ctx, tmpdir, A, 0), SLA_ERR_IO, "cannot open");
    CHECK_ERR(ctx, sla_mm_read_dense(ctx, "/nonexistent-dir/x.mtx", &(sla_int){0},
                                     &(sla_int){0}, &(double *){NULL}),
              SLA_ERR_IO, "No such file");
    /* a device that accepts the open but fails every write */
    if (access("/dev/full", W_OK) == 0) {
        CHECK_ERR(ctx, sla_mm_write(ctx, "/dev/full", A, 0), SLA_ERR_IO, "error writing /dev/full");
        CHECK_ERR(ctx, sla_mm_write_dense(ctx, "/dev/full", 2, 1, x), SLA_ERR_IO, "/dev/full");
    }
    CHECK_ERR(ctx, sla_mm_write(ctx, tmp_path("x.mtx"), NULL, 0), SLA_ERR_ARGUMENT, "NULL");
    CHECK_ERR(ctx, sla_mm_write(ctx, NULL, A, 0), SLA_ERR_ARGUMENT, "path");
    sla_matrix_destroy(&A);
}

/* ---- atomic replacement (issue 21) --------------------------------------- */

static int count_temp_files(void)
{
    DIR *d = opendir(tmpdir);
    int c = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".sla-write-")) c++;
    if (d) closedir(d);
    return c;
}

static void test_atomic(sla_ctx *ctx)
{
    sla_matrix *A = NULL, *B = NULL;
    CHECK_OK(ctx, sla_gen_poisson(ctx, 1, 5, &A));
    const char *keep = tmp_path("keep.mtx"), *link = tmp_path("link.mtx");
    FILE *f = fopen(keep, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("PRECIOUS\n", f);
    fclose(f);
    CHECK(chmod(keep, 0640) == 0);
    CHECK(symlink("keep.mtx", link) == 0);
    /* a reader that opened the old file keeps reading it whole: the file is
     * replaced (rename), never truncated and rewritten in place */
    FILE *old = fopen(keep, "r");
    struct stat st0, st1;
    CHECK(stat(keep, &st0) == 0);
    CHECK_OK(ctx, sla_mm_write(ctx, link, A, 0));
    char line[32] = "";
    CHECK(old && fgets(line, sizeof line, old) && !strcmp(line, "PRECIOUS\n"));
    if (old) fclose(old);
    CHECK(stat(keep, &st1) == 0);
    CHECK(st1.st_ino != st0.st_ino);
    CHECK((st1.st_mode & 07777) == 0640); /* the mode is kept */
    CHECK(lstat(link, &st1) == 0 && S_ISLNK(st1.st_mode)); /* the link stays a link */
    CHECK_OK(ctx, sla_mm_read(ctx, keep, SLA_F64, &B));
    CHECK(B && sla_matrix_nnz(B) == sla_matrix_nnz(A));
    sla_matrix_destroy(&B);
    CHECK(count_temp_files() == 0);
    /* a failed write (a refused value) leaves the file and no temporary */
    double bad[2] = {1.0, NAN};
    CHECK(stat(keep, &st0) == 0);
    CHECK_ERR(ctx, sla_mm_write_dense(ctx, keep, 2, 1, bad), SLA_ERR_VALUE, "not finite");
    CHECK(stat(keep, &st1) == 0 && st1.st_ino == st0.st_ino);
    CHECK(count_temp_files() == 0);
    remove(link);
    sla_matrix_destroy(&A);
}

int main(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/sla_test_mmio_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    sla_ctx *ctx = NULL;
    if (sla_ctx_create(&ctx) != SLA_OK) return 1;
    sla_allocator counting = {count_malloc, count_free, &live};
    sla_ctx_set_allocator(ctx, &counting);

    test_roundtrip(ctx);
    test_symmetric(ctx);
    test_tolerant(ctx);
    test_malformed(ctx);
    test_named_errors(ctx);
    test_files(ctx);
    test_dense(ctx);
    test_io_errors(ctx);
    test_atomic(ctx);
    if (live.live != 0) fprintf(stderr, "%ld blocks not freed\n", live.live);
    CHECK(live.live == 0);

    sla_ctx_destroy(&ctx);
    const char *names[] = {"rt.mtx", "bad.mtx", "bcsstk01.mtx", "dense.mtx", "x.mtx", "keep.mtx", "link.mtx"};
    for (int k = 0; k < 7; k++) remove(tmp_path(names[k]));
    rmdir(tmpdir);
    return tu_finish("test_mmio");
}
