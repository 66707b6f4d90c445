/* The table of replay keys: how often each was seen, and the graph of those that became
 * one. Entries are never freed (a key given up stays given up; an evicted one counts
 * again from zero), so a pointer found under the lock stays valid; once the table is full,
 * the entry of a key seen once long ago, with nothing of it in use, may take another key
 * (tcf_rplan_get; a stream's timing sample still aimed at it lands on that key, or is
 * dropped, as it is not being judged). A plan in use by a flush (busy) is never evicted. Graphs are capped in number (TCFUSE_REPLAY_GRAPHS) and in
 * estimated device memory (TCFUSE_REPLAY_MEMORY): past either, the least recently
 * replayed go. A dropped graph is destroyed by the worker, outside the lock (the driver
 * frees an executable graph still in flight when it completes). */
#include <stdlib.h>
#include <string.h>

#include "replay/internal.h"

#define TCF_RPLANS_BITS 14
#define TCF_RPLANS (1u << TCF_RPLANS_BITS)
#define TCF_RRETIRE 256

pthread_mutex_t tcf_rplan_lock = PTHREAD_MUTEX_INITIALIZER;
static tcf_rplan_t *tcf_rplans[TCF_RPLANS];
static uint64_t tcf_rnplans, tcf_rtick, tcf_rlive, tcf_rmem, tcf_rpeak;
static struct { CUgraph g; CUgraphExec x; } tcf_rretired[TCF_RRETIRE];
static unsigned tcf_rnretired;

const char *const tcf_rg_names[TCF_RG__COUNT] = {
#define TCF_RG_NAME(id, name) name,
    TCF_RGIVEUP(TCF_RG_NAME)
#undef TCF_RG_NAME
};

static atomic_ullong tcf_rwindows;   /* windows closed in graph and full mode */
static void tcf_rplan_drop_graph(tcf_rplan_t *p);

/* Whether p's entry may take another key (lock held): a key seen once, long ago, with
 * nothing of it in use. */
static int tcf_rplan_stale(const tcf_rplan_t *p)
{
    return p->state == TCF_RP_COUNTING && !p->busy && p->sightings <= 1 && !p->graph &&
           !p->exec && !__atomic_load_n(&p->judging, __ATOMIC_RELAXED) &&
           atomic_load_explicit(&tcf_rwindows, memory_order_relaxed) - p->first_seen >= TCF_RPLANS;
}

tcf_rplan_t *tcf_rplan_get(uint64_t key, int make)
{
    unsigned i = (unsigned)((key * 0x9E3779B97F4A7C15ull) >> (64 - TCF_RPLANS_BITS));
    tcf_rplan_t *stale = NULL;
    for (unsigned probe = 0; probe < 64; probe++, i = (i + 1) & (TCF_RPLANS - 1)) {
        tcf_rplan_t *p = tcf_rplans[i];
        if (p && p->key == key)
            return p;
        if (!p) {
            if (!make || tcf_rnplans >= TCF_RPLANS * 3 / 4)
                break;
            p = tcf_calloc(1, sizeof *p);
            if (!p)
                return NULL;
            p->key = key;
            tcf_rplans[i] = p;
            tcf_rnplans++;
            return p;
        }
        if (make && !stale && tcf_rplan_stale(p))
            stale = p;
    }
    if (!stale)
        return NULL;
    /* The table is full: a key seen once, TCF_RPLANS windows ago or more, gives its entry
     * to this one, so that a long-running program whose shapes keep changing (a server's
     * requests) goes on learning. The slot is on this key's probe path (found before an
     * empty one), and stays taken on the others'. */
    tcf_rplan_drop_graph(stale);   /* frees what a plan that never became a graph holds */
    memset(stale, 0, sizeof *stale);
    stale->key = key;
    atomic_fetch_add_explicit(&tcf_rctr.keys_reclaimed, 1, memory_order_relaxed);
    return stale;
}

void tcf_rplan_take(tcf_rplan_t *p)
{
    p->busy++;
    p->used = ++tcf_rtick;
    tcf_rplan_sighted(p);
}

void tcf_rplan_done(tcf_rplan_t *p)
{
    p->busy--;
}

