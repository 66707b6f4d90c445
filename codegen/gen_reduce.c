/* codegen/gen_reduce.c: CUDA C for one row reduction (reduce.h), in PyTorch 2.11's order.
 *
 * The kernel is reduce_kernel's run() for the case decoding accepts (Reduce.cuh, read in
 * docs/PYTORCH-REDUCE.md §4), written out for one shape: the same block, the same
 * thread-to-element mapping, the same accumulators, the same trees, the same barriers.
 *   thread phase   input_vectorized_thread_reduce_impl (ivs lane accumulators; the row's
 *                  misaligned head before the loop and its tail after it, both into lane
 *                  0 of the threads tx < ivs of warp-row 0) or thread_reduce_impl (vt0
 *                  accumulators, element k of the thread into k % vt0); then the
 *                  accumulators left to right.
 *   block_x_reduce shared memory while more than 32 lanes remain, then shuffles down with
 *                  offsets 16, 8, 4, 2, 1 (decreasing: CUDA builds of 2.11)
 *   block_y_reduce across warp-rows through shared memory, when the warps share a row
 *   store          thread (0, 0) of the row: project (mean's factor, the root), cast.
 * Every add is __fadd_rn and the norm's square-add __fmaf_rn, so no contraction can form
 * with spliced code; 16-bit max/min keep their bits (only compared through float), and
 * their shuffles move what PyTorch's WARP_SHFL_DOWN moves: a half's bits, a bfloat16
 * through float (a NaN comes back as 0x7FFF, §4.2). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codegen/internal.h"
#include "codegen/reduce.h"

/* Bump when the generated text's meaning changes: it is part of every cache key. */
#define TCF_REDUCE_VERSION 1

_Static_assert(sizeof(tcf_reduce_args_t) == 224, "the source's tcf_rargs assumes 224 bytes");
_Static_assert(TCF_OP_MAX_DIMS == 8 && TCF_REDUCE_MAX_BUFS == 8 && TCF_REDUCE_MAX_SCALARS == 8,
               "the source's tcf_rargs spells out 8 dims, 8 buffers and 8 scalars");

const char *tcf_reduce_op_name(tcf_red_op_t op)
{
#define TCF_RED_NAME_(id) #id,
    static const char *const names[] = { TCF_RED_OPS(TCF_RED_NAME_) };
#undef TCF_RED_NAME_
    return (unsigned)op < TCF_RED_NOPS ? names[op] : "?";
}

static int tcf_rpow2(unsigned v, unsigned max) { return v && v <= max && !(v & (v - 1)); }
static int tcf_rflt(tcf_dtype_t d) { return d == TCF_DT_F32 || d == TCF_DT_F16 || d == TCF_DT_BF16; }
static int tcf_rminmax(tcf_red_op_t op) { return op == TCF_RED_AMAX || op == TCF_RED_AMIN; }

/* 0 when s is a shape we generate: an op, float dtypes with arg_t as PyTorch has it, a
 * power-of-two block of at most 512 threads, vector widths of at most 16 bytes, and a
 * vectorized head and tail that lanes tx < ivs can take. */
static int tcf_reduce_check(const tcf_reduce_shape_t *s)
{
    if (!s || s->op <= TCF_RED_NONE || s->op >= TCF_RED_NOPS || !tcf_rflt(s->in_dt) ||
        !tcf_rflt(s->out_dt) || !tcf_rflt(s->acc_dt))
        return -1;
    if (tcf_rminmax(s->op) ? s->acc_dt != s->in_dt || s->out_dt != s->in_dt : s->acc_dt != TCF_DT_F32)
        return -1;
    if (!tcf_rpow2(s->bw, 512) || !tcf_rpow2(s->bh, 512) || (unsigned)s->bw * s->bh > 512 ||
        !tcf_rpow2(s->vt0, 8) || !tcf_rpow2(s->ivs, 16) ||
        s->ivs * tcf_dtype_size(s->in_dt) > 16 || s->vectorize > 1 || s->split_y > 1 ||
        s->odims > TCF_OP_MAX_DIMS || s->root > 1 || (s->root && s->op != TCF_RED_NORM2))
        return -1;
    if (s->vectorize && s->bw < s->ivs)
        return -1;
    return 0;
}

