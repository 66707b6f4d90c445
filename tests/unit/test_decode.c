/* Decoding on recorded launches: tests/fixtures/torch-2.11-h100-single-ops.log (part 1:
 * shared/data's log; part 2: the same ops in float16/bfloat16/float32, unaligned and mixed,
 * from a TCFUSE_TRACE probe). Checks per MARK, refusals, corrupted inputs, coverage; and
 * the sin and cos of a Llama's rotary embedding (tests/fixtures/trace-hf-llama-fuse.jsonl). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recognize/decode.h"
#include "check.h"
#include "fixture_launches.h"

#define FIXTURE "tests/fixtures/torch-2.11-h100-single-ops.log"
#define MAXB 2048

typedef struct {
    char     mark[40], *name;
    int      idx;                           /* position inside its MARK */
    uint32_t grid[3], block[3], nparams, off[8], size[8], len;
    uint8_t  bytes[MAXB];
} rec_t;

static rec_t *recs;
static size_t nrec;

static void load(void)
{
    FILE *f = fopen(FIXTURE, "r");
    char line[8192], mark[40] = "";
    int idx = 0;
    uint32_t trunc = UINT32_MAX;
    if (!CHECK(f != NULL))
        return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        rec_t *r = nrec ? &recs[nrec - 1] : NULL;
        unsigned i, o, s;
        int n = 0;
        if (!strncmp(line, "MARK ", 5)) {
            snprintf(mark, sizeof mark, "%.39s", line + 5);
            idx = 0;
        } else if (!strncmp(line, "LAUNCH ", 7)) {
            recs = realloc(recs, ++nrec * sizeof *recs);
            r = memset(&recs[nrec - 1], 0, sizeof *r);
            sscanf(line, "LAUNCH %*s kind=%*d g=(%u,%u,%u) b=(%u,%u,%u) smem=%*u %n", &r->grid[0],
                   &r->grid[1], &r->grid[2], &r->block[0], &r->block[1], &r->block[2], &n);
            r->name = strdup(line + n);
            memcpy(r->mark, mark, sizeof mark);
            r->idx = idx++;
            trunc = UINT32_MAX;
        } else if (r && sscanf(line, "  p%u off=%u sz=%u :%n", &i, &o, &s, &n) == 3 && n && i < 8 &&
                   o + s <= MAXB) {
            const char *h = line + n;
            uint32_t k = 0;
            for (; k < s && h[2 * k] && h[2 * k] != '.'; k++)
                sscanf(h + 2 * k, "%2hhx", &r->bytes[o + k]);
            if (k < s && o + k < trunc)     /* "..." : only the first 96 bytes are known */
                trunc = o + k;
            r->off[i] = o, r->size[i] = s, r->nparams = i + 1;
            r->len = trunc != UINT32_MAX ? trunc : o + s > r->len ? o + s : r->len;
        }
    }
    fclose(f);
}

static const rec_t *find(const char *mark, int idx)
{
    for (size_t i = 0; i < nrec; i++)
        if (!strcmp(recs[i].mark, mark) && recs[i].idx == idx)
            return &recs[i];
    return NULL;
}

static tcf_decode_launch_t launch_of(const rec_t *r)
{
    return (tcf_decode_launch_t){ r->name, r->nparams, r->off, r->size, r->bytes, r->len,
                                  { r->grid[0], r->grid[1], r->grid[2] },
                                  { r->block[0], r->block[1], r->block[2] } };
}

static tcf_decode_status_t dec(const rec_t *r, tcf_op_t *op)
{
    tcf_decode_launch_t l = launch_of(r);
    return tcf_decode_launch(&l, op);
}

static int is_contig_elementwise(const char *name)
{
    return !strncmp(name, "_ZN2at6native29vectorized_elementwise_kernel", 44) ||
           !strncmp(name, "_ZN2at6native27unrolled_elementwise_kernel", 42);
}

/* Decodes mark[idx] and checks the common fields; returns the op for further checks. */
static tcf_op_t want(const char *mark, int idx, tcf_op_kind_t kind, tcf_dtype_t t, int vec,
                     float s0, float s1)
{
    tcf_op_t op = { 0 };
    const rec_t *r = find(mark, idx);
    char what[600];
    snprintf(what, sizeof what, "%s[%d] decodes", mark, idx);
    if (!check_report(r != NULL, __FILE__, __LINE__, what, "no such launch in the fixture"))
        return op;
    tcf_decode_status_t st = dec(r, &op);
    if (!check_report(st == TCF_DECODE_OK, __FILE__, __LINE__, what, tcf_decode_reason(st)))
        return op;
    tcf_decode_describe(&op, what, sizeof what);
    uint32_t n = strstr(mark, "unaligned") ? (1u << 20) - 1 : 1u << 20;   /* x[1:] */
    check_report(op.kind == kind && op.compute_dt == t && op.vec == vec && op.n == n,
                 __FILE__, __LINE__, mark, what);
    check_report((isnan(s0) || (op.nscalar > 0 && op.s[0].f == s0)) &&
                 (isnan(s1) || (op.nscalar > 1 && op.s[1].f == s1)), __FILE__, __LINE__, mark, what);
    return op;
}

