/* codegen: CUDA C for a group of elementwise ops, and NVRTC to compile it.
 *
 * A group is pointer-free: it says what each op computes and where its operands come from
 * (a buffer of the group, or the result of an earlier op), never addresses or scalar
 * values. So the generated source depends on structure only, and is the disk cache's key.
 * Addresses, the element count and scalars are the kernel's arguments (tcf_fused_args_t),
 * bound at every launch: a changed learning rate reuses the kernel.
 *
 * Semantics the source must reproduce bit for bit (shared/PYTORCH-KERNELS.md): each op's
 * math exactly as PyTorch 2.11 computes it (opmath float for half/bf16, FMA contraction as
 * nvcc did, IEEE division and sqrt, no flush to zero), and every op's result rounded to its
 * storage dtype (out_dt), since eager stored it there and the next op loaded it back.
 */
#ifndef TCF_CODEGEN_H
#define TCF_CODEGEN_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/op.h"
#include "codegen/reduce.h"

#define TCF_GROUP_MAX_OPS 32
#define TCF_GROUP_MAX_BUFS 16
#define TCF_GROUP_MAX_SCALARS 16
#define TCF_SRC_OP 0x80   /* in_src = TCF_SRC_OP | k: the result of the group's op k */
#define TCF_NO_STORE 0xff /* out_buf: the result is not written (a dead intermediate) */

typedef struct {
    tcf_op_kind_t kind;
    uint8_t       mode, sarg, nin, nscalar;
    tcf_dtype_t   out_dt, in_dt[3], compute_dt, res_dt;   /* as in tcf_op_t */
    uint8_t       in_src[3];    /* buffer index, or TCF_SRC_OP | earlier op */
    uint8_t       out_buf;      /* buffer index, or TCF_NO_STORE */
    uint8_t       scalar_arg[2];/* index into tcf_fused_args_t.s for s[0], s[1] */
    tcf_dtype_t   scalar_dt[2]; /* how each scalar's bits are held: F32, or T (F16/BF16) */
} tcf_gop_t;

/* ndim 0: every buffer is n contiguous elements from its address (the kernel indexes
 * 1-D, 16-byte packs at vec > 1). ndim 1..TCF_OP_MAX_DIMS: the group iterates over an N-d
 * space whose sizes (innermost first) and each buffer's byte strides over it are
 * arguments (tcf_fused_args_t), so one kernel serves every shape of the same rank; each
 * element's index is decomposed once, with PyTorch's IntDivider arithmetic. At vec > 1
 * every buffer is contiguous along dim 0 (a pack of vec elements) or, for a buffer the
 * kernel only loads, broadcast along it (bit b of bcast0: one element for the pack); the
 * planner guarantees dim 0's size is a multiple of vec and every pack aligned. */
typedef struct {
    uint8_t     nops, nbufs, nscalars;
    uint8_t     vec;                        /* elements per thread access; 1 = scalar code */
    uint8_t     ndim;                       /* 0: contiguous; else the space's dims */
    uint16_t    bcast0;                     /* ndim > 0, vec > 1: buffers with stride 0 on dim 0 */
    tcf_gop_t   ops[TCF_GROUP_MAX_OPS];
    tcf_dtype_t buf_dt[TCF_GROUP_MAX_BUFS]; /* element type of each buffer */
    /* A row group (red > 0): ops[red - 1] is a row reduction (kind NONE, nin 1: in_src[0]
     * the reduced values, in_dt[0] == rs.in_dt; out_dt == rs.out_dt; out_buf where eager
     * stored its [rows] result, or TCF_NO_STORE). The space is [K, M]: dim 0 the row
     * (K = num_inputs elements), dim 1 the rows. Ops before it are elementwise over
     * [K, M]; an op after it is per row when bit k of rowops is set (its inputs are the
     * reduction, per-row ops or buffers broadcast along the row; it stores one value a
     * row), else elementwise over [K, M] (a broadcast consumer: x * rsqrt(mean + eps)).
     * The kernel is gen_reduce.c's for rs, in PyTorch's order, with the producers as its
     * prologue, the per-row ops in its epilogue and the elementwise consumers (and every
     * store of the producers) in its second pass over the row. Buffer strides, addresses
     * and scalars are in tcf_rows_args_t. ndim is 0, vec 1 and bcast0 0, but for a norm
     * (tcf_red_norm), whose kernel takes a row's elements four at a time: vec 4, and bit
     * b of bcast0 set for a buffer accessed one element at a time (not contiguous along
     * the row, or a pack of four not aligned to four elements), the others in packs. */
    uint8_t            red;
    uint32_t           rowops;
    tcf_reduce_shape_t rs;
} tcf_group_t;

