/* Verification: before a generated kernel replaces anything, the launches it replaces and
 * the kernel itself run on the same scratch inputs (edge values: +-0, +-inf, NaN with
 * payloads, subnormals, extremes and random bits; every 16-bit pattern for half and bf16),
 * and every buffer the kernel stores must come out bitwise equal. The originals are
 * PyTorch's own kernels, re-launched with their copied parameters, every device address in
 * them swapped for a scratch one (decoding placed each pointer; an address we cannot map
 * makes the check impossible, and an unchecked kernel is never used). Runs in the worker
 * thread on its own stream; the application's memory is never touched. */
#include <stdlib.h>
#include <string.h>

#include "exec/internal.h"
#include "exec/steps.h"

#define TCF_VERIFY_N 70001u   /* odd, not a multiple of any vector width: tails run too */
#define TCF_MAX_ADDR (3 * TCF_GROUP_MAX_OPS + 3)   /* + a norm's mean and rstd */

static uint64_t tcf_rand(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* Elements [from, from + n) of an operand's edge-value fill into p. The fill is a function
 * of the element's index, the operand's seed and, for float and bool, a random stream:
 * *state carries it from one chunk to the next (start it at tcf_fill_state(seed)). */
static uint64_t tcf_fill_state(uint64_t seed) { return seed * 0x9E3779B97F4A7C15ull + 1; }

static void tcf_fill(uint8_t *p, tcf_dtype_t dt, uint64_t from, uint64_t n, uint64_t seed,
                     uint64_t *state)
{
    static const uint32_t f32_special[] = {
        0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x7fa00000,
        0x00000001, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800000,
        0xbf800000, 0x42b20000, 0xc2b20000, 0x41200000, 0x3effffff, 0x33800000 };
    for (uint64_t j = 0; j < n; j++) {
        uint64_t i = from + j;
        if (dt == TCF_DT_F32) {
            uint32_t v;
            if (i < sizeof f32_special / sizeof *f32_special)
                v = f32_special[i];
            else if (i % 3 == 0)
                v = (uint32_t)tcf_rand(state);  /* any bits at all */
            else  /* ordinary magnitudes, where most values live */
                v = (uint32_t)(0x3c000000u + (tcf_rand(state) % 0x0b000000u)) | (uint32_t)(i & 1) << 31;
            memcpy(p + 4 * j, &v, 4);
        } else if (dt == TCF_DT_BOOL) {
            p[j] = (uint8_t)(tcf_rand(state) & 1);
        } else {
            uint16_t v = (uint16_t)(i + seed * 7919u);  /* every pattern, offset per buffer */
            memcpy(p + 2 * j, &v, 2);
        }
    }
}

/* Host memory verification moves scratch through, whatever the operands' extents. */
#define TCF_VERIFY_CHUNK ((size_t)4 << 20)

/* One operand address of the job's originals: its dtype as first seen and the bytes its
 * views span at the smaller problem (the largest offset plus the element). */
typedef struct { uint64_t addr; tcf_dtype_t dt; uint64_t bytes; } tcf_vaddr_t;

static int tcf_addr_index(tcf_vaddr_t *a, uint32_t *na, uint64_t addr, tcf_dtype_t dt,
                          uint64_t bytes)
{
    for (uint32_t i = 0; i < *na; i++)
        if (a[i].addr == addr) {
            if (bytes > a[i].bytes)
                a[i].bytes = bytes;
            return (int)i;
        }
    if (*na == TCF_MAX_ADDR)
        return -1;
    a[*na] = (tcf_vaddr_t){ addr, dt, bytes };
    return (int)(*na)++;
}

/* The smaller problem a check runs: the group's space cut to at most TCF_VERIFY_N elements
 * (fuser.h: outermost dims first, the same elements' first corner), and what each original
 * becomes there: its element count and, when strided, its dims' sizes. */
typedef struct {
    tcf_space_t sp;
    uint32_t    size[TCF_OP_MAX_DIMS];           /* the group's, cut */
    uint64_t    n;                               /* their product */
    uint32_t    opn[TCF_GROUP_MAX_OPS];
    uint32_t    opsize[TCF_GROUP_MAX_OPS][TCF_OP_MAX_DIMS];
} tcf_vproblem_t;

/* Operand o's bytes (largest offset plus its element) in the smaller problem. */
static uint64_t tcf_operand_bytes(const tcf_op_t *op, unsigned o, uint32_t opn,
                                  const uint32_t *opsize)
{
    uint64_t es = tcf_dtype_size(o ? op->in_dt[o - 1] : op->out_dt), m = 0;
    if (!op->it.ndim)
        return (uint64_t)opn * es;
    for (unsigned d = 0; d < op->it.ndim && d < TCF_OP_MAX_DIMS; d++)
        m += (uint64_t)(opsize[d] - 1) * op->it.stride[o][d];
    return m + es;
}

/* Fills p for the group cut to `target` elements; 0, or -1 when an original's dims do not
 * line up with the group's (why says so). */
static int tcf_vproblem(const tcf_fjob_t *job, uint64_t target, tcf_vproblem_t *p, char *why,
                        size_t cap)
{
    if (job->g.red && tcf_red_fullrow(job->g.rs.op)) {
        /* A softmax or norm group runs on its first rows: their launches are made for any
         * row count (tcf_decode_fullrow_resize), and attention's scores would need
         * gigabytes whole. */
        memset(&p->sp, 0, sizeof p->sp);
        p->sp.nd = 2, p->sp.size[0] = job->args.size[0], p->sp.size[1] = job->args.size[1];
        p->n = tcf_fuser_verify_sizes(&p->sp, target, 1, p->size);
        for (uint32_t j = 0; j < job->norig; j++)
            if (tcf_fuser_op_sizes(&job->orig[j].op, &p->sp, p->size, p->opsize[j], &p->opn[j])) {
                snprintf(why, cap, "an original's dims are not the group's");
                return -1;
            }
        return 0;
    }
    if (job->g.red) {
        /* A row group is checked whole: its reduction's launch (config, grid, calculators)
         * is PyTorch's for these rows, and re-running it on fewer would need them made
         * again as setReduceConfig makes them. Its scratch is bounded below. */
        memset(&p->sp, 0, sizeof p->sp);
        p->sp.nd = 2, p->sp.size[0] = p->size[0] = job->args.size[0];
        p->sp.size[1] = p->size[1] = job->args.size[1];
        p->n = (uint64_t)p->size[0] * p->size[1];
        for (uint32_t j = 0; j < job->norig; j++) {
            const tcf_op_t *op = &job->orig[j].op;
            p->opn[j] = op->n;
            for (unsigned d = 0; d < TCF_OP_MAX_DIMS; d++)
                p->opsize[j][d] = d < op->it.ndim ? op->it.size[d] : 1;
        }
        return 0;
    }
    tcf_fuser_space(&job->g, &job->args, &p->sp);
    p->n = tcf_fuser_verify_sizes(&p->sp, target, job->g.ndim ? job->g.vec : 1, p->size);
    for (uint32_t j = 0; j < job->norig; j++)
        if (tcf_fuser_op_sizes(&job->orig[j].op, &p->sp, p->size, p->opsize[j], &p->opn[j])) {
            snprintf(why, cap, "an original's dims are not the group's");
            return -1;
        }
    return 0;
}

/* Whether v may be an address of the application's memory that a kernel could reach. A
 * word of the parameter bytes need not be a pointer: N beside a functor's scalar, an empty
 * closure's garbage bytes (nvcc's lambdas carry a host pointer there), a loader's dtype
 * and size arrays. Those in the span of device memory seen allocated are asked of the
 * driver, which knows each allocation; without the query every word in the span counts
 * (on real models that refused most checks: 'no operand' words at offset 0, in closures
 * and in loaders). */
static int tcf_app_memory(uint64_t v)
{
    uint64_t lo = atomic_load(&tcf_ctr.dev_lo), hi = atomic_load(&tcf_ctr.dev_hi);
    if (v < lo || v >= hi)
        return 0;
    /* A block the application freed and fuse mode keeps for reuse (reuse.c) is, for this
     * question, what a block back in the pool is: no operand's, and unknown to the driver
     * had it been freed there. Stale pointers to such blocks sit in parameter padding. */
    if (tcf_reuse_holds(v))
        return 0;
    if (!tcf_drv.pointer_get_attribute)
        return 1;
    unsigned int type = 0;  /* CUmemorytype; unused beyond the answer's existence */
    CUresult rc = tcf_drv.pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                (CUdeviceptr)v);
    /* Memory the driver does not know (CUDA_ERROR_INVALID_VALUE) no kernel can reach;
     * anything it knows, device or pinned host, counts. */
    return rc == CUDA_SUCCESS;
}

