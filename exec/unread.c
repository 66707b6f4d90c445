/* Which bytes of a launch's parameters its kernel never reads: padding between the
 * parameters, and inside PyTorch's strided loops and ReduceOps the padding and the
 * OffsetCalculator entries past dims (recognize/decode.h, decode_reduce.h). Those bytes
 * hold whatever the host's stack held, so they differ between launches that compute the
 * same thing. Verification zeroes them before it looks for stray pointers (verify.c);
 * replay leaves a graph node unpatched when only they changed (replay/graph.c). */
#include <string.h>

#include "exec/internal.h"
#include "exec/steps.h"

uint32_t tcf_exec_unread(tcf_kernel_t *k, const uint8_t *p, uint32_t len, uint8_t *unread)
{
    memset(unread, 0, len);
    if (!k || !k->param_known || len != k->param_bytes)
        return 0;
    /* between parameters: the kernel reads each at its offset, nothing else */
    uint32_t end = 0;
    for (uint32_t q = 0; q < k->nparams; q++) {
        if (k->off[q] > end)
            memset(unread + end, 1, k->off[q] - end);
        if (k->off[q] + k->size[q] > end)
            end = k->off[q] + k->size[q];
    }
    /* inside a decodable kernel's parameters: what its decoding says it lays out (the
     * kernel's dk or drk, written before fuse_state became DECODABLE; decoded here when no
     * launch in fuse mode did it yet, as in graph mode) */
    int fs = atomic_load_explicit(&k->fuse_state, memory_order_acquire);
    if (fs == TCF_FUSE_UNKNOWN) {
        void *params = k;   /* only its presence counts: the params form */
        fs = tcf_fuse_decode_kernel(k, NULL, &params);
    }
    if (fs == TCF_FUSE_DECODABLE) {
        if (k->is_reduce) {
            tcf_decode_reduce_unread(&k->drk, p, len, unread);
        } else {
            if (k->dk.loop == TCF_LOOP_STRIDED || k->dk.loop == TCF_LOOP_STRIDED_CAST) {
                unsigned nt = (k->dk.foff - k->dk.doff) / 8;   /* data[NT] before the functor */
                tcf_decode_offset_calc_unread(p + 8, len - 8, nt, unread + 8);
            }
            tcf_decode_functor_unread(&k->dk, len, unread);   /* not a cat's */
        }
    }
    uint32_t n = 0;
    for (uint32_t b = 0; b < len; b++)
        n += unread[b];
    return n;
}
