/* capture: per-stream windows of driver work, kernel identity, keys, stats, traces.
 *
 * interpose/ calls these from inside the application's driver calls; capture/ never calls
 * a hooked entry point itself. The driver functions capture needs (names, parameter
 * layouts, the current context) come in a table of real pointers at init, so the pure
 * parts run in unit tests with fakes and no CUDA.
 *
 * Ownership: nothing passed in is kept after a call returns; parameter bytes and host
 * buffers are copied. All functions are thread-safe. None of them fails visibly: a
 * failure is counted under a named reason (tcf_stats) and the application's call goes on.
 */
#ifndef TCF_CAPTURE_H
#define TCF_CAPTURE_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* Real driver entry points capture may call. Any of them may be NULL (an old driver):
 * capture then records less (no name, no parameter layout) and says so in the stats. */
typedef struct {
    CUresult (*kernel_get_name)(const char **name, CUkernel k);
    CUresult (*func_get_name)(const char **name, CUfunction f);
    CUresult (*kernel_get_param_info)(CUkernel k, size_t i, size_t *off, size_t *size);
    CUresult (*func_get_param_info)(CUfunction f, size_t i, size_t *off, size_t *size);
    CUresult (*ctx_get_current)(CUcontext *ctx);
    /* Fuse mode: issuing held work, compiling, loading and verifying generated kernels. */
    CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
    CUresult (*mem_free_async)(CUdeviceptr, CUstream);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_get_device)(CUdevice *);
    CUresult (*device_get_attribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*memcpy_htod_async)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*memcpy_dtoh_async)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*stream_synchronize)(CUstream);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*module_load_data)(CUmodule *, const void *);
    CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*module_unload)(CUmodule);
    /* Where a kernel's code came from (images.c). */
    CUresult (*kernel_get_library)(CUlibrary *, CUkernel);
    CUresult (*func_get_module)(CUmodule *, CUfunction);
} tcf_driver_t;

/* Called once, by the first hooked call, after tcf_config_load. */
void tcf_capture_init(const tcf_driver_t *drv);

/* Which entry point a call came through. The names are what stats and traces print. */
typedef enum {
    TCF_VIA_LAUNCH = 0,    /* cuLaunchKernel */
    TCF_VIA_LAUNCH_EX,     /* cuLaunchKernelEx */
} tcf_via_t;

/* A kernel launch, already issued (observe mode) with result rc. `ptds` is set when it came
 * through a _ptsz entry point (stream 0 then means the per-thread default stream).
 * Exactly one of params/extra is used, as the driver would. */
void tcf_capture_launch(tcf_via_t via, CUfunction f,
                        unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, CUstream stream, int ptds,
                        void **params, void **extra, CUresult rc);

/* Memory: `call` is the driver entry point's name (a static string). stream is NULL and
 * has_stream 0 for the synchronous forms. */
void tcf_capture_alloc(const char *call, CUdeviceptr ptr, size_t size,
                       CUstream stream, int has_stream, int ptds, CUresult rc);
void tcf_capture_free(const char *call, CUdeviceptr ptr,
                      CUstream stream, int has_stream, int ptds, CUresult rc);
/* Stream-ordered device work that is not a kernel: device memsets and device-to-device
 * copies. elem is the element size of a memset (1, 2, 4), 0 for a copy. */
void tcf_capture_memset(const char *call, CUdeviceptr dst, unsigned value, unsigned elem,
                        size_t count, CUstream stream, int ptds, CUresult rc);
void tcf_capture_memcpy(const char *call, CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                        CUstream stream, int ptds, CUresult rc);

/* Code loading. The identity of an image passed to cuModuleLoadData and its kin, or of a
 * file passed to cuModuleLoad or cuLibraryLoadFromFile: never 0 when known, 0 when not
 * (capture/images.c says what it is made of). Then record it for the handle the driver
 * returned (a CUmodule or CUlibrary, as an integer). */
uint64_t tcf_image_id(const void *image);
uint64_t tcf_image_file_id(const char *path);
void tcf_capture_loaded(uint64_t handle, uint64_t id);

/* Fuse mode, before the driver sees the launch: returns 1 when tcfuse took care of it
 * (held in the window, or issued and recorded with its decoded op) and the wrapper must
 * return *result, 0 when the caller must issue and record it as usual (held work that
 * must precede it has been issued). */
int tcf_capture_fuse_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                            unsigned bx, unsigned by, unsigned bz, unsigned smem,
                            CUstream stream, void **params, void **extra, CUresult *result);
/* Fuse mode: a stream-ordered free. Returns 1 when held (it must run after held work that
 * may use the block), 0 when the caller must free now. */
int tcf_capture_fuse_free(CUdeviceptr ptr, CUstream stream);
/* Fuse mode: any other device work on `stream` (memsets, copies, launches tcfuse does not
 * hold): issues held work first, so that order is kept. */
void tcf_capture_fuse_order(CUstream stream);

/* A call that can observe device state, or one tcfuse does not know: every window closes
 * before it, with `call` as the reason. Called before the real call is made. */
void tcf_capture_boundary(const char *call);

/* Closes every window and writes the trace's end; at exit, and for tests. */
void tcf_capture_shutdown(void);

/* Stable 64-bit hash of a string (xxHash XXH3), used for kernel identity in keys. */
uint64_t tcf_hash_bytes(const void *p, size_t n, uint64_t seed);

#endif
