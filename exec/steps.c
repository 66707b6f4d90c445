/* A window's fusion plan as steps, for replay in full mode (steps.h). The same planning
 * as a fuse-mode flush (run.c): each launch decoded from the bytes the window copied,
 * items, tcf_fuser_plan, each group's generated kernel from the table (a new one queued
 * for the worker), a ready group bound for this window; but nothing is issued: the steps go
 * back to replay, which makes them a graph's nodes or patches them into one. */
#include <stdlib.h>
#include <string.h>

#include "exec/internal.h"
#include "exec/steps.h"

atomic_int tcf_beside;

uint64_t tcf_exec_steps_epoch(void)
{
    return atomic_load_explicit(&tcf_fk_epoch, memory_order_acquire);
}

void tcf_exec_init_beside(void)
{
    if (!tcf_cfg.fusion || !tcf_drv.launch_kernel) {
        tcf_log(TCF_LOG_INFO, "full mode: %s; graphs hold the launches as issued",
                tcf_cfg.fusion ? "the driver lacks an entry point" : "TCFUSE_FUSION=0");
        return;
    }
    atomic_store(&tcf_beside, 1);   /* the worker is made at replay's first learned window */
}

int tcf_exec_steps_on(void)
{
    if (!atomic_load_explicit(&tcf_beside, memory_order_relaxed))
        return 0;
    tcf_fkern_begin();
    return !tcf_fkern_absent();
}

void tcf_steps_free(tcf_steps_t *s)
{
    free(s->step);
    free(s->bytes);
    free(s->grp);
    memset(s, 0, sizeof *s);
}

/* Room for n steps and ngrp groups in s; 0, or -1 when out of memory. */
static int tcf_steps_room(tcf_steps_t *s, uint32_t n, uint32_t ngrp)
{
    if (n > s->cap) {
        tcf_step_t *st = tcf_realloc(s->step, n * sizeof *st);
        if (!st)
            return -1;
        s->step = st, s->cap = n;
    }
    if (ngrp > s->gcap) {
        uint32_t cap = s->gcap ? s->gcap * 2 : 8;
        while (cap < ngrp)
            cap *= 2;
        tcf_fgroup_t *g = tcf_realloc(s->grp, cap * sizeof *g);
        if (!g)
            return -1;
        s->grp = g, s->gcap = cap;
    }
    return 0;
}

static tcf_step_t *tcf_step_add(tcf_steps_t *s)
{
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 64;
        tcf_step_t *st = tcf_realloc(s->step, cap * sizeof *st);
        if (!st)
            return NULL;
        s->step = st, s->cap = cap;
    }
    tcf_step_t *st = &s->step[s->n++];
    memset(st, 0, sizeof *st);
    return st;
}

/* A fused step's parameter bytes appended; 0, or -1 when out of memory. */
static int tcf_step_bytes(tcf_steps_t *s, tcf_step_t *st, const void *p, uint32_t len)
{
    uint32_t at = (s->blen + 15u) & ~15u;
    if (at + len > s->bcap) {
        uint32_t cap = s->bcap ? s->bcap : 4096;
        while (cap < at + len)
            cap *= 2;
        uint8_t *b = tcf_realloc(s->bytes, cap);
        if (!b)
            return -1;
        s->bytes = b, s->bcap = cap;
    }
    memcpy(s->bytes + at, p, len);
    st->boff = at, st->pbytes = len;
    s->blen = at + len;
    return 0;
}

/* Group G's kernel launch shape and its one parameter for args, into st and s's bytes
 * (a row group's: its reduction's shape, tcf_rows_args_t). 0; 1 when a row group's
 * argument cannot be made; -1 when out of memory. */