void tcf_reduce_shape_of(const tcf_reduce_t *r, tcf_reduce_shape_t *s)
{
    memset(s, 0, sizeof *s);
    s->op = r->op, s->root = r->root;
    s->in_dt = r->in_dt, s->out_dt = r->out_dt, s->acc_dt = r->acc_dt;
    s->bw = (uint16_t)r->cfg.block_width, s->bh = (uint16_t)r->cfg.block_height;
    s->vt0 = r->vt0, s->ivs = r->ivs;
    s->vectorize = r->cfg.vectorize_input, s->split_y = r->split_y;
    s->odims = r->odims;
    s->l2e = tcf_red_softmax(r->op) ? (uint8_t)tcf_softmax_l2e(r->cfg.num_inputs) : 0;
    s->affine = tcf_red_norm(r->op) ? (uint8_t)((r->gamma != 0) | (r->beta != 0) << 1) : 0;
}

void tcf_reduce_args_of(const tcf_reduce_t *r, tcf_reduce_args_t *a)
{
    memset(a, 0, sizeof *a);
    a->src = r->src, a->dst = r->dst;
    a->num_inputs = r->cfg.num_inputs, a->num_outputs = r->cfg.num_outputs;
    a->factor = r->factor;
    if (tcf_red_norm(r->op))
        a->buf[0] = r->mean, a->buf[1] = r->rstd;
    for (unsigned d = 0; d < r->odims && d < TCF_OP_MAX_DIMS; d++)
        a->osize[d] = r->osize[d], a->ostride[d][0] = r->ostride[d][0],
        a->ostride[d][1] = r->ostride[d][1];
}

void tcf_reduce_launch_dims(const tcf_reduce_shape_t *s, uint32_t num_outputs, uint32_t grid[3],
                            uint32_t block[3])
{
    if (tcf_red_softmax(s->op)) {   /* dispatch_softmax_forward/backward's */
        uint32_t per_block = tcf_softmax_rows_per_block(s->l2e);
        grid[0] = num_outputs / per_block + (num_outputs % per_block != 0), grid[1] = grid[2] = 1;
        block[0] = s->bw, block[1] = s->bh, block[2] = 1;
        return;
    }
    if (tcf_red_norm(s->op)) {   /* vectorized_layer_norm_kernel's: a block a row */
        grid[0] = num_outputs, grid[1] = grid[2] = 1;
        block[0] = 32, block[1] = 4, block[2] = 1;
        return;
    }
    uint32_t rows = s->split_y ? 1 : s->bh;   /* step_output */
    grid[0] = num_outputs / rows + (num_outputs % rows != 0), grid[1] = grid[2] = 1;
    block[0] = s->bw, block[1] = s->bh, block[2] = 1;
}

/* An input element x of dtype d as float (exact). */
static const char *tcf_reduce_tof(tcf_dtype_t d)
{
    return d == TCF_DT_F32 ? "x" : d == TCF_DT_F16 ? "tcf_h2f(x)" : "tcf_b2f(x)";
}

void tcf_fullrow_io(tcf_codegen_sb_t *b, const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp)
{
    char cv[256];
    if (tcf_codegen_cvt(cv, sizeof cv, TCF_DT_F32, s->out_dt, "v") < 0) {
        b->bad = 1;
        return;
    }
    tcf_codegen_put(b, "__forceinline__ float tcf_tof(tcf_in x) { return %s; }\n"
                       "__forceinline__ tcf_out tcf_cvt_out(float v) { return %s; }\n",
                    tcf_reduce_tof(s->in_dt), cv);
    if (sp->helpers)
        tcf_codegen_put(b, "%s\n", sp->helpers);
}

/* The per-op functions: the input as float, ops.reduce, ops.combine, the shuffle, project
 * and the cast to out_scalar_t. */
