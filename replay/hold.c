/* Graph mode's launch path: each launch is held, or passed to the driver at once.
 *
 * A window is held only while it follows a ready graph's path: its first launch decides
 * (its key so far must be a prefix of some ready graph's key), and every later launch
 * must keep it on some graph's path. A launch that leaves it issues what was held, in
 * order, and the window runs as issued to its end (and is learned: a longer window met
 * often enough becomes a graph of its own). Holding therefore costs nothing where nothing
 * repeats, and the GPU waits at most for one window's issue.
 *
 * Order. Held work is issued before anything that could observe it or must follow it:
 * boundaries close every window (capture); a launch or other work on the legacy default
 * stream issues every other stream's held work first, and work on any other stream issues
 * the legacy stream's (the legacy stream orders against every blocking stream; which
 * streams are non-blocking is not asked, so all are treated as blocking). Streams that
 * are neither wait for nothing of each other in the program either, so each keeps its
 * own held window. A free behind held launches is held (the block may still be read);
 * allocations go through at once (the caller needs the pointer) and are recorded.
 *
 * Device memsets and device-to-device copies are held like launches (memset and copy
 * nodes). What is not held, and cuts the window before and after it: launches a graph
 * node cannot carry as they were made (cooperative, attributes unknown here; a
 * programmatic serialization is carried without it, key.c says why), NCCL's collectives
 * (recognize.h), launches whose parameters could not be copied. Nothing on the
 * per-thread default stream is held (held work may be issued by another thread, whose
 * per-thread stream is another). While the application captures a stream itself,
 * nothing is held.
 *
 * A held launch returns CUDA_SUCCESS. It is only held while it matches, kernel, shape and
 * parameter size, a launch the driver accepted before in a window that became a graph; a
 * failure when it is issued later is counted (held-failed), like any asynchronous error.
 */
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "replay/internal.h"

atomic_int tcf_ron;                  /* holding allowed */
atomic_int tcf_rholding;             /* windows with held work (hint) */
static atomic_int tcf_rcapturing;    /* application stream captures under way */
static atomic_int tcf_rlegacy;       /* legacy-stream windows with held work (hint) */
static uint32_t tcf_rcap;            /* launches per window */
static atomic_ullong tcf_rsyncs;     /* calls that waited for the GPU (tcf_replay_boundary) */

/* Slow start. When the host has just waited for the GPU (a synchronize), the GPU is idle,
 * and a held window gives it nothing until the window's last launch is issued: on a
 * GPU-bound program that repeats every iteration, the whole window's host time, added to
 * the iteration (libtorch-block: 0.93-0.95x eager in graph and full mode with windows of
 * 32 from the synchronize on). The windows after a wait are cut short and grow
 * (TCFUSE_REPLAY_SLOW: 4, 8, 16, then the cap), so that the GPU soon has work and each
 * window runs while the next one is gathered. The cuts stay structural: where a program
 * waits is part of what it does. */
#define TCF_R_SLOW_STEPS 12u

static uint32_t tcf_rslow_cap(uint32_t slow)
{
    uint64_t first = (uint64_t)tcf_cfg.replay_slow;
    if (!first || slow >= TCF_R_SLOW_STEPS || (first << slow) >= tcf_rcap)
        return tcf_rcap;
    return (uint32_t)(first << slow);
}

/* Slow end, its mirror (TCFUSE_REPLAY_SLOW_END). A held window runs only once its last
 * launch is issued, so at the wait that ends a stretch the host waits for the whole last
 * window's GPU work, where eager's GPU had kept pace with the host and had little left.
 * Where a stream's last two stretches between waits held the same number of launches, the
 * next is taken to hold as many: a window that would reach the predicted wait is cut at
 * half of what is left, down to a last one of at most 2 * TCF_R_END_MIN launches, so that
 * the last windows shrink as the first ones grew (30 left: 15, 8, 7). The last one is not
 * cut: the wait closes it where it closed it before any prediction, so its key does not
 * change once two stretches agree (a stretch of 40 under the cap of 32 keeps its windows
 * of 32 and 8 and their graphs). Structural still: the cuts follow launch counts since a
 * wait. A wrong prediction costs only shorter windows. */
#define TCF_R_END_MIN 4u

