/* fakecuda: CUDA graphs and stream capture (see fakecuda.c for the conventions).
 *
 * Graphs hold chains of kernel nodes with a copy of each node's parameter bytes (laid out
 * by the kernel's layout, read from kernelParams or from the `extra` buffer); an
 * instantiated graph (exec) holds its own copy, which cuGraphExecKernelNodeSetParams_v2
 * and cuGraphExecUpdate_v2 change. cuGraphLaunch logs its own line, then one line per
 * node in order, as the device would run them:
 *     cuGraphLaunch.node name=<kernel> kind=... grid=... block=... smem=... stream=0x...
 *         attrs=<id:value,...> params=<hex>,<hex>,... form=graph rc=0
 *     cuGraphLaunch.memset dst=0x... value=N elem=E count=N stream=0x... rc=0
 *     cuGraphLaunch.memcpy dst=0x... src=0x... size=N stream=0x... rc=0
 * so a test compares the kernels and parameter bytes that ran, launched or replayed,
 * line for line. Handles: FK_GRAPH(n), FK_EXEC(n), nodes FK_NODE(graph, index).
 * cuGraphExecKernelNodeSetParams_v2 refuses a node of another graph than the exec's
 * source, or another kernel; cuGraphExecUpdate_v2 refuses a graph of another shape
 * (CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE), as the driver would.
 *
 * FAKECUDA_GRAPH_DELAY_US=N makes every cuGraphLaunch take N microseconds of the host.
 *
 * Stream capture: cuStreamBeginCapture_v2 (and _ptsz, ToGraph) mark the stream capturing
 * (cuStreamIsCapturing reports it), cuStreamEndCapture hands back a new empty graph.
 * Launches on a capturing stream are logged as launches still (nothing runs anyway).
 */
#include "tests/stub/fakecuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FK_GRAPH(n)   ((uintptr_t)0x550800000000ull + (uintptr_t)(n) * 0x100)
#define FK_EXEC(n)    ((uintptr_t)0x550900000000ull + (uintptr_t)(n) * 0x100)
#define FK_NODE(g, i) ((uintptr_t)0x550a00000000ull + (uintptr_t)(g) * 0x1000000 + (uintptr_t)(i) + 1)
#define FK_MAX_GRAPHS 4096

typedef struct {
    int              op;                /* 0 kernel, 1 memset, 2 copy */
    unsigned long long dst, src;        /* memset: dst, value in src; copy: dst, src */
    size_t           count;             /* memset: elements; copy: bytes */
    unsigned         elem;
    const fk_kern_t *k;
    uintptr_t        handle;
    int              is_kernel;
    unsigned         grid[3], block[3], smem;
    unsigned char    bytes[4096];
    size_t           nbytes;
    int              nattr;
    int              attr_id[8];
    long long        attr_v[8];
} fk_node_t;

typedef struct {
    fk_node_t *nodes;
    int        n, cap;
    int        source;  /* exec: the graph it was instantiated from */
    int        live;
} fk_graph_t;

static fk_graph_t fk_graphs[FK_MAX_GRAPHS + 1], fk_execs[FK_MAX_GRAPHS + 1];
static int fk_ngraphs, fk_nexecs;
static unsigned char fk_capturing[FK_MAX_OBJ + 2];   /* by stream number; [0] legacy */

static int fk_handle_index(uintptr_t h, uintptr_t base0, int n)
{
    if (h < base0 + 0x100 || (h - base0) % 0x100)
        return 0;
    uintptr_t i = (h - base0) / 0x100;
    return i <= (uintptr_t)n ? (int)i : 0;
}

static fk_graph_t *fk_graph(CUgraph g, int *idx)
{
    int i = fk_handle_index((uintptr_t)g, FK_GRAPH(0), fk_ngraphs);
    if (idx)
        *idx = i;
    return i && fk_graphs[i].live ? &fk_graphs[i] : NULL;
}

