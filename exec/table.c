/* Generated kernels of fuse mode, by the hash of their generated source (the source
 * depends on structure only, see codegen.h), with a memo in front keyed by the group's
 * structure. A new source makes an entry and queues its job for the worker (worker.c);
 * the application never waits for it: until an entry is ready its windows run as issued.
 * A kernel already compiled and verified by an earlier process is loaded from the disk
 * cache by the worker, or on first sight by a thread whose window is held. The table keeps
 * at most TCFUSE_KERNELS_MAX entries; past it the least recently found goes, and its module
 * is unloaded by the worker a few seconds later. Failures mark an entry bad for the
 * process, under a named reason. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "exec/internal.h"

/* Group structure -> kernel: spares a flush generating and hashing the source of a group it
 * has seen before. A miss only costs that work (the entry is found by source). */
typedef struct tcf_gmemo {
    uint64_t          ghash;
    tcf_group_t       g;
    tcf_fkern_t      *e;
    struct tcf_gmemo *next;
} tcf_gmemo_t;

#define TCF_FK_BUCKETS 1024
#define TCF_GMEMO_PER_KERNEL 4    /* group structures remembered per kernel kept */
#define TCF_RETIRE_S 5            /* an evicted kernel's module outlives any flush using it */

static tcf_fkern_t *tcf_fk[TCF_FK_BUCKETS];
static unsigned tcf_nfk;          /* in the table now */
static unsigned tcf_nfk_made;     /* ever */
static uint64_t tcf_fk_tick;       /* advances with each new entry: recency, coarsely */

static tcf_gmemo_t *tcf_gmemo[TCF_FK_BUCKETS];
static unsigned tcf_ngmemo;
pthread_mutex_t tcf_fk_lock = PTHREAD_MUTEX_INITIALIZER;

/* Modules of evicted kernels: a flush may have found the function just before; the worker
 * unloads them TCF_RETIRE_S later (a launch of an unloaded one would fail and fall back to
 * the original launches anyway). Under tcf_fk_lock. */
typedef struct tcf_retired {
    CUmodule            mod;
    struct timespec     at;
    struct tcf_retired *next;
} tcf_retired_t;
static tcf_retired_t *tcf_retired;

/* The worker unloads modules retired over TCF_RETIRE_S ago (lock held; dropped for the
 * driver calls). */
void tcf_retired_unload(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    tcf_retired_t *old = NULL;
    for (tcf_retired_t **l = &tcf_retired; *l;) {
        tcf_retired_t *r = *l;
        if (now.tv_sec - r->at.tv_sec <= TCF_RETIRE_S) {
            l = &r->next;
            continue;
        }
        *l = r->next;
        r->next = old;
        old = r;
    }
    if (!old)
        return;
    pthread_mutex_unlock(&tcf_fk_lock);
    while (old) {
        tcf_retired_t *r = old;
        old = r->next;
        if (tcf_drv.module_unload)
            tcf_drv.module_unload(r->mod);
        tcf_free(r);
    }
    pthread_mutex_lock(&tcf_fk_lock);
}

static tcf_fjob_t *tcf_job_of(const tcf_fgroup_t *G, const tcf_window_t *w,
                              const uint16_t *ev_of, CUcontext ctx)
{
    tcf_fjob_t *job = tcf_calloc(1, sizeof *job);
    if (!job)
        return NULL;
    job->ctx = ctx, job->g = G->g, job->args = G->args, job->n = G->n;
    for (uint8_t j = 0; j < G->nitems; j++) {
        const tcf_event_t *ev = &w->ev[ev_of[G->items[j]]];
        const tcf_kernel_t *k = ev->u.l.k;
        tcf_orig_t *o = &job->orig[job->norig++];
        o->f = (CUfunction)(uintptr_t)k->handle;
        memcpy(o->grid, ev->u.l.grid, sizeof o->grid);
        memcpy(o->block, ev->u.l.block, sizeof o->block);
        o->smem = ev->u.l.smem;
        o->nparams = k->nparams;
        o->pbytes = ev->u.l.pbytes;
        memcpy(o->off, k->off, k->nparams * sizeof *o->off);
        memcpy(o->size, k->size, k->nparams * sizeof *o->size);
        memcpy(o->params, w->arena + ev->u.l.poff, ev->u.l.pbytes);
        if (ev->dec == TCF_DEC_REDUCE) {   /* as the group saw it (fuser.h) */
            o->is_red = 1;
            o->red = w->ops[ev_of[G->items[j]]].red;
            if (tcf_fuser_reduce_op(&o->red, &o->op)) {
                tcf_free(job);
                return NULL;
            }
        } else {
            o->op = w->ops[ev_of[G->items[j]]].op;
        }
    }
    return job;
}

