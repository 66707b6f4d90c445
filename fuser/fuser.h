/* fuser: planning. Given a window's work in order, decides which decoded elementwise ops
 * run together as one generated kernel, which of their stores can be dropped, and in what
 * order everything else still runs. Pure: no driver calls, no global state; the same input
 * gives the same plan (tests/unit/test_fuser.c, and `tcfuse plan` on recorded traces).
 *
 * Rules (DESIGN.md, Fusion):
 * - A group is a run of consecutive decoded ops over the same element count n (frees and
 *   allocations may sit between them; any other work ends the run), at most
 *   TCF_GROUP_MAX_OPS ops, TCF_GROUP_MAX_BUFS buffers the kernel loads or may store, and
 *   TCF_GROUP_MAX_SCALARS scalars. A group of one op gains nothing and is not formed.
 *   Greedy: an op that cannot join ends the group before it and starts the next one.
 * - Buffers are compared by address range [ptr, ptr + n * size(dtype)): equal ranges with
 *   equal dtype are the same buffer; disjoint ranges are different buffers; anything else
 *   (partial overlap, or one buffer read with two dtypes) refuses the group ("overlap").
 *   A buffer freed (exact pointer) inside the run is dead: a later touch of its range is
 *   a new buffer, and reading that range before the group writes it is an overlap.
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
 * - Buffers are numbered by first appearance (an op's inputs before its output), counting
 *   only those the kernel loads or stores; vec = 16 / the widest element, or 1 when any of
 *   their addresses is not 16-byte aligned.
 * - An op that is not fused counts once in reasons, under the stronger cause on its two
 *   sides (overlap, then group-full, then size-differs, then alone). UNALIGNED counts the
 *   ops of groups that fell to vec 1: those ops were fused. An op tcf_fuser_plan cannot
 *   reason about (NONE dtype, null or wrapping range, counts out of range, strided
 *   operands: op.it.ndim > 0) is opaque.
 */
#ifndef TCF_FUSER_H
#define TCF_FUSER_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/codegen.h"

#define TCF_FUSER_MAX_ITEMS 1024
#define TCF_FUSER_MAX_GROUPS 64

typedef enum {
    TCF_ITEM_OP = 0,   /* a decoded elementwise launch (op is valid) */
    TCF_ITEM_OPAQUE,   /* any other launch or device operation: may read or write anything */
    TCF_ITEM_ALLOC,    /* ptr, size: a stream-ordered allocation */
    TCF_ITEM_FREE,     /* ptr: a stream-ordered free */
} tcf_item_kind_t;

typedef struct {
    tcf_item_kind_t kind;
    tcf_op_t        op;       /* TCF_ITEM_OP */
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
    X(OVERLAP,     "overlap")       /* partial overlap or dtype aliasing between buffers */ \
    X(TOO_BIG,     "group-full")    /* ops or buffers past the group limits */             \
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

const char *tcf_fuser_reason_name(tcf_fuser_reason_t r);

#endif
