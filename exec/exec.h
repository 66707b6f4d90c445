/* exec: running a window's plan. Today that is fuse mode: PyTorch's eager elementwise
 * launches are held in their window (or issued and kept to learn from), and when the window
 * must close its plan runs: fused groups whose generated kernel is ready as one launch
 * each, everything else as the application issued it. Generated kernels come from a
 * background worker that compiles (codegen/), loads, and verifies them bitwise against the
 * launches they replace before first use; the disk cache (cache/) serves the next process.
 *
 * Where it sits: above capture/. The launch hooks of interpose/ call tcf_exec_launch and
 * its kin before the driver sees the call; exec decides whether to hold it and records it
 * in capture's window (capture/window.h). capture calls back up only through the table of
 * functions interpose hands it at start (tcf_exec_flush, tcf_exec_stop,
 * tcf_exec_stats_print). Below exec: recognize/ (what a launch computes), fuser/ (which ops
 * run together), codegen/ (source, NVRTC), cache/.
 *
 * Threads: every function here runs on the application's thread that made the call, except
 * tcf_exec_stop (an exit handler). The worker is exec's own thread. Nothing fails visibly:
 * whatever goes wrong falls back to the original launches and is counted under a reason.
 */
#ifndef TCF_EXEC_H
#define TCF_EXEC_H

#include <cuda.h>

struct tcf_window;

/* Starts fuse mode (the worker, which opens NVRTC and the disk cache at once). Called once
 * by interpose/ after tcf_capture_init. Without a worker, or with TCFUSE_FUSION=0, nothing
 * is ever held and every call below returns at once. */
void tcf_exec_init(void);

/* A cuLaunchKernel on its way to the driver: returns 1 when exec took care of it (held in
 * the window, or issued and recorded with its decoded op) and the wrapper must return
 * *result; 0 when the caller must issue and record it as usual, 2 when it must issue it
 * and only count it (tcf_capture_count_kernel with *k, its kernel: a launch fuse mode does
 * not act on); with 0 and 2, held work that must precede it has been issued. */
struct tcf_kernel;
int tcf_exec_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                    unsigned by, unsigned bz, unsigned smem, CUstream stream, void **params,
                    void **extra, CUresult *result, struct tcf_kernel **k);
/* A stream-ordered free: TCF_FREE_HELD when held (it must run after held work that may
 * use the block), TCF_FREE_KEPT when its block is kept for the next allocation of its size
 * on its stream (exec/reuse.c; the caller records the free and returns success without
 * the driver), TCF_FREE_NOW when the caller must free now. */
enum { TCF_FREE_NOW = 0, TCF_FREE_HELD = 1, TCF_FREE_KEPT = 2 };
int tcf_exec_free(CUdeviceptr ptr, CUstream stream);
/* An allocation failed for memory: blocks kept for reuse go back to the driver, and the
 * pool grown at the start (exec/reserve.c) gives back what it holds unused, once. Nonzero
 * when anything went back (the caller retries). */
int tcf_exec_memory_back(const char *why);
/* A boundary call (capture's table): kept blocks go back before the calls that give
 * memory back or end a stream or context. */
void tcf_exec_boundary(const char *call);
/* A stream-ordered allocation of `size` on `stream` (cuMemAllocAsync, not _ptsz): 1 when
 * the block of a held free of that size on that stream is handed over, or a block kept
 * for reuse (*ptr set; the caller records the allocation and returns success without the
 * driver), 0 when the caller must allocate. Eager's pool would have handed that block out
 * at once (freed on the same stream, in order); held, the free reaches the pool only at
 * the flush and the pool meanwhile takes its slow path (docs/PERF.md, the training step). The block's new
 * users run after the held launches that read it (same stream, in order) and no other
 * stream can have it: safe, and the planner sees the old buffer die and a new one begin.
 * tcf_exec_alloced records the size of a block the driver allocated through
 * cuMemAllocAsync. tcf_exec_forget: every other allocation and free at ptr (cuMemAlloc,
 * cuMemFree, another pool, _ptsz) forgets its size, so that a size is known only for a
 * block whose latest allocation was a recorded cuMemAllocAsync and which has not been
 * freed since: a block is never handed over for more than it is. */
int tcf_exec_alloc(size_t size, CUstream stream, CUdeviceptr *ptr);
void tcf_exec_alloced(CUdeviceptr ptr, size_t size);
void tcf_exec_forget(CUdeviceptr ptr);
/* Any other device work on `stream` (memsets, copies, launches exec does not take): issues
 * held work first, so that order is kept. */
void tcf_exec_order(CUstream stream);
/* Other work that may go ahead of the decoded work in its window (exec/ahead.c). A device
 * memset of `bytes` at dst on stream (not _ptsz): the window, locked, when it may; the
 * caller issues it and hands its result to tcf_exec_ahead_memset, which records it and
 * unlocks. NULL: order it with tcf_exec_order. A cuLaunchKernelEx (not _ptsz): 1 when exec
 * issued it ahead and recorded it (the wrapper returns *rc), 0 otherwise, with *kout the
 * kernel when exec looked it up (the wrapper's capture then need not). */
struct tcf_window *tcf_exec_ahead_range(CUstream stream, uint64_t dst, uint64_t bytes);
void tcf_exec_ahead_memset(struct tcf_window *w, const char *call, CUdeviceptr dst,
                           unsigned value, unsigned elem, size_t count, CUstream stream,
                           CUresult rc);
int tcf_exec_ahead_launch_ex(CUfunction f, const CUlaunchConfig *config, void **params,
                             void **extra, CUresult *rc, struct tcf_kernel **kout);

/* capture's upward table (capture.h). flush: issues the window's held work by its plan
 * and plans what ran as issued, to learn its kernels (w locked). stop: at exit, drops held
 * work (nothing can observe it any more) and parks the worker. stats_print: fuse mode's
 * lines of the summary. */
void tcf_exec_flush(struct tcf_window *w, const char *reason);
/* In a child forked after start (interpose/init.c): exec acts on nothing from here on. */
void tcf_exec_forked(void);
void tcf_exec_stop(void);
void tcf_exec_stats_print(void);

#endif
