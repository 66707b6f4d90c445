/* Graph and full mode's launcher (TCFUSE_REPLAY_LAUNCHER=1): one thread that makes the
 * replayed windows' graph launches, so that the application's thread goes on to its next
 * launches while the driver takes the 8-28 us a graph launch costs in a host-bound Python
 * program (its caches cold: PERF.md 2026-11-28 eighth and twelfth). The launch's latency
 * is the same or worse on another thread (ninth); what moves is whose time it is.
 *
 * Order. A launch queued here is work the application has issued (its held launches
 * returned CUDA_SUCCESS) and the driver has not: like held work, it must reach the driver
 * before anything that could observe it or must follow it. So everything that issues work
 * on the application's behalf, or passes on a call that observes device state, first waits
 * for the queue (tcf_rlauncher_drain): boundaries (every gated and unknown call), launches,
 * memsets, copies and frees that graph mode passes on instead of holding, held work run as
 * issued, and exit. A replay that must patch its instance waits too (the instance and its
 * shadow change), and so do a window whose held frees follow its graph (launched inline,
 * the frees after it) and whatever drops or destroys a graph (plan.c). One FIFO for every
 * stream: replays keep the order they were made in.
 *
 * Failure. A graph launch the driver refuses here can no longer run the window as issued
 * (the window's events are the next window's by then). The launcher issues the graph's
 * nodes one by one from the instance's shadow, the bytes the instance holds, which is the
 * window's work, and marks the plan: its key's next window gives it up (launch-failed), as
 * a refused inline launch does. The plan's nodes and shadow stay while a launch of it is
 * queued: whatever changes them waits for the queue first.
 *
 * Cost. The application's thread pays the queue's lock and, when the launcher sleeps, a
 * wake. The launcher spins TCF_RL_SPIN_NS after its last launch for the next one, then
 * sleeps: it holds no core between windows further apart. A drain with nothing queued is
 * two loads. The thread is made at the first launch queued (none in a process that forks
 * before its first replay) and parked at exit, never joined; a child of fork() has none,
 * and holds nothing. */
#include <time.h>

#include "replay/internal.h"

/* Launches the queue holds; past it the application's thread launches inline (after the
 * queue: drained first). A window closes at 32 launches at most, so 64 windows queued is
 * a launcher far behind. */
#define TCF_RL_QUEUE 64u
/* How long the launcher looks for the next launch before it sleeps: GPT-2's windows at
 * batch 1 come about 1 ms apart, a chain of short windows after a synchronize tens of us. */
#define TCF_RL_SPIN_NS 50000u
/* How long a drain spins before it sleeps in steps: longer than a graph launch (8-60 us),
 * since a sleep asked for 20 us lasts 60-80 (the timer's slack), which made every drain
 * that found a launch under way cost ~90 us on the GPU (PERF.md 2026-11-28 thirteenth). */
#define TCF_RL_WAIT_SPIN_NS 200000u

typedef struct {
    tcf_rplan_t   *p;
    CUgraphExec    x;
    const uint8_t *shadow;   /* x's (for a refused launch: its nodes issued one by one) */
    uint64_t       stream;
} tcf_rljob_t;

static tcf_rljob_t tcf_rl_q[TCF_RL_QUEUE];
static pthread_mutex_t tcf_rl_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tcf_rl_cond = PTHREAD_COND_INITIALIZER;
/* launches queued, and made (FIFO): written by the application's threads and by the
 * launcher, each on a cache line of its own */
_Alignas(64) atomic_ullong tcf_rl_queued;
_Alignas(64) atomic_ullong tcf_rl_done;
static int tcf_rl_sleeping;                 /* under tcf_rl_mu */
static int tcf_rl_started, tcf_rl_failed;   /* under tcf_rl_mu */
static atomic_int tcf_rl_stopped;
static _Thread_local int tcf_rl_self;

int tcf_rlauncher_on(void)
{
    return tcf_cfg.replay_launcher && !atomic_load_explicit(&tcf_rl_stopped, memory_order_relaxed);
}

static void tcf_rl_run(const tcf_rljob_t *j, uint64_t *ctx)
{
    tcf_rplan_t *p = j->p;
    if (p->ctx != *ctx && tcf_drv.ctx_set_current &&
        tcf_drv.ctx_set_current((CUcontext)(uintptr_t)p->ctx) == CUDA_SUCCESS)
        *ctx = p->ctx;
    uint64_t t0 = tcf_cfg.stats ? tcf_now_ns() : 0;
    if (tcf_fault(TCF_FAULT_GRAPH_LAUNCH) ||
        tcf_drv.graph_launch(j->x, (CUstream)(uintptr_t)j->stream) != CUDA_SUCCESS) {
        tcf_rgraph_issue_nodes(p, j->shadow, j->stream);
        atomic_store(&p->launch_refused, 1);
        atomic_fetch_add(&tcf_rctr.rl_failed, 1);
    }
    if (t0) {
        uint64_t ns = tcf_now_ns() - t0;
        atomic_fetch_add_explicit(&tcf_rctr.rl_launch_ns, ns, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->launch_ns, ns, memory_order_relaxed);
    }
}

/* Whether a launch is queued and not made. */
static int tcf_rl_pending(void)
{
    return atomic_load_explicit(&tcf_rl_done, memory_order_acquire) !=
           atomic_load_explicit(&tcf_rl_queued, memory_order_acquire);
}

