/* The driver's graph API, as graph mode uses it. A plan's graph is a chain of kernel,
 * memset and copy nodes in the window's order (one stream: each after the one before). A replay
 * patches only the nodes whose parameter bytes differ from what the node holds (the
 * plan's shadow copy: the driver has no getter), then launches the graph on the window's
 * stream; the window's held frees follow it. A patch the driver refuses is retried as a
 * whole-graph update (a fresh graph with this window's bytes, cuGraphExecUpdate), then as
 * a new instantiation; when that fails too the key is given up.
 *
 * Two instances (TCFUSE_REPLAY_RING; full mode's default) keep a second instance of the
 * graph, with its own shadow, and replay the two in turn. A program whose bytes alternate
 * between two sets (GPT-2's LayerNorms read a residual stream that PyTorch's allocator
 * hands two blocks in turn) then finds each instance holding its set and patches nothing
 * after each instance's first replay; bytes of any other pattern are patched as with one
 * instance. The alternation is by replay (the plan's count of them), not by window: a
 * window run as issued between two replays shifts the phase once, which costs one round
 * of patches.
 *
 * A CUkernel handle (what cudart launches) goes into a node's `kern` with the window's
 * context; a CUfunction into `func`. */
#include <stdlib.h>
#include <string.h>

#include "exec/steps.h"
#include "replay/internal.h"

int tcf_rring = 1;

int tcf_rgraph_api(void)
{
    return tcf_drv.launch_kernel && tcf_drv.mem_free_async && tcf_drv.graph_create &&
           tcf_drv.graph_add_kernel_node && tcf_drv.graph_kernel_node_set_attribute &&
           tcf_drv.graph_instantiate && tcf_drv.graph_exec_kernel_node_set_params &&
           tcf_drv.graph_exec_update && tcf_drv.graph_launch && tcf_drv.graph_exec_destroy &&
           tcf_drv.graph_destroy && tcf_drv.graph_add_memset_node &&
           tcf_drv.graph_add_memcpy_node && tcf_drv.graph_exec_memset_node_set_params &&
           tcf_drv.graph_exec_memcpy_node_set_params && tcf_drv.memset_d8_async &&
           tcf_drv.memset_d16_async && tcf_drv.memset_d32_async && tcf_drv.memcpy_dtod_async;
}

/* Estimated device memory of an instantiated graph: per node what 1000-node graphs of
 * small kernels held on the H100 (2.5 KiB, docs/PERF.md), its parameter bytes, and a
 * fixed part per graph. */
uint64_t tcf_rgraph_mem_estimate(const tcf_rplan_t *p)
{
    return 64 * 1024 + (uint64_t)p->n * 2560 + p->shadow_len;
}

void tcf_rnode_params(const tcf_rsig_t *s, const tcf_kernel_t *k, uint64_t ctx,
                      uint8_t *bytes, void **pp, void **ex, size_t *exsize,
                      CUDA_KERNEL_NODE_PARAMS *np)
{
    memset(np, 0, sizeof *np);
    if (s->kind == TCF_KIND_FUNCTION) {
        np->func = (CUfunction)(uintptr_t)s->handle;
    } else {
        np->kern = (CUkernel)(uintptr_t)s->handle;
        np->ctx = (CUcontext)(uintptr_t)ctx;
    }
    np->gridDimX = s->grid[0], np->gridDimY = s->grid[1], np->gridDimZ = s->grid[2];
    np->blockDimX = s->block[0], np->blockDimY = s->block[1], np->blockDimZ = s->block[2];
    np->sharedMemBytes = s->smem;
    if (!k) {   /* a generated kernel (full mode): one parameter, the whole of bytes */
        pp[0] = bytes;
        np->kernelParams = pp;
    } else if (s->form == TCF_R_FORM_PARAMS) {
        for (uint32_t i = 0; i < k->nparams; i++)
            pp[i] = bytes + k->off[i];
        np->kernelParams = k->nparams ? pp : NULL;
    } else {
        *exsize = s->pbytes;
        ex[0] = CU_LAUNCH_PARAM_BUFFER_POINTER, ex[1] = bytes;
        ex[2] = CU_LAUNCH_PARAM_BUFFER_SIZE, ex[3] = exsize, ex[4] = CU_LAUNCH_PARAM_END;
        np->extra = ex;
    }
}

