/* Which bytes of a launch's parameters its kernel never reads: padding between the
 * parameters, inside PyTorch's strided loops and ReduceOps the padding and the
 * OffsetCalculator entries past dims, and in a cat's metadata the slots past grid.y
 * (recognize/decode.h, decode_reduce.h). Those bytes
 * hold whatever the host's stack held, so they differ between launches that compute the
 * same thing. Verification zeroes them before it looks for stray pointers (verify.c);
 * replay leaves a graph node unpatched when only they changed (replay/graph.c). */
#include <stdlib.h>
#include <string.h>

#include "exec/internal.h"
#include "exec/steps.h"

/* A read mask of a kernel (its tcf_kernel_t's reads[]): 0xff for each byte its launches
 * may read, 0x00 for each it never reads, for the launches whose key is key. len 0: none
 * is unread (or the kernel's layout says nothing). */
struct tcf_reads {
    uint64_t key;
    uint32_t len;
    uint8_t  rd[];
};

/* The launch's grid.y, 0 when not known (a cat's slots are then taken as read). */
static uint32_t tcf_grid_y(const uint32_t *grid)
{
    return grid ? grid[1] : 0;
}

/* tcf_exec_unread, with k's decoding state fs read once by the caller (k's layout known,
 * len its size). */
static uint32_t tcf_exec_unread_as(tcf_kernel_t *k, int fs, const uint8_t *p, uint32_t len,
                                   const uint32_t *grid, uint8_t *unread)
{
    memset(unread, 0, len);
    /* between parameters: the kernel reads each at its offset, nothing else */
    uint32_t end = 0;
    for (uint32_t q = 0; q < k->nparams; q++) {
        if (k->off[q] > end)
            memset(unread + end, 1, k->off[q] - end);
        if (k->off[q] + k->size[q] > end)
            end = k->off[q] + k->size[q];
    }
    /* inside a decodable kernel's parameters: what its decoding says it lays out (the
     * kernel's dk or drk, written before fuse_state became DECODABLE) */
    if (fs == TCF_FUSE_DECODABLE) {
        if (k->is_reduce) {
            tcf_decode_reduce_unread(&k->drk, p, len, unread);
        } else if (k->dk.loop == TCF_LOOP_CAT) {
            tcf_decode_cat_unread(&k->dk, len, tcf_grid_y(grid), unread);
        } else {
            if (k->dk.loop == TCF_LOOP_STRIDED || k->dk.loop == TCF_LOOP_STRIDED_CAST) {
                unsigned nt = (k->dk.foff - k->dk.doff) / 8;   /* data[NT] before the functor */
                tcf_decode_offset_calc_unread(p + 8, len - 8, nt, unread + 8);
            }
            tcf_decode_functor_unread(&k->dk, len, unread);
        }
    }
    uint32_t n = 0;
    for (uint32_t b = 0; b < len; b++)
        n += unread[b];
    return n;
}

uint32_t tcf_exec_unread(tcf_kernel_t *k, const uint8_t *p, uint32_t len, const uint32_t *grid,
                         uint8_t *unread)
{
    if (!k || !k->param_known || len != k->param_bytes) {
        memset(unread, 0, len);
        return 0;
    }
    return tcf_exec_unread_as(k, tcf_fuse_state(k), p, len, grid, unread);
}

/* What tcf_exec_unread's marks depend on besides the kernel and its decoding state fs: the
 * dims of a strided loop's OffsetCalculator, and of a ReduceOp's input and output
 * calculators (the only bytes the recognize/ markers read), and a cat's grid.y. Launches
 * of one kernel with the same key have the same marks; 0 for a kernel not decodable (marks
 * of its layout alone), never 0 for one that is. */
static uint64_t tcf_exec_unread_key(tcf_kernel_t *k, int fs, const uint8_t *p, uint32_t len,
                                    const uint32_t *grid)
{
    uint32_t a = 0, b = 0;
    if (fs != TCF_FUSE_DECODABLE)
        return 0;
    if (k->is_reduce) {
        if (k->drk.icalc_off + 4 <= len && k->drk.ocalc_off + 4 <= len)
            memcpy(&a, p + k->drk.icalc_off, 4), memcpy(&b, p + k->drk.ocalc_off, 4);
    } else if (k->dk.loop == TCF_LOOP_CAT) {
        a = tcf_grid_y(grid);
    } else if ((k->dk.loop == TCF_LOOP_STRIDED || k->dk.loop == TCF_LOOP_STRIDED_CAST) &&
               len >= 12) {
        memcpy(&a, p + 8, 4);
    }
    return 1 + ((uint64_t)b << 32 | a);
}

const uint8_t *tcf_exec_reads(tcf_kernel_t *k, const uint8_t *p, uint32_t len,
                              const uint32_t *grid)
{
    if (!k || !k->param_known || len != k->param_bytes)
        return NULL;
    /* the state read once, for the key and the marks alike: a kernel decoded meanwhile by
     * another thread must not have its key made from one state and its marks from another */
    int fs = tcf_fuse_state(k);
    uint64_t key = tcf_exec_unread_key(k, fs, p, len, grid);
    for (unsigned i = 0; i < sizeof k->reads / sizeof k->reads[0]; i++) {
        struct tcf_reads *r = atomic_load_explicit(&k->reads[i], memory_order_acquire);
        if (!r) {   /* a new key: its mask made, and published in this slot if still free */
            struct tcf_reads *n = tcf_malloc(sizeof *n + len);
            if (!n)
                return NULL;
            n->key = key;
            n->len = tcf_exec_unread_as(k, fs, p, len, grid, n->rd) ? len : 0;
            for (uint32_t b = 0; b < n->len; b++)
                n->rd[b] = (uint8_t)(n->rd[b] - 1);   /* unread 1: 0x00; 0: 0xff */
            if (atomic_compare_exchange_strong_explicit(&k->reads[i], &r, n,
                                                        memory_order_acq_rel,
                                                        memory_order_acquire))
                return n->len ? n->rd : NULL;
            free(n);   /* another thread filled the slot: r is its mask */
        }
        if (r->key == key)
            return r->len ? r->rd : NULL;
    }
    return NULL;   /* a fifth key: none kept, nothing taken as unread */
}

void tcf_exec_reads_zero(uint8_t *dst, const uint8_t *src, const uint8_t *rd, uint32_t len)
{
    uint32_t i = 0;
    for (; i + 8 <= len; i += 8) {   /* a word at a time: hundreds of bytes a strided loop */
        uint64_t x, r;
        memcpy(&x, src + i, 8), memcpy(&r, rd + i, 8);
        x &= r;
        memcpy(dst + i, &x, 8);
    }
    for (; i < len; i++)
        dst[i] = src[i] & rd[i];
}

int tcf_exec_reads_same(const uint8_t *a, const uint8_t *b, const uint8_t *rd, uint32_t len)
{
    uint64_t moved = 0;   /* one AND a word, no branch: hundreds of bytes a strided loop */
    uint32_t w = 0;
    for (; w + 8 <= len; w += 8) {
        uint64_t x, y, r;
        memcpy(&x, a + w, 8), memcpy(&y, b + w, 8), memcpy(&r, rd + w, 8);
        moved |= (x ^ y) & r;
    }
    for (; w < len; w++)
        moved |= (uint64_t)((a[w] ^ b[w]) & rd[w]);
    return !moved;
}
