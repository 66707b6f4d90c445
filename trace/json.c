/* trace/json.c: lexing and value decoding for the trace reader (json.h). */
#include "trace/json.h"

#include <string.h>

/* Nesting allowed inside fields the reader skips; one bit per level in a uint64_t. */
#define TCF_JSON_DEPTH_MAX 32

/* --- lexing --------------------------------------------------------------------------- */
const char *tcf_trace_json_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p;
}

/* Raw control characters are invalid JSON; a NUL byte in a corrupt file lands here. */
int tcf_trace_json_scan_string(const char **pp, const char *end)
{
    const char *p = *pp + 1;
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') { *pp = p + 1; return 0; }
        if (c < 0x20) return -1;
        p += (c == '\\') ? 2 : 1;
    }
    return -1;
}

static int scan_digits(const char **pp, const char *end)
{
    const char *p = *pp;
    while (p < end && *p >= '0' && *p <= '9') p++;
    if (p == *pp) return -1;
    *pp = p;
    return 0;
}

static int scan_number(const char **pp, const char *end)
{
    const char *p = *pp;
    if (p < end && *p == '-') p++;
    if (scan_digits(&p, end) < 0) return -1;
    if (p < end && *p == '.') { p++; if (scan_digits(&p, end) < 0) return -1; }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (scan_digits(&p, end) < 0) return -1;
    }
    *pp = p;
    return 0;
}

/* Matches brackets with a bit stack of their kinds (1: array), so an unknown field costs
 * no recursion however deep it is. Content between brackets is not validated: a field we
 * skip only has to end where it should. */
static int skip_container(const char **pp, const char *end)
{
    const char *p = *pp;
    uint64_t kinds = 0;
    int depth = 0;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            if (tcf_trace_json_scan_string(&p, end) < 0) return -1;
            continue;
        }
        if (c == '[' || c == '{') {
            if (++depth > TCF_JSON_DEPTH_MAX) return -1;
            kinds = (kinds << 1) | (c == '[');
        } else if (c == ']' || c == '}') {
            if ((kinds & 1) != (uint64_t)(c == ']')) return -1;
            kinds >>= 1;
            if (--depth == 0) { *pp = p + 1; return 0; }
        }
        p++;
    }
    return -1;
}

int tcf_trace_json_scan_value(const char **pp, const char *end, tcf_json_val_t *v)
{
    static const char *const lits[] = { "true", "false", "null" };
    const char *p = *pp;
    if (p >= end) return -1;
    v->p = p;
    if (*p == '"') {
        if (tcf_trace_json_scan_string(&p, end) < 0) return -1;
        v->type = TCF_JSON_STR, v->p++, v->e = p - 1;
    } else if (*p == '[' || *p == '{') {
        v->type = (*p == '[') ? TCF_JSON_ARR : TCF_JSON_OBJ;
        if (skip_container(&p, end) < 0) return -1;
        v->e = p;
    } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
        if (scan_number(&p, end) < 0) return -1;
        v->type = TCF_JSON_NUM, v->e = p;
    } else {
        size_t i, n = 0;
        for (i = 0; i < 3 && !n; i++) {
            size_t l = strlen(lits[i]);
            if ((size_t)(end - p) >= l && memcmp(p, lits[i], l) == 0) n = l;
        }
        if (!n) return -1;
        p += n;
        v->type = TCF_JSON_LIT, v->e = p;
    }
    *pp = p;
    return 0;
}

/* --- scalars -------------------------------------------------------------------------- */
static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int tcf_trace_json_int(const tcf_json_val_t *v, int64_t *out)
{
    const char *p = v->p;
    uint64_t x = 0, lim;
    int neg = 0;
    if (v->type == TCF_JSON_NONE) return 0;
    if (v->type != TCF_JSON_NUM) return -1;
    if (*p == '-') neg = 1, p++;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    if (p == v->e) return -1;
    for (; p < v->e; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (*p < '0' || *p > '9' || x > (lim - d) / 10) return -1; /* 1.5, 1e3, overflow */
        x = x * 10 + d;
    }
    *out = neg ? (int64_t)(0 - x) : (int64_t)x; /* 0 - 2^63 wraps to INT64_MIN as meant */
    return 0;
}

