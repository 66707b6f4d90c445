/* Reserve: the stream-ordered pool grown once, at fuse mode's first allocation, to what
 * the same program had in use at its peak the last time it ran (or TCFUSE_POOL_RESERVE).
 *
 * Fuse mode selects PyTorch's cudaMallocAsync allocator (frees visible). Its pool starts
 * empty and grows a chunk at a time while the first iteration allocates: each growth is a
 * slow driver call (physical memory created and mapped). The training step's first
 * iteration makes about 250 of them, 56-63 ms of driver time, where PyTorch's caching
 * allocator takes few, large segments; with blocks kept for reuse (reuse.c) the pool
 * grows further than eager's would (docs/PERF.md: the first iteration under fuse mode).
 * One allocation of the size the pool will reach, freed at once, makes that one call
 * before the program's first kernel; the pool then serves the first iteration from memory
 * it holds (the training step's allocations: 4 ms of driver time instead of 56-63).
 *
 * How much: the program's peak, learned. At boundaries the pool's high watermark of
 * memory in use is read; at exit it is stored
 * in the disk cache under a key of the program's command line and executable, and the
 * next run of that command reserves it, with a margin for the pool's fragmentation. The
 * watermark is reset after the reserve's own allocation, so it is the program's alone (and
 * what PyTorch's memory statistics read is as it would have been). A program that needs
 * less than last time stores less, and its next run reserves less.
 *
 * Only where the pool keeps what it holds: its release threshold must be at least the
 * reserve (PyTorch sets it to the maximum), else the bytes would go back at the next
 * synchronization and the call would be wasted. At most the device's free memory less
 * TCF_RESERVE_MARGIN, so that what asks the driver how much is free still sees room, and
 * the pool is trimmed once if an allocation runs out of memory (wrap_mem.c retries it).
 * The driver's accounting is otherwise unchanged: the bytes are the pool's, as they would
 * be after the program's own peak. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache.h"
#include "exec/internal.h"

atomic_int tcf_reserve_started;

static atomic_uintptr_t tcf_rpool;             /* the pool the first allocation used, 0: none */
static atomic_ullong tcf_rused_high;           /* the highest watermark read */
static atomic_int tcf_rtrimmed, tcf_rforked;
static uint64_t tcf_rkey;                      /* the program's, 0: none */
static uint64_t tcf_rlearned;                  /* what the last run stored */
static uint64_t tcf_rgot, tcf_rns;             /* what the reserve did, for the summary */
static const char *tcf_rwhy;

#define TCF_RESERVE_MARGIN (1ull << 30)        /* left free beside the pool */

/* The program: its command line (every argument) and its executable. */
static uint64_t tcf_reserve_key(void)
{
    char buf[8192];
    size_t n = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r;
        while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
            n += (size_t)r;
        close(fd);
    }
    for (size_t i = 0; i < n; i++)
        if (!buf[i])
            buf[i] = '\x1f';   /* argument separator, kept: "a b" is not "a" "b" */
    buf[n] = 0;
    char exe[1024];
    ssize_t e = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[e > 0 ? e : 0] = 0;
    if (!n && !exe[0])
        return 0;
    return tcf_cache_key(TCF_CACHE_PROGRAM, buf, exe, 0);
}

/* The bytes to reserve: the option when set, else the last run's peak and a quarter more
 * for the pool's fragmentation. *none says why there are none. */
static uint64_t tcf_reserve_want(const char **none)
{
    for (size_t i = 0; i < tcf_config_count(); i++)
        if (!strcmp(tcf_config_info(i)->env, "TCFUSE_POOL_RESERVE") &&
            tcf_config_source(i) == TCF_SRC_ENV) {
            *none = "TCFUSE_POOL_RESERVE=0";
            return (uint64_t)tcf_cfg.pool_reserve;
        }
    void *d = NULL;
    size_t len = 0;
    *none = "nothing learned yet";
    if (!tcf_rkey || tcf_cache_get(tcf_rkey, TCF_CACHE_PROGRAM, &d, &len) != 0)
        return 0;
    if (len == sizeof tcf_rlearned)
        memcpy(&tcf_rlearned, d, sizeof tcf_rlearned);
    free(d);
    return tcf_rlearned + tcf_rlearned / 4;
}

