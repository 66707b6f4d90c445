/* Full mode (TCFUSE_MODE=full): graph mode's windows, keys and holding, with graphs made
 * of the window's fusion plan (exec/steps.h) instead of its launches. A key is still the
 * window's launches (the same work, the same key); when it is warm its window is planned
 * as fuse mode would run it: each fused group one node of its generated kernel, the other
 * launches, memsets and copies nodes as issued. A plan with nothing fused is graph mode's
 * plan. A group whose kernel is still compiling, verifying or loading from the disk cache
 * runs as issued in the graph, as in a fuse-mode flush, and the groups whose kernels are
 * ready are fused nodes at once: a short program or a server's first minutes would
 * otherwise gain nothing from what is ready, and one kernel compiled late (or loaded late
 * from the disk cache) kept a whole window's fusion out of its graph until it came. Such
 * a plan is not final; once the kernel table has moved, the key's next window is planned
 * again (tcf_rfull_upgrade_due), and a plan that fuses more groups replaces the graph:
 * that window runs as issued, the key is counted again from the warm-up count, and the
 * same window, learned as it closes, makes the new plan.
 *
 * Every held window of a key with fused nodes gets its own steps when it closes (its
 * pointers and scalars are its own, and so are the fused kernels' bound arguments): bound
 * from the key's memo (memo.c: its last plan, and the arguments earlier windows' launches
 * gave each group) without planning (tcf_exec_steps_rebind: a group whose launches carry
 * the bytes, or decode to the operands, of an earlier window's takes that window's
 * argument, another is re-bound by the rules that formed it), or planned again where that
 * is refused or there is no memo (TCFUSE_REPLAY_REBIND). Its steps must be the graph's
 * node for node (the same kernels, shapes, parameter sizes), and their bytes are patched
 * like any node's.
 * Steps that differ (a kernel evicted from exec's table and made again, a group bound
 * differently) run the window as issued and give the key up (plan-changed): a graph never
 * runs steps other than its own. A plan not final whose steps differ after the kernel
 * table moved (a kernel came between the check and the planning) is made again instead
 * (TCF_R_RENEW). */
#include <stdlib.h>
#include <string.h>

#include "exec/steps.h"
#include "replay/internal.h"

int tcf_rfull;

/* The window's steps, per thread that closes windows (reused: a window may have
 * thousands), and the planner's beside a bound window's under TCFUSE_REPLAY_REBIND=2,
 * released when the thread exits. */
typedef struct {
    tcf_steps_t s, check;
    int         keyed;
} tcf_rsteps_t;
static _Thread_local tcf_rsteps_t tcf_rsteps;
static pthread_key_t tcf_rsteps_key;
static pthread_once_t tcf_rsteps_once = PTHREAD_ONCE_INIT;
static int tcf_rsteps_key_ok;

static void tcf_rsteps_release(void *p)
{
    tcf_rsteps_t *t = p;
    tcf_steps_free(&t->s);
    tcf_steps_free(&t->check);
    t->keyed = 0;
}

static void tcf_rsteps_key_make(void)
{
    tcf_rsteps_key_ok = pthread_key_create(&tcf_rsteps_key, tcf_rsteps_release) == 0;
}

static tcf_rsteps_t *tcf_rsteps_all(void)
{
    if (!tcf_rsteps.keyed) {   /* first use on this thread (or after its release) */
        pthread_once(&tcf_rsteps_once, tcf_rsteps_key_make);
        if (tcf_rsteps_key_ok)
            pthread_setspecific(tcf_rsteps_key, &tcf_rsteps);
        tcf_rsteps.keyed = 1;
    }
    return &tcf_rsteps;
}

static tcf_steps_t *tcf_rsteps_mine(void)
{
    return &tcf_rsteps_all()->s;
}

/* The node signature of a fused step. */
static void tcf_rsig_of_step(const tcf_step_t *st, tcf_rsig_t *s)
{
    memset(s, 0, sizeof *s);
    s->handle = (uint64_t)(uintptr_t)st->fn;
    memcpy(s->grid, st->grid, sizeof s->grid);
    memcpy(s->block, st->block, sizeof s->block);
    s->pbytes = st->pbytes;
    s->form = TCF_R_FORM_PARAMS;  /* its one parameter, as fuse mode launches it */
    s->kind = TCF_KIND_FUNCTION;
}

