/* codegen/gen.c: one CUDA C kernel for a group of elementwise ops (codegen.h).
 *
 * Shape of the source (everything depends on the group's structure only, never on an
 * address, a count, a shape or a scalar value, so the text is the disk cache's key):
 *   a version line, the prelude (types, conversions: gen_math.c), one __forceinline__
 *   function per op (its functor, gen_math.c), tcf_elem (one element of the whole chain:
 *   each op's inputs converted as its kernel loaded them, its result converted to the
 *   dtype eager stored it in), and the kernel: a grid-stride loop over chunks of `vec`
 *   elements, 16-byte packs when the chunk is whole, element by element for the tail.
 *   An N-d group's kernel (ndim > 0) decomposes each chunk's index over the space (its
 *   sizes, dividers and every buffer's byte strides are arguments: one kernel for every
 *   shape of a rank, so a model met at a new sequence length compiles nothing) and
 *   addresses each buffer by its offset; its chunks never cross a row of dim 0. The
 *   division is PyTorch's IntDivider arithmetic, a multiply-high and a shift per dim, the
 *   outermost dim undivided: cheap beside the memory traffic the kernel waits on, where a
 *   source per shape would compile and verify once per shape.
 *
 * A cat (op.h) has no functor: a one-input cat is its input; a two-input one picks
 * `e % P < T ? in0 : in1` by the element's index e (P and T are its scalars, so the text
 * serves every shape). A buffer only such cats read comes into tcf_elem as a pointer and
 * is read in the branch that picks it: outside its range its view lies over another
 * tensor's bytes, or none. Such groups are N-d. They move packs only where P and T are
 * multiples of the pack (the planner sees to it): then every element of a pack picks as
 * its first does, the cat picks by that index, and an input's pack is loaded only where
 * some cat picks it (never read, and left zero, elsewhere).
 *
 * Buffers: a buffer read before any op of the group writes it is loaded once per element;
 * a read after an op wrote it takes that op's value (eager would have loaded what it
 * stored); the last writer's value is stored. Elementwise, so in-place chains are exact. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "codegen/internal.h"


/* Bump when the generated text's meaning changes: it is part of every cache key. */
#define TCF_CODEGEN_VERSION 1

_Static_assert(offsetof(tcf_fused_args_t, size) == TCF_FUSED_ARGS_FLAT &&
               TCF_FUSED_ARGS_FLAT == 200 && sizeof(tcf_fused_args_t) == 808,
               "the source's tcf_args assumes 200 bytes, tcf_args_nd 808");
_Static_assert(TCF_OP_MAX_DIMS == 8, "tcf_args_nd spells out 8 dims");
_Static_assert(TCF_GROUP_MAX_BUFS == 16 && TCF_GROUP_MAX_SCALARS == 16,
               "the prelude's tcf_args spells out 16 buffers and 16 scalars");

/* tcf_codegen_sb_t and tcf_codegen_put (codegen/internal.h): every generator's text. */
void tcf_codegen_put(tcf_codegen_sb_t *b, const char *fmt, ...)
{
    if (b->bad)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->cap - b->len)
        b->bad = 1;
    else
        b->len += (size_t)n;
}

/* What the kernel does with each buffer, from the group's order of reads and writes. */
typedef struct {
    int loaded[TCF_GROUP_MAX_BUFS];   /* read before any op of the group writes it */
    int writer[TCF_GROUP_MAX_BUFS];   /* last op that writes it, or -1 */
    /* loaded, and only ever as a two-input cat's input: it comes in as a pointer, read
     * where the cat picks it (outside its range it may be another tensor's bytes, or
     * none at all) */
    int guarded[TCF_GROUP_MAX_BUFS];
    int cat2;                         /* a two-input cat: tcf_elem takes the index e */
} tcf_codegen_io_t;

static int tcf_codegen_cat2(const tcf_gop_t *op) { return op->kind == TCF_OP_CAT && op->nin == 2; }

