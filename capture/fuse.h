/* Fuse mode's kernel table and background worker (capture/fuse_kernels.c), and bitwise
 * verification of a generated kernel against the launches it replaces (fuse_verify.c).
 * Private to capture/. */
#ifndef TCF_FUSE_H
#define TCF_FUSE_H

#include "capture/internal.h"
#include "fuser/fuser.h"

/* One launch a group replaces, kept so that the worker can re-run it on scratch memory. */
typedef struct {
    CUfunction f;
    uint32_t   grid[3], block[3], smem;
    uint32_t   nparams, pbytes;
    uint32_t   off[8], size[8];   /* PyTorch's elementwise loops have at most 7 parameters */
    uint8_t    params[512];
    tcf_op_t   op;
} tcf_orig_t;

typedef struct {
    CUcontext        ctx;
    tcf_group_t      g;
    tcf_fused_args_t args;        /* as bound for the window that asked */
    uint64_t         n;
    uint32_t         norig;
    tcf_orig_t       orig[TCF_GROUP_MAX_OPS];
} tcf_fjob_t;

/* The generated kernel for group G of a window, in context ctx: returns it when compiled
 * and verified; otherwise NULL, and (the first time) queues its compile and verification.
 * For a held window (learn 0) a kernel the disk cache has is loaded at once, in this
 * thread: the GPU is waiting for the window anyway. For a window that ran as issued
 * (learn 1) the worker looks on disk. Never blocks on a compile (but see
 * TCFUSE_COMPILE_WAIT). */
CUfunction tcf_fkern_get(const tcf_fgroup_t *G, const tcf_window_t *w, const uint16_t *ev_of_item,
                         CUcontext ctx, int learn);

/* A window is held from a launch of a kernel that starts a group whose generated kernel
 * is ready (fuse.c). Not the element count: the generated source does not depend on it,
 * so a chain met at a new size is held and fused at once. The worker adds the start of
 * each kernel it makes ready. */
static inline uint64_t tcf_fuse_start_sig(const tcf_kernel_t *k)
{
    return k->id;  /* ids count from 1: never 0 */
}
void tcf_fuse_start_add(uint64_t sig);

/* Starts the worker, which opens NVRTC and the disk cache at once. 0, or -1 when no
 * thread could be made (then nothing is fused). */
int tcf_fkern_start(void);

/* Whether the worker found no NVRTC (then nothing is decoded). While it is still opening
 * NVRTC, launches are decoded and chains learned as usual: their jobs wait in the queue. */
int tcf_fkern_absent(void);

/* Stops the worker (at exit): waits for the job in hand, parks it, drops the rest. */
void tcf_fkern_stop(void);

/* Runs the job's original launches and the generated kernel on scratch buffers filled with
 * edge values and compares every stored buffer bitwise. 0 equal, 1 different, -1 could not
 * verify (why says why). Called by the worker, with ctx current. */
int tcf_fuse_verify(const tcf_fjob_t *job, CUfunction fused, CUstream s, char *why, size_t cap);

#endif
