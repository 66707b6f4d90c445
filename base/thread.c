/* tcfuse's own threads (fuse mode's worker, graph mode's worker and launcher): detached,
 * never joined, and born with every signal blocked, so that the program's handlers (one
 * of which may call exit, which then runs the exit handlers on that thread) run on the
 * program's own threads. TCFUSE_FAULT's thread site refuses one. */
#include "base/base.h"
#include "base/fault.h"

int tcf_thread_spawn(void *(*fn)(void *))
{
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return -1;
    int rc = -1;
    pthread_t t;
    sigset_t all, old;
    sigfillset(&all);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (!tcf_fault(TCF_FAULT_THREAD) && pthread_create(&t, &attr, fn, NULL) == 0)
        rc = 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return rc;
}
