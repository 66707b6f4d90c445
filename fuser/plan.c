/* plan: one pass over a window's items, growing a group while the ops that follow can join
 * it (fuser.h states the rules; group.c applies them op by op). Greedy: an op that cannot
 * join ends the group before it and starts the next one, so a conflict costs one split,
 * never the whole run; an op over another space that touches nothing the group did is
 * stepped over instead, and planning comes back to it if nothing joins after it. */
#include <string.h>

#include "fuser/internal.h"

const char *tcf_fuser_reason_name(tcf_fuser_reason_t r)
{
#define TCF_FUSER_NAME_(id, s) s,
    static const char *const names[] = { TCF_FUSER_REASONS(TCF_FUSER_NAME_) };
#undef TCF_FUSER_NAME_
    return (unsigned)r < TCF_FUSER_NREASON ? names[r] : "?";
}

/* Ops a group may step over (fuser.h): enough for the rotary embedding's negation
 * between q * cos and the rest of its sum, few enough that a rewind stays cheap. */
#define TCF_FUSER_STEPS 4

typedef struct {
    const tcf_item_t *items;
    size_t n;
    tcf_plan_t *plan;
    tcf_fuser_build_t b;
    int left;   /* why the group before the builder's first op ended (a fuser reason) */
    unsigned nstep;              /* ops the group being built has stepped over */
    unsigned npend;              /* of them, those after its last op so far */
    size_t back;                 /* the first of those: where planning resumes when the
                                  * group ends before another op joins it */
    uint8_t pend_why[TCF_FUSER_STEPS];
    uint16_t pend_item[TCF_FUSER_STEPS];
} tcf_fuser_walk_t;

/* Counts op `item`, which runs as issued, under reason r. */
static void not_fused(tcf_plan_t *p, size_t item, int r)
{
    p->reasons[r]++;
    p->item_why[item] = (uint8_t)r;
}

/* An op left alone is counted once, under the more telling of the reasons that cut it off
 * on its two sides: a conflict says more than a shape or size change, which says more
 * than having no fusible neighbour at all. */
static int rank(int r)
{
    return r == TCF_FUSER_OVERLAP ? 4 : r == TCF_FUSER_TOO_BIG ? 3
         : r == TCF_FUSER_SHAPE || r == TCF_FUSER_ROWS || r == TCF_FUSER_REDUCE2 ? 2
         : r == TCF_FUSER_SIZE;
}

/* Ends the group being built; right: why it ends. Returns 1 when ops it stepped over lie
 * past its last op: they are outside its span after all, and planning resumes at the first
 * of them (*i, the walk's next item). */
static int close_group(tcf_fuser_walk_t *w, int right, size_t *i)
{
    tcf_plan_t *p = w->plan;
    tcf_fuser_build_t *b = &w->b;
    int resume = w->npend > 0;
    if (resume)   /* it ended at its last op, whose right neighbour was stepped over */
        right = w->pend_why[0];
    if (b->nops == 1) {
        not_fused(p, b->item[0], rank(right) > rank(w->left) ? right : w->left);
    } else if (b->nops > 1 && p->ngroups == TCF_FUSER_MAX_GROUPS) {
        for (unsigned k = 0; k < b->nops; k++)   /* the plan's group table is full */
            not_fused(p, b->item[k], TCF_FUSER_TOO_BIG);
    } else if (b->nops > 1) {
        tcf_fgroup_t *g = &p->groups[p->ngroups];
        if (tcf_fuser_build_finish(b, w->items, w->n, g))
            p->reasons[TCF_FUSER_UNALIGNED] += g->nitems;
        for (unsigned k = 0; k < g->nitems; k++)
            p->item_group[g->items[k]] = (int16_t)p->ngroups;
        p->ngroups++;
    }
    b->nops = b->nraw = b->nscalars = b->red = b->cat = b->nsw = b->locked = 0;
    b->rowops = 0;
    w->left = right;
    if (resume)
        *i = w->back;
    w->nstep = w->npend = 0;
    return resume;
}

/* Offers decoded item i (an op or a row reduction) to the group being built: it joins,
 * is stepped over, or ends the group and starts the next. Returns 1 when planning resumes
 * at *i instead (close_group). */
static int offer(tcf_fuser_walk_t *w, size_t *i)
{
    tcf_plan_t *p = w->plan;
    uint16_t idx = (uint16_t)*i;
    int r = tcf_fuser_build_add(&w->b, w->items, idx);
    if (r < 0) {   /* joined: what it stepped over is inside the group's span for good */
        for (unsigned k = 0; k < w->npend; k++)
            not_fused(p, w->pend_item[k], w->pend_why[k]);
        w->npend = 0;
        return 0;
    }
    if ((r == TCF_FUSER_SIZE || r == TCF_FUSER_SHAPE) && w->nstep < TCF_FUSER_STEPS &&
        tcf_fuser_build_step(&w->b, w->items, idx) == 0) {
        if (!w->npend)
            w->back = *i;
        w->pend_item[w->npend] = idx;
        w->pend_why[w->npend++] = (uint8_t)r;
        w->nstep++;
        return 0;
    }
    if (close_group(w, r, i))
        return 1;
    if ((r = tcf_fuser_build_add(&w->b, w->items, idx)) >= 0) {
        not_fused(p, idx, r);   /* its own operands overlap, or a reduction no group holds */
        w->left = TCF_FUSER_ALONE;
    }
    return 0;
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
    memset(plan->item_why, 0xff, n);
    memset(&w, 0, sizeof w);
    w.items = items, w.n = n, w.plan = plan, w.left = TCF_FUSER_ALONE;
    w.b.nwin = n;

    /* A step back (close_group resuming at an op stepped over) always lands past the last
     * op of a group that held at least one op before it, so the walk ends. */
    for (size_t i = 0;; i++) {
        if (i == n) {
            if (close_group(&w, TCF_FUSER_ALONE, &i)) {
                i--;
                continue;
            }
            break;
        }
        const tcf_item_t *it = &items[i];
        switch (it->kind) {
        case TCF_ITEM_OP:
            if (!tcf_fuser_op_ok(&it->op)) {   /* cannot be reasoned about: opaque */
                if (close_group(&w, TCF_FUSER_ALONE, &i)) {
                    i--;
                    continue;
                }
                not_fused(plan, i, TCF_FUSER_ALONE);
                break;
            }
            /* fall through */
        case TCF_ITEM_REDUCE:   /* a row reduction joins as an op (group.c says how) */
            if (offer(&w, &i))
                i--;
            break;
        case TCF_ITEM_FREE:
            tcf_fuser_build_free(&w.b, it->ptr);
            break;
        case TCF_ITEM_ALLOC:
            break;   /* a new block cannot overlap anything live; reuse shows as a free */
        case TCF_ITEM_AHEAD:
            break;   /* it ran before every op here and touches none of their bytes */
        default:
            if (close_group(&w, TCF_FUSER_ALONE, &i))
                i--;
            break;
        }
    }
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
