/* A window's flush in fuse mode: its work since the last flush is planned (fuser/), each
 * group whose generated kernel is ready and whose launches are all still held runs as one
 * launch where its last op was, and everything else held goes out as it was issued. A
 * window that ran as issued is planned all the same, which queues the compiles of its
 * groups (table.c) and makes a ready group's first kernel a start (starts.c). */
#include <stdlib.h>
#include <string.h>

#include "exec/internal.h"

static void tcf_issue_original(const tcf_window_t *w, const tcf_event_t *e)
{
    const tcf_kernel_t *k = e->u.l.k;
    void *kp[8];
    for (uint32_t j = 0; j < k->nparams && j < 8; j++)
        kp[j] = w->arena + e->u.l.poff + k->off[j];
    CUresult rc = tcf_drv.launch_kernel((CUfunction)(uintptr_t)k->handle, e->u.l.grid[0],
                                        e->u.l.grid[1], e->u.l.grid[2], e->u.l.block[0],
                                        e->u.l.block[1], e->u.l.block[2], e->u.l.smem,
                                        (CUstream)(uintptr_t)e->stream, kp, NULL);
    if (rc != CUDA_SUCCESS)
        atomic_fetch_add(&tcf_xctr.held_failed, 1);
}

static void tcf_issue_free(const tcf_window_t *w, const tcf_event_t *e)
{
    if (tcf_reuse_put(e->u.m.ptr, e->u.m.size, e->stream, w->ctx))
        return;   /* kept for the next allocation of its size on its stream (reuse.c) */
    uint64_t t0 = tcf_cfg.stats ? tcf_now_ns() : 0;
    if (tcf_drv.mem_free_async(e->u.m.ptr, (CUstream)(uintptr_t)e->stream) != CUDA_SUCCESS)
        atomic_fetch_add(&tcf_xctr.held_failed, 1);
    if (t0)
        tcf_time_free(tcf_now_ns() - t0);
}

static pthread_key_t tcf_scratch_key;
static pthread_once_t tcf_scratch_once = PTHREAD_ONCE_INIT;
static int tcf_scratch_key_ok;
static _Thread_local tcf_exec_scratch_t *tcf_scratch;

/* At thread exit. Later destructors of the same thread may still flush (a library's
 * thread-local cleanup freeing device memory): they then get a fresh scratch, which this
 * runs again for (the thread's keys are revisited while any is set). */
static void tcf_scratch_free(void *p)
{
    tcf_scratch = NULL;
    free(p);
}

static void tcf_scratch_key_make(void)
{
    tcf_scratch_key_ok = pthread_key_create(&tcf_scratch_key, tcf_scratch_free) == 0;
}

tcf_exec_scratch_t *tcf_exec_scratch(void)
{
    if (!tcf_scratch) {
        pthread_once(&tcf_scratch_once, tcf_scratch_key_make);
        if (!tcf_scratch_key_ok || !(tcf_scratch = tcf_malloc(sizeof *tcf_scratch)))
            return NULL;
        pthread_setspecific(tcf_scratch_key, tcf_scratch);  /* freed when the thread exits */
    }
    return tcf_scratch;
}

void tcf_exec_item(const tcf_window_t *w, uint32_t i, tcf_item_t *it)
{
    const tcf_event_t *e = &w->ev[i];
    if (e->kind == TCF_EV_LAUNCH && e->dec == TCF_DEC_REDUCE) {
        it->kind = TCF_ITEM_REDUCE;
        it->red = w->ops[i].red;
    } else if (e->kind == TCF_EV_LAUNCH && e->dec == TCF_DEC_OP) {  /* held, or issued
                                                                      * and kept */
        it->kind = TCF_ITEM_OP;
        it->op = w->ops[i].op;
    } else if (e->kind == TCF_EV_FREE) {
        it->kind = TCF_ITEM_FREE;
        it->ptr = e->u.m.ptr;
        it->size = 0;
    } else if (e->kind == TCF_EV_ALLOC) {
        it->kind = TCF_ITEM_ALLOC;
        it->ptr = e->u.m.ptr;
        it->size = e->u.m.size;
    } else {
        memset(it, 0, sizeof *it);
        it->kind = e->dec == TCF_DEC_AHEAD ? TCF_ITEM_AHEAD : TCF_ITEM_OPAQUE;
    }
}

