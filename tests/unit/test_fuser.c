/* Planning (fuser/): every rule of fuser.h on hand-built windows, re-binding, then real
 * launches: the hand-written tanh-GELU of tests/fixtures/torch-2.11-h100-single-ops.log
 * must plan into one group of eight, and every recorded trace (tests/fixtures, *.jsonl) is
 * planned window by window under invariants, printing its coverage. */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recognize/decode.h"
#include "trace/read.h"
#include "check.h"
#include "fixture_kernels.h"
#include "fuser/fuser.h"
#include "fuser_equiv.h"
#include "fuser_items.h"

#define N 1024u
#define SRC(k) (TCF_SRC_OP | (k))

static tcf_plan_t plan;   /* large: kept off the stack */

#define UN(k, out, a) op3(TCF_OP_##k, TCF_DT_F32, N, out, 1, a, 0, 0)
#define BIN(k, out, a, b) op3(TCF_OP_##k, TCF_DT_F32, N, out, 2, a, b, 0)

static tcf_item_t opaque(void) { return (tcf_item_t){ .kind = TCF_ITEM_OPAQUE }; }
static tcf_item_t alloc_(uint64_t p) { return (tcf_item_t){ .kind = TCF_ITEM_ALLOC, .ptr = p, .size = 4 * N }; }

static int P(const tcf_item_t *it, size_t n)
{
    return tcf_fuser_plan(it, n, &plan);
}
#define PLAN(arr) P(arr, sizeof arr / sizeof arr[0])
static const tcf_gop_t *gop(int g, int k) { return &plan.groups[g].g.ops[k]; }

TEST(chain_of_8_is_one_group)
{
    tcf_item_t w[8];
    w[0] = scal(UN(MUL, MB(1), MB(0)), TCF_SARG_A, 0.5f, 0, 1);
    for (int i = 1; i < 8; i++) w[i] = UN(TANH, MB(i + 1), MB(i));
    CHECK_EQ_INT(PLAN(w), 0);
    CHECK_EQ_INT(plan.ngroups, 1);
    const tcf_fgroup_t *g = &plan.groups[0];
    CHECK(g->first == 0 && g->last == 7 && g->nitems == 8 && g->n == N && g->args.n == N);
    CHECK_EQ_INT(g->g.nbufs, 9);   /* x, and every result: no frees, so all stored */
    CHECK_EQ_INT(g->g.vec, 4);
    CHECK(g->g.ops[0].in_src[0] == 0 && g->g.ops[0].out_buf == 1 && g->stores_dropped == 0);
    for (int k = 1; k < 8; k++)
        CHECK(gop(0, k)->in_src[0] == SRC(k - 1) && gop(0, k)->out_buf == k + 1);
    CHECK(g->g.nscalars == 1 && gop(0, 0)->scalar_arg[0] == 0 && g->args.s[0] == 0x3f000000);
    CHECK(g->scalar_from[0].item == 0 && g->scalar_from[0].slot == 0);
    CHECK(g->args.buf[0] == MB(0) && g->args.buf[8] == MB(8));
    CHECK(g->buf_from[0].item == 0 && g->buf_from[0].operand == 1 && g->buf_from[1].operand == 0);
    CHECK_EQ_U64(g->bytes_read, 4 * N);
    CHECK_EQ_U64(g->bytes_written, 8 * 4 * N);
    CHECK_EQ_U64(g->bytes_avoided, 7 * 4 * N);
    for (int i = 0; i < 8; i++) CHECK_EQ_INT(plan.item_group[i], 0);
    for (int r = 0; r < TCF_FUSER_NREASON; r++) CHECK_EQ_INT(plan.reasons[r], 0);
}

TEST(splits_size_opaque_limits)
{
    /* item 3, over another size, reads what item 2 wrote: it cannot be stepped over */
    tcf_item_t w[] = { UN(EXP, MB(1), MB(0)), UN(EXP, MB(2), MB(1)), UN(EXP, MB(3), MB(2)),
                       op3(TCF_OP_EXP, TCF_DT_F32, 2 * N, MB(4), 1, MB(3), 0, 0),
                       UN(EXP, MB(6), MB(0)), UN(EXP, MB(7), MB(6)), opaque(), UN(EXP, MB(8), MB(7)),
                       opaque(), UN(EXP, MB(9), MB(8)) };
    CHECK_EQ_INT(PLAN(w), 0);
    CHECK_EQ_INT(plan.ngroups, 2);
    CHECK(plan.groups[0].first == 0 && plan.groups[0].last == 2);
    CHECK(plan.groups[1].first == 4 && plan.groups[1].last == 5);
    CHECK(plan.item_group[3] == -1 && plan.item_group[6] == -1 && plan.item_group[7] == -1);
    CHECK_EQ_INT(plan.reasons[TCF_FUSER_SIZE], 1);
    CHECK_EQ_INT(plan.reasons[TCF_FUSER_ALONE], 2);
    /* limits: 33 in-place ops -> 32 + 1; 17 buffers; 16 scalars */
    tcf_item_t big[40];
    for (int i = 0; i < 33; i++) big[i] = UN(EXP, MB(0), MB(0));
    CHECK_EQ_INT(P(big, 33), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].nitems == 32 && plan.groups[0].g.nbufs == 1);
    CHECK_EQ_INT(plan.reasons[TCF_FUSER_TOO_BIG], 1);
    for (int i = 0; i < 20; i++) big[i] = UN(EXP, MB(i + 1), MB(0));
    CHECK_EQ_INT(P(big, 20), 0);
    CHECK(plan.ngroups == 2 && plan.groups[0].nitems == 15 && plan.groups[0].g.nbufs == 16);
    for (int i = 0; i < 9; i++) big[i] = scal(UN(ADD, MB(0), MB(0)), TCF_SARG_OTHER, 1, 2, 2);
    CHECK_EQ_INT(P(big, 9), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].nitems == 8 && plan.groups[0].g.nscalars == 16);
    CHECK_EQ_INT(plan.reasons[TCF_FUSER_TOO_BIG], 1);
    CHECK_EQ_INT(P(big, TCF_FUSER_MAX_ITEMS + 1), -1);   /* refused before any item is read */
    CHECK_EQ_INT(plan.ngroups, 0);
}

TEST(overlap_and_alias)
{
    tcf_item_t partial[] = { UN(EXP, MB(1), MB(0)), UN(EXP, MB(2), MB(1) + 4) };
    CHECK_EQ_INT(PLAN(partial), 0);
    CHECK(plan.ngroups == 0 && plan.reasons[TCF_FUSER_OVERLAP] == 2);
    tcf_item_t dtypes[] = { op3(TCF_OP_EXP, TCF_DT_F16, N, MB(1), 1, MB(0), 0, 0),
                            op3(TCF_OP_EXP, TCF_DT_BF16, N, MB(2), 1, MB(1), 0, 0) };
    CHECK_EQ_INT(PLAN(dtypes), 0);   /* one range read as two dtypes */
    CHECK(plan.ngroups == 0 && plan.reasons[TCF_FUSER_OVERLAP] == 2);
    tcf_item_t self[] = { UN(EXP, MB(1), MB(0)), UN(EXP, MB(2), MB(2) + 8), UN(EXP, MB(3), MB(1)) };
    CHECK_EQ_INT(PLAN(self), 0);     /* an op whose own operands overlap stays alone */
    CHECK(plan.ngroups == 0 && plan.reasons[TCF_FUSER_OVERLAP] == 2 &&
          plan.reasons[TCF_FUSER_ALONE] == 1);
    /* exact aliases: x*x, in-place, an output read later and still stored */
    tcf_item_t alias[] = { BIN(MUL, MB(1), MB(0), MB(0)), scal(UN(MUL, MB(1), MB(1)), TCF_SARG_A, 2, 0, 1),
                           BIN(ADD, MB(2), MB(1), MB(0)) };
    CHECK_EQ_INT(PLAN(alias), 0);
    CHECK_EQ_INT(plan.ngroups, 1);
    CHECK(gop(0, 0)->in_src[0] == 0 && gop(0, 0)->in_src[1] == 0 && gop(0, 0)->out_buf == TCF_NO_STORE);
    CHECK(gop(0, 1)->in_src[0] == SRC(0) && gop(0, 1)->out_buf == 1);  /* overwrote op 0 */
    CHECK(gop(0, 2)->in_src[0] == SRC(1) && gop(0, 2)->in_src[1] == 0 && gop(0, 2)->out_buf == 2);
    CHECK(plan.groups[0].g.nbufs == 3 && plan.groups[0].stores_dropped == 1);
    CHECK_EQ_U64(plan.groups[0].bytes_read, 4 * N);
    CHECK_EQ_U64(plan.groups[0].bytes_avoided, (3 + 2 + 3 - 1 - 2) * 4 * N);
}

/* Work issued ahead (exec/ahead.c) is passed over: HF Llama's MLP, silu(g) * u with the up
 * projection's GEMM (and cuBLAS's memset) between them, plans as one group that never
 * stores silu's result; the same window with the GEMM as opaque work plans nothing. */
