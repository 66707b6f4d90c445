/* replay's private pieces, shared by its files. Nothing outside replay/ includes it.
 *
 *   key.c     the structural key of a window, launch by launch, and the set of the ready
 *             graphs' key prefixes that says whether to hold the next launch
 *   hold.c    the launch path: hold or pass each launch, frees, stream order, cuts, exit
 *   flush.c   a window's close: run it as its graph, or as issued, and learn its key
 *   plan.c    the table of keys: counts, graphs by key, least recently used, give-ups
 *   graph.c   the driver's graph API: build, instantiate, patch, update, launch, destroy
 *   worker.c  the background thread that instantiates graphs
 *   stats.c   counters and the summary's lines
 *   full.c    full mode: a plan's nodes are exec's steps (generated kernels in place of
 *             the launches they replace), made and patched per window
 */
#ifndef TCF_REPLAY_INTERNAL_H
#define TCF_REPLAY_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "base/driver.h"
#include "base/fault.h"
#include "capture/window.h"
#include "exec/steps.h"
#include "config/config.h"
#include "recognize/recognize.h"
#include "replay/replay.h"

/* --- a window's state (tcf_window_t.rstate) ------------------------------------------ */
enum {
    TCF_R_FRESH = 0,   /* no launch yet: the next one decides */
    TCF_R_HOLD,        /* every launch so far held, on a ready graph's path */
    TCF_R_PASS,        /* issued as it comes; learned when it closes */
};

/* The reasons replay itself closes a window with (compared by address). */
extern const char tcf_r_cut_unsupported[];  /* before a launch a node cannot carry */
extern const char tcf_r_cut_after[];        /* after it */
/* A cut (the cap, or one of replay's own) counts windows since the stream's boundary; any
 * other reason is a boundary and starts the count again. */
int tcf_r_is_cut(const char *reason);
/* The window ordinal's cap: a program that never reaches a boundary still repeats keys. */
#define TCF_R_ORD_MAX 63

/* --- keys (key.c) -------------------------------------------------------------------- */
/* What a graph's node depends on: everything but the parameter values. No padding: it is
 * compared with memcmp. */
typedef struct {
    uint64_t handle;     /* CUfunction or CUkernel, as launched */
    uint64_t attrs;      /* digest of the launch attributes a node carries; 0 none */
    uint32_t grid[3], block[3], smem, pbytes;
    uint32_t form;       /* TCF_R_FORM_* */
    uint32_t kind;       /* TCF_KIND_KERNEL or TCF_KIND_FUNCTION */
} tcf_rsig_t;

enum { TCF_R_FORM_PARAMS = 0, TCF_R_FORM_EXTRA = 1 };
/* A node that is not a kernel (tcf_rsig_t.kind): a device memset (grid[0] the element
 * size, grid[1..2] the count) or a device-to-device copy (grid[1..2] the bytes). Its
 * 16 bytes are dst and value, or dst and src. */
enum { TCF_R_KIND_MEMSET = 16, TCF_R_KIND_MEMCPY = 17 };
#define TCF_R_OP_BYTES 16

/* Whether event e becomes a node of a graph (a launch, a memset, a copy). */
static inline int tcf_revent_node(const tcf_event_t *e)
{
    return e->kind == TCF_EV_LAUNCH || e->kind == TCF_EV_MEMSET || e->kind == TCF_EV_MEMCPY;
}
/* The bytes a node of event e holds: a launch's parameters in w's arena, or a memset's
 * or copy's 16 bytes written into op. */
const uint8_t *tcf_revent_bytes(const tcf_window_t *w, const tcf_event_t *e,
                                uint8_t op[TCF_R_OP_BYTES]);

uint64_t tcf_rkey_seed(uint64_t ctx, uint64_t stream, uint32_t ord);
uint64_t tcf_rkey_capped(uint64_t seed, uint32_t cap);
uint64_t tcf_rkey_step(uint64_t h, const tcf_rsig_t *s);