/* The graph goes to the worker to destroy; the plan keeps its key and its counts. */
static void tcf_rplan_drop_graph(tcf_rplan_t *p)
{
    if (p->exec)   /* a queued launch of it reads its instance, nodes and shadow */
        tcf_rlauncher_drain();
    if (p->exec || p->graph) {
        if (tcf_rnretired < TCF_RRETIRE) {
            tcf_rretired[tcf_rnretired].g = p->graph;
            tcf_rretired[tcf_rnretired].x = p->exec;
            tcf_rnretired++;
        }  /* else leaked: the context's end frees it */
        if (p->exec1 && tcf_rnretired < TCF_RRETIRE) {   /* the ring's second instance */
            tcf_rretired[tcf_rnretired].g = NULL;
            tcf_rretired[tcf_rnretired].x = p->exec1;
            tcf_rnretired++;
        }
        if (p->state == TCF_RP_READY) {
            tcf_rlive--;
            tcf_rmem -= p->mem;
        }
    }
    p->graph = NULL, p->exec = NULL, p->exec1 = NULL, p->mem = 0;
    for (uint32_t i = 0; i < p->n && p->nodes; i++)
        free(p->nodes[i].nattr ? p->nodes[i].attr : NULL);
    free(p->nodes);
    free(p->shadow);
    free(p->shadow1);
    p->shadow1 = NULL;
    free(p->osig);
    p->nodes = NULL, p->shadow = NULL, p->n = 0, p->shadow_len = 0;
    p->osig = NULL, p->norig = p->fused = p->removed = 0;
    tcf_rmemo_forget(p);
}

/* The key's prefixes come from the window's own launches (full mode: not the steps). */
static void tcf_rplan_prefixes(const tcf_rplan_t *p)
{
    uint64_t h = p->seed;
    uint32_t n = p->osig ? p->norig : p->n;
    for (uint32_t j = 0; j < n; j++) {
        h = tcf_rkey_step(h, p->osig ? &p->osig[j] : &p->nodes[j].sig);
        tcf_rprefix_add(h);
    }
}

/* Every ready plan's prefixes, again: after a graph leaves, windows stop holding on its
 * path. Readers meanwhile may miss a prefix (the window then runs as issued). */
static void tcf_rprefix_rebuild(void)
{
    tcf_rprefix_clear();
    for (unsigned i = 0; i < TCF_RPLANS; i++) {
        tcf_rplan_t *p = tcf_rplans[i];
        if (!p || p->state != TCF_RP_READY)
            continue;
        tcf_rplan_prefixes(p);
    }
}

uint32_t tcf_rplan_warmup(const tcf_rplan_t *p)
{
    uint64_t w = (uint64_t)tcf_cfg.replay_warmup;
    if (!p->setbacks)
        return (uint32_t)w;
    uint64_t v = ((w + 1) << (p->setbacks < 10 ? p->setbacks : 10)) - 1;
    return v > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)v;
}

atomic_int tcf_rjudging;

/* The keys being judged, oldest first, each with the count of windows closed by which it
 * must be judged; the windows closed so far; the earliest deadline. */
static struct { tcf_rplan_t *p; uint64_t cap, until, first; } tcf_rjudges[TCF_R_JUDGES];
static unsigned tcf_rnjudges;
static atomic_ullong tcf_rjudge_next = UINT64_MAX;
/* Their keys' first steps (the key after a window's first launch), read without the lock
 * by tcf_rjudge_first_has: a reader racing a change may miss one, and that window is then
 * not run as issued to time it. */
static _Atomic uint64_t tcf_rjudge_firsts[TCF_R_JUDGES];
static atomic_uint tcf_rnjudge_firsts;

static void tcf_rjudge_deadline(void)
{
    uint64_t next = UINT64_MAX;
    for (unsigned i = 0; i < tcf_rnjudges; i++)
        next = tcf_rjudges[i].until < next ? tcf_rjudges[i].until : next;
    atomic_store_explicit(&tcf_rjudge_next, next, memory_order_relaxed);
}

