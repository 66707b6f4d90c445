#!/usr/bin/env python3
"""Turn the logs of the measurement suites into tables (tests/gpu/run appends them to
perf.txt). Each subcommand prints its table, then one line `SUMMARY: ...` (periter also `BRIEF: ...`:
launches/windows/median window/frees visible per iteration) for run's table.

  perf.py launch-cost LOG...      logs of bench/launch_cost runs, named *.<variant>.<rep>.log
  perf.py gpt2 LOG...             logs of bench/gpt2_observe.py runs, same naming
  perf.py periter --title T --short LOG --long LOG --nshort 2 --nlong 12
                  [--trace FILE --marks FILE]

Per-iteration figures (periter), two independent ways:
  stats: the program runs twice, nshort and nlong iterations, with TCFUSE_STATS=1; every
    count tcfuse prints (launches, windows, frees, boundaries by reason, windows repeating a
    key) is differenced and divided by nlong - nshort. Everything the process does once
    (imports, model build, weight upload, warm-up, exit) cancels. Medians do not difference:
    the median window length shown is the whole long run's.
  trace: the long run also writes a trace, and the program writes CLOCK_MONOTONIC marks
    after its warm-up iterations and at its end (after a synchronize; the clock of the
    trace's `t`). Windows that closed between the marks are exactly those of the measured
    iterations: counts are divided by their number, and the median is theirs alone.
"""
import argparse
import collections
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tcfstats  # noqa: E402


def variant_of(path):
    m = re.search(r"\.([A-Za-z0-9_-]+)\.(\d+)\.log$", os.path.basename(path))
    return (m.group(1), int(m.group(2))) if m else (None, None)


def collect(logs, pattern):
    by = collections.OrderedDict()
    for p in logs:
        v, _ = variant_of(p)
        try:
            text = open(p, encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        m = re.search(pattern, text)
        if v and m:
            by.setdefault(v, []).append(tuple(float(x) for x in m.groups()))
    return by


def pct(a, b):
    return "%+.1f%%" % (100.0 * (a - b) / b) if b else "n/a"


def cmd_launch_cost(logs):
    by = collect(logs, r"issue_ns_per_launch\s+([\d.]+)\s+total_ns_per_launch\s+([\d.]+)")
    n = re.search(r"launch_cost: n (\d+)", "".join(open(p, errors="replace").read() for p in logs[:1])) if logs else None
    print("== launch cost: empty kernel <<<1,32>>>, %s launches in a loop on one stream ==" % (n.group(1) if n else "?"))
    print("variant    issue ns/launch  total ns/launch  runs  (median over runs; issue = host loop only)")
    med = {}
    for v in ("none", "off", "observe"):
        rows = by.get(v, [])
        if not rows:
            print("%-10s %15s  %15s  %4d" % (v, "-", "-", 0))
            continue
        med[v] = (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows))
        spread = "%.0f-%.0f" % (min(r[0] for r in rows), max(r[0] for r in rows))
        print("%-10s %15.1f  %15.1f  %4d  (issue range %s)" % (v, med[v][0], med[v][1], len(rows), spread))
    summary = []
    for v in ("off", "observe"):
        if v in med and "none" in med:
            d0 = med[v][0] - med["none"][0]
            d1 = med[v][1] - med["none"][1]
            print("%s vs none: %+.1f ns/launch issued (%s), %+.1f ns/launch with the sync (%s)"
                  % (v, d0, pct(med[v][0], med["none"][0]), d1, pct(med[v][1], med["none"][1])))
    for v in ("none", "off", "observe"):
        if v in med:
            summary.append("%s %.0f" % (v, med[v][0]))
    extra = ""
    if "observe" in med and "none" in med:
        extra = "; observe %+.0f ns (%s)" % (med["observe"][0] - med["none"][0], pct(med["observe"][0], med["none"][0]))
    print("SUMMARY: ns/launch issued: %s%s" % (", ".join(summary) or "no data", extra))
    return 0 if med else 1


def cmd_gpt2(logs):
    by = collect(logs, r"median_ms\s+([\d.]+)\s+p10_ms\s+([\d.]+)\s+p90_ms\s+([\d.]+)\s+min_ms\s+([\d.]+)")
    print("== GPT-2 (12 layers) batch 1, 32 tokens, eval forward + synchronize, per iteration ==")
    print("variant    median ms   p10 ms   p90 ms   runs  (median of the runs' medians)")
    med = {}
    for v in ("none", "off", "observe"):
        rows = by.get(v, [])
        if not rows:
            continue
        med[v] = statistics.median(r[0] for r in rows)
        print("%-10s %9.3f %8.3f %8.3f   %4d  (run medians: %s)"
              % (v, med[v], statistics.median(r[1] for r in rows), statistics.median(r[2] for r in rows),
                 len(rows), ", ".join("%.3f" % r[0] for r in rows)))
    parts = []
    for v in ("off", "observe"):
        if v in med and "none" in med and med["none"]:
            print("%s / none: %.3f" % (v, med[v] / med["none"]))
            parts.append("%s/none %.3f" % (v, med[v] / med["none"]))
    print("SUMMARY: %s" % ("; ".join(["none %.3f ms" % med["none"]] + parts) if "none" in med else "no data"))
    return 0 if med else 1


def top(d, k=5, div=1.0):
    items = sorted(((n / div, r) for r, n in d.items() if n), reverse=True)[:k]
    return ", ".join("%s %.4g" % (r, n) for n, r in items) or "-"


