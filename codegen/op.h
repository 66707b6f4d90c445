/* The op vocabulary: what decoding produces (recognize/decode.c), what planning groups
 * (fuser/) and what code generation emits (codegen/). It lives here, in the lowest of the
 * three layers, so that no layer includes a higher one. Pure data definitions. */
#ifndef TCF_OP_H
#define TCF_OP_H

#include <stdint.h>

/* Op kinds and their operands (in[i] are tensors, s[i] scalars; see tcf_op_t):
 *   ADD        self + alpha*other; s[0] = alpha. sarg NONE: self in[0], other in[1];
 *              sarg OTHER (CUDAFunctorOnSelf_add, `x + 1.25`): self in[0], other s[1];
 *              sarg SELF (CUDAFunctorOnOther_add, `2 - x`): self s[1], other in[0].
 *              Subtraction is ADD with alpha = -1.
 *   MUL        in[0]*in[1]; sarg A (AUnaryFunctor): s[0]*in[0]; sarg B (BUnaryFunctor,
 *              `x / 3`): in[0]*s[0], where s[0] = 1/3 was computed on the host.
 *   DIV        in[0]/in[1]; sarg A (a CPU 0-dim tensor divided by in[0]): s[0]/in[0].
 *   NEG ... ABS, GELU_*, POW2/POW3/POWM2  unary over in[0], no scalars.
 *   RELU       reserved: PyTorch 2.11 launches relu as CLAMP MIN with s[0] = 0.
 *   CLAMP      mode MIN: max(x, s[0]); MAX: min(x, s[0]) (the kernel keeps the one limit
 *              in its first slot); BOTH: min(max(x, s[0]), s[1]); NaN x passes through.
 *   POW        in[0] ** s[0] (exponent in T); POW2/POW3/POWM2 are the exponents 2, 3, -2.
 *   CMP_SCALAR in[0] <mode> s[0] -> bool; s[0] is in T, as the kernel holds it.
 *   WHERE      in[0] (bool) ? in[1] : in[2].
 *   ADDCMUL    in[0] + s[0]*(in[1]*in[2]).
 *   CAST       in[0] converted to out_dt.
 *   CAT        torch.cat's copy (recognize/decode_cat.c): over the output slice one launch
 *              writes, out = in[0] where the coordinate along dim cat_dim is below
 *              cat_lo[1], else in[1] (nin 2); out = in[0] (nin 1: every other input of
 *              the launch was empty). Bits move as they are: the dtype says only the
 *              element's size. in[i] is a view over the whole space whose base is
 *              shifted back by cat_lo[i] along cat_dim, so that it is read at the same
 *              coordinates as the output; only [cat_lo[i], cat_lo[i] + cat_len[i]) is
 *              read. With nin 2, s[0] and s[1] hold raw bits (dt NONE): P, the elements
 *              one step of cat_dim spans times its size, and T = cat_lo[1] times the
 *              elements of one step: element e reads in[0] when e % P < T.
 *   FILL       FillFunctor<T> (fill_, zero_, torch.full; and every torch.empty under
 *              torch.use_deterministic_algorithms, which fills it with NaN or the
 *              integer maximum): out = s[0], no tensor input (nin 0); s[0] holds T's
 *              bits as the functor does, and they are stored as they are (a NaN's
 *              payload too, which a round trip through float would not keep). */
#define TCF_OP_KINDS(X)                                                                    \
    X(NONE) X(ADD) X(MUL) X(DIV) X(NEG) X(RECIPROCAL) X(EXP) X(LOG) X(TANH) X(SIGMOID)    \
    X(SILU) X(RELU) X(CLAMP) X(GELU_TANH) X(GELU_ERF) X(POW2) X(POW3) X(POWM2) X(POW)     \
    X(SQRT) X(RSQRT) X(ABS) X(CMP_SCALAR) X(WHERE) X(ADDCMUL) X(CAST) X(CAT)  \
    X(SIN) X(COS) X(FILL)

typedef enum {
#define TCF_OP_ENUM_(id) TCF_OP_##id,
    TCF_OP_KINDS(TCF_OP_ENUM_)
#undef TCF_OP_ENUM_
    TCF_OP_NKIND
} tcf_op_kind_t;

typedef enum { TCF_DT_NONE = 0, TCF_DT_F32, TCF_DT_F16, TCF_DT_BF16, TCF_DT_BOOL } tcf_dtype_t;

/* Bytes per element in memory; 0 for NONE. */
static inline unsigned tcf_dtype_size(tcf_dtype_t d)
{
    return d == TCF_DT_F32 ? 4 : d == TCF_DT_F16 || d == TCF_DT_BF16 ? 2
                               : d == TCF_DT_BOOL ? 1 : 0;
}

/* VEC: vectorized_elementwise_kernel<vec> (contiguous, aligned, memory = functor types);
 * UNROLLED: unrolled_elementwise_kernel without casts (contiguous, unaligned: vec 1);
 * CAST: unrolled_elementwise_kernel with LoadWithCast/StoreWithCast (mixed dtypes: the
 * memory dtypes come from the kernel's parameter bytes, the compute dtype from its name). */
