// The launch-bound loop of graph mode's benchmark (bench/replay): each iteration launches
// 1000 tiny kernels <<<1, 32>>> on one stream (each with its own index and scale, the
// same every iteration) and synchronizes. Prints the wall time of each iteration after a
// warm-up, a checksum of the data, and the medians.
//
//   replay_loop eager [ITERS]   the loop as written (run it under TCFUSE_MODE=graph too)
//   replay_loop hand [ITERS]    the same 1000 launches captured once into a CUDA graph by
//                               hand, launched once per iteration (what a programmer who
//                               rewrote the loop would get)
//   replay_loop vary [ITERS]    like eager, with every kernel's scale changing every
//                               iteration (a replay patches every node)
//   replay_loop meminfo         device memory held by instantiated 1000-node graphs
//
//   nvcc -O2 -arch=sm_90 -o replay_loop bench/replay_loop.cu
#include <cuda_runtime.h>
#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "replay_loop: %s: %s\n", #x, cudaGetErrorString(e_));      \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

#define K 1000

__global__ void tiny(float *x, float a, int i)
{
    if (threadIdx.x == 0) x[i] = x[i] * a + 1.0f;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void issue(float *x, cudaStream_t s, int it, int vary)
{
    for (int i = 0; i < K; i++) {
        float a = 0.5f + 0.0001f * (float)i + (vary ? 1e-7f * (float)it : 0.0f);
        tiny<<<1, 32, 0, s>>>(x, a, i);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "eager";
    int iters = argc > 2 ? atoi(argv[2]) : 300, warm = 30;
    float *x;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc(&x, K * sizeof(float)));
    CK(cudaMemset(x, 0, K * sizeof(float)));
    if (!strcmp(mode, "meminfo")) {
        size_t f0, f1, total;
        cudaGraphExec_t xs[32];
        CK(cudaDeviceSynchronize());
        CK(cudaMemGetInfo(&f0, &total));
        for (int g = 0; g < 32; g++) {
            cudaGraph_t gr;
            CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
            issue(x, s, 0, 0);
            CK(cudaStreamEndCapture(s, &gr));
            CK(cudaGraphInstantiate(&xs[g], gr, 0));
            CK(cudaGraphDestroy(gr));
        }
        CK(cudaDeviceSynchronize());
        CK(cudaMemGetInfo(&f1, &total));
        printf("meminfo: 32 graphs of %d kernel nodes hold %.1f MiB: %.0f bytes per node\n", K,
               (double)(f0 - f1) / 1048576.0, (double)(f0 - f1) / (32.0 * K));
        return 0;
    }
    int hand = !strcmp(mode, "hand"), vary = !strcmp(mode, "vary");
    if (!hand && !vary && strcmp(mode, "eager")) {
        fprintf(stderr, "replay_loop: unknown mode %s\n", mode);
        return 2;
    }
    cudaGraphExec_t gx = NULL;
    if (hand) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        issue(x, s, 0, 0);
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&gx, g, 0));
        CK(cudaGraphDestroy(g));
    }
    std::vector<double> t;
    double first = 0;
    for (int it = 0; it < warm + iters; it++) {
        double t0 = now_us();
        if (hand)
            CK(cudaGraphLaunch(gx, s));
        else
            issue(x, s, it, vary);
        CK(cudaStreamSynchronize(s));
        double dt = now_us() - t0;
        if (it == 0) first = dt;
        if (it >= warm) t.push_back(dt);
    }
    CK(cudaGetLastError());
    std::vector<float> h(K);
    CK(cudaMemcpy(h.data(), x, K * sizeof(float), cudaMemcpyDeviceToHost));
    unsigned sum = 0;
    for (int i = 0; i < K; i++) {
        unsigned u;
        memcpy(&u, &h[i], 4);
        sum = sum * 31u + u;
    }
    std::vector<double> st = t;
    std::sort(st.begin(), st.end());
    printf("replay_loop %s: kernels %d iters %d first_us %.1f median_us %.1f p10_us %.1f p90_us %.1f "
           "us_per_kernel %.3f checksum %08x\n",
           mode, K, iters, first, st[st.size() / 2], st[st.size() / 10], st[st.size() * 9 / 10],
           st[st.size() / 2] / K, sum);
    return 0;
}