/* Node index of each node event of w (UINT32_MAX for the others), into map. */
static void tcf_rnode_index(const tcf_window_t *w, uint32_t *map)
{
    uint32_t j = 0;
    for (uint32_t i = 0; i < w->nev; i++)
        map[i] = tcf_revent_node(&w->ev[i]) ? j++ : UINT32_MAX;
}

/* tcf_exec_steps; with stats on, its time on this thread added to *ns (the full line). */
static int tcf_rfull_steps(tcf_window_t *w, int learn, tcf_steps_t *st, atomic_ullong *ns)
{
    uint64_t t0 = tcf_cfg.stats ? tcf_now_ns() : 0;
    int r = tcf_exec_steps(w, learn, st);
    if (t0)
        atomic_fetch_add_explicit(ns, tcf_now_ns() - t0, memory_order_relaxed);
    return r;
}

int tcf_rfull_fill(tcf_rplan_t *p, tcf_window_t *w, const tcf_rsig_t *sigs, uint32_t n)
{
    tcf_steps_t *st = tcf_rsteps_mine();
    uint64_t epoch = tcf_exec_steps_epoch();   /* before planning: a move during it is seen */
    int r = tcf_exec_steps_on() ? tcf_rfull_steps(w, 1, st, &tcf_rctr.full_learn_ns) : -1;
    /* not final: planned again once the table moves (epoch + 1: never 0, and every move
     * seen; epoch | 1 took 2 and 3 for one, and missed the kernel that came between) */
    atomic_store(&p->upgrade_epoch, r == 0 && !st->final ? epoch + 1 : 0);
    if (r != 0 || !st->fused) {   /* nothing fused (yet): graph mode's plan */
        atomic_fetch_add(r == 0 && !st->final ? &tcf_rctr.full_waiting : &tcf_rctr.full_plain, 1);
        return tcf_rplan_fill(p, w, sigs, n);
    }
    if (!st->final)
        atomic_fetch_add(&tcf_rctr.full_partial, 1);
    uint32_t m = st->n, len = 0;
    uint32_t *map = tcf_malloc(w->nev * sizeof *map);
    p->nodes = tcf_calloc(m, sizeof *p->nodes);
    p->osig = tcf_malloc(n * sizeof *p->osig);
    for (uint32_t j = 0; j < m; j++)
        len += (st->step[j].fused ? st->step[j].pbytes : 0) + 8;
    for (uint32_t j = 0; j < n; j++)
        len += sigs[j].pbytes;
    p->shadow = tcf_malloc(len);
    if (!map || !p->nodes || !p->osig || !p->shadow)
        goto oom;
    tcf_rnode_index(w, map);
    memcpy(p->osig, sigs, n * sizeof *sigs);
    uint32_t at = 0;
    for (uint32_t j = 0; j < m; j++) {
        const tcf_step_t *s = &st->step[j];
        const tcf_event_t *e = &w->ev[s->ev];
        tcf_rnode_t *nd = &p->nodes[j];
        nd->soff = at;
        if (s->fused) {
            tcf_rsig_of_step(s, &nd->sig);
            memcpy(p->shadow + at, st->bytes + s->boff, s->pbytes);
        } else {
            uint8_t op[TCF_R_OP_BYTES];
            nd->sig = sigs[map[s->ev]];
            nd->k = e->kind == TCF_EV_LAUNCH ? e->u.l.k : NULL;
            memcpy(p->shadow + at, tcf_revent_bytes(w, e, op), nd->sig.pbytes);
            if (e->kind == TCF_EV_LAUNCH && e->u.l.nattr) {
                nd->attr = tcf_malloc(e->u.l.nattr * sizeof *nd->attr);
                if (!nd->attr)
                    goto oom;
                memcpy(nd->attr, tcf_event_attrs(w, e), e->u.l.nattr * sizeof *nd->attr);
                nd->nattr = e->u.l.nattr;
            }
        }
        at += (nd->sig.pbytes + 7u) & ~7u;
    }
    free(map);
    p->n = m;
    p->shadow_len = at;
    p->norig = n;
    p->fused = st->fused;
    p->removed = st->removed;
    p->ctx = w->ctx;
    p->stream = w->stream;
    p->seed = w->rseed;
    atomic_fetch_add(&tcf_rctr.full_plans, 1);
    return 0;
oom:
    if (p->nodes)
        for (uint32_t j = 0; j < m; j++)
            free(p->nodes[j].attr);
    free(map), free(p->nodes), free(p->osig), free(p->shadow);
    p->nodes = NULL, p->osig = NULL, p->shadow = NULL;
    return -1;
}

