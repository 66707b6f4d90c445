/* Shared helpers of the test programs in tests/stub/progs.
 *
 * The programs behave like a CUDA application that finds the driver at run time:
 * dlopen("libcuda.so.1") (found through LD_LIBRARY_PATH=build/stub), then every entry
 * point through cuGetProcAddress(_v2) or dlsym. They print each call's result, so a test
 * can compare a run with LD_PRELOAD=libtcfuse.so against one without, line for line;
 * nothing they print depends on addresses of the process (only the stub's made-up,
 * deterministic handles and device pointers) or on time.
 *
 * How entry points are found is chosen with `-l METHOD` (prog_lookup):
 *   gpa         cuGetProcAddress_v2 from dlsym, flags 0 (CU_GET_PROC_ADDRESS_DEFAULT)
 *   gpa-legacy  the same with CU_GET_PROC_ADDRESS_LEGACY_STREAM
 *   gpa-ptds    the same with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (_ptsz forms)
 *   gpa1        the 4-argument cuGetProcAddress from dlsym, flags 0
 *   gpa-global  like gpa, with the driver loaded RTLD_GLOBAL and cuGetProcAddress_v2
 *               found by dlsym(RTLD_DEFAULT) (under LD_PRELOAD that is tcfuse's export)
 *   dlsym       dlsym(lib, "<legacy ABI name>") for every entry point
 *   dlsym-ptsz  dlsym(lib, "<_ptsz ABI name>") where there is one
 * Every entry point is asked for at CUDA version 13000 unless its row says otherwise.
 */
#ifndef PROGS_COMMON_H
#define PROGS_COMMON_H

#include <cuda.h>
#include <stddef.h>
#include <stdio.h>

typedef CUresult (*gpa1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);
/* cuFakeUnknownCall: a call the stub exports and tcfuse cannot know. */
typedef CUresult (*unknown_fn)(int);
/* The CUDA 13 forms cuGetProcAddress hands out at version 13000. */
typedef CUresult (*ctx_get_device2_fn)(CUdevice *, CUcontext);
typedef CUresult (*ctx_sync2_fn)(CUcontext);

#define PROG_FN(name) __typeof__(name) *
typedef struct {
    void   *lib;
    gpa2_fn gpa2;                       /* from dlsym, always */
    gpa1_fn gpa1;                       /* from dlsym, always */
    PROG_FN(cuInit) init;
    PROG_FN(cuDriverGetVersion) driverGetVersion;
    PROG_FN(cuDeviceGet) deviceGet;
    PROG_FN(cuDeviceGetAttribute) deviceGetAttribute;
    PROG_FN(cuDevicePrimaryCtxRetain) primaryCtxRetain;
    PROG_FN(cuDevicePrimaryCtxGetState) primaryCtxGetState;
    PROG_FN(cuDeviceGetDefaultMemPool) defaultMemPool;
    PROG_FN(cuCtxGetCurrent) ctxGetCurrent;
    PROG_FN(cuCtxSetCurrent) ctxSetCurrent;
    PROG_FN(cuCtxGetDevice) ctxGetDevice;          /* asked at 12000: v1 */
    ctx_get_device2_fn ctxGetDevice2;              /* asked at 13000: _v2 */
    PROG_FN(cuCtxSynchronize) ctxSynchronize;      /* asked at 12000: v1 */
    ctx_sync2_fn ctxSynchronize2;                  /* asked at 13000: _v2 */
    PROG_FN(cuGetErrorString) getErrorString;
    PROG_FN(cuStreamCreate) streamCreate;
    PROG_FN(cuStreamDestroy) streamDestroy;
    PROG_FN(cuStreamSynchronize) streamSynchronize;
    PROG_FN(cuStreamQuery) streamQuery;
    PROG_FN(cuStreamIsCapturing) streamIsCapturing;
    PROG_FN(cuStreamWaitEvent) streamWaitEvent;
    PROG_FN(cuEventCreate) eventCreate;
    PROG_FN(cuEventRecord) eventRecord;
    PROG_FN(cuEventSynchronize) eventSynchronize;
    PROG_FN(cuEventQuery) eventQuery;
    PROG_FN(cuLaunchHostFunc) launchHostFunc;
    PROG_FN(cuMemAlloc) memAlloc;
    PROG_FN(cuMemFree) memFree;
    PROG_FN(cuMemAllocAsync) memAllocAsync;
    PROG_FN(cuMemFreeAsync) memFreeAsync;
    PROG_FN(cuMemAllocFromPoolAsync) memAllocFromPoolAsync;
    PROG_FN(cuMemPoolTrimTo) memPoolTrimTo;
    PROG_FN(cuMemPoolSetAttribute) memPoolSetAttribute;
    PROG_FN(cuMemsetD8Async) memsetD8Async;
    PROG_FN(cuMemsetD16Async) memsetD16Async;
    PROG_FN(cuMemsetD32Async) memsetD32Async;
    PROG_FN(cuMemcpyDtoDAsync) memcpyDtoDAsync;
    PROG_FN(cuMemcpyHtoDAsync) memcpyHtoDAsync;
    PROG_FN(cuMemcpyDtoHAsync) memcpyDtoHAsync;
    PROG_FN(cuLibraryLoadData) libraryLoadData;
    PROG_FN(cuLibraryGetKernel) libraryGetKernel;
    PROG_FN(cuModuleLoadData) moduleLoadData;
    PROG_FN(cuModuleGetFunction) moduleGetFunction;
    PROG_FN(cuKernelGetFunction) kernelGetFunction;
    PROG_FN(cuKernelGetName) kernelGetName;
    PROG_FN(cuFuncGetName) funcGetName;
    PROG_FN(cuKernelGetParamInfo) kernelGetParamInfo;
    PROG_FN(cuFuncGetParamInfo) funcGetParamInfo;
    PROG_FN(cuOccupancyMaxActiveBlocksPerMultiprocessor) occupancy;
    PROG_FN(cuLaunchKernel) launchKernel;
    PROG_FN(cuLaunchKernelEx) launchKernelEx;
    unknown_fn fakeUnknownCall;
} drv_t;

