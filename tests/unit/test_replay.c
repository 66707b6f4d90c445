/* Graph mode's pure parts, against fake driver entry points: a launch's key signature as
 * the hold path computes it equals the one learned from its recorded event (else a
 * window would never be held on its own graph's path); what a node carries; the prefix
 * set; the patch bookkeeping (only nodes whose bytes differ are patched, the shadow
 * follows); the refusal chain (patch -> whole-graph update -> new instantiation -> give
 * up); the least-recently-replayed eviction and the prefixes it takes away. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "replay/internal.h"

/* --- fake driver --------------------------------------------------------------------- */
static int n_create, n_add, n_attr, n_inst, n_set, n_update, n_launch, n_xdestroy, n_gdestroy;
static int fail_set, fail_update, fail_inst, fail_launch;
static CUDA_KERNEL_NODE_PARAMS last_set;
static uint8_t last_set_bytes[64];
static uintptr_t next_handle = 0x1000;

static CUresult f_create(CUgraph *g, unsigned fl) { (void)fl; n_create++; *g = (CUgraph)next_handle++; return CUDA_SUCCESS; }
static CUresult f_add(CUgraphNode *n, CUgraph g, const CUgraphNode *d, size_t nd, const CUDA_KERNEL_NODE_PARAMS *p)
{
    (void)g, (void)d, (void)nd, (void)p;
    n_add++;
    *n = (CUgraphNode)next_handle++;
    return CUDA_SUCCESS;
}
static CUresult f_attr(CUgraphNode n, CUkernelNodeAttrID id, const CUkernelNodeAttrValue *v) { (void)n, (void)id, (void)v; n_attr++; return CUDA_SUCCESS; }
static CUresult f_inst(CUgraphExec *x, CUgraph g, unsigned long long fl)
{
    (void)g, (void)fl;
    n_inst++;
    if (fail_inst)
        return CUDA_ERROR_UNKNOWN;
    *x = (CUgraphExec)next_handle++;
    return CUDA_SUCCESS;
}
static CUresult f_set(CUgraphExec x, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    (void)x, (void)n;
    n_set++;
    if (fail_set)
        return CUDA_ERROR_UNKNOWN;
    last_set = *p;
    if (p->kernelParams)  /* the test kernel: int @0, pointer @8 */
        memcpy(last_set_bytes, p->kernelParams[0], 4), memcpy(last_set_bytes + 8, p->kernelParams[1], 8);
    return CUDA_SUCCESS;
}
static CUresult f_update(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *i) { (void)x, (void)g, (void)i; n_update++; return fail_update ? CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE : CUDA_SUCCESS; }
static CUresult f_launch(CUgraphExec x, CUstream s) { (void)x, (void)s; n_launch++; return fail_launch ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS; }
static CUresult f_xdestroy(CUgraphExec x) { (void)x; n_xdestroy++; return CUDA_SUCCESS; }
static CUresult f_gdestroy(CUgraph g) { (void)g; n_gdestroy++; return CUDA_SUCCESS; }
static CUresult f_free(CUdeviceptr p, CUstream s) { (void)p, (void)s; return CUDA_SUCCESS; }
static CUresult f_launch_kernel(CUfunction f, unsigned a, unsigned b, unsigned c, unsigned d,
                                unsigned e, unsigned g, unsigned h, CUstream s, void **p, void **x)
{
    (void)f, (void)a, (void)b, (void)c, (void)d, (void)e, (void)g, (void)h, (void)s, (void)p, (void)x;
    return CUDA_SUCCESS;
}

static void fake_driver(void)
{
    tcf_driver_t d = { 0 };
    d.graph_create = f_create, d.graph_add_kernel_node = f_add;
    d.graph_kernel_node_set_attribute = f_attr, d.graph_instantiate = f_inst;
    d.graph_exec_kernel_node_set_params = f_set, d.graph_exec_update = f_update;
    d.graph_launch = f_launch, d.graph_exec_destroy = f_xdestroy, d.graph_destroy = f_gdestroy;
    d.mem_free_async = f_free, d.launch_kernel = f_launch_kernel;
    tcf_driver_set(&d);
}

/* --- a kernel (int n @0, float *x @8) and a window ------------------------------------ */
static uint32_t koff[2] = { 0, 8 }, ksize[2] = { 4, 8 };
static tcf_kernel_t kern = { .handle = 0x5505000100, .id = 1, .kind = TCF_KIND_KERNEL,
                             .nparams = 2, .param_known = 1, .param_bytes = 16,
                             .name = "ka_i4_p8", .off = koff, .size = ksize };

