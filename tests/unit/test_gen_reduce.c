/* Row-reduction code generation (codegen/gen_reduce.c): the structure of the source for
 * each configuration class (which trees, which barriers, which accumulators, which
 * conversions), determinism, refusal of malformed shapes, the splice points, and NVRTC
 * compiles of every op and dtype pair on every class for sm_90, and of the bfloat16 ones
 * (whose conversions differ there) for sm_80, when NVRTC is found. That the order is
 * PyTorch's is test_reduce_emu's to check on the CPU, and tests/gpu/reduce_check.py's on
 * the GPU. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codegen/codegen.h"
#include "codegen/reduce.h"

#define F TCF_DT_F32
#define H TCF_DT_F16
#define B TCF_DT_BF16
#define CAP (1u << 16)

static char src[CAP];
static int have_nvrtc;

static tcf_reduce_shape_t shape(tcf_red_op_t op, tcf_dtype_t in, tcf_dtype_t out, unsigned bw,
                                unsigned bh, int vec, int split_y)
{
    int mm = op == TCF_RED_AMAX || op == TCF_RED_AMIN;
    return (tcf_reduce_shape_t){ .op = op, .in_dt = in, .out_dt = out, .acc_dt = mm ? in : F,
                                 .bw = (uint16_t)bw, .bh = (uint16_t)bh, .vt0 = 4,
                                 .ivs = (uint8_t)(in != F && !mm ? 8 : 4), .vectorize = (uint8_t)vec,
                                 .split_y = (uint8_t)split_y, .odims = 1 };
}

static int has(const char *s) { return strstr(src, s) != NULL; }
#define HAS(s) check_report(has(s), __FILE__, __LINE__, "source has: " s, NULL)
#define LACKS(s) check_report(!has(s), __FILE__, __LINE__, "source lacks: " s, NULL)

static int gen(const tcf_reduce_shape_t *s, const tcf_reduce_splice_t *sp)
{
    memset(src, 'x', sizeof src);
    int n = tcf_reduce_source(s, sp, src, sizeof src);
    return CHECK(n > 0 && (size_t)n == strlen(src)) ? n : -1;
}

TEST(structure_by_class)
{
    /* a row per warp-row, 32 lanes, vectorized (the Llama RMSNorm's mean) */
    tcf_reduce_shape_t s = shape(TCF_RED_MEAN, F, F, 32, 16, 1, 0);
    gen(&s, NULL);
    HAS("enum : unsigned { TCF_BW = 32, TCF_BH = 16,");
    HAS("  TCF_G = 32, TCF_ROWS = 16,");
    HAS("__launch_bounds__(512) tcf_reduce(const tcf_rargs a)");
    HAS("r.row = blockIdx.x * TCF_ROWS + ty;");
    HAS("const unsigned g = tx;");
    HAS("const unsigned shift = (unsigned)(base % (TCF_V * sizeof(tcf_in))) / sizeof(tcf_in);");
    HAS("if (tx >= shift && tx < TCF_V && true) acc[0] = tcf_red(acc[0], row[tx - shift]);");
    HAS("*(const tcf_pack<tcf_in, TCF_V, TCF_V * sizeof(tcf_in)> *)(row + first + i * TCF_V);");
    HAS("if (true && t0 + tx < end) acc[0] = tcf_red(acc[0], row[first + t0 + tx]);");
    HAS("for (int off = 16; off > 0; off >>= 1) v = tcf_comb(v, tcf_shfl(v, off));");
    HAS("return __fmul_rn(v, __uint_as_float(a.factor));");
    HAS("return __fadd_rn(a, b);");
    HAS("if (r.row < a.num_outputs && tx == 0) tcf_epi(a, r, tcf_project(a, v));");
    LACKS("__shared__ tcf_acc sm");          /* 32 lanes: shuffles only */
    LACKS("TCF_BH / 2");                     /* no block_y_reduce */
    LACKS("tcf_pro(");
    /* the order of the phases: thread, x, (y), store */
    CHECK(strstr(src, "tcf_red(acc[k], p.v[k])") < strstr(src, "tcf_shfl(v, off)"));

    /* 512 lanes sharing a row with warps (K >= 8192, M = 1): shared memory, then shuffles,
     * then block_y (one row: no effect on the order, but PyTorch runs it) */
    s = shape(TCF_RED_SUM, B, B, 512, 1, 1, 1);
    gen(&s, NULL);
    HAS("__shared__ tcf_acc sm[TCF_BW * TCF_BH];");
    HAS("for (unsigned off = TCF_BW / 2; off >= 32; off >>= 1) {");
    HAS("for (unsigned off = TCF_BH / 2; off > 0; off >>= 1) {");
    HAS("const unsigned g = tx + ty * TCF_BW;");
    HAS("if (tx >= shift && tx < TCF_V && ty == 0)");
    HAS("if (r.row < a.num_outputs && tx == 0 && ty == 0)");
    HAS("  TCF_G = 512, TCF_ROWS = 1,");
    HAS("tcf_project(const tcf_rargs &a, tcf_acc v) { return tcf_f2b(v); }");
    CHECK(strstr(src, "off >= 32") < strstr(src, "tcf_shfl(v, off)"));
    CHECK(strstr(src, "tcf_shfl(v, off)") < strstr(src, "TCF_BH / 2"));

    /* short rows: vt0 accumulators, a 4-lane tree */
    s = shape(TCF_RED_SUM, F, F, 4, 128, 0, 0);
    gen(&s, NULL);
    HAS("tcf_acc acc[TCF_VT0];");
    HAS("while (idx + (TCF_VT0 - 1) * TCF_G < n) {");
    HAS("acc[k] = tcf_red(acc[k], row[idx + k * TCF_G]);");
    HAS("for (int off = 2; off > 0; off >>= 1)");
    LACKS("shift");
    /* a single thread: no tree at all */
    s = shape(TCF_RED_SUM, F, F, 1, 1, 0, 0);
    gen(&s, NULL);
    HAS("for (int off = 0; off > 0; off >>= 1)");
}

