/* Replay keys: a window's key is its seed (context, stream, and how many windows were cut
 * on that stream since its last boundary) folded with each launch's signature: kernel
 * handle, grid, block, shared memory, parameter size and form, and the launch attributes
 * a node carries. Parameter values are not in it: they are patched into the graph's
 * nodes. The seed's ordinal gives each window of a long sequence (a 1000-launch loop cut
 * every 32) its own graph, so that a node is patched only where its own bytes changed
 * since the last iteration, not where its neighbour's differ.
 *
 * The key is folded launch by launch, so a held window knows its key so far at every
 * launch, and the prefix set says whether any ready graph's key continues from it. */
#include <string.h>

#include "replay/internal.h"

const char tcf_r_cut_unsupported[] = "replay-cut:unsupported-launch";
const char tcf_r_cut_after[] = "replay-cut:after-unsupported";

const char *const tcf_rn_names[TCF_RN__COUNT] = {
    [TCF_RN_OK] = "ok", [TCF_RN_PTDS] = "per-thread-stream", [TCF_RN_ATTR] = "attribute",
    [TCF_RN_PARAMS] = "params-unknown", [TCF_RN_KERNEL] = "kernel-unknown",
    [TCF_RN_TOO_MANY_ATTRS] = "too-many-attributes", [TCF_RN_COLLECTIVE] = "collective",
};

int tcf_r_is_cut(const char *reason)
{
    return reason == tcf_r_cut_unsupported || reason == tcf_r_cut_after ||
           !strcmp(reason, "size-cap");
}

static inline uint64_t tcf_rmix(uint64_t h, uint64_t v)
{
    h ^= v * 0x9E3779B97F4A7C15ull;
    h = (h << 31) | (h >> 33);
    return h * 0xC2B2AE3D27D4EB4Full + 0x165667B19E3779F9ull;
}

uint64_t tcf_rkey_seed(uint64_t ctx, uint64_t stream, uint32_t ord)
{
    return tcf_rmix(tcf_rmix(tcf_rmix(0x7265706c6179ull, ctx), stream), ord);
}

/* A window cut shorter than the cap (slow start, hold.c) has a key of its own: a window
 * after another boundary, cut at the cap, may begin with the same launches, and must not
 * find the short window's key complete at its fourth launch and hold on, only to leave
 * the graph's path at its fifth. */
uint64_t tcf_rkey_capped(uint64_t seed, uint32_t cap)
{
    return tcf_rmix(seed, 0x736c6f77ull << 32 | cap);
}

uint64_t tcf_rkey_step(uint64_t h, const tcf_rsig_t *s)
{
    h = tcf_rmix(h, s->handle);
    h = tcf_rmix(h, s->attrs);
    h = tcf_rmix(h, s->grid[0] | (uint64_t)s->grid[1] << 32);
    h = tcf_rmix(h, s->grid[2] | (uint64_t)s->block[0] << 32);
    h = tcf_rmix(h, s->block[1] | (uint64_t)s->block[2] << 32);
    h = tcf_rmix(h, s->smem | (uint64_t)s->pbytes << 32);
    return tcf_rmix(h, s->form | (uint64_t)s->kind << 32);
}

/* Attributes a kernel node carries as the launch did: cluster shape and scheduling,
 * priority. A cooperative launch changes how the launch runs (a node does not carry it
 * as a launch does): refused unless off. Programmatic stream serialization (PDL, which
 * cuDNN's and flash attention's kernels ask for) only lets the kernel start before the
 * one ahead of it has finished, and such a kernel waits (griddepcontrol.wait) before
 * reading what that one wrote: a node without it starts after, and computes the same
 * bytes. So the node drops it (graph.c), and it is kept in the digest: the key says the
 * launch asked for it. */
int tcf_rattrs_ok(const CUlaunchAttribute *a, unsigned n, uint64_t *digest, int *bad)
{
    uint64_t d = 0;
    for (unsigned i = 0; i < n; i++) {
        uint64_t w[2] = { 0, 0 };
        switch (a[i].id) {
        case CU_LAUNCH_ATTRIBUTE_IGNORE:
            continue;
        case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
            if (a[i].value.cooperative)
                goto refuse;
            continue;
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
            if (!a[i].value.programmaticStreamSerializationAllowed)
                continue;
            w[0] = 1;
            break;
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
            w[0] = a[i].value.clusterDim.x | (uint64_t)a[i].value.clusterDim.y << 32;
            w[1] = a[i].value.clusterDim.z;
            break;
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
            w[0] = (uint64_t)a[i].value.clusterSchedulingPolicyPreference;
            break;
        case CU_LAUNCH_ATTRIBUTE_PRIORITY:
            w[0] = (uint64_t)(uint32_t)a[i].value.priority;
            break;
        default:
            goto refuse;
        }
        d = tcf_rmix(tcf_rmix(tcf_rmix(d ? d : 1, (uint64_t)a[i].id), w[0]), w[1]);
        continue;
    refuse:
        if (bad)
            *bad = (int)a[i].id;
        return 0;
    }
    *digest = d;
    return 1;
}

