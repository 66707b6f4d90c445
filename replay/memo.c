/* Full mode's memo per key: what a replayed window needs to be bound without planning
 * (tcf_exec_steps_rebind). It holds the steps of the key's last planned window, with their
 * groups (the plan every later window is bound from), and for each fused step the
 * arguments earlier windows bound it to, each with the launch bytes of the step's span it
 * was bound from and those launches decoded (the planner's items).
 *
 * Why more than the last window's: a key recurs within an iteration (each layer of a model
 * issues the same launches over its own weights and activations), so the window before
 * with the same key is another layer's, whose pointers all differ, and every group would be
 * re-bound every time (measured on HF Llama: 2238 groups re-bound against 4 kept in 561
 * windows, binding as costly as planning). The same layer's window an iteration earlier
 * carried the same bytes: with up to TCF_RMEMO_ARGS arguments per step, a model of that many
 * layers binds every step from the memo once an iteration has run.
 *
 * An argument is taken for the very bytes it was bound from, or for launches that decode to
 * the very items (PyTorch leaves bytes its kernels never read as its stack had them, so on
 * HF Llama most launches' bytes differ in every iteration while their operands repeat:
 * tests/unit/test_decode_iters.c). The bytes are kept and compared with those bytes zeroed
 * (exec's tcf_exec_reads: padding, an OffsetCalculator's entries past dims, a cat's slots
 * past grid.y), so that such launches are found by their bytes, without the decodes and
 * the items' hashing the items take; the items remain for what the marks do not cover.
 * Both under the same plan and kernel table (the memo is
 * dropped when either changes), in a window that neither frees nor allocates: so it is
 * what binding them again would give (the span's items are everything the group's
 * argument is made of, and the key fixes the kernels around it). Bytes and items are
 * compared in full; a hash only picks the candidate. All memos together hold at most
 * TCFUSE_REPLAY_MEMO bytes.
 *
 * Threads: a key's windows close one at a time (the key is its stream's), under that
 * stream's window lock. */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "exec/steps.h"
#include "replay/internal.h"

/* Arguments kept per fused step: more than the layers of the models measured (GPT-2 and
 * BERT-base 12, the Llama-style ones 8); past it the least recently used goes. */
#define TCF_RMEMO_ARGS 32

/* One argument of a fused step, with the span's launch bytes and items it was bound from. */
typedef struct {
    uint64_t       h, ih;      /* the span's bytes hashed; its items hashed */
    uint64_t       used;       /* the memo's tick when last taken or made */
    uint32_t       slen, nit;  /* the span's bytes; its items (0: none kept) */
    uint32_t       cap;        /* the room at b */
    uint8_t       *b;          /* the span's bytes, the argument's (arg.bytes), the items
                                * (tcf_rarg_items) */
    tcf_step_arg_t arg;
} tcf_rarg_t;

/* Where a's items lie in its block: after the span's and the argument's bytes, aligned. */
static uint32_t tcf_rarg_items_at(uint32_t slen, uint32_t alen)
{
    return (slen + alen + 15u) & ~15u;
}

static tcf_item_t *tcf_rarg_items(const tcf_rarg_t *a)
{
    return (tcf_item_t *)(void *)(a->b + tcf_rarg_items_at(a->slen, a->arg.len));
}

/* Bytes all memos hold (their argument tables and arguments). */
static atomic_ullong tcf_rmemo_held;

typedef struct {
    uint32_t   n;
    tcf_rarg_t a[TCF_RMEMO_ARGS];
} tcf_rargs_t;

struct tcf_rmemo {
    tcf_steps_t           steps;   /* the key's last plan, its groups with it */
    tcf_rargs_t         **args;    /* per step: its arguments (NULL: not fused) */
    /* this window's, from tcf_rmemo_bind to tcf_rmemo_remember, per step: */
    const tcf_step_arg_t **have;   /* the argument found, or NULL */
    uint64_t             *h;       /* the span's hash */
    uint32_t             *slen;    /* the span's launch bytes */
    uint32_t              nstep;   /* room in args, have, h, slen */
    tcf_item_t           *sit;     /* a span's items, for comparing (room for nsit) */
    uint32_t              nsit;
    uint32_t              nev;     /* events of the windows bound */
    uint64_t              epoch;   /* the kernel table's, when planned */
    uint64_t              tick;
};

static void tcf_rmemo_args_clear(struct tcf_rmemo *m)
{
    for (uint32_t j = 0; j < m->nstep; j++) {
        if (!m->args[j])
            continue;
        uint64_t held = sizeof *m->args[j];
        for (uint32_t k = 0; k < m->args[j]->n; k++) {
            held += m->args[j]->a[k].cap;
            free(m->args[j]->a[k].b);
        }
        free(m->args[j]);
        m->args[j] = NULL;
        atomic_fetch_sub_explicit(&tcf_rmemo_held, held, memory_order_relaxed);
    }
}

