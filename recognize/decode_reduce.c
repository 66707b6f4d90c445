/* Decoding of PyTorch 2.11 reduce_kernel launches (contract: decode_reduce.h; the facts:
 * docs/PYTORCH-REDUCE.md, section numbers below are its). Three steps: parse the name
 * (op, dtypes, template arguments), check the layout the arg_t implies, then read one
 * launch's ReduceOp bytes and accept them only when the order they fix is the one
 * codegen/gen_reduce.c reproduces. */
#include <stdio.h>
#include <string.h>

#include "recognize/decode_reduce.h"

#define TCF_RED_PREFIX "_ZN2at6native13reduce_kernelILi"
#define TCF_RED_TAIL   "EEEEEvT1_"   /* closes Li<ivs>, ReduceOp<>, its name, the kernel's
                                      * template arguments, at::native; then (T1_) */

/* ---- the name (§1) ------------------------------------------------------------------ */

typedef struct {
    const char *p, *end;
    int half, bf16;       /* the name spells c10::Half / c10::BFloat16 */
} tcf_rname_t;

static int tcf_rn_eat(tcf_rname_t *n, const char *s)
{
    size_t l = strlen(s);
    if ((size_t)(n->end - n->p) < l || memcmp(n->p, s, l))
        return 0;
    n->p += l;
    return 1;
}

/* Decimal digits (1 to 4); -1 when none. */
static int tcf_rn_num(tcf_rname_t *n)
{
    int v = 0, k = 0;
    while (n->p < n->end && *n->p >= '0' && *n->p <= '9' && k < 5)
        v = v * 10 + (*n->p++ - '0'), k++;
    return k && k <= 4 ? v : -1;
}

/* One type: 1 and *d when it is ours (float, c10::Half, c10::BFloat16, or a substitution
 * "S<id>_" repeating the 16-bit type the name spells: builtins are never substituted); 0
 * for another type we know we do not take (double, integers, bool, complex); -1 when the
 * text is no type we can read. */
static int tcf_rn_type(tcf_rname_t *n, tcf_dtype_t *d)
{
    const char *q = n->p;
    if (q >= n->end)
        return -1;
    if (*q == 'f')
        return n->p++, *d = TCF_DT_F32, 1;
    if (strchr("abcdeghijlmnostxy", *q))   /* builtins: bool, char, double, ints, ... */
        return 0;
    if (tcf_rn_eat(n, "N3c104HalfE"))
        return *d = TCF_DT_F16, 1;
    if (tcf_rn_eat(n, "N3c108BFloat16E"))
        return *d = TCF_DT_BF16, 1;
    if (n->end - q > 5 && !memcmp(q, "N3c10", 5))
        return 0;                           /* complex, the float8 types, ... */
    if (*q == 'S') {
        for (q++; q < n->end && ((*q >= '0' && *q <= '9') || (*q >= 'A' && *q <= 'Z')); q++)
            ;
        if (q >= n->end || *q != '_' || n->half == n->bf16)
            return -1;
        n->p = q + 1;
        *d = n->half ? TCF_DT_F16 : TCF_DT_BF16;
        return 1;
    }
    return -1;
}

/* ops_t after ReduceOp<scalar_t, (§1's table): the op, arg_t, and out_scalar_t as the ops
 * say it; root for NormTwoOps. 1, 0 (a type we do not take), -1 (not an op we know). */
static int tcf_rn_ops(tcf_rname_t *n, tcf_decode_reduce_kernel_t *rk, tcf_dtype_t *ops_out)
{
    tcf_dtype_t a = TCF_DT_NONE, b = TCF_DT_NONE, c = TCF_DT_NONE, w = TCF_DT_NONE;
    int t;
    if (tcf_rn_eat(n, "NS0_14func_wrapper_tI")) {
        if ((t = tcf_rn_type(n, &w)) != 1)
            return t;
        if (tcf_rn_eat(n, "ZNS0_11sum_functorI")) {   /* sum_functor<in, acc, out>: a lambda */
            if ((t = tcf_rn_type(n, &a)) != 1 || (t = tcf_rn_type(n, &b)) != 1 ||
                (t = tcf_rn_type(n, &c)) != 1)
                return t;
            if (!tcf_rn_eat(n, "EclERNS_14TensorIteratorEEUl"))
                return -1;
            tcf_dtype_t l0, l1;                       /* the lambda's (acc_t, acc_t) */
            if ((t = tcf_rn_type(n, &l0)) != 1 || (t = tcf_rn_type(n, &l1)) != 1)
                return t;
            if (l0 != b || l1 != b || !tcf_rn_eat(n, "E_EE"))
                return -1;
            rk->op = TCF_RED_SUM, rk->acc_dt = b;
        } else {
            int mx = tcf_rn_eat(n, "NS0_13MaxNanFunctorI");
            if (!mx && !tcf_rn_eat(n, "NS0_13MinNanFunctorI"))
                return -1;
            if ((t = tcf_rn_type(n, &a)) != 1)
                return t;
            if (!tcf_rn_eat(n, "EEEE"))
                return -1;
            rk->op = mx ? TCF_RED_AMAX : TCF_RED_AMIN, rk->acc_dt = c = a;
        }
        if (w != c)
            return -1;                                /* func_wrapper<out_t> */
    } else if (tcf_rn_eat(n, "NS0_7MeanOpsI")) {      /* MeanOps<in, acc, factor, out> */
        tcf_dtype_t f;
        if ((t = tcf_rn_type(n, &a)) != 1 || (t = tcf_rn_type(n, &b)) != 1 ||
            (t = tcf_rn_type(n, &f)) != 1 || (t = tcf_rn_type(n, &c)) != 1)
            return t;
        if (f != TCF_DT_F32 || !tcf_rn_eat(n, "EE"))
            return -1;
        rk->op = TCF_RED_MEAN, rk->acc_dt = b, rk->ops_size = 4;   /* float factor */
    } else if (tcf_rn_eat(n, "NS0_10NormTwoOpsI")) {  /* NormTwoOps<acc, factor, out, root> */
        tcf_dtype_t f;
        if ((t = tcf_rn_type(n, &b)) != 1 || (t = tcf_rn_type(n, &f)) != 1 ||
            (t = tcf_rn_type(n, &c)) != 1)
            return t;
        if (tcf_rn_eat(n, "Lb1E"))
            rk->root = 1;
        else if (!tcf_rn_eat(n, "Lb0E"))
            return -1;
        if (!tcf_rn_eat(n, "EE"))
            return -1;
        rk->op = TCF_RED_NORM2, rk->acc_dt = b;
    } else {
        return -1;
    }
    *ops_out = c;
    return 1;
}