/* Why a launch cannot be held (and cuts its window); 0: it can. */
enum {
    TCF_RN_OK = 0, TCF_RN_PTDS, TCF_RN_ATTR, TCF_RN_PARAMS, TCF_RN_KERNEL, TCF_RN_TOO_MANY_ATTRS,
    TCF_RN_COLLECTIVE,
    TCF_RN__COUNT
};
extern const char *const tcf_rn_names[TCF_RN__COUNT];
/* The signature of launch l on window w, and whether a node can carry it. *bad_attr is
 * set to the first attribute id that refused it. */
int tcf_rsig_of_launch(const tcf_window_t *w, const tcf_launch_t *l, tcf_rsig_t *s,
                       int *bad_attr);
/* The same for a recorded launch event (learning): 0 when a graph could carry it. */
int tcf_rsig_of_event(const tcf_window_t *w, const tcf_event_t *e, tcf_rsig_t *s);
/* The signature of a memset (elem 1, 2, 4) or a copy (elem 0) of count elements. */
void tcf_rsig_of_op(int kind, unsigned elem, uint64_t count, tcf_rsig_t *s);
/* Whether a node carries these attributes (and their digest). */
int tcf_rattrs_ok(const CUlaunchAttribute *a, unsigned n, uint64_t *digest, int *bad);

/* The prefix set: every prefix of every ready graph's key. Lock-free reads (every
 * launch of a window that may be held asks it), inserts under the plan table's lock. */
#define TCF_RPREFIX_BITS 16
#define TCF_RPREFIX_PROBE 16
extern _Atomic uint64_t tcf_rprefix[1u << TCF_RPREFIX_BITS];
static inline int tcf_rprefix_has(uint64_t h)
{
    h |= 1;  /* never 0: 0 is an empty slot */
    unsigned i = (unsigned)((h * 0x9E3779B97F4A7C15ull) >> (64 - TCF_RPREFIX_BITS));
    for (int p = 0; p < TCF_RPREFIX_PROBE; p++, i = (i + 1) & ((1u << TCF_RPREFIX_BITS) - 1)) {
        uint64_t v = atomic_load_explicit(&tcf_rprefix[i], memory_order_relaxed);
        if (v == h)
            return 1;
        if (!v)
            return 0;
    }
    return 0;
}
/* Adds h; 0, or -1 when its probe run is full (then that window is not held). */
int tcf_rprefix_add(uint64_t h);
void tcf_rprefix_clear(void);

/* --- plans (plan.c) ------------------------------------------------------------------ */
enum { TCF_RP_COUNTING = 0, TCF_RP_BUILDING, TCF_RP_READY, TCF_RP_GIVEN_UP };

/* Named reasons a key was given up (the stats print them). */
#define TCF_RGIVEUP(X) X(no_graph_api, "no-graph-api") X(create_failed, "create-failed")   \
    X(node_refused, "node-refused") X(instantiate_failed, "instantiate-failed")            \
    X(update_failed, "update-failed") X(launch_failed, "launch-failed")                    \
    X(too_large, "too-large") X(out_of_memory, "out-of-memory") X(not_faster, "not-faster")  \
    X(plan_changed, "plan-changed")
enum {
#define TCF_RG_ENUM(id, name) TCF_RG_##id,
    TCF_RGIVEUP(TCF_RG_ENUM)
#undef TCF_RG_ENUM
    TCF_RG__COUNT
};
extern const char *const tcf_rg_names[TCF_RG__COUNT];
/* Not a reason to give up: full mode's plan is made again (full.c). */
#define TCF_R_RENEW (-2)

/* One node of a plan: its launch's signature, where its last bytes are kept in the
 * plan's shadow, its attributes (applied once, at build) and the graph's node. */
typedef struct {
    tcf_rsig_t         sig;
    tcf_kernel_t      *k;              /* for the parameter layout; NULL for a memset or copy,
                                        * and for a generated kernel (full mode: one
                                        * parameter, sig.pbytes of it) */
    uint32_t           soff;           /* in shadow */
    uint32_t           nattr;
    CUlaunchAttribute *attr;           /* nattr of them, applied once, at build */
    CUgraphNode        node;
} tcf_rnode_t;

