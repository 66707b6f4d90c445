/* Lazy start: the first hooked call (a CUDA symbol looked up, or an exported wrapper
 * called) reads the options, finds libcuda, hands its entry points down (base/driver.h)
 * and starts capture, and in fuse mode exec. A process that never
 * touches CUDA never gets here. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "base/driver.h"
#include "capture/capture.h"
#include "exec/exec.h"
#include "exec/steps.h"
#include "interpose/interpose.h"
#include "replay/replay.h"

_Atomic int tcf_interpose_mode = TCF_MODE_OFF;

static pthread_once_t tcf_once = PTHREAD_ONCE_INIT;
extern int tcf_interpose_set_alloc_conf;  /* 1 set, -1 not set because c10 was mapped */

/* A program linked against libc10_cuda (libtorch from C++) has it mapped before any
 * constructor runs, and c10 parses the variable in its own static initializer as well as
 * at the first allocation: a backend set between the two fails c10's check that both
 * parses agree (an INTERNAL ASSERT that aborts the program). So the variable is only set
 * when c10 is not loaded yet, as in Python, where `import torch` comes later. */
static int tcf_c10_cuda_mapped(void)
{
    void *h = dlopen("libc10_cuda.so", RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    dlclose(h);
    return 1;
}
static void *tcf_libcuda;

void *tcf_interpose_libcuda(void)
{
    return tcf_libcuda;
}

static void tcf_at_exit(void)
{
    tcf_capture_shutdown();
    if (!tcf_cfg.stats)
        return;
    tcf_interpose_stats_t *s = &tcf_interpose_stats;
    if (tcf_cfg.mode == TCF_MODE_FUSE)
        tcf_out("  allocator     PYTORCH_CUDA_ALLOC_CONF %s",
                tcf_interpose_set_alloc_conf > 0 ? "set to backend:cudaMallocAsync by tcfuse"
                : tcf_interpose_set_alloc_conf < 0
                    ? "left unset: libc10_cuda was loaded before tcfuse started (a program "
                      "linked against libtorch); set it before the program starts for "
                      "visible frees"
                    : "left as the process had it");
    tcf_out("  hooks         %llu lookups: %llu wrapped, %llu known boundaries, %llu unknown "
            "(boundaries), %llu queries passed, %llu unseen",
            atomic_load(&s->lookups), atomic_load(&s->wrapped), atomic_load(&s->gated),
            atomic_load(&s->unknown), atomic_load(&s->passed), atomic_load(&s->unwrappable));
}

/* A child forked after tcfuse started. The driver refuses the child a context the parent
 * made, tcfuse's worker thread is not there, and a lock another thread held at the fork
 * stays held: every call passes straight to the driver, as with TCFUSE_MODE=off, and the
 * parent's windows are neither issued nor counted at the child's exit. (Without this, a
 * child forked while the worker compiled waited for it at exit for ever.) */
static void tcf_forked_child(void)
{
    atomic_store(&tcf_interpose_mode, TCF_MODE_OFF);
    tcf_capture_forked();
    if (tcf_cfg.mode == TCF_MODE_FUSE || tcf_cfg.mode == TCF_MODE_FULL)
        tcf_exec_forked();
}

static void tcf_init_once(void)
{
    tcf_config_load();
    if (tcf_cfg.mode == TCF_MODE_OFF)
        return;
    /* libcuda is already loaded by whoever is asking for its symbols; NOLOAD so that a
     * process whose lookup failed does not get a driver loaded behind its back. */
    tcf_libcuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    void *h = tcf_libcuda ? tcf_libcuda : RTLD_NEXT;
    tcf_driver_t drv = {
        .kernel_get_name       = tcf_real_dlsym(h, "cuKernelGetName"),
        .func_get_name         = tcf_real_dlsym(h, "cuFuncGetName"),
        .kernel_get_param_info = tcf_real_dlsym(h, "cuKernelGetParamInfo"),
        .func_get_param_info   = tcf_real_dlsym(h, "cuFuncGetParamInfo"),
        .ctx_get_current       = tcf_real_dlsym(h, "cuCtxGetCurrent"),
        .launch_kernel         = tcf_real_dlsym(h, "cuLaunchKernel"),
        .mem_free_async        = tcf_real_dlsym(h, "cuMemFreeAsync"),
        .ctx_set_current       = tcf_real_dlsym(h, "cuCtxSetCurrent"),
        .ctx_get_device        = tcf_real_dlsym(h, "cuCtxGetDevice"),
        .device_get_attribute  = tcf_real_dlsym(h, "cuDeviceGetAttribute"),
        .device_total_mem      = tcf_real_dlsym(h, "cuDeviceTotalMem_v2"),
        .mem_alloc             = tcf_real_dlsym(h, "cuMemAlloc_v2"),
        .mem_free              = tcf_real_dlsym(h, "cuMemFree_v2"),
        .mem_alloc_async       = tcf_real_dlsym(h, "cuMemAllocAsync"),
        .device_get_mem_pool   = tcf_real_dlsym(h, "cuDeviceGetMemPool"),
        .mem_pool_get_attribute = tcf_real_dlsym(h, "cuMemPoolGetAttribute"),
        .mem_pool_set_attribute = tcf_real_dlsym(h, "cuMemPoolSetAttribute"),
        .mem_pool_trim_to      = tcf_real_dlsym(h, "cuMemPoolTrimTo"),
        .mem_get_info          = tcf_real_dlsym(h, "cuMemGetInfo_v2"),
        .memcpy_htod_async     = tcf_real_dlsym(h, "cuMemcpyHtoDAsync_v2"),
        .memcpy_dtoh_async     = tcf_real_dlsym(h, "cuMemcpyDtoHAsync_v2"),
        .stream_create         = tcf_real_dlsym(h, "cuStreamCreate"),
        .stream_synchronize    = tcf_real_dlsym(h, "cuStreamSynchronize"),
        .stream_destroy        = tcf_real_dlsym(h, "cuStreamDestroy_v2"),
        .module_load_data      = tcf_real_dlsym(h, "cuModuleLoadData"),
        .module_get_function   = tcf_real_dlsym(h, "cuModuleGetFunction"),
        .module_unload         = tcf_real_dlsym(h, "cuModuleUnload"),
        .pointer_get_attribute = tcf_real_dlsym(h, "cuPointerGetAttribute"),
        .kernel_get_library    = tcf_real_dlsym(h, "cuKernelGetLibrary"),
        .func_get_module       = tcf_real_dlsym(h, "cuFuncGetModule"),
        /* The graph API by its ABI names: the _v2 forms take cuda.h's current structures. */
        .launch_kernel_ex      = tcf_real_dlsym(h, "cuLaunchKernelEx"),
        .graph_create          = tcf_real_dlsym(h, "cuGraphCreate"),
        .graph_add_kernel_node = tcf_real_dlsym(h, "cuGraphAddKernelNode_v2"),
        .graph_kernel_node_set_attribute = tcf_real_dlsym(h, "cuGraphKernelNodeSetAttribute"),
        .graph_instantiate     = tcf_real_dlsym(h, "cuGraphInstantiateWithFlags"),
        .graph_exec_kernel_node_set_params = tcf_real_dlsym(h, "cuGraphExecKernelNodeSetParams_v2"),
        .graph_exec_update     = tcf_real_dlsym(h, "cuGraphExecUpdate_v2"),
        .graph_add_memset_node = tcf_real_dlsym(h, "cuGraphAddMemsetNode"),
        .graph_add_memcpy_node = tcf_real_dlsym(h, "cuGraphAddMemcpyNode"),
        .graph_exec_memset_node_set_params = tcf_real_dlsym(h, "cuGraphExecMemsetNodeSetParams"),
        .graph_exec_memcpy_node_set_params = tcf_real_dlsym(h, "cuGraphExecMemcpyNodeSetParams"),
        .graph_launch          = tcf_real_dlsym(h, "cuGraphLaunch"),
        .graph_exec_destroy    = tcf_real_dlsym(h, "cuGraphExecDestroy"),
        .graph_destroy         = tcf_real_dlsym(h, "cuGraphDestroy"),
        .memset_d8_async       = tcf_real_dlsym(h, "cuMemsetD8Async"),
        .memset_d16_async      = tcf_real_dlsym(h, "cuMemsetD16Async"),
        .memset_d32_async      = tcf_real_dlsym(h, "cuMemsetD32Async"),
        .memcpy_dtod_async     = tcf_real_dlsym(h, "cuMemcpyDtoDAsync_v2"),
    };
    tcf_driver_set(&drv);
    /* The one upward path, capture -> exec or replay, is a table handed down now. */
    /* Fuse mode cuts windows only where the program's calls and the size cap say: an idle
     * gap on arrival frees nothing (held work has waited through it already), and where
     * a GPU-bound program's host pauses (its launches block whenever the driver's queue
     * is full) differs from run to run, and with it the groups a run meets. */
    static const tcf_capture_up_t fuse_up = {
        .flush = tcf_exec_flush, .stop = tcf_exec_stop, .stats = tcf_exec_stats_print,
        .no_idle = 1, .boundary = tcf_exec_boundary,
    };
    /* Graph mode learns every window and cuts them only where the program's own calls and
     * the replay cap say, never after an idle gap. */
    const tcf_capture_up_t graph_up = {
        .flush = tcf_replay_flush, .stop = tcf_replay_stop, .stats = tcf_replay_stats_print,
        .flush_all = 1, .no_idle = 1, .window_max = (uint32_t)tcf_cfg.replay_max,
        .boundary = tcf_replay_boundary,
    };
    /* Full mode is graph mode's windows, with exec beside replay planning them (replay
     * calls it: exec/steps.h). */
    int fuse = tcf_cfg.mode == TCF_MODE_FUSE, full = tcf_cfg.mode == TCF_MODE_FULL,
        graph = tcf_cfg.mode == TCF_MODE_GRAPH || full;
    tcf_capture_init(fuse ? &fuse_up : graph ? &graph_up : NULL);
    if (fuse)
        tcf_exec_init();
    if (full)
        tcf_exec_init_beside();
    if (graph)
        tcf_replay_init();
    atexit(tcf_at_exit);
    pthread_atfork(NULL, NULL, tcf_forked_child);
    tcf_log(TCF_LOG_INFO, "%s mode, libcuda %s", tcf_mode_name(tcf_cfg.mode),
            tcf_libcuda ? "found" : "not loaded yet");
    atomic_store(&tcf_interpose_mode, (int)tcf_cfg.mode);
}

/* Fuse mode wants every free to reach the driver: PyTorch's caching allocator never frees,
 * its cudaMallocAsync backend does. PyTorch reads PYTORCH_CUDA_ALLOC_CONF when it first
 * allocates, long after this runs (at load); an explicit setting is never changed. Only
 * the two variables are read here: the rest of the options wait for CUDA. */
int tcf_interpose_set_alloc_conf;

__attribute__((constructor)) static void tcf_alloc_conf_setup(void)
{
    const char *m = getenv("TCFUSE_MODE"), *a = getenv("TCFUSE_SET_ALLOCATOR");
    tcf_mode_t mode;
    int on = 1;
    if (!m || tcf_parse_mode(m, &mode) != 0 || mode != TCF_MODE_FUSE)
        return;
    if (a && tcf_parse_bool(a, &on) == 0 && !on)
        return;
    if (getenv("PYTORCH_CUDA_ALLOC_CONF"))
        return;
    if (tcf_c10_cuda_mapped()) {
        tcf_interpose_set_alloc_conf = -1;
        return;
    }
    if (setenv("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync", 0) == 0)
        tcf_interpose_set_alloc_conf = 1;
}

void tcf_interpose_init(void)
{
    pthread_once(&tcf_once, tcf_init_once);
}
