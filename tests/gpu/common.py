"""Shared by the GPU suite programs: determinism settings, the result file, timing marks.

A result file holds every named output of one run, in the order the program produced
them, so two runs compare with `cmp`. Format (version 1):
    b"TCFRES 1\\n", then per entry: b"<name>\\t<kind>\\t<meta>\\t<nbytes>\\n" + payload + b"\\n"
kind `raw`: payload = the tensor's bytes (contiguous, native little-endian).
kind `sha256`: tensors over RAW_LIMIT elements: payload = hex SHA-256 of all bytes, a
    space, then the bytes of a strided sample (<= SAMPLE elements), so the file stays small
    while any changed bit still changes the file.
kind `repr`: anything else (an error message, a Python number), as UTF-8 text.
meta is "dtype shape" for tensors. resdiff.py reads this format back.
"""
import hashlib
import json
import os
import random
import time

RAW_LIMIT = 1 << 16
SAMPLE = 4096


def setup(seed=0, device="cuda"):
    """Fixed seeds and deterministic kernels; returns the torch.device to use."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before cuBLAS starts
    import torch
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        torch.use_deterministic_algorithms(True, warn_only=True)
    except TypeError:  # very old torch
        torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("cuda requested but torch.cuda.is_available() is False")
    return dev


def sync(dev):
    import torch
    if dev.type == "cuda":
        torch.cuda.synchronize()


def tensor_bytes(t):
    import torch
    t = t.detach().to("cpu").contiguous().reshape(-1).clone()
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    u8 = t.view(torch.uint8)
    try:
        return u8.numpy().tobytes()
    except Exception:  # no numpy: slow but exact
        return bytes(u8.tolist())


class Results:
    """Collects named outputs; tensors stay on the device until flush() (so a group of ops
    runs back to back, as a program would, before the copies back to the host)."""

    def __init__(self):
        self.pending = []
        self.entries = []
        self.errors = 0

    def add(self, name, value):
        self.pending.append((name, value))

    def error(self, name, exc):
        self.errors += 1
        self.pending.append((name, "error: %s: %s" % (type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")))

    def flush(self):
        import torch
        for name, v in self.pending:
            if isinstance(v, torch.Tensor):
                data = tensor_bytes(v)
                meta = "%s %s" % (str(v.dtype).replace("torch.", ""), "x".join(map(str, v.shape)) or "scalar")
                if v.numel() <= RAW_LIMIT:
                    self.entries.append((name, "raw", meta, data))
                else:
                    es = max(1, v.element_size())
                    n = len(data) // es
                    stride = max(1, n // SAMPLE)
                    sample = b"".join(data[i * es:(i + 1) * es] for i in range(0, n, stride))
                    digest = hashlib.sha256(data).hexdigest().encode()
                    self.entries.append((name, "sha256", meta, digest + b" " + sample))
            else:
                self.entries.append((name, "repr", type(v).__name__, repr(v).encode()))
        self.pending = []

    def save(self, path):
        self.flush()
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(b"TCFRES 1\n")
            for name, kind, meta, payload in self.entries:
                f.write(("%s\t%s\t%s\t%d\n" % (name, kind, meta, len(payload))).encode())
                f.write(payload)
                f.write(b"\n")
        os.replace(tmp, path)


class Marks:
    """CLOCK_MONOTONIC nanoseconds around the measured iterations, the clock of tcfuse's
    trace `t` fields, so that perf.py can pick the trace's windows of those iterations."""

    def __init__(self, path):
        self.path = path
        self.t0 = None

    def start(self):
        self.t0 = time.monotonic_ns()

    def stop(self, iters):
        if self.path and self.t0 is not None:
            with open(self.path, "w") as f:
                json.dump({"t0": self.t0, "t1": time.monotonic_ns(), "iters": iters}, f)
                f.write("\n")


def compare_saved(a, b, label):
    """Two result files that torch.save wrote (a dict of name -> tensor), every tensor's
    bits compared: prints each that differs (how many elements, the first one's bits on
    either side), then "<label>: P passed, F failed"; returns 1 if any differed, else 0.
    Used by the fuse_* suite programs' --compare."""
    import torch
    A, B = torch.load(a), torch.load(b)
    bad = 0
    for k in A:
        x, y = A[k], B.get(k)
        iv = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()]
        if y is None or x.shape != y.shape or x.dtype != y.dtype or \
                not torch.equal(x.view(iv), y.view(iv)):
            d = (x.view(iv) != y.view(iv)).reshape(-1).nonzero() if y is not None and x.shape == y.shape \
                else torch.zeros(0)
            i = int(d[0]) if len(d) else -1
            print(f"DIFF {k}: {len(d)} elements differ; first at {i}: "
                  f"{x.view(iv).reshape(-1)[i].item():#x} vs {y.view(iv).reshape(-1)[i].item():#x}"
                  if i >= 0 else f"DIFF {k}: shape or dtype")
            bad += 1
    print(f"{label}: {len(A) - bad} passed, {bad} failed")
    return 1 if bad else 0


EDGE_VALUES = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-40, -1e-40, 1e-6, -3e-5,
               65504.0, -1e-8, 3.0, 88.7, -104.0]


def edge_rows(shape, dt, seed, edge=True, shift=0.0):
    """Seeded normal values times 3 (plus shift) in dtype dt on the GPU. With edge, and a
    2-d shape of more than two rows, row 2 begins with EDGE_VALUES (+-0, +-inf, NaN,
    subnormals, extremes): in one row only, as a NaN makes its whole row's result NaN."""
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(*shape, device="cuda", generator=g) * 3
    x = (x + shift if shift else x).to(dt)
    if edge and len(shape) == 2 and shape[0] > 2:
        sp = torch.tensor(EDGE_VALUES, dtype=torch.float32).to(dt).to("cuda")
        m = min(sp.numel(), shape[-1])
        x[2, :m] = sp[:m]
    return x

