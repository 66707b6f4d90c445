#!/usr/bin/env python3
"""CPU-only checks of the GPU suites' helper scripts (no GPU, no torch): trim-trace.py on a
hand-made trace in the format of docs/TRACE.md, the stats parser on the stats lines tcfuse
prints, perf.py's per-iteration figures from both, reduce_check.py's case list, parsing and
argument bytes. `python3 tests/gpu/selftest.py`;
prints 'N passed, N failed' and exits non-zero on a failure."""
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tcfstats  # noqa: E402

passed = failed = 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: %s %s" % (what, detail))


def make_trace(path, windows=40, per_window=5, t0=1000):
    """Windows of `per_window` launches of two kernels, a stream-ordered alloc and free in
    each, a process-wide alloc before the first; window w closes at t0 + 100*(w+1)."""
    lines = [{"tcfuse_trace": 1, "version": "test", "pid": 1, "mode": "observe", "argv0": "x"}]
    lines.append({"ev": "alloc", "t": t0, "win": -1, "call": "cuMemAlloc_v2", "ptr": "0x7f0000000000",
                  "size": 1 << 20, "stream": "0x0", "rc": 0})
    seen = set()
    launches = 0
    for w in range(windows):
        t = t0 + 100 * w + 1
        for j in range(per_window):
            k = (w + j) % 3
            if k not in seen:
                seen.add(k)
                lines.append({"ev": "kernel", "id": k, "name": "_Z6kernel%di" % k, "handle": "0x%x" % (0x1000 + k),
                              "kind": "kernel", "params": [[0, 8], [8, 4]]})
            lines.append({"ev": "launch", "t": t + j, "win": w, "k": k, "via": "cuLaunchKernel", "grid": [1, 1, 1],
                          "block": [128, 1, 1], "smem": 0, "stream": "0x5", "rc": 0, "params": "00" * 12})
            launches += 1
        lines.append({"ev": "alloc", "t": t + 50, "win": w, "call": "cuMemAllocAsync", "ptr": "0x7f0000100000",
                      "size": 4096, "stream": "0x5", "rc": 0})
        lines.append({"ev": "free", "t": t + 60, "win": w, "call": "cuMemFreeAsync", "ptr": "0x7f0000100000",
                      "stream": "0x5", "rc": 0})
        reason = "cuStreamSynchronize" if w % 4 == 3 else "idle"
        lines.append({"ev": "window", "t": t0 + 100 * (w + 1), "id": w, "ctx": "0x1", "stream": "0x5",
                      "launches": per_window, "ops": 0, "key": "0x%016x" % (w % 4), "reason": reason})
    lines.append({"ev": "end", "t": t0 + 100 * windows + 5, "launches": launches, "windows": windows, "dropped": 0})
    with open(path, "w") as f:
        for obj in lines:
            f.write(json.dumps(obj) + "\n")
    return launches


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


STATS = """some program output
tcfuse: warning: something before the stats
tcfuse: stats: mode observe, pid 1234
tcfuse:   launches      %d (3 distinct kernels)
tcfuse:   windows       %d (launches per window: median 3, max 5)
tcfuse:   keys          2 distinct; %d of %d windows repeated an earlier key
tcfuse:   boundaries    cuStreamSynchronize %d, idle %d
tcfuse:                 cuCtxSynchronize %d
tcfuse:   allocator     4 allocs, %d frees (3 stream-ordered); frees visible: yes
"""


def stats_text(launches, windows, sync, idle, ctxsync, frees):
    return STATS % (launches, windows, windows - 2, windows, sync, idle, ctxsync, frees)


FAKE_PTEST = '''import os, time, unittest
MODE = os.environ.get("TCFUSE_MODE", "")

class TestFakeCUDA(unittest.TestCase):
    def test_ok_cuda_float32(self): pass
    def test_other_dtype_cuda_float64(self): pass
    def test_no_dtype_cuda(self): pass
    def test_skip_cuda_float16(self): self.skipTest("no reason")
    def test_fail_cuda_bfloat16(self): self.assertEqual(1, 2)
    def test_multi_cuda_int64_float32(self): pass
    @unittest.expectedFailure
    def test_xfail_cuda_float32(self): self.fail("expected")
    def test_fuseonly_cuda_float32(self): self.assertNotEqual(MODE, "fuse", "differs under tcfuse")
    def test_crash_cuda_float32(self):
        if MODE == "fuse" and os.environ.get("TCFUSE_FUSION") != "0":
            os.abort()
    def test_hang_cuda_float16(self):
        if MODE == "fuse" and os.environ.get("TCFUSE_COMPILE_WAIT") != "1":
            time.sleep(60)
    def test_sticky_cuda_bfloat16(self):
        if MODE == "fuse":
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
    def test_sub_cuda_float16(self):
        for i in range(2):
            with self.subTest(i=i):
                self.assertTrue(i == 0 or MODE != "fuse")

class TestFakeCPU(unittest.TestCase):
    def test_ok_cpu_float32(self): pass
'''

FUSE_STATS = '''tcfuse: stats: mode fuse, pid %d
tcfuse:   launches      100 (5 distinct kernels)
tcfuse:   decoded       80 of 100 launches (80.0%%): 60 held, 20 issued at once
tcfuse:   fused         7 groups; 30 launches removed, 12 stores dropped, 1 MiB of traffic avoided
tcfuse:   kernels       3 generated: 2 compiled, 1 from the disk cache, 3 verified; 5 decoded kernels checked alone, 1 disabled
tcfuse:   fallbacks     held_failed 2, compile_failed 1
tcfuse:   not held      none
tcfuse: fuse: compile failed: error at 0x%x
'''