/* Whether p's plan is not final and the kernel table has moved since it was made. */
static int tcf_rfull_moved(tcf_rplan_t *p)
{
    uint64_t was = atomic_load(&p->upgrade_epoch);
    return was && tcf_exec_steps_epoch() + 1 != was;
}

/* A window of a plan not final planned into other steps after the table moved: the key
 * is made again (the window runs as issued), never given up for it. */
static void tcf_rfull_renew_due(int *reason)
{
    *reason = TCF_R_RENEW;
    atomic_fetch_add_explicit(&tcf_rctr.full_renewed_late, 1, memory_order_relaxed);
}

/* Each of st's steps against p's node j: its signature and its bytes for this window,
 * into bytes_of (ops: room for w's memset and copy bytes). 0 every step is its node's;
 * 1 step *at differs (its kernel, shape or parameter size); -1 a step cannot be a node
 * (an event not held, too many memsets). */
static int tcf_rfull_nodes(const tcf_rplan_t *p, tcf_window_t *w, const tcf_steps_t *st,
                           uint8_t **bytes_of, uint8_t (*ops)[TCF_R_OP_BYTES], uint32_t *at)
{
    uint32_t o = 0;
    for (uint32_t j = 0; j < p->n; j++) {
        const tcf_step_t *s = &st->step[j];
        const tcf_event_t *e = &w->ev[s->ev];
        tcf_rsig_t sig;
        if (s->fused) {
            tcf_rsig_of_step(s, &sig);
            bytes_of[j] = st->bytes + s->boff;
        } else {
            if (!e->held || tcf_rsig_of_event(w, e, &sig) != TCF_RN_OK)
                return -1;
            if (e->kind == TCF_EV_LAUNCH)
                bytes_of[j] = w->arena + e->u.l.poff;
            else if (o < w->nops)
                bytes_of[j] = (uint8_t *)tcf_revent_bytes(w, e, ops[o++]);
            else
                return -1;
        }
        if (memcmp(&sig, &p->nodes[j].sig, sizeof sig)) {
            *at = j;
            return 1;
        }
    }
    return 0;
}

/* TCFUSE_REPLAY_REBIND=2: w planned beside its bound steps st, step by step and byte by
 * byte (the kernel, its launch shape, its argument). 1 the same; 0 they differ (counted,
 * logged). */
static int tcf_rfull_check(tcf_window_t *w, const tcf_steps_t *st)
{
    tcf_steps_t *pl = &tcf_rsteps_all()->check;
    atomic_fetch_add_explicit(&tcf_rctr.full_rebind_checked, 1, memory_order_relaxed);
    int same = tcf_exec_steps(w, 0, pl) == 0 && pl->n == st->n && pl->fused == st->fused;
    uint32_t j = 0;
    for (; same && j < st->n; j++) {
        const tcf_step_t *a = &st->step[j], *b = &pl->step[j];
        same = a->fused == b->fused && a->ev == b->ev &&
               (!a->fused || (a->fn == b->fn && a->pbytes == b->pbytes &&
                              !memcmp(a->grid, b->grid, sizeof a->grid) &&
                              !memcmp(a->block, b->block, sizeof a->block) &&
                              !memcmp(st->bytes + a->boff, pl->bytes + b->boff, a->pbytes)));
    }
    if (!same) {
        atomic_fetch_add_explicit(&tcf_rctr.full_rebind_differs, 1, memory_order_relaxed);
        tcf_log(TCF_LOG_INFO, "full mode: a window bound without planning differs from its "
                "plan at step %u of %u", j ? j - 1 : 0, st->n);
    }
    return same;
}

