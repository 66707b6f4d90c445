/* What full mode's memo relies on (replay/memo.c) to find a group's argument when the
 * launches' bytes never repeat: PyTorch leaves bytes its kernels never read (an
 * OffsetCalculator's dimensions past its rank, a functor's padding, a reduction config's
 * unused fields) as its stack had them, so the same launch in two iterations of HF Llama
 * differs in bytes, yet decodes to the same op. On the launches recorded from the
 * Llama-style forward at batch 1 x 32 whose bytes differ two iterations apart
 * (tests/fixtures/iters-hf-llama-1x32.jsonl: iteration 3's, then the same ones of
 * iteration 5, whose pointers are iteration 3's again):
 *  - every pair differs in its bytes, and most of them decode;
 *  - each decoded pair decodes to the same item, byte for byte (as the memo compares);
 *  - a decoded launch whose output pointer is moved decodes to another item: the
 *    comparison sees operands;
 *  - the bytes exec's tcf_exec_unread marks never read (replay leaves a node unpatched
 *    when only they moved) are among those decoding ignores: a pair that differs only
 *    there decodes alike, and a moved operand is never among them; and every pair that
 *    decodes alike differs only there (the rotary cats by their slots past grid.y). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config/config.h"
#include "exec/steps.h"
#include "fuser/fuser.h"
#include "recognize/recognize.h"
#include "fixture_launches.h"

#define TRACE "tests/fixtures/iters-hf-llama-1x32.jsonl"

static int any(const char *name) { (void)name; return 1; }

/* Launch x as the planner's item (zeroed first, as exec builds the memo's): 1 decoded. */
static int item_of(const launch_t *x, tcf_item_t *it)
{
    memset(it, 0, sizeof *it);
    it->kind = TCF_ITEM_OPAQUE;
    tcf_decode_launch_t d = fixture_decode_launch(x, x->params, x->len, x->grid);
    tcf_decode_status_t st = tcf_decode_launch(&d, &it->op);
    if (st == TCF_DECODE_OK) {
        it->kind = TCF_ITEM_OP;
        return 1;
    }
    memset(it, 0, sizeof *it);
    it->kind = TCF_ITEM_OPAQUE;
    tcf_reduce_t r;
    if (st == TCF_DECODE_REDUCTION && tcf_decode_reduce(&d, &r) == TCF_DECODE_OK) {
        it->kind = TCF_ITEM_REDUCE;
        it->red = r;
        return 1;
    }
    return 0;
}

TEST(same_launch_two_iterations_apart_decodes_alike)
{
    size_t half = nls / 2, decoded = 0, reduces = 0;
    CHECK(nls >= 100 && nls % 2 == 0);
    for (size_t i = 0; i < half; i++) {
        const launch_t *a = &ls[i], *b = &ls[half + i];
        CHECK_EQ_INT(a->k, b->k);
        CHECK(a->len == b->len && memcmp(a->params, b->params, a->len) != 0);
        tcf_item_t ia, ib;
        int da = item_of(a, &ia), db = item_of(b, &ib);
        CHECK_EQ_INT(da, db);
        if (!da)
            continue;
        decoded++;
        reduces += ia.kind == TCF_ITEM_REDUCE;
        if (!CHECK(memcmp(&ia, &ib, sizeof ia) == 0))
            fprintf(stderr, "  launch %zu (%s) decodes otherwise in iteration 5\n", i,
                    ks[a->k].name);
    }
    /* 57 pairs: all but the arange launch (its bytes hold a value that changes) decode */
    CHECK(decoded >= half - 2);
    CHECK(reduces >= 1);
}

TEST(another_operand_decodes_otherwise)
{
    size_t tried = 0;
    for (size_t i = 0; i < nls / 2; i++) {
        tcf_item_t ia, ib;
        if (!item_of(&ls[i], &ia))
            continue;
        /* the output's pointer, 256 bytes on, wherever its bytes hold it (a stale copy may
         * lie in an unused slot too): the same op over another tensor */
        uint64_t out = ia.kind == TCF_ITEM_OP ? ia.op.out : ia.red.dst, other = out + 256;
        launch_t moved = ls[i];
        moved.params = malloc(moved.len);
        memcpy(moved.params, ls[i].params, moved.len);
        int found = 0;
        for (uint32_t o = 0; out && o + 8 <= moved.len; o += 8)
            if (!memcmp(moved.params + o, &out, 8))
                memcpy(moved.params + o, &other, 8), found = 1;
        if (found) {
            int d = item_of(&moved, &ib);
            if (!CHECK(d && memcmp(&ia, &ib, sizeof ia) != 0))
                fprintf(stderr, "  launch %zu (%s): decoded %d\n", i, ks[ls[i].k].name, d);
            tried++;
        }
        free(moved.params);
    }
    CHECK(tried >= 40);
}

