"""Single PyTorch ops on CUDA tensors, float/half/bf16, over edge values, saved for a bitwise
comparison between a plain run and a run under tcfuse (tests/gpu/run, suite `ops`).

Inputs start with the special values (+-0, +-inf, NaN, subnormals, extremes) and go on with
random values over a wide range of magnitudes; sizes 1, 127 and 1000003 (prime: a vector
tail on every path). Ops of one (dtype, size) group run back to back before their results
are copied to the host, as a program's ops would, so windows hold many launches.
"""
import argparse
import math
import sys

import common


def specials(torch, dtype):
    fi = torch.finfo(dtype)
    inf, nan = math.inf, math.nan
    vals = [0.0, -0.0, inf, -inf, nan, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, -3.7, 88.7, -88.7,
            100.0, -100.0, 1e-3, fi.tiny, -fi.tiny, fi.tiny / 2, -fi.tiny / 4,
            fi.tiny * fi.eps, -fi.tiny * fi.eps, fi.max, -fi.max, fi.eps, 65504.0, 1e5,
            -nan, 1e-6, 7.0, -0.25]
    return torch.tensor(vals, dtype=torch.float64)


def make(torch, n, dtype, seed, dev, special=True, spread=3.0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g, dtype=torch.float64)
    if spread:
        x = x * torch.exp(torch.randn(n, generator=g, dtype=torch.float64) * spread)
    if special:
        sp = specials(torch, dtype).roll(seed % 7)
        k = min(n, sp.numel())
        x[:k] = sp[:k] if n > 1 else sp[seed % sp.numel():][:1]
    return x.to(dtype).to(dev)


def elementwise(torch, F):
    """(name, fn(x, y)) for ops over two same-shaped tensors."""
    return [
        ("add", lambda x, y: x + y),
        ("add_alpha", lambda x, y: torch.add(x, y, alpha=2.5)),
        ("sub", lambda x, y: x - y),
        ("sub_alpha", lambda x, y: torch.sub(x, y, alpha=0.5)),
        ("rsub_alpha", lambda x, y: torch.rsub(x, y, alpha=3)),
        ("add_scalar", lambda x, y: x + 1.25),
        ("sub_scalar", lambda x, y: x - 2),
        ("rsub_scalar", lambda x, y: 2 - x),
        ("mul", lambda x, y: x * y),
        ("mul_scalar", lambda x, y: x * 0.5),
        ("scalar_mul", lambda x, y: 3 * x),
        ("div", lambda x, y: x / y),
        ("div_scalar", lambda x, y: x / 3.0),
        ("scalar_div", lambda x, y: 1.5 / x),
        ("neg", lambda x, y: -x),
        ("reciprocal", lambda x, y: x.reciprocal()),
        ("exp", lambda x, y: x.exp()),
        ("log", lambda x, y: x.log()),
        ("tanh", lambda x, y: x.tanh()),
        ("sigmoid", lambda x, y: x.sigmoid()),
        ("silu", lambda x, y: F.silu(x)),
        ("relu", lambda x, y: F.relu(x)),
        ("clamp", lambda x, y: x.clamp(-1, 1)),
        ("clamp_min", lambda x, y: x.clamp(min=0)),
        ("clamp_max", lambda x, y: x.clamp(max=0.5)),
        ("gelu_erf", lambda x, y: F.gelu(x)),
        ("gelu_tanh", lambda x, y: F.gelu(x, approximate="tanh")),
        ("pow2", lambda x, y: x.pow(2)),
        ("pow3", lambda x, y: x.pow(3)),
        ("pow_m2", lambda x, y: x.pow(-2)),
        ("pow2_5", lambda x, y: x.pow(2.5)),
        ("pow_tensor", lambda x, y: x.abs().pow(y.clamp(-3, 3))),
        ("sqrt", lambda x, y: x.sqrt()),
        ("rsqrt", lambda x, y: x.rsqrt()),
        ("abs", lambda x, y: x.abs()),
        ("gt0", lambda x, y: x > 0),
        ("ge", lambda x, y: x >= y),
        ("lt", lambda x, y: x < y),
        ("eq", lambda x, y: x == y),
        ("ne", lambda x, y: x != y),
        ("le_scalar", lambda x, y: x <= 0.1),
        ("where", lambda x, y: torch.where(x > 0, x, y)),
        ("where_scalar", lambda x, y: torch.where(x > y, x, 0.0)),
        ("to_float", lambda x, y: x.float()),
        ("to_half", lambda x, y: x.half()),
        ("to_bf16", lambda x, y: x.bfloat16()),
        ("to_double", lambda x, y: x.double()),
        ("to_int32", lambda x, y: torch.nan_to_num(x, 0.0, 0.0, 0.0).clamp(-1000, 1000).to(torch.int32)),
        ("bool_to_x", lambda x, y: (x > y).to(x.dtype)),
        ("addcmul", lambda x, y: torch.addcmul(x, x, y, value=0.5)),
        ("lerp", lambda x, y: torch.lerp(x, y, 0.3)),
        ("sum", lambda x, y: x.sum()),
        ("sum_float", lambda x, y: x.float().sum()),
        ("mean", lambda x, y: x.mean()),
        ("amax", lambda x, y: x.amax()),
        # in place, on a copy
        ("mul_", lambda x, y: x.clone().mul_(y)),
        ("add_alpha_", lambda x, y: x.clone().add_(y, alpha=2)),
        ("clamp_", lambda x, y: x.clone().clamp_(-2, 2)),
        ("relu_", lambda x, y: x.clone().relu_()),
        ("exp_", lambda x, y: x.clone().exp_()),
        ("sigmoid_", lambda x, y: x.clone().sigmoid_()),
        ("addcmul_", lambda x, y: x.clone().addcmul_(y, y, value=-1.5)),
        # strided and unaligned views of the same data
        ("unaligned_add", lambda x, y: x[1:] + y[:-1]),
        ("stride2_mul", lambda x, y: x[::2] * y[::2]),
        ("stride2_exp", lambda x, y: x[::2].exp()),
        ("zero_dim_mul", lambda x, y: x * y[:1].reshape(())),
        ("cpu_scalar_mul", lambda x, y: x * torch.tensor(0.75)),
    ]


