/* LayerNorm and RMSNorm: PyTorch 2.11's vectorized_layer_norm_kernel decoded (recognize/
 * decode_reduce.c) on every such launch of the recorded traces and on hand-made bytes,
 * planned with its producers as one group (fuser/group.c: the norm is elementwise over
 * [K, M], gamma and beta broadcast over the rows, nothing after it), and generated as one
 * kernel (codegen/gen_layernorm.c) that compiles with NVRTC (skipped, and said, without
 * one) and, run on the CPU, matches a thread-by-thread model of PyTorch's order
 * (layernorm_emu.hpp). What the GPU says of the kernels' bits is
 * tests/gpu/fuse_layernorm.py's and verification's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "emu_run.h"
#include "row_kernels.h"
#include "codegen/codegen.h"
#include "codegen/internal.h"
#include "fuser/fuser.h"
#include "recognize/decode.h"
#include "recognize/decode_reduce.h"
#include "fixture_launches.h"

#define F TCF_DT_F32
#define H TCF_DT_F16
#define B TCF_DT_BF16
#define MB(i) (0x7f0000000000ull + ((uint64_t)(i) << 24))
#define SRC(k) (TCF_SRC_OP | (k))
#define SRC_CAP (1u << 17)

#define LN "_ZN2at6native53_GLOBAL__N__21739cd4_20_layer_norm_kernel_cu_9c5ada8a28vectorized_layer_norm_kernelI"
#define LN_F LN "ffLb0EEEviT0_PKT_S6_S6_PS3_S7_PS4_"
#define LN_BF LN "N3c108BFloat16EfLb0EEEviT0_PKT_S8_S8_PS5_S9_PS6_"
#define RMS_F LN "ffLb1EEEviT0_PKT_S6_S6_PS3_S7_PS4_"

static tcf_plan_t plan;

static int want(const char *name)
{
    return strstr(name, "_layer_norm_kernel_cu_") && strstr(name, "28vectorized_layer_norm_kernelI");
}

static const uint32_t ln_off[8] = { 0, 4, 8, 16, 24, 32, 40, 48 }, ln_sz[8] = { 4, 4, 8, 8, 8, 8, 8, 8 };

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* A launch of name with PyTorch's shape: grid M, block (32, 4). */
static tcf_decode_status_t launch(const char *name, int32_t N, uint32_t M, uint64_t x, uint64_t g,
                                  uint64_t b, uint64_t mean, uint64_t rstd, uint64_t y,
                                  uint32_t bx, tcf_reduce_t *r)
{
    uint8_t p[56];
    put32(p, (uint32_t)N), put32(p + 4, 0x3727c5acu);   /* eps 1e-5 */
    put64(p + 8, x), put64(p + 16, g), put64(p + 24, b), put64(p + 32, mean), put64(p + 40, rstd),
        put64(p + 48, y);
    tcf_decode_launch_t d = { name, 8, ln_off, ln_sz, p, 56, { M, 1, 1 }, { bx, 128 / bx, 1 } };
    tcf_op_t op;
    CHECK_EQ_INT(tcf_decode_launch(&d, &op), TCF_DECODE_REDUCTION);
    return tcf_decode_reduce(&d, r);
}

