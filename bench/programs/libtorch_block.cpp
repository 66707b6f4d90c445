// A C++ program linking libtorch: the closed-binary case. No Python anywhere; the kernels
// are the same PyTorch eager kernels, reached through the C++ API. A small pre-norm
// transformer (torch::nn: LayerNorm, Linear, GELU; attention from matmul and softmax),
// weights initialised from a seed, fp32, batch x seq tokens per forward. Prints the
// per-iteration times and a checksum of the first and the last iteration's outputs
// (bench/programs/README.md).
//
//   libtorch_block [--iters N] [--warmup W] [--batch B] [--seq S] [--hidden H]
//                  [--layers L] [--device cuda|cpu]
//
// Built by bench/programs/build against the torch wheel's headers and libraries.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "probe.h"
#include "sha256.h"

struct BlockImpl : torch::nn::Module {
    BlockImpl(int64_t hidden, int64_t heads)
        : heads(heads),
          ln1(register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})))),
          ln2(register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})))),
          qkv(register_module("qkv", torch::nn::Linear(hidden, 3 * hidden))),
          proj(register_module("proj", torch::nn::Linear(hidden, hidden))),
          fc1(register_module("fc1", torch::nn::Linear(hidden, 4 * hidden))),
          fc2(register_module("fc2", torch::nn::Linear(4 * hidden, hidden))),
          act(register_module("act", torch::nn::GELU(torch::nn::GELUOptions().approximate("tanh")))) {}

    torch::Tensor forward(torch::Tensor x)
    {
        const int64_t b = x.size(0), s = x.size(1), h = x.size(2), d = h / heads;
        auto q = qkv->forward(ln1->forward(x)).view({b, s, 3, heads, d}).permute({2, 0, 3, 1, 4});
        auto att = torch::matmul(q[0], q[1].transpose(-2, -1)) * (1.0 / std::sqrt((double)d));
        att = torch::softmax(att, -1);
        auto y = torch::matmul(att, q[2]).transpose(1, 2).reshape({b, s, h});
        x = x + proj->forward(y);
        return x + fc2->forward(act->forward(fc1->forward(ln2->forward(x))));
    }

    int64_t heads;
    torch::nn::LayerNorm ln1, ln2;
    torch::nn::Linear qkv, proj, fc1, fc2;
    torch::nn::GELU act;
};
TORCH_MODULE(Block);

static void digest(sha256_t *h, const torch::Tensor &t)
{
    auto c = t.detach().to(torch::kCPU).contiguous();
    std::string shape;
    for (auto s : c.sizes())
        shape += std::to_string(s) + ",";
    sha256_update(h, shape.data(), shape.size());
    sha256_update(h, c.data_ptr(), (size_t)c.numel() * c.element_size());
}

int main(int argc, char **argv)
{
    int iters = 20, warmup = 5;
    int64_t batch = 8, seq = 128, hidden = 512, layers = 4;
    std::string device = "cuda";
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!std::strcmp(k, "--iters"))
            iters = std::atoi(v);
        else if (!std::strcmp(k, "--warmup"))
            warmup = std::atoi(v);
        else if (!std::strcmp(k, "--batch"))
            batch = std::atoll(v);
        else if (!std::strcmp(k, "--seq"))
            seq = std::atoll(v);
        else if (!std::strcmp(k, "--hidden"))
            hidden = std::atoll(v);
        else if (!std::strcmp(k, "--layers"))
            layers = std::atoll(v);
        else if (!std::strcmp(k, "--device"))
            device = v;
        else {
            std::fprintf(stderr, "usage: libtorch_block [--iters N] [--warmup W] [--batch B] [--seq S] "
                                 "[--hidden H] [--layers L] [--device cuda|cpu]\n");
            return 2;
        }
    }
    if (iters < 1 || warmup < 0 || hidden % 8 || layers < 1) {
        std::fprintf(stderr, "libtorch_block: iters >= 1, warmup >= 0, hidden a multiple of 8\n");
        return 2;
    }
    const bool cuda = device == "cuda";
    if (cuda && !torch::cuda::is_available()) {
        std::fprintf(stderr, "libtorch_block: no CUDA device\n");
        return 1;
    }
    torch::Device dev(cuda ? torch::kCUDA : torch::kCPU);
    torch::NoGradGuard no_grad;
    // Initialised on the CPU from the seed, then moved: the same weights on any device.
    torch::manual_seed(0);
    torch::nn::Sequential model;
    for (int64_t l = 0; l < layers; l++)
        model->push_back(Block(hidden, 8));
    model->push_back(torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
    model->to(dev);
    model->eval();

    auto gen = at::detail::createCPUGenerator(1);
    sha256_t h;
    sha256_init(&h);
    std::vector<double> times, probe_alu, probe_mem;
    probe_init();
    for (int it = 0; it < warmup + iters; it++) {
        if (it % PROBE_EVERY == 0) {   // between iterations: the GPU is idle, nothing timed
            double a, m;
            probe_run(&a, &m);
            probe_alu.push_back(a), probe_mem.push_back(m);
        }
        auto x = at::randn({batch, seq, hidden}, gen, torch::kFloat).to(dev);
        if (cuda)
            torch::cuda::synchronize();
        auto t0 = std::chrono::steady_clock::now();
        auto y = model->forward(x);
        if (cuda)
            torch::cuda::synchronize();
        times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        if (it == 0 || it == warmup + iters - 1)
            digest(&h, y);
    }
    char hex[65];
    sha256_hex(&h, hex);
    std::vector<double> meas(times.begin() + warmup, times.end());
    std::vector<double> sorted = meas;
    std::sort(sorted.begin(), sorted.end());
    size_t m = sorted.size();
    double med = m % 2 ? sorted[m / 2] : 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]);
    std::printf("model libtorch_block batch %lld seq %lld hidden %lld layers %lld device %s\n",
                (long long)batch, (long long)seq, (long long)hidden, (long long)layers, device.c_str());
    std::printf("first_ms %.3f\n", times[0]);
    std::printf("iter_ms");
    for (double t : meas)
        std::printf(" %.3f", t);
    std::printf("\nmedian_ms %.3f\n", med);
    std::printf("probe_ms");
    for (double t : probe_alu)
        std::printf(" %.3f", t);
    std::printf("\nprobe_mem_ms");
    for (double t : probe_mem)
        std::printf(" %.3f", t);
    std::printf("\nchecksum %s\n", hex);
    return 0;
}
