/* Groups with a two-input cat, run: each window planned by the fuser (packs of 8: the cat's
 * P and T are multiples of 8), its kernel generated packed and again element by element,
 * both run on the CPU (reduce_emu.hpp's CUDA on the host) over bf16 edge values and
 * compared with a model written here, bit for bit.
 *   rotary: HF's rotate_half(q) * sin + q * cos as PyTorch launches it (the negation of
 *           half of q stepped over, the cat along D = 16 split at 8, * sin, the add);
 *   middle: a cat along the middle dim of [B 2, S 6 + 7, D 64], times a weight over D.
 *
 * The cat's inputs are views over the whole space whose bytes outside their real range
 * are another tensor's or none (codegen/op.h). Here those bytes are guard pages, so a load
 * that the cat's pick does not guard faults; and every byte outside the output must be
 * as it was (the cat's and the product's stores are dropped). What this cannot check is
 * the GPU itself: tests/gpu's fuse_cat and fuse_views suites compare with PyTorch there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codegen/codegen.h"
#include "emu_run.h"
#include "fuser/fuser.h"
#include "fuser_items.h"

static tcf_plan_t plan;

/* Every case's blocks lie in [BASE, BASE + SPAN): MB(0) onwards, a page before it. */
#define BASE (MB(0) - 4096)
#define SPAN (MB(7) - BASE)

/* Source src (prelude taken out, kernel renamed tcf_fused_<n>) as namespace k<n>, with
 * run(args): every thread of every block in turn (no barriers in these kernels), on a
 * grid of 3 blocks (the grid-stride loop takes the rest). */
static int put_kernel(FILE *f, const char *src, unsigned n)
{
    const char *pre = tcf_codegen_prelude(), *pp = strstr(src, pre);
    const char *k = strstr(src, "tcf_fused(tcf_args_nd a)");
    if (!CHECK(pp != NULL && k != NULL))
        return -1;
    fprintf(f, "namespace k%u {\n%.*s%.*stcf_fused_%u%s", n, (int)(pp - src), src,
            (int)(k - (pp + strlen(pre))), pp + strlen(pre), n, k + strlen("tcf_fused"));
    fprintf(f, "void run(const void *p) {\n"
               "  tcf_args_nd a; memcpy(&a, p, sizeof a); gridDim.x = 3;\n"
               "  for (blockIdx.x = 0; blockIdx.x < 3; blockIdx.x++)\n"
               "    for (threadIdx.x = 0; threadIdx.x < 128; threadIdx.x++) tcf_fused_%u(a);\n"
               "}\n}\n", n);
    return 0;
}

/* The CUDA names the kernels need beyond reduce_emu.hpp's, and the driver every case
 * shares: run(kernel, args) on a fresh copy of the start with its guard pages, then every
 * byte compared with want. */
