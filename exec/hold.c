/* Fuse mode's launch path: hold PyTorch elementwise launches in their window and issue the window's
 * plan when something may observe it, new work must follow it or the window is full (fuse
 * mode never closes a window on idle: interpose/init.c).
 *
 * Holding costs overlap: while a window is held the GPU waits for the host. So a window
 * is held only from a launch known to start a group whose generated kernel is ready
 * (DESIGN.md: hold only what pays), and not from a place where windows held before fused
 * nothing (sites.c, TCFUSE_HOLD_ADAPT); or, with TCFUSE_HOLD_ALL, from any decodable
 * launch.
 * Other decoded launches go to the driver at once and are kept in the window with their
 * op; when their chain ends the window is planned all the same, which queues the compiles
 * of its groups and, once a group's kernel is ready, makes its first launch a start. A
 * program's first iteration therefore runs as eager runs it, and later ones fused.
 *
 * What is held: launches through cuLaunchKernel (not _ptsz, not the `extra` form) that
 * decode (recognize/decode.c), and stream-ordered frees behind them (freeing at once could
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

#include "exec/internal.h"

static int tcf_holding;           /* fuse mode with fusion on */
static atomic_int tcf_stopping;

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
            tcf_exec_flush(w, reason);
        pthread_mutex_unlock(&w->lock);
    }
}

int tcf_exec_holding(void)
{
    return tcf_holding;
}

void tcf_exec_flush_others(const tcf_window_t *w)
{
    tcf_flush_held(w, "other-stream");
}

void tcf_exec_order(CUstream stream)
{
    (void)stream;
    if (tcf_holding)
        tcf_flush_held(NULL, "other-work");
}

int tcf_fuse_state(tcf_kernel_t *k)
{
    int fs = atomic_load_explicit(&k->fuse_state, memory_order_acquire);
    if (fs == TCF_FUSE_UNKNOWN) {
        void *params = k;   /* only its presence counts: the params form */
        fs = tcf_fuse_decode_kernel(k, NULL, &params);
    }
    return fs;
}

/* A kernel's first launch in fuse mode: decodes what its name and layout say, once, and
 * says whether its launches may be held. A thread that finds another one decoding it
 * issues its launch as is. */
int tcf_fuse_decode_kernel(tcf_kernel_t *k, void **extra, void **params)
{
    int expect = TCF_FUSE_UNKNOWN;
    if (extra || !params)  /* this launch's form, not the kernel's: decide next time */
        return TCF_FUSE_UNKNOWN;
    if (!atomic_compare_exchange_strong(&k->fuse_state, &expect, TCF_FUSE_DECODING))
        return expect;
    tcf_decode_status_t ds = TCF_DECODE_BAD_LAYOUT;   /* the driver gave no layout */
    if (k->param_known) {
        /* The name first, so that a GEMM or an attention kernel with a large parameter
         * block is refused for what it is, not for its size. */
        tcf_decode_launch_t dl = { .name = k->name, .nparams = k->nparams, .off = k->off,
                                   .size = k->size };
        ds = tcf_decode_kernel(&dl, &k->dk);
        /* a row reduction: what its name and layout say (TCFUSE_ROWS) */
        if (ds == TCF_DECODE_REDUCTION && tcf_cfg.rows) {
            ds = tcf_decode_reduce_kernel(&dl, &k->drk);
            k->is_reduce = ds == TCF_DECODE_OK;
        }
        if (ds == TCF_DECODE_OK && (k->param_bytes > TCF_PARAMS_MAX || k->nparams > 8))
            ds = TCF_DECODE_BAD_LAYOUT;   /* more than a job keeps of an original */
    }
    if (ds != TCF_DECODE_OK)
        atomic_fetch_add(&tcf_xctr.refused[ds], 1);
    k->refusal = (uint8_t)ds;
    int fs = ds == TCF_DECODE_OK ? TCF_FUSE_DECODABLE : TCF_FUSE_NEVER;
    atomic_store_explicit(&k->fuse_state, fs, memory_order_release);
    return fs;
}

/* Appends a decoded launch to w (locked) with its op and parameter bytes; NULL when the
 * window has no room. */
