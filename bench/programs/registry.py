"""The programs bench/run-all measures and bench/programs/trace records: for each, its
command line, its host (which decides the variants that apply: torch.compile is a one-line
switch only in the Python PyTorch programs), the binary bench/programs/build makes for it,
the shorter arguments of a traced run, and the GPUs it needs ("gpus": one process a GPU
under torchrun, `python -m torch.distributed.run`). Paths are relative to the repository's
root."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HF = ["bench/programs/hf.py"]
HF_TRACE = ["--layers", "2", "--iters", "1", "--warmup", "1"]   # as bench/programs/census
# The host-bound programs (a step of a few ms or less) measure 100-200 steps: twenty took
# 0.03-0.3 s, where one hiccup of the host moved a run's median, and graph mode had barely
# left its learning when the measured steps began. A run is seconds of start-up either way.
PROGRAMS = {
    # HF models (hf.py): random weights from configs.
    "gpt2-1x32": {"host": "pytorch", "args": HF + ["gpt2", "--batch", "1", "--seq", "32",
                                                   "--iters", "100", "--warmup", "10"]},
    "gpt2-16x512": {"host": "pytorch", "args": HF + ["gpt2", "--batch", "16", "--seq", "512",
                                                     "--iters", "10", "--warmup", "3"]},
    "llama-4x2048": {"host": "pytorch", "args": HF + ["llama", "--iters", "10", "--warmup", "3"]},
    "llama-1x32": {"host": "pytorch", "args": HF + ["llama", "--batch", "1", "--seq", "32",
                                                    "--iters", "100", "--warmup", "10"]},
    "bert-8x128": {"host": "pytorch", "args": HF + ["bert", "--iters", "100", "--warmup", "10"]},
    "llama-train": {"host": "pytorch", "args": HF + ["llama-train", "--deterministic", "--attn",
                                                     "eager", "--iters", "20", "--warmup", "3"]},
    # The training step data-parallel on two GPUs (NCCL), every rank preloaded through
    # torchrun as `tcfuse run -- torchrun ...` does: no torch.compile variant (a program of
    # several processes is not one switch away from it).
    "llama-ddp": {"host": "pytorch-dist", "gpus": 2,
                  "args": HF + ["llama-train", "--parallel", "ddp", "--deterministic", "--attn",
                                "eager", "--iters", "20", "--warmup", "3"]},
    "llama-fsdp": {"host": "pytorch-dist", "gpus": 2,
                   "args": HF + ["llama-train", "--parallel", "fsdp", "--deterministic", "--attn",
                                 "eager", "--iters", "20", "--warmup", "3"]},
    # torchvision ResNet-50, bf16 channels-last: GPU-bound at 64 images, host-bound at 1.
    "resnet50-b64": {"host": "pytorch", "args": ["bench/programs/resnet.py", "--batch", "64"],
                     "trace": ["--batch", "8", "--iters", "1", "--warmup", "1"]},
    "resnet50-b1": {"host": "pytorch", "args": ["bench/programs/resnet.py", "--batch", "1",
                                                 "--iters", "100", "--warmup", "10"],
                    "trace": ["--batch", "1", "--iters", "1", "--warmup", "1"]},
    # A C++ binary linking libtorch: PyTorch's kernels, no Python.
    "libtorch-block": {"host": "libtorch", "build": "libtorch_block",
                       "args": ["build/programs/libtorch_block", "--iters", "200", "--warmup", "20"],
                       "trace": ["--iters", "1", "--warmup", "1"]},
    # The same binary at one sequence of 32 tokens: launch-bound (the host issues a
    # launch in less time than libtorch spends on the op), the closed binary replay is for.
    "libtorch-1x32": {"host": "libtorch", "build": "libtorch_block",
                      "args": ["build/programs/libtorch_block", "--batch", "1", "--seq", "32",
                               "--iters", "200", "--warmup", "20"],
                      "trace": ["--iters", "1", "--warmup", "1"]},
    # Plain CUDA C, a thousand tiny kernels of its own per iteration.
    "smallk": {"host": "cuda", "build": "smallk",
               "args": ["build/programs/smallk", "--iters", "200", "--warmup", "20"],
               "trace": ["--iters", "1", "--warmup", "1", "--launches", "300"]},
    # JAX, op by op: XLA's kernels and runtime.
    "jax-mlp": {"host": "jax",
                "args": ["bench/programs/jax_mlp.py", "--iters", "100", "--warmup", "10"],
                "trace": ["--iters", "1", "--warmup", "1"]},
}
for _p in PROGRAMS.values():
    if _p["args"][0] == HF[0]:
        _p.setdefault("trace", HF_TRACE)
TORCH_COMPILE = "pytorch"   # the host whose programs take --compile


def variants_of(name, variants):
    """The variants that apply to a program: all but compile outside Python PyTorch."""
    return [v for v in variants if v != "compile" or PROGRAMS[name]["host"] == TORCH_COMPILE]


def command(name, variant="eager", trace=False, python=None, iters=None):
    """The argv that runs a program (in a traced run, with its shorter arguments; with
    iters, that many measured iterations)."""
    p = PROGRAMS[name]
    args = list(p["args"])
    if trace:   # a later option wins, in argparse as in the C programs' parsers
        args += p.get("trace", ["--iters", "1", "--warmup", "1"])
    if iters:
        args += ["--iters", str(iters)]
    if variant == "compile":
        args.append("--compile")
    exe = os.path.join(ROOT, args[0])
    if p.get("gpus"):   # torchrun, which starts one rank a GPU with the same environment
        return [python or sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc_per_node=%d" % p["gpus"], exe] + args[1:]
    if args[0].endswith(".py"):
        return [python or sys.executable, exe] + args[1:]
    return [exe] + args[1:]

