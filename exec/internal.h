/* exec's private pieces, shared by its files. Nothing outside exec/ includes it.
 *
 *   hold.c     the launch path: decode, hold or issue and keep, frees, ordering, stop
 *   ahead.c    other work issued ahead of decoded work it does not touch; frees kept back
 *   blocks.c   sizes of the blocks allocated stream-ordered, for held frees handed over
 *   reuse.c    freed blocks kept for the next allocation of their size on their stream
 *   reserve.c  the stream-ordered pool grown once, at the first allocation
 *   starts.c   the set of kernels that start a group whose generated kernel is ready
 *   run.c      a window's flush: plan, then issue fused groups and the rest in order
 *   vain.c     chains planned to learn that found nothing, not planned again
 *   sites.c    places where holding fused nothing, passed (issued at once) until re-checked
 *   table.c    generated kernels by source hash, the group memo, eviction
 *   worker.c   the background thread: NVRTC, disk cache, compile, load, queue
 *   verdict.c  verdicts on disk, each decoded kernel's own check
 *   verify.c   bitwise verification against the original launches on scratch memory
 *   stats.c    counters and the summary's lines
 *   steps.c    full mode: a window's plan as steps for replay's graphs (steps.h)
 */
#ifndef TCF_EXEC_INTERNAL_H
#define TCF_EXEC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "base/driver.h"
#include "base/fault.h"
#include "capture/window.h"
#include "config/config.h"
#include "exec/exec.h"
#include "fuser/fuser.h"
#include "recognize/recognize.h"

/* --- jobs: what the worker needs to make and check one group's kernel ---------------- */
/* Parameter bytes kept of a decoded launch: the contiguous loops take up to 64, the
 * strided one 8 + the closure (536, 648, 656 and 752 bytes recorded: its OffsetCalculator
 * alone is 304 + 100 NT). */
#define TCF_PARAMS_MAX 3440   /* a reduce_kernel's ReduceOp: 1040 or 1048; a cat's
                               * metadata by value: 3440 (<64, 64>) or 2768 (<128, 1>) */

/* One launch a group replaces, kept so that the worker can re-run it on scratch memory. */
typedef struct {
    CUfunction f;
    uint32_t   grid[3], block[3], smem;
    uint32_t   nparams, pbytes;
    uint32_t   off[8], size[8];   /* PyTorch's elementwise loops have at most 7 parameters */
    uint8_t    params[TCF_PARAMS_MAX];
    tcf_op_t   op;        /* a reduction's: the op it joins a group as (fuser.h) */
    uint8_t    is_red;    /* a reduce_kernel launch: red is what it decoded to */
    tcf_reduce_t red;
} tcf_orig_t;

typedef struct {
    CUcontext        ctx;
    tcf_group_t      g;
    tcf_fused_args_t args;        /* as bound for the window that asked */
    uint64_t         n;
    uint32_t         norig;
    tcf_orig_t       orig[TCF_GROUP_MAX_OPS];
} tcf_fjob_t;

/* --- the kernel table (table.c) ------------------------------------------------------ */
enum { TCF_FK_PENDING = 0, TCF_FK_READY, TCF_FK_BAD };

typedef struct tcf_fkern {
    uint64_t          hash;
    atomic_int        state;
    CUcontext         ctx;
    CUfunction        fn;
    uint64_t          start;      /* tcf_fuse_start_sig of the group that asked first */
    char             *src;
    tcf_fjob_t       *job;        /* until the worker takes it */
    struct tcf_fkern *next;       /* bucket chain */
    struct tcf_fkern *qnext;      /* work queue */
    int               disk_looked;/* the worker asked the disk cache for it (tcf_q_take) */
    CUmodule          mod;        /* what fn came from; unloaded some time after eviction */
    uint64_t          used;       /* recency: the table's tick when last found (lock held) */
    int               waiters;    /* TCFUSE_COMPILE_WAIT flushes waiting on it (lock held) */
} tcf_fkern_t;

#define TCF_SRC_MAX (64 * 1024)