/* 0 when g is well formed (every source earlier, dtypes agreeing along every edge, every
 * index in range, every op one gen_math.c knows); fills io. */
static int tcf_codegen_check(const tcf_group_t *g, tcf_codegen_io_t *io)
{
    if (!g || !g->nops || g->nops > TCF_GROUP_MAX_OPS || !g->nbufs ||
        g->nbufs > TCF_GROUP_MAX_BUFS || g->nscalars > TCF_GROUP_MAX_SCALARS ||
        !g->vec || g->vec > 16 || (g->vec & (g->vec - 1)) || g->ndim > TCF_OP_MAX_DIMS)
        return -1;
    int plain[TCF_GROUP_MAX_BUFS];
    io->cat2 = 0;
    for (unsigned b = 0; b < g->nbufs; b++) {
        if (!tcf_codegen_ctype(g->buf_dt[b]))
            return -1;
        io->loaded[b] = 0;
        io->writer[b] = -1;
        plain[b] = 0;
    }
    for (unsigned k = 0; k < g->nops; k++) {
        const tcf_gop_t *op = &g->ops[k];
        if (tcf_codegen_op_check(op))
            return -1;
        /* a two-input cat picks by the N-d space's index (at vec > 1, one pick a pack) */
        if (tcf_codegen_cat2(op) && !g->ndim)
            return -1;
        io->cat2 |= tcf_codegen_cat2(op);
        for (unsigned i = 0; i < op->nin; i++) {
            unsigned s = op->in_src[i], j = s & ~(unsigned)TCF_SRC_OP;
            tcf_dtype_t d;
            if (s & TCF_SRC_OP) {
                if (j >= k)
                    return -1;          /* only an earlier op's result */
                d = g->ops[j].out_dt;
            } else {
                if (s >= g->nbufs)
                    return -1;
                d = g->buf_dt[s];
                if (io->writer[s] < 0)
                    io->loaded[s] = 1, plain[s] |= !tcf_codegen_cat2(op);
            }
            if (op->in_dt[i] != d)
                return -1;              /* eager loaded what was stored, as stored */
        }
        for (unsigned j = 0; j < op->nscalar; j++)
            if (op->scalar_arg[j] >= g->nscalars)
                return -1;
        if (op->out_buf != TCF_NO_STORE) {
            if (op->out_buf >= g->nbufs || g->buf_dt[op->out_buf] != op->out_dt)
                return -1;
            io->writer[op->out_buf] = (int)k;
        }
    }
    for (unsigned b = 0; b < g->nbufs; b++)
        io->guarded[b] = io->loaded[b] && !plain[b];
    /* a buffer broadcast along dim 0 is loaded once for a whole pack: never stored, nor
     * a cat's input (loaded only where a cat picks it) */
    for (unsigned b = 0; g->ndim && g->vec > 1 && b < TCF_GROUP_MAX_BUFS; b++)
        if ((g->bcast0 >> b & 1) && (b >= g->nbufs || io->writer[b] >= 0 || io->guarded[b]))
            return -1;
    return 0;
}

/* Broadcast along dim 0 in a packed N-d kernel (codegen.h): one element for the pack. */
static int tcf_codegen_bcast(const tcf_group_t *g, unsigned b)
{
    return g->ndim && g->vec > 1 && (g->bcast0 >> b & 1);
}

/* The value of op k (tcf_op<k> applied to its inputs), converted to the dtype eager
 * stored it in. src[i] names the C expression holding input i as stored (in_dt[i]); the
 * scalars are read from the array `sarr` of the kernel's argument (bits as op.h holds
 * them). Shared by the elementwise kernels and the row kernels (gen_rows.c). Writes the
 * expression; its length or -1. */
