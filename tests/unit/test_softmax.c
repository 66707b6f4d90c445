/* Row softmaxes: PyTorch 2.11's softmax_warp_forward/backward decoded (recognize/
 * decode_reduce.c) on every such launch of the recorded traces and on hand-made bytes,
 * planned with their producers and consumers as one group (fuser/group.c: the softmax is
 * elementwise over [K, M]), and generated as one kernel (codegen/gen_softmax.c) that
 * compiles with NVRTC (skipped, and said, without one). What the GPU says of the kernels'
 * bits is tests/gpu/fuse_softmax.py's and verification's. */
#include <stdio.h>
#include <sys/stat.h>
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

#define FWD "_ZN43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6320softmax_warp_forwardI"
#define BWD "_ZN43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6321softmax_warp_backwardI"

static tcf_plan_t plan;

static int want(const char *name) { return strstr(name, "_SoftMax_cu_") && strstr(name, "softmax_warp_"); }

static const uint32_t fwd_off[8] = { 0, 8, 16, 20, 24, 32, 40, 44 }, fwd_sz[8] = { 8, 8, 4, 4, 4, 8, 4, 1 };
static const uint32_t bwd_off[7] = { 0, 8, 16, 24, 28, 32, 40 }, bwd_sz[7] = { 8, 8, 8, 4, 4, 4, 8 };

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* A launch of name (FWD or BWD plus the template tail) with PyTorch's shape for K, M. */
static tcf_decode_status_t launch(const char *name, int bwd, uint64_t dst, uint64_t src, uint64_t out,
                                  int32_t M, int32_t stride, int32_t K, tcf_reduce_t *r, uint8_t *p,
                                  uint32_t grid[3], uint32_t block[3])
{
    uint32_t l2e = 0;
    while ((1u << l2e) < (uint32_t)K)
        l2e++;
    uint32_t ws = l2e < 5 ? 1u << l2e : 32u, rpb = 128 / ws * (l2e <= 7 ? 2u : 1u);
    memset(p, 0, 48);
    put64(p, dst), put64(p + 8, src);
    unsigned at = 16;
    if (bwd)
        put64(p + 16, out), at = 24;
    put32(p + at, (uint32_t)M), put32(p + at + 4, (uint32_t)stride), put32(p + at + 8, (uint32_t)K);
    if (!bwd)
        put32(p + 40, 0xffffffffu);   /* head_chunk_size -1 */
    grid[0] = ((uint32_t)M + rpb - 1) / rpb, grid[1] = grid[2] = 1;
    block[0] = ws, block[1] = 128 / ws, block[2] = 1;
    tcf_decode_launch_t d = { name, bwd ? 7u : 8u, bwd ? bwd_off : fwd_off, bwd ? bwd_sz : fwd_sz,
                              p, bwd ? 48u : 45u, { grid[0], grid[1], grid[2] },
                              { block[0], block[1], block[2] } };
    tcf_op_t op;
    CHECK_EQ_INT(tcf_decode_launch(&d, &op), TCF_DECODE_REDUCTION);
    return tcf_decode_reduce(&d, r);
}

