/* fuser: planning. Given a window's work in order, decides which decoded elementwise ops
 * run together as one generated kernel, which of their stores can be dropped, and in what
 * order everything else still runs. Pure: no driver calls, no global state; the same input
 * gives the same plan (tests/unit/test_fuser.c, and `tcfuse plan` on recorded traces).
 *
 * Rules (DESIGN.md, Fusion):
 * - A group is a run of decoded ops over one iteration space (frees and allocations may
 *   sit between them; any other work ends the run), at most TCF_GROUP_MAX_OPS ops,
 *   TCF_GROUP_MAX_BUFS buffers the kernel loads or may store, and TCF_GROUP_MAX_SCALARS
 *   scalars. A group of one op gains nothing and is not formed. Greedy: an op that cannot
 *   join ends the group before it and starts the next one, except that up to 4 decoded ops
 *   over another space (size-differs, shape-differs) may be stepped over when each reads
 *   no bytes the group wrote before it and writes no bytes the group touched before it
 *   (dead buffers included): such an op runs as issued at its place, before the group's
 *   kernel, so the group's earlier ops in effect move after it, which nothing they touch
 *   can tell. A block the group freed and never loads is not touched by the kernel (its
 *   store is dropped): a stepped op may write there, and a later op of the group may read
 *   what it wrote when it wrote every byte of its extent. The rotary embedding's `q * cos`, `-q[..., d/2:]` (half the space), `cat`,
 *   `* sin`, `+` fuses that way, the negation stepped over. When nothing joins after a
 *   stepped op, the group ends before it and planning resumes there.
 * - Iteration spaces (space.c): a contiguous op's is [n]; a strided op's (PyTorch's
 *   OffsetCalculator loop) its dims, innermost first, without those of size 1; broadcast
 *   operands have stride 0. Ops join when their element counts are equal (else
 *   size-differs) and their spaces have a common refinement of at most TCF_OP_MAX_DIMS
 *   dims (else shape-differs): each op's dims are runs of the group's dims, and each
 *   operand's strides split over them. A contiguous op in a group with a strided one is
 *   that op with contiguous strides over the group's space. A group of contiguous ops only
 *   keeps the 1-D kernel (ndim 0).
 * - One tensor walked in two orders: a strided op whose dims are the group's in another
 *   order (each size found once) joins walked in the group's order, its dims and every
 *   operand's strides moved with them, before it is tried as it is (the rotary
 *   embedding's `q * cos` walks q's memory order, [D, H, S, B], the rest [D, S, H, B]).
 *   A cat is never walked in another order (its input is picked along its dim): a group
 *   of strided elementwise ops before it turns to the cat's order instead. Such a group
 *   keeps its space from then on (no finer one), so that verification's smaller problem
 *   can give each original's dims their group dims' sizes (tcf_fuser_op_sizes). An
 *   elementwise op computes each element alone: the order changes no bit.
 * - Buffers are views: base pointer, dtype and byte strides over the group's space. Two
 *   operands with equal views are the same buffer (every element touches the same bytes
 *   in both). Views whose extents ([ptr, ptr + largest offset + element size)) are
 *   disjoint are different buffers. Overlapping extents with different views are allowed
 *   only while neither is written inside the group (reads of x and x.t() in one kernel);
 *   a write into a range another view of the group reads or writes refuses the group
 *   ("overlap"), since another thread of the fused kernel may touch those bytes first.
 *   A buffer freed (exact pointer) inside the run is dead: a later touch of its range is a
 *   new buffer; reading that range before the group writes it is an overlap, and so is
 *   writing it through another view while the group loads the dead one (the kernel would
 *   read it after another thread wrote it: a block freed and handed out again at another
 *   element size, as PyTorch's allocator does between a residual add and its float cast).
 * - Inside a group, an op that reads a buffer an earlier op of the group wrote takes that
 *   op's result (rounded to its storage dtype, as eager stored it), not memory.
 * - Only a buffer's last writer in the group stores: an earlier store to the same buffer
 *   is overwritten inside the kernel, and nothing outside it could have read it (only
 *   frees and allocations sit between a group's ops). This is what the caching allocator,
 *   whose frees are invisible, leaves to drop (the hand GELU: 5 of 8 stores).
 * - A last writer's store is dropped only when the window later frees that exact
 *   allocation and nothing between the group's end and that free may read it (an opaque
 *   launch in between keeps it). With invisible frees every such store is kept.
 * - The fused kernel runs where the group's last op was; frees inside the group's span run
 *   after it, in their order; everything else runs as it was issued.
 * - Work issued ahead (TCF_ITEM_AHEAD: exec/ahead.c) ran before every op of the window
 *   and touches none of the bytes of those before it: the planner passes over it as over
 *   an allocation (a group may span it, a store past it may be dropped). Ops only ever
 *   move later, to their group's last op, so none moves before it.
 * - Buffers are numbered by first appearance (an op's inputs before its output), counting
 *   only those the kernel loads or stores. A contiguous group's vec = 16 / the widest
 *   element, or 1 when any of their addresses is not 16-byte aligned. A strided group
 *   indexes its space (sizes, IntDividers and strides in the args, every offset under
 *   2^31) with vec = 16 / the widest element when dim 0 is a multiple of it and every
 *   buffer is contiguous along dim 0 with its address and outer strides aligned to its
 *   pack, or (loaded only) broadcast along dim 0; else vec 1.
 * - Row reductions (TCF_ITEM_REDUCE, codegen/reduce.h): a group may hold one. It is the
 *   op [K, M] -> [M] whose input view has strides (element size, row stride) and whose
 *   output view (0, output stride) is broadcast along the row, so dataflow through views
 *   links it to its producers and consumers as any op. Its rows must be one dim (odims
 *   1), K and M at least 2, and the group's space must be and stay exactly [K, M] (else
 *   reduce-shape; a second reduction ends the group: reduce-follows). After it, an op
 *   over M elements with a 1-d space is per row: it joins as the op over [K, M] with
 *   every stride 0 along the row (+ eps, rsqrt on the [rows, 1] mean). A per-row write
 *   into a buffer the group loads is an overlap (its store precedes the second pass).
 *   The kernel is codegen/gen_rows.c's; vec 1, ndim 0, the strides in args.stride[][0..1].
 * - A softmax or a norm in the reduction's place (reduce.h: tcf_red_fullrow) has a full
 *   row as its result: it joins as an op elementwise over [K, M] (softmax: its input, and
 *   the backward's output; norm: x, and gamma and beta as views broadcast over the rows),
 *   and no per-row op follows it. A norm also stores a mean and an rstd a row, outside
 *   the group's buffers: they may overlap none of them (overlap), and nothing joins
 *   after a norm (reduce-shape), so no later op or op stepped over can depend on them.
 * - A cat (op.h's CAT, recognize/decode_cat.c) joins over its output's space like any
 *   N-d op: its output is a view like any, each input a view over the whole space whose
 *   base is shifted back along the cat dim, read only over its range. Overlap tests use
 *   each input's real bytes (from its first element, over its range): the shifted base
 *   lies in another tensor. A 2-byte cat moves OpaqueType<2>: it takes the dtype of the
 *   first later op reading its output, else of the op that wrote an input, else half.
 *   A group with a two-input cat runs at vec 1 (its input is picked per element), and
 *   no cat joins a row group (reduce-shape).
 * - An op that is not fused counts once in reasons, under the stronger cause on its two
 *   sides (overlap, then group-full, then shape-differs, then size-differs, then alone).
 *   UNALIGNED counts the ops of contiguous groups that fell to vec 1: those ops were
 *   fused. An op tcf_fuser_plan cannot reason about (NONE dtype, null or wrapping range,
 *   counts out of range, dims that do not multiply to n) is opaque.
 */
