/* Kept blocks (exec/reuse.c): a kept block goes to the next allocation of its exact size
 * on its stream, the most recently kept first, once; the byte cap and the node pool bound
 * what is kept; nothing is kept or handed out during an application's capture; release
 * gives every kept block back. Random puts and gets over streams and sizes whose buckets
 * collide, against a stack per (stream, size). */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "exec/internal.h"
#include "check.h"

#define GB (1ull << 30)

static void reset(uint64_t cap)
{
    tcf_reuse_release("test");
    tcf_cfg.reuse = (int64_t)cap;
    atomic_store(&tcf_app_captures, 0);
}

TEST(lifo_per_stream_and_size)
{
    reset(GB);
    CHECK_EQ_U64(tcf_reuse_get(4096, 1, 0), 0);                /* nothing kept yet */
    CHECK(tcf_reuse_put(0x7f0000001000, 4096, 1, 0));
    CHECK(tcf_reuse_put(0x7f0000002000, 4096, 1, 0));
    CHECK(tcf_reuse_put(0x7f0000003000, 4096, 2, 0));          /* another stream */
    CHECK(tcf_reuse_put(0x7f0000004000, 8192, 1, 0));          /* another size */
    CHECK(!tcf_reuse_put(0x7f0000005000, 0, 1, 0));            /* no size: never kept */
    CHECK_EQ_U64(tcf_reuse_bytes(), 3 * 4096 + 8192);
    CHECK(tcf_reuse_holds(0x7f0000004000 + 8191));           /* inside a kept block */
    CHECK(!tcf_reuse_holds(0x7f0000004000 + 8192));
    CHECK(!tcf_reuse_holds(0x7f0000000fff));
    CHECK_EQ_U64(tcf_reuse_get(4096, 1, 0), 0x7f0000002000);   /* the latest first */
    CHECK_EQ_U64(tcf_reuse_get(4096, 1, 0), 0x7f0000001000);
    CHECK_EQ_U64(tcf_reuse_get(4096, 1, 0), 0);                /* each once */
    CHECK_EQ_U64(tcf_reuse_get(4097, 2, 0), 0);                /* exact sizes only */
    CHECK_EQ_U64(tcf_reuse_get(4096, 2, 0), 0x7f0000003000);
    CHECK_EQ_U64(tcf_reuse_get(8192, 1, 0), 0x7f0000004000);
    CHECK(!tcf_reuse_holds(0x7f0000004000));                 /* handed out: not kept */
    CHECK_EQ_U64(tcf_reuse_bytes(), 0);
}

TEST(cap_capture_release)
{
    reset(10000);
    CHECK(tcf_reuse_put(0x7f0000010000, 6000, 1, 0));
    CHECK(!tcf_reuse_put(0x7f0000020000, 6000, 1, 0));         /* past the cap: to the driver */
    CHECK(tcf_reuse_put(0x7f0000030000, 4000, 1, 0));
    atomic_store(&tcf_app_captures, 1);                       /* a capture under way */
    CHECK(!tcf_reuse_put(0x7f0000040000, 16, 3, 0));
    CHECK_EQ_U64(tcf_reuse_get(6000, 1, 0), 0);
    atomic_store(&tcf_app_captures, 0);
    CHECK_EQ_U64(tcf_reuse_get(6000, 1, 0), 0x7f0000010000);
    CHECK(tcf_reuse_put(0x7f0000010000, 6000, 1, 0));
    tcf_reuse_boundary("cuStreamSynchronize");                /* not one that gives back */
    CHECK_EQ_U64(tcf_reuse_bytes(), 10000);
    tcf_reuse_boundary("cuMemPoolTrimTo");
    CHECK_EQ_U64(tcf_reuse_bytes(), 0);
    CHECK_EQ_U64(tcf_reuse_get(4000, 1, 0), 0);
    reset(0);                                                 /* TCFUSE_REUSE=0: off */
    CHECK(!tcf_reuse_put(0x7f0000010000, 64, 1, 0));
}

/* The legacy and per-thread default streams (handles 0, 1, 2) are every context's: a block
 * kept on one is kept for its context, and another context's allocation on the same handle
 * does not get it. A stream of the application's own is one context's: the context the
 * caller names does not matter there. */
TEST(default_streams_by_context)
{
    reset(GB);
    const uint64_t A = 0x550000000100ull, B = 0x550000000200ull, own = 0x5500000400ull;
    CHECK(tcf_reuse_put(0x7f0000001000, 4096, 1, A));
    CHECK(tcf_reuse_put(0x7f0000002000, 4096, 0, A));
    CHECK_EQ_U64(tcf_reuse_get(4096, 1, B), 0);              /* device B: not A's block */
    CHECK_EQ_U64(tcf_reuse_get(4096, 0, B), 0);
    CHECK_EQ_U64(tcf_reuse_get(4096, 1, A), 0x7f0000001000);
    CHECK_EQ_U64(tcf_reuse_get(4096, 0, A), 0x7f0000002000);
    CHECK(tcf_reuse_put(0x7f0000003000, 4096, own, A));
    CHECK_EQ_U64(tcf_reuse_get(4096, own, B), 0x7f0000003000);   /* its own stream's */
    CHECK_EQ_U64(tcf_reuse_bytes(), 0);
}