/* Whether a and b differ only in bytes mark says k never reads. */
static int only_unread(const uint8_t *a, const uint8_t *b, uint32_t len, const uint8_t *mark)
{
    for (uint32_t i = 0; i < len; i++)
        if (a[i] != b[i] && !mark[i])
            return 0;
    return 1;
}

TEST(unread_bytes_are_what_decoding_ignores)
{
    tcf_cfg.rows = 1;   /* row reductions decode, as with TCFUSE_ROWS's default */
    size_t half = nls / 2, same = 0, skipped = 0, moved = 0;
    uint8_t mark[4096];
    for (size_t i = 0; i < half; i++) {
        const launch_t *a = &ls[i], *b = &ls[half + i];
        tcf_item_t ia, ib;
        int da = item_of(a, &ia), db = item_of(b, &ib);
        int s = da && db && !memcmp(&ia, &ib, sizeof ia);
        same += s;
        tcf_kernel_t k = fixture_kernel(a);
        if (!CHECK(a->len <= sizeof mark))
            continue;
        uint32_t nm = tcf_exec_unread(&k, a->params, a->len, a->grid, mark);
        int u = nm && only_unread(a->params, b->params, a->len, mark);
        /* replay leaves such a node unpatched: it must be what fuse mode decodes alike */
        if (!CHECK(!u || s))
            fprintf(stderr, "  launch %zu (%s)\n", i, ks[a->k].name);
        skipped += u;
        CHECK_EQ_INT(tcf_exec_unread(&k, a->params, a->len - 1, a->grid, mark), 0);
        if (!da)
            continue;
        /* the output pointer moved, wherever the bytes hold it: a byte read moved */
        uint64_t out = ia.kind == TCF_ITEM_OP ? ia.op.out : ia.red.dst, other = out + 256;
        uint8_t *c = malloc(a->len);
        memcpy(c, a->params, a->len);
        int found = 0;
        for (uint32_t o = 0; out && o + 8 <= a->len; o += 8)
            if (!memcmp(c + o, &out, 8))
                memcpy(c + o, &other, 8), found = 1;
        if (found) {
            CHECK_EQ_INT(tcf_exec_unread(&k, a->params, a->len, a->grid, mark) > 0 &&
                             only_unread(a->params, c, a->len, mark), 0);
            moved++;
        }
        free(c);
    }
    printf("  %zu of %zu pairs decode alike; %zu of them differ only in bytes marked unread\n",
           same, half, skipped);
    /* every recorded pair that decodes alike: the strided loops' calculators and functors,
     * the ReduceOps', the rotary cats' slots past grid.y */
    CHECK(same >= 50 && skipped == same);
    CHECK(moved >= 40);
    /* another kernel: only the padding between its parameters (int @0, pointer @8) */
    uint32_t off[2] = { 0, 8 }, sz[2] = { 4, 8 };
    uint8_t p[16];
    memset(p, 0xab, sizeof p);
    tcf_kernel_t other = { .name = "_Z6myowniPf", .nparams = 2, .off = off, .size = sz,
                           .param_known = 1, .param_bytes = 16 };
    CHECK_EQ_INT(tcf_exec_unread(&other, p, 16, NULL, mark), 4);
    for (int i = 0; i < 16; i++)
        CHECK_EQ_INT(mark[i], i >= 4 && i < 8);
    tcf_kernel_t unknown = { .name = "" };   /* the driver gave no layout */
    CHECK_EQ_INT(tcf_exec_unread(&unknown, p, 16, NULL, mark), 0);
}

/* The masks tcf_exec_reads kept with a test's own kernel, freed (the library never frees a
 * kernel's). */
static void drop_reads(tcf_kernel_t *k)
{
    for (unsigned i = 0; i < sizeof k->reads / sizeof k->reads[0]; i++)
        free(atomic_exchange(&k->reads[i], NULL));
}