static void *tcf_rl_main(void *arg)
{
    (void)arg;
    uint64_t ctx = 0;
    tcf_rl_self = 1;
    for (;;) {
        if (!tcf_rl_pending()) {
            uint64_t t0 = tcf_now_ns();
            while (!tcf_rl_pending() && tcf_now_ns() - t0 < TCF_RL_SPIN_NS)
                tcf_cpu_relax();
            pthread_mutex_lock(&tcf_rl_mu);
            while (!tcf_rl_pending()) {
                tcf_rl_sleeping = 1;
                pthread_cond_wait(&tcf_rl_cond, &tcf_rl_mu);
            }
            tcf_rl_sleeping = 0;
            pthread_mutex_unlock(&tcf_rl_mu);
        }
        /* the slot of the oldest launch: written before tcf_rl_queued moved past it, and
         * not written again before tcf_rl_done does */
        uint64_t d = atomic_load_explicit(&tcf_rl_done, memory_order_relaxed);
        tcf_rljob_t j = tcf_rl_q[d % TCF_RL_QUEUE];
        tcf_rl_run(&j, &ctx);
        atomic_store_explicit(&tcf_rl_done, d + 1, memory_order_release);
    }
    return NULL;
}

int tcf_rlauncher_push(tcf_rplan_t *p, CUgraphExec x, const uint8_t *shadow, uint64_t stream)
{
    pthread_mutex_lock(&tcf_rl_mu);
    if (!tcf_rl_started && !tcf_rl_failed) {
        if (tcf_thread_spawn(tcf_rl_main) == 0)
            tcf_rl_started = 1;
        else
            tcf_rl_failed = 1;
    }
    uint64_t q = atomic_load_explicit(&tcf_rl_queued, memory_order_relaxed);
    if (!tcf_rl_started || atomic_load_explicit(&tcf_rl_stopped, memory_order_relaxed) ||
        q - atomic_load_explicit(&tcf_rl_done, memory_order_acquire) >= TCF_RL_QUEUE) {
        pthread_mutex_unlock(&tcf_rl_mu);
        return -1;   /* inline, after the queue (the caller drains) */
    }
    tcf_rl_q[q % TCF_RL_QUEUE] = (tcf_rljob_t){ .p = p, .x = x, .shadow = shadow,
                                                 .stream = stream };
    atomic_store_explicit(&tcf_rl_queued, q + 1, memory_order_release);
    if (tcf_rl_sleeping)
        pthread_cond_signal(&tcf_rl_cond);
    pthread_mutex_unlock(&tcf_rl_mu);
    return 0;
}

/* Waits until every launch queued before it was made, or limit_ns (0: none) passed: 0,
 * or -1 at the limit. */
static atomic_int tcf_rl_abandoned;   /* exit stopped waiting: nothing waits again */

static int tcf_rl_wait(uint64_t limit_ns)
{
    if (tcf_rl_self || atomic_load_explicit(&tcf_rl_abandoned, memory_order_relaxed))
        return 0;
    uint64_t q = atomic_load_explicit(&tcf_rl_queued, memory_order_acquire);
    if (atomic_load_explicit(&tcf_rl_done, memory_order_acquire) >= q)
        return 0;
    uint64_t t0 = tcf_now_ns(), spins = 0;
    int rc = 0;
    while (atomic_load_explicit(&tcf_rl_done, memory_order_acquire) < q) {
        tcf_cpu_relax();
        if (++spins % 64 || tcf_now_ns() - t0 < TCF_RL_WAIT_SPIN_NS)
            continue;
        /* the launcher is off its core, or in a long launch */
        struct timespec ts = { 0, 20000 };
        nanosleep(&ts, NULL);
        if (limit_ns && tcf_now_ns() - t0 > limit_ns) {
            rc = -1;
            break;
        }
    }
    atomic_fetch_add_explicit(&tcf_rctr.rl_waits, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&tcf_rctr.rl_wait_ns, tcf_now_ns() - t0, memory_order_relaxed);
    return rc;
}

void tcf_rlauncher_wait(void)
{
    tcf_rl_wait(0);
}

void tcf_rlauncher_stop(void)
{
    /* Under the queue's lock, where a launch is queued, none is queued after it; but exit
     * may have been called from a signal handler that interrupted the lock's holder, and
     * the launcher may be waiting for a lock of the driver's that such a thread holds: at
     * exit neither is waited for longer than a tenth of a second (what is queued then is
     * lost with the process, and counted). */
    int locked = tcf_lock_at_exit(&tcf_rl_mu);
    atomic_store(&tcf_rl_stopped, 1);   /* from here on every launch is inline */
    if (locked)
        pthread_mutex_unlock(&tcf_rl_mu);
    if (tcf_rl_wait(100 * 1000 * 1000) != 0) {
        atomic_store(&tcf_rl_abandoned, 1);
        atomic_fetch_add(&tcf_rctr.rl_lost, 1);
    }
}

void tcf_rlauncher_forked(void)
{
    /* The child has no launcher, and what the parent queued is the parent's to make: the
     * child queues nothing (its queue's lock is never taken again) and waits for nothing. */
    atomic_store(&tcf_rl_stopped, 1);
    atomic_store(&tcf_rl_done, atomic_load(&tcf_rl_queued));
}
