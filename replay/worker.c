/* Graph mode's worker: one thread that instantiates graphs (4-6 ms for 1000 nodes on the
 * H100), so that the application's thread never waits for one; until a key's graph is
 * ready its windows run as issued. Jobs are plans whose nodes and bytes were filled when
 * their key was learned; the queue lives under the plan table's lock.
 *
 * It is made for the first graph to instantiate, not when graph mode starts: a process
 * that forks before its first kernel has no thread of tcfuse's (Python warns about fork
 * in a threaded process). When none can be made, graphs are instantiated on the thread
 * that closes the window, as with TCFUSE_REPLAY_SYNC (counted: "no worker").
 *
 * It takes no job while the application captures a stream of its own (an instantiation
 * inside a global-mode capture can invalidate it), and at exit it finishes the job in
 * hand and is parked, never joined, like fuse mode's worker. */
#include <stdlib.h>
#include <time.h>

#include "replay/internal.h"

static pthread_cond_t tcf_rw_cond = PTHREAD_COND_INITIALIZER;  /* a job, or stop */
static pthread_cond_t tcf_rw_idle = PTHREAD_COND_INITIALIZER;  /* out of a job */
static tcf_rplan_t *tcf_rw_head, *tcf_rw_tail;
static int tcf_rw_started, tcf_rw_stop, tcf_rw_busy;           /* under tcf_rplan_lock */
static int tcf_rw_failed;                                      /* no thread could be made */

void tcf_rworker_build(tcf_rplan_t *p)
{
    CUcontext prev = NULL;
    int reason = TCF_RG_create_failed, ok = -1;
    int have_prev = tcf_drv.ctx_get_current && tcf_drv.ctx_get_current(&prev) == CUDA_SUCCESS;
    if (tcf_drv.ctx_set_current &&
        tcf_drv.ctx_set_current((CUcontext)(uintptr_t)p->ctx) == CUDA_SUCCESS)
        ok = tcf_rgraph_build(p, &reason);
    if (have_prev && (uint64_t)(uintptr_t)prev != p->ctx)
        tcf_drv.ctx_set_current(prev);
    pthread_mutex_lock(&tcf_rplan_lock);
    if (ok == 0) {
        atomic_fetch_add(p->built_sync ? &tcf_rctr.built_sync : &tcf_rctr.built_bg, 1);
        tcf_rplan_ready(p);
    } else {
        tcf_rplan_give_up(p, reason);
    }
    pthread_mutex_unlock(&tcf_rplan_lock);
}

static void *tcf_rworker_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&tcf_rplan_lock);
    for (;;) {
        tcf_rw_busy = 0;
        pthread_cond_broadcast(&tcf_rw_idle);
        while (!tcf_rw_head || tcf_rw_stop || tcf_rcapture_active()) {
            if (tcf_rcapture_active() && !tcf_rw_stop) {  /* look again when it may be over */
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 20 * 1000 * 1000;
                if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
                pthread_cond_timedwait(&tcf_rw_cond, &tcf_rplan_lock, &ts);
            } else {
                pthread_cond_wait(&tcf_rw_cond, &tcf_rplan_lock);  /* stopped: parked */
            }
        }
        tcf_rplan_t *p = tcf_rw_head;
        tcf_rw_head = p->qnext;
        if (!tcf_rw_head)
            tcf_rw_tail = NULL;
        p->qnext = NULL;
        tcf_rw_busy = 1;
        pthread_mutex_unlock(&tcf_rplan_lock);
        tcf_rworker_build(p);
        tcf_rplan_retired_destroy(0);
        pthread_mutex_lock(&tcf_rplan_lock);
    }
    return NULL;
}

/* Makes the thread (tcf_rplan_lock held). 0, or -1 when none could be made. */
static int tcf_rworker_spawn(void)
{
    if (tcf_thread_spawn(tcf_rworker_main) != 0)
        return -1;
    tcf_rw_started = 1;
    return 0;
}

int tcf_rworker_enqueue(tcf_rplan_t *p)
{
    if (!tcf_rw_started && (tcf_rw_failed || (tcf_rw_failed = tcf_rworker_spawn() != 0))) {
        atomic_fetch_add(&tcf_rctr.no_worker, 1);
        return -1;
    }
    p->qnext = NULL;
    if (tcf_rw_tail)
        tcf_rw_tail->qnext = p;
    else
        tcf_rw_head = p;
    tcf_rw_tail = p;
    pthread_cond_signal(&tcf_rw_cond);
    return 0;
}

void tcf_rworker_idle(void)
{
    pthread_mutex_lock(&tcf_rplan_lock);
    while (tcf_rw_started && tcf_rw_busy)
        pthread_cond_wait(&tcf_rw_idle, &tcf_rplan_lock);
    pthread_mutex_unlock(&tcf_rplan_lock);
}

void tcf_rworker_stop(void)
{
    pthread_mutex_lock(&tcf_rplan_lock);
    tcf_rw_stop = 1;
    tcf_rw_head = tcf_rw_tail = NULL;   /* queued jobs are dropped */
    while (tcf_rw_started && tcf_rw_busy)
        pthread_cond_wait(&tcf_rw_idle, &tcf_rplan_lock);
    pthread_mutex_unlock(&tcf_rplan_lock);
}
