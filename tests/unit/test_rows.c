/* Row groups: elementwise producers -> a row reduction -> per-row ops and broadcast
 * consumers planned as one group (fuser/group.c) and generated as one kernel
 * (codegen/gen_rows.c). Hand-built windows for HF LlamaRMSNorm, a hand LayerNorm's mean and
 * a hand softmax, and every refusal by its reason; then the recorded HF Llama forward,
 * whose RMSNorm windows must plan into groups with their reduction; every row group's
 * source must compile with NVRTC (skipped, and said, without one). */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "emu_run.h"
#include "row_kernels.h"
#include "codegen/codegen.h"
#include "codegen/internal.h"
#include "fuser/fuser.h"
#include "recognize/decode.h"
#include "recognize/decode_reduce.h"
#include "trace/read.h"

#define F TCF_DT_F32
#define B TCF_DT_BF16
#define MB(i) (0x7f0000000000ull + ((uint64_t)(i) << 20))
#define SRC(k) (TCF_SRC_OP | (k))
#define SRC_CAP (1u << 17)

static tcf_plan_t plan;

/* A contiguous op of n elements. */
static tcf_item_t op(tcf_op_kind_t k, tcf_dtype_t in, tcf_dtype_t out, uint32_t n, uint64_t o,
                     int nin, uint64_t a, uint64_t b)
{
    tcf_item_t it = { .kind = TCF_ITEM_OP };
    tcf_op_t *p = &it.op;
    p->kind = k, p->loop = TCF_LOOP_VEC, p->vec = 4, p->nin = (uint8_t)nin, p->n = n;
    p->out = o, p->in[0] = a, p->in[1] = b;
    p->compute_dt = k == TCF_OP_CAST && in != F ? out : in, p->res_dt = p->out_dt = out;
    for (int i = 0; i < nin; i++) p->in_dt[i] = in;
    return it;
}

/* The same op over [K, M] with these byte strides (out, in0, in1) per dim. */
static tcf_item_t strided(tcf_item_t it, uint32_t K, uint32_t M, const uint32_t st[3][2])
{
    it.op.loop = TCF_LOOP_STRIDED, it.op.vec = 1, it.op.it.ndim = 2;
    it.op.it.size[0] = K, it.op.it.size[1] = M;
    for (int o = 0; o < 3; o++)
        it.op.it.stride[o][0] = st[o][0], it.op.it.stride[o][1] = st[o][1];
    return it;
}

static tcf_item_t scal(tcf_item_t it, float s0, float s1, int ns)
{
    float v[2] = { s0, s1 };
    it.op.nscalar = (uint8_t)ns;
    for (int i = 0; i < ns; i++) {
        it.op.s[i].dt = F, it.op.s[i].f = v[i];
        memcpy(&it.op.s[i].bits, &v[i], 4);
    }
    return it;
}

/* A decoded reduce_kernel over K contiguous elements of each of M rows, with the config
 * setReduceConfig gives it. */
static tcf_item_t red(tcf_red_op_t r, tcf_dtype_t dt, uint32_t K, uint32_t M, uint64_t dst,
                      uint64_t src)
{
    tcf_item_t it = { .kind = TCF_ITEM_REDUCE };
    tcf_reduce_t *x = &it.red;
    int mm = r == TCF_RED_AMAX || r == TCF_RED_AMIN;
    x->op = r, x->in_dt = x->out_dt = dt, x->acc_dt = mm ? dt : F;
    x->vt0 = 4, x->ivs = dt == F || mm ? 4 : 8;
    CHECK_EQ_INT(tcf_reduce_config_rule(K, M, tcf_dtype_size(x->acc_dt), x->ivs, 132, 2048, &x->cfg), 0);
    x->split_y = x->cfg.input_mult[1] != 0;
    x->factor = 0x3a000000u;
    x->src = src, x->dst = dst, x->odims = 1, x->osize[0] = M;
    x->ostride[0][0] = tcf_dtype_size(dt), x->ostride[0][1] = K * tcf_dtype_size(dt);
    return it;
}

static tcf_item_t free_(uint64_t p) { return (tcf_item_t){ .kind = TCF_ITEM_FREE, .ptr = p }; }

static int P(const tcf_item_t *it, size_t n) { return tcf_fuser_plan(it, n, &plan); }
#define PLAN(arr) P(arr, sizeof arr / sizeof arr[0])