static void tcf_reduce_ops(tcf_codegen_sb_t *b, const tcf_reduce_shape_t *s)
{
    char e[256];
    tcf_codegen_put(b, "__forceinline__ float tcf_tof(tcf_in x) { return %s; }\n", tcf_reduce_tof(s->in_dt));
    if (tcf_rminmax(s->op)) {
        /* MaxNanFunctor / MinNanFunctor: the left operand wins on NaN and on ties lose,
         * compared as float (exact for 16-bit), kept as stored */
        const char *fa = s->acc_dt == TCF_DT_F32 ? "a" : s->acc_dt == TCF_DT_F16 ? "tcf_h2f(a)" : "tcf_b2f(a)";
        const char *fb = s->acc_dt == TCF_DT_F32 ? "b" : s->acc_dt == TCF_DT_F16 ? "tcf_h2f(b)" : "tcf_b2f(b)";
        tcf_codegen_put(b, "__forceinline__ tcf_acc tcf_comb(tcf_acc a, tcf_acc b) {\n"
                    "  const float fa = %s, fb = %s;\n"
                    "  return (fa != fa || fa %c fb) ? a : b;\n}\n"
                    "__forceinline__ tcf_acc tcf_red(tcf_acc acc, tcf_in x) { return tcf_comb(acc, x); }\n",
                 fa, fb, s->op == TCF_RED_AMAX ? '>' : '<');
    } else {
        tcf_codegen_put(b, "__forceinline__ tcf_acc tcf_comb(tcf_acc a, tcf_acc b) { return __fadd_rn(a, b); }\n");
        if (s->op == TCF_RED_NORM2)   /* acc + x*x, contracted by nvcc (measured, §4.5) */
            tcf_codegen_put(b, "__forceinline__ tcf_acc tcf_red(tcf_acc acc, tcf_in x) { "
                        "const float f = tcf_tof(x); return __fmaf_rn(f, f, acc); }\n");
        else
            tcf_codegen_put(b, "__forceinline__ tcf_acc tcf_red(tcf_acc acc, tcf_in x) { "
                        "return __fadd_rn(acc, tcf_tof(x)); }\n");
    }
    if (s->acc_dt == TCF_DT_F32)
        tcf_codegen_put(b, "__forceinline__ tcf_acc tcf_shfl(tcf_acc v, int off) { "
                    "return __shfl_down_sync(0xffffffffu, v, off, 32); }\n");
    else if (s->acc_dt == TCF_DT_F16)   /* c10's WARP_SHFL_DOWN<c10::Half>: the bits */
        tcf_codegen_put(b, "__forceinline__ tcf_acc tcf_shfl(tcf_acc v, int off) { "
                    "return (tcf_acc)__shfl_down_sync(0xffffffffu, (unsigned)v, off, 32); }\n");
    else                                /* no BFloat16 overload: through float and back */
        tcf_codegen_put(b, "__forceinline__ tcf_acc tcf_shfl(tcf_acc v, int off) { "
                    "return tcf_f2b(__shfl_down_sync(0xffffffffu, tcf_b2f(v), off, 32)); }\n");
    const char *proj = s->op == TCF_RED_MEAN ? "__fmul_rn(v, __uint_as_float(a.factor))"
                     : s->op == TCF_RED_NORM2 && s->root ? "__fsqrt_rn(v)" : "v";
    if (tcf_codegen_cvt(e, sizeof e, tcf_rminmax(s->op) ? s->acc_dt : TCF_DT_F32, s->out_dt, proj) < 0)
        b->bad = 1;
    tcf_codegen_put(b, "__forceinline__ tcf_out tcf_project(const tcf_rargs &a, tcf_acc v) { return %s; }\n", e);
}

/* The expression for element j of the row: loaded, or the prologue's. */
static const char *tcf_reduce_elem(char *e, size_t cap, const tcf_reduce_splice_t *sp, const char *j)
{
    if (sp && sp->prologue)
        snprintf(e, cap, "tcf_pro(a, r, %s)", j);
    else
        snprintf(e, cap, "row[%s]", j);
    return e;
}

