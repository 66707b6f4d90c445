/* group: builds one fused group op by op (fuser/internal.h). Buffers are views (pointer,
 * dtype, strides over the group's space) compared exactly (fuser.h); each op's operands are
 * matched against the buffers the group has touched so far, so the cost is
 * O(ops * buffers * dims) per group. */
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
    return p < x->end && x->beg < e;
}

/* Views of at most 2^31 - 1 bytes past their pointer: what PyTorch's 32-bit split
 * guarantees for a strided launch, and what the generated kernel's 32-bit offsets need. */
#define TCF_FUSER_OFF_MAX 0x7fffffffull

/* Operand o's extent end: one past its last element's last byte; 0 when it wraps. Only
 * for an op whose dims tcf_space_of accepts (each size at least 1, n at least 1). */
static uint64_t operand_end(const tcf_op_t *op, unsigned o)
{
    uint64_t p = operand_ptr(op, o), es = tcf_dtype_size(operand_dt(op, o)), m = 0;
    if (!op->it.ndim)
        m = (uint64_t)(op->n - 1) * es;
    for (unsigned d = 0; d < op->it.ndim && d < TCF_OP_MAX_DIMS; d++)
        m += (uint64_t)(op->it.size[d] - 1) * op->it.stride[o][d];
    return p > UINT64_MAX - m - es ? 0 : p + m + es;
}

/* The bytes operand o reaches: [*beg, end). A view's extent from its base, but for a
 * cat's input, which is read only over its range along the cat dim from its real first
 * element (op.h): the bytes before it and past its range are another tensor's. 0 when
 * it wraps. */
static uint64_t operand_extent(const tcf_op_t *op, unsigned o, uint64_t *beg)
{
    *beg = operand_ptr(op, o);
    if (op->kind != TCF_OP_CAT || !o || o > 2 || op->cat_dim >= op->it.ndim)
        return operand_end(op, o);
    uint64_t es = tcf_dtype_size(operand_dt(op, o)), m = 0, len = op->cat_len[o - 1];
    for (unsigned d = 0; d < op->it.ndim && d < TCF_OP_MAX_DIMS; d++)
        m += (uint64_t)((d == op->cat_dim ? len : op->it.size[d]) - 1) * op->it.stride[o][d];
    uint64_t p = *beg + (uint64_t)op->cat_lo[o - 1] * op->it.stride[o][op->cat_dim];
    if (!len || p < *beg || p > UINT64_MAX - m - es)
        return 0;
    *beg = p;
    return p + m + es;
}

/* tcf_fuser_op_ok without the kind: a reduction joins as an op of kind NONE. */
static int views_ok(const tcf_op_t *op)
{
    tcf_space_t sp;
    uint32_t st[4][TCF_OP_MAX_DIMS];
    /* a fill has no input and its value; every other op an input at least */
    if (!op->n || (op->kind == TCF_OP_FILL ? op->nin || op->nscalar != 1 : op->nin < 1) ||
        op->nin > 3 || op->nscalar > 2 || tcf_space_of(op, &sp, st))
        return 0;
    if (op->kind == TCF_OP_CAT &&
        (!op->it.ndim || op->cat_dim >= op->it.ndim || op->nin > 2 ||
         op->nscalar != (op->nin == 2 ? 2 : 0)))
        return 0;
    for (unsigned o = 0; o <= op->nin; o++) {
        uint64_t p = operand_ptr(op, o), e, x;
        if (!p || !tcf_dtype_size(operand_dt(op, o)) || !(e = operand_end(op, o)) ||
            !operand_extent(op, o, &x))
            return 0;   /* a range that wraps would defeat every overlap test */
        if (op->it.ndim && e - p - 1 > TCF_FUSER_OFF_MAX)
            return 0;   /* not a launch PyTorch's 32-bit indexing makes */
    }
    return 1;
}

int tcf_fuser_op_ok(const tcf_op_t *op)
{
    return op->kind > TCF_OP_NONE && op->kind < TCF_OP_NKIND && views_ok(op);
}