void tcf_rmemo_forget(tcf_rplan_t *p)
{
    struct tcf_rmemo *m = p->memo;
    if (!m)
        return;
    tcf_rmemo_args_clear(m);
    tcf_steps_free(&m->steps);
    free(m->args);
    free(m->have);
    free(m->h);
    free(m->slen);
    free(m->sit);
    free(m);
    p->memo = NULL;
}

/* Launch bytes the memo zeroes where their kernel never reads, at most (a decodable
 * PyTorch kernel's are at most 3440). */
#define TCF_RMEMO_CANON 4096

/* The mask of launch event e's bytes src (tcf_exec_reads), or NULL when the memo keeps them
 * as they are: nothing unread, longer than TCF_RMEMO_CANON, or TCFUSE_REPLAY_UNREAD 0 (read
 * once: the same for every window). */
static const uint8_t *tcf_rmemo_reads(const tcf_event_t *e, const uint8_t *src)
{
    return tcf_cfg.replay_unread && e->u.l.pbytes <= TCF_RMEMO_CANON
               ? tcf_exec_reads(e->u.l.k, src, e->u.l.pbytes, e->u.l.grid) : NULL;
}

/* Launch event e's bytes in w as the memo keeps them: copied to dst (room for
 * TCF_RMEMO_CANON), with the bytes its kernel never reads zeroed; dst, or its bytes in the
 * window as they are (tcf_rmemo_reads NULL). */
static const uint8_t *tcf_rmemo_canon(const tcf_window_t *w, const tcf_event_t *e, uint8_t *dst)
{
    const uint8_t *src = w->arena + e->u.l.poff, *rd = tcf_rmemo_reads(e, src);
    if (!rd)
        return src;
    tcf_exec_reads_zero(dst, src, rd, e->u.l.pbytes);
    return dst;
}

/* The launch bytes of step t's span in w, as the memo keeps them (tcf_rmemo_canon): hashed
 * into *h, their length into *len. */
static void tcf_rmemo_span_hash(const tcf_window_t *w, const tcf_step_t *t, uint64_t *h,
                                uint32_t *len)
{
    static _Thread_local uint8_t buf[TCF_RMEMO_CANON];
    uint64_t x = 0;
    uint32_t n = 0;
    for (uint32_t i = t->first; i <= t->ev; i++) {
        const tcf_event_t *e = &w->ev[i];
        if (e->kind != TCF_EV_LAUNCH)
            continue;
        x = XXH3_64bits_withSeed(tcf_rmemo_canon(w, e, buf), e->u.l.pbytes, x);
        n += e->u.l.pbytes;
    }
    *h = x, *len = n;
}

/* Whether step t's span in w carries the bytes at b (as the memo keeps them: b's unread
 * bytes are zero, so the window's need not be zeroed to compare). */
static int tcf_rmemo_span_is(const tcf_window_t *w, const tcf_step_t *t, const uint8_t *b)
{
    for (uint32_t i = t->first; i <= t->ev; i++) {
        const tcf_event_t *e = &w->ev[i];
        if (e->kind != TCF_EV_LAUNCH)
            continue;
        const uint8_t *src = w->arena + e->u.l.poff, *rd = tcf_rmemo_reads(e, src);
        if (rd ? !tcf_exec_reads_same(b, src, rd, e->u.l.pbytes)
               : memcmp(b, src, e->u.l.pbytes) != 0)
            return 0;
        b += e->u.l.pbytes;
    }
    return 1;
}

/* Step t's span in w as the planner's items, into m's room for them: how many (0 when they
 * cannot be had), hashed into *ih. */
static uint32_t tcf_rmemo_span_items(struct tcf_rmemo *m, tcf_window_t *w, const tcf_step_t *t,
                                     uint64_t *ih)
{
    uint32_t len = t->ev < w->nev && t->first <= t->ev ? t->ev - t->first + 1 : 0;
    if (!len)
        return 0;
    if (len > m->nsit) {
        tcf_item_t *it = tcf_realloc(m->sit, len * sizeof *it);
        if (!it)
            return 0;
        m->sit = it, m->nsit = len;
    }
    uint32_t n = tcf_exec_steps_span_items(w, t, m->sit, m->nsit);
    *ih = n ? XXH3_64bits(m->sit, n * sizeof *m->sit) : 0;
    return n;
}

