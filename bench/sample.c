/* Where the application's thread spends its wall time: a sampler preloaded beside tcfuse
 * (or alone, for the eager baseline), for host-bound programs whose per-launch cost
 * differs on the real driver from the stand-in's (bench/hook_cost cannot see the driver's
 * own work, or waits). A timer on CLOCK_MONOTONIC signals the process's first thread every
 * SAMPLE_US microseconds (default 200), from SAMPLE_DELAY_S seconds on when that is set,
 * else between two SIGUSR2s the program sends itself (bench/programs/common.py's
 * sampling(): the measured iterations alone); the handler keeps the interrupted call stack
 * (libunwind when present, else glibc's backtrace). At exit the stacks and the loaded
 * modules go to SAMPLE_OUT (default sample.out; a "%p" in it is the process id, so that
 * the ranks torchrun starts write a file each); bench/sample-report names the frames
 * (nm, addr2line) and prints shares by module and by function, self and inclusive.
 * With SAMPLE_THREADS=1 every thread the program creates later (pthread_create: PyTorch's
 * autograd thread runs a training step's backward) gets its own timer too, and its
 * samples are tagged with its number (1, 2, ... in creation order; 0 is the first thread).
 *
 *   cc -O2 -shared -fPIC bench/sample.c -o build/libsample.so -ldl -lrt
 *   LD_PRELOAD="build/libsample.so build/libtcfuse.so" SAMPLE_OUT=s.out python prog.py
 *   bench/sample-report sample.out
 *
 * Signals interrupt system calls: the sampler is a diagnostic, never loaded by tcfuse. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define DEPTH 24
#define MAXS 200000

#define MAXT 64

static uintptr_t samples[MAXS][DEPTH];
static uint8_t depth[MAXS];
static uint8_t thread_of[MAXS];
static atomic_int nsamples;
static int (*unw)(void **, int);
static timer_t timers[MAXT];    /* [0]: the first thread's; the others' with SAMPLE_THREADS */
static atomic_int ntimers;
static int armed;
static struct itimerspec period;
static volatile sig_atomic_t running;
static _Thread_local int my_index;

/* SIGUSR2: the program's own start and stop marks. */
static void on_mark(int sig)
{
    (void)sig;
    struct itimerspec its = period;
    if (running)
        memset(&its, 0, sizeof its);
    running = !running;
    int n = atomic_load(&ntimers);
    for (int t = 0; t < n && t < MAXT; t++)
        timer_settime(timers[t], 0, &its, NULL);
}

static void on_sample(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si;
    int i = atomic_fetch_add(&nsamples, 1);
    if (i >= MAXS)
        return;
    thread_of[i] = (uint8_t)my_index;
    void *pcs[DEPTH + 4];
    int n = unw ? unw(pcs, DEPTH + 4) : backtrace(pcs, DEPTH + 4);
    uintptr_t rip = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
    int from = 2;  /* the handler and the signal trampoline */
    for (int j = 0; j < n; j++)
        if ((uintptr_t)pcs[j] == rip) {
            from = j;
            break;
        }
    int k = 0;
    samples[i][k++] = rip;
    for (int j = from + 1; j < n && k < DEPTH; j++)
        samples[i][k++] = (uintptr_t)pcs[j];
    depth[i] = (uint8_t)k;
}

static char exe_path[4096] = "[main]";

static int write_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    FILE *f = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD)
            continue;
        fprintf(f, "M %lx %lx %lx %s\n", (unsigned long)info->dlpi_addr,
                (unsigned long)(info->dlpi_addr + p->p_vaddr),
                (unsigned long)(info->dlpi_addr + p->p_vaddr + p->p_memsz),
                info->dlpi_name && *info->dlpi_name ? info->dlpi_name : exe_path);
    }
    return 0;
}

