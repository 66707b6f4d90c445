#!/usr/bin/env python3
"""Say which entries of two result files differ (the format is in common.py), for the
log of a failed `cmp`. Raw files (launches.cu's) are compared in 4-byte words.

    resdiff.py A B [--max N]     exit 0 if equal, 1 if they differ, 2 if unreadable
"""
import struct
import sys

ELEM = {"float32": ("<f", 4), "float16": ("<e", 2), "bfloat16": (None, 2), "float64": ("<d", 8),
        "int32": ("<i", 4), "int64": ("<q", 8), "bool": ("<B", 1), "uint8": ("<B", 1)}


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(b"TCFRES 1\n"):
        return None, data
    entries = []
    pos = len(b"TCFRES 1\n")
    while pos < len(data):
        nl = data.index(b"\n", pos)
        name, kind, meta, n = data[pos:nl].decode().split("\t")
        n = int(n)
        entries.append((name, kind, meta, data[nl + 1:nl + 1 + n]))
        pos = nl + 1 + n + 1
    return entries, data


def value(dtype, b):
    fmt, size = ELEM.get(dtype, (None, 1))
    if dtype == "bfloat16":
        return "%r(0x%04x)" % (struct.unpack("<f", b"\0\0" + b)[0], struct.unpack("<H", b)[0])
    if fmt:
        return "%r(0x%s)" % (struct.unpack(fmt, b)[0], b[::-1].hex())
    return "0x" + b.hex()


def diff_elems(dtype, a, b, out, limit=3):
    size = ELEM.get(dtype, (None, 1))[1]
    n = min(len(a), len(b)) // size
    bad = [i for i in range(n) if a[i * size:(i + 1) * size] != b[i * size:(i + 1) * size]]
    shown = ", ".join("[%d] %s vs %s" % (i, value(dtype, a[i * size:(i + 1) * size]),
                                          value(dtype, b[i * size:(i + 1) * size])) for i in bad[:limit])
    out.append("    %d of %d elements differ%s%s" % (len(bad), n, ": " if bad else "", shown))


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    limit = int(argv[argv.index("--max") + 1]) if "--max" in argv else 12
    try:
        ea, da = read(argv[1])
        eb, db = read(argv[2])
    except (OSError, ValueError) as e:
        print("resdiff: %s" % e)
        return 2
    if da == db:
        print("resdiff: identical")
        return 0
    out = []
    if ea is None or eb is None:  # raw bytes
        n = min(len(da), len(db))
        words = [i for i in range(0, n - 3, 4) if da[i:i + 4] != db[i:i + 4]]
        out.append("raw files: %d vs %d bytes; %d 4-byte words differ; first at byte %s"
                   % (len(da), len(db), len(words), words[0] if words else "-"))
        print("\n".join(out))
        return 1
    names_a = [e[0] for e in ea]
    names_b = [e[0] for e in eb]
    if names_a != names_b:
        out.append("entries differ: %d vs %d; only in A: %s; only in B: %s"
                   % (len(ea), len(eb), sorted(set(names_a) - set(names_b))[:5],
                      sorted(set(names_b) - set(names_a))[:5]))
    mb = {e[0]: e for e in eb}
    ndiff = 0
    for name, kind, meta, pa in ea:
        if name not in mb:
            continue
        _, kb, mtb, pb = mb[name]
        if (kind, meta, pa) == (kb, mtb, pb):
            continue
        ndiff += 1
        if ndiff > limit:
            continue
        out.append("  %s (%s %s)%s" % (name, kind, meta, "" if meta == mtb else " vs " + mtb))
        dtype = meta.split(" ")[0]
        if kind == "raw" and kb == "raw":
            diff_elems(dtype, pa, pb, out)
        elif kind == "sha256" and kb == "sha256":
            diff_elems(dtype, pa[65:], pb[65:], out)
            out[-1] += " (in a strided sample)"
        else:
            out.append("    %r vs %r" % (pa[:120], pb[:120]))
    out.insert(0, "resdiff: %d of %d entries differ" % (ndiff, len(ea)))
    if ndiff > limit:
        out.append("  ... %d more" % (ndiff - limit))
    print("\n".join(out))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
