/* tcfuse's own CPU cost per launch, without a GPU: launches against the stand-in driver
 * (tests/stub, whose cuLaunchKernel does nothing but count), so the time per launch is
 * the hooks' cost plus a near-empty call. Run by bench/hook_cost, which compares no
 * library, TCFUSE_MODE=off, observe and fuse in one invocation.
 *
 *   hook_cost [launches] [sync_every]         one kernel, a stream synchronize every
 *                                             sync_every launches
 *   hook_cost --trace FILE [launches]         the launches of a recorded trace (real
 *                                             PyTorch names, layouts and parameters),
 *                                             in order, a synchronize after each pass
 *   both print "ns_per_launch <value>"
 *
 * With a trace, fuse mode holds and decodes each launch and plans each pass at the
 * synchronize; the stand-in driver runs nothing, so no generated kernel passes its
 * verification and every pass is issued as recorded: the figure is the cost of holding,
 * decoding, planning and issuing, the fused kernel's launch left out.
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

/* The launches of a trace, ready to replay. */
#define MAX_REPLAY 4096
typedef struct {
    CUkernel k;
    unsigned grid[3], block[3], smem;
    void    *params[16];
    uint8_t  bytes[512];
} replay_t;
static replay_t replay[MAX_REPLAY];
static CUkernel kern_of[256];
static tcf_trace_param_t layout_of[256][16];
static size_t nparams_of[256];

static long load_trace(const char *path, libload_t libload, getk_t getk)
{
    tcf_trace_reader_t *r = tcf_trace_read_open(path);
    tcf_trace_event_t ev;
    CUlibrary lib;
    long n = 0;
    if (!r || libload(&lib, "x", NULL, NULL, 0, NULL, NULL, 0))
        return -1;
    while (tcf_trace_read_next(r, &ev) == 1) {
        if (ev.ev == TCF_TRACE_EV_KERNEL && ev.u.kernel.id >= 0 && ev.u.kernel.id < 256 &&
            ev.u.kernel.nparams <= 16) {
            const tcf_trace_kernel_t *tk = &ev.u.kernel;
            char name[1024];
            size_t len = (size_t)snprintf(name, sizeof name, "%s@", tk->name);
            for (size_t i = 0; i < tk->nparams && len < sizeof name; i++) {
                len += (size_t)snprintf(name + len, sizeof name - len, "%s%u:%u", i ? "," : "",
                                        tk->params[i].offset, tk->params[i].size);
                layout_of[tk->id][i] = tk->params[i];
            }
            nparams_of[tk->id] = tk->nparams;
            if (getk(&kern_of[tk->id], lib, name))
                return -1;
        } else if (ev.ev == TCF_TRACE_EV_LAUNCH && n < MAX_REPLAY && ev.u.launch.k >= 0 &&
                   ev.u.launch.k < 256 && kern_of[ev.u.launch.k] &&
                   ev.u.launch.params_len <= sizeof replay[0].bytes) {
            const tcf_trace_launch_t *tl = &ev.u.launch;
            replay_t *l = &replay[n++];
            l->k = kern_of[tl->k];
            memcpy(l->grid, tl->grid, sizeof l->grid);
            memcpy(l->block, tl->block, sizeof l->block);
            l->smem = (unsigned)tl->smem;
            memcpy(l->bytes, tl->params, tl->params_len);
            for (size_t i = 0; i < nparams_of[tl->k]; i++)
                l->params[i] = l->bytes + layout_of[tl->k][i].offset;
        }
    }
    tcf_trace_read_close(r);
    return n;
}

/* The trace's launches in order, then a synchronize (which closes the window). */
static void replay_pass(long nl, launch_t launch, sync_t sync)
{
    for (long i = 0; i < nl; i++) {
        const replay_t *l = &replay[i];
        launch((CUfunction)l->k, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
               l->block[2], l->smem, NULL, (void **)l->params, NULL);
    }
    sync(NULL);
}

static double elapsed_ns(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) * 1e9 + (double)(b->tv_nsec - a->tv_nsec);
}

int main(int argc, char **argv)
{
    const char *trace = argc > 2 && !strcmp(argv[1], "--trace") ? argv[2] : NULL;
    if (trace)
        argv += 2, argc -= 2;
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
    struct timespec a, b;
    if (trace) {
        long nl = load_trace(trace, libload, getk);
        if (nl <= 0) {
            fprintf(stderr, "hook_cost: %s: no launches could be loaded\n", trace);
            return 1;
        }
        long passes = n / nl > 0 ? n / nl : 1;
        /* a second of passes first: fuse mode holds nothing until its worker has NVRTC
         * open, and the first passes plan and queue what later ones reuse */
        clock_gettime(CLOCK_MONOTONIC, &a);
        do {
            replay_pass(nl, launch, sync);
            clock_gettime(CLOCK_MONOTONIC, &b);
        } while (elapsed_ns(&a, &b) < 1e9);
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (long p = 0; p < passes; p++)
            replay_pass(nl, launch, sync);
        clock_gettime(CLOCK_MONOTONIC, &b);
        printf("ns_per_launch %.1f\n", elapsed_ns(&a, &b) / (double)(passes * nl));
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
    /* a tenth of a second first: graph mode learns the window and makes its graph */
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0;; i++) {
        launch((CUfunction)k, 1024, 1, 1, 128, 1, 1, 0, NULL, params, NULL);
        if (every && (i + 1) % every == 0) {
            sync(NULL);
            clock_gettime(CLOCK_MONOTONIC, &b);
            if (elapsed_ns(&a, &b) > 1e8)
                break;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        launch((CUfunction)k, 1024, 1, 1, 128, 1, 1, 0, NULL, params, NULL);
        if (every && (i + 1) % every == 0)
            sync(NULL);   /* windows of `every` launches, as a boundary closes them */
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("ns_per_launch %.1f\n", elapsed_ns(&a, &b) / (double)n);
    return 0;
}
