"""A JAX program run op by op: a host that is not PyTorch. jax_disable_jit makes every
jax.numpy call (and jax.nn.gelu, itself jitted) run primitive by primitive, each primitive
one small XLA executable of XLA's own kernels, launched by XLA's runtime. A chain of
pre-norm MLP blocks (layer norm written out, dense, tanh GELU, dense, residual), f32,
weights from a seeded numpy generator. Prints which backend and devices JAX sees and which
CUDA libraries the process mapped, the per-iteration times and a checksum of the first and
the last iteration's outputs (bench/programs/README.md).

    jax_mlp.py [--batch B] [--hidden H] [--layers L] [--iters N] [--warmup W]
               [--nondeterministic]

XLA_PYTHON_CLIENT_PREALLOCATE=false (unless set): JAX would otherwise take 75% of the
GPU's memory at start. --xla_gpu_deterministic_ops=true is added to XLA_FLAGS unless
--nondeterministic: XLA autotunes each GEMM by timing candidate kernels, so two processes
pick different kernels and two eager runs differ in their last bits (seen on the H100),
and no run under tcfuse could be compared with eager's.
"""
import argparse
import hashlib
import os
import re
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
if "--nondeterministic" not in sys.argv:
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_gpu_deterministic_ops=true").strip()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

CUDA_LIBS = re.compile(r"/(lib(?:cuda|cudart|cublas|cublasLt|cudnn[a-z_]*|nvrtc|nvJitLink|cufft|"
                       r"cusolver|cusparse|nccl|nvptxcompiler)[.]so[^ ]*)$")


def mapped_cuda_libs():
    """The CUDA libraries this process mapped, with the folder each came from."""
    seen = {}
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                m = CUDA_LIBS.search(line.strip())
                if m:
                    path = line.split()[-1]
                    seen.setdefault(m.group(1), os.path.dirname(path))
    except OSError:
        pass
    return seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--nondeterministic", action="store_true",
                    help="leave XLA's GEMM autotuning on (eager runs then differ)")
    a = ap.parse_args()
    import numpy as np
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_disable_jit", True)
    backend = jax.default_backend()
    print("jax %s backend %s devices %s" % (jax.__version__, backend, jax.devices()))
    if backend != "gpu":
        sys.exit("jax_mlp: JAX sees no GPU (backend %s)" % backend)

    rng = np.random.RandomState(0)
    hid, ff = a.hidden, 4 * a.hidden

    def w(*shape, scale=0.02):
        return jax.device_put((rng.standard_normal(shape) * scale).astype(np.float32))

    params = [{"g": w(hid, scale=0.1) + 1.0, "b": w(hid), "w1": w(hid, ff), "b1": w(ff),
               "w2": w(ff, hid), "b2": w(hid)} for _ in range(a.layers)]

    def block(x, p):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        d = x - mu
        var = jnp.mean(d * d, axis=-1, keepdims=True)
        h = d * jax.lax.rsqrt(var + 1e-5) * p["g"] + p["b"]
        h = jax.nn.gelu(h @ p["w1"] + p["b1"], approximate=True)
        return x + (h @ p["w2"] + p["b2"])

    def forward(x):
        for p in params:
            x = block(x, p)
        return x

    data = np.random.RandomState(1)
    h = hashlib.sha256()
    times, probes = [], []
    for i in range(a.warmup + a.iters):
        if i % common.PROBE_EVERY == 0:   # between steps: the last one finished
            probes.append(common.probe())
        x = jax.device_put(data.standard_normal((a.batch, hid)).astype(np.float32))
        x.block_until_ready()
        t0 = time.perf_counter()
        y = forward(x)
        y.block_until_ready()
        times.append((time.perf_counter() - t0) * 1e3)
        if i in (0, a.warmup + a.iters - 1):
            o = np.asarray(y)
            common.digest(h, o.dtype, o.shape, o.tobytes())
        if i == 0:
            libs = mapped_cuda_libs()
            print("cuda_libs " + " ".join("%s=%s" % kv for kv in sorted(libs.items())))
    common.report("model jax_mlp batch %d hidden %d layers %d dtype float32 op-by-op" % (
        a.batch, hid, a.layers), times, a.warmup, h, probes)


if __name__ == "__main__":
    main()
