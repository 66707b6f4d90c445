/* fakecuda: cuGetProcAddress and cuGetProcAddress_v2 (see fakecuda.c for the conventions).
 *
 * One explicit row per ABI variant: the base name callers ask for, the symbol that
 * implements it, the CUDA version that introduced that variant (the suffix of its PFN_
 * typedef in cudaTypedefs.h), and whether it is the per-thread-default-stream variant.
 * The pointer handed out is the exported function itself (the library is -Bsymbolic), so
 * it equals dlsym(libcuda, "<abi>"), as with the real driver.
 *
 * Lookup, like the real driver's:
 *  - the base name must match exactly ("cuMemAlloc", never "cuMemAlloc_v2"), else
 *    CUDA_ERROR_NOT_FOUND with CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
 *  - with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the newest per-thread row whose
 *    version <= cudaVersion wins; when there is none (no _ptsz variant, or cudaVersion is
 *    older than it), and always otherwise (0 or LEGACY_STREAM), the newest legacy row
 *    whose version <= cudaVersion;
 *  - no row old enough: CUDA_ERROR_NOT_FOUND with CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
 *  - flags other than 0, 1, 2: CUDA_ERROR_INVALID_VALUE.
 * On failure *pfn is set to NULL (except for an injected FAKECUDA_FAIL failure, which
 * writes nothing).
 */
#include "tests/stub/fakecuda.h"

#include <string.h>

typedef struct {
    const char *base, *abi;
    void       *fn;
    int         version, ptds;
} fk_proc_t;

#define FK_P(base, abi, version, ptds) { #base, #abi, (void *)abi, version, ptds }

