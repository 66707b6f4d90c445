/* Decoding of torch.cat's kernels (recognize/decode_cat.c) on every CatArrayBatchedCopy
 * launch the recorded traces hold (tests/fixtures/trace-*.jsonl, full parameter bytes):
 *  - counts by variant and by refusal (the fixtures: HF GPT-2's and Llama's KV-cache cats
 *    with an empty first input, Llama's rotate_half and rotary table, a 3-input cat and
 *    a 28-input cat of a training step, int64 cats of 8-byte elements);
 *  - HF Llama's rotate_half field by field;
 *  - every decoded launch against an emulation of the kernel itself (Shape.cu's
 *    CatArrIndexToOffset over the recorded bytes): the set of (output byte, input byte)
 *    pairs it copies equals the op's, element by element through its views and its
 *    e % P < T selection; at verification's smaller problem too, after
 *    tcf_decode_cat_resize moved every pointer (the emulation then runs on the rewritten
 *    bytes, as the re-launched original would);
 *  - corrupted bytes are refused;
 *  - the bytes tcf_decode_cat_unread marks (slots past grid.y, padding, the output's dims
 *    past Dims) change nothing when overwritten: the emulated kernel copies the same
 *    pairs and the launch decodes to the same op. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fuser/fuser.h"
#include "recognize/decode.h"
#include "fixture_launches.h"

static int want(const char *name) { return strstr(name, "CatArrayBatchedCopy") != NULL; }
static tcf_decode_status_t dec(const launch_t *x, const uint8_t *params, tcf_op_t *op)
{
    const kern_t *k = &ks[x->k];
    tcf_decode_launch_t d = { k->name, k->np, k->off, k->sz, params, x->len,
                              { x->grid[0], x->grid[1], x->grid[2] },
                              { x->block[0], x->block[1], x->block[2] } };
    return tcf_decode_launch(&d, op);
}

static uint64_t rd(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

/* An order-free digest of a set of (output, input) byte-address pairs. */
typedef struct { uint64_t n, sum, x; } digest_t;
static void digest_add(digest_t *d, uint64_t out, uint64_t in)
{
    uint64_t h = (out * 0x9E3779B97F4A7C15ull) ^ (in + 0x632BE59BD9B4E019ull);
    h ^= h >> 29, h *= 0xBF58476D1CE4E5B9ull, h ^= h >> 32;
    d->n++, d->sum += h, d->x ^= h * 31 + out;
}

/* CatArrIndexToOffset (Shape.cu): dims Dims-1..1 divided, dim 0 takes what is left. */
static uint64_t idx_to_off(const uint32_t *size, const uint32_t *stride, uint32_t dim_size,
                           int cd, unsigned dims, uint64_t lin)
{
    uint64_t off = 0;
    for (int i = (int)dims - 1; i >= 1; i--) {
        uint64_t cur = i == cd ? dim_size : size[i];
        uint64_t next = lin / cur;
        off += (lin - cur * next) * stride[i];
        lin = next;
    }
    return off + lin * stride[0];
}

/* What the kernel copies, from its bytes: the batch and stride entries by the metadata's
 * size (3392: <64, 64>; 2720: <128, 1>), Dims and the element size from the name. */
