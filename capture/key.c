/* Structural window keys (see key.h for what goes in and why). */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "capture/key.h"

void tcf_key_scratch_free(tcf_key_scratch_t *s)
{
    free(s->vals);
    free(s->nums);
    memset(s, 0, sizeof *s);
}

static int tcf_key_reserve(tcf_key_scratch_t *s, size_t need)
{
    uint32_t cap = 64;
    while (cap < need * 2)
        cap *= 2;
    if (cap > s->cap) {
        uint64_t *v = realloc(s->vals, cap * sizeof *v);
        if (!v)
            return -1;
        s->vals = v;
        uint32_t *m = realloc(s->nums, cap * sizeof *m);
        if (!m)
            return -1;
        s->nums = m;
        s->cap = cap;
    }
    s->used = cap;
    memset(s->vals, 0, cap * sizeof *s->vals);
    return 0;
}

/* The buffer number of value v: existing, or the next one. fresh forces a new number. */
static uint32_t tcf_key_number(tcf_key_scratch_t *s, uint64_t v, int fresh, uint32_t *next)
{
    uint32_t mask = s->used - 1;
    uint32_t i = (uint32_t)(XXH3_64bits(&v, sizeof v) & mask);
    while (s->vals[i] && s->vals[i] != v)
        i = (i + 1) & mask;
    if (!s->vals[i] || fresh) {
        s->vals[i] = v;
        s->nums[i] = (*next)++;
    }
    return s->nums[i];
}

static void tcf_key_pointer(XXH3_state_t *st, tcf_key_scratch_t *s, uint32_t where,
                            uint64_t v, int fresh, uint32_t *next)
{
    uint32_t rec[3] = { where, tcf_key_number(s, v, fresh, next), (uint32_t)((v & 15) == 0) };
    XXH3_64bits_update(st, rec, sizeof rec);
}

uint64_t tcf_key_window(const tcf_key_item_t *items, size_t n, uint64_t dev_lo,
                        uint64_t dev_hi, tcf_key_scratch_t *scratch)
{
    size_t bound = 0;
    for (size_t i = 0; i < n; i++)
        bound += items[i].nparams / 8 + items[i].nptrs;
    int numbering = tcf_key_reserve(scratch, bound) == 0;

    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    uint32_t next = 1;
    for (size_t i = 0; i < n; i++) {
        const tcf_key_item_t *it = &items[i];
        XXH3_64bits_update(&st, it->words, sizeof it->words);
        if (!numbering)
            continue; /* out of memory: a coarser key, still deterministic */
        for (uint32_t o = 0; it->params && o + 8 <= it->nparams; o += 8) {
            uint64_t v;
            memcpy(&v, it->params + o, 8);
            if (v && v >= dev_lo && v < dev_hi)
                tcf_key_pointer(&st, scratch, o, v, 0, &next);
        }
        for (uint8_t p = 0; p < it->nptrs && p < 2; p++)
            if (it->ptrs[p])
                tcf_key_pointer(&st, scratch, 0x80000000u + p, it->ptrs[p],
                                p == 0 && it->fresh, &next);
    }
    return XXH3_64bits_digest(&st);
}
