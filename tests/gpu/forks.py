"""fork in a PyTorch process, for the `forks` suite. Prints what it computed; the suite
compares status and output with a run without tcfuse (children print when they finish:
compare sorted).
  before   os.fork before the process touches CUDA; the child runs elementwise chains on
           the GPU and exits; then the parent does
  after    chains on the GPU first (in fuse mode, with an empty cache, the worker compiles
           just then), then os.fork: the child does not touch CUDA and ends with sys.exit,
           so every exit handler runs in it; the parent goes on with the GPU
  loader   chains on the GPU while a DataLoader's two forked workers feed the batches

    forks.py MODE
"""
import os
import sys

import torch


def chains(seed, n=(1 << 18) + 1, iters=6):
    torch.manual_seed(seed)
    x = torch.randn(n, device="cuda")
    for i in range(iters):
        x = torch.tanh(x * 0.75 + 0.1 * i) * 1.5 - x * 0.25
        torch.cuda.synchronize()
    return f"{float(x.double().sum()):.9e}"


def reap(pid, who):
    _, st = os.waitpid(pid, 0)
    print(f"{who}: {'exit ' + str(os.WEXITSTATUS(st)) if os.WIFEXITED(st) else 'signal ' + str(os.WTERMSIG(st))}",
          flush=True)


class Batches(torch.utils.data.Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(4096, generator=g)


def main():
    mode = sys.argv[1]
    sys.stdout.flush()
    if mode == "before":
        pid = os.fork()
        if pid == 0:
            print("child:", chains(1), flush=True)
            sys.exit(0)
        reap(pid, "child")
        print("parent:", chains(2), flush=True)
    elif mode == "after":
        print("parent before:", chains(3), flush=True)
        pid = os.fork()
        if pid == 0:
            print("child: no CUDA here", flush=True)
            sys.exit(0)
        reap(pid, "child")
        print("parent after:", chains(4), flush=True)
    elif mode == "loader":
        dl = torch.utils.data.DataLoader(Batches(), batch_size=4, num_workers=2,
                                         multiprocessing_context="fork")
        acc = torch.zeros(4096, device="cuda")
        for b in dl:
            b = b.cuda()
            acc = torch.sigmoid(b * 1.5 + 0.25) * b + acc * 0.5
        torch.cuda.synchronize()
        print("loader:", f"{float(acc.double().sum()):.9e}", flush=True)
    else:
        raise SystemExit(f"forks.py: unknown mode {mode}")


if __name__ == "__main__":
    main()
