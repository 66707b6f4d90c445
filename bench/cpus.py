"""CPU lists for the benchmarks' --pin (bench/run-all, bench/replay): "0-7,12" parsed,
checked against this process's own CPUs, and written back."""
import os
import re


def cpu_list(text):
    """The CPUs of a list such as "0-7,12", all of which this process may run on; raises
    ValueError naming the problem otherwise."""
    cpus = set()
    for part in text.split(","):
        m = re.match(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*$", part)
        if not m or (m.group(2) and int(m.group(2)) < int(m.group(1))):
            raise ValueError("%r is not a CPU list such as 0-7,12" % text)
        cpus.update(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
    allowed = os.sched_getaffinity(0)
    if not cpus <= allowed:
        raise ValueError("CPUs %s are not this process's to run on (it may use %s)" % (
            ranges(cpus - allowed), ranges(allowed)))
    return cpus


def ranges(cpus):
    """"0-3,8" for {0, 1, 2, 3, 8}."""
    out, xs = [], sorted(cpus)
    while xs:
        j = 0
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append("%d-%d" % (xs[0], xs[j]) if j else "%d" % xs[0])
        xs = xs[j + 1:]
    return ",".join(out)


def pinner(cpus):
    """A preexec_fn that pins the child to cpus (its threads and children inherit it), or
    None."""
    return (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