TEST(ahead_is_passed_over)
{
    uint64_t x = MB(0), g = MB(1), s = MB(2), u = MB(3), m = MB(4);
    tcf_item_t ahead = { .kind = TCF_ITEM_AHEAD };
    tcf_item_t w[] = { alloc_(s), UN(SILU, s, g), free_(g), alloc_(u), ahead, ahead,
                       alloc_(m), BIN(MUL, m, s, u), free_(s), free_(u), opaque(), free_(m) };
    CHECK_EQ_INT(PLAN(w), 0);
    CHECK_EQ_INT(plan.ngroups, 1);
    const tcf_fgroup_t *G = &plan.groups[0];
    CHECK(G->first == 1 && G->last == 7 && G->nitems == 2);
    CHECK(gop(0, 0)->out_buf == TCF_NO_STORE && G->stores_dropped == 1);
    CHECK(G->g.nbufs == 3 && G->args.buf[0] == g && G->args.buf[1] == u && G->args.buf[2] == m);
    (void)x;
    w[4] = w[5] = opaque();
    CHECK_EQ_INT(PLAN(w), 0);
    CHECK_EQ_INT(plan.ngroups, 0);
    /* the extents the ahead test compares: out, then each input, one element size past
     * the last element */
    tcf_item_t b = BIN(MUL, m, s, u);
    uint64_t beg[TCF_FUSER_EXTENTS], end[TCF_FUSER_EXTENTS];
    CHECK_EQ_INT(tcf_fuser_extents(&b, beg, end), 3);
    CHECK(beg[0] == m && end[0] == m + 4 * N && beg[1] == s && end[1] == s + 4 * N &&
          beg[2] == u && end[2] == u + 4 * N);
    tcf_item_t o = opaque(), a = alloc_(x);
    CHECK_EQ_INT(tcf_fuser_extents(&o, beg, end), -1);
    CHECK_EQ_INT(tcf_fuser_extents(&a, beg, end), -1);
}

TEST(frees_drop_stores)
{
    uint64_t x = MB(0), t1 = MB(1), t2 = MB(2), t3 = MB(3);
    tcf_item_t w[] = { alloc_(t1), scal(UN(MUL, t1, x), TCF_SARG_A, 2, 0, 1), alloc_(t2),
                       BIN(ADD, t2, t1, x), free_(t1), alloc_(t3), UN(TANH, t3, t2), free_(t2),
                       opaque(), free_(t3) };
    CHECK_EQ_INT(PLAN(w), 0);
    CHECK_EQ_INT(plan.ngroups, 1);
    const tcf_fgroup_t *g = &plan.groups[0];
    CHECK(g->first == 1 && g->last == 6 && plan.item_group[4] == -1 && plan.item_group[6] == 0);
    CHECK(gop(0, 0)->out_buf == TCF_NO_STORE && gop(0, 1)->out_buf == TCF_NO_STORE);
    CHECK(gop(0, 2)->out_buf == 1 && g->stores_dropped == 2);   /* t3: the opaque may read it */
    CHECK(g->g.nbufs == 2 && g->args.buf[0] == x && g->args.buf[1] == t3);
    CHECK(gop(0, 1)->in_src[0] == SRC(0) && gop(0, 1)->in_src[1] == 0 && gop(0, 2)->in_src[0] == SRC(1));
    CHECK_EQ_U64(g->bytes_read + g->bytes_written, 8 * N);
    /* the final output freed with nothing between: dropped; read by a later op: kept */
    tcf_item_t fin[] = { UN(EXP, t1, x), UN(EXP, t2, t1), free_(t1), free_(t2) };
    CHECK_EQ_INT(PLAN(fin), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].stores_dropped == 2);
    tcf_item_t rd[] = { UN(EXP, t1, x), UN(EXP, t2, t1), free_(t1),
                        op3(TCF_OP_EXP, TCF_DT_F32, 2 * N, t3, 1, t2, 0, 0), free_(t2) };
    CHECK_EQ_INT(PLAN(rd), 0);   /* t3's op reads t2 (and more): t2 stays */
    CHECK(plan.groups[0].stores_dropped == 1 && gop(0, 1)->out_buf != TCF_NO_STORE);
    tcf_item_t other[] = { UN(EXP, t1, x), UN(EXP, t2, t1), free_(t1 + 4096), free_(t2 - 256) };
    CHECK_EQ_INT(PLAN(other), 0);   /* freed, but not with the buffer's own pointer */
    CHECK(plan.groups[0].stores_dropped == 0);
    /* a block freed and handed out again inside the group is a new buffer */
    tcf_item_t reuse[] = { UN(EXP, t1, x), UN(EXP, t2, t1), free_(t1), alloc_(t1), UN(EXP, t1, t2) };
    CHECK_EQ_INT(PLAN(reuse), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].nitems == 3 && plan.groups[0].g.nbufs == 3);
    CHECK(gop(0, 0)->out_buf == TCF_NO_STORE && gop(0, 2)->out_buf == 2);
    tcf_item_t stale[] = { UN(EXP, t1, x), UN(EXP, t2, t1), free_(t1), alloc_(t1), BIN(ADD, t3, t1, t2) };
    CHECK_EQ_INT(PLAN(stale), 0);   /* read before written: eager saw the dead store */
    CHECK(plan.ngroups == 1 && plan.groups[0].nitems == 2 && plan.reasons[TCF_FUSER_OVERLAP] == 1);
}

TEST(dtypes_where_cast_addcmul_sargs)
{
    uint64_t x = MB(0), m = MB(1), y = MB(2), h = MB(3), o = MB(4);
    tcf_item_t cmp = scal(UN(CMP_SCALAR, m, x), 0, 0, 0, 1), cast = UN(CAST, h, y);
    cmp.op.out_dt = cmp.op.res_dt = TCF_DT_BOOL, cmp.op.mode = TCF_CMP_GT;
    cast.op.loop = TCF_LOOP_CAST, cast.op.out_dt = cast.op.res_dt = TCF_DT_F16;
    tcf_item_t wh = op3(TCF_OP_WHERE, TCF_DT_F32, N, y, 3, m, x, y);
    wh.op.in_dt[0] = TCF_DT_BOOL;
    tcf_item_t w[] = { cmp, wh, cast, op3(TCF_OP_ADDCMUL, TCF_DT_F16, N, o, 3, h, h, h),
                       scal(op3(TCF_OP_ADD, TCF_DT_F16, N, o, 1, o, 0, 0), TCF_SARG_SELF, -1, 2, 2) };
    w[3] = scal(w[3], 0, 0.1f, 0, 1);
    CHECK_EQ_INT(PLAN(w), 0);
    CHECK_EQ_INT(plan.ngroups, 1);
    const tcf_group_t *g = &plan.groups[0].g;
    CHECK(g->nops == 5 && g->nbufs == 5 && g->vec == 4);   /* x m y h o; widest is f32 */
    CHECK(g->buf_dt[0] == TCF_DT_F32 && g->buf_dt[1] == TCF_DT_BOOL && g->buf_dt[3] == TCF_DT_F16);
    CHECK(g->ops[1].in_src[0] == SRC(0) && g->ops[1].in_src[1] == 0 && g->ops[1].in_src[2] == 2);
    CHECK(g->ops[1].in_dt[0] == TCF_DT_BOOL && g->ops[1].out_buf == 2);   /* where in place */
    CHECK(g->ops[2].in_src[0] == SRC(1) && g->ops[2].in_dt[0] == TCF_DT_F32 && g->ops[2].out_dt == TCF_DT_F16);
    for (int i = 0; i < 3; i++) CHECK(g->ops[3].in_src[i] == SRC(2));
    CHECK(g->ops[4].in_src[0] == SRC(3) && g->ops[3].out_buf == TCF_NO_STORE && g->ops[4].out_buf == 4);
    CHECK(g->nscalars == 4 && g->ops[4].scalar_arg[0] == 2 && g->ops[4].scalar_arg[1] == 3);
    CHECK(plan.groups[0].scalar_from[3].item == 4 && plan.groups[0].scalar_from[3].slot == 1);
    CHECK(g->ops[0].scalar_dt[0] == TCF_DT_F32 && g->ops[4].nscalar == 2 && g->ops[4].nin == 1);
    tcf_item_t half[] = { cast, op3(TCF_OP_EXP, TCF_DT_F16, N, o, 1, h, 0, 0) };
    half[0].op.in_dt[0] = TCF_DT_F16;   /* f16 -> f16: every buffer 2 bytes */
    CHECK(PLAN(half) == 0 && plan.groups[0].g.vec == 8);
    half[1].op.in[0] = half[1].op.out = o + 2;
    CHECK(PLAN(half) == 0 && plan.groups[0].g.vec == 1 && plan.reasons[TCF_FUSER_UNALIGNED] == 2);
    tcf_item_t mix[] = { cast, op3(TCF_OP_EXP, TCF_DT_F32, N, o, 1, h, 0, 0) };
    CHECK(PLAN(mix) == 0 && plan.ngroups == 0);   /* an f16 result read as f32 */
}

TEST(bind_other_window)
{
    uint64_t x = MB(0), t1 = MB(1), t2 = MB(2), d = MB(64) - MB(0);
    tcf_item_t w[] = { alloc_(t1), scal(UN(MUL, t1, x), TCF_SARG_A, 2, 0, 1), BIN(ADD, t2, t1, x),
                       free_(t1) };
    tcf_item_t v[] = { alloc_(t1 + d), scal(UN(MUL, t1 + d, x + d), TCF_SARG_A, 3, 0, 1),
                       BIN(ADD, t2 + d, t1 + d, x + d), free_(t1 + d) };
    tcf_fused_args_t a;
    CHECK_EQ_INT(PLAN(w), 0);
    const tcf_fgroup_t g = plan.groups[0];
    CHECK(plan.ngroups == 1 && g.g.nbufs == 2 && g.stores_dropped == 1);
    CHECK_EQ_INT(tcf_fuser_bind(&g, v, 4, &a), 0);
    CHECK(a.n == N && a.buf[0] == x + d && a.buf[1] == t2 + d && a.s[0] == 0x40400000);
    tcf_item_t u[4];
    memcpy(u, v, sizeof u);
    u[2].op.in[0] = t1 + d + 64;               /* now a partial overlap */
    CHECK_EQ_INT(tcf_fuser_bind(&g, u, 4, &a), -1);
    memcpy(u, v, sizeof u);
    u[3] = opaque();                           /* t1 no longer freed: its store is needed */
    CHECK_EQ_INT(tcf_fuser_bind(&g, u, 4, &a), -1);
    memcpy(u, v, sizeof u);
    u[1].op.in[0] = u[2].op.in[1] = x + d + 4; /* unaligned under a vec-4 kernel */
    CHECK_EQ_INT(tcf_fuser_bind(&g, u, 4, &a), -1);
    CHECK_EQ_INT(tcf_fuser_bind(&g, v, 2, &a), -1);   /* shorter window */
}