int tcf_rsig_of_launch(const tcf_window_t *w, const tcf_launch_t *l, tcf_rsig_t *s,
                       int *bad_attr)
{
    memset(s, 0, sizeof *s);
    /* The per-thread default stream is the calling thread's: held work issued later by
     * another thread (a boundary closes every window) would land on that thread's. */
    if (w->stream == (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD)
        return TCF_RN_PTDS;
    const tcf_kernel_t *k = l->k;
    if (k->kind != TCF_KIND_KERNEL && k->kind != TCF_KIND_FUNCTION)
        return TCF_RN_KERNEL;
    if (k->collective)
        return TCF_RN_COLLECTIVE;   /* recognize.h: tcf_kernel_collective */
    if (l->params && l->extra)
        return TCF_RN_PARAMS;   /* the driver refuses it: let it say so */
    uint32_t pb = tcf_launch_param_bytes(l);
    if ((l->params && !k->param_known) || (!l->params && l->extra && !pb) ||
        (!l->params && !l->extra && !(k->param_known && k->param_bytes == 0)))
        return TCF_RN_PARAMS;
    if (l->nattrs > TCF_ATTRS_MAX)
        return TCF_RN_TOO_MANY_ATTRS;
    if (l->nattrs && !tcf_rattrs_ok(l->attrs, l->nattrs, &s->attrs, bad_attr))
        return TCF_RN_ATTR;
    s->handle = k->handle;
    s->kind = k->kind;
    memcpy(s->grid, l->grid, sizeof s->grid);
    memcpy(s->block, l->block, sizeof s->block);
    s->smem = l->smem;
    s->pbytes = pb;
    /* As tcf_rsig_of_event reads it back: an extra buffer the size of the kernel's
     * layout is its parameters at their offsets, the same launch as kernelParams. */
    s->form = k->param_known && pb == k->param_bytes ? TCF_R_FORM_PARAMS : TCF_R_FORM_EXTRA;
    return TCF_RN_OK;
}

void tcf_rsig_of_op(int kind, unsigned elem, uint64_t count, tcf_rsig_t *s)
{
    memset(s, 0, sizeof *s);
    s->kind = (uint32_t)kind;
    s->grid[0] = elem;
    s->grid[1] = (uint32_t)count, s->grid[2] = (uint32_t)(count >> 32);
    s->pbytes = TCF_R_OP_BYTES;
}

const uint8_t *tcf_revent_bytes(const tcf_window_t *w, const tcf_event_t *e,
                                uint8_t op[TCF_R_OP_BYTES])
{
    if (e->kind == TCF_EV_LAUNCH)
        return w->arena + e->u.l.poff;
    uint64_t second = e->kind == TCF_EV_MEMSET ? e->u.op.value : e->u.op.src;
    memcpy(op, &e->u.op.dst, 8);
    memcpy(op + 8, &second, 8);
    return op;
}

int tcf_rsig_of_event(const tcf_window_t *w, const tcf_event_t *e, tcf_rsig_t *s)
{
    memset(s, 0, sizeof *s);
    if (w->stream == (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD)
        return TCF_RN_PTDS;
    if (e->kind == TCF_EV_MEMSET || e->kind == TCF_EV_MEMCPY) {
        tcf_rsig_of_op(e->kind == TCF_EV_MEMSET ? TCF_R_KIND_MEMSET : TCF_R_KIND_MEMCPY,
                       e->kind == TCF_EV_MEMSET ? e->u.op.elem : 0, e->u.op.count, s);
        return TCF_RN_OK;
    }
    const tcf_kernel_t *k = e->u.l.k;
    if (k->kind != TCF_KIND_KERNEL && k->kind != TCF_KIND_FUNCTION)
        return TCF_RN_KERNEL;
    /* Copied bytes are either the layout's (params form) or the extra buffer's. */
    int form = TCF_R_FORM_PARAMS;
    if (!k->param_known || e->u.l.pbytes != k->param_bytes) {
        if (!e->u.l.pbytes)
            return TCF_RN_PARAMS;   /* a layout unknown, or an extra buffer unread */
        form = TCF_R_FORM_EXTRA;
    }
    if (e->u.l.nattr >= TCF_ATTRS_MAX)
        return TCF_RN_TOO_MANY_ATTRS;
    if (e->u.l.nattr && !tcf_rattrs_ok(tcf_event_attrs(w, e), e->u.l.nattr, &s->attrs, NULL))
        return TCF_RN_ATTR;
    s->handle = k->handle;
    s->kind = k->kind;
    memcpy(s->grid, e->u.l.grid, sizeof s->grid);
    memcpy(s->block, e->u.l.block, sizeof s->block);
    s->smem = e->u.l.smem;
    s->pbytes = e->u.l.pbytes;
    s->form = (uint32_t)form;
    return TCF_RN_OK;
}

/* --- the prefix set ------------------------------------------------------------------ */
_Atomic uint64_t tcf_rprefix[1u << TCF_RPREFIX_BITS];

int tcf_rprefix_add(uint64_t h)
{
    h |= 1;
    unsigned i = (unsigned)((h * 0x9E3779B97F4A7C15ull) >> (64 - TCF_RPREFIX_BITS));
    for (int p = 0; p < TCF_RPREFIX_PROBE; p++, i = (i + 1) & ((1u << TCF_RPREFIX_BITS) - 1)) {
        uint64_t v = atomic_load_explicit(&tcf_rprefix[i], memory_order_relaxed);
        if (v == h)
            return 0;
        if (!v) {
            atomic_store_explicit(&tcf_rprefix[i], h, memory_order_relaxed);
            return 0;
        }
    }
    return -1;
}

void tcf_rprefix_clear(void)
{
    for (unsigned i = 0; i < (1u << TCF_RPREFIX_BITS); i++)
        atomic_store_explicit(&tcf_rprefix[i], 0, memory_order_relaxed);
}
