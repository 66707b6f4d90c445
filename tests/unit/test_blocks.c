/* Block sizes by address (exec/blocks.c): what was put is found until taken, once; a take
 * of an unknown address finds nothing; deletions keep every other entry reachable while
 * the table grows past its first sizes, checked against a plain array. */
#include <stdint.h>

#include "exec/internal.h"
#include "check.h"

TEST(put_take_once)
{
    tcf_blocks_put(0x7f0000001000, 4096);
    tcf_blocks_put(0x7f0000002000, 512);
    CHECK_EQ_U64(tcf_blocks_size(0x7f0000001000), 4096);   /* looked at, stays */
    CHECK_EQ_U64(tcf_blocks_size(0x7f0000001000), 4096);
    CHECK_EQ_U64(tcf_blocks_size(0x7f0000001200), 0);      /* inside a block: not its start */
    CHECK_EQ_U64(tcf_blocks_size(0), 0);
    CHECK_EQ_U64(tcf_blocks_take(0x7f0000001000), 4096);
    CHECK_EQ_U64(tcf_blocks_size(0x7f0000001000), 0);      /* taken */
    CHECK_EQ_U64(tcf_blocks_take(0x7f0000001000), 0);     /* taken once */
    CHECK_EQ_U64(tcf_blocks_take(0x7f0000003000), 0);     /* never put */
    CHECK_EQ_U64(tcf_blocks_take(0), 0);
    tcf_blocks_put(0x7f0000002000, 1024);                 /* put again: the new size */
    CHECK_EQ_U64(tcf_blocks_take(0x7f0000002000), 1024);
    tcf_blocks_put(0x7f0000004000, 0);                    /* no size: not kept */
    tcf_blocks_put(0, 64);
    CHECK_EQ_U64(tcf_blocks_count(), 0);
}

/* Random puts and takes over 6000 neighbouring blocks (the table grows from 1024 slots
 * to 16384 on the way, and runs of colliding entries are shifted back on every take),
 * against a reference array. */
TEST(random_against_reference)
{
    enum { N = 40000, ADDRS = 6000 };
    static uint64_t ref[ADDRS];
    uint32_t s = 12345;
    size_t live = 0;
    for (int i = 0; i < N; i++) {
        s = s * 1103515245u + 12345u;
        uint32_t a = (s >> 8) % ADDRS;
        uint64_t ptr = 0x7f0000000000ull + (uint64_t)a * 512u;
        if (s & 0x80000000u) {
            uint64_t size = 512u + (s & 0xffffu);
            tcf_blocks_put(ptr, size);
            live += !ref[a];
            ref[a] = size;
        } else {
            if (tcf_blocks_size(ptr) != ref[a]) {
                CHECK_EQ_U64(tcf_blocks_size(ptr), ref[a]);
                break;
            }
            uint64_t got = tcf_blocks_take(ptr);
            if (got != ref[a]) {
                CHECK_EQ_U64(got, ref[a]);
                break;
            }
            live -= ref[a] != 0;
            ref[a] = 0;
        }
    }
    CHECK(live > 1000);
    CHECK_EQ_U64(tcf_blocks_count(), live);
    size_t left = 0;
    for (uint32_t a = 0; a < ADDRS; a++) {
        uint64_t got = tcf_blocks_take(0x7f0000000000ull + (uint64_t)a * 512u);
        if (got != ref[a]) {
            CHECK_EQ_U64(got, ref[a]);
            break;
        }
        left += got != 0;
    }
    CHECK_EQ_U64(left, live);
    CHECK_EQ_U64(tcf_blocks_count(), 0);
}

int main(void)
{
    RUN(put_take_once);
    RUN(random_against_reference);
    return check_main_end();
}
