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
import time

HERE = os.path.dirname(os.path.abspath(__file__))


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


def model(lib, kind):
    """The example's models (examples/python/fashion_mnist.py), written once
    with the nn API that foundry and torch share."""
    nn = lib.nn
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                             nn.Linear(256, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(32 * 7 * 7, 128), nn.ReLU(),
                         nn.Linear(128, 10))


def make_step(lib, kind, batch):
    """One training step of `kind` in `lib` (foundry or torch)."""
    lib.manual_seed(0)
    m = model(lib, kind)
    opt = lib.optim.Adam(m.parameters(), lr=1e-3)
    x = lib.randn(batch, 1, 28, 28)
    y = lib.randint(0, 10, (batch,))

    def step():
        loss = lib.nn.functional.cross_entropy(m(x), y)
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
        steps = [make_step(F, kind, batch)]
        if torch:
            steps.append(make_step(torch, kind, batch))
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