/* --- iteration spaces: broadcast, views, shapes ------------------------------------ */

/* it over nd dims (innermost first) with byte strides st[operand][dim]: PyTorch's strided
 * loop. */
/* HF LlamaRMSNorm's tail as PyTorch 2.11 launches it over [rows, hidden]: x * rsqrt (the
 * row's value broadcast along the hidden dim), .to(bf16) (contiguous), weight * x (the
 * weight broadcast over rows). */
TEST(strided_broadcast_rmsnorm)
{
    uint64_t x = MB(0), r = MB(1), t0 = MB(2), t1 = MB(3), w = MB(4), y = MB(5);
    tcf_item_t cast = op3(TCF_OP_CAST, TCF_DT_F32, 64 * 32, t1, 1, t0, 0, 0);
    cast.op.out_dt = cast.op.res_dt = TCF_DT_BF16;
    tcf_item_t win[] = {
        SV(BIN(MUL, t0, x, r), 2, L(64, 32), L(L(4, 4, 0), L(256, 256, 4))),
        cast,
        SV(op3(TCF_OP_MUL, TCF_DT_BF16, 0, y, 2, w, t1, 0), 2, L(64, 32), L(L(2, 2, 2), L(128, 0, 128))),
        free_(t0), free_(t1),
    };
    CHECK_EQ_INT(PLAN(win), 0);
    if (!CHECK_EQ_INT(plan.ngroups, 1)) return;
    const tcf_fgroup_t *g = &plan.groups[0];
    CHECK(g->nitems == 3 && g->g.ndim == 2 && g->args.size[0] == 64 && g->args.size[1] == 32);
    uint32_t m1 = 0, sh = 0;
    CHECK_EQ_INT(tcf_int_divider(64, &m1, &sh), 0);
    CHECK(g->args.m1[0] == m1 && g->args.shift[0] == sh && sh == 6);
    CHECK(gop(0, 1)->in_src[0] == SRC(0) && gop(0, 2)->in_src[1] == SRC(1));
    CHECK(gop(0, 0)->out_buf == TCF_NO_STORE && gop(0, 1)->out_buf == TCF_NO_STORE);
    CHECK(g->stores_dropped == 2 && g->g.nbufs == 4);          /* x r w y */
    CHECK(g->args.buf[0] == x && g->args.buf[1] == r && g->args.buf[2] == w && g->args.buf[3] == y);
    CHECK(g->args.stride[1][0] == 0 && g->args.stride[1][1] == 4);     /* one value a row */
    CHECK(g->args.stride[2][0] == 2 && g->args.stride[2][1] == 0);     /* the weight */
    CHECK(g->args.stride[3][0] == 2 && g->args.stride[3][1] == 128);
    CHECK(g->g.vec == 4 && g->g.bcast0 == (1u << 1));          /* r: one load per pack */
    for (int q = 0; q < TCF_FUSER_NREASON; q++) CHECK_EQ_INT(plan.reasons[q], 0);
    tcf_fused_args_t a;
    CHECK_EQ_INT(tcf_fuser_bind(g, win, 5, &a), 0);
    CHECK(!memcmp(&a, &g->args, sizeof a));
    /* the same chain at another row count binds (sizes are arguments) */
    tcf_item_t w2[5];
    memcpy(w2, win, sizeof w2);
    w2[0].op.it.size[1] = w2[2].op.it.size[1] = 7, w2[0].op.n = w2[2].op.n = w2[1].op.n = 64 * 7;
    CHECK_EQ_INT(tcf_fuser_bind(g, w2, 5, &a), 0);
    CHECK(a.n == 64 * 7 && a.size[1] == 7 && a.size[0] == 64);
    /* a weight sliced every other element: no packs, another kernel */
    w2[2].op.it.stride[1][0] = 4;
    CHECK_EQ_INT(tcf_fuser_bind(g, w2, 5, &a), -1);
    CHECK(P(w2, 5) == 0 && plan.ngroups == 1 && plan.groups[0].g.vec == 1 && plan.groups[0].g.bcast0 == 0);
}

/* HF's q * cos + rotate_half(q) * sin in bf16, B 2, H 4, S 8, D 16, q a transposed view
 * of a [B, S, H, D] tensor: neg(x2) over [.., D/2] (another size: it cannot join), the
 * cat of (-x2, x1) with x1 a slice of q, * sin broadcast over B and H, + q * cos. The
 * cat, the mul and the add are one group; the cat takes bf16 from its consumer, its and
 * the mul's stores are dropped (freed), its inputs' extents are their real bytes (the
 * x1 view's base lies 16 bytes before q). */
TEST(rotate_half_chain)
{
    uint64_t q = MB(0), qcos = MB(1), sin = MB(2), x2n = MB(3), c = MB(4), m = MB(5), y = MB(6);
    tcf_item_t win[7];
    rotary_window(win, q, qcos, sin, x2n, c, m, y);
    const tcf_item_t mul = win[2], add = win[3];
    CHECK_EQ_INT(PLAN(win), 0);
    if (!CHECK_EQ_INT(plan.ngroups, 1)) return;
    const tcf_fgroup_t *g = &plan.groups[0];
    CHECK_EQ_INT(plan.item_group[0], -1);
    CHECK_EQ_INT(plan.reasons[TCF_FUSER_SIZE], 1);
    CHECK(g->first == 1 && g->last == 3 && g->nitems == 3 && g->g.ndim >= 1);
    CHECK_EQ_INT(g->g.vec, 8);   /* P 16, T 8: each pack of 8 picks one input */
    CHECK_EQ_INT(gop(0, 0)->kind, TCF_OP_CAT);
    CHECK_EQ_INT(gop(0, 0)->out_dt, TCF_DT_BF16);   /* OpaqueType<2> as its consumer's */
    CHECK_EQ_INT(gop(0, 0)->in_dt[1], TCF_DT_BF16);
    CHECK(gop(0, 1)->in_src[0] == SRC(0) && gop(0, 2)->in_src[1] == SRC(1));
    CHECK(gop(0, 0)->out_buf == TCF_NO_STORE && gop(0, 1)->out_buf == TCF_NO_STORE);
    CHECK_EQ_INT(g->stores_dropped, 2);
    CHECK_EQ_INT(g->g.nbufs, 5);   /* -x2, x1, sin, q * cos, y */
    CHECK(g->args.buf[0] == x2n && g->args.buf[1] == q - 16);
    CHECK(g->args.s[0] == 16 && g->args.s[1] == 8);
    tcf_fused_args_t a;
    CHECK_EQ_INT(tcf_fuser_bind(g, win, sizeof win / sizeof win[0], &a), 0);
    CHECK(!memcmp(&a, &g->args, sizeof a));
    char src[32768];
    CHECK(tcf_codegen_source(&g->g, src, sizeof src) > 0);
    CHECK(strstr(src, "const unsigned e, tcf_b l0, tcf_b l1,") != NULL);
    CHECK(strstr(src, "if ((i % a.c.s[0] < a.c.s[1])) L0 = *(const tcf_pack<tcf_b, 8, 16> *)(B0 + o0);"));
    CHECK(strstr(src, "if (!(i % a.c.s[0] < a.c.s[1])) L1 = *(const tcf_pack<tcf_b, 8, 16> *)(B1 + o1);"));
    /* T 4 (a cat of 4 and 12 along D): a pack of 8 would straddle it, element by element */
    static tcf_fgroup_t planned;
    tcf_item_t wt[sizeof win / sizeof win[0]];
    planned = *g;
    memcpy(wt, win, sizeof win);
    wt[1] = cat2(c, x2n, q, 4, (const uint32_t[]){ 16, 8, 4, 2 },
                 (const uint32_t[][4]){ { 2, 2, 2 }, { 32, 16, 128 }, { 256, 128, 32 }, { 512 * 2, 512, 1024 } });
    CHECK_EQ_INT(P(wt, sizeof wt / sizeof wt[0]), 0);
    if (CHECK_EQ_INT(plan.ngroups, 1)) {
        CHECK_EQ_INT(plan.groups[0].g.vec, 1);
        CHECK(tcf_codegen_source(&plan.groups[0].g, src, sizeof src) > 0);
        CHECK(strstr(src, "const tcf_b *g0, const tcf_b *g1") != NULL);
    }
    /* the planned window's group, bound to the T 4 window: another kernel */
    CHECK_EQ_INT(tcf_fuser_bind(&planned, wt, sizeof wt / sizeof wt[0], &a), -1);
    /* x1's view reaches 16 bytes before q, its real bytes do not: a block that ends at q
     * written in the group is no overlap; one that reaches into q's first row is */
    tcf_item_t z = SV(op3(TCF_OP_EXP, TCF_DT_BF16, 0, q - 2048, 1, MB(9), 0, 0), 4, L(16, 8, 4, 2),
                      L(L(2, 2), L(32, 32), L(256, 256), L(1024, 1024)));
    tcf_item_t w2[] = { win[1], z, mul, add };
    CHECK_EQ_INT(P(w2, 4), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].nitems == 4);
    w2[1].op.out += 2;   /* the cat stays alone, the rest fuses */
    CHECK_EQ_INT(P(w2, 4), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].first == 1 && plan.reasons[TCF_FUSER_OVERLAP] == 1);
    /* the cat's output written again through another view inside the group: overlap */
    tcf_item_t w3[4] = { win[1], win[2], add, free_(c) };
    w3[2].op.out = c + 2;
    CHECK_EQ_INT(P(w3, 4), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].nitems == 2 && plan.reasons[TCF_FUSER_OVERLAP] == 1);
    /* no consumer, no producer of 2 bytes in the window: half, bits all the same */
    tcf_item_t w4[2] = { win[1], UN(EXP, MB(20), MB(21)) };
    CHECK(tcf_fuser_single(&w4[0].op, &plan.groups[0]) == 0 && plan.groups[0].g.ops[0].out_dt == TCF_DT_F16);
}