typedef struct tcf_rplan {
    uint64_t          key, seed;
    uint64_t          ctx, stream;
    uint32_t          seen;            /* windows with this key not replayed (learned) */
    uint32_t          setbacks;        /* times its graph was evicted or judged not
                                        * faster (tcf_rplan_warmup) */
    uint64_t          sightings;       /* windows with this key, learned or replayed */
    uint64_t          first_seen;      /* the windows closed when it was first seen */
    int               state;           /* TCF_RP_*, under the table's lock */
    int               reason;          /* TCF_RG_* once given up */
    uint32_t          n;               /* nodes */
    tcf_rnode_t      *nodes;
    uint8_t          *shadow;          /* each node's parameter bytes at its last replay */
    uint32_t          shadow_len;
    CUgraph           graph;           /* the one exec was instantiated from */
    CUgraphExec       exec;
    /* TCFUSE_REPLAY_RING=2: a second instance of graph, with its own shadow, replayed on
     * every other replay (odd replays). Bytes that alternate between two sets then find
     * each instance holding its set. NULL: one instance (the option, its
     * instantiation failed, or a re-instantiation replaced the graph). mem counts it,
     * and still does after a re-instantiation dropped it (mem changes under the table's
     * lock only). */
    CUgraphExec       exec1;
    uint8_t          *shadow1;
    uint64_t          mem;             /* device memory held, estimated */
    uint64_t          used;            /* recency: the table's tick at its last replay */
    int               busy;            /* flushes using it now (table lock) */
    uint64_t          replays;
    /* with stats on, nanoseconds of its replays in the driver's graph launches and patches,
     * and the nodes they patched (the stats' costliest keys: what a launch's cost goes
     * with) */
    atomic_ullong     launch_ns, patch_ns, patched_nodes;
    /* its graph's launch was refused on the launcher thread (launcher.c): its next window
     * gives the key up */
    atomic_int        launch_refused;
    int               built_sync;      /* instantiated on the application's thread */
    /* Does it pay: the stream's time from this key's window to the next window, as issued
     * and as a graph (microseconds, the last TCF_R_SAMPLES of each), written under the
     * stream's window lock. */
    uint32_t          t_issued[8], t_graph[8];
    uint32_t          n_issued, n_graph;
    int               judging;  /* its runs are being timed both ways (tcf_rplan_sample;
                                 * __atomic: read by any window, changed under the lock) */
    /* A graph of its key was judged no slower than the launches as issued: the key's later
     * graphs (full mode's plans fusing more, a graph made again after eviction) hold the
     * same launches and keep the verdict, unjudged (lock held). */
    int               judged_ok;
    struct tcf_rplan *qnext;           /* the worker's queue */
    /* Full mode: the nodes are a fusion plan's steps (full.c). The key and the matching
     * stay the window's own launches (osig, norig of them); fused of the nodes are
     * generated kernels, replacing `removed` launches more than their count. */
    tcf_rsig_t       *osig;            /* NULL: the nodes are the window's launches */
    uint32_t          norig, fused, removed;
    /* Full mode, a graph made while some of the key's kernels compiled (plain, or with
     * the groups whose kernels were ready fused): the kernel table's epoch when its
     * window was last planned, + 1; 0 when the plan is final. Read and written by the
     * flushes that replay it (full.c). */
    atomic_ullong     upgrade_epoch;
    /* Full mode: its last plan and the arguments its windows were bound to, for the next
     * window to be bound without planning (memo.c; NULL until one replays). */
    struct tcf_rmemo *memo;
} tcf_rplan_t;

extern pthread_mutex_t tcf_rplan_lock;

/* What a window's close leaves on its stream for the next one (flush.c; w locked): the
 * timing sample's plan p (or NULL), whether it ran as graph, and the window count since
 * the last boundary, one more after a cut (cut), else back to 0. */
void tcf_rwindow_next(tcf_window_t *w, tcf_rplan_t *p, int graph, int cut);

/* n more launches on w's stream since its last wait for the GPU (slow end; w locked). */
static inline void tcf_rcount_since(tcf_window_t *w, uint32_t n)
{
    w->rsince = w->rsince > UINT32_MAX - n ? UINT32_MAX : w->rsince + n;
}

