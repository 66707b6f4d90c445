/* Per-thread counters (capture/count.h says what and why).
 *
 * A table is an open-addressed map from a counter's address to this thread's count of it
 * and the part of that count already added to the counter. Only its thread writes the
 * addresses and counts (relaxed loads and stores: no locked instruction); the settled
 * parts are written only under the table's lock, by tcf_count_settle or by the thread's
 * end. So a settle that runs while the thread counts adds what it sees, and the rest
 * later. Tables are never freed (a settle may be reading one): an ended thread's table
 * is settled, cleared and handed to the next new thread. */
#include <pthread.h>
#include <stddef.h>

#include "base/base.h"
#include "base/fault.h"
#include "capture/count.h"

#define TCF_COUNT_PROBES 16   /* slots looked at before counting on the counter itself */

typedef struct tcf_ctab {
    pthread_mutex_t  lock;    /* settling and handing over; never taken to count */
    struct tcf_ctab *next;    /* every table, newest first; never unlinked */
    int              owned;   /* a running thread's (under tcf_ctabs_lock) */
    tcf_cslot_t      slot[TCF_COUNT_SLOTS];
} tcf_ctab_t;

static tcf_ctab_t *_Atomic tcf_ctabs;
static pthread_mutex_t tcf_ctabs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t tcf_ckey;
static int tcf_ckey_ok;
static pthread_once_t tcf_ckey_once = PTHREAD_ONCE_INIT;

/* This thread's table, as its slots (count.h's inline probe reads them). Initial-exec: one
 * load from the thread pointer, where the default model would call __tls_get_addr on
 * every launch; the library is preloaded, so its static TLS is there. */
_Thread_local tcf_cslot_t *tcf_count_mine __attribute__((tls_model("initial-exec")));
static _Thread_local int tcf_mine_state __attribute__((tls_model("initial-exec")));
enum { TCF_MINE_NONE = 0, TCF_MINE_HAVE, TCF_MINE_WITHOUT };   /* WITHOUT: count directly */

static tcf_ctab_t *tcf_table_of(tcf_cslot_t *slots)
{
    return slots ? (tcf_ctab_t *)(void *)((char *)slots - offsetof(tcf_ctab_t, slot)) : NULL;
}

/* Adds what t counted since its last settle to the counters (t->lock held). */
static void tcf_settle_locked(tcf_ctab_t *t)
{
    for (unsigned i = 0; i < TCF_COUNT_SLOTS; i++) {
        atomic_ullong *c = (atomic_ullong *)atomic_load_explicit(&t->slot[i].addr,
                                                                  memory_order_acquire);
        if (!c)
            continue;
        uint64_t n = atomic_load_explicit(&t->slot[i].n, memory_order_relaxed);
        if (n != t->slot[i].settled) {
            atomic_fetch_add_explicit(c, n - t->slot[i].settled, memory_order_relaxed);
            t->slot[i].settled = n;
        }
    }
}

/* The thread ends: its counts go to the counters and its table to the next thread. Later
 * counts on this thread (another library's thread-exit code launching) count directly. */
static void tcf_count_thread_end(void *arg)
{
    tcf_ctab_t *t = arg;
    tcf_count_mine = NULL;
    tcf_mine_state = TCF_MINE_WITHOUT;
    pthread_mutex_lock(&t->lock);
    tcf_settle_locked(t);
    for (unsigned i = 0; i < TCF_COUNT_SLOTS; i++) {
        atomic_store_explicit(&t->slot[i].addr, 0, memory_order_relaxed);
        atomic_store_explicit(&t->slot[i].n, 0, memory_order_relaxed);
        t->slot[i].settled = 0;
    }
    pthread_mutex_unlock(&t->lock);
    pthread_mutex_lock(&tcf_ctabs_lock);
    t->owned = 0;
    pthread_mutex_unlock(&tcf_ctabs_lock);
}

static void tcf_ckey_make(void)
{
    tcf_ckey_ok = pthread_key_create(&tcf_ckey, tcf_count_thread_end) == 0;
}

/* This thread's table: an ended thread's, or a new one. NULL when none can be had (then
 * the thread counts on the counters themselves, and never asks again). Once a thread. */
static tcf_ctab_t *tcf_count_table(void)
{
    if (tcf_mine_state != TCF_MINE_NONE)
        return tcf_table_of(tcf_count_mine);
    tcf_mine_state = TCF_MINE_WITHOUT;
    pthread_once(&tcf_ckey_once, tcf_ckey_make);
    if (!tcf_ckey_ok)
        return NULL;
    pthread_mutex_lock(&tcf_ctabs_lock);
    tcf_ctab_t *t = atomic_load(&tcf_ctabs);
    while (t && t->owned)
        t = t->next;
    if (!t && (t = tcf_calloc(1, sizeof *t)) != NULL) {   /* signals deferred; site alloc */
        pthread_mutex_init(&t->lock, NULL);
        t->next = atomic_load(&tcf_ctabs);
        atomic_store_explicit(&tcf_ctabs, t, memory_order_release);
    }
    if (t)
        t->owned = 1;
    pthread_mutex_unlock(&tcf_ctabs_lock);
    if (!t)
        return NULL;
    if (pthread_setspecific(tcf_ckey, t) != 0) {   /* no end to hand it over at: give back */
        pthread_mutex_lock(&tcf_ctabs_lock);
        t->owned = 0;
        pthread_mutex_unlock(&tcf_ctabs_lock);
        return NULL;
    }
    tcf_count_mine = t->slot;
    tcf_mine_state = TCF_MINE_HAVE;
    return t;
}

void tcf_count_add(atomic_ullong *c, uint64_t n)
{
    tcf_ctab_t *t = tcf_count_mine ? tcf_table_of(tcf_count_mine) : tcf_count_table();
    if (t) {
        uintptr_t a = (uintptr_t)c;
        uint32_t i = tcf_count_slot(c);
        for (unsigned p = 0; p < TCF_COUNT_PROBES; p++, i = (i + 1) & (TCF_COUNT_SLOTS - 1)) {
            tcf_cslot_t *s = &t->slot[i];
            uintptr_t at = atomic_load_explicit(&s->addr, memory_order_relaxed);
            if (at == 0) {   /* the count first, then the address a settle looks for */
                atomic_store_explicit(&s->n, n, memory_order_relaxed);
                atomic_store_explicit(&s->addr, a, memory_order_release);
                return;
            }
            if (at == a) {
                atomic_store_explicit(&s->n, atomic_load_explicit(&s->n, memory_order_relaxed) + n,
                                      memory_order_relaxed);
                return;
            }
        }
    }
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

unsigned tcf_count_tables(void)
{
    unsigned n = 0;
    for (tcf_ctab_t *t = atomic_load_explicit(&tcf_ctabs, memory_order_acquire); t; t = t->next)
        n++;
    return n;
}

void tcf_count_settle(void)
{
    for (tcf_ctab_t *t = atomic_load_explicit(&tcf_ctabs, memory_order_acquire); t; t = t->next) {
        /* At exit a thread may have died holding the lock (exit from a signal handler):
         * its table is then left out, never waited for. */
        if (!tcf_lock_at_exit(&t->lock))
            continue;
        tcf_settle_locked(t);
        pthread_mutex_unlock(&t->lock);
    }
}
