/* plan: one pass over a window's items, growing a group while consecutive ops can join it
 * (fuser.h states the rules; group.c applies them op by op). Greedy: an op that cannot
 * join ends the group before it and starts the next one, so a conflict costs one split,
 * never the whole run. */
#include <string.h>

#include "fuser/internal.h"

const char *tcf_fuser_reason_name(tcf_fuser_reason_t r)
{
#define TCF_FUSER_NAME_(id, s) s,
    static const char *const names[] = { TCF_FUSER_REASONS(TCF_FUSER_NAME_) };
#undef TCF_FUSER_NAME_
    return (unsigned)r < TCF_FUSER_NREASON ? names[r] : "?";
}

typedef struct {
    const tcf_item_t *items;
    size_t n;
    tcf_plan_t *plan;
    tcf_fuser_build_t b;
    int left;   /* why the group before the builder's first op ended (a fuser reason) */
} tcf_fuser_walk_t;

/* An op left alone is counted once, under the more telling of the reasons that cut it off
 * on its two sides: a conflict says more than a shape or size change, which says more
 * than having no fusible neighbour at all. */
static int rank(int r)
{
    return r == TCF_FUSER_OVERLAP ? 4 : r == TCF_FUSER_TOO_BIG ? 3
         : r == TCF_FUSER_SHAPE || r == TCF_FUSER_ROWS || r == TCF_FUSER_REDUCE2 ? 2
         : r == TCF_FUSER_SIZE;
}

/* Ends the group being built; right: why it ends. */
static void close_group(tcf_fuser_walk_t *w, int right)
{
    tcf_plan_t *p = w->plan;
    tcf_fuser_build_t *b = &w->b;
    if (b->nops == 1) {
        p->reasons[rank(right) > rank(w->left) ? right : w->left]++;
    } else if (b->nops > 1 && p->ngroups == TCF_FUSER_MAX_GROUPS) {
        p->reasons[TCF_FUSER_TOO_BIG] += b->nops;   /* the plan's group table is full */
    } else if (b->nops > 1) {
        tcf_fgroup_t *g = &p->groups[p->ngroups];
        if (tcf_fuser_build_finish(b, w->items, w->n, g))
            p->reasons[TCF_FUSER_UNALIGNED] += g->nitems;
        for (unsigned k = 0; k < g->nitems; k++)
            p->item_group[g->items[k]] = (int16_t)p->ngroups;
        p->ngroups++;
    }
    b->nops = b->nraw = b->nscalars = b->red = b->cat = b->cat2 = 0;
    b->rowops = 0;
    w->left = right;
}

int tcf_fuser_plan(const tcf_item_t *items, size_t n, tcf_plan_t *plan)
{
    tcf_fuser_walk_t w;

    plan->ngroups = 0;
    memset(plan->reasons, 0, sizeof plan->reasons);
    if (n > TCF_FUSER_MAX_ITEMS || (n && !items))
        return -1;
    for (size_t i = 0; i < n; i++)  /* only what is planned: this runs at every flush */
        plan->item_group[i] = -1;
    memset(&w, 0, sizeof w);
    w.items = items, w.n = n, w.plan = plan, w.left = TCF_FUSER_ALONE;
    w.b.nwin = n;

    for (size_t i = 0; i < n; i++) {
        const tcf_item_t *it = &items[i];
        int r;
        switch (it->kind) {
        case TCF_ITEM_OP:
            if (!tcf_fuser_op_ok(&it->op)) {   /* cannot be reasoned about: opaque */
                close_group(&w, TCF_FUSER_ALONE);
                plan->reasons[TCF_FUSER_ALONE]++;
                break;
            }
            if ((r = tcf_fuser_build_add(&w.b, items, (uint16_t)i)) < 0)
                break;
            close_group(&w, r);
            if ((r = tcf_fuser_build_add(&w.b, items, (uint16_t)i)) >= 0) {
                plan->reasons[r]++;   /* its own operands overlap: never fusible */
                w.left = TCF_FUSER_ALONE;
            }
            break;
        case TCF_ITEM_REDUCE:   /* a row reduction joins as an op (group.c says how) */
            if ((r = tcf_fuser_build_add(&w.b, items, (uint16_t)i)) < 0)
                break;
            close_group(&w, r);
            if ((r = tcf_fuser_build_add(&w.b, items, (uint16_t)i)) >= 0) {
                plan->reasons[r]++;   /* a reduction no group can hold */
                w.left = TCF_FUSER_ALONE;
            }
            break;
        case TCF_ITEM_FREE:
            tcf_fuser_build_free(&w.b, it->ptr);
            break;
        case TCF_ITEM_ALLOC:
            break;   /* a new block cannot overlap anything live; reuse shows as a free */
        default:
            close_group(&w, TCF_FUSER_ALONE);
            break;
        }
    }
    close_group(&w, TCF_FUSER_ALONE);
    return 0;
}

int tcf_fuser_single(const tcf_op_t *op, tcf_fgroup_t *g)
{
    tcf_item_t item = { .kind = TCF_ITEM_OP, .op = *op };
    tcf_fuser_build_t b;
    memset(&b, 0, sizeof b);
    b.nwin = 1;
    if (!tcf_fuser_op_ok(op) || tcf_fuser_build_add(&b, &item, 0) >= 0)
        return -1;
    tcf_fuser_build_finish(&b, &item, 1, g);
    return 0;
}

int tcf_fuser_rows_args(const tcf_fgroup_t *grp, const tcf_item_t *items, size_t n,
                        const tcf_fused_args_t *args, tcf_rows_args_t *ra)
{
    const tcf_group_t *g = &grp->g;
    if (!g->red || g->red > grp->nitems || g->nbufs > TCF_GROUP_MAX_BUFS ||
        g->nscalars > TCF_GROUP_MAX_SCALARS || grp->items[g->red - 1] >= n ||
        items[grp->items[g->red - 1]].kind != TCF_ITEM_REDUCE)
        return -1;
    memset(ra, 0, sizeof *ra);
    tcf_reduce_args_of(&items[grp->items[g->red - 1]].red, &ra->r);
    for (unsigned b = 0; b < g->nbufs; b++)
        ra->buf[b] = args->buf[b], ra->st[b][0] = args->stride[b][0],
        ra->st[b][1] = args->stride[b][1];
    memcpy(ra->s, args->s, sizeof ra->s);
    return 0;
}