/* The windows p's key must have been seen, more than, to become a graph:
 * TCFUSE_REPLAY_WARMUP, and (warm-up + 1) x 2^k - 1 after k setbacks (k at most 10): an
 * eviction, or a judgment that its graph was not faster (tcf_rplan_sample).
 * Where more keys repeat than the caps hold (a cycle longer than TCFUSE_REPLAY_GRAPHS),
 * the least recently replayed graph is always the next one needed: each graph would be
 * evicted before its next replay, and made again after the warm-up, forever (the stand-in's
 * three keys in turn under a cap of 2: 87 graphs made in 600 windows). An evicted key
 * waiting twice as long each time leaves the graphs made meanwhile to be replayed, and
 * makes the instantiations logarithmic in the run's length; a key that stops coming goes
 * as before. Lock held. */
uint32_t tcf_rplan_warmup(const tcf_rplan_t *p);
/* The plan of key (made, counting, when new); NULL when the table is full and no entry of
 * a key seen once, TCF_RPLANS windows ago or more, can be taken for it. Lock held. */
tcf_rplan_t *tcf_rplan_get(uint64_t key, int make);
/* Fills p's nodes and shadow from window w's n nodes, whose signatures are sigs (each
 * carriable): graph mode's plan. 0, or -1 out of memory. */
int tcf_rplan_fill(tcf_rplan_t *p, const tcf_window_t *w, const tcf_rsig_t *sigs, uint32_t n);
/* Ready: takes it for a replay (busy, recency); done gives it back. Lock held. */
void tcf_rplan_take(tcf_rplan_t *p);
void tcf_rplan_done(tcf_rplan_t *p);
/* The worker made p ready: its prefixes join the set, memory is counted, and the least
 * recently replayed plans go past the caps. Lock held. */
void tcf_rplan_ready(tcf_rplan_t *p);
/* Drops p's graph and has its key counted again from the warm-up count, so that its next
 * window makes a new plan (full mode's upgrade). Lock held, p not busy. */
void tcf_rplan_renew(tcf_rplan_t *p);
/* Gives key p up for good (its graph destroyed later). Lock held. */
void tcf_rplan_give_up(tcf_rplan_t *p, int reason);
/* Graphs dropped a while ago are destroyed (by the worker, between jobs; lock held). */
void tcf_rplan_retired_destroy(int all);
/* Live graphs and their estimated device memory. */
void tcf_rplan_held(uint64_t *graphs, uint64_t *mem, uint64_t *peak);
/* Every plan's bookkeeping for the summary: keys, ready, building, given up. */
void tcf_rplan_census(uint64_t *keys, uint64_t *ready, uint64_t *building, uint64_t *given_up);
/* Prints the keys held whose replays spent the most time in graph launches (stats). */
void tcf_rplan_print_costliest(unsigned most);

/* Does it pay (plan.c): a window of p's key took `us` to the stream's next window, run as
 * a graph or as issued (w locked). A key is judged once, when its graph is made: while
 * any key is being judged, each window that could be held runs as issued with even odds
 * (hold.c), so that its key's runs both ways are taken side by side in time, until it has
 * TCF_R_SAMPLES of each. The graph is judged slower when its median is above the as-issued
 * median by more than 1/32 (a tie is the graph's: it costs the host less) and at least
 * three quarters of the pairs of one run each way have the graph's run slower. Holding
 * costs the GPU its start, and a window that closes at a synchronize exposes its whole run,
 * which a graph must win back in launch time. A key judged slower has its graph dropped
 * and counts again, with a warm-up twice as long each time (tcf_rplan_warmup), to be
 * judged afresh: the host it was judged on may have been in another state. Comparing a
 * graph's recent runs with as-issued runs from its warm-up (the judge before this one)
 * judged the host's drift: on the H100, libtorch at one sequence of 32 tokens ran its
 * iterations at 0.7 ms as graphs, until 5 of its 11 keys were given up at once in a slow
 * stretch and the rest of the run took 1.5-2.7 ms, eager's being 1.3. */
#define TCF_R_SAMPLES 8
void tcf_rplan_sample(tcf_rplan_t *p, int graph, uint64_t ns);
/* Keys being judged now: while any is, windows that could be held run as issued at even
 * odds. */