/* A row group's kernel parameter: the reduction's own argument (src: eager's reduced
 * tensor, whose alignment fixes the vector head; dst unused), then every buffer of the
 * group with its byte strides along the row (st[b][0]) and across rows (st[b][1]), and
 * the scalars. */
typedef struct {
    tcf_reduce_args_t r;
    uint64_t buf[TCF_GROUP_MAX_BUFS];
    uint32_t s[TCF_GROUP_MAX_SCALARS];
    uint32_t st[TCF_GROUP_MAX_BUFS][2];
} tcf_rows_args_t;

/* The generated kernel's one parameter, passed by value. Host and source agree on it. A
 * contiguous kernel (ndim 0) declares only the first 200 bytes (n, buf, s), and the driver
 * copies what the kernel declares: its source is what it was before strided groups. */
typedef struct {
    uint64_t n;                              /* elements */
    uint64_t buf[TCF_GROUP_MAX_BUFS];        /* device addresses */
    uint32_t s[TCF_GROUP_MAX_SCALARS];       /* scalar bits (float bits, or 16-bit T) */
    /* ndim > 0: the space, innermost first, each size with its IntDivider (op.h) */
    uint32_t size[TCF_OP_MAX_DIMS], m1[TCF_OP_MAX_DIMS], shift[TCF_OP_MAX_DIMS];
    uint32_t stride[TCF_GROUP_MAX_BUFS][TCF_OP_MAX_DIMS];   /* bytes; every offset < 2^31 */
} tcf_fused_args_t;

#define TCF_FUSED_ARGS_FLAT 200   /* bytes of tcf_fused_args_t a contiguous kernel reads */

#define TCF_FUSED_KERNEL "tcf_fused"
#define TCF_FUSED_BLOCK 128

/* Writes NUL-terminated CUDA C for g into buf (extern "C" __global__ tcf_fused(args)).
 * Returns its length, or -1 when g is malformed or buf is too small. Deterministic. */
int tcf_codegen_source(const tcf_group_t *g, char *buf, size_t cap);

/* Grid for n elements (block TCF_FUSED_BLOCK). */
uint32_t tcf_codegen_grid(const tcf_group_t *g, uint64_t n);

/* --- NVRTC, found at run time -------------------------------------------------------- */
/* Finds libnvrtc: an override path (TCFUSE_NVRTC) if given, else one the process already
 * loaded, else libnvrtc.so.13 / .12 / libnvrtc.so from the library path. 0 or -1 (err says
 * why). Thread-safe; the first success sticks. Ends with a small warm-up compile. */
int tcf_nvrtc_open(const char *override_path, char *err, size_t errcap);
/* An exit handler that waits for any compile under way (nvrtc.c says why): registered
 * with atexit after the open and again after every compile. Set it before the open. */
void tcf_nvrtc_on_exit(void (*hook)(void));
/* Called after every exit handler registration (interpose/atexit.c) with the registering
 * object's handle: one from an NVRTC library is followed by the exit hook's. */
void tcf_nvrtc_exit_registered(void *dso);
/* Whether addr lies in a loaded library whose file name starts with "libnvrtc", found by
 * address (never by symbol: nvrtc.c says why). walk=1 skips _dl_find_object and walks the
 * loaded objects' segments, the way a C library without it is served (for tests). */
int tcf_nvrtc_owns(const void *addr, int walk);
/* "13.0" etc.; "" before a successful open. */
const char *tcf_nvrtc_version(void);
/* Compiles src for sm_<arch> (90 for H100) to a cubin, malloc'ed into *cubin (caller
 * frees). Options: no fast math, FMA contraction on (nvcc's default, which PyTorch used).
 * 0, or -1 with the NVRTC log (or the reason) in log. */
int tcf_nvrtc_compile(const char *src, int arch, void **cubin, size_t *len,
                      char *log, size_t logcap);

#endif