int tcf_codegen_op_call(char *res, size_t cap, const tcf_gop_t *op, unsigned k,
                        const char *const *src, const char *sarr)
{
    char arg[640], call[2560];
    tcf_codegen_sb_t c = { call, sizeof call, 0, 0 };
    if (op->kind == TCF_OP_FILL) {   /* T's bits as the functor holds them (op.h) */
        const char *f = op->out_dt == TCF_DT_F32 ? "__uint_as_float(%s[%u])" : "(%s)%s[%u]";
        int n = op->out_dt == TCF_DT_F32
                    ? snprintf(res, cap, f, sarr, op->scalar_arg[0])
                    : snprintf(res, cap, f, tcf_codegen_ctype(op->out_dt), sarr, op->scalar_arg[0]);
        return n < 0 || (size_t)n >= cap ? -1 : n;
    }
    tcf_codegen_put(&c, "tcf_op%u(", k);
    for (unsigned i = 0; i < op->nin; i++) {
        if (tcf_codegen_cvt(arg, sizeof arg, op->in_dt[i], tcf_codegen_arg_dt(op, i), src[i]) < 0)
            c.bad = 1;
        tcf_codegen_put(&c, "%s, ", arg);
    }
    for (unsigned j = 0; j < 2; j++) {
        tcf_dtype_t d = op->scalar_dt[j];
        const char *sep = j ? ")" : ", ";
        if (j >= op->nscalar)
            tcf_codegen_put(&c, "0.0f%s", sep);
        else  /* scalar bits as held (op.h): float, or the 16-bit T; widening is exact */
            tcf_codegen_put(&c, d == TCF_DT_F32 ? "__uint_as_float(%s[%u])%s"
                                : d == TCF_DT_F16 ? "tcf_h2f((tcf_h)%s[%u])%s"
                                                  : "tcf_b2f((tcf_b)%s[%u])%s",
                            sarr, op->scalar_arg[j], sep);
    }
    if (c.bad)
        return -1;
    return tcf_codegen_cvt(res, cap, op->res_dt, op->out_dt, call);
}

/* Ops that only move, negate or pick their input's bits (or a scalar): no product in them
 * for a consumer to fuse with, so their float results need no barrier. */
int tcf_codegen_moves(tcf_op_kind_t k)
{
    return k == TCF_OP_NEG || k == TCF_OP_ABS || k == TCF_OP_CLAMP || k == TCF_OP_WHERE ||
           k == TCF_OP_CAST || k == TCF_OP_CAT || k == TCF_OP_FILL;
}

const char *tcf_codegen_quals(const tcf_gop_t *op)
{
    return op->kind == TCF_OP_FILL ? "[[maybe_unused]] " : "";
}

/* tcf_elem: the chain for one element. Loaded buffers come in by value (l<b>), stored
 * ones go out by reference (o<b>). */
