/* Blocks: the size of each block the application allocated stream-ordered while fuse mode
 * acts, by address. A held free carries its block's size (hold.c), so that an allocation
 * of that size on the same stream can take the held block instead of the pool's
 * (tcf_exec_alloc). A block allocated before fuse mode acted, or one the table could not
 * keep, has no size: its free is held as before and never handed over.
 *
 * Open addressing, linear probing, deletion by backward shift (no tombstones), grown at
 * half full. One mutex: PyTorch's allocator already serializes its calls under its own
 * lock, so it is uncontended; a lookup is a few tens of ns beside the driver's call. */
#include <stdlib.h>

#include "exec/internal.h"

typedef struct {
    uint64_t ptr;    /* 0: empty (the driver never hands out address 0) */
    uint64_t size;
} tcf_block_t;

static pthread_mutex_t tcf_blk_lock = PTHREAD_MUTEX_INITIALIZER;
static tcf_block_t *tcf_blk;
static size_t tcf_blk_cap, tcf_blk_n;   /* cap: a power of two, or 0 before the first */

static size_t tcf_blk_slot(uint64_t ptr, size_t cap)
{
    /* Blocks are 512-byte aligned at least: the low bits carry nothing. */
    return (size_t)(((ptr >> 9) * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static void tcf_blk_insert(tcf_block_t *t, size_t cap, uint64_t ptr, uint64_t size)
{
    size_t i = tcf_blk_slot(ptr, cap);
    while (t[i].ptr && t[i].ptr != ptr)
        i = (i + 1) & (cap - 1);
    if (!t[i].ptr)
        tcf_blk_n++;
    t[i].ptr = ptr;
    t[i].size = size;
}

/* Doubles the table (lock held); 0, or -1 when out of memory (the table is left as it
 * was). */
static int tcf_blk_grow(void)
{
    size_t cap = tcf_blk_cap ? tcf_blk_cap * 2 : 1024;
    tcf_block_t *t = tcf_calloc(cap, sizeof *t);
    if (!t)
        return -1;
    tcf_block_t *old = tcf_blk;
    size_t oldcap = tcf_blk_cap;
    tcf_blk_n = 0;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].ptr)
            tcf_blk_insert(t, cap, old[i].ptr, old[i].size);
    tcf_blk = t;
    tcf_blk_cap = cap;
    tcf_free(old);
    return 0;
}

void tcf_blocks_put(uint64_t ptr, uint64_t size)
{
    if (!ptr || !size)
        return;
    pthread_mutex_lock(&tcf_blk_lock);
    if ((tcf_blk_n + 1) * 2 <= tcf_blk_cap || tcf_blk_grow() == 0)
        tcf_blk_insert(tcf_blk, tcf_blk_cap, ptr, size);
    else
        atomic_fetch_add_explicit(&tcf_ctr.oom, 1, memory_order_relaxed);
    pthread_mutex_unlock(&tcf_blk_lock);
}

/* ptr's slot, or the empty slot that ends its probe (lock held, table made, ptr nonzero). */
static size_t tcf_blk_find(uint64_t ptr)
{
    size_t mask = tcf_blk_cap - 1, i = tcf_blk_slot(ptr, tcf_blk_cap);
    while (tcf_blk[i].ptr && tcf_blk[i].ptr != ptr)
        i = (i + 1) & mask;
    return i;
}

uint64_t tcf_blocks_size(uint64_t ptr)
{
    uint64_t size = 0;
    pthread_mutex_lock(&tcf_blk_lock);
    if (tcf_blk_cap && ptr)
        size = tcf_blk[tcf_blk_find(ptr)].size;   /* 0 at an empty slot */
    pthread_mutex_unlock(&tcf_blk_lock);
    return size;
}

uint64_t tcf_blocks_take(uint64_t ptr)
{
    uint64_t size = 0;
    pthread_mutex_lock(&tcf_blk_lock);
    if (tcf_blk_cap && ptr) {
        size_t mask = tcf_blk_cap - 1, i = tcf_blk_find(ptr);
        if (tcf_blk[i].ptr) {
            size = tcf_blk[i].size;
            /* Backward shift: later entries of the run move up into the hole unless their
             * home slot lies cyclically after the hole (they would become unreachable). */
            size_t hole = i;
            for (size_t j = (i + 1) & mask; tcf_blk[j].ptr; j = (j + 1) & mask) {
                size_t home = tcf_blk_slot(tcf_blk[j].ptr, tcf_blk_cap);
                if (((j - home) & mask) >= ((j - hole) & mask)) {
                    tcf_blk[hole] = tcf_blk[j];
                    hole = j;
                }
            }
            tcf_blk[hole].ptr = 0;
            tcf_blk[hole].size = 0;
            tcf_blk_n--;
        }
    }
    pthread_mutex_unlock(&tcf_blk_lock);
    return size;
}

size_t tcf_blocks_count(void)
{
    pthread_mutex_lock(&tcf_blk_lock);
    size_t n = tcf_blk_n;
    pthread_mutex_unlock(&tcf_blk_lock);
    return n;
}