static void tcf_reduce_thread(tcf_codegen_sb_t *b, const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp)
{
    char e[128];
    const char *tail_ok = s->split_y ? "ty == 0" : "true";   /* should_reduce_tail() */
    int pro = sp && sp->prologue;
    if (!pro || s->vectorize)   /* the row's address: its data, or its alignment */
        tcf_codegen_put(b, "    const unsigned long long base = a.src + r.in_off;\n");
    if (!pro)
        tcf_codegen_put(b, "    const tcf_in *const row = (const tcf_in *)base;\n");
    if (!s->vectorize) {
        /* thread_reduce_impl: element k of this thread into accumulator k % vt0 */
        tcf_codegen_put(b, "    tcf_acc acc[TCF_VT0];\n#pragma unroll\n"
                    "    for (unsigned k = 0; k < TCF_VT0; k++) acc[k] = tcf_ident();\n"
                    "    const unsigned n = a.num_inputs;\n    unsigned idx = g;\n"
                    "    while (idx + (TCF_VT0 - 1) * TCF_G < n) {\n#pragma unroll\n"
                    "      for (unsigned k = 0; k < TCF_VT0; k++) acc[k] = tcf_red(acc[k], ");
        tcf_codegen_put(b, "%s);\n      idx += TCF_G * TCF_VT0;\n    }\n#pragma unroll\n"
                    "    for (unsigned k = 0; k < TCF_VT0; k++) {\n      if (idx >= n) break;\n"
                    "      acc[k] = tcf_red(acc[k], ", tcf_reduce_elem(e, sizeof e, sp, "idx + k * TCF_G"));
        tcf_codegen_put(b, "%s);\n      idx += TCF_G;\n    }\n    v = acc[0];\n#pragma unroll\n"
                    "    for (unsigned k = 1; k < TCF_VT0; k++) v = tcf_comb(v, acc[k]);\n",
                 tcf_reduce_elem(e, sizeof e, sp, "idx"));
        return;
    }
    /* input_vectorized_thread_reduce_impl: lanes of aligned vectors; the head (elements
     * before the first vector boundary) and the tail go to accumulator 0 of the threads
     * tx < V of warp-row 0, as their index */
    tcf_codegen_put(b, "    tcf_acc acc[TCF_V];\n#pragma unroll\n"
                "    for (unsigned k = 0; k < TCF_V; k++) acc[k] = tcf_ident();\n"
                "    unsigned end = a.num_inputs, first = 0;\n"
                "    const unsigned shift = (unsigned)(base %% (TCF_V * sizeof(tcf_in))) / sizeof(tcf_in);\n"
                "    if (shift > 0) {\n"
                "      if (tx >= shift && tx < TCF_V && %s) acc[0] = tcf_red(acc[0], ", tail_ok);
    tcf_codegen_put(b, "%s);\n      end -= TCF_V - shift;\n      first = TCF_V - shift;\n    }\n"
                "    for (unsigned i = g; i * TCF_V + TCF_V - 1 < end; i += TCF_G) {\n",
             tcf_reduce_elem(e, sizeof e, sp, "tx - shift"));
    if (pro)
        tcf_codegen_put(b, "#pragma unroll\n      for (unsigned k = 0; k < TCF_V; k++) "
                    "acc[k] = tcf_red(acc[k], tcf_pro(a, r, first + i * TCF_V + k));\n");
    else
        tcf_codegen_put(b, "      const tcf_pack<tcf_in, TCF_V, TCF_V * sizeof(tcf_in)> p =\n"
                    "          *(const tcf_pack<tcf_in, TCF_V, TCF_V * sizeof(tcf_in)> *)(row + first + i * TCF_V);\n"
                    "#pragma unroll\n      for (unsigned k = 0; k < TCF_V; k++) acc[k] = tcf_red(acc[k], p.v[k]);\n");
    tcf_codegen_put(b, "    }\n    const unsigned t0 = end - end %% TCF_V;\n"
                "    if (%s && t0 + tx < end) acc[0] = tcf_red(acc[0], ", tail_ok);
    tcf_codegen_put(b, "%s);\n    v = acc[0];\n#pragma unroll\n"
                "    for (unsigned k = 1; k < TCF_V; k++) v = tcf_comb(v, acc[k]);\n",
             tcf_reduce_elem(e, sizeof e, sp, "first + t0 + tx"));
}

static void tcf_reduce_splices(tcf_codegen_sb_t *b, const tcf_reduce_splice_t *sp)
{
    if (sp && sp->helpers)
        tcf_codegen_put(b, "%s\n", sp->helpers);
    if (sp && sp->prologue)
        tcf_codegen_put(b, "__forceinline__ tcf_in tcf_pro(const tcf_rargs &a, const tcf_row &r, unsigned j) {\n"
                    "%s\n}\n", sp->prologue);
    tcf_codegen_put(b, "__forceinline__ void tcf_epi(const tcf_rargs &a, const tcf_row &r, tcf_out v) {\n"
                "%s\n}\n", sp && sp->epilogue ? sp->epilogue : "  *(tcf_out *)(a.dst + r.out_off) = v;");
    if (sp && sp->row_pass)
        tcf_codegen_put(b, "__forceinline__ void tcf_rowpass(const tcf_rargs &a, const tcf_row &r, unsigned g, "
                    "tcf_out v) {\n%s\n}\n", sp->row_pass);
}