/* An op over another space that touches nothing the group did is stepped over: it runs
 * as issued before the group's kernel (fuser.h). */
TEST(steps_over_other_spaces)
{
    uint64_t x = MB(0), t = MB(1), y = MB(2), h = MB(4), hx = MB(5), u = MB(6);
    tcf_item_t neg = op3(TCF_OP_NEG, TCF_DT_F32, 2 * N, h, 1, hx, 0, 0);
    /* the rotary embedding's shape: q * cos, then a negation over other elements */
    tcf_item_t w[] = { UN(EXP, t, x), neg, UN(TANH, y, t), free_(t) };
    CHECK_EQ_INT(PLAN(w), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].first == 0 && plan.groups[0].last == 2 &&
          plan.groups[0].nitems == 2);
    CHECK(plan.item_group[0] == 0 && plan.item_group[1] == -1 && plan.item_group[2] == 0);
    CHECK(plan.groups[0].stores_dropped == 1 && gop(0, 1)->in_src[0] == SRC(0));
    CHECK_EQ_INT(plan.reasons[TCF_FUSER_SIZE], 1);
    tcf_fused_args_t a;
    CHECK_EQ_INT(tcf_fuser_bind(&plan.groups[0], w, 4, &a), 0);
    CHECK(memcmp(&a, &plan.groups[0].args, sizeof a) == 0);
    /* the same window where the negation now writes what the group loads: the plan does
     * not hold there, and planning it splits */
    tcf_item_t w2[] = { w[0], op3(TCF_OP_NEG, TCF_DT_F32, 2 * N, x, 1, hx, 0, 0), w[2], w[3] };
    CHECK_EQ_INT(tcf_fuser_bind(&plan.groups[0], w2, 4, &a), -1);
    CHECK_EQ_INT(PLAN(w2), 0);
    CHECK(plan.ngroups == 0 && plan.reasons[TCF_FUSER_SIZE] == 3);
    /* ... or writes a block the group loaded and the window freed */
    tcf_item_t dead[] = { UN(EXP, t, x), free_(x), op3(TCF_OP_NEG, TCF_DT_F32, 2 * N, x, 1, hx, 0, 0),
                          UN(TANH, y, t) };
    CHECK_EQ_INT(PLAN(dead), 0);
    CHECK_EQ_INT(plan.ngroups, 0);
    /* ... or reads what the group wrote (the modified test above), or writes it */
    tcf_item_t waw[] = { UN(EXP, t, x), op3(TCF_OP_NEG, TCF_DT_F32, 2 * N, t, 1, hx, 0, 0),
                         UN(TANH, y, x) };
    CHECK_EQ_INT(PLAN(waw), 0);
    CHECK_EQ_INT(plan.ngroups, 0);
    /* nothing joins after the stepped ops: the group ends before them and planning resumes
     * at the first, which fuses with the next */
    tcf_item_t back[] = { UN(EXP, t, x), neg, op3(TCF_OP_TANH, TCF_DT_F32, 2 * N, u, 1, h, 0, 0) };
    CHECK_EQ_INT(PLAN(back), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].first == 1 && plan.groups[0].last == 2);
    CHECK(plan.item_group[0] == -1 && plan.reasons[TCF_FUSER_SIZE] == 1);
    /* at most 4 ops stepped over: a fifth ends the group */
    tcf_item_t many[8];
    many[0] = UN(EXP, t, x);
    for (int i = 1; i <= 5; i++)
        many[i] = op3(TCF_OP_NEG, TCF_DT_F32, (uint32_t)(i + 1) * N, MB(10 + 2 * i), 1, MB(11 + 2 * i), 0, 0);
    many[6] = UN(TANH, y, t);
    CHECK_EQ_INT(P(many, 7), 0);   /* 5 interlopers */
    CHECK_EQ_INT(plan.ngroups, 0);
    many[5] = many[6];
    CHECK_EQ_INT(P(many, 6), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].first == 0 && plan.groups[0].last == 5 &&
          plan.groups[0].nitems == 2 && plan.reasons[TCF_FUSER_SIZE] == 4);
}

/* One tensor walked in two orders: rotate_half(q) * sin iterates [D, S, H, B] (its output
 * is a fresh [B, H, S, D] tensor), q * cos + that product iterates [D, H, S, B] (its first
 * input is a transposed [B, S, H, D] view). Merging the two orders into one finer space
 * would give the product two views; walked in the group's order, the add reads it through
 * the view the mul wrote, and the product is never stored. bf16, D 16, S 8, H 4, B 2. */
TEST(permuted_walks_join)
{
    uint64_t c = MB(0), sin = MB(1), m = MB(2), qc = MB(3), y = MB(4);
    tcf_item_t mul = SV(op3(TCF_OP_MUL, TCF_DT_BF16, 0, m, 2, c, sin, 0), 4, L(16, 8, 4, 2),
                        L(L(2, 2, 2), L(32, 32, 32), L(256, 256, 0), L(1024, 1024, 0)));
    tcf_item_t add = scal(SV(op3(TCF_OP_ADD, TCF_DT_BF16, 0, y, 2, qc, m, 0), 4, L(16, 4, 8, 2),
                             L(L(2, 2, 2), L(32, 32, 256), L(128, 128, 32), L(1024, 1024, 1024))),
                          TCF_SARG_NONE, 1.0f, 0, 1);
    tcf_item_t win[] = { mul, add, free_(m) };
    CHECK_EQ_INT(PLAN(win), 0);
    if (!CHECK_EQ_INT(plan.ngroups, 1)) return;
    const tcf_fgroup_t *g = &plan.groups[0];
    CHECK(g->nitems == 2 && g->g.ndim == 4 && gop(0, 1)->in_src[1] == SRC(0));
    CHECK(gop(0, 0)->out_buf == TCF_NO_STORE && g->stores_dropped == 1);
    CHECK(g->args.size[0] == 16 && g->args.size[1] == 8 && g->args.size[2] == 4);
    unsigned yb = gop(0, 1)->out_buf;   /* y written in the group's order */
    CHECK(yb < g->g.nbufs && g->args.buf[yb] == y && g->args.stride[yb][1] == 128 &&
          g->args.stride[yb][2] == 32 && g->args.stride[yb][3] == 1024);
    tcf_fused_args_t a;
    CHECK_EQ_INT(tcf_fuser_bind(g, win, 3, &a), 0);
    CHECK(!memcmp(&a, &g->args, sizeof a));
    char src[32768];
    CHECK(tcf_codegen_source(&g->g, src, sizeof src) > 0);
    /* verification's smaller problem: the add's own dims take their group dims' sizes */
    uint32_t ns[TCF_OP_MAX_DIMS], os[TCF_OP_MAX_DIMS], on;
    tcf_space_t sp;
    tcf_fuser_space(&g->g, &g->args, &sp);
    CHECK_EQ_U64(tcf_fuser_verify_sizes(&sp, 400, 1, ns), 384);
    CHECK(tcf_fuser_op_sizes(&add.op, &sp, ns, os, &on) == 0 && on == 384);
    CHECK(os[0] == 16 && os[1] == 3 && os[2] == 8 && os[3] == 1);
    CHECK(tcf_fuser_op_sizes(&mul.op, &sp, ns, os, &on) == 0 && os[2] == 3 && os[1] == 8);
    /* two dims of one size: which is which cannot be told from sizes, so no walk is
     * changed and the views stay apart (overlap) */
    tcf_item_t sq = SV(op3(TCF_OP_EXP, TCF_DT_F32, 0, m, 1, c, 0, 0), 2, L(8, 8), L(L(4, 4), L(32, 32)));
    tcf_item_t tr = SV(op3(TCF_OP_TANH, TCF_DT_F32, 0, y, 1, m, 0, 0), 2, L(8, 8), L(L(4, 32), L(32, 4)));
    tcf_item_t amb[] = { sq, tr };
    CHECK_EQ_INT(PLAN(amb), 0);
    CHECK(plan.ngroups == 0 && plan.reasons[TCF_FUSER_OVERLAP] == 2);   /* both sides */
    /* a cat is never walked in another order (its input is picked along its dim) */
    uint8_t map[TCF_OP_MAX_DIMS];
    tcf_space_t s4 = { 4, { 16, 8, 4, 2 } };
    CHECK_EQ_INT(tcf_fuser_perm_of(&add.op, &s4, map), 0);
    CHECK(map[0] == 0 && map[1] == 2 && map[2] == 1 && map[3] == 3);
    CHECK_EQ_INT(tcf_fuser_perm_of(&mul.op, &s4, map), -1);   /* the same order already */
    add.op.kind = TCF_OP_CAT;
    CHECK_EQ_INT(tcf_fuser_perm_of(&add.op, &s4, map), -1);
}

/* An op stepped over may write a block the group freed and never loads (the kernel does
 * not touch it: its store is dropped), and a later op of the group reads what it wrote:
 * the rotary embedding's -x2 for k, handed the block of q's dropped product. */