static const char *const head =
    "#include <sys/mman.h>\n"
    "static emu_dim3 gridDim;\n"
    "static inline unsigned __umulhi(unsigned a, unsigned b)\n"
    "{ return (unsigned)(((unsigned long long)a * b) >> 32); }\n"
    "struct tcf_args { unsigned long long n; unsigned long long buf[16]; unsigned int s[16]; };\n"
    "static_assert(sizeof(tcf_args) == 200, \"tcf_fused_args_t\");\n"
    "static unsigned lcg = 12345u;\n"
    "static tcf_b edge(unsigned i) {\n"
    "  static const tcf_b e[] = { 0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x0001, 0x8001,\n"
    "                             0x007f, 0x3f80, 0xbf80, 0x7f7f, 0xff7f, 0x4049, 0x3c00, 0xc2f7 };\n"
    "  if (i % 3 == 0) return e[(i / 3) % 16];\n"
    "  lcg = lcg * 1103515245u + 12345u; return (tcf_b)(lcg >> 8);\n"
    "}\n"
    "static tcf_b *at(unsigned char *m, unsigned long long off) { return (tcf_b *)(m + off); }\n"
    "static unsigned passed, failed;\n"
    "static void check(const char *name, void (*run)(const void *), const unsigned char *args,\n"
    "                  unsigned nbufs, const unsigned char *start, const unsigned char *want,\n"
    "                  const unsigned long long *guard, unsigned nguard, unsigned long long y) {\n"
    "  const size_t span = SPAN;\n"
    "  unsigned char *m = (unsigned char *)mmap(0, span, PROT_READ | PROT_WRITE,\n"
    "                                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n"
    "  memcpy(m, start, span);\n"
    "  for (unsigned i = 0; i < nguard; i++) mprotect(m + guard[i], 4096, PROT_NONE);\n"
    "  unsigned char a[808];\n"
    "  memcpy(a, args, sizeof a);\n"
    "  for (unsigned u = 0; u < nbufs; u++) {\n"
    "    unsigned long long p; memcpy(&p, a + 8 + 8 * u, 8);\n"
    "    p = (unsigned long long)(m + (p - BASE_ADDR)); memcpy(a + 8 + 8 * u, &p, 8);\n"
    "  }\n"
    "  run(a);\n"
    "  for (unsigned i = 0; i < nguard; i++) mprotect(m + guard[i], 4096, PROT_READ);\n"
    "  size_t bad = span;\n"
    "  for (size_t i = 0; i < span && bad == span; i++)\n"
    "    if (m[i] != want[i]) bad = i;\n"
    "  if (bad == span) passed++;\n"
    "  else { failed++; fprintf(stderr, \"%s: byte %zu (y + %lld): 0x%02x, want 0x%02x\\n\",\n"
    "                           name, bad, (long long)bad - (long long)y, m[bad], want[bad]); }\n"
    "  munmap(m, span);\n"
    "}\n";

/* rotary: the blocks (offsets from BASE) filled, -x2 as the negation wrote it, the model;
 * guards before q and past -x2. */
static const char *const rotary_case =
    "static void rotary(const unsigned char *args, unsigned nbufs) {\n"
    "  const size_t span = SPAN;\n"
    "  unsigned char *want = (unsigned char *)malloc(span), *start = (unsigned char *)malloc(span);\n"
    "  memset(want, 0x5a, span);\n"
    "  for (unsigned i = 0; i < 1024; i++) *at(want, Q_OFF + 2 * i) = edge(i);\n"
    "  for (unsigned i = 0; i < 1024; i++) *at(want, QCOS_OFF + 2 * i) = edge(i + 7);\n"
    "  for (unsigned i = 0; i < 128; i++) *at(want, SIN_OFF + 2 * i) = edge(5 * i + 1);\n"
    "  /* -x2, as the negation stepped over wrote it: x2 = q[..., 8:], over [D 8, S, H, B] */\n"
    "  for (unsigned b = 0; b < 2; b++) for (unsigned h = 0; h < 4; h++) for (unsigned s = 0; s < 8; s++)\n"
    "    for (unsigned d = 0; d < 8; d++)\n"
    "      *at(want, X2N_OFF + d * 2 + s * 16 + h * 128 + b * 512) =\n"
    "          (tcf_b)(*at(want, Q_OFF + (d + 8) * 2 + h * 32 + s * 128 + b * 1024) ^ 0x8000u);\n"
    "  memcpy(start, want, span);\n"
    "  /* the model: y = q * cos + cat(-x2, x1) * sin, each product rounded as eager stored it */\n"
    "  for (unsigned b = 0; b < 2; b++) for (unsigned h = 0; h < 4; h++) for (unsigned s = 0; s < 8; s++)\n"
    "    for (unsigned d = 0; d < 16; d++) {\n"
    "      tcf_b c = d < 8 ? *at(want, X2N_OFF + d * 2 + s * 16 + h * 128 + b * 512)\n"
    "                      : *at(want, Q_OFF + (d - 8) * 2 + h * 32 + s * 128 + b * 1024);\n"
    "      tcf_b m = tcf_f2b(tcf_b2f(c) * tcf_b2f(*at(want, SIN_OFF + d * 2 + s * 32)));\n"
    "      unsigned long long o = d * 2 + s * 32 + h * 256 + b * 1024;\n"
    "      *at(want, Y_OFF + o) = tcf_f2b(tcf_b2f(*at(want, QCOS_OFF + o)) + tcf_b2f(m));\n"
    "    }\n"
    "  const unsigned long long guard[] = { Q_OFF - 4096, X2N_OFF + 1024 };\n"
    "  check(\"rotary, packed\", k0::run, args, nbufs, start, want, guard, 2, Y_OFF);\n"
    "  check(\"rotary, element by element\", k1::run, args, nbufs, start, want, guard, 2, Y_OFF);\n"
    "  free(want), free(start);\n"
    "}\n";

