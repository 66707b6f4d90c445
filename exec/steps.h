/* exec/steps.h: a window's fusion plan as steps, for the layer above (full mode).
 *
 * In full mode (TCFUSE_MODE=full) replay/ owns the windows: it holds, cuts and keys them as
 * in graph mode, and the steps of a window's fusion plan are what its graph holds. exec
 * plans a window as fuse mode would issue it (decode its launches, plan groups, find each
 * group's generated kernel) and hands the steps back instead of issuing them: a step is an
 * event of the window as the application issued it (a launch, memset or copy), or one
 * generated kernel in place of a group's launches, at its last launch, with its one
 * parameter bound for this window. Frees and allocations are no steps (replay issues a
 * window's held frees after its graph).
 *
 * A plan is `final` when no group waits for its kernel: every group either runs fused
 * (compiled, loaded, verified bitwise) or runs as issued for good (its kernel failed, or
 * could not be made). A plan not final runs the waiting groups' launches as issued; the
 * caller builds from it all the same and plans again once the kernel table has moved
 * (tcf_exec_steps_epoch), so that the windows after it with the same key get the same
 * steps until then; a step list that differs later (a kernel come or evicted) is the
 * caller's to notice, by comparing.
 *
 * Nothing here issues work or holds a window; the caller holds w's lock. Threads: the
 * application's thread that closes the window.
 */
#ifndef TCF_EXEC_STEPS_H
#define TCF_EXEC_STEPS_H

#include <cuda.h>
#include <stdint.h>

#include "fuser/fuser.h"

struct tcf_window;
struct tcf_kernel;

/* The largest parameter of a generated kernel (its tcf_fused_args_t or tcf_rows_args_t). */
#define TCF_STEP_BYTES_MAX 1024

typedef struct {
    uint8_t    fused;          /* 0: event ev as issued; 1: a generated kernel */
    uint8_t    nitems;         /* fused: the launches it replaces */
    uint32_t   ev;             /* the event (fused: the group's last launch) */
    uint32_t   first;          /* fused: the group's first launch (its span: first..ev) */
    uint32_t   g;              /* fused: its group, in the steps' grp */
    CUfunction fn;             /* fused: the generated kernel and its launch */
    uint32_t   grid[3], block[3];
    uint32_t   pbytes;         /* fused: bytes of its one parameter, at boff in bytes */
    uint32_t   boff;
} tcf_step_t;

typedef struct {
    tcf_step_t *step;
    uint32_t    n, cap;
    uint8_t    *bytes;         /* fused steps' parameters */
    uint32_t    blen, bcap;
    uint32_t    fused;         /* fused steps */
    uint32_t    removed;       /* launches fused away */
    int         final;         /* no group waits for its kernel */
    tcf_fgroup_t *grp;         /* fused steps' groups, as planned (for tcf_exec_steps_rebind) */
    uint32_t    ngrp, gcap;
} tcf_steps_t;

/* Whether exec can plan windows for replay (its worker runs, NVRTC was not found absent,
 * TCFUSE_FUSION is on, exit has not begun). The first call makes the worker: not sooner,
 * for a process that forks before its first kernel (exec/worker.c). */
int tcf_exec_steps_on(void);
/* Plans w's node events (launches, memsets, copies) into s (reused from call to call;
 * tcf_steps_free releases it). learn 1: the window ran as issued (a kernel the disk cache
 * has is looked for by the worker); 0: it is held (loaded here and now). Returns 0, or -1
 * when nothing could be planned (out of memory, too many events, exec off): then s holds
 * every node event as issued, final. w locked. */
int tcf_exec_steps(struct tcf_window *w, int learn, tcf_steps_t *s);
void tcf_steps_free(tcf_steps_t *s);
/* A fused step's argument as an earlier window with the key had it bound: its bytes and
 * launch shape (the caller keeps it, for the span's launch bytes it was bound from). */
typedef struct {
    const uint8_t *bytes;
    uint32_t       len;
    uint32_t       grid[3], block[3];
} tcf_step_arg_t;