static int tcf_rd_pow2(unsigned v, unsigned max) { return v && v <= max && !(v & (v - 1)); }

/* ---- the row softmaxes (PersistentSoftmax.cuh) -------------------------------------- */

/* softmax_warp_forward<input_t, output_t, acc_t, log2_elements, is_log_softmax, is_masked>
 * (output_t *dst, const input_t *src, int batch_size, int stride, int element_count,
 *  const bool *mask, int head_chunk_size, bool is_transformer_mask), and
 * softmax_warp_backward<...>(output_t *gradInput, const input_t *grad, const input_t
 * *output, int batch_size, int stride, int element_count, const bool *mask): in an
 * anonymous namespace of SoftMax.cu, whose hash is the build's. */
static const uint32_t tcf_sm_fwd_off[8] = { 0, 8, 16, 20, 24, 32, 40, 44 },
                      tcf_sm_fwd_size[8] = { 8, 8, 4, 4, 4, 8, 4, 1 },
                      tcf_sm_bwd_off[7] = { 0, 8, 16, 24, 28, 32, 40 },
                      tcf_sm_bwd_size[7] = { 8, 8, 8, 4, 4, 4, 8 };

static tcf_decode_status_t tcf_decode_softmax_kernel(const tcf_decode_launch_t *l, const char *at,
                                                     int bwd, tcf_decode_reduce_kernel_t *rk)
{
    tcf_rname_t n = { at, l->name + strlen(l->name), strstr(l->name, "4HalfE") != NULL,
                      strstr(l->name, "8BFloat16E") != NULL };
    tcf_dtype_t acc = TCF_DT_NONE;
    int t, l2e, lg, masked;
    if ((t = tcf_rn_type(&n, &rk->in_dt)) != 1 || (t = tcf_rn_type(&n, &rk->out_dt)) != 1 ||
        (t = tcf_rn_type(&n, &acc)) != 1) {
        memset(rk, 0, sizeof *rk);
        return t == 0 ? TCF_DECODE_UNSUPPORTED_DTYPE : TCF_DECODE_BAD_NAME;
    }
    if (!tcf_rn_eat(&n, "Li") || (l2e = tcf_rn_num(&n)) < 0 || l2e > 11 || !tcf_rn_eat(&n, "ELb") ||
        (lg = tcf_rn_num(&n)) < 0 || lg > 1 || !tcf_rn_eat(&n, "ELb") ||
        (masked = tcf_rn_num(&n)) < 0 || masked > 1 ||
        !tcf_rn_eat(&n, bwd ? "EEEvPT0_PKT_S5_iiiPKb" : "EEEvPT0_PKT_iiiPKbib") || n.p != n.end ||
        acc != TCF_DT_F32) {
        memset(rk, 0, sizeof *rk);
        return TCF_DECODE_BAD_NAME;
    }
    if (masked) {
        memset(rk, 0, sizeof *rk);
        return TCF_DECODE_SOFTMAX_MASKED;
    }
    rk->op = bwd ? (lg ? TCF_RED_LOGSOFTMAX_BWD : TCF_RED_SOFTMAX_BWD)
                 : (lg ? TCF_RED_LOGSOFTMAX : TCF_RED_SOFTMAX);
    rk->acc_dt = TCF_DT_F32, rk->l2e = (uint8_t)l2e;
    const uint32_t *off = bwd ? tcf_sm_bwd_off : tcf_sm_fwd_off, *sz = bwd ? tcf_sm_bwd_size : tcf_sm_fwd_size;
    uint32_t np = bwd ? 7 : 8;
    rk->span = off[np - 1] + sz[np - 1];
    if (l->nparams != np) {
        memset(rk, 0, sizeof *rk);
        return TCF_DECODE_BAD_LAYOUT;
    }
    for (uint32_t i = 0; i < np; i++)
        if (l->off[i] != off[i] || l->size[i] != sz[i]) {
            memset(rk, 0, sizeof *rk);
            return TCF_DECODE_BAD_LAYOUT;
        }
    return TCF_DECODE_OK;
}