/* The group's source compiles (when NVRTC is here), and says what it is. */
static void compiles(const tcf_fgroup_t *g, const char *what)
{
    static const char *const marks[] = {
        "tcf_reduce(const tcf_rargs a)",
        "tcf_rowpass(",
        "static_assert(sizeof(tcf_rargs) == 544",
        NULL,
    };
    rk_compiles(g, what, "a row kernel", marks);
}

/* HF LlamaRMSNorm as eager launches it (K = 2048 per row, 64 rows): h = x + res (bf16),
 * h.float(), pow(2), mean(-1, keepdim), + eps, rsqrt, x * r (r broadcast), .to(bf16),
 * weight * (weight broadcast over rows), with the pow's buffer freed after the mean. */
/* HF LlamaRMSNorm's launches over M rows of K (items: 10), the buffers at MB(role). */
static size_t rms_window(uint32_t K, uint32_t M, tcf_item_t *win)
{
    const uint32_t n = K * M;
    uint64_t x = MB(0), res = MB(1), h = MB(2), xf = MB(3), sq = MB(4), mean = MB(20),
             v = MB(21), r = MB(22), y = MB(5), yb = MB(7), w = MB(8), out = MB(9);
    tcf_item_t cast = op(TCF_OP_CAST, B, F, n, xf, 1, h, 0), castb = op(TCF_OP_CAST, F, B, n, yb, 1, y, 0);
    const uint32_t bst[3][2] = { { 4, K * 4 }, { 4, K * 4 }, { 0, 4 } };
    const uint32_t wst[3][2] = { { 2, K * 2 }, { 2, 0 }, { 2, K * 2 } };
    tcf_item_t eps = scal(op(TCF_OP_ADD, F, F, M, v, 1, mean, 0), 1e-6f, 1.0f, 2);
    eps.op.sarg = TCF_SARG_OTHER;   /* mean + eps: the scalar other, and alpha */
    const tcf_item_t items[] = {
        scal(op(TCF_OP_ADD, B, B, n, h, 2, x, res), 1.0f, 0, 1),
        cast,
        op(TCF_OP_POW2, F, F, n, sq, 1, xf, 0),
        red(TCF_RED_MEAN, F, K, M, mean, sq),
        free_(sq),
        eps,
        op(TCF_OP_RSQRT, F, F, M, r, 1, v, 0),
        strided(op(TCF_OP_MUL, F, F, n, y, 2, xf, r), K, M, bst),
        castb,
        strided(op(TCF_OP_MUL, B, B, n, out, 2, w, yb), K, M, wst),
    };
    memcpy(win, items, sizeof items);
    return sizeof items / sizeof items[0];
}