#define NA NAN  /* not checked */
TEST(part1_recorded_float_ops)
{
    static const struct { const char *m; int i; tcf_op_kind_t k; tcf_dtype_t t; int vec, sarg, mode; float s0, s1; } w[] = {
        { "add", 0, TCF_OP_ADD, TCF_DT_F32, 4, 0, 0, 1, NA },
        { "add_alpha", 0, TCF_OP_ADD, TCF_DT_F32, 4, 0, 0, 2.5f, NA },
        { "mul", 0, TCF_OP_MUL, TCF_DT_F32, 4, 0, 0, NA, NA },
        { "mul_scalar", 0, TCF_OP_MUL, TCF_DT_F32, 4, TCF_SARG_A, 0, 0.5f, NA },
        { "add_scalar", 0, TCF_OP_ADD, TCF_DT_F32, 4, TCF_SARG_OTHER, 0, 1, 1.25f },  /* alpha, other */
        { "rsub_scalar", 0, TCF_OP_ADD, TCF_DT_F32, 4, TCF_SARG_SELF, 0, -1, 1 },     /* alpha, self */
        { "div", 0, TCF_OP_DIV, TCF_DT_F32, 4, 0, 0, NA, NA },
        { "tanh", 0, TCF_OP_TANH, TCF_DT_F32, 4, 0, 0, NA, NA },
        { "pow3", 0, TCF_OP_POW3, TCF_DT_F32, 4, 0, 0, NA, NA },
        { "pow2.5", 0, TCF_OP_POW, TCF_DT_F32, 4, 0, 0, 2.5f, NA },
        { "relu", 0, TCF_OP_CLAMP, TCF_DT_F32, 4, 0, TCF_CLAMP_MIN, 0, NA },
        { "gelu", 0, TCF_OP_GELU_ERF, TCF_DT_F32, 4, 0, 0, NA, NA },
        { "gelu_tanh", 0, TCF_OP_GELU_TANH, TCF_DT_F32, 4, 0, 0, NA, NA },
        { "exp", 0, TCF_OP_EXP, TCF_DT_F32, 4, 0, 0, NA, NA },
        { "sigmoid", 0, TCF_OP_SIGMOID, TCF_DT_F32, 4, 0, 0, NA, NA },
        { "where", 0, TCF_OP_CMP_SCALAR, TCF_DT_F32, 4, 0, TCF_CMP_GT, 0, NA },
        { "where", 1, TCF_OP_WHERE, TCF_DT_F32, 4, 0, 0, NA, NA },
        { "gt", 0, TCF_OP_CMP_SCALAR, TCF_DT_F32, 4, 0, TCF_CMP_GT, 0, NA },
        { "clamp", 0, TCF_OP_CLAMP, TCF_DT_F32, 4, 0, TCF_CLAMP_BOTH, -1, 1 },
        { "half", 0, TCF_OP_CAST, TCF_DT_F32, 8, 0, 0, NA, NA },
        { "bf16mul", 1, TCF_OP_CAST, TCF_DT_F32, 8, 0, 0, NA, NA },
        { "bf16mul", 2, TCF_OP_MUL, TCF_DT_BF16, 8, 0, 0, NA, NA },
        { "mm_half", 1, TCF_OP_CAST, TCF_DT_F32, 8, 0, 0, NA, NA },
        { "inplace_mul", 0, TCF_OP_MUL, TCF_DT_F32, 4, TCF_SARG_A, 0, 2, NA },
        { "addcmul", 0, TCF_OP_ADDCMUL, TCF_DT_F32, 4, 0, 0, 0.1f, NA },
        /* the hand-written tanh-GELU: 0.5*x*(1+tanh(0.7978846*(x+0.044715*x**3))) */
        { "manual_gelu", 0, TCF_OP_MUL, TCF_DT_F32, 4, TCF_SARG_A, 0, 0.5f, NA },
        { "manual_gelu", 1, TCF_OP_POW3, TCF_DT_F32, 4, 0, 0, NA, NA },
        { "manual_gelu", 2, TCF_OP_MUL, TCF_DT_F32, 4, TCF_SARG_A, 0, 0.044715f, NA },
        { "manual_gelu", 3, TCF_OP_ADD, TCF_DT_F32, 4, 0, 0, 1, NA },
        { "manual_gelu", 4, TCF_OP_MUL, TCF_DT_F32, 4, TCF_SARG_A, 0, 0.7978846f, NA },
        { "manual_gelu", 5, TCF_OP_TANH, TCF_DT_F32, 4, 0, 0, NA, NA },
        { "manual_gelu", 6, TCF_OP_ADD, TCF_DT_F32, 4, TCF_SARG_OTHER, 0, 1, 1 },
        { "manual_gelu", 7, TCF_OP_MUL, TCF_DT_F32, 4, 0, 0, NA, NA },
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        tcf_op_t op = want(w[i].m, w[i].i, w[i].k, w[i].t, w[i].vec, w[i].s0, w[i].s1);
        CHECK_EQ_INT(op.sarg, w[i].sarg);
        CHECK_EQ_INT(op.mode, w[i].mode);
    }
    tcf_op_t a = want("add", 0, TCF_OP_ADD, TCF_DT_F32, 4, 1, NA);
    CHECK_EQ_U64(a.out, 0x7f4ba9000000ull);
    CHECK_EQ_U64(a.in[0], 0x7f4ba8800000ull);
    CHECK_EQ_U64(a.in[1], 0x7f4ba8c00000ull);
    tcf_op_t c = want("where", 0, TCF_OP_CMP_SCALAR, TCF_DT_F32, 4, 0, NA);
    tcf_op_t w3 = want("where", 1, TCF_OP_WHERE, TCF_DT_F32, 4, NA, NA);
    CHECK_EQ_INT(c.out_dt, TCF_DT_BOOL);
    CHECK_EQ_INT(w3.in_dt[0], TCF_DT_BOOL);
    CHECK_EQ_U64(w3.in[0], c.out);          /* the mask x > 0 feeds where */
    CHECK_EQ_U64(w3.out, 0x7f4ba9400000ull);
    CHECK_EQ_U64(w3.in[2], 0x7f4ba8c00000ull);
    tcf_op_t h = want("half", 0, TCF_OP_CAST, TCF_DT_F32, 8, NA, NA);
    CHECK(h.in_dt[0] == TCF_DT_F32 && h.out_dt == TCF_DT_F16);
    tcf_op_t c0 = want("bf16mul", 0, TCF_OP_CAST, TCF_DT_F32, 8, NA, NA);
    tcf_op_t c1 = want("bf16mul", 1, TCF_OP_CAST, TCF_DT_F32, 8, NA, NA);
    tcf_op_t m = want("bf16mul", 2, TCF_OP_MUL, TCF_DT_BF16, 8, NA, NA);
    CHECK(c0.out_dt == TCF_DT_BF16 && m.in_dt[0] == TCF_DT_BF16 && m.out_dt == TCF_DT_BF16);
    CHECK(m.in[0] == c0.out && m.in[1] == c1.out && m.out == 0x7f4ba9600000ull);
    tcf_op_t ip = want("inplace_mul", 0, TCF_OP_MUL, TCF_DT_F32, 4, 2, NA);
    CHECK(ip.out == ip.in[0] && ip.out == 0x7f4ba9000000ull);
    tcf_op_t g0 = want("manual_gelu", 0, TCF_OP_MUL, TCF_DT_F32, 4, NA, NA);
    tcf_op_t g6 = want("manual_gelu", 6, TCF_OP_ADD, TCF_DT_F32, 4, NA, NA);
    tcf_op_t g7 = want("manual_gelu", 7, TCF_OP_MUL, TCF_DT_F32, 4, NA, NA);
    CHECK(g7.in[0] == g0.out && g7.in[1] == g6.out);
    CHECK_EQ_U64(want("manual_gelu", 4, TCF_OP_MUL, TCF_DT_F32, 4, NA, NA).s[0].bits, 0x3f4c422a);
}

