#!/usr/bin/env python3
"""Seeds for the decode target from recorded launches (tests/fixtures/trace-*.jsonl): for
one launch of each distinct elementwise kernel, the input fuzz_decode.c reads: a byte with
the high bit set, the name, NUL, the parameter count, (offset, size) as 16-bit pairs, the
grid's x as 32 bits, the parameter bytes. Run from the repository root:

    python3 tests/fuzz/seed.py tests/fuzz/corpus/decode
"""
import glob
import json
import os
import struct
import sys


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seen = set()
    for path in sorted(glob.glob("tests/fixtures/trace-*.jsonl")):
        kernels = {}
        for line in open(path):
            ev = json.loads(line)
            if ev.get("ev") == "kernel":
                kernels[ev["id"]] = ev
            elif ev.get("ev") == "launch" and ev["k"] in kernels:
                k = kernels[ev["k"]]
                if "elementwise_kernel" not in k["name"] or k["name"] in seen or len(k["params"]) > 8:
                    continue
                seen.add(k["name"])
                blob = bytes([0x80]) + k["name"].encode() + b"\0" + bytes([len(k["params"])])
                for off, size in k["params"]:
                    blob += struct.pack("<HH", off, size)
                blob += struct.pack("<I", ev["grid"][0]) + bytes.fromhex(ev["params"])
                with open(os.path.join(out, "k%03d" % len(seen)), "wb") as f:
                    f.write(blob)
    print("seed.py: %d decode seeds in %s" % (len(seen), out))


if __name__ == "__main__":
    main()
