/* Window keys: what changes a key and what must not. */
#include <stdint.h>
#include <string.h>

#include "capture/key.h"
#include "check.h"

#define LO 0x7f0000000000ull
#define HI 0x7f1000000000ull

static tcf_key_scratch_t scratch;

/* A launch item whose parameters are: int n @0, float alpha @4, char *data[3] @8. */
static tcf_key_item_t launch(uint8_t buf[32], uint32_t n, float alpha, uint64_t out,
                             uint64_t a, uint64_t b)
{
    memset(buf, 0, 32);
    memcpy(buf, &n, 4);
    memcpy(buf + 4, &alpha, 4);
    memcpy(buf + 8, &out, 8);
    memcpy(buf + 16, &a, 8);
    memcpy(buf + 24, &b, 8);
    tcf_key_item_t it = { .words = { 0, 0xabc, 0xdef, 1024, 128, 0 }, .params = buf, .nparams = 32 };
    return it;
}

static uint64_t key2(uint64_t o1, uint64_t a1, uint64_t b1, uint64_t o2, uint64_t a2, uint64_t b2,
                     float alpha)
{
    uint8_t p1[32], p2[32];
    tcf_key_item_t items[2] = { launch(p1, 1 << 20, alpha, o1, a1, b1),
                                launch(p2, 1 << 20, 1.0f, o2, a2, b2) };
    return tcf_key_window(items, 2, LO, HI, &scratch);
}

TEST(same_pattern_other_buffers_same_key)
{
    /* y = a + b; z = y + b  on two different sets of buffers */
    uint64_t k1 = key2(LO + 0x1000, LO + 0x2000, LO + 0x3000, LO + 0x4000, LO + 0x1000, LO + 0x3000, 1);
    uint64_t k2 = key2(LO + 0x9000, LO + 0xa000, LO + 0xb000, LO + 0xc000, LO + 0x9000, LO + 0xb000, 1);
    CHECK_EQ_U64(k1, k2);
}

TEST(scalar_values_not_in_key)
{
    uint64_t k1 = key2(LO, LO + 0x100, LO + 0x200, LO + 0x300, LO, LO + 0x200, 1.0f);
    uint64_t k2 = key2(LO, LO + 0x100, LO + 0x200, LO + 0x300, LO, LO + 0x200, -2.5f);
    CHECK_EQ_U64(k1, k2);
}

TEST(dataflow_changes_key)
{
    /* second op reads the first's output vs reads an unrelated buffer */
    uint64_t k1 = key2(LO, LO + 0x100, LO + 0x200, LO + 0x300, LO, LO + 0x200, 1);
    uint64_t k2 = key2(LO, LO + 0x100, LO + 0x200, LO + 0x300, LO + 0x400, LO + 0x200, 1);
    CHECK(k1 != k2);
}

TEST(alignment_changes_key)
{
    uint64_t k1 = key2(LO, LO + 0x100, LO + 0x200, LO + 0x300, LO, LO + 0x200, 1);
    uint64_t k2 = key2(LO, LO + 0x104, LO + 0x200, LO + 0x300, LO, LO + 0x200, 1);
    CHECK(k1 != k2);
}

TEST(values_outside_device_range_ignored)
{
    /* a host-looking garbage word in padding must not change the key */
    uint64_t k1 = key2(LO, LO + 0x100, 0x00007ffd12345678ull, LO + 0x300, LO, LO + 0x200, 1);
    uint64_t k2 = key2(LO, LO + 0x100, 0x00007ffd87654320ull, LO + 0x300, LO, LO + 0x200, 1);
    CHECK_EQ_U64(k1, k2);
}

TEST(structural_words_change_key)
{
    uint8_t p[32];
    tcf_key_item_t a = launch(p, 1, 1, LO, LO + 16, LO + 32);
    uint64_t k1 = tcf_key_window(&a, 1, LO, HI, &scratch);
    a.words[3] = 2048; /* grid */
    uint64_t k2 = tcf_key_window(&a, 1, LO, HI, &scratch);
    CHECK(k1 != k2);
}