/* The table's lock; also guards the worker's queue and state (worker.c). */
extern pthread_mutex_t tcf_fk_lock;

/* The generated kernel for group G of a window, in context ctx: returns it when compiled
 * and verified; otherwise NULL, and (the first time) queues its compile and verification.
 * For a held window (learn 0) a kernel the disk cache has is loaded at once, in this
 * thread: the GPU is waiting for the window anyway. For a window that ran as issued
 * (learn 1) the worker looks on disk. Never blocks on a compile (but see
 * TCFUSE_COMPILE_WAIT). */
CUfunction tcf_fkern_get(const tcf_fgroup_t *G, const tcf_window_t *w, const uint16_t *ev_of_item,
                         CUcontext ctx, int learn);
/* Whether G's kernel is settled in ctx: ready, bad or never to be made (1), or its
 * compile and verification are still to come (0). For full mode's plans (steps.c). */
int tcf_fkern_settled(const tcf_fgroup_t *G, CUcontext ctx);
/* Kernels the table ever made. */
unsigned tcf_fkern_made(void);
/* Unloads the modules of kernels evicted over a few seconds ago (lock held; dropped for the
 * driver calls). Called by the worker between jobs. */
void tcf_retired_unload(void);

/* --- the launch path (hold.c) ------------------------------------------------------- */
/* A kernel's first decode (its name and layout), once; TCF_FUSE_* (a thread that finds
 * another decoding it gets TCF_FUSE_DECODING). */
int tcf_fuse_decode_kernel(tcf_kernel_t *k, void **extra, void **params);
/* k's TCF_FUSE_* state, its first decode made now (as for cuLaunchKernel's params form)
 * when no launch made it yet: for what reads copied launch bytes outside the launch path
 * (full mode's steps, the unread marks). */
int tcf_fuse_state(tcf_kernel_t *k);
/* Full mode (steps.c): exec plans windows for replay, holds none of its own; its exit
 * stops the worker and leaves the windows to replay. */
extern atomic_int tcf_beside;

/* --- blocks (blocks.c) ---------------------------------------------------------------- */
/* The size of each stream-ordered block allocated while fuse mode acts, by address: put at
 * its allocation, taken (removed, its size returned; 0 when unknown) at its free. */
void tcf_blocks_put(uint64_t ptr, uint64_t size);
uint64_t tcf_blocks_take(uint64_t ptr);
uint64_t tcf_blocks_size(uint64_t ptr);   /* 0: unknown; the block stays */
size_t tcf_blocks_count(void);

/* --- reserve.c: the pool grown once, at the first allocation, to the last run's peak -- */
extern atomic_int tcf_reserve_started;   /* 1 once the first allocation came */
void tcf_reserve_first(CUstream stream);
void tcf_reserve_sample(const char *call);     /* at a boundary: the pool's watermark */
int tcf_reserve_trim(void);                    /* out of memory: 1 when the pool gave back */
void tcf_reserve_save(void);                   /* at exit: the peak, for the next run */
void tcf_reserve_forked(void);
void tcf_reserve_stats(void);

/* --- reuse.c: freed blocks kept for the next allocation of their size on their stream -- */
/* ctx: the context of the stream's window (0: the calling thread's, looked up) */
int tcf_reuse_put(uint64_t ptr, uint64_t size, uint64_t stream, uint64_t ctx);   /* 1: kept */
uint64_t tcf_reuse_get(uint64_t size, uint64_t stream, uint64_t ctx);             /* 0: none */
unsigned tcf_reuse_release(const char *why);   /* every kept block back to the driver */
void tcf_reuse_boundary(const char *call);     /* at a boundary: release before some */
void tcf_reuse_forked(void);
uint64_t tcf_reuse_bytes(void);
int tcf_reuse_holds(uint64_t v);               /* v inside a kept block */

/* --- planning scratch (run.c) ------------------------------------------------------ */
/* What planning a window needs, per thread that plans, made on its first plan: a plan is
 * tens of KiB and flushes are frequent, so nothing is allocated per flush. Shared by fuse
 * mode's flushes (run.c) and full mode's plans (steps.c); never used nested. */
