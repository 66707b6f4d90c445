// Concurrency through the CUDA runtime, for the `concurrency` suite: 16 host threads launch
// on 8 streams (two threads per stream, their launches interleaving as the scheduler
// likes), with cross-stream dependencies through events. Each round has two phases,
// separated by barriers so that every event is recorded before anyone waits on it:
//   produce: thread t waits for the event its reader recorded last round (so that its
//            buffer is no longer read), then updates a[t] on its stream and records ev_a[t]
//   consume: thread t makes its stream wait for ev_a[p] (p = (t + 3) % 16, on another
//            stream), reads a[p] and a[t] into acc[t], and records ev_c[t]
// Every thread also allocates and frees stream-ordered scratch each round, and synchronizes
// its stream every few rounds. The results (acc and a of every thread) are written to the
// output file, which must be bit-identical with and without tcfuse, whatever the
// interleaving: every read is ordered after its write by an event.
//
//   nvcc -O2 -arch=sm_90 -o concurrency tests/gpu/concurrency.cu && ./concurrency out.bin [rounds]
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 16
#define STREAMS 8
#define N (1 << 16)

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "concurrency: %s:%d: %s: %s\n", __FILE__, __LINE__, #x,    \
                    cudaGetErrorString(e_));                                           \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

__global__ void produce(float *a, int t, int round, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] * 0.75f + sinf((float)(i + 131 * t + 7919 * round) * 1e-3f);
}

__global__ void scale(float *s, const float *a, float k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) s[i] = a[i] * k;
}

__global__ void consume(float *acc, const float *p, const float *s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) acc[i] = fmaf(acc[i], 0.5f, p[(i * 7) % n] - s[i]);
}

static cudaStream_t streams[STREAMS];
static float *a[THREADS], *acc[THREADS];
static cudaEvent_t ev_a[THREADS], ev_c[THREADS];
static pthread_barrier_t bar;
static int rounds;

static void *worker(void *arg) {
    int t = (int)(intptr_t)arg, p = (t + 3) % THREADS, reader = (t + THREADS - 3) % THREADS;
    cudaStream_t s = streams[t % STREAMS];
    int blocks = (N + 255) / 256;
    for (int r = 0; r < rounds; r++) {
        if (r > 0)
            CK(cudaStreamWaitEvent(s, ev_c[reader], 0));   // my a[t] was read last round
        produce<<<blocks, 256, 0, s>>>(a[t], t, r, N);
        CK(cudaGetLastError());
        CK(cudaEventRecord(ev_a[t], s));
        pthread_barrier_wait(&bar);
        CK(cudaStreamWaitEvent(s, ev_a[p], 0));            // cross-stream: p runs elsewhere
        float *tmp = NULL;
        CK(cudaMallocAsync((void **)&tmp, N * sizeof(float), s));
        scale<<<blocks, 256, 0, s>>>(tmp, a[t], 0.25f + 0.01f * t, N);
        consume<<<blocks, 256, 0, s>>>(acc[t], a[p], tmp, N);
        CK(cudaGetLastError());
        CK(cudaFreeAsync(tmp, s));
        CK(cudaEventRecord(ev_c[t], s));
        if (r % 5 == 4)
            CK(cudaStreamSynchronize(s));
        pthread_barrier_wait(&bar);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: concurrency OUT [ROUNDS]\n");
        return 2;
    }
    rounds = argc > 2 ? atoi(argv[2]) : 40;
    for (int i = 0; i < STREAMS; i++)
        CK(cudaStreamCreateWithFlags(&streams[i], i % 2 ? cudaStreamNonBlocking : cudaStreamDefault));
    for (int t = 0; t < THREADS; t++) {
        CK(cudaMalloc((void **)&a[t], N * sizeof(float)));
        CK(cudaMalloc((void **)&acc[t], N * sizeof(float)));
        CK(cudaMemset(a[t], 0, N * sizeof(float)));
        CK(cudaMemset(acc[t], 0, N * sizeof(float)));
        CK(cudaEventCreateWithFlags(&ev_a[t], cudaEventDisableTiming));
        CK(cudaEventCreateWithFlags(&ev_c[t], cudaEventDisableTiming));
    }
    CK(cudaDeviceSynchronize());
    pthread_barrier_init(&bar, NULL, THREADS);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    CK(cudaDeviceSynchronize());
    FILE *f = fopen(argv[1], "wb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    static float host[N];
    double sum = 0;
    for (int t = 0; t < THREADS; t++) {
        for (int which = 0; which < 2; which++) {
            CK(cudaMemcpy(host, which ? a[t] : acc[t], sizeof host, cudaMemcpyDeviceToHost));
            fwrite(host, sizeof host, 1, f);
            for (int i = 0; i < N; i++)
                sum += host[i];
        }
    }
    fclose(f);
    printf("concurrency: %d threads, %d streams, %d rounds, checksum %.6e\n", THREADS, STREAMS,
           rounds, sum);
    return 0;
}