int tcf_fuser_reduce_op(const tcf_reduce_t *r, tcf_op_t *op)
{
    uint32_t K = r->cfg.num_inputs, M = r->cfg.num_outputs;
    int sm = tcf_red_fullrow(r->op);
    if (r->op <= TCF_RED_NONE || r->op >= TCF_RED_NOPS || r->odims != 1 || K < 2 || M < 2 ||
        r->osize[0] != M || (uint64_t)K * M > UINT32_MAX)
        return -1;
    memset(op, 0, sizeof *op);
    op->kind = TCF_OP_NONE, op->loop = TCF_LOOP_STRIDED;
    op->rule = tcf_red_softmax(r->op) ? "softmax" : tcf_red_norm(r->op) ? "norm" : "reduce";
    op->vec = 1, op->nin = 1, op->n = K * M;
    op->out_dt = op->res_dt = r->out_dt, op->in_dt[0] = op->compute_dt = r->in_dt;
    op->out = r->dst, op->in[0] = r->src;
    op->it.ndim = 2, op->it.size[0] = K, op->it.size[1] = M;
    op->it.stride[0][1] = r->ostride[0][0];
    op->it.stride[1][0] = tcf_dtype_size(r->in_dt), op->it.stride[1][1] = r->ostride[0][1];
    if (sm) {   /* a full row out: elementwise over [K, M] (the backward reads two) */
        op->it.stride[0][0] = tcf_dtype_size(r->out_dt);
        if (tcf_red_softmax_bwd(r->op)) {
            op->nin = 2, op->in[1] = r->src2, op->in_dt[1] = r->in_dt;
            op->it.stride[2][0] = op->it.stride[1][0], op->it.stride[2][1] = op->it.stride[1][1];
        }
        /* a norm's gamma and beta: N elements, broadcast over the rows */
        for (unsigned i = 0; i < 2 && tcf_red_norm(r->op); i++) {
            uint64_t v = i ? r->beta : r->gamma;
            if (!v)
                continue;
            op->in[op->nin] = v, op->in_dt[op->nin] = r->in_dt;
            op->it.stride[op->nin + 1][0] = tcf_dtype_size(r->in_dt);
            op->nin++;
        }
    }
    return views_ok(op) ? 0 : -1;
}

int tcf_fuser_extents(const tcf_item_t *it, uint64_t beg[TCF_FUSER_EXTENTS],
                      uint64_t end[TCF_FUSER_EXTENTS])
{
    tcf_op_t rop;
    const tcf_op_t *op = &it->op;
    if (it->kind == TCF_ITEM_REDUCE) {
        if (tcf_fuser_reduce_op(&it->red, &rop) != 0)
            return -1;
        op = &rop;
    } else if (it->kind != TCF_ITEM_OP || !tcf_fuser_op_ok(op)) {
        return -1;
    }
    int n = 0;
    for (unsigned o = 0; o <= op->nin; o++, n++)
        if (!(end[n] = operand_extent(op, o, &beg[n])))
            return -1;
    if (it->kind == TCF_ITEM_REDUCE && tcf_red_norm(it->red.op))   /* one float a row each */
        for (unsigned q = 0; q < 2; q++) {
            uint64_t p = q ? it->red.rstd : it->red.mean, e = p + 4ull * it->red.cfg.num_outputs;
            if (!p)
                continue;
            if (e < p)
                return -1;
            beg[n] = p, end[n++] = e;
        }
    return n;
}

/* A 2-byte cat moves OpaqueType<2>: half or bfloat16 alike. It takes the dtype of the
 * first later op that reads its output (the exact pointer), else of the last earlier op
 * that wrote one of its inputs, else half: the type only has to agree with its
 * neighbours' for dataflow in a group (codegen checks every edge), and the bits move
 * unchanged either way. Window-local and deterministic, so re-binding decides the same. */
