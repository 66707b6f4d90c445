/* Generated kernels of fuse mode: a table keyed by the hash of the generated source (the
 * source depends on structure only, see codegen.h), filled by one background worker that
 * compiles with NVRTC, loads, and verifies each kernel bitwise against the launches it
 * replaces before anything uses it. The application never waits for a compile: until an
 * entry is ready its windows run as issued. A kernel already compiled and verified by an
 * earlier process is loaded from the disk cache by the worker, or on first sight by a
 * thread whose window is held (TCFUSE_HOLD_ALL).
 * Failures mark the entry bad for the process, under a named reason.
 *
 * The worker's life: started when fuse mode starts (the process's first driver call, long
 * before its first kernel), it opens NVRTC (with tcf_fuse_stop as NVRTC's exit hook:
 * codegen/nvrtc.c says why) and the disk cache at once. Until that is done nothing is
 * held, so that tcf_fuse_stop is registered after NVRTC's destructors. At exit it is
 * parked, not joined, once it is out of any job: exit then ends it with the process. (So a
 * program that ends its main thread with pthread_exit and waits for every other thread
 * would wait for it too, as it would for any thread blocked for good.) */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cache/cache.h"
#include "capture/decode.h"
#include "capture/fuse.h"

enum { TCF_FK_PENDING = 0, TCF_FK_READY, TCF_FK_BAD };

typedef struct tcf_fkern {
    uint64_t          hash;
    atomic_int        state;
    CUcontext         ctx;
    CUfunction        fn;
    uint64_t          start;      /* tcf_fuse_start_sig of the group that asked first */
    char             *src;
    tcf_fjob_t       *job;        /* until the worker takes it */
    struct tcf_fkern *next;       /* bucket chain */
    struct tcf_fkern *qnext;      /* work queue */
    int               disk_looked;/* the worker asked the disk cache for it (tcf_q_take) */
    CUmodule          mod;        /* what fn came from; unloaded some time after eviction */
    uint64_t          used;       /* tcf_fk_tick when last found (lock held) */
    int               waiters;    /* TCFUSE_COMPILE_WAIT flushes waiting on it (lock held) */
} tcf_fkern_t;

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
#define TCF_SRC_MAX (64 * 1024)

static tcf_fkern_t *tcf_fk[TCF_FK_BUCKETS];
static unsigned tcf_nfk;          /* in the table now */
static unsigned tcf_nfk_made;     /* ever */
static uint64_t tcf_fk_tick;       /* advances with each new entry: recency, coarsely */

static tcf_gmemo_t *tcf_gmemo[TCF_FK_BUCKETS];
static unsigned tcf_ngmemo;
static pthread_mutex_t tcf_fk_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tcf_fk_cond = PTHREAD_COND_INITIALIZER;
static tcf_fkern_t *tcf_q_head, *tcf_q_tail;
static pthread_cond_t tcf_fk_idle = PTHREAD_COND_INITIALIZER;
static pthread_cond_t tcf_fk_done = PTHREAD_COND_INITIALIZER;  /* a job finished */
static int tcf_worker_started, tcf_worker_stop, tcf_worker_busy;  /* under tcf_fk_lock */
static int tcf_worker_arch;  /* the worker's: the architecture of its last job's context */
static atomic_int tcf_worker_warm;  /* NVRTC and the cache were opened (or found absent) */
static atomic_int tcf_have_nvrtc, tcf_have_cache;

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
static void tcf_retired_unload(void)
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
        free(r);
    }
    pthread_mutex_lock(&tcf_fk_lock);
}

/* Named outcomes, printed with the stats. */
#define TCF_FK_COUNTERS(X) X(compiled) X(disk_hits) X(verified) X(verify_mismatch) \
    X(verify_unable) X(compile_failed) X(load_failed) X(codegen_failed) X(other_context) \
    X(table_full) X(kernels_checked) X(kernel_mismatch) X(code_unknown) X(evicted)
static struct {
#define TCF_FK_FIELD(n) atomic_ulong n;
    TCF_FK_COUNTERS(TCF_FK_FIELD)
} tcf_fkc;