#ifndef TCF_FUSER_H
#define TCF_FUSER_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/codegen.h"

#define TCF_FUSER_MAX_ITEMS 1024
#define TCF_FUSER_MAX_GROUPS 64

/* An iteration space: nd >= 1 sizes, innermost first, none 1 but in the space of one
 * element ([1]). */
typedef struct {
    uint8_t  nd;
    uint32_t size[TCF_OP_MAX_DIMS];
} tcf_space_t;

typedef enum {
    TCF_ITEM_OP = 0,   /* a decoded elementwise launch (op is valid) */
    TCF_ITEM_OPAQUE,   /* any other launch or device operation: may read or write anything */
    TCF_ITEM_ALLOC,    /* ptr, size: a stream-ordered allocation */
    TCF_ITEM_FREE,     /* ptr: a stream-ordered free */
    TCF_ITEM_REDUCE,   /* a decoded row reduction (red is valid) */
    TCF_ITEM_AHEAD,    /* other work that went to the GPU ahead of every decoded launch
                        * before it, shown to touch none of their bytes (exec/ahead.c):
                        * passed over, as an allocation is */
} tcf_item_kind_t;

typedef struct {
    tcf_item_kind_t kind;
    union {
        tcf_op_t     op;      /* TCF_ITEM_OP */
        tcf_reduce_t red;     /* TCF_ITEM_REDUCE */
    };
    uint64_t        ptr, size;/* ALLOC, FREE (size 0 when unknown) */
} tcf_item_t;

