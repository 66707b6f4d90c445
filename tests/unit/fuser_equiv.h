/* A planned group against the launches it replaces, by dataflow: every element's value is
 * a hash of the op that made it and the values it read, so that two runs agree exactly
 * when each value was computed by the same ops from the same sources. Used by
 * test_fuser on every recorded trace, where no GPU runs the kernels.
 *
 * Eager: the window's decoded ops run in order, each over its own dims and views (a cat
 * picks its input along its dim). Fused: the ops stepped over run first, in order, then the
 * group's kernel, whose element e computes every op of the group from registers and from
 * the buffers' views over the group's space (a cat picks by e % P < T, as codegen's does).
 * For sampled elements:
 * - every store the kernel keeps holds what eager left at that address when the group's
 *   last op ran;
 * - no load of element e reads an address another element of the kernel stores (a race);
 * - every op stepped over reads what it read in eager.
 * Only the group's span is modeled: memory before it is a hash of the address. Row groups
 * are not checked here (test_rows and the GPU suites check them). */
#ifndef TEST_FUSER_EQUIV_H
#define TEST_FUSER_EQUIV_H

#include <stdint.h>

#include "fuser/fuser.h"

typedef struct {
    const tcf_item_t   *it;
    const tcf_fgroup_t *g;
    int8_t              in_group[TCF_FUSER_MAX_ITEMS];
    int                 unknown;   /* a view the model cannot invert: no verdict */
} eq_ctx_t;

enum { EQ_EAGER, EQ_FUSED };

static uint64_t eq_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
}

/* Element e's index over nd dims of size[] (innermost first, as PyTorch's
 * OffsetCalculator and the generated kernels decompose it). */
static void eq_index(uint64_t e, unsigned nd, const uint32_t *size, uint32_t *idx)
{
    for (unsigned d = 0; d < nd; d++)
        idx[d] = (uint32_t)(e % size[d]), e /= size[d];
}

static uint64_t eq_addr(const tcf_op_t *op, unsigned o, const uint32_t *idx, uint64_t lin)
{
    uint64_t p = o ? op->in[o - 1] : op->out;
    if (!op->it.ndim)
        return p + lin * tcf_dtype_size(o ? op->in_dt[o - 1] : op->out_dt);
    for (unsigned d = 0; d < op->it.ndim; d++)
        p += (uint64_t)idx[d] * op->it.stride[o][d];
    return p;
}

/* The element of view (base, nd dims of size[], strides st[]) at address a: 1 and its
 * index, 0 when a is not one of its elements, -1 when the view is not one-to-one. */
static int eq_invert(uint64_t base, unsigned nd, const uint32_t *size, const uint32_t *st,
                     uint64_t a, uint32_t *idx)
{
    unsigned ord[TCF_OP_MAX_DIMS], n = 0;
    if (a < base)
        return 0;
    for (unsigned d = 0; d < nd; d++) {
        idx[d] = 0;
        if (size[d] == 1)
            continue;
        if (!st[d])
            return -1;
        unsigned k = n++;   /* insertion by stride, largest first */
        while (k && st[ord[k - 1]] < st[d])
            ord[k] = ord[k - 1], k--;
        ord[k] = d;
    }
    uint64_t rem = a - base, back = base;
    for (unsigned k = 0; k < n; k++) {
        unsigned d = ord[k];
        uint64_t i = rem / st[d];
        if (i >= size[d])
            i = size[d] - 1;
        idx[d] = (uint32_t)i, rem -= i * st[d];
    }
    for (unsigned d = 0; d < nd; d++)
        back += (uint64_t)idx[d] * st[d];
    return back == a;
}

static int eq_orig_index(const tcf_op_t *op, uint64_t a, uint32_t *idx, uint64_t *lin)
{
    if (!op->it.ndim) {   /* contiguous: one dim of n elements */
        uint32_t es = (uint32_t)tcf_dtype_size(op->out_dt), i = 0;
        int r = eq_invert(op->out, 1, &op->n, &es, a, &i);
        *lin = i;
        return r;
    }
    return eq_invert(op->out, op->it.ndim, op->it.size, op->it.stride[0], a, idx);
}