extern atomic_int tcf_rjudging;
/* A judgment ends with the graph kept, so that other keys' windows stop running as issued
 * for it, when its key is not seen within four of its periods (the windows closed since
 * it was first seen, over its sightings) and TCF_R_JUDGE_SLACK windows more: a key that
 * stopped coming (GPT-2's first forward after the warm-up, a shape that changed); and in
 * any case within TCF_R_JUDGE_SPAN x max(64, graphs held) windows closed. At most
 * TCF_R_JUDGES keys are judged at once (a new one ends the oldest judgment the same
 * way). tcf_rjudge_expire is called at every window's close (one atomic add, and the lock
 * when a deadline has passed); tcf_rplan_sighted at every window of a key, learned or
 * replayed (lock held). */
#define TCF_R_JUDGE_SLACK 64
#define TCF_R_JUDGE_SPAN 64
#define TCF_R_JUDGES 64
void tcf_rjudge_expire(void);
void tcf_rplan_sighted(tcf_rplan_t *p);
/* Whether h, a window's key after its first launch, begins a key being judged: only such
 * windows run as issued to time them (no lock). */
int tcf_rjudge_first_has(uint64_t h);
/* Holding that does not pay (flush.c): a stream whose held windows ran as issued
 * TCF_R_VAIN times in a row, with no replay between, holds nothing for its next
 * TCF_R_PAUSE windows, twice as many each time again up to TCF_R_PAUSE_MAX; a replay ends
 * the doubling. Where windows repeat only by chance (shapes that change every launch), a
 * held window mostly leaves every graph's path and runs late for nothing. */
#define TCF_R_VAIN 4
#define TCF_R_PAUSE 16
#define TCF_R_PAUSE_MAX 1024
/* Learning that does not pay (flush.c): a stream whose last TCF_R_NEWRUN learned windows
 * all had keys never seen before stops recording for a pause as above (TCF_R_PAUSE
 * windows, twice as many each time again up to TCF_R_PAUSE_MAX), and after a pause
 * TCF_R_NEWRUN_AGAIN new keys in a row start the next one; a key seen before ends the
 * doubling. A program whose shapes or operands' order never repeat (bench/programs/
 * smallk.cu: each launch's grid changes) otherwise pays observe mode's recording on every
 * launch for keys no window will ever match, about 5% of a launch-bound C loop. The first
 * run is long so that a program's first iteration, all of whose keys are new, is learned
 * whole unless it has more windows than that; what a pause skips there is learned in a
 * later iteration. */
#define TCF_R_NEWRUN 256
#define TCF_R_NEWRUN_AGAIN 16

/* --- graphs (graph.c) ---------------------------------------------------------------- */
/* Whether the driver has every entry point graph mode needs. */
int tcf_rgraph_api(void);
/* Builds p's graph from its nodes and shadow and instantiates it (ctx must be current),
 * twice with two instances (tcf_rring; a second instance refused leaves one). 0, or -1 with
 * *reason a TCF_RG_*. Nothing is left allocated on failure. */
int tcf_rgraph_build(tcf_rplan_t *p, int *reason);
/* Issues p's nodes one by one on stream with the bytes at shadow (one of p's instances'
 * shadows): the work of a replay whose graph launch was refused after its window was gone
 * (launcher.c). */
void tcf_rgraph_issue_nodes(const tcf_rplan_t *p, const uint8_t *shadow, uint64_t stream);
/* Instances of each graph (TCFUSE_REPLAY_RING; its 0 read at init: two in full mode, whose
 * windows' patches they save, one in graph mode, where they did not pay: PERF.md
 * 2026-11-28, twelfth). */
extern int tcf_rring;
/* Runs window w's held launches as p's graph on stream: patches the nodes whose bytes
 * differ from the shadow of the instance whose turn it is (a failed patch updates the
 * whole graph, then re-instantiates), launches it, then issues the held frees. 0
 * replayed; -1 nothing ran (the caller issues the held work as is), with *reason set when
 * the key must be given up. */
int tcf_rgraph_replay(tcf_rplan_t *p, tcf_window_t *w, int *reason, uint32_t *patched);
/* The second half of a replay, for bytes gathered by the caller (bytes_of[i]: node i's,
 * this window's): patch, launch on stream, the held frees after it. 0, or -1 (*reason). */
int tcf_rgraph_run(tcf_rplan_t *p, tcf_window_t *w, uint8_t *const *bytes_of, uint64_t stream,
                   int *reason, uint32_t *patched);