/* n more bytes in the memos' budget (TCFUSE_REPLAY_MEMO): 1 taken, 0 not (counted). */
static int tcf_rmemo_take(uint64_t n)
{
    /* TCFUSE_REPLAY_MEMO: a model's keys need a few MiB (GPT-2 and the Llama forwards:
     * 10-15 keys of about 4 groups, each with up to twice its layers' arguments of a few
     * KB); a server whose shapes make a thousand keys must not grow without bound. */
    if (atomic_fetch_add_explicit(&tcf_rmemo_held, n, memory_order_relaxed) + n <=
        (uint64_t)tcf_cfg.replay_memo)
        return 1;
    atomic_fetch_sub_explicit(&tcf_rmemo_held, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&tcf_rctr.full_memo_unkept, 1, memory_order_relaxed);
    return 0;
}

/* Step j's argument in st (bound for w, whose span hashed to h over slen bytes) kept in m,
 * with the span's bytes and items, in a free slot or the least recently used one. Out of
 * memory, or past the memos' budget: not kept. */
static void tcf_rmemo_keep(struct tcf_rmemo *m, uint32_t j, tcf_window_t *w,
                           const tcf_steps_t *st, uint64_t h, uint32_t slen)
{
    const tcf_step_t *s = &st->step[j];
    uint64_t ih = 0;   /* its items too, for a window whose bytes differ where no kernel looks */
    uint32_t nit = tcf_rmemo_span_items(m, w, s, &ih);
    tcf_rargs_t *as = m->args[j];
    if (!as) {
        if (!tcf_rmemo_take(sizeof *as))
            return;
        if (!(as = m->args[j] = tcf_calloc(1, sizeof *as))) {
            atomic_fetch_sub_explicit(&tcf_rmemo_held, sizeof *as, memory_order_relaxed);
            return;
        }
    }
    int fresh = as->n < TCF_RMEMO_ARGS;
    tcf_rarg_t *a = &as->a[fresh ? as->n : 0];
    for (uint32_t k = 1; !fresh && k < as->n; k++)
        if (as->a[k].used < a->used)
            a = &as->a[k];
    uint32_t need = tcf_rarg_items_at(slen, s->pbytes) + nit * (uint32_t)sizeof(tcf_item_t);
    if (need > a->cap) {
        if (!tcf_rmemo_take(need - a->cap))
            return;
        uint8_t *b = tcf_realloc(a->b, need);
        if (!b) {
            atomic_fetch_sub_explicit(&tcf_rmemo_held, need - a->cap, memory_order_relaxed);
            return;
        }
        a->b = b, a->cap = need;
    }
    if (fresh)
        as->n++;
    else
        atomic_fetch_add_explicit(&tcf_rctr.full_memo_dropped, 1, memory_order_relaxed);
    uint8_t *b = a->b;
    for (uint32_t i = s->first; i <= s->ev; i++) {
        const tcf_event_t *e = &w->ev[i];
        if (e->kind != TCF_EV_LAUNCH)
            continue;
        if (tcf_rmemo_canon(w, e, b) != b)   /* nothing zeroed: the bytes as they are */
            memcpy(b, w->arena + e->u.l.poff, e->u.l.pbytes);
        b += e->u.l.pbytes;
    }
    memcpy(b, st->bytes + s->boff, s->pbytes);
    a->h = h, a->slen = slen, a->used = ++m->tick;
    a->arg.bytes = b, a->arg.len = s->pbytes;
    memcpy(tcf_rarg_items(a), m->sit, nit * sizeof *m->sit);
    a->nit = nit, a->ih = ih;
    memcpy(a->arg.grid, s->grid, sizeof a->arg.grid);
    memcpy(a->arg.block, s->block, sizeof a->arg.block);
}

uint64_t tcf_rmemo_bytes(void)
{
    return atomic_load_explicit(&tcf_rmemo_held, memory_order_relaxed);
}

/* m's arrays for n steps, every argument dropped. 0, or -1 out of memory. */
static int tcf_rmemo_room(struct tcf_rmemo *m, uint32_t n)
{
    tcf_rmemo_args_clear(m);
    if (n <= m->nstep) {
        if (m->have)   /* they pointed into args */
            memset(m->have, 0, m->nstep * sizeof *m->have);
        return 0;
    }
    free(m->args), free(m->have), free(m->h), free(m->slen);
    m->args = tcf_calloc(n, sizeof *m->args);
    m->have = tcf_calloc(n, sizeof *m->have);
    m->h = tcf_calloc(n, sizeof *m->h);
    m->slen = tcf_calloc(n, sizeof *m->slen);
    m->nstep = n;
    if (m->args && m->have && m->h && m->slen)
        return 0;
    m->nstep = 0;   /* args' entries all NULL: nothing for args_clear to walk */
    return -1;
}