/* Scratch for one set of operands, at most: a check that needs more is not run. */
#define TCF_VERIFY_MAX_SET (1ull << 30)

/* Where a strided original's data pointers start: after its OffsetCalculator<NT> (304 +
 * 100 NT bytes at the closure's start, offset 8), 8-aligned. Words before it (dims,
 * dividers, strides) are no pointers, though two strides side by side may look like one. */
static uint32_t tcf_words_from(const tcf_op_t *op)
{
    if (op->loop != TCF_LOOP_STRIDED && op->loop != TCF_LOOP_STRIDED_CAST)
        return 0;
    return 8 + ((304 + 100 * (1u + op->nin) + 7) & ~7u);
}

/* A row group's argument on scratch: the reduction's own (its src and dst moved to their
 * scratch regions in set B: the same alignment, so the same vector head), the group's
 * buffers as bound in args, their strides and scalars. 0, or -1 when the reduction's
 * tensors are not among the operands. */
static int tcf_verify_rows_args(const tcf_fjob_t *job, const tcf_fused_args_t *args,
                                const tcf_vaddr_t *addr, uint32_t na, const uint64_t *rbase,
                                const uint32_t *off, CUdeviceptr setB, uint32_t rows,
                                tcf_rows_args_t *ra)
{
    const tcf_orig_t *red = NULL;
    for (uint32_t j = 0; j < job->norig; j++)
        if (job->orig[j].is_red)
            red = &job->orig[j];
    if (!red)
        return -1;
    memset(ra, 0, sizeof *ra);
    tcf_reduce_args_of(&red->red, &ra->r);
    ra->r.num_outputs = rows;   /* a softmax's first rows; any other reduction's all */
    int src = -1, dst = -1;
    for (uint32_t i = 0; i < na; i++) {
        if (addr[i].addr == red->red.src)
            src = (int)i;
        if (addr[i].addr == red->red.dst)
            dst = (int)i;
    }
    if (src < 0 || dst < 0)
        return -1;
    ra->r.src = setB + rbase[src] + off[src];
    ra->r.dst = setB + rbase[dst] + off[dst];
    /* a norm's mean and rstd (tcf_reduce_args_of put the application's there) */
    for (unsigned q = 0; q < 2; q++) {
        uint64_t v = ra->r.buf[q];
        int at = -1;
        for (uint32_t i = 0; i < na && v; i++)
            if (addr[i].addr == v)
                at = (int)i;
        if (v && at < 0)
            return -1;
        ra->r.buf[q] = v ? setB + rbase[at] + off[at] : 0;
    }
    for (unsigned b = 0; b < job->g.nbufs; b++)
        ra->buf[b] = args->buf[b], ra->st[b][0] = job->args.stride[b][0],
        ra->st[b][1] = job->args.stride[b][1];
    memcpy(ra->s, args->s, sizeof ra->s);
    return 0;
}