TEST(every_recorded_softmax_launch)
{
    size_t ok = 0, fwd = 0, bwd = 0, lg = 0;
    for (size_t i = 0; i < nls; i++) {
        const launch_t *x = &ls[i];
        const kern_t *k = &ks[x->k];
        tcf_reduce_t r;
        tcf_op_t op;
        if (!fixture_decode_reduce(x, &r))
            continue;
        ok++;
        int b = tcf_red_softmax_bwd(r.op);
        fwd += !b, bwd += b;
        lg += r.op == TCF_RED_LOGSOFTMAX || r.op == TCF_RED_LOGSOFTMAX_BWD;
        /* the bytes say it: rows of K after each other, the block PyTorch chose for K */
        tcf_reduce_shape_t rs;
        tcf_reduce_shape_of(&r, &rs);
        uint32_t K = r.cfg.num_inputs, M = r.cfg.num_outputs, l2e = rs.l2e, ws = l2e < 5 ? 1u << l2e : 32u;
        CHECK(K >= 1 && K <= 1024 && (1u << l2e) >= K && (l2e == 0 || (1u << (l2e - 1)) < K));
        char tl[16];   /* the name's log2_elements is the row length's */
        snprintf(tl, sizeof tl, "Li%uELb", l2e);
        CHECK(strstr(k->name, tl) != NULL);
        CHECK(x->block[0] == ws && x->block[1] == 128 / ws && r.odims == 1 && r.osize[0] == M);
        CHECK(r.ostride[0][0] == K * tcf_dtype_size(r.out_dt) && r.ostride[0][1] == K * tcf_dtype_size(r.in_dt));
        CHECK(fixture_device_ptr(r.src) && fixture_device_ptr(r.dst) && (!b || fixture_device_ptr(r.src2)));
        /* the kernel a group would run for it launches as PyTorch launched it */
        tcf_reduce_shape_t s;
        uint32_t g[3], bl[3];
        tcf_reduce_shape_of(&r, &s);
        tcf_reduce_launch_dims(&s, M, g, bl);
        CHECK(g[0] == x->grid[0] && g[1] == 1 && bl[0] == x->block[0] && bl[1] == x->block[1]);
        /* and joins a group as an op over [K, M], writing full rows */
        if (K >= 2 && M >= 2) {
            CHECK_EQ_INT(tcf_fuser_reduce_op(&r, &op), 0);
            CHECK(op.nin == (b ? 2 : 1) && op.it.ndim == 2 && op.it.stride[0][0] == tcf_dtype_size(r.out_dt));
        }
    }
    printf("test_softmax: %zu of %zu recorded softmax launches decoded (%zu forward, %zu backward, "
           "%zu log)\n", ok, nls, fwd, bwd, lg);
    CHECK(nls >= 10 && ok == nls && fwd && bwd && lg);
}