static const fk_proc_t fk_procs[] = {
    FK_P(cuInit,                        cuInit,                        2000, 0),
    FK_P(cuDriverGetVersion,            cuDriverGetVersion,            2020, 0),
    FK_P(cuDeviceGet,                   cuDeviceGet,                   2000, 0),
    FK_P(cuDeviceGetCount,              cuDeviceGetCount,              2000, 0),
    FK_P(cuDeviceGetAttribute,          cuDeviceGetAttribute,          2000, 0),
    FK_P(cuDevicePrimaryCtxRetain,      cuDevicePrimaryCtxRetain,      7000, 0),
    FK_P(cuDevicePrimaryCtxGetState,    cuDevicePrimaryCtxGetState,    7000, 0),
    FK_P(cuDeviceGetDefaultMemPool,     cuDeviceGetDefaultMemPool,     11020, 0),
    FK_P(cuCtxGetCurrent,               cuCtxGetCurrent,               4000, 0),
    FK_P(cuCtxSetCurrent,               cuCtxSetCurrent,               4000, 0),
    FK_P(cuCtxGetDevice,                cuCtxGetDevice,                2000, 0),
    FK_P(cuCtxGetDevice,                cuCtxGetDevice_v2,             13000, 0),
    FK_P(cuCtxSynchronize,              cuCtxSynchronize,              2000, 0),
    FK_P(cuCtxSynchronize,              cuCtxSynchronize_v2,           13000, 0),
    FK_P(cuGetErrorString,              cuGetErrorString,              6000, 0),
    FK_P(cuGetErrorName,                cuGetErrorName,                6000, 0),
    FK_P(cuGetProcAddress,              cuGetProcAddress,              11030, 0),
    FK_P(cuGetProcAddress,              cuGetProcAddress_v2,           12000, 0),

    FK_P(cuStreamCreate,                cuStreamCreate,                2000, 0),
    FK_P(cuStreamDestroy,               cuStreamDestroy_v2,            4000, 0),
    FK_P(cuStreamSynchronize,           cuStreamSynchronize,           2000, 0),
    FK_P(cuStreamSynchronize,           cuStreamSynchronize_ptsz,      7000, 1),
    FK_P(cuStreamQuery,                 cuStreamQuery,                 2000, 0),
    FK_P(cuStreamQuery,                 cuStreamQuery_ptsz,            7000, 1),
    FK_P(cuStreamIsCapturing,           cuStreamIsCapturing,           10000, 0),
    FK_P(cuStreamIsCapturing,           cuStreamIsCapturing_ptsz,      10000, 1),
    FK_P(cuStreamWaitEvent,             cuStreamWaitEvent,             3020, 0),
    FK_P(cuStreamWaitEvent,             cuStreamWaitEvent_ptsz,        7000, 1),
    FK_P(cuEventCreate,                 cuEventCreate,                 2000, 0),
    FK_P(cuEventDestroy,                cuEventDestroy_v2,             4000, 0),
    FK_P(cuEventRecord,                 cuEventRecord,                 2000, 0),
    FK_P(cuEventRecord,                 cuEventRecord_ptsz,            7000, 1),
    FK_P(cuEventSynchronize,            cuEventSynchronize,            2000, 0),
    FK_P(cuEventQuery,                  cuEventQuery,                  2000, 0),
    FK_P(cuLaunchHostFunc,              cuLaunchHostFunc,              10000, 0),
    FK_P(cuLaunchHostFunc,              cuLaunchHostFunc_ptsz,         10000, 1),

    FK_P(cuMemAlloc,                    cuMemAlloc,                    2000, 0),
    FK_P(cuMemAlloc,                    cuMemAlloc_v2,                 3020, 0),
    FK_P(cuMemFree,                     cuMemFree,                     2000, 0),
    FK_P(cuMemFree,                     cuMemFree_v2,                  3020, 0),
    FK_P(cuMemAllocAsync,               cuMemAllocAsync,               11020, 0),
    FK_P(cuMemAllocAsync,               cuMemAllocAsync_ptsz,          11020, 1),
    FK_P(cuMemFreeAsync,                cuMemFreeAsync,                11020, 0),
    FK_P(cuMemFreeAsync,                cuMemFreeAsync_ptsz,           11020, 1),
    FK_P(cuMemAllocFromPoolAsync,       cuMemAllocFromPoolAsync,       11020, 0),
    FK_P(cuMemAllocFromPoolAsync,       cuMemAllocFromPoolAsync_ptsz,  11020, 1),
    FK_P(cuMemPoolTrimTo,               cuMemPoolTrimTo,               11020, 0),
    FK_P(cuMemPoolSetAttribute,         cuMemPoolSetAttribute,         11020, 0),
    FK_P(cuMemPoolGetAttribute,         cuMemPoolGetAttribute,         11020, 0),
    FK_P(cuDeviceGetMemPool,            cuDeviceGetMemPool,            11020, 0),
    FK_P(cuMemGetInfo,                  cuMemGetInfo_v2,               3020, 0),
    FK_P(cuMemsetD8Async,               cuMemsetD8Async,               3020, 0),
    FK_P(cuMemsetD8Async,               cuMemsetD8Async_ptsz,          7000, 1),
    FK_P(cuMemsetD16Async,              cuMemsetD16Async,              3020, 0),
    FK_P(cuMemsetD16Async,              cuMemsetD16Async_ptsz,         7000, 1),
    FK_P(cuMemsetD32Async,              cuMemsetD32Async,              3020, 0),
    FK_P(cuMemsetD32Async,              cuMemsetD32Async_ptsz,         7000, 1),
    FK_P(cuMemcpyDtoDAsync,             cuMemcpyDtoDAsync,             3000, 0),
    FK_P(cuMemcpyDtoDAsync,             cuMemcpyDtoDAsync_v2,          3020, 0),
    FK_P(cuMemcpyDtoDAsync,             cuMemcpyDtoDAsync_v2_ptsz,     7000, 1),
    FK_P(cuMemcpyHtoDAsync,             cuMemcpyHtoDAsync_v2,          3020, 0),
    FK_P(cuMemcpyHtoDAsync,             cuMemcpyHtoDAsync_v2_ptsz,     7000, 1),
    FK_P(cuMemcpyDtoHAsync,             cuMemcpyDtoHAsync_v2,          3020, 0),
    FK_P(cuMemcpyDtoHAsync,             cuMemcpyDtoHAsync_v2_ptsz,     7000, 1),

    FK_P(cuLibraryLoadData,             cuLibraryLoadData,             12000, 0),
    FK_P(cuLibraryGetKernel,            cuLibraryGetKernel,            12000, 0),
    FK_P(cuModuleLoadData,              cuModuleLoadData,              2000, 0),
    FK_P(cuModuleGetFunction,           cuModuleGetFunction,           2000, 0),
    FK_P(cuKernelGetFunction,           cuKernelGetFunction,           12000, 0),
    FK_P(cuKernelGetName,               cuKernelGetName,               12030, 0),
    FK_P(cuFuncGetName,                 cuFuncGetName,                 12030, 0),
    FK_P(cuKernelGetParamInfo,          cuKernelGetParamInfo,          12040, 0),
    FK_P(cuFuncGetParamInfo,            cuFuncGetParamInfo,            12040, 0),
    FK_P(cuOccupancyMaxActiveBlocksPerMultiprocessor,
         cuOccupancyMaxActiveBlocksPerMultiprocessor,                  6050, 0),
    FK_P(cuLaunchKernel,                cuLaunchKernel,                4000, 0),
    FK_P(cuLaunchKernel,                cuLaunchKernel_ptsz,           7000, 1),
    FK_P(cuLaunchKernelEx,              cuLaunchKernelEx,              11060, 0),
    FK_P(cuLaunchKernelEx,              cuLaunchKernelEx_ptsz,         11060, 1),

    FK_P(cuStreamBeginCapture,          cuStreamBeginCapture_v2,       10010, 0),
    FK_P(cuStreamBeginCapture,          cuStreamBeginCapture_v2_ptsz,  10010, 1),
    FK_P(cuStreamBeginCaptureToGraph,   cuStreamBeginCaptureToGraph,   12030, 0),
    FK_P(cuStreamBeginCaptureToGraph,   cuStreamBeginCaptureToGraph_ptsz, 12030, 1),
    FK_P(cuStreamEndCapture,            cuStreamEndCapture,            10000, 0),
    FK_P(cuStreamEndCapture,            cuStreamEndCapture_ptsz,       10000, 1),
    FK_P(cuGraphCreate,                 cuGraphCreate,                 10000, 0),
    FK_P(cuGraphAddKernelNode,          cuGraphAddKernelNode_v2,       12000, 0),
    FK_P(cuGraphKernelNodeSetAttribute, cuGraphKernelNodeSetAttribute, 11000, 0),
    FK_P(cuGraphAddMemsetNode,          cuGraphAddMemsetNode,          10000, 0),
    FK_P(cuGraphAddMemcpyNode,          cuGraphAddMemcpyNode,          10000, 0),
    FK_P(cuGraphExecMemsetNodeSetParams, cuGraphExecMemsetNodeSetParams, 10020, 0),
    FK_P(cuGraphExecMemcpyNodeSetParams, cuGraphExecMemcpyNodeSetParams, 10020, 0),
    FK_P(cuGraphInstantiate,            cuGraphInstantiateWithFlags,   12000, 0),
    FK_P(cuGraphInstantiateWithFlags,   cuGraphInstantiateWithFlags,   11040, 0),
    FK_P(cuGraphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams_v2, 12000, 0),
    FK_P(cuGraphExecUpdate,             cuGraphExecUpdate_v2,          12000, 0),
    FK_P(cuGraphLaunch,                 cuGraphLaunch,                 10000, 0),
    FK_P(cuGraphLaunch,                 cuGraphLaunch_ptsz,            10000, 1),
    FK_P(cuGraphExecDestroy,            cuGraphExecDestroy,            10000, 0),
    FK_P(cuGraphDestroy,                cuGraphDestroy,                10000, 0),

    /* Not a driver call: what tcfuse's table cannot list. */
    FK_P(cuFakeUnknownCall,             cuFakeUnknownCall,             2000, 0),
};

