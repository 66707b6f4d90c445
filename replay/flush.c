/* A window's close in graph mode (capture calls it for every window that closes with
 * events, its lock held). A held window whose key has a ready graph, launch for launch
 * the same kernels and shapes, runs as that graph; any other held window goes out as it
 * was issued. Every window that did not run as a graph is learned: its key is counted,
 * and once seen more than TCFUSE_REPLAY_WARMUP times, with TCFUSE_REPLAY_MIN launches or
 * more that a node can each carry, its launches and bytes become a plan for the worker
 * (or, with TCFUSE_REPLAY_SYNC, are instantiated here and now). */
#include <stdlib.h>
#include <string.h>

#include "exec/steps.h"
#include "replay/internal.h"

/* The nodes of window w: launches, memsets and copies. */
static uint32_t tcf_rnodes(const tcf_window_t *w)
{
    return w->nlaunch + w->nops;
}

/* Whether w's held work is p's nodes, in order (a 64-bit key collision, or a plan remade
 * under the same key, must not run the wrong graph). */
static int tcf_rmatches(const tcf_rplan_t *p, const tcf_window_t *w)
{
    uint32_t n = p->osig ? p->norig : p->n;   /* full mode: the launches its steps replace */
    if (n != tcf_rnodes(w) || !p->nodes)
        return 0;
    uint32_t j = 0;
    for (uint32_t i = 0; i < w->nev; i++) {
        const tcf_event_t *e = &w->ev[i];
        if (!tcf_revent_node(e))
            continue;
        tcf_rsig_t s;
        if (!e->held || j >= n || tcf_rsig_of_event(w, e, &s) != TCF_RN_OK ||
            memcmp(&s, p->osig ? &p->osig[j] : &p->nodes[j].sig, sizeof s))
            return 0;
        j++;
    }
    return j == n;
}

/* Fills p's nodes and shadow from w's nodes (already checked carriable). */
int tcf_rplan_fill(tcf_rplan_t *p, const tcf_window_t *w, const tcf_rsig_t *sigs,
                          uint32_t n)
{
    uint32_t len = 0;
    for (uint32_t i = 0; i < n; i++)
        len += (sigs[i].pbytes + 7u) & ~7u;
    p->nodes = tcf_calloc(n, sizeof *p->nodes);
    p->shadow = tcf_malloc(len ? len : 8);
    if (!p->nodes || !p->shadow) {
        free(p->nodes), free(p->shadow);
        p->nodes = NULL, p->shadow = NULL;
        return -1;
    }
    uint32_t j = 0, at = 0;
    for (uint32_t i = 0; i < w->nev && j < n; i++) {
        const tcf_event_t *e = &w->ev[i];
        if (!tcf_revent_node(e))
            continue;
        tcf_rnode_t *nd = &p->nodes[j];
        uint8_t op[TCF_R_OP_BYTES];
        nd->sig = sigs[j];
        nd->k = e->kind == TCF_EV_LAUNCH ? e->u.l.k : NULL;
        nd->soff = at;
        memcpy(p->shadow + at, tcf_revent_bytes(w, e, op), sigs[j].pbytes);
        at += (sigs[j].pbytes + 7u) & ~7u;
        if (e->kind == TCF_EV_LAUNCH && e->u.l.nattr) {
            nd->attr = tcf_malloc(e->u.l.nattr * sizeof *nd->attr);
            if (nd->attr) {
                memcpy(nd->attr, tcf_event_attrs(w, e), e->u.l.nattr * sizeof *nd->attr);
                nd->nattr = e->u.l.nattr;
            }
        }
        j++;
    }
    p->n = n;
    p->shadow_len = len;
    p->ctx = w->ctx;
    p->stream = w->stream;
    p->seed = w->rseed;
    return 0;
}

/* Counts the window's key; makes its plan when it has been seen often enough. Returns
 * the key's plan (NULL when none is kept); *fresh is 1 when the key was new (or the table
 * had no room for it), 0 when seen before, -1 when nothing was learned; *ready whether the
 * key has a graph ready (a window run as issued to time it would have been replayed). */
