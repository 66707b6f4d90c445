/* Code generation: every op kind x dtype alone, casts in every direction, whole chains
 * (the hand-written tanh-GELU as PyTorch launches it), vec 1 and 16-byte vectors; the same
 * over N-d spaces (1 to 8 dims, packs with broadcast operands), and every N-d group the
 * planner forms on the recorded real traces. Each source must be deterministic, depend on
 * structure only (no "0x", garbage in unused fields changes nothing) and compile with
 * NVRTC for sm_90 and sm_80. Bit-exactness is the GPU's to judge: tests/gpu/verify_ops.py,
 * tests/gpu/fuse_views.py. */
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "fuser/fuser.h"
#include "recognize/decode.h"
#include "trace/read.h"
#include "check.h"

#define F TCF_DT_F32
#define H TCF_DT_F16
#define B TCF_DT_BF16
#define Z TCF_DT_BOOL
#define SRC_CAP (1u << 18)

/* One op variant: kind, sarg, mode, tensor inputs, scalars, scalars held in T. */
typedef struct {
    tcf_op_kind_t kind;
    uint8_t sarg, mode, nin, ns, sc_t;
    const char *name;
} variant_t;

static const variant_t variants[] = {
    { TCF_OP_ADD, TCF_SARG_NONE, 0, 2, 1, 0, "add" },
    { TCF_OP_ADD, TCF_SARG_OTHER, 0, 1, 2, 0, "add_self" },
    { TCF_OP_ADD, TCF_SARG_SELF, 0, 1, 2, 0, "add_other" },
    { TCF_OP_MUL, TCF_SARG_NONE, 0, 2, 0, 0, "mul" },
    { TCF_OP_MUL, TCF_SARG_A, 0, 1, 1, 0, "mul_a" },
    { TCF_OP_MUL, TCF_SARG_B, 0, 1, 1, 0, "mul_b" },
    { TCF_OP_DIV, TCF_SARG_NONE, 0, 2, 0, 0, "div" },
    { TCF_OP_DIV, TCF_SARG_A, 0, 1, 1, 1, "div_a" }, { TCF_OP_NEG, 0, 0, 1, 0, 0, "neg" },
    { TCF_OP_RECIPROCAL, 0, 0, 1, 0, 0, "reciprocal" }, { TCF_OP_EXP, 0, 0, 1, 0, 0, "exp" },
    { TCF_OP_LOG, 0, 0, 1, 0, 0, "log" }, { TCF_OP_TANH, 0, 0, 1, 0, 0, "tanh" },
    { TCF_OP_SIGMOID, 0, 0, 1, 0, 0, "sigmoid" }, { TCF_OP_SILU, 0, 0, 1, 0, 0, "silu" },
    { TCF_OP_CLAMP, 0, TCF_CLAMP_MIN, 1, 2, 0, "clamp_min" },
    { TCF_OP_CLAMP, 0, TCF_CLAMP_MAX, 1, 2, 0, "clamp_max" },
    { TCF_OP_CLAMP, 0, TCF_CLAMP_BOTH, 1, 2, 0, "clamp" },
    { TCF_OP_GELU_TANH, 0, 0, 1, 0, 0, "gelu_tanh" },
    { TCF_OP_GELU_ERF, 0, 0, 1, 0, 0, "gelu_erf" }, { TCF_OP_POW2, 0, 0, 1, 0, 0, "pow2" },
    { TCF_OP_POW3, 0, 0, 1, 0, 0, "pow3" }, { TCF_OP_POWM2, 0, 0, 1, 0, 0, "powm2" },
    { TCF_OP_POW, 0, 0, 1, 1, 1, "pow" }, { TCF_OP_SQRT, 0, 0, 1, 0, 0, "sqrt" },
    { TCF_OP_RSQRT, 0, 0, 1, 0, 0, "rsqrt" }, { TCF_OP_ABS, 0, 0, 1, 0, 0, "abs" },
    { TCF_OP_CMP_SCALAR, 0, TCF_CMP_GE, 1, 1, 1, "ge" },
    { TCF_OP_CMP_SCALAR, 0, TCF_CMP_GT, 1, 1, 1, "gt" },
    { TCF_OP_CMP_SCALAR, 0, TCF_CMP_LE, 1, 1, 1, "le" },
    { TCF_OP_CMP_SCALAR, 0, TCF_CMP_LT, 1, 1, 1, "lt" },
    { TCF_OP_CMP_SCALAR, 0, TCF_CMP_EQ, 1, 1, 1, "eq" },
    { TCF_OP_CMP_SCALAR, 0, TCF_CMP_NE, 1, 1, 1, "ne" }, { TCF_OP_WHERE, 0, 0, 3, 0, 0, "where" },
    { TCF_OP_ADDCMUL, 0, 0, 3, 1, 0, "addcmul" },
    { TCF_OP_SIN, 0, 0, 1, 0, 0, "sin" }, { TCF_OP_COS, 0, 0, 1, 0, 0, "cos" },
};
#define NVAR (sizeof variants / sizeof variants[0])
static const tcf_dtype_t flt[3] = { F, H, B };
static const char *const dtn[5] = { "none", "f32", "f16", "bf16", "bool" };

