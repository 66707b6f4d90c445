#!/usr/bin/env python3
"""PyTorch's own test files on the GPU, plain and under tcfuse, compared test by test.

The test files (test_unary_ufuncs.py, test_binary_ufuncs.py, test_reductions.py of
pytorch/pytorch) are not part of this repository and nothing here fetches them: they are
read from a folder given on the command line. `tests/gpu/pytorch-tests` drives this file;
its subcommands:

  worker   runs one shard of the selected tests in this process and appends one JSON line
           per test to a results file (a "start" line before the test, an "end" line with
           the outcome after it), so that a crash or a hang names the test it happened in
  run      starts the workers of every mode (plain, fuse, ...) side by side, restarts a
           shard whose process died (the test it was in is recorded as crash/timeout),
           stops them all at a deadline, then runs each test whose outcome differs between
           plain and a tcfuse mode again, alone, under several variants (with tcfuse's
           info messages and a launch trace), and writes the report
  report   reads a work folder and writes summary.txt and summary.json

Selection: the tests that unittest finds in the three files, instantiated for CUDA
(class name ending in CUDA), whose name's dtype suffix names float32, float16 or bfloat16
(a test of several dtypes is kept when one of them is) -- what `pytest -k` with the
device type and the dtypes selects. unittest's loader is used directly rather than pytest:
the run must stop at a deadline and keep what it has, and each test's outcome must be
written the moment it is known.

No torch is needed to run `report`, or `worker`/`run` on fake test files (selftest.py does).
"""
import argparse
import faulthandler
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import traceback
import types
import unittest

DTYPES_DEFAULT = ("float32", "float16", "bfloat16")
FILES_DEFAULT = ("test_unary_ufuncs", "test_binary_ufuncs", "test_reductions")
SEED = 20251124
# Outcomes, and the class each belongs to when plain and tcfuse are compared.
OK, SKIP, BAD = "ok", "skip", "bad"
CLASS = {"pass": OK, "xfail": OK, "skip": SKIP, "fail": BAD, "error": BAD, "xpass": BAD,
         "crash": BAD, "timeout": BAD, "killed": BAD}
# A CUDA error that poisons the context: every later test of the process would fail.
STICKY = ("device-side assert", "illegal memory access", "unspecified launch failure",
          "misaligned address", "illegal instruction", "CUDA error: an illegal")
MSG_MAX = 6000
# PyTorch's TestCase ends a failure's message with how to run the test again: not the cause.
REPRO = re.compile(r"To execute this test, run|^\s+python test_\w+\.py |PYTORCH_PRINT_REPRO_ON_FAILURE")


# ---- selection ------------------------------------------------------------------------

def selected(test_id, dtypes):
    """True for a CUDA-instantiated test whose dtype suffix names one of `dtypes`."""
    parts = test_id.split(".")
    if len(parts) < 3 or not parts[-2].endswith("CUDA"):
        return False
    m = re.search(r"_cuda((?:_[A-Za-z0-9]+)+)$", parts[-1])
    return bool(m) and any(tok in dtypes for tok in m.group(1).split("_")[1:])


def _flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _flatten(t)
        else:
            yield t


def install_expecttest_shim():
    """torch.testing._internal.common_utils imports expecttest, which the PyTorch wheel
    does not depend on. When it is missing, a stand-in with the two names common_utils
    uses (TestCase, ACCEPT) lets the files load; the inline-expect assertions these three
    files do not use compare strings exactly."""
    try:
        import expecttest  # noqa: F401
        return False
    except ImportError:
        pass
    mod = types.ModuleType("expecttest")
    mod.ACCEPT = False

    class TestCase(unittest.TestCase):
        longMessage = True

        def assertExpectedInline(self, actual, expect, skip=0):
            self.assertMultiLineEqual(expect, actual)

        def assertExpectedRaisesInline(self, exc_type, fn, expect, *args, **kwargs):
            try:
                fn(*args, **kwargs)
            except exc_type as e:
                self.assertExpectedInline(str(e), expect)
                return
            self.fail("did not raise when expected to")

    mod.TestCase = TestCase
    sys.modules["expecttest"] = mod
    return True


