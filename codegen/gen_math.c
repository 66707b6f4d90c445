/* codegen/gen_math.c: what each op computes, as CUDA C, bit for bit as PyTorch 2.11 does.
 *
 * Every formula below is PyTorch's own expression (file named at each case), written in
 * the same order and types, so that NVRTC makes the same rounding and FMA-contraction
 * choices nvcc made for libtorch_cuda: half and bf16 run in float (opmath) unless the
 * kernel's lambda does arithmetic on the 16-bit type itself (pow's lambdas, where every
 * c10::Half/BFloat16 operator rounds); explicit fmaf only where the contraction was
 * measured (decode_rules.def: add, addcmul). Values cross op boundaries in their storage
 * type (gen.c), so each op's result is rounded exactly where eager stored it.
 *
 * The 16-bit conversions are the PTX that cuda_fp16.hpp / cuda_bf16.hpp (CUDA 13) use for
 * __half2float, __float2half, __bfloat162float (cvt.f32.bf16 from sm_90, a shift before)
 * and __float2bfloat16 (cvt.rn.bf16.f32 from sm_80), which c10::Half / c10::BFloat16 call
 * on the device (torch/headeronly/util/Half.h, BFloat16.h). NVRTC 13 does not ship those
 * headers, hence our own. Below sm_80 c10 rounds bf16 itself (round_to_nearest_even,
 * NaN -> 0x7FC0); so do we. */
#include <stdio.h>
#include <string.h>

#include "codegen/internal.h"


const char *tcf_codegen_prelude(void)
{
    return
        "typedef unsigned short tcf_h;  /* IEEE half, as stored */\n"
        "typedef unsigned short tcf_b;  /* bfloat16, as stored */\n"
        "typedef unsigned char tcf_u8;  /* bool, one byte */\n"
        "struct tcf_args { unsigned long long n; unsigned long long buf[16]; "
        "unsigned int s[16]; };\n"
        "static_assert(sizeof(tcf_args) == 200, \"tcf_fused_args_t layout\");\n"
        "template <typename T, int V, int A> struct alignas(A) tcf_pack { T v[V]; };\n"
        "__forceinline__ float tcf_h2f(tcf_h h) { float f; "
        "asm(\"{  cvt.f32.f16 %0, %1;}\\n\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
        "__forceinline__ tcf_h tcf_f2h(float f) { tcf_h h; "
        "asm(\"{  cvt.rn.f16.f32 %0, %1;}\\n\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
        "__forceinline__ float tcf_b2f(tcf_b b) { float f;\n"
        "#if __CUDA_ARCH__ >= 900\n"
        "  asm(\"{ cvt.f32.bf16 %0, %1;}\\n\" : \"=f\"(f) : \"h\"(b));\n"
        "#else\n"
        "  asm(\"{ mov.b32 %0, {0,%1};}\\n\" : \"=f\"(f) : \"h\"(b));\n"
        "#endif\n"
        "  return f; }\n"
        "__forceinline__ tcf_b tcf_f2b(float f) {\n"
        "#if __CUDA_ARCH__ >= 800\n"
        "  tcf_b b; asm(\"{  cvt.rn.bf16.f32 %0, %1;}\\n\" : \"=h\"(b) : \"f\"(f)); return b;\n"
        "#else\n"
        "  if (f != f) return (tcf_b)32704;\n"
        "  unsigned u = __float_as_uint(f);\n"
        "  return (tcf_b)((u + ((u >> 16) & 1u) + 32767u) >> 16);\n"
        "#endif\n"
        "}\n"
        /* c10::Half's unary minus is __hneg from sm_53: neg.f16 */
        "__forceinline__ tcf_h tcf_hneg(tcf_h h) { tcf_h r; "
        "asm(\"{neg.f16 %0,%1;\\n}\" : \"=h\"(r) : \"h\"(h)); return r; }\n"
        /* An op's float result as eager stored it. Eager's next kernel loaded it from
         * memory, so no multiply may be contracted into an add across the boundary:
         * neither NVVM nor ptxas (which fuses mul.f32 + add.f32 on its own, even through
         * a mov) sees through an OR with z, a zero they cannot prove (n >> 63). */
        "__forceinline__ float tcf_fbar(float x, unsigned z) { "
        "return __uint_as_float(__float_as_uint(x) | z); }\n";
}