TEST(part2_probe_ops_in_three_dtypes)
{
    enum { V = 0, U = TCF_LOOP_UNROLLED, C = TCF_LOOP_CAST };
    static const struct { const char *op; tcf_op_kind_t k; int loop, sarg, mode, vec4; float s0, s1; } w[] = {
        { "add", TCF_OP_ADD, V, 0, 0, 0, 1, NA }, { "sub", TCF_OP_ADD, V, 0, 0, 0, -1, NA },
        { "add_alpha", TCF_OP_ADD, V, 0, 0, 0, 2.5f, NA },
        { "add_scalar", TCF_OP_ADD, V, TCF_SARG_OTHER, 0, 0, 1, 1.25f },
        { "rsub_scalar", TCF_OP_ADD, V, TCF_SARG_SELF, 0, 0, -1, 2 },
        { "mul", TCF_OP_MUL, V, 0, 0, 0, NA, NA }, { "mul_scalar", TCF_OP_MUL, V, TCF_SARG_A, 0, 0, 0.5f, NA },
        { "div", TCF_OP_DIV, V, 0, 0, 0, NA, NA },
        { "div_scalar", TCF_OP_MUL, V, TCF_SARG_B, 0, 0, 1.0f / 3.0f, NA },  /* b = 1/3 in opmath */
        { "cpu_div", TCF_OP_DIV, V, TCF_SARG_A, 0, 0, 2, NA },
        { "neg", TCF_OP_NEG, V, 0, 0, 0, NA, NA }, { "reciprocal", TCF_OP_RECIPROCAL, V, 0, 0, 0, NA, NA },
        { "exp", TCF_OP_EXP, V, 0, 0, 0, NA, NA }, { "log", TCF_OP_LOG, V, 0, 0, 0, NA, NA },
        { "tanh", TCF_OP_TANH, V, 0, 0, 0, NA, NA }, { "sigmoid", TCF_OP_SIGMOID, V, 0, 0, 0, NA, NA },
        { "silu", TCF_OP_SILU, V, 0, 0, 0, NA, NA },
        { "relu", TCF_OP_CLAMP, V, 0, TCF_CLAMP_MIN, 0, 0, NA },
        { "clamp", TCF_OP_CLAMP, V, 0, TCF_CLAMP_BOTH, 0, -1, 1 },
        { "clamp_min", TCF_OP_CLAMP, V, 0, TCF_CLAMP_MIN, 0, -1, NA },
        { "clamp_max", TCF_OP_CLAMP, V, 0, TCF_CLAMP_MAX, 0, 1, NA },
        { "gelu", TCF_OP_GELU_ERF, V, 0, 0, 0, NA, NA }, { "gelu_tanh", TCF_OP_GELU_TANH, V, 0, 0, 0, NA, NA },
        { "pow2", TCF_OP_POW2, V, 0, 0, 0, NA, NA }, { "pow3", TCF_OP_POW3, V, 0, 0, 0, NA, NA },
        { "powm2", TCF_OP_POWM2, V, 0, 0, 0, NA, NA }, { "pow2.5", TCF_OP_POW, V, 0, 0, 0, 2.5f, NA },
        { "sqrt", TCF_OP_SQRT, V, 0, 0, 0, NA, NA }, { "rsqrt", TCF_OP_RSQRT, V, 0, 0, 0, NA, NA },
        { "abs", TCF_OP_ABS, V, 0, 0, 0, NA, NA },
        { "ge", TCF_OP_CMP_SCALAR, V, 0, TCF_CMP_GE, 1, 0.5f, NA },   /* bool out: vec 4 */
        { "gt", TCF_OP_CMP_SCALAR, V, 0, TCF_CMP_GT, 1, 0.5f, NA },
        { "le", TCF_OP_CMP_SCALAR, V, 0, TCF_CMP_LE, 1, 0.5f, NA },
        { "lt", TCF_OP_CMP_SCALAR, V, 0, TCF_CMP_LT, 1, 0.5f, NA },
        { "eq", TCF_OP_CMP_SCALAR, V, 0, TCF_CMP_EQ, 1, 0.5f, NA },
        { "ne", TCF_OP_CMP_SCALAR, V, 0, TCF_CMP_NE, 1, 0.5f, NA },
        { "where", TCF_OP_WHERE, V, 0, 0, 0, NA, NA }, { "addcmul", TCF_OP_ADDCMUL, V, 0, 0, 0, 0.1f, NA },
        { "unaligned_add", TCF_OP_ADD, U, 0, 0, 0, 1, NA }, { "unaligned_tanh", TCF_OP_TANH, U, 0, 0, 0, NA, NA },
        { "to_float", TCF_OP_CAST, C, 0, 0, 0, NA, NA }, { "bool_to", TCF_OP_CAST, C, 0, 0, 0, NA, NA },
    };
    static const struct { const char *p; tcf_dtype_t t; } dts[] = {
        { "float16", TCF_DT_F16 }, { "bfloat16", TCF_DT_BF16 }, { "float32", TCF_DT_F32 } };
    for (size_t d = 0; d < 3; d++)
        for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
            char mark[40];
            snprintf(mark, sizeof mark, "%s_%s", dts[d].p, w[i].op);
            tcf_dtype_t t = dts[d].t, res = w[i].k == TCF_OP_CMP_SCALAR ? TCF_DT_BOOL : t;
            if (!find(mark, 0)) {             /* x.float() of a float tensor launches nothing */
                CHECK(!strcmp(mark, "float32_to_float"));
                continue;
            }
            int vec = w[i].loop != V ? 1 : w[i].vec4 || t == TCF_DT_F32 ? 4 : 8;
            if (!strcmp(w[i].op, "to_float"))
                t = res = TCF_DT_F32;          /* direct_copy's lambda takes the output dtype */
            tcf_op_t op = want(mark, 0, w[i].k, t, vec, w[i].s0, w[i].s1);
            CHECK_EQ_INT(op.loop, w[i].loop ? w[i].loop : TCF_LOOP_VEC);
            CHECK_EQ_INT(op.sarg, w[i].sarg);
            CHECK_EQ_INT(op.mode, w[i].mode);
            CHECK_EQ_INT(op.out_dt, res);
            CHECK_EQ_INT(op.in_dt[0], !strcmp(w[i].op, "bool_to") || !strcmp(w[i].op, "where")
                                      ? TCF_DT_BOOL : dts[d].t);
            if (w[i].loop == U)             /* x[1:]: every pointer one element off alignment */
                CHECK_EQ_U64(op.in[0] % 16, (t == TCF_DT_F32 ? 4 : 2));
        }
    tcf_op_t a = want("mixed_half_plus_float", 0, TCF_OP_ADD, TCF_DT_F32, 1, 1, NA);
    CHECK(a.loop == TCF_LOOP_CAST && a.in_dt[0] == TCF_DT_F16 && a.in_dt[1] == TCF_DT_F32 &&
          a.out_dt == TCF_DT_F32);
    tcf_op_t m = want("mixed_bf16_mul_float", 0, TCF_OP_MUL, TCF_DT_F32, 1, NA, NA);
    CHECK(m.loop == TCF_LOOP_CAST && m.in_dt[0] == TCF_DT_BF16 && m.in_dt[1] == TCF_DT_F32);
    tcf_op_t hb = want("half_to_bf16", 0, TCF_OP_CAST, TCF_DT_BF16, 1, NA, NA);
    CHECK(hb.in_dt[0] == TCF_DT_F16 && hb.out_dt == TCF_DT_BF16);
    tcf_op_t bh = want("bf16_to_half", 0, TCF_OP_CAST, TCF_DT_F16, 1, NA, NA);
    CHECK(bh.in_dt[0] == TCF_DT_BF16 && bh.out_dt == TCF_DT_F16);
    tcf_op_t fb = want("float_to_bf16", 0, TCF_OP_CAST, TCF_DT_F32, 8, NA, NA);
    CHECK(fb.loop == TCF_LOOP_VEC && fb.out_dt == TCF_DT_BF16);
    /* scalars kept in T are T's bits: half 0.5 is 0x3800, bf16 2.5 is 0x4020 */
    CHECK_EQ_U64(want("float16_ge", 0, TCF_OP_CMP_SCALAR, TCF_DT_F16, 4, NA, NA).s[0].bits, 0x3800);
    CHECK_EQ_U64(want("bfloat16_pow2.5", 0, TCF_OP_POW, TCF_DT_BF16, 8, NA, NA).s[0].bits, 0x4020);
}