TEST(steps_into_dropped_blocks)
{
    uint64_t x = MB(0), t = MB(1), y = MB(2), z = MB(3), hx = MB(4);
    tcf_item_t neg = op3(TCF_OP_NEG, TCF_DT_F32, 2 * N, t, 1, hx, 0, 0);   /* dense, 2N */
    tcf_item_t w[] = { UN(EXP, t, x), UN(TANH, y, t), free_(t), alloc_(t), neg, UN(SIN, z, t) };
    CHECK_EQ_INT(PLAN(w), 0);
    if (!CHECK_EQ_INT(plan.ngroups, 1)) return;
    CHECK(plan.groups[0].nitems == 3 && plan.item_group[4] == -1 && plan.item_group[5] == 0);
    CHECK(gop(0, 0)->out_buf == TCF_NO_STORE);   /* t's first contents never stored */
    uint8_t s = gop(0, 2)->in_src[0];            /* sin reads t from memory: neg's */
    CHECK(!(s & TCF_SRC_OP) && plan.groups[0].args.buf[s] == t);
    tcf_fused_args_t a;
    CHECK_EQ_INT(tcf_fuser_bind(&plan.groups[0], w, 6, &a), 0);
    /* a stepped op that leaves gaps in its extent: the read may see the dropped store */
    tcf_item_t gap = SV(op3(TCF_OP_NEG, TCF_DT_F32, 0, t, 1, hx, 0, 0), 2, L(N / 2, 4),
                        L(L(4, 4), L(4 * N, 2 * N)));
    tcf_item_t w2[] = { w[0], w[1], w[2], w[3], gap, w[5] };
    CHECK_EQ_INT(PLAN(w2), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].nitems == 2 && plan.groups[0].last == 1);
    /* the group loads the freed block: stepping there stays refused */
    tcf_item_t w3[] = { UN(EXP, y, t), free_(t), alloc_(t), neg, UN(SIN, z, y) };
    CHECK_EQ_INT(PLAN(w3), 0);
    CHECK_EQ_INT(plan.ngroups, 0);
}

TEST(strided_spaces_and_views)
{
    uint64_t x = MB(0), t = MB(1), y = MB(2), z = MB(3);
    /* [32, 4] then the same bytes as [8, 4, 4]: the common space is [8, 4, 4]; read in the
     * layout it was written, the value is forwarded */
    tcf_item_t same[] = { SV(UN(EXP, t, x), 2, L(32, 4), L(L(4, 4), L(128, 128))),
                          SV(UN(TANH, y, t), 3, L(8, 4, 4), L(L(4, 4), L(32, 32), L(128, 128))) };
    CHECK_EQ_INT(PLAN(same), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].g.ndim == 3 && gop(0, 1)->in_src[0] == SRC(0));
    CHECK(plan.groups[0].args.size[0] == 8 && plan.groups[0].args.size[1] == 4 &&
          plan.groups[0].args.size[2] == 4 && plan.groups[0].args.stride[0][1] == 32);
    /* ... read transposed (dims 1 and 2 swapped): another thread wrote those bytes */
    tcf_item_t perm[] = { same[0], SV(UN(TANH, y, t), 3, L(8, 4, 4), L(L(4, 4), L(32, 128), L(128, 32))) };
    CHECK_EQ_INT(PLAN(perm), 0);
    CHECK(plan.ngroups == 0 && plan.reasons[TCF_FUSER_OVERLAP] == 2);   /* both sides */
    /* spaces with no common refinement: [6, 4] and [8, 3] (not [4, 6], which is [6, 4]
     * walked in another order: permuted_walks_join) */
    tcf_item_t shape[] = { SV(UN(EXP, t, x), 2, L(6, 4), L(L(4, 4), L(24, 24))),
                           SV(UN(EXP, y, z), 2, L(8, 3), L(L(4, 4), L(32, 32))) };
    CHECK_EQ_INT(PLAN(shape), 0);
    CHECK(plan.ngroups == 0 && plan.reasons[TCF_FUSER_SHAPE] == 2);
    /* a contiguous op joins: contiguous strides over the group's space */
    tcf_item_t cont[] = { SV(BIN(ADD, t, x, z), 2, L(16, 64), L(L(4, 4, 0), L(64, 64, 4))),
                          op3(TCF_OP_EXP, TCF_DT_F32, 16 * 64, y, 1, t, 0, 0) };
    CHECK_EQ_INT(PLAN(cont), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].g.ndim == 2 && gop(0, 1)->in_src[0] == SRC(0));
    CHECK(plan.groups[0].args.stride[3][0] == 4 && plan.groups[0].args.stride[3][1] == 64);
    CHECK(plan.groups[0].g.vec == 4 && plan.groups[0].g.bcast0 == 1u << 1);   /* z per row */
    /* two views of one buffer read, never written: two buffers of the kernel */
    tcf_item_t xt[] = { SV(BIN(ADD, t, x, x), 2, L(16, 16), L(L(4, 4, 64), L(64, 64, 4))),
                        SV(BIN(MUL, y, t, x), 2, L(16, 16), L(L(4, 4, 64), L(64, 64, 4))) };
    CHECK_EQ_INT(PLAN(xt), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].g.nbufs == 4 && plan.groups[0].g.vec == 1);
    CHECK(plan.groups[0].args.buf[0] == x && plan.groups[0].args.buf[1] == x);
    CHECK(gop(0, 1)->in_src[1] == 1 && plan.groups[0].args.stride[1][0] == 64);
    /* ... but writing x through one view while the other reads it is an overlap */
    xt[1].op.out = x;
    CHECK_EQ_INT(PLAN(xt), 0);
    CHECK(plan.ngroups == 0 && plan.reasons[TCF_FUSER_OVERLAP] == 2);
    /* x[:, ::2]: not contiguous along dim 0, scalar code; an expanded scalar (0 strides)
     * broadcast in packs; a row of 5 read as 4: packs misaligned */
    tcf_item_t sl[] = { SV(UN(EXP, t, x), 2, L(16, 8), L(L(4, 8), L(64, 128))), UN(EXP, y, t) };
    sl[1].op.n = 128;
    CHECK(PLAN(sl) == 0 && plan.ngroups == 1 && plan.groups[0].g.vec == 1);
    tcf_item_t ex[] = { SV(BIN(ADD, t, x, z), 2, L(16, 8), L(L(4, 4, 0), L(64, 64, 0))), UN(EXP, y, t) };
    ex[1].op.n = 128;
    CHECK(PLAN(ex) == 0 && plan.ngroups == 1 && plan.groups[0].g.vec == 4 &&
          plan.groups[0].g.bcast0 == 1u << 1);
    tcf_item_t row5[] = { SV(UN(EXP, t, x), 2, L(4, 8), L(L(4, 4), L(16, 20))), UN(EXP, y, t) };
    row5[1].op.n = 32;
    CHECK(PLAN(row5) == 0 && plan.ngroups == 1 && plan.groups[0].g.vec == 1);
    tcf_item_t odd[] = { SV(UN(EXP, t, x), 2, L(6, 8), L(L(4, 4), L(24, 24))), UN(EXP, y, t) };
    odd[1].op.n = 48;   /* 6 is no multiple of 4 */
    CHECK(PLAN(odd) == 0 && plan.ngroups == 1 && plan.groups[0].g.vec == 1);
    /* 32-bit offsets: a contiguous op of 4 GiB stays out of an N-d group */
    tcf_item_t big[] = { SV(op3(TCF_OP_EXP, TCF_DT_BOOL, 0, MB(2048), 1, x, 0, 0), 2,
                            L(1u << 15, 1u << 15), L(L(1, 1), L(1u << 15, 1u << 15))),
                         op3(TCF_OP_CAST, TCF_DT_F32, 1u << 30, MB(4096), 1, MB(2048), 0, 0) };
    big[1].op.in_dt[0] = TCF_DT_BOOL;
    CHECK(PLAN(big) == 0 && plan.ngroups == 0 && plan.reasons[TCF_FUSER_TOO_BIG] == 2);
}

/* A block freed after a group op loaded it and handed out again, at another element size,
 * for a later op's output (PyTorch's allocator between Llama's residual add and its float
 * cast): in one kernel a thread would overwrite bytes another has yet to load. */
TEST(dead_block_reused_at_another_size)
{
    uint64_t a = MB(0), b = MB(1), sum = MB(2), sq = MB(3);
    tcf_item_t add = scal(op3(TCF_OP_ADD, TCF_DT_BF16, N, sum, 2, a, b, 0), 0, 1, 0, 1);
    tcf_item_t cast = op3(TCF_OP_CAST, TCF_DT_F32, N, b, 1, sum, 0, 0);
    cast.op.in_dt[0] = TCF_DT_BF16, cast.op.loop = TCF_LOOP_CAST;
    tcf_item_t w[] = { add, free_(b), alloc_(b), cast, UN(POW2, sq, b) };
    CHECK_EQ_INT(PLAN(w), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].first == 3 && plan.groups[0].nitems == 2);
    CHECK_EQ_INT(plan.reasons[TCF_FUSER_OVERLAP], 1);
    /* the same view handed out again: each thread reads its element, then writes it */
    tcf_item_t same[] = { UN(EXP, sum, b), free_(b), alloc_(b), UN(TANH, b, sum) };
    CHECK_EQ_INT(PLAN(same), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].nitems == 2 && plan.groups[0].g.nbufs == 3);
    CHECK(plan.groups[0].args.buf[0] == b && plan.groups[0].args.buf[2] == b);
}

/* The dataflow model (fuser_equiv.h) passes a right group and catches a wrong one: a
 * consumer reading memory instead of its producer's result, a racing in-place view, a
 * scalar bound from the wrong op. */