static tcf_event_t *tcf_fuse_append(tcf_window_t *w, tcf_kernel_t *k, const uint8_t *buf,
                                    const tcf_wop_t *op, int held, CUresult rc, CUstream stream,
                                    const uint32_t grid[3], const uint32_t block[3],
                                    unsigned smem)
{
    uint32_t bytes = (k->param_bytes + 7u) & ~7u;
    tcf_event_t *e = tcf_window_append(w, tcf_event_now(), bytes);
    if (!e)
        return NULL;
    if (!w->ops) {  /* no room for the op: give the slot back */
        w->nev--;
        return NULL;
    }
    uint32_t idx = (uint32_t)(e - w->ev);
    tcf_event_launch(e, TCF_VIA_LAUNCH, held, rc, stream, k, grid[0], grid[1], grid[2],
                     block[0], block[1], block[2], smem, w->arena_len);
    e->dec = k->is_reduce ? TCF_DEC_REDUCE : TCF_DEC_OP;
    e->u.l.pbytes = k->param_bytes;
    memcpy(w->arena + w->arena_len, buf, k->param_bytes);
    w->arena_len += bytes;
    w->ops[idx] = *op;
    w->nlaunch++;
    w->ndec++;
    tcf_count(&tcf_ctr.launches);   /* per thread: capture/count.h */
    tcf_count(&k->decoded);         /* counts as a launch */
    return e;
}

/* A launch fuse mode does not act on, once held work went out before it: 2 (issue it and
 * count it as kernel k, recording nothing) where capture allows, else 0 (issue and record
 * it). */
static int tcf_exec_pass(CUstream stream, tcf_kernel_t *k, tcf_kernel_t **kout)
{
    tcf_window_t *w = tcf_window_for(stream, 0);
    *kout = k;
    return w && tcf_window_pass_launch(w, k) ? 2 : 0;
}

