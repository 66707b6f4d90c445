// fork and CUDA, for the `forks` suite. Prints every result; the output, sorted (children
// print when they finish), must be the same with and without tcfuse, and the process must
// end, with the same status:
//   before  four children forked before the parent touches CUDA, each doing CUDA work of
//           its own at once; then the parent does its own
//   after   the parent does CUDA work, then forks: the child's first CUDA call fails (the
//           driver refuses a process forked after initialization) and it says how; the
//           parent goes on with CUDA work after the child has exited
//
//   nvcc -O2 -arch=sm_90 -o forks tests/gpu/forks.cu && ./forks before|after
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N (1 << 18)

__global__ void step(float *x, float k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * k + sinf((float)i * 1e-3f * k);
}

// Some CUDA work: a checksum of its result, or the first error's name.
static void work(const char *who, float k) {
    float *d = NULL;
    static float h[N];
    cudaError_t e = cudaMalloc((void **)&d, N * sizeof(float));
    if (e == cudaSuccess)
        e = cudaMemset(d, 0, N * sizeof(float));
    for (int r = 0; r < 20 && e == cudaSuccess; r++) {
        step<<<(N + 255) / 256, 256>>>(d, k + 0.01f * r, N);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess)
        e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        printf("%s: %s\n", who, cudaGetErrorName(e));
    } else {
        double s = 0;
        for (int i = 0; i < N; i++)
            s += h[i];
        printf("%s: checksum %.9e\n", who, s);
    }
    if (d)
        cudaFree(d);
    fflush(stdout);
}

static int reap(pid_t pid, const char *who) {
    int st = 0;
    if (waitpid(pid, &st, 0) < 0)
        return 1;
    printf("%s: %s %d\n", who, WIFEXITED(st) ? "exit" : "signal",
           WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "before";
    char who[32];
    fflush(stdout);
    if (!strcmp(mode, "before")) {
        pid_t kids[4];
        for (int c = 0; c < 4; c++) {
            if ((kids[c] = fork()) == 0) {
                snprintf(who, sizeof who, "child %d", c);
                work(who, 0.5f + 0.1f * c);
                exit(0);
            }
        }
        for (int c = 0; c < 4; c++) {
            snprintf(who, sizeof who, "child %d", c);
            reap(kids[c], who);
        }
        work("parent", 0.25f);
        return 0;
    }
    if (!strcmp(mode, "after")) {
        work("parent before", 0.25f);
        pid_t kid = fork();
        if (kid == 0) {
            work("child", 0.5f);
            exit(0);  // exit handlers run in the child, tcfuse's included
        }
        reap(kid, "child");
        work("parent after", 0.75f);
        return 0;
    }
    fprintf(stderr, "usage: forks before|after\n");
    return 2;
}