/* Scratch for one check, stream-ordered on the worker's stream where the driver has it.
 * cuMemAlloc and cuMemFree are implicit synchronizations (no two streams' work runs
 * concurrently across them): with hundreds of checks in a program's first iterations (an
 * empty cache), each serialized the application's queued work with the worker's. *async
 * says which form was used, for tcf_scratch_free. */
static CUresult tcf_scratch_alloc(CUdeviceptr *p, size_t n, CUstream s, int *async)
{
    *async = tcf_drv.mem_alloc_async && tcf_drv.mem_free_async;
    return *async ? tcf_drv.mem_alloc_async(p, n, s) : tcf_drv.mem_alloc(p, n);
}

static void tcf_scratch_free(CUdeviceptr p, CUstream s, int async)
{
    if (async)
        tcf_drv.mem_free_async(p, s);
    else
        tcf_drv.mem_free(p);
}

/* Compares len bytes of one region in the two sets (a at the originals', b at the
 * generated kernel's), whose operand of `bytes` bytes and dtype dt starts at off; host has
 * room for two chunks. With a mask (bit k: byte k of the region counts), a byte outside it
 * may differ. 0 equal, 1 differs (why names buffer `label`'s element), -1 could not read. */
static int tcf_verify_cmp(CUdeviceptr a, CUdeviceptr b, uint64_t len, uint32_t off,
                          uint64_t bytes, tcf_dtype_t dt, const uint8_t *mask, uint8_t *host,
                          CUstream s, unsigned label, char *why, size_t cap)
{
    size_t es = tcf_dtype_size(dt);
    for (uint64_t c0 = 0; c0 < len; c0 += TCF_VERIFY_CHUNK) {
        size_t m = len - c0 < TCF_VERIFY_CHUNK ? (size_t)(len - c0) : TCF_VERIFY_CHUNK;
        uint8_t *ha = host, *hb = host + TCF_VERIFY_CHUNK;
        if (tcf_drv.memcpy_dtoh_async(ha, a + c0, m, s) || tcf_drv.memcpy_dtoh_async(hb, b + c0, m, s) ||
            tcf_drv.stream_synchronize(s)) {
            snprintf(why, cap, "could not read scratch memory back");
            return -1;
        }
        if (!memcmp(ha, hb, m))
            continue;
        size_t k = 0;
        while (k < m && (ha[k] == hb[k] || (mask && !(mask[(c0 + k) >> 3] >> ((c0 + k) & 7) & 1))))
            k++;
        if (k == m)
            continue;
        uint64_t at = c0 + k;
        /* the element of the buffer's memory (its extent, in elements) that differs */
        long long e = at < off ? -1 : (long long)((at - off) / es);
        uint64_t first = e < 0 ? at : off + (uint64_t)e * es;
        uint32_t x = 0, y = 0;
        size_t w = first >= c0 && first - c0 + es <= m ? es : 1;
        if (w == 1)
            first = at;
        memcpy(&x, ha + (first - c0), w);
        memcpy(&y, hb + (first - c0), w);
        if (e < 0 || (uint64_t)(e + 1) * es > bytes)
            snprintf(why, cap, "buffer %u: a byte outside its %llu bytes differs (offset "
                     "%llu)", label, (unsigned long long)bytes, (unsigned long long)at);
        else
            snprintf(why, cap, "buffer %u element %lld of its memory: eager 0x%x, generated "
                     "0x%x (%s)", label, e, x, y, tcf_decode_dtype_name(dt));
        return 1;
    }
    return 0;
}

