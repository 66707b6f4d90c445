"""Fusion benchmark: eager PyTorch vs tcfuse (TCFUSE_MODE=fuse) vs torch.compile, in one
invocation. Not a test: it prints a table.

    python3 bench/fusion.py [--quick]

The parent runs this file twice as a child: once plain (eager and torch.compile) and once
under LD_PRELOAD=build/libtcfuse.so TCFUSE_MODE=fuse (the same eager code, fused from
below). Per case it reports the median time per call with a synchronize after each call
(what a user feels, including any time the GPU waits while tcfuse holds a window), the
GPU time of one call with the host ahead of the GPU (a sleep kernel before it, so that
for tcfuse this is its generated kernel alone; for eager, its kernels back to back), the
achieved bandwidth of that against a device-to-device copy measured in the same process
(bytes the call must read and write over that time, over the copy's bytes over its
time), the
first call's time (torch.compile's compile stall; tcfuse compiles in the background),
the first call at sizes the process has not run the chain at (tcfuse runs a chain it has
not seen as issued; torch.compile may recompile), and whether tcfuse's output is bitwise
identical to eager's.
"""
import json
import math
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cases(quick):
    import torch
    f32, bf16 = torch.float32, torch.bfloat16
    sizes = [1 << 16, 1 << 20, 1 << 24, 1 << 26]
    out = [("gelu", n, f32) for n in (sizes[1:3] if quick else sizes)]
    out += [("gelu", n, bf16) for n in ([1 << 24] if quick else sizes[2:])]
    out += [(c, 1 << 24, f32) for c in ("swiglu", "sig1702", "residual")]
    return out


def fn_of(name):
    import torch
    if name == "gelu":
        return lambda x, y: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "swiglu":
        return lambda x, y: torch.nn.functional.silu(x) * y
    if name == "sig1702":
        return lambda x, y: x * torch.sigmoid(1.702 * x)
    return lambda x, y: x + 0.5 * (y * 1.1 + 0.2)