static tcf_window_t *window(uint64_t stream)
{
    tcf_window_t *w = calloc(1, sizeof *w);
    w->ctx = 0x55, w->stream = stream;
    pthread_mutex_init(&w->lock, NULL);
    return w;
}

static void drop(tcf_window_t *w)
{
    free(w->ev), free(w->ops), free(w->arena), free(w);
}

static void reset(tcf_window_t *w)
{
    w->nev = w->nlaunch = w->arena_len = w->nheld = 0;
}

static tcf_launch_t launch_of(int *n, uint64_t *x, void **pp)
{
    pp[0] = n, pp[1] = x;
    tcf_launch_t l = { .via = TCF_VIA_LAUNCH, .stream = (CUstream)0x99, .k = &kern,
                       .grid = { 4, 1, 1 }, .block = { 128, 1, 1 }, .smem = 0, .params = pp };
    return l;
}

/* Appends a held launch of (n, x) to w; returns its signature as the hold path sees it. */
static tcf_rsig_t hold(tcf_window_t *w, int n, uint64_t x)
{
    void *pp[2];
    tcf_launch_t l = launch_of(&n, &x, pp);
    tcf_rsig_t s;
    CHECK_EQ_INT(tcf_rsig_of_launch(w, &l, &s, NULL), TCF_RN_OK);
    tcf_event_t *e = tcf_window_add_launch(w, &l, 1, CUDA_SUCCESS, 1);
    CHECK(e != NULL);
    if (e) {
        e->stream = 0x99;
        w->nheld++;
    }
    return s;
}

