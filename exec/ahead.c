/* Ahead: work fuse mode does not decode, issued ahead of the decoded work before it in its
 * window when it provably touches none of that work's bytes, so that the window goes on
 * past it instead of ending there.
 *
 * Why: HF Llama's MLP runs silu(gate), then the up projection's GEMM, then silu's result
 * times the GEMM's. The GEMM used to end the window (held work first: tcf_exec_order), so
 * silu and the product ran as two kernels: 4 x 92 MB of traffic a layer at 4 x 2048 tokens
 * where one kernel needs 3 x 92. Issued ahead, the GEMM keeps its place relative to
 * everything it touches, and the window's plan fuses silu into the product.
 *
 * What may go ahead (TCFUSE_AHEAD, on by default): device memsets (cuBLAS zeroes a 4-byte
 * semaphore before each GEMM), by their range; and cuBLAS's own GEMM kernels (names
 * beginning nvjet_, through cuLaunchKernel or cuLaunchKernelEx, not _ptsz), by the 8-byte
 * words of their parameters (the argument array's, or the `extra` buffer) at every 4-byte
 * offset, inside structures and TMA descriptors alike. The assumption, and the reason for the short list: such a
 * kernel reaches memory only through the pointers it is given, within the allocations they
 * point into. nvjet kernels carry their operands' addresses as they are
 * (tests/fixtures/trace-hf-llama-fuse.jsonl: the up projection's weight, input and output
 * in its one 1720-byte parameter); kernels that read pointers from device memory (grouped
 * and pointer-array batched GEMMs) would hide what they touch, and names with "group",
 * "ptr" or "array" in them stay boundaries (the kernel's direct_gemm, decided once from its
 * name: recognize/family.c).
 *
 * The test: for every decoded launch since the window's last flush, held or issued (the
 * planner models the work ahead as running before all of them: fuser.h), the bytes each
 * operand may touch (tcf_fuser_extents) and the allocation each lies in (the block's size
 * where tcfuse saw it allocated, else the driver's range). A kernel whose parameters hold
 * a word inside one of those allocations, or a memset whose range meets one of the
 * extents, is not let ahead; neither is one next to a decoded launch the planner cannot
 * reason about, or an allocation the driver cannot place. A word inside no such allocation
 * points to other memory, or to none: allocations do not overlap.
 *
 * Hand-over: the GEMM's output is often the very block silu read (freed right after silu
 * and handed by the pool to the next allocation of its size), and then the GEMM does touch
 * silu's bytes. When a refusal comes from such a block (freed in the window after the
 * decoded launch that touched it), that launch's kernel is learned; from then on a free
 * right after a launch of it that reads the block is held and kept from hand-over (event
 * dec TCF_DEC_KEEP) until the window's flush, so the GEMM's output gets a block of its own
 * (one more block of that size kept for reuse: exec/reuse.c).
 *
 * Cost: only where a launch would have ended a window with decoded work in it; a few
 * hundred ns per decoded launch since the last flush, and a driver query per operand not
 * at the start of a block tcfuse saw allocated. */
#include <string.h>

#include "exec/internal.h"

/* --- kernels whose inputs are kept from hand-over ------------------------------------ */
#define TCF_KEEP_SLOTS 256
static atomic_ullong tcf_keep[TCF_KEEP_SLOTS];

static void tcf_keep_add(uint64_t sig)
{
    if (tcf_sigset_add(tcf_keep, TCF_KEEP_SLOTS, sig))   /* nonzero: the free path looks */
        atomic_fetch_add_explicit(&tcf_xctr.ahead_learned, 1, memory_order_relaxed);
}

/* --- what the decoded work touches --------------------------------------------------- */
#define TCF_AHEAD_SPANS 128   /* extents looked at, at most; more refuses */

typedef struct {
    uint64_t beg, end;     /* the extent */
    uint64_t abeg, aend;   /* the allocation it lies in (0, 0 until asked) */
    uint32_t ev;           /* the decoded launch's event */
} tcf_span_t;

/* This thread's last look at a window: the extents of its decoded launches from `from`
 * up to event `upto`. A memset and the GEMM after it, or several GEMMs in a row, look at
 * the same launches: only the ones new since are read again. */