__attribute__((destructor)) static void sample_stop(void)
{
    if (!armed)
        return;
    armed = 0;
    int nt = atomic_load(&ntimers);
    for (int t = 0; t < nt && t < MAXT; t++)
        timer_delete(timers[t]);
    signal(SIGPROF, SIG_IGN);
    const char *path = getenv("SAMPLE_OUT");
    char name[4096];
    const char *pp = path ? strstr(path, "%p") : NULL;
    if (pp && strlen(path) < sizeof name - 16) {  /* one file a process: torchrun's ranks */
        snprintf(name, sizeof name, "%.*s%d%s", (int)(pp - path), path, (int)getpid(), pp + 2);
        path = name;
    }
    FILE *f = fopen(path && *path ? path : "sample.out", "w");
    if (!f)
        return;
    int n = atomic_load(&nsamples);
    if (n > MAXS)
        n = MAXS;
    fprintf(f, "N %d %s\n", n, getenv("SAMPLE_US") ? getenv("SAMPLE_US") : "200");
    /* The program itself has no name in the loader's list: its path lets the report read
     * its symbols (a C program's own functions). */
    ssize_t len = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    if (len > 0)
        exe_path[len] = 0;
    dl_iterate_phdr(write_module, f);
    for (int i = 0; i < n; i++) {
        if (thread_of[i])
            fprintf(f, "T %d", thread_of[i]);
        else
            fputc('S', f);
        for (int k = 0; k < depth[i]; k++)
            fprintf(f, " %lx", (unsigned long)samples[i][k]);
        fputc('\n', f);
    }
    fclose(f);
}

__attribute__((constructor)) static void sample_start(void)
{
    if (getpid() != (pid_t)syscall(SYS_gettid))
        return;
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (h)
        unw = (int (*)(void **, int))dlsym(h, "unw_backtrace");
    void *warm[4];
    backtrace(warm, 4);  /* glibc loads its unwinder on the first call: not in a handler */
    if (unw)
        unw(warm, 4);    /* nor libunwind's first walk (its caches, the loader's list) */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sample;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGPROF;
    ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    if (timer_create(CLOCK_MONOTONIC, &ev, &timers[0]))
        return;
    atomic_store(&ntimers, 1);
    long us = getenv("SAMPLE_US") ? atol(getenv("SAMPLE_US")) : 200;
    double delay = getenv("SAMPLE_DELAY_S") ? atof(getenv("SAMPLE_DELAY_S")) : 0;
    if (us < 20)
        us = 20;
    period.it_interval.tv_sec = us / 1000000;
    period.it_interval.tv_nsec = (us % 1000000) * 1000;
    period.it_value = period.it_interval;
    armed = 1;
    if (!getenv("SAMPLE_DELAY_S")) {
        signal(SIGUSR2, on_mark);
        return;
    }
    struct itimerspec its = period;
    its.it_value.tv_sec = (time_t)delay;
    its.it_value.tv_nsec = (long)((delay - (double)(time_t)delay) * 1e9);
    if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
        its.it_value.tv_nsec = 1000;
    timer_settime(timers[0], 0, &its, NULL);
}

/* SAMPLE_THREADS=1: each new thread arms a timer of its own, running while the first
 * thread's runs (a thread born inside the marked span starts at once). */
typedef struct {
    void *(*fn)(void *);
    void *arg;
} start_t;

static void *thread_start(void *p)
{
    start_t st = *(start_t *)p;
    free(p);
    int t = atomic_fetch_add(&ntimers, 1);
    if (t < MAXT) {
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_THREAD_ID;
        ev.sigev_signo = SIGPROF;
        ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
        if (!timer_create(CLOCK_MONOTONIC, &ev, &timers[t])) {
            my_index = t;
            struct itimerspec its = period;
            if (running || getenv("SAMPLE_DELAY_S"))
                timer_settime(timers[t], 0, &its, NULL);
        }
    }
    return st.fn(st.arg);
}

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real)
        real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
            dlsym(RTLD_NEXT, "pthread_create");
    start_t *st;
    const char *all = getenv("SAMPLE_THREADS");
    if (!armed || !all || strcmp(all, "1") || !(st = malloc(sizeof *st)))
        return real(th, attr, fn, arg);
    st->fn = fn;
    st->arg = arg;
    int rc = real(th, attr, thread_start, st);
    if (rc)
        free(st);
    return rc;
}
