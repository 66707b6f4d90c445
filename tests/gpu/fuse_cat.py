"""torch.cat in fuse mode (recognize/decode_cat.c): run plain and under TCFUSE_MODE=fuse,
save every result, and `fuse_cat.py --compare A B` checks the two bitwise, as bytes
(tests/gpu/run fuse_cat).

Cats of 2 to 4 inputs along the last and a middle dim, in float, half and bfloat16, odd
sizes, each with a producer and consumers around it: contiguous 16-byte-aligned inputs
(CatArrayBatchedCopy_alignedK_contig), contiguous inputs one element in
(CatArrayBatchedCopy_contig), transposed and sliced inputs (CatArrayBatchedCopy, its
per-input strides), an empty input first (HF's KV cache), 70 inputs (two launches of a
batch of 64), and HF's rotary embedding q * cos + rotate_half(q) * sin over a transposed
q. Edge values (+-0, +-inf, NaN payloads, subnormals) in every input: a cat moves bits.
New inputs every iteration; the first iterations run eager while kernels compile and
verify (TCFUSE_COMPILE_WAIT=1 from the second on a chain runs fused)."""
import sys

import torch

ITERS = 5
DTS = [torch.float32, torch.float16, torch.bfloat16]


def edge(t):
    """Specials at the start and every 31st element, NaNs with payloads among them."""
    flat = t.view(-1)
    iv = {2: torch.int16, 4: torch.int32}[t.element_size()]
    bits = flat.view(iv)
    sp = [0x7fc00001, 0x7fa00000, -0x80000000, 0x7f800000, -0x00800000, 1, 0x007fffff] \
        if t.element_size() == 4 else [0x7e01, 0x7d00, -0x8000, 0x7c00, -0x0400, 1, 0x03ff, 0x7f81]
    k = min(len(sp), flat.numel())
    bits[:k] = torch.tensor(sp[:k], dtype=iv, device=t.device)
    spread = bits[::31]
    m = min(len(sp), spread.numel())
    spread[:m] = torch.tensor(sp[:m], dtype=iv, device=t.device)
    return t


def rnd(shape, dt):
    return edge(torch.randn(*shape, device="cuda", dtype=torch.float32).to(dt))


def parts(kind, shape, dim, sizes, dt):
    """Inputs of `shape` but `sizes[i]` along dim, as views of the given kind."""
    out = []
    for s in sizes:
        sh = list(shape)
        sh[dim] = s
        if kind == "aligned":
            out.append(rnd(sh, dt))
        elif kind == "off1":      # contiguous, one element into its storage
            out.append(rnd([torch.Size(sh).numel() + 1], dt)[1:].view(sh))
        elif kind == "transposed":
            p = list(range(len(sh)))
            p[0], p[-1] = p[-1], p[0]
            out.append(rnd([sh[i] for i in p], dt).permute(*p))
        else:                     # sliced along the last dim
            out.append(rnd(sh[:-1] + [2 * sh[-1]], dt)[..., ::2])
    return out


CASES = []
for n in (2, 3, 4):
    for kind in ("aligned", "off1", "transposed", "sliced"):
        CASES.append((n, kind, -1, (3, 37, 2 * n + 5)))     # last dim, odd sizes
        CASES.append((n, kind, 1, (5, 2 * n + 3, 129)))     # a middle dim
CASES.append((2, "aligned", -1, (4, 8, 64)))                 # 16-byte rows
CASES.append((2, "transposed", 0, (33, 65)))                 # the outer dim
CASES.append((2, "aligned", 1, (4, 6, 64)))                  # a middle dim in 16-byte packs


def chains(dt, out):
    for c, (n, kind, dim, shape) in enumerate(CASES):
        sizes = [shape[dim] + i for i in range(n)]
        for it in range(ITERS):
            torch.manual_seed(1000 * c + it)
            xs = parts(kind, shape, dim, sizes, dt)
            full = list(shape)
            full[dim] = sum(sizes)
            w, z = rnd([full[-1]], dt), rnd(full, dt)
            # a producer into the first input, the cat, a broadcast consumer and another
            y = torch.cat([-xs[0]] + xs[1:], dim=dim) * w + z
            # the cat alone (its output the program keeps), and a cat of a cat's result
            k = torch.cat(xs, dim=dim)
            torch.cuda.synchronize()
        out[f"{dt}-cat{c}-{n}x{kind}-d{dim}"] = y
        out[f"{dt}-cat{c}-{n}x{kind}-d{dim}-alone"] = k
    for it in range(ITERS):
        torch.manual_seed(77 + it)
        # HF's KV cache: an empty cache first, then the new keys (a transposed view)
        cache = torch.empty(2, 4, 0, 64, device="cuda", dtype=dt)
        k = rnd((2, 33, 4, 64), dt).transpose(1, 2)
        kv = torch.cat([cache, k], dim=-2)
        kv2 = torch.cat([kv, k * 0.5], dim=-2)
        # many inputs: two launches, the second of 6
        many = torch.cat([rnd((3, 5), dt).t() for _ in range(70)], dim=1)
        torch.cuda.synchronize()
    out[f"{dt}-kvcache"] = kv
    out[f"{dt}-kvcache2"] = kv2
    out[f"{dt}-many"] = many


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotary(dt, out):
    for b, s, nh, hd in [(2, 33, 4, 64), (1, 7, 3, 34), (2, 128, 16, 128)]:
        for it in range(ITERS):
            torch.manual_seed(50 + it)
            q = rnd((b, s, nh * hd), dt).view(b, s, nh, hd).transpose(1, 2)
            k = rnd((b, s, nh * hd), dt).view(b, s, nh, hd).transpose(1, 2)
            freqs = rnd((1, s, hd // 2), torch.float32)
            emb = torch.cat((freqs, freqs), dim=-1)      # HF's rotary table, in float
            cos, sin = emb.cos().to(dt)[:, None], emb.sin().to(dt)[:, None]
            qe = q * cos + rotate_half(q) * sin
            ke = k * cos + rotate_half(k) * sin
            torch.cuda.synchronize()
        out[f"{dt}-rotary-{b}x{s}x{nh}x{hd}-q"] = qe
        out[f"{dt}-rotary-{b}x{s}x{nh}x{hd}-k"] = ke
        out[f"{dt}-rotary-{b}x{s}x{nh}x{hd}-emb"] = emb


def main():
    out = {}
    for dt in DTS:
        chains(dt, out)
        rotary(dt, out)
    torch.save({k: v.contiguous().cpu() for k, v in out.items()}, sys.argv[1])
    print(f"fuse_cat: {len(out)} results saved")


def compare(a, b):
    A, B = torch.load(a), torch.load(b)
    bad = 0
    for k in A:
        x, y = A[k], B.get(k)
        if y is None or x.shape != y.shape or x.dtype != y.dtype or \
                not torch.equal(x.reshape(-1).view(torch.uint8), y.reshape(-1).view(torch.uint8)):
            print(f"DIFF {k}")
            bad += 1
    print(f"fuse_cat: {len(A) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    main()
