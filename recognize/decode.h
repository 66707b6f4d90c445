/* Decoding: a recognized PyTorch eager elementwise launch becomes an op description.
 *
 * Pure: no driver calls, no allocation, no global state; unit-tested on recorded launches
 * (tests/unit/test_decode.c, tests/fixtures/torch-2.11-h100-single-ops.log).
 *
 * Conventions. The input is what capture/ already holds for a launch: the mangled name
 * (cuKernelGetName), the parameter layout (cuKernelGetParamInfo: offset and size of each
 * parameter), the copied parameter bytes, grid and block. The output describes what
 * PyTorch 2.11's kernel computes, read from its name (shared/PYTORCH-KERNELS.md: loop,
 * functor, dtypes) and its bytes (element count, pointers, scalars). Which kernels are
 * recognized is data: recognize/decode_rules.def, one row per kernel family. Anything else
 * is refused with a named reason; a refusal is never an error, the launch simply runs as
 * eager ran it. Decoding is a hypothesis: the fuser verifies an op against the original
 * kernel before first use (DESIGN.md, Fusion), so a wrong row costs a fusion, not a result.
 * Nothing here dereferences a device pointer; padding and empty-functor bytes are never read.
 */
#ifndef TCF_DECODE_H
#define TCF_DECODE_H

#include <stddef.h>
#include <stdint.h>

/* Why a launch was not decoded. Listed once: generates the enum and the names. */
#define TCF_DECODE_STATUSES(X)                                                            \
    X(OK,                "ok")                                                           \
    X(BAD_ARGS,          "bad-arguments")     /* NULL name/op/arrays                */   \
    X(NOT_ELEMENTWISE,   "not-elementwise")   /* GEMM, softmax, norms, RNG, ...     */   \
    X(REDUCTION,         "reduction")         /* reduce_kernel: decode_reduce.h's    */   \
    X(REDUCE_GLOBAL,     "reduce-global")     /* ctas_per_output > 1: blocks combine */   \
    X(REDUCE_STRIDED,    "reduce-strided")    /* reduced dims not one contiguous inner */ \
    X(REDUCE_OUTER,      "reduce-outer-dim")  /* lanes take outputs (ovs > 1: x.sum(0)) */ \
    X(REDUCE_INDEX,      "reduce-index")      /* values and indices (max(dim), argmax) */ \
    X(REDUCE_WELFORD,    "reduce-welford")    /* var, std, var_mean                  */   \
    X(REDUCE_SPLIT,      "reduce-split")      /* one part of a > 2^31-element reduction */ \
    X(REDUCE_CONFIG,     "reduce-config")     /* a ReduceConfig not setReduceConfig's */   \
    X(SOFTMAX_MASKED,    "softmax-masked")    /* a masked softmax (is_masked)         */   \
    X(NORM_FORM,         "norm-form")         /* a LayerNorm with beta but no gamma, or an \
                                               * RMSNorm with beta or a mean pointer */   \
    X(BAD_NAME,          "unparsed-name")     /* an elementwise loop we cannot parse */   \
    X(UNKNOWN_FUNCTOR,   "unknown-functor")   /* loop parsed, no rule for the functor */  \
    X(UNSUPPORTED_DTYPE, "unsupported-dtype") /* double, integers, complex, ...     */   \
    X(BAD_LAYOUT,        "unexpected-param-layout") /* count/offset/size mismatch   */   \
    X(TRUNCATED,         "truncated-params")  /* fewer bytes than the layout spans   */   \
    X(BAD_LAUNCH,        "unexpected-launch-shape") /* block not 128x1x1, 2-D grid  */   \
    X(BAD_VALUE,         "unexpected-value")  /* N <= 0, mode out of range, cast dtypes */ \
    X(TOO_MANY_DIMS,     "too-many-dims")     /* a strided loop over > TCF_OP_MAX_DIMS dims */ \
    X(CAT_VARIANT,       "cat-variant")       /* a cat kernel we do not decode (vectorized, \
                                               * 64-bit index, unknown template) */        \
    X(CAT_INPUTS,        "cat-inputs")        /* a cat launch of more than 2 non-empty inputs */