/* The row for (symbol, version, flags), or NULL with *status saying why. */
static const fk_proc_t *fk_lookup(const char *symbol, int version, int ptds,
                                  CUdriverProcAddressQueryResult *status)
{
    const fk_proc_t *best_legacy = NULL, *best_ptds = NULL;
    int known = 0;
    size_t i;
    for (i = 0; symbol && i < sizeof fk_procs / sizeof fk_procs[0]; i++) {
        const fk_proc_t *p = &fk_procs[i];
        const fk_proc_t **best = p->ptds ? &best_ptds : &best_legacy;
        if (strcmp(p->base, symbol) != 0)
            continue;
        known = 1;
        if (p->version <= version && (!*best || p->version > (*best)->version))
            *best = p;
    }
    *status = !known ? CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
                     : (ptds && best_ptds) || best_legacy ? CU_GET_PROC_ADDRESS_SUCCESS
                                                          : CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return ptds && best_ptds ? best_ptds : best_legacy;
}

static CUresult fk_proc(const char *abi, int self, const char *symbol, void **pfn, int version,
                        cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    CUresult rc = fk_injected(abi);
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const fk_proc_t *p = NULL;
    if (!rc) {
        if (!symbol || !pfn || flags > CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
            rc = CUDA_ERROR_INVALID_VALUE;
        } else {
            p = fk_lookup(symbol, version,
                          (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, &st);
            rc = p ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
        }
        if (pfn)
            *pfn = p ? p->fn : NULL;
        if (status)
            *status = st;
    }
    fk_log(self, abi, rc, "symbol=%s version=%d flags=%llu found=%s status=%d",
           symbol ? symbol : "(null)", version, (unsigned long long)flags,
           p ? p->abi : "-", (int)st);
    return rc;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    return fk_proc("cuGetProcAddress", FK_SELF(), symbol, pfn, version, flags, NULL);
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    return fk_proc("cuGetProcAddress_v2", FK_SELF(), symbol, pfn, version, flags, status);
}

const char *fakecuda_symbol_of(const void *p)
{
    size_t i;
    for (i = 0; p && i < sizeof fk_procs / sizeof fk_procs[0]; i++)
        if (fk_procs[i].fn == p)
            return fk_procs[i].abi;
    return NULL;
}