static tcf_rplan_t *tcf_rlearn(tcf_window_t *w, int *fresh, int *ready)
{
    *fresh = -1, *ready = 0;
    if (!atomic_load_explicit(&tcf_ron, memory_order_relaxed) || tcf_rcapture_active() ||
        w->rstate == TCF_R_FRESH || !w->nlaunch)
        return NULL;   /* FRESH: its first launch never came through replay (refused, or off) */
    /* Full mode makes exec's worker here, at its first learned window, as fuse mode makes
     * it at its first launch, not at the first warm key: the worker opens NVRTC and the
     * disk cache (most of a second), which warm keys would otherwise wait for. (Not before
     * a launch: a child forked before CUDA started must not find NVRTC loaded,
     * exec/worker.c says why.) */
    if (tcf_rfull)
        (void)tcf_exec_steps_on();
    uint32_t n = tcf_rnodes(w);
    tcf_rsig_t stack_sigs[64], *sigs = n <= 64 ? stack_sigs : tcf_malloc(n * sizeof *sigs);
    if (!sigs)
        return NULL;
    int ok = 1;
    uint64_t key = w->rseed;
    uint32_t j = 0;
    for (uint32_t i = 0; i < w->nev && j < n; i++) {
        const tcf_event_t *e = &w->ev[i];
        if (!tcf_revent_node(e))
            continue;
        if (tcf_rsig_of_event(w, e, &sigs[j]) != TCF_RN_OK || e->rc != CUDA_SUCCESS)
            ok = 0;
        key = tcf_rkey_step(key, &sigs[j]);
        j++;
    }
    atomic_fetch_add_explicit(&tcf_rctr.learned, 1, memory_order_relaxed);
    tcf_rplan_t *build = NULL, *full = NULL;
    pthread_mutex_lock(&tcf_rplan_lock);
    tcf_rplan_t *p = tcf_rplan_get(key, 1);
    *fresh = !p || p->seen == 0;
    *ready = p && p->state == TCF_RP_READY;
    if (!p) {
        atomic_fetch_add_explicit(&tcf_rctr.learn_untracked, 1, memory_order_relaxed);
    } else {
        p->seen++;
        tcf_rplan_sighted(p);
        if (p->state == TCF_RP_COUNTING && p->seen > tcf_rplan_warmup(p)) {
            if (!ok || j != n || w->nlaunch < (uint32_t)tcf_cfg.replay_min) {
                if (p->seen == tcf_rplan_warmup(p) + 1)
                    atomic_fetch_add_explicit(&tcf_rctr.not_buildable, 1, memory_order_relaxed);
            } else if (tcf_rfull) {
                /* planned outside the lock (a kernel may load from disk meanwhile); no
                 * other window takes a BUILDING key */
                p->state = TCF_RP_BUILDING;
                full = p;
            } else if (tcf_rplan_fill(p, w, sigs, n) == 0) {
                p->state = TCF_RP_BUILDING;
                if (tcf_cfg.replay_sync || tcf_rworker_enqueue(p) != 0) {
                    p->built_sync = 1;   /* (no worker thread: made here) */
                    build = p;
                }
            }
        }
    }
    pthread_mutex_unlock(&tcf_rplan_lock);
    if (full) {
        int r = tcf_rfull_fill(full, w, sigs, n);
        pthread_mutex_lock(&tcf_rplan_lock);
        if (r != 0) {   /* no memory: the key's next window */
            full->state = TCF_RP_COUNTING;
        } else if (tcf_cfg.replay_sync || tcf_rworker_enqueue(full) != 0) {
            full->built_sync = 1;
            build = full;
        }
        pthread_mutex_unlock(&tcf_rplan_lock);
    }
    if (sigs != stack_sigs)
        free(sigs);
    if (build) {
        tcf_rworker_build(build);
        tcf_rplan_retired_destroy(0);
    }
    return p;
}

/* Runs w's held launches as their graph. 1 replayed; 0 not (held work untouched). */
static int tcf_rtry_replay(tcf_window_t *w, tcf_rplan_t **plan)
{
    pthread_mutex_lock(&tcf_rplan_lock);
    tcf_rplan_t *p = tcf_rplan_get(w->rh, 0);
    int ready = p && p->state == TCF_RP_READY;
    if (ready)
        tcf_rplan_take(p);
    pthread_mutex_unlock(&tcf_rplan_lock);
    if (!ready) {
        atomic_fetch_add_explicit(&tcf_rctr.issued_no_graph, 1, memory_order_relaxed);
        return 0;
    }
    int done = 0, reason = -1, renew = 0;
    uint32_t patched = 0;
    if (atomic_load_explicit(&p->launch_refused, memory_order_relaxed)) {
        reason = TCF_RG_launch_failed;   /* on the launcher thread, at an earlier replay */
        atomic_fetch_add_explicit(&tcf_rctr.issued_failed, 1, memory_order_relaxed);
    } else if (!tcf_rmatches(p, w)) {
        atomic_fetch_add_explicit(&tcf_rctr.issued_collision, 1, memory_order_relaxed);
    } else if (tcf_rfull && tcf_rfull_upgrade_due(p, w)) {
        renew = 1;   /* full mode: a plan fusing more replaces this graph */
    } else {
        CUcontext prev;
        uint64_t t0 = tcf_cfg.stats ? tcf_now_ns() : 0;   /* for the patches line alone */
        int sw = tcf_rctx_enter(w, &prev);
        done = (p->osig ? tcf_rfull_replay(p, w, &reason, &patched)
                        : tcf_rgraph_replay(p, w, &reason, &patched)) == 0;
        tcf_rctx_leave(sw, prev);
        if (t0)
            atomic_fetch_add_explicit(&tcf_rctr.replay_ns, tcf_now_ns() - t0,
                                      memory_order_relaxed);
        if (done) {
            p->replays++;
            w->graph_nodes = p->n;
            w->graph_patched = patched;
            atomic_fetch_add_explicit(&tcf_rctr.replayed, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&tcf_rctr.launches_replayed, w->nlaunch,
                                      memory_order_relaxed);
            tcf_rstats_patched(patched);
        } else if (reason == TCF_R_RENEW) {
            renew = 1;   /* full mode: a kernel came while the window was planned */
        } else {
            atomic_fetch_add_explicit(&tcf_rctr.issued_failed, 1, memory_order_relaxed);
        }
    }
    pthread_mutex_lock(&tcf_rplan_lock);
    tcf_rplan_done(p);
    if (!done && reason >= 0 && p->state == TCF_RP_READY)
        tcf_rplan_give_up(p, reason);
    if (renew && !p->busy && p->state == TCF_RP_READY)
        tcf_rplan_renew(p);   /* else another flush replays it now: the next window asks again */
    pthread_mutex_unlock(&tcf_rplan_lock);
    *plan = p;
    return done;
}