/* The kernels every scenario uses (names give the layouts, see fakecuda.c). */
typedef struct {
    CUcontext  ctx;
    CUstream   s[4];                    /* created streams */
    CUevent    ev;
    CUlibrary  lib;
    CUkernel   ka, kb, kc, kd, ke;      /* CUkernel handles */
    CUmodule   mod;
    CUfunction kf;                      /* a CUfunction handle */
    CUdeviceptr buf[4];                 /* 4 KiB each, from cuMemAlloc_v2 */
} world_t;

#define KA_NAME "ka_i4_p8"              /* (int n, float *x) */
#define KB_NAME "kb_p8_p8_f4"           /* (const float *x, float *y, float alpha) */
#define KC_NAME "kc_b24_i4"             /* (struct { 24 bytes }, int) */
#define KD_NAME "kd"                    /* () */
#define KE_NAME "ke_h2_b3_i4_p8"        /* (half, char[3], int, void *) */
#define KF_NAME "kf_p8_i4"              /* (float *, int), from a module */

/* Parses "-l METHOD" out of argv (shifting it away); returns the method, "gpa" if none. */
const char *prog_lookup(int *argc, char ***argv);
/* Loads the driver and fills every entry point; prints and exits 2 on failure. */
void drv_open(drv_t *d, const char *method);
/* cuInit, primary context current, 4 streams, an event, the kernels, 4 buffers. */
void world_init(const drv_t *d, world_t *w);
/* Prints "<label> rc=<rc>" and returns rc. */
CUresult said(const char *label, CUresult rc);

/* Launches k through cuLaunchKernel with kernelParams (grid 1, block 128, smem 0). */
CUresult launch(const drv_t *d, CUfunction k, CUstream s, void **params);
/* The standard launches of each kernel with scalar `n` and the buffers of w. */
CUresult launch_ka(const drv_t *d, const world_t *w, CUstream s, int n, CUdeviceptr x);
CUresult launch_kb(const drv_t *d, const world_t *w, CUstream s, CUdeviceptr x,
                   CUdeviceptr y, float alpha);
CUresult launch_kc(const drv_t *d, const world_t *w, CUstream s, int n);
CUresult launch_kd(const drv_t *d, const world_t *w, CUstream s);

#endif
