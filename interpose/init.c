/* Lazy start: the first hooked call (a CUDA symbol looked up, or an exported wrapper
 * called) reads the options, finds libcuda and starts capture. A process that never
 * touches CUDA never gets here. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "capture/capture.h"
#include "interpose/interpose.h"

_Atomic int tcf_interpose_mode = TCF_MODE_OFF;

static pthread_once_t tcf_once = PTHREAD_ONCE_INIT;
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
    tcf_out("  hooks         %llu lookups: %llu wrapped, %llu known boundaries, %llu unknown "
            "(boundaries), %llu queries passed, %llu unseen",
            atomic_load(&s->lookups), atomic_load(&s->wrapped), atomic_load(&s->gated),
            atomic_load(&s->unknown), atomic_load(&s->passed), atomic_load(&s->unwrappable));
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
    };
    tcf_capture_init(&drv);
    atexit(tcf_at_exit);
    tcf_log(TCF_LOG_INFO, "%s mode, libcuda %s", tcf_mode_name(tcf_cfg.mode),
            tcf_libcuda ? "found" : "not loaded yet");
    atomic_store(&tcf_interpose_mode, (int)tcf_cfg.mode);
}

void tcf_interpose_init(void)
{
    pthread_once(&tcf_once, tcf_init_once);
}
