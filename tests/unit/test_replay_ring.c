/* What TCFUSE_REPLAY_RING=2 relies on (replay/graph.c): in a host-bound PyTorch forward,
 * the launches whose bytes still differ from one iteration to the next, once the bytes
 * their kernels never read are left aside (TCFUSE_REPLAY_UNREAD), mostly alternate
 * between two sets, so that two instances of a graph replayed in turn each find their
 * set's bytes and are not patched. On the launches recorded from HF GPT-2 at batch 1 x 32
 * whose bytes differ between iterations 1 to 4 (tests/fixtures/iters-hf-gpt2-1x32.jsonl:
 * the 42 of iteration 1, then the same ones of iterations 2, 3 and 4), count the nodes
 * replay patches over iterations 2 to 4 with one instance (bytes read that differ from the
 * iteration before) and with two (from two iterations before): the LayerNorms read a
 * residual stream that PyTorch's allocator hands two blocks in turn; the one launch that
 * changes every iteration is the arange of the position ids, whose output is a new
 * tensor each time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec/steps.h"
#include "fixture_launches.h"

#define TRACE "tests/fixtures/iters-hf-gpt2-1x32.jsonl"
#define ITERS 4

static int any(const char *name) { (void)name; return 1; }

/* Whether replay patches a node holding a's bytes for a window bringing b's: they differ
 * in a byte the kernel may read (the marks taken for the bytes the node holds). */
static int patched(const launch_t *a, const launch_t *b)
{
    uint8_t mark[4096];
    if (!CHECK(a->k == b->k && a->len == b->len && a->len <= sizeof mark))
        return 1;
    tcf_kernel_t k = fixture_kernel(a);
    if (!tcf_exec_unread(&k, a->params, a->len, a->grid, mark))
        memset(mark, 0, a->len);
    for (uint32_t i = 0; i < a->len; i++)
        if (a->params[i] != b->params[i] && !mark[i])
            return 1;
    return 0;
}

static int named(const launch_t *x, const char *part) { return strstr(ks[x->k].name, part) != NULL; }

TEST(two_instances_patch_only_what_never_repeats)
{
    size_t m = nls / ITERS;
    CHECK(nls >= 40 && nls % ITERS == 0);
    /* iterations 2 to 4, each against the one before (one instance) and the one two
     * before (two in turn) */
    size_t one = 0, two = 0, norms = 0;
    for (size_t i = 0; i < m; i++) {
        const launch_t *it[ITERS];
        for (int t = 0; t < ITERS; t++)
            it[t] = &ls[t * m + i];
        int alternates = 1;
        for (int t = 1; t < ITERS; t++)
            one += patched(it[t - 1], it[t]);
        for (int t = 2; t < ITERS; t++)
            if (patched(it[t - 2], it[t])) {
                two++, alternates = 0;
                /* only the position ids' arange: a new output tensor every iteration */
                if (!CHECK(named(it[t], "arange")))
                    fprintf(stderr, "  launch %zu (%.80s) changes two iterations apart\n", i,
                            ks[it[t]->k].name);
            }
        norms += alternates && named(it[0], "layer_norm") && patched(it[0], it[1]);
    }
    printf("  %zu launches: nodes patched over 3 iterations, one instance %zu, two %zu; "
           "%zu LayerNorms alternate\n", m, one, two, norms);
    CHECK(one >= 3 * 28);
    CHECK(two <= 2);
    CHECK(norms >= 24);
}

/* The functor padding of pow's cube (a captureless lambda) changes every iteration, and is
 * marked: without the marks those launches would be patched every replay by either. */
TEST(padding_that_never_repeats_is_unread)
{
    size_t m = nls / ITERS, pads = 0;
    for (size_t i = 0; i < m; i++) {
        const launch_t *a = &ls[i], *c = &ls[2 * m + i];
        if (!named(a, "pow_tensor_scalar"))
            continue;
        CHECK(memcmp(a->params, c->params, a->len) != 0);
        CHECK(!patched(a, c));
        pads++;
    }
    CHECK(pads >= 10);
}

int main(void)
{
    load_launches(TRACE, any);
    RUN(two_instances_patch_only_what_never_repeats);
    RUN(padding_that_never_repeats_is_unread);
    free_launches();
    return check_main_end();
}
