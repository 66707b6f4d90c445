/* Decoding of PyTorch 2.11's reduce_kernel (recognize/decode_reduce.c) on every such launch
 * the recorded traces hold (tests/fixtures/trace-*.jsonl, full parameter bytes: trace-ops,
 * the HF Llama forward and training step, the training loop):
 *  - each decodes, or is refused as a global reduce (several blocks per output) or a
 *    reduction over an outer dim, never as a layout or a value we misread;
 *  - what decodes agrees with the launch: setReduceConfig for its K and M on the H100
 *    (132 SMs) gives its grid, block and shared memory; the rows multiply to M and lie K
 *    elements apart; mean's factor is fl(M)/fl(M*K); the vector shift is src's;
 *  - the worked examples of docs/PYTORCH-REDUCE.md §2.4 field by field, and its table of
 *    §3 through tcf_reduce_config_rule;
 *  - one corrupted field at a time is refused by its reason; names of ops we do not take
 *    are refused by theirs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "recognize/decode_reduce.h"
#include "fixture_launches.h"

#define PREFIX "_ZN2at6native13reduce_kernelI"

static int want(const char *name) { return !strncmp(name, PREFIX, strlen(PREFIX)); }
#define dl fixture_decode_launch

static tcf_decode_status_t dec(const launch_t *x, const uint8_t *params, const uint32_t grid[3],
                               tcf_reduce_t *r)
{
    tcf_decode_launch_t d = dl(x, params, x->len, grid);
    return tcf_decode_reduce(&d, r);
}

static float f32(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static uint32_t bits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

TEST(every_recorded_reduce_kernel_launch)
{
    size_t ok = 0, why[TCF_DECODE_NSTATUS] = { 0 }, vec = 0, split = 0, minmax16 = 0, mean = 0;
    for (size_t i = 0; i < nls; i++) {
        const launch_t *x = &ls[i];
        tcf_reduce_t r;
        tcf_decode_status_t st = dec(x, x->params, x->grid, &r);
        why[st]++;
        char what[256];
        snprintf(what, sizeof what, "%s launch of %s: %s", x->trace, ks[x->k].name, tcf_decode_reason(st));
        /* the op decoder still calls every one of them a reduction */
        tcf_op_t op;
        tcf_decode_launch_t d = dl(x, x->params, x->len, x->grid);
        CHECK_EQ_INT(tcf_decode_launch(&d, &op), TCF_DECODE_REDUCTION);
        if (st == TCF_DECODE_REDUCE_GLOBAL) {
            /* the rule, on the H100 the traces were recorded on, splits the same way */
            uint32_t K, M, asz;
            tcf_decode_reduce_kernel_t rk;
            CHECK_EQ_INT(tcf_decode_reduce_kernel(&d, &rk), TCF_DECODE_OK);
            memcpy(&K, x->params + rk.cfg_off + 4, 4), memcpy(&M, x->params + rk.cfg_off + 8, 4);
            asz = tcf_dtype_size(rk.acc_dt);
            tcf_reduce_cfg_t c;
            CHECK_EQ_INT(tcf_reduce_config_rule(K, M, asz, rk.ivs, 132, 2048, &c), 0);
            CHECK_EQ_INT(c.ctas_per_output, x->grid[1]);
            CHECK_EQ_INT(c.grid[0], x->grid[0]);
            CHECK_EQ_INT(c.smem, x->smem);
            CHECK_EQ_INT(r.op, TCF_RED_NONE);    /* a refusal is all zeros */
            continue;
        }
        if (st != TCF_DECODE_OK) {
            check_report(st == TCF_DECODE_REDUCE_OUTER, __FILE__, __LINE__, what, NULL);
            CHECK(strstr(ks[x->k].name, "ILi128ELi4E") != NULL);   /* ovs 4: x.sum(0) */
            continue;
        }
        ok++;
        const tcf_reduce_cfg_t *c = &r.cfg;
        uint32_t K = c->num_inputs, M = c->num_outputs, esz = tcf_dtype_size(r.in_dt);
        tcf_reduce_cfg_t want;
        if (!check_report(tcf_reduce_config_rule(K, M, tcf_dtype_size(r.acc_dt), r.ivs, 132, 2048,
                                                 &want) == 0, __FILE__, __LINE__, what, "rule"))
            continue;
        CHECK_EQ_INT(want.grid[0], x->grid[0]);
        CHECK_EQ_INT(want.grid[1], 1);
        CHECK_EQ_INT(want.block_width, x->block[0]);
        CHECK_EQ_INT(want.block_height, x->block[1]);
        CHECK_EQ_INT(want.smem, x->smem);              /* the driver's dynamic shared memory */
        CHECK_EQ_INT(c->smem, x->smem);
        CHECK_EQ_INT(want.step_input, c->step_input);
        CHECK_EQ_INT(r.split_y, want.input_mult[1] != 0);
        CHECK_EQ_INT(c->vectorize_input, K >= 128);
        /* rows: the output calculator covers M outputs, K elements apart (contiguous) */
        uint64_t rows = 1;
        for (unsigned dd = 0; dd < r.odims; dd++)
            rows *= r.osize[dd];
        CHECK_EQ_U64(rows, M);
        CHECK(r.odims <= 1);
        if (r.odims == 1) {
            CHECK_EQ_INT(r.ostride[0][0], tcf_dtype_size(r.out_dt));
            CHECK_EQ_INT(r.ostride[0][1], K * esz);
        } else {
            CHECK_EQ_INT(M, 1);
        }
        /* dtypes: float accumulators, the 16-bit type itself for max/min */
        if (r.op == TCF_RED_AMAX || r.op == TCF_RED_AMIN) {
            CHECK_EQ_INT(r.acc_dt, r.in_dt);
            CHECK_EQ_INT(r.ivs, 4);
            minmax16 += r.in_dt != TCF_DT_F32;
        } else {
            CHECK_EQ_INT(r.acc_dt, TCF_DT_F32);
            CHECK_EQ_INT(r.ivs, r.in_dt == TCF_DT_F32 ? 4 : 8);
        }
        CHECK_EQ_INT(r.vt0, 4);
        if (r.op == TCF_RED_MEAN) {    /* fl(M) / fl(M*K): the doc's measured factor */
            CHECK_EQ_U64(r.factor, bits((float)M / (float)((double)M * K)));
            mean++;
        }
        CHECK_EQ_INT(r.shift, c->vectorize_input ? r.src % (r.ivs * esz) / esz : 0);
        CHECK(fixture_device_ptr(r.src) && fixture_device_ptr(r.dst));
        /* the kernel for it can be generated, and launched as PyTorch launched its own */
        tcf_reduce_shape_t s;
        uint32_t g[3], b[3];
        char src[1 << 15];
        tcf_reduce_shape_of(&r, &s);
        CHECK(tcf_reduce_source(&s, NULL, src, sizeof src) > 0);
        tcf_reduce_launch_dims(&s, M, g, b);
        CHECK_EQ_INT(g[0], x->grid[0]), CHECK_EQ_INT(b[0], x->block[0]), CHECK_EQ_INT(b[1], x->block[1]);
        vec += c->vectorize_input, split += r.split_y;
    }
    printf("test_decode_reduce: %zu of %zu reduce_kernel launches decoded (%zu vectorized, %zu with "
           "warps sharing a row, %zu half/bf16 max, %zu means);", ok, nls, vec, split, minmax16, mean);
    for (int s = 1; s < TCF_DECODE_NSTATUS; s++)
        if (why[s])
            printf(" %zu %s", why[s], tcf_decode_reason((tcf_decode_status_t)s));
    printf("\n");
    /* the fixtures: trace-ops 54 (33 decoded, 12 global, 9 outer), Llama forward 10 (and
     * 20 in the fuse-mode trace, 15 in the 2-layer one), Llama training 30 (20 decoded), the
     * training loop 20 (2 decoded), ResNet-50's average pool 2 (over an outer dim:
     * channels-last) */
    CHECK_EQ_INT(nls, 151);
    CHECK_EQ_INT(ok, 100);
    CHECK_EQ_INT(why[TCF_DECODE_REDUCE_GLOBAL], 12);
    CHECK_EQ_INT(why[TCF_DECODE_REDUCE_OUTER], 39);
    CHECK(vec > 0 && split > 0 && minmax16 > 0 && mean > 0);
}

