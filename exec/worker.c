/* Fuse mode's background worker: one thread that compiles generated kernels with NVRTC
 * (or takes them from the disk cache), loads them, and has each checked (verdict.c,
 * verify.c) before anything uses it. Jobs come from the kernel table (table.c) through a
 * queue under the table's lock.
 *
 * The worker's life: made at the program's first kernel launch, it opens NVRTC (with
 * tcf_exec_stop as NVRTC's exit hook: codegen/nvrtc.c says why) and the disk cache at
 * once, so that a warm cache serves the first chains. Not before: a program that forks
 * before it uses CUDA (PyTorch's import, then os.fork) must leave its child a process
 * without NVRTC loaded, or the child's driver refuses to initialize (seen on the H100
 * with CUDA 13's NVRTC), and without a thread of ours (Python warns about fork in a
 * threaded process); a process that never launches a kernel pays for neither. (A child
 * forked after CUDA started cannot use CUDA anyway.) At exit it is parked, not joined,
 * once it is out of any job: exit then ends it with the process. (So a program that ends
 * its main thread with pthread_exit and waits for every other thread would wait for it
 * too, as it would for any thread blocked for good.) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/cache.h"
#include "exec/internal.h"

static pthread_cond_t tcf_fk_cond = PTHREAD_COND_INITIALIZER;
static tcf_fkern_t *tcf_q_head, *tcf_q_tail;
static pthread_cond_t tcf_fk_idle = PTHREAD_COND_INITIALIZER;
static pthread_cond_t tcf_fk_done = PTHREAD_COND_INITIALIZER;  /* a job finished */
static int tcf_worker_started, tcf_worker_stop, tcf_worker_busy;  /* under tcf_fk_lock */
static int tcf_worker_arch;  /* the worker's: the architecture of its last job's context */
static atomic_int tcf_worker_warm;  /* NVRTC and the cache were opened (or found absent) */
static atomic_int tcf_have_nvrtc, tcf_have_cache;
static atomic_int tcf_worker_none;  /* no thread could be made: nothing is held */
static atomic_int tcf_worker_begun; /* tcf_fkern_begin made it, or tried */
#define TCF_STOP_WAIT_S 5   /* at exit, the longest wait for the job in hand */

int tcf_arch_of(CUcontext ctx)
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
    tcf_nvrtc_on_exit(tcf_exec_stop);
    if (tcf_nvrtc_open(tcf_cfg.nvrtc[0] ? tcf_cfg.nvrtc : NULL, err, sizeof err) == 0)
        atomic_store(&tcf_have_nvrtc, 1);
    else
        tcf_log(TCF_LOG_WARN, "fuse mode: no NVRTC (%s): nothing will be fused", err);
    if (tcf_cache_open(tcf_cfg.cache_dir[0] ? tcf_cfg.cache_dir : NULL) == 0)
        atomic_store(&tcf_have_cache, 1);
    atomic_store(&tcf_worker_warm, 1);
}

CUfunction tcf_load_mod(const void *cubin, CUfunction *fn, CUmodule *mod)
{
    if (tcf_fault(TCF_FAULT_MODULE_LOAD) || tcf_drv.module_load_data(mod, cubin) != CUDA_SUCCESS)
        return NULL;
    /* an elementwise group's kernel, or a row group's (gen_rows.c: the reduction's) */
    if (tcf_drv.module_get_function(fn, *mod, TCF_FUSED_KERNEL) != CUDA_SUCCESS &&
        tcf_drv.module_get_function(fn, *mod, TCF_REDUCE_KERNEL) != CUDA_SUCCESS) {
        if (tcf_drv.module_unload)
            tcf_drv.module_unload(*mod);
        return NULL;
    }
    return *fn;
}


int tcf_cubin_for(const char *src, int arch, int cache, void **cubin, size_t *clen,
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

static void tcf_work(tcf_fkern_t *e)
{
    tcf_fjob_t *job = e->job;
    int state = TCF_FK_BAD;
    void *cubin = NULL;
    size_t clen = 0;
    CUstream s = NULL;
    int from_disk = 0;
    if (tcf_drv.ctx_set_current(job->ctx) != CUDA_SUCCESS || !atomic_load(&tcf_have_nvrtc)) {
        atomic_fetch_add(atomic_load(&tcf_have_nvrtc) ? &tcf_fkc.no_context : &tcf_fkc.no_nvrtc, 1);
        goto out;
    }
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
        tcf_unable_note("a group", "no stream to check it on");
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
        if (v < 0)
            tcf_unable_note(ops, why);
    }
out:
    if (s)
        tcf_drv.stream_destroy(s);
    free(cubin);
    free(job);
    e->job = NULL;
    uint64_t start = e->start;  /* once not pending, e may be evicted by another thread */
    atomic_store_explicit(&e->state, state, memory_order_release);
    tcf_fk_changed();  /* chains planned in vain are planned again (vain.c) */
    if (state == TCF_FK_READY)  /* the chain that asked is held from its next occurrence */
        tcf_fuse_start_add(start);
}

