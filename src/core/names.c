/* Nearest names: the one "did you mean" matcher of the library. Option
 * parsers (solver options, nonlinear options, method and preconditioner
 * names) and front ends call sla_nearest_name to suggest a valid name for a
 * mistyped one: an abbreviation of at least three characters names the
 * first candidate it begins, otherwise the candidate with the smallest edit
 * distance (Levenshtein: insertions, deletions, substitutions) wins when it
 * is close enough to be a plausible typo.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

#define NAME_MAX_LEN 60

/* Levenshtein distance between a and b (both at most NAME_MAX_LEN long),
 * one row of the dynamic programme at a time. */
static size_t edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
    size_t row[NAME_MAX_LEN + 1];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *sla_nearest_name(const char *name, const char *const *candidates, size_t count)
{
    if (!name || !candidates) return NULL;
    size_t ln = strlen(name);
    if (ln > NAME_MAX_LEN) return NULL;
    if (ln >= 3) /* an abbreviation names the first candidate it begins */
        for (size_t i = 0; i < count; i++)
            if (candidates[i] && !strncmp(candidates[i], name, ln)) return candidates[i];
    const char *pick = NULL;
    size_t best = (size_t)-1;
    for (size_t i = 0; i < count; i++) {
        if (!candidates[i]) continue;
        size_t lc = strlen(candidates[i]);
        if (lc > NAME_MAX_LEN) continue;
        size_t d = edit_distance(name, ln, candidates[i], lc);
        size_t close = lc / 2 > 2 ? lc / 2 : 2;
        if (d <= close && d < best) {
            best = d;
            pick = candidates[i];
        }
    }
    return pick;
}

/* " (did you mean 'x'?)" for the unknown s[0..len) among names, into buf;
 * when none is close: " (one of a, b, ...)" if list, else "". */
const char *sla__suggest(char *buf, size_t size, const char *s, size_t len,
                         const char *const *names, int count, bool list)
{
    char word[64];
    const char *near = NULL;
    if (len < sizeof word) {
        memcpy(word, s, len);
        word[len] = '\0';
        near = sla_nearest_name(word, names, (size_t)count);
    }
    buf[0] = '\0';
    if (near) {
        snprintf(buf, size, " (did you mean '%s'?)", near);
    } else if (list) {
        size_t at = (size_t)snprintf(buf, size, " (one of");
        for (int i = 0; i < count && at < size; i++)
            at += (size_t)snprintf(buf + at, size - at, "%s %s", i ? "," : "", names[i]);
        if (at < size) snprintf(buf + at, size - at, ")");
    }
    return buf;
}
