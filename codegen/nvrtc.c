/* codegen/nvrtc.c: NVRTC found at run time (codegen.h).
 *
 * No link-time dependency: a process that never fuses never loads NVRTC, and a machine
 * without it simply never fuses. Search order: the caller's override, a libnvrtc the
 * process already mapped (PyTorch may have loaded its own copy: using that one keeps a
 * single NVRTC per process), then the usual sonames. The first success sticks.
 *
 * Exit. NVRTC's C++ static destructors join the process's exit handlers when it is loaded
 * and when a compile first touches a function-local static. A handler registered before
 * them runs after them: had tcfuse's handler (which waits for its worker to leave any
 * compile) been registered first, they would destroy NVRTC under a compile still running
 * on the worker, a crash or a hang at exit (seen on the H100 in 4 runs of 10). So the
 * caller's exit hook (tcf_nvrtc_on_exit) is registered again after the open, which ends
 * with a small warm-up compile that touches NVRTC's lazily made statics, and after every
 * compile: the newest registration always runs before every destructor NVRTC registered
 * so far; one registered by the compile under way at exit runs after the hook returns,
 * when that compile is over. tests/unit/test_nvrtc_exit.c exits during compiles.
 * (A private link-map namespace, dlmopen, avoids the ordering but not its own trouble: its
 * libc keeps the environment array of the moment it was opened, which the process's next
 * setenv frees; NVRTC's getenv then read freed memory, a crash seen on the H100.)
 *
 * Options mirror how nvcc built libtorch_cuda (no fast math): FMA contraction on, IEEE
 * division and square root, denormals kept. NVRTC spells the architecture option
 * --gpu-architecture (it rejects --gpu-arch). Programs are per call, so compiles may run
 * concurrently; only opening takes the lock. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvrtc.h> /* types only: every function comes from dlsym */

#include "base/base.h"
#include "base/fault.h"
#include "codegen/codegen.h"

typedef struct {
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                          const char *const *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
    nvrtcResult (*cubin)(nvrtcProgram, char *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*destroy)(nvrtcProgram *);
    nvrtcResult (*version)(int *, int *);
    const char *(*error_string)(nvrtcResult);
} tcf_nvrtc_api_t;

static pthread_mutex_t tcf_nvrtc_lock = PTHREAD_MUTEX_INITIALIZER;
static tcf_nvrtc_api_t tcf_nvrtc_api;     /* written once, under the lock, before ready */
static int tcf_nvrtc_ready;               /* read and written under the lock */
static void (*tcf_nvrtc_exit_hook)(void); /* set before the first open */
static char tcf_nvrtc_ver[32];

static void tcf_nvrtc_msg(char *buf, size_t cap, const char *fmt, const char *a, const char *b)
{
    if (buf && cap)
        snprintf(buf, cap, fmt, a ? a : "", b ? b : "");
}

/* dl_iterate_phdr callback: the path of a mapped libnvrtc (libnvrtc.so.13, a wheel's
 * renamed libnvrtc-<hash>.so.12, ...), never libnvrtc-builtins. */
static int tcf_nvrtc_find_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    char *out = data;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    if (base && strncmp(base, "libnvrtc", 8) == 0 && strstr(base, ".so") &&
        !strstr(base, "builtins") && strlen(info->dlpi_name) < 4096) {
        strcpy(out, info->dlpi_name);
        return 1;
    }
    return 0;
}

/* Resolves every entry point from h into api; 0, or -1 naming the missing one. */
static int tcf_nvrtc_resolve(void *h, tcf_nvrtc_api_t *api, const char **missing)
{
#define TCF_NVRTC_SYM_(field, name)                                                       \
    do {                                                                                  \
        void *p_ = dlsym(h, name);                                                        \
        if (!p_) {                                                                        \
            *missing = name;                                                              \
            return -1;                                                                    \
        }                                                                                 \
        memcpy(&api->field, &p_, sizeof p_);                                              \
    } while (0)
    TCF_NVRTC_SYM_(create, "nvrtcCreateProgram");
    TCF_NVRTC_SYM_(compile, "nvrtcCompileProgram");
    TCF_NVRTC_SYM_(cubin_size, "nvrtcGetCUBINSize");
    TCF_NVRTC_SYM_(cubin, "nvrtcGetCUBIN");
    TCF_NVRTC_SYM_(log_size, "nvrtcGetProgramLogSize");
    TCF_NVRTC_SYM_(log, "nvrtcGetProgramLog");
    TCF_NVRTC_SYM_(destroy, "nvrtcDestroyProgram");
    TCF_NVRTC_SYM_(version, "nvrtcVersion");
    TCF_NVRTC_SYM_(error_string, "nvrtcGetErrorString");
#undef TCF_NVRTC_SYM_
    return 0;
}

