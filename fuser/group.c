/* group: builds one fused group op by op (fuser/internal.h). Buffers are address ranges
 * compared exactly (fuser.h); each op's operands are matched against the buffers the group
 * has touched so far, so the cost is O(ops * buffers) per group. */
#include <string.h>

#include "fuser/internal.h"

/* Operand o of an op, numbered as tcf_bind_t numbers them: 0 = out, 1 + i = in[i]. */
static uint64_t operand_ptr(const tcf_op_t *op, unsigned o) { return o ? op->in[o - 1] : op->out; }
static tcf_dtype_t operand_dt(const tcf_op_t *op, unsigned o)
{
    return o ? op->in_dt[o - 1] : op->out_dt;
}

static int overlaps(uint64_t p, uint64_t e, const tcf_fuser_buf_t *x)
{
    return p < x->end && x->ptr < e;
}

int tcf_fuser_op_ok(const tcf_op_t *op)
{
    if (op->kind <= TCF_OP_NONE || op->kind >= TCF_OP_NKIND || !op->n || op->nin < 1 ||
        op->nin > 3 || op->nscalar > 2)
        return 0;
    if (op->it.ndim)
        return 0;   /* strided operands: their extent is no [ptr, ptr + n) range; not planned yet */
    for (unsigned o = 0; o <= op->nin; o++) {
        uint64_t p = operand_ptr(op, o), len = (uint64_t)op->n * tcf_dtype_size(operand_dt(op, o));
        if (!p || !len || p > UINT64_MAX - len)
            return 0;   /* a range that wraps would defeat every overlap test */
    }
    return 1;
}

int tcf_fuser_build_add(tcf_fuser_build_t *b, const tcf_item_t *items, uint16_t idx)
{
    const tcf_op_t *op = &items[idx].op;
    unsigned k = b->nops, nraw = b->nraw, slots = 0;
    uint8_t ref[4] = { 0 };

    if (k && op->n != b->n)
        return TCF_FUSER_SIZE;
    if (k == TCF_GROUP_MAX_OPS || b->nscalars + op->nscalar > TCF_GROUP_MAX_SCALARS)
        return TCF_FUSER_TOO_BIG;
    /* Inputs first, then the output: an op reads before it writes, so an in-place op's
     * buffer is first seen, and loaded, as an input. New buffers go in above b->nraw and
     * count only once the op is committed. */
    for (unsigned j = 1; j <= op->nin + 1u; j++) {
        unsigned o = j <= op->nin ? j : 0;
        uint64_t p = operand_ptr(op, o);
        tcf_dtype_t dt = operand_dt(op, o);
        uint64_t e = p + (uint64_t)op->n * tcf_dtype_size(dt);
        int hit = -1, stale = 0;
        for (unsigned r = 0; r < nraw; r++) {
            const tcf_fuser_buf_t *x = &b->raw[r];
            if (!overlaps(p, e, x))
                continue;
            if (x->dead) {
                stale = 1;
                continue;
            }
            if (x->ptr != p || x->end != e || x->dt != dt)
                return TCF_FUSER_OVERLAP;   /* partial overlap, or one range as two dtypes */
            hit = (int)r;
        }
        /* A freed block handed out again and read before anything wrote it: eager read
         * what the dead op stored there, but the fused kernel drops that store. */
        if (hit < 0 && stale && o)
            return TCF_FUSER_OVERLAP;
        if (hit < 0) {
            if (nraw == TCF_FUSER_RAW_MAX)
                return TCF_FUSER_TOO_BIG;
            b->raw[nraw] = (tcf_fuser_buf_t){ .ptr = p, .end = e, .dt = dt, .loaded = o != 0,
                                              .writer = -1, .from = { idx, (uint8_t)o } };
            hit = (int)nraw++;
        }
        ref[o] = (uint8_t)hit;
    }
    /* Buffers the kernel will take as arguments: all live ones (their stores may be
     * kept), and dead ones it loads. A dead buffer it only wrote costs nothing. */
    for (unsigned r = 0; r < nraw; r++)
        slots += !b->raw[r].dead || b->raw[r].loaded;
    if (slots > TCF_GROUP_MAX_BUFS)
        return TCF_FUSER_TOO_BIG;

    for (unsigned i = 0; i < 3; i++) {
        const tcf_fuser_buf_t *x = &b->raw[ref[i + 1]];
        b->src[k][i] = i >= op->nin ? 0
                     : x->writer >= 0 ? (uint8_t)(TCF_SRC_OP | x->writer) : ref[i + 1];
    }
    b->out[k] = ref[0];
    b->raw[ref[0]].writer = (int8_t)k;
    b->item[k] = idx;
    b->nraw = (uint8_t)nraw;
    b->nscalars = (uint8_t)(b->nscalars + op->nscalar);
    b->n = op->n;
    b->nops++;
    return -1;
}

void tcf_fuser_build_free(tcf_fuser_build_t *b, uint64_t ptr)
{
    for (unsigned r = 0; r < b->nraw; r++)
        if (!b->raw[r].dead && b->raw[r].ptr == ptr)
            b->raw[r].dead = 1;
}

/* Clears keep[r] for a stored buffer the window frees later, exactly (the free's pointer
 * is the buffer's), with no work between the group and the free that may read it. An
 * opaque item may read anything, so it keeps every store still in question. */