/* Where a group's buffer address and scalars come from, so that a later window with the
 * same structure can bind its own values without planning again. */
typedef struct { uint16_t item; uint8_t operand; } tcf_bind_t;  /* operand: 0 = out, 1+i = in[i] */
typedef struct { uint16_t item; uint8_t slot; } tcf_sbind_t;    /* op.s[slot] */

typedef struct {
    uint16_t         first, last;        /* item span (inclusive) */
    uint8_t          nitems;             /* ops in the group */
    uint16_t         items[TCF_GROUP_MAX_OPS];
    uint64_t         n;
    tcf_group_t      g;                  /* for codegen */
    tcf_fused_args_t args;               /* bound for this window */
    tcf_bind_t       buf_from[TCF_GROUP_MAX_BUFS];
    tcf_sbind_t      scalar_from[TCF_GROUP_MAX_SCALARS];
    uint8_t          stores_dropped;
    uint64_t         bytes_read, bytes_written, bytes_avoided; /* vs the ops run one by one */
} tcf_fgroup_t;

/* Why an op was not fused; counted per plan. Listed once: enum and names. */
#define TCF_FUSER_REASONS(X)                                                              \
    X(ALONE,       "alone")         /* no neighbour to fuse with (a group of one) */       \
    X(SIZE,        "size-differs")  /* neighbours over another element count */            \
    X(SHAPE,       "shape-differs") /* same count, spaces with no common refinement */     \
    X(OVERLAP,     "overlap")       /* partial overlap or dtype aliasing between buffers */ \
    X(TOO_BIG,     "group-full")    /* ops or buffers past the group limits */             \
    X(ROWS,        "reduce-shape")  /* a row reduction that cannot join: its rows are not  \
                                     * one dim, a row or a row count under 2, or the group's \
                                     * space would not stay [row, rows] */                 \
    X(REDUCE2,     "reduce-follows")/* a group holds one reduction: the next one ends it */ \
    X(UNALIGNED,   "unaligned")     /* not a reason to refuse: recorded when vec = 1 */

typedef enum {
#define TCF_FUSER_ENUM_(id, s) TCF_FUSER_##id,
    TCF_FUSER_REASONS(TCF_FUSER_ENUM_)
#undef TCF_FUSER_ENUM_
    TCF_FUSER_NREASON
} tcf_fuser_reason_t;

typedef struct {
    uint16_t     ngroups;
    tcf_fgroup_t groups[TCF_FUSER_MAX_GROUPS];
    int16_t      item_group[TCF_FUSER_MAX_ITEMS]; /* [0, n): group index, or -1: runs as
                                                   * issued; past n: not written */
    uint32_t     reasons[TCF_FUSER_NREASON];      /* ops not fused, by reason */
    uint8_t      item_why[TCF_FUSER_MAX_ITEMS];   /* [0, n): the reason an op that runs as
                                                   * issued was counted under, else 0xff */
} tcf_plan_t;

/* Plans items[0..n). Returns 0, or -1 when n > TCF_FUSER_MAX_ITEMS (nothing fused). */
int tcf_fuser_plan(const tcf_item_t *items, size_t n, tcf_plan_t *plan);