/* ---- LayerNorm and RMSNorm (layer_norm_kernel.cu) ------------------------------------ */

/* vectorized_layer_norm_kernel<T, T_ACC = float, rms_norm>(int N, T_ACC eps, const T *X,
 * const T *gamma, const T *beta, T_ACC *mean, T_ACC *rstd, T *Y), in an anonymous
 * namespace of layer_norm_kernel.cu (docs/PYTORCH-LAYERNORM.md §1). The name's tail
 * repeats T and T_ACC by substitution, numbered after T's own. */
static const uint32_t tcf_ln_off[8] = { 0, 4, 8, 16, 24, 32, 40, 48 },
                      tcf_ln_size[8] = { 4, 4, 8, 8, 8, 8, 8, 8 };

static tcf_decode_status_t tcf_decode_norm_kernel(const tcf_decode_launch_t *l, const char *at,
                                                  tcf_decode_reduce_kernel_t *rk)
{
    tcf_rname_t n = { at, l->name + strlen(l->name), strstr(l->name, "4HalfE") != NULL,
                      strstr(l->name, "8BFloat16E") != NULL };
    tcf_dtype_t acc = TCF_DT_NONE;
    int t, rms;
    if ((t = tcf_rn_type(&n, &rk->in_dt)) != 1 || (t = tcf_rn_type(&n, &acc)) != 1) {
        memset(rk, 0, sizeof *rk);
        return t == 0 ? TCF_DECODE_UNSUPPORTED_DTYPE : TCF_DECODE_BAD_NAME;
    }
    const char *tail = rk->in_dt == TCF_DT_F32 ? "EEEviT0_PKT_S6_S6_PS3_S7_PS4_"
                                              : "EEEviT0_PKT_S8_S8_PS5_S9_PS6_";
    if (acc != TCF_DT_F32 || !tcf_rn_eat(&n, "Lb") || (rms = tcf_rn_num(&n)) < 0 || rms > 1 ||
        !tcf_rn_eat(&n, tail) || n.p != n.end) {
        memset(rk, 0, sizeof *rk);
        return TCF_DECODE_BAD_NAME;
    }
    rk->op = rms ? TCF_RED_RMSNORM : TCF_RED_LAYERNORM;
    rk->out_dt = rk->in_dt, rk->acc_dt = TCF_DT_F32;
    rk->span = 56;
    if (l->nparams != 8) {
        memset(rk, 0, sizeof *rk);
        return TCF_DECODE_BAD_LAYOUT;
    }
    for (uint32_t i = 0; i < 8; i++)
        if (l->off[i] != tcf_ln_off[i] || l->size[i] != tcf_ln_size[i]) {
            memset(rk, 0, sizeof *rk);
            return TCF_DECODE_BAD_LAYOUT;
        }
    return TCF_DECODE_OK;
}