static int tcf_arch_of(CUcontext ctx)
{
    CUdevice dev;
    int major = 0, minor = 0;
    (void)ctx;
    if (!tcf_drv.ctx_get_device || !tcf_drv.device_get_attribute ||
        tcf_drv.ctx_get_device(&dev) != CUDA_SUCCESS ||
        tcf_drv.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) ||
        tcf_drv.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
        return 0;
    return major * 10 + minor;
}

/* The worker's first act. */
static void tcf_worker_open(void)
{
    char err[256];
    tcf_nvrtc_on_exit(tcf_fuse_stop);
    if (tcf_nvrtc_open(tcf_cfg.nvrtc[0] ? tcf_cfg.nvrtc : NULL, err, sizeof err) == 0)
        atomic_store(&tcf_have_nvrtc, 1);
    else
        tcf_log(TCF_LOG_WARN, "fuse mode: no NVRTC (%s): nothing will be fused", err);
    if (tcf_cache_open(tcf_cfg.cache_dir[0] ? tcf_cfg.cache_dir : NULL) == 0)
        atomic_store(&tcf_have_cache, 1);
    atomic_store(&tcf_worker_warm, 1);
}

static CUfunction tcf_load_mod(const void *cubin, CUfunction *fn, CUmodule *mod)
{
    if (tcf_drv.module_load_data(mod, cubin) != CUDA_SUCCESS)
        return NULL;
    if (tcf_drv.module_get_function(fn, *mod, TCF_FUSED_KERNEL) != CUDA_SUCCESS) {
        if (tcf_drv.module_unload)
            tcf_drv.module_unload(*mod);
        return NULL;
    }
    return *fn;
}


/* The verdict the disk cache holds for a source (a group's, or a kernel's own check):
 * 1 verified, 0 failed, -1 none. */
static int tcf_verdict_get(const char *src, int arch)
{
    void *v = NULL;
    size_t vlen = 0;
    int r = -1;
    uint64_t vk = tcf_cache_key(TCF_CACHE_VERDICT, src, tcf_nvrtc_version(), arch);
    if (tcf_cache_get(vk, TCF_CACHE_VERDICT, &v, &vlen) == 0 && vlen == 2)
        r = !memcmp(v, "ok", 2) ? 1 : !memcmp(v, "no", 2) ? 0 : -1;
    free(v);
    return r;
}

static void tcf_verdict_put(const char *src, int arch, int ok)
{
    tcf_cache_put(tcf_cache_key(TCF_CACHE_VERDICT, src, tcf_nvrtc_version(), arch),
                  TCF_CACHE_VERDICT, ok ? "ok" : "no", 2);
}

static int tcf_verdict_ok(const char *src, int arch)
{
    return tcf_verdict_get(src, arch) == 1;
}


/* The cubin for src: from the disk cache, else compiled (and put there). 0, or -1. */
static int tcf_cubin_for(const char *src, int arch, int cache, void **cubin, size_t *clen,
                         int *from_disk)
{
    char log[2048];
    uint64_t ck = tcf_cache_key(TCF_CACHE_CUBIN, src, tcf_nvrtc_version(), arch);
    *from_disk = 0;
    if (cache && tcf_cache_get(ck, TCF_CACHE_CUBIN, cubin, clen) == 0) {
        *from_disk = 1;
        return 0;
    }
    if (!arch || tcf_nvrtc_compile(src, arch, cubin, clen, log, sizeof log) != 0) {
        atomic_fetch_add(&tcf_fkc.compile_failed, 1);
        tcf_log(TCF_LOG_INFO, "fuse: compile failed: %.300s", log);
        return -1;
    }
    atomic_fetch_add(&tcf_fkc.compiled, 1);
    if (cache)
        tcf_cache_put(ck, TCF_CACHE_CUBIN, *cubin, *clen);
    return 0;
}

/* The key of a kernel's own verdict, in vsrc: its op's generated source (in src), the
 * kernel's name, and the identity of the code it came from (images.c), so that a kernel
 * changed under the same name meets no old verdict. -1 when the op cannot be generated
 * alone; 0 when the code is unknown (then no verdict is read or kept); 1 otherwise. */
