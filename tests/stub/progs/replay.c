/* replay [-l METHOD] SCENARIO ITERS: loops of launches for graph mode (TCFUSE_MODE=graph),
 * each iteration ending with a synchronize unless said otherwise. Every launch's scalars
 * and pointers change from one iteration to the next (the buffers rotate, the scalars
 * count), so a replayed window must have its nodes patched to run what eager ran. The
 * stub logs every kernel that runs, launched or as a graph's node (cuGraphLaunch.node):
 * a run with tcfuse must run the same kernels with the same bytes, in the same order per
 * stream, as one without.
 *   loop       ITERS x (40 launches: ka kb kc kd ka ... on stream s0) |cuStreamSynchronize
 *   fixed      the same with the same bytes every iteration (nothing to patch)
 *   alternate  the same with iteration it % 2's bytes: two sets in turn (each instance of a
 *              ring of two, TCFUSE_REPLAY_RING=2, holds one)
 *   stretch    ITERS x (90 launches as loop's) |cuStreamSynchronize: a stretch whose last
 *              windows slow end cuts (after 4, 8, 16 and 32, the 30 left as 15, 8, 7)
 *   short      ITERS x (ka kb) |sync: windows of 2 launches
 *   streams    ITERS x (10 on s0, 10 on s1 interleaved two by two) |cuCtxSynchronize
 *   legacy     ITERS x (4 on s1, 4 on the legacy stream, 4 on s1) |cuCtxSynchronize:
 *              the legacy stream orders against s1, both ways
 *   free       ITERS x (alloc async, 6 launches reading it, free async, 4 launches)
 *              |cuStreamSynchronize: the free goes after the kernels that read the block
 *   memset     ITERS x (6 launches, cuMemsetD32Async, a launch, cuMemcpyDtoDAsync of 256
 *              or 260 bytes, 5 launches) |sync: memsets and copies are nodes too
 *   attrs      ITERS x (ka with a cluster dimension, 5 launches, ka cooperative, 5
 *              launches, ka with programmatic serialization (its scalar 0x5d5d00XX), 2
 *              launches) through cuLaunchKernelEx |sync: the cooperative launch cuts, the
 *              programmatic one is carried
 *   collective ITERS x (6 launches, a kernel named as NCCL's all-reduce, 6 launches) |sync:
 *              a collective is never held nor put in a graph (its host side posts each
 *              launch's work), and the windows around it are replayed
 *   capture    ITERS x (8 launches |sync, then a capture of 4 launches on s1, its graph
 *              instantiated and launched |sync)
 *   events     two threads, ITERS x: thread 0 launches 8 on s0 and records the event,
 *              thread 1 waits for it on s1 and launches 8 |cuStreamSynchronize each
 *   exit       ITERS x (12 launches |sync), then 12 more and exit without a synchronize
 *   switch     ITERS x (12 launches |sync), then ITERS x (12 other launches |sync): keys
 *              that stop coming, and new ones
 *   restart    ITERS x (12 launches |sync, 12 launches, an event record, the same 12
 *              launches |sync): after the synchronize slow start cuts 4 and 8, after the
 *              event record (a boundary that waits for nothing) 16 and more: a window
 *              there begins with the 4 launches of the short one, and is not its graph
 *   chance     ITERS x (12 launches |sync): the first 6 iterations alike (a graph is
 *              made), then the first 4 launches alike and the other 8's kernels drawn
 *              at random: windows held on the graph's path that leave it
 *   novel      ITERS x (12 launches, every kernel drawn at random |sync): no window's key
 *              ever repeats
 *   fade       ITERS x (12 launches |sync): the first 8 iterations one key, every later
 *              one another (the kernels' order rotated): a key that stops coming
 *   cycle      ITERS x (3 windows of 12 launches |sync each, the kernels' order rotated
 *              from one to the next): three keys in turn
 *   evict      ITERS x (3 windows of 32 launches the cap closes, the kernels' order rotated
 *              from one to the next, |sync): three keys whose graph launches queue behind
 *              each other on TCFUSE_REPLAY_LAUNCHER's thread; with two graphs kept, each
 *              graph made evicts one whose launch may still be queued
 *   inline     ITERS x (32 launches the cap closes, replayed, its graph launch queued on
 *              TCFUSE_REPLAY_LAUNCHER's thread; an allocation, 4 launches whose bytes never
 *              change, its free |sync): the second window's graph, with nothing to patch and
 *              a free after it, is launched on the application's thread, after the queued one
 *   queued     ITERS x (an allocation, 32 launches, one reading it: a window the cap closes,
 *              replayed, its graph launch perhaps still queued on TCFUSE_REPLAY_LAUNCHER's
 *              thread; then by turns: the block freed; a memset on stream 0 (the legacy
 *              stream, or the thread's own under -l gpa-ptds: not held); a cooperative
 *              launch (not held); an allocation and two launches that begin as the window
 *              did, then one that leaves its path |sync, the block freed if not yet); then
 *              ITERS x (36 launches, the 33rd reading a block freed after them |sync: the
 *              last 4 a window replayed inline, its free after it), and once 34 of them and
 *              another (a window of the last 4, held and left); 4 x (68 windows of 32
 *              launches |sync), the last 5 one key; then 32 launches, and main returns
 *              without a synchronize: each must follow the queued launch
 *   smallk     ITERS x (1000 launches |sync) as bench/programs/smallk.cu issues them: the
 *              four kernels in turn, each launch's grid from an element count that steps by
 *              37 between n/2 and n (n 4096), buffers rotating; windows repeat by chance
 */