/* Sets op k of g to variant v over T = t, inputs from src[], result to out (or none).
 * Unused fields keep the group's fill (garbage must not matter). */
static void set_op(tcf_group_t *g, unsigned k, const variant_t *v, tcf_dtype_t t,
                   const uint8_t *src, uint8_t out)
{
    tcf_gop_t *o = &g->ops[k];
    o->kind = v->kind, o->sarg = v->sarg, o->mode = v->mode, o->nin = v->nin;
    o->nscalar = v->ns, o->compute_dt = t;
    o->res_dt = o->out_dt = v->kind == TCF_OP_CMP_SCALAR ? Z : t;
    for (unsigned i = 0; i < v->nin; i++) {
        o->in_dt[i] = v->kind == TCF_OP_WHERE && i == 0 ? Z : t;
        o->in_src[i] = src[i];
    }
    for (unsigned j = 0; j < v->ns; j++) {
        o->scalar_arg[j] = (uint8_t)(2 * k + j);
        o->scalar_dt[j] = v->sc_t ? t : F;
    }
    o->out_buf = out;
}

/* A group of op v alone: inputs in buffers 0..nin-1, result in buffer nin. */
static tcf_group_t single(const variant_t *v, tcf_dtype_t t, unsigned vec, int fill)
{
    tcf_group_t g;
    static const uint8_t src[3] = { 0, 1, 2 };
    memset(&g, fill, sizeof g);
    g.nops = 1, g.vec = (uint8_t)vec, g.nscalars = 2, g.nbufs = (uint8_t)(v->nin + 1);
    g.ndim = 0, g.red = 0;   /* bcast0 keeps the fill: a contiguous group ignores it */
    set_op(&g, 0, v, t, src, v->nin);
    for (unsigned i = 0; i < v->nin; i++)
        g.buf_dt[i] = g.ops[0].in_dt[i];
    g.buf_dt[v->nin] = g.ops[0].out_dt;
    return g;
}

/* A cast from -> to: the vectorized float16/bfloat16 copy kernels when from is float
 * (T = float, the result is the target), else direct_copy's cast loop (T = the target). */
static tcf_group_t cast(tcf_dtype_t from, tcf_dtype_t to, unsigned vec, int fill)
{
    tcf_group_t g;
    memset(&g, fill, sizeof g);
    g.nops = 1, g.vec = (uint8_t)vec, g.nscalars = 0, g.nbufs = 2, g.ndim = 0, g.red = 0;
    g.buf_dt[0] = from, g.buf_dt[1] = to;
    tcf_gop_t *o = &g.ops[0];
    o->kind = TCF_OP_CAST, o->sarg = 0, o->mode = 0, o->nin = 1, o->nscalar = 0;
    o->in_dt[0] = from, o->in_src[0] = 0, o->out_buf = 1, o->out_dt = o->res_dt = to;
    o->compute_dt = from == F && (to == H || to == B) ? F : to;
    return g;
}

/* The hand-written tanh GELU, 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3))),
 * in PyTorch's launch order: 0.5*x, x**3, *0.044715, +x, *sqrt(2/pi), tanh, 1+, *.
 * x is buffer 0, the result buffer 1; keep != 0 stores every intermediate too. */
static tcf_group_t hand_gelu(tcf_dtype_t t, unsigned vec, int keep)
{
    static const variant_t *const seq[8] = { &variants[4], &variants[21], &variants[4],
                                             &variants[0], &variants[4], &variants[12],
                                             &variants[1], &variants[3] };
    static const uint8_t srcs[8][2] = { { 0 }, { 0 }, { TCF_SRC_OP | 1 }, { 0, TCF_SRC_OP | 2 },
                                        { TCF_SRC_OP | 3 }, { TCF_SRC_OP | 4 },
                                        { TCF_SRC_OP | 5 }, { TCF_SRC_OP | 0, TCF_SRC_OP | 6 } };
    tcf_group_t g;
    memset(&g, 0x5a, sizeof g);
    g.nops = 8, g.vec = (uint8_t)vec, g.nscalars = 16, g.nbufs = keep ? 9 : 2, g.ndim = 0, g.red = 0;
    for (unsigned b = 0; b < g.nbufs; b++)
        g.buf_dt[b] = t;
    for (unsigned k = 0; k < 8; k++)
        set_op(&g, k, seq[k], t, srcs[k], k == 7 ? 1 : keep ? (uint8_t)(k + 2) : TCF_NO_STORE);
    return g;
}

/* Several variants chained on one T value (x in buffer 0, y buffer 1, a bool buffer 2):
 * each takes the previous T result; compares feed the next where's condition. */