/* docs/PYTORCH-REDUCE.md §2.4, from trace-ops.jsonl; and the Llama forward's RMSNorm mean. */
TEST(worked_examples)
{
    int seen[4] = { 0 };
    for (size_t i = 0; i < nls; i++) {
        tcf_reduce_t r;
        if (dec(&ls[i], ls[i].params, ls[i].grid, &r) != TCF_DECODE_OK)
            continue;
        const tcf_reduce_cfg_t *c = &r.cfg;
        if (r.op == TCF_RED_SUM && r.in_dt == TCF_DT_F32 && c->num_inputs == 1000 && !seen[0]++) {
            /* f32 A.sum(1), A [127, 1000]: 8 / (32,16) / 0 */
            CHECK_EQ_INT(c->num_outputs, 127);
            CHECK_EQ_INT(c->step_input, 32), CHECK_EQ_INT(c->step_output, 16);
            CHECK_EQ_INT(c->input_mult[0], 1), CHECK_EQ_INT(c->input_mult[1], 0);
            CHECK_EQ_INT(c->output_mult[1], 1);
            CHECK_EQ_INT(c->block_width, 32), CHECK_EQ_INT(c->block_height, 16);
            CHECK_EQ_INT(c->vectorize_input, 1), CHECK_EQ_INT(c->grid[0], 8);
            CHECK_EQ_INT(r.odims, 1), CHECK_EQ_INT(r.osize[0], 127);
            CHECK_EQ_INT(r.ostride[0][0], 4), CHECK_EQ_INT(r.ostride[0][1], 4000);
            CHECK_EQ_INT(r.ident, 0), CHECK_EQ_INT(r.split_y, 0);
        }
        if (r.op == TCF_RED_AMAX && r.in_dt == TCF_DT_F16 && c->num_inputs == 127 && !seen[1]++) {
            /* half x.amax(), n = 127: 1 / 64 / 128, arg_t half, ident -inf */
            CHECK_EQ_INT(c->element_size, 2), CHECK_EQ_INT(r.ident, 0xfc00);
            CHECK_EQ_INT(c->block_width, 64), CHECK_EQ_INT(c->block_height, 1);
            CHECK_EQ_INT(c->smem, 128), CHECK_EQ_INT(c->vectorize_input, 0);
            CHECK_EQ_INT(r.odims, 0), CHECK_EQ_INT(r.acc_dt, TCF_DT_F16);
        }
        if (r.op == TCF_RED_MEAN && r.in_dt == TCF_DT_F32 && c->num_inputs == 127 && !seen[2]++)
            CHECK_EQ_U64(r.factor, 0x3c010204u);      /* fl(1)/fl(127), the doc's bytes */
        if (r.op == TCF_RED_MEAN && c->num_inputs == 2048 && c->num_outputs == 8192 && !seen[3]++) {
            /* LlamaRMSNorm's h.pow(2).mean(-1): grid 512, (32, 16), a row per warp-row */
            CHECK_EQ_INT(c->grid[0], 512), CHECK_EQ_INT(c->smem, 0);
            CHECK_EQ_INT(r.split_y, 0), CHECK_EQ_INT(r.shift, 0);
            CHECK(f32(r.factor) == 1.0f / 2048.0f);
        }
    }
    CHECK(seen[0] && seen[1] && seen[2] && seen[3]);
}

