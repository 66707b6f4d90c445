#!/usr/bin/env python3
"""verify_ops: every generated op (codegen/) against eager PyTorch, bit for bit, on the GPU.

    python3 tests/gpu/verify_ops.py [--only SUBSTR] [--keep DIR] [--nvrtc PATH] [-v]

For each op x dtype (and every cast direction, fills of edge values, and the hand-written
tanh-GELU chain) it runs
the eager op and the kernel codegen generates for the same group of ops (compiled by NVRTC
through tests/gpu/codegen_cli.c, loaded with the driver API in PyTorch's context) on the
same inputs, with vec 1 and 16-byte vectors, and compares the output bits. Inputs: all 2^16
patterns for half/bf16 (plus a tail, so the kernels' scalar tail runs), for float 2^20
random bit patterns, 2^19 normal values and specials (zeros, infinities, NaNs with payloads,
subnormals, extremes, the edges of exp/tanh/pow). Binary ops pair the inputs with a
permutation of themselves and with every pair of specials. Prints PASS/FAIL per case (FAIL
with the first differing inputs, eager and generated bits; "nan-only" counts mismatches
where both are NaN) and ends with `verify_ops: N passed, M failed`. Skips without a GPU.
Needs build/libtcfuse.a (make) and a C compiler; takes well under two minutes on an H100.
"""
import argparse, ctypes, glob, math, os, struct, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIZE = {"f32": 4, "f16": 2, "bf16": 2, "bool": 1}


def f32bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


