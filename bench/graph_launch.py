"""What one CUDA graph launch costs the host in a Python PyTorch process, by what the graph
holds and by the state the launch finds. tcfuse's `replay time` stats line gives 13-23 us a
replayed window's graph launch in the HF programs, 2.7 in the libtorch one (docs/PERF.md,
2026-11-28 (sixth)); this says which of the graph's content, a busy stream or caches made
cold by the host's work between launches goes with that.

Graphs of about --kernels kernels, captured with torch.cuda.graph and replayed --reps times;
host time of replay() (cudaGraphLaunch and PyTorch's wrapper), median, 10th and 90th
percentiles of the last 90%. What each graph holds:
  one      a single add (PyTorch's wrapper and the launch's floor)
  tiny     adds on a 32-element tensor
  layer    GPT-2-style ops at 1 x 32 x 768: linear, gelu, layer_norm, add
  attn     the same with scaled_dot_product_attention
The state the launch finds, --state (one or more, comma-separated):
  idle     a synchronize before each replay (nothing queued, the driver's data warm)
  busy     a 2 ms kernel queued before each replay (the stream has work ahead)
  cold     idle, and --cold-mib of host memory written between replays (the caches hold the
           host's work, as after a window of Python)
Run without tcfuse (it holds nothing during an application's own capture anyway):
    python3 bench/graph_launch.py [--kernels 24] [--reps 300] [--state idle,busy,cold]"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--kernels", type=int, default=24, help="kernels a graph holds, about")
ap.add_argument("--reps", type=int, default=300)
ap.add_argument("--dtype", default="float32")
ap.add_argument("--state", default="idle,busy,cold")
ap.add_argument("--cold-mib", type=int, default=64, help="host memory written between replays (cold)")
a = ap.parse_args()
dev = torch.device("cuda")
dt = getattr(torch, a.dtype)
torch.manual_seed(0)
x32 = torch.zeros(32, device=dev)
h = torch.randn(1, 32, 768, device=dev, dtype=dt)
w = torch.randn(768, 768, device=dev, dtype=dt) / 28
g = torch.ones(768, device=dev, dtype=dt)
b = torch.zeros(768, device=dev, dtype=dt)
big = torch.randn(4096, 4096, device=dev)
junk = bytearray(a.cold_mib << 20)


def one():
    x32.add_(1)


def tiny():
    for _ in range(a.kernels):
        x32.add_(1)


def layer(attn):
    y = h
    n = 0
    while n < a.kernels:
        z = F.gelu(F.linear(y, w))
        if attn:
            q = z.view(1, 32, 12, 64).transpose(1, 2)
            z = F.scaled_dot_product_attention(q, q, q, is_causal=True).transpose(1, 2).reshape(1, 32, 768)
            n += 2
        y = F.layer_norm(z + y, (768,), g, b)
        n += 4
    return y


def busy_ms():
    """Milliseconds one 4096^3 matmul takes (queued ahead of each replay in state busy)."""
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    big @ big
    e1.record()
    torch.cuda.synchronize()
    return e0.elapsed_time(e1)


def before(state):
    torch.cuda.synchronize()
    if state == "busy":
        big @ big          # queued: the replay goes in behind it
    elif state == "cold":
        junk[::64] = bytes(len(junk) // 64)   # one write a cache line


cases = [("one", one), ("tiny", tiny), ("layer", lambda: layer(False)), ("attn", lambda: layer(True))]
print("graph_launch: %s, torch %s, %d kernels a graph, %d replays; busy queues %.2f ms ahead" % (
    torch.cuda.get_device_name(), torch.__version__, a.kernels, a.reps, busy_ms()), flush=True)
s = torch.cuda.Stream()
for name, fn in cases:
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()                              # warm-up (cuBLAS workspaces, lazy modules)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    for state in a.state.split(","):
        ts = []
        for _ in range(a.reps):
            before(state)
            t0 = time.perf_counter_ns()
            graph.replay()
            ts.append(time.perf_counter_ns() - t0)
        torch.cuda.synchronize()
        ts = sorted(ts[a.reps // 10:])
        print("%-6s %-5s replay host us: median %.2f, p10 %.2f, p90 %.2f" % (
            name, state, statistics.median(ts) / 1e3, ts[len(ts) // 10] / 1e3,
            ts[len(ts) * 9 // 10] / 1e3), flush=True)
