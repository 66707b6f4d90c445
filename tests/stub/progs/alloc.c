/* alloc [-l METHOD] [SCENARIO]: allocation and free sequences.
 *   seq (default)  a = cuMemAlloc_v2, b, c = cuMemAllocAsync, e = cuMemAllocFromPoolAsync,
 *                  launches and device work on them, cuMemFreeAsync b c e,
 *                  cuStreamSynchronize, cuMemFree_v2 a
 *                  = 4 allocs, 4 frees (3 stream-ordered), 2 launches
 *                  (world_init's four cuMemAlloc_v2 come first: 8 allocs in all)
 *   errors         calls the driver rejects: zero-byte and bad-stream allocations,
 *                  double and foreign frees, memsets outside device memory
 *   reuse          alloc, launch, free, alloc, launch, free on one stream, no sync between
 *   keep           frees of one size, a larger allocation, a free, cuMemPoolTrimTo
 *   pool [lowkeep] the pool's release threshold set to the maximum, as PyTorch's
 *                  cudaMallocAsync allocator sets it (lowkeep: left at 0), then 3 MiB in
 *                  use at the peak: three 1 MiB blocks, two freed, a synchronize, a 2 MiB
 *                  block, every block freed, a synchronize
 */
#include "tests/stub/progs/common.h"

#include <string.h>

static drv_t   d;
static world_t w;

static void show(const char *label, CUresult rc, CUdeviceptr p)
{
    printf("%s rc=%d ptr=0x%llx\n", label, (int)rc, p);
}

static void scen_seq(void)
{
    CUstream s = w.s[0];
    CUdeviceptr a = 0, b = 0, c = 0, e = 0;
    CUmemoryPool pool = NULL;
    show("cuMemAlloc a", d.memAlloc(&a, 1000), a);
    show("cuMemAllocAsync b", d.memAllocAsync(&b, 4096, s), b);
    show("cuMemAllocAsync c", d.memAllocAsync(&c, 256, s), c);
    said("cuDeviceGetDefaultMemPool", d.defaultMemPool(&pool, 0));
    show("cuMemAllocFromPoolAsync e", d.memAllocFromPoolAsync(&e, 512, pool, s), e);
    said("ka b", launch_ka(&d, &w, s, 1024, b));
    said("cuMemsetD8Async b", d.memsetD8Async(b, 0, 4096, s));
    said("cuMemsetD32Async c", d.memsetD32Async(c, 7, 64, s));
    said("cuMemsetD16Async e", d.memsetD16Async(e, 1, 256, s));
    said("cuMemcpyDtoDAsync c<-b", d.memcpyDtoDAsync(c, b, 256, s));
    said("kb b c", launch_kb(&d, &w, s, b, c, 0.25f));
    said("cuMemFreeAsync b", d.memFreeAsync(b, s));
    said("cuMemFreeAsync c", d.memFreeAsync(c, s));
    said("cuMemFreeAsync e", d.memFreeAsync(e, s));
    said("cuStreamSynchronize", d.streamSynchronize(s));
    said("cuMemFree a", d.memFree(a));
}

static void scen_errors(void)
{
    CUstream s = w.s[0];
    CUdeviceptr a = 0x1111, b = 0x2222;
    show("cuMemAllocAsync 0 bytes", d.memAllocAsync(&a, 0, s), a);
    show("cuMemAllocAsync bad stream", d.memAllocAsync(&a, 64, (CUstream)(uintptr_t)0x999900), a);
    show("cuMemAlloc 0 bytes", d.memAlloc(&b, 0), b);
    show("cuMemAllocAsync", d.memAllocAsync(&a, 64, s), a);
    said("cuMemFreeAsync", d.memFreeAsync(a, s));
    said("cuMemFreeAsync again", d.memFreeAsync(a, s));
    said("cuMemFree foreign", d.memFree(0x1234));
    said("cuMemFree 0", d.memFree(0));
    said("cuMemsetD8Async outside", d.memsetD8Async(0x1000, 0, 16, s));
    said("cuMemsetD32Async misaligned", d.memsetD32Async(w.buf[0] + 2, 0, 16, s));
    said("cuMemcpyDtoDAsync outside", d.memcpyDtoDAsync(w.buf[0], 0x1000, 16, s));
    said("cuStreamSynchronize", d.streamSynchronize(s));
}