# name, KIND, tensor inputs, sarg, mode, scalar holders ("o" opmath float, "t" in T, "i" the
# float reciprocal the host passes for x / s),
# eager(x, y, w, cond, s), scalar sets (values as the Python program would pass them)
VARIANTS = [
    ("add", "ADD", 2, "none", 0, "o", lambda x, y, w, c, s: torch.add(x, y, alpha=s[0]),
     [(1.0,), (-1.0,), (2.5,), (0.1,)]),
    ("add_self", "ADD", 1, "other", 0, "oo", lambda x, y, w, c, s: torch.add(x, s[1], alpha=s[0]),
     [(1.0, 1.25), (-1.0, 2.0), (1.0, 0.1)]),
    ("add_other", "ADD", 1, "self", 0, "oo", lambda x, y, w, c, s: torch.rsub(x, s[1], alpha=-s[0]),
     [(-1.0, 2.0), (-1.0, 0.1), (2.5, 1.0)]),
    ("mul", "MUL", 2, "none", 0, "", lambda x, y, w, c, s: x * y, [()]),
    ("mul_a", "MUL", 1, "a", 0, "o", lambda x, y, w, c, s: x * s[0], [(0.5,), (0.044715,), (-3.0,)]),
    # x / s runs as x * (1/s), the reciprocal taken in float on the host (BinaryDivTrueKernel.cu)
    ("mul_b", "MUL", 1, "b", 0, "i", lambda x, y, w, c, s: x / s[0], [(3.0,), (0.1,)]),
    ("div", "DIV", 2, "none", 0, "", lambda x, y, w, c, s: x / y, [()]),
    ("div_a", "DIV", 1, "a", 0, "t", lambda x, y, w, c, s: torch.div(torch.tensor(s[0]), x),
     [(3.0,), (-0.5,)]),
    ("neg", "NEG", 1, "none", 0, "", lambda x, y, w, c, s: -x, [()]),
    ("reciprocal", "RECIPROCAL", 1, "none", 0, "", lambda x, y, w, c, s: torch.reciprocal(x), [()]),
    ("exp", "EXP", 1, "none", 0, "", lambda x, y, w, c, s: torch.exp(x), [()]),
    ("log", "LOG", 1, "none", 0, "", lambda x, y, w, c, s: torch.log(x), [()]),
    ("tanh", "TANH", 1, "none", 0, "", lambda x, y, w, c, s: torch.tanh(x), [()]),
    ("sin", "SIN", 1, "none", 0, "", lambda x, y, w, c, s: torch.sin(x), [()]),
    ("cos", "COS", 1, "none", 0, "", lambda x, y, w, c, s: torch.cos(x), [()]),
    ("sigmoid", "SIGMOID", 1, "none", 0, "", lambda x, y, w, c, s: torch.sigmoid(x), [()]),
    ("silu", "SILU", 1, "none", 0, "", lambda x, y, w, c, s: F.silu(x), [()]),
    ("clamp_min", "CLAMP", 1, "none", 0, "oo", lambda x, y, w, c, s: torch.clamp_min(x, s[0]),
     [(0.25, 0.25), (-1.1, -1.1)]),
    ("relu", "CLAMP", 1, "none", 0, "oo", lambda x, y, w, c, s: torch.relu(x), [(0.0, 0.0)]),
    ("clamp_max", "CLAMP", 1, "none", 1, "oo", lambda x, y, w, c, s: torch.clamp_max(x, s[0]),
     [(1.5, 1.5), (0.1, 0.1)]),
    ("clamp", "CLAMP", 1, "none", 2, "oo", lambda x, y, w, c, s: torch.clamp(x, s[0], s[1]),
     [(-0.5, 2.0), (0.1, 0.3)]),
    ("gelu_tanh", "GELU_TANH", 1, "none", 0, "", lambda x, y, w, c, s: F.gelu(x, approximate="tanh"), [()]),
    ("gelu_erf", "GELU_ERF", 1, "none", 0, "", lambda x, y, w, c, s: F.gelu(x), [()]),
    ("pow2", "POW2", 1, "none", 0, "", lambda x, y, w, c, s: torch.pow(x, 2), [()]),
    ("pow3", "POW3", 1, "none", 0, "", lambda x, y, w, c, s: torch.pow(x, 3), [()]),
    ("powm2", "POWM2", 1, "none", 0, "", lambda x, y, w, c, s: torch.pow(x, -2), [()]),
    ("pow", "POW", 1, "none", 0, "t", lambda x, y, w, c, s: torch.pow(x, s[0]), [(2.5,), (-1.5,), (4.0,)]),
    ("sqrt", "SQRT", 1, "none", 0, "", lambda x, y, w, c, s: torch.sqrt(x), [()]),
    ("rsqrt", "RSQRT", 1, "none", 0, "", lambda x, y, w, c, s: torch.rsqrt(x), [()]),
    ("abs", "ABS", 1, "none", 0, "", lambda x, y, w, c, s: torch.abs(x), [()]),
    ("ge", "CMP_SCALAR", 1, "none", 0, "t", lambda x, y, w, c, s: x >= s[0], [(0.5,), (-2.0,)]),
    ("gt", "CMP_SCALAR", 1, "none", 1, "t", lambda x, y, w, c, s: x > s[0], [(0.5,)]),
    ("le", "CMP_SCALAR", 1, "none", 2, "t", lambda x, y, w, c, s: x <= s[0], [(0.5,)]),
    ("lt", "CMP_SCALAR", 1, "none", 3, "t", lambda x, y, w, c, s: x < s[0], [(0.5,)]),
    ("eq", "CMP_SCALAR", 1, "none", 4, "t", lambda x, y, w, c, s: x == s[0], [(0.5,), (0.0,)]),
    ("ne", "CMP_SCALAR", 1, "none", 5, "t", lambda x, y, w, c, s: x != s[0], [(0.5,)]),
    ("where", "WHERE", 3, "none", 0, "", lambda x, y, w, c, s: torch.where(c, x, y), [()]),
    ("addcmul", "ADDCMUL", 3, "none", 0, "o", lambda x, y, w, c, s: torch.addcmul(x, y, w, value=s[0]),
     [(0.5,), (-1.0,), (0.1,)]),
]


