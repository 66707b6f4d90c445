/* codegen/gen_rows.c: one kernel for a row group (codegen.h: tcf_group_t with red > 0):
 * elementwise producers -> a row reduction -> per-row ops and broadcast consumers, as HF's
 * LlamaRMSNorm launches them (x.float(), pow(2), mean(-1, keepdim=True), + eps, rsqrt,
 * x * r, .to(bf16), weight *).
 *
 * The kernel is gen_reduce.c's for the reduction's shape, so it adds in PyTorch's order,
 * with three splices built from the group's ops by the per-op code of gen_math.c and
 * gen.c's op call (values cross op boundaries rounded to the dtype eager stored them in,
 * float results behind tcf_fbar, exactly as in an elementwise group):
 *   prologue   the producers for element j of the row, returning the reduction's input
 *              (nothing stored: this pass maps threads to elements as reduce_kernel does)
 *   epilogue   the reduction's value stored where eager stored it, and the per-row ops
 *              (+ eps, rsqrt) with their stores: once per row
 *   row pass   every element of the row again (thread g takes j = g, g + G, ...): the
 *              producers recomputed from the same loads (the row was just read: the
 *              cache has it), their stores, the per-row ops recomputed from the row's
 *              value, and the elementwise consumers with their stores.
 * The row pass runs after the reduction's barriers, so an in-place producer (a load and a
 * store of the same element) stores only after every load of the row; both passes of an
 * element's loads see the same bytes. A buffer broadcast along the row that the group
 * writes and also loads is refused by the planner (the epilogue's store would race the
 * row pass's loads). Buffers are addressed by their byte strides along the row and
 * across rows (tcf_rows_args_t), so any view works; in 32 bits, as the planner keeps every
 * view of a row group within 2^32 bytes of its base (fuser/group.c, TCF_FUSER_OFF_MAX).
 *
 * A softmax or a norm in the reduction's place (reduce.h: tcf_red_fullrow) is elementwise
 * in the group: its result is a full row. Its kernel (gen_softmax.c, gen_layernorm.c)
 * takes the producers as its prologues (one per input: the softmax backward reads grad
 * and the forward's output, a norm x, gamma and beta) and, as its epilogue for each
 * element, what the row pass does for one element: the producers' stores, the op's value
 * and store, the consumers. The element is one the thread loaded, after the row's
 * shuffles or barriers: every load of the row for its statistics precedes every store. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "codegen/internal.h"

_Static_assert(sizeof(tcf_rows_args_t) == 544, "the source's tcf_rargs extension assumes 544 bytes");
_Static_assert(TCF_GROUP_MAX_BUFS == 16 && TCF_GROUP_MAX_SCALARS == 16,
               "the row kernel's argument spells out 16 buffers and 16 scalars");

#define TCF_ROWS_EXT " unsigned long long xbuf[16]; unsigned int xs[16]; unsigned int xst[16][2];"

typedef struct {
    unsigned R;                        /* the reduction's index */
    int loaded[TCF_GROUP_MAX_BUFS];    /* read before the group writes it */
    int writer[TCF_GROUP_MAX_BUFS];    /* its last writer, or -1 */
} tcf_rows_io_t;

static int tcf_rows_isrow(const tcf_group_t *g, unsigned k)
{
    return k < 32 && (g->rowops >> k & 1);
}

/* Per row: the reduction itself (not a softmax or a norm: its value is an element's) and the ops
 * rowops marks. */
static int tcf_rows_rowval(const tcf_group_t *g, const tcf_rows_io_t *io, unsigned k)
{
    return (k == io->R && !tcf_red_fullrow(g->rs.op)) || tcf_rows_isrow(g, k);
}

/* The reduction's inputs: the softmax backward's grad and output, a norm's x and its
 * affine vectors, else the one reduced. */
static unsigned tcf_rows_nin(const tcf_reduce_shape_t *rs)
{
    if (tcf_red_softmax_bwd(rs->op))
        return 2;
    if (tcf_red_norm(rs->op))
        return 1u + (rs->affine & 1) + (rs->affine >> 1 & 1);
    return 1;
}

