/* base/driver.h: the real CUDA driver entry points tcfuse itself calls.
 *
 * interpose/ fills this table once, from libcuda, before any other layer runs
 * (tcf_driver_set), and hands it down the path: capture/ asks the current context,
 * recognize/ names and parameter layouts, exec/ launches, frees, loads and verifies. No
 * layer calls a hooked entry point for its own work, so tcfuse never sees itself. Any
 * member may be NULL (an old driver, or a unit test's fakes): each user then does less
 * and says so. Read-only after tcf_driver_set; read from any thread.
 */
#ifndef TCF_BASE_DRIVER_H
#define TCF_BASE_DRIVER_H

#include <cuda.h>
#include <stddef.h>

typedef struct {
    /* Kernel identity (recognize/kernels.c) and the window of a call (capture/). */
    CUresult (*kernel_get_name)(const char **name, CUkernel k);
    CUresult (*func_get_name)(const char **name, CUfunction f);
    CUresult (*kernel_get_param_info)(CUkernel k, size_t i, size_t *off, size_t *size);
    CUresult (*func_get_param_info)(CUfunction f, size_t i, size_t *off, size_t *size);
    CUresult (*ctx_get_current)(CUcontext *ctx);
    /* exec/: issuing held work, compiling, loading and verifying generated kernels. */
    CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
    CUresult (*mem_free_async)(CUdeviceptr, CUstream);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_get_device)(CUdevice *);
    CUresult (*device_get_attribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*device_total_mem)(size_t *, CUdevice);   /* exec/reuse.c's default cap */
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*mem_alloc_async)(CUdeviceptr *, size_t, CUstream);
    /* exec/reserve.c: the pool grown at the first allocation, its watermark read. */
    CUresult (*device_get_mem_pool)(CUmemoryPool *, CUdevice);
    CUresult (*mem_pool_get_attribute)(CUmemoryPool, CUmemPool_attribute, void *);
    CUresult (*mem_pool_set_attribute)(CUmemoryPool, CUmemPool_attribute, void *);
    CUresult (*mem_pool_trim_to)(CUmemoryPool, size_t);
    CUresult (*mem_get_info)(size_t *, size_t *);
    CUresult (*memcpy_htod_async)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*memcpy_dtoh_async)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*stream_synchronize)(CUstream);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*module_load_data)(CUmodule *, const void *);
    CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*module_unload)(CUmodule);
    /* exec/verify.c: whether a parameter word points into device memory. */
    CUresult (*pointer_get_attribute)(void *, CUpointer_attribute, CUdeviceptr);
    /* Where a kernel's code came from (recognize/images.c). */
    CUresult (*kernel_get_library)(CUlibrary *, CUkernel);
    CUresult (*func_get_module)(CUmodule *, CUfunction);
    /* replay/: issuing held work of every form, and windows replayed as CUDA graphs. */
    CUresult (*launch_kernel_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult (*graph_create)(CUgraph *, unsigned);
    CUresult (*graph_add_kernel_node)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                      const CUDA_KERNEL_NODE_PARAMS *);
    CUresult (*graph_kernel_node_set_attribute)(CUgraphNode, CUkernelNodeAttrID,
                                                const CUkernelNodeAttrValue *);
    CUresult (*graph_instantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*graph_exec_kernel_node_set_params)(CUgraphExec, CUgraphNode,
                                                  const CUDA_KERNEL_NODE_PARAMS *);
    CUresult (*graph_exec_update)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *);
    CUresult (*graph_add_memset_node)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                      const CUDA_MEMSET_NODE_PARAMS *, CUcontext);
    CUresult (*graph_add_memcpy_node)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                      const CUDA_MEMCPY3D *, CUcontext);
    CUresult (*graph_exec_memset_node_set_params)(CUgraphExec, CUgraphNode,
                                                  const CUDA_MEMSET_NODE_PARAMS *, CUcontext);
    CUresult (*graph_exec_memcpy_node_set_params)(CUgraphExec, CUgraphNode,
                                                  const CUDA_MEMCPY3D *, CUcontext);
    CUresult (*graph_launch)(CUgraphExec, CUstream);
    CUresult (*graph_exec_destroy)(CUgraphExec);
    CUresult (*graph_destroy)(CUgraph);
    CUresult (*memset_d8_async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*memset_d16_async)(CUdeviceptr, unsigned short, size_t, CUstream);
    CUresult (*memset_d32_async)(CUdeviceptr, unsigned int, size_t, CUstream);
    CUresult (*memcpy_dtod_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
} tcf_driver_t;

/* The table every layer reads. Zero (every member NULL) until tcf_driver_set. */
extern tcf_driver_t tcf_drv;

/* Copies *drv into tcf_drv. Called once, at start, before any thread of tcfuse runs. */
void tcf_driver_set(const tcf_driver_t *drv);

#endif
