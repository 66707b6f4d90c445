// reduce_emu.hpp: runs codegen/gen_reduce.c's kernels on the CPU, against a model of
// PyTorch 2.11's reduce_kernel order (docs/PYTORCH-REDUCE.md, Appendix A's emu.py, ported).
//
// tests/unit/test_reduce_emu.c writes a C++ file that includes this header, then each
// generated kernel (its NVRTC prelude taken out: this header gives the same names host
// definitions) in its own namespace, then a table of cases and a main calling emu_main,
// and compiles and runs it. A CUDA block runs as real threads: __syncthreads is a barrier of
// the block, __shfl_down_sync a barrier of the warp around an exchange, __shared__ a
// static (blocks run one after another). What this checks is the order: the same
// accumulators, trees and head/tail lanes as the model, on misaligned rows and edge values.
// What it cannot check is the GPU itself: tests/gpu/reduce_check.py compares with PyTorch.
#include <csetjmp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <ucontext.h>
#include <vector>

// ---- CUDA, on the host ----------------------------------------------------------------
// A block's threads are coroutines on one OS thread (ucontext stacks, switched with
// _setjmp/_longjmp: no system call per switch): each runs until it reaches a barrier,
// then the next; a round ends when all have. Every barrier of these kernels is reached by
// every thread of the block (no divergent __syncthreads, shuffles outside branches), so a
// shuffle can use the block's barrier too.
#define __global__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(n)

struct emu_dim3 { unsigned x, y, z; };
static emu_dim3 threadIdx, blockIdx, blockDim;

struct emu_block {
    unsigned n, bw, cur, done;
    std::vector<ucontext_t> uc;
    struct jb_t { jmp_buf j; };
    std::vector<jb_t> jb;
    std::vector<char> started, finished;
    std::vector<std::unique_ptr<char[]>> stack;
    std::vector<uint64_t> xchg;          // one slot per thread, for shuffles
    jmp_buf sched;
    ucontext_t main;
    void (*body)(void *);
    void *arg;
};
static emu_block *emu_cur;

static void emu_barrier()                // back to the scheduler until the round ends
{
    emu_block *b = emu_cur;
    if (!_setjmp(b->jb[b->cur].j))
        _longjmp(b->sched, 1);
}
static inline void __syncthreads() { emu_barrier(); }

// A warp exchange: every thread of the block posts v, then each takes the value of lane
// src_of(its lane) of its own warp (a barrier of the block around it), or keeps its own
// when that is no lane (-1) or past the block.
template <typename T, typename F> static inline T emu_shfl(T v, F src_of)
{
    emu_block *b = emu_cur;
    unsigned t = b->cur, lane = t % 32, w = t / 32;
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof v);
    b->xchg[t] = bits;
    emu_barrier();
    T r = v;
    int src = src_of(lane);
    if (src >= 0 && w * 32 + (unsigned)src < b->n)
        std::memcpy(&r, &b->xchg[w * 32 + (unsigned)src], sizeof r);
    emu_barrier();
    return r;
}

template <typename T> static inline T __shfl_down_sync(unsigned, T v, int off, int width)
{
    return emu_shfl(v, [=](unsigned lane) {
        return lane + (unsigned)off < (unsigned)width ? (int)(lane + (unsigned)off) : -1;
    });
}

// within segments of `width` lanes (a power of two up to 32), as the row softmaxes'
// butterflies use it (codegen/gen_softmax.c)
template <typename T> static inline T __shfl_xor_sync(unsigned, T v, int mask, int width)
{
    return emu_shfl(v, [=](unsigned lane) {
        unsigned src = lane ^ (unsigned)mask, seg = ~((unsigned)width - 1);
        return (src & seg) == (lane & seg) ? (int)src : -1;
    });
}

static void emu_entry()
{
    emu_block *b = emu_cur;
    b->body(b->arg);
    b->finished[b->cur] = 1, b->done++;
    _longjmp(b->sched, 1);               // never returns into the finished coroutine
}

