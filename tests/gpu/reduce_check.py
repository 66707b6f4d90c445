#!/usr/bin/env python3
"""reduce_check: generated row reductions against PyTorch's own reduce_kernel, bit for bit.

    python3 tests/gpu/reduce_check.py [--quick] [--only SUBSTR] [--keep DIR] [--nvrtc PATH] [-v]

What it checks: for sum, mean, amax, amin over the last dim (and, in half and bfloat16,
sum and mean to float32; in float32 vector_norm and the sum of everything), in float32,
float16 and bfloat16, rows of 1..8192 elements (odd ones, powers of two and their
neighbours) and a few longer ones, 1..2048 rows, each row start aligned and misaligned
(x[:, 1:] of an [M, K+1] tensor: every row a different vector shift), on random values
of wide range, on edge values (+-0, +-inf, NaNs of several payloads and signs,
subnormals), and on rows of zeros of both signs, the kernel tcfuse generates for the very
launch PyTorch made gives PyTorch's bits. And the splice points: LlamaRMSNorm's core
(x.float().pow(2).mean(-1, keepdim=True), then x.float() * that) as one kernel reading the
bfloat16 x once, against the eager chain.

How, in three steps (WORK is --keep DIR or a temporary directory):
 1. capture: this script runs itself with --capture under LD_PRELOAD=build/libtcfuse.so
    TCFUSE_MODE=observe TCFUSE_TRACE=WORK/trace.jsonl: each input is made by a seeded CUDA
    generator, each eager op runs once; WORK/cases.json gets every case with the addresses
    of its output and input and a hash of the output's bytes. observe mode changes nothing.
 2. decode and generate: build/tcfuse reduce --emit WORK/k TRACE: every reduce_kernel
    launch decoded (or refused, by reason), its kernel generated and compiled by NVRTC, its
    argument bytes printed. The splice cases: one run per launch with --prologue/--row-pass.
 3. check, in this process (nothing preloaded): each input made again from its seed, each
    eager op run again (it must hash as in step 1), the generated kernel launched on the
    same input with the launch's arguments (src and dst rebound to this process's tensors;
    the input's alignment must be the captured one) into a buffer of 0xAB bytes, compared
    bitwise with the eager output.

Prints a FAIL line per mismatch (PASS lines with -v), a table by dtype and op, and ends with
`reduce_check: N passed, M failed, R refused, U without a reduce_kernel launch`. A launch
refused as a global reduce (several blocks per output: long rows, few of them) is expected
and counted; any other refusal of a last-dim reduction is a failure. Exits 1 when anything
failed or a dtype/op pair had no case checked. Skips (exit 0) without torch or a GPU.
Needs build/libtcfuse.so and build/tcfuse (make, then carry build/).
"""
import argparse
import ctypes
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ESIZE = {"f32": 4, "f16": 2, "bf16": 2}
ARGS_SIZE = 224                       # tcf_reduce_args_t
OFF_SRC, OFF_DST, OFF_BUF, OFF_S = 0, 8, 128, 192
EXPECTED_REFUSALS = {"reduce-global"}

# ---- the cases (pure Python: tests/gpu/selftest.py checks these helpers) --------------------

KS_FULL = [1, 2, 3, 5, 8, 16, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 511,
           512, 513, 777, 1000, 1023, 1024, 1025, 2047, 2048, 2049, 3000, 4095, 4096, 4097,
           5000, 6144, 8191, 8192, 8193, 11008, 16384, 65536, 262144]
MS_FULL = [1, 3, 7, 64, 300, 2048]
KS_QUICK = [1, 5, 33, 127, 128, 1000, 1025, 4097, 8192, 65536]
MS_QUICK = [1, 7, 300]
OPS = {"f32": ["sum", "mean", "amax", "amin", "norm"],
       "f16": ["sum", "mean", "amax", "amin", "sumf", "meanf"],
       "bf16": ["sum", "mean", "amax", "amin", "sumf", "meanf"]}
# LlamaRMSNorm's core: (rows, row length, sliced)
SPLICE_FULL = [(1, 4096, False), (7, 1000, True), (64, 2048, False), (300, 777, True),
               (3, 8193, False), (16, 5000, True), (2048, 128, False), (5, 33, True)]
SPLICE_QUICK = [(7, 1000, True), (64, 2048, False), (3, 8193, False)]