TEST(ops_and_dtypes)
{
    tcf_reduce_shape_t s = shape(TCF_RED_AMAX, H, H, 64, 1, 0, 0);
    gen(&s, NULL);
    HAS("typedef tcf_h tcf_in;"), HAS("typedef tcf_h tcf_acc;"), HAS("typedef tcf_h tcf_out;");
    HAS("return (tcf_acc)0xfc00u;");                                   /* -inf */
    HAS("const float fa = tcf_h2f(a), fb = tcf_h2f(b);");
    HAS("return (fa != fa || fa > fb) ? a : b;");
    HAS("return (tcf_acc)__shfl_down_sync(0xffffffffu, (unsigned)v, off, 32);");   /* bits */
    HAS("tcf_project(const tcf_rargs &a, tcf_acc v) { return v; }");
    s = shape(TCF_RED_AMIN, B, B, 64, 1, 0, 0);
    gen(&s, NULL);
    HAS("return (tcf_acc)0x7f80u;");                                   /* +inf */
    HAS("return (fa != fa || fa < fb) ? a : b;");
    HAS("return tcf_f2b(__shfl_down_sync(0xffffffffu, tcf_b2f(v), off, 32));");   /* via float */
    s = shape(TCF_RED_AMAX, F, F, 64, 1, 0, 0);
    gen(&s, NULL);
    HAS("return __uint_as_float(0xff800000u);");
    HAS("return __shfl_down_sync(0xffffffffu, v, off, 32);");
    s = shape(TCF_RED_NORM2, F, F, 16, 1, 0, 0);
    s.root = 1;
    gen(&s, NULL);
    HAS("const float f = tcf_tof(x); return __fmaf_rn(f, f, acc);");
    HAS("return __fsqrt_rn(v);");
    HAS("/* tcfuse reduce 1: NORM2(sqrt) float->float acc float");
    s.root = 0;
    gen(&s, NULL);
    LACKS("__fsqrt_rn");
    s = shape(TCF_RED_SUM, H, H, 32, 16, 1, 0);
    gen(&s, NULL);
    HAS("__forceinline__ float tcf_tof(tcf_in x) { return tcf_h2f(x); }");
    HAS("return __fadd_rn(acc, tcf_tof(x));");
    HAS("return tcf_f2h(v);");
    HAS("  TCF_VT0 = 4, TCF_V = 8 };");
    s = shape(TCF_RED_MEAN, B, F, 32, 16, 1, 0);
    gen(&s, NULL);
    HAS("tcf_project(const tcf_rargs &a, tcf_acc v) { return __fmul_rn(v, __uint_as_float(a.factor)); }");
    HAS("__forceinline__ float tcf_tof(tcf_in x) { return tcf_b2f(x); }");
}

