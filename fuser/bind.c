/* bind: a group planned on one window, applied to another window with the same key. The
 * key promises the same structure, but the args must never be trusted to it: the group is
 * rebuilt from the new window's items with the very rules that formed it, and used only
 * if that yields the same kernel (same buffers, sources, stores, scalars and a vector
 * width the new addresses allow), and every op the group stepped over still may be. A
 * window that frees less than the planned one, or whose addresses now overlap, is refused
 * and runs as issued. */
#include <string.h>

#include "fuser/internal.h"

static int same_op(const tcf_gop_t *a, const tcf_gop_t *b)
{
    if (a->kind != b->kind || a->mode != b->mode || a->sarg != b->sarg || a->nin != b->nin ||
        a->nscalar != b->nscalar || a->out_dt != b->out_dt || a->compute_dt != b->compute_dt ||
        a->res_dt != b->res_dt || a->out_buf != b->out_buf || a->nin > 3 || a->nscalar > 2)
        return 0;
    for (unsigned i = 0; i < a->nin; i++)
        if (a->in_dt[i] != b->in_dt[i] || a->in_src[i] != b->in_src[i])
            return 0;
    for (unsigned s = 0; s < a->nscalar; s++)
        if (a->scalar_arg[s] != b->scalar_arg[s] || a->scalar_dt[s] != b->scalar_dt[s])
            return 0;
    return 1;
}

/* The kernel planned as `want` runs correctly with the bindings found in `got`. */
static int same_kernel(const tcf_fgroup_t *want, const tcf_fgroup_t *got)
{
    const tcf_group_t *a = &want->g, *b = &got->g;
    if (a->nops != b->nops || a->nbufs != b->nbufs || a->nscalars != b->nscalars ||
        a->nbufs > TCF_GROUP_MAX_BUFS || a->nscalars > TCF_GROUP_MAX_SCALARS)
        return 0;
    /* Wider access needs the alignment the plan assumed; scalar code runs anywhere. An
     * N-d kernel of another rank, or one whose packs broadcast other buffers, is another
     * kernel. */
    if ((a->vec > 1 && b->vec != a->vec) || a->ndim != b->ndim ||
        (a->vec > 1 && a->bcast0 != b->bcast0))
        return 0;
    /* a row group: the same reduction kernel (its block and vector widths follow the row
     * length) and the same ops per row */
    if (a->red != b->red || a->rowops != b->rowops ||
        (a->red && memcmp(&a->rs, &b->rs, sizeof a->rs)))
        return 0;
    for (unsigned k = 0; k < a->nops; k++)
        if (!same_op(&a->ops[k], &b->ops[k]))
            return 0;
    for (unsigned i = 0; i < a->nbufs; i++)
        if (a->buf_dt[i] != b->buf_dt[i] || want->buf_from[i].item != got->buf_from[i].item ||
            want->buf_from[i].operand != got->buf_from[i].operand)
            return 0;
    for (unsigned i = 0; i < a->nscalars; i++)
        if (want->scalar_from[i].item != got->scalar_from[i].item ||
            want->scalar_from[i].slot != got->scalar_from[i].slot)
            return 0;
    return 1;
}

int tcf_fuser_bind(const tcf_fgroup_t *grp, const tcf_item_t *items, size_t n,
                   tcf_fused_args_t *args)
{
    tcf_fuser_build_t b;
    tcf_fgroup_t got;
    unsigned k = 0;

    if (!grp || !items || !args || grp->nitems < 2 || grp->nitems > TCF_GROUP_MAX_OPS ||
        grp->first > grp->last || grp->last >= n || n > TCF_FUSER_MAX_ITEMS)
        return -1;
    memset(&b, 0, sizeof b);
    b.nwin = n;
    for (size_t i = grp->first; i <= grp->last; i++) {
        const tcf_item_t *it = &items[i];
        if (k < grp->nitems && i == grp->items[k]) {
            if ((it->kind != TCF_ITEM_REDUCE &&
                 (it->kind != TCF_ITEM_OP || !tcf_fuser_op_ok(&it->op))) ||
                tcf_fuser_build_add(&b, items, (uint16_t)i) >= 0)
                return -1;
            k++;
        } else if (it->kind == TCF_ITEM_FREE) {
            tcf_fuser_build_free(&b, it->ptr);
        } else if (it->kind == TCF_ITEM_OP) {
            if (tcf_fuser_build_step(&b, items, (uint16_t)i) != 0)
                return -1;   /* an op stepped over that now touches the group's bytes */
        } else if (it->kind != TCF_ITEM_ALLOC && it->kind != TCF_ITEM_AHEAD) {
            return -1;   /* other work inside the span: not the planned structure */
        }
    }
    if (k != grp->nitems)
        return -1;
    /* Frees after the group's last op but before the next op may have been seen by the
     * planner while the group was still open; drop_freed finds them again from there. */
    tcf_fuser_build_finish(&b, items, n, &got);
    if (!same_kernel(grp, &got))
        return -1;
    *args = got.args;
    return 0;
}