TEST(llama_rmsnorm_is_one_row_group)
{
    const uint32_t K = 2048, M = 64;
    uint64_t sq = MB(4), mean = MB(20), r = MB(22), xf = MB(3), w = MB(8);
    tcf_item_t win[10];
    rms_window(K, M, win);
    CHECK_EQ_INT(PLAN(win), 0);
    if (!CHECK_EQ_INT(plan.ngroups, 1))
        return;
    const tcf_fgroup_t *g = &plan.groups[0];
    CHECK_EQ_INT(g->nitems, 9);
    CHECK_EQ_INT(g->g.red, 4);                          /* the mean is op 3 */
    CHECK_EQ_U64(g->g.rowops, (1u << 4) | (1u << 5));   /* + eps, rsqrt */
    CHECK(g->args.size[0] == K && g->args.size[1] == M && g->g.ndim == 0 && g->g.vec == 1);
    CHECK(g->g.rs.op == TCF_RED_MEAN && g->g.rs.in_dt == F && g->g.rs.out_dt == F);
    CHECK(g->g.ops[3].kind == TCF_OP_NONE && g->g.ops[3].in_src[0] == SRC(2));
    CHECK(g->g.ops[4].in_src[0] == SRC(3) && g->g.ops[5].in_src[0] == SRC(4));
    CHECK(g->g.ops[6].in_src[0] == SRC(1) && g->g.ops[6].in_src[1] == SRC(5));
    CHECK(g->g.ops[8].in_src[1] == SRC(7));
    CHECK(g->g.ops[2].out_buf == TCF_NO_STORE);         /* pow's buffer was freed */
    CHECK(g->g.ops[3].out_buf != TCF_NO_STORE);         /* mean, + eps and rsqrt: kept */
    CHECK_EQ_INT(g->stores_dropped, 1);
    for (int q = 0; q < TCF_FUSER_NREASON; q++) CHECK_EQ_INT(plan.reasons[q], 0);
    /* views: the per-row buffers one value a row, the weight one row for all */
    for (unsigned b = 0; b < g->g.nbufs; b++) {
        if (g->args.buf[b] == mean || g->args.buf[b] == r)
            CHECK(g->args.stride[b][0] == 0 && g->args.stride[b][1] == 4);
        if (g->args.buf[b] == w)
            CHECK(g->args.stride[b][0] == 2 && g->args.stride[b][1] == 0);
        if (g->args.buf[b] == xf)
            CHECK(g->args.stride[b][0] == 4 && g->args.stride[b][1] == K * 4);
    }
    /* the kernel's argument: the reduction's own and the group's buffers */
    tcf_rows_args_t ra;
    CHECK_EQ_INT(tcf_fuser_rows_args(g, win, 10, &g->args, &ra), 0);
    CHECK(ra.r.src == sq && ra.r.dst == mean && ra.r.num_inputs == K && ra.r.num_outputs == M);
    CHECK(ra.r.factor == 0x3a000000u && ra.buf[0] == g->args.buf[0] && ra.st[1][1] == g->args.stride[1][1]);
    CHECK_EQ_INT(tcf_fuser_rows_args(g, win, 3, &g->args, &ra), -1);   /* not that window */
    /* another window of the same structure binds; another row length is another kernel */
    tcf_fused_args_t a;
    CHECK_EQ_INT(tcf_fuser_bind(g, win, 10, &a), 0);
    CHECK(!memcmp(&a, &g->args, sizeof a));
    compiles(g, "llama rmsnorm");
    char *src = malloc(SRC_CAP);
    if (tcf_codegen_source(&g->g, src, SRC_CAP) > 0) {
        /* producers in the prologue, returning the square; the per-row ops stored once a
         * row (epilogue); the broadcast consumers and every element store in the row pass */
        const char *pro = strstr(src, "tcf_pro("), *epi = strstr(src, "tcf_epi("),
                   *rp = strstr(src, "tcf_rowpass(");
        CHECK(pro && epi && rp && pro < epi && epi < rp);
        CHECK(pro && strstr(pro, "return t2;") && strstr(pro, "return t2;") < epi);
        CHECK(epi && strstr(epi, "const float t3 = tcf_fbar(v, z);") < rp);
        /* four elements a step, TCF_G apart: their loads, the chains, then their stores;
         * the rest one at a time */
        const char *step = rp ? strstr(rp, "for (; j0 + (TCF_RP - 1) * TCF_G < a.num_inputs; "
                                           "j0 += TCF_RP * TCF_G)") : NULL;
        const char *ld = step ? strstr(step, "L0[e] = *(const tcf_b *)TCF_AT(0, j0 + e * TCF_G);") : NULL,
                   *chain = step ? strstr(step, "TCF_ST(tcf_b, 2) = t0;") : NULL,
                   *st = step ? strstr(step, "*(tcf_b *)TCF_AT(2, j0 + e * TCF_G) = S2[e];") : NULL,
                   *rest = step ? strstr(step, "for (unsigned j = j0; j < a.num_inputs; j += TCF_G)") : NULL;
        CHECK(step && ld && chain && st && rest && ld < chain && chain < st && st < rest);
        CHECK(rest && strstr(rest, "TCF_ST(tcf_b, 2) = t0;"));
        CHECK(rp && strstr(rp, "TCF_ST(tcf_b, 2) = t0;") && strstr(rp, "TCF_ST(float, 3) = t1;"));
        CHECK(epi && strstr(epi, "TCF_ST(float, 3)") > rp);   /* no element store per row */
        CHECK(strstr(src, "__launch_bounds__(") != NULL);
    }
    free(src);
}

/* A hand LayerNorm's first half (mean, x - mean) over f32, and the softmax written by hand
 * (amax, x - max, exp, sum, / sum): a group holds one reduction; the next one ends it. */