const char *tcf_codegen_ctype(tcf_dtype_t d)
{
    switch (d) {
    case TCF_DT_F32:  return "float";
    case TCF_DT_F16:  return "tcf_h";
    case TCF_DT_BF16: return "tcf_b";
    case TCF_DT_BOOL: return "tcf_u8";
    default:          return NULL;
    }
}

/* c10::convert<to>(from) (c10/util/TypeCast.h): 16-bit types go through float; to bool is
 * x != 0 (NaN is true); from bool is 0 or 1. Writes the expression; its length or -1. */
int tcf_codegen_cvt(char *out, size_t cap, tcf_dtype_t from, tcf_dtype_t to, const char *e)
{
    char f[512];
    int n;
    if (!tcf_codegen_ctype(from) || !tcf_codegen_ctype(to))
        return -1;
    if (from == to)
        n = snprintf(out, cap, "%s", e);
    else if (from == TCF_DT_BOOL)
        n = snprintf(out, cap, to == TCF_DT_F32 ? "((%s) ? 1.0f : 0.0f)"
                               : to == TCF_DT_F16 ? "tcf_f2h((%s) ? 1.0f : 0.0f)"
                                                  : "tcf_f2b((%s) ? 1.0f : 0.0f)", e);
    else {
        /* to float first (exact), then round or test */
        n = snprintf(f, sizeof f, from == TCF_DT_F32 ? "%s" : from == TCF_DT_F16 ? "tcf_h2f(%s)"
                                                                             : "tcf_b2f(%s)", e);
        if (n < 0 || (size_t)n >= sizeof f)
            return -1;
        n = snprintf(out, cap, to == TCF_DT_F32 ? "%s" : to == TCF_DT_F16 ? "tcf_f2h(%s)"
                             : to == TCF_DT_BF16 ? "tcf_f2b(%s)" : "(tcf_u8)((%s) != 0.0f)", f);
    }
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

static int tcf_codegen_flt(tcf_dtype_t d)
{
    return d == TCF_DT_F32 || d == TCF_DT_F16 || d == TCF_DT_BF16;
}

/* The type op's functor takes input i as: bool for where's condition, else T. */
tcf_dtype_t tcf_codegen_arg_dt(const tcf_gop_t *op, unsigned i)
{
    return op->kind == TCF_OP_WHERE && i == 0 ? TCF_DT_BOOL : op->compute_dt;
}

/* Operand shape each kind needs (op.h): tensor inputs, scalars, allowed sarg/mode and
 * dtypes. 0 when op is one we generate, -1 otherwise (RELU is reserved, never decoded). */
int tcf_codegen_op_check(const tcf_gop_t *op)
{
    unsigned nin = 1, ns = 0;
    int t_ok = tcf_codegen_flt(op->compute_dt), r_ok = op->res_dt == op->compute_dt;
    int sarg_ok = op->sarg == TCF_SARG_NONE, mode_ok = op->mode == 0;
    switch (op->kind) {
    case TCF_OP_ADD:
        sarg_ok = op->sarg <= TCF_SARG_OTHER;
        nin = op->sarg == TCF_SARG_NONE ? 2 : 1;
        ns = op->sarg == TCF_SARG_NONE ? 1 : 2;
        break;
    case TCF_OP_MUL:
    case TCF_OP_DIV:
        sarg_ok = op->sarg == TCF_SARG_NONE || op->sarg == TCF_SARG_A ||
                  (op->kind == TCF_OP_MUL && op->sarg == TCF_SARG_B);
        nin = op->sarg == TCF_SARG_NONE ? 2 : 1;
        ns = op->sarg == TCF_SARG_NONE ? 0 : 1;
        break;
    case TCF_OP_NEG: case TCF_OP_RECIPROCAL: case TCF_OP_EXP: case TCF_OP_LOG:
    case TCF_OP_TANH: case TCF_OP_SIGMOID: case TCF_OP_SILU: case TCF_OP_GELU_TANH:
    case TCF_OP_GELU_ERF: case TCF_OP_POW2: case TCF_OP_POW3: case TCF_OP_POWM2:
    case TCF_OP_SQRT: case TCF_OP_RSQRT: case TCF_OP_ABS: case TCF_OP_SIN: case TCF_OP_COS:
        break;
    case TCF_OP_CLAMP:
        mode_ok = op->mode <= TCF_CLAMP_BOTH;
        ns = op->mode == TCF_CLAMP_BOTH ? 2 : 1;
        break;
    case TCF_OP_POW:
        ns = 1;
        break;
    case TCF_OP_CMP_SCALAR:
        mode_ok = op->mode <= TCF_CMP_NE;
        ns = 1;
        r_ok = op->res_dt == TCF_DT_BOOL;
        break;
    case TCF_OP_WHERE:
        nin = 3;
        t_ok = t_ok || op->compute_dt == TCF_DT_BOOL;
        break;
    case TCF_OP_ADDCMUL:
        nin = 3;
        ns = 1;
        break;
    case TCF_OP_CAST:
        t_ok = t_ok || op->compute_dt == TCF_DT_BOOL;
        r_ok = tcf_codegen_ctype(op->res_dt) != NULL;
        break;
    case TCF_OP_FILL:  /* bits: the value in T, stored as the functor holds it (op.h) */
        t_ok = t_ok || op->compute_dt == TCF_DT_BOOL;
        if (op->nin || op->nscalar != 1 || op->scalar_dt[0] != op->compute_dt ||
            op->out_dt != op->compute_dt || op->res_dt != op->compute_dt || !sarg_ok ||
            !mode_ok || !t_ok)
            return -1;
        return 0;
    case TCF_OP_CAT:  /* bits: every dtype the same; two inputs take P and T (op.h) */
        if (op->nin < 1 || op->nin > 2 || op->nscalar != (op->nin == 2 ? 2 : 0) ||
            op->out_dt != op->compute_dt || op->res_dt != op->compute_dt || !sarg_ok ||
            !mode_ok || !t_ok)
            return -1;
        for (unsigned i = 0; i < op->nin; i++)
            if (op->in_dt[i] != op->compute_dt)
                return -1;
        return 0;
    default:
        return -1;
    }
    if (op->nin != nin || op->nscalar < ns || op->nscalar > 2 || !sarg_ok || !mode_ok ||
        !t_ok || !r_ok || !tcf_codegen_ctype(op->out_dt))
        return -1;
    for (unsigned j = 0; j < op->nscalar; j++)
        if (!tcf_codegen_flt(op->scalar_dt[j]))
            return -1;
    return 0;
}

static const char *const tcf_codegen_cmp_ops[] = { ">=", ">", "<=", "<", "==", "!=" };

/* The body of op k's function: `return <expr>;` over its arguments x0..x2 (in their
 * argument types), s0/s1 (scalars widened to float: exact) and v = x0 in opmath.
 * F(e): T -> float, R(e): float -> T, as c10's operators do. */
static int tcf_codegen_body(char *out, size_t cap, const tcf_gop_t *op)
{
    tcf_dtype_t t = op->compute_dt;
    char f1[128], f2[128], rr[1024], w[768];
    const char *cmp;
#define TCF_F_(buf, e) (tcf_codegen_cvt(buf, sizeof buf, t, TCF_DT_F32, e) < 0 ? "?" : buf)
#define TCF_RET_(...) (snprintf(w, sizeof w, __VA_ARGS__) < 0 ||                          \
                       tcf_codegen_cvt(rr, sizeof rr, TCF_DT_F32, t, w) < 0                 \
                   ? -1 : snprintf(out, cap, "  return %s;\n", rr))
    switch (op->kind) {
    case TCF_OP_ADD:  /* ufunc::add (UfuncCUDA_add.cu): self + alpha*other, one fmaf */
        if (op->sarg == TCF_SARG_OTHER)
            return TCF_RET_("fmaf(s0, s1, v)");
        if (op->sarg == TCF_SARG_SELF)
            return TCF_RET_("fmaf(s0, v, s1)");
        return TCF_RET_("fmaf(s0, %s, v)", TCF_F_(f1, "x1"));
    case TCF_OP_MUL:  /* MulFunctor<float> (BinaryInternal.h); A/BUnaryFunctor (Loops.cuh) */
        if (op->sarg == TCF_SARG_A)
            return TCF_RET_("s0 * v");
        if (op->sarg == TCF_SARG_B)
            return TCF_RET_("v * s0");
        return TCF_RET_("v * %s", TCF_F_(f1, "x1"));
    case TCF_OP_DIV:  /* DivFunctor<T>: T / T, c10 divides in float; IEEE division */
        if (op->sarg == TCF_SARG_A)
            return TCF_RET_("s0 / v");
        return TCF_RET_("v / %s", TCF_F_(f1, "x1"));
    case TCF_OP_NEG:  /* `-a` in T (UnarySignKernels.cu): neg.f32, __hneg, bf16 via float */
        if (t == TCF_DT_F32)
            return snprintf(out, cap, "  return -x0;\n");
        if (t == TCF_DT_F16)
            return snprintf(out, cap, "  return tcf_hneg(x0);\n");
        return TCF_RET_("-v");
    case TCF_OP_RECIPROCAL:  /* static_cast<T>(1) / a (UnaryFractionKernels.cu) */
        return TCF_RET_("1.0f / v");
    case TCF_OP_EXP:   return TCF_RET_("expf(v)");   /* std::exp (UnaryOpsKernel.cu) */
    case TCF_OP_LOG:   return TCF_RET_("logf(v)");   /* ::log (UnaryLogKernels.cu) */
    case TCF_OP_TANH:  return TCF_RET_("tanhf(v)");  /* ::tanh (UnaryGeometricTanhKernel.cu) */
    case TCF_OP_SIN:   return TCF_RET_("sinf(v)");   /* ::sin (UnaryGeometricSinKernel.cu) */
    case TCF_OP_COS:   return TCF_RET_("cosf(v)");   /* ::cos (UnaryGeometricCosKernel.cu) */
    case TCF_OP_SQRT:  return TCF_RET_("sqrtf(v)");  /* std::sqrt, IEEE (UnaryOpsKernel.cu) */
    case TCF_OP_RSQRT: return TCF_RET_("rsqrtf(v)"); /* ::rsqrt, approximate, same call */
    case TCF_OP_ABS:   return TCF_RET_("fabsf(v)");  /* std::abs (AbsKernel.cu) */
    case TCF_OP_SIGMOID:  /* one / (one + std::exp(-opmath_t{a})) (UnarySpecialOpsKernel.cu) */
        return TCF_RET_("1.0f / (1.0f + expf(-v))");
    case TCF_OP_SILU:     /* x_acc / (opmath_t(1) + exp(-x_acc)) (ActivationSiluKernel.cu) */
        return TCF_RET_("v / (1.0f + expf(-v))");
    case TCF_OP_GELU_TANH:  /* ActivationGeluKernel.cu; kBeta 0x3F4C422A, kKappa 0x3D372713 */
        return TCF_RET_("0.5f * v * (1.0f + tanhf(__uint_as_float(1061962282u) * "
                        "(v + __uint_as_float(1027024659u) * (v * v * v))))");
    case TCF_OP_GELU_ERF:   /* ActivationGeluKernel.cu; kAlpha = M_SQRT1_2 = 0x3F3504F3 */
        return TCF_RET_("v * 0.5f * (1.0f + erff(v * __uint_as_float(1060439283u)))");
    case TCF_OP_POW2:  /* pow_tensor_scalar_kernel_impl (PowKernel.cu): base * base in T */
        return TCF_RET_("(v * v)");
    case TCF_OP_POW3:  /* base * base * base in T: the first product is rounded to T */
        if (tcf_codegen_cvt(f2, sizeof f2, TCF_DT_F32, t, "(v * v)") < 0)
            return -1;
        return TCF_RET_("%s * v", TCF_F_(f1, f2));
    case TCF_OP_POWM2: /* 1.0 / (base * base): a double division, returned as T */
        if (tcf_codegen_cvt(f2, sizeof f2, TCF_DT_F32, t, "(v * v)") < 0)
            return -1;
        return TCF_RET_("(float)(1.0 / (double)%s)", TCF_F_(f1, f2));
    case TCF_OP_POW:   /* pow_(base, exp) = ::pow(float, float) with exp held in T (Pow.cuh) */
        return TCF_RET_("powf(v, s0)");
    case TCF_OP_CLAMP:  /* launch_clamp_scalar (TensorCompare.cu): isnan(v) ? v : ::max(v, lo)
                         * etc. in opmath; ::max/::min are fmaxf/fminf, so -0 vs +0 gives +0 */
        if (tcf_codegen_cvt(rr, sizeof rr, TCF_DT_F32, t,
                            op->mode == TCF_CLAMP_BOTH ? "fminf(fmaxf(v, s0), s1)"
                            : op->mode == TCF_CLAMP_MIN ? "fmaxf(v, s0)" : "fminf(v, s0)") < 0)
            return -1;
        return snprintf(out, cap, "  if (v != v) return x0;\n  return %s;\n", rr);
    case TCF_OP_CMP_SCALAR:  /* CompareFunctor / CompareEqFunctor: compared in float */
        cmp = tcf_codegen_cmp_ops[op->mode];
        return snprintf(out, cap, "  return (tcf_u8)(v %s s0);\n", cmp);
    case TCF_OP_WHERE:  /* cond ? self : other, the bits as they are (TensorCompare.cu) */
        return snprintf(out, cap, "  return x0 ? x1 : x2;\n");
    case TCF_OP_ADDCMUL:  /* a + alpha * (b * c) in float (PointwiseOpsKernel.cu), one fmaf */
        if (tcf_codegen_cvt(f2, sizeof f2, t, TCF_DT_F32, "x2") < 0)
            return -1;
        return TCF_RET_("fmaf(s0, __fmul_rn(%s, %s), v)", TCF_F_(f1, "x1"), f2);
    case TCF_OP_CAST:  /* the copy kernels' static_cast (Copy.cu) */
        if (tcf_codegen_cvt(rr, sizeof rr, t, op->res_dt, "x0") < 0)
            return -1;
        return snprintf(out, cap, "  return %s;\n", rr);
    default:
        return -1;
    }
#undef TCF_F_
#undef TCF_RET_
}

