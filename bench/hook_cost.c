/* tcfuse's own CPU cost per launch, without a GPU: launches against the stand-in driver
 * (tests/stub, whose cuLaunchKernel does nothing but count), so the time per launch is
 * the hooks' cost plus a near-empty call. Run by bench/hook_cost, which compares no
 * library, TCFUSE_MODE=off, observe and fuse in one invocation.
 *
 *   hook_cost [launches] [sync_every]         one kernel, a stream synchronize every
 *                                             sync_every launches (HOOK_COST_VARY=1: its
 *                                             grid changes from launch to launch, so
 *                                             that no window's key ever repeats, as in
 *                                             bench/programs/smallk.cu)
 *   hook_cost --trace FILE [launches]         a recorded trace replayed in passes: its
 *                                             launches (real names, layouts, parameters;
 *                                             cuLaunchKernel or cuLaunchKernelEx as
 *                                             recorded), memsets, and a synchronize
 *                                             where each recorded window ended
 *   hook_cost --allocs [pairs]                cuMemAllocAsync of 1 MiB and its
 *                                             cuMemFreeAsync on the legacy stream, one
 *                                             pair after another: the allocator hooks'
 *                                             cost (fuse mode keeps each block's size);
 *                                             prints "ns_per_pair <value>"
 *   the others print "ns_per_launch <value>" and "cpu_ns_per_launch <value>" (the application
 *   thread's own CPU time over the same loop, which a shared machine's other work moves
 *   less than the elapsed time: time descheduled is not in it); a trace also
 *   "first_pass_us <value>" (the first pass, after HOOK_COST_DELAY_MS if set)
 *
 * With a trace, fuse mode decodes what it can and plans chains at the synchronizes; the
 * stand-in driver runs nothing, so no generated kernel passes its verification and every
 * pass is issued as recorded: the figure is the cost of holding, decoding, planning and
 * issuing, the fused kernel's launch left out.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace/read.h"

typedef CUresult (*gpa_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*libload_t)(CUlibrary *, const void *, CUjit_option *, void **, unsigned,
                              CUlibraryOption *, void **, unsigned);
typedef CUresult (*getk_t)(CUkernel *, CUlibrary, const char *);
typedef CUresult (*sync_t)(CUstream);

static void *sym(gpa_t gpa, const char *name)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    if (gpa(name, &p, 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st) != CUDA_SUCCESS || !p) {
        fprintf(stderr, "hook_cost: no %s\n", name);
        exit(1);
    }
    return p;
}

/* A trace, ready to replay: its launches (either form), memsets, and a synchronize where
 * each of its windows ended, so that the replayed windows have the recorded shapes. */
typedef enum { RP_LAUNCH, RP_LAUNCH_EX, RP_MEMSET, RP_SYNC } rp_kind_t;
typedef struct {
    rp_kind_t kind;
    CUkernel  k;
    unsigned  grid[3], block[3], smem;
    CUstream  stream;
    void    **params;            /* into bytes, as the kernel's layout says */
    uint8_t  *bytes;
    uint64_t  ptr, count;        /* memset */
} replay_t;
static replay_t *replay;
static long nreplay, capreplay, nreplay_launches;
#define MAX_KERNELS 4096
static CUkernel kern_of[MAX_KERNELS];
static tcf_trace_param_t *layout_of[MAX_KERNELS];
static size_t nparams_of[MAX_KERNELS];

/* The trace's streams: 0 is the legacy default stream, any other is one stream made here. */
#define MAX_STREAMS 16
static uint64_t stream_in[MAX_STREAMS];
static CUstream stream_out[MAX_STREAMS];
static CUresult (*stream_create)(CUstream *, unsigned);

static CUstream stream_of(uint64_t s)
{
    if (s == 0 || s == 1 || s == 2)   /* 0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD */
        return (CUstream)(uintptr_t)s;
    for (int i = 0; i < MAX_STREAMS; i++) {
        if (stream_in[i] == s)
            return stream_out[i];
        if (!stream_in[i]) {
            stream_in[i] = s;
            if (stream_create(&stream_out[i], 0))
                stream_out[i] = NULL;
            return stream_out[i];
        }
    }
    return NULL;
}

