/* scen [-l METHOD] SCENARIO [ARG]: launch sequences of a known shape, on one context.
 *
 * Window shapes below are what tcfuse should see with TCFUSE_IDLE_US=0 (no idle closes)
 * and the default TCFUSE_WINDOW_MAX. "|X" marks a window closed by X; w.s[0] is the
 * stream unless said otherwise. Setup (world_init) launches nothing.
 *   launch       every launch form: kernelParams, extra, cuLaunchKernelEx with and
 *                without attributes, CUkernel and CUfunction handles, streams 0,
 *                CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, and launches the driver rejects
 *                (bad handle, both params and extra, missing params); ends with
 *                cuCtxSynchronize. Compared only, no shape.
 *   windows      ka kb ka |cuStreamSynchronize  ka kb |cuEventRecord  ka |cuFakeUnknownCall
 *                ka kb kc ka kb |cuStreamSynchronize  kd |exit
 *                = 12 launches, 4 kernels, 5 windows (median 2, max 5), 5 distinct keys
 *   repeat       (ka kb |cuStreamSynchronize) x2 with other scalars, ka kc |sync,
 *                ka kb on other buffers |sync  = 8 launches, 4 windows, 2 distinct keys,
 *                2 of 4 windows repeated an earlier key
 *   sizecap N    N x ka |cuStreamSynchronize   (with TCFUSE_WINDOW_MAX=4 and N=10:
 *                windows of 4, 4, 2: size-cap, size-cap, cuStreamSynchronize)
 *   idle MS      ka, sleep MS milliseconds, ka |cuStreamSynchronize
 *   streams      ka@s0 ka@s1 kb@s0 ka@s2 kb@s1 kb@s0 |cuStreamSynchronize(s0)
 *                = 6 launches, 3 windows (s0: 3, s1: 2, s2: 1), all closed by the sync
 *   boundary X   ka kb |X  kd |exit, for X one of the names in boundary() below
 *   query X      ka, the harmless query X, kb |cuStreamSynchronize = 1 window of 2
 *   ops          ka memsetD8 DtoD memsetD32 kb memsetD16 |cuStreamSynchronize
 *                = 1 window: 2 launches, 4 ops
 *   setup        the setup alone: a context, streams, buffers, no launch
 *   asks         cuInit and cuDeviceGet, nothing else (no context, no allocation): what a
 *                launcher such as torchrun's agent does before it starts the ranks
 */
#include "tests/stub/progs/common.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static drv_t   d;
static world_t w;

static void host_fn(void *arg) { printf("host function ran, arg=%d\n", *(int *)arg); }