/* The list changed: its first steps again (lock held). */
static void tcf_rjudge_firsts_rebuild(void)
{
    atomic_store_explicit(&tcf_rnjudge_firsts, 0, memory_order_relaxed);
    for (unsigned i = 0; i < tcf_rnjudges; i++)
        atomic_store_explicit(&tcf_rjudge_firsts[i], tcf_rjudges[i].first, memory_order_relaxed);
    atomic_store_explicit(&tcf_rnjudge_firsts, tcf_rnjudges, memory_order_release);
}

int tcf_rjudge_first_has(uint64_t h)
{
    unsigned n = atomic_load_explicit(&tcf_rnjudge_firsts, memory_order_acquire);
    for (unsigned i = 0; i < n && i < TCF_R_JUDGES; i++)
        if (atomic_load_explicit(&tcf_rjudge_firsts[i], memory_order_relaxed) == h)
            return 1;
    return 0;
}

/* When p's judgment ends if p is not seen again: four of its periods from now, and 64
 * windows more (lock held). */
static uint64_t tcf_rjudge_until(const tcf_rplan_t *p, uint64_t now)
{
    uint64_t period = p->sightings > 1 ? (now - p->first_seen) / (p->sightings - 1) : 0;
    return now + 4 * period + TCF_R_JUDGE_SLACK;
}

void tcf_rplan_sighted(tcf_rplan_t *p)
{
    uint64_t now = atomic_load_explicit(&tcf_rwindows, memory_order_relaxed);
    if (!p->sightings++)
        p->first_seen = now;
    if (!__atomic_load_n(&p->judging, __ATOMIC_RELAXED))
        return;
    for (unsigned i = 0; i < tcf_rnjudges; i++)
        if (tcf_rjudges[i].p == p) {
            uint64_t u = tcf_rjudge_until(p, now);
            tcf_rjudges[i].until = u < tcf_rjudges[i].cap ? u : tcf_rjudges[i].cap;
            break;
        }
    tcf_rjudge_deadline();
}

/* p is judged no more (lock held). */
static void tcf_rplan_judged(tcf_rplan_t *p)
{
    if (!__atomic_load_n(&p->judging, __ATOMIC_RELAXED))
        return;
    __atomic_store_n(&p->judging, 0, __ATOMIC_RELAXED);
    atomic_fetch_sub_explicit(&tcf_rjudging, 1, memory_order_relaxed);
    for (unsigned i = 0; i < tcf_rnjudges; i++)
        if (tcf_rjudges[i].p == p) {
            memmove(&tcf_rjudges[i], &tcf_rjudges[i + 1], (tcf_rnjudges - i - 1) * sizeof *tcf_rjudges);
            tcf_rnjudges--;
            break;
        }
    tcf_rjudge_deadline();
    tcf_rjudge_firsts_rebuild();
}

/* p's judgment begins (lock held; its graph just made ready). */
static void tcf_rplan_judge(tcf_rplan_t *p)
{
    if (!tcf_cfg.replay_judge || __atomic_load_n(&p->judging, __ATOMIC_RELAXED) ||
        !(p->osig ? p->norig : p->n))
        return;
    /* Judged before and kept: timing it again would run eight more of its windows as
     * issued (in full mode, unfused), once for every plan that fuses more as its kernels
     * come. */
    if (p->judged_ok) {
        atomic_fetch_add_explicit(&tcf_rctr.judge_kept, 1, memory_order_relaxed);
        return;
    }
    if (tcf_rnjudges == TCF_R_JUDGES) {   /* the oldest judgment ends, the graph kept */
        atomic_fetch_add_explicit(&tcf_rctr.judge_expired, 1, memory_order_relaxed);
        tcf_rplan_judged(tcf_rjudges[0].p);
    }
    p->n_graph = p->n_issued = 0;
    __atomic_store_n(&p->judging, 1, __ATOMIC_RELAXED);
    atomic_fetch_add_explicit(&tcf_rjudging, 1, memory_order_relaxed);
    uint64_t now = atomic_load_explicit(&tcf_rwindows, memory_order_relaxed);
    uint64_t cap = now + (uint64_t)TCF_R_JUDGE_SPAN * (tcf_rlive > 64 ? tcf_rlive : 64);
    uint64_t u = tcf_rjudge_until(p, now);
    tcf_rjudges[tcf_rnjudges].p = p;
    tcf_rjudges[tcf_rnjudges].cap = cap;
    tcf_rjudges[tcf_rnjudges].until = u < cap ? u : cap;
    tcf_rjudges[tcf_rnjudges].first =
        tcf_rkey_step(p->seed, p->osig ? &p->osig[0] : &p->nodes[0].sig);
    tcf_rnjudges++;
    tcf_rjudge_deadline();
    tcf_rjudge_firsts_rebuild();
}