static void tcf_codegen_elem(tcf_codegen_sb_t *b, const tcf_group_t *g, const tcf_codegen_io_t *io)
{
    int wsofar[TCF_GROUP_MAX_BUFS];
    char arg[3][16];
    tcf_codegen_put(b, "__forceinline__ void tcf_elem(const tcf_args &a%s",
                    io->cat2 ? ", const unsigned e" : "");
    for (unsigned u = 0; u < g->nbufs; u++) {
        if (io->guarded[u] && g->vec == 1)
            tcf_codegen_put(b, ", const %s *g%u", tcf_codegen_ctype(g->buf_dt[u]), u);
        else if (io->loaded[u])
            tcf_codegen_put(b, ", %s l%u", tcf_codegen_ctype(g->buf_dt[u]), u);
        if (io->writer[u] >= 0)
            tcf_codegen_put(b, ", %s &o%u", tcf_codegen_ctype(g->buf_dt[u]), u);
        wsofar[u] = -1;
    }
    tcf_codegen_put(b, ") {\n");
    for (unsigned k = 0; k < g->nops; k++)
        if (g->ops[k].out_dt == TCF_DT_F32 && !tcf_codegen_moves(g->ops[k].kind)) {
            tcf_codegen_put(b, "  const unsigned z = (unsigned)(a.n >> 63);  /* 0: n < 2^63 */\n");
            break;
        }
    for (unsigned k = 0; k < g->nops && !b->bad; k++) {
        const tcf_gop_t *op = &g->ops[k];
        char res[2048];
        const char *src[3];
        for (unsigned i = 0; i < op->nin; i++) {
            unsigned s = op->in_src[i];
            if (s & TCF_SRC_OP)
                snprintf(arg[i], sizeof arg[i], "t%u", s & ~(unsigned)TCF_SRC_OP);
            else if (wsofar[s] >= 0)
                snprintf(arg[i], sizeof arg[i], "t%d", wsofar[s]);
            else
                snprintf(arg[i], sizeof arg[i], io->guarded[s] && g->vec == 1 ? "(*g%u)" : "l%u", s);
            src[i] = arg[i];
        }
        if (op->kind == TCF_OP_CAT) {
            /* in[0] while e % P < T, else in[1] (op.h); the other is never evaluated */
            if (op->nin == 2)
                snprintf(res, sizeof res, "e %% a.s[%u] < a.s[%u] ? %s : %s",
                         op->scalar_arg[0], op->scalar_arg[1], src[0], src[1]);
            else
                snprintf(res, sizeof res, "%s", src[0]);
        } else if (tcf_codegen_op_call(res, sizeof res, op, k, src, "a.s") < 0) {
            b->bad = 1;
            break;
        }
        /* a float computed here passes the barrier: eager stored it, the next kernel
         * loaded it (tcf_fbar, gen_math.c) */
        int bar = op->out_dt == TCF_DT_F32 && !tcf_codegen_moves(op->kind);
        tcf_codegen_put(b, bar ? "  %sconst %s t%u = tcf_fbar(%s, z);\n" : "  %sconst %s t%u = %s;\n",
                        tcf_codegen_quals(op), tcf_codegen_ctype(op->out_dt), k, res);
        if (op->out_buf != TCF_NO_STORE)
            wsofar[op->out_buf] = (int)k;
    }
    for (unsigned u = 0; u < g->nbufs; u++)
        if (io->writer[u] >= 0)
            tcf_codegen_put(b, "  o%u = t%d;\n", u, io->writer[u]);
    tcf_codegen_put(b, "}\n");
}

/* The tcf_elem call's arguments for element `e` of the chunk: pack slots or memory. */
static void tcf_codegen_call(tcf_codegen_sb_t *b, const tcf_group_t *g, const tcf_codegen_io_t *io,
                             int packed, const char *e)
{
    tcf_codegen_put(b, "tcf_elem(a");
    for (unsigned u = 0; u < g->nbufs; u++) {
        if (io->loaded[u])
            tcf_codegen_put(b, packed ? ", L%u.v[%s]" : ", B%u[%s]", u, e);
        if (io->writer[u] >= 0)
            tcf_codegen_put(b, packed ? ", P%u.v[%s]" : ", B%u[%s]", u, e);
    }
    tcf_codegen_put(b, ");\n");
}

