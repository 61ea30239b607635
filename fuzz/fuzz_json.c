/* Fuzz target: the CLI's JSON string writer, cli_json_string
 * (tools/cli_output.c), which quotes file names in every --json report.
 * Bytes -> a string (cut at the first NUL). The output must be one JSON
 * string literal: quotes at both ends, no raw control byte, only the
 * escapes \" \\ \n \r \t \uXXXX, and valid UTF-8 (checked here by an
 * independent decoder). A valid UTF-8 input must come back unchanged when
 * the escapes are decoded; an invalid byte becomes U+FFFD. */
#define _POSIX_C_SOURCE 200809L

#include "fuzz_common.h"

#include "cli_output.h"

#include <stdio.h>

/* Length of the well-formed UTF-8 sequence at s[0..n) (Unicode table 3-7),
 * 0 when ill-formed. */
static size_t wf_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xbf;
    if (c <= 0x7f) return 1;
    else if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c == 0xe0) len = 3, lo = 0xa0;
    else if (c >= 0xe1 && c <= 0xec) len = 3;
    else if (c == 0xed) len = 3, hi = 0x9f;
    else if (c >= 0xee && c <= 0xef) len = 3;
    else if (c == 0xf0) len = 4, lo = 0x90;
    else if (c >= 0xf1 && c <= 0xf3) len = 4;
    else if (c == 0xf4) len = 4, hi = 0x8f;
    else return 0;
    if (n < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if (s[k] < 0x80 || s[k] > 0xbf) return 0;
    return len;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    char *in = malloc(size + 1);
    FUZZ_ASSERT(in);
    memcpy(in, data, size);
    in[size] = '\0';
    size_t n = strlen(in);
    char *out = NULL;
    size_t olen = 0;
    FILE *f = open_memstream(&out, &olen);
    FUZZ_ASSERT(f);
    cli_json_string(f, in);
    FUZZ_ASSERT(fclose(f) == 0);
    const unsigned char *o = (const unsigned char *)out;
    FUZZ_ASSERT(olen >= 2 && o[0] == '"' && o[olen - 1] == '"');
    /* the whole output is well-formed UTF-8 */
    for (size_t k = 0; k < olen;) {
        size_t l = wf_len(o + k, olen - k);
        FUZZ_ASSERT(l > 0);
        k += l;
    }
    /* decode the literal; check the grammar on the way */
    unsigned char *dec = malloc(olen * 3 + 1);
    FUZZ_ASSERT(dec);
    size_t dn = 0;
    for (size_t k = 1; k + 1 < olen;) {
        unsigned c = o[k];
        FUZZ_ASSERT(c >= 0x20 && c != '"' && c != 0x7f);
        if (c != '\\') {
            dec[dn++] = (unsigned char)c;
            k++;
            continue;
        }
        FUZZ_ASSERT(k + 2 < olen);
        unsigned e = o[k + 1];
        if (e == 'u') {
            FUZZ_ASSERT(k + 6 < olen);
            int h[4];
            for (int j = 0; j < 4; j++) FUZZ_ASSERT((h[j] = hexval(o[k + 2 + j])) >= 0);
            unsigned cp = (unsigned)(h[0] << 12 | h[1] << 8 | h[2] << 4 | h[3]);
            FUZZ_ASSERT(cp < 0x80 || cp == 0xfffd); /* controls, or the replacement */
            if (cp < 0x80) {
                dec[dn++] = (unsigned char)cp;
            } else {
                dec[dn++] = 0xef;
                dec[dn++] = 0xbf;
                dec[dn++] = 0xbd;
            }
            k += 6;
        } else {
            FUZZ_ASSERT(e == '"' || e == '\\' || e == 'n' || e == 'r' || e == 't');
            dec[dn++] = e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : (unsigned char)e;
            k += 2;
        }
    }
    /* the input with each ill-formed byte replaced by U+FFFD */
    unsigned char *want = malloc(n * 3 + 1);
    FUZZ_ASSERT(want);
    size_t wn = 0;
    for (size_t k = 0; k < n;) {
        size_t l = wf_len((const unsigned char *)in + k, n - k);
        if (l == 0) {
            want[wn++] = 0xef;
            want[wn++] = 0xbf;
            want[wn++] = 0xbd;
            k++;
        } else {
            memcpy(want + wn, in + k, l);
            wn += l;
            k += l;
        }
    }
    FUZZ_ASSERT(dn == wn && memcmp(dec, want, dn) == 0);
    free(want);
    free(dec);
    free(out);
    free(in);
    return 0;
}