/* `__forceinline__ R tcf_op<k>(A0 x0, .., float s0, float s1) { ... }`: op k alone, as
 * its kernel's functor: arguments in their argument types, result in res_dt. */
int tcf_codegen_op_func(char *out, size_t cap, const tcf_gop_t *op, unsigned k)
{
    char v[128];
    size_t len = 0;
    if (op->kind == TCF_OP_CAT || op->kind == TCF_OP_FILL)  /* no functor: gen.c's op call
                                                               * writes its value in place */
        return cap ? (out[0] = '\0', 0) : -1;
    int n = snprintf(out, cap, "__forceinline__ %s tcf_op%u(", tcf_codegen_ctype(op->res_dt), k);
    for (unsigned i = 0; n >= 0 && (size_t)n < cap - len && i < op->nin; i++) {
        len += (size_t)n;
        n = snprintf(out + len, cap - len, "%s x%u, ",
                     tcf_codegen_ctype(tcf_codegen_arg_dt(op, i)), i);
    }
    if (n < 0 || (size_t)n >= cap - len)
        return -1;
    len += (size_t)n;
    /* v: x0 in opmath, for the kinds that compute in float */
    int fl = tcf_codegen_flt(op->compute_dt) && op->kind != TCF_OP_WHERE && op->kind != TCF_OP_CAST;
    if (fl && tcf_codegen_cvt(v, sizeof v, op->compute_dt, TCF_DT_F32, "x0") < 0)
        return -1;
    n = snprintf(out + len, cap - len, "float s0, float s1) {\n%s%s%s",
                 fl ? "  [[maybe_unused]] const float v = " : "", fl ? v : "", fl ? ";\n" : "");
    if (n < 0 || (size_t)n >= cap - len)
        return -1;
    len += (size_t)n;
    n = tcf_codegen_body(out + len, cap - len, op);
    if (n < 0 || (size_t)n >= cap - len)
        return -1;
    len += (size_t)n;
    n = snprintf(out + len, cap - len, "}\n");
    return n < 0 || (size_t)n >= cap - len ? -1 : (int)(len + (size_t)n);
}
