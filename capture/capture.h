/* capture: per-stream windows of driver work, keys, stats, traces.
 *
 * interpose/ calls these from inside the application's driver calls, on the application's
 * threads; capture/ never calls a hooked entry point itself (the driver functions it needs
 * come from base/driver.h's table). Observe mode is interpose -> capture alone: the call
 * has already gone to the driver, and capture records it. A mode that acts on windows
 * (fuse) lives above capture, in exec/, and reaches capture's windows through window.h;
 * capture's one call back up, when a window holding such work must close, goes through
 * the table of functions handed to tcf_capture_init.
 *
 * Ownership: nothing passed in is kept after a call returns; parameter bytes and host
 * buffers are copied. All functions are thread-safe. None of them fails visibly: a
 * failure is counted under a named reason (the stats) and the application's call goes on.
 */
#ifndef TCF_CAPTURE_H
#define TCF_CAPTURE_H

#include <stdatomic.h>
#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

struct tcf_window;
struct tcf_kernel;   /* recognize/recognize.h */

/* What capture calls upward, into the mode acting on its windows (exec/). Every member may
 * be NULL (observe mode: nothing acts). */
typedef struct {
    /* A window with work the mode kept (held, or issued and kept to learn from) is about to
     * close: issue what is held and learn from the rest. The window is locked. */
    void (*flush)(struct tcf_window *w, const char *reason);
    /* At exit, before the last windows close: stop acting (drop held work, stop threads). */
    void (*stop)(void);
    /* At exit with TCFUSE_STATS, after capture's own summary: the mode's lines. */
    void (*stats)(void);
    /* flush is called for every window that closes with events, not only for those with
     * work the mode kept (replay learns the key of every window). */
    int flush_all;
    /* Windows close at structural points only (boundaries, the launch cap, the mode's own
     * cuts), never after an idle gap: the same work must be cut the same way whatever the
     * host's timing. */
    int no_idle;
    /* The launch cap of a window; 0: TCFUSE_WINDOW_MAX. */
    uint32_t window_max;
    /* Every boundary call, after the windows closed: the mode's own care (fuse mode gives
     * kept blocks back before cuMemPoolTrimTo, cuStreamDestroy, ...). May be NULL. */
    void (*boundary)(const char *call);
} tcf_capture_up_t;

/* Stream captures of the application under way (cuStreamBeginCapture to its end), in
 * every mode: nothing may take its allocations or frees meanwhile. */
extern atomic_int tcf_app_captures;

/* Called once, by the first hooked call, after tcf_config_load and tcf_driver_set. up may
 * be NULL; it is copied. */
void tcf_capture_init(const tcf_capture_up_t *up);

/* Which entry point a call came through. The names are what stats and traces print. */
typedef enum {
    TCF_VIA_LAUNCH = 0,    /* cuLaunchKernel */
    TCF_VIA_LAUNCH_EX,     /* cuLaunchKernelEx */
} tcf_via_t;

/* Registers, once, the exit handler that stops the recording (tcf_capture_quiesce): at a
 * launch, so that it runs before the runtime's own exit handlers. The launch calls below
 * call it; a mode that takes a launch itself (exec/) calls it first. */
void tcf_capture_exit_hook(void);

/* A launch issued with result rc that is counted (launches, errors, its kernel's
 * launches) and not recorded: a paused stream's in graph and full mode, for which
 * tcf_replay_launch said so. tcf_capture_launch counts the same way. */
void tcf_capture_count(CUfunction f, CUresult rc);
/* The same for a launch whose kernel the caller already looked up (fuse mode's). */
void tcf_capture_count_kernel(struct tcf_kernel *k, CUresult rc);

/* A kernel launch, already issued with result rc. `ptds` is set when it came through a
 * _ptsz entry point (stream 0 then means the per-thread default stream). Exactly one of
 * params/extra is used, as the driver would. attrs: cuLaunchKernelEx's (kept with the
 * launch: they are part of what a replay must launch), or NULL. w: the launch's window
 * when the caller already found it (tcf_window_for), else NULL; k: f's kernel when the
 * caller already looked it up (tcf_kernel_get), else NULL. */
void tcf_capture_launch(tcf_via_t via, CUfunction f,
                        unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, CUstream stream, int ptds,
                        void **params, void **extra, const CUlaunchAttribute *attrs,
                        unsigned nattrs, CUresult rc, struct tcf_window *w,
                        struct tcf_kernel *k);

/* Memory: `call` is the driver entry point's name (a static string). stream is NULL and
 * has_stream 0 for the synchronous forms. */
void tcf_capture_alloc(const char *call, CUdeviceptr ptr, size_t size,
                       CUstream stream, int has_stream, int ptds, CUresult rc);
void tcf_capture_free(const char *call, CUdeviceptr ptr,
                      CUstream stream, int has_stream, int ptds, CUresult rc);
/* The driver's time in one stream-ordered allocation or free (TCFUSE_STATS only). */
void tcf_time_alloc(uint64_t ns);
void tcf_time_free(uint64_t ns);
/* Stream-ordered device work that is not a kernel: device memsets and device-to-device
 * copies. elem is the element size of a memset (1, 2, 4), 0 for a copy. */
void tcf_capture_memset(const char *call, CUdeviceptr dst, unsigned value, unsigned elem,
                        size_t count, CUstream stream, int ptds, CUresult rc);
void tcf_capture_memcpy(const char *call, CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                        CUstream stream, int ptds, CUresult rc);

/* A call that can observe device state, or one tcfuse does not know: every window closes
 * before it, with `call` as the reason. Called before the real call is made. */
void tcf_capture_boundary(const char *call);

/* At exit (and for tests): stops the acting mode (up->stop), closes every window, prints
 * the stats when asked and writes the trace's end. */
void tcf_capture_shutdown(void);
/* In a child forked after start: the windows and figures are the parent's copies; the
 * child's exit neither closes nor prints them (interpose/init.c). */
void tcf_capture_forked(void);
/* Exit has begun: nothing is recorded from here on, so that the calls other libraries'
 * exit handlers make pass straight through, never waiting on a window's lock (which the
 * thread that called exit may hold, when it did from a signal handler that interrupted
 * it). An exit handler itself, registered at the first launch; also called by exec's. */
void tcf_capture_quiesce(void);

#endif