static void tcf_codegen_kernel(tcf_codegen_sb_t *b, const tcf_group_t *g,
                               const tcf_codegen_io_t *io)
{
    unsigned v = g->vec;
    tcf_codegen_put(b, "extern \"C\" __global__ void __launch_bounds__(%d) %s(tcf_args a) {\n",
                    TCF_FUSED_BLOCK, TCF_FUSED_KERNEL);
    for (unsigned u = 0; u < g->nbufs; u++)
        if (io->loaded[u] || io->writer[u] >= 0)
            tcf_codegen_put(b, "  %s%s *const B%u = (%s%s *)a.buf[%u];\n",
                            io->writer[u] >= 0 ? "" : "const ", tcf_codegen_ctype(g->buf_dt[u]), u,
                            io->writer[u] >= 0 ? "" : "const ", tcf_codegen_ctype(g->buf_dt[u]), u);
    tcf_codegen_put(b, "  const unsigned long long n = a.n;\n"
                    "  const unsigned long long step = (unsigned long long)gridDim.x * %uull;\n"
                    "  for (unsigned long long i = ((unsigned long long)blockIdx.x * %d"
                    " + threadIdx.x) * %uull; i < n; i += step) {\n",
                    TCF_FUSED_BLOCK * v, TCF_FUSED_BLOCK, v);
    if (v == 1) {
        tcf_codegen_put(b, "    ");
        tcf_codegen_call(b, g, io, 0, "i");
        tcf_codegen_put(b, "  }\n}\n");
        return;
    }
    /* whole chunk: one pack per buffer (16-byte aligned by the caller's guarantee; a pack
     * wider than 16 bytes is moved as several 16-byte accesses) */
    tcf_codegen_put(b, "    if (i + %uull <= n) {\n", v);
    for (unsigned u = 0; u < g->nbufs; u++) {
        unsigned al = tcf_dtype_size(g->buf_dt[u]) * v;
        const char *ct = tcf_codegen_ctype(g->buf_dt[u]);
        al = al > 16 ? 16 : al;
        if (io->loaded[u])
            tcf_codegen_put(b, "      const tcf_pack<%s, %u, %u> L%u = "
                            "*(const tcf_pack<%s, %u, %u> *)(B%u + i);\n",
                            ct, v, al, u, ct, v, al, u);
        if (io->writer[u] >= 0)
            tcf_codegen_put(b, "      tcf_pack<%s, %u, %u> P%u;\n", ct, v, al, u);
    }
    tcf_codegen_put(b, "#pragma unroll\n      for (int j = 0; j < %u; j++)\n        ", v);
    tcf_codegen_call(b, g, io, 1, "j");
    for (unsigned u = 0; u < g->nbufs; u++) {
        unsigned al = tcf_dtype_size(g->buf_dt[u]) * v;
        al = al > 16 ? 16 : al;
        if (io->writer[u] >= 0)
            tcf_codegen_put(b, "      *(tcf_pack<%s, %u, %u> *)(B%u + i) = P%u;\n",
                            tcf_codegen_ctype(g->buf_dt[u]), v, al, u, u);
    }
    tcf_codegen_put(b, "    } else {\n      for (unsigned long long e = i; e < n; e++)\n        ");
    tcf_codegen_call(b, g, io, 0, "e");
    tcf_codegen_put(b, "    }\n  }\n}\n");
}

/* The condition under which some two-input cat of g picks buffer u (loaded, never yet
 * written), for a pack whose first index is i: the terms "i % P < T" (input 0) or its
 * negation (input 1), or-ed. */
static void tcf_codegen_picks(tcf_codegen_sb_t *b, const tcf_group_t *g, unsigned u)
{
    unsigned terms = 0;
    for (unsigned k = 0; k < g->nops; k++) {
        const tcf_gop_t *op = &g->ops[k];
        for (unsigned i = 0; tcf_codegen_cat2(op) && i < 2; i++)
            if (op->in_src[i] == u)
                tcf_codegen_put(b, "%s%s(i %% a.c.s[%u] < a.c.s[%u])", terms++ ? " || " : "",
                                i ? "!" : "", op->scalar_arg[0], op->scalar_arg[1]);
        if (op->out_buf == u)
            break;
    }
    if (!terms)
        b->bad = 1;   /* not a cat's input: not guarded */
}

/* The N-d kernel (g->ndim > 0): a grid-stride loop over chunks of vec elements; each
 * chunk's index is decomposed once, innermost dim first, with PyTorch's IntDivider
 * arithmetic (q = (umulhi(r, m1) + r) >> shift, exact for r < 2^31); the outermost dim
 * takes the quotient left, undivided. Each buffer's offset is the sum of its byte strides
 * times the indices, 32-bit (the planner keeps every offset under 2^31). At vec > 1 the
 * chunk lies within one row of dim 0 (its size is a multiple of vec). */