TEST(every_recorded_norm_launch)
{
    size_t ok = 0, affine = 0, bare = 0;
    for (size_t i = 0; i < nls; i++) {
        const launch_t *x = &ls[i];
        tcf_reduce_t r;
        tcf_op_t op;
        if (!fixture_decode_reduce(x, &r))
            continue;
        ok++;
        affine += r.gamma && r.beta, bare += !r.gamma && !r.beta;
        /* the bytes say it: N at 0, eps at 4, the pointers, one block a row */
        uint32_t N, M = x->grid[0];
        uint64_t px, py, pm, pr;
        memcpy(&N, x->params, 4), memcpy(&px, x->params + 8, 8), memcpy(&pm, x->params + 32, 8);
        memcpy(&pr, x->params + 40, 8), memcpy(&py, x->params + 48, 8);
        CHECK(r.op == TCF_RED_LAYERNORM && r.cfg.num_inputs == N && N % 4 == 0 && r.cfg.num_outputs == M);
        CHECK(r.src == px && r.dst == py && r.mean == pm && r.rstd == pr && x->smem == 24);
        CHECK(r.factor == 0x3727c5acu || r.factor == 0x3e800000u || r.factor);   /* eps as given */
        CHECK(fixture_device_ptr(r.src) && fixture_device_ptr(r.dst) && fixture_device_ptr(r.rstd));
        CHECK(r.ostride[0][0] == N * tcf_dtype_size(r.in_dt) && r.out_dt == r.in_dt);
        /* the kernel a group would run for it launches as PyTorch launched it */
        tcf_reduce_shape_t s;
        uint32_t g[3], bl[3];
        tcf_reduce_shape_of(&r, &s);
        tcf_reduce_launch_dims(&s, M, g, bl);
        CHECK(g[0] == M && g[1] == 1 && bl[0] == 32 && bl[1] == 4 && bl[2] == 1);
        CHECK(s.affine == ((r.gamma != 0) | (r.beta != 0) << 1));
        /* and joins a group as an op over [K, M]: x, then gamma and beta broadcast */
        if (M >= 2) {
            CHECK_EQ_INT(tcf_fuser_reduce_op(&r, &op), 0);
            CHECK(op.nin == 1 + (r.gamma != 0) + (r.beta != 0) && op.it.ndim == 2 &&
                  op.it.stride[0][0] == tcf_dtype_size(r.out_dt));
            for (unsigned q = 1; q < op.nin; q++)
                CHECK(op.it.stride[1 + q][0] == tcf_dtype_size(r.in_dt) && op.it.stride[1 + q][1] == 0);
        }
    }
    printf("test_layernorm: %zu of %zu recorded LayerNorm launches decoded (%zu with gamma and "
           "beta, %zu with neither)\n", ok, nls, affine, bare);
    CHECK(nls >= 50 && ok == nls && affine && bare);
}

