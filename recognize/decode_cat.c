/* Decoding of torch.cat's kernels (PyTorch 2.11, aten/src/ATen/native/cuda/Shape.cu) into
 * a CAT op (codegen/op.h; contract: decode.h).
 *
 * parallel_cat launches one kernel per batch of up to batch_size inputs, grid.y = the
 * batch's inputs (blockIdx.y picks one), grid.x blocks striding over that input's
 * elements:
 *   CatArrayBatchedCopy<T, unsigned, Dims, 64, 64>          inputs not all contiguous
 *   CatArrayBatchedCopy_contig<T, unsigned, Dims, 128, 1>    contiguous, unaligned
 *   CatArrayBatchedCopy_alignedK_contig<T, unsigned, Dims, 128, 1, 8|16>
 *                                                           contiguous, 16-byte aligned
 * with T = OpaqueType<sizeof(scalar_t)> (the dtype is known by its size only) and the
 * parameters (T *out, CatArrInputTensorMetadata<T, unsigned, batch, ss> meta,
 * TensorSizeStride<unsigned, 4> os, int concatDim, unsigned dimStride). The metadata is
 * { T *input[batch]; unsigned offset[batch], dimSize[batch], nElements[batch];
 * bool isContiguous[batch]; TensorSizeStride tensorStride[ss] } (sizes then strides, 4 of
 * each, in elements): 3392 bytes for <64, 64>, 2720 for <128, 1> (recorded).
 *
 * What each kernel computes (CatArrIndexToOffset): input k's element tid is decomposed
 * over the output's sizes, innermost dim Dims-1 first, with dimSize[k] along concatDim,
 * and stored at out[offset[k] * dimStride + sum idx_i * os.stride[i]]; it is loaded from
 * input[k][tid] when contiguous, else from the same decomposition over its own
 * tensorStride entry. So one launch writes the slice [offset[0], offset[0] + sum of
 * dimSize) of the output along concatDim: the op's space is that slice, and each input a
 * view over it shifted back to its offset. All three kernels move the same bytes (the
 * aligned one only loads in vectors). CatArrayBatchedCopy_vectorized (byte offsets
 * through `trailingSize`, a different decomposition) is not decoded, nor is a 64-bit
 * index. */
#include <string.h>

#include "recognize/decode.h"

