#!/usr/bin/env python3
"""Trim a tcfuse trace (docs/TRACE.md) to a small fixture.

Keeps the header, the first K windows in file order (after skipping --skip windows), or
with --tail the last K (a training step's steady state: the first windows of a short run
are its set-up and its first, warm-up, step): their events and their `window` lines, the `kernel` lines their launches reference, events not
tied to a window (`win` -1: allocations that are not stream-ordered) that come before the
last kept window, and the `end` line. The end line's `launches` and `windows` are rewritten
to what was kept, and `trimmed_from` keeps the original counts; the header gains
`trimmed`. Windows are taken while the output stays under --max-bytes (at least one).

    trim-trace.py IN.jsonl[.gz] OUT.jsonl [-k K] [--skip N | --tail] [--max-bytes 1000000]

Input may be gzip-compressed. A line that is not JSON is dropped with a warning (a trace
cut off by a crash ends in half a line). Exit status 0, or 1 if nothing usable was found.
"""
import argparse
import gzip
import json
import sys


def open_text(path):
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, "r", encoding="utf-8", errors="replace")


def events(path, warn):
    """Yields (index, line, object) for every JSON line."""
    with open_text(path) as f:
        for i, line in enumerate(f):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                warn("line %d is not JSON (%d bytes): dropped" % (i + 1, len(line)))
                continue
            if not isinstance(obj, dict):
                warn("line %d is not an object: dropped" % (i + 1))
                continue
            yield i, line, obj


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("-k", "--windows", type=int, default=0, help="windows to keep (0: as many as fit)")
    ap.add_argument("--skip", type=int, default=0, help="windows to skip first")
    ap.add_argument("--tail", action="store_true", help="keep the last windows, not the first")
    ap.add_argument("--max-bytes", type=int, default=1000000)
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args(argv)
    if a.tail and a.skip:
        ap.error("--skip counts from the front; --tail keeps the last windows: one or the other")
    warned = [0]

    def warn(msg):
        warned[0] += 1
        if warned[0] <= 5:
            print("trim-trace: %s: %s" % (a.input, msg), file=sys.stderr)

    # Pass 1: the windows in file order, the bytes of each window's events, the kernels
    # each window's launches use, the size of each kernel line.
    header = end = None
    order = []            # window ids in the order their `window` lines appear
    wline_at = {}         # window id -> line index of its `window` line
    wbytes = {}           # window id -> bytes of its events and window line
    wkernels = {}         # window id -> kernel ids its launches use
    kbytes = {}
    total_launches = 0
    for i, line, ev in events(a.input, warn):
        kind = ev.get("ev")
        if header is None and "tcfuse_trace" in ev:
            header = ev
            continue
        if kind == "end":
            end = ev
            continue
        if kind == "kernel":
            kbytes[ev.get("id")] = len(line) + 1
            continue
        w = ev.get("win")
        if kind == "window":
            wid = ev.get("id")
            order.append(wid)
            wline_at[wid] = i
            wbytes[wid] = wbytes.get(wid, 0) + len(line) + 1
            continue
        if w is not None and w != -1:
            wbytes[w] = wbytes.get(w, 0) + len(line) + 1
            if kind == "launch":
                total_launches += 1
                wkernels.setdefault(w, set()).add(ev.get("k"))
    if header is None:
        warn("no header line")
        return 1
    if not order:
        warn("no window lines")

    # Choose the windows.
    keep = set()
    kept_kernels = set()
    size = len(json.dumps(header)) + 200 + (len(json.dumps(end)) if end else 0)
    for wid in (order[::-1] if a.tail else order[a.skip:]):
        if a.windows and len(keep) >= a.windows:
            break
        new_k = wkernels.get(wid, set()) - kept_kernels
        add = wbytes.get(wid, 0) + sum(kbytes.get(k, 0) for k in new_k)
        if keep and size + add > a.max_bytes:
            break
        keep.add(wid)
        kept_kernels |= new_k
        size += add
    last_line = max((wline_at[w] for w in keep), default=-1)

    # Pass 2: write.
    kept_launches = 0
    out_lines = 0
    with open(a.output, "w", encoding="utf-8") as out:
        h = dict(header)
        h["trimmed"] = {"skip": a.skip, "windows": len(keep), "of_windows": len(order)}
        if a.tail:
            h["trimmed"]["tail"] = True
        out.write(json.dumps(h, separators=(",", ":")) + "\n")
        out_lines += 1
        seen_header = False
        for i, line, ev in events(a.input, lambda m: None):
            kind = ev.get("ev")
            if not seen_header and "tcfuse_trace" in ev:
                seen_header = True
                continue
            if kind == "end":
                continue
            if kind == "kernel":
                if ev.get("id") in kept_kernels:
                    out.write(line + "\n")
                    out_lines += 1
                continue
            if kind == "window":
                if ev.get("id") in keep:
                    out.write(line + "\n")
                    out_lines += 1
                continue
            w = ev.get("win")
            if w is None or w == -1:
                if i < last_line:  # process-wide events before the cut
                    out.write(line + "\n")
                    out_lines += 1
                continue
            if w in keep:
                out.write(line + "\n")
                out_lines += 1
                if kind == "launch":
                    kept_launches += 1
        e = dict(end) if end else {"ev": "end", "t": 0, "dropped": 0, "truncated_input": True}
        e["trimmed_from"] = {"launches": e.get("launches", total_launches), "windows": e.get("windows", len(order))}
        e["launches"] = kept_launches
        e["windows"] = len(keep)
        out.write(json.dumps(e, separators=(",", ":")) + "\n")
        out_lines += 1
    if not a.quiet:
        print("trim-trace: %s -> %s: %d of %d windows, %d of %d launches, %d kernels, %d lines%s"
              % (a.input, a.output, len(keep), len(order), kept_launches, total_launches,
                 len(kept_kernels), out_lines, "" if end else " (input had no end line)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
