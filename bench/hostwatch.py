"""What the host did around one measured run (bench/run-all): time the hypervisor took from
the CPUs the run was allowed (steal, /proc/stat), how long the program's first thread, the
one its iterations run on, waited for a CPU while runnable (/proc/PID/schedstat), and
which CPUs it ran on (sampled from /proc/PID/stat). Host-bound programs fall into a slow
state, per process, where every iteration takes up to twice as long, eager's too
(docs/PERF.md, 2026-11-28 second); these figures say whether a slow run was short of CPU. Linux only; on another system, or where a file is missing, the figure
is left out. For a program launched through torchrun, the first thread is the launcher's,
which only waits: its ranks are not watched."""
import os
import threading

TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 10.0


def steal_ticks(cpus):
    """Sum of /proc/stat's steal column over cpus (None: all of this process's)."""
    want = cpus if cpus else os.sched_getaffinity(0)
    total = 0
    try:
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("cpu") and line[3:4].isdigit():
                    parts = line.split()
                    if int(parts[0][3:]) in want and len(parts) > 8:
                        total += int(parts[8])
    except (OSError, ValueError):
        return None
    return total


def _thread_state(pid):
    """(cpu it last ran on, ns run, ns waited runnable) of pid's first thread, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
        cpu = int(s[s.rfind(")") + 2:].split()[36])   # field 39, "processor"
    except (OSError, ValueError, IndexError):
        return None
    run = wait = None
    try:
        with open("/proc/%d/schedstat" % pid) as f:
            run, wait = (int(x) for x in f.read().split()[:2])
    except (OSError, ValueError):
        pass
    return cpu, run, wait


class Watch:
    """Started on a child process just made; stop() after it exits gives a dict for
    results.json: steal_ms, main_wait_ms, main_run_ms, main_cpus ({cpu: samples})."""

    def __init__(self, pid, cpus, every=0.1):
        self.pid, self.cpus, self.every = pid, cpus, every
        self.steal0 = steal_ticks(cpus)
        self.seen = {}
        self.last = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while True:
            st = _thread_state(self.pid)
            if st:
                self.seen[st[0]] = self.seen.get(st[0], 0) + 1
                if st[1] is not None:
                    self.last = st
            if self.done.wait(self.every):
                return

    def stop(self):
        self.done.set()
        self.thread.join()
        out = {"main_cpus": {str(c): n for c, n in sorted(self.seen.items())}}
        s1 = steal_ticks(self.cpus)
        if self.steal0 is not None and s1 is not None:
            out["steal_ms"] = round((s1 - self.steal0) * TICK_MS, 1)
        if self.last:   # the last sample before it exited: all but its final moments
            out["main_run_ms"] = round(self.last[1] / 1e6, 1)
            out["main_wait_ms"] = round(self.last[2] / 1e6, 1)
        return out