/* §3's table (H100: 132 SMs, 2048 threads each). */
TEST(config_rule_matches_the_doc)
{
    static const struct {
        uint32_t K, M, ivs, vec, bw, bh, grid, step, im1, ctas, smem;
    } t[] = {
        { 64, 1, 4, 0, 64, 1, 1, 64, 0, 1, 256 },       { 64, 8, 4, 0, 64, 8, 1, 64, 0, 1, 2048 },
        { 64, 4096, 4, 0, 32, 16, 256, 32, 0, 1, 0 },   { 127, 4096, 8, 0, 32, 16, 256, 32, 0, 1, 0 },
        { 128, 1, 4, 1, 32, 1, 1, 32, 0, 1, 0 },        { 128, 4096, 4, 1, 32, 16, 256, 32, 0, 1, 0 },
        { 128, 4096, 8, 1, 16, 32, 128, 16, 0, 1, 0 },  { 1024, 1, 4, 1, 256, 1, 1, 256, 0, 1, 1024 },
        { 1024, 1, 8, 1, 128, 1, 1, 128, 0, 1, 512 },   { 4096, 8, 8, 1, 64, 8, 1, 64, 0, 1, 2048 },
        { 2048, 1, 4, 1, 512, 1, 1, 512, 0, 1, 2048 },  { 4096, 4096, 4, 1, 32, 16, 256, 32, 0, 1, 0 },
        { 8192, 1, 4, 1, 512, 1, 1, 512, 512, 1, 2048 }, { 130560, 8, 8, 1, 64, 8, 8, 512, 64, 1, 2048 },
        { 8192, 4096, 4, 1, 32, 16, 4096, 512, 32, 1, 2048 },
        { 1000003, 1, 4, 1, 512, 1, 1, 62976, 512, 123, 2048 },
        { 131072, 264, 4, 1, 32, 16, 264, 1024, 32, 2, 2048 },   /* M = 264: 2 CTAs */
        { 131072, 528, 4, 1, 32, 16, 528, 512, 32, 1, 2048 },    /* M = 528: 1 */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        tcf_reduce_cfg_t c;
        char what[64];
        snprintf(what, sizeof what, "K=%u M=%u ivs=%u", t[i].K, t[i].M, t[i].ivs);
        check_test = what;
        CHECK_EQ_INT(tcf_reduce_config_rule(t[i].K, t[i].M, 4, t[i].ivs, 132, 2048, &c), 0);
        CHECK_EQ_INT(c.vectorize_input, t[i].vec);
        CHECK_EQ_INT(c.block_width, t[i].bw), CHECK_EQ_INT(c.block_height, t[i].bh);
        CHECK_EQ_INT(c.grid[0], t[i].grid), CHECK_EQ_INT(c.step_input, t[i].step);
        CHECK_EQ_INT(c.input_mult[1], t[i].im1), CHECK_EQ_INT(c.ctas_per_output, t[i].ctas);
        CHECK_EQ_INT(c.grid[1], t[i].ctas), CHECK_EQ_INT(c.smem, t[i].smem);
    }
    /* the warp split starts where the doc says: K = 8161 for M >= 16 */
    tcf_reduce_cfg_t a, b;
    tcf_reduce_config_rule(8160, 64, 4, 4, 132, 2048, &a), tcf_reduce_config_rule(8161, 64, 4, 4, 132, 2048, &b);
    CHECK_EQ_INT(a.input_mult[1], 0), CHECK(b.input_mult[1] != 0);
    /* no SM count: never a global reduce */
    tcf_reduce_config_rule(1000003, 1, 4, 4, 0, 0, &a);
    CHECK_EQ_INT(a.ctas_per_output, 1), CHECK_EQ_INT(a.input_mult[2], 0);
    CHECK_EQ_INT(tcf_reduce_config_rule(0, 1, 4, 4, 132, 2048, &a), -1);
    CHECK_EQ_INT(tcf_reduce_config_rule(5, 1, 4, 3, 132, 2048, &a), -1);
    CHECK_EQ_INT(tcf_reduce_config_rule(5, 1, 4, 4, 132, 2048, NULL), -1);
}