/* Destroys an exec and its graph (either may be NULL). */
void tcf_rgraph_destroy(CUgraph g, CUgraphExec x);
/* The device memory a graph of p's shape is estimated to hold. */
uint64_t tcf_rgraph_mem_estimate(const tcf_rplan_t *p);
/* One launch event of w as the driver's node parameters (kernelParams in pp, room for
 * the kernel's parameter count; extra in ex). */
void tcf_rnode_params(const tcf_rsig_t *s, const tcf_kernel_t *k, uint64_t ctx,
                      uint8_t *bytes, void **pp, void **ex, size_t *exsize,
                      CUDA_KERNEL_NODE_PARAMS *np);

/* --- the launcher thread (launcher.c) ------------------------------------------------ */
/* Whether graph launches go to the launcher thread (TCFUSE_REPLAY_LAUNCHER, until exit). */
int tcf_rlauncher_on(void);
/* Queues p's launch of instance x (whose shadow is shadow) on stream for the launcher
 * (the caller found tcf_rlauncher_on; exit's stop is checked again under the queue's
 * lock): 0, or -1 when the caller must launch it inline, after tcf_rlauncher_drain. */
int tcf_rlauncher_push(tcf_rplan_t *p, CUgraphExec x, const uint8_t *shadow, uint64_t stream);
/* Launches queued and made since the start (the stats' count of launches queued). */
extern atomic_ullong tcf_rl_queued, tcf_rl_done;
void tcf_rlauncher_wait(void);
/* Returns once every launch queued before it was made: called before anything that must
 * follow queued work (launcher.c lists them). Nothing queued: two loads. */
static inline void tcf_rlauncher_drain(void)
{
    if (atomic_load_explicit(&tcf_rl_queued, memory_order_relaxed) !=
        atomic_load_explicit(&tcf_rl_done, memory_order_relaxed))
        tcf_rlauncher_wait();
}
/* At exit: what is queued is made (waited for a tenth of a second at most), and every
 * later launch is inline. */
void tcf_rlauncher_stop(void);
/* In a child of fork(): nothing queued, nothing to wait for, no launcher. */
void tcf_rlauncher_forked(void);

/* --- full mode (full.c) --------------------------------------------------------------- */
/* TCFUSE_MODE=full: plans are made from exec's steps of the window (exec/steps.h). */
extern int tcf_rfull;
/* Makes p (BUILDING, no lock held) from window w's fusion plan; w's n node signatures
 * are sigs. 0 filled: p's nodes are the steps (the groups whose kernels are ready fused,
 * the others' launches as issued while their kernels compile: tcf_rfull_upgrade_due
 * replaces the graph as more come), or the launches when nothing fuses (yet); -1 out of
 * memory. */
int tcf_rfull_fill(tcf_rplan_t *p, tcf_window_t *w, const tcf_rsig_t *sigs, uint32_t n);
/* Runs held window w as p's graph of steps (p->osig set, w matched): its steps planned
 * again for this window, compared with p's nodes, the fused ones' parameters patched like
 * any node. 0 replayed; -1 not (*reason plan_changed when the steps differ, TCF_R_RENEW
 * when they differ in a plan not final after the kernel table moved). */
int tcf_rfull_replay(tcf_rplan_t *p, tcf_window_t *w, int *reason, uint32_t *patched);
/* A graph made while some of p's kernels compiled (upgrade_epoch set), about to replay
 * held window w: once the kernel table has moved since w's key was last planned, w is
 * planned again. 1: the plan fuses more groups than the graph, which is to be replaced
 * (the window then runs as issued and makes the new plan); 0: replay the graph (final
 * from now on when the plan is). w locked, p taken; any plan (0 at once when final). */
int tcf_rfull_upgrade_due(tcf_rplan_t *p, tcf_window_t *w);
/* The summary's line (stats.c). */
void tcf_rfull_stats_print(void);
/* A replay's room for its nodes' bytes (each node's, for tcf_rgraph_run: on the stack up to
 * TCF_R_STACK_NODES nodes) and its window's memset and copy bytes (graph.c). */