static replay_t *replay_add(rp_kind_t kind)
{
    if (nreplay == capreplay) {
        capreplay = capreplay ? 2 * capreplay : 1024;
        replay = realloc(replay, (size_t)capreplay * sizeof *replay);
        if (!replay)
            exit(1);
    }
    replay_t *l = &replay[nreplay++];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    return l;
}

static long load_trace(const char *path, libload_t libload, getk_t getk)
{
    tcf_trace_reader_t *r = tcf_trace_read_open(path);
    tcf_trace_event_t ev;
    CUlibrary lib;
    if (!r || libload(&lib, "x", NULL, NULL, 0, NULL, NULL, 0))
        return -1;
    while (tcf_trace_read_next(r, &ev) == 1) {
        if (ev.ev == TCF_TRACE_EV_KERNEL && ev.u.kernel.id >= 0 && ev.u.kernel.id < MAX_KERNELS) {
            const tcf_trace_kernel_t *tk = &ev.u.kernel;
            size_t cap = strlen(tk->name) + 24 * tk->nparams + 2, len;
            char *name = malloc(cap);
            layout_of[tk->id] = malloc((tk->nparams + 1) * sizeof *layout_of[0]);
            if (!name || !layout_of[tk->id])
                return -1;
            len = (size_t)snprintf(name, cap, "%s@", tk->name);
            for (size_t i = 0; i < tk->nparams; i++) {
                len += (size_t)snprintf(name + len, cap - len, "%s%u:%u", i ? "," : "",
                                        tk->params[i].offset, tk->params[i].size);
                layout_of[tk->id][i] = tk->params[i];
            }
            nparams_of[tk->id] = tk->nparams;
            if (getk(&kern_of[tk->id], lib, name))
                return -1;
            free(name);
        } else if (ev.ev == TCF_TRACE_EV_LAUNCH && ev.u.launch.k >= 0 &&
                   ev.u.launch.k < MAX_KERNELS && kern_of[ev.u.launch.k]) {
            const tcf_trace_launch_t *tl = &ev.u.launch;
            replay_t *l = replay_add(strcmp(tl->via, "cuLaunchKernelEx") ? RP_LAUNCH
                                                                           : RP_LAUNCH_EX);
            size_t np = nparams_of[tl->k];
            l->k = kern_of[tl->k];
            memcpy(l->grid, tl->grid, sizeof l->grid);
            memcpy(l->block, tl->block, sizeof l->block);
            l->smem = (unsigned)tl->smem;
            l->stream = stream_of(tl->stream);
            l->bytes = calloc(1, tl->params_len + 64);
            l->params = calloc(np + 1, sizeof *l->params);
            if (!l->bytes || !l->params)
                return -1;
            memcpy(l->bytes, tl->params, tl->params_len);
            for (size_t i = 0; i < np; i++)
                l->params[i] = l->bytes + (layout_of[tl->k][i].offset < tl->params_len
                                               ? layout_of[tl->k][i].offset : 0);
            nreplay_launches++;
        } else if (ev.ev == TCF_TRACE_EV_MEMSET && ev.u.mem.win >= 0) {
            replay_t *l = replay_add(RP_MEMSET);
            l->ptr = ev.u.mem.ptr;
            l->count = (uint64_t)ev.u.mem.count;
            l->stream = stream_of(ev.u.mem.stream);
        } else if (ev.ev == TCF_TRACE_EV_WINDOW && strcmp(ev.u.window.reason, "size-cap")) {
            /* A boundary call, a free, or an idle gap ended it: a synchronize ends it here
             * (the library closes a size-capped window by itself). */
            if (nreplay && replay[nreplay - 1].kind != RP_SYNC)
                replay_add(RP_SYNC);
        }
    }
    tcf_trace_read_close(r);
    if (nreplay && replay[nreplay - 1].kind != RP_SYNC)
        replay_add(RP_SYNC);
    return nreplay_launches;
}