TEST(reallocation_is_a_new_buffer)
{
    /* free X, alloc at the same address, use it: not the same buffer as before */
    uint8_t p1[32], p2[32];
    tcf_key_item_t use1 = launch(p1, 1, 1, LO, LO + 0x100, LO + 0x200);
    tcf_key_item_t fr = { .words = { 2 }, .ptrs = { LO }, .nptrs = 1 };
    tcf_key_item_t al = { .words = { 1, 4096 }, .ptrs = { LO }, .nptrs = 1, .fresh = 1 };
    tcf_key_item_t use2 = launch(p2, 1, 1, LO + 0x300, LO, LO + 0x200);
    tcf_key_item_t same[4] = { use1, fr, al, use2 };
    uint64_t k1 = tcf_key_window(same, 4, LO, HI, &scratch);
    /* the same shape where the second launch reads a genuinely new address */
    uint8_t p3[32];
    tcf_key_item_t al2 = al;
    al2.ptrs[0] = LO + 0x800;
    tcf_key_item_t use3 = launch(p3, 1, 1, LO + 0x300, LO + 0x800, LO + 0x200);
    tcf_key_item_t other[4] = { use1, fr, al2, use3 };
    uint64_t k2 = tcf_key_window(other, 4, LO, HI, &scratch);
    CHECK_EQ_U64(k1, k2);
    /* and without the fresh allocation the reuse would read as the same buffer */
    tcf_key_item_t al3 = al;
    al3.fresh = 0;
    tcf_key_item_t stale[4] = { use1, fr, al3, use2 };
    CHECK(tcf_key_window(stale, 4, LO, HI, &scratch) != k1);
}

TEST(many_pointers_grow_scratch)
{
    static uint8_t bufs[300][32];
    static tcf_key_item_t items[300];
    for (int i = 0; i < 300; i++)
        items[i] = launch(bufs[i], 1, 1, LO + 0x100 * (uint64_t)i, LO + 0x100 * (uint64_t)(i + 1), LO);
    uint64_t k1 = tcf_key_window(items, 300, LO, HI, &scratch);
    uint64_t k2 = tcf_key_window(items, 300, LO, HI, &scratch);
    CHECK_EQ_U64(k1, k2);
    CHECK(scratch.cap >= 1800);
}

/* A small window after a large one clears and probes only the table it needs: its key is
 * the one a fresh scratch gives (a window of one launch after hundreds once cleared the
 * whole grown table, 64 KiB and more, at every close). */
TEST(small_window_after_large_same_key)
{
    tcf_key_scratch_t fresh = { 0 };
    uint8_t p1[32], p2[32];
    tcf_key_item_t small[2] = { launch(p1, 64, 1, LO + 0x100, LO + 0x200, LO + 0x100),
                                launch(p2, 64, 1, LO + 0x300, LO + 0x100, LO + 0x200) };
    uint64_t want = tcf_key_window(small, 2, LO, HI, &fresh);
    static tcf_key_item_t big[300];
    static uint8_t bp[300][32];
    for (int i = 0; i < 300; i++)
        big[i] = launch(bp[i], 1, 1, LO + 0x1000 * (uint64_t)i, LO + 0x10 + 0x1000 * (uint64_t)i,
                        LO + 0x20 + 0x1000 * (uint64_t)i);
    tcf_key_window(big, 300, LO, HI, &scratch);
    CHECK(scratch.cap >= 1800);
    CHECK_EQ_U64(tcf_key_window(small, 2, LO, HI, &scratch), want);
    CHECK(scratch.used < scratch.cap);
    tcf_key_window(big, 300, LO, HI, &scratch);   /* and back: the large table again */
    CHECK_EQ_U64(tcf_key_window(small, 2, LO, HI, &scratch), want);
    tcf_key_scratch_free(&fresh);
}

TEST(empty_window)
{
    CHECK_EQ_U64(tcf_key_window(NULL, 0, LO, HI, &scratch), tcf_key_window(NULL, 0, 0, 0, &scratch));
}

int main(void)
{
    RUN(same_pattern_other_buffers_same_key);
    RUN(scalar_values_not_in_key);
    RUN(dataflow_changes_key);
    RUN(alignment_changes_key);
    RUN(values_outside_device_range_ignored);
    RUN(structural_words_change_key);
    RUN(reallocation_is_a_new_buffer);
    RUN(many_pointers_grow_scratch);
    RUN(small_window_after_large_same_key);
    RUN(empty_window);
    tcf_key_scratch_free(&scratch);
    return check_main_end();
}
