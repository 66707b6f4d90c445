/* Where the application's thread spends its wall time: a sampler preloaded beside tcfuse
 * (or alone, for the eager baseline), for host-bound programs whose per-launch cost
 * differs on the real driver from the stand-in's (bench/hook_cost cannot see the driver's
 * own work, or waits). A timer on CLOCK_MONOTONIC signals the process's first thread every
 * SAMPLE_US microseconds (default 200), from SAMPLE_DELAY_S seconds on when that is set,
 * else between two SIGUSR2s the program sends itself (bench/programs/common.py's
 * sampling(): the measured iterations alone); the handler keeps the interrupted call stack
 * (libunwind when present, else glibc's backtrace). At exit the stacks and the loaded
 * modules go to SAMPLE_OUT (default sample.out); bench/sample-report names the frames
 * (nm, addr2line) and prints shares by module and by function, self and inclusive.
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

static uintptr_t samples[MAXS][DEPTH];
static uint8_t depth[MAXS];
static atomic_int nsamples;
static int (*unw)(void **, int);
static timer_t timer;
static int armed;
static struct itimerspec period;
static volatile sig_atomic_t running;

/* SIGUSR2: the program's own start and stop marks. */
static void on_mark(int sig)
{
    (void)sig;
    struct itimerspec its = period;
    if (running)
        memset(&its, 0, sizeof its);
    running = !running;
    timer_settime(timer, 0, &its, NULL);
}

static void on_sample(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si;
    int i = atomic_fetch_add(&nsamples, 1);
    if (i >= MAXS)
        return;
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
                info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "[main]");
    }
    return 0;
}

__attribute__((destructor)) static void sample_stop(void)
{
    if (!armed)
        return;
    armed = 0;
    timer_delete(timer);
    signal(SIGPROF, SIG_IGN);
    const char *path = getenv("SAMPLE_OUT");
    FILE *f = fopen(path && *path ? path : "sample.out", "w");
    if (!f)
        return;
    int n = atomic_load(&nsamples);
    if (n > MAXS)
        n = MAXS;
    fprintf(f, "N %d %s\n", n, getenv("SAMPLE_US") ? getenv("SAMPLE_US") : "200");
    dl_iterate_phdr(write_module, f);
    for (int i = 0; i < n; i++) {
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
    if (timer_create(CLOCK_MONOTONIC, &ev, &timer))
        return;
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
    timer_settime(timer, 0, &its, NULL);
}
