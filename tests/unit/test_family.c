/* Kernel families (recognize/family.c) on names PyTorch 2.11 and cuBLAS really launch, as
 * recorded in tests/fixtures: the rule order matters (a copy runs inside an elementwise
 * loop; every strided loop's name says gpu_kernel_impl_nocast), so each name is checked
 * against the family it belongs to. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "recognize/recognize.h"

static const struct { const char *name; tcf_family_t want; } cases[] = {
    { "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_",
      TCF_FAM_ELEMENTWISE },
    { "_ZN2at6native27unrolled_elementwise_kernelINS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EELi4E23TrivialOffsetCalculatorILi2EjES7_ILi1EjENS0_6memory12LoadWithCastILi2EEENSA_13StoreWithCastILi1EEEEEviT_T0_T2_",
      TCF_FAM_ELEMENTWISE },
    { "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocastINS0_13BinaryFunctorIN3c108BFloat16ES5_S5_NS0_15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_",
      TCF_FAM_STRIDED },
    { "_ZN2at6native27unrolled_elementwise_kernelIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlfE_St5arrayIPcLm2EELi4E23TrivialOffsetCalculatorILi1EjESB_NS0_6memory12LoadWithCastILi1EEENSC_13StoreWithCastILi1EEEEEviT_T0_T2_",
      TCF_FAM_COPY },
    { "_ZN2at6native29vectorized_elementwise_kernelILi8EZNS0_25bfloat16_copy_kernel_cudaERNS_18TensorIteratorBaseEEUlfE_St5arrayIPcLm2EEEEviT0_T1_",
      TCF_FAM_COPY },
    { "_ZN2at6native12_GLOBAL__N_119CatArrayBatchedCopyINS1_10OpaqueTypeILj2EEEjLi4ELi64ELi64EEEvPT_NS1_25CatArrInputTensorMetadataIS5_T0_XT2_EXT3_EEENS1_16TensorSizeStrideIS8_Lj4EEEiS8_",
      TCF_FAM_CAT },
    { "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_",
      TCF_FAM_REDUCE },
    { "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", TCF_FAM_GEMM },
    { "_ZN7cutlass7Kernel2I36cutlass_80_simt_sgemm_128x32_8x5_nn_align1EEvNT_6ParamsE", TCF_FAM_GEMM },
    { "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
      TCF_FAM_GEMM },
    { "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0",
      TCF_FAM_ATTENTION },
    { "_ZN2at6native43_GLOBAL__N__8d4fa4a1_10_SoftMax_cu_9f978f6320cunn_SoftMaxForwardILi4EfffNS1_22SoftMaxForwardEpilogueEEEvPT2_PKT0_i",
      TCF_FAM_SOFTMAX },
    { "_ZN2at6native53_GLOBAL__N__d0b1e6e3_20_layer_norm_kernel_cu_1d5a6f0827vectorized_layer_norm_kernelIffLb0EEEviT0_PKT_S6_S6_PS4_S7_PS3_",
      TCF_FAM_NORM },
    { "_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_18TensorListMetadataILi4EEENS1_20FusedAdamMathFunctorIfLi4ELNS0_9ADAM_MODEE1ELb0EEEJPfdddddbbPfS9_EEEvT_T0_DpT1_",
      TCF_FAM_FOREACH },
    { "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PliiilllS3_b", TCF_FAM_INDEX },
    { "_ZN2at6native54_GLOBAL__N__d8ceb000_21_DistributionNormal_cu_0c5b6e8543distribution_elementwise_grid_stride_kernelIfLi4E",
      TCF_FAM_RNG },
    { "_ZN5cudnn6fusion28compute_dot_do_o_specializedILb1ELi64EEEvPKvS3_PvS4_jjjjjjjjjjjjjjjjjfS3_S3_S3_S3_S3_bS3_S4_S3_iiiiiiiii",
      TCF_FAM_ATTENTION },   /* SDPA's cuDNN backward */
    { "_ZN14at_cuda_detail3cub6detail10radix_sort29DeviceRadixSortOnesweepKernelINS1_5radix10policy_hubIlN2at4cuda3cub6detail10OpaqueTypeILi8EEEyE10Policy100",
      TCF_FAM_INDEX },       /* the embedding backward's index sort */
    { "_ZN2at6native39_GLOBAL__N__5cd812b1_7_Loss_cu_5b0651e138nll_loss_forward_reduce_cuda_kernel_2dIfflEEvPT_S4_PKS3_PKT1_S6_bllll",
      TCF_FAM_OTHER },
    { "some_kernel_nobody_knows", TCF_FAM_OTHER },
    { "", TCF_FAM_OTHER },
};

TEST(real_names)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tcf_family_t got = tcf_kernel_family(cases[i].name);
        char what[96];
        snprintf(what, sizeof what, "%.80s", cases[i].name);
        if (!CHECK_EQ_STR(tcf_family_name(got), tcf_family_name(cases[i].want)))
            fprintf(stderr, "    name: %s\n", what);
    }
    CHECK_EQ_INT(tcf_kernel_family(NULL), TCF_FAM_OTHER);
}

TEST(names_are_distinct)
{
    for (int a = 0; a < TCF_FAM_COUNT; a++) {
        CHECK(strcmp(tcf_family_name((tcf_family_t)a), "?") != 0);
        for (int b = a + 1; b < TCF_FAM_COUNT; b++)
            CHECK(strcmp(tcf_family_name((tcf_family_t)a), tcf_family_name((tcf_family_t)b)) != 0);
    }
    CHECK_EQ_STR(tcf_family_name(TCF_FAM_COUNT), "?");
}

/* NCCL's kernels, old and new naming, mangled as the library exports them; PyTorch's and
 * others' are not. */
TEST(collectives)
{
    CHECK(tcf_kernel_collective("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"));
    CHECK(tcf_kernel_collective("_Z29ncclKernel_AllGather_RING_LL_Sum_int8_tP11ncclDevCommmP8ncclWork"));
    CHECK(tcf_kernel_collective("ncclDevKernel_Generic"));
    CHECK(!tcf_kernel_collective("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_"));
    CHECK(!tcf_kernel_collective("nccl_like_but_not"));
    CHECK(!tcf_kernel_collective(""));
    CHECK(!tcf_kernel_collective(NULL));
}

TEST(direct_gemms)
{
    CHECK(tcf_kernel_direct_gemm("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"));
    CHECK(!tcf_kernel_direct_gemm("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_grouped_TNN"));
    CHECK(!tcf_kernel_direct_gemm("nvjet_sm100_ptrArray_bz_TNT"));
    CHECK(!tcf_kernel_direct_gemm("nvjet_sm90_tst_ARRAY_TNN"));
    CHECK(!tcf_kernel_direct_gemm("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"));
    CHECK(!tcf_kernel_direct_gemm("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_"));
    CHECK(!tcf_kernel_direct_gemm(""));
    CHECK(!tcf_kernel_direct_gemm(NULL));
}

int main(void)
{
    RUN(real_names);
    RUN(names_are_distinct);
    RUN(collectives);
    RUN(direct_gemms);
    return check_main_end();
}
