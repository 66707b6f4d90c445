/* Resolution: what a caller gets for a driver symbol, and the cuGetProcAddress hooks.
 * Not a hot path: cudart and cuBLAS look entry points up once and keep the pointers. */
#include <dlfcn.h>
#include <string.h>

#include "interpose/interpose.h"

#define TCF_GATE(base)
#define TCF_PASS(base)
const tcf_hook_row_t tcf_hook_rows[TCF_ID__COUNT] = {
#define TCF_WRAP(abi, base, since, ptds, cls, params, args) \
    { #abi, #base, since, ptds, TCF_CLASS_##cls, (void *)tcf_hook_##abi },
#include "interpose/hooks.def"
#undef TCF_WRAP
};

void *_Atomic tcf_real[TCF_ID__COUNT];
tcf_interpose_stats_t tcf_interpose_stats;

/* The bases of known boundaries and queries, in table order. */
static const char *const tcf_gate_names[] = {
#define TCF_WRAP(abi, base, since, ptds, cls, params, args)
#undef TCF_GATE
#undef TCF_PASS
#define TCF_GATE(base) #base,
#define TCF_PASS(base)
#include "interpose/hooks.def"
};
#undef TCF_GATE
#undef TCF_PASS
static const char *const tcf_pass_names[] = {
#define TCF_GATE(base)
#define TCF_PASS(base) #base,
#include "interpose/hooks.def"
};
#undef TCF_WRAP
#undef TCF_GATE
#undef TCF_PASS

#define TCF_COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int tcf_in_list(const char *const *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return 1;
    return 0;
}

/* "cuMemcpyDtoDAsync_v2_ptsz" -> "cuMemcpyDtoDAsync": what cuGetProcAddress calls it. */
static void tcf_base_name(const char *abi, char *out, size_t cap)
{
    size_t n = strlen(abi);
    if (n >= cap)
        n = cap - 1;
    memcpy(out, abi, n);
    out[n] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        char *us = strrchr(out, '_');
        if (!us)
            break;
        if (!strcmp(us, "_ptsz") || !strcmp(us, "_ptds")) {
            *us = '\0';
            continue;
        }
        const char *d = us + 1;
        if (*d == 'v' && d[1]) {
            for (d++; *d >= '0' && *d <= '9'; d++)
                ;
            if (!*d)
                *us = '\0';
        }
        break;
    }
}

static void *tcf_libcuda_sym(const char *abi)
{
    void *h = tcf_interpose_libcuda();
    return tcf_real_dlsym(h ? h : RTLD_NEXT, abi);
}

void *tcf_interpose_real_slow(int id)
{
    tcf_interpose_init();
    void *p = tcf_libcuda_sym(tcf_hook_rows[id].abi);
    if (p)
        atomic_store_explicit(&tcf_real[id], p, memory_order_release);
    return p;
}

/* Is p the variant of row id? Either it is what libcuda exports under that name, or it is
 * what the driver's own cuGetProcAddress hands out for the variant's first version. */
static int tcf_row_matches(int id, void *p)
{
    static void *_Atomic by_dl[TCF_ID__COUNT], *_Atomic by_gp[TCF_ID__COUNT];
    const tcf_hook_row_t *r = &tcf_hook_rows[id];
    void *q = atomic_load(&by_dl[id]);
    if (!q) {
        q = tcf_libcuda_sym(r->abi);
        atomic_store(&by_dl[id], q);
    }
    if (q == p)
        return 1;
    if (r->cls == TCF_CLASS_PROC)
        return 0;
    q = atomic_load(&by_gp[id]);
    if (!q) {
        tcf_fn_cuGetProcAddress_v2_t gp = TCF_REAL(cuGetProcAddress_v2);
        cuuint64_t fl = r->ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
        CUdriverProcAddressQueryResult st;
        if (!gp || gp(r->base, &q, r->since, fl, &st) != CUDA_SUCCESS)
            q = NULL;
        atomic_store(&by_gp[id], q);
    }
    return q && q == p;
}

static void *tcf_hand_out(int id, void *p)
{
    void *expected = NULL;
    atomic_compare_exchange_strong(&tcf_real[id], &expected, p);
    atomic_fetch_add(&tcf_interpose_stats.wrapped, 1);
    return tcf_hook_rows[id].wrapper;
}

void *tcf_interpose_resolve(const char *name, void *p, int by_abi, int ver, cuuint64_t flags)
{
    (void)ver, (void)flags;
    tcf_interpose_init();
    atomic_fetch_add(&tcf_interpose_stats.lookups, 1);
    if (atomic_load(&tcf_interpose_mode) == TCF_MODE_OFF)
        return p;

    char base[128];
    if (by_abi) {
        for (int id = 0; id < TCF_ID__COUNT; id++)
            if (!strcmp(tcf_hook_rows[id].abi, name))
                return tcf_hand_out(id, p);
        tcf_base_name(name, base, sizeof base);
    } else {
        size_t n = strlen(name);
        if (n >= sizeof base)
            n = sizeof base - 1;
        memcpy(base, name, n);
        base[n] = '\0';
    }

    if (tcf_in_list(tcf_pass_names, TCF_COUNT(tcf_pass_names), base)) {
        atomic_fetch_add(&tcf_interpose_stats.passed, 1);
        return p;
    }
    if (!by_abi)
        for (int id = 0; id < TCF_ID__COUNT; id++)
            if (!strcmp(tcf_hook_rows[id].base, base) && tcf_row_matches(id, p))
                return tcf_hand_out(id, p);

    int known = tcf_in_list(tcf_gate_names, TCF_COUNT(tcf_gate_names), base);
    void *t = tcf_tramp_get(base, p, known);
    if (!t) {
        /* A boundary we cannot see: counted, and said once at debug level. */
        atomic_fetch_add(&tcf_interpose_stats.unwrappable, 1);
        tcf_log(TCF_LOG_DEBUG, "no trampoline left for %s: it passes unseen", base);
        return p;
    }
    atomic_fetch_add(known ? &tcf_interpose_stats.gated : &tcf_interpose_stats.unknown, 1);
    return t;
}

/* --- the cuGetProcAddress family ----------------------------------------------------- */
static void tcf_fix_pfn(const char *symbol, void **pfn, int ver, cuuint64_t flags)
{
    if (symbol && pfn && *pfn)
        *pfn = tcf_interpose_resolve(symbol, *pfn, 0, ver, flags);
}

CUresult tcf_hook_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                   cuuint64_t flags)
{
    tcf_fn_cuGetProcAddress_t real = TCF_REAL(cuGetProcAddress);
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    CUresult rc = real(symbol, pfn, cudaVersion, flags);
    if (rc == CUDA_SUCCESS)
        tcf_fix_pfn(symbol, pfn, cudaVersion, flags);
    return rc;
}

CUresult tcf_hook_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                      cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    tcf_fn_cuGetProcAddress_v2_t real = TCF_REAL(cuGetProcAddress_v2);
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    CUresult rc = real(symbol, pfn, cudaVersion, flags, status);
    if (rc == CUDA_SUCCESS)
        tcf_fix_pfn(symbol, pfn, cudaVersion, flags);
    return rc;
}

TCF_EXPORT(cuGetProcAddress)
TCF_EXPORT(cuGetProcAddress_v2)