static void tcf_codegen_kernel_nd(tcf_codegen_sb_t *b, const tcf_group_t *g,
                                  const tcf_codegen_io_t *io)
{
    unsigned v = g->vec, nd = g->ndim;
    tcf_codegen_put(b, "extern \"C\" __global__ void __launch_bounds__(%d) %s(tcf_args_nd a) {\n",
                    TCF_FUSED_BLOCK, TCF_FUSED_KERNEL);
    for (unsigned u = 0; u < g->nbufs; u++)
        if (io->loaded[u] || io->writer[u] >= 0)
            tcf_codegen_put(b, "  %schar *const B%u = (%schar *)a.c.buf[%u];\n",
                            io->writer[u] >= 0 ? "" : "const ", u,
                            io->writer[u] >= 0 ? "" : "const ", u);
    tcf_codegen_put(b, "  const unsigned n = (unsigned)a.c.n;\n"
                    "  const unsigned step = gridDim.x * %uu;\n"
                    "  for (unsigned i = (blockIdx.x * %du + threadIdx.x) * %uu; i < n; i += step) {\n"
                    "    unsigned r = i;\n", TCF_FUSED_BLOCK * v, TCF_FUSED_BLOCK, v);
    for (unsigned u = 0; u < g->nbufs; u++)
        if (io->loaded[u] || io->writer[u] >= 0)
            tcf_codegen_put(b, "    unsigned o%u = 0u;\n", u);
    for (unsigned d = 0; d < nd; d++) {
        if (d + 1 < nd)
            tcf_codegen_put(b, "    { const unsigned q = (__umulhi(r, a.m1[%u]) + r) >> a.shift[%u];\n"
                            "      const unsigned x = r - q * a.size[%u];\n", d, d, d);
        else
            tcf_codegen_put(b, "    { const unsigned x = r;\n");
        for (unsigned u = 0; u < g->nbufs; u++)
            if (io->loaded[u] || io->writer[u] >= 0)
                tcf_codegen_put(b, "      o%u += x * a.st[%u][%u];\n", u, u, d);
        tcf_codegen_put(b, d + 1 < nd ? "      r = q; }\n" : "    }\n");
    }
    if (v == 1) {
        tcf_codegen_put(b, "    tcf_elem(a.c%s", io->cat2 ? ", i" : "");
        for (unsigned u = 0; u < g->nbufs; u++) {
            const char *ct = tcf_codegen_ctype(g->buf_dt[u]);
            if (io->guarded[u])
                tcf_codegen_put(b, ", (const %s *)(B%u + o%u)", ct, u, u);
            else if (io->loaded[u])
                tcf_codegen_put(b, ", *(const %s *)(B%u + o%u)", ct, u, u);
            if (io->writer[u] >= 0)
                tcf_codegen_put(b, ", *(%s *)(B%u + o%u)", ct, u, u);
        }
        tcf_codegen_put(b, ");\n  }\n}\n");
        return;
    }
    for (unsigned u = 0; u < g->nbufs; u++) {
        unsigned al = tcf_dtype_size(g->buf_dt[u]) * v;
        const char *ct = tcf_codegen_ctype(g->buf_dt[u]);
        al = al > 16 ? 16 : al;
        if (io->guarded[u]) {
            /* a cat's input: its pack is loaded where a cat picks it (the whole pack
             * picks alike: the planner saw to it), else left zero and never read */
            tcf_codegen_put(b, "    tcf_pack<%s, %u, %u> L%u = {};\n    if (", ct, v, al, u);
            tcf_codegen_picks(b, g, u);
            tcf_codegen_put(b, ") L%u = *(const tcf_pack<%s, %u, %u> *)(B%u + o%u);\n",
                            u, ct, v, al, u, u);
        } else if (io->loaded[u] && tcf_codegen_bcast(g, u))
            tcf_codegen_put(b, "    const %s S%u = *(const %s *)(B%u + o%u);\n", ct, u, ct, u, u);
        else if (io->loaded[u])
            tcf_codegen_put(b, "    const tcf_pack<%s, %u, %u> L%u = "
                            "*(const tcf_pack<%s, %u, %u> *)(B%u + o%u);\n",
                            ct, v, al, u, ct, v, al, u, u);
        if (io->writer[u] >= 0)
            tcf_codegen_put(b, "    tcf_pack<%s, %u, %u> P%u;\n", ct, v, al, u);
    }
    /* a cat picks by the pack's first index, as every element of the pack would */
    tcf_codegen_put(b, "#pragma unroll\n    for (int j = 0; j < %u; j++)\n      tcf_elem(a.c%s",
                    v, io->cat2 ? ", i" : "");
    for (unsigned u = 0; u < g->nbufs; u++) {
        if (io->loaded[u])
            tcf_codegen_put(b, tcf_codegen_bcast(g, u) ? ", S%u" : ", L%u.v[j]", u);
        if (io->writer[u] >= 0)
            tcf_codegen_put(b, ", P%u.v[j]", u);
    }
    tcf_codegen_put(b, ");\n");
    for (unsigned u = 0; u < g->nbufs; u++) {
        unsigned al = tcf_dtype_size(g->buf_dt[u]) * v;
        al = al > 16 ? 16 : al;
        if (io->writer[u] >= 0)
            tcf_codegen_put(b, "    *(tcf_pack<%s, %u, %u> *)(B%u + o%u) = P%u;\n",
                            tcf_codegen_ctype(g->buf_dt[u]), v, al, u, u, u);
    }
    tcf_codegen_put(b, "  }\n}\n");
}