typedef enum {
#define TCF_DECODE_ENUM_(id, str) TCF_DECODE_##id,
    TCF_DECODE_STATUSES(TCF_DECODE_ENUM_)
#undef TCF_DECODE_ENUM_
    TCF_DECODE_NSTATUS
} tcf_decode_status_t;

#include "codegen/op.h"

/* One launch, as capture/ recorded it. Pointers are borrowed for the call only. */
typedef struct {
    const char     *name;        /* mangled kernel name */
    uint32_t        nparams;
    const uint32_t *off, *size;  /* nparams each: cuKernelGetParamInfo */
    const uint8_t  *params;      /* the copied parameter bytes, laid out by off/size */
    uint32_t        params_len;  /* bytes available at params */
    uint32_t        grid[3], block[3];
} tcf_decode_launch_t;

/* Fills *op (zeroed first) and returns TCF_DECODE_OK, or a reason; *op is meaningful only
 * on OK. Never reads outside name's string, the off/size arrays or params_len bytes.
 * The same as tcf_decode_kernel then tcf_decode_apply. */
tcf_decode_status_t tcf_decode_launch(const tcf_decode_launch_t *l, tcf_op_t *op);

/* The two halves, for a caller that sees one kernel many times (capture/ keeps the first
 * half per kernel): what the name and the parameter layout say, which never changes for a
 * kernel, and what one launch's bytes and shape say. tcf_decode_kernel reads l's name,
 * nparams, off and size only; its refusals hold for every launch of the kernel. Those of
 * tcf_decode_apply (TRUNCATED, BAD_LAUNCH, BAD_VALUE, UNSUPPORTED_DTYPE of a cast) are one
 * launch's. */
typedef struct {
    const void *rule;            /* the decode_rules.def row; NULL: not decodable */
    tcf_dtype_t t;               /* the functor's T */
    uint8_t     loop, vec, ncast;
    uint8_t     vt;              /* strided loops: elements a thread (the name's <vt>) */
    uint32_t    soff[2], ssz[2]; /* scalars inside the functor */
    uint32_t    foff, doff, loff, stoff; /* functor, data[], loader, storer offsets; for
                                          * the strided cast loop loff is its dtypes[] */
    uint64_t    span;            /* parameter bytes the layout spans */
    /* cat kernels (loop TCF_LOOP_CAT): Dims, sizeof(OpaqueType), batch_size, stride_size */
    uint8_t     cat_dims, cat_es;
    uint16_t    cat_batch, cat_ss;
} tcf_decode_kernel_t;

tcf_decode_status_t tcf_decode_kernel(const tcf_decode_launch_t *l, tcf_decode_kernel_t *dk);
tcf_decode_status_t tcf_decode_apply(const tcf_decode_kernel_t *dk, const uint8_t *params,
                                     uint32_t params_len, const uint32_t grid[3],
                                     const uint32_t block[3], tcf_op_t *op);

/* PyTorch's OffsetCalculator<nt> at oc (int dims; IntDivider sizes[25]; uint32 strides[25][nt]:
 * 304 + 100 nt bytes, len of them readable) sets only its first dims entries: the rest hold
 * whatever the host's stack held, old pointers among them, and are never read (its loop
 * stops at dims). Sets unread[b] to 1 for each of their bytes b (unread indexed as oc; the
 * rest of it untouched), for exec's tcf_exec_unread. 0, or -1 when dims is not 0..25 or
 * len is short. */
