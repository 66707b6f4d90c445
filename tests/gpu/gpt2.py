"""HF transformers GPT-2 (GPT2Config() defaults: 12 layers, 124M parameters) with seeded
random weights, built from the config (no download), batch 1, 32 tokens, eval forward,
--iters times with torch.cuda.synchronize() after each iteration.

--out FILE    save the logits of the first and the last iteration (suites gpt2, fixtures)
--marks FILE  write CLOCK_MONOTONIC ns after --warmup iterations and at the end (periter:
              perf.py takes the trace's windows between the two marks)
"""
import argparse
import os
import sys

import common


def build(torch, dev, layers, seed=0):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(seed)
    cfg = GPT2Config(n_layer=layers)
    model = GPT2LMHeadModel(cfg)  # initialised on the CPU from the seed, then moved
    return model.to(dev).eval(), cfg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--out")
    ap.add_argument("--marks")
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    dev = common.setup(0, a.device)
    import torch
    model, cfg = build(torch, dev, a.layers)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, cfg.vocab_size, (1, a.tokens), generator=g).to(dev)
    common.sync(dev)
    res = common.Results()
    marks = common.Marks(a.marks)
    with torch.no_grad():
        for it in range(a.iters):
            if it == a.warmup:
                marks.start()
            logits = model(input_ids=ids, use_cache=False).logits
            common.sync(dev)
            if a.out and (it == 0 or it == a.iters - 1):
                res.add("logits/%d" % it, logits)
    marks.stop(a.iters - a.warmup)
    if a.out:
        res.save(a.out)
    print("gpt2: %d iterations, %d layers%s" % (a.iters, a.layers, ", saved " + a.out if a.out else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