TEST(rows_through_the_output_calculator)
{
    tcf_reduce_shape_t s = shape(TCF_RED_SUM, F, F, 32, 16, 1, 0);
    s.odims = 0;
    gen(&s, NULL);
    LACKS("a.ostride");                      /* one output at dst, its row at src */
    s.odims = 1;
    gen(&s, NULL);
    HAS("r.in_off = (unsigned long long)r.row * a.ostride[0][1];");
    s.odims = 3;
    gen(&s, NULL);
    HAS("for (int d = 0; d < 3; d++) {");
    HAS("const unsigned q = lin / a.osize[d], digit = lin - q * a.osize[d];");
}

TEST(splices)
{
    tcf_reduce_splice_t sp = { .prologue = "  return tcf_myload(a, r, j);",
                               .epilogue = "  /* EPI */ *(tcf_out *)(a.buf[2] + r.out_off) = v;",
                               .row_pass = "  /* ROWPASS */ (void)g;",
                               .helpers = "__forceinline__ float tcf_myload(const tcf_rargs &a, "
                                          "const tcf_row &r, unsigned j) { return 0.0f; }" };
    tcf_reduce_shape_t s = shape(TCF_RED_MEAN, F, F, 32, 16, 1, 0);
    gen(&s, &sp);
    HAS("__forceinline__ tcf_in tcf_pro(const tcf_rargs &a, const tcf_row &r, unsigned j) {\n"
        "  return tcf_myload(a, r, j);\n}");
    HAS("/* EPI */"), HAS("/* ROWPASS */"), HAS("tcf_myload(const tcf_rargs &a");
    HAS("acc[k] = tcf_red(acc[k], tcf_pro(a, r, first + i * TCF_V + k));");
    HAS("acc[0] = tcf_red(acc[0], tcf_pro(a, r, tx - shift));");
    HAS("acc[0] = tcf_red(acc[0], tcf_pro(a, r, first + t0 + tx));");
    LACKS("row[");                           /* nothing read from src */
    LACKS("tcf_pack<tcf_in");
    HAS("__shared__ tcf_out rv[TCF_ROWS];");
    HAS("rv[ty] = res;");
    HAS("if (r.row < a.num_outputs) tcf_rowpass(a, r, g, rv[ty]);");
    HAS(", spliced */");
    /* the helpers come before the functions that call them */
    CHECK(strstr(src, "tcf_myload(const tcf_rargs") < strstr(src, "tcf_pro(const tcf_rargs"));
    s = shape(TCF_RED_SUM, F, F, 4, 128, 0, 1);
    gen(&s, &sp);
    HAS("acc[k] = tcf_red(acc[k], tcf_pro(a, r, idx + k * TCF_G));");
    HAS("rv[0] = res;");
}