static int tcf_step_bind(tcf_steps_t *s, tcf_step_t *st, const tcf_fgroup_t *G,
                         const tcf_item_t *items, uint32_t n, const tcf_fused_args_t *args)
{
    tcf_rows_args_t ra;
    uint32_t grid[3] = { tcf_codegen_grid(&G->g, args->n), 1, 1 },
             block[3] = { TCF_FUSED_BLOCK, 1, 1 };
    const void *p = args;
    uint32_t len = sizeof *args;
    if (G->g.red) {   /* a row group: the reduction's launch shape, its argument */
        if (tcf_fuser_rows_args(G, items, n, args, &ra) != 0)
            return 1;
        tcf_reduce_launch_dims(&G->g.rs, ra.r.num_outputs, grid, block);
        p = &ra, len = sizeof ra;
    }
    if (len > TCF_STEP_BYTES_MAX || tcf_step_bytes(s, st, p, len) != 0)
        return -1;
    memcpy(st->grid, grid, sizeof grid);
    memcpy(st->block, block, sizeof block);
    return 0;
}

static int tcf_is_node(const tcf_event_t *e)
{
    return e->kind == TCF_EV_LAUNCH || e->kind == TCF_EV_MEMSET || e->kind == TCF_EV_MEMCPY;
}

/* Every node event as issued: the plan when nothing can be planned. */
static int tcf_steps_as_issued(const tcf_window_t *w, tcf_steps_t *s)
{
    s->n = s->blen = s->fused = s->removed = s->ngrp = 0;
    s->final = 1;
    for (uint32_t i = 0; i < w->nev; i++) {
        if (!tcf_is_node(&w->ev[i]))
            continue;
        tcf_step_t *st = tcf_step_add(s);
        if (!st)
            return -1;
        st->ev = i;
    }
    return 0;
}

/* Decodes launch event i of w from its copied bytes into w->ops[i] (e->dec set), as fuse
 * mode's launch path does: only cuLaunchKernel's form with the kernel's own layout, no
 * attributes. 1 decoded. Once: in full mode nothing else marks a launch decoded (capture
 * records it unmarked), and the bytes a window copied stay as they are while it is open,
 * so a launch the memo's lookup, a bind, the upgrade check or a plan decoded is not
 * decoded again for the next of them. */
static int tcf_steps_decode(tcf_window_t *w, uint32_t i)
{
    tcf_event_t *e = &w->ev[i];
    if (e->dec == TCF_DEC_OP || e->dec == TCF_DEC_REDUCE)
        return 1;
    e->dec = 0;
    tcf_kernel_t *k = e->u.l.k;
    if (!k || e->u.l.nattr || !k->param_known || e->u.l.pbytes != k->param_bytes || !w->ops ||
        tcf_fuse_state(k) != TCF_FUSE_DECODABLE)
        return 0;
    const uint8_t *buf = w->arena + e->u.l.poff;
    tcf_decode_status_t ds = k->is_reduce
        ? tcf_decode_reduce_apply(&k->drk, buf, k->param_bytes, e->u.l.grid, e->u.l.block,
                                  &w->ops[i].red)
        : tcf_decode_apply(&k->dk, buf, k->param_bytes, e->u.l.grid, e->u.l.block,
                           &w->ops[i].op);
    if (ds != TCF_DECODE_OK)
        return 0;
    e->dec = k->is_reduce ? TCF_DEC_REDUCE : TCF_DEC_OP;
    return 1;
}

/* w's events as the planner's items in sc, every launch decoded; the launches decoded. */
static uint32_t tcf_steps_items(tcf_window_t *w, tcf_exec_scratch_t *sc)
{
    uint32_t ndec = 0;
    for (uint32_t i = 0; i < w->nev; i++) {
        sc->ev_of[i] = (uint16_t)i;
        if (w->ev[i].kind == TCF_EV_LAUNCH && tcf_steps_decode(w, i))  /* sets its dec */
            ndec++;
        tcf_exec_item(w, i, &sc->items[i]);
    }
    return ndec;
}