int tcf_codegen_source(const tcf_group_t *g, char *buf, size_t cap)
{
    tcf_codegen_io_t io;
    tcf_codegen_sb_t b = { buf, cap, 0, 0 };
    if (g && g->red)   /* a row reduction among the ops: gen_rows.c */
        return tcf_codegen_rows_source(g, buf, cap);
    if (!buf || !cap || tcf_codegen_check(g, &io))
        return -1;
    buf[0] = '\0';
    /* A contiguous group's text is what it was before N-d groups (its cached kernels and
     * verdicts stay valid); an N-d one says its rank and takes the longer arguments. */
    if (!g->ndim)
        tcf_codegen_put(&b, "/* tcfuse codegen %d: %u ops, vec %u */\n%s", TCF_CODEGEN_VERSION,
                        g->nops, g->vec, tcf_codegen_prelude());
    else
        tcf_codegen_put(&b, "/* tcfuse codegen %d: %u ops, vec %u, %u dims */\n%s"
                        "struct tcf_args_nd { tcf_args c; unsigned int size[8], m1[8], shift[8]; "
                        "unsigned int st[16][8]; };\n"
                        "static_assert(sizeof(tcf_args_nd) == 808, \"tcf_fused_args_t layout\");\n",
                        TCF_CODEGEN_VERSION, g->nops, g->vec, g->ndim, tcf_codegen_prelude());
    for (unsigned k = 0; k < g->nops && !b.bad; k++) {
        int n = tcf_codegen_op_func(b.p + b.len, b.cap - b.len, &g->ops[k], k);
        if (n < 0)
            b.bad = 1;
        else
            b.len += (size_t)n;
    }
    tcf_codegen_elem(&b, g, &io);
    if (g->ndim)
        tcf_codegen_kernel_nd(&b, g, &io);
    else
        tcf_codegen_kernel(&b, g, &io);
    if (b.bad || b.len > 0x7fffffff)
        return -1;
    return (int)b.len;
}

uint32_t tcf_codegen_grid(const tcf_group_t *g, uint64_t n)
{
    uint64_t v = g && g->vec && g->vec <= 16 && !(g->vec & (g->vec - 1)) ? g->vec : 1;
    uint64_t per = (uint64_t)TCF_FUSED_BLOCK * v;
    uint64_t blocks = n / per + (n % per != 0);
    /* the kernel strides over the grid, so capping only costs parallelism */
    return blocks > 0x7fffffffu ? 0x7fffffffu : (uint32_t)blocks;
}