TEST(refusals_name_the_reason)
{
    static const struct { const char *needle; tcf_decode_status_t st; } w[] = {
        { "13reduce_kernelI", TCF_DECODE_REDUCTION },          /* sum, row sum */
        { "softmax_warp_forward", TCF_DECODE_REDUCTION },      /* decode_reduce.h: a row softmax */
        { "vectorized_layer_norm_kernel", TCF_DECODE_REDUCTION },   /* test_layernorm.c's */
        { "sm80_xmma_gemm", TCF_DECODE_NOT_ELEMENTWISE },      /* cuBLAS, cuLaunchKernelEx */
        { "nvjet_sm90", TCF_DECODE_NOT_ELEMENTWISE },
        { "distribution_elementwise_grid_stride_kernel", TCF_DECODE_NOT_ELEMENTWISE }, /* randn */
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        int seen = 0;
        for (size_t k = 0; k < nrec; k++) {
            tcf_op_t op;
            if (!strstr(recs[k].name, w[i].needle))
                continue;
            seen++;
            tcf_decode_status_t st = dec(&recs[k], &op);
            if (!check_report(st == w[i].st, __FILE__, __LINE__, recs[k].mark, tcf_decode_reason(st)))
                break;
        }
        CHECK(seen > 0);
    }
}

/* The strided loop (x.t() + y, a bias add) decodes where the recording kept its bytes; the
 * shared log kept 96 of them (part 1), which its layout outruns: truncated, not misread.
 * tests/unit/test_decode_strided.c checks it on the traces, which keep every byte. */
TEST(strided_loop_decodes_or_is_truncated)
{
    size_t seen = 0, ok = 0;
    for (size_t k = 0; k < nrec; k++) {
        tcf_op_t op;
        if (!strstr(recs[k].name, "_ZN2at6native18elementwise_kernelI"))
            continue;
        seen++;
        tcf_decode_status_t st = dec(&recs[k], &op);
        if (st == TCF_DECODE_OK) {
            ok++;
            CHECK(op.loop == TCF_LOOP_STRIDED || op.loop == TCF_LOOP_STRIDED_CAST);
            CHECK(op.it.ndim >= 1);
        } else {
            check_report(st == TCF_DECODE_TRUNCATED || st == TCF_DECODE_UNKNOWN_FUNCTOR ||
                         st == TCF_DECODE_UNSUPPORTED_DTYPE, __FILE__, __LINE__, recs[k].mark,
                         tcf_decode_reason(st));
        }
    }
    CHECK(seen > 0);   /* part 1 holds a few; none with all its bytes */
}