static digest_t emulate(const launch_t *x, const uint8_t *p)
{
    digest_t d = { 0, 0, 0 };
    const kern_t *k = &ks[x->k];
    uint32_t mb = k->sz[1], batch = mb == 3392 ? 64 : 128, ss = mb == 3392 ? 64 : 1;
    const char *o = strstr(k->name, "OpaqueTypeILj");
    unsigned es = (unsigned)atoi(o + 13), dims = (unsigned)atoi(strstr(o, "EEEjLi") + 6);
    const uint8_t *m = p + 8, *os = p + 8 + mb;
    uint32_t osz[4], ost[4];
    for (unsigned i = 0; i < 4; i++)
        osz[i] = (uint32_t)rd(os + 4 * i, 4), ost[i] = (uint32_t)rd(os + 16 + 4 * i, 4);
    int cd = (int)rd(os + 32, 4);
    uint64_t dim_stride = rd(os + 36, 4), out = rd(p, 8);
    uint32_t tso = (21 * batch + 3) & ~3u;
    for (uint32_t b = 0; b < x->grid[1]; b++) {
        uint64_t in = rd(m + 8 * b, 8), off = rd(m + 8 * batch + 4 * b, 4);
        uint32_t dsz = (uint32_t)rd(m + 12 * batch + 4 * b, 4);
        uint64_t nel = rd(m + 16 * batch + 4 * b, 4);
        int contig = m[20 * batch + b];
        uint32_t isz[4], ist[4];
        for (unsigned i = 0; i < 4; i++) {
            const uint8_t *ts = m + tso + 32 * (ss > 1 ? b : 0);
            isz[i] = (uint32_t)rd(ts + 4 * i, 4), ist[i] = (uint32_t)rd(ts + 16 + 4 * i, 4);
        }
        for (uint64_t t = 0; t < nel; t++) {
            uint64_t eo = idx_to_off(osz, ost, dsz, cd, dims, t);
            uint64_t io = ss == 1 || contig ? t : idx_to_off(isz, ist, dsz, cd, dims, t);
            digest_add(&d, out + (off * dim_stride + eo) * es, in + io * es);
        }
    }
    return d;
}

/* What the op copies over sizes (its dims), with its views and its selection. */
static digest_t op_digest(const tcf_op_t *op, const uint32_t *sizes, int *bad)
{
    digest_t d = { 0, 0, 0 };
    uint64_t n = 1, es = tcf_dtype_size(op->out_dt);
    for (unsigned i = 0; i < op->it.ndim; i++)
        n *= sizes[i];
    for (uint64_t e = 0; e < n; e++) {
        uint64_t r = e, o = op->out, c = 0, x[TCF_OP_MAX_DIMS];
        for (unsigned i = 0; i < op->it.ndim; i++)
            x[i] = r % sizes[i], r /= sizes[i];
        c = x[op->cat_dim];
        unsigned j = op->nin == 2 && c >= op->cat_lo[1];
        /* the generated kernel's test, on the op's scalars */
        if (op->nin == 2 && (e % op->s[0].bits < op->s[1].bits) != (j == 0))
            *bad = 1;
        if (c < op->cat_lo[j] || c >= op->cat_lo[j] + op->cat_len[j])
            *bad = 1;
        uint64_t in = op->in[j];
        for (unsigned i = 0; i < op->it.ndim; i++)
            o += x[i] * op->it.stride[0][i], in += x[i] * op->it.stride[1 + j][i];
        (void)es;
        digest_add(&d, o, in);
    }
    return d;
}

static int is(const launch_t *x, const char *s) { return strstr(ks[x->k].name, s) != NULL; }

TEST(counts_by_variant_and_reason)
{
    unsigned ok = 0, st[TCF_DECODE_NSTATUS] = { 0 }, generic = 0, aligned = 0, one = 0, two = 0;
    for (size_t i = 0; i < nls; i++) {
        tcf_op_t op;
        tcf_decode_status_t s = dec(&ls[i], ls[i].params, &op);
        st[s < TCF_DECODE_NSTATUS ? s : 0]++;
        if (s != TCF_DECODE_OK)
            continue;
        ok++;
        generic += is(&ls[i], "19CatArrayBatchedCopyI");
        aligned += is(&ls[i], "35CatArrayBatchedCopy_alignedK_contigI");
        one += op.nin == 1, two += op.nin == 2;
        CHECK_EQ_INT(op.kind, TCF_OP_CAT);
        CHECK_EQ_INT(op.loop, TCF_LOOP_CAT);
    }
    printf("test_decode_cat: %zu cat launches: %u decoded (%u generic, %u aligned; %u of one "
           "input, %u of two), %u cat-inputs, %u unsupported-dtype\n", nls, ok, generic, aligned,
           one, two, st[TCF_DECODE_CAT_INPUTS], st[TCF_DECODE_UNSUPPORTED_DTYPE]);
    /* GPT-2 (8 + 8) and Llama's (8 + 4) KV-cache cats, Llama's rotate_half (8 + 8) and
     * rotary table (2 + 2), the training step's 2-input aligned cat; its 3- and 28-input
     * cats; GPT-2's int64 position cats; the fuse-mode Llama trace's 16 KV-cache cats, 16
     * rotate_half and 4 rotary-table cats; the 2-layer fuse-mode trace's 12 KV-cache, 12
     * rotate_half and 3 rotary-table cats (3 forwards) */
    CHECK_EQ_INT(nls, 120);
    CHECK_EQ_INT(ok, 112);
    CHECK_EQ_INT(aligned, 1);
    CHECK_EQ_INT(one, 56);
    CHECK_EQ_INT(two, 56);
    CHECK_EQ_INT(st[TCF_DECODE_CAT_INPUTS], 6);
    CHECK_EQ_INT(st[TCF_DECODE_UNSUPPORTED_DTYPE], 2);
}

