// layernorm_emu.hpp: runs codegen/gen_layernorm.c's fused kernels on the CPU (with
// reduce_emu.hpp's CUDA on the host) against a model of PyTorch 2.11's
// vectorized_layer_norm_kernel (docs/PYTORCH-LAYERNORM.md §2), written here thread by
// thread: 128 Welford states, thread t folding the vectors t, t + 128, ... element by
// element, each warp's lanes by a tree of shuffles down (a lane past the warp keeps its
// own), the warps as (W0 + W2) + (W1 + W3), var = sigma2 / N, rstd = rsqrtf(var + eps).
// Included by the C++ file tests/unit/test_layernorm.c writes, after its kernels and its
// table `lcases`.
//
// The groups (test_layernorm.c's emu_window): x (role 1) -> neg -> norm with gamma (role
// 4) and beta (role 5) as the case has them -> y (role 3); mean (role 6) and rstd (role
// 7) through the reduction's own buffers; the neg's buffer (role 2) is freed, so never
// stored. What this checks is the order and the mapping (threads, tails of rows whose
// vector count is no multiple of 128, the warps' and block's trees, the per-row stores);
// what the GPU computes is tests/gpu/fuse_layernorm.py's and verification's.
#include <cstdint>
#include <vector>

struct ln_w { float m, s, c; };

static bool ln_same(uint32_t a, uint32_t b)   // float bits, or both NaN
{
    return a == b || (std::isnan(__uint_as_float(a)) && std::isnan(__uint_as_float(b)));
}

// cuWelfordCombine(B = own, A = other), or the RMS sum
static ln_w ln_comb(bool rms, ln_w B, ln_w A)
{
    if (rms)
        return { 0.0f, B.s + A.s, 0.0f };
    float d = B.m - A.m, c = A.c + B.c;
    if (!(c > 0.0f))
        return { 0.0f, 0.0f, c };
    float k = 1.0f / c, nA = A.c * k, nB = B.c * k;
    return { std::fma(nA, A.m, B.m * nB), std::fma((d * d) * A.c, nB, A.s + B.s), c };
}

// One row: in K floats (the norm's input), g and b K floats or null; out K floats, and
// the row's mean and rstd.
static void ln_model(bool rms, unsigned K, float eps, const float *in, const float *g,
                     const float *b, float *out, float *mean, float *rstd)
{
    std::vector<ln_w> w(128, ln_w{ 0.0f, 0.0f, 0.0f });
    for (unsigned t = 0; t < 128; t++)
        for (unsigned i = t; i < K / 4; i += 128)
            for (unsigned e = 0; e < 4; e++) {
                float v = in[4 * i + e];
                ln_w &s = w[t];
                if (rms) {
                    s.s = std::fma(v, v, s.s);
                    continue;
                }
                float d = v - s.m, c = s.c + 1.0f, m = std::fma(1.0f / c, d, s.m);
                s.s = std::fma(d, v - m, s.s), s.m = m, s.c = c;
            }
    ln_w wy[4];
    for (unsigned y = 0; y < 4; y++) {
        std::vector<ln_w> l(w.begin() + 32 * y, w.begin() + 32 * (y + 1)), n(32);
        for (unsigned off = 16; off > 0; off /= 2) {
            for (unsigned lane = 0; lane < 32; lane++)
                n[lane] = ln_comb(rms, l[lane], lane + off < 32 ? l[lane + off] : l[lane]);
            l = n;
        }
        wy[y] = l[0];
    }
    ln_w t = ln_comb(rms, ln_comb(rms, wy[0], wy[2]), ln_comb(rms, wy[1], wy[3]));
    float mu = t.m, r = rsqrtf(t.s / (float)K + eps);
    for (unsigned j = 0; j < K; j++) {
        float n = rms ? r * in[j] : r * (in[j] - mu);
        out[j] = g && b ? std::fma(g[j], n, b[j]) : g ? g[j] * n : n;
    }
    *mean = mu, *rstd = r;
}