TEST(hand_made_bytes)
{
    uint8_t p[48];
    uint32_t g[3], bl[3];
    tcf_reduce_t r;
    /* a float softmax over rows of 1000: l2e 10, a warp a row, 4 rows a block */
    CHECK_EQ_INT(launch(FWD "fffLi10ELb0ELb0EEEvPT0_PKT_iiiPKbib", 0, MB(1), MB(2), 0, 300, 1000, 1000,
                        &r, p, g, bl), TCF_DECODE_OK);
    tcf_reduce_shape_t rs;
    tcf_reduce_shape_of(&r, &rs);
    CHECK(r.op == TCF_RED_SOFTMAX && rs.l2e == 10 && r.cfg.num_inputs == 1000 && r.cfg.num_outputs == 300);
    CHECK(g[0] == 75 && bl[0] == 32 && bl[1] == 4 && r.src == MB(2) && r.dst == MB(1));
    /* rows of 5: 8 lanes a row, 2 rows a warp, 32 rows a block */
    CHECK_EQ_INT(launch(FWD "N3c108BFloat16ES2_fLi3ELb1ELb0EEEvPT0_PKT_iiiPKbib", 0, MB(1), MB(2), 0, 33, 5, 5,
                        &r, p, g, bl), TCF_DECODE_OK);
    CHECK(r.op == TCF_RED_LOGSOFTMAX && r.in_dt == B && r.out_dt == B && g[0] == 2 && bl[0] == 8 && bl[1] == 16);
    /* rows of 2048: 64 elements a lane */
    CHECK_EQ_INT(launch(FWD "fffLi11ELb0ELb0EEEvPT0_PKT_iiiPKbib", 0, MB(1), MB(2), 0, 10, 2048, 2048,
                        &r, p, g, bl), TCF_DECODE_OK);
    tcf_reduce_shape_of(&r, &rs);
    CHECK(rs.l2e == 11 && g[0] == 3 && bl[0] == 32 && bl[1] == 4);
    CHECK_EQ_INT(launch(FWD "fffLi12ELb0ELb0EEEvPT0_PKT_iiiPKbib", 0, MB(1), MB(2), 0, 10, 4096, 4096,
                        &r, p, g, bl), TCF_DECODE_BAD_NAME);
    /* half in, float out (softmax(x, dtype=float)) */
    CHECK_EQ_INT(launch(FWD "N3c104HalfEffLi7ELb0ELb0EEEvPT0_PKT_iiiPKbib", 0, MB(1), MB(2), 0, 9, 100, 100,
                        &r, p, g, bl), TCF_DECODE_OK);
    CHECK(r.in_dt == H && r.out_dt == F && r.ostride[0][0] == 400 && r.ostride[0][1] == 200);
    /* the backward: grad, output, gradInput */
    CHECK_EQ_INT(launch(BWD "fffLi6ELb0ELb0EEEvPT0_PKT_S5_iiiPKb", 1, MB(1), MB(2), MB(3), 64, 64, 64,
                        &r, p, g, bl), TCF_DECODE_OK);
    CHECK(r.op == TCF_RED_SOFTMAX_BWD && r.src == MB(2) && r.src2 == MB(3) && r.dst == MB(1) && g[0] == 8);
    /* made for fewer rows, as verification runs it */
    tcf_decode_launch_t d = { BWD "fffLi6ELb0ELb0EEEvPT0_PKT_S5_iiiPKb", 7, bwd_off, bwd_sz, p, 48, { g[0], 1, 1 },
                              { bl[0], bl[1], 1 } };
    tcf_decode_reduce_kernel_t rk;
    CHECK_EQ_INT(tcf_decode_reduce_kernel(&d, &rk), TCF_DECODE_OK);
    CHECK_EQ_INT(tcf_decode_fullrow_resize(&rk, p, 48, 5, g), 0);
    CHECK(g[0] == 1 && p[24] == 5 && p[25] == 0);
    CHECK_EQ_INT(tcf_decode_reduce_apply(&rk, p, 48, g, bl, &r), TCF_DECODE_OK);
    CHECK(r.cfg.num_outputs == 5);
    CHECK_EQ_INT(tcf_decode_fullrow_resize(&rk, p, 40, 5, g), -1);
    /* refusals, each by its reason */
    CHECK_EQ_INT(launch(FWD "fffLi10ELb0ELb1EEEvPT0_PKT_iiiPKbib", 0, MB(1), MB(2), 0, 300, 1000, 1000,
                        &r, p, g, bl), TCF_DECODE_SOFTMAX_MASKED);
    CHECK_EQ_INT(launch(FWD "dddLi10ELb0ELb0EEEvPT0_PKT_iiiPKbib", 0, MB(1), MB(2), 0, 300, 1000, 1000,
                        &r, p, g, bl), TCF_DECODE_UNSUPPORTED_DTYPE);
    CHECK_EQ_INT(launch(FWD "fffLi10ELb0ELb0EEEvPT0_PKT_iiiPKbi", 0, MB(1), MB(2), 0, 300, 1000, 1000,
                        &r, p, g, bl), TCF_DECODE_BAD_NAME);
    CHECK_EQ_INT(launch(FWD "fffLi10ELb0ELb0EEEvPT0_PKT_iiiPKbib", 0, MB(1), MB(2), 0, 300, 1024, 1000,
                        &r, p, g, bl), TCF_DECODE_BAD_VALUE);   /* stride != element_count */
    CHECK_EQ_INT(launch(FWD "fffLi9ELb0ELb0EEEvPT0_PKT_iiiPKbib", 0, MB(1), MB(2), 0, 300, 1000, 1000,
                        &r, p, g, bl), TCF_DECODE_BAD_VALUE);   /* rows too long for l2e 9 */
    CHECK_EQ_INT(launch(FWD "fffLi10ELb0ELb0EEEvPT0_PKT_iiiPKbib", 0, MB(1), MB(2) + 2, 0, 300, 1000, 1000,
                        &r, p, g, bl), TCF_DECODE_BAD_VALUE);   /* a misaligned float */
    CHECK(r.op == TCF_RED_NONE && r.src == 0);                  /* a refusal is all zeros */
    uint8_t q[48];
    CHECK_EQ_INT(launch(FWD "fffLi10ELb0ELb0EEEvPT0_PKT_iiiPKbib", 0, MB(1), MB(2), 0, 300, 1000, 1000,
                        &r, q, g, bl), TCF_DECODE_OK);
    g[0]++;
    tcf_decode_launch_t d2 = { FWD "fffLi10ELb0ELb0EEEvPT0_PKT_iiiPKbib", 8, fwd_off, fwd_sz, q, 45,
                               { g[0], 1, 1 }, { bl[0], bl[1], 1 } };
    CHECK_EQ_INT(tcf_decode_reduce(&d2, &r), TCF_DECODE_BAD_LAUNCH);   /* not PyTorch's grid */
    char line[300];
    CHECK_EQ_INT(launch(BWD "fffLi6ELb0ELb0EEEvPT0_PKT_S5_iiiPKb", 1, MB(1), MB(2), MB(3), 64, 64, 64,
                        &r, p, g, bl), TCF_DECODE_OK);
    tcf_decode_reduce_describe(&r, line, sizeof line);
    CHECK(strstr(line, "SOFTMAX_BWD f32->f32") && strstr(line, "K=64 M=64") && strstr(line, "l2e 6") &&
          strstr(line, " out 0x"));
}

