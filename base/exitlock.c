/* Locks taken at exit (base.h). An exit handler runs on whichever thread called exit, and
 * a program may call exit from a signal handler that interrupted that very thread inside
 * tcfuse, with one of tcfuse's locks held: waiting for it would never end (seen: 13 of 20
 * runs of a program that exits from a SIGALRM handler while launching hung in fuse mode,
 * 1 of 20 in observe mode; tests/bats/exit.bats). Another thread holding the lock lets
 * go within microseconds, so a bounded wait tells the two apart. */
#include <errno.h>
#include <time.h>

#include "base/base.h"

#define TCF_EXIT_LOCK_MS 100

int tcf_lock_at_exit(pthread_mutex_t *m)
{
    if (pthread_mutex_trylock(m) == 0)
        return 1;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += TCF_EXIT_LOCK_MS * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    int rc;
    while ((rc = pthread_mutex_timedlock(m, &until)) == EINTR)
        ;
    return rc == 0;
}
