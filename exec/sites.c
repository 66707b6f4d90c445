/* Hold sites: where in a program holding has paid.
 *
 * A window is held from a launch whose kernel starts a group with a ready generated kernel
 * (starts.c). That kernel may start a fusable chain in one place of the program and sit
 * alone between two GEMMs in another: there the held window fuses nothing, and the GPU
 * waited for the host for nothing (on a host-bound program, every iteration; the libtorch
 * C++ block on the H100 held 198 windows in 25 iterations that fused nothing, beside 397
 * that fused; with this policy 8). So the decision to hold is remembered per site: the
 * starting kernel with the event that came before it on its stream (the previous launch's
 * kernel, or the kind of the previous event, or none after a boundary), and the stream,
 * which tells the places of one kernel apart.
 *
 * A site whose held windows fused nothing TCF_SITE_VAIN times in a row, and never fused,
 * is passed: its launches go out at once, kept in the window to learn from as before. It
 * is held again to re-check after 16 passes, then 32, ... up to 1024 while it keeps fusing
 * nothing, and at the next occurrence after the kernel table changed (a kernel made ready
 * may make it fuse). A site that fused once is held from then on, as before the policy:
 * on the H100, GPT-2 1 x 32's held windows fuse 298 times in 299, and a site passed after
 * two vain holds (a chain cut short, a kernel still compiling) lost its
 * fusion for the passes that followed. Unknown sites are held too: a program's fused
 * chains are never given up on a guess.
 *
 * The table is direct-mapped and lossy, one word a slot (tag, epoch, fused once, passes,
 * streak), read and written with relaxed atomics: threads racing on a slot lose an update
 * at worst, which costs a hold or a pass, never a result (holding or not, the work runs in
 * order).
 */
#include "exec/internal.h"

#define TCF_SITES 4096
#define TCF_SITE_VAIN 2         /* held windows in a row that fused nothing: pass */
#define TCF_SITE_EVERY 16u      /* passes between re-checks, doubling per vain re-check */
#define TCF_SITE_EVERY_SHIFT 6  /* ... up to 16 << 6 = 1024 */

/* A slot: tag (24 bits of the site) | epoch (15 bits) | fused once (1 bit) | passes (16
 * bits) | streak (8 bits). */
static atomic_ullong tcf_sites[TCF_SITES];

#define TCF_TAG(site) ((site) >> 40)
#define TCF_EPOCH(e) ((unsigned)(e) & 0x7fff)
#define TCF_FUSED (1ull << 24)
#define TCF_SLOT(tag, epoch, passes, streak)                                            \
    ((uint64_t)(tag) << 40 | (uint64_t)TCF_EPOCH(epoch) << 25 |                         \
     (uint64_t)((passes) & 0xffff) << 8 | (uint64_t)((streak) & 0xff))

uint64_t tcf_site_key(const tcf_window_t *w, const tcf_kernel_t *k)
{
    uint64_t prev = 0;  /* nothing before it since the window opened */
    if (__atomic_load_n(&w->pass_at, __ATOMIC_RELAXED) == w->nev + 1) {
        /* the launch before it was counted, not recorded (tcf_window_pass_launch) */
        prev = (uint64_t)__atomic_load_n(&w->pass_kid, __ATOMIC_RELAXED) << 8;
    } else if (w->nev) {
        const tcf_event_t *e = &w->ev[w->nev - 1];
        prev = e->kind == TCF_EV_LAUNCH ? (uint64_t)e->u.l.k->id << 8 : 0x80u + e->kind;
    }
    uint64_t h = ((uint64_t)k->id * 0x9E3779B97F4A7C15ull) ^ (prev * 0xC2B2AE3D27D4EB4Full) ^
                 (w->stream * 0x165667B19E3779F9ull);
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return h ? h : 1;
}

tcf_site_decision_t tcf_site_hold(uint64_t site)
{
    atomic_ullong *slot = &tcf_sites[site & (TCF_SITES - 1)];
    uint64_t v = atomic_load_explicit(slot, memory_order_relaxed);
    if (v >> 40 != TCF_TAG(site) || (v & TCF_FUSED))
        return TCF_SITE_HOLD;                 /* not seen held in vain, or fused once */
    unsigned streak = v & 0xff, passes = (v >> 8) & 0xffff, epoch = (v >> 25) & 0x7fff;
    if (streak < TCF_SITE_VAIN)
        return TCF_SITE_HOLD;
    unsigned now = TCF_EPOCH(atomic_load_explicit(&tcf_fk_epoch, memory_order_relaxed));
    if (epoch != now)
        return TCF_SITE_PROBE_TABLE;          /* new kernels since: check again */
    unsigned shift = streak - TCF_SITE_VAIN;
    unsigned every = TCF_SITE_EVERY << (shift < TCF_SITE_EVERY_SHIFT ? shift : TCF_SITE_EVERY_SHIFT);
    if (passes + 1 >= every) {
        atomic_store_explicit(slot, TCF_SLOT(TCF_TAG(site), epoch, 0, streak),
                              memory_order_relaxed);
        return TCF_SITE_PROBE;
    }
    atomic_store_explicit(slot, TCF_SLOT(TCF_TAG(site), epoch, passes + 1, streak),
                          memory_order_relaxed);
    return TCF_SITE_PASS;
}

void tcf_site_done(uint64_t site, int fused)
{
    atomic_ullong *slot = &tcf_sites[site & (TCF_SITES - 1)];
    uint64_t v = atomic_load_explicit(slot, memory_order_relaxed);
    int mine = v >> 40 == TCF_TAG(site);
    if (fused) {  /* holding paid here: held from now on (written once: a shared line) */
        uint64_t want = TCF_SLOT(TCF_TAG(site), 0, 0, 0) | TCF_FUSED;
        if (v != want)
            atomic_store_explicit(slot, want, memory_order_relaxed);
        return;
    }
    if (mine && (v & TCF_FUSED))
        return;   /* fused once: a vain hold now and then does not change that */
    unsigned streak = mine ? (unsigned)(v & 0xff) : 0;
    if (streak < 0xff)
        streak++;
    unsigned now = TCF_EPOCH(atomic_load_explicit(&tcf_fk_epoch, memory_order_relaxed));
    atomic_store_explicit(slot, TCF_SLOT(TCF_TAG(site), now, 0, streak), memory_order_relaxed);
}
