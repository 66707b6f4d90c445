/* Decoding of PyTorch 2.11's strided loop (elementwise_kernel<128, vt>: TensorIterator's
 * OffsetCalculator path, docs/PYTORCH-ELEMENTWISE.md) on every such launch the recorded
 * traces hold (tests/fixtures/trace-*.jsonl, full parameter bytes):
 *  - the worked example `A[:100, :1] + B[:1, :37]` field by field;
 *  - every decoded launch: sizes multiply to N, dims within range, each operand's extent
 *    (1 + sum (size-1)*stride) within 2^31 (the 32-bit split's guarantee), the output
 *    never broadcast, pointers that look like the device's;
 *  - the refusals name their reason, and corrupted bytes (a divisor's magic, dims, N, the
 *    grid) are refused, never decoded into something else;
 *  - verification's smaller problem (tcf_decode_resize, with the sizes the fuser picks):
 *    the rewritten bytes decode to the cut dims with exact IntDividers, the same strides,
 *    pointers and scalars, and nothing else in them changed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fuser/fuser.h"
#include "recognize/decode.h"
#include "fixture_launches.h"

static int want(const char *name) { return strstr(name, "_ZN2at6native18elementwise_kernelI") != NULL; }
static tcf_decode_status_t dec(const launch_t *x, const uint8_t *params, const uint32_t grid[3],
                               tcf_op_t *op)
{
    tcf_decode_launch_t d = { ks[x->k].name, ks[x->k].np, ks[x->k].off, ks[x->k].sz, params, x->len,
                              { grid[0], grid[1], grid[2] },
                              { x->block[0], x->block[1], x->block[2] } };
    return tcf_decode_launch(&d, op);
}

/* What verification does with the bytes a kernel never reads: zeroed, in a copy. */
static void zero_marked(uint8_t *p, const uint8_t *mark, uint32_t len)
{
    for (uint32_t b = 0; b < len; b++)
        if (mark[b])
            p[b] = 0;
}

static uint64_t extent(const tcf_op_t *op, unsigned k)   /* bytes an operand's offsets span */
{
    uint64_t e = 1;
    for (unsigned d = 0; d < op->it.ndim; d++)
        e += (uint64_t)(op->it.size[d] - 1) * op->it.stride[k][d];
    return e;
}

TEST(worked_example_broadcast_add)
{
    const char *name = "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocast"
                       "INS0_15CUDAFunctor_addIfEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_";
    for (size_t i = 0; i < nls; i++) {
        tcf_op_t op;
        if (strcmp(ks[ls[i].k].name, name) || dec(&ls[i], ls[i].params, ls[i].grid, &op) != TCF_DECODE_OK ||
            op.n != 3700)
            continue;
        CHECK_EQ_INT(op.kind, TCF_OP_ADD);
        CHECK_EQ_INT(op.loop, TCF_LOOP_STRIDED);
        CHECK_EQ_INT(op.compute_dt, TCF_DT_F32);
        CHECK_EQ_INT(op.it.ndim, 2);
        CHECK_EQ_INT(op.it.size[0], 37);
        CHECK_EQ_INT(op.it.size[1], 100);
        CHECK_EQ_INT(op.it.stride[0][0], 4), CHECK_EQ_INT(op.it.stride[0][1], 148);    /* out */
        CHECK_EQ_INT(op.it.stride[1][0], 0), CHECK_EQ_INT(op.it.stride[1][1], 4000);   /* A[:100,:1] */
        CHECK_EQ_INT(op.it.stride[2][0], 4), CHECK_EQ_INT(op.it.stride[2][1], 0);      /* B[:1,:37] */
        CHECK_EQ_U64(op.s[0].bits, 0x3f800000);   /* alpha 1.0 */
        CHECK(op.out >> 40 == 0x7f && op.in[0] >> 40 == 0x7f && op.in[1] >> 40 == 0x7f);
        return;
    }
    CHECK(!"the broadcast add of trace-ops.jsonl was not found or not decoded");
}