void tcf_rjudge_expire(void)
{
    uint64_t n = atomic_fetch_add_explicit(&tcf_rwindows, 1, memory_order_relaxed) + 1;
    if (n < atomic_load_explicit(&tcf_rjudge_next, memory_order_relaxed))
        return;
    pthread_mutex_lock(&tcf_rplan_lock);
    for (unsigned i = 0; i < tcf_rnjudges;)
        if (tcf_rjudges[i].until <= n) {
            atomic_fetch_add_explicit(&tcf_rctr.judge_expired, 1, memory_order_relaxed);
            tcf_rplan_judged(tcf_rjudges[i].p);   /* removes it: i is the next one now */
        } else {
            i++;
        }
    pthread_mutex_unlock(&tcf_rplan_lock);
}

/* p's graph goes, and its key counts again from `seen` windows (evicted: from zero;
 * renewed: from the warm-up count, so that the window learned next, the renewing one
 * itself, makes the new plan). */
static void tcf_rplan_count_again(tcf_rplan_t *p, uint32_t seen)
{
    tcf_rplan_drop_graph(p);
    p->state = TCF_RP_COUNTING;
    p->seen = seen;
    tcf_rplan_judged(p);
    p->n_graph = p->n_issued = 0;   /* a new graph's runs are timed afresh */
    atomic_store(&p->upgrade_epoch, 0);
}

void tcf_rplan_renew(tcf_rplan_t *p)
{
    tcf_rplan_count_again(p, tcf_rplan_warmup(p));
    tcf_rprefix_rebuild();
}

void tcf_rplan_give_up(tcf_rplan_t *p, int reason)
{
    int was_ready = p->state == TCF_RP_READY;
    atomic_fetch_add(&tcf_rctr.gave_up[reason], 1);
    tcf_log(TCF_LOG_INFO, "graph mode: key %016llx given up (%s) after %llu replays",
            (unsigned long long)p->key, tcf_rg_names[reason], (unsigned long long)p->replays);
    if (!p->busy)
        tcf_rplan_drop_graph(p);
    tcf_rplan_judged(p);
    p->state = TCF_RP_GIVEN_UP;
    p->reason = reason;
    if (was_ready)
        tcf_rprefix_rebuild();
}

/* The least recently replayed ready plan other than `keep` that no flush is using. */
static tcf_rplan_t *tcf_rplan_lru(const tcf_rplan_t *keep)
{
    tcf_rplan_t *best = NULL;
    for (unsigned i = 0; i < TCF_RPLANS; i++) {
        tcf_rplan_t *p = tcf_rplans[i];
        if (p && p != keep && p->state == TCF_RP_READY && !p->busy &&
            (!best || p->used < best->used))
            best = p;
    }
    return best;
}

void tcf_rplan_ready(tcf_rplan_t *p)
{
    uint64_t cap_n = (uint64_t)tcf_cfg.replay_graphs, cap_mem = (uint64_t)tcf_cfg.replay_memory;
    if (p->mem > cap_mem) {
        p->state = TCF_RP_BUILDING;  /* not counted live yet */
        tcf_rplan_give_up(p, TCF_RG_too_large);
        return;
    }
    p->state = TCF_RP_READY;
    p->used = ++tcf_rtick;
    tcf_rlive++;
    tcf_rplan_judge(p);
    tcf_rmem += p->mem;
    int evicted = 0;
    while (tcf_rlive > cap_n || tcf_rmem > cap_mem) {
        tcf_rplan_t *v = tcf_rplan_lru(p);
        if (!v)
            break;
        tcf_rplan_count_again(v, 0);
        v->setbacks++;
        atomic_fetch_add(&tcf_rctr.evicted, 1);
        evicted = 1;
    }
    if (tcf_rmem > tcf_rpeak)
        tcf_rpeak = tcf_rmem;
    if (evicted) {
        tcf_rprefix_rebuild();
        return;
    }
    tcf_rplan_prefixes(p);
}