def from_trace(trace, marks):
    with open(marks) as f:
        mk = json.load(f)
    t0, t1, iters = mk["t0"], mk["t1"], mk["iters"]
    wins, reasons = [], collections.Counter()
    frees = allocs = launches_ev = 0
    opener = open
    if trace.endswith(".gz"):
        import gzip
        opener = gzip.open
    with opener(trace, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            if '"ev"' not in line:
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            t = ev.get("t")
            if not isinstance(t, int) or not (t0 < t <= t1):
                continue
            kind = ev.get("ev")
            if kind == "window":
                wins.append(int(ev.get("launches", 0)))
                reasons[str(ev.get("reason"))] += 1
            elif kind == "free":
                frees += 1
            elif kind == "alloc":
                allocs += 1
            elif kind == "launch":
                launches_ev += 1
    return {"iters": iters, "windows": len(wins), "launches": sum(wins), "launch_events": launches_ev,
            "median": statistics.median(wins) if wins else None, "max": max(wins) if wins else None,
            "empty": sum(1 for w in wins if w == 0), "reasons": reasons, "frees": frees, "allocs": allocs}


def fmt(x, nd=1):
    return "-" if x is None else ("%.*f" % (nd, x) if isinstance(x, float) else str(x))


def cmd_periter(a):
    s = tcfstats.parse_file(a.short)
    l = tcfstats.parse_file(a.long)
    di = a.nlong - a.nshort
    print("== per iteration: %s ==" % a.title)
    print("%-22s %9s %9s %11s %8s %7s %8s %8s  %s" % ("source", "launch/it", "window/it", "median win",
                                                     "alloc/it", "free/it", "visible", "repeat/it",
                                                     "top-5 boundaries per iteration"))
    summary = brief = None
    if s and l and l.get("launches") is not None and s.get("launches") is not None:
        def d(k):
            return None if l.get(k) is None or s.get(k) is None else (l[k] - s[k]) / di
        br = collections.Counter(l["boundaries"])
        br.subtract(s["boundaries"])
        # The median of the iterations' windows, to a bucket of the differenced histogram;
        # without a histogram, the whole long run's median.
        hist = {k: v - s["window_sizes"].get(k, 0) for k, v in l["window_sizes"].items()}
        mb = tcfstats.median_bucket(hist)
        if mb:
            med = ("%d" % mb[0] if mb[0] == mb[1] else "%d-%d" % mb)
            med_col = med + "(it)"
        else:
            med = fmt(l.get("median_window"))
            med_col = med + "(all)"
        print("%-22s %9s %9s %11s %8s %7s %8s %8s  %s" % (
            "stats (%d-%d its)/%d" % (a.nlong, a.nshort, di), fmt(d("launches")), fmt(d("windows")),
            med_col, fmt(d("allocs")), fmt(d("frees")),
            l.get("frees_visible") or "?", fmt(d("repeated_windows")), top(br, 5, di)))
        extra = []
        if d("device_ops") is not None:
            extra.append("device memsets+copies/it %s" % fmt(d("device_ops")))
        bad = ["%s %d" % kv for kv in l["problems"].items() if kv[1]]
        if bad:
            extra.append("PROBLEMS (long run): " + ", ".join(bad))
        if extra:
            print("%-22s %s" % ("", "; ".join(extra)))
        summary = "%s launches/it, %s windows/it, median %s, frees visible %s" % (
            fmt(d("launches")), fmt(d("windows")), med_col, l.get("frees_visible") or "?")
        brief = "%s/%s/%s/%s(stats)" % (fmt(d("launches")), fmt(d("windows")), med,
                                        l.get("frees_visible") or "?")
    else:
        print("%-22s no tcfuse stats found in %s" % ("stats", a.short if not s else a.long))
    if a.trace and a.marks and os.path.exists(a.trace) and os.path.exists(a.marks):
        try:
            t = from_trace(a.trace, a.marks)
            n = float(t["iters"])
            print("%-22s %9s %9s %11s %8s %7s %8s %8s  %s" % (
                "trace (%d its)" % t["iters"], fmt(t["launches"] / n), fmt(t["windows"] / n),
                fmt(t["median"]), fmt(t["allocs"] / n), fmt(t["frees"] / n),
                "yes" if t["frees"] else "no", "", top(t["reasons"], 5, n)))
            print("%-22s windows in range %d (%d without launches), max window %s, launch events %d"
                  % ("", t["windows"], t["empty"], fmt(t["max"]), t["launch_events"]))
            tsum = "trace: %s launches/it, %s windows/it, median %s" % (
                fmt(t["launches"] / n), fmt(t["windows"] / n), fmt(t["median"]))
            summary = (summary + "; " + tsum) if summary else tsum
            fv = (l.get("frees_visible") if l else None) or ("yes" if t["frees"] else "no")
            brief = "%s/%s/%s/%s(trace)" % (fmt(t["launches"] / n), fmt(t["windows"] / n), fmt(t["median"]), fv)
        except (OSError, ValueError, KeyError) as e:
            print("%-22s unreadable: %s" % ("trace", e))
    else:
        print("%-22s not available (no trace or no marks)" % "trace")
    print("SUMMARY: %s" % (summary or "no data"))
    print("BRIEF: %s" % (brief or "no data"))
    return 0 if summary else 1


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    if argv[1] == "launch-cost":
        return cmd_launch_cost(argv[2:])
    if argv[1] == "gpt2":
        return cmd_gpt2(argv[2:])
    if argv[1] == "periter":
        ap = argparse.ArgumentParser()
        ap.add_argument("--title", required=True)
        ap.add_argument("--short", required=True)
        ap.add_argument("--long", required=True)
        ap.add_argument("--nshort", type=int, default=2)
        ap.add_argument("--nlong", type=int, default=12)
        ap.add_argument("--trace")
        ap.add_argument("--marks")
        return cmd_periter(ap.parse_args(argv[2:]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
