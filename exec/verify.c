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

#define TCF_VERIFY_N 70001u   /* odd, not a multiple of any vector width: tails run too */
#define TCF_MAX_ADDR (3 * TCF_GROUP_MAX_OPS + 1)

static uint64_t tcf_rand(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static void tcf_fill(uint8_t *p, tcf_dtype_t dt, uint32_t n, uint64_t seed)
{
    static const uint32_t f32_special[] = {
        0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x7fa00000,
        0x00000001, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800000,
        0xbf800000, 0x42b20000, 0xc2b20000, 0x41200000, 0x3effffff, 0x33800000 };
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (uint32_t i = 0; i < n; i++) {
        if (dt == TCF_DT_F32) {
            uint32_t v;
            if (i < sizeof f32_special / sizeof *f32_special)
                v = f32_special[i];
            else if (i % 3 == 0)
                v = (uint32_t)tcf_rand(&s);  /* any bits at all */
            else  /* ordinary magnitudes, where most values live */
                v = (uint32_t)(0x3c000000u + (tcf_rand(&s) % 0x0b000000u)) | (uint32_t)(i & 1) << 31;
            memcpy(p + 4 * (size_t)i, &v, 4);
        } else if (dt == TCF_DT_BOOL) {
            p[i] = (uint8_t)(tcf_rand(&s) & 1);
        } else {
            uint16_t v = (uint16_t)(i + seed * 7919u);  /* every pattern, offset per buffer */
            memcpy(p + 2 * (size_t)i, &v, 2);
        }
    }
}

typedef struct { uint64_t addr; tcf_dtype_t dt; } tcf_vaddr_t;

static int tcf_addr_index(tcf_vaddr_t *a, uint32_t *na, uint64_t addr, tcf_dtype_t dt)
{
    for (uint32_t i = 0; i < *na; i++)
        if (a[i].addr == addr)
            return (int)i;
    if (*na == TCF_MAX_ADDR)
        return -1;
    a[*na] = (tcf_vaddr_t){ addr, dt };
    return (int)(*na)++;
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
    if (!tcf_drv.pointer_get_attribute)
        return 1;
    unsigned int type = 0;  /* CUmemorytype; unused beyond the answer's existence */
    CUresult rc = tcf_drv.pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                (CUdeviceptr)v);
    /* Memory the driver does not know (CUDA_ERROR_INVALID_VALUE) no kernel can reach;
     * anything it knows, device or pinned host, counts. */
    return rc == CUDA_SUCCESS;
}

/* One run of the check at element count n, operand i at byte offset off[i] (< 256) into
 * its own scratch region. 0 equal, 1 a stored buffer differs, -1 could not check. */