/* One field changed where it matters is refused by its reason, never decoded. */
TEST(corrupted_bytes_are_refused)
{
    size_t tried = 0;
    for (size_t i = 0; i < nls && tried < 30; i++) {
        tcf_reduce_t r;
        const launch_t *x = &ls[i];
        if (dec(x, x->params, x->grid, &r) != TCF_DECODE_OK)
            continue;
        tried++;
        tcf_decode_launch_t d = dl(x, x->params, x->len, x->grid);
        tcf_decode_reduce_kernel_t rk;
        CHECK_EQ_INT(tcf_decode_reduce_kernel(&d, &rk), TCF_DECODE_OK);
        uint32_t cf = rk.cfg_off, ic = rk.icalc_off, oc = rk.ocalc_off, tl = rk.src_off;
        struct { uint32_t at, v, n; tcf_decode_status_t st; } e[] = {
            { cf + 20, 2, 4, TCF_DECODE_REDUCE_GLOBAL },     /* ctas_per_output */
            { cf + 32, 512, 4, TCF_DECODE_REDUCE_GLOBAL },   /* input_mult[2] */
            { tl + 32, 0x1000, 4, TCF_DECODE_REDUCE_GLOBAL },/* cta_buf */
            { tl + 56, 1, 1, TCF_DECODE_REDUCE_SPLIT },      /* accumulate */
            { tl + 57, 0, 1, TCF_DECODE_REDUCE_SPLIT },      /* final_output */
            { tl + 24, 0x1000, 4, TCF_DECODE_REDUCE_SPLIT }, /* acc_buf */
            { ic, 2, 4, TCF_DECODE_REDUCE_STRIDED },         /* input_calc.dims */
            { ic + 304, 8, 4, TCF_DECODE_REDUCE_STRIDED },   /* a stride of two elements */
            { cf + 36, 1, 4, TCF_DECODE_REDUCE_OUTER },      /* output_mult[0]: lanes = outputs */
            { cf + 48, 3, 4, TCF_DECODE_REDUCE_CONFIG },     /* block_height */
            { cf + 12, 7, 4, TCF_DECODE_REDUCE_CONFIG },     /* step_input */
            { cf + 56, 0, 1, TCF_DECODE_REDUCE_CONFIG },     /* vectorize_input flipped */
            { cf, 8, 4, TCF_DECODE_BAD_VALUE },              /* element_size */
            { tl + 60, 2, 4, TCF_DECODE_BAD_VALUE },         /* noutputs */
            { rk.ident_off, 0x3f80, 2, TCF_DECODE_BAD_VALUE },/* ident */
            { oc, 26, 4, TCF_DECODE_BAD_VALUE },             /* output_calc.dims */
            { oc, 9, 4, TCF_DECODE_TOO_MANY_DIMS },
            { cf + 60, 2, 4, TCF_DECODE_BAD_VALUE },         /* output_vec_size */
            { tl + 8, 0, 4, TCF_DECODE_BAD_VALUE },          /* dst (low half) */
        };
        uint8_t *p = malloc(x->len);
        for (size_t j = 0; j < sizeof e / sizeof e[0]; j++) {
            memcpy(p, x->params, x->len);
            if (e[j].at == cf + 56)
                e[j].v = !x->params[cf + 56];
            if (e[j].at == tl + 8)   /* zero the whole pointer */
                memset(p + tl + 8, 0, 8);
            else
                memcpy(p + e[j].at, &e[j].v, e[j].n);
            if (e[j].at == oc && e[j].v == 9 && r.odims == 0)
                continue;            /* dims 9 of a full reduction fails on the sizes first */
            tcf_decode_status_t st = dec(x, p, x->grid, &r);
            char what[160];
            snprintf(what, sizeof what, "byte %u := %u: %s", e[j].at, e[j].v, tcf_decode_reason(st));
            if (!check_report(st == e[j].st, __FILE__, __LINE__, ks[x->k].name, what))
                break;
            CHECK_EQ_INT(r.op, TCF_RED_NONE);
        }
        /* the launch's shape: another grid, a truncated buffer */
        uint32_t g[3] = { x->grid[0] + 1, x->grid[1], x->grid[2] };
        CHECK_EQ_INT(dec(x, x->params, g, &r), TCF_DECODE_REDUCE_CONFIG);
        d = dl(x, x->params, rk.span - 1, x->grid);
        CHECK_EQ_INT(tcf_decode_reduce(&d, &r), TCF_DECODE_TRUNCATED);
        CHECK_EQ_INT(dec(x, x->params, x->grid, &r), TCF_DECODE_OK);   /* untouched */
        free(p);
    }
    CHECK(tried >= 30);
}