static void drop_freed(const tcf_fuser_build_t *b, const tcf_item_t *items, size_t n,
                       size_t from, uint8_t *keep)
{
    uint8_t pending[TCF_FUSER_RAW_MAX];
    unsigned left = 0;
    size_t stop = from;
    for (unsigned r = 0; r < b->nraw; r++)
        left += pending[r] = keep[r];
    /* Only as far as the last free of a pending buffer: with no such free (the caching
     * allocator, or a result that outlives the window) nothing is read at all. */
    for (size_t i = from; i < n && left; i++)
        for (unsigned r = 0; r < b->nraw && items[i].kind == TCF_ITEM_FREE; r++)
            if (pending[r] && b->raw[r].ptr == items[i].ptr)
                stop = i + 1;
    for (size_t i = from; i < stop && left; i++) {
        const tcf_item_t *it = &items[i];
        if (it->kind == TCF_ITEM_FREE) {
            for (unsigned r = 0; r < b->nraw; r++)
                if (pending[r] && b->raw[r].ptr == it->ptr)
                    pending[r] = keep[r] = 0, left--;
        } else if (it->kind == TCF_ITEM_OP && tcf_fuser_op_ok(&it->op)) {
            for (unsigned r = 0; r < b->nraw; r++)
                for (unsigned j = 1; pending[r] && j <= it->op.nin; j++) {
                    uint64_t p = it->op.in[j - 1];
                    if (overlaps(p, p + (uint64_t)it->op.n * tcf_dtype_size(it->op.in_dt[j - 1]),
                                 &b->raw[r]))
                        pending[r] = 0, left--;   /* read: the store stays */
                }
        } else if (it->kind != TCF_ITEM_ALLOC) {
            return;
        }
    }
}

int tcf_fuser_build_finish(const tcf_fuser_build_t *b, const tcf_item_t *items, size_t n,
                           tcf_fgroup_t *fg)
{
    uint8_t keep[TCF_FUSER_RAW_MAX], slot[TCF_FUSER_RAW_MAX];
    unsigned maxes = 1, aligned = 1;
    uint64_t unfused = 0;
    tcf_group_t *g = &fg->g;

    memset(fg, 0, sizeof *fg);
    fg->first = b->item[0];
    fg->last = b->item[b->nops - 1];
    fg->nitems = b->nops;
    fg->n = fg->args.n = b->n;
    for (unsigned r = 0; r < b->nraw; r++)
        keep[r] = b->raw[r].writer >= 0 && !b->raw[r].dead;  /* dead: freed in the span */
    drop_freed(b, items, n, (size_t)fg->last + 1, keep);

    /* The kernel's buffers: those it loads or stores, numbered by first appearance. */
    for (unsigned r = 0; r < b->nraw; r++) {
        const tcf_fuser_buf_t *x = &b->raw[r];
        slot[r] = TCF_NO_STORE;
        if (!x->loaded && !keep[r])
            continue;
        slot[r] = g->nbufs;
        g->buf_dt[g->nbufs] = x->dt;
        fg->buf_from[g->nbufs] = x->from;
        fg->args.buf[g->nbufs] = x->ptr;
        if (tcf_dtype_size(x->dt) > maxes)
            maxes = tcf_dtype_size(x->dt);
        aligned &= (x->ptr & 15) == 0;
        if (x->loaded)
            fg->bytes_read += b->n * tcf_dtype_size(x->dt);
        g->nbufs++;
    }

    for (unsigned k = 0; k < b->nops; k++) {
        const tcf_op_t *op = &items[b->item[k]].op;
        tcf_gop_t *go = &g->ops[k];
        unsigned r = b->out[k];
        *go = (tcf_gop_t){ .kind = op->kind, .mode = op->mode, .sarg = op->sarg, .nin = op->nin,
                           .nscalar = op->nscalar, .out_dt = op->out_dt,
                           .compute_dt = op->compute_dt, .res_dt = op->res_dt };
        unfused += b->n * tcf_dtype_size(op->out_dt);
        for (unsigned i = 0; i < op->nin; i++) {
            uint8_t s = b->src[k][i];
            go->in_dt[i] = op->in_dt[i];
            go->in_src[i] = (s & TCF_SRC_OP) ? s : slot[s];
            unfused += b->n * tcf_dtype_size(op->in_dt[i]);
        }
        /* Only a buffer's last writer stores; an earlier one was overwritten in the group. */
        go->out_buf = b->raw[r].writer == (int)k && keep[r] ? slot[r] : TCF_NO_STORE;
        if (go->out_buf == TCF_NO_STORE)
            fg->stores_dropped++;
        else
            fg->bytes_written += b->n * tcf_dtype_size(op->out_dt);
        for (unsigned s = 0; s < op->nscalar; s++) {
            go->scalar_arg[s] = g->nscalars;
            go->scalar_dt[s] = op->s[s].dt;
            fg->args.s[g->nscalars] = op->s[s].bits;
            fg->scalar_from[g->nscalars] = (tcf_sbind_t){ b->item[k], (uint8_t)s };
            g->nscalars++;
        }
        fg->items[k] = b->item[k];
    }
    g->nops = b->nops;
    g->vec = (uint8_t)(aligned ? 16 / maxes : 1);
    fg->bytes_avoided = unfused - fg->bytes_read - fg->bytes_written;
    return !aligned;
}