static tcf_group_t chain(tcf_dtype_t t, unsigned first, unsigned count, unsigned vec)
{
    tcf_group_t g;
    memset(&g, 0xa5, sizeof g);
    g.nops = (uint8_t)count, g.vec = (uint8_t)vec, g.nscalars = 16, g.nbufs = 4, g.ndim = 0, g.red = 0;
    g.buf_dt[0] = g.buf_dt[1] = g.buf_dt[3] = t, g.buf_dt[2] = Z;
    uint8_t cur = 0, cond = 2;
    for (unsigned k = 0; k < count; k++) {
        const variant_t *v = &variants[first + k];
        int wh = v->kind == TCF_OP_WHERE, cmp = v->kind == TCF_OP_CMP_SCALAR;
        uint8_t src[3] = { wh ? cond : cur, wh ? cur : 1, 1 };
        set_op(&g, k, v, t, src, cmp ? 2 : k + 1 == count ? 3 : TCF_NO_STORE);
        g.ops[k].scalar_arg[0] = (uint8_t)(k % 16);
        g.ops[k].scalar_arg[1] = (uint8_t)((k + 1) % 16);
        if (v->kind == TCF_OP_CMP_SCALAR)
            cond = (uint8_t)(TCF_SRC_OP | k);
        else
            cur = (uint8_t)(TCF_SRC_OP | k);
    }
    return g;
}

/* --- NVRTC: every source is compiled for its archs. NVRTC costs ~40 ms a program, so
 * sources are compiled in batches (each in its own namespace, the kernel renamed), on a
 * few threads; a failed batch is compiled again source by source to name the culprit. */
typedef struct {
    char name[64];
    char *src;
    int arch[2];
} unit_t;

typedef struct {
    int arch, rc;
    unsigned count;
    char log[4096];
} job_t;

static unit_t units[1200];
static job_t jobs[128];
static unsigned nunits, njobs, next_job;
static int have_nvrtc;
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;

/* Generates g's source (twice, checking it is the same) and keeps it for compiling. */
static void gen(const char *name, const tcf_group_t *g, const tcf_group_t *garbage_twin,
                int arch1, int arch2)
{
    char *a = malloc(SRC_CAP), *b = malloc(SRC_CAP);
    memset(a, 'x', SRC_CAP), memset(b, 'y', SRC_CAP);
    int na = tcf_codegen_source(g, a, SRC_CAP), nb = tcf_codegen_source(garbage_twin, b, SRC_CAP);
    if (check_report(na > 0, __FILE__, __LINE__, name, "tcf_codegen_source failed")) {
        check_report(na == nb && strcmp(a, b) == 0, __FILE__, __LINE__, name,
                     "not deterministic, or depends on unused fields");
        check_report((int)strlen(a) == na, __FILE__, __LINE__, name, "length");
        check_report(!strstr(a, "0x"), __FILE__, __LINE__, name, "a hex literal in the source");
        check_report(tcf_codegen_source(g, b, (size_t)na) == -1, __FILE__, __LINE__, name,
                     "a buffer one byte short must fail");
        check_report(strstr(a, "tcf_fused(tcf_args") != NULL, __FILE__, __LINE__, name, "kernel");
        if (nunits < sizeof units / sizeof units[0]) {
            unit_t *u = &units[nunits++];
            snprintf(u->name, sizeof u->name, "%s", name);
            u->src = a, a = NULL;
            u->arch[0] = arch1, u->arch[1] = arch2;
        }
    }
    free(a), free(b);
}

/* Source i in namespace u<i>, its kernel renamed tcf_fused_<i>, appended to out. */
static size_t wrap(char *out, unsigned i)
{
    const char *s = units[i].src, *k = strstr(s, "tcf_fused(tcf_args");
    return (size_t)sprintf(out, "namespace u%u {\n%.*stcf_fused_%u%s}\n", i, (int)(k - s), s, i,
                           k + strlen("tcf_fused"));
}

static int compile_units(int arch, const unsigned *idx, unsigned n, char *log, size_t logcap)
{
    size_t cap = 64, len = 0;
    for (unsigned i = 0; i < n; i++)
        cap += strlen(units[idx[i]].src) + 128;
    char *src = malloc(cap);
    void *cubin = NULL;
    size_t clen = 0;
    for (unsigned i = 0; i < n; i++)
        len += wrap(src + len, idx[i]);
    int rc = tcf_nvrtc_compile(src, arch, &cubin, &clen, log, logcap);
    if (!rc && (!cubin || clen < 64))
        rc = -2;
    free(cubin);
    free(src);
    return rc;
}

static unsigned batch_idx[128][32];

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&job_lock);
        unsigned i = next_job < njobs ? next_job++ : njobs;
        pthread_mutex_unlock(&job_lock);
        if (i == njobs)
            return NULL;
        jobs[i].rc = compile_units(jobs[i].arch, batch_idx[i], jobs[i].count, jobs[i].log,
                                   sizeof jobs[i].log);
    }
}

