"""Elementwise chains for fuse mode: run plain and under TCFUSE_MODE=fuse, save every
result, and `fuse_chains.py --compare A B` checks the two bitwise (tests/gpu/run fuse).

Covers the hand-written tanh-GELU, SwiGLU, x*sigmoid(1.702x), a residual chain, and
seeded random chains of 2-12 ops over float, half and bfloat16, with edge values in every
input, an odd length, views misaligned by one element, a chain whose intermediate the program keeps, fills (zeros
accumulated into, ones read, a NaN fill overwritten; the same chains in deterministic mode,
whose every torch.empty is filled), and shapes that change every iteration."""
import math
import random
import sys

import torch

OPS1 = [
    lambda x: x + 1.25, lambda x: 2.0 - x, lambda x: x * 0.5, lambda x: x / 3.0,
    lambda x: -x, lambda x: torch.exp(x), lambda x: torch.tanh(x), lambda x: torch.sigmoid(x),
    lambda x: torch.nn.functional.silu(x), lambda x: torch.relu(x), lambda x: x.clamp(-1.0, 1.0),
    lambda x: torch.nn.functional.gelu(x, approximate="tanh"), lambda x: torch.nn.functional.gelu(x),
    lambda x: x * x, lambda x: x ** 3, lambda x: x.abs(), lambda x: torch.sqrt(x.abs()),
    lambda x: torch.rsqrt(x.abs() + 1.0), lambda x: torch.reciprocal(x), lambda x: torch.log(x.abs() + 1.0),
]
OPS2 = [lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: x / y,
        lambda x, y: torch.add(x, y, alpha=2.5), lambda x, y: torch.where(x > 0, x, y)]


def edge(t):
    v = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-40, -1e-40,
                      65504.0, -1e-8, 3.0], dtype=torch.float32).to(t.dtype)
    t[: v.numel()] = v.to(t.device)
    return t


def hand_gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def main():
    out = {}
    import os
    dts = [torch.float32, torch.float16, torch.bfloat16]
    if os.environ.get("FUSE_CHAINS_QUICK"):  # a smaller run, for debugging tools
        dts = [torch.float32]
    for dt in dts:
        for n in (1 << 20, 1000003):
            for it in range(6):  # early iterations run eager while kernels compile
                # new inputs every iteration: a fused kernel that failed to store would
                # leave the previous iteration's values in a reused block, and show
                torch.manual_seed(1 + it)
                x = edge(torch.randn(n, device="cuda", dtype=dt))
                y = edge(torch.randn(n, device="cuda", dtype=dt).flip(0))
                r = {
                    "gelu": hand_gelu(x),
                    "swiglu": torch.nn.functional.silu(x) * y,
                    "sig": x * torch.sigmoid(1.702 * x),
                    "resid": x + 0.5 * (y * 1.1 + 0.2),
                }
                # views one element in: misaligned against 16 bytes, so PyTorch runs its
                # unrolled loops and tcfuse generates (and checks) one-element accesses
                r["gelu_off1"] = hand_gelu(x[1:])
                r["swiglu_off1"] = torch.nn.functional.silu(x[1:]) * y[:-1]
                kept = x * 2.0 + 1.0          # an intermediate the program keeps
                r["kept_then"] = torch.tanh(kept) * 3.0
                r["kept"] = kept
                # fills: zeros accumulated into in place; ones read by the next op; a NaN
                # fill the next kernel overwrites whole (its store is dropped)
                acc = torch.zeros_like(x)
                acc += y
                r["fill_acc"] = torch.tanh(acc)
                r["fill_ones"] = torch.ones_like(x) * y + x
                dst = torch.full_like(x, float("nan"))
                dst.copy_(x * 2.0)
                r["fill_overwritten"] = dst
                half = x * 2.0                # a fill through a strided view (every other)
                half[::2] = 0.0
                r["fill_strided"] = torch.tanh(half)
                torch.cuda.synchronize()
            for k, v in r.items():
                out[f"{dt}-{n}-{k}"] = v.cpu()
        # random chains, seeded
        rnd = random.Random(1234)
        for c in range(12):
            n = rnd.choice([4096, 65537, 1 << 18])
            prog = [(rnd.random() < 0.3, rnd.randrange(len(OPS2)), rnd.randrange(len(OPS1)))
                    for _ in range(rnd.randint(2, 12))]
            for it in range(6):
                torch.manual_seed(100 * c + it)
                x = edge(torch.randn(n, device="cuda", dtype=dt))
                y = torch.randn(n, device="cuda", dtype=dt)
                v = x
                for two, i2, i1 in prog:
                    v = OPS2[i2](v, y) if two else OPS1[i1](v)
                torch.cuda.synchronize()
            out[f"{dt}-chain{c}"] = v.cpu()
        # deterministic mode: every torch.empty is filled with NaN before the kernel that
        # writes it (a training step's fills), so each op's output is a fill and an op
        torch.use_deterministic_algorithms(True)
        for it in range(6):
            torch.manual_seed(500 + it)
            x = edge(torch.randn(65537, device="cuda", dtype=dt))
            y = torch.randn(65537, device="cuda", dtype=dt)
            g, s = hand_gelu(x), torch.nn.functional.silu(x) * y
            torch.cuda.synchronize()
        torch.use_deterministic_algorithms(False)
        out[f"{dt}-det-gelu"], out[f"{dt}-det-swiglu"] = g.cpu(), s.cpu()
        # shapes that change every iteration
        for it in range(8):
            n = 1000 + 97 * it
            x = edge(torch.randn(n, device="cuda", dtype=dt))
            out[f"{dt}-shape{it}"] = hand_gelu(x).cpu()
    torch.save(out, sys.argv[1])
    print(f"fuse_chains: {len(out)} results saved")


def compare(a, b):
    A, B = torch.load(a), torch.load(b)
    bad = 0
    for k in A:
        x, y = A[k], B[k]
        iv = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[x.element_size()]
        if x.shape != y.shape or not torch.equal(x.view(iv), y.view(iv)):
            d = (x.view(iv) != y.view(iv)).nonzero()
            i = int(d[0]) if len(d) else -1
            print(f"DIFF {k}: {len(d)} elements differ; first at {i}: "
                  f"{x.view(iv)[i].item():#x} vs {y.view(iv)[i].item():#x}")
            bad += 1
    print(f"fuse_chains: {len(A) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    main()
