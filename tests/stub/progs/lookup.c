/* lookup MODE: entry points by every version and flag, each one then called.
 *   v2     cuGetProcAddress_v2 (from dlsym) for every (symbol, version) below and flags
 *          0, LEGACY_STREAM, PER_THREAD_DEFAULT_STREAM, and an invalid flag
 *   v1     the same through the 4-argument cuGetProcAddress (from dlsym)
 *   self   the same through the cuGetProcAddress_v2 that cuGetProcAddress_v2 returned
 *   dlsym  dlsym(lib, "<ABI name>") for every variant the stub exports
 *   ident  like v2, also printing which of the stub's entry points each pointer is
 *          ("is=cuLaunchKernel_ptsz"), or "is=-" for a pointer that is none of them
 *          (a wrapper), as the stub's fakecuda_symbol_of says
 * Every pointer obtained is called with the prototype its (symbol, version) promises, so
 * the stub's log names the variant that really ran; output lines give rc, status and
 * whether a pointer came back.
 */
#include "tests/stub/progs/common.h"

#include <dlfcn.h>
#include <string.h>

/* The 32-bit forms of CUDA 2.x/3.0 (cuda.h declares them only for the driver itself). */
typedef unsigned int CUdeviceptr_v1;
typedef CUresult (*alloc1_fn)(CUdeviceptr_v1 *, unsigned int);
typedef CUresult (*free1_fn)(CUdeviceptr_v1);
typedef CUresult (*dtod1_fn)(CUdeviceptr_v1, CUdeviceptr_v1, unsigned int, CUstream);

static drv_t   d;            /* the harness's own entry points, straight from dlsym */
static world_t w;
static CUdeviceptr_v1 v1buf[2];
static void *const UNTOUCHED = (void *)(uintptr_t)1;

typedef struct { const char *base; int versions[5]; } case_t;

static const case_t cases[] = {
    { "cuLaunchKernel", { 3020, 4000, 7000, 13000 } },
    { "cuLaunchKernelEx", { 11050, 11060, 13000 } },
    { "cuMemAlloc", { 1000, 2000, 3020, 13000 } },
    { "cuMemFree", { 2000, 3020, 13000 } },
    { "cuMemAllocAsync", { 11010, 11020, 13000 } },
    { "cuMemFreeAsync", { 11020, 13000 } },
    { "cuMemAllocFromPoolAsync", { 11020 } },
    { "cuMemsetD8Async", { 3020, 7000 } },
    { "cuMemsetD16Async", { 3020, 7000 } },
    { "cuMemsetD32Async", { 3020, 13000 } },
    { "cuMemcpyDtoDAsync", { 3000, 3020, 7000, 13000 } },
    { "cuMemcpyHtoDAsync", { 3020, 7000 } },
    { "cuMemcpyDtoHAsync", { 3020, 7000 } },
    { "cuStreamSynchronize", { 2000, 7000 } },
    { "cuStreamQuery", { 2000, 7000 } },
    { "cuStreamIsCapturing", { 10000 } },
    { "cuStreamWaitEvent", { 3020, 7000 } },
    { "cuEventRecord", { 2000, 7000 } },
    { "cuEventSynchronize", { 2000 } },
    { "cuLaunchHostFunc", { 10000 } },
    { "cuCtxSynchronize", { 2000, 13000 } },
    { "cuCtxGetDevice", { 2000, 13000 } },
    { "cuCtxGetCurrent", { 4000 } },
    { "cuDriverGetVersion", { 2020 } },
    { "cuDeviceGetAttribute", { 2000 } },
    { "cuKernelGetName", { 12020, 12030 } },
    { "cuFuncGetName", { 12030 } },
    { "cuKernelGetParamInfo", { 12040 } },
    { "cuOccupancyMaxActiveBlocksPerMultiprocessor", { 6050 } },
    { "cuGetProcAddress", { 11020, 11030, 12000 } },
    { "cuFakeUnknownCall", { 2000 } },
    { "cuNoSuchCall", { 13000 } },
    { "cuMemAlloc_v2", { 13000 } },          /* an ABI name is not a base name */
};

