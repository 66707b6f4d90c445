/* Kernel identity, memoized per handle: the mangled name and the parameter layout.
 *
 * cudart hands the driver a CUkernel cast to CUfunction (shared/data: kind=1), on which
 * cuFuncGetName fails and cuKernelGetName works; a real CUfunction (cuModuleGetFunction)
 * is the reverse. So ask as a kernel first, then as a function.
 * Lookups are lock-free (the launch path); inserts take a lock. Entries are never freed:
 * a handle's identity is needed until exit (stats, trace), and modules are rarely unloaded.
 */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <pthread.h>

#include "base/base.h"
#include "base/fault.h"
#include "recognize/recognize.h"

#define TCF_KTAB_BITS 16
#define TCF_KTAB_SIZE (1u << TCF_KTAB_BITS)
#define TCF_MAX_PARAMS 1024

typedef struct {
    _Atomic uint64_t handle;
    tcf_kernel_t *_Atomic k;
} tcf_kslot_t;

static tcf_kslot_t *tcf_ktab;
static pthread_mutex_t tcf_klock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint tcf_kcount;
static tcf_kernel_t *_Atomic tcf_klist[TCF_KTAB_SIZE];   /* by id - 1 */
static atomic_ullong tcf_koom;
static tcf_kernel_t tcf_kunknown = { .name = "", .id = 0 };

uint32_t tcf_kernel_count(void)
{
    return atomic_load(&tcf_kcount);
}

tcf_kernel_t *tcf_kernel_at(uint32_t i)
{
    return i < atomic_load(&tcf_kcount) && i < TCF_KTAB_SIZE
               ? atomic_load_explicit(&tcf_klist[i], memory_order_acquire) : NULL;
}

unsigned long long tcf_kernel_oom(void)
{
    return atomic_load(&tcf_koom);
}

static void tcf_kernel_describe(tcf_kernel_t *k, CUfunction f)
{
    const char *name = NULL;
    int as_kernel = 0;
    if (tcf_drv.kernel_get_name &&
        tcf_drv.kernel_get_name(&name, (CUkernel)f) == CUDA_SUCCESS && name) {
        as_kernel = 1;
        k->kind = TCF_KIND_KERNEL;
    } else if (tcf_drv.func_get_name &&
               tcf_drv.func_get_name(&name, f) == CUDA_SUCCESS && name) {
        k->kind = TCF_KIND_FUNCTION;
    } else {
        name = NULL;
    }
    k->name = tcf_strdup(name ? name : "");
    if (!k->name)
        k->name = "";
    k->name_hash = XXH3_64bits(k->name, strlen(k->name));

    uint32_t offs[64], sizes[64];
    uint32_t *off = offs, *size = sizes, cap = 64, n = 0;
    for (;;) {
        size_t o = 0, s = 0;
        CUresult rc = CUDA_ERROR_NOT_SUPPORTED;
        if (as_kernel && tcf_drv.kernel_get_param_info)
            rc = tcf_drv.kernel_get_param_info((CUkernel)f, n, &o, &s);
        else if (!as_kernel && k->kind == TCF_KIND_FUNCTION && tcf_drv.func_get_param_info)
            rc = tcf_drv.func_get_param_info(f, n, &o, &s);
        if (rc == CUDA_ERROR_INVALID_VALUE || (rc != CUDA_SUCCESS && n > 0)) {
            k->param_known = 1;   /* ran past the last parameter */
            break;
        }
        if (rc != CUDA_SUCCESS || n == TCF_MAX_PARAMS)
            break;                /* the driver cannot say: no layout */
        if (n == cap) {
            uint32_t *no = tcf_malloc(2 * cap * sizeof *no), *ns = tcf_malloc(2 * cap * sizeof *ns);
            if (!no || !ns) {
                tcf_free(no), tcf_free(ns);
                break;
            }
            memcpy(no, off, n * sizeof *no), memcpy(ns, size, n * sizeof *ns);
            if (off != offs)
                tcf_free(off), tcf_free(size);
            off = no, size = ns, cap *= 2;
        }
        off[n] = (uint32_t)o;
        size[n] = (uint32_t)s;
        n++;
    }
    if (k->param_known) {
        k->nparams = n;
        k->off = tcf_malloc((n ? n : 1) * sizeof *k->off);
        k->size = tcf_malloc((n ? n : 1) * sizeof *k->size);
        if (!k->off || !k->size) {
            k->param_known = 0;
            k->nparams = 0;
        } else {
            memcpy(k->off, off, n * sizeof *off);
            memcpy(k->size, size, n * sizeof *size);
            for (uint32_t i = 0; i < n; i++)
                if (off[i] + size[i] > k->param_bytes)
                    k->param_bytes = off[i] + size[i];
            XXH3_state_t st;
            XXH3_64bits_reset(&st);
            XXH3_64bits_update(&st, off, n * sizeof *off);
            XXH3_64bits_update(&st, size, n * sizeof *size);
            k->layout_hash = XXH3_64bits_digest(&st);
        }
    }
    if (off != offs)
        tcf_free(off), tcf_free(size);
}

