"""LayerNorm and RMSNorm fused with their producers: run plain and under TCFUSE_MODE=fuse,
save every result, and `fuse_layernorm.py --compare A B` checks the two bitwise
(tests/gpu/run fuse_layernorm).

PyTorch's vectorized_layer_norm_kernel (rows of N elements, N % 4 == 0) as real programs
launch it, over row lengths 4 to 8192 and row counts 2 to 300, with edge values (+-0,
+-inf, NaN, subnormals, extremes) in one row:
  - F.layer_norm with weight and bias, weight alone and neither, float32, bfloat16 and
    float16, after a residual add (GPT-2's and BERT's a + b, both stored) or x * 2 + 1
  - aten.native_layer_norm, whose mean and rstd are saved too
  - F.rms_norm with a weight and without (the same kernel, rms = true), where PyTorch
    launches it
  - the backward through autograd (its kernels read the forward's mean and rstd)
  - rows of 5 and 1001 (N % 4 != 0: PyTorch's other kernels, not decoded) between them
New inputs every iteration; with TCFUSE_COMPILE_WAIT=1 a pattern runs fused from its
second iteration (the first compiles and verifies its kernel)."""
import sys

import torch
import torch.nn.functional as F

import common

LENGTHS = [4, 8, 12, 64, 100, 508, 512, 516, 768, 1024, 2048, 4100, 8192]
ROWS = [2, 3, 64, 300]
ITERS = 3


def rnd(shape, dt, seed, edge=True):
    return common.edge_rows(shape, dt, seed, edge, shift=0.5)   # means away from 0


def patterns(out, name, a, b, w, bias, n):
    h = a + b                                  # the residual add, stored (the next one reads it)
    out[f"{name}-h"] = h
    out[f"{name}-ln"] = F.layer_norm(h, (n,), w, bias, 1e-5)
    out[f"{name}-ln-w"] = F.layer_norm(a * 2 + 1, (n,), w, None, 1e-12)
    out[f"{name}-ln-none"] = F.layer_norm(h, (n,), None, None, 1e-5)
    y, mean, rstd = torch.ops.aten.native_layer_norm(h, [n], w, bias, 1e-6)
    out[f"{name}-native"] = y
    out[f"{name}-native-mean"] = mean
    out[f"{name}-native-rstd"] = rstd
    if hasattr(F, "rms_norm"):
        out[f"{name}-rms-w"] = F.rms_norm(h, (n,), w, 1e-6)
        out[f"{name}-rms"] = F.rms_norm(a - b, (n,), None, 1e-6)


def backward(out, name, a, b, w, bias, n, g):
    a = a.detach().requires_grad_(True)
    w = w.detach().requires_grad_(True)
    bias = bias.detach().requires_grad_(True)
    y = F.layer_norm(a + b, (n,), w, bias, 1e-5)
    y.backward(g)
    out[f"{name}-grad-a"] = a.grad
    out[f"{name}-grad-w"] = w.grad
    out[f"{name}-grad-b"] = bias.grad


def main():
    out = {}
    seed = 0
    for it in range(ITERS):
        for n in LENGTHS + [5, 1001]:
            for rows in ROWS:
                for dt in (torch.float32, torch.bfloat16, torch.float16):
                    if dt != torch.float32 and rows == 64:
                        continue
                    seed += 1
                    a = rnd((rows, n), dt, seed)
                    b = rnd((rows, n), dt, seed + 7919, edge=False)
                    w = rnd((n,), dt, seed + 2, edge=False)
                    bias = rnd((n,), dt, seed + 3, edge=False)
                    name = f"{it}-{str(dt)[6:]}-{rows}x{n}"
                    patterns(out, name, a, b, w, bias, n)
                    if dt == torch.float32 and rows != 300:
                        backward(out, name, a, b, w, bias, n, rnd((rows, n), dt, seed + 5, edge=False))
        # GPT-2's shape: [batch, seq, hidden], the add's output kept for the next block
        x = rnd((4, 128, 768), torch.float32, 5000 + it, edge=False)
        r = rnd((4, 128, 768), torch.float32, 6000 + it, edge=False)
        ln = torch.nn.LayerNorm(768, device="cuda")
        with torch.no_grad():
            ln.weight.copy_(rnd((768,), torch.float32, 7000, edge=False))
            ln.bias.copy_(rnd((768,), torch.float32, 7001, edge=False))
            h = x + r
            out[f"{it}-gpt2-h"] = h
            out[f"{it}-gpt2-ln"] = ln(h)
        torch.cuda.synchronize()
    torch.save({k: v.detach().contiguous() for k, v in out.items()}, sys.argv[1])
    print(f"fuse_layernorm: {len(out)} results saved")


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(common.compare_saved(sys.argv[2], sys.argv[3], "fuse_layernorm"))
    main()