TEST(layernorm_and_softmax)
{
    const uint32_t K = 1000, M = 33, n = K * M;
    uint64_t x = MB(0), mu = MB(20), d = MB(1), mx = MB(21), e = MB(2), ex = MB(3), s = MB(22),
             p = MB(4);
    const uint32_t bst[3][2] = { { 4, K * 4 }, { 4, K * 4 }, { 0, 4 } };
    tcf_item_t ln[] = {
        red(TCF_RED_MEAN, F, K, M, mu, x),
        strided(scal(op(TCF_OP_ADD, F, F, n, d, 2, x, mu), -1.0f, 0, 1), K, M, bst),
        op(TCF_OP_POW2, F, F, n, e, 1, d, 0),
    };
    CHECK_EQ_INT(PLAN(ln), 0);
    if (CHECK_EQ_INT(plan.ngroups, 1)) {
        CHECK(plan.groups[0].g.red == 1 && plan.groups[0].g.rowops == 0);
        CHECK(plan.groups[0].g.ops[1].in_src[1] == SRC(0));
        compiles(&plan.groups[0], "layernorm mean");
    }
    tcf_item_t sm[] = {
        red(TCF_RED_AMAX, F, K, M, mx, x),
        strided(scal(op(TCF_OP_ADD, F, F, n, e, 2, x, mx), -1.0f, 0, 1), K, M, bst),
        op(TCF_OP_EXP, F, F, n, ex, 1, e, 0),
        red(TCF_RED_SUM, F, K, M, s, ex),
        strided(op(TCF_OP_DIV, F, F, n, p, 2, ex, s), K, M, bst),
    };
    CHECK_EQ_INT(PLAN(sm), 0);
    if (CHECK_EQ_INT(plan.ngroups, 2)) {
        /* max, x - max, exp | sum, / sum */
        CHECK(plan.groups[0].nitems == 3 && plan.groups[0].g.red == 1);
        CHECK(plan.groups[1].nitems == 2 && plan.groups[1].g.red == 1 && plan.groups[1].first == 3);
        CHECK(plan.groups[1].g.ops[1].in_src[0] != SRC(0));   /* exp's buffer, loaded */
        compiles(&plan.groups[0], "softmax max");
        compiles(&plan.groups[1], "softmax sum");
    }
    for (int q = 0; q < TCF_FUSER_NREASON; q++) CHECK_EQ_INT(plan.reasons[q], 0);
}