static uint32_t tcf_rslow_end_cap(const tcf_window_t *w, uint32_t cap)
{
    if (!tcf_cfg.replay_slow_end || w->rper != w->rper_prev || w->rsince >= w->rper)
        return cap;
    uint32_t left = w->rper - w->rsince;
    /* past the cap: not the last windows yet; 8 or fewer: the wait closes it (no cut, the
     * key unchanged) */
    if (left > cap || left <= 2 * TCF_R_END_MIN)
        return cap;
    atomic_fetch_add_explicit(&tcf_rctr.slow_end_cuts, 1, memory_order_relaxed);
    return (left + 1) / 2;
}

void tcf_replay_boundary(const char *call)
{
    tcf_rlauncher_drain();   /* the call may observe or follow what the launcher holds */
    if (strstr(call, "Synchronize") || !strcmp(call, "cuMemcpyDtoH") || !strcmp(call, "cuMemcpy") ||
        !strcmp(call, "cuMemFree"))
        atomic_fetch_add_explicit(&tcf_rsyncs, 1, memory_order_relaxed);
}

/* A counter's bits mixed (lowbias32), for a choice at even odds that no period in the
 * program's windows lines up with. */
static inline uint32_t tcf_rmix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
}

static inline int tcf_is_legacy(const tcf_window_t *w)
{
    return w->stream == (uint64_t)(uintptr_t)CU_STREAM_LEGACY;
}

int tcf_rctx_enter(const tcf_window_t *w, CUcontext *prev)
{
    *prev = NULL;
    return w->ctx && tcf_drv.ctx_get_current && tcf_drv.ctx_set_current &&
           tcf_drv.ctx_get_current(prev) == CUDA_SUCCESS &&
           (uint64_t)(uintptr_t)*prev != w->ctx &&
           tcf_drv.ctx_set_current((CUcontext)(uintptr_t)w->ctx) == CUDA_SUCCESS;
}

void tcf_rctx_leave(int switched, CUcontext prev)
{
    if (switched)
        tcf_drv.ctx_set_current(prev);
}

CUresult tcf_rissue_kernel(CUfunction f, const unsigned grid[3], const unsigned block[3],
                           unsigned smem, CUstream s, void **pp, void **extra,
                           const CUlaunchAttribute *attrs, unsigned nattr)
{
    if (nattr && tcf_drv.launch_kernel_ex) {
        CUlaunchConfig c = {
            .gridDimX = grid[0], .gridDimY = grid[1], .gridDimZ = grid[2],
            .blockDimX = block[0], .blockDimY = block[1], .blockDimZ = block[2],
            .sharedMemBytes = smem, .hStream = s,
            .attrs = (CUlaunchAttribute *)(uintptr_t)attrs, .numAttrs = nattr,
        };
        return tcf_drv.launch_kernel_ex(&c, f, pp, extra);
    }
    return tcf_drv.launch_kernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                 smem, s, pp, extra);
}

CUresult tcf_rissue_memop(int copy, CUdeviceptr dst, uint64_t second, unsigned elem,
                          size_t count, CUstream s)
{
    if (copy)
        return tcf_drv.memcpy_dtod_async(dst, (CUdeviceptr)second, count, s);
    switch (elem) {
    case 1: return tcf_drv.memset_d8_async(dst, (unsigned char)second, count, s);
    case 2: return tcf_drv.memset_d16_async(dst, (unsigned short)second, count, s);
    default: return tcf_drv.memset_d32_async(dst, (unsigned)second, count, s);
    }
}