void tcf_exec_flush(tcf_window_t *w, const char *reason)
{
    (void)reason;
    if (!w->nheld && !w->ndec)
        return;
    uint32_t was_held = w->nheld, nfused = 0;   /* groups run fused (or tried) */
    uint64_t t0 = tcf_cfg.stats ? tcf_now_ns() : 0;
    if (was_held)
        atomic_fetch_add(&tcf_xctr.flushes, 1);
    CUcontext cur = NULL;
    int switched = 0;
    if (w->nheld && tcf_drv.ctx_get_current && tcf_drv.ctx_get_current(&cur) == CUDA_SUCCESS &&
        (uint64_t)(uintptr_t)cur != w->ctx && w->ctx && tcf_drv.ctx_set_current)
        switched = tcf_drv.ctx_set_current((CUcontext)(uintptr_t)w->ctx) == CUDA_SUCCESS;

    uint32_t from = w->exec_from, n = w->nev - from;
    if (n > TCF_FUSER_MAX_ITEMS || w->ndec < 2)
        n = 0;  /* nothing to plan: everything goes out as issued below */
    uint64_t vain = 0;  /* a chain that ran as issued is planned only to learn: not when
                         * the same chain learned nothing before (vain.c) */
    if (n && !w->nheld) {
        vain = tcf_vain_key(w, from, n);
        if (tcf_vain_has(vain)) {
            atomic_fetch_add_explicit(&tcf_xctr.learn_skipped, 1, memory_order_relaxed);
            n = 0;
        } else {
            atomic_fetch_add_explicit(&tcf_xctr.learned, 1, memory_order_relaxed);
        }
    }
    tcf_exec_scratch_t *sc = n ? tcf_exec_scratch() : NULL;
    tcf_item_t *items = sc ? sc->items : NULL;
    uint16_t *ev_of = sc ? sc->ev_of : NULL;
    tcf_plan_t *plan = sc ? &sc->plan : NULL;
    int planned = 0;
    if (sc) {
        for (uint32_t i = 0; i < n; i++) {
            ev_of[i] = (uint16_t)(from + i);
            tcf_exec_item(w, from + i, &items[i]);
        }
        planned = tcf_fuser_plan(items, n, plan) == 0;
    }

    /* Which groups run fused: those whose kernel is ready in this context and whose
     * launches are all still held. Every group's kernel is asked for (a new one is queued)
     * and a ready one makes its first launch a start. */
    CUfunction fn[TCF_FUSER_MAX_GROUPS] = { 0 };
    int ready = 0;
    for (uint16_t g = 0; planned && g < plan->ngroups; g++) {
        const tcf_fgroup_t *G = &plan->groups[g];
        int held = 1;
        for (uint8_t j = 0; j < G->nitems; j++)
            held &= w->ev[from + G->items[j]].held;
        fn[g] = tcf_fkern_get(G, w, ev_of, (CUcontext)(uintptr_t)w->ctx, !held);
        if (fn[g]) {
            tcf_fuse_start_add(tcf_fuse_start_sig(w->ev[from + G->items[0]].u.l.k));
            ready = 1;
        }
        if (!held)
            fn[g] = NULL;
    }
    if (vain && sc && !ready)
        tcf_vain_put(vain);

    /* Frees inside a fused group's span wait for its kernel. */
    uint32_t pending[64], npending = 0;
    for (uint32_t i = 0; i < w->nev - from; i++) {
        tcf_event_t *e = &w->ev[from + i];
        if (!e->held)
            continue;
        int grp = planned && i < n && e->kind == TCF_EV_LAUNCH ? plan->item_group[i] : -1;
        if (grp >= 0 && fn[grp]) {
            const tcf_fgroup_t *G = &plan->groups[grp];
            if (i == G->last) {
                tcf_fused_args_t args = G->args;
                tcf_rows_args_t ra;
                void *kp[1] = { &args };
                uint32_t grid[3] = { tcf_codegen_grid(&G->g, G->n), 1, 1 },
                         block[3] = { TCF_FUSED_BLOCK, 1, 1 };
                CUresult rc = CUDA_ERROR_INVALID_VALUE;
                if (G->g.red) {   /* a row group: the reduction's launch shape, its argument */
                    kp[0] = &ra;
                    if (tcf_fuser_rows_args(G, items, n, &G->args, &ra) == 0)
                        tcf_reduce_launch_dims(&G->g.rs, ra.r.num_outputs, grid, block);
                    else
                        grid[0] = 0;
                }
                if (tcf_fault(TCF_FAULT_FUSED_LAUNCH))
                    rc = CUDA_ERROR_LAUNCH_FAILED;
                else if (grid[0])
                    rc = tcf_drv.launch_kernel(fn[grp], grid[0], grid[1], grid[2], block[0],
                                               block[1], block[2], 0,
                                               (CUstream)(uintptr_t)e->stream, kp, NULL);
                nfused++;   /* tried: a failed launch is not the hold's fault */
                if (rc == CUDA_SUCCESS) {
                    for (uint8_t j = 0; j < G->nitems; j++)
                        atomic_fetch_add_explicit(&w->ev[from + G->items[j]].u.l.k->fused, 1,
                                                  memory_order_relaxed);
                    atomic_fetch_add(&tcf_xctr.groups_fused, 1);
                    if (G->g.ndim)
                        atomic_fetch_add(&tcf_xctr.groups_nd, 1);
                    if (G->g.red)
                        atomic_fetch_add(&tcf_xctr.groups_rows, 1);
                    if (G->g.red && tcf_red_softmax(G->g.rs.op))
                        atomic_fetch_add(&tcf_xctr.groups_softmax, 1);
                    if (G->g.red && tcf_red_norm(G->g.rs.op))
                        atomic_fetch_add(&tcf_xctr.groups_norm, 1);
                    atomic_fetch_add(&tcf_xctr.launches_removed, G->nitems - 1u);
                    atomic_fetch_add(&tcf_xctr.stores_dropped, G->stores_dropped);
                    atomic_fetch_add(&tcf_xctr.bytes_avoided, G->bytes_avoided);
                } else {
                    /* The generated kernel would not launch: eager's launches instead. */
                    atomic_fetch_add(&tcf_xctr.fused_failed, 1);
                    for (uint8_t j = 0; j < G->nitems; j++)
                        tcf_issue_original(w, &w->ev[from + G->items[j]]);
                }
                for (uint32_t p = 0; p < npending; p++)
                    tcf_issue_free(w, &w->ev[pending[p]]);
                npending = 0;
            }
            e->held = 0;
            continue;
        }
        if (e->kind == TCF_EV_LAUNCH) {
            tcf_issue_original(w, e);
        } else if (e->kind == TCF_EV_FREE) {
            int inside = 0;
            for (uint16_t g = 0; planned && g < plan->ngroups && i < n; g++)
                if (fn[g] && plan->groups[g].first < i && plan->groups[g].last > i)
                    inside = 1;
            if (inside && npending < 64)
                pending[npending++] = from + i;
            else
                tcf_issue_free(w, e);
        }
        e->held = 0;
    }
    for (uint32_t p = 0; p < npending; p++)
        tcf_issue_free(w, &w->ev[pending[p]]);
    if (was_held) {  /* what holding bought: the hold policy learns it (sites.c) */
        if (!nfused)
            atomic_fetch_add_explicit(&tcf_xctr.holds_vain, 1, memory_order_relaxed);
        if (w->hold_site)
            tcf_site_done(w->hold_site, nfused > 0);
        w->hold_site = 0;
    }
    w->nheld = 0;
    w->nfree = 0;
    w->ndec = 0;
    w->exec_from = w->nev;
    if (switched)
        tcf_drv.ctx_set_current(cur);
    if (t0 && was_held)
        atomic_fetch_add_explicit(&tcf_xctr.flush_ns, tcf_now_ns() - t0, memory_order_relaxed);
}

