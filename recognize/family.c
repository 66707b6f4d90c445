/* Kernel families by mangled name: the rows of the coverage tables (`tcfuse plan`, `tcfuse
 * report`) and of bench/programs/families.py's census, which keeps the same rules.
 *
 * The first rule that matches wins, so the order matters: a copy or a cast runs inside an
 * elementwise loop whose lambda names the copy (direct_copy_kernel_cuda, ...), so copies
 * come before the loops; never by "cast", since every strided loop's name says
 * gpu_kernel_impl_nocast. Pure; matching is a few substring searches. */
#include <string.h>

#include "recognize/recognize.h"

static const struct {
    tcf_family_t family;
    int nocase;
    const char *any[6];   /* any of these substrings */
} tcf_family_rules[] = {
    { TCF_FAM_GEMM, 1, { "gemm", "cutlass", "xmma", "nvjet", "cublas" } },
    { TCF_FAM_ATTENTION, 1, { "flash", "fmha", "attention", "efficient", "cudnn" } },
    { TCF_FAM_COPY, 0, { "copy_kernel" } },
    { TCF_FAM_CAT, 0, { "CatArray" } },
    { TCF_FAM_FOREACH, 0, { "multi_tensor_apply", "foreach" } },
    { TCF_FAM_REDUCE, 0, { "reduce_kernel", "Reduce" } },
    { TCF_FAM_SOFTMAX, 1, { "softmax" } },
    { TCF_FAM_NORM, 0, { "layer_norm", "LayerNorm", "rms_norm", "RowwiseMoments", "batch_norm" } },
    { TCF_FAM_RNG, 1, { "distribution", "philox", "curand", "fused_dropout" } },
    /* cub's sorts and scans: the deterministic embedding backward sorts its indices */
    { TCF_FAM_INDEX, 1, { "index", "embedding", "gather", "scatter", "radix_sort", "cub6detail" } },
    { TCF_FAM_ELEMENTWISE, 0, { "vectorized_elementwise_kernel", "unrolled_elementwise_kernel" } },
    { TCF_FAM_STRIDED, 0, { "elementwise_kernel" } },
};

tcf_family_t tcf_kernel_family(const char *name)
{
    if (!name || !name[0])
        return TCF_FAM_OTHER;
    for (size_t r = 0; r < sizeof tcf_family_rules / sizeof *tcf_family_rules; r++)
        for (int i = 0; i < 6 && tcf_family_rules[r].any[i]; i++) {
            const char *s = tcf_family_rules[r].any[i];
            if (tcf_family_rules[r].nocase ? strcasestr(name, s) != NULL : strstr(name, s) != NULL)
                return tcf_family_rules[r].family;
        }
    return TCF_FAM_OTHER;
}

int tcf_kernel_direct_gemm(const char *name)
{
    return name && !strncmp(name, "nvjet_", 6) && !strcasestr(name, "group") &&
           !strcasestr(name, "ptr") && !strcasestr(name, "array");
}

int tcf_kernel_collective(const char *name)
{
    return name && (strstr(name, "ncclDevKernel") || strstr(name, "ncclKernel"));
}

const char *tcf_family_name(tcf_family_t f)
{
    static const char *const names[] = {
#define TCF_FAMILY_NAME_(id, str) str,
        TCF_FAMILIES(TCF_FAMILY_NAME_)
#undef TCF_FAMILY_NAME_
    };
    return (unsigned)f < TCF_FAM_COUNT ? names[f] : "?";
}
