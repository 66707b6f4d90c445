/* Starts: the set of kernels that begin a group whose generated kernel is ready. The launch
 * path reads it on every decoded launch to decide whether to hold (hold.c); flushes that
 * fuse a group and the worker, when it makes a kernel ready, add to it. */
#include "exec/internal.h"

/* Starts: the kernel of the first launch of each group whose generated kernel is ready
 * (tcf_fuse_start_sig). A set of nonzero words, open addressing, read
 * without a lock on every decoded launch; entries are never removed. Full (or past a
 * short probe): no new starts, so those chains keep running as issued. */
atomic_ullong tcf_starts[TCF_STARTS];

void tcf_fuse_start_add(uint64_t sig)
{
    unsigned i = tcf_start_slot(sig);
    for (int p = 0; sig && p < TCF_STARTS_PROBE; p++, i = (i + 1) & (TCF_STARTS - 1)) {
        /* Read first: every flush that fuses a group adds its start again, and a compare-
         * and-swap would take the cache line from every thread reading the set. */
        unsigned long long v = atomic_load_explicit(&tcf_starts[i], memory_order_relaxed);
        if (v == sig || (!v && (atomic_compare_exchange_strong(&tcf_starts[i], &v, sig) ||
                                v == sig)))
            return;
    }
}