TEST(hold_and_learn_agree)
{
    tcf_window_t *w = window(0x99);
    int n = 7;
    uint64_t x = 0x7f0000001000ull;
    void *pp[2];
    tcf_launch_t l = launch_of(&n, &x, pp);
    tcf_rsig_t a, b;
    CHECK_EQ_INT(tcf_rsig_of_launch(w, &l, &a, NULL), TCF_RN_OK);
    tcf_event_t *e = tcf_window_add_launch(w, &l, 0, CUDA_SUCCESS, 1);
    CHECK_EQ_INT(tcf_rsig_of_event(w, e, &b), TCF_RN_OK);
    CHECK_EQ_MEM(&a, &b, sizeof a);
    CHECK_EQ_U64(tcf_rkey_step(1, &a), tcf_rkey_step(1, &b));

    /* the extra form of the same bytes is the same launch */
    uint8_t buf[16] = { 0 };
    memcpy(buf, &n, 4), memcpy(buf + 8, &x, 8);
    size_t size = 16;
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                      CU_LAUNCH_PARAM_END };
    tcf_launch_t le = l;
    le.params = NULL, le.extra = extra;
    tcf_rsig_t c, d;
    CHECK_EQ_INT(tcf_rsig_of_launch(w, &le, &c, NULL), TCF_RN_OK);
    e = tcf_window_add_launch(w, &le, 0, CUDA_SUCCESS, 1);
    CHECK_EQ_INT(tcf_rsig_of_event(w, e, &d), TCF_RN_OK);
    CHECK_EQ_MEM(&c, &d, sizeof c);
    CHECK_EQ_MEM(&a, &c, sizeof a);

    /* an extra buffer padded past the layout is another form, still agreed on */
    uint8_t big[24] = { 0 };
    size_t bsize = 24;
    void *bextra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, big, CU_LAUNCH_PARAM_BUFFER_SIZE, &bsize,
                       CU_LAUNCH_PARAM_END };
    le.extra = bextra;
    CHECK_EQ_INT(tcf_rsig_of_launch(w, &le, &c, NULL), TCF_RN_OK);
    e = tcf_window_add_launch(w, &le, 0, CUDA_SUCCESS, 1);
    CHECK_EQ_INT(tcf_rsig_of_event(w, e, &d), TCF_RN_OK);
    CHECK_EQ_MEM(&c, &d, sizeof c);
    CHECK_EQ_INT(c.form, TCF_R_FORM_EXTRA);

    /* attributes: a cluster dimension is carried and keyed; its value matters */
    CUlaunchAttribute at[2];
    memset(at, 0, sizeof at);
    at[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    at[0].value.clusterDim.x = 2, at[0].value.clusterDim.y = 1, at[0].value.clusterDim.z = 1;
    at[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;  /* off: nothing to carry */
    tcf_launch_t la = l;
    la.via = TCF_VIA_LAUNCH_EX, la.attrs = at, la.nattrs = 2;
    CHECK_EQ_INT(tcf_rsig_of_launch(w, &la, &c, NULL), TCF_RN_OK);
    e = tcf_window_add_launch(w, &la, 0, CUDA_SUCCESS, 1);
    CHECK_EQ_INT(e->u.l.nattr, 2);
    CHECK_EQ_INT(tcf_rsig_of_event(w, e, &d), TCF_RN_OK);
    CHECK_EQ_MEM(&c, &d, sizeof c);
    CHECK(c.attrs != 0 && c.attrs != a.attrs);
    at[0].value.clusterDim.x = 4;
    tcf_rsig_t c4;
    CHECK_EQ_INT(tcf_rsig_of_launch(w, &la, &c4, NULL), TCF_RN_OK);
    CHECK(c4.attrs != c.attrs);

    /* carried: programmatic serialization, on or off; on is another key (the node
     * drops it, and a launch without it is other work as far as the key knows) */
    tcf_rsig_t pd0, pd1;
    at[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    at[1].value.programmaticStreamSerializationAllowed = 0;
    CHECK_EQ_INT(tcf_rsig_of_launch(w, &la, &pd0, NULL), TCF_RN_OK);
    CHECK_EQ_INT(pd0.attrs, c4.attrs);   /* off: as if absent */
    at[1].value.programmaticStreamSerializationAllowed = 1;
    CHECK_EQ_INT(tcf_rsig_of_launch(w, &la, &pd1, NULL), TCF_RN_OK);
    CHECK(pd1.attrs != pd0.attrs);

    /* refused: cooperative on, an attribute unknown here */
    int bad = -1;
    at[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    at[1].value.cooperative = 1;
    CHECK_EQ_INT(tcf_rsig_of_launch(w, &la, &c, &bad), TCF_RN_ATTR);
    CHECK_EQ_INT(bad, CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
    at[1].id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
    CHECK_EQ_INT(tcf_rsig_of_launch(w, &la, &c, &bad), TCF_RN_ATTR);
    CHECK_EQ_INT(bad, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN);

    /* refused: the per-thread stream, an unknown kernel, an unknown layout */
    tcf_window_t *pt = window((uint64_t)(uintptr_t)CU_STREAM_PER_THREAD);
    CHECK_EQ_INT(tcf_rsig_of_launch(pt, &l, &c, NULL), TCF_RN_PTDS);
    tcf_kernel_t unknown = kern;
    unknown.kind = TCF_KIND_UNKNOWN;
    tcf_launch_t lu = l;
    lu.k = &unknown;
    CHECK_EQ_INT(tcf_rsig_of_launch(w, &lu, &c, NULL), TCF_RN_KERNEL);
    unknown.kind = TCF_KIND_KERNEL, unknown.param_known = 0;
    CHECK_EQ_INT(tcf_rsig_of_launch(w, &lu, &c, NULL), TCF_RN_PARAMS);
    drop(w), drop(pt);
}

TEST(key_depends_on_shape_ordinal_and_order_not_values)
{
    tcf_window_t *w = window(0x99);
    tcf_rsig_t a = hold(w, 1, 0x1000), b = hold(w, 2, 0x2000);
    CHECK_EQ_MEM(&a, &b, sizeof a);  /* values are not in the signature */
    uint64_t s0 = tcf_rkey_seed(0x55, 0x99, 0), s1 = tcf_rkey_seed(0x55, 0x99, 1);
    CHECK(s0 != s1);
    CHECK(tcf_rkey_seed(0x55, 0x98, 0) != s0);
    tcf_rsig_t g = a;
    g.grid[0] = 8;
    CHECK(tcf_rkey_step(tcf_rkey_step(s0, &a), &g) != tcf_rkey_step(tcf_rkey_step(s0, &g), &a));
    CHECK(tcf_rkey_step(s0, &a) != tcf_rkey_step(s0, &g));
    CHECK(tcf_r_is_cut("size-cap") && tcf_r_is_cut(tcf_r_cut_after) &&
          !tcf_r_is_cut("cuStreamSynchronize"));
    drop(w);
}

TEST(prefix_set)
{
    tcf_rprefix_clear();
    CHECK(!tcf_rprefix_has(42));
    CHECK_EQ_INT(tcf_rprefix_add(42), 0);
    CHECK(tcf_rprefix_has(42));
    CHECK(!tcf_rprefix_has(44));
    for (uint64_t i = 0; i < 1000; i++)
        tcf_rprefix_add(i * 0x10001ull + 7);
    int all = 1;
    for (uint64_t i = 0; i < 1000; i++)
        all &= tcf_rprefix_has(i * 0x10001ull + 7);
    CHECK(all);
    tcf_rprefix_clear();
    CHECK(!tcf_rprefix_has(42));
}

/* A plan of n nodes learned from window w's launches (as flush.c fills it). */
static tcf_rplan_t *plan_of(tcf_window_t *w, uint64_t key)
{
    tcf_rplan_t *p = calloc(1, sizeof *p);
    p->key = key;
    p->n = w->nlaunch;
    p->nodes = calloc(p->n, sizeof *p->nodes);
    p->shadow = calloc(p->n, 16);
    p->shadow_len = 16 * p->n;
    p->ctx = w->ctx;
    p->seed = tcf_rkey_seed(w->ctx, w->stream, 0);
    for (uint32_t i = 0, j = 0; i < w->nev; i++) {
        tcf_event_t *e = &w->ev[i];
        tcf_rsig_of_event(w, e, &p->nodes[j].sig);
        p->nodes[j].k = e->u.l.k;
        p->nodes[j].soff = 16 * j;
        memcpy(p->shadow + 16 * j, w->arena + e->u.l.poff, 16);
        j++;
    }
    return p;
}

TEST(patch_only_what_changed)
{
    fake_driver();
    tcf_window_t *w = window(0x99);
    for (int i = 0; i < 5; i++)
        hold(w, i, 0x1000 + 0x100 * (uint64_t)i);
    tcf_rplan_t *p = plan_of(w, 1);
    int reason = -1;
    CHECK_EQ_INT(tcf_rgraph_build(p, &reason), 0);
    CHECK_EQ_INT(n_create, 1);
    CHECK_EQ_INT(n_add, 5);
    CHECK_EQ_INT(n_inst, 1);
    CHECK(p->exec && p->graph);

    /* the same bytes: nothing patched, one launch */
    uint32_t patched = 99;
    CHECK_EQ_INT(tcf_rgraph_replay(p, w, &reason, &patched), 0);
    CHECK_EQ_INT(patched, 0);
    CHECK_EQ_INT(n_set, 0);
    CHECK_EQ_INT(n_launch, 1);
    for (uint32_t i = 0; i < w->nev; i++)
        CHECK_EQ_INT(w->ev[i].held, 0);   /* what ran is no longer held */

    /* nodes 1 and 3 changed: two patches with this window's bytes; the shadow follows */
    reset(w);
    for (int i = 0; i < 5; i++)
        hold(w, i == 1 || i == 3 ? 100 + i : i, 0x1000 + 0x100 * (uint64_t)i + (i == 3 ? 8 : 0));
    CHECK_EQ_INT(tcf_rgraph_replay(p, w, &reason, &patched), 0);
    CHECK_EQ_INT(patched, 2);
    CHECK_EQ_INT(n_set, 2);
    int v;
    uint64_t x;
    memcpy(&v, last_set_bytes, 4), memcpy(&x, last_set_bytes + 8, 8);
    CHECK_EQ_INT(v, 103);
    CHECK_EQ_U64(x, 0x1308);
    CHECK(last_set.kern == (CUkernel)(uintptr_t)kern.handle && !last_set.func);
    CHECK(last_set.ctx == (CUcontext)(uintptr_t)0x55);
    CHECK_EQ_MEM(p->shadow + 16 * 3, w->arena + w->ev[3].u.l.poff, 16);
    /* again with the same bytes: nothing */
    for (uint32_t i = 0; i < w->nev; i++)
        w->ev[i].held = 1;
    CHECK_EQ_INT(tcf_rgraph_replay(p, w, &reason, &patched), 0);
    CHECK_EQ_INT(patched, 0);
    CHECK_EQ_INT(n_set, 2);

    /* a refused patch: the whole graph is updated from a fresh one */
    reset(w);
    for (int i = 0; i < 5; i++)
        hold(w, 200 + i, 0x1000);
    fail_set = 1;
    int adds = n_add;
    CHECK_EQ_INT(tcf_rgraph_replay(p, w, &reason, &patched), 0);
    CHECK_EQ_INT(n_update, 1);
    CHECK_EQ_INT(n_add, adds + 5);
    CHECK_EQ_INT(patched, 5);
    CHECK_EQ_MEM(p->shadow + 16 * 4, w->arena + w->ev[4].u.l.poff, 16);

    /* the update refused too: a new instantiation replaces the exec */
    reset(w);
    for (int i = 0; i < 5; i++)
        hold(w, 300 + i, 0x1000);
    fail_update = 1;
    CUgraphExec old = p->exec;
    int destroyed = n_xdestroy;
    CHECK_EQ_INT(tcf_rgraph_replay(p, w, &reason, &patched), 0);
    CHECK(p->exec != old);
    CHECK_EQ_INT(n_xdestroy, destroyed + 1);

    /* and refused as well: nothing ran, the held work is still held, the key must go */
    reset(w);
    for (int i = 0; i < 5; i++)
        hold(w, 400 + i, 0x1000);
    fail_inst = 1;
    int launches = n_launch;
    reason = -1;
    CHECK_EQ_INT(tcf_rgraph_replay(p, w, &reason, &patched), -1);
    CHECK_EQ_INT(reason, TCF_RG_update_failed);
    CHECK_EQ_INT(n_launch, launches);
    CHECK_EQ_INT(w->ev[0].held, 1);
    fail_set = fail_update = fail_inst = 0;

    /* a refused launch: the key goes with launch-failed, the work is still held */
    fail_launch = 1;
    CHECK_EQ_INT(tcf_rgraph_replay(p, w, &reason, &patched), -1);
    CHECK_EQ_INT(reason, TCF_RG_launch_failed);
    CHECK_EQ_INT(w->ev[4].held, 1);
    fail_launch = 0;
    free(p->nodes), free(p->shadow), free(p);
    drop(w);
}

TEST(eviction_and_give_up_take_prefixes_away)
{
    fake_driver();
    tcf_cfg.replay_graphs = 2;
    tcf_cfg.replay_memory = 1LL << 30;
    tcf_rprefix_clear();
    tcf_rplan_t *p[3];
    uint64_t first[3];
    for (int i = 0; i < 3; i++) {
        tcf_window_t *w = window(0x90 + (uint64_t)i);
        hold(w, i, 0x1000);
        hold(w, i, 0x2000);
        pthread_mutex_lock(&tcf_rplan_lock);
        p[i] = tcf_rplan_get(0x1000 + (uint64_t)i, 1);
        tcf_rplan_t *q = plan_of(w, p[i]->key);
        q->key = p[i]->key;
        *p[i] = *q;
        free(q);
        p[i]->seed = tcf_rkey_seed(w->ctx, w->stream, 0);
        first[i] = tcf_rkey_step(p[i]->seed, &p[i]->nodes[0].sig);
        int reason;
        CHECK_EQ_INT(tcf_rgraph_build(p[i], &reason), 0);
        tcf_rplan_ready(p[i]);
        if (i == 0)
            tcf_rplan_take(p[0]), tcf_rplan_done(p[0]);  /* replayed once, before plan 1 */
        pthread_mutex_unlock(&tcf_rplan_lock);
        CHECK(tcf_rprefix_has(first[i]));
        drop(w);
    }
    /* with room for 2, making the third evicted the least recently replayed: plan 0 */
    CHECK_EQ_INT(p[0]->state, TCF_RP_COUNTING);
    CHECK_EQ_INT(p[1]->state, TCF_RP_READY);
    CHECK_EQ_INT(p[2]->state, TCF_RP_READY);
    CHECK(!tcf_rprefix_has(first[0]));
    CHECK(tcf_rprefix_has(first[1]) && tcf_rprefix_has(first[2]));
    uint64_t graphs, mem, peak;
    tcf_rplan_held(&graphs, &mem, &peak);
    CHECK_EQ_U64(graphs, 2);
    int destroyed = n_xdestroy;
    tcf_rplan_retired_destroy(0);
    CHECK_EQ_INT(n_xdestroy, destroyed + 1);

    /* a plan in use is never evicted: replaying 1 keeps it busy while 0 comes back */
    pthread_mutex_lock(&tcf_rplan_lock);
    tcf_rplan_take(p[1]);
    pthread_mutex_unlock(&tcf_rplan_lock);
    tcf_window_t *w0 = window(0x90);
    hold(w0, 0, 0x1000);
    hold(w0, 0, 0x2000);
    tcf_rplan_t *q = plan_of(w0, p[0]->key);
    pthread_mutex_lock(&tcf_rplan_lock);
    p[0]->nodes = q->nodes, p[0]->shadow = q->shadow, p[0]->n = q->n;
    p[0]->shadow_len = q->shadow_len;
    int reason;
    CHECK_EQ_INT(tcf_rgraph_build(p[0], &reason), 0);
    tcf_rplan_ready(p[0]);
    CHECK_EQ_INT(p[1]->state, TCF_RP_READY);   /* busy */
    CHECK_EQ_INT(p[2]->state, TCF_RP_COUNTING);
    tcf_rplan_done(p[1]);

    /* given up: its prefixes go, and it stays given up */
    tcf_rplan_give_up(p[1], TCF_RG_launch_failed);
    pthread_mutex_unlock(&tcf_rplan_lock);
    CHECK_EQ_INT(p[1]->state, TCF_RP_GIVEN_UP);
    CHECK(!tcf_rprefix_has(first[1]));
    CHECK(tcf_rprefix_has(first[0]));
    uint64_t keys, ready, building, given_up;
    tcf_rplan_census(&keys, &ready, &building, &given_up);
    CHECK_EQ_U64(ready, 1);
    CHECK_EQ_U64(given_up, 1);
    free(q);
    drop(w0);
}

/* Makes key's plan from a window of two held launches, builds and readies its graph
 * (as the worker does); returns the plan. */
static tcf_rplan_t *ready_plan(uint64_t key, uint64_t stream)
{
    tcf_window_t *w = window(stream);
    hold(w, 1, 0x1000);
    hold(w, 2, 0x2000);
    tcf_rplan_t *q = plan_of(w, key);
    pthread_mutex_lock(&tcf_rplan_lock);
    tcf_rplan_t *p = tcf_rplan_get(key, 1);
    int setbacks = p->setbacks, judged_ok = p->judged_ok;
    uint64_t sightings = p->sightings, first_seen = p->first_seen;
    *p = *q;
    p->setbacks = setbacks, p->judged_ok = judged_ok;
    p->sightings = sightings, p->first_seen = first_seen;
    int reason;
    CHECK_EQ_INT(tcf_rgraph_build(p, &reason), 0);
    tcf_rplan_ready(p);
    pthread_mutex_unlock(&tcf_rplan_lock);
    free(q);
    drop(w);
    return p;
}

/* Eight timing samples of p each way: as a graph ns_graph, as issued ns_issued. */
static void judge_samples(tcf_rplan_t *p, uint64_t ns_graph, uint64_t ns_issued)
{
    for (int i = 0; i < 8; i++)
        tcf_rplan_sample(p, 1, ns_graph), tcf_rplan_sample(p, 0, ns_issued);
}

/* A key whose graph was judged no slower than its launches keeps the verdict: the graph
 * made again for it (full mode's plan fusing more, after eviction) is not judged again,
 * and none of its windows runs as issued to time it. A key judged slower is judged again
 * when its graph comes back. */
TEST(a_judged_key_keeps_its_verdict)
{
    fake_driver();
    tcf_cfg.replay_judge = 1;
    tcf_cfg.replay_graphs = 64;
    tcf_cfg.replay_memory = 1LL << 30;
    unsigned long long kept = atomic_load(&tcf_rctr.judge_kept);
    tcf_rplan_t *p = ready_plan(0x7a11, 0xa1);
    CHECK(__atomic_load_n(&p->judging, __ATOMIC_RELAXED));
    judge_samples(p, 1000000, 4000000);   /* 1 ms as a graph, 4 as issued: it pays */
    CHECK(!__atomic_load_n(&p->judging, __ATOMIC_RELAXED));
    CHECK_EQ_INT(p->state, TCF_RP_READY);
    CHECK_EQ_INT(p->judged_ok, 1);
    pthread_mutex_lock(&tcf_rplan_lock);
    tcf_rplan_renew(p);   /* as full mode does for a plan fusing more */
    pthread_mutex_unlock(&tcf_rplan_lock);
    CHECK_EQ_INT(p->state, TCF_RP_COUNTING);
    p = ready_plan(0x7a11, 0xa1);
    CHECK(!__atomic_load_n(&p->judging, __ATOMIC_RELAXED));
    CHECK_EQ_U64(atomic_load(&tcf_rctr.judge_kept), kept + 1);

    /* judged slower: dropped, and its next graph is judged */
    tcf_rplan_t *s = ready_plan(0x7a12, 0xa2);
    CHECK(__atomic_load_n(&s->judging, __ATOMIC_RELAXED));
    judge_samples(s, 4000000, 1000000);
    CHECK_EQ_INT(s->state, TCF_RP_COUNTING);
    CHECK_EQ_INT(s->judged_ok, 0);
    s = ready_plan(0x7a12, 0xa2);
    CHECK(__atomic_load_n(&s->judging, __ATOMIC_RELAXED));
    CHECK_EQ_U64(atomic_load(&tcf_rctr.judge_kept), kept + 1);
    pthread_mutex_lock(&tcf_rplan_lock);
    tcf_rplan_give_up(s, TCF_RG_launch_failed);   /* ends its judgment */
    tcf_rplan_give_up(p, TCF_RG_launch_failed);
    pthread_mutex_unlock(&tcf_rplan_lock);
}

/* A full table takes new keys in the entries of keys seen once, TCF_RPLANS windows ago
 * or more; never in those of keys seen twice, nor before that many windows have closed.
 * Runs last: it fills the table. */
TEST(full_table_reuses_keys_seen_once_long_ago)
{
    enum { CAP = (1u << 14) * 3 / 4 };
    uint64_t keys0, r0, b0, g0;
    tcf_rplan_census(&keys0, &r0, &b0, &g0);
    pthread_mutex_lock(&tcf_rplan_lock);
    unsigned made = 0;
    for (uint64_t k = 0; made + keys0 < CAP && k < 4 * CAP; k++) {
        tcf_rplan_t *p = tcf_rplan_get(0xabc00000ull + k, 1);
        if (!p)
            continue;
        p->seen++;
        tcf_rplan_sighted(p);
        made++;
    }
    CHECK_EQ_U64(made + keys0, CAP);
    /* full, and every key seen once just now: no room */
    CHECK(tcf_rplan_get(0xdef00001ull, 1) == NULL);
    pthread_mutex_unlock(&tcf_rplan_lock);
    for (unsigned i = 0; i < (1u << 14); i++)
        tcf_rjudge_expire();   /* the windows' clock: TCF_RPLANS windows later */
    pthread_mutex_lock(&tcf_rplan_lock);
    tcf_rplan_t *p = tcf_rplan_get(0xdef00001ull, 1);
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_U64(p->key, 0xdef00001ull);
        CHECK_EQ_U64(p->seen, 0);
        CHECK_EQ_U64(p->sightings, 0);
        CHECK(tcf_rplan_get(0xdef00001ull, 0) == p);   /* found again on its probe path */
    }
    uint64_t keys, r, b, g;
    pthread_mutex_unlock(&tcf_rplan_lock);
    tcf_rplan_census(&keys, &r, &b, &g);
    CHECK_EQ_U64(keys, CAP);   /* an entry reused, none added */
    CHECK_EQ_U64(atomic_load(&tcf_rctr.keys_reclaimed), 1);
    /* keys seen twice keep their entries however old */
    pthread_mutex_lock(&tcf_rplan_lock);
    for (uint64_t k = 0; k < 4 * CAP; k++) {
        tcf_rplan_t *q = tcf_rplan_get(0xabc00000ull + k, 0);
        if (q)
            tcf_rplan_sighted(q);
    }
    if (p)
        tcf_rplan_sighted(p), tcf_rplan_sighted(p);
    pthread_mutex_unlock(&tcf_rplan_lock);
    for (unsigned i = 0; i < (1u << 14); i++)
        tcf_rjudge_expire();
    pthread_mutex_lock(&tcf_rplan_lock);
    unsigned got = 0;
    for (uint64_t k = 0; k < 64; k++)
        got += tcf_rplan_get(0xfee00000ull + k, 1) != NULL;
    pthread_mutex_unlock(&tcf_rplan_lock);
    CHECK_EQ_INT(got, 0);
}

int main(void)
{
    RUN(hold_and_learn_agree);
    RUN(key_depends_on_shape_ordinal_and_order_not_values);
    RUN(prefix_set);
    RUN(patch_only_what_changed);
    RUN(eviction_and_give_up_take_prefixes_away);
    RUN(a_judged_key_keeps_its_verdict);
    RUN(full_table_reuses_keys_seen_once_long_ago);
    return check_main_end();
}