/* The kernel entry's answer to one window (lock held). */
static CUfunction tcf_fkern_ready(tcf_fkern_t *e, CUcontext ctx)
{
    e->used = tcf_fk_tick;
    if (atomic_load_explicit(&e->state, memory_order_acquire) != TCF_FK_READY)
        return NULL;
    if (e->ctx == ctx)
        return e->fn;
    atomic_fetch_add(&tcf_fkc.other_context, 1);
    return NULL;
}

static void tcf_gmemo_add(uint64_t gh, const tcf_group_t *g, tcf_fkern_t *e)  /* lock held */
{
    tcf_gmemo_t *m;
    if (tcf_ngmemo >= TCF_GMEMO_PER_KERNEL * (unsigned)tcf_cfg.kernels_max ||
        !(m = tcf_malloc(sizeof *m)))
        return;
    m->ghash = gh, m->g = *g, m->e = e;
    m->next = tcf_gmemo[gh % TCF_FK_BUCKETS];
    tcf_gmemo[gh % TCF_FK_BUCKETS] = m;
    tcf_ngmemo++;
}

/* At the cap (TCFUSE_KERNELS_MAX), the entry found least recently goes (lock held): out of
 * the table and the memo, its module retired. One in work (pending) or waited on stays.
 * A chain that comes back makes a new entry, from the disk cache when it is there. */
static void tcf_fk_evict(void)
{
    tcf_fkern_t *victim = NULL, **vlink = NULL;
    for (unsigned b = 0; b < TCF_FK_BUCKETS; b++)
        for (tcf_fkern_t **l = &tcf_fk[b]; *l; l = &(*l)->next) {
            tcf_fkern_t *e = *l;
            if (atomic_load(&e->state) == TCF_FK_PENDING || e->waiters)
                continue;
            if (!victim || e->used < victim->used)
                victim = e, vlink = l;
        }
    if (!victim)
        return;
    *vlink = victim->next;
    tcf_nfk--;
    for (unsigned b = 0; b < TCF_FK_BUCKETS; b++)
        for (tcf_gmemo_t **l = &tcf_gmemo[b]; *l;) {
            tcf_gmemo_t *m = *l;
            if (m->e != victim) {
                l = &m->next;
                continue;
            }
            *l = m->next;
            tcf_free(m);
            tcf_ngmemo--;
        }
    tcf_retired_t *r = victim->mod ? tcf_malloc(sizeof *r) : NULL;
    if (r) {  /* without memory to note it, the module stays loaded: a leak, not a fault */
        r->mod = victim->mod;
        clock_gettime(CLOCK_MONOTONIC, &r->at);
        r->next = tcf_retired;
        tcf_retired = r;
    }
    tcf_free(victim->src);
    tcf_free(victim);
    atomic_fetch_add(&tcf_fkc.evicted, 1);
    tcf_fk_changed();
}

