/* mt [-l METHOD] MODE THREADS LAUNCHES: launches from several threads at once.
 *   streams  thread t launches LAUNCHES x ka on its own created stream
 *   allocs   thread t does LAUNCHES x (cuMemAllocAsync of 256 bytes, cuMemsetD8Async of
 *            them, cuMemFreeAsync) on its own created stream: the allocator's and the
 *            memset's counters raised from every thread at once
 *   ptds     thread t launches LAUNCHES x ka on stream 0 through the entry points the
 *            lookup method gave (run with -l gpa-ptds: the per-thread default stream)
 * The main thread creates every stream first (handles stay deterministic), starts the
 * threads together, joins them, then calls cuCtxSynchronize: with TCFUSE_IDLE_US=0 and
 * LAUNCHES <= TCFUSE_WINDOW_MAX, tcfuse should see THREADS windows of LAUNCHES launches,
 * all closed by that cuCtxSynchronize. Output is printed after the join, in thread order;
 * the stub's log lines of different threads interleave, so compare them sorted.
 */
#include "tests/stub/progs/common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 16

static drv_t   d;
static world_t w;
static CUstream streams[MAX_THREADS];
static int      nlaunch, ptds, allocs;
static pthread_barrier_t start;

typedef struct { int id, failed, ctx_rc; } job_t;

static void *worker(void *arg)
{
    job_t *j = arg;
    int i;
    j->ctx_rc = d.ctxSetCurrent(w.ctx);
    pthread_barrier_wait(&start);
    for (i = 0; allocs && i < nlaunch; i++) {
        CUdeviceptr p = 0;
        if (d.memAllocAsync(&p, 256, streams[j->id]) != CUDA_SUCCESS ||
            d.memsetD8Async(p, (unsigned char)i, 256, streams[j->id]) != CUDA_SUCCESS ||
            d.memFreeAsync(p, streams[j->id]) != CUDA_SUCCESS)
            j->failed++;
    }
    for (i = 0; !allocs && i < nlaunch; i++)
        if (launch_ka(&d, &w, ptds ? NULL : streams[j->id], j->id * 1000 + i, w.buf[j->id % 4]))
            j->failed++;
    return NULL;
}

int main(int argc, char **argv)
{
    const char *method = prog_lookup(&argc, &argv);
    pthread_t th[MAX_THREADS];
    job_t jobs[MAX_THREADS];
    int n, i;
    if (argc < 4 || (strcmp(argv[1], "streams") && strcmp(argv[1], "ptds") &&
                      strcmp(argv[1], "allocs"))) {
        printf("usage: mt [-l METHOD] streams|ptds|allocs THREADS LAUNCHES\n");
        return 2;
    }
    ptds = strcmp(argv[1], "ptds") == 0;
    allocs = strcmp(argv[1], "allocs") == 0;
    n = atoi(argv[2]);
    nlaunch = atoi(argv[3]);
    if (n < 1 || n > MAX_THREADS || nlaunch < 0)
        return 2;
    drv_open(&d, method);
    world_init(&d, &w);
    for (i = 0; i < n; i++)
        said("cuStreamCreate", d.streamCreate(&streams[i], CU_STREAM_NON_BLOCKING));
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (i = 0; i < n; i++) {
        jobs[i].id = i;
        jobs[i].failed = 0;
        pthread_create(&th[i], NULL, worker, &jobs[i]);
    }
    for (i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        printf("thread %d: ctx rc=%d, %d launches, %d failed\n", i, jobs[i].ctx_rc, nlaunch,
               jobs[i].failed);
    }
    said("cuCtxSynchronize", d.ctxSynchronize());
    printf("done\n");
    return 0;
}