static uint64_t eq_op_hash(tcf_op_kind_t kind, uint8_t mode, uint8_t sarg, uint8_t nin,
                           const tcf_dtype_t *in_dt, tcf_dtype_t cdt, tcf_dtype_t rdt,
                           tcf_dtype_t odt, unsigned ns, const uint32_t *sbits)
{
    uint64_t h = eq_mix(0x5eed, (uint64_t)kind << 32 | (uint64_t)mode << 16 | sarg << 8 | nin);
    h = eq_mix(h, (uint64_t)cdt << 32 | (uint64_t)rdt << 16 | odt);
    for (unsigned i = 0; i < nin; i++)
        h = eq_mix(h, in_dt[i]);
    for (unsigned s = 0; s < ns; s++)
        h = eq_mix(h, sbits[s]);
    return h;
}

static uint64_t eq_value(eq_ctx_t *c, size_t j, const uint32_t *idx, uint64_t lin, int world,
                         int depth);

/* What address a holds just before item pos runs: eager, every op of the span before it;
 * fused (before the kernel), the ops stepped over before it. */
static uint64_t eq_mem(eq_ctx_t *c, size_t pos, uint64_t a, int world, int depth)
{
    for (size_t j = pos; j-- > c->g->first;) {
        const tcf_item_t *x = &c->it[j];
        uint32_t idx[TCF_OP_MAX_DIMS];
        uint64_t lin = 0;
        if (x->kind != TCF_ITEM_OP || (world == EQ_FUSED && c->in_group[j - c->g->first]))
            continue;
        int r = eq_orig_index(&x->op, a, idx, &lin);
        if (r < 0)
            c->unknown = 1;
        if (r > 0)
            return eq_value(c, j, idx, lin, world, depth + 1);
    }
    return eq_mix(0x1717, a);
}

static uint64_t eq_value(eq_ctx_t *c, size_t j, const uint32_t *idx, uint64_t lin, int world,
                         int depth)
{
    const tcf_op_t *op = &c->it[j].op;
    if (depth > 48) {
        c->unknown = 1;
        return 0;
    }
    if (op->kind == TCF_OP_CAT) {
        unsigned k = 0;
        if (op->nin == 2 && op->it.ndim && idx[op->cat_dim] >= op->cat_lo[1])
            k = 1;
        return eq_mem(c, j, eq_addr(op, 1 + k, idx, lin), world, depth);
    }
    uint32_t sb[2] = { op->s[0].bits, op->s[1].bits };
    uint64_t h = eq_op_hash(op->kind, op->mode, op->sarg, op->nin, op->in_dt, op->compute_dt,
                            op->res_dt, op->out_dt, op->nscalar, sb);
    for (unsigned i = 0; i < op->nin; i++)
        h = eq_mix(h, eq_mem(c, j, eq_addr(op, 1 + i, idx, lin), world, depth));
    return h;
}