/* middle: in0 [B 2, S 6, D 64] ending where a guard page starts, in1 [2, 7, 64] starting
 * where one ends, w [64]; y = cat(in0, in1, dim 1) * w. */
static const char *const middle_case =
    "static void middle(const unsigned char *args, unsigned nbufs) {\n"
    "  const size_t span = SPAN;\n"
    "  unsigned char *want = (unsigned char *)malloc(span), *start = (unsigned char *)malloc(span);\n"
    "  memset(want, 0xa5, span);\n"
    "  for (unsigned i = 0; i < 768; i++) *at(want, IN0_OFF + 2 * i) = edge(i + 3);\n"
    "  for (unsigned i = 0; i < 896; i++) *at(want, IN1_OFF + 2 * i) = edge(i + 11);\n"
    "  for (unsigned i = 0; i < 64; i++) *at(want, W_OFF + 2 * i) = edge(7 * i + 2);\n"
    "  memcpy(start, want, span);\n"
    "  for (unsigned b = 0; b < 2; b++) for (unsigned s = 0; s < 13; s++) for (unsigned d = 0; d < 64; d++) {\n"
    "    tcf_b c = s < 6 ? *at(want, IN0_OFF + d * 2 + s * 128 + b * 768)\n"
    "                    : *at(want, IN1_OFF + d * 2 + (s - 6) * 128 + b * 896);\n"
    "    *at(want, Y2_OFF + d * 2 + s * 128 + b * 1664) =\n"
    "        tcf_f2b(tcf_b2f(c) * tcf_b2f(*at(want, W_OFF + d * 2)));\n"
    "  }\n"
    "  const unsigned long long guard[] = { IN0_OFF + 1536, IN1_OFF - 4096 };\n"
    "  check(\"middle, packed\", k2::run, args, nbufs, start, want, guard, 2, Y2_OFF);\n"
    "  check(\"middle, element by element\", k3::run, args, nbufs, start, want, guard, 2, Y2_OFF);\n"
    "  free(want), free(start);\n"
    "}\n";

/* The blocks of both windows (rotary's first: Q..Y; middle's: IN0..Y2). */
#define Q    MB(0)
#define QCOS MB(1)
#define SIN  MB(2)
#define X2N  (MB(3) - 1024)
#define CAT  MB(4)
#define PROD MB(5)
#define Y    MB(6)
#define IN0  (MB(1) + 65536 - 1536)
#define IN1  (MB(1) + 2 * 65536)
#define W    (MB(1) + 3 * 65536)
#define CAT2 (MB(1) + 4 * 65536)
#define Y2   (MB(1) + 5 * 65536)

/* Plans win (one group, vec 8 expected), writes its kernel packed and element by element
 * as k<2c> and k<2c + 1>, its arguments as ARGS<c>; 0 when both were written. */
static int put_case(FILE *f, const tcf_item_t *win, size_t n, unsigned c, const char *pack_text)
{
    static char src[2][32768];
    if (!CHECK_EQ_INT(tcf_fuser_plan(win, n, &plan), 0) || !CHECK_EQ_INT(plan.ngroups, 1))
        return -1;
    const tcf_fgroup_t *g = &plan.groups[0];
    CHECK_EQ_INT(g->g.vec, 8);
    tcf_group_t one = g->g;
    one.vec = 1, one.bcast0 = 0;   /* the same group, element by element */
    if (!CHECK(tcf_codegen_source(&g->g, src[0], sizeof src[0]) > 0) ||
        !CHECK(tcf_codegen_source(&one, src[1], sizeof src[1]) > 0))
        return -1;
    CHECK(strstr(src[0], pack_text) != NULL);                           /* loads only where picked */
    CHECK(strstr(src[1], "const tcf_b *g0, const tcf_b *g1") != NULL);  /* the pointers, at vec 1 */
    if (put_kernel(f, src[0], 2 * c) || put_kernel(f, src[1], 2 * c + 1))
        return -1;
    const unsigned char *ab = (const unsigned char *)&g->args;
    fprintf(f, "static const unsigned NBUFS%u = %uu;\nstatic const unsigned char ARGS%u[808] = {",
            c, (unsigned)g->g.nbufs, c);
    for (size_t i = 0; i < sizeof g->args; i++)
        fprintf(f, "%s%u,", i % 24 ? "" : "\n  ", ab[i]);
    fprintf(f, "\n};\n");
    return 0;
}