static void scen_launch(void)
{
    CUstream s = w.s[0];
    int n = 7;
    CUdeviceptr x = w.buf[0];
    unsigned char buf[16];
    size_t size = sizeof buf;
    void *params[] = { &n, &x };
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE,
                      &size, CU_LAUNCH_PARAM_END };
    unsigned char blob[24], ebuf[32];
    size_t esize = sizeof ebuf;
    void *cextra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, ebuf, CU_LAUNCH_PARAM_BUFFER_SIZE,
                       &esize, CU_LAUNCH_PARAM_END };
    unsigned short h = 0x3c00;
    char c3[3] = { 'a', 'b', 'c' };
    int i4 = -1;
    void *eparams[] = { &h, c3, &i4, &x };
    int fi = 42;
    void *fparams[] = { &x, &fi };
    CUlaunchAttribute attr[2];
    CUlaunchConfig cfg;
    int i;

    /* ka (int, ptr) through extra: padding bytes 4..7 are 0xee, the driver ignores them. */
    memset(buf, 0xee, sizeof buf);
    memcpy(buf, &n, 4);
    memcpy(buf + 8, &x, 8);
    said("ka params", launch(&d, (CUfunction)w.ka, s, params));
    said("ka extra", d.launchKernel((CUfunction)w.ka, 2, 1, 1, 64, 2, 1, 128, s, NULL, extra));
    for (i = 0; i < 24; i++)
        blob[i] = (unsigned char)(0xa0 + i);
    memset(ebuf, 0, sizeof ebuf);
    memcpy(ebuf, blob, 24);
    memcpy(ebuf + 24, &n, 4);
    said("kc extra", d.launchKernel((CUfunction)w.kc, 3, 2, 1, 32, 1, 1, 0, s, NULL, cextra));
    said("kc params", launch_kc(&d, &w, s, 9));
    said("kd no params", launch_kd(&d, &w, s));
    said("ke params", d.launchKernel((CUfunction)w.ke, 1, 1, 1, 1, 1, 1, 0, s, eparams, NULL));
    said("kf function", launch(&d, w.kf, s, fparams));

    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = 4; cfg.gridDimY = 1; cfg.gridDimZ = 1;
    cfg.blockDimX = 256; cfg.blockDimY = 1; cfg.blockDimZ = 1;
    cfg.sharedMemBytes = 1024;
    cfg.hStream = s;
    said("ka ex no attrs", d.launchKernelEx(&cfg, (CUfunction)w.ka, params, NULL));
    memset(attr, 0, sizeof attr);
    attr[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attr[0].value.cooperative = 0;
    attr[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attr[1].value.priority = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 2;
    said("ka ex attrs", d.launchKernelEx(&cfg, (CUfunction)w.ka, params, NULL));
    said("ka ex extra", d.launchKernelEx(&cfg, (CUfunction)w.ka, NULL, extra));
    said("kf ex function", d.launchKernelEx(&cfg, w.kf, fparams, NULL));

    said("ka stream 0", launch_ka(&d, &w, NULL, 1, x));
    said("ka stream legacy", launch_ka(&d, &w, CU_STREAM_LEGACY, 2, x));
    said("ka stream per-thread", launch_ka(&d, &w, CU_STREAM_PER_THREAD, 3, x));
    said("ka stream 1", launch_ka(&d, &w, w.s[1], 4, x));

    /* Launches the driver rejects: tcfuse must pass the result back unchanged. */
    said("bad handle", launch(&d, (CUfunction)(uintptr_t)0x1234500, s, params));
    said("params and extra", d.launchKernel((CUfunction)w.ka, 1, 1, 1, 1, 1, 1, 0, s, params, extra));
    said("missing params", launch(&d, (CUfunction)w.ka, s, NULL));
    said("zero grid", d.launchKernel((CUfunction)w.ka, 0, 1, 1, 1, 1, 1, 0, s, params, NULL));
    said("bad stream", launch(&d, (CUfunction)w.ka, (CUstream)(uintptr_t)0x999900, params));
    said("cuCtxSynchronize", d.ctxSynchronize());
}

static void scen_windows(void)
{
    CUstream s = w.s[0];
    CUdeviceptr a = w.buf[0], b = w.buf[1];
    launch_ka(&d, &w, s, 1, a);
    launch_kb(&d, &w, s, a, b, 1.0f);
    launch_ka(&d, &w, s, 2, b);
    said("cuStreamSynchronize", d.streamSynchronize(s));
    launch_ka(&d, &w, s, 3, a);
    launch_kb(&d, &w, s, a, b, 2.0f);
    said("cuEventRecord", d.eventRecord(w.ev, s));
    launch_ka(&d, &w, s, 4, a);
    said("cuFakeUnknownCall", d.fakeUnknownCall(7));
    launch_ka(&d, &w, s, 5, a);
    launch_kb(&d, &w, s, a, b, 3.0f);
    launch_kc(&d, &w, s, 6);
    launch_ka(&d, &w, s, 7, b);
    launch_kb(&d, &w, s, b, a, 4.0f);
    said("cuStreamSynchronize", d.streamSynchronize(s));
    said("kd", launch_kd(&d, &w, s));
}

static void scen_repeat(void)
{
    CUstream s = w.s[0];
    int i;
    for (i = 0; i < 2; i++) {
        said("ka", launch_ka(&d, &w, s, 10 + i, w.buf[0]));
        said("kb", launch_kb(&d, &w, s, w.buf[0], w.buf[1], 1.5f + (float)i));
        said("cuStreamSynchronize", d.streamSynchronize(s));
    }
    said("ka", launch_ka(&d, &w, s, 12, w.buf[0]));
    said("kc", launch_kc(&d, &w, s, 12));
    said("cuStreamSynchronize", d.streamSynchronize(s));
    said("ka", launch_ka(&d, &w, s, 13, w.buf[2]));
    said("kb", launch_kb(&d, &w, s, w.buf[2], w.buf[3], 9.0f));
    said("cuStreamSynchronize", d.streamSynchronize(s));
}

static void scen_sizecap(int n)
{
    int i;
    for (i = 0; i < n; i++)
        launch_ka(&d, &w, w.s[0], i, w.buf[0]);
    said("cuStreamSynchronize", d.streamSynchronize(w.s[0]));
}

static void scen_idle(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    said("ka", launch_ka(&d, &w, w.s[0], 1, w.buf[0]));
    while (nanosleep(&ts, &ts) != 0) {
    }
    said("ka", launch_ka(&d, &w, w.s[0], 2, w.buf[0]));
    said("cuStreamSynchronize", d.streamSynchronize(w.s[0]));
}

static void scen_streams(void)
{
    launch_ka(&d, &w, w.s[0], 1, w.buf[0]);
    launch_ka(&d, &w, w.s[1], 2, w.buf[1]);
    launch_kb(&d, &w, w.s[0], w.buf[0], w.buf[2], 1.0f);
    launch_ka(&d, &w, w.s[2], 3, w.buf[3]);
    launch_kb(&d, &w, w.s[1], w.buf[1], w.buf[3], 2.0f);
    launch_kb(&d, &w, w.s[0], w.buf[2], w.buf[0], 3.0f);
    said("cuStreamSynchronize", d.streamSynchronize(w.s[0]));
}

/* One boundary call by name; returns 0 for an unknown name. */
static int boundary(const char *x)
{
    CUstream s = w.s[0];
    /* Zeroed: a failing copy writes nothing, and the checksum must not read stack garbage
     * (which differs between a run with tcfuse and one without). */
    unsigned char host[32] = { 0 };
    unsigned i, sum = 0;
    static int arg = 5;
    if (strcmp(x, "cuStreamSynchronize") == 0) {
        said(x, d.streamSynchronize(s));
    } else if (strcmp(x, "cuStreamQuery") == 0) {
        said(x, d.streamQuery(s));
    } else if (strcmp(x, "cuCtxSynchronize") == 0) {
        said(x, d.ctxSynchronize());
    } else if (strcmp(x, "cuCtxSynchronize_v2") == 0) {
        said(x, d.ctxSynchronize2(w.ctx));
    } else if (strcmp(x, "cuEventRecord") == 0) {
        said(x, d.eventRecord(w.ev, s));
    } else if (strcmp(x, "cuEventSynchronize") == 0) {
        said(x, d.eventSynchronize(w.ev));
    } else if (strcmp(x, "cuEventQuery") == 0) {
        said(x, d.eventQuery(w.ev));
    } else if (strcmp(x, "cuStreamWaitEvent") == 0) {
        said(x, d.streamWaitEvent(s, w.ev, 0));
    } else if (strcmp(x, "cuMemcpyHtoDAsync") == 0) {
        for (i = 0; i < sizeof host; i++)
            host[i] = (unsigned char)i;
        said(x, d.memcpyHtoDAsync(w.buf[2], host, sizeof host, s));
    } else if (strcmp(x, "cuMemcpyDtoHAsync") == 0) {
        said(x, d.memcpyDtoHAsync(host, w.buf[2], sizeof host, s));
        for (i = 0; i < sizeof host; i++)
            sum = sum * 31 + host[i];
        printf("read checksum %u\n", sum);
    } else if (strcmp(x, "cuLaunchHostFunc") == 0) {
        said(x, d.launchHostFunc(s, host_fn, &arg));
    } else if (strcmp(x, "cuFakeUnknownCall") == 0) {
        said(x, d.fakeUnknownCall(11));
    } else if (strcmp(x, "cuStreamDestroy") == 0) {
        said(x, d.streamDestroy(w.s[3]));
    } else {
        return 0;
    }
    return 1;
}

/* One harmless query by name; returns 0 for an unknown name. */
static int query(const char *x)
{
    CUdevice dev = -1;
    CUcontext ctx = NULL;
    CUfunction f = NULL;
    CUkernel k = NULL;
    CUlibrary lib = NULL;
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    unsigned flags = 9;
    int v = -1, active = -1;
    const char *str = NULL;
    size_t off = 0, size = 0;
    if (strcmp(x, "cuCtxGetDevice") == 0) {
        said(x, d.ctxGetDevice(&dev));
    } else if (strcmp(x, "cuCtxGetDevice_v2") == 0) {
        said(x, d.ctxGetDevice2(&dev, NULL));
    } else if (strcmp(x, "cuCtxGetCurrent") == 0) {
        said(x, d.ctxGetCurrent(&ctx));
        printf("ctx=%p\n", (void *)ctx);
    } else if (strcmp(x, "cuDeviceGet") == 0) {
        said(x, d.deviceGet(&dev, 0));
    } else if (strcmp(x, "cuDeviceGetAttribute") == 0) {
        said(x, d.deviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    } else if (strcmp(x, "cuDevicePrimaryCtxGetState") == 0) {
        said(x, d.primaryCtxGetState(0, &flags, &active));
    } else if (strcmp(x, "cuStreamIsCapturing") == 0) {
        said(x, d.streamIsCapturing(w.s[0], &cs));
    } else if (strcmp(x, "cuKernelGetFunction") == 0) {
        said(x, d.kernelGetFunction(&f, w.ka));
    } else if (strcmp(x, "cuLibraryLoadData") == 0) {
        said(x, d.libraryLoadData(&lib, "another", NULL, NULL, 0, NULL, NULL, 0));
    } else if (strcmp(x, "cuLibraryGetKernel") == 0) {
        said(x, d.libraryGetKernel(&k, w.lib, "kz_i8"));
    } else if (strcmp(x, "cuOccupancyMaxActiveBlocksPerMultiprocessor") == 0) {
        said(x, d.occupancy(&v, (CUfunction)w.ka, 128, 0));
    } else if (strcmp(x, "cuDriverGetVersion") == 0) {
        said(x, d.driverGetVersion(&v));
    } else if (strcmp(x, "cuInit") == 0) {
        said(x, d.init(0));
    } else if (strcmp(x, "cuGetErrorString") == 0) {
        said(x, d.getErrorString(CUDA_ERROR_INVALID_VALUE, &str));
    } else if (strcmp(x, "cuKernelGetName") == 0) {
        said(x, d.kernelGetName(&str, w.kb));
    } else if (strcmp(x, "cuKernelGetParamInfo") == 0) {
        said(x, d.kernelGetParamInfo(w.kb, 2, &off, &size));
    } else {
        return 0;
    }
    printf("dev=%d v=%d flags=%u active=%d cs=%d str=%s off=%zu size=%zu\n", dev, v, flags,
           active, (int)cs, str ? str : "-", off, size);
    return 1;
}

static void scen_ops(void)
{
    CUstream s = w.s[0];
    said("ka", launch_ka(&d, &w, s, 1, w.buf[0]));
    said("cuMemsetD8Async", d.memsetD8Async(w.buf[1], 0x5a, 4096, s));
    said("cuMemcpyDtoDAsync", d.memcpyDtoDAsync(w.buf[2], w.buf[1], 1024, s));
    said("cuMemsetD32Async", d.memsetD32Async(w.buf[3], 0x3f800000u, 1024, s));
    said("kb", launch_kb(&d, &w, s, w.buf[2], w.buf[3], 0.5f));
    said("cuMemsetD16Async", d.memsetD16Async(w.buf[0], 0x3c00, 2048, s));
    said("cuStreamSynchronize", d.streamSynchronize(s));
}

int main(int argc, char **argv)
{
    const char *method = prog_lookup(&argc, &argv);
    const char *sc = argc > 1 ? argv[1] : "";
    const char *arg = argc > 2 ? argv[2] : "";
    drv_open(&d, method);
    if (strcmp(sc, "asks") == 0) {   /* a launcher's part: the driver asked, no GPU work */
        CUdevice dev;
        said("cuInit", d.init(0));
        said("cuDeviceGet", d.deviceGet(&dev, 0));
        printf("done\n");
        return 0;
    }
    world_init(&d, &w);
    if (strcmp(sc, "setup") == 0) {
        ;
    } else if (strcmp(sc, "launch") == 0) {
        scen_launch();
    } else if (strcmp(sc, "windows") == 0) {
        scen_windows();
    } else if (strcmp(sc, "repeat") == 0) {
        scen_repeat();
    } else if (strcmp(sc, "sizecap") == 0) {
        scen_sizecap(*arg ? atoi(arg) : 10);
    } else if (strcmp(sc, "idle") == 0) {
        scen_idle(*arg ? atoi(arg) : 300);
    } else if (strcmp(sc, "streams") == 0) {
        scen_streams();
    } else if (strcmp(sc, "ops") == 0) {
        scen_ops();
    } else if (strcmp(sc, "boundary") == 0) {
        said("ka", launch_ka(&d, &w, w.s[0], 1, w.buf[0]));
        said("kb", launch_kb(&d, &w, w.s[0], w.buf[0], w.buf[1], 2.0f));
        if (!boundary(arg)) {
            printf("unknown boundary %s\n", arg);
            return 2;
        }
        said("kd", launch_kd(&d, &w, w.s[0]));
    } else if (strcmp(sc, "query") == 0) {
        said("ka", launch_ka(&d, &w, w.s[0], 1, w.buf[0]));
        if (!query(arg)) {
            printf("unknown query %s\n", arg);
            return 2;
        }
        said("kb", launch_kb(&d, &w, w.s[0], w.buf[0], w.buf[1], 2.0f));
        said("cuStreamSynchronize", d.streamSynchronize(w.s[0]));
    } else {
        printf("usage: scen [-l METHOD] setup|launch|windows|repeat|sizecap N|idle MS|streams|ops|"
               "boundary X|query X|asks\n");
        return 2;
    }
    printf("done\n");
    return 0;
}