uint32_t tcf_exec_steps_span_items(tcf_window_t *w, const tcf_step_t *t, tcf_item_t *items,
                                   uint32_t max)
{
    if (!t->fused || t->ev >= w->nev || t->first > t->ev || t->ev - t->first >= max)
        return 0;
    uint32_t k = 0;
    for (uint32_t i = t->first; i <= t->ev; i++, k++) {
        memset(&items[k], 0, sizeof items[k]);
        if (w->ev[i].kind == TCF_EV_LAUNCH)
            (void)tcf_steps_decode(w, i);   /* sets its dec */
        tcf_exec_item(w, i, &items[k]);
    }
    return k;
}

int tcf_exec_steps(tcf_window_t *w, int learn, tcf_steps_t *s)
{
    uint32_t n = w->nev;
    tcf_exec_scratch_t *sc = NULL;
    if (!tcf_exec_steps_on() || n > TCF_FUSER_MAX_ITEMS || !(sc = tcf_exec_scratch())) {
        tcf_steps_as_issued(w, s);
        return -1;
    }
    tcf_item_t *items = sc->items;
    tcf_plan_t *plan = &sc->plan;
    uint32_t ndec = tcf_steps_items(w, sc);
    if (ndec < 2 || tcf_fuser_plan(items, n, plan) != 0)
        return tcf_steps_as_issued(w, s);

    /* Each group's kernel: ready (fused), settled as not to be had (as issued), or still
     * to come (the plan is not final). */
    CUfunction fn[TCF_FUSER_MAX_GROUPS] = { 0 };
    int final = 1;
    for (uint16_t g = 0; g < plan->ngroups; g++) {
        const tcf_fgroup_t *G = &plan->groups[g];
        if (G->nitems < 2)
            continue;
        fn[g] = tcf_fkern_get(G, w, sc->ev_of, (CUcontext)(uintptr_t)w->ctx, learn);
        if (!fn[g] && !tcf_fkern_settled(G, (CUcontext)(uintptr_t)w->ctx))
            final = 0;
    }
    s->n = s->blen = s->fused = s->removed = s->ngrp = 0;
    s->final = final;
    for (uint32_t i = 0; i < n; i++) {
        const tcf_event_t *e = &w->ev[i];
        if (!tcf_is_node(e))
            continue;
        int grp = e->kind == TCF_EV_LAUNCH ? plan->item_group[i] : -1;
        if (grp >= 0 && fn[grp]) {
            const tcf_fgroup_t *G = &plan->groups[grp];
            if (i != G->last)
                continue;   /* the group runs as one kernel where its last op was */
            tcf_step_t *st = tcf_step_add(s);
            int b = !st || tcf_steps_room(s, 0, s->ngrp + 1) != 0
                  ? -1 : tcf_step_bind(s, st, G, items, n, &G->args);
            if (b > 0)
                return tcf_steps_as_issued(w, s);
            if (b < 0) {
                tcf_steps_as_issued(w, s);
                return -1;
            }
            st->fused = 1, st->nitems = G->nitems, st->ev = i, st->fn = fn[grp];
            st->first = G->first, st->g = s->ngrp;
            s->grp[s->ngrp++] = *G;   /* kept for tcf_exec_steps_rebind */
            s->fused++;
            s->removed += G->nitems - 1u;
            continue;
        }
        tcf_step_t *st = tcf_step_add(s);
        if (!st) {
            tcf_steps_as_issued(w, s);
            return -1;
        }
        st->ev = i;
    }
    return 0;
}

