// Kernel launches of many shapes through the CUDA runtime API, for the `launches` suite:
// parameters of every kind (ints of each width, float, double, pointers, a 13-byte struct
// by value at an odd offset, a struct with padding, a 1 KiB struct, no parameters), 3-D
// grids with dynamic shared memory, <<<>>>, cudaLaunchKernel and cudaLaunchKernelEx, device
// memsets (1-D and 2-D), device-to-device copies (1-D and 2-D), host copies, two streams
// (one blocking, one not) ordered by an event, the legacy and per-thread default streams,
// stream-ordered allocation, event queries and synchronizations. Every round's results go
// to the output file, which must be bit-identical with and without tcfuse.
//
//   nvcc -O2 -arch=sm_90 -o launches tests/gpu/launches.cu && ./launches out.bin [rounds]
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "launches: %s:%d: %s: %s\n", __FILE__, __LINE__, #x,       \
                    cudaGetErrorString(e_));                                           \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)
#define CKL() CK(cudaGetLastError())

struct Odd13 { unsigned char b[13]; };        // size 13, alignment 1
struct Mixed { char c; double d; short s; };  // size 24: 7 + 6 bytes of padding
struct Big { float v[256]; };                 // 1 KiB

__global__ void k_ints(int *out, int a, long long b, unsigned short c, signed char d, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a + (int)((b >> 32) + i) * 3 + c + d;
}

__global__ void k_floats(float *out, const float *in, float a, double b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaf(in[i], a, (float)b);
}