def make_cases(quick=False, only=""):
    """[(id, dt, M, K, sliced, kind, ops)]: every input once, with the ops run on it."""
    ks, ms = (KS_QUICK, MS_QUICK) if quick else (KS_FULL, MS_FULL)
    cases = []
    for dt in ("f32", "f16", "bf16"):
        for K in ks:
            for M in ms:
                if M > 1 and M * K > (1 << 21):
                    continue
                for sliced in (False, True):
                    ops = list(OPS[dt]) + (["all"] if dt == "f32" and M > 1 and not sliced and K < 4096 else [])
                    cases.append((dt, M, K, sliced, "rand", ops))
                    if M in (1, 7, 64) and K <= 65536:
                        cases.append((dt, M, K, sliced, "spec", ["amax", "amin", "sum", "mean"]))
                    if M in (1, 7) and K <= 65536 and not sliced:
                        cases.append((dt, M, K, sliced, "zero", ["sum", "sumf" if dt != "f32" else "mean"]))
    out = []
    for c in cases:
        name = case_name(len(out), *c[:5])
        ops = [op for op in c[5] if only in "%s %s" % (name, op)]
        if ops:
            out.append((len(out),) + c[:5] + (ops,))
    return out


def case_name(i, dt, M, K, sliced, kind):
    return "%s_M%d_K%d%s_%s" % (dt, M, K, "_sliced" if sliced else "", kind)


def parse_reduce_output(text):
    """`tcfuse reduce` output -> (records, summary line). A record: n, status ('ok', a
    refusal reason, or 'compile-error'), and the line's key=value fields (dst, src as ints)."""
    recs, summary = [], ""
    for line in text.splitlines():
        if line.startswith("summary: "):
            summary = line
        m = re.match(r"^reduce (\d+): (\S+)(.*)$", line)
        if not m:
            continue
        rec = {"n": int(m.group(1)), "status": m.group(2)}
        for tok in m.group(3).split():
            if "=" in tok:
                k, v = tok.split("=", 1)
                rec.setdefault(k, v)
        if rec["status"] == "ok" and rec.get("error") == "compile":
            rec["status"] = "compile-error"
        for k in ("src", "dst"):
            if k in rec:
                rec[k] = int(rec[k], 16)
        for k in ("lgrid", "lblock"):
            if k in rec:
                rec[k] = tuple(int(x) for x in rec[k].split(","))
        recs.append(rec)
    return recs, summary


def by_dst(recs):
    """dst address -> the records of launches writing there."""
    d = {}
    for r in recs:
        if "dst" in r:
            d.setdefault(r["dst"], []).append(r)
    return d


def patch_args(hexargs, src=None, dst=None, bufs=(), scalars=()):
    """The kernel's argument bytes with src, dst, buf[i] and s[i] rebound."""
    a = bytearray.fromhex(hexargs)
    if len(a) != ARGS_SIZE:
        raise ValueError("args of %d bytes, not %d" % (len(a), ARGS_SIZE))
    if src is not None:
        a[OFF_SRC:OFF_SRC + 8] = int(src).to_bytes(8, "little")
    if dst is not None:
        a[OFF_DST:OFF_DST + 8] = int(dst).to_bytes(8, "little")
    for i, b in enumerate(bufs):
        a[OFF_BUF + 8 * i:OFF_BUF + 8 * i + 8] = int(b).to_bytes(8, "little")
    for i, s in enumerate(scalars):
        a[OFF_S + 4 * i:OFF_S + 4 * i + 4] = int(s).to_bytes(4, "little")
    return bytes(a)


def verdict(rec, K):
    """What a launch's record means for its case: 'check', 'refused' (expected) or 'fail'."""
    if rec["status"] == "ok":
        return "check"
    if rec["status"] in EXPECTED_REFUSALS:
        return "refused"
    if rec["status"] in ("reduce-outer-dim", "reduce-strided") and K == 1:
        return "refused"   # rows of one: TensorIterator coalesces the reduced dim away
    return "fail"


# The splice: the reduced tensor is x.float()**2 (eager stored it as float), x is bf16 in
# buf[0] with rows s[0] elements apart; the row pass writes x.float() * mean to buf[1].
PROLOGUE = """  const tcf_b *x = (const tcf_b *)a.buf[0];
  const float f = tcf_b2f(x[(unsigned long long)r.row * a.s[0] + j]);
  return __fmul_rn(f, f);
"""
ROW_PASS = """  const tcf_b *x = (const tcf_b *)a.buf[0];
  float *y = (float *)a.buf[1];
  for (unsigned j = g; j < a.num_inputs; j += TCF_G)
    y[(unsigned long long)r.row * a.num_inputs + j] =
        __fmul_rn(tcf_b2f(x[(unsigned long long)r.row * a.s[0] + j]), v);
"""