int tcf_trace_json_uint(const tcf_json_val_t *v, uint64_t *out)
{
    int64_t x = 0;
    if (v->type == TCF_JSON_NONE) return 0;
    if (tcf_trace_json_int(v, &x) < 0 || x < 0) return -1;
    *out = (uint64_t)x;
    return 0;
}

int tcf_trace_json_hex(const tcf_json_val_t *v, uint64_t *out)
{
    const char *p = v->p;
    uint64_t x = 0;
    if (v->type == TCF_JSON_NONE) return 0;
    if (v->type != TCF_JSON_STR || v->e - p < 3 || v->e - p > 18 || p[0] != '0' ||
        (p[1] | 0x20) != 'x')
        return -1;
    for (p += 2; p < v->e; p++) {
        int h = hexval(*p);
        if (h < 0) return -1;
        x = (x << 4) | (uint64_t)h;
    }
    *out = x;
    return 0;
}

/* --- strings -------------------------------------------------------------------------- */
static size_t put_utf8(unsigned char *o, uint32_t cp)
{
    unsigned char b[4];
    size_t n, i;
    if (cp < 0x80) b[0] = (unsigned char)cp, n = 1;
    else if (cp < 0x800) b[0] = (unsigned char)(0xc0 | cp >> 6), n = 2;
    else if (cp < 0x10000) b[0] = (unsigned char)(0xe0 | cp >> 12), n = 3;
    else b[0] = (unsigned char)(0xf0 | cp >> 18), n = 4;
    for (i = 1; i < n; i++) b[i] = (unsigned char)(0x80 | ((cp >> (6 * (n - 1 - i))) & 0x3f));
    if (o) memcpy(o, b, n);
    return n;
}

static int hex4(const char *p, const char *end, uint32_t *cp)
{
    int i;
    *cp = 0;
    if (end - p < 4) return -1;
    for (i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0) return -1;
        *cp = (*cp << 4) | (uint32_t)h;
    }
    return 0;
}

/* Decodes a string's raw text, writing it (and a NUL) to o when o is set. Returns the
 * decoded length, or -1 for a bad escape or a lone UTF-16 surrogate. */
static long unescape(const tcf_json_val_t *v, unsigned char *o)
{
    const char *p = v->p, *e = v->e;
    size_t n = 0;
    while (p < e) {
        uint32_t cp;
        if (*p != '\\') { if (o) o[n] = (unsigned char)*p; n++, p++; continue; }
        if (e - p < 2) return -1;
        switch (p[1]) {
        case '"': case '\\': case '/': cp = (unsigned char)p[1]; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (hex4(p + 2, e, &cp) < 0 || (cp >= 0xdc00 && cp <= 0xdfff)) return -1;
            if (cp >= 0xd800 && cp <= 0xdbff) { /* a pair: \ud83d\ude00 */
                uint32_t lo;
                if (e - p < 12 || p[6] != '\\' || p[7] != 'u' || hex4(p + 8, e, &lo) < 0 ||
                    lo < 0xdc00 || lo > 0xdfff)
                    return -1;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                p += 6;
            }
            n += put_utf8(o ? o + n : NULL, cp);
            p += 6;
            continue;
        default: return -1;
        }
        if (o) o[n] = (unsigned char)cp;
        n++, p += 2;
    }
    if (o) o[n] = 0;
    return (long)n;
}

static void *take(tcf_json_arena_t *a, size_t n, size_t align)
{
    void *p;
    a->used = (a->used + align - 1) & ~(align - 1);
    p = a->base ? a->base + a->used : NULL;
    a->used += n;
    return p;
}

int tcf_trace_json_str(const tcf_json_val_t *v, tcf_json_arena_t *a, const char **out)
{
    unsigned char *o;
    long n;
    if (v->type == TCF_JSON_NONE) return 0;
    if (v->type != TCF_JSON_STR || (n = unescape(v, NULL)) < 0) return -1;
    o = take(a, (size_t)n + 1, 1);
    if (o) unescape(v, o);
    *out = o ? (const char *)o : "";
    return 0;
}

