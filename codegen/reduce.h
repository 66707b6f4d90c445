/* codegen/reduce.h: row reductions. What decoding a PyTorch 2.11 reduce_kernel launch
 * produces (tcf_reduce_t, recognize/decode_reduce.h), and CUDA C that reproduces its
 * combine order bit for bit (gen_reduce.c).
 *
 * The facts (docs/PYTORCH-REDUCE.md): reduce_kernel adds in an order fixed by its launch
 * configuration (ReduceConfig, §3): each thread folds a strided slice of the row into vt0
 * accumulators (or, when the input is vectorized, one per vector lane, with a misaligned
 * head and a tail folded into lane 0), the threads of a row combine by a halving tree
 * across x (shared memory above 32 lanes, then warp shuffles with decreasing offsets) and
 * then across y, and the result is projected (mean's factor, the norm's root) and cast
 * to the output type (§4). The generated kernel runs with the same block shape and the
 * same thread-to-element mapping, so it performs the same operations in the same order.
 * What it does not reproduce is refused by the decoder (several blocks per output,
 * reductions over a non-innermost dim, values with indices, Welford).
 *
 * The source depends on structure only (tcf_reduce_shape_t): the op, the dtypes, the
 * block shape and the vector widths, never an address, a row count or a length. What
 * varies per launch is the kernel's one argument (tcf_reduce_args_t). Pure, deterministic,
 * no allocation; thread-safe. */
#ifndef TCF_REDUCE_H
#define TCF_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/op.h"

/* The reductions: ops.reduce(acc, x) and ops.combine(a, b) of PyTorch's ops_t, then project.
 *   SUM    sum_functor       acc + x, a + b (float; no FMA can form), project: none
 *   MEAN   MeanOps           as SUM, project: acc * factor (the factor read from the launch)
 *   AMAX   MaxNanFunctor     (isnan(a) || a > b) ? a : b, in the input's type (arg_t is T)
 *   AMIN   MinNanFunctor     (isnan(a) || a < b) ? a : b
 *   NORM2  NormTwoOps        reduce: fmaf(x, x, acc) (nvcc contracted acc + x*x), combine
 *                            a + b, project: sqrt when `root` (vector_norm), else none */
#define TCF_RED_OPS(X) X(NONE) X(SUM) X(MEAN) X(AMAX) X(AMIN) X(NORM2) \
    X(SOFTMAX) X(LOGSOFTMAX) X(SOFTMAX_BWD) X(LOGSOFTMAX_BWD) X(LAYERNORM) X(RMSNORM)
typedef enum {
#define TCF_RED_ENUM_(id) TCF_RED_##id,
    TCF_RED_OPS(TCF_RED_ENUM_)
#undef TCF_RED_ENUM_
    TCF_RED_NOPS
} tcf_red_op_t;

/* The row softmaxes (gen_softmax.c): PyTorch 2.11's softmax_warp_forward and
 * softmax_warp_backward (PersistentSoftmax.cuh), rows of at most 2048 elements, one warp
 * (or a power-of-two part of one) per row, in registers. Forward: the row's max by a
 * butterfly of shuffles, exp(x - max) and their sum the same way, then x / sum (log: x -
 * max - log(sum)). Backward: sum(grad) by a butterfly, then grad - out * sum (log: grad -
 * exp(out) * sum) contracted to one fma as nvcc did; for the plain softmax PyTorch passes
 * grad * out as grad (a separate launch before). Unlike the reductions above, the result
 * is a full row, not one value per row: in a group the op is elementwise over [K, M]
 * (fuser.h). Decoded as a tcf_reduce_t with src the (first) input, src2 the backward's
 * output operand, dst the result; cfg.num_inputs the row length, num_outputs the rows,
 * block (warp size, 128 / warp size), all of it fixed by the row length (below). */
static inline int tcf_red_softmax(tcf_red_op_t op)
{
    return op >= TCF_RED_SOFTMAX && op <= TCF_RED_LOGSOFTMAX_BWD;
}
/* The launch geometry dispatch_softmax_forward/backward derive from the row length K:
 * log2_elements (the smallest power of two >= K), lanes a row (WS, up to a warp) and rows
 * a block (128 / WS warps' worth of lanes, two rows a warp up to 128 elements). */
static inline unsigned tcf_softmax_l2e(uint32_t K)
{
    unsigned l2e = 0;
    while (l2e < 31 && (1u << l2e) < K)
        l2e++;
    return l2e;
}
static inline unsigned tcf_softmax_lanes(unsigned l2e) { return l2e < 5 ? 1u << l2e : 32u; }
static inline unsigned tcf_softmax_rows_per_block(unsigned l2e)
{
    return 128 / tcf_softmax_lanes(l2e) * (l2e <= 7 ? 2u : 1u);
}
static inline int tcf_red_softmax_bwd(tcf_red_op_t op)
{
    return op == TCF_RED_SOFTMAX_BWD || op == TCF_RED_LOGSOFTMAX_BWD;
}

