/* The trampoline pool: one slot per distinct (real function) handed out as a boundary.
 * Slots are filled under a lock at lookup time (process start, mostly) and read without
 * one when called: a slot's fields are written before its stub's address is published. */
#include <dlfcn.h>
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

/* The exported boundaries (hooks.def TCF_GATE_ABI), in the order the stubs number them. */
#define TCF_WRAP(abi, base, since, ptds, cls, params, args)
#define TCF_GATE(base)
#define TCF_PASS(base)
#define TCF_GATE_ABI(abi, base) { #abi, #base },
static const struct { const char *abi, *base; } tcf_fixed[] = {
#include "interpose/hooks.def"
};
#undef TCF_WRAP
#undef TCF_GATE
#undef TCF_PASS
#undef TCF_GATE_ABI
#define TCF_NFIXED (sizeof tcf_fixed / sizeof tcf_fixed[0])
static void *_Atomic tcf_fixed_real[TCF_NFIXED];
static unsigned tcf_nslots;
static pthread_mutex_t tcf_slots_lock = PTHREAD_MUTEX_INITIALIZER;

void *tcf_tramp_enter(unsigned long i);

/* An exported boundary, called directly by a program linked with -lcuda: it may be the
 * first call tcfuse sees, so start, then find the driver's own function. */
static void *tcf_tramp_fixed(unsigned long j)
{
    void *real = atomic_load_explicit(&tcf_fixed_real[j], memory_order_acquire);
    if (!real) {
        tcf_interpose_init();
        void *h = tcf_interpose_libcuda();
        real = tcf_real_dlsym(h ? h : RTLD_NEXT, tcf_fixed[j].abi);
        atomic_store_explicit(&tcf_fixed_real[j], real, memory_order_release);
    }
    if (atomic_load_explicit(&tcf_interpose_mode, memory_order_relaxed) != TCF_MODE_OFF)
        tcf_capture_boundary(tcf_fixed[j].base);
    /* A driver without the symbol cannot have been linked against: never NULL in practice. */
    return real;
}

/* Called by every stub with its slot number; returns where to jump. */
void *tcf_tramp_enter(unsigned long i)
{
    if (i >= TCF_TRAMP_SLOTS)
        return tcf_tramp_fixed(i - TCF_TRAMP_SLOTS);
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
