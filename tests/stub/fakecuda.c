/* fakecuda: a stand-in libcuda.so.1 for tests without a GPU.
 *
 * It exports the ABI-named driver symbols tcfuse cares about (legacy, _v2 and _ptsz
 * variants), a cuGetProcAddress(_v2) that hands out exactly those same pointers under the
 * real driver's versioning rules, and one call tcfuse cannot know (cuFakeUnknownCall).
 * Nothing runs on a device: calls validate their arguments, make up deterministic
 * results, and append one line each to a log, so that a test can compare what reached
 * "the driver" with and without LD_PRELOAD=libtcfuse.so.
 *
 * Conventions (the suites in tests/bats depend on them):
 *  - Kernel names carry their parameter layout. The name is split at '_'; the first piece
 *    is the kernel's own name, and every later piece that is one lower-case letter
 *    followed by a decimal size is a parameter of that many bytes, in order. Each
 *    parameter is aligned to the largest power of two dividing its size, at most 16.
 *    "k_i4_p8_b24" has parameters at offsets 0, 8, 16 of sizes 4, 8, 24; "k" has none;
 *    other pieces ("vec_add_f4" -> "add") are ignored. A name with '@' gives the layout
 *    explicitly instead, as offset:size pairs: "<mangled>@0:4,8:8,16:16" is a kernel named
 *    "<mangled>" (real PyTorch names, replayed from a trace by bench/hook_cost).
 *  - FAKECUDA_LOG=FILE: every call appends "<abi-symbol> key=value ... rc=N\n" (one
 *    write(2) on an O_APPEND descriptor, so lines of several threads never mix).
 *    Parameters are logged as "params=<hex>,<hex>,..." (each parameter's bytes, in memory
 *    order), whichever of kernelParams or extra (form=params / form=extra) carried them.
 *    The calls tcfuse may make on its own behalf ("self queries": cuGetProcAddress(_v2),
 *    cuKernelGetName, cuFuncGetName, cuKernelGetParamInfo, cuFuncGetParamInfo,
 *    cuCtxGetCurrent, cuDriverGetVersion, cuGetErrorString, cuGetErrorName) are prefixed
 *    "[tcfuse] " when their return address lies in an object whose name contains
 *    "libtcfuse": tests drop those lines, or only the prefix, before comparing logs.
 *  - FAKECUDA_FAIL=sym[:N|:N+][,sym...]: those ABI symbols return CUDA_ERROR_UNKNOWN (999)
 *    without writing any output argument (the call is still logged, with rc=999): every
 *    call, or with :N only the N-th call of that symbol (counted over the process, from
 *    every thread, tcfuse's own calls included), with :N+ the N-th and every later one.
 *  - FAKECUDA_MEM=1: device memory holds bytes. Memsets, copies to and from the host and
 *    between allocations store and read them (freshly allocated memory is zero); without
 *    it a copy to the host reads bytes made up from the address (fakecuda_mem.c). Kernels
 *    still compute nothing, so a kernel and its replacement leave memory the same, which
 *    is what lets tcfuse's bitwise verification pass here and fuse mode fuse.
 *  - cuModuleLoadData logs what it was given: "image=elf:<bytes>:<FNV-1a 64 of them>" for
 *    an ELF image (its size from its header), else "image=?", so a test can tell which
 *    cubin was loaded.
 *    FAKECUDA_FAIL_AFTER=sym:N[,sym:N...]: the same from the (N+1)-th call of sym on
 *    (FAKECUDA_FAIL=sym:N+1+, in the other spelling).
 *  - Handles are made-up, deterministic values (the n-th stream created is always the same
 *    value), so that logs compare across runs; create them from one thread.
 *    Device memory comes from a bump allocator at 0x7f0000000000 (256-byte aligned);
 *    the 32-bit v1 cuMemAlloc allocates from 0x20000000.
 *  - A handle from cuLibraryGetKernel is a CUkernel: cuKernelGetName/ParamInfo work on it,
 *    cuFuncGetName/ParamInfo fail with CUDA_ERROR_INVALID_HANDLE; a handle from
 *    cuModuleGetFunction or cuKernelGetFunction is a CUfunction, the reverse. Launches and
 *    occupancy queries accept both, as the real driver does.
 *  - Launches, allocations and stream-ordered work need a current context
 *    (cuDevicePrimaryCtxRetain + cuCtxSetCurrent); without one they return
 *    CUDA_ERROR_INVALID_CONTEXT.
 * Files: fakecuda.c (log, failure injection, device, context, streams, events),
 * fakecuda_mem.c (allocations, memsets, copies), fakecuda_kernel.c (libraries, modules,
 * kernels, launches), fakecuda_graph.c (graphs, stream capture), fakecuda_proc.c (the
 * cuGetProcAddress table), fakecuda.h (shared).
 * The library is linked -Bsymbolic: its own references (the pointers cuGetProcAddress
 * hands out) must bind to its own definitions, not to libtcfuse.so's exports of the same
 * names, exactly like the real driver's.
 */