int tcf_rfull_replay(tcf_rplan_t *p, tcf_window_t *w, int *reason, uint32_t *patched)
{
    tcf_steps_t *st = tcf_rsteps_mine();
    *patched = 0;
    if (!tcf_exec_steps_on())
        return -1;   /* exec stopped (exit began): the window runs as issued, the key kept */
    tcf_rbytes_t rbytes;
    if (tcf_rbytes_room(p, w, &rbytes) != 0)
        return -1;
    uint8_t **bytes_of = rbytes.bytes_of, (*ops)[TCF_R_OP_BYTES] = rbytes.ops;
    uint64_t epoch = tcf_exec_steps_epoch();
    uint32_t at = 0, kept = 0;
    int rc = -1, nodes = 1, bound = tcf_rmemo_bind(p, w, st, epoch, &kept);
    if (bound && st->n == p->n)
        nodes = tcf_rfull_nodes(p, w, st, bytes_of, ops, &at);
    if (bound && nodes != 0) {   /* bound to other nodes than the graph's: planned instead */
        atomic_fetch_add_explicit(&tcf_rctr.full_rebind_refused, 1, memory_order_relaxed);
        bound = 0;
    }
    if (bound && tcf_cfg.replay_rebind == 2 && !tcf_rfull_check(w, st)) {
        bound = 0;   /* the planner's steps run: they are the reference */
    }
    if (!bound) {
        atomic_fetch_add_explicit(&tcf_rctr.full_planned_again, 1, memory_order_relaxed);
        int planned = tcf_rfull_steps(w, 0, st, &tcf_rctr.full_plan_ns);
        if (planned != 0 || st->n != p->n) {
            if (tcf_rfull_moved(p)) {
                tcf_rfull_renew_due(reason);
                goto out;
            }
            *reason = TCF_RG_plan_changed;
            atomic_fetch_add_explicit(&tcf_rctr.full_changed_count, 1, memory_order_relaxed);
            tcf_log(TCF_LOG_INFO, "full mode: key %016llx: window planned into %u steps, its "
                    "graph has %u", (unsigned long long)p->key, planned ? 0u : st->n, p->n);
            goto out;
        }
        nodes = tcf_rfull_nodes(p, w, st, bytes_of, ops, &at);
        if (nodes > 0) {
            const tcf_step_t *s = &st->step[at];
            if (tcf_rfull_moved(p)) {
                tcf_rfull_renew_due(reason);
                goto out;
            }
            *reason = TCF_RG_plan_changed;
            atomic_fetch_add_explicit(&tcf_rctr.full_changed_step, 1, memory_order_relaxed);
            if (s->fused)
                atomic_fetch_add_explicit(&tcf_rctr.full_changed_fused, 1, memory_order_relaxed);
            tcf_log(TCF_LOG_INFO, "full mode: key %016llx: step %u of %u differs from its "
                    "graph's node (%s)", (unsigned long long)p->key, at, p->n,
                    s->fused ? "a generated kernel" : "a launch as issued");
            goto out;
        }
        if (nodes < 0)
            goto out;
    }
    rc = tcf_rgraph_run(p, w, bytes_of, w->ev[st->step[0].ev].stream, reason, patched);
    if (rc == 0) {
        tcf_exec_steps_ran(w, st);
        atomic_fetch_add_explicit(&tcf_rctr.full_replayed, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&tcf_rctr.full_fused, st->fused, memory_order_relaxed);
        atomic_fetch_add_explicit(&tcf_rctr.full_removed, st->removed, memory_order_relaxed);
        if (bound) {
            atomic_fetch_add_explicit(&tcf_rctr.full_rebound, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&tcf_rctr.full_kept_groups, kept, memory_order_relaxed);
            atomic_fetch_add_explicit(&tcf_rctr.full_rebound_groups, st->fused - kept,
                                      memory_order_relaxed);
        }
        tcf_rmemo_remember(p, w, st, epoch, bound);
    } else {
        tcf_rmemo_forget(p);
    }
out:
    tcf_rbytes_free(&rbytes);
    return rc;
}

int tcf_rfull_upgrade_due(tcf_rplan_t *p, tcf_window_t *w)
{
    uint64_t was = atomic_load(&p->upgrade_epoch), epoch = tcf_exec_steps_epoch();
    if (!was || epoch + 1 == was || !tcf_exec_steps_on())
        return 0;
    tcf_steps_t *st = tcf_rsteps_mine();
    if (tcf_rfull_steps(w, 1, st, &tcf_rctr.full_learn_ns) != 0) {   /* the graph stays, final */
        atomic_store(&p->upgrade_epoch, 0);
        return 0;
    }
    atomic_store(&p->upgrade_epoch, st->final ? 0 : epoch + 1);
    if (st->fused <= p->fused)   /* no more fused than the graph: it stays */
        return 0;
    atomic_fetch_add(&tcf_rctr.full_upgraded, 1);
    return 1;
}

