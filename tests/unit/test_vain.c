/* Chains planned in vain (exec/vain.c): the key covers what planning reads, the table's
 * epoch makes every remembered chain stale, and the set answers only for what was put. */
#include <stdint.h>
#include <string.h>

#include "capture/window.h"
#include "exec/internal.h"
#include "check.h"

static tcf_kernel_t kern_a = { .id = 1 }, kern_b = { .id = 2 };
static tcf_event_t ev[4];
static uint8_t arena[64];
static tcf_window_t w = { .ctx = 0x1234, .ev = ev, .arena = arena, .nev = 4 };

/* decoded a, opaque b, a free, decoded a again, each launch with 16 parameter bytes */
static void setup(void)
{
    memset(ev, 0, sizeof ev);
    for (int i = 0; i < 64; i++)
        arena[i] = (uint8_t)i;
    ev[0].kind = TCF_EV_LAUNCH, ev[0].dec = 1, ev[0].u.l.k = &kern_a;
    ev[0].u.l.grid[0] = 8, ev[0].u.l.block[0] = 128, ev[0].u.l.pbytes = 16, ev[0].u.l.poff = 0;
    ev[1].kind = TCF_EV_LAUNCH, ev[1].u.l.k = &kern_b, ev[1].u.l.pbytes = 16, ev[1].u.l.poff = 16;
    ev[2].kind = TCF_EV_FREE, ev[2].u.m.ptr = 0x7f0000001000;
    ev[3] = ev[0];
    ev[3].u.l.poff = 32;
}

TEST(same_chain_same_key)
{
    setup();
    uint64_t k = tcf_vain_key(&w, 0, 4);
    CHECK(k != 0);
    CHECK_EQ_U64(tcf_vain_key(&w, 0, 4), k);
    CHECK(tcf_vain_key(&w, 0, 3) != k);
    CHECK(tcf_vain_key(&w, 1, 3) != k);
}

TEST(what_planning_reads_changes_key)
{
    setup();
    uint64_t k = tcf_vain_key(&w, 0, 4);
    arena[40] ^= 1;                          /* a decoded launch's parameter byte */
    CHECK(tcf_vain_key(&w, 0, 4) != k);
    setup();
    ev[3].u.l.grid[0] = 16;                  /* its grid */
    CHECK(tcf_vain_key(&w, 0, 4) != k);
    setup();
    ev[3].u.l.k = &kern_b;                   /* its kernel */
    CHECK(tcf_vain_key(&w, 0, 4) != k);
    setup();
    ev[2].u.m.ptr += 256;                    /* the free's block */
    CHECK(tcf_vain_key(&w, 0, 4) != k);
    setup();
    ev[0].dec = 0;                           /* no longer decoded: opaque to the planner */
    CHECK(tcf_vain_key(&w, 0, 4) != k);
    setup();
    w.ctx = 0x5678;                          /* another context */
    CHECK(tcf_vain_key(&w, 0, 4) != k);
    w.ctx = 0x1234;
}

TEST(opaque_launch_counts_by_place_only)
{
    setup();
    uint64_t k = tcf_vain_key(&w, 0, 4);
    arena[20] ^= 1;                          /* an opaque launch's parameters: not read */
    ev[1].u.l.grid[0] = 99;
    CHECK_EQ_U64(tcf_vain_key(&w, 0, 4), k);
}

TEST(epoch_makes_remembered_chains_stale)
{
    setup();
    uint64_t k = tcf_vain_key(&w, 0, 4);
    CHECK(!tcf_vain_has(k));
    tcf_vain_put(k);
    CHECK(tcf_vain_has(k));
    CHECK(!tcf_vain_has(k ^ 0x10000));      /* another key in the same slot is not it */
    tcf_fk_changed();                        /* an entry made, ready, bad or evicted */
    uint64_t k2 = tcf_vain_key(&w, 0, 4);
    CHECK(k2 != k);
    CHECK(!tcf_vain_has(k2));
}

int main(void)
{
    RUN(same_chain_same_key);
    RUN(what_planning_reads_changes_key);
    RUN(opaque_launch_counts_by_place_only);
    RUN(epoch_makes_remembered_chains_stale);
    return check_main_end();
}
