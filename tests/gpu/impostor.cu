// Two of PyTorch 2.11's kernels stood in for, for the `mismatch` suite: kernels named
// exactly as PyTorch names its float exp and neg kernels (the vectorized loop), with
// PyTorch's parameter layout (int n, an empty lambda, std::array<char *, 2>), loaded from
// PTX through the driver API. tcfuse decodes them by name as exp and neg.
//
//   honest    the kernel named exp computes expf, as PyTorch's does: tcfuse checks it alone,
//             finds it equal to its generated exp, and fuses exp and neg into one kernel.
//   impostor  the kernel named exp computes __expf (the fast approximation, which differs
//             from expf on most inputs): tcfuse's check of that kernel alone must catch it,
//             disable it (its launches then run as issued) and say so; nothing is fused
//             and the program's output stays the impostor's.
//
// Each iteration runs exp (a -> b) and neg (b -> c) on the legacy stream, then waits for
// the context. The output file holds b and c of the first and of the last iteration; a
// run under tcfuse must write the same bytes as a run without it in the same mode, and
// the two modes must write different bytes (else the impostor proves nothing).
//
//   nvcc -ptx -DIMPOSTOR_PTX -arch=sm_90 -o impostor.ptx tests/gpu/impostor.cu
//   nvcc -O2 -arch=sm_90 -o impostor tests/gpu/impostor.cu -lcuda
//   ./impostor impostor.ptx honest|impostor OUT [iterations]
#ifdef IMPOSTOR_PTX

struct Lambda {};                // a capture-less lambda: one byte
struct Data { char *p[2]; };     // std::array<char *, 2>: out, in

// Grid-stride: right for any grid (tcfuse's check sizes the grid for its own N).
#define IMPOSTOR_LOOP(expr)                                                          \
    const float *in = (const float *)d.p[1];                                         \
    float *out = (float *)d.p[0];                                                    \
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) { \
        float x = in[i];                                                             \
        out[i] = (expr);                                                             \
    }

extern "C" __global__ void tcf_exp_honest(int n, Lambda, Data d) { IMPOSTOR_LOOP(expf(x)) }
extern "C" __global__ void tcf_exp_impostor(int n, Lambda, Data d) { IMPOSTOR_LOOP(__expf(x)) }
extern "C" __global__ void tcf_neg(int n, Lambda, Data d) { IMPOSTOR_LOOP(-x) }

#else

#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>

#define CK(x)                                                                          \
    do {                                                                               \
        CUresult e_ = (x);                                                             \
        if (e_ != CUDA_SUCCESS) {                                                      \
            const char *s_ = "?";                                                      \
            cuGetErrorString(e_, &s_);                                                 \
            fprintf(stderr, "impostor: %s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_);  \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

// PyTorch 2.11's names (tests/fixtures/torch-2.11-h100-single-ops.log).
static const char EXP_NAME[] =
    "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_15exp_kernel_cudaERNS_18Tensor"
    "IteratorBaseEENKUlvE0_clEvENKUlvE0_clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_";
static const char NEG_NAME[] =
    "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_15neg_kernel_cudaERNS_18Tensor"
    "IteratorBaseEENKUlvE0_clEvENKUlvE5_clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_";

static void rename_all(std::string &s, const std::string &from, const std::string &to)
{
    for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
        s.replace(at, from.size(), to);
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[2], "honest") && strcmp(argv[2], "impostor"))) {
        fprintf(stderr, "usage: impostor PTX honest|impostor OUT [iterations]\n");
        return 2;
    }
    int iters = argc > 4 ? atoi(argv[4]) : 20;
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    std::string ptx;
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        ptx.append(chunk, got);
    fclose(f);
    rename_all(ptx, std::string("tcf_exp_") + argv[2], EXP_NAME);
    rename_all(ptx, "tcf_neg", NEG_NAME);

    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fexp, fneg;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, ptx.c_str()));
    CK(cuModuleGetFunction(&fexp, mod, EXP_NAME));
    CK(cuModuleGetFunction(&fneg, mod, NEG_NAME));

    // Odd length; edge values first (zeros, infinities, NaN, subnormals, the ends of exp's
    // range), then a spread of values where __expf and expf part.
    const int n = (1 << 20) + 3;
    const size_t bytes = (size_t)n * sizeof(float);
    float *h = (float *)malloc(bytes), *res = (float *)malloc(4 * bytes);
    const uint32_t edge[] = { 0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                              0x00000001u, 0x807fffffu, 0x00400000u, 0x42b17218u, 0xc2ce8ed0u,
                              0x3f800000u, 0xbf800000u, 0x42c80000u, 0xc2c80000u };
    const int nedge = (int)(sizeof edge / sizeof edge[0]);
    uint32_t r = 12345u;
    for (int i = 0; i < n; i++) {
        r = r * 1664525u + 1013904223u;
        if (i < nedge)
            memcpy(&h[i], &edge[i], 4);
        else
            h[i] = ((float)(r >> 8) / 16777216.0f - 0.5f) * 160.0f;  // [-80, 80)
    }
    CUdeviceptr a, b, c;
    CK(cuMemAlloc(&a, bytes));
    CK(cuMemAlloc(&b, bytes));
    CK(cuMemAlloc(&c, bytes));
    CK(cuMemcpyHtoD(a, h, bytes));

    unsigned grid = (unsigned)((n + 511) / 512);  // PyTorch's: 128 threads x 4 elements
    char lam = 0;
    for (int it = 0; it < iters; it++) {
        CUdeviceptr d1[2] = { b, a }, d2[2] = { c, b };
        int nn = n;
        void *p1[] = { &nn, &lam, d1 }, *p2[] = { &nn, &lam, d2 };
        CK(cuLaunchKernel(fexp, grid, 1, 1, 128, 1, 1, 0, NULL, p1, NULL));
        CK(cuLaunchKernel(fneg, grid, 1, 1, 128, 1, 1, 0, NULL, p2, NULL));
        CK(cuCtxSynchronize());
        if (it == 0 || it == iters - 1) {
            float *dst = res + (it == 0 ? 0 : 2) * (size_t)n;
            CK(cuMemcpyDtoH(dst, b, bytes));
            CK(cuMemcpyDtoH(dst + n, c, bytes));
        }
    }
    FILE *o = fopen(argv[3], "wb");
    if (!o || fwrite(res, 1, 4 * bytes, o) != 4 * bytes || fclose(o)) {
        perror(argv[3]);
        return 1;
    }
    printf("impostor: %s, %d iterations of exp and neg over %d floats\n", argv[2], iters, n);
    CK(cuMemFree(a));
    CK(cuMemFree(b));
    CK(cuMemFree(c));
    CK(cuModuleUnload(mod));
    CK(cuDevicePrimaryCtxRelease(dev));
    return 0;
}

#endif