TEST(dataflow_model_bites)
{
    uint64_t x = MB(0), t = MB(1), y = MB(2);
    unsigned unknown = 0;
    char why[160];
    tcf_item_t w[] = { UN(EXP, t, x), scal(UN(TANH, y, t), TCF_SARG_NONE, 2.0f, 0, 1) };
    CHECK_EQ_INT(PLAN(w), 0);
    if (!CHECK_EQ_INT(plan.ngroups, 1)) return;
    CHECK_EQ_INT(eq_group(w, 2, &plan.groups[0], &unknown, why, sizeof why), 1);
    static tcf_fgroup_t bad;
    bad = plan.groups[0];
    bad.g.ops[1].in_src[0] = 0;   /* x, not exp(x) */
    CHECK_EQ_INT(eq_group(w, 2, &bad, &unknown, why, sizeof why), 0);
    bad = plan.groups[0];
    bad.args.s[bad.g.ops[1].scalar_arg[0]] ^= 1;
    CHECK_EQ_INT(eq_group(w, 2, &bad, &unknown, why, sizeof why), 0);
    /* the tanh written over x shifted by one element: element e loads x[e], element e - 1
     * stores there */
    tcf_item_t s2[] = { UN(EXP, t, x), UN(TANH, x + 4, t) };
    CHECK_EQ_INT(PLAN(s2), 0);
    CHECK_EQ_INT(plan.ngroups, 0);   /* the planner refuses it (overlap) */
    tcf_item_t w2[] = { UN(EXP, t, x), UN(TANH, y, t) };
    CHECK(PLAN(w2) == 0 && plan.ngroups == 1);
    bad = plan.groups[0];
    bad.args.buf[bad.g.ops[1].out_buf] = x + 4;   /* forced: the model sees the race */
    CHECK_EQ_INT(eq_group(s2, 2, &bad, &unknown, why, sizeof why), 0);
    CHECK(strstr(why, "another element") != NULL);
    CHECK_EQ_INT(unknown, 0);
}

/* Verification's smaller problem: outer dims cut first, each op's dims follow. */
TEST(verify_shrink)
{
    uint32_t ns[TCF_OP_MAX_DIMS], os[TCF_OP_MAX_DIMS], on;
    tcf_space_t a = { 2, { 2048, 8192 } }, b = { 4, { 128, 16, 2048, 4 } }, c = { 1, { 7 } },
                d = { 2, { 100000, 3 } };
    CHECK_EQ_U64(tcf_fuser_verify_sizes(&a, 70001, 1, ns), 2048 * 34);
    CHECK(ns[0] == 2048 && ns[1] == 34);
    CHECK_EQ_U64(tcf_fuser_verify_sizes(&b, 70001, 1, ns), 128 * 16 * 34);
    CHECK(ns[0] == 128 && ns[1] == 16 && ns[2] == 34 && ns[3] == 1);
    CHECK(tcf_fuser_verify_sizes(&c, 70001, 1, ns) == 7 && ns[0] == 7);
    CHECK(tcf_fuser_verify_sizes(&d, 70001, 1, ns) == 70001 && ns[0] == 70001 && ns[1] == 1);
    /* a packed kernel's dim 0, cut: whole packs (fuse_views' [307500] at vec 4 ran one past
     * the cut) */
    tcf_space_t e = { 1, { 307500 } };
    CHECK(tcf_fuser_verify_sizes(&e, 70001, 4, ns) == 70000 && ns[0] == 70000);
    CHECK(tcf_fuser_verify_sizes(&e, 70001, 1, ns) == 70001);
    CHECK(tcf_fuser_verify_sizes(&d, 70001, 8, ns) == 70000);
    tcf_space_t f = { 2, { 100001, 3 } };   /* not a multiple of the pack: no packs, as is */
    CHECK(tcf_fuser_verify_sizes(&f, 70001, 4, ns) == 70001);
    /* ops over b: its own dims; a contiguous one; one whose dims are coarser, with a
     * dim of size 1 inside */
    CHECK_EQ_U64(tcf_fuser_verify_sizes(&b, 70001, 1, ns), 69632);
    tcf_item_t s4 = SV(UN(EXP, MB(1), MB(0)), 4, L(128, 16, 2048, 4), L(L(4, 4), L(512, 512), L(8192, 8192), L(1u << 24, 1u << 24)));
    CHECK(tcf_fuser_op_sizes(&s4.op, &b, ns, os, &on) == 0 && on == 69632);
    CHECK(os[0] == 128 && os[1] == 16 && os[2] == 34 && os[3] == 1);
    tcf_item_t c1 = op3(TCF_OP_EXP, TCF_DT_F32, 1u << 24, MB(1), 1, MB(0), 0, 0);
    CHECK(tcf_fuser_op_sizes(&c1.op, &b, ns, os, &on) == 0 && on == 69632);
    tcf_item_t s3 = SV(UN(EXP, MB(1), MB(0)), 3, L(2048, 1, 8192), L(L(4, 4), L(0, 0), L(8192, 8192)));
    CHECK(tcf_fuser_op_sizes(&s3.op, &b, ns, os, &on) == 0 && os[0] == 2048 && os[1] == 1 && os[2] == 34);
    tcf_item_t bad = SV(UN(EXP, MB(1), MB(0)), 2, L(4096, 4096), L(L(4, 4), L(16384, 16384)));
    CHECK_EQ_INT(tcf_fuser_op_sizes(&bad.op, &b, ns, os, &on), -1);  /* 4096: no boundary of b */
}

/* --- recorded launches ------------------------------------------------------------- */
static tcf_item_t gelu[8];
static int ngelu;

/* One decoded kernel checked alone: a group of one op, every store kept, bound to it. */
TEST(single_op_group)
{
    tcf_fgroup_t g;
    tcf_item_t a = scal(BIN(ADD, MB(2), MB(0), MB(1)), TCF_SARG_NONE, -1.0f, 0, 1);
    CHECK_EQ_INT(tcf_fuser_single(&a.op, &g), 0);
    CHECK(g.nitems == 1 && g.g.nops == 1 && g.n == N && g.args.n == N && g.stores_dropped == 0);
    CHECK(g.g.nbufs == 3 && g.args.buf[0] == MB(0) && g.args.buf[1] == MB(1) && g.args.buf[2] == MB(2));
    CHECK(g.g.ops[0].in_src[0] == 0 && g.g.ops[0].in_src[1] == 1 && g.g.ops[0].out_buf == 2);
    CHECK(g.g.nscalars == 1 && g.args.s[0] == 0xbf800000u && g.g.vec == 4);
    char src[16384];
    CHECK(tcf_codegen_source(&g.g, src, sizeof src) > 0);
    /* in place: one buffer, loaded and stored */
    tcf_item_t b = UN(TANH, MB(3), MB(3));
    CHECK_EQ_INT(tcf_fuser_single(&b.op, &g), 0);
    CHECK(g.g.nbufs == 1 && g.g.ops[0].in_src[0] == 0 && g.g.ops[0].out_buf == 0);
    /* unaligned: scalar code */
    tcf_item_t c = UN(EXP, MB(5) + 4, MB(4));
    CHECK_EQ_INT(tcf_fuser_single(&c.op, &g), 0);
    CHECK(g.g.vec == 1);
    /* refused: a partial overlap of its own operands, or an op nothing can reason about */
    tcf_item_t d = BIN(MUL, MB(6) + 8, MB(6), MB(7));
    CHECK_EQ_INT(tcf_fuser_single(&d.op, &g), -1);
    tcf_item_t e = UN(NEG, 0, MB(8));
    CHECK_EQ_INT(tcf_fuser_single(&e.op, &g), -1);
}

static void load_gelu(void)
{
    static char name[8][4096];
    static uint8_t bytes[8][256];
    uint32_t off[8][8], sz[8][8], np[8] = { 0 }, len[8] = { 0 }, g[8][3], b[8][3];
    FILE *f = fopen("tests/fixtures/torch-2.11-h100-single-ops.log", "r");
    char line[8192];
    int in = 0, k = -1;
    if (!CHECK(f != NULL)) return;
    while (fgets(line, sizeof line, f)) {
        unsigned i, o, s;
        int n = 0;
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "MARK ", 5)) {
            in = !strcmp(line + 5, "manual_gelu");
        } else if (in && !strncmp(line, "LAUNCH ", 7) && k < 7) {
            k++;
            sscanf(line, "LAUNCH %*s kind=%*d g=(%u,%u,%u) b=(%u,%u,%u) smem=%*u %n", &g[k][0],
                   &g[k][1], &g[k][2], &b[k][0], &b[k][1], &b[k][2], &n);
            snprintf(name[k], sizeof name[k], "%s", line + n);
        } else if (in && k >= 0 && sscanf(line, "  p%u off=%u sz=%u :%n", &i, &o, &s, &n) == 3 &&
                   i < 8 && o + s <= 256) {
            for (unsigned j = 0; j < s; j++) sscanf(line + n + 2 * j, "%2hhx", &bytes[k][o + j]);
            off[k][i] = o, sz[k][i] = s, np[k] = i + 1, len[k] = o + s;
        }
    }
    fclose(f);
    for (int i = 0; i <= k; i++) {
        tcf_decode_launch_t l = { name[i], np[i], off[i], sz[i], bytes[i], len[i],
                                  { g[i][0], g[i][1], g[i][2] }, { b[i][0], b[i][1], b[i][2] } };
        tcf_item_t it = { .kind = TCF_ITEM_OP };
        CHECK(tcf_decode_launch(&l, &it.op) == TCF_DECODE_OK);
        gelu[ngelu++] = it;
    }
}