/* The mask kept with the kernel says what tcf_exec_unread marks, byte for byte; it is
 * made once per value of the dims it depends on (the same pointer again), another for
 * other dims (which it does not take for its own), and none past four of them; a cat's,
 * once per grid.y. */
TEST(reads_mask_kept_with_the_kernel)
{
    tcf_cfg.rows = 1;
    size_t half = nls / 2, masked = 0, strided = 0, cats = 0;
    uint8_t mark[4096];
    for (size_t i = 0; i < half; i++) {
        const launch_t *a = &ls[i], *b = &ls[half + i];
        tcf_kernel_t k = fixture_kernel(a);
        uint32_t nm = tcf_exec_unread(&k, a->params, a->len, a->grid, mark);
        const uint8_t *rd = tcf_exec_reads(&k, a->params, a->len, a->grid);
        CHECK_EQ_INT(rd != NULL, nm > 0);
        if (!rd) {
            drop_reads(&k);
            continue;
        }
        masked++;
        int same = 1, only = 1;
        for (uint32_t q = 0; q < a->len; q++) {
            same &= rd[q] == (mark[q] ? 0x00 : 0xff);
            only &= !((a->params[q] ^ b->params[q]) & rd[q]);
        }
        CHECK(same);
        CHECK_EQ_INT(only, only_unread(a->params, b->params, a->len, mark));
        CHECK_EQ_INT(tcf_exec_reads_same(a->params, b->params, rd, a->len), only);
        /* zeroed where never read, the rest kept: the same launch under the mask */
        uint8_t *z = malloc(a->len);
        tcf_exec_reads_zero(z, a->params, rd, a->len);
        int zeroed = 1;
        for (uint32_t q = 0; q < a->len; q++)
            zeroed &= z[q] == (mark[q] ? 0 : a->params[q]);
        CHECK(zeroed && tcf_exec_reads_same(z, a->params, rd, a->len));
        free(z);
        CHECK(tcf_exec_reads(&k, a->params, a->len, a->grid) == rd);
        CHECK(tcf_exec_reads(&k, a->params, a->len - 1, a->grid) == NULL);
        if (k.dk.loop == TCF_LOOP_STRIDED && !k.is_reduce) {
            /* other dims (as bytes: the key reads no more), each its own mask; past four
             * kept, none */
            uint8_t *c = malloc(a->len);
            memcpy(c, a->params, a->len);
            int32_t dims;
            memcpy(&dims, c + 8, 4);
            const uint8_t *got[5];
            for (int32_t d = 1; d <= 5; d++) {
                int32_t nd = (dims + d) % 26;
                memcpy(c + 8, &nd, 4);
                got[d - 1] = tcf_exec_reads(&k, c, a->len, a->grid);
            }
            CHECK(got[0] && got[1] && got[2] && !got[3] && !got[4]);
            CHECK(got[0] != rd && got[1] != got[0] && got[2] != got[1]);
            /* a launch with dims + 1 is not taken for one with dims by either's mask */
            memcpy(c, a->params, a->len);
            int32_t nd = (dims + 1) % 26;
            memcpy(c + 8, &nd, 4);
            CHECK((c[8] ^ a->params[8]) & rd[8] && (c[8] ^ a->params[8]) & got[0][8]);
            strided++;
            free(c);
        }
        if (k.dk.loop == TCF_LOOP_CAT) {
            /* one more input: its own mask, which reads the slot the other leaves */
            uint32_t g[3] = { a->grid[0], a->grid[1] + 1, a->grid[2] };
            const uint8_t *more = tcf_exec_reads(&k, a->params, a->len, g);
            uint32_t slot = 8 + 8 * a->grid[1];   /* input[grid.y], the metadata's first */
            CHECK(more && more != rd && more[slot] == 0xff && rd[slot] == 0x00);
            CHECK(tcf_exec_reads(&k, a->params, a->len, a->grid) == rd);
            cats++;
        }
        drop_reads(&k);
    }
    printf("  %zu launches with a mask kept, %zu of them strided, %zu cats\n", masked, strided,
           cats);
    CHECK(masked >= 40 && strided >= 1 && cats >= 1);
}

int main(void)
{
    load_launches(TRACE, any);
    RUN(same_launch_two_iterations_apart_decodes_alike);
    RUN(another_operand_decodes_otherwise);
    RUN(unread_bytes_are_what_decoding_ignores);
    RUN(reads_mask_kept_with_the_kernel);
    free_launches();
    return check_main_end();
}