/* The steps `was` (planned by tcf_exec_steps on an earlier window with w's key, final)
 * bound to w without planning it: each fused step j whose span's launches carry the bytes,
 * or decode to the items, of an earlier window's (have[j], found by the caller's
 * comparison) takes the argument that window's was bound to; each other one is rebuilt
 * from its span's launches, decoded, with the rules that formed its group (tcf_fuser_bind:
 * the same kernel, buffers, stores and vector width, every op it steps over still clear of
 * its bytes; every launch of w decoded where such a group holds a cat, whose two-byte
 * dtype comes from its neighbours), and the steps as issued are w's events. s's groups
 * are was's: its fused steps' g index was->grp, and s->ngrp is 0.
 * A window that frees or allocates is refused (a store dropped or kept depends on frees
 * past a group's span). Returns 0 (s holds the steps), or -1 (refused: the caller plans
 * w). w locked. */
int tcf_exec_steps_rebind(struct tcf_window *w, const tcf_steps_t *was,
                          const tcf_step_arg_t *const *have, tcf_steps_t *s);
/* The planner's items for fused step t's span of w (first..ev: its launches decoded from
 * their bytes as planning decodes them, a launch that does not decode opaque), into items
 * (room for max), each zeroed first: two spans whose items compare equal as bytes bind
 * their group to the same argument, whatever bytes a kernel ignores (the unused dimensions
 * of PyTorch's OffsetCalculator, a functor's padding) carried. Returns how many, or 0 (t is
 * no fused step of w, or its span is longer than max). w locked. */
uint32_t tcf_exec_steps_span_items(struct tcf_window *w, const tcf_step_t *t,
                                   tcf_item_t *items, uint32_t max);
/* Marks in unread[0..len) (1: never read, 0: may be read) the bytes of a launch of k with
 * parameter bytes p and grid grid (NULL: not known) that its kernel never reads: padding
 * between its parameters, and in the PyTorch kernels fuse mode decodes, a strided loop's
 * functor padding and a ReduceOp's padding, their OffsetCalculators' entries past dims
 * (which depend on p's dims: a mask holds for bytes whose read bytes are p's), and a cat's
 * metadata slots past grid.y. Two launches of k with the same grid and block whose bytes
 * differ only where unread is 1 run the same, and decode alike. Returns how many are
 * marked: 0 when k's layout is unknown or len is not its size. For verification and
 * replay. */
uint32_t tcf_exec_unread(struct tcf_kernel *k, const uint8_t *p, uint32_t len,
                         const uint32_t *grid, uint8_t *unread);
/* The same as a mask kept with the kernel: len bytes, 0xff for each byte a launch of k with
 * bytes p and grid grid may read, 0x00 for each it never reads; NULL when none is unread
 * (or k's layout is unknown, or len is not its size). Two launches of k with the same grid
 * and bytes a and b run the same when (a ^ b) & mask is zero in every byte, the mask taken
 * for either. Made once per kernel and per value of what the marks depend on (an
 * OffsetCalculator's dims, a cat's grid.y: 4 of them kept, NULL for a fifth), then
 * lock-free; never freed. */
const uint8_t *tcf_exec_reads(struct tcf_kernel *k, const uint8_t *p, uint32_t len,
                              const uint32_t *grid);
/* The len bytes at src with those mask rd (tcf_exec_reads) has 0x00 for zeroed, into dst
 * (which may be src). */
void tcf_exec_reads_zero(uint8_t *dst, const uint8_t *src, const uint8_t *rd, uint32_t len);
/* Whether len bytes a and b differ only where mask rd (tcf_exec_reads) has 0x00. */
int tcf_exec_reads_same(const uint8_t *a, const uint8_t *b, const uint8_t *rd, uint32_t len);
/* The kernel table's epoch: it moves whenever a generated kernel is made, becomes ready
 * or unusable, or is evicted. A plan that was not final may be final once it has moved. */
uint64_t tcf_exec_steps_epoch(void);

/* Starts exec beside replay in full mode: the worker, no holding of exec's own (replay
 * owns the windows, and exec's exit never drops their held work). */
void tcf_exec_init_beside(void);
/* Counts fused steps that ran inside a graph, as fuse mode counts its fused launches
 * (per kernel, per group), for the summary. */
void tcf_exec_steps_ran(const struct tcf_window *w, const tcf_steps_t *s);

/* Full mode's lines of the summary from exec: its kernels and their fallbacks. */
void tcf_exec_steps_stats_print(void);

#endif