static void tcf_reduce_kernel(tcf_codegen_sb_t *b, const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp)
{
    int smem = s->bw > 32 || s->split_y;
    const char *store = s->split_y ? "tx == 0 && ty == 0" : "tx == 0";   /* should_store() */
    tcf_codegen_put(b, "extern \"C\" __global__ void __launch_bounds__(%u) %s(const tcf_rargs a) {\n",
             (unsigned)s->bw * s->bh, TCF_REDUCE_KERNEL);
    if (smem)
        tcf_codegen_put(b, "  __shared__ tcf_acc sm[TCF_BW * TCF_BH];\n");
    tcf_codegen_put(b, "  const unsigned tx = threadIdx.x, ty = threadIdx.y;\n"
                "  const unsigned g = %s;   /* input_idx: this thread among the row's */\n"
                "  tcf_row r;\n  r.row = blockIdx.x * TCF_ROWS%s;   /* output_idx */\n"
                "  r.in_off = 0, r.out_off = 0;\n  tcf_acc v = tcf_ident();\n",
             s->split_y ? "tx + ty * TCF_BW" : "tx", s->split_y ? "" : " + ty");
    /* output_calc.get(row): digits of the row index, innermost dim first (every thread of
     * a row knows its offsets: spliced code may use them) */
    if (s->odims == 1)
        tcf_codegen_put(b, "  if (r.row < a.num_outputs) {\n"
                    "    r.out_off = (unsigned long long)r.row * a.ostride[0][0];\n"
                    "    r.in_off = (unsigned long long)r.row * a.ostride[0][1];\n  }\n");
    else if (s->odims > 1)
        tcf_codegen_put(b, "  if (r.row < a.num_outputs) {\n    unsigned lin = r.row;\n#pragma unroll\n"
                    "    for (int d = 0; d < %u; d++) {\n"
                    "      const unsigned q = lin / a.osize[d], digit = lin - q * a.osize[d];\n"
                    "      r.out_off += (unsigned long long)digit * a.ostride[d][0];\n"
                    "      r.in_off += (unsigned long long)digit * a.ostride[d][1];\n"
                    "      lin = q;\n    }\n  }\n", s->odims);
    tcf_codegen_put(b, "  if (r.row < a.num_outputs && g < a.num_inputs) {\n");
    tcf_reduce_thread(b, s, sp);
    tcf_codegen_put(b, "  }\n");
    /* block_x_reduce: shared memory down to 32 lanes, a barrier, then the shuffles */
    if (s->bw > 32)
        tcf_codegen_put(b, "  sm[tx + ty * TCF_BW] = v;\n#pragma unroll\n"
                    "  for (unsigned off = TCF_BW / 2; off >= 32; off >>= 1) {\n    __syncthreads();\n"
                    "    if (tx < off) {\n      v = tcf_comb(v, sm[tx + ty * TCF_BW + off]);\n"
                    "      sm[tx + ty * TCF_BW] = v;\n    }\n  }\n");
    tcf_codegen_put(b, "  __syncthreads();\n#pragma unroll\n"
                "  for (int off = %u; off > 0; off >>= 1) v = tcf_comb(v, tcf_shfl(v, off));\n",
             (s->bw > 32 ? 32u : s->bw) / 2);
    /* block_y_reduce: warp-rows sharing a row, through shared memory */
    if (s->split_y)
        tcf_codegen_put(b, "  sm[tx + ty * TCF_BW] = v;\n#pragma unroll\n"
                    "  for (unsigned off = TCF_BH / 2; off > 0; off >>= 1) {\n    __syncthreads();\n"
                    "    if (ty < off) {\n      v = tcf_comb(v, sm[tx + (ty + off) * TCF_BW]);\n"
                    "      sm[tx + ty * TCF_BW] = v;\n    }\n  }\n");
    if (sp && sp->row_pass) {
        /* the result to every thread of its row, for the second pass */
        tcf_codegen_put(b, "  __shared__ tcf_out rv[TCF_ROWS];\n"
                    "  if (r.row < a.num_outputs && %s) {\n"
                    "    const tcf_out res = tcf_project(a, v);\n    tcf_epi(a, r, res);\n"
                    "    rv[%s] = res;\n  }\n  __syncthreads();\n"
                    "  if (r.row < a.num_outputs) tcf_rowpass(a, r, g, rv[%s]);\n}\n",
                 store, s->split_y ? "0" : "ty", s->split_y ? "0" : "ty");
    } else {
        tcf_codegen_put(b, "  if (r.row < a.num_outputs && %s) tcf_epi(a, r, tcf_project(a, v));\n}\n", store);
    }
}