static tcf_item_t op(tcf_op_kind_t k, tcf_dtype_t in, tcf_dtype_t out, uint32_t n, uint64_t o, int nin,
                     uint64_t a, uint64_t b)
{
    tcf_item_t it = { .kind = TCF_ITEM_OP };
    tcf_op_t *p = &it.op;
    p->kind = k, p->loop = TCF_LOOP_VEC, p->vec = 4, p->nin = (uint8_t)nin, p->n = n;
    p->out = o, p->in[0] = a, p->in[1] = b;
    p->compute_dt = k == TCF_OP_CAST && in != F ? out : in, p->res_dt = p->out_dt = out;
    for (int i = 0; i < nin; i++) p->in_dt[i] = in;
    if (k == TCF_OP_MUL && in == B) p->compute_dt = B;
    return it;
}

static tcf_item_t sm(tcf_red_op_t o, tcf_dtype_t dt, uint32_t K, uint32_t M, uint64_t dst, uint64_t src,
                     uint64_t out)
{
    tcf_item_t it = { .kind = TCF_ITEM_REDUCE };
    tcf_reduce_t *r = &it.red;
    r->op = o, r->in_dt = r->out_dt = dt, r->acc_dt = F;
    r->cfg.num_inputs = K, r->cfg.num_outputs = M;
    r->cfg.block_width = tcf_softmax_lanes(tcf_softmax_l2e(K)), r->cfg.block_height = 128 / r->cfg.block_width;
    r->src = src, r->dst = dst, r->src2 = out, r->odims = 1, r->osize[0] = M;
    r->ostride[0][0] = r->ostride[0][1] = K * tcf_dtype_size(dt);
    return it;
}

static tcf_item_t free_(uint64_t p) { return (tcf_item_t){ .kind = TCF_ITEM_FREE, .ptr = p }; }

static void compiles(const tcf_fgroup_t *g, const char *what)
{
    static const char *const marks[] = {
        "tcf_reduce(const tcf_rargs a)",
        "__shfl_xor_sync",
        "tcf_epi(a, r[i], (unsigned)e, tcf_cvt_out(v))",
        NULL,
    };
    rk_compiles(g, what, "a softmax kernel", marks);
}

