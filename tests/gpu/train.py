"""A small GPT-style model (2 blocks, d=256, 4 heads, 64 tokens, batch 8, vocab 1024)
trained --steps steps: bf16 autocast, cross-entropy, gradient clipping, AdamW(foreach=True),
loss.item() each step as a training loop logs it. Attention is written out (matmul, mask,
softmax) rather than SDPA, whose fused backward kernels need not be deterministic.

--out FILE    save every step's loss, the final parameters and the last gradients
--marks FILE  CLOCK_MONOTONIC ns after --warmup steps and at the end (see gpt2.py)
"""
import argparse
import math
import sys

import common


def model_classes(torch):
    nn = torch.nn
    F = torch.nn.functional

    class Block(nn.Module):
        def __init__(self, d, heads, T):
            super().__init__()
            self.heads = heads
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.fc = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)
            self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

        def forward(self, x):
            B, T, C = x.shape
            hd = C // self.heads
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q = q.view(B, T, self.heads, hd).transpose(1, 2)
            k = k.view(B, T, self.heads, hd).transpose(1, 2)
            v = v.view(B, T, self.heads, hd).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            att = att.masked_fill(~self.mask[:T, :T], float("-inf"))
            att = torch.softmax(att.float(), dim=-1).to(q.dtype)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            x = x + self.proj(y)
            return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self, vocab, d, heads, layers, T):
            super().__init__()
            self.wte = nn.Embedding(vocab, d)
            self.wpe = nn.Embedding(T, d)
            self.blocks = nn.ModuleList(Block(d, heads, T) for _ in range(layers))
            self.ln_f = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)
            self.head.weight = self.wte.weight  # tied, as in GPT-2
            for m in self.modules():  # GPT-2's initialisation
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, std=0.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.zeros_(m.bias)

        def forward(self, idx):
            T = idx.shape[1]
            x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
            for b in self.blocks:
                x = b(x)
            return self.head(self.ln_f(x))

    return GPT


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--out")
    ap.add_argument("--marks")
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    dev = common.setup(0, a.device)
    import torch
    import torch.nn.functional as F
    vocab, d, heads, T, B = 1024, 256, 4, 64, 8
    model = model_classes(torch)(vocab, d, heads, a.layers, T).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95),
                            weight_decay=0.1, foreach=True)
    g = torch.Generator().manual_seed(1)
    data = torch.randint(0, vocab, (a.steps, B, T + 1), generator=g)
    losses = []
    marks = common.Marks(a.marks)
    for step in range(a.steps):
        if step == a.warmup:
            common.sync(dev)
            marks.start()
        batch = data[step].to(dev)  # a host-to-device copy each step, as a loader's
        x, y = batch[:, :-1], batch[:, 1:]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(x)
            loss = F.cross_entropy(logits.float().view(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.detach())
        loss.item()
    common.sync(dev)
    marks.stop(a.steps - a.warmup)
    if a.out:
        res = common.Results()
        res.add("losses", torch.stack(losses))
        for name, p in model.named_parameters():
            res.add("param/" + name, p)
            res.add("grad/" + name, p.grad)
        st = opt.state[next(iter(model.parameters()))]
        for k in sorted(st):
            res.add("adam/wte/" + k, st[k])
        res.save(a.out)
    print("train: %d steps, losses %s%s" % (a.steps, [round(float(l), 4) for l in losses],
                                          ", saved " + a.out if a.out else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
