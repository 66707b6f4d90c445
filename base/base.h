/* base: what every layer may use and that uses nothing of tcfuse: the clock, which loaded
 * object holds an address, the lock of an exit handler, signals deferred, its own threads
 * and their spin-waits. Thread-safe, no state of its own beyond a memoized symbol lookup;
 * never calls the CUDA driver.
 */
#ifndef TCF_BASE_H
#define TCF_BASE_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

/* For exit handlers: locks m and returns 1, or gives up after a tenth of a second and
 * returns 0 (m untouched), for when exit was called from a signal handler that interrupted
 * the thread holding m (base/exitlock.c). The caller then does without what m guards. */
int tcf_lock_at_exit(pthread_mutex_t *m);

/* Asynchronous signals deferred on this thread (base/sigdefer.c): tcf_sig_defer blocks
 * every signal but the synchronous ones and saves the old mask in *old; tcf_sig_resume
 * puts it back, and a signal that came meanwhile is delivered then. Around tcfuse's own
 * malloc and free on the application's thread (and a kernel's first sight), so that an
 * exit called from a signal handler cannot land inside them. Two system calls: never
 * per launch, and never around long stretches (sigdefer.c says why). */
void tcf_sig_defer(sigset_t *old);
void tcf_sig_resume(const sigset_t *old);

/* Starts fn(NULL) on a thread of tcfuse's own: detached, every signal blocked
 * (base/thread.c). 0, or -1 when none could be made. */
int tcf_thread_spawn(void *(*fn)(void *));

/* One step of a spin-wait: tells the core that this thread only waits, so that a
 * hyperthread sharing it (the application's, perhaps) keeps its issue slots. */
static inline void tcf_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t tcf_now_ns(void);

/* The loaded ELF object (the program or a shared library) whose mapped segments hold an
 * address. */
typedef struct {
    const char *name;      /* its path as the loader has it ("" for the main program);
                            * the loader's string, valid while the object stays loaded */
    int         writable;  /* TCF_OBJ_SEGMENT: addr lies in a writable segment */
    uint64_t    build_id;  /* TCF_OBJ_SEGMENT: a hash of its GNU build-id note, never 0;
                            * 0 when it has none */
} tcf_object_t;

enum {
    TCF_OBJ_SEGMENT = 1,   /* fill writable and build_id (walks the loaded segments) */
    TCF_OBJ_WALK    = 2,   /* never _dl_find_object, even where it would do (tests) */
};

/* Fills *o for the object holding addr and returns 1; 0 when no loaded object holds it
 * (the heap, a stack, NULL). For the name alone, glibc's _dl_find_object answers without
 * a lock or a walk where the C library has it (glibc 2.35, found at run time); otherwise
 * the loaded objects' segments are walked (dl_iterate_phdr). Never dladdr: it also scans
 * the object's symbol table for the nearest symbol, which for libtorch_cuda costs
 * milliseconds (codegen/nvrtc.c says where that mattered). */
int tcf_object_at(const void *addr, unsigned flags, tcf_object_t *o);

#endif