def kernel_time(f, x, y):
    """Median GPU time of one call with the host ahead of the GPU: a sleep kernel keeps the
    GPU busy while the host issues the call, so the events around it time the kernels
    alone (for tcfuse, its generated kernel), not the GPU's wait for the host."""
    import torch
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(10):
        torch.cuda._sleep(2_000_000)  # ~1 ms at H100 clocks: longer than issuing the call
        e0.record()
        r = f(x, y)  # kept until timed: a result freed at once is a store tcfuse may drop
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1) / 1e3)
        del r
    ts.sort()
    return ts[len(ts) // 2]


def child(variant, quick):
    import torch
    torch.manual_seed(0)
    res = []
    for name, n, dt in cases(quick):
        x = torch.randn(n, device="cuda", dtype=dt)
        y = torch.randn(n, device="cuda", dtype=dt)
        f = fn_of(name)
        if variant == "compile":
            torch._dynamo.reset()
            f = torch.compile(f)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        r = f(x, y)
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        # warm-up: long enough for tcfuse's background compile and verification
        t_end = time.perf_counter() + (1.5 if variant == "tcfuse" else 0.3)
        while time.perf_counter() < t_end:
            r = f(x, y)
            torch.cuda.synchronize()
        iters = 30 if n >= (1 << 24) else 200
        ts = []
        for _ in range(iters):
            t0 = time.perf_counter()
            r = f(x, y)
            torch.cuda.synchronize()
            ts.append(time.perf_counter() - t0)
        ts.sort()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        gts = []
        for _ in range(10):
            e0.record()
            r = f(x, y)
            e1.record()
            e1.synchronize()
            gts.append(e0.elapsed_time(e1) / 1e3)
        gts.sort()
        kern = kernel_time(f, x, y)
        z = torch.empty_like(x)
        cts = []
        for _ in range(10):
            e0.record()
            z.copy_(x)
            e1.record()
            e1.synchronize()
            cts.append(e0.elapsed_time(e1) / 1e3)
        cts.sort()
        # First calls at sizes this process has not run the chain at (tcfuse: a chain it has
        # not seen, run as issued while it plans; torch.compile: a recompile, or its dynamic
        # kernel): a median over seven sizes, each call timed alone.
        news = []
        for k in range(1, 8):
            xk = torch.randn(n - 4096 * k, device="cuda", dtype=dt)
            yk = torch.randn(n - 4096 * k, device="cuda", dtype=dt)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            rk = f(xk, yk)
            torch.cuda.synchronize()
            news.append(time.perf_counter() - t0)
            del rk
        news.sort()
        ib = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[r.element_size()]
        digest = int(r.view(ib).to(torch.int64).mul(torch.arange(1, n + 1, device="cuda") % 1000003).sum())
        nbytes = x.element_size() * n * (3 if name in ("swiglu", "residual") else 2)
        res.append(dict(case=name, n=n, dtype=str(dt).replace("torch.", ""), first=first,
                        new_median=news[len(news) // 2], new_max=news[-1],
                        median=ts[len(ts) // 2], gpu=gts[len(gts) // 2], copy=cts[len(cts) // 2],
                        kernel=kern,
                        bytes=nbytes, copy_bytes=2 * x.element_size() * n, digest=digest))
    print("RESULT " + json.dumps(res))


def run_child(variant, quick):
    env = dict(os.environ)
    cmd = [sys.executable, __file__, "--child", variant] + (["--quick"] if quick else [])
    if variant == "tcfuse":
        env.update(LD_PRELOAD=os.path.join(ROOT, "build", "libtcfuse.so"), TCFUSE_MODE="fuse",
                   TCFUSE_STATS="1")
        env.setdefault("TCFUSE_CACHE_DIR", "/tmp/tcfuse-bench-cache")
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    line = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    if p.returncode or not line:
        print(f"{variant}: failed (rc {p.returncode})\n{p.stderr[-3000:]}")
        return None, p.stderr
    return json.loads(line[0][7:]), p.stderr


def main():
    quick = "--quick" in sys.argv
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError
    except Exception:
        print("bench/fusion: skipped (no CUDA GPU)")
        return 0
    eager, _ = run_child("eager", quick)
    fused, log = run_child("tcfuse", quick)
    comp, _ = run_child("compile", quick)
    if not eager or not fused:
        return 1
    print(f"bench/fusion, {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'case':9} {'n':>9} {'dtype':8} {'eager us':>9} {'tcfuse us':>9} {'compile us':>10}"
          f" {'eager/tcf':>9} {'cmp/tcf':>8} {'GPU: eager':>10} {'tcf us':>7} {'BW %copy':>8}"
          f" {'1st: eager ms':>13} {'tcf ms':>7} {'compile ms':>10} {'bitwise':>7}")
    for i, e in enumerate(eager):
        f = fused[i]
        c = comp[i] if comp else None
        kt = f.get("kernel")
        bw = (f["bytes"] / kt) / (f["copy_bytes"] / f["copy"]) * 100 if kt else float("nan")
        print(f"{e['case']:9} {e['n']:>9} {e['dtype']:8} {e['median']*1e6:9.1f} {f['median']*1e6:9.1f}"
              f" {(c['median']*1e6 if c else float('nan')):10.1f} {e['median']/f['median']:9.2f}"
              f" {((c['median']/f['median']) if c else float('nan')):8.2f} {e['kernel']*1e6:10.1f} {kt*1e6:7.1f}"
              f" {bw:8.0f} {e['first']*1e3:13.2f} {f['first']*1e3:7.2f}"
              f" {(c['first']*1e3 if c else float('nan')):10.1f} {('yes' if e['digest']==f['digest'] else 'NO'):>7}")
    print("first call at a size not run before in the process (median of 7 sizes n - 4096k;"
          " max in parentheses), ms")
    print(f"{'case':9} {'n':>9} {'dtype':8} {'eager':>15} {'tcfuse':>15} {'compile':>15} {'tcf/eager':>9}")
    for i, e in enumerate(eager):
        f = fused[i]
        c = comp[i] if comp else None
        cell = lambda r: f"{r['new_median']*1e3:6.2f} ({r['new_max']*1e3:6.2f})" if r else "-"
        print(f"{e['case']:9} {e['n']:>9} {e['dtype']:8} {cell(e):>15} {cell(f):>15} {cell(c):>15}"
              f" {f['new_median']/e['new_median']:9.2f}")
    print("tcfuse stats of the tcfuse run:")
    print("\n".join(l for l in log.splitlines() if l.startswith("tcfuse:")))
    return 0


if __name__ == "__main__":
    if "--child" in sys.argv:
        child(sys.argv[sys.argv.index("--child") + 1], "--quick" in sys.argv)
    else:
        sys.exit(main())
