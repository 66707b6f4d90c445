/* Fuse mode: hold PyTorch elementwise launches in their window and issue the window's
 * plan when something may observe it, new work must follow it, the window is full or it
 * idles.
 *
 * Holding costs overlap: while a window is held the GPU waits for the host. So a window
 * is held only from a launch known to start a group whose generated kernel is ready
 * (DESIGN.md: hold only what pays), or, with TCFUSE_HOLD_ALL, from any decodable launch.
 * Other decoded launches go to the driver at once and are kept in the window with their
 * op; when their chain ends the window is planned all the same, which queues the compiles
 * of its groups and, once a group's kernel is ready, makes its first launch a start. A
 * program's first iteration therefore runs as eager runs it, and later ones fused.
 *
 * What is held: launches through cuLaunchKernel (not _ptsz, not the `extra` form) that
 * decode (capture/decode.c), and stream-ordered frees behind them (freeing at once could
 * let the pool hand a block still read by a held launch to someone else). Everything else
 * issues held work first, on every stream: a launch on the legacy default stream orders
 * against all blocking streams, and holding on two streams at once would need the same
 * care; this is the conservative form of DESIGN.md's rule.
 * A held launch returns CUDA_SUCCESS at once: PyTorch's elementwise launches are valid
 * by construction (their decoding checked the layout); a failure when it is issued later
 * is counted (held-failed), like any asynchronous launch error.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture/decode.h"
#include "capture/fuse.h"

static int tcf_holding;           /* fuse mode with fusion on */
static atomic_int tcf_stopping;

static atomic_ulong tcf_refused[TCF_DECODE_NSTATUS];

/* Issues held work of every window but `except` (NULL: all). Windows are locked one at a
 * time, never while holding another's lock. */
static void tcf_flush_held(const tcf_window_t *except, const char *reason)
{
    unsigned n = tcf_window_count();
    for (unsigned i = 0; i < n; i++) {
        tcf_window_t *w = tcf_window_at(i);
        if (w == except || (!__atomic_load_n(&w->nheld, __ATOMIC_RELAXED) &&
                            !__atomic_load_n(&w->ndec, __ATOMIC_RELAXED)))
            continue;
        pthread_mutex_lock(&w->lock);
        if (w->nheld || w->ndec)
            tcf_fuse_execute(w, reason);
        pthread_mutex_unlock(&w->lock);
    }
}

void tcf_capture_fuse_order(CUstream stream)
{
    (void)stream;
    if (tcf_holding)
        tcf_flush_held(NULL, "other-work");
}

/* A kernel's first launch in fuse mode: decodes what its name and layout say, once, and
 * says whether its launches may be held. A thread that finds another one decoding it
 * issues its launch as is. */
static int tcf_fuse_decode_kernel(tcf_kernel_t *k, void **extra, void **params)
{
    int expect = TCF_FUSE_UNKNOWN;
    if (extra || !params)  /* this launch's form, not the kernel's: decide next time */
        return TCF_FUSE_UNKNOWN;
    if (!atomic_compare_exchange_strong(&k->fuse_state, &expect, TCF_FUSE_DECODING))
        return expect;
    tcf_decode_status_t ds = TCF_DECODE_BAD_LAYOUT;
    if (k->param_known && k->param_bytes <= sizeof ((tcf_orig_t *)0)->params && k->nparams <= 8) {
        tcf_decode_launch_t dl = { .name = k->name, .nparams = k->nparams, .off = k->off,
                                   .size = k->size };
        ds = tcf_decode_kernel(&dl, &k->dk);
    }
    if (ds != TCF_DECODE_OK)
        atomic_fetch_add(&tcf_refused[ds], 1);
    int fs = ds == TCF_DECODE_OK ? TCF_FUSE_DECODABLE : TCF_FUSE_NEVER;
    atomic_store_explicit(&k->fuse_state, fs, memory_order_release);
    return fs;
}

/* Starts: the kernel of the first launch of each group whose generated kernel is ready
 * (tcf_fuse_start_sig). A set of nonzero words, open addressing, read
 * without a lock on every decoded launch; entries are never removed. Full (or past a
 * short probe): no new starts, so those chains keep running as issued. */