/* Every exported variant, for the dlsym mode: ABI name, base, the version it answers. */
static const struct { const char *abi, *base; int version; } abis[] = {
    { "cuLaunchKernel", "cuLaunchKernel", 4000 },
    { "cuLaunchKernel_ptsz", "cuLaunchKernel", 7000 },
    { "cuLaunchKernelEx", "cuLaunchKernelEx", 11060 },
    { "cuLaunchKernelEx_ptsz", "cuLaunchKernelEx", 11060 },
    { "cuMemAlloc", "cuMemAlloc", 2000 },
    { "cuMemAlloc_v2", "cuMemAlloc", 3020 },
    { "cuMemFree", "cuMemFree", 2000 },
    { "cuMemFree_v2", "cuMemFree", 3020 },
    { "cuMemAllocAsync", "cuMemAllocAsync", 11020 },
    { "cuMemAllocAsync_ptsz", "cuMemAllocAsync", 11020 },
    { "cuMemFreeAsync", "cuMemFreeAsync", 11020 },
    { "cuMemFreeAsync_ptsz", "cuMemFreeAsync", 11020 },
    { "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", 11020 },
    { "cuMemAllocFromPoolAsync_ptsz", "cuMemAllocFromPoolAsync", 11020 },
    { "cuMemsetD8Async", "cuMemsetD8Async", 3020 },
    { "cuMemsetD8Async_ptsz", "cuMemsetD8Async", 7000 },
    { "cuMemsetD16Async", "cuMemsetD16Async", 3020 },
    { "cuMemsetD16Async_ptsz", "cuMemsetD16Async", 7000 },
    { "cuMemsetD32Async", "cuMemsetD32Async", 3020 },
    { "cuMemsetD32Async_ptsz", "cuMemsetD32Async", 7000 },
    { "cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync", 3000 },
    { "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync", 3020 },
    { "cuMemcpyDtoDAsync_v2_ptsz", "cuMemcpyDtoDAsync", 7000 },
    { "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync", 3020 },
    { "cuMemcpyHtoDAsync_v2_ptsz", "cuMemcpyHtoDAsync", 7000 },
    { "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync", 3020 },
    { "cuMemcpyDtoHAsync_v2_ptsz", "cuMemcpyDtoHAsync", 7000 },
    { "cuStreamSynchronize", "cuStreamSynchronize", 2000 },
    { "cuStreamSynchronize_ptsz", "cuStreamSynchronize", 7000 },
    { "cuStreamQuery", "cuStreamQuery", 2000 },
    { "cuStreamQuery_ptsz", "cuStreamQuery", 7000 },
    { "cuStreamIsCapturing", "cuStreamIsCapturing", 10000 },
    { "cuStreamIsCapturing_ptsz", "cuStreamIsCapturing", 10000 },
    { "cuStreamWaitEvent", "cuStreamWaitEvent", 3020 },
    { "cuStreamWaitEvent_ptsz", "cuStreamWaitEvent", 7000 },
    { "cuEventRecord", "cuEventRecord", 2000 },
    { "cuEventRecord_ptsz", "cuEventRecord", 7000 },
    { "cuEventSynchronize", "cuEventSynchronize", 2000 },
    { "cuLaunchHostFunc", "cuLaunchHostFunc", 10000 },
    { "cuLaunchHostFunc_ptsz", "cuLaunchHostFunc", 10000 },
    { "cuCtxSynchronize", "cuCtxSynchronize", 2000 },
    { "cuCtxSynchronize_v2", "cuCtxSynchronize", 13000 },
    { "cuCtxGetDevice", "cuCtxGetDevice", 2000 },
    { "cuCtxGetDevice_v2", "cuCtxGetDevice", 13000 },
    { "cuCtxGetCurrent", "cuCtxGetCurrent", 4000 },
    { "cuDriverGetVersion", "cuDriverGetVersion", 2020 },
    { "cuDeviceGetAttribute", "cuDeviceGetAttribute", 2000 },
    { "cuKernelGetName", "cuKernelGetName", 12030 },
    { "cuFuncGetName", "cuFuncGetName", 12030 },
    { "cuKernelGetParamInfo", "cuKernelGetParamInfo", 12040 },
    { "cuOccupancyMaxActiveBlocksPerMultiprocessor", "cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050 },
    { "cuGetProcAddress", "cuGetProcAddress", 11030 },
    { "cuGetProcAddress_v2", "cuGetProcAddress", 12000 },
    { "cuFakeUnknownCall", "cuFakeUnknownCall", 2000 },
    { "cuNoSuchCall", "cuNoSuchCall", 0 },
};

static void host_fn(void *arg) { printf("  host function ran, arg=%d\n", *(int *)arg); }

/* Casts a looked-up pointer to the prototype `T` without a void* -> function cast. */
#define AS(T, fn) ((T)as_fn(fn))
typedef void (*any_fn)(void);
static any_fn as_fn(void *p)
{
    any_fn f;
    memcpy(&f, &p, sizeof f);
    return f;
}


/* Calls fn, which cuGetProcAddress(base, version) returned, as its prototype says. */
static CUresult call(const char *base, int version, void *fn)
{
    CUstream s = w.s[0];
    CUdeviceptr p = 0;
    CUdeviceptr_v1 p1 = 0;
    int n = version, v = -1;
    CUdevice dev = -1;
    CUcontext ctx = NULL;
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    CUmemoryPool pool = NULL;
    const char *name = NULL;
    size_t off = 0, size = 0;
    unsigned char host[16] = { 1, 2, 3, 4 };
    static int arg = 3;
    void *params[] = { &n, &w.buf[0] };
    CUlaunchConfig cfg;
    CUresult rc;
    if (!strcmp(base, "cuLaunchKernel"))
        return AS(__typeof__(cuLaunchKernel) *, fn)((CUfunction)w.ka, 1, 1, 1, 32, 1, 1, 0, s, params, NULL);
    if (!strcmp(base, "cuLaunchKernelEx")) {
        memset(&cfg, 0, sizeof cfg);
        cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
        cfg.blockDimX = 64; cfg.blockDimY = cfg.blockDimZ = 1;
        cfg.hStream = s;
        return AS(__typeof__(cuLaunchKernelEx) *, fn)(&cfg, (CUfunction)w.ka, params, NULL);
    }
    if (!strcmp(base, "cuMemAlloc") && version < 3020) {
        rc = AS(alloc1_fn, fn)(&p1, 256);
        printf("  ptr=0x%x\n", p1);
        return rc;
    }
    if (!strcmp(base, "cuMemAlloc")) {
        rc = AS(__typeof__(cuMemAlloc) *, fn)(&p, 256);
        printf("  ptr=0x%llx free rc=%d\n", p, d.memFree(p));
        return rc;
    }
    if (!strcmp(base, "cuMemFree") && version < 3020) {
        CUresult arc = AS(alloc1_fn, dlsym(d.lib, "cuMemAlloc"))(&p1, 128);
        printf("  v1 alloc rc=%d ptr=0x%x\n", arc, p1);
        return AS(free1_fn, fn)(p1);
    }
    if (!strcmp(base, "cuMemFree")) {
        printf("  alloc rc=%d\n", d.memAlloc(&p, 128));
        return AS(__typeof__(cuMemFree) *, fn)(p);
    }
    if (!strcmp(base, "cuMemAllocAsync")) {
        rc = AS(__typeof__(cuMemAllocAsync) *, fn)(&p, 512, s);
        printf("  ptr=0x%llx free rc=%d\n", p, d.memFreeAsync(p, s));
        return rc;
    }
    if (!strcmp(base, "cuMemFreeAsync")) {
        printf("  alloc rc=%d\n", d.memAllocAsync(&p, 128, s));
        return AS(__typeof__(cuMemFreeAsync) *, fn)(p, s);
    }
    if (!strcmp(base, "cuMemAllocFromPoolAsync")) {
        d.defaultMemPool(&pool, 0);
        rc = AS(__typeof__(cuMemAllocFromPoolAsync) *, fn)(&p, 512, pool, s);
        printf("  ptr=0x%llx free rc=%d\n", p, d.memFreeAsync(p, s));
        return rc;
    }
    if (!strcmp(base, "cuMemsetD8Async"))
        return AS(__typeof__(cuMemsetD8Async) *, fn)(w.buf[0], 1, 64, s);
    if (!strcmp(base, "cuMemsetD16Async"))
        return AS(__typeof__(cuMemsetD16Async) *, fn)(w.buf[0], 2, 32, s);
    if (!strcmp(base, "cuMemsetD32Async"))
        return AS(__typeof__(cuMemsetD32Async) *, fn)(w.buf[0], 3, 16, s);
    if (!strcmp(base, "cuMemcpyDtoDAsync") && version < 3020)
        return AS(dtod1_fn, fn)(v1buf[0], v1buf[1], 64, s);
    if (!strcmp(base, "cuMemcpyDtoDAsync"))
        return AS(__typeof__(cuMemcpyDtoDAsync) *, fn)(w.buf[1], w.buf[0], 64, s);
    if (!strcmp(base, "cuMemcpyHtoDAsync"))
        return AS(__typeof__(cuMemcpyHtoDAsync) *, fn)(w.buf[1], host, sizeof host, s);
    if (!strcmp(base, "cuMemcpyDtoHAsync")) {
        rc = AS(__typeof__(cuMemcpyDtoHAsync) *, fn)(host, w.buf[1], sizeof host, s);
        printf("  read %02x %02x\n", host[0], host[15]);
        return rc;
    }
    if (!strcmp(base, "cuStreamSynchronize"))
        return AS(__typeof__(cuStreamSynchronize) *, fn)(s);
    if (!strcmp(base, "cuStreamQuery"))
        return AS(__typeof__(cuStreamQuery) *, fn)(s);
    if (!strcmp(base, "cuStreamIsCapturing")) {
        rc = AS(__typeof__(cuStreamIsCapturing) *, fn)(s, &cs);
        printf("  status=%d\n", (int)cs);
        return rc;
    }
    if (!strcmp(base, "cuStreamWaitEvent"))
        return AS(__typeof__(cuStreamWaitEvent) *, fn)(s, w.ev, 0);
    if (!strcmp(base, "cuEventRecord"))
        return AS(__typeof__(cuEventRecord) *, fn)(w.ev, s);
    if (!strcmp(base, "cuEventSynchronize"))
        return AS(__typeof__(cuEventSynchronize) *, fn)(w.ev);
    if (!strcmp(base, "cuLaunchHostFunc"))
        return AS(__typeof__(cuLaunchHostFunc) *, fn)(s, host_fn, &arg);
    if (!strcmp(base, "cuCtxSynchronize") && version >= 13000)
        return AS(ctx_sync2_fn, fn)(w.ctx);
    if (!strcmp(base, "cuCtxSynchronize"))
        return AS(__typeof__(cuCtxSynchronize) *, fn)();
    if (!strcmp(base, "cuCtxGetDevice")) {
        rc = version >= 13000 ? AS(ctx_get_device2_fn, fn)(&dev, NULL)
                              : AS(__typeof__(cuCtxGetDevice) *, fn)(&dev);
        printf("  dev=%d\n", dev);
        return rc;
    }
    if (!strcmp(base, "cuCtxGetCurrent")) {
        rc = AS(__typeof__(cuCtxGetCurrent) *, fn)(&ctx);
        printf("  ctx=%p\n", (void *)ctx);
        return rc;
    }
    if (!strcmp(base, "cuDriverGetVersion")) {
        rc = AS(__typeof__(cuDriverGetVersion) *, fn)(&v);
        printf("  version=%d\n", v);
        return rc;
    }
    if (!strcmp(base, "cuDeviceGetAttribute")) {
        rc = AS(__typeof__(cuDeviceGetAttribute) *, fn)(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0);
        printf("  value=%d\n", v);
        return rc;
    }
    if (!strcmp(base, "cuKernelGetName") || !strcmp(base, "cuFuncGetName")) {
        rc = !strcmp(base, "cuKernelGetName")
                 ? AS(__typeof__(cuKernelGetName) *, fn)(&name, w.kb)
                 : AS(__typeof__(cuFuncGetName) *, fn)(&name, w.kf);
        printf("  name=%s\n", name ? name : "-");
        return rc;
    }
    if (!strcmp(base, "cuKernelGetParamInfo")) {
        rc = AS(__typeof__(cuKernelGetParamInfo) *, fn)(w.kb, 2, &off, &size);
        printf("  offset=%zu size=%zu\n", off, size);
        return rc;
    }
    if (!strcmp(base, "cuOccupancyMaxActiveBlocksPerMultiprocessor")) {
        rc = AS(__typeof__(cuOccupancyMaxActiveBlocksPerMultiprocessor) *, fn)(&v, w.kf, 256, 0);
        printf("  blocks=%d\n", v);
        return rc;
    }
    if (!strcmp(base, "cuGetProcAddress")) {
        void *inner = NULL;
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        rc = version >= 12000 ? AS(gpa2_fn, fn)("cuDriverGetVersion", &inner, 13000, 0, &st)
                              : AS(gpa1_fn, fn)("cuDriverGetVersion", &inner, 13000, 0);
        printf("  inner lookup rc=%d status=%d fn=%s\n", rc, (int)st, inner ? "set" : "null");
        if (inner) {
            printf("  inner call rc=%d", AS(__typeof__(cuDriverGetVersion) *, inner)(&v));
            printf(" version=%d\n", v);
        }
        return rc;
    }
    if (!strcmp(base, "cuFakeUnknownCall"))
        return AS(unknown_fn, fn)(version);
    printf("  (no recipe for %s)\n", base);
    return CUDA_ERROR_NOT_FOUND;
}

/* Which of the stub's entry points p is, or "-". */
static const char *which(void *p)
{
    static const char *(*symbol_of)(const void *);
    const char *s;
    if (!symbol_of) {
        void *f = dlsym(d.lib, "fakecuda_symbol_of");
        memcpy(&symbol_of, &f, sizeof f);
    }
    s = symbol_of && p ? symbol_of(p) : NULL;
    return s ? s : "-";
}

static void by_gpa(const char *mode, gpa1_fn g1, gpa2_fn g2)
{
    static const cuuint64_t flags[] = { 0, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                                        CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, 4 };
    size_t i, j, f;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (j = 0; j < 5 && cases[i].versions[j]; j++) {
            for (f = 0; f < 4; f++) {
                void *fn = UNTOUCHED;
                int ver = cases[i].versions[j];
                CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)7;
                CUresult rc = g2 ? g2(cases[i].base, &fn, ver, flags[f], &st)
                                 : g1(cases[i].base, &fn, ver, flags[f]);
                printf("%s %s@%d flags=%d: rc=%d status=%d fn=%s", mode, cases[i].base, ver,
                       (int)flags[f], (int)rc, (int)st,
                       fn == UNTOUCHED ? "untouched" : fn ? "set" : "null");
                if (!strcmp(mode, "ident"))
                    printf(" is=%s", which(fn));
                printf("\n");
                if (fn && fn != UNTOUCHED)
                    printf("  call rc=%d\n", call(cases[i].base, ver, fn));
                fflush(stdout);
            }
        }
    }
}

