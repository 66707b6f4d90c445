/* Host call sites of window boundaries (TCFUSE_BACKTRACE=1), through libunwind found at
 * run time: no link-time dependency, and without it there are simply no backtraces. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "capture/internal.h"

typedef int (*tcf_unw_backtrace_fn)(void **, int);

static tcf_unw_backtrace_fn tcf_unw(void)
{
    static tcf_unw_backtrace_fn fn;
    static atomic_int tried;
    if (!atomic_exchange(&tried, 1)) {
        void *h = dlopen("libunwind.so.8", RTLD_LAZY | RTLD_LOCAL);
        /* A handle lookup: our dlsym hands non-CUDA names straight to glibc's. */
        if (h)
            fn = (tcf_unw_backtrace_fn)dlsym(h, "unw_backtrace");
        if (!fn)
            tcf_log(TCF_LOG_INFO, "libunwind.so.8 not found: boundaries carry no backtraces");
    }
    return fn;
}

int tcf_backtrace(char (*out)[160], int max)
{
    tcf_unw_backtrace_fn fn = tcf_unw();
    if (!fn || max <= 0)
        return 0;
    void *pcs[64];
    int n = fn(pcs, 64), k = 0;
    Dl_info self;
    void *self_base = dladdr((void *)tcf_backtrace, &self) ? self.dli_fbase : NULL;
    for (int i = 0; i < n && k < max; i++) {
        Dl_info di;
        if (!dladdr(pcs[i], &di)) {
            snprintf(out[k++], 160, "%p", pcs[i]);
            continue;
        }
        if (di.dli_fbase == self_base)
            continue;  /* tcfuse's own frames say nothing about the caller */
        const char *mod = di.dli_fname ? strrchr(di.dli_fname, '/') : NULL;
        mod = mod ? mod + 1 : (di.dli_fname ? di.dli_fname : "?");
        snprintf(out[k++], 160, "%s+0x%lx %s", mod,
                 (unsigned long)((char *)pcs[i] - (char *)di.dli_fbase),
                 di.dli_sname ? di.dli_sname : "");
    }
    return k;
}