#define TCF_STARTS 4096
#define TCF_STARTS_PROBE 16
static atomic_ullong tcf_starts[TCF_STARTS];

static inline unsigned tcf_start_slot(uint64_t sig)
{
    return (unsigned)((sig * 0x9E3779B97F4A7C15ull) >> 52) & (TCF_STARTS - 1);
}

static int tcf_starts_has(uint64_t sig)
{
    unsigned i = tcf_start_slot(sig);
    for (int p = 0; p < TCF_STARTS_PROBE; p++, i = (i + 1) & (TCF_STARTS - 1)) {
        uint64_t v = atomic_load_explicit(&tcf_starts[i], memory_order_relaxed);
        if (v == sig)
            return 1;
        if (!v)
            return 0;
    }
    return 0;
}

void tcf_fuse_start_add(uint64_t sig)
{
    unsigned i = tcf_start_slot(sig);
    for (int p = 0; sig && p < TCF_STARTS_PROBE; p++, i = (i + 1) & (TCF_STARTS - 1)) {
        /* Read first: every flush that fuses a group adds its start again, and a compare-
         * and-swap would take the cache line from every thread reading the set. */
        unsigned long long v = atomic_load_explicit(&tcf_starts[i], memory_order_relaxed);
        if (v == sig || (!v && (atomic_compare_exchange_strong(&tcf_starts[i], &v, sig) ||
                                v == sig)))
            return;
    }
}

/* Appends a decoded launch to w (locked) with its op and parameter bytes; NULL when the
 * window has no room. */
static tcf_event_t *tcf_fuse_append(tcf_window_t *w, tcf_kernel_t *k, const uint8_t *buf,
                                    const tcf_op_t *op, int held, CUresult rc, CUstream stream,
                                    const uint32_t grid[3], const uint32_t block[3],
                                    unsigned smem)
{
    uint32_t bytes = (k->param_bytes + 7u) & ~7u;
    tcf_event_t *e = tcf_window_append(w, tcf_now_ns(), bytes);
    if (!e)
        return NULL;
    if (!w->ops) {  /* no room for the op: give the slot back */
        w->nev--;
        return NULL;
    }
    uint32_t idx = (uint32_t)(e - w->ev);
    tcf_event_launch(e, TCF_VIA_LAUNCH, held, rc, stream, k, grid[0], grid[1], grid[2],
                     block[0], block[1], block[2], smem, w->arena_len);
    e->dec = 1;
    e->u.l.pbytes = k->param_bytes;
    memcpy(w->arena + w->arena_len, buf, k->param_bytes);
    w->arena_len += bytes;
    w->ops[idx] = *op;
    w->nlaunch++;
    w->ndec++;
    atomic_fetch_add_explicit(&tcf_ctr.launches, 1, memory_order_relaxed);
    return e;
}

