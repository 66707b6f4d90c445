#!/usr/bin/env python3
"""Reads a tcfuse trace (docs/TRACE.md, version 1) for the BATS suites.

  trace_check.py valid TRACE       checks the format; prints what is wrong, exits 1
  trace_check.py windows TRACE     one line per window, by close time:
                                   "launches=N ops=M reason=R stream=S"
  trace_check.py launches TRACE    one line per successful launch, by time:
                                   "NAME P0,P1,..." (each parameter's bytes, in hex,
                                   cut from the launch's buffer by the kernel's layout),
                                   the same form tests/bats/helpers.bash log_launches prints
  trace_check.py kernels TRACE     one line per kernel event: "NAME KIND [[off,size],...]"
  trace_check.py events TRACE EV   one line per event EV, by time, as sorted JSON
"""
import json
import re
import sys

HEX = re.compile(r"^0x[0-9a-f]+$")
HEXFIELDS = ("handle", "stream", "ptr", "ctx", "key", "dst", "src")
REQUIRED = {
    "kernel": ("id", "name", "handle", "kind", "params"),
    "launch": ("t", "win", "k", "via", "grid", "block", "smem", "stream", "rc", "params"),
    "alloc": ("t", "win", "call", "ptr", "size", "stream", "rc"),
    "free": ("t", "win", "call", "ptr", "stream", "rc"),
    "memset": ("t", "win", "call", "ptr", "value", "elem", "count", "stream", "rc"),
    "memcpy": ("t", "win", "call", "dst", "src", "size", "stream", "rc"),
    "window": ("t", "id", "ctx", "stream", "launches", "ops", "key", "reason"),
    "end": ("t", "launches", "windows", "dropped"),
}


def load(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def valid(path):
    errs = []
    lines = load(path)
    if not lines:
        return ["empty trace"]
    objs = []
    for i, line in enumerate(lines, 1):
        try:
            o = json.loads(line)
        except ValueError as e:
            errs.append("line %d is not JSON (%s): %.120s" % (i, e, line))
            continue
        if not isinstance(o, dict):
            errs.append("line %d is not an object" % i)
            continue
        objs.append((i, o))
    if errs:
        return errs
    _, head = objs[0]
    if head.get("tcfuse_trace") != 1:
        errs.append("header: tcfuse_trace is %r, not 1" % head.get("tcfuse_trace"))
    for field, typ in (("version", str), ("pid", int), ("mode", str), ("argv0", str)):
        if not isinstance(head.get(field), typ):
            errs.append("header: %s is %r" % (field, head.get(field)))
    kernels, windows, launches, wins_used = {}, {}, 0, set()
    last = None
    for i, o in objs[1:]:
        ev = o.get("ev")
        if not isinstance(ev, str):
            errs.append("line %d: no \"ev\"" % i)
            continue
        last = (i, o)
        for f in REQUIRED.get(ev, ()):
            if f not in o:
                errs.append("line %d (%s): no %s" % (i, ev, f))
        for f in HEXFIELDS:
            if f in o and not (isinstance(o[f], str) and HEX.match(o[f])):
                errs.append("line %d (%s): %s=%r is not lower-case 0x hex" % (i, ev, f, o[f]))
        if "t" in o and not isinstance(o["t"], int):
            errs.append("line %d (%s): t=%r is not an integer" % (i, ev, o["t"]))
        if ev == "kernel":
            if o.get("kind") not in ("kernel", "function", "unknown"):
                errs.append("line %d: kernel kind %r" % (i, o.get("kind")))
            if o.get("id") in kernels:
                errs.append("line %d: kernel id %r written twice" % (i, o.get("id")))
            kernels[o.get("id")] = o
        elif ev == "launch":
            launches += 1
            if o.get("k") not in kernels:
                errs.append("line %d: launch of kernel %r before its kernel event" % (i, o.get("k")))
            if not re.match(r"^([0-9a-f]{2})*$", str(o.get("params"))):
                errs.append("line %d: launch params %r are not hex bytes" % (i, o.get("params")))
            if o.get("via") not in ("cuLaunchKernel", "cuLaunchKernelEx"):
                errs.append("line %d: launch via %r" % (i, o.get("via")))
        elif ev == "window":
            if o.get("id") in windows:
                errs.append("line %d: window id %r written twice" % (i, o.get("id")))
            windows[o.get("id")] = o
        if ev in ("launch", "memset", "memcpy"):
            wins_used.add(o.get("win"))
        if ev in ("launch", "memset", "memcpy", "free") or (ev == "alloc" and o.get("win", -1) != -1):
            if o.get("win") in windows:
                errs.append("line %d (%s): window %r was already closed" % (i, ev, o.get("win")))
    if last is None or last[1].get("ev") != "end":
        errs.append("the last line is not an \"end\" event")
    else:
        end = last[1]
        if end.get("launches") != launches:
            errs.append("end.launches=%r but %d launch events" % (end.get("launches"), launches))
        if end.get("windows") != len(windows):
            errs.append("end.windows=%r but %d window events" % (end.get("windows"), len(windows)))
        if end.get("dropped") != 0:
            errs.append("end.dropped=%r" % end.get("dropped"))
    for w in sorted(wins_used - set(windows), key=str):
        errs.append("events name window %r, which was never written" % w)
    return errs


def events(path, ev):
    out = [json.loads(l) for l in load(path)[1:]]
    out = [o for o in out if o.get("ev") == ev]
    return sorted(out, key=lambda o: o.get("t", 0))


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    cmd, path = argv[1], argv[2]
    if cmd == "valid":
        errs = valid(path)
        for e in errs:
            print(e)
        return 1 if errs else 0
    if cmd == "windows":
        for w in events(path, "window"):
            print("launches=%s ops=%s reason=%s stream=%s"
                  % (w["launches"], w["ops"], w["reason"], w["stream"]))
        return 0
    if cmd == "launches":
        kernels = {k["id"]: k for k in events(path, "kernel")}
        for l in events(path, "launch"):
            if l["rc"] != 0:
                continue
            k = kernels[l["k"]]
            buf = l["params"]
            parts = [buf[2 * off:2 * (off + size)] for off, size in k["params"]]
            print("%s %s" % (k["name"], ",".join(parts)))
        return 0
    if cmd == "kernels":
        for k in events(path, "kernel"):
            print("%s %s %s" % (k["name"], k["kind"], json.dumps(k["params"], separators=(",", ":"))))
        return 0
    if cmd == "events" and len(argv) > 3:
        for o in events(path, argv[3]):
            print(json.dumps(o, sort_keys=True, separators=(",", ":")))
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