static int verbose;

/* Every contiguous elementwise launch of the fixture decodes (-v: which rule, which T, loop). */
TEST(coverage)
{
    size_t ew = 0, ok = 0, nrule = tcf_decode_rule_count();
    unsigned seen[64][3] = { { 0 } };       /* rule x {vec, unrolled, cast}: dtype bit masks */
    for (size_t k = 0; k < nrec; k++) {
        tcf_op_t op;
        if (!is_contig_elementwise(recs[k].name))
            continue;
        ew++;
        tcf_decode_status_t st = dec(&recs[k], &op);
        if (!check_report(st == TCF_DECODE_OK, __FILE__, __LINE__, recs[k].name, tcf_decode_reason(st)))
            continue;
        ok++;
        CHECK(op.out >> 40 == 0x7f && op.in[0] >> 40 == 0x7f);  /* device addresses, here */
        for (size_t r = 0; r < nrule && r < 64; r++)
            if (!strcmp(tcf_decode_rule_name(r), op.rule))
                seen[r][op.loop - 1] |= 1u << op.compute_dt;
    }
    printf("test_decode: coverage: %zu/%zu contiguous elementwise launches decoded (%zu launches "
           "in the fixture)\n", ok, ew, nrec);
    for (size_t r = 0; r < nrule && r < 64; r++) {
        char line[256];
        int n = snprintf(line, sizeof line, "  %-11s", tcf_decode_rule_name(r));
        for (int l = 0; l < 3; l++)
            for (int d = TCF_DT_F32; d <= TCF_DT_BOOL; d++)
                if (seen[r][l] & 1u << d)
                    n += snprintf(line + n, sizeof line - (size_t)n, " %s/%s",
                                  tcf_decode_dtype_name((tcf_dtype_t)d), l == 0 ? "vec" : l == 1 ? "unrolled" : "cast");
        if (verbose)
            printf("%s\n", line);
        /* no row without a recorded witness: here, or in a model's trace: sin and cos,
         * which recorded_sin_and_cos decodes, and fill, which recorded_fills does */
        int in_trace = !strcmp(tcf_decode_rule_name(r), "sin") || !strcmp(tcf_decode_rule_name(r), "cos") ||
                       !strcmp(tcf_decode_rule_name(r), "fill");
        CHECK(seen[r][0] | seen[r][1] | seen[r][2] | in_trace);
    }
    CHECK_EQ_INT(ok, ew);
}

/* Wrong sizes, short buffers, broken names and launch shapes are refused, never crash. */
TEST(corrupted_inputs_are_refused)
{
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (size_t k = 0; k < nrec; k++) {
        tcf_op_t op;
        if (dec(&recs[k], &op) != TCF_DECODE_OK)
            continue;
        rec_t *r = malloc(sizeof *r);
        size_t nl = strlen(recs[k].name);
        char *name = strdup(recs[k].name);
        static const struct { int param, delta; } sz[] = { { 0, 4 }, { 2, -8 }, { 2, 8 }, { 1, 64 } };
        for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {  /* N 8 bytes, data 1 ptr off, huge functor */
            *r = recs[k];
            r->size[sz[i].param] += (uint32_t)sz[i].delta;
            CHECK_EQ_INT(dec(r, &op), TCF_DECODE_BAD_LAYOUT);
        }
        *r = recs[k];
        r->nparams--;
        CHECK_EQ_INT(dec(r, &op), TCF_DECODE_BAD_LAYOUT);
        *r = recs[k];
        r->off[2] += 4;                      /* the pointer array is 8-aligned */
        CHECK_EQ_INT(dec(r, &op), TCF_DECODE_BAD_LAYOUT);
        for (uint32_t len = 0; len < recs[k].len; len++) {
            *r = recs[k], r->len = len;
            CHECK_EQ_INT(dec(r, &op), TCF_DECODE_TRUNCATED);
        }
        *r = recs[k], r->block[0] = 256;
        CHECK_EQ_INT(dec(r, &op), TCF_DECODE_BAD_LAUNCH);
        *r = recs[k], r->grid[1] = 2;
        CHECK_EQ_INT(dec(r, &op), TCF_DECODE_BAD_LAUNCH);
        *r = recs[k], memset(r->bytes, 0, 4);  /* N = 0 */
        CHECK_EQ_INT(dec(r, &op), TCF_DECODE_BAD_VALUE);
        *r = recs[k];
        for (size_t cut = 0; cut < nl; cut++) {  /* every strict prefix of the name */
            name[cut] = 0;
            r->name = name;
            if (!CHECK(dec(r, &op) != TCF_DECODE_OK))
                break;
            name[cut] = recs[k].name[cut];
        }
        for (int i = 0; i < 300; i++) {      /* random characters: any answer but a crash */
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            name[rng % nl] = (char)(33 + (rng >> 32) % 94);
            r->name = name;
            if (dec(r, &op) == TCF_DECODE_OK)
                CHECK(op.kind != TCF_OP_NONE && op.nin >= 1 && op.nin <= 3 && op.n > 0);
            if (i % 10 == 9)
                memcpy(name, recs[k].name, nl);
        }
        free(name);
        free(r);
    }
    tcf_op_t op;
    tcf_decode_launch_t l = { 0 };
    CHECK_EQ_INT(tcf_decode_launch(&l, &op), TCF_DECODE_BAD_ARGS);      /* no name */
    CHECK_EQ_INT(tcf_decode_launch(NULL, &op), TCF_DECODE_BAD_ARGS);
    l.name = "x", l.nparams = 3;
    CHECK_EQ_INT(tcf_decode_launch(&l, &op), TCF_DECODE_BAD_ARGS);      /* no layout arrays */
    CHECK_EQ_INT(tcf_decode_launch(&l, NULL), TCF_DECODE_BAD_ARGS);
}