int tcf_exec_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned smem, CUstream stream,
                            void **params, void **extra, CUresult *result,
                            tcf_kernel_t **kout)
{
    if (!tcf_holding)
        return 0;
    tcf_capture_exit_hook();
    tcf_fkern_begin();
    int absent = tcf_fkern_absent();
    if (absent) {  /* no NVRTC or no worker: nothing can be fused, all runs as issued */
        tcf_count(absent == TCF_ABSENT_NVRTC ? &tcf_xctr.no_nvrtc : &tcf_xctr.no_worker);
        tcf_flush_held(NULL, "other-work");
        return tcf_exec_pass(stream, tcf_kernel_get(f), kout);
    }
    tcf_kernel_t *k = tcf_kernel_get(f);
    int fs = atomic_load_explicit(&k->fuse_state, memory_order_acquire);
    if (fs == TCF_FUSE_UNKNOWN) {
        fs = tcf_fuse_decode_kernel(k, extra, params);
    }
    if (fs != TCF_FUSE_DECODABLE || extra || !params) {
        if (k->direct_gemm) {
            const tcf_launch_t l = { .via = TCF_VIA_LAUNCH, .stream = stream, .k = k,
                                     .grid = { gx, gy, gz }, .block = { bx, by, bz },
                                     .smem = smem, .params = params, .extra = extra };
            if (tcf_exec_ahead_launch(k, &l, NULL, result))
                return 1;   /* issued ahead of the decoded work, and recorded (ahead.c) */
        }
        tcf_flush_held(NULL, "other-work");
        return tcf_exec_pass(stream, k, kout);
    }
    uint8_t buf[TCF_PARAMS_MAX];
    memset(buf, 0, k->param_bytes);
    for (uint32_t i = 0; i < k->nparams; i++)
        if (params[i])
            memcpy(buf + k->off[i], params[i], k->size[i]);
    const uint32_t grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz };
    tcf_wop_t op;
    tcf_decode_status_t ds = k->is_reduce
        ? tcf_decode_reduce_apply(&k->drk, buf, k->param_bytes, grid, block, &op.red)
        : tcf_decode_apply(&k->dk, buf, k->param_bytes, grid, block, &op.op);
    if (ds != TCF_DECODE_OK) {
        atomic_fetch_add(&tcf_xctr.refused[ds], 1);
        k->refusal = (uint8_t)ds;   /* this launch's reason: the summary's by family */
        tcf_flush_held(NULL, "other-work");
        return tcf_exec_pass(stream, k, kout);
    }
    tcf_window_t *w = tcf_window_for(stream, 0);
    if (!w) {
        tcf_flush_held(NULL, "other-work");
        return 0;
    }
    int start = tcf_cfg.hold_all || tcf_fuse_start_has(tcf_fuse_start_sig(k));
    tcf_flush_held(w, "other-stream");

    int taken = 0;
    pthread_mutex_lock(&w->lock);
    uint64_t site = 0;
    if (start && !w->nheld && !tcf_cfg.hold_all && tcf_cfg.hold_adapt) {
        /* A hold would begin: not where held windows fused nothing (sites.c). */
        site = tcf_site_key(w, k);
        switch (tcf_site_hold(site)) {
        case TCF_SITE_PASS:
            start = 0;
            tcf_count(&tcf_xctr.site_passed);
            break;
        case TCF_SITE_PROBE:
            tcf_count(&tcf_xctr.site_probes);
            break;
        case TCF_SITE_PROBE_TABLE:
            tcf_count(&tcf_xctr.site_probes_table);
            break;
        case TCF_SITE_HOLD:
            break;
        }
    }
    if (start || w->nheld) {  /* held: issued with its window's plan */
        if (tcf_fuse_append(w, k, buf, &op, 1, CUDA_SUCCESS, stream, grid, block, smem)) {
            if (!w->nheld) {
                tcf_count(&tcf_xctr.holds);
                w->hold_site = site;
            }
            w->nheld++;
            tcf_count(&tcf_xctr.held);
            *result = CUDA_SUCCESS;
            taken = 1;
            /* Exit handlers run in reverse order of registration: registered at the first
             * held launch, after cudart's and PyTorch's, this one stops fuse mode before
             * they tear the driver down. */
            static atomic_int registered;
            if (!atomic_exchange(&registered, 1))
                atexit(tcf_exec_stop);
        }
    } else {  /* issued now, under the window's lock (nothing may slip in before it) */
        CUresult rc = tcf_drv.launch_kernel(f, gx, gy, gz, bx, by, bz, smem, stream, params,
                                            NULL);
        if (rc != CUDA_SUCCESS)
            atomic_fetch_add_explicit(&tcf_ctr.launch_errors, 1, memory_order_relaxed);
        tcf_count(&tcf_xctr.passed);
        if (!tcf_fuse_append(w, k, buf, &op, 0, rc, stream, grid, block, smem)) {
            tcf_count(&tcf_ctr.launches);
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

int tcf_exec_free(CUdeviceptr ptr, CUstream stream)
{
    if (!tcf_holding)
        return 0;
    uint64_t size = tcf_blocks_take(ptr);
    tcf_window_t *w = tcf_window_for(stream, 0);
    if (w && __atomic_load_n(&w->ndec, __ATOMIC_RELAXED) && tcf_exec_ahead_keeping()) {
        /* The block a learned kernel just read, kept from hand-over (ahead.c): held until
         * the flush, held work or not. */
        int kept = 0;
        pthread_mutex_lock(&w->lock);
        if (w->ndec && tcf_exec_ahead_keeps(w, ptr, size) &&
            tcf_window_hold_free(w, ptr, size, stream, TCF_DEC_KEEP)) {   /* never handed */
            atomic_fetch_add(&tcf_xctr.held_frees, 1);
            atomic_fetch_add(&tcf_xctr.frees_kept_back, 1);
            kept = 1;
        }
        pthread_mutex_unlock(&w->lock);
        if (kept)
            return TCF_FREE_HELD;
    }
    if (w && !__atomic_load_n(&w->nheld, __ATOMIC_RELAXED)) {
        /* Nothing held here: the free goes out now (or is kept for reuse) and is recorded
         * in the window, whose chain goes on (frees sit inside groups). Other streams'
         * held work goes first. */
        tcf_flush_held(w, "other-stream");
        return tcf_reuse_put(ptr, size, (uint64_t)(uintptr_t)stream, w->ctx) ? TCF_FREE_KEPT
                                                                      : TCF_FREE_NOW;
    }
    int taken = 0;
    if (w) {
        pthread_mutex_lock(&w->lock);
        if (w->nheld) {
            if (tcf_window_hold_free(w, ptr, size, stream, 0)) {
                atomic_fetch_add(&tcf_xctr.held_frees, 1);
                taken = 1;
            }
        }
        pthread_mutex_unlock(&w->lock);
    }
    if (!taken) {
        tcf_flush_held(NULL, "other-work");
        return tcf_reuse_put(ptr, size, (uint64_t)(uintptr_t)stream, w ? w->ctx : 0)
                   ? TCF_FREE_KEPT : TCF_FREE_NOW;
    }
    return TCF_FREE_HELD;
}

int tcf_exec_memory_back(const char *why)
{
    unsigned kept = tcf_reuse_release(why);
    return tcf_reserve_trim() || kept;
}

void tcf_exec_boundary(const char *call)
{
    tcf_reuse_boundary(call);
    tcf_reserve_sample(call);
}

/* The scan for a held free of the asked size looks this many events back at most: a
 * window's frees of one size come in order, and the most recent is what the pool itself
 * would have handed out first. */
#define TCF_HANDOVER_SCAN 512

int tcf_exec_alloc(size_t size, CUstream stream, CUdeviceptr *ptr)
{
    if (__builtin_expect(!atomic_load_explicit(&tcf_reserve_started, memory_order_relaxed), 0))
        tcf_reserve_first(stream);
    if (!tcf_holding || !size)
        return 0;
    tcf_window_t *w = tcf_window_for(stream, 0);
    CUdeviceptr got = 0;
    if (w && __atomic_load_n(&w->nfree, __ATOMIC_RELAXED)) {
        pthread_mutex_lock(&w->lock);
        uint32_t stop = w->nev - w->exec_from > TCF_HANDOVER_SCAN
                        ? w->nev - TCF_HANDOVER_SCAN : w->exec_from;
        for (uint32_t i = w->nev; w->nfree && i-- > stop;) {
            tcf_event_t *e = &w->ev[i];
            if (e->kind == TCF_EV_FREE && e->held && e->u.m.size == size &&
                e->dec != TCF_DEC_KEEP) {
                e->held = 0;   /* stays a free for the planner; the flush no longer issues it */
                w->nheld--;
                w->nfree--;
                got = e->u.m.ptr;
                break;
            }
        }
        pthread_mutex_unlock(&w->lock);
        if (got)
            atomic_fetch_add_explicit(&tcf_xctr.frees_handed, 1, memory_order_relaxed);
    }
    if (!got && !(got = tcf_reuse_get(size, (uint64_t)(uintptr_t)stream, w ? w->ctx : 0)))
        return 0;
    tcf_blocks_put(got, size);
    *ptr = got;
    return 1;
}

void tcf_exec_alloced(CUdeviceptr ptr, size_t size)
{
    if (tcf_holding)
        tcf_blocks_put(ptr, size);
}

void tcf_exec_forget(CUdeviceptr ptr)
{
    if (tcf_holding)
        tcf_blocks_take(ptr);
}

void tcf_exec_init(void)
{
    if (!tcf_cfg.fusion || !tcf_drv.launch_kernel || !tcf_drv.mem_free_async) {
        tcf_log(TCF_LOG_INFO, "fuse mode: %s; nothing is held",
                tcf_cfg.fusion ? "the driver lacks an entry point" : "TCFUSE_FUSION=0");
        return;
    }
    tcf_holding = 1;  /* the worker is made at the first launch (worker.c says why) */
}

/* In a child forked after fuse mode started: the worker is not there (threads do not
 * survive fork), so nothing may be held or waited for, and at exit nothing is stopped. */
void tcf_exec_forked(void)
{
    tcf_reuse_forked();
    tcf_reserve_forked();
    atomic_store(&tcf_stopping, 1);
    atomic_store(&tcf_beside, 0);
    tcf_holding = 0;
}

/* At exit. The order of exit handlers is not ours to choose, and cudart and PyTorch may
 * already have torn the context down: no thread of ours may touch the driver from here on.
 * Held work is dropped, not issued: nothing can observe it any more. Registered many times
 * (codegen/nvrtc.c says why), it runs once: the newest registration, first to run. */
void tcf_exec_stop(void)
{
    if (atomic_exchange(&tcf_stopping, 1))
        return;
    tcf_reserve_save();
    if (atomic_exchange(&tcf_beside, 0)) {  /* full mode: replay issues what it holds */
        tcf_fkern_stop();
        return;
    }
    tcf_capture_quiesce();
    tcf_holding = 0;
    tcf_fkern_stop();
    unsigned n = tcf_window_count();
    for (unsigned i = 0; i < n; i++) {
        tcf_window_t *w = tcf_window_at(i);
        if (!tcf_lock_at_exit(&w->lock))
            continue;  /* exit interrupted its holder: the window is left as it is */
        if (w->nheld) {
            atomic_fetch_add(&tcf_xctr.dropped_at_exit, w->nheld);
            for (uint32_t j = w->exec_from; j < w->nev; j++)
                w->ev[j].held = 0;
            w->nheld = 0;
        }
        w->nfree = 0;
        w->ndec = 0;  /* nothing is planned from here on */
        w->exec_from = w->nev;
        pthread_mutex_unlock(&w->lock);
    }
}

