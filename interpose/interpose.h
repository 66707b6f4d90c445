/* interpose: the hooks. Private to this folder; nothing else includes it.
 *
 * Three ways in: the exported `dlsym` (how processes find libcuda's cuGetProcAddress),
 * the cuGetProcAddress family (how cudart and cuBLAS find every other entry point), and
 * the exported ABI symbols themselves (programs linked with -lcuda). Each hands out, per
 * hooks.def: a C wrapper, a trampoline (boundary), or the real pointer (query).
 */
#ifndef TCF_INTERPOSE_H
#define TCF_INTERPOSE_H

#include <cuda.h>
#include <stdatomic.h>
#include <stddef.h>

#include "config/config.h"

typedef enum { TCF_CLASS_PROC, TCF_CLASS_LAUNCH, TCF_CLASS_ALLOC, TCF_CLASS_FREE,
               TCF_CLASS_STREAMOP, TCF_CLASS_LOAD, TCF_CLASS_CAPTURE, TCF_CLASS_GATE,
               TCF_CLASS_PASS } tcf_class_t;

/* Row ids of the wrapped entry points: TCF_ID_cuLaunchKernel, ... */
enum {
#define TCF_WRAP(abi, base, since, ptds, cls, params, args) TCF_ID_##abi,
#define TCF_GATE(base)
#define TCF_PASS(base)
#include "interpose/hooks.def"
#undef TCF_WRAP
#undef TCF_GATE
#undef TCF_PASS
    TCF_ID__COUNT
};

/* The real entry point of each wrapped row, set on first resolution. */
extern void *_Atomic tcf_real[TCF_ID__COUNT];

/* Function pointer types: tcf_fn_cuLaunchKernel_t, ... */
#define TCF_WRAP(abi, base, since, ptds, cls, params, args) typedef CUresult (*tcf_fn_##abi##_t) params;
#define TCF_GATE(base)
#define TCF_PASS(base)
#include "interpose/hooks.def"
#undef TCF_WRAP
#undef TCF_GATE
#undef TCF_PASS

/* The wrappers, defined in wrap_*.c (hidden; exported under the ABI name by TCF_EXPORT). */
#define TCF_WRAP(abi, base, since, ptds, cls, params, args) CUresult tcf_hook_##abi params;
#define TCF_GATE(base)
#define TCF_PASS(base)
#include "interpose/hooks.def"
#undef TCF_WRAP
#undef TCF_GATE
#undef TCF_PASS

/* Exports wrapper tcf_hook_<abi> as the driver symbol <abi>, for programs linked with
 * -lcuda. An alias, not a thunk: the call costs nothing extra. */
#define TCF_EXPORT(abi)                                                        \
    extern __typeof__(tcf_hook_##abi) tcf_export_##abi __asm__(#abi)           \
        __attribute__((alias("tcf_hook_" #abi), visibility("default")));

typedef struct {
    const char   *abi;      /* exported symbol, e.g. "cuMemAlloc_v2" */
    const char   *base;     /* what cuGetProcAddress is asked for, e.g. "cuMemAlloc" */
    int           since;
    int           ptds;
    tcf_class_t   cls;
    void         *wrapper;  /* tcf_hook_<abi> */
} tcf_hook_row_t;

extern const tcf_hook_row_t tcf_hook_rows[TCF_ID__COUNT];

/* The real function of row `id`, resolving it from libcuda if nobody has yet. The common
 * case is one acquire load, inlined into every wrapper. */
void *tcf_interpose_real_slow(int id);
static inline void *tcf_interpose_real(int id)
{
    void *p = atomic_load_explicit(&tcf_real[id], memory_order_acquire);
    return __builtin_expect(p != NULL, 1) ? p : tcf_interpose_real_slow(id);
}
#define TCF_REAL(abi) ((tcf_fn_##abi##_t)tcf_interpose_real(TCF_ID_##abi))

/* Lazy, thread-safe start: options, libcuda, capture. Cheap after the first call. */
void tcf_interpose_init(void);
/* The mode, once initialised; TCF_MODE_OFF before. */
extern _Atomic int tcf_interpose_mode;

/* What to hand a caller who looked `name` up and got the real pointer `p`.
 * by_abi: name is an exported symbol name (dlsym); otherwise a cuGetProcAddress base name
 * asked at cudaVersion `ver` with `flags`. */
void *tcf_interpose_resolve(const char *name, void *p, int by_abi, int ver, cuuint64_t flags);

/* Trampolines (tramp.c + tramp_x86_64.S): a generic stub that closes windows with `name`
 * as the reason, then jumps to `real` with every argument register intact. Returns NULL
 * when none can be made (pool full, or an architecture without stubs). */
void *tcf_tramp_get(const char *name, void *real, int known);

/* The libcuda handle (dlopen'ed with RTLD_NOLOAD), or NULL. */
void *tcf_interpose_libcuda(void);
/* glibc's dlsym, not ours. */
void *tcf_real_dlsym(void *handle, const char *name);

/* Counters for the stats (interpose's own). */
typedef struct {
    _Atomic unsigned long long lookups, wrapped, gated, unknown, passed, unwrappable;
} tcf_interpose_stats_t;
extern tcf_interpose_stats_t tcf_interpose_stats;

#endif