#define TCF_R_STACK_NODES 128
typedef struct {
    uint8_t  *stack[TCF_R_STACK_NODES], **bytes_of;
    uint8_t (*ops)[TCF_R_OP_BYTES];
} tcf_rbytes_t;
/* 0, or -1 when out of memory (nothing to free then). */
int tcf_rbytes_room(const tcf_rplan_t *p, const tcf_window_t *w, tcf_rbytes_t *b);
void tcf_rbytes_free(tcf_rbytes_t *b);
/* Full mode's memo per key (memo.c): w's steps bound from p's memo without planning
 * (tcf_exec_steps_rebind), into st, with *kept the fused steps whose argument an earlier
 * window's launches gave: 1 bound, 0 not (no memo, the table moved from epoch, another
 * shape of window, or refused). w locked, p taken. */
int tcf_rmemo_bind(tcf_rplan_t *p, tcf_window_t *w, tcf_steps_t *st, uint64_t epoch,
                   uint32_t *kept);
/* After w replayed as st (bound: from p's memo; else planned, at the kernel table's
 * epoch): what was bound anew joins the memo, or a plan becomes it (st's buffers go to
 * the memo, the memo's old ones to st). A memo that cannot be kept is dropped. */
void tcf_rmemo_remember(tcf_rplan_t *p, tcf_window_t *w, tcf_steps_t *st,
                        uint64_t epoch, int bound);
/* Frees p's full-mode memo (its graph dropped). */
void tcf_rmemo_forget(tcf_rplan_t *p);
/* Host memory all full-mode memos hold now (their argument tables and arguments). */
uint64_t tcf_rmemo_bytes(void);

/* --- the worker (worker.c) ----------------------------------------------------------- */
/* Queues p (lock held) for instantiation, making the worker for the first one. 0, or -1
 * when no worker thread could be made (the caller builds p itself). */
int tcf_rworker_enqueue(tcf_rplan_t *p);
/* Waits until the worker is out of any job (it takes none while a capture is under way). */
void tcf_rworker_idle(void);
/* At exit: waits for the job in hand, parks the worker, drops the queue. */
void tcf_rworker_stop(void);
/* The worker's build of p (also the application thread's, with TCFUSE_REPLAY_SYNC):
 * context, graph, instantiation, then ready or given up. */
void tcf_rworker_build(tcf_rplan_t *p);

/* --- issuing (hold.c) ---------------------------------------------------------------- */
/* Issues w's held work as the application issued it (w locked); its held count to 0. */
void tcf_rissue_held(tcf_window_t *w);
/* One kernel launch as made by the application or held in a node (attrs: nattr launch
 * attributes, cuLaunchKernelEx's); one memset (elem 1, 2 or 4 bytes of value second) or
 * device-to-device copy (from second). The driver's result. */
CUresult tcf_rissue_kernel(CUfunction f, const unsigned grid[3], const unsigned block[3],
                           unsigned smem, CUstream s, void **pp, void **extra,
                           const CUlaunchAttribute *attrs, unsigned nattr);
CUresult tcf_rissue_memop(int copy, CUdeviceptr dst, uint64_t second, unsigned elem,
                          size_t count, CUstream s);
/* w's held work went out (as a graph): its held count to 0. */
void tcf_rheld_done(tcf_window_t *w);
/* w's context made current on this thread; returns what to restore (or NULL). */
int tcf_rctx_enter(const tcf_window_t *w, CUcontext *prev);
void tcf_rctx_leave(int switched, CUcontext prev);
/* Application stream captures under way: nothing is held, learned or instantiated. */
int tcf_rcapture_active(void);
/* Windows holding work now (a hint; windows' locks guard the truth). */
extern atomic_int tcf_rholding;
/* Graph mode is on: holding allowed. */
extern atomic_int tcf_ron;

