"""16 threads launching PyTorch's elementwise chains on 8 streams, with cross-stream
events, for the `concurrency` suite (fuse mode fuses these chains).

Each round has two phases, separated by barriers so that every event is recorded before
anyone waits on it:
  produce  thread t waits for the event its reader recorded last round, then replaces a[t]
           by a chain of elementwise ops of itself, and records ev_a[t]
  consume  thread t makes its stream wait for ev_a[p] (p = (t + 3) % 16, another stream),
           and folds a chain of a[p] and a[t] into acc[t], and records ev_c[t]
Streams are shared by two threads each. Every read is ordered after its write by an event
or by its stream, so the results are the same whatever the interleaving: saved with
torch.save and compared bitwise with `fuse_chains.py --compare`.

    concurrency.py OUT [ROUNDS]
"""
import sys
import threading

import torch

THREADS, STREAMS, N = 16, 8, (1 << 16) + 3


def main(out, rounds):
    torch.manual_seed(0)
    dev = torch.device("cuda")
    streams = [torch.cuda.Stream() for _ in range(STREAMS)]
    a = [torch.randn(N, device=dev) for _ in range(THREADS)]
    acc = [torch.zeros(N, device=dev) for _ in range(THREADS)]
    ev_a = [torch.cuda.Event() for _ in range(THREADS)]
    ev_c = [torch.cuda.Event() for _ in range(THREADS)]
    torch.cuda.synchronize()
    bar = threading.Barrier(THREADS)
    errors = []

    def worker(t):
        try:
            s, p, reader = streams[t % STREAMS], (t + 3) % THREADS, (t - 3) % THREADS
            with torch.cuda.stream(s):
                for r in range(rounds):
                    if r:
                        s.wait_event(ev_c[reader])
                    x = a[t]
                    a[t].copy_(torch.tanh(x * 0.75 + 0.1 * (r + 1)) * 1.5 - x * 0.25)
                    ev_a[t].record(s)
                    bar.wait()
                    s.wait_event(ev_a[p])
                    acc[t].copy_(torch.sigmoid(a[p] * 1.25) * a[t] + acc[t] * 0.5)
                    ev_c[t].record(s)
                    if r % 4 == 3:
                        s.synchronize()
                    bar.wait()
        except Exception as e:  # a thread's failure must fail the run, not hang the others
            errors.append(f"thread {t}: {e!r}")
            bar.abort()

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise SystemExit("concurrency.py: " + "; ".join(errors))
    torch.cuda.synchronize()
    res = {}
    for t in range(THREADS):
        res[f"a{t}"] = a[t].cpu()
        res[f"acc{t}"] = acc[t].cpu()
    torch.save(res, out)
    total = sum(float(v.double().sum()) for v in res.values())
    print(f"concurrency.py: {THREADS} threads, {STREAMS} streams, {rounds} rounds, "
          f"checksum {total:.9e}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 24)
