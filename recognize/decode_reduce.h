/* Decoding of PyTorch 2.11's reduce_kernel launches into row reductions (codegen/reduce.h),
 * and of its row softmaxes (softmax_warp_forward/backward of SoftMax.cu, rows of at most
 * 2048 elements: reduce.h's tcf_red_softmax) and its vectorized LayerNorm and RMSNorm
 * (vectorized_layer_norm_kernel of layer_norm_kernel.cu: tcf_red_norm) into the same
 * description.
 *
 * Pure, like decode.h (whose launch struct and statuses it shares): no driver calls, no
 * allocation, no global state; tests/unit/test_decode_reduce.c runs it on every
 * reduce_kernel launch of the recorded traces. The facts are docs/PYTORCH-REDUCE.md's:
 * the mangled name gives the op, the dtypes and ReduceOp's vt0 and input_vec_size (§1);
 * the one parameter, a ReduceOp by value, gives the ReduceConfig, the calculators, the
 * pointers and the flags (§2). A launch decodes only when its combine order is the one
 * gen_reduce.c reproduces (§5): a reduction of the innermost, contiguous dim in one block
 * per output, whose config is the one setReduceConfig gives for its shape. Anything else
 * is refused with a named reason (decode.h's REDUCE_* statuses), so coverage tables can
 * count what is left and why. tcf_decode_launch says REDUCTION for every reduce_kernel;
 * these functions say what it is. */
#ifndef TCF_DECODE_REDUCE_H
#define TCF_DECODE_REDUCE_H

#include "codegen/reduce.h"
#include "recognize/decode.h"

/* What a reduce_kernel's name and parameter layout say (never changes for a kernel). */
typedef struct {
    tcf_red_op_t op;
    uint8_t      root, vt0, ivs, ovs;
    tcf_dtype_t  in_dt, out_dt, acc_dt;
    uint32_t     ops_size;     /* bytes of ops_t at offset 0 (1: an empty functor) */
    uint32_t     ident_off, cfg_off, icalc_off, ocalc_off, src_off;
    uint32_t     span;         /* the parameter's size: 1048 (arg_t 4 bytes), 1040 (2);
                                * a softmax: the bytes its parameters span (45, 48);
                                * a norm: 56 */
    uint8_t      l2e;          /* a softmax: log2_elements */
} tcf_decode_reduce_kernel_t;

/* The first half: the name (reduce_kernel<nt, ovs, ReduceOp<...>>) and the layout (one
 * parameter at offset 0 of the size the arg_t implies). Not a reduce_kernel of
 * at::native: NOT_ELEMENTWISE. Fills *rk (zeroed first); meaningful only on OK. */
tcf_decode_status_t tcf_decode_reduce_kernel(const tcf_decode_launch_t *l,
                                             tcf_decode_reduce_kernel_t *rk);

/* The second half: one launch's bytes and shape. Fills *r (zeroed first, all zeros on a
 * refusal). Reads at most rk->span bytes of params. */
tcf_decode_status_t tcf_decode_reduce_apply(const tcf_decode_reduce_kernel_t *rk,
                                            const uint8_t *params, uint32_t params_len,
                                            const uint32_t grid[3], const uint32_t block[3],
                                            tcf_reduce_t *r);

/* A softmax's or a norm's launch (reduce.h: tcf_red_fullrow) made for `rows` of its rows,
 * the first ones, in its parameter bytes (a softmax's row count) and grid: what
 * verification runs the original on. 0, or -1 when rk is neither or the bytes are short. */
int tcf_decode_fullrow_resize(const tcf_decode_reduce_kernel_t *rk, uint8_t *params,
                              uint32_t params_len, uint32_t rows, uint32_t grid[3]);

/* The bytes of a reduce_kernel's ReduceOp (len of them at p, rk->span) that the kernel
 * never reads (docs/PYTORCH-REDUCE.md §2.1): an empty functor's byte and the padding to
 * ident, the 3 bytes after the config's vectorize_input, the 2 after final_output, and its
 * input and output calculators' entries past their dims (decode.h's
 * tcf_decode_offset_calc_unread). Sets unread[b] to 1 for each; the rest untouched. 0, or
 * -1 for a softmax or a norm (plain parameters: no padding inside one) or another length. */
int tcf_decode_reduce_unread(const tcf_decode_reduce_kernel_t *rk, const uint8_t *p, uint32_t len,
                             uint8_t *unread);

/* Both halves. */
tcf_decode_status_t tcf_decode_reduce(const tcf_decode_launch_t *l, tcf_reduce_t *r);

/* setReduceConfig (Reduce.cuh) for a reduction of K contiguous innermost elements into
 * each of M outputs (the case decoding accepts: one reduced dim, unit stride), given
 * sizeof(arg_t), input_vec_size and the device's multiProcessorCount and
 * maxThreadsPerMultiProcessor (H100: 132, 2048; they decide ctas_per_output only).
 * Fills every field of *c, grid and dynamic shared memory included. 0, or -1 when K or M
 * is 0 or the sizes are out of range. */
int tcf_reduce_config_rule(uint32_t K, uint32_t M, uint32_t arg_size, uint32_t ivs,
                           uint32_t num_sms, uint32_t max_threads_per_sm, tcf_reduce_cfg_t *c);

/* One line for logs, tests and `tcfuse reduce`:
 * "SUM f32->f32 acc f32 K=4096 M=64 block 32x16 grid 4 vec4 vt0 4 rows-per-warp ..." */
void tcf_decode_reduce_describe(const tcf_reduce_t *r, char *buf, size_t len);

#endif