/* HF eager attention's softmax in an autocast training step, as eager launches it:
 * forward scores (f32) -> softmax -> .to(bf16); backward grad (bf16) .float(), * out (the
 * kernel's grad is grad * out), softmax backward, .to(bf16), * scaling (bf16). */
TEST(attention_softmax_forward_and_backward)
{
    const uint32_t K = 1024, M = 512, n = K * M;
    uint64_t sc = MB(1), pr = MB(2), pb = MB(3), g = MB(4), gf = MB(5), tmp = MB(6), gi = MB(7),
             gib = MB(8), gs = MB(9);
    tcf_item_t fw[] = {
        sm(TCF_RED_SOFTMAX, F, K, M, pr, sc, 0),
        op(TCF_OP_CAST, F, B, n, pb, 1, pr, 0),
    };
    CHECK_EQ_INT(tcf_fuser_plan(fw, 2, &plan), 0);
    if (CHECK_EQ_INT(plan.ngroups, 1)) {
        const tcf_fgroup_t *G = &plan.groups[0];
        CHECK(G->g.red == 1 && G->g.rowops == 0 && G->g.rs.op == TCF_RED_SOFTMAX && G->g.rs.l2e == 10);
        CHECK(G->g.ops[1].in_src[0] == SRC(0) && G->g.ops[0].out_buf != TCF_NO_STORE);
        CHECK(G->args.size[0] == K && G->args.size[1] == M);
        compiles(G, "softmax forward -> cast");
    }
    tcf_item_t mul = op(TCF_OP_MUL, F, F, n, tmp, 2, gf, pr), scale = op(TCF_OP_MUL, B, B, n, gs, 1, gib, 0);
    scale.op.sarg = TCF_SARG_B, scale.op.nscalar = 1, scale.op.s[0].dt = F, scale.op.s[0].f = 0.125f,
    scale.op.s[0].bits = 0x3e000000u;
    tcf_item_t bw[] = {
        op(TCF_OP_CAST, B, F, n, gf, 1, g, 0),
        mul,
        sm(TCF_RED_SOFTMAX_BWD, F, K, M, gi, tmp, pr),
        free_(tmp),
        free_(gf),
        op(TCF_OP_CAST, F, B, n, gib, 1, gi, 0),
        free_(gi),
        scale,
        free_(gib),
    };
    CHECK_EQ_INT(tcf_fuser_plan(bw, sizeof bw / sizeof bw[0], &plan), 0);
    if (CHECK_EQ_INT(plan.ngroups, 1)) {
        const tcf_fgroup_t *G = &plan.groups[0];
        CHECK_EQ_INT(G->nitems, 5);
        CHECK(G->g.red == 3 && G->g.rs.op == TCF_RED_SOFTMAX_BWD && G->g.ops[2].nin == 2);
        CHECK(G->g.ops[2].in_src[0] == SRC(1));   /* grad * out from the mul, out loaded */
        CHECK(!(G->g.ops[2].in_src[1] & TCF_SRC_OP));
        /* every intermediate was freed: only the scaled gradient is stored */
        for (unsigned k = 0; k < 4; k++)
            CHECK(G->g.ops[k].out_buf == TCF_NO_STORE);
        CHECK(G->g.ops[4].out_buf != TCF_NO_STORE && G->stores_dropped == 4);
        tcf_rows_args_t ra;
        CHECK_EQ_INT(tcf_fuser_rows_args(G, bw, sizeof bw / sizeof bw[0], &G->args, &ra), 0);
        CHECK(ra.r.src == tmp && ra.r.dst == gi && ra.r.num_inputs == K && ra.r.num_outputs == M);
        compiles(G, "cast, mul -> softmax backward -> cast, scale");
        tcf_fused_args_t a;
        CHECK_EQ_INT(tcf_fuser_bind(G, bw, sizeof bw / sizeof bw[0], &a), 0);
    }
    /* log_softmax over half rows of 100, 2 rows a warp, and a consumer */
    tcf_item_t lw[] = {
        op(TCF_OP_MUL, H, H, 100 * 64, MB(10), 2, MB(11), MB(12)),
        sm(TCF_RED_LOGSOFTMAX, H, 100, 64, MB(13), MB(10), 0),
        op(TCF_OP_EXP, H, H, 100 * 64, MB(14), 1, MB(13), 0),
    };
    CHECK_EQ_INT(tcf_fuser_plan(lw, 3, &plan), 0);
    if (CHECK_EQ_INT(plan.ngroups, 1))
        compiles(&plan.groups[0], "mul -> log_softmax (half) -> exp");
}

