"""What `make demo` runs under tcfuse: a few eager PyTorch patterns, repeated, so that the
stats show windows, repeated keys and the calls that close windows."""
import math

import torch


def hand_gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def main():
    torch.manual_seed(0)
    x = torch.randn(1 << 20, device="cuda")
    mlp = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(),
                              torch.nn.Linear(1024, 256)).cuda()
    h = torch.randn(32, 256, device="cuda")
    for _ in range(10):
        y = hand_gelu(x)
        out = mlp(h)
        total = (y.sum() + out.sum()).item()  # .item() synchronizes: a window boundary
    print(f"demo: result {total:.6f}")


if __name__ == "__main__":
    main()