def run_group(torch, F, res, tag, x, y):
    for name, fn in elementwise(torch, F):
        key = "%s/%s" % (tag, name)
        try:
            res.add(key, fn(x, y))
        except Exception as e:  # recorded: both runs must fail the same way
            res.error(key, e)
    res.flush()


def shaped_ops(torch, F, res, dtype, dev, seed):
    """2-D ops: reductions, softmax, norms, matmuls, transposes, broadcasts."""
    tag = str(dtype).replace("torch.", "")
    A = make(torch, 127 * 1000, dtype, seed, dev).view(127, 1000)
    B = make(torch, 127 * 1000, dtype, seed + 1, dev).view(127, 1000)
    Af = make(torch, 127 * 1000, dtype, seed + 2, dev, special=False, spread=0.5).view(127, 1000)
    W = make(torch, 768 * 64, dtype, seed + 3, dev, special=False, spread=0).view(64, 768) * 0.05
    X = make(torch, 32 * 768, dtype, seed + 4, dev, special=False, spread=0).view(32, 768)
    bias = make(torch, 64, dtype, seed + 5, dev, special=False, spread=0)
    ops = [
        ("transposed_add", lambda: A.t() + B.t()),
        ("transpose_contig", lambda: A.t().contiguous()),
        ("cols_stride3", lambda: A[:, ::3] * 2),
        ("broadcast_add", lambda: A[:100, :1] + B[:1, :37]),
        ("row_bias_add", lambda: A + B[0]),
        ("expand_mul", lambda: A[:, :1].expand(127, 1000) * B),
        ("mixed_dtype_add", lambda: A + B.float()),
        ("row_sum", lambda: A.sum(dim=1)),
        ("col_sum", lambda: A.sum(dim=0)),
        ("row_sum_finite", lambda: Af.sum(dim=1)),
        ("col_sum_finite", lambda: Af.sum(dim=0)),
        ("sum_finite", lambda: Af.sum()),
        ("sum_t", lambda: Af.t().sum(dim=1)),
        ("softmax", lambda: torch.softmax(A, dim=-1)),
        ("softmax_finite", lambda: torch.softmax(Af, dim=-1)),
        ("softmax_dim0", lambda: torch.softmax(Af, dim=0)),
        ("log_softmax", lambda: torch.log_softmax(Af, dim=-1)),
        ("layer_norm", lambda: F.layer_norm(Af, (1000,))),
        ("layer_norm_affine", lambda: F.layer_norm(Af, (1000,), Af[0], Af[1])),
        ("layer_norm_special", lambda: F.layer_norm(A, (1000,))),
        ("matmul", lambda: Af[:, :64] @ W[:, :33]),
        ("linear", lambda: F.linear(X, W, bias)),
        ("matmul_row", lambda: X[:1] @ W.t()),
        ("bmm", lambda: torch.bmm(X.view(4, 8, 768), W.t().reshape(1, 768, 64).expand(4, 768, 64))),
        ("matmul_special", lambda: A[:, :64] @ B[:64, :33]),
        ("gelu_then_mul", lambda: F.gelu(Af, approximate="tanh") * B),
    ]
    for name, fn in ops:
        key = "%s/shaped/%s" % (tag, name)
        try:
            res.add(key, fn())
        except Exception as e:
            res.error(key, e)
    res.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--sizes", default="1,127,1000003")
    a = ap.parse_args()
    dev = common.setup(0, a.device)
    import torch
    import torch.nn.functional as F
    res = common.Results()
    seed = 1
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for n in (int(s) for s in a.sizes.split(",")):
            x = make(torch, n, dtype, seed, dev)
            y = make(torch, n, dtype, seed + 1, dev)
            seed += 2
            run_group(torch, F, res, "%s/%d" % (str(dtype).replace("torch.", ""), n), x, y)
        shaped_ops(torch, F, res, dtype, dev, seed)
        seed += 10
    common.sync(dev)
    res.save(a.out)
    print("ops: %d results, %d errors (recorded), saved %s" % (len(res.entries), res.errors, a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
