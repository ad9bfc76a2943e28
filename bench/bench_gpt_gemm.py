#!/usr/bin/env python3
"""The GEMMs of one training step of bench_gpt.py's model (vocab 4096,
d_model 256, MLP 1024, B*T = 2048 rows), Foundry's tm_matmul against
torch.matmul on the same operands and layouts, same threads, same run:
forward x @ W^T ('nt'), backward dX = dY @ W ('nn') and dW = dY^T @ X
('tn').  It tells how much of the training ratio the GEMMs can carry.

    .venv/bin/python bench/bench_gpt_gemm.py [--threads 2]

GF/s = 2*m*k*n / best time of 3 runs of 20 calls; ratio = torch time /
Foundry time (> 1: Foundry is faster).  A pause between the libraries
lets the other's thread pool go to sleep.
"""
import argparse
import time

import numpy as np

SHAPES = [(2048, 256, 256, "nt"), (2048, 256, 1024, "nt"), (2048, 1024, 256, "nt"),
          (2048, 256, 4096, "nt"), (2048, 256, 256, "nn"), (2048, 1024, 256, "nn"),
          (2048, 256, 1024, "nn"), (2048, 4096, 256, "nn"), (256, 2048, 256, "tn"),
          (1024, 2048, 256, "tn"), (256, 2048, 1024, "tn"), (4096, 2048, 256, "tn")]


def best(fn, n=20):
    fn()
    fn()
    t = 1e9
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = min(t, (time.perf_counter() - t0) / n)
    return t


def operands(lib, m, k, n, layout, rng):
    if layout == "tn":
        a = lib.tensor(rng.standard_normal((k, m), dtype=np.float32)).t()
    else:
        a = lib.tensor(rng.standard_normal((m, k), dtype=np.float32))
    if layout == "nt":
        b = lib.tensor(rng.standard_normal((n, k), dtype=np.float32)).t()
    else:
        b = lib.tensor(rng.standard_normal((k, n), dtype=np.float32))
    return a, b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import foundry
    import torch
    foundry.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    tf_all = tt_all = 0.0
    for m, k, n, layout in SHAPES:
        fa, fb = operands(foundry, m, k, n, layout, np.random.default_rng(0))
        ta, tb = operands(torch, m, k, n, layout, np.random.default_rng(0))
        tf = best(lambda: fa @ fb)
        time.sleep(0.2)
        tt = best(lambda: ta @ tb)
        time.sleep(0.2)
        tf_all, tt_all = tf_all + tf, tt_all + tt
        g = 2 * m * k * n / 1e9
        print(f"{layout} {m}x{k}x{n}: foundry {g / tf:6.1f} GF/s, torch {g / tt:6.1f} GF/s, "
              f"ratio {tt / tf:.2f}")
    print(f"all: foundry {tf_all * 1e3:.1f} ms, torch {tt_all * 1e3:.1f} ms, "
          f"ratio {tt_all / tf_all:.2f}")


if __name__ == "__main__":
    main()
