/* fakecuda internals shared by the stub's files (see fakecuda.c for the conventions).
 *
 * The stub is compiled with the project's -fvisibility=hidden: the driver API that
 * cuda.h declares (and cuFakeUnknownCall) is exported because it is declared inside the
 * push(default) region below; every fk_ helper stays inside the library.
 */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#define __CUDA_API_VERSION_INTERNAL 1 /* declares every ABI variant: _v2, _ptsz, v1 */
#pragma GCC visibility push(default)
#include <cuda.h>
/* Not a driver call: the one entry point tcfuse cannot know. */
CUresult cuFakeUnknownCall(int x);
/* Test helper, not a driver call: the ABI name of one of the stub's entry points, or
 * NULL when p is none of them (so a test can tell the real pointer from a wrapper
 * without going through dlsym, which tcfuse interposes). */
const char *fakecuda_symbol_of(const void *p);
#pragma GCC visibility pop

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define FK_DEV_BASE   0x7f0000000000ull
#define FK_DEV_V1     0x20000000ull
#define FK_CTX        ((uintptr_t)0x550000000100ull)
/* Device 1's primary context, with FAKECUDA_DEVICES=2 (default: one device). */
#define FK_CTX1       ((uintptr_t)0x550000000200ull)
#define FK_STREAM(n)  ((uintptr_t)0x550100000000ull + (uintptr_t)(n) * 0x100)
#define FK_EVENT(n)   ((uintptr_t)0x550200000000ull + (uintptr_t)(n) * 0x100)
#define FK_LIB(n)     ((uintptr_t)0x550300000000ull + (uintptr_t)(n) * 0x100)
#define FK_MOD(n)     ((uintptr_t)0x550400000000ull + (uintptr_t)(n) * 0x100)
#define FK_KERN(n)    ((uintptr_t)0x550500000000ull + (uintptr_t)(n) * 0x100)
#define FK_FUNC(n)    ((uintptr_t)0x550600000000ull + (uintptr_t)(n) * 0x100)
#define FK_POOL       ((uintptr_t)0x550700000100ull)
#define FK_MAX_OBJ    256
#define FK_MAX_PARAM  64

/* Guards every table below. */
extern pthread_mutex_t fk_mu;
/* The calling thread's current context (NULL, FK_CTX or FK_CTX1). */
extern _Thread_local CUcontext fk_cur;
/* The devices (FAKECUDA_DEVICES: 1 or 2); whether ctx is one of their primary contexts;
 * the device of a context (FK_CTX1: 1, else 0). */
int fk_devices(void);
int fk_ctx_ok(CUcontext ctx);
int fk_ctx_dev(CUcontext ctx);

/* Appends "[tcfuse] "? abi fmt... " rc=N" to FAKECUDA_LOG, in one write. */
void fk_log(int from_tcfuse, const char *abi, CUresult rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* CUDA_ERROR_UNKNOWN when FAKECUDA_FAIL names this ABI symbol, else CUDA_SUCCESS. */
CUresult fk_injected(const char *abi);
/* rc, or CUDA_ERROR_INVALID_CONTEXT when rc is success and no context is current. */
CUresult fk_need_ctx(CUresult rc);
/* Whether a return address lies in libtcfuse.so. Use FK_SELF() in an exported call. */
int fk_from_tcfuse(const void *ra);
extern int fk_fast;
/* FAKECUDA_MEM=1: device memory holds bytes (fakecuda_mem.c). */
extern int fk_mem;
#define FK_SELF() (fk_fast ? 0 : fk_from_tcfuse(__builtin_return_address(0)))
/* Lower-case hex of n bytes into out (truncated to cap). */
void fk_hex(char *out, size_t cap, const void *p, size_t n);
/* Whether s is the NULL/legacy/per-thread stream or a live stream from cuStreamCreate. */
int fk_stream_ok(CUstream s);
/* Whether stream s is capturing (fakecuda_graph.c). */
int fk_stream_capturing(CUstream s);
/* Whether p lies in device memory the stub handed out (either allocator). */
int fk_devptr_ok(CUdeviceptr p, size_t bytes);

/* A kernel (CUkernel) or function (CUfunction) object. */
typedef struct {
    uintptr_t owner;          /* library or module handle */
    char      name[512];
    int       nparams;
    size_t    off[FK_MAX_PARAM], size[FK_MAX_PARAM];
    uintptr_t func;           /* the CUfunction cuKernelGetFunction made for a CUkernel */
} fk_kern_t;

/* The object behind a handle, or NULL. fk_launchable accepts either kind and says which. */
fk_kern_t *fk_kernel(CUkernel k);
fk_kern_t *fk_func(CUfunction f);
fk_kern_t *fk_launchable(CUfunction f, const char **kind);

#endif