/* Batches of up to 24 sources per arch, compiled on 4 threads, then checked here. */
static void compile_all(void)
{
    static const int archs[2] = { 90, 80 };
    unsigned total = 0;
    for (int a = 0; a < 2; a++)
        for (unsigned i = 0; i < nunits; i++) {
            if (units[i].arch[0] != archs[a] && units[i].arch[1] != archs[a])
                continue;
            if (!njobs || jobs[njobs - 1].arch != archs[a] || jobs[njobs - 1].count == 24) {
                if (njobs == sizeof jobs / sizeof jobs[0])
                    break;
                jobs[njobs++] = (job_t){ .arch = archs[a] };
            }
            batch_idx[njobs - 1][jobs[njobs - 1].count++] = i;
            total++;
        }
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    check_test = "nvrtc_compiles";
    for (unsigned j = 0; j < njobs; j++) {
        if (jobs[j].rc == 0) {  /* and without a warning */
            check_report(jobs[j].log[0] == '\0', __FILE__, __LINE__, "batch warnings", jobs[j].log);
            continue;
        }
        for (unsigned k = 0; k < jobs[j].count; k++) {
            char log[4096], what[96];
            unsigned u = batch_idx[j][k];
            snprintf(what, sizeof what, "%s sm_%d", units[u].name, jobs[j].arch);
            if (!check_report(compile_units(jobs[j].arch, &u, 1, log, sizeof log) == 0,
                              __FILE__, __LINE__, what, log))
                fprintf(stderr, "    (source:\n%s)\n", units[u].src);
        }
    }
    printf("test_codegen: %u sources compiled in %u NVRTC programs (NVRTC %s)\n", total, njobs,
           tcf_nvrtc_version());
}

TEST(every_op_alone)
{
    char name[64];
    for (unsigned d = 0; d < 3; d++)
        for (unsigned v = 0; v < NVAR; v++)
            for (unsigned vec = 1; vec <= 8; vec *= 8) {
                unsigned vv = vec == 1 ? 1 : flt[d] == F ? 4 : 8;
                tcf_group_t g = single(&variants[v], flt[d], vv, 0x00);
                tcf_group_t g2 = single(&variants[v], flt[d], vv, 0xff);
                snprintf(name, sizeof name, "%s %s vec%u", variants[v].name, dtn[flt[d]], vv);
                gen(name, &g, &g2, vv == 1 ? 80 : 90, 0);
            }
}

TEST(casts_every_direction)
{
    char name[64];
    static const tcf_dtype_t all[4] = { F, H, B, Z };
    for (unsigned f = 0; f < 4; f++)
        for (unsigned t = 0; t < 4; t++) {
            tcf_dtype_t from = all[f], to = all[t];
            if (from == to)
                continue;
            tcf_group_t g = cast(from, to, 8, 0), g2 = cast(from, to, 8, 0xee);
            snprintf(name, sizeof name, "cast %s->%s", dtn[from], dtn[to]);
            gen(name, &g, &g2, 90, 80);
        }
    /* the cast loop around a binary op: half + float -> float (T = float) */
    tcf_group_t g = single(&variants[0], F, 1, 0);
    g.buf_dt[0] = g.ops[0].in_dt[0] = H;
    gen("add half+float cast loop", &g, &g, 90, 80);
    tcf_group_t w = single(&variants[33], Z, 16, 0);   /* where over bool tensors: vec 16 */
    gen("where bool vec16", &w, &w, 90, 80);
}

TEST(chains)
{
    char name[64];
    for (unsigned d = 0; d < 3; d++)
        for (unsigned vec = 1; vec <= 8; vec *= 8) {
            unsigned vv = vec == 1 ? 1 : flt[d] == F ? 4 : 8;
            tcf_group_t a = hand_gelu(flt[d], vv, 0), a2 = hand_gelu(flt[d], vv, 1);
            snprintf(name, sizeof name, "hand gelu %s vec%u", dtn[flt[d]], vv);
            gen(name, &a, &a, 90, 80);
            snprintf(name, sizeof name, "hand gelu stored %s vec%u", dtn[flt[d]], vv);
            gen(name, &a2, &a2, 90, 80);
            tcf_group_t c1 = chain(flt[d], 0, 18, vv), c2 = chain(flt[d], 18, NVAR - 18, vv);
            snprintf(name, sizeof name, "chain1 %s vec%u", dtn[flt[d]], vv);
            gen(name, &c1, &c1, 90, 80);
            snprintf(name, sizeof name, "chain2 %s vec%u", dtn[flt[d]], vv);
            gen(name, &c2, &c2, 90, 80);
        }
}

/* g over an N-d space of nd dims: at vec > 1, bcast0 marks buffers broadcast along dim 0
 * (loaded ones only). */
static tcf_group_t nd_of(tcf_group_t g, unsigned nd, uint16_t bcast0)
{
    g.ndim = (uint8_t)nd, g.bcast0 = bcast0;
    return g;
}