#include "tests/stub/progs/common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static drv_t   d;
static world_t w;
static CUresult (*begin_capture)(CUstream, CUstreamCaptureMode);
static CUresult (*end_capture)(CUstream, CUgraph *);
static CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
static CUresult (*graph_launch)(CUgraphExec, CUstream);

static void *sym(const char *base, int version)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    if (d.gpa2(base, &p, version, 0, &st) != CUDA_SUCCESS || !p) {
        printf("lookup %s failed\n", base);
        exit(2);
    }
    return p;
}

/* Launch j of iteration it on stream s: kernels in turn, buffers and scalars moving. */
static CUresult one(int it, int j, CUstream s, int vary)
{
    int v = vary == 2 ? it % 2 : vary ? it : 0;
    CUdeviceptr a = w.buf[(j + v) % 4], b = w.buf[(j + v + 1) % 4];
    switch (j % 4) {
    case 0: return launch_ka(&d, &w, s, v * 100 + j, a);
    case 1: return launch_kb(&d, &w, s, a, b, (float)v + 0.5f * (float)j);
    case 2: return launch_kc(&d, &w, s, v + j);
    default: return launch_kd(&d, &w, s);
    }
}

static int failed;
static void check(CUresult rc)
{
    failed += rc != CUDA_SUCCESS;
}

static void run_loop(int iters, int n, int vary)
{
    for (int it = 0; it < iters; it++) {
        for (int j = 0; j < n; j++)
            check(one(it, j, w.s[0], vary));
        check(d.streamSynchronize(w.s[0]));
    }
}

static CUresult launch_ex(CUfunction f, CUstream s, void **p, CUlaunchAttribute *a, unsigned na)
{
    CUlaunchConfig c;
    memset(&c, 0, sizeof c);
    c.gridDimX = c.gridDimY = c.gridDimZ = 1;
    c.blockDimX = 128, c.blockDimY = c.blockDimZ = 1;
    c.hStream = s;
    c.attrs = a;
    c.numAttrs = na;
    return d.launchKernelEx(&c, f, p, NULL);
}

/* launch_ex with the one attribute id set to v (a flag: cooperative, programmatic
 * serialization). */
