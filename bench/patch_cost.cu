// What replay's driver calls cost the host, per call, on the GPU at hand: patching an
// executable graph's node (a kernel node by its parameters' size, a memset node, a copy
// node), and launching the graph, with the graph's last launch still queued behind GPU
// work (as on a GPU-bound program, where a key's previous window has not run yet) and with
// the GPU idle. Replay patches every node whose bytes changed, then launches (replay/
// graph.c); its stats give the time a replayed window takes on the application's thread,
// and this says how much of it is the driver's.
//
// Each measurement: a graph of 32 nodes, node 0 of the kind measured and 31 small kernels;
// per round, a long kernel queued first (busy) or the stream synchronized (idle), the graph
// launched, node 0 patched with new bytes (timed) and the graph launched again (timed);
// and, as "ring", the same as busy with a second executable instance of the graph patched
// and launched instead of the one still queued.
// Then the launch after k of 32 nodes were patched (k = 0 to 32), idle, busy, with the
// host's caches made cold by a write of 256 MiB before the patches, and the same cold
// write followed by the patches and launch made by a second thread that does nothing else
// (spinning on a flag): whether a launcher thread beside the application, its caches
// left to the driver, would launch at the idle cost. Two more cold columns say where a
// cold launch's time goes: "other first", another graph of one node launched on the
// stream (untimed) after the cold write and before the patches (if the launch is then
// cheap, its cost is the stream's and the driver's state, which any launch warms, not
// this graph's); "touched", the second thread querying the graph and the stream
// (cudaGraphExecGetFlags, cudaStreamQuery) before the patches (whether warming them from
// another core, as a thread could while the application builds a window's last launch,
// makes the application's launch cheaper).
// Prints medians over the rounds, in microseconds.
//
//   nvcc -O2 -arch=sm_90 -o patch_cost bench/patch_cost.cu && ./patch_cost [spin_us]
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x)                                                                     \
    do {                                                                          \
        cudaError_t e_ = (x);                                                     \
        if (e_ != cudaSuccess) {                                                  \
            fprintf(stderr, "patch_cost: %s: %s\n", #x, cudaGetErrorString(e_)); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

template <int N> struct blob { float *p; unsigned char pad[N - sizeof(float *)]; };

template <int N> __global__ void param_kernel(blob<N> b) { b.p[threadIdx.x] += b.pad[threadIdx.x]; }

__global__ void small_kernel(float *p, float v) { p[threadIdx.x] += v; }

__global__ void spin_kernel(long long ns) {
    long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); while (t - t0 < ns);
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return v[n / 2];
}

#define ROUNDS 41
#define NODES 32

static cudaStream_t s;
static float *buf;    // 64 floats: small kernels and patched pointers
static char *bytes;   // 2 x 1 MiB: memset and copy targets

enum kind { K16, K256, K1024, K4096, MEMSET, COPY, NKIND };
static const char *kind_name[NKIND] = {"kernel, 16 B of parameters", "kernel, 256 B", "kernel, 1 KiB",
                                       "kernel, 4 KiB", "memset node (64 KiB)", "copy node (64 KiB)"};

template <int N> static void kernel_params(cudaKernelNodeParams *kp, blob<N> *b, void **args, int r) {
    b->p = buf + (r & 1) * 32;
    memset(b->pad, r & 0xff, sizeof b->pad);
    args[0] = b;
    memset(kp, 0, sizeof *kp);
    kp->func = (void *)param_kernel<N>;
    kp->gridDim = dim3(1), kp->blockDim = dim3(32);
    kp->kernelParams = args;
}

static blob<16> b16;
static blob<256> b256;
static blob<1024> b1024;
static blob<4096> b4096;

// Node 0's parameters for round r (r < 0: the graph's first).
static void node0(enum kind k, int r, cudaKernelNodeParams *kp, void **args, cudaMemsetParams *ms,
                  cudaMemcpy3DParms *mc) {
    int h = r & 1;
    switch (k) {
    case K16: kernel_params(kp, &b16, args, r); break;
    case K256: kernel_params(kp, &b256, args, r); break;
    case K1024: kernel_params(kp, &b1024, args, r); break;
    case K4096: kernel_params(kp, &b4096, args, r); break;
    case MEMSET:
        memset(ms, 0, sizeof *ms);
        ms->dst = bytes + h * (1 << 20), ms->value = (unsigned)r & 0xff, ms->elementSize = 1;
        ms->width = 65536, ms->height = 1, ms->pitch = 0;
        break;
    default:
        memset(mc, 0, sizeof *mc);
        mc->srcPtr = make_cudaPitchedPtr(bytes + h * (1 << 20), 65536, 65536, 1);
        mc->dstPtr = make_cudaPitchedPtr(bytes + (1 - h) * (1 << 20) + 4096 * h, 65536, 65536, 1);
        mc->extent = make_cudaExtent(65536, 1, 1);
        mc->kind = cudaMemcpyDeviceToDevice;
    }
}

// A round's end: the patches began at t0 and end now; e is launched and the stream
// synchronized. The patches' time goes to *patch, the launch's to *launch.
static void launch_timed(cudaGraphExec_t e, double t0, double *patch, double *launch) {
    double t1 = now_us();
    CK(cudaGraphLaunch(e, s));
    double t2 = now_us();
    *patch = t1 - t0, *launch = t2 - t1;
    CK(cudaStreamSynchronize(s));
}

// busy 0: idle; 1: the instance just launched patched; 2: a second instance of the graph
// patched and launched (a ring of two), the first's launch still queued.
static void measure(enum kind k, long long spin_ns, int busy, double *patch, double *launch) {
    cudaGraph_t g;
    CK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t nodes[NODES];
    cudaKernelNodeParams kp;
    void *args[2];
    cudaMemsetParams ms;
    cudaMemcpy3DParms mc;
    node0(k, 0, &kp, args, &ms, &mc);
    if (k == MEMSET) CK(cudaGraphAddMemsetNode(&nodes[0], g, NULL, 0, &ms));
    else if (k == COPY) CK(cudaGraphAddMemcpyNode(&nodes[0], g, NULL, 0, &mc));
    else CK(cudaGraphAddKernelNode(&nodes[0], g, NULL, 0, &kp));
    float v = 1.0f, *p = buf;
    void *sargs[2] = {&p, &v};
    cudaKernelNodeParams sp = {};
    sp.func = (void *)small_kernel, sp.gridDim = dim3(1), sp.blockDim = dim3(32), sp.kernelParams = sargs;
    for (int i = 1; i < NODES; i++) CK(cudaGraphAddKernelNode(&nodes[i], g, &nodes[i - 1], 1, &sp));
    cudaGraphExec_t ex, ex2;
    CK(cudaGraphInstantiate(&ex, g, 0));
    CK(cudaGraphInstantiate(&ex2, g, 0));
    for (int i = 0; i < 10; i++) CK(cudaGraphLaunch(i & 1 ? ex2 : ex, s));
    CK(cudaStreamSynchronize(s));
    double pt[ROUNDS], lt[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        if (busy) spin_kernel<<<1, 1, 0, s>>>(spin_ns);
        CK(cudaGraphLaunch(ex, s));
        if (!busy) CK(cudaStreamSynchronize(s));
        node0(k, r + 1, &kp, args, &ms, &mc);
        cudaGraphExec_t e = busy == 2 ? ex2 : ex;
        double t0 = now_us();
        if (k == MEMSET) CK(cudaGraphExecMemsetNodeSetParams(e, nodes[0], &ms));
        else if (k == COPY) CK(cudaGraphExecMemcpyNodeSetParams(e, nodes[0], &mc));
        else CK(cudaGraphExecKernelNodeSetParams(e, nodes[0], &kp));
        launch_timed(e, t0, &pt[r], &lt[r]);
    }
    *patch = median(pt, ROUNDS), *launch = median(lt, ROUNDS);
    CK(cudaGraphExecDestroy(ex));
    CK(cudaGraphExecDestroy(ex2));
    CK(cudaGraphDestroy(g));
}

// The launcher thread of state 3: waits (spinning) for a round, patches the first k nodes
// of ex and launches it, and reports the two times.
static struct {
    int go, done, quit, k, touch;   // flags by __atomic builtins; touch: query ex, s only
    cudaGraphExec_t ex;
    cudaGraphNode_t *nodes;
    cudaKernelNodeParams *kp;
    double patches, launch;
} lr;

static void *launcher(void *arg) {
    (void)arg;
    CK(cudaSetDevice(0));
    for (;;) {
        while (!__atomic_load_n(&lr.go, __ATOMIC_ACQUIRE)) {
        }
        __atomic_store_n(&lr.go, 0, __ATOMIC_RELAXED);
        if (lr.quit) return NULL;
        if (lr.touch) {
            unsigned long long flags;
            CK(cudaGraphExecGetFlags(lr.ex, &flags));
            (void)cudaStreamQuery(s);   // cudaErrorNotReady is an answer too
            __atomic_store_n(&lr.done, 1, __ATOMIC_RELEASE);
            continue;
        }
        double t0 = now_us();
        for (int i = 0; i < lr.k; i++) CK(cudaGraphExecKernelNodeSetParams(lr.ex, lr.nodes[i], &lr.kp[i]));
        double t1 = now_us();
        CK(cudaGraphLaunch(lr.ex, s));
        lr.patches = t1 - t0, lr.launch = now_us() - t1;
        __atomic_store_n(&lr.done, 1, __ATOMIC_RELEASE);
    }
}

static void launcher_round(int k, cudaGraphExec_t ex, cudaGraphNode_t *nodes, cudaKernelNodeParams *kp,
                           double *patches, double *launch) {
    lr.k = k, lr.ex = ex, lr.nodes = nodes, lr.kp = kp, lr.touch = 0;
    __atomic_store_n(&lr.go, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&lr.done, __ATOMIC_ACQUIRE)) {
    }
    __atomic_store_n(&lr.done, 0, __ATOMIC_RELAXED);
    *patches = lr.patches, *launch = lr.launch;
    CK(cudaStreamSynchronize(s));
}

// State 5's touch: the launcher thread queries ex and the stream, and returns.
static void launcher_touch(cudaGraphExec_t ex) {
    lr.ex = ex, lr.touch = 1;
    __atomic_store_n(&lr.go, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&lr.done, __ATOMIC_ACQUIRE)) {
    }
    __atomic_store_n(&lr.done, 0, __ATOMIC_RELAXED);
}