static fk_graph_t *fk_exec(CUgraphExec x)
{
    int i = fk_handle_index((uintptr_t)x, FK_EXEC(0), fk_nexecs);
    return i && fk_execs[i].live ? &fk_execs[i] : NULL;
}

/* Reads a node's parameters into nd; CUDA_ERROR_INVALID_VALUE when they cannot carry
 * the kernel's (the same rule as a launch). */
static CUresult fk_node_set(fk_node_t *nd, const CUDA_KERNEL_NODE_PARAMS *p)
{
    const char *kind;
    uintptr_t h = p->func ? (uintptr_t)p->func : (uintptr_t)p->kern;
    const fk_kern_t *k = fk_launchable((CUfunction)h, &kind);
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!p->func && p->ctx && !fk_ctx_ok(p->ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!p->gridDimX || !p->gridDimY || !p->gridDimZ || !p->blockDimX || !p->blockDimY ||
        !p->blockDimZ || p->blockDimX * p->blockDimY * p->blockDimZ > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    size_t end = k->nparams ? k->off[k->nparams - 1] + k->size[k->nparams - 1] : 0;
    if (end > sizeof nd->bytes)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned char bytes[sizeof nd->bytes];
    memset(bytes, 0, sizeof bytes);
    if (p->kernelParams && p->extra)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->extra) {
        const unsigned char *buf = NULL;
        size_t size = 0;
        for (int i = 0; p->extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2) {
            if (p->extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = p->extra[i + 1];
            else if (p->extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && p->extra[i + 1])
                size = *(size_t *)p->extra[i + 1];
            else
                return CUDA_ERROR_INVALID_VALUE;
        }
        if (k->nparams && (!buf || size < end))
            return CUDA_ERROR_INVALID_VALUE;
        if (end)
            memcpy(bytes, buf, end);
    } else {
        if (k->nparams && !p->kernelParams)
            return CUDA_ERROR_INVALID_VALUE;
        for (int i = 0; i < k->nparams; i++) {
            if (!p->kernelParams[i])
                return CUDA_ERROR_INVALID_VALUE;
            memcpy(bytes + k->off[i], p->kernelParams[i], k->size[i]);
        }
    }
    nd->k = k;
    nd->handle = h;
    nd->is_kernel = !strcmp(kind, "kernel");
    nd->grid[0] = p->gridDimX, nd->grid[1] = p->gridDimY, nd->grid[2] = p->gridDimZ;
    nd->block[0] = p->blockDimX, nd->block[1] = p->blockDimY, nd->block[2] = p->blockDimZ;
    nd->smem = p->sharedMemBytes;
    memcpy(nd->bytes, bytes, end);
    nd->nbytes = end;
    return CUDA_SUCCESS;
}

CUresult cuGraphCreate(CUgraph *g, unsigned int flags)
{
    CUresult rc = fk_injected("cuGraphCreate");
    uintptr_t h = 0;
    if (!rc && (!g || flags))
        rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fk_mu);
    if (!rc && fk_ngraphs == FK_MAX_GRAPHS)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (!rc) {
        int i = ++fk_ngraphs;
        memset(&fk_graphs[i], 0, sizeof fk_graphs[i]);
        fk_graphs[i].live = 1;
        h = FK_GRAPH(i);
        *g = (CUgraph)h;
    }
    pthread_mutex_unlock(&fk_mu);
    if (!fk_fast)
        fk_log(0, "cuGraphCreate", rc, "graph=0x%lx", (unsigned long)h);
    return rc;
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                 size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult rc = fk_injected("cuGraphAddKernelNode_v2");
    int gi = 0;
    uintptr_t h = 0;
    pthread_mutex_lock(&fk_mu);
    fk_graph_t *gr = fk_graph(g, &gi);
    if (!rc && (!node || !p || (ndeps && !deps)))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && !gr)
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && gr->n == gr->cap) {
        int cap = gr->cap ? gr->cap * 2 : 16;
        fk_node_t *nn = realloc(gr->nodes, (size_t)cap * sizeof *nn);
        if (!nn)
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        else
            gr->nodes = nn, gr->cap = cap;
    }
    if (!rc) {
        fk_node_t *nd = &gr->nodes[gr->n];
        memset(nd, 0, sizeof *nd);
        rc = fk_node_set(nd, p);
    }
    if (!rc) {
        h = FK_NODE(gi, gr->n);
        gr->n++;
        *node = (CUgraphNode)h;
    }
    pthread_mutex_unlock(&fk_mu);
    if (!fk_fast)
        fk_log(0, "cuGraphAddKernelNode_v2", rc, "graph=0x%lx node=0x%lx deps=%zu",
               (unsigned long)(uintptr_t)g, (unsigned long)h, ndeps);
    return rc;
}

