/* Decoding of PyTorch 2.11 elementwise launches into ops (contract: decode.h; the kernel
 * families: decode_rules.def; the facts: shared/PYTORCH-KERNELS.md, recorded launches in
 * tests/fixtures/torch-2.11-h100-single-ops.log). Three steps: parse the name (loop,
 * functor part, dtypes), pick a rule, then check the layout and read the bytes. */
#include <stdio.h>
#include <string.h>

#include "recognize/decode.h"

enum { TCF_SC_NONE = 0, TCF_SC_OPMATH, TCF_SC_ELEM };
enum { TCF_IN_SAME = 0, TCF_IN_BOOL };
enum { TCF_OUT_SAME = 0, TCF_OUT_BOOL, TCF_OUT_F16, TCF_OUT_BF16 };
enum { TCF_DTS_FLT = 0, TCF_DTS_FLTB };

typedef struct { uint8_t after, ty; } tcf_decode_field_t;
typedef struct {
    const char        *rule, *m1, *m2, *lam;
    tcf_op_kind_t      kind;
    uint8_t            idx, in0, out, nin, dts, sarg;
    tcf_decode_field_t s[2];
    int8_t             moff;
    uint8_t            mbase, mcount;
} tcf_decode_rule_t;

#define STRUCT NULL
#define SC(a, t) { a, TCF_SC_##t }
#define NOSC { 0, TCF_SC_NONE }
#define MODE(o, b, n) o, b, n
#define NOMODE -1, 0, 0
static const tcf_decode_rule_t tcf_decode_rules[] = {
#define TCF_DECODE_RULE(r, k, m1, m2, lam, idx, in0, out, nin, dts, sarg, s0, s1, mode)  \
    { #r, m1, m2, lam, TCF_OP_##k, idx, TCF_IN_##in0, TCF_OUT_##out, nin, TCF_DTS_##dts, \
      TCF_SARG_##sarg, { s0, s1 }, mode },
#include "recognize/decode_rules.def"
#undef TCF_DECODE_RULE
};
#define TCF_DECODE_NRULES (sizeof tcf_decode_rules / sizeof tcf_decode_rules[0])

/* The three loops of native/cuda/CUDALoops.cuh, by their mangled prefix. */
#define TCF_VEC_PREFIX "_ZN2at6native29vectorized_elementwise_kernelILi"
#define TCF_UNR_PREFIX "_ZN2at6native27unrolled_elementwise_kernelI"
#define TCF_LEG_PREFIX "_ZN2at6native18elementwise_kernelI"
#define TCF_ARRAY      "St5arrayIPcLm" /* std::array<char*, NT>: data = [out, in0, ...] */

typedef struct {
    tcf_loop_t  loop;
    unsigned    vec, nt, ncast;  /* <vec>, NT, LoadWithCast<ncast> (0: no cast); NT is 0
                                  * for the strided loops, whose names do not say it */
    unsigned    vt;              /* strided loops: elementwise_kernel<128, vt> */
    const char *fb, *fe;         /* the functor part of the name: [fb, fe) */
    const char *lam, *lam_end;   /* innermost lambda's parameter list; NULL for structs */
    const char *disc;            /* its discriminator ("_", "0_", ...), up to fe */
} tcf_decode_name_t;

static int tcf_decode_starts(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }
static int tcf_decode_ends(const char *s, const char *e, const char *p)
{
    return (size_t)(e - s) >= strlen(p) && !memcmp(e - strlen(p), p, strlen(p));
}
static const char *tcf_decode_find(const char *b, const char *e, const char *p)
{
    return memmem(b, (size_t)(e - b), p, strlen(p));
}
static const char *tcf_decode_rfind(const char *b, const char *e, const char *p)
{
    for (size_t n = strlen(p), i = (size_t)(e - b) >= n ? (size_t)(e - b) - n + 1 : 0; i-- > 0;)
        if (!memcmp(b + i, p, n))
            return b + i;
    return NULL;
}
/* 1 to 3 decimal digits; NULL when none or more. */
static const char *tcf_decode_digits(const char *p, unsigned *v)
{
    unsigned x = 0, k = 0;
    while (p[k] >= '0' && p[k] <= '9' && k < 4)
        x = x * 10 + (unsigned)(p[k++] - '0');
    *v = x;
    return k && k <= 3 ? p + k : NULL;
}

static const char *tcf_decode_subst(const char *q, const char *end);

/* A functor that is a lambda (a local entity, "Z..."): its closure "Ul<params>E<n>_" ends
 * the functor part; lam is its parameter list, disc its discriminator. */
static tcf_decode_status_t tcf_decode_closure(tcf_decode_name_t *nm)
{
    if (*nm->fb == 'Z') {
        const char *u = tcf_decode_rfind(nm->fb, nm->fe, "Ul"), *q = nm->fe - 1;
        if (!u || *q != '_')
            return TCF_DECODE_BAD_NAME;
        while (q > u + 2 && q[-1] >= '0' && q[-1] <= '9')
            q--;
        if (q <= u + 3 || q[-1] != 'E')
            return TCF_DECODE_BAD_NAME;
        nm->lam = u + 2, nm->lam_end = q - 1, nm->disc = q;
    }
    return TCF_DECODE_OK;
}

/* The strided loop (docs/PYTORCH-ELEMENTWISE.md, 1.1): elementwise_kernel<128, vt, L>
 * where L is the lambda(int) of gpu_kernel_impl_nocast<F> (same dtypes) or of
 * gpu_kernel_impl<F> (the cast branch), "...ZNS0_22gpu_kernel_impl_nocastI" F "EEv"
 * "RNS_18TensorIteratorBaseE" (or a substitution "S<id>_" once F spelled it) "RKT_EUliE_"
 * "EEviT1_". F is the functor, as in the contiguous loops. */
static tcf_decode_status_t tcf_decode_strided_name(const char *name, const char *end,
                                                   tcf_decode_name_t *nm)
{
    static const char tail[] = "RKT_EUliE_EEviT1_";
    const char *p = tcf_decode_starts(name + strlen(TCF_LEG_PREFIX), "Li128ELi")
                        ? tcf_decode_digits(name + strlen(TCF_LEG_PREFIX) + 8, &nm->vt) : NULL;
    if (!p || *p != 'E' || (nm->vt != 2 && nm->vt != 4))
        return TCF_DECODE_BAD_NAME;
    p++;
    if (tcf_decode_starts(p, "ZNS0_22gpu_kernel_impl_nocastI"))
        nm->loop = TCF_LOOP_STRIDED, nm->fb = p + 30;
    else if (tcf_decode_starts(p, "ZNS0_15gpu_kernel_implI"))
        nm->loop = TCF_LOOP_STRIDED_CAST, nm->fb = p + 23;
    else
        return TCF_DECODE_BAD_NAME;
    if (!tcf_decode_ends(name, end, tail))
        return TCF_DECODE_BAD_NAME;
    const char *t = end - strlen(tail);     /* F ends at "EEv" + the iterator's type */
    if (tcf_decode_ends(nm->fb, t, "EEvRNS_18TensorIteratorBaseE")) {
        nm->fe = t - 28;
    } else {                                /* "EEvS<seq-id>_": S, base-36 id, _ */
        const char *q = tcf_decode_rfind(nm->fb, t, "EEvS");
        if (!q || tcf_decode_subst(q + 3, t) != t)
            return TCF_DECODE_BAD_NAME;
        nm->fe = q;
    }
    nm->vec = 1;
    if (nm->fe <= nm->fb)
        return TCF_DECODE_BAD_NAME;
    return TCF_DECODE_OK;
}

static tcf_decode_status_t tcf_decode_name(const char *name, tcf_decode_name_t *nm)
{
    const char *end = name + strlen(name), *p;
    memset(nm, 0, sizeof *nm);
    if (tcf_decode_starts(name, TCF_VEC_PREFIX)) {
        p = tcf_decode_digits(name + strlen(TCF_VEC_PREFIX), &nm->vec);
        if (!p || *p != 'E' || nm->vec < 2 || nm->vec > 16 || (nm->vec & (nm->vec - 1)))
            return TCF_DECODE_BAD_NAME;
        nm->loop = TCF_LOOP_VEC, nm->fb = p + 1;
    } else if (tcf_decode_starts(name, TCF_UNR_PREFIX)) {
        nm->loop = TCF_LOOP_UNROLLED, nm->vec = 1, nm->fb = name + strlen(TCF_UNR_PREFIX);
    } else if (tcf_decode_starts(name, TCF_LEG_PREFIX)) {
        tcf_decode_status_t st = tcf_decode_strided_name(name, end, nm);
        return st != TCF_DECODE_OK ? st : tcf_decode_closure(nm);
    } else {
        /* reduce_kernel, the row softmaxes of SoftMax.cu and the vectorized LayerNorm
         * and RMSNorm of layer_norm_kernel.cu: decode_reduce.h's */
        return strstr(name, "13reduce_kernelI") ||
               (strstr(name, "_SoftMax_cu_") && (strstr(name, "20softmax_warp_forwardI") ||
                                                 strstr(name, "21softmax_warp_backwardI"))) ||
               (strstr(name, "_layer_norm_kernel_cu_") && strstr(name, "28vectorized_layer_norm_kernelI"))
                   ? TCF_DECODE_REDUCTION : TCF_DECODE_NOT_ELEMENTWISE;
    }
    nm->fe = tcf_decode_rfind(nm->fb, end, TCF_ARRAY);
    if (!nm->fe || nm->fe == nm->fb || !(p = tcf_decode_digits(nm->fe + strlen(TCF_ARRAY), &nm->nt)) ||
        nm->nt < 1 || nm->nt > 4)   /* 1: the output alone (fill) */
        return TCF_DECODE_BAD_NAME;
    if (nm->loop == TCF_LOOP_VEC) {
        /* (int N, F f, array data): "...EEEEviT0_T1_", or "viS8_T1_" where F was substituted */
        if (!tcf_decode_starts(p, "EEEEvi") || !tcf_decode_ends(p, end, "T1_"))
            return TCF_DECODE_BAD_NAME;
    } else {
        /* <F, array, ept, TrivialOffsetCalculator<NI>, <1>, loader, storer>; the int ept
         * takes no T_, hence "viT_T0_T2_T3_T4_T5_" (recorded) */
        unsigned ept;
        if (!tcf_decode_starts(p, "EELi") || !(p = tcf_decode_digits(p + 4, &ept)) || *p != 'E' ||
            !tcf_decode_starts(p + 1, "23TrivialOffsetCalculatorILi") || !tcf_decode_ends(p, end, "T5_"))
            return TCF_DECODE_BAD_NAME;
        const char *ld = tcf_decode_find(p, end, "12LoadWithCastILi");
        if (ld) {
            nm->loop = TCF_LOOP_CAST;
            if (!(ld = tcf_decode_digits(ld + 17, &nm->ncast)) || *ld != 'E' ||
                !tcf_decode_find(ld, end, "13StoreWithCastILi1EE"))
                return TCF_DECODE_BAD_NAME;
        } else if (!tcf_decode_find(p, end, "15LoadWithoutCast") ||
                   !tcf_decode_find(p, end, "16StoreWithoutCast")) {
            return TCF_DECODE_BAD_NAME;
        }
    }
    return tcf_decode_closure(nm);
}

/* "S_" or "S<seq-id>_" (a substitution: it repeats an earlier component); its end or NULL. */
static const char *tcf_decode_subst(const char *q, const char *end)
{
    if (q >= end || *q++ != 'S')
        return NULL;
    while (q < end && ((*q >= '0' && *q <= '9') || (*q >= 'A' && *q <= 'Z')))
        q++;
    return q < end && *q == '_' ? q + 1 : NULL;
}

/* One mangled type: f, b, c10::Half / c10::BFloat16 spelled "N3c104HalfE" or, once c10
 * appeared earlier in the name, "NS5_4HalfE". A bare substitution "S4_" repeats an earlier
 * type; builtins are never substituted, so it is Half or BFloat16: whichever of the two the
 * name spells (neither or both: unknown). *pp advances past what was read. */
static tcf_dtype_t tcf_decode_type(const char **pp, const char *end, const char *name)
{
    const char *p = *pp, *q;
    if (p < end && (*p == 'f' || *p == 'b'))
        return *pp = p + 1, *p == 'f' ? TCF_DT_F32 : TCF_DT_BOOL;
    if (p < end && *p == 'S') {
        int h = strstr(name, "4HalfE") != NULL, bf = strstr(name, "8BFloat16E") != NULL;
        if (!(q = tcf_decode_subst(p, end)) || h == bf)
            return TCF_DT_NONE;
        return *pp = q, h ? TCF_DT_F16 : TCF_DT_BF16;
    }
    if (p >= end || *p != 'N')
        return TCF_DT_NONE;                 /* double, integers, complex...: not ours */
    if (end - p >= 5 && !memcmp(p + 1, "3c10", 4))
        q = p + 5;
    else if (!(q = tcf_decode_subst(p + 1, end)))
        return TCF_DT_NONE;
    if (end - q >= 6 && !memcmp(q, "4HalfE", 6))
        return *pp = q + 6, TCF_DT_F16;
    if (end - q >= 10 && !memcmp(q, "8BFloat16E", 10))
        return *pp = q + 10, TCF_DT_BF16;
    return TCF_DT_NONE;
}

/* The idx-th type of the list at p (template arguments or lambda parameters). */
static tcf_dtype_t tcf_decode_nth_type(const char *p, const char *end, unsigned idx, const char *name)
{
    tcf_dtype_t d = TCF_DT_NONE;
    for (unsigned i = 0; i <= idx; i++)
        if ((d = tcf_decode_type(&p, end, name)) == TCF_DT_NONE)
            return TCF_DT_NONE;
    return d;
}

static const tcf_decode_rule_t *tcf_decode_match(const tcf_decode_name_t *nm)
{
    size_t len = (size_t)(nm->fe - nm->fb);
    for (size_t i = 0; i < TCF_DECODE_NRULES; i++) {
        const tcf_decode_rule_t *r = &tcf_decode_rules[i];
        if (!r->lam) {                      /* a struct in at::native, right at the start */
            if (nm->lam || len < 4 + strlen(r->m1) || !tcf_decode_starts(nm->fb, "NS0_") ||
                !tcf_decode_starts(nm->fb + 4, r->m1))
                continue;
        } else {
            size_t dl = (size_t)(nm->fe - (nm->disc ? nm->disc : nm->fe));
            if (!nm->lam || !tcf_decode_find(nm->fb, nm->fe, r->m1) ||
                (strcmp(r->lam, "*") && (strlen(r->lam) != dl || memcmp(r->lam, nm->disc, dl))))
                continue;
        }
        if (r->m2 && !tcf_decode_find(nm->fb, nm->fe, r->m2))
            continue;
        return r;
    }
    return NULL;
}

/* at::ScalarType codes (c10/core/ScalarType.h), as the cast loop's loader/storer hold them */
static tcf_dtype_t tcf_decode_scalar_type(uint8_t st)
{
    return st == 5 ? TCF_DT_F16 : st == 6 ? TCF_DT_F32 : st == 11 ? TCF_DT_BOOL
         : st == 15 ? TCF_DT_BF16 : TCF_DT_NONE;
}

static tcf_decode_status_t tcf_decode_fail(tcf_op_t *op, tcf_decode_status_t st)
{
    memset(op, 0, sizeof *op);              /* a refused op is all zeros, never half-filled */
    return st;
}

static uint64_t tcf_decode_rd(const uint8_t *p, unsigned n)   /* little-endian, like the GPU */
{
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

static float tcf_decode_widen(tcf_dtype_t d, uint32_t b)
{
    uint32_t s = (b & 0x8000u) << 16, e = (b >> 10) & 31, m = b & 0x3ffu, bits = b;
    if (d == TCF_DT_BF16)
        bits = b << 16;
    else if (d == TCF_DT_F16 && (e || !m))  /* normal, zero, inf, NaN */
        bits = s | (e == 31 ? 0x7f800000u : e ? (e + 112) << 23 : 0) | m << 13;
    else if (d == TCF_DT_F16) {             /* subnormal: normalise */
        for (e = 113; !(m & 0x400u); e--)
            m <<= 1;
        bits = s | e << 23 | (m & 0x3ffu) << 13;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Layout of the loops' parameters: (int N, F f, array data) and, unrolled, (ic, oc,
 * loader, storer): trivial calculators and the no-cast loader/storer are empty (1 byte);
 * LoadWithCast<n> is {int8 dtypes[n] padded to 4, uint32 sizes[n]}, StoreWithCast<1> 8.
 * The functor must hold [fmin, fmax] bytes. Returns the bytes spanned, 0 on a mismatch. */
static uint64_t tcf_decode_layout(const tcf_decode_launch_t *l, const tcf_decode_name_t *nm,
                                  unsigned nin, uint32_t fmin, uint32_t fmax)
{
    uint32_t np = nm->loop == TCF_LOOP_VEC ? 3 : 7;
    uint32_t want[7] = { 4, 0, 8 * (1 + nin), 1, 1, nm->ncast ? 4 + 4 * nm->ncast : 1,
                         nm->ncast ? 8 : 1 };
    uint64_t end = 0;
    if (l->nparams != np || l->off[0] || l->off[2] % 8 || l->size[1] < fmin || l->size[1] > fmax)
        return 0;
    for (uint32_t i = 0; i < np; end = (uint64_t)l->off[i] + l->size[i], i++)
        if ((i != 1 && l->size[i] != want[i]) || l->off[i] < end)
            return 0;
    return end;
}

/* The strided loop's parameters (docs/PYTORCH-ELEMENTWISE.md, 1.2): (int N @0, L @8),
 * where the closure L holds OffsetCalculator<NT> {int dims; IntDivider sizes[25];
 * uint32 strides[25][NT]} (304 + 100 NT bytes), then data[NT] at the next 8 bytes, then
 * the functor F, on the cast branch int8 dtypes[NT] right after F, and last nvcc's 8-byte
 * closure pointer. F's size is known for a struct (its fields rounded up to 4, or 1 when
 * empty); a lambda's is 1 ([] captures nothing) or a multiple of 8 ([=]: the captures and
 * its own closure pointer), told apart by L's size. Fills dk's offsets (from the
 * parameter buffer) and span; 0 on a mismatch. */
static int tcf_decode_strided_layout(const tcf_decode_launch_t *l, unsigned nt, int lambda,
                                     uint32_t fmin, tcf_decode_kernel_t *dk)
{
    if (l->nparams != 2 || l->off[0] || l->size[0] != 4 || l->off[1] != 8)
        return 0;
    uint32_t total = l->size[1], doff = (304 + 100 * nt + 7) & ~7u, foff = doff + 8 * nt;
    uint32_t fsz;
    if (total % 8 || total < foff + 16 || total > foff + 8 + 72)
        return 0;
    if (dk->loop == TCF_LOOP_STRIDED) {
        fsz = total - 8 - foff;             /* F and the padding before the pointer */
        if (fsz < fmin || (!lambda && fsz > ((fmin + 3) / 4 * 4 + 7) / 8 * 8))
            return 0;
    } else {
        fsz = !lambda ? (fmin <= 1 ? 1 : (fmin + 3) / 4 * 4)
                      : total == foff + 16 ? 1 : total - foff - 16;
        if (fsz < fmin || ((foff + fsz + nt + 7) & ~7u) + 8 != total)
            return 0;
        dk->loff = 8 + foff + fsz;          /* dtypes[NT] */
    }
    dk->doff = 8 + doff, dk->foff = 8 + foff, dk->span = 8 + (uint64_t)total;
    return 1;
}

tcf_decode_status_t tcf_decode_kernel(const tcf_decode_launch_t *l, tcf_decode_kernel_t *dk)
{
    tcf_decode_name_t nm;
    tcf_decode_status_t st;
    if (!dk)
        return TCF_DECODE_BAD_ARGS;
    memset(dk, 0, sizeof *dk);
    if (!l || !l->name || (l->nparams && (!l->off || !l->size)))
        return TCF_DECODE_BAD_ARGS;
    if (strstr(l->name, "CatArrayBatchedCopy"))
        return tcf_decode_cat_kernel(l, dk);
    if ((st = tcf_decode_name(l->name, &nm)) != TCF_DECODE_OK)
        return st;
    const tcf_decode_rule_t *r = tcf_decode_match(&nm);
    if (!r)
        return TCF_DECODE_UNKNOWN_FUNCTOR;
    /* T: the struct's template argument or the innermost lambda's parameter */
    tcf_dtype_t t = r->lam ? tcf_decode_nth_type(nm.lam, nm.lam_end, r->idx, l->name)
                           : tcf_decode_nth_type(nm.fb + 4 + strlen(r->m1), nm.fe, r->idx, l->name);
    if (!t || (t == TCF_DT_BOOL && r->dts != TCF_DTS_FLTB))
        return TCF_DECODE_UNSUPPORTED_DTYPE;
    int strided = nm.loop == TCF_LOOP_STRIDED || nm.loop == TCF_LOOP_STRIDED_CAST;
    if (strided)
        nm.nt = 1u + r->nin;                /* the name does not say; the layout will */
    if (nm.nt != 1u + r->nin || (nm.ncast && nm.ncast != r->nin))
        return TCF_DECODE_UNKNOWN_FUNCTOR;  /* the name's operand count is not the row's */

    /* where each scalar sits, hence how big the functor must be: a struct of <= 4-byte
     * members is its fields rounded up to 4; nvcc's closures hold more than they capture
     * (pow's empty lambdas are 8 bytes), so those are only bounded */
    uint32_t fmin = r->moff >= 0 ? (uint32_t)r->moff + 4 : 1;
    for (int i = 0; i < 2 && r->s[i].ty; i++) {
        dk->ssz[i] = r->s[i].ty == TCF_SC_OPMATH ? 4 : tcf_dtype_size(t);
        dk->soff[i] = (r->s[i].after + dk->ssz[i] - 1) / dk->ssz[i] * dk->ssz[i];
        fmin = dk->soff[i] + dk->ssz[i] > fmin ? dk->soff[i] + dk->ssz[i] : fmin;
    }
    dk->rule = r, dk->t = t, dk->loop = (uint8_t)nm.loop, dk->vec = (uint8_t)nm.vec;
    dk->ncast = (uint8_t)nm.ncast, dk->vt = (uint8_t)nm.vt;
    if (strided)
        return tcf_decode_strided_layout(l, nm.nt, r->lam != NULL, fmin, dk)
                   ? TCF_DECODE_OK : (memset(dk, 0, sizeof *dk), TCF_DECODE_BAD_LAYOUT);
    uint64_t span = tcf_decode_layout(l, &nm, r->nin, fmin, r->lam ? 64 : (fmin + 3) / 4 * 4);
    if (!span) {
        memset(dk, 0, sizeof *dk);
        return TCF_DECODE_BAD_LAYOUT;
    }
    dk->span = span;
    dk->foff = l->off[1], dk->doff = l->off[2];
    dk->loff = nm.ncast ? l->off[5] : 0, dk->stoff = nm.ncast ? l->off[6] : 0;
    return TCF_DECODE_OK;
}

/* IntDivider<uint32_t>'s magic for d (tcf_int_divider): a divisor whose m1 and shift are
 * not these is no OffsetCalculator we understand (or a misread layout). */
static int tcf_decode_divider_ok(uint32_t d, uint32_t m1, uint32_t shift)
{
    uint32_t want_m1, want_shift;
    return tcf_int_divider(d, &want_m1, &want_shift) == 0 && shift == want_shift &&
           m1 == want_m1;
}

/* The iteration space of a strided launch (op is filled but for it): dims, sizes, byte
 * strides per operand; on the cast branch the memory dtypes. The sizes must multiply to
 * N, and the grid be PyTorch's for N: ceil(N / (128 vt)). */
static tcf_decode_status_t tcf_decode_strided(const tcf_decode_kernel_t *dk, const uint8_t *p,
                                              const uint32_t grid[3], tcf_op_t *op)
{
    const uint8_t *oc = p + 8;              /* the closure, OffsetCalculator first */
    unsigned nt = 1u + op->nin;
    uint64_t per_block = 128ull * dk->vt, count = 1;
    if (grid[0] != (op->n + per_block - 1) / per_block)
        return TCF_DECODE_BAD_LAUNCH;
    int32_t dims = (int32_t)tcf_decode_rd(oc, 4);
    if (dims < 1 || dims > 25)
        return TCF_DECODE_BAD_VALUE;
    if (dims > TCF_OP_MAX_DIMS)
        return TCF_DECODE_TOO_MANY_DIMS;
    op->it.ndim = (uint8_t)dims;
    for (int d = 0; d < dims; d++) {
        const uint8_t *div = oc + 4 + 12 * d;
        uint32_t size = (uint32_t)tcf_decode_rd(div, 4);
        if (!tcf_decode_divider_ok(size, (uint32_t)tcf_decode_rd(div + 4, 4),
                                   (uint32_t)tcf_decode_rd(div + 8, 4)))
            return TCF_DECODE_BAD_VALUE;
        op->it.size[d] = size;
        count *= size;
        if (count > op->n)
            return TCF_DECODE_BAD_VALUE;
        for (unsigned k = 0; k < nt; k++)
            op->it.stride[k][d] = (uint32_t)tcf_decode_rd(oc + 304 + 4 * (nt * (unsigned)d + k), 4);
    }
    if (count != op->n)
        return TCF_DECODE_BAD_VALUE;
    if (dk->loop == TCF_LOOP_STRIDED_CAST)  /* dtypes[NT]: out, in0, ... */
        for (unsigned k = 0; k < nt; k++) {
            tcf_dtype_t d = tcf_decode_scalar_type(p[dk->loff + k]);
            if (!d)
                return TCF_DECODE_UNSUPPORTED_DTYPE;
            *(k ? &op->in_dt[k - 1] : &op->out_dt) = d;
        }
    return TCF_DECODE_OK;
}

tcf_decode_status_t tcf_decode_apply(const tcf_decode_kernel_t *dk, const uint8_t *p,
                                     uint32_t params_len, const uint32_t grid[3],
                                     const uint32_t block[3], tcf_op_t *op)
{
    if (!op)
        return TCF_DECODE_BAD_ARGS;
    memset(op, 0, sizeof *op);
    if (dk && dk->loop == TCF_LOOP_CAT)
        return tcf_decode_cat_apply(dk, p, params_len, grid, block, op);
    const tcf_decode_rule_t *r = dk ? dk->rule : NULL;
    if (!r || (params_len && !p) || !grid || !block)
        return TCF_DECODE_BAD_ARGS;
    if (dk->span > params_len)
        return TCF_DECODE_TRUNCATED;
    if (block[0] != 128 || block[1] != 1 || block[2] != 1 || !grid[0] || grid[1] != 1 ||
        grid[2] != 1)
        return TCF_DECODE_BAD_LAUNCH;       /* num_threads() is 128 (thread_constants.h) */

    const uint8_t *f = p + dk->foff, *data = p + dk->doff;
    tcf_dtype_t t = dk->t;
    int32_t n = (int32_t)tcf_decode_rd(p, 4);
    if (n <= 0)
        return TCF_DECODE_BAD_VALUE;
    *op = (tcf_op_t){ .kind = r->kind, .rule = r->rule, .loop = dk->loop, .vec = dk->vec,
                      .nin = r->nin, .sarg = r->sarg, .n = (uint32_t)n, .compute_dt = t,
                      .out = tcf_decode_rd(data, 8) };
    op->res_dt = op->out_dt = r->out == TCF_OUT_BOOL ? TCF_DT_BOOL
                            : r->out == TCF_OUT_F16  ? TCF_DT_F16
                            : r->out == TCF_OUT_BF16 ? TCF_DT_BF16 : t;
    for (unsigned i = 0; i < r->nin; i++) {
        op->in[i] = tcf_decode_rd(data + 8 * (i + 1), 8);
        op->in_dt[i] = i == 0 && r->in0 == TCF_IN_BOOL ? TCF_DT_BOOL : t;
    }
    for (unsigned i = 0; dk->ncast && i <= r->nin; i++) {  /* memory dtypes: loader, storer */
        const uint8_t *code = i < r->nin ? p + dk->loff + i : p + dk->stoff;
        uint64_t esz = tcf_decode_rd(i < r->nin ? p + dk->loff + 4 + 4 * i : code + 4, 4);
        tcf_dtype_t d = tcf_decode_scalar_type(*code);
        if (!d || esz != tcf_dtype_size(d))
            return tcf_decode_fail(op, d ? TCF_DECODE_BAD_VALUE : TCF_DECODE_UNSUPPORTED_DTYPE);
        *(i < r->nin ? &op->in_dt[i] : &op->out_dt) = d;
    }
    for (int i = 0; i < 2 && r->s[i].ty; i++) {
        tcf_scalar_t *sc = &op->s[op->nscalar++];
        sc->dt = r->s[i].ty == TCF_SC_OPMATH ? TCF_DT_F32 : t;
        sc->bits = (uint32_t)tcf_decode_rd(f + dk->soff[i], dk->ssz[i]);
        sc->f = tcf_decode_widen(sc->dt, sc->bits);
    }
    int32_t m = r->moff >= 0 ? (int32_t)tcf_decode_rd(f + r->moff, 4) : 0;
    if (m < 0 || m >= (r->moff >= 0 ? r->mcount : 1))
        return tcf_decode_fail(op, TCF_DECODE_BAD_VALUE);
    op->mode = (uint8_t)(r->mbase + m);
    if (dk->loop == TCF_LOOP_STRIDED || dk->loop == TCF_LOOP_STRIDED_CAST) {
        tcf_decode_status_t st = tcf_decode_strided(dk, p, grid, op);
        if (st != TCF_DECODE_OK)
            return tcf_decode_fail(op, st);
    }
    return TCF_DECODE_OK;
}

int tcf_decode_offset_calc_unread(const uint8_t *oc, uint32_t len, unsigned nt, uint8_t *unread)
{
    if (!oc || !unread || !nt || nt > 8 || len < 304 + 100 * nt)
        return -1;
    int32_t dims = (int32_t)tcf_decode_rd(oc, 4);
    if (dims < 0 || dims > 25)
        return -1;
    memset(unread + 4 + 12 * dims, 1, 12u * (25u - (unsigned)dims));
    memset(unread + 304 + 4 * nt * (unsigned)dims, 1, 4u * nt * (25u - (unsigned)dims));
    return 0;
}

int tcf_decode_functor_unread(const tcf_decode_kernel_t *dk, uint32_t len, uint8_t *unread)
{
    if (!dk || !dk->rule || !unread || !dk->loop || dk->loop == TCF_LOOP_CAT || dk->span > len)
        return -1;
    int strided = dk->loop == TCF_LOOP_STRIDED || dk->loop == TCF_LOOP_STRIDED_CAST;
    uint32_t end = strided ? (uint32_t)dk->span - 8   /* nvcc's closure pointer: kept */
                           : dk->doff;                /* data[] (param 2) after the functor */
    if ((strided && dk->span < 16) || dk->foff >= end)
        return -1;
    const tcf_decode_rule_t *r = dk->rule;
    uint32_t nt = strided ? (dk->foff - dk->doff) / 8 : 0;   /* the data pointers before it */
    for (uint32_t b = dk->foff; b < end; b++) {
        uint32_t at = b - dk->foff;
        int keep = r->moff >= 0 && at >= (uint32_t)r->moff && at < (uint32_t)r->moff + 4;
        for (unsigned i = 0; i < 2 && r->s[i].ty; i++)
            keep |= at >= dk->soff[i] && at < dk->soff[i] + dk->ssz[i];
        if (dk->loop == TCF_LOOP_STRIDED_CAST)   /* the dtypes[] after the functor */
            keep |= b >= dk->loff && b < dk->loff + nt;
        if (!keep)
            unread[b] = 1;
    }
    return 0;
}

int tcf_decode_resize(uint8_t *p, uint32_t params_len, const tcf_op_t *op, uint32_t n,
                      const uint32_t *sizes)
{
    int strided = op && (op->loop == TCF_LOOP_STRIDED || op->loop == TCF_LOOP_STRIDED_CAST);
    uint64_t count = 1;
    if (op && op->loop == TCF_LOOP_CAT)
        return -1;                          /* its bytes hold no N: tcf_decode_cat_resize */
    if (!p || !op || !n || n > 0x7fffffffu || params_len < 4 ||
        (int32_t)tcf_decode_rd(p, 4) != (int32_t)op->n)
        return -1;
    if (strided) {   /* (int N @0, closure @8: OffsetCalculator {int dims; IntDivider[25]}) */
        const uint8_t *oc = p + 8;
        if (!sizes || !op->it.ndim || op->it.ndim > TCF_OP_MAX_DIMS ||
            params_len < 8 + 4 + 12u * op->it.ndim || (int32_t)tcf_decode_rd(oc, 4) != op->it.ndim)
            return -1;
        for (unsigned d = 0; d < op->it.ndim; d++) {
            uint32_t m1, shift;
            if (!sizes[d] || sizes[d] > op->it.size[d] || tcf_int_divider(sizes[d], &m1, &shift))
                return -1;
            count *= sizes[d];
        }
        if (count != n)
            return -1;
        for (unsigned d = 0; d < op->it.ndim; d++) {
            uint32_t div[3] = { sizes[d], 0, 0 };
            tcf_int_divider(sizes[d], &div[1], &div[2]);
            memcpy(p + 8 + 4 + 12 * d, div, sizeof div);
        }
    } else if (n > op->n) {
        return -1;
    }
    int32_t nv = (int32_t)n;
    memcpy(p, &nv, 4);
    return 0;
}

tcf_decode_status_t tcf_decode_launch(const tcf_decode_launch_t *l, tcf_op_t *op)
{
    tcf_decode_kernel_t dk;
    tcf_decode_status_t st;
    if (!op)
        return TCF_DECODE_BAD_ARGS;
    memset(op, 0, sizeof *op);
    if (l && l->params_len && !l->params)
        return TCF_DECODE_BAD_ARGS;
    if ((st = tcf_decode_kernel(l, &dk)) != TCF_DECODE_OK)
        return st;
    return tcf_decode_apply(&dk, l->params, l->params_len, l->grid, l->block, op);
}

const char *tcf_decode_reason(tcf_decode_status_t s)
{
#define TCF_DECODE_NAME_(id, str) str,
    static const char *const names[] = { TCF_DECODE_STATUSES(TCF_DECODE_NAME_) };
#undef TCF_DECODE_NAME_
    return (unsigned)s < TCF_DECODE_NSTATUS ? names[s] : "?";
}

const char *tcf_decode_kind_name(tcf_op_kind_t k)
{
#define TCF_OP_NAME_(id) #id,
    static const char *const names[] = { TCF_OP_KINDS(TCF_OP_NAME_) };
#undef TCF_OP_NAME_
    return (unsigned)k < TCF_OP_NKIND ? names[k] : "?";
}

const char *tcf_decode_dtype_name(tcf_dtype_t d)
{
    static const char *const names[] = { "none", "f32", "f16", "bf16", "bool" };
    return (unsigned)d <= TCF_DT_BOOL ? names[d] : "?";
}

size_t tcf_decode_rule_count(void) { return TCF_DECODE_NRULES; }
const char *tcf_decode_rule_name(size_t i)
{
    return i < TCF_DECODE_NRULES ? tcf_decode_rules[i].rule : NULL;
}

void tcf_decode_describe(const tcf_op_t *op, char *buf, size_t len)
{
    static const char *const loops[] = { "?", "vec", "unrolled", "cast", "strided",
                                         "strided-cast", "cat" };
    size_t n = 0;
#define TCF_APPEND_(...) \
    (n += (size_t)snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, __VA_ARGS__))
    if (!op || !buf || !len)
        return;
    TCF_APPEND_("%s[%s] %s%u n=%u out=%s:0x%llx", tcf_decode_kind_name(op->kind),
                op->rule ? op->rule : "-", loops[op->loop <= TCF_LOOP_CAT ? op->loop : 0], op->vec,
                op->n, tcf_decode_dtype_name(op->out_dt), (unsigned long long)op->out);
    for (unsigned i = 0; i < op->nin && i < 3; i++)
        TCF_APPEND_(" in%u=%s:0x%llx", i, tcf_decode_dtype_name(op->in_dt[i]),
                    (unsigned long long)op->in[i]);
    TCF_APPEND_(" T=%s", tcf_decode_dtype_name(op->compute_dt));
    for (unsigned i = 0; i < op->nscalar && i < 2; i++)
        TCF_APPEND_(" s%u=%.9g:%s", i, (double)op->s[i].f, tcf_decode_dtype_name(op->s[i].dt));
    if (op->sarg || op->mode)
        TCF_APPEND_(" sarg=%u mode=%u", op->sarg, op->mode);
    if (op->kind == TCF_OP_CAT)
        for (unsigned i = 0; i < op->nin && i < 2; i++)
            TCF_APPEND_(" cat%u=d%u[%u,+%u)", i, op->cat_dim, op->cat_lo[i], op->cat_len[i]);
    for (unsigned d = 0; d < op->it.ndim && d < TCF_OP_MAX_DIMS; d++) {
        TCF_APPEND_(" d%u=%u:(", d, op->it.size[d]);
        for (unsigned k = 0; k <= op->nin && k < 4; k++)
            TCF_APPEND_("%s%u", k ? "," : "", op->it.stride[k][d]);
        TCF_APPEND_(")");
    }
#undef TCF_APPEND_
}
