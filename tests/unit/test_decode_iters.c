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
 *  - exec's tcf_exec_same_op, which replay's stats ask of each patched kernel node, says
 *    the same of both (exec/steps.c). */
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

/* A kernel as capture makes it from the driver's layout, for the fixture's launch x. */
static tcf_kernel_t kernel_of(const launch_t *x)
{
    const kern_t *k = &ks[x->k];
    tcf_kernel_t kk = { .name = k->name, .nparams = k->np, .off = k->off, .size = k->sz,
                        .param_known = 1, .param_bytes = x->len };
    return kk;
}

TEST(same_op_says_what_the_items_say)
{
    tcf_cfg.rows = 1;   /* row reductions decode, as with TCFUSE_ROWS's default */
    size_t half = nls / 2, same = 0, moved = 0;
    for (size_t i = 0; i < half; i++) {
        const launch_t *a = &ls[i], *b = &ls[half + i];
        tcf_item_t ia, ib;
        int da = item_of(a, &ia);
        (void)item_of(b, &ib);
        tcf_kernel_t k = kernel_of(a);
        int s = tcf_exec_same_op(&k, a->params, b->params, a->len, a->grid, a->block);
        if (!CHECK_EQ_INT(s, da && !memcmp(&ia, &ib, sizeof ia)))
            fprintf(stderr, "  launch %zu (%s)\n", i, ks[a->k].name);
        same += s;
        CHECK_EQ_INT(tcf_exec_same_op(&k, a->params, b->params, a->len - 1, a->grid, a->block), 0);
        if (!da)
            continue;
        uint64_t out = ia.kind == TCF_ITEM_OP ? ia.op.out : ia.red.dst, other = out + 256;
        uint8_t *c = malloc(a->len);
        memcpy(c, a->params, a->len);
        int found = 0;
        for (uint32_t o = 0; out && o + 8 <= a->len; o += 8)
            if (!memcmp(c + o, &out, 8))
                memcpy(c + o, &other, 8), found = 1;
        if (found) {
            CHECK_EQ_INT(tcf_exec_same_op(&k, a->params, c, a->len, a->grid, a->block), 0);
            moved++;
        }
        free(c);
    }
    CHECK(same >= half - 2);   /* as above: all but the arange launch */
    CHECK(moved >= 40);
    /* a kernel that is not PyTorch's never decodes alike, whatever its bytes */
    uint32_t off = 0, sz = 8;
    uint8_t p[8] = { 0 };
    tcf_kernel_t other = { .name = "_Z6myowniPf", .nparams = 1, .off = &off, .size = &sz,
                           .param_known = 1, .param_bytes = 8 };
    const uint32_t g[3] = { 1, 1, 1 }, bl[3] = { 32, 1, 1 };
    CHECK_EQ_INT(tcf_exec_same_op(&other, p, p, 8, g, bl), 0);
    CHECK_EQ_INT(tcf_exec_same_op(NULL, p, p, 8, g, bl), 0);
}

int main(void)
{
    load_launches(TRACE, any);
    RUN(same_launch_two_iterations_apart_decodes_alike);
    RUN(another_operand_decodes_otherwise);
    RUN(same_op_says_what_the_items_say);
    free_launches();
    return check_main_end();
}