void tcf_rplan_retired_destroy(int all)
{
    (void)all;
    for (;;) {
        pthread_mutex_lock(&tcf_rplan_lock);
        if (!tcf_rnretired) {
            pthread_mutex_unlock(&tcf_rplan_lock);
            return;
        }
        tcf_rnretired--;
        CUgraph g = tcf_rretired[tcf_rnretired].g;
        CUgraphExec x = tcf_rretired[tcf_rnretired].x;
        pthread_mutex_unlock(&tcf_rplan_lock);
        tcf_rgraph_destroy(g, x);
    }
}

void tcf_rplan_held(uint64_t *graphs, uint64_t *mem, uint64_t *peak)
{
    pthread_mutex_lock(&tcf_rplan_lock);
    *graphs = tcf_rlive, *mem = tcf_rmem, *peak = tcf_rpeak;
    pthread_mutex_unlock(&tcf_rplan_lock);
}

void tcf_rplan_census(uint64_t *keys, uint64_t *ready, uint64_t *building, uint64_t *given_up)
{
    pthread_mutex_lock(&tcf_rplan_lock);
    *keys = tcf_rnplans, *ready = *building = *given_up = 0;
    for (unsigned i = 0; i < TCF_RPLANS; i++) {
        const tcf_rplan_t *p = tcf_rplans[i];
        if (!p)
            continue;
        *ready += p->state == TCF_RP_READY;
        *building += p->state == TCF_RP_BUILDING;
        *given_up += p->state == TCF_RP_GIVEN_UP;
    }
    pthread_mutex_unlock(&tcf_rplan_lock);
}

/* One key's line of tcf_rplan_print_costliest, made under the table's lock: its nodes by
 * kind (kernel families, generated kernels, memsets, copies), its kernel nodes' parameter
 * bytes, and its replays' driver time and nodes patched. */
static void tcf_rplan_cost_line(const tcf_rplan_t *p, char *line, size_t cap)
{
    enum { GEN = TCF_FAM_COUNT, MEMSET, COPY, KINDS };
    static const char *const extra[] = { "generated", "memset", "copy" };
    uint32_t by[KINDS] = { 0 };
    uint64_t pbytes = 0;   /* the kernel nodes' parameters: what a launch may upload */
    for (uint32_t i = 0; i < p->n; i++) {
        const tcf_rnode_t *nd = &p->nodes[i];
        unsigned f = nd->sig.kind == TCF_R_KIND_MEMSET   ? MEMSET
                     : nd->sig.kind == TCF_R_KIND_MEMCPY ? COPY
                     : !nd->k || nd->k->family >= TCF_FAM_COUNT ? GEN
                                                                 : (unsigned)nd->k->family;
        by[f]++;
        if (f != MEMSET && f != COPY)
            pbytes += nd->sig.pbytes;
    }
    double r = (double)p->replays * 1e3;
    int len = snprintf(line, cap, "key %016llx: %llu replays of %u nodes (",
                       (unsigned long long)p->key, (unsigned long long)p->replays, p->n);
    for (unsigned f = 0, first = 1; f < KINDS && len > 0 && (size_t)len < cap; f++)
        if (by[f]) {
            len += snprintf(line + len, cap - (size_t)len, "%s%s %u", first ? "" : ", ",
                            f < GEN ? tcf_family_name((tcf_family_t)f) : extra[f - GEN], by[f]);
            first = 0;
        }
    if (len > 0 && (size_t)len < cap)
        snprintf(line + len, cap - (size_t)len,
                 "; %llu B of kernel parameters): %.1f us launching, %.1f us patching %.1f "
                 "nodes a replay", (unsigned long long)pbytes,
                 (double)atomic_load_explicit(&p->launch_ns, memory_order_relaxed) / r,
                 (double)atomic_load_explicit(&p->patch_ns, memory_order_relaxed) / r,
                 (double)atomic_load_explicit(&p->patched_nodes, memory_order_relaxed) * 1e3 / r);
}

