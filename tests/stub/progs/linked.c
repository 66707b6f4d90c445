/* linked: a program linked with -lcuda against the stub, calling the driver by name, so
 * that under LD_PRELOAD the dynamic linker binds its calls to libtcfuse.so's exports.
 * Built twice: `linked` (legacy ABI names) and `linked_ptsz` (-DCUDA_API_PER_THREAD_
 * DEFAULT_STREAM: cuda.h maps the calls to their _ptsz symbols).
 * Shape (TCFUSE_IDLE_US=0): 7 launches of 2 kernels in 5 windows of 3, 1, 1, 1, 1
 * launches, closed by cuStreamSynchronize, cuMemcpyHtoDAsync, cuMemcpyDtoHAsync,
 * cuEventRecord, and the last one by whatever tcfuse sees next (the cuFakeUnknownCall
 * here is linked directly: no preloaded library can see a call to a symbol it does not
 * export, so it cannot close a window; then cuMemFree, or exit); 3 allocations (1
 * stream-ordered), 3 frees (1 stream-ordered).
 */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

CUresult cuFakeUnknownCall(int x);

static CUresult said(const char *label, CUresult rc)
{
    printf("%s rc=%d\n", label, (int)rc);
    return rc;
}

int main(void)
{
    CUdevice dev = -1;
    CUcontext ctx = NULL;
    CUstream s = NULL;
    CUevent ev = NULL;
    CUlibrary lib = NULL;
    CUkernel ka = NULL, kb = NULL;
    CUdeviceptr a = 0, b = 0, c = 0;
    int n = 5, v = 0;
    float alpha = 0.5f;
    void *pa[] = { &n, &a }, *pb[] = { &a, &b, &alpha }, *pc[] = { &n, &c };
    unsigned char host[8] = { 9, 8, 7, 6, 5, 4, 3, 2 };
    CUlaunchConfig cfg;
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       unsigned, CUstream, void **, void **);

    said("cuInit", cuInit(0));
    said("cuDriverGetVersion", cuDriverGetVersion(&v));
    printf("version=%d\n", v);
    said("cuDeviceGet", cuDeviceGet(&dev, 0));
    said("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, dev));
    said("cuCtxSetCurrent", cuCtxSetCurrent(ctx));
    said("cuStreamCreate", cuStreamCreate(&s, CU_STREAM_DEFAULT));
    said("cuEventCreate", cuEventCreate(&ev, CU_EVENT_DEFAULT));
    said("cuLibraryLoadData", cuLibraryLoadData(&lib, "fake", NULL, NULL, 0, NULL, NULL, 0));
    said("cuLibraryGetKernel ka", cuLibraryGetKernel(&ka, lib, "ka_i4_p8"));
    said("cuLibraryGetKernel kb", cuLibraryGetKernel(&kb, lib, "kb_p8_p8_f4"));
    said("cuMemAlloc a", cuMemAlloc(&a, 4096));
    said("cuMemAlloc b", cuMemAlloc(&b, 4096));
    said("cuMemAllocAsync c", cuMemAllocAsync(&c, 1024, s));
    printf("a=0x%llx b=0x%llx c=0x%llx\n", a, b, c);

    said("ka", cuLaunchKernel((CUfunction)ka, 1, 1, 1, 128, 1, 1, 0, s, pa, NULL));
    said("kb", cuLaunchKernel((CUfunction)kb, 1, 1, 1, 128, 1, 1, 0, s, pb, NULL));
    said("cuMemsetD8Async", cuMemsetD8Async(b, 0, 4096, s));
    said("cuMemcpyDtoDAsync", cuMemcpyDtoDAsync(c, b, 1024, s));
    said("ka c", cuLaunchKernel((CUfunction)ka, 2, 1, 1, 128, 1, 1, 0, s, pc, NULL));
    said("cuStreamSynchronize", cuStreamSynchronize(s));

    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 32; cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = s;
    said("kb ex", cuLaunchKernelEx(&cfg, (CUfunction)kb, pb, NULL));
    said("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync(a, host, sizeof host, s));

    said("ka", cuLaunchKernel((CUfunction)ka, 1, 1, 1, 128, 1, 1, 0, s, pa, NULL));
    said("cuMemcpyDtoHAsync", cuMemcpyDtoHAsync(host, a, sizeof host, s));
    printf("read %02x %02x\n", host[0], host[7]);

    said("cuGetProcAddress", cuGetProcAddress("cuLaunchKernel", &fn, 13000, 0, &st));
    printf("status=%d fn=%s\n", (int)st, fn ? "set" : "null");
    memcpy(&launch, &fn, sizeof fn);
    if (fn)
        said("ka via cuGetProcAddress", launch((CUfunction)ka, 1, 1, 1, 64, 1, 1, 0, s, pa, NULL));
    said("cuEventRecord", cuEventRecord(ev, s));

    said("ka", cuLaunchKernel((CUfunction)ka, 1, 1, 1, 128, 1, 1, 0, s, pa, NULL));
    said("cuMemFreeAsync c", cuMemFreeAsync(c, s));
    said("cuFakeUnknownCall", cuFakeUnknownCall(3));

    said("cuMemFree a", cuMemFree(a));
    said("cuMemFree b", cuMemFree(b));
    printf("done\n");
    return 0;
}
