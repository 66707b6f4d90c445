/* codegen/gen_softmax.c: the body of a row softmax kernel (reduce.h: tcf_red_softmax), in
 * PyTorch 2.11's order, with a group's producers and consumers spliced in.
 *
 * softmax_warp_forward and softmax_warp_backward (PersistentSoftmax.cuh) keep a row in
 * registers: 2^l2e elements padded, WS = min(2^l2e, 32) lanes, IT = 2^l2e / WS elements a
 * lane (element e = lane + it * WS), WB = 2 rows a warp up to 128 elements, else 1; a block
 * of (WS, 128 / WS) threads, row first = (blockDim.y * blockIdx.x + threadIdx.y) * WB. The
 * kernel here is the same, step for step:
 *   forward    load (padding: -inf), max over the lane's elements left to right (a > b ?
 *              a : b), then a butterfly of __shfl_xor_sync at WS/2, ..., 1 (a < b ? b : a);
 *              each element becomes exp(x - max) and is added to the lane's sum from 0,
 *              the sums by the same butterfly; the store is x / sum (a quiet NaN where the
 *              sum is 0), or for log_softmax x - max - log(sum) with x the loaded value.
 *   backward   load grad and out (padding: 0), the lane's sum of grad, the butterfly,
 *              then grad - out * sum (log: grad - exp(out) * sum) at each element.
 * The arithmetic is written as PyTorch's source writes it (expf, plain + - * /), so NVRTC
 * makes of it what nvcc made (contractions included: the backward's grad - out * sum is
 * one fma in both); tests/gpu/softmax_probe.py compares candidate forms with PyTorch's
 * kernels bit for bit, and verification proves every fused kernel on its launch's data.
 *
 * The element loads are the prologue's (the producers: eager's input was the last of
 * them, stored and loaded back, so it arrives as tcf_in), the stores the epilogue's: the
 * result converted to out_scalar_t as PyTorch's store converts it, and the consumers. */
#include <stdio.h>

#include "codegen/internal.h"

int tcf_softmax_check(const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp)
{
    int flt_in = s->in_dt == TCF_DT_F32 || s->in_dt == TCF_DT_F16 || s->in_dt == TCF_DT_BF16;
    int flt_out = s->out_dt == TCF_DT_F32 || s->out_dt == TCF_DT_F16 || s->out_dt == TCF_DT_BF16;
    unsigned ws = tcf_softmax_lanes(s->l2e);
    if (!tcf_red_softmax(s->op) || !flt_in || !flt_out || s->acc_dt != TCF_DT_F32 || s->l2e > 11 ||
        s->bw != ws || s->bh != 128 / ws || s->vectorize || s->split_y || s->odims != 1 ||
        s->root)
        return -1;
    if (!sp || !sp->prologue || !sp->epilogue || sp->row_pass ||
        (tcf_red_softmax_bwd(s->op) != (sp->prologue2 != NULL)))
        return -1;
    return 0;
}

/* The load phase, as PyTorch's: each row of the warp (none past the rows), each lane's
 * elements e = lane + it * WS, padding past the row; body assigns element e's slot. */
static void tcf_sm_loads(tcf_codegen_sb_t *b, const char *decl, const char *body)
{
    tcf_codegen_put(b, "  %s\n#pragma unroll\n"
                       "  for (int i = 0; i < TCF_WB; i++) {\n"
                       "    const int n = i >= nb ? 0 : K;\n"
                       "#pragma unroll\n"
                       "    for (int it = 0; it < TCF_IT; it++) {\n"
                       "      const int e = lane + it * TCF_WS;\n%s"
                       "    }\n  }\n", decl, body);
}