tcf_decode_status_t tcf_decode_reduce_kernel(const tcf_decode_launch_t *l,
                                             tcf_decode_reduce_kernel_t *rk)
{
    if (!rk)
        return TCF_DECODE_BAD_ARGS;
    memset(rk, 0, sizeof *rk);
    if (!l || !l->name || (l->nparams && (!l->off || !l->size)))
        return TCF_DECODE_BAD_ARGS;
    tcf_rname_t n = { l->name, l->name + strlen(l->name), strstr(l->name, "4HalfE") != NULL,
                      strstr(l->name, "8BFloat16E") != NULL };
    if (strstr(l->name, "_SoftMax_cu_")) {
        const char *f = strstr(l->name, "20softmax_warp_forwardI"), *b = strstr(l->name, "21softmax_warp_backwardI");
        if (f)
            return tcf_decode_softmax_kernel(l, f + strlen("20softmax_warp_forwardI"), 0, rk);
        if (b)
            return tcf_decode_softmax_kernel(l, b + strlen("21softmax_warp_backwardI"), 1, rk);
    }
    if (strstr(l->name, "_layer_norm_kernel_cu_")) {
        const char *v = strstr(l->name, "28vectorized_layer_norm_kernelI");
        if (v)
            return tcf_decode_norm_kernel(l, v + strlen("28vectorized_layer_norm_kernelI"), rk);
    }
    if (!tcf_rn_eat(&n, TCF_RED_PREFIX))
        return TCF_DECODE_NOT_ELEMENTWISE;
    /* the ops the order cannot be reproduced for, named first: they are what coverage
     * tables want to count, whatever their dtypes */
    if (strstr(n.p, "10WelfordOpsI"))
        return TCF_DECODE_REDUCE_WELFORD;
    if (strstr(n.p, "NS0_6MaxOpsI") || strstr(n.p, "NS0_6MinOpsI") ||
        strstr(n.p, "NS0_9ArgMaxOpsI") || strstr(n.p, "NS0_9ArgMinOpsI"))
        return TCF_DECODE_REDUCE_INDEX;
    int nt = tcf_rn_num(&n), ovs;
    if (nt < 0 || !tcf_rn_eat(&n, "ELi") || (ovs = tcf_rn_num(&n)) < 0 || !tcf_rn_eat(&n, "E") ||
        !tcf_rn_eat(&n, "NS0_8ReduceOpI"))
        return TCF_DECODE_BAD_NAME;
    if (ovs != 1)
        return TCF_DECODE_REDUCE_OUTER;       /* vectorized along the output: x.sum(0) */
    if (nt != 512)
        return TCF_DECODE_BAD_NAME;           /* 512 / ovs (complex<double>: 256) */
    tcf_dtype_t ops_out = TCF_DT_NONE;
    int t = tcf_rn_type(&n, &rk->in_dt);
    if (t == 0)
        return TCF_DECODE_UNSUPPORTED_DTYPE;
    if (t < 0)
        return TCF_DECODE_BAD_NAME;
    rk->ops_size = 1;                         /* an empty functor: one byte (§2.1) */
    if ((t = tcf_rn_ops(&n, rk, &ops_out)) != 1) {
        tcf_decode_status_t st = t == 0 ? TCF_DECODE_UNSUPPORTED_DTYPE : TCF_DECODE_UNKNOWN_FUNCTOR;
        memset(rk, 0, sizeof *rk);
        return st;
    }
    int vt0, ivs;
    if (!tcf_rn_eat(&n, "j") || (t = tcf_rn_type(&n, &rk->out_dt)) != 1 || rk->out_dt != ops_out ||
        !tcf_rn_eat(&n, "Li") || (vt0 = tcf_rn_num(&n)) < 0 || !tcf_rn_eat(&n, "ELi") ||
        (ivs = tcf_rn_num(&n)) < 0 || !tcf_rn_eat(&n, TCF_RED_TAIL) || n.p != n.end) {
        memset(rk, 0, sizeof *rk);
        return t == 0 ? TCF_DECODE_UNSUPPORTED_DTYPE : TCF_DECODE_BAD_NAME;
    }
    /* the accumulator: float, or for max/min the input type itself */
    unsigned asz = tcf_dtype_size(rk->acc_dt), esz = tcf_dtype_size(rk->in_dt);
    int acc_ok = rk->op == TCF_RED_AMAX || rk->op == TCF_RED_AMIN
                     ? rk->acc_dt == rk->in_dt && rk->out_dt == rk->in_dt
                     : rk->acc_dt == TCF_DT_F32;
    if (!acc_ok || !tcf_rd_pow2((unsigned)vt0, 8) || !tcf_rd_pow2((unsigned)ivs, 16) ||
        (unsigned)ivs * esz > 16) {
        memset(rk, 0, sizeof *rk);
        return TCF_DECODE_BAD_NAME;
    }
    rk->vt0 = (uint8_t)vt0, rk->ivs = (uint8_t)ivs, rk->ovs = 1;

    /* ReduceOp's members in order (§2.1): ops, ident, config (64), input_calc (404),
     * output_calc (504), src, dst[2], acc_buf, cta_buf, semaphores, base_idx, accumulate,
     * final_output, noutputs */
    rk->ident_off = (rk->ops_size + asz - 1) / asz * asz;
    rk->cfg_off = (rk->ident_off + asz + 3) & ~3u;
    rk->icalc_off = rk->cfg_off + 64;
    rk->ocalc_off = rk->icalc_off + 404;
    rk->src_off = (rk->ocalc_off + 504 + 7) & ~7u;
    rk->span = rk->src_off + 64;
    if (l->nparams != 1 || l->off[0] != 0 || l->size[0] != rk->span) {
        memset(rk, 0, sizeof *rk);
        return TCF_DECODE_BAD_LAYOUT;
    }
    return TCF_DECODE_OK;
}

/* ---- the configuration (§3) -------------------------------------------------------- */

static uint32_t tcf_rd_last_pow2(uint32_t n)
{
    n |= n >> 1, n |= n >> 2, n |= n >> 4, n |= n >> 8, n |= n >> 16;
    n -= n >> 1;
    return n ? n : 1;
}

static uint32_t tcf_rd_div_up(uint64_t a, uint64_t b) { return (uint32_t)((a + b - 1) / b); }

int tcf_reduce_config_rule(uint32_t K, uint32_t M, uint32_t arg_size, uint32_t ivs,
                           uint32_t num_sms, uint32_t max_threads_per_sm, tcf_reduce_cfg_t *c)
{
    const uint32_t max_threads = 512;       /* mnt_wrapper<T>, output_vec_size 1 */
    if (!c)
        return -1;
    memset(c, 0, sizeof *c);
    if (!K || !M || K > 0x7fffffffu || M > 0x7fffffffu || !arg_size || arg_size > 16 ||
        !tcf_rd_pow2(ivs, 16))
        return -1;
    c->num_inputs = K, c->num_outputs = M, c->element_size = arg_size;
    c->step_input = c->step_output = c->ctas_per_output = 1, c->output_vec_size = 1;
    uint32_t dim0 = K, dim1 = M;
    if (dim0 >= 128) {                      /* contiguous, one reduced dim: vectorize */
        c->vectorize_input = 1;
        dim0 /= ivs;
    }
    uint32_t d0 = dim0 < max_threads ? tcf_rd_last_pow2(dim0) : max_threads;
    uint32_t d1 = dim1 < max_threads ? tcf_rd_last_pow2(dim1) : max_threads;
    uint32_t bw = d0 < 32 ? d0 : 32;
    uint32_t bh = d1 < max_threads / bw ? d1 : max_threads / bw;
    bw = d0 < max_threads / bh ? d0 : max_threads / bh;
    c->block_width = bw, c->block_height = bh;
    c->input_mult[0] = c->step_input, c->step_input *= bw;            /* split_input(bw) */
    uint32_t vpt = tcf_rd_div_up(K, c->step_input);
    if (vpt >= (bh * 16 < 256 ? bh * 16 : 256))
        c->input_mult[1] = c->step_input, c->step_input *= bh;        /* warps share a row */
    else
        c->output_mult[1] = c->step_output, c->step_output *= bh;     /* a row per warp-row */
    uint32_t grid = tcf_rd_div_up(M, c->step_output);
    vpt = tcf_rd_div_up(K, c->step_input);
    uint64_t target = (uint64_t)num_sms * (max_threads_per_sm / (bw * bh));
    if (c->input_mult[1] && vpt >= 256 && grid <= target) {
        uint32_t c1 = tcf_rd_div_up(target, grid), c2 = tcf_rd_div_up(vpt, 16),
                 c3 = tcf_rd_div_up(vpt, 256);
        uint32_t ctas = c1 < c2 ? c1 : c2;
        c->ctas_per_output = ctas > c3 ? ctas : c3;
        if (c->ctas_per_output > 1)
            c->input_mult[2] = c->step_input, c->step_input *= c->ctas_per_output;
    }
    c->grid[0] = grid, c->grid[1] = c->ctas_per_output, c->grid[2] = 1;
    c->smem = !c->input_mult[1] && (!c->input_mult[0] || bw <= 32) ? 0 : arg_size * bw * bh;
    return 0;
}

