/* Chains planned in vain: a window's chain that ran as issued is planned only to learn
 * (queue its groups' compiles, find a ready kernel's start). When that plan found no ready
 * kernel and the kernel table has not changed since, planning the same chain again finds
 * the same groups and the same entries, and learns nothing: a host-bound program whose
 * chains never fuse (libtorch_block on the H100: every chain planned every iteration, fuse
 * mode 1.35x eager's time) paid for it on every iteration.
 *
 * The key is exact: everything the plan and the table lookups read (the context, each
 * event's kind, each decoded launch's kernel, dims and parameter bytes, from which its op
 * is decoded, each free's and allocation's pointer and size) and the table's epoch, which
 * moves whenever an entry is made, becomes ready or bad, or is evicted. Pointer values are
 * in it, so a chain repeats only where the allocator hands out the same blocks (PyTorch's
 * caching allocator does, iteration after iteration); a miss costs one plan, as before.
 * The set is direct-mapped and lossy (a newer key takes the slot): bounded, lock-free. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "exec/internal.h"

#define TCF_VAIN_SLOTS 4096

static atomic_ullong tcf_vain[TCF_VAIN_SLOTS];
atomic_ullong tcf_fk_epoch;

uint64_t tcf_vain_key(const tcf_window_t *w, uint32_t from, uint32_t n)
{
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    uint64_t head[2] = { w->ctx, atomic_load_explicit(&tcf_fk_epoch, memory_order_acquire) };
    XXH3_64bits_update(&st, head, sizeof head);
    for (uint32_t i = from; i < from + n; i++) {
        const tcf_event_t *e = &w->ev[i];
        uint32_t rec[10] = { e->kind | (uint32_t)e->dec << 8 };
        if (e->kind == TCF_EV_LAUNCH && (e->dec == TCF_DEC_OP || e->dec == TCF_DEC_REDUCE)) {
            rec[1] = e->u.l.k->id;
            rec[2] = e->u.l.grid[0], rec[3] = e->u.l.grid[1], rec[4] = e->u.l.grid[2];
            rec[5] = e->u.l.block[0], rec[6] = e->u.l.block[1], rec[7] = e->u.l.block[2];
            rec[8] = e->u.l.smem, rec[9] = e->u.l.pbytes;
            XXH3_64bits_update(&st, rec, sizeof rec);
            XXH3_64bits_update(&st, w->arena + e->u.l.poff, e->u.l.pbytes);
        } else if (e->kind == TCF_EV_FREE || e->kind == TCF_EV_ALLOC) {
            uint64_t m[2] = { e->u.m.ptr, e->kind == TCF_EV_ALLOC ? e->u.m.size : 0 };
            XXH3_64bits_update(&st, rec, sizeof rec[0]);
            XXH3_64bits_update(&st, m, sizeof m);
        } else {  /* opaque to the planner, or passed over: only its place counts */
            rec[0] = e->dec == TCF_DEC_AHEAD ? 0xfe : 0xff;
            XXH3_64bits_update(&st, rec, sizeof rec[0]);
        }
    }
    uint64_t h = XXH3_64bits_digest(&st);
    return h ? h : 1;
}

int tcf_vain_has(uint64_t key)
{
    return atomic_load_explicit(&tcf_vain[key & (TCF_VAIN_SLOTS - 1)], memory_order_relaxed) ==
           key;
}

void tcf_vain_put(uint64_t key)
{
    atomic_ullong *slot = &tcf_vain[key & (TCF_VAIN_SLOTS - 1)];
    if (atomic_load_explicit(slot, memory_order_relaxed) != key)  /* keep the line shared */
        atomic_store_explicit(slot, key, memory_order_relaxed);
}