static int tcf_kernel_vsrc(const tcf_orig_t *o, tcf_kernel_t *k, tcf_fgroup_t *fg, char *src,
                           char *vsrc)
{
    if (tcf_fuser_single(&o->op, fg) != 0 || tcf_codegen_source(&fg->g, src, TCF_SRC_MAX) < 0)
        return -1;
    uint64_t code = tcf_kernel_code(k);
    snprintf(vsrc, TCF_SRC_MAX + 600, "%s\n// decodes %.500s\n// from code %016llx\n", src,
             k->name, (unsigned long long)code);
    return code != 0;
}

/* Checks one original's decoding before any group with its kernel is used: the generated
 * kernel of its op alone against the original on scratch edge values. A mismatch
 * disables the kernel for the process (its launches are never held or planned again)
 * and is reported. Verdicts, good and bad, are kept on disk (tcf_kernel_vsrc). *s is the
 * worker's stream, created here when first needed. 1 good, 0 bad, -1 could not check. */
static int tcf_kernel_check(const tcf_fjob_t *job, uint32_t j, int arch, int cache, CUstream *s)
{
    const tcf_orig_t *o = &job->orig[j];
    tcf_kernel_t *k = tcf_kernel_get(o->f);
    int kv = atomic_load(&k->verdict);
    if (kv != TCF_KV_UNKNOWN)
        return kv == TCF_KV_OK;
    tcf_fjob_t *one = calloc(1, sizeof *one);
    tcf_fgroup_t *fg = malloc(sizeof *fg);
    char *src = malloc(TCF_SRC_MAX), *vsrc = malloc(TCF_SRC_MAX + 600);
    void *cubin = NULL;
    size_t clen = 0;
    int rc = -1, from_disk, keep;
    char why[200] = "";
    CUfunction fn;
    CUmodule mod = NULL;  /* the op's kernel serves this check only: unloaded after it */
    if (!one || !fg || !src || !vsrc)
        goto out;
    if ((keep = tcf_kernel_vsrc(o, k, fg, src, vsrc)) < 0) {
        snprintf(why, sizeof why, "its op cannot be generated alone");
        goto out;
    }
    if (!keep)  /* its verdict cannot be kept: checked anew in every process */
        atomic_fetch_add(&tcf_fkc.code_unknown, 1);
    keep &= cache;
    if (keep && (rc = tcf_verdict_get(vsrc, arch)) >= 0)
        goto out;
    if (tcf_cubin_for(src, arch, cache, &cubin, &clen, &from_disk) != 0 ||
        !tcf_load_mod(cubin, &fn, &mod)) {
        mod = NULL;
        snprintf(why, sizeof why, "its generated kernel would not compile or load");
        goto out;
    }
    if (!*s && tcf_drv.stream_create(s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        *s = NULL;
        snprintf(why, sizeof why, "no stream to check it on");
        goto out;
    }
    one->ctx = job->ctx, one->g = fg->g, one->args = fg->args, one->n = fg->n;
    one->norig = 1;
    one->orig[0] = *o;
    atomic_fetch_add(&tcf_fkc.kernels_checked, 1);
    int r = tcf_fuse_verify(one, fn, *s, why, sizeof why);  /* synchronizes its stream */
    rc = r == 0 ? 1 : r > 0 ? 0 : -1;
    if (keep && rc >= 0)
        tcf_verdict_put(vsrc, arch, rc);
out:
    if (mod && tcf_drv.module_unload)
        tcf_drv.module_unload(mod);
    if (rc >= 0) {
        atomic_store(&k->verdict, rc ? TCF_KV_OK : TCF_KV_BAD);
        if (!rc) {
            atomic_store(&k->fuse_state, TCF_FUSE_NEVER);
            atomic_fetch_add(&tcf_fkc.kernel_mismatch, 1);
            tcf_log(TCF_LOG_INFO, "fuse: kernel %.200s does not compute what it decodes to "
                    "(%s/%s, vec %u): never fused in this process%s%s", k->name,
                    tcf_decode_kind_name(o->op.kind), tcf_decode_dtype_name(o->op.out_dt),
                    fg->g.vec, why[0] ? ": " : " (verdict from the disk cache)", why);
        }
    } else {
        tcf_log(TCF_LOG_INFO, "fuse: kernel %.200s could not be checked: %s", k->name,
                why[0] ? why : "out of memory");
    }
    free(cubin);
    free(vsrc);
    free(src);
    free(fg);
    free(one);
    return rc;
}

/* Whether every original of a job is known to decode right, in this process or by a
 * verdict on disk for the same code; runs nothing. */
static int tcf_kernels_known_good(const tcf_fjob_t *job, int arch)
{
    tcf_fgroup_t *fg = NULL;
    char *src = NULL, *vsrc = NULL;
    int good = 1;
    for (uint32_t j = 0; j < job->norig && good; j++) {
        tcf_kernel_t *k = tcf_kernel_get(job->orig[j].f);
        int kv = atomic_load(&k->verdict);
        if (kv != TCF_KV_UNKNOWN) {
            good = kv == TCF_KV_OK;
            continue;
        }
        if (!fg && (!(fg = malloc(sizeof *fg)) || !(src = malloc(TCF_SRC_MAX)) ||
                    !(vsrc = malloc(TCF_SRC_MAX + 600))))
            good = 0;
        else if (tcf_kernel_vsrc(&job->orig[j], k, fg, src, vsrc) <= 0 ||
                 tcf_verdict_get(vsrc, arch) != 1)
            good = 0;
        else
            atomic_store(&k->verdict, TCF_KV_OK);
    }
    free(vsrc);
    free(src);
    free(fg);
    return good;
}

/* The disk cache knows this source as compiled and verified, and each of its originals as
 * decoded right: load it now. Until the worker has opened NVRTC (whose version is part of
 * the key) and the cache, the worker looks. */
static int tcf_from_disk(tcf_fkern_t *e, const tcf_fjob_t *job, int arch)
{
    if (!atomic_load(&tcf_worker_warm) || !atomic_load(&tcf_have_nvrtc) ||
        !atomic_load(&tcf_have_cache))
        return 0;
    void *cubin = NULL;
    size_t clen = 0;
    uint64_t ck = tcf_cache_key(TCF_CACHE_CUBIN, e->src, tcf_nvrtc_version(), arch);
    int ok = tcf_verdict_ok(e->src, arch) && tcf_kernels_known_good(job, arch) &&
             tcf_cache_get(ck, TCF_CACHE_CUBIN, &cubin, &clen) == 0 &&
             tcf_load_mod(cubin, &e->fn, &e->mod);
    free(cubin);
    if (ok)
        atomic_fetch_add(&tcf_fkc.disk_hits, 1);
    return ok;
}

static void tcf_work(tcf_fkern_t *e)
{
    tcf_fjob_t *job = e->job;
    int state = TCF_FK_BAD;
    void *cubin = NULL;
    size_t clen = 0;
    CUstream s = NULL;
    int from_disk = 0;
    if (tcf_drv.ctx_set_current(job->ctx) != CUDA_SUCCESS || !atomic_load(&tcf_have_nvrtc))
        goto out;
    int arch = tcf_arch_of(job->ctx);
    int cache = atomic_load(&tcf_have_cache);
    tcf_worker_arch = arch;
    if (tcf_cubin_for(e->src, arch, cache, &cubin, &clen, &from_disk) != 0)
        goto out;
    if (!tcf_load_mod(cubin, &e->fn, &e->mod)) {
        atomic_fetch_add(&tcf_fkc.load_failed, 1);
        goto out;
    }
    /* Each kernel's decoding alone first (a verdict on disk for the same code stands): a
     * wrong one is disabled by itself, and the chains around it fuse without it. */
    for (uint32_t j = 0; j < job->norig; j++) {
        if (__atomic_load_n(&tcf_worker_stop, __ATOMIC_RELAXED))
            goto out;  /* exiting: the job in hand ends at the next step */
        int kv = tcf_kernel_check(job, j, arch, cache, &s);
        if (kv <= 0) {
            atomic_fetch_add(kv == 0 ? &tcf_fkc.verify_mismatch : &tcf_fkc.verify_unable, 1);
            goto out;
        }
    }
    if (from_disk && tcf_verdict_ok(e->src, arch)) {  /* verified by an earlier process */
        atomic_fetch_add(&tcf_fkc.disk_hits, 1);
        state = TCF_FK_READY;
        goto out;
    }
    if (!s && tcf_drv.stream_create(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        s = NULL;
        atomic_fetch_add(&tcf_fkc.verify_unable, 1);
        goto out;
    }
    char why[200] = "";
    int v = tcf_fuse_verify(job, e->fn, s, why, sizeof why);
    if (v == 0) {
        state = TCF_FK_READY;
        atomic_fetch_add(&tcf_fkc.verified, 1);
        if (cache)
            tcf_verdict_put(e->src, arch, 1);
    } else {
        atomic_fetch_add(v > 0 ? &tcf_fkc.verify_mismatch : &tcf_fkc.verify_unable, 1);
        char ops[256];
        size_t len = 0;
        ops[0] = '\0';
        for (uint8_t k = 0; k < job->g.nops && len < sizeof ops; k++)
            len += (size_t)snprintf(ops + len, sizeof ops - len, "%s%s/%s", k ? " " : "",
                                    tcf_decode_kind_name(job->g.ops[k].kind),
                                    tcf_decode_dtype_name(job->g.ops[k].out_dt));
        tcf_log(TCF_LOG_INFO, "fuse: a generated kernel was not used (%s; vec %u): %s", ops,
                job->g.vec, why);
    }
out:
    if (s)
        tcf_drv.stream_destroy(s);
    free(cubin);
    free(job);
    e->job = NULL;
    uint64_t start = e->start;  /* once not pending, e may be evicted by another thread */
    atomic_store_explicit(&e->state, state, memory_order_release);
    if (state == TCF_FK_READY)  /* the chain that asked is held from its next occurrence */
        tcf_fuse_start_add(start);
}

/* The next job (lock held; dropped while the disk is read). First one the disk cache can
 * serve, a verdict on disk for its source: it is ready in under a millisecond, where a
 * compile ahead of it takes a hundred. It matters at a process's start, when first-launch
 * stalls cut its first chains short (idle closes) into pieces that no earlier process
 * compiled, while the whole chain's kernel waits on disk behind their compiles. Each entry
 * is looked up once, and only while there is a choice. */
static tcf_fkern_t *tcf_q_take(int arch)
{
    enum { TCF_Q_LOOK = 16 };
    tcf_fkern_t *cand[TCF_Q_LOOK], *pick = NULL;
    unsigned nc = 0;
    if (arch && tcf_q_head->qnext && atomic_load(&tcf_have_cache))
        for (tcf_fkern_t *e = tcf_q_head; e && nc < TCF_Q_LOOK; e = e->qnext)
            if (!e->disk_looked) {
                e->disk_looked = 1;
                cand[nc++] = e;
            }
    if (nc) {
        pthread_mutex_unlock(&tcf_fk_lock);  /* only the worker takes from the queue */
        for (unsigned i = 0; i < nc && !pick; i++)
            if (tcf_verdict_ok(cand[i]->src, arch))
                pick = cand[i];
        pthread_mutex_lock(&tcf_fk_lock);
    }
    if (!pick)
        pick = tcf_q_head;
    tcf_fkern_t **at = &tcf_q_head, *prev = NULL;
    while (*at != pick)
        prev = *at, at = &(*at)->qnext;
    *at = pick->qnext;
    if (tcf_q_tail == pick)
        tcf_q_tail = prev;
    pick->qnext = NULL;
    return pick;
}

static void *tcf_worker_main(void *arg)
{
    (void)arg;
    tcf_worker_open();
    pthread_mutex_lock(&tcf_fk_lock);
    for (;;) {
        tcf_worker_busy = 0;
        pthread_cond_broadcast(&tcf_fk_idle);
        while (!tcf_q_head || tcf_worker_stop)  /* stopped: parked for good */
            pthread_cond_wait(&tcf_fk_cond, &tcf_fk_lock);
        tcf_worker_busy = 1;
        tcf_fkern_t *e = tcf_q_take(tcf_worker_arch);
        if (tcf_worker_stop)
            continue;  /* exiting: queued jobs are dropped */
        pthread_mutex_unlock(&tcf_fk_lock);
        tcf_work(e);
        pthread_mutex_lock(&tcf_fk_lock);
        pthread_cond_broadcast(&tcf_fk_done);
        if (tcf_retired && !tcf_worker_stop)
            tcf_retired_unload();
    }
    return NULL;
}

int tcf_fkern_absent(void)
{
    return atomic_load_explicit(&tcf_worker_warm, memory_order_acquire) &&
           !atomic_load_explicit(&tcf_have_nvrtc, memory_order_relaxed);
}

int tcf_fkern_start(void)
{
    pthread_attr_t attr;
    int rc = -1;
    pthread_mutex_lock(&tcf_fk_lock);
    if (tcf_worker_started) {
        rc = 0;
    } else if (pthread_attr_init(&attr) == 0) {
        pthread_t t;
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        tcf_worker_busy = 1;  /* until NVRTC is open */
        if (pthread_create(&t, &attr, tcf_worker_main, NULL) == 0) {
            tcf_worker_started = 1;
            rc = 0;
        } else {
            tcf_worker_busy = 0;
        }
        pthread_attr_destroy(&attr);
    }
    pthread_mutex_unlock(&tcf_fk_lock);
    return rc;
}

static tcf_fjob_t *tcf_job_of(const tcf_fgroup_t *G, const tcf_window_t *w,
                              const uint16_t *ev_of, CUcontext ctx)
{
    tcf_fjob_t *job = calloc(1, sizeof *job);
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
        o->op = w->ops[ev_of[G->items[j]]];
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
        !(m = malloc(sizeof *m)))
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
            free(m);
            tcf_ngmemo--;
        }
    tcf_retired_t *r = victim->mod ? malloc(sizeof *r) : NULL;
    if (r) {  /* without memory to note it, the module stays loaded: a leak, not a fault */
        r->mod = victim->mod;
        clock_gettime(CLOCK_MONOTONIC, &r->at);
        r->next = tcf_retired;
        tcf_retired = r;
    }
    free(victim->src);
    free(victim);
    atomic_fetch_add(&tcf_fkc.evicted, 1);
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
    if (!src && !(src = malloc(TCF_SRC_MAX)))
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
    if (tcf_nfk >= (unsigned)tcf_cfg.kernels_max || !(e = calloc(1, sizeof *e)) ||
        !(e->src = strdup(src))) {
        if (e)
            free(e);
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
    pthread_mutex_unlock(&tcf_fk_lock);

    e->job = tcf_job_of(G, w, ev_of, ctx);
    if (!e->job) {
        atomic_store(&e->state, TCF_FK_BAD);
        return NULL;
    }
    /* Seen before, by an earlier process: no compile, no verification, usable now. */
    int arch = learn ? 0 : tcf_arch_of(ctx);
    if (arch && tcf_from_disk(e, e->job, arch)) {
        free(e->job);
        e->job = NULL;
        CUfunction fn = e->fn;  /* ready, e may be evicted by another thread at once */
        atomic_store_explicit(&e->state, TCF_FK_READY, memory_order_release);
        return fn;
    }
    pthread_mutex_lock(&tcf_fk_lock);
    if (tcf_q_tail)
        tcf_q_tail->qnext = e;
    else
        tcf_q_head = e;
    tcf_q_tail = e;
    pthread_cond_signal(&tcf_fk_cond);
    CUfunction fn = NULL;
    if (tcf_cfg.compile_wait) {  /* TCFUSE_COMPILE_WAIT: the window waits for the worker */
        e->waiters++;
        while (atomic_load(&e->state) == TCF_FK_PENDING && !tcf_worker_stop)
            pthread_cond_wait(&tcf_fk_done, &tcf_fk_lock);
        e->waiters--;
        fn = tcf_fkern_ready(e, ctx);
    }
    pthread_mutex_unlock(&tcf_fk_lock);
    return fn;
}

/* At exit: the driver and the application's libraries are torn down after us, so the
 * worker must not be inside a driver call or a compile then. Waits for the job in hand (a
 * compile is at most a second or so) and parks the worker; queued jobs are dropped. */
void tcf_fkern_stop(void)
{
    pthread_mutex_lock(&tcf_fk_lock);
    tcf_worker_stop = 1;
    pthread_cond_broadcast(&tcf_fk_done);  /* a window waiting for a compile gives up */
    while (tcf_worker_started && tcf_worker_busy)
        pthread_cond_wait(&tcf_fk_idle, &tcf_fk_lock);
    pthread_mutex_unlock(&tcf_fk_lock);
}

void tcf_fuse_refusals(char *line, size_t cap);

void tcf_fuse_stats_print(void)
{
    unsigned long long held = atomic_load(&tcf_ctr.held), passed = atomic_load(&tcf_ctr.passed),
                       all = atomic_load(&tcf_ctr.launches);
    tcf_out("  decoded       %llu of %llu launches (%.1f%%): %llu held, %llu issued at once%s",
            held + passed, all, all ? 100.0 * (double)(held + passed) / (double)all : 0.0, held,
            passed, tcf_cfg.hold_all ? " (TCFUSE_HOLD_ALL)" : "");
    tcf_out("  held          %llu windows from a known start; %llu launches, %llu frees; "
            "%llu flushes; %llu chains planned as issued",
            (unsigned long long)atomic_load(&tcf_ctr.holds), held,
            (unsigned long long)atomic_load(&tcf_ctr.held_frees),
            (unsigned long long)atomic_load(&tcf_ctr.flushes),
            (unsigned long long)atomic_load(&tcf_ctr.learned));
    tcf_out("  fused         %llu groups; %llu launches removed, %llu stores dropped, "
            "%llu MiB of traffic avoided",
            (unsigned long long)atomic_load(&tcf_ctr.groups_fused),
            (unsigned long long)atomic_load(&tcf_ctr.launches_removed),
            (unsigned long long)atomic_load(&tcf_ctr.stores_dropped),
            (unsigned long long)(atomic_load(&tcf_ctr.bytes_avoided) >> 20));
    tcf_out("  kernels       %u generated: %lu compiled, %lu from the disk cache, %lu verified; "
            "%lu decoded kernels checked alone, %lu disabled",
            tcf_nfk_made, atomic_load(&tcf_fkc.compiled), atomic_load(&tcf_fkc.disk_hits),
            atomic_load(&tcf_fkc.verified), atomic_load(&tcf_fkc.kernels_checked),
            atomic_load(&tcf_fkc.kernel_mismatch));
    char line[512];
    size_t len = 0;
    line[0] = '\0';
#define TCF_FK_PRINT(nm)                                                                   \
    if (atomic_load(&tcf_fkc.nm) && strcmp(#nm, "compiled") && strcmp(#nm, "disk_hits") && \
        strcmp(#nm, "verified") && strcmp(#nm, "kernels_checked") && len < sizeof line)    \
        len += (size_t)snprintf(line + len, sizeof line - len, "%s%s %lu", len ? ", " : "", \
                                #nm, atomic_load(&tcf_fkc.nm));
    TCF_FK_COUNTERS(TCF_FK_PRINT)
    unsigned long long hf = atomic_load(&tcf_ctr.held_failed), ff = atomic_load(&tcf_ctr.fused_failed);
    if (hf && len < sizeof line)
        len += (size_t)snprintf(line + len, sizeof line - len, "%sheld_failed %llu", len ? ", " : "", hf);
    if (ff && len < sizeof line)
        len += (size_t)snprintf(line + len, sizeof line - len, "%sfused_failed %llu", len ? ", " : "", ff);
    tcf_out("  fallbacks     %s", len ? line : "none");
    tcf_fuse_refusals(line, sizeof line);
    tcf_out("  not held      %s", line[0] ? line : "none");
}