/* --- counters (stats.c) -------------------------------------------------------------- */
#define TCF_R_PATCH_BUCKETS 12   /* nodes patched per replay: 0, 1, 2-3, ..., 512+ */
typedef struct {
    atomic_ullong held, held_frees, held_ops, holds; /* launches, frees, memsets and copies;
                                                      * windows held */
    atomic_ullong replayed, launches_replayed, frees_after;
    atomic_ullong patched, patch_max, patches_hist[TCF_R_PATCH_BUCKETS];
    /* with stats on, nanoseconds of the application's threads in replays (a window's
     * steps planned again in full mode, its nodes patched, its graph launched), and of
     * those, full mode's planning; and full mode's planning at learning and upgrades: what
     * replay costs where the program waits for it */
    atomic_ullong replay_ns, full_plan_ns, full_learn_ns;
    /* of replay_ns, the driver's calls: kernel nodes patched, memset and copy nodes patched
     * (how many), graph launches; to find where a window's time goes (a failed patch's
     * refresh is left in the rest) */
    atomic_ullong patch_kernel_ns, patch_op_ns, patched_ops, launch_ns;
    /* with stats on and TCFUSE_REPLAY_UNREAD, kernel nodes left unpatched: only bytes their
     * kernel never reads had changed */
    atomic_ullong patched_unread;
    atomic_ullong slow_end_cuts;   /* windows cut short before a predicted wait */
    /* full mode's plan-changed windows: planned into another number of steps (or not at
     * all), or a step of another kernel, shape or parameter size; of those, a generated
     * kernel's step (a group bound otherwise, or another kernel) */
    atomic_ullong full_changed_count, full_changed_step, full_changed_fused;
    atomic_ullong issued_diverged, issued_no_graph, issued_order, issued_failed,
                  issued_collision, issued_exit, issued_held_launches;
    atomic_ullong learned, learn_untracked, not_buildable, keys_reclaimed;
    atomic_ullong built_bg, built_sync, updates, reinstantiated, evicted, patch_failed;
    atomic_ullong ring_built, ring_failed;   /* second instances made, and refused */
    /* TCFUSE_REPLAY_LAUNCHER (launches queued: tcf_rl_queued): graph launches made inline
     * instead (no thread, queue full, after exit began), refused on the launcher thread
     * (their nodes issued one by one); the application's threads' waits for the queue, and
     * their time; with stats on, the launcher's time in graph launches */
    atomic_ullong rl_inline, rl_failed, rl_waits, rl_wait_ns, rl_launch_ns;
    atomic_ullong rl_lost;   /* queued launches not made by the time exit stopped waiting */
    atomic_ullong no_worker;   /* graphs built on the application's thread: no worker */
    atomic_ullong gave_up[TCF_RG__COUNT];
    atomic_ullong not_held[TCF_RN__COUNT];
    atomic_ullong not_held_attr_id[32];
    atomic_ullong capturing, app_captures, held_failed, explored;
    atomic_ullong pauses, paused;   /* holding paused on a stream (flush.c); windows not held */
    atomic_ullong learn_pauses;     /* of those pauses, for keys that never repeat */
    atomic_ullong judged, judge_expired;   /* judgments given (plan.c), and ended unjudged */
    atomic_ullong judge_kept;              /* graphs that kept their key's verdict, unjudged */
    atomic_ullong quiet;            /* their launches, counted only (hold.c) */
    atomic_ullong cuts_unsupported;
    /* full mode: windows replayed with generated kernels, those kernels' runs and the
     * launches they replaced; keys made a plain graph while their kernels compiled;
     * graphs replaced by ones fusing more; keys made a graph with fused steps, and of
     * those while other kernels of theirs compiled; with nothing fused; windows whose
     * plan, not final, changed as a kernel came (made again) */
    atomic_ullong full_replayed, full_fused, full_removed, full_waiting, full_upgraded,
                  full_plans, full_partial, full_plain, full_renewed_late;
    /* windows bound without planning; their groups re-bound, and kept from the memo;
     * windows planned after a refusal (rebind_refused); the memos' arguments dropped for
     * a newer one, and not kept for their memory (TCFUSE_REPLAY_MEMO) */
    atomic_ullong full_rebound, full_rebound_groups, full_kept_groups, full_rebind_refused,
                  full_rebind_ns, full_planned_again, full_rebind_checked,
                  full_rebind_differs, full_memo_dropped, full_memo_unkept,
                  full_kept_items;   /* of full_kept_groups, found by their items */
} tcf_rcounters_t;
extern tcf_rcounters_t tcf_rctr;
void tcf_rstats_patched(uint32_t n);

#endif
