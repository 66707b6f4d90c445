/* The trampoline pool: one slot per distinct (real function) handed out as a boundary.
 * Slots are filled under a lock at lookup time (process start, mostly) and read without
 * one when called: a slot's fields are written before its stub's address is published. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "capture/capture.h"
#include "interpose/interpose.h"
#include "interpose/tramp.h"

#define TCF_NAME_MAX 64

typedef struct {
    void *_Atomic real;
    char  name[TCF_NAME_MAX]; /* the boundary reason; stable storage for capture */
} tcf_slot_t;

static tcf_slot_t tcf_slots[TCF_TRAMP_SLOTS];
static unsigned tcf_nslots;
static pthread_mutex_t tcf_slots_lock = PTHREAD_MUTEX_INITIALIZER;

void *tcf_tramp_enter(unsigned long i);

/* Called by every stub with its slot number; returns where to jump. */
void *tcf_tramp_enter(unsigned long i)
{
    tcf_slot_t *s = &tcf_slots[i];
    if (atomic_load_explicit(&tcf_interpose_mode, memory_order_relaxed) != TCF_MODE_OFF)
        tcf_capture_boundary(s->name);
    return atomic_load_explicit(&s->real, memory_order_acquire);
}

#if defined(__x86_64__)
extern char tcf_tramp_stubs[];

void *tcf_tramp_get(const char *name, void *real, int known)
{
    void *stub = NULL;
    pthread_mutex_lock(&tcf_slots_lock);
    for (unsigned i = 0; i < tcf_nslots; i++) {
        if (atomic_load_explicit(&tcf_slots[i].real, memory_order_relaxed) == real) {
            stub = tcf_tramp_stubs + (size_t)i * TCF_TRAMP_STUB_BYTES;
            break;
        }
    }
    if (!stub && tcf_nslots < TCF_TRAMP_SLOTS) {
        tcf_slot_t *s = &tcf_slots[tcf_nslots];
        size_t n = strlen(name);
        if (n >= TCF_NAME_MAX)
            n = TCF_NAME_MAX - 1;
        memcpy(s->name, name, n);
        s->name[n] = '\0';
        atomic_store_explicit(&s->real, real, memory_order_release);
        stub = tcf_tramp_stubs + (size_t)tcf_nslots * TCF_TRAMP_STUB_BYTES;
        tcf_nslots++;
    }
    pthread_mutex_unlock(&tcf_slots_lock);
    (void)known;
    return stub;
}
#else
/* No stubs on this architecture: boundaries we cannot see. Callers count it. */
void *tcf_tramp_get(const char *name, void *real, int known)
{
    (void)name, (void)real, (void)known;
    return NULL;
}
#endif