/* The bytes of a region (from its start, its operand at off) that the kernel's stored
 * views cover in the smaller problem p, as a bit mask of len bits: those of every stored
 * buffer b with bi[b] == i. NULL when out of memory. */
static uint8_t *tcf_stored_mask(const tcf_fjob_t *job, const tcf_vproblem_t *p,
                                const int *stored, const uint32_t *bi, uint32_t i, uint32_t off,
                                uint64_t len)
{
    uint8_t *mask = tcf_calloc((size_t)((len + 7) / 8), 1);
    unsigned nd = job->g.red ? 2u : job->g.ndim;
    if (!mask)
        return NULL;
    for (uint8_t b = 0; b < job->g.nbufs; b++) {
        if (!stored[b] || bi[b] != i)
            continue;
        uint64_t es = tcf_dtype_size(job->g.buf_dt[b]);
        for (uint64_t e = 0; e < p->n; e++) {
            uint64_t at = off, r = e;
            if (!nd)
                at += e * es;
            for (unsigned d = 0; d < nd; d++)
                at += (r % p->size[d]) * job->args.stride[b][d], r /= p->size[d];
            for (uint64_t x = at; x < at + es && x < len; x++)
                mask[x >> 3] |= (uint8_t)(1u << (x & 7));
        }
    }
    return mask;
}

/* One run of the check on problem p, operand i at byte offset off[i] (< 256) into its own
 * scratch region. 0 equal, 1 a stored buffer differs, -1 could not check. */