int tcf_reduce_source(const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp, char *buf,
                      size_t cap)
{
    tcf_codegen_sb_t b = { buf, cap, 0, 0 };
    int softmax = s && tcf_red_softmax(s->op), norm = s && tcf_red_norm(s->op);
    if (!buf || !cap || (softmax ? tcf_softmax_check(s, sp)
                         : norm ? tcf_layernorm_check(s, sp) : tcf_reduce_check(s)))
        return -1;
    buf[0] = '\0';
    unsigned asz = tcf_dtype_size(s->acc_dt), ident = 0;
    if (tcf_rminmax(s->op))   /* -inf for max, +inf for min, in arg_t */
        ident = asz == 4 ? 0x7f800000u : s->acc_dt == TCF_DT_F16 ? 0x7c00u : 0x7f80u,
        ident |= s->op == TCF_RED_AMAX ? (asz == 4 ? 0x80000000u : 0x8000u) : 0;
    tcf_codegen_put(&b, "/* tcfuse reduce %d: %s%s %s->%s acc %s, block %ux%u, %s %u, %s, %u row dims%s */\n",
             TCF_REDUCE_VERSION, tcf_reduce_op_name(s->op), s->root ? "(sqrt)" : "",
             tcf_codegen_ctype(s->in_dt), tcf_codegen_ctype(s->out_dt), tcf_codegen_ctype(s->acc_dt),
             s->bw, s->bh, s->vectorize ? "vec" : "vt0", s->vectorize ? s->ivs : s->vt0,
             s->split_y ? "warps share a row" : "a row per warp-row", s->odims,
             sp && (sp->prologue || sp->epilogue || sp->row_pass || sp->helpers) ? ", spliced" : "");
    tcf_codegen_put(&b, "%s", tcf_codegen_prelude());
    tcf_codegen_put(&b, "struct tcf_rargs { unsigned long long src, dst; unsigned int num_inputs, num_outputs, "
                 "factor; unsigned int osize[8]; unsigned int ostride[8][2]; unsigned int pad_; "
                 "unsigned long long buf[8]; unsigned int s[8];%s };\n"
                 "static_assert(sizeof(tcf_rargs) %s 224, \"tcf_reduce_args_t layout\");\n"
                 "struct tcf_row { unsigned row; unsigned long long in_off, out_off; };\n"
                 "typedef %s tcf_in;\ntypedef %s tcf_acc;\ntypedef %s tcf_out;\n"
                 "enum : unsigned { TCF_BW = %u, TCF_BH = %u,   /* the block */\n"
                 "  TCF_G = %u, TCF_ROWS = %u,                  /* threads a row, rows a block */\n"
                 "  TCF_VT0 = %u, TCF_V = %u };                 /* accumulators; vector lanes */\n",
             sp && sp->args_ext ? sp->args_ext : "", sp && sp->args_ext ? ">" : "==",
             tcf_codegen_ctype(s->in_dt), tcf_codegen_ctype(s->acc_dt), tcf_codegen_ctype(s->out_dt),
             s->bw, s->bh, s->split_y ? (unsigned)s->bw * s->bh : s->bw, s->split_y ? 1u : s->bh,
             s->vt0, s->ivs);
    if (softmax || norm) {
        (softmax ? tcf_softmax_body : tcf_layernorm_body)(&b, s, sp);
        return b.bad || b.len > 0x7fffffff ? -1 : (int)b.len;
    }
    if (asz == 4)
        tcf_codegen_put(&b, "__forceinline__ tcf_acc tcf_ident() { return __uint_as_float(0x%08xu); }\n", ident);
    else
        tcf_codegen_put(&b, "__forceinline__ tcf_acc tcf_ident() { return (tcf_acc)0x%04xu; }\n", ident);
    tcf_reduce_ops(&b, s);
    tcf_reduce_splices(&b, sp);
    tcf_reduce_kernel(&b, s, sp);
    if (b.bad || b.len > 0x7fffffff)
        return -1;
    return (int)b.len;
}
