/* Windows built by hand for the planner's tests (test_fuser.c, test_cat_emu.c): decoded
 * ops as recognize/ would give them, with their iteration spaces, and frees. */
#ifndef TCF_TEST_FUSER_ITEMS_H
#define TCF_TEST_FUSER_ITEMS_H
#include <stdint.h>
#include <string.h>

#include "fuser/fuser.h"

#define MB(i) (0x7f0000000000ull + ((uint64_t)(i) << 20))  /* aligned, disjoint blocks */

static tcf_item_t op3(tcf_op_kind_t k, tcf_dtype_t dt, uint32_t n, uint64_t out, int nin,
                      uint64_t a, uint64_t b, uint64_t c)
{
    tcf_item_t it = { .kind = TCF_ITEM_OP };
    tcf_op_t *o = &it.op;
    o->kind = k, o->loop = TCF_LOOP_VEC, o->vec = 4, o->nin = (uint8_t)nin, o->n = n;
    o->out = out, o->in[0] = a, o->in[1] = b, o->in[2] = c;
    o->out_dt = o->compute_dt = o->res_dt = dt;
    for (int i = 0; i < nin; i++) o->in_dt[i] = dt;
    return it;
}
/* An op's scalars (float; sarg says which operand is one) */
static tcf_item_t scal(tcf_item_t it, int sarg, float s0, float s1, int ns)
{
    float v[2] = { s0, s1 };
    it.op.sarg = (uint8_t)sarg, it.op.nscalar = (uint8_t)ns;
    for (int i = 0; i < ns; i++) {
        it.op.s[i].dt = TCF_DT_F32, it.op.s[i].f = v[i];
        memcpy(&it.op.s[i].bits, &v[i], 4);
    }
    return it;
}
static tcf_item_t free_(uint64_t p) { return (tcf_item_t){ .kind = TCF_ITEM_FREE, .ptr = p }; }

/* A strided op over nd dims (innermost first): its sizes, and each operand's byte strides
 * per dim (st[d][operand], the output first). */
static tcf_item_t sv(tcf_item_t it, unsigned nd, const uint32_t *size, const uint32_t st[][4])
{
    uint32_t n = 1;
    it.op.loop = TCF_LOOP_STRIDED, it.op.vec = 1, it.op.it.ndim = (uint8_t)nd;
    for (unsigned d = 0; d < nd; d++) {
        it.op.it.size[d] = size[d], n *= size[d];
        for (unsigned o = 0; o < 4; o++) it.op.it.stride[o][d] = st[d][o];
    }
    it.op.n = n;
    return it;
}
#define SV(it, nd, sizes, strides) sv(it, nd, (const uint32_t[])sizes, (const uint32_t[][4])strides)
#define L(...) { __VA_ARGS__ }

/* A decoded two-input cat (recognize/decode_cat.c) over [D, S, H, B] (innermost first). */
static tcf_item_t cat2(uint64_t out, uint64_t in0, uint64_t in1_real, uint32_t lo1, const uint32_t *size,
                       const uint32_t st[][4])
{
    tcf_item_t it = sv(op3(TCF_OP_CAT, TCF_DT_F16, 0, out, 2, in0, 0, 0), 4, size, st);
    tcf_op_t *o = &it.op;
    o->loop = TCF_LOOP_CAT, o->cat_dim = 0;
    o->in[1] = in1_real - (uint64_t)lo1 * st[0][2];
    o->cat_lo[0] = 0, o->cat_len[0] = lo1, o->cat_lo[1] = lo1, o->cat_len[1] = size[0] - lo1;
    o->nscalar = 2;
    o->s[0] = (tcf_scalar_t){ .dt = TCF_DT_NONE, .bits = size[0] };
    o->s[1] = (tcf_scalar_t){ .dt = TCF_DT_NONE, .bits = lo1 };
    return it;
}


/* HF's q * cos + rotate_half(q) * sin in bf16 as PyTorch launches it, B 2, H 4, S 8, D 16
 * (innermost first: D, S, H, B), q a transposed view of a [B, S, H, D] tensor: neg(x2)
 * over [.., D/2] into x2n, the cat of (-x2, x1) into c with x1 a slice of q, * sin
 * broadcast over B and H into m, + q * cos (qcos) into y; then c, m and x2n freed. */
static void rotary_window(tcf_item_t win[7], uint64_t q, uint64_t qcos, uint64_t sin, uint64_t x2n,
                          uint64_t c, uint64_t m, uint64_t y)
{
    win[0] = SV(op3(TCF_OP_NEG, TCF_DT_BF16, 0, x2n, 1, q + 16, 0, 0), 4, L(8, 8, 4, 2),
                L(L(2, 2), L(16, 128), L(128, 32), L(512, 1024)));
    win[1] = cat2(c, x2n, q, 8, (const uint32_t[]){ 16, 8, 4, 2 },
                  (const uint32_t[][4]){ { 2, 2, 2 }, { 32, 16, 128 }, { 256, 128, 32 }, { 1024, 512, 1024 } });
    win[2] = SV(op3(TCF_OP_MUL, TCF_DT_BF16, 0, m, 2, c, sin, 0), 4, L(16, 8, 4, 2),
                L(L(2, 2, 2), L(32, 32, 32), L(256, 256, 0), L(1024, 1024, 0)));
    win[3] = scal(SV(op3(TCF_OP_ADD, TCF_DT_BF16, 0, y, 2, qcos, m, 0), 4, L(16, 8, 4, 2),
                     L(L(2, 2, 2), L(32, 32, 32), L(256, 256, 256), L(1024, 1024, 1024))),
                  TCF_SARG_NONE, 1.0f, 0, 1);
    win[4] = free_(c), win[5] = free_(m), win[6] = free_(x2n);
}

#endif