int tcf_capture_fuse_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned smem, CUstream stream,
                            void **params, void **extra, CUresult *result)
{
    if (!tcf_holding)
        return 0;
    if (tcf_fkern_absent()) {  /* no NVRTC: nothing can be fused, all runs as issued */
        atomic_fetch_add_explicit(&tcf_ctr.no_nvrtc, 1, memory_order_relaxed);
        tcf_flush_held(NULL, "other-work");
        return 0;
    }
    tcf_kernel_t *k = tcf_kernel_get(f);
    int fs = atomic_load_explicit(&k->fuse_state, memory_order_acquire);
    if (fs == TCF_FUSE_UNKNOWN) {
        fs = tcf_fuse_decode_kernel(k, extra, params);
    }
    if (fs != TCF_FUSE_DECODABLE || extra || !params) {
        tcf_flush_held(NULL, "other-work");
        return 0;
    }
    uint8_t buf[512];
    memset(buf, 0, k->param_bytes);
    for (uint32_t i = 0; i < k->nparams; i++)
        if (params[i])
            memcpy(buf + k->off[i], params[i], k->size[i]);
    const uint32_t grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz };
    tcf_op_t op;
    tcf_decode_status_t ds = tcf_decode_apply(&k->dk, buf, k->param_bytes, grid, block, &op);
    if (ds != TCF_DECODE_OK) {
        atomic_fetch_add(&tcf_refused[ds], 1);
        tcf_flush_held(NULL, "other-work");
        return 0;
    }
    tcf_window_t *w = tcf_window_for(stream, 0);
    if (!w) {
        tcf_flush_held(NULL, "other-work");
        return 0;
    }
    int start = tcf_cfg.hold_all || tcf_starts_has(tcf_fuse_start_sig(k));
    tcf_flush_held(w, "other-stream");

    int taken = 0;
    pthread_mutex_lock(&w->lock);
    if (start || w->nheld) {  /* held: issued with its window's plan */
        if (tcf_fuse_append(w, k, buf, &op, 1, CUDA_SUCCESS, stream, grid, block, smem)) {
            if (!w->nheld)
                atomic_fetch_add_explicit(&tcf_ctr.holds, 1, memory_order_relaxed);
            w->nheld++;
            atomic_fetch_add_explicit(&tcf_ctr.held, 1, memory_order_relaxed);
            *result = CUDA_SUCCESS;
            taken = 1;
            /* Exit handlers run in reverse order of registration: registered at the first
             * held launch, after cudart's and PyTorch's, this one stops fuse mode before
             * they tear the driver down. */
            static atomic_int registered;
            if (!atomic_exchange(&registered, 1))
                atexit(tcf_fuse_stop);
        }
    } else {  /* issued now, under the window's lock (nothing may slip in before it) */
        CUresult rc = tcf_drv.launch_kernel(f, gx, gy, gz, bx, by, bz, smem, stream, params,
                                            NULL);
        if (rc != CUDA_SUCCESS)
            atomic_fetch_add_explicit(&tcf_ctr.launch_errors, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&tcf_ctr.passed, 1, memory_order_relaxed);
        if (!tcf_fuse_append(w, k, buf, &op, 0, rc, stream, grid, block, smem)) {
            atomic_fetch_add_explicit(&tcf_ctr.launches, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&tcf_ctr.oom, 1, memory_order_relaxed);
        }
        *result = rc;
        taken = 1;
    }
    if (taken && w->nlaunch >= (uint32_t)tcf_cfg.window_max)
        tcf_window_close_locked(w, "size-cap", NULL, 0);
    pthread_mutex_unlock(&w->lock);
    if (!taken)
        tcf_flush_held(NULL, "other-work");
    return taken;
}

int tcf_capture_fuse_free(CUdeviceptr ptr, CUstream stream)
{
    if (!tcf_holding)
        return 0;
    tcf_window_t *w = tcf_window_for(stream, 0);
    if (w && !__atomic_load_n(&w->nheld, __ATOMIC_RELAXED)) {
        /* Nothing held here: the free goes out now and is recorded in the window, whose
         * chain goes on (frees sit inside groups). Other streams' held work goes first. */
        tcf_flush_held(w, "other-stream");
        return 0;
    }
    int taken = 0;
    if (w) {
        pthread_mutex_lock(&w->lock);
        if (w->nheld) {
            tcf_event_t *e = tcf_window_append(w, tcf_now_ns(), 0);
            if (e) {
                memset(e, 0, sizeof *e);
                e->t = w->last_t;
                e->kind = TCF_EV_FREE;
                e->held = 1;
                e->stream = (uint64_t)(uintptr_t)stream;
                e->u.m.call = "cuMemFreeAsync";
                e->u.m.ptr = ptr;
                w->nheld++;
                atomic_fetch_add(&tcf_ctr.frees, 1);
                atomic_fetch_add(&tcf_ctr.frees_stream, 1);
                atomic_fetch_add(&tcf_ctr.held_frees, 1);
                taken = 1;
            }
        }
        pthread_mutex_unlock(&w->lock);
    }
    if (!taken)
        tcf_flush_held(NULL, "other-work");
    return taken;
}

/* --- issuing a window's held work ---------------------------------------------------- */
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
        atomic_fetch_add(&tcf_ctr.held_failed, 1);
}