typedef struct {
    tcf_span_t s[TCF_AHEAD_SPANS];
    unsigned   n;
    const tcf_window_t *w;
    uint64_t   wid;
    uint32_t   from, upto;
    int        bad;           /* a launch that cannot be reasoned about, or too many */
} tcf_spans_t;

/* The extents of every decoded launch in w (locked) since its last flush, with no
 * allocation placed yet; -1 when one cannot be reasoned about or there are too many. */
static int tcf_spans_of(const tcf_window_t *w, tcf_spans_t *sp)
{
    if (sp->w != w || sp->wid != w->id || sp->from != w->exec_from || sp->upto > w->nev) {
        sp->w = w, sp->wid = w->id, sp->from = sp->upto = w->exec_from;
        sp->n = 0, sp->bad = 0;
    }
    for (uint32_t i = sp->upto; i < w->nev && !sp->bad; i++) {
        const tcf_event_t *e = &w->ev[i];
        if (e->kind != TCF_EV_LAUNCH || (e->dec != TCF_DEC_OP && e->dec != TCF_DEC_REDUCE))
            continue;
        tcf_item_t it;
        tcf_exec_item(w, i, &it);
        uint64_t beg[TCF_FUSER_EXTENTS], end[TCF_FUSER_EXTENTS];
        int n = tcf_fuser_extents(&it, beg, end);
        if (n < 0 || sp->n + (unsigned)n > TCF_AHEAD_SPANS) {
            sp->bad = 1;
            break;
        }
        for (int j = 0; j < n; j++)
            sp->s[sp->n++] = (tcf_span_t){ .beg = beg[j], .end = end[j], .ev = i };
    }
    sp->upto = w->nev;
    for (unsigned j = 0; j < sp->n; j++)   /* placed anew each time: blocks change hands */
        sp->s[j].abeg = sp->s[j].aend = 0;
    return sp->bad ? -1 : 0;
}

/* The allocation span s lies in: the block tcfuse saw allocated at its start, or one
 * freed in w since (a held free keeps its block's size), else the driver's range around
 * it. -1 when none knows it. */
static int tcf_span_alloc(const tcf_window_t *w, tcf_span_t *s)
{
    if (s->aend)
        return 0;
    uint64_t size = tcf_blocks_size(s->beg);
    if (size && s->end - s->beg <= size) {
        s->abeg = s->beg, s->aend = s->beg + size;
        return 0;
    }
    for (uint32_t j = s->ev + 1; j < w->nev; j++) {
        const tcf_event_t *f = &w->ev[j];
        if (f->kind == TCF_EV_FREE && f->u.m.size && f->u.m.ptr <= s->beg &&
            s->end <= f->u.m.ptr + f->u.m.size) {
            s->abeg = f->u.m.ptr, s->aend = f->u.m.ptr + f->u.m.size;
            return 0;
        }
    }
    CUdeviceptr start = 0;
    size_t len = 0;
    if (!tcf_drv.pointer_get_attribute ||
        tcf_drv.pointer_get_attribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                      (CUdeviceptr)s->beg) != CUDA_SUCCESS ||
        tcf_drv.pointer_get_attribute(&len, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                      (CUdeviceptr)s->beg) != CUDA_SUCCESS ||
        !len || start + len < s->end)
        return -1;
    atomic_fetch_add_explicit(&tcf_xctr.ahead_queries, 1, memory_order_relaxed);
    s->abeg = start, s->aend = start + len;
    return 0;
}

/* Whether span s's allocation was freed in w after s's launch: then a word of the work
 * that would go ahead points into a block handed over again, not into s's own data. */
static int tcf_span_handed(const tcf_window_t *w, const tcf_span_t *s)
{
    for (uint32_t j = s->ev + 1; j < w->nev; j++) {
        const tcf_event_t *f = &w->ev[j];
        if (f->kind == TCF_EV_FREE && f->u.m.ptr >= s->abeg && f->u.m.ptr < s->aend)
            return 1;
    }
    return 0;
}

/* The window of stream, locked, when work may go ahead of its decoded launches; NULL
 * (nothing locked) when it must follow them. Other streams' held work is issued first,
 * as for any other work. */