typedef struct {
    tcf_item_t items[TCF_FUSER_MAX_ITEMS];
    uint16_t   ev_of[TCF_FUSER_MAX_ITEMS];
    tcf_plan_t plan;
} tcf_exec_scratch_t;
/* NULL when out of memory (the caller then issues the window as it came). */
tcf_exec_scratch_t *tcf_exec_scratch(void);
/* Event i of w as the planner's item: its decoded op or reduction (e->dec), a free, an
 * allocation, or opaque work. */
void tcf_exec_item(const tcf_window_t *w, uint32_t i, tcf_item_t *it);

/* --- hold.c and ahead.c ------------------------------------------------------------- */
int tcf_exec_holding(void);                        /* fuse mode acts */
void tcf_exec_flush_others(const tcf_window_t *w); /* held work of every other window */
/* A launch fuse mode does not decode (k, as the application made it: l; cfg for
 * cuLaunchKernelEx, else NULL): 1 when it was issued ahead of the decoded work of its
 * window and recorded there (*rc its result), 0 when the caller must order it as before. */
int tcf_exec_ahead_launch(tcf_kernel_t *k, const tcf_launch_t *l, const CUlaunchConfig *cfg,
                          CUresult *rc);
/* Whether the free of [ptr, ptr + size) (size 0: unknown) in w (locked) is kept from
 * hand-over: the last decoded launch read it and is of a learned kernel. */
int tcf_exec_ahead_keeps(const tcf_window_t *w, uint64_t ptr, uint64_t size);
int tcf_exec_ahead_keeping(void);   /* any kernel learned: the free path asks */

/* --- starts (starts.c) --------------------------------------------------------------- */
/* A window is held from a launch of a kernel that starts a group whose generated kernel
 * is ready (hold.c). Not the element count: the generated source does not depend on it,
 * so a chain met at a new size is held and fused at once. The worker adds the start of
 * each kernel it makes ready. */
static inline uint64_t tcf_fuse_start_sig(const tcf_kernel_t *k)
{
    return k->id;  /* ids count from 1: never 0 */
}
void tcf_fuse_start_add(uint64_t sig);

/* Sets of kernel signatures (starts.c): nonzero words in `cap` slots (a power of two),
 * open addressing over TCF_SIGSET_PROBE slots, never removed, read without a lock. Full
 * (or past the probe): an add is dropped. The starts and ahead.c's learned kernels. */
#define TCF_SIGSET_PROBE 16

static inline unsigned tcf_sigset_slot(uint64_t sig, unsigned cap)
{
    return (unsigned)((sig * 0x9E3779B97F4A7C15ull) >> 40) & (cap - 1);
}

static inline int tcf_sigset_has(const atomic_ullong *set, unsigned cap, uint64_t sig)
{
    unsigned i = tcf_sigset_slot(sig, cap);
    for (int p = 0; p < TCF_SIGSET_PROBE; p++, i = (i + 1) & (cap - 1)) {
        uint64_t v = atomic_load_explicit(&set[i], memory_order_relaxed);
        if (v == sig)
            return 1;
        if (!v)
            return 0;
    }
    return 0;
}

/* 1 when sig went in now, 0 when it was there (or the set is full). */
int tcf_sigset_add(atomic_ullong *set, unsigned cap, uint64_t sig);

/* The starts: their lookup is inline, it runs on every decoded launch. */
#define TCF_STARTS 4096
extern atomic_ullong tcf_starts[TCF_STARTS];

static inline int tcf_fuse_start_has(uint64_t sig)
{
    return tcf_sigset_has(tcf_starts, TCF_STARTS, sig);
}

/* --- chains planned in vain (vain.c) ------------------------------------------------ */
/* The kernel table's epoch: moves whenever an entry is made, becomes ready or bad, or is
 * evicted (table.c, worker.c), which may change what planning a chain finds. */
