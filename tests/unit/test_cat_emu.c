/* A group with a two-input cat, run: HF's rotate_half(q) * sin + q * cos in bf16 as
 * PyTorch launches it (the negation of half of q stepped over, the cat, * sin, the add),
 * planned by the fuser (packs of 8: the cat splits D = 16 at 8), its kernel generated
 * packed and again element by element, both run on the CPU (reduce_emu.hpp's CUDA on the
 * host) over bf16 edge values and compared with the model written here, bit for bit.
 *
 * The cat's inputs are views over the whole space whose bytes outside their real range
 * are another tensor's or none (codegen/op.h): q's view starts 16 bytes before q, and -x2's
 * reaches past its end. Here those bytes are guard pages, so a load that the cat's pick
 * does not guard faults; and every byte outside the output must be as it was (the cat's
 * and the product's stores are dropped). What this cannot check is the GPU itself:
 * tests/gpu's fuse_cat and fuse_views suites compare with PyTorch there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codegen/codegen.h"
#include "emu_run.h"
#include "fuser/fuser.h"
#include "fuser_items.h"

static tcf_plan_t plan;

/* The window's blocks: a guard page before q, -x2 ending where a guard page starts. */
#define BASE (MB(0) - 4096)
#define Q    MB(0)
#define QCOS MB(1)
#define SIN  MB(2)
#define X2N  (MB(3) - 1024)
#define CAT  MB(4)
#define PROD MB(5)
#define Y    MB(6)
#define SPAN (MB(7) - BASE)

/* Source src (prelude taken out, kernel renamed tcf_fused_<n>) as namespace k<n>, with
 * run(args, grid): every thread of every block in turn (no barriers in these kernels). */
static int put_kernel(FILE *f, const char *src, unsigned n)
{
    const char *pre = tcf_codegen_prelude(), *pp = strstr(src, pre);
    const char *k = strstr(src, "tcf_fused(tcf_args_nd a)");
    if (!CHECK(pp != NULL && k != NULL))
        return -1;
    fprintf(f, "namespace k%u {\n%.*s%.*stcf_fused_%u%s", n, (int)(pp - src), src,
            (int)(k - (pp + strlen(pre))), pp + strlen(pre), n, k + strlen("tcf_fused"));
    fprintf(f, "void run(const void *p, unsigned grid) {\n"
               "  tcf_args_nd a; memcpy(&a, p, sizeof a); gridDim.x = grid;\n"
               "  for (blockIdx.x = 0; blockIdx.x < grid; blockIdx.x++)\n"
               "    for (threadIdx.x = 0; threadIdx.x < 128; threadIdx.x++) tcf_fused_%u(a);\n"
               "}\n}\n", n);
    return 0;
}

static const char *const head =
    "#include <sys/mman.h>\n"
    "static emu_dim3 gridDim;\n"
    "static inline unsigned __umulhi(unsigned a, unsigned b)\n"
    "{ return (unsigned)(((unsigned long long)a * b) >> 32); }\n"
    "struct tcf_args { unsigned long long n; unsigned long long buf[16]; unsigned int s[16]; };\n"
    "static_assert(sizeof(tcf_args) == 200, \"tcf_fused_args_t\");\n";

/* main: the blocks (offsets from BASE) filled, the model, each kernel run on a fresh copy
 * with its arguments' buffers pointed into it. */