# ---- the GPU side ---------------------------------------------------------------------------

SPEC32 = [0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00001, 0xffc00002, 0x7fc12345,
          0x00000001, 0x807fffff]
SPEC16 = {"f16": [0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e01, 0xfe02, 0x7e33, 0x0001, 0x83ff],
          "bf16": [0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc1, 0xffc2, 0x7fd3, 0x0001, 0x807f]}


def make_input(torch, dt, M, K, sliced, kind, seed):
    """The input of a case: the same values (and alignment) in every process."""
    DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    g = torch.Generator(device="cuda").manual_seed(seed)
    Kp = K + 1 if sliced else K
    s = {"f32": 2.5, "f16": 1.2, "bf16": 3.0}[dt]
    x = torch.randn(M, Kp, device="cuda", generator=g) * torch.exp(
        torch.randn(M, Kp, device="cuda", generator=g) * s)
    x = x.clamp(-6e4, 6e4).to(DT[dt])
    u = torch.rand(M, Kp, device="cuda", generator=g)
    if kind == "zero":                  # +-0, a row of -0 (the sum must be +0)
        z = torch.where(torch.rand(M, Kp, device="cuda", generator=g) < 0.5, -0.0, 0.0).to(DT[dt])
        x = torch.where(u < 0.6, z, x)
        x[0] = -0.0
    elif kind == "spec":                # 5%: +-0, +-inf, NaN payloads and signs, subnormals
        idx = torch.randint(0, 9, (M, Kp), device="cuda", generator=g)
        if dt == "f32":
            vals, it = [v - (1 << 32) if v >= (1 << 31) else v for v in SPEC32], torch.int32
        else:
            vals, it = [v - (1 << 16) if v >= (1 << 15) else v for v in SPEC16[dt]], torch.int16
        spec = torch.tensor(vals, device="cuda", dtype=it)[idx].view(DT[dt])
        x = torch.where(u < 0.05, spec, x)
    return x[:, 1:] if sliced else x


def run_op(torch, x, op):
    if op == "sum": return x.sum(-1)
    if op == "sumf": return x.sum(-1, dtype=torch.float32)
    if op == "mean": return x.mean(-1)
    if op == "meanf": return x.mean(-1, dtype=torch.float32)
    if op == "amax": return x.amax(-1)
    if op == "amin": return x.amin(-1)
    if op == "norm": return torch.linalg.vector_norm(x, dim=-1)
    if op == "all": return x.sum().reshape(1)
    raise ValueError(op)


def rms_core(torch, x):
    h = x.float()
    var = h.pow(2).mean(-1, keepdim=True)
    return var, h * var


def digest(torch, t):
    return hashlib.sha1(t.contiguous().view(torch.uint8).cpu().numpy().tobytes()).hexdigest()


def capture(args):
    """Step 1, under tcfuse: run every eager op once, write the cases."""
    import torch
    cases = make_cases(args.quick, args.only)
    keep, out = [], []
    for cid, dt, M, K, sliced, kind, ops in cases:
        x = make_input(torch, dt, M, K, sliced, kind, 1000 + cid)
        for op in ops:
            y = run_op(torch, x, op)
            keep.append(y)
            out.append({"case": cid, "op": op, "dst": y.data_ptr(), "src": x.data_ptr(), "y": len(keep) - 1})
    splices = []
    for i, (M, K, sliced) in enumerate(SPLICE_QUICK if args.quick else SPLICE_FULL):
        x = make_input(torch, "bf16", M, K, sliced, "rand", 500 + i)
        var, y = rms_core(torch, x)
        keep += [var, y]
        splices.append({"i": i, "M": M, "K": K, "sliced": sliced, "dst": var.data_ptr(),
                        "var": len(keep) - 2, "yy": len(keep) - 1})
    torch.cuda.synchronize()
    for o in out:
        o["sha"] = digest(torch, keep[o.pop("y")])
    for s in splices:
        s["sha_var"], s["sha_y"] = digest(torch, keep[s.pop("var")]), digest(torch, keep[s.pop("yy")])
    with open(args.capture, "w") as f:
        json.dump({"quick": args.quick, "only": args.only, "outputs": out, "splices": splices}, f)
    print("reduce_check capture: %d inputs, %d eager reductions, %d splice chains" % (len(cases), len(out), len(splices)))
    return 0