static void tcf_issue_free(const tcf_event_t *e)
{
    if (tcf_drv.mem_free_async(e->u.m.ptr, (CUstream)(uintptr_t)e->stream) != CUDA_SUCCESS)
        atomic_fetch_add(&tcf_ctr.held_failed, 1);
}

/* What planning a flush needs, per thread that flushes, made on its first flush: a plan
 * is large (tens of KiB) and flushes are frequent, so nothing is allocated per flush. */
typedef struct {
    tcf_item_t items[TCF_FUSER_MAX_ITEMS];
    uint16_t   ev_of[TCF_FUSER_MAX_ITEMS];
    tcf_plan_t plan;
} tcf_exec_scratch_t;

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

/* NULL when out of memory (the flush then issues everything as held). */
static tcf_exec_scratch_t *tcf_exec_scratch(void)
{
    if (!tcf_scratch) {
        pthread_once(&tcf_scratch_once, tcf_scratch_key_make);
        if (!tcf_scratch_key_ok || !(tcf_scratch = malloc(sizeof *tcf_scratch)))
            return NULL;
        pthread_setspecific(tcf_scratch_key, tcf_scratch);  /* freed when the thread exits */
    }
    return tcf_scratch;
}

void tcf_fuse_execute(tcf_window_t *w, const char *reason)
{
    (void)reason;
    if (!w->nheld && !w->ndec)
        return;
    if (w->nheld)
        atomic_fetch_add(&tcf_ctr.flushes, 1);
    else
        atomic_fetch_add(&tcf_ctr.learned, 1);
    CUcontext cur = NULL;
    int switched = 0;
    if (w->nheld && tcf_drv.ctx_get_current && tcf_drv.ctx_get_current(&cur) == CUDA_SUCCESS &&
        (uint64_t)(uintptr_t)cur != w->ctx && w->ctx && tcf_drv.ctx_set_current)
        switched = tcf_drv.ctx_set_current((CUcontext)(uintptr_t)w->ctx) == CUDA_SUCCESS;

    uint32_t from = w->exec_from, n = w->nev - from;
    if (n > TCF_FUSER_MAX_ITEMS || w->ndec < 2)
        n = 0;  /* nothing to plan: everything goes out as issued below */
    tcf_exec_scratch_t *sc = n ? tcf_exec_scratch() : NULL;
    tcf_item_t *items = sc ? sc->items : NULL;
    uint16_t *ev_of = sc ? sc->ev_of : NULL;
    tcf_plan_t *plan = sc ? &sc->plan : NULL;
    int planned = 0;
    if (sc) {
        for (uint32_t i = 0; i < n; i++) {
            const tcf_event_t *e = &w->ev[from + i];
            ev_of[i] = (uint16_t)(from + i);
            if (e->kind == TCF_EV_LAUNCH && e->dec) {  /* held, or issued and kept to learn */
                items[i].kind = TCF_ITEM_OP;
                items[i].op = w->ops[from + i];
            } else if (e->kind == TCF_EV_FREE) {
                items[i].kind = TCF_ITEM_FREE;
                items[i].ptr = e->u.m.ptr;
                items[i].size = 0;
            } else if (e->kind == TCF_EV_ALLOC) {
                items[i].kind = TCF_ITEM_ALLOC;
                items[i].ptr = e->u.m.ptr;
                items[i].size = e->u.m.size;
            } else {
                memset(&items[i], 0, sizeof items[i]);
                items[i].kind = TCF_ITEM_OPAQUE;
            }
        }
        planned = tcf_fuser_plan(items, n, plan) == 0;
    }

    /* Which groups run fused: those whose kernel is ready in this context and whose
     * launches are all still held. Every group's kernel is asked for (a new one is queued)
     * and a ready one makes its first launch a start. */
    CUfunction fn[TCF_FUSER_MAX_GROUPS] = { 0 };
    for (uint16_t g = 0; planned && g < plan->ngroups; g++) {
        const tcf_fgroup_t *G = &plan->groups[g];
        int held = 1;
        for (uint8_t j = 0; j < G->nitems; j++)
            held &= w->ev[from + G->items[j]].held;
        fn[g] = tcf_fkern_get(G, w, ev_of, (CUcontext)(uintptr_t)w->ctx, !held);
        if (fn[g])
            tcf_fuse_start_add(tcf_fuse_start_sig(w->ev[from + G->items[0]].u.l.k));
        if (!held)
            fn[g] = NULL;
    }

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
                void *kp[1] = { &args };
                CUresult rc = tcf_drv.launch_kernel(fn[grp], tcf_codegen_grid(&G->g, G->n), 1, 1,
                                                    TCF_FUSED_BLOCK, 1, 1, 0,
                                                    (CUstream)(uintptr_t)e->stream, kp, NULL);
                if (rc == CUDA_SUCCESS) {
                    atomic_fetch_add(&tcf_ctr.groups_fused, 1);
                    atomic_fetch_add(&tcf_ctr.launches_removed, G->nitems - 1u);
                    atomic_fetch_add(&tcf_ctr.stores_dropped, G->stores_dropped);
                    atomic_fetch_add(&tcf_ctr.bytes_avoided, G->bytes_avoided);
                } else {
                    /* The generated kernel would not launch: eager's launches instead. */
                    atomic_fetch_add(&tcf_ctr.fused_failed, 1);
                    for (uint8_t j = 0; j < G->nitems; j++)
                        tcf_issue_original(w, &w->ev[from + G->items[j]]);
                }
                for (uint32_t p = 0; p < npending; p++)
                    tcf_issue_free(&w->ev[pending[p]]);
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
                tcf_issue_free(e);
        }
        e->held = 0;
    }
    for (uint32_t p = 0; p < npending; p++)
        tcf_issue_free(&w->ev[pending[p]]);
    w->nheld = 0;
    w->ndec = 0;
    w->exec_from = w->nev;
    if (switched)
        tcf_drv.ctx_set_current(cur);
}