def specials_f32():
    bits = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA00000,
            0x7FFFFFFF, 0xFFFFFFFF, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000,
            0x80800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000, 0x3F000000, 0x34000000]
    vals = [88.7, 88.72, 88.73, 89.0, -87.3, -103.0, -103.97, -104.0, -150.0, 9.0, 9.01, 10.0,
            -9.0, 15.0, 0.5, 0.25, 2.0, 3.0, -2.0, 65504.0, 65520.0, 3.3895e38, 1e-38, 1e-45,
            1e-20, 1e20, 1.8e19, 0.044715, 1.0000001, 0.99999994, math.pi, -math.pi, 1e-4, 5.5e-3]
    return bits + [f32bits(v) for v in vals] + [f32bits(-v) for v in vals]


class Inputs:
    """x, y, w (T), cond (bool) for one dtype; the same values for every op."""

    def __init__(self, dt, n_random=1 << 20, chain=False):
        g = torch.Generator(device="cpu").manual_seed(1234)
        td = DT[dt]
        if dt == "f32":
            sp = torch.tensor(specials_f32(), dtype=torch.int64).to(torch.int32)
            rnd = torch.randint(-(1 << 31), 1 << 31, (n_random,), generator=g, dtype=torch.int64).to(torch.int32)
            nrm = torch.randn(1 << 19, generator=g) * torch.tensor([1.0, 10.0, 100.0, 0.01])[
                torch.randint(0, 4, (1 << 19,), generator=g)]
            base = torch.cat([sp, rnd, nrm.view(torch.int32)]) if not chain else \
                torch.cat([sp, (torch.randn(1 << 20, generator=g) * 3).view(torch.int32)])
        else:
            allp = torch.arange(1 << 16, dtype=torch.int32).to(torch.int16)
            sp16 = torch.tensor([0, -32768, 0x7C00, -1024, 0x7E00, 0x7F80, -128, 0x3C00, 0x3F80, 1, 0x7BFF,
                                 0x7F7F, 0x7C01, 0x7FC1], dtype=torch.int32).to(torch.int16)
            sp = sp16.to(torch.int32)
            base = torch.cat([allp, sp16]).to(torch.int32)
        # pairs: the values with a permutation of themselves, then every pair of specials
        perm = torch.randperm(base.numel(), generator=g)
        perm2 = torch.randperm(base.numel(), generator=g)
        si, sj = torch.meshgrid(torch.arange(sp.numel()), torch.arange(sp.numel()), indexing="ij")
        xb = torch.cat([base, sp[si.reshape(-1)]])
        yb = torch.cat([base[perm], sp[sj.reshape(-1)]])
        wb = torch.cat([base[perm2], sp[si.reshape(-1)]])
        it = torch.int32 if dt == "f32" else torch.int16
        self.x, self.y, self.w = (t.to(it).view(td).cuda() for t in (xb, yb, wb))
        self.c = (torch.randint(0, 2, (xb.numel(),), generator=g) == 1).cuda()
        self.n = xb.numel()

    def bits(self, t):
        return t.view(torch.uint8) if t.dtype == torch.bool else t.view({4: torch.int32, 2: torch.int16}[t.element_size()])


def scalar_bits(holder, dt, v):
    if holder == "i":  # inv_b = opmath_t(1.0) / scalar, in float on the host
        v = (torch.tensor(1.0, dtype=torch.float32) / torch.tensor(v, dtype=torch.float32)).item()
    if holder in "oi" or dt == "f32":
        return f32bits(v)
    return int(torch.tensor([v], dtype=DT[dt]).view(torch.int16).item()) & 0xFFFF


class Case:
    def __init__(self, name, bufs, ops, eager, scalar_sets, inputs, in_bufs):
        self.name, self.bufs, self.ops, self.eager = name, bufs, ops, eager
        self.scalar_sets, self.inputs, self.in_bufs = scalar_sets, inputs, in_bufs

    def spec(self, vec):
        lines = ["group %s_v%d vec %d" % (self.name, vec, vec)] + ["buf " + b for b in self.bufs]
        return "\n".join(lines + self.ops + ["end", ""])