#include "tests/stub/fakecuda.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- state -------------------------------------------------------------------------- */

pthread_mutex_t fk_mu = PTHREAD_MUTEX_INITIALIZER;
_Thread_local CUcontext fk_cur;

static int fk_nstreams, fk_nevents;
static unsigned char fk_stream_dead[FK_MAX_OBJ + 1], fk_event_dead[FK_MAX_OBJ + 1];
static int  fk_log_fd = -1;
/* FAKECUDA_FAIL, parsed: a symbol, the call to fail (0: every one), and from then on. */
#define FK_MAX_FAIL 32
static struct {
    char sym[96];
    unsigned long nth, calls;
    int from;
} fk_fails[FK_MAX_FAIL];
static int fk_nfails;
int fk_mem;
/* FAKECUDA_FAST=1: launches skip validation and formatting, so that bench/hook_cost
 * measures tcfuse's cost rather than the stand-in's. */
int fk_fast;

/* FAKECUDA_FAIL's entries (sym, sym:N, sym:N+), or with after FAKECUDA_FAIL_AFTER's (sym:N:
 * from call N + 1 on), appended to fk_fails. */
static void fk_parse_fails(const char *f, int after)
{
    while (f && *f && fk_nfails < FK_MAX_FAIL) {
        size_t n = strcspn(f, ","), s = strcspn(f, ":,");
        if (s < sizeof fk_fails[0].sym) {
            memcpy(fk_fails[fk_nfails].sym, f, s);
            if (s < n) {
                char *end;
                fk_fails[fk_nfails].nth = strtoul(f + s + 1, &end, 10);
                fk_fails[fk_nfails].from = *end == '+';
                if (after)
                    fk_fails[fk_nfails].nth++, fk_fails[fk_nfails].from = 1;
            }
            if (!after || s < n)
                fk_nfails++;
        }
        f += n + (f[n] == ',');
    }
}

__attribute__((constructor)) static void fk_init(void)
{
    const char *p = getenv("FAKECUDA_LOG"), *f = getenv("FAKECUDA_FAIL");
    const char *m = getenv("FAKECUDA_MEM");
    fk_fast = getenv("FAKECUDA_FAST") && !p;
    fk_mem = m && !strcmp(m, "1");
    if (p && *p)
        fk_log_fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    fk_parse_fails(f, 0);
    fk_parse_fails(getenv("FAKECUDA_FAIL_AFTER"), 1);
}

/* ---- log and failure injection ------------------------------------------------------ */

void fk_log(int from_tcfuse, const char *abi, CUresult rc, const char *fmt, ...)
{
    char body[7168], line[8192];
    int n;
    va_list ap;
    if (fk_log_fd < 0)
        return;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    n = snprintf(line, sizeof line, "%s%s%s%s rc=%d\n", from_tcfuse ? "[tcfuse] " : "", abi,
                 body[0] ? " " : "", body, (int)rc);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line) {
        n = (int)sizeof line;
        line[n - 1] = '\n';
    }
    if (write(fk_log_fd, line, (size_t)n) < 0) {
        /* nothing to do: a test will see the missing line */
    }
}

/* CUDA_ERROR_UNKNOWN when FAKECUDA_FAIL names this ABI symbol (and this call of it). */
CUresult fk_injected(const char *abi)
{
    for (int i = 0; i < fk_nfails; i++) {
        if (strcmp(fk_fails[i].sym, abi))
            continue;
        if (!fk_fails[i].nth)
            return CUDA_ERROR_UNKNOWN;
        unsigned long c = __atomic_add_fetch(&fk_fails[i].calls, 1, __ATOMIC_RELAXED);
        if (c == fk_fails[i].nth || (fk_fails[i].from && c > fk_fails[i].nth))
            return CUDA_ERROR_UNKNOWN;
    }
    return CUDA_SUCCESS;
}