TEST(cat_groups_run_packed_and_not)
{
    tcf_item_t rot[7];
    rotary_window(rot, Q, QCOS, SIN, X2N, CAT, PROD, Y);
    /* cat along S (dim 1 of [D, S, B]): P = 64 * 13, T = 64 * 6 */
    tcf_item_t mid[3];
    mid[0] = SV(op3(TCF_OP_CAT, TCF_DT_F16, 0, CAT2, 2, IN0, 0, 0), 3, L(64, 13, 2),
                L(L(2, 2, 2), L(128, 128, 128), L(1664, 768, 896)));
    tcf_op_t *o = &mid[0].op;
    o->loop = TCF_LOOP_CAT, o->cat_dim = 1, o->in[1] = IN1 - 6 * 128;
    o->cat_lo[0] = 0, o->cat_len[0] = 6, o->cat_lo[1] = 6, o->cat_len[1] = 7;
    o->nscalar = 2;
    o->s[0] = (tcf_scalar_t){ .dt = TCF_DT_NONE, .bits = 64 * 13 };
    o->s[1] = (tcf_scalar_t){ .dt = TCF_DT_NONE, .bits = 64 * 6 };
    mid[1] = SV(op3(TCF_OP_MUL, TCF_DT_BF16, 0, Y2, 2, CAT2, W, 0), 3, L(64, 13, 2),
                L(L(2, 2, 2), L(128, 128, 0), L(1664, 1664, 0)));
    mid[2] = free_(CAT2);

    emu_text_t t;
    if (emu_open(&t, "test_cat_emu"))
        return;
    fprintf(t.kf, "#define BASE_ADDR %lluull\n#define SPAN %lluull\n", (unsigned long long)BASE,
            (unsigned long long)SPAN);
#define OFF(name, x) fprintf(t.kf, "#define " name " %lluull\n", (unsigned long long)((x) - BASE))
    OFF("Q_OFF", Q), OFF("QCOS_OFF", QCOS), OFF("SIN_OFF", SIN), OFF("X2N_OFF", X2N), OFF("Y_OFF", Y);
    OFF("IN0_OFF", IN0), OFF("IN1_OFF", IN1), OFF("W_OFF", W), OFF("Y2_OFF", Y2);
#undef OFF
    fputs(head, t.kf);
    int bad = put_case(t.kf, rot, 7, 0, "tcf_pack<tcf_b, 8, 16> L0 = {};\n    if ((i % a.c.s[0] < a.c.s[1])) L0 =");
    bad |= put_case(t.kf, mid, 3, 1, "tcf_pack<tcf_b, 8, 16> L0 = {};\n    if ((i % a.c.s[0] < a.c.s[1])) L0 =");
    if (bad) {
        fclose(t.kf), fclose(t.tf), free(t.text), free(t.rows);
        return;
    }
    fputs(rotary_case, t.kf);
    fputs(middle_case, t.kf);
    emu_close_run(&t, "cat", "",
                  "int main() {\n  rotary(ARGS0, NBUFS0);\n  middle(ARGS1, NBUFS1);\n"
                  "  printf(\"cat_emu: %u passed, %u failed\\n\", passed, failed);\n  return 0;\n}\n", 4);
}

int main(void)
{
    _Static_assert(sizeof(tcf_fused_args_t) == 808, "ARGS above is 808 bytes");
    RUN(cat_groups_run_packed_and_not);
    return check_main_end();
}