static tcf_window_t *tcf_ahead_window(CUstream stream)
{
    if (!tcf_cfg.ahead || !tcf_exec_holding())
        return NULL;
    tcf_window_t *w = tcf_window_for(stream, 0);
    if (!w || !__atomic_load_n(&w->ndec, __ATOMIC_RELAXED))
        return NULL;
    tcf_exec_flush_others(w);
    pthread_mutex_lock(&w->lock);
    if (!w->ndec) {
        pthread_mutex_unlock(&w->lock);
        return NULL;
    }
    return w;
}

static _Thread_local tcf_spans_t tcf_ahead_sp;

tcf_window_t *tcf_exec_ahead_range(CUstream stream, uint64_t dst, uint64_t bytes)
{
    tcf_window_t *w = tcf_ahead_window(stream);
    if (!w)
        return NULL;
    tcf_spans_t *sp = &tcf_ahead_sp;
    int ok = bytes && dst + bytes > dst && tcf_spans_of(w, sp) == 0;
    for (unsigned i = 0; ok && i < sp->n; i++)
        ok = dst >= sp->s[i].end || sp->s[i].beg >= dst + bytes;
    if (!ok) {
        atomic_fetch_add_explicit(&tcf_xctr.ahead_refused, 1, memory_order_relaxed);
        pthread_mutex_unlock(&w->lock);
        return NULL;
    }
    return w;
}

void tcf_exec_ahead_memset(tcf_window_t *w, const char *call, CUdeviceptr dst, unsigned value,
                           unsigned elem, size_t count, CUstream stream, CUresult rc)
{
    tcf_capture_memset_marked(w, call, dst, value, elem, count, stream, rc, TCF_DEC_AHEAD);
    atomic_fetch_add_explicit(&tcf_xctr.ahead_ops, 1, memory_order_relaxed);
    pthread_mutex_unlock(&w->lock);
}

/* The launch's parameter bytes as pieces (one per parameter, or the `extra` buffer);
 * the count, or -1 when they cannot be read. */
static int tcf_ahead_pieces(const tcf_kernel_t *k, const tcf_launch_t *l,
                            const uint8_t *piece[], uint32_t len[], int cap)
{
    if (l->params) {
        if (!k->param_known || k->nparams > (uint32_t)cap)
            return -1;
        for (uint32_t p = 0; p < k->nparams; p++)
            piece[p] = l->params[p], len[p] = k->size[p];
        return (int)k->nparams;
    }
    size_t size;
    const uint8_t *buf = tcf_launch_extra(l->extra, &size);
    if (!buf || !size || size > 32768)
        return -1;
    piece[0] = buf, len[0] = (uint32_t)size;
    return 1;
}

