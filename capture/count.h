/* capture/count.h: the counters every launch raises, kept per thread.
 *
 * A counter (an atomic_ullong anywhere: capture's totals, a kernel's launches, exec's and
 * replay's figures) raised with tcf_count is raised in the calling thread's own table,
 * without a locked instruction, and reaches the counter itself when tcf_count_settle runs
 * (the summary, at exit) or when the thread ends. Why: a locked add on a cache line
 * another thread also adds to moves the line between cores on every launch; with two
 * threads launching on their own streams (tests/stub/progs/mt) the two adds per launch of
 * observe mode made 400,000 launches a thread take 111 ms instead of 28.
 *
 * Rules:
 * - Only counters that nothing reads before the summary may be raised this way: until
 *   tcf_count_settle, a thread's counts are its own. (Figures that decide anything during
 *   the run keep their atomic adds.)
 * - tcf_count_settle adds every live thread's counts since its last settle, and is safe
 *   while those threads keep counting (what they count after it stays for the next).
 *   Counts of threads that ended were added when they ended.
 * - A thread's table has room for TCF_COUNT_SLOTS counters; past that, or where a table
 *   could not be had (no memory), tcf_count adds to the counter itself, as before.
 * - Tables of ended threads are kept for the next new thread: a program that starts a
 *   thread per request does not grow tcfuse's memory.
 */
#ifndef TCF_CAPTURE_COUNT_H
#define TCF_CAPTURE_COUNT_H

#include <stdatomic.h>
#include <stdint.h>

#define TCF_COUNT_SLOTS 512

/* A thread's table (count.c): the count of each counter at its slot, found from the
 * counter's address (8-byte counters side by side take neighbouring slots). Exposed for
 * tcf_count's inline first probe only. */
typedef struct {
    atomic_uintptr_t addr;    /* the counter; 0: free */
    atomic_ullong    n;       /* counted by the owner */
    uint64_t         settled; /* of n, added to the counter (under the table's lock) */
} tcf_cslot_t;
extern _Thread_local tcf_cslot_t *tcf_count_mine __attribute__((tls_model("initial-exec")));

static inline uint32_t tcf_count_slot(const atomic_ullong *c)
{
    return (uint32_t)((uintptr_t)c >> 3) & (TCF_COUNT_SLOTS - 1);
}

/* *c += n, in this thread's table (see above). */
void tcf_count_add(atomic_ullong *c, uint64_t n);
/* *c += 1: the counter's own slot inline (where it almost always is), else count.c. */
static inline void tcf_count(atomic_ullong *c)
{
    tcf_cslot_t *t = tcf_count_mine;
    if (t) {
        tcf_cslot_t *s = &t[tcf_count_slot(c)];
        if (atomic_load_explicit(&s->addr, memory_order_relaxed) == (uintptr_t)c) {
            atomic_store_explicit(&s->n, atomic_load_explicit(&s->n, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
            return;
        }
    }
    tcf_count_add(c, 1);
}

/* Adds every thread's counts not added yet to their counters. */
void tcf_count_settle(void);
/* Tables made so far (for tests: ended threads' tables are reused). */
unsigned tcf_count_tables(void);

#endif