class Driver:
    """The driver API on PyTorch's context: load a cubin, launch tcf_reduce(args)."""

    def __init__(self, torch):
        self.torch = torch
        self.cu = ctypes.CDLL("libcuda.so.1")
        self.cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.fns, self.keep = {}, []

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError("%s failed: CUresult %d" % (what, rc))

    def load(self, path):
        if path not in self.fns:
            data = open(path, "rb").read()
            mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
            self.check(self.cu.cuModuleLoadData(ctypes.byref(mod), data), "cuModuleLoadData")
            self.check(self.cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"tcf_reduce"), "cuModuleGetFunction")
            self.keep.append(data)
            self.fns[path] = fn
        return self.fns[path]

    def launch(self, fn, grid, block, argbytes):
        buf = ctypes.create_string_buffer(argbytes, len(argbytes))
        params = (ctypes.c_void_p * 1)(ctypes.addressof(buf))
        stream = self.torch.cuda.current_stream().cuda_stream
        self.check(self.cu.cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                          0, stream, params, None), "cuLaunchKernel")


def bits(torch, t):
    t = t.contiguous().reshape(-1)
    return t.view({4: torch.int32, 2: torch.int16}[t.element_size()])


def compare(torch, eager, gen):
    """None when equal bit for bit, else a short description of the difference."""
    eb, gb = bits(torch, eager), bits(torch, gen)
    if torch.equal(eb, gb):
        return None
    bad = (eb != gb).nonzero().flatten()
    nan_only = int((eager.reshape(-1).isnan() & gen.reshape(-1).isnan())[bad].sum())
    ex = " ".join("[%d eager=%x gen=%x]" % (i, int(eb[i]) & 0xFFFFFFFF, int(gb[i]) & 0xFFFFFFFF)
                  for i in bad[:3].tolist())
    return "%d of %d differ (%d both NaN) %s" % (bad.numel(), eb.numel(), nan_only, ex)


def nvrtc_candidates(torch):
    """PyTorch's own NVRTC first, then the default search (None), then the toolkit's."""
    site = os.path.dirname(os.path.dirname(torch.__file__))
    ok = lambda p: "builtins" not in p and ".alt." not in p
    bundled = sorted(p for pat in ("nvidia/*/lib/libnvrtc.so*", "nvidia/*/*/lib/libnvrtc.so*")
                     for p in glob.glob(os.path.join(site, pat)) if ok(p))
    return bundled + [None] + sorted(p for p in glob.glob("/usr/local/cuda*/lib64/libnvrtc.so*") if ok(p))


def tcfuse_reduce(tcfuse, argv, candidates):
    """`tcfuse reduce ARGV` with the first NVRTC that opens: (returncode, stdout, stderr)."""
    r = None
    for cand in candidates:
        env = dict(os.environ)
        env.pop("TCFUSE_NVRTC", None)
        if cand:
            env["TCFUSE_NVRTC"] = cand
        r = subprocess.run([tcfuse, "reduce"] + argv, capture_output=True, text=True, env=env)
        if "NVRTC unavailable" not in r.stderr:
            break
    return r.returncode, r.stdout, r.stderr


