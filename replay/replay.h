/* replay: graph mode (TCFUSE_MODE=graph). A window of launches seen before is replayed as
 * one CUDA graph, with this window's parameter bytes patched into the nodes whose bytes
 * differ from the last replay, for any CUDA program.
 *
 * How: every window is cut structurally (boundaries, the launch cap TCFUSE_REPLAY_MAX,
 * launches a graph node cannot carry: never the idle timer),
 * so the same work gets the same key whatever the host's timing. Windows run as issued
 * and are learned: a key seen more than TCFUSE_REPLAY_WARMUP times, with at least
 * TCFUSE_REPLAY_MIN launches, becomes a graph, instantiated in the background. From then
 * on a window whose launches follow a ready graph's, launch by launch (a set of the keys'
 * prefixes, read without a lock), is held in its capture window (parameter bytes copied,
 * stream-ordered frees held behind it, allocations passed through); when it closes with a
 * ready graph's key it runs as that graph; when it leaves the graph's path, or closes
 * with another key, what was held goes out as issued.
 *
 * Where it sits: between interpose/ and exec/. The launch and memory hooks of interpose/
 * call tcf_replay_* before the driver sees the call; replay records what it holds in
 * capture's windows (capture/window.h) and capture calls back up through the table
 * interpose hands it at start (tcf_replay_flush, tcf_replay_stop, tcf_replay_stats_print).
 * The driver's graph API comes from base/driver.h's table, resolved at run time.
 *
 * Threads: every function here runs on the application's thread that made the call;
 * graphs are instantiated by replay's own worker thread (or, with TCFUSE_REPLAY_SYNC, on
 * the thread that closes the window). Nothing fails visibly: whatever goes wrong runs the
 * held launches as the application issued them, counted under a named reason.
 */
#ifndef TCF_REPLAY_H
#define TCF_REPLAY_H

#include <cuda.h>

#include "capture/capture.h"

struct tcf_window;

/* Starts graph mode (its worker). Called once by interpose/ after tcf_capture_init.
 * Without the driver's graph API nothing is ever held and every call below returns 0. */
void tcf_replay_init(void);

/* A kernel launch on its way to the driver: returns 1 when replay held it (the wrapper
 * returns *result, CUDA_SUCCESS), 0 when the caller must issue and record it as in
 * observe mode (held work that must precede it has been issued; *w is its window, for
 * tcf_capture_launch, or NULL), 2 when the caller must issue it and only count it
 * (tcf_capture_count: its stream's holding is paused). attrs: those of cuLaunchKernelEx,
 * or NULL. *k: f's kernel when replay looked it up (for tcf_capture_launch, which then
 * need not), else NULL. */
int tcf_replay_launch(tcf_via_t via, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream stream,
                      int ptds, void **params, void **extra, const CUlaunchAttribute *attrs,
                      unsigned nattrs, CUresult *result, struct tcf_window **w,
                      struct tcf_kernel **k);
/* A stream-ordered free: 1 when held behind held launches that may read the block, 0
 * when the caller must free now. */
int tcf_replay_free(CUdeviceptr ptr, CUstream stream, int ptds);
/* A device memset (elem 1, 2 or 4 bytes, count elements) or a device-to-device copy on
 * its way to the driver: 1 when held (a node of the graph, like a launch), 0 when the
 * caller must issue and record it (held work it must follow has been issued). */
int tcf_replay_memset(const char *call, CUdeviceptr dst, unsigned value, unsigned elem,
                      size_t count, CUstream stream, int ptds);
int tcf_replay_memcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream, int ptds);
/* The application is about to begin a stream capture of its own (called before the
 * driver's cuStreamBeginCapture: waits for the worker to leave its instantiation, which
 * the capture could otherwise refuse), or ended one (after cuStreamEndCapture, or after a
 * begin that failed). While any is under way nothing is held, learned or instantiated. */
void tcf_replay_capture_begin(void);
void tcf_replay_capture_end(void);

/* capture's upward table (capture.h): flush runs or learns the closing window (w locked),
 * stop issues what is held and parks the worker (at exit), stats_print the summary. */
void tcf_replay_flush(struct tcf_window *w, const char *reason);
void tcf_replay_stop(void);
void tcf_replay_stats_print(void);
/* Every boundary call, after the windows closed: a call that waits for the GPU starts the
 * next windows short (slow start, hold.c). */
void tcf_replay_boundary(const char *call);

#endif