TEST(deterministic_and_refusals)
{
    static char a[CAP], b[CAP];
    tcf_reduce_shape_t s = shape(TCF_RED_SUM, B, B, 64, 8, 1, 1), t = s;
    int na = tcf_reduce_source(&s, NULL, a, sizeof a), nb = tcf_reduce_source(&t, NULL, b, sizeof b);
    CHECK(na > 0 && na == nb && !strcmp(a, b));
    CHECK_EQ_INT(tcf_reduce_source(&s, NULL, b, (size_t)na), -1);   /* one byte short */
    CHECK_EQ_INT(tcf_reduce_source(&s, NULL, b, (size_t)na + 1), na);
    t.bh = 4;
    CHECK(tcf_reduce_source(&t, NULL, b, sizeof b) > 0 && strcmp(a, b));
    tcf_reduce_shape_t x;
#define REFUSE(stmt)                                                                      \
    do {                                                                                  \
        x = shape(TCF_RED_SUM, F, F, 32, 16, 1, 0);                                       \
        stmt;                                                                             \
        check_report(tcf_reduce_source(&x, NULL, a, sizeof a) == -1, __FILE__, __LINE__,  \
                     "refused: " #stmt, NULL);                                            \
    } while (0)
    REFUSE(x.op = TCF_RED_NONE);
    REFUSE(x.op = TCF_RED_NOPS);
    REFUSE(x.bw = 0);
    REFUSE(x.bw = 48);
    REFUSE(x.bh = 32);                       /* 1024 threads */
    REFUSE(x.vt0 = 3);
    REFUSE(x.ivs = 8);                       /* 32 bytes of float */
    REFUSE(x.acc_dt = H);                    /* sums accumulate in float */
    REFUSE((x.op = TCF_RED_AMAX, x.acc_dt = F, x.in_dt = x.out_dt = H));
    REFUSE((x.op = TCF_RED_AMAX, x.out_dt = H));
    REFUSE(x.in_dt = TCF_DT_BOOL);
    REFUSE(x.odims = 9);
    REFUSE(x.root = 1);                      /* only norms take a root */
    REFUSE((x.bw = 2, x.bh = 1));            /* a vector head needs lanes tx < ivs */
    REFUSE(x.split_y = 2);
    CHECK_EQ_INT(tcf_reduce_source(NULL, NULL, a, sizeof a), -1);
    CHECK_EQ_INT(tcf_reduce_source(&s, NULL, NULL, 100), -1);
    CHECK_EQ_STR(tcf_reduce_op_name(TCF_RED_MEAN), "MEAN");
    CHECK_EQ_STR(tcf_reduce_op_name(TCF_RED_NOPS), "?");
    uint32_t g[3], bl[3];
    tcf_reduce_launch_dims(&s, 100, g, bl);  /* warps share a row: a block per row */
    CHECK_EQ_INT(g[0], 100), CHECK_EQ_INT(bl[0], 64), CHECK_EQ_INT(bl[1], 8);
    s.split_y = 0;
    tcf_reduce_launch_dims(&s, 100, g, bl);  /* 8 rows a block */
    CHECK_EQ_INT(g[0], 13), CHECK_EQ_INT(g[1], 1), CHECK_EQ_INT(bl[2], 1);
}

/* Every op and dtype pair on every class, in batches (each source in its own namespace,
 * the kernel renamed: NVRTC costs ~40 ms a program) compiled on a few threads; a batch
 * that fails or warns prints NVRTC's log. */
typedef struct {
    int arch, rc, n;
    size_t len;
    char *text, log[8192];
} batch_t;

static void *compile_batch(void *arg)
{
    batch_t *b = arg;
    void *cubin = NULL;
    size_t clen = 0;
    b->rc = tcf_nvrtc_compile(b->text, b->arch, &cubin, &clen, b->log, sizeof b->log);
    if (!b->rc && (!cubin || clen < 1024))
        b->rc = -2;
    free(cubin);
    return NULL;
}

TEST(nvrtc_compiles)
{
    if (!have_nvrtc)
        return;
    static const struct { tcf_red_op_t op; tcf_dtype_t in, out; } pairs[] = {
        { TCF_RED_SUM, F, F }, { TCF_RED_SUM, H, H }, { TCF_RED_SUM, B, B }, { TCF_RED_SUM, H, F },
        { TCF_RED_MEAN, F, F }, { TCF_RED_MEAN, B, B }, { TCF_RED_MEAN, B, F },
        { TCF_RED_AMAX, F, F }, { TCF_RED_AMAX, H, H }, { TCF_RED_AMIN, B, B }, { TCF_RED_NORM2, F, F },
    };
    static const unsigned cls[][4] = {   /* bw, bh, vectorize, split_y */
        { 1, 1, 0, 0 }, { 4, 128, 0, 0 }, { 64, 8, 0, 0 }, { 32, 16, 1, 0 }, { 512, 1, 1, 1 },
        { 64, 8, 1, 1 },
    };
    tcf_reduce_splice_t sp = { .prologue = "  return (tcf_in)a.s[j % 8];",
                               .row_pass = "  if (g == 0) ((tcf_out *)a.buf[0])[r.row] = v;" };
    enum { PER = 24, MAXB = 8 };
    batch_t b[MAXB];
    int nb = 0;
    unsigned total[2] = { 0, 0 };
    memset(b, 0, sizeof b);
    for (int arch = 90; arch >= 80; arch -= 10)
        for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++)
            for (size_t c = 0; c < sizeof cls / sizeof *cls; c++)
                for (int spl = 0; spl < 2; spl++) {
                    if ((spl && c % 2) || (arch == 80 && pairs[p].in != B))
                        continue;            /* below sm_90 only bf16's conversions differ */
                    tcf_reduce_shape_t s = shape(pairs[p].op, pairs[p].in, pairs[p].out, cls[c][0],
                                                 cls[c][1], (int)cls[c][2], (int)cls[c][3]);
                    s.odims = (uint8_t)(c % 3);
                    if (gen(&s, spl ? &sp : NULL) < 0)
                        continue;
                    if (!nb || b[nb - 1].arch != arch || b[nb - 1].n == PER) {
                        if (!CHECK(nb < MAXB))
                            goto run;
                        b[nb++] = (batch_t){ .arch = arch, .text = malloc(1u << 21) };
                    }
                    batch_t *cur = &b[nb - 1];
                    const char *k = strstr(src, "tcf_reduce(const tcf_rargs");
                    cur->len += (size_t)snprintf(cur->text + cur->len, (1u << 21) - cur->len,
                                                 "namespace u%d {\n%.*stcf_reduce_%d%s}\n", cur->n,
                                                 (int)(k - src), src, cur->n, k + strlen("tcf_reduce"));
                    cur->n++, total[arch == 80]++;
                }
run:;
    pthread_t th[MAXB];
    for (int i = 0; i < nb; i++)
        pthread_create(&th[i], NULL, compile_batch, &b[i]);
    for (int i = 0; i < nb; i++) {
        char what[64];
        pthread_join(th[i], NULL);
        snprintf(what, sizeof what, "batch %d: %d kernels for sm_%d", i, b[i].n, b[i].arch);
        check_report(b[i].rc == 0, __FILE__, __LINE__, what, b[i].log);
        check_report(b[i].log[0] == '\0', __FILE__, __LINE__, "no warnings", b[i].log);
        free(b[i].text);
    }
    printf("test_gen_reduce: %u kernels compiled for sm_90, %u for sm_80, in %d NVRTC programs "
           "(NVRTC %s)\n", total[0], total[1], nb, tcf_nvrtc_version());
}

int main(void)
{
    char err[512];
    have_nvrtc = tcf_nvrtc_open(NULL, err, sizeof err) == 0 ||
                 tcf_nvrtc_open("/usr/local/cuda/lib64/libnvrtc.so.13", err, sizeof err) == 0;
    if (!have_nvrtc)
        printf("test_gen_reduce: NVRTC not found (%s): compile checks skipped\n", err);
    RUN(structure_by_class);
    RUN(ops_and_dtypes);
    RUN(rows_through_the_output_calculator);
    RUN(splices);
    RUN(deterministic_and_refusals);
    RUN(nvrtc_compiles);
    return check_main_end();
}