static tcf_dtype_t cat_dtype(const tcf_item_t *items, size_t n, size_t idx)
{
    const tcf_op_t *c = &items[idx].op;
    for (size_t i = idx + 1; i < n; i++)
        for (unsigned j = 0; items[i].kind == TCF_ITEM_OP && j < items[i].op.nin && j < 3; j++)
            if (items[i].op.in[j] == c->out && (items[i].op.in_dt[j] == TCF_DT_F16 ||
                                                items[i].op.in_dt[j] == TCF_DT_BF16))
                return items[i].op.in_dt[j];
    for (size_t i = idx; i-- > 0;) {
        const tcf_op_t *w = &items[i].op;
        if (items[i].kind != TCF_ITEM_OP || (w->out_dt != TCF_DT_F16 && w->out_dt != TCF_DT_BF16))
            continue;
        for (unsigned j = 0; j < c->nin && j < 2; j++) {
            uint64_t real = c->in[j] + (uint64_t)c->cat_lo[j] * c->it.stride[1 + j][c->cat_dim];
            if (w->out == real)
                return w->out_dt;
        }
    }
    return c->out_dt;
}

/* The op items[idx] joins b as: a decoded op as it is; a row reduction as the op over
 * [K, M] reading (element size, row stride) and writing (0, output stride); after the
 * group's reduction, an op over its M rows (a 1-d space) as the op over [K, M] with every
 * stride 0 along the row (*row = 1). -1, or the reason it cannot join. */
static int as_op(const tcf_fuser_build_t *b, const tcf_item_t *items, uint16_t idx,
                 tcf_op_t *op, int *row)
{
    const tcf_item_t *it = &items[idx];
    *row = 0;
    if (it->kind == TCF_ITEM_REDUCE) {
        if (b->nops && b->red)
            return TCF_FUSER_REDUCE2;
        if (b->nops && b->cat)
            return TCF_FUSER_ROWS;
        return tcf_fuser_reduce_op(&it->red, op) ? TCF_FUSER_ROWS : -1;
    }
    /* A norm ends its group: its per-row mean and rstd are stored outside the group's
     * buffers, which later ops (and the ops stepped over before them, which run first)
     * would have to be checked against. What follows a norm in real models is a GEMM. */
    if (b->nops && b->red && tcf_red_norm(items[b->item[b->red - 1]].red.op))
        return TCF_FUSER_ROWS;
    *op = it->op;
    if (op->kind == TCF_OP_CAT && b->nops && b->red)
        return TCF_FUSER_ROWS;   /* gen_rows.c has no cat */
    if (op->kind == TCF_OP_CAT && tcf_dtype_size(op->out_dt) == 2) {
        tcf_dtype_t d = cat_dtype(items, b->nwin, idx);
        op->out_dt = op->res_dt = op->compute_dt = d;
        for (unsigned i = 0; i < op->nin; i++)
            op->in_dt[i] = d;
    }
    /* per-row ops follow a reduction, never a softmax: its result is a full row */
    if (b->nops && b->red && op->n != b->n && op->n == b->M &&
        !tcf_red_fullrow(items[b->item[b->red - 1]].red.op)) {
        tcf_space_t sp;
        uint32_t st[4][TCF_OP_MAX_DIMS];
        if (tcf_space_of(op, &sp, st) || sp.nd != 1)
            return TCF_FUSER_SIZE;
        memset(&op->it, 0, sizeof op->it);
        op->it.ndim = 2, op->it.size[0] = b->K, op->it.size[1] = b->M;
        for (unsigned o = 0; o <= op->nin; o++)
            op->it.stride[o][1] = st[o][0];
        op->n = (uint32_t)b->n;
        if (op->loop != TCF_LOOP_STRIDED_CAST && op->loop != TCF_LOOP_STRIDED)
            op->loop = TCF_LOOP_STRIDED;
        *row = 1;
        return views_ok(op) ? -1 : TCF_FUSER_SIZE;
    }
    return -1;
}

static int same_view(const tcf_fuser_buf_t *x, uint64_t p, uint64_t pb, uint64_t e,
                     tcf_dtype_t dt, const uint32_t *st, const uint32_t *xst, unsigned nd)
{
    return x->ptr == p && x->beg == pb && x->end == e && x->dt == dt &&
           !memcmp(st, xst, nd * sizeof *st);
}