// Runs body(arg) as each of n threads of a bw-wide block, round by round.
static void emu_run_block(unsigned n, unsigned bw, void (*body)(void *), void *arg)
{
    emu_block b;
    b.n = n, b.bw = bw, b.done = 0, b.body = body, b.arg = arg;
    b.uc.resize(n), b.jb.resize(n), b.started.assign(n, 0), b.finished.assign(n, 0);
    b.xchg.assign(n, 0);
    blockDim = { bw, n / bw, 1 };
    emu_cur = &b;
    const size_t stack = 64 << 10;
    while (b.done < n)
        for (volatile unsigned t = 0; t < n; t++) {
            if (b.finished[t])
                continue;
            b.cur = t, threadIdx = { t % bw, t / bw, 0 };
            if (_setjmp(b.sched))
                continue;                // it reached a barrier, or finished
            if (!b.started[t]) {
                b.started[t] = 1;
                b.stack.emplace_back(new char[stack]);
                getcontext(&b.uc[t]);
                b.uc[t].uc_stack.ss_sp = b.stack.back().get();
                b.uc[t].uc_stack.ss_size = stack;
                b.uc[t].uc_link = nullptr;
                makecontext(&b.uc[t], emu_entry, 0);
                swapcontext(&b.main, &b.uc[t]);
            } else {
                _longjmp(b.jb[t].j, 1);
            }
        }
    emu_cur = nullptr;
}

static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline float __int_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
static inline float __fsqrt_rn(float a) { return std::sqrt(a); }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __frcp_rn(float a) { return 1.0f / a; }
// the GPU's is an approximation (MUFU.RSQ): the model calls this one too, so what is
// compared is the order around it
static inline float rsqrtf(float a) { return 1.0f / std::sqrt(a); }

// the prelude's names (codegen/gen_math.c), with the conversions' device semantics:
// exact widening, round-to-nearest-even narrowing, a NaN narrowed is 0x7FFF
typedef unsigned short tcf_h;
typedef unsigned short tcf_b;
typedef unsigned char tcf_u8;
template <typename T, int V, int A> struct alignas(A) tcf_pack { T v[V]; };
static inline float tcf_h2f(tcf_h h)
{
    unsigned s = (h & 0x8000u) << 16, e = (h >> 10) & 31, m = h & 0x3ffu;
    if (e == 31) return __uint_as_float(s | 0x7f800000u | m << 13);
    if (e) return __uint_as_float(s | (e + 112) << 23 | m << 13);
    float f = std::ldexp((float)m, -24);
    return s ? -f : f;
}
static inline tcf_h tcf_f2h(float f)
{
    if (f != f) return 0x7fff;
    unsigned u = __float_as_uint(f), s = (u >> 16) & 0x8000u;
    float a = std::fabs(f);
    if (a >= 65520.0f) return (tcf_h)(s | 0x7c00u);       // rounds to inf
    if (a < 6.103515625e-05f) {                            // subnormal: multiples of 2^-24
        float q = std::nearbyint(a * 16777216.0f);         // exact scaling, RNE
        return (tcf_h)(s | (unsigned)q);
    }
    unsigned e = ((u >> 23) & 255) - 112, m = u & 0x7fffffu;
    unsigned r = e << 10 | m >> 13, rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) r++;
    return (tcf_h)(s | r);
}
static inline float tcf_b2f(tcf_b b) { return __uint_as_float((unsigned)b << 16); }
static inline tcf_b tcf_f2b(float f)
{
    if (f != f) return 0x7fff;
    unsigned u = __float_as_uint(f);
    return (tcf_b)((u + ((u >> 16) & 1u) + 0x7fffu) >> 16);
}
static inline tcf_h tcf_hneg(tcf_h h) { return (tcf_h)(h ^ 0x8000u); }
static inline float tcf_fbar(float x, unsigned z) { return __uint_as_float(__float_as_uint(x) | z); }

// ---- the cases ------------------------------------------------------------------------
enum { E_F32 = 1, E_F16 = 2, E_BF16 = 3 };          // tcf_dtype_t's values
enum { E_SUM = 1, E_MEAN, E_AMAX, E_AMIN, E_NORM2 }; // tcf_red_op_t's values

struct tcf_rargs_host {                               // tcf_reduce_args_t
    unsigned long long src, dst;
    unsigned num_inputs, num_outputs, factor, osize[8], ostride[8][2], pad_;
    unsigned long long buf[8];
    unsigned s[8];
};
static_assert(sizeof(tcf_rargs_host) == 224, "tcf_reduce_args_t");

struct emu_case {
    const char *name;
    void (*kernel)(const void *args);
    int op, root, in_dt, out_dt, acc_dt, vec, split_y;
    unsigned bw, bh, vt0, ivs, M, K;
    unsigned odims, osize[2], rstride[2];   // row r: digits over osize; input offset
                                            // sum digit * rstride[d] elements
    unsigned base_shift, kind, seed;        // src misaligned by base_shift elements
    int spliced;                            // the reduced f32 tensor is x*x of buf[0] (x_dt,
    int x_dt;                               // prologue); the row pass stores x * v to buf[1]
};

