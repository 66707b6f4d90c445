/* Structural window keys (see key.h for what goes in and why).
 *
 * This runs at every window's close with the summary or the trace on, so it is on the
 * launch path's budget: the numbering table is not cleared per window (slots carry the
 * window's generation), and the hashed records are gathered into a buffer and handed to
 * XXH3 in large pieces (the same bytes in the same order: the same key as record by
 * record). */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/fault.h"
#include "capture/key.h"

void tcf_key_scratch_free(tcf_key_scratch_t *s)
{
    tcf_free(s->vals);
    tcf_free(s->nums);
    tcf_free(s->gens);
    memset(s, 0, sizeof *s);
}

static int tcf_key_reserve(tcf_key_scratch_t *s, size_t need)
{
    uint32_t cap = 64;
    while (cap < need * 2)
        cap *= 2;
    if (cap > s->cap) {
        uint64_t *v = tcf_realloc(s->vals, cap * sizeof *v);
        if (!v)
            return -1;
        s->vals = v;
        uint32_t *m = tcf_realloc(s->nums, cap * sizeof *m);
        if (!m)
            return -1;
        s->nums = m;
        uint32_t *g = tcf_realloc(s->gens, cap * sizeof *g);
        if (!g)
            return -1;
        s->gens = g;
        memset(s->gens, 0, cap * sizeof *s->gens);   /* no slot of any window yet */
        s->gen = 0;
        s->cap = cap;
    }
    s->used = cap;
    if (++s->gen == 0) {   /* wrapped: slots of 2^32 windows ago would look current */
        memset(s->gens, 0, s->cap * sizeof *s->gens);
        s->gen = 1;
    }
    return 0;
}

/* The buffer number of value v: existing, or the next one. fresh forces a new number. */
static uint32_t tcf_key_number(tcf_key_scratch_t *s, uint64_t v, int fresh, uint32_t *next)
{
    uint32_t mask = s->used - 1;
    uint32_t i = (uint32_t)((v * 0x9E3779B97F4A7C15ull) >> 32) & mask;
    while (s->gens[i] == s->gen && s->vals[i] != v)
        i = (i + 1) & mask;
    if (s->gens[i] != s->gen || fresh) {
        s->gens[i] = s->gen;
        s->vals[i] = v;
        s->nums[i] = (*next)++;
    }
    return s->nums[i];
}

/* Bytes to hash, gathered: XXH3's streaming update costs per call. */
typedef struct {
    XXH3_state_t st;
    size_t       len;
    uint8_t      buf[2048];
} tcf_key_hash_t;

static inline void tcf_key_put(tcf_key_hash_t *h, const void *p, size_t n)
{
    if (h->len + n > sizeof h->buf) {
        XXH3_64bits_update(&h->st, h->buf, h->len);
        h->len = 0;
    }
    memcpy(h->buf + h->len, p, n);
    h->len += n;
}

static void tcf_key_pointer(tcf_key_hash_t *h, tcf_key_scratch_t *s, uint32_t where,
                            uint64_t v, int fresh, uint32_t *next)
{
    uint32_t rec[3] = { where, tcf_key_number(s, v, fresh, next), (uint32_t)((v & 15) == 0) };
    tcf_key_put(h, rec, sizeof rec);
}

uint64_t tcf_key_window(const tcf_key_item_t *items, size_t n, uint64_t dev_lo,
                        uint64_t dev_hi, tcf_key_scratch_t *scratch)
{
    size_t bound = 0;
    for (size_t i = 0; i < n; i++)
        bound += items[i].nparams / 8 + items[i].nptrs;
    int numbering = tcf_key_reserve(scratch, bound) == 0;

    tcf_key_hash_t h;
    XXH3_64bits_reset(&h.st);
    h.len = 0;
    uint32_t next = 1;
    for (size_t i = 0; i < n; i++) {
        const tcf_key_item_t *it = &items[i];
        tcf_key_put(&h, it->words, sizeof it->words);
        if (!numbering)
            continue; /* out of memory: a coarser key, still deterministic */
        for (uint32_t o = 0; it->params && o + 8 <= it->nparams; o += 8) {
            uint64_t v;
            memcpy(&v, it->params + o, 8);
            if (v && v >= dev_lo && v < dev_hi)
                tcf_key_pointer(&h, scratch, o, v, 0, &next);
        }
        for (uint8_t p = 0; p < it->nptrs && p < 2; p++)
            if (it->ptrs[p])
                tcf_key_pointer(&h, scratch, 0x80000000u + p, it->ptrs[p],
                                p == 0 && it->fresh, &next);
    }
    XXH3_64bits_update(&h.st, h.buf, h.len);
    return XXH3_64bits_digest(&h.st);
}
