"""What every Python program of bench/programs prints, in one place: the lines bench/run-all
reads (bench/programs/README.md), and the checksum of output bytes they end with."""
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

