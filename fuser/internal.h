/* fuser's private pieces, shared by its files: the group builder that both planning
 * (plan.c) and re-binding (bind.c) run, so that a re-bound window is judged by exactly
 * the rules that formed the group. Nothing outside fuser/ includes it. */
#ifndef TCF_FUSER_INTERNAL_H
#define TCF_FUSER_INTERNAL_H

#include "fuser/fuser.h"

/* Buffers as first seen, before the ones the kernel never touches are dropped: each op
 * adds at most four (out, three inputs), so this never fills before the op limit does. */
#define TCF_FUSER_RAW_MAX (4 * TCF_GROUP_MAX_OPS)

/* A buffer is a view: base pointer, dtype and byte strides over the group's space. Two
 * operands are the same buffer only when all three are equal (then every element reads
 * and writes the same bytes); [ptr, end) is its extent, for overlap tests. */
typedef struct {
    uint64_t    ptr, end;   /* ptr: the view's base; [beg, end): the bytes it reaches,
                             * from the first to the last element's end. beg is ptr but
                             * for a cat's input, whose base is shifted back (op.h) */
    uint64_t    beg;
    uint32_t    st[TCF_OP_MAX_DIMS];  /* bytes, over the builder's space */
    tcf_dtype_t dt;         /* its memory dtype */
    uint8_t     dead;       /* freed inside the run: a later touch is a new buffer */
    uint8_t     loaded;     /* read before the group wrote it: the kernel loads it */
    int8_t      writer;     /* the last group op that wrote it, or -1 */
    tcf_bind_t  from;       /* first appearance */
} tcf_fuser_buf_t;

typedef struct {
    uint64_t        n;
    tcf_space_t     sp;         /* the common refinement of the ops' spaces */
    uint8_t         strided;    /* an op of the group is strided: the kernel indexes N-d */
    uint8_t         nops, nraw, nscalars;
    uint8_t         red;        /* 1 + the index of the row reduction among the ops, or 0 */
    uint8_t         cat;        /* ops of kind CAT: no row group, no turn of the group */
    size_t          nwin;       /* items in the window (a 2-byte cat's dtype is its
                                 * neighbours': group.c) */
    uint32_t        rowops;     /* ops per row (after the reduction) */
    uint32_t        K, M;       /* red: the row length and the row count */
    /* An op joined walked in the group's order, or the group turned to a cat's: from
     * then on the space is fixed (no finer one), so that verification can tell each
     * original's dims from their sizes (tcf_fuser_op_sizes). */
    uint8_t         locked;
    /* What ops stepped over wrote, where they wrote every byte of their extent: a group
     * op reading there later reads their result, not a dead buffer's dropped store. */
    uint8_t         nsw;
    uint64_t        sw_beg[4], sw_end[4];
    uint16_t        item[TCF_GROUP_MAX_OPS];
    tcf_op_t        xop[TCF_GROUP_MAX_OPS];     /* each op as it joined (a reduction or a
                                                 * per-row op re-expressed over [K, M]) */
    uint8_t         out[TCF_GROUP_MAX_OPS];     /* raw buffer each op writes */
    uint8_t         src[TCF_GROUP_MAX_OPS][3];  /* raw buffer, or TCF_SRC_OP | op */
    tcf_fuser_buf_t raw[TCF_FUSER_RAW_MAX];
} tcf_fuser_build_t;

/* --- spaces (space.c) ------------------------------------------------------------------ */
/* The op's space (its dims without those of size 1, or [n] when contiguous) and each
 * operand's byte strides over it (st[0] the output, st[1 + i] in[i]). 0, or -1 when its
 * dims do not multiply to n. */
int tcf_space_of(const tcf_op_t *op, tcf_space_t *sp, uint32_t st[4][TCF_OP_MAX_DIMS]);
/* The common refinement of a and b (same element count): 0, or -1 when there is none
 * (their boundaries do not form a chain under division) or it needs more than
 * TCF_OP_MAX_DIMS dims. */
int tcf_space_refine(const tcf_space_t *a, const tcf_space_t *b, tcf_space_t *out);
/* Strides st over `from` re-expressed over its refinement `to` (out: TCF_OP_MAX_DIMS
 * entries, zero past to->nd). */
void tcf_space_split(const tcf_space_t *from, const uint32_t *st, const tcf_space_t *to,
                     uint32_t *out);
/* The largest byte offset of a view over sp. */
uint64_t tcf_space_maxoff(const tcf_space_t *sp, const uint32_t *st);

/* 1 when the op can be reasoned about at all: known dtypes, operand counts in range,
 * non-null pointers whose ranges do not wrap. Anything else is treated as opaque. */
int tcf_fuser_op_ok(const tcf_op_t *op);

/* Bytes per element of a memory dtype; 0 for NONE. */

/* Adds items[idx] (an op that passed tcf_fuser_op_ok, or a row reduction) as the
 * builder's next op. Returns -1 when added, else the reason it cannot join (SIZE, SHAPE,
 * OVERLAP, TOO_BIG, ROWS, REDUCE2); the builder is then unchanged. */
int tcf_fuser_build_add(tcf_fuser_build_t *b, const tcf_item_t *items, uint16_t idx);

/* Whether items[idx], a decoded op that cannot join, may be stepped over: it runs as
 * issued at its own place, so before the group's kernel, which runs where the group's last
 * op was; the group's ops before it then run after it. So it must read no bytes the group
 * has written so far and write no bytes the group has read or written (a dead buffer's
 * too), but a buffer freed inside the run that the kernel never loads, which the kernel
 * never touches. 0 when it may (the builder keeps what it wrote, when dense), else -1. */
int tcf_fuser_build_step(tcf_fuser_build_t *b, const tcf_item_t *items, uint16_t idx);

/* A free of ptr seen after the builder's ops: buffers starting there are dead. */
void tcf_fuser_build_free(tcf_fuser_build_t *b, uint64_t ptr);

/* Fills *g (span, codegen group, args, bindings, stores, bytes) from a builder of one
 * op or more; items[0..n) is the whole window, scanned after the group for frees.
 * Returns 1 when vec fell to 1 because an address is not 16-byte aligned, else 0. */
int tcf_fuser_build_finish(const tcf_fuser_build_t *b, const tcf_item_t *items, size_t n,
                           tcf_fgroup_t *g);

#endif
