/* Reuse: freed stream-ordered blocks kept for the next allocation of their size on their
 * stream (fuse mode, TCFUSE_REUSE bytes at most).
 *
 * Fuse mode selects PyTorch's cudaMallocAsync allocator so that frees are visible; its
 * every allocation and free is then a driver call, where PyTorch's own caching allocator
 * serves them in user space. On the H100 the training step's 1380 allocations and frees
 * per iteration cost the driver about 14 ms of host time an iteration with nothing held
 * (TCFUSE_FUSION=0; 7 us an allocation, 3 us a free), and 17-23 ms under fuse mode,
 * where held frees reach the pool late (docs/PERF.md): the step became host-bound. Kept
 * here, a block goes to the next allocation of its exact size on the stream that freed
 * it, as the pool itself would hand it out (stream order: its new users run after its
 * old ones); it never leaves its stream, and no other stream, thread or pool can see it
 * meanwhile, since the driver still counts it allocated. The planner sees the free as
 * before (the old buffer dies; what is written there next is a new one).
 *
 * The default cap, 16 GiB, is what the training step keeps at its peak on the H100 (PyTorch
 * sets the pool's release threshold to the maximum: the pool would have kept those bytes
 * reserved too); at 2 GiB the cap filled and the step gained nothing (docs/PERF.md).
 *
 * Kept blocks go back to the driver when an allocation fails for memory (the caller
 * retries), before the calls that give memory back or tear streams and contexts down
 * (cuMemPoolTrimTo, which torch.cuda.empty_cache calls; cuStreamDestroy; cuCtxDestroy;
 * cuDevicePrimaryCtxReset), and not at all while the application captures a stream (its
 * allocations and frees are graph nodes then). A block past the cap, or with no node
 * left, goes to the driver at once.
 *
 * A block is kept for its context too when its stream is the legacy or a per-thread
 * default stream: those are the same handles (0, 1, 2) in every context, and a block of one
 * device must not go to another device's allocation (a process driving two GPUs from one
 * thread, as models split over devices are). A stream of the application's own is one
 * context's. A block given back goes back under its own context.
 *
 * Nodes are allocated once (no allocation on the hot path: base/sigdefer.c); buckets by
 * (stream, context, size), each a last-in first-out list, as the pool hands out its most recently
 * freed block first. One mutex, uncontended in practice (PyTorch's allocator serializes its
 * calls under its own lock). */
#include <stdlib.h>
#include <string.h>

#include "exec/internal.h"

#define TCF_REUSE_NODES 32768u
#define TCF_REUSE_BUCKETS 4096u
#define TCF_NONE UINT32_MAX

typedef struct {
    uint64_t ptr, size, stream, ctx;   /* ctx: 0 for a stream of the application's own */
    uint32_t next;   /* in its bucket, or in the free list */
} tcf_rnode_t;

static pthread_mutex_t tcf_reuse_lock = PTHREAD_MUTEX_INITIALIZER;
static tcf_rnode_t *tcf_rn;           /* TCF_REUSE_NODES, made at the first put */
static uint32_t tcf_rbucket[TCF_REUSE_BUCKETS];
static uint32_t tcf_rfree;            /* the first unused node */
static int tcf_rn_failed;
/* Written under the lock, read without it for the fast paths: relaxed atomics both ways. */
static uint64_t tcf_rbytes, tcf_rcount;
#define TCF_RADD(v, d) __atomic_store_n(&(v), __atomic_load_n(&(v), __ATOMIC_RELAXED) + (d), \
                                        __ATOMIC_RELAXED)
atomic_int tcf_reuse_off;             /* a child after fork: nothing kept, nothing handed */

/* The context a block on stream is kept for: for the handles every context shares (0:
 * legacy, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) the one the caller knows the stream in
 * (its window's), or the calling thread's when it knows none; else 0. */