/* 0 when g is a row group we generate (codegen.h's contract), with io filled. */
static int tcf_rows_check(const tcf_group_t *g, tcf_rows_io_t *io)
{
    if (!g->red || g->red > g->nops || g->nops > TCF_GROUP_MAX_OPS || !g->nbufs ||
        g->nbufs > TCF_GROUP_MAX_BUFS || g->nscalars > TCF_GROUP_MAX_SCALARS || g->ndim ||
        (tcf_red_norm(g->rs.op) ? g->vec != 4 : g->vec > 1 || g->bcast0))
        return -1;
    io->R = g->red - 1u;
    const tcf_gop_t *ro = &g->ops[io->R];
    int sm = tcf_red_fullrow(g->rs.op);
    unsigned nin = tcf_rows_nin(&g->rs);
    if (ro->kind != TCF_OP_NONE || ro->nin != nin || ro->nscalar || ro->out_dt != g->rs.out_dt ||
        (g->rowops & ((2u << io->R) - 1u)) || (sm && g->rowops))
        return -1;
    for (unsigned i = 0; i < nin; i++)
        if (ro->in_dt[i] != g->rs.in_dt)
            return -1;
    if (g->nops < 32 && (g->rowops >> g->nops))
        return -1;
    for (unsigned b = 0; b < g->nbufs; b++) {
        if (!tcf_codegen_ctype(g->buf_dt[b]))
            return -1;
        io->loaded[b] = 0, io->writer[b] = -1;
    }
    for (unsigned k = 0; k < g->nops; k++) {
        const tcf_gop_t *op = &g->ops[k];
        if (op->kind == TCF_OP_CAT)
            return -1;   /* the planner keeps cats out of row groups (fuser.h) */
        int row = tcf_rows_rowval(g, io, k);
        if (k != io->R && tcf_codegen_op_check(op))
            return -1;
        for (unsigned i = 0; i < op->nin; i++) {
            unsigned s = op->in_src[i], j = s & ~(unsigned)TCF_SRC_OP;
            tcf_dtype_t d;
            if (s & TCF_SRC_OP) {
                if (j >= k)
                    return -1;
                d = g->ops[j].out_dt;
            } else {
                if (s >= g->nbufs)
                    return -1;
                d = g->buf_dt[s];
                if (io->writer[s] < 0)
                    io->loaded[s] = 1;
                else
                    j = (unsigned)io->writer[s];
            }
            /* a per-row op reads only per-row values (or loads) */
            if (row && k != io->R && (s & TCF_SRC_OP || io->writer[s] >= 0) &&
                !tcf_rows_rowval(g, io, j))
                return -1;
            if (op->in_dt[i] != d)
                return -1;
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
    /* a per-row store is made before the row pass loads: never into a loaded buffer */
    for (unsigned b = 0; b < g->nbufs; b++)
        if (io->loaded[b] && io->writer[b] >= 0 && tcf_rows_rowval(g, io, (unsigned)io->writer[b]))
            return -1;
    return 0;
}

enum { TCF_PASS_PRO, TCF_PASS_EPI, TCF_PASS_ROW };

/* The ops of one pass, as statements (indent: spaces). PRO: the producers, then `return`
 * of the reduction's input `which`; EPI: the reduction's value (v) and the per-row ops,
 * storing per-row results; ROW: everything, storing element results. */
static void tcf_rows_chain(tcf_codegen_sb_t *b, const tcf_group_t *g, const tcf_rows_io_t *io,
                           int pass, unsigned which, const char *ind)
{
    int wsofar[TCF_GROUP_MAX_BUFS];
    char arg[3][96], res[2048];
    unsigned end = pass == TCF_PASS_PRO ? io->R : g->nops;
    for (unsigned u = 0; u < g->nbufs; u++)
        wsofar[u] = -1;
    for (unsigned k = 0; k < end + (pass == TCF_PASS_PRO) && !b->bad; k++) {
        const tcf_gop_t *op = &g->ops[k];
        int row = tcf_rows_rowval(g, io, k);
        const char *src[3];
        if (pass == TCF_PASS_EPI && !row)
            goto next;   /* producers and consumers: the row pass's */
        for (unsigned i = 0; i < op->nin; i++) {
            unsigned s = op->in_src[i];
            if (s & TCF_SRC_OP)
                snprintf(arg[i], sizeof arg[i], "t%u", s & ~(unsigned)TCF_SRC_OP);
            else if (wsofar[s] >= 0)
                snprintf(arg[i], sizeof arg[i], "t%d", wsofar[s]);
            else
                snprintf(arg[i], sizeof arg[i], "TCF_LD(%s, %u)", tcf_codegen_ctype(g->buf_dt[s]), s);
            src[i] = arg[i];
        }
        if (k == io->R) {
            if (pass == TCF_PASS_PRO) {   /* the reduction's input, as reduce_kernel loaded it */
                tcf_codegen_put(b, "%sreturn %s;\n", ind, arg[which]);
                return;
            }
            tcf_codegen_put(b, g->rs.out_dt == TCF_DT_F32 ? "%sconst float t%u = tcf_fbar(v, z);\n"
                                                       : "%sconst tcf_out t%u = v;\n", ind, k);
        } else {
            if (tcf_codegen_op_call(res, sizeof res, op, k, src, "a.xs") < 0) {
                b->bad = 1;
                return;
            }
            int bar = op->out_dt == TCF_DT_F32 && !tcf_codegen_moves(op->kind);
            tcf_codegen_put(b, bar ? "%s%sconst %s t%u = tcf_fbar(%s, z);\n" : "%s%sconst %s t%u = %s;\n",
                            ind, tcf_codegen_quals(op), tcf_codegen_ctype(op->out_dt), k, res);
        }
        /* the last writer of a buffer stores: per-row values in the epilogue, element
         * values in the row pass */
        if (op->out_buf != TCF_NO_STORE && io->writer[op->out_buf] == (int)k &&
            (pass == TCF_PASS_EPI) == row && pass != TCF_PASS_PRO)
            tcf_codegen_put(b, "%sTCF_ST(%s, %u) = t%u;\n", ind, tcf_codegen_ctype(op->out_dt),
                            op->out_buf, k);
    next:
        if (op->out_buf != TCF_NO_STORE)
            wsofar[op->out_buf] = (int)k;
    }
}

/* A norm group (g->vec 4): buffer b moves in packs of four elements unless bit b of
 * bcast0 is set (its elements are not contiguous along the row, or not aligned). */
static int tcf_rows_packed(const tcf_group_t *g, unsigned b)
{
    return g->vec == 4 && !(g->bcast0 >> b & 1);
}

/* A norm's element accesses: TCF_LD and TCF_ST of buffer b as element e of its pack (L<b>
 * loaded, S<b> stored by the function's end) or alone at element j. */
static void tcf_rows_quad_macros(tcf_codegen_sb_t *h, const tcf_group_t *g)
{
    tcf_codegen_put(h, "#define TCF_LD(T, b) TCF_L##b(T)\n#define TCF_ST(T, b) TCF_S##b(T)\n");
    for (unsigned b = 0; b < g->nbufs; b++) {
        if (tcf_rows_packed(g, b))
            tcf_codegen_put(h, "#define TCF_L%u(T) (L%u.v[e])\n#define TCF_S%u(T) S%u.v[e]\n", b, b, b, b);
        else
            tcf_codegen_put(h, "#define TCF_L%u(T) (*(const T *)TCF_AT(%u, j))\n"
                               "#define TCF_S%u(T) (*(T *)TCF_AT(%u, j))\n", b, b, b, b);
    }
}

/* The buffers the row pass stores (tcf_rows_chain's element stores): each buffer's last
 * writer, when that op's value is an element's, not a row's. */
static void tcf_rows_pass_stores(const tcf_group_t *g, const tcf_rows_io_t *io, int *stored)
{
    for (unsigned u = 0; u < g->nbufs; u++)
        stored[u] = 0;
    for (unsigned k = 0; k < g->nops; k++) {
        const tcf_gop_t *op = &g->ops[k];
        if (op->out_buf != TCF_NO_STORE && io->writer[op->out_buf] == (int)k &&
            !tcf_rows_rowval(g, io, k))
            stored[op->out_buf] = 1;
    }
}

/* The body of one of a norm's four-element functions (reduce.h): the packs it loads (every
 * packed buffer the group loads: the compiler drops those a chain never reads) and, for
 * the epilogue, the packs it stores; the chain for each element e of the four, j = j0 + e;
 * the stores. */
static void tcf_rows_quad(tcf_codegen_sb_t *b, const tcf_group_t *g, const tcf_rows_io_t *io,
                          int pass, unsigned which, const char *z)
{
    int stored[TCF_GROUP_MAX_BUFS] = { 0 };
    tcf_codegen_put(b, "%s", z);
    if (pass == TCF_PASS_ROW)
        tcf_rows_pass_stores(g, io, stored);
    for (unsigned u = 0; u < g->nbufs; u++) {
        const char *t = tcf_codegen_ctype(g->buf_dt[u]);
        unsigned al = 4 * tcf_dtype_size(g->buf_dt[u]);
        if (!tcf_rows_packed(g, u))
            continue;
        if (io->loaded[u])
            tcf_codegen_put(b, "  const tcf_pack<%s, 4, %u> L%u = *(const tcf_pack<%s, 4, %u> *)TCF_AT(%u, j0);\n",
                            t, al, u, t, al, u);
        if (stored[u])
            tcf_codegen_put(b, "  tcf_pack<%s, 4, %u> S%u;\n", t, al, u);
    }
    tcf_codegen_put(b, "#pragma unroll\n  for (unsigned e = 0; e < 4u; e++) {\n"
                       "    const unsigned j = j0 + e;\n");
    if (pass == TCF_PASS_PRO) {
        tcf_codegen_put(b, "    out[e] = [&]() -> tcf_in {\n");
        tcf_rows_chain(b, g, io, TCF_PASS_PRO, which, "      ");
        tcf_codegen_put(b, "    }();\n  }\n");
        return;
    }
    tcf_codegen_put(b, "    const tcf_out v = vin[e];\n");
    tcf_rows_chain(b, g, io, TCF_PASS_ROW, 0, "    ");
    tcf_codegen_put(b, "  }\n");
    for (unsigned u = 0; u < g->nbufs; u++)
        if (stored[u] && tcf_rows_packed(g, u)) {
            const char *t = tcf_codegen_ctype(g->buf_dt[u]);
            unsigned al = 4 * tcf_dtype_size(g->buf_dt[u]);
            tcf_codegen_put(b, "  *(tcf_pack<%s, 4, %u> *)TCF_AT(%u, j0) = S%u;\n", t, al, u, u);
        }
}

/* The row pass of a sum, mean, amax or amin group: every element of the row, thread g
 * taking j = g, g + TCF_G, ... As four elements a step (TCF_RP of them, TCF_G apart, so
 * each load of the warp stays contiguous): every element's loads first, into registers,
 * then the four chains, then the stores. One element at a time, a store could alias the
 * next element's loads (all are char-addressed), so each step would wait for its loads
 * alone; the four chains are the same code, and no element reads what another stores
 * (the planner's overlap rule), so the order changes no bit. The rest one at a time. */
static void tcf_rows_pass(tcf_codegen_sb_t *b, const tcf_group_t *g, const tcf_rows_io_t *io,
                          const char *z)
{
    int stored[TCF_GROUP_MAX_BUFS];
    tcf_rows_pass_stores(g, io, stored);
    tcf_codegen_put(b, "%s  unsigned j0 = g;\n"
                       "  for (; j0 + (TCF_RP - 1) * TCF_G < a.num_inputs; j0 += TCF_RP * TCF_G) {\n", z);
    for (unsigned u = 0; u < g->nbufs; u++) {
        const char *t = tcf_codegen_ctype(g->buf_dt[u]);
        if (io->loaded[u])   /* the compiler drops those the chains never read */
            tcf_codegen_put(b, "    %s L%u[TCF_RP];\n#pragma unroll\n    for (unsigned e = 0; e < TCF_RP; e++) "
                               "L%u[e] = *(const %s *)TCF_AT(%u, j0 + e * TCF_G);\n", t, u, u, t, u);
        if (stored[u])
            tcf_codegen_put(b, "    %s S%u[TCF_RP];\n", t, u);
    }
    tcf_codegen_put(b, "#undef TCF_LD\n#undef TCF_ST\n#define TCF_LD(T, b) (L##b[e])\n#define TCF_ST(T, b) S##b[e]\n"
                       "#pragma unroll\n    for (unsigned e = 0; e < TCF_RP; e++) {\n");
    tcf_rows_chain(b, g, io, TCF_PASS_ROW, 0, "      ");
    tcf_codegen_put(b, "    }\n#undef TCF_LD\n#undef TCF_ST\n"
                       "#define TCF_LD(T, b) (*(const T *)TCF_AT(b, j))\n#define TCF_ST(T, b) (*(T *)TCF_AT(b, j))\n");
    for (unsigned u = 0; u < g->nbufs; u++)
        if (stored[u])
            tcf_codegen_put(b, "#pragma unroll\n    for (unsigned e = 0; e < TCF_RP; e++) "
                               "*(%s *)TCF_AT(%u, j0 + e * TCF_G) = S%u[e];\n",
                            tcf_codegen_ctype(g->buf_dt[u]), u, u);
    tcf_codegen_put(b, "  }\n  for (unsigned j = j0; j < a.num_inputs; j += TCF_G) {\n");
    tcf_rows_chain(b, g, io, TCF_PASS_ROW, 0, "    ");
    tcf_codegen_put(b, "  }");
}

int tcf_codegen_rows_source(const tcf_group_t *g, char *buf, size_t cap)
{
    tcf_rows_io_t io;
    enum { HCAP = 65536, PCAP = 16384 };
    if (!g || !buf || !cap || tcf_rows_check(g, &io))
        return -1;
    char *mem = tcf_malloc(HCAP + 4 * PCAP);   /* the splices' text, before the kernel's */
    if (!mem)
        return -1;
    char *helpers = mem, *pro = mem + HCAP, *epi = pro + PCAP, *rowp = epi + PCAP;
    tcf_codegen_sb_t h = { helpers, HCAP, 0, 0 }, p = { pro, PCAP, 0, 0 },
                  e = { epi, PCAP, 0, 0 }, r = { rowp, PCAP, 0, 0 };
    tcf_codegen_put(&h, "/* row group: %u ops, the reduction op %u */\n"
                     "static_assert(sizeof(tcf_rargs) == 544, \"tcf_rows_args_t layout\");\n"
                     "#define TCF_AT(b, j) (a.xbuf[b] + (unsigned)((unsigned)(j) * a.xst[b][0] + "
                     "r.row * a.xst[b][1]))\n"
                     "enum : unsigned { TCF_RP = 4 };   /* the row pass's elements a step */\n",
                     g->nops, io.R);
    if (tcf_red_norm(g->rs.op))
        tcf_rows_quad_macros(&h, g);
    else
        tcf_codegen_put(&h, "#define TCF_LD(T, b) (*(const T *)TCF_AT(b, j))\n"
                            "#define TCF_ST(T, b) (*(T *)TCF_AT(b, j))\n");
    for (unsigned k = 0; k < g->nops && !h.bad; k++) {
        if (k == io.R)
            continue;
        int n = tcf_codegen_op_func(h.p + h.len, h.cap - h.len, &g->ops[k], k);
        if (n < 0)
            h.bad = 1;
        else
            h.len += (size_t)n;
    }
    /* z: a zero no compiler can prove (an address is below 2^63), for tcf_fbar */
    const char *z = "  const unsigned z = (unsigned)(a.src >> 63);\n";
    if (tcf_red_fullrow(g->rs.op)) {
        /* gen_softmax.c's and gen_layernorm.c's splices: a prologue per input, the row pass
         * of one element (a norm's: of four). No row pass here: its buffer holds the
         * other prologues. */
        unsigned nin = tcf_rows_nin(&g->rs);
        char *pro2 = rowp, *pro3 = rowp + PCAP;
        tcf_codegen_sb_t p2 = { pro2, PCAP, 0, 0 }, p3 = { pro3, PCAP, 0, 0 };
        tcf_codegen_sb_t *ps[3] = { &p, &p2, &p3 };
        for (unsigned i = 0; i < nin; i++) {
            if (tcf_red_norm(g->rs.op)) {
                tcf_rows_quad(ps[i], g, &io, TCF_PASS_PRO, i, z);
            } else {
                tcf_codegen_put(ps[i], "%s", z);
                tcf_rows_chain(ps[i], g, &io, TCF_PASS_PRO, i, "  ");
            }
        }
        if (tcf_red_norm(g->rs.op)) {
            tcf_rows_quad(&e, g, &io, TCF_PASS_ROW, 0, z);
        } else {
            tcf_codegen_put(&e, "%s", z);
            tcf_rows_chain(&e, g, &io, TCF_PASS_ROW, 0, "  ");
        }
        int len = -1;
        if (!h.bad && !p.bad && !e.bad && !p2.bad && !p3.bad) {
            tcf_reduce_splice_t sp = { .prologue = pro, .epilogue = epi, .helpers = helpers,
                                       .args_ext = TCF_ROWS_EXT, .prologue2 = nin > 1 ? pro2 : NULL,
                                       .prologue3 = nin > 2 ? pro3 : NULL };
            len = tcf_reduce_source(&g->rs, &sp, buf, cap);
        }
        free(mem);
        return len;
    }
    tcf_codegen_put(&p, "%s", z);
    tcf_rows_chain(&p, g, &io, TCF_PASS_PRO, 0, "  ");
    tcf_codegen_put(&e, "%s  const unsigned j = 0;   /* per-row buffers are broadcast along the row */\n", z);
    tcf_rows_chain(&e, g, &io, TCF_PASS_EPI, 0, "  ");
    tcf_rows_pass(&r, g, &io, z);
    int len = -1;
    if (!h.bad && !p.bad && !e.bad && !r.bad) {
        tcf_reduce_splice_t sp = { .prologue = pro, .epilogue = epi, .row_pass = rowp,
                                   .helpers = helpers, .args_ext = TCF_ROWS_EXT };
        len = tcf_reduce_source(&g->rs, &sp, buf, cap);
    }
    free(mem);
    return len;
}
