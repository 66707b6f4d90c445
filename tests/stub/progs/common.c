/* Shared helpers of the test programs (see common.h). */
#include "tests/stub/progs/common.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t      off;          /* field of drv_t */
    const char *base;         /* the name cuGetProcAddress is asked for */
    int         version;      /* the CUDA version it is asked at */
    const char *abi, *ptsz;   /* the dlsym names: legacy, and per-thread (or NULL) */
} drv_row_t;

#define ROW(field, base, version, abi, ptsz) \
    { offsetof(drv_t, field), base, version, abi, ptsz }

static const drv_row_t drv_rows[] = {
    ROW(init, "cuInit", 13000, "cuInit", NULL),
    ROW(driverGetVersion, "cuDriverGetVersion", 13000, "cuDriverGetVersion", NULL),
    ROW(deviceGet, "cuDeviceGet", 13000, "cuDeviceGet", NULL),
    ROW(deviceGetAttribute, "cuDeviceGetAttribute", 13000, "cuDeviceGetAttribute", NULL),
    ROW(primaryCtxRetain, "cuDevicePrimaryCtxRetain", 13000, "cuDevicePrimaryCtxRetain", NULL),
    ROW(primaryCtxGetState, "cuDevicePrimaryCtxGetState", 13000, "cuDevicePrimaryCtxGetState", NULL),
    ROW(defaultMemPool, "cuDeviceGetDefaultMemPool", 13000, "cuDeviceGetDefaultMemPool", NULL),
    ROW(memPoolTrimTo, "cuMemPoolTrimTo", 13000, "cuMemPoolTrimTo", NULL),
    ROW(memPoolSetAttribute, "cuMemPoolSetAttribute", 13000, "cuMemPoolSetAttribute", NULL),
    ROW(ctxGetCurrent, "cuCtxGetCurrent", 13000, "cuCtxGetCurrent", NULL),
    ROW(ctxSetCurrent, "cuCtxSetCurrent", 13000, "cuCtxSetCurrent", NULL),
    ROW(ctxGetDevice, "cuCtxGetDevice", 12000, "cuCtxGetDevice", NULL),
    ROW(ctxGetDevice2, "cuCtxGetDevice", 13000, "cuCtxGetDevice_v2", NULL),
    ROW(ctxSynchronize, "cuCtxSynchronize", 12000, "cuCtxSynchronize", NULL),
    ROW(ctxSynchronize2, "cuCtxSynchronize", 13000, "cuCtxSynchronize_v2", NULL),
    ROW(getErrorString, "cuGetErrorString", 13000, "cuGetErrorString", NULL),
    ROW(streamCreate, "cuStreamCreate", 13000, "cuStreamCreate", NULL),
    ROW(streamDestroy, "cuStreamDestroy", 13000, "cuStreamDestroy_v2", NULL),
    ROW(streamSynchronize, "cuStreamSynchronize", 13000, "cuStreamSynchronize", "cuStreamSynchronize_ptsz"),
    ROW(streamQuery, "cuStreamQuery", 13000, "cuStreamQuery", "cuStreamQuery_ptsz"),
    ROW(streamIsCapturing, "cuStreamIsCapturing", 13000, "cuStreamIsCapturing", "cuStreamIsCapturing_ptsz"),
    ROW(streamWaitEvent, "cuStreamWaitEvent", 13000, "cuStreamWaitEvent", "cuStreamWaitEvent_ptsz"),
    ROW(eventCreate, "cuEventCreate", 13000, "cuEventCreate", NULL),
    ROW(eventRecord, "cuEventRecord", 13000, "cuEventRecord", "cuEventRecord_ptsz"),
    ROW(eventSynchronize, "cuEventSynchronize", 13000, "cuEventSynchronize", NULL),
    ROW(eventQuery, "cuEventQuery", 13000, "cuEventQuery", NULL),
    ROW(launchHostFunc, "cuLaunchHostFunc", 13000, "cuLaunchHostFunc", "cuLaunchHostFunc_ptsz"),
    ROW(memAlloc, "cuMemAlloc", 13000, "cuMemAlloc_v2", NULL),
    ROW(memFree, "cuMemFree", 13000, "cuMemFree_v2", NULL),
    ROW(memAllocAsync, "cuMemAllocAsync", 13000, "cuMemAllocAsync", "cuMemAllocAsync_ptsz"),
    ROW(memFreeAsync, "cuMemFreeAsync", 13000, "cuMemFreeAsync", "cuMemFreeAsync_ptsz"),
    ROW(memAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 13000, "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz"),
    ROW(memsetD8Async, "cuMemsetD8Async", 13000, "cuMemsetD8Async", "cuMemsetD8Async_ptsz"),
    ROW(memsetD16Async, "cuMemsetD16Async", 13000, "cuMemsetD16Async", "cuMemsetD16Async_ptsz"),
    ROW(memsetD32Async, "cuMemsetD32Async", 13000, "cuMemsetD32Async", "cuMemsetD32Async_ptsz"),
    ROW(memcpyDtoDAsync, "cuMemcpyDtoDAsync", 13000, "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2_ptsz"),
    ROW(memcpyHtoDAsync, "cuMemcpyHtoDAsync", 13000, "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz"),
    ROW(memcpyDtoHAsync, "cuMemcpyDtoHAsync", 13000, "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz"),
    ROW(libraryLoadData, "cuLibraryLoadData", 13000, "cuLibraryLoadData", NULL),
    ROW(libraryGetKernel, "cuLibraryGetKernel", 13000, "cuLibraryGetKernel", NULL),
    ROW(moduleLoadData, "cuModuleLoadData", 13000, "cuModuleLoadData", NULL),
    ROW(moduleGetFunction, "cuModuleGetFunction", 13000, "cuModuleGetFunction", NULL),
    ROW(kernelGetFunction, "cuKernelGetFunction", 13000, "cuKernelGetFunction", NULL),
    ROW(kernelGetName, "cuKernelGetName", 13000, "cuKernelGetName", NULL),
    ROW(funcGetName, "cuFuncGetName", 13000, "cuFuncGetName", NULL),
    ROW(kernelGetParamInfo, "cuKernelGetParamInfo", 13000, "cuKernelGetParamInfo", NULL),
    ROW(funcGetParamInfo, "cuFuncGetParamInfo", 13000, "cuFuncGetParamInfo", NULL),
    ROW(occupancy, "cuOccupancyMaxActiveBlocksPerMultiprocessor", 13000,
        "cuOccupancyMaxActiveBlocksPerMultiprocessor", NULL),
    ROW(launchKernel, "cuLaunchKernel", 13000, "cuLaunchKernel", "cuLaunchKernel_ptsz"),
    ROW(launchKernelEx, "cuLaunchKernelEx", 13000, "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz"),
    ROW(fakeUnknownCall, "cuFakeUnknownCall", 13000, "cuFakeUnknownCall", NULL),
};