/* The next job (lock held; dropped while the disk is read). First one the disk cache can
 * serve, a verdict on disk for its source: it is ready in under a millisecond, where a
 * compile ahead of it takes a hundred. It matters at a process's start, when groups no
 * earlier process met are queued and a kernel on disk would wait behind their compiles.
 * Each entry
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
        if (!tcf_worker_stop)  /* evicted kernels' modules, a few seconds on */
            tcf_retired_unload();
    }
    return NULL;
}

int tcf_fkern_absent(void)
{
    if (atomic_load_explicit(&tcf_worker_none, memory_order_relaxed))
        return TCF_ABSENT_WORKER;
    return atomic_load_explicit(&tcf_worker_warm, memory_order_acquire) &&
                   !atomic_load_explicit(&tcf_have_nvrtc, memory_order_relaxed)
               ? TCF_ABSENT_NVRTC
               : 0;
}

/* Makes the worker (tcf_fk_lock held). 0, or -1 when no thread could be made. */
static int tcf_worker_spawn(void)
{
    int rc = -1;
    tcf_worker_busy = 1;  /* until NVRTC is open */
    if (tcf_thread_spawn(tcf_worker_main) == 0) {
        tcf_worker_started = 1;
        rc = 0;
    } else {
        tcf_worker_busy = 0;
    }
    if (rc) {  /* nothing is held from here on: every launch runs as issued */
        atomic_store(&tcf_worker_none, 1);
        atomic_fetch_add(&tcf_fkc.no_worker, 1);
    }
    return rc;
}

void tcf_fkern_begin(void)
{
    if (atomic_load_explicit(&tcf_worker_begun, memory_order_relaxed))
        return;
    pthread_mutex_lock(&tcf_fk_lock);
    if (!atomic_load(&tcf_worker_begun)) {
        tcf_worker_spawn();
        atomic_store(&tcf_worker_begun, 1);
    }
    pthread_mutex_unlock(&tcf_fk_lock);
}

void tcf_worker_enqueue(tcf_fkern_t *e)
{
    if (!tcf_worker_started) {
        atomic_store(&e->state, TCF_FK_BAD);  /* nobody would ever take it */
        tcf_fk_changed();
        return;
    }
    if (tcf_q_tail)
        tcf_q_tail->qnext = e;
    else
        tcf_q_head = e;
    tcf_q_tail = e;
    pthread_cond_signal(&tcf_fk_cond);
}

void tcf_worker_wait(tcf_fkern_t *e)
{
    e->waiters++;
    while (atomic_load(&e->state) == TCF_FK_PENDING && !tcf_worker_stop)
        pthread_cond_wait(&tcf_fk_done, &tcf_fk_lock);
    e->waiters--;
}

int tcf_worker_disk_ready(void)
{
    return atomic_load(&tcf_worker_warm) && atomic_load(&tcf_have_nvrtc) &&
           atomic_load(&tcf_have_cache);
}

/* At exit: the driver and the application's libraries are torn down after us, so the
 * worker must not be inside a driver call or a compile then. Waits for the job in hand (a
 * compile is at most a second or so) and parks the worker; queued jobs are dropped. */
void tcf_fkern_stop(void)
{
    if (!tcf_lock_at_exit(&tcf_fk_lock)) {  /* exit interrupted the lock's holder */
        __atomic_store_n(&tcf_worker_stop, 1, __ATOMIC_RELAXED);  /* the job's next step */
        return;
    }
    tcf_worker_stop = 1;
    pthread_cond_broadcast(&tcf_fk_done);  /* a window waiting for a compile gives up */
    /* The job in hand may wait on a lock the interrupted thread holds: wait for it as long
     * as a compile may take, not for ever. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += TCF_STOP_WAIT_S;
    while (tcf_worker_started && tcf_worker_busy &&
           pthread_cond_timedwait(&tcf_fk_idle, &tcf_fk_lock, &until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&tcf_fk_lock);
}