static int tcf_verify_pass(const tcf_fjob_t *job, const tcf_vaddr_t *addr, uint32_t na,
                           const uint32_t *off, const tcf_vproblem_t *p, CUfunction fused,
                           CUstream s, char *why, size_t cap)
{
    /* region i: [rbase[i], rbase[i] + rlen[i]) of each set, room for its bytes at any
     * offset below 256 */
    uint64_t rbase[TCF_MAX_ADDR], rlen[TCF_MAX_ADDR], total = 0;
    for (uint32_t i = 0; i < na; i++) {
        rlen[i] = (addr[i].bytes + 256 + 255) & ~255ull;
        rbase[i] = total;
        total += rlen[i];
    }
    if (total > TCF_VERIFY_MAX_SET) {
        snprintf(why, cap, "its smaller problem needs %llu bytes of scratch",
                 (unsigned long long)total);
        return -1;
    }
    CUdeviceptr base = 0;
    int async = 0;
    uint8_t *host = tcf_malloc(2 * TCF_VERIFY_CHUNK);
    if (!host || tcf_scratch_alloc(&base, total * 2, s, &async) != CUDA_SUCCESS) {
        free(host);
        snprintf(why, cap, "no scratch memory");
        return -1;
    }
    /* Set A (originals) at base + rbase[i] + off[i], set B (generated) after it; same
     * contents. */
    CUdeviceptr setB = base + total;
    int rc = -1;
    for (uint32_t i = 0; i < na; i++) {
        /* zeros, the operand's elements from off[i] on, zeros; chunk by chunk (off[i] and
         * the chunk are multiples of the element, so no element straddles two chunks; one
         * that did would stay zero in both sets) */
        uint64_t es = tcf_dtype_size(addr[i].dt), nel = addr[i].bytes / es;
        uint64_t state = tcf_fill_state(i + 1);
        for (uint64_t c0 = 0; c0 < rlen[i]; c0 += TCF_VERIFY_CHUNK) {
            size_t m = rlen[i] - c0 < TCF_VERIFY_CHUNK ? (size_t)(rlen[i] - c0) : TCF_VERIFY_CHUNK;
            uint64_t lo = c0 > off[i] ? (c0 - off[i] + es - 1) / es : 0;
            uint64_t hi = c0 + m > off[i] ? (c0 + m - off[i]) / es : 0;
            hi = hi < nel ? hi : nel;
            memset(host, 0, m);
            if (hi > lo)
                tcf_fill(host + (off[i] + lo * es - c0), addr[i].dt, lo, hi - lo, i + 1, &state);
            if (tcf_drv.memcpy_htod_async(base + rbase[i] + c0, host, m, s) ||
                tcf_drv.memcpy_htod_async(setB + rbase[i] + c0, host, m, s) ||
                tcf_drv.stream_synchronize(s))
                goto done;
        }
    }
    /* a row group runs whole, but for a softmax's or a norm's (tcf_vproblem) */
    int whole = job->g.red && !tcf_red_fullrow(job->g.rs.op);
    for (uint32_t j = 0; j < job->norig; j++) {
        static _Thread_local tcf_orig_t o;   /* 1.4 KiB: off the worker's stack */
        o = job->orig[j];
        /* Where pointers may sit: a strided loop's data[] and after (tcf_words_from), a
         * ReduceOp's src, dst[2], acc_buf, cta_buf and semaphores (decoding accepted it
         * with all but src and dst[0] null); before them are its config and calculators,
         * whose words no kernel dereferences, though two fields side by side can read as
         * one (the last divider's shift and a stride of 4: 0x4_0000_0000, an address of
         * cudaMallocAsync's pools, on the training step's sums). */
        uint32_t from = tcf_words_from(&o.op);
        if (o.is_red && !tcf_red_fullrow(o.red.op)) {
            const tcf_decode_reduce_kernel_t *rk = &tcf_kernel_get(o.f)->drk;
            from = rk->span == o.pbytes && rk->src_off + 48 <= o.pbytes ? rk->src_off : 0;
        } else if (o.is_red) {
            from = 0;
        }
        /* Bytes the kernel never reads hold whatever the caller's stack held (tcf_exec_unread):
         * the strided loop's bytes 4..7, beside N, took the high half of a pointer on
         * Llama and made word 0 look like an address the driver knew (verify_unable); the
         * unused entries of its OffsetCalculators held old pointers on the hand softmax
         * and LayerNorm's row groups. Zeroed. */
        int sm = o.is_red && tcf_red_fullrow(o.red.op);
        static _Thread_local uint8_t unread[TCF_PARAMS_MAX];
        if (tcf_exec_unread(tcf_kernel_get(o.f), o.params, o.pbytes, o.grid, unread))
            for (uint32_t b = 0; b < o.pbytes; b++)
                if (unread[b])
                    o.params[b] = 0;
        /* A cat's pointers sit in its metadata, the inputs' at their real first element
         * (the op holds its views' bases, shifted back along the cat dim): rewritten
         * whole, with the smaller problem's sizes, below. */
        int cat = o.op.kind == TCF_OP_CAT;
        if (cat)
            from = 8;
        /* Pointers sit in the data array; N is parameter 0 (int) in every loop decoded. */
        for (uint32_t at = from; !cat && at + 8 <= o.pbytes; at += 8) {
            uint64_t v;
            memcpy(&v, o.params + at, 8);
            for (uint32_t i = 0; i < na; i++)
                if (v == addr[i].addr) {
                    v = base + rbase[i] + off[i];
                    memcpy(o.params + at, &v, 8);
                    break;
                }
        }
        /* N, and a strided original's dims with their IntDividers: the same elements'
         * first corner, as the generated kernel runs it (a row group runs whole) */
        if (cat) {
            uint64_t sin[2] = { 0, 0 }, sout = 0;
            for (uint32_t i = 0; i < na; i++) {
                uint64_t at = base + rbase[i] + off[i];
                sout = addr[i].addr == o.op.out ? at : sout;
                for (unsigned q = 0; q < o.op.nin && q < 2; q++)
                    sin[q] = addr[i].addr == o.op.in[q] ? at : sin[q];
            }
            if (job->g.red || !sout || !sin[0] || (o.op.nin > 1 && !sin[1]) ||
                tcf_decode_cat_resize(o.params, o.pbytes, &o.op, p->opsize[j], sout, sin)) {
                snprintf(why, cap, "cannot size a cat for %u elements", p->opn[j]);
                goto done;
            }
        } else if (sm) {
            if (tcf_decode_fullrow_resize(&tcf_kernel_get(o.f)->drk, o.params, o.pbytes,
                                          p->size[1], o.grid)) {
                snprintf(why, cap, "cannot size a %s for %u rows", tcf_reduce_op_name(o.red.op),
                         p->size[1]);
                goto done;
            }
        } else if (!whole && tcf_decode_resize(o.params, o.pbytes, &o.op, p->opn[j], p->opsize[j])) {
            snprintf(why, cap, "cannot size an original for %u elements", p->opn[j]);
            goto done;
        }
        /* PyTorch sized the grid for its N (ceil(N / block work)), and its kernels assume
         * no block lies wholly past N: give the smaller N the grid PyTorch would have. The
         * block work is the power of two that reproduces the recorded grid. */
        uint32_t bw = whole || sm ? 1 : 0;
        for (uint32_t q = 32; q <= (1u << 20) && !bw; q <<= 1)
            if ((o.op.n + q - 1) / q == o.grid[0])
                bw = q;
        if (whole || cat || sm)
            ;   /* whole: the grid it was launched with (a cat's strides over any) */
        else if (!bw || o.grid[1] != 1 || o.grid[2] != 1) {
            snprintf(why, cap, "cannot size an original's grid for %u elements", p->opn[j]);
            goto done;
        }
        else
            o.grid[0] = (p->opn[j] + bw - 1) / bw;
        /* Any word left that points into the application's device memory would let an
         * original touch it: refuse rather than risk it. A pointer is 8 bytes of one
         * parameter (a pointer, or a member of a struct passed by value); a word across
         * two parameters is none: the loops' word 0 is N beside the functor, whose byte
         * an empty functor leaves as the caller's stack had it, and the two together can
         * read as an address in cudaMallocAsync's pools (below 2^40). */
        for (uint32_t at = 0; at + 8 <= o.pbytes; at = at ? at + 8 : from ? from : 8) {
            uint64_t v;
            int inside = 0;
            for (uint32_t q = 0; q < o.nparams && !inside; q++)
                inside = o.off[q] <= at && at + 8 <= o.off[q] + o.size[q];
            memcpy(&v, o.params + at, 8);
            if (inside && (v < base || v >= base + total * 2) && tcf_app_memory(v)) {
                snprintf(why, cap, "a parameter word of original %u (%s, byte %u: 0x%llx) is no "
                         "operand", j, o.is_red ? tcf_reduce_op_name(o.red.op)
                                                : tcf_decode_kind_name(o.op.kind),
                         at, (unsigned long long)v);
                goto done;
            }
        }
        tcf_log(TCF_LOG_DEBUG, "verify: original %u on scratch 0x%llx..0x%llx, N=%u, grid %u",
                j, (unsigned long long)base, (unsigned long long)(base + total * 2), p->opn[j],
                o.grid[0]);
        void *kp[8];
        for (uint32_t q = 0; q < o.nparams; q++)
            kp[q] = o.params + o.off[q];
        if (tcf_drv.launch_kernel(o.f, o.grid[0], o.grid[1], o.grid[2], o.block[0], o.block[1],
                                  o.block[2], o.smem, s, kp, NULL) != CUDA_SUCCESS) {
            snprintf(why, cap, "an original kernel would not run on scratch memory");
            goto done;
        }
    }
    tcf_fused_args_t args = job->args;
    args.n = p->n;
    if (job->g.ndim)
        for (unsigned d = 0; d < job->g.ndim; d++) {
            args.size[d] = p->size[d];
            tcf_int_divider(p->size[d], &args.m1[d], &args.shift[d]);
        }
    int stored[TCF_GROUP_MAX_BUFS] = { 0 };
    uint32_t bi[TCF_GROUP_MAX_BUFS];   /* each buffer's operand */
    for (uint8_t b = 0; b < job->g.nbufs; b++) {
        int i = -1;
        for (uint32_t k = 0; k < na; k++)
            if (addr[k].addr == job->args.buf[b])
                i = (int)k;
        if (i < 0) {
            snprintf(why, cap, "a buffer of the group is no operand of its ops");
            goto done;
        }
        bi[b] = (uint32_t)i;
        args.buf[b] = setB + rbase[i] + off[i];
    }
    for (uint8_t k = 0; k < job->g.nops; k++)
        if (job->g.ops[k].out_buf != TCF_NO_STORE)
            stored[job->g.ops[k].out_buf] = 1;
    void *kp[1] = { &args };
    uint32_t fgrid[3] = { tcf_codegen_grid(&job->g, p->n), 1, 1 }, fblock[3] = { TCF_FUSED_BLOCK, 1, 1 };
    tcf_rows_args_t ra;
    if (job->g.red && tcf_verify_rows_args(job, &args, addr, na, rbase, off, setB, p->size[1], &ra)) {
        snprintf(why, cap, "the reduction's tensors are no operands of the group");
        goto done;
    }
    if (job->g.red) {
        kp[0] = &ra;
        tcf_reduce_launch_dims(&job->g.rs, ra.r.num_outputs, fgrid, fblock);
    }
    CUresult lrc = tcf_drv.stream_synchronize(s);   /* the originals' own errors first */
    if (lrc != CUDA_SUCCESS) {
        snprintf(why, cap, "the original kernels failed on scratch memory (%d)", (int)lrc);
        goto done;
    }
    lrc = tcf_drv.launch_kernel(fused, fgrid[0], fgrid[1], fgrid[2], fblock[0], fblock[1],
                                fblock[2], 0, s, kp, NULL);
    CUresult src = lrc == CUDA_SUCCESS ? tcf_drv.stream_synchronize(s) : CUDA_SUCCESS;
    if (lrc != CUDA_SUCCESS || src != CUDA_SUCCESS) {
        snprintf(why, cap, "the generated kernel failed on scratch memory (launch %d, sync %d)",
                 (int)lrc, (int)src);
        goto done;
    }
    /* What each region's stores cover: the kernel's stored views, in the smaller problem. A
     * region whose address another operand of the group used, further, is a block freed
     * and handed out again (PyTorch's allocator puts a cast's output where the value it
     * cast lived): past the stored views lies a dead buffer whose store the kernel dropped
     * and the originals made, bytes nothing can read. So is a block two originals write.
     * Such a region is compared over its stored views only, byte by byte (the dead
     * buffer's view can differ from the stored one: a cat's output [B, H, S, D] handed to
     * the add that writes [B, S, H, D], whose smaller problem covers other elements of the
     * block); any other over all of it, so that a stray store shows too. */
    uint64_t cmp[TCF_MAX_ADDR] = { 0 };
    for (uint8_t b = 0; b < job->g.nbufs; b++) {
        uint64_t es = tcf_dtype_size(job->g.buf_dt[b]), bytes = p->n * es;
        if (!stored[b])
            continue;
        if (job->g.ndim || job->g.red) {
            bytes = es;
            for (unsigned d = 0; d < (job->g.red ? 2u : job->g.ndim); d++)
                bytes += (uint64_t)(p->size[d] - 1) * job->args.stride[b][d];
        }
        if (off[bi[b]] + bytes > cmp[bi[b]])
            cmp[bi[b]] = off[bi[b]] + bytes;
    }
    rc = 0;
    uint8_t compared[TCF_MAX_ADDR] = { 0 };   /* a region once, whatever views it stores */
    for (uint8_t b = 0; b < job->g.nbufs && rc == 0; b++) {
        if (!stored[b] || compared[bi[b]]++)
            continue;
        uint32_t i = bi[b];
        unsigned writers = 0;   /* a block two originals write: one of them is dead */
        for (uint32_t j = 0; j < job->norig; j++)
            writers += job->orig[j].op.out == addr[i].addr;
        int reused = cmp[i] < off[i] + addr[i].bytes || writers > 1;
        uint64_t len = reused ? cmp[i] : rlen[i];
        uint8_t *mask = reused ? tcf_stored_mask(job, p, stored, bi, i, off[i], len) : NULL;
        if (reused && !mask) {
            snprintf(why, cap, "out of memory");
            rc = -1;
            break;
        }
        rc = tcf_verify_cmp(base + rbase[i], setB + rbase[i], len, off[i], addr[i].bytes,
                            job->g.buf_dt[b], mask, host, s, b, why, cap);
        free(mask);
    }
    /* a norm's mean and rstd: outside the group's buffers, compared whole (region and
     * all), numbered after them */
    for (uint32_t j = 0; j < job->norig && rc == 0; j++) {
        const tcf_reduce_t *r = &job->orig[j].red;
        for (unsigned q = 0; job->orig[j].is_red && tcf_red_norm(r->op) && q < 2 && rc == 0; q++)
            for (uint32_t i = 0; i < na && rc == 0; i++)
                if (addr[i].addr == (q ? r->rstd : r->mean))
                    rc = tcf_verify_cmp(base + rbase[i], setB + rbase[i], rlen[i], off[i],
                                        addr[i].bytes, TCF_DT_F32, NULL, host, s, job->g.nbufs + q,
                                        why, cap);
    }
done:
    tcf_drv.stream_synchronize(s);
    tcf_scratch_free(base, s, async);
    free(host);
    return rc;
}