static uint64_t eq_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* Buffer b's address at element e of the group's space (m: e's index there). */
static uint64_t eq_gaddr(const tcf_fgroup_t *g, unsigned b, uint64_t e, const uint32_t *m)
{
    if (!g->g.ndim)
        return g->args.buf[b] + e * tcf_dtype_size(g->g.buf_dt[b]);
    uint64_t p = g->args.buf[b];
    for (unsigned d = 0; d < g->g.ndim; d++)
        p += (uint64_t)m[d] * g->args.stride[b][d];
    return p;
}

/* 1 when the group agrees with eager on its sampled elements, 0 when it does not, and
 * 1 as well when the model cannot tell (a view it cannot invert), counted in *unknown. */
static int eq_group(const tcf_item_t *it, size_t n, const tcf_fgroup_t *g, unsigned *unknown,
                    char *why, size_t cap)
{
    static eq_ctx_t c;
    uint64_t seed = 0x2545F4914F6CDD1Dull ^ g->first;
    if (g->g.red || g->last >= n || g->last - g->first >= TCF_FUSER_MAX_ITEMS)
        return 1;
    c.it = it, c.g = g, c.unknown = 0;
    memset(c.in_group, 0, (size_t)(g->last - g->first + 1));
    for (unsigned k = 0; k < g->nitems; k++)
        c.in_group[g->items[k] - g->first] = 1;
    uint64_t total = g->args.n;
    for (unsigned s = 0; s < 40 && total; s++) {
        uint64_t e = s == 0 ? 0 : s == 1 ? total - 1 : eq_rand(&seed) % total;
        uint32_t m[TCF_OP_MAX_DIMS] = { 0 };
        eq_index(e, g->g.ndim, g->args.size, m);
        uint64_t v[TCF_GROUP_MAX_OPS];
        for (unsigned k = 0; k < g->nitems; k++) {
            const tcf_gop_t *go = &g->g.ops[k];
            uint64_t in[3] = { 0, 0, 0 };
            unsigned pick = 0;   /* a cat loads only the input it picks */
            if (go->kind == TCF_OP_CAT && go->nin == 2)
                pick = e % g->args.s[go->scalar_arg[0]] < g->args.s[go->scalar_arg[1]] ? 0 : 1;
            for (unsigned i = 0; i < go->nin; i++) {
                uint8_t src = go->in_src[i];
                if (go->kind == TCF_OP_CAT && i != pick)
                    continue;
                if (src & TCF_SRC_OP) {
                    in[i] = v[src & 0x7f];
                    continue;
                }
                uint64_t la = eq_gaddr(g, src, e, m);
                in[i] = eq_mem(&c, g->last + 1u, la, EQ_FUSED, 0);
                /* a load another element's store reaches: a race in the kernel */
                for (unsigned q = 0; q < g->nitems; q++) {
                    uint8_t ob = g->g.ops[q].out_buf;
                    uint32_t om[TCF_OP_MAX_DIMS], n1 = (uint32_t)total, e1 = (uint32_t)e;
                    if (ob == TCF_NO_STORE)
                        continue;
                    /* a contiguous kernel: one dim of n elements of its buffer's size */
                    uint32_t es = (uint32_t)tcf_dtype_size(g->g.buf_dt[ob]);
                    int nd = g->g.ndim ? g->g.ndim : 1;
                    if (eq_invert(g->args.buf[ob], (unsigned)nd, g->g.ndim ? g->args.size : &n1,
                                  g->g.ndim ? g->args.stride[ob] : &es, la, om) > 0 &&
                        memcmp(om, g->g.ndim ? m : &e1, (size_t)nd * sizeof *m) != 0) {
                        snprintf(why, cap, "op %u loads what another element stores (op %u)",
                                 k, q);
                        return 0;
                    }
                }
            }
            if (go->kind == TCF_OP_CAT) {
                v[k] = in[pick];
            } else {
            uint32_t sb[2] = { 0, 0 };
            for (unsigned q = 0; q < go->nscalar && q < 2; q++)
                sb[q] = g->args.s[go->scalar_arg[q]];
            uint64_t h = eq_op_hash(go->kind, go->mode, go->sarg, go->nin, go->in_dt,
                                    go->compute_dt, go->res_dt, go->out_dt, go->nscalar, sb);
            for (unsigned i = 0; i < go->nin; i++)
                h = eq_mix(h, in[i]);
            v[k] = h;
            }
            if (go->out_buf != TCF_NO_STORE) {
                uint64_t sa = eq_gaddr(g, go->out_buf, e, m);
                uint64_t want = eq_mem(&c, g->last + 1u, sa, EQ_EAGER, 0);
                if (want != v[k] && !c.unknown) {
                    snprintf(why, cap, "op %u (item %u) stores another value than eager's at "
                             "element %llu", k, g->items[k], (unsigned long long)e);
                    return 0;
                }
            }
        }
    }
    /* every op stepped over reads in the fused order what it read in eager */
    for (size_t j = g->first; j <= g->last; j++) {
        const tcf_op_t *op = &it[j].op;
        if (it[j].kind != TCF_ITEM_OP || c.in_group[j - g->first])
            continue;
        for (unsigned s = 0; s < 16; s++) {
            uint64_t lin = eq_rand(&seed) % op->n;
            uint32_t idx[TCF_OP_MAX_DIMS] = { 0 };
            eq_index(lin, op->it.ndim, op->it.size, idx);
            for (unsigned i = 0; i < op->nin; i++) {
                uint64_t a = eq_addr(op, 1 + i, idx, lin);
                if (eq_mem(&c, j, a, EQ_EAGER, 0) != eq_mem(&c, j, a, EQ_FUSED, 0) && !c.unknown) {
                    snprintf(why, cap, "item %zu, stepped over, reads another value", j);
                    return 0;
                }
            }
        }
    }
    *unknown += c.unknown;
    return 1;
}

#endif