static tcf_decode_status_t by_name(const char *name, uint32_t size, tcf_decode_reduce_kernel_t *rk)
{
    uint32_t off = 0;
    tcf_decode_launch_t l = { name, 1, &off, &size, NULL, 0, { 1, 1, 1 }, { 1, 1, 1 } };
    return tcf_decode_reduce_kernel(&l, rk);
}

TEST(names)
{
    tcf_decode_reduce_kernel_t rk;
    struct { const char *tail; uint32_t size; tcf_decode_status_t st; } t[] = {
        { "ILi512ELi1ENS0_8ReduceOpIfNS0_10WelfordOpsIffiN4cuda3std3__44pairIffEEEEjfLi2ELi2EEEEEvT1_",
          1064, TCF_DECODE_REDUCE_WELFORD },
        { "ILi512ELi1ENS0_8ReduceOpIfNS0_6MaxOpsIfEEjfLi4ELi4EEEEEvT1_", 1064, TCF_DECODE_REDUCE_INDEX },
        { "ILi512ELi1ENS0_8ReduceOpIfNS0_9ArgMaxOpsIfEEjlLi4ELi4EEEEEvT1_", 1064, TCF_DECODE_REDUCE_INDEX },
        { "ILi128ELi4ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_", 1048, TCF_DECODE_REDUCE_OUTER },
        { "ILi512ELi1ENS0_8ReduceOpIdNS0_14func_wrapper_tIdZNS0_11sum_functorIdddEclERNS_14TensorIterator"
          "EEUlddE_EEjdLi4ELi4EEEEEvT1_", 1056, TCF_DECODE_UNSUPPORTED_DTYPE },
        { "ILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_12prod_functorIfffEclERNS_14TensorIterator"
          "EEUlffE_EEjfLi4ELi4EEEEEvT1_", 1048, TCF_DECODE_UNKNOWN_FUNCTOR },
        { "ILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjf", 1048, TCF_DECODE_BAD_NAME },
        { "ILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_x", 1048, TCF_DECODE_BAD_NAME },
        { "ILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi3ELi4EEEEEvT1_", 1048, TCF_DECODE_BAD_NAME },
        { "ILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_", 1040, TCF_DECODE_BAD_LAYOUT },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char name[512];
        snprintf(name, sizeof name, "_ZN2at6native13reduce_kernel%s", t[i].tail);
        tcf_decode_status_t st = by_name(name, t[i].size, &rk);
        check_report(st == t[i].st, __FILE__, __LINE__, name, tcf_decode_reason(st));
        CHECK_EQ_INT(rk.op, TCF_RED_NONE);
    }
    /* what decodes: vector_norm without the root, bf16 amin, sums and means to float */
    CHECK_EQ_INT(by_name(PREFIX "Li512ELi1ENS0_8ReduceOpIfNS0_10NormTwoOpsIfffLb0EEEjfLi4ELi4EEEEEvT1_",
                         1048, &rk), TCF_DECODE_OK);
    CHECK_EQ_INT(rk.op, TCF_RED_NORM2), CHECK_EQ_INT(rk.root, 0);
    CHECK_EQ_INT(by_name(PREFIX "Li512ELi1ENS0_8ReduceOpIN3c108BFloat16ENS0_14func_wrapper_tIS4_NS0_13Min"
                         "NanFunctorIS4_EEEEjS4_Li4ELi4EEEEEvT1_", 1040, &rk), TCF_DECODE_OK);
    CHECK_EQ_INT(rk.op, TCF_RED_AMIN), CHECK_EQ_INT(rk.acc_dt, TCF_DT_BF16);
    CHECK_EQ_INT(rk.cfg_off, 4), CHECK_EQ_INT(rk.src_off, 976);
    CHECK_EQ_INT(by_name(PREFIX "Li512ELi1ENS0_8ReduceOpIN3c104HalfENS0_14func_wrapper_tIfZNS0_11sum_func"
                         "torIS4_ffEclERNS_14TensorIteratorEEUlffE_EEjfLi4ELi8EEEEEvT1_", 1048, &rk),
                 TCF_DECODE_OK);
    CHECK_EQ_INT(rk.op, TCF_RED_SUM), CHECK_EQ_INT(rk.in_dt, TCF_DT_F16);
    CHECK_EQ_INT(rk.out_dt, TCF_DT_F32), CHECK_EQ_INT(rk.ivs, 8);
    CHECK_EQ_INT(by_name(PREFIX "Li512ELi1ENS0_8ReduceOpIN3c108BFloat16ENS0_7MeanOpsIS4_fffEEjfLi4ELi8EEEE"
                         "EvT1_", 1048, &rk), TCF_DECODE_OK);
    CHECK_EQ_INT(rk.op, TCF_RED_MEAN), CHECK_EQ_INT(rk.out_dt, TCF_DT_F32), CHECK_EQ_INT(rk.ops_size, 4);
    /* not PyTorch's reduce_kernel */
    CHECK_EQ_INT(by_name("_Z25cublasSplitKreduce_kernelILi32ELi16EifEvv", 64, &rk), TCF_DECODE_NOT_ELEMENTWISE);
    CHECK_EQ_INT(by_name("", 0, &rk), TCF_DECODE_NOT_ELEMENTWISE);
    /* and no arguments */
    CHECK_EQ_INT(tcf_decode_reduce_kernel(NULL, &rk), TCF_DECODE_BAD_ARGS);
    CHECK_EQ_INT(tcf_decode_reduce_kernel(NULL, NULL), TCF_DECODE_BAD_ARGS);
    tcf_reduce_t r;
    uint32_t g[3] = { 1, 1, 1 };
    CHECK_EQ_INT(tcf_decode_reduce(NULL, &r), TCF_DECODE_BAD_ARGS);
    CHECK_EQ_INT(tcf_decode_reduce_apply(NULL, NULL, 0, g, g, &r), TCF_DECODE_BAD_ARGS);
    CHECK_EQ_INT(tcf_decode_reduce_apply(&rk, NULL, 0, g, g, NULL), TCF_DECODE_BAD_ARGS);
}