TEST(hand_made_bytes)
{
    tcf_reduce_t r;
    CHECK_EQ_INT(launch(LN_F, 768, 8192, MB(1), MB(2), MB(3), MB(4), MB(5), MB(6), 32, &r), TCF_DECODE_OK);
    CHECK(r.op == TCF_RED_LAYERNORM && r.in_dt == F && r.cfg.num_inputs == 768 && r.cfg.num_outputs == 8192);
    CHECK(r.src == MB(1) && r.gamma == MB(2) && r.beta == MB(3) && r.mean == MB(4) && r.rstd == MB(5) &&
          r.dst == MB(6) && r.factor == 0x3727c5acu);
    tcf_reduce_args_t a;
    tcf_reduce_args_of(&r, &a);
    CHECK(a.buf[0] == MB(4) && a.buf[1] == MB(5) && a.factor == 0x3727c5acu && a.num_inputs == 768);
    char line[300];
    tcf_decode_reduce_describe(&r, line, sizeof line);
    CHECK(strstr(line, "LAYERNORM f32->f32") && strstr(line, "K=768 M=8192") && strstr(line, " gamma beta") &&
          strstr(line, "eps 9.99999975e-06") && strstr(line, " rstd 0x"));
    /* bfloat16, gamma alone; RMS with gamma, and without */
    CHECK_EQ_INT(launch(LN_BF, 2048, 3, MB(1), MB(2), 0, MB(4), MB(5), MB(6), 32, &r), TCF_DECODE_OK);
    CHECK(r.in_dt == B && r.out_dt == B && r.gamma && !r.beta);
    CHECK_EQ_INT(launch(RMS_F, 2048, 3, MB(1), MB(2), 0, 0, MB(5), MB(6), 32, &r), TCF_DECODE_OK);
    CHECK(r.op == TCF_RED_RMSNORM && !r.mean);
    CHECK_EQ_INT(launch(RMS_F, 2048, 3, MB(1), 0, 0, 0, MB(5), MB(6), 32, &r), TCF_DECODE_OK);
    /* made for fewer rows, as verification runs it: the grid alone */
    tcf_decode_launch_t d = { LN_F, 8, ln_off, ln_sz, NULL, 0, { 0 }, { 0 } };
    tcf_decode_reduce_kernel_t rk;
    uint8_t p[56] = { 0 };
    uint32_t g[3] = { 8192, 1, 1 };
    CHECK_EQ_INT(tcf_decode_reduce_kernel(&d, &rk), TCF_DECODE_OK);
    CHECK_EQ_INT(tcf_decode_fullrow_resize(&rk, p, 56, 91, g), 0);
    CHECK(g[0] == 91 && g[1] == 1 && p[0] == 0);
    CHECK_EQ_INT(tcf_decode_fullrow_resize(&rk, p, 48, 91, g), -1);
    /* refusals, each by its reason, all zeros */
    CHECK_EQ_INT(launch(LN_F, 768, 64, MB(1), 0, MB(3), MB(4), MB(5), MB(6), 32, &r), TCF_DECODE_NORM_FORM);
    CHECK(r.op == TCF_RED_NONE && r.src == 0);
    CHECK_EQ_INT(launch(RMS_F, 768, 64, MB(1), MB(2), MB(3), 0, MB(5), MB(6), 32, &r), TCF_DECODE_NORM_FORM);
    CHECK_EQ_INT(launch(RMS_F, 768, 64, MB(1), MB(2), 0, MB(4), MB(5), MB(6), 32, &r), TCF_DECODE_NORM_FORM);
    CHECK_EQ_INT(launch(LN_F, 768, 64, MB(1), MB(2), MB(3), 0, MB(5), MB(6), 32, &r), TCF_DECODE_NORM_FORM);
    CHECK_EQ_INT(launch(LN_F, 770, 64, MB(1), MB(2), MB(3), MB(4), MB(5), MB(6), 32, &r), TCF_DECODE_BAD_VALUE);
    CHECK_EQ_INT(launch(LN_F, 768, 64, MB(1) + 4, MB(2), MB(3), MB(4), MB(5), MB(6), 32, &r), TCF_DECODE_BAD_VALUE);
    CHECK_EQ_INT(launch(LN_F, 768, 64, MB(1), MB(2), MB(3), MB(4), MB(5), MB(6), 64, &r), TCF_DECODE_BAD_LAUNCH);
    CHECK_EQ_INT(launch(LN_F, -4, 64, MB(1), MB(2), MB(3), MB(4), MB(5), MB(6), 32, &r), TCF_DECODE_BAD_VALUE);
    CHECK_EQ_INT(launch(LN "dfLb0EEEviT0_PKT_S6_S6_PS3_S7_PS4_", 768, 64, MB(1), MB(2), MB(3), MB(4), MB(5),
                        MB(6), 32, &r), TCF_DECODE_UNSUPPORTED_DTYPE);
    CHECK_EQ_INT(launch(LN "ffLb0EEEviT0_PKT_S6_S6_PS3_S7_", 768, 64, MB(1), MB(2), MB(3), MB(4), MB(5),
                        MB(6), 32, &r), TCF_DECODE_BAD_NAME);
    /* the other kernels of layer_norm_kernel.cu are no norm we decode */
    tcf_decode_launch_t o = { "_ZN2at6native53_GLOBAL__N__21739cd4_20_layer_norm_kernel_cu_9c5ada8a24"
                              "RowwiseMomentsCUDAKernelIfLb0EEEvlfPKT_PfS6_", 0, NULL, NULL, NULL, 0,
                              { 1, 1, 1 }, { 512, 1, 1 } };
    tcf_op_t op;
    CHECK_EQ_INT(tcf_decode_launch(&o, &op), TCF_DECODE_NOT_ELEMENTWISE);
}

static tcf_item_t op(tcf_op_kind_t k, tcf_dtype_t dt, uint32_t n, uint64_t o, int nin, uint64_t a, uint64_t b)
{
    tcf_item_t it = { .kind = TCF_ITEM_OP };
    tcf_op_t *p = &it.op;
    p->kind = k, p->loop = TCF_LOOP_VEC, p->vec = 4, p->nin = (uint8_t)nin, p->n = n;
    p->out = o, p->in[0] = a, p->in[1] = b;
    p->compute_dt = dt == F ? F : dt, p->res_dt = p->out_dt = dt;
    for (int i = 0; i < nin; i++) p->in_dt[i] = dt;
    if (k == TCF_OP_ADD)   /* alpha, as add's bytes carry it */
        p->nscalar = 1, p->s[0].dt = F, p->s[0].f = 1.0f, p->s[0].bits = 0x3f800000u;
    return it;
}