TEST(every_recorded_strided_launch)
{
    size_t ok = 0, why[TCF_DECODE_NSTATUS] = { 0 }, casts = 0, bcast = 0;
    for (size_t i = 0; i < nls; i++) {
        tcf_op_t op;
        tcf_decode_status_t st = dec(&ls[i], ls[i].params, ls[i].grid, &op);
        why[st]++;
        if (st != TCF_DECODE_OK)
            continue;
        ok++;
        uint64_t count = 1;
        CHECK(op.it.ndim >= 1 && op.it.ndim <= TCF_OP_MAX_DIMS);
        CHECK(op.loop == TCF_LOOP_STRIDED || op.loop == TCF_LOOP_STRIDED_CAST);
        casts += op.loop == TCF_LOOP_STRIDED_CAST;
        for (unsigned d = 0; d < op.it.ndim; d++) {
            count *= op.it.size[d];
            CHECK(op.it.stride[0][d] != 0 || op.it.size[d] == 1);   /* outputs are never broadcast */
            for (unsigned k = 1; k <= op.nin; k++)
                bcast += op.it.stride[k][d] == 0 && op.it.size[d] > 1;
        }
        CHECK_EQ_U64(count, op.n);
        for (unsigned k = 0; k <= op.nin; k++)
            CHECK(extent(&op, k) <= (1ull << 31));
        CHECK(fixture_device_ptr(op.out));
        CHECK(op.out_dt != TCF_DT_NONE && op.in_dt[0] != TCF_DT_NONE);
    }
    printf("test_decode_strided: %zu of %zu strided launches decoded (%zu on the cast branch, "
           "%zu broadcast operand dims);", ok, nls, casts, bcast);
    for (int s = 1; s < TCF_DECODE_NSTATUS; s++)
        if (why[s])
            printf(" %zu %s", why[s], tcf_decode_reason((tcf_decode_status_t)s));
    printf("\n");
    CHECK(nls >= 100);
    CHECK(ok * 10 >= nls * 9);       /* today 267 of 287: masked_fill and int64 copies are left */
    CHECK(casts > 0 && bcast > 0);
    /* what is left is functors without a rule, never a layout we misread */
    CHECK_EQ_INT(why[TCF_DECODE_BAD_LAYOUT] + why[TCF_DECODE_BAD_VALUE] + why[TCF_DECODE_BAD_NAME] +
                 why[TCF_DECODE_BAD_LAUNCH] + why[TCF_DECODE_TRUNCATED], 0);
}

/* One byte changed where it matters is refused with a named reason, never decoded. */
TEST(corrupted_bytes_are_refused)
{
    size_t tried = 0;
    for (size_t i = 0; i < nls && tried < 40; i++) {
        tcf_op_t op;
        if (dec(&ls[i], ls[i].params, ls[i].grid, &op) != TCF_DECODE_OK)
            continue;
        tried++;
        uint8_t *p = malloc(ls[i].len);
        uint32_t g[3];
        struct { uint32_t at; uint32_t v; tcf_decode_status_t st; } e[] = {
            { 8, 0, TCF_DECODE_BAD_VALUE },                      /* dims 0 */
            { 8, 26, TCF_DECODE_BAD_VALUE },                     /* dims past MAX_DIMS */
            { 8, 9, TCF_DECODE_TOO_MANY_DIMS },                  /* more than we keep */
            { 16, 0x12345, TCF_DECODE_BAD_VALUE },               /* sizes_[0].m1 */
            { 0, op.n + 1, TCF_DECODE_BAD_VALUE },               /* N against the sizes */
        };
        for (size_t j = 0; j < sizeof e / sizeof e[0]; j++) {
            memcpy(p, ls[i].params, ls[i].len);
            memcpy(p + e[j].at, &e[j].v, 4);
            memcpy(g, ls[i].grid, sizeof g);
            if (e[j].at == 0)   /* keep the grid PyTorch's for the new N, so N is what fails */
                g[0] = (uint32_t)((e[j].v + 128ull * 4 - 1) / (128ull * 4));
            tcf_decode_status_t st = dec(&ls[i], p, g, &op);
            if (e[j].at == 0 && st == TCF_DECODE_BAD_LAUNCH)
                st = TCF_DECODE_BAD_VALUE;   /* vt 2: the grid check caught it first */
            if (!check_report(st == e[j].st, __FILE__, __LINE__, ks[ls[i].k].name, tcf_decode_reason(st)))
                break;
            CHECK_EQ_INT(op.kind, TCF_OP_NONE);   /* a refused op is all zeros */
        }
        memcpy(g, ls[i].grid, sizeof g);
        g[0]++;
        CHECK_EQ_INT(dec(&ls[i], ls[i].params, g, &op), TCF_DECODE_BAD_LAUNCH);
        CHECK_EQ_INT(dec(&ls[i], ls[i].params, ls[i].grid, &op), TCF_DECODE_OK);  /* untouched */
        free(p);
    }
    CHECK(tried >= 20);
}

