// Graph mode's correctness program (suite `replay`): loops of kernels whose pointers and
// scalars change every iteration, run plain and under TCFUSE_MODE=graph; the output files
// must be equal byte for byte. Every mode ends by writing every buffer it used.
//
//   replay MODE ITERS OUT
//   vary      180 launches per iteration of four kernels (a struct parameter with padding,
//             64-bit scalars), buffers rotating and scalars moving with the iteration, an
//             element count that changes every 7th iteration (another key); a 256-byte
//             checksum copied to the host each iteration (the boundary)
//   selfgraph the program captures 12 launches into its own CUDA graph once
//             (cudaStreamBeginCapture, global mode) and launches it every iteration
//             between eager launches; the graph is re-captured every 10th iteration
//   threads   two threads, two streams: thread 0 writes A with 40 launches and records an
//             event, thread 1 waits for it on its stream and reads A into B with 40
//             launches, each iteration
//   legacy    a blocking stream and the legacy default stream hand data to each other
//             through the legacy stream's implicit order, no event
//   async     cudaMallocAsync / cudaFreeAsync inside the loop: blocks freed behind the
//             kernels that read them and handed out again
//   pdl       programmatic dependent launch, as cuDNN's and flash attention's kernels use
//             it: 24 pairs an iteration of a kernel that triggers its dependents' launch
//             and one launched with programmatic stream serialization that waits for it
//             (cudaGridDependencySynchronize) before reading what it wrote; graph mode
//             carries them in nodes without the attribute
//
//   nvcc -O2 -arch=sm_90 -o replay tests/gpu/replay.cu
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "replay: %s:%d: %s: %s\n", __FILE__, __LINE__, #x,         \
                    cudaGetErrorString(e_));                                           \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

#define N (1 << 14)

struct Mix {
    float *dst;
    const float *src;
    double s;       // 8-byte aligned
    int n;
    char tag[3];    // then padding
};

__global__ void axpy(float *y, const float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void mix(Mix m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m.n) m.dst[i] = (float)(m.src[i] * m.s) + (float)m.tag[i % 3];
}

__global__ void ints(int *out, const float *a, long long k, unsigned short h)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) out[i] = (int)(a[i] * 16.0f) ^ (int)(k + i) ^ h;
}

__global__ void fold(float *acc, const int *v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) acc[i] = acc[i] * 0.5f + (float)(v[i] & 1023) * 0.25f;
}

__global__ void checksum(unsigned *out, const float *x, int n)
{
    __shared__ unsigned s[256];
    unsigned h = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        unsigned u = __float_as_uint(x[i]);
        h = h * 31u + u;
    }
    s[threadIdx.x] = h;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned t = 0;
        for (int i = 0; i < 256; i++) t = t * 131u + s[i];
        out[blockIdx.x] = t;
    }
}

static FILE *out_f;
static void put(const void *p, size_t n) { fwrite(p, 1, n, out_f); }

static void dump(const void *dev, size_t bytes)
{
    void *h = malloc(bytes);
    CK(cudaMemcpy(h, dev, bytes, cudaMemcpyDeviceToHost));
    put(h, bytes);
    free(h);
}

static float *F[6];
static int *I[2];
static unsigned *sums;

static void init_buffers(void)
{
    float *h = (float *)malloc(N * sizeof(float));
    for (int b = 0; b < 6; b++) {
        CK(cudaMalloc(&F[b], N * sizeof(float)));
        for (int i = 0; i < N; i++) h[i] = (float)((i * 7 + b * 13) % 97) * 0.125f - 3.0f;
        CK(cudaMemcpy(F[b], h, N * sizeof(float), cudaMemcpyHostToDevice));
    }
    for (int b = 0; b < 2; b++) {
        CK(cudaMalloc(&I[b], N * sizeof(int)));
        CK(cudaMemset(I[b], 0, N * sizeof(int)));
    }
    CK(cudaMalloc(&sums, 64 * sizeof(unsigned)));
    free(h);
}