static tcf_item_t norm(tcf_red_op_t o, tcf_dtype_t dt, uint32_t K, uint32_t M, uint64_t x, uint64_t g,
                       uint64_t b, uint64_t mean, uint64_t rstd, uint64_t y)
{
    tcf_item_t it = { .kind = TCF_ITEM_REDUCE };
    tcf_reduce_t *r = &it.red;
    r->op = o, r->in_dt = r->out_dt = dt, r->acc_dt = F;
    r->cfg.num_inputs = K, r->cfg.num_outputs = M, r->cfg.block_width = 32, r->cfg.block_height = 4;
    r->cfg.element_size = 4, r->cfg.grid[0] = M, r->cfg.grid[1] = r->cfg.grid[2] = 1;
    r->src = x, r->dst = y, r->gamma = g, r->beta = b, r->mean = mean, r->rstd = rstd;
    r->factor = 0x3727c5acu, r->vt0 = r->ivs = 1;
    r->odims = 1, r->osize[0] = M, r->ostride[0][0] = r->ostride[0][1] = K * tcf_dtype_size(dt);
    return it;
}

static tcf_item_t free_(uint64_t p) { return (tcf_item_t){ .kind = TCF_ITEM_FREE, .ptr = p }; }

static void compiles(const tcf_fgroup_t *g, const char *what)
{
    static const char *const marks[] = {
        "tcf_reduce(const tcf_rargs a)",
        "__shfl_down_sync",
        "tcf_epi4(a, r, 4u * i, y);",
        "rsqrtf(",
        NULL,
    };
    rk_compiles(g, what, "a norm kernel", marks);
}

/* GPT-2's and BERT's residual add before the LayerNorm, as eager launches it. */
TEST(residual_add_and_layernorm)
{
    const uint32_t K = 768, M = 4096, n = K * M;   /* 12 MiB of float: MB() is 16 apart */
    static const tcf_dtype_t dts[] = { F, B, H };
    for (unsigned d = 0; d < 3; d++)
        for (unsigned form = 0; form < 5; form++) {
            tcf_red_op_t o = form < 3 ? TCF_RED_LAYERNORM : TCF_RED_RMSNORM;
            uint64_t g = form == 2 || form == 4 ? 0 : MB(4), b = form == 0 ? MB(5) : 0;
            uint64_t mean = o == TCF_RED_LAYERNORM ? MB(6) : 0;
            tcf_item_t w[] = {
                op(TCF_OP_ADD, dts[d], n, MB(3), 2, MB(1), MB(2)),
                norm(o, dts[d], K, M, MB(3), g, b, mean, MB(7), MB(8)),
            };
            CHECK_EQ_INT(tcf_fuser_plan(w, 2, &plan), 0);
            if (!CHECK_EQ_INT(plan.ngroups, 1)) {
                printf("  form %u dtype %u\n", form, d);
                continue;
            }
            const tcf_fgroup_t *G = &plan.groups[0];
            CHECK(G->g.red == 2 && G->g.rs.op == o && G->g.ops[1].nin == 1 + !!g + !!b);
            CHECK(G->g.vec == 4 && G->g.bcast0 == 0);   /* every buffer in packs of four */
            CHECK(G->g.ops[1].in_src[0] == SRC(0) && G->g.ops[0].out_buf != TCF_NO_STORE);
            CHECK(G->args.size[0] == K && G->args.size[1] == M);
            tcf_rows_args_t ra;
            CHECK_EQ_INT(tcf_fuser_rows_args(G, w, 2, &G->args, &ra), 0);
            CHECK(ra.r.buf[0] == mean && ra.r.buf[1] == MB(7) && ra.r.factor == 0x3727c5acu);
            char what[64];
            snprintf(what, sizeof what, "add -> norm form %u dtype %u", form, d);
            compiles(G, what);
        }
}

/* A buffer that cannot move in packs (misaligned, or not contiguous along the row) is
 * accessed one element at a time; the rest stay in packs. */
