"""A small MLP, forward and backward (float32, then under fp16 and bf16 autocast), with an
SGD step between iterations; saves outputs, losses and every gradient (suite `mlp`)."""
import argparse
import sys

import common


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--iters", type=int, default=2)
    a = ap.parse_args()
    dev = common.setup(0, a.device)
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    model = nn.Sequential(
        nn.Linear(256, 1024), nn.GELU(), nn.LayerNorm(1024),
        nn.Linear(1024, 1024), nn.SiLU(),
        nn.Linear(1024, 10),
    ).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 256, generator=g).to(dev)
    target = torch.randint(0, 10, (64,), generator=g).to(dev)
    res = common.Results()
    modes = [("fp32", None)]
    if dev.type == "cuda":  # (CPU autocast is only for trying the script without a GPU)
        modes += [("fp16", torch.float16), ("bf16", torch.bfloat16)]
    for tag, dt in modes:
        for it in range(a.iters):
            opt.zero_grad(set_to_none=True)
            if dt is None:
                out = model(x)
                loss = F.cross_entropy(out, target)
            else:
                with torch.autocast(dev.type, dtype=dt):
                    out = model(x)
                    loss = F.cross_entropy(out, target)
            loss.backward()
            pre = "%s/%d/" % (tag, it)
            res.add(pre + "out", out)
            res.add(pre + "loss", loss)
            for name, p in model.named_parameters():
                res.add(pre + "grad/" + name, p.grad)
            opt.step()
            res.flush()
    for name, p in model.named_parameters():
        res.add("final/" + name, p)
    common.sync(dev)
    res.save(a.out)
    print("mlp: %d results, saved %s" % (len(res.entries), a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
