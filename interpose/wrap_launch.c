/* Launch wrappers. Observe mode: the launch goes to the driver at once, then capture
 * records it (with a copy of the parameter bytes) and the driver's result is returned
 * unchanged. Fuse mode offers legacy-stream cuLaunchKernel launches to exec/, graph mode
 * every launch to replay/; what they do not take goes on as in observe mode. This is the
 * hot path: every kernel of the process passes here. */
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

/* Fuse mode takes only legacy-stream cuLaunchKernel launches (holds them, or issues and
 * records them itself, or has them only counted); the other forms keep order by issuing
 * held work first. */
#define TCF_HOLD_cuLaunchKernel(args)                                                    \
    if (tcf_fusing()) {                                                                  \
        CUresult taken_rc;                                                               \
        int x_ = tcf_exec_launch args;                                                   \
        if (x_ == 1)                                                                     \
            return taken_rc;                                                             \
        quiet = x_ == 2;                                                                 \
    }
#define TCF_HOLD_OTHER(stream)                                                           \
    if (tcf_fusing())                                                                    \
        tcf_exec_order(stream);

#define TCF_LAUNCH_BODY(abi, ptds)                                                       \
    CUresult tcf_hook_##abi TCF_LAUNCH_PARAMS                                            \
    {                                                                                    \
        tcf_fn_##abi##_t real = TCF_REAL(abi);                                           \
        if (!real)                                                                       \
            return CUDA_ERROR_NOT_FOUND;                                                 \
        struct tcf_window *win = NULL;                                                   \
        struct tcf_kernel *kq = NULL;   /* f's kernel, where fuse or graph mode looked    \
                                         * it up already */                              \
        int quiet = 0;                                                                   \
        if (tcf_replaying()) {                                                           \
            CUresult held_rc;                                                            \
            int r_ = tcf_replay_launch(TCF_VIA_LAUNCH, f, gx, gy, gz, bx, by, bz, smem,  \
                                       stream, ptds, params, extra, NULL, 0, &held_rc,   \
                                       &win, &kq);                                       \
            if (r_ == 1)                                                                 \
                return held_rc;                                                          \
            quiet = r_ == 2;                                                             \
        } else if (!(ptds)) {                                                            \
            TCF_HOLD_cuLaunchKernel((f, gx, gy, gz, bx, by, bz, smem, stream, params,    \
                                     extra, &taken_rc, &kq))                             \
        } else {                                                                         \
            TCF_HOLD_OTHER(stream)                                                       \
        }                                                                                \
        CUresult rc = real TCF_LAUNCH_ARGS;                                              \
        if (quiet && kq)                                                                 \
            tcf_capture_count_kernel(kq, rc);                                            \
        else if (quiet)                                                                  \
            tcf_capture_count(f, rc);                                                    \
        else if (tcf_on())                                                               \
            tcf_capture_launch(TCF_VIA_LAUNCH, f, gx, gy, gz, bx, by, bz, smem, stream,  \
                               ptds, params, extra, NULL, 0, rc, win, kq);               \
        return rc;                                                                       \
    }                                                                                    \
    TCF_EXPORT(abi)

#define TCF_LAUNCHEX_BODY(abi, ptds)                                                     \
    CUresult tcf_hook_##abi TCF_LAUNCHEX_PARAMS                                          \
    {                                                                                    \
        tcf_fn_##abi##_t real = TCF_REAL(abi);                                           \
        if (!real)                                                                       \
            return CUDA_ERROR_NOT_FOUND;                                                 \
        struct tcf_window *win = NULL;                                                   \
        struct tcf_kernel *kq = NULL;   /* f's kernel, where ahead.c or replay looked it  \
                                         * up already */                                 \
        int quiet = 0;                                                                   \
        if (tcf_replaying() && config) {                                                 \
            CUresult held_rc;                                                            \
            int r_ = tcf_replay_launch(TCF_VIA_LAUNCH_EX, f, config->gridDimX,           \
                                       config->gridDimY, config->gridDimZ,               \
                                       config->blockDimX, config->blockDimY,             \
                                       config->blockDimZ, config->sharedMemBytes,        \
                                       config->hStream, ptds, params, extra,             \
                                       config->attrs, config->numAttrs, &held_rc, &win,  \
                                       &kq);                                             \
            if (r_ == 1)                                                                 \
                return held_rc;                                                          \
            quiet = r_ == 2;                                                             \
        } else if (tcf_fusing() && !(ptds)) {                                            \
            CUresult ahead_rc;                                                           \
            if (tcf_exec_ahead_launch_ex(f, config, params, extra, &ahead_rc, &kq))      \
                return ahead_rc;   /* issued ahead of held work, and recorded */         \
        }                                                                                \
        TCF_HOLD_OTHER(config ? config->hStream : NULL)                                  \
        CUresult rc = real TCF_LAUNCHEX_ARGS;                                            \
        if (quiet && kq)                                                                 \
            tcf_capture_count_kernel(kq, rc);                                            \
        else if (quiet)                                                                  \
            tcf_capture_count(f, rc);                                                    \
        else if (tcf_on() && config)                                                     \
            tcf_capture_launch(TCF_VIA_LAUNCH_EX, f, config->gridDimX, config->gridDimY, \
                               config->gridDimZ, config->blockDimX, config->blockDimY,   \
                               config->blockDimZ, config->sharedMemBytes,                \
                               config->hStream, ptds, params, extra, config->attrs,      \
                               config->numAttrs, rc, win, kq);                           \
        return rc;                                                                       \
    }                                                                                    \
    TCF_EXPORT(abi)

TCF_LAUNCH_BODY(cuLaunchKernel, 0)
TCF_LAUNCH_BODY(cuLaunchKernel_ptsz, 1)
TCF_LAUNCHEX_BODY(cuLaunchKernelEx, 0)
TCF_LAUNCHEX_BODY(cuLaunchKernelEx_ptsz, 1)