extern atomic_ullong tcf_fk_epoch;
static inline void tcf_fk_changed(void)
{
    atomic_fetch_add_explicit(&tcf_fk_epoch, 1, memory_order_release);
}
/* The exact key of the n events of w from `from` as the planner and the table see them,
 * under the current epoch; never 0 (w locked). */
uint64_t tcf_vain_key(const tcf_window_t *w, uint32_t from, uint32_t n);
/* Whether a chain with this key was planned to learn and found no ready kernel. */
int tcf_vain_has(uint64_t key);
void tcf_vain_put(uint64_t key);

/* --- hold sites (sites.c) ----------------------------------------------------------- */
typedef enum {
    TCF_SITE_HOLD = 0,      /* hold: unknown, or holding paid here */
    TCF_SITE_PASS,          /* issue at once: held windows from here fused nothing */
    TCF_SITE_PROBE,         /* hold to re-check, after passes */
    TCF_SITE_PROBE_TABLE,   /* hold to re-check: the kernel table changed since */
} tcf_site_decision_t;
/* The site of a would-be hold from kernel k on w (locked): k with the event before it. */
uint64_t tcf_site_key(const tcf_window_t *w, const tcf_kernel_t *k);
/* Whether to hold from the site now (a pass or a re-check is counted in its slot). */
tcf_site_decision_t tcf_site_hold(uint64_t site);
/* A window held from the site was flushed: whether any of its groups ran fused. */
void tcf_site_done(uint64_t site, int fused);

/* --- the worker (worker.c) ----------------------------------------------------------- */
/* Makes the worker, once (the first kernel launch calls it: worker.c says why not
 * sooner); it opens NVRTC and the disk cache at once. Cheap when done. */
void tcf_fkern_begin(void);
/* Whether nothing can be fused (then nothing is decoded): TCF_ABSENT_NVRTC, the worker
 * found no NVRTC; TCF_ABSENT_WORKER, no worker thread could be made; else 0. While the
 * worker opens NVRTC, launches are decoded and chains learned as usual: their jobs wait
 * in the queue. */
enum { TCF_ABSENT_NVRTC = 1, TCF_ABSENT_WORKER };
int tcf_fkern_absent(void);
/* Stops the worker (at exit): waits for the job in hand, parks it, drops the rest. */
void tcf_fkern_stop(void);
/* Queues e's job (lock held); with no worker e is marked bad at once. */
void tcf_worker_enqueue(tcf_fkern_t *e);
/* Waits until e is no longer pending or the worker stops (lock held: TCFUSE_COMPILE_WAIT). */
void tcf_worker_wait(tcf_fkern_t *e);
/* NVRTC and the disk cache are open: a kernel may be loaded from disk. */
int tcf_worker_disk_ready(void);
/* The compute capability (90 for sm_90) of the current context's device; 0 unknown. */
int tcf_arch_of(CUcontext ctx);
/* Loads a cubin and finds the generated kernel in it; NULL when either fails. */
CUfunction tcf_load_mod(const void *cubin, CUfunction *fn, CUmodule *mod);
/* The cubin for src: from the disk cache, else compiled (and put there). 0, or -1. */
int tcf_cubin_for(const char *src, int arch, int cache, void **cubin, size_t *clen,
                  int *from_disk);

/* --- verdicts (verdict.c) ------------------------------------------------------------ */
/* The verdict the disk cache holds for a source (a group's, or a kernel's own check):
 * 1 verified, 0 failed, -1 none. */
int tcf_verdict_get(const char *src, int arch);
void tcf_verdict_put(const char *src, int arch, int ok);
int tcf_verdict_ok(const char *src, int arch);
/* Checks original j of job alone before any group with its kernel is used; *s is the
 * worker's stream, made when first needed. 1 good, 0 bad (the kernel is disabled), -1
 * could not check. */
int tcf_kernel_check(const tcf_fjob_t *job, uint32_t j, int arch, int cache, CUstream *s);
/* e's source is on disk as compiled and verified, and each of job's originals as decoded
 * right: loads it into e and returns 1. */
int tcf_from_disk(tcf_fkern_t *e, const tcf_fjob_t *job, int arch);