/* Out-of-range values, foreign dtypes and functors, from real launches edited in one place. */
static tcf_decode_status_t edited(const char *mark, int idx, const char *from, const char *to,
                                  int poff, int pbytes, uint32_t value, tcf_op_t *op)
{
    rec_t *r = malloc(sizeof *r);
    const rec_t *o = find(mark, idx);
    char name[1024];
    if (!CHECK(o != NULL && r != NULL)) {
        free(r);
        return TCF_DECODE_NSTATUS;
    }
    *r = *o;
    snprintf(name, sizeof name, "%s", o->name);
    char *at = from ? strstr(name, from) : NULL;
    if (at && strlen(from) == strlen(to))
        memcpy(at, to, strlen(to));
    r->name = name;
    if (pbytes)
        memcpy(r->bytes + poff, &value, (size_t)pbytes);
    tcf_decode_status_t st = dec(r, op);
    free(r);
    return st;
}

TEST(edited_launches)
{
    tcf_op_t op;
    /* clamp's mode @ functor+0 (functor at 8): 3 and -1 are not ClampLimits */
    CHECK_EQ_INT(edited("clamp", 0, NULL, NULL, 8, 4, 3, &op), TCF_DECODE_BAD_VALUE);
    CHECK_EQ_INT(edited("clamp", 0, NULL, NULL, 8, 4, UINT32_MAX, &op), TCF_DECODE_BAD_VALUE);
    CHECK_EQ_INT(edited("gt", 0, NULL, NULL, 8, 4, 4, &op), TCF_DECODE_BAD_VALUE);
    CHECK_EQ_INT(edited("add", 0, "addIfEE", "addIdEE", 0, 0, 0, &op), TCF_DECODE_UNSUPPORTED_DTYPE);
    CHECK_EQ_INT(edited("add", 0, "addIfEE", "addIlEE", 0, 0, 0, &op), TCF_DECODE_UNSUPPORTED_DTYPE);
    CHECK_EQ_INT(edited("tanh", 0, "16tanh_", "16sinh_", 0, 0, 0, &op), TCF_DECODE_UNKNOWN_FUNCTOR);
    CHECK_EQ_INT(edited("add", 0, "Lm3E", "Lm2E", 0, 0, 0, &op), TCF_DECODE_UNKNOWN_FUNCTOR);
    /* the cast loop's loader: dtype 7 (double) is not ours; a wrong element size is refused */
    CHECK_EQ_INT(edited("mixed_half_plus_float", 0, NULL, NULL, 36, 1, 7, &op), TCF_DECODE_UNSUPPORTED_DTYPE);
    CHECK_EQ_INT(edited("mixed_half_plus_float", 0, NULL, NULL, 40, 4, 4, &op), TCF_DECODE_BAD_VALUE);
    /* half scalars widen exactly: subnormal, infinities, NaN, -0 (float16_ge: rhs @ 8+4) */
    static const struct { uint16_t h; float f; } hw[] = {
        { 0x0001, 5.9604645e-8f }, { 0x03ff, 6.0975552e-5f }, { 0x7bff, 65504 },
        { 0x7c00, INFINITY }, { 0xfc00, -INFINITY }, { 0x8000, -0.0f }, { 0x3555, 0.33325195f } };
    for (size_t i = 0; i < sizeof hw / sizeof hw[0]; i++) {
        CHECK_EQ_INT(edited("float16_ge", 0, NULL, NULL, 12, 2, hw[i].h, &op), TCF_DECODE_OK);
        CHECK(op.s[0].f == hw[i].f && signbit(op.s[0].f) == signbit(hw[i].f));
    }
    CHECK_EQ_INT(edited("float16_ge", 0, NULL, NULL, 12, 2, 0x7e00, &op), TCF_DECODE_OK);
    CHECK(isnan(op.s[0].f));
}

/* Capture decodes a kernel's name and layout once (tcf_decode_kernel) and each launch's
 * bytes with it (tcf_decode_apply): that must be exactly tcf_decode_launch, for the launch
 * the kernel was first seen with and for every other launch of the same kernel. */
TEST(halves_agree_with_the_whole)
{
    for (size_t k = 0; k < nrec; k++) {
        const rec_t *r = &recs[k];
        tcf_decode_launch_t l = launch_of(r);
        tcf_decode_kernel_t dk;
        tcf_op_t whole, half;
        tcf_decode_status_t kst = tcf_decode_kernel(&l, &dk), ws = tcf_decode_launch(&l, &whole);
        if (kst != TCF_DECODE_OK) {
            CHECK_EQ_INT(kst, ws);  /* a kernel-level refusal is the whole's refusal */
            continue;
        }
        for (size_t j = 0; j < nrec; j++) {
            const rec_t *o = &recs[j];
            if (strcmp(o->name, r->name) || o->nparams != r->nparams ||
                memcmp(o->off, r->off, r->nparams * sizeof *r->off) ||
                memcmp(o->size, r->size, r->nparams * sizeof *r->size))
                continue;
            tcf_decode_launch_t ol = launch_of(o);
            ws = tcf_decode_launch(&ol, &whole);
            tcf_decode_status_t hs = tcf_decode_apply(&dk, ol.params, ol.params_len, ol.grid,
                                                      ol.block, &half);
            CHECK_EQ_INT(hs, ws);
            CHECK(!memcmp(&whole, &half, sizeof whole));
            uint32_t bad_block[3] = { 256, 1, 1 };
            CHECK_EQ_INT(tcf_decode_apply(&dk, ol.params, ol.params_len, ol.grid, bad_block, &half),
                         ol.params_len >= dk.span ? TCF_DECODE_BAD_LAUNCH : TCF_DECODE_TRUNCATED);
            if (dk.span && ol.params_len >= dk.span)  /* one byte short of the layout */
                CHECK_EQ_INT(tcf_decode_apply(&dk, ol.params, (uint32_t)dk.span - 1, ol.grid,
                                              ol.block, &half), TCF_DECODE_TRUNCATED);
        }
    }
    tcf_op_t op;
    uint32_t g[3] = { 1, 1, 1 }, b[3] = { 128, 1, 1 };
    tcf_decode_kernel_t none = { 0 };
    CHECK_EQ_INT(tcf_decode_apply(&none, NULL, 0, g, b, &op), TCF_DECODE_BAD_ARGS);
    CHECK_EQ_INT(tcf_decode_kernel(NULL, &none), TCF_DECODE_BAD_ARGS);
}