static unsigned esize(int dt) { return dt == E_F32 ? 4 : 2; }
static float tof(int dt, uint32_t b)
{
    return dt == E_F32 ? __uint_as_float(b) : dt == E_F16 ? tcf_h2f((tcf_h)b) : tcf_b2f((tcf_b)b);
}
static uint32_t fromf(int dt, float f)
{
    return dt == E_F32 ? __float_as_uint(f) : dt == E_F16 ? tcf_f2h(f) : tcf_f2b(f);
}

// ---- the model: emu.py's emulate() for one row ------------------------------------------
struct emu_model {
    const emu_case &c;
    bool minmax() const { return c.op == E_AMAX || c.op == E_AMIN; }
    uint32_t ident() const
    {
        if (!minmax()) return 0;
        uint32_t inf = c.acc_dt == E_F32 ? 0x7f800000u : c.acc_dt == E_F16 ? 0x7c00u : 0x7f80u;
        uint32_t sign = c.acc_dt == E_F32 ? 0x80000000u : 0x8000u;
        return c.op == E_AMAX ? inf | sign : inf;
    }
    uint32_t comb(uint32_t a, uint32_t b) const
    {
        if (!minmax()) return __float_as_uint(__uint_as_float(a) + __uint_as_float(b));
        float fa = tof(c.acc_dt, a), fb = tof(c.acc_dt, b);
        bool left = std::isnan(fa) || (c.op == E_AMAX ? fa > fb : fa < fb);
        return left ? a : b;
    }
    uint32_t red(uint32_t acc, uint32_t xb) const   // xb: the input element's bits
    {
        if (minmax()) return comb(acc, xb);
        float x = tof(c.in_dt, xb);
        if (c.op == E_NORM2) return __float_as_uint(std::fma(x, x, __uint_as_float(acc)));
        return __float_as_uint(__uint_as_float(acc) + x);
    }
    uint32_t shfl(uint32_t b) const   // bfloat16 max/min through a shuffle: NaN -> 0x7FFF
    {
        return c.acc_dt == E_BF16 && std::isnan(tof(E_BF16, b)) ? 0x7fffu : b;
    }
    // halving tree over v[0..n), the warp stage (offsets < 32) through shfl when warp
    uint32_t tree(std::vector<uint32_t> v, bool warp) const
    {
        for (size_t off = v.size() / 2; off >= 1; off /= 2)
            for (size_t i = 0; i < off; i++)
                v[i] = comb(v[i], warp && off < 32 ? shfl(v[i + off]) : v[i + off]);
        return v[0];
    }
    // x: the row's elements (bits), shift: its start past a vector boundary (elements)
    uint32_t row(const std::vector<uint32_t> &x, unsigned shift, uint32_t factor) const
    {
        unsigned bhs = c.split_y ? c.bh : 1, G = c.bw * bhs, K = c.K;
        std::vector<uint32_t> v(G);
        if (c.vec) {
            unsigned V = c.ivs, base = 0, end = K;
            std::vector<std::vector<uint32_t>> acc(G, std::vector<uint32_t>(V, ident()));
            if (shift > 0) {
                base = V - shift, end = K - base;
                for (unsigned t = shift; t < V; t++) acc[t][0] = red(acc[t][0], x[t - shift]);
            }
            unsigned nv = end / V;
            for (unsigned j = 0; j < nv; j++)
                for (unsigned i = 0; i < V; i++)
                    acc[j % G][i] = red(acc[j % G][i], x[base + j * V + i]);
            for (unsigned t = 0; t < end - nv * V; t++)
                acc[t][0] = red(acc[t][0], x[base + nv * V + t]);
            for (unsigned g = 0; g < G; g++) {
                v[g] = acc[g][0];
                for (unsigned i = 1; i < V; i++) v[g] = comb(v[g], acc[g][i]);
            }
        } else {
            std::vector<std::vector<uint32_t>> acc(G, std::vector<uint32_t>(c.vt0, ident()));
            for (unsigned j = 0; j < K; j++)
                acc[j % G][(j / G) % c.vt0] = red(acc[j % G][(j / G) % c.vt0], x[j]);
            for (unsigned g = 0; g < G; g++) {
                v[g] = acc[g][0];
                for (unsigned i = 1; i < c.vt0; i++) v[g] = comb(v[g], acc[g][i]);
            }
        }
        std::vector<uint32_t> ys(bhs);                   // block_x_reduce, then block_y
        for (unsigned y = 0; y < bhs; y++)
            ys[y] = tree(std::vector<uint32_t>(v.begin() + y * c.bw, v.begin() + (y + 1) * c.bw), true);
        uint32_t r = tree(ys, false);
        if (minmax()) return r;
        float f = __uint_as_float(r);
        if (c.op == E_MEAN) f = f * __uint_as_float(factor);
        if (c.op == E_NORM2 && c.root) f = std::sqrt(f);
        return fromf(c.out_dt, f);
    }
};