void tcf_fuse_init(void)
{
    if (!tcf_cfg.fusion || !tcf_drv.launch_kernel || !tcf_drv.mem_free_async) {
        tcf_log(TCF_LOG_INFO, "fuse mode: %s; nothing is held",
                tcf_cfg.fusion ? "the driver lacks an entry point" : "TCFUSE_FUSION=0");
        return;
    }
    if (tcf_fkern_start() != 0) {
        tcf_log(TCF_LOG_WARN, "fuse mode: no worker thread could be started; nothing is held");
        return;
    }
    tcf_holding = 1;
}

/* At exit. The order of exit handlers is not ours to choose, and cudart and PyTorch may
 * already have torn the context down: no thread of ours may touch the driver from here on.
 * Held work is dropped, not issued: nothing can observe it any more. */
void tcf_fuse_stop(void)
{
    atomic_store(&tcf_stopping, 1);
    tcf_holding = 0;
    tcf_fkern_stop();
    unsigned n = tcf_window_count();
    for (unsigned i = 0; i < n; i++) {
        tcf_window_t *w = tcf_window_at(i);
        pthread_mutex_lock(&w->lock);
        if (w->nheld) {
            atomic_fetch_add(&tcf_ctr.dropped_at_exit, w->nheld);
            for (uint32_t j = w->exec_from; j < w->nev; j++)
                w->ev[j].held = 0;
            w->nheld = 0;
        }
        w->ndec = 0;  /* nothing is planned from here on */
        w->exec_from = w->nev;
        pthread_mutex_unlock(&w->lock);
    }
}

void tcf_fuse_refusals(char *line, size_t cap);
void tcf_fuse_refusals(char *line, size_t cap)
{
    size_t len = 0;
    line[0] = '\0';
    for (int s = 1; s < TCF_DECODE_NSTATUS && len < cap; s++) {
        unsigned long c = atomic_load(&tcf_refused[s]);
        if (c)
            len += (size_t)snprintf(line + len, cap - len, "%s%s %lu", len ? ", " : "",
                                    tcf_decode_reason((tcf_decode_status_t)s), c);
    }
    unsigned long long nn = atomic_load(&tcf_ctr.no_nvrtc);
    if (nn && len < cap)
        snprintf(line + len, cap - len, "%sno NVRTC %llu", len ? ", " : "", nn);
}