/* The operand addresses of the job's originals and their bytes in problem p. 0, or -1 when
 * there are more than verification maps. */
static int tcf_verify_addrs(const tcf_fjob_t *job, const tcf_vproblem_t *p, tcf_vaddr_t *addr,
                            uint32_t *na)
{
    *na = 0;
    for (uint32_t j = 0; j < job->norig; j++) {
        const tcf_op_t *op = &job->orig[j].op;
        for (uint8_t o = 0; o <= op->nin; o++)
            if (tcf_addr_index(addr, na, o ? op->in[o - 1] : op->out,
                               o ? op->in_dt[o - 1] : op->out_dt,
                               tcf_operand_bytes(op, o, p->opn[j], p->opsize[j])) < 0)
                return -1;
        /* a norm's per-row outputs, a float for each of the problem's rows */
        const tcf_reduce_t *r = &job->orig[j].red;
        for (unsigned q = 0; job->orig[j].is_red && tcf_red_norm(r->op) && q < 2; q++)
            if ((q ? r->rstd : r->mean) &&
                tcf_addr_index(addr, na, q ? r->rstd : r->mean, TCF_DT_F32, 4ull * p->size[1]) < 0)
                return -1;
    }
    return 0;
}

int tcf_fuse_verify(const tcf_fjob_t *job, CUfunction fused, CUstream s, char *why, size_t cap)
{
    tcf_vaddr_t addr[TCF_MAX_ADDR];
    uint32_t off[TCF_MAX_ADDR];
    uint32_t na = 0;
    tcf_vproblem_t *p = tcf_malloc(sizeof *p);
    /* every access one element wide (a row group's reduction loads in vectors) */
    int elementwise = job->g.vec == 1 && !job->g.red, rc = -1;
    if (!p) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    if (tcf_vproblem(job, TCF_VERIFY_N, p, why, cap))
        goto out;
    for (uint32_t j = 0; j < job->norig; j++)
        elementwise &= job->orig[j].op.vec == 1;
    if (tcf_verify_addrs(job, p, addr, &na))
        goto unable;
    /* First at the application's own alignment (each operand's address mod 256): the
     * originals ran there, whatever their loads assume, and so did the key's vector guard. */
    for (uint32_t i = 0; i < na; i++)
        off[i] = (uint32_t)(addr[i].addr % 256);
    rc = tcf_verify_pass(job, addr, na, off, p, fused, s, why, cap);
    if (rc != 0 || !elementwise || p->n < 3)
        goto out;
    /* Then, when every access is one element wide (so any element-aligned address is one
     * the kernels accept), at operands misaligned against 16 bytes and against each other,
     * with another tail (a contiguous group; an N-d one keeps its shape). The same kernel
     * serves any alignment: this is its other half. */
    if (!job->g.ndim && (tcf_vproblem(job, p->n - 2, p, why, cap) ||
                         tcf_verify_addrs(job, p, addr, &na)))
        goto out;
    for (uint32_t i = 0; i < na; i++)  /* odd multiples of the element: 4, 12, 20, 28 for float */
        off[i] = (2 * (i % 4) + 1) * tcf_dtype_size(addr[i].dt);
    rc = tcf_verify_pass(job, addr, na, off, p, fused, s, why, cap);
    if (rc != 0) {
        char inner[200];
        snprintf(inner, sizeof inner, "%s", why);
        snprintf(why, cap, "at misaligned operands, %s", inner);
    }
    goto out;
unable:
    snprintf(why, cap, "more operands than verification can map");
out:
    free(p);
    return rc;
}