/* The functor bytes marked never read (an empty functor's, padding around a member or a
 * scalar) are bytes decoding ignores: overwritten, every recorded contiguous launch
 * decodes to the same op; a scalar's bytes are never marked. */
TEST(functor_unread_bytes_change_nothing)
{
    size_t n = 0, marked = 0;
    for (size_t k = 0; k < nrec; k++) {
        const rec_t *r = &recs[k];
        tcf_decode_launch_t l = launch_of(r);
        tcf_decode_kernel_t dk;
        tcf_op_t op, op2;
        if (!is_contig_elementwise(r->name) || tcf_decode_kernel(&l, &dk) != TCF_DECODE_OK ||
            tcf_decode_launch(&l, &op) != TCF_DECODE_OK)
            continue;
        uint8_t mark[256] = { 0 }, b[256];
        if (!CHECK(r->len <= sizeof b) ||
            !CHECK_EQ_INT(tcf_decode_functor_unread(&dk, r->len, mark), 0))
            continue;
        memcpy(b, r->bytes, r->len);
        for (uint32_t i = 0; i < r->len; i++) {
            if (!mark[i])
                continue;
            CHECK(i >= dk.foff && i < dk.doff);
            b[i] ^= 0xa5;
            marked++;
        }
        for (unsigned i = 0; i < op.nscalar; i++)
            for (uint32_t q = 0; q < dk.ssz[i]; q++)
                CHECK(!mark[dk.foff + dk.soff[i] + q]);
        l.params = b;
        if (CHECK_EQ_INT(tcf_decode_launch(&l, &op2), TCF_DECODE_OK))
            CHECK(!memcmp(&op, &op2, sizeof op));
        n++;
    }
    CHECK(n >= 100 && marked > 0);
    printf("  functor bytes never read: %zu bytes over %zu contiguous launches\n", marked, n);
    tcf_decode_kernel_t none = { 0 };
    uint8_t m[8];
    CHECK_EQ_INT(tcf_decode_functor_unread(&none, sizeof m, m), -1);
}

static int sin_cos(const char *name)
{
    return strstr(name, "15sin_kernel_cuda") || strstr(name, "15cos_kernel_cuda");
}

/* The rotary embedding's emb.cos() and emb.sin(), float, as a real model launched them:
 * each decodes to its kind, and nothing else of the trace's names is taken for them. */
TEST(recorded_sin_and_cos)
{
    unsigned n[2] = { 0, 0 };
    load_launches("tests/fixtures/trace-hf-llama-fuse.jsonl", sin_cos);
    for (size_t i = 0; i < nls; i++) {
        const kern_t *k = &ks[ls[i].k];
        tcf_decode_launch_t d = fixture_decode_launch(&ls[i], ls[i].params, ls[i].len, ls[i].grid);
        tcf_op_t op;
        int is_sin = strstr(k->name, "15sin_kernel_cuda") != NULL;
        if (!CHECK_EQ_INT(tcf_decode_launch(&d, &op), TCF_DECODE_OK))
            continue;
        CHECK_EQ_INT(op.kind, is_sin ? TCF_OP_SIN : TCF_OP_COS);
        CHECK(op.compute_dt == TCF_DT_F32 && op.out_dt == TCF_DT_F32 && op.in_dt[0] == TCF_DT_F32);
        CHECK(op.nin == 1 && op.nscalar == 0 && op.vec == 4 && op.n == 262144);
        CHECK(fixture_device_ptr(op.out) && fixture_device_ptr(op.in[0]) && op.out != op.in[0]);
        n[is_sin]++;
    }
    CHECK(n[0] == 4 && n[1] == 4);   /* two forwards of two calls each */
    free_launches();
}

static int fills(const char *name)
{
    return strstr(name, "11FillFunctorI") != NULL;
}

/* FillFunctor<T> as the training step launched it under torch.use_deterministic_algorithms
 * (every torch.empty filled before the kernel that writes it): float and bf16 with NaN,
 * bool with true, each decoded to a FILL with no input whose value keeps T's bits; the
 * int64 fills (the integer maximum) are not a dtype we generate. */
