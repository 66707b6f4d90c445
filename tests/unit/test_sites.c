/* Hold sites (exec/sites.c): a place is held until its held windows fused nothing twice in
 * a row, then passed, re-checked after 16, 32, ... passes (at most 1024) and after the
 * kernel table changed; one fused window makes it held for good. Places are told apart by
 * the event before the starting kernel and by the stream. */
#include <stdint.h>
#include <string.h>

#include "capture/window.h"
#include "exec/internal.h"
#include "check.h"

static tcf_kernel_t kern_a = { .id = 1 }, kern_b = { .id = 2 }, kern_c = { .id = 3 };
static tcf_event_t ev[2];
static tcf_window_t w = { .ctx = 0x1234, .stream = 0x77, .ev = ev };

/* Decisions until the first that is not a pass; how many passes came before it. */
static unsigned passes_until(uint64_t site, tcf_site_decision_t *then)
{
    unsigned n = 0;
    while ((*then = tcf_site_hold(site)) == TCF_SITE_PASS && n < 100000)
        n++;
    return n;
}

TEST(keys_tell_places_apart)
{
    memset(ev, 0, sizeof ev);
    w.nev = 0;
    uint64_t none = tcf_site_key(&w, &kern_a);
    CHECK(none != 0);
    CHECK_EQ_U64(tcf_site_key(&w, &kern_a), none);
    CHECK(tcf_site_key(&w, &kern_b) != none);            /* another starting kernel */
    ev[0].kind = TCF_EV_LAUNCH, ev[0].u.l.k = &kern_b;
    w.nev = 1;
    uint64_t after_b = tcf_site_key(&w, &kern_a);
    CHECK(after_b != none);                               /* after a launch of b */
    ev[0].u.l.k = &kern_c;
    CHECK(tcf_site_key(&w, &kern_a) != after_b);          /* after a launch of c */
    ev[0].kind = TCF_EV_FREE;
    uint64_t after_free = tcf_site_key(&w, &kern_a);
    CHECK(after_free != none && after_free != after_b);   /* after a free */
    ev[0].kind = TCF_EV_LAUNCH, ev[0].u.l.k = &kern_b;
    w.stream = 0x88;
    CHECK(tcf_site_key(&w, &kern_a) != after_b);          /* on another stream */
    w.stream = 0x77;
}

/* Fuse mode only counts the launches it cannot decode (tcf_window_pass_launch): the site
 * of the launch after one is keyed by that kernel, as if it had been recorded, until
 * something is recorded after it. */
TEST(a_counted_launch_is_the_launch_before)
{
    memset(ev, 0, sizeof ev);
    w.nev = 0, w.pass_at = 0;
    uint64_t none = tcf_site_key(&w, &kern_a);
    ev[0].kind = TCF_EV_LAUNCH, ev[0].u.l.k = &kern_b;
    w.nev = 1;
    uint64_t after_b = tcf_site_key(&w, &kern_a);
    w.nev = 0;
    CHECK(tcf_window_pass_launch(&w, &kern_b) == 1);     /* no trace: counted only */
    CHECK_EQ_U64(tcf_site_key(&w, &kern_a), after_b);     /* b counted = b recorded */
    ev[0].u.l.k = &kern_c;
    w.nev = 1;                                            /* c recorded after it */
    CHECK(tcf_site_key(&w, &kern_a) != after_b);
    CHECK(tcf_window_pass_launch(&w, &kern_b) == 1);      /* then b counted again */
    CHECK_EQ_U64(tcf_site_key(&w, &kern_a), after_b);
    w.nev = 0, w.pass_at = 0;                             /* the window closed */
    CHECK_EQ_U64(tcf_site_key(&w, &kern_a), none);
}

TEST(vain_twice_then_passed_and_rechecked)
{
    uint64_t s = 0xabcdef0123456001ull;
    CHECK_EQ_INT(tcf_site_hold(s), TCF_SITE_HOLD);        /* unknown: held */
    tcf_site_done(s, 0);
    CHECK_EQ_INT(tcf_site_hold(s), TCF_SITE_HOLD);        /* once in vain: still held */
    tcf_site_done(s, 0);
    tcf_site_decision_t then;
    CHECK_EQ_INT(passes_until(s, &then), 15);             /* passed; the 16th re-checks */
    CHECK_EQ_INT(then, TCF_SITE_PROBE);
    tcf_site_done(s, 0);                                  /* the re-check fused nothing */
    CHECK_EQ_INT(passes_until(s, &then), 31);             /* so the next comes later */
    CHECK_EQ_INT(then, TCF_SITE_PROBE);
    for (int i = 0; i < 20; i++) {                        /* it keeps fusing nothing */
        tcf_site_done(s, 0);
        passes_until(s, &then);
    }
    tcf_site_done(s, 0);
    CHECK_EQ_INT(passes_until(s, &then), 1023);           /* at most 1024 apart */
    tcf_site_done(s, 1);                                  /* the re-check fused */
    CHECK_EQ_INT(tcf_site_hold(s), TCF_SITE_HOLD);
    CHECK_EQ_INT(tcf_site_hold(s), TCF_SITE_HOLD);
}

TEST(new_kernels_recheck_at_once)
{
    uint64_t s = 0x1111222233334002ull;
    tcf_site_done(s, 0);
    tcf_site_done(s, 0);
    CHECK_EQ_INT(tcf_site_hold(s), TCF_SITE_PASS);
    tcf_fk_changed();                                     /* a kernel made ready, say */
    CHECK_EQ_INT(tcf_site_hold(s), TCF_SITE_PROBE_TABLE);
    CHECK_EQ_INT(tcf_site_hold(s), TCF_SITE_PROBE_TABLE); /* until a held window says */
    tcf_site_done(s, 0);
    CHECK_EQ_INT(tcf_site_hold(s), TCF_SITE_PASS);
}

TEST(fused_once_held_for_good)
{
    uint64_t s = 0x2222333344445004ull;
    tcf_site_done(s, 0);
    tcf_site_done(s, 1);                                  /* fused: held from now on */
    for (int i = 0; i < 10; i++)
        tcf_site_done(s, 0);                              /* vain holds now and then */
    CHECK_EQ_INT(tcf_site_hold(s), TCF_SITE_HOLD);
}

TEST(another_site_in_the_slot_is_not_it)
{
    uint64_t s = 0x5555666677778003ull, t = s ^ (0x123ull << 44);  /* same slot, other tag */
    tcf_site_done(s, 0);
    tcf_site_done(s, 0);
    CHECK_EQ_INT(tcf_site_hold(s), TCF_SITE_PASS);
    CHECK_EQ_INT(tcf_site_hold(t), TCF_SITE_HOLD);        /* t was never held in vain */
    tcf_site_done(t, 1);                                  /* t fused: t takes the slot */
    CHECK_EQ_INT(tcf_site_hold(s), TCF_SITE_HOLD);        /* s forgotten: held again */
    tcf_site_done(s, 0);
    tcf_site_done(s, 0);                                  /* s in vain takes it back */
    CHECK_EQ_INT(tcf_site_hold(s), TCF_SITE_PASS);
    CHECK_EQ_INT(tcf_site_hold(t), TCF_SITE_HOLD);        /* t unknown: held */
}

int main(void)
{
    RUN(keys_tell_places_apart);
    RUN(a_counted_launch_is_the_launch_before);
    RUN(vain_twice_then_passed_and_rechecked);
    RUN(new_kernels_recheck_at_once);
    RUN(fused_once_held_for_good);
    RUN(another_site_in_the_slot_is_not_it);
    return check_main_end();
}
