#!/usr/bin/env python3
"""Parse the stats tcfuse prints at exit (TCFUSE_STATS=1) out of a log, leniently:

    tcfuse: stats: mode observe, pid 1234
    tcfuse:   launches      12 (3 distinct kernels)
    tcfuse:   windows       4 (launches per window: median 3, max 5)
    tcfuse:   keys          2 distinct; 2 of 4 windows repeated an earlier key
    tcfuse:   boundaries    cuStreamSynchronize 3, idle 1
    tcfuse:   allocator     4 allocs, 3 frees (3 stream-ordered); frees visible: yes
(and, as capture/stats.c prints them: `window sizes  1:3 2-3:5 4-7:1`, `top keys ...`,
`other work N device memsets and copies`, `problems params-unknown 0, launch-errors 0, ...`)

Lines it does not know are kept under `other`. A log may hold several blocks (a program
that starts children): parse() returns the one with the most launches.
`tcfstats.py LOG` prints that block as JSON; `tcfstats.py --brief LOG` one line.
"""
import json
import re
import sys

NUM = r"(\d[\d,_]*)"


def _int(s):
    return int(s.replace(",", "").replace("_", ""))


def _num(s):
    s = s.replace(",", "").replace("_", "")
    return float(s) if "." in s else int(s)


def _block(mode=None, pid=None):
    return {"mode": mode, "pid": pid, "launches": None, "distinct_kernels": None,
            "windows": None, "median_window": None, "max_window": None, "keys": None,
            "repeated_windows": None, "boundaries": {}, "allocs": None, "frees": None,
            "stream_ordered_frees": None, "frees_visible": None, "window_sizes": {}, "top_keys": None,
            "device_ops": None, "problems": {}, "other": [], "lines": []}


def parse_all(text):
    blocks = []
    cur = None
    section = None
    for raw in text.splitlines():
        m = re.search(r"tcfuse:(.*)$", raw)
        if not m:
            continue
        body = m.group(1)
        h = re.match(r"\s*stats:\s*(?:mode\s+([\w-]+))?(?:.*?pid\s+(\d+))?", body)
        if h:
            cur = _block(h.group(1), int(h.group(2)) if h.group(2) else None)
            blocks.append(cur)
            section = None
            cur["lines"].append(raw)
            continue
        if cur is None:
            continue
        cur["lines"].append(raw)
        lm = re.match(r"(\s*)([A-Za-z][\w-]*)\s*:?\s*(.*)$", body)
        if not lm:
            continue
        indent, label, rest = len(lm.group(1)), lm.group(2).lower(), lm.group(3)
        if label in ("launches", "launch"):
            section = label
            n = re.match(NUM, rest)
            if n:
                cur["launches"] = _int(n.group(1))
            d = re.search(NUM + r"\s+distinct", rest)
            if d:
                cur["distinct_kernels"] = _int(d.group(1))
        elif label == "windows":
            section = label
            n = re.match(NUM, rest)
            if n:
                cur["windows"] = _int(n.group(1))
            md = re.search(r"median\s+([\d.,]+)", rest)
            if md:
                cur["median_window"] = _num(md.group(1).rstrip(","))
            mx = re.search(r"max\s+([\d,]+)", rest)
            if mx:
                cur["max_window"] = _int(mx.group(1).rstrip(","))
        elif label == "keys":
            section = label
            n = re.match(NUM, rest)
            if n:
                cur["keys"] = _int(n.group(1))
            r = re.search(NUM + r"\s+of\s+" + NUM + r"\s+windows\s+repeated", rest)
            if r:
                cur["repeated_windows"] = _int(r.group(1))
        elif label in ("boundaries", "boundary"):
            section = "boundaries"
            _reasons(cur, rest)
        elif label == "allocator":
            section = label
            a = re.search(NUM + r"\s+allocs?", rest)
            if a:
                cur["allocs"] = _int(a.group(1))
            f = re.search(NUM + r"\s+frees?", rest)
            if f:
                cur["frees"] = _int(f.group(1))
            so = re.search(NUM + r"\s+stream-ordered", rest)
            if so:
                cur["stream_ordered_frees"] = _int(so.group(1))
            v = re.search(r"frees\s+visible\s*:?\s*(\w+)", rest)
            if v:
                cur["frees_visible"] = v.group(1).lower()
        elif label == "window" and rest.startswith("sizes"):
            section = "sizes"
            for lo, hi, c in re.findall(r"(\d+)(?:-(\d+))?:(\d+)", rest):
                cur["window_sizes"][(int(lo), int(hi or lo))] = int(c)
        elif label == "top" and rest.startswith("keys"):
            section = "top"
            cur["top_keys"] = rest[4:].strip()
        elif label == "other" and rest.startswith("work"):
            section = "other"
            n = re.search(NUM, rest)
            if n:
                cur["device_ops"] = _int(n.group(1))
        elif label == "problems":
            section = label
            for name, n in re.findall(r"([A-Za-z][\w-]*)\s+(\d+)", rest):
                cur["problems"][name] = int(n)
        elif section == "boundaries" and indent > 4 and re.fullmatch(r"[\w.:\-]+\s+\d+(\s*,\s*[\w.:\-]+\s+\d+)*,?\s*", body.strip()):
            _reasons(cur, body)  # a wrapped continuation of the boundaries line
        else:
            section = None
            cur["other"].append(body.strip())
    return blocks


def _reasons(cur, text):
    for name, n in re.findall(r"([A-Za-z_][\w.:\-]*)\s*[:=]?\s+(\d+)", text):
        cur["boundaries"][name] = cur["boundaries"].get(name, 0) + int(n)


def parse(text):
    blocks = parse_all(text)
    if not blocks:
        return None
    return max(blocks, key=lambda b: (b["launches"] or 0))


def parse_file(path):
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            return parse(f.read())
    except OSError:
        return None


def brief(b):
    """One line for run's table."""
    if b is None:
        return "no tcfuse stats in the log"
    parts = ["launches %s" % b["launches"]]
    if b["distinct_kernels"] is not None:
        parts[0] += " (%d kernels)" % b["distinct_kernels"]
    w = "windows %s" % b["windows"]
    if b["median_window"] is not None:
        w += " (median %s, max %s)" % (b["median_window"], b["max_window"])
    parts.append(w)
    if b["boundaries"]:
        parts.append("top boundary %s" % max(b["boundaries"].items(), key=lambda kv: kv[1])[0])
    if b["frees_visible"]:
        parts.append("frees visible %s" % b["frees_visible"])
    bad = ["%s %d" % kv for kv in b["problems"].items() if kv[1]]
    if bad:
        parts.append("PROBLEMS: " + ", ".join(bad))
    return ", ".join(parts)


def median_bucket(hist):
    """The (lo, hi) bucket of a window-size histogram that holds the median window."""
    total = sum(c for c in hist.values() if c > 0)
    seen = 0
    for key in sorted(hist):
        c = hist[key]
        if c <= 0:
            continue
        seen += c
        if seen * 2 >= total:
            return key
    return None


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--brief":
        print(brief(parse_file(args[1])))
        sys.exit(0)
    if not args:
        print(__doc__)
        sys.exit(2)
    b = parse_file(args[0])
    if b is None:
        print("null")
        sys.exit(1)
    b.pop("lines")
    b["window_sizes"] = {"%d-%d" % k: v for k, v in b["window_sizes"].items()}
    print(json.dumps(b, indent=1))
