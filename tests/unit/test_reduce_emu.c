/* The generated row reductions (codegen/gen_reduce.c) run on the CPU against a model of
 * PyTorch 2.11's order (tests/unit/reduce_emu.hpp, a port of docs/PYTORCH-REDUCE.md's
 * emu.py, which reproduced 16 675 eager results bitwise on an H100): every op and dtype
 * pair PyTorch launches, on the configurations setReduceConfig picks for row lengths
 * 1..20000 and 1..300 rows (thread-local accumulators only, lanes < 32 of a warp, shared
 * memory above 32 lanes, warps sharing a row), contiguous and misaligned rows (each row
 * its own vector shift), rows located through two output dims, edge values (+-0, +-inf,
 * NaN payloads, subnormals), and a spliced prologue and row pass (an RMSNorm's square and
 * broadcast multiply). Each distinct kernel is compiled once as C++ (c++);
 * the test is skipped, and says so, when no C++ compiler is found. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "emu_run.h"
#include "codegen/internal.h"
#include "codegen/reduce.h"
#include "recognize/decode_reduce.h"

#define F TCF_DT_F32
#define H TCF_DT_F16
#define B TCF_DT_BF16
#define SRC_CAP (1u << 16)
#define MAX_SRC 256

static const char *const dtn[] = { "none", "f32", "f16", "bf16" };
static char *srcs[MAX_SRC];
static unsigned nsrc, ncases;
static FILE *kfile;          /* the kernels, in namespaces: the C++ file itself */
static FILE *tfile;          /* the table of cases, written after them (emu_text_t's) */

/* The splice: the reduced f32 tensor is x.float()**2 of a bf16 x in buf[0] (same element
 * indices), and every element of the row gets x * result in buf[1] (f32). */
static const tcf_reduce_splice_t rms = {
    .prologue = "  const float f = tcf_b2f(((const tcf_b *)a.buf[0])[r.in_off / 4 + j]);\n"
                "  return __fmul_rn(f, f);",
    .row_pass = "  const tcf_b *x = (const tcf_b *)a.buf[0];\n"
                "  float *y = (float *)a.buf[1];\n"
                "  for (unsigned j = g; j < a.num_inputs; j += TCF_G) {\n"
                "    const unsigned long long e = r.in_off / 4 + j;\n"
                "    y[e] = __fmul_rn(tcf_b2f(x[e]), v);\n"
                "  }",
};

/* The index of s's kernel among the sources written, adding it. */
static int kernel_of(const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp)
{
    char *src = malloc(SRC_CAP);
    int n = tcf_reduce_source(s, sp, src, SRC_CAP);
    if (!CHECK(n > 0)) {
        free(src);
        return -1;
    }
    for (unsigned i = 0; i < nsrc; i++)
        if (!strcmp(srcs[i], src)) {
            free(src);
            return (int)i;
        }
    if (nsrc == MAX_SRC) {
        free(src);
        return -1;
    }
    if (emu_put_kernel(kfile, src, nsrc)) {
        free(src);
        return -1;
    }
    srcs[nsrc] = src;
    return (int)nsrc++;
}

/* One case: the config setReduceConfig picks for K x M, the kernel for it, a table row. */
static void add_case(tcf_red_op_t op, int root, tcf_dtype_t in, tcf_dtype_t outdt, uint32_t K,
                     uint32_t M, int sliced, unsigned kind, unsigned odims, int spliced)
{
    tcf_dtype_t x_dt = in;      /* spliced: x in memory; the reduced tensor is f32 */
    if (spliced)
        in = F;
    tcf_dtype_t acc = op == TCF_RED_AMAX || op == TCF_RED_AMIN ? in : F;
    uint32_t ivs = in != F && (op == TCF_RED_SUM || op == TCF_RED_MEAN) ? 8 : 4;
    tcf_reduce_cfg_t c;
    if (!CHECK(tcf_reduce_config_rule(K, M, tcf_dtype_size(acc), ivs, 0, 0, &c) == 0))
        return;
    tcf_reduce_shape_t s = { .op = op, .root = (uint8_t)root, .in_dt = in, .out_dt = outdt,
                             .acc_dt = acc, .bw = (uint16_t)c.block_width,
                             .bh = (uint16_t)c.block_height, .vt0 = 4, .ivs = (uint8_t)ivs,
                             .vectorize = c.vectorize_input, .split_y = c.input_mult[1] != 0,
                             .odims = (uint8_t)odims };
    int ki = kernel_of(&s, spliced ? &rms : NULL);
    if (ki < 0)
        return;
    /* rows: one dim, K (+1 when sliced) apart; two dims: a gap row after every 3 */
    uint32_t rs = K + (sliced ? 1 : 0), o0 = odims == 2 ? 3 : M, r1 = odims == 2 ? 4 * rs : 0;
    if (odims == 2 && M % 3)
        return;
    fprintf(tfile, "  { \"%s%s_%s_%s_K%u_M%u%s_kind%u_d%u%s\", k%d::run, %d, %d, %d, %d, %d, "
                   "%u, %u, %u, %u, 4, %u, %u, %u, %u, { %u, %u }, { %u, %u }, %u, %u, %u, %d, %d },\n",
            tcf_reduce_op_name(op), root ? "sqrt" : "", dtn[x_dt], dtn[outdt], K, M,
            sliced ? "_sliced" : "", kind, odims, spliced ? "_spliced" : "", ki,
            op, root, in, outdt, acc, c.vectorize_input, c.input_mult[1] != 0, c.block_width,
            c.block_height, ivs, M, K, odims, o0, odims == 2 ? M / 3 : 1, rs, r1, sliced ? 1u : 0u,
            kind, ncases + 1, spliced, spliced ? (int)x_dt : 0);
    ncases++;
}

