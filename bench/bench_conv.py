#!/usr/bin/env python3
"""conv2d forward and forward + backward: Foundry against PyTorch CPU eager,
same shapes, F32, same thread count, same run.

    .venv/bin/python bench/bench_conv.py [--threads 2] [--seconds 1]
    (or: make bench)

Shapes: a ResNet-style 3x3 64->64 at 56x56 (batch 8, padding 1), 1x1
64->256 and 256->64 at 56x56 (batch 8), depthwise 3x3 over 64 channels
(groups 64, batch 8, padding 1), the Fashion-MNIST CNN's two layers at batch
64 (1->16 at 28x28 and 16->32 at 14x14, 3x3, padding 1), and one stride-2
3x3 layer (64->128 at 56x56, batch 8: the im2col path).  "fwd" is conv2d
with bias; "fwd+bwd" adds the backward of (y * g).sum() for a fixed g, the
input requiring grad (except the CNN's first layer, whose input is data).
After a warm-up, Foundry and PyTorch are timed in alternating windows (5
each, --seconds in all per library and case); each library's median window
counts (the machine is shared: alternating keeps a slow spell from landing
on one library only).
ratio = PyTorch ms / Foundry ms (> 1: Foundry is faster).
Writes bench/results/conv.json.
"""
import argparse
import json
import os
import statistics
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name, (n, c, h, w), (oc, c/groups, kh, kw), stride, padding, groups,
# whether the input requires grad
CASES = [
    ("resnet3x3 64-64 56", (8, 64, 56, 56), (64, 64, 3, 3), 1, 1, 1, True),
    ("1x1 64-256 56", (8, 64, 56, 56), (256, 64, 1, 1), 1, 0, 1, True),
    ("1x1 256-64 56", (8, 256, 56, 56), (64, 256, 1, 1), 1, 0, 1, True),
    ("depthwise3x3 64 56", (8, 64, 56, 56), (64, 1, 3, 3), 1, 1, 64, True),
    ("cnn1 1-16 28", (64, 1, 28, 28), (16, 1, 3, 3), 1, 1, 1, False),
    ("cnn2 16-32 14", (64, 16, 14, 14), (32, 16, 3, 3), 1, 1, 1, True),
    ("stride2 64-128 56", (8, 64, 56, 56), (128, 64, 3, 3), 2, 1, 1, True),
]


def make_call(lib, case, backward):
    """One conv2d call (forward, or forward + backward) of `case` in lib."""
    _, xs, ws, stride, padding, groups, xgrad = case
    lib.manual_seed(0)
    x = lib.randn(*xs)
    if xgrad:
        x.requires_grad_(True)
    w = lib.randn(*ws).mul(0.1).requires_grad_(True)
    b = lib.randn(ws[0]).requires_grad_(True)
    conv = lib.nn.functional.conv2d
    if not backward:
        def fwd():
            conv(x, w, b, stride=stride, padding=padding, groups=groups)
        return fwd
    g = conv(x.detach(), w.detach(), None, stride=stride, padding=padding,
             groups=groups)
    g = lib.randn(*tuple(g.shape))

    def fwd_bwd():
        y = conv(x, w, b, stride=stride, padding=padding, groups=groups)
        (y * g).sum().backward()
        x.grad = None
        w.grad = None
        b.grad = None
    return fwd_bwd


def window(call, seconds):
    n, t0 = 0, time.perf_counter()
    while True:
        call()
        n += 1
        t = time.perf_counter() - t0
        if t >= seconds:
            return t / n


def median_times(calls, seconds, rounds=5):
    """Median seconds per call of each call, measured in alternation."""
    for call in calls:
        for _ in range(2):
            call()
    times = [[] for _ in calls]
    for _ in range(rounds):
        for i, call in enumerate(calls):
            times[i].append(window(call, seconds / rounds))
    return [statistics.median(t) for t in times]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seconds", type=float, default=1.0)
    args = ap.parse_args()
    import foundry as F
    F.set_num_threads(args.threads)
    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    rows = []
    print(f"{args.threads} threads; ms per call")
    print(f"{'case':20} {'pass':8} {'foundry':>9} {'torch':>9} {'ratio':>6}")
    for case in CASES:
        for backward in (False, True):
            calls = [make_call(F, case, backward)]
            if torch:
                calls.append(make_call(torch, case, backward))
            t = median_times(calls, args.seconds)
            f_ms = t[0] * 1e3
            t_ms = t[1] * 1e3 if torch else None
            r = t_ms / f_ms if torch else None
            kind = "fwd+bwd" if backward else "fwd"
            rows.append({"case": case[0], "pass": kind, "foundry_ms": f_ms,
                         "torch_ms": t_ms, "ratio": r})
            print(f"{case[0]:20} {kind:8} {f_ms:9.3f} "
                  f"{t_ms or float('nan'):9.3f} {r or float('nan'):6.2f}",
                  flush=True)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "conv.json"), "w") as fh:
        json.dump({"threads": args.threads, "results": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
