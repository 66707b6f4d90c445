/* Windows: one per (context, stream), holding the work issued there since the last
 * boundary. In observe mode the work has already gone to the driver; the window is the
 * record of what could have been deferred together, which is what fusion and replay
 * will act on. The launch path takes only its own window's lock. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "capture/internal.h"

#define TCF_WTAB_SIZE 4096  /* distinct (context, stream, thread) triples */

static tcf_window_t *_Atomic tcf_wtab[TCF_WTAB_SIZE];   /* hashed */
static tcf_window_t *tcf_wall[TCF_WTAB_SIZE];           /* dense, for closing all */
static atomic_uint tcf_nwall;
static pthread_mutex_t tcf_wlock = PTHREAD_MUTEX_INITIALIZER;
static atomic_ullong tcf_next_window_id;
static atomic_int tcf_started, tcf_stopped;
/* Recording: from start until exit begins (tcf_capture_quiesce) or a fork. */
static atomic_int tcf_live;
static uint64_t tcf_idle_ns;
static uint32_t tcf_window_max;
static tcf_capture_up_t tcf_up;   /* the acting mode above, if any (capture.h) */

void tcf_capture_init(const tcf_capture_up_t *up)
{
    if (atomic_exchange(&tcf_started, 1))
        return;
    if (up)
        tcf_up = *up;
    tcf_idle_ns = tcf_up.no_idle ? 0 : (uint64_t)tcf_cfg.idle_us * 1000u;
    tcf_window_max = tcf_up.window_max ? tcf_up.window_max : (uint32_t)tcf_cfg.window_max;
    atomic_store(&tcf_ctr.dev_lo, UINT64_MAX);
    tcf_kernels_init();
    tcf_stats_init();
    tcf_trace_open();
    atomic_store(&tcf_live, 1);
}

void tcf_capture_quiesce(void)
{
    atomic_store(&tcf_live, 0);
}

/* --- which window ------------------------------------------------------------------- */
static uint64_t tcf_tid(void)
{
    static _Thread_local uint64_t tid;
    if (!tid)
        tid = (uint64_t)syscall(SYS_gettid);
    return tid;
}