static void scen_reuse(void)
{
    CUstream s = w.s[0];
    CUdeviceptr a = 0;
    int i;
    for (i = 0; i < 2; i++) {
        show("cuMemAllocAsync", d.memAllocAsync(&a, 2048, s), a);
        said("ka", launch_ka(&d, &w, s, i, a));
        said("cuMemFreeAsync", d.memFreeAsync(a, s));
    }
    said("cuStreamSynchronize", d.streamSynchronize(s));
}

/* Blocks of one size freed, then a larger one asked for under FAKECUDA_ASYNC_LIMIT (fuse
 * mode keeps the freed ones: they must go back for it), then one freed before the pool is
 * trimmed (fuse mode gives it back first). Prints no pointer: tcfuse may hand a freed
 * block out again where the stand-in never does. */
static void scen_keep(void)
{
    CUstream s = w.s[0];
    CUdeviceptr a[4] = { 0 }, b = 0, c = 0;
    CUmemoryPool pool = NULL;
    for (int i = 0; i < 4; i++)
        said("cuMemAllocAsync 64K", d.memAllocAsync(&a[i], 65536, s));
    for (int i = 0; i < 4; i++)
        said("ka", launch_ka(&d, &w, s, i, a[i]));
    for (int i = 0; i < 4; i++)
        said("cuMemFreeAsync 64K", d.memFreeAsync(a[i], s));
    said("cuMemAllocAsync 200K", d.memAllocAsync(&b, 204800, s));
    said("ka", launch_ka(&d, &w, s, 9, b));
    said("cuMemFreeAsync 200K", d.memFreeAsync(b, s));
    said("cuMemAllocAsync 64K", d.memAllocAsync(&c, 65536, s));
    said("cuMemFreeAsync 64K", d.memFreeAsync(c, s));
    said("cuDeviceGetDefaultMemPool", d.defaultMemPool(&pool, 0));
    said("cuMemPoolTrimTo", d.memPoolTrimTo(pool, 0));
    said("cuStreamSynchronize", d.streamSynchronize(s));
}

static void scen_pool(int keep)
{
    CUstream s = w.s[0];
    CUdeviceptr a[3] = { 0 }, b = 0;
    CUmemoryPool pool = NULL;
    cuuint64_t max = ~0ull;
    said("cuDeviceGetDefaultMemPool", d.defaultMemPool(&pool, 0));
    if (keep)
        said("cuMemPoolSetAttribute threshold", d.memPoolSetAttribute(pool,
             CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max));
    for (int i = 0; i < 3; i++) {
        said("cuMemAllocAsync 1M", d.memAllocAsync(&a[i], 1 << 20, s));
        said("ka", launch_ka(&d, &w, s, i, a[i]));
    }
    said("cuMemFreeAsync 1M", d.memFreeAsync(a[0], s));
    said("cuMemFreeAsync 1M", d.memFreeAsync(a[1], s));
    said("cuStreamSynchronize", d.streamSynchronize(s));
    said("cuMemAllocAsync 2M", d.memAllocAsync(&b, 2 << 20, s));
    said("ka", launch_ka(&d, &w, s, 7, b));
    said("cuMemFreeAsync 2M", d.memFreeAsync(b, s));
    said("cuMemFreeAsync 1M", d.memFreeAsync(a[2], s));
    said("cuStreamSynchronize", d.streamSynchronize(s));
}

int main(int argc, char **argv)
{
    const char *method = prog_lookup(&argc, &argv);
    const char *sc = argc > 1 ? argv[1] : "seq";
    drv_open(&d, method);
    world_init(&d, &w);
    if (strcmp(sc, "seq") == 0) {
        scen_seq();
    } else if (strcmp(sc, "errors") == 0) {
        scen_errors();
    } else if (strcmp(sc, "reuse") == 0) {
        scen_reuse();
    } else if (strcmp(sc, "keep") == 0) {
        scen_keep();
    } else if (strcmp(sc, "pool") == 0) {
        scen_pool(!(argc > 2 && strcmp(argv[2], "lowkeep") == 0));
    } else {
        printf("usage: alloc [-l METHOD] seq|errors|reuse|keep|pool [lowkeep]\n");
        return 2;
    }
    printf("done\n");
    return 0;
}