TEST(refusals)
{
    const uint32_t K = 128, M = 64, n = K * M;
    /* no per-row op after a softmax: an op over M elements ends the group */
    tcf_item_t a[] = {
        sm(TCF_RED_SOFTMAX, F, K, M, MB(1), MB(2), 0),
        op(TCF_OP_EXP, F, F, M, MB(3), 1, MB(4), 0),
    };
    CHECK_EQ_INT(tcf_fuser_plan(a, 2, &plan), 0);
    CHECK_EQ_INT(plan.ngroups, 0);
    /* one reduction a group: a softmax after a row reduction ends it */
    tcf_item_t b[] = {
        op(TCF_OP_EXP, F, F, n, MB(1), 1, MB(2), 0),
        sm(TCF_RED_SOFTMAX, F, K, M, MB(3), MB(1), 0),
        sm(TCF_RED_SOFTMAX, F, K, M, MB(4), MB(3), 0),
    };
    CHECK_EQ_INT(tcf_fuser_plan(b, 3, &plan), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].nitems == 2 && plan.reasons[TCF_FUSER_REDUCE2] == 1);
    /* in place (its output where a producer's input was loaded): refused */
    tcf_item_t c[] = {
        op(TCF_OP_EXP, F, F, n, MB(1), 1, MB(2), 0),
        sm(TCF_RED_SOFTMAX, F, K, M, MB(2), MB(1), 0),
    };
    CHECK_EQ_INT(tcf_fuser_plan(c, 2, &plan), 0);
    CHECK_EQ_INT(plan.ngroups, 0);
    /* a space that would not stay [K, M]: a producer over rows of 128, the softmax's 256 */
    tcf_item_t d[] = {
        op(TCF_OP_EXP, F, F, n, MB(1), 1, MB(2), 0),
        sm(TCF_RED_SOFTMAX, F, 256, 32, MB(3), MB(1), 0),
        op(TCF_OP_EXP, F, F, n, MB(4), 1, MB(3), 0),
    };
    tcf_op_t *x = &d[0].op;
    x->loop = TCF_LOOP_STRIDED, x->vec = 1, x->it.ndim = 2, x->it.size[0] = K, x->it.size[1] = M;
    x->it.stride[0][0] = x->it.stride[1][0] = 4, x->it.stride[0][1] = x->it.stride[1][1] = 4 * K;
    CHECK_EQ_INT(tcf_fuser_plan(d, 3, &plan), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].nitems == 2 && plan.groups[0].g.red == 1);
    CHECK_EQ_INT(plan.reasons[TCF_FUSER_ROWS], 1);
    /* the kernel wants its splices: no unspliced softmax source */
    tcf_reduce_shape_t s;
    tcf_reduce_shape_of(&d[1].red, &s);
    static char buf[SRC_CAP];
    CHECK_EQ_INT(tcf_reduce_source(&s, NULL, buf, sizeof buf), -1);
    tcf_reduce_splice_t sp = { .prologue = "return 0;", .epilogue = "" };
    CHECK(tcf_reduce_source(&s, &sp, buf, sizeof buf) > 0);
    s.bw = 16;   /* not PyTorch's block for l2e 8 */
    CHECK_EQ_INT(tcf_reduce_source(&s, &sp, buf, sizeof buf), -1);
    s.bw = 32, s.op = TCF_RED_SOFTMAX_BWD;   /* the backward needs its second prologue */
    CHECK_EQ_INT(tcf_reduce_source(&s, &sp, buf, sizeof buf), -1);
}