/* Reads a memset node's or a copy node's parameters into nd, as the driver checks them. */
static CUresult fk_op_set(fk_node_t *nd, const CUDA_MEMSET_NODE_PARAMS *ms, const CUDA_MEMCPY3D *mc,
                          CUcontext ctx)
{
    if (ctx && !fk_ctx_ok(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    memset(nd, 0, sizeof *nd);
    if (ms) {
        if ((ms->elementSize != 1 && ms->elementSize != 2 && ms->elementSize != 4) ||
            ms->height != 1 || !ms->width || !fk_devptr_ok(ms->dst, ms->width * ms->elementSize))
            return CUDA_ERROR_INVALID_VALUE;
        nd->op = 1, nd->dst = ms->dst, nd->src = ms->value, nd->elem = ms->elementSize;
        nd->count = ms->width;
    } else {
        if (mc->srcMemoryType != CU_MEMORYTYPE_DEVICE || mc->dstMemoryType != CU_MEMORYTYPE_DEVICE ||
            mc->Height != 1 || mc->Depth != 1 || !fk_devptr_ok(mc->dstDevice, mc->WidthInBytes) ||
            !fk_devptr_ok(mc->srcDevice, mc->WidthInBytes))
            return CUDA_ERROR_INVALID_VALUE;
        nd->op = 2, nd->dst = mc->dstDevice, nd->src = mc->srcDevice, nd->count = mc->WidthInBytes;
    }
    return CUDA_SUCCESS;
}

static CUresult fk_add_op(const char *abi, CUgraphNode *node, CUgraph g, size_t ndeps,
                          const CUgraphNode *deps, const CUDA_MEMSET_NODE_PARAMS *ms,
                          const CUDA_MEMCPY3D *mc, CUcontext ctx)
{
    CUresult rc = fk_injected(abi);
    int gi = 0;
    uintptr_t h = 0;
    fk_node_t nd;
    if (!rc && (!node || (!ms && !mc) || (ndeps && !deps)))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        rc = fk_op_set(&nd, ms, mc, ctx);   /* before fk_mu: it checks pointers under it */
    pthread_mutex_lock(&fk_mu);
    fk_graph_t *gr = fk_graph(g, &gi);
    if (!rc && !gr)
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && gr->n == gr->cap) {
        int cap = gr->cap ? gr->cap * 2 : 16;
        fk_node_t *nn = realloc(gr->nodes, (size_t)cap * sizeof *nn);
        if (!nn)
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        else
            gr->nodes = nn, gr->cap = cap;
    }
    if (!rc) {
        gr->nodes[gr->n] = nd;
        h = FK_NODE(gi, gr->n);
        gr->n++;
        *node = (CUgraphNode)h;
    }
    pthread_mutex_unlock(&fk_mu);
    if (!fk_fast)
        fk_log(0, abi, rc, "graph=0x%lx node=0x%lx deps=%zu", (unsigned long)(uintptr_t)g,
               (unsigned long)h, ndeps);
    return rc;
}

CUresult cuGraphAddMemsetNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                              const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    return fk_add_op("cuGraphAddMemsetNode", node, g, ndeps, deps, p, NULL, ctx);
}

CUresult cuGraphAddMemcpyNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                              const CUDA_MEMCPY3D *p, CUcontext ctx)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    return fk_add_op("cuGraphAddMemcpyNode", node, g, ndeps, deps, NULL, p, ctx);
}

/* The node behind a handle, in graph gi's nodes. */
static fk_node_t *fk_node(CUgraphNode n, int *gi, int *ni)
{
    uintptr_t v = (uintptr_t)n;
    if (v <= FK_NODE(0, 0) - 1)
        return NULL;
    v -= FK_NODE(0, 0);
    *gi = (int)(v / 0x1000000);
    *ni = (int)(v % 0x1000000);
    if (*gi < 1 || *gi > fk_ngraphs || !fk_graphs[*gi].live || *ni >= fk_graphs[*gi].n)
        return NULL;
    return &fk_graphs[*gi].nodes[*ni];
}

CUresult cuGraphKernelNodeSetAttribute(CUgraphNode n, CUkernelNodeAttrID id,
                                       const CUkernelNodeAttrValue *v)
{
    CUresult rc = fk_injected("cuGraphKernelNodeSetAttribute");
    int gi, ni;
    long long val = 0;
    pthread_mutex_lock(&fk_mu);
    fk_node_t *nd = fk_node(n, &gi, &ni);
    if (!rc && (!nd || !v))
        rc = !v ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
    if (!rc) {
        if (id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            val = (long long)v->clusterDim.x * 10000 + v->clusterDim.y * 100 + v->clusterDim.z;
        else if (id == CU_LAUNCH_ATTRIBUTE_PRIORITY)
            val = v->priority;
        else if (id == CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)
            val = v->clusterSchedulingPolicyPreference;
        else
            rc = CUDA_ERROR_INVALID_VALUE;
    }
    if (!rc && nd->nattr < 8) {
        nd->attr_id[nd->nattr] = (int)id;
        nd->attr_v[nd->nattr] = val;
        nd->nattr++;
    }
    pthread_mutex_unlock(&fk_mu);
    if (!fk_fast)
        fk_log(0, "cuGraphKernelNodeSetAttribute", rc, "node=0x%lx attr=%d value=%lld",
               (unsigned long)(uintptr_t)n, (int)id, val);
    return rc;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *x, CUgraph g, unsigned long long flags)
{
    CUresult rc = fk_need_ctx(fk_injected("cuGraphInstantiateWithFlags"));
    int gi = 0;
    uintptr_t h = 0;
    pthread_mutex_lock(&fk_mu);
    fk_graph_t *gr = fk_graph(g, &gi);
    if (!rc && !x)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && !gr)
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && fk_nexecs == FK_MAX_GRAPHS)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (!rc) {
        int i = ++fk_nexecs;
        fk_graph_t *e = &fk_execs[i];
        memset(e, 0, sizeof *e);
        e->nodes = malloc((size_t)(gr->n ? gr->n : 1) * sizeof *e->nodes);
        if (!e->nodes) {
            fk_nexecs--;
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            memcpy(e->nodes, gr->nodes, (size_t)gr->n * sizeof *e->nodes);
            e->n = e->cap = gr->n;
            e->source = gi;
            e->live = 1;
            h = FK_EXEC(i);
            *x = (CUgraphExec)h;
        }
    }
    pthread_mutex_unlock(&fk_mu);
    if (!fk_fast)
        fk_log(0, "cuGraphInstantiateWithFlags", rc, "graph=0x%lx exec=0x%lx nodes=%d flags=%llu",
               (unsigned long)(uintptr_t)g, (unsigned long)h, gr ? gr->n : 0, flags);
    return rc;
}

CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec x, CUgraphNode n,
                                           const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult rc = fk_injected("cuGraphExecKernelNodeSetParams_v2");
    int gi = 0, ni = 0;
    char hex[1024] = "";
    pthread_mutex_lock(&fk_mu);
    fk_graph_t *e = fk_exec(x);
    fk_node_t *src = fk_node(n, &gi, &ni);
    if (!rc && !p)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && (!e || !src || e->source != gi || ni >= e->n))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && e->nodes[ni].op)
        rc = CUDA_ERROR_INVALID_VALUE;   /* not a kernel node */
    if (!rc) {
        fk_node_t nd = e->nodes[ni];
        rc = fk_node_set(&nd, p);
        if (!rc && nd.handle != e->nodes[ni].handle)
            rc = CUDA_ERROR_INVALID_VALUE;   /* another kernel */
        if (!rc) {
            e->nodes[ni] = nd;
            if (!fk_fast)
                fk_hex(hex, sizeof hex, nd.bytes, nd.nbytes);
        }
    }
    pthread_mutex_unlock(&fk_mu);
    if (!fk_fast)
        fk_log(0, "cuGraphExecKernelNodeSetParams_v2", rc, "exec=0x%lx node=0x%lx bytes=%s",
               (unsigned long)(uintptr_t)x, (unsigned long)(uintptr_t)n, hex);
    return rc;
}

static CUresult fk_exec_op_set(const char *abi, CUgraphExec x, CUgraphNode n,
                               const CUDA_MEMSET_NODE_PARAMS *ms, const CUDA_MEMCPY3D *mc,
                               CUcontext ctx)
{
    CUresult rc = fk_injected(abi);
    int gi = 0, ni = 0;
    fk_node_t nd;
    if (!rc && !ms && !mc)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        rc = fk_op_set(&nd, ms, mc, ctx);   /* before fk_mu, as above */
    pthread_mutex_lock(&fk_mu);
    fk_graph_t *e = fk_exec(x);
    fk_node_t *src = fk_node(n, &gi, &ni);
    if (!rc && (!e || !src || e->source != gi || ni >= e->n))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc) {
        /* the kind, element size and count of a node stay what they were */
        if (!rc && (nd.op != e->nodes[ni].op || nd.elem != e->nodes[ni].elem ||
                    nd.count != e->nodes[ni].count))
            rc = CUDA_ERROR_INVALID_VALUE;
        if (!rc)
            e->nodes[ni] = nd;
    }
    pthread_mutex_unlock(&fk_mu);
    if (!fk_fast)
        fk_log(0, abi, rc, "exec=0x%lx node=0x%lx", (unsigned long)(uintptr_t)x,
               (unsigned long)(uintptr_t)n);
    return rc;
}

CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec x, CUgraphNode n,
                                        const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    return fk_exec_op_set("cuGraphExecMemsetNodeSetParams", x, n, p, NULL, ctx);
}

CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec x, CUgraphNode n, const CUDA_MEMCPY3D *p,
                                        CUcontext ctx)
{
    return fk_exec_op_set("cuGraphExecMemcpyNodeSetParams", x, n, NULL, p, ctx);
}

CUresult cuGraphExecUpdate_v2(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
    CUresult rc = fk_injected("cuGraphExecUpdate_v2");
    pthread_mutex_lock(&fk_mu);
    fk_graph_t *e = fk_exec(x), *gr = fk_graph(g, NULL);
    if (!rc && (!e || !gr))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && gr->n != e->n)
        rc = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    for (int i = 0; !rc && i < gr->n; i++)
        if (gr->nodes[i].handle != e->nodes[i].handle || gr->nodes[i].op != e->nodes[i].op ||
            gr->nodes[i].count != e->nodes[i].count)
            rc = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    if (!rc)
        memcpy(e->nodes, gr->nodes, (size_t)gr->n * sizeof *e->nodes);
    if (info) {
        memset(info, 0, sizeof *info);
        info->result = rc ? CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED : CU_GRAPH_EXEC_UPDATE_SUCCESS;
    }
    pthread_mutex_unlock(&fk_mu);
    if (!fk_fast)
        fk_log(0, "cuGraphExecUpdate_v2", rc, "exec=0x%lx graph=0x%lx",
               (unsigned long)(uintptr_t)x, (unsigned long)(uintptr_t)g);
    return rc;
}