static CUresult launch_ex1(CUfunction f, CUstream s, void **p, CUlaunchAttributeID id, int v)
{
    CUlaunchAttribute a;
    memset(&a, 0, sizeof a);
    a.id = id;
    if (id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
        a.value.cooperative = v;
    else
        a.value.programmaticStreamSerializationAllowed = v;
    return launch_ex(f, s, p, &a, 1);
}

typedef struct { int id, iters; pthread_barrier_t *bar; } th_t;

static void *events_thread(void *arg)
{
    th_t *t = arg;
    check(d.ctxSetCurrent(w.ctx));
    for (int it = 0; it < t->iters; it++) {
        pthread_barrier_wait(t->bar);
        if (t->id == 0) {
            for (int j = 0; j < 8; j++)
                check(one(it, j, w.s[0], 1));
            check(d.eventRecord(w.ev, w.s[0]));
        }
        pthread_barrier_wait(t->bar);  /* the record happened before the wait is issued */
        if (t->id == 1) {
            check(d.streamWaitEvent(w.s[1], w.ev, 0));
            for (int j = 0; j < 8; j++)
                check(one(it, j + 100, w.s[1], 1));
            check(d.streamSynchronize(w.s[1]));
        } else {
            check(d.streamSynchronize(w.s[0]));
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *method = prog_lookup(&argc, &argv);
    if (argc < 3) {
        printf("usage: replay [-l METHOD] SCENARIO ITERS\n");
        return 2;
    }
    const char *sc = argv[1];
    int iters = atoi(argv[2]);
    drv_open(&d, method);
    world_init(&d, &w);
    begin_capture = sym("cuStreamBeginCapture", 13000);
    end_capture = sym("cuStreamEndCapture", 13000);
    instantiate = sym("cuGraphInstantiate", 13000);
    graph_launch = sym("cuGraphLaunch", 13000);

    if (!strcmp(sc, "loop") || !strcmp(sc, "fixed") || !strcmp(sc, "alternate")) {
        run_loop(iters, 40, !strcmp(sc, "loop") ? 1 : !strcmp(sc, "alternate") ? 2 : 0);
    } else if (!strcmp(sc, "stretch")) {
        run_loop(iters, 90, 1);
    } else if (!strcmp(sc, "restart")) {
        for (int it = 0; it < iters; it++) {
            for (int j = 0; j < 12; j++)
                check(one(it, j, w.s[0], 1));
            check(d.streamSynchronize(w.s[0]));
            for (int j = 0; j < 12; j++)
                check(one(it, j, w.s[0], 1));
            check(d.eventRecord(w.ev, w.s[0]));
            for (int j = 0; j < 12; j++)
                check(one(it, j, w.s[0], 1));
            check(d.streamSynchronize(w.s[0]));
        }
    } else if (!strcmp(sc, "short")) {
        run_loop(iters, 2, 1);
    } else if (!strcmp(sc, "chance")) {
        unsigned r = 12345;
        for (int it = 0; it < iters; it++) {
            for (int j = 0; j < 12; j++) {
                r = r * 1103515245u + 12345u;
                check(one(it, j < 4 || it < 6 ? j : (int)((r >> 16) % 4), w.s[0], 1));
            }
            check(d.streamSynchronize(w.s[0]));
        }
    } else if (!strcmp(sc, "novel")) {
        unsigned r = 777;
        for (int it = 0; it < iters; it++) {
            for (int j = 0; j < 12; j++) {
                r = r * 1103515245u + 12345u;
                check(one(it, (int)((r >> 16) % 4), w.s[0], 1));
            }
            check(d.streamSynchronize(w.s[0]));
        }
    } else if (!strcmp(sc, "fade")) {
        for (int it = 0; it < iters; it++) {
            for (int j = 0; j < 12; j++)
                check(one(it, j + (it >= 8), w.s[0], 1));
            check(d.streamSynchronize(w.s[0]));
        }
    } else if (!strcmp(sc, "cycle")) {
        for (int it = 0; it < iters; it++)
            for (int k = 0; k < 3; k++) {
                for (int j = 0; j < 12; j++)
                    check(one(it, j + k, w.s[0], 1));
                check(d.streamSynchronize(w.s[0]));
            }
    } else if (!strcmp(sc, "evict")) {
        for (int it = 0; it < iters; it++) {
            for (int k = 0; k < 3; k++)
                for (int j = 0; j < 32; j++)
                    check(one(it, j + k, w.s[0], 1));
            check(d.streamSynchronize(w.s[0]));
        }
    } else if (!strcmp(sc, "inline")) {
        for (int it = 0; it < iters; it++) {
            for (int j = 0; j < 32; j++)
                check(one(it, j, w.s[0], 1));
            CUdeviceptr p = 0;
            check(d.memAllocAsync(&p, 1024, w.s[0]));
            for (int j = 0; j < 4; j++)
                check(one(it, j, w.s[0], 0));
            check(d.memFreeAsync(p, w.s[0]));
            check(d.streamSynchronize(w.s[0]));
        }
    } else if (!strcmp(sc, "smallk")) {
        for (int it = 0; it < iters; it++) {
            for (int j = 0; j < 1000; j++) {
                unsigned u = (unsigned)it * 7919u + (unsigned)j;
                int m = 2048 + (int)((u * 37u) % 2049u);
                unsigned grid = (unsigned)(m + 127) / 128;
                CUdeviceptr x = w.buf[u % 4], y = w.buf[(u + 1 + (unsigned)it % 3) % 4];
                float a = 0.5f + 0.25f * (float)((u * 13u) % 7u) / 7.0f;
                CUkernel k = j % 4 == 0 ? w.ka : j % 4 == 1 ? w.kb : j % 4 == 2 ? w.kc : w.kd;
                unsigned char blob[24] = { (unsigned char)m };
                void *pa[] = { &m, &x }, *pb[] = { &x, &y, &a }, *pc[] = { blob, &m };
                void **p = j % 4 == 0 ? pa : j % 4 == 1 ? pb : j % 4 == 2 ? pc : NULL;
                check(d.launchKernel((CUfunction)k, grid, 1, 1, 128, 1, 1, 0, w.s[0], p, NULL));
            }
            check(d.streamSynchronize(w.s[0]));
        }
    } else if (!strcmp(sc, "streams")) {
        for (int it = 0; it < iters; it++) {
            for (int j = 0; j < 20; j++)
                check(one(it, j, w.s[(j / 2) % 2], 1));
            check(d.ctxSynchronize());
        }
    } else if (!strcmp(sc, "legacy")) {
        for (int it = 0; it < iters; it++) {
            for (int j = 0; j < 12; j++)
                check(one(it, j, j >= 4 && j < 8 ? CU_STREAM_LEGACY : w.s[1], 1));
            check(d.ctxSynchronize());
        }
    } else if (!strcmp(sc, "free")) {
        for (int it = 0; it < iters; it++) {
            CUdeviceptr p = 0;
            check(d.memAllocAsync(&p, 1024, w.s[0]));
            for (int j = 0; j < 6; j++)
                check(launch_ka(&d, &w, w.s[0], it * 10 + j, p));
            check(d.memFreeAsync(p, w.s[0]));
            for (int j = 0; j < 4; j++)
                check(one(it, j, w.s[0], 1));
            check(d.streamSynchronize(w.s[0]));
        }
    } else if (!strcmp(sc, "memset")) {
        for (int it = 0; it < iters; it++) {
            for (int j = 0; j < 6; j++)
                check(one(it, j, w.s[0], 1));
            check(d.memsetD32Async(w.buf[it % 4], (unsigned)it, 16, w.s[0]));
            check(one(it, 6, w.s[0], 1));
            check(d.memcpyDtoDAsync(w.buf[(it + 1) % 4], w.buf[it % 4], 256 + 4 * (it % 2), w.s[0]));
            for (int j = 7; j < 12; j++)
                check(one(it, j, w.s[0], 1));
            check(d.streamSynchronize(w.s[0]));
        }
    } else if (!strcmp(sc, "attrs")) {
        for (int it = 0; it < iters; it++) {
            CUlaunchAttribute a[2];
            int n = it;
            CUdeviceptr x = w.buf[it % 4];
            void *p[] = { &n, &x };
            memset(a, 0, sizeof a);
            a[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            a[0].value.clusterDim.x = 1, a[0].value.clusterDim.y = 1, a[0].value.clusterDim.z = 1;
            a[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
            a[1].value.priority = 1;
            check(launch_ex((CUfunction)w.ka, w.s[0], p, a, 2));
            for (int j = 0; j < 5; j++)
                check(one(it, j, w.s[0], 1));
            check(launch_ex1((CUfunction)w.ka, w.s[0], p, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, 1));
            for (int j = 5; j < 10; j++)
                check(one(it, j, w.s[0], 1));
            int pn = 0x5d5d0000 | (it & 0xff);
            void *pp[] = { &pn, &x };
            check(launch_ex1((CUfunction)w.ka, w.s[0], pp,
                             CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, 1));
            for (int j = 10; j < 12; j++)
                check(one(it, j, w.s[0], 1));
            check(d.streamSynchronize(w.s[0]));
        }
    } else if (!strcmp(sc, "collective")) {
        /* NCCL's mangled name, with the stand-in's layout: one 8-byte argument */
        CUkernel kc = NULL;
        check(d.libraryGetKernel(&kc, w.lib,
                                 "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LLP8ncclWork@0:8"));
        for (int it = 0; it < iters; it++) {
            for (int j = 0; j < 6; j++)
                check(one(it, j, w.s[0], 1));
            CUdeviceptr work = w.buf[it % 4];
            void *p[] = { &work };
            check(d.launchKernel((CUfunction)kc, 1, 1, 1, 128, 1, 1, 0, w.s[0], p, NULL));
            for (int j = 6; j < 12; j++)
                check(one(it, j, w.s[0], 1));
            check(d.streamSynchronize(w.s[0]));
        }
    } else if (!strcmp(sc, "capture")) {
        for (int it = 0; it < iters; it++) {
            for (int j = 0; j < 8; j++)
                check(one(it, j, w.s[0], 1));
            check(d.streamSynchronize(w.s[0]));
            CUgraph g = NULL;
            CUgraphExec x = NULL;
            check(begin_capture(w.s[1], CU_STREAM_CAPTURE_MODE_GLOBAL));
            for (int j = 0; j < 4; j++)
                check(one(it, j, w.s[1], 1));
            check(end_capture(w.s[1], &g));
            check(instantiate(&x, g, 0));
            check(graph_launch(x, w.s[1]));
            check(d.streamSynchronize(w.s[1]));
        }
    } else if (!strcmp(sc, "capfree")) {
        /* A block freed before a capture (fuse mode keeps it), then one of its size
         * allocated and freed inside the capture: those must reach the driver (they are
         * graph nodes), never be served from or go to kept blocks. */
        for (int it = 0; it < iters; it++) {
            CUdeviceptr p = 0, q = 0;
            check(d.memAllocAsync(&p, 1024, w.s[1]));
            check(launch_ka(&d, &w, w.s[1], it, p));
            check(d.memFreeAsync(p, w.s[1]));
            CUgraph g = NULL;
            CUgraphExec x = NULL;
            check(begin_capture(w.s[1], CU_STREAM_CAPTURE_MODE_GLOBAL));
            check(d.memAllocAsync(&q, 1024, w.s[1]));
            check(launch_ka(&d, &w, w.s[1], it + 100, q));
            check(d.memFreeAsync(q, w.s[1]));
            check(end_capture(w.s[1], &g));
            check(instantiate(&x, g, 0));
            check(graph_launch(x, w.s[1]));
            check(d.streamSynchronize(w.s[1]));
        }
    } else if (!strcmp(sc, "events")) {
        pthread_t th[2];
        pthread_barrier_t bar;
        th_t t[2] = { { 0, iters, &bar }, { 1, iters, &bar } };
        pthread_barrier_init(&bar, NULL, 2);
        pthread_create(&th[0], NULL, events_thread, &t[0]);
        pthread_create(&th[1], NULL, events_thread, &t[1]);
        pthread_join(th[0], NULL);
        pthread_join(th[1], NULL);
    } else if (!strcmp(sc, "exit")) {
        run_loop(iters, 12, 1);
        for (int j = 0; j < 12; j++)
            check(one(iters, j, w.s[0], 1));
        printf("exit without a synchronize, failed=%d\n", failed);
        return 0;
    } else if (!strcmp(sc, "queued")) {
        for (int it = 0; it < iters; it++) {
            CUdeviceptr p = 0;
            check(d.memAllocAsync(&p, 1024, w.s[0]));
            for (int j = 0; j < 32; j++)
                check(j == 5 ? launch_ka(&d, &w, w.s[0], it, p) : one(it, j, w.s[0], 1));
            int n = it;
            CUdeviceptr x = w.buf[it % 4];
            void *kp[] = { &n, &x };
            switch (it % 4) {
            case 0:
                check(d.memFreeAsync(p, w.s[0]));
                p = 0;
                break;
            case 1:
                check(d.memsetD32Async(w.buf[it % 4], (unsigned)it, 16, 0));
                break;
            case 2:
                check(launch_ex1((CUfunction)w.ka, w.s[0], kp, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, 1));
                break;
            default: {   /* as the window began (its allocation too), then off its path */
                CUdeviceptr q = 0;
                check(d.memAllocAsync(&q, 1024, w.s[0]));
                check(one(it, 0, w.s[0], 1));
                check(one(it, 1, w.s[0], 1));
                check(one(it, 3, w.s[0], 1));
                check(d.memFreeAsync(q, w.s[0]));
                break;
            }
            }
            if (p)
                check(d.memFreeAsync(p, w.s[0]));
            check(d.streamSynchronize(w.s[0]));
        }
        /* held work run as issued: ITERS x (36 launches |sync), the last 4 a window of their
         * own after the cap's cut, replayed too; then once 34 of them and one other: held on
         * the 4's path, then off it while the 32's launch may be queued */
        for (int it = 0; it <= iters; it++) {
            CUdeviceptr q = 0;
            check(d.memAllocAsync(&q, 1024, w.s[0]));
            for (int j = 0; j < 36; j++)   /* the first 32 as above: the same key */
                check(j == 5 ? launch_ka(&d, &w, w.s[0], it, w.buf[it % 4])
                      : j == 33 ? launch_ka(&d, &w, w.s[0], it, q)
                                : one(it, it < iters || j < 34 ? j : j + 1, w.s[0], 1));
            check(d.memFreeAsync(q, w.s[0]));   /* held behind the 4: launched inline */
            check(d.streamSynchronize(w.s[0]));
        }
        /* a key replayed twice in a row, patched while its last launch may be queued: 4 x
         * (68 windows of 32 launches |sync); past 63 cuts since the synchronize every
         * window's key is the same (TCF_R_ORD_MAX) */
        for (int it = 0; it < 4; it++) {
            for (int k = 0; k < 68 * 32; k++)
                check(one(it * 100 + k / 32, k % 32, w.s[0], 1));
            check(d.streamSynchronize(w.s[0]));
        }
        for (int j = 0; j < 32; j++)   /* the 32 again: replayed, and queued at main's return */
            check(j == 5 ? launch_ka(&d, &w, w.s[0], iters, w.buf[0]) : one(iters, j, w.s[0], 1));
        printf("queued: %d iterations, then 32 launches without a synchronize, failed=%d\n",
               iters, failed);
        return 0;
    } else if (!strcmp(sc, "switch")) {
        run_loop(iters, 12, 1);
        for (int it = 0; it < iters; it++) {
            for (int j = 0; j < 12; j++)
                check(one(it, j + 1, w.s[0], 1));
            check(d.streamSynchronize(w.s[0]));
        }
    } else {
        printf("unknown scenario %s\n", sc);
        return 2;
    }
    check(d.ctxSynchronize());
    printf("%s: %d iterations, failed=%d\n", sc, iters, failed);
    return 0;
}