static uint64_t rd(const uint8_t *p, unsigned n)   /* little-endian, like the GPU */
{
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

/* "Li<digits>E" at p: the value, and p moves past it; -1 when not there. */
static long tmpl_int(const char **pp)
{
    const char *p = *pp;
    long v = 0;
    int k = 0;
    if (strncmp(p, "Li", 2))
        return -1;
    for (p += 2; *p >= '0' && *p <= '9' && k < 6; p++, k++)
        v = v * 10 + (*p - '0');
    if (!k || *p != 'E')
        return -1;
    *pp = p + 1;
    return v;
}

/* Metadata bytes for batch inputs and ss stride entries (see the top). */
static uint32_t meta_bytes(uint32_t batch, uint32_t ss)
{
    return (((21 * batch + 3) & ~3u) + 32 * ss + 7) & ~7u;
}

tcf_decode_status_t tcf_decode_cat_kernel(const tcf_decode_launch_t *l, tcf_decode_kernel_t *dk)
{
    static const struct { const char *name; int aligned; } variants[] = {
        { "19CatArrayBatchedCopyI", 0 },
        { "26CatArrayBatchedCopy_contigI", 0 },
        { "35CatArrayBatchedCopy_alignedK_contigI", 1 },
    };
    const char *p = NULL;
    int aligned = 0;
    memset(dk, 0, sizeof *dk);
    for (size_t i = 0; i < sizeof variants / sizeof *variants && !p; i++)
        if ((p = strstr(l->name, variants[i].name)))
            p += strlen(variants[i].name), aligned = variants[i].aligned;
    if (!p)
        return TCF_DECODE_CAT_VARIANT;
    /* N<namespace>10OpaqueTypeILj<size>EEE then the index type: j (unsigned int) */
    const char *o = strstr(p, "10OpaqueTypeILj");
    if (!o || o - p > 8)
        return TCF_DECODE_BAD_NAME;
    o += 15;
    unsigned es = 0;
    while (*o >= '0' && *o <= '9' && es < 1000)
        es = es * 10 + (unsigned)(*o++ - '0');
    if (strncmp(o, "EEE", 3))
        return TCF_DECODE_BAD_NAME;
    o += 3;
    if (*o != 'j')
        return TCF_DECODE_CAT_VARIANT;      /* another IndexType than unsigned int */
    o++;
    long dims = tmpl_int(&o), batch = tmpl_int(&o), ss = tmpl_int(&o);
    long al = aligned ? tmpl_int(&o) : 0;
    if (dims < 1 || dims > 4 || batch < 1 || batch > 1024 || ss < 1 || ss > batch ||
        (aligned && al != 8 && al != 16) || strncmp(o, "EEvPT_", 6))
        return TCF_DECODE_BAD_NAME;
    if (es != 2 && es != 4)
        return TCF_DECODE_UNSUPPORTED_DTYPE;   /* bytes, 8-byte (int64, double), complex */
    uint32_t mb = meta_bytes((uint32_t)batch, (uint32_t)ss);
    const uint32_t want_off[5] = { 0, 8, 8 + mb, 8 + mb + 32, 8 + mb + 36 };
    const uint32_t want_size[5] = { 8, mb, 32, 4, 4 };
    if (l->nparams != 5)
        return TCF_DECODE_BAD_LAYOUT;
    for (unsigned i = 0; i < 5; i++)
        if (l->off[i] != want_off[i] || l->size[i] != want_size[i])
            return TCF_DECODE_BAD_LAYOUT;
    dk->rule = "cat";
    dk->t = es == 4 ? TCF_DT_F32 : TCF_DT_F16;
    dk->loop = TCF_LOOP_CAT;
    /* the aligned kernel loads 16 or 8 bytes at once: verification must keep its inputs
     * aligned (op.vec > 1 says so) */
    dk->vec = (uint8_t)(aligned ? (unsigned)al / es : 1);
    dk->foff = 8, dk->doff = 8 + mb;         /* the metadata, the output's TensorSizeStride */
    dk->span = 8 + (uint64_t)mb + 40;
    dk->cat_dims = (uint8_t)dims, dk->cat_es = (uint8_t)es;
    dk->cat_batch = (uint16_t)batch, dk->cat_ss = (uint16_t)ss;
    return TCF_DECODE_OK;
}

/* Where the metadata's arrays sit (batch b, ss entries of stride). */
typedef struct { uint32_t in, off, dsz, nel, contig, ts; } cat_meta_t;
static cat_meta_t meta_of(const tcf_decode_kernel_t *dk)
{
    uint32_t b = dk->cat_batch, m = dk->foff;
    return (cat_meta_t){ m, m + 8 * b, m + 12 * b, m + 16 * b, m + 20 * b,
                         m + ((21 * b + 3) & ~3u) };
}

static tcf_decode_status_t fail(tcf_op_t *op, tcf_decode_status_t st)
{
    memset(op, 0, sizeof *op);
    return st;
}

tcf_decode_status_t tcf_decode_cat_apply(const tcf_decode_kernel_t *dk, const uint8_t *p,
                                         uint32_t params_len, const uint32_t grid[3],
                                         const uint32_t block[3], tcf_op_t *op)
{
    memset(op, 0, sizeof *op);
    if (!dk || dk->loop != TCF_LOOP_CAT || (params_len && !p) || !grid || !block)
        return TCF_DECODE_BAD_ARGS;
    if (dk->span > params_len)
        return TCF_DECODE_TRUNCATED;
    uint32_t nb = grid[1], D = dk->cat_dims;
    if (!grid[0] || !nb || nb > dk->cat_batch || grid[2] != 1 || !block[0] || block[1] != 1 ||
        block[2] != 1)
        return TCF_DECODE_BAD_LAUNCH;
    cat_meta_t m = meta_of(dk);
    uint64_t es = dk->cat_es, out = rd(p, 8);
    int32_t cd = (int32_t)rd(p + dk->doff + 32, 4);
    uint32_t dim_stride = (uint32_t)rd(p + dk->doff + 36, 4);
    uint64_t osz[4], ost[4];
    for (unsigned i = 0; i < D; i++)
        osz[i] = rd(p + dk->doff + 4 * i, 4), ost[i] = rd(p + dk->doff + 16 + 4 * i, 4);
    if (cd < 0 || (uint32_t)cd >= D || dim_stride != ost[cd] || !out)
        return TCF_DECODE_BAD_VALUE;
    /* the inputs follow each other along concatDim from offset[0]; empty ones (numel 0:
     * dimSize 0, PyTorch's legacy 1-d empty tensor) take no room and run nothing */
    uint64_t first = rd(p + m.off, 4), total = 0, others = 1;
    uint32_t nonempty[2], nne = 0;
    for (unsigned i = 0; i < D; i++)
        others *= i == (uint32_t)cd ? 1 : osz[i];
    for (uint32_t k = 0; k < nb; k++) {
        uint64_t off = rd(p + m.off + 4 * k, 4), dsz = rd(p + m.dsz + 4 * k, 4);
        uint64_t nel = rd(p + m.nel + 4 * k, 4);
        if (off != first + total || nel != dsz * others || p[m.contig + k] > 1)
            return TCF_DECODE_BAD_VALUE;
        if (!nel)
            continue;
        if (nne == 2)
            return TCF_DECODE_CAT_INPUTS;
        nonempty[nne++] = k;
        total += dsz;
    }
    if (!nne || (first + total) * ost[cd] > 0x7fffffffull)
        return TCF_DECODE_BAD_VALUE;
    uint64_t n = others * total;
    if (!n || n > 0x7fffffffull)
        return TCF_DECODE_BAD_VALUE;

    *op = (tcf_op_t){ .kind = TCF_OP_CAT, .rule = "cat", .loop = TCF_LOOP_CAT, .vec = dk->vec,
                      .nin = (uint8_t)nne, .n = (uint32_t)n, .compute_dt = dk->t,
                      .res_dt = dk->t, .out_dt = dk->t, .cat_dim = (uint8_t)(D - 1 - cd) };
    op->it.ndim = (uint8_t)D;
    uint64_t omax = 0;
    for (unsigned i = 0; i < D; i++) {
        unsigned d = D - 1 - i;                        /* innermost first */
        op->it.size[d] = (uint32_t)(i == (uint32_t)cd ? total : osz[i]);
        op->it.stride[0][d] = (uint32_t)(ost[i] * es);
        omax += (op->it.size[d] - 1) * ost[i];
    }
    if (omax + first * ost[cd] > 0x7fffffffull / es)
        return fail(op, TCF_DECODE_BAD_VALUE);
    op->out = out + first * ost[cd] * es;
    for (uint32_t j = 0; j < nne; j++) {
        uint32_t k = nonempty[j];
        uint64_t lo = rd(p + m.off + 4 * k, 4) - first, len = rd(p + m.dsz + 4 * k, 4);
        uint64_t ptr = rd(p + m.in + 8 * k, 8), st[4], imax = 0;
        int contig = dk->cat_ss == 1 || p[m.contig + k];
        const uint8_t *ts = p + m.ts + 32 * (dk->cat_ss > 1 ? k : 0);
        for (unsigned i = D, run = 1; i-- > 0;) {
            uint64_t sz = i == (uint32_t)cd ? len : osz[i];
            if (contig) {
                st[i] = run, run *= (unsigned)sz;
            } else {
                st[i] = rd(ts + 16 + 4 * i, 4);
                /* the kernel decomposes over the input's own sizes (dim 0 is never
                 * divided): they must be the output's for the element to land */
                if (i && i != (uint32_t)cd && rd(ts + 4 * i, 4) != sz)
                    return fail(op, TCF_DECODE_BAD_VALUE);
            }
            imax += (sz - 1) * st[i];
        }
        if (!ptr || imax > 0x7fffffffull / es || ptr < lo * st[cd] * es)
            return fail(op, TCF_DECODE_BAD_VALUE);
        op->in[j] = ptr - lo * st[cd] * es;           /* the view's base: shifted back */
        op->in_dt[j] = dk->t;
        op->cat_lo[j] = (uint32_t)lo, op->cat_len[j] = (uint32_t)len;
        for (unsigned i = 0; i < D; i++)
            op->it.stride[1 + j][D - 1 - i] = (uint32_t)(st[i] * es);
    }
    if (nne == 2) {   /* element e reads in[0] while e % P < T (op.h) */
        uint64_t inner = 1;
        for (unsigned d = 0; d < op->cat_dim; d++)
            inner *= op->it.size[d];
        op->nscalar = 2;
        op->s[0] = (tcf_scalar_t){ .dt = TCF_DT_NONE, .bits = (uint32_t)(inner * total) };
        op->s[1] = (tcf_scalar_t){ .dt = TCF_DT_NONE, .bits = (uint32_t)(inner * op->cat_lo[1]) };
    }
    return TCF_DECODE_OK;
}

int tcf_decode_cat_resize(uint8_t *p, uint32_t params_len, const tcf_op_t *op,
                          const uint32_t *sizes, uint64_t out, const uint64_t in[2])
{
    if (!p || !op || !sizes || !in || op->kind != TCF_OP_CAT || op->loop != TCF_LOOP_CAT ||
        !op->it.ndim || op->it.ndim > 4 || op->nin < 1 || op->nin > 2 || params_len < 8)
        return -1;
    /* which layout: the metadata size is the second parameter's, found from the bytes'
     * length (the two layouts recorded: <64, 64> and <128, 1>) */
    static const uint16_t shapes[][2] = { { 64, 64 }, { 128, 1 } };
    tcf_decode_kernel_t dk = { 0 };
    for (size_t s = 0; s < 2; s++)
        if (params_len == 8 + meta_bytes(shapes[s][0], shapes[s][1]) + 40)
            dk.cat_batch = shapes[s][0], dk.cat_ss = shapes[s][1];
    if (!dk.cat_batch)
        return -1;
    uint32_t mb = meta_bytes(dk.cat_batch, dk.cat_ss), D = op->it.ndim;
    dk.foff = 0, dk.doff = 8 + mb;
    cat_meta_t m = meta_of(&dk);               /* offsets in the metadata, at pm */
    const uint8_t *pm = p + 8;
    int32_t cd = (int32_t)rd(p + dk.doff + 32, 4);
    if (cd < 0 || (uint32_t)cd >= D || (uint32_t)cd != D - 1u - op->cat_dim)
        return -1;
    unsigned es = tcf_dtype_size(op->out_dt);
    uint64_t ost_cd = rd(p + dk.doff + 16 + 4 * (unsigned)cd, 4);
    uint64_t first = rd(pm + m.off, 4), others = 1;
    for (unsigned d = 0; d < D; d++) {
        if (!sizes[d] || sizes[d] > op->it.size[d])
            return -1;
        others *= d == op->cat_dim ? 1 : sizes[d];
    }
    /* the inputs as decoded, in order: their slots, real pointers' shift, ranges */
    uint32_t slot[2];
    unsigned found = 0;
    for (uint32_t k = 0; k < dk.cat_batch && found < op->nin; k++)
        if (rd(pm + m.nel + 4 * k, 4) && rd(pm + m.off + 4 * k, 4) - first == op->cat_lo[found])
            slot[found++] = k;
    if (found != op->nin || es == 0)
        return -1;
    uint8_t meta[4096];
    if (mb > sizeof meta)
        return -1;
    memset(meta, 0, mb);                        /* every unused slot and padding: zero */
    uint8_t *q = meta;
    for (unsigned j = 0; j < op->nin; j++) {
        uint32_t k = slot[j], lo = op->cat_lo[j];
        uint64_t keep = sizes[op->cat_dim] > lo ? sizes[op->cat_dim] - lo : 0;
        uint32_t len = (uint32_t)(keep < op->cat_len[j] ? keep : op->cat_len[j]);
        uint64_t ptr = len ? in[j] + (uint64_t)lo * op->it.stride[1 + j][op->cat_dim] : 0;
        uint32_t off = (uint32_t)(first + lo), nel = (uint32_t)(len * others);
        memcpy(q + m.in + 8 * k, &ptr, 8);
        memcpy(q + m.off + 4 * k, &off, 4);
        memcpy(q + m.dsz + 4 * k, &len, 4);
        memcpy(q + m.nel + 4 * k, &nel, 4);
        q[m.contig + k] = pm[m.contig + k];
        if (dk.cat_ss > 1)
            for (unsigned i = 0; i < D; i++) {
                uint32_t sz = sizes[D - 1 - i];
                memcpy(q + m.ts + 32 * k + 4 * i, &sz, 4);
                memcpy(q + m.ts + 32 * k + 16 + 4 * i, pm + m.ts + 32 * k + 16 + 4 * i, 4);
            }
    }
    /* slots between two inputs are empty ones: their offsets must still chain */
    for (uint32_t k = 0; k < slot[op->nin - 1]; k++)
        if (!rd(q + m.nel + 4 * k, 4)) {
            uint32_t off = (uint32_t)rd(pm + m.off + 4 * k, 4);
            memcpy(q + m.off + 4 * k, &off, 4);
        }
    memcpy(p + 8, meta, mb);
    /* the output: its pointer (decoding added the slice's start), sizes past Dims zero */
    uint64_t optr = out - first * ost_cd * es;
    memcpy(p, &optr, 8);
    for (unsigned i = 0; i < 4; i++) {
        uint32_t sz = i < D ? sizes[D - 1 - i] : 0, st = i < D ? (uint32_t)rd(p + dk.doff + 16 + 4 * i, 4) : 0;
        if (i == (uint32_t)cd)
            sz = (uint32_t)rd(p + dk.doff + 4 * i, 4);   /* never read along concatDim */
        memcpy(p + dk.doff + 4 * i, &sz, 4);
        memcpy(p + dk.doff + 16 + 4 * i, &st, 4);
    }
    return 0;
}

int tcf_decode_cat_unread(const tcf_decode_kernel_t *dk, uint32_t len, uint32_t gy,
                          uint8_t *unread)
{
    if (!dk || dk->loop != TCF_LOOP_CAT || !unread || dk->span > len || !gy ||
        gy > dk->cat_batch)
        return -1;
    uint32_t b = dk->cat_batch, ss = dk->cat_ss, mb = dk->doff - dk->foff;
    cat_meta_t m = meta_of(dk);
    /* blockIdx.y < gridDim.y picks the slot: the slots past the batch's inputs */
    memset(unread + m.in + 8 * gy, 1, 8 * (b - gy));
    memset(unread + m.off + 4 * gy, 1, 4 * (b - gy));
    memset(unread + m.dsz + 4 * gy, 1, 4 * (b - gy));
    memset(unread + m.nel + 4 * gy, 1, 4 * (b - gy));
    memset(unread + m.contig + gy, 1, b - gy);
    memset(unread + m.contig + b, 1, m.ts - (m.contig + b));   /* padding before the strides */
    if (ss > 1 && gy < ss)   /* a stride entry per slot (one: the contiguous kernels', kept) */
        memset(unread + m.ts + 32 * gy, 1, 32 * (ss - gy));
    memset(unread + m.ts + 32 * ss, 1, dk->foff + mb - (m.ts + 32 * ss));   /* to 8 bytes */
    /* the output's sizes and strides past Dims (CatArrIndexToOffset loops over Dims) */
    for (unsigned i = dk->cat_dims; i < 4; i++) {
        memset(unread + dk->doff + 4 * i, 1, 4);
        memset(unread + dk->doff + 16 + 4 * i, 1, 4);
    }
    return 0;
}