int tcf_exec_ahead_launch(tcf_kernel_t *k, const tcf_launch_t *l, const CUlaunchConfig *cfg,
                          CUresult *rc)
{
    /* cheapest first: every launch fuse mode does not decode passes here */
    if (!k->direct_gemm || !tcf_cfg.ahead ||
        (cfg ? !tcf_drv.launch_kernel_ex : !tcf_drv.launch_kernel))
        return 0;
    const uint8_t *piece[64];
    uint32_t len[64];
    int npiece = tcf_ahead_pieces(k, l, piece, len, 64);
    if (npiece < 0) {
        atomic_fetch_add_explicit(&tcf_xctr.ahead_unread, 1, memory_order_relaxed);
        return 0;
    }
    tcf_window_t *w = tcf_ahead_window(l->stream);
    if (!w)
        return 0;
    tcf_spans_t *sp = &tcf_ahead_sp;
    int ok = tcf_spans_of(w, sp) == 0;
    uint64_t lo = UINT64_MAX, hi = 0;   /* the allocations' hull: most words miss it */
    for (unsigned i = 0; ok && i < sp->n; i++) {
        tcf_span_t *s = &sp->s[i];
        for (unsigned j = 0; j < i && !s->aend; j++)   /* operands often share one */
            if (sp->s[j].abeg <= s->beg && s->end <= sp->s[j].aend)
                s->abeg = sp->s[j].abeg, s->aend = sp->s[j].aend;
        ok = tcf_span_alloc(w, s) == 0;
        lo = s->abeg < lo ? s->abeg : lo, hi = s->aend > hi ? s->aend : hi;
    }
    /* Each span the words meet: through a block handed over again (learnable), or not
     * (the work reads or writes the decoded work's data: it must follow). */
    int handed = 0, other = !ok;
    uint64_t met[4] = { 0 };   /* up to 256 spans met, by index */
    for (int p = 0; ok && !other && p < npiece; p++) {
        const uint8_t *b = piece[p];
        for (uint32_t o = 0; !other && b && o + 8 <= len[p]; o += 4) {
            uint64_t v;
            memcpy(&v, b + o, 8);
            if (v < lo || v >= hi)
                continue;
            for (unsigned i = 0; !other && i < sp->n; i++)
                if (v >= sp->s[i].abeg && v < sp->s[i].aend && !(met[i / 64] >> (i % 64) & 1)) {
                    met[i / 64] |= 1ull << (i % 64);
                    if (tcf_span_handed(w, &sp->s[i]))
                        handed = 1;
                    else
                        other = 1;
                }
        }
    }
    if (ok && !other && handed)   /* only hand-over stood in the way: keep it back next time */
        for (unsigned i = 0; i < sp->n; i++)
            if (met[i / 64] >> (i % 64) & 1)
                tcf_keep_add(tcf_fuse_start_sig(w->ev[sp->s[i].ev].u.l.k));
    ok = ok && !other && !handed;
    if (!ok) {
        atomic_fetch_add_explicit(&tcf_xctr.ahead_refused, 1, memory_order_relaxed);
        pthread_mutex_unlock(&w->lock);
        return 0;
    }
    CUresult r = cfg ? tcf_drv.launch_kernel_ex(cfg, (CUfunction)(uintptr_t)k->handle,
                                                l->params, l->extra)
                     : tcf_drv.launch_kernel((CUfunction)(uintptr_t)k->handle, l->grid[0],
                                             l->grid[1], l->grid[2], l->block[0], l->block[1],
                                             l->block[2], l->smem, l->stream, l->params,
                                             l->extra);
    tcf_capture_launch_marked(w, l, r, TCF_DEC_AHEAD);
    atomic_fetch_add_explicit(&tcf_xctr.ahead_launches, 1, memory_order_relaxed);
    pthread_mutex_unlock(&w->lock);
    *rc = r;
    return 1;
}

int tcf_exec_ahead_keeping(void)
{
    return atomic_load_explicit(&tcf_xctr.ahead_learned, memory_order_relaxed) != 0;
}

int tcf_exec_ahead_keeps(const tcf_window_t *w, uint64_t ptr, uint64_t size)
{
    if (!tcf_exec_ahead_keeping())
        return 0;
    /* the last decoded launch, a few events back at most (PyTorch frees a temporary right
     * after the op that last read it) */
    uint32_t stop = w->nev - w->exec_from > 4 ? w->nev - 4 : w->exec_from;
    for (uint32_t i = w->nev; i-- > stop;) {
        const tcf_event_t *e = &w->ev[i];
        if (e->kind != TCF_EV_LAUNCH)
            continue;
        if (e->dec != TCF_DEC_OP && e->dec != TCF_DEC_REDUCE)
            return 0;
        if (!tcf_sigset_has(tcf_keep, TCF_KEEP_SLOTS, tcf_fuse_start_sig(e->u.l.k)))
            return 0;
        tcf_item_t it;
        tcf_exec_item(w, i, &it);
        uint64_t beg[TCF_FUSER_EXTENTS], end[TCF_FUSER_EXTENTS];
        int n = tcf_fuser_extents(&it, beg, end);
        uint64_t hi = size ? ptr + size : ptr + 1;
        for (int j = 0; j < n; j++)
            if (beg[j] < hi && ptr < end[j])
                return 1;
        return 0;
    }
    return 0;
}

int tcf_exec_ahead_launch_ex(CUfunction f, const CUlaunchConfig *config, void **params,
                             void **extra, CUresult *rc, tcf_kernel_t **kout)
{
    if (!tcf_cfg.ahead || !config || !tcf_exec_holding())
        return 0;
    tcf_kernel_t *k = *kout = tcf_kernel_get(f);
    const tcf_launch_t l = { .via = TCF_VIA_LAUNCH_EX, .stream = config->hStream, .k = k,
                             .grid = { config->gridDimX, config->gridDimY, config->gridDimZ },
                             .block = { config->blockDimX, config->blockDimY,
                                        config->blockDimZ },
                             .smem = config->sharedMemBytes, .params = params,
                             .extra = extra, .attrs = config->attrs, .nattrs = config->numAttrs };
    return tcf_exec_ahead_launch(k, &l, config, rc);
}