/* ---- one launch (§2) ---------------------------------------------------------------- */

static uint64_t tcf_rd(const uint8_t *p, unsigned n)   /* little-endian, like the GPU */
{
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}
static uint32_t tcf_rd32(const uint8_t *p) { return (uint32_t)tcf_rd(p, 4); }

/* IntDivider<uint32_t>'s {divisor, magic, shift} (IntegerDivider.cuh), as decode.c checks it. */
static int tcf_rd_divider_ok(const uint8_t *p)
{
    uint32_t d = tcf_rd32(p), m1 = tcf_rd32(p + 4), shift = tcf_rd32(p + 8), sh = 0;
    while (sh < 32 && (1ull << sh) < d)
        sh++;
    if (!d || sh >= 32)
        return 0;
    return shift == sh && m1 == (uint32_t)(((1ull << 32) * ((1ull << sh) - d)) / d + 1);
}

static uint32_t tcf_rd_ident(tcf_red_op_t op, tcf_dtype_t acc)
{
    if (op != TCF_RED_AMAX && op != TCF_RED_AMIN)
        return 0;                                           /* 0.0 */
    int neg = op == TCF_RED_AMAX;                           /* -inf for max, +inf for min */
    return acc == TCF_DT_F32 ? (neg ? 0xff800000u : 0x7f800000u)
         : acc == TCF_DT_F16 ? (neg ? 0xfc00u : 0x7c00u) : (neg ? 0xff80u : 0x7f80u);
}

static tcf_decode_status_t tcf_rd_fail(tcf_reduce_t *r, tcf_decode_status_t st)
{
    memset(r, 0, sizeof *r);                /* a refusal is all zeros, never half-filled */
    return st;
}

/* One softmax launch: dispatch_softmax_forward/backward's shape for its row length and
 * row count, rows one after another (stride == element_count: the kernel steps to a
 * warp's first row by stride and to its second by element_count). */
static tcf_decode_status_t tcf_decode_softmax_apply(const tcf_decode_reduce_kernel_t *rk,
                                                    const uint8_t *p, const uint32_t grid[3],
                                                    const uint32_t block[3], tcf_reduce_t *r)
{
    int bwd = tcf_red_softmax_bwd(rk->op);
    uint32_t at = bwd ? 24 : 16;
    int32_t batch = (int32_t)tcf_rd32(p + at), stride = (int32_t)tcf_rd32(p + at + 4),
            count = (int32_t)tcf_rd32(p + at + 8);
    uint64_t mask = tcf_rd(p + (bwd ? 40 : 32), 8);
    uint32_t ws = tcf_softmax_lanes(rk->l2e), rpb = tcf_softmax_rows_per_block(rk->l2e);
    unsigned isz = tcf_dtype_size(rk->in_dt), osz = tcf_dtype_size(rk->out_dt);
    if (batch <= 0 || count <= 0 || count > 2048 || stride != count || mask)
        return tcf_rd_fail(r, TCF_DECODE_BAD_VALUE);
    if (tcf_softmax_l2e((uint32_t)count) != rk->l2e || (uint64_t)batch * (uint64_t)count > 0x7fffffffu)
        return tcf_rd_fail(r, TCF_DECODE_BAD_VALUE);
    if (grid[0] != ((uint32_t)batch + rpb - 1) / rpb || grid[1] != 1 || grid[2] != 1 ||
        block[0] != ws || block[1] != 128 / ws || block[2] != 1)
        return tcf_rd_fail(r, TCF_DECODE_BAD_LAUNCH);
    r->dst = tcf_rd(p, 8), r->src = tcf_rd(p + 8, 8), r->src2 = bwd ? tcf_rd(p + 16, 8) : 0;
    if (!r->dst || !r->src || (bwd && !r->src2) || r->dst % osz || r->src % isz || r->src2 % isz)
        return tcf_rd_fail(r, TCF_DECODE_BAD_VALUE);
    r->op = rk->op;
    r->in_dt = rk->in_dt, r->out_dt = rk->out_dt, r->acc_dt = TCF_DT_F32;
    tcf_reduce_cfg_t *c = &r->cfg;
    c->num_inputs = (uint32_t)count, c->num_outputs = (uint32_t)batch;
    c->step_input = 1, c->step_output = 1, c->ctas_per_output = 1;
    c->block_width = ws, c->block_height = 128 / ws, c->element_size = 4;
    memcpy(c->grid, grid, sizeof c->grid);
    r->odims = 1, r->osize[0] = (uint32_t)batch;
    r->ostride[0][0] = (uint32_t)count * osz, r->ostride[0][1] = (uint32_t)count * isz;
    r->vt0 = 1, r->ivs = 1;
    return TCF_DECODE_OK;
}

