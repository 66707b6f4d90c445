/* space: iteration spaces over shapes (fuser.h, tcf_space_t). An op's space is its
 * OffsetCalculator's dims (recognize/decode.c) without the dims of size 1, or [n] for a
 * contiguous op; a group's is the common refinement of its ops' spaces: every boundary
 * (product of the sizes below a dim) of every op is a boundary of the group's, so each
 * op dim is a run of group dims, and an operand's stride over an op dim splits into
 * strides over those group dims. Two views of one buffer read the same bytes for every
 * element exactly when their strides over the common space are equal: that is what
 * dataflow compares. Pure arithmetic. */
#include <string.h>

#include "fuser/internal.h"

int tcf_space_of(const tcf_op_t *op, tcf_space_t *sp, uint32_t st[4][TCF_OP_MAX_DIMS])
{
    uint64_t count = 1;
    memset(sp, 0, sizeof *sp);
    memset(st, 0, 4 * sizeof st[0]);
    if (!op->it.ndim) {
        sp->nd = 1, sp->size[0] = op->n;
        for (unsigned o = 0; o <= op->nin && o < 4; o++)
            st[o][0] = tcf_dtype_size(o ? op->in_dt[o - 1] : op->out_dt);
        return op->n ? 0 : -1;
    }
    if (op->it.ndim > TCF_OP_MAX_DIMS)
        return -1;
    for (unsigned d = 0; d < op->it.ndim; d++) {
        uint32_t s = op->it.size[d];
        count *= s;
        if (!s || count > op->n)
            return -1;
        if (s == 1)
            continue;   /* any stride: no element moves along it */
        for (unsigned o = 0; o <= op->nin && o < 4; o++)
            st[o][sp->nd] = op->it.stride[o][d];
        sp->size[sp->nd++] = s;
    }
    if (count != op->n)
        return -1;
    if (!sp->nd)   /* one element */
        sp->nd = 1, sp->size[0] = 1;
    return 0;
}

int tcf_space_refine(const tcf_space_t *a, const tcf_space_t *b, tcf_space_t *out)
{
    uint64_t pa = a->size[0], pb = b->size[0], prev = 1;
    unsigned i = 0, j = 0, nd = 0;
    tcf_space_t r;
    memset(&r, 0, sizeof r);
    if (!a->nd || !b->nd)
        return -1;
    for (;;) {
        uint64_t next = pa < pb ? pa : pb;
        /* boundaries must form a chain under division: then every op dim is a whole run
         * of group dims and every split stride an exact multiple */
        if (next % prev)
            return -1;
        if (next != prev) {
            if (nd == TCF_OP_MAX_DIMS)
                return -1;
            r.size[nd++] = (uint32_t)(next / prev);
        }
        prev = next;
        if (pa == next && ++i < a->nd)
            pa *= a->size[i];
        if (pb == next && ++j < b->nd)
            pb *= b->size[j];
        if (i == a->nd || j == b->nd)
            break;
    }
    if (i != a->nd || j != b->nd)
        return -1;   /* different element counts */
    if (!nd)
        r.size[nd++] = 1;
    r.nd = (uint8_t)nd;
    *out = r;
    return 0;
}

void tcf_space_split(const tcf_space_t *from, const uint32_t *st, const tcf_space_t *to,
                     uint32_t *out)
{
    uint64_t lo = 1, dlo = 1, dhi = from->size[0];   /* group dim's and op dim's bounds */
    unsigned d = 0;
    for (unsigned k = 0; k < to->nd; k++) {
        while (lo >= dhi && d + 1 < from->nd)
            dlo = dhi, dhi *= from->size[++d];
        out[k] = st[d] * (uint32_t)(lo / dlo);
        lo *= to->size[k];
    }
    for (unsigned k = to->nd; k < TCF_OP_MAX_DIMS; k++)
        out[k] = 0;
}

uint64_t tcf_space_maxoff(const tcf_space_t *sp, const uint32_t *st)
{
    uint64_t m = 0;
    for (unsigned d = 0; d < sp->nd; d++)
        m += (uint64_t)(sp->size[d] - 1) * st[d];
    return m;
}

/* --- verification's smaller problem (fuser.h) ----------------------------------------- */

uint64_t tcf_fuser_verify_sizes(const tcf_space_t *sp, uint64_t target, unsigned align0,
                                uint32_t *newsize)
{
    uint64_t below = 1, total;
    unsigned d;
    if (!target)
        target = 1;
    for (d = 0; d < sp->nd; d++)
        newsize[d] = sp->size[d];
    /* outermost first: dims above the one cut are cut to 1, dims below it keep their size,
     * so every op dim keeps its inner sub-dims whole (tcf_fuser_op_sizes) */
    for (int k = (int)sp->nd - 1; k >= 0; k--) {
        below = 1;
        for (int j = 0; j < k; j++)
            below *= sp->size[j];
        if (below * sp->size[k] <= target)
            break;
        uint64_t keep = target / below;
        /* a packed N-d kernel's chunks never cross a row of dim 0: keep its rows whole */
        if (!k && align0 > 1 && keep >= align0 && sp->size[0] % align0 == 0)
            keep -= keep % align0;
        newsize[k] = (uint32_t)(keep ? keep : 1);
        if (keep)
            break;
    }
    total = 1;
    for (d = 0; d < sp->nd; d++)
        total *= newsize[d];
    return total;
}

/* An op that joined its group walked in the group's order (group.c): each of its dims
 * is one of the group's, so it takes that dim's new size. */
static int permuted_sizes(const tcf_op_t *op, const tcf_space_t *sp, const uint32_t *newsize,
                          uint32_t *opsize)
{
    uint8_t map[TCF_OP_MAX_DIMS];
    if (tcf_fuser_perm_of(op, sp, map))
        return -1;
    for (unsigned d = 0; d < op->it.ndim; d++)
        opsize[d] = map[d] == 0xff ? 1 : newsize[map[d]];
    return 0;
}

int tcf_fuser_op_sizes(const tcf_op_t *op, const tcf_space_t *sp, const uint32_t *newsize,
                       uint32_t *opsize, uint32_t *opn)
{
    uint64_t gp[TCF_OP_MAX_DIMS + 1], np[TCF_OP_MAX_DIMS + 1];   /* boundaries, old and new */
    gp[0] = np[0] = 1;
    for (unsigned k = 0; k < sp->nd; k++)
        gp[k + 1] = gp[k] * sp->size[k], np[k + 1] = np[k] * newsize[k];
    if (gp[sp->nd] != op->n)
        return -1;
    *opn = (uint32_t)np[sp->nd];
    if (!op->it.ndim)
        return 0;
    uint64_t p = 1, prevnew = 1;
    for (unsigned d = 0; d < op->it.ndim && d < TCF_OP_MAX_DIMS; d++) {
        p *= op->it.size[d];
        unsigned k = 0;
        while (k <= sp->nd && gp[k] != p)
            k++;
        if (k > sp->nd || np[k] % prevnew)
            return permuted_sizes(op, sp, newsize, opsize);   /* not a boundary */
        opsize[d] = (uint32_t)(np[k] / prevnew);
        prevnew = np[k];
    }
    return 0;
}

void tcf_fuser_space(const tcf_group_t *g, const tcf_fused_args_t *args, tcf_space_t *sp)
{
    memset(sp, 0, sizeof *sp);
    if (!g->ndim || g->ndim > TCF_OP_MAX_DIMS) {
        sp->nd = 1, sp->size[0] = (uint32_t)args->n;
        return;
    }
    sp->nd = g->ndim;
    memcpy(sp->size, args->size, g->ndim * sizeof *sp->size);
}