/* Re-binds group grp's args from another window whose items have the same structure.
 * Returns 0, or -1 when the new window's addresses break the group (overlap): run it as
 * issued. */
int tcf_fuser_bind(const tcf_fgroup_t *grp, const tcf_item_t *items, size_t n,
                   tcf_fused_args_t *args);

/* The group of op alone, every store kept, bound to op's addresses and scalars: what
 * checking one decoded kernel against its original runs. 0, or -1 when op cannot be
 * reasoned about or its own operands overlap. */
int tcf_fuser_single(const tcf_op_t *op, tcf_fgroup_t *g);

/* The op a row reduction joins a group as: kind NONE, one input, over [K, M] (K the row
 * length, M the rows): input strides (element size, row stride), output (0, output
 * stride); a softmax's or a norm's output (element size, row stride), and their other
 * inputs (above). 0, or -1 when it cannot join any group (reduce-shape). */
int tcf_fuser_reduce_op(const tcf_reduce_t *r, tcf_op_t *op);
/* The bytes a decoded item (OP or REDUCE) may touch: up to TCF_FUSER_EXTENTS ranges
 * [beg[i], end[i]), as the planner's overlap tests see them. The count, or -1 when the
 * item cannot be reasoned about (the planner would treat it as opaque). */
#define TCF_FUSER_EXTENTS 8
int tcf_fuser_extents(const tcf_item_t *it, uint64_t beg[TCF_FUSER_EXTENTS],
                      uint64_t end[TCF_FUSER_EXTENTS]);

/* A row group's kernel argument (g.red > 0, codegen.h): the reduction's own (from its item
 * in items, the window the group was planned or bound on), then args' buffers, their
 * strides along the row and across rows, and scalars. 0, or -1 when grp is no row group
 * of that window. */
int tcf_fuser_rows_args(const tcf_fgroup_t *grp, const tcf_item_t *items, size_t n,
                        const tcf_fused_args_t *args, tcf_rows_args_t *ra);

const char *tcf_fuser_reason_name(tcf_fuser_reason_t r);

/* --- verification's smaller problem (exec/verify.c) ------------------------------------ */
/* Sizes of sp at which to check a group with at most `target` elements (at least one):
 * outermost dims are cut first (to 1, then the one that reaches the target is cut to what
 * fits), inner dims keep their sizes. A cut of dim 0 keeps a multiple of align0 (the
 * kernel's pack, which the planner made divide dim 0) when it can. Fills
 * newsize[0..sp->nd); returns their product. */
uint64_t tcf_fuser_verify_sizes(const tcf_space_t *sp, uint64_t target, unsigned align0,
                                uint32_t *newsize);
/* What op (one of the group whose space is sp) becomes when the group runs at newsize
 * (from tcf_fuser_verify_sizes): its element count (*opn) and, for a strided op, the size
 * of each of its op.it.ndim dims (opsize; dims of size 1 stay 1). Its strides do not
 * change: the smaller problem is the same elements' first corner. 0, or -1 when the op's
 * dims are neither runs of sp's nor sp's dims in another order (tcf_fuser_perm_of). */
int tcf_fuser_op_sizes(const tcf_op_t *op, const tcf_space_t *sp, const uint32_t *newsize,
                       uint32_t *opsize, uint32_t *opn);

/* Whether op (strided, not a cat) walks sp's dims in another order: its dims other than
 * those of size 1 are sp's dims, each size found once in sp, not in sp's order. Then
 * map[d] is the sp dim of op dim d (0xff for a dim of size 1) and 0 is returned; else
 * -1. Planning walks such an op in the group's order (group.c), and verification's
 * smaller problem gives each of its dims its group dim's size (space.c). */
int tcf_fuser_perm_of(const tcf_op_t *op, const tcf_space_t *sp, uint8_t *map);

/* The space a group's kernel iterates: its args' sizes when g.ndim > 0, else [n]. */
void tcf_fuser_space(const tcf_group_t *g, const tcf_fused_args_t *args, tcf_space_t *sp);

#endif