static CUresult fk_graph_launch(const char *abi, CUgraphExec x, CUstream s)
{
    CUresult rc = fk_need_ctx(fk_injected(abi));
    /* FAKECUDA_GRAPH_DELAY_US: a graph launch that costs the host that long (a replay
     * that does not pay). */
    static long delay = -1;
    if (delay < 0) {
        const char *d = getenv("FAKECUDA_GRAPH_DELAY_US");
        delay = d ? atol(d) : 0;
    }
    if (delay > 0)
        usleep((useconds_t)delay);
    if (fk_fast && !rc)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&fk_mu);
    fk_graph_t *e = fk_exec(x);
    if (!rc && (!e || !fk_stream_ok(s)))
        rc = CUDA_ERROR_INVALID_HANDLE;
    int n = !rc ? e->n : 0;
    fk_node_t *copy = n ? malloc((size_t)n * sizeof *copy) : NULL;
    if (n && !copy)
        rc = CUDA_ERROR_OUT_OF_MEMORY, n = 0;
    if (n)
        memcpy(copy, e->nodes, (size_t)n * sizeof *copy);
    pthread_mutex_unlock(&fk_mu);
    fk_log(0, abi, rc, "exec=0x%lx stream=0x%lx nodes=%d", (unsigned long)(uintptr_t)x,
           (unsigned long)(uintptr_t)s, n);
    for (int i = 0; i < n; i++) {
        const fk_node_t *nd = &copy[i];
        if (nd->op == 1) {
            fk_log(0, "cuGraphLaunch.memset", CUDA_SUCCESS,
                   "dst=0x%llx value=%llu elem=%u count=%zu stream=0x%lx", nd->dst, nd->src,
                   nd->elem, nd->count, (unsigned long)(uintptr_t)s);
            continue;
        }
        if (nd->op == 2) {
            fk_log(0, "cuGraphLaunch.memcpy", CUDA_SUCCESS, "dst=0x%llx src=0x%llx size=%zu stream=0x%lx",
                   nd->dst, nd->src, nd->count, (unsigned long)(uintptr_t)s);
            continue;
        }
        char pbuf[4096], attrs[160] = "";
        size_t o = (size_t)snprintf(pbuf, sizeof pbuf, "params=");
        for (int j = 0; j < nd->k->nparams && o + 2 < sizeof pbuf; j++) {
            if (j)
                pbuf[o++] = ',';
            fk_hex(pbuf + o, sizeof pbuf - o, nd->bytes + nd->k->off[j], nd->k->size[j]);
            o += strlen(pbuf + o);
        }
        for (int a = 0, ao = 0; a < nd->nattr && ao + 24 < (int)sizeof attrs; a++)
            ao += snprintf(attrs + ao, sizeof attrs - (size_t)ao, "%s%d:%lld", a ? "," : " attrs=",
                           nd->attr_id[a], nd->attr_v[a]);
        fk_log(0, "cuGraphLaunch.node", CUDA_SUCCESS,
               "name=%s kind=%s grid=%u,%u,%u block=%u,%u,%u smem=%u stream=0x%lx%s %s form=graph",
               nd->k->name, nd->is_kernel ? "kernel" : "function", nd->grid[0], nd->grid[1],
               nd->grid[2], nd->block[0], nd->block[1], nd->block[2], nd->smem,
               (unsigned long)(uintptr_t)s, attrs, pbuf);
    }
    free(copy);
    return rc;
}
CUresult cuGraphLaunch(CUgraphExec x, CUstream s) { return fk_graph_launch("cuGraphLaunch", x, s); }
CUresult cuGraphLaunch_ptsz(CUgraphExec x, CUstream s) { return fk_graph_launch("cuGraphLaunch_ptsz", x, s); }