/* One LayerNorm or RMSNorm launch: the vectorized path's launch (grid M, block (32, 4),
 * 24 bytes of shared memory, fixed by the host code: not checked here) over M rows of N
 * contiguous elements, N % 4 == 0 and every vector 4-aligned (the rule that chose this
 * kernel, §1). Forms the source reproduces: gamma and beta, gamma alone, neither; RMS
 * with gamma or without, never beta or a mean. */
static tcf_decode_status_t tcf_decode_norm_apply(const tcf_decode_reduce_kernel_t *rk,
                                                 const uint8_t *p, const uint32_t grid[3],
                                                 const uint32_t block[3], tcf_reduce_t *r)
{
    int32_t N = (int32_t)tcf_rd32(p);
    uint64_t x = tcf_rd(p + 8, 8), ga = tcf_rd(p + 16, 8), be = tcf_rd(p + 24, 8),
             mean = tcf_rd(p + 32, 8), rstd = tcf_rd(p + 40, 8), y = tcf_rd(p + 48, 8);
    unsigned es = tcf_dtype_size(rk->in_dt), al = 4 * es;
    uint32_t M = grid[0];
    if (N <= 0 || N % 4 || N > (1 << 24) || !M || (uint64_t)M * (uint64_t)N > 0x7fffffffu)
        return tcf_rd_fail(r, TCF_DECODE_BAD_VALUE);
    if (grid[1] != 1 || grid[2] != 1 || block[0] != 32 || block[1] != 4 || block[2] != 1)
        return tcf_rd_fail(r, TCF_DECODE_BAD_LAUNCH);
    if (!x || !y || !rstd || x % al || y % al || ga % al || be % al || rstd % 4 || mean % 4)
        return tcf_rd_fail(r, TCF_DECODE_BAD_VALUE);
    if (rk->op == TCF_RED_RMSNORM ? be || mean : (be && !ga) || !mean)
        return tcf_rd_fail(r, TCF_DECODE_NORM_FORM);
    r->op = rk->op;
    r->in_dt = r->out_dt = rk->in_dt, r->acc_dt = TCF_DT_F32;
    tcf_reduce_cfg_t *c = &r->cfg;
    c->num_inputs = (uint32_t)N, c->num_outputs = M;
    c->step_input = 1, c->step_output = 1, c->ctas_per_output = 1;
    c->block_width = 32, c->block_height = 4, c->element_size = 4, c->smem = 24;
    memcpy(c->grid, grid, sizeof c->grid);
    r->odims = 1, r->osize[0] = M;
    r->ostride[0][0] = r->ostride[0][1] = (uint32_t)N * es;
    r->vt0 = 1, r->ivs = 1;
    r->src = x, r->dst = y, r->gamma = ga, r->beta = be, r->mean = mean, r->rstd = rstd;
    r->factor = tcf_rd32(p + 4);
    return TCF_DECODE_OK;
}

int tcf_decode_fullrow_resize(const tcf_decode_reduce_kernel_t *rk, uint8_t *params,
                              uint32_t params_len, uint32_t rows, uint32_t grid[3])
{
    if (!rk || !params || !grid || !tcf_red_fullrow(rk->op) || params_len < rk->span || !rows ||
        rows > 0x7fffffffu)
        return -1;
    if (tcf_red_norm(rk->op)) {   /* a block a row; N, the pointers and eps stay */
        grid[0] = rows, grid[1] = grid[2] = 1;
        return 0;
    }
    uint32_t at = tcf_red_softmax_bwd(rk->op) ? 24 : 16, rpb = tcf_softmax_rows_per_block(rk->l2e);
    for (unsigned i = 0; i < 4; i++)
        params[at + i] = (uint8_t)(rows >> (8 * i));
    grid[0] = (rows + rpb - 1) / rpb, grid[1] = grid[2] = 1;
    return 0;
}