/* tcf_int_divider against plain division, as the generated kernels use it: the quotient
 * (umulhi(n, m1) + n) >> shift (32-bit sum) for n < 2^31, over small, large and power-of-
 * two divisors; and the bounds. */
TEST(int_divider)
{
    uint64_t seed = 12345;
    size_t bad = 0;
    CHECK_EQ_INT(tcf_int_divider(0, &(uint32_t){ 0 }, &(uint32_t){ 0 }), -1);
    CHECK_EQ_INT(tcf_int_divider(0x80000001u, &(uint32_t){ 0 }, &(uint32_t){ 0 }), -1);
    for (uint32_t k = 0; k < 6000; k++) {
        uint32_t d = k < 3000 ? k + 1 : k < 3031 ? 1u << (k - 3000)
                   : (uint32_t)(seed = seed * 6364136223846793005ull + 1442695040888963407ull) >> 1 | 1;
        uint32_t m1, sh;
        if (tcf_int_divider(d, &m1, &sh) || (1ull << sh) < d || (sh && (1ull << (sh - 1)) >= d)) {
            bad++;
            continue;
        }
        for (int j = 0; j < 64; j++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t n = j < 4 ? (uint32_t[]){ 0, d - 1, d, 0x7fffffffu }[j] & 0x7fffffffu
                               : (uint32_t)(seed >> 33);
            uint32_t t = (uint32_t)(((uint64_t)n * m1) >> 32);
            bad += ((t + n) >> sh) != n / d;
        }
    }
    CHECK_EQ_INT(bad, 0);
}

/* Each decodable launch cut as verification cuts its group when it runs alone (the op's
 * own space to at most 1000 elements, outer dims first), its bytes rewritten, decoded
 * again. */
