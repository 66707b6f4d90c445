/* recognize: what a launch of a known library computes, and which code it came from.
 *
 * Four parts. Kernel identity (kernels.c): each launched handle's mangled name and
 * parameter layout, asked of the driver once and kept for the life of the process. Code
 * identity (images.c): for every module and library the process loads, an identity of what
 * was loaded, so that what tcfuse learns about a kernel (its verdict) is tied to the code
 * it was learned on. Decoding (decode.h, decode_rules.def, decode_cat.c): a PyTorch eager
 * kernel's launch as an op (tcf_op_t). Kernel families (family.c): what kind of work a kernel does, for
 * coverage tables.
 *
 * Callers: capture/ on every launch (tcf_kernel_get, on the application's thread), the
 * load wrappers of interpose/ (tcf_image_id, tcf_loaded), exec/ (decoding on the launch
 * path, verdicts in its worker). All functions are thread-safe. The driver is reached only
 * through base/driver.h's table; nothing here calls a hooked entry point.
 */
#ifndef TCF_RECOGNIZE_H
#define TCF_RECOGNIZE_H

#include <cuda.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/driver.h"
#include "recognize/decode.h"
#include "recognize/decode_reduce.h"

/* --- kernel identity (kernels.c) ------------------------------------------------------ */
enum { TCF_KIND_UNKNOWN = 0, TCF_KIND_KERNEL, TCF_KIND_FUNCTION };

typedef struct tcf_kernel {
    uint64_t    handle;
    uint32_t    id;           /* dense, from 1, in order of first launch */
    uint8_t     kind;
    uint32_t    nparams;      /* 0 with param_known 0: the driver would not say */
    uint8_t     param_known;
    uint32_t    param_bytes;  /* end of the last parameter */
    uint64_t    name_hash, layout_hash;
    const char *name;         /* owned; "" when unknown */
    uint32_t   *off, *size;   /* nparams each */
    atomic_int  traced;       /* its "kernel" line is in the trace (capture/trace.c) */
    /* What exec/ learns about it. */
    atomic_int  fuse_state;   /* TCF_FUSE_*: whether fuse mode may hold its launches */
    tcf_decode_kernel_t dk;   /* what its name and layout decode to; written once before
                               * fuse_state becomes DECODABLE (release) */
    uint8_t     is_reduce;    /* a reduce_kernel: drk, not dk (written with dk) */
    tcf_decode_reduce_kernel_t drk;
    atomic_int  verdict;      /* TCF_KV_*: its decoding checked alone against it */
    /* exec/unread.c: masks of the bytes its launches' kernel may read, one per value of the
     * bytes they depend on (an OffsetCalculator's dims, a cat's grid.y), made once each,
     * never freed */
    _Atomic(struct tcf_reads *) reads[4];
    _Atomic uint64_t code;    /* identity of the code it came from (images.c); 0 unknown */
    atomic_int  code_known;   /* code was looked up */
    /* For the summary at exit, by family (relaxed counters). */
    uint8_t       family;     /* tcf_family_t of its name */
    uint8_t       collective; /* an NCCL kernel (tcf_kernel_collective): never in a graph */
    uint8_t       direct_gemm;/* a GEMM given its operands only as parameters
                               * (tcf_kernel_direct_gemm): may go ahead (exec/ahead.c) */
    uint8_t       refusal;    /* exec: why its launches are not decoded (tcf_decode_status_t) */
    atomic_ullong launches;   /* launches recorded by capture (all but those below) */
    atomic_ullong decoded;    /* exec: launches decoded into ops (held or issued and kept),
                               * recorded by exec instead: the kernel's total is the sum */
    atomic_ullong fused;      /* exec: launches replaced by a generated kernel */
} tcf_kernel_t;

enum { TCF_FUSE_UNKNOWN = 0, TCF_FUSE_DECODING, TCF_FUSE_DECODABLE, TCF_FUSE_NEVER };
enum { TCF_KV_UNKNOWN = 0, TCF_KV_OK, TCF_KV_BAD };

/* Makes the table (64 Ki handles). Before it, and when it is full or memory runs out,
 * tcf_kernel_get hands back one shared "unknown" entry (name "", no layout). */
void tcf_kernels_init(void);
/* The memoized identity of a handle; never NULL. Lock-free when known (the launch path). */
tcf_kernel_t *tcf_kernel_get(CUfunction f);
/* Distinct handles seen; lookups that found no room (counted as out-of-memory). */
uint32_t tcf_kernel_count(void);
/* The kernel with id i + 1 (ids count from 1 in order of first launch), for i below
 * tcf_kernel_count(); NULL past it. Entries are never freed. */
tcf_kernel_t *tcf_kernel_at(uint32_t i);
unsigned long long tcf_kernel_oom(void);

/* --- code identity (images.c) --------------------------------------------------------- */
/* The identity of an image passed to cuModuleLoadData and its kin, or of a file passed to
 * cuModuleLoad or cuLibraryLoadFromFile: never 0 when known, 0 when not (images.c says
 * what it is made of). */
uint64_t tcf_image_id(const void *image);
uint64_t tcf_image_file_id(const char *path);
/* Records id for the module or library handle the driver returned (as an integer). */
void tcf_loaded(uint64_t handle, uint64_t id);
/* The identity recorded for a handle; 0 unknown. */
uint64_t tcf_loaded_id(uint64_t handle);
/* The identity of the code kernel k came from (asked once of the driver, then kept). */
uint64_t tcf_kernel_code(tcf_kernel_t *k);

/* --- kernel families (family.c) ------------------------------------------------------ */
/* What kind of work a kernel does, by its mangled name: coverage tables print a row each. */
#define TCF_FAMILIES(X)                                                                  \
    X(GEMM, "gemm") X(ATTENTION, "attention") X(ELEMENTWISE, "elementwise")            \
    X(STRIDED, "elementwise-strided") X(COPY, "copy-cast") X(CAT, "cat")                 \
    X(REDUCE, "reduce") X(SOFTMAX, "softmax") X(NORM, "norm") X(FOREACH, "foreach")     \
    X(INDEX, "index-embedding") X(RNG, "rng") X(OTHER, "other")

typedef enum {
#define TCF_FAMILY_ENUM_(id, str) TCF_FAM_##id,
    TCF_FAMILIES(TCF_FAMILY_ENUM_)
#undef TCF_FAMILY_ENUM_
    TCF_FAM_COUNT
} tcf_family_t;

/* Whether a kernel is one of NCCL's collectives by its mangled name (ncclKernel_*,
 * ncclDevKernel_*): each launch of one runs work its host side posted just before it for
 * that launch (and proxy threads progress it), so replaying the launch from a graph, or
 * holding it, would run stale work or wait for ever. */
int tcf_kernel_collective(const char *name);
/* Whether a kernel is one of cuBLAS's own GEMMs (nvjet_*) that reach memory only through
 * the pointers in their parameters (TMA descriptors carry addresses as they are): names
 * with "group", "ptr" or "array" (grouped and pointer-array GEMMs read pointers from
 * device memory) are not. */
int tcf_kernel_direct_gemm(const char *name);
/* The family of a kernel by its mangled name (NULL or "": other). */
tcf_family_t tcf_kernel_family(const char *name);
/* Its printed name; "?" out of range. */
const char *tcf_family_name(tcf_family_t f);

#endif