/* The next pause's length after one of `last` windows (0: none yet): TCF_R_PAUSE, then
 * twice the last, up to TCF_R_PAUSE_MAX. */
static uint32_t tcf_rpause_next(uint32_t last)
{
    return !last ? TCF_R_PAUSE : last < TCF_R_PAUSE_MAX / 2 ? last * 2 : TCF_R_PAUSE_MAX;
}

/* Pauses a stream's learning where its keys never repeat (TCF_R_NEWRUN; w locked). */
static void tcf_rlearn_pays(tcf_window_t *w, int fresh)
{
    if (fresh < 0)
        return;
    if (!fresh) {
        w->rnew = 0, w->rlback = 0;
        return;
    }
    if (++w->rnew < (w->rlback ? TCF_R_NEWRUN_AGAIN : TCF_R_NEWRUN))
        return;
    w->rnew = 0;
    w->rlback = tcf_rpause_next(w->rlback);
    if (w->rskip < w->rlback)
        w->rskip = w->rlback;
    atomic_fetch_add_explicit(&tcf_rctr.learn_pauses, 1, memory_order_relaxed);
}

void tcf_replay_flush(tcf_window_t *w, const char *reason)
{
    tcf_rplan_t *p = NULL;
    int graph = 0, fresh = -1, ready = 0;
    if (w->nheld && w->rstate == TCF_R_HOLD) {
        if (tcf_rtry_replay(w, &p)) {
            tcf_rheld_done(w);
            graph = 1;
        } else {
            tcf_rissue_held(w);
            p = tcf_rlearn(w, &fresh, &ready);
        }
    } else {
        if (w->nheld)   /* held work outside a holding window: never, but never lost */
            tcf_rissue_held(w);
        p = tcf_rlearn(w, &fresh, &ready);
    }
    tcf_rlearn_pays(w, graph ? 0 : fresh);
    tcf_rjudge_expire();
    /* A window run as issued to time it counts as held: as a replay when its key had a
     * graph, as a window that left every graph's path when not (where windows repeat only
     * by chance, holding would have been in vain there too). */
    if (graph || (w->rexpl && ready)) {
        w->rvain = 0, w->rback = 0;
    } else if ((w->rheld || w->rexpl) && ++w->rvain >= TCF_R_VAIN) {   /* holding does not pay here */
        w->rvain = 0;
        w->rback = tcf_rpause_next(w->rback);
        w->rskip = w->rback;
        atomic_fetch_add_explicit(&tcf_rctr.pauses, 1, memory_order_relaxed);
    }
    tcf_rwindow_next(w, p, graph, tcf_r_is_cut(reason));
}

void tcf_rwindow_next(tcf_window_t *w, tcf_rplan_t *p, int graph, int cut)
{
    /* Its time is taken at the stream's next window (a held window that ran as issued is
     * neither sample: it waited for nothing and ran late). */
    w->rprev = graph || (w->rstate == TCF_R_PASS && !w->rheld) ? p : NULL;
    w->rheld = 0, w->rexpl = 0;
    w->rprev_graph = (uint8_t)graph;
    w->rprev_start = w->rstart;
    tcf_rcount_since(w, w->nlaunch + w->rqn);
    w->rstate = TCF_R_FRESH;
    w->rcut = 0;
    w->rquiet = 0, w->rqn = 0;
    w->rcap = 0;   /* the next window's first launch sets it (hold.c) */
    if (cut)
        w->rord = w->rord < TCF_R_ORD_MAX ? w->rord + 1 : TCF_R_ORD_MAX;
    else
        w->rord = 0;
}