/* What a row group refuses, each under its reason. */
TEST(refusals)
{
    const uint32_t K = 256, M = 16, n = K * M;
    uint64_t x = MB(0), sq = MB(1), mean = MB(20), r = MB(21), y = MB(2);
    const uint32_t bst[3][2] = { { 4, K * 4 }, { 4, K * 4 }, { 0, 4 } };
    /* rows over two dims: the reduction joins no group */
    tcf_item_t two[] = { op(TCF_OP_POW2, F, F, n, sq, 1, x, 0), red(TCF_RED_SUM, F, K, M, mean, sq),
                         op(TCF_OP_SQRT, F, F, M, r, 1, mean, 0) };
    two[1].red.odims = 2;
    CHECK_EQ_INT(PLAN(two), 0);
    CHECK_EQ_INT(plan.ngroups, 0);
    /* the square's group ends before the reduction, which joins none: both counted */
    CHECK_EQ_INT(plan.reasons[TCF_FUSER_ROWS], 2);
    CHECK_EQ_INT(plan.reasons[TCF_FUSER_ALONE], 1);
    /* a row of one element */
    tcf_item_t one[] = { op(TCF_OP_POW2, F, F, M, sq, 1, x, 0), red(TCF_RED_SUM, F, 1, M, mean, sq) };
    CHECK_EQ_INT(PLAN(one), 0);
    CHECK(plan.ngroups == 0 && plan.reasons[TCF_FUSER_ROWS] == 2);
    /* a producer over another split of the rows: the space would not stay [K, M] */
    const uint32_t half[3][2] = { { 4, K * 2 }, { 4, K * 2 }, { 0, 0 } };
    tcf_item_t split[] = { strided(op(TCF_OP_POW2, F, F, n, sq, 1, x, 0), K / 2, 2 * M, half),
                           red(TCF_RED_SUM, F, K, M, mean, sq) };
    CHECK_EQ_INT(PLAN(split), 0);
    CHECK(plan.ngroups == 0 && plan.reasons[TCF_FUSER_ROWS] == 2 && plan.reasons[TCF_FUSER_ALONE] == 0);
    /* a per-row result written over the reduced input: stored before the second pass
     * reads the row */
    tcf_item_t inplace[] = { red(TCF_RED_SUM, F, K, M, mean, x),
                             op(TCF_OP_SQRT, F, F, M, x, 1, mean, 0) };
    inplace[1].op.out = x;   /* x's first M elements, as a [M] view: another view of x */
    CHECK_EQ_INT(PLAN(inplace), 0);
    CHECK(plan.ngroups == 0 && plan.reasons[TCF_FUSER_OVERLAP] >= 1);
    /* a second reduction ends the group before it */
    tcf_item_t twice[] = { red(TCF_RED_SUM, F, K, M, mean, x),
                           strided(op(TCF_OP_MUL, F, F, n, y, 2, x, mean), K, M, bst),
                           red(TCF_RED_AMAX, F, K, M, r, y) };
    CHECK_EQ_INT(PLAN(twice), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].nitems == 2 && plan.reasons[TCF_FUSER_REDUCE2] == 1);
    /* an op over M elements before any reduction is just another size */
    tcf_item_t before[] = { op(TCF_OP_SQRT, F, F, M, r, 1, mean, 0), op(TCF_OP_POW2, F, F, n, sq, 1, x, 0),
                            red(TCF_RED_SUM, F, K, M, mean, sq) };
    CHECK_EQ_INT(PLAN(before), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].first == 1 && plan.reasons[TCF_FUSER_SIZE] == 1);
    /* a group without a reduction is generated as before (no row kernel) */
    tcf_item_t plain[] = { op(TCF_OP_POW2, F, F, n, sq, 1, x, 0), op(TCF_OP_SQRT, F, F, n, y, 1, sq, 0) };
    CHECK_EQ_INT(PLAN(plain), 0);
    CHECK(plan.ngroups == 1 && plan.groups[0].g.red == 0);
    /* malformed row groups are refused by codegen */
    CHECK_EQ_INT(PLAN(before), 0);
    tcf_group_t g = plan.groups[0].g;
    char *src = malloc(SRC_CAP);
    CHECK(tcf_codegen_source(&g, src, SRC_CAP) > 0);
    tcf_group_t b = g;
    b.red = 9;
    CHECK_EQ_INT(tcf_codegen_source(&b, src, SRC_CAP), -1);
    b = g, b.rowops = 1u;                      /* a producer cannot be per row */
    CHECK_EQ_INT(tcf_codegen_source(&b, src, SRC_CAP), -1);
    b = g, b.ops[1].in_dt[0] = B;              /* not what the square stored */
    CHECK_EQ_INT(tcf_codegen_source(&b, src, SRC_CAP), -1);
    b = g, b.rs.bw = 3;                        /* no reduce_kernel block */
    CHECK_EQ_INT(tcf_codegen_source(&b, src, SRC_CAP), -1);
    b = g, b.vec = 4;
    CHECK_EQ_INT(tcf_codegen_source(&b, src, SRC_CAP), -1);
    free(src);
}

/* The recorded HF Llama forward: every RMSNorm (x.float(), pow, mean, + eps, rsqrt, x * r)
 * plans into a group with its reduction, binds to its own window, and compiles. */
typedef struct { int64_t id; char *name; uint32_t np, off[8], sz[8]; } kern_t;

static unsigned rms_groups, row_groups;

