/* codegen/gen_layernorm.c: the body of a LayerNorm or RMSNorm kernel (reduce.h:
 * tcf_red_norm), in PyTorch 2.11's order, with a group's producers and consumers spliced
 * in.
 *
 * vectorized_layer_norm_kernel<T, float, rms> (layer_norm_kernel.cu; read in
 * docs/PYTORCH-LAYERNORM.md §2, section numbers below are its) runs a block of (32, 4)
 * threads a row. The kernel here is the same, step for step:
 *   statistics  thread t = threadIdx.x + 32 * threadIdx.y visits the vectors i = t, t +
 *               128, ... < N / 4 and their four elements in order, folding each into
 *               (mean, sigma2, count) by cuWelfordOnlineSum (§2.1; RMS: sigma2 += x * x);
 *               the warps combine by shuffles down at 16, ..., 1 (§2.3), the four warps
 *               as (W0 + W2) + (W1 + W3) through shared memory (§2.4); thread 0 divides
 *               sigma2 by N (a true division), rstd = rsqrtf(var + eps).
 *   output      the same visiting order again, x loaded anew: gamma * (rstd * (x - mean))
 *               + beta, with as many of gamma and beta as the launch has (§2.5; RMS:
 *               gamma * (rstd * x)); thread 0 stores the row's mean and rstd.
 * Every operation is written as the intrinsic whose rounding the PTX of PyTorch's source
 * shows (sub, add, mul, rcp, fma, div), so no compiler can contract them otherwise;
 * rsqrtf is the hardware's, as PyTorch's. Verification proves every kernel on its
 * launch's data, mean and rstd included.
 *
 * The loads of x are the prologue's (the producers: eager's input was the last of them,
 * stored and loaded back, so it arrives as tcf_in), gamma's and beta's their own
 * prologues', and the stores the epilogue's: the result converted to T as PyTorch's
 * store converts it, and the consumers. Each takes a vector's four elements at once, as
 * PyTorch's loads and stores do: in packs where the group's buffers allow (gen_rows.c);
 * a thread's elements are its own, no other thread loads them after the statistics'
 * barrier. Welford's online form needs no row in registers,
 * so any N that PyTorch gives this kernel (up to 2^24) works. */
#include <stdio.h>

#include "codegen/internal.h"

int tcf_layernorm_check(const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp)
{
    int flt = s->in_dt == TCF_DT_F32 || s->in_dt == TCF_DT_F16 || s->in_dt == TCF_DT_BF16;
    int rms = s->op == TCF_RED_RMSNORM;
    /* beta without gamma: its PTX leaves one mul and add to ptxas (§5); refused at decode */
    if (!tcf_red_norm(s->op) || !flt || s->out_dt != s->in_dt || s->acc_dt != TCF_DT_F32 ||
        s->bw != 32 || s->bh != 4 || s->vectorize || s->split_y || s->odims != 1 || s->root ||
        s->affine > 3 || s->affine == 2 || (rms && s->affine > 1))
        return -1;
    if (!sp || !sp->prologue || !sp->epilogue || sp->row_pass ||
        (!(s->affine & 1) != !sp->prologue2) || (!(s->affine & 2) != !sp->prologue3))
        return -1;
    return 0;
}

