/* parse: the pure parsers behind TCFUSE_* values (declared in config/config.h).
 *
 * No state, no output, no allocation: each takes text and bounds and either writes *out
 * and returns 0, or returns -1 and leaves *out alone. Unit-tested edge by edge in
 * tests/unit/test_config_parse.c.
 */
#include "config/config.h"

#include <limits.h>
#include <string.h>

static const char *const tcf_mode_names[TCF_MODE__COUNT] = {
    [TCF_MODE_OFF] = "off",
    [TCF_MODE_OBSERVE] = "observe",
    [TCF_MODE_FUSE] = "fuse",
    [TCF_MODE_GRAPH] = "graph",
    [TCF_MODE_FULL] = "full",
};

/* ASCII-only on purpose: isspace/tolower follow the host process's locale (Turkish 'I'). */
static int tcf_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static char tcf_lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

/* Does [s, s+n) equal the lower-case word, ignoring case? */
static int tcf_eq_word(const char *s, size_t n, const char *word)
{
    if (strlen(word) != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (tcf_lower(s[i]) != word[i])
            return 0;
    return 1;
}

/* Strips surrounding whitespace; -1 when nothing is left. */
static int tcf_trim(const char *s, const char **b, size_t *n)
{
    if (!s)
        return -1;
    while (tcf_is_space(*s))
        s++;
    size_t len = strlen(s);
    while (len > 0 && tcf_is_space(s[len - 1]))
        len--;
    *b = s;
    *n = len;
    return len ? 0 : -1;
}

/* One or more decimal digits at *p, value at most limit; *p moves past them. */
static int tcf_parse_digits(const char **p, const char *end, unsigned long long limit,
                            unsigned long long *out)
{
    const char *q = *p;
    unsigned long long v = 0;
    for (; q < end && *q >= '0' && *q <= '9'; q++) {
        unsigned d = (unsigned)(*q - '0');
        if (v > (limit - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (q == *p)
        return -1;
    *p = q;
    *out = v;
    return 0;
}

int tcf_parse_bool(const char *s, int *out)
{
    static const char *const yes[] = { "1", "true", "on", "yes" };
    static const char *const no[] = { "0", "false", "off", "no" };
    const char *b;
    size_t n;
    if (tcf_trim(s, &b, &n))
        return -1;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (tcf_eq_word(b, n, yes[i])) { *out = 1; return 0; }
        if (tcf_eq_word(b, n, no[i])) { *out = 0; return 0; }
    }
    return -1;
}

int tcf_parse_int(const char *s, long long lo, long long hi, long long *out)
{
    const char *b;
    size_t n;
    if (tcf_trim(s, &b, &n))
        return -1;
    const char *p = b, *end = b + n;
    int neg = (*p == '-');
    if (*p == '-' || *p == '+')
        p++;
    unsigned long long lim = (unsigned long long)LLONG_MAX + (neg ? 1 : 0);
    unsigned long long mag;
    if (tcf_parse_digits(&p, end, lim, &mag) || p != end)
        return -1;
    /* -(LLONG_MAX + 1) is computed in unsigned arithmetic to avoid signed overflow. */
    long long v = neg ? (long long)(0ULL - mag) : (long long)mag;
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int tcf_parse_size(const char *s, long long lo, long long hi, long long *out)
{
    /* No "KB"/"MB": whether they mean 10^3 or 2^10 is a coin toss, so we refuse them. */
    static const struct { const char *name; int shift; } units[] = {
        { "k", 10 }, { "kib", 10 }, { "m", 20 }, { "mib", 20 },
        { "g", 30 }, { "gib", 30 }, { "t", 40 }, { "tib", 40 },
    };
    const char *b;
    size_t n;
    if (tcf_trim(s, &b, &n))
        return -1;
    const char *p = b, *end = b + n;
    unsigned long long mag;
    if (tcf_parse_digits(&p, end, LLONG_MAX, &mag))
        return -1; /* also refuses a sign: a size is never negative */
    int shift = 0;
    if (p < end) {
        if (*p == ' ')
            p++; /* "4 MiB"; trimming guarantees a suffix follows */
        size_t k = 0, nu = sizeof units / sizeof units[0];
        while (k < nu && !tcf_eq_word(p, (size_t)(end - p), units[k].name))
            k++;
        if (k == nu)
            return -1;
        shift = units[k].shift;
    }
    if (mag > ((unsigned long long)LLONG_MAX >> shift))
        return -1;
    long long v = (long long)(mag << shift);
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int tcf_parse_mode(const char *s, tcf_mode_t *out)
{
    const char *b;
    size_t n;
    if (tcf_trim(s, &b, &n))
        return -1;
    for (int m = 0; m < TCF_MODE__COUNT; m++)
        if (tcf_eq_word(b, n, tcf_mode_names[m])) {
            *out = (tcf_mode_t)m;
            return 0;
        }
    return -1;
}

const char *tcf_mode_name(tcf_mode_t m)
{
    return ((unsigned)m < TCF_MODE__COUNT) ? tcf_mode_names[m] : "?";
}
