/* Memory and stream-ordered copy/memset wrappers: call the driver, record, return its
 * result unchanged. */
#include "base/base.h"
#include "capture/capture.h"
#include "exec/exec.h"
#include "interpose/interpose.h"
#include "replay/replay.h"

static inline int tcf_on(void)
{
    return atomic_load_explicit(&tcf_interpose_mode, memory_order_relaxed) != TCF_MODE_OFF;
}

static inline int tcf_fusing(void)
{
    return atomic_load_explicit(&tcf_interpose_mode, memory_order_relaxed) == TCF_MODE_FUSE;
}

static inline int tcf_replaying(void)
{
    int m = atomic_load_explicit(&tcf_interpose_mode, memory_order_relaxed);
    return m == TCF_MODE_GRAPH || m == TCF_MODE_FULL;   /* full: replay owns the windows */
}

#define TCF_REAL_OR_FAIL(abi)                                                            \
    tcf_fn_##abi##_t real = TCF_REAL(abi);                                               \
    if (!real)                                                                           \
        return CUDA_ERROR_NOT_FOUND

/* Out of memory with freed blocks kept for reuse (exec/reuse.c) or the pool grown at the
 * start (exec/reserve.c): the blocks go back to the driver, the pool gives back what it
 * holds unused, and the allocation is tried once more. */
#define TCF_RETRY_OOM(rc, call)                                                          \
    do {                                                                                 \
        if ((rc) == CUDA_ERROR_OUT_OF_MEMORY && tcf_fusing() &&                          \
            tcf_exec_memory_back("out of memory"))                                       \
            rc = call;                                                                   \
    } while (0)

CUresult tcf_hook_cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
    TCF_REAL_OR_FAIL(cuMemAlloc_v2);
    CUresult rc = real(dptr, size);
    TCF_RETRY_OOM(rc, real(dptr, size));
    if (rc == CUDA_SUCCESS && dptr && tcf_fusing())
        tcf_exec_forget(*dptr);
    if (tcf_on())
        tcf_capture_alloc("cuMemAlloc", rc == CUDA_SUCCESS && dptr ? *dptr : 0, size,
                          NULL, 0, 0, rc);
    return rc;
}

/* cuMemFree waits for the device: it is a boundary as well as a free. */
CUresult tcf_hook_cuMemFree_v2(CUdeviceptr dptr)
{
    TCF_REAL_OR_FAIL(cuMemFree_v2);
    if (tcf_on())
        tcf_capture_boundary("cuMemFree");
    if (tcf_fusing())
        tcf_exec_forget(dptr);
    CUresult rc = real(dptr);
    if (tcf_on())
        tcf_capture_free("cuMemFree", dptr, NULL, 0, 0, rc);
    return rc;
}

#define TCF_ALLOC_ASYNC(abi, ptds)                                                       \
    CUresult tcf_hook_##abi(CUdeviceptr *dptr, size_t size, CUstream stream)             \
    {                                                                                    \
        TCF_REAL_OR_FAIL(abi);                                                           \
        /* Fuse mode: a held free of this size on this stream hands its block over. */   \
        CUresult rc;                                                                     \
        if (!(ptds) && dptr && tcf_fusing() && tcf_exec_alloc(size, stream, dptr)) {   \
            rc = CUDA_SUCCESS;                                                           \
        } else {                                                                         \
            uint64_t t0 = tcf_cfg.stats ? tcf_now_ns() : 0;                              \
            rc = real(dptr, size, stream);                                               \
            TCF_RETRY_OOM(rc, real(dptr, size, stream));                                 \
            if (t0)                                                                      \
                tcf_time_alloc(tcf_now_ns() - t0);                                       \
            if (rc == CUDA_SUCCESS && dptr && tcf_fusing()) {                            \
                if (ptds)   /* never handed over: its free is not held */                \
                    tcf_exec_forget(*dptr);                                              \
                else                                                                     \
                    tcf_exec_alloced(*dptr, size);                                       \
            }                                                                            \
        }                                                                                \
        if (tcf_on())                                                                    \
            tcf_capture_alloc("cuMemAllocAsync", rc == CUDA_SUCCESS && dptr ? *dptr : 0, \
                              size, stream, 1, ptds, rc);                                \
        return rc;                                                                       \
    }
#define TCF_ALLOC_POOL(abi, ptds)                                                        \
    CUresult tcf_hook_##abi(CUdeviceptr *dptr, size_t size, CUmemoryPool pool,           \
                            CUstream stream)                                             \
    {                                                                                    \
        TCF_REAL_OR_FAIL(abi);                                                           \
        CUresult rc = real(dptr, size, pool, stream);                                    \
        TCF_RETRY_OOM(rc, real(dptr, size, pool, stream));                               \
        if (rc == CUDA_SUCCESS && dptr && tcf_fusing())                                  \
            tcf_exec_forget(*dptr);  /* another pool: never handed over */               \
        if (tcf_on())                                                                    \
            tcf_capture_alloc("cuMemAllocFromPoolAsync",                                 \
                              rc == CUDA_SUCCESS && dptr ? *dptr : 0, size, stream, 1,   \
                              ptds, rc);                                                 \
        return rc;                                                                       \
    }