/* Each of n dims, by its size, to the one dim of `to` with that size (map[d]); a dim of
 * size 1 to none (0xff: no element moves along it). -1 when a size matches no dim of
 * `to`, or two (which one is ambiguous), or two dims the same one. *ident: every dim
 * mapped goes where it already was, counting only those mapped. */
static int size_map(const uint32_t *size, unsigned n, const tcf_space_t *to, uint8_t *map,
                    int *ident)
{
    uint8_t used[TCF_OP_MAX_DIMS] = { 0 };
    unsigned j = 0;
    *ident = 1;
    for (unsigned d = 0; d < n; d++) {
        map[d] = 0xff;
        if (size[d] == 1)
            continue;
        int at = -1;
        for (unsigned k = 0; k < to->nd; k++)
            if (to->size[k] == size[d]) {
                if (at >= 0)
                    return -1;
                at = (int)k;
            }
        if (at < 0 || used[at]++)
            return -1;
        *ident &= at == (int)j++;
        map[d] = (uint8_t)at;
    }
    return 0;
}

int tcf_fuser_perm_of(const tcf_op_t *op, const tcf_space_t *sp, uint8_t *map)
{
    tcf_space_t osp;
    uint32_t ost[4][TCF_OP_MAX_DIMS];
    int ident;
    if (!op->it.ndim || op->kind == TCF_OP_CAT || tcf_space_of(op, &osp, ost) ||
        osp.nd != sp->nd || osp.nd < 2 || size_map(op->it.size, op->it.ndim, sp, map, &ident))
        return -1;
    return ident ? -1 : 0;   /* the same order: no permutation to make */
}

/* The op walked in the group's order (tcf_fuser_perm_of): its dims of size 1 dropped and
 * the others, with every operand's strides, moved to the group dims they match. An
 * elementwise op computes each element alone, so the order it visits them in changes no
 * bit of what it stores. */
static int permute(const tcf_op_t *op, const tcf_space_t *sp, tcf_op_t *out)
{
    uint8_t map[TCF_OP_MAX_DIMS];
    if (tcf_fuser_perm_of(op, sp, map))
        return -1;
    *out = *op;
    memset(&out->it, 0, sizeof out->it);
    out->it.ndim = sp->nd;
    for (unsigned d = 0; d < op->it.ndim; d++) {
        if (map[d] == 0xff)
            continue;
        out->it.size[map[d]] = op->it.size[d];
        for (unsigned o = 0; o <= op->nin; o++)
            out->it.stride[o][map[d]] = op->it.stride[o][d];
    }
    return 0;
}

static int add_op(tcf_fuser_build_t *b, const tcf_item_t *items, uint16_t idx,
                  const tcf_op_t *op, int row);

/* The group walked in another order: its space becomes `to` (the same dims, each size
 * found once), every buffer's strides moving with their dims. Only for a group of plain
 * elementwise ops (no cat, whose input is picked along its dim; no reduction, whose
 * space is [row, rows]): the order they are walked in changes no bit they store. 0, or
 * -1 when `to` is no other order of the group's dims (the builder is unchanged). */
static int permute_builder(tcf_fuser_build_t *b, const tcf_space_t *to)
{
    uint8_t map[TCF_OP_MAX_DIMS];
    int ident;
    if (b->red || b->cat || to->nd != b->sp.nd || to->nd < 2)
        return -1;
    for (unsigned k = 0; k < b->nops; k++)
        if (!b->xop[k].it.ndim)
            return -1;   /* a contiguous op's elements are in the group's order: keep it */
    if (size_map(b->sp.size, b->sp.nd, to, map, &ident) || ident)
        return -1;
    for (unsigned k = 0; k < b->sp.nd; k++)
        if (map[k] == 0xff)
            return -1;   /* a dim of size 1, which a space has not (tcf_space_of) */
    for (unsigned r = 0; r < b->nraw; r++) {
        uint32_t st[TCF_OP_MAX_DIMS] = { 0 };
        for (unsigned k = 0; k < b->sp.nd; k++)
            st[map[k]] = b->raw[r].st[k];
        memcpy(b->raw[r].st, st, sizeof st);
    }
    b->sp = *to;
    return 0;
}

