"""Ways a PyTorch process ends while a window holds its launches, for the `exits` suite.

A chain of elementwise ops (fuse mode fuses it; with a warm cache and TCFUSE_HOLD_ALL=1 a
window holds it from its first launch) is launched without synchronizing, then:
  return     main returns: the interpreter ends normally
  atexit     main returns and an atexit handler reads the result (the held work must run)
  signal     SIGTERM, whose Python handler reads the result and calls sys.exit(0)
  c-handler  SIGUSR1, whose handler is the C library's exit (exit(10) inside a signal
             handler, on the interrupted thread, with whatever it held)
  _exit      os._exit(7): no exit handlers at all
  kill       SIGKILL to itself
  alarm      the chain again and again until SIGALRM (after US microseconds, argv[2]),
             whose handler is the C library's exit (exit(14)), lands where it lands. The
             loop writes into tensors made before it (out=), so that no tensor is made or
             freed in it: fuse mode runs PyTorch on cudaMallocAsync, where a tensor's free
             takes cudart's lock and calls the driver's, which call malloc; an exit landing
             there deadlocks in cudart's or the C library's own exit handlers, with or
             without tcfuse (docs/RELIABILITY.md). With a third argument `alloc` the loop
             makes and frees its tensors as `chain` does.
Prints what it computed; the suite compares status and output with a run without tcfuse.

    exits.py MODE [US]
"""
import atexit
import ctypes
import os
import signal
import sys
import time

import torch


def chain(x):
    return torch.tanh(x * 0.5 + 1.0) * 2.0 - x * 0.125


def chain_into(x, t, u, out):
    """chain(x) into out, through t and u: the same ops, the same results, no tensor made."""
    torch.mul(x, 0.5, out=t)
    torch.add(t, 1.0, out=u)
    torch.tanh(u, out=t)
    torch.mul(t, 2.0, out=u)
    torch.mul(x, 0.125, out=t)
    torch.sub(u, t, out=out)


def checksum(y):
    return f"{float(y.double().sum()):.9e}"


def c_exit_on(sig):
    libc = ctypes.CDLL(None)
    libc.signal.restype = ctypes.c_void_p
    libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.signal(sig, ctypes.cast(libc.exit, ctypes.c_void_p).value)


def main():
    mode = sys.argv[1]
    x = torch.linspace(-3.0, 3.0, (1 << 20) + 1, device="cuda")
    for _ in range(3):  # learned, compiled and checked (a warm cache has it all)
        y = chain(x)
        torch.cuda.synchronize()
    print("warm:", checksum(y), flush=True)
    if mode == "alarm":
        c_exit_on(signal.SIGALRM)
        signal.setitimer(signal.ITIMER_REAL, int(sys.argv[2]) * 1e-6)
        alloc = len(sys.argv) > 3 and sys.argv[3] == "alloc"
        t, u, out = (torch.empty_like(x) for _ in range(3))
        torch.cuda.synchronize()
        i = 0
        while True:
            if alloc:
                x = chain(x)
            else:
                chain_into(x, t, u, out)
                x, out = out, x
            i += 1
            if i % 8 == 0:
                torch.cuda.synchronize()
    y = chain(x + 1.0)  # held, not synchronized
    if mode == "return":
        return
    if mode == "atexit":
        atexit.register(lambda: print("atexit:", checksum(y), flush=True))
        return
    if mode == "signal":
        def on_term(sig, frame):
            print("signal:", checksum(y), flush=True)
            sys.exit(0)
        signal.signal(signal.SIGTERM, on_term)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)
        print("signal: not delivered", flush=True)
        return
    if mode == "c-handler":
        c_exit_on(signal.SIGUSR1)
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(30)
        return
    if mode == "_exit":
        os._exit(7)
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(30)
    raise SystemExit(f"exits.py: unknown mode {mode}")


if __name__ == "__main__":
    main()