static int tcf_verify_pass(const tcf_fjob_t *job, const tcf_vaddr_t *addr, uint32_t na,
                           const uint32_t *off, uint32_t n, CUfunction fused, CUstream s,
                           char *why, size_t cap)
{
    /* room for any dtype at the largest offset */
    size_t stride = ((size_t)n * 4 + 256 + 255) & ~(size_t)255;
    CUdeviceptr base = 0;
    uint8_t *host = tcf_malloc(stride * 2);
    if (!host || tcf_drv.mem_alloc(&base, stride * na * 2) != CUDA_SUCCESS) {
        free(host);
        snprintf(why, cap, "no scratch memory");
        return -1;
    }
    /* Set A (originals) at base + i*stride + off[i], set B (generated) after it; same
     * contents. */
    CUdeviceptr setB = base + stride * na;
    int rc = -1;
    for (uint32_t i = 0; i < na; i++) {
        memset(host, 0, stride);
        tcf_fill(host + off[i], addr[i].dt, n, i + 1);
        if (tcf_drv.memcpy_htod_async(base + i * stride, host, stride, s) ||
            tcf_drv.memcpy_htod_async(setB + i * stride, host, stride, s) ||
            tcf_drv.stream_synchronize(s))
            goto done;
    }
    for (uint32_t j = 0; j < job->norig; j++) {
        tcf_orig_t o = job->orig[j];
        /* Pointers sit in the data array; N is parameter 0 (int) in every loop decoded. */
        for (uint32_t at = 0; at + 8 <= o.pbytes; at += 8) {
            uint64_t v;
            memcpy(&v, o.params + at, 8);
            for (uint32_t i = 0; i < na; i++)
                if (v == addr[i].addr) {
                    v = base + i * stride + off[i];
                    memcpy(o.params + at, &v, 8);
                    break;
                }
        }
        int32_t nv = (int32_t)n;
        memcpy(o.params + o.off[0], &nv, 4);
        /* PyTorch sized the grid for its N (ceil(N / block work)), and its kernels assume
         * no block lies wholly past N: give the smaller N the grid PyTorch would have. The
         * block work is the power of two that reproduces the recorded grid. */
        uint32_t bw = 0;
        for (uint32_t p = 32; p <= (1u << 20) && !bw; p <<= 1)
            if ((o.op.n + p - 1) / p == o.grid[0])
                bw = p;
        if (!bw || o.grid[1] != 1 || o.grid[2] != 1) {
            snprintf(why, cap, "cannot size an original's grid for %u elements", n);
            goto done;
        }
        o.grid[0] = (n + bw - 1) / bw;
        /* Any word left that points into the application's device memory would let an
         * original touch it: refuse rather than risk it. */
        for (uint32_t at = 0; at + 8 <= o.pbytes; at += 8) {
            uint64_t v;
            memcpy(&v, o.params + at, 8);
            if ((v < base || v >= base + stride * na * 2) && tcf_app_memory(v)) {
                snprintf(why, cap, "an original's parameter word %u (0x%llx) is no operand", at,
                         (unsigned long long)v);
                goto done;
            }
        }
        tcf_log(TCF_LOG_DEBUG, "verify: original %u on scratch 0x%llx..0x%llx, N=%d, grid %u",
                j, (unsigned long long)base, (unsigned long long)(base + stride * na * 2), nv,
                o.grid[0]);
        void *kp[8];
        for (uint32_t p = 0; p < o.nparams; p++)
            kp[p] = o.params + o.off[p];
        if (tcf_drv.launch_kernel(o.f, o.grid[0], o.grid[1], o.grid[2], o.block[0], o.block[1],
                                  o.block[2], o.smem, s, kp, NULL) != CUDA_SUCCESS) {
            snprintf(why, cap, "an original kernel would not run on scratch memory");
            goto done;
        }
    }
    tcf_fused_args_t args = job->args;
    args.n = n;
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
        args.buf[b] = setB + (uint32_t)i * stride + off[i];
    }
    for (uint8_t k = 0; k < job->g.nops; k++)
        if (job->g.ops[k].out_buf != TCF_NO_STORE)
            stored[job->g.ops[k].out_buf] = 1;
    void *kp[1] = { &args };
    CUresult lrc = tcf_drv.stream_synchronize(s);   /* the originals' own errors first */
    if (lrc != CUDA_SUCCESS) {
        snprintf(why, cap, "the original kernels failed on scratch memory (%d)", (int)lrc);
        goto done;
    }
    lrc = tcf_drv.launch_kernel(fused, tcf_codegen_grid(&job->g, n), 1, 1, TCF_FUSED_BLOCK, 1, 1,
                                0, s, kp, NULL);
    CUresult src = lrc == CUDA_SUCCESS ? tcf_drv.stream_synchronize(s) : CUDA_SUCCESS;
    if (lrc != CUDA_SUCCESS || src != CUDA_SUCCESS) {
        snprintf(why, cap, "the generated kernel failed on scratch memory (launch %d, sync %d)",
                 (int)lrc, (int)src);
        goto done;
    }
    rc = 0;
    for (uint8_t b = 0; b < job->g.nbufs && rc == 0; b++) {
        if (!stored[b])
            continue;
        /* the whole region, so that a store outside the operand's elements shows too */
        CUdeviceptr a = base + bi[b] * stride, g = setB + bi[b] * stride;
        size_t es = tcf_dtype_size(job->g.buf_dt[b]);
        if (tcf_drv.memcpy_dtoh_async(host, a, stride, s) ||
            tcf_drv.memcpy_dtoh_async(host + stride, g, stride, s) ||
            tcf_drv.stream_synchronize(s)) {
            rc = -1;
            snprintf(why, cap, "could not read scratch memory back");
            break;
        }
        if (memcmp(host, host + stride, stride)) {
            size_t at = 0;
            while (at < stride && host[at] == host[stride + at])
                at++;
            long e = at < off[bi[b]] ? -1 : (long)((at - off[bi[b]]) / es);
            size_t first = at < off[bi[b]] || e >= (long)n ? at : off[bi[b]] + (size_t)e * es;
            uint32_t x = 0, y = 0;
            memcpy(&x, host + first, es);
            memcpy(&y, host + stride + first, es);
            if (e < 0 || e >= (long)n)
                snprintf(why, cap, "buffer %u: a byte outside its %u elements differs (offset "
                         "%zu)", b, n, at);
            else
                snprintf(why, cap, "buffer %u element %ld: eager 0x%x, generated 0x%x (%s)", b,
                         e, x, y, tcf_decode_dtype_name(job->g.buf_dt[b]));
            rc = 1;
        }
    }
