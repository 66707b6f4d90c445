"""Kernel families by mangled name: the census's rows (bench/programs/hf.py --census).

One function, family(name), and the list FAMILIES in the order rows print. Order of the
tests matters: a copy or cast runs inside an elementwise loop (its lambda names the copy),
so copies are recognised before the loops (by the lambda's enclosing function, never by
"cast": every strided loop's name says gpu_kernel_impl_nocast); reductions before softmax and norms (a hand
RMSNorm's mean is a reduce_kernel)."""
import re

FAMILIES = [
    "gemm", "attention", "elementwise", "elementwise-strided", "copy-cast",
    "cat", "reduce", "softmax", "norm", "foreach", "index-embedding", "rng", "other",
]

_RULES = [
    ("gemm", re.compile(r"gemm|cutlass|xmma|nvjet|cublas", re.I)),
    ("attention", re.compile(r"flash|fmha|attention|efficient|cudnn", re.I)),
    ("copy-cast", re.compile(r"copy_kernel")),  # the copy lambdas: direct_, bfloat16_, float16_copy_kernel_cuda
    ("cat", re.compile(r"CatArray", re.I)),
    ("foreach", re.compile(r"multi_tensor_apply|foreach", re.I)),
    ("reduce", re.compile(r"reduce_kernel|Reduce", re.I)),
    ("softmax", re.compile(r"softmax", re.I)),
    ("norm", re.compile(r"layer_norm|LayerNorm|rms_norm|RowwiseMoments|batch_norm", re.I)),
    ("rng", re.compile(r"distribution|philox|curand|fused_dropout", re.I)),
    ("index-embedding", re.compile(r"index|embedding|gather|scatter|radix_sort|cub6detail", re.I)),
    ("elementwise", re.compile(r"vectorized_elementwise_kernel|unrolled_elementwise_kernel")),
    ("elementwise-strided", re.compile(r"elementwise_kernel")),
]


def family(name):
    for fam, rx in _RULES:
        if rx.search(name):
            return fam
    return "other"