def ptests_checks(d):
    """tests/gpu/pytorch-tests on fake test files (no GPU, no torch, no preload): the
    selection, the outcome kinds, restarts after a crash, a hang and a broken CUDA context,
    the differences from plain, the reruns and their variants, the stats sums."""
    import ptests
    tdir = os.path.join(d, "fake-tests")
    os.makedirs(tdir)
    for name in ("test_unary_ufuncs", "test_binary_ufuncs", "test_reductions"):
        with open(os.path.join(tdir, name + ".py"), "w") as f:
            f.write(FAKE_PTEST if name == "test_unary_ufuncs" else FAKE_PTEST.split("    def test_fuseonly")[0])
    check(ptests.selected("m.TestXCUDA.test_a_cuda_bfloat16", {"bfloat16"}) and
          ptests.selected("m.TestXCUDA.test_a_cuda_int64_float32", {"float32"}) and
          not ptests.selected("m.TestXCUDA.test_a_cuda_float64", {"float32"}) and
          not ptests.selected("m.TestXCUDA.test_a_cuda", {"float32"}) and
          not ptests.selected("m.TestXCPU.test_a_cpu_float32", {"float32"}), "ptests selection")
    work = os.path.join(d, "ptw")
    env = dict(os.environ, PTESTS_FORCE="1", PTESTS_LIB="", PTESTS_SHARDS="2", PTESTS_BUDGET="20",
               PTESTS_TEST_TIMEOUT="2", PTESTS_RERUN_BUDGET="25", PTESTS_WORK=work)
    env.pop("OUT", None)
    r = subprocess.run([os.path.join(HERE, "pytorch-tests"), tdir], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    try:
        s = json.load(open(os.path.join(work, "summary.json")))
    except (OSError, ValueError):
        s = None
    check(r.returncode == 1 and s is not None and "differ from plain" in r.stdout, "ptests runs", r.stdout[-1500:])
    if s is None:
        return
    sel = s["selected"]
    check(sel == {"test_unary_ufuncs": 10, "test_binary_ufuncs": 5, "test_reductions": 5}, "ptests selected", sel)
    pu = s["modes"]["plain"]["test_unary_ufuncs"]
    check((pu["pass"], pu["fail"], pu["skip"], pu["xfail"], pu["not_run"]) == (7, 1, 1, 1, 0), "ptests plain", pu)
    fu = s["modes"]["fuse"]["test_unary_ufuncs"]
    check((fu["pass"], fu["fail"], fu["error"], fu["crash"], fu["timeout"], fu["not_run"]) == (2, 3, 1, 1, 1, 0),
          "ptests fuse: restarted after crash, hang and a broken context", fu)
    diffs = sorted(x["id"].rsplit(".", 1)[1] for x in s["diffs"])
    check(diffs == ["test_crash_cuda_float32", "test_fuseonly_cuda_float32", "test_hang_cuda_float16",
                    "test_sticky_cuda_bfloat16", "test_sub_cuda_float16"], "ptests differences", diffs)
    rr = {x["id"].rsplit(".", 1)[1]: x["variants"] for x in s["reruns"]}
    check(rr.get("test_crash_cuda_float32") == {"plain": "pass", "fuse-trace": "crash", "fuse-nofusion": "pass",
                                                "plain-async": "pass", "fuse-wait": "crash"} and
          rr.get("test_hang_cuda_float16", {}).get("fuse-wait") == "pass", "ptests reruns", rr)
    logs = []
    for pid in (1, 2):
        p = os.path.join(d, "tcfuse-%d.log" % pid)
        with open(p, "w") as f:
            f.write(FUSE_STATS % (pid, pid))
        logs.append(p)
    st = ptests.tcfuse_stats(logs)
    check((st["processes"], st["launches"], st["decoded"], st["groups_fused"], st["launches_removed"],
           st["kernels_generated"], st["kernels_disabled"]) == (2, 200, 160, 14, 60, 6, 2) and
          st["fallbacks"] == {"held_failed": 4, "compile_failed": 2} and
          st["other_lines"][0][1] == 2, "ptests stats sums", st)
def check_reduce_check(d):
    """tests/gpu/reduce_check.py's pure parts: the case list, `tcfuse reduce` lines, the
    argument bytes it rebinds, and what each launch's status means; with build/tcfuse, on
    the recorded reductions of trace-ops.jsonl (compiled too when NVRTC is found)."""
    import reduce_check as rc
    full, quick = rc.make_cases(), rc.make_cases(quick=True)
    names = [rc.case_name(*c[:6]) for c in full]
    check(len(set(names)) == len(names) and [c[0] for c in full] == list(range(len(full))),
          "reduce_check cases unique, numbered")
    nops = sum(len(c[6]) for c in full)
    check(5000 <= nops <= 12000 and 100 <= sum(len(c[6]) for c in quick) < nops, "reduce_check case counts", nops)
    check({c[1] for c in full} == {"f32", "f16", "bf16"} and any(c[4] and c[3] == 8191 for c in full) and
          any(c[5] == "spec" for c in full) and any(c[5] == "zero" for c in full), "reduce_check coverage")
    check(all(c[2] * c[3] <= (1 << 21) or c[2] == 1 for c in full), "reduce_check sizes bounded")
    only = rc.make_cases(only="bf16_M7_K1000_sliced_rand amax")
    check(len(only) == 1 and only[0][6] == ["amax"], "reduce_check --only", only)
    text = ("reduce 0: ok op=SUM root=0 in=f32 out=f32 acc=f32 K=1000 M=127 bw=32 bh=16 vec=1 ivs=4 vt0=4 "
            "split_y=0 shift=0 grid=8,1,1 smem=0 factor=0x00000000 odims=1 rows=127:4:4000 src=0x7f0000000000 "
            "dst=0x7f0000100000 kernel=r3 lgrid=8,1,1 lblock=32,16,1 args=" + "00" * 224 + "\n"
            "reduce 1: reduce-global grid=1,123,1 block=512,1,1 src=0x7f0000200000 dst=0x7f0000300000 "
            "at::native::reduce_kernel<512, 1, ReduceOp<float, MeanOps<float, float, float, float>, unsigned, float, 4, 4>>\n"
            "reduce 2: ok op=MEAN src=0x10 dst=0x20 error=compile kernel=r4\n"
            "    ! something\n"
            "reduce 3: reduce-outer-dim grid=8,1,1 block=32,4,1 at::native::reduce_kernel<128, 4, ...>\n"
            "summary: 4 reduce_kernel launches, 2 decoded, 1 reduce-global, 1 reduce-outer-dim\n")
    recs, summary = rc.parse_reduce_output(text)
    check(len(recs) == 4 and summary.startswith("summary: 4 ") and recs[0]["kernel"] == "r3" and
          recs[0]["lgrid"] == (8, 1, 1) and recs[0]["lblock"] == (32, 16, 1) and recs[0]["dst"] == 0x7f0000100000 and
          recs[1]["status"] == "reduce-global" and recs[1]["src"] == 0x7f0000200000 and
          recs[2]["status"] == "compile-error" and "dst" not in recs[3], "reduce_check parse", recs)
    dst = rc.by_dst(recs)
    check(sorted(dst) == [0x20, 0x7f0000100000, 0x7f0000300000], "reduce_check by_dst", dst)
    check([rc.verdict(r, 1000) for r in recs] == ["check", "refused", "fail", "fail"] and
          rc.verdict(recs[3], 1) == "refused" and rc.verdict({"status": "reduce-strided"}, 1) == "refused" and
          rc.verdict({"status": "reduce-config"}, 1) == "fail", "reduce_check verdicts")
    a = rc.patch_args(recs[0]["args"], 0x1122334455667788, 0x99, bufs=(5, 6), scalars=(7,))
    check(len(a) == 224 and a[0:8] == bytes.fromhex("8877665544332211") and a[8] == 0x99 and a[128] == 5 and
          a[136] == 6 and a[192] == 7 and a[200] == 0, "reduce_check patch_args")
    try:
        rc.patch_args("00" * 10)
        check(False, "reduce_check patch_args size")
    except ValueError:
        pass
    tcfuse = os.path.join(HERE, "..", "..", "build", "tcfuse")
    if not os.path.exists(tcfuse):
        return
    trace = os.path.join(HERE, "..", "fixtures", "trace-ops.jsonl")
    code, out, err = rc.tcfuse_reduce(tcfuse, ["--emit", d, trace], [None])
    if "NVRTC unavailable" in err:
        code, out, err = rc.tcfuse_reduce(tcfuse, [trace], [None])
    recs, summary = rc.parse_reduce_output(out)
    ok = [r for r in recs if r["status"] == "ok"]
    check(code == 0 and len(recs) == 54 and len(ok) == 33 and
          summary == "summary: 54 reduce_kernel launches, 33 decoded, 12 reduce-global, 9 reduce-outer-dim",
          "reduce_check on trace-ops", (code, summary, err))
    check(all(r["dst"] in rc.by_dst(recs) for r in ok) and
          sum(1 for r in recs if rc.verdict(r, 1000) == "refused") == 12, "reduce_check trace-ops records")
    if ok and "args" in ok[0]:   # compiled: each launch's argument carries its own pointers
        check(all(rc.patch_args(r["args"])[0:8] == r["src"].to_bytes(8, "little") and
                  rc.patch_args(r["args"])[8:16] == r["dst"].to_bytes(8, "little") and
                  os.path.exists(os.path.join(d, r["kernel"] + ".cubin")) for r in ok), "reduce_check args and cubins")


def main():
    py = sys.executable
    with tempfile.TemporaryDirectory() as d:
        # trim-trace: a window limit, a size limit, skipping, a cut-off last line.
        tr = os.path.join(d, "t.jsonl")
        total = make_trace(tr)
        out = os.path.join(d, "o.jsonl")
        r = subprocess.run([py, os.path.join(HERE, "trim-trace.py"), tr, out, "-k", "3", "-q"])
        check(r.returncode == 0, "trim exit status")
        ev = read(out)
        check("tcfuse_trace" in ev[0] and ev[0]["trimmed"]["windows"] == 3, "trim header", ev[0])
        check(ev[-1]["ev"] == "end" and ev[-1]["launches"] == 15 and ev[-1]["windows"] == 3, "trim end", ev[-1])
        check(ev[-1]["trimmed_from"] == {"launches": total, "windows": 40}, "trim end original counts", ev[-1])
        wins = [e["id"] for e in ev if e.get("ev") == "window"]
        check(wins == [0, 1, 2], "trim keeps the first windows", wins)
        kept_k = {e["id"] for e in ev if e.get("ev") == "kernel"}
        used_k = {e["k"] for e in ev if e.get("ev") == "launch"}
        check(kept_k == used_k, "trim keeps exactly the kernels used", (kept_k, used_k))
        check(any(e.get("win") == -1 for e in ev), "trim keeps process-wide allocations")
        check(all(e.get("win") in (None, -1, 0, 1, 2) for e in ev), "trim drops other windows")
        r = subprocess.run([py, os.path.join(HERE, "trim-trace.py"), tr, out, "--skip", "10", "-k", "2", "-q"])
        wins = [e["id"] for e in read(out) if e.get("ev") == "window"]
        check(r.returncode == 0 and wins == [10, 11], "trim --skip", wins)
        r = subprocess.run([py, os.path.join(HERE, "trim-trace.py"), tr, out, "--tail", "-k", "2", "-q"])
        ev = read(out)
        wins = [e["id"] for e in ev if e.get("ev") == "window"]
        check(r.returncode == 0 and wins == [38, 39] and ev[0]["trimmed"].get("tail") is True and
              {e["id"] for e in ev if e.get("ev") == "kernel"} == {e["k"] for e in ev if e.get("ev") == "launch"} and
              all(e.get("win") in (None, -1, 38, 39) for e in ev), "trim --tail", wins)
        r = subprocess.run([py, os.path.join(HERE, "trim-trace.py"), tr, out, "--tail", "--skip", "1", "-q"],
                           stderr=subprocess.PIPE)
        check(r.returncode == 2, "trim --tail with --skip refused", r.returncode)
        r = subprocess.run([py, os.path.join(HERE, "trim-trace.py"), tr, out, "--max-bytes", "4000", "-q"])
        size = os.path.getsize(out)
        check(r.returncode == 0 and size <= 4000 and len([1 for e in read(out) if e.get("ev") == "window"]) >= 1,
              "trim --max-bytes", size)
        with open(tr) as f:
            text = f.read()
        cut = os.path.join(d, "cut.jsonl")
        with open(cut, "w") as f:
            f.write(text[: len(text) // 2])  # a crash mid-line, no end line
        r = subprocess.run([py, os.path.join(HERE, "trim-trace.py"), cut, out, "-q"], stderr=subprocess.PIPE)
        ev = read(out)
        check(r.returncode == 0 and ev[-1]["ev"] == "end" and ev[-1].get("truncated_input"), "trim of a cut trace")

        # The stats parser.
        b = tcfstats.parse(stats_text(12, 4, 3, 1, 2, 3))
        check(b is not None and b["launches"] == 12 and b["distinct_kernels"] == 3, "stats launches", b)
        check(b["windows"] == 4 and b["median_window"] == 3 and b["max_window"] == 5, "stats windows", b)
        check(b["keys"] == 2 and b["repeated_windows"] == 2, "stats keys", b)
        check(b["boundaries"] == {"cuStreamSynchronize": 3, "idle": 1, "cuCtxSynchronize": 2}, "stats boundaries", b)
        check(b["allocs"] == 4 and b["frees"] == 3 and b["stream_ordered_frees"] == 3 and b["frees_visible"] == "yes",
              "stats allocator", b)
        two = tcfstats.parse("tcfuse: stats: mode observe, pid 1\ntcfuse:   launches 5\n" + stats_text(99, 4, 3, 1, 0, 0))
        check(two["launches"] == 99, "stats: the block with the most launches", two)
        check(tcfstats.parse("nothing here") is None, "stats: none")

        # perf.py periter: stats differencing and the trace between marks.
        short, long_ = os.path.join(d, "s.log"), os.path.join(d, "l.log")
        with open(short, "w") as f:
            f.write(stats_text(100, 20, 5, 15, 2, 0))
        with open(long_, "w") as f:
            f.write(stats_text(600, 70, 25, 45, 12, 10))
        marks = os.path.join(d, "m.json")
        with open(marks, "w") as f:  # windows 10..29 close in (2000, 4000]
            json.dump({"t0": 2000, "t1": 4000, "iters": 10}, f)
        r = subprocess.run([py, os.path.join(HERE, "perf.py"), "periter", "--title", "test", "--short", short,
                            "--long", long_, "--nshort", "2", "--nlong", "12", "--trace", tr, "--marks", marks],
                           stdout=subprocess.PIPE, universal_newlines=True)
        o = r.stdout
        check(r.returncode == 0, "perf periter exit status", o)
        check("stats (12-2 its)/10" in o and " 50.0 " in o and " 5.0 " in o, "perf periter stats figures", o)
        check("idle 3, cuStreamSynchronize 2, cuCtxSynchronize 1" in o, "perf periter boundaries", o)
        check("trace (10 its)" in o and " 10.0 " in o and " 2.0 " in o, "perf periter trace figures", o)
        check("idle 1.5, cuStreamSynchronize 0.5" in o, "perf periter trace reasons", o)
        check("SUMMARY: 50.0 launches/it, 5.0 windows/it, median 3(all)" in o, "perf periter summary", o)

        # The same with the histogram and problem lines capture/stats.c prints.
        with open(short, "a") as f:
            f.write("tcfuse:   window sizes  1:10 2-3:5\n")
        with open(long_, "a") as f:
            f.write("tcfuse:   window sizes  1:10 2-3:5 4-7:50\n"
                    "tcfuse:   problems      params-unknown 3, launch-errors 0\n")
        r = subprocess.run([py, os.path.join(HERE, "perf.py"), "periter", "--title", "test", "--short", short,
                            "--long", long_], stdout=subprocess.PIPE, universal_newlines=True)
        o = r.stdout
        check(r.returncode == 0 and "4-7(it)" in o and "BRIEF: 50.0/5.0/4-7/yes(stats)" in o,
              "perf periter: median from the differenced histogram", o)
        check("PROBLEMS (long run): params-unknown 3" in o, "perf periter: problems", o)

        # perf.py launch-cost and gpt2 on made-up logs.
        logs = []
        for v, ns in (("none", 2000), ("off", 2010), ("observe", 2500)):
            for rep in (1, 2, 3):
                p = os.path.join(d, "launch_cost.%s.%d.log" % (v, rep))
                with open(p, "w") as f:
                    f.write("launch_cost: n 100000 issue_ns_per_launch %.1f total_ns_per_launch %.1f sync_us 5.0\n"
                            % (ns + rep, ns + 100 + rep))
                logs.append(p)
        r = subprocess.run([py, os.path.join(HERE, "perf.py"), "launch-cost"] + logs,
                           stdout=subprocess.PIPE, universal_newlines=True)
        check(r.returncode == 0 and "observe vs none: +500.0 ns/launch" in r.stdout, "perf launch-cost", r.stdout)
        logs = []
        for v, ms in (("none", 6.0), ("observe", 6.6)):
            p = os.path.join(d, "gpt2_perf.%s.1.log" % v)
            with open(p, "w") as f:
                f.write("gpt2_observe: iters 50 warmup 10 median_ms %.4f p10_ms 1 p90_ms 2 min_ms 1\n" % ms)
            logs.append(p)
        r = subprocess.run([py, os.path.join(HERE, "perf.py"), "gpt2"] + logs,
                           stdout=subprocess.PIPE, universal_newlines=True)
        check(r.returncode == 0 and "observe / none: 1.100" in r.stdout, "perf gpt2", r.stdout)

        # bench/run-all on stand-in programs: the table, the checksum and speed promises.
        runall = os.path.join(HERE, "..", "..", "bench", "run-all")
        env = dict(os.environ)
        r = subprocess.run([py, runall, "--fake", "--programs", "gpt2-1x32", "--repeats", "2",
                            "--variants", "eager,fuse,compile,graph,full", "--out", os.path.join(d, "ra")],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        table = open(os.path.join(d, "ra", "table.md")).read() if os.path.exists(
            os.path.join(d, "ra", "table.md")) else ""
        check(r.returncode == 0 and "promise: kept" in table, "run-all kept", r.stdout[-500:])
        row = [line for line in table.splitlines() if line.startswith("| gpt2-1x32 | fuse |")]
        cells = row[0].split(" | ") if row else []
        check(len(cells) == 11 and cells[2].startswith("8.") and cells[4].startswith("1.2") and
              cells[7] == "equal" and cells[8] == "50% decoded, 30 of 100 launches fused away" and
              cells[9].startswith("4.") and " / 4." in cells[9] and   # two runs' host medians
              # the 10th percentile of both runs' iterations, and eager's over it
              re.match(r"^8\.0\d \(1\.2\d\) \|$", cells[10]) is not None,
              "run-all row", table)
        # coverage in graph and full mode: what replay ran as graphs, what full mode fused
        cov = {v: [line.split(" | ")[8] for line in table.splitlines()
                   if line.startswith("| gpt2-1x32 | %s |" % v)] for v in ("graph", "full")}
        check(cov == {"graph": ["90% replayed"],
                      "full": ["90% replayed, 12 of 100 launches fused away"]},
              "run-all coverage, graph and full", cov)
        env["RUNALL_FAKE_BAD"] = "1"   # observe's checksum differs, and observe is slower
        r = subprocess.run([py, runall, "--fake", "--programs", "gpt2-1x32", "--repeats", "2",
                            "--variants", "eager,observe", "--out", os.path.join(d, "rb")],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        check(r.returncode == 1 and "observe: checksum differs from eager's" in r.stdout and
              "| DIFFERS |" in r.stdout, "run-all broken", r.stdout[-800:])
        del env["RUNALL_FAKE_BAD"]

        def ra(*argv):
            p = subprocess.run([py, runall] + list(argv), env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, universal_newlines=True)
            return p.returncode, p.stdout

        def rows(out):
            return [line.split(" | ") for line in out.splitlines() if line.startswith("| ")]

        # Observe (the stand-in's 10.3 ms against eager's 10.2, every run alike: no spread)
        # is beyond the spread, each side's probes beside the verdict; beside a variant of
        # mode off that ran 1.1 ms from eager (a null change), within the noise that one
        # measured, and the table says so.
        rc, out = ra("--fake", "--programs", "smallk", "--repeats", "2", "--variants",
                     "eager,observe", "--out", os.path.join(d, "nf0"))
        check(rc == 1 and "smallk observe: 0.99x eager, beyond the spread (probes, ms: this "
              "2.60, 2.60; eager 2.55, 2.55)" in out and
              "noise:" not in out, "run-all no noise floor", out[-800:])
        rc, out = ra("--fake", "--programs", "smallk", "--repeats", "2", "--variants",
                     "eager,null,observe", "--as", "null=off", "--out", os.path.join(d, "nf1"))
        check(rc == 0 and "promise: kept" in out and "allowed as much beyond the spread: smallk 1.09 ms" in out,
              "run-all noise floor", out[-800:])

        # A variant's library that is not there is refused before anything runs; one that
        # does not load (no stats from a run that ended well) breaks the promise, named.
        rc, out = ra("--fake", "--programs", "smallk", "--variants", "eager,fuse,fx", "--as",
                     "fx=fuse", "--lib", "fx=" + os.path.join(d, "nosuch.so"),
                     "--out", os.path.join(d, "nolib"))
        check(rc != 0 and "variant fx: " in out and "does not exist" in out and
              not os.path.exists(os.path.join(d, "nolib", "results.json")), "run-all no lib",
              out[-300:])
        env["RUNALL_FAKE_NOSTATS"] = "1"
        rc, out = ra("--fake", "--programs", "smallk", "--repeats", "1", "--variants",
                     "eager,fuse,null,easy", "--as", "null=off", "--as",
                     "easy=eager,PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync",
                     "--out", os.path.join(d, "nostats"))
        del env["RUNALL_FAKE_NOSTATS"]
        check(rc == 1 and "smallk fuse: tcfuse did not load (no stats in its output)" in out and
              "(tcfuse not loaded: no stats)" in out and "smallk null: tcfuse did not" not in out
              and "smallk easy: tcfuse did not" not in out, "run-all not loaded", out[-800:])

        # --pin: every run (cold ones too) on the CPUs named, said in the table's first line;
        # CPUs this process may not use are refused by name
        one = min(os.sched_getaffinity(0))
        cpus_out = os.path.join(d, "cpus.txt")
        env["RUNALL_FAKE_CPUS_OUT"] = cpus_out
        rc, out = ra("--fake", "--programs", "smallk", "--repeats", "1", "--variants", "eager,fuse",
                     "--pin", str(one), "--out", os.path.join(d, "pin"))
        del env["RUNALL_FAKE_CPUS_OUT"]
        seen = open(cpus_out).read().split("\n")[:-1] if os.path.exists(cpus_out) else []
        check(rc == 0 and seen == [str(one)] * 3 and
              "programs pinned to CPUs %d" % one in out, "run-all pin", out[-600:] + repr(seen))
        rc, out = ra("--fake", "--programs", "smallk", "--pin", "0-4095", "--out", os.path.join(d, "pin2"))
        check(rc != 0 and "are not this process's to run on" in out, "run-all pin refused", out[-300:])

        # --iters: the program's own count replaced (its later option wins), in every run,
        # and said in the table's first line; no count, the program's own
        argv_out = os.path.join(d, "argv.txt")
        env["RUNALL_FAKE_ARGV_OUT"] = argv_out
        rc, out = ra("--fake", "--programs", "llama-4x2048", "--repeats", "1", "--variants",
                     "eager,full", "--iters", "40", "--out", os.path.join(d, "iters"))
        rc2, out2 = ra("--fake", "--programs", "smallk", "--repeats", "1", "--variants", "eager",
                       "--out", os.path.join(d, "iters2"))
        del env["RUNALL_FAKE_ARGV_OUT"]
        argvs = open(argv_out).read().split("\n")[:-1] if os.path.exists(argv_out) else []
        check(rc == 0 and rc2 == 0 and len(argvs) >= 3 and
              all(a.endswith("--iters 40") for a in argvs[:-1]) and argvs[-1].endswith("--warmup 20")
              and "40 measured iterations a run (--iters)" in out and "(--iters)" not in out2,
              "run-all iters", out[-400:] + repr(argvs))
        rc, out = ra("--fake", "--programs", "smallk", "--iters", "-1", "--out", os.path.join(d, "iters3"))
        check(rc != 0 and "--iters: -1 is not a count" in out, "run-all iters refused", out[-300:])

        # Any other variant name is a tcfuse mode, passed as TCFUSE_MODE, with its own cold
        # run where it generates kernels (graph mode, which keeps nothing between processes,
        # has none); compile applies to the Python PyTorch programs alone; a mode the library
        # does not have shows (its stats say which mode ran).
        rc, out = ra("--fake", "--programs", "smallk,resnet50-b1", "--repeats", "2", "--variants",
                         "eager,graph,compile,nosuchmode", "--out", os.path.join(d, "rg"))
        got = {(c[0][2:], c[1]): c for c in rows(out)}
        check(rc == 0 and ("smallk", "graph") in got and got[("smallk", "graph")][2].startswith("9.") and
              ("smallk", "graph-cold") not in got and ("smallk", "nosuchmode-cold") in got and
              ("smallk", "compile") not in got and
              ("resnet50-b1", "compile") in got, "run-all generic modes", out[-1500:])
        check("ran as observe" in got.get(("smallk", "nosuchmode"), [""] * 9)[7] and
              "ran as" not in got.get(("smallk", "graph"), [""] * 9)[7], "run-all unknown mode", out[-1500:])
        stats = open(os.path.join(d, "rg", "stats.txt")).read()
        check("=== smallk graph\ntcfuse: stats: mode graph" in stats and
              "=== smallk graph (repeat 0, not the last)\ntcfuse: stats: mode graph" in stats,
              "run-all stats.txt", stats[:400])
        # Calls merged: --append to one folder, --merge of several; a repeat is all of a
        # program's variants or none when the budget runs out.
        ra("--fake", "--programs", "smallk", "--repeats", "1", "--variants", "eager,fuse",
               "--out", os.path.join(d, "m1"))
        ra("--fake", "--programs", "smallk", "--repeats", "1", "--variants", "eager,fuse",
               "--out", os.path.join(d, "m1"), "--append")
        ra("--fake", "--programs", "jax-mlp", "--repeats", "1", "--variants", "eager,fuse",
               "--out", os.path.join(d, "m2"))
        rc, out = ra("--merge", os.path.join(d, "m1"), os.path.join(d, "m2", "results.json"),
                         "--out", os.path.join(d, "mm"))
        res = json.load(open(os.path.join(d, "mm", "results.json")))
        n_smallk_eager = sum(1 for r in res["results"] if r["program"] == "smallk" and r["variant"] == "eager")
        check(rc == 0 and "(call 3 of 3)" in out and n_smallk_eager == 2 and
              any(c[0] == "| jax-mlp" and c[1] == "fuse" for c in rows(out)), "run-all merge", out[-1200:])
        # Another --iters checksums other output: merged, its runs are a program apart,
        # not outputs called different.
        ra("--fake", "--programs", "jax-mlp", "--repeats", "1", "--variants", "eager,fuse",
               "--iters", "7", "--out", os.path.join(d, "m3"))
        rc, out = ra("--merge", os.path.join(d, "m2"), os.path.join(d, "m3"),
                         "--out", os.path.join(d, "mi"))
        res = json.load(open(os.path.join(d, "mi", "results.json")))
        check(rc == 0 and "DIFFERS" not in out and
              any(c[0] == "| jax-mlp/7it" and c[1] == "fuse" and c[7] == "equal" for c in rows(out)) and
              any(c[0] == "| jax-mlp" and c[1] == "fuse" and c[7] == "equal" for c in rows(out)) and
              {r["program"] for r in res["results"]} == {"jax-mlp"} and
              sorted(r.get("iters", 0) for r in res["results"]) == [0, 0, 0, 7, 7, 7],
              "run-all merge of two --iters", out[-1500:])
        # With no eager run (a budget that stopped before one), outputs are not compared,
        # not called different (a cold run is made before any repeat).
        rc, out = ra("--fake", "--programs", "smallk", "--repeats", "1", "--variants", "fuse",
                     "--out", os.path.join(d, "noeager"))
        check(rc == 0 and "DIFFERS" not in out and "| not compared (no eager run) |" in out and
              "output not compared, no eager run: smallk fuse, smallk fuse-cold" in out,
              "run-all no eager", out[-800:])
        # Every measured run has what the host did around it (bench/hostwatch.py): the CPUs
        # its first thread was seen on, and host.txt lists it beside its median.
        res = json.load(open(os.path.join(d, "noeager", "results.json")))["results"]
        host = open(os.path.join(d, "noeager", "host.txt")).read()
        check(all(r.get("host", {}).get("main_cpus") for r in res) and
              all(r.get("probe_ms") == [2.0, 2.1] for r in res if r["variant"] == "fuse") and
              re.search(r"^smallk fuse 0 8\.\d\d 2\.050 1\.050 ", host, re.M) is not None and
              "probe 2.0 ms" in host and
              "fuse-cold" not in host and "## smallk: 0 slow runs" in host,
              "run-all host watch", host[-600:] + repr(res[-1].get("host")))
        # Runs whose probes (CPU work timed between iterations) show a slow host are left
        # out of the quick-host line, a diagnosis beside the promise, never of the promise.
        env["RUNALL_FAKE_SLOWHOST"] = "fuse"
        rc, out = ra("--fake", "--programs", "smallk", "--repeats", "2", "--variants",
                     "eager,fuse,graph", "--out", os.path.join(d, "qh"))
        del env["RUNALL_FAKE_SLOWHOST"]
        check(rc == 0 and re.search(r"^quick host, smallk \(probe within 1\.25x of 2\.300 ms\): "
                                    r"eager 2 of 2 runs 10\.\d\d ms, \d\.\d\d probes; fuse 0 of 2 runs; "
                                    r"graph 2 of 2 runs 9\.\d\d ms \(1\.1\dx\), \d\.\d\d probes "
                                    r"\(1\.\d\dx\)$", out, re.M) is not None,
              "run-all quick host", out[-600:])
        # A tcfuse run that dies breaks the promise as a failure, whatever its checksum; one
        # run of a variant gives no spread, so no verdict on its speed.
        env["RUNALL_FAKE_CRASH"] = "1"
        rc, out = ra("--fake", "--programs", "smallk", "--repeats", "1", "--variants", "eager,observe,fuse",
                     "--out", os.path.join(d, "cr"))
        del env["RUNALL_FAKE_CRASH"]
        check(rc == 1 and "smallk fuse: 1 of 1 runs failed (exit 134)" in out and
              "ERROR: what():  boom" in out and "speed not checked, one run of it or of eager: smallk observe" in out
              and "observe: 0.9" not in out.split("promise:")[1], "run-all crash", out[-1200:])
        rc, out = ra("--fake", "--programs", "smallk", "--repeats", "3", "--variants", "eager,fuse",
                         "--out", os.path.join(d, "bu"), "--budget", "0.000001")
        res = json.load(open(os.path.join(d, "bu", "results.json")))["results"]
        check(not [r for r in res if "repeat" in r] and "7 runs not started" in out,
              "run-all budget", out[-800:])
        # --fill: one unmeasured run after each cold run, not in the results
        rc, out = ra("--fake", "--programs", "smallk", "--repeats", "1", "--variants", "eager,fuse",
                     "--out", os.path.join(d, "fi"), "--fill")
        res = json.load(open(os.path.join(d, "fi", "results.json")))["results"]
        check(rc == 0 and "fuse-fill rc 0" in out and "eager-fill" not in out and
              sorted(r["variant"] for r in res) == ["eager", "fuse", "fuse-cold"],
              "run-all fill", out[-800:])

        # --one-cache: every compiling mode on one disk cache, cold and fill runs for the first
        # variant of each mode (full mode's groups are other kernels than fuse mode's); a
        # variant of a mode already filled (--as) has none; graph mode neither
        rc, out = ra("--fake", "--programs", "smallk", "--repeats", "1", "--variants",
                     "eager,fuse,full,graph,f2", "--as", "f2=full,TCFUSE_REPLAY_MAX=64",
                     "--out", os.path.join(d, "oc"), "--fill", "--one-cache")
        res = json.load(open(os.path.join(d, "oc", "results.json")))["results"]
        caches = {r["variant"]: [x for x in r["stats"] if "(fake) cache" in x] for r in res}
        check(rc == 0 and "fuse-fill rc 0" in out and "full-fill rc 0" in out and
              "graph-fill" not in out and "f2-fill" not in out and
              sorted(r["variant"] for r in res) == ["eager", "f2", "full", "full-cold", "fuse",
                                                    "fuse-cold", "graph"] and
              caches["fuse"] == caches["full"] == caches["f2"] == ["tcfuse:   (fake) cache one"],
              "run-all one cache", out[-800:] + repr(caches))
        # ... and for each library: another build's kernels are other sources, not in the
        # cache the first build filled (its first measured run would compile them)
        other = os.path.join(d, "other.so")
        open(other, "w").close()
        rc, out = ra("--fake", "--programs", "smallk", "--repeats", "1", "--variants", "eager,fuse,full,fx",
                     "--as", "fx=fuse", "--lib", "fx=" + other, "--out", os.path.join(d, "ol"),
                     "--fill", "--one-cache")
        res = json.load(open(os.path.join(d, "ol", "results.json")))["results"]
        check(rc == 0 and "fuse-fill rc 0" in out and "fx-fill   rc 0" in out and "full-fill rc 0" in out and
              sorted(r["variant"] for r in res) == ["eager", "full", "full-cold", "fuse", "fuse-cold", "fx",
                                                    "fx-cold"],
              "run-all one cache, two libraries", out[-800:])
        # A program of two GPUs (torchrun's ranks) is not run on a machine of one, and is
        # started through torchrun where there are two.
        rc, out = ra("--fake", "--programs", "llama-ddp,smallk", "--repeats", "1", "--variants", "eager,fuse",
                     "--out", os.path.join(d, "g1"))
        res = json.load(open(os.path.join(d, "g1", "results.json")))["results"]
        check(rc == 0 and "llama-ddp      not run (needs 2 GPUs, this machine has 1)" in out and
              "2 runs not started" in out and {r["program"] for r in res} == {"smallk"},
              "run-all too few GPUs", out[-800:])
        env["RUNALL_FAKE_GPUS"] = "2"
        rc, out = ra("--fake", "--programs", "llama-ddp", "--repeats", "1", "--variants", "eager,fuse",
                     "--out", os.path.join(d, "g2"))
        del env["RUNALL_FAKE_GPUS"]
        res = json.load(open(os.path.join(d, "g2", "results.json")))["results"]
        check(rc == 0 and sorted(r["variant"] for r in res) == ["eager", "fuse", "fuse-cold"],
              "run-all two GPUs", out[-800:])
        # --sample: the sampler preloaded in front of the library in each measured run,
        # one file a process, reported in samples.txt (its threads, the first, all) after
        # the table, the raw files in one archive
        rc, out = ra("--fake", "--programs", "smallk", "--repeats", "1", "--variants", "eager,fuse",
                     "--out", os.path.join(d, "sa"), "--sample")
        res = json.load(open(os.path.join(d, "sa", "results.json")))["results"]
        rep = open(os.path.join(d, "sa", "samples.txt")).read()
        with tarfile.open(os.path.join(d, "sa", "samples.tar.gz")) as t:
            raw = sorted(t.getnames())
        check(rc == 0 and "2 sampled processes" in out and "runs sampled (--sample)" in out and
              [r["variant"] for r in res if r.get("sampled")] == ["eager", "fuse"] and
              "=== smallk.eager.r0." in rep and "=== smallk.fuse.r0." in rep and
              ": 1 samples (thread 0)" in rep and ": 2 samples (thread all)" in rep and
              "samples by thread" in rep and "  thread  1        1" in rep and
              [n.split(".")[1] for n in raw] == ["eager", "fuse"] and
              not os.path.exists(os.path.join(d, "sa", "samples")) and
              # the table before the samples' report, which can outlast a device call
              "| smallk" in out and out.index("| smallk") < out.index("sampled processes"),
              "run-all sample", out[-800:] + rep[:600] + repr(raw))
        # bench/replay: stand-ins for its programs, every variant's output equal; --pin runs
        # each measured program on the CPUs named and says so, and refuses CPUs not ours
        replay = os.path.join(HERE, "..", "..", "bench", "replay")
        cpus_out = os.path.join(d, "rcpus.txt")
        env["REPLAY_FAKE_CPUS_OUT"] = cpus_out
        p = subprocess.run([py, replay, "--fake", "--only", "mlp", "--repeats", "2", "--pin", str(one),
                            "--out", os.path.join(d, "rp")], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True)
        del env["REPLAY_FAKE_CPUS_OUT"]
        seen = open(cpus_out).read().split("\n")[:-1] if os.path.exists(cpus_out) else []
        check(p.returncode == 0 and len(seen) >= 6 and set(seen) == {str(one)} and
              "programs pinned to CPUs %d" % one in p.stdout and "| mlp | graph |" in p.stdout and
              "BROKEN" not in p.stdout, "replay pin", p.stdout[-600:] + repr(seen))
        p = subprocess.run([py, replay, "--fake", "--only", "mlp", "--pin", "0-4095", "--out",
                            os.path.join(d, "rp2")], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True)
        check(p.returncode != 0 and "bench/replay: --pin: CPUs" in p.stdout and
              "are not this process's to run on" in p.stdout, "replay pin refused", p.stdout[-300:])

        sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "programs"))
        import registry
        cmd = registry.command("llama-ddp", python="py")
        check(cmd[:5] == ["py", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"] and
              cmd[5].endswith("bench/programs/hf.py") and cmd[6:9] == ["llama-train", "--parallel", "ddp"],
              "registry torchrun", repr(cmd))

        ptests_checks(d)
        check_reduce_check(os.path.join(d, "reduce"))
    print("selftest: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