// The launch after k of a graph's nodes were patched: 32 kernel nodes of 1 KiB of
// parameters each (cuBLAS's kernels take about that), the first k patched each round (each
// pointer moved), then the graph launched. state 0: idle; 1: GPU work queued ahead (busy);
// 2: idle, with `cold_mib` of host memory written before the patches (the caches then hold
// the host's work, as after a window of Python); 3: as 2, the patches and launch made by
// the launcher thread; 4: as 2, another graph (tiny) launched first; 5: as 2, the launcher
// thread querying the graph and the stream first. Medians of the patches' total and of
// the launch.
static void measure_k(int k, long long spin_ns, int state, char *cold, size_t cold_bytes,
                      cudaGraphExec_t tiny, double *patches, double *launch) {
    cudaGraph_t g;
    CK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t nodes[NODES];
    static blob<1024> bl[NODES];
    void *args[NODES][2];
    cudaKernelNodeParams kp[NODES];
    for (int i = 0; i < NODES; i++) {
        kernel_params(&kp[i], &bl[i], args[i], 0);
        CK(cudaGraphAddKernelNode(&nodes[i], g, i ? &nodes[i - 1] : NULL, i ? 1 : 0, &kp[i]));
    }
    cudaGraphExec_t ex;
    CK(cudaGraphInstantiate(&ex, g, 0));
    for (int i = 0; i < 10; i++) CK(cudaGraphLaunch(ex, s));
    CK(cudaStreamSynchronize(s));
    double pt[ROUNDS], lt[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < k; i++) kernel_params(&kp[i], &bl[i], args[i], r + 1);
        if (state == 1) spin_kernel<<<1, 1, 0, s>>>(spin_ns);
        if (state >= 2)
            for (size_t o = 0; o < cold_bytes; o += 64) cold[o] = (char)r;
        if (state == 3) {
            launcher_round(k, ex, nodes, kp, &pt[r], &lt[r]);
            continue;
        }
        if (state == 4) CK(cudaGraphLaunch(tiny, s));
        if (state == 5) launcher_touch(ex);
        double t0 = now_us();
        for (int i = 0; i < k; i++) CK(cudaGraphExecKernelNodeSetParams(ex, nodes[i], &kp[i]));
        launch_timed(ex, t0, &pt[r], &lt[r]);
    }
    *patches = median(pt, ROUNDS), *launch = median(lt, ROUNDS);
    CK(cudaGraphExecDestroy(ex));
    CK(cudaGraphDestroy(g));
}

