"""Elementwise chains over views, for fuse mode's N-d groups: run plain and under
TCFUSE_MODE=fuse, save every result, and `fuse_views.py --compare A B` checks the two
bitwise (tests/gpu/run fuse_views).

Seeded random chains over one output shape whose operands are views PyTorch runs through
its strided loop (elementwise_kernel<128, vt>): broadcast rows and columns, transposed
and permuted tensors, sliced x[..., ::2], views one element in, expanded scalars,
0-dim tensors (stride 0 everywhere), mixed dtypes (the cast branch), layout changes
(.t().contiguous().t()), .contiguous() and casts, over float, half and bfloat16, with
edge values (+-0, +-inf, NaN, subnormals, extremes) in every input and odd sizes; the
patterns real models write: HF LlamaRMSNorm, a residual before it, rotary embeddings,
softmax and LayerNorm by hand. New inputs every iteration; the first iterations run
eager while kernels compile and verify (with TCFUSE_COMPILE_WAIT=1 from the second on a
chain runs fused)."""
import math
import random
import sys

import torch

import common

SHAPES = [(37, 257), (300, 1025), (4, 33, 65), (1, 7, 1, 9)]
ITERS = 5

OPS1 = [
    lambda x: x + 1.25, lambda x: 2.0 - x, lambda x: x * 0.5, lambda x: x / 3.0,
    lambda x: -x, lambda x: torch.exp(x), lambda x: torch.tanh(x), lambda x: torch.sigmoid(x),
    lambda x: torch.nn.functional.silu(x), lambda x: torch.relu(x), lambda x: x.clamp(-1.0, 1.0),
    lambda x: torch.nn.functional.gelu(x, approximate="tanh"), lambda x: x * x, lambda x: x ** 3,
    lambda x: x.abs(), lambda x: torch.rsqrt(x.abs() + 1.0), lambda x: torch.reciprocal(x),
    lambda x: x.pow(2), lambda x: torch.where(x > 0, x, 0.5 * x),
]
OPS2 = [lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: x / y,
        lambda x, y: torch.add(x, y, alpha=2.5), lambda x, y: torch.where(x > y, x, y),
        lambda x, y: torch.addcmul(x, y, y, value=0.5)]
VIEWS = ["contig", "bcast", "perm", "sliced", "off1", "expanded", "zerodim", "otherdt"]


def specials(dt):
    v = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-40, -1e-40, 1e-6, -3e-5,
         65504.0, -1e-8, 3.0, 88.7, -104.0, 3.3895e38]
    return torch.tensor(v, dtype=torch.float32).to(dt)


def edge(t):
    """Specials at the start and spread through the storage (every 97th element)."""
    flat = t.view(-1)
    sp = specials(t.dtype).to(t.device)
    k = min(sp.numel(), flat.numel())
    flat[:k] = sp[:k]
    spread = flat[::97]
    m = min(sp.numel(), spread.numel())
    spread[:m] = sp[:m]
    return t


def rnd(shape, dt):
    return edge(torch.randn(*shape, device="cuda", dtype=torch.float32).to(dt))


def view_of(kind, shape, dt, r):
    """An operand of `shape` (broadcastable to it) as a view of the given kind."""
    nd = len(shape)
    if kind == "contig":
        return rnd(shape, dt)
    if kind == "bcast":  # some dims of size 1
        s = [1 if r.random() < 0.5 else d for d in shape]
        if s == list(shape):
            s[r.randrange(nd)] = 1
        return rnd(s, dt)
    if kind == "perm":  # a permuted (transposed) dense tensor
        p = list(range(nd))
        while nd > 1 and p == list(range(nd)):
            r.shuffle(p)
        inv = [p.index(i) for i in range(nd)]
        return rnd([shape[i] for i in p], dt).permute(*inv)
    if kind == "sliced":  # x[..., ::2]
        return rnd(list(shape[:-1]) + [2 * shape[-1]], dt)[..., ::2]
    if kind == "off1":  # one element in: rows misaligned
        return rnd(list(shape[:-1]) + [shape[-1] + 1], dt)[..., 1:]
    if kind == "expanded":
        return rnd([1] * nd, dt).expand(*shape)
    if kind == "zerodim":
        return torch.tensor(r.choice([0.5, -2.0, 3.0, float("inf")]), device="cuda", dtype=dt)
    other = torch.float32 if dt != torch.float32 else r.choice([torch.float16, torch.bfloat16])
    return view_of(r.choice(["perm", "sliced", "bcast"]), shape, other, r)


def relayout(x):
    """The same values in another layout: a strided copy, then strided consumers."""
    if x.dim() < 2:
        return x.contiguous()
    return x.transpose(-1, -2).contiguous().transpose(-1, -2)