static void by_dlsym(void)
{
    size_t i;
    for (i = 0; i < sizeof abis / sizeof abis[0]; i++) {
        void *fn = dlsym(d.lib, abis[i].abi);
        printf("dlsym %s: %s\n", abis[i].abi, fn ? "set" : "null");
        if (fn)
            printf("  call rc=%d\n", call(abis[i].base, abis[i].version, fn));
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "v2";
    drv_open(&d, "dlsym");
    world_init(&d, &w);
    said("cuMemAlloc v1", AS(alloc1_fn, dlsym(d.lib, "cuMemAlloc"))(&v1buf[0], 256));
    said("cuMemAlloc v1", AS(alloc1_fn, dlsym(d.lib, "cuMemAlloc"))(&v1buf[1], 256));
    if (!strcmp(mode, "v2") || !strcmp(mode, "ident")) {
        by_gpa(mode, NULL, d.gpa2);
    } else if (!strcmp(mode, "v1")) {
        by_gpa(mode, d.gpa1, NULL);
    } else if (!strcmp(mode, "self")) {
        void *g = NULL;
        CUdriverProcAddressQueryResult st;
        said("cuGetProcAddress_v2(cuGetProcAddress, 12000)",
             d.gpa2("cuGetProcAddress", &g, 12000, 0, &st));
        if (g)
            by_gpa(mode, NULL, AS(gpa2_fn, g));
    } else if (!strcmp(mode, "dlsym")) {
        by_dlsym();
    } else {
        printf("usage: lookup v2|v1|self|dlsym|ident\n");
        return 2;
    }
    said("cuCtxSynchronize", d.ctxSynchronize());
    printf("done\n");
    return 0;
}