static int ln_run(const lcase &c, unsigned idx)
{
    const unsigned K = c.K, M = c.M, es = c.dt == E_F32 ? 4 : 2;
    const size_t cap = (size_t)K * M * 4 + 256;
    emu_bufs mem(8, cap);
    emu_rng g{ idx * 0x9e3779b97f4a7c15ull + 17 };
    for (unsigned e = 0; e < K * M; e++) {
        unsigned kind = e / K % 4 == 3;   // edge values in every fourth row
        uint32_t v = emu_value(g, c.dt, kind, 1);
        std::memcpy(mem[1] + es * e, &v, es);
    }
    for (unsigned e = 0; e < K; e++) {
        uint32_t ga = emu_value(g, c.dt, 0, 1), be = emu_value(g, c.dt, 0, 1);
        std::memcpy(mem[4] + es * e, &ga, es), std::memcpy(mem[5] + es * e, &be, es);
    }
    const float eps = 1e-5f;
    rows_args a{};
    a.r.src = 0x7f0002000000ull, a.r.dst = 0x7f0003000000ull;
    a.r.num_inputs = K, a.r.num_outputs = M, a.r.factor = __float_as_uint(eps);
    a.r.osize[0] = M, a.r.ostride[0][0] = a.r.ostride[0][1] = K * es;
    a.r.buf[0] = c.rms ? 0 : (unsigned long long)(uintptr_t)mem[6];
    a.r.buf[1] = (unsigned long long)(uintptr_t)mem[7];
    for (unsigned b = 0; b < c.nbufs; b++)
        a.buf[b] = (unsigned long long)(uintptr_t)mem[c.role[b]], a.st[b][0] = c.st[b][0],
        a.st[b][1] = c.st[b][1];
    emu_case ec{};
    ec.name = "layernorm", ec.kernel = c.run, ec.bw = 32, ec.bh = 4, ec.M = M, ec.K = K;
    emu_launch(ec, *(const tcf_rargs_host *)&a, M);

    int bad = 0;
    std::vector<float> in(K), ga(K), be(K), want(K);
    for (unsigned j = 0; j < K; j++) {
        uint32_t u = 0, v = 0;
        std::memcpy(&u, mem[4] + es * j, es), std::memcpy(&v, mem[5] + es * j, es);
        ga[j] = tof(c.dt, u), be[j] = tof(c.dt, v);
    }
    for (unsigned r = 0; r < M && bad < 4; r++) {
        for (unsigned j = 0; j < K; j++) {
            uint32_t u = 0;
            std::memcpy(&u, mem[1] + es * ((size_t)r * K + j), es);
            // the neg the group computes first, stored in dt by eager
            in[j] = tof(c.dt, fromf(c.dt, -tof(c.dt, u)));
        }
        float mu, rs;
        ln_model(c.rms, K, eps, in.data(), c.affine & 1 ? ga.data() : nullptr,
                 c.affine & 2 ? be.data() : nullptr, want.data(), &mu, &rs);
        for (unsigned j = 0; j < K && bad < 4; j++) {
            uint32_t got = 0, w = fromf(c.dt, want[j]);
            std::memcpy(&got, mem[3] + es * ((size_t)r * K + j), es);
            if (got != w && !(std::isnan(tof(c.dt, got)) && std::isnan(tof(c.dt, w)))) {
                std::printf("FAIL %s K=%u M=%u affine %u row %u element %u: kernel 0x%x, model 0x%x\n",
                            c.rms ? "rms" : "ln", K, M, c.affine, r, j, got, w);
                bad++;
            }
        }
        uint32_t gm, gr;
        std::memcpy(&gm, mem[6] + 4 * r, 4), std::memcpy(&gr, mem[7] + 4 * r, 4);
        if ((!c.rms && !ln_same(gm, __float_as_uint(mu))) || !ln_same(gr, __float_as_uint(rs))) {
            std::printf("FAIL %s K=%u M=%u row %u: mean 0x%08x rstd 0x%08x, model 0x%08x 0x%08x\n",
                        c.rms ? "rms" : "ln", K, M, r, gm, gr, __float_as_uint(mu), __float_as_uint(rs));
            bad++;
        }
    }
    uint32_t end, neg, mend, rend, m0;
    std::memcpy(&end, mem[3] + es * (size_t)K * M, 4);
    std::memcpy(&neg, mem[2], 4);
    std::memcpy(&mend, mem[6] + 4 * M, 4), std::memcpy(&rend, mem[7] + 4 * M, 4);
    std::memcpy(&m0, mem[6], 4);
    if (end != 0xababababu || neg != 0xababababu || mend != 0xababababu || rend != 0xababababu ||
        (c.rms && m0 != 0xababababu)) {   // nothing past the rows; no dead store; RMS: no mean
        std::printf("FAIL %s K=%u M=%u: a store outside the results\n", c.rms ? "rms" : "ln", K, M);
        bad++;
    }
    return bad == 0;
}

int main() { return emu_cases_main("layernorm", lcases, sizeof lcases / sizeof lcases[0], ln_run); }