__global__ void k_saxpy(float *y, const float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void k_odd(int *out, char tag, Odd13 s, short t, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = s.b[i % 13] * tag + t;
}

__global__ void k_mixed(double *out, Mixed m, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = m.d * i + m.c + m.s;
}

__global__ void k_big(float *out, Big b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = b.v[i & 255] * (float)(i + 1);
}

// Reverses each block's elements through dynamic shared memory; 3-D grid and block.
__global__ void k_smem3d(float *out, const float *in, int nx, int ny) {
    extern __shared__ float sh[];
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    int idx = (z * ny + y) * nx + x;
    int nt = blockDim.x * blockDim.y * blockDim.z;
    int t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    sh[t] = in[idx];
    __syncthreads();
    out[idx] = sh[nt - 1 - t] + 0.5f * (float)t;
}

__global__ void k_noparams(void) {}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "launches.bin";
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    const int N = 1000, TPB = 128, G = (N + TPB - 1) / TPB;
    const int NX = 32, NY = 16, NZ = 4, N3 = NX * NY * NZ;
    const size_t W = 40, H = 8;

    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreate(&s2));  // blocking: orders against the legacy default stream
    cudaEvent_t ev, done;
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CK(cudaEventCreate(&done));

    int *di, *di2;
    float *df_in, *df_out, *dcopy, *dbig, *d3in, *d3out, *dfx, *dfy, *dacc;
    double *dd;
    unsigned char *pitch1, *pitch2;
    size_t pitch;
    CK(cudaMalloc(&di, N * sizeof(int)));
    CK(cudaMalloc(&di2, N * sizeof(int)));
    CK(cudaMalloc(&df_in, N * sizeof(float)));
    CK(cudaMalloc(&df_out, N * sizeof(float)));
    CK(cudaMalloc(&dcopy, N * sizeof(float)));
    CK(cudaMalloc(&dbig, N * sizeof(float)));
    CK(cudaMalloc(&dfx, N * sizeof(float)));
    CK(cudaMalloc(&dfy, N * sizeof(float)));
    CK(cudaMalloc(&dacc, N * sizeof(float)));
    CK(cudaMalloc(&d3in, N3 * sizeof(float)));
    CK(cudaMalloc(&d3out, N3 * sizeof(float)));
    CK(cudaMalloc(&dd, N * sizeof(double)));
    CK(cudaMallocPitch((void **)&pitch1, &pitch, W, H));
    CK(cudaMallocPitch((void **)&pitch2, &pitch, W, H));

    float *h_in, *h3;
    CK(cudaMallocHost(&h_in, N * sizeof(float)));
    h3 = (float *)malloc(N3 * sizeof(float));
    for (int i = 0; i < N3; i++) h3[i] = (float)((i * 37) % 101) - 50.0f;
    CK(cudaMemcpy(d3in, h3, N3 * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemset(pitch2, 0, pitch * H));

    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); return 1; }
    size_t total = 0;
    size_t hostbytes = N * sizeof(double) + N3 * sizeof(float) + pitch * H;
    unsigned char *host = (unsigned char *)malloc(hostbytes);

    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < N; i++) h_in[i] = (float)((i * 7 + r * 13) % 97) * 0.25f - 12.0f;

        // Stream 1 (non-blocking): a chain of work with every parameter shape.
        CK(cudaMemcpyAsync(df_in, h_in, N * sizeof(float), cudaMemcpyHostToDevice, s1));
        CK(cudaMemsetAsync(di, 0xAB, N * sizeof(int), s1));
        k_ints<<<G, TPB, 0, s1>>>(di, 7 + r, (3LL << 33) + r, (unsigned short)(60000 + r), (signed char)-5, N);
        CKL();
        k_floats<<<G, TPB, 0, s1>>>(df_out, df_in, 1.5f + r, 0.25, N);
        CKL();
        CK(cudaMemcpyAsync(dcopy, df_out, N * sizeof(float), cudaMemcpyDeviceToDevice, s1));
        Big big;
        for (int j = 0; j < 256; j++) big.v[j] = j * 0.5f - r;
        k_big<<<G, TPB, 0, s1>>>(dbig, big, N);
        CKL();
        k_smem3d<<<dim3(NX / 8, NY / 4, NZ / 2), dim3(8, 4, 2), 64 * sizeof(float), s1>>>(d3out, d3in, NX, NY);
        CKL();
        k_noparams<<<1, 1, 0, s1>>>();
        CKL();
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(G);
        cfg.blockDim = dim3(TPB);
        cfg.stream = s1;
        CK(cudaLaunchKernelEx(&cfg, k_floats, dfx, (const float *)df_in, 0.5f, (double)r, N));
        float *tmp;
        CK(cudaMallocAsync((void **)&tmp, N * sizeof(float), s1));
        k_floats<<<G, TPB, 0, s1>>>(tmp, df_in, -1.0f, 1.0 + r, N);
        CKL();
        CK(cudaMemcpyAsync(dacc, tmp, N * sizeof(float), cudaMemcpyDeviceToDevice, s1));
        CK(cudaFreeAsync(tmp, s1));
        CK(cudaEventRecord(ev, s1));

        // Stream 2 (blocking) waits for stream 1's event, then reads its results.
        CK(cudaStreamWaitEvent(s2, ev, 0));
        k_saxpy<<<G, TPB, 0, s2>>>(dcopy, df_in, -2.0f, N);
        CKL();
        Odd13 o;
        for (int j = 0; j < 13; j++) o.b[j] = (unsigned char)(j * 17 + r);
        k_odd<<<G, TPB, 0, s2>>>(di2, (char)3, o, (short)-5, N);
        CKL();
        Mixed m;
        memset(&m, 0xCD, sizeof m);  // padding bytes: fixed, so traces repeat
        m.c = (char)(r + 1);
        m.d = 0.125 * (r + 1);
        m.s = (short)-300;
        k_mixed<<<G, TPB, 0, s2>>>(dd, m, N);
        CKL();
        CK(cudaMemset2DAsync(pitch1, pitch, 0x11 + r, W, H, s2));
        CK(cudaMemcpy2DAsync(pitch2, pitch, pitch1, pitch, W / 2, H, cudaMemcpyDeviceToDevice, s2));
        float a = 2.0f;
        double bb = -0.5;
        int n = N;
        void *args[] = {&dfy, &dcopy, &a, &bb, &n};
        CK(cudaLaunchKernel((const void *)k_floats, dim3(G), dim3(TPB), args, 0, s2));
        CK(cudaEventRecord(done, s2));
        while (cudaEventQuery(done) == cudaErrorNotReady) {
        }
        CK(cudaEventSynchronize(done));
        CK(cudaStreamSynchronize(s2));

        // The legacy default stream, then the per-thread one (both blocking).
        k_saxpy<<<G, TPB>>>(dfy, dfx, 1.0f, N);
        CKL();
        k_saxpy<<<G, TPB, 0, cudaStreamPerThread>>>(dfx, df_in, 0.5f, N);
        CKL();
        CK(cudaStreamSynchronize(cudaStreamPerThread));
        CK(cudaStreamSynchronize(s1));
        CK(cudaDeviceSynchronize());

        // Results of the round, in a fixed order.
        struct { const void *p; size_t n; } outs[] = {
            {di, N * sizeof(int)},      {di2, N * sizeof(int)},     {df_out, N * sizeof(float)},
            {dcopy, N * sizeof(float)}, {dbig, N * sizeof(float)},  {dfx, N * sizeof(float)},
            {dfy, N * sizeof(float)},   {dacc, N * sizeof(float)},  {dd, N * sizeof(double)},
            {d3out, N3 * sizeof(float)}, {pitch2, pitch * H},
        };
        for (size_t j = 0; j < sizeof outs / sizeof outs[0]; j++) {
            CK(cudaMemcpy(host, outs[j].p, outs[j].n, cudaMemcpyDeviceToHost));
            if (fwrite(host, 1, outs[j].n, f) != outs[j].n) { perror(path); return 1; }
            total += outs[j].n;
        }
    }
    if (fclose(f) != 0) { perror(path); return 1; }
    CK(cudaStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    CK(cudaEventDestroy(ev));
    CK(cudaEventDestroy(done));
    cudaFree(di); cudaFree(di2); cudaFree(df_in); cudaFree(df_out); cudaFree(dcopy);
    cudaFree(dbig); cudaFree(dfx); cudaFree(dfy); cudaFree(dacc); cudaFree(d3in);
    cudaFree(d3out); cudaFree(dd); cudaFree(pitch1); cudaFree(pitch2);
    cudaFreeHost(h_in);
    free(h3);
    free(host);
    printf("launches: %d rounds, %zu bytes written to %s\n", rounds, total, path);
    return 0;
}