void tcf_rfull_stats_print(void)
{
    if (!tcf_rfull)
        return;
    tcf_out("  full          %llu windows replayed with generated kernels (%llu kernels run in "
            "graphs, %llu launches fused away); %llu graphs made with fused steps, %llu with "
            "nothing to fuse; %llu plain while their kernels compiled, %llu fused while some "
            "did; %llu replaced by plans fusing more (%llu as a kernel came while a window was "
            "planned); on the application's threads, %.1f ms planning replayed windows again "
            "(%.1f us a window), %.1f ms planning at learning and upgrades",
            (unsigned long long)atomic_load(&tcf_rctr.full_replayed),
            (unsigned long long)atomic_load(&tcf_rctr.full_fused),
            (unsigned long long)atomic_load(&tcf_rctr.full_removed),
            (unsigned long long)atomic_load(&tcf_rctr.full_plans),
            (unsigned long long)atomic_load(&tcf_rctr.full_plain),
            (unsigned long long)atomic_load(&tcf_rctr.full_waiting),
            (unsigned long long)atomic_load(&tcf_rctr.full_partial),
            (unsigned long long)(atomic_load(&tcf_rctr.full_upgraded) +
                                 atomic_load(&tcf_rctr.full_renewed_late)),
            (unsigned long long)atomic_load(&tcf_rctr.full_renewed_late),
            (double)atomic_load(&tcf_rctr.full_plan_ns) / 1e6,
            atomic_load(&tcf_rctr.full_planned_again)
                ? (double)atomic_load(&tcf_rctr.full_plan_ns) / 1e3 /
                      (double)atomic_load(&tcf_rctr.full_planned_again) : 0.0,
            (double)atomic_load(&tcf_rctr.full_learn_ns) / 1e6);
    unsigned long long rb = atomic_load(&tcf_rctr.full_rebound),
                       rf = atomic_load(&tcf_rctr.full_rebind_refused);
    tcf_out("  rebind        %llu replayed windows bound without planning (%llu groups "
            "re-bound, %llu kept from earlier windows (%llu by their decoded operands), %llu "
            "dropped from a full memo, %llu "
            "not kept for the memos' memory (TCFUSE_REPLAY_MEMO), which holds %.2f MiB; %.1f us "
            "a window tried), %llu refused and planned (a group's launches no longer fuse "
            "alike, other nodes than the graph's; a key whose windows free or allocate keeps "
            "no plan to bind from)%s", rb,
            (unsigned long long)atomic_load(&tcf_rctr.full_rebound_groups),
            (unsigned long long)atomic_load(&tcf_rctr.full_kept_groups),
            (unsigned long long)atomic_load(&tcf_rctr.full_kept_items),
            (unsigned long long)atomic_load(&tcf_rctr.full_memo_dropped),
            (unsigned long long)atomic_load(&tcf_rctr.full_memo_unkept),
            (double)tcf_rmemo_bytes() / (1024.0 * 1024.0),
            rb + rf ? (double)atomic_load(&tcf_rctr.full_rebind_ns) / 1e3 / (double)(rb + rf)
                    : 0.0,
            rf, tcf_cfg.replay_rebind ? "" : " (TCFUSE_REPLAY_REBIND=0)");
    if (tcf_cfg.replay_rebind == 2)
        tcf_out("  rebind check  %llu bound windows planned beside, %llu differed from their plan "
                "(the plan ran)", (unsigned long long)atomic_load(&tcf_rctr.full_rebind_checked),
                (unsigned long long)atomic_load(&tcf_rctr.full_rebind_differs));
    unsigned long long cc = atomic_load(&tcf_rctr.full_changed_count),
                       cs = atomic_load(&tcf_rctr.full_changed_step);
    if (cc || cs)
        tcf_out("  plan changed  %llu windows planned into another number of steps than their "
                "graph's, %llu with a step of another kernel, shape or parameter size (%llu of "
                "them a generated kernel's)", cc, cs, atomic_load(&tcf_rctr.full_changed_fused));
    tcf_exec_steps_stats_print();
}
