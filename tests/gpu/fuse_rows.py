"""Row reductions fused with their producers and broadcast consumers: run plain and under
TCFUSE_MODE=fuse, save every result, and `fuse_rows.py --compare A B` checks the two
bitwise (tests/gpu/run fuse_rows).

The patterns real models write by hand, over row lengths 1 to 8192 (odd ones, powers of
two and their neighbours) and row counts 1 to 300, in float32 and bfloat16 (float16 for
the softmax), with edge values (+-0, +-inf, NaN, subnormals, extremes) in some rows:
  - HF LlamaRMSNorm: x.to(float32), pow(2), mean(-1, keepdim=True), + eps, rsqrt, x * r,
    .to(dtype), weight * (with and without the residual add before it)
  - a hand LayerNorm: mean, x - mean, mean of the squares, + eps, rsqrt, * weight + bias
  - a hand softmax: exp(x - amax(x)) / sum
New inputs every iteration; with TCFUSE_COMPILE_WAIT=1 a pattern runs fused from its
second iteration (the first compiles and verifies its kernel)."""
import sys

import torch

import common

LENGTHS = [1, 2, 3, 7, 31, 32, 33, 100, 127, 255, 256, 257, 1000, 1023, 1024, 2047, 2048,
           3001, 4095, 4097, 8191, 8192]
ROWS = [1, 3, 64, 300]
ITERS = 3


def rms_norm(x, w, eps=1e-6):
    h = x.to(torch.float32)
    var = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(var + eps)
    return w * h.to(x.dtype)


def layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    xc = x - mu
    var = (xc * xc).mean(-1, keepdim=True)
    return xc * torch.rsqrt(var + eps) * w + b


def softmax(x):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def main():
    out = {}
    seed = 0
    for it in range(ITERS):
        for k in LENGTHS:
            for rows in ROWS:
                if rows * k > 300 * 4097:
                    continue
                for dt in (torch.float32, torch.bfloat16):
                    seed += 1
                    x = common.edge_rows((rows, k), dt, seed)
                    res = common.edge_rows((rows, k), dt, seed + 7919)
                    w = common.edge_rows((1, k), dt, seed + 17)[0]
                    b = common.edge_rows((1, k), dt, seed + 29)[0]
                    name = f"{it}-{str(dt)[6:]}-{rows}x{k}"
                    out[f"{name}-rms"] = rms_norm(x, w)
                    h = x + res
                    out[f"{name}-res-rms"] = rms_norm(h, w)
                    out[f"{name}-res"] = h
                    out[f"{name}-ln"] = layer_norm(x, w, b)
                    out[f"{name}-softmax"] = softmax(x)
                if k in (33, 1000, 4097):
                    xh = common.edge_rows((rows, k), torch.float16, seed + 31)
                    out[f"{it}-float16-{rows}x{k}-softmax"] = softmax(xh)
        torch.cuda.synchronize()
    torch.save({k: v.contiguous() for k, v in out.items()}, sys.argv[1])
    print(f"fuse_rows: {len(out)} results saved")


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(common.compare_saved(sys.argv[2], sys.argv[3], "fuse_rows"))
    main()
