/* __cxa_atexit, interposed, for one purpose: tcfuse's exit hook must run before any exit
 * handler NVRTC registers, whenever NVRTC registers it (codegen/nvrtc.c says why). NVRTC
 * registers its C++ static destructors when loaded and, for statics made on first use,
 * during a compile: one registered during the compile under way when the process exits
 * would run first and destroy NVRTC under that compile (a crash at exit, seen on the H100).
 * So each registration made from an NVRTC library is followed at once by the hook's. Every
 * other registration passes straight through; until NVRTC is open this is one load and a
 * call, after it a lookup of the registering library by address (PyTorch registers on the
 * first call of each op, so this must stay cheap: see tcf_nvrtc_owns). */
#include <dlfcn.h>

#include "codegen/codegen.h"
#include "interpose/interpose.h"

typedef int (*tcf_cxa_atexit_fn)(void (*)(void *), void *, void *);

__attribute__((visibility("default"))) int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

int __cxa_atexit(void (*fn)(void *), void *arg, void *dso)
{
    static tcf_cxa_atexit_fn real;
    tcf_cxa_atexit_fn r = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!r) {
        r = (tcf_cxa_atexit_fn)tcf_real_dlsym(RTLD_NEXT, "__cxa_atexit");
        if (!r)
            return -1;
        __atomic_store_n(&real, r, __ATOMIC_RELEASE);
    }
    int rc = r(fn, arg, dso);
    if (rc == 0)
        tcf_nvrtc_exit_registered(dso);
    return rc;
}
