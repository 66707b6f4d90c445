/* Starts: the set of kernels that begin a group whose generated kernel is ready. The launch
 * path reads it on every decoded launch to decide whether to hold (hold.c); flushes that
 * fuse a group and the worker, when it makes a kernel ready, add to it. The set itself is
 * a signature set (internal.h), as ahead.c's learned kernels are. */
#include "exec/internal.h"

int tcf_sigset_add(atomic_ullong *set, unsigned cap, uint64_t sig)
{
    unsigned i = tcf_sigset_slot(sig, cap);
    for (int p = 0; sig && p < TCF_SIGSET_PROBE; p++, i = (i + 1) & (cap - 1)) {
        /* Read first: every flush that fuses a group adds its start again, and a compare-
         * and-swap would take the cache line from every thread reading the set. */
        unsigned long long v = atomic_load_explicit(&set[i], memory_order_relaxed);
        if (v == sig)
            return 0;
        if (!v) {
            if (atomic_compare_exchange_strong(&set[i], &v, sig))
                return 1;
            if (v == sig)
                return 0;
        }
    }
    return 0;
}

/* Starts: the kernel of the first launch of each group whose generated kernel is ready
 * (tcf_fuse_start_sig). Full (or past the probe): no new starts, so those chains keep
 * running as issued. */
atomic_ullong tcf_starts[TCF_STARTS];

void tcf_fuse_start_add(uint64_t sig)
{
    tcf_sigset_add(tcf_starts, TCF_STARTS, sig);
}
