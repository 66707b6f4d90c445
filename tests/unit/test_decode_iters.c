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
 *    comparison sees operands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fuser/fuser.h"
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

int main(void)
{
    load_launches(TRACE, any);
    RUN(same_launch_two_iterations_apart_decodes_alike);
    RUN(another_operand_decodes_otherwise);
    free_launches();
    return check_main_end();
}