void tcf_rmemo_remember(tcf_rplan_t *p, tcf_window_t *w, tcf_steps_t *st,
                        uint64_t epoch, int bound)
{
    if (!tcf_cfg.replay_rebind || !st->final || !st->fused) {
        tcf_rmemo_forget(p);
        return;
    }
    /* A window that frees or allocates is refused a bind (tcf_exec_steps_rebind): a bound
     * one has none; a planned one with some leaves its key no memo. */
    for (uint32_t i = 0; !bound && i < w->nev; i++)
        if (w->ev[i].kind == TCF_EV_FREE || w->ev[i].kind == TCF_EV_ALLOC) {
            tcf_rmemo_forget(p);
            return;
        }
    struct tcf_rmemo *m = p->memo;
    if (bound && m) {   /* the memo's plan: keep what was bound anew */
        for (uint32_t j = 0; j < st->n && j < m->nstep; j++)
            if (st->step[j].fused && !m->have[j])
                tcf_rmemo_keep(m, j, w, st, m->h[j], m->slen[j]);
        return;
    }
    /* planned: a new plan to bind from, its arguments this window's */
    if (!m && !(m = p->memo = tcf_calloc(1, sizeof *m)))
        return;
    if (tcf_rmemo_room(m, st->n) != 0) {
        tcf_rmemo_forget(p);
        return;
    }
    /* st's steps and groups to the memo; the memo's old buffers to st, for the next window
     * on this thread (no copy) */
    tcf_steps_t t = m->steps;
    m->steps = *st, *st = t;
    m->nev = w->nev, m->epoch = epoch, m->tick = 0;
    for (uint32_t j = 0; j < m->steps.n; j++)
        if (m->steps.step[j].fused) {
            tcf_rmemo_span_hash(w, &m->steps.step[j], &m->h[j], &m->slen[j]);
            tcf_rmemo_keep(m, j, w, &m->steps, m->h[j], m->slen[j]);
        }
}

int tcf_rmemo_bind(tcf_rplan_t *p, tcf_window_t *w, tcf_steps_t *st, uint64_t epoch,
                   uint32_t *kept)
{
    struct tcf_rmemo *m = p->memo;
    *kept = 0;
    if (!m || !tcf_cfg.replay_rebind || m->epoch != epoch || m->nev != w->nev ||
        m->steps.n > m->nstep)
        return 0;
    uint64_t t0 = tcf_cfg.stats ? tcf_now_ns() : 0;
    const tcf_steps_t *was = &m->steps;
    for (uint32_t j = 0; j < was->n; j++) {
        const tcf_step_t *t = &was->step[j];
        m->have[j] = NULL;
        if (!t->fused || t->ev >= w->nev || t->first > t->ev)
            continue;   /* exec refuses a span past the window */
        tcf_rmemo_span_hash(w, t, &m->h[j], &m->slen[j]);
        tcf_rargs_t *as = m->args[j];
        tcf_rarg_t *got = NULL;
        for (uint32_t k = 0; as && k < as->n && !got; k++) {
            tcf_rarg_t *a = &as->a[k];
            if (a->h == m->h[j] && a->slen == m->slen[j] && tcf_rmemo_span_is(w, t, a->b))
                got = a;
        }
        /* Not these bytes: maybe these items, when the bytes differ only where no kernel
         * looks (PyTorch leaves them as the stack had them: every iteration's differ). */
        uint64_t ih = 0;
        uint32_t nit = !got && as ? tcf_rmemo_span_items(m, w, t, &ih) : 0;
        for (uint32_t k = 0; nit && k < as->n && !got; k++) {
            tcf_rarg_t *a = &as->a[k];
            if (a->nit == nit && a->ih == ih && !memcmp(tcf_rarg_items(a), m->sit, nit * sizeof *m->sit))
                got = a;
        }
        if (got && nit)   /* found by its items: what the marks do not cover */
            atomic_fetch_add_explicit(&tcf_rctr.full_kept_items, 1, memory_order_relaxed);
        if (got) {
            m->have[j] = &got->arg;
            got->used = ++m->tick;
            ++*kept;
        }
    }
    int ok = tcf_exec_steps_rebind(w, was, m->have, st) == 0;
    if (t0)
        atomic_fetch_add_explicit(&tcf_rctr.full_rebind_ns, tcf_now_ns() - t0,
                                  memory_order_relaxed);
    if (!ok)
        atomic_fetch_add_explicit(&tcf_rctr.full_rebind_refused, 1, memory_order_relaxed);
    return ok;
}