def random_chain(c, dt, out):
    r = random.Random(1000 + c)
    shape = SHAPES[c % len(SHAPES)]
    first = r.choice(VIEWS[:5])
    steps = []
    for _ in range(r.randint(3, 10)):
        u = r.random()
        if u < 0.45:
            steps.append(("bin", r.randrange(len(OPS2)), r.choice(VIEWS), r.random() < 0.5))
        elif u < 0.8:
            steps.append(("un", r.randrange(len(OPS1))))
        elif u < 0.9:
            steps.append(("cast", r.choice([torch.float32, torch.float16, torch.bfloat16])))
        else:
            steps.append(("relayout",))
    for it in range(ITERS):
        r2 = random.Random(7 * c)  # the same views every iteration, new values
        torch.manual_seed(100 * c + it)
        v = view_of(first, shape, dt, r2)
        if v.dim() == 0 or v.shape != torch.Size(shape):
            v = v.expand(*shape)
        kept = None
        for i, st in enumerate(steps):
            if st[0] == "bin":
                y = view_of(st[2], shape, v.dtype, r2)
                v = OPS2[st[1]](v, y) if st[3] else OPS2[st[1]](y, v)
            elif st[0] == "un":
                v = OPS1[st[1]](v)
            elif st[0] == "cast":
                v = v.to(st[1])
            else:
                v = relayout(v)
            if i == len(steps) // 2:
                kept = v  # an intermediate the program keeps
        torch.cuda.synchronize()
    out[f"{dt}-chain{c}"] = v.contiguous().cpu()
    out[f"{dt}-chain{c}-kept"] = kept.contiguous().cpu()


def rms_norm(x, w, eps=1e-6):
    """HF LlamaRMSNorm.forward."""
    dt = x.dtype
    h = x.to(torch.float32)
    var = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(var + eps)
    return w * h.to(dt)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def patterns(dt, out):
    for rows, hidden in [(37, 257), (64, 2048), (5, 8191)]:
        for it in range(ITERS):
            torch.manual_seed(it)
            x, res, w = rnd((rows, hidden), dt), rnd((rows, hidden), dt), rnd((hidden,), dt)
            h = x + res  # the residual, then the norm
            out[f"{dt}-rms-{rows}x{hidden}"] = rms_norm(h, w)
            out[f"{dt}-resid-{rows}x{hidden}"] = h
            # softmax and LayerNorm by hand: broadcast (rows, 1) operands
            m = x.float().amax(-1, keepdim=True)
            e = torch.exp(x.float() - m)
            out[f"{dt}-softmax-{rows}x{hidden}"] = (e / e.sum(-1, keepdim=True)).to(dt)
            mu = x.float().mean(-1, keepdim=True)
            var = (x.float() - mu).pow(2).mean(-1, keepdim=True)
            ln = (x.float() - mu) / torch.sqrt(var + 1e-5) * w.float() + 0.5
            out[f"{dt}-layernorm-{rows}x{hidden}"] = ln
            torch.cuda.synchronize()
    b, s, nh, hd = 2, 33, 4, 64
    for it in range(ITERS):
        torch.manual_seed(50 + it)
        q = rnd((b, s, nh * hd), dt).view(b, s, nh, hd).transpose(1, 2)
        cos, sin = rnd((s, hd), dt), rnd((s, hd), dt)
        cos, sin = cos.unsqueeze(0).unsqueeze(0), sin.unsqueeze(0).unsqueeze(0)
        out[f"{dt}-rotary"] = q * cos + rotate_half(q) * sin
        torch.cuda.synchronize()
    # HF's apply_rotary_pos_emb, q and k in one window: the cat's output [B, H, S, D] is
    # freed and handed to the add that writes [B, S, H, D] (verification's smaller problem
    # must not compare the dead cat's bytes)
    for b, s, nh, hd in [(2, 33, 4, 64), (2, 256, 8, 128)]:
        for it in range(ITERS):
            torch.manual_seed(70 + it)
            q = rnd((b, s, nh * hd), dt).view(b, s, nh, hd).transpose(1, 2)
            k = rnd((b, s, nh * hd), dt).view(b, s, nh, hd).transpose(1, 2)
            cos, sin = rnd((s, hd), dt)[None, None], rnd((s, hd), dt)[None, None]
            out[f"{dt}-rope-q-{s}x{hd}"] = q * cos + rotate_half(q) * sin
            out[f"{dt}-rope-k-{s}x{hd}"] = k * cos + rotate_half(k) * sin
            torch.cuda.synchronize()


def main():
    out = {}
    dts = [torch.float32, torch.float16, torch.bfloat16]
    for dt in dts:
        for c in range(16):
            random_chain(c, dt, out)
        patterns(dt, out)
    torch.save({k: v.contiguous() for k, v in out.items()}, sys.argv[1])
    print(f"fuse_views: {len(out)} results saved")


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(common.compare_saved(sys.argv[2], sys.argv[3], "fuse_views"))
    main()