/* Whether [p, e) lies inside what one op stepped over wrote, every byte of it. */
static int stepped_wrote(const tcf_fuser_build_t *b, uint64_t p, uint64_t e)
{
    for (unsigned s = 0; s < b->nsw; s++)
        if (b->sw_beg[s] <= p && e <= b->sw_end[s])
            return 1;
    return 0;
}

int tcf_fuser_build_add(tcf_fuser_build_t *b, const tcf_item_t *items, uint16_t idx)
{
    static _Thread_local tcf_op_t xop, pop;
    int row, why = as_op(b, items, idx, &xop, &row);
    if (why >= 0)
        return why;
    /* An op over the group's dims in another order (the rotary embedding's q * cos over
     * [D, H, S, B] beside rotate_half(q) * sin over [D, S, H, B]: one tensor, two walks)
     * joins walked in the group's order first, so that its views of the group's buffers
     * compare equal to theirs; only if that fails, as it is. */
    if (b->nops && !b->red && !row && items[idx].kind == TCF_ITEM_OP &&
        xop.n == b->n && !permute(&xop, &b->sp, &pop) && add_op(b, items, idx, &pop, 0) < 0) {
        b->locked = 1;
        return -1;
    }
    /* A cat is walked only in its own order: the group before it, of elementwise ops
     * alone, turns to that order instead (q * cos, then rotate_half(q)'s cat). */
    if (b->nops && xop.kind == TCF_OP_CAT && xop.n == b->n) {
        static _Thread_local tcf_fuser_build_t was;
        tcf_space_t osp;
        uint32_t ost[4][TCF_OP_MAX_DIMS];
        if (!tcf_space_of(&xop, &osp, ost)) {
            was = *b;
            if (!permute_builder(b, &osp)) {
                b->locked = 1;
                if (add_op(b, items, idx, &xop, row) < 0)
                    return -1;
                *b = was;
            }
        }
    }
    return add_op(b, items, idx, &xop, row);
}

