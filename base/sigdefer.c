/* Signals deferred around work that takes the C library's or the driver's locks (base.h).
 * A program may exit from a signal handler: exit handlers then run on the interrupted
 * thread, and the C library's own (the atexit list's blocks, dlclose) and cudart's take
 * malloc's and cudart's locks. If the signal landed inside malloc, free or a driver call
 * that holds such a lock, exit waits on it for ever. Seen: the stand-in's fusechain in
 * fuse mode hung 1 run in a few hundred, interrupted inside the calloc of a group's first
 * job in a flush; PyTorch on the H100 hung 3 runs of 11, interrupted inside the driver's
 * free under a held cuMemFreeAsync that a flush issued (docs/RELIABILITY.md). A program
 * without tcfuse makes none of these calls there. Deferring asynchronous signals over
 * tcfuse's own allocations and flushes makes the signal land after them; synchronous ones
 * (a fault inside) are never blocked. */
#include <signal.h>

#include "base/base.h"

static sigset_t tcf_async_set;
static pthread_once_t tcf_async_once = PTHREAD_ONCE_INIT;

static void tcf_async_make(void)
{
    sigfillset(&tcf_async_set);
    static const int sync_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT };
    for (unsigned i = 0; i < sizeof sync_sigs / sizeof sync_sigs[0]; i++)
        sigdelset(&tcf_async_set, sync_sigs[i]);
}

void tcf_sig_defer(sigset_t *old)
{
    pthread_once(&tcf_async_once, tcf_async_make);
    pthread_sigmask(SIG_BLOCK, &tcf_async_set, old);
}

void tcf_sig_resume(const sigset_t *old)
{
    pthread_sigmask(SIG_SETMASK, old, NULL);
}
