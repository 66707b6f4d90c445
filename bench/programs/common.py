"""What every Python program of bench/programs prints, in one place: the lines bench/run-all
reads (bench/programs/README.md), and the checksum of output bytes they end with."""
import os
import signal
import statistics


def digest(h, dtype, shape, raw):
    """Adds one output to the sha256 `h`: its dtype and shape, then its bytes."""
    h.update(str(dtype).encode() + str(tuple(shape)).encode())
    h.update(raw)


def report(header, times, warmup, h):
    """Prints the program's lines: times are every iteration's milliseconds, warm-up first."""
    meas = times[warmup:]
    print(header)
    print("first_ms %.3f" % times[0])
    print("iter_ms " + " ".join("%.3f" % t for t in meas))
    print("median_ms %.3f" % statistics.median(meas))
    print("checksum %s" % h.hexdigest())



def sampling():
    """Starts, then stops, bench/sample.c's sampler when it is loaded (SAMPLE_OUT set and
    SAMPLE_DELAY_S unset): called before the first measured iteration and after the last,
    so that model building, warm-up and the checksum are left out."""
    if os.environ.get("SAMPLE_OUT") and not os.environ.get("SAMPLE_DELAY_S"):
        os.kill(os.getpid(), signal.SIGUSR2)