int tcf_decode_offset_calc_unread(const uint8_t *oc, uint32_t len, unsigned nt, uint8_t *unread);
/* A strided loop's closure holds its functor after data[] (and, casting, dtypes[]), then
 * nvcc's closure pointer; the other loops take the functor as parameter 1, before data[].
 * An empty functor's bytes (a struct's one, a lambda closure's 1 or 8) and the padding
 * around the members the kernel reads are the caller's stack, old pointers' bytes among
 * them. Sets unread[b] to 1 for each of them (b from the launch's first parameter byte;
 * the rule's member, scalars and dtypes, and the closure pointer, left as they are). 0,
 * or -1 when dk is not an elementwise loop (a cat) or len is short. */
int tcf_decode_functor_unread(const tcf_decode_kernel_t *dk, uint32_t len, uint8_t *unread);
/* --- cat (decode_cat.c) ---------------------------------------------------------------
 * Shape.cu's CatArrayBatchedCopy kernels: what tcf_decode_kernel and tcf_decode_apply do
 * for a name of that family (they call these); dk->loop is TCF_LOOP_CAT. */
tcf_decode_status_t tcf_decode_cat_kernel(const tcf_decode_launch_t *l, tcf_decode_kernel_t *dk);
tcf_decode_status_t tcf_decode_cat_apply(const tcf_decode_kernel_t *dk, const uint8_t *params,
                                         uint32_t params_len, const uint32_t grid[3],
                                         const uint32_t block[3], tcf_op_t *op);
/* Rewrites a decoded cat launch's parameter bytes (verification, exec/verify.c): the
 * output and input pointers become out and in[i] (the op's view bases, as op->out and
 * op->in[i] are), the space's dims become sizes (op->it.ndim entries, each at most the
 * op's: the first corner of the same elements; an input cut off along the cat dim gets
 * no elements), and every byte the kernel never reads is zeroed (unused batch slots and
 * dims, empty inputs' pointers). The grid stays: the kernel strides over it. 0, or -1
 * when the bytes are not those of op's launch (no change). */
int tcf_decode_cat_resize(uint8_t *params, uint32_t params_len, const tcf_op_t *op,
                          const uint32_t *sizes, uint64_t out, const uint64_t in[2]);
/* The bytes of a cat launch with grid.y gy that its kernel never reads, and decoding
 * ignores (exec's tcf_exec_unread): each metadata slot from gy on (blockIdx.y picks the
 * slot; PyTorch leaves the unused ones as its stack had them), the metadata's padding, and
 * the output's sizes and strides past Dims. Sets unread[b] to 1 for each (b from the
 * launch's first parameter byte; the rest untouched). 0, or -1 when dk is not a cat's, len
 * is short, or gy is 0 or past the batch. */
int tcf_decode_cat_unread(const tcf_decode_kernel_t *dk, uint32_t len, uint32_t gy,
                          uint8_t *unread);

/* Rewrites a decoded launch's copied parameter bytes for a smaller problem over the first
 * corner of the same elements (verification, exec/verify.c): N becomes n and, for the
 * strided loops, dim d's size sizes[d] (op->it.ndim entries, each at most the launch's,
 * multiplying to n) with its IntDivider recomputed. Strides, pointers and the functor are
 * left as they are. 0, or -1 when the bytes are not those of op's launch (no change). */
int tcf_decode_resize(uint8_t *params, uint32_t params_len, const tcf_op_t *op, uint32_t n,
                      const uint32_t *sizes);

/* Static strings; "?" for out-of-range values. */
const char *tcf_decode_reason(tcf_decode_status_t s);
const char *tcf_decode_kind_name(tcf_op_kind_t k);
const char *tcf_decode_dtype_name(tcf_dtype_t d);

/* The number of rows in decode_rules.def and the name of row i (NULL past the end). */
size_t tcf_decode_rule_count(void);
const char *tcf_decode_rule_name(size_t i);

/* One line for logs and test failures: "ADD f16 vec8 n=1048576 out=0x.. in=0x..,0x.. ..." */
void tcf_decode_describe(const tcf_op_t *op, char *buf, size_t len);

#endif