/* A memset node's or a copy node's fields: its 16 bytes are dst and the value or src; the
 * count is in its signature's grid. */
static uint64_t tcf_rop_fields(const tcf_rsig_t *s, const uint8_t *bytes, uint64_t *dst,
                               uint64_t *second)
{
    memcpy(dst, bytes, 8);
    memcpy(second, bytes + 8, 8);
    return s->grid[1] | (uint64_t)s->grid[2] << 32;
}

/* A memset node's or a copy node's parameters from its 16 bytes (dst, value or src). */
static void tcf_rop_params(const tcf_rsig_t *s, const uint8_t *bytes,
                           CUDA_MEMSET_NODE_PARAMS *ms, CUDA_MEMCPY3D *mc)
{
    uint64_t dst, second, count = tcf_rop_fields(s, bytes, &dst, &second);
    if (s->kind == TCF_R_KIND_MEMSET) {
        memset(ms, 0, sizeof *ms);
        ms->dst = dst, ms->value = (unsigned)second, ms->elementSize = s->grid[0];
        ms->width = count, ms->height = 1;
    } else {
        memset(mc, 0, sizeof *mc);
        mc->srcMemoryType = CU_MEMORYTYPE_DEVICE, mc->srcDevice = second;
        mc->dstMemoryType = CU_MEMORYTYPE_DEVICE, mc->dstDevice = dst;
        mc->WidthInBytes = count, mc->Height = 1, mc->Depth = 1;
    }
}

static int tcf_rnode_is_op(const tcf_rnode_t *n)
{
    return n->sig.kind == TCF_R_KIND_MEMSET || n->sig.kind == TCF_R_KIND_MEMCPY;
}

/* Room for a kernel's parameter pointers: on the stack for most, else allocated. */
typedef struct {
    void  *stack[64];
    void **pp;
} tcf_pp_t;

static void **tcf_pp_for(tcf_pp_t *b, const tcf_kernel_t *k)
{
    if (b->pp && b->pp != b->stack)
        free(b->pp);
    /* no kernel record: a generated kernel (full mode), its parameter in `extra` form */
    b->pp = !k || k->nparams <= 64 ? b->stack : tcf_malloc(k->nparams * sizeof(void *));
    return b->pp;
}

static void tcf_pp_free(tcf_pp_t *b)
{
    if (b->pp && b->pp != b->stack)
        free(b->pp);
    b->pp = NULL;
}

void tcf_rgraph_destroy(CUgraph g, CUgraphExec x)
{
    if (x)
        tcf_drv.graph_exec_destroy(x);
    if (g)
        tcf_drv.graph_destroy(g);
}

