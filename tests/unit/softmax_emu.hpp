// softmax_emu.hpp: runs codegen/gen_softmax.c's fused kernels on the CPU (with
// reduce_emu.hpp's CUDA on the host) against a model of PyTorch 2.11's softmax_warp_forward
// and softmax_warp_backward (PersistentSoftmax.cuh), written here lane by lane: WS lanes a
// row, element e = lane + it * WS, padding -inf (forward) or 0 (backward), each lane's
// elements left to right, then butterflies over the lanes. Included by the C++ file
// tests/unit/test_softmax.c writes, after its kernels and its table `scases`.
//
// The groups (test_softmax.c's emu_window): forward, x (role 1) -> neg -> softmax or
// log_softmax -> p (role 3); backward, g (role 1) -> neg -> softmax backward with the
// forward's output o (role 4) -> gi (role 3); the neg's own buffer (role 2) is freed, so
// never stored. Float throughout: what this checks is the order and the mapping (rows,
// lanes, two rows a warp, tails, padding), with the host's expf and logf on both sides;
// what the GPU computes is tests/gpu/fuse_softmax.py's and verification's.
#include <cstdint>
#include <limits>
#include <vector>

static bool sm_same(uint32_t a, uint32_t b)   // bits, or both NaN
{
    return a == b || (std::isnan(__uint_as_float(a)) && std::isnan(__uint_as_float(b)));
}

// One row of the model: in (and o for the backward) K floats; out K floats.
static void sm_model(int op, unsigned K, unsigned l2e, const float *in, const float *o, float *out)
{
    const unsigned np2 = 1u << l2e, WS = np2 < 32 ? np2 : 32, IT = np2 / WS;
    const float ninf = -std::numeric_limits<float>::infinity();
    std::vector<float> x(np2), y(np2), part(WS), nxt(WS);
    for (unsigned lane = 0; lane < WS; lane++)
        for (unsigned it = 0; it < IT; it++) {
            unsigned e = lane + it * WS;
            bool in_row = e < K;
            x[e] = in_row ? in[e] : (op < 2 ? ninf : 0.0f);
            y[e] = in_row && op >= 2 ? o[e] : 0.0f;
        }
    auto butterfly = [&](bool max) {
        for (unsigned off = WS / 2; off > 0; off /= 2) {
            for (unsigned lane = 0; lane < WS; lane++) {
                float a = part[lane], b = part[lane ^ off];
                nxt[lane] = max ? (a < b ? b : a) : a + b;
            }
            part = nxt;
        }
    };
    if (op < 2) {   // forward: 0 softmax, 1 log_softmax
        for (unsigned lane = 0; lane < WS; lane++) {
            float m = x[lane];
            for (unsigned it = 0; it < IT; it++)
                m = m > x[lane + it * WS] ? m : x[lane + it * WS];
            part[lane] = m;
        }
        butterfly(true);
        const float mx = part[0];
        for (unsigned lane = 0; lane < WS; lane++) {
            float s = 0.0f;
            for (unsigned it = 0; it < IT; it++) {
                float &v = x[lane + it * WS];
                if (op == 1) {
                    s += expf(v - mx);
                } else {
                    v = expf(v - mx);
                    s += v;
                }
            }
            part[lane] = s;
        }
        butterfly(false);
        float sum = part[0];
        if (op == 1)
            sum = logf(sum);
        for (unsigned e = 0; e < K; e++)
            out[e] = op == 1 ? x[e] - mx - sum : sum == 0.0f ? __uint_as_float(0x7fc00000u) : x[e] / sum;
    } else {        // backward: 2 softmax's (grad is grad * out already), 3 log_softmax's
        for (unsigned lane = 0; lane < WS; lane++) {
            float s = 0.0f;
            for (unsigned it = 0; it < IT; it++)
                s += x[lane + it * WS];
            part[lane] = s;
        }
        butterfly(false);
        const float sum = part[0];
        for (unsigned e = 0; e < K; e++)
            out[e] = x[e] - (op == 3 ? expf(y[e]) : y[e]) * sum;   // not contracted here
                                                                  // (-ffp-contract=off)
    }
}

static int sm_run(const scase &c, unsigned idx)
{
    const unsigned K = c.K, M = c.M;
    const size_t cap = (size_t)K * M * 4 + 256;
    emu_bufs mem(5, cap);
    emu_rng g{ idx * 0x9e3779b97f4a7c15ull + 11 };
    for (unsigned e = 0; e < K * M; e++) {
        unsigned kind = e / K % 4 == 3;   // edge values in every fourth row
        uint32_t a = emu_value(g, E_F32, kind, 1), b = emu_value(g, E_F32, 0, 1);
        std::memcpy(mem[1] + 4 * e, &a, 4), std::memcpy(mem[4] + 4 * e, &b, 4);
    }
    rows_args a{};
    a.r.src = 0x7f0002000000ull, a.r.dst = 0x7f0003000000ull;
    a.r.num_inputs = K, a.r.num_outputs = M;
    a.r.osize[0] = M, a.r.ostride[0][0] = a.r.ostride[0][1] = K * 4;
    for (unsigned b = 0; b < c.nbufs; b++)
        a.buf[b] = (unsigned long long)(uintptr_t)mem[c.role[b]], a.st[b][0] = c.st[b][0],
        a.st[b][1] = c.st[b][1];
    emu_case ec{};
    ec.name = "softmax", ec.kernel = c.run, ec.bw = c.bw, ec.bh = c.bh, ec.M = M, ec.K = K;
    unsigned per = c.bh * ((1u << c.l2e) <= 128 ? 2u : 1u);
    emu_launch(ec, *(const tcf_rargs_host *)&a, (M + per - 1) / per);

    int bad = 0;
    std::vector<float> in(K), o(K), want(K);
    for (unsigned r = 0; r < M && bad < 4; r++) {
        for (unsigned j = 0; j < K; j++) {
            float x, y;
            std::memcpy(&x, mem[1] + 4 * ((size_t)r * K + j), 4);
            std::memcpy(&y, mem[4] + 4 * ((size_t)r * K + j), 4);
            in[j] = -x, o[j] = y;   // the neg the group computes first
        }
        sm_model(c.op, K, c.l2e, in.data(), o.data(), want.data());
        for (unsigned j = 0; j < K && bad < 4; j++) {
            uint32_t got, w = __float_as_uint(want[j]);
            std::memcpy(&got, mem[3] + 4 * ((size_t)r * K + j), 4);
            if (!sm_same(got, w)) {
                std::printf("FAIL op %d K=%u M=%u row %u element %u: kernel 0x%08x, model 0x%08x\n",
                            c.op, K, M, r, j, got, w);
                bad++;
            }
        }
    }
    uint32_t end, neg;
    std::memcpy(&end, mem[3] + 4 * (size_t)K * M, 4);
    std::memcpy(&neg, mem[2], 4);
    if (end != 0xababababu || neg != 0xababababu) {   // nothing past the rows; no dead store
        std::printf("FAIL op %d K=%u M=%u: a store outside the result (0x%08x, 0x%08x)\n", c.op, K,
                    M, end, neg);
        bad++;
    }
    return bad == 0;
}

int main() { return emu_cases_main("softmax", scases, sizeof scases / sizeof scases[0], sm_run); }