def variant_cases(dt, inp):
    cases = []
    for name, kind, nin, sarg, mode, hold, fn, sets in VARIANTS:
        res = "bool" if kind == "CMP_SCALAR" else dt
        ins = [("bool" if kind == "WHERE" and i == 0 else dt) for i in range(nin)]
        op = "op %s t=%s r=%s o=%s sarg=%s mode=%d in=%s out=b%d" % (
            kind, dt, res, res, sarg, mode, ",".join("b%d:%s" % (i, d) for i, d in enumerate(ins)), nin)
        if hold:
            op += " sc=" + ",".join("%d:%s" % (j, dt if h == "t" else "f32") for j, h in enumerate(hold))
        srcs = {1: ["x"], 2: ["x", "y"], 3: (["c", "x", "y"] if kind == "WHERE" else ["x", "y", "w"])}[nin]
        sets_bits = [(s, [scalar_bits(h, dt, v) for h, v in zip(hold, s)]) for s in sets]
        eager = (lambda f: lambda i, s: f(i.x, i.y, i.w, i.c, s))(fn)
        cases.append(Case("%s_%s" % (name, dt), ins + [res], [op], eager, sets_bits, inp, srcs))
    return cases


def cast_cases(inputs):
    cases = []
    for src in ("f32", "f16", "bf16", "bool"):
        for dst in ("f32", "f16", "bf16", "bool"):
            if src == dst:
                continue
            t = "f32" if src == "f32" and dst in ("f16", "bf16") else dst
            op = "op CAST t=%s r=%s o=%s in=b0:%s out=b1" % (t, dst, dst, src, )
            inp = inputs["f16" if src == "bool" else src]
            src_t = "c" if src == "bool" else "x"
            eager = (lambda d, s: lambda i, _: getattr(i, s).to(DT[d]))(dst, src_t)
            cases.append(Case("cast_%s_%s" % (src, dst), [src, dst], [op], eager, [((), [])], inp, [src_t]))
    return cases


FILL_VALUES = (0.0, -0.0, 1.0, -2.5, float("nan"), float("inf"), float("-inf"), 1e-40, 6.0e-8,
               65504.0, 3.0e38, 0.1)


def fill_cases(inputs):
    """FillFunctor<T> (x.fill_(v), torch.full, deterministic mode's NaN): no input, the value
    held in T, stored as its bits."""
    cases = []
    for dt in ("f32", "f16", "bf16"):
        op = "op FILL t=%s r=%s o=%s in=- out=b0 sc=0:%s" % (dt, dt, dt, dt)
        # A finite value past T's range is refused by PyTorch before any kernel runs
        # ("cannot be converted without overflow"): no launch to compare against.
        big = torch.finfo(DT[dt]).max
        sets = [((v,), [scalar_bits("t", dt, v)]) for v in FILL_VALUES
                if not math.isfinite(v) or abs(v) <= big]
        eager = lambda i, s: torch.full_like(i.x, s[0])
        cases.append(Case("fill_%s" % dt, [dt], [op], eager, sets, inputs[dt], []))
    return cases