/* A chain graph of p's nodes with the bytes at bytes_of(i); nodes[] gets its nodes. */
static int tcf_rgraph_make(const tcf_rplan_t *p, uint8_t *const *bytes_of, CUgraph *out,
                           CUgraphNode *nodes, int *reason)
{
    CUgraph g = NULL;
    if (tcf_drv.graph_create(&g, 0) != CUDA_SUCCESS || !g) {
        *reason = TCF_RG_create_failed;
        return -1;
    }
    tcf_pp_t b = { .pp = NULL };
    void *ex[5];
    size_t exsize;
    CUgraphNode prev = NULL;
    for (uint32_t i = 0; i < p->n; i++) {
        const tcf_rnode_t *n = &p->nodes[i];
        CUgraphNode node = NULL;
        if (tcf_rnode_is_op(n)) {
            CUDA_MEMSET_NODE_PARAMS ms;
            CUDA_MEMCPY3D mc;
            tcf_rop_params(&n->sig, bytes_of[i], &ms, &mc);
            CUresult rc = n->sig.kind == TCF_R_KIND_MEMSET
                ? tcf_drv.graph_add_memset_node(&node, g, prev ? &prev : NULL, prev ? 1 : 0, &ms,
                                                (CUcontext)(uintptr_t)p->ctx)
                : tcf_drv.graph_add_memcpy_node(&node, g, prev ? &prev : NULL, prev ? 1 : 0, &mc,
                                                (CUcontext)(uintptr_t)p->ctx);
            if (rc != CUDA_SUCCESS)
                goto refused;
            nodes[i] = node;
            prev = node;
            continue;
        }
        CUDA_KERNEL_NODE_PARAMS np;
        void **pp = tcf_pp_for(&b, n->k);
        if (!pp)
            goto refused;
        tcf_rnode_params(&n->sig, n->k, p->ctx, bytes_of[i], pp, ex, &exsize, &np);
        if (tcf_drv.graph_add_kernel_node(&node, g, prev ? &prev : NULL, prev ? 1 : 0, &np) !=
            CUDA_SUCCESS)
            goto refused;
        for (uint32_t a = 0; a < n->nattr; a++) {
            if (n->attr[a].id == CU_LAUNCH_ATTRIBUTE_IGNORE ||
                n->attr[a].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE ||
                n->attr[a].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
                continue;  /* off, or (PDL) dropped: a node's default (key.c says why) */
            if (tcf_drv.graph_kernel_node_set_attribute(node, n->attr[a].id,
                                                        &n->attr[a].value) != CUDA_SUCCESS)
                goto refused;
        }
        nodes[i] = node;
        prev = node;
    }
    tcf_pp_free(&b);
    *out = g;
    return 0;
refused:
    tcf_pp_free(&b);
    tcf_drv.graph_destroy(g);
    *reason = TCF_RG_node_refused;
    return -1;
}

/* The second instance (tcf_rring 2), from p's graph and shadow; refused, p
 * keeps one. */
static void tcf_rgraph_ring(tcf_rplan_t *p)
{
    CUgraphExec x = NULL;
    uint8_t *sh = tcf_malloc(p->shadow_len ? p->shadow_len : 8);
    if (!sh || tcf_drv.graph_instantiate(&x, p->graph, 0) != CUDA_SUCCESS || !x) {
        free(sh);
        atomic_fetch_add(&tcf_rctr.ring_failed, 1);
        return;
    }
    memcpy(sh, p->shadow, p->shadow_len);
    p->exec1 = x;
    p->shadow1 = sh;
    p->mem *= 2;
    atomic_fetch_add(&tcf_rctr.ring_built, 1);
}

int tcf_rgraph_build(tcf_rplan_t *p, int *reason)
{
    uint8_t **bytes_of = tcf_malloc(p->n * sizeof *bytes_of);
    CUgraphNode *nodes = tcf_malloc(p->n * sizeof *nodes);
    CUgraph g = NULL;
    CUgraphExec x = NULL;
    int rc = -1;
    if (!bytes_of || !nodes) {
        *reason = TCF_RG_out_of_memory;
        goto out;
    }
    for (uint32_t i = 0; i < p->n; i++)
        bytes_of[i] = p->shadow + p->nodes[i].soff;
    if (tcf_rgraph_make(p, bytes_of, &g, nodes, reason) != 0)
        goto out;
    if (tcf_fault(TCF_FAULT_GRAPH_INSTANTIATE) || tcf_drv.graph_instantiate(&x, g, 0) != CUDA_SUCCESS ||
        !x) {
        tcf_drv.graph_destroy(g);
        *reason = TCF_RG_instantiate_failed;
        goto out;
    }
    for (uint32_t i = 0; i < p->n; i++)
        p->nodes[i].node = nodes[i];
    p->graph = g;
    p->exec = x;
    p->mem = tcf_rgraph_mem_estimate(p);
    if (tcf_rring > 1)
        tcf_rgraph_ring(p);
    rc = 0;
out:
    free(bytes_of);
    free(nodes);
    return rc;
}

/* Patching instance *x (shadow *sh) failed: it is brought to this window's bytes by an
 * update from a fresh graph, or else replaced by a new instantiation from it. A new
 * instantiation has other nodes than the graph both instances came from, so the ring's
 * second instance goes with the old graph, and *x, *sh become the new one's (p's only
 * instance). 0, or -1 with *reason. */
static int tcf_rgraph_refresh(tcf_rplan_t *p, CUgraphExec *x_io, uint8_t **sh_io,
                              uint8_t *const *bytes_of, int *reason)
{
    CUgraphNode *nodes = tcf_malloc(p->n * sizeof *nodes);
    CUgraph g = NULL;
    if (!nodes) {
        *reason = TCF_RG_out_of_memory;
        return -1;
    }
    if (tcf_rgraph_make(p, bytes_of, &g, nodes, reason) != 0) {
        free(nodes);
        return -1;
    }
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    if (!tcf_fault(TCF_FAULT_GRAPH_UPDATE) &&
        tcf_drv.graph_exec_update(*x_io, g, &info) == CUDA_SUCCESS) {
        /* The exec's nodes are still those of the graph it was instantiated from. */
        tcf_drv.graph_destroy(g);
        atomic_fetch_add(&tcf_rctr.updates, 1);
    } else {
        CUgraphExec x = NULL;
        if (tcf_fault(TCF_FAULT_GRAPH_INSTANTIATE) ||
            tcf_drv.graph_instantiate(&x, g, 0) != CUDA_SUCCESS || !x) {
            tcf_drv.graph_destroy(g);
            free(nodes);
            *reason = TCF_RG_update_failed;
            return -1;
        }
        tcf_rgraph_destroy(p->graph, p->exec);  /* freed when their last launch completes */
        tcf_rgraph_destroy(NULL, p->exec1);
        free(p->shadow1);
        p->exec1 = NULL, p->shadow1 = NULL;
        p->graph = g;
        p->exec = x;
        for (uint32_t i = 0; i < p->n; i++)
            p->nodes[i].node = nodes[i];
        *x_io = p->exec, *sh_io = p->shadow;
        atomic_fetch_add(&tcf_rctr.reinstantiated, 1);
    }
    free(nodes);
    for (uint32_t i = 0; i < p->n; i++)
        memcpy(*sh_io + p->nodes[i].soff, bytes_of[i], p->nodes[i].sig.pbytes);
    return 0;
}

int tcf_rbytes_room(const tcf_rplan_t *p, const tcf_window_t *w, tcf_rbytes_t *b)
{
    b->bytes_of = b->stack, b->ops = NULL;
    if (w->nops && !(b->ops = tcf_malloc(w->nops * sizeof *b->ops)))
        return -1;
    if (p->n > TCF_R_STACK_NODES && !(b->bytes_of = tcf_malloc(p->n * sizeof *b->bytes_of))) {
        free(b->ops);
        return -1;
    }
    return 0;
}

void tcf_rbytes_free(tcf_rbytes_t *b)
{
    if (b->bytes_of != b->stack)
        free(b->bytes_of);
    free(b->ops);
}

int tcf_rgraph_replay(tcf_rplan_t *p, tcf_window_t *w, int *reason, uint32_t *patched)
{
    tcf_rbytes_t rb;
    if (tcf_rbytes_room(p, w, &rb) != 0)
        return -1;
    uint8_t **bytes_of = rb.bytes_of, (*ops)[TCF_R_OP_BYTES] = rb.ops;
    uint64_t stream = 0;
    uint32_t j = 0, o = 0;
    for (uint32_t i = 0; i < w->nev && j < p->n; i++) {
        const tcf_event_t *e = &w->ev[i];
        if (!tcf_revent_node(e) || !e->held)
            continue;
        if (!j)
            stream = e->stream;
        if (e->kind == TCF_EV_LAUNCH)
            bytes_of[j++] = w->arena + e->u.l.poff;
        else if (o < w->nops)
            bytes_of[j++] = (uint8_t *)tcf_revent_bytes(w, e, ops[o++]);
    }
    int rc = -1;
    *patched = 0;
    if (j == p->n)   /* else not this graph's window (the caller checked; never here) */
        rc = tcf_rgraph_run(p, w, bytes_of, stream, reason, patched);
    tcf_rbytes_free(&rb);
    return rc;
}

/* Whether the new bytes b of node n differ from its shadow sh only in bytes its kernel never
 * reads (exec's tcf_exec_reads: a mask kept with the kernel, 0xff where it may read, for
 * the shadow's calculator dims and the node's grid). */
static int tcf_rnode_unread_only(const tcf_rnode_t *n, const uint8_t *sh, const uint8_t *b)
{
    const uint8_t *rd = n->k ? tcf_exec_reads(n->k, sh, n->sig.pbytes, n->sig.grid) : NULL;
    return rd && tcf_exec_reads_same(sh, b, rd, n->sig.pbytes);
}

/* With stats on, a replay's driver time, summed over its calls and added once: patches of
 * kernel nodes (ns), of memset and copy nodes (ns, how many), the graph's launch (ns); and
 * the nodes it patched, for its key. */
typedef struct {
    uint64_t kernel, op, nop, launch, unread;
} tcf_rtimes_t;

static void tcf_rtimes_add(tcf_rplan_t *p, const tcf_rtimes_t *t, uint32_t patched)
{
    atomic_fetch_add_explicit(&tcf_rctr.patch_kernel_ns, t->kernel, memory_order_relaxed);
    atomic_fetch_add_explicit(&tcf_rctr.patch_op_ns, t->op, memory_order_relaxed);
    atomic_fetch_add_explicit(&tcf_rctr.patched_ops, t->nop, memory_order_relaxed);
    atomic_fetch_add_explicit(&tcf_rctr.launch_ns, t->launch, memory_order_relaxed);
    atomic_fetch_add_explicit(&tcf_rctr.patched_unread, t->unread, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->patch_ns, t->kernel + t->op, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->launch_ns, t->launch, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->patched_nodes, patched, memory_order_relaxed);
}

/* Whether w holds a free (issued after its graph's launch, on this thread). */
static int tcf_rwindow_frees(const tcf_window_t *w)
{
    for (uint32_t i = 0; i < w->nev; i++)
        if (w->ev[i].held && w->ev[i].kind == TCF_EV_FREE)
            return 1;
    return 0;
}

void tcf_rgraph_issue_nodes(const tcf_rplan_t *p, const uint8_t *shadow, uint64_t stream)
{
    tcf_pp_t b = { .pp = NULL };
    void *ex[5];
    size_t exsize;
    CUstream s = (CUstream)(uintptr_t)stream;
    for (uint32_t i = 0; i < p->n; i++) {
        const tcf_rnode_t *n = &p->nodes[i];
        uint8_t *bytes = (uint8_t *)(uintptr_t)(shadow + n->soff);
        CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
        if (tcf_rnode_is_op(n)) {
            uint64_t dst, second, count = tcf_rop_fields(&n->sig, bytes, &dst, &second);
            rc = tcf_rissue_memop(n->sig.kind == TCF_R_KIND_MEMCPY, dst, second, n->sig.grid[0],
                                  count, s);
        } else {
            CUDA_KERNEL_NODE_PARAMS np;
            void **pp = tcf_pp_for(&b, n->k);
            if (pp) {
                tcf_rnode_params(&n->sig, n->k, p->ctx, bytes, pp, ex, &exsize, &np);
                /* a CUkernel launches as the context's function (cudart's handles) */
                rc = tcf_rissue_kernel(np.func ? np.func : (CUfunction)(void *)np.kern,
                                       n->sig.grid, n->sig.block, n->sig.smem, s,
                                       np.kernelParams, np.extra, n->attr, n->nattr);
            }
        }
        if (rc != CUDA_SUCCESS)
            atomic_fetch_add(&tcf_rctr.held_failed, 1);
    }
    tcf_pp_free(&b);
}

int tcf_rgraph_run(tcf_rplan_t *p, tcf_window_t *w, uint8_t *const *bytes_of, uint64_t stream,
                   int *reason, uint32_t *patched)
{
    *patched = 0;
    tcf_pp_t b = { .pp = NULL };
    void *ex[5];
    size_t exsize;
    int failed = 0, timed = tcf_cfg.stats;
    tcf_rtimes_t tm = { 0 };
    /* whose turn: replays counts the key's replays that ran (flush.c), this one's not yet;
     * which instance a rebuilt graph starts with does not matter, both hold its window */
    int second = p->exec1 && (p->replays & 1);
    CUgraphExec x = second ? p->exec1 : p->exec;
    uint8_t *shadow = second ? p->shadow1 : p->shadow;
    int waited = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        tcf_rnode_t *n = &p->nodes[i];
        uint8_t *sh = shadow + n->soff;
        if (!memcmp(sh, bytes_of[i], n->sig.pbytes))
            continue;
        if (!waited) {   /* a queued launch of this instance reads its nodes and shadow */
            tcf_rlauncher_drain();
            waited = 1;
        }
        if (tcf_rnode_is_op(n)) {
            CUDA_MEMSET_NODE_PARAMS ms;
            CUDA_MEMCPY3D mc;
            tcf_rop_params(&n->sig, bytes_of[i], &ms, &mc);
            CUcontext ctx = (CUcontext)(uintptr_t)p->ctx;
            uint64_t t0 = timed ? tcf_now_ns() : 0;
            if (tcf_fault(TCF_FAULT_GRAPH_PATCH) ||
                (n->sig.kind == TCF_R_KIND_MEMSET
                     ? tcf_drv.graph_exec_memset_node_set_params(x, n->node, &ms, ctx)
                     : tcf_drv.graph_exec_memcpy_node_set_params(x, n->node, &mc, ctx)) !=
                CUDA_SUCCESS) {
                atomic_fetch_add(&tcf_rctr.patch_failed, 1);
                failed = 1;
                break;
            }
            if (timed)
                tm.op += tcf_now_ns() - t0, tm.nop++;
            memcpy(sh, bytes_of[i], n->sig.pbytes);
            (*patched)++;
            continue;
        }
        /* Only bytes its kernel never reads moved: the node runs the same unpatched
         * (TCFUSE_REPLAY_UNREAD). The shadow takes the new bytes all the same (the bytes
         * read are the node's), so that a window that repeats them compares equal. */
        if (tcf_cfg.replay_unread && tcf_rnode_unread_only(n, sh, bytes_of[i])) {
            memcpy(sh, bytes_of[i], n->sig.pbytes);
            tm.unread++;
            continue;
        }
        CUDA_KERNEL_NODE_PARAMS np;
        void **pp = tcf_pp_for(&b, n->k);
        if (!pp) {
            failed = 1;
            break;
        }
        tcf_rnode_params(&n->sig, n->k, p->ctx, bytes_of[i], pp, ex, &exsize, &np);
        uint64_t t0 = timed ? tcf_now_ns() : 0;
        if (tcf_fault(TCF_FAULT_GRAPH_PATCH) ||
            tcf_drv.graph_exec_kernel_node_set_params(x, n->node, &np) != CUDA_SUCCESS) {
            atomic_fetch_add(&tcf_rctr.patch_failed, 1);
            failed = 1;
            break;
        }
        if (timed)
            tm.kernel += tcf_now_ns() - t0;
        memcpy(sh, bytes_of[i], n->sig.pbytes);
        (*patched)++;
    }
    tcf_pp_free(&b);
    if (failed) {
        if (tcf_rgraph_refresh(p, &x, &shadow, bytes_of, reason) != 0)
            return -1;
        *patched = p->n;
    }
    if (tcf_rlauncher_on()) {
        if (!tcf_rwindow_frees(w) && tcf_rlauncher_push(p, x, shadow, stream) == 0) {
            if (timed)
                tcf_rtimes_add(p, &tm, *patched);
            for (uint32_t i = 0; i < w->nev; i++)
                w->ev[i].held = 0;
            return 0;
        }
        atomic_fetch_add_explicit(&tcf_rctr.rl_inline, 1, memory_order_relaxed);
    }
    tcf_rlauncher_drain();   /* launched here: after what is queued */
    uint64_t t0 = timed ? tcf_now_ns() : 0;
    if (tcf_fault(TCF_FAULT_GRAPH_LAUNCH) ||
        tcf_drv.graph_launch(x, (CUstream)(uintptr_t)stream) != CUDA_SUCCESS) {
        *reason = TCF_RG_launch_failed;
        return -1;
    }
    if (timed) {
        tm.launch = tcf_now_ns() - t0;
        tcf_rtimes_add(p, &tm, *patched);
    }
    /* The window's frees after its last kernel: a block may be read until then, and no
     * allocation inside the window can have been handed a block freed inside it (the
     * free had not reached the pool). */
    for (uint32_t i = 0; i < w->nev; i++) {
        tcf_event_t *e = &w->ev[i];
        if (!e->held)
            continue;
        if (e->kind == TCF_EV_FREE) {
            e->rc = tcf_drv.mem_free_async(e->u.m.ptr, (CUstream)(uintptr_t)e->stream);
            if (e->rc != CUDA_SUCCESS)
                atomic_fetch_add(&tcf_rctr.held_failed, 1);
            atomic_fetch_add(&tcf_rctr.frees_after, 1);
        }
        e->held = 0;
    }
    return 0;
}