void tcf_nvrtc_on_exit(void (*hook)(void))
{
    pthread_mutex_lock(&tcf_nvrtc_lock);
    __atomic_store_n(&tcf_nvrtc_exit_hook, hook, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&tcf_nvrtc_lock);
}

/* See the top of this file. Called with the lock held or with a private copy of it. */
static void tcf_nvrtc_reregister(void (*hook)(void))
{
    if (hook)
        atexit(hook);
}

static atomic_int tcf_nvrtc_loading;  /* an NVRTC library was (or is being) opened */

static int tcf_nvrtc_named(const char *path)
{
    const char *base = path ? strrchr(path, '/') : NULL;
    return path && !strncmp(base ? base + 1 : path, "libnvrtc", 8);
}

/* Whether addr lies in a library whose file name starts with "libnvrtc". This runs for every
 * exit handler the process registers once NVRTC is open, and PyTorch registers some on the
 * first call of each op: the owner is found by address (base.h says why not dladdr). */
int tcf_nvrtc_owns(const void *addr, int walk)
{
    tcf_object_t o;
    return tcf_object_at(addr, walk ? TCF_OBJ_WALK : 0, &o) && tcf_nvrtc_named(o.name);
}

void tcf_nvrtc_exit_registered(void *dso)
{
    void (*hook)(void) = __atomic_load_n(&tcf_nvrtc_exit_hook, __ATOMIC_ACQUIRE);
    if (!hook || !atomic_load_explicit(&tcf_nvrtc_loading, memory_order_relaxed) || !dso ||
        !tcf_nvrtc_owns(dso, 0))
        return;
    atexit(hook);  /* its own registration comes back here from tcfuse: not an NVRTC one */
}

/* A compile of a tiny kernel (result unused), so that what NVRTC makes at its first
 * compile is made, and its destructors registered, before the exit hook is. */
static void tcf_nvrtc_warm_up(const tcf_nvrtc_api_t *api)
{
    static const char src[] = "extern \"C\" __global__ void w(float *x) { x[0] = tanhf(x[0]); }\n";
    const char *const opts[] = { "--gpu-architecture=compute_80" };
    nvrtcProgram prog = NULL;
    if (api->create(&prog, src, "tcf_warm.cu", 0, NULL, NULL) == NVRTC_SUCCESS) {
        api->compile(prog, 1, opts);
        api->destroy(&prog);
    }
    tcf_nvrtc_reregister(tcf_nvrtc_exit_hook);
}

/* Tries one library; 0 and the API on success, else -1 with the reason in err. */
static int tcf_nvrtc_try(const char *path, int noload, char *err, size_t errcap)
{
    tcf_nvrtc_api_t api;
    const char *missing = NULL;
    int major = 0, minor = 0;
    atomic_store(&tcf_nvrtc_loading, 1);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | (noload ? RTLD_NOLOAD : 0));
    if (!h) {
        const char *e = dlerror();
        tcf_nvrtc_msg(err, errcap, "%s%s", e ? e : path, e ? "" : ": cannot be opened");
        return -1;
    }
    if (tcf_nvrtc_resolve(h, &api, &missing) || api.version(&major, &minor) != NVRTC_SUCCESS) {
        tcf_nvrtc_msg(err, errcap, "%s: no usable %s", path, missing ? missing : "nvrtcVersion");
        dlclose(h);
        return -1;
    }
    tcf_nvrtc_api = api;
    snprintf(tcf_nvrtc_ver, sizeof tcf_nvrtc_ver, "%d.%d", major, minor);
    tcf_nvrtc_ready = 1;  /* the handle stays open for the life of the process */
    tcf_nvrtc_warm_up(&api);
    return 0;
}

