/* The application's own stream captures (torch.cuda.graph, cudaStreamBeginCapture): each
 * begin and end is a boundary, as before, and graph mode counts the captures under way so
 * that it holds nothing inside one (a held launch would leave the captured graph and run
 * at the wrong time) and makes no graph of its own meanwhile. */
#include "capture/capture.h"
#include "interpose/interpose.h"
#include "replay/replay.h"

static inline int tcf_on(void)
{
    return atomic_load_explicit(&tcf_interpose_mode, memory_order_relaxed) != TCF_MODE_OFF;
}

static inline int tcf_replaying(void)
{
    int m = atomic_load_explicit(&tcf_interpose_mode, memory_order_relaxed);
    return m == TCF_MODE_GRAPH || m == TCF_MODE_FULL;   /* full: replay owns the windows */
}

/* Counted before the boundary, so that no launch is held between it and the begin. */
#define TCF_BEGIN_BODY(abi, name, params, args)                                          \
    CUresult tcf_hook_##abi params                                                       \
    {                                                                                    \
        tcf_fn_##abi##_t real = TCF_REAL(abi);                                           \
        if (!real)                                                                       \
            return CUDA_ERROR_NOT_FOUND;                                                 \
        int counted = tcf_replaying();                                                   \
        if (counted)                                                                     \
            tcf_replay_capture_begin();                                                  \
        atomic_fetch_add(&tcf_app_captures, 1);                                          \
        if (tcf_on())                                                                    \
            tcf_capture_boundary(name);                                                  \
        CUresult rc = real args;                                                         \
        if (rc != CUDA_SUCCESS) {                                                        \
            atomic_fetch_sub(&tcf_app_captures, 1);                                      \
            if (counted)                                                                 \
                tcf_replay_capture_end();                                                \
        }                                                                                \
        return rc;                                                                       \
    }                                                                                    \
    TCF_EXPORT(abi)

#define TCF_END_BODY(abi)                                                                \
    CUresult tcf_hook_##abi(CUstream hStream, CUgraph *phGraph)                          \
    {                                                                                    \
        tcf_fn_##abi##_t real = TCF_REAL(abi);                                           \
        if (!real)                                                                       \
            return CUDA_ERROR_NOT_FOUND;                                                 \
        if (tcf_on())                                                                    \
            tcf_capture_boundary("cuStreamEndCapture");                                  \
        CUresult rc = real(hStream, phGraph);                                            \
        /* Ended, or invalidated: either way that capture is over. */                    \
        int n = atomic_load(&tcf_app_captures);                                          \
        while (n > 0 && !atomic_compare_exchange_weak(&tcf_app_captures, &n, n - 1))     \
            ;                                                                            \
        if (tcf_replaying())                                                             \
            tcf_replay_capture_end();                                                    \
        return rc;                                                                       \
    }                                                                                    \
    TCF_EXPORT(abi)

#define TCF_BEGIN_PARAMS (CUstream hStream, CUstreamCaptureMode mode)
#define TCF_TOGRAPH_PARAMS (CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies, \
                            const CUgraphEdgeData *dependencyData, size_t numDependencies,    \
                            CUstreamCaptureMode mode)
#define TCF_TOGRAPH_ARGS (hStream, hGraph, dependencies, dependencyData, numDependencies, mode)

TCF_BEGIN_BODY(cuStreamBeginCapture_v2, "cuStreamBeginCapture", TCF_BEGIN_PARAMS, (hStream, mode))
TCF_BEGIN_BODY(cuStreamBeginCapture_v2_ptsz, "cuStreamBeginCapture", TCF_BEGIN_PARAMS,
               (hStream, mode))
TCF_BEGIN_BODY(cuStreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph", TCF_TOGRAPH_PARAMS,
               TCF_TOGRAPH_ARGS)
TCF_BEGIN_BODY(cuStreamBeginCaptureToGraph_ptsz, "cuStreamBeginCaptureToGraph",
               TCF_TOGRAPH_PARAMS, TCF_TOGRAPH_ARGS)
TCF_END_BODY(cuStreamEndCapture)
TCF_END_BODY(cuStreamEndCapture_ptsz)