static void plan_trace(const char *path)
{
    static tcf_item_t items[TCF_FUSER_MAX_ITEMS + 1];
    static int64_t iwin[TCF_FUSER_MAX_ITEMS + 1];
    kern_t *ks = NULL;
    size_t nk = 0, ni = 0;
    tcf_trace_event_t ev;
    tcf_trace_reader_t *r = tcf_trace_read_open(path);
    if (!CHECK(r != NULL))
        return;
    while (tcf_trace_read_next(r, &ev) == 1) {
        tcf_item_t it = { .kind = TCF_ITEM_OPAQUE };
        if (ev.ev == TCF_TRACE_EV_KERNEL) {
            ks = realloc(ks, ++nk * sizeof *ks);
            kern_t *k = &ks[nk - 1];
            k->id = ev.u.kernel.id, k->name = strdup(ev.u.kernel.name), k->np = 0;
            for (size_t i = 0; i < ev.u.kernel.nparams && i < 8; i++, k->np++)
                k->off[i] = ev.u.kernel.params[i].offset, k->sz[i] = ev.u.kernel.params[i].size;
            continue;
        }
        if (ev.ev == TCF_TRACE_EV_WINDOW) {
            size_t m = 0;
            for (size_t i = 0; i < ni; i++)
                if (iwin[i] == ev.u.window.id) items[m++] = items[i];
            ni = 0;
            if (m > TCF_FUSER_MAX_ITEMS || !CHECK(tcf_fuser_plan(items, m, &plan) == 0))
                continue;
            for (unsigned gi = 0; gi < plan.ngroups; gi++) {
                const tcf_fgroup_t *g = &plan.groups[gi];
                tcf_fused_args_t a;
                if (!g->g.red)
                    continue;
                row_groups++;
                CHECK(tcf_fuser_bind(g, items, m, &a) == 0 && !memcmp(&a, &g->args, sizeof a));
                const tcf_gop_t *o = g->g.ops;
                unsigned R = g->g.red - 1u;
                if (R >= 1 && g->g.rs.op == TCF_RED_MEAN && o[R - 1].kind == TCF_OP_POW2 &&
                    o[R].in_src[0] == SRC(R - 1) && g->nitems >= R + 4 &&
                    o[R + 1].kind == TCF_OP_ADD && o[R + 2].kind == TCF_OP_RSQRT &&
                    o[R + 3].kind == TCF_OP_MUL && (g->g.rowops >> (R + 1) & 3) == 3 &&
                    o[R + 1].in_src[0] == SRC(R) && o[R + 3].in_src[1] == SRC(R + 2))
                    rms_groups++;
                if (row_groups <= 3) {
                    char what[96];
                    snprintf(what, sizeof what, "%s row group %u", strrchr(path, '/') + 1, row_groups);
                    compiles(g, what);
                }
            }
            continue;
        }
        if (ev.ev == TCF_TRACE_EV_LAUNCH) {
            for (size_t i = 0; i < nk; i++) {
                if (ks[i].id != ev.u.launch.k) continue;
                const tcf_trace_launch_t *l = &ev.u.launch;
                tcf_decode_launch_t d = { ks[i].name, ks[i].np, ks[i].off, ks[i].sz, l->params,
                                          (uint32_t)l->params_len,
                                          { l->grid[0], l->grid[1], l->grid[2] },
                                          { l->block[0], l->block[1], l->block[2] } };
                tcf_decode_status_t s = tcf_decode_launch(&d, &it.op);
                if (s == TCF_DECODE_OK)
                    it.kind = TCF_ITEM_OP;
                else if (s == TCF_DECODE_REDUCTION && tcf_decode_reduce(&d, &it.red) == TCF_DECODE_OK)
                    it.kind = TCF_ITEM_REDUCE;
                break;
            }
        } else if (ev.ev == TCF_TRACE_EV_ALLOC || ev.ev == TCF_TRACE_EV_FREE) {
            if (ev.u.mem.win < 0) continue;
            it = (tcf_item_t){ .kind = ev.ev == TCF_TRACE_EV_ALLOC ? TCF_ITEM_ALLOC : TCF_ITEM_FREE,
                               .ptr = ev.u.mem.ptr, .size = ev.u.mem.size };
        } else if (ev.ev != TCF_TRACE_EV_MEMSET && ev.ev != TCF_TRACE_EV_MEMCPY) {
            continue;
        }
        if (ni <= TCF_FUSER_MAX_ITEMS)
            iwin[ni] = ev.ev == TCF_TRACE_EV_LAUNCH ? ev.u.launch.win : ev.u.mem.win, items[ni++] = it;
    }
    tcf_trace_read_close(r);
    for (size_t i = 0; i < nk; i++) free(ks[i].name);
    free(ks);
}

TEST(recorded_llama_rmsnorms)
{
    rms_groups = row_groups = 0;
    plan_trace("tests/fixtures/trace-hf-llama.jsonl");
    printf("test_rows: trace-hf-llama: %u row groups, %u of them LlamaRMSNorm\n", row_groups,
           rms_groups);
    /* two norms a layer over the trace's layers, and the final norm: each one group */
    CHECK(rms_groups >= 5);
    CHECK_EQ_INT(row_groups, rms_groups);
    glob_t gl;
    if (glob("tests/fixtures/trace-*.jsonl", 0, NULL, &gl) == 0) {
        unsigned before = row_groups;
        for (size_t i = 0; i < gl.gl_pathc; i++)
            plan_trace(gl.gl_pathv[i]);
        printf("test_rows: %u row groups planned on all recorded traces\n", row_groups - before);
        globfree(&gl);
    }
}