TEST(describe_and_args)
{
    for (size_t i = 0; i < nls; i++) {
        tcf_reduce_t r;
        if (dec(&ls[i], ls[i].params, ls[i].grid, &r) != TCF_DECODE_OK || r.op != TCF_RED_MEAN ||
            r.cfg.num_inputs != 2048)
            continue;
        char line[512], tiny[8];
        tcf_decode_reduce_describe(&r, line, sizeof line);
        CHECK(!strncmp(line, "MEAN f32->f32 acc f32 K=2048 M=8192 block 32x16 grid 512 vec4 shift 0 "
                             "row-per-warp-row factor 0.00048828125 src 0x", 92));
        memset(tiny, 'x', sizeof tiny);
        tcf_decode_reduce_describe(&r, tiny, sizeof tiny);
        CHECK_EQ_STR(tiny, "MEAN f3");
        tcf_reduce_args_t a;
        tcf_reduce_args_of(&r, &a);
        CHECK_EQ_U64(a.src, r.src), CHECK_EQ_U64(a.dst, r.dst);
        CHECK_EQ_INT(a.num_inputs, 2048), CHECK_EQ_INT(a.num_outputs, 8192);
        CHECK_EQ_INT(a.factor, r.factor), CHECK_EQ_INT(a.osize[0], 8192);
        CHECK_EQ_INT(a.ostride[0][1], 8192), CHECK_EQ_INT(a.osize[1], 0);
        CHECK_EQ_INT((int)((const char *)&a.dst - (const char *)&a), 8);   /* tools rebind it */
        return;
    }
    CHECK(!"the Llama mean was not found");
}