def hand_gelu_case(dt, inp):
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3))): eight eager launches."""
    o = lambda s: "t=%s r=%s o=%s %s" % (dt, dt, dt, s)
    ops = ["op MUL " + o("sarg=a in=b0:%s out=- sc=0:f32" % dt),
           "op POW3 " + o("in=b0:%s out=-" % dt),
           "op MUL " + o("sarg=a in=o1:%s out=- sc=1:f32" % dt),
           "op ADD " + o("in=b0:%s,o2:%s out=- sc=2:f32" % (dt, dt)),
           "op MUL " + o("sarg=a in=o3:%s out=- sc=3:f32" % dt),
           "op TANH " + o("in=o4:%s out=-" % dt),
           "op ADD " + o("sarg=other in=o5:%s out=- sc=4:f32,5:f32" % dt),
           "op MUL " + o("in=o0:%s,o6:%s out=b1" % (dt, dt))]
    k = math.sqrt(2.0 / math.pi)
    sc = [f32bits(v) for v in (0.5, 0.044715, 1.0, k, 1.0, 1.0)]
    eager = lambda i, _: 0.5 * i.x * (1.0 + torch.tanh(k * (i.x + 0.044715 * torch.pow(i.x, 3.0))))
    return Case("hand_gelu_%s" % dt, [dt, dt], ops, eager, [((), sc)], inp, ["x"])


class Driver:
    """The driver API on PyTorch's context: load cubins, launch tcf_fused(tcf_args)."""

    class Args(ctypes.Structure):
        _fields_ = [("n", ctypes.c_uint64), ("buf", ctypes.c_uint64 * 16), ("s", ctypes.c_uint32 * 16)]

    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")
        ctx = ctypes.c_void_p()
        self.check(self.cu.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:  # PyTorch always makes its primary context current; be sure
            dev = ctypes.c_int()
            self.check(self.cu.cuDeviceGet(ctypes.byref(dev), torch.cuda.current_device()), "cuDeviceGet")
            self.check(self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
            self.check(self.cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        self.cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.keep = []

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError("%s failed: CUresult %d" % (what, rc))

    def load(self, path):
        data = open(path, "rb").read()
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(mod), data), "cuModuleLoadData")
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"tcf_fused"), "cuModuleGetFunction")
        self.keep.append(data)
        return fn

    def launch(self, fn, vec, tensors, scalars):
        a = self.Args()
        a.n = tensors[-1].numel()
        for i, t in enumerate(tensors):
            a.buf[i] = t.data_ptr()
        for i, s in enumerate(scalars):
            a.s[i] = s
        params = (ctypes.c_void_p * 1)(ctypes.addressof(a))
        grid = max(1, -(-a.n // (128 * vec)))
        stream = torch.cuda.current_stream().cuda_stream
        self.check(self.cu.cuLaunchKernel(fn, grid, 1, 1, 128, 1, 1, 0, stream, params, None), "cuLaunchKernel")
        torch.cuda.synchronize()


def compare(case, inp, eager, gen, label, verbose):
    eb, gb = inp.bits(eager), inp.bits(gen)
    bad = (eb != gb).nonzero().flatten()
    if bad.numel() == 0:
        if verbose:
            print("PASS", label)
        return True
    nan_only = 0
    if eager.dtype.is_floating_point:
        nan_only = int((eager.isnan() & gen.isnan())[bad].sum())
    ex = []
    for i in bad[:4].tolist():
        ins = " ".join("%s=%x" % (s, int(inp.bits(getattr(inp, s))[i]) & 0xFFFFFFFF) for s in case.in_bufs)
        ex.append("[%d %s eager=%x gen=%x]" % (i, ins, int(eb[i]) & 0xFFFFFFFF, int(gb[i]) & 0xFFFFFFFF))
    print("FAIL %s: %d/%d differ (%d nan-only) %s" % (label, bad.numel(), eb.numel(), nan_only, " ".join(ex)))
    return False


def build_cli(tmp):
    lib = os.path.join(ROOT, "build", "libtcfuse.a")
    if subprocess.call(["make", "-s", "build/libtcfuse.a"], cwd=ROOT) != 0 and not os.path.exists(lib):
        raise SystemExit("verify_ops: cannot build build/libtcfuse.a")
    exe = os.path.join(tmp, "codegen_cli")
    cuda_inc = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include")
    subprocess.check_call([os.environ.get("CC", "cc"), "-std=c11", "-D_GNU_SOURCE", "-O2", "-I" + ROOT,
                           "-I" + cuda_inc, os.path.join(ROOT, "tests/gpu/codegen_cli.c"), lib, "-ldl",
                           "-lpthread", "-o", exe])
    return exe


def nvrtc_candidates():
    """PyTorch's own NVRTC first (the CUDA release its kernels came from), then the default
    search (None), then the toolkit's."""
    site = os.path.dirname(os.path.dirname(torch.__file__))
    ok = lambda p: "builtins" not in p and ".alt." not in p
    bundled = sorted(p for pat in ("nvidia/*/lib/libnvrtc.so*", "nvidia/*/*/lib/libnvrtc.so*")
                     for p in glob.glob(os.path.join(site, pat)) if ok(p))
    return bundled + [None] + sorted(p for p in glob.glob("/usr/local/cuda/lib64/libnvrtc.so*") if ok(p))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--keep", default="")
    ap.add_argument("--nvrtc", default=os.environ.get("TCFUSE_NVRTC", ""))
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    global torch, F, DT
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("verify_ops: skipped (no torch)")
        return 0
    if not torch.cuda.is_available():
        print("verify_ops: skipped (no GPU)")
        return 0
    DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "bool": torch.bool}
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # PyTorch's primary context, current on this thread
    major, minor = torch.cuda.get_device_capability()
    tmp = args.keep or tempfile.mkdtemp(prefix="verify_ops.")
    os.makedirs(tmp, exist_ok=True)
    cli = build_cli(tmp)

    inputs = {dt: Inputs(dt) for dt in ("f32", "f16", "bf16")}
    cases = [c for dt in ("f32", "f16", "bf16") for c in variant_cases(dt, inputs[dt])]
    cases += cast_cases(inputs)
    cases += fill_cases(inputs)
    chain_inputs = {"f32": Inputs("f32", chain=True), "f16": inputs["f16"], "bf16": inputs["bf16"]}
    cases += [hand_gelu_case(dt, chain_inputs[dt]) for dt in ("f32", "f16", "bf16")]
    cases = [c for c in cases if args.only in c.name]

    vecs = lambda c: (1, 16 // max(SIZE[b] for b in c.bufs))  # 16-byte packs of the widest
    spec = "".join(c.spec(v) for c in cases for v in vecs(c))
    out = None
    for cand in ([args.nvrtc] if args.nvrtc else nvrtc_candidates()):
        r = subprocess.run([cli, "--arch", "%d%d" % (major, minor)] + (["--nvrtc", cand] if cand else []) + [tmp],
                           input=spec, capture_output=True, text=True)
        if r.returncode == 0:
            out = r.stdout
            break
    if out is None:
        print("verify_ops: codegen_cli could not open NVRTC: %s" % r.stderr.strip())
        print("verify_ops: 0 passed, 1 failed")
        return 1
    status = dict(l.split(" ", 1) for l in out.splitlines() if " " in l)
    print("verify_ops: torch %s (CUDA %s), %s, NVRTC %s, sm_%d%d, work in %s" % (
        torch.__version__, torch.version.cuda, torch.cuda.get_device_name(), status.get("nvrtc", "?"),
        major, minor, tmp))

    drv = Driver()
    passed = failed = 0
    for c in cases:
        for v in vecs(c):
            gname = "%s_v%d" % (c.name, v)
            if status.get(gname) != "ok":
                print("FAIL %s: %s" % (gname, status.get(gname, "no result from codegen_cli")))
                failed += 1
                continue
            fn = drv.load(os.path.join(tmp, gname + ".cubin"))
            for sv, sb in c.scalar_sets:
                eager = c.eager(c.inputs, sv)
                gen = torch.empty_like(eager)
                gen.view(torch.uint8).fill_(0xAB)  # unwritten elements show
                drv.launch(fn, v, [getattr(c.inputs, s) for s in c.in_bufs] + [gen], sb)
                ok = compare(c, c.inputs, eager, gen, "%s s=%s" % (gname, sv), args.v)
                passed, failed = passed + ok, failed + (not ok)
    print("verify_ops: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