static int add_op(tcf_fuser_build_t *b, const tcf_item_t *items, uint16_t idx,
                  const tcf_op_t *op, int row)
{
    unsigned k = b->nops, nraw = b->nraw, slots = 0;
    uint8_t ref[4] = { 0 };
    tcf_space_t osp, sp;
    uint32_t ost[4][TCF_OP_MAX_DIMS], st[4][TCF_OP_MAX_DIMS];
    static _Thread_local uint32_t rst[TCF_FUSER_RAW_MAX][TCF_OP_MAX_DIMS];  /* raws, re-split */
    int isred = items[idx].kind == TCF_ITEM_REDUCE;
    int strided = (k && b->strided) || op->it.ndim;

    if (k && op->n != b->n)
        return TCF_FUSER_SIZE;
    if (k == TCF_GROUP_MAX_OPS || b->nscalars + op->nscalar > TCF_GROUP_MAX_SCALARS)
        return TCF_FUSER_TOO_BIG;
    if (tcf_space_of(op, &osp, ost))
        return TCF_FUSER_SHAPE;   /* tcf_fuser_op_ok let nothing like it through */
    if (!k)
        sp = osp;
    else if (tcf_space_refine(&b->sp, &osp, &sp))
        return isred ? TCF_FUSER_ROWS : TCF_FUSER_SHAPE;
    /* a row group's space is [K, M], before and after every op */
    if (isred && (sp.nd != 2 || sp.size[0] != op->it.size[0]))
        return TCF_FUSER_ROWS;
    if (k && (b->red || b->locked) &&
        (sp.nd != b->sp.nd || memcmp(sp.size, b->sp.size, sizeof sp.size)))
        return TCF_FUSER_SHAPE;
    /* Every view over the (maybe finer) space: the group's so far, and this op's. */
    for (unsigned r = 0; r < nraw; r++)
        tcf_space_split(&b->sp, b->raw[r].st, &sp, rst[r]);
    for (unsigned o = 0; o <= op->nin; o++)
        tcf_space_split(&osp, ost[o], &sp, st[o]);
    /* Inputs first, then the output: an op reads before it writes, so an in-place op's
     * buffer is first seen, and loaded, as an input. New buffers go in above b->nraw and
     * count only once the op is committed. */
    for (unsigned j = 1; j <= op->nin + 1u; j++) {
        unsigned o = j <= op->nin ? j : 0;
        uint64_t p = operand_ptr(op, o), pb;
        tcf_dtype_t dt = operand_dt(op, o);
        uint64_t e = operand_extent(op, o, &pb);
        int hit = -1, stale = 0;
        for (unsigned r = 0; r < nraw; r++) {
            const tcf_fuser_buf_t *x = &b->raw[r];
            if (!overlaps(pb, e, x))
                continue;
            int same = same_view(x, p, pb, e, dt, st[o], rst[r], sp.nd);
            if (x->dead) {
                /* The kernel loads the dead buffer; writing its bytes through another
                 * view lets one thread overwrite what another has yet to load. */
                if (!o && x->loaded && !same)
                    return TCF_FUSER_OVERLAP;
                stale = 1;
                continue;
            }
            if (!same) {
                /* two views of the same bytes: fine to read both, but a write through
                 * either races with the other's accesses from other threads */
                if (!o || x->writer >= 0)
                    return TCF_FUSER_OVERLAP;
                continue;
            }
            /* a per-row value is stored before the second pass loads the row */
            if (!o && (row || isred) && x->loaded)
                return TCF_FUSER_OVERLAP;
            hit = (int)r;
        }
        /* A freed block handed out again and read before anything wrote it: eager read
         * what the dead op stored there, but the fused kernel drops that store. Unless an
         * op stepped over wrote all of it since: that op runs before the kernel. */
        if (hit < 0 && stale && o && !stepped_wrote(b, pb, e))
            return TCF_FUSER_OVERLAP;
        if (hit < 0) {
            if (nraw == TCF_FUSER_RAW_MAX)
                return TCF_FUSER_TOO_BIG;
            b->raw[nraw] = (tcf_fuser_buf_t){ .ptr = p, .beg = pb, .end = e, .dt = dt, .loaded = o != 0,
                                              .writer = -1, .from = { idx, (uint8_t)o } };
            memcpy(rst[nraw], st[o], sizeof rst[nraw]);
            hit = (int)nraw++;
        }
        ref[o] = (uint8_t)hit;
    }
    /* Buffers the kernel will take as arguments: all live ones (their stores may be
     * kept), and dead ones it loads. A dead buffer it only wrote costs nothing. */
    /* A norm's mean and rstd: stored by the kernel at its end, one thread a row, while
     * other rows' threads may still load the group's buffers. They must overlap none. */
    if (isred && tcf_red_norm(items[idx].red.op)) {
        const tcf_reduce_t *rn = &items[idx].red;
        uint64_t rows = 4ull * op->it.size[1];
        for (unsigned q = 0; q < 2; q++) {
            uint64_t p = q ? rn->rstd : rn->mean, e = p + rows;
            if (!p)
                continue;
            if (e < p)
                return TCF_FUSER_OVERLAP;
            for (unsigned r = 0; r < nraw; r++)
                if (overlaps(p, e, &b->raw[r]))
                    return TCF_FUSER_OVERLAP;
        }
        if (rn->mean && rn->rstd && rn->mean < rn->rstd + rows && rn->rstd < rn->mean + rows)
            return TCF_FUSER_OVERLAP;
    }
    for (unsigned r = 0; r < nraw; r++)
        slots += !b->raw[r].dead || b->raw[r].loaded;
    if (slots > TCF_GROUP_MAX_BUFS)
        return TCF_FUSER_TOO_BIG;
    /* An N-d kernel's offsets are 32-bit: a contiguous op of more than 2^31 bytes keeps
     * its own group. */
    for (unsigned r = 0; strided && r < nraw; r++)
        if (b->raw[r].end - b->raw[r].beg - 1 > TCF_FUSER_OFF_MAX ||
            b->raw[r].beg - b->raw[r].ptr > TCF_FUSER_OFF_MAX)
            return TCF_FUSER_TOO_BIG;

    for (unsigned i = 0; i < 3; i++) {
        const tcf_fuser_buf_t *x = &b->raw[ref[i + 1]];
        b->src[k][i] = i >= op->nin ? 0
                     : x->writer >= 0 ? (uint8_t)(TCF_SRC_OP | x->writer) : ref[i + 1];
    }
    b->out[k] = ref[0];
    b->raw[ref[0]].writer = (int8_t)k;
    for (unsigned r = 0; r < nraw; r++)
        memcpy(b->raw[r].st, rst[r], sizeof b->raw[r].st);
    b->sp = sp;
    b->strided = (uint8_t)strided;
    b->item[k] = idx;
    b->xop[k] = *op;
    if (isred)
        b->red = (uint8_t)(k + 1), b->K = op->it.size[0], b->M = op->it.size[1];
    if (row)
        b->rowops |= 1u << k;
    if (op->kind == TCF_OP_CAT)
        b->cat++;
    b->nraw = (uint8_t)nraw;
    b->nscalars = (uint8_t)(b->nscalars + op->nscalar);
    b->n = op->n;
    b->nops++;
    return -1;
}