tcf_decode_status_t tcf_decode_reduce_apply(const tcf_decode_reduce_kernel_t *rk,
                                            const uint8_t *p, uint32_t params_len,
                                            const uint32_t grid[3], const uint32_t block[3],
                                            tcf_reduce_t *r)
{
    if (!r)
        return TCF_DECODE_BAD_ARGS;
    memset(r, 0, sizeof *r);
    if (!rk || !rk->op || !rk->span || (params_len && !p) || !grid || !block)
        return TCF_DECODE_BAD_ARGS;
    if (params_len < rk->span)
        return TCF_DECODE_TRUNCATED;
    if (tcf_red_softmax(rk->op))
        return tcf_decode_softmax_apply(rk, p, grid, block, r);
    if (tcf_red_norm(rk->op))
        return tcf_decode_norm_apply(rk, p, grid, block, r);
    const uint8_t *cf = p + rk->cfg_off, *ic = p + rk->icalc_off, *oc = p + rk->ocalc_off,
                  *tl = p + rk->src_off;
    unsigned asz = tcf_dtype_size(rk->acc_dt), esz = tcf_dtype_size(rk->in_dt);
    tcf_reduce_cfg_t *c = &r->cfg;
    c->element_size = tcf_rd32(cf), c->num_inputs = tcf_rd32(cf + 4);
    c->num_outputs = tcf_rd32(cf + 8), c->step_input = tcf_rd32(cf + 12);
    c->step_output = tcf_rd32(cf + 16), c->ctas_per_output = tcf_rd32(cf + 20);
    for (int i = 0; i < 3; i++)
        c->input_mult[i] = tcf_rd32(cf + 24 + 4 * i);
    c->output_mult[0] = tcf_rd32(cf + 36), c->output_mult[1] = tcf_rd32(cf + 40);
    c->block_width = tcf_rd32(cf + 44), c->block_height = tcf_rd32(cf + 48);
    uint32_t num_threads = tcf_rd32(cf + 52), ovs = tcf_rd32(cf + 60);
    c->vectorize_input = cf[56];            /* a bool; the 3 bytes after it are padding */
    c->output_vec_size = (uint8_t)(ovs < 256 ? ovs : 0);
    memcpy(c->grid, grid, sizeof c->grid);
    uint64_t dst1 = tcf_rd(tl + 16, 8), acc_buf = tcf_rd(tl + 24, 8), cta_buf = tcf_rd(tl + 32, 8),
             sems = tcf_rd(tl + 40, 8), base_idx = tcf_rd(tl + 48, 8);
    uint8_t accumulate = tl[56], final_output = tl[57];
    int32_t noutputs = (int32_t)tcf_rd32(tl + 60);
    uint32_t K = c->num_inputs, M = c->num_outputs;

    if (c->element_size != asz || noutputs != 1 || dst1 || ovs != rk->ovs || c->vectorize_input > 1 ||
        accumulate > 1 || final_output > 1 || !K || !M || K > 0x7fffffffu || M > 0x7fffffffu)
        return tcf_rd_fail(r, TCF_DECODE_BAD_VALUE);
    /* several blocks per output: their partials meet in cta_buf, in a second phase (§4.3) */
    if (c->ctas_per_output != 1 || c->input_mult[2] || cta_buf || sems || grid[1] != 1)
        return tcf_rd_fail(r, TCF_DECODE_REDUCE_GLOBAL);
    /* a sub-launch of a split reduction: results combine across launches */
    if (accumulate || !final_output || acc_buf || base_idx)
        return tcf_rd_fail(r, TCF_DECODE_REDUCE_SPLIT);
    /* the reduced dims: one, unit stride, K long (else input_calc.get per element, §5) */
    if (tcf_rd32(ic) != 1 || !tcf_rd_divider_ok(ic + 4) || tcf_rd32(ic + 4) != K ||
        tcf_rd32(ic + 304) != esz)
        return tcf_rd_fail(r, TCF_DECODE_REDUCE_STRIDED);
    /* lanes take outputs: the reduced dim is not the fastest-moving one (a broadcast row) */
    if (c->output_mult[0] || c->input_mult[0] != 1)
        return tcf_rd_fail(r, TCF_DECODE_REDUCE_OUTER);
    /* the rows: output_calc over the kept dims, sizes multiplying to M */
    int32_t odims = (int32_t)tcf_rd32(oc);
    uint64_t count = 1;
    if (odims < 0 || odims > 25)
        return tcf_rd_fail(r, TCF_DECODE_BAD_VALUE);
    if (odims > TCF_OP_MAX_DIMS)
        return tcf_rd_fail(r, TCF_DECODE_TOO_MANY_DIMS);
    r->odims = (uint8_t)odims;
    for (int d = 0; d < odims; d++) {
        if (!tcf_rd_divider_ok(oc + 4 + 12 * d))
            return tcf_rd_fail(r, TCF_DECODE_BAD_VALUE);
        r->osize[d] = tcf_rd32(oc + 4 + 12 * d);
        if ((count *= r->osize[d]) > M)
            return tcf_rd_fail(r, TCF_DECODE_BAD_VALUE);
        r->ostride[d][0] = tcf_rd32(oc + 304 + 8 * d);
        r->ostride[d][1] = tcf_rd32(oc + 308 + 8 * d);
    }
    if (count != M)
        return tcf_rd_fail(r, TCF_DECODE_BAD_VALUE);
    /* the configuration must be setReduceConfig's for this shape: the order it fixes is
     * the one we reproduce. The device's size only decides ctas_per_output, already 1. */
    tcf_reduce_cfg_t want;
    if (tcf_reduce_config_rule(K, M, asz, rk->ivs, 0, 0, &want) ||
        want.vectorize_input != c->vectorize_input || want.block_width != c->block_width ||
        want.block_height != c->block_height || num_threads != want.block_width * want.block_height ||
        want.step_input != c->step_input || want.step_output != c->step_output ||
        want.input_mult[1] != c->input_mult[1] || want.output_mult[1] != c->output_mult[1] ||
        grid[0] != want.grid[0] || grid[2] != 1 || block[0] != c->block_width ||
        block[1] != c->block_height || block[2] != 1)
        return tcf_rd_fail(r, TCF_DECODE_REDUCE_CONFIG);
    c->smem = want.smem;
    r->ident = (uint32_t)tcf_rd(p + rk->ident_off, asz);
    if (r->ident != tcf_rd_ident(rk->op, rk->acc_dt))
        return tcf_rd_fail(r, TCF_DECODE_BAD_VALUE);
    r->src = tcf_rd(tl, 8), r->dst = tcf_rd(tl + 8, 8);
    if (!r->src || !r->dst || r->src % esz)
        return tcf_rd_fail(r, TCF_DECODE_BAD_VALUE);
    r->op = rk->op, r->root = rk->root;
    r->in_dt = rk->in_dt, r->out_dt = rk->out_dt, r->acc_dt = rk->acc_dt;
    r->factor = rk->op == TCF_RED_MEAN ? tcf_rd32(p) : 0;
    r->vt0 = rk->vt0, r->ivs = rk->ivs;
    r->split_y = c->input_mult[1] != 0;
    r->shift = c->vectorize_input ? (uint8_t)(r->src % (rk->ivs * esz) / esz) : 0;
    return TCF_DECODE_OK;
}