// ---- inputs --------------------------------------------------------------------------
// n buffers of cap bytes (64-aligned), every byte 0xab, so that a store past a result
// shows; freed with the object.
struct emu_bufs {
    std::vector<unsigned char *> p;
    emu_bufs(unsigned n, size_t cap)
    {
        for (unsigned i = 0; i < n; i++) {
            p.push_back((unsigned char *)std::aligned_alloc(64, (cap + 63) / 64 * 64));
            std::memset(p.back(), 0xab, cap);
        }
    }
    ~emu_bufs() { for (unsigned char *q : p) std::free(q); }
    emu_bufs(const emu_bufs &) = delete;
    emu_bufs &operator=(const emu_bufs &) = delete;
    unsigned char *operator[](unsigned i) const { return p[i]; }
};

struct emu_rng {
    uint64_t s;
    uint32_t next() { s = s * 6364136223846793005ull + 1442695040888963407ull; return (uint32_t)(s >> 33); }
    float uni() { return (next() + 0.5f) / 2147483648.0f; }
    float normal() { return std::sqrt(-2.0f * std::log(uni())) * std::cos(6.2831853f * uni()); }
};

// kind 0: wide dynamic range; 1: a fifth of the elements +-0, +-inf, NaNs with payloads,
// subnormals; 2: +-0 only, and a row of -0
static uint32_t emu_value(emu_rng &g, int dt, unsigned kind, unsigned row)
{
    static const uint32_t s32[] = { 0, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00001u,
                                    0xffc00002u, 0x7fc12345u, 0x00000001u, 0x807fffffu };
    static const uint32_t s16h[] = { 0, 0x8000, 0x7c00, 0xfc00, 0x7e01, 0xfe02, 0x7e33, 0x0001, 0x83ff };
    static const uint32_t s16b[] = { 0, 0x8000, 0x7f80, 0xff80, 0x7fc1, 0xffc2, 0x7fd3, 0x0001, 0x807f };
    if (kind == 2)
        return row == 0 || g.next() % 2 ? (dt == E_F32 ? 0x80000000u : 0x8000u) : 0;
    if (kind == 1 && g.next() % 5 == 0) {
        unsigned i = g.next() % 9;
        return dt == E_F32 ? s32[i] : dt == E_F16 ? s16h[i] : s16b[i];
    }
    float f = g.normal() * std::exp(g.normal() * (dt == E_F16 ? 1.2f : 2.5f));
    f = f > 6e4f ? 6e4f : f < -6e4f ? -6e4f : f;
    return fromf(dt, f);
}

// ---- running a kernel -------------------------------------------------------------------
struct emu_launch_arg { const emu_case *c; const tcf_rargs_host *a; unsigned grid; };

static void emu_thread(void *p)
{
    const emu_launch_arg *l = (const emu_launch_arg *)p;
    for (unsigned b = 0; b < l->grid; b++) {
        blockIdx = { b, 0, 0 };
        l->c->kernel(l->a);
        emu_barrier();                   // the next block reuses the static shared memory
    }
}

static void emu_launch(const emu_case &c, const tcf_rargs_host &a, unsigned grid)
{
    emu_launch_arg l{ &c, &a, grid };
    emu_run_block(c.bw * c.bh, c.bw, emu_thread, &l);
}