/* The groups softmax_emu.hpp runs: a neg (x, role 1, into role 2, freed) feeding the
 * softmax or log_softmax (into role 3); or feeding the softmax backward as its grad, with
 * the forward's output at role 4. */
static size_t emu_window(tcf_red_op_t o, uint32_t K, uint32_t M, tcf_item_t *win)
{
    win[0] = op(TCF_OP_NEG, F, F, K * M, MB(2), 1, MB(1), 0);
    win[1] = sm(o, F, K, M, MB(3), MB(2), tcf_red_softmax_bwd(o) ? MB(4) : 0);
    win[2] = free_(MB(2));
    return 3;
}

TEST(softmax_kernels_on_the_cpu)
{
    static const uint32_t shapes[][2] = { { 2, 3 }, { 3, 5 }, { 5, 33 }, { 16, 2 }, { 31, 9 },
                                          { 33, 7 }, { 64, 5 }, { 100, 3 }, { 128, 65 },
                                          { 129, 4 }, { 255, 3 }, { 700, 2 }, { 1024, 5 },
                                          { 2048, 3 } };
    static const tcf_red_op_t ops[] = { TCF_RED_SOFTMAX, TCF_RED_LOGSOFTMAX, TCF_RED_SOFTMAX_BWD,
                                        TCF_RED_LOGSOFTMAX_BWD };
    emu_text_t et;
    if (emu_open(&et, "test_softmax"))
        return;
    FILE *kf = et.kf, *tf = et.tf;
    char *src = malloc(SRC_CAP);
    unsigned ncase = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (size_t q = 0; q < 4; q++) {
            uint32_t K = shapes[i][0], M = shapes[i][1];
            if (q >= 2 && K > 1024)
                continue;   /* the backward's rows: 1024 at most in the recorded launches */
            tcf_item_t win[3];
            size_t n = emu_window(ops[q], K, M, win);
            if (!CHECK(tcf_fuser_plan(win, n, &plan) == 0 && plan.ngroups == 1 && plan.groups[0].g.red))
                continue;
            const tcf_fgroup_t *g = &plan.groups[0];
            tcf_rows_args_t ra;
            if (!CHECK(tcf_codegen_source(&g->g, src, SRC_CAP) > 0 &&
                       tcf_fuser_rows_args(g, win, n, &g->args, &ra) == 0) ||
                emu_put_kernel(kf, src, ncase))
                continue;
            fprintf(tf, "  { k%u::run, %u, %u, %u, %u, %u, %zu, %u,", ncase, K, M, g->g.rs.bw,
                    g->g.rs.bh, g->g.rs.l2e, q, g->g.nbufs);
            emu_put_bufs(tf, g, &ra, MB(0), 24);
            fprintf(tf, " },\n");
            ncase++;
        }
    free(src);
    if (!emu_close_run(&et, "softmax", EMU_ROWS_ARGS
                       "struct scase { void (*run)(const void *); unsigned K, M, bw, bh, l2e; int op; "
                       "unsigned nbufs, role[16], st[16][2]; };\n"
                       "static const scase scases[] = {\n",
                       "};\n#include \"tests/unit/softmax_emu.hpp\"\n", ncase))
        printf("test_softmax: the fused softmaxes on the CPU: %u of %u groups equal to the model\n",
               ncase, ncase);
}

int main(void)
{
    load_fixture_launches(want);
    rk_open_nvrtc("test_softmax");
    RUN(every_recorded_softmax_launch);
    RUN(hand_made_bytes);
    RUN(attention_softmax_forward_and_backward);
    RUN(refusals);
    RUN(softmax_kernels_on_the_cpu);
    rk_report("test_softmax", "softmax kernels");
    free_launches();
    return check_main_end();
}
