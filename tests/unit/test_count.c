/* Per-thread counters (capture/count.h): after tcf_count_settle every count made by any
 * thread is in its counter exactly once: threads that ended (their tables handed to later
 * threads), threads still counting while a settle runs, more counters than a table holds
 * (counted on the counters directly), and settles repeated. */
#include <pthread.h>
#include <stdint.h>

#include "capture/count.h"
#include "check.h"

#define NCTR 700   /* more than TCF_COUNT_SLOTS: some go past every probe */
static atomic_ullong ctr[NCTR];

static void zero(void)
{
    tcf_count_settle();   /* nothing pending from an earlier test */
    for (int i = 0; i < NCTR; i++)
        atomic_store(&ctr[i], 0);
}

/* Counts counter i (i + 1) * reps times, in an order that mixes them. */
typedef struct { int first, n, reps; } job_t;

static void *counter_thread(void *arg)
{
    const job_t *j = arg;
    for (int r = 0; r < j->reps; r++)
        for (int i = j->first; i < j->first + j->n; i++)
            tcf_count_add(&ctr[i], (uint64_t)i + 1);
    return NULL;
}

TEST(one_thread_settles_exactly)
{
    zero();
    job_t j = { 0, 8, 1000 };
    counter_thread(&j);
    tcf_count_settle();
    for (int i = 0; i < 8; i++)
        CHECK_EQ_U64(atomic_load(&ctr[i]), (uint64_t)(i + 1) * 1000);
    /* a second settle adds nothing twice; later counts come with the next */
    tcf_count_settle();
    CHECK_EQ_U64(atomic_load(&ctr[7]), 8000);
    tcf_count(&ctr[7]);
    CHECK_EQ_U64(atomic_load(&ctr[7]), 8000);   /* pending in this thread's table */
    tcf_count_settle();
    CHECK_EQ_U64(atomic_load(&ctr[7]), 8001);
}

TEST(ended_threads_hand_over_their_counts_and_tables)
{
    zero();
    /* 64 threads one after another, each counting the same 16 counters and ending: each
     * end adds its counts, and its table serves the next thread (so there are not 64). */
    for (int t = 0; t < 64; t++) {
        pthread_t th;
        job_t j = { 0, 16, 10 };
        CHECK_EQ_INT(pthread_create(&th, NULL, counter_thread, &j), 0);
        pthread_join(th, NULL);
    }
    for (int i = 0; i < 16; i++)   /* ended threads' counts are in without a settle */
        CHECK_EQ_U64(atomic_load(&ctr[i]), (uint64_t)(i + 1) * 10 * 64);
    /* this thread's table and one handed from thread to thread */
    CHECK(tcf_count_tables() <= 2);
    tcf_count_settle();
    for (int i = 0; i < 16; i++)
        CHECK_EQ_U64(atomic_load(&ctr[i]), (uint64_t)(i + 1) * 10 * 64);
}

TEST(more_counters_than_slots)
{
    zero();
    job_t j = { 0, NCTR, 3 };
    counter_thread(&j);
    tcf_count_settle();
    int bad = 0;
    for (int i = 0; i < NCTR; i++)
        bad += atomic_load(&ctr[i]) != (uint64_t)(i + 1) * 3;
    CHECK_EQ_INT(bad, 0);
}

static atomic_int settling;

static void *settler(void *arg)
{
    (void)arg;
    while (atomic_load(&settling))
        tcf_count_settle();
    return NULL;
}

TEST(settles_while_threads_count)
{
    zero();
    enum { T = 8 };
    pthread_t th[T], s;
    job_t j[T];
    atomic_store(&settling, 1);
    CHECK_EQ_INT(pthread_create(&s, NULL, settler, NULL), 0);
    for (int t = 0; t < T; t++) {
        j[t] = (job_t){ t * 40, 80, 2000 };   /* overlapping ranges: shared counters */
        CHECK_EQ_INT(pthread_create(&th[t], NULL, counter_thread, &j[t]), 0);
    }
    for (int t = 0; t < T; t++)
        pthread_join(th[t], NULL);
    atomic_store(&settling, 0);
    pthread_join(s, NULL);
    tcf_count_settle();
    int bad = 0;
    for (int i = 0; i < T * 40 + 40; i++) {
        uint64_t users = 0;
        for (int t = 0; t < T; t++)
            users += i >= j[t].first && i < j[t].first + j[t].n;
        bad += atomic_load(&ctr[i]) != users * (uint64_t)(i + 1) * 2000;
    }
    CHECK_EQ_INT(bad, 0);
}

int main(void)
{
    RUN(one_thread_settles_exactly);
    RUN(ended_threads_hand_over_their_counts_and_tables);
    RUN(more_counters_than_slots);
    RUN(settles_while_threads_count);
    return check_main_end();
}