/* Issues one held launch as the application made it. */
static CUresult tcf_rissue_launch(const tcf_window_t *w, const tcf_event_t *e)
{
    const tcf_kernel_t *k = e->u.l.k;
    uint8_t *bytes = w->arena + e->u.l.poff;
    void *stack_pp[64], **pp = stack_pp, *ex[5];
    size_t exsize = e->u.l.pbytes;
    int form_params = k->param_known && e->u.l.pbytes == k->param_bytes;
    if (form_params && k->nparams > 64 && !(pp = tcf_malloc(k->nparams * sizeof *pp)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (form_params)
        for (uint32_t i = 0; i < k->nparams; i++)
            pp[i] = bytes + k->off[i];
    ex[0] = CU_LAUNCH_PARAM_BUFFER_POINTER, ex[1] = bytes;
    ex[2] = CU_LAUNCH_PARAM_BUFFER_SIZE, ex[3] = &exsize, ex[4] = CU_LAUNCH_PARAM_END;
    CUresult rc = tcf_rissue_kernel((CUfunction)(uintptr_t)k->handle, e->u.l.grid, e->u.l.block,
                                    e->u.l.smem, (CUstream)(uintptr_t)e->stream,
                                    form_params ? pp : NULL, form_params ? NULL : ex,
                                    tcf_event_attrs(w, e), e->u.l.nattr);
    if (pp != stack_pp)
        free(pp);
    return rc;
}

static CUresult tcf_rissue_op(const tcf_event_t *e)
{
    int copy = e->kind == TCF_EV_MEMCPY;
    return tcf_rissue_memop(copy, e->u.op.dst, copy ? e->u.op.src : e->u.op.value, e->u.op.elem,
                            e->u.op.count, (CUstream)(uintptr_t)e->stream);
}

void tcf_rissue_held(tcf_window_t *w)
{
    if (!w->nheld)
        return;
    tcf_rlauncher_drain();   /* after the graphs queued before it */
    CUcontext prev;
    int sw = tcf_rctx_enter(w, &prev);
    uint64_t launches = 0;
    for (uint32_t i = 0; i < w->nev; i++) {
        tcf_event_t *e = &w->ev[i];
        if (!e->held)
            continue;
        CUresult rc = CUDA_SUCCESS;
        if (e->kind == TCF_EV_LAUNCH) {
            rc = tcf_rissue_launch(w, e);
            launches++;
        } else if (e->kind == TCF_EV_FREE) {
            rc = tcf_drv.mem_free_async(e->u.m.ptr, (CUstream)(uintptr_t)e->stream);
        } else if (e->kind == TCF_EV_MEMSET || e->kind == TCF_EV_MEMCPY) {
            rc = tcf_rissue_op(e);
        }
        if (rc != CUDA_SUCCESS)
            atomic_fetch_add(&tcf_rctr.held_failed, 1);
        e->held = 0;
        e->rc = rc;
    }
    tcf_rctx_leave(sw, prev);
    atomic_fetch_add(&tcf_rctr.issued_held_launches, launches);
    tcf_rheld_done(w);
}

void tcf_rheld_done(tcf_window_t *w)
{
    if (!w->nheld)
        return;
    w->nheld = 0;
    atomic_fetch_sub(&tcf_rholding, 1);
    if (tcf_is_legacy(w))
        atomic_fetch_sub(&tcf_rlegacy, 1);
}

/* Issues held work of windows that work on `w` must follow (legacy order), leaving each
 * to run as issued to its end. No window lock is held by the caller. */
static void tcf_rorder(const tcf_window_t *w)
{
    if (!atomic_load_explicit(&tcf_rholding, memory_order_relaxed))
        return;
    int legacy = !w || tcf_is_legacy(w);
    if (!legacy && !atomic_load_explicit(&tcf_rlegacy, memory_order_relaxed))
        return;
    unsigned n = tcf_window_count();
    for (unsigned i = 0; i < n; i++) {
        tcf_window_t *o = tcf_window_at(i);
        if (o == w || (!legacy && !tcf_is_legacy(o)) ||
            !__atomic_load_n(&o->nheld, __ATOMIC_RELAXED))
            continue;
        pthread_mutex_lock(&o->lock);
        if (o->nheld) {
            tcf_rissue_held(o);
            o->rstate = TCF_R_PASS;
            atomic_fetch_add(&tcf_rctr.issued_order, 1);
        }
        pthread_mutex_unlock(&o->lock);
    }
}

/* Exit handlers run in reverse order of registration: registered at the first held
 * launch, after cudart's and PyTorch's, this one issues what is held while the driver is
 * still whole, and holds nothing after. */
static void tcf_rexit(void)
{
    tcf_replay_stop();
}

/* Appends a held launch (arg: its tcf_launch_t). 0, or -1 when out of memory. */
static int tcf_rappend_launch(tcf_window_t *w, const void *arg)
{
    const tcf_launch_t *l = arg;
    if (!tcf_window_add_launch(w, l, 1, CUDA_SUCCESS, tcf_event_now()))
        return -1;
    tcf_count(&tcf_ctr.launches);   /* per thread: capture/count.h */
    tcf_count(&l->k->launches);
    tcf_count(&tcf_rctr.held);
    return 0;
}

/* Appends a held memset or copy (arg: its event, filled but for the time). */
static int tcf_rappend_op(tcf_window_t *w, const void *arg)
{
    tcf_event_t *e = tcf_window_append(w, tcf_event_now(), 0);
    if (!e)
        return -1;
    uint64_t t = e->t;
    *e = *(const tcf_event_t *)arg;
    e->t = t;
    w->nops++;
    tcf_count(&tcf_ctr.ops);
    tcf_count(&tcf_rctr.held_ops);
    return 0;
}

/* The step every piece of work that may be held goes through (w locked): the window's
 * key so far, folded with sig, must be a prefix of a ready graph's key; then append holds
 * it. Otherwise what the window held goes out and the window runs as issued to its end.
 * Returns 1 when held. */
static int tcf_rtake(tcf_window_t *w, const tcf_rsig_t *sig,
                     int (*append)(tcf_window_t *, const void *), const void *arg)
{
    if (w->rcut) {  /* the work after a launch a node cannot carry starts a new window */
        if (w->nlaunch || w->nops)
            tcf_window_close_locked(w, tcf_r_cut_after, NULL, 0);
        w->rcut = 0;
    }
    if (w->rstate == TCF_R_FRESH) {
        uint64_t epoch = atomic_load_explicit(&tcf_ctr.boundary_calls, memory_order_relaxed);
        if (epoch != w->repoch) {  /* a boundary since this stream's last window began */
            w->repoch = epoch;
            w->rord = 0;
        }
        uint64_t syncs = atomic_load_explicit(&tcf_rsyncs, memory_order_relaxed);
        if (syncs != w->rsyncs) {   /* the host waited for the GPU since the last window */
            w->rsyncs = syncs;
            w->rslow = 0;
            w->rper_prev = w->rper, w->rper = w->rsince, w->rsince = 0;
        }
        w->rcap = tcf_rslow_end_cap(w, tcf_rslow_cap(w->rslow));
        if (w->rslow < TCF_R_SLOW_STEPS)
            w->rslow++;
        w->rseed = tcf_rkey_seed(w->ctx, w->stream, w->rord);
        if (w->rcap != tcf_rcap)   /* a short window's key is its own (key.c) */
            w->rseed = tcf_rkey_capped(w->rseed, w->rcap);
        w->rh = w->rseed;
        /* Does it pay: the stream's last window took from its first work to this one. */
        w->rstart = tcf_now_ns();
        if (w->rprev) {
            tcf_rplan_sample(w->rprev, w->rprev_graph, w->rstart - w->rprev_start);
            w->rprev = NULL;
        }
        /* While keys are judged, a window that begins as one of them runs as issued at
         * even odds, to time it so beside the graph's runs (plan.c). */
        if (atomic_load_explicit(&tcf_rjudging, memory_order_relaxed) > 0 &&
            tcf_rjudge_first_has(tcf_rkey_step(w->rh, sig)) && (tcf_rmix32(++w->rexplore) & 1)) {
            w->rstate = TCF_R_PASS;
            w->rexpl = 1;
            atomic_fetch_add_explicit(&tcf_rctr.explored, 1, memory_order_relaxed);
        } else if (w->rskip) {   /* holding paused on this stream (flush.c) */
            w->rskip--;
            w->rstate = TCF_R_PASS;
            w->rquiet = 1;
            atomic_fetch_add_explicit(&tcf_rctr.paused, 1, memory_order_relaxed);
        }
    }
    if (w->rstate == TCF_R_PASS)
        return 0;
    uint64_t h = tcf_rkey_step(w->rh, sig);
    if (tcf_rprefix_has(h) && atomic_load_explicit(&tcf_ron, memory_order_relaxed) &&
        append(w, arg) == 0) {
        if (!w->nheld) {
            atomic_fetch_add(&tcf_rholding, 1);
            if (tcf_is_legacy(w))
                atomic_fetch_add(&tcf_rlegacy, 1);
            atomic_fetch_add_explicit(&tcf_rctr.holds, 1, memory_order_relaxed);
        }
        w->nheld++;
        w->rh = h;
        w->rstate = TCF_R_HOLD;
        w->rheld = 1;
        static atomic_int registered;
        if (!atomic_exchange(&registered, 1))
            atexit(tcf_rexit);
        if (w->nlaunch >= tcf_window_cap_of(w))
            tcf_window_close_locked(w, "size-cap", NULL, 0);
        return 1;
    }
    if (w->rstate == TCF_R_HOLD) {  /* left every graph's path */
        tcf_rissue_held(w);
        atomic_fetch_add_explicit(&tcf_rctr.issued_diverged, 1, memory_order_relaxed);
    }
    w->rstate = TCF_R_PASS;
    return 0;
}

/* One launch of a quiet window (w locked): the wrapper counts it as a launch once issued
 * (tcf_capture_count) and records nothing. */
static void tcf_rquiet_count(tcf_window_t *w)
{
    w->rqn++;
    atomic_fetch_add_explicit(&tcf_rctr.quiet, 1, memory_order_relaxed);
}

/* A launch on a quiet window: a paused stream's window learns nothing, since nothing
 * would be held from what it learned until the pause ends, so its launches are only
 * counted, and cut where a recorded window would be cut (at the window's cap), so that
 * the windows after the pause get the keys they had before it. What the window recorded
 * besides (frees, memsets) closes with it. A boundary since the window began ends it:
 * the normal path then starts the next. 1 when counted (issue it, record nothing), 0 when
 * the normal path must take it. */
static int tcf_rquiet_launch(tcf_window_t *w)
{
    int counted = 0;
    pthread_mutex_lock(&w->lock);
    uint64_t epoch = atomic_load_explicit(&tcf_ctr.boundary_calls, memory_order_relaxed);
    if (w->rquiet && w->rstate == TCF_R_PASS && !w->rcut && !w->nlaunch &&
        epoch == w->repoch) {
        counted = 1;
        tcf_rquiet_count(w);
        if (w->rqn >= tcf_window_cap_of(w)) {
            if (w->nev) {
                tcf_window_close_locked(w, "size-cap", NULL, 0);   /* flush.c ends it */
            } else {
                tcf_rwindow_next(w, NULL, 0, 1);   /* what that close would leave */
            }
        }
    } else if (w->rquiet && !w->nlaunch) {
        tcf_rcount_since(w, w->rqn);
        w->rquiet = 0, w->rqn = 0;   /* a boundary came: the window ended there */
        if (!w->nev)
            w->rstate = TCF_R_FRESH;
    }
    pthread_mutex_unlock(&w->lock);
    return counted;
}

static int tcf_rlaunch(tcf_via_t via, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                       unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream stream,
                       int ptds, void **params, void **extra, const CUlaunchAttribute *attrs,
                       unsigned nattrs, CUresult *result, tcf_window_t **wout,
                       tcf_kernel_t **kout)
{
    *wout = NULL, *kout = NULL;
    if (!atomic_load_explicit(&tcf_ron, memory_order_relaxed))
        return 0;
    if (atomic_load_explicit(&tcf_rcapturing, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&tcf_rctr.capturing, 1, memory_order_relaxed);
        return 0;   /* nothing is held anywhere: the capture's begin was a boundary */
    }
    tcf_window_t *w = tcf_window_for(stream, ptds);
    tcf_rorder(w);
    if (!w)
        return 0;
    *wout = w;
    if (__atomic_load_n(&w->rquiet, __ATOMIC_RELAXED) && tcf_rquiet_launch(w))
        return 2;
    const tcf_launch_t l = { .via = via, .stream = stream, .k = *kout = tcf_kernel_get(f),
                             .grid = { gx, gy, gz }, .block = { bx, by, bz }, .smem = smem,
                             .params = params, .extra = extra, .attrs = attrs,
                             .nattrs = attrs ? nattrs : 0 };
    tcf_rsig_t sig;
    int bad_attr = -1;
    int why = tcf_rsig_of_launch(w, &l, &sig, &bad_attr);
    /* A window already running as issued takes the launch as it comes (read without the
     * lock: a window closed meanwhile by another thread only misses this one's key). */
    if (why == TCF_RN_OK && __atomic_load_n(&w->rstate, __ATOMIC_RELAXED) == TCF_R_PASS &&
        !__atomic_load_n(&w->rcut, __ATOMIC_RELAXED))
        return 0;
    int taken = 0;
    pthread_mutex_lock(&w->lock);
    if (why != TCF_RN_OK) {
        /* A launch a node cannot carry: alone in its window, so that the windows around
         * it repeat whatever it does. */
        atomic_fetch_add_explicit(&tcf_rctr.not_held[why], 1, memory_order_relaxed);
        if (why == TCF_RN_ATTR && bad_attr >= 0 && bad_attr < 32)
            atomic_fetch_add_explicit(&tcf_rctr.not_held_attr_id[bad_attr], 1,
                                      memory_order_relaxed);
        if (w->stream != (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD) {
            if (w->nlaunch || w->nops) {
                tcf_window_close_locked(w, tcf_r_cut_unsupported, NULL, 0);
                atomic_fetch_add_explicit(&tcf_rctr.cuts_unsupported, 1, memory_order_relaxed);
            }
            w->rcut = 1;
        }
        pthread_mutex_unlock(&w->lock);
        return 0;
    }
    taken = tcf_rtake(w, &sig, tcf_rappend_launch, &l);
    if (taken)
        *result = CUDA_SUCCESS;
    else if (w->rquiet && !w->nlaunch && w->rqn < tcf_window_cap_of(w)) {   /* a quiet window's first */
        tcf_rquiet_count(w);
        taken = 2;
    }
    pthread_mutex_unlock(&w->lock);
    return taken;
}

int tcf_replay_launch(tcf_via_t via, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream stream,
                      int ptds, void **params, void **extra, const CUlaunchAttribute *attrs,
                      unsigned nattrs, CUresult *result, tcf_window_t **wout,
                      tcf_kernel_t **kout)
{
    int taken = tcf_rlaunch(via, f, gx, gy, gz, bx, by, bz, smem, stream, ptds, params, extra,
                            attrs, nattrs, result, wout, kout);
    if (taken != 1)   /* the caller issues it: after what the launcher holds */
        tcf_rlauncher_drain();
    return taken;
}

static int tcf_rfree(CUdeviceptr ptr, CUstream stream, int ptds)
{
    if (!atomic_load_explicit(&tcf_ron, memory_order_relaxed) ||
        atomic_load_explicit(&tcf_rcapturing, memory_order_relaxed))
        return 0;
    tcf_window_t *w = tcf_window_for(stream, ptds);
    tcf_rorder(w);
    if (!w || !__atomic_load_n(&w->nheld, __ATOMIC_RELAXED))
        return 0;
    int taken = 0;
    pthread_mutex_lock(&w->lock);
    if (w->nheld && w->rstate == TCF_R_HOLD) {
        if (tcf_window_hold_free(w, ptr, 0, stream, 0)) {
            atomic_fetch_add(&tcf_rctr.held_frees, 1);
            taken = 1;
        } else {
            /* No room to record it (out of memory): the held launches, which may read the
             * block, go out first, and the free after them as issued. */
            tcf_rissue_held(w);
            atomic_fetch_add_explicit(&tcf_rctr.issued_failed, 1, memory_order_relaxed);
            w->rstate = TCF_R_PASS;
        }
    }
    pthread_mutex_unlock(&w->lock);
    return taken;
}

int tcf_replay_free(CUdeviceptr ptr, CUstream stream, int ptds)
{
    int taken = tcf_rfree(ptr, stream, ptds);
    if (!taken)   /* the caller frees it: after the graphs queued, which may read the block */
        tcf_rlauncher_drain();
    return taken;
}

/* A memset or a device-to-device copy: a node of the graph like a launch. */
static int tcf_rop(tcf_event_t *proto, CUstream stream, int ptds)
{
    if (!atomic_load_explicit(&tcf_ron, memory_order_relaxed) ||
        atomic_load_explicit(&tcf_rcapturing, memory_order_relaxed))
        return 0;
    tcf_window_t *w = tcf_window_for(stream, ptds);
    tcf_rorder(w);
    if (!w || w->stream == (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD)
        return 0;
    proto->held = 1;
    proto->stream = (uint64_t)(uintptr_t)stream;
    tcf_rsig_t sig;
    tcf_rsig_of_op(proto->kind == TCF_EV_MEMSET ? TCF_R_KIND_MEMSET : TCF_R_KIND_MEMCPY,
                   proto->kind == TCF_EV_MEMSET ? proto->u.op.elem : 0, proto->u.op.count, &sig);
    pthread_mutex_lock(&w->lock);
    int taken = tcf_rtake(w, &sig, tcf_rappend_op, proto);
    pthread_mutex_unlock(&w->lock);
    return taken;
}

static int tcf_replay_op(tcf_event_t *proto, CUstream stream, int ptds)
{
    int taken = tcf_rop(proto, stream, ptds);
    if (!taken)   /* the caller issues it: after what the launcher holds */
        tcf_rlauncher_drain();
    return taken;
}

int tcf_replay_memset(const char *call, CUdeviceptr dst, unsigned value, unsigned elem,
                      size_t count, CUstream stream, int ptds)
{
    tcf_event_t e = { .kind = TCF_EV_MEMSET };
    e.u.op.call = call, e.u.op.dst = dst, e.u.op.value = value, e.u.op.elem = elem;
    e.u.op.count = count;
    return tcf_replay_op(&e, stream, ptds);
}

int tcf_replay_memcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream, int ptds)
{
    tcf_event_t e = { .kind = TCF_EV_MEMCPY };
    e.u.op.call = "cuMemcpyDtoDAsync", e.u.op.dst = dst, e.u.op.src = src, e.u.op.count = bytes;
    return tcf_replay_op(&e, stream, ptds);
}

void tcf_replay_capture_begin(void)
{
    atomic_fetch_add(&tcf_rcapturing, 1);
    atomic_fetch_add(&tcf_rctr.app_captures, 1);
    tcf_rworker_idle();   /* no instantiation of ours may run inside the capture */
}

void tcf_replay_capture_end(void)
{
    int c = atomic_load(&tcf_rcapturing);
    while (c > 0 && !atomic_compare_exchange_weak(&tcf_rcapturing, &c, c - 1))
        ;
}

int tcf_rcapture_active(void)
{
    return atomic_load_explicit(&tcf_rcapturing, memory_order_relaxed);
}

/* A child of fork() holds nothing (its parent issues what it held) and starts nothing:
 * CUDA is not usable in it anyway. At its exit the exit handler it inherited issues
 * nothing either (the held work is the parent's: issued twice otherwise) and waits for
 * no worker (threads do not survive fork). */
static atomic_int tcf_rforked;

static void tcf_rfork_child(void)
{
    atomic_store(&tcf_ron, 0);
    atomic_store(&tcf_rforked, 1);
    tcf_rlauncher_forked();
}

void tcf_replay_init(void)
{
    tcf_rcap = tcf_window_cap();
    tcf_rfull = tcf_cfg.mode == TCF_MODE_FULL;
    tcf_rring = tcf_cfg.replay_ring ? tcf_cfg.replay_ring : tcf_rfull ? 2 : 1;
    if (!tcf_rgraph_api()) {
        atomic_fetch_add(&tcf_rctr.gave_up[TCF_RG_no_graph_api], 1);
        tcf_log(TCF_LOG_WARN, "graph mode: the driver lacks the graph API; nothing is held");
        return;
    }
    pthread_atfork(NULL, NULL, tcf_rfork_child);
    atomic_store(&tcf_ron, 1);
}

/* At exit (twice: the handler registered at the first held launch, then capture's
 * shutdown). What is held is issued, not dropped: a program may exit without a
 * synchronize and still expect its work done, as eager gives it. From here on nothing is
 * held and no graph is made; the worker is parked once out of its job. */
void tcf_replay_stop(void)
{
    if (atomic_load(&tcf_rforked))
        return;
    tcf_rlauncher_stop();   /* what it holds is issued, and it holds nothing more */
    if (atomic_exchange(&tcf_ron, 0) == 0 && !atomic_load(&tcf_rholding)) {
        tcf_rworker_stop();
        if (tcf_rfull)
            tcf_exec_stop();   /* exec beside replay: its worker parked, windows left alone */
        return;
    }
    unsigned n = tcf_window_count();
    for (unsigned i = 0; i < n; i++) {
        tcf_window_t *w = tcf_window_at(i);
        pthread_mutex_lock(&w->lock);
        if (w->nheld) {
            tcf_rissue_held(w);
            atomic_fetch_add(&tcf_rctr.issued_exit, 1);
        }
        w->rstate = TCF_R_PASS;
        pthread_mutex_unlock(&w->lock);
    }
    tcf_rworker_stop();
    if (tcf_rfull)
        tcf_exec_stop();
}
