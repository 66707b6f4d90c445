"""A launch-bound PyTorch program for graph mode's benchmark (bench/replay): an 8-layer,
256-wide MLP (Linear + ReLU, float32), batch 1, eval forward under no_grad, a synchronize
after each call. Prints per-iteration times and a checksum of every output byte, in
hf.py's format, so that a run under tcfuse is compared with eager bitwise.

    replay_mlp.py [--iters N] [--warmup W] [--layers L] [--width D] [--compile MODE]

--compile MODE wraps the model in torch.compile(mode=MODE) (e.g. reduce-overhead).
Output lines: "first_ms <t>", "iter_ms <t1> ...", "median_ms <m>", "checksum <sha256>".
"""
import argparse
import hashlib
import statistics
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--compile", metavar="MODE")
    a = ap.parse_args()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    layers = []
    for _ in range(a.layers):
        layers += [torch.nn.Linear(a.width, a.width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).cuda().eval()
    fn = torch.compile(model, mode=a.compile) if a.compile else model
    g = torch.Generator(device="cuda").manual_seed(1)
    xs = [torch.randn(1, a.width, device="cuda", generator=g) for _ in range(8)]
    h = hashlib.sha256()
    times = []
    with torch.no_grad():
        for i in range(a.warmup + a.iters):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            y = fn(xs[i % len(xs)])
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
            if i < len(xs) or i >= a.warmup + a.iters - len(xs):
                h.update(y.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    meas = times[a.warmup:]
    print("model mlp layers %d width %d batch 1%s" % (a.layers, a.width,
                                                     " compiled " + a.compile if a.compile else ""))
    print("first_ms %.3f" % times[0])
    print("iter_ms " + " ".join("%.4f" % t for t in meas))
    print("median_ms %.4f" % statistics.median(meas))
    print("checksum %s" % h.hexdigest())


if __name__ == "__main__":
    main()