typedef CUresult (*launchex_t)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*memset_t)(CUdeviceptr, unsigned char, size_t, CUstream);
typedef CUresult (*ctxsync_t)(void);

/* The trace's events in order, a synchronize where each window ended. */
static void replay_pass(launch_t launch, launchex_t launchex, memset_t memset8, ctxsync_t sync)
{
    for (long i = 0; i < nreplay; i++) {
        const replay_t *l = &replay[i];
        switch (l->kind) {
        case RP_LAUNCH:
            launch((CUfunction)l->k, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                   l->block[1], l->block[2], l->smem, l->stream, l->params, NULL);
            break;
        case RP_LAUNCH_EX: {
            CUlaunchConfig c = { .gridDimX = l->grid[0], .gridDimY = l->grid[1],
                                 .gridDimZ = l->grid[2], .blockDimX = l->block[0],
                                 .blockDimY = l->block[1], .blockDimZ = l->block[2],
                                 .sharedMemBytes = l->smem, .hStream = l->stream };
            launchex(&c, (CUfunction)l->k, l->params, NULL);
            break;
        }
        case RP_MEMSET:
            memset8((CUdeviceptr)l->ptr, 0, (size_t)l->count, l->stream);
            break;
        case RP_SYNC:
            sync();
            break;
        }
    }
}

static double elapsed_ns(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) * 1e9 + (double)(b->tv_nsec - a->tv_nsec);
}

/* A launch's grid offset when it varies: a hash of its number, so that no run of launches
 * repeats. */
static unsigned grid_hash(long i)
{
    unsigned long long x = (unsigned long long)i * 0x9E3779B97F4A7C15ull;   /* splitmix64 */
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return (unsigned)(x ^ (x >> 31));
}