// One step of the loop: launch j of iteration it on stream s.
static void step(int it, int j, int n, cudaStream_t s)
{
    int r = (it + j) % 6;
    float *a = F[r], *b = F[(r + 1) % 6];
    int grid = (n + 255) / 256;
    switch (j % 4) {
    case 0: axpy<<<grid, 256, 0, s>>>(a, b, 1.0f / (float)(1 + (it + j) % 5), n); break;
    case 1: {
        Mix m;
        memset(&m, 0x5a, sizeof m);  // padding bytes: a value, not garbage
        m.dst = b, m.src = a, m.s = 0.5 + 0.001 * it, m.n = n;
        m.tag[0] = (char)it, m.tag[1] = (char)j, m.tag[2] = 3;
        mix<<<grid, 256, 0, s>>>(m);
        break;
    }
    case 2: ints<<<N / 256, 256, 0, s>>>(I[j % 2], a, 1000LL * it + j, (unsigned short)(it * 3)); break;
    default: fold<<<N / 256, 256, 0, s>>>(b, I[(j + 1) % 2], N); break;
    }
    CK(cudaGetLastError());
}

static void iteration_end(cudaStream_t s)
{
    unsigned h[64];
    checksum<<<64, 256, 0, s>>>(sums, F[0], N);
    CK(cudaMemcpyAsync(h, sums, sizeof h, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    put(h, sizeof h);
}

static void mode_vary(int iters)
{
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (int it = 0; it < iters; it++) {
        int n = it % 7 == 6 ? N - 1000 : N;
        for (int j = 0; j < 180; j++) step(it, j, n, s);
        iteration_end(s);
    }
}

static void mode_selfgraph(int iters)
{
    cudaStream_t s, c;
    CK(cudaStreamCreate(&s));
    CK(cudaStreamCreate(&c));
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    for (int it = 0; it < iters; it++) {
        if (it % 10 == 0) {  // (re)capture its own graph
            if (x) CK(cudaGraphExecDestroy(x));
            if (g) CK(cudaGraphDestroy(g));
            CK(cudaStreamSynchronize(s));
            CK(cudaStreamBeginCapture(c, cudaStreamCaptureModeGlobal));
            for (int j = 0; j < 12; j++) step(it, j + 50, N, c);
            CK(cudaStreamEndCapture(c, &g));
            CK(cudaGraphInstantiate(&x, g, 0));
        }
        for (int j = 0; j < 40; j++) step(it, j, N, s);
        CK(cudaStreamSynchronize(s));
        CK(cudaGraphLaunch(x, c));
        CK(cudaStreamSynchronize(c));
        for (int j = 40; j < 80; j++) step(it, j, N, s);
        iteration_end(s);
    }
    CK(cudaGraphExecDestroy(x));
    CK(cudaGraphDestroy(g));
}

static cudaStream_t ts[2];
static cudaEvent_t tev;
static pthread_barrier_t tbar;
static int titers;

static void *thread_main(void *arg)
{
    int id = (int)(long)arg;
    CK(cudaSetDevice(0));
    for (int it = 0; it < titers; it++) {
        if (id == 0) {
            for (int j = 0; j < 40; j++) {
                float *a = F[j % 2];
                axpy<<<N / 256, 256, 0, ts[0]>>>(a, F[2 + (it + j) % 2], 0.25f + 0.01f * it, N);
            }
            CK(cudaEventRecord(tev, ts[0]));
        }
        pthread_barrier_wait(&tbar);  // recorded before the other thread waits on it
        if (id == 1) {
            CK(cudaStreamWaitEvent(ts[1], tev, 0));
            for (int j = 0; j < 40; j++) {
                Mix m;
                memset(&m, 0, sizeof m);
                m.dst = F[4 + j % 2], m.src = F[j % 2], m.s = 0.75 - 0.001 * it, m.n = N;
                m.tag[0] = (char)j, m.tag[1] = 1, m.tag[2] = (char)it;
                mix<<<N / 256, 256, 0, ts[1]>>>(m);
            }
        }
        CK(cudaStreamSynchronize(ts[id]));
        pthread_barrier_wait(&tbar);  // nobody writes A while the other reads it
    }
    return NULL;
}

static void mode_threads(int iters)
{
    pthread_t th[2];
    CK(cudaStreamCreate(&ts[0]));
    CK(cudaStreamCreate(&ts[1]));
    CK(cudaEventCreateWithFlags(&tev, cudaEventDisableTiming));
    pthread_barrier_init(&tbar, NULL, 2);
    titers = iters;
    for (long i = 0; i < 2; i++) pthread_create(&th[i], NULL, thread_main, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    iteration_end(ts[0]);
}

static void mode_legacy(int iters)
{
    cudaStream_t s;
    CK(cudaStreamCreate(&s));  // blocking: ordered against the legacy default stream
    for (int it = 0; it < iters; it++) {
        for (int j = 0; j < 10; j++) step(it, j, N, s);
        for (int j = 10; j < 20; j++) step(it, j, N, 0);  // reads what s wrote
        for (int j = 20; j < 30; j++) step(it, j, N, s);  // reads what 0 wrote
        for (int j = 30; j < 34; j++) step(it, j, N, 0);
        iteration_end(0);
    }
}

static void mode_async(int iters)
{
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (int it = 0; it < iters; it++) {
        float *t = NULL;
        CK(cudaMallocAsync(&t, N * sizeof(float), s));
        CK(cudaMemsetAsync(t, 0, N * sizeof(float), s));
        for (int j = 0; j < 16; j++)
            axpy<<<N / 256, 256, 0, s>>>(t, F[(it + j) % 6], 0.5f + 0.125f * j, N);
        for (int j = 0; j < 8; j++)
            axpy<<<N / 256, 256, 0, s>>>(F[j % 6], t, 0.001f * (it + 1), N);
        CK(cudaFreeAsync(t, s));
        float *u = NULL;
        CK(cudaMallocAsync(&u, N * sizeof(float), s));  // may be t's block again
        CK(cudaMemsetAsync(u, 0, N * sizeof(float), s));
        for (int j = 0; j < 8; j++)
            axpy<<<N / 256, 256, 0, s>>>(u, F[(it + 2 * j) % 6], 1.0f, N);
        axpy<<<N / 256, 256, 0, s>>>(F[it % 6], u, 0.01f, N);
        CK(cudaFreeAsync(u, s));
        iteration_end(s);
    }
}

__global__ void pdl_head(float *y, const float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i] * 0.75f;
    cudaTriggerProgrammaticLaunchCompletion();  // after the write: the dependent may start
}

__global__ void pdl_tail(float *z, const float *y, float b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float keep = i < n ? z[i] * b : 0.0f;  // z is not the head's: read before the wait
    cudaGridDependencySynchronize();        // the head's writes are visible from here
    if (i < n) z[i] = keep + y[i] * 0.5f;
}

static void mode_pdl(int iters)
{
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    for (int it = 0; it < iters; it++) {
        for (int j = 0; j < 24; j++) {
            int r = (it + j) % 6;
            float *x = F[r], *y = F[(r + 1) % 6], *z = F[(r + 3) % 6];
            int n = (j % 5 == 4) ? N - 17 * (it % 3) : N;
            pdl_head<<<(n + 255) / 256, 256, 0, s>>>(y, x, 1.0f / (float)(2 + (it + j) % 7), n);
            CK(cudaGetLastError());
            cudaLaunchConfig_t c;
            memset(&c, 0, sizeof c);
            c.gridDim = dim3((n + 255) / 256), c.blockDim = dim3(256), c.stream = s;
            c.attrs = at, c.numAttrs = 1;
            CK(cudaLaunchKernelEx(&c, pdl_tail, z, (const float *)y, 0.25f + 0.01f * (float)j, n));
        }
        iteration_end(s);
    }
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: replay vary|selfgraph|threads|legacy|async|pdl ITERS OUT\n");
        return 2;
    }
    int iters = atoi(argv[2]);
    out_f = fopen(argv[3], "wb");
    if (!out_f) return 2;
    init_buffers();
    if (!strcmp(argv[1], "vary")) mode_vary(iters);
    else if (!strcmp(argv[1], "selfgraph")) mode_selfgraph(iters);
    else if (!strcmp(argv[1], "threads")) mode_threads(iters);
    else if (!strcmp(argv[1], "legacy")) mode_legacy(iters);
    else if (!strcmp(argv[1], "async")) mode_async(iters);
    else if (!strcmp(argv[1], "pdl")) mode_pdl(iters);
    else { fprintf(stderr, "replay: unknown mode %s\n", argv[1]); return 2; }
    CK(cudaDeviceSynchronize());
    for (int b = 0; b < 6; b++) dump(F[b], N * sizeof(float));
    for (int b = 0; b < 2; b++) dump(I[b], N * sizeof(int));
    fclose(out_f);
    printf("replay %s: %d iterations\n", argv[1], iters);
    return 0;
}