def load_tests(tests_dir, files, dtypes, out):
    """Imports the test files; returns {id: test} of the selected tests. Import failures are
    written to `out` (a results file) and the file is left out."""
    sys.path.insert(0, os.path.abspath(tests_dir))
    # common_utils parses sys.argv when it is imported: give it nothing of ours.
    sys.argv = [sys.argv[0]]
    shim = install_expecttest_shim()
    if shim:
        out.note({"ev": "note", "what": "expecttest missing: a stand-in was used"})
    found = {}
    loader = unittest.TestLoader()
    for name in files:
        try:
            mod = __import__(name)
        except BaseException:
            out.note({"ev": "import-error", "file": name, "msg": traceback.format_exc()[-MSG_MAX:]})
            continue
        for t in _flatten(loader.loadTestsFromModule(mod)):
            tid = t.id()
            if tid.startswith("unittest.loader"):
                out.note({"ev": "import-error", "file": name, "msg": str(t)})
            elif selected(tid, dtypes):
                found[tid] = t
    return found


def order(ids, seed=SEED):
    """Sorted, then shuffled with a fixed seed: every mode and every restart sees the same
    order, and a run cut short by its deadline has run a uniform sample of all three files."""
    ids = sorted(ids)
    random.Random(seed).shuffle(ids)
    return ids


# ---- worker ---------------------------------------------------------------------------

class Results:
    """Appends JSON lines to a results file, flushed at once (a crash loses nothing)."""

    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def note(self, obj):
        obj.setdefault("t", round(time.time(), 3))
        self.f.write(json.dumps(obj) + "\n")
        self.f.flush()