/* STRIDED: elementwise_kernel<128, vt> of gpu_kernel_impl_nocast (TensorIterator's
 * non-contiguous path: an OffsetCalculator gives each operand's offset per element, a
 * broadcast dimension has stride 0); STRIDED_CAST: the same from gpu_kernel_impl, where
 * the memory dtypes differ from the functor's and an int8 ScalarType array says each. */
/* CAT: one of Shape.cu's CatArrayBatchedCopy kernels (recognize/decode_cat.c); its op is
 * N-d like a strided one (it.ndim >= 1). */
typedef enum { TCF_LOOP_VEC = 1, TCF_LOOP_UNROLLED, TCF_LOOP_CAST, TCF_LOOP_STRIDED,
               TCF_LOOP_STRIDED_CAST, TCF_LOOP_CAT } tcf_loop_t;

/* The iteration space of a strided loop, as its OffsetCalculator holds it: element e is
 * decomposed innermost dimension first (dim 0), e = i0 + size[0]*(i1 + size[1]*(...)), and
 * operand k sits at its pointer + sum_d i_d * stride[k][d] bytes. ndim 0: contiguous (every
 * operand n elements from its pointer). More than TCF_OP_MAX_DIMS dimensions are refused:
 * TensorIterator coalesces, and real models launch at most 4. */
#define TCF_OP_MAX_DIMS 8
typedef struct {
    uint8_t  ndim;
    uint32_t size[TCF_OP_MAX_DIMS];
    uint32_t stride[4][TCF_OP_MAX_DIMS];   /* bytes; [0] the output, [1 + i] in[i] */
} tcf_iter_t;

/* PyTorch's IntDivider<uint32_t> for d (aten/src/ATen/cuda/detail/IntegerDivider.cuh): the
 * smallest shift with 2^shift >= d and m1 = 2^32 (2^shift - d) / d + 1, so that for
 * n < 2^31, n / d == (umulhi(n, m1) + n) >> shift. Decoding checks a launch's dividers
 * against it; generated kernels and verification's smaller problems compute theirs with
 * it. 0, or -1 for d == 0 or d > 2^31. */
static inline int tcf_int_divider(uint32_t d, uint32_t *m1, uint32_t *shift)
{
    if (!d || d > 0x80000000u)
        return -1;
    uint32_t sh = d == 1 ? 0 : 32 - (uint32_t)__builtin_clz(d - 1);   /* ceil(log2 d) */
    *m1 = (uint32_t)(((1ull << 32) * ((1ull << sh) - d)) / d + 1);
    *shift = sh;
    return 0;
}

enum { TCF_SARG_NONE = 0, TCF_SARG_SELF, TCF_SARG_OTHER, TCF_SARG_A, TCF_SARG_B };
/* mode: CMP_SCALAR values 0-3 are PyTorch's OpType (CompareKernels.cu), 4-5 EqOpType + 4. */
enum { TCF_CMP_GE = 0, TCF_CMP_GT, TCF_CMP_LE, TCF_CMP_LT, TCF_CMP_EQ, TCF_CMP_NE };
enum { TCF_CLAMP_MIN = 0, TCF_CLAMP_MAX, TCF_CLAMP_BOTH };  /* ClampLimits (TensorCompare.cu) */

typedef struct {
    tcf_dtype_t dt;    /* F32 for opmath scalars; the kernel's T where it keeps one in T */
    uint32_t    bits;  /* as stored: float bits, or the 16-bit pattern in the low half */
    float       f;     /* the same value widened to float (exact for half and bf16) */
} tcf_scalar_t;

/* What the kernel does with its operands, in order: load in[i] as in_dt[i]; in the CAST
 * loop convert it to the functor's argument type (compute_dt; bool for where's condition);
 * apply the functor (half/bf16 math runs in float, opmath); its result is res_dt; in the
 * CAST loop convert that to out_dt; store. Outside the CAST loop in_dt are the argument
 * types and out_dt == res_dt. */
typedef struct tcf_op_s {
    tcf_op_kind_t kind;
    const char   *rule;      /* the decode_rules.def row that matched (static string) */
    tcf_loop_t    loop;
    uint8_t       vec;       /* elements per vector access: the <vec> of the name; 1 else */
    uint8_t       nin;       /* tensor inputs (1..3; 0 for FILL) */
    uint8_t       sarg;      /* TCF_SARG_*: which operand is a scalar */
    uint8_t       mode;      /* TCF_CMP_* or TCF_CLAMP_*; 0 otherwise */
    uint8_t       nscalar;
    uint32_t      n;         /* element count */
    tcf_dtype_t   out_dt, in_dt[3];  /* memory dtypes of the output and inputs */
    tcf_dtype_t   compute_dt;        /* T: the functor's (data) argument type */
    tcf_dtype_t   res_dt;            /* what the functor returns (CMP: bool; casts: target) */
    uint64_t      out, in[3];        /* device pointers, as passed */
    tcf_scalar_t  s[2];
    tcf_iter_t    it;                /* STRIDED loops; ndim 0 for the contiguous ones */
    /* CAT only: the dim of it along which inputs follow each other, and each input's
     * range along it (in[i]'s first real byte is in[i] + cat_lo[i] * its stride there) */
    uint8_t       cat_dim;
    uint32_t      cat_lo[2], cat_len[2];
} tcf_op_t;

#endif