void tcf_softmax_body(tcf_codegen_sb_t *b, const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp)
{
    int bwd = tcf_red_softmax_bwd(s->op);
    int log = s->op == TCF_RED_LOGSOFTMAX || s->op == TCF_RED_LOGSOFTMAX_BWD;
    tcf_codegen_put(b, "enum : int { TCF_L2E = %u, TCF_WS = TCF_BW, TCF_IT = (1 << TCF_L2E) / TCF_BW,\n"
                       "  TCF_WB = (1 << TCF_L2E) <= 128 ? 2 : 1 };   /* lanes a row; elements a lane; rows a warp */\n",
                    s->l2e);
    tcf_fullrow_io(b, s, sp);
    tcf_codegen_put(b, "__forceinline__ tcf_in tcf_pro(const tcf_rargs &a, const tcf_row &r, unsigned j) {\n"
                       "%s\n}\n", sp->prologue);
    if (bwd)
        tcf_codegen_put(b, "__forceinline__ tcf_in tcf_pro2(const tcf_rargs &a, const tcf_row &r, unsigned j) {\n"
                           "%s\n}\n", sp->prologue2);
    tcf_codegen_put(b, "__forceinline__ void tcf_epi(const tcf_rargs &a, const tcf_row &r, unsigned j, tcf_out v) {\n"
                       "%s\n}\n", sp->epilogue);
    tcf_codegen_put(b, "extern \"C\" __global__ void __launch_bounds__(128) %s(const tcf_rargs a) {\n"
                       "  const int first = (int)((blockDim.y * blockIdx.x + threadIdx.y) * TCF_WB);\n"
                       "  int nb = (int)a.num_outputs - first;\n"
                       "  if (nb > TCF_WB) nb = TCF_WB;\n"
                       "  const int lane = (int)threadIdx.x, K = (int)a.num_inputs;\n"
                       "  tcf_row r[TCF_WB];\n"
                       "#pragma unroll\n"
                       "  for (int i = 0; i < TCF_WB; i++) r[i].row = (unsigned)(first + i), r[i].in_off = r[i].out_off = 0;\n",
                    TCF_REDUCE_KERNEL);
    if (!bwd) {
        tcf_sm_loads(b, "float x[TCF_WB][TCF_IT];",
                     "      x[i][it] = e < n ? tcf_tof(tcf_pro(a, r[i], (unsigned)e)) : __int_as_float(0xff800000u);\n");
        tcf_codegen_put(b,
            "  float mx[TCF_WB], sum[TCF_WB];\n"
            "#pragma unroll\n"
            "  for (int i = 0; i < TCF_WB; i++) {\n"
            "    mx[i] = x[i][0];\n"
            "#pragma unroll\n"
            "    for (int it = 0; it < TCF_IT; it++) mx[i] = mx[i] > x[i][it] ? mx[i] : x[i][it];\n"
            "  }\n"
            "#pragma unroll\n"
            "  for (int off = TCF_WS / 2; off > 0; off /= 2)\n"
            "#pragma unroll\n"
            "    for (int i = 0; i < TCF_WB; i++) {\n"
            "      const float o = __shfl_xor_sync(0xffffffffu, mx[i], off, TCF_WS);\n"
            "      mx[i] = mx[i] < o ? o : mx[i];\n"
            "    }\n"
            "#pragma unroll\n"
            "  for (int i = 0; i < TCF_WB; i++) {\n"
            "    sum[i] = 0.0f;\n"
            "#pragma unroll\n"
            "    for (int it = 0; it < TCF_IT; it++) {\n");
        if (log)
            tcf_codegen_put(b, "      sum[i] += expf(x[i][it] - mx[i]);\n");
        else
            tcf_codegen_put(b, "      x[i][it] = expf(x[i][it] - mx[i]);\n"
                               "      sum[i] += x[i][it];\n");
        tcf_codegen_put(b, "    }\n  }\n");
    } else {
        tcf_sm_loads(b, "float gr[TCF_WB][TCF_IT], ou[TCF_WB][TCF_IT];",
                     "      gr[i][it] = e < n ? tcf_tof(tcf_pro(a, r[i], (unsigned)e)) : 0.0f;\n"
                     "      ou[i][it] = e < n ? tcf_tof(tcf_pro2(a, r[i], (unsigned)e)) : 0.0f;\n");
        tcf_codegen_put(b,
            "  float sum[TCF_WB];\n"
            "#pragma unroll\n"
            "  for (int i = 0; i < TCF_WB; i++) {\n"
            "    sum[i] = 0.0f;\n"
            "#pragma unroll\n"
            "    for (int it = 0; it < TCF_IT; it++) sum[i] += gr[i][it];\n"
            "  }\n");
    }
    tcf_codegen_put(b,
        "#pragma unroll\n"
        "  for (int off = TCF_WS / 2; off > 0; off /= 2)\n"
        "#pragma unroll\n"
        "    for (int i = 0; i < TCF_WB; i++) sum[i] += __shfl_xor_sync(0xffffffffu, sum[i], off, TCF_WS);\n"
        "#pragma unroll\n"
        "  for (int i = 0; i < TCF_WB; i++) {\n"
        "    if (i >= nb) break;\n");
    if (!bwd && log)
        tcf_codegen_put(b, "    sum[i] = logf(sum[i]);\n");
    tcf_codegen_put(b,
        "#pragma unroll\n"
        "    for (int it = 0; it < TCF_IT; it++) {\n"
        "      const int e = lane + it * TCF_WS;\n"
        "      if (e >= K) %s;\n", bwd ? "continue" : "break");
    if (!bwd && log)
        tcf_codegen_put(b, "      const float v = x[i][it] - mx[i] - sum[i];\n");
    else if (!bwd)
        tcf_codegen_put(b, "      const float v = sum[i] == 0.0f ? __int_as_float(0x7fc00000u) : x[i][it] / sum[i];\n");
    else if (log)
        tcf_codegen_put(b, "      const float v = gr[i][it] - expf(ou[i][it]) * sum[i];\n");
    else
        tcf_codegen_put(b, "      const float v = gr[i][it] - ou[i][it] * sum[i];\n");
    tcf_codegen_put(b, "      tcf_epi(a, r[i], (unsigned)e, tcf_cvt_out(v));\n    }\n  }\n}\n");
}