/* HF Llama's rotate_half, torch.cat((-x2, x1), dim=-1) in bf16 at 4 x 16 x 2048 x 128
 * (the forward; the training step's is 8 x 16 x 1024 x 64): -x2 is a fresh [B, S, H, D/2]
 * tensor seen as [B, H, S, D/2], x1 a slice of q's view. */
TEST(rotate_half_fields)
{
    int seen = 0;
    for (size_t i = 0; i < nls; i++) {
        tcf_op_t op;
        const uint8_t *p = ls[i].params;
        if (!is(&ls[i], "OpaqueTypeILj2EEEjLi4E") || dec(&ls[i], p, &op) != TCF_DECODE_OK ||
            op.nin != 2)
            continue;
        uint32_t D = op.it.size[0], h = D / 2, S = op.it.size[1];
        seen++;
        CHECK(D == 128 || D == 64);
        CHECK_EQ_INT(op.it.ndim, 4);
        CHECK_EQ_INT(op.cat_dim, 0);
        CHECK_EQ_INT(op.it.size[2], 16);
        CHECK_EQ_INT(op.n, op.it.size[3] * 16 * S * D);
        CHECK_EQ_INT(op.cat_lo[0], 0);
        CHECK_EQ_INT(op.cat_len[0], h);
        CHECK_EQ_INT(op.cat_lo[1], h);
        CHECK_EQ_INT(op.cat_len[1], h);
        CHECK_EQ_INT(op.nscalar, 2);
        CHECK_EQ_INT(op.s[0].bits, D);     /* P: one row of the last dim */
        CHECK_EQ_INT(op.s[1].bits, h);     /* T: the first input's part of it */
        CHECK_EQ_INT(op.out_dt, TCF_DT_F16);   /* by size: the planner takes bf16 */
        CHECK_EQ_U64(op.out, rd(p, 8));
        CHECK_EQ_U64(op.in[0], rd(p + 8, 8));
        CHECK_EQ_U64(op.in[1] + h * 2, rd(p + 16, 8));   /* shifted back h elements */
        /* the output contiguous [B, H, S, D]; -x2 [B, S, H, D/2]; x1 strided in q */
        CHECK_EQ_INT(op.it.stride[0][0], 2);
        CHECK_EQ_INT(op.it.stride[0][1], 2 * D);
        CHECK_EQ_INT(op.it.stride[1][1], 2 * 16 * h);
        CHECK_EQ_INT(op.it.stride[1][2], 2 * h);
        CHECK_EQ_INT(op.it.stride[2][1], 2 * 16 * D);
        CHECK_EQ_INT(op.it.stride[2][2], 2 * D);
    }
    CHECK_EQ_INT(seen, 44);   /* 16 in each 8-layer Llama trace, 12 in the 2-layer one */
}