const char *prog_lookup(int *argc, char ***argv)
{
    const char *method = "gpa";
    if (*argc >= 3 && strcmp((*argv)[1], "-l") == 0) {
        method = (*argv)[2];
        (*argv)[2] = (*argv)[0];
        *argv += 2;
        *argc -= 2;
    }
    return method;
}

void drv_open(drv_t *d, const char *method)
{
    size_t i;
    int missing = 0;
    void *sym;
    int gpa = strncmp(method, "gpa", 3) == 0;
    cuuint64_t flags = strcmp(method, "gpa-legacy") == 0 ? CU_GET_PROC_ADDRESS_LEGACY_STREAM
                     : strcmp(method, "gpa-ptds") == 0 ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                     : CU_GET_PROC_ADDRESS_DEFAULT;
    int ptsz = strcmp(method, "dlsym-ptsz") == 0;
    int global = strcmp(method, "gpa-global") == 0;
    void *scope;
    memset(d, 0, sizeof *d);
    if (!gpa && strcmp(method, "dlsym") != 0 && !ptsz) {
        printf("unknown lookup method %s\n", method);
        exit(2);
    }
    d->lib = dlopen("libcuda.so.1", RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
    if (!d->lib) {
        printf("dlopen libcuda.so.1 failed\n");
        exit(2);
    }
    /* Function pointers are stored by memcpy: ISO C has no void * <-> function cast. */
    scope = global ? RTLD_DEFAULT : d->lib;
    sym = dlsym(scope, "cuGetProcAddress_v2");
    memcpy(&d->gpa2, &sym, sizeof sym);
    sym = dlsym(scope, "cuGetProcAddress");
    memcpy(&d->gpa1, &sym, sizeof sym);
    if (!d->gpa2 || !d->gpa1) {
        printf("dlsym cuGetProcAddress(_v2) failed\n");
        exit(2);
    }
    for (i = 0; i < sizeof drv_rows / sizeof drv_rows[0]; i++) {
        const drv_row_t *r = &drv_rows[i];
        void *fn = NULL;
        CUresult rc = CUDA_SUCCESS;
        if (gpa) {
            CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
            if (strcmp(method, "gpa1") == 0)
                rc = d->gpa1(r->base, &fn, r->version, flags);
            else
                rc = d->gpa2(r->base, &fn, r->version, flags, &st);
            if (rc || st)
                printf("lookup %s@%d rc=%d status=%d\n", r->base, r->version, rc, st);
        } else {
            fn = dlsym(d->lib, ptsz && r->ptsz ? r->ptsz : r->abi);
        }
        if (!fn && !rc)
            printf("lookup %s: NULL\n", r->base);
        missing += !fn;
        memcpy((char *)d + r->off, &fn, sizeof fn);
    }
    if (missing) {
        /* Like an application whose driver lacks an entry point: give up cleanly. */
        printf("%d entry points missing\n", missing);
        exit(3);
    }
}

CUresult said(const char *label, CUresult rc)
{
    printf("%s rc=%d\n", label, (int)rc);
    fflush(stdout);
    return rc;
}

void world_init(const drv_t *d, world_t *w)
{
    CUdevice dev = -1;
    int i;
    memset(w, 0, sizeof *w);
    said("cuInit", d->init(0));
    said("cuDeviceGet", d->deviceGet(&dev, 0));
    said("cuDevicePrimaryCtxRetain", d->primaryCtxRetain(&w->ctx, dev));
    said("cuCtxSetCurrent", d->ctxSetCurrent(w->ctx));
    for (i = 0; i < 4; i++)
        said("cuStreamCreate", d->streamCreate(&w->s[i], CU_STREAM_DEFAULT));
    said("cuEventCreate", d->eventCreate(&w->ev, CU_EVENT_DISABLE_TIMING));
    said("cuLibraryLoadData", d->libraryLoadData(&w->lib, "fake cubin", NULL, NULL, 0,
                                                 NULL, NULL, 0));
    said("cuLibraryGetKernel " KA_NAME, d->libraryGetKernel(&w->ka, w->lib, KA_NAME));
    said("cuLibraryGetKernel " KB_NAME, d->libraryGetKernel(&w->kb, w->lib, KB_NAME));
    said("cuLibraryGetKernel " KC_NAME, d->libraryGetKernel(&w->kc, w->lib, KC_NAME));
    said("cuLibraryGetKernel " KD_NAME, d->libraryGetKernel(&w->kd, w->lib, KD_NAME));
    said("cuLibraryGetKernel " KE_NAME, d->libraryGetKernel(&w->ke, w->lib, KE_NAME));
    said("cuModuleLoadData", d->moduleLoadData(&w->mod, "fake module"));
    said("cuModuleGetFunction " KF_NAME, d->moduleGetFunction(&w->kf, w->mod, KF_NAME));
    for (i = 0; i < 4; i++) {
        said("cuMemAlloc", d->memAlloc(&w->buf[i], 4096));
        printf("buf%d=0x%llx\n", i, w->buf[i]);
    }
}

CUresult launch(const drv_t *d, CUfunction k, CUstream s, void **params)
{
    return d->launchKernel(k, 1, 1, 1, 128, 1, 1, 0, s, params, NULL);
}

CUresult launch_ka(const drv_t *d, const world_t *w, CUstream s, int n, CUdeviceptr x)
{
    void *p[] = { &n, &x };
    return launch(d, (CUfunction)w->ka, s, p);
}

CUresult launch_kb(const drv_t *d, const world_t *w, CUstream s, CUdeviceptr x,
                   CUdeviceptr y, float alpha)
{
    void *p[] = { &x, &y, &alpha };
    return launch(d, (CUfunction)w->kb, s, p);
}

CUresult launch_kc(const drv_t *d, const world_t *w, CUstream s, int n)
{
    unsigned char blob[24];
    void *p[] = { blob, &n };
    int i;
    for (i = 0; i < 24; i++)
        blob[i] = (unsigned char)(n + i);
    return launch(d, (CUfunction)w->kc, s, p);
}

CUresult launch_kd(const drv_t *d, const world_t *w, CUstream s)
{
    return launch(d, (CUfunction)w->kd, s, NULL);
}