/* Row lengths and counts that reach every configuration class (§3 of the doc): bw from 1
 * to 512, bh from 1 to 256, vectorized or not, rows per warp-row or warps per row. */
static const uint32_t shapes[][2] = {
    { 1, 1 }, { 2, 3 }, { 5, 1 }, { 31, 7 }, { 33, 64 }, { 64, 1 }, { 100, 5 }, { 127, 3 },
    { 128, 1 }, { 129, 7 }, { 255, 33 }, { 1000, 3 }, { 1025, 1 }, { 2049, 2 }, { 4097, 1 },
    { 8193, 2 }, { 20000, 1 }, { 9000, 6 }, { 3, 300 },
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* The op and dtype pairs PyTorch 2.11 launches (docs/PYTORCH-REDUCE.md §1). */
static const struct { tcf_red_op_t op; int root; tcf_dtype_t in, o; } pairs[] = {
    { TCF_RED_SUM, 0, F, F }, { TCF_RED_SUM, 0, H, H }, { TCF_RED_SUM, 0, B, B },
    { TCF_RED_SUM, 0, H, F }, { TCF_RED_SUM, 0, B, F }, { TCF_RED_MEAN, 0, F, F },
    { TCF_RED_MEAN, 0, H, H }, { TCF_RED_MEAN, 0, B, B }, { TCF_RED_MEAN, 0, B, F },
    { TCF_RED_AMAX, 0, F, F }, { TCF_RED_AMAX, 0, H, H }, { TCF_RED_AMAX, 0, B, B },
    { TCF_RED_AMIN, 0, F, F }, { TCF_RED_AMIN, 0, H, H }, { TCF_RED_AMIN, 0, B, B },
    { TCF_RED_NORM2, 1, F, F }, { TCF_RED_NORM2, 0, F, F }, { TCF_RED_NORM2, 1, B, B },
};
#define NPAIRS (sizeof pairs / sizeof pairs[0])

TEST(generated_kernels_follow_the_model)
{
    emu_text_t et;
    if (emu_open(&et, "test_reduce_emu"))
        return;
    kfile = et.kf, tfile = et.tf;
    for (size_t p = 0; p < NPAIRS; p++)
        for (size_t i = 0; i < NSHAPES; i++) {
            uint32_t K = shapes[i][0], M = shapes[i][1];
            /* three pairs on every shape, the others on one shape of each class */
            if (p != 0 && p != 7 && p != 11 && K != 5 && K != 31 && K != 1000 && K != 8193)
                continue;
            unsigned edge = pairs[p].op == TCF_RED_SUM ? 2 : 1;
            add_case(pairs[p].op, pairs[p].root, pairs[p].in, pairs[p].o, K, M, 0, 0, M > 1, 0);
            add_case(pairs[p].op, pairs[p].root, pairs[p].in, pairs[p].o, K, M, 1, 0, 1, 0);
            if (K <= 4097)
                add_case(pairs[p].op, pairs[p].root, pairs[p].in, pairs[p].o, K, M, 1, edge, 1, 0);
            if (pairs[p].op == TCF_RED_SUM && K <= 4097)
                add_case(pairs[p].op, 0, pairs[p].in, pairs[p].o, K, M, 0, 1, 1, 0);
        }
    /* rows through two output dims (a gap row after every three), and the splice */
    static const uint32_t two[][2] = { { 5, 6 }, { 300, 9 }, { 1000, 3 }, { 9000, 6 } };
    for (size_t i = 0; i < 4; i++) {
        add_case(TCF_RED_SUM, 0, B, B, two[i][0], two[i][1], 1, 0, 2, 0);
        add_case(TCF_RED_AMAX, 0, H, H, two[i][0], two[i][1], 0, 1, 2, 0);
    }
    for (size_t i = 0; i < NSHAPES; i++)
        add_case(TCF_RED_MEAN, 0, B, F, shapes[i][0], shapes[i][1], i % 2, 0, 1, 1);
    printf("test_reduce_emu: %u cases over %u distinct kernels\n", ncases, nsrc);
    if (!emu_close_run(&et, "reduce", "static const emu_case cases[] = {\n",
                       "};\nint main() { return emu_main(cases, sizeof cases / sizeof cases[0]); }\n",
                       ncases))
        printf("test_reduce_emu: %u of %u cases equal to the model\n", ncases, ncases);
}

int main(void)
{
    RUN(generated_kernels_follow_the_model);
    for (unsigned i = 0; i < nsrc; i++)
        free(srcs[i]);
    return check_main_end();
}