CUresult cuGraphExecDestroy(CUgraphExec x)
{
    CUresult rc = fk_injected("cuGraphExecDestroy");
    pthread_mutex_lock(&fk_mu);
    fk_graph_t *e = fk_exec(x);
    if (!rc && !e)
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc) {
        free(e->nodes);
        memset(e, 0, sizeof *e);
    }
    pthread_mutex_unlock(&fk_mu);
    if (!fk_fast)
        fk_log(0, "cuGraphExecDestroy", rc, "exec=0x%lx", (unsigned long)(uintptr_t)x);
    return rc;
}

CUresult cuGraphDestroy(CUgraph g)
{
    CUresult rc = fk_injected("cuGraphDestroy");
    pthread_mutex_lock(&fk_mu);
    fk_graph_t *gr = fk_graph(g, NULL);
    if (!rc && !gr)
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc) {
        free(gr->nodes);
        gr->nodes = NULL;
        gr->live = 0;   /* its index is never reused: node handles stay unambiguous */
    }
    pthread_mutex_unlock(&fk_mu);
    if (!fk_fast)
        fk_log(0, "cuGraphDestroy", rc, "graph=0x%lx", (unsigned long)(uintptr_t)g);
    return rc;
}

/* ---- stream capture ----------------------------------------------------------------- */

static int fk_stream_no(CUstream s)
{
    uintptr_t v = (uintptr_t)s;
    if (v == 0 || v == (uintptr_t)CU_STREAM_LEGACY || v == (uintptr_t)CU_STREAM_PER_THREAD)
        return 0;
    return (int)((v - FK_STREAM(0)) / 0x100);
}

int fk_stream_capturing(CUstream s)
{
    return fk_stream_ok(s) && fk_capturing[fk_stream_no(s)];
}

static CUresult fk_begin(const char *abi, CUstream s, int mode)
{
    CUresult rc = fk_need_ctx(fk_injected(abi));
    pthread_mutex_lock(&fk_mu);
    if (!rc && !fk_stream_ok(s))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (!rc && fk_capturing[fk_stream_no(s)])
        rc = CUDA_ERROR_ILLEGAL_STATE;
    if (!rc)
        fk_capturing[fk_stream_no(s)] = 1;
    pthread_mutex_unlock(&fk_mu);
    fk_log(0, abi, rc, "stream=0x%lx mode=%d", (unsigned long)(uintptr_t)s, mode);
    return rc;
}
CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode m)
{
    return fk_begin("cuStreamBeginCapture_v2", s, (int)m);
}
CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode m)
{
    return fk_begin("cuStreamBeginCapture_v2_ptsz", s, (int)m);
}
CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *d,
                                     const CUgraphEdgeData *e, size_t n, CUstreamCaptureMode m)
{
    (void)g, (void)d, (void)e, (void)n;
    return fk_begin("cuStreamBeginCaptureToGraph", s, (int)m);
}
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *d,
                                          const CUgraphEdgeData *e, size_t n,
                                          CUstreamCaptureMode m)
{
    (void)g, (void)d, (void)e, (void)n;
    return fk_begin("cuStreamBeginCaptureToGraph_ptsz", s, (int)m);
}

static CUresult fk_end(const char *abi, CUstream s, CUgraph *g)
{
    CUresult rc = fk_need_ctx(fk_injected(abi));
    pthread_mutex_lock(&fk_mu);
    if (!rc && (!fk_stream_ok(s) || !g))
        rc = !g ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
    if (!rc && !fk_capturing[fk_stream_no(s)])
        rc = CUDA_ERROR_ILLEGAL_STATE;
    if (!rc)
        fk_capturing[fk_stream_no(s)] = 0;
    pthread_mutex_unlock(&fk_mu);
    if (!rc)
        rc = cuGraphCreate(g, 0);
    fk_log(0, abi, rc, "stream=0x%lx graph=0x%lx", (unsigned long)(uintptr_t)s,
           (unsigned long)(uintptr_t)(rc ? NULL : *g));
    return rc;
}
CUresult cuStreamEndCapture(CUstream s, CUgraph *g) { return fk_end("cuStreamEndCapture", s, g); }
CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g) { return fk_end("cuStreamEndCapture_ptsz", s, g); }
