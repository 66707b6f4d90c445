/* The host's speed as the program sees it, for bench/run-all: a fixed piece of CPU work,
 * timed now and then between iterations (never inside one). Host-bound programs fall into
 * a slow state per process (docs/PERF.md, 2026-11-28 second); a probe as slow as the
 * iterations says the host's CPU was slow for that process, whatever ran on the GPU.
 * Two parts, each about a millisecond on a quick host: a chain of dependent integer
 * operations (the core's clock), and a walk of dependent loads through 8 MiB in random
 * order (the caches and memory). C and C++ (nvcc compiles .cu as C++). */
#ifndef BENCH_PROBE_H
#define BENCH_PROBE_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define PROBE_EVERY 10           /* iterations between probes */
#define PROBE_WALK (1u << 20)    /* 8-byte slots: 8 MiB */

static double probe_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static uint64_t *probe_ring;     /* one cycle through every slot, in random order */
static volatile uint64_t probe_sink;

static void probe_init(void)
{
    probe_ring = (uint64_t *)malloc(PROBE_WALK * sizeof *probe_ring);
    if (!probe_ring)
        return;
    uint32_t *order = (uint32_t *)malloc(PROBE_WALK * sizeof *order);
    if (!order) {
        free(probe_ring);
        probe_ring = NULL;
        return;
    }
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (uint32_t i = 0; i < PROBE_WALK; i++)
        order[i] = i;
    for (uint32_t i = PROBE_WALK - 1; i > 0; i--) {   /* Fisher-Yates, a fixed seed */
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t j = (uint32_t)((s >> 33) % (i + 1));
        uint32_t t = order[i];
        order[i] = order[j], order[j] = t;
    }
    for (uint32_t i = 0; i < PROBE_WALK; i++)
        probe_ring[order[i]] = order[(i + 1) % PROBE_WALK];
    free(order);
}

/* Milliseconds of the integer chain (*alu) and of the walk (*mem; -1 without its buffer). */
static void probe_run(double *alu, double *mem)
{
    double t0 = probe_now_ms();
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 1000000; i++) {   /* xorshift64: each step needs the last */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    probe_sink = x;
    double t1 = probe_now_ms();
    *alu = t1 - t0;
    *mem = -1.0;
    if (probe_ring) {
        uint64_t p = 0;
        for (uint32_t i = 0; i < PROBE_WALK / 16; i++)
            p = probe_ring[p];
        probe_sink = p;
        *mem = probe_now_ms() - t1;
    }
}

#endif
