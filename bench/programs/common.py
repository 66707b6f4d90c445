"""What every Python program of bench/programs prints, in one place: the lines bench/run-all
reads (bench/programs/README.md), and the checksum of output bytes they end with."""
import os
import signal
import statistics
import time

PROBE_EVERY = 10   # iterations between probes (probe.h's too)


def digest(h, dtype, shape, raw):
    """Adds one output to the sha256 `h`: its dtype and shape, then its bytes."""
    h.update(str(dtype).encode() + str(tuple(shape)).encode())
    h.update(raw)


def probe():
    """Milliseconds of a fixed piece of pure-Python work (a xorshift chain: each step needs
    the last), a few on a quick host; taken every PROBE_EVERY iterations, between them,
    never inside one. Host-bound programs fall into a slow state per process (docs/PERF.md,
    2026-11-28 second): a probe as slow as the iterations says the interpreter's thread ran
    slowly in that process, whatever ran on the GPU (bench/programs/probe.h for C)."""
    t0 = time.perf_counter()
    x = 88172645463325252
    for _ in range(10000):
        x = (x ^ (x << 13)) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x = (x ^ (x << 17)) & 0xFFFFFFFFFFFFFFFF
    return (time.perf_counter() - t0) * 1e3


def report(header, times, warmup, h, probes=()):
    """Prints the program's lines: times are every iteration's milliseconds, warm-up first;
    probes the probe() times taken between them."""
    meas = times[warmup:]
    print(header)
    print("first_ms %.3f" % times[0])
    print("iter_ms " + " ".join("%.3f" % t for t in meas))
    print("median_ms %.3f" % statistics.median(meas))
    if probes:
        print("probe_ms " + " ".join("%.3f" % t for t in probes))
    print("checksum %s" % h.hexdigest())



def sampling():
    """Starts, then stops, bench/sample.c's sampler when it is loaded (SAMPLE_OUT set and
    SAMPLE_DELAY_S unset): called before the first measured iteration and after the last,
    so that model building, warm-up and the checksum are left out."""
    if os.environ.get("SAMPLE_OUT") and not os.environ.get("SAMPLE_DELAY_S"):
        os.kill(os.getpid(), signal.SIGUSR2)