/* --- arrays --------------------------------------------------------------------------- */
/* Steps through an array's elements; *n counts those seen. 1: *el is the next, 0: ']'. */
static int arr_next(const tcf_json_val_t *arr, const char **pp, size_t *n, tcf_json_val_t *el)
{
    const char *p = tcf_trace_json_ws(*n ? *pp : arr->p + 1, arr->e);
    if (p < arr->e && *p == ']') return 0;
    if (*n) {
        if (p >= arr->e || *p != ',') return -1;
        p = tcf_trace_json_ws(p + 1, arr->e);
    }
    if (tcf_trace_json_scan_value(&p, arr->e, el) < 0) return -1;
    (*n)++;
    *pp = p;
    return 1;
}

int tcf_trace_json_u32s(const tcf_json_val_t *v, uint32_t *out, size_t want)
{
    const char *p = NULL;
    size_t n = 0;
    tcf_json_val_t el;
    int rc;
    if (v->type == TCF_JSON_NONE) return 0;
    if (v->type != TCF_JSON_ARR) return -1;
    while ((rc = arr_next(v, &p, &n, &el)) == 1) {
        int64_t x;
        if (n > want || tcf_trace_json_int(&el, &x) < 0 || x < 0 || x > UINT32_MAX) return -1;
        out[n - 1] = (uint32_t)x;
    }
    return (rc < 0 || n != want) ? -1 : 0;
}

int tcf_trace_json_pairs(const tcf_json_val_t *v, tcf_json_arena_t *a,
                         const tcf_trace_param_t **out, size_t *cnt)
{
    const tcf_trace_param_t *first = NULL;
    const char *p = NULL;
    size_t n = 0;
    tcf_json_val_t el;
    int rc;
    if (v->type == TCF_JSON_NONE) return 0;
    if (v->type != TCF_JSON_ARR) return -1;
    while ((rc = arr_next(v, &p, &n, &el)) == 1) {
        uint32_t two[2];
        tcf_trace_param_t *o = take(a, sizeof *o, sizeof(uint32_t)); /* contiguous */
        if (el.type != TCF_JSON_ARR || tcf_trace_json_u32s(&el, two, 2) < 0) return -1;
        if (o) o->offset = two[0], o->size = two[1];
        if (n == 1) first = o;
    }
    if (rc < 0) return -1;
    *out = first;
    *cnt = n;
    return 0;
}

/* The pointer table first, then the strings, so the table is one aligned block. */
int tcf_trace_json_strs(const tcf_json_val_t *v, tcf_json_arena_t *a,
                        const char *const **out, size_t *cnt)
{
    const char *p = NULL, **tab;
    size_t n = 0, i = 0;
    tcf_json_val_t el;
    int rc;
    if (v->type == TCF_JSON_NONE) return 0;
    if (v->type != TCF_JSON_ARR) return -1;
    while ((rc = arr_next(v, &p, &n, &el)) == 1)
        if (el.type != TCF_JSON_STR) return -1;
    if (rc < 0) return -1;
    tab = take(a, n * sizeof *tab, sizeof *tab);
    for (p = NULL; arr_next(v, &p, &i, &el) == 1;) {
        const char *s = "";
        if (tcf_trace_json_str(&el, a, &s) < 0) return -1;
        if (tab) tab[i - 1] = s;
    }
    *out = n ? tab : NULL;
    *cnt = n;
    return 0;
}

int tcf_trace_json_bytes(const tcf_json_val_t *v, tcf_json_arena_t *a,
                         const uint8_t **out, size_t *len)
{
    const char *p = v->p;
    uint8_t *o;
    size_t n, i;
    if (v->type == TCF_JSON_NONE) return 0;
    if (v->type != TCF_JSON_STR) return -1;
    if (v->e - p >= 2 && p[0] == '0' && (p[1] | 0x20) == 'x') p += 2;
    if ((v->e - p) % 2) return -1;
    n = (size_t)(v->e - p) / 2;
    o = take(a, n, 1);
    for (i = 0; i < n; i++) {
        int hi = hexval(p[2 * i]), lo = hexval(p[2 * i + 1]);
        if (hi < 0 || lo < 0) return -1;
        if (o) o[i] = (uint8_t)(hi << 4 | lo);
    }
    *out = n ? o : NULL;
    *len = n;
    return 0;
}