static const char *tcf_reserve_grow(uint64_t want, const char *none, CUstream stream)
{
    CUdevice dev;
    CUmemoryPool pool;
    cuuint64_t thr = 0, zero = 0;
    size_t free_b = 0, total_b = 0;
    if (tcf_drv.ctx_get_device(&dev) != CUDA_SUCCESS ||
        tcf_drv.device_get_mem_pool(&pool, dev) != CUDA_SUCCESS ||
        tcf_drv.mem_pool_get_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr) !=
            CUDA_SUCCESS)
        return "no pool";
    atomic_store(&tcf_rpool, (uintptr_t)pool);   /* sampled from here on, reserve or not */
    if (!want)
        return none;
    if (thr < want)
        return "the pool's release threshold is lower";
    if (tcf_drv.mem_get_info(&free_b, &total_b) != CUDA_SUCCESS || free_b < 2 * TCF_RESERVE_MARGIN)
        return "too little free memory";
    if (want > free_b - TCF_RESERVE_MARGIN)
        want = free_b - TCF_RESERVE_MARGIN;
    CUdeviceptr p = 0;
    if (tcf_drv.mem_alloc_async(&p, want, stream) != CUDA_SUCCESS)
        return "the allocation failed";
    if (tcf_drv.mem_free_async(p, stream) != CUDA_SUCCESS)
        return "the free failed";   /* the bytes stay allocated: as if the program held them */
    tcf_rgot = want;
    /* The program's watermark starts here, without the reserve. */
    tcf_drv.mem_pool_set_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero);
    return NULL;
}

void tcf_reserve_first(CUstream stream)
{
    int no = 0;
    if (!atomic_compare_exchange_strong(&tcf_reserve_started, &no, 1))
        return;
    if (!tcf_drv.ctx_get_device || !tcf_drv.device_get_mem_pool ||
        !tcf_drv.mem_pool_get_attribute || !tcf_drv.mem_pool_set_attribute ||
        !tcf_drv.mem_get_info || !tcf_drv.mem_alloc_async || !tcf_drv.mem_free_async) {
        tcf_rwhy = "no driver entry point";
        return;
    }
    uint64_t t0 = tcf_now_ns();
    tcf_rkey = tcf_reserve_key();
    const char *none = NULL;
    uint64_t want = tcf_reserve_want(&none);
    tcf_rwhy = tcf_reserve_grow(want, none, stream);
    tcf_rns = tcf_now_ns() - t0;
}

/* At a boundary, on the application's thread: the pool's watermark. A boundary waits for
 * the device or ends something (a synchronize, a copy back, a free that waits): one more
 * query of a counter beside it is cheap, and the last boundary before exit sees the peak
 * (a watermark never falls). Not beside the calls that end the context. */
void tcf_reserve_sample(const char *call)
{
    CUmemoryPool pool = (CUmemoryPool)atomic_load_explicit(&tcf_rpool, memory_order_acquire);
    if (!pool || atomic_load_explicit(&tcf_rforked, memory_order_relaxed) ||
        !strcmp(call, "cuCtxDestroy") || !strcmp(call, "cuDevicePrimaryCtxReset"))
        return;
    cuuint64_t high = 0;
    if (tcf_drv.mem_pool_get_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &high) ==
            CUDA_SUCCESS &&
        high > atomic_load(&tcf_rused_high))
        atomic_store(&tcf_rused_high, high);
}

/* An allocation ran out of memory: the pool gives back what it holds unused, once. */
int tcf_reserve_trim(void)
{
    if (!tcf_rgot || !tcf_drv.mem_pool_trim_to || atomic_exchange(&tcf_rtrimmed, 1))
        return 0;
    return tcf_drv.mem_pool_trim_to((CUmemoryPool)atomic_load(&tcf_rpool), 0) == CUDA_SUCCESS;
}

/* At exit (no driver call): the peak for the next run, when it moved by over 1/16. */
void tcf_reserve_save(void)
{
    uint64_t high = atomic_load(&tcf_rused_high), was = tcf_rlearned;
    if (!tcf_rkey || !high || atomic_load(&tcf_rforked) ||
        (high <= was + was / 16 && high + high / 16 >= was))
        return;
    tcf_cache_put(tcf_rkey, TCF_CACHE_PROGRAM, &high, sizeof high);
}

void tcf_reserve_forked(void)
{
    atomic_store(&tcf_reserve_started, 1);   /* the child's pool is not the parent's */
    atomic_store(&tcf_rforked, 1);
}

void tcf_reserve_stats(void)
{
    if (!atomic_load(&tcf_reserve_started))
        return;
    uint64_t high = atomic_load(&tcf_rused_high);
    char peak[96] = "";
    if (high)
        snprintf(peak, sizeof peak, "; at most %.1f MiB in use", (double)high / (1 << 20));
    if (tcf_rwhy)
        tcf_out("  pool reserve  none (%s)%s", tcf_rwhy, peak);
    else
        tcf_out("  pool reserve  %.1f MiB at the first allocation (%.1f ms; learned %.1f MiB)%s%s",
                (double)tcf_rgot / (1 << 20), (double)tcf_rns / 1e6,
                (double)tcf_rlearned / (1 << 20), peak,
                atomic_load(&tcf_rtrimmed) ? "; trimmed after running out of memory" : "");
}