/* Whether a return address lies in libtcfuse.so (see "self queries" at the top). The
 * answers are kept by address: dladdr takes the dynamic loader's lock, and a program that
 * exits from a signal handler (tests/bats/exit.bats) must not find it held by a stand-in
 * call its signal interrupted (its exit handlers' dlclose would wait on it for ever). A
 * process has few call sites; past the table's size dladdr answers each time. */
#define FK_RA_SLOTS 256
static _Atomic uintptr_t fk_ra[FK_RA_SLOTS];   /* ra << 1 | answer (user addresses < 2^47) */

static int fk_dladdr_tcfuse(const void *ra)
{
    Dl_info di;
    return dladdr(ra, &di) && di.dli_fname && strstr(di.dli_fname, "libtcfuse") != NULL;
}

int fk_from_tcfuse(const void *ra)
{
    uintptr_t key = (uintptr_t)ra << 1;
    size_t h = (size_t)(((uintptr_t)ra >> 2) * 0x9E3779B97F4A7C15ull >> 56);
    for (size_t i = 0; i < 8; i++) {
        size_t j = (h + i) % FK_RA_SLOTS;
        uintptr_t at = atomic_load_explicit(&fk_ra[j], memory_order_relaxed);
        if ((at & ~(uintptr_t)1) == key)
            return (int)(at & 1);
        if (at)
            continue;
        int from = fk_dladdr_tcfuse(ra);
        uintptr_t none = 0;
        atomic_compare_exchange_strong(&fk_ra[j], &none, key | (uintptr_t)from);
        return from;
    }
    return fk_dladdr_tcfuse(ra);
}

void fk_hex(char *out, size_t cap, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i, o = 0;
    out[0] = '\0';
    for (i = 0; i < n && o + 3 < cap; i++, o += 2)
        snprintf(out + o, cap - o, "%02x", b[i]);
}

/* ---- handles ------------------------------------------------------------------------ */

int fk_stream_ok(CUstream s)
{
    uintptr_t v = (uintptr_t)s;
    int n;
    if (v == 0 || v == (uintptr_t)CU_STREAM_LEGACY || v == (uintptr_t)CU_STREAM_PER_THREAD)
        return 1;
    if (v < FK_STREAM(1) || (v - FK_STREAM(0)) % 0x100)
        return 0;
    n = (int)((v - FK_STREAM(0)) / 0x100);
    return n <= __atomic_load_n(&fk_nstreams, __ATOMIC_ACQUIRE) && !fk_stream_dead[n];
}

static int fk_event_ok(CUevent e)
{
    uintptr_t v = (uintptr_t)e;
    int n;
    if (v < FK_EVENT(1) || (v - FK_EVENT(0)) % 0x100)
        return 0;
    n = (int)((v - FK_EVENT(0)) / 0x100);
    return n <= __atomic_load_n(&fk_nevents, __ATOMIC_ACQUIRE) && !fk_event_dead[n];
}

/* ---- device, context, errors ------------------------------------------------------- */

CUresult cuInit(unsigned int flags)
{
    CUresult rc = fk_injected("cuInit");
    if (!rc && flags)
        rc = CUDA_ERROR_INVALID_VALUE;
    fk_log(0, "cuInit", rc, "flags=%u", flags);
    return rc;
}

/* NVRTC asks the driver for its private export tables when a libcuda is around; every
 * real driver has them, and NVRTC crashes when the symbol is missing. The stand-in has
 * none to give: NVRTC then compiles without them, as on a machine with no driver. */
CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    (void)id;
    if (table)
        *table = NULL;
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuDriverGetVersion(int *v)
{
    CUresult rc = fk_injected("cuDriverGetVersion");
    if (!rc && !v)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *v = 13000;
    fk_log(FK_SELF(), "cuDriverGetVersion", rc, "%s", rc ? "" : "version=13000");
    return rc;
}

int fk_devices(void)
{
    const char *v = getenv("FAKECUDA_DEVICES");
    return v && atoi(v) == 2 ? 2 : 1;
}

int fk_ctx_ok(CUcontext ctx)
{
    return (uintptr_t)ctx == FK_CTX || ((uintptr_t)ctx == FK_CTX1 && fk_devices() == 2);
}