static int emu_run(const emu_case &c)
{
    // x: what memory holds (the input, or the spliced prologue's source); the reduced
    // tensor is in_dt, at src (virtual when spliced: only its alignment counts)
    int xdt = c.spliced ? c.x_dt : c.in_dt;
    unsigned xes = esize(xdt), ies = esize(c.in_dt), oes = esize(c.out_dt), M = c.M, K = c.K;
    // rows: r = d0 + osize[0] * d1, at element d0*rstride[0] + d1*rstride[1]
    std::vector<size_t> roff(M);
    size_t span = 0;
    for (unsigned r = 0; r < M; r++) {
        unsigned d0 = c.odims ? r % c.osize[0] : 0, d1 = c.odims > 1 ? r / c.osize[0] : 0;
        roff[r] = (size_t)d0 * c.rstride[0] + (size_t)d1 * c.rstride[1];
        span = roff[r] + K > span ? roff[r] + K : span;
    }
    size_t cap = ((span + c.base_shift + 64) * 4 + 63) / 64 * 64;
    unsigned char *xmem = (unsigned char *)std::aligned_alloc(64, cap);
    unsigned char *vmem = (unsigned char *)std::aligned_alloc(64, cap);
    unsigned char *x = xmem + (size_t)c.base_shift * xes;
    unsigned char *src = c.spliced ? vmem + (size_t)c.base_shift * ies : x;
    std::vector<unsigned char> out(M * oes + 64, 0xab), pass((span + 64) * 4, 0xab);
    emu_rng g{ c.seed * 0x9e3779b97f4a7c15ull + 1 };
    std::vector<std::vector<uint32_t>> rows(M, std::vector<uint32_t>(K));   // reduced elements
    for (unsigned r = 0; r < M; r++)
        for (unsigned j = 0; j < K; j++) {
            uint32_t b = emu_value(g, xdt, c.kind, r);
            std::memcpy(x + (roff[r] + j) * xes, &b, xes);
            float f = tof(xdt, b);
            rows[r][j] = c.spliced ? __float_as_uint(f * f) : b;
        }
    tcf_rargs_host a{};
    a.src = (unsigned long long)(uintptr_t)src;
    a.dst = (unsigned long long)(uintptr_t)out.data();
    a.num_inputs = K, a.num_outputs = M;
    a.factor = __float_as_uint((float)M / (float)((double)M * K));
    for (unsigned d = 0; d < c.odims; d++)
        a.osize[d] = c.osize[d], a.ostride[d][0] = (d ? c.osize[0] : 1) * oes,
        a.ostride[d][1] = c.rstride[d] * ies;
    a.buf[0] = (unsigned long long)(uintptr_t)x;
    a.buf[1] = (unsigned long long)(uintptr_t)pass.data();
    emu_model model{ c };
    unsigned rows_per_block = c.split_y ? 1 : c.bh;
    emu_launch(c, a, (M + rows_per_block - 1) / rows_per_block);
    int bad = 0;
    for (unsigned r = 0; r < M && bad < 3; r++) {
        uintptr_t start = (uintptr_t)src + roff[r] * ies;
        unsigned shift = c.vec ? (unsigned)(start % (c.ivs * ies) / ies) : 0;
        uint32_t want = model.row(rows[r], shift, a.factor), got = 0;
        std::memcpy(&got, out.data() + (size_t)r * oes, oes);
        // sums: a NaN is a NaN (the host's adds keep one operand's payload and the
        // compiler may commute them; the GPU's give the canonical NaN either way)
        bool nan2 = !model.minmax() && std::isnan(tof(c.out_dt, got)) && std::isnan(tof(c.out_dt, want));
        if (got != want && !nan2) {
            std::printf("FAIL %s: row %u of %u (shift %u): kernel 0x%x, model 0x%x\n", c.name, r, M,
                        shift, got, want);
            bad++;
        }
        for (unsigned j = 0; c.spliced && j < K && bad < 3; j++) {   // x * v, rounded once
            uint32_t xb = 0, pb;
            std::memcpy(&xb, x + (roff[r] + j) * xes, xes);
            std::memcpy(&pb, pass.data() + (roff[r] + j) * 4, 4);
            uint32_t w = __float_as_uint(tof(xdt, xb) * __uint_as_float(want));
            if (pb != w) {
                std::printf("FAIL %s: row pass, row %u element %u: 0x%x, want 0x%x\n", c.name, r, j, pb, w);
                bad++;
            }
        }
    }
    std::free(xmem), std::free(vmem);
    return bad == 0;
}

// The C++ file's main calls this with its table of cases.
// Every case of a table through run(case, its index), and the line emu_run.h's
// emu_build_run reads: "<stem>_emu: P passed, F failed". The exit status says whether all
// passed.
template <typename C, typename R>
static int emu_cases_main(const char *stem, const C *cases, size_t n, R run)
{
    unsigned passed = 0, failed = 0;
    for (size_t i = 0; i < n; i++)
        run(cases[i], (unsigned)i) ? passed++ : failed++;
    std::printf("%s_emu: %u passed, %u failed\n", stem, passed, failed);
    return failed != 0;
}

static int emu_main(const emu_case *cases, size_t n)
{
    return emu_cases_main("reduce", cases, n, [](const emu_case &c, unsigned) { return emu_run(c); });
}
