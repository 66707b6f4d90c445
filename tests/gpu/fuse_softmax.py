"""Row softmaxes fused with their producers and consumers: run plain and under
TCFUSE_MODE=fuse, save every result, and `fuse_softmax.py --compare A B` checks the two
bitwise (tests/gpu/run fuse_softmax).

PyTorch's softmax_warp_forward/backward (rows of at most 2048 elements) as real programs
launch them, over row lengths 1 to 2048 (odd ones, powers of two and their neighbours)
and row counts 1 to 300, with edge values (+-0, +-inf, NaN, subnormals, extremes) in one
row:
  - softmax and log_softmax in float32, float16 and bfloat16 (and half in, float out),
    between elementwise producers (x * 2 + 1) and consumers (.to(bfloat16), * 3)
  - their backwards through autograd (PyTorch passes grad * out to the kernel)
  - HF eager attention under bf16 autocast, forward and backward: scores * scaling +
    mask (float32), softmax(dtype=float32), .to(bfloat16), @ v
New inputs every iteration; with TCFUSE_COMPILE_WAIT=1 a pattern runs fused from its
second iteration (the first compiles and verifies its kernel)."""
import sys

import torch

import common

LENGTHS = [1, 2, 3, 5, 16, 31, 32, 33, 64, 100, 127, 128, 129, 255, 256, 257, 511, 512, 700,
           1000, 1023, 1024, 1500, 2047, 2048]
ROWS = [1, 3, 64, 300]
ITERS = 3


def chains(out, name, x, dt_out=None):
    y = x * 2 + 1
    if dt_out is None:
        s = torch.softmax(y, -1)
        ls = torch.log_softmax(y, -1)
    else:
        s = torch.softmax(y, -1, dtype=dt_out)
        ls = torch.log_softmax(y, -1, dtype=dt_out)
    out[f"{name}-softmax"] = s
    out[f"{name}-softmax-bf16"] = s.to(torch.bfloat16) * 3
    out[f"{name}-logsoftmax"] = ls.to(torch.bfloat16)


def backward(out, name, x, g, log):
    x = x.detach().requires_grad_(True)
    y = (torch.log_softmax if log else torch.softmax)(x * 2, -1)
    y.backward(g)
    out[f"{name}-{'log' if log else ''}softmax-grad"] = x.grad


def attention(out, name, seed):
    B, Hh, S, D = 2, 4, 128, 32
    q, k, v = (common.edge_rows((B, Hh, S, D), torch.float32, seed + i, edge=False)
               .requires_grad_(True)
               for i in range(3))
    mask = torch.full((S, S), float("-inf"), device="cuda").triu(1)[None, None].expand(B, 1, S, S)
    mask = mask.contiguous()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        sc = torch.matmul(q, k.transpose(2, 3)) * D ** -0.5
        sc = sc + mask
        p = torch.softmax(sc, dim=-1, dtype=torch.float32).to(torch.bfloat16)
        o = torch.matmul(p, v)
    o.float().sum().backward()
    out[f"{name}-attn"] = o
    for n, t in (("q", q), ("k", k), ("v", v)):
        out[f"{name}-attn-d{n}"] = t.grad


def main():
    out = {}
    seed = 0
    for it in range(ITERS):
        for k in LENGTHS:
            for rows in ROWS:
                for dt in (torch.float32, torch.bfloat16, torch.float16):
                    if dt == torch.float16 and rows == 64:
                        continue
                    seed += 1
                    x = common.edge_rows((rows, k), dt, seed)
                    name = f"{it}-{str(dt)[6:]}-{rows}x{k}"
                    chains(out, name, x)
                    if dt == torch.float32:
                        backward(out, name, x, common.edge_rows((rows, k), dt, seed + 7919), False)
                        backward(out, name, x, common.edge_rows((rows, k), dt, seed + 7919), True)
                    if dt == torch.float16 and k in (33, 1000):
                        chains(out, name + "-tofloat", x, torch.float32)
        attention(out, f"{it}", 1000 + it)
        torch.cuda.synchronize()
    torch.save({k: v.detach().contiguous() for k, v in out.items()}, sys.argv[1])
    print(f"fuse_softmax: {len(out)} results saved")


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(common.compare_saved(sys.argv[2], sys.argv[3], "fuse_softmax"))
    main()
