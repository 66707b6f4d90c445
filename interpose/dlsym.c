/* The dlsym hook: processes find libcuda's entry points with dlsym (cudart dlopen's
 * libcuda.so.1 and asks it for cuGetProcAddress_v2). The fast path that keeps glibc's
 * RTLD_NEXT semantics is in tramp_x86_64.S; this file holds the C side. */
#include <dlfcn.h>
#include <stddef.h>

#include "interpose/interpose.h"

typedef void *(*tcf_dlsym_fn)(void *, const char *);

/* glibc's dlsym; read by the assembly fast path, so not static. */
tcf_dlsym_fn tcf_dlsym_next;

void *tcf_dlsym_cuda(void *handle, const char *name);
void *tcf_dlsym_slow(void *handle, const char *name);

static tcf_dlsym_fn tcf_dlsym_find(void)
{
    tcf_dlsym_fn f = __atomic_load_n(&tcf_dlsym_next, __ATOMIC_ACQUIRE);
    if (f)
        return f;
    /* dlvsym is not hooked, so this cannot recurse. glibc 2.34 moved dlsym into libc
     * under a new version; older ones only have the x86-64 base version. */
    f = (tcf_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!f)
        f = (tcf_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    __atomic_store_n(&tcf_dlsym_next, f, __ATOMIC_RELEASE);
    return f;
}

__attribute__((constructor)) static void tcf_dlsym_setup(void)
{
    tcf_dlsym_find(); /* nothing else: a process that never touches CUDA pays only this */
}

void *tcf_real_dlsym(void *handle, const char *name)
{
    tcf_dlsym_fn f = tcf_dlsym_find();
    return f ? f(handle, name) : NULL;
}

/* Before the constructor ran (another library's constructor called dlsym): resolve glibc's
 * dlsym and call it. RTLD_NEXT from such an early caller is then relative to us. */
void *tcf_dlsym_slow(void *handle, const char *name)
{
    return tcf_real_dlsym(handle, name);
}

static void *tcf_object_of(void *p)
{
    Dl_info di;
    return dladdr(p, &di) ? di.dli_fbase : NULL;
}

static int tcf_is_ours(void *p)
{
    static void *base;
    if (!base)
        base = tcf_object_of((void *)tcf_is_ours);
    return base && tcf_object_of(p) == base;
}

/* Whether p is in libcuda itself (or in the object that exports cuGetProcAddress, for a
 * stand-in driver with another name): a cu* symbol from any other library is not ours to
 * classify. */
static int tcf_in_driver(void *p)
{
    void *h = tcf_interpose_libcuda();
    void *gp = h ? tcf_real_dlsym(h, "cuGetProcAddress") : NULL;
    return gp && tcf_object_of(gp) == tcf_object_of(p);
}

void *tcf_dlsym_cuda(void *handle, const char *name)
{
    void *p = tcf_real_dlsym(handle, name);
    if (!p)
        return NULL;
    /* dlsym(RTLD_DEFAULT, "cuLaunchKernel") finds our own export first: the real one is
     * the next definition after us. */
    if (tcf_is_ours(p)) {
        p = tcf_real_dlsym(RTLD_NEXT, name);
        if (!p)
            return NULL;
    }
    tcf_interpose_init();
    if (tcf_interpose_libcuda() && !tcf_in_driver(p))
        return p;
    return tcf_interpose_resolve(name, p, 1, 0, 0);
}

#if !defined(__x86_64__)
/* No assembly fast path here: RTLD_NEXT lookups made through this dlsym are relative to
 * libtcfuse.so. */
void *dlsym(void *handle, const char *name) __attribute__((visibility("default")));
void *dlsym(void *handle, const char *name)
{
    if (name && name[0] == 'c' && name[1] == 'u' && name[2] >= 'A' && name[2] <= 'Z')
        return tcf_dlsym_cuda(handle, name);
    return tcf_real_dlsym(handle, name);
}
#endif