int tcf_exec_steps_rebind(tcf_window_t *w, const tcf_steps_t *was,
                          const tcf_step_arg_t *const *have, tcf_steps_t *s)
{
    uint32_t n = w->nev;
    tcf_exec_scratch_t *sc = NULL;
    if (!was->final || !was->fused || n > TCF_FUSER_MAX_ITEMS || !tcf_exec_steps_on() ||
        !(sc = tcf_exec_scratch()))
        return -1;
    int rebind = 0;
    for (uint32_t i = 0; i < n; i++)
        if (w->ev[i].kind == TCF_EV_FREE || w->ev[i].kind == TCF_EV_ALLOC)
            return -1;
    for (uint32_t j = 0; j < was->n; j++) {
        const tcf_step_t *t = &was->step[j];
        if (t->fused && (t->ev >= n || t->first > t->ev))
            return -1;
        rebind |= t->fused && !have[j];
    }
    /* A group to re-bind sees its span's items as the planner saw them. Past its span a
     * bind reads only whether an item is a free (none here), and a two-byte cat's dtype,
     * which comes from its neighbours': with a cat among the groups to re-bind every launch
     * is decoded, else only the spans' (the others are opaque: decoding a window of 32
     * launches costs more than binding a group). */
    int all = 0;
    for (uint32_t j = 0; rebind && j < was->n; j++) {
        const tcf_step_t *t = &was->step[j];
        for (unsigned k = 0; t->fused && !have[j] && k < was->grp[t->g].g.nops; k++)
            all |= was->grp[t->g].g.ops[k].kind == TCF_OP_CAT;
    }
    if (rebind && all) {
        (void)tcf_steps_items(w, sc);
    } else if (rebind) {
        for (uint32_t i = 0; i < n; i++) {
            sc->ev_of[i] = (uint16_t)i;
            if (w->ev[i].kind == TCF_EV_LAUNCH) {
                memset(&sc->items[i], 0, sizeof sc->items[i]);
                sc->items[i].kind = TCF_ITEM_OPAQUE;
            } else {
                tcf_exec_item(w, i, &sc->items[i]);
            }
        }
        for (uint32_t j = 0; j < was->n; j++)
            if (was->step[j].fused && !have[j])
                (void)tcf_exec_steps_span_items(w, &was->step[j], sc->items + was->step[j].first,
                                                n - was->step[j].first);
    }
    if (tcf_steps_room(s, was->n, 0) != 0)
        return -1;
    s->n = s->blen = s->ngrp = 0;   /* its fused steps' g: was's groups, not copied */
    s->fused = was->fused, s->removed = was->removed, s->final = 1;
    for (uint32_t j = 0; j < was->n; j++) {
        tcf_step_t *st = &s->step[s->n++];
        *st = was->step[j];
        if (!st->fused)
            continue;
        const tcf_fgroup_t *G = &was->grp[st->g];
        if (have[j]) {   /* its launches' bytes as an earlier window's: that argument */
            if (tcf_step_bytes(s, st, have[j]->bytes, have[j]->len))
                return -1;
            memcpy(st->grid, have[j]->grid, sizeof st->grid);
            memcpy(st->block, have[j]->block, sizeof st->block);
            continue;
        }
        tcf_fused_args_t args;
        if (tcf_fuser_bind(G, sc->items, n, &args) != 0 ||
            tcf_step_bind(s, st, G, sc->items, n, &args) != 0)
            return -1;
    }
    return 0;
}

void tcf_exec_steps_ran(const tcf_window_t *w, const tcf_steps_t *s)
{
    (void)w;
    if (!s->fused)
        return;
    atomic_fetch_add(&tcf_xctr.groups_fused, s->fused);
    atomic_fetch_add(&tcf_xctr.launches_removed, s->removed);
}

void tcf_exec_steps_stats_print(void)
{
    tcf_out("  kernels       %u generated: %lu compiled, %lu from the disk cache, %lu verified, "
            "%lu failed verification, %lu could not be verified, %lu failed to compile or load",
            tcf_fkern_made(), atomic_load(&tcf_fkc.compiled), atomic_load(&tcf_fkc.disk_hits),
            atomic_load(&tcf_fkc.verified), atomic_load(&tcf_fkc.verify_mismatch),
            atomic_load(&tcf_fkc.verify_unable),
            atomic_load(&tcf_fkc.compile_failed) + atomic_load(&tcf_fkc.load_failed) +
                atomic_load(&tcf_fkc.codegen_failed));
    /* bench/run-all reads "fused N groups; M launches removed": keep that prefix */
    tcf_out("  fused         %llu groups; %llu launches removed (generated kernels run in graphs)",
            (unsigned long long)atomic_load(&tcf_xctr.groups_fused),
            (unsigned long long)atomic_load(&tcf_xctr.launches_removed));
}