/* PyTorch 2.11's LayerNorm and RMSNorm forward (gen_layernorm.c; the facts:
 * docs/PYTORCH-LAYERNORM.md): vectorized_layer_norm_kernel<T, float, rms>, one block of
 * (32, 4) threads a row, rows of N elements with N % 4 == 0. Welford statistics (RMS: the
 * sum of squares) in the kernel's order, rstd = rsqrtf(var + eps), then every element
 * gamma * (rstd * (x - mean)) + beta (as many of gamma and beta as the launch has), and
 * the row's mean and rstd stored as float. Like a softmax its result is a full row:
 * elementwise over [K, M] in a group, with inputs x, gamma and beta (each present one;
 * gamma and beta broadcast over the rows), src the input, dst the output; and two outputs
 * of one value a row besides (mean, rstd), which no group op may touch. cfg.num_inputs is
 * N, num_outputs the rows, factor eps's bits. */
static inline int tcf_red_norm(tcf_red_op_t op)
{
    return op == TCF_RED_LAYERNORM || op == TCF_RED_RMSNORM;
}

/* A result that is a full row (softmax, norms), not one value a row. */
static inline int tcf_red_fullrow(tcf_red_op_t op)
{
    return tcf_red_softmax(op) || tcf_red_norm(op);
}

/* ReduceConfig (Reduce.cuh), the fields that fix the order; docs/PYTORCH-REDUCE.md §2.2. */
typedef struct {
    uint32_t num_inputs, num_outputs;   /* K: elements reduced into one output; M: outputs */
    uint32_t step_input, step_output;   /* threads that share a row (G); rows per block */
    uint32_t ctas_per_output;           /* grid.y: > 1 is a global reduce (refused) */
    uint32_t input_mult[3], output_mult[2];
    uint32_t block_width, block_height; /* blockDim.x, blockDim.y */
    uint32_t element_size;              /* sizeof(arg_t) */
    uint8_t  vectorize_input, output_vec_size;
    uint32_t grid[3], smem;             /* the launch PyTorch makes of it */
} tcf_reduce_cfg_t;

/* One decoded reduce_kernel launch: a reduction of the innermost, contiguous dim. Rows are
 * located as PyTorch's output OffsetCalculator does: output r is decomposed over odims
 * sizes (innermost first), and each digit times its byte stride gives the offset of the
 * output element ([0]) and of the row's first input element ([1]). */
typedef struct {
    tcf_red_op_t op;
    uint8_t      root;            /* NORM2: the square root is taken (NormTwoOps<..., true>) */
    tcf_dtype_t  in_dt, out_dt;   /* memory: scalar_t, out_scalar_t */
    tcf_dtype_t  acc_dt;          /* arg_t: F32, or F16/BF16 for max/min of half/bf16 */
    uint32_t     ident;           /* arg_t's bits: 0.0, -inf (AMAX), +inf (AMIN) */
    uint32_t     factor;          /* MEAN: float bits of ops.factor (fl(M)/fl(M*K)) */
    uint8_t      vt0, ivs;        /* ReduceOp's template arguments: accumulators of the
                                   * strided path; elements per vector load */
    uint8_t      split_y;         /* input_mult[1] != 0: the warps of a block share a row */
    uint8_t      shift;           /* vectorized: row 0's start past a vector boundary, in
                                   * elements ((src % (ivs * size)) / size); others may differ */
    tcf_reduce_cfg_t cfg;
    uint64_t     src, dst;        /* input base (row 0), output base */
    uint64_t     src2;            /* softmax backward: the forward's output (else 0) */
    uint64_t     gamma, beta;     /* norms: the affine vectors of N elements, each may be 0 */
    uint64_t     mean, rstd;      /* norms: the per-row float outputs (RMS: mean is 0) */
    uint8_t      odims;
    uint32_t     osize[TCF_OP_MAX_DIMS];
    uint32_t     ostride[TCF_OP_MAX_DIMS][2];   /* bytes: output, input */
} tcf_reduce_t;

/* What the generated source depends on (and nothing else): the disk cache's key. */
typedef struct {
    tcf_red_op_t op;
    uint8_t      root;
    tcf_dtype_t  in_dt, out_dt, acc_dt;
    uint16_t     bw, bh;          /* block; powers of two, bw * bh <= 512 */
    uint8_t      vt0, ivs;        /* 1..8 each, powers of two */
    uint8_t      vectorize, split_y;
    uint8_t      odims;           /* 0..TCF_OP_MAX_DIMS */
    uint8_t      l2e;             /* softmax: 0..11 (bw = min(2^l2e, 32), bh = 128 / bw) */
    uint8_t      affine;          /* norms: 1 gamma, 2 beta (the two present: 3) */
} tcf_reduce_shape_t;

#define TCF_REDUCE_MAX_BUFS 8
#define TCF_REDUCE_MAX_SCALARS 8

/* The generated kernel's one parameter, passed by value; host and source agree on it
 * (static asserts on both sides). src and dst come first, at offsets 0 and 8, so a tool
 * can rebind them in a copy of the bytes. buf and s are for spliced code only. */
