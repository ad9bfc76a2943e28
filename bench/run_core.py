#!/usr/bin/env python3
"""Runs bench_core (Foundry) and times the numpy equivalents in the same run.

    python3 bench/run_core.py [path/to/bench_core]     (or: make bench)

Both sides use the same shapes, dtype (float32), thread count and method:
one warm-up call, then at least 5 calls and ~0.2 s, keeping the minimum.
Prints a table and writes bench/results/core.json.  ratio = numpy / foundry,
so > 1 means Foundry is faster.
"""
import json
import os
import platform
import subprocess
import sys
import time

# Same thread count for both sides; numpy's BLAS reads these at import.
THREADS = os.environ.setdefault("FOUNDRY_NUM_THREADS", str(os.cpu_count() or 1))
os.environ["OPENBLAS_NUM_THREADS"] = THREADS
os.environ["OMP_NUM_THREADS"] = THREADS

import numpy as np  # noqa: E402  (after the thread variables are set)

HERE = os.path.dirname(os.path.abspath(__file__))
MIN_REPS, MIN_TOTAL = 5, 0.2


def best_time(fn):
    fn()  # warm-up
    best, total, reps = float("inf"), 0.0, 0
    while reps < MIN_REPS or total < MIN_TOTAL:
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best, total, reps = min(best, dt), total + dt, reps + 1
    return best


def numpy_cases():
    rng = np.random.default_rng(0)
    randn = lambda *s: rng.standard_normal(s, dtype=np.float32)  # noqa: E731
    a, b, row = randn(2048, 2048), randn(2048, 2048), randn(2048)
    m256 = randn(256, 256), randn(256, 256)
    m512 = randn(512, 512), randn(512, 512)
    s = randn(512, 1024)
    return {
        ("add", "2048x2048"): lambda: a + b,
        ("add_transposed", "2048x2048"): lambda: a.T + b,
        ("add_broadcast_row", "2048x2048+2048"): lambda: a + row,
        ("exp", "2048x2048"): lambda: np.exp(a),
        ("sum_all", "2048x2048"): lambda: a.sum(),
        ("sum_dim0", "2048x2048"): lambda: a.sum(0),
        ("sum_dim1", "2048x2048"): lambda: a.sum(1),
        ("matmul", "256x256x256"): lambda: m256[0] @ m256[1],
        ("matmul", "512x512x512"): lambda: m512[0] @ m512[1],
        ("sort", "512x1024"): lambda: np.sort(s, axis=-1, kind="stable"),
        ("to_f16", "2048x2048"): lambda: a.astype(np.float16),
        ("contiguous_transposed", "2048x2048"):
            lambda: np.ascontiguousarray(a.T),
    }


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/native-cc/bench/bench_core"
    out = subprocess.run([binary], stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:  # bench_core has printed tm_last_error() to stderr
        sys.exit(f"run_core: {binary} exited with status {out.returncode}")
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    threads = next(x["threads"] for x in lines if "threads" in x)
    foundry = [x for x in lines if "op" in x]

    cases = numpy_cases()
    rows = []
    for f in foundry:
        key = (f["op"], f["shape"])
        np_s = best_time(cases[key])
        rows.append({"op": f["op"], "shape": f["shape"], "foundry_s": f["seconds"],
                     "numpy_s": np_s, "ratio": np_s / f["seconds"],
                     "threads": threads})
    missing = set(cases) - {(r["op"], r["shape"]) for r in rows}
    if missing:
        sys.exit(f"run_core: bench_core did not report {sorted(missing)}")

    coretype = os.environ.get("OPENBLAS_CORETYPE")
    print(f"threads {threads}  numpy {np.__version__}  cpus {os.cpu_count()}  "
          f"OPENBLAS_CORETYPE {'= ' + coretype if coretype else 'not set'}")
    print(f"{'op':<24}{'shape':<17}{'foundry ms':>11}{'numpy ms':>10}{'ratio':>8}")
    for r in rows:
        print(f"{r['op']:<24}{r['shape']:<17}{r['foundry_s'] * 1e3:>11.3f}"
              f"{r['numpy_s'] * 1e3:>10.3f}{r['ratio']:>8.2f}")
    print("ratio = numpy / foundry: > 1 means Foundry is faster")

    machine = {"platform": platform.platform(), "machine": platform.machine(),
               "numpy": np.__version__, "cpu_count": os.cpu_count(),
               "openblas_coretype": coretype}
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    path = os.path.join(HERE, "results", "core.json")
    with open(path, "w") as fh:
        json.dump({"machine": machine, "results": rows}, fh, indent=1)
        fh.write("\n")
    print(f"wrote {os.path.relpath(path)}")


if __name__ == "__main__":
    main()