/* A ReduceOp's padding and its input and output calculators' entries past their dims are
 * never read: each byte marked is one of them, and cleared in a copy (what verification
 * does) they change no decoding. */
TEST(offset_calcs_cleared)
{
    size_t n = 0, dirty = 0;
    for (size_t i = 0; i < nls; i++) {
        const launch_t *x = &ls[i];
        tcf_reduce_t r, r2;
        tcf_decode_reduce_kernel_t rk;
        tcf_decode_launch_t d = dl(x, x->params, x->len, x->grid);
        if (dec(x, x->params, x->grid, &r) != TCF_DECODE_OK ||
            tcf_decode_reduce_kernel(&d, &rk) != TCF_DECODE_OK || rk.span != x->len)
            continue;
        uint8_t *p = malloc(x->len), *mark = calloc(x->len, 1);
        memcpy(p, x->params, x->len);
        /* (output dims 0: a reduction to one value per launch's output index set) */
        CHECK_EQ_INT(tcf_decode_reduce_unread(&rk, p, x->len, mark), 0);
        CHECK_EQ_INT(tcf_decode_reduce_unread(&rk, p, x->len - 1, mark), -1);
        for (uint32_t b = 0; b < x->len; b++) {
            if (!mark[b])
                continue;
            p[b] = 0;
            int pad = (rk.ops_size == 1 && b < rk.ident_off) ||
                      (b >= rk.cfg_off + 57 && b < rk.cfg_off + 60) || b + 6 == x->len ||
                      b + 5 == x->len;
            int calc = (b >= rk.icalc_off && b < rk.icalc_off + 404) ||
                       (b >= rk.ocalc_off && b < rk.ocalc_off + 504);
            if (!CHECK(pad || calc))
                break;
        }
        if (CHECK_EQ_INT(dec(x, p, x->grid, &r2), TCF_DECODE_OK))
            CHECK(!memcmp(&r, &r2, sizeof r));
        dirty += memcmp(p, x->params, x->len) != 0;
        /* the data pointers after the calculators are kept, up to final_output's padding */
        CHECK(!memcmp(p + rk.src_off, x->params + rk.src_off, x->len - 6 - rk.src_off));
        n++;
        free(p), free(mark);
    }
    CHECK(n >= 10);
    printf("  reduce offset calculators cleared: %zu launches, %zu with garbage past dims\n", n, dirty);
}

int main(void)
{
    load_fixture_launches(want);
    RUN(every_recorded_reduce_kernel_launch);
    RUN(worked_examples);
    RUN(config_rule_matches_the_doc);
    RUN(corrupted_bytes_are_refused);
    RUN(offset_calcs_cleared);
    RUN(names);
    RUN(describe_and_args);
    free_launches();
    return check_main_end();
}