void tcf_rplan_print_costliest(unsigned most)
{
    enum { MOST = 8 };
    char lines[MOST][320];
    uint64_t ns[MOST];
    const tcf_rplan_t *top[MOST];
    unsigned n = 0;
    most = most < MOST ? most : MOST;
    pthread_mutex_lock(&tcf_rplan_lock);
    for (unsigned i = 0; i < TCF_RPLANS && most; i++) {
        const tcf_rplan_t *p = tcf_rplans[i];
        uint64_t t = p && p->replays ? atomic_load_explicit(&p->launch_ns, memory_order_relaxed) : 0;
        if (!t || (n == most && t <= ns[n - 1]))
            continue;
        unsigned j = n < most ? n++ : most - 1;   /* kept in order, the costliest first */
        for (; j > 0 && ns[j - 1] < t; j--)
            ns[j] = ns[j - 1], top[j] = top[j - 1];
        ns[j] = t, top[j] = p;
    }
    for (unsigned j = 0; j < n; j++)   /* made under the lock: a plan may go after it */
        tcf_rplan_cost_line(top[j], lines[j], sizeof lines[j]);
    pthread_mutex_unlock(&tcf_rplan_lock);
    if (n)
        tcf_out("  launch cost   the %u keys held whose graph launches took longest:", n);
    for (unsigned j = 0; j < n; j++)
        tcf_out("    %s", lines[j]);
}

static uint32_t tcf_median8(const uint32_t *v, uint32_t n)
{
    uint32_t s[8];
    n = n < 8 ? n : 8;
    memcpy(s, v, n * sizeof *s);
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0 && s[j - 1] > s[j]; j--) {
            uint32_t t = s[j];
            s[j] = s[j - 1], s[j - 1] = t;
        }
    return n ? s[n / 2] : 0;
}

void tcf_rplan_sample(tcf_rplan_t *p, int graph, uint64_t ns)
{
    if (!__atomic_load_n(&p->judging, __ATOMIC_RELAXED))
        return;
    uint64_t us = ns / 1000;
    uint32_t v = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
    if (graph && p->n_graph < TCF_R_SAMPLES)
        p->t_graph[p->n_graph++] = v;
    else if (!graph && p->n_issued < TCF_R_SAMPLES)
        p->t_issued[p->n_issued++] = v;
    if (p->n_graph < TCF_R_SAMPLES || p->n_issued < TCF_R_SAMPLES)
        return;
    uint32_t g = tcf_median8(p->t_graph, 8), e = tcf_median8(p->t_issued, 8);
    unsigned slower = 0;   /* pairs with the graph's run slower, in halves (ties: one) */
    for (unsigned i = 0; i < 8; i++)
        for (unsigned j = 0; j < 8; j++)
            slower += p->t_graph[i] > p->t_issued[j] ? 2u : p->t_graph[i] == p->t_issued[j];
    int worse = (uint64_t)g > (uint64_t)e + e / 32 && slower >= 2u * 48u;
    pthread_mutex_lock(&tcf_rplan_lock);
    if (__atomic_load_n(&p->judging, __ATOMIC_RELAXED)) {
        tcf_rplan_judged(p);
        atomic_fetch_add_explicit(&tcf_rctr.judged, 1, memory_order_relaxed);
        p->judged_ok = !worse;
        if (worse && p->state == TCF_RP_READY && !p->busy) {
            tcf_log(TCF_LOG_INFO, "graph mode: key %016llx: %u us as a graph, %u us as issued "
                    "(medians; %u of 64 pairs slower): not replayed", (unsigned long long)p->key,
                    g, e, slower / 2);
            atomic_fetch_add(&tcf_rctr.gave_up[TCF_RG_not_faster], 1);
            p->setbacks++;
            tcf_rplan_count_again(p, 0);
            tcf_rprefix_rebuild();
        }
    }
    pthread_mutex_unlock(&tcf_rplan_lock);
}
