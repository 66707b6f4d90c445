"""torchvision ResNet-50 inference, unmodified: bf16, channels-last, eval mode, random
weights (weights=None: no download). Convolutions are cuDNN's, batch norms and ReLUs
PyTorch's own kernels. Prints the per-iteration times and a checksum of the first and
the last iteration's logits (bench/programs/README.md).

    resnet.py [--batch B] [--iters N] [--warmup W] [--compile]

Batch 64 keeps the GPU busy (GPU-bound); batch 1 leaves it waiting on the host's launches.
Each iteration's images are drawn on the GPU from a seeded generator, outside the timing.
"""
import argparse
import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--compile", action="store_true")
    a = ap.parse_args()
    import torch
    import torchvision
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None)
    model = model.to(dev, torch.bfloat16, memory_format=torch.channels_last).eval()
    fn = torch.compile(model) if a.compile else model
    g = torch.Generator(device=dev).manual_seed(1)

    h = hashlib.sha256()
    times, probes = [], []
    for i in range(a.warmup + a.iters):
        if i % common.PROBE_EVERY == 0:   # between steps: the last one synchronized
            probes.append(common.probe())
        x = torch.randn(a.batch, 3, 224, 224, generator=g, device=dev).to(
            torch.bfloat16, memory_format=torch.channels_last)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            out = fn(x)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
        if i in (0, a.warmup + a.iters - 1):
            o = out.cpu().contiguous()
            common.digest(h, o.dtype, o.shape, o.reshape(-1).view(torch.uint8).numpy().tobytes())
    common.report("model resnet50 batch %d dtype bfloat16 channels_last%s" % (
        a.batch, " compiled" if a.compile else ""), times, a.warmup, h, probes)


if __name__ == "__main__":
    main()