int main(int argc, char **argv) {
    long long spin_ns = (argc > 1 ? atoll(argv[1]) : 2000) * 1000;
    if (spin_ns < 0) {
        fprintf(stderr, "usage: patch_cost [spin_us]\n");
        return 2;
    }
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc(&buf, 64 * sizeof(float)));
    CK(cudaMalloc(&bytes, 2 << 20));
    spin_kernel<<<1, 1, 0, s>>>(1000);
    CK(cudaStreamSynchronize(s));
    printf("patch_cost: graphs of %d nodes, node 0 patched each round; %d rounds; medians in us;\n"
           "busy: %lld us of GPU work queued ahead of the graph's last launch\n",
           NODES, ROUNDS, spin_ns / 1000);
    printf("  %-28s %8s %8s %8s %8s %8s %8s\n", "node 0, patch / launch:", "idle", "", "busy", "",
           "ring", "");
    for (int k = 0; k < NKIND; k++) {
        double pt[3], lt[3];
        for (int b = 0; b < 3; b++) measure((enum kind)k, spin_ns, b, &pt[b], &lt[b]);
        printf("  %-28s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n", kind_name[k], pt[0], lt[0], pt[1],
               lt[1], pt[2], lt[2]);
    }
    size_t cold_bytes = (size_t)256 << 20;
    char *cold = (char *)malloc(cold_bytes);
    if (!cold) return 1;
    memset(cold, 1, cold_bytes);
    printf("graphs of %d kernel nodes of 1 KiB parameters, the first k patched, then launched; "
           "cold: %zu MiB of host memory written before the patches\n", NODES, cold_bytes >> 20);
    printf("  %-28s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "k, patches / launch:", "idle",
           "", "busy", "", "cold", "", "launcher", "", "other 1st", "", "touched", "");
    pthread_t th;
    if (pthread_create(&th, NULL, launcher, NULL)) return 1;
    // state 4's other graph: one small kernel
    cudaGraph_t tg;
    cudaGraphExec_t tiny;
    float v = 1.0f, *p = buf;
    void *targs[2] = {&p, &v};
    cudaKernelNodeParams tp = {};
    tp.func = (void *)small_kernel, tp.gridDim = dim3(1), tp.blockDim = dim3(32), tp.kernelParams = targs;
    cudaGraphNode_t tn;
    CK(cudaGraphCreate(&tg, 0));
    CK(cudaGraphAddKernelNode(&tn, tg, NULL, 0, &tp));
    CK(cudaGraphInstantiate(&tiny, tg, 0));
    static const int ks[] = {0, 1, 4, 16, 32};
    for (unsigned j = 0; j < sizeof ks / sizeof ks[0]; j++) {
        double pt[6], lt[6];
        for (int st = 0; st < 6; st++)
            measure_k(ks[j], spin_ns, st, cold, cold_bytes, tiny, &pt[st], &lt[st]);
        printf("  %-28d %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n", ks[j],
               pt[0], lt[0], pt[1], lt[1], pt[2], lt[2], pt[3], lt[3], pt[4], lt[4], pt[5], lt[5]);
    }
    CK(cudaGraphExecDestroy(tiny));
    CK(cudaGraphDestroy(tg));
    lr.quit = 1;
    __atomic_store_n(&lr.go, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    free(cold);
    return 0;
}