TEST(hand_gelu_is_one_group_of_8)
{
    load_gelu();
    if (!CHECK_EQ_INT(ngelu, 8)) return;
    CHECK_EQ_INT(P(gelu, 8), 0);
    CHECK_EQ_INT(plan.ngroups, 1);
    const tcf_fgroup_t *g = &plan.groups[0];
    static const uint8_t src0[8] = { 0, 0, SRC(1), 0, SRC(3), SRC(4), SRC(5), SRC(0) };
    static const uint8_t out[8] = { 1, 0xff, 0xff, 0xff, 0xff, 0xff, 3, 2 };  /* x A B C */
    CHECK(g->nitems == 8 && g->n == 1u << 20 && g->g.nbufs == 4 && g->g.vec == 4);
    for (int k = 0; k < 8; k++) {
        CHECK_EQ_INT(gop(0, k)->in_src[0], src0[k]);
        CHECK_EQ_INT(gop(0, k)->out_buf, out[k]);
    }
    CHECK(gop(0, 3)->in_src[1] == SRC(2) && gop(0, 7)->in_src[1] == SRC(6));
    CHECK_EQ_INT(g->stores_dropped, 5);  /* the caching allocator hides frees: only overwrites */
    CHECK(g->g.nscalars == 6 && g->args.s[3] == 0x3f4c422a);   /* 0.7978846 */
    CHECK_EQ_U64(g->args.buf[0], 0x7f4ba8800000ull);
    CHECK_EQ_U64(g->bytes_read + g->bytes_written, 16u << 20);
    CHECK_EQ_U64(g->bytes_avoided, 56u << 20);   /* 72 bytes an element one by one */
}

/* An operand's extent end, from its own dims (independently of space.c). */
/* [*beg, end) of operand o: a cat's input from its real first element over its range
 * (op.h), any other operand from its pointer. */
static uint64_t extent_of(const tcf_op_t *op, unsigned o, uint64_t *beg)
{
    int d = o ? op->in_dt[o - 1] : op->out_dt;
    uint64_t es = d == TCF_DT_F32 ? 4 : d == TCF_DT_BOOL ? 1 : 2, m = 0;
    uint64_t p = o ? op->in[o - 1] : op->out;
    int cat = op->kind == TCF_OP_CAT && o;
    if (cat)
        p += (uint64_t)op->cat_lo[o - 1] * op->it.stride[o][op->cat_dim];
    *beg = p;
    if (!op->it.ndim)
        return p + op->n * es;
    for (unsigned k = 0; k < op->it.ndim; k++)
        m += (uint64_t)((cat && k == op->cat_dim ? op->cat_len[o - 1] : op->it.size[k]) - 1) *
             op->it.stride[o][k];
    return p + m + es;
}

/* Walks each span again, independently of the builder: ops equal in n; every operand
 * written equal to or disjoint from every live range, and every operand disjoint from or
 * equal to every live range written (a free of its exact pointer retires one). */
static int group_sane(const tcf_item_t *it, size_t n, const tcf_fgroup_t *g)
{
    uint64_t lo[4 * TCF_GROUP_MAX_OPS], hi[4 * TCF_GROUP_MAX_OPS];
    int dt[4 * TCF_GROUP_MAX_OPS], wr[4 * TCF_GROUP_MAX_OPS], ld[4 * TCF_GROUP_MAX_OPS], nr = 0;
    unsigned k = 0;
    for (size_t i = g->first; i <= g->last && i < n; i++) {
        for (int r = 0; r < nr && it[i].kind == TCF_ITEM_FREE; r++)
            if (lo[r] == it[i].ptr) dt[r] = -1;
        if (it[i].kind != TCF_ITEM_OP) continue;
        if (k < g->nitems && g->items[k] != i) {
            /* stepped over: reads nothing the group wrote before it, writes nothing the
             * group touched before it (freed or not), but a freed block the group never
             * loaded from memory (only wrote, and read back through its ops) */
            for (unsigned o = 0; o <= it[i].op.nin; o++) {
                uint64_t p, e = extent_of(&it[i].op, o, &p);
                for (int r = 0; r < nr; r++) {
                    int loaded = 0;
                    for (int q = 0; q < nr; q++)
                        loaded |= lo[q] == lo[r] && ld[q];
                    if (dt[r] < 0 && !loaded) continue;
                    if (p < hi[r] && lo[r] < e && (!o || wr[r])) return 0;
                }
            }
            continue;
        }
        if (k >= g->nitems || g->items[k++] != i || it[i].op.n != g->n) return 0;
        for (unsigned o = 0; o <= it[i].op.nin; o++) {
            /* a cat's dtype is its element's size (the planner takes its neighbours') */
            int d = o ? it[i].op.in_dt[o - 1] : it[i].op.out_dt;
            if (it[i].op.kind == TCF_OP_CAT && d != TCF_DT_F32)
                d = TCF_DT_NONE;
            uint64_t p, e = extent_of(&it[i].op, o, &p);
            for (int r = 0; r < nr; r++)
                if (dt[r] >= 0 && p < hi[r] && lo[r] < e && (!o || wr[r]) &&
                    (p != lo[r] || e != hi[r] ||
                     (d != dt[r] && d != TCF_DT_NONE && dt[r] != TCF_DT_NONE)))
                    return 0;
            int via_op = 0;   /* read back what the group wrote there, live */
            for (int r = 0; r < nr && o; r++)
                via_op |= wr[r] && dt[r] >= 0 && lo[r] == p && hi[r] == e;
            ld[nr] = o && !via_op;
            lo[nr] = p, hi[nr] = e, dt[nr] = d, wr[nr++] = !o;
        }
    }
    return k == g->nitems && g->nitems >= 2;
}

/* Verification's smaller problem covers the same elements in the fused kernel and in
 * every original: for each op whose store the group keeps, the byte offsets the fused
 * kernel stores over the cut space equal those the original launch, cut by
 * tcf_fuser_op_sizes, stores. A difference is a verification that cannot pass. */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static size_t box_offsets(unsigned nd, const uint32_t *size, const uint32_t *st, uint64_t *out)
{
    size_t n = 1;
    for (unsigned d = 0; d < nd; d++) n *= size[d];
    for (size_t e = 0; e < n; e++) {
        uint32_t idx[TCF_OP_MAX_DIMS];
        uint64_t off = 0;
        eq_index(e, nd, size, idx);
        for (unsigned d = 0; d < nd; d++) off += (uint64_t)idx[d] * st[d];
        out[e] = off;
    }
    qsort(out, n, sizeof *out, cmp_u64);
    return n;
}

static int small_agrees(const tcf_item_t *it, const tcf_fgroup_t *g)
{
    static uint64_t a[4096], b[4096];
    uint32_t ns[TCF_OP_MAX_DIMS], os[TCF_OP_MAX_DIMS], on;
    tcf_space_t sp;
    if (g->g.red) return 1;
    tcf_fuser_space(&g->g, &g->args, &sp);
    uint64_t n = tcf_fuser_verify_sizes(&sp, 3001, g->g.ndim ? g->g.vec : 1, ns);
    if (n > 4096) return 0;
    for (unsigned k = 0; k < g->nitems; k++) {
        const tcf_gop_t *go = &g->g.ops[k];
        const tcf_op_t *op = &it[g->items[k]].op;
        if (go->out_buf == TCF_NO_STORE) continue;
        if (tcf_fuser_op_sizes(op, &sp, ns, os, &on)) continue;   /* verify_unable, not wrong */
        uint32_t es = tcf_dtype_size(op->out_dt), one = es;
        size_t na = g->g.ndim ? box_offsets(sp.nd, ns, g->args.stride[go->out_buf], a)
                              : box_offsets(1, ns, &one, a);
        size_t nb = op->it.ndim ? box_offsets(op->it.ndim, os, op->it.stride[0], b)
                                : box_offsets(1, &on, &one, b);
        if (na != nb || memcmp(a, b, na * sizeof *a)) {
            fprintf(stderr, "small problem differs: group items %u-%u op %u (item %u) kind %d ndim %u\n",
                    g->first, g->last, k, g->items[k], op->kind, op->it.ndim);
            return 0;
        }
    }
    return 1;
}

/* N-d groups met in the last trace planned, and among them HF LlamaRMSNorm's tail
 * (x * rsqrt broadcast, .to(bf16), weight * x) as one packed kernel. */
static size_t nd_groups, rms_tails;

/* Plans every window of a trace; checks invariants; prints coverage. */
static size_t span_bound;   /* groups bound again on their spans alone (plan_trace) */