int tcf_fuser_build_step(tcf_fuser_build_t *b, const tcf_item_t *items, uint16_t idx)
{
    const tcf_op_t *op = &items[idx].op;
    if (!b->nops || items[idx].kind != TCF_ITEM_OP || !tcf_fuser_op_ok(op))
        return -1;
    for (unsigned o = 0; o <= op->nin; o++) {
        uint64_t p, e = operand_extent(op, o, &p);
        for (unsigned r = 0; r < b->nraw; r++) {
            const tcf_fuser_buf_t *x = &b->raw[r];
            /* A buffer freed inside the run that the kernel never loads is never touched
             * by it: its store is dropped (dead), and its readers in the group take the
             * value from registers. A block the allocator hands out again there (the
             * rotary embedding's negation, writing where q's rotate_half(q) * sin was) is
             * free for the stepped op. */
            if (x->dead && !x->loaded)
                continue;
            if (overlaps(p, e, x) && (!o || x->writer >= 0))
                return -1;
        }
    }
    uint64_t p, e = operand_extent(op, 0, &p);
    if (b->nsw < 4 && e - p == (uint64_t)op->n * tcf_dtype_size(op->out_dt))
        b->sw_beg[b->nsw] = p, b->sw_end[b->nsw++] = e;   /* dense: every byte written */
    return 0;
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
            for (unsigned j = 1; j <= it->op.nin; j++) {
                uint64_t p, e = operand_extent(&it->op, j, &p);
                for (unsigned r = 0; r < b->nraw; r++)
                    if (pending[r] && overlaps(p, e, &b->raw[r]))
                        pending[r] = 0, left--;   /* read: the store stays */
            }
        } else if (it->kind != TCF_ITEM_ALLOC && it->kind != TCF_ITEM_AHEAD) {
            return;
        }
    }
}

/* A strided group's vector width: 16 / the widest element when every buffer can be
 * moved as packs along dim 0 (fuser.h), with bcast0 the buffers broadcast along it; else
 * 1. */