def read_results(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass  # a line cut by a kill
    except OSError:
        pass
    return out


class OneResult(unittest.TestResult):
    """The outcome of one test. The base class's lists are kept: PyTorch's TestCase.run
    reads them."""

    def __init__(self):
        super().__init__()
        self.outcome = None
        self.msg = ""

    def _bad(self, kind, test, err):
        self.outcome = kind
        self.msg = self._exc_info_to_string(err, test)[-MSG_MAX:]

    def addSuccess(self, test):
        super().addSuccess(test)
        if self.outcome is None:
            self.outcome = "pass"

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._bad("fail", test, err)

    def addError(self, test, err):
        super().addError(test, err)
        self._bad("error", test, err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcome, self.msg = "skip", str(reason)[:500]

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.outcome = "xfail"

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.outcome = "xpass"

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            kind = "fail" if issubclass(err[0], test.failureException) else "error"
            self._bad(kind, subtest, err)


def cmd_worker(a):
    out = Results(a.results)
    done = {r["id"] for r in read_results(a.results) if r.get("ev") == "end"}
    tests = load_tests(a.tests_dir, a.files.split(","), set(a.dtypes.split(",")), out)
    ids = order(tests)
    if a.list:
        with open(a.list, "w") as f:
            f.write("".join(i + "\n" for i in ids))
    if a.ids:
        with open(a.ids) as f:
            mine = [i.strip() for i in f if i.strip()]
        missing = [i for i in mine if i not in tests]
        for i in missing:
            out.note({"ev": "end", "id": i, "outcome": "error", "secs": 0,
                      "msg": "not found in the loaded test files"})
        mine = [i for i in mine if i in tests]
    else:
        mine = ids[a.shard::a.shards]
    torch = sys.modules.get("torch")
    set_up = []
    reason = "done"
    # Faulthandler's watchdog ends a hung test's process (exit status 1, with every thread's
    # stack in the worker's log); the supervisor records the test as a timeout.
    for n, tid in enumerate(mine):
        if tid in done:
            continue
        if a.deadline and time.time() > a.deadline:
            reason = "deadline"
            break
        t = tests[tid]
        cls = type(t)
        if cls not in set_up and not getattr(cls, "__unittest_skip__", False):
            set_up.append(cls)
            try:
                cls.setUpClass()
            except BaseException:
                out.note({"ev": "note", "what": "setUpClass failed", "class": cls.__name__,
                          "msg": traceback.format_exc()[-MSG_MAX:]})
        out.note({"ev": "start", "id": tid})
        faulthandler.dump_traceback_later(a.per_test_timeout, exit=True)
        t0 = time.time()
        r = OneResult()
        try:
            t.run(r)
        except BaseException:
            r.outcome, r.msg = "error", traceback.format_exc()[-MSG_MAX:]
        faulthandler.cancel_dump_traceback_later()
        out.note({"ev": "end", "id": tid, "outcome": r.outcome or "error",
                  "secs": round(time.time() - t0, 3), "msg": r.msg})
        # The tests' own check found the CUDA context broken, or the error says it is:
        # a fresh process goes on from the next test.
        if r.shouldStop or any(s in r.msg for s in STICKY):
            reason = "cuda-broken"
            break
        if torch is not None:
            try:  # shards share one GPU: keep no idle blocks
                if torch.cuda.is_available() and (n % 50 == 49 or
                                                  torch.cuda.memory_reserved() > (2 << 30)):
                    torch.cuda.empty_cache()
            except Exception:
                pass
    for cls in reversed(set_up):
        try:
            cls.tearDownClass()
        except BaseException:
            pass
    out.note({"ev": "exit", "reason": reason})
    # A normal exit: tcfuse prints its stats when the process ends.
    sys.exit(3 if reason == "cuda-broken" else 0)


# ---- supervisor -----------------------------------------------------------------------

def parse_modes(spec):
    """'plain,fuse=TCFUSE_MODE=fuse' style: NAME or NAME=VAR=VAL:VAR=VAL (tcfuse modes get
    the preload, stats and log file added by `run`)."""
    modes = []
    for item in [s for s in spec.split(",") if s]:
        name, _, rest = item.partition("=")
        env = {}
        for kv in [s for s in rest.split(":") if s]:
            k, _, v = kv.partition("=")
            env[k] = v
        modes.append((name, env))
    return modes


def mode_env(name, extra, a, mode_dir):
    env = dict(os.environ)
    for k in [k for k in env if k.startswith("TCFUSE_")] + ["LD_PRELOAD"]:
        env.pop(k, None)
    env.update({"PYTORCH_TESTING_DEVICE_ONLY_FOR": "cuda", "OMP_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0",
                "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"})
    if name != "plain":
        cache = os.path.join(mode_dir, "cache")
        os.makedirs(cache, mode=0o700, exist_ok=True)
        # Info messages too (a generated kernel that failed its check, a compile that
        # failed: what a fallback was): they go to the log file, the tests see nothing.
        env.update({"LD_PRELOAD": a.lib, "TCFUSE_MODE": "fuse", "TCFUSE_STATS": "1",
                    "TCFUSE_VERBOSE": "2",
                    "TCFUSE_LOG_FILE": os.path.join(mode_dir, "tcfuse-%p.log"),
                    "TCFUSE_CACHE_DIR": cache})
    env.update(extra)
    return env


class Shard:
    def __init__(self, mode, k, env, argv, results, log):
        self.mode, self.k, self.env, self.argv = mode, k, env, argv
        self.results, self.log = results, log
        self.proc = None
        self.starts = 0
        self.finished = False

    def start(self):
        self.starts += 1
        logf = open(self.log, "a")
        logf.write("# start %d at %.1f\n" % (self.starts, time.time()))
        logf.flush()
        self.proc = subprocess.Popen(self.argv, env=self.env, stdout=logf, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        logf.close()

    def reap(self, killed=False):
        """After the process ended: record the test it died in, if any; True if the
        shard should go on in a new process."""
        rc = self.proc.returncode
        recs = read_results(self.results)
        open_ids = {}
        last_exit = None
        for r in recs:
            if r.get("ev") == "start":
                open_ids[r["id"]] = r
            elif r.get("ev") == "end":
                open_ids.pop(r["id"], None)
            elif r.get("ev") == "exit":
                last_exit = r
        dangling = [r for r in open_ids.values()]
        if dangling:
            outcome = "killed" if killed else ("timeout" if rc == 1 else "crash")
            tail = ""
            try:
                with open(self.log, errors="replace") as f:
                    tail = f.read()[-3000:]
            except OSError:
                pass
            Results(self.results).note({"ev": "end", "id": dangling[-1]["id"], "outcome": outcome,
                                        "secs": None, "msg": "process exit %s\n%s" % (rc, tail)})
        self.proc = None
        if killed:
            return False
        if last_exit is not None and last_exit.get("reason") in ("done", "deadline") and not dangling \
                and rc == 0:
            return False
        return True


def progress(shards):
    done = {}
    for s in shards:
        done[s.mode] = done.get(s.mode, 0) + sum(
            1 for r in read_results(s.results) if r.get("ev") == "end")
    return ", ".join("%s %d" % kv for kv in done.items())


def run_shards(shards, deadline, grace, max_starts, min_left):
    for s in shards:
        s.start()
    t0 = last = time.time()
    while True:
        now = time.time()
        if now - last >= 30:
            last = now
            print("ptests: [%3.0fs] tests done: %s" % (now - t0, progress(shards)), flush=True)
        live = [s for s in shards if s.proc is not None]
        for s in live:
            if s.proc.poll() is not None:
                again = s.reap()
                if again and s.starts < max_starts and deadline - time.time() > min_left:
                    s.start()
                else:
                    s.finished = True
        if not any(s.proc is not None for s in shards):
            return
        if now > deadline + grace:
            for s in shards:
                if s.proc is not None:
                    try:
                        os.killpg(s.proc.pid, signal.SIGTERM)
                    except OSError:
                        pass
            time.sleep(3)
            for s in shards:
                if s.proc is not None:
                    try:
                        os.killpg(s.proc.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    s.proc.wait()
                    s.reap(killed=True)
                    s.finished = True
            return
        time.sleep(0.5)


def worker_argv(a, results, extra):
    return [sys.executable, os.path.abspath(__file__), "worker", "--tests-dir", a.tests_dir,
            "--files", a.files, "--dtypes", a.dtypes, "--results", results,
            "--per-test-timeout", str(a.per_test_timeout)] + extra


def cmd_run(a):
    os.makedirs(a.work, exist_ok=True)
    t0 = time.time()
    deadline = t0 + a.budget
    modes = parse_modes(a.modes)
    meta = {"started": t0, "budget": a.budget, "rerun_budget": a.rerun_budget, "shards": a.shards,
            "modes": [[n, e] for n, e in modes], "files": a.files, "dtypes": a.dtypes,
            "tests_dir": os.path.abspath(a.tests_dir), "lib": a.lib}
    with open(os.path.join(a.work, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    shards = []
    for mi, (name, extra) in enumerate(modes):
        mdir = os.path.join(a.work, name)
        os.makedirs(mdir, exist_ok=True)
        env = mode_env(name, extra, a, mdir)
        for k in range(a.shards):
            res = os.path.join(mdir, "shard%02d.jsonl" % k)
            ex = ["--shard", str(k), "--shards", str(a.shards), "--deadline", "%.1f" % deadline]
            if mi == 0 and k == 0:
                ex += ["--list", os.path.join(a.work, "selected.txt")]
            shards.append(Shard(name, k, env, worker_argv(a, res, ex), res,
                                os.path.join(mdir, "shard%02d.log" % k)))
    # A restart costs an import of torch and the test files: none in the last part of the run.
    run_shards(shards, deadline, a.grace, a.max_starts, min(30.0, a.budget * 0.2))
    print("ptests: main phase %.0fs" % (time.time() - t0), flush=True)
    if a.rerun_budget > 0:
        rerun(a, modes, time.time() + a.rerun_budget)
    rep = report(a.work)
    print(rep["text"], flush=True)


def rerun(a, modes, deadline):
    """Each test whose outcome class differs between plain and a tcfuse mode runs again,
    alone, in fresh processes: plain; the tcfuse mode with its disk cache, info messages and
    a launch trace; with TCFUSE_FUSION=0 (windows held and replayed, nothing fused); plain
    with the stream-ordered allocator fuse mode sets up (PYTORCH_CUDA_ALLOC_CONF); with
    TCFUSE_COMPILE_WAIT=1 (every group fused from its first occurrence). Plain failing
    again means the test is flaky or broken on its own."""
    outcomes = {name: final_outcomes(os.path.join(a.work, name)) for name, _ in modes}
    base = outcomes.get("plain", {})
    todo = []
    for name, extra in modes:
        if name == "plain":
            continue
        for tid, oc in sorted(outcomes[name].items()):
            p = base.get(tid)
            if p is not None and CLASS.get(p) != CLASS.get(oc):
                todo.append((name, extra, tid))
    todo.sort(key=lambda x: (0 if CLASS.get(outcomes[x[0]][x[2]]) == BAD else 1))
    todo = todo[:a.rerun_max]
    if not todo:
        return
    rdir = os.path.join(a.work, "rerun")
    os.makedirs(rdir, exist_ok=True)
    jobs = []
    for idx, (name, extra, tid) in enumerate(todo):
        with open(os.path.join(rdir, "%02d.ids" % idx), "w") as f:
            f.write(tid + "\n")
        mdir = os.path.join(a.work, name)
        variants = [
            (name + "-trace", dict(extra, TCFUSE_VERBOSE="2", TCFUSE_TRACE_LIMIT="4M",
                                   TCFUSE_TRACE=os.path.join(rdir, "%02d.trace.jsonl" % idx))),
            ("plain", None),
            (name + "-nofusion", dict(extra, TCFUSE_FUSION="0")),
            ("plain-async", {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}),
            (name + "-wait", dict(extra, TCFUSE_COMPILE_WAIT="1", TCFUSE_VERBOSE="2")),
        ]
        for prio, (vname, venv) in enumerate(variants):
            if vname.startswith("plain"):
                env = mode_env("plain", venv or {}, a, mdir)
            else:
                env = mode_env(name, venv, a, mdir)
                env["TCFUSE_LOG_FILE"] = os.path.join(rdir, "%02d.%s.tcfuse.log" % (idx, vname))
            res = os.path.join(rdir, "%02d.%s.jsonl" % (idx, vname))
            argv = worker_argv(a, res, ["--ids", os.path.join(rdir, "%02d.ids" % idx)])
            jobs.append((prio, idx, Shard(vname, idx, env, argv, res,
                                          os.path.join(rdir, "%02d.%s.log" % (idx, vname)))))
    jobs.sort(key=lambda j: (j[0], j[1]))
    pending = [j[2] for j in jobs]
    running = []
    while (pending or running) and time.time() < deadline:
        while pending and len(running) < a.rerun_parallel and deadline - time.time() > 20:
            s = pending.pop(0)
            s.start()
            running.append(s)
        for s in list(running):
            if s.proc.poll() is not None:
                s.reap()
                running.remove(s)
        if not running and (not pending or deadline - time.time() <= 20):
            break
        time.sleep(0.5)
    for s in running:
        try:
            os.killpg(s.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        s.proc.wait()
        s.reap(killed=True)
    with open(os.path.join(rdir, "todo.json"), "w") as f:
        json.dump([[n, tid] for n, _, tid in todo], f, indent=1)


# ---- report ---------------------------------------------------------------------------

def final_outcomes(mode_dir):
    """{test id: outcome} from a mode's results files; the last end line of a test wins."""
    out = {}
    if not os.path.isdir(mode_dir):
        return out
    for fn in sorted(os.listdir(mode_dir)):
        if fn.endswith(".jsonl"):
            for r in read_results(os.path.join(mode_dir, fn)):
                if r.get("ev") == "end":
                    out[r["id"]] = r.get("outcome") or "error"
    return out


def messages(mode_dir):
    out = {}
    if os.path.isdir(mode_dir):
        for fn in sorted(os.listdir(mode_dir)):
            if fn.endswith(".jsonl"):
                for r in read_results(os.path.join(mode_dir, fn)):
                    if r.get("ev") == "end":
                        out[r["id"]] = r.get("msg") or ""
    return out


def notes(mode_dir):
    out = []
    if os.path.isdir(mode_dir):
        for fn in sorted(os.listdir(mode_dir)):
            if fn.endswith(".jsonl"):
                out += [r for r in read_results(os.path.join(mode_dir, fn))
                        if r.get("ev") in ("note", "import-error")]
    return out


STAT_RES = {
    "launches": re.compile(r"^\s*launches\s+(\d+)"),
    "decoded": re.compile(r"^\s*decoded\s+(\d+) of (\d+) launches"),
    "groups_fused": re.compile(r"^\s*fused\s+(\d+) groups; (\d+) launches removed, (\d+) stores dropped"),
    "kernels": re.compile(r"^\s*kernels\s+(\d+) generated: (\d+) compiled, (\d+) from the disk cache, "
                          r"(\d+) verified; (\d+) decoded kernels checked alone, (\d+) disabled"),
    "fallbacks": re.compile(r"^\s*fallbacks\s+(.*)$"),
}


def tcfuse_stats(paths):
    """Sums the exit stats of every process's tcfuse log; counts the other lines."""
    tot = {"processes": 0, "launches": 0, "decoded": 0, "groups_fused": 0, "launches_removed": 0,
           "stores_dropped": 0, "kernels_generated": 0, "kernels_compiled": 0, "kernels_disk": 0,
           "kernels_verified": 0, "kernels_checked": 0, "kernels_disabled": 0}
    fallbacks, other = {}, {}
    for p in paths:
        try:
            with open(p, errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        in_stats = False
        for raw in lines:
            body = raw[len("tcfuse: "):] if raw.startswith("tcfuse: ") else raw
            if body.startswith("stats:"):
                tot["processes"] += 1
                in_stats = True
                continue
            if in_stats and body.startswith("  "):
                m = STAT_RES["launches"].match(body)
                if m:
                    tot["launches"] += int(m.group(1))
                m = STAT_RES["decoded"].match(body)
                if m:
                    tot["decoded"] += int(m.group(1))
                m = STAT_RES["groups_fused"].match(body)
                if m:
                    tot["groups_fused"] += int(m.group(1))
                    tot["launches_removed"] += int(m.group(2))
                    tot["stores_dropped"] += int(m.group(3))
                m = STAT_RES["kernels"].match(body)
                if m:
                    for key, g in zip(("kernels_generated", "kernels_compiled", "kernels_disk",
                                       "kernels_verified", "kernels_checked", "kernels_disabled"),
                                      m.groups()):
                        tot[key] += int(g)
                m = STAT_RES["fallbacks"].match(body)
                if m and m.group(1) != "none":
                    for part in m.group(1).split(", "):
                        k, _, v = part.rpartition(" ")
                        if v.isdigit():
                            fallbacks[k] = fallbacks.get(k, 0) + int(v)
                continue
            in_stats = False
            key = re.sub(r"0x[0-9a-fA-F]+|\b\d+\b", "N", body)[:200]  # keeps f32, vec4
            other[key] = other.get(key, 0) + 1
    tot["fallbacks"] = fallbacks
    tot["other_lines"] = sorted(other.items(), key=lambda kv: -kv[1])[:30]
    return tot


def file_of(tid):
    return tid.split(".", 1)[0]


def report(work):
    """Counts per mode and file, the tests whose outcome differs from plain, tcfuse's
    summed stats, the reruns. Writes summary.json and summary.txt into `work`."""
    with open(os.path.join(work, "meta.json")) as f:
        meta = json.load(f)
    sel = []
    try:
        with open(os.path.join(work, "selected.txt")) as f:
            sel = [l.strip() for l in f if l.strip()]
    except OSError:
        pass
    files = meta["files"].split(",")
    kinds = ["pass", "fail", "error", "skip", "xfail", "xpass", "crash", "timeout", "killed"]
    res = {"meta": meta, "selected": {fn: sum(1 for t in sel if file_of(t) == fn) for fn in files},
           "modes": {}, "diffs": [], "stats": {}, "notes": {}, "reruns": []}
    outs = {}
    for name, _ in meta["modes"]:
        mdir = os.path.join(work, name)
        oc = final_outcomes(mdir)
        outs[name] = oc
        per = {}
        for fn in files:
            c = {k: 0 for k in kinds}
            for tid, o in oc.items():
                if file_of(tid) == fn:
                    c[o] = c.get(o, 0) + 1
            c["run"] = sum(c[k] for k in kinds)
            c["not_run"] = max(0, res["selected"].get(fn, 0) - c["run"])
            per[fn] = c
        res["modes"][name] = per
        seen = {}
        for n in notes(mdir):  # every shard writes the same notes: one of each
            n = {k: v for k, v in n.items() if k != "t"}
            seen.setdefault(json.dumps(n, sort_keys=True), n)
        res["notes"][name] = list(seen.values())[:20]
        if name != "plain":
            logs = [os.path.join(mdir, f) for f in sorted(os.listdir(mdir)) if f.endswith(".log")
                    and f.startswith("tcfuse-")]
            res["stats"][name] = tcfuse_stats(logs)
    base = outs.get("plain", {})
    for name, _ in meta["modes"]:
        if name == "plain":
            continue
        msgs = messages(os.path.join(work, name))
        pmsgs = messages(os.path.join(work, "plain"))
        for tid in sorted(set(base) & set(outs[name])):
            p, o = base[tid], outs[name][tid]
            if CLASS.get(p) != CLASS.get(o):
                res["diffs"].append({"mode": name, "id": tid, "plain": p, name: o,
                                     "msg": msgs.get(tid, "")[-2500:],
                                     "plain_msg": pmsgs.get(tid, "")[-800:]})
    rdir = os.path.join(work, "rerun")
    todo = []
    try:
        with open(os.path.join(rdir, "todo.json")) as f:
            todo = json.load(f)
    except (OSError, ValueError):
        pass
    for idx, (name, tid) in enumerate(todo):
        row = {"mode": name, "id": tid, "variants": {}}
        for fn in sorted(os.listdir(rdir)):
            m = re.match(r"%02d\.(.+)\.jsonl$" % idx, fn)
            if m and not fn.endswith(".trace.jsonl"):
                ends = [r for r in read_results(os.path.join(rdir, fn)) if r.get("ev") == "end"]
                if ends:
                    row["variants"][m.group(1)] = ends[-1].get("outcome")
        row["stats"] = {}
        for fn in sorted(os.listdir(rdir)):
            m = re.match(r"%02d\.(.+)\.tcfuse\.log$" % idx, fn)
            if m:
                st = tcfuse_stats([os.path.join(rdir, fn)])
                row["stats"][m.group(1)] = {k: st[k] for k in ("groups_fused", "launches_removed",
                                                               "kernels_disabled")}
        res["reruns"].append(row)
    res["text"] = render(res)
    with open(os.path.join(work, "summary.json"), "w") as f:
        json.dump({k: v for k, v in res.items() if k != "text"}, f, indent=1)
    with open(os.path.join(work, "summary.txt"), "w") as f:
        f.write(res["text"])
    return res


def render(res):
    L = []
    meta = res["meta"]
    L.append("ptests: PyTorch test files under tcfuse (dtypes %s; %d shards a mode; budget %ss)"
             % (meta["dtypes"], meta["shards"], meta["budget"]))
    kinds = ["pass", "fail", "error", "skip", "xfail", "xpass", "crash", "timeout", "killed"]
    L.append("%-8s %-20s %6s %6s %6s" % ("mode", "file", "sel", "run", "notrun") +
             "".join(" %6s" % k[:6] for k in kinds))
    for name, per in res["modes"].items():
        for fn, c in per.items():
            L.append("%-8s %-20s %6d %6d %6d" % (name, fn, res["selected"].get(fn, 0), c["run"],
                                                 c["not_run"]) +
                     "".join(" %6d" % c.get(k, 0) for k in kinds))
    for name, nts in res["notes"].items():
        for n in nts[:5]:
            msg = n.pop("msg", "")
            L.append("note %s: %s" % (name, json.dumps(n)[:300]))
            L += ["      " + l[:200] for l in msg.splitlines()[-6:]]
    for name, st in res["stats"].items():
        L.append("tcfuse %s: %d processes; launches %d, decoded %d; %d groups fused, %d launches "
                 "removed, %d stores dropped; kernels %d generated (%d compiled, %d from disk, %d "
                 "verified), %d decoded kernels checked alone, %d disabled; fallbacks %s"
                 % (name, st["processes"], st["launches"], st["decoded"], st["groups_fused"],
                    st["launches_removed"], st["stores_dropped"], st["kernels_generated"],
                    st["kernels_compiled"], st["kernels_disk"], st["kernels_verified"],
                    st["kernels_checked"], st["kernels_disabled"], json.dumps(st["fallbacks"])))
        for line, n in st["other_lines"][:12]:
            L.append("  tcfuse %s log x%d: %s" % (name, n, line[:160]))
    L.append("differences from plain: %d" % len(res["diffs"]))
    for d in res["diffs"][:40]:
        L.append("  %s: %s plain=%s %s=%s" % (d["mode"], d["id"], d["plain"], d["mode"], d[d["mode"]]))
        # The error's last lines; for a crash or a hang, the test's own frames (the
        # watchdog's stack dump and the log tail also hold the runner's).
        last = [l for l in d["msg"].splitlines() if l.strip() and "ptests.py" not in l
                and not l.startswith("# start") and not REPRO.search(l)][-3:]
        for l in last:
            L.append("      " + l[:200])
    for r in res["reruns"]:
        L.append("  rerun %s %s: %s %s" % (r["mode"], r["id"], json.dumps(r["variants"]),
                                           json.dumps(r["stats"])))
    return "\n".join(L) + "\n"


def cmd_report(a):
    print(report(a.work)["text"], end="")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p):
        p.add_argument("--tests-dir", required=True)
        p.add_argument("--files", default=",".join(FILES_DEFAULT))
        p.add_argument("--dtypes", default=",".join(DTYPES_DEFAULT))
        p.add_argument("--per-test-timeout", type=int, default=120)

    w = sub.add_parser("worker")
    common(w)
    w.add_argument("--results", required=True)
    w.add_argument("--shard", type=int, default=0)
    w.add_argument("--shards", type=int, default=1)
    w.add_argument("--ids")
    w.add_argument("--list")
    w.add_argument("--deadline", type=float, default=0)
    r = sub.add_parser("run")
    common(r)
    r.add_argument("--work", required=True)
    r.add_argument("--lib", default="")
    r.add_argument("--modes", default="plain,fuse")
    r.add_argument("--shards", type=int, default=8)
    r.add_argument("--budget", type=float, default=300)
    r.add_argument("--grace", type=float, default=20)
    r.add_argument("--max-starts", type=int, default=10)
    r.add_argument("--rerun-budget", type=float, default=60)
    r.add_argument("--rerun-max", type=int, default=8)
    r.add_argument("--rerun-parallel", type=int, default=12)
    p = sub.add_parser("report")
    p.add_argument("--work", required=True)
    a = ap.parse_args(argv)
    {"worker": cmd_worker, "run": cmd_run, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    main()