static uint64_t tcf_reuse_ctx(uint64_t stream, uint64_t ctx)
{
    CUcontext c = NULL;
    if (stream > (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD)
        return 0;
    if (ctx || !tcf_drv.ctx_get_current || tcf_drv.ctx_get_current(&c) != CUDA_SUCCESS)
        return ctx;
    return (uint64_t)(uintptr_t)c;
}

static uint32_t tcf_rbucket_of(uint64_t size, uint64_t stream, uint64_t ctx)
{
    uint64_t h = (size * 0x9E3779B97F4A7C15ull) ^ (stream * 0xC2B2AE3D27D4EB4Full) ^
                 (ctx * 0x94D049BB133111EBull);
    return (uint32_t)((h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ull >> 52) & (TCF_REUSE_BUCKETS - 1);
}

static int tcf_rn_make(void)   /* lock held */
{
    if (tcf_rn)
        return 0;
    if (tcf_rn_failed || !(tcf_rn = tcf_calloc(TCF_REUSE_NODES, sizeof *tcf_rn))) {
        tcf_rn_failed = 1;
        return -1;
    }
    for (uint32_t i = 0; i < TCF_REUSE_NODES; i++)
        tcf_rn[i].next = i + 1 < TCF_REUSE_NODES ? i + 1 : TCF_NONE;
    for (uint32_t b = 0; b < TCF_REUSE_BUCKETS; b++)
        tcf_rbucket[b] = TCF_NONE;
    tcf_rfree = 0;
    return 0;
}

/* The cap in effect: TCFUSE_REUSE when set; its default (16 GiB) at most a quarter of the
 * device's memory, so that a smaller GPU keeps room for what asks the driver how much is
 * free (workspace heuristics) as well. Settled at the first put after the option's value
 * changes (the unit tests change it), lock held: a context is current then. */
static uint64_t tcf_rcap, tcf_rcap_for = UINT64_MAX;

static uint64_t tcf_reuse_cap(void)
{
    uint64_t want = (uint64_t)tcf_cfg.reuse;
    if (want == tcf_rcap_for)
        return tcf_rcap;
    uint64_t cap = want;
    int set = 0;
    for (size_t i = 0; i < tcf_config_count(); i++)
        if (!strcmp(tcf_config_info(i)->env, "TCFUSE_REUSE"))
            set = tcf_config_source(i) == TCF_SRC_ENV;
    CUdevice dev;
    size_t total = 0;
    if (!set && tcf_drv.ctx_get_device && tcf_drv.device_total_mem) {
        if (tcf_drv.ctx_get_device(&dev) != CUDA_SUCCESS ||
            tcf_drv.device_total_mem(&total, dev) != CUDA_SUCCESS)
            return cap < 1ull << 30 ? cap : 1ull << 30;   /* no context here: ask again */
        if (total / 4 < cap)
            cap = total / 4;
    }
    tcf_rcap = cap, tcf_rcap_for = want;
    return cap;
}

static int tcf_reuse_usable(void)
{
    return tcf_cfg.reuse && !atomic_load_explicit(&tcf_reuse_off, memory_order_relaxed) &&
           !atomic_load_explicit(&tcf_app_captures, memory_order_relaxed);
}

int tcf_reuse_put(uint64_t ptr, uint64_t size, uint64_t stream, uint64_t ctx)
{
    if (!size || !tcf_reuse_usable())
        return 0;
    ctx = tcf_reuse_ctx(stream, ctx);
    int kept = 0;
    pthread_mutex_lock(&tcf_reuse_lock);
    if (__atomic_load_n(&tcf_rbytes, __ATOMIC_RELAXED) + size <= tcf_reuse_cap() &&
        tcf_rn_make() == 0 &&
        tcf_rfree != TCF_NONE) {
        uint32_t i = tcf_rfree, b = tcf_rbucket_of(size, stream, ctx);
        tcf_rfree = tcf_rn[i].next;
        tcf_rn[i] = (tcf_rnode_t){ .ptr = ptr, .size = size, .stream = stream, .ctx = ctx,
                                   .next = tcf_rbucket[b] };
        tcf_rbucket[b] = i;
        TCF_RADD(tcf_rbytes, size);
        TCF_RADD(tcf_rcount, 1);
        uint64_t now = __atomic_load_n(&tcf_rbytes, __ATOMIC_RELAXED);
        if (now > atomic_load_explicit(&tcf_xctr.reuse_peak, memory_order_relaxed))
            atomic_store_explicit(&tcf_xctr.reuse_peak, now, memory_order_relaxed);
        kept = 1;
    }
    pthread_mutex_unlock(&tcf_reuse_lock);
    atomic_fetch_add_explicit(kept ? &tcf_xctr.reuse_kept : &tcf_xctr.reuse_full, 1,
                              memory_order_relaxed);
    return kept;
}

uint64_t tcf_reuse_get(uint64_t size, uint64_t stream, uint64_t ctx)
{
    if (!size || !tcf_reuse_usable() || !__atomic_load_n(&tcf_rcount, __ATOMIC_RELAXED))
        return 0;
    uint64_t ptr = 0;
    ctx = tcf_reuse_ctx(stream, ctx);
    pthread_mutex_lock(&tcf_reuse_lock);
    if (tcf_rn) {
        uint32_t b = tcf_rbucket_of(size, stream, ctx), *link = &tcf_rbucket[b];
        for (uint32_t i = *link; i != TCF_NONE; link = &tcf_rn[i].next, i = *link) {
            if (tcf_rn[i].size != size || tcf_rn[i].stream != stream || tcf_rn[i].ctx != ctx)
                continue;
            ptr = tcf_rn[i].ptr;
            *link = tcf_rn[i].next;
            tcf_rn[i].next = tcf_rfree;
            tcf_rfree = i;
            TCF_RADD(tcf_rbytes, -size);
            TCF_RADD(tcf_rcount, -1);
            break;
        }
    }
    pthread_mutex_unlock(&tcf_reuse_lock);
    if (ptr)
        atomic_fetch_add_explicit(&tcf_xctr.reuse_served, 1, memory_order_relaxed);
    return ptr;
}

/* Takes one kept block out (lock held), or returns 0. */
static int tcf_reuse_pop(tcf_rnode_t *out)
{
    for (uint32_t b = 0; tcf_rn && __atomic_load_n(&tcf_rcount, __ATOMIC_RELAXED) &&
                         b < TCF_REUSE_BUCKETS; b++) {
        uint32_t i = tcf_rbucket[b];
        if (i == TCF_NONE)
            continue;
        *out = tcf_rn[i];
        tcf_rbucket[b] = tcf_rn[i].next;
        tcf_rn[i].next = tcf_rfree;
        tcf_rfree = i;
        TCF_RADD(tcf_rbytes, -out->size);
        TCF_RADD(tcf_rcount, -1);
        return 1;
    }
    return 0;
}

unsigned tcf_reuse_release(const char *why)
{
    if (!__atomic_load_n(&tcf_rcount, __ATOMIC_RELAXED))
        return 0;
    unsigned n = 0;
    for (;;) {
        tcf_rnode_t r;
        pthread_mutex_lock(&tcf_reuse_lock);
        int got = tcf_reuse_pop(&r);
        pthread_mutex_unlock(&tcf_reuse_lock);
        if (!got)
            break;
        /* Its size left the block table at its free (tcf_exec_free): nothing to forget.
         * A block kept for another context than this thread's goes back under its own
         * (its stream's handle names that context's default stream). */
        CUcontext prev = NULL;
        int sw = r.ctx && tcf_drv.ctx_get_current && tcf_drv.ctx_set_current &&
                 tcf_drv.ctx_get_current(&prev) == CUDA_SUCCESS &&
                 (uint64_t)(uintptr_t)prev != r.ctx &&
                 tcf_drv.ctx_set_current((CUcontext)(uintptr_t)r.ctx) == CUDA_SUCCESS;
        if (tcf_drv.mem_free_async &&
            tcf_drv.mem_free_async((CUdeviceptr)r.ptr, (CUstream)(uintptr_t)r.stream) !=
                CUDA_SUCCESS)
            atomic_fetch_add_explicit(&tcf_xctr.held_failed, 1, memory_order_relaxed);
        if (sw)
            tcf_drv.ctx_set_current(prev);
        n++;
    }
    if (n) {
        atomic_fetch_add_explicit(&tcf_xctr.reuse_released, n, memory_order_relaxed);
        tcf_log(TCF_LOG_DEBUG, "reuse: %u kept blocks back to the driver (%s)", n, why);
    }
    return n;
}

/* Boundaries that give memory back or end a stream or context: kept blocks go first. */
void tcf_reuse_boundary(const char *call)
{
    if (!__atomic_load_n(&tcf_rcount, __ATOMIC_RELAXED) || call[0] != 'c' || call[1] != 'u')
        return;
    if (!strcmp(call, "cuMemPoolTrimTo") || !strcmp(call, "cuStreamDestroy") ||
        !strcmp(call, "cuCtxDestroy") || !strcmp(call, "cuDevicePrimaryCtxReset"))
        tcf_reuse_release(call);
}

/* A forked child: the blocks belong to the parent's context; nothing is kept or freed. */
void tcf_reuse_forked(void)
{
    atomic_store(&tcf_reuse_off, 1);
}

/* Whether v lies inside a kept block (verification, rarely: a scan of every kept block).
 * For the application such a block is freed, as a block back in the pool is; the driver,
 * though, still counts it allocated. */
int tcf_reuse_holds(uint64_t v)
{
    if (!__atomic_load_n(&tcf_rcount, __ATOMIC_RELAXED))
        return 0;
    int in = 0;
    pthread_mutex_lock(&tcf_reuse_lock);
    for (uint32_t b = 0; tcf_rn && !in && b < TCF_REUSE_BUCKETS; b++)
        for (uint32_t i = tcf_rbucket[b]; i != TCF_NONE && !in; i = tcf_rn[i].next)
            in = v >= tcf_rn[i].ptr && v - tcf_rn[i].ptr < tcf_rn[i].size;
    pthread_mutex_unlock(&tcf_reuse_lock);
    return in;
}

uint64_t tcf_reuse_bytes(void)
{
    return __atomic_load_n(&tcf_rbytes, __ATOMIC_RELAXED);
}