#define TCF_FREE_ASYNC(abi, ptds)                                                        \
    CUresult tcf_hook_##abi(CUdeviceptr dptr, CUstream stream)                           \
    {                                                                                    \
        TCF_REAL_OR_FAIL(abi);                                                           \
        /* Fuse mode: a free behind held launches waits for them (they may read it); */ \
        /* another is kept for the next allocation of its size on its stream. */         \
        int kept = 0;                                                                    \
        if (tcf_fusing()) {                                                              \
            if (!(ptds)) {                                                               \
                int how = tcf_exec_free(dptr, stream);                                   \
                if (how == TCF_FREE_HELD)                                                \
                    return CUDA_SUCCESS;                                                 \
                kept = how == TCF_FREE_KEPT;                                             \
            } else {                                                                     \
                tcf_exec_forget(dptr);                                                   \
                tcf_exec_order(stream);                                                  \
            }                                                                            \
        } else if (tcf_replaying() && tcf_replay_free(dptr, stream, ptds)) {             \
            return CUDA_SUCCESS;                                                         \
        }                                                                                \
        uint64_t t0 = !kept && tcf_cfg.stats ? tcf_now_ns() : 0;                         \
        CUresult rc = kept ? CUDA_SUCCESS : real(dptr, stream);                          \
        if (t0)                                                                          \
            tcf_time_free(tcf_now_ns() - t0);                                            \
        if (tcf_on())                                                                    \
            tcf_capture_free("cuMemFreeAsync", dptr, stream, 1, ptds, rc);               \
        return rc;                                                                       \
    }
#define TCF_MEMSET(abi, type, elem, name, ptds)                                          \
    CUresult tcf_hook_##abi(CUdeviceptr dst, type v, size_t n, CUstream stream)          \
    {                                                                                    \
        TCF_REAL_OR_FAIL(abi);                                                           \
        if (tcf_fusing()) {                                                              \
            struct tcf_window *aw = (ptds) ? NULL                                        \
                : tcf_exec_ahead_range(stream, dst, (uint64_t)n * (elem));               \
            if (aw) {   /* ahead of held work it does not touch: exec records it */      \
                CUresult arc = real(dst, v, n, stream);                                  \
                tcf_exec_ahead_memset(aw, name, dst, v, elem, n, stream, arc);           \
                return arc;                                                              \
            }                                                                            \
            tcf_exec_order(stream);                                                      \
        } else if (tcf_replaying() &&                                                    \
                   tcf_replay_memset(name, dst, v, elem, n, stream, ptds)) {             \
            return CUDA_SUCCESS;                                                         \
        }                                                                                \
        CUresult rc = real(dst, v, n, stream);                                           \
        if (tcf_on())                                                                    \
            tcf_capture_memset(name, dst, v, elem, n, stream, ptds, rc);                 \
        return rc;                                                                       \
    }
#define TCF_COPY(abi, ptds)                                                              \
    CUresult tcf_hook_##abi(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) \
    {                                                                                    \
        TCF_REAL_OR_FAIL(abi);                                                           \
        if (tcf_fusing())                                                                \
            tcf_exec_order(stream);                                                  \
        else if (tcf_replaying() && tcf_replay_memcpy(dst, src, n, stream, ptds))        \
            return CUDA_SUCCESS;                                                         \
        CUresult rc = real(dst, src, n, stream);                                         \
        if (tcf_on())                                                                    \
            tcf_capture_memcpy("cuMemcpyDtoDAsync", dst, src, n, stream, ptds, rc);      \
        return rc;                                                                       \
    }

TCF_ALLOC_ASYNC(cuMemAllocAsync, 0)
TCF_ALLOC_ASYNC(cuMemAllocAsync_ptsz, 1)
TCF_ALLOC_POOL(cuMemAllocFromPoolAsync, 0)
TCF_ALLOC_POOL(cuMemAllocFromPoolAsync_ptsz, 1)
TCF_FREE_ASYNC(cuMemFreeAsync, 0)
TCF_FREE_ASYNC(cuMemFreeAsync_ptsz, 1)
TCF_MEMSET(cuMemsetD8Async, unsigned char, 1, "cuMemsetD8Async", 0)
TCF_MEMSET(cuMemsetD8Async_ptsz, unsigned char, 1, "cuMemsetD8Async", 1)
TCF_MEMSET(cuMemsetD16Async, unsigned short, 2, "cuMemsetD16Async", 0)
TCF_MEMSET(cuMemsetD16Async_ptsz, unsigned short, 2, "cuMemsetD16Async", 1)
TCF_MEMSET(cuMemsetD32Async, unsigned int, 4, "cuMemsetD32Async", 0)
TCF_MEMSET(cuMemsetD32Async_ptsz, unsigned int, 4, "cuMemsetD32Async", 1)
TCF_COPY(cuMemcpyDtoDAsync_v2, 0)
TCF_COPY(cuMemcpyDtoDAsync_v2_ptsz, 1)

TCF_EXPORT(cuMemAlloc_v2)
TCF_EXPORT(cuMemFree_v2)
TCF_EXPORT(cuMemAllocAsync)
TCF_EXPORT(cuMemAllocAsync_ptsz)
TCF_EXPORT(cuMemAllocFromPoolAsync)
TCF_EXPORT(cuMemAllocFromPoolAsync_ptsz)
TCF_EXPORT(cuMemFreeAsync)
TCF_EXPORT(cuMemFreeAsync_ptsz)
TCF_EXPORT(cuMemsetD8Async)
TCF_EXPORT(cuMemsetD8Async_ptsz)
TCF_EXPORT(cuMemsetD16Async)
TCF_EXPORT(cuMemsetD16Async_ptsz)
TCF_EXPORT(cuMemsetD32Async)
TCF_EXPORT(cuMemsetD32Async_ptsz)
TCF_EXPORT(cuMemcpyDtoDAsync_v2)
TCF_EXPORT(cuMemcpyDtoDAsync_v2_ptsz)
