/* tcfuse's own CPU cost per launch, without a GPU: launches against the stand-in driver
 * (tests/stub, whose cuLaunchKernel does nothing but count), so the time per launch is
 * the hooks' cost plus a near-empty call. Run by bench/hook_cost, which compares no
 * library, TCFUSE_MODE=off and observe in one invocation.
 *
 *   hook_cost [launches] [sync_every]   prints "ns_per_launch <value>"
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000, every = argc > 2 ? atol(argv[2]) : 16;
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    gpa_t gpa = h ? (gpa_t)dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!gpa) {
        fprintf(stderr, "hook_cost: libcuda.so.1 (the stand-in) not found\n");
        return 1;
    }
    launch_t launch = (launch_t)sym(gpa, "cuLaunchKernel");
    libload_t libload = (libload_t)sym(gpa, "cuLibraryLoadData");
    getk_t getk = (getk_t)sym(gpa, "cuLibraryGetKernel");
    sync_t sync = (sync_t)sym(gpa, "cuStreamSynchronize");
    CUlibrary lib;
    CUkernel k;
    /* The layout of PyTorch's vectorized add: int N, float alpha, char *data[3]. */
    if (libload(&lib, "x", NULL, NULL, 0, NULL, NULL, 0) || getk(&k, lib, "k_i4_f4_b24"))
        return 1;
    int N = 1 << 20;
    float alpha = 1.0f;
    char *data[3] = { (char *)0x7f0000000000, (char *)0x7f0000400000, (char *)0x7f0000800000 };
    void *params[] = { &N, &alpha, data };
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        launch((CUfunction)k, 1024, 1, 1, 128, 1, 1, 0, NULL, params, NULL);
        if (every && (i + 1) % every == 0)
            sync(NULL);   /* windows of `every` launches, as a boundary closes them */
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)n;
    printf("ns_per_launch %.1f\n", ns);
    return 0;
}
