/* Signals deferred around tcfuse's own calls into malloc and free on the application's
 * thread (base.h). A program may exit from a signal handler: exit handlers then run on the
 * interrupted thread, and the C library's own (the atexit list's blocks, dlclose) take
 * malloc's lock. If the signal landed inside malloc or free, exit waits on it for ever.
 * Seen: the stand-in's fusechain in fuse mode hung about 1 run in 300, interrupted in the
 * calloc of a group's first job inside a flush (docs/RELIABILITY.md). A program without
 * tcfuse makes no such call there. With the signal deferred it lands after the call.
 *
 * Only around allocations, which are rare on the hot path, not around whole flushes: a
 * thread that blocks a signal sent to the process makes the kernel deliver it to another
 * thread, and a handler that calls exit there runs while the application's thread goes
 * on (tried: PyTorch then failed inside its torn-down statics, 1 run of 3). Synchronous
 * signals (a fault inside) are never blocked. */
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