tcf_decode_status_t tcf_decode_reduce(const tcf_decode_launch_t *l, tcf_reduce_t *r)
{
    tcf_decode_reduce_kernel_t rk;
    tcf_decode_status_t st;
    if (!r)
        return TCF_DECODE_BAD_ARGS;
    memset(r, 0, sizeof *r);
    if (l && l->params_len && !l->params)
        return TCF_DECODE_BAD_ARGS;
    if ((st = tcf_decode_reduce_kernel(l, &rk)) != TCF_DECODE_OK)
        return st;
    return tcf_decode_reduce_apply(&rk, l->params, l->params_len, l->grid, l->block, r);
}

void tcf_decode_reduce_describe(const tcf_reduce_t *r, char *buf, size_t len)
{
    size_t n = 0;
#define TCF_APPEND_(...) \
    (n += (size_t)snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, __VA_ARGS__))
    if (!r || !buf || !len)
        return;
    const tcf_reduce_cfg_t *c = &r->cfg;
    TCF_APPEND_("%s%s %s->%s acc %s K=%u M=%u block %ux%u grid %u", tcf_reduce_op_name(r->op),
                r->op == TCF_RED_NORM2 && r->root ? "(sqrt)" : "", tcf_decode_dtype_name(r->in_dt),
                tcf_decode_dtype_name(r->out_dt), tcf_decode_dtype_name(r->acc_dt),
                c->num_inputs, c->num_outputs, c->block_width, c->block_height, c->grid[0]);
    if (tcf_red_softmax(r->op))
        TCF_APPEND_(" l2e %u", tcf_softmax_l2e(c->num_inputs));
    else if (tcf_red_norm(r->op))
        TCF_APPEND_("%s%s", r->gamma ? " gamma" : "", r->beta ? " beta" : "");
    else if (c->vectorize_input)
        TCF_APPEND_(" vec%u shift %u", r->ivs, r->shift);
    else
        TCF_APPEND_(" vt0 %u", r->vt0);
    if (!tcf_red_fullrow(r->op))
        TCF_APPEND_(" %s", r->split_y ? "warps-share-row" : "row-per-warp-row");
    if (tcf_red_norm(r->op)) {
        float f;
        memcpy(&f, &r->factor, sizeof f);
        TCF_APPEND_(" eps %.9g", (double)f);
        if (r->mean)
            TCF_APPEND_(" mean 0x%llx", (unsigned long long)r->mean);
        TCF_APPEND_(" rstd 0x%llx", (unsigned long long)r->rstd);
    }
    if (r->op == TCF_RED_MEAN) {
        float f;
        memcpy(&f, &r->factor, sizeof f);
        TCF_APPEND_(" factor %.9g", (double)f);
    }
    TCF_APPEND_(" src 0x%llx", (unsigned long long)r->src);
    if (r->src2)
        TCF_APPEND_(" out 0x%llx", (unsigned long long)r->src2);
    TCF_APPEND_(" dst 0x%llx rows", (unsigned long long)r->dst);
    if (!r->odims)
        TCF_APPEND_(" -");
    for (unsigned d = 0; d < r->odims && d < TCF_OP_MAX_DIMS; d++)
        TCF_APPEND_(" %u:(%u,%u)", r->osize[d], r->ostride[d][0], r->ostride[d][1]);
#undef TCF_APPEND_
}

int tcf_decode_reduce_unread(const tcf_decode_reduce_kernel_t *rk, const uint8_t *p, uint32_t len,
                             uint8_t *unread)
{
    if (!rk || !rk->op || tcf_red_fullrow(rk->op) || !p || !unread || rk->span != len)
        return -1;
    if (rk->ident_off < 16 && rk->cfg_off + 60 <= len) {
        if (rk->ops_size == 1)
            memset(unread, 1, rk->ident_off);   /* the empty functor and the padding to ident */
        memset(unread + rk->cfg_off + 57, 1, 3);   /* after the config's vectorize_input */
        memset(unread + len - 6, 1, 2);            /* after final_output */
    }
    tcf_decode_offset_calc_unread(p + rk->icalc_off, len - rk->icalc_off, 1, unread + rk->icalc_off);
    tcf_decode_offset_calc_unread(p + rk->ocalc_off, len - rk->ocalc_off, 2, unread + rk->ocalc_off);
    return 0;
}
