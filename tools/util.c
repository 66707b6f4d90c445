/* util: allocation that exits on failure, the one line of a usage error, and the
 * open-addressing hash map the report uses (keys are kernel ids, window keys, reasons and
 * call sites). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tools.h"

struct tcf_tool_map_slot {
    uint64_t hash; /* the key itself for u64 keys; a string's hash otherwise */
    char *str;     /* the key for string keys, else NULL */
    size_t value;
    int used;
};

int tcf_tool_bad_usage(const char *cmd, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (cmd)
        fprintf(stderr, "tcfuse %s: %s (tcfuse help %s)\n", cmd, what, cmd);
    else
        fprintf(stderr, "tcfuse: %s (tcfuse --help)\n", what);
    return TCF_EXIT_USAGE;
}

int tcf_tool_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*s == 0 || *end != 0 || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

void *tcf_tool_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "tcfuse: out of memory\n");
        exit(TCF_EXIT_FAIL);
    }
    return q;
}

void tcf_tool_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t c = *cap ? *cap : 16;
    if (need <= *cap) return;
    while (c < need) c *= 2;
    if (c > SIZE_MAX / elem) c = need; /* let realloc refuse it */
    *p = tcf_tool_realloc(*p, c * elem);
    *cap = c;
}

char *tcf_tool_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(tcf_tool_realloc(NULL, n), s, n);
}

/* splitmix64's finalizer: window keys are already hashes, but ids are small integers. */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27, x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static struct tcf_tool_map_slot *find(const tcf_tool_map_t *m, uint64_t h, const char *s)
{
    size_t i = (size_t)mix(h) & (m->cap - 1);
    for (;; i = (i + 1) & (m->cap - 1)) {
        struct tcf_tool_map_slot *e = &m->slots[i];
        if (!e->used || (e->hash == h && (s ? e->str && strcmp(e->str, s) == 0 : !e->str)))
            return e;
    }
}

static size_t *insert(tcf_tool_map_t *m, uint64_t h, const char *s, int *created)
{
    struct tcf_tool_map_slot *e;
    if ((m->len + 1) * 4 > m->cap * 3) { /* keep the load under 3/4 */
        tcf_tool_map_t big = { NULL, m->cap ? m->cap * 2 : 64, 0 };
        size_t i;
        big.slots = calloc(big.cap, sizeof *big.slots);
        if (!big.slots) tcf_tool_realloc(NULL, SIZE_MAX); /* reports and exits */
        for (i = 0; i < m->cap; i++)
            if (m->slots[i].used) *find(&big, m->slots[i].hash, m->slots[i].str) = m->slots[i];
        free(m->slots);
        big.len = m->len;
        *m = big;
    }
    e = find(m, h, s);
    *created = !e->used;
    if (!e->used) {
        e->used = 1, e->hash = h, e->str = s ? tcf_tool_strdup(s) : NULL, e->value = 0;
        m->len++;
    }
    return &e->value;
}

size_t *tcf_tool_map_u64(tcf_tool_map_t *m, uint64_t key, int *created)
{
    return insert(m, key, NULL, created);
}

size_t *tcf_tool_map_str(tcf_tool_map_t *m, const char *key, int *created)
{
    return insert(m, hash_str(key), key, created);
}

size_t *tcf_tool_map_get_u64(const tcf_tool_map_t *m, uint64_t key)
{
    struct tcf_tool_map_slot *e;
    if (!m->cap) return NULL;
    e = find(m, key, NULL);
    return e->used ? &e->value : NULL;
}

void tcf_tool_map_free(tcf_tool_map_t *m)
{
    size_t i;
    for (i = 0; i < m->cap; i++) free(m->slots[i].str);
    free(m->slots);
    m->slots = NULL, m->cap = m->len = 0;
}
