"""First-iteration benchmark: what a program's first calls cost under tcfuse, against eager
and torch.compile, each in fresh processes. Not a test: it prints a table.

    python3 bench/first_call.py [--procs N] [--variants eager,tcfuse cold,...]

Each child process initializes CUDA (not timed: the same for every variant), then times,
with a synchronize after each, the first call of the hand-written tanh-GELU on 2^24 floats
(PyTorch loads its kernels lazily here, in every variant), the second call right after it,
and, after a second of calls, the median of 20 later calls. Variants, interleaved, N
processes each (default 5), medians across processes. The first call is mostly the driver
loading PyTorch's kernels (lazily, on first launch), which varies by tens of milliseconds
from one process to the next: use enough processes to compare medians. Variants:
  eager           plain PyTorch
  eager async     plain PyTorch with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (the
                  allocator tcfuse's fuse mode selects)
  tcfuse observe  LD_PRELOAD=build/libtcfuse.so TCFUSE_MODE=observe
  tcfuse cold     TCFUSE_MODE=fuse, an empty disk cache: the first call runs as issued while
                  its kernel compiles in the background
  tcfuse warm     the same with the cache the cold runs left: the kernel loads from disk
  compile         torch.compile (default mode): the first call compiles
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = 1 << 24


def child(variant):
    import torch
    x = torch.randn(N, device="cuda")
    torch.cuda.synchronize()

    def f(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if variant == "compile":
        f = torch.compile(f)
    ts = []
    for _ in range(2):  # back to back, as a training or serving loop runs
        t0 = time.perf_counter()
        r = f(x)
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    t_end = time.perf_counter() + 1.0  # a second of calls: compiles finish meanwhile
    while time.perf_counter() < t_end:
        r = f(x)
        torch.cuda.synchronize()
    for _ in range(20):
        t0 = time.perf_counter()
        r = f(x)
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    del r
    rest = sorted(ts[2:])
    print("RESULT " + json.dumps(dict(first=ts[0], second=ts[1], steady=rest[len(rest) // 2])))


def run(variant, cache):
    env = dict(os.environ)
    if variant.startswith("tcfuse"):
        env.update(LD_PRELOAD=os.path.join(ROOT, "build", "libtcfuse.so"), TCFUSE_CACHE_DIR=cache,
                   TCFUSE_MODE="observe" if variant == "tcfuse observe" else "fuse")
    if variant == "eager async":
        env.update(PYTORCH_CUDA_ALLOC_CONF="backend:cudaMallocAsync")
    p = subprocess.run([sys.executable, __file__, "--child", variant], env=env,
                       capture_output=True, text=True, timeout=300)
    line = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    if p.returncode or not line:
        sys.stderr.write(f"{variant}: failed (rc {p.returncode})\n{p.stderr[-2000:]}\n")
        return None
    return json.loads(line[0][7:])


def main():
    procs = int(sys.argv[sys.argv.index("--procs") + 1]) if "--procs" in sys.argv else 5
    variants = ["eager", "eager async", "tcfuse observe", "tcfuse cold", "tcfuse warm", "compile"]
    if "--variants" in sys.argv:
        want = sys.argv[sys.argv.index("--variants") + 1].split(",")
        unknown = [v for v in want if v not in variants]
        if unknown:
            print(f"bench/first_call: unknown variant(s) {unknown}; known: {variants}", file=sys.stderr)
            return 2
        variants = [v for v in variants if v in want]
        if "tcfuse warm" in variants and "tcfuse cold" not in variants:
            print("bench/first_call: 'tcfuse warm' reads the cache 'tcfuse cold' leaves; name both",
                  file=sys.stderr)
            return 2
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError
    except Exception:
        print("bench/first_call: skipped (no CUDA GPU)")
        return 0
    res = {v: [] for v in variants}
    warm = tempfile.mkdtemp(prefix="tcfuse-first-warm-")
    try:
        for i in range(procs):
            for v in variants:
                cache = tempfile.mkdtemp(prefix="tcfuse-first-cold-") if v == "tcfuse cold" else warm
                r = run(v, cache)
                if v == "tcfuse cold":
                    # the warm runs read what a cold run left; this one's is the newest
                    shutil.rmtree(warm, ignore_errors=True)
                    shutil.copytree(cache, warm)
                    shutil.rmtree(cache, ignore_errors=True)
                if r:
                    res[v].append(r)
                    print(f"  {v:14} process {i + 1}: first {r['first']*1e3:.1f} ms", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(warm, ignore_errors=True)
    med = lambda xs: sorted(xs)[len(xs) // 2] if xs else float("nan")
    print(f"bench/first_call, {torch.cuda.get_device_name()}, torch {torch.__version__}: hand GELU, "
          f"2^24 float32, medians of {procs} fresh processes (ms)")
    print(f"{'variant':14} {'1st call':>9} {'2nd call':>9} {'later':>9} {'1st / eager 1st':>15}")
    e1 = med([r["first"] for r in res.get("eager", [])])
    for v in variants:
        f1 = med([r["first"] for r in res[v]])
        print(f"{v:14} {f1*1e3:9.3f} {med([r['second'] for r in res[v]])*1e3:9.3f}"
              f" {med([r['steady'] for r in res[v]])*1e3:10.3f} {f1/e1:15.2f}")
    return 0


if __name__ == "__main__":
    if "--child" in sys.argv:
        child(sys.argv[sys.argv.index("--child") + 1])
    else:
        sys.exit(main())
