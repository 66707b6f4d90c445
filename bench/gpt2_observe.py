"""GPT-2 batch-1 forward time per iteration, for comparing a run under tcfuse with a plain
one (tests/gpu/run, suite gpt2_perf, runs it both ways and reports the ratio).

HF transformers GPT2LMHeadModel from GPT2Config() (12 layers) with seeded random weights,
32 tokens, eval, no_grad. --warmup iterations first, then --iters timed iterations, each
the forward plus torch.cuda.synchronize(), by the host's monotonic clock. Prints one line:
    gpt2_observe: iters 50 warmup 10 median_ms M p10_ms A p90_ms B min_ms C
"""
import argparse
import os
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    dev = torch.device(a.device)
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=a.layers)
    model = GPT2LMHeadModel(cfg).to(dev).eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, cfg.vocab_size, (1, a.tokens), generator=g).to(dev)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    times = []
    with torch.no_grad():
        for it in range(a.warmup + a.iters):
            t0 = time.perf_counter_ns()
            model(input_ids=ids, use_cache=False)
            sync()
            if it >= a.warmup:
                times.append((time.perf_counter_ns() - t0) / 1e6)
    times.sort()
    q = lambda p: times[min(len(times) - 1, int(p * len(times)))]
    print("gpt2_observe: iters %d warmup %d median_ms %.4f p10_ms %.4f p90_ms %.4f min_ms %.4f"
          % (a.iters, a.warmup, statistics.median(times), q(0.1), q(0.9), times[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