TEST(resize_for_verification)
{
    size_t cut = 0;
    for (size_t i = 0; i < nls; i++) {
        tcf_op_t op, op2;
        tcf_fgroup_t *g = malloc(sizeof *g);
        if (dec(&ls[i], ls[i].params, ls[i].grid, &op) != TCF_DECODE_OK || !g) {
            free(g);
            continue;
        }
        tcf_space_t sp;
        uint32_t ns[TCF_OP_MAX_DIMS], os[TCF_OP_MAX_DIMS], on = 0, grid[3];
        CHECK_EQ_INT(tcf_fuser_single(&op, g), 0);
        tcf_fuser_space(&g->g, &g->args, &sp);
        CHECK(g->g.ndim >= 1 && sp.nd == g->g.ndim);
        uint64_t total = tcf_fuser_verify_sizes(&sp, 1000, 1, ns);
        CHECK_EQ_INT(tcf_fuser_op_sizes(&op, &sp, ns, os, &on), 0);
        CHECK_EQ_U64(total, on);
        CHECK(on <= 1000 || on <= op.n / sp.size[sp.nd - 1]);
        uint8_t *p = malloc(ls[i].len);
        memcpy(p, ls[i].params, ls[i].len);
        CHECK_EQ_INT(tcf_decode_resize(p, ls[i].len, &op, on, os), 0);
        unsigned vt = strstr(ks[ls[i].k].name, "ILi128ELi2E") ? 2 : 4;
        memcpy(grid, ls[i].grid, sizeof grid);
        grid[0] = (on + 128 * vt - 1) / (128 * vt);
        if (CHECK_EQ_INT(dec(&ls[i], p, grid, &op2), TCF_DECODE_OK)) {
            CHECK_EQ_U64(op2.n, on);
            CHECK(op2.out == op.out && op2.in[0] == op.in[0] && op2.kind == op.kind &&
                  op2.s[0].bits == op.s[0].bits && op2.it.ndim == op.it.ndim);
            for (unsigned d = 0; d < op.it.ndim; d++) {
                CHECK_EQ_INT(op2.it.size[d], os[d]);
                for (unsigned k = 0; k <= op.nin; k++)
                    CHECK_EQ_INT(op2.it.stride[k][d], op.it.stride[k][d]);
            }
        }
        /* only N and the dividers of the dims changed */
        for (uint32_t b = 0; b < ls[i].len; b++)
            if (p[b] != ls[i].params[b] && !(b < 4) && !(b >= 12 && b < 12 + 12u * op.it.ndim)) {
                CHECK(!"a byte outside N and the dividers changed");
                break;
            }
        cut += on < op.n;
        /* refused: more elements than the launch, sizes that are not the dims' product */
        CHECK_EQ_INT(tcf_decode_resize(p, ls[i].len, &op, op.n + 1, op.it.size), -1);
        memcpy(p, ls[i].params, ls[i].len);
        CHECK_EQ_INT(tcf_decode_resize(p, ls[i].len, &op, on + 1, os), -1);
        CHECK(!memcmp(p, ls[i].params, ls[i].len));   /* a refusal changes nothing */
        free(p);
        free(g);
    }
    CHECK(cut >= 100);
}

/* The entries of an OffsetCalculator past dims are garbage PyTorch never reads: marked,
 * and cleared in a copy, the launch decodes the same, and every byte but those entries is
 * kept. */
TEST(offset_calc_unused_entries_cleared)
{
    size_t n = 0, dirty = 0;
    for (size_t i = 0; i < nls; i++) {
        tcf_op_t op, op2;
        if (dec(&ls[i], ls[i].params, ls[i].grid, &op) != TCF_DECODE_OK)
            continue;
        unsigned nt = 1u + op.nin, dims = op.it.ndim;
        uint8_t *p = malloc(ls[i].len);
        memcpy(p, ls[i].params, ls[i].len);
        uint8_t *mark = calloc(ls[i].len, 1);
        CHECK_EQ_INT(tcf_decode_offset_calc_unread(p + 8, ls[i].len - 8, nt, mark + 8), 0);
        zero_marked(p, mark, ls[i].len);
        if (CHECK_EQ_INT(dec(&ls[i], p, ls[i].grid, &op2), TCF_DECODE_OK))
            CHECK(!memcmp(&op, &op2, sizeof op));
        int changed = 0;
        for (uint32_t b = 0; b < ls[i].len; b++) {
            uint32_t r = b - 8;   /* within the calculator */
            int unused = b >= 8 && ((r >= 4 + 12 * dims && r < 304) ||
                                    (r >= 304 + 4 * nt * dims && r < 304 + 100 * nt));
            if (unused) {
                CHECK_EQ_INT(p[b], 0);
                changed |= p[b] != ls[i].params[b];
            } else if (p[b] != ls[i].params[b]) {
                CHECK(!"a byte outside the unused entries changed");
                break;
            }
        }
        dirty += changed;
        n++;
        free(p), free(mark);
    }
    CHECK(n >= 100);
    printf("  offset calculators cleared: %zu launches, %zu with garbage past dims\n", n, dirty);
    uint8_t oc[604] = { 0 }, mark[604] = { 0 };
    int32_t dims = -1;
    memcpy(oc, &dims, 4);
    CHECK_EQ_INT(tcf_decode_offset_calc_unread(oc, sizeof oc, 3, mark), -1);
    dims = 26;
    memcpy(oc, &dims, 4);
    CHECK_EQ_INT(tcf_decode_offset_calc_unread(oc, sizeof oc, 3, mark), -1);
    dims = 2;
    memcpy(oc, &dims, 4);
    CHECK_EQ_INT(tcf_decode_offset_calc_unread(oc, sizeof oc - 1, 3, mark), -1);
    CHECK_EQ_INT(tcf_decode_offset_calc_unread(oc, sizeof oc, 3, NULL), -1);
    CHECK_EQ_INT(tcf_decode_offset_calc_unread(oc, sizeof oc, 3, mark), 0);
    /* dims 2 of 25, 3 operands: the dividers of 23 dims and the strides of 23 x 3 */
    size_t marked = 0;
    for (size_t b = 0; b < sizeof mark; b++)
        marked += mark[b];
    CHECK_EQ_INT((long long)marked, 23 * 12 + 23 * 3 * 4);
    CHECK(!mark[0] && !mark[4 + 12 * 2 - 1] && mark[4 + 12 * 2] && !mark[304 + 4 * 3 * 2 - 1] &&
          mark[304 + 4 * 3 * 2]);
}

