#!/usr/bin/env python3
"""Per-call overhead of the Python package against PyTorch, same run.

    .venv/bin/python bench/bench_overhead.py      (or: make bench)

Three calls whose cost is almost all overhead (argument conversion, the C
call, wrapping the result, freeing it):
  add     a + b on 1-element float32 tensors
  matmul  x @ w for [1,64] x [64,64]
  linear  one nn.Linear(64, 64) forward + backward on [1,64] (sum loss),
          gradients dropped between iterations
Each is run in batches of N calls; the best batch of several (after a
warm-up) gives microseconds per call.  Both libraries use 1 thread (tiny
ops never reach the thread pool; this keeps PyTorch from spinning one up).
ratio = PyTorch time / Foundry time, so > 1 means Foundry is faster.
Writes bench/results/overhead.json.
"""
import json
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH, REPEATS = 2000, 15


def per_call(fn):
    fn()
    best = float("inf")
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for _ in range(BATCH):
            fn()
        best = min(best, (time.perf_counter() - t0) / BATCH)
    return best * 1e6


def cases(lib):
    """The three calls, for `lib` (foundry or torch: the same API here)."""
    lib.set_num_threads(1)
    lib.manual_seed(0)
    a, b = lib.ones(1), lib.ones(1)
    x, w = lib.randn(1, 64), lib.randn(64, 64)
    lin = lib.nn.Linear(64, 64)

    def step():
        lin(x).sum().backward()
        lin.weight.grad = None
        lin.bias.grad = None
    return {"add": lambda: a + b, "matmul": lambda: x @ w, "linear": step}


def main():
    import foundry
    fc = cases(foundry)
    try:
        import torch
        tc = cases(torch)
    except ImportError:
        tc = {}
    rows = []
    print(f"{'call':8} {'foundry us':>11} {'torch us':>9} {'ratio':>6}")
    for name in fc:
        f = per_call(fc[name])
        t = per_call(tc[name]) if name in tc else None
        r = t / f if t else None
        rows.append({"call": name, "foundry_us": round(f, 3),
                     "torch_us": None if t is None else round(t, 3),
                     "ratio": None if r is None else round(r, 2)})
        print(f"{name:8} {f:11.2f} {t if t else float('nan'):9.2f} "
              f"{r if r else float('nan'):6.2f}")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    meta = {"python": sys.version.split()[0], "machine": platform.machine()}
    try:
        import torch
        meta["torch"] = torch.__version__
    except ImportError:
        pass
    with open(os.path.join(HERE, "results", "overhead.json"), "w") as fh:
        json.dump({"meta": meta, "results": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