void tcf_layernorm_body(tcf_codegen_sb_t *b, const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp)
{
    int rms = s->op == TCF_RED_RMSNORM, g = s->affine & 1, be = s->affine & 2;
    tcf_fullrow_io(b, s, sp);
    tcf_codegen_put(b, "__forceinline__ void tcf_pro4(const tcf_rargs &a, const tcf_row &r, unsigned j0, tcf_in *out) {\n"
                       "%s\n}\n", sp->prologue);
    if (g)
        tcf_codegen_put(b, "__forceinline__ void tcf_pro4_g(const tcf_rargs &a, const tcf_row &r, unsigned j0, tcf_in *out) {\n"
                           "%s\n}\n", sp->prologue2);
    if (be)
        tcf_codegen_put(b, "__forceinline__ void tcf_pro4_b(const tcf_rargs &a, const tcf_row &r, unsigned j0, tcf_in *out) {\n"
                           "%s\n}\n", sp->prologue3);
    tcf_codegen_put(b, "__forceinline__ void tcf_epi4(const tcf_rargs &a, const tcf_row &r, unsigned j0, const tcf_out *vin) {\n"
                       "%s\n}\n", sp->epilogue);
    /* WelfordDataLN and cuWelfordCombine(B = own, A = other) (§2.2); RMS keeps sigma2 */
    tcf_codegen_put(b, "struct tcf_wf { float m, s, c; };\n");
    if (rms)
        tcf_codegen_put(b, "__forceinline__ tcf_wf tcf_comb(tcf_wf B, tcf_wf A) {\n"
                           "  return { 0.0f, __fadd_rn(B.s, A.s), 0.0f };\n}\n");
    else
        tcf_codegen_put(b, "__forceinline__ tcf_wf tcf_comb(tcf_wf B, tcf_wf A) {\n"
                           "  const float d = __fsub_rn(B.m, A.m), c = __fadd_rn(A.c, B.c);\n"
                           "  if (!(c > 0.0f)) return { 0.0f, 0.0f, c };\n"
                           "  const float k = __frcp_rn(c), nA = __fmul_rn(A.c, k), nB = __fmul_rn(B.c, k);\n"
                           "  return { __fmaf_rn(nA, A.m, __fmul_rn(B.m, nB)),\n"
                           "           __fmaf_rn(__fmul_rn(__fmul_rn(d, d), A.c), nB, __fadd_rn(A.s, B.s)), c };\n}\n");
    tcf_codegen_put(b, "extern \"C\" __global__ void __launch_bounds__(128) %s(const tcf_rargs a) {\n"
                       "  __shared__ float sh[6];   /* (mean, sigma2) of two warps, then their counts */\n"
                       "  tcf_row r;\n"
                       "  r.row = blockIdx.x, r.in_off = r.out_off = 0;\n"
                       "  if (r.row >= a.num_outputs) return;   /* the whole block */\n"
                       "  const unsigned N = a.num_inputs, t = threadIdx.x + 32u * threadIdx.y;\n"
                       "  tcf_wf w = { 0.0f, 0.0f, 0.0f };\n"
                       "  for (unsigned i = t; i < N / 4u; i += 128u) {\n"
                       "    tcf_in xv[4];\n"
                       "    tcf_pro4(a, r, 4u * i, xv);\n"
                       "#pragma unroll\n"
                       "    for (unsigned e = 0; e < 4u; e++) {\n"
                       "      const float v = tcf_tof(xv[e]);\n",
                    TCF_REDUCE_KERNEL);
    if (rms)
        tcf_codegen_put(b, "      w.s = __fmaf_rn(v, v, w.s);\n");
    else   /* cuWelfordOnlineSum: mean + delta * (1 / count), contracted */
        tcf_codegen_put(b, "      const float d = __fsub_rn(v, w.m), c = __fadd_rn(w.c, 1.0f);\n"
                           "      const float m = __fmaf_rn(__frcp_rn(c), d, w.m);\n"
                           "      w.s = __fmaf_rn(d, __fsub_rn(v, m), w.s), w.m = m, w.c = c;\n");
    tcf_codegen_put(b,
        "    }\n"
        "  }\n"
        "#pragma unroll\n"
        "  for (int off = 16; off > 0; off /= 2) {\n"
        "    tcf_wf o;\n"
        "    o.m = __shfl_down_sync(0xffffffffu, w.m, off, 32);\n"
        "    o.s = __shfl_down_sync(0xffffffffu, w.s, off, 32);\n"
        "    o.c = __shfl_down_sync(0xffffffffu, w.c, off, 32);\n"
        "    w = tcf_comb(w, o);\n"
        "  }\n"
        "  for (unsigned off = 2; off > 0; off /= 2) {\n"
        "    if (threadIdx.x == 0 && threadIdx.y >= off && threadIdx.y < 2u * off) {\n"
        "      const unsigned k = threadIdx.y - off;\n"
        "      sh[2 * k] = w.m, sh[2 * k + 1] = w.s, sh[4 + k] = w.c;\n"
        "    }\n"
        "    __syncthreads();\n"
        "    if (threadIdx.x == 0 && threadIdx.y < off)\n"
        "      w = tcf_comb(w, tcf_wf{ sh[2 * threadIdx.y], sh[2 * threadIdx.y + 1], sh[4 + threadIdx.y] });\n"
        "    __syncthreads();\n"
        "  }\n"
        "  if (t == 0) sh[0] = w.m, sh[1] = __fdiv_rn(w.s, (float)(int)N);\n"
        "  __syncthreads();\n"
        "  const float mean = sh[0], rstd = rsqrtf(__fadd_rn(sh[1], __uint_as_float(a.factor)));\n"
        "  for (unsigned i = t; i < N / 4u; i += 128u) {\n"
        "    tcf_in xv[4], gv[4], bv[4];\n"
        "    tcf_out y[4];\n"
        "    tcf_pro4(a, r, 4u * i, xv);\n");
    if (g)
        tcf_codegen_put(b, "    tcf_pro4_g(a, r, 4u * i, gv);\n");
    if (be)
        tcf_codegen_put(b, "    tcf_pro4_b(a, r, 4u * i, bv);\n");
    tcf_codegen_put(b,
        "#pragma unroll\n"
        "    for (unsigned e = 0; e < 4u; e++) {\n"
        "      const float x = tcf_tof(xv[e]);\n");
    const char *n = rms ? "__fmul_rn(rstd, x)" : "__fmul_rn(rstd, __fsub_rn(x, mean))";
    if (g && be)
        tcf_codegen_put(b, "      const float v = __fmaf_rn(tcf_tof(gv[e]), %s, tcf_tof(bv[e]));\n", n);
    else if (g)
        tcf_codegen_put(b, "      const float v = __fmul_rn(tcf_tof(gv[e]), %s);\n", n);
    else
        tcf_codegen_put(b, "      const float v = %s;\n", n);
    tcf_codegen_put(b, "      y[e] = tcf_cvt_out(v);\n"
                       "    }\n"
                       "    tcf_epi4(a, r, 4u * i, y);\n"
                       "  }\n"
                       "  if (t == 0) {\n");
    if (!rms)
        tcf_codegen_put(b, "    ((float *)a.buf[0])[r.row] = mean;\n");
    tcf_codegen_put(b, "    ((float *)a.buf[1])[r.row] = rstd;\n  }\n}\n");
}
