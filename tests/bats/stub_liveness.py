"""Device-memory liveness on a stand-in driver's log (FAKECUDA_LOG), in the order the
driver received the calls:

    stub_liveness.py LOG [STREAM]

Blocks live from their allocation (cuMemAlloc_v2, cuMemAllocAsync) to their free
(cuMemFree_v2, cuMemFreeAsync). Every kernel launch on STREAM (default 0x0, the program's)
must touch only live memory: each 8-byte-aligned word of its parameter bytes that lies in
the stub's device range is a pointer and must fall inside a live block. A free of a block
that is not live (double free, unknown pointer) or one that failed is an error too.
Prints "liveness: N launches, M pointers checked; A allocations, F frees" and exits 0,
or prints each violation and exits 1.
"""
import re
import sys

DEV_LO, DEV_HI = 0x7F0000000000, 0x7F0100000000  # the stub's device addresses (fakecuda.c)


def main(argv):
    path = argv[1]
    stream = argv[2] if len(argv) > 2 else "0x0"
    live = {}  # base -> size
    bad = []
    nl = npt = na = nf = 0
    for ln, line in enumerate(open(path, errors="replace"), 1):
        if line.startswith("[tcfuse]"):
            continue  # tcfuse's own queries
        f = dict(re.findall(r"(\w+)=(\S+)", line))
        call = line.split(" ", 1)[0]
        if call in ("cuMemAlloc_v2", "cuMemAllocAsync") and f.get("rc") == "0":
            live[int(f["ptr"], 16)] = int(f["size"])
            na += 1
        elif call in ("cuMemFree_v2", "cuMemFreeAsync"):
            p = int(f["ptr"], 16)
            if f.get("rc") != "0" or p not in live:
                bad.append(f"line {ln}: {call} of 0x{p:x}, not live (rc={f.get('rc')})")
            live.pop(p, None)
            nf += 1
        elif call.startswith("cuLaunchKernel") and f.get("stream") == stream and f.get("rc") == "0":
            nl += 1
            for param in f.get("params", "").split(","):
                b = bytes.fromhex(param) if len(param) % 2 == 0 else b""
                for o in range(0, len(b) - 7, 8):
                    v = int.from_bytes(b[o:o + 8], "little")
                    if not DEV_LO <= v < DEV_HI:
                        continue
                    npt += 1
                    if not any(base <= v < base + size for base, size in live.items()):
                        bad.append(f"line {ln}: {f.get('name', '?')[:60]} touches 0x{v:x}, "
                                   "not inside a live block")
    for b in bad:
        print(b)
    print(f"liveness: {nl} launches, {npt} pointers checked; {na} allocations, {nf} frees")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
