/* A plain CUDA C program of many small kernels: the launch-bound C host. No PyTorch, no
 * library: four tiny elementwise kernels of its own, launched with <<<>>> on one stream, a
 * thousand per iteration and one synchronize at its end. Which buffers each launch reads
 * and writes, its scalars and its element count change from launch to launch and from one
 * iteration to the next, as a solver's or a simulation's would. Prints the per-iteration
 * times and a checksum of the buffers' bytes at the end (bench/programs/README.md).
 *
 *   smallk [--iters N] [--warmup W] [--launches L] [--n ELEMENTS]
 *
 * Built by bench/programs/build (nvcc -O2 -arch=sm_90).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe.h"
#include "sha256.h"

#define NBUF 6

#define CHECK(call)                                                                       \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "smallk: %s: %s\n", #call, cudaGetErrorString(e_));           \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

/* Every kernel keeps values in [-1, 1] so that a long run neither overflows nor settles. */
__global__ void axpby(float *y, const float *x, float a, float b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + b * y[i];
}

__global__ void wave(float *y, const float *x, float w, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = sinf(w * x[i] + 0.001f * (float)i);
}

__global__ void mix3(float *z, const float *x, const float *y, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        z[i] = tanhf(a * x[i] - y[i] * z[i]);
}

__global__ void clampsq(double *acc, const float *x, float lo, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = fmaxf(x[i] * x[i], lo);
        acc[i] = 0.5 * acc[i] + (double)v;
    }
}

__global__ void init(float *y, int seed, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned h = (unsigned)i * 2654435761u ^ (unsigned)seed * 40503u;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        y[i] = (float)(h & 0xffffff) / (float)0x800000 - 1.0f;
    }
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int iters = 20, warmup = 5, launches = 1000, n = 4096;
    for (int i = 1; i + 1 < argc; i += 2) {
        int v = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--iters"))
            iters = v;
        else if (!strcmp(argv[i], "--warmup"))
            warmup = v;
        else if (!strcmp(argv[i], "--launches"))
            launches = v;
        else if (!strcmp(argv[i], "--n"))
            n = v;
        else {
            fprintf(stderr, "usage: smallk [--iters N] [--warmup W] [--launches L] [--n ELEMENTS]\n");
            return 2;
        }
    }
    if (iters < 1 || warmup < 0 || launches < 1 || n < 64) {
        fprintf(stderr, "smallk: iters >= 1, warmup >= 0, launches >= 1, n >= 64\n");
        return 2;
    }
    float *buf[NBUF];
    double *acc;
    cudaStream_t st;
    CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    for (int b = 0; b < NBUF; b++) {
        CHECK(cudaMalloc((void **)&buf[b], (size_t)n * sizeof(float)));
        init<<<(n + 255) / 256, 256, 0, st>>>(buf[b], b + 1, n);
    }
    CHECK(cudaMalloc((void **)&acc, (size_t)n * sizeof(double)));
    CHECK(cudaMemsetAsync(acc, 0, (size_t)n * sizeof(double), st));
    CHECK(cudaStreamSynchronize(st));

    int total = warmup + iters;
    double *times = (double *)malloc((size_t)total * sizeof(double));
    int nprobe = (total + PROBE_EVERY - 1) / PROBE_EVERY;
    double *palu = (double *)malloc((size_t)nprobe * sizeof(double));
    double *pmem = (double *)malloc((size_t)nprobe * sizeof(double));
    probe_init();
    for (int it = 0; it < total; it++) {
        if (it % PROBE_EVERY == 0)   /* between iterations: the GPU is idle, nothing timed */
            probe_run(&palu[it / PROBE_EVERY], &pmem[it / PROBE_EVERY]);
        double t0 = now_ms();
        for (int j = 0; j < launches; j++) {
            /* The element count steps between n/2 and n; operands rotate among the buffers. */
            unsigned s = (unsigned)it * 7919u + (unsigned)j;
            int m = n / 2 + (int)((s * 37u) % (unsigned)(n / 2 + 1));
            float *x = buf[s % NBUF], *y = buf[(s + 1 + it % 3) % NBUF], *z = buf[(s + 4) % NBUF];
            float a = 0.5f + 0.25f * (float)((s * 13u) % 7u) / 7.0f;
            int grid = (m + 127) / 128;
            switch (j % 4) {
            case 0: axpby<<<grid, 128, 0, st>>>(y, x, a, 1.0f - a, m); break;
            case 1: wave<<<grid, 128, 0, st>>>(y, x, 1.0f + a, m); break;
            case 2: mix3<<<grid, 128, 0, st>>>(z, x, y, a, m); break;
            default: clampsq<<<grid, 128, 0, st>>>(acc, x, 1e-4f * a, m); break;
            }
        }
        CHECK(cudaGetLastError());
        CHECK(cudaStreamSynchronize(st));
        times[it] = now_ms() - t0;
    }

    sha256_t h;
    sha256_init(&h);
    size_t bytes = (size_t)n * sizeof(double);
    void *host = malloc(bytes);
    for (int b = 0; b < NBUF; b++) {
        CHECK(cudaMemcpy(host, buf[b], (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
        sha256_update(&h, host, (size_t)n * sizeof(float));
    }
    CHECK(cudaMemcpy(host, acc, bytes, cudaMemcpyDeviceToHost));
    sha256_update(&h, host, bytes);
    char hex[65];
    sha256_hex(&h, hex);

    double *meas = (double *)malloc((size_t)iters * sizeof(double));
    memcpy(meas, times + warmup, (size_t)iters * sizeof(double));
    qsort(meas, (size_t)iters, sizeof(double), cmp_double);
    double med = iters % 2 ? meas[iters / 2] : 0.5 * (meas[iters / 2 - 1] + meas[iters / 2]);
    printf("model smallk launches %d n %d iters %d\n", launches, n, iters);
    printf("first_ms %.3f\n", times[0]);
    printf("iter_ms");
    for (int it = warmup; it < total; it++)
        printf(" %.3f", times[it]);
    printf("\nmedian_ms %.3f\n", med);
    printf("probe_ms");
    for (int i = 0; i < nprobe; i++)
        printf(" %.3f", palu[i]);
    printf("\nprobe_mem_ms");
    for (int i = 0; i < nprobe; i++)
        printf(" %.3f", pmem[i]);
    printf("\nchecksum %s\n", hex);
    for (int b = 0; b < NBUF; b++)
        CHECK(cudaFree(buf[b]));
    CHECK(cudaFree(acc));
    CHECK(cudaStreamDestroy(st));
    free(host);
    free(times);
    free(meas);
    return 0;
}
