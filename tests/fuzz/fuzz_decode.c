/* Decoding (recognize/decode.c) of a launch whose name, parameter layout, bytes and shape
 * come from the input. The first byte picks a real kernel name (the loops and functors
 * PyTorch 2.11 launches) or, with its high bit set, takes the name from the input up to a
 * NUL; then the layout: a count and (offset, size) pairs; then the grid; the rest are the
 * parameter bytes. Also the two halves separately, and the description of what decoded;
 * then the same as a row reduction (decode_reduce.h) and the kernel generated for it. */
#include <stdlib.h>
#include <string.h>

#include "recognize/decode.h"
#include "recognize/decode_reduce.h"
#include "recognize/recognize.h"
#include "tests/fuzz/fuzz.h"

static const char *const names[] = {
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_",
    "_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_13BinaryFunctorIN3c108BFloat16ES4_S4_NS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm3EEEEviT0_T1_",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_",
    "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_17rsqrt_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE0_clEvENKUlvE0_clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_",
    "_ZN2at6native29vectorized_elementwise_kernelILi8EZNS0_25bfloat16_copy_kernel_cudaERNS_18TensorIteratorBaseEEUlfE_St5arrayIPcLm2EEEEviT0_T1_",
    "_ZN2at6native27unrolled_elementwise_kernelINS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EELi4E23TrivialOffsetCalculatorILi2EjES7_ILi1EjENS0_6memory12LoadWithCastILi2EEENSA_13StoreWithCastILi1EEEEEviT_T0_T2_",
    "_ZN2at6native27unrolled_elementwise_kernelIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlfE_St5arrayIPcLm2EELi4E23TrivialOffsetCalculatorILi1EjESB_NS0_6memory12LoadWithCastILi1EEENSC_13StoreWithCastILi1EEEEEviT_T0_T2_",
    "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastINS0_15CUDAFunctor_addIfEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_",
    "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocastIZZZNS0_15neg_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE0_clEvENKUlvE7_clEvEUlN3c108BFloat16EE_EEvS4_RKT_EUliE_EEviT1_",
    "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_15gpu_kernel_implINS0_15CUDAFunctor_addIfEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_",
    "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_",
    "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT",
    "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIN3c108BFloat16ENS0_14func_wrapper_tIS4_NS0_13MaxNanFunctorIS4_EEEEjS4_Li4ELi4EEEEEvT1_",
    "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIN3c104HalfENS0_14func_wrapper_tIS4_ZNS0_11sum_functorIS4_fS4_EclERNS_14TensorIteratorEEUlffE_EEjS4_Li4ELi8EEEEEvT1_",
};

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t at = 0;
    if (size < 2)
        return 0;
    uint8_t pick = data[at++];
    char *name;
    if (pick & 0x80) {
        const uint8_t *nul = memchr(data + at, 0, size - at);
        size_t len = nul ? (size_t)(nul - (data + at)) : size - at;
        name = strndup((const char *)data + at, len);
        at += len + (nul != NULL);
    } else {
        name = strdup(names[pick % (sizeof names / sizeof *names)]);
    }
    if (!name)
        return 0;
    uint32_t np = at < size ? data[at++] % 9 : 0, off[8], sz[8];
    for (uint32_t i = 0; i < np; i++, at += 4)
        off[i] = at + 4 <= size ? rd16(data + at) : 0, sz[i] = at + 4 <= size ? rd16(data + at + 2) : 0;
    uint32_t grid[3] = { 1, 1, 1 }, block[3] = { 128, 1, 1 };
    if (at + 4 <= size)
        grid[0] = rd16(data + at) | (uint32_t)rd16(data + at + 2) << 16, at += 4;
    if (at > size)
        at = size;
    uint8_t *params = malloc(size - at + 1);   /* its own buffer: a read past it shows */
    if (!params) {
        free(name);
        return 0;
    }
    memcpy(params, data + at, size - at);
    tcf_decode_launch_t l = { name, np, off, sz, params, (uint32_t)(size - at),
                              { grid[0], grid[1], grid[2] }, { block[0], block[1], block[2] } };
    tcf_op_t op;
    tcf_decode_kernel_t dk;
    char line[512];
    if (tcf_decode_launch(&l, &op) == TCF_DECODE_OK)
        tcf_decode_describe(&op, line, sizeof line);
    if (tcf_decode_kernel(&l, &dk) == TCF_DECODE_OK)
        (void)tcf_decode_apply(&dk, l.params, l.params_len, l.grid, l.block, &op);
    (void)tcf_kernel_family(name);
    /* as a row reduction, and the kernel generated for it */
    tcf_reduce_t red;
    tcf_decode_reduce_kernel_t rk;
    if (tcf_decode_reduce(&l, &red) == TCF_DECODE_OK) {
        tcf_reduce_shape_t shape;
        static char src[1 << 16];
        tcf_decode_reduce_describe(&red, line, sizeof line);
        tcf_reduce_shape_of(&red, &shape);
        (void)tcf_reduce_source(&shape, NULL, src, sizeof src);
    }
    if (tcf_decode_reduce_kernel(&l, &rk) == TCF_DECODE_OK)
        (void)tcf_decode_reduce_apply(&rk, l.params, l.params_len, l.grid, l.block, &red);
    free(params);
    free(name);
    return 0;
}