/* Sizes of op's dims at verification's smaller problem (as exec/verify.c gets them). */
static int cut_sizes(const tcf_op_t *op, uint64_t target, uint32_t *opsize, uint32_t *opn)
{
    tcf_space_t sp;
    uint32_t nsz[TCF_OP_MAX_DIMS];
    memset(&sp, 0, sizeof sp);
    for (unsigned d = 0; d < op->it.ndim; d++)
        if (op->it.size[d] != 1)
            sp.size[sp.nd++] = op->it.size[d];
    if (!sp.nd)
        sp.size[sp.nd++] = 1;
    tcf_fuser_verify_sizes(&sp, target, 1, nsz);
    return tcf_fuser_op_sizes(op, &sp, nsz, opsize, opn);
}

TEST(every_decoded_launch_copies_what_the_kernel_copies)
{
    unsigned whole = 0, cut = 0, along = 0;
    for (size_t i = 0; i < nls; i++) {
        tcf_op_t op;
        int bad = 0;
        if (dec(&ls[i], ls[i].params, &op) != TCF_DECODE_OK)
            continue;
        /* whole, where it is small enough to walk (the rest are walked cut below) */
        if (op.n <= (1u << 20)) {
            digest_t a = emulate(&ls[i], ls[i].params), b = op_digest(&op, op.it.size, &bad);
            CHECK(!bad);
            CHECK_EQ_U64(a.n, b.n);
            CHECK_EQ_U64(a.sum, b.sum);
            CHECK_EQ_U64(a.x, b.x);
            whole++;
        }
        /* at the smaller problem, with scratch-like addresses */
        for (unsigned t = 0; t < 2; t++) {
            uint64_t target = t ? 70001 : 3 * op.it.size[0] / 2 + 1;
            uint32_t opsize[TCF_OP_MAX_DIMS], opn;
            if (!CHECK_EQ_INT(cut_sizes(&op, target, opsize, &opn), 0))
                continue;
            uint8_t *p = malloc(ls[i].len);
            memcpy(p, ls[i].params, ls[i].len);
            uint64_t in[2] = { 0x7f0000000000ull + (op.in[0] & 255),
                               0x7f1000000000ull + (op.nin > 1 ? op.in[1] & 255 : 0) };
            uint64_t out = 0x7f2000000000ull + (op.out & 255);
            if (CHECK_EQ_INT(tcf_decode_cat_resize(p, ls[i].len, &op, opsize, out, in), 0)) {
                tcf_op_t moved = op;
                moved.out = out, moved.in[0] = in[0], moved.in[1] = in[1];
                digest_t a = emulate(&ls[i], p), b = op_digest(&moved, opsize, &bad);
                CHECK(!bad);
                CHECK_EQ_U64(a.n, opn);
                CHECK_EQ_U64(a.n, b.n);
                CHECK_EQ_U64(a.sum, b.sum);
                CHECK_EQ_U64(a.x, b.x);
                cut++;
                along += opsize[op.cat_dim] < op.it.size[op.cat_dim];
                /* what the kernel never reads is zero: past the batch, past Dims */
                const uint8_t *m = p + 8;
                uint32_t batch = ks[ls[i].k].sz[1] == 3392 ? 64 : 128;
                for (uint32_t b2 = ls[i].grid[1]; b2 < batch; b2++)
                    CHECK_EQ_U64(rd(m + 8 * b2, 8), 0);
            }
            free(p);
        }
    }
    printf("test_decode_cat: %u launches walked whole, %u cut (%u along the cat dim) against "
           "the kernel's own indexing\n", whole, cut, along);
    CHECK(whole >= 10);
    CHECK(cut >= 90);
    CHECK(along >= 1);
}