/* --- verification (verify.c) --------------------------------------------------------- */
/* Runs the job's original launches and the generated kernel on scratch buffers filled with
 * edge values and compares every stored buffer bitwise. 0 equal, 1 different, -1 could not
 * verify (why says why). Called by the worker, with ctx current. */
int tcf_fuse_verify(const tcf_fjob_t *job, CUfunction fused, CUstream s, char *why, size_t cap);

/* --- counters (stats.c) -------------------------------------------------------------- */
/* A check that could not run (verify_unable): what it was about and why, for the summary. */
void tcf_unable_note(const char *what, const char *why);
typedef struct {
    atomic_ullong held, held_frees, flushes, groups_fused, launches_removed, stores_dropped,
                  bytes_avoided, fused_failed, held_failed, dropped_at_exit;
    atomic_ullong frees_handed;            /* held frees whose block an allocation of its
                                            * size on its stream took (tcf_exec_alloc) */
    atomic_ullong groups_nd;               /* of groups_fused, those over an N-d space */
    atomic_ullong groups_rows;             /* of groups_fused, those with a row reduction */
    atomic_ullong groups_softmax;          /* of groups_rows, those whose reduction is a softmax */
    atomic_ullong groups_norm;             /* and those with a LayerNorm or RMSNorm */
    atomic_ullong disk_load_ns;            /* the application's threads loading kernels
                                            * from the disk cache (verdicts, cubin, module) */
    atomic_ullong passed, holds, learned;  /* decoded but issued at once; windows held from
                                            * a known start; chains of two or more decoded
                                            * launches planned though not held */
    atomic_ullong reuse_kept, reuse_full,  /* frees kept for reuse; not (cap, no node) */
                  reuse_served,            /* allocations served from kept blocks */
                  reuse_released,          /* kept blocks given back to the driver */
                  reuse_peak;              /* most bytes kept at once */
    atomic_ullong flush_ns;                /* the host's time in flushes of held windows
                                            * (TCFUSE_STATS only) */
    atomic_ullong learn_skipped;           /* such chains planned before in vain and not
                                            * again (vain.c) */
    atomic_ullong no_nvrtc;                /* launches not decoded: no NVRTC was found */
    atomic_ullong no_worker;               /* launches not decoded: no worker thread */
    atomic_ullong holds_vain;              /* held windows whose flush fused nothing */
    atomic_ullong site_passed;             /* would-be holds passed: their site's held
                                            * windows fused nothing (sites.c) */
    atomic_ullong site_probes, site_probes_table; /* sites held again to re-check: after
                                            * passes, after the kernel table changed */
    atomic_ullong ahead_launches, ahead_ops; /* launches and memsets issued ahead of the
                                            * decoded work before them (ahead.c) */
    atomic_ullong ahead_refused;           /* ones that may touch it, issued after it */
    atomic_ullong ahead_queries;           /* allocations the driver placed for the test */
    atomic_ullong ahead_unread;            /* GEMMs whose parameters could not be read */
    atomic_ullong ahead_learned;           /* kernels whose inputs are kept from hand-over */
    atomic_ullong frees_kept_back;         /* frees so kept, held until the flush */
    atomic_ulong  refused[TCF_DECODE_NSTATUS]; /* launches not decoded, by reason */
} tcf_xcounters_t;
extern tcf_xcounters_t tcf_xctr;

/* The worker's named outcomes, printed with the stats. */
#define TCF_FK_COUNTERS(X) X(compiled) X(disk_hits) X(verified) X(verify_mismatch) \
    X(verify_unable) X(compile_failed) X(load_failed) X(codegen_failed) X(other_context) \
    X(table_full) X(kernels_checked) X(kernel_mismatch) X(code_unknown) X(evicted) \
    X(no_worker) X(no_context) X(no_nvrtc)
typedef struct {
#define TCF_FK_FIELD(n) atomic_ulong n;
    TCF_FK_COUNTERS(TCF_FK_FIELD)
#undef TCF_FK_FIELD
} tcf_fkcounters_t;
extern tcf_fkcounters_t tcf_fkc;

#endif