TEST(packs_and_single_elements)
{
    const uint32_t K = 768, M = 64, n = K * M;
    tcf_item_t w[] = {
        op(TCF_OP_ADD, F, n, MB(3), 2, MB(1) + 4, MB(2)),
        norm(TCF_RED_LAYERNORM, F, K, M, MB(3), MB(4), MB(5), MB(6), MB(7), MB(8)),
    };
    CHECK_EQ_INT(tcf_fuser_plan(w, 2, &plan), 0);
    if (!CHECK_EQ_INT(plan.ngroups, 1))
        return;
    const tcf_fgroup_t *G = &plan.groups[0];
    unsigned mis = 0;
    for (unsigned b = 0; b < G->g.nbufs; b++)
        if (G->args.buf[b] == MB(1) + 4)
            mis = b;
    CHECK(G->g.vec == 4 && G->g.bcast0 == 1u << mis);
    char *src = malloc(SRC_CAP), want[96];
    if (CHECK(tcf_codegen_source(&G->g, src, SRC_CAP) > 0)) {
        snprintf(want, sizeof want, "#define TCF_L%u(T) (*(const T *)TCF_AT(%u, j))", mis, mis);
        CHECK(strstr(src, want) != NULL);
        snprintf(want, sizeof want, "L%u = *(const tcf_pack", mis);
        CHECK(strstr(src, want) == NULL);
        CHECK(strstr(src, "#define TCF_L2(T) (L2.v[e])") != NULL || mis == 2);
    }
    free(src);
    compiles(G, "add with a misaligned input -> layernorm");
}

TEST(refusals)
{
    const uint32_t K = 128, M = 64, n = K * M;
    /* nothing joins after a norm: the op after it is left alone */
    tcf_item_t a[] = {
        op(TCF_OP_ADD, F, n, MB(3), 2, MB(1), MB(2)),
        norm(TCF_RED_LAYERNORM, F, K, M, MB(3), MB(4), MB(5), MB(6), MB(7), MB(8)),
        op(TCF_OP_MUL, F, n, MB(9), 2, MB(8), MB(8)),
    };
    CHECK_EQ_INT(tcf_fuser_plan(a, 3, &plan), 0);
    if (CHECK_EQ_INT(plan.ngroups, 1))
        CHECK(plan.groups[0].nitems == 2 && plan.item_group[2] == -1);
    /* a mean or rstd over a buffer the group touches: the norm stays out */
    tcf_item_t b[] = {
        op(TCF_OP_ADD, F, n, MB(3), 2, MB(1), MB(2)),
        norm(TCF_RED_LAYERNORM, F, K, M, MB(3), MB(4), MB(5), MB(1) + 64, MB(7), MB(8)),
    };
    CHECK_EQ_INT(tcf_fuser_plan(b, 2, &plan), 0);
    CHECK_EQ_INT(plan.ngroups, 0);
    CHECK(plan.reasons[TCF_FUSER_OVERLAP] >= 1);
    tcf_item_t c[] = {
        op(TCF_OP_ADD, F, n, MB(3), 2, MB(1), MB(2)),
        norm(TCF_RED_LAYERNORM, F, K, M, MB(3), MB(4), MB(5), MB(7), MB(7) + 4, MB(8)),
    };
    CHECK_EQ_INT(tcf_fuser_plan(c, 2, &plan), 0);
    CHECK_EQ_INT(plan.ngroups, 0);
    /* a norm of one row joins nothing (no [K, M] space of two rows or more) */
    tcf_item_t d[] = {
        op(TCF_OP_ADD, F, K, MB(3), 2, MB(1), MB(2)),
        norm(TCF_RED_LAYERNORM, F, K, 1, MB(3), MB(4), MB(5), MB(6), MB(7), MB(8)),
    };
    CHECK_EQ_INT(tcf_fuser_plan(d, 2, &plan), 0);
    CHECK_EQ_INT(plan.ngroups, 0);
    /* no source without its producers' splices, or for a form decoding refuses */
    tcf_reduce_shape_t s;
    tcf_item_t e = norm(TCF_RED_LAYERNORM, F, K, M, MB(3), MB(4), MB(5), MB(6), MB(7), MB(8));
    tcf_reduce_shape_of(&e.red, &s);
    char buf[4096];
    CHECK_EQ_INT(tcf_reduce_source(&s, NULL, buf, sizeof buf), -1);
    tcf_reduce_splice_t sp = { .prologue = "return 0;", .epilogue = "", .prologue2 = "return 0;" };
    CHECK_EQ_INT(tcf_reduce_source(&s, &sp, buf, sizeof buf), -1);   /* beta's prologue missing */
    s.affine = 2;
    sp.prologue2 = NULL, sp.prologue3 = "return 0;";
    CHECK_EQ_INT(tcf_reduce_source(&s, &sp, buf, sizeof buf), -1);   /* beta alone */
}