int fk_ctx_dev(CUcontext ctx)
{
    return (uintptr_t)ctx == FK_CTX1;
}

CUresult cuDeviceGetCount(int *n)
{
    CUresult rc = fk_injected("cuDeviceGetCount");
    if (!rc && !n)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *n = fk_devices();
    fk_log(0, "cuDeviceGetCount", rc, "count=%d", fk_devices());
    return rc;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    CUresult rc = fk_injected("cuDeviceGet");
    if (!rc && (!d || ordinal < 0 || ordinal >= fk_devices()))
        rc = !d ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_DEVICE;
    if (!rc)
        *d = ordinal;
    fk_log(0, "cuDeviceGet", rc, "ordinal=%d", ordinal);
    return rc;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    CUresult rc = fk_injected("cuDeviceGetAttribute");
    int val = 0;
    if (!rc && (!v || a <= 0 || a >= CU_DEVICE_ATTRIBUTE_MAX))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && (d < 0 || d >= fk_devices()))
        rc = CUDA_ERROR_INVALID_DEVICE;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: val = 9; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: val = 132; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: val = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: val = 1024; break;
    default: val = 0; break;
    }
    if (!rc)
        *v = val;
    fk_log(0, "cuDeviceGetAttribute", rc, "attr=%d dev=%d value=%d", (int)a, d, val);
    return rc;
}

/* FAKECUDA_TOTAL_MEM: the device's memory in bytes (default 80 GiB, an H100's). */
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
    CUresult rc = fk_injected("cuDeviceTotalMem_v2");
    const char *v = getenv("FAKECUDA_TOTAL_MEM");
    if (!rc && !bytes)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && (d < 0 || d >= fk_devices()))
        rc = CUDA_ERROR_INVALID_DEVICE;
    if (!rc)
        *bytes = v ? (size_t)strtoull(v, NULL, 10) : (size_t)80 << 30;
    fk_log(0, "cuDeviceTotalMem_v2", rc, "dev=%d", d);
    return rc;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d)
{
    CUresult rc = fk_injected("cuDevicePrimaryCtxRetain");
    if (!rc && !ctx)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && (d < 0 || d >= fk_devices()))
        rc = CUDA_ERROR_INVALID_DEVICE;
    uintptr_t c = d == 1 ? FK_CTX1 : FK_CTX;
    if (!rc)
        *ctx = (CUcontext)c;
    fk_log(0, "cuDevicePrimaryCtxRetain", rc, "dev=%d ctx=0x%lx", d, (unsigned long)c);
    return rc;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned int *flags, int *active)
{
    CUresult rc = fk_injected("cuDevicePrimaryCtxGetState");
    if (!rc && (!flags || !active))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc) {
        *flags = 0;
        *active = 1;
    }
    fk_log(0, "cuDevicePrimaryCtxGetState", rc, "dev=%d", d);
    return rc;
}

CUresult cuCtxGetCurrent(CUcontext *ctx)
{
    CUresult rc = fk_injected("cuCtxGetCurrent");
    if (!rc && !ctx)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *ctx = fk_cur;
    fk_log(FK_SELF(), "cuCtxGetCurrent", rc, "ctx=0x%lx", (unsigned long)(uintptr_t)fk_cur);
    return rc;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    CUresult rc = fk_injected("cuCtxSetCurrent");
    if (!rc && ctx && !fk_ctx_ok(ctx))
        rc = CUDA_ERROR_INVALID_CONTEXT;
    if (!rc)
        fk_cur = ctx;
    fk_log(0, "cuCtxSetCurrent", rc, "ctx=0x%lx", (unsigned long)(uintptr_t)ctx);
    return rc;
}

