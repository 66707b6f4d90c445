// rows_emu.hpp: runs codegen/gen_rows.c's fused LlamaRMSNorm kernels on the CPU (with
// reduce_emu.hpp's CUDA on the host) against a model of the eager chain. Included by the
// C++ file tests/unit/test_rows.c writes, after its kernels and its table `rcases`.
//
// The buffers are the roles of test_rows.c's rms_window (MB(role) there): x 0, res 1,
// h 2, xf 3, sq 4 (the reduced tensor: only its alignment counts), y 5, yb 7, w 8, out 9,
// mean 20, v 21, r 22. Scalars: s[0] the residual add's alpha, s[1] eps, s[2] its alpha.
#include <cstdint>

enum { R_X = 0, R_RES = 1, R_H = 2, R_XF = 3, R_SQ = 4, R_Y = 5, R_YB = 7, R_W = 8, R_OUT = 9,
       R_MEAN = 20, R_V = 21, R_R = 22, R_N = 23 };

static bool rows_same(uint32_t a, uint32_t b, int dt)   // bits, or both NaN
{
    return a == b || (std::isnan(tof(dt, a)) && std::isnan(tof(dt, b)));
}

static int rows_run(const rcase &c, unsigned idx)
{
    const unsigned K = c.K, M = c.M;
    const size_t cap = (size_t)K * M * 4 + 256;
    emu_bufs mem(R_N, cap);
    unsigned char *base[R_N];
    for (unsigned i = 0; i < R_N; i++)
        base[i] = mem[i] + (i == R_SQ ? c.shift * 4 : 0);
    emu_rng g{ idx * 0x9e3779b97f4a7c15ull + 7 };
    for (unsigned e = 0; e < K * M; e++) {
        // edge values (+-0, +-inf, NaNs, subnormals) in every fourth row: one NaN makes its
        // row's mean NaN, so the others keep ordinary values
        unsigned kind = e / K % 4 == 3;
        uint16_t xb = (uint16_t)emu_value(g, E_BF16, kind, 1), rb = (uint16_t)emu_value(g, E_BF16, kind, 1);
        std::memcpy(base[R_X] + 2 * e, &xb, 2), std::memcpy(base[R_RES] + 2 * e, &rb, 2);
    }
    for (unsigned j = 0; j < K; j++) {
        uint16_t wb = (uint16_t)emu_value(g, E_BF16, j % 7 == 3, 1);
        std::memcpy(base[R_W] + 2 * j, &wb, 2);
    }
    rows_args a{};
    a.r.src = (unsigned long long)(uintptr_t)base[R_SQ];
    a.r.dst = (unsigned long long)(uintptr_t)base[R_MEAN];
    a.r.num_inputs = K, a.r.num_outputs = M;
    a.r.factor = __float_as_uint((float)M / (float)((double)M * K));
    a.r.osize[0] = M, a.r.ostride[0][0] = 4, a.r.ostride[0][1] = K * 4;
    for (unsigned b = 0; b < c.nbufs; b++)
        a.buf[b] = (unsigned long long)(uintptr_t)base[c.role[b]], a.st[b][0] = c.st[b][0],
        a.st[b][1] = c.st[b][1];
    for (unsigned q = 0; q < 16; q++)
        a.s[q] = c.s[q];
    emu_case ec{};
    ec.name = "rms", ec.kernel = c.run, ec.op = E_MEAN, ec.in_dt = ec.out_dt = ec.acc_dt = E_F32;
    ec.vec = (int)c.vec, ec.split_y = (int)c.split_y, ec.bw = c.bw, ec.bh = c.bh;
    ec.vt0 = c.vt0, ec.ivs = c.ivs, ec.M = M, ec.K = K;
    unsigned per = c.split_y ? 1 : c.bh;
    emu_launch(ec, *(const tcf_rargs_host *)&a, (M + per - 1) / per);

    emu_model model{ ec };
    const float alpha = __uint_as_float(c.s[0]), eps = __uint_as_float(c.s[1]),
                ealpha = __uint_as_float(c.s[2]);
    int bad = 0;
    auto rd = [&](int role, size_t i, unsigned es) { uint32_t v = 0; std::memcpy(&v, base[role] + i * es, es); return v; };
    auto want = [&](const char *what, unsigned r, unsigned j, uint32_t got, uint32_t w, int dt) {
        if (bad < 4 && !rows_same(got, w, dt)) {
            std::printf("FAIL K=%u M=%u shift %u: %s row %u element %u: kernel 0x%x, model 0x%x\n", K,
                        M, c.shift, what, r, j, got, w);
            bad++;
        }
    };
    for (unsigned r = 0; r < M; r++) {
        std::vector<uint32_t> sq(K), xf(K);
        for (unsigned j = 0; j < K; j++) {
            size_t e = (size_t)r * K + j;
            float x = tcf_b2f((tcf_b)rd(R_X, e, 2)), res = tcf_b2f((tcf_b)rd(R_RES, e, 2));
            tcf_b h = tcf_f2b(fmaf(alpha, res, x));
            float f = tcf_b2f(h);
            xf[j] = __float_as_uint(f), sq[j] = __float_as_uint(f * f);
            want("h", r, j, rd(R_H, e, 2), h, E_BF16);
            want("x.float()", r, j, rd(R_XF, e, 4), xf[j], E_F32);
        }
        uintptr_t start = (uintptr_t)base[R_SQ] + (size_t)r * K * 4;
        unsigned shift = c.vec ? (unsigned)(start % (c.ivs * 4) / 4) : 0;
        uint32_t mean = model.row(sq, shift, a.r.factor);
        float v = fmaf(eps, ealpha, __uint_as_float(mean)), rs = rsqrtf(v);
        want("mean", r, 0, rd(R_MEAN, r, 4), mean, E_F32);
        want("+ eps", r, 0, rd(R_V, r, 4), __float_as_uint(v), E_F32);
        want("rsqrt", r, 0, rd(R_R, r, 4), __float_as_uint(rs), E_F32);
        for (unsigned j = 0; j < K; j++) {
            size_t e = (size_t)r * K + j;
            float y = __uint_as_float(xf[j]) * rs;
            tcf_b yb = tcf_f2b(y), out = tcf_f2b(tcf_b2f((tcf_b)rd(R_W, j, 2)) * tcf_b2f(yb));
            want("x * r", r, j, rd(R_Y, e, 4), __float_as_uint(y), E_F32);
            want(".to(bf16)", r, j, rd(R_YB, e, 2), yb, E_BF16);
            want("weight *", r, j, rd(R_OUT, e, 2), out, E_BF16);
        }
        // nothing past the rows: the reduced tensor's store was dropped, the row buffers
        // hold M values
        if (r + 1 == M) {
            want("sq untouched", r, 0, rd(R_SQ, 0, 4), 0xababababu, E_F32);
            want("mean's end", r, M, rd(R_MEAN, M, 4), 0xababababu, E_F32);
            want("out's end", r, K * M, rd(R_OUT, (size_t)K * M, 2), 0xababu, E_BF16);
        }
    }
    return bad == 0;
}

int main() { return emu_cases_main("rows", rcases, sizeof rcases / sizeof rcases[0], rows_run); }