static unsigned strided_vec(const tcf_fuser_build_t *b, const tcf_group_t *g,
                            const uint8_t *slot, const uint8_t *keep, unsigned maxes,
                            uint16_t *bcast0)
{
    unsigned v = 16 / maxes;
    uint8_t catin[TCF_FUSER_RAW_MAX] = { 0 };   /* raw buffers a two-input cat reads */
    *bcast0 = 0;
    if (b->sp.size[0] % v)
        return 1;
    /* A two-input cat picks its input by the element's index, e % P < T (op.h): where P
     * and T are multiples of the pack (and the pack's first index one), every element of
     * a pack picks the same input, and the kernel loads only that input's pack. */
    for (unsigned k = 0; k < b->nops; k++) {
        const tcf_op_t *op = &b->xop[k];
        if (op->kind != TCF_OP_CAT || op->nin != 2)
            continue;
        if (op->s[0].bits % v || op->s[1].bits % v)
            return 1;
        for (unsigned i = 0; i < 2; i++)
            if (!(b->src[k][i] & TCF_SRC_OP))
                catin[b->src[k][i]] = 1;
    }
    for (unsigned r = 0; r < b->nraw; r++) {
        const tcf_fuser_buf_t *x = &b->raw[r];
        unsigned es = tcf_dtype_size(x->dt), al = es * v > 16 ? 16 : es * v;
        int stored = x->writer >= 0 && keep[r];
        if (slot[r] == TCF_NO_STORE)
            continue;
        if (x->st[0] == 0 && !stored) {
            /* one element for the pack, loaded whatever the pick: not a cat's input */
            if (catin[r])
                return *bcast0 = 0, 1;
            *bcast0 |= (uint16_t)(1u << slot[r]);
            continue;
        }
        if (x->st[0] != es || x->ptr % al)
            return *bcast0 = 0, 1;
        for (unsigned d = 1; d < b->sp.nd; d++)
            if (x->st[d] % al)
                return *bcast0 = 0, 1;
    }
    (void)g;
    return v;
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
        if (b->strided)
            memcpy(fg->args.stride[g->nbufs], x->st, b->sp.nd * sizeof *x->st);
        if (tcf_dtype_size(x->dt) > maxes)
            maxes = tcf_dtype_size(x->dt);
        aligned &= (x->ptr & 15) == 0;
        if (x->loaded)
            fg->bytes_read += (b->red && !x->st[0] ? b->M : b->n) * tcf_dtype_size(x->dt);
        g->nbufs++;
    }

    for (unsigned k = 0; k < b->nops; k++) {
        const tcf_op_t *op = &b->xop[k];
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
    fg->bytes_avoided = unfused > fg->bytes_read + fg->bytes_written
                      ? unfused - fg->bytes_read - fg->bytes_written : 0;
    if (b->red) {
        /* a row group: gen_rows.c's kernel in the reduction's launch shape (fuser.h) */
        tcf_reduce_shape_of(&items[b->item[b->red - 1]].red, &g->rs);
        g->red = b->red, g->rowops = b->rowops, g->vec = 1;
        fg->args.size[0] = b->K, fg->args.size[1] = b->M;
        /* a norm's kernel takes a row's elements four at a time (its vectors): in packs
         * for each buffer contiguous along the row with every pack aligned, the others
         * (bcast0) one element at a time */
        if (tcf_red_norm(g->rs.op)) {
            g->vec = 4;
            for (unsigned s = 0; s < g->nbufs; s++) {
                uint64_t es = tcf_dtype_size(g->buf_dt[s]), al = 4 * es;
                if (fg->args.stride[s][0] != es || fg->args.buf[s] % al || fg->args.stride[s][1] % al)
                    g->bcast0 |= (uint16_t)(1u << s);
            }
        }
        return 0;
    }
    if (!b->strided) {
        g->vec = (uint8_t)(aligned ? 16 / maxes : 1);
        return !aligned;
    }
    /* N-d: the space and its dividers are arguments, so the source serves any shape of
     * this rank; vec 1 unless dim 0 moves as packs for every buffer */
    g->ndim = b->sp.nd;
    for (unsigned d = 0; d < b->sp.nd; d++) {
        fg->args.size[d] = b->sp.size[d];
        tcf_int_divider(b->sp.size[d], &fg->args.m1[d], &fg->args.shift[d]);
    }
    g->vec = (uint8_t)strided_vec(b, g, slot, keep, maxes, &g->bcast0);
    return 0;
}