CUresult fk_need_ctx(CUresult rc)
{
    return rc ? rc : fk_cur ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuCtxGetDevice(CUdevice *d)
{
    CUresult rc = fk_need_ctx(fk_injected("cuCtxGetDevice"));
    if (!rc && !d)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *d = fk_ctx_dev(fk_cur);
    fk_log(0, "cuCtxGetDevice", rc, "dev=%d", fk_ctx_dev(fk_cur));
    return rc;
}

CUresult cuCtxGetDevice_v2(CUdevice *d, CUcontext ctx)
{
    CUresult rc = fk_injected("cuCtxGetDevice_v2");
    if (!rc && !ctx)
        rc = fk_need_ctx(rc);
    if (!rc && ctx && !fk_ctx_ok(ctx))
        rc = CUDA_ERROR_INVALID_CONTEXT;
    if (!rc && !d)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *d = fk_ctx_dev(ctx ? ctx : fk_cur);
    fk_log(0, "cuCtxGetDevice_v2", rc, "ctx=0x%lx dev=%d", (unsigned long)(uintptr_t)ctx,
           fk_ctx_dev(ctx ? ctx : fk_cur));
    return rc;
}

CUresult cuCtxSynchronize(void)
{
    CUresult rc = fk_need_ctx(fk_injected("cuCtxSynchronize"));
    fk_log(0, "cuCtxSynchronize", rc, "%s", "");
    return rc;
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    CUresult rc = fk_injected("cuCtxSynchronize_v2");
    if (!rc && !ctx)
        rc = fk_need_ctx(rc);
    if (!rc && ctx && !fk_ctx_ok(ctx))
        rc = CUDA_ERROR_INVALID_CONTEXT;
    fk_log(0, "cuCtxSynchronize_v2", rc, "ctx=0x%lx", (unsigned long)(uintptr_t)ctx);
    return rc;
}

static const struct { CUresult rc; const char *name, *text; } fk_errors[] = {
    { CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
    { CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
    { CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
    { CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
    { CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
    { CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
    { CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
    { CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

static CUresult fk_error_lookup(const char *abi, int self, CUresult e, const char **s, int text)
{
    CUresult rc = fk_injected(abi);
    size_t i;
    const char *found = NULL;
    for (i = 0; i < sizeof fk_errors / sizeof fk_errors[0]; i++)
        if (fk_errors[i].rc == e)
            found = text ? fk_errors[i].text : fk_errors[i].name;
    if (!rc && !s)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc) {
        *s = found;
        if (!found)
            rc = CUDA_ERROR_INVALID_VALUE;
    }
    fk_log(self, abi, rc, "error=%d", (int)e);
    return rc;
}

CUresult cuGetErrorString(CUresult e, const char **s)
{
    return fk_error_lookup("cuGetErrorString", FK_SELF(), e, s, 1);
}

CUresult cuGetErrorName(CUresult e, const char **s)
{
    return fk_error_lookup("cuGetErrorName", FK_SELF(), e, s, 0);
}

/* The call tcfuse cannot know: it must pass through, as a window boundary. */
CUresult cuFakeUnknownCall(int x)
{
    CUresult rc = fk_injected("cuFakeUnknownCall");
    fk_log(0, "cuFakeUnknownCall", rc, "x=%d", x);
    return rc;
}

/* ---- streams and events ------------------------------------------------------------ */

CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
    CUresult rc = fk_need_ctx(fk_injected("cuStreamCreate"));
    uintptr_t h = 0;
    if (!rc && !s)
        rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_mu);
    if (!rc && fk_nstreams == FK_MAX_OBJ)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (!rc) {
        h = FK_STREAM(__atomic_add_fetch(&fk_nstreams, 1, __ATOMIC_RELEASE));
        *s = (CUstream)h;
    }
    pthread_mutex_unlock(&fk_mu);
    fk_log(0, "cuStreamCreate", rc, "flags=%u stream=0x%lx", flags, (unsigned long)h);
    return rc;
}

CUresult cuStreamDestroy_v2(CUstream s)
{
    CUresult rc = fk_injected("cuStreamDestroy_v2");
    pthread_mutex_lock(&fk_mu);
    if (!rc && (!fk_stream_ok(s) || (uintptr_t)s < FK_STREAM(1)))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc)
        fk_stream_dead[((uintptr_t)s - FK_STREAM(0)) / 0x100] = 1;
    pthread_mutex_unlock(&fk_mu);
    fk_log(0, "cuStreamDestroy_v2", rc, "stream=0x%lx", (unsigned long)(uintptr_t)s);
    return rc;
}

static CUresult fk_stream_call(const char *abi, CUstream s)
{
    CUresult rc = fk_need_ctx(fk_injected(abi));
    if (!rc && !fk_stream_ok(s))
        rc = CUDA_ERROR_INVALID_HANDLE;
    fk_log(0, abi, rc, "stream=0x%lx", (unsigned long)(uintptr_t)s);
    return rc;
}
CUresult cuStreamSynchronize(CUstream s) { return fk_stream_call("cuStreamSynchronize", s); }
CUresult cuStreamSynchronize_ptsz(CUstream s) { return fk_stream_call("cuStreamSynchronize_ptsz", s); }
CUresult cuStreamQuery(CUstream s) { return fk_stream_call("cuStreamQuery", s); }
CUresult cuStreamQuery_ptsz(CUstream s) { return fk_stream_call("cuStreamQuery_ptsz", s); }

static CUresult fk_is_capturing(const char *abi, CUstream s, CUstreamCaptureStatus *st)
{
    CUresult rc = fk_need_ctx(fk_injected(abi));
    if (!rc && !fk_stream_ok(s))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && !st)
        rc = CUDA_ERROR_INVALID_VALUE;
    int active = !rc && fk_stream_capturing(s);
    if (!rc)
        *st = active ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    fk_log(0, abi, rc, "stream=0x%lx status=%d", (unsigned long)(uintptr_t)s, active);
    return rc;
}
CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
    return fk_is_capturing("cuStreamIsCapturing", s, st);
}
CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *st)
{
    return fk_is_capturing("cuStreamIsCapturing_ptsz", s, st);
}

CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
    CUresult rc = fk_need_ctx(fk_injected("cuEventCreate"));
    uintptr_t h = 0;
    if (!rc && !e)
        rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_mu);
    if (!rc && fk_nevents == FK_MAX_OBJ)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (!rc) {
        h = FK_EVENT(__atomic_add_fetch(&fk_nevents, 1, __ATOMIC_RELEASE));
        *e = (CUevent)h;
    }
    pthread_mutex_unlock(&fk_mu);
    fk_log(0, "cuEventCreate", rc, "flags=%u event=0x%lx", flags, (unsigned long)h);
    return rc;
}

static CUresult fk_event_call(const char *abi, CUevent e, int has_stream, CUstream s,
                              unsigned flags)
{
    CUresult rc = fk_need_ctx(fk_injected(abi));
    if (!rc && !fk_event_ok(e))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && has_stream && !fk_stream_ok(s))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (has_stream)
        fk_log(0, abi, rc, "event=0x%lx stream=0x%lx flags=%u", (unsigned long)(uintptr_t)e,
               (unsigned long)(uintptr_t)s, flags);
    else
        fk_log(0, abi, rc, "event=0x%lx", (unsigned long)(uintptr_t)e);
    return rc;
}
CUresult cuEventRecord(CUevent e, CUstream s) { return fk_event_call("cuEventRecord", e, 1, s, 0); }
CUresult cuEventRecord_ptsz(CUevent e, CUstream s) { return fk_event_call("cuEventRecord_ptsz", e, 1, s, 0); }
CUresult cuEventSynchronize(CUevent e) { return fk_event_call("cuEventSynchronize", e, 0, NULL, 0); }
CUresult cuEventQuery(CUevent e) { return fk_event_call("cuEventQuery", e, 0, NULL, 0); }
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
    return fk_event_call("cuStreamWaitEvent", e, 1, s, flags);
}
CUresult cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int flags)
{
    return fk_event_call("cuStreamWaitEvent_ptsz", e, 1, s, flags);
}

CUresult cuEventDestroy_v2(CUevent e)
{
    CUresult rc = fk_event_call("cuEventDestroy_v2", e, 0, NULL, 0);
    pthread_mutex_lock(&fk_mu);
    if (!rc)
        fk_event_dead[((uintptr_t)e - FK_EVENT(0)) / 0x100] = 1;
    pthread_mutex_unlock(&fk_mu);
    return rc;
}

static CUresult fk_host_func(const char *abi, CUstream s, CUhostFn fn, void *data)
{
    CUresult rc = fk_need_ctx(fk_injected(abi));
    if (!rc && !fk_stream_ok(s))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && !fn)
        rc = CUDA_ERROR_INVALID_VALUE;
    fk_log(0, abi, rc, "stream=0x%lx", (unsigned long)(uintptr_t)s);
    if (!rc)
        fn(data); /* the stream is always idle: the host function runs now */
    return rc;
}
CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *d) { return fk_host_func("cuLaunchHostFunc", s, fn, d); }
CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *d) { return fk_host_func("cuLaunchHostFunc_ptsz", s, fn, d); }

