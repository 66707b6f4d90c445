/* Integrity of interpose/hooks.def, checked against the toolkit's own cuda.h.
 * Built with __CUDA_API_VERSION_INTERNAL so that cuda.h declares every versioned and
 * per-thread variant under its ABI name: each wrapped row's prototype must be exactly the
 * driver's (a wrong one would corrupt arguments), at compile time. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <string.h>

#include "check.h"

#define TCF_LAUNCH_PARAMS_ (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, \
                            unsigned by, unsigned bz, unsigned smem, CUstream stream,       \
                            void **params, void **extra)
#define TCF_WRAP(abi, base, since, ptds, cls, params, args)                          \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&abi), CUresult(*) params), \
                   "prototype of " #abi " differs from cuda.h");
#define TCF_GATE(base)
#define TCF_PASS(base)
#include "interpose/hooks.def"
#undef TCF_WRAP
#undef TCF_GATE
#undef TCF_PASS

typedef struct { const char *abi, *base; int since, ptds; const char *cls; } row_t;
static const row_t wraps[] = {
#define TCF_WRAP(abi, base, since, ptds, cls, params, args) { #abi, #base, since, ptds, #cls },
#define TCF_GATE(base)
#define TCF_PASS(base)
#include "interpose/hooks.def"
#undef TCF_WRAP
#undef TCF_GATE
#undef TCF_PASS
};
static const char *const gates[] = {
#define TCF_WRAP(abi, base, since, ptds, cls, params, args)
#define TCF_GATE(base) #base,
#define TCF_PASS(base)
#include "interpose/hooks.def"
#undef TCF_GATE
#undef TCF_PASS
};
static const char *const passes[] = {
#define TCF_GATE(base)
#define TCF_PASS(base) #base,
#include "interpose/hooks.def"
#undef TCF_WRAP
#undef TCF_GATE
#undef TCF_PASS
};
#define N(a) (sizeof(a) / sizeof((a)[0]))

static int in(const char *const *list, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(list[i], s))
            return 1;
    return 0;
}

TEST(abi_names_unique_and_named_after_base)
{
    for (size_t i = 0; i < N(wraps); i++) {
        CHECK(strncmp(wraps[i].abi, wraps[i].base, strlen(wraps[i].base)) == 0);
        for (size_t j = i + 1; j < N(wraps); j++)
            CHECK(strcmp(wraps[i].abi, wraps[j].abi) != 0);
    }
}

TEST(ptsz_rows_flagged)
{
    for (size_t i = 0; i < N(wraps); i++) {
        size_t n = strlen(wraps[i].abi);
        int is_ptsz = n > 5 && !strcmp(wraps[i].abi + n - 5, "_ptsz");
        CHECK_EQ_INT(is_ptsz, wraps[i].ptds);
    }
}

TEST(versions_plausible)
{
    for (size_t i = 0; i < N(wraps); i++) {
        CHECK(wraps[i].since >= 2000 && wraps[i].since <= 13000);
        /* the same base and flavour twice must differ in version, or lookup is ambiguous */
        for (size_t j = i + 1; j < N(wraps); j++)
            if (!strcmp(wraps[i].base, wraps[j].base) && wraps[i].ptds == wraps[j].ptds)
                CHECK(wraps[i].since != wraps[j].since);
    }
}

TEST(classes_disjoint)
{
    for (size_t i = 0; i < N(gates); i++) {
        CHECK(!in(passes, N(passes), gates[i]));
        for (size_t j = 0; j < N(wraps); j++)
            CHECK(strcmp(wraps[j].base, gates[i]) != 0);
        for (size_t j = i + 1; j < N(gates); j++)
            CHECK(strcmp(gates[i], gates[j]) != 0);
    }
    for (size_t i = 0; i < N(passes); i++) {
        for (size_t j = 0; j < N(wraps); j++)
            CHECK(strcmp(wraps[j].base, passes[i]) != 0);
        for (size_t j = i + 1; j < N(passes); j++)
            CHECK(strcmp(passes[i], passes[j]) != 0);
    }
}

TEST(what_pytorch_needs_is_classified)
{
    /* From shared/data/driver-calls: called between launches; must not close windows
     * (queries pass; loads are wrapped only to note what they load). */
    static const char *const between[] = {
        "cuCtxGetDevice", "cuDevicePrimaryCtxGetState", "cuCtxGetCurrent",
        "cuDeviceGetAttribute", "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
        "cuKernelGetFunction", "cuKernelGetAttribute", "cuStreamIsCapturing",
        "cuDriverGetVersion", "cuCtxGetLimit", "cuDeviceGet", "cuGetErrorString",
        "cuLibraryLoadData", "cuLibraryGetKernel", "cuKernelSetAttribute",
        "cuFuncSetAttribute", "cuModuleGetLoadingMode", "cuOccupancyMaxActiveClusters" };
    for (size_t i = 0; i < N(between); i++) {
        int load = 0;
        for (size_t j = 0; j < N(wraps); j++)
            load |= !strcmp(wraps[j].base, between[i]) && !strcmp(wraps[j].cls, "LOAD");
        CHECK(in(passes, N(passes), between[i]) || load);
    }
    CHECK(!in(passes, N(passes), "cuLibraryLoadData"));  /* each load's identity is noted */
    static const char *const bounds[] = { "cuStreamSynchronize", "cuCtxSynchronize",
        "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuEventRecord", "cuStreamWaitEvent" };
    for (size_t i = 0; i < N(bounds); i++)
        CHECK(in(gates, N(gates), bounds[i]));
}

int main(void)
{
    RUN(abi_names_unique_and_named_after_base);
    RUN(ptsz_rows_flagged);
    RUN(versions_plausible);
    RUN(classes_disjoint);
    RUN(what_pytorch_needs_is_classified);
    return check_main_end();
}