done:
    tcf_drv.stream_synchronize(s);
    tcf_drv.mem_free(base);
    free(host);
    return rc;
}

int tcf_fuse_verify(const tcf_fjob_t *job, CUfunction fused, CUstream s, char *why, size_t cap)
{
    tcf_vaddr_t addr[TCF_MAX_ADDR];
    uint32_t off[TCF_MAX_ADDR];
    uint32_t na = 0, n = job->n < TCF_VERIFY_N ? (uint32_t)job->n : TCF_VERIFY_N;
    int elementwise = job->g.vec == 1;  /* every access one element wide */
    for (uint32_t j = 0; j < job->norig; j++) {
        const tcf_op_t *op = &job->orig[j].op;
        elementwise &= op->vec == 1;
        if (tcf_addr_index(addr, &na, op->out, op->out_dt) < 0)
            goto unable;
        for (uint8_t i = 0; i < op->nin; i++)
            if (tcf_addr_index(addr, &na, op->in[i], op->in_dt[i]) < 0)
                goto unable;
    }
    /* First at the application's own alignment (each operand's address mod 256): the
     * originals ran there, whatever their loads assume, and so did the key's vector guard. */
    for (uint32_t i = 0; i < na; i++)
        off[i] = (uint32_t)(addr[i].addr % 256);
    int rc = tcf_verify_pass(job, addr, na, off, n, fused, s, why, cap);
    if (rc != 0 || !elementwise || n < 3)
        return rc;
    /* Then, when every access is one element wide (so any element-aligned address is one
     * the kernels accept), at operands misaligned against 16 bytes and against each other,
     * with another tail. The same kernel serves any alignment: this is its other half. */
    for (uint32_t i = 0; i < na; i++)  /* odd multiples of the element: 4, 12, 20, 28 for float */
        off[i] = (2 * (i % 4) + 1) * tcf_dtype_size(addr[i].dt);
    rc = tcf_verify_pass(job, addr, na, off, n - 2, fused, s, why, cap);
    if (rc != 0) {
        char inner[200];
        snprintf(inner, sizeof inner, "%s", why);
        snprintf(why, cap, "at misaligned operands, %s", inner);
    }
    return rc;
unable:
    snprintf(why, cap, "more operands than verification can map");
    return -1;
}