int main(int argc, char **argv)
{
    const char *trace = argc > 2 && !strcmp(argv[1], "--trace") ? argv[2] : NULL;
    if (trace)
        argv += 2, argc -= 2;
    int allocs = argc > 1 && !strcmp(argv[1], "--allocs");
    if (allocs)
        argv += 1, argc -= 1;
    long n = argc > 1 ? atol(argv[1]) : 1000000, every = argc > 2 ? atol(argv[2]) : 16;
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    gpa_t gpa = h ? (gpa_t)dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!gpa) {
        fprintf(stderr, "hook_cost: libcuda.so.1 (the stand-in) not found\n");
        return 1;
    }
    /* A current context, as any real program has one: graph mode instantiates in it. */
    CUresult (*retain)(CUcontext *, CUdevice) = sym(gpa, "cuDevicePrimaryCtxRetain");
    CUresult (*set_current)(CUcontext) = sym(gpa, "cuCtxSetCurrent");
    CUcontext ctx;
    if (retain(&ctx, 0) || set_current(ctx)) {
        fprintf(stderr, "hook_cost: no context\n");
        return 1;
    }
    launch_t launch = (launch_t)sym(gpa, "cuLaunchKernel");
    libload_t libload = (libload_t)sym(gpa, "cuLibraryLoadData");
    getk_t getk = (getk_t)sym(gpa, "cuLibraryGetKernel");
    sync_t sync = (sync_t)sym(gpa, "cuStreamSynchronize");
    struct timespec a, b, ca, cb;
    if (allocs) {
        CUresult (*alloc)(CUdeviceptr *, size_t, CUstream) = sym(gpa, "cuMemAllocAsync");
        CUresult (*release)(CUdeviceptr, CUstream) = sym(gpa, "cuMemFreeAsync");
        CUdeviceptr p;
        for (long i = 0; i < n / 10 + 1; i++)  /* warm: the block table at its size */
            if (alloc(&p, 1 << 20, NULL) || release(p, NULL))
                return 1;
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (long i = 0; i < n; i++)
            if (alloc(&p, 1 << 20, NULL) || release(p, NULL))
                return 1;
        clock_gettime(CLOCK_MONOTONIC, &b);
        printf("ns_per_pair %.1f\n", elapsed_ns(&a, &b) / (double)n);
        return 0;
    }
    if (trace) {
        launchex_t launchex = (launchex_t)sym(gpa, "cuLaunchKernelEx");
        memset_t memset8 = (memset_t)sym(gpa, "cuMemsetD8Async");
        ctxsync_t ctxsync = (ctxsync_t)sym(gpa, "cuCtxSynchronize");
        stream_create = (CUresult(*)(CUstream *, unsigned))sym(gpa, "cuStreamCreate");
        long nl = load_trace(trace, libload, getk);
        if (nl <= 0) {
            fprintf(stderr, "hook_cost: %s: no launches could be loaded\n", trace);
            return 1;
        }
        long passes = n / nl > 0 ? n / nl : 1;
        /* HOOK_COST_DELAY_MS: a pause before the first pass, to tell what the first
         * occurrence costs by itself from what the start of fuse mode's worker (NVRTC and
         * the disk cache opened at once) costs the application's thread beside it */
        const char *delay = getenv("HOOK_COST_DELAY_MS");
        if (delay && atol(delay) > 0)
            nanosleep(&(struct timespec){ atol(delay) / 1000, atol(delay) % 1000 * 1000000 },
                      NULL);
        /* a second of passes first: fuse mode holds nothing until its worker has NVRTC
         * open, and the first passes plan and queue what later ones reuse */
        clock_gettime(CLOCK_MONOTONIC, &a);
        replay_pass(launch, launchex, memset8, ctxsync);
        clock_gettime(CLOCK_MONOTONIC, &b);
        double first = elapsed_ns(&a, &b);
        do {
            replay_pass(launch, launchex, memset8, ctxsync);
            clock_gettime(CLOCK_MONOTONIC, &b);
        } while (elapsed_ns(&a, &b) < 1e9);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (long p = 0; p < passes; p++)
            replay_pass(launch, launchex, memset8, ctxsync);
        clock_gettime(CLOCK_MONOTONIC, &b);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
        printf("ns_per_launch %.1f\n", elapsed_ns(&a, &b) / (double)(passes * nl));
        printf("cpu_ns_per_launch %.1f\n", elapsed_ns(&ca, &cb) / (double)(passes * nl));
        printf("first_pass_us %.1f\n", first / 1e3);
        return 0;
    }
    CUlibrary lib;
    CUkernel k;
    /* The layout of PyTorch's vectorized add: int N, float alpha, char *data[3]. */
    if (libload(&lib, "x", NULL, NULL, 0, NULL, NULL, 0) || getk(&k, lib, "k_i4_f4_b24"))
        return 1;
    int N = 1 << 20;
    float alpha = 1.0f;
    char *data[3] = { (char *)0x7f0000000000, (char *)0x7f0000400000, (char *)0x7f0000800000 };
    void *params[] = { &N, &alpha, data };
    const char *vary_env = getenv("HOOK_COST_VARY");
    unsigned vary = vary_env && atoi(vary_env) ? 255u : 0u;   /* grid 1024..1279 */
    /* a tenth of a second first: graph mode learns the window and makes its graph */
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0;; i++) {
        launch((CUfunction)k, 1024 + (grid_hash(i) & vary), 1, 1, 128, 1, 1, 0, NULL, params,
               NULL);
        if (every && (i + 1) % every == 0) {
            sync(NULL);
            clock_gettime(CLOCK_MONOTONIC, &b);
            if (elapsed_ns(&a, &b) > 1e8)
                break;
        }
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        launch((CUfunction)k, 1024 + (grid_hash(i) & vary), 1, 1, 128, 1, 1, 0, NULL, params,
               NULL);
        if (every && (i + 1) % every == 0)
            sync(NULL);   /* windows of `every` launches, as a boundary closes them */
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
    printf("ns_per_launch %.1f\n", elapsed_ns(&a, &b) / (double)n);
    printf("cpu_ns_per_launch %.1f\n", elapsed_ns(&ca, &cb) / (double)n);
    return 0;
}