tcf_window_t *tcf_window_for(CUstream stream, int ptds)
{
    uint64_t s = (uint64_t)(uintptr_t)stream, ctx = 0, tid = 0;
    /* Stream 0 means the legacy default stream, or the calling thread's own default
     * stream when the call came through a _ptsz entry point. */
    if (s == 0)
        s = ptds ? (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD : (uint64_t)(uintptr_t)CU_STREAM_LEGACY;
    if (s == (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD)
        tid = tcf_tid();
    CUcontext c = NULL;
    if (tcf_drv.ctx_get_current && tcf_drv.ctx_get_current(&c) == CUDA_SUCCESS)
        ctx = (uint64_t)(uintptr_t)c;

    uint64_t h = (ctx * 0x9E3779B97F4A7C15ull) ^ (s * 0xC2B2AE3D27D4EB4Full) ^ tid;
    uint32_t i = (uint32_t)(h >> 40) & (TCF_WTAB_SIZE - 1);
    for (uint32_t probe = 0; probe < TCF_WTAB_SIZE; probe++, i = (i + 1) & (TCF_WTAB_SIZE - 1)) {
        tcf_window_t *w = atomic_load_explicit(&tcf_wtab[i], memory_order_acquire);
        if (!w)
            break;
        if (w->ctx == ctx && w->stream == s && w->tid == tid)
            return w;
    }
    pthread_mutex_lock(&tcf_wlock);
    tcf_window_t *found = NULL;
    i = (uint32_t)(h >> 40) & (TCF_WTAB_SIZE - 1);
    for (uint32_t probe = 0; probe < TCF_WTAB_SIZE; probe++, i = (i + 1) & (TCF_WTAB_SIZE - 1)) {
        tcf_window_t *w = atomic_load(&tcf_wtab[i]);
        if (w && w->ctx == ctx && w->stream == s && w->tid == tid) {
            found = w;
            break;
        }
        if (!w) {
            if (atomic_load(&tcf_nwall) >= TCF_WTAB_SIZE - 1)
                break;  /* full: the caller records nothing (counted) */
            w = tcf_calloc(1, sizeof *w);
            if (!w)
                break;
            w->ctx = ctx, w->stream = s, w->tid = tid;
            pthread_mutex_init(&w->lock, NULL);
            tcf_wall[atomic_load(&tcf_nwall)] = w;
            atomic_fetch_add(&tcf_nwall, 1);
            atomic_store_explicit(&tcf_wtab[i], w, memory_order_release);
            found = w;
            break;
        }
    }
    pthread_mutex_unlock(&tcf_wlock);
    if (!found)
        atomic_fetch_add(&tcf_ctr.oom, 1);
    return found;
}

/* --- closing ------------------------------------------------------------------------ */
uint32_t tcf_window_cap(void)
{
    return tcf_window_max ? tcf_window_max : (uint32_t)tcf_cfg.window_max;
}

unsigned tcf_window_count(void)
{
    return atomic_load(&tcf_nwall);
}

tcf_window_t *tcf_window_at(unsigned i)
{
    return tcf_wall[i];
}

void tcf_window_close_locked(tcf_window_t *w, const char *reason, char (*bt)[160], int nbt)
{
    if (!w->nev)
        return;
    if ((w->nheld || w->ndec || tcf_up.flush_all) && tcf_up.flush)
        tcf_up.flush(w, reason);  /* held work goes out before anything can observe it; a
                                   * chain that ran as issued is planned, to learn its
                                   * kernels; replay learns every window's key */
    /* The key is for the trace and observe mode's summary only: without either, a
     * window's close costs no pass over its events (on a host-bound program, up to a fifth
     * of capture's cost per launch). The acting modes' summaries leave it out, so that a
     * run measured with TCFUSE_STATS=1 pays what a user's run pays; graph and full mode
     * count their own keys. */
    int keyed = tcf_stats_keyed() || tcf_trace_on();
    tcf_key_item_t stack_items[64];
    tcf_key_item_t *items = !keyed ? NULL
                            : w->nev <= 64 ? stack_items : tcf_malloc(w->nev * sizeof *items);
    uint64_t key = 0;
    if (items) {
        for (uint32_t i = 0; i < w->nev; i++) {
            const tcf_event_t *e = &w->ev[i];
            tcf_key_item_t *it = &items[i];
            memset(it, 0, sizeof *it);
            it->words[0] = e->kind;
            if (e->kind == TCF_EV_LAUNCH) {
                it->words[1] = e->u.l.k->name_hash;
                it->words[2] = e->u.l.k->layout_hash;
                it->words[3] = e->u.l.grid[0] | (uint64_t)e->u.l.grid[1] << 32;
                it->words[4] = e->u.l.grid[2] | (uint64_t)e->u.l.block[0] << 32;
                it->words[5] = e->u.l.block[1] | (uint64_t)e->u.l.block[2] << 16 |
                               (uint64_t)e->u.l.smem << 32;
                it->params = w->arena + e->u.l.poff;
                it->nparams = e->u.l.pbytes;
            } else if (e->kind == TCF_EV_ALLOC || e->kind == TCF_EV_FREE) {
                it->words[1] = e->kind == TCF_EV_ALLOC ? e->u.m.size : 0;
                it->ptrs[0] = e->u.m.ptr;
                it->nptrs = 1;
                it->fresh = e->kind == TCF_EV_ALLOC;
            } else {
                it->words[1] = e->u.op.elem;
                it->words[2] = e->u.op.count;
                it->ptrs[0] = e->u.op.dst;
                it->ptrs[1] = e->u.op.src;
                it->nptrs = e->kind == TCF_EV_MEMCPY ? 2 : 1;
            }
        }
        key = tcf_key_window(items, w->nev, atomic_load(&tcf_ctr.dev_lo),
                             atomic_load(&tcf_ctr.dev_hi), &w->scratch);
        if (items != stack_items)
            tcf_free(items);
    } else if (keyed) {
        atomic_fetch_add(&tcf_ctr.oom, 1);
    }
    if (w->nlaunch)
        tcf_stats_window(key, w->nlaunch, reason);
    if (tcf_trace_on())
        tcf_trace_window(w, key, reason, bt, nbt);
    w->nev = w->nlaunch = w->nops = 0;
    w->graph_nodes = w->graph_patched = 0;
    w->arena_len = 0;
    w->id = 0;
    w->exec_from = 0;
    w->ndec = 0;
    __atomic_store_n(&w->pass_at, 0, __ATOMIC_RELAXED);
}

static void tcf_close_all(const char *reason)
{
    char bt[32][160];
    int nbt = -1;  /* captured lazily: only when a window actually closes */
    unsigned n = atomic_load(&tcf_nwall);
    for (unsigned i = 0; i < n; i++) {
        tcf_window_t *w = tcf_wall[i];
        if (!__atomic_load_n(&w->nev, __ATOMIC_RELAXED))
            continue;
        if (nbt < 0)
            nbt = tcf_cfg.backtrace && tcf_trace_on()
                      ? tcf_backtrace(bt, (int)tcf_cfg.backtrace_depth) : 0;
        if (!atomic_load_explicit(&tcf_stopped, memory_order_relaxed))
            pthread_mutex_lock(&w->lock);
        else if (!tcf_lock_at_exit(&w->lock))
            continue;  /* exit interrupted its holder: left open */
        tcf_window_close_locked(w, reason, bt, nbt);
        pthread_mutex_unlock(&w->lock);
    }
}

atomic_int tcf_app_captures;

void tcf_capture_boundary(const char *call)
{
    if (!atomic_load_explicit(&tcf_live, memory_order_relaxed))
        return;
    atomic_fetch_add_explicit(&tcf_ctr.boundary_calls, 1, memory_order_relaxed);
    tcf_close_all(call);
    if (tcf_up.boundary)
        tcf_up.boundary(call);
}

/* --- appending ---------------------------------------------------------------------- */
uint64_t tcf_event_now(void)
{
    return tcf_idle_ns || tcf_trace_on() ? tcf_now_ns() : 0;
}

/* Makes room for one event (and `bytes` of parameters); returns it, or NULL. The window
 * is locked; an idle gap closes the previous window first. */
tcf_event_t *tcf_window_append(tcf_window_t *w, uint64_t now, uint32_t bytes)
{
    if (w->nev && tcf_idle_ns && now - w->last_t > tcf_idle_ns)
        tcf_window_close_locked(w, "idle", NULL, 0);
    if (w->nev == w->cap_ev) {
        uint32_t cap = w->cap_ev ? w->cap_ev * 2 : 64;
        tcf_event_t *ev = tcf_realloc(w->ev, cap * sizeof *ev);
        if (!ev)
            return NULL;
        w->ev = ev;
        if (tcf_up.flush) {  /* the acting mode keeps decoded ops beside the events */
            tcf_wop_t *ops = tcf_realloc(w->ops, cap * sizeof *ops);
            if (!ops)
                return NULL;
            w->ops = ops;
        }
        w->cap_ev = cap;
    }
    if (w->arena_len + bytes > w->arena_cap) {
        uint32_t cap = w->arena_cap ? w->arena_cap : 4096;
        while (cap < w->arena_len + bytes)
            cap *= 2;
        uint8_t *a = tcf_realloc(w->arena, cap);
        if (!a)
            return NULL;
        w->arena = a, w->arena_cap = cap;
    }
    if (!w->nev) {
        w->id = atomic_fetch_add(&tcf_next_window_id, 1) + 1;
        w->first_t = now;
    }
    w->last_t = now;
    tcf_event_t *e = &w->ev[w->nev++];
    e->t = now;
    return e;
}

/* Both acting modes hold a stream-ordered free behind the launches they hold, so that the
 * block is not handed out again before the kernels that read it run. w->lock held. */
tcf_event_t *tcf_window_hold_free(tcf_window_t *w, CUdeviceptr ptr, uint64_t size,
                                  CUstream stream, uint8_t dec)
{
    tcf_event_t *e = tcf_window_append(w, tcf_event_now(), 0);
    if (!e)
        return NULL;
    uint64_t t = e->t;
    memset(e, 0, sizeof *e);
    e->t = t;
    e->kind = TCF_EV_FREE;
    e->held = 1;
    e->dec = dec;
    e->stream = (uint64_t)(uintptr_t)stream;
    e->u.m.call = "cuMemFreeAsync";
    e->u.m.ptr = ptr;
    e->u.m.size = size;
    w->nheld++;
    w->nfree += size != 0 && dec != TCF_DEC_KEEP;
    tcf_count(&tcf_ctr.frees);   /* per thread, as every counter only the summary reads */
    tcf_count(&tcf_ctr.frees_stream);
    return e;
}

/* Fills every field of a launch event: events live in reused memory, and a stale `held`
 * would make fuse mode issue an already-issued launch again. */
void tcf_event_launch(tcf_event_t *e, tcf_via_t via, int held, CUresult rc, CUstream stream,
                      tcf_kernel_t *k, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                      unsigned by, unsigned bz, unsigned smem, uint32_t poff)
{
    uint64_t t = e->t;
    memset(e, 0, sizeof *e);
    e->t = t;
    e->kind = TCF_EV_LAUNCH;
    e->via = (uint8_t)via;
    e->held = (uint8_t)held;
    e->rc = rc;
    e->stream = (uint64_t)(uintptr_t)stream;
    e->u.l.k = k;
    e->u.l.grid[0] = gx, e->u.l.grid[1] = gy, e->u.l.grid[2] = gz;
    e->u.l.block[0] = bx, e->u.l.block[1] = by, e->u.l.block[2] = bz;
    e->u.l.smem = smem;
    e->u.l.poff = poff;
}

const void *tcf_launch_extra(void **extra, size_t *size)
{
    const void *buf = NULL;
    *size = 0;
    for (int i = 0; extra && i < 16 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buf = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
            *size = *(const size_t *)extra[i + 1];
    }
    return buf;
}

/* Copies the launch's parameters into the window's arena, laid out as the kernel says.
 * Returns the byte count copied (0 when the layout is unknown). */
static uint32_t tcf_copy_params(tcf_window_t *w, const tcf_kernel_t *k, void **params,
                                void **extra, uint32_t at)
{
    if (params && k->param_known) {
        memset(w->arena + at, 0, k->param_bytes);  /* padding: there are no caller bytes */
        for (uint32_t i = 0; i < k->nparams; i++)
            if (params[i])
                memcpy(w->arena + at + k->off[i], params[i], k->size[i]);
        return k->param_bytes;
    }
    size_t size;
    const void *buf = tcf_launch_extra(extra, &size);
    /* The caller's size is authoritative (it may pad past the last parameter); the
     * driver refuses more than 32 KiB of parameters, so more is corrupt. */
    if (buf && size <= 32768) {
        memcpy(w->arena + at, buf, size);
        return (uint32_t)size;
    }
    return 0;
}

uint32_t tcf_launch_param_bytes(const tcf_launch_t *l)
{
    size_t need = 0;
    if (l->params && l->k->param_known)
        need = l->k->param_bytes;
    else
        tcf_launch_extra(l->extra, &need);
    return need > 32768 ? 0 : (uint32_t)need;  /* the driver caps parameters at 32 KiB */
}

tcf_event_t *tcf_window_add_launch(tcf_window_t *w, const tcf_launch_t *l, int held,
                                   CUresult rc, uint64_t now)
{
    uint32_t need = tcf_launch_param_bytes(l);
    uint32_t nattr = l->attrs && l->nattrs < TCF_ATTRS_MAX ? l->nattrs
                     : l->attrs ? TCF_ATTRS_MAX : 0;
    uint32_t bytes = ((need + 7u) & ~7u) + nattr * (uint32_t)sizeof(CUlaunchAttribute);
    tcf_event_t *e = tcf_window_append(w, now, bytes);
    if (!e) {
        atomic_fetch_add(&tcf_ctr.oom, 1);
        return NULL;
    }
    tcf_event_launch(e, l->via, held, rc, l->stream, l->k, l->grid[0], l->grid[1], l->grid[2],
                     l->block[0], l->block[1], l->block[2], l->smem, w->arena_len);
    e->u.l.pbytes = need ? tcf_copy_params(w, l->k, l->params, l->extra, w->arena_len) : 0;
    /* Unknown: the layout was not available for an argument array, or an extra buffer
     * could not be read. A kernel with no parameters copies nothing. */
    if (!e->u.l.pbytes && ((l->params && !l->k->param_known) || (!l->params && l->extra)))
        atomic_fetch_add_explicit(&tcf_ctr.params_unknown, 1, memory_order_relaxed);
    w->arena_len += (e->u.l.pbytes + 7u) & ~7u;
    if (nattr) {
        memcpy(w->arena + w->arena_len, l->attrs, nattr * sizeof(CUlaunchAttribute));
        w->arena_len += nattr * (uint32_t)sizeof(CUlaunchAttribute);
        e->u.l.nattr = nattr;
    }
    w->nlaunch++;
    return e;
}

int tcf_window_pass_launch(tcf_window_t *w, const tcf_kernel_t *k)
{
    if (tcf_trace_on())
        return 0;
    __atomic_store_n(&w->pass_kid, k->id, __ATOMIC_RELAXED);
    __atomic_store_n(&w->pass_at, __atomic_load_n(&w->nev, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
    return 1;
}

static void tcf_count_kernel_launch(tcf_kernel_t *k, CUresult rc)
{
    tcf_count(&tcf_ctr.launches);   /* per thread: count.h */
    if (rc != CUDA_SUCCESS)
        atomic_fetch_add_explicit(&tcf_ctr.launch_errors, 1, memory_order_relaxed);
    tcf_count(&k->launches);
}

static tcf_kernel_t *tcf_count_launch(CUfunction f, CUresult rc)
{
    tcf_kernel_t *k = tcf_kernel_get(f);
    tcf_count_kernel_launch(k, rc);
    return k;
}

/* Exit handlers run newest first: one registered at the first launch, after the runtime's,
 * stops the recording before the runtime's handlers make their last calls
 * (tcf_capture_quiesce). Every launch path calls it: a program whose first launches are
 * all only counted (fuse mode's undecodable ones, graph mode's paused ones), or taken by
 * the acting mode, must stop too, or an exit from a signal handler that interrupted a
 * window's holder waits on its lock. */
void tcf_capture_exit_hook(void)
{
    static atomic_int quiesce_at_exit;
    if (!atomic_load_explicit(&quiesce_at_exit, memory_order_relaxed) &&
        !atomic_exchange(&quiesce_at_exit, 1))
        atexit(tcf_capture_quiesce);
}

void tcf_capture_count(CUfunction f, CUresult rc)
{
    tcf_capture_exit_hook();
    tcf_count_launch(f, rc);
}

void tcf_capture_count_kernel(tcf_kernel_t *k, CUresult rc)
{
    tcf_count_kernel_launch(k, rc);   /* exec registered the exit hook before handing it */
}

/* Appends issued launch l to w (locked) with exec's mark dec, and closes w at its cap. */
static void tcf_record_launch(tcf_window_t *w, const tcf_launch_t *l, CUresult rc,
                              uint64_t now, uint8_t dec)
{
    tcf_event_t *e = tcf_window_add_launch(w, l, 0, rc, now);
    if (!e)
        return;
    e->dec = dec;
    if (w->nlaunch >= tcf_window_cap_of(w))
        tcf_window_close_locked(w, "size-cap", NULL, 0);
}

void tcf_capture_launch(tcf_via_t via, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream stream,
                        int ptds, void **params, void **extra,
                        const CUlaunchAttribute *attrs, unsigned nattrs, CUresult rc,
                        tcf_window_t *w, tcf_kernel_t *k)
{
    if (!atomic_load_explicit(&tcf_live, memory_order_relaxed))
        return;
    tcf_capture_exit_hook();
    if (k)
        tcf_count_kernel_launch(k, rc);
    else
        k = tcf_count_launch(f, rc);
    if (!w)
        w = tcf_window_for(stream, ptds);
    if (!w)
        return;
    uint64_t now = tcf_event_now();
    const tcf_launch_t l = { .via = via, .stream = stream, .k = k, .grid = { gx, gy, gz },
                             .block = { bx, by, bz }, .smem = smem, .params = params,
                             .extra = extra, .attrs = attrs, .nattrs = attrs ? nattrs : 0 };
    pthread_mutex_lock(&w->lock);
    tcf_record_launch(w, &l, rc, now, 0);
    pthread_mutex_unlock(&w->lock);
}

void tcf_capture_launch_marked(tcf_window_t *w, const tcf_launch_t *l, CUresult rc,
                               uint8_t dec)
{
    tcf_capture_exit_hook();
    tcf_count_kernel_launch(l->k, rc);
    if (atomic_load_explicit(&tcf_live, memory_order_relaxed))
        tcf_record_launch(w, l, rc, tcf_event_now(), dec);
}

/* Appends a copy of proto (its time and stream set) to w (locked). */
static void tcf_record_other(tcf_window_t *w, const tcf_event_t *proto)
{
    tcf_event_t *e = tcf_window_append(w, proto->t, 0);
    if (e) {
        *e = *proto;
        if (e->kind == TCF_EV_MEMSET || e->kind == TCF_EV_MEMCPY)
            w->nops++;
    }
}

/* An event on a stream goes into its window; one without a stream straight to the trace. */
static void tcf_capture_other(tcf_event_t *proto, CUstream stream, int has_stream, int ptds)
{
    proto->t = tcf_event_now();
    proto->stream = (uint64_t)(uintptr_t)stream;
    tcf_window_t *w = has_stream ? tcf_window_for(stream, ptds) : NULL;
    if (!w) {
        if (tcf_trace_on())
            tcf_trace_event(proto, -1);
        return;
    }
    pthread_mutex_lock(&w->lock);
    tcf_record_other(w, proto);
    pthread_mutex_unlock(&w->lock);
}

void tcf_capture_alloc(const char *call, CUdeviceptr ptr, size_t size, CUstream stream,
                       int has_stream, int ptds, CUresult rc)
{
    if (!atomic_load_explicit(&tcf_live, memory_order_relaxed))
        return;
    if (rc == CUDA_SUCCESS && ptr) {
        tcf_count(&tcf_ctr.allocs);
        unsigned long long lo = atomic_load(&tcf_ctr.dev_lo), hi = atomic_load(&tcf_ctr.dev_hi);
        while (ptr < lo && !atomic_compare_exchange_weak(&tcf_ctr.dev_lo, &lo, ptr))
            ;
        while (ptr + size > hi && !atomic_compare_exchange_weak(&tcf_ctr.dev_hi, &hi, ptr + size))
            ;
    }
    tcf_event_t e = { .kind = TCF_EV_ALLOC, .rc = rc };
    e.u.m.call = call, e.u.m.ptr = ptr, e.u.m.size = size;
    tcf_capture_other(&e, stream, has_stream, ptds);
}

void tcf_time_alloc(uint64_t ns)
{
    tcf_count(&tcf_ctr.alloc_timed);
    tcf_count_add(&tcf_ctr.alloc_ns, ns);
    if (ns > TCF_ALLOC_SLOW_NS)
        tcf_count(&tcf_ctr.alloc_slow);
}

void tcf_time_free(uint64_t ns)
{
    tcf_count(&tcf_ctr.free_timed);
    tcf_count_add(&tcf_ctr.free_ns, ns);
}

void tcf_capture_free(const char *call, CUdeviceptr ptr, CUstream stream, int has_stream,
                      int ptds, CUresult rc)
{
    if (!atomic_load_explicit(&tcf_live, memory_order_relaxed))
        return;
    if (rc == CUDA_SUCCESS) {
        tcf_count(&tcf_ctr.frees);
        if (has_stream)
            tcf_count(&tcf_ctr.frees_stream);
    }
    tcf_event_t e = { .kind = TCF_EV_FREE, .rc = rc };
    e.u.m.call = call, e.u.m.ptr = ptr;
    tcf_capture_other(&e, stream, has_stream, ptds);
}

static tcf_event_t tcf_memset_event(const char *call, CUdeviceptr dst, unsigned value,
                                    unsigned elem, size_t count, CUresult rc)
{
    tcf_event_t e = { .kind = TCF_EV_MEMSET, .rc = rc };
    e.u.op.call = call, e.u.op.dst = dst, e.u.op.value = value;
    e.u.op.elem = elem, e.u.op.count = count;
    return e;
}

void tcf_capture_memset(const char *call, CUdeviceptr dst, unsigned value, unsigned elem,
                        size_t count, CUstream stream, int ptds, CUresult rc)
{
    if (!atomic_load_explicit(&tcf_live, memory_order_relaxed))
        return;
    tcf_count(&tcf_ctr.ops);
    tcf_event_t e = tcf_memset_event(call, dst, value, elem, count, rc);
    tcf_capture_other(&e, stream, 1, ptds);
}

void tcf_capture_memset_marked(tcf_window_t *w, const char *call, CUdeviceptr dst,
                               unsigned value, unsigned elem, size_t count, CUstream stream,
                               CUresult rc, uint8_t dec)
{
    if (!atomic_load_explicit(&tcf_live, memory_order_relaxed))
        return;
    tcf_count(&tcf_ctr.ops);
    tcf_event_t e = tcf_memset_event(call, dst, value, elem, count, rc);
    e.t = tcf_event_now(), e.stream = (uint64_t)(uintptr_t)stream, e.dec = dec;
    tcf_record_other(w, &e);
}

void tcf_capture_memcpy(const char *call, CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                        CUstream stream, int ptds, CUresult rc)
{
    if (!atomic_load_explicit(&tcf_live, memory_order_relaxed))
        return;
    tcf_count(&tcf_ctr.ops);
    tcf_event_t e = { .kind = TCF_EV_MEMCPY, .rc = rc };
    e.u.op.call = call, e.u.op.dst = dst, e.u.op.src = src, e.u.op.count = bytes;
    tcf_capture_other(&e, stream, 1, ptds);
}

void tcf_capture_forked(void)
{
    atomic_store(&tcf_live, 0);
    atomic_store(&tcf_stopped, 1);  /* the parent's windows and stats are the parent's */
}

void tcf_capture_shutdown(void)
{
    atomic_store(&tcf_live, 0);
    if (!atomic_load(&tcf_started) || atomic_exchange(&tcf_stopped, 1))
        return;
    if (tcf_up.stop)
        tcf_up.stop();
    tcf_close_all("exit");
    if (tcf_cfg.stats) {
        tcf_count_settle();   /* every thread's counts, before anything reads them */
        tcf_stats_print();
        if (tcf_up.stats && !tcf_stats_idle())
            tcf_up.stats();
    }
    tcf_trace_close();
}