TEST(nd_every_op)
{
    char name[96];
    for (unsigned d = 0; d < 3; d++)
        for (unsigned v = 0; v < NVAR; v++)
            for (unsigned vec = 1; vec <= 8; vec *= 8) {
                unsigned vv = vec == 1 ? 1 : flt[d] == F ? 4 : 8, nd = 1 + (v + d) % 4;
                /* at vec > 1 the first input is broadcast along dim 0 */
                uint16_t bc = vv > 1 ? 1 : 0;
                tcf_group_t g = nd_of(single(&variants[v], flt[d], vv, 0x00), nd, bc);
                tcf_group_t g2 = nd_of(single(&variants[v], flt[d], vv, 0xff), nd,
                                       vv > 1 ? bc : 0xffff);   /* bcast0 unused at vec 1 */
                snprintf(name, sizeof name, "%s %s vec%u %ud", variants[v].name, dtn[flt[d]], vv, nd);
                gen(name, &g, &g2, vv == 1 ? 80 : 90, 0);
            }
    for (unsigned d = 0; d < 3; d++) {
        tcf_group_t a = nd_of(hand_gelu(flt[d], 1, 1), 8, 0);
        snprintf(name, sizeof name, "hand gelu stored %s 8d", dtn[flt[d]]);
        gen(name, &a, &a, 90, 80);
        tcf_group_t c = nd_of(chain(flt[d], 0, 18, flt[d] == F ? 4 : 8), 2, 1u << 1);
        snprintf(name, sizeof name, "chain1 %s 2d packed, y broadcast", dtn[flt[d]]);
        gen(name, &c, &c, 90, 80);
    }
    tcf_group_t c = nd_of(cast(B, F, 4, 0), 2, 0);   /* bf16 -> f32, packs of 4 */
    gen("cast bf16->f32 2d vec4", &c, &c, 90, 80);
}

/* Every N-d group the planner forms on the recorded real traces (the planner's view of
 * their strided and broadcast launches), each distinct source once. */
typedef struct { int64_t id; char *name; uint32_t np, off[8], sz[8]; } tkern_t;