/* The window each CPU case plans: x -> neg (freed) -> norm (gamma, beta as the form has
 * them) -> y; mean and rstd beside (layernorm_emu.hpp's roles). With mis, x's address is
 * one element past a pack's alignment in the plan: it is then read one element at a time
 * (the CPU run gives it aligned memory; the code path is what differs). */
static size_t emu_window(int rms, unsigned affine, tcf_dtype_t dt, uint32_t K, uint32_t M, int mis,
                         tcf_item_t *win)
{
    win[0] = op(TCF_OP_NEG, dt, K * M, MB(2), 1, MB(1) + (mis ? tcf_dtype_size(dt) : 0), 0);
    win[1] = norm(rms ? TCF_RED_RMSNORM : TCF_RED_LAYERNORM, dt, K, M, MB(2), affine & 1 ? MB(4) : 0,
                  affine & 2 ? MB(5) : 0, rms ? 0 : MB(6), MB(7), MB(3));
    win[2] = free_(MB(2));
    return 3;
}

TEST(norm_kernels_on_the_cpu)
{
    /* rows whose vector count is below, at and past the block's 128 threads, odd counts */
    static const uint32_t shapes[][2] = { { 4, 3 }, { 8, 2 }, { 12, 5 }, { 100, 3 }, { 508, 2 },
                                          { 512, 3 }, { 516, 2 }, { 768, 4 }, { 1028, 2 },
                                          { 2052, 2 } };
    static const unsigned forms[][2] = { { 0, 3 }, { 0, 1 }, { 0, 0 }, { 1, 1 }, { 1, 0 } };
    emu_text_t et;
    if (emu_open(&et, "test_layernorm"))
        return;
    FILE *kf = et.kf, *tf = et.tf;
    char *src = malloc(SRC_CAP);
    unsigned ncase = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
            uint32_t K = shapes[i][0], M = shapes[i][1];
            tcf_dtype_t dt = (i + f) % 3 == 2 ? B : F;
            tcf_item_t win[3];
            size_t n = emu_window((int)forms[f][0], forms[f][1], dt, K, M, (i + f) % 4 == 1, win);
            if (!CHECK(tcf_fuser_plan(win, n, &plan) == 0 && plan.ngroups == 1 && plan.groups[0].g.red))
                continue;
            const tcf_fgroup_t *g = &plan.groups[0];
            tcf_rows_args_t ra;
            if (!CHECK(tcf_codegen_source(&g->g, src, SRC_CAP) > 0 &&
                       tcf_fuser_rows_args(g, win, n, &g->args, &ra) == 0) ||
                emu_put_kernel(kf, src, ncase))
                continue;
            fprintf(tf, "  { k%u::run, %u, %u, %u, %u, %u, %u,", ncase, K, M, forms[f][0], forms[f][1],
                    (unsigned)dt, g->g.nbufs);
            emu_put_bufs(tf, g, &ra, MB(0), 24);
            fprintf(tf, " },\n");
            ncase++;
        }
    free(src);
    if (!emu_close_run(&et, "layernorm", EMU_ROWS_ARGS
                       "struct lcase { void (*run)(const void *); unsigned K, M; int rms; unsigned affine; "
                       "int dt; unsigned nbufs, role[16], st[16][2]; };\n"
                       "static const lcase lcases[] = {\n",
                       "};\n#include \"tests/unit/layernorm_emu.hpp\"\n", ncase))
        printf("test_layernorm: the fused norms on the CPU: %u of %u groups equal to the model\n",
               ncase, ncase);
}

int main(void)
{
    load_fixture_launches(want);
    rk_open_nvrtc("test_layernorm");
    RUN(every_recorded_norm_launch);
    RUN(hand_made_bytes);
    RUN(residual_add_and_layernorm);
    RUN(packs_and_single_elements);
    RUN(refusals);
    RUN(norm_kernels_on_the_cpu);
    rk_report("test_layernorm", "norm kernels");
    free_launches();
    return check_main_end();
}