CUfunction tcf_fkern_get(const tcf_fgroup_t *G, const tcf_window_t *w, const uint16_t *ev_of,
                         CUcontext ctx, int learn)
{
    uint64_t gh = XXH3_64bits(&G->g, sizeof G->g);
    pthread_mutex_lock(&tcf_fk_lock);
    for (tcf_gmemo_t *m = tcf_gmemo[gh % TCF_FK_BUCKETS]; m; m = m->next)
        if (m->ghash == gh && !memcmp(&m->g, &G->g, sizeof G->g)) {
            CUfunction fn = tcf_fkern_ready(m->e, ctx);
            pthread_mutex_unlock(&tcf_fk_lock);
            return fn;
        }
    pthread_mutex_unlock(&tcf_fk_lock);

    static _Thread_local char *src;
    if (!src && !(src = tcf_malloc(TCF_SRC_MAX)))
        return NULL;
    int len = tcf_codegen_source(&G->g, src, TCF_SRC_MAX);
    if (len < 0) {
        atomic_fetch_add(&tcf_fkc.codegen_failed, 1);
        return NULL;
    }
    uint64_t h = XXH3_64bits(src, (size_t)len);
    pthread_mutex_lock(&tcf_fk_lock);
    tcf_fkern_t *e = tcf_fk[h % TCF_FK_BUCKETS];
    while (e && e->hash != h)
        e = e->next;
    if (e) {
        tcf_gmemo_add(gh, &G->g, e);
        CUfunction fn = tcf_fkern_ready(e, ctx);
        pthread_mutex_unlock(&tcf_fk_lock);
        return fn;
    }
    if (tcf_nfk >= (unsigned)tcf_cfg.kernels_max)
        tcf_fk_evict();
    if (tcf_nfk >= (unsigned)tcf_cfg.kernels_max || !(e = tcf_calloc(1, sizeof *e)) ||
        !(e->src = tcf_strdup(src))) {
        if (e)
            tcf_free(e);
        atomic_fetch_add(&tcf_fkc.table_full, 1);
        pthread_mutex_unlock(&tcf_fk_lock);
        return NULL;
    }
    e->hash = h, e->ctx = ctx;
    e->used = ++tcf_fk_tick;
    tcf_nfk_made++;
    e->start = tcf_fuse_start_sig(w->ev[ev_of[G->items[0]]].u.l.k);
    e->next = tcf_fk[h % TCF_FK_BUCKETS];
    tcf_fk[h % TCF_FK_BUCKETS] = e;
    tcf_nfk++;
    tcf_gmemo_add(gh, &G->g, e);
    tcf_fk_changed();
    pthread_mutex_unlock(&tcf_fk_lock);

    e->job = tcf_job_of(G, w, ev_of, ctx);
    if (!e->job) {
        atomic_store(&e->state, TCF_FK_BAD);
        tcf_fk_changed();
        return NULL;
    }
    /* Seen before, by an earlier process: no compile, no verification, usable now. */
    int arch = learn ? 0 : tcf_arch_of(ctx);
    uint64_t t0 = arch ? tcf_now_ns() : 0;
    int got = arch && tcf_from_disk(e, e->job, arch);
    if (arch)
        atomic_fetch_add(&tcf_xctr.disk_load_ns, tcf_now_ns() - t0);
    if (got) {
        tcf_free(e->job);
        e->job = NULL;
        CUfunction fn = e->fn;  /* ready, e may be evicted by another thread at once */
        atomic_store_explicit(&e->state, TCF_FK_READY, memory_order_release);
        tcf_fk_changed();
        return fn;
    }
    pthread_mutex_lock(&tcf_fk_lock);
    tcf_worker_enqueue(e);
    CUfunction fn = NULL;
    if (tcf_cfg.compile_wait) {  /* TCFUSE_COMPILE_WAIT: the window waits for the worker */
        tcf_worker_wait(e);
        fn = tcf_fkern_ready(e, ctx);
    }
    pthread_mutex_unlock(&tcf_fk_lock);
    return fn;
}


unsigned tcf_fkern_made(void)  /* for the stats, at exit */
{
    int locked = tcf_lock_at_exit(&tcf_fk_lock);
    unsigned n = __atomic_load_n(&tcf_nfk_made, __ATOMIC_RELAXED);
    if (locked)
        pthread_mutex_unlock(&tcf_fk_lock);
    return n;
}

/* Whether group G's kernel is settled for ctx (full mode, steps.c): ready, or bad, or
 * made in another context, or never to be made (its source failed, the table is full):
 * planning the group again gives the same answer. 0: its compile or verification is
 * still to come. Asked after tcf_fkern_get returned NULL, which put it in the memo. */
int tcf_fkern_settled(const tcf_fgroup_t *G, CUcontext ctx)
{
    (void)ctx;
    uint64_t gh = XXH3_64bits(&G->g, sizeof G->g);
    int settled = 1;
    pthread_mutex_lock(&tcf_fk_lock);
    for (tcf_gmemo_t *m = tcf_gmemo[gh % TCF_FK_BUCKETS]; m; m = m->next)
        if (m->ghash == gh && !memcmp(&m->g, &G->g, sizeof G->g)) {
            settled = atomic_load(&m->e->state) != TCF_FK_PENDING;
            break;
        }
    pthread_mutex_unlock(&tcf_fk_lock);
    return settled;
}