static void plan_trace(const char *path)
{
    static tcf_item_t items[TCF_FUSER_MAX_ITEMS + 1];
    static int64_t iwin[TCF_FUSER_MAX_ITEMS + 1];
    kern_t *ks = NULL;
    size_t nk = 0, ni = 0, launches = 0, ops = 0, fused = 0, groups = 0, big = 0, bad = 0;
    nd_groups = rms_tails = 0;
    unsigned eq_unknown = 0, eq_checked = 0;
    uint64_t avoided = 0;
    tcf_trace_event_t ev;
    tcf_trace_reader_t *r = tcf_trace_read_open(path);
    if (!CHECK(r != NULL)) return;
    while (tcf_trace_read_next(r, &ev) == 1) {
        tcf_item_t it = { .kind = TCF_ITEM_OPAQUE };
        if (ev.ev == TCF_TRACE_EV_KERNEL) {
            kern_add(&ks, &nk, &ev.u.kernel);
            continue;
        }
        if (ev.ev == TCF_TRACE_EV_WINDOW) {
            size_t m = 0;
            for (size_t i = 0; i < ni; i++)   /* this window's events, in order */
                if (iwin[i] == ev.u.window.id) items[m++] = items[i];
            ni = 0;
            if (m > TCF_FUSER_MAX_ITEMS) { big++; continue; }
            CHECK_EQ_INT(tcf_fuser_plan(items, m, &plan), 0);
            /* every decoded op outside the groups is named under one reason, and the
             * names add up to the counts (UNALIGNED counts fused ops: no name) */
            uint32_t named[TCF_FUSER_NREASON] = { 0 };
            for (size_t i = 0; i < m; i++) {
                int op = items[i].kind == TCF_ITEM_OP || items[i].kind == TCF_ITEM_REDUCE;
                bad += (op && plan.item_group[i] < 0) != (plan.item_why[i] != 0xff);
                if (plan.item_why[i] != 0xff)
                    bad += plan.item_why[i] >= TCF_FUSER_UNALIGNED || named[plan.item_why[i]]++ > UINT32_MAX - 2;
            }
            for (unsigned why = 0; why < TCF_FUSER_UNALIGNED; why++)
                bad += named[why] != plan.reasons[why];
            for (unsigned gi = 0; gi < plan.ngroups; gi++) {
                tcf_fused_args_t a;
                const tcf_fgroup_t *g = &plan.groups[gi];
                bad += !small_agrees(items, g);
                char why[160];
                if (!eq_group(items, m, g, &eq_unknown, why, sizeof why)) {
                    bad++;
                    fprintf(stderr, "%s: window %lld, group %u: %s\n", path,
                            (long long)ev.u.window.id, gi, why);
                }
                eq_checked += !g->g.red;
                bad += !group_sane(items, m, g) || tcf_fuser_bind(g, items, m, &a) != 0 ||
                       memcmp(&a, &g->args, sizeof a) != 0;
                /* full mode's re-bind decodes only the span's launches (exec/steps.c) in a
                 * window without frees, unless the group holds a cat: the same argument */
                int cat = 0, frees = 0;
                for (unsigned k = 0; k < g->g.nops; k++) cat |= g->g.ops[k].kind == TCF_OP_CAT;
                for (size_t i = 0; i < m; i++)
                    frees |= items[i].kind == TCF_ITEM_FREE || items[i].kind == TCF_ITEM_ALLOC;
                if (!cat && !frees) {
                    static tcf_item_t span[TCF_FUSER_MAX_ITEMS];
                    for (size_t i = 0; i < m; i++) {
                        span[i] = items[i];
                        if (i < g->first || i > g->last) {
                            memset(&span[i], 0, sizeof span[i]);
                            span[i].kind = TCF_ITEM_OPAQUE;
                        }
                    }
                    int b = tcf_fuser_bind(g, span, m, &a);
                    if (!CHECK(b == 0 && !memcmp(&a, &g->args, sizeof a)))
                        fprintf(stderr, "%s: window %lld, group %u: bound on its span alone "
                                "%s\n", path, (long long)ev.u.window.id, gi,
                                b ? "refused" : "differs");
                    span_bound++;
                }
                fused += g->nitems, avoided += g->bytes_avoided;
                nd_groups += g->g.ndim > 0;
                rms_tails += g->nitems == 3 && g->g.ndim == 2 && g->g.vec == 4 &&
                             g->g.ops[0].kind == TCF_OP_MUL && g->g.ops[1].kind == TCF_OP_CAST &&
                             g->g.ops[2].kind == TCF_OP_MUL && g->g.bcast0 &&
                             g->g.ops[1].in_src[0] == SRC(0) && g->g.ops[2].in_src[1] == SRC(1);
                for (unsigned k = 0; k < g->nitems; k++) bad += plan.item_group[g->items[k]] != (int)gi;
            }
            groups += plan.ngroups;
            continue;
        }
        if (ev.ev == TCF_TRACE_EV_LAUNCH) {
            const tcf_trace_launch_t *l = &ev.u.launch;
            launches++;
            for (size_t i = 0; i < nk; i++) {
                if (ks[i].id != l->k) continue;
                tcf_decode_launch_t d = { ks[i].name, ks[i].np, ks[i].off, ks[i].sz, l->params,
                                          (uint32_t)l->params_len, { l->grid[0], l->grid[1], l->grid[2] },
                                          { l->block[0], l->block[1], l->block[2] } };
                if (tcf_decode_launch(&d, &it.op) == TCF_DECODE_OK) it.kind = TCF_ITEM_OP, ops++;
                break;
            }
        } else if (ev.ev == TCF_TRACE_EV_ALLOC || ev.ev == TCF_TRACE_EV_FREE) {
            it = (tcf_item_t){ .kind = ev.ev == TCF_TRACE_EV_ALLOC ? TCF_ITEM_ALLOC : TCF_ITEM_FREE,
                               .ptr = ev.u.mem.ptr, .size = ev.u.mem.size };
            if (ev.u.mem.win < 0) continue;   /* not stream-ordered: no window holds it */
        } else if (ev.ev != TCF_TRACE_EV_MEMSET && ev.ev != TCF_TRACE_EV_MEMCPY) {
            continue;
        }
        if (ni <= TCF_FUSER_MAX_ITEMS)
            iwin[ni] = ev.ev == TCF_TRACE_EV_LAUNCH ? ev.u.launch.win : ev.u.mem.win, items[ni++] = it;
    }
    tcf_trace_read_close(r);
    CHECK_EQ_INT(bad, 0);
    printf("  %s: %zu launches, %zu ops decoded (%.1f%%), %zu fused (%.1f%% of ops) in %zu groups, "
           "%zu N-d, %llu bytes avoided%s\n", path, launches, ops, launches ? 100.0 * ops / launches : 0.0,
           fused, ops ? 100.0 * fused / ops : 0.0, groups, nd_groups, (unsigned long long)avoided,
           big ? " (windows over the item limit skipped)" : "");
    printf("  %s: %u groups equal to eager by dataflow (%u with a view the model could not "
           "invert)\n", path, eq_checked, eq_unknown);
    kern_free(ks, nk);
}

/* A fill (FILL: no input, T's bits as its functor holds them) as deterministic mode
 * launches one before every kernel that writes a fresh buffer: with the kernel that then
 * writes the whole buffer it is one group whose fill store is dropped; a fill read by the
 * next op is a value in registers; the value keeps its bits (a NaN's payload too), never
 * passing through float. */
TEST(fills)
{
    static char src[1 << 16];
    tcf_item_t nanfill = op3(TCF_OP_FILL, TCF_DT_BF16, N, MB(1), 0, 0, 0, 0);
    nanfill.op.nscalar = 1, nanfill.op.s[0] = (tcf_scalar_t){ TCF_DT_BF16, 0x7fa1u, 0.0f / 0.0f };
    tcf_item_t cast = op3(TCF_OP_CAST, TCF_DT_F32, N, MB(1), 1, MB(0), 0, 0);
    cast.op.res_dt = cast.op.out_dt = TCF_DT_BF16;
    tcf_item_t w[2] = { nanfill, cast };
    CHECK_EQ_INT(PLAN(w), 0);
    if (CHECK_EQ_INT(plan.ngroups, 1)) {
        const tcf_fgroup_t *g = &plan.groups[0];
        CHECK(g->nitems == 2 && g->stores_dropped == 1 && g->g.nbufs == 2);
        CHECK(gop(0, 0)->kind == TCF_OP_FILL && gop(0, 0)->out_buf == TCF_NO_STORE);
        CHECK(g->g.nscalars == 1 && g->args.s[gop(0, 0)->scalar_arg[0]] == 0x7fa1u);
        CHECK(tcf_codegen_source(&g->g, src, sizeof src) > 0 &&
              strstr(src, "[[maybe_unused]] const tcf_b t0 = (tcf_b)a.s[0];"));
    }
    /* x * fill(1.0f), float: the fill's value feeds the product in registers; stored too,
     * its bits as they are */
    tcf_item_t one = op3(TCF_OP_FILL, TCF_DT_F32, N, MB(2), 0, 0, 0, 0);
    one.op.nscalar = 1, one.op.s[0] = (tcf_scalar_t){ TCF_DT_F32, 0x3f800000u, 1.0f };
    tcf_item_t w2[2] = { one, BIN(MUL, MB(3), MB(0), MB(2)) };
    CHECK_EQ_INT(PLAN(w2), 0);
    if (CHECK_EQ_INT(plan.ngroups, 1)) {
        CHECK(gop(0, 1)->in_src[1] == SRC(0) && gop(0, 0)->out_buf != TCF_NO_STORE);
        CHECK(tcf_codegen_source(&plan.groups[0].g, src, sizeof src) > 0 &&
              strstr(src, "const float t0 = __uint_as_float(a.s[0]);"));
    }
    /* a fill with an input, or without its value, is no op we reason about: opaque */
    for (int v = 0; v < 2; v++) {
        tcf_item_t w3[2] = { nanfill, cast };
        if (v == 0)
            w3[0].op.nin = 1, w3[0].op.in[0] = MB(5), w3[0].op.in_dt[0] = TCF_DT_BF16;
        else
            w3[0].op.nscalar = 0;
        CHECK_EQ_INT(PLAN(w3), 0);
        CHECK(plan.ngroups == 0 && plan.item_group[0] < 0);
    }
}

TEST(recorded_traces)
{
    glob_t gl;
    if (glob("tests/fixtures/*.jsonl", 0, NULL, &gl) != 0) return;
    for (size_t i = 0; i < gl.gl_pathc; i++) plan_trace(gl.gl_pathv[i]);
    globfree(&gl);
    /* two norms a layer and the final one; the trace holds two layers of the forward */
    plan_trace("tests/fixtures/trace-hf-llama.jsonl");
    CHECK(rms_tails >= 5);
    CHECK(nd_groups > rms_tails);
    printf("test_fuser: %zu groups of windows without frees bound again on their spans "
           "alone\n", span_bound);
    CHECK(span_bound >= 50);
}

int main(void)
{
    RUN(chain_of_8_is_one_group);
    RUN(splits_size_opaque_limits);
    RUN(steps_over_other_spaces);
    RUN(overlap_and_alias);
    RUN(ahead_is_passed_over);
    RUN(frees_drop_stores);
    RUN(dtypes_where_cast_addcmul_sargs);
    RUN(bind_other_window);
    RUN(hand_gelu_is_one_group_of_8);
    RUN(single_op_group);
    RUN(strided_broadcast_rmsnorm);
    RUN(strided_spaces_and_views);
    RUN(rotate_half_chain);
    RUN(permuted_walks_join);
    RUN(steps_into_dropped_blocks);
    RUN(dead_block_reused_at_another_size);
    RUN(verify_shrink);
    RUN(dataflow_model_bites);
    RUN(fills);
    RUN(recorded_traces);
    return check_main_end();
}