int tcf_nvrtc_open(const char *override_path, char *err, size_t errcap)
{
    static const char *const names[] = { "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so" };
    char loaded[4096] = "", last[512] = "";
    int rc = -1;
    if (err && errcap)
        err[0] = '\0';
    pthread_mutex_lock(&tcf_nvrtc_lock);
    if (tcf_nvrtc_ready) {
        rc = 0;
    } else if (tcf_fault(TCF_FAULT_NVRTC_OPEN)) {
        tcf_nvrtc_msg(err, errcap, "%s%s", "TCFUSE_FAULT: nvrtc_open", NULL);
    } else if (override_path && override_path[0]) {
        rc = tcf_nvrtc_try(override_path, 0, err, errcap);
    } else {
        if (dl_iterate_phdr(tcf_nvrtc_find_loaded, loaded) && loaded[0])
            rc = tcf_nvrtc_try(loaded, 1, last, sizeof last);
        for (size_t i = 0; rc && i < sizeof names / sizeof names[0]; i++)
            rc = tcf_nvrtc_try(names[i], 0, last, sizeof last);
        if (rc)  /* the last reason alone would hide that we searched */
            tcf_nvrtc_msg(err, errcap, "no libnvrtc found (libnvrtc.so.13, .12, libnvrtc.so); "
                          "last: %s%s", last, NULL);
    }
    pthread_mutex_unlock(&tcf_nvrtc_lock);
    return rc;
}

const char *tcf_nvrtc_version(void)
{
    pthread_mutex_lock(&tcf_nvrtc_lock);
    const char *v = tcf_nvrtc_ready ? tcf_nvrtc_ver : "";
    pthread_mutex_unlock(&tcf_nvrtc_lock);
    return v;
}

/* Copies the program's log into log (truncated to fit). */
static void tcf_nvrtc_copy_log(const tcf_nvrtc_api_t *api, nvrtcProgram p, char *log, size_t cap)
{
    size_t n = 0;
    if (!log || !cap)
        return;
    log[0] = '\0';
    if (api->log_size(p, &n) != NVRTC_SUCCESS || n <= 1)
        return;
    char *full = tcf_malloc(n);
    if (!full)
        return;
    if (api->log(p, full) == NVRTC_SUCCESS) {
        full[n - 1] = '\0';
        snprintf(log, cap, "%s", full);
    }
    free(full);
}

int tcf_nvrtc_compile(const char *src, int arch, void **cubin, size_t *len, char *log,
                      size_t logcap)
{
    tcf_nvrtc_api_t api;
    nvrtcProgram prog = NULL;
    nvrtcResult r;
    char archopt[48];
    if (log && logcap)
        log[0] = '\0';
    if (!src || !cubin || !len || arch <= 0 || arch > 10000) {
        tcf_nvrtc_msg(log, logcap, "%s%s", "tcf_nvrtc_compile: bad arguments", NULL);
        return -1;
    }
    *cubin = NULL;
    *len = 0;
    if (tcf_nvrtc_open(NULL, log, logcap))
        return -1;
    if (tcf_fault(TCF_FAULT_NVRTC_COMPILE)) {
        tcf_nvrtc_msg(log, logcap, "%s%s", "TCFUSE_FAULT: nvrtc_compile", NULL);
        return -1;
    }
    pthread_mutex_lock(&tcf_nvrtc_lock);
    api = tcf_nvrtc_api;
    void (*hook)(void) = tcf_nvrtc_exit_hook;
    pthread_mutex_unlock(&tcf_nvrtc_lock);

    snprintf(archopt, sizeof archopt, "--gpu-architecture=sm_%d", arch);
    const char *const opts[] = { archopt, "-default-device", "--fmad=true", "--ftz=false",
                                 "--prec-div=true", "--prec-sqrt=true", "-std=c++17" };
    r = api.create(&prog, src, "tcf_fused.cu", 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        tcf_nvrtc_msg(log, logcap, "nvrtcCreateProgram: %s%s", api.error_string(r), NULL);
        return -1;
    }
    r = api.compile(prog, (int)(sizeof opts / sizeof opts[0]), opts);
    tcf_nvrtc_reregister(hook);
    if (r != NVRTC_SUCCESS) {
        tcf_nvrtc_copy_log(&api, prog, log, logcap);
        if (log && logcap && !log[0])
            tcf_nvrtc_msg(log, logcap, "nvrtcCompileProgram: %s%s", api.error_string(r), NULL);
        api.destroy(&prog);
        return -1;
    }
    size_t n = 0;
    char *out = NULL;
    r = api.cubin_size(prog, &n);
    if (r == NVRTC_SUCCESS && n && (out = tcf_malloc(n)) != NULL)
        r = api.cubin(prog, out);
    if (r != NVRTC_SUCCESS || !out) {
        tcf_nvrtc_msg(log, logcap, "nvrtcGetCUBIN: %s%s",
                      r != NVRTC_SUCCESS ? api.error_string(r) : "empty or out of memory", NULL);
        free(out);
        api.destroy(&prog);
        return -1;
    }
    tcf_nvrtc_copy_log(&api, prog, log, logcap);  /* warnings, if any */
    api.destroy(&prog);
    *cubin = out;
    *len = n;
    return 0;
}