/* The fused RMSNorm kernel run on the CPU (tests/unit/reduce_emu.hpp: a block's threads as
 * coroutines, its barriers and shuffles) on edge values over row lengths from 2 to 8193,
 * misaligned and not, against a model of the eager chain: h = x + res (bf16), h.float(),
 * the square, the mean in reduce_emu's model of PyTorch's order for the launch's config,
 * + eps, rsqrt, x * r, .to(bf16), weight *, each rounded where eager stored it. What it
 * checks is the composition (which pass runs which op, every index, store and rounding
 * point); the math of each op is gen_math.c's, checked on the GPU (tests/gpu/fuse_rows.py).
 * Skipped, and said, without a C++ compiler. */
static const uint32_t emu_shapes[][3] = {   /* K, M, the reduced tensor's misalignment */
    { 2, 3, 0 }, { 5, 7, 1 }, { 31, 5, 0 }, { 33, 64, 3 }, { 100, 5, 2 }, { 129, 7, 0 },
    { 255, 33, 1 }, { 1000, 3, 0 }, { 2049, 2, 1 }, { 4097, 2, 0 }, { 8192, 2, 0 },
    { 8193, 2, 3 }, { 3, 300, 0 }, { 64, 40, 0 },
};

TEST(rmsnorm_kernel_on_the_cpu)
{
    emu_text_t et;
    if (emu_open(&et, "test_rows"))
        return;
    FILE *kf = et.kf, *tf = et.tf;
    char *src = malloc(SRC_CAP);
    unsigned ncase = 0;
    for (size_t i = 0; i < sizeof emu_shapes / sizeof emu_shapes[0]; i++) {
        uint32_t K = emu_shapes[i][0], M = emu_shapes[i][1];
        tcf_item_t win[10];
        size_t n = rms_window(K, M, win);
        if (!CHECK(P(win, n) == 0 && plan.ngroups == 1 && plan.groups[0].g.red))
            continue;
        const tcf_fgroup_t *g = &plan.groups[0];
        tcf_rows_args_t ra;
        if (!CHECK(tcf_codegen_source(&g->g, src, SRC_CAP) > 0 &&
                   tcf_fuser_rows_args(g, win, n, &g->args, &ra) == 0) ||
            emu_put_kernel(kf, src, ncase))
            continue;
        const tcf_reduce_shape_t *rs = &g->g.rs;
        fprintf(tf, "  { k%u::run, %u, %u, %u, %u, %u, %u, %u, %u, %u, %u,", ncase, K, M, rs->bw,
                rs->bh, rs->vectorize, rs->ivs, rs->vt0, rs->split_y, emu_shapes[i][2], g->g.nbufs);
        emu_put_bufs(tf, g, &ra, MB(0), 20);
        fprintf(tf, ", {");
        for (unsigned q = 0; q < g->g.nscalars; q++)
            fprintf(tf, " %uu,", ra.s[q]);
        fprintf(tf, " } },\n");
        ncase++;
    }
    free(src);
    if (!emu_close_run(&et, "rows", EMU_ROWS_ARGS
                       "struct rcase { void (*run)(const void *); unsigned K, M, bw, bh, vec, ivs, vt0, "
                       "split_y, shift, nbufs, role[16], st[16][2], s[16]; };\n"
                       "static const rcase rcases[] = {\n",
                       "};\n#include \"tests/unit/rows_emu.hpp\"\n", ncase))
        printf("test_rows: the fused RMSNorm on the CPU: %u of %u shapes equal to the eager model\n",
               ncase, ncase);
}

int main(void)
{
    rk_open_nvrtc("test_rows");
    RUN(llama_rmsnorm_is_one_row_group);
    RUN(layernorm_and_softmax);
    RUN(refusals);
    RUN(recorded_llama_rmsnorms);
    RUN(rmsnorm_kernel_on_the_cpu);
    rk_report("test_rows", "row kernels");
    return check_main_end();
}
