#!/usr/bin/env python3
"""Training steps per second: Foundry against PyTorch CPU eager, same
models, same batch, same optimizer (Adam), same thread count, same run.

    .venv/bin/python bench/bench_train.py [--threads 2] [--seconds 2]
    (or: make bench)

Models: the Fashion-MNIST MLP (784-256-128-10) at batch 64 and 256, and the
example's CNN (conv 1->16, pool, conv 16->32, pool, fc 1568->128->10) at
batch 64.  One step = forward, cross-entropy, zero_grad, backward, Adam
step, on fixed random data (28x28 inputs, 10 classes).  After a warm-up,
Foundry and PyTorch are timed in alternating windows (5 each, --seconds in
all per library and model), and each library's best window counts: the
machine is shared, and alternating keeps a slow spell from landing on one
library only.
ratio = Foundry steps/s / PyTorch steps/s (> 1: Foundry is faster).
Writes bench/results/train.json.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "python"))


def window(step, seconds):
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step()
        n += 1
    return n / (time.perf_counter() - t0)


def steps_per_second(steps, seconds, rounds=5):
    """Best steps/s of each step function, measured in alternation."""
    for step in steps:
        for _ in range(5):
            step()
    best = [0.0] * len(steps)
    for _ in range(rounds):
        for i, step in enumerate(steps):
            best[i] = max(best[i], window(step, seconds / rounds))
    return best


def foundry_step(kind, batch):
    import foundry as F
    from fashion_mnist import CNN, MLP
    F.manual_seed(0)
    model = MLP() if kind == "mlp" else CNN()
    opt = F.optim.Adam(model.parameters(), lr=1e-3)
    x = F.randn(batch, 28, 28)
    y = F.randint(0, 10, (batch,))

    def step():
        loss = F.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def torch_step(kind, batch):
    import torch
    from torch import nn
    torch.manual_seed(0)
    if kind == "mlp":
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                              nn.Linear(256, 128), nn.ReLU(),
                              nn.Linear(128, 10))
    else:
        class CNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
                self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
                self.fc1 = nn.Linear(32 * 7 * 7, 128)
                self.fc2 = nn.Linear(128, 10)
                self.pool = nn.MaxPool2d(2)

            def forward(self, x):
                x = self.pool(self.conv1(x.unsqueeze(1)).relu())
                x = self.pool(self.conv2(x).relu())
                return self.fc2(self.fc1(x.flatten(1)).relu())
        model = CNN()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(batch, 28, 28)
    y = torch.randint(0, 10, (batch,))

    def step():
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    import foundry as F
    F.set_num_threads(args.threads)
    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    rows = []
    print(f"{args.threads} threads; steps/s")
    print(f"{'model':6} {'batch':>5} {'foundry':>9} {'torch':>9} {'ratio':>6}")
    for kind, batch in (("mlp", 64), ("mlp", 256), ("cnn", 64)):
        steps = [foundry_step(kind, batch)]
        if torch:
            steps.append(torch_step(kind, batch))
        rates = steps_per_second(steps, args.seconds)
        f, t = rates[0], rates[1] if torch else None
        r = f / t if t else None
        rows.append({"model": kind, "batch": batch, "foundry_steps_s": f,
                     "torch_steps_s": t, "ratio": r})
        print(f"{kind:6} {batch:5d} {f:9.1f} {t or float('nan'):9.1f} "
              f"{r or float('nan'):6.2f}")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "train.json"), "w") as fh:
        json.dump({"threads": args.threads, "results": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