/* Every node in use: further frees go to the driver until one is taken again. */
TEST(nodes_run_out)
{
    reset(1ull << 40);
    unsigned kept = 0;
    for (unsigned i = 0; i < 40000; i++)
        kept += (unsigned)tcf_reuse_put(0x7f0000000000ull + (uint64_t)i * 512u, 512, 7, 0);
    CHECK_EQ_U64(kept, 32768);
    CHECK(tcf_reuse_get(512, 7, 0) != 0);
    CHECK(tcf_reuse_put(0x7f1000000000ull, 512, 7, 0));
    CHECK(!tcf_reuse_put(0x7f1000001000ull, 512, 7, 0));
    CHECK_EQ_U64(tcf_reuse_release("test"), 32768);
    CHECK_EQ_U64(tcf_reuse_bytes(), 0);
}

/* 60,000 random puts and gets over 5 streams and 40 sizes (4096 buckets: chains mix keys,
 * and gets unlink from their middle), against a stack per (stream, size). */
TEST(random_against_reference)
{
    enum { STREAMS = 5, SIZES = 40, DEPTH = 64, N = 60000 };
    static uint64_t stack[STREAMS][SIZES][DEPTH];
    static unsigned depth[STREAMS][SIZES];
    memset(depth, 0, sizeof depth);
    reset(1ull << 40);
    uint32_t s = 777;
    uint64_t next = 0x7f0000000000ull, bytes = 0;
    for (int i = 0; i < N; i++) {
        s = s * 1103515245u + 12345u;
        unsigned st = (s >> 8) % STREAMS, sz = (s >> 16) % SIZES;
        uint64_t size = 256u * (sz + 1), stream = 0x5500000000ull + st * 0x100u;
        if ((s >> 28) & 1) {
            if (depth[st][sz] == DEPTH)
                continue;
            uint64_t p = next += 1u << 20;
            if (!tcf_reuse_put(p, size, stream, 0)) {
                CHECK(0);
                break;
            }
            stack[st][sz][depth[st][sz]++] = p;
            bytes += size;
        } else {
            uint64_t want = depth[st][sz] ? stack[st][sz][--depth[st][sz]] : 0;
            uint64_t got = tcf_reuse_get(size, stream, 0);
            if (got != want) {
                CHECK_EQ_U64(got, want);
                break;
            }
            bytes -= want ? size : 0;
        }
    }
    CHECK_EQ_U64(tcf_reuse_bytes(), bytes);
    unsigned left = 0;
    for (unsigned st = 0; st < STREAMS; st++)
        for (unsigned sz = 0; sz < SIZES; sz++)
            left += depth[st][sz];
    CHECK(left > 100);
    CHECK_EQ_U64(tcf_reuse_release("test"), left);
    CHECK_EQ_U64(tcf_reuse_bytes(), 0);
}

/* Threads on their own streams, same sizes: each gets back only blocks it kept (a kept
 * block never leaves its stream), whatever the others do meanwhile (and ThreadSanitizer
 * sees the table's lock). */
#define THREADS 4
static int thread_bad[THREADS];

static void *churn(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    uint64_t stream = 0x5500000000ull + t, base = 0x7f0000000000ull + ((uint64_t)t << 32);
    uint64_t mine[64];
    unsigned n = 0;
    uint32_t s = 99u + t;
    for (int i = 0; i < 20000; i++) {
        s = s * 1103515245u + 12345u;
        if ((s >> 20) & 1 && n < 64) {
            uint64_t p = base + (uint64_t)i * 4096u;
            if (tcf_reuse_put(p, 4096, stream, 0))
                mine[n++] = p;
        } else {
            uint64_t got = tcf_reuse_get(4096, stream, 0);
            if (got != (n ? mine[n - 1] : 0))
                thread_bad[t] = 1;
            if (got)
                n--;
        }
    }
    return NULL;
}

TEST(threads_keep_to_their_streams)
{
    reset(1ull << 40);
    pthread_t th[THREADS];
    for (unsigned t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, churn, (void *)(uintptr_t)t) == 0);
    for (unsigned t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (unsigned t = 0; t < THREADS; t++)
        CHECK_EQ_U64(thread_bad[t], 0);
    tcf_reuse_release("test");
    CHECK_EQ_U64(tcf_reuse_bytes(), 0);
}

int main(void)
{
    RUN(lifo_per_stream_and_size);
    RUN(cap_capture_release);
    RUN(default_streams_by_context);
    RUN(nodes_run_out);
    RUN(random_against_reference);
    RUN(threads_keep_to_their_streams);
    return check_main_end();
}
