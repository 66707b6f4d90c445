// CPU cost of a tiny launch: an empty kernel <<<1,32>>> launched N times (default 100000)
// in a loop on one stream. Prints the wall clock of the issuing loop per launch (what the
// host pays) and of the loop plus a final stream synchronize (what the program waits).
// tests/gpu/run (suite launch_cost) runs it without tcfuse, with TCFUSE_MODE=off and in
// observe mode, and takes medians over repetitions.
//
//   nvcc -O2 -arch=sm_90 -o launch_cost bench/launch_cost.cu && ./launch_cost [N]
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x)                                                                      \
    do {                                                                           \
        cudaError_t e_ = (x);                                                      \
        if (e_ != cudaSuccess) {                                                   \
            fprintf(stderr, "launch_cost: %s: %s\n", #x, cudaGetErrorString(e_));  \
            return 1;                                                              \
        }                                                                          \
    } while (0)

__global__ void empty_kernel(void) {}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    if (n <= 0) n = 100000;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = 0; i < 2000; i++) empty_kernel<<<1, 32, 0, s>>>();  // warm-up, lazy loading
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s));

    long long t0 = now_ns();
    for (long i = 0; i < n; i++) empty_kernel<<<1, 32, 0, s>>>();
    long long t1 = now_ns();
    CK(cudaStreamSynchronize(s));
    long long t2 = now_ns();
    CK(cudaGetLastError());

    printf("launch_cost: n %ld issue_ns_per_launch %.1f total_ns_per_launch %.1f sync_us %.1f\n",
           n, (double)(t1 - t0) / n, (double)(t2 - t0) / n, (t2 - t1) / 1e3);
    CK(cudaStreamDestroy(s));
    return 0;
}