def main():
    ap = argparse.ArgumentParser(description="generated row reductions against PyTorch, bitwise")
    ap.add_argument("--quick", action="store_true", help="fewer shapes (a smoke test)")
    ap.add_argument("--only", default="", help="cases whose 'NAME OP' contains this")
    ap.add_argument("--keep", default="", help="work directory (kept); default a temporary one")
    ap.add_argument("--nvrtc", default=os.environ.get("TCFUSE_NVRTC", ""))
    ap.add_argument("--capture", default="", help=argparse.SUPPRESS)
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("reduce_check: skipped (no torch)")
        return 0
    if not torch.cuda.is_available():
        print("reduce_check: skipped (no GPU)")
        return 0
    if args.capture:
        return capture(args)
    lib, tcfuse = os.path.join(ROOT, "build", "libtcfuse.so"), os.path.join(ROOT, "build", "tcfuse")
    for p in (lib, tcfuse):
        if not os.path.exists(p):
            print("reduce_check: %s is missing: build it (make) and carry build/" % p)
            print("reduce_check: 0 passed, 1 failed")
            return 1
    work = args.keep or tempfile.mkdtemp(prefix="reduce_check.")
    os.makedirs(os.path.join(work, "k"), exist_ok=True)
    t0 = time.time()
    major, minor = torch.cuda.get_device_capability()
    print("reduce_check: torch %s (CUDA %s), %s, sm_%d%d, work in %s" % (
        torch.__version__, torch.version.cuda, torch.cuda.get_device_name(), major, minor, work))

    # 1. capture
    trace, casefile = os.path.join(work, "trace.jsonl"), os.path.join(work, "cases.json")
    env = dict(os.environ, LD_PRELOAD=lib, TCFUSE_MODE="observe", TCFUSE_TRACE=trace,
               TCFUSE_TRACE_LIMIT="2GiB")
    cmd = [sys.executable, os.path.abspath(__file__), "--capture", casefile] + (["--quick"] if args.quick else []) + \
          (["--only", args.only] if args.only else [])
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    if r.returncode != 0 or not os.path.exists(casefile):
        print("reduce_check: the capture failed (rc %d): %s" % (r.returncode, r.stderr.strip()[-2000:]))
        print("reduce_check: 0 passed, 1 failed")
        return 1
    cap = json.load(open(casefile))
    print("reduce_check: captured in %.1fs (trace %.1f MiB)" % (time.time() - t0, os.path.getsize(trace) / 2**20))

    # 2. decode and generate
    cands = [args.nvrtc] if args.nvrtc else nvrtc_candidates(torch)
    t1 = time.time()
    rc, text, err = tcfuse_reduce(tcfuse, ["--emit", os.path.join(work, "k"), "--arch", "%d%d" % (major, minor), trace], cands)
    with open(os.path.join(work, "reduce.txt"), "w") as f:
        f.write(text)
    recs, summary = parse_reduce_output(text)
    kline = [l for l in text.splitlines() if l.startswith("kernels: ")]
    print("reduce_check: tcfuse reduce (rc %d, %.1fs): %s; %s" % (rc, time.time() - t1, summary[len("summary: "):],
                                                               kline[0][len("kernels: "):] if kline else err.strip()))
    if not recs and rc != 0:
        print("reduce_check: tcfuse reduce failed: %s" % err.strip())
        print("reduce_check: 0 passed, 1 failed")
        return 1
    dst = by_dst(recs)

    # 3. check
    drv = Driver(torch)
    cases = {c[0]: c for c in make_cases(cap["quick"], cap["only"])}
    tally, passed, failed, refused, nolaunch, reasons = {}, 0, 0, 0, 0, {}
    outs = {}
    for o in cap["outputs"]:
        outs.setdefault(o["case"], []).append(o)
    for cid in sorted(outs):
        _, dt, M, K, sliced, kind, ops = cases[cid]
        name = case_name(cid, dt, M, K, sliced, kind)
        x = make_input(torch, dt, M, K, sliced, kind, 1000 + cid)
        for o in outs[cid]:
            label = "%s %s" % (name, o["op"])
            t = tally.setdefault((dt, o["op"]), [0, 0, 0, 0])   # passed, failed, refused, no launch
            y = run_op(torch, x, o["op"])
            why = None
            if digest(torch, y) != o["sha"]:
                why = "eager gave other bits than under tcfuse observe (nondeterminism?)"
            launches = dst.get(o["dst"], [])
            if why is None and not launches:
                nolaunch += 1
                t[3] += 1
                if args.v:
                    print("NOLAUNCH %s: no reduce_kernel wrote its output" % label)
                continue
            if why is None:
                rec = launches[-1]
                v = verdict(rec, K)
                if v == "refused":
                    refused += 1
                    t[2] += 1
                    reasons[rec["status"]] = reasons.get(rec["status"], 0) + 1
                    if args.v:
                        print("REFUSED %s: %s" % (label, rec["status"]))
                    continue
                if v == "fail":
                    why = "launch %d: %s" % (rec["n"], rec["status"])
                elif o["src"] % 16 != x.data_ptr() % 16:
                    why = "input alignment %d, captured %d" % (x.data_ptr() % 16, o["src"] % 16)
                elif rec.get("src") != o["src"]:
                    why = "the launch read 0x%x, the input was 0x%x" % (rec.get("src", 0), o["src"])
                else:
                    gen = torch.empty_like(y).contiguous()
                    gen.view(torch.uint8).fill_(0xAB)
                    fn = drv.load(os.path.join(work, "k", rec["kernel"] + ".cubin"))
                    drv.launch(fn, rec["lgrid"], rec["lblock"], patch_args(rec["args"], x.data_ptr(), gen.data_ptr()))
                    why = compare(torch, y, gen)
                    if why:
                        why = "%s (launch %d, %s, bw=%s bh=%s vec=%s split_y=%s shift=%s)" % (
                            why, rec["n"], rec["kernel"], rec["bw"], rec["bh"], rec["vec"], rec["split_y"], rec["shift"])
            if why:
                failed += 1
                t[1] += 1
                print("FAIL %s: %s" % (label, why))
            else:
                passed += 1
                t[0] += 1
                if args.v:
                    print("PASS %s" % label)

    # the splice: LlamaRMSNorm's core in one kernel
    t = tally.setdefault(("bf16", "rmsnorm-splice"), [0, 0, 0, 0])
    pro, row = os.path.join(work, "prologue.cu"), os.path.join(work, "rowpass.cu")
    for path, text in ((pro, PROLOGUE), (row, ROW_PASS)):
        with open(path, "w") as f:
            f.write(text)
    for s in cap["splices"]:
        label = "bf16_M%d_K%d%s rmsnorm-splice" % (s["M"], s["K"], "_sliced" if s["sliced"] else "")
        launches = dst.get(s["dst"], [])
        why = None
        if not launches:
            why = "no reduce_kernel wrote the mean"
        elif launches[-1]["status"] != "ok":
            why = "launch %d: %s" % (launches[-1]["n"], launches[-1]["status"])
        else:
            n = launches[-1]["n"]
            kdir = os.path.join(work, "splice%d" % s["i"])
            os.makedirs(kdir, exist_ok=True)
            rc, text, err = tcfuse_reduce(tcfuse, ["--emit", kdir, "--arch", "%d%d" % (major, minor), "--launch", str(n),
                                                   "--prologue", pro, "--row-pass", row, trace], cands)
            srec = [r for r in parse_reduce_output(text)[0] if r["n"] == n]
            if rc != 0 or not srec or srec[0]["status"] != "ok":
                why = "tcfuse reduce --launch %d with the splice: rc %d %s" % (n, rc, (text + err).strip()[-1500:])
            else:
                x = make_input(torch, "bf16", s["M"], s["K"], s["sliced"], "rand", 500 + s["i"])
                var, y = rms_core(torch, x)
                if digest(torch, var) != s["sha_var"] or digest(torch, y) != s["sha_y"]:
                    why = "eager gave other bits than under tcfuse observe"
                else:
                    gvar = torch.empty_like(var)
                    gy = torch.empty_like(y)
                    gvar.view(torch.uint8).fill_(0xAB), gy.view(torch.uint8).fill_(0xAB)
                    fn = drv.load(os.path.join(kdir, srec[0]["kernel"] + ".cubin"))
                    # src stays the captured address of x.float()**2: only its alignment counts
                    a = patch_args(srec[0]["args"], None, gvar.data_ptr(), bufs=(x.data_ptr(), gy.data_ptr()),
                                   scalars=(x.stride(0),))
                    drv.launch(fn, srec[0]["lgrid"], srec[0]["lblock"], a)
                    w1, w2 = compare(torch, var, gvar), compare(torch, y, gy)
                    why = "mean: %s" % w1 if w1 else "x * mean: %s" % w2 if w2 else None
        if why:
            failed += 1
            t[1] += 1
            print("FAIL %s: %s" % (label, why))
        else:
            passed += 1
            t[0] += 1
            if args.v:
                print("PASS %s" % label)

    print("%-6s %-15s %7s %7s %8s %10s" % ("dtype", "op", "passed", "failed", "refused", "no launch"))
    empty = []
    for (dt, op), (p, f, r_, u) in sorted(tally.items()):
        print("%-6s %-15s %7d %7d %8d %10d" % (dt, op, p, f, r_, u))
        if p == 0:
            empty.append("%s %s" % (dt, op))
    if empty:
        print("FAIL no case checked for: %s" % ", ".join(empty))
        failed += len(empty)
    print("reduce_check: %.1fs; refusals: %s" % (time.time() - t0, ", ".join("%d %s" % (v, k) for k, v in
                                                                          sorted(reasons.items())) or "none"))
    print("reduce_check: %d passed, %d failed, %d refused, %d without a reduce_kernel launch" % (
        passed, failed, refused, nolaunch))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