static const char *const tail =
    "static unsigned lcg = 12345u;\n"
    "static tcf_b edge(unsigned i) {\n"
    "  static const tcf_b e[] = { 0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x0001, 0x8001,\n"
    "                             0x007f, 0x3f80, 0xbf80, 0x7f7f, 0xff7f, 0x4049, 0x3c00, 0xc2f7 };\n"
    "  if (i % 3 == 0) return e[(i / 3) % 16];\n"
    "  lcg = lcg * 1103515245u + 12345u; return (tcf_b)(lcg >> 8);\n"
    "}\n"
    "static tcf_b *at(unsigned char *m, unsigned long long off) { return (tcf_b *)(m + off); }\n"
    "int main() {\n"
    "  const size_t span = SPAN;\n"
    "  unsigned char *want = (unsigned char *)malloc(span);\n"
    "  memset(want, 0x5a, span);\n"
    "  for (unsigned i = 0; i < 1024; i++) *at(want, Q_OFF + 2 * i) = edge(i);\n"
    "  for (unsigned i = 0; i < 1024; i++) *at(want, QCOS_OFF + 2 * i) = edge(i + 7);\n"
    "  for (unsigned i = 0; i < 128; i++) *at(want, SIN_OFF + 2 * i) = edge(5 * i + 1);\n"
    "  /* -x2, as the negation stepped over wrote it: x2 = q[..., 8:], over [D 8, S, H, B] */\n"
    "  for (unsigned b = 0; b < 2; b++) for (unsigned h = 0; h < 4; h++) for (unsigned s = 0; s < 8; s++)\n"
    "    for (unsigned d = 0; d < 8; d++)\n"
    "      *at(want, X2N_OFF + d * 2 + s * 16 + h * 128 + b * 512) =\n"
    "          (tcf_b)(*at(want, Q_OFF + (d + 8) * 2 + h * 32 + s * 128 + b * 1024) ^ 0x8000u);\n"
    "  unsigned char *start = (unsigned char *)malloc(span);\n"
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
    "  unsigned passed = 0, failed = 0;\n"
    "  for (unsigned v = 0; v < NKERNELS; v++) {\n"
    "    unsigned char *m = (unsigned char *)mmap(0, span, PROT_READ | PROT_WRITE,\n"
    "                                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n"
    "    memcpy(m, start, span);\n"
    "    mprotect(m, 4096, PROT_NONE);                  /* before q */\n"
    "    mprotect(m + X2N_OFF + 1024, 4096, PROT_NONE); /* past -x2 */\n"
    "    unsigned char a[808];\n"
    "    memcpy(a, ARGS, sizeof a);\n"
    "    for (unsigned u = 0; u < NBUFS; u++) {\n"
    "      unsigned long long p; memcpy(&p, a + 8 + 8 * u, 8);\n"
    "      p = (unsigned long long)(m + (p - BASE_ADDR)); memcpy(a + 8 + 8 * u, &p, 8);\n"
    "    }\n"
    "    if (v == 0) k0::run(a, 3); else k1::run(a, 2);\n"
    "    mprotect(m, 4096, PROT_READ), mprotect(m + X2N_OFF + 1024, 4096, PROT_READ);\n"
    "    size_t bad = span;\n"
    "    for (size_t i = 0; i < span && bad == span; i++)\n"
    "      if (m[i] != want[i]) bad = i;\n"
    "    if (bad == span) passed++;\n"
    "    else { failed++; fprintf(stderr, \"kernel %u: byte %zu (y + %lld): 0x%02x, want 0x%02x\\n\",\n"
    "                             v, bad, (long long)bad - (long long)Y_OFF, m[bad], want[bad]); }\n"
    "    munmap(m, span);\n"
    "  }\n"
    "  free(want), free(start);\n"
    "  printf(\"cat_emu: %u passed, %u failed\\n\", passed, failed);\n"
    "  return 0;\n"
    "}\n";

TEST(rotary_group_runs_packed_and_not)
{
    tcf_item_t win[7];
    rotary_window(win, Q, QCOS, SIN, X2N, CAT, PROD, Y);
    if (!CHECK_EQ_INT(tcf_fuser_plan(win, sizeof win / sizeof win[0], &plan), 0) ||
        !CHECK_EQ_INT(plan.ngroups, 1))
        return;
    const tcf_fgroup_t *g = &plan.groups[0];
    CHECK(g->first == 1 && g->last == 3 && g->g.ndim >= 1);
    CHECK_EQ_INT(g->g.vec, 8);
    CHECK_EQ_INT(g->stores_dropped, 2);
    tcf_group_t one = g->g;
    one.vec = 1, one.bcast0 = 0;   /* the same group, element by element */

    emu_text_t t;
    if (emu_open(&t, "test_cat_emu"))
        return;
    static char src[2][32768];
    if (!CHECK(tcf_codegen_source(&g->g, src[0], sizeof src[0]) > 0) ||
        !CHECK(tcf_codegen_source(&one, src[1], sizeof src[1]) > 0)) {
        fclose(t.kf), fclose(t.tf), free(t.text), free(t.rows);
        return;
    }
    CHECK(strstr(src[0], "tcf_pack<tcf_b, 8, 16> L0 = {};") != NULL);   /* loads only where picked */
    CHECK(strstr(src[1], "const tcf_b *g0, const tcf_b *g1") != NULL);  /* the pointers, at vec 1 */
    fputs(head, t.kf);
    put_kernel(t.kf, src[0], 0);
    put_kernel(t.kf, src[1], 1);
    fprintf(t.kf, "#define BASE_ADDR %lluull\n#define SPAN %lluull\n#define NBUFS %uu\n#define NKERNELS 2u\n",
            (unsigned long long)BASE, (unsigned long long)SPAN, (unsigned)g->g.nbufs);
    fprintf(t.kf, "#define Q_OFF %lluull\n#define QCOS_OFF %lluull\n#define SIN_OFF %lluull\n"
                  "#define X2N_OFF %lluull\n#define Y_OFF %lluull\n",
            (unsigned long long)(Q - BASE), (unsigned long long)(QCOS - BASE),
            (unsigned long long)(SIN - BASE), (unsigned long long)(X2N - BASE),
            (unsigned long long)(Y - BASE));
    const unsigned char *ab = (const unsigned char *)&g->args;
    fprintf(t.kf, "static const unsigned char ARGS[808] = {");
    for (size_t i = 0; i < sizeof g->args; i++)
        fprintf(t.kf, "%s%u,", i % 24 ? "" : "\n  ", ab[i]);
    fprintf(t.kf, "\n};\n");
    emu_close_run(&t, "cat", "", tail, 2);
}

int main(void)
{
    _Static_assert(sizeof(tcf_fused_args_t) == 808, "ARGS above is 808 bytes");
    RUN(rotary_group_runs_packed_and_not);
    return check_main_end();
}