typedef struct {
    uint64_t src;                 /* the reduced tensor: read from, unless a prologue is
                                   * spliced; its alignment always fixes the vector head */
    uint64_t dst;                 /* where the default epilogue stores */
    uint32_t num_inputs, num_outputs;
    uint32_t factor;              /* MEAN: float bits; norms: eps's bits */
    uint32_t osize[TCF_OP_MAX_DIMS];
    uint32_t ostride[TCF_OP_MAX_DIMS][2];
    uint32_t pad_;
    uint64_t buf[TCF_REDUCE_MAX_BUFS];   /* norms: [0] mean, [1] rstd */
    uint32_t s[TCF_REDUCE_MAX_SCALARS];
} tcf_reduce_args_t;

#define TCF_REDUCE_KERNEL "tcf_reduce"

/* Code spliced into the kernel, for fusing elementwise work around the reduction. Each is
 * the body of a __device__ function (NULL: the default), compiled in the scope of the
 * kernel's types: tcf_in, tcf_acc, tcf_out (CUDA types of in_dt, acc_dt, out_dt: float,
 * tcf_h, tcf_b), tcf_rargs (tcf_reduce_args_t), and
 *     struct tcf_row { unsigned row; unsigned long long in_off, out_off; }
 * (the output index and its row's byte offsets from src and dst), and the constant TCF_G
 * (threads sharing a row). The row's length is a.num_inputs.
 *
 *   prologue   tcf_in tcf_pro(const tcf_rargs &a, const tcf_row &r, unsigned j)
 *              element j of row r, as the reduction's input (eager's reduce_kernel loaded
 *              it from memory in tcf_in). Default: loaded from src.
 *   epilogue   void tcf_epi(const tcf_rargs &a, const tcf_row &r, tcf_out v)
 *              run once per row, by the thread PyTorch stores from, with the projected,
 *              cast result. Default: stored at dst + r.out_off.
 *   row_pass   void tcf_rowpass(const tcf_rargs &a, const tcf_row &r, unsigned g, tcf_out v)
 *              run after the epilogue by every thread of every row (g: its index among the
 *              TCF_G threads of the row), with the row's result: a second pass over the
 *              row (broadcast consumers: x * rsqrt(mean + eps)). Default: none.
 *   helpers    text placed before the three (device functions they call).
 *   args_ext   members appended to tcf_rargs after its 224 bytes (the kernel's parameter
 *              grows: a row group's buffers, strides and scalars, codegen.h's
 *              tcf_rows_args_t). Default: none, tcf_rargs is tcf_reduce_args_t.
 * With a prologue the kernel never dereferences src: it may be the address eager's
 * intermediate had (only its alignment matters), whether or not that memory exists. */
/* A softmax (tcf_red_softmax) takes prologues and an epilogue only, and needs them
 * (without, tcf_reduce_source refuses: fusion is what its kernel is for):
 *   prologue   element j of row r of its input (the backward's grad)
 *   prologue2  the backward only: element j of row r of the forward's output
 *   epilogue   void tcf_epi(const tcf_rargs &a, const tcf_row &r, unsigned j, tcf_out v)
 *              run for every element j of every row, by the thread that loaded it, with
 *              the element's result (stored: eager's dst; consumers). */
/* A norm (tcf_red_norm) takes them too, and a prologue per present affine vector, each
 * for the four elements of one of its vectors at once (j0 = 4 i: the kernel's vector i), so
 * that the loads of a thread's four elements come before their stores and can move in
 * packs (the compiler cannot tell a store from a later load's address):
 *   prologue   void tcf_pro4(const tcf_rargs &a, const tcf_row &r, unsigned j0, tcf_in *out)
 *              elements j0..j0+3 of row r of its input x (run twice: statistics, output)
 *   prologue2  the same for gamma (broadcast: its stride across rows is 0), affine & 1
 *   prologue3  the same for beta, affine & 2
 *   epilogue   void tcf_epi4(const tcf_rargs &a, const tcf_row &r, unsigned j0,
 *              const tcf_out *vin): the four results, what the group computes from them,
 *              and the stores. */
typedef struct {
    const char *prologue, *epilogue, *row_pass, *helpers, *args_ext, *prologue2, *prologue3;
} tcf_reduce_splice_t;

/* The shape a decoded launch's kernel needs, and its argument for that launch. */
void tcf_reduce_shape_of(const tcf_reduce_t *r, tcf_reduce_shape_t *s);
void tcf_reduce_args_of(const tcf_reduce_t *r, tcf_reduce_args_t *a);

/* Writes NUL-terminated CUDA C for s (extern "C" __global__ tcf_reduce(tcf_rargs)), with
 * sp's code spliced in (sp may be NULL). Returns its length, or -1 when s is malformed or
 * buf is too small. Deterministic: the same s and sp give the same text. */
int tcf_reduce_source(const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp, char *buf,
                      size_t cap);

/* The launch of that kernel for num_outputs rows: PyTorch's grid and block (no dynamic
 * shared memory: the source declares its own). */
void tcf_reduce_launch_dims(const tcf_reduce_shape_t *s, uint32_t num_outputs, uint32_t grid[3],
                            uint32_t block[3]);

/* Static names; "?" out of range. */
const char *tcf_reduce_op_name(tcf_red_op_t op);

#endif