/* The closure's functor bytes the kernel never reads (an empty functor's byte, padding
 * around members and scalars, after the cast loop's dtypes) are marked, and zeroed for
 * verification's stray-pointer check; the op decoded from the cleared bytes is the same, and only bytes
 * between data[] and nvcc's closure pointer change. */
TEST(functor_padding_cleared)
{
    size_t n = 0, dirty = 0;
    for (size_t i = 0; i < nls; i++) {
        tcf_op_t op, op2;
        if (dec(&ls[i], ls[i].params, ls[i].grid, &op) != TCF_DECODE_OK)
            continue;
        const kern_t *k = &ks[ls[i].k];
        tcf_decode_launch_t d = { k->name, k->np, k->off, k->sz, NULL, 0, { 0, 0, 0 }, { 0, 0, 0 } };
        tcf_decode_kernel_t dk;
        if (!CHECK_EQ_INT(tcf_decode_kernel(&d, &dk), TCF_DECODE_OK))
            continue;
        uint8_t *p = malloc(ls[i].len);
        memcpy(p, ls[i].params, ls[i].len);
        uint8_t *mark = calloc(ls[i].len, 1);
        CHECK_EQ_INT(tcf_decode_functor_unread(&dk, ls[i].len, mark), 0);
        zero_marked(p, mark, ls[i].len);
        if (CHECK_EQ_INT(dec(&ls[i], p, ls[i].grid, &op2), TCF_DECODE_OK))
            CHECK(!memcmp(&op, &op2, sizeof op));
        int changed = 0;
        for (uint32_t b = 0; b < ls[i].len; b++)
            if (p[b] != ls[i].params[b]) {
                CHECK(b >= dk.foff && b + 8 < dk.span && p[b] == 0);
                changed = 1;
            }
        dirty += changed;
        n++;
        CHECK_EQ_INT(tcf_decode_functor_unread(&dk, (uint32_t)dk.span - 1, mark), -1);
        free(p), free(mark);
    }
    CHECK(n >= 100);
    printf("  functors cleared: %zu launches, %zu with stack bytes there\n", n, dirty);
    tcf_decode_kernel_t none = { 0 };
    uint8_t b[8] = { 0 };
    CHECK_EQ_INT(tcf_decode_functor_unread(&none, sizeof b, b), -1);
}

int main(void)
{
    load_fixture_launches(want);
    RUN(worked_example_broadcast_add);
    RUN(every_recorded_strided_launch);
    RUN(corrupted_bytes_are_refused);
    RUN(int_divider);
    RUN(resize_for_verification);
    RUN(offset_calc_unused_entries_cleared);
    RUN(functor_padding_cleared);
    free_launches();
    return check_main_end();
}
