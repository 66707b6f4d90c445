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
 * recognized is data: capture/decode_rules.def, one row per kernel family. Anything else
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
    X(REDUCTION,         "reduction")         /* reduce_kernel: not fusable yet     */   \
    X(NONCONTIGUOUS,     "noncontiguous")     /* elementwise_kernel: strided/broadcast */ \
    X(BAD_NAME,          "unparsed-name")     /* an elementwise loop we cannot parse */   \
    X(UNKNOWN_FUNCTOR,   "unknown-functor")   /* loop parsed, no rule for the functor */  \
    X(UNSUPPORTED_DTYPE, "unsupported-dtype") /* double, integers, complex, ...     */   \
    X(BAD_LAYOUT,        "unexpected-param-layout") /* count/offset/size mismatch   */   \
    X(TRUNCATED,         "truncated-params")  /* fewer bytes than the layout spans   */   \
    X(BAD_LAUNCH,        "unexpected-launch-shape") /* block not 128x1x1, 2-D grid  */   \
    X(BAD_VALUE,         "unexpected-value")  /* N <= 0, mode out of range, cast dtypes */

typedef enum {
#define TCF_DECODE_ENUM_(id, str) TCF_DECODE_##id,
    TCF_DECODE_STATUSES(TCF_DECODE_ENUM_)
#undef TCF_DECODE_ENUM_
    TCF_DECODE_NSTATUS
} tcf_decode_status_t;

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
 *   CAST       in[0] converted to out_dt. */
#define TCF_OP_KINDS(X)                                                                    \
    X(NONE) X(ADD) X(MUL) X(DIV) X(NEG) X(RECIPROCAL) X(EXP) X(LOG) X(TANH) X(SIGMOID)    \
    X(SILU) X(RELU) X(CLAMP) X(GELU_TANH) X(GELU_ERF) X(POW2) X(POW3) X(POWM2) X(POW)     \
    X(SQRT) X(RSQRT) X(ABS) X(CMP_SCALAR) X(WHERE) X(ADDCMUL) X(CAST)

typedef enum {
#define TCF_OP_ENUM_(id) TCF_OP_##id,
    TCF_OP_KINDS(TCF_OP_ENUM_)
#undef TCF_OP_ENUM_
    TCF_OP_NKIND
} tcf_op_kind_t;

typedef enum { TCF_DT_NONE = 0, TCF_DT_F32, TCF_DT_F16, TCF_DT_BF16, TCF_DT_BOOL } tcf_dtype_t;

/* VEC: vectorized_elementwise_kernel<vec> (contiguous, aligned, memory = functor types);
 * UNROLLED: unrolled_elementwise_kernel without casts (contiguous, unaligned: vec 1);
 * CAST: unrolled_elementwise_kernel with LoadWithCast/StoreWithCast (mixed dtypes: the
 * memory dtypes come from the kernel's parameter bytes, the compute dtype from its name). */
typedef enum { TCF_LOOP_VEC = 1, TCF_LOOP_UNROLLED, TCF_LOOP_CAST } tcf_loop_t;

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
typedef struct {
    tcf_op_kind_t kind;
    const char   *rule;      /* the decode_rules.def row that matched (static string) */
    tcf_loop_t    loop;
    uint8_t       vec;       /* elements per vector access: the <vec> of the name; 1 else */
    uint8_t       nin;       /* tensor inputs (1..3) */
    uint8_t       sarg;      /* TCF_SARG_*: which operand is a scalar */
    uint8_t       mode;      /* TCF_CMP_* or TCF_CLAMP_*; 0 otherwise */
    uint8_t       nscalar;
    uint32_t      n;         /* element count */
    tcf_dtype_t   out_dt, in_dt[3];  /* memory dtypes of the output and inputs */
    tcf_dtype_t   compute_dt;        /* T: the functor's (data) argument type */
    tcf_dtype_t   res_dt;            /* what the functor returns (CMP: bool; casts: target) */
    uint64_t      out, in[3];        /* device pointers, as passed */
    tcf_scalar_t  s[2];
} tcf_op_t;

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
 * on OK. Never reads outside name's string, the off/size arrays or params_len bytes. */
tcf_decode_status_t tcf_decode_launch(const tcf_decode_launch_t *l, tcf_op_t *op);

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