TEST(recorded_fills)
{
    unsigned n[TCF_DT_BOOL + 1] = { 0 }, longs = 0, nans = 0;
    load_launches("tests/fixtures/trace-train.jsonl", fills);
    for (size_t i = 0; i < nls; i++) {
        const kern_t *k = &ks[ls[i].k];
        tcf_decode_launch_t d = fixture_decode_launch(&ls[i], ls[i].params, ls[i].len, ls[i].grid);
        tcf_op_t op;
        tcf_decode_status_t st = tcf_decode_launch(&d, &op);
        if (strstr(k->name, "11FillFunctorIlEE")) {
            CHECK_EQ_INT(st, TCF_DECODE_UNSUPPORTED_DTYPE);
            longs++;
            continue;
        }
        if (!CHECK_EQ_INT(st, TCF_DECODE_OK))
            continue;
        tcf_dtype_t t = op.compute_dt;
        CHECK_EQ_INT(op.kind, TCF_OP_FILL);
        CHECK(op.nin == 0 && op.nscalar == 1 && op.out_dt == t && op.res_dt == t &&
              op.s[0].dt == t && op.sarg == TCF_SARG_NONE && op.n > 0);
        CHECK(fixture_device_ptr(op.out) && op.in[0] == 0);
        /* the value as the functor holds it, widened exactly: NaN (deterministic mode's),
         * 0 and 1 (zeros, ones) */
        if (t == TCF_DT_F32 || t == TCF_DT_BF16) {
            uint32_t nan = t == TCF_DT_F32 ? 0x7fc00000u : 0x7fc0u;
            uint32_t one = t == TCF_DT_F32 ? 0x3f800000u : 0x3f80u;
            CHECK(op.s[0].bits == nan || op.s[0].bits == 0 || op.s[0].bits == one);
            CHECK((op.s[0].bits == nan) == (op.s[0].f != op.s[0].f));
            CHECK(op.s[0].bits != one || op.s[0].f == 1.0f);
            nans += op.s[0].bits == nan;
        }
        if (t == TCF_DT_BOOL)
            CHECK(op.s[0].bits <= 1);
        if (t <= TCF_DT_BOOL)
            n[t]++;
    }
    printf("test_decode: recorded fills: %u float, %u bf16, %u bool decoded (%u of NaN); %u int64 "
           "refused\n", n[TCF_DT_F32], n[TCF_DT_BF16], n[TCF_DT_BOOL], nans, longs);
    CHECK(n[TCF_DT_F32] > 100 && n[TCF_DT_BF16] > 10 && n[TCF_DT_BOOL] > 0 && longs > 0 && nans > 100);
    free_launches();
}

/* A fill through a strided view (`x[:, ::2].zero_()`): no recorded witness yet, so its
 * launch is built here as the strided loop lays out its parameters (OffsetCalculator<1>,
 * data[1], FillFunctor<float>, the closure's pointer), with the name PyTorch's
 * CUDAFunctor_add<BFloat16> strided kernel has, its functor swapped. */
TEST(strided_fill)
{
    static const char name[] = "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_"
                               "nocastINS0_11FillFunctorIfEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_";
    uint32_t off[2] = { 0, 8 }, size[2] = { 4, 432 };
    uint8_t p[440];
    memset(p, 0xcd, sizeof p);                       /* the closure's padding: stack bytes */
    uint32_t n = 2048, sizes[2] = { 64, 32 }, strides[2] = { 8, 1024 }, dims = 2, m1 = 0, sh = 0;
    uint32_t value = 0x7fc00001u;                    /* a NaN with a payload */
    uint64_t out = 0x7f0000100000ull;
    memcpy(p, &n, 4);
    memcpy(p + 8, &dims, 4);
    for (unsigned d = 0; d < 2; d++) {
        tcf_int_divider(sizes[d], &m1, &sh);
        uint32_t div[3] = { sizes[d], m1, sh };
        memcpy(p + 12 + 12 * d, div, 12);
        memcpy(p + 8 + 304 + 4 * d, &strides[d], 4);
    }
    memcpy(p + 8 + 408, &out, 8);                     /* data[1]: the output */
    memcpy(p + 8 + 416, &value, 4);                   /* FillFunctor<float>{value} */
    tcf_decode_launch_t d = { name, 2, off, size, p, sizeof p, { 4, 1, 1 }, { 128, 1, 1 } };
    tcf_op_t op;
    if (!CHECK_EQ_INT(tcf_decode_launch(&d, &op), TCF_DECODE_OK))
        return;
    CHECK(op.kind == TCF_OP_FILL && op.loop == TCF_LOOP_STRIDED && op.nin == 0 && op.n == n);
    CHECK(op.compute_dt == TCF_DT_F32 && op.out_dt == TCF_DT_F32 && op.out == out);
    CHECK(op.nscalar == 1 && op.s[0].bits == value && op.s[0].f != op.s[0].f);
    CHECK(op.it.ndim == 2 && op.it.size[0] == 64 && op.it.size[1] == 32 &&
          op.it.stride[0][0] == 8 && op.it.stride[0][1] == 1024);
    d.grid[0] = 5;                                    /* not PyTorch's grid for N */
    CHECK_EQ_INT(tcf_decode_launch(&d, &op), TCF_DECODE_BAD_LAUNCH);
}

TEST(names)
{
    for (int s = 0; s < TCF_DECODE_NSTATUS; s++) {
        CHECK(strcmp(tcf_decode_reason((tcf_decode_status_t)s), "?") != 0);
        for (int t = 0; t < s; t++)
            CHECK(strcmp(tcf_decode_reason((tcf_decode_status_t)s), tcf_decode_reason((tcf_decode_status_t)t)));
    }
    CHECK_EQ_STR(tcf_decode_reason(TCF_DECODE_NSTATUS), "?");
    CHECK_EQ_STR(tcf_decode_kind_name(TCF_OP_GELU_TANH), "GELU_TANH");
    CHECK_EQ_STR(tcf_decode_dtype_name(TCF_DT_BF16), "bf16");
    CHECK(tcf_decode_rule_count() > 0 && tcf_decode_rule_name(tcf_decode_rule_count()) == NULL);
}

int main(int argc, char **argv)
{
    verbose = argc > 1 && !strcmp(argv[1], "-v");
    load();
    RUN(part1_recorded_float_ops);
    RUN(functor_unread_bytes_change_nothing);
    RUN(part2_probe_ops_in_three_dtypes);
    RUN(refusals_name_the_reason);
    RUN(strided_loop_decodes_or_is_truncated);
    RUN(recorded_fills);
    RUN(strided_fill);
    RUN(coverage);
    RUN(corrupted_inputs_are_refused);
    RUN(edited_launches);
    RUN(halves_agree_with_the_whole);
    RUN(recorded_sin_and_cos);
    RUN(names);
    for (size_t k = 0; k < nrec; k++)
        free(recs[k].name);
    free(recs);
    return check_main_end();
}