TEST(corrupted_bytes_are_refused)
{
    for (size_t i = 0; i < nls; i++) {
        tcf_op_t op;
        if (dec(&ls[i], ls[i].params, &op) != TCF_DECODE_OK)
            continue;
        uint8_t *p = malloc(ls[i].len);
        uint32_t mb = ks[ls[i].k].sz[1], batch = mb == 3392 ? 64 : 128;
        const uint32_t osoff = 8 + mb;
        /* concatDim past Dims; dimStride not the output's stride there */
        memcpy(p, ls[i].params, ls[i].len);
        p[osoff + 32] = 7;
        CHECK_EQ_INT(dec(&ls[i], p, &op), TCF_DECODE_BAD_VALUE);
        memcpy(p, ls[i].params, ls[i].len);
        p[osoff + 36] ^= 0x40;
        CHECK_EQ_INT(dec(&ls[i], p, &op), TCF_DECODE_BAD_VALUE);
        /* an element count that is not dimSize times the other sizes */
        memcpy(p, ls[i].params, ls[i].len);
        p[8 + 16 * batch + 4 * (ls[i].grid[1] - 1)] ^= 1;
        CHECK_EQ_INT(dec(&ls[i], p, &op), TCF_DECODE_BAD_VALUE);
        /* offsets that do not follow each other */
        memcpy(p, ls[i].params, ls[i].len);
        p[8 + 8 * batch + 4 * (ls[i].grid[1] - 1)] ^= 1;
        CHECK(dec(&ls[i], p, &op) != TCF_DECODE_OK);
        /* a grid with more inputs than the batch, or a z dim */
        launch_t y = ls[i];
        y.grid[1] = batch + 1;
        CHECK_EQ_INT(dec(&y, ls[i].params, &op), TCF_DECODE_BAD_LAUNCH);
        y = ls[i], y.grid[2] = 2;
        CHECK_EQ_INT(dec(&y, ls[i].params, &op), TCF_DECODE_BAD_LAUNCH);
        /* fewer bytes than the layout spans */
        y = ls[i], y.len -= 4;
        CHECK_EQ_INT(dec(&y, ls[i].params, &op), TCF_DECODE_TRUNCATED);
        free(p);
    }
    /* names: the vectorized variant and a 64-bit index are not decoded */
    uint32_t off[5] = { 0, 8, 3400, 3432, 3436 }, sz[5] = { 8, 3392, 32, 4, 4 };
    tcf_decode_kernel_t dk;
    tcf_decode_launch_t l = { "_ZN2at6native40_GLOBAL__N__0f1a8107_8_Shape_cu_49f7391c30CatArray"
                              "BatchedCopy_vectorizedINS1_10OpaqueTypeILj2EEEjLi4ELi64ELi64ELi16"
                              "ELi8EEEvPcNS1_25CatArrInputTensorMetadataIT_T0_XT2_EXT3_EEENS1_16"
                              "TensorSizeStrideIS8_Lj4EEEiS8_", 5, off, sz, NULL, 0, { 0 }, { 0 } };
    CHECK_EQ_INT(tcf_decode_kernel(&l, &dk), TCF_DECODE_CAT_VARIANT);
    l.name = "_ZN2at6native40_GLOBAL__N__0f1a8107_8_Shape_cu_49f7391c19CatArrayBatchedCopyINS1_10"
             "OpaqueTypeILj2EEEmLi4ELi64ELi64EEEvPT_NS1_25CatArrInputTensorMetadataIS5_T0_XT2_"
             "EXT3_EEENS1_16TensorSizeStrideIS8_Lj4EEEiS8_";
    CHECK_EQ_INT(tcf_decode_kernel(&l, &dk), TCF_DECODE_CAT_VARIANT);
    l.name = "_ZN2at6native40_GLOBAL__N__0f1a8107_8_Shape_cu_49f7391c19CatArrayBatchedCopyINS1_10"
             "OpaqueTypeILj2EEEjLi4ELi64ELi64EEEvPT_NS1_25CatArrInputTensorMetadataIS5_T0_XT2_"
             "EXT3_EEENS1_16TensorSizeStrideIS8_Lj4EEEiS8_";
    CHECK_EQ_INT(tcf_decode_kernel(&l, &dk), TCF_DECODE_OK);
    sz[1] = 3384;   /* a metadata struct of another size */
    CHECK_EQ_INT(tcf_decode_kernel(&l, &dk), TCF_DECODE_BAD_LAYOUT);
    CHECK_EQ_STR(tcf_decode_reason(TCF_DECODE_CAT_INPUTS), "cat-inputs");
}

/* A reproducible byte stream for the unread bytes. */
static uint8_t noise(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint8_t)(*s >> 56);
}

