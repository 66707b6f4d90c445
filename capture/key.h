/* Structural keys of windows: pure functions, unit-tested (tests/unit/test_key.c).
 *
 * A key covers what a plan for the window depends on and nothing else: per item its
 * structural words (kernel name hash, parameter layout hash, grid, block, shared memory;
 * for memsets and copies the call, element size and count), and the pattern of device
 * pointers: each 8-byte word at an 8-aligned offset of the parameter bytes whose value lies
 * in [dev_lo, dev_hi) is a pointer; pointers are numbered by first appearance in the window
 * (equal values, equal numbers; an allocation inside the window starts a new buffer even at
 * a reused address), and each contributes (offset, number, 16-byte alignment). Pointer and
 * scalar values themselves never enter the key.
 */
#ifndef TCF_KEY_H
#define TCF_KEY_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t       words[6];   /* structural, hashed as they are */
    const uint8_t *params;     /* scanned for pointer words; may be NULL */
    uint32_t       nparams;    /* bytes */
    uint64_t       ptrs[2];    /* explicit pointers (memset/copy dst, src; alloc, free) */
    uint8_t        nptrs;
    uint8_t        fresh;      /* 1: ptrs[0] is a new allocation (a new buffer number) */
} tcf_key_item_t;

/* Reusable memory for the pointer numbering; zero-initialise, free with tcf_key_scratch_free. */
typedef struct {
    uint64_t *vals;
    uint32_t *nums;
    uint32_t *gens;   /* a slot is in use for this window when its gen is the window's: no
                       * clearing per window (a window of one launch after one of hundreds
                       * cleared the larger table; any clearing cost every close) */
    uint32_t  cap;
    uint32_t  used;   /* slots of this window's table: a power of two <= cap */
    uint32_t  gen;    /* this window's */
} tcf_key_scratch_t;

uint64_t tcf_key_window(const tcf_key_item_t *items, size_t n, uint64_t dev_lo,
                        uint64_t dev_hi, tcf_key_scratch_t *scratch);
void tcf_key_scratch_free(tcf_key_scratch_t *s);

#endif