tcf_kernel_t *tcf_kernel_get(CUfunction f)
{
    uint64_t h = (uint64_t)(uintptr_t)f;
    if (!tcf_ktab)
        return &tcf_kunknown;
    uint32_t i = (uint32_t)((h * 0x9E3779B97F4A7C15ull) >> (64 - TCF_KTAB_BITS));
    for (uint32_t probe = 0; probe < TCF_KTAB_SIZE; probe++, i = (i + 1) & (TCF_KTAB_SIZE - 1)) {
        uint64_t cur = atomic_load_explicit(&tcf_ktab[i].handle, memory_order_acquire);
        if (cur == h) {
            tcf_kernel_t *k = atomic_load_explicit(&tcf_ktab[i].k, memory_order_acquire);
            if (k)
                return k;
            break; /* being inserted by another thread: take the lock and wait for it */
        }
        if (cur == 0)
            break;
    }
    /* First sight, once per kernel: allocations and the driver's queries, signals
     * deferred over them (base/sigdefer.c). */
    sigset_t old;
    tcf_sig_defer(&old);
    pthread_mutex_lock(&tcf_klock);
    i = (uint32_t)((h * 0x9E3779B97F4A7C15ull) >> (64 - TCF_KTAB_BITS));
    tcf_kernel_t *k = NULL;
    for (uint32_t probe = 0; probe < TCF_KTAB_SIZE; probe++, i = (i + 1) & (TCF_KTAB_SIZE - 1)) {
        uint64_t cur = atomic_load(&tcf_ktab[i].handle);
        if (cur == h) {
            k = atomic_load(&tcf_ktab[i].k);
            break;
        }
        if (cur == 0) {
            k = tcf_calloc(1, sizeof *k);
            if (!k)
                break;
            k->handle = h;
            tcf_kernel_describe(k, f);
            k->family = (uint8_t)tcf_kernel_family(k->name);
            k->collective = (uint8_t)tcf_kernel_collective(k->name);
            k->direct_gemm = (uint8_t)tcf_kernel_direct_gemm(k->name);
            k->id = atomic_load(&tcf_kcount) + 1;   /* under the lock: ids are dense */
            atomic_store_explicit(&tcf_klist[k->id - 1], k, memory_order_release);
            atomic_fetch_add(&tcf_kcount, 1);
            atomic_store_explicit(&tcf_ktab[i].k, k, memory_order_release);
            atomic_store_explicit(&tcf_ktab[i].handle, h, memory_order_release);
            break;
        }
    }
    pthread_mutex_unlock(&tcf_klock);
    tcf_sig_resume(&old);
    if (!k) {
        atomic_fetch_add(&tcf_koom, 1);
        return &tcf_kunknown;
    }
    return k;
}

void tcf_kernels_init(void)
{
    tcf_ktab = tcf_calloc(TCF_KTAB_SIZE, sizeof *tcf_ktab);
}