TEST(unread_bytes_change_nothing)
{
    unsigned tried = 0, decoded = 0, many = 0;
    uint64_t seed = 42;
    for (size_t i = 0; i < nls; i++) {
        const launch_t *x = &ls[i];
        const kern_t *k = &ks[x->k];
        tcf_decode_launch_t l = { k->name, k->np, k->off, k->sz, NULL, 0, { 0 }, { 0 } };
        tcf_decode_kernel_t dk;
        if (tcf_decode_kernel(&l, &dk) != TCF_DECODE_OK || dk.loop != TCF_LOOP_CAT)
            continue;
        uint8_t *mark = calloc(1, x->len), *p = malloc(x->len);
        uint32_t gy = x->grid[1], mb = k->sz[1], batch = dk.cat_batch, dims = dk.cat_dims;
        if (!CHECK_EQ_INT(tcf_decode_cat_unread(&dk, x->len, gy, mark), 0))
            goto next;
        /* nothing a slot before gy holds, nor the output's pointer, dims, concatDim or
         * dimStride */
        int kept = 1;
        for (uint32_t b = 0; b < gy; b++) {
            for (unsigned q = 0; q < 8; q++)
                kept &= !mark[8 + 8 * b + q];
            for (unsigned a = 1; a <= 3; a++)
                for (unsigned q = 0; q < 4; q++)
                    kept &= !mark[8 + 4 * batch * (a + 1) + 4 * b + q];
            kept &= !mark[8 + 20 * batch + b];
        }
        for (unsigned q = 0; q < 8; q++)
            kept &= !mark[q];
        for (unsigned d = 0; d < dims; d++)
            for (unsigned q = 0; q < 4; q++)
                kept &= !mark[8 + mb + 4 * d + q] && !mark[8 + mb + 16 + 4 * d + q];
        for (unsigned q = 0; q < 8; q++)
            kept &= !mark[8 + mb + 32 + q];
        CHECK(kept);
        /* every byte of the slots from gy on */
        unsigned marked = 0;
        for (uint32_t q = 0; q < x->len; q++)
            marked += mark[q];
        CHECK(marked >= 21 * (batch - gy) + (dk.cat_ss > 1 ? 32 * (batch - gy) : 0));
        memcpy(p, x->params, x->len);
        for (uint32_t q = 0; q < x->len; q++)
            if (mark[q])
                p[q] = noise(&seed);
        digest_t a = emulate(x, x->params), b = emulate(x, p);
        CHECK(a.n == b.n && a.sum == b.sum && a.x == b.x);
        tcf_op_t oa, ob;
        if (dec(x, x->params, &oa) == TCF_DECODE_OK) {
            CHECK_EQ_INT(dec(x, p, &ob), TCF_DECODE_OK);
            CHECK(memcmp(&oa, &ob, sizeof oa) == 0);
            decoded++;
        }
        tried++;
        many += gy > 2;
        /* no marks for a grid the batch cannot have, or bytes short of the layout */
        CHECK_EQ_INT(tcf_decode_cat_unread(&dk, x->len, 0, mark), -1);
        CHECK_EQ_INT(tcf_decode_cat_unread(&dk, x->len, batch + 1, mark), -1);
        CHECK_EQ_INT(tcf_decode_cat_unread(&dk, x->len - 1, gy, mark), -1);
    next:
        free(mark), free(p);
    }
    printf("  %u cat launches overwritten where marked unread (%u decoded, %u of more than 2 "
           "inputs)\n", tried, decoded, many);
    CHECK(tried >= 20 && decoded >= 10 && many >= 1);
    tcf_decode_kernel_t none = { 0 };
    uint8_t m[16];
    CHECK_EQ_INT(tcf_decode_cat_unread(&none, sizeof m, 1, m), -1);
}

int main(void)
{
    load_fixture_launches(want);
    RUN(counts_by_variant_and_reason);
    RUN(rotate_half_fields);
    RUN(every_decoded_launch_copies_what_the_kernel_copies);
    RUN(corrupted_bytes_are_refused);
    RUN(unread_bytes_change_nothing);
    free_launches();
    return check_main_end();
}