static unsigned nd_from_trace(const char *path, unsigned *groups)
{
    static tcf_item_t items[TCF_FUSER_MAX_ITEMS + 1];
    static int64_t iwin[TCF_FUSER_MAX_ITEMS + 1];
    static tcf_plan_t plan;
    static char src[SRC_CAP];
    tkern_t *ks = NULL;
    size_t nk = 0, ni = 0;
    unsigned added = 0;
    tcf_trace_event_t ev;
    tcf_trace_reader_t *r = tcf_trace_read_open(path);
    if (!CHECK(r != NULL))
        return 0;
    while (tcf_trace_read_next(r, &ev) == 1) {
        tcf_item_t it = { .kind = TCF_ITEM_OPAQUE };
        if (ev.ev == TCF_TRACE_EV_KERNEL) {
            ks = realloc(ks, ++nk * sizeof *ks);
            tkern_t *k = &ks[nk - 1];
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
            if (m > TCF_FUSER_MAX_ITEMS || tcf_fuser_plan(items, m, &plan) != 0)
                continue;
            for (unsigned gi = 0; gi < plan.ngroups; gi++) {
                const tcf_group_t *g = &plan.groups[gi].g;
                int len;
                if (!g->ndim)
                    continue;
                (*groups)++;
                len = tcf_codegen_source(g, src, sizeof src);
                if (!CHECK(len > 0))
                    continue;
                int seen = 0;
                for (unsigned u = 0; u < nunits && !seen; u++)
                    seen = !strcmp(units[u].src, src);
                if (!seen) {
                    char name[64];
                    snprintf(name, sizeof name, "%.30s group %u", strrchr(path, '/') + 1, added++);
                    gen(name, g, g, 90, 0);
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
                if (tcf_decode_launch(&d, &it.op) == TCF_DECODE_OK) it.kind = TCF_ITEM_OP;
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
    return added;
}

TEST(nd_groups_of_recorded_traces)
{
    glob_t gl;
    unsigned distinct = 0, groups = 0;
    if (!CHECK(glob("tests/fixtures/trace-*.jsonl", 0, NULL, &gl) == 0)) return;
    for (size_t i = 0; i < gl.gl_pathc; i++) distinct += nd_from_trace(gl.gl_pathv[i], &groups);
    globfree(&gl);
    printf("test_codegen: %u N-d groups planned on the recorded traces, %u distinct sources\n",
           groups, distinct);
    CHECK(distinct >= 10);   /* the Llama traces alone plan dozens */
}

/* A few fragments that carry the semantics (PYTORCH-KERNELS.md, decode_rules.def). */
TEST(fragments)
{
    static char src[SRC_CAP];
    struct { const variant_t *v; tcf_dtype_t t; unsigned vec; const char *want; } c[] = {
        { &variants[1], F, 4, "return fmaf(s0, s1, v);" },               /* one fmaf */
        { &variants[2], H, 8, "return tcf_f2h(fmaf(s0, v, s1));" },
        { &variants[21], B, 8, "tcf_f2b(tcf_b2f(tcf_f2b((v * v))) * v)" }, /* pow3 rounds x*x */
        { &variants[22], F, 4, "(float)(1.0 / (double)(v * v))" },         /* a double division */
        { &variants[8], H, 8, "tcf_hneg(x0)" },                            /* __hneg */
        { &variants[15], H, 8, "fmaxf(v, s0)" },                /* clamp is ::max in opmath */
        { &variants[27], B, 8, "tcf_b2f((tcf_b)a.s[0])" },                 /* scalar held in T */
        { &variants[3], F, 4, "tcf_fbar(" },                               /* float barrier */
        { &variants[8], F, 4, "const float t0 = tcf_op0(" },               /* none for neg */
        { &variants[3], H, 8, "tcf_pack<tcf_h, 8, 16> L0" },               /* 16-byte packs */
        { &variants[27], F, 4, "tcf_pack<tcf_u8, 4, 4> P1" },              /* bool result */
    };
    for (unsigned i = 0; i < sizeof c / sizeof c[0]; i++) {
        tcf_group_t g = single(c[i].v, c[i].t, c[i].vec, 0);
        int n = tcf_codegen_source(&g, src, sizeof src);
        if (!check_report(n > 0 && strstr(src, c[i].want) != NULL, __FILE__, __LINE__,
                          c[i].v->name, c[i].want))
            fprintf(stderr, "    (source:\n%s)\n", src);
    }
    tcf_group_t g = hand_gelu(B, 8, 0);
    CHECK(tcf_codegen_source(&g, src, sizeof src) > 0);
    CHECK(strstr(src, "o1 = t7;") && !strstr(src, "o2 ="));    /* intermediates not stored */
    CHECK(!strstr(src, "tcf_fbar(t"));                         /* bf16 results round instead */
    CHECK(!strstr(src, "tcf_args_nd") && !strstr(src, "dims"));  /* a contiguous kernel's text */
    /* N-d: one decomposition per chunk, IntDivider arithmetic, the outer dim undivided,
     * byte offsets per buffer; a broadcast operand loaded once for a pack */
    g = nd_of(single(&variants[3], F, 4, 0), 3, 1u << 1);
    CHECK(tcf_codegen_source(&g, src, sizeof src) > 0);
    CHECK(strstr(src, "3 dims */") && strstr(src, "tcf_fused(tcf_args_nd a)"));
    CHECK(strstr(src, "const unsigned q = (__umulhi(r, a.m1[0]) + r) >> a.shift[0];"));
    CHECK(strstr(src, "a.m1[1]") && !strstr(src, "a.m1[2]") && strstr(src, "const unsigned x = r;"));
    CHECK(strstr(src, "o2 += x * a.st[2][2];"));
    CHECK(strstr(src, "const float S1 = *(const float *)(B1 + o1);"));
    CHECK(strstr(src, "const tcf_pack<float, 4, 16> L0 = *(const tcf_pack<float, 4, 16> *)(B0 + o0);"));
    CHECK(strstr(src, "tcf_elem(a.c, L0.v[j], S1, P2.v[j]);"));
    g = nd_of(single(&variants[3], H, 1, 0), 1, 0);
    CHECK(tcf_codegen_source(&g, src, sizeof src) > 0);
    CHECK(strstr(src, "tcf_elem(a.c, *(const tcf_h *)(B0 + o0), *(const tcf_h *)(B1 + o1), "
                      "*(tcf_h *)(B2 + o2));") && !strstr(src, "__umulhi"));
}

/* A two-input cat (HF's rotate_half) and its consumer: the cat's inputs come in as
 * pointers, only the chosen one is read; the index picks (e % P < T, op.h); one input
 * (a KV-cache cat after an empty one) is a plain copy at any vec. */
static tcf_group_t cat_group(tcf_dtype_t t, unsigned nd, unsigned nin)
{
    tcf_group_t g;
    memset(&g, 0, sizeof g);
    g.nops = 2, g.nbufs = (uint8_t)(nin + 2), g.nscalars = nin == 2 ? 2 : 0, g.vec = 1;
    g.ndim = (uint8_t)nd;
    for (unsigned b = 0; b < g.nbufs; b++) g.buf_dt[b] = t;
    tcf_gop_t *c = &g.ops[0], *m = &g.ops[1];
    *c = (tcf_gop_t){ .kind = TCF_OP_CAT, .nin = (uint8_t)nin, .nscalar = nin == 2 ? 2 : 0,
                      .out_dt = t, .compute_dt = t, .res_dt = t, .out_buf = TCF_NO_STORE,
                      .in_src = { 0, 1 }, .scalar_arg = { 0, 1 } };
    c->in_dt[0] = c->in_dt[1] = t;
    /* out = cat * buf: the consumer also reads in[0]'s buffer plainly when asked */
    *m = (tcf_gop_t){ .kind = TCF_OP_MUL, .nin = 2, .out_dt = t, .compute_dt = t, .res_dt = t,
                      .in_src = { TCF_SRC_OP | 0, (uint8_t)nin }, .out_buf = (uint8_t)(nin + 1) };
    m->in_dt[0] = m->in_dt[1] = t;
    return g;
}

TEST(cat_groups)
{
    static char src[SRC_CAP];
    static const char *const ct[] = { "", "float", "tcf_h", "tcf_b" };
    for (unsigned d = 0; d < 3; d++)
        for (unsigned nd = 1; nd <= 4; nd++) {
            char name[64], want[160];
            tcf_group_t g = cat_group(flt[d], nd, 2);
            snprintf(name, sizeof name, "cat2 * x %s %ud", dtn[flt[d]], nd);
            if (!check_report(tcf_codegen_source(&g, src, sizeof src) > 0, __FILE__, __LINE__,
                              name, "no source"))
                continue;
            snprintf(want, sizeof want, "const unsigned e, const %s *g0, const %s *g1, %s l2",
                     ct[flt[d]], ct[flt[d]], ct[flt[d]]);
            CHECK(strstr(src, want) != NULL);
            CHECK(strstr(src, "= e % a.s[0] < a.s[1] ? (*g0) : (*g1);") != NULL);
            snprintf(want, sizeof want, "tcf_elem(a.c, i, (const %s *)(B0 + o0), (const %s *)(B1 + o1), "
                     "*(const %s *)(B2 + o2)", ct[flt[d]], ct[flt[d]], ct[flt[d]]);
            CHECK(strstr(src, want) != NULL);
            CHECK(!strstr(src, "tcf_fbar(t0"));   /* it moves bits: no barrier */
            gen(name, &g, &g, 90, 80);
            /* the consumer reading in[0]'s buffer too: loaded plainly, by value */
            g.ops[1].in_src[1] = 0;
            CHECK(tcf_codegen_source(&g, src, sizeof src) > 0);
            snprintf(want, sizeof want, "const unsigned e, %s l0, const %s *g1", ct[flt[d]], ct[flt[d]]);
            CHECK(strstr(src, want) != NULL);
            CHECK(strstr(src, "? l0 : (*g1);") != NULL);
            /* one input: a copy, packs allowed */
            g = cat_group(flt[d], nd, 1);
            g.vec = flt[d] == F ? 4 : 8;
            snprintf(name, sizeof name, "cat1 * x %s %ud vec%u", dtn[flt[d]], nd, g.vec);
            CHECK(tcf_codegen_source(&g, src, sizeof src) > 0 && !strstr(src, "unsigned e"));
            gen(name, &g, &g, 90, 0);
        }
    /* packed (the planner found P and T multiples of 8): each input's pack is loaded
     * where the pack's first index picks it, and the pick is by that index */
    tcf_group_t g = cat_group(B, 2, 2);
    g.vec = 8;
    CHECK(tcf_codegen_source(&g, src, sizeof src) > 0);
    CHECK(strstr(src, "const unsigned e, tcf_b l0, tcf_b l1, tcf_b l2") != NULL);
    CHECK(strstr(src, "= e % a.s[0] < a.s[1] ? l0 : l1;") != NULL);
    CHECK(strstr(src, "tcf_pack<tcf_b, 8, 16> L0 = {};\n    if ((i % a.c.s[0] < a.c.s[1])) L0 = ") != NULL);
    CHECK(strstr(src, "if (!(i % a.c.s[0] < a.c.s[1])) L1 = ") != NULL);
    CHECK(strstr(src, "tcf_elem(a.c, i, L0.v[j], L1.v[j], L2.v[j], P3.v[j]);") != NULL);
    gen("cat2 * x bf16 2d vec8", &g, &g, 90, 80);
    /* one buffer both inputs of two cats: loaded where either picks it */
    g.nops = 3, g.nscalars = 4;
    g.ops[2] = g.ops[0];
    g.ops[2].in_src[0] = 1, g.ops[2].in_src[1] = TCF_SRC_OP | 1, g.ops[2].scalar_arg[0] = 2,
    g.ops[2].scalar_arg[1] = 3, g.ops[2].out_buf = 3;
    g.ops[1].out_buf = TCF_NO_STORE;
    CHECK(tcf_codegen_source(&g, src, sizeof src) > 0);
    CHECK(strstr(src, "if (!(i % a.c.s[0] < a.c.s[1]) || (i % a.c.s[2] < a.c.s[3])) L1 = ") != NULL);
    gen("two cats bf16 2d vec8", &g, &g, 90, 0);
    /* refused: a two-input cat's input broadcast along dim 0 in a packed kernel */
    g = cat_group(B, 2, 2);
    g.vec = 8, g.bcast0 = 2;
    CHECK_EQ_INT(tcf_codegen_source(&g, src, sizeof src), -1);
    /* refused: a two-input cat in a contiguous kernel, or with one scalar */
    g = cat_group(B, 0, 2);
    CHECK_EQ_INT(tcf_codegen_source(&g, src, sizeof src), -1);
    g = cat_group(B, 2, 2);
    g.ops[0].nscalar = 1;
    CHECK_EQ_INT(tcf_codegen_source(&g, src, sizeof src), -1);
    g = cat_group(B, 2, 2);
    g.ops[0].in_dt[1] = H;   /* bits of one size, one type along every edge */
    CHECK_EQ_INT(tcf_codegen_source(&g, src, sizeof src), -1);
}

TEST(malformed_groups_refused)
{
    static char src[SRC_CAP];
    tcf_group_t ok = hand_gelu(F, 4, 0), g;
    CHECK(tcf_codegen_source(&ok, src, sizeof src) > 0);
#define BAD(stmt) (g = ok, stmt, CHECK_EQ_INT(tcf_codegen_source(&g, src, sizeof src), -1))
    BAD(g.ops[2].in_src[0] = TCF_SRC_OP | 2);            /* itself */
    BAD(g.ops[2].in_src[0] = TCF_SRC_OP | 5);            /* a later op */
    BAD(g.ops[3].in_src[0] = 7);                         /* no such buffer */
    BAD(g.nbufs = TCF_GROUP_MAX_BUFS + 1);
    BAD(g.nbufs = 0);
    BAD(g.nops = 0);
    BAD(g.nops = TCF_GROUP_MAX_OPS + 1);
    BAD(g.nscalars = TCF_GROUP_MAX_SCALARS + 1);
    BAD(g.ops[2].scalar_arg[0] = 16);
    BAD(g.ops[5].kind = TCF_OP_NKIND);
    BAD(g.ops[5].kind = TCF_OP_NONE);
    BAD(g.ops[5].kind = TCF_OP_RELU);                    /* reserved, never decoded */
    BAD(g.ops[5].nin = 2);
    BAD(g.ops[3].in_dt[1] = H);                          /* not what op 2 stored */
    BAD(g.ops[7].out_dt = g.ops[7].res_dt = g.ops[7].compute_dt = H); /* buffer is float */
    BAD(g.ops[6].sarg = TCF_SARG_A);                     /* add has no A form */
    BAD(g.ops[0].scalar_dt[0] = Z);
    BAD(g.vec = 3);
    BAD(g.vec = 0);
    BAD(g.buf_dt[0] = TCF_DT_NONE);
    BAD(g.ndim = TCF_OP_MAX_DIMS + 1);
    BAD((g.ndim = 2, g.bcast0 = 1u << 1));               /* buffer 1 is stored */
    BAD((g.ndim = 2, g.bcast0 = 1u << 5));               /* no such buffer */
    g = ok, g.ndim = 2, g.bcast0 = 1u << 1, g.vec = 1;   /* ignored at vec 1 */
    CHECK(tcf_codegen_source(&g, src, sizeof src) > 0);
    CHECK_EQ_INT(tcf_codegen_source(NULL, src, sizeof src), -1);
    CHECK_EQ_INT(tcf_codegen_source(&ok, NULL, sizeof src), -1);
    CHECK_EQ_INT(tcf_codegen_source(&ok, src, 100), -1);
}

TEST(grid)
{
    tcf_group_t g = hand_gelu(F, 4, 0);
    CHECK_EQ_INT(tcf_codegen_grid(&g, 0), 0);
    CHECK_EQ_INT(tcf_codegen_grid(&g, 1), 1);
    CHECK_EQ_INT(tcf_codegen_grid(&g, 512), 1);
    CHECK_EQ_INT(tcf_codegen_grid(&g, 513), 2);
    g.vec = 1;
    CHECK_EQ_INT(tcf_codegen_grid(&g, 1u << 20), (1u << 20) / 128);
    CHECK_EQ_U64(tcf_codegen_grid(&g, 1ull << 50), 0x7fffffffu);
}

TEST(nvrtc_errors)
{
    void *cubin = (void *)1;
    size_t len = 1;
    char log[4096];
    CHECK_EQ_INT(tcf_nvrtc_compile(NULL, 90, &cubin, &len, log, sizeof log), -1);
    if (!have_nvrtc)
        return;
    CHECK(tcf_nvrtc_version()[0] != '\0');
    CHECK_EQ_INT(tcf_nvrtc_compile("this is not C++;", 90, &cubin, &len, log, sizeof log), -1);
    CHECK(strstr(log, "error") != NULL);
    CHECK(cubin == NULL && len == 0);
}

int main(void)
{
    char err[512];
    have_nvrtc = tcf_nvrtc_open(NULL, err, sizeof err) == 0 ||
                 tcf_nvrtc_open("/usr/local/cuda/lib64/libnvrtc.so.13", err, sizeof err) == 0;
    if (!have_nvrtc)
        printf("test_codegen: NVRTC not found (%s): compile checks skipped\n", err);
    RUN(every_op_alone);
    RUN(casts_every_direction);
    RUN(chains);
    RUN(nd_every_op);
    RUN(nd_groups_of_recorded_traces);
    RUN(fragments);
    RUN(cat_groups);
    RUN(malformed_groups_refused);
    RUN(grid);
    RUN(nvrtc_errors);
    if (have_nvrtc)
        compile_all();
    for (unsigned i = 0; i < nunits; i++)
        free(units[i].src);
    return check_main_end();
}
